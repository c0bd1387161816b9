/* test_run.c - compile/run API with the ref backend: results allocated by
 * the library or by the caller (strided outputs), input checks and their
 * messages, dynamic sizes, guards at run time, 8 threads sharing one
 * executable, per-context allocator and log hooks. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "check.h"

static ptc_context* ctx;

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

/* y = relu(x * 2 + b) summed over dim 1, with x [s0, 4] dynamic. */
static ptc_graph* build(ptc_sym* batch) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 3;
  o.min_value = 1;
  CHECK_OK(ptc_graph_add_symbol(g, "batch", &o, batch));
  ptc_dim d[2] = {{3, *batch, 0}, {4, 0, 0}};
  ptc_value x, b, t1, t2, t3, y;
  size_t n;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d, 2, NULL, &x));
  static const float bias[4] = {0.5f, -1.0f, 0.0f, 2.0f};
  int64_t bs[1] = {4};
  CHECK_OK(ptc_graph_add_constant(g, "b", PTC_F32, bs, 1, bias, PTC_CONSTANT_BORROW, &b));
  ptc_attr two = ptc_attr_float("other", 2.0);
  CHECK_OK(ptc_graph_add_node(g, "mul", &x, 1, &two, 1, &t1, 1, &n));
  ptc_value ab[2] = {t1, b};
  CHECK_OK(ptc_graph_add_node(g, "add", ab, 2, NULL, 0, &t2, 1, &n));
  CHECK_OK(ptc_graph_add_node(g, "relu", &t2, 1, NULL, 0, &t3, 1, &n));
  int64_t dim1 = 1;
  ptc_attr dim = ptc_attr_ints("dim", &dim1, 1);
  CHECK_OK(ptc_graph_add_node(g, "sum", &t3, 1, &dim, 1, &y, 1, &n));
  CHECK_OK(ptc_graph_add_output(g, y));
  CHECK_OK(ptc_graph_add_output(g, t2));
  return g;
}

static float expect_row(const float* x) {
  static const float bias[4] = {0.5f, -1.0f, 0.0f, 2.0f};
  float s = 0;
  for (int j = 0; j < 4; j++) {
    float v = x[j] * 2 + bias[j];
    s += v > 0 ? v : 0;
  }
  return s;
}

static void fill(float* x, int64_t n, int seed) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)(((i * 37 + seed * 11) % 19) - 9) / 4.0f;
}

static void test_dynamic_sizes(ptc_executable* exe) {
  const int64_t sizes[] = {1, 2, 7, 64, 1000};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    int64_t shape[2] = {sizes[k], 4};
    float* x = malloc(sizeof(float) * (size_t)(sizes[k] * 4));
    fill(x, sizes[k] * 4, (int)k);
    ptc_tensor in = tensor(x, PTC_F32, shape, 2, NULL);
    ptc_results* r = NULL;
    CHECK_OK(ptc_executable_run_alloc(exe, &in, 1, NULL, &r));
    CHECK(ptc_results_count(r) == 2);
    const ptc_tensor* y = ptc_results_get(r, 0);
    if (y) {
      CHECK(y->ndim == 1 && y->shape[0] == sizes[k]);
      bool ok = true;
      for (int64_t i = 0; i < sizes[k]; i++) ok &= ((float*)y->data)[i] == expect_row(x + 4 * i);
      CHECK(ok);
    }
    ptc_results_destroy(r);
    free(x);
  }
}

static void test_caller_outputs(ptc_executable* exe) {
  int64_t shape[2] = {2, 4};
  float x[8];
  fill(x, 8, 5);
  ptc_tensor in = tensor(x, PTC_F32, shape, 2, NULL);
  /* output 1 written transposed into a [4, 2] buffer through strides */
  float y[2], t2[8];
  int64_t ys[1] = {2}, t2s[2] = {2, 4}, t2st[2] = {1, 2};
  ptc_tensor outs[2] = {tensor(y, PTC_F32, ys, 1, NULL), tensor(t2, PTC_F32, t2s, 2, t2st)};
  CHECK_OK(ptc_executable_run(exe, &in, 1, outs, 2, NULL));
  CHECK(y[0] == expect_row(x) && y[1] == expect_row(x + 4));
  CHECK(t2[1] == x[4] * 2 + 0.5f); /* element [1][0] at offset 1*1 + 0*2 */
  CHECK(t2[2] == x[1] * 2 - 1.0f); /* element [0][1] at offset 0*1 + 1*2 */
  int64_t bad[1] = {3};
  outs[0] = tensor(y, PTC_F32, bad, 1, NULL);
  CHECK_ERR(ptc_executable_run(exe, &in, 1, outs, 2, NULL), PTC_CODE_INVALID_ARGUMENT,
            "output 0 dim 0: expected 2, got 3");
}

static void test_input_checks(ptc_executable* exe) {
  float x[8] = {0};
  int64_t s3[2] = {2, 3}, s1[1] = {8};
  ptc_tensor in = tensor(x, PTC_F32, s3, 2, NULL);
  ptc_results* r = NULL;
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
            "input 0 dim 1: expected 4, got 3");
  in = tensor(x, PTC_F64, s3, 2, NULL);
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
            "expected dtype f32, got f64");
  in = tensor(x, PTC_F32, s1, 1, NULL);
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
            "expected rank 2, got 1");
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 0, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
            "expected 1 inputs, got 0");
  in = tensor(x, PTC_F32, s3, 2, NULL);
  in.device.device_type = PTC_DEVICE_CUDA;
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
            "tensor on cuda");
  CHECK(r == NULL);
}

static void test_static_guard(void) {
  /* a static graph reports the exact dim mismatch */
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim d[2] = {{2, 0, 0}, {128, 0, 0}};
  ptc_value x, y;
  size_t n;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d, 2, NULL, &x));
  CHECK_OK(ptc_graph_add_node(g, "neg", &x, 1, NULL, 0, &y, 1, &n));
  CHECK_OK(ptc_graph_add_output(g, y));
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  float buf[2 * 128];
  int64_t s[2] = {2, 64};
  ptc_tensor in = tensor(buf, PTC_F32, s, 2, NULL);
  ptc_results* r = NULL;
  CHECK_ERR(ptc_executable_run_alloc(exe, &in, 1, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
            "input 0 dim 1: expected 128, got 64");
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

static void test_symbolic_guard(void) {
  /* x[s0] + y[s1] with equal hints records s0 == s1; other sizes must fail */
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 6;
  ptc_sym a, b;
  CHECK_OK(ptc_graph_add_symbol(g, "a", &o, &a));
  CHECK_OK(ptc_graph_add_symbol(g, "b", &o, &b));
  ptc_dim da[1] = {{6, a, 0}}, db[1] = {{6, b, 0}};
  ptc_value in[2], y;
  size_t n;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, da, 1, NULL, &in[0]));
  CHECK_OK(ptc_graph_add_input(g, "y", PTC_F32, db, 1, NULL, &in[1]));
  CHECK_OK(ptc_graph_add_node(g, "add", in, 2, NULL, 0, &y, 1, &n));
  CHECK_OK(ptc_graph_add_output(g, y));
  CHECK(ptc_graph_num_guards(g) == 1);
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  ptc_graph_destroy(g); /* the executable holds a snapshot */
  float x1[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, x2[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int64_t s9[1] = {9}, s8[1] = {8};
  ptc_tensor t[2] = {tensor(x1, PTC_F32, s9, 1, NULL), tensor(x2, PTC_F32, s9, 1, NULL)};
  ptc_results* r = NULL;
  CHECK_OK(ptc_executable_run_alloc(exe, t, 2, NULL, &r));
  CHECK(r && ((float*)ptc_results_get(r, 0)->data)[8] == 10.0f);
  ptc_results_destroy(r);
  r = NULL;
  t[1] = tensor(x2, PTC_F32, s8, 1, NULL);
  CHECK_ERR(ptc_executable_run_alloc(exe, t, 2, NULL, &r), PTC_CODE_INVALID_ARGUMENT, "guard");
  ptc_executable_release(exe);
}

typedef struct worker {
  ptc_executable* exe;
  int id;
  atomic_int* failures;
} worker;

static void* work(void* p) {
  worker* w = p;
  for (int it = 0; it < 50; it++) {
    int64_t b = 1 + (w->id * 7 + it) % 33;
    int64_t shape[2] = {b, 4};
    float* x = malloc(sizeof(float) * (size_t)(b * 4));
    fill(x, b * 4, w->id + it);
    ptc_tensor in = tensor(x, PTC_F32, shape, 2, NULL);
    ptc_results* r = NULL;
    ptc_status s = ptc_executable_run_alloc(w->exe, &in, 1, NULL, &r);
    bool ok = s == NULL;
    for (int64_t i = 0; ok && i < b; i++)
      ok = ((float*)ptc_results_get(r, 0)->data)[i] == expect_row(x + 4 * i);
    if (!ok) atomic_fetch_add(w->failures, 1);
    ptc_status_destroy(s);
    ptc_results_destroy(r);
    free(x);
  }
  return NULL;
}

static void test_threads(ptc_executable* exe) {
  pthread_t th[8];
  worker w[8];
  atomic_int failures = 0;
  for (int i = 0; i < 8; i++) {
    w[i] = (worker){ptc_executable_retain(exe), i, &failures};
    pthread_create(&th[i], NULL, work, &w[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    ptc_executable_release(w[i].exe);
  }
  CHECK(atomic_load(&failures) == 0);
}

static atomic_long allocs, logs;
static void* count_alloc(void* u, size_t size, size_t align) {
  (void)u;
  atomic_fetch_add(&allocs, 1);
  if (align < sizeof(void*)) align = sizeof(void*);
  return aligned_alloc(align, (size + align - 1) / align * align);
}
static void count_free(void* u, void* p, size_t size, size_t align) {
  (void)u;
  (void)size;
  (void)align;
  free(p);
}
static void count_log(void* u, int32_t level, const char* msg) {
  (void)u;
  (void)level;
  (void)msg;
  atomic_fetch_add(&logs, 1);
}

/* gather / embedding reject negative indices on every backend (as ATen) */
static void test_negative_index(const char* backend) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim dx[1] = {{4, 0, 0}}, di[1] = {{2, 0, 0}};
  ptc_value in[2], y;
  size_t n;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, dx, 1, NULL, &in[0]));
  CHECK_OK(ptc_graph_add_input(g, "i", PTC_I64, di, 1, NULL, &in[1]));
  ptc_attr dim = ptc_attr_int("dim", 0);
  CHECK_OK(ptc_graph_add_node(g, "gather", in, 2, &dim, 1, &y, 1, &n));
  CHECK_OK(ptc_graph_add_output(g, y));
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, &o, &exe));
  float x[4] = {1, 2, 3, 4};
  int64_t idx[2] = {1, -1}, s4[1] = {4}, s2[1] = {2};
  ptc_tensor t[2] = {tensor(x, PTC_F32, s4, 1, NULL), tensor(idx, PTC_I64, s2, 1, NULL)};
  ptc_results* r = NULL;
  ptc_status st = ptc_executable_run_alloc(exe, t, 2, NULL, &r);
  CHECK(ptc_status_code(st) == PTC_CODE_INVALID_ARGUMENT);
  if (!st) printf("  %s: gather accepted index -1\n", backend);
  ptc_status_destroy(st);
  ptc_results_destroy(r);
  idx[1] = 3;
  r = NULL;
  CHECK_OK(ptc_executable_run_alloc(exe, t, 2, NULL, &r));
  CHECK(r && ((float*)ptc_results_get(r, 0)->data)[1] == 4.0f);
  ptc_results_destroy(r);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

static void test_hooks(void) {
  ptc_context_options o;
  ptc_context_options_init(&o);
  o.allocator.alloc = count_alloc;
  o.allocator.free = count_free;
  o.log_fn = count_log;
  o.log_level = PTC_LOG_DEBUG;
  ptc_context* c = NULL;
  CHECK_OK(ptc_context_create(&o, &c));
  ptc_context* saved = ctx;
  ctx = c;
  ptc_sym s;
  ptc_graph* g = build(&s);
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(c, g, NULL, &exe));
  test_dynamic_sizes(exe);
  CHECK(atomic_load(&allocs) > 0);
  CHECK(atomic_load(&logs) > 0);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
  ptc_context_release(c);
  ctx = saved;
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  ptc_sym batch;
  ptc_graph* g = build(&batch);
  ptc_executable* exe = NULL;
  ptc_compile_options co;
  ptc_compile_options_init(&co);
  co.backend = "nope";
  CHECK_ERR(ptc_compile(ctx, g, &co, &exe), PTC_CODE_NOT_FOUND, "unknown backend 'nope'");
  /* modes and precisions: every documented value is accepted by every
   * backend (cpu ignores them), unknown ones are refused by name */
  static const char* const modes[] = {"default", "reduce-overhead", "max-autotune",
                                      "max-autotune-no-cudagraphs"};
  /* ... and runs unchanged on cpu and ref (reduce-overhead is CUDA graphs,
   * which only the cuda backend has) */
  for (size_t i = 0; i < 2 * sizeof modes / sizeof *modes; i++) {
    co.backend = i % 2 ? "ref" : "cpu";
    co.mode = modes[i / 2];
    co.matmul_precision = i % 2 ? "high" : "highest";
    co.conv_precision = i % 2 ? "medium" : "high";
    CHECK_OK(ptc_compile(ctx, g, &co, &exe));
    test_dynamic_sizes(exe);
    ptc_executable_release(exe);
    exe = NULL;
  }
  co.backend = "cpu";
  co.mode = "fast";
  CHECK_ERR(ptc_compile(ctx, g, &co, &exe), PTC_CODE_INVALID_ARGUMENT, "unknown mode 'fast'");
  co.mode = NULL;
  co.matmul_precision = "tf32";
  CHECK_ERR(ptc_compile(ctx, g, &co, &exe), PTC_CODE_INVALID_ARGUMENT,
            "unknown matmul_precision 'tf32'");
  co.matmul_precision = NULL;
  co.conv_precision = "low";
  CHECK_ERR(ptc_compile(ctx, g, &co, &exe), PTC_CODE_INVALID_ARGUMENT,
            "unknown conv_precision 'low'");
  co.conv_precision = NULL;
  co.backend = "eager";
  CHECK_OK(ptc_compile(ctx, g, &co, &exe));
  CHECK(ptc_executable_num_inputs(exe) == 1 && ptc_executable_num_outputs(exe) == 2);
  test_dynamic_sizes(exe);
  test_caller_outputs(exe);
  test_input_checks(exe);
  test_threads(exe);
  ptc_executable_release(exe);
  /* the same checks on the compiled backend: 8 threads share one executable */
  co.backend = "cpu";
  exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, &co, &exe));
  if (exe) {
    CHECK(ptc_executable_num_kernels(exe) >= 1);
    test_dynamic_sizes(exe);
    test_caller_outputs(exe);
    test_input_checks(exe);
    test_threads(exe);
  }
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
  test_negative_index("ref");
  test_negative_index("cpu");
  test_static_guard();
  test_symbolic_guard();
  test_hooks();
  ptc_context_release(ctx);
  return check_summary("test_run");
}
