/* lower_index.c - lowerings that select elements: cat/stack and pad through
 * masked loads (each input's loads run under a mask saying the element is
 * theirs), gather/index_select/embedding/index through IR_INDIRECT (an
 * index tensor's value becomes an index symbol, bounds-checked at run time),
 * and tril/triu through comparisons of the loop indices. */
#include "lower_internal.h"

#include <string.h>

/* ---- cat / stack ---------------------------------------------------------------------- */

typedef struct cat_data {
  uint32_t n, dim;
  const lval** in;            /* non-empty inputs */
  const sym_expr** start;     /* n + 1 offsets along dim */
} cat_data;

/* Input k's element (converted to the output dtype) under its own mask. */
static ir_val cat_piece(lower_ctx* L, const cat_data* c, uint32_t k, const lval* v,
                        const sym_expr* const* idx, ir_val mask) {
  const sym_expr* src[PTC_MAX_RANK + 1];
  memcpy(src, idx, v->rank * sizeof *src);
  src[c->dim] = sym_sub(L->env, idx[c->dim], c->start[k]);
  ir_val x = mask >= 0 ? lower_load_masked(L, c->in[k], src, mask) : lval_load(L, c->in[k], src);
  return lower_convert(L, x, c->in[k]->dtype, v->dtype);
}

static ir_val load_cat(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const cat_data* c = v->data;
  const sym_expr* i = idx[c->dim];
  if (c->n == 0) return lower_emit_const(L, ir_scalar_of_i(0, v->dtype), v->dtype); /* empty */
  if (c->n == 1) return cat_piece(L, c, 0, v, idx, -1);
  ir_val r = cat_piece(L, c, c->n - 1, v, idx, lower_index_cmp(L, IR_GE, i, c->start[c->n - 1]));
  for (uint32_t k = c->n - 1; k-- > 0;) {
    ir_val below = lower_index_cmp(L, IR_LT, i, c->start[k + 1]);
    ir_val m = k == 0 ? below
                      : ir_ops_binary(L->body, IR_AND,
                                      lower_index_cmp(L, IR_GE, i, c->start[k]), below, PTC_BOOL);
    r = ir_ops_where(L->body, below, cat_piece(L, c, k, v, idx, m), r, v->dtype);
  }
  return r;
}

static bool statically_empty(const lval* v) {
  for (uint32_t d = 0; d < v->rank; d++)
    if (lower_is(v->shape[d], 0)) return true;
  return false;
}

/* out = concatenation of ins[0..n) along dim (inputs of statically zero
 * size are skipped, as ATen does). */
static ptc_status cat_of(lower_ctx* L, lval* const* ins, uint32_t n, uint32_t dim,
                         lval* out) {
  cat_data* c = lower_alloc(L, sizeof *c);
  if (!c || !(c->in = lower_alloc(L, (n + 1) * sizeof *c->in)) ||
      !(c->start = lower_exprs(L, n + 1)))
    return ptc_status_oom();
  c->dim = dim;
  c->start[0] = lower_const(L, 0);
  for (uint32_t k = 0; k < n; k++) {
    if (statically_empty(ins[k])) continue;
    if (n > 1) PTC_TRY(lower_realize_for_mask(L, ins[k], L->node->name));
    c->in[c->n] = ins[k];
    c->start[c->n + 1] = sym_add(L->env, c->start[c->n], ins[k]->shape[dim]);
    if (!c->start[++c->n]) return ptc_status_oom();
  }
  lval_lazy(out, out->dtype, out->rank, out->shape, load_cat, c);
  return PTC_OK;
}

static ptc_status lower_cat(lower_ctx* L, const gnode* n, lval* out) {
  lval** ins = lower_alloc(L, (n->n_in + 1) * sizeof *ins);
  if (!ins) return ptc_status_oom();
  for (uint32_t k = 0; k < n->n_in; k++) ins[k] = lower_in(L, n, k);
  return cat_of(L, ins, n->n_in, lower_norm_dim(lower_attr_int(n, "dim", 0), out->rank), out);
}

/* stack = cat of the inputs each viewed with a size-1 dim inserted at dim. */
static ptc_status lower_stack(lower_ctx* L, const gnode* n, lval* out) {
  uint32_t d = lower_norm_dim(lower_attr_int(n, "dim", 0), out->rank);
  lval* views = lower_alloc(L, (n->n_in + 1) * sizeof *views);
  lval** ins = lower_alloc(L, (n->n_in + 1) * sizeof *ins);
  if (!views || !ins) return ptc_status_oom();
  for (uint32_t k = 0; k < n->n_in; k++) {
    const lval* x = lower_in(L, n, k);
    const sym_expr** sh = lower_exprs(L, x->rank + 1);
    if (!sh) return ptc_status_oom();
    for (uint32_t i = 0, j = 0; i <= x->rank; i++) sh[i] = i == d ? lower_const(L, 1) : x->shape[j++];
    views[k].dtype = x->dtype;
    PTC_TRY(lower_reshape(L, x, x->rank + 1, sh, &views[k]));
    ins[k] = &views[k];
  }
  return cat_of(L, ins, n->n_in, d, out);
}

/* ---- pad ------------------------------------------------------------------------------- */

typedef struct pad_data {
  const lval* src;
  const sym_expr** lo;    /* per dim: elements added before (negative crops) */
  bool* check_lo;         /* per dim: idx - lo may be < 0 */
  bool* check_hi;         /* per dim: idx - lo may be >= size */
  ir_scalar value;
} pad_data;

static ir_val load_pad(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const pad_data* p = v->data;
  const sym_expr* src[PTC_MAX_RANK + 1];
  ir_val mask = -1;
  for (uint32_t d = 0; d < v->rank; d++) {
    src[d] = sym_sub(L->env, idx[d], p->lo[d]);
    ir_val m[2] = {-1, -1};
    if (p->check_lo[d]) m[0] = lower_index_cmp(L, IR_GE, src[d], lower_const(L, 0));
    if (p->check_hi[d]) m[1] = lower_index_cmp(L, IR_LT, src[d], p->src->shape[d]);
    for (int k = 0; k < 2; k++)
      if (m[k] >= 0) mask = mask < 0 ? m[k] : ir_ops_binary(L->body, IR_AND, mask, m[k], PTC_BOOL);
  }
  if (mask < 0) return lval_load(L, p->src, src);
  ir_val x = lower_load_masked(L, p->src, src, mask);
  return ir_ops_where(L->body, mask, x, lower_emit_const(L, p->value, v->dtype), v->dtype);
}

static ptc_status lower_pad(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  PTC_TRY(lower_realize_for_mask(L, x, n->name));
  const gattr* pad = lower_attr(n, "pad");
  pad_data* p = lower_alloc(L, sizeof *p);
  if (!p || !(p->lo = lower_exprs(L, x->rank)) ||
      !(p->check_lo = lower_alloc(L, x->rank + 1)) || !(p->check_hi = lower_alloc(L, x->rank + 1)))
    return ptc_status_oom();
  p->src = x;
  p->value = ir_scalar_of_f(lower_attr_float(n, "value", 0.0), out->dtype);
  for (uint32_t d = 0; d < x->rank; d++) p->lo[d] = lower_const(L, 0);
  size_t npairs = pad ? pad->count / 2 : 0;
  for (size_t j = 0; j < npairs; j++) {
    uint32_t d = x->rank - 1 - (uint32_t)j;
    const sym_expr* before = lower_imp(L, pad->exprs[2 * j]);
    const sym_expr* after = lower_imp(L, pad->exprs[2 * j + 1]);
    if (!before || !after) return ptc_status_oom();
    p->lo[d] = before;
    p->check_lo[d] = sym_static(L->env, SYM_LE, before, lower_const(L, 0)) != 1;
    p->check_hi[d] = sym_static(L->env, SYM_LE, after, lower_const(L, 0)) != 1;
  }
  lval_lazy(out, out->dtype, out->rank, out->shape, load_pad, p);
  return PTC_OK;
}

/* ---- gather / index_select / embedding / index ------------------------------------------------- */

typedef struct gather_data {
  const lval* src;
  const lval* index[PTC_MAX_RANK];  /* per source dim: index tensor or NULL */
  uint32_t dim;                     /* gather / index_select dim */
  uint32_t pos, br;                 /* index: broadcast index dims at [pos, pos + br) */
  int32_t out_pos[PTC_MAX_RANK];    /* index: out dim of each non-indexed source dim */
} gather_data;

/* The index symbol for value iv checked against the size of source dim d. */
static const sym_expr* indirect(lower_ctx* L, const lval* src, uint32_t d, ir_val iv) {
  const sym_expr* s = NULL;
  const sym_expr* bound = src->rank ? src->shape[d] : lower_const(L, 1);
  ir_ops_indirect(L->p, L->body, iv, bound, &s);
  return s ? s : lower_const(L, 0);
}

/* Like indirect(), for ops that reject negative indices (gather,
 * index_select, embedding; only advanced indexing wraps them): a negative
 * value is mapped to the bound itself, so the bounds check reports it. */
static const sym_expr* indirect_nowrap(lower_ctx* L, const lval* src, uint32_t d, ir_val iv) {
  const sym_expr* bound = src->rank ? src->shape[d] : lower_const(L, 1);
  ir_val v = ir_ops_to_dtype(L->body, iv, PTC_I64);
  ir_val neg = ir_ops_binary(L->body, IR_LT, v, ir_ops_const_i(L->body, 0, PTC_I64), PTC_BOOL);
  ir_val b = ir_ops_index_expr(L->p, L->body, bound, PTC_I64);
  return indirect(L, src, d, ir_ops_where(L->body, neg, b, v, PTC_I64));
}

static ir_val load_index_value(lower_ctx* L, const lval* ix, const sym_expr* const* idx) {
  return lval_load(L, ix, idx);
}

/* gather: out[idx] = src[idx with idx[dim] = index[idx]]. */
static ir_val load_gather(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const gather_data* g = v->data;
  const sym_expr* src[PTC_MAX_RANK + 1];
  memcpy(src, idx, g->src->rank * sizeof *src);
  ir_val iv = load_index_value(L, g->index[0], idx);
  const sym_expr* s = indirect_nowrap(L, g->src, g->dim, iv);
  if (g->src->rank) src[g->dim] = s;
  return lval_load(L, g->src, src);
}

/* index_select: out[.., i, ..] = src[.., index[i], ..]. */
static ir_val load_index_select(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const gather_data* g = v->data;
  const sym_expr* src[PTC_MAX_RANK + 1];
  memcpy(src, idx, g->src->rank * sizeof *src);
  const sym_expr* zero = lower_const(L, 0);
  const sym_expr* at = g->src->rank ? idx[g->dim] : zero;
  ir_val iv = load_index_value(L, g->index[0], g->index[0]->rank ? &at : NULL);
  const sym_expr* s = indirect_nowrap(L, g->src, g->dim, iv);
  if (g->src->rank) src[g->dim] = s;
  return lval_load(L, g->src, src);
}

/* embedding: out[i..., j] = weight[indices[i...], j]. */
static ir_val load_embedding(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const gather_data* g = v->data;
  ir_val iv = load_index_value(L, g->index[0], idx);
  const sym_expr* src[2] = {indirect_nowrap(L, g->src, 0, iv), idx[v->rank - 1]};
  return lval_load(L, g->src, src);
}

/* index (advanced indexing): indexed source dims read their (broadcast)
 * index tensors at out dims [pos, pos + br); the others map to out_pos. */
static ir_val load_adv_index(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const gather_data* g = v->data;
  const sym_expr* src[PTC_MAX_RANK + 1];
  for (uint32_t d = 0; d < g->src->rank; d++) {
    const lval* ix = g->index[d];
    if (!ix) {
      src[d] = idx[g->out_pos[d]];
      continue;
    }
    const sym_expr* bi[PTC_MAX_RANK + 1];
    lower_bcast_index(L, ix, g->br, v->shape + g->pos, idx + g->pos, bi);
    src[d] = indirect(L, g->src, d, load_index_value(L, ix, bi));
  }
  return lval_load(L, g->src, src);
}

static gather_data* gather_new(lower_ctx* L, const gnode* n) {
  gather_data* g = lower_alloc(L, sizeof *g);
  if (g) g->src = lower_in(L, n, 0);
  return g;
}

static ptc_status finish(lval* out, lval_load_fn fn, gather_data* g) {
  if (!g) return ptc_status_oom();
  lval_lazy(out, out->dtype, out->rank, out->shape, fn, g);
  return PTC_OK;
}

static ptc_status lower_gather(lower_ctx* L, const gnode* n, lval* out) {
  gather_data* g = gather_new(L, n);
  if (g) {
    g->index[0] = lower_in(L, n, 1);
    g->dim = lower_norm_dim(lower_attr_int(n, "dim", 0), g->src->rank);
  }
  return finish(out, load_gather, g);
}

static ptc_status lower_index_select(lower_ctx* L, const gnode* n, lval* out) {
  gather_data* g = gather_new(L, n);
  if (g) {
    g->index[0] = lower_in(L, n, 1);
    g->dim = lower_norm_dim(lower_attr_int(n, "dim", 0), g->src->rank);
  }
  return finish(out, load_index_select, g);
}

static ptc_status lower_embedding(lower_ctx* L, const gnode* n, lval* out) {
  gather_data* g = gather_new(L, n);
  if (g) g->index[0] = lower_in(L, n, 1);
  return finish(out, load_embedding, g);
}

/* Placement of the broadcast index dims (ATen / NumPy rule): in place of the
 * indexed dims when they are adjacent, else first. */
static ptc_status lower_adv_index(lower_ctx* L, const gnode* n, lval* out) {
  gather_data* g = gather_new(L, n);
  if (!g) return ptc_status_oom();
  int32_t first = -1, last = -1;
  bool gap = false;
  for (uint32_t i = 0; i + 1 < n->n_in && i < g->src->rank; i++) {
    g->index[i] = lower_in(L, n, i + 1);
    if (!g->index[i]) continue;
    if (last >= 0 && (int32_t)i != last + 1) gap = true;
    if (first < 0) first = (int32_t)i;
    last = (int32_t)i;
    if (g->index[i]->rank > g->br) g->br = g->index[i]->rank;
  }
  if (first < 0) {
    *out = *g->src;
    return PTC_OK;
  }
  g->pos = gap ? 0 : (uint32_t)first;
  for (uint32_t i = 0, o = 0; i < g->src->rank; i++) {
    if (i == g->pos) o += g->br;
    g->out_pos[i] = g->index[i] ? -1 : (int32_t)o++;
  }
  return finish(out, load_adv_index, g);
}

/* ---- tril / triu ------------------------------------------------------------------------------ */

typedef struct tri_data {
  const lval* src;
  int64_t diag;
  bool lower;
} tri_data;

static ir_val load_tri(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const tri_data* t = v->data;
  const sym_expr* k = sym_sub(L->env, idx[v->rank - 1], idx[v->rank - 2]);
  ir_val keep = lower_index_cmp(L, t->lower ? IR_LE : IR_GE, k, lower_const(L, t->diag));
  ir_val x = lval_load(L, t->src, idx);
  return ir_ops_where(L->body, keep, x, lower_emit_const(L, ir_scalar_of_i(0, v->dtype), v->dtype),
                      v->dtype);
}

static ptc_status tri(lower_ctx* L, const gnode* n, lval* out, bool lower) {
  tri_data* t = lower_alloc(L, sizeof *t);
  if (!t) return ptc_status_oom();
  t->src = lower_in(L, n, 0);
  t->diag = lower_attr_int(n, "diagonal", 0);
  t->lower = lower;
  lval_lazy(out, out->dtype, out->rank, out->shape, load_tri, t);
  return PTC_OK;
}

static ptc_status lower_tril(lower_ctx* L, const gnode* n, lval* out) { return tri(L, n, out, true); }
static ptc_status lower_triu(lower_ctx* L, const gnode* n, lval* out) {
  return tri(L, n, out, false);
}

const lower_entry lower_index_table[] = {
    {"cat", lower_cat},           {"stack", lower_stack},
    {"pad", lower_pad},           {"gather", lower_gather},
    {"index_select", lower_index_select}, {"embedding", lower_embedding},
    {"index", lower_adv_index},   {"tril", lower_tril},
    {"triu", lower_triu},
};
const size_t lower_index_count = sizeof lower_index_table / sizeof lower_index_table[0];
