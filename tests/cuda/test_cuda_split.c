/* test_cuda_split.c - the cuda backend's split reductions (few huge rows cut
 * into chunks of one block each; backends/cuda/cuda_cg_kernel.c, split_plan).
 *
 *  --cpu (no GPU needed): which kernels split - full sums / means / amax /
 *    argmax over 2^20 elements, a [4, 2^18] bf16 row sum, an int32 sum and
 *    var over 2^20 (two kernels: the mean, the squared deviations) do;
 *    1024 rows of 1024, a 4096-element sum and anything with
 *    PTC_CUDA_SPLIT=0 do not; a split kernel carries its workspace and
 *    counter; with NVRTC the split kernels compile for sm_80 and sm_90.
 *  default (GPU; exit 77 without one): sum over 2^22 + 3 floats (ragged:
 *    scalar rows), mean over 2^22 (vector rows, a division epilogue),
 *    argmax over 2^22 distinct values and a [3, 2^20] row sum are run three
 *    times each by one executable: each run equals a float64 host reference
 *    within tolerance and every run gives the same bits (the partials are
 *    folded in a fixed order, and the per-row counters reset themselves). */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_cg.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda_test_dev.h"

#include <math.h>
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

typedef struct spec {
  const char* op;
  int32_t dtype;
  int64_t shape[2];
  uint32_t rank;
  int64_t dim; /* -1: over everything */
} spec;

static ptc_status build(ptc_context* ctx, const spec* sp, ptc_graph** out) {
  ptc_graph* g;
  PTC_TRY(ptc_graph_create(ctx, &g));
  ptc_dim sh[2] = {{sp->shape[0], 0, 0}, {sp->shape[1], 0, 0}};
  ptc_value x, y;
  ptc_attr a[1];
  size_t na = 0;
  if (sp->dim >= 0) a[na++] = strcmp(sp->op, "argmax") == 0 ? ptc_attr_int("dim", sp->dim)
                                                            : ptc_attr_ints("dim", &sp->dim, 1);
  ptc_status s = ptc_graph_add_input(g, "x", sp->dtype, sh, sp->rank, NULL, &x);
  if (!s) s = ptc_graph_add_node(g, sp->op, &x, 1, a, na, &y, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, y);
  if (s) {
    ptc_graph_destroy(g);
    return s;
  }
  *out = g;
  return PTC_OK;
}

/* Kernels of the graph and how many split; *tu gets the split kernels' source. */
static bool count_split(ptc_context* ctx, const spec* sp, uint32_t* n_kernels, uint32_t* n_split,
                        ptc_strbuf* tu) {
  ptc_graph* g = NULL;
  ptc_graph* dg = NULL;
  ir_program* p = NULL;
  sched_plan* s = NULL;
  ptc_status st = build(ctx, sp, &g);
  if (!st) st = cuda_pipeline(ctx, NULL, g, true, &dg, &p, &s);
  *n_kernels = *n_split = 0;
  for (uint32_t k = 0; !st && k < s->n_kernels; k++) {
    if (s->kernels[k].is_extern) continue;
    cuda_kernel_src src;
    char name[40];
    snprintf(name, sizeof name, "t%u_%s_k%u", (unsigned)tu->len, sp->op, k);
    st = cuda_codegen_kernel_named(p, s, k, name, &src);
    if (st) break;
    (*n_kernels)++;
    if (src.split > 1) {
      (*n_split)++;
      CHECK(strstr(src.source, "atomicAdd(&") && strstr(src.source, "_cnt[") &&
            strstr(src.source, "__device__"));
      const char* body = strstr(src.source, "// libptc generated kernel");
      const char* end = body ? strstr(body, "\n// kernel ") : NULL;
      ptc_sb_append(tu, end ? end : src.source); /* without the prelude */
    }
    cuda_kernel_src_free(&src);
  }
  if (st) printf("FAIL %s: %s\n", sp->op, ptc_status_message(st));
  ptc_status_destroy(st);
  if (s) sched_plan_destroy(s);
  if (p) ir_program_destroy(p);
  if (dg) ptc_graph_destroy(dg);
  ptc_graph_destroy(g);
  return !st;
}

static int cpu_tests(void) {
  setenv("PTC_CUDA_WELFORD", "0", 1); /* var as the two-pass decomposition, not one extern */
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  const int64_t M = (int64_t)1 << 20;
  const struct {
    spec s;
    bool split;
  } rows[] = {
      {{"sum", PTC_F32, {M, 1}, 1, -1}, true},
      {{"mean", PTC_F32, {M, 1}, 1, -1}, true},
      {{"amax", PTC_F64, {M, 1}, 1, -1}, true},
      {{"argmax", PTC_F32, {M, 1}, 1, -1}, true},
      {{"sum", PTC_BF16, {4, M / 4}, 2, 1}, true},
      {{"sum", PTC_I32, {2, M / 2}, 2, -1}, true},
      {{"sum", PTC_F32, {1024, 1024}, 2, 1}, false},
      {{"sum", PTC_F32, {4096, 1}, 1, -1}, false},
      {{"var", PTC_F32, {M, 1}, 1, -1}, true}, /* two kernels (mean, squared deviations), both split */
  };
  ptc_strbuf tu;
  ptc_sb_init(&tu);
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    uint32_t nk, ns;
    if (!count_split(ctx, &rows[i].s, &nk, &ns, &tu)) {
      failures++;
      continue;
    }
    printf("%s %s [%lld, %lld]: %u kernels, %u split\n", rows[i].s.op,
           ptc_dtype_name(rows[i].s.dtype), (long long)rows[i].s.shape[0],
           (long long)rows[i].s.shape[1], nk, ns);
    CHECK(rows[i].split ? ns >= 1 : ns == 0);
  }
  setenv("PTC_CUDA_SPLIT", "0", 1);
  uint32_t nk, ns;
  ptc_strbuf none;
  ptc_sb_init(&none);
  CHECK(count_split(ctx, &rows[0].s, &nk, &ns, &none) && nk >= 1 && ns == 0);
  unsetenv("PTC_CUDA_SPLIT");
  ptc_sb_free(&none);
  CHECK(ctd_nvrtc_check(tu.data));
  ptc_sb_free(&tu);
  ptc_context_release(ctx);
  printf("test_cuda_split --cpu: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

/* ---- GPU part ------------------------------------------------------------------------- */

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

/* Compiles sp, runs it `runs` times on host data `hx` and checks each
 * result against ref[] (n_out values; argmax: exact) and bitwise against the
 * first run. */
static void run_case(ptc_context* ctx, const spec* sp, const float* hx, const double* ref,
                     size_t n_out, double tol, const char* what) {
  ptc_graph* g = NULL;
  ptc_executable* e = NULL;
  ptc_status s = build(ctx, sp, &g);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  if (!s) s = ptc_compile(ctx, g, &o, &e);
  int64_t n = sp->shape[0] * (sp->rank > 1 ? sp->shape[1] : 1);
  cu_deviceptr dx = 0;
  if (!s) s = cuda_alloc((size_t)n * sizeof(float), NULL, &dx);
  if (!s && (cu()->MemcpyHtoDAsync(dx, hx, (size_t)n * sizeof(float), NULL) != CU_SUCCESS ||
             cu()->StreamSynchronize(NULL) != CU_SUCCESS))
    s = PTC_ERR(INTERNAL, "upload");
  bool is_arg = strcmp(sp->op, "argmax") == 0;
  unsigned char first[64], cur[64];
  size_t osz = n_out * (is_arg ? 8 : 4);
  for (int r = 0; !s && r < 3; r++) {
    int64_t shape[2] = {sp->shape[0], sp->shape[1]};
    ptc_tensor x;
    memset(&x, 0, sizeof x);
    x.data = (void*)(uintptr_t)dx;
    x.device.device_type = PTC_DEVICE_CUDA;
    x.ndim = (int32_t)sp->rank;
    x.dtype = ptc_dtype_to_dl(PTC_F32);
    x.shape = shape;
    ptc_results* res = NULL;
    s = ptc_executable_run_alloc(e, &x, 1, NULL, &res);
    if (!s) {
      const ptc_tensor* t = ptc_results_get(res, 0);
      if (cu()->MemcpyDtoHAsync(cur, (cu_deviceptr)(uintptr_t)t->data + t->byte_offset, osz,
                                NULL) != CU_SUCCESS ||
          cu()->StreamSynchronize(NULL) != CU_SUCCESS)
        s = PTC_ERR(INTERNAL, "download");
    }
    ptc_results_destroy(res);
    if (s) break;
    for (size_t i = 0; i < n_out; i++) {
      double v;
      if (is_arg) {
        int64_t iv;
        memcpy(&iv, cur + 8 * i, 8);
        v = (double)iv;
      } else {
        float fv;
        memcpy(&fv, cur + 4 * i, 4);
        v = fv;
      }
      bool ok = is_arg ? v == ref[i] : fabs(v - ref[i]) <= tol * (1 + fabs(ref[i]));
      if (!ok) printf("  %s run %d out %zu: %.9g, want %.9g\n", what, r, i, v, ref[i]);
      CHECK(ok);
    }
    if (r == 0)
      memcpy(first, cur, osz);
    else
      CHECK(memcmp(first, cur, osz) == 0);
  }
  if (s) printf("FAIL %s: %s\n", what, ptc_status_message(s));
  CHECK(!s);
  ptc_status_destroy(s);
  if (dx) cuda_free(dx);
  ptc_executable_release(e);
  ptc_graph_destroy(g);
  printf("%s: checked\n", what);
}

/* Runs sp twice back to back on two non-blocking streams without waiting in
 * between, then checks both results against ref[0]: the split kernels keep
 * partials in module memory, so the second run must not overlap the first
 * (cuda_plan_run.c orders them). */
static void run_two_streams(ptc_context* ctx, const spec* sp, const float* hx, double ref,
                            const char* what) {
  ptc_graph* g = NULL;
  ptc_executable* e = NULL;
  ptc_status s = build(ctx, sp, &g);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  if (!s) s = ptc_compile(ctx, g, &o, &e);
  int64_t n = sp->shape[0];
  cu_deviceptr dx = 0;
  cu_stream st[2] = {NULL, NULL};
  if (!s) s = cuda_alloc((size_t)n * sizeof(float), NULL, &dx);
  if (!s && (cu()->MemcpyHtoDAsync(dx, hx, (size_t)n * sizeof(float), NULL) != CU_SUCCESS ||
             cu()->StreamSynchronize(NULL) != CU_SUCCESS ||
             cu()->StreamCreate(&st[0], 1) != CU_SUCCESS ||
             cu()->StreamCreate(&st[1], 1) != CU_SUCCESS))
    s = PTC_ERR(INTERNAL, "upload / streams");
  ptc_results* res[2] = {NULL, NULL};
  for (int r = 0; !s && r < 6; r++) {
    int64_t shape[1] = {n};
    ptc_tensor x;
    memset(&x, 0, sizeof x);
    x.data = (void*)(uintptr_t)dx;
    x.device.device_type = PTC_DEVICE_CUDA;
    x.ndim = 1;
    x.dtype = ptc_dtype_to_dl(PTC_F32);
    x.shape = shape;
    ptc_run_options ro;
    ptc_run_options_init(&ro);
    ro.stream = st[r % 2];
    ptc_results_destroy(res[r % 2]);
    res[r % 2] = NULL;
    s = ptc_executable_run_alloc(e, &x, 1, &ro, &res[r % 2]);
    if (s || r % 2 == 0) continue;
    if (cu()->CtxSynchronize() != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronize");
    for (int k = 0; !s && k < 2; k++) {
      const ptc_tensor* t = ptc_results_get(res[k], 0);
      float v = 0;
      if (cu()->MemcpyDtoHAsync(&v, (cu_deviceptr)(uintptr_t)t->data + t->byte_offset, 4, NULL) !=
              CU_SUCCESS ||
          cu()->StreamSynchronize(NULL) != CU_SUCCESS) {
        s = PTC_ERR(INTERNAL, "download");
        break;
      }
      bool ok = (double)v == ref;
      if (!ok) printf("  %s pair %d stream %d: %.9g, want %.9g\n", what, r / 2, k, v, ref);
      CHECK(ok);
    }
  }
  if (s) printf("FAIL %s: %s\n", what, ptc_status_message(s));
  CHECK(!s);
  ptc_status_destroy(s);
  ptc_results_destroy(res[0]);
  ptc_results_destroy(res[1]);
  for (int k = 0; k < 2; k++)
    if (st[k]) cu()->StreamDestroy(st[k]);
  if (dx) cuda_free(dx);
  ptc_executable_release(e);
  ptc_graph_destroy(g);
  printf("%s: checked\n", what);
}

static int gpu_tests(void) {
  const char* why = NULL;
  if (!ptc_backend_available("cuda", &why)) {
    printf("SKIP: the cuda backend is not available here: %s\n", why ? why : "?");
    return 77;
  }
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  cu_context prev;
  ptc_status_destroy(cuda_ctx_enter(cuda_device_get(), &prev));
  const int64_t N = ((int64_t)1 << 22) + 3;
  float* hx = malloc((size_t)N * sizeof(float));
  if (!hx) return 1;
  /* small integers: every partial sum is exact in float */
  for (int64_t i = 0; i < N; i++) hx[i] = (float)((i * 7919) % 13 - 6);
  double sum = 0, sum4 = 0;
  for (int64_t i = 0; i < N; i++) sum += hx[i];
  for (int64_t i = 0; i < N - 3; i++) sum4 += hx[i];
  double r1[1] = {sum};
  run_case(ctx, &(spec){"sum", PTC_F32, {N, 1}, 1, -1}, hx, r1, 1, 0, "sum 2^22+3");
  run_two_streams(ctx, &(spec){"sum", PTC_F32, {N, 1}, 1, -1}, hx, sum,
                  "sum 2^22+3 on two streams back to back");
  double r2[1] = {sum4 / (double)(N - 3)};
  run_case(ctx, &(spec){"mean", PTC_F32, {N - 3, 1}, 1, -1}, hx, r2, 1, 1e-6, "mean 2^22");
  double r3[3];
  const int64_t R = (int64_t)1 << 20;
  for (int i = 0; i < 3; i++) {
    r3[i] = 0;
    for (int64_t j = 0; j < R; j++) r3[i] += hx[i * R + j];
  }
  run_case(ctx, &(spec){"sum", PTC_F32, {3, R}, 2, 1}, hx, r3, 3, 0, "row sum [3, 2^20]");
  /* distinct values, the maximum near the end */
  const int64_t A = (int64_t)1 << 22;
  for (int64_t i = 0; i < A; i++) hx[i] = (float)((i * 2654435761u) % (uint64_t)A) - 1e6f;
  int64_t best = 0;
  for (int64_t i = 1; i < A; i++)
    if (hx[i] > hx[best]) best = i;
  double r4[1] = {(double)best};
  run_case(ctx, &(spec){"argmax", PTC_F32, {A, 1}, 1, -1}, hx, r4, 1, 0, "argmax 2^22");
  free(hx);
  ptc_context_release(ctx);
  printf("test_cuda_split: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--cpu") == 0) return cpu_tests();
  return gpu_tests();
}
