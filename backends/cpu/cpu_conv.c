/* cpu_conv.c - 2-D (and 1-D) convolution for the CPU backend: geometry
 * checks, im2col into bounded per-thread buffers, and one GEMM per (batch
 * element, group, chunk of output rows) through cpu_gemm_run with the bias
 * (per output channel = per GEMM row), alpha and activation fused into the
 * GEMM's epilogue. GEMM orientation: C[co, s] = W[co, k] * col[k, s] with
 * k = (ci, i, j) and s = (oh, ow), so C rows are output channels and C
 * columns the (contiguous) output positions. */
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../../lib/core/core.h"
#include "cpu.h"
#include "cpu_gemm_internal.h"

/* Elements of one im2col buffer (per thread) at most, unless a single
 * output row needs more. */
#define CONV_COL_CAP ((int64_t)1 << 22)
/* Jobs (batch element x group) below this many flops each run in parallel
 * with each other (serial GEMMs) instead of one after another. */
#define CONV_SMALL_JOB 1.0e8
/* im2col work (elements) below which it is not split across threads. */
#define CONV_PAR_IM2COL ((int64_t)1 << 16)

typedef struct conv_ctx {
  const cpu_conv_geom* G;
  const cpu_gemm_kernel* kn;
  size_t es;
  const char* x;
  const char* w; /* as a [c_out, K] matrix with strides w_sm, w_sk */
  int64_t w_sm, w_sk;
  const char* bias;
  char* out;
  int64_t cig, cog, K;
  int64_t rows;       /* output rows per chunk */
  bool direct_1x1;    /* B is x itself: no im2col */
} conv_ctx;

/* ---- im2col ------------------------------------------------------------------------- */
/* First ow >= 0 with ow*s + off >= 0, and the end (exclusive) of those with
 * ow*s + off < lim, clamped to [0, n). */
static void valid_range(int64_t off, int64_t s, int64_t lim, int64_t n, int64_t* lo, int64_t* hi) {
  int64_t a = off >= 0 ? 0 : (-off + s - 1) / s;
  int64_t b = lim - off <= 0 ? 0 : (lim - off + s - 1) / s;
  *lo = a < n ? a : n;
  *hi = b < n ? b : n;
  if (*hi < *lo) *hi = *lo;
}

/* Rows [k0, k1) of col (K x (oh1-oh0)*out_w) for input channel group at xg.
 * Elements are copied as bit patterns of their size (im2col moves, never
 * computes), so one body serves f32 (uint32_t) and f64 (uint64_t). */
#define DEFINE_IM2COL(UT, sfx)                                                                  \
  static void im2col_##sfx(const conv_ctx* c, const char* xg, int64_t oh0, int64_t oh1,        \
                           int64_t k0, int64_t k1, char* colv) {                               \
    const cpu_conv_geom* G = c->G;                                                              \
    const UT* x = (const UT*)xg;                                                                \
    const int64_t ow_n = G->out_w, ncur = (oh1 - oh0) * ow_n, sw = G->stride[1];              \
    const int64_t xs1 = G->x_strides[1], xs2 = G->x_strides[2], xs3 = G->x_strides[3];         \
    for (int64_t k = k0; k < k1; k++) {                                                         \
      int64_t ci = k / (G->kh * G->kw), i = k / G->kw % G->kh, j = k % G->kw;                   \
      UT* row = (UT*)colv + k * ncur;                                                           \
      int64_t off_w = j * G->dil[1] - G->pad[1], lo, hi;                                        \
      valid_range(off_w, sw, G->w, ow_n, &lo, &hi);                                             \
      for (int64_t oh = oh0; oh < oh1; oh++, row += ow_n) {                                     \
        int64_t ih = oh * G->stride[0] - G->pad[0] + i * G->dil[0];                             \
        if (ih < 0 || ih >= G->h) {                                                             \
          memset(row, 0, (size_t)ow_n * sizeof(UT));                                            \
          continue;                                                                             \
        }                                                                                       \
        const UT* src = x + ci * xs1 + ih * xs2 + off_w * xs3;                                  \
        memset(row, 0, (size_t)lo * sizeof(UT));                                                \
        if (sw * xs3 == 1)                                                                      \
          memcpy(row + lo, src + lo, (size_t)(hi - lo) * sizeof(UT));                           \
        else                                                                                    \
          for (int64_t ow = lo; ow < hi; ow++) row[ow] = src[ow * sw * xs3];                    \
        memset(row + hi, 0, (size_t)(ow_n - hi) * sizeof(UT));                                  \
      }                                                                                         \
    }                                                                                           \
  }
DEFINE_IM2COL(uint32_t, b32)
DEFINE_IM2COL(uint64_t, b64)

static void im2col(const conv_ctx* c, const char* xg, int64_t oh0, int64_t oh1, int64_t k0,
                   int64_t k1, char* col) {
  if (c->es == 4)
    im2col_b32(c, xg, oh0, oh1, k0, k1, col);
  else
    im2col_b64(c, xg, oh0, oh1, k0, k1, col);
}

/* im2col of all K rows, split across a new team when large. */
static void im2col_all(const conv_ctx* c, const char* xg, int64_t oh0, int64_t oh1, char* col,
                       bool parallel) {
  int64_t work = c->K * (oh1 - oh0) * c->G->out_w;
  bool par = parallel && work >= CONV_PAR_IM2COL;
  int64_t chunks = c->K < 64 ? c->K : 64;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t q = 0; q < chunks; q++)
    im2col(c, xg, oh0, oh1, q * c->K / chunks, (q + 1) * c->K / chunks, col);
}

/* ---- jobs ---------------------------------------------------------------------------- */
/* Output rows [oh0, oh1) of batch element n, group gi. */
static void conv_chunk(const conv_ctx* c, int64_t n, int64_t gi, int64_t oh0, int64_t oh1,
                       char* col, bool inner_parallel) {
  const cpu_conv_geom* G = c->G;
  const size_t es = c->es;
  const char* xg = c->x + (size_t)(n * G->x_strides[0] + gi * c->cig * G->x_strides[1]) * es;
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
    a.b = xg + (size_t)(oh0 * G->x_strides[2]) * es;
    a.b_sk = G->x_strides[1];
    a.b_sn = G->x_strides[3];
  } else {
    im2col_all(c, xg, oh0, oh1, col, inner_parallel);
    a.b = col;
    a.b_sk = a.n;
    a.b_sn = 1;
  }
  a.bias = c->bias ? c->bias + (size_t)(gi * c->cog * G->bias_stride) * es : NULL;
  a.bias_sm = G->bias_stride;
  a.bias_sn = 0;
  a.c = c->out + (size_t)(n * G->out_strides[0] + gi * c->cog * G->out_strides[1] +
                          oh0 * G->out_strides[2]) * es;
  a.c_sm = G->out_strides[1];
  a.c_sn = G->out_strides[3];
  a.act = G->activation;
  cpu_gemm_run(c->kn, &a, CPU_GEMM_PATH_AUTO, inner_parallel ? 0 : 1);
}

static void conv_job(const conv_ctx* c, int64_t job, char* col, bool inner_parallel) {
  int64_t n = job / c->G->groups, gi = job % c->G->groups;
  for (int64_t oh0 = 0; oh0 < c->G->out_h; oh0 += c->rows) {
    int64_t oh1 = oh0 + c->rows < c->G->out_h ? oh0 + c->rows : c->G->out_h;
    conv_chunk(c, n, gi, oh0, oh1, col, inner_parallel);
  }
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

/* Chunking and the 1x1 shortcut. */
static void plan_chunks(conv_ctx* c) {
  const cpu_conv_geom* G = c->G;
  bool out_flat = G->out_h <= 1 || G->out_strides[2] == G->out_w * G->out_strides[3];
  bool x_flat = G->out_h <= 1 || G->x_strides[2] == G->out_w * G->x_strides[3];
  c->direct_1x1 = G->kh == 1 && G->kw == 1 && G->stride[0] == 1 && G->stride[1] == 1 &&
                  G->pad[0] == 0 && G->pad[1] == 0 && G->out_h <= G->h && G->out_w <= G->w;
  int64_t per_row = c->K * G->out_w, rows = per_row ? CONV_COL_CAP / per_row : G->out_h;
  if (c->direct_1x1) rows = x_flat ? G->out_h : 1;
  if (!out_flat || rows < 1) rows = 1;
  c->rows = rows < G->out_h ? rows : G->out_h;
  if (c->rows < 1) c->rows = 1;
}

static ptc_status conv_run(const cpu_conv_geom* G, size_t es, const void* x, const void* w,
                           const void* bias, void* out) {
  PTC_TRY(check_geom(G));
  if (G->n == 0 || G->c_out == 0 || G->out_h == 0 || G->out_w == 0) return PTC_OK;
  conv_ctx c = {G, cpu_gemm_kernel_for(es, cpu_gemm_best_isa()), es, x, NULL, 0, 0,
                bias, out, G->c_in / G->groups, G->c_out / G->groups, 0, 0, false};
  c.K = c.cig * G->kh * G->kw;
  char* wcopy = NULL;
  size_t wsize = 0;
  PTC_TRY(weight_matrix(&c, w, &wcopy, &wsize));
  plan_chunks(&c);
  int64_t jobs = G->n * G->groups;
  int nt = conv_max_threads();
  double job_flops = 2.0 * (double)c.cog * (double)c.K * (double)G->out_h * (double)G->out_w;
  bool outer = nt > 1 && jobs >= nt && job_flops < CONV_SMALL_JOB;
  int bufs = outer ? nt : 1;
  size_t col_elems = c.direct_1x1 ? 0 : (size_t)(c.K * c.rows * G->out_w);
  size_t col_size = col_elems * es + CPU_GEMM_ALIGN;
  char* cols = ptc_alloc_ctx(NULL, col_size * (size_t)bufs, CPU_GEMM_ALIGN);
  if (!cols) {
    if (wcopy) ptc_free_ctx(NULL, wcopy, wsize, CPU_GEMM_ALIGN);
    return ptc_status_oom();
  }
  if (outer) {
#pragma omp parallel num_threads(nt)
    {
#ifdef _OPENMP
      char* col = cols + col_size * (size_t)omp_get_thread_num();
#else
      char* col = cols;
#endif
#pragma omp for schedule(dynamic, 1)
      for (int64_t j = 0; j < jobs; j++) conv_job(&c, j, col, false);
    }
  } else {
    for (int64_t j = 0; j < jobs; j++) conv_job(&c, j, cols, true);
  }
  ptc_free_ctx(NULL, cols, col_size * (size_t)bufs, CPU_GEMM_ALIGN);
  if (wcopy) ptc_free_ctx(NULL, wcopy, wsize, CPU_GEMM_ALIGN);
  return PTC_OK;
}

ptc_status cpu_conv2d_f32(const cpu_conv_geom* geom, const float* x, const float* w,
                          const float* bias, float* out) {
  return conv_run(geom, sizeof(float), x, w, bias, out);
}

ptc_status cpu_conv2d_f64(const cpu_conv_geom* geom, const double* x, const double* w,
                          const double* bias, double* out) {
  return conv_run(geom, sizeof(double), x, w, bias, out);
}
