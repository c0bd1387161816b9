/* ref_nn.c - reference kernels of the nn family: naive loops with double
 * accumulators for matrix products (one batched core shared by mm, bmm,
 * matmul, addmm, baddbmm, linear), convolution (1-D runs as 2-D with a unit
 * height), pooling, interpolation, scaled dot-product attention, embedding
 * and constant pad. Shapes and attributes were validated by the meta
 * functions (lib/graph/ops_nn.c); outputs arrive contiguous. */
#include "ref.h"

#include <math.h>
#include <string.h>

/* ---- view helpers ----------------------------------------------------------- */
/* Inserts a size-1 dim (stride 0) at pos. */
static void unsqueeze(ref_tensor* t, int32_t pos) {
  if (t->rank >= PTC_MAX_RANK) return; /* unreachable: meta bounds the ranks */
  for (int32_t d = t->rank; d > pos; d--) {
    t->shape[d] = t->shape[d - 1];
    t->strides[d] = t->strides[d - 1];
  }
  t->shape[pos] = 1;
  t->strides[pos] = 0;
  t->rank++;
}

/* Matrix view of t: a 1-D t becomes [1, K] (row) or [K, 1]; t's batch dims
 * are right-aligned into nb dims of bshape (stride 0 where broadcast). */
static void mat_view(const ref_tensor* t, bool row, int32_t nb, const int64_t* bshape,
                     ref_tensor* v) {
  int32_t tb = t->rank >= 2 ? t->rank - 2 : 0;
  *v = *t;
  v->rank = nb + 2;
  for (int32_t d = 0; d < nb; d++) {
    int32_t j = d - (nb - tb);
    v->shape[d] = bshape[d];
    v->strides[d] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
  }
  if (t->rank == 1) {
    int32_t k = row ? nb + 1 : nb;
    v->shape[nb] = v->shape[nb + 1] = 1;
    v->strides[nb] = v->strides[nb + 1] = 0;
    v->shape[k] = t->shape[0];
    v->strides[k] = t->strides[0];
    return;
  }
  for (int32_t i = 0; i < 2; i++) {
    v->shape[nb + i] = t->shape[t->rank - 2 + i];
    v->strides[nb + i] = t->strides[t->rank - 2 + i];
  }
}

static void copy_elem(const ref_tensor* src, int64_t so, ref_tensor* dst, int64_t o) {
  if (ptc_dtype_is_float(dst->dtype))
    ref_store_f(dst, o, ref_load_f(src, so));
  else
    ref_store_i(dst, o, ref_load_i(src, so));
}

/* ---- matrix products ---------------------------------------------------------- */
/* out = alpha * a @ b + beta * bias for a [B..., M, K], b [B..., K, N] and
 * bias [B..., M, N] or NULL (same rank, broadcast strides); out is
 * contiguous with B*M*N elements in that order. beta == 0 ignores bias. */
static void bmm_core(const ref_tensor* a, const ref_tensor* b, const ref_tensor* bias,
                     double alpha, double beta, ref_tensor* out) {
  int32_t r = a->rank, nb = r - 2;
  int64_t M = a->shape[r - 2], K = a->shape[r - 1], N = b->shape[r - 1], o = 0;
  int64_t idx[PTC_MAX_RANK] = {0};
  for (int32_t d = 0; d < nb; d++)
    if (a->shape[d] == 0) return;
  do {
    int64_t ao = 0, bo = 0, co = 0;
    for (int32_t d = 0; d < nb; d++) {
      ao += idx[d] * a->strides[d];
      bo += idx[d] * b->strides[d];
      co += bias ? idx[d] * bias->strides[d] : 0;
    }
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        for (int64_t k = 0; k < K; k++)
          acc += ref_load_f(a, ao + i * a->strides[r - 2] + k * a->strides[r - 1]) *
                 ref_load_f(b, bo + k * b->strides[r - 2] + j * b->strides[r - 1]);
        double v = alpha * acc;
        if (bias && beta != 0)
          v += beta * ref_load_f(bias, co + i * bias->strides[r - 2] + j * bias->strides[r - 1]);
        ref_store_f(out, o++, v);
      }
  } while (ref_next_index(nb, a->shape, idx));
}

/* torch.matmul rules (1-D operands, broadcast batch dims) around bmm_core;
 * bias (or NULL) broadcasts to the final output shape. */
static void matmul_run(const ref_tensor* a, const ref_tensor* b, const ref_tensor* bias,
                       double alpha, double beta, ref_tensor* out) {
  int32_t ba = a->rank >= 2 ? a->rank - 2 : 0, bb = b->rank >= 2 ? b->rank - 2 : 0;
  int32_t nb = ba > bb ? ba : bb;
  int64_t bshape[PTC_MAX_RANK];
  for (int32_t d = 0; d < nb; d++) {
    int32_t ja = d - (nb - ba), jb = d - (nb - bb);
    int64_t sa = ja >= 0 ? a->shape[ja] : 1, sb = jb >= 0 ? b->shape[jb] : 1;
    bshape[d] = sa == 1 ? sb : sa;
  }
  ref_tensor av, bv, cv;
  mat_view(a, true, nb, bshape, &av);
  mat_view(b, false, nb, bshape, &bv);
  if (bias) {
    ref_broadcast_to(bias, out->rank, out->shape, &cv);
    if (a->rank == 1) unsqueeze(&cv, nb);
    if (b->rank == 1) unsqueeze(&cv, nb + 1);
  }
  bmm_core(&av, &bv, bias ? &cv : NULL, alpha, beta, out);
}

/* mm, bmm, matmul: in[0] @ in[1]. */
static ptc_status k_matmul(ref_call* c) {
  matmul_run(c->in[0], c->in[1], NULL, 1.0, 0.0, &c->out[0]);
  return PTC_OK;
}

/* addmm, baddbmm: beta * in[0] + alpha * in[1] @ in[2]. */
static ptc_status k_addmm(ref_call* c) {
  matmul_run(c->in[1], c->in[2], c->in[0], ref_attr_float(c, "alpha", 1.0),
             ref_attr_float(c, "beta", 1.0), &c->out[0]);
  return PTC_OK;
}

/* linear: input @ weight^T + bias. */
static ptc_status k_linear(ref_call* c) {
  ref_tensor wt = *c->in[1];
  wt.shape[0] = c->in[1]->shape[1];
  wt.shape[1] = c->in[1]->shape[0];
  wt.strides[0] = c->in[1]->strides[1];
  wt.strides[1] = c->in[1]->strides[0];
  matmul_run(c->in[0], &wt, c->n_in > 2 ? c->in[2] : NULL, 1.0, 1.0, &c->out[0]);
  return PTC_OK;
}

/* ---- convolution ------------------------------------------------------------------ */
/* Spatial attribute as (H, W): 1 or nsp values; a 1-D op keeps H at dflt. */
static void spatial_attr(const ref_call* c, const char* name, int32_t nsp, int64_t dflt,
                         int64_t* out) {
  int64_t v[2];
  size_t n = ref_attr_ints(c, name, v, 2);
  for (int i = 0; i < 2; i++) out[i] = n == 0 ? dflt : v[n == 1 ? 0 : i];
  if (nsp == 1) out[0] = dflt;
}

typedef struct conv_geom {
  ref_tensor x, w, out; /* [N, C, H, W] views */
  const ref_tensor* bias;
  int64_t stride[2], pad[2], dil[2], groups;
} conv_geom;

/* One output element: out[n, co, oh, ow]. */
static double conv_point(const conv_geom* g, int64_t n, int64_t co, int64_t oh, int64_t ow) {
  const ref_tensor *x = &g->x, *w = &g->w;
  int64_t cig = w->shape[1], grp = co / (w->shape[0] / g->groups);
  double acc = g->bias ? ref_load_f(g->bias, co * g->bias->strides[0]) : 0.0;
  for (int64_t ci = 0; ci < cig; ci++)
    for (int64_t kh = 0; kh < w->shape[2]; kh++) {
      int64_t ih = oh * g->stride[0] - g->pad[0] + kh * g->dil[0];
      if (ih < 0 || ih >= x->shape[2]) continue;
      for (int64_t kw = 0; kw < w->shape[3]; kw++) {
        int64_t iw = ow * g->stride[1] - g->pad[1] + kw * g->dil[1];
        if (iw < 0 || iw >= x->shape[3]) continue;
        int64_t xo = n * x->strides[0] + (grp * cig + ci) * x->strides[1] + ih * x->strides[2] +
                     iw * x->strides[3];
        int64_t wo = co * w->strides[0] + ci * w->strides[1] + kh * w->strides[2] +
                     kw * w->strides[3];
        acc += ref_load_f(x, xo) * ref_load_f(w, wo);
      }
    }
  return acc;
}

static ptc_status k_conv(ref_call* c, int32_t nsp) {
  conv_geom g;
  g.x = *c->in[0];
  g.w = *c->in[1];
  g.out = c->out[0];
  g.bias = c->n_in > 2 ? c->in[2] : NULL;
  if (g.x.rank == nsp + 1) { /* unbatched */
    unsqueeze(&g.x, 0);
    unsqueeze(&g.out, 0);
  }
  if (nsp == 1) { /* 1-D as 2-D with unit height */
    unsqueeze(&g.x, 2);
    unsqueeze(&g.w, 2);
    unsqueeze(&g.out, 2);
  }
  spatial_attr(c, "stride", nsp, 1, g.stride);
  spatial_attr(c, "dilation", nsp, 1, g.dil);
  spatial_attr(c, "padding", nsp, 0, g.pad);
  g.groups = ref_attr_int(c, "groups", 1);
  if (strcmp(ref_attr_str(c, "padding_str", "valid"), "same") == 0)
    for (int i = 0; i < 2; i++) g.pad[i] = g.dil[i] * (g.w.shape[2 + i] - 1) / 2;
  int64_t o = 0;
  for (int64_t n = 0; n < g.out.shape[0]; n++)
    for (int64_t co = 0; co < g.out.shape[1]; co++)
      for (int64_t oh = 0; oh < g.out.shape[2]; oh++)
        for (int64_t ow = 0; ow < g.out.shape[3]; ow++)
          ref_store_f(&c->out[0], o++, conv_point(&g, n, co, oh, ow));
  return PTC_OK;
}

static ptc_status k_conv1d(ref_call* c) { return k_conv(c, 1); }
static ptc_status k_conv2d(ref_call* c) { return k_conv(c, 2); }

/* ---- pooling ---------------------------------------------------------------------- */
typedef struct pool_geom {
  ref_tensor x; /* [N, C, H, W] */
  int64_t k[2], s[2], p[2], d[2];
} pool_geom;

typedef double (*pool_fn)(const ref_call* c, const pool_geom* g, int64_t base, int64_t oh,
                          int64_t ow);

/* Runs fn for every output element of a pooling op over [N, C] planes. */
static ptc_status pool_run(ref_call* c, pool_fn fn) {
  pool_geom g;
  ref_tensor out = c->out[0];
  g.x = *c->in[0];
  if (g.x.rank == 3) { /* unbatched */
    unsqueeze(&g.x, 0);
    unsqueeze(&out, 0);
  }
  int64_t v[2];
  size_t n = ref_attr_ints(c, "kernel_size", v, 2);
  for (int i = 0; i < 2; i++) g.k[i] = n ? v[n == 1 ? 0 : i] : 1;
  n = ref_attr_ints(c, "stride", v, 2);
  for (int i = 0; i < 2; i++) g.s[i] = n ? v[n == 1 ? 0 : i] : g.k[i];
  spatial_attr(c, "padding", 2, 0, g.p);
  spatial_attr(c, "dilation", 2, 1, g.d);
  int64_t o = 0;
  for (int64_t b = 0; b < out.shape[0]; b++)
    for (int64_t ch = 0; ch < out.shape[1]; ch++) {
      int64_t base = b * g.x.strides[0] + ch * g.x.strides[1];
      for (int64_t oh = 0; oh < out.shape[2]; oh++)
        for (int64_t ow = 0; ow < out.shape[3]; ow++)
          ref_store_f(&c->out[0], o++, fn(c, &g, base, oh, ow));
    }
  return PTC_OK;
}

/* Max over the dilated window; NaN propagates (as ATen). */
static double max_window(const ref_call* c, const pool_geom* g, int64_t base, int64_t oh,
                         int64_t ow) {
  (void)c;
  double mx = -INFINITY;
  for (int64_t i = 0; i < g->k[0]; i++) {
    int64_t ih = oh * g->s[0] - g->p[0] + i * g->d[0];
    if (ih < 0 || ih >= g->x.shape[2]) continue;
    for (int64_t j = 0; j < g->k[1]; j++) {
      int64_t iw = ow * g->s[1] - g->p[1] + j * g->d[1];
      if (iw < 0 || iw >= g->x.shape[3]) continue;
      double v = ref_load_f(&g->x, base + ih * g->x.strides[2] + iw * g->x.strides[3]);
      if (v > mx || isnan(v)) mx = v;
    }
  }
  return mx;
}

/* ATen avg_pool2d: the window is clipped to the padded input for the
 * count_include_pad divisor, then to the input for the sum. */
static double avg_window(const ref_call* c, const pool_geom* g, int64_t base, int64_t oh,
                         int64_t ow) {
  int64_t lo[2], hi[2], pool = 1, cnt = 1, pos[2] = {oh, ow};
  for (int i = 0; i < 2; i++) {
    lo[i] = pos[i] * g->s[i] - g->p[i];
    hi[i] = lo[i] + g->k[i];
    if (hi[i] > g->x.shape[2 + i] + g->p[i]) hi[i] = g->x.shape[2 + i] + g->p[i];
    pool *= hi[i] - lo[i];
    if (lo[i] < 0) lo[i] = 0;
    if (hi[i] > g->x.shape[2 + i]) hi[i] = g->x.shape[2 + i];
    if (lo[i] >= hi[i]) return 0.0;
    cnt *= hi[i] - lo[i];
  }
  double sum = 0;
  for (int64_t ih = lo[0]; ih < hi[0]; ih++)
    for (int64_t iw = lo[1]; iw < hi[1]; iw++)
      sum += ref_load_f(&g->x, base + ih * g->x.strides[2] + iw * g->x.strides[3]);
  if (ref_attr_has(c, "divisor_override"))
    return sum / (double)ref_attr_int(c, "divisor_override", 1);
  return sum / (double)(ref_attr_bool(c, "count_include_pad", true) ? pool : cnt);
}

static ptc_status k_max_pool2d(ref_call* c) { return pool_run(c, max_window); }
static ptc_status k_avg_pool2d(ref_call* c) { return pool_run(c, avg_window); }

/* Adaptive average: window [floor(o*in/out), ceil((o+1)*in/out)). */
static double adaptive_window(const ref_call* c, const pool_geom* g, int64_t base, int64_t oh,
                              int64_t ow) {
  const ref_tensor* out = &c->out[0];
  int64_t lo[2], hi[2], pos[2] = {oh, ow};
  for (int i = 0; i < 2; i++) {
    int64_t in = g->x.shape[2 + i], os = out->shape[out->rank - 2 + i];
    lo[i] = pos[i] * in / os;
    hi[i] = ((pos[i] + 1) * in + os - 1) / os;
  }
  double sum = 0;
  for (int64_t ih = lo[0]; ih < hi[0]; ih++)
    for (int64_t iw = lo[1]; iw < hi[1]; iw++)
      sum += ref_load_f(&g->x, base + ih * g->x.strides[2] + iw * g->x.strides[3]);
  return sum / (double)((hi[0] - lo[0]) * (hi[1] - lo[1]));
}

static ptc_status k_adaptive_avg_pool2d(ref_call* c) { return pool_run(c, adaptive_window); }

/* ---- interpolate ------------------------------------------------------------------ */
typedef struct interp_axis {
  int64_t in, out;
  bool has_scale;
  double scale; /* scale_factor as given (ATen uses 1/scale for source indices) */
} interp_axis;

/* ATen nearest_idx, in float arithmetic as ATen computes it. */
static int64_t nearest_src(const interp_axis* a, int64_t o) {
  if (a->out == a->in) return o;
  if (a->out == 2 * a->in) return o >> 1;
  float sc = a->has_scale && a->scale > 0 ? (float)(1.0 / a->scale) : (float)a->in / (float)a->out;
  int64_t i = (int64_t)floorf((float)o * sc);
  return i < a->in - 1 ? i : a->in - 1;
}

/* ATen linear source index: i0, i1 and the weight of i1. */
static void linear_src(const interp_axis* a, bool align, int64_t o, int64_t* i0, int64_t* i1,
                       double* l1) {
  double sc, src;
  if (align) {
    sc = a->out > 1 ? (double)(a->in - 1) / (double)(a->out - 1) : 0.0;
    src = sc * (double)o;
  } else {
    sc = a->has_scale && a->scale > 0 ? 1.0 / a->scale : (double)a->in / (double)a->out;
    src = sc * ((double)o + 0.5) - 0.5;
    if (src < 0) src = 0;
  }
  *i0 = (int64_t)src;
  if (*i0 > a->in - 1) *i0 = a->in - 1;
  *i1 = *i0 + (*i0 < a->in - 1 ? 1 : 0);
  *l1 = fmin(fmax(src - (double)*i0, 0.0), 1.0);
}

/* One output element at (oh, ow) of the plane starting at base. */
static double interp_point(const ref_tensor* x, int64_t base, const interp_axis* ax,
                           bool bilinear, bool align, int64_t oh, int64_t ow) {
#define AT(h, w) ref_load_f(x, base + (h) * x->strides[2] + (w) * x->strides[3])
  if (!bilinear) return AT(nearest_src(&ax[0], oh), nearest_src(&ax[1], ow));
  int64_t h0, h1, w0, w1;
  double lh, lw;
  linear_src(&ax[0], align, oh, &h0, &h1, &lh);
  linear_src(&ax[1], align, ow, &w0, &w1, &lw);
  return (1 - lh) * ((1 - lw) * AT(h0, w0) + lw * AT(h0, w1)) +
         lh * ((1 - lw) * AT(h1, w0) + lw * AT(h1, w1));
#undef AT
}

static ptc_status k_interpolate(ref_call* c) {
  const ref_tensor* x = c->in[0];
  ref_tensor* out = &c->out[0];
  const gattr* sf = c->attrs ? gattrs_find(c->attrs, "scale_factor") : NULL;
  bool bilinear = strcmp(ref_attr_str(c, "mode", "nearest"), "bilinear") == 0;
  bool align = ref_attr_bool(c, "align_corners", false);
  interp_axis ax[2];
  for (int i = 0; i < 2; i++) {
    ax[i].in = x->shape[2 + i];
    ax[i].out = out->shape[2 + i];
    ax[i].has_scale = sf && sf->count > 0;
    ax[i].scale = ax[i].has_scale ? sf->floats[sf->count == 1 ? 0 : i] : 0.0;
  }
  int64_t o = 0;
  for (int64_t b = 0; b < out->shape[0]; b++)
    for (int64_t ch = 0; ch < out->shape[1]; ch++) {
      int64_t base = b * x->strides[0] + ch * x->strides[1];
      for (int64_t oh = 0; oh < ax[0].out; oh++)
        for (int64_t ow = 0; ow < ax[1].out; ow++)
          ref_store_f(out, o++, interp_point(x, base, ax, bilinear, align, oh, ow));
    }
  return PTC_OK;
}

/* ---- scaled dot-product attention ------------------------------------------------- */
typedef struct sdpa_geom {
  ref_tensor q, k, v, mask; /* [B..., L|S, E|Ev] views; mask [B..., L, S] */
  bool has_mask, causal;
  double scale;
  double* p; /* S scores */
} sdpa_geom;

/* Softmax-weighted row i of one batch element (offsets qo, ko, vo, mo);
 * fully masked rows give zeros (like ATen's math path, _safe_softmax). */
static void sdpa_row(const sdpa_geom* g, int64_t i, int64_t qo, int64_t ko, int64_t vo,
                     int64_t mo, ref_tensor* out, int64_t oo) {
  int32_t r = g->q.rank;
  int64_t S = g->k.shape[r - 2], E = g->q.shape[r - 1], Ev = g->v.shape[r - 1];
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < S; j++) {
    double s = 0;
    for (int64_t e = 0; e < E; e++)
      s += ref_load_f(&g->q, qo + i * g->q.strides[r - 2] + e * g->q.strides[r - 1]) *
           ref_load_f(&g->k, ko + j * g->k.strides[r - 2] + e * g->k.strides[r - 1]);
    s *= g->scale;
    if (g->causal && j > i) s = -INFINITY;
    if (g->has_mask) {
      double mv = ref_load_f(&g->mask, mo + i * g->mask.strides[r - 2] + j * g->mask.strides[r - 1]);
      s = g->mask.dtype == PTC_BOOL ? (mv != 0 ? s : -INFINITY) : s + mv;
    }
    g->p[j] = s;
    if (s > mx || isnan(s)) mx = s;
  }
  for (int64_t j = 0; j < S; j++) {
    g->p[j] = mx == -INFINITY ? 0.0 : exp(g->p[j] - mx);
    sum += g->p[j];
  }
  for (int64_t e = 0; e < Ev; e++) {
    double acc = 0;
    for (int64_t j = 0; j < S && sum != 0; j++)
      acc += g->p[j] * ref_load_f(&g->v, vo + j * g->v.strides[r - 2] + e * g->v.strides[r - 1]);
    ref_store_f(out, oo + e, sum != 0 ? acc / sum : 0.0);
  }
}

static ptc_status k_sdpa(ref_call* c) {
  ref_tensor* out = &c->out[0];
  int32_t nb = out->rank - 2;
  sdpa_geom g;
  mat_view(c->in[0], true, nb, out->shape, &g.q);
  mat_view(c->in[1], true, nb, out->shape, &g.k);
  mat_view(c->in[2], true, nb, out->shape, &g.v);
  int64_t L = g.q.shape[nb], S = g.k.shape[nb], Ev = g.v.shape[nb + 1];
  g.has_mask = c->n_in > 3 && c->in[3];
  if (g.has_mask) {
    int64_t ms[PTC_MAX_RANK];
    memcpy(ms, out->shape, sizeof ms);
    ms[nb + 1] = S;
    ref_broadcast_to(c->in[3], nb + 2, ms, &g.mask);
  }
  g.causal = ref_attr_bool(c, "is_causal", false);
  g.scale = ref_attr_has(c, "scale") ? ref_attr_float(c, "scale", 1.0)
                                     : 1.0 / sqrt((double)g.q.shape[nb + 1]);
  size_t bytes = (size_t)(S + 1) * sizeof(double);
  g.p = ptc_alloc_ctx(c->ctx, bytes, 16);
  if (!g.p) return PTC_ERR(RESOURCE_EXHAUSTED, "scaled_dot_product_attention: out of memory");
  int64_t idx[PTC_MAX_RANK] = {0}, oo = 0;
  bool empty = ref_numel(out) == 0;
  do {
    int64_t qo = 0, ko = 0, vo = 0, mo = 0;
    for (int32_t d = 0; d < nb; d++) {
      qo += idx[d] * g.q.strides[d];
      ko += idx[d] * g.k.strides[d];
      vo += idx[d] * g.v.strides[d];
      mo += g.has_mask ? idx[d] * g.mask.strides[d] : 0;
    }
    for (int64_t i = 0; i < L && !empty; i++, oo += Ev) sdpa_row(&g, i, qo, ko, vo, mo, out, oo);
  } while (!empty && ref_next_index(nb, out->shape, idx));
  ptc_free_ctx(c->ctx, g.p, bytes, 16);
  return PTC_OK;
}

/* ---- embedding and pad -------------------------------------------------------------- */
static ptc_status k_embedding(ref_call* c) {
  const ref_tensor *w = c->in[0], *ix = c->in[1];
  ref_tensor* out = &c->out[0];
  int64_t rows = w->shape[0], dim = w->shape[1], o = 0;
  int64_t idx[PTC_MAX_RANK] = {0};
  if (ref_numel(ix) == 0) return PTC_OK;
  do {
    int64_t r = ref_load_i(ix, ref_offset(ix, idx));
    if (r < 0 || r >= rows)
      return PTC_ERR(INVALID_ARGUMENT,
                     "embedding: argument 'indices': index %lld is out of range for weight with "
                     "%lld rows", (long long)r, (long long)rows);
    for (int64_t j = 0; j < dim; j++)
      copy_elem(w, r * w->strides[0] + j * w->strides[1], out, o++);
  } while (ref_next_index(ix->rank, ix->shape, idx));
  return PTC_OK;
}

static ptc_status k_pad(ref_call* c) {
  const ref_tensor* x = c->in[0];
  ref_tensor* out = &c->out[0];
  int64_t pads[2 * PTC_MAX_RANK], lo[PTC_MAX_RANK] = {0}, idx[PTC_MAX_RANK] = {0}, o = 0;
  size_t n = ref_attr_ints(c, "pad", pads, 2 * PTC_MAX_RANK);
  for (size_t j = 0; j < n / 2; j++) lo[x->rank - 1 - (int32_t)j] = pads[2 * j];
  double value = ref_attr_float(c, "value", 0.0);
  if (ref_numel(out) == 0) return PTC_OK;
  do {
    int64_t so = 0;
    bool inside = true;
    for (int32_t d = 0; d < x->rank && inside; d++) {
      int64_t s = idx[d] - lo[d];
      inside = s >= 0 && s < x->shape[d];
      so += s * x->strides[d];
    }
    if (inside)
      copy_elem(x, so, out, o++);
    else
      ref_store_f(out, o++, value);
  } while (ref_next_index(out->rank, out->shape, idx));
  return PTC_OK;
}

/* ---- table ------------------------------------------------------------------------ */
const ref_kernel_entry ref_kernels_nn[] = {
    {"mm", k_matmul},
    {"bmm", k_matmul},
    {"matmul", k_matmul},
    {"addmm", k_addmm},
    {"linear", k_linear},
    {"baddbmm", k_addmm},
    {"conv1d", k_conv1d},
    {"conv2d", k_conv2d},
    {"max_pool2d", k_max_pool2d},
    {"avg_pool2d", k_avg_pool2d},
    {"adaptive_avg_pool2d", k_adaptive_avg_pool2d},
    {"interpolate", k_interpolate},
    {"scaled_dot_product_attention", k_sdpa},
    {"embedding", k_embedding},
    {"pad", k_pad},
};
const size_t ref_kernels_nn_count = sizeof ref_kernels_nn / sizeof ref_kernels_nn[0];
