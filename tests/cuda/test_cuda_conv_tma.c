/* test_cuda_conv_tma.c - the Hopper TMA convolution (backends/cuda/
 * cuda_conv_tma.c, which cuda_ext_conv.c runs the channels-last
 * convolutions it takes on).
 *
 *  --compile-only (needs NVRTC only; exit 77 without it): the refusals
 *    (pure) and the module compiles for sm_90a.
 *  default (needs an sm_90 GPU; exit 77 without one): cuda_conv_tma_run
 *    against a float64 host convolution of the TF32-rounded inputs, on
 *    resnet18's 3x3 layer shapes (56x56x64, 28x28x128 with 128 output
 *    channels a block), a single tile with rows past the plane, a 1x1
 *    window without padding, a 5x3 window, a plane wider than a tile,
 *    strides 2 (3x3 and 1x1) and 2 x 1, 14x14x128 -> 256, with and
 *    without bias and ReLU; bf16 and f16 (values k / 256, exact in both;
 *    outputs within half a unit of their type more); each run twice
 *    (preparing the weights, then from the prepared copy: the second result
 *    is checked). Every output element is checked (the output starts as
 *    NaN); tolerance per element 1e-4 relative to sum |w x| + |bias| + 1
 *    (the products of TF32-rounded inputs are exact in f32; only the order
 *    of the f32 sums differs). The grid is capped at 5 blocks
 *    (PTC_CUDA_CONV_TMA_CFG unless set), so blocks take several work
 *    items; PTC_CUDA_CONV_TMA_CFG picks the kernel's other forms (rounding,
 *    tiles, channels a block) for the same checks.
 *  --bench (sm_90 GPU): ms per call (the weights prepared once, as the
 *    backend keeps them) and TFLOP/s, f32 and bf16, of resnet18's
 *    batch-32 layer1, layer2 and layer3 convolutions (3x3 stride 1, the
 *    first blocks' 3x3 and 1x1 stride 2).
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

/* Element type dt (0 f32, 1 bf16, 2 f16) of cuda_conv_tma_desc. */
static size_t esize(int dt) { return dt ? 2 : 4; }

/* A random value of type dt: any f32 for f32; k / 256 with |k| <= 256 for
 * the 16-bit types (exact in both, so the host and the packed copy agree). */
static float rand_of(int dt) {
  float v = urand();
  return dt ? (float)(int)(v * 256.0f) / 256.0f : v;
}

/* Packs n exact values into type dt at dst (f16: normal values and zero). */
static void pack(const float* src, size_t n, int dt, void* dst) {
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &src[i], 4);
    if (dt == 0) {
      memcpy((char*)dst + 4 * i, &u, 4);
      continue;
    }
    uint16_t h;
    if (dt == 1)
      h = (uint16_t)(u >> 16);
    else if ((u & 0x7fffffffu) == 0)
      h = (uint16_t)(u >> 16);
    else
      h = (uint16_t)((u >> 16 & 0x8000u) | ((((u >> 23) & 0xffu) - 112u) << 10) | ((u >> 13) & 0x3ffu));
    memcpy((char*)dst + 2 * i, &h, 2);
  }
}

/* Element i of a buffer of type dt as a float. */
static float unpack(const void* src, size_t i, int dt) {
  uint32_t u;
  float f;
  if (dt == 0) {
    memcpy(&f, (const char*)src + 4 * i, 4);
    return f;
  }
  uint16_t h;
  memcpy(&h, (const char*)src + 2 * i, 2);
  if (dt == 1) {
    u = (uint32_t)h << 16;
    memcpy(&f, &u, 4);
    return f;
  }
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return (float)((h & 0x8000) ? -v : v);
}

static int check_refusals(void) {
  cuda_conv_tma_desc d = {2, 56, 56, 64, 64, 3, 3, 1, 1, true, 1, 1, 0};
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
  static const char* const dts[] = {"f32", "bf16", "f16"};
  snprintf(what, sizeof what, "%s n%d %dx%dx%d -> %d k%dx%d s%d,%d p%d,%d%s%s", dts[d->dt], d->n, d->h, d->w,
           d->c, d->oc, d->kh, d->kw, sh, sw, d->ph, d->pw, with_bias ? " bias" : "", d->relu ? " relu" : "");
  size_t es = esize(d->dt);
  float* hx = malloc(xe * 4);
  float* hw = malloc(we * 4);
  float* hb = malloc((size_t)d->oc * 4);
  void* ho = malloc(oe * 4);
  void* hp = malloc((xe > we ? xe : we) * 4);
  cu_deviceptr px = 0, pw = 0, pb = 0, po = 0, ps = 0;
  if (!hx || !hw || !hb || !ho || !hp) {
    printf("FAIL %s: out of host memory\n", what);
    failed++;
    goto out;
  }
  for (size_t i = 0; i < xe; i++) hx[i] = rand_of(d->dt);
  for (size_t i = 0; i < we; i++) hw[i] = rand_of(d->dt);
  for (int i = 0; i < d->oc; i++) hb[i] = rand_of(d->dt);
  bool dev_ok = !cuda_alloc(xe * es, NULL, &px) && !cuda_alloc(we * es, NULL, &pw) &&
                !cuda_alloc((size_t)d->oc * es, NULL, &pb) && !cuda_alloc(oe * es, NULL, &po) &&
                !cuda_alloc(cuda_conv_tma_scratch(d), NULL, &ps);
  /* one staging buffer: each copy completes before the next pack */
  if (dev_ok) pack(hx, xe, d->dt, hp), dev_ok = !cu->MemcpyHtoDAsync(px, hp, xe * es, NULL) && !cu->StreamSynchronize(NULL);
  if (dev_ok) pack(hw, we, d->dt, hp), dev_ok = !cu->MemcpyHtoDAsync(pw, hp, we * es, NULL) && !cu->StreamSynchronize(NULL);
  if (dev_ok)
    pack(hb, (size_t)d->oc, d->dt, hp),
        dev_ok = !cu->MemcpyHtoDAsync(pb, hp, (size_t)d->oc * es, NULL) && !cu->StreamSynchronize(NULL);
  if (!dev_ok || cu->MemsetD8Async(po, 0xff, oe * es, NULL)) {
    printf("FAIL %s: device memory\n", what);
    failed++;
    goto out;
  }
  /* twice: preparing the weights, then from the prepared copy (the output
   * reset to NaN between) */
  ptc_status s = cuda_conv_tma_run(ctx, dev, NULL, d, px, pw, with_bias ? pb : 0, po, ps, false);
  if (!s && cu->MemsetD8Async(po, 0xff, oe * es, NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "resetting");
  if (!s) s = cuda_conv_tma_run(ctx, dev, NULL, d, px, 0, with_bias ? pb : 0, po, ps, true);
  if (!s && cu->MemcpyDtoHAsync(ho, po, oe * es, NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "copying back");
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
                float xc = xv[c], wc = hw[(((size_t)m * d->c + c) * d->kh + r) * d->kw + q];
                double p = d->dt ? (double)xc * wc : (double)tf32(xc) * tf32(wc);
                acc += p, mag += fabs(p);
              }
            }
          if (d->relu && acc < 0) acc = 0;
          double got = unpack(ho, (((size_t)n * oh + y) * ow + x) * d->oc + m, d->dt);
          /* 16-bit outputs: their own rounding (half a unit: 2^-9 bf16,
           * 2^-12 f16) on top */
          double ulp = d->dt == 1 ? 1.0 / 256 : d->dt == 2 ? 1.0 / 2048 : 0;
          double err = (fabs(got - acc) - ulp * fabs(acc)) / (mag + 1);
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
  free(hx), free(hw), free(hb), free(ho), free(hp);
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
  size_t es = esize(d->dt);
  float* hx = malloc(xe * 4);
  float* hw = malloc(we * 4);
  void* hp = malloc((xe > we ? xe : we) * 4);
  if (hx && hw && hp) {
    for (size_t i = 0; i < xe; i++) hx[i] = rand_of(d->dt);
    for (size_t i = 0; i < we; i++) hw[i] = rand_of(d->dt);
  }
  bool ok = hx && hw && hp && !cuda_alloc(xe * es, NULL, &px) && !cuda_alloc(we * es, NULL, &pw) &&
            !cuda_alloc(oe * es, NULL, &po) && !cuda_alloc(cuda_conv_tma_scratch(d), NULL, &ps);
  if (ok) pack(hx, xe, d->dt, hp), ok = !cu->MemcpyHtoDAsync(px, hp, xe * es, NULL) && !cu->StreamSynchronize(NULL);
  if (ok) pack(hw, we, d->dt, hp), ok = !cu->MemcpyHtoDAsync(pw, hp, we * es, NULL) && !cu->StreamSynchronize(NULL);
  if (ok) {
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
    printf("bench %-4s %-8s n%d %dx%dx%d -> %d k%dx%d s%d: %.4f ms  %.1f TFLOP/s\n", d->dt ? "bf16" : "f32",
           name, d->n, d->h, d->w, d->c, d->oc, d->kh, d->kw, sh, ms, flop / ms * 1e-9);
    passed++;
  }
  if (px) cuda_free(px);
  if (pw) cuda_free(pw);
  if (po) cuda_free(po);
  if (ps) cuda_free(ps);
  free(hx), free(hw), free(hp);
}

int main(int argc, char** argv) {
  bool compile_only = argc > 1 && !strcmp(argv[1], "--compile-only");
  bool do_bench = argc > 1 && !strcmp(argv[1], "--bench");
  /* the checks on a grid of 5 blocks, so blocks take several work items
   * (rings and barrier phases across items, as in the models); before the
   * kernel's configuration is first read */
  if (!do_bench) setenv("PTC_CUDA_CONV_TMA_CFG", "0,2,8,-1,0,5", 0);
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
    static const struct {
      const char* name;
      cuda_conv_tma_desc d;
    } layers[] = {
        {"layer1", {32, 56, 56, 64, 64, 3, 3, 1, 1, true, 1, 1, 0}},
        {"layer2", {32, 28, 28, 128, 128, 3, 3, 1, 1, true, 1, 1, 0}},
        {"layer2.0", {32, 56, 56, 64, 128, 3, 3, 1, 1, true, 2, 2, 0}},
        {"l2.ds", {32, 56, 56, 64, 128, 1, 1, 0, 0, false, 2, 2, 0}},
        {"layer3", {32, 14, 14, 256, 256, 3, 3, 1, 1, true, 1, 1, 0}},
        {"layer3.0", {32, 28, 28, 128, 256, 3, 3, 1, 1, true, 2, 2, 0}},
        {"l3.ds", {32, 28, 28, 128, 256, 1, 1, 0, 0, false, 2, 2, 0}},
    };
    for (int dt = 0; dt < 2; dt++)
      for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        cuda_conv_tma_desc d = layers[i].d;
        d.dt = dt;
        bench_case(ctx, dev, layers[i].name, &d);
      }
    ptc_context_release(ctx);
    return failed ? 1 : 0;
  }
  static const cuda_conv_tma_desc cases[] = {
      {2, 56, 56, 64, 64, 3, 3, 1, 1, true, 1, 1, 0},   /* resnet18 layer1 */
      {2, 28, 28, 128, 128, 3, 3, 1, 1, true, 1, 1, 0}, /* layer2: two output channel blocks */
      {1, 13, 11, 32, 64, 3, 3, 1, 1, false, 1, 1, 0},  /* one tile, rows past the plane */
      {3, 9, 9, 64, 64, 1, 1, 0, 0, false, 1, 1, 0},    /* 1x1 */
      {1, 10, 12, 32, 128, 5, 3, 2, 1, true, 1, 1, 0},  /* 5x3 window */
      {1, 5, 300, 32, 64, 3, 3, 1, 1, false, 1, 1, 0},  /* wider than a tile (256 columns) */
      {2, 56, 56, 64, 128, 3, 3, 1, 1, true, 2, 2, 0}, /* resnet18 layer2.0: stride 2 */
      {2, 56, 56, 64, 128, 1, 1, 0, 0, false, 2, 2, 0}, /* layer2's 1x1 downsample */
      {1, 15, 17, 32, 64, 3, 3, 1, 1, true, 2, 1, 0},  /* odd plane, strides 2 x 1 */
      {2, 14, 14, 128, 256, 3, 3, 1, 1, true, 1, 1, 0}, /* 128 output channels a block */
      {2, 56, 56, 64, 64, 3, 3, 1, 1, true, 1, 1, 1},    /* bf16: layer1 */
      {2, 28, 28, 128, 128, 3, 3, 1, 1, true, 1, 1, 1},  /* bf16: 128 channels a block */
      {2, 56, 56, 64, 128, 3, 3, 1, 1, true, 2, 2, 1},   /* bf16: stride 2 */
      {1, 13, 11, 64, 64, 3, 3, 1, 1, false, 1, 1, 2},   /* f16: rows past the plane */
      {2, 28, 28, 128, 256, 1, 1, 0, 0, false, 2, 2, 2}, /* f16: 1x1 stride 2 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_case(ctx, dev, &cases[i], true);
    if (i == 2) run_case(ctx, dev, &cases[i], false);
  }
  ptc_context_release(ctx);
  printf("test_cuda_conv_tma: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
