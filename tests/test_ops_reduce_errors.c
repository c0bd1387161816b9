/* test_ops_reduce_errors.c - error paths and symbolic shapes of the reduce
 * family: bad dtypes, ranks and attributes give INVALID_ARGUMENT with a
 * message naming the op and the problem; reductions over symbolic dims give
 * symbolic output shapes; a symbolic-shape graph runs on the ref backend. */
#include <stdlib.h>

#include "check.h"

static ptc_context* ctx;

static ptc_graph* new_graph(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  return g;
}

static ptc_value input(ptc_graph* g, int32_t dt, const int64_t* shape, size_t rank) {
  ptc_dim d[PTC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) d[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, dt, d, rank, NULL, &v));
  return v;
}

/* Adds `op` on inputs with attrs; returns the status (outputs discarded). */
static ptc_status node(ptc_graph* g, const char* op, const ptc_value* in, size_t n_in,
                       const ptc_attr* attrs, size_t n_attrs) {
  ptc_value outs[4];
  size_t n = 0;
  return ptc_graph_add_node(g, op, in, n_in, attrs, n_attrs, outs, 4, &n);
}

#define BAD(g, op, in, n_in, attrs, n_attrs, substr) \
  CHECK_ERR(node(g, op, in, n_in, attrs, n_attrs), PTC_CODE_INVALID_ARGUMENT, substr)

static void test_reduction_errors(void) {
  ptc_graph* g = new_graph();
  int64_t s34[] = {3, 4}, s30[] = {3, 0};
  ptc_value f = input(g, PTC_F32, s34, 2), i = input(g, PTC_I64, s34, 2);
  ptc_value b = input(g, PTC_BOOL, s34, 2), z = input(g, PTC_F32, s30, 2);
  int64_t d3[] = {3}, d00[] = {0, -2};
  ptc_attr a_d3[] = {ptc_attr_ints("dim", d3, 1)};
  ptc_attr a_dup[] = {ptc_attr_ints("dim", d00, 2)};
  ptc_attr a_d1[] = {ptc_attr_int("dim", 1)};
  BAD(g, "sum", &f, 1, a_d3, 1, "sum: dim 3 is out of range for a tensor of rank 2");
  BAD(g, "amax", &f, 1, a_dup, 1, "amax: dim 0 appears multiple times");
  BAD(g, "mean", &i, 1, NULL, 0, "mean: could not infer output dtype");
  ptc_attr a_mean_i[] = {ptc_attr_dtype("dtype", PTC_I32)};
  BAD(g, "mean", &f, 1, a_mean_i, 1, "mean: could not infer output dtype");
  BAD(g, "var", &i, 1, NULL, 0, "var: argument 'input' must be a floating tensor, got i64");
  BAD(g, "std", &b, 1, NULL, 0, "std: argument 'input' must be a floating tensor");
  BAD(g, "argmax", &b, 1, NULL, 0, "argmax: argument 'input' must be");
  BAD(g, "amax", &z, 1, a_d1, 1, "amax: cannot reduce over a zero-size dimension");
  BAD(g, "argmin", &z, 1, NULL, 0, "argmin: cannot reduce over a zero-size dimension");
  ptc_attr a_both[] = {ptc_attr_int("correction", 0), ptc_attr_bool("unbiased", 1)};
  BAD(g, "var_mean", &f, 1, a_both, 2, "var_mean: cannot specify both");
  BAD(g, "logsumexp", &f, 1, NULL, 0, "logsumexp: missing required attribute 'dim'");
  ptc_attr a_kd[] = {ptc_attr_float("keepdim", 1.0)};
  BAD(g, "sum", &f, 1, a_kd, 1, "sum: attribute 'keepdim'");
  BAD(g, "sum", NULL, 0, NULL, 0, "sum: expected 1 inputs");
  /* zero-size dims are fine where ATen defines the result */
  CHECK_OK(node(g, "sum", &z, 1, a_d1, 1));
  CHECK_OK(node(g, "prod", &z, 1, a_d1, 1));
  CHECK_OK(node(g, "any", &z, 1, a_d1, 1));
  ptc_graph_destroy(g);
}

static void test_along_errors(void) {
  ptc_graph* g = new_graph();
  int64_t s34[] = {3, 4};
  ptc_value f = input(g, PTC_F32, s34, 2), i = input(g, PTC_I32, s34, 2);
  ptc_value b = input(g, PTC_BOOL, s34, 2), sc = input(g, PTC_F32, NULL, 0);
  ptc_attr a_d1[] = {ptc_attr_int("dim", 1)};
  ptc_attr a_d2[] = {ptc_attr_int("dim", 2)};
  BAD(g, "softmax", &f, 1, NULL, 0, "softmax: missing required attribute 'dim'");
  BAD(g, "log_softmax", &f, 1, a_d2, 1, "log_softmax: dim 2 is out of range");
  BAD(g, "softmax", &i, 1, a_d1, 1, "softmax: could not infer output dtype");
  BAD(g, "cumsum", &f, 1, a_d2, 1, "cumsum: dim 2 is out of range");
  BAD(g, "sort", &sc, 1, a_d1, 1, "sort: dim 1 is out of range for a tensor of rank 0");
  ptc_attr a_k5[] = {ptc_attr_int("k", 5)};
  ptc_attr a_kneg[] = {ptc_attr_int("k", -1)};
  ptc_attr a_k2[] = {ptc_attr_int("k", 2)};
  BAD(g, "topk", &f, 1, a_k5, 1, "topk: selected index k out of range");
  BAD(g, "topk", &f, 1, a_kneg, 1, "topk: k (-1) must be non-negative");
  BAD(g, "topk", &b, 1, a_k2, 1, "topk: argument 'input' must be");
  BAD(g, "topk", &f, 1, NULL, 0, "topk: missing required attribute 'k'");
  CHECK_OK(node(g, "topk", &f, 1, a_k2, 1));
  ptc_graph_destroy(g);
}

static void test_norm_errors(void) {
  ptc_graph* g = new_graph();
  int64_t s234[] = {2, 3, 4}, s4[] = {4}, s5[] = {5}, s3[] = {3}, s6[] = {6};
  ptc_value x = input(g, PTC_F32, s234, 3), xi = input(g, PTC_I32, s234, 3);
  ptc_value w4 = input(g, PTC_F32, s4, 1), w5 = input(g, PTC_F32, s5, 1);
  ptc_value c3 = input(g, PTC_F32, s3, 1), x1 = input(g, PTC_F32, s6, 1);
  int64_t n5[] = {5}, n4[] = {4}, n1234[] = {1, 2, 3, 4};
  ptc_attr a_n5[] = {ptc_attr_ints("normalized_shape", n5, 1)};
  ptc_attr a_n4[] = {ptc_attr_ints("normalized_shape", n4, 1)};
  ptc_attr a_n0[] = {ptc_attr_ints("normalized_shape", NULL, 0)};
  ptc_attr a_nbig[] = {ptc_attr_ints("normalized_shape", n1234, 4)};
  BAD(g, "layer_norm", &x, 1, a_n5, 1, "layer_norm: input dim 2 (normalized_shape[0]): expected 5, got 4");
  BAD(g, "layer_norm", &x, 1, a_n0, 1, "layer_norm: normalized_shape must have at least one");
  BAD(g, "rms_norm", &x, 1, a_nbig, 1, "rms_norm: normalized_shape [1, 2, 3, 4] has more dims");
  BAD(g, "layer_norm", &xi, 1, a_n4, 1, "layer_norm: argument 'input' must be a floating");
  ptc_value lw[] = {x, w5, PTC_VALUE_NONE};
  BAD(g, "layer_norm", lw, 3, a_n4, 1, "layer_norm: weight dim 0: expected 4, got 5");
  ptc_value lb[] = {x, w4, xi};
  BAD(g, "layer_norm", lb, 3, a_n4, 1, "layer_norm: argument 'bias' must be a floating");
  ptc_value ok_in[] = {x, w4, w4};
  CHECK_OK(node(g, "layer_norm", ok_in, 3, a_n4, 1));

  ptc_value bn[] = {x, PTC_VALUE_NONE, PTC_VALUE_NONE, c3, c3};
  ptc_attr a_train[] = {ptc_attr_bool("training", 1)};
  BAD(g, "batch_norm", bn, 5, a_train, 1, "batch_norm: training=True is not supported");
  ptc_value bn_nomean[] = {x, PTC_VALUE_NONE, PTC_VALUE_NONE, PTC_VALUE_NONE, c3};
  BAD(g, "batch_norm", bn_nomean, 5, NULL, 0, "batch_norm: running_mean");
  ptc_value bn_rank1[] = {x1, PTC_VALUE_NONE, PTC_VALUE_NONE, c3, c3};
  BAD(g, "batch_norm", bn_rank1, 5, NULL, 0, "batch_norm: expected input of rank >= 2");
  ptc_value bn_badw[] = {x, w4, PTC_VALUE_NONE, c3, c3};
  BAD(g, "batch_norm", bn_badw, 5, NULL, 0, "batch_norm: weight dim 0: expected 3, got 4");
  BAD(g, "batch_norm", bn, 3, NULL, 0, "batch_norm: expected 5 inputs");
  CHECK_OK(node(g, "batch_norm", bn, 5, NULL, 0));

  ptc_attr a_g2[] = {ptc_attr_int("num_groups", 2)};
  ptc_attr a_g0[] = {ptc_attr_int("num_groups", 0)};
  BAD(g, "group_norm", &x, 1, a_g2, 1, "group_norm: expected the number of channels 3 to be divisible by num_groups 2");
  BAD(g, "group_norm", &x, 1, a_g0, 1, "group_norm: num_groups must be positive");
  BAD(g, "group_norm", &x, 1, NULL, 0, "group_norm: missing required attribute 'num_groups'");
  ptc_graph_destroy(g);
}

static void dim_text(ptc_graph* g, ptc_value v, uint32_t d, char* buf, size_t cap) {
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  buf[0] = 0;
  CHECK_OK(ptc_graph_value_info(g, v, &info));
  if (d >= info.rank) return;
  if (info.shape[d].sym)
    ptc_graph_sym_format(g, info.shape[d].sym, buf, cap);
  else
    snprintf(buf, cap, "%lld", (long long)info.shape[d].value);
}

static uint32_t rank_of(ptc_graph* g, ptc_value v) {
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  CHECK_OK(ptc_graph_value_info(g, v, &info));
  return info.rank;
}

/* sum over a symbolic dim; keepdim; topk with k checked by a guard; a run. */
static void test_symbolic(void) {
  ptc_graph* g = new_graph();
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 5;
  ptc_sym n = 0, m = 0;
  CHECK_OK(ptc_graph_add_symbol(g, "n", &o, &n));
  o.hint = 6;
  CHECK_OK(ptc_graph_add_symbol(g, "m", &o, &m));
  ptc_dim d[] = {{0, n, 0}, {0, m, 0}};
  ptc_value x = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d, 2, NULL, &x));
  ptc_value y[2];
  size_t ny = 0;
  ptc_attr a1[] = {ptc_attr_int("dim", 1)};
  CHECK_OK(ptc_graph_add_node(g, "sum", &x, 1, a1, 1, y, 2, &ny));
  char buf[64];
  CHECK(rank_of(g, y[0]) == 1);
  dim_text(g, y[0], 0, buf, sizeof buf);
  CHECK(strcmp(buf, "n") == 0);
  ptc_attr a2[] = {ptc_attr_int("dim", 0), ptc_attr_bool("keepdim", 1)};
  ptc_value k[2];
  CHECK_OK(ptc_graph_add_node(g, "var_mean", &x, 1, a2, 2, k, 2, &ny));
  CHECK(ny == 2);
  dim_text(g, k[1], 0, buf, sizeof buf);
  CHECK(strcmp(buf, "1") == 0);
  dim_text(g, k[1], 1, buf, sizeof buf);
  CHECK(strcmp(buf, "m") == 0);
  ptc_value t[2];
  ptc_attr a3[] = {ptc_attr_int("k", 3)};
  CHECK_OK(ptc_graph_add_node(g, "topk", &x, 1, a3, 1, t, 2, &ny));
  dim_text(g, t[0], 1, buf, sizeof buf);
  CHECK(strcmp(buf, "3") == 0);
  int64_t nsh[] = {0};
  ptc_sym nsy[] = {m};
  ptc_attr ln = ptc_attr_ints("normalized_shape", nsh, 1);
  ln.syms = nsy;
  ptc_value l;
  CHECK_OK(ptc_graph_add_node(g, "layer_norm", &x, 1, &ln, 1, &l, 1, &ny));
  CHECK_OK(ptc_graph_add_output(g, y[0]));
  CHECK_OK(ptc_graph_add_output(g, l));

  /* run with n=2, m=3: row sums and layer_norm of [[0,1,2],[3,4,5]] */
  float data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3};
  ptc_tensor in = {data, {PTC_DEVICE_CPU, 0}, 2, ptc_dtype_to_dl(PTC_F32), shape, NULL, 0};
  ptc_executable* exe = NULL;
  ptc_results* res = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  if (exe) CHECK_OK(ptc_executable_run_alloc(exe, &in, 1, NULL, &res));
  if (res) {
    const ptc_tensor* s = ptc_results_get(res, 0);
    CHECK(s && s->ndim == 1 && s->shape[0] == 2);
    if (s) CHECK(((const float*)s->data)[0] == 3.0f && ((const float*)s->data)[1] == 12.0f);
    const ptc_tensor* ln_out = ptc_results_get(res, 1);
    if (ln_out) {
      float v = ((const float*)ln_out->data)[3];
      CHECK(v < -1.2247f + 1e-3f && v > -1.2247f - 1e-3f);
    }
  }
  ptc_results_destroy(res);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  test_reduction_errors();
  test_along_errors();
  test_norm_errors();
  test_symbolic();
  ptc_context_release(ctx);
  return check_summary("test_ops_reduce_errors");
}
