/* test_cuda_conv.c - the implicit-GEMM convolution (backends/cuda/cuda_conv_igemm.c).
 *
 *  --compile-only (needs NVRTC only; exit 77 without it): the launch-shape
 *    choice and the refusals (pure), and the module (cuda_conv_igemm.cuh,
 *    every type) compiles for sm_80 and sm_90.
 *  default (needs an sm_80+ GPU; exit 77 without one): cuda_conv_igemm
 *    against a float64 host convolution of the same (dtype-rounded) inputs:
 *    f16, bf16 and f32 as TF32; 1x1 / 3x3 / 5x3 / 7x7 windows, strides 1 and
 *    2, padding, dilation, groups (depthwise too), ragged channel counts and
 *    planes, odd and even output planes (single and paired stores), bias
 *    with beta and every activation, split K (forced and chosen), weights
 *    whose rows are not 16-byte aligned (the aligned copy), input views
 *    with a channel slice and with transposed H/W strides, 1-D (H = 1).
 *    Tolerance per element relative to sum |w x| (+ |beta bias| + 1):
 *    f16 2e-3, bf16 1e-2, TF32 3e-3. Every output element is checked (the
 *    output starts as NaN).
 *    Channels-last (every case again with the input [N][H][W][C], the
 *    output [N][OH][OW][OC], and both, and split K with both): the t*v
 *    kernels' cp.async B tiles and the channels-last epilogue.
 *    TF32 exactness: weights and inputs that round up to TF32 give exactly
 *    the sum of the rounded products in both K orders, and from a
 *    channels-last input (both t*v kernels; one K step, and four with
 *    positive values).
 *    Kept weight copies (cuda_conv_wcache): after the weights are zeroed,
 *    a call with the table slot still reads the first call's copy.
 *    Pooling (max_pool2d, avg_pool2d, adaptive_avg_pool2d through a one-node
 *    graph) against the ref backend in f32, bf16, f16, f64, with the
 *    kernel's fast paths (3x3 and other max windows, the vector form of
 *    3x3 stride-2 windows on 16-byte aligned rows, dilation, NaN; whole
 *    plane averages, divisor_override) and without (PTC_CUDA_POOL_FAST=0).
 *    The convolution extern (cuda_ext_conv.c) through a one-node graph
 *    (conv2d [+ bias] [+ relu]) against the ref backend in f32, bf16, f16
 *    with the default policy and PTC_CUDA_CONV_IGEMM=0, PTC_CUDA_CONV_VEC
 *    on and off: small planes (the wide im2col GEMM: vector im2col, the
 *    product back into NCHW with bias and relu fused, and the general
 *    kernels where sizes are not whole vectors), 1x1 stride 2 and 1,
 *    groups, batch 1, a plane of per-image GEMMs; residual blocks (conv,
 *    relu, conv, add, relu, conv; a stem and a max pool in front; a
 *    stride-2 last convolution onto a small plane) with the lowering's
 *    channels-last activations (planes above 196 pixels) and again with
 *    PTC_CUDA_CONV_NHWC=0. The wide im2col from channels-last inputs (the
 *    transposing kernel).
 *    The cases of at most 64 output channels per group run again on the
 *    other block size (PTC_CUDA_CONV_W4: 8-warp or 4-warp kernels).
 *    The wgmma kernels (cuda_conv_wg.c; on sm_90 only): every case above
 *    they take and the wg cases (3x3 / 1x1 / 5x5 / 3x2 windows, strides 1,
 *    2, 3, padding 0..2, channel tails, output channels past a tile, planes
 *    whose flat rows span tiles), in f16, bf16 and TF32, with the chosen
 *    tile shape and each of the three forced (PTC_CUDA_CONV_WG_CFG), and
 *    (bf16, TF32) the persistent kernels on a grid of 3 blocks
 *    (PTC_CUDA_CONV_WG_GRID: each block runs many tiles); the TF32
 *    exactness case; the graph cases with PTC_CUDA_CONV_WG=1 (the default
 *    graph cases run the selective mode where it picks a shape). Direct
 *    calls set PTC_CUDA_CONV_WG=1 (every shape). Pure: which resnet18
 *    layers the selective mode (PTC_CUDA_CONV_WG=3) picks.
 *  --tf32-exact: only the TF32 exactness cases (for the rounding knobs).
 *  --bench: resnet18 batch-32 convolutions (bf16, f32 as TF32): the
 *    implicit GEMM with the chosen split, the convolution extern through a
 *    one-node graph with the default policy, the wgmma kernels (sm_90;
 *    chosen tile shape and each forced one, and the extern with them
 *    tried first), ms and TFLOP/s; with PTC_BENCH_FULL=1 also splits
 *    1/2/4/8 and the extern with PTC_CUDA_CONV_IGEMM=0 (im2col + GEMM), 2,
 *    and PTC_CUDA_CONV_VEC=0 (-1 when not run). PTC_BENCH_LAYERS=l1,l4
 *    and PTC_BENCH_DTYPE=bf16|tf32 restrict it.
 *  --profile: the selected layers (as --bench) once through the implicit
 *    GEMM and once through the wgmma kernels, for ncu.
 * Exit status: 0 passed, 1 a failure, 77 skipped.
 */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_conv_igemm.h"
#include "backends/cuda/cuda_conv_wg.h"
#include "backends/cuda/cuda_rt.h"
#include "cuda_test_dev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ptc_context* ctx;
static const cuda_device* dev;
static int failed, passed;
static bool use_wg; /* run_case / run_tf32_exact: the wgmma kernels (cuda_conv_wg) */
static int wg_skipped;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char* dname(int32_t dt) { return dt == PTC_F32 ? "tf32" : ptc_dtype_name(dt); }

/* One case: sizes, window, and how x / w are laid out in memory. */
typedef struct ccase {
  int64_t n, c, h, w, oc, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int bias, act;
  int x_layout;  /* 0 contiguous, 1 channel slice of a 2C tensor, 2 H/W transposed */
  int w_pad;     /* extra elements after each weight row (unaligned rows) */
  int split;     /* PTC_CUDA_CONV_SPLIT for this case (0: chosen) */
  int w_tr;      /* weights stored [OC][Cg][KW][KH] (strides, not a copy) */
  int order;     /* PTC_CUDA_CONV_TAP: 0 chosen, 1 channel-major, 2 tap-major */
  int nhwc;      /* channels-last: 1 input (x_layout 0 only), 2 output, 3 both */
} ccase;

static void fill_desc(const ccase* c, int32_t dt, cuda_conv_desc* d, int64_t* x_elems, int64_t* w_elems) {
  memset(d, 0, sizeof *d);
  d->dtype = dt;
  d->act = c->act;
  d->n = c->n, d->c = c->c, d->h = c->h, d->w = c->w, d->oc = c->oc;
  d->kh = c->kh, d->kw = c->kw, d->sh = c->sh, d->sw = c->sw, d->ph = c->ph, d->pw = c->pw;
  d->dh = c->dh, d->dw = c->dw, d->groups = c->groups;
  d->oh = (c->h + 2 * c->ph - c->dh * (c->kh - 1) - 1) / c->sh + 1;
  d->ow = (c->w + 2 * c->pw - c->dw * (c->kw - 1) - 1) / c->sw + 1;
  int64_t hw = c->h * c->w;
  if (c->x_layout == 1) { /* x = big[:, C:2C] of a [N, 2C, H, W] tensor */
    d->xs[0] = 2 * c->c * hw, d->xs[1] = hw, d->xs[2] = c->w, d->xs[3] = 1;
    *x_elems = c->n * 2 * c->c * hw;
  } else if (c->x_layout == 2) { /* x = t.transpose(2, 3) of a [N, C, W, H] tensor */
    d->xs[0] = c->c * hw, d->xs[1] = hw, d->xs[2] = 1, d->xs[3] = c->h;
    *x_elems = c->n * c->c * hw;
  } else if (c->nhwc & 1) { /* x [N][H][W][C] */
    d->xs[0] = c->c * hw, d->xs[1] = 1, d->xs[2] = c->w * c->c, d->xs[3] = c->c;
    *x_elems = c->n * c->c * hw;
  } else {
    d->xs[0] = c->c * hw, d->xs[1] = hw, d->xs[2] = c->w, d->xs[3] = 1;
    *x_elems = c->n * c->c * hw;
  }
  d->out_nhwc = (c->nhwc & 2) != 0;
  int64_t cg = c->c / c->groups, kdim = cg * c->kh * c->kw;
  d->ws[0] = kdim + c->w_pad, d->ws[1] = c->kh * c->kw, d->ws[2] = c->kw, d->ws[3] = 1;
  if (c->w_tr) d->ws[2] = 1, d->ws[3] = c->kh;
  *w_elems = c->oc * d->ws[0];
  d->bias_st = 1;
  d->beta = c->bias ? 0.75 : 0.0;
}

static void run_case(const ccase* c, int32_t dt) {
  const cu_api* cu = &cuda_libs_get()->cu;
  cuda_conv_desc d;
  int64_t xe = 0, we = 0;
  fill_desc(c, dt, &d, &xe, &we);
  size_t es = ptc_dtype_size(dt);
  int64_t cg = c->c / c->groups, ocg = c->oc / c->groups;
  int64_t ohw = d.oh * d.ow, oe = c->n * c->oc * ohw;
  char what[256];
  snprintf(what, sizeof what,
           "%s n%lld c%lld %lldx%lld oc%lld k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld g%lld%s act%d "
           "x%d wpad%d split%d wtr%d order%d nhwc%d w4 %s",
           dname(dt), (long long)c->n, (long long)c->c, (long long)c->h, (long long)c->w,
           (long long)c->oc, (long long)c->kh, (long long)c->kw, (long long)c->sh, (long long)c->sw,
           (long long)c->ph, (long long)c->pw, (long long)c->dh, (long long)c->dw,
           (long long)c->groups, c->bias ? " bias" : "", c->act, c->x_layout, c->w_pad, c->split,
           c->w_tr, c->order, c->nhwc, getenv("PTC_CUDA_CONV_W4") ? getenv("PTC_CUDA_CONV_W4") : "-");
  if (use_wg) {
    cuda_conv_wg_plan pl;
    const char* fc = getenv("PTC_CUDA_CONV_WG_CFG");
    if (cuda_conv_wg_refusal(dev->cc_major, dev->cc_minor, &d, true) ||
        !cuda_conv_wg_shape(&d, dev->sm_count, dev->max_smem_optin, fc ? atoi(fc) : -1, &pl)) {
      wg_skipped++;
      return;
    }
    snprintf(what + strlen(what), sizeof what - strlen(what), " wg cfg %d", pl.cfg);
  }
  void* hx = calloc((size_t)xe + 8, es);
  void* hw = calloc((size_t)we + 8, es);
  void* hb = calloc((size_t)c->oc + 8, es);
  void* ho = calloc((size_t)oe + 8, es);
  double* xd = calloc((size_t)xe + 1, sizeof(double));
  double* wd = calloc((size_t)we + 1, sizeof(double));
  double* bd = calloc((size_t)c->oc + 1, sizeof(double));
  cu_deviceptr px = 0, pw = 0, pb = 0, po = 0;
  if (!hx || !hw || !hb || !ho || !xd || !wd || !bd) {
    printf("FAIL %s: out of host memory\n", what);
    failed++;
    goto out;
  }
  for (int64_t i = 0; i < xe; i++) xd[i] = ctd_store(hx, dt, i, ctd_urand());
  for (int64_t i = 0; i < we; i++) wd[i] = ctd_store(hw, dt, i, ctd_urand());
  for (int64_t i = 0; i < c->oc; i++) bd[i] = ctd_store(hb, dt, i, ctd_urand());
  int64_t x_off = c->x_layout == 1 ? c->c * c->h * c->w : 0; /* the slice's first channel */
  if (cuda_alloc((size_t)xe * es + 16, NULL, &px) || cuda_alloc((size_t)we * es + 16, NULL, &pw) ||
      cuda_alloc((size_t)c->oc * es + 16, NULL, &pb) || cuda_alloc((size_t)oe * es + 16, NULL, &po) ||
      cu->MemcpyHtoDAsync(px, hx, (size_t)xe * es, NULL) ||
      cu->MemcpyHtoDAsync(pw, hw, (size_t)we * es, NULL) ||
      cu->MemcpyHtoDAsync(pb, hb, (size_t)c->oc * es, NULL) ||
      cu->MemsetD8Async(po, 0xff, (size_t)oe * es, NULL)) {
    printf("FAIL %s: device memory\n", what);
    failed++;
    goto out;
  }
  char sv[16];
  snprintf(sv, sizeof sv, "%d", c->split);
  if (c->split) setenv("PTC_CUDA_CONV_SPLIT", sv, 1);
  if (c->order) setenv("PTC_CUDA_CONV_TAP", c->order == 2 ? "1" : "0", 1);
  bool done = false;
  ptc_status s = use_wg ? cuda_conv_wg(ctx, dev, NULL, &d, true, px + (cu_deviceptr)(x_off * (int64_t)es), pw,
                                       c->bias ? pb : 0, po, &done)
                        : cuda_conv_igemm(ctx, dev, NULL, &d, true, px + (cu_deviceptr)(x_off * (int64_t)es),
                                          pw, c->bias ? pb : 0, po, &done);
  unsetenv("PTC_CUDA_CONV_SPLIT");
  unsetenv("PTC_CUDA_CONV_TAP");
  if (!s && cu->StreamSynchronize(NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronize failed");
  if (!s && cu->MemcpyDtoHAsync(ho, po, (size_t)oe * es, NULL) != CU_SUCCESS)
    s = PTC_ERR(INTERNAL, "copy back failed");
  if (!s) cu->StreamSynchronize(NULL);
  if (s || !done) {
    printf("FAIL %s: %s\n", what, s ? ptc_status_message(s) : "not taken");
    ptc_status_destroy(s);
    failed++;
    goto out;
  }
  double tol = dt == PTC_F16 ? 2e-3 : dt == PTC_BF16 ? 1e-2 : 3e-3, worst = 0;
  bool bad = false;
  for (int64_t img = 0; img < c->n && !bad; img++)
    for (int64_t o = 0; o < c->oc && !bad; o++) {
      int64_t g = o / ocg;
      for (int64_t oy = 0; oy < d.oh && !bad; oy++)
        for (int64_t ox = 0; ox < d.ow; ox++) {
          double acc = 0, mag = 0;
          for (int64_t q = 0; q < cg; q++)
            for (int64_t ky = 0; ky < c->kh; ky++)
              for (int64_t kx = 0; kx < c->kw; kx++) {
                int64_t iy = oy * c->sh - c->ph + ky * c->dh, ix = ox * c->sw - c->pw + kx * c->dw;
                if (iy < 0 || iy >= c->h || ix < 0 || ix >= c->w) continue;
                double xv = xd[x_off + img * d.xs[0] + (g * cg + q) * d.xs[1] + iy * d.xs[2] + ix * d.xs[3]];
                double wv = wd[o * d.ws[0] + q * d.ws[1] + ky * d.ws[2] + kx * d.ws[3]];
                acc += xv * wv;
                mag += fabs(xv * wv);
              }
          double scale = mag + 1;
          if (c->bias) {
            acc += d.beta * bd[o];
            scale += fabs(d.beta * bd[o]);
          }
          double want = ctd_act_ref(c->act, acc);
          int64_t oi = (c->nhwc & 2) ? ((img * d.oh + oy) * d.ow + ox) * c->oc + o
                                     : ((img * c->oc + o) * d.oh + oy) * d.ow + ox;
          double got = ctd_load(ho, dt, oi);
          double err = fabs(got - want) / scale;
          if (!(err <= tol)) {
            printf("FAIL %s: [%lld, %lld, %lld, %lld] = %g, expected %g\n", what, (long long)img,
                   (long long)o, (long long)oy, (long long)ox, got, want);
            bad = true;
            break;
          }
          if (err > worst) worst = err;
        }
    }
  if (bad) {
    failed++;
  } else {
    passed++;
    if (getenv("PTC_TEST_VERBOSE")) printf("ok %s: max rel err %.2e\n", what, worst);
  }
out:
  cuda_free(px);
  cuda_free(pw);
  cuda_free(pb);
  cuda_free(po);
  free(hx);
  free(hw);
  free(hb);
  free(ho);
  free(xd);
  free(wd);
  free(bd);
}

static const ccase cases[] = {
    /* n  c   h   w   oc  kh kw sh sw ph pw dh dw g  bias act              x  wpad split */
    {4, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},     /* BM 64, paired */
    {3, 32, 15, 13, 96, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},     /* BM 128 ragged */
    {2, 40, 9, 7, 24, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},       /* 1x1 s1 */
    {2, 64, 14, 14, 128, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},    /* 1x1 s2 */
    {2, 3, 33, 31, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1, 0, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},      /* 7x7, K 147 */
    {2, 6, 17, 19, 10, 5, 3, 2, 1, 2, 1, 1, 2, 1, 1, IR_ACT_SILU, 0, 0, 0, 0, 0, 0},      /* 5x3 dil */
    {2, 32, 10, 10, 48, 3, 3, 1, 1, 1, 1, 1, 1, 4, 1, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},     /* groups */
    {3, 16, 9, 8, 16, 3, 3, 1, 1, 2, 2, 2, 2, 16, 1, IR_ACT_GELU, 0, 0, 0, 0, 0, 0},      /* depthwise */
    {2, 128, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, IR_ACT_RELU, 0, 0, 3, 0, 0, 0},      /* split 3 */
    {1, 256, 6, 6, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},     /* K 2304 */
    {2, 256, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},     /* chosen split */
    {2, 24, 12, 11, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, IR_ACT_TANH, 1, 0, 0, 0, 0, 0},     /* channel slice */
    {2, 24, 12, 11, 40, 3, 3, 2, 1, 1, 0, 1, 1, 1, 1, IR_ACT_SIGMOID, 2, 3, 0, 0, 0, 0},  /* H/W transposed, wpad */
    {3, 8, 1, 50, 16, 1, 5, 1, 1, 0, 2, 1, 1, 1, 1, IR_ACT_GELU_TANH, 0, 0, 0, 0, 0, 0},  /* 1-D */
    {1, 5, 3, 3, 7, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},         /* one pixel out */
    {2, 64, 20, 20, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 16, 0, 0, 0},    /* split 16 */
    {2, 48, 9, 10, 72, 3, 2, 1, 2, 1, 0, 1, 1, 1, 1, IR_ACT_RELU, 0, 0, 0, 1, 0, 0},   /* weights KW/KH swapped */
    {2, 40, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 2, 0, 0, 0},       /* channel tail, split */
};

/* Every case in each type with the chosen K order, and in bf16 and TF32
 * with the other order forced. */
static void run_all(void) {
  static const int32_t dts[3] = {PTC_BF16, PTC_F16, PTC_F32};
  for (int di = 0; di < 3; di++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      run_case(&cases[i], dts[di]);
      if (cases[i].oc / cases[i].groups <= 64) { /* BM 64: the 8- and 4-warp kernels both */
        cuda_conv_desc d0;
        int64_t xe0, we0;
        fill_desc(&cases[i], dts[di], &d0, &xe0, &we0);
        cuda_conv_shape sh0;
        cuda_conv_igemm_shape(&d0, dev->sm_count, dev->max_smem_optin, &sh0);
        setenv("PTC_CUDA_CONV_W4", sh0.threads == 128 ? "0" : "1", 1);
        run_case(&cases[i], dts[di]);
        unsetenv("PTC_CUDA_CONV_W4");
      }
      if (dts[di] == PTC_F16) continue;
      cuda_conv_desc d;
      int64_t xe, we;
      fill_desc(&cases[i], dts[di], &d, &xe, &we);
      cuda_conv_shape sh;
      cuda_conv_igemm_shape(&d, dev->sm_count, dev->max_smem_optin, &sh);
      ccase c = cases[i];
      c.order = sh.tap ? 1 : 2;
      run_case(&c, dts[di]);
    }
  /* channels-last input (cp.async B tiles when tap-major and the channels
   * fill 16-byte vectors; else the gathers through its strides) and output
   * ([N][OH][OW][OC] epilogue, split K too), each alone and both */
  for (int di = 0; di < 3; di++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
      for (int io = 1; io <= 3; io++) {
        ccase c = cases[i];
        if (c.x_layout != 0 && (io & 1)) continue;
        c.nhwc = io;
        run_case(&c, dts[di]);
        if (io == 3 && !c.split && c.c / c.groups >= 16) { /* and split K */
          c.split = 3;
          run_case(&c, dts[di]);
        }
      }
}

/* The wgmma kernels' own cases: resnet-like layers (small batches), strides
 * 2 and 3 (stride phases), 1x1 stride 2, padding 0 and 2, channel tails
 * (C not a multiple of the K stage), output channels past a tile, 5x5 and
 * 3x2 windows, odd planes, x views (channel slice, H/W transposed). */
static const ccase wg_cases[] = {
    /* n  c   h   w   oc  kh kw sh sw ph pw dh dw g  bias act              x  wpad split */
    {1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},     /* layer1 */
    {2, 64, 56, 56, 128, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},    /* layer2.0 */
    {2, 64, 56, 56, 128, 1, 1, 2, 2, 0, 0, 1, 1, 1, 1, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},    /* downsample */
    {2, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},
    {1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},
    {2, 256, 14, 14, 512, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},
    {1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},
    {2, 24, 19, 23, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, IR_ACT_SILU, 0, 0, 0, 0, 0, 0},    /* C tail */
    {3, 40, 17, 15, 200, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, IR_ACT_NONE, 0, 0, 0, 0, 0, 0},    /* N tail, odd */
    {2, 32, 21, 20, 48, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0, IR_ACT_GELU, 0, 0, 0, 0, 0, 0},     /* 5x5 */
    {2, 16, 22, 25, 72, 3, 2, 3, 2, 0, 1, 1, 1, 1, 1, IR_ACT_RELU, 0, 0, 0, 0, 0, 0},     /* 3x2 s3,2 */
    {2, 48, 13, 11, 64, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, IR_ACT_NONE, 1, 0, 0, 0, 0, 0},     /* no pad, slice */
    {2, 32, 12, 14, 64, 3, 3, 2, 1, 2, 1, 1, 1, 1, 1, IR_ACT_TANH, 2, 3, 0, 0, 0, 0},     /* H/W transposed */
    {1, 8, 9, 9, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, IR_ACT_SIGMOID, 0, 0, 0, 0, 0, 0},     /* 1x1, 8 ch */
    {5, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, IR_ACT_NONE, 0, 0, 0, 1, 0, 0},       /* weights KW/KH */
};

/* The wgmma kernels (sm_90 only): the cases above and every ccase they
 * take, each type, the chosen tile shape and each forced one. */
static void run_all_wg(void) {
  if (dev->cc_major != 9 || dev->cc_minor != 0) {
    printf("wgmma convolution: skipped (sm_%d%d)\n", dev->cc_major, dev->cc_minor);
    return;
  }
  static const int32_t dts[3] = {PTC_BF16, PTC_F32, PTC_F16};
  int before = failed, ran = passed;
  use_wg = true;
  setenv("PTC_CUDA_CONV_WG", "1", 1); /* every shape (not the selective default) */
  for (int cfg = -1; cfg < 3; cfg++) {
    char cv[8];
    snprintf(cv, sizeof cv, "%d", cfg);
    if (cfg >= 0) setenv("PTC_CUDA_CONV_WG_CFG", cv, 1);
    for (int di = 0; di < 3; di++) {
      if (cfg >= 0 && di == 2) continue; /* f16: the chosen shape only */
      for (size_t i = 0; i < sizeof wg_cases / sizeof wg_cases[0]; i++) run_case(&wg_cases[i], dts[di]);
      for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], dts[di]);
    }
    unsetenv("PTC_CUDA_CONV_WG_CFG");
  }
  /* the persistent kernels with a grid of 3 blocks: each runs many tiles
   * (images, M tiles, N tiles) as one stream of K stages */
  setenv("PTC_CUDA_CONV_WG_GRID", "3", 1);
  for (int di = 0; di < 2; di++) {
    for (size_t i = 0; i < sizeof wg_cases / sizeof wg_cases[0]; i++) run_case(&wg_cases[i], dts[di]);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i], dts[di]);
  }
  unsetenv("PTC_CUDA_CONV_WG_GRID");
  use_wg = false;
  unsetenv("PTC_CUDA_CONV_WG");
  printf("wgmma convolution: %d cases passed, %d failed, %d not taken (refused or no tile shape)\n",
         passed - ran, failed - before, wg_skipped);
}

/* ---- TF32 rounding: exact values ------------------------------------------------------------ */

/* f32 -> TF32 as cvt.rna: round to nearest on the 10-bit mantissa, ties away
 * from zero. */
static float tf32_rna(float v) {
  uint32_t b;
  memcpy(&b, &v, 4);
  b = (b + 0x1000u) & ~0x1fffu;
  memcpy(&v, &b, 4);
  return v;
}

/* A 1x1 convolution whose weights and inputs need rounding to TF32 (1 +
 * 0.75 * 2^-10 rounds up to 1 + 2^-10; truncation would give 1): the output
 * must be the exact sum of the rounded products, in both K orders (the
 * weight copy rounds the weights; the MMA loop no longer does), and with a
 * channels-last input (tap-major, the t*v kernels' cp.async B tiles,
 * rounded before the MMAs; raw tiles, PTC_CUDA_CONV_NHWC_RNA=0, fail
 * here): order 4 the 4-warp t64w4v, order 5 (PTC_CUDA_CONV_BM=128) t128v,
 * each with 16 channels (one K step). Orders 6 and 7: the same two kernels
 * with 64 channels, four K steps (PTC_CUDA_CONV_NHWC_RNA=3 rounds the
 * first stage before the loop and the later ones mid-way through the
 * previous step's MMAs), all values positive (as after a ReLU: truncation
 * then lowers every product, no cancellation); the sums are then checked
 * to 2e-5 of themselves (f32 accumulation of 64 terms; truncation is off
 * by 7e-4). */
static void run_tf32_exact(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  enum { CMAX = 64, OC = 8, HW = 9 };
  float hx[CMAX * HW], hxn[HW * CMAX], hw[OC * CMAX], ho[OC * HW];
  for (int order = 1; order <= 7; order++) { /* 3: the wgmma kernels (sm_90) */
    if (order == 3 && (dev->cc_major != 9 || dev->cc_minor != 0)) continue;
    const bool cl = order >= 4, deep = order >= 6;
    const int C = deep ? CMAX : 16;
    for (int i = 0; i < C * HW; i++) hx[i] = (i % 3 || deep ? 1.0f : -1.0f) * (1.0f + 0.75f / 1024.0f);
    for (int q = 0; q < C; q++)
      for (int p = 0; p < HW; p++) hxn[p * C + q] = hx[q * HW + p];
    for (int i = 0; i < OC * C; i++) hw[i] = (i % 5 ? 1.0f : 2.0f) * (1.0f + 0.75f / 1024.0f);
    const size_t xbytes = sizeof(float) * (size_t)(C * HW), wbytes = sizeof(float) * (size_t)(OC * C);
    cuda_conv_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = PTC_F32;
    d.n = 1, d.c = C, d.h = 3, d.w = 3, d.oc = OC, d.oh = 3, d.ow = 3;
    d.kh = d.kw = d.sh = d.sw = d.dh = d.dw = d.groups = 1;
    d.xs[0] = C * HW, d.xs[1] = HW, d.xs[2] = 3, d.xs[3] = 1;
    if (cl) d.xs[1] = 1, d.xs[2] = 3 * C, d.xs[3] = C;
    d.ws[0] = C, d.ws[1] = 1, d.ws[2] = 1, d.ws[3] = 1;
    cu_deviceptr px = 0, pw = 0, po = 0;
    bool done = false;
    ptc_status s = PTC_OK;
    if (cuda_alloc(xbytes, NULL, &px) || cuda_alloc(wbytes, NULL, &pw) ||
        cuda_alloc(sizeof ho, NULL, &po) || cu->MemcpyHtoDAsync(px, cl ? hxn : hx, xbytes, NULL) ||
        cu->MemcpyHtoDAsync(pw, hw, wbytes, NULL))
      s = PTC_ERR(INTERNAL, "device memory");
    if (!s && cl && !cuda_conv_igemm_vec_input(&d, px))
      s = PTC_ERR(INTERNAL, "not a channels-last vector input");
    setenv("PTC_CUDA_CONV_TAP", order == 2 || cl ? "1" : "0", 1);
    if (order == 5 || order == 7) setenv("PTC_CUDA_CONV_BM", "128", 1);
    if (deep) setenv("PTC_CUDA_CONV_SPLIT", "1", 1); /* the four K steps in one block */
    setenv("PTC_CUDA_CONV_WG", "1", 1);
    if (!s)
      s = order == 3 ? cuda_conv_wg(ctx, dev, NULL, &d, true, px, pw, 0, po, &done)
                     : cuda_conv_igemm(ctx, dev, NULL, &d, true, px, pw, 0, po, &done);
    unsetenv("PTC_CUDA_CONV_WG");
    unsetenv("PTC_CUDA_CONV_TAP");
    unsetenv("PTC_CUDA_CONV_BM");
    unsetenv("PTC_CUDA_CONV_SPLIT");
    if (!s && (cu->MemcpyDtoHAsync(ho, po, sizeof ho, NULL) != CU_SUCCESS ||
               cu->StreamSynchronize(NULL) != CU_SUCCESS))
      s = PTC_ERR(INTERNAL, "copy back failed");
    bool bad = s || !done;
    if (bad) printf("FAIL tf32 exact order%d: %s\n", order, s ? ptc_status_message(s) : "not taken");
    ptc_status_destroy(s);
    for (int o = 0; o < OC && !bad; o++)
      for (int p = 0; p < HW && !bad; p++) {
        double want = 0;
        for (int q = 0; q < C; q++) want += (double)tf32_rna(hw[o * C + q]) * tf32_rna(hx[q * HW + p]);
        double tol = deep ? 2e-5 * fabs(want) : 1e-6 * fabs(want) + 1e-6;
        if (fabs(ho[o * HW + p] - want) > tol) {
          printf("FAIL tf32 exact order%d: [%d, %d] = %.9g, expected %.9g (sum of TF32-rounded "
                 "products)\n", order, o, p, ho[o * HW + p], want);
          bad = true;
        }
      }
    if (bad)
      failed++;
    else
      passed++;
    cuda_free(px);
    cuda_free(pw);
    cuda_free(po);
  }
}

/* The kept weight copy (cuda_conv_wcache.h): a tap-major bf16 and a TF32
 * convolution run with a table slot, then their weights are zeroed on the
 * device and they run again: with the slot the output must be the first
 * run's bit for bit (the kept copy read, not the zeroed weights); without
 * the slot it must differ (the weights really were zeroed), and a table
 * slot offered while another copy is kept keeps the first. */
static void run_wcache(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  enum { N = 2, C = 32, H = 8, OC = 16, K = 3 };
  static const int32_t dts[2] = {PTC_BF16, PTC_F32};
  for (int di = 0; di < 2; di++) {
    int32_t dt = dts[di];
    size_t es = ptc_dtype_size(dt), xb = (size_t)N * C * H * H * es, wb = (size_t)OC * C * K * K * es;
    size_t ob = (size_t)N * OC * H * H * es;
    cuda_conv_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = dt;
    d.n = N, d.c = C, d.h = H, d.w = H, d.oc = OC, d.oh = H, d.ow = H;
    d.kh = d.kw = K, d.sh = d.sw = d.dh = d.dw = d.groups = 1, d.ph = d.pw = 1;
    d.xs[0] = C * H * H, d.xs[1] = H * H, d.xs[2] = H, d.xs[3] = 1;
    d.ws[0] = C * K * K, d.ws[1] = K * K, d.ws[2] = K, d.ws[3] = 1;
    void *hx = malloc(xb), *hw = malloc(wb), *o1 = calloc(1, ob), *o2 = calloc(1, ob), *o3 = calloc(1, ob);
    cu_deviceptr px = 0, pw = 0, po = 0;
    cuda_wcache* t = NULL;
    ptc_status s = hx && hw && o1 && o2 && o3 ? cuda_wcache_create(2, &t) : ptc_status_oom();
    for (int64_t i = 0; !s && i < N * C * H * H; i++) ctd_store(hx, dt, i, 2 * ctd_urand() - 1);
    for (int64_t i = 0; !s && i < OC * C * K * K; i++) ctd_store(hw, dt, i, 2 * ctd_urand() - 1);
    if (!s && (cuda_alloc(xb, NULL, &px) || cuda_alloc(wb, NULL, &pw) || cuda_alloc(ob, NULL, &po) ||
               cu->MemcpyHtoDAsync(px, hx, xb, NULL) || cu->MemcpyHtoDAsync(pw, hw, wb, NULL)))
      s = PTC_ERR(INTERNAL, "device memory");
    setenv("PTC_CUDA_CONV_TAP", "1", 1);
    void* outs[3] = {o1, o2, o3};
    bool done = true;
    for (int run = 0; run < 3 && !s && done; run++) {
      /* run 1: with the slot; then the weights zeroed; run 2 with, run 3 without */
      if (run == 1 && cu->MemsetD8Async(pw, 0, wb, NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "memset");
      d.wcache = run < 2 ? t : NULL;
      d.wcache_slot = 1;
      if (!s) s = cuda_conv_igemm(ctx, dev, NULL, &d, true, px, pw, 0, po, &done);
      if (!s && (cu->MemcpyDtoHAsync(outs[run], po, ob, NULL) != CU_SUCCESS ||
                 cu->StreamSynchronize(NULL) != CU_SUCCESS))
        s = PTC_ERR(INTERNAL, "copy back failed");
    }
    unsetenv("PTC_CUDA_CONV_TAP");
    /* a second copy offered for the filled slot is refused (the caller keeps it) */
    cuda_wcache_key key = {pw, {1, 2, 3, 4}};
    cu_deviceptr spare = 0;
    bool refused = !s && !cuda_alloc(64, NULL, &spare) && !cuda_wcache_offer(t, 1, &key, NULL, spare);
    bool bad = s || !done || !refused;
    if (bad)
      printf("FAIL wcache %s: %s\n", ptc_dtype_name(dt),
             s ? ptc_status_message(s) : !done ? "not taken" : "a second copy replaced the kept one");
    if (!bad && memcmp(o1, o2, ob)) {
      printf("FAIL wcache %s: the run after the weights were zeroed did not read the kept copy\n",
             ptc_dtype_name(dt));
      bad = true;
    }
    if (!bad && !memcmp(o1, o3, ob)) {
      printf("FAIL wcache %s: zeroed weights without the slot gave the same output\n", ptc_dtype_name(dt));
      bad = true;
    }
    ptc_status_destroy(s);
    if (bad)
      failed++;
    else
      passed++;
    cuda_free(spare);
    cuda_wcache_destroy(t);
    cuda_free(px);
    cuda_free(pw);
    cuda_free(po);
    free(hx);
    free(hw);
    free(o1);
    free(o2);
    free(o3);
  }
}

/* ---- the wide im2col (cuda_conv_igemm_im2col) against a host one ------------------------- */

typedef struct icase {
  int64_t nimg, c, h, w, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t cpad; /* channels of the storage the input is a slice of (>= c) */
  int expect;   /* 1: taken; 0: declined (row length not whole 16-byte vectors) */
  int nhwc;     /* channels-last storage [N][H][W][cpad] (the transposing kernel) */
} icase;

static const icase icases[] = {
    {4, 16, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 16, 1, 0},  /* resnet's 3x3 stride 1 */
    {8, 8, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 8, 1, 0},    /* stride 2 to 7x7: vectors span images */
    {8, 8, 14, 14, 1, 1, 2, 2, 0, 0, 1, 1, 8, 1, 0},    /* 1x1 stride 2 */
    {8, 3, 9, 7, 3, 2, 2, 1, 1, 0, 1, 2, 5, 1, 0},     /* 3x2 window, mixed strides, dilation, a slice */
    {8, 4, 5, 5, 5, 5, 1, 1, 2, 2, 1, 1, 4, 1, 0},     /* 5x5, padding 2, images of 25 px */
    {3, 4, 5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 4, 0, 0},  /* 75 columns: not whole vectors */
    {4, 16, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 16, 1, 1}, /* channels-last, 3x3 stride 1 */
    {8, 40, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 48, 1, 1}, /* channels-last slice, 2 channel tiles, s2 */
    {8, 8, 14, 14, 1, 1, 2, 2, 0, 0, 1, 1, 8, 1, 1},   /* channels-last 1x1 stride 2 */
    {8, 3, 9, 7, 3, 2, 2, 1, 1, 0, 1, 2, 5, 1, 1},     /* channels-last 3x2, dilation, a slice */
};

static void run_i2c(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  static const int32_t dts[2] = {PTC_F32, PTC_BF16};
  for (int di = 0; di < 2; di++)
    for (size_t ci = 0; ci < sizeof icases / sizeof icases[0]; ci++) {
      const icase* t = &icases[ci];
      int32_t dt = dts[di];
      size_t es = ptc_dtype_size(dt);
      int64_t oh = (t->h + 2 * t->ph - t->dh * (t->kh - 1) - 1) / t->sh + 1;
      int64_t ow = (t->w + 2 * t->pw - t->dw * (t->kw - 1) - 1) / t->sw + 1;
      int64_t ncols = t->nimg * oh * ow, rows = t->c * t->kh * t->kw;
      int64_t xel = t->nimg * t->cpad * t->h * t->w;
      cuda_conv_i2c a = {t->nimg, t->c, t->h, t->w, t->kh, t->kw, oh, ow, t->sh, t->sw, t->ph, t->pw,
                         t->dh, t->dw, {t->cpad * t->h * t->w, t->h * t->w, t->w, 1}};
      if (t->nhwc) a.xs[1] = 1, a.xs[2] = t->w * t->cpad, a.xs[3] = t->cpad;
      void *hx = malloc((size_t)xel * es), *hc = malloc((size_t)(rows * ncols) * es);
      cu_deviceptr px = 0, pc = 0;
      ptc_status s = hx && hc ? PTC_OK : ptc_status_oom();
      for (int64_t i = 0; !s && i < xel; i++) ctd_store(hx, dt, i, 2 * ctd_urand() - 1);
      if (!s && (cuda_alloc((size_t)xel * es, NULL, &px) || cuda_alloc((size_t)(rows * ncols) * es, NULL, &pc) ||
                 cu->MemcpyHtoDAsync(px, hx, (size_t)xel * es, NULL) != CU_SUCCESS ||
                 cu->MemsetD8Async(pc, 0x7f, (size_t)(rows * ncols) * es, NULL) != CU_SUCCESS))
        s = PTC_ERR(INTERNAL, "device memory");
      bool done = false;
      if (!s) s = cuda_conv_igemm_im2col(ctx, dev, NULL, dt, &a, px, pc, &done);
      if (!s && done &&
          (cu->MemcpyDtoHAsync(hc, pc, (size_t)(rows * ncols) * es, NULL) != CU_SUCCESS ||
           cu->StreamSynchronize(NULL) != CU_SUCCESS))
        s = PTC_ERR(INTERNAL, "copy back failed");
      int64_t bad = 0, first = -1;
      for (int64_t r = 0; !s && done && r < rows; r++) {
        int64_t ch = r / (t->kh * t->kw), ki = r / t->kw % t->kh, kj = r % t->kw;
        for (int64_t j = 0; j < ncols; j++) {
          int64_t img = j / (oh * ow), p = j % (oh * ow), oy = p / ow, ox = p % ow;
          int64_t iy = oy * t->sh - t->ph + ki * t->dh, ix = ox * t->sw - t->pw + kj * t->dw;
          double v = iy >= 0 && iy < t->h && ix >= 0 && ix < t->w
                         ? ctd_load(hx, dt, img * a.xs[0] + ch * a.xs[1] + iy * a.xs[2] + ix * a.xs[3])
                         : 0.0;
          if (ctd_load(hc, dt, r * ncols + j) != v && bad++ == 0) first = r * ncols + j;
        }
      }
      bool fail = s || done != (t->expect != 0) || bad;
      if (fail) {
        printf("FAIL wide im2col %s case %zu: %s\n", ptc_dtype_name(dt), ci,
               s ? ptc_status_message(s) : done != (t->expect != 0) ? (done ? "taken" : "not taken")
                                                                  : "wrong elements");
        if (bad) printf("  %lld wrong, first at %lld\n", (long long)bad, (long long)first);
        failed++;
      } else {
        passed++;
      }
      ptc_status_destroy(s);
      cuda_free(px);
      cuda_free(pc);
      free(hx);
      free(hc);
    }
  /* PTC_CUDA_CONV_I2C=0 declines (the support module's kernel runs instead) */
  setenv("PTC_CUDA_CONV_I2C", "0", 1);
  const icase* t = &icases[0];
  cuda_conv_i2c a = {t->nimg, t->c, t->h, t->w, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, {16 * 196, 196, 14, 1}};  /* NCHW */
  bool done = true;
  ptc_status s = cuda_conv_igemm_im2col(ctx, dev, NULL, PTC_F32, &a, 0, 0, &done);
  unsetenv("PTC_CUDA_CONV_I2C");
  if (s || done) {
    printf("FAIL wide im2col: PTC_CUDA_CONV_I2C=0 %s\n", s ? ptc_status_message(s) : "still taken");
    failed++;
  } else {
    passed++;
  }
  ptc_status_destroy(s);
}

/* ---- pooling through a one-node graph: cuda against ref ------------------------------------ */

typedef struct pcase {
  const char* op;  /* max_pool2d, avg_pool2d, adaptive_avg_pool2d */
  int64_t n, c, h, w;
  int64_t k[2], s[2], p[2], d[2]; /* window (adaptive: output size), stride, padding, dilation */
  int include_pad, divisor;         /* avg_pool2d */
  int nan;                          /* a NaN at element 7 of the input */
} pcase;

/* Compiles g for the cuda backend (*ec) and the ref backend (*er). */
static ptc_status compile_both(const ptc_graph* g, ptc_executable** ec, ptc_executable** er) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  ptc_status s = ptc_compile(ctx, g, &o, ec);
  o.backend = "ref";
  if (!s) s = ptc_compile(ctx, g, &o, er);
  return s;
}

/* Compares the first output of the cuda run rc with that of the ref run rr
 * element by element (|a - b| <= rel * |b| + atol, NaN matching NaN) and
 * counts the case as passed or failed; s is the status of everything
 * before (consumed: a failure is printed and counted). */
static void judge_first_output(const char* what, ptc_status s, ptc_results* rr, ptc_results* rc,
                               int32_t dt, double rel, double atol) {
  const cu_api* cu = &cuda_libs_get()->cu;
  size_t es = ptc_dtype_size(dt);
  void* got = NULL;
  const ptc_tensor* tr = s ? NULL : ptc_results_get(rr, 0);
  const ptc_tensor* tc = s ? NULL : ptc_results_get(rc, 0);
  int64_t oe = 1;
  for (int i = 0; tr && i < tr->ndim; i++) oe *= tr->shape[i];
  if (!s && (tc->device.device_type != PTC_DEVICE_CUDA || tc->ndim != tr->ndim))
    s = PTC_ERR(INTERNAL, "output not on the device");
  if (!s && !(got = malloc((size_t)oe * es + 1))) s = ptc_status_oom();
  if (!s && (cu->MemcpyDtoHAsync(got, (cu_deviceptr)(uintptr_t)tc->data + tc->byte_offset,
                                 (size_t)oe * es, NULL) != CU_SUCCESS ||
             cu->StreamSynchronize(NULL) != CU_SUCCESS))
    s = PTC_ERR(INTERNAL, "copy back failed");
  if (s) {
    printf("FAIL %s: %s\n", what, ptc_status_message(s));
    ptc_status_destroy(s);
    failed++;
    free(got);
    return;
  }
  const void* ref = (const char*)tr->data + tr->byte_offset;
  bool bad = false;
  for (int64_t i = 0; i < oe && !bad; i++) {
    double a = ctd_load(got, dt, i), b = ctd_load(ref, dt, i);
    if ((isnan(a) && isnan(b)) || fabs(a - b) <= rel * fabs(b) + atol) continue;
    printf("FAIL %s: output [%lld] = %.9g, ref %.9g\n", what, (long long)i, a, b);
    bad = true;
  }
  if (bad) {
    failed++;
  } else {
    passed++;
    if (getenv("PTC_TEST_VERBOSE")) printf("ok %s\n", what);
  }
  free(got);
}

static const pcase pcases[] = {
    {"max_pool2d", 2, 5, 17, 18, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0, 0},  /* resnet's stem pool */
    {"max_pool2d", 2, 5, 17, 18, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0, 1},  /* NaN propagates */
    /* 3x3 stride-2 on 16-byte aligned rows: the vector form (mode 9) */
    {"max_pool2d", 2, 5, 15, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0, 0},  /* whole runs, odd h */
    {"max_pool2d", 2, 5, 15, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0, 1},  /* NaN in a vector */
    {"max_pool2d", 2, 3, 12, 20, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, 0, 0},  /* f32/f64: a part run */
    {"max_pool2d", 2, 4, 30, 40, {3, 3}, {1, 2}, {1, 1}, {1, 1}, 1, 0, 0},  /* row stride 1 */
    {"max_pool2d", 1, 2, 9, 24, {3, 3}, {2, 2}, {0, 1}, {1, 1}, 1, 0, 0},   /* no row padding */
    {"max_pool2d", 2, 3, 9, 8, {2, 2}, {2, 2}, {0, 0}, {1, 1}, 1, 0, 0},    /* 2x2, other windows */
    {"max_pool2d", 1, 4, 12, 11, {3, 2}, {1, 2}, {1, 1}, {2, 1}, 1, 0, 0},  /* dilation */
    {"adaptive_avg_pool2d", 3, 70, 7, 7, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, 0, 0}, /* resnet's head */
    {"adaptive_avg_pool2d", 2, 3, 40, 37, {1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, 0, 0}, /* big plane */
    {"adaptive_avg_pool2d", 2, 4, 9, 10, {2, 3}, {1, 1}, {0, 0}, {1, 1}, 1, 0, 0},  /* general */
    {"avg_pool2d", 2, 6, 7, 7, {7, 7}, {7, 7}, {0, 0}, {1, 1}, 1, 0, 0},    /* whole plane */
    {"avg_pool2d", 2, 6, 7, 7, {7, 7}, {7, 7}, {0, 0}, {1, 1}, 1, 5, 0},    /* divisor_override */
    {"avg_pool2d", 2, 3, 11, 9, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 0, 0, 0},   /* excluding padding */
};

static ptc_status pool_graph(const pcase* c, int32_t dt, ptc_graph** out) {
  ptc_graph* g = NULL;
  ptc_value in = 0, o = 0;
  ptc_dim xs[4] = {{c->n, 0, 0}, {c->c, 0, 0}, {c->h, 0, 0}, {c->w, 0, 0}};
  ptc_attr at[6];
  size_t na = 0;
  bool adaptive = !strcmp(c->op, "adaptive_avg_pool2d"), mx = !strcmp(c->op, "max_pool2d");
  if (adaptive) {
    at[na++] = ptc_attr_ints("output_size", c->k, 2);
  } else {
    at[na++] = ptc_attr_ints("kernel_size", c->k, 2);
    at[na++] = ptc_attr_ints("stride", c->s, 2);
    at[na++] = ptc_attr_ints("padding", c->p, 2);
    if (mx) at[na++] = ptc_attr_ints("dilation", c->d, 2);
    if (!mx) at[na++] = ptc_attr_bool("count_include_pad", c->include_pad);
    if (!mx && c->divisor) at[na++] = ptc_attr_int("divisor_override", c->divisor);
  }
  ptc_status s = ptc_graph_create(ctx, &g);
  if (!s) s = ptc_graph_add_input(g, "x", dt, xs, 4, NULL, &in);
  if (!s) s = ptc_graph_add_node(g, c->op, &in, 1, at, na, &o, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, o);
  if (s) {
    ptc_graph_destroy(g);
    g = NULL;
  }
  *out = g;
  return s;
}

/* One pooling case in dtype dt: the cuda backend's pooling kernel (its fast
 * paths, or with fast false the general loop: PTC_CUDA_POOL_FAST=0) against
 * the ref backend on the same input. Max exact, averages to a relative
 * 1e-5 (f32/f64) / 1e-2 (bf16) / 2e-3 (f16) plus an absolute floor. */
static void run_pool_case(const pcase* c, int32_t dt, bool fast) {
  const cu_api* cu = &cuda_libs_get()->cu;
  char what[200];
  snprintf(what, sizeof what, "%s %s [%lld, %lld, %lld, %lld] k%lldx%lld s%lld,%lld p%lld,%lld "
           "d%lld,%lld pad%d div%d nan%d fast%d", c->op, ptc_dtype_name(dt), (long long)c->n,
           (long long)c->c, (long long)c->h, (long long)c->w, (long long)c->k[0], (long long)c->k[1],
           (long long)c->s[0], (long long)c->s[1], (long long)c->p[0], (long long)c->p[1],
           (long long)c->d[0], (long long)c->d[1], c->include_pad, c->divisor, c->nan, fast);
  size_t es = ptc_dtype_size(dt);
  int64_t xe = c->n * c->c * c->h * c->w;
  void* hx = calloc((size_t)xe + 1, es);
  cu_deviceptr px = 0;
  ptc_graph* g = NULL;
  ptc_executable *ec = NULL, *er = NULL;
  ptc_results *rc = NULL, *rr = NULL;
  ptc_status s = hx ? PTC_OK : ptc_status_oom();
  for (int64_t i = 0; !s && i < xe; i++) ctd_store(hx, dt, i, c->nan && i == 7 ? NAN : 3 * ctd_urand());
  if (!s && (cuda_alloc((size_t)xe * es, NULL, &px) ||
             cu->MemcpyHtoDAsync(px, hx, (size_t)xe * es, NULL) != CU_SUCCESS))
    s = PTC_ERR(INTERNAL, "device input");
  if (!fast) setenv("PTC_CUDA_POOL_FAST", "0", 1);
  if (!s) s = pool_graph(c, dt, &g);
  if (!s) s = compile_both(g, &ec, &er);
  int64_t shape[4] = {c->n, c->c, c->h, c->w};
  ptc_tensor th, td;
  memset(&th, 0, sizeof th);
  th.data = hx;
  th.device.device_type = PTC_DEVICE_CPU;
  th.ndim = 4;
  th.dtype = ptc_dtype_to_dl(dt);
  th.shape = shape;
  td = th;
  td.data = (void*)(uintptr_t)px;
  td.device.device_type = PTC_DEVICE_CUDA;
  if (!s) s = ptc_executable_run_alloc(er, &th, 1, NULL, &rr);
  if (!s) s = ptc_executable_run_alloc(ec, &td, 1, NULL, &rc);
  unsetenv("PTC_CUDA_POOL_FAST");
  bool mx = !strcmp(c->op, "max_pool2d");
  /* averages: relative, with an absolute floor (a mean near 0 of values
   * up to 3 cancels: f32 sums of 49 such values differ by ~1e-7 with order) */
  double tol = mx ? 0 : dt == PTC_BF16 ? 1e-2 : dt == PTC_F16 ? 2e-3 : 1e-5;
  double atol = mx ? 0 : dt == PTC_BF16 ? 1e-2 : dt == PTC_F16 ? 2e-3 : dt == PTC_F32 ? 2e-6 : 1e-12;
  judge_first_output(what, s, rr, rc, dt, tol, atol);
  ptc_results_destroy(rr);
  ptc_results_destroy(rc);
  ptc_executable_release(ec);
  ptc_executable_release(er);
  ptc_graph_destroy(g);
  cuda_free(px);
  free(hx);
}

static void run_pools(void) {
  static const int32_t dts[4] = {PTC_F32, PTC_BF16, PTC_F16, PTC_F64};
  for (int di = 0; di < 4; di++)
    for (size_t i = 0; i < sizeof pcases / sizeof pcases[0]; i++)
      for (int fast = 1; fast >= 0; fast--) run_pool_case(&pcases[i], dts[di], fast != 0);
}

/* ---- the convolution extern through a graph (cuda_ext_conv.c) --------------------------- */

/* conv2d(x, w[, b]) (+ relu) through the cuda backend with a policy
 * (PTC_CUDA_CONV_IGEMM) and the wide path's vector kernels on or off
 * (PTC_CUDA_CONV_VEC), against the ref backend. */
typedef struct gcase {
  int64_t n, c, hw, oc, k, s, p, groups;
  int bias, relu;
  const char* note;
  int chain; /* a residual block instead: relu(conv(x) + b) -> conv + b -> + x -> relu -> conv
              * [-> relu] (one weight tensor; oc = c, k 3, s 1, p 1), 2: a stem first, its
              * output max-pooled 3x3 stride 2 (the block's input and residual); 3: the
              * last convolution stride 2 (a small plane read from a channels-last input) */
} gcase;

static const gcase gcases[] = {
    {4, 16, 14, 24, 3, 1, 1, 1, 1, 1, "14x14 wide, vector im2col + fused bias/relu", 0},
    {3, 8, 7, 12, 3, 1, 1, 1, 0, 0, "7x7: bf16/f16 outputs not whole vectors (old copy), f32 fused", 0},
    {2, 16, 14, 16, 3, 2, 1, 1, 1, 0, "stride 2 to 7x7, bias", 0},
    {4, 16, 14, 32, 1, 2, 0, 1, 0, 1, "1x1 stride 2 (a strided gather), relu", 0},
    {2, 16, 8, 8, 1, 1, 0, 1, 1, 1, "1x1 stride 1 (no im2col), bias + relu", 0},
    {2, 3, 5, 8, 3, 1, 1, 1, 1, 1, "fused copy, columns not whole vectors (general im2col)", 0},
    {8, 3, 5, 8, 3, 1, 1, 1, 1, 0, "3 channels, 5x5, vector im2col", 0},
    {4, 8, 6, 8, 3, 1, 1, 2, 1, 1, "groups 2", 0},
    {1, 16, 14, 16, 3, 1, 1, 1, 1, 1, "batch 1", 0},
    {2, 8, 20, 16, 3, 1, 1, 1, 1, 1, "20x20 (per-image GEMMs)", 0},
    {2, 16, 20, 16, 3, 1, 1, 1, 1, 1, "residual block, channels-last between convolutions", 1},
    {2, 24, 16, 24, 3, 1, 1, 1, 1, 0, "residual block, 24 channels, no last relu", 1},
    {2, 16, 34, 16, 3, 1, 1, 1, 1, 1, "stem, max pool, residual block", 2},
    {2, 4, 20, 4, 3, 1, 1, 1, 1, 1, "residual block, 4 channels (no vector input)", 1},
    {4, 16, 20, 16, 3, 1, 1, 1, 1, 1, "residual block, last convolution stride 2 to 10x10", 3},
};

static ptc_status conv_graph(const gcase* c, int32_t dt, ptc_graph** out) {
  ptc_graph* g = NULL;
  ptc_value in[3] = {0, 0, 0}, o = 0, r = 0;
  ptc_dim xs[4] = {{c->n, 0, 0}, {c->c, 0, 0}, {c->hw, 0, 0}, {c->hw, 0, 0}};
  ptc_dim ws[4] = {{c->oc, 0, 0}, {c->c / c->groups, 0, 0}, {c->k, 0, 0}, {c->k, 0, 0}};
  ptc_dim bs[1] = {{c->oc, 0, 0}};
  int64_t st[2] = {c->s, c->s}, pd[2] = {c->p, c->p};
  ptc_attr at[3] = {ptc_attr_ints("stride", st, 2), ptc_attr_ints("padding", pd, 2),
                    ptc_attr_int("groups", c->groups)};
  ptc_status s = ptc_graph_create(ctx, &g);
  if (!s) s = ptc_graph_add_input(g, "x", dt, xs, 4, NULL, &in[0]);
  if (!s) s = ptc_graph_add_input(g, "w", dt, ws, 4, NULL, &in[1]);
  if (!s && c->bias) s = ptc_graph_add_input(g, "b", dt, bs, 1, NULL, &in[2]);
  if (!s && c->chain) {
    ptc_value x = in[0], t[6];
    if (c->chain == 2) { /* a stem: relu(conv(x) + b), max-pooled */
      ptc_value si[3] = {x, in[1], in[2]}, sc = 0;
      s = ptc_graph_add_node(g, "conv2d", si, c->bias ? 3 : 2, at, 3, &sc, 1, NULL);
      if (!s) s = ptc_graph_add_node(g, "relu", &sc, 1, NULL, 0, &x, 1, NULL);
      int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1};
      ptc_attr pa[3] = {ptc_attr_ints("kernel_size", k3, 2), ptc_attr_ints("stride", s2, 2),
                        ptc_attr_ints("padding", p1, 2)};
      if (!s) s = ptc_graph_add_node(g, "max_pool2d", &x, 1, pa, 3, &x, 1, NULL);
    }
    ptc_value ci[3] = {x, in[1], in[2]};
    if (!s) s = ptc_graph_add_node(g, "conv2d", ci, c->bias ? 3 : 2, at, 3, &t[0], 1, NULL);
    if (!s) s = ptc_graph_add_node(g, "relu", &t[0], 1, NULL, 0, &t[1], 1, NULL);
    ci[0] = t[1];
    if (!s) s = ptc_graph_add_node(g, "conv2d", ci, c->bias ? 3 : 2, at, 3, &t[2], 1, NULL);
    ptc_value ad[2] = {t[2], x};
    if (!s) s = ptc_graph_add_node(g, "add", ad, 2, NULL, 0, &t[3], 1, NULL);
    if (!s) s = ptc_graph_add_node(g, "relu", &t[3], 1, NULL, 0, &t[4], 1, NULL);
    ci[0] = t[4];
    int64_t s2[2] = {2, 2};
    ptc_attr at2[3] = {ptc_attr_ints("stride", s2, 2), at[1], at[2]};
    if (!s) s = ptc_graph_add_node(g, "conv2d", ci, 2, c->chain == 3 ? at2 : at, 3, &o, 1, NULL);
  } else if (!s) {
    s = ptc_graph_add_node(g, "conv2d", in, c->bias ? 3 : 2, at, 3, &o, 1, NULL);
  }
  if (!s && c->relu) s = ptc_graph_add_node(g, "relu", &o, 1, NULL, 0, &r, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, c->relu ? r : o);
  if (s) {
    ptc_graph_destroy(g);
    g = NULL;
  }
  *out = g;
  return s;
}

static void run_graph_case(const gcase* c, int32_t dt, const char* policy, bool vec) {
  const cu_api* cu = &cuda_libs_get()->cu;
  char what[256];
  snprintf(what, sizeof what, "conv graph %s n%lld c%lld %lldx%lld oc%lld k%lld s%lld p%lld g%lld "
           "bias%d relu%d policy %s vec%d (%s)", ptc_dtype_name(dt), (long long)c->n,
           (long long)c->c, (long long)c->hw, (long long)c->hw, (long long)c->oc, (long long)c->k,
           (long long)c->s, (long long)c->p, (long long)c->groups, c->bias, c->relu, policy, vec,
           c->note);
  size_t es = ptc_dtype_size(dt);
  int64_t el[3] = {c->n * c->c * c->hw * c->hw, c->oc * (c->c / c->groups) * c->k * c->k, c->oc};
  int64_t shp[3][4] = {{c->n, c->c, c->hw, c->hw}, {c->oc, c->c / c->groups, c->k, c->k}, {c->oc}};
  int nin = c->bias ? 3 : 2;
  void* h[3] = {NULL, NULL, NULL};
  cu_deviceptr dp[3] = {0, 0, 0};
  ptc_graph* g = NULL;
  ptc_executable *ec = NULL, *er = NULL;
  ptc_results *rc = NULL, *rr = NULL;
  ptc_status s = PTC_OK;
  for (int i = 0; !s && i < nin; i++) {
    if (!(h[i] = calloc((size_t)el[i] + 1, es))) s = ptc_status_oom();
    for (int64_t j = 0; !s && j < el[i]; j++) ctd_store(h[i], dt, j, ctd_urand());
    if (!s && (cuda_alloc((size_t)el[i] * es, NULL, &dp[i]) ||
               cu->MemcpyHtoDAsync(dp[i], h[i], (size_t)el[i] * es, NULL) != CU_SUCCESS))
      s = PTC_ERR(INTERNAL, "device input");
  }
  setenv("PTC_CUDA_CONV_IGEMM", policy, 1);
  if (!vec) setenv("PTC_CUDA_CONV_VEC", "0", 1);
  if (!s) s = conv_graph(c, dt, &g);
  if (!s) s = compile_both(g, &ec, &er);
  ptc_tensor th[3], td[3];
  memset(th, 0, sizeof th);
  for (int i = 0; i < nin; i++) {
    th[i].data = h[i];
    th[i].device.device_type = PTC_DEVICE_CPU;
    th[i].ndim = i == 2 ? 1 : 4;
    th[i].dtype = ptc_dtype_to_dl(dt);
    th[i].shape = shp[i];
    td[i] = th[i];
    td[i].data = (void*)(uintptr_t)dp[i];
    td[i].device.device_type = PTC_DEVICE_CUDA;
  }
  if (!s) s = ptc_executable_run_alloc(er, th, (size_t)nin, NULL, &rr);
  if (!s) s = ptc_executable_run_alloc(ec, td, (size_t)nin, NULL, &rc);
  unsetenv("PTC_CUDA_CONV_IGEMM");
  unsetenv("PTC_CUDA_CONV_VEC");
  /* sums of up to 144 products of [-1, 1) values, rounded to the dtype */
  double ck = (double)(c->c / c->groups * c->k * c->k);
  double rel = dt == PTC_BF16 ? 1.6e-2 : dt == PTC_F16 ? 2e-3 : 1e-5;
  double atol = (dt == PTC_BF16 ? 4e-3 : dt == PTC_F16 ? 5e-4 : 2e-6) * sqrt(ck) + rel;
  if (!s && c->chain) {
    /* three convolutions deep: relative to the output's largest magnitude */
    const ptc_tensor* tr = ptc_results_get(rr, 0);
    int64_t oe = 1;
    double big = 0;
    for (int i = 0; i < tr->ndim; i++) oe *= tr->shape[i];
    for (int64_t i = 0; i < oe; i++) big = fmax(big, fabs(ctd_load((const char*)tr->data + tr->byte_offset, dt, i)));
    atol = (dt == PTC_BF16 ? 2e-2 : dt == PTC_F16 ? 4e-3 : 1e-5) * big;
  }
  judge_first_output(what, s, rr, rc, dt, rel, atol);
  ptc_results_destroy(rr);
  ptc_results_destroy(rc);
  ptc_executable_release(ec);
  ptc_executable_release(er);
  ptc_graph_destroy(g);
  for (int i = 0; i < 3; i++) {
    cuda_free(dp[i]);
    free(h[i]);
  }
}

static void run_graphs(void) {
  static const int32_t dts[3] = {PTC_F32, PTC_BF16, PTC_F16};
  static const char* const policies[2] = {"1", "0"};
  for (int di = 0; di < 3; di++)
    for (size_t i = 0; i < sizeof gcases / sizeof gcases[0]; i++)
      for (int pi = 0; pi < 2; pi++)
        for (int vec = 1; vec >= 0; vec--) run_graph_case(&gcases[i], dts[di], policies[pi], vec != 0);
  /* the graphs again with NCHW activations throughout (PTC_CUDA_CONV_NHWC=0;
   * above, planes of more than 196 pixels run channels-last) */
  setenv("PTC_CUDA_CONV_NHWC", "0", 1);
  for (int di = 0; di < 3; di++)
    for (size_t i = 0; i < sizeof gcases / sizeof gcases[0]; i++)
      run_graph_case(&gcases[i], dts[di], "1", true);
  unsetenv("PTC_CUDA_CONV_NHWC");
  /* the extern with the wgmma kernels tried first (they take f16/bf16 here:
   * the graphs' f32 is full precision) */
  if (dev->cc_major == 9 && dev->cc_minor == 0) {
    setenv("PTC_CUDA_CONV_WG", "1", 1);
    for (int di = 1; di < 3; di++)
      for (size_t i = 0; i < sizeof gcases / sizeof gcases[0]; i++) run_graph_case(&gcases[i], dts[di], "1", true);
    unsetenv("PTC_CUDA_CONV_WG");
  }
}

/* ---- pure checks (no device) ---------------------------------------------------------- */

static int check_shapes(void) {
  int bad = 0;
  cuda_conv_desc d;
  int64_t xe, we;
  /* resnet18 b32 layer1 (64 channels, 56x56): BM 64, no split */
  ccase l1 = {32, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  fill_desc(&l1, PTC_BF16, &d, &xe, &we);
  cuda_conv_shape s;
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s);
  if (s.bm != 64 || s.splits != 1 || s.gx != (32 * 56 * 56 + 127) / 128 || s.gy != 1) {
    printf("FAIL: layer1 shape bm %d splits %d gx %lld\n", s.bm, s.splits, (long long)s.gx);
    bad++;
  }
  /* layer4 (512 channels, 7x7): BM 128, split K (52 blocks on 132 SMs) */
  ccase l4 = {32, 512, 7, 7, 512, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  fill_desc(&l4, PTC_BF16, &d, &xe, &we);
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s);
  if (s.bm != 128 || s.splits < 2 || s.gz != s.splits || s.kps % 32 || s.kps * s.splits < 4608 ||
      s.kps * (s.splits - 1) >= 4608) {
    printf("FAIL: layer4 shape bm %d splits %d kps %lld\n", s.bm, s.splits, (long long)s.kps);
    bad++;
  }
  /* layer2 (128 channels, 28x28) in TF32: 196 blocks, not split (H100:
   * split 2 0.136 ms vs 0.102 unsplit; the old cost model split it) */
  ccase l2 = {32, 128, 28, 28, 128, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  fill_desc(&l2, PTC_F32, &d, &xe, &we);
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s);
  if (s.splits != 1) {
    printf("FAIL: layer2 TF32 shape splits %d (want 1)\n", s.splits);
    bad++;
  }
  /* the same from a channels-last input: 64-row tiles on 4-warp blocks
   * (t64w4v; PTC_CUDA_CONV_NHWC_BM64=0 and bf16: 128 rows, t128v) */
  d.xs[0] = 28 * 28 * 128, d.xs[1] = 1, d.xs[2] = 28 * 128, d.xs[3] = 128;
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s);
  cuda_conv_shape s128, sbf;
  setenv("PTC_CUDA_CONV_NHWC_BM64", "0", 1);
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s128);
  unsetenv("PTC_CUDA_CONV_NHWC_BM64");
  d.dtype = PTC_BF16;
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &sbf);
  if (s.bm != 64 || s.threads != 128 || !s.tap || s.gy != 2 || s128.bm != 128 || sbf.bm != 128) {
    printf("FAIL: layer2 channels-last shape bm %d threads %d gy %lld (=0: bm %d; bf16 bm %d)\n", s.bm,
           s.threads, (long long)s.gy, s128.bm, sbf.bm);
    bad++;
  }
  /* a channel-major K range beyond the table (C 4096 x 3x3) forces splits */
  ccase big = {1, 4096, 8, 8, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  fill_desc(&big, PTC_F32, &d, &xe, &we);
  setenv("PTC_CUDA_CONV_TAP", "0", 1); /* channel-major: its offset table limits K */
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s);
  unsetenv("PTC_CUDA_CONV_TAP");
  if (s.kps > 8192 || s.smem > 227 * 1024 || s.kps * s.splits < 4096 * 9) {
    printf("FAIL: large K shape splits %d kps %lld smem %lld\n", s.splits, (long long)s.kps,
           (long long)s.smem);
    bad++;
  }
  /* refusals */
  fill_desc(&l1, PTC_F32, &d, &xe, &we);
  if (!cuda_conv_igemm_refusal(9, &d, false) || cuda_conv_igemm_refusal(9, &d, true)) {
    printf("FAIL: f32 must need TF32\n");
    bad++;
  }
  fill_desc(&l1, PTC_BF16, &d, &xe, &we);
  if (!cuda_conv_igemm_refusal(7, &d, true)) {
    printf("FAIL: sm_75 must be refused\n");
    bad++;
  }
  d.ws[3] = 2;
  if (cuda_conv_igemm_refusal(9, &d, true)) {
    printf("FAIL: weights of any strides are taken (copied)\n");
    bad++;
  }
  /* K order: tap-major for 64 channels, channel-major for the 3-channel stem */
  fill_desc(&l1, PTC_F32, &d, &xe, &we);
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s);
  bool tap64 = s.tap;
  ccase stem = {32, 3, 224, 224, 64, 7, 7, 2, 2, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  fill_desc(&stem, PTC_BF16, &d, &xe, &we);
  cuda_conv_igemm_shape(&d, 132, 227 * 1024, &s);
  if (!tap64 || s.tap || s.bm != 64) {
    printf("FAIL: K order: 64 channels tap-major %d, stem channel-major %d\n", tap64, !s.tap);
    bad++;
  }
  fill_desc(&l1, PTC_F64, &d, &xe, &we);
  if (!cuda_conv_igemm_refusal(9, &d, true)) {
    printf("FAIL: f64 must be refused\n");
    bad++;
  }
  /* the wgmma kernels: sm_90 only, not the stem; every other resnet18 b32
   * layer gets a tile shape whose window and four stages fit */
  fill_desc(&l1, PTC_BF16, &d, &xe, &we);
  if (!cuda_conv_wg_refusal(8, 0, &d, true) || !cuda_conv_wg_refusal(10, 0, &d, true) ||
      cuda_conv_wg_refusal(9, 0, &d, true)) {
    printf("FAIL: wgmma convolution: sm_90 only\n");
    bad++;
  }
  fill_desc(&stem, PTC_BF16, &d, &xe, &we);
  if (!cuda_conv_wg_refusal(9, 0, &d, true)) {
    printf("FAIL: wgmma convolution must refuse the 3-channel stem\n");
    bad++;
  }
  static const int64_t rl[10][5] = {{64, 56, 64, 3, 1},  {64, 56, 128, 3, 2},  {128, 28, 128, 3, 1},
                                    {64, 56, 128, 1, 2}, {128, 28, 256, 3, 2}, {256, 14, 256, 3, 1},
                                    {128, 28, 256, 1, 2}, {256, 14, 512, 3, 2}, {512, 7, 512, 3, 1},
                                    {256, 14, 512, 1, 2}};
  for (int i = 0; i < 10; i++)
    for (int t = 0; t < 2; t++) {
      ccase lc = {32, rl[i][0], rl[i][1], rl[i][1], rl[i][2], rl[i][3], rl[i][3], rl[i][4], rl[i][4],
                  rl[i][3] / 2, rl[i][3] / 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
      fill_desc(&lc, t ? PTC_F32 : PTC_BF16, &d, &xe, &we);
      cuda_conv_wg_plan pl;
      if (cuda_conv_wg_refusal(9, 0, &d, true) || !cuda_conv_wg_shape(&d, 132, 227 * 1024, -1, &pl) ||
          pl.smem > 227 * 1024 || pl.units > 2048) {
        printf("FAIL: wgmma convolution: resnet18 layer %d (%s) not taken\n", i, t ? "tf32" : "bf16");
        bad++;
      } else if (pl.cfg != (i == 0 ? 0 : i < 7 ? 1 : 2)) {
        /* the shapes measured fastest on an H100 (test_cuda_conv --bench):
         * 128x64 for 64 output channels, 64x128 for the 7x7 outputs, else 128x128 */
        printf("FAIL: wgmma convolution: resnet18 layer %d (%s) tile shape %d\n", i, t ? "tf32" : "bf16", pl.cfg);
        bad++;
      } else if (getenv("PTC_TEST_VERBOSE")) {
        printf("wg plan layer %d %s: cfg %d bm %d bn %d wq %lld wl %lld units %lld mtiles %lld ntiles %lld "
               "nk %lld smem %lld blocks %lld\n", i, t ? "tf32" : "bf16", pl.cfg, pl.bm, pl.bn,
               (long long)pl.wq, (long long)pl.wl, (long long)pl.units, (long long)pl.mtiles,
               (long long)pl.ntiles, (long long)pl.nk, (long long)pl.smem, (long long)pl.blocks);
      }
      /* the selective mode (PTC_CUDA_CONV_WG=3): the 3x3 stride-1 layers
       * on 28x28 and 14x14 planes (2, 5), not 56x56 (0), 7x7 (8), strided
       * or 1x1 ones */
      unsetenv("PTC_CUDA_CONV_WG_MAXPLANE");
      if (cuda_conv_wg_selected(&d) != (i == 2 || i == 5)) {
        printf("FAIL: wgmma convolution: resnet18 layer %d selected %d\n", i, (int)cuda_conv_wg_selected(&d));
        bad++;
      }
      setenv("PTC_CUDA_CONV_WG_MAXPLANE", "4096", 1);
      if (cuda_conv_wg_selected(&d) != (i == 0 || i == 2 || i == 5)) {
        printf("FAIL: wgmma convolution: resnet18 layer %d selected %d (max plane 4096)\n", i,
               (int)cuda_conv_wg_selected(&d));
        bad++;
      }
      unsetenv("PTC_CUDA_CONV_WG_MAXPLANE");
    }
  /* the 4-warp kernels' blocks per SM (PTC_CUDA_CONV_OCC): 4 for the
   * channel-major TF32 one by default, 3 for the rest; 0 all 3; 2 all 4 */
  const char* ov = getenv("PTC_CUDA_CONV_OCC");
  char keep[16] = "";
  if (ov) snprintf(keep, sizeof keep, "%s", ov);
  static const char* const occ[3] = {"", "0", "2"};
  /* [setting][f32 channel-major, f32 tap-major, bf16 / f16 either] */
  static const int want[3][3] = {{4, 3, 3}, {3, 3, 3}, {4, 4, 4}};
  for (int i = 0; i < 3; i++) {
    setenv("PTC_CUDA_CONV_OCC", occ[i], 1);
    int got[3] = {cuda_conv_igemm_w4_blocks(PTC_F32, false), cuda_conv_igemm_w4_blocks(PTC_F32, true),
                  cuda_conv_igemm_w4_blocks(PTC_BF16, false)};
    bool ok = got[0] == want[i][0] && got[1] == want[i][1] && got[2] == want[i][2];
    for (int tap = 0; tap < 2; tap++)
      ok = ok && cuda_conv_igemm_w4_blocks(PTC_BF16, tap != 0) == want[i][2] &&
           cuda_conv_igemm_w4_blocks(PTC_F16, tap != 0) == want[i][2];
    if (!ok) {
      printf("FAIL: 4-warp blocks per SM with PTC_CUDA_CONV_OCC='%s': f32 channel-major %d tap-major %d, "
             "bf16 %d\n", occ[i], got[0], got[1], got[2]);
      bad++;
    }
  }
  if (ov)
    setenv("PTC_CUDA_CONV_OCC", keep, 1);
  else
    unsetenv("PTC_CUDA_CONV_OCC");
  return bad;
}

/* ---- bench -------------------------------------------------------------------------------- */

typedef struct lcase {
  const char* name;
  int64_t c, hw, oc, k, s, p, count;
} lcase;

static const lcase resnet[] = {
    {"conv1", 3, 224, 64, 7, 2, 3, 1},      {"l1", 64, 56, 64, 3, 1, 1, 4},
    {"l2.0", 64, 56, 128, 3, 2, 1, 1},      {"l2", 128, 28, 128, 3, 1, 1, 3},
    {"l2.ds", 64, 56, 128, 1, 2, 0, 1},     {"l3.0", 128, 28, 256, 3, 2, 1, 1},
    {"l3", 256, 14, 256, 3, 1, 1, 3},       {"l3.ds", 128, 28, 256, 1, 2, 0, 1},
    {"l4.0", 256, 14, 512, 3, 2, 1, 1},     {"l4", 512, 7, 512, 3, 1, 1, 3},
    {"l4.ds", 256, 14, 512, 1, 2, 0, 1},    {"1x1s1", 256, 14, 1024, 1, 1, 0, 0},
};

/* The wgmma kernels (cuda_conv_wg), ms per call (weight copy included),
 * tile shape cfg (-1 chosen); -1 when not taken. */
static double time_wg(const cuda_conv_desc* d, cu_deviceptr px, cu_deviceptr pw, cu_deviceptr po, int cfg) {
  const cu_api* cu = &cuda_libs_get()->cu;
  char cv[8];
  snprintf(cv, sizeof cv, "%d", cfg);
  if (cfg >= 0) setenv("PTC_CUDA_CONV_WG_CFG", cv, 1);
  const char* prev = getenv("PTC_CUDA_CONV_WG");
  char keep[8] = "";
  if (prev) snprintf(keep, sizeof keep, "%s", prev);
  setenv("PTC_CUDA_CONV_WG", "1", 1); /* every shape */
  double ms = -1;
  int reps = 10;
  for (int round = 0; round < 2; round++) {
    double t0 = now_s();
    bool ok = true;
    for (int r = 0; r < reps && ok; r++) {
      bool done = false;
      ptc_status s = cuda_conv_wg(ctx, dev, NULL, d, true, px, pw, 0, po, &done);
      ok = !s && done;
      ptc_status_destroy(s);
    }
    ok = ok && cu->StreamSynchronize(NULL) == CU_SUCCESS;
    if (!ok) {
      ms = -1;
      break;
    }
    ms = (now_s() - t0) * 1e3 / reps;
    reps = ms > 0 ? (int)(3.0 / ms) + 5 : 50;
    if (reps > 200) reps = 200;
  }
  unsetenv("PTC_CUDA_CONV_WG_CFG");
  if (prev)
    setenv("PTC_CUDA_CONV_WG", keep, 1);
  else
    unsetenv("PTC_CUDA_CONV_WG");
  return ms;
}

static double time_igemm(const cuda_conv_desc* d, cu_deviceptr px, cu_deviceptr pw, cu_deviceptr po,
                         int split) {
  const cu_api* cu = &cuda_libs_get()->cu;
  char sv[16];
  snprintf(sv, sizeof sv, "%d", split);
  if (split) setenv("PTC_CUDA_CONV_SPLIT", sv, 1);
  double ms = -1;
  int reps = 10;
  for (int round = 0; round < 2; round++) {
    double t0 = now_s();
    bool ok = true;
    for (int r = 0; r < reps && ok; r++) {
      bool done = false;
      ptc_status s = cuda_conv_igemm(ctx, dev, NULL, d, true, px, pw, 0, po, &done);
      ok = !s && done;
      ptc_status_destroy(s);
    }
    ok = ok && cu->StreamSynchronize(NULL) == CU_SUCCESS;
    if (!ok) break;
    ms = (now_s() - t0) * 1e3 / reps;
    reps = ms > 0 ? (int)(3.0 / ms) + 5 : 50; /* about 3 ms */
    if (reps > 200) reps = 200;
  }
  unsetenv("PTC_CUDA_CONV_SPLIT");
  return ms;
}

/* The convolution extern of a one-node graph, ms per call (inputs on the device). */
static double time_graph(const cuda_conv_desc* d, cu_deviceptr px, cu_deviceptr pw, const char* policy) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_graph* g = NULL;
  ptc_executable* e = NULL;
  ptc_value in[2], out = 0;
  int32_t dt = d->dtype;
  ptc_dim xs[4] = {{d->n, 0, 0}, {d->c, 0, 0}, {d->h, 0, 0}, {d->w, 0, 0}};
  ptc_dim wsd[4] = {{d->oc, 0, 0}, {d->c / d->groups, 0, 0}, {d->kh, 0, 0}, {d->kw, 0, 0}};
  int64_t st[2] = {d->sh, d->sw}, pd[2] = {d->ph, d->pw};
  ptc_attr at[2] = {ptc_attr_ints("stride", st, 2), ptc_attr_ints("padding", pd, 2)};
  ptc_status s = ptc_graph_create(ctx, &g);
  if (!s) s = ptc_graph_add_input(g, "x", dt, xs, 4, NULL, &in[0]);
  if (!s) s = ptc_graph_add_input(g, "w", dt, wsd, 4, NULL, &in[1]);
  if (!s) s = ptc_graph_add_node(g, "conv2d", in, 2, at, 2, &out, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, out);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  o.conv_precision = "high";
  if (!s) s = ptc_compile(ctx, g, &o, &e);
  double ms = -1;
  if (!s) {
    setenv("PTC_CUDA_CONV_IGEMM", policy, 1);
    int64_t xshape[4] = {d->n, d->c, d->h, d->w}, wshape[4] = {d->oc, d->c / d->groups, d->kh, d->kw};
    ptc_tensor t[2];
    memset(t, 0, sizeof t);
    t[0].data = (void*)(uintptr_t)px;
    t[1].data = (void*)(uintptr_t)pw;
    for (int i = 0; i < 2; i++) {
      t[i].device.device_type = PTC_DEVICE_CUDA;
      t[i].ndim = 4;
      t[i].dtype = ptc_dtype_to_dl(dt);
    }
    t[0].shape = xshape;
    t[1].shape = wshape;
    int reps = 5;
    for (int round = 0; round < 2 && !s; round++) {
      double t0 = now_s();
      for (int r = 0; r < reps && !s; r++) {
        ptc_results* res = NULL;
        s = ptc_executable_run_alloc(e, t, 2, NULL, &res);
        ptc_results_destroy(res);
      }
      if (!s && cu->CtxSynchronize() != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronize failed");
      ms = (now_s() - t0) * 1e3 / reps;
      reps = ms > 0 ? (int)(3.0 / ms) + 5 : 50;
      if (reps > 200) reps = 200;
    }
    unsetenv("PTC_CUDA_CONV_IGEMM");
  }
  if (s) {
    printf("  graph (policy %s): %s\n", policy, ptc_status_message(s));
    ptc_status_destroy(s);
    ms = -1;
  }
  ptc_executable_release(e);
  ptc_graph_destroy(g);
  return ms;
}

/* PTC_BENCH_LAYERS (comma-separated layer names, e.g. "l1,l4") and
 * PTC_BENCH_DTYPE ("bf16" or "tf32") restrict --bench and --profile. */
static bool bench_selected(const char* layer, int32_t dt) {
  const char* dv = getenv("PTC_BENCH_DTYPE");
  if (dv && *dv && strcmp(dv, dname(dt))) return false;
  const char* lv = getenv("PTC_BENCH_LAYERS");
  if (!lv || !*lv) return true;
  size_t n = strlen(layer);
  for (const char* p = lv; *p;) {
    const char* e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, layer, n)) return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

/* The descriptor of resnet layer l at batch 32 in dtype dt and its device
 * buffers (input and weights filled with 0x3c bytes, output unset); false
 * when device memory runs out (nothing left allocated). */
static bool layer_buffers(const lcase* l, int32_t dt, cuda_conv_desc* d, cu_deviceptr* px,
                          cu_deviceptr* pw, cu_deviceptr* po) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ccase c = {32, l->c, l->hw, l->hw, l->oc, l->k, l->k, l->s, l->s, l->p, l->p, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  int64_t xe, we;
  fill_desc(&c, dt, d, &xe, &we);
  size_t es = ptc_dtype_size(dt);
  int64_t oe = d->n * d->oc * d->oh * d->ow;
  *px = *pw = *po = 0;
  if (cuda_alloc((size_t)xe * es, NULL, px) || cuda_alloc((size_t)we * es, NULL, pw) ||
      cuda_alloc((size_t)oe * es, NULL, po)) {
    cuda_free(*px);
    cuda_free(*pw);
    *px = *pw = 0;
    return false;
  }
  cu->MemsetD8Async(*px, 0x3c, (size_t)xe * es, NULL);
  cu->MemsetD8Async(*pw, 0x3c, (size_t)we * es, NULL);
  return true;
}

/* --profile: each selected layer once through the implicit GEMM and once
 * through the wgmma kernels (where taken), for a profiler (ncu -k ...). */
static void profile(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  static const int32_t dts[2] = {PTC_BF16, PTC_F32};
  for (int di = 0; di < 2; di++)
    for (size_t li = 0; li < sizeof resnet / sizeof resnet[0]; li++) {
      const lcase* l = &resnet[li];
      if (!l->count || !bench_selected(l->name, dts[di])) continue;
      cuda_conv_desc d;
      cu_deviceptr px = 0, pw = 0, po = 0;
      if (!layer_buffers(l, dts[di], &d, &px, &pw, &po)) {
        printf("profile: out of device memory\n");
        return;
      }
      bool done = false;
      ptc_status s = cuda_conv_igemm(ctx, dev, NULL, &d, true, px, pw, 0, po, &done);
      printf("profile %s %s: igemm %s\n", dname(dts[di]), l->name, s ? ptc_status_message(s) : done ? "ran" : "not taken");
      ptc_status_destroy(s);
      done = false;
      setenv("PTC_CUDA_CONV_WG", "1", 1);
      s = cuda_conv_wg(ctx, dev, NULL, &d, true, px, pw, 0, po, &done);
      unsetenv("PTC_CUDA_CONV_WG");
      printf("profile %s %s: wgmma %s\n", dname(dts[di]), l->name, s ? ptc_status_message(s) : done ? "ran" : "not taken");
      ptc_status_destroy(s);
      cu->StreamSynchronize(NULL);
      cuda_free(px);
      cuda_free(pw);
      cuda_free(po);
    }
}

static void bench(void) {
  static const int32_t dts[2] = {PTC_BF16, PTC_F32};
  for (int di = 0; di < 2; di++) {
    double tot[5] = {0, 0, 0, 0, 0}, tot_wg = 0, tot_best = 0, tot_wgdef = 0;
    for (size_t li = 0; li < sizeof resnet / sizeof resnet[0]; li++) {
      const lcase* l = &resnet[li];
      if (!bench_selected(l->name, dts[di])) continue;
      cuda_conv_desc d;
      cu_deviceptr px = 0, pw = 0, po = 0;
      if (!layer_buffers(l, dts[di], &d, &px, &pw, &po)) {
        printf("bench: out of device memory\n");
        return;
      }
      int64_t oe = d.n * d.oc * d.oh * d.ow;
      cuda_conv_shape sh;
      cuda_conv_igemm_shape(&d, dev->sm_count, dev->max_smem_optin, &sh);
      double t_auto = time_igemm(&d, px, pw, po, 0);
      double t_s[4];
      static const int splits[4] = {1, 2, 4, 8};
      /* the split sweep and the extern variants only with PTC_BENCH_FULL=1 */
      bool full = getenv("PTC_BENCH_FULL") != NULL;
      for (int i = 0; i < 4; i++) t_s[i] = full ? time_igemm(&d, px, pw, po, splits[i]) : -1;
      double t_col = full ? time_graph(&d, px, pw, "0") : -1, t_ig = full ? time_graph(&d, px, pw, "2") : -1;
      double t_def = time_graph(&d, px, pw, "1");
      setenv("PTC_CUDA_CONV_VEC", "0", 1);
      double t_novec = full ? time_graph(&d, px, pw, "1") : -1;
      unsetenv("PTC_CUDA_CONV_VEC");
      /* the wgmma kernels: chosen tile shape, each forced one, and the
       * extern's default policy with them tried first */
      double t_wg = -1, t_wgc[3] = {-1, -1, -1}, t_wgdef = -1;
      cuda_conv_wg_plan pl;
      memset(&pl, 0, sizeof pl);
      if (dev->cc_major == 9 && dev->cc_minor == 0 && !cuda_conv_wg_refusal(9, 0, &d, true) &&
          cuda_conv_wg_shape(&d, dev->sm_count, dev->max_smem_optin, -1, &pl)) {
        t_wg = time_wg(&d, px, pw, po, -1);
        for (int i = 0; i < 3; i++) t_wgc[i] = time_wg(&d, px, pw, po, i);
        const char* prev = getenv("PTC_CUDA_CONV_WG");
        char keep[8] = "";
        if (prev) snprintf(keep, sizeof keep, "%s", prev);
        setenv("PTC_CUDA_CONV_WG", "1", 1);
        t_wgdef = time_graph(&d, px, pw, "1");
        if (prev)
          setenv("PTC_CUDA_CONV_WG", keep, 1);
        else
          unsetenv("PTC_CUDA_CONV_WG");
      }
      double best = t_def;
      if (t_wg > 0 && t_wg < best) best = t_wg;
      tot_wg += (double)l->count * (t_wg > 0 ? t_wg : t_def);
      tot_wgdef += (double)l->count * (t_wgdef > 0 ? t_wgdef : t_def);
      tot_best += (double)l->count * best;
      printf("bench %s %-6s wgmma %.4f ms (%.0f TFLOP/s; cfg %d: bm %d bn %d, %lld blocks, smem %lld) | "
             "cfg 0/1/2: %.4f %.4f %.4f | extern default + wgmma %.4f\n", dname(dts[di]), l->name, t_wg,
             t_wg > 0 ? 2.0 * (double)oe * (double)(d.c * d.kh * d.kw) / t_wg / 1e9 : 0, pl.cfg, pl.bm, pl.bn,
             (long long)pl.blocks, (long long)pl.smem, t_wgc[0], t_wgc[1], t_wgc[2], t_wgdef);
      double fl = 2.0 * (double)oe * (double)(d.c * d.kh * d.kw);
      printf("bench %s %-6s c%-3lld %3lldx%-3lld oc%-4lld k%lld s%lld: igemm %.4f ms (%.0f TFLOP/s; "
             "%s bm %d x %d threads split %d) | split 1/2/4/8: %.4f %.4f %.4f %.4f | extern im2col %.4f, igemm %.4f, "
             "default %.4f (vector wide kernels off %.4f)\n",
             dname(dts[di]), l->name, (long long)l->c, (long long)l->hw, (long long)l->hw,
             (long long)l->oc, (long long)l->k, (long long)l->s, t_auto,
             t_auto > 0 ? fl / t_auto / 1e9 : 0, sh.tap ? "tap-major" : "channel-major", sh.bm,
             sh.threads, sh.splits, t_s[0], t_s[1], t_s[2], t_s[3],
             t_col, t_ig, t_def, t_novec);
      fflush(stdout);
      tot[0] += (double)l->count * t_auto;
      tot[1] += (double)l->count * t_col;
      tot[2] += (double)l->count * t_ig;
      tot[3] += (double)l->count * t_def;
      tot[4] += (double)l->count * t_novec;
      cuda_free(px);
      cuda_free(pw);
      cuda_free(po);
    }
    printf("bench %s resnet18 b32 convolutions (sum over its 20 layers): igemm kernel %.3f ms, "
           "extern im2col %.3f ms, extern igemm %.3f ms, extern default policy %.3f ms (vector wide "
           "kernels off: %.3f ms)\n",
           dname(dts[di]), tot[0], tot[1], tot[2], tot[3], tot[4]);
    printf("bench %s resnet18 b32 convolutions (sum over its 20 layers): wgmma kernels where taken "
           "(else the default extern) %.3f ms; extern default + wgmma %.3f ms; best of wgmma / default "
           "%.3f ms\n", dname(dts[di]), tot_wg, tot_wgdef, tot_best);
  }
}

int main(int argc, char** argv) {
  bool compile_only = argc > 1 && !strcmp(argv[1], "--compile-only");
  bool do_bench = argc > 1 && !strcmp(argv[1], "--bench");
  bool do_profile = argc > 1 && !strcmp(argv[1], "--profile");
  bool only_exact = argc > 1 && !strcmp(argv[1], "--tf32-exact");
  if (compile_only) {
    int bad = check_shapes();
    if (bad) return 1;
    printf("shape choice and refusals: ok\n");
    const char* why = cuda_nvrtc_unavailable();
    if (why) {
      printf("skipped: %s\n", why);
      return 77;
    }
    static const int archs[2] = {80, 90};
    for (int i = 0; i < 2; i++) {
      double t0 = now_s();
      ptc_status s = cuda_conv_igemm_check_compile(archs[i]);
      if (s) {
        printf("FAIL: the implicit-GEMM convolution module for sm_%d: %s\n", archs[i],
               ptc_status_message(s));
        const char* log = ptc_status_detail(s, "compiler_log");
        if (log) printf("%s\n", log);
        ptc_status_destroy(s);
        return 1;
      }
      printf("implicit-GEMM convolution module: compiled for sm_%d (%.0f ms)\n", archs[i],
             (now_s() - t0) * 1e3);
    }
    double t0 = now_s();
    ptc_status s = cuda_conv_wg_check_compile(false);
    if (s) {
      printf("FAIL: the wgmma convolution module for sm_90a: %s\n", ptc_status_message(s));
      const char* log = ptc_status_detail(s, "compiler_log");
      if (log) printf("%s\n", log);
      ptc_status_destroy(s);
      return 1;
    }
    printf("wgmma convolution module: compiled for sm_90a (%.0f ms)\n", (now_s() - t0) * 1e3);
    return 0;
  }
  if (!do_bench && !do_profile && check_shapes()) return 1; /* (benchmarks may force shapes) */
  dev = cuda_device_get();
  if (!dev) {
    printf("skipped: %s\n", cuda_unavailable_reason());
    return 77;
  }
  if (dev->cc_major < 8) {
    printf("skipped: %s is sm_%d%d (the implicit-GEMM convolution needs sm_80)\n", dev->name,
           dev->cc_major, dev->cc_minor);
    return 77;
  }
  ptc_status s = ptc_context_create(NULL, &ctx);
  cu_context prev;
  if (!s) s = cuda_ctx_enter(dev, &prev);
  if (s) {
    printf("FAIL: setup: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    return 1;
  }
  printf("device: %s (sm_%d%d, %d SMs)\n", dev->name, dev->cc_major, dev->cc_minor, dev->sm_count);
  if (do_bench) {
    bench();
  } else if (do_profile) {
    profile();
  } else if (only_exact) {
    run_tf32_exact();
    printf("test_cuda_conv --tf32-exact: %d passed, %d failed\n", passed, failed);
  } else {
    double t0 = now_s();
    run_all();
    run_all_wg();
    run_pools();
    run_graphs();
    run_tf32_exact();
    run_wcache();
    run_i2c();
    printf("test_cuda_conv: %d passed, %d failed (%.1f s)\n", passed, failed, now_s() - t0);
  }
  cuda_ctx_leave(dev, prev);
  ptc_context_release(ctx);
  return failed ? 1 : 0;
}
