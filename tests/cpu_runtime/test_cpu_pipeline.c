/* test_cpu_pipeline.c - whole graphs through the CPU backend's vtable
 * (ptc_cpu_backend: decomp -> ir_lower -> sched -> codegen -> compile ->
 * run plan) compared with the ref backend: the custom op `my_scale`
 * between fused pointwise kernels (hand-computed), strided inputs and
 * strided/padded outputs, an output that is a view of an input, linear +
 * layer_norm + softmax, conv2d + relu + pooling, dynamic sizes, an index
 * out of range, concurrent runs of one plan, fusion on/off kernel counts,
 * debug dumps and the description. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../backends/cpu/cpu_rt.h"
#include "../../lib/decomp/decomp.h"
#include "../check.h"

static ptc_context* ctx;

/* ---- a cpu "executable" made directly from the vtable ---------------------------------- */

typedef struct cexe {
  ptc_graph* g;  /* snapshot (dynamic dims applied) */
  void* state;
} cexe;

static ptc_status cexe_compile(const ptc_graph* g, const ptc_compile_options* o, cexe* e) {
  memset(e, 0, sizeof *e);
  ptc_status s = o && o->n_dynamic_dims
                     ? graph_make_dynamic(g, o->dynamic_dims, o->n_dynamic_dims, &e->g)
                     : graph_clone(g, &e->g);
  if (!s) s = ptc_cpu_backend.prepare(ctx, e->g, o, &e->state);
  return s;
}

static ptc_status cexe_run(const cexe* e, const ptc_tensor* in, size_t n_in, const ptc_tensor* out,
                           size_t n_out) {
  size_t n = sym_num_vars(e->g->env);
  int64_t* vals = calloc(n + 1, sizeof *vals);
  if (!vals) return ptc_status_oom();
  ptc_status s = runtime_bind_inputs(e->g, in, n_in, vals, n);
  if (!s) s = ptc_cpu_backend.run(e->state, e->g, in, n_in, out, n_out, vals, n, 0);
  free(vals);
  return s;
}

static void cexe_free(cexe* e) {
  if (e->state) ptc_cpu_backend.destroy(e->state);
  ptc_graph_destroy(e->g);
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

static ptc_value node(ptc_graph* g, const char* op, const ptc_value* in, size_t n_in,
                      const ptc_attr* a, size_t na) {
  ptc_value y = PTC_VALUE_NONE;
  size_t n;
  CHECK_OK(ptc_graph_add_node(g, op, in, n_in, a, na, &y, 1, &n));
  return y;
}

static ptc_value node1(ptc_graph* g, const char* op, ptc_value x, const ptc_attr* a, size_t na) {
  return node(g, op, &x, 1, a, na);
}

static void fill(float* x, int64_t n, int salt) {
  for (int64_t i = 0; i < n; i++) x[i] = (float)(((i * 37 + salt * 11) % 19) - 9) / 4.0f;
}

/* Runs g on the ref backend with contiguous inputs; output `k` into want. */
static void ref_outputs(const ptc_graph* g, const ptc_tensor* in, size_t n_in, ptc_tensor* out,
                        size_t n_out) {
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  CHECK_OK(ptc_executable_run(exe, in, n_in, out, n_out, NULL));
  ptc_executable_release(exe);
}

static bool close_f(const float* got, const float* want, int64_t n, double tol) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabsf(got[i] - want[i]) <= tol * (1 + fabsf(want[i])))) {
      printf("  element %lld: got %g, want %g\n", (long long)i, got[i], want[i]);
      return false;
    }
  return true;
}

/* ---- custom op between fused pointwise kernels ----------------------------------------- */

static void my_scale(const float* x, float* out, int64_t n, double alpha) {
  for (int64_t i = 0; i < n; i++) out[i] = (float)(x[i] * alpha);
}

static void test_custom_op(void) {
  static const ptc_extern_arg args[] = {{PTC_EXTERN_ARG_INPUT, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_NUMEL, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_ATTR_FLOAT, 0, 0, "alpha"}};
  static const ptc_extern_output same = {0, -1};
  ptc_extern_op_desc d;
  ptc_extern_op_desc_init(&d);
  d.name = "my_scale";
  d.fn = (void (*)(void))my_scale;
  d.n_inputs = 1;
  d.n_outputs = 1;
  d.outputs = &same;
  d.n_args = 4;
  d.args = args;
  CHECK_OK(ptc_register_extern_op(ctx, &d));
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim dims[2] = {{8, 0, 0}, {33, 0, 0}};
  ptc_value x;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, dims, 2, NULL, &x));
  ptc_attr two = ptc_attr_float("other", 2.0), one = ptc_attr_float("other", 1.0);
  ptc_attr alpha = ptc_attr_float("alpha", -0.5), three = ptc_attr_float("other", 3.0);
  ptc_value t = node1(g, "mul", x, &two, 1);
  t = node1(g, "add", t, &one, 1);
  t = node1(g, "my_scale", t, &alpha, 1);
  t = node1(g, "relu", t, NULL, 0);
  t = node1(g, "add", t, &three, 1);
  CHECK_OK(ptc_graph_add_output(g, t));
  cexe e;
  CHECK_OK(cexe_compile(g, NULL, &e));
  size_t nk = e.state ? ptc_cpu_backend.num_kernels(e.state, e.g) : 0;
  CHECK(nk == 3); /* fused (mul, add) | my_scale | fused (relu, add) */
  float xv[8 * 33], y[8 * 33];
  fill(xv, 8 * 33, 1);
  int64_t shape[2] = {8, 33};
  ptc_tensor in = tensor(xv, PTC_F32, shape, 2, NULL), out = tensor(y, PTC_F32, shape, 2, NULL);
  CHECK_OK(cexe_run(&e, &in, 1, &out, 1));
  bool ok = true;
  for (int i = 0; i < 8 * 33; i++) {
    float v = (float)((xv[i] * 2.0f + 1.0f) * -0.5);
    ok &= y[i] == (v > 0 ? v : 0) + 3.0f;
  }
  CHECK(ok);
  cexe_free(&e);
  ptc_graph_destroy(g);
}

/* ---- strided inputs and outputs, an output aliasing an input ---------------------------- */

static void test_strided_io(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim dims[2] = {{5, 0, 0}, {7, 0, 0}};
  ptc_dim bd[1] = {{7, 0, 0}};
  ptc_value x, b;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, dims, 2, NULL, &x));
  CHECK_OK(ptc_graph_add_input(g, "b", PTC_F32, bd, 1, NULL, &b));
  ptc_value xb[2] = {x, b};
  ptc_value s = node(g, "add", xb, 2, NULL, 0);
  ptc_attr two = ptc_attr_float("other", 2.0);
  ptc_value y = node1(g, "mul", s, &two, 1);
  int64_t one = 1;
  ptc_attr dim = ptc_attr_ints("dim", &one, 1);
  ptc_value r = node1(g, "sum", y, &dim, 1);
  ptc_attr tr[2] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
  ptc_value xt = node1(g, "transpose", x, tr, 2);
  CHECK_OK(ptc_graph_add_output(g, y));
  CHECK_OK(ptc_graph_add_output(g, r));
  CHECK_OK(ptc_graph_add_output(g, xt));
  CHECK_OK(ptc_graph_add_output(g, y)); /* the same value twice */
  float xs[7 * 5], xc[5 * 7], bv[7];
  fill(xs, 35, 2);
  fill(bv, 7, 3);
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 7; j++) xc[i * 7 + j] = xs[j * 5 + i]; /* x = xs^T */
  int64_t xshape[2] = {5, 7}, xstr[2] = {1, 5}, bshape[1] = {7}, rshape[1] = {5};
  int64_t tshape[2] = {7, 5}, ystr[2] = {10, 1}, tstr[2] = {1, 7};
  float want_y[35], want_r[5], want_t[35], want_y2[35];
  ptc_tensor rin[2] = {tensor(xc, PTC_F32, xshape, 2, NULL), tensor(bv, PTC_F32, bshape, 1, NULL)};
  ptc_tensor rout[4] = {tensor(want_y, PTC_F32, xshape, 2, NULL),
                        tensor(want_r, PTC_F32, rshape, 1, NULL),
                        tensor(want_t, PTC_F32, tshape, 2, NULL),
                        tensor(want_y2, PTC_F32, xshape, 2, NULL)};
  ref_outputs(g, rin, 2, rout, 4);
  cexe e;
  CHECK_OK(cexe_compile(g, NULL, &e));
  float y_pad[5 * 10], r_out[5], t_out[35], y2[35];
  memset(y_pad, 0, sizeof y_pad);
  ptc_tensor in[2] = {tensor(xs, PTC_F32, xshape, 2, xstr), tensor(bv, PTC_F32, bshape, 1, NULL)};
  ptc_tensor out[4] = {tensor(y_pad, PTC_F32, xshape, 2, ystr),
                       tensor(r_out, PTC_F32, rshape, 1, NULL),
                       tensor(t_out, PTC_F32, tshape, 2, tstr), /* [7,5] stored transposed */
                       tensor(y2, PTC_F32, xshape, 2, NULL)};
  CHECK_OK(cexe_run(&e, in, 2, out, 4));
  bool ok = true;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 7; j++) {
      ok &= fabsf(y_pad[i * 10 + j] - want_y[i * 7 + j]) < 1e-5f;
      ok &= y_pad[i * 10 + 7] == 0; /* padding untouched */
      ok &= t_out[i * 7 + j] == want_t[j * 5 + i];
    }
  CHECK(ok);
  CHECK(close_f(r_out, want_r, 5, 1e-5));
  CHECK(close_f(y2, want_y, 35, 1e-5));
  cexe_free(&e);
  ptc_graph_destroy(g);
}

/* ---- linear + layer_norm + softmax; conv2d + relu + max_pool2d --------------------------- */

static void test_mlp_block(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim xd[2] = {{6, 0, 0}, {16, 0, 0}};
  ptc_value x, w, b;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 2, NULL, &x));
  static float wv[12 * 16], bv[12];
  fill(wv, 12 * 16, 4);
  fill(bv, 12, 5);
  int64_t ws[2] = {12, 16}, bs[1] = {12};
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, ws, 2, wv, PTC_CONSTANT_BORROW, &w));
  CHECK_OK(ptc_graph_add_constant(g, "b", PTC_F32, bs, 1, bv, PTC_CONSTANT_BORROW, &b));
  ptc_value lin_in[3] = {x, w, b};
  ptc_value h = node(g, "linear", lin_in, 3, NULL, 0);
  h = node1(g, "relu", h, NULL, 0);
  int64_t ns = 12;
  ptc_attr ln = ptc_attr_ints("normalized_shape", &ns, 1);
  h = node1(g, "layer_norm", h, &ln, 1);
  ptc_attr d1 = ptc_attr_int("dim", 1);
  h = node1(g, "softmax", h, &d1, 1);
  CHECK_OK(ptc_graph_add_output(g, h));
  float xv[6 * 16], want[6 * 12], got[6 * 12];
  fill(xv, 96, 6);
  int64_t xs[2] = {6, 16}, os[2] = {6, 12};
  ptc_tensor in = tensor(xv, PTC_F32, xs, 2, NULL);
  ptc_tensor ro = tensor(want, PTC_F32, os, 2, NULL), co = tensor(got, PTC_F32, os, 2, NULL);
  ref_outputs(g, &in, 1, &ro, 1);
  cexe e;
  CHECK_OK(cexe_compile(g, NULL, &e));
  CHECK_OK(cexe_run(&e, &in, 1, &co, 1));
  CHECK(close_f(got, want, 72, 1e-4));
  cexe_free(&e);
  ptc_graph_destroy(g);
}

static void test_conv_block(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim xd[4] = {{2, 0, 0}, {3, 0, 0}, {9, 0, 0}, {9, 0, 0}};
  ptc_value x, w, b;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 4, NULL, &x));
  static float wv[4 * 3 * 3 * 3], bv[4];
  fill(wv, 108, 7);
  fill(bv, 4, 8);
  int64_t ws[4] = {4, 3, 3, 3}, bs[1] = {4};
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, ws, 4, wv, PTC_CONSTANT_BORROW, &w));
  CHECK_OK(ptc_graph_add_constant(g, "b", PTC_F32, bs, 1, bv, PTC_CONSTANT_BORROW, &b));
  int64_t one = 1;
  ptc_attr pad = ptc_attr_ints("padding", &one, 1);
  ptc_value cin[3] = {x, w, b};
  ptc_value h = node(g, "conv2d", cin, 3, &pad, 1);
  h = node1(g, "relu", h, NULL, 0);
  int64_t two = 2;
  ptc_attr k = ptc_attr_ints("kernel_size", &two, 1);
  h = node1(g, "max_pool2d", h, &k, 1);
  CHECK_OK(ptc_graph_add_output(g, h));
  float xv[2 * 3 * 81], want[2 * 4 * 16], got[2 * 4 * 16];
  fill(xv, 2 * 3 * 81, 9);
  int64_t xs[4] = {2, 3, 9, 9}, os[4] = {2, 4, 4, 4};
  ptc_tensor in = tensor(xv, PTC_F32, xs, 4, NULL);
  ptc_tensor ro = tensor(want, PTC_F32, os, 4, NULL), co = tensor(got, PTC_F32, os, 4, NULL);
  ref_outputs(g, &in, 1, &ro, 1);
  cexe e;
  CHECK_OK(cexe_compile(g, NULL, &e));
  CHECK_OK(cexe_run(&e, &in, 1, &co, 1));
  CHECK(close_f(got, want, 128, 1e-4));
  cexe_free(&e);
  ptc_graph_destroy(g);
}

/* ---- dynamic sizes, errors, threads ---------------------------------------------------------- */

static ptc_graph* rowsum_graph(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim d[2] = {{4, 0, 0}, {9, 0, 0}};
  ptc_value x;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d, 2, NULL, &x));
  ptc_value e = node1(g, "exp", x, NULL, 0);
  int64_t one = 1;
  ptc_attr dim = ptc_attr_ints("dim", &one, 1);
  ptc_value s = node1(g, "sum", e, &dim, 1);
  CHECK_OK(ptc_graph_add_output(g, s));
  return g;
}

static void test_dynamic(void) {
  ptc_graph* g = rowsum_graph();
  ptc_dynamic_dim dd = {0, 0};
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.dynamic_dims = &dd;
  o.n_dynamic_dims = 1;
  cexe e;
  CHECK_OK(cexe_compile(g, &o, &e));
  const int64_t rows[] = {2, 4, 37, 300};
  for (size_t k = 0; k < 4; k++) {
    int64_t n = rows[k];
    float* x = malloc(sizeof(float) * (size_t)(n * 9));
    float* y = malloc(sizeof(float) * (size_t)n);
    fill(x, n * 9, (int)k);
    int64_t xs[2] = {n, 9}, ys[1] = {n};
    ptc_tensor in = tensor(x, PTC_F32, xs, 2, NULL), out = tensor(y, PTC_F32, ys, 1, NULL);
    CHECK_OK(cexe_run(&e, &in, 1, &out, 1));
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
      double s = 0;
      for (int j = 0; j < 9; j++) s += exp(x[i * 9 + j]);
      ok &= fabs(y[i] - s) < 1e-4 * s;
    }
    CHECK(ok);
    free(x);
    free(y);
  }
  cexe_free(&e);
  ptc_graph_destroy(g);
}

static void test_index_error(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim xd[2] = {{3, 0, 0}, {4, 0, 0}}, id[2] = {{3, 0, 0}, {2, 0, 0}};
  ptc_value x, idx;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 2, NULL, &x));
  CHECK_OK(ptc_graph_add_input(g, "i", PTC_I64, id, 2, NULL, &idx));
  ptc_attr dim = ptc_attr_int("dim", 1);
  ptc_value gi[2] = {x, idx};
  ptc_value y = node(g, "gather", gi, 2, &dim, 1);
  CHECK_OK(ptc_graph_add_output(g, y));
  cexe e;
  CHECK_OK(cexe_compile(g, NULL, &e));
  float xv[12], yv[6];
  fill(xv, 12, 1);
  int64_t iv[6] = {0, 3, 1, 3, 2, 2};
  int64_t xs[2] = {3, 4}, is[2] = {3, 2};
  ptc_tensor in[2] = {tensor(xv, PTC_F32, xs, 2, NULL), tensor(iv, PTC_I64, is, 2, NULL)};
  ptc_tensor out = tensor(yv, PTC_F32, is, 2, NULL);
  CHECK_OK(cexe_run(&e, in, 2, &out, 1));
  CHECK(yv[0] == xv[0] && yv[1] == xv[3] && yv[3] == xv[4 + 3]);
  iv[4] = 4;
  CHECK_ERR(cexe_run(&e, in, 2, &out, 1), PTC_CODE_INVALID_ARGUMENT, "index 4 is out of bounds");
  iv[4] = -1; /* gather rejects negative indices (as ATen and the ref backend) */
  CHECK_ERR(cexe_run(&e, in, 2, &out, 1), PTC_CODE_INVALID_ARGUMENT, "out of bounds");
  cexe_free(&e);
  ptc_graph_destroy(g);
}

typedef struct thread_arg {
  const cexe* e;
  int failures;
} thread_arg;

static void* run_many(void* p) {
  thread_arg* a = p;
  for (int it = 0; it < 50; it++) {
    int64_t n = 2 + (it * 7) % 39; /* dynamic dims are >= 2 (0 and 1 specialise) */
    float x[40 * 9], y[40];
    fill(x, n * 9, it);
    int64_t xs[2] = {n, 9}, ys[1] = {n};
    ptc_tensor in = tensor(x, PTC_F32, xs, 2, NULL), out = tensor(y, PTC_F32, ys, 1, NULL);
    ptc_status s = cexe_run(a->e, &in, 1, &out, 1);
    if (s) {
      a->failures++;
      if (a->failures < 3) printf("  run failed: %s\n", ptc_status_message(s));
    }
    ptc_status_destroy(s);
    for (int64_t i = 0; !s && i < n; i++) {
      double sum = 0;
      for (int j = 0; j < 9; j++) sum += exp(x[i * 9 + j]);
      if (fabs(y[i] - sum) > 1e-4 * sum) {
        if (a->failures++ < 3) printf("  n %lld row %lld: got %g want %g\n", (long long)n, (long long)i, y[i], sum);
      }
    }
  }
  return NULL;
}

static void test_threads(void) {
  ptc_graph* g = rowsum_graph();
  ptc_dynamic_dim dd = {0, 0};
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.dynamic_dims = &dd;
  o.n_dynamic_dims = 1;
  cexe e;
  CHECK_OK(cexe_compile(g, &o, &e));
  pthread_t th[4];
  thread_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i].e = &e;
    args[i].failures = 0;
    pthread_create(&th[i], NULL, run_many, &args[i]);
  }
  int failures = 0;
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    failures += args[i].failures;
  }
  CHECK(failures == 0);
  cexe_free(&e);
  ptc_graph_destroy(g);
}

/* ---- fusion switch, dumps, description -------------------------------------------------------- */

static void test_fusion_dumps(void) {
  ptc_graph* g = rowsum_graph();
  char dir[] = "/tmp/ptc-debug-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.debug_dir = dir;
  cexe fused, plain;
  CHECK_OK(cexe_compile(g, &o, &fused));
  o.debug_dir = NULL;
  o.disable_fusion = 1;
  CHECK_OK(cexe_compile(g, &o, &plain));
  size_t nf = fused.state ? ptc_cpu_backend.num_kernels(fused.state, fused.g) : 0;
  size_t np = plain.state ? ptc_cpu_backend.num_kernels(plain.state, plain.g) : 0;
  printf("rowsum: %zu kernel(s) fused, %zu unfused\n", nf, np);
  CHECK(nf == 1 && np == 2);
  const char* files[] = {"decomposed_graph.txt", "ir.txt", "schedule.txt", "kernels.txt"};
  for (size_t i = 0; i < 4; i++) {
    char p[300];
    snprintf(p, sizeof p, "%s/%s", dir, files[i]);
    struct stat st;
    CHECK(stat(p, &st) == 0 && st.st_size > 0);
    unlink(p);
  }
  if (fused.state) {
    const char* name = cpu_plan_kernel_name(NULL, 0);
    CHECK(name == NULL);
    ptc_strbuf sb;
    ptc_sb_init(&sb);
    ptc_cpu_backend.describe(fused.state, fused.g, &sb);
    CHECK(sb.data && strstr(sb.data, "kernel") && strstr(sb.data, ".c"));
    if (sb.data) printf("%s", sb.data);
    ptc_sb_free(&sb);
  }
  char cmd[400];
  snprintf(cmd, sizeof cmd, "ls %s/*.c >/dev/null 2>&1 && rm -rf %s", dir, dir);
  CHECK(system(cmd) == 0); /* the kernel source was copied */
  cexe_free(&fused);
  cexe_free(&plain);
  ptc_graph_destroy(g);
}

/* ---- the plan itself: built from the pipeline's pieces, run directly ----------------------- */

static void test_plan_direct(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim d[2] = {{3, 0, 0}, {4, 0, 0}};
  ptc_value x;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d, 2, NULL, &x));
  ptc_attr alpha = ptc_attr_float("alpha", 2.0), one = ptc_attr_float("other", 1.0);
  ptc_value t = node1(g, "exp", x, NULL, 0);
  t = node1(g, "my_scale", t, &alpha, 1); /* registered by test_custom_op */
  t = node1(g, "add", t, &one, 1);
  CHECK_OK(ptc_graph_add_output(g, t));
  ptc_graph* dg = NULL;
  ir_program* p = NULL;
  sched_plan* s = NULL;
  cpu_plan* plan = NULL;
  ir_lower_options lo;
  ir_lower_options_init(&lo);
  sched_options so;
  sched_options_init(&so);
  CHECK_OK(decomp_graph(g, &dg));
  if (dg) CHECK_OK(ir_lower(ctx, dg, &lo, &p));
  if (p) CHECK_OK(sched_run(p, &so, &s));
  if (s) CHECK_OK(cpu_plan_build(ctx, p, s, &plan));
  if (plan) {
    CHECK(cpu_plan_num_kernels(plan) == 3);
    const char* k1 = cpu_plan_kernel_name(plan, 1);
    CHECK(k1 && (strstr(k1, "extern_custom_") || strstr(k1, "extern_fallback_")));
    CHECK(cpu_plan_kernel_name(plan, 3) == NULL);
    for (size_t i = 0; i < cpu_plan_num_kernels(plan); i++)
      printf("  plan step %zu: %s\n", i, cpu_plan_kernel_name(plan, i));
    float xs[12], y[3 * 6];
    for (int i = 0; i < 12; i++) xs[i] = (float)i / 10.0f;
    int64_t shape[2] = {3, 4}, xstr[2] = {1, 3}, ystr[2] = {6, 1};
    ptc_tensor in = tensor(xs, PTC_F32, shape, 2, xstr);  /* x[r][c] = xs[c*3 + r] */
    ptc_tensor out = tensor(y, PTC_F32, shape, 2, ystr); /* rows padded to 6 */
    memset(y, 0, sizeof y);
    CHECK_OK(cpu_plan_run(plan, &in, 1, &out, 1, NULL, 0, 0));
    bool ok = true;
    for (int r = 0; r < 3; r++)
      for (int c = 0; c < 4; c++) {
        float want = (float)(expf(xs[c * 3 + r]) * 2.0) + 1.0f;
        ok &= fabsf(y[r * 6 + c] - want) < 1e-5f * want && y[r * 6 + 4] == 0;
      }
    CHECK(ok);
    CHECK_ERR(cpu_plan_run(plan, &in, 1, &out, 0, NULL, 0, 0), PTC_CODE_INVALID_ARGUMENT,
              "expected 1 outputs");
  }
  cpu_plan_destroy(plan);
  ptc_graph_destroy(dg);
  ptc_graph_destroy(g);
}

static void test_missing_compiler(void) {
  setenv("PTC_CC", "/nonexistent/cc", 1);
  const char* why = ptc_cpu_backend.unavailable_reason();
  CHECK(why && strcmp(why, "no C compiler found (set PTC_CC)") == 0);
  ptc_graph* g = rowsum_graph();
  cexe e;
  CHECK_ERR(cexe_compile(g, NULL, &e), PTC_CODE_UNAVAILABLE, "no C compiler found (set PTC_CC)");
  cexe_free(&e);
  ptc_graph_destroy(g);
  unsetenv("PTC_CC");
  CHECK(ptc_cpu_backend.unavailable_reason() == NULL);
}

int main(void) {
  char cache[] = "/tmp/ptc-test-cache-XXXXXX";
  if (!mkdtemp(cache)) return 1;
  setenv("PTC_CACHE_DIR", cache, 1);
  CHECK_OK(ptc_context_create(NULL, &ctx));
  CHECK(ptc_cpu_backend.unavailable_reason() == NULL);
  test_custom_op();
  test_strided_io();
  test_mlp_block();
  test_conv_block();
  test_dynamic();
  test_index_error();
  test_threads();
  test_fusion_dumps();
  test_plan_direct();
  test_missing_compiler();
  ptc_context_release(ctx);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", cache);
  if (system(cmd) != 0) printf("cannot remove %s\n", cache);
  return check_summary("test_cpu_pipeline");
}
