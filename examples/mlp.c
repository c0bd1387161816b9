/* mlp.c - example: a two-layer perceptron built, compiled and run through
 * libptc's public C API only.
 *
 *   y = linear(relu(linear(x, w1, b1)), w2, b2)
 *
 * Weights are graph constants filled by a deterministic generator, so the
 * printed checksum is the same on every machine. Build it out of tree with
 *   cc mlp.c $(pkg-config --cflags --libs ptc) -o mlp
 * Usage: mlp [--backend NAME] [GRAPH.json]
 *   NAME: "ref" (default) or another backend `ptc info` lists, e.g. "cpu";
 *   GRAPH.json: also save the graph as JSON (for `ptc run`, `ptc check`).
 * Exit status: 0 on success, 1 with the library's status message otherwise.
 */
#include <ptc/ptc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 4, IN = 16, HIDDEN = 32, OUT = 8 };

/* ---- deterministic numbers: a 64-bit LCG mapped to [-scale, scale) ---------- */
static float next_uniform(uint64_t* state, float scale) {
  *state = *state * 6364136223846793005ull + 1442695040888963407ull;
  uint32_t top = (uint32_t)(*state >> 40); /* 24 random bits */
  return ((float)top / 16777216.0f * 2.0f - 1.0f) * scale;
}

static void fill_uniform(float* p, size_t n, uint64_t* state, float scale) {
  for (size_t i = 0; i < n; i++) p[i] = next_uniform(state, scale);
}

/* ---- graph building helpers ------------------------------------------------- */
/* Adds a constant f32 tensor of `shape` with pseudo-random values. */
static ptc_status add_weight(ptc_graph* g, const char* name, const int64_t* shape, size_t rank,
                             uint64_t* state, float scale, ptc_value* out) {
  size_t n = 1;
  for (size_t i = 0; i < rank; i++) n *= (size_t)shape[i];
  float* data = malloc(n * sizeof *data);
  if (!data) {
    fprintf(stderr, "mlp: out of memory\n");
    exit(1);
  }
  fill_uniform(data, n, state, scale);
  /* COPY: the graph keeps its own copy, so the buffer can go right away. */
  ptc_status s = ptc_graph_add_constant(g, name, PTC_F32, shape, rank, data,
                                        PTC_CONSTANT_COPY, out);
  free(data);
  return s;
}

/* Adds a one-output node. */
static ptc_status add_op(ptc_graph* g, const char* op, const ptc_value* in, size_t n_in,
                         const ptc_attr* attrs, size_t n_attrs, ptc_value* out) {
  return ptc_graph_add_node(g, op, in, n_in, attrs, n_attrs, out, 1, NULL);
}

/* linear(x, weight[out_f, in_f], bias[out_f]) with generated parameters. */
static ptc_status add_linear(ptc_graph* g, const char* name, ptc_value x, int64_t in_f,
                             int64_t out_f, uint64_t* state, ptc_value* out) {
  char wname[64], bname[64];
  snprintf(wname, sizeof wname, "%s.weight", name);
  snprintf(bname, sizeof bname, "%s.bias", name);
  const int64_t wshape[2] = {out_f, in_f};
  const int64_t bshape[1] = {out_f};
  ptc_value in[3] = {x, 0, 0};
  float scale = 1.0f / (float)in_f; /* keeps activations of order one */
  ptc_status s = add_weight(g, wname, wshape, 2, state, scale * 4.0f, &in[1]);
  if (!s) s = add_weight(g, bname, bshape, 1, state, 0.1f, &in[2]);
  if (!s) s = add_op(g, "linear", in, 3, NULL, 0, out);
  return s;
}

/* x [BATCH, IN] -> linear -> relu -> linear -> y [BATCH, OUT] */
static ptc_status build_mlp(ptc_graph* g) {
  uint64_t state = 42;
  const ptc_dim xshape[2] = {{BATCH, 0, 0}, {IN, 0, 0}};
  ptc_value x, h, a, y;
  ptc_status s = ptc_graph_add_input(g, "x", PTC_F32, xshape, 2, NULL, &x);
  if (!s) s = add_linear(g, "fc1", x, IN, HIDDEN, &state, &h);
  if (!s) s = add_op(g, "relu", &h, 1, NULL, 0, &a);
  if (!s) s = add_linear(g, "fc2", a, HIDDEN, OUT, &state, &y);
  if (!s) s = ptc_graph_add_output(g, y);
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

  float xdata[BATCH * IN];
  uint64_t state = 7;
  fill_uniform(xdata, BATCH * IN, &state, 1.0f);
  int64_t xshape[2] = {BATCH, IN};
  ptc_tensor x = {xdata, {PTC_DEVICE_CPU, 0}, 2, ptc_dtype_to_dl(PTC_F32), xshape, NULL, 0};

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
  fprintf(stderr, "mlp: %s failed: %s: %s\n", step, ptc_code_name(ptc_status_code(s)),
          ptc_status_message(s));
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
  ptc_graph* g = NULL;
  int rc = 0;
  s = ptc_graph_create(ctx, &g);
  if (s) rc = report("graph", s);
  if (!rc && (s = build_mlp(g)) != PTC_OK) rc = report("build", s);
  if (!rc && (s = ptc_graph_print(g, stdout)) != PTC_OK) rc = report("print", s);
  if (!rc && a.save_path && (s = ptc_graph_save(g, a.save_path, NULL)) != PTC_OK)
    rc = report("save", s);
  if (!rc && (s = compile_and_run(ctx, g, a.backend)) != PTC_OK) rc = report("run", s);
  ptc_graph_destroy(g);
  ptc_context_release(ctx);
  if (!rc) printf("mlp: ok\n");
  return rc;
}
