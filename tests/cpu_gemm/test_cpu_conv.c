/* test_cpu_conv.c - cpu_conv2d_f32/f64 against a naive long-double loop:
 * stride, padding, dilation, groups (incl. depthwise), 1x1 (x read as B
 * directly), conv1d, even kernels with 'same' output sizes, channels-last
 * and padded layouts of input/weight/output, bias, alpha/beta and
 * activations, batches run as parallel jobs; plus the geometry errors.
 * Every case runs twice: as given and with the output channels per group
 * moved across CONV_DIRECT_MAX_COG (3), so both the GEMM path (im2col fused
 * into packing) and the direct path see every geometry. */
#include <stdlib.h>
#include <string.h>

#include "../../backends/cpu/cpu.h"
#include "../check.h"
#include "gemm_ref.h"

/* ---- strided 4-d tensors -------------------------------------------------------------- */
typedef enum tlayout { T_NCHW, T_NHWC, T_PADDED } tlayout;

typedef struct t4 {
  size_t es;
  int64_t shape[4], strides[4];
  size_t span;
  char* mem;
} t4;

/* Memory order of the dims (outer first) per layout. */
static const int perms[3][4] = {{0, 1, 2, 3}, {0, 2, 3, 1}, {0, 1, 2, 3}};

static void t4_init(t4* t, size_t es, const int64_t* shape, tlayout l) {
  t->es = es;
  int64_t step = l == T_PADDED ? 2 : 1, acc = step;
  for (int d = 3; d >= 0; d--) {
    int dim = perms[l][d];
    t->shape[dim] = shape[dim];
    t->strides[dim] = acc;
    acc *= (shape[dim] > 0 ? shape[dim] : 1) + (l == T_PADDED ? 1 : 0);
  }
  t->span = (size_t)acc;
  t->mem = calloc(t->span, es);
}

static int64_t t4_off(const t4* t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
}

static void t4_set(t4* t, int64_t off, double v) {
  if (t->es == 4) {
    float f = (float)v;
    memcpy(t->mem + (size_t)off * 4, &f, 4);
  } else {
    memcpy(t->mem + (size_t)off * 8, &v, 8);
  }
}

static double t4_get(const t4* t, int64_t off) {
  if (t->es == 4) {
    float f;
    memcpy(&f, t->mem + (size_t)off * 4, 4);
    return f;
  }
  double d;
  memcpy(&d, t->mem + (size_t)off * 8, 8);
  return d;
}

/* ---- cases ------------------------------------------------------------------------------ */
typedef struct ccase {
  int64_t n, cin, h, w, cout, kh, kw;
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t out_h, out_w; /* 0: the formula */
  bool bias;
  int32_t act;
  double alpha, beta;
  tlayout lx, lw, lo;
} ccase;

static void fill_geom(const ccase* c, cpu_conv_geom* g) {
  memset(g, 0, sizeof *g);
  g->n = c->n;
  g->c_in = c->cin;
  g->h = c->h;
  g->w = c->w;
  g->c_out = c->cout;
  g->kh = c->kh;
  g->kw = c->kw;
  g->stride[0] = c->sh;
  g->stride[1] = c->sw;
  g->pad[0] = c->ph;
  g->pad[1] = c->pw;
  g->dil[0] = c->dh;
  g->dil[1] = c->dw;
  g->groups = c->groups;
  g->out_h = c->out_h ? c->out_h : cpu_conv_out_size(c->h, c->kh, c->sh, c->ph, c->dh);
  g->out_w = c->out_w ? c->out_w : cpu_conv_out_size(c->w, c->kw, c->sw, c->pw, c->dw);
  g->alpha = c->alpha;
  g->beta = c->beta;
  g->activation = c->act;
}

/* Runs one case in one element type; true when all outputs are in bounds. */
static bool run_conv(const ccase* c, size_t es, uint64_t seed) {
  cpu_conv_geom g;
  fill_geom(c, &g);
  int64_t cig = c->cin / c->groups, cog = c->cout / c->groups, K = cig * c->kh * c->kw;
  const int64_t xs[4] = {c->n, c->cin, c->h, c->w}, ws[4] = {c->cout, cig, c->kh, c->kw},
                os[4] = {c->n, c->cout, g.out_h, g.out_w}, bs[4] = {1, 1, 1, c->cout};
  t4 x, w, o, b;
  t4_init(&x, es, xs, c->lx);
  t4_init(&w, es, ws, c->lw);
  t4_init(&o, es, os, c->lo);
  t4_init(&b, es, bs, T_PADDED);
  for (size_t i = 0; i < x.span; i++) t4_set(&x, (int64_t)i, (float)rnd_next(&seed));
  for (size_t i = 0; i < w.span; i++) t4_set(&w, (int64_t)i, (float)rnd_next(&seed));
  for (size_t i = 0; i < b.span; i++) t4_set(&b, (int64_t)i, (float)rnd_next(&seed));
  for (size_t i = 0; i < o.span; i++) t4_set(&o, (int64_t)i, NAN);
  memcpy(g.x_strides, x.strides, sizeof g.x_strides);
  memcpy(g.w_strides, w.strides, sizeof g.w_strides);
  memcpy(g.out_strides, o.strides, sizeof g.out_strides);
  g.bias_stride = b.strides[3];
  ptc_status s = es == 4 ? cpu_conv2d_f32(&g, (const float*)x.mem, (const float*)w.mem,
                                          c->bias ? (const float*)b.mem : NULL, (float*)o.mem)
                         : cpu_conv2d_f64(&g, (const double*)x.mem, (const double*)w.mem,
                                          c->bias ? (const double*)b.mem : NULL,
                                          (double*)o.mem);
  bool ok = s == PTC_OK;
  ptc_status_destroy(s);
  double eps = es == 4 ? FLT_EPSILON : DBL_EPSILON;
  for (int64_t n = 0; n < c->n && ok; n++)
    for (int64_t co = 0; co < c->cout && ok; co++)
      for (int64_t oh = 0; oh < g.out_h && ok; oh++)
        for (int64_t ow = 0; ow < g.out_w && ok; ow++) {
          long double acc = 0, mag = 0;
          int64_t gi = co / cog;
          for (int64_t ci = 0; ci < cig; ci++)
            for (int64_t i = 0; i < c->kh; i++)
              for (int64_t j = 0; j < c->kw; j++) {
                int64_t ih = oh * c->sh - c->ph + i * c->dh, iw = ow * c->sw - c->pw + j * c->dw;
                if (ih < 0 || ih >= c->h || iw < 0 || iw >= c->w) continue;
                long double p = (long double)t4_get(&x, t4_off(&x, n, gi * cig + ci, ih, iw)) *
                                t4_get(&w, t4_off(&w, co, ci, i, j));
                acc += p;
                mag += fabsl(p);
              }
          acc *= c->alpha;
          mag *= fabs(c->alpha);
          if (c->bias) {
            double bv = c->beta * t4_get(&b, co * b.strides[3]);
            acc += bv;
            mag += fabs(bv);
          }
          double want = ref_act((double)acc, c->act), got = t4_get(&o, t4_off(&o, n, co, oh, ow));
          if (!(fabs(got - want) <= ref_tol((double)mag, want, K, eps))) {
            printf("  f%d mismatch at [%lld,%lld,%lld,%lld]: got %.9g want %.9g\n",
                   (int)es * 8, (long long)n, (long long)co, (long long)oh, (long long)ow, got,
                   want);
            ok = false;
          }
        }
  free(x.mem);
  free(w.mem);
  free(o.mem);
  free(b.mem);
  return ok;
}

static void check_case(const ccase* c, uint64_t seed) {
  for (size_t es = 4; es <= 8; es += 4) {
    bool ok = run_conv(c, es, seed);
    CHECK(ok);
    if (!ok)
      printf("  case n%lld c%lld %lldx%lld -> %lld k%lldx%lld s%lld,%lld p%lld,%lld d%lld,%lld "
             "g%lld act %s\n",
             (long long)c->n, (long long)c->cin, (long long)c->h, (long long)c->w,
             (long long)c->cout, (long long)c->kh, (long long)c->kw, (long long)c->sh,
             (long long)c->sw, (long long)c->ph, (long long)c->pw, (long long)c->dh,
             (long long)c->dw, (long long)c->groups, act_names[c->act]);
  }
}

/* n cin h w cout kh kw | sh sw ph pw dh dw groups | out_h out_w | bias act alpha beta | layouts */
static const ccase cases[] = {
    {1, 1, 5, 5, 1, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0, false, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    {2, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    {2, 4, 8, 8, 6, 3, 3, 2, 2, 1, 1, 1, 1, 2, 0, 0, true, IR_ACT_RELU, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
    {1, 3, 10, 11, 5, 3, 2, 2, 1, 1, 0, 2, 1, 1, 0, 0, true, IR_ACT_GELU, 0.5, 2, T_NCHW, T_NCHW,
     T_NCHW},
    /* depthwise */
    {2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 0, 0, true, IR_ACT_SILU, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
    /* depthwise with channel multiplier 2 */
    {1, 4, 6, 7, 8, 3, 3, 1, 2, 2, 1, 1, 1, 4, 0, 0, false, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    /* 1x1: x read directly (contiguous and channels-last), then strided */
    {2, 16, 7, 7, 8, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, true, IR_ACT_SIGMOID, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
    {2, 16, 7, 5, 8, 1, 1, 1, 1, 0, 0, 1, 1, 2, 0, 0, true, IR_ACT_TANH, 1, 1, T_NHWC, T_NHWC,
     T_NHWC},
    {1, 6, 9, 9, 4, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0, 0, false, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    /* conv1d: h = kh = 1 */
    {3, 4, 1, 50, 6, 1, 5, 1, 2, 0, 2, 1, 3, 1, 0, 0, true, IR_ACT_GELU_TANH, 1, 1, T_NCHW,
     T_NCHW, T_NCHW},
    {2, 6, 1, 33, 6, 1, 3, 1, 1, 0, 1, 1, 1, 3, 0, 0, true, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    /* padding 'same' with an even kernel: leading pad 1, output = input size */
    {1, 3, 8, 8, 2, 4, 4, 1, 1, 1, 1, 1, 1, 1, 8, 8, true, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    /* layouts: channels-last everything, padded everything, mixed */
    {2, 5, 9, 8, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, IR_ACT_RELU, 1, 1, T_NHWC, T_NHWC,
     T_NHWC},
    {2, 4, 6, 6, 6, 2, 3, 1, 2, 1, 1, 2, 1, 2, 0, 0, true, 0, -1, 0.5, T_PADDED, T_PADDED,
     T_PADDED},
    {1, 6, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, 0, 1, 0, T_NHWC, T_PADDED, T_NCHW},
    /* kernel larger than the input with padding; kernel = input */
    {1, 2, 3, 3, 3, 5, 5, 1, 1, 2, 2, 1, 1, 1, 0, 0, true, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    {2, 3, 4, 4, 5, 4, 4, 1, 1, 0, 0, 1, 1, 1, 0, 0, false, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    /* bigger: the GEMM runs threaded (one job at a time) */
    {1, 32, 34, 34, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, IR_ACT_RELU, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
    /* large K x spatial: many packed panels spanning output rows */
    {1, 64, 100, 100, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    /* direct path: more taps than one pass sums (72 > 32); rows longer than
     * its 256-column blocks; depthwise channels-last (strided taps) */
    {1, 8, 9, 9, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, IR_ACT_RELU, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
    {1, 2, 1, 600, 2, 1, 3, 1, 1, 0, 1, 1, 1, 1, 0, 0, true, IR_ACT_SILU, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
    {2, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 0, 0, true, 0, 1, 1, T_NHWC, T_NHWC, T_NHWC},
    /* many small jobs: run in parallel with each other */
    {16, 4, 6, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1, 2, 0, 0, true, IR_ACT_GELU, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
    /* empty: no batch, no output channels, no input channels (bias only) */
    {0, 3, 5, 5, 2, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0, true, 0, 1, 1, T_NCHW, T_NCHW, T_NCHW},
    {1, 0, 5, 5, 2, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0, true, IR_ACT_TANH, 1, 1, T_NCHW, T_NCHW,
     T_NCHW},
};

static void test_cases(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ccase c = cases[i];
    check_case(&c, 11 + i);
    c.cout = c.cout / c.groups <= 3 ? c.cout * 4 : c.groups; /* the other path */
    check_case(&c, 11 + i);
  }
}

static void test_out_size(void) {
  CHECK(cpu_conv_out_size(5, 3, 1, 0, 1) == 3);
  CHECK(cpu_conv_out_size(8, 3, 2, 1, 1) == 4);
  CHECK(cpu_conv_out_size(10, 3, 2, 1, 2) == 4);
  CHECK(cpu_conv_out_size(2, 5, 1, 0, 1) == 0);
  CHECK(cpu_conv_out_size(5, 3, 0, 0, 1) == 0);
}

static void test_errors(void) {
  ccase c = {1, 4, 5, 5, 6, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0, false, 0, 1, 1,
             T_NCHW, T_NCHW, T_NCHW};
  cpu_conv_geom g;
  float dummy[4] = {0};
  fill_geom(&c, &g);
  g.groups = 4; /* divides c_in, not c_out */
  CHECK_ERR(cpu_conv2d_f32(&g, dummy, dummy, NULL, dummy), PTC_CODE_INVALID_ARGUMENT,
            "groups (4) must divide");
  fill_geom(&c, &g);
  g.stride[1] = 0;
  CHECK_ERR(cpu_conv2d_f32(&g, dummy, dummy, NULL, dummy), PTC_CODE_INVALID_ARGUMENT,
            "stride[1] must be >= 1");
  fill_geom(&c, &g);
  g.pad[0] = -1;
  CHECK_ERR(cpu_conv2d_f64(&g, NULL, NULL, NULL, NULL), PTC_CODE_INVALID_ARGUMENT,
            "pad[0] must be >= 0");
  fill_geom(&c, &g);
  g.kh = 0;
  CHECK_ERR(cpu_conv2d_f32(&g, dummy, dummy, NULL, dummy), PTC_CODE_INVALID_ARGUMENT,
            "kh must be >= 1");
  fill_geom(&c, &g);
  g.groups = 0;
  CHECK_ERR(cpu_conv2d_f32(&g, dummy, dummy, NULL, dummy), PTC_CODE_INVALID_ARGUMENT,
            "groups must be >= 1");
}

int main(void) {
  test_out_size();
  test_cases();
  test_errors();
  return check_summary("test_cpu_conv");
}
