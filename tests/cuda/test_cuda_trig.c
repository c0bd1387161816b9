/* test_cuda_trig.c - the float32 sin and cos of generated cuda kernels
 * against the true values, in both forms: the prelude's ptc_sin_v /
 * ptc_cos_v in the vector path (the default: inline argument reduction and
 * polynomials for |x| <= 105558; chunks with a larger |x| are recomputed by
 * the scalar path with sinf / cosf) and, with PTC_CUDA_F32_TRIG=libm (set
 * here around the compile), CUDA's sinf / cosf.
 *
 * GPU (exit 77 without one): sin(x) and cos(x) of float32 graphs, run by the
 * cuda backend over
 *  - every non-negative float32 bit pattern up to 105615 (1.2e9 inputs in
 *    batches of 2^26), or every 61st with --quick;
 *  - every 61st negative one in that range;
 *  - every 61st bit pattern above it (sinf / cosf in both forms) and the
 *    specials (+-0, denormals, +-inf, NaN, the bound 105615 and its
 *    neighbours).
 * Each result must be within 2 ulp of sin / cos computed in double (the
 * accuracy CUDA documents for sinf / cosf); sin(-0) must be -0, NaN and inf
 * give NaN. The maximum ulp error of each range is printed (host emulation
 * of the fast form gave 1.54 / 1.55).
 */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_rt.h"
#include "cuda_test_dev.h"
#include "tests/check.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 1 << 26 };
#define BOUND_BITS 0x47CE4780u /* 105615.0f */


static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

/* An executable of y = sin(x) (cosine: cos(x)) over n float32 values. */
static ptc_status build(ptc_context* ctx, bool cosine, int64_t n, ptc_executable** out) {
  ptc_graph* g;
  PTC_TRY(ptc_graph_create(ctx, &g));
  ptc_dim sh[1] = {{n, 0, 0}};
  ptc_value x, y;
  ptc_status s = ptc_graph_add_input(g, "x", PTC_F32, sh, 1, NULL, &x);
  if (!s) s = ptc_graph_add_node(g, cosine ? "cos" : "sin", &x, 1, NULL, 0, &y, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, y);
  if (!s) s = ctd_compile(ctx, g, "cuda", out);
  ptc_graph_destroy(g);
  return s;
}

/* Runs e (BATCH values) on xs through device buffer dx, the results into ys. */
static ptc_status run(ptc_executable* e, cu_deviceptr dx, const float* xs, float* ys) {
  int64_t n = BATCH;
  if (cu()->MemcpyHtoDAsync(dx, xs, (size_t)n * 4, NULL) != CU_SUCCESS)
    return PTC_ERR(INTERNAL, "upload");
  ptc_tensor x;
  memset(&x, 0, sizeof x);
  x.data = (void*)(uintptr_t)dx;
  x.device.device_type = PTC_DEVICE_CUDA;
  x.ndim = 1;
  x.dtype = ptc_dtype_to_dl(PTC_F32);
  x.shape = &n;
  ptc_results* res = NULL;
  ptc_status s = ptc_executable_run_alloc(e, &x, 1, NULL, &res);
  if (!s) {
    s = ctd_download(ptc_results_get(res, 0), ys, (size_t)n * 4);
  }
  ptc_results_destroy(res);
  return s;
}

/* Error of y in float32 ulps of the true value t (subnormal ulp below 2^-126). */
static double ulp_err(float y, double t) {
  if (isnan(t)) return isnan(y) ? 0 : 1e30;
  if (isnan(y)) return 1e30;
  int ex;
  frexp(t, &ex);
  double ulp = ldexp(1.0, ex - 24);
  if (ulp < 0x1p-149) ulp = 0x1p-149;
  return fabs((double)y - t) / ulp;
}

typedef struct {
  const char* name;
  double max_err[2]; /* sin, cos */
  float worst[2];
  size_t n;
} range_stat;

/* Checks one batch of both functions; returns the number of results beyond 2 ulp. */
static size_t check_batch(const float* xs, const float* ys, const float* yc, int64_t n, range_stat* st) {
  size_t bad = 0;
  double m0 = st->max_err[0], m1 = st->max_err[1];
  float w0 = st->worst[0], w1 = st->worst[1];
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (int64_t i = 0; i < n; i++) {
    double es = ulp_err(ys[i], sin((double)xs[i])), ec = ulp_err(yc[i], cos((double)xs[i]));
    if (es > 2.0) bad++;
    if (ec > 2.0) bad++;
    if (es > m0 || ec > m1) {
#pragma omp critical
      {
        if (es > m0) m0 = es, w0 = xs[i];
        if (ec > m1) m1 = ec, w1 = xs[i];
      }
    }
  }
  st->max_err[0] = m0, st->max_err[1] = m1, st->worst[0] = w0, st->worst[1] = w1;
  st->n += (size_t)n;
  return bad;
}

/* Bit patterns lo, lo + step, ... <= hi (sign: or-ed in) in batches through both executables. */
static size_t sweep(ptc_executable* es, ptc_executable* ec, cu_deviceptr dx, float* xs, float* ys,
                    float* yc, uint64_t lo, uint64_t hi, uint64_t step, uint32_t sign,
                    range_stat* st, ptc_status* err) {
  size_t bad = 0;
  for (uint64_t b = lo; b <= hi && !*err;) {
    int64_t n = 0;
    for (; n < BATCH && b <= hi; n++, b += step) xs[n] = ctd_f32_from_bits((uint32_t)b | sign);
    for (int64_t i = n; i < BATCH; i++) xs[i] = xs[n - 1];
    *err = run(es, dx, xs, ys);
    if (!*err) *err = run(ec, dx, xs, yc);
    if (!*err) bad += check_batch(xs, ys, yc, n, st);
  }
  return bad;
}

static void report(const range_stat* st, size_t bad) {
  printf("%-34s %11zu inputs: max error sin %.3f ulp (x = %a), cos %.3f ulp (x = %a); %zu beyond 2 "
         "ulp\n",
         st->name, st->n, st->max_err[0], (double)st->worst[0], st->max_err[1],
         (double)st->worst[1], bad);
  CHECK(bad == 0);
}

/* Both executables (sin, cos) of one form, every range and the specials. */
static void check_form(ptc_context* ctx, const char* form, bool quick, float* xs, float* ys,
                       float* yc, cu_deviceptr dx) {
  ptc_executable *es = NULL, *ec = NULL;
  if (form) setenv("PTC_CUDA_F32_TRIG", form, 1);
  ptc_status s = build(ctx, false, BATCH, &es);
  if (!s) s = build(ctx, true, BATCH, &ec);
  unsetenv("PTC_CUDA_F32_TRIG");
  printf("== form: %s\n", form ? form : "default (ptc_sin_v / ptc_cos_v)");
  range_stat st[3] = {{"inline path, x >= 0", {0, 0}, {0, 0}, 0},
                      {"inline path, x < 0 (every 61st)", {0, 0}, {0, 0}, 0},
                      {"library path (every 61st)", {0, 0}, {0, 0}, 0}};
  size_t bad[3] = {0, 0, 0};
  if (!s) bad[0] = sweep(es, ec, dx, xs, ys, yc, 0, BOUND_BITS, quick ? 61 : 1, 0, &st[0], &s);
  if (!s) bad[1] = sweep(es, ec, dx, xs, ys, yc, 1, BOUND_BITS, 61, 0x80000000u, &st[1], &s);
  if (!s)
    bad[2] = sweep(es, ec, dx, xs, ys, yc, BOUND_BITS + 1, 0x7F7FFFFFu, 61, 0, &st[2], &s);
  if (s) printf("FAIL: %s\n", ptc_status_message(s));
  CHECK(!s);
  for (int i = 0; !s && i < 3; i++) report(&st[i], bad[i]);
  if (!s) { /* specials */
    const float sp[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 0x1p-127f, INFINITY, -INFINITY, NAN,
                        105615.0f, ctd_f32_from_bits(BOUND_BITS + 1),
                        ctd_f32_from_bits(BOUND_BITS - 1), -105615.0f, 1e30f};
    const int64_t n = (int64_t)(sizeof sp / sizeof *sp);
    memcpy(xs, sp, sizeof sp);
    for (int64_t i = n; i < BATCH; i++) xs[i] = 1.0f;
    s = run(es, dx, xs, ys);
    if (!s) s = run(ec, dx, xs, yc);
    CHECK(!s);
    if (!s) {
      CHECK(ctd_f32_bits(ys[0]) == 0u && ctd_f32_bits(ys[1]) == 0x80000000u); /* sin(+-0) = +-0 */
      CHECK(ys[2] == sp[2] && ys[3] == sp[3] && ys[4] == sp[4]); /* sin of a denormal: itself */
      CHECK(yc[0] == 1.0f && yc[1] == 1.0f && yc[2] == 1.0f);
      CHECK(isnan(ys[5]) && isnan(ys[6]) && isnan(ys[7]));
      CHECK(isnan(yc[5]) && isnan(yc[6]) && isnan(yc[7]));
      for (int64_t i = 8; i < n; i++) {
        CHECK(ulp_err(ys[i], sin((double)sp[i])) <= 2.0);
        CHECK(ulp_err(yc[i], cos((double)sp[i])) <= 2.0);
      }
    }
  }
  ptc_status_destroy(s);
  ptc_executable_release(es);
  ptc_executable_release(ec);
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  if (!ctd_gpu_enter()) return 77;
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  float* xs = malloc((size_t)BATCH * 4);
  float* ys = malloc((size_t)BATCH * 4);
  float* yc = malloc((size_t)BATCH * 4);
  cu_deviceptr dx = 0;
  ptc_status s = xs && ys && yc ? PTC_OK : PTC_ERR(RESOURCE_EXHAUSTED, "host buffers");
  if (!s) s = cuda_alloc((size_t)BATCH * 4, NULL, &dx);
  CHECK(!s);
  if (!s) check_form(ctx, NULL, quick, xs, ys, yc, dx);
  if (!s) check_form(ctx, "libm", quick, xs, ys, yc, dx);
  ptc_status_destroy(s);
  if (dx) cuda_free(dx);
  free(xs);
  free(ys);
  free(yc);
  ptc_context_release(ctx);
  printf("test_cuda_trig: %d passed, %d failed\n", check_total - check_failures, check_failures);
  return check_failures ? 1 : 0;
}
