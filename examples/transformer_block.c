/* transformer_block.c - example: one pre-norm transformer encoder block built,
 * compiled and run through libptc's public C API only.
 *
 *   h   = x + out_proj(attention(q(ln1(x)), k(ln1(x)), v(ln1(x))))
 *   out = h + fc2(gelu(fc1(ln2(h))))
 *
 * Attention splits D = HEADS * HEAD_DIM into heads with reshape + transpose
 * and uses scaled_dot_product_attention; if the registry has no such op it
 * spells the same thing out (matmul, mul by 1/sqrt(d), softmax, matmul) -
 * which also shows how NOT_FOUND statuses can be handled. Weights come from a
 * deterministic generator, so the checksum is the same everywhere.
 * Usage: transformer_block [--backend NAME] [GRAPH.json]
 *   NAME: "ref" (default) or another backend `ptc info` lists, e.g. "cpu";
 *   GRAPH.json: also save the graph as JSON (for `ptc run`, `ptc check`).
 * Exit status: 0 on success, 1 with the library's status message otherwise.
 */
#include <ptc/ptc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 2, SEQ = 8, HEADS = 2, HEAD_DIM = 8, DMODEL = HEADS * HEAD_DIM, FFN = 4 * DMODEL };

/* ---- deterministic numbers: a 64-bit LCG mapped to [-scale, scale) ---------- */
static float next_uniform(uint64_t* state, float scale) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  uint32_t top = (uint32_t)(*state >> 40); /* 24 random bits */
  return ((float)top / 16777216.0f * 2.0f - 1.0f) * scale;
}

/* ---- graph building helpers ------------------------------------------------- */
typedef struct builder {
  ptc_graph* g;
  uint64_t state;    /* weight generator */
  int used_sdpa;     /* 1: scaled_dot_product_attention, 0: explicit math */
} builder;

/* Adds a constant f32 tensor; values are `offset` + uniform noise of `scale`. */
static ptc_status add_weight(builder* b, const char* name, const int64_t* shape, size_t rank,
                             float offset, float scale, ptc_value* out) {
  size_t n = 1;
  for (size_t i = 0; i < rank; i++) n *= (size_t)shape[i];
  float* data = malloc(n * sizeof *data);
  if (!data) {
    fprintf(stderr, "transformer_block: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++) data[i] = offset + next_uniform(&b->state, scale);
  ptc_status s = ptc_graph_add_constant(b->g, name, PTC_F32, shape, rank, data,
                                        PTC_CONSTANT_COPY, out);
  free(data);
  return s;
}

static ptc_status op1(builder* b, const char* op, const ptc_value* in, size_t n_in,
                      const ptc_attr* attrs, size_t n_attrs, ptc_value* out) {
  return ptc_graph_add_node(b->g, op, in, n_in, attrs, n_attrs, out, 1, NULL);
}

static ptc_status add2(builder* b, ptc_value x, ptc_value y, ptc_value* out) {
  const ptc_value in[2] = {x, y};
  return op1(b, "add", in, 2, NULL, 0, out);
}

/* linear(x, weight[out_f, in_f], bias[out_f]) */
static ptc_status linear(builder* b, const char* name, ptc_value x, int64_t in_f,
                         int64_t out_f, ptc_value* out) {
  char wname[64], bname[64];
  snprintf(wname, sizeof wname, "%s.weight", name);
  snprintf(bname, sizeof bname, "%s.bias", name);
  const int64_t wshape[2] = {out_f, in_f};
  const int64_t bshape[1] = {out_f};
  ptc_value in[3] = {x, 0, 0};
  ptc_status s = add_weight(b, wname, wshape, 2, 0.0f, 2.0f / (float)in_f, &in[1]);
  if (!s) s = add_weight(b, bname, bshape, 1, 0.0f, 0.05f, &in[2]);
  if (!s) s = op1(b, "linear", in, 3, NULL, 0, out);
  return s;
}

/* layer_norm over the last dim with weight ~1 and bias ~0 */
static ptc_status layer_norm(builder* b, const char* name, ptc_value x, ptc_value* out) {
  char wname[64], bname[64];
  snprintf(wname, sizeof wname, "%s.weight", name);
  snprintf(bname, sizeof bname, "%s.bias", name);
  const int64_t shape[1] = {DMODEL};
  ptc_value in[3] = {x, 0, 0};
  const ptc_attr attrs[2] = {ptc_attr_ints("normalized_shape", shape, 1),
                             ptc_attr_float("eps", 1e-5)};
  ptc_status s = add_weight(b, wname, shape, 1, 1.0f, 0.1f, &in[1]);
  if (!s) s = add_weight(b, bname, shape, 1, 0.0f, 0.1f, &in[2]);
  if (!s) s = op1(b, "layer_norm", in, 3, attrs, 2, out);
  return s;
}

static ptc_status reshape(builder* b, ptc_value x, const int64_t* size, size_t rank,
                          ptc_value* out) {
  const ptc_attr a = ptc_attr_ints("size", size, rank);
  return op1(b, "reshape", &x, 1, &a, 1, out);
}

static ptc_status transpose(builder* b, ptc_value x, int64_t d0, int64_t d1, ptc_value* out) {
  const ptc_attr a[2] = {ptc_attr_int("dim0", d0), ptc_attr_int("dim1", d1)};
  return op1(b, "transpose", &x, 1, a, 2, out);
}

/* [B, S, D] -> [B, H, S, HEAD_DIM] */
static ptc_status split_heads(builder* b, ptc_value x, ptc_value* out) {
  const int64_t size[4] = {BATCH, SEQ, HEADS, HEAD_DIM};
  ptc_value r;
  ptc_status s = reshape(b, x, size, 4, &r);
  if (!s) s = transpose(b, r, 1, 2, out);
  return s;
}

/* [B, H, S, HEAD_DIM] -> [B, S, D] (reshape of a transposed view copies) */
static ptc_status merge_heads(builder* b, ptc_value x, ptc_value* out) {
  const int64_t size[3] = {BATCH, SEQ, DMODEL};
  ptc_value t;
  ptc_status s = transpose(b, x, 1, 2, &t);
  if (!s) s = reshape(b, t, size, 3, out);
  return s;
}

/* softmax(q @ k^T / sqrt(HEAD_DIM)) @ v, spelled out */
static ptc_status attention_explicit(builder* b, ptc_value q, ptc_value k, ptc_value v,
                                     ptc_value* out) {
  ptc_value kt, scores, scaled, probs;
  const double inv_sqrt_d = 0.35355339059327373; /* 1/sqrt(8) */
  const ptc_attr scale = ptc_attr_float("other", inv_sqrt_d);
  const ptc_attr dim = ptc_attr_int("dim", -1);
  ptc_status s = transpose(b, k, -2, -1, &kt);
  if (!s) {
    const ptc_value in[2] = {q, kt};
    s = op1(b, "matmul", in, 2, NULL, 0, &scores);
  }
  if (!s) s = op1(b, "mul", &scores, 1, &scale, 1, &scaled);
  if (!s) s = op1(b, "softmax", &scaled, 1, &dim, 1, &probs);
  if (!s) {
    const ptc_value in[2] = {probs, v};
    s = op1(b, "matmul", in, 2, NULL, 0, out);
  }
  return s;
}

static ptc_status attention(builder* b, ptc_value q, ptc_value k, ptc_value v, ptc_value* out) {
  const ptc_value in[3] = {q, k, v};
  ptc_status s = op1(b, "scaled_dot_product_attention", in, 3, NULL, 0, out);
  b->used_sdpa = s == PTC_OK;
  if (ptc_status_code(s) != PTC_CODE_NOT_FOUND) return s;
  ptc_status_destroy(s);
  return attention_explicit(b, q, k, v, out);
}

static ptc_status self_attention(builder* b, ptc_value x, ptc_value* out) {
  ptc_value ln, q, k, v, qh, kh, vh, ah, merged;
  ptc_status s = layer_norm(b, "ln1", x, &ln);
  if (!s) s = linear(b, "attn.q", ln, DMODEL, DMODEL, &q);
  if (!s) s = linear(b, "attn.k", ln, DMODEL, DMODEL, &k);
  if (!s) s = linear(b, "attn.v", ln, DMODEL, DMODEL, &v);
  if (!s) s = split_heads(b, q, &qh);
  if (!s) s = split_heads(b, k, &kh);
  if (!s) s = split_heads(b, v, &vh);
  if (!s) s = attention(b, qh, kh, vh, &ah);
  if (!s) s = merge_heads(b, ah, &merged);
  if (!s) s = linear(b, "attn.out", merged, DMODEL, DMODEL, out);
  return s;
}

static ptc_status feed_forward(builder* b, ptc_value x, ptc_value* out) {
  ptc_value ln, up, act;
  const ptc_attr approx = ptc_attr_string("approximate", "tanh");
  ptc_status s = layer_norm(b, "ln2", x, &ln);
  if (!s) s = linear(b, "mlp.fc1", ln, DMODEL, FFN, &up);
  if (!s) s = op1(b, "gelu", &up, 1, &approx, 1, &act);
  if (!s) s = linear(b, "mlp.fc2", act, FFN, DMODEL, out);
  return s;
}

static ptc_status build_block(builder* b) {
  const ptc_dim xshape[3] = {{BATCH, 0, 0}, {SEQ, 0, 0}, {DMODEL, 0, 0}};
  ptc_value x, attn, h, ff, y;
  ptc_status s = ptc_graph_add_input(b->g, "x", PTC_F32, xshape, 3, NULL, &x);
  if (!s) s = self_attention(b, x, &attn);
  if (!s) s = add2(b, x, attn, &h);
  if (!s) s = feed_forward(b, h, &ff);
  if (!s) s = add2(b, h, ff, &y);
  if (!s) s = ptc_graph_add_output(b->g, y);
  return s;
}

/* ---- running and reporting -------------------------------------------------- */
static void print_tensor_summary(size_t index, const ptc_tensor* t) {
  const float* p = (const float*)((const char*)t->data + t->byte_offset);
  size_t n = 1;
  printf("output %zu: %s [", index, ptc_dtype_name(ptc_dtype_from_dl(t->dtype)));
  for (int32_t d = 0; d < t->ndim; d++) {
    printf(d ? ", %lld" : "%lld", (long long)t->shape[d]);
    n *= (size_t)t->shape[d];
  }
  double sum = 0.0, abs_sum = 0.0;
  for (size_t i = 0; i < n; i++) {
    sum += p[i];
    abs_sum += p[i] < 0 ? -p[i] : p[i];
  }
  printf("]  checksum: sum=%.6f abs_sum=%.6f first=%.6f\n", sum, abs_sum, n ? p[0] : 0.0f);
}

static ptc_status compile_and_run(ptc_context* ctx, const ptc_graph* g,
                                  const char* backend) {
  ptc_compile_options copts;
  ptc_compile_options_init(&copts);
  copts.backend = backend;
  ptc_executable* exe = NULL;
  ptc_status s = ptc_compile(ctx, g, &copts, &exe);
  if (s) return s;
  printf("compiled for backend '%s': %zu kernels\n", backend, ptc_executable_num_kernels(exe));

  static float xdata[BATCH * SEQ * DMODEL];
  uint64_t state = 7;
  for (size_t i = 0; i < sizeof xdata / sizeof xdata[0]; i++)
    xdata[i] = next_uniform(&state, 1.0f);
  int64_t xshape[3] = {BATCH, SEQ, DMODEL};
  ptc_tensor x = {xdata, {PTC_DEVICE_CPU, 0}, 3, ptc_dtype_to_dl(PTC_F32), xshape, NULL, 0};

  ptc_results* res = NULL;
  s = ptc_executable_run_alloc(exe, &x, 1, NULL, &res);
  if (!s)
    for (size_t i = 0; i < ptc_results_count(res); i++)
      print_tensor_summary(i, ptc_results_get(res, i));
  ptc_results_destroy(res);
  ptc_executable_release(exe);
  return s;
}

/* Command line: [--backend NAME] [GRAPH.json]; returns 0 or prints usage. */
typedef struct args {
  const char* backend;
  const char* save_path;
} args;

static int parse_args(int argc, char** argv, args* a) {
  a->backend = "ref";
  a->save_path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      a->backend = argv[++i];
    } else if (argv[i][0] != '-' && !a->save_path) {
      a->save_path = argv[i];
    } else {
      fprintf(stderr, "usage: %s [--backend NAME] [GRAPH.json]\n", argv[0]);
      return 1;
    }
  }
  return 0;
}

static int report(const char* step, ptc_status s) {
  fprintf(stderr, "transformer_block: %s failed: %s: %s\n", step,
          ptc_code_name(ptc_status_code(s)), ptc_status_message(s));
  ptc_status_destroy(s);
  return 1;
}

int main(int argc, char** argv) {
  args a;
  if (parse_args(argc, argv, &a)) return 2;
  printf("libptc %s (headers %s)\n", ptc_version_string(), PTC_VERSION_STRING);
  ptc_context* ctx = NULL;
  ptc_status s = ptc_context_create(NULL, &ctx);
  if (s) return report("context", s);
  builder b;
  memset(&b, 0, sizeof b);
  b.state = 2024;
  int rc = 0;
  s = ptc_graph_create(ctx, &b.g);
  if (s) rc = report("graph", s);
  if (!rc && (s = build_block(&b)) != PTC_OK) rc = report("build", s);
  if (!rc) {
    printf("graph: %zu nodes, %zu values, attention via %s\n", ptc_graph_num_nodes(b.g),
           ptc_graph_num_values(b.g),
           b.used_sdpa ? "scaled_dot_product_attention" : "matmul/softmax");
    if ((s = ptc_graph_print(b.g, stdout)) != PTC_OK) rc = report("print", s);
    if (!rc && a.save_path && (s = ptc_graph_save(b.g, a.save_path, NULL)) != PTC_OK)
      rc = report("save", s);
  }
  if (!rc && (s = compile_and_run(ctx, b.g, a.backend)) != PTC_OK) rc = report("run", s);
  ptc_graph_destroy(b.g);
  ptc_context_release(ctx);
  if (!rc) printf("transformer_block: ok\n");
  return rc;
}
