/* test_cuda_pdl.c - programmatic dependent launch of generated kernels
 * (backends/cuda/cuda_launch.c, ptc_pdl_enter in cuda_prelude.cuh).
 *
 *  --cpu (no GPU needed): when it is wanted (compute capability 9+, a driver
 *    with cuLaunchKernelEx, PTC_CUDA_PDL not "0") and when also under
 *    stream capture (drivers 12.3+); the launch structs have
 *    the Driver API's layout (CUlaunchAttribute 72 bytes, its value at 8;
 *    CUlaunchConfig 56 bytes, stream at 32, attributes at 40, their count at
 *    48); the prelude waits with griddepcontrol only on sm_90+; and every
 *    entry point of the kernels of two dependent chains (a split variance:
 *    the mean kernel, then the squared deviations reading it; column means
 *    then rows of squared deviations from them) starts with ptc_pdl_enter()
 *    (or the variant PTC_CUDA_PDL_TRIGGER names: after, first), before any
 *    global access, and every variant waits; so do the entries of the
 *    attention modules (cuda_attn*.cuh), also launched with PDL. With NVRTC
 *    the generated kernels of all three entries compile for sm_80 and sm_90.
 *  default (GPU; exit 77 without one): says whether the device launches with
 *    PDL (it must on sm_90+ unless PTC_CUDA_PDL=0; under capture as its
 *    driver allows); runs both chains 16
 *    times back to back on one stream without waiting in between, inputs
 *    alternating between x and x + 1000 (the same variance, means 1000
 *    apart: a consumer kernel that read its producer's output before the
 *    producer ended would see the other input's mean, off by 1000), then
 *    checks every result against a float64 host reference. */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_cg.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda_test_dev.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, passes;
#define CHECK(c)                                                   \
  do {                                                             \
    if (!(c)) {                                                    \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);          \
      failures++;                                                  \
    } else {                                                       \
      passes++;                                                    \
    }                                                              \
  } while (0)

#define VAR_N (((int64_t)1 << 22) + 5)
#define CH_R 4096
#define CH_C 1024

/* chain 0: var(x) over VAR_N floats (with PTC_CUDA_WELFORD=0: a split mean
 * kernel, then a split kernel of squared deviations from it); chain 1:
 * sum((x - mean(x, 0))^2, 1) over [CH_R, CH_C]. */
static ptc_status build(ptc_context* ctx, int chain, ptc_graph** out) {
  ptc_graph* g;
  PTC_TRY(ptc_graph_create(ctx, &g));
  ptc_value x, m = 0, d = 0, q = 0, y = 0;
  ptc_status s;
  if (chain == 0) {
    ptc_dim sh[1] = {{VAR_N, 0, 0}};
    s = ptc_graph_add_input(g, "x", PTC_F32, sh, 1, NULL, &x);
    if (!s) s = ptc_graph_add_node(g, "var", &x, 1, NULL, 0, &y, 1, NULL);
  } else {
    ptc_dim sh[2] = {{CH_R, 0, 0}, {CH_C, 0, 0}};
    int64_t d0 = 0, d1 = 1;
    ptc_attr a0[2] = {ptc_attr_ints("dim", &d0, 1), ptc_attr_bool("keepdim", 1)};
    ptc_attr a1[1] = {ptc_attr_ints("dim", &d1, 1)};
    s = ptc_graph_add_input(g, "x", PTC_F32, sh, 2, NULL, &x);
    if (!s) s = ptc_graph_add_node(g, "mean", &x, 1, a0, 2, &m, 1, NULL);
    ptc_value xm[2] = {x, m};
    if (!s) s = ptc_graph_add_node(g, "sub", xm, 2, NULL, 0, &d, 1, NULL);
    ptc_value dd[2] = {d, d};
    if (!s) s = ptc_graph_add_node(g, "mul", dd, 2, NULL, 0, &q, 1, NULL);
    if (!s) s = ptc_graph_add_node(g, "sum", &q, 1, a1, 1, &y, 1, NULL);
  }
  if (!s) s = ptc_graph_add_output(g, y);
  if (s) {
    ptc_graph_destroy(g);
    return s;
  }
  *out = g;
  return PTC_OK;
}

/* Every `extern "C" __global__` entry of src opens with `first` (a
 * ptc_pdl_enter variant's call statement). */
static bool entries_wait_first(const char* src, const char* first, int* n_entries) {
  *n_entries = 0;
  for (const char* p = strstr(src, "extern \"C\" __global__"); p;
       p = strstr(p + 1, "extern \"C\" __global__")) {
    const char* open = strstr(p, ") {\n");
    if (!open || strncmp(open + 4, first, strlen(first)) != 0) return false;
    (*n_entries)++;
  }
  return *n_entries > 0;
}

/* Generates chain's kernels: checks their entries, appends their sources
 * (without the prelude) to tu; the number of generated kernels, -1 on error. */
static int chain_kernels(ptc_context* ctx, int chain, ptc_strbuf* tu) {
  ptc_graph* g = NULL;
  ptc_graph* dg = NULL;
  ir_program* p = NULL;
  sched_plan* s = NULL;
  ptc_status st = build(ctx, chain, &g);
  if (!st) st = cuda_pipeline(ctx, NULL, g, true, &dg, &p, &s);
  int n = 0;
  for (uint32_t k = 0; !st && k < s->n_kernels; k++) {
    if (s->kernels[k].is_extern) continue;
    cuda_kernel_src src;
    char name[40];
    static unsigned serial; /* names stay unique in the one translation unit */
    snprintf(name, sizeof name, "pdl%d_k%u_%u", chain, k, serial++);
    st = cuda_codegen_kernel_named(p, s, k, name, &src);
    if (st) break;
    n++;
    int entries = 0;
    const char* tr = getenv("PTC_CUDA_PDL_TRIGGER");
    const char* first = tr && strcmp(tr, "after") == 0 ? "  ptc_pdl_enter_after();\n"
                        : tr && strcmp(tr, "first") == 0 ? "  ptc_pdl_enter_first();\n"
                                                         : "  ptc_pdl_enter();\n";
    CHECK(entries_wait_first(src.source, first, &entries));
    printf("chain %d kernel %u (%s): %d entry points, each opening with %.*s\n", chain, k,
           s->kernels[k].name, entries, (int)strlen(first) - 3, first + 2);
    const char* body = strstr(src.source, "\n// kernel ");
    ptc_sb_append(tu, body ? body : src.source);
    cuda_kernel_src_free(&src);
  }
  if (st) printf("FAIL chain %d: %s\n", chain, ptc_status_message(st));
  ptc_status_destroy(st);
  if (s) sched_plan_destroy(s);
  if (p) ir_program_destroy(p);
  if (dg) ptc_graph_destroy(dg);
  ptc_graph_destroy(g);
  return st ? -1 : n;
}

extern const char ptc_cuda_attn_text[], ptc_cuda_attn_f32_text[], ptc_cuda_attn_wg_text[];

/* The kernel macros of a hand-written module text (launched with PDL too,
 * cuda_attn*.c): each calls ptc_pdl_enter() before its body. */
static void check_module_entries(const char* text, const char* what) {
  int n = 0;
  for (const char* p = strstr(text, "extern \"C\" __global__"); p;
       p = strstr(p + 1, "extern \"C\" __global__")) {
    const char* enter = strstr(p, "ptc_pdl_enter();");
    const char* body = strstr(p, "_body<");
    CHECK(enter && body && enter < body);
    n++;
  }
  printf("%s: %d kernel entries, each waiting first\n", what, n);
  CHECK(n > 0);
}

static int cpu_tests(void) {
  setenv("PTC_CUDA_WELFORD", "0", 1); /* var as mean + squared deviations */
  CHECK(cuda_pdl_wanted(9, true, NULL));
  CHECK(cuda_pdl_wanted(10, true, "1"));
  CHECK(cuda_pdl_wanted(9, true, ""));
  CHECK(!cuda_pdl_wanted(8, true, NULL));
  CHECK(!cuda_pdl_wanted(9, false, NULL));
  CHECK(!cuda_pdl_wanted(9, true, "0"));
  CHECK(cuda_pdl_capture_ok(12030) && cuda_pdl_capture_ok(13000) && !cuda_pdl_capture_ok(12020));
  CHECK(sizeof(cu_launch_attr) == 72 && offsetof(cu_launch_attr, value) == 8);
  CHECK(sizeof(cu_launch_config) == 56 && offsetof(cu_launch_config, stream) == 32 &&
        offsetof(cu_launch_config, attrs) == 40 && offsetof(cu_launch_config, n_attrs) == 48);
  const char* pre = ptc_cuda_prelude_text;
  const char* fn = strstr(pre, "PTC_D void ptc_pdl_enter()");
  const char* guard = fn ? strstr(fn, "#if __CUDA_ARCH__ >= 900") : NULL;
  const char* wait = fn ? strstr(fn, "griddepcontrol.wait;") : NULL;
  const char* endif = guard ? strstr(guard, "#endif") : NULL;
  CHECK(fn && guard && wait && endif && guard < wait && wait < endif);
  for (const char* v = pre; (v = strstr(v, "PTC_D void ptc_pdl_enter")) != NULL; v++) {
    const char* w = strstr(v, "griddepcontrol.wait;");
    const char* end = strstr(v, "\n}\n");
    CHECK(w && end && w < end); /* every variant waits */
  }
  check_module_entries(ptc_cuda_attn_text, "attention (cuda_attn.cuh)");
  check_module_entries(ptc_cuda_attn_f32_text, "float32 attention (cuda_attn_f32.cuh)");
  check_module_entries(ptc_cuda_attn_wg_text, "wgmma attention (cuda_attn_wg.cuh)");
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  ptc_strbuf tu;
  ptc_sb_init(&tu);
  /* the default entry, then the two trigger variants (PTC_CUDA_PDL_TRIGGER) */
  const char* triggers[3] = {NULL, "after", "first"};
  for (int t = 0; t < 3; t++) {
    if (triggers[t])
      setenv("PTC_CUDA_PDL_TRIGGER", triggers[t], 1);
    for (int c = 0; c < 2; c++) {
      int n = chain_kernels(ctx, c, &tu);
      printf("chain %d: %d generated kernels\n", c, n);
      CHECK(n >= 2); /* a producer and a consumer */
    }
  }
  unsetenv("PTC_CUDA_PDL_TRIGGER");
  CHECK(ctd_nvrtc_check(tu.data));
  ptc_sb_free(&tu);
  ptc_context_release(ctx);
  printf("test_cuda_pdl --cpu: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

/* ---- GPU part ------------------------------------------------------------------------- */

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

#define RUNS 16

/* Runs chain RUNS times back to back on one stream, inputs alternating
 * between hx[0] and hx[1] (n floats each), then compares every result (n_out
 * floats) with ref (the same for both inputs) within tol, relative. */
static void run_chain(ptc_context* ctx, int chain, float* const hx[2], int64_t n, const double* ref,
                      size_t n_out, double tol) {
  ptc_graph* g = NULL;
  ptc_executable* e = NULL;
  ptc_status s = build(ctx, chain, &g);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  if (!s) s = ptc_compile(ctx, g, &o, &e);
  cu_deviceptr dx[2] = {0, 0};
  cu_stream st = NULL;
  for (int k = 0; !s && k < 2; k++) {
    s = cuda_alloc((size_t)n * sizeof(float), NULL, &dx[k]);
    if (!s && cu()->MemcpyHtoDAsync(dx[k], hx[k], (size_t)n * sizeof(float), NULL) != CU_SUCCESS)
      s = PTC_ERR(INTERNAL, "upload");
  }
  if (!s && (cu()->StreamSynchronize(NULL) != CU_SUCCESS || cu()->StreamCreate(&st, 1) != CU_SUCCESS))
    s = PTC_ERR(INTERNAL, "synchronize / stream");
  ptc_results* res[RUNS] = {NULL};
  int64_t shape[2] = {chain == 0 ? VAR_N : CH_R, CH_C};
  for (int r = 0; !s && r < RUNS; r++) {
    ptc_tensor x;
    memset(&x, 0, sizeof x);
    x.data = (void*)(uintptr_t)dx[r % 2];
    x.device.device_type = PTC_DEVICE_CUDA;
    x.ndim = chain == 0 ? 1 : 2;
    x.dtype = ptc_dtype_to_dl(PTC_F32);
    x.shape = shape;
    ptc_run_options ro;
    ptc_run_options_init(&ro);
    ro.stream = st;
    s = ptc_executable_run_alloc(e, &x, 1, &ro, &res[r]);
  }
  if (!s && cu()->StreamSynchronize(st) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronize");
  float* got = malloc(n_out * sizeof(float));
  if (!got && !s) s = ptc_status_oom();
  int bad = 0;
  for (int r = 0; !s && r < RUNS; r++) {
    const ptc_tensor* t = ptc_results_get(res[r], 0);
    if (cu()->MemcpyDtoHAsync(got, (cu_deviceptr)(uintptr_t)t->data + t->byte_offset,
                              n_out * sizeof(float), NULL) != CU_SUCCESS ||
        cu()->StreamSynchronize(NULL) != CU_SUCCESS) {
      s = PTC_ERR(INTERNAL, "download");
      break;
    }
    for (size_t i = 0; i < n_out; i++)
      if (!(fabs(got[i] - ref[i]) <= tol * (1 + fabs(ref[i])))) {
        if (bad++ < 5) printf("  chain %d run %d out %zu: %.9g, want %.9g\n", chain, r, i, got[i], ref[i]);
      }
  }
  CHECK(bad == 0);
  if (s) printf("FAIL chain %d: %s\n", chain, ptc_status_message(s));
  CHECK(!s);
  ptc_status_destroy(s);
  free(got);
  for (int r = 0; r < RUNS; r++) ptc_results_destroy(res[r]);
  if (st) cu()->StreamDestroy(st);
  for (int k = 0; k < 2; k++)
    if (dx[k]) cuda_free(dx[k]);
  ptc_executable_release(e);
  ptc_graph_destroy(g);
  printf("chain %d: %d runs back to back, %d wrong values\n", chain, RUNS, bad);
}

static int gpu_tests(void) {
  const char* why = NULL;
  if (!ptc_backend_available("cuda", &why)) {
    printf("SKIP: the cuda backend is not available here: %s\n", why ? why : "?");
    return 77;
  }
  setenv("PTC_CUDA_WELFORD", "0", 1);
  const cuda_device* d = cuda_device_get();
  const char* env = getenv("PTC_CUDA_PDL");
  int drv = 0;
  cuda_libs_get()->cu.DriverGetVersion(&drv);
  printf("device %s (sm_%d%d, driver %d): programmatic dependent launch %s%s\n", d->name,
         d->cc_major, d->cc_minor, drv, d->pdl ? "on" : "off",
         d->pdl_capture ? ", also under stream capture" : "");
  CHECK(d->pdl == cuda_pdl_wanted(d->cc_major, cuda_libs_get()->cu.LaunchKernelEx != NULL, env));
  CHECK(d->pdl_capture == (d->pdl && cuda_pdl_capture_ok(drv)));
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  cu_context prev;
  ptc_status_destroy(cuda_ctx_enter(d, &prev));
  int64_t n = VAR_N > (int64_t)CH_R * CH_C ? VAR_N : (int64_t)CH_R * CH_C;
  float* hx[2] = {malloc((size_t)n * sizeof(float)), malloc((size_t)n * sizeof(float))};
  double* ref = malloc(CH_R * sizeof(double));
  if (!hx[0] || !hx[1] || !ref) return 1;
  for (int64_t i = 0; i < n; i++) {
    hx[0][i] = (float)((i * 7919) % 13 - 6);
    hx[1][i] = hx[0][i] + 1000.0f;
  }
  /* chain 0: the variance (correction 1) of the first VAR_N values */
  double mean = 0, ss = 0;
  for (int64_t i = 0; i < VAR_N; i++) mean += hx[0][i];
  mean /= (double)VAR_N;
  for (int64_t i = 0; i < VAR_N; i++) ss += (hx[0][i] - mean) * (hx[0][i] - mean);
  ref[0] = ss / (double)(VAR_N - 1);
  run_chain(ctx, 0, hx, VAR_N, ref, 1, 1e-4);
  /* chain 1: squared deviations from the column means, summed over each row */
  double* cm = calloc(CH_C, sizeof(double));
  if (!cm) return 1;
  for (int64_t r = 0; r < CH_R; r++)
    for (int64_t c = 0; c < CH_C; c++) cm[c] += hx[0][r * CH_C + c];
  for (int64_t c = 0; c < CH_C; c++) cm[c] /= CH_R;
  for (int64_t r = 0; r < CH_R; r++) {
    ref[r] = 0;
    for (int64_t c = 0; c < CH_C; c++) ref[r] += (hx[0][r * CH_C + c] - cm[c]) * (hx[0][r * CH_C + c] - cm[c]);
  }
  run_chain(ctx, 1, hx, (int64_t)CH_R * CH_C, ref, CH_R, 1e-3);
  free(cm);
  free(ref);
  free(hx[0]);
  free(hx[1]);
  ptc_context_release(ctx);
  printf("test_cuda_pdl: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--cpu") == 0) return cpu_tests();
  return gpu_tests();
}
