/* cpu_conv.c - 2-D (and 1-D) convolution for the CPU backend: geometry
 * checks and one GEMM per (batch element, group) through cpu_gemm_run, with
 * im2col fused into the GEMM's packing of B (cpu_conv_pack.inc: no column
 * buffer), 1x1 stride-1 convolutions reading x directly as B, and the bias
 * (per output channel = per GEMM row), alpha and activation fused into the
 * GEMM's epilogue; groups of at most CONV_DIRECT_MAX_COG output channels
 * (depthwise) run directly (cpu_conv_direct.inc). GEMM orientation:
 * C[co, s] = W[co, k] * B[k, s] with k = (ci, i, j) and s = (oh, ow), so C
 * rows are output channels and C columns the (contiguous) output
 * positions. */
#include <stdint.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../../lib/core/core.h"
#include "cpu.h"
#include "cpu_gemm_internal.h"

/* Jobs (batch element x group) below this many flops each run in parallel
 * with each other (serial GEMMs) instead of one after another. */
#define CONV_SMALL_JOB 1.0e8
/* At most this many output channels per group: direct convolution (a GEMM
 * would pad its MR-row tiles), in rows of at most CONV_DIRECT_COLS. */
#define CONV_DIRECT_MAX_COG 3
#define CONV_DIRECT_COLS 256
/* Kernel taps summed per pass of the direct convolution. */
#define CONV_TAPS 32
/* Total flops below which the direct convolution runs serially. */
#define CONV_DIRECT_PAR 1.0e6

typedef struct conv_ctx {
  const cpu_conv_geom* G;
  const cpu_gemm_kernel* kn;
  size_t es;
  const char* x;
  const char* wraw; /* the weights as given (strides G->w_strides) */
  const char* w;    /* as a [c_out, K] matrix with strides w_sm, w_sk */
  int64_t w_sm, w_sk;
  const char* bias;
  char* out;
  int64_t cig, cog, K;
  int64_t rows;    /* output rows per GEMM (all, or 1 when they do not flatten) */
  bool direct_1x1; /* B is x itself */
} conv_ctx;

/* What the packing callback needs for one GEMM. */
typedef struct conv_pack_ctx {
  const conv_ctx* c;
  const char* xg; /* x at [n, first channel of the group] */
  int64_t oh0;    /* first output row of this GEMM */
} conv_pack_ctx;

/* A panel's columns split into runs that stay in one output row. */
typedef struct conv_segs {
  int n;
  int64_t c0[CPU_GEMM_MAX_NR], len[CPU_GEMM_MAX_NR], oh[CPU_GEMM_MAX_NR], ow0[CPU_GEMM_MAX_NR];
} conv_segs;

/* ---- packing ------------------------------------------------------------------------- */
/* [lo, hi) of l in [0, n) with 0 <= off + l*s < lim (lo == hi when none). */
static void valid_range(int64_t off, int64_t s, int64_t lim, int64_t n, int64_t* lo, int64_t* hi) {
  int64_t a, b;
  if (s == 1) {
    a = -off;
    b = lim - off;
  } else {
    a = off >= 0 ? 0 : (-off + s - 1) / s;
    b = lim - off <= 0 ? 0 : (lim - off + s - 1) / s;
  }
  *lo = a < 0 ? 0 : a < n ? a : n;
  *hi = b < *lo ? *lo : b < n ? b : n;
}

static void conv_segments(const conv_pack_ctx* cp, int64_t j0, int64_t cols, conv_segs* sg) {
  const int64_t ow_n = cp->c->G->out_w;
  int64_t col = 0, s = j0;
  sg->n = 0;
  while (col < cols) {
    int64_t ow = s % ow_n, len = ow_n - ow < cols - col ? ow_n - ow : cols - col;
    sg->c0[sg->n] = col;
    sg->len[sg->n] = len;
    sg->oh[sg->n] = cp->oh0 + s / ow_n;
    sg->ow0[sg->n] = ow;
    sg->n++;
    col += len;
    s += len;
  }
}

#define CT uint32_t
#define CS(x) x##_b32
#include "cpu_conv_pack.inc"
#undef CT
#undef CS
#define CT uint64_t
#define CS(x) x##_b64
#include "cpu_conv_pack.inc"
#undef CT
#undef CS

/* ---- direct path ----------------------------------------------------------------------- */
#define CT float
#define CS(x) x##_f32
#include "cpu_conv_direct.inc"
#undef CT
#undef CS
#define CT double
#define CS(x) x##_f64
#include "cpu_conv_direct.inc"
#undef CT
#undef CS

static void run_direct(const conv_ctx* c, int nt) {
  const cpu_conv_geom* G = c->G;
  int64_t jobs = G->n * G->c_out;
  double flops = 2.0 * (double)jobs * (double)c->K * (double)G->out_h * (double)G->out_w;
  bool par = nt > 1 && flops >= CONV_DIRECT_PAR;
  (void)par; /* used by the pragma only */
  CPU_OMP(parallel for schedule(dynamic, 1) num_threads(nt) if (par))
  for (int64_t j = 0; j < jobs; j++) {
    if (c->es == 4)
      direct_job_f32(c, j / G->c_out, j % G->c_out);
    else
      direct_job_f64(c, j / G->c_out, j % G->c_out);
  }
}

/* ---- jobs ---------------------------------------------------------------------------- */
/* Output rows [oh0, oh1) of batch element n, group gi: one GEMM. */
static bool conv_gemm(const conv_ctx* c, int64_t n, int64_t gi, int64_t oh0, int64_t oh1,
                      int max_threads) {
  const cpu_conv_geom* G = c->G;
  const size_t es = c->es;
  conv_pack_ctx cp = {c, c->x + (size_t)(n * G->x_strides[0] + gi * c->cig * G->x_strides[1]) * es,
                      oh0};
  cpu_gemm_args a;
  memset(&a, 0, sizeof a);
  a.m = c->cog;
  a.n = (oh1 - oh0) * G->out_w;
  a.k = c->K;
  a.alpha = G->alpha;
  a.beta = G->beta;
  a.a = c->w + (size_t)(gi * c->cog * c->w_sm) * es;
  a.a_sm = c->w_sm;
  a.a_sk = c->w_sk;
  if (c->direct_1x1) {
    a.b = cp.xg + (size_t)(oh0 * G->x_strides[2]) * es;
    a.b_sk = G->x_strides[1];
    a.b_sn = G->x_strides[3];
  } else {
    a.pack_b_fn = es == 4 ? conv_pack_b32 : conv_pack_b64;
    a.pack_b_ctx = &cp;
  }
  a.bias = c->bias ? c->bias + (size_t)(gi * c->cog * G->bias_stride) * es : NULL;
  a.bias_sm = G->bias_stride;
  a.bias_sn = 0;
  a.c = c->out + (size_t)(n * G->out_strides[0] + gi * c->cog * G->out_strides[1] +
                          oh0 * G->out_strides[2]) * es;
  a.c_sm = G->out_strides[1];
  a.c_sn = G->out_strides[3];
  a.act = G->activation;
  return cpu_gemm_run(c->kn, &a, CPU_GEMM_PATH_AUTO, max_threads);
}

static bool conv_job(const conv_ctx* c, int64_t job, int max_threads) {
  int64_t n = job / c->G->groups, gi = job % c->G->groups;
  bool ok = true;
  for (int64_t oh0 = 0; oh0 < c->G->out_h && ok; oh0 += c->rows) {
    int64_t oh1 = oh0 + c->rows < c->G->out_h ? oh0 + c->rows : c->G->out_h;
    ok = conv_gemm(c, n, gi, oh0, oh1, max_threads);
  }
  return ok;
}

/* ---- setup ----------------------------------------------------------------------------- */
int64_t cpu_conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
  int64_t room = in + 2 * pad - dil * (k - 1) - 1;
  if (stride < 1) return 0;
  return room < 0 ? 0 : room / stride + 1;
}

static ptc_status check_geom(const cpu_conv_geom* G) {
  const struct {
    const char* name;
    int64_t v, min;
  } f[] = {{"n", G->n, 0},          {"c_in", G->c_in, 0},       {"h", G->h, 0},
           {"w", G->w, 0},          {"c_out", G->c_out, 0},     {"kh", G->kh, 1},
           {"kw", G->kw, 1},        {"out_h", G->out_h, 0},     {"out_w", G->out_w, 0},
           {"stride[0]", G->stride[0], 1}, {"stride[1]", G->stride[1], 1},
           {"pad[0]", G->pad[0], 0},       {"pad[1]", G->pad[1], 0},
           {"dil[0]", G->dil[0], 1},       {"dil[1]", G->dil[1], 1},
           {"groups", G->groups, 1}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (f[i].v < f[i].min)
      return PTC_ERR(INVALID_ARGUMENT, "conv2d: %s must be >= %lld, got %lld", f[i].name,
                     (long long)f[i].min, (long long)f[i].v);
  if (G->c_in % G->groups || G->c_out % G->groups)
    return PTC_ERR(INVALID_ARGUMENT,
                   "conv2d: groups (%lld) must divide c_in (%lld) and c_out (%lld)",
                   (long long)G->groups, (long long)G->c_in, (long long)G->c_out);
  return PTC_OK;
}

static int conv_max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

/* Stride of the flattening of dims with `sizes`/`strides` (outermost
 * first) into one index, or false when they do not flatten. */
static bool flat_stride(const int64_t* sizes, const int64_t* strides, int nd, int64_t* out) {
  int64_t inner = 1, unit = 0;
  bool have = false;
  for (int d = nd - 1; d >= 0; d--) {
    if (sizes[d] == 1) continue;
    if (!have) {
      unit = strides[d];
      have = true;
    } else if (strides[d] != inner * unit) {
      return false;
    }
    inner *= sizes[d];
  }
  *out = have ? unit : 1;
  return true;
}

/* Weight as a [c_out, K] matrix: a view when (ci, i, j) flatten to one
 * stride, else a packed copy into *copy (freed by the caller). */
static ptc_status weight_matrix(conv_ctx* c, const char* w, char** copy, size_t* copy_size) {
  const cpu_conv_geom* G = c->G;
  const int64_t* s = G->w_strides;
  const int64_t sizes[3] = {c->cig, G->kh, G->kw};
  *copy = NULL;
  c->w_sm = s[0];
  if (flat_stride(sizes, s + 1, 3, &c->w_sk)) {
    c->w = w;
    return PTC_OK;
  }
  *copy_size = (size_t)(G->c_out * c->K) * c->es;
  if (*copy_size == 0) *copy_size = 1;
  *copy = ptc_alloc_ctx(NULL, *copy_size, CPU_GEMM_ALIGN);
  if (!*copy) return ptc_status_oom();
  for (int64_t co = 0; co < G->c_out; co++)
    for (int64_t k = 0; k < c->K; k++) {
      int64_t ci = k / (G->kh * G->kw), i = k / G->kw % G->kh, j = k % G->kw;
      memcpy(*copy + (size_t)(co * c->K + k) * c->es,
             w + (size_t)(co * s[0] + ci * s[1] + i * s[2] + j * s[3]) * c->es, c->es);
    }
  c->w = *copy;
  c->w_sm = c->K;
  c->w_sk = 1;
  return PTC_OK;
}

/* Rows per GEMM and the 1x1 shortcut. */
static void plan_rows(conv_ctx* c) {
  const cpu_conv_geom* G = c->G;
  bool out_flat = G->out_h <= 1 || G->out_strides[2] == G->out_w * G->out_strides[3];
  bool x_flat = G->out_h <= 1 || G->x_strides[2] == G->out_w * G->x_strides[3];
  c->direct_1x1 = G->kh == 1 && G->kw == 1 && G->stride[0] == 1 && G->stride[1] == 1 &&
                  G->pad[0] == 0 && G->pad[1] == 0 && G->out_h <= G->h && G->out_w <= G->w;
  c->rows = out_flat && (x_flat || !c->direct_1x1) ? G->out_h : 1;
}

static ptc_status conv_run(const cpu_conv_geom* G, size_t es, const void* x, const void* w,
                           const void* bias, void* out) {
  PTC_TRY(check_geom(G));
  if (G->n == 0 || G->c_out == 0 || G->out_h == 0 || G->out_w == 0) return PTC_OK;
  conv_ctx c = {G, cpu_gemm_kernel_for(es, cpu_gemm_best_isa()), es, x, w, NULL, 0, 0,
                bias, out, G->c_in / G->groups, G->c_out / G->groups, 0, 0, false};
  c.K = c.cig * G->kh * G->kw;
  int nt = conv_max_threads();
  if (c.cog <= CONV_DIRECT_MAX_COG) {
    run_direct(&c, nt);
    return PTC_OK;
  }
  char* wcopy = NULL;
  size_t wsize = 0;
  PTC_TRY(weight_matrix(&c, w, &wcopy, &wsize));
  plan_rows(&c);
  int64_t jobs = G->n * G->groups;
  double job_flops = 2.0 * (double)c.cog * (double)c.K * (double)G->out_h * (double)G->out_w;
  bool ok = true;
  if (nt > 1 && jobs >= nt && job_flops < CONV_SMALL_JOB) {
    CPU_OMP(parallel for schedule(dynamic, 1) num_threads(nt) reduction(&& : ok))
    for (int64_t j = 0; j < jobs; j++) ok = conv_job(&c, j, 1) && ok;
  } else {
    for (int64_t j = 0; j < jobs && ok; j++) ok = conv_job(&c, j, 0);
  }
  if (wcopy) ptc_free_ctx(NULL, wcopy, wsize, CPU_GEMM_ALIGN);
  return ok ? PTC_OK : ptc_status_oom();
}

ptc_status cpu_conv2d_f32(const cpu_conv_geom* geom, const float* x, const float* w,
                          const float* bias, float* out) {
  return conv_run(geom, sizeof(float), x, w, bias, out);
}

ptc_status cpu_conv2d_f64(const cpu_conv_geom* geom, const double* x, const double* w,
                          const double* bias, double* out) {
  return conv_run(geom, sizeof(double), x, w, bias, out);
}
