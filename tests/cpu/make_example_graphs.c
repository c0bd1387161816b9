/* make_example_graphs.c - writes the example JSON graphs of examples/graphs/
 * through the public C API and ptc_graph_save: an MLP, a CNN block
 * (conv2d + batch_norm + relu + max_pool2d), a transformer block, a
 * reduction-heavy graph and an MLP with a dynamic batch dim. Weights are
 * small deterministic constants stored inline, so each file stands alone.
 *
 * Usage: make_example_graphs [OUT_DIR]   (default examples/graphs)
 * Exit status: 0 on success, 1 with the failing graph and status otherwise.
 */
#include <ptc/ptc.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Graph building with sticky errors: after the first failure every helper
 * is a no-op and the status is kept for the report. */
typedef struct builder {
  ptc_graph* g;
  ptc_status err;
  uint64_t rng;
  unsigned n_const;
} builder;

static float uniform(builder* b, float scale) {
  b->rng = b->rng * 6364136223846793005ull + 1442695040888963407ull;
  return ((float)(uint32_t)(b->rng >> 40) / 16777216.0f * 2.0f - 1.0f) * scale;
}

static void keep(builder* b, ptc_status s) {
  if (s && !b->err) b->err = s;
  else ptc_status_destroy(s);
}

static ptc_value input(builder* b, const char* name, const ptc_dim* dims, size_t rank) {
  ptc_value v = PTC_VALUE_NONE;
  if (!b->err) keep(b, ptc_graph_add_input(b->g, name, PTC_F32, dims, rank, NULL, &v));
  return v;
}

/* A constant with values uniform in [offset - scale, offset + scale). */
static ptc_value weight(builder* b, const int64_t* shape, size_t rank, float scale, float offset) {
  ptc_value v = PTC_VALUE_NONE;
  size_t n = 1;
  for (size_t i = 0; i < rank; i++) n *= (size_t)shape[i];
  float* data = malloc(n * sizeof *data);
  if (!data || b->err) {
    free(data);
    return v;
  }
  for (size_t i = 0; i < n; i++) data[i] = offset + uniform(b, scale);
  char name[16];
  snprintf(name, sizeof name, "w%u", b->n_const++);
  keep(b, ptc_graph_add_constant(b->g, name, PTC_F32, shape, rank, data, PTC_CONSTANT_COPY, &v));
  free(data);
  return v;
}

static ptc_value op(builder* b, const char* name, const ptc_value* in, size_t n_in,
                    const ptc_attr* attrs, size_t n_attrs) {
  ptc_value v = PTC_VALUE_NONE;
  if (!b->err) keep(b, ptc_graph_add_node(b->g, name, in, n_in, attrs, n_attrs, &v, 1, NULL));
  return v;
}

static ptc_value op1(builder* b, const char* name, ptc_value x) { return op(b, name, &x, 1, NULL, 0); }

static ptc_value op2(builder* b, const char* name, ptc_value x, ptc_value y) {
  ptc_value in[2] = {x, y};
  return op(b, name, in, 2, NULL, 0);
}

static void output(builder* b, ptc_value v) {
  if (!b->err) keep(b, ptc_graph_add_output(b->g, v));
}

static ptc_value linear(builder* b, ptc_value x, int64_t in_f, int64_t out_f) {
  int64_t ws[2] = {out_f, in_f};
  ptc_value in[3] = {x, weight(b, ws, 2, 2.0f / sqrtf((float)in_f), 0), weight(b, &out_f, 1, 0.1f, 0)};
  return op(b, "linear", in, 3, NULL, 0);
}

static ptc_value layer_norm(builder* b, ptc_value x, int64_t n) {
  ptc_value in[3] = {x, weight(b, &n, 1, 0.2f, 1.0f), weight(b, &n, 1, 0.1f, 0)};
  ptc_attr a = ptc_attr_ints("normalized_shape", &n, 1);
  return op(b, "layer_norm", in, 3, &a, 1);
}

/* ---- the graphs ---------------------------------------------------------------------- */
/* x[4, 16] -> linear 32 -> gelu -> linear 8 -> log_softmax */
static void build_mlp(builder* b) {
  ptc_dim xd[2] = {{4, 0, 0}, {16, 0, 0}};
  ptc_value h = op1(b, "gelu", linear(b, input(b, "x", xd, 2), 16, 32));
  ptc_attr a = ptc_attr_int("dim", -1);
  ptc_value y = linear(b, h, 32, 8);
  output(b, op(b, "log_softmax", &y, 1, &a, 1));
}

/* x[2, 3, 16, 16] -> conv2d 3->8 k3 p1 -> batch_norm (inference) -> relu -> max_pool2d 2 */
static void build_cnn_block(builder* b) {
  ptc_dim xd[4] = {{2, 0, 0}, {3, 0, 0}, {16, 0, 0}, {16, 0, 0}};
  int64_t ws[4] = {8, 3, 3, 3}, c = 8, one = 1, two = 2;
  ptc_value conv_in[3] = {input(b, "x", xd, 4), weight(b, ws, 4, 0.4f, 0), weight(b, &c, 1, 0.1f, 0)};
  ptc_attr conv_a = ptc_attr_ints("padding", &one, 1);
  ptc_value y = op(b, "conv2d", conv_in, 3, &conv_a, 1);
  ptc_value bn_in[5] = {y, weight(b, &c, 1, 0.2f, 1.0f), weight(b, &c, 1, 0.1f, 0),
                        weight(b, &c, 1, 0.1f, 0), weight(b, &c, 1, 0.3f, 1.0f)};
  y = op1(b, "relu", op(b, "batch_norm", bn_in, 5, NULL, 0));
  ptc_attr pool_a = ptc_attr_ints("kernel_size", &two, 1);
  output(b, op(b, "max_pool2d", &y, 1, &pool_a, 1));
}

/* Splits [B, S, D] into heads [B, H, S, D/H]. */
static ptc_value heads(builder* b, ptc_value x, int64_t bsz, int64_t s, int64_t h, int64_t dh) {
  int64_t shape[4] = {bsz, s, h, dh};
  ptc_attr a = ptc_attr_ints("shape", shape, 4);
  ptc_value r = op(b, "reshape", &x, 1, &a, 1);
  ptc_attr t[2] = {ptc_attr_int("dim0", 1), ptc_attr_int("dim1", 2)};
  return op(b, "transpose", &r, 1, t, 2);
}

/* Pre-norm block on x[2, 8, 16], 2 causal heads: x + attn(ln(x)), then
 * + mlp(ln(.)) with a hidden size of 32. */
static void build_transformer_block(builder* b) {
  enum { B = 2, S = 8, D = 16, H = 2 };
  ptc_dim xd[3] = {{B, 0, 0}, {S, 0, 0}, {D, 0, 0}};
  ptc_value x = input(b, "x", xd, 3);
  ptc_value h = layer_norm(b, x, D);
  ptc_value qkv[3];
  for (int i = 0; i < 3; i++) qkv[i] = heads(b, linear(b, h, D, D), B, S, H, D / H);
  ptc_attr causal = ptc_attr_bool("is_causal", 1);
  ptc_value att = op(b, "scaled_dot_product_attention", qkv, 3, &causal, 1);
  ptc_attr t[2] = {ptc_attr_int("dim0", 1), ptc_attr_int("dim1", 2)};
  att = op(b, "transpose", &att, 1, t, 2);
  int64_t shape[3] = {B, S, D};
  ptc_attr r = ptc_attr_ints("shape", shape, 3);
  att = op(b, "reshape", &att, 1, &r, 1);
  ptc_value x1 = op2(b, "add", x, linear(b, att, D, D));
  ptc_value m = linear(b, op1(b, "gelu", linear(b, layer_norm(b, x1, D), D, 2 * D)), 2 * D, D);
  output(b, op2(b, "add", x1, m));
}

/* x[16, 33]: row and column reductions, softmax, variance, argmax. */
static void build_reductions(builder* b) {
  ptc_dim xd[2] = {{16, 0, 0}, {33, 0, 0}};
  ptc_value x = input(b, "x", xd, 2);
  int64_t d1 = 1, d0 = 0;
  ptc_attr row[2] = {ptc_attr_ints("dim", &d1, 1), ptc_attr_bool("keepdim", 1)};
  ptc_attr col = ptc_attr_ints("dim", &d0, 1);
  ptc_value centered = op2(b, "sub", x, op(b, "mean", &x, 1, row, 2));
  output(b, op(b, "sum", &centered, 1, &col, 1));
  output(b, op(b, "amax", &x, 1, row, 2));
  ptc_attr var_a[2] = {ptc_attr_ints("dim", &d1, 1), ptc_attr_float("correction", 1)};
  output(b, op(b, "var", &x, 1, var_a, 2));
  ptc_attr lse = ptc_attr_ints("dim", &d0, 1);
  output(b, op(b, "logsumexp", &x, 1, &lse, 1));
  ptc_attr sm = ptc_attr_int("dim", 0);
  ptc_value p = op(b, "softmax", &x, 1, &sm, 1);
  output(b, op(b, "sum", &p, 1, row, 2));
  ptc_attr am = ptc_attr_int("dim", 1);
  output(b, op(b, "argmax", &x, 1, &am, 1));
  output(b, op(b, "sum", &x, 1, NULL, 0));
}

/* x[batch, 16] with a symbolic batch (range [1, ...], hint 8): linear 16->32
 * -> relu -> layer_norm -> row sum. */
static void build_dynamic_batch(builder* b) {
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  so.hint = 8;
  so.min_value = 1;
  ptc_sym batch = 0;
  if (!b->err) keep(b, ptc_graph_add_symbol(b->g, "batch", &so, &batch));
  ptc_dim xd[2] = {{8, batch, 0}, {16, 0, 0}};
  ptc_value h = layer_norm(b, op1(b, "relu", linear(b, input(b, "x", xd, 2), 16, 32)), 32);
  int64_t d1 = 1;
  ptc_attr a = ptc_attr_ints("dim", &d1, 1);
  output(b, h);
  output(b, op(b, "sum", &h, 1, &a, 1));
}

static const struct {
  const char* file;
  void (*build)(builder* b);
} graphs[] = {
    {"mlp.json", build_mlp},
    {"cnn_block.json", build_cnn_block},
    {"transformer_block.json", build_transformer_block},
    {"reductions.json", build_reductions},
    {"dynamic_batch.json", build_dynamic_batch},
};

static int write_graph(ptc_context* ctx, const char* dir, size_t i) {
  builder b = {NULL, NULL, 0x5EED0000ull + i, 0};
  keep(&b, ptc_graph_create(ctx, &b.g));
  if (!b.err) graphs[i].build(&b);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, graphs[i].file);
  if (!b.err) keep(&b, ptc_graph_save(b.g, path, NULL)); /* NULL options: all weights inline */
  int rc = 0;
  if (b.err) {
    fprintf(stderr, "make_example_graphs: %s: %s\n", graphs[i].file, ptc_status_message(b.err));
    rc = 1;
  } else {
    printf("wrote %s (%zu nodes)\n", path, ptc_graph_num_nodes(b.g));
  }
  ptc_status_destroy(b.err);
  ptc_graph_destroy(b.g);
  return rc;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "examples/graphs";
  ptc_context* ctx = NULL;
  ptc_status s = ptc_context_create(NULL, &ctx);
  if (s) {
    fprintf(stderr, "make_example_graphs: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    return 1;
  }
  int rc = 0;
  for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) rc |= write_graph(ctx, dir, i);
  ptc_context_release(ctx);
  return rc;
}
