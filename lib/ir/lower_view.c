/* lower_view.c - lowerings of the view ops as index transforms, never copies.
 *
 * permute/transpose/expand/slice/select/narrow/split/chunk are affine maps
 * from output to source indices: over a buffer view they just compute new
 * strides and offset; over a lazy value they wrap its loader. Reshapes (view,
 * reshape, flatten, unflatten, squeeze, unsqueeze) split the two shapes into
 * groups of dims with equal products; a group whose source dims are laid out
 * contiguously re-strides (so reshaping a contiguous buffer is free), any
 * other group indexes through FloorDiv/ModularIndexing of the group's flat
 * index. as_strided addresses the storage of its (realized) input.
 */
#include "lower_internal.h"

#include <string.h>

/* ---- affine views ------------------------------------------------------------------------ */

lower_affine* lower_affine_new(lower_ctx* L, const lval* src, uint32_t ro) {
  lower_affine* a = lower_alloc(L, sizeof *a);
  if (!a) return NULL;
  a->src = src;
  a->rs = src->rank;
  a->ro = ro;
  a->base = lower_exprs(L, src->rank);
  a->coef = lower_alloc(L, ((size_t)src->rank * ro + 1) * sizeof *a->coef);
  if (!a->base || !a->coef) return NULL;
  for (uint32_t j = 0; j < src->rank; j++)
    if (!(a->base[j] = lower_const(L, 0))) return NULL;
  return a;
}

static const sym_expr** coef_at(lower_affine* a, uint32_t j, uint32_t i) {
  return &a->coef[(size_t)j * a->ro + i];
}

/* Source index j = base[j] + sum_i coef * idx[i]. */
static void affine_src_index(lower_ctx* L, const lower_affine* a, const sym_expr* const* idx,
                             const sym_expr** src) {
  for (uint32_t j = 0; j < a->rs; j++) {
    const sym_expr* e = a->base[j];
    for (uint32_t i = 0; i < a->ro && e; i++) {
      const sym_expr* c = a->coef[(size_t)j * a->ro + i];
      if (c && !lower_is(c, 0)) e = sym_add(L->env, e, sym_mul(L->env, c, idx[i]));
    }
    src[j] = e;
  }
}

static ir_val load_affine(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const lower_affine* a = v->data;
  const sym_expr* src[PTC_MAX_RANK + 1];
  affine_src_index(L, a, idx, src);
  return lval_load(L, a->src, src);
}

ptc_status lower_affine_apply(lower_ctx* L, lower_affine* a, int32_t dtype,
                              const sym_expr** shape, lval* out) {
  if (!a) return ptc_status_oom();
  const lval* s = a->src;
  if (s->kind != LV_BUF) {
    lval_lazy(out, dtype, a->ro, shape, load_affine, a);
    return PTC_OK;
  }
  const sym_expr** st = lower_exprs(L, a->ro);
  if (!st) return ptc_status_oom();
  const sym_expr* off = lower_dot(L, a->rs, a->base, s->strides, s->offset);
  for (uint32_t i = 0; i < a->ro; i++) {
    const sym_expr* e = lower_const(L, 0);
    for (uint32_t j = 0; j < a->rs && e; j++) {
      const sym_expr* c = a->coef[(size_t)j * a->ro + i];
      if (c && !lower_is(c, 0)) e = sym_add(L->env, e, sym_mul(L->env, c, s->strides[j]));
    }
    if (!(st[i] = e)) return ptc_status_oom();
  }
  if (!off) return ptc_status_oom();
  *out = *s;
  out->rank = a->ro;
  out->shape = shape;
  out->strides = st;
  out->offset = off;
  out->dtype = dtype;
  out->ext_node = -1;
  return PTC_OK;
}

static ptc_status set_coef(lower_ctx* L, lower_affine* a, uint32_t j, uint32_t i, int64_t c) {
  if (!a) return ptc_status_oom();
  *coef_at(a, j, i) = lower_const(L, c);
  return *coef_at(a, j, i) ? PTC_OK : ptc_status_oom();
}

static ptc_status lower_permute(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  lower_affine* a = lower_affine_new(L, x, out->rank);
  const gattr* dims = lower_attr(n, "dims");
  for (uint32_t i = 0; a && dims && i < dims->count && i < out->rank; i++) {
    int64_t d = 0;
    sym_is_const(dims->exprs[i], &d);
    PTC_TRY(set_coef(L, a, lower_norm_dim(d, x->rank), i, 1));
  }
  return lower_affine_apply(L, a, out->dtype, out->shape, out);
}

static ptc_status lower_transpose(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  lower_affine* a = lower_affine_new(L, x, out->rank);
  uint32_t d0 = lower_norm_dim(lower_attr_int(n, "dim0", 0), x->rank);
  uint32_t d1 = lower_norm_dim(lower_attr_int(n, "dim1", 0), x->rank);
  for (uint32_t i = 0; i < x->rank; i++)
    PTC_TRY(set_coef(L, a, i == d0 ? d1 : i == d1 ? d0 : i, i, 1));
  return lower_affine_apply(L, a, out->dtype, out->shape, out);
}

static ptc_status lower_expand(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  lower_affine* a = lower_affine_new(L, x, out->rank);
  uint32_t lead = out->rank - x->rank;
  for (uint32_t j = 0; j < x->rank; j++) {
    bool bcast = lower_is(x->shape[j], 1) && !lower_is(out->shape[j + lead], 1);
    if (!bcast) PTC_TRY(set_coef(L, a, j, j + lead, 1));
  }
  return lower_affine_apply(L, a, out->dtype, out->shape, out);
}

/* Identity on every dim except d: src[d] = start + step * idx[d]. */
static ptc_status restrided(lower_ctx* L, const lval* x, uint32_t d, const sym_expr* start,
                            int64_t step, lval* out) {
  lower_affine* a = lower_affine_new(L, x, out->rank);
  for (uint32_t i = 0; i < x->rank; i++) PTC_TRY(set_coef(L, a, i, i, i == d ? step : 1));
  if (!start) return ptc_status_oom();
  a->base[d] = start;
  return lower_affine_apply(L, a, out->dtype, out->shape, out);
}

/* Python slice bound: negative counts from the end, then clamped to [0, size]
 * (the decisions the meta function took, under the same guards). */
static ptc_status clamp_bound(lower_ctx* L, const sym_expr* i, const sym_expr* size,
                              const sym_expr** out) {
  bool b = false;
  const sym_expr* zero = lower_const(L, 0);
  PTC_TRY(lower_decide(L, SYM_LT, i, zero, &b));
  if (b) {
    i = sym_add(L->env, i, size);
    PTC_TRY(lower_decide(L, SYM_LT, i, zero, &b));
    if (b) i = zero;
  } else {
    PTC_TRY(lower_decide(L, SYM_GT, i, size, &b));
    if (b) i = size;
  }
  *out = i;
  return PTC_OK;
}

static ptc_status lower_slice(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  uint32_t d = lower_norm_dim(lower_attr_int(n, "dim", 0), x->rank);
  const sym_expr* start = NULL;
  PTC_TRY(clamp_bound(L, lower_attr_expr(L, n, "start", 0), x->shape[d], &start));
  return restrided(L, x, d, start, lower_attr_int(n, "step", 1), out);
}

static ptc_status lower_narrow(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  uint32_t d = lower_norm_dim(lower_attr_int(n, "dim", 0), x->rank);
  const sym_expr* start = lower_attr_expr(L, n, "start", 0);
  bool neg = false;
  PTC_TRY(lower_decide(L, SYM_LT, start, lower_const(L, 0), &neg));
  if (neg) start = sym_add(L->env, start, x->shape[d]);
  return restrided(L, x, d, start, 1, out);
}

static ptc_status lower_select(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  uint32_t d = lower_norm_dim(lower_attr_int(n, "dim", 0), x->rank);
  const sym_expr* idx = lower_attr_expr(L, n, "index", 0);
  bool neg = false;
  PTC_TRY(lower_decide(L, SYM_LT, idx, lower_const(L, 0), &neg));
  if (neg) idx = sym_add(L->env, idx, x->shape[d]);
  lower_affine* a = lower_affine_new(L, x, out->rank);
  for (uint32_t j = 0; j < x->rank; j++)
    if (j != d) PTC_TRY(set_coef(L, a, j, j < d ? j : j - 1, 1));
  if (!a || !idx) return ptc_status_oom();
  a->base[d] = idx;
  return lower_affine_apply(L, a, out->dtype, out->shape, out);
}

/* split/chunk: output k is the next out[k].shape[d] entries along d. */
static ptc_status lower_split(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  uint32_t d = lower_norm_dim(lower_attr_int(n, "dim", 0), x->rank);
  const sym_expr* at = lower_const(L, 0);
  for (uint32_t k = 0; k < n->n_out; k++) {
    PTC_TRY(restrided(L, x, d, at, 1, &out[k]));
    at = sym_add(L->env, at, out[k].shape[d]);
  }
  return PTC_OK;
}

/* ---- reshapes ------------------------------------------------------------------------------ */

typedef struct rgroup {
  uint32_t o0, o1, s0, s1; /* out dims [o0, o1) <-> source dims [s0, s1) */
} rgroup;

typedef struct reshape_data {
  const lval* src;
  uint32_t n_groups;
  rgroup* g;
  const sym_expr** ocs;    /* per out dim: stride within its group */
  const sym_expr** scs;    /* per source dim: stride within its group */
} reshape_data;

/* Splits the shapes into groups with equal (pointer-equal) products,
 * extending the side whose product hint is smaller; what cannot be split
 * that way stays one group. Hints only choose the side to extend: a group
 * closes on symbolically equal products. Returns the number of groups, 0
 * on OOM. */
static uint32_t make_groups(lower_ctx* L, uint32_t ro, const sym_expr* const* os, uint32_t rs,
                            const sym_expr* const* ss, rgroup* g) {
  uint32_t i = 0, j = 0, ng = 0;
  while (i < ro || j < rs) {
    rgroup* cur = &g[ng++];
    cur->o0 = i;
    cur->s0 = j;
    const sym_expr* po = i < ro ? os[i++] : lower_const(L, 1);
    const sym_expr* ps = j < rs ? ss[j++] : lower_const(L, 1);
    while (po && ps && po != ps) {
      int64_t ho, hs;
      bool ok = sym_hint(L->env, po, &ho) && sym_hint(L->env, ps, &hs) && ho != hs;
      if (ok && ho < hs && i < ro)
        po = sym_mul(L->env, po, os[i++]);
      else if (ok && hs < ho && j < rs)
        ps = sym_mul(L->env, ps, ss[j++]);
      else
        i = ro, j = rs, po = ps; /* cannot split: the rest is one group */
    }
    if (!po || !ps) return 0;
    cur->o1 = i;
    cur->s1 = j;
  }
  return ng;
}

/* Strides of dims [a, b) within their group (row-major). */
static bool group_strides(lower_ctx* L, const sym_expr* const* shape, uint32_t a, uint32_t b,
                          const sym_expr** out) {
  const sym_expr* acc = lower_const(L, 1);
  for (uint32_t d = b; d-- > a && acc;) {
    out[d] = acc;
    acc = sym_mul(L->env, acc, shape[d]);
  }
  return acc != NULL;
}

static ir_val load_reshape(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const reshape_data* r = v->data;
  const sym_expr* src[PTC_MAX_RANK + 1];
  for (uint32_t k = 0; k < r->n_groups; k++) {
    const rgroup* g = &r->g[k];
    const sym_expr* flat = lower_dot(L, g->o1 - g->o0, idx + g->o0, r->ocs + g->o0, NULL);
    for (uint32_t j = g->s0; j < g->s1; j++) {
      if (!flat) return ir_ops_const_i(L->body, 0, -1);
      if (g->s1 - g->s0 == 1)
        src[j] = flat;
      else if (j == g->s0)
        src[j] = sym_floordiv(L->env, flat, r->scs[j]);
      else
        src[j] = sym_modidx(L->env, flat, r->scs[j], r->src->shape[j]);
    }
  }
  return lval_load(L, r->src, src);
}

/* Strides of the out dims when the group's non-1 source dims are nested
 * contiguously; false when they are not. */
static bool restride_group(lower_ctx* L, const lval* s, const rgroup* g, const sym_expr** ocs,
                           const sym_expr** st) {
  uint32_t prev = UINT32_MAX; /* previous source dim that is not 1 */
  for (uint32_t j = g->s0; j < g->s1; j++) {
    if (lower_is(s->shape[j], 1)) continue;
    if (prev != UINT32_MAX && s->strides[prev] != sym_mul(L->env, s->strides[j], s->shape[j]))
      return false;
    prev = j;
  }
  const sym_expr* base = prev == UINT32_MAX ? lower_const(L, 0) : s->strides[prev];
  for (uint32_t i = g->o0; i < g->o1; i++)
    if (!base || !(st[i] = sym_mul(L->env, base, ocs[i]))) return false;
  return true;
}

ptc_status lower_reshape(lower_ctx* L, const lval* src, uint32_t rank, const sym_expr** shape,
                         lval* out) {
  reshape_data* r = lower_alloc(L, sizeof *r);
  uint32_t cap = rank + src->rank + 1;
  if (!r || !(r->g = lower_alloc(L, cap * sizeof *r->g)) || !(r->ocs = lower_exprs(L, rank)) ||
      !(r->scs = lower_exprs(L, src->rank)))
    return ptc_status_oom();
  r->src = src;
  r->n_groups = make_groups(L, rank, shape, src->rank, src->shape, r->g);
  if (r->n_groups == 0 && (rank || src->rank)) return ptc_status_oom();
  bool strided = src->kind == LV_BUF;
  const sym_expr** st = lower_exprs(L, rank);
  if (!st) return ptc_status_oom();
  for (uint32_t k = 0; k < r->n_groups; k++) {
    const rgroup* g = &r->g[k];
    if (!group_strides(L, shape, g->o0, g->o1, r->ocs) ||
        !group_strides(L, src->shape, g->s0, g->s1, r->scs))
      return ptc_status_oom();
    strided = strided && restride_group(L, src, g, r->ocs, st);
  }
  if (!strided) {
    lval_lazy(out, src->dtype, rank, shape, load_reshape, r);
    return PTC_OK;
  }
  int32_t dt = out->dtype;
  *out = *src;
  out->dtype = dt;
  out->rank = rank;
  out->shape = shape;
  out->strides = st;
  out->ext_node = -1;
  return PTC_OK;
}

const lval* lower_reshape_source(const lval* v) {
  if (v->kind != LV_LAZY || v->load != load_reshape) return NULL;
  return ((const reshape_data*)v->data)->src;
}

static ptc_status lower_reshape_op(lower_ctx* L, const gnode* n, lval* out) {
  return lower_reshape(L, lower_in(L, n, 0), out->rank, out->shape, out);
}

/* ---- as_strided ---------------------------------------------------------------------------- */

/* Offsets count from the input's first element in its storage: a graph
 * input's own layout, anything else realized contiguously first (as the ref
 * backend's contiguous intermediate values). */
static ptc_status lower_as_strided(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  lval base = *x;
  bool input = graph_value(L->g, n->in[0])->kind != PTC_VALUE_NODE;
  if (!input || !lval_is_whole_buffer(L, &base)) PTC_TRY(lower_realize(L, &base, true, n->name));
  const gattr* st = lower_attr(n, "stride");
  const sym_expr** strides = lower_exprs(L, out->rank);
  if (!strides) return ptc_status_oom();
  for (uint32_t i = 0; i < out->rank; i++)
    if (!st || i >= st->count || !(strides[i] = lower_imp(L, st->exprs[i])))
      return ptc_status_oom();
  const sym_expr* off = lower_attr_expr(L, n, "storage_offset", 0);
  uint32_t rank = out->rank;
  const sym_expr** shape = out->shape;
  int32_t dt = out->dtype;
  if (!off || !st || st->count != rank) return ptc_status_oom();
  *out = base;
  out->dtype = dt;
  out->rank = rank;
  out->shape = shape;
  out->strides = strides;
  out->offset = sym_add(L->env, base.offset, off);
  out->ext_node = -1;
  return out->offset ? PTC_OK : ptc_status_oom();
}

const lower_entry lower_view_table[] = {
    {"view", lower_reshape_op},    {"reshape", lower_reshape_op},
    {"flatten", lower_reshape_op}, {"unflatten", lower_reshape_op},
    {"squeeze", lower_reshape_op}, {"unsqueeze", lower_reshape_op},
    {"permute", lower_permute},    {"transpose", lower_transpose},
    {"expand", lower_expand},      {"slice", lower_slice},
    {"select", lower_select},      {"narrow", lower_narrow},
    {"split", lower_split},        {"chunk", lower_split},
    {"as_strided", lower_as_strided},
};
const size_t lower_view_count = sizeof lower_view_table / sizeof lower_view_table[0];
