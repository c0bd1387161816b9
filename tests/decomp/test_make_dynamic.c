/* test_make_dynamic.c - graph_make_dynamic (lib/decomp/dynamic.c) through
 * ptc_compile's dynamic_dims and directly: one executable runs many batch
 * sizes, new symbols get their names/hints/ranges, sizes 0 and 1 stay
 * static, and nodes whose attributes bake a size (or whose meta refuses a
 * symbolic size) fail with a message naming the node, the op and the dim. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/graph/graph.h"
#include "tests/check.h"

static ptc_context* ctx;

/* ---- helpers ---------------------------------------------------------------- */

static ptc_value add_input(ptc_graph* g, const int64_t* shape, size_t rank) {
  ptc_dim dims[PTC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) dims[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, PTC_F32, dims, rank, NULL, &v));
  return v;
}

static ptc_value node1(ptc_graph* g, const char* op, const ptc_value* in, size_t n,
                       const ptc_attr* a, size_t na) {
  ptc_value out = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_node(g, op, in, n, a, na, &out, 1, NULL));
  return out;
}

static ptc_tensor tensor(float* data, int64_t* shape, int32_t rank) {
  ptc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = PTC_DEVICE_CPU;
  t.ndim = rank;
  t.dtype = ptc_dtype_to_dl(PTC_F32);
  t.shape = shape;
  return t;
}

static ptc_status compile_dynamic(const ptc_graph* g, const ptc_dynamic_dim* dims, size_t n,
                                  ptc_executable** exe) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.dynamic_dims = dims;
  o.n_dynamic_dims = n;
  return ptc_compile(ctx, g, &o, exe);
}

/* x[8,16] -> relu -> sum(dim 1). */
static ptc_graph* relu_sum_graph(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t shape[2] = {8, 16};
  ptc_value x = add_input(g, shape, 2);
  ptc_value r = node1(g, "relu", &x, 1, NULL, 0);
  ptc_attr dim = ptc_attr_int("dim", 1);
  CHECK_OK(ptc_graph_add_output(g, node1(g, "sum", &r, 1, &dim, 1)));
  return g;
}

/* ---- one executable, many batch sizes ------------------------------------------ */

static void run_batch(const ptc_executable* exe, int64_t batch) {
  int64_t shape[2] = {batch, 16};
  float* x = malloc((size_t)batch * 16 * sizeof *x);
  for (int64_t i = 0; i < batch * 16; i++) x[i] = (float)((i * 37) % 23 - 11) * 0.25f;
  ptc_tensor in = tensor(x, shape, 2);
  ptc_results* res = NULL;
  CHECK_OK(ptc_executable_run_alloc(exe, &in, 1, NULL, &res));
  const ptc_tensor* y = ptc_results_get(res, 0);
  CHECK(y && y->ndim == 1 && y->shape[0] == batch);
  int bad = 0;
  for (int64_t b = 0; y && b < batch; b++) {
    double want = 0;
    for (int64_t j = 0; j < 16; j++) want += x[b * 16 + j] > 0 ? x[b * 16 + j] : 0;
    bad += fabs(((const float*)y->data)[b] - want) > 1e-4;
  }
  CHECK(bad == 0);
  ptc_results_destroy(res);
  free(x);
}

static void test_batches(void) {
  ptc_graph* g = relu_sum_graph();
  ptc_dynamic_dim dd = {0, 0};
  ptc_executable* exe = NULL;
  CHECK_OK(compile_dynamic(g, &dd, 1, &exe));
  int64_t batches[] = {2, 7, 64, 1000, 8};
  for (size_t i = 0; exe && i < sizeof batches / sizeof batches[0]; i++) run_batch(exe, batches[i]);
  /* 1 is specialised: a dynamic size has range [2, 2^62] */
  float x[16] = {0};
  int64_t one[2] = {1, 16}, bad[2] = {4, 15};
  ptc_tensor in = tensor(x, one, 2);
  ptc_results* res = NULL;
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &res), PTC_CODE_INVALID_ARGUMENT, "d0_0");
  in.shape = bad; /* the static dim stays checked */
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &res), PTC_CODE_INVALID_ARGUMENT,
            "input 0 dim 1: expected 16, got 15");
  ptc_executable_release(exe);
  /* without dynamic dims the batch is fixed */
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  int64_t seven[2] = {7, 16};
  float x7[7 * 16] = {0};
  in = tensor(x7, seven, 2);
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &res), PTC_CODE_INVALID_ARGUMENT,
            "expected 8, got 7");
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

/* ---- symbols ------------------------------------------------------------------------- */

static void expect_sym(const ptc_graph* g, const ptc_dim* d, const char* name, int64_t hint) {
  char buf[64] = "";
  CHECK(d->sym != 0);
  ptc_graph_sym_format(g, d->sym, buf, sizeof buf);
  CHECK(strcmp(buf, name) == 0);
  CHECK(d->value == hint);
}

static void test_symbols(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t shape[4] = {8, 1, 16, 0};
  ptc_value x = add_input(g, shape, 4);
  CHECK_OK(ptc_graph_add_output(g, node1(g, "relu", &x, 1, NULL, 0)));
  ptc_dynamic_dim dd[5] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 2}}; /* a repeat is harmless */
  ptc_graph* d = NULL;
  CHECK_OK(graph_make_dynamic(g, dd, 5, &d));
  if (d) {
    ptc_value_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(ptc_graph_value_info(d, ptc_graph_input(d, 0), &info));
    expect_sym(d, &info.shape[0], "d0_0", 8);
    CHECK(info.shape[1].sym == 0 && info.shape[1].value == 1); /* 1 stays static */
    expect_sym(d, &info.shape[2], "d0_2", 16);
    CHECK(info.shape[3].sym == 0 && info.shape[3].value == 0); /* 0 stays static */
    CHECK_OK(ptc_graph_value_info(d, ptc_graph_output(d, 0), &info));
    expect_sym(d, &info.shape[0], "d0_0", 8); /* the meta functions ran again */
    CHECK(sym_num_vars(d->env) == 2);
    int64_t lo, hi;
    sym_var_range(d->env, 0, &lo, &hi);
    CHECK(lo == 2 && hi == (int64_t)1 << 62);
    CHECK(ptc_graph_num_nodes(d) == 1 && ptc_graph_num_guards(d) == 0);
  }
  ptc_graph_destroy(d);
  ptc_graph_destroy(g);
}

/* ---- baked sizes and refusals ------------------------------------------------------ */

static void test_baked_reshape(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t shape[2] = {8, 16}, flat = 128;
  ptc_value x = add_input(g, shape, 2);
  ptc_value r = node1(g, "relu", &x, 1, NULL, 0);
  ptc_attr a = ptc_attr_ints("shape", &flat, 1);
  CHECK_OK(ptc_graph_add_output(g, node1(g, "reshape", &r, 1, &a, 1)));
  ptc_dynamic_dim dd = {0, 0};
  ptc_executable* exe = NULL;
  ptc_status s = compile_dynamic(g, &dd, 1, &exe);
  CHECK_ERR(s, PTC_CODE_INVALID_ARGUMENT, "node reshape_1 (reshape) fixes the size of input 0 dim 0");
  s = compile_dynamic(g, &dd, 1, &exe);
  CHECK(s && strstr(ptc_status_message(s), "d0_0") && strstr(ptc_status_message(s), "128"));
  if (s) printf("  baked-size error: %s\n", ptc_status_message(s));
  ptc_status_destroy(s);
  dd.dim = 1; /* another dim: same story */
  CHECK_ERR(compile_dynamic(g, &dd, 1, &exe), PTC_CODE_INVALID_ARGUMENT, "input 0 dim 1");
  ptc_graph_destroy(g);
}

/* x + y: both batch dims dynamic vary together; one alone is fixed by the other. */
static void test_broadcast_pair(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t shape[2] = {8, 4};
  ptc_value in[2] = {add_input(g, shape, 2), add_input(g, shape, 2)};
  CHECK_OK(ptc_graph_add_output(g, node1(g, "add", in, 2, NULL, 0)));
  ptc_dynamic_dim both[2] = {{0, 0}, {1, 0}};
  ptc_executable* exe = NULL;
  CHECK_OK(compile_dynamic(g, both, 2, &exe));
  float x[5 * 4], y[5 * 4];
  for (int i = 0; i < 20; i++) x[i] = (float)i, y[i] = (float)(2 * i);
  int64_t s5[2] = {5, 4}, s6[2] = {6, 4};
  ptc_tensor t[2] = {tensor(x, s5, 2), tensor(y, s5, 2)};
  ptc_results* res = NULL;
  CHECK_OK(ptc_executable_run_alloc(exe, t, 2, NULL, &res));
  const ptc_tensor* o = ptc_results_get(res, 0);
  CHECK(o && o->shape[0] == 5 && ((const float*)o->data)[19] == 57.0f);
  ptc_results_destroy(res);
  t[1].shape = s6; /* the recorded guard d0_0 == d1_0 is checked at run time */
  CHECK_ERR(ptc_executable_run_alloc(exe, t, 2, NULL, &res), PTC_CODE_INVALID_ARGUMENT, "d0_0");
  ptc_executable_release(exe);
  CHECK_ERR(compile_dynamic(g, both, 1, &exe), PTC_CODE_INVALID_ARGUMENT,
            "node add_0 (add) fixes the size of input 0 dim 0");
  ptc_graph_destroy(g);
}

/* interpolate with a non-integral scale needs a static size: its meta fails. */
static void test_meta_refusal(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t shape[4] = {1, 2, 4, 4};
  ptc_value x = add_input(g, shape, 4);
  double sf = 1.5;
  ptc_attr a = ptc_attr_floats("scale_factor", &sf, 1);
  CHECK_OK(ptc_graph_add_output(g, node1(g, "interpolate", &x, 1, &a, 1)));
  ptc_dynamic_dim dd[2] = {{0, 0}, {0, 2}};
  ptc_executable* exe = NULL;
  CHECK_ERR(compile_dynamic(g, dd, 2, &exe), PTC_CODE_INVALID_ARGUMENT,
            "node interpolate_0 (interpolate) does not support a dynamic input 0 dim 2");
  CHECK_OK(compile_dynamic(g, dd, 1, &exe)); /* the batch dim alone is fine */
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

static void test_bad_dims(void) {
  ptc_graph* g = relu_sum_graph();
  ptc_graph* d = NULL;
  ptc_dynamic_dim no_input = {3, 0}, no_dim = {0, 5};
  CHECK_ERR(graph_make_dynamic(g, &no_input, 1, &d), PTC_CODE_INVALID_ARGUMENT,
            "input 3 does not exist");
  CHECK_ERR(graph_make_dynamic(g, &no_dim, 1, &d), PTC_CODE_INVALID_ARGUMENT, "no dim 5");
  CHECK_ERR(graph_make_dynamic(g, NULL, 1, &d), PTC_CODE_INVALID_ARGUMENT, "NULL");
  CHECK(d == NULL);
  ptc_graph_destroy(g);
  /* an input with its own (non-contiguous) strides cannot vary */
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim dims[2] = {{8, 0, 0}, {16, 0, 0}};
  int64_t strides[2] = {1, 8};
  ptc_value x = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, PTC_F32, dims, 2, strides, &x));
  CHECK_OK(ptc_graph_add_output(g, node1(g, "neg", &x, 1, NULL, 0)));
  ptc_dynamic_dim dd = {0, 0};
  CHECK_ERR(graph_make_dynamic(g, &dd, 1, &d), PTC_CODE_INVALID_ARGUMENT, "non-contiguous");
  CHECK_OK(graph_make_dynamic(g, NULL, 0, &d)); /* nothing dynamic: a validated copy */
  if (d) {
    ptc_value_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(ptc_graph_value_info(d, ptc_graph_input(d, 0), &info));
    CHECK(info.strides[0].value == 1 && info.strides[1].value == 8);
  }
  ptc_graph_destroy(d);
  ptc_graph_destroy(g);
}

/* Strides of size-1 dims do not matter: such an input can still vary. */
static void test_unit_stride(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim dims[3] = {{6, 0, 0}, {1, 0, 0}, {4, 0, 0}};
  int64_t strides[3] = {4, 99, 1};
  ptc_value x = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, PTC_F32, dims, 3, strides, &x));
  CHECK_OK(ptc_graph_add_output(g, node1(g, "neg", &x, 1, NULL, 0)));
  ptc_graph* d = NULL;
  ptc_dynamic_dim dd = {0, 0};
  CHECK_OK(graph_make_dynamic(g, &dd, 1, &d));
  ptc_graph_destroy(d);
  d = NULL;
  CHECK_OK(graph_make_dynamic(g, NULL, 0, &d)); /* unchanged dims keep their strides */
  if (d) {
    ptc_value_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK_OK(ptc_graph_value_info(d, ptc_graph_input(d, 0), &info));
    CHECK(info.strides[1].value == 99);
  }
  ptc_graph_destroy(d);
  ptc_graph_destroy(g);
}

/* Constants (copied and borrowed) and a multi-output node survive the replay. */
static void test_constants_split(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  int64_t shape[2] = {8, 6}, cshape[1] = {6};
  static const float w[6] = {1, 2, 3, 4, 5, 6}, b[6] = {10, 20, 30, 40, 50, 60};
  ptc_value x = add_input(g, shape, 2), cw, cb, parts[2];
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, cshape, 1, w, PTC_CONSTANT_COPY, &cw));
  CHECK_OK(ptc_graph_add_constant(g, "b", PTC_F32, cshape, 1, b, PTC_CONSTANT_BORROW, &cb));
  ptc_value in[2] = {x, cw};
  in[0] = node1(g, "mul", in, 2, NULL, 0);
  in[1] = cb;
  ptc_value y = node1(g, "add", in, 2, NULL, 0);
  ptc_attr a[2] = {ptc_attr_int("split_size", 3), ptc_attr_int("dim", 1)};
  size_t n = 0;
  CHECK_OK(ptc_graph_add_node(g, "split", &y, 1, a, 2, parts, 2, &n));
  CHECK_OK(ptc_graph_add_output(g, parts[1]));
  CHECK_OK(ptc_graph_add_output(g, parts[0]));
  ptc_dynamic_dim dd = {0, 0};
  ptc_executable* exe = NULL;
  CHECK_OK(compile_dynamic(g, &dd, 1, &exe));
  float xs[3 * 6];
  for (int i = 0; i < 18; i++) xs[i] = (float)i;
  int64_t s3[2] = {3, 6};
  ptc_tensor t = tensor(xs, s3, 2);
  ptc_results* res = NULL;
  CHECK_OK(ptc_executable_run_alloc(exe, &t, 1, NULL, &res));
  const ptc_tensor* hi = ptc_results_get(res, 0);
  const ptc_tensor* lo = ptc_results_get(res, 1);
  CHECK(hi && lo && hi->shape[0] == 3 && hi->shape[1] == 3 && lo->shape[0] == 3);
  /* row 2: x = 12..17; hi = x[3..5] * w[3..5] + b[3..5] */
  CHECK(hi && ((const float*)hi->data)[8] == 17.0f * 6 + 60);
  CHECK(lo && ((const float*)lo->data)[0] == 0.0f * 1 + 10);
  ptc_results_destroy(res);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

int main(void) {
  if (ptc_context_create(NULL, &ctx)) return 1;
  test_batches();
  test_symbols();
  test_baked_reshape();
  test_broadcast_pair();
  test_meta_refusal();
  test_bad_dims();
  test_unit_stride();
  test_constants_split();
  ptc_context_release(ctx);
  return check_summary("test_make_dynamic");
}
