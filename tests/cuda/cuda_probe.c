/* cuda_probe.c - a quick look at the cuda backend's speed on the GPU machine
 * (a tool, not a test and not the benchmark of issue 5, which compares with
 * PyTorch in bench/): times a few workloads through the public API on
 * device tensors and prints each one's time, its effective bandwidth against
 * the measured device-to-device copy ceiling (or TFLOP/s for the matmul),
 * the cold compile time (private cache folder) and the per-call host time of
 * a tiny graph. Exits 77 when the backend is unavailable.
 *
 * Usage: cuda_probe [--reps N] [--mm]   (--mm: only the matmul lines)
 */
#include "backends/cuda/cuda_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ptc_context* ctx;
static int reps = 20;
static bool mm_only;
static double ceiling_gbs;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

static void die(ptc_status s, const char* what) {
  if (!s) return;
  printf("FAIL %s: %s\n", what, ptc_status_message(s));
  const char* log = ptc_status_detail(s, "compiler_log");
  if (log) printf("%.4000s\n", log);
  exit(1);
}

/* A device tensor of `dtype` filled with a deterministic pattern. */
static ptc_tensor dev_tensor(int32_t dtype, int rank, const int64_t* shape, int64_t* shape_store) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  memcpy(shape_store, shape, (size_t)rank * sizeof *shape);
  size_t es = ptc_dtype_size(dtype), bytes = (size_t)n * es;
  char* h = malloc(bytes ? bytes : 1);
  for (int64_t i = 0; i < n; i++) {
    float v = (float)((i * 7919) % 2001 - 1000) / 1000.0f;
    if (dtype == PTC_F32)
      ((float*)h)[i] = v;
    else if (dtype == PTC_BF16)
      ((uint16_t*)h)[i] = ptc_f32_to_bf16(v);
    else if (dtype == PTC_F16)
      ((uint16_t*)h)[i] = ptc_f32_to_f16(v);
  }
  cu_deviceptr p = 0;
  die(cuda_alloc(bytes, NULL, &p), "alloc");
  cu()->MemcpyHtoDAsync(p, h, bytes, NULL);
  cu()->StreamSynchronize(NULL);
  free(h);
  ptc_tensor t = {(void*)(uintptr_t)p, {PTC_DEVICE_CUDA, 0}, rank, ptc_dtype_to_dl(dtype),
                  shape_store, NULL, 0};
  return t;
}

typedef ptc_status (*build_fn)(ptc_graph* g, int32_t dt, const int64_t* shape, int rank);

static ptc_status input(ptc_graph* g, const char* name, int32_t dt, const int64_t* shape, int rank,
                        ptc_value* v) {
  ptc_dim dims[8];
  for (int d = 0; d < rank; d++) dims[d] = (ptc_dim){shape[d], 0, 0};
  return ptc_graph_add_input(g, name, dt, dims, (size_t)rank, NULL, v);
}

static ptc_status node1(ptc_graph* g, const char* op, ptc_value a, const ptc_attr* at, size_t na,
                        ptc_value* out) {
  return ptc_graph_add_node(g, op, &a, 1, at, na, out, 1, NULL);
}

static ptc_status node2(ptc_graph* g, const char* op, ptc_value a, ptc_value b, ptc_value* out) {
  const ptc_value in[2] = {a, b};
  return ptc_graph_add_node(g, op, in, 2, NULL, 0, out, 1, NULL);
}

/* y = relu(x * x + x) * sigmoid(x) - tanh(x): one fused pointwise kernel */
static ptc_status build_pointwise(ptc_graph* g, int32_t dt, const int64_t* shape, int rank) {
  ptc_value x, a, b, c, d, e, f, y;
  PTC_TRY(input(g, "x", dt, shape, rank, &x));
  PTC_TRY(node2(g, "mul", x, x, &a));
  PTC_TRY(node2(g, "add", a, x, &b));
  PTC_TRY(node1(g, "relu", b, NULL, 0, &c));
  PTC_TRY(node1(g, "sigmoid", x, NULL, 0, &d));
  PTC_TRY(node2(g, "mul", c, d, &e));
  PTC_TRY(node1(g, "tanh", x, NULL, 0, &f));
  PTC_TRY(node2(g, "sub", e, f, &y));
  return ptc_graph_add_output(g, y);
}

static ptc_status build_softmax(ptc_graph* g, int32_t dt, const int64_t* shape, int rank) {
  ptc_value x, y;
  PTC_TRY(input(g, "x", dt, shape, rank, &x));
  ptc_attr a = ptc_attr_int("dim", -1);
  PTC_TRY(node1(g, "softmax", x, &a, 1, &y));
  return ptc_graph_add_output(g, y);
}

static ptc_status build_sum(ptc_graph* g, int32_t dt, const int64_t* shape, int rank, int64_t dim) {
  ptc_value x, y;
  PTC_TRY(input(g, "x", dt, shape, rank, &x));
  ptc_attr a = ptc_attr_ints("dim", &dim, 1);
  PTC_TRY(node1(g, "sum", x, &a, 1, &y));
  return ptc_graph_add_output(g, y);
}
static ptc_status build_rowsum(ptc_graph* g, int32_t dt, const int64_t* s, int r) {
  return build_sum(g, dt, s, r, 1);
}
static ptc_status build_colsum(ptc_graph* g, int32_t dt, const int64_t* s, int r) {
  return build_sum(g, dt, s, r, 0);
}

static ptc_status build_layernorm(ptc_graph* g, int32_t dt, const int64_t* shape, int rank) {
  ptc_value x, y;
  PTC_TRY(input(g, "x", dt, shape, rank, &x));
  int64_t ns = shape[rank - 1];
  ptc_attr a = ptc_attr_ints("normalized_shape", &ns, 1);
  const ptc_value in[3] = {x, PTC_VALUE_NONE, PTC_VALUE_NONE};
  PTC_TRY(ptc_graph_add_node(g, "layer_norm", in, 3, &a, 1, &y, 1, NULL));
  return ptc_graph_add_output(g, y);
}

/* mm [M, K] @ [K, N] + bias[N] */
static ptc_status build_mm(ptc_graph* g, int32_t dt, const int64_t* shape, int rank) {
  (void)rank;
  int64_t as[2] = {shape[0], shape[1]}, bs[2] = {shape[1], shape[2]}, cs[1] = {shape[2]};
  ptc_value a, b, bias, m, y;
  PTC_TRY(input(g, "a", dt, as, 2, &a));
  PTC_TRY(input(g, "b", dt, bs, 2, &b));
  PTC_TRY(input(g, "bias", dt, cs, 1, &bias));
  PTC_TRY(node2(g, "mm", a, b, &m));
  PTC_TRY(node2(g, "add", m, bias, &y));
  return ptc_graph_add_output(g, y);
}

/* Times `exe` on `in`; returns seconds per run. */
static double time_runs(const ptc_executable* exe, const ptc_tensor* in, size_t n_in, int n) {
  ptc_results* r = NULL;
  die(ptc_executable_run_alloc(exe, in, n_in, NULL, &r), "warm-up run");
  ptc_results_destroy(r);
  cu()->CtxSynchronize();
  double t0 = now();
  for (int i = 0; i < n; i++) {
    die(ptc_executable_run_alloc(exe, in, n_in, NULL, &r), "run");
    ptc_results_destroy(r);
  }
  cu()->CtxSynchronize();
  return (now() - t0) / n;
}

static void probe(const char* label, build_fn build, int32_t dt, const int64_t* shape, int rank,
                  double bytes, double flops) {
  ptc_graph* g = NULL;
  die(ptc_graph_create(ctx, &g), "graph");
  die(build(g, dt, shape, rank), label);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  ptc_executable* exe = NULL;
  double t0 = now();
  die(ptc_compile(ctx, g, &o, &exe), label);
  double compile_s = now() - t0;
  size_t n_in = ptc_executable_num_inputs(exe);
  ptc_tensor in[4];
  int64_t shapes[4][8];
  for (size_t i = 0; i < n_in; i++) {
    int64_t sh[8];
    int r = rank;
    if (build == build_mm) {
      int64_t s3[3][2] = {{shape[0], shape[1]}, {shape[1], shape[2]}, {shape[2], 0}};
      memcpy(sh, s3[i], sizeof s3[i]);
      r = i == 2 ? 1 : 2;
    } else {
      memcpy(sh, shape, (size_t)rank * sizeof *sh);
    }
    in[i] = dev_tensor(dt, r, sh, shapes[i]);
  }
  double s = time_runs(exe, in, n_in, reps);
  printf("%-26s %-5s %9.3f ms", label, ptc_dtype_name(dt), s * 1e3);
  if (bytes > 0)
    printf("  %7.0f GB/s (%3.0f%% of copy)", bytes / s / 1e9, 100.0 * bytes / s / 1e9 / ceiling_gbs);
  if (flops > 0) printf("  %7.1f TFLOP/s", flops / s / 1e12);
  printf("  kernels %zu, compile %.2f s\n", ptc_executable_num_kernels(exe), compile_s);
  for (size_t i = 0; i < n_in; i++) cuda_free((cu_deviceptr)(uintptr_t)in[i].data);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

static void copy_ceiling(void) {
  size_t bytes = (size_t)1 << 30;
  cu_deviceptr a, b;
  die(cuda_alloc(bytes, NULL, &a), "alloc");
  die(cuda_alloc(bytes, NULL, &b), "alloc");
  cu()->MemcpyDtoDAsync(b, a, bytes, NULL);
  cu()->CtxSynchronize();
  double t0 = now();
  for (int i = 0; i < 10; i++) cu()->MemcpyDtoDAsync(b, a, bytes, NULL);
  cu()->CtxSynchronize();
  double s = (now() - t0) / 10;
  ceiling_gbs = 2.0 * (double)bytes / s / 1e9;
  printf("device-to-device copy: %.0f GB/s (read + write; the ceiling below)\n", ceiling_gbs);
  cuda_free(a);
  cuda_free(b);
}

/* Ten tiny pointwise ops on 16 elements: host time per call. */
static void tiny(void) {
  ptc_graph* g = NULL;
  die(ptc_graph_create(ctx, &g), "graph");
  int64_t sh[1] = {16};
  ptc_value x, v;
  die(input(g, "x", PTC_F32, sh, 1, &x), "tiny");
  v = x;
  static const char* const ops[] = {"neg", "exp", "abs", "sqrt", "sin", "cos", "tanh", "relu", "sigmoid", "neg"};
  for (int i = 0; i < 10; i++) die(node1(g, ops[i], v, NULL, 0, &v), "tiny");
  die(ptc_graph_add_output(g, v), "tiny");
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  o.disable_fusion = 1;
  ptc_executable* exe = NULL;
  die(ptc_compile(ctx, g, &o, &exe), "tiny");
  int64_t store[1];
  ptc_tensor in = dev_tensor(PTC_F32, 1, sh, store);
  cu_deviceptr out;
  die(cuda_alloc(64, NULL, &out), "alloc");
  ptc_tensor ot = in;
  ot.data = (void*)(uintptr_t)out;
  die(ptc_executable_run(exe, &in, 1, &ot, 1, NULL), "tiny");
  cu()->CtxSynchronize();
  int n = 2000;
  double t0 = now();
  for (int i = 0; i < n; i++) die(ptc_executable_run(exe, &in, 1, &ot, 1, NULL), "tiny");
  double host = (now() - t0) / n;
  cu()->CtxSynchronize();
  double all = (now() - t0) / n;
  printf("10 tiny ops unfused (%zu kernels): %.1f us host time per call, %.1f us per call "
         "with the GPU work\n", ptc_executable_num_kernels(exe), host * 1e6, all * 1e6);
  cuda_free(out);
  cuda_free((cu_deviceptr)(uintptr_t)in.data);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--mm"))
      mm_only = true;
  const char* why = NULL;
  if (!ptc_backend_available("cuda", &why)) {
    printf("SKIP: %s\n", why ? why : "cuda unavailable");
    return 77;
  }
  const cuda_device* d = cuda_device_get();
  cu_context prev;
  die(cuda_ctx_enter(d, &prev), "context");
  die(ptc_context_create(NULL, &ctx), "context");
  printf("device: %s (sm_%d%d, %d SMs); cuBLASLt %s\n", d->name, d->cc_major, d->cc_minor,
         d->sm_count, cuda_libs_get()->have_lt ? "loaded" : "not loaded");
  copy_ceiling();
  const int64_t pw[1] = {(int64_t)1 << 26};
  const int64_t sm[2] = {8192, 4096}, red[2] = {16384, 4096}, mm[3] = {4096, 1024, 4096};
  for (int k = 0; k < 2; k++) {
    int32_t dt = k ? PTC_BF16 : PTC_F32;
    double es = (double)ptc_dtype_size(dt);
    if (!mm_only) {
      probe("pointwise chain 2^26", build_pointwise, dt, pw, 1, 2.0 * es * (double)pw[0], 0);
      probe("softmax 8192x4096", build_softmax, dt, sm, 2, 2.0 * es * 8192 * 4096, 0);
      probe("layer_norm 8192x4096", build_layernorm, dt, sm, 2, 2.0 * es * 8192 * 4096, 0);
      probe("row sum 16384x4096", build_rowsum, dt, red, 2, es * 16384 * 4096, 0);
      probe("column sum 16384x4096", build_colsum, dt, red, 2, es * 16384 * 4096, 0);
    }
    probe("mm 4096x1024x4096 + bias", build_mm, dt, mm, 3, 0, 2.0 * 4096 * 1024 * 4096);
  }
  if (!mm_only) tiny();
  ptc_context_release(ctx);
  return 0;
}
