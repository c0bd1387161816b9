/* ref_reduce.c - reference kernels of the reduce family.
 *
 * One lane driver serves every op: the input's dims are split into "outer"
 * (kept) and "inner" (reduced) dims; for each outer position the inner
 * elements (the lane, in row-major order of the inner dims) are gathered into
 * a scratch vector of doubles or int64s, a per-op lane function computes the
 * output lanes, and the driver scatters them. Reductions write one element
 * per lane, ops along a dim (softmax, cumsum, sort, topk) a lane per lane, and
 * the normalisations use the same walk with whole-tensor parameters
 * (weights, running stats) gathered once.
 */
#include "ref.h"

#include <math.h>
#include <string.h>

/* A scalar in the compute domain: double for floating, int64 otherwise. */
typedef union rv {
  double f;
  int64_t i;
} rv;

/* Per-op parameters read from the attributes. */
typedef struct lparams {
  double corr;      /* var/std: correction */
  double eps;       /* norms */
  bool flag;        /* sort: descending; topk: largest */
  int64_t group_c;  /* group_norm: channels per group */
} lparams;

typedef struct lane {
  const char* op;
  const lparams* p;
  const int64_t* oidx;  /* outer multi-index of this lane */
  int64_t n;            /* input lane length */
  const rv* x;
  bool x_int;           /* compute domain of x */
  int64_t ny[2];        /* output lane lengths */
  rv* y[2];
  int64_t* perm;        /* n scratch indices each */
  int64_t* tmp;
  const rv* aux[4];     /* whole-tensor parameters (doubles) or NULL */
} lane;

typedef ptc_status (*lane_fn)(lane* L);

/* ---- small helpers ------------------------------------------------------------ */
static int64_t dot(int32_t n, const int64_t* idx, const int64_t* strides) {
  int64_t o = 0;
  for (int32_t d = 0; d < n; d++) o += idx[d] * strides[d];
  return o;
}

static double safe_div(double a, double b) {
  if (b != 0.0) return a / b;
  if (isnan(a) || a == 0.0) return NAN;
  return a > 0 ? INFINITY : -INFINITY;
}

static void* scratch(ptc_context* ctx, int64_t n, size_t item, size_t* bytes) {
  *bytes = (size_t)(n > 0 ? n : 1) * item;
  return ptc_calloc_ctx(ctx, *bytes);
}

static rv load_rv(const ref_tensor* t, int64_t off, bool as_int) {
  rv v;
  if (as_int)
    v.i = ref_load_i(t, off);
  else
    v.f = ref_load_f(t, off);
  return v;
}

/* Element converted to dtype `cast` first (ATen converts before reducing when
 * a dtype is given), then read in the compute domain. */
static rv load_cast(const ref_tensor* t, int64_t off, int32_t cast, bool as_int) {
  if (cast < 0 || cast == t->dtype) return load_rv(t, off, as_int);
  union {
    double d;
    int64_t i;
  } buf = {0};
  ref_tensor tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.data = &buf;
  tmp.dtype = cast;
  if (ptc_dtype_is_float(t->dtype))
    ref_store_f(&tmp, 0, ref_load_f(t, off));
  else
    ref_store_i(&tmp, 0, ref_load_i(t, off));
  return load_rv(&tmp, 0, as_int);
}

/* ---- lane views ----------------------------------------------------------------- */
typedef struct lview {
  int32_t n_outer;
  int64_t outer_shape[PTC_MAX_RANK];
  int64_t ostr[PTC_MAX_RANK];
  int64_t n;        /* lane length */
  int64_t* off;     /* element offset of each lane position */
  size_t off_bytes;
} lview;

static ptc_status lview_init(ptc_context* ctx, const ref_tensor* t, const bool* mask, lview* v) {
  int64_t ishape[PTC_MAX_RANK], istr[PTC_MAX_RANK], idx[PTC_MAX_RANK] = {0};
  int32_t ni = 0;
  v->n_outer = 0;
  v->n = 1;
  for (int32_t d = 0; d < t->rank; d++) {
    if (mask[d]) {
      ishape[ni] = t->shape[d];
      istr[ni++] = t->strides[d];
      v->n *= t->shape[d];
    } else {
      v->outer_shape[v->n_outer] = t->shape[d];
      v->ostr[v->n_outer++] = t->strides[d];
    }
  }
  v->off = scratch(ctx, v->n, sizeof *v->off, &v->off_bytes);
  if (!v->off) return ptc_status_oom();
  for (int64_t k = 0; k < v->n; k++) {
    v->off[k] = dot(ni, idx, istr);
    ref_next_index(ni, ishape, idx);
  }
  return PTC_OK;
}

/* ---- the driver ------------------------------------------------------------------- */
typedef struct job {
  const char* op;
  const ref_tensor* x;
  bool mask[PTC_MAX_RANK];  /* reduced dims of x */
  int32_t cast;             /* dtype x is converted to first, or -1 */
  bool x_int;
  size_t n_y;
  ref_tensor* y[2];
  lane_fn fn;
  lparams p;
  rv* aux[4];               /* owned, freed by free_aux */
  size_t aux_bytes[4];
} job;

/* Buffers of one run of the driver. */
typedef struct bufs {
  lview vx, vy[2];
  rv *xs, *ys[2];
  int64_t *perm, *tmp;
  size_t xs_b, ys_b[2], perm_b, tmp_b;
} bufs;

static void bufs_free(ptc_context* ctx, bufs* b) {
  ptc_free_ctx(ctx, b->vx.off, b->vx.off_bytes, 16);
  ptc_free_ctx(ctx, b->xs, b->xs_b, 16);
  ptc_free_ctx(ctx, b->perm, b->perm_b, 16);
  ptc_free_ctx(ctx, b->tmp, b->tmp_b, 16);
  for (int j = 0; j < 2; j++) {
    ptc_free_ctx(ctx, b->vy[j].off, b->vy[j].off_bytes, 16);
    ptc_free_ctx(ctx, b->ys[j], b->ys_b[j], 16);
  }
}

static ptc_status bufs_init(ptc_context* ctx, const job* j, bufs* b) {
  PTC_TRY(lview_init(ctx, j->x, j->mask, &b->vx));
  for (size_t k = 0; k < j->n_y; k++) {
    bool ym[PTC_MAX_RANK] = {false};
    bool same = j->y[k]->rank == j->x->rank;
    for (int32_t d = 0; d < j->y[k]->rank; d++) ym[d] = same && j->mask[d];
    PTC_TRY(lview_init(ctx, j->y[k], ym, &b->vy[k]));
    b->ys[k] = scratch(ctx, b->vy[k].n, sizeof(rv), &b->ys_b[k]);
    if (!b->ys[k]) return ptc_status_oom();
  }
  b->xs = scratch(ctx, b->vx.n, sizeof(rv), &b->xs_b);
  b->perm = scratch(ctx, b->vx.n, sizeof(int64_t), &b->perm_b);
  b->tmp = scratch(ctx, b->vx.n, sizeof(int64_t), &b->tmp_b);
  return b->xs && b->perm && b->tmp ? PTC_OK : ptc_status_oom();
}

static void scatter(const lview* v, const rv* ys, ref_tensor* y, const int64_t* idx) {
  int64_t base = dot(v->n_outer, idx, v->ostr);
  bool as_int = !ptc_dtype_is_float(y->dtype);
  for (int64_t k = 0; k < v->n; k++) {
    if (as_int)
      ref_store_i(y, base + v->off[k], ys[k].i);
    else
      ref_store_f(y, base + v->off[k], ys[k].f);
  }
}

static ptc_status walk(const job* j, bufs* b) {
  const lview* vx = &b->vx;
  int64_t lanes = 1, idx[PTC_MAX_RANK] = {0};
  for (int32_t d = 0; d < vx->n_outer; d++) lanes *= vx->outer_shape[d];
  lane L;
  memset(&L, 0, sizeof L);
  L.op = j->op;
  L.p = &j->p;
  L.oidx = idx;
  L.n = vx->n;
  L.x = b->xs;
  L.x_int = j->x_int;
  L.perm = b->perm;
  L.tmp = b->tmp;
  for (int k = 0; k < 4; k++) L.aux[k] = j->aux[k];
  for (size_t k = 0; k < j->n_y; k++) {
    L.ny[k] = b->vy[k].n;
    L.y[k] = b->ys[k];
  }
  for (int64_t l = 0; l < lanes; l++) {
    int64_t base = dot(vx->n_outer, idx, vx->ostr);
    for (int64_t k = 0; k < vx->n; k++) b->xs[k] = load_cast(j->x, base + vx->off[k], j->cast, j->x_int);
    PTC_TRY(j->fn(&L));
    for (size_t k = 0; k < j->n_y; k++) scatter(&b->vy[k], b->ys[k], j->y[k], idx);
    ref_next_index(vx->n_outer, vx->outer_shape, idx);
  }
  return PTC_OK;
}

static void free_aux(ref_call* c, job* j) {
  for (int k = 0; k < 4; k++) {
    ptc_free_ctx(c->ctx, j->aux[k], j->aux_bytes[k], 16);
    j->aux[k] = NULL;
  }
}

static ptc_status run_job(ref_call* c, job* j) {
  bufs b;
  memset(&b, 0, sizeof b);
  ptc_status s = bufs_init(c->ctx, j, &b);
  if (!s) s = walk(j, &b);
  bufs_free(c->ctx, &b);
  free_aux(c, j);
  return s;
}

/* Gathers optional tensor inputs in[first..first+count) (row-major, as
 * doubles) into aux slots 0..count. */
static ptc_status gather_params(ref_call* c, job* j, size_t first, int count) {
  for (int k = 0; k < count && first + (size_t)k < c->n_in; k++) {
    const ref_tensor* t = c->in[first + (size_t)k];
    if (!t) continue;
    int64_t n = 1, idx[PTC_MAX_RANK] = {0};
    for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
    j->aux[k] = scratch(c->ctx, n, sizeof(rv), &j->aux_bytes[k]);
    if (!j->aux[k]) {
      free_aux(c, j);
      return ptc_status_oom();
    }
    for (int64_t e = 0; e < n; e++) {
      j->aux[k][e].f = ref_load_f(t, dot(t->rank, idx, t->strides));
      ref_next_index(t->rank, t->shape, idx);
    }
  }
  return PTC_OK;
}

/* Compute domains: the input's own (comparisons, logical ops) or output 0's
 * dtype with the input converted to it first (sums, means, softmax...). */
enum { DOM_IN, DOM_OUT };

static void job_init(job* j, ref_call* c, const char* op, lane_fn fn, int dom) {
  memset(j, 0, sizeof *j);
  j->op = op;
  j->x = c->in[0];
  j->fn = fn;
  j->n_y = c->n_out < 2 ? c->n_out : 2;
  for (size_t k = 0; k < j->n_y; k++) j->y[k] = &c->out[k];
  int32_t dt = dom == DOM_OUT ? c->out[0].dtype : j->x->dtype;
  j->x_int = !ptc_dtype_is_float(dt);
  j->cast = dom == DOM_OUT ? dt : -1;
  j->p.eps = ref_attr_float(c, "eps", 1e-5);
}

/* ---- reductions ---------------------------------------------------------------------- */
static ptc_status lf_sum(lane* L) {
  if (L->x_int) {
    uint64_t s = 0;
    for (int64_t k = 0; k < L->n; k++) s += (uint64_t)L->x[k].i;
    L->y[0][0].i = (int64_t)s;
  } else {
    double s = 0;
    for (int64_t k = 0; k < L->n; k++) s += L->x[k].f;
    L->y[0][0].f = s;
  }
  return PTC_OK;
}

static ptc_status lf_prod(lane* L) {
  if (L->x_int) {
    uint64_t s = 1;
    for (int64_t k = 0; k < L->n; k++) s *= (uint64_t)L->x[k].i;
    L->y[0][0].i = (int64_t)s;
  } else {
    double s = 1;
    for (int64_t k = 0; k < L->n; k++) s *= L->x[k].f;
    L->y[0][0].f = s;
  }
  return PTC_OK;
}

static double lane_mean(const lane* L) {
  double s = 0;
  for (int64_t k = 0; k < L->n; k++) s += L->x[k].f;
  return safe_div(s, (double)L->n);
}

static ptc_status lf_mean(lane* L) {
  L->y[0][0].f = lane_mean(L);
  return PTC_OK;
}

/* Whether x[a] beats x[b] as a maximum (or minimum); NaN beats everything. */
static bool beats(const lane* L, int64_t a, int64_t b, bool want_max) {
  if (L->x_int) return want_max ? L->x[a].i > L->x[b].i : L->x[a].i < L->x[b].i;
  double u = L->x[a].f, v = L->x[b].f;
  if (isnan(v)) return false;
  if (isnan(u)) return true;
  return want_max ? u > v : u < v;
}

/* Index of the first extreme element of the lane (error on an empty lane). */
static ptc_status extreme(const lane* L, bool want_max, int64_t* best) {
  if (L->n == 0)
    return PTC_ERR(INVALID_ARGUMENT, "%s: cannot reduce over a zero-size dimension", L->op);
  *best = 0;
  for (int64_t k = 1; k < L->n; k++)
    if (beats(L, k, *best, want_max)) *best = k;
  return PTC_OK;
}

static ptc_status value_of_extreme(lane* L, bool want_max) {
  int64_t b = 0;
  PTC_TRY(extreme(L, want_max, &b));
  L->y[0][0] = L->x[b];
  return PTC_OK;
}

static ptc_status index_of_extreme(lane* L, bool want_max) {
  int64_t b = 0;
  PTC_TRY(extreme(L, want_max, &b));
  L->y[0][0].i = b;
  return PTC_OK;
}

static ptc_status lf_amax(lane* L) { return value_of_extreme(L, true); }
static ptc_status lf_amin(lane* L) { return value_of_extreme(L, false); }
static ptc_status lf_argmax(lane* L) { return index_of_extreme(L, true); }
static ptc_status lf_argmin(lane* L) { return index_of_extreme(L, false); }

static bool nonzero(const lane* L, int64_t k) {
  return L->x_int ? L->x[k].i != 0 : L->x[k].f != 0.0; /* NaN counts as true */
}

static ptc_status lf_any(lane* L) {
  int64_t r = 0;
  for (int64_t k = 0; k < L->n && !r; k++) r = nonzero(L, k);
  L->y[0][0].i = r;
  return PTC_OK;
}

static ptc_status lf_all(lane* L) {
  int64_t r = 1;
  for (int64_t k = 0; k < L->n && r; k++) r = nonzero(L, k);
  L->y[0][0].i = r;
  return PTC_OK;
}

/* Two-pass variance with divisor max(0, n - correction). */
static double lane_var(const lane* L, double mean) {
  double ss = 0;
  for (int64_t k = 0; k < L->n; k++) ss += (L->x[k].f - mean) * (L->x[k].f - mean);
  double dof = (double)L->n - L->p->corr;
  return safe_div(ss, dof > 0 ? dof : 0.0);
}

static ptc_status lf_var(lane* L) {
  L->y[0][0].f = lane_var(L, lane_mean(L));
  return PTC_OK;
}

static ptc_status lf_std(lane* L) {
  L->y[0][0].f = sqrt(lane_var(L, lane_mean(L)));
  return PTC_OK;
}

static ptc_status lf_var_mean(lane* L) {
  double mean = lane_mean(L);
  L->y[0][0].f = lane_var(L, mean);
  L->y[1][0].f = mean;
  return PTC_OK;
}

/* Largest non-NaN element (-inf if none). */
static double lane_max(const lane* L) {
  double m = -INFINITY;
  for (int64_t k = 0; k < L->n; k++)
    if (L->x[k].f > m) m = L->x[k].f;
  return m;
}

/* log(sum(exp(x))) with ATen's shift: the max, or 0 when the max is infinite. */
static ptc_status lf_logsumexp(lane* L) {
  double m = lane_max(L), s = 0;
  if (isinf(m)) m = 0;
  for (int64_t k = 0; k < L->n; k++) s += exp(L->x[k].f - m);
  L->y[0][0].f = log(s) + m;
  return PTC_OK;
}

/* ---- ops along a dim ---------------------------------------------------------------- */
/* Writes exp(x - max) to y and returns their sum. */
static double shifted_exp(lane* L, double* m) {
  double s = 0;
  *m = lane_max(L);
  for (int64_t k = 0; k < L->n; k++) {
    L->y[0][k].f = exp(L->x[k].f - *m);
    s += L->y[0][k].f;
  }
  return s;
}

static ptc_status lf_softmax(lane* L) {
  double m, s = shifted_exp(L, &m);
  for (int64_t k = 0; k < L->n; k++) L->y[0][k].f = L->y[0][k].f / s;
  return PTC_OK;
}

static ptc_status lf_log_softmax(lane* L) {
  double m, ls = log(shifted_exp(L, &m));
  for (int64_t k = 0; k < L->n; k++) L->y[0][k].f = L->x[k].f - m - ls;
  return PTC_OK;
}

static ptc_status lf_cumsum(lane* L) {
  uint64_t si = 0;
  double sf = 0;
  for (int64_t k = 0; k < L->n; k++) {
    if (L->x_int)
      L->y[0][k].i = (int64_t)(si += (uint64_t)L->x[k].i);
    else
      L->y[0][k].f = sf += L->x[k].f;
  }
  return PTC_OK;
}

/* Three-way comparison of x[a] and x[b]; NaN sorts above everything. */
static int cmp_elems(const lane* L, int64_t a, int64_t b) {
  if (L->x_int) return (L->x[a].i > L->x[b].i) - (L->x[a].i < L->x[b].i);
  double u = L->x[a].f, v = L->x[b].f;
  bool nu = isnan(u), nv = isnan(v);
  if (nu || nv) return (int)nu - (int)nv;
  return (u > v) - (u < v);
}

/* Stable bottom-up merge sort of the indices 0..n-1 into L->perm. */
static void sort_perm(lane* L, bool descending) {
  int64_t n = L->n, *a = L->perm, *b = L->tmp;
  for (int64_t k = 0; k < n; k++) a[k] = k;
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, r = mid, o = lo;
      while (i < mid && r < hi) {
        int s = cmp_elems(L, a[r], a[i]);
        b[o++] = (descending ? -s : s) < 0 ? a[r++] : a[i++];
      }
      while (i < mid) b[o++] = a[i++];
      while (r < hi) b[o++] = a[r++];
    }
    int64_t* t = a;
    a = b;
    b = t;
  }
  if (a != L->perm) memcpy(L->perm, a, (size_t)n * sizeof *a);
}

/* values/indices of the first ny[0] sorted elements (sort: all, topk: k). */
static ptc_status lf_sorted(lane* L) {
  if (L->ny[0] > L->n)
    return PTC_ERR(INVALID_ARGUMENT, "%s: k = %lld exceeds the dim size %lld", L->op,
                   (long long)L->ny[0], (long long)L->n);
  sort_perm(L, L->p->flag);
  for (int64_t k = 0; k < L->ny[0]; k++) {
    L->y[0][k] = L->x[L->perm[k]];
    L->y[1][k].i = L->perm[k];
  }
  return PTC_OK;
}

/* ---- normalisations --------------------------------------------------------------------- */
static void moments(const lane* L, double* mean, double* rstd) {
  *mean = lane_mean(L);
  double ss = 0;
  for (int64_t k = 0; k < L->n; k++) ss += (L->x[k].f - *mean) * (L->x[k].f - *mean);
  *rstd = 1.0 / sqrt(safe_div(ss, (double)L->n) + L->p->eps);
}

/* (x - mean) * rstd * w[c] + b[c] for lane position k with parameter index c. */
static double affine(const lane* L, int64_t k, int64_t c, double mean, double rstd) {
  double v = (L->x[k].f - mean) * rstd;
  if (L->aux[0]) v *= L->aux[0][c].f;
  if (L->aux[1]) v += L->aux[1][c].f;
  return v;
}

static ptc_status lf_layer_norm(lane* L) {
  if (L->n == 0) return PTC_OK;
  double mean, rstd;
  moments(L, &mean, &rstd);
  for (int64_t k = 0; k < L->n; k++) L->y[0][k].f = affine(L, k, k, mean, rstd);
  return PTC_OK;
}

static ptc_status lf_rms_norm(lane* L) {
  if (L->n == 0) return PTC_OK;
  double ss = 0;
  for (int64_t k = 0; k < L->n; k++) ss += L->x[k].f * L->x[k].f;
  double r = 1.0 / sqrt(ss / (double)L->n + L->p->eps);
  for (int64_t k = 0; k < L->n; k++)
    L->y[0][k].f = L->x[k].f * r * (L->aux[0] ? L->aux[0][k].f : 1.0);
  return PTC_OK;
}

/* Lane = [C/G, spatial...] of group oidx[1]; channel of position k. */
static ptc_status lf_group_norm(lane* L) {
  if (L->n == 0) return PTC_OK;
  double mean, rstd;
  int64_t per_channel = L->n / L->p->group_c, c0 = L->oidx[1] * L->p->group_c;
  moments(L, &mean, &rstd);
  for (int64_t k = 0; k < L->n; k++)
    L->y[0][k].f = affine(L, k, c0 + k / per_channel, mean, rstd);
  return PTC_OK;
}

/* Lane = every element of channel oidx[0]; aux 2/3 = running mean/var. */
static ptc_status lf_batch_norm(lane* L) {
  int64_t c = L->oidx[0];
  if (!L->aux[2] || !L->aux[3])
    return PTC_ERR(INVALID_ARGUMENT, "%s: running_mean and running_var are required", L->op);
  double mean = L->aux[2][c].f, rstd = 1.0 / sqrt(L->aux[3][c].f + L->p->eps);
  for (int64_t k = 0; k < L->n; k++) L->y[0][k].f = affine(L, k, c, mean, rstd);
  return PTC_OK;
}

/* ---- kernels -------------------------------------------------------------------------- */
/* Reduced dims from attribute "dim" (INT or INTS; absent or empty = all). */
static void dims_mask(const ref_call* c, job* j) {
  int32_t rank = j->x->rank;
  int64_t dims[PTC_MAX_RANK + 1];
  size_t n = 0;
  const gattr* a = c->attrs ? gattrs_find(c->attrs, "dim") : NULL;
  if (a && a->type == PTC_ATTR_INTS)
    n = ref_attr_ints(c, "dim", dims, PTC_MAX_RANK + 1);
  else if (a)
    dims[n++] = a->i;
  for (int32_t d = 0; d < rank; d++) j->mask[d] = n == 0;
  for (size_t i = 0; i < n; i++) {
    int32_t d = ref_norm_dim(dims[i], rank);
    if (d >= 0 && d < rank) j->mask[d] = true;
  }
}

static ptc_status reduce_k(ref_call* c, const char* op, lane_fn fn, int dom) {
  job j;
  job_init(&j, c, op, fn, dom);
  dims_mask(c, &j);
  j.p.corr = ref_attr_has(c, "correction") ? ref_attr_float(c, "correction", 1.0)
                                            : (ref_attr_bool(c, "unbiased", true) ? 1.0 : 0.0);
  return run_job(c, &j);
}

/* Ops along attribute "dim" (default -1); `flag` = descending order. */
static ptc_status along_k(ref_call* c, const char* op, lane_fn fn, int dom, bool flag) {
  job j;
  job_init(&j, c, op, fn, dom);
  if (j.x->rank > 0) j.mask[ref_norm_dim(ref_attr_int(c, "dim", -1), j.x->rank)] = true;
  j.p.flag = flag;
  return run_job(c, &j);
}

#define REDUCE_KERNEL(kname, opname, fn, dom) \
  static ptc_status kname(ref_call* c) { return reduce_k(c, opname, fn, dom); }
#define ALONG_KERNEL(kname, opname, fn, dom, flag) \
  static ptc_status kname(ref_call* c) { return along_k(c, opname, fn, dom, flag); }

REDUCE_KERNEL(k_sum, "sum", lf_sum, DOM_OUT)
REDUCE_KERNEL(k_mean, "mean", lf_mean, DOM_OUT)
REDUCE_KERNEL(k_prod, "prod", lf_prod, DOM_OUT)
REDUCE_KERNEL(k_amax, "amax", lf_amax, DOM_IN)
REDUCE_KERNEL(k_amin, "amin", lf_amin, DOM_IN)
REDUCE_KERNEL(k_argmax, "argmax", lf_argmax, DOM_IN)
REDUCE_KERNEL(k_argmin, "argmin", lf_argmin, DOM_IN)
REDUCE_KERNEL(k_any, "any", lf_any, DOM_IN)
REDUCE_KERNEL(k_all, "all", lf_all, DOM_IN)
REDUCE_KERNEL(k_var, "var", lf_var, DOM_OUT)
REDUCE_KERNEL(k_std, "std", lf_std, DOM_OUT)
REDUCE_KERNEL(k_var_mean, "var_mean", lf_var_mean, DOM_OUT)
REDUCE_KERNEL(k_logsumexp, "logsumexp", lf_logsumexp, DOM_OUT)
ALONG_KERNEL(k_softmax, "softmax", lf_softmax, DOM_OUT, false)
ALONG_KERNEL(k_log_softmax, "log_softmax", lf_log_softmax, DOM_OUT, false)
ALONG_KERNEL(k_cumsum, "cumsum", lf_cumsum, DOM_OUT, false)
ALONG_KERNEL(k_topk, "topk", lf_sorted, DOM_IN, ref_attr_bool(c, "largest", true))
ALONG_KERNEL(k_sort, "sort", lf_sorted, DOM_IN, ref_attr_bool(c, "descending", false))

/* torch.finfo(dtype).eps: rms_norm's default eps. */
static double dtype_eps(int32_t dt) {
  switch (dt) {
    case PTC_F64: return 0x1p-52;
    case PTC_F16: return 0x1p-10;
    case PTC_BF16: return 0x1p-7;
    default: return 0x1p-23;
  }
}

/* layer_norm / rms_norm: the lane is the trailing len(normalized_shape) dims. */
static ptc_status last_dims_k(ref_call* c, const char* op, lane_fn fn) {
  job j;
  int64_t ns[PTC_MAX_RANK];
  job_init(&j, c, op, fn, DOM_OUT);
  size_t n = ref_attr_ints(c, "normalized_shape", ns, PTC_MAX_RANK);
  for (int32_t d = 0; d < j.x->rank; d++) j.mask[d] = d >= j.x->rank - (int32_t)n;
  if (fn == lf_rms_norm) j.p.eps = ref_attr_float(c, "eps", dtype_eps(j.x->dtype));
  PTC_TRY(gather_params(c, &j, 1, 2));
  return run_job(c, &j);
}

static ptc_status k_layer_norm(ref_call* c) { return last_dims_k(c, "layer_norm", lf_layer_norm); }
static ptc_status k_rms_norm(ref_call* c) { return last_dims_k(c, "rms_norm", lf_rms_norm); }

static ptc_status k_batch_norm(ref_call* c) {
  job j;
  job_init(&j, c, "batch_norm", lf_batch_norm, DOM_OUT);
  for (int32_t d = 0; d < j.x->rank; d++) j.mask[d] = d != 1;
  PTC_TRY(gather_params(c, &j, 1, 4));
  return run_job(c, &j);
}

/* [N, C, ...] seen as [N, G, C/G, ...]. */
static void split_channels(const ref_tensor* t, int64_t groups, ref_tensor* v) {
  *v = *t;
  v->rank = t->rank + 1;
  v->shape[1] = groups;
  v->strides[1] = t->strides[1] * (t->shape[1] / groups);
  v->shape[2] = t->shape[1] / groups;
  v->strides[2] = t->strides[1];
  for (int32_t d = 2; d < t->rank; d++) {
    v->shape[d + 1] = t->shape[d];
    v->strides[d + 1] = t->strides[d];
  }
}

static ptc_status k_group_norm(ref_call* c) {
  job j;
  ref_tensor xv, yv;
  int64_t g = ref_attr_int(c, "num_groups", 1);
  job_init(&j, c, "group_norm", lf_group_norm, DOM_OUT);
  if (j.x->rank < 2 || j.x->rank >= PTC_MAX_RANK || g <= 0)
    return PTC_ERR(INVALID_ARGUMENT, "group_norm: unsupported input rank or num_groups");
  split_channels(c->in[0], g, &xv);
  split_channels(&c->out[0], g, &yv);
  j.x = &xv;
  j.y[0] = &yv;
  j.p.group_c = c->in[0]->shape[1] / g;
  for (int32_t d = 0; d < xv.rank; d++) j.mask[d] = d >= 2;
  PTC_TRY(gather_params(c, &j, 1, 2));
  return run_job(c, &j);
}

const ref_kernel_entry ref_kernels_reduce[] = {
    {"sum", k_sum},
    {"mean", k_mean},
    {"prod", k_prod},
    {"amax", k_amax},
    {"amin", k_amin},
    {"argmax", k_argmax},
    {"argmin", k_argmin},
    {"any", k_any},
    {"all", k_all},
    {"var", k_var},
    {"std", k_std},
    {"var_mean", k_var_mean},
    {"logsumexp", k_logsumexp},
    {"softmax", k_softmax},
    {"log_softmax", k_log_softmax},
    {"cumsum", k_cumsum},
    {"topk", k_topk},
    {"sort", k_sort},
    {"layer_norm", k_layer_norm},
    {"rms_norm", k_rms_norm},
    {"batch_norm", k_batch_norm},
    {"group_norm", k_group_norm},
};
const size_t ref_kernels_reduce_count = sizeof ref_kernels_reduce / sizeof ref_kernels_reduce[0];
