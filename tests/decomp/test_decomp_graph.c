/* test_decomp_graph.c - whole-graph decomposition (lib/decomp/decomp.c):
 * a multi-op graph decomposes into primitive ops only and computes the same
 * values on the ref backend; filtering keeps chosen ops; decompositions of
 * graphs with symbolic sizes (count tensors for means, a symbolic attention
 * scale) match the original at several sizes; identity decompositions and
 * the table queries. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decomp/decomp.h"
#include "lib/graph/op.h"
#include "tests/check.h"

static ptc_context* ctx;

/* ---- helpers ------------------------------------------------------------------ */

static ptc_value input(ptc_graph* g, const char* name, const int64_t* shape, size_t rank) {
  ptc_dim dims[PTC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) dims[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, name, PTC_F32, dims, rank, NULL, &v));
  return v;
}

static ptc_value node(ptc_graph* g, const char* op, const ptc_value* in, size_t n,
                      const ptc_attr* a, size_t na) {
  ptc_value out[2] = {PTC_VALUE_NONE, PTC_VALUE_NONE};
  CHECK_OK(ptc_graph_add_node(g, op, in, n, a, na, out, 2, NULL));
  return out[0];
}

static size_t count_op(const ptc_graph* g, const char* op) {
  size_t n = 0;
  for (size_t i = 0; i < g->nodes.len; i++) n += strcmp(graph_node(g, i)->op->name, op) == 0;
  return n;
}

static size_t count_decomposed(const ptc_graph* g) {
  size_t n = 0;
  for (size_t i = 0; i < g->nodes.len; i++) n += decomp_has(graph_node(g, i)->op->name);
  return n;
}

/* Deterministic data in [-2, 2). */
static float* data(int64_t n, int seed) {
  float* p = malloc((size_t)(n > 0 ? n : 1) * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = (float)(((i * 7919 + seed * 104729) % 1000) / 250.0 - 2);
  return p;
}

static ptc_tensor tensor(float* p, int64_t* shape, int32_t rank) {
  ptc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = p;
  t.device.device_type = PTC_DEVICE_CPU;
  t.ndim = rank;
  t.dtype = ptc_dtype_to_dl(PTC_F32);
  t.shape = shape;
  return t;
}

static ptc_results* run(const ptc_graph* g, const ptc_tensor* in, size_t n) {
  ptc_executable* exe = NULL;
  ptc_results* r = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  if (exe) CHECK_OK(ptc_executable_run_alloc(exe, in, n, NULL, &r));
  ptc_executable_release(exe);
  return r;
}

/* Every output of a and b equal within tol (relative to max(1, |a|)). */
static void same_results(const ptc_results* a, const ptc_results* b, double tol) {
  CHECK(a && b && ptc_results_count(a) == ptc_results_count(b));
  for (size_t k = 0; a && b && k < ptc_results_count(a); k++) {
    const ptc_tensor *x = ptc_results_get(a, k), *y = ptc_results_get(b, k);
    int64_t n = 1;
    bool shape_ok = x->ndim == y->ndim;
    for (int32_t d = 0; shape_ok && d < x->ndim; d++) {
      shape_ok = x->shape[d] == y->shape[d];
      n *= x->shape[d];
    }
    CHECK(shape_ok);
    int bad = 0;
    for (int64_t i = 0; shape_ok && i < n; i++) {
      double u = ((const float*)x->data)[i], v = ((const float*)y->data)[i];
      bad += !(fabs(u - v) <= tol * fmax(1.0, fabs(u)));
    }
    if (bad) printf("  output %zu: %d of %lld elements differ\n", k, bad, (long long)n);
    CHECK(bad == 0);
  }
}

/* ---- a block of composite ops ------------------------------------------------------ */

/* x[4, 8, 16]: layer_norm -> matmul(w) -> gelu(tanh) -> sdpa(self) -> silu
 * -> softmax / log_softmax / logsumexp / var_mean / std / mean / clamp. */
static ptc_graph* block_graph(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t xs[3] = {4, 8, 16}, ws[2] = {16, 16}, ps[1] = {16};
  ptc_value x = input(g, "x", xs, 3), w = input(g, "w", ws, 2), gamma = input(g, "gamma", ps, 1);
  int64_t ns = 16;
  ptc_attr ln_a = ptc_attr_ints("normalized_shape", &ns, 1);
  ptc_value ln_in[3] = {x, gamma, PTC_VALUE_NONE};
  ptc_value h = node(g, "layer_norm", ln_in, 3, &ln_a, 1);
  ptc_value mm[2] = {h, w};
  h = node(g, "matmul", mm, 2, NULL, 0);
  ptc_attr tanh_a = ptc_attr_string("approximate", "tanh");
  h = node(g, "gelu", &h, 1, &tanh_a, 1);
  ptc_value qkv[3] = {h, h, h};
  ptc_attr causal = ptc_attr_bool("is_causal", 1);
  h = node(g, "scaled_dot_product_attention", qkv, 3, &causal, 1);
  h = node(g, "silu", &h, 1, NULL, 0);
  ptc_attr dim = ptc_attr_int("dim", -1), dims1 = ptc_attr_int("dim", 1);
  CHECK_OK(ptc_graph_add_output(g, node(g, "softmax", &h, 1, &dim, 1)));
  CHECK_OK(ptc_graph_add_output(g, node(g, "log_softmax", &h, 1, &dims1, 1)));
  CHECK_OK(ptc_graph_add_output(g, node(g, "logsumexp", &h, 1, &dim, 1)));
  ptc_value vm[2];
  CHECK_OK(ptc_graph_add_node(g, "var_mean", &h, 1, &dims1, 1, vm, 2, NULL));
  CHECK_OK(ptc_graph_add_output(g, vm[0]));
  CHECK_OK(ptc_graph_add_output(g, vm[1]));
  ptc_attr keep[2] = {dims1, ptc_attr_bool("keepdim", 1)};
  CHECK_OK(ptc_graph_add_output(g, node(g, "std", &h, 1, keep, 2)));
  CHECK_OK(ptc_graph_add_output(g, node(g, "mean", &h, 1, NULL, 0)));
  ptc_attr lim[2] = {ptc_attr_float("min", -0.1), ptc_attr_float("max", 0.2)};
  CHECK_OK(ptc_graph_add_output(g, node(g, "clamp", &h, 1, lim, 2)));
  return g;
}

static void test_block(void) {
  ptc_graph* g = block_graph();
  ptc_graph* d = NULL;
  CHECK_OK(decomp_graph(g, &d));
  if (!d) {
    ptc_graph_destroy(g);
    return;
  }
  CHECK(count_decomposed(g) == 11 && count_decomposed(d) == 0);
  CHECK(ptc_graph_num_inputs(d) == 3 && ptc_graph_num_outputs(d) == ptc_graph_num_outputs(g));
  CHECK(strcmp(graph_value(d, ptc_graph_input(d, 1))->name, "w") == 0);
  CHECK(count_op(d, "amax") >= 3 && count_op(d, "matmul") == 3 && count_op(d, "tanh") == 1);
  int64_t xs[3] = {4, 8, 16}, ws[2] = {16, 16}, ps[1] = {16};
  float *x = data(4 * 8 * 16, 1), *w = data(16 * 16, 2), *gm = data(16, 3);
  for (int i = 0; i < 256; i++) w[i] *= 0.25f;
  ptc_tensor in[3] = {tensor(x, xs, 3), tensor(w, ws, 2), tensor(gm, ps, 1)};
  ptc_results *a = run(g, in, 3), *b = run(d, in, 3);
  same_results(a, b, 1e-4);
  ptc_results_destroy(a);
  ptc_results_destroy(b);
  free(x);
  free(w);
  free(gm);
  ptc_graph_destroy(d);
  ptc_graph_destroy(g);
}

static bool all_but_softmax(void* user, const char* op) {
  (void)user;
  return strcmp(op, "softmax") != 0;
}

static void test_filtered(void) {
  ptc_graph* g = block_graph();
  ptc_graph* d = NULL;
  decomp_options o;
  memset(&o, 0, sizeof o);
  o.want = all_but_softmax;
  CHECK_OK(decomp_graph_ex(g, &o, &d));
  CHECK(d && count_decomposed(d) == 1 && count_op(d, "softmax") == 1);
  ptc_graph_destroy(d);
  ptc_graph_destroy(g);
}

/* Constants: copied by default (the result outlives its source), borrowed
 * on request. */
static void test_constants(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t xs[2] = {3, 4}, ws[1] = {4};
  static const float w[4] = {1, -2, 3, -4};
  ptc_value x = input(g, "x", xs, 2), c = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, ws, 1, w, PTC_CONSTANT_COPY, &c));
  ptc_value in[2] = {x, c};
  ptc_value y = node(g, "mul", in, 2, NULL, 0);
  CHECK_OK(ptc_graph_add_output(g, node(g, "silu", &y, 1, NULL, 0)));
  const gvalue* src = graph_value(g, c);
  ptc_graph *copy = NULL, *borrow = NULL;
  decomp_options o;
  memset(&o, 0, sizeof o);
  o.borrow_constants = true;
  CHECK_OK(decomp_graph(g, &copy));
  CHECK_OK(decomp_graph_ex(g, &o, &borrow));
  for (size_t v = 0; copy && borrow && v < copy->values.len; v++) {
    const gvalue* a = graph_value(copy, (ptc_value)v);
    const gvalue* b = graph_value(borrow, (ptc_value)v);
    if (a->kind != PTC_VALUE_CONSTANT) continue;
    CHECK(a->owned && a->data != src->data && memcmp(a->data, w, sizeof w) == 0);
    CHECK(!b->owned && b->data == src->data && strcmp(b->name, "w") == 0);
  }
  float xv[12];
  for (int i = 0; i < 12; i++) xv[i] = (float)i - 6;
  ptc_tensor t = tensor(xv, xs, 2);
  ptc_results* a = run(g, &t, 1);
  ptc_graph_destroy(g); /* the copy no longer needs it */
  ptc_results* b = copy ? run(copy, &t, 1) : NULL;
  same_results(a, b, 1e-6);
  ptc_results_destroy(a);
  ptc_results_destroy(b);
  ptc_graph_destroy(copy);
  ptc_graph_destroy(borrow);
}

/* ---- symbolic sizes --------------------------------------------------------------------- */

/* x[s0, 6] with s0 dynamic: mean over dim 0 (count tensor), var over all
 * dims with correction 1 (relu(count - 1)), softmax over dim 0. */
static void test_symbolic_means(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t xs[2] = {8, 6};
  ptc_value x = input(g, "x", xs, 2);
  ptc_attr d0 = ptc_attr_int("dim", 0);
  CHECK_OK(ptc_graph_add_output(g, node(g, "mean", &x, 1, &d0, 1)));
  CHECK_OK(ptc_graph_add_output(g, node(g, "var", &x, 1, NULL, 0)));
  CHECK_OK(ptc_graph_add_output(g, node(g, "softmax", &x, 1, &d0, 1)));
  ptc_dynamic_dim dd = {0, 0};
  ptc_graph *gd = NULL, *d = NULL;
  CHECK_OK(graph_make_dynamic(g, &dd, 1, &gd));
  if (gd) CHECK_OK(decomp_graph(gd, &d));
  CHECK(d && count_decomposed(d) == 0 && count_op(d, "full") >= 2);
  int64_t batches[3] = {2, 3, 9};
  for (int k = 0; d && k < 3; k++) {
    int64_t s[2] = {batches[k], 6};
    float* p = data(batches[k] * 6, k);
    ptc_tensor t = tensor(p, s, 2);
    ptc_results *a = run(gd, &t, 1), *b = run(d, &t, 1);
    same_results(a, b, 1e-5);
    ptc_results_destroy(a);
    ptc_results_destroy(b);
    free(p);
  }
  ptc_graph_destroy(d);
  ptc_graph_destroy(gd);
  ptc_graph_destroy(g);
}

/* Attention with a symbolic head dim: the default scale 1/sqrt(E) becomes a
 * tensor. */
static void test_symbolic_scale(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t qs[3] = {2, 5, 8};
  ptc_value q = input(g, "q", qs, 3), k = input(g, "k", qs, 3);
  ptc_value in[3] = {q, k, k};
  CHECK_OK(ptc_graph_add_output(g, node(g, "scaled_dot_product_attention", in, 3, NULL, 0)));
  ptc_dynamic_dim dd[2] = {{0, 2}, {1, 2}};
  ptc_graph *gd = NULL, *d = NULL;
  CHECK_OK(graph_make_dynamic(g, dd, 2, &gd));
  if (gd) CHECK_OK(decomp_graph(gd, &d));
  CHECK(d && count_decomposed(d) == 0 && count_op(d, "rsqrt") == 1);
  int64_t heads[2] = {3, 12};
  for (int j = 0; d && j < 2; j++) {
    int64_t s[3] = {2, 5, heads[j]};
    float *pq = data(10 * heads[j], 5 + j), *pk = data(10 * heads[j], 7 + j);
    ptc_tensor t[2] = {tensor(pq, s, 3), tensor(pk, s, 3)};
    ptc_results *a = run(gd, t, 2), *b = run(d, t, 2);
    same_results(a, b, 1e-5);
    ptc_results_destroy(a);
    ptc_results_destroy(b);
    free(pq);
    free(pk);
  }
  ptc_graph_destroy(d);
  ptc_graph_destroy(gd);
  ptc_graph_destroy(g);
}

/* ---- identity, errors, table ---------------------------------------------------------- */

static void test_identity(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t xs[2] = {3, 4};
  ptc_value x = input(g, "x", xs, 2);
  ptc_attr p = ptc_attr_float("p", 0.3);
  CHECK_OK(ptc_graph_add_output(g, node(g, "dropout", &x, 1, &p, 1)));
  ptc_graph* d = NULL;
  CHECK_OK(decomp_graph(g, &d));
  CHECK(d && ptc_graph_num_nodes(d) == 0 && ptc_graph_output(d, 0) == ptc_graph_input(d, 0));
  float* v = data(12, 4);
  ptc_tensor t = tensor(v, xs, 2);
  ptc_results* r = d ? run(d, &t, 1) : NULL;
  CHECK(r && memcmp(ptc_results_get(r, 0)->data, v, 12 * sizeof *v) == 0);
  ptc_results_destroy(r);
  free(v);
  ptc_graph_destroy(d);
  ptc_graph_destroy(g);
}

static void test_errors_and_table(void) {
  ptc_graph* d = NULL;
  CHECK_ERR(decomp_graph(NULL, &d), PTC_CODE_INVALID_ARGUMENT, "NULL");
  CHECK(decomp_count() >= 21 && decomp_op_at(decomp_count()) == NULL);
  for (size_t i = 0; i < decomp_count(); i++) CHECK(op_find(decomp_op_at(i)) != NULL);
  CHECK(decomp_has("layer_norm") && decomp_has("clamp") && !decomp_has("sigmoid") &&
        !decomp_has("rsqrt") && !decomp_has("linear") && !decomp_has("squeeze") &&
        !decomp_has("contiguous") && !decomp_has(NULL));
}

int main(void) {
  if (ptc_context_create(NULL, &ctx)) return 1;
  test_block();
  test_filtered();
  test_constants();
  test_symbolic_means();
  test_symbolic_scale();
  test_identity();
  test_errors_and_table();
  ptc_context_release(ctx);
  return check_summary("test_decomp_graph");
}
