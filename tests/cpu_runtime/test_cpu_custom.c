/* test_cpu_custom.c - host-registered extern ops (ptc_register_extern_op)
 * called through libffi: `my_scale(x, out, n, alpha)` between pointwise ops
 * on the ref backend, a second op using every argument kind (dims,
 * int attribute, user pointer, fixed output dtype) on a strided input, the
 * CPU backend's IR_EXT_CUSTOM and IR_EXT_FALLBACK paths, registration and
 * node errors, per-context visibility, and concurrent registration. The
 * whole-graph run on the cpu backend is in test_cpu_pipeline.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "../../backends/cpu/cpu_rt.h"
#include "../check.h"

static ptc_context* ctx;
static _Atomic int scale_calls;

static void my_scale(const float* x, float* out, int64_t n, double alpha) {
  atomic_fetch_add(&scale_calls, 1);
  for (int64_t i = 0; i < n; i++) out[i] = (float)(x[i] * alpha);
}

/* out[r, c] = x[r, c] * k + *bias + r, as f64 */
static void affine_rows(const float* x, int64_t rows, double* out, int64_t cols, int64_t k,
                        void* user) {
  double b = *(const double*)user;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) out[r * cols + c] = x[r * cols + c] * (double)k + b + (double)r;
}

static double user_bias = 0.25;

static void register_ops(void) {
  static const ptc_extern_arg scale_args[] = {{PTC_EXTERN_ARG_INPUT, 0, 0, NULL},
                                              {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL},
                                              {PTC_EXTERN_ARG_NUMEL, 0, 0, NULL},
                                              {PTC_EXTERN_ARG_ATTR_FLOAT, 0, 0, "alpha"}};
  static const ptc_extern_output same = {0, -1};
  static const int32_t f32_only[1] = {PTC_F32};
  ptc_extern_op_desc d;
  ptc_extern_op_desc_init(&d);
  d.name = "my_scale";
  d.fn = (void (*)(void))my_scale;
  d.n_inputs = 1;
  d.input_dtypes = f32_only;
  d.n_outputs = 1;
  d.outputs = &same;
  d.n_args = 4;
  d.args = scale_args;
  CHECK_OK(ptc_register_extern_op(ctx, &d));

  static const ptc_extern_arg aff_args[] = {
      {PTC_EXTERN_ARG_INPUT, 0, 0, NULL},       {PTC_EXTERN_ARG_DIM, 0, 0, NULL},
      {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL},      {PTC_EXTERN_ARG_DIM, 0, -1, NULL},
      {PTC_EXTERN_ARG_ATTR_INT, 0, 0, "k"},     {PTC_EXTERN_ARG_USER, 0, 0, NULL}};
  static const ptc_extern_output f64_out = {0, PTC_F64};
  ptc_extern_op_desc a;
  ptc_extern_op_desc_init(&a);
  a.name = "ns::affine_rows";
  a.fn = (void (*)(void))affine_rows;
  a.n_inputs = 1;
  a.n_outputs = 1;
  a.outputs = &f64_out;
  a.n_args = 6;
  a.args = aff_args;
  a.user = &user_bias;
  CHECK_OK(ptc_register_extern_op(ctx, &a));
}

static ptc_tensor tensor(void* data, int32_t dt, int64_t* shape, int32_t ndim, int64_t* strides) {
  ptc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = PTC_DEVICE_CPU;
  t.ndim = ndim;
  t.dtype = ptc_dtype_to_dl(dt);
  t.shape = shape;
  t.strides = strides;
  return t;
}

static ptc_value node1(ptc_graph* g, const char* op, ptc_value x, const ptc_attr* a, size_t na) {
  ptc_value y = PTC_VALUE_NONE;
  size_t n;
  CHECK_OK(ptc_graph_add_node(g, op, &x, 1, a, na, &y, 1, &n));
  return y;
}

/* y = relu(my_scale(x * 2 + 1, alpha=-0.5)) + 3 */
static ptc_graph* scale_graph(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim d[2] = {{4, 0, 0}, {5, 0, 0}};
  ptc_value x;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d, 2, NULL, &x));
  ptc_attr two = ptc_attr_float("other", 2.0), one = ptc_attr_float("other", 1.0);
  ptc_attr alpha = ptc_attr_float("alpha", -0.5), three = ptc_attr_float("other", 3.0);
  ptc_value t = node1(g, "mul", x, &two, 1);
  t = node1(g, "add", t, &one, 1);
  t = node1(g, "my_scale", t, &alpha, 1);
  t = node1(g, "relu", t, NULL, 0);
  t = node1(g, "add", t, &three, 1);
  CHECK_OK(ptc_graph_add_output(g, t));
  return g;
}

static float scale_expect(float x) {
  float v = (float)((x * 2.0f + 1.0f) * -0.5);
  return (v > 0 ? v : 0) + 3.0f;
}

static void test_ref_backend(void) {
  ptc_graph* g = scale_graph();
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  float x[20], y[20];
  for (int i = 0; i < 20; i++) x[i] = (float)(i - 10) / 3.0f;
  int64_t shape[2] = {4, 5};
  ptc_tensor in = tensor(x, PTC_F32, shape, 2, NULL), out = tensor(y, PTC_F32, shape, 2, NULL);
  int before = atomic_load(&scale_calls);
  CHECK_OK(ptc_executable_run(exe, &in, 1, &out, 1, NULL));
  CHECK(atomic_load(&scale_calls) == before + 1);
  bool ok = true;
  for (int i = 0; i < 20; i++) ok &= y[i] == scale_expect(x[i]);
  CHECK(ok);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

/* affine_rows on a transposed input (copied contiguous for the call). */
static void test_all_arg_kinds(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim d[2] = {{3, 0, 0}, {4, 0, 0}};
  ptc_value x;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d, 2, NULL, &x));
  ptc_attr k = ptc_attr_int("k", 3);
  ptc_value y = node1(g, "ns::affine_rows", x, &k, 1);
  CHECK_OK(ptc_graph_add_output(g, y));
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  float storage[12]; /* x^T stored: x[r, c] = storage[c * 3 + r] */
  for (int i = 0; i < 12; i++) storage[i] = (float)i * 0.5f;
  int64_t shape[2] = {3, 4}, strides[2] = {1, 3};
  ptc_tensor in = tensor(storage, PTC_F32, shape, 2, strides);
  ptc_results* r = NULL;
  CHECK_OK(ptc_executable_run_alloc(exe, &in, 1, NULL, &r));
  const ptc_tensor* t = ptc_results_get(r, 0);
  CHECK(t && ptc_dtype_from_dl(t->dtype) == PTC_F64);
  if (t) {
    const double* o = t->data;
    bool ok = true;
    for (int row = 0; row < 3; row++)
      for (int c = 0; c < 4; c++)
        ok &= o[row * 4 + c] == storage[c * 3 + row] * 3.0 + 0.25 + row;
    CHECK(ok);
  }
  ptc_results_destroy(r);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

/* The CPU backend's extern kinds CUSTOM and FALLBACK both reach the op. */
static void test_cpu_extern_paths(void) {
  ptc_graph* g = scale_graph(); /* node 2 is my_scale */
  ir_program p;
  memset(&p, 0, sizeof p);
  p.graph = g;
  ir_node n;
  memset(&n, 0, sizeof n);
  int32_t ins[1] = {0}, outs[1] = {1};
  n.kind = IR_EXTERN;
  n.ext.n_in = 1;
  n.ext.n_out = 1;
  n.ext.in = ins;
  n.ext.out = outs;
  n.ext.graph_node = 2;
  float x[20], y[20 * 2];
  for (int i = 0; i < 20; i++) x[i] = (float)i;
  runtime_tensor v[2];
  memset(v, 0, sizeof v);
  v[0].data = x;
  v[0].dtype = PTC_F32;
  v[0].rank = 2;
  v[0].shape[0] = 4;
  v[0].shape[1] = 5;
  runtime_tensor_contiguous(&v[0]);
  v[1] = v[0];
  v[1].data = y;
  v[1].strides[0] = 10; /* padded rows: written through a temporary */
  int32_t kinds[2] = {IR_EXT_CUSTOM, IR_EXT_FALLBACK};
  for (int k = 0; k < 2; k++) {
    memset(y, 0, sizeof y);
    n.ext.kind = kinds[k];
    CHECK_OK(cpu_extern_run(ctx, &p, &n, v, v + 1, NULL, 0, 0));
    bool ok = true;
    for (int r = 0; r < 4; r++)
      for (int c = 0; c < 5; c++) ok &= y[r * 10 + c] == x[r * 5 + c] * -0.5f && y[r * 10 + c + 5] == 0;
    CHECK(ok);
  }
  n.ext.graph_node = 0; /* mul is not a custom op */
  n.ext.kind = IR_EXT_CUSTOM;
  CHECK_ERR(cpu_extern_run(ctx, &p, &n, v, v + 1, NULL, 0, 0), PTC_CODE_INTERNAL, "not a custom op");
  ptc_graph_destroy(g);
}

static void test_registration_errors(void) {
  static const ptc_extern_arg args[] = {{PTC_EXTERN_ARG_INPUT, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL}};
  static const ptc_extern_output same = {0, -1};
  ptc_extern_op_desc d;
  ptc_extern_op_desc_init(&d);
  d.name = "copy_op";
  d.fn = (void (*)(void))my_scale;
  d.n_inputs = 1;
  d.n_outputs = 1;
  d.outputs = &same;
  d.n_args = 2;
  d.args = args;
  ptc_extern_op_desc bad = d;
  bad.name = "add";
  CHECK_ERR(ptc_register_extern_op(ctx, &bad), PTC_CODE_ALREADY_EXISTS, "'add' is a built-in op");
  bad.name = "my_scale";
  CHECK_ERR(ptc_register_extern_op(ctx, &bad), PTC_CODE_ALREADY_EXISTS, "already registered");
  bad.name = "1bad";
  CHECK_ERR(ptc_register_extern_op(ctx, &bad), PTC_CODE_INVALID_ARGUMENT, "name '1bad'");
  bad = d;
  bad.n_args = 1;
  CHECK_ERR(ptc_register_extern_op(ctx, &bad), PTC_CODE_INVALID_ARGUMENT, "output 0 is not passed");
  bad = d;
  ptc_extern_arg wrong[2] = {{PTC_EXTERN_ARG_NUMEL, 2, 0, NULL}, {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL}};
  bad.args = wrong;
  CHECK_ERR(ptc_register_extern_op(ctx, &bad), PTC_CODE_INVALID_ARGUMENT, "args[0]: input index 2");
  bad = d;
  bad.fn = NULL;
  CHECK_ERR(ptc_register_extern_op(ctx, &bad), PTC_CODE_INVALID_ARGUMENT, "fn is NULL");
  bad = d;
  bad.struct_size = 8;
  CHECK_ERR(ptc_register_extern_op(ctx, &bad), PTC_CODE_INVALID_ARGUMENT, "struct_size");
  CHECK_ERR(ptc_register_extern_op(NULL, &d), PTC_CODE_INVALID_ARGUMENT, "NULL");
  /* node errors, found when the node is added */
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim dims[1] = {{6, 0, 0}};
  ptc_value xf, xd, y;
  size_t n;
  CHECK_OK(ptc_graph_add_input(g, "xf", PTC_F32, dims, 1, NULL, &xf));
  CHECK_OK(ptc_graph_add_input(g, "xd", PTC_F64, dims, 1, NULL, &xd));
  CHECK_ERR(ptc_graph_add_node(g, "my_scale", &xf, 1, NULL, 0, &y, 1, &n),
            PTC_CODE_INVALID_ARGUMENT, "missing required attribute 'alpha'");
  ptc_attr alpha = ptc_attr_float("alpha", 2.0), k = ptc_attr_int("k", 2);
  CHECK_ERR(ptc_graph_add_node(g, "my_scale", &xd, 1, &alpha, 1, &y, 1, &n),
            PTC_CODE_INVALID_ARGUMENT, "input 0 must be f32, got f64");
  ptc_value scalar;
  CHECK_OK(ptc_graph_add_input(g, "s", PTC_F32, NULL, 0, NULL, &scalar));
  CHECK_ERR(ptc_graph_add_node(g, "ns::affine_rows", &scalar, 1, &k, 1, &y, 1, &n),
            PTC_CODE_INVALID_ARGUMENT, "dim 0 is out of range for input 0 of rank 0");
  ptc_graph_destroy(g);
  /* another context does not see the op */
  ptc_context* other = NULL;
  CHECK_OK(ptc_context_create(NULL, &other));
  CHECK_OK(ptc_graph_create(other, &g));
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, dims, 1, NULL, &xf));
  CHECK_ERR(ptc_graph_add_node(g, "my_scale", &xf, 1, &alpha, 1, &y, 1, &n), PTC_CODE_NOT_FOUND,
            "unknown op 'my_scale'");
  ptc_graph_destroy(g);
  ptc_context_release(other);
}

static void* register_worker(void* arg) {
  static const ptc_extern_arg args[] = {{PTC_EXTERN_ARG_INPUT, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_NUMEL, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_ATTR_FLOAT, 0, 0, "alpha"}};
  static const ptc_extern_output same = {0, -1};
  ptc_context* c = arg;
  static _Atomic int next;
  int id = atomic_fetch_add(&next, 1);
  int failures = 0;
  for (int i = 0; i < 25; i++) {
    char name[32];
    snprintf(name, sizeof name, "op_%d_%d", id, i);
    ptc_extern_op_desc d;
    ptc_extern_op_desc_init(&d);
    d.name = name;
    d.fn = (void (*)(void))my_scale;
    d.n_inputs = 1;
    d.n_outputs = 1;
    d.outputs = &same;
    d.n_args = 4;
    d.args = args;
    ptc_status s = ptc_register_extern_op(c, &d);
    failures += s != NULL;
    ptc_status_destroy(s);
    ptc_graph* g = NULL;
    ptc_dim dims[1] = {{2, 0, 0}};
    ptc_value x, y;
    size_t n;
    ptc_attr alpha = ptc_attr_float("alpha", 1.0);
    s = ptc_graph_create(c, &g);
    if (!s) s = ptc_graph_add_input(g, "x", PTC_F32, dims, 1, NULL, &x);
    if (!s) s = ptc_graph_add_node(g, name, &x, 1, &alpha, 1, &y, 1, &n);
    failures += s != NULL;
    ptc_status_destroy(s);
    ptc_graph_destroy(g);
  }
  return (void*)(intptr_t)failures;
}

static void test_concurrent_registration(void) {
  ptc_context* c = NULL; /* a fresh context: the table is created under the race */
  CHECK_OK(ptc_context_create(NULL, &c));
  pthread_t th[4];
  for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, register_worker, c);
  intptr_t failures = 0;
  for (int i = 0; i < 4; i++) {
    void* r;
    pthread_join(th[i], &r);
    failures += (intptr_t)r;
  }
  CHECK(failures == 0);
  ptc_context_release(c);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  register_ops();
  test_ref_backend();
  test_all_arg_kinds();
  test_cpu_extern_paths();
  test_registration_errors();
  test_concurrent_registration();
  ptc_context_release(ctx);
  return check_summary("test_cpu_custom");
}
