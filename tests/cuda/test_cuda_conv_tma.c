/* test_cuda_conv_tma.c - the Hopper TMA convolution (backends/cuda/
 * cuda_conv_tma.c, which cuda_ext_conv.c runs the channels-last TF32
 * convolutions it takes on).
 *
 *  --compile-only (needs NVRTC only; exit 77 without it): the refusals
 *    (pure) and the module compiles for sm_90a.
 *  default (needs an sm_90 GPU; exit 77 without one): cuda_conv_tma_run
 *    against a float64 host convolution of the TF32-rounded inputs, on
 *    resnet18's 3x3 layer shapes (56x56x64, 28x28x128 with 128 output
 *    channels a block), a single tile with rows past the plane, a 1x1
 *    window without padding, a 5x3 window, a plane wider than a tile,
 *    strides 2 (3x3 and 1x1) and 2 x 1, 14x14x128 -> 256, with and without
 *    bias and ReLU; each run twice (preparing the weights, then from the
 *    prepared copy: the second result is checked). Every output element is
 *    checked (the output starts as NaN); tolerance per element 1e-4
 *    relative to sum |w x| + |bias| + 1 (the products of TF32-rounded
 *    inputs are exact in f32; the order of the f32 sums differs, and the
 *    tensor copy rounds ties to even where the reference's cvt.rna rounds
 *    them away: one TF32 unit of one input, about 5e-6 here).
 *    PTC_CUDA_CONV_TMA_CFG picks the kernel's other forms (rounding,
 *    tiles, channels a block) for the same checks.
 *  --bench (sm_90 GPU): ms per call (the weights prepared once, as the
 *    backend keeps them) and TFLOP/s of resnet18's batch-32 layer1 and
 *    layer2 and layer3 convolutions (3x3 stride 1, the first blocks' 3x3
 *    and 1x1 stride 2).
 * Exit status: 0 passed, 1 a failure, 77 skipped. */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_conv_tma.h"
#include "backends/cuda/cuda_nvrtc.h"
#include "cuda_test_dev.h"
#include "lib/core/core.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed, failed;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float urand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* round to nearest TF32, ties away from zero (cvt.rna.tf32.f32) */
static float tf32(float v) {
  uint32_t u;
  memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return v;
  u = (u + 0x1000u) & ~0x1fffu;
  memcpy(&v, &u, 4);
  return v;
}

static int check_refusals(void) {
  cuda_conv_tma_desc d = {2, 56, 56, 64, 64, 3, 3, 1, 1, true, 1, 1};
  int bad = 0;
  if (cuda_conv_tma_refusal(9, 0, &d)) bad++, printf("FAIL: resnet18 layer1 refused\n");
  if (!cuda_conv_tma_refusal(8, 0, &d)) bad++, printf("FAIL: sm_80 taken\n");
  cuda_conv_tma_desc e = d;
  e.c = 48;
  if (!cuda_conv_tma_refusal(9, 0, &e)) bad++, printf("FAIL: 48 input channels taken\n");
  e = d, e.oc = 96;
  if (!cuda_conv_tma_refusal(9, 0, &e)) bad++, printf("FAIL: 96 output channels taken\n");
  e = d, e.kh = 60, e.ph = 0;
  if (!cuda_conv_tma_refusal(9, 0, &e)) bad++, printf("FAIL: an empty plane taken\n");
  return bad;
}

static void run_case(ptc_context* ctx, const cuda_device* dev, const cuda_conv_tma_desc* d, bool with_bias) {
  const cu_api* cu = &cuda_libs_get()->cu;
  int sh = d->sh > 0 ? d->sh : 1, sw = d->sw > 0 ? d->sw : 1;
  int oh = (d->h + 2 * d->ph - d->kh) / sh + 1, ow = (d->w + 2 * d->pw - d->kw) / sw + 1;
  size_t xe = (size_t)d->n * d->h * d->w * d->c, we = (size_t)d->oc * d->c * d->kh * d->kw;
  size_t oe = (size_t)d->n * oh * ow * d->oc;
  char what[160];
  snprintf(what, sizeof what, "n%d %dx%dx%d -> %d k%dx%d s%d,%d p%d,%d%s%s", d->n, d->h, d->w, d->c, d->oc,
           d->kh, d->kw, sh, sw, d->ph, d->pw, with_bias ? " bias" : "", d->relu ? " relu" : "");
  float* hx = malloc(xe * 4);
  float* hw = malloc(we * 4);
  float* hb = malloc((size_t)d->oc * 4);
  float* ho = malloc(oe * 4);
  cu_deviceptr px = 0, pw = 0, pb = 0, po = 0, ps = 0;
  if (!hx || !hw || !hb || !ho) {
    printf("FAIL %s: out of host memory\n", what);
    failed++;
    goto out;
  }
  for (size_t i = 0; i < xe; i++) hx[i] = urand();
  for (size_t i = 0; i < we; i++) hw[i] = urand();
  for (int i = 0; i < d->oc; i++) hb[i] = urand();
  if (cuda_alloc(xe * 4, NULL, &px) || cuda_alloc(we * 4, NULL, &pw) ||
      cuda_alloc((size_t)d->oc * 4, NULL, &pb) || cuda_alloc(oe * 4, NULL, &po) ||
      cuda_alloc(cuda_conv_tma_scratch(d), NULL, &ps) || cu->MemcpyHtoDAsync(px, hx, xe * 4, NULL) ||
      cu->MemcpyHtoDAsync(pw, hw, we * 4, NULL) || cu->MemcpyHtoDAsync(pb, hb, (size_t)d->oc * 4, NULL) ||
      cu->MemsetD8Async(po, 0xff, oe * 4, NULL)) {
    printf("FAIL %s: device memory\n", what);
    failed++;
    goto out;
  }
  /* twice: preparing the weights, then from the prepared copy (the output
   * reset to NaN between) */
  ptc_status s = cuda_conv_tma_run(ctx, dev, NULL, d, px, pw, with_bias ? pb : 0, po, ps, false);
  if (!s && cu->MemsetD8Async(po, 0xff, oe * 4, NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "resetting");
  if (!s) s = cuda_conv_tma_run(ctx, dev, NULL, d, px, 0, with_bias ? pb : 0, po, ps, true);
  if (!s && cu->MemcpyDtoHAsync(ho, po, oe * 4, NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "copying back");
  if (!s && cu->StreamSynchronize(NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronising");
  if (s) {
    printf("FAIL %s: %s\n", what, ptc_status_message(s));
    ptc_status_destroy(s);
    failed++;
    goto out;
  }
  long bad = 0;
  double worst = 0;
  for (int n = 0; n < d->n; n++)
    for (int y = 0; y < oh; y++)
      for (int x = 0; x < ow; x++)
        for (int m = 0; m < d->oc; m++) {
          double acc = with_bias ? hb[m] : 0, mag = with_bias ? fabs(hb[m]) : 0;
          for (int r = 0; r < d->kh; r++)
            for (int q = 0; q < d->kw; q++) {
              int iy = y * sh - d->ph + r, ix = x * sw - d->pw + q;
              if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w) continue;
              const float* xv = hx + (((size_t)n * d->h + iy) * d->w + ix) * d->c;
              for (int c = 0; c < d->c; c++) {
                double p = (double)tf32(xv[c]) * tf32(hw[(((size_t)m * d->c + c) * d->kh + r) * d->kw + q]);
                acc += p, mag += fabs(p);
              }
            }
          if (d->relu && acc < 0) acc = 0;
          double got = ho[(((size_t)n * oh + y) * ow + x) * d->oc + m];
          double err = fabs(got - acc) / (mag + 1);
          if (!(err <= 1e-4)) {
            if (bad < 3)
              printf("FAIL %s: out[%d][%d][%d][%d] = %g, expected %g\n", what, n, y, x, m, got, acc);
            bad++;
          }
          if (err > worst) worst = err;
        }
  if (bad) {
    printf("FAIL %s: %ld of %zu elements wrong\n", what, bad, oe);
    failed++;
  } else {
    passed++;
    printf("ok %s (worst relative error %.2g)\n", what, worst);
  }
out:
  if (px) cuda_free(px);
  if (pw) cuda_free(pw);
  if (pb) cuda_free(pb);
  if (po) cuda_free(po);
  if (ps) cuda_free(ps);
  free(hx), free(hw), free(hb), free(ho);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* --bench: ms per call of d (random inputs, timing only). */
static void bench_case(ptc_context* ctx, const cuda_device* dev, const char* name, const cuda_conv_tma_desc* d) {
  const cu_api* cu = &cuda_libs_get()->cu;
  int sh = d->sh > 0 ? d->sh : 1, sw = d->sw > 0 ? d->sw : 1;
  int oh = (d->h + 2 * d->ph - d->kh) / sh + 1, ow = (d->w + 2 * d->pw - d->kw) / sw + 1;
  size_t xe = (size_t)d->n * d->h * d->w * d->c, we = (size_t)d->oc * d->c * d->kh * d->kw;
  size_t oe = (size_t)d->n * oh * ow * d->oc;
  cu_deviceptr px = 0, pw = 0, po = 0, ps = 0;
  double ms = -1;
  /* random values: zeros would flatter the tensor cores (less power) */
  float* hx = malloc(xe * 4);
  float* hw = malloc(we * 4);
  if (hx && hw) {
    for (size_t i = 0; i < xe; i++) hx[i] = urand();
    for (size_t i = 0; i < we; i++) hw[i] = urand();
  }
  if (hx && hw && !cuda_alloc(xe * 4, NULL, &px) && !cuda_alloc(we * 4, NULL, &pw) &&
      !cuda_alloc(oe * 4, NULL, &po) && !cuda_alloc(cuda_conv_tma_scratch(d), NULL, &ps) &&
      !cu->MemcpyHtoDAsync(px, hx, xe * 4, NULL) && !cu->MemcpyHtoDAsync(pw, hw, we * 4, NULL)) {
    int reps = 10;
    for (int round = 0; round < 3; round++) {
      double t0 = now_s();
      ptc_status s = NULL;
      for (int r = 0; r < reps && !s; r++) s = cuda_conv_tma_run(ctx, dev, NULL, d, px, pw, 0, po, ps, r > 0 || round > 0);
      if (!s && cu->StreamSynchronize(NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronising");
      if (s) {
        printf("FAIL bench %s: %s\n", name, ptc_status_message(s));
        ptc_status_destroy(s);
        failed++;
        ms = -1;
        break;
      }
      ms = (now_s() - t0) * 1e3 / reps;
      reps = ms > 0 ? (int)(20.0 / ms) + 5 : 50;
      if (reps > 2000) reps = 2000;
    }
  }
  if (ms > 0) {
    double flop = 2.0 * (double)oe * d->c * d->kh * d->kw;
    printf("bench %-8s n%d %dx%dx%d -> %d k%dx%d s%d: %.4f ms  %.1f TFLOP/s\n", name, d->n, d->h, d->w,
           d->c, d->oc, d->kh, d->kw, sh, ms, flop / ms * 1e-9);
    passed++;
  }
  if (px) cuda_free(px);
  if (pw) cuda_free(pw);
  if (po) cuda_free(po);
  if (ps) cuda_free(ps);
  free(hx), free(hw);
}

int main(int argc, char** argv) {
  bool compile_only = argc > 1 && !strcmp(argv[1], "--compile-only");
  bool do_bench = argc > 1 && !strcmp(argv[1], "--bench");
  if (check_refusals()) return 1;
  printf("refusals: ok\n");
  if (compile_only) {
    const char* why = cuda_nvrtc_unavailable();
    if (why) {
      printf("skipped: %s\n", why);
      return 77;
    }
    ptc_status s = cuda_conv_tma_check_compile();
    if (s) {
      printf("FAIL: the TMA convolution module for sm_90a: %s\n", ptc_status_message(s));
      const char* log = ptc_status_detail(s, "compiler_log");
      if (log) printf("%s\n", log);
      ptc_status_destroy(s);
      return 1;
    }
    printf("TMA convolution module: compiled for sm_90a\n");
    return 0;
  }
  if (!ctd_gpu_enter()) return 77;
  const cuda_device* dev = cuda_device_get();
  if (dev->cc_major != 9 || dev->cc_minor != 0) {
    printf("skipped: sm_%d%d (the TMA convolution is built for sm_90a)\n", dev->cc_major, dev->cc_minor);
    return 77;
  }
  ptc_context* ctx = NULL;
  ptc_status s = ptc_context_create(NULL, &ctx);
  if (s) {
    printf("FAIL: setup: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    return 1;
  }
  if (do_bench) {
    static const cuda_conv_tma_desc l1 = {32, 56, 56, 64, 64, 3, 3, 1, 1, true, 1, 1};
    static const cuda_conv_tma_desc l2 = {32, 28, 28, 128, 128, 3, 3, 1, 1, true, 1, 1};
    bench_case(ctx, dev, "layer1", &l1);
    bench_case(ctx, dev, "layer2", &l2);
    static const cuda_conv_tma_desc l20 = {32, 56, 56, 64, 128, 3, 3, 1, 1, true, 2, 2};
    static const cuda_conv_tma_desc l2d = {32, 56, 56, 64, 128, 1, 1, 0, 0, false, 2, 2};
    bench_case(ctx, dev, "layer2.0", &l20);
    bench_case(ctx, dev, "l2.ds", &l2d);
    static const cuda_conv_tma_desc l3 = {32, 14, 14, 256, 256, 3, 3, 1, 1, true, 1, 1};
    static const cuda_conv_tma_desc l30 = {32, 28, 28, 128, 256, 3, 3, 1, 1, true, 2, 2};
    static const cuda_conv_tma_desc l3d = {32, 28, 28, 128, 256, 1, 1, 0, 0, false, 2, 2};
    bench_case(ctx, dev, "layer3", &l3);
    bench_case(ctx, dev, "layer3.0", &l30);
    bench_case(ctx, dev, "l3.ds", &l3d);
    ptc_context_release(ctx);
    return failed ? 1 : 0;
  }
  static const cuda_conv_tma_desc cases[] = {
      {2, 56, 56, 64, 64, 3, 3, 1, 1, true, 1, 1},   /* resnet18 layer1 */
      {2, 28, 28, 128, 128, 3, 3, 1, 1, true, 1, 1}, /* layer2: two output channel blocks */
      {1, 13, 11, 32, 64, 3, 3, 1, 1, false, 1, 1},  /* one tile, rows past the plane */
      {3, 9, 9, 64, 64, 1, 1, 0, 0, false, 1, 1},    /* 1x1 */
      {1, 10, 12, 32, 128, 5, 3, 2, 1, true, 1, 1},  /* 5x3 window */
      {1, 5, 300, 32, 64, 3, 3, 1, 1, false, 1, 1},  /* wider than a tile (256 columns) */
      {2, 56, 56, 64, 128, 3, 3, 1, 1, true, 2, 2}, /* resnet18 layer2.0: stride 2 */
      {2, 56, 56, 64, 128, 1, 1, 0, 0, false, 2, 2}, /* layer2's 1x1 downsample */
      {1, 15, 17, 32, 64, 3, 3, 1, 1, true, 2, 1},  /* odd plane, strides 2 x 1 */
      {2, 14, 14, 128, 256, 3, 3, 1, 1, true, 1, 1}, /* 128 output channels a block */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_case(ctx, dev, &cases[i], true);
    if (i == 2) run_case(ctx, dev, &cases[i], false);
  }
  ptc_context_release(ctx);
  printf("test_cuda_conv_tma: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
