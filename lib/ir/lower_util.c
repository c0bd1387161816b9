/* lower_util.c - shared helpers of the lowering: expression import and
 * arithmetic in the program env, element loads of lvals (strided buffer
 * loads or loaders, masked when inside a masked region, memoized per body),
 * broadcasting, dtype conversion, constants, and node attributes. */
#include "lower_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- expressions ------------------------------------------------------------------------- */

const sym_expr* lower_imp(lower_ctx* L, const sym_expr* e) {
  return e ? sym_import(L->env, e) : NULL;
}

const sym_expr* lower_const(lower_ctx* L, int64_t v) { return sym_const(L->env, v); }

void* lower_alloc(lower_ctx* L, size_t bytes) { return ptc_arena_alloc(&L->arena, bytes); }

const sym_expr** lower_exprs(lower_ctx* L, uint32_t n) {
  return lower_alloc(L, (n + 1) * sizeof(const sym_expr*));
}

bool lower_is(const sym_expr* e, int64_t c) {
  int64_t v;
  return e && sym_is_const(e, &v) && v == c;
}

bool lower_contig(lower_ctx* L, uint32_t rank, const sym_expr* const* shape,
                  const sym_expr** out) {
  return graph_contiguous_strides(L->env, rank, shape, out);
}

const sym_expr* lower_numel(lower_ctx* L, uint32_t rank, const sym_expr* const* shape) {
  const sym_expr* n = lower_const(L, 1);
  for (uint32_t d = 0; d < rank && n; d++) n = shape[d] ? sym_mul(L->env, n, shape[d]) : NULL;
  return n;
}

const sym_expr* lower_dot(lower_ctx* L, uint32_t rank, const sym_expr* const* idx,
                          const sym_expr* const* strides, const sym_expr* offset) {
  const sym_expr* e = offset ? offset : lower_const(L, 0);
  for (uint32_t d = 0; d < rank && e; d++) {
    if (!idx[d] || !strides[d]) return NULL;
    if (lower_is(idx[d], 0) || lower_is(strides[d], 0)) continue;
    e = sym_add(L->env, e, sym_mul(L->env, idx[d], strides[d]));
  }
  return e;
}

ptc_status lower_decide(lower_ctx* L, sym_rel rel, const sym_expr* a, const sym_expr* b,
                        bool* r) {
  if (!a || !b) return ptc_status_oom();
  ptc_status s = sym_guard(L->env, rel, a, b, r);
  return s ? ptc_status_prefix(s, "lowering %s", L->node ? L->node->name : "?") : PTC_OK;
}

/* ---- emission ---------------------------------------------------------------------------- */

void lower_begin_body(lower_ctx* L, ir_body* b, lower_target* saved) {
  saved->body = L->body;
  saved->mask = L->mask;
  saved->gen = L->gen;
  L->body = b;
  L->mask = -1;
  L->gen = ++L->next_gen;
}

void lower_end_body(lower_ctx* L, const lower_target* saved) {
  L->body = saved->body;
  L->mask = saved->mask;
  L->gen = saved->gen;
}

static uint64_t memo_hash(const lval* v, ir_val mask, const sym_expr* const* idx, uint64_t gen) {
  uint64_t h = ptc_hash_mix((uint64_t)(uintptr_t)v, gen * 31u + (uint64_t)(uint32_t)mask);
  for (uint32_t d = 0; d < v->rank; d++) h = ptc_hash_mix(h, (uint64_t)(uintptr_t)idx[d]);
  return h;
}

static bool memo_match(const load_memo* m, uint64_t gen, const lval* v, ir_val mask,
                       const sym_expr* const* idx) {
  if (m->gen != gen || m->v != v || m->mask != mask) return false;
  for (uint32_t d = 0; d < v->rank; d++)
    if (m->idx[d] != idx[d]) return false;
  return true;
}

static load_memo* memo_slot(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  size_t i = memo_hash(v, L->mask, idx, L->gen) & (L->memo_cap - 1);
  while (L->memo[i].gen && !memo_match(&L->memo[i], L->gen, v, L->mask, idx))
    i = (i + 1) & (L->memo_cap - 1);
  return &L->memo[i];
}

/* Keeps the table at most half full; entries of finished bodies are dropped
 * when it grows. False on OOM (the memo is then just not used). */
static bool memo_reserve(lower_ctx* L) {
  if (L->memo && 2 * (L->memo_len + 1) <= L->memo_cap) return true;
  size_t live = 0;
  for (size_t i = 0; i < L->memo_cap; i++) live += L->memo[i].gen == L->gen;
  size_t cap = 64;
  while (cap < 4 * (live + 1)) cap *= 2;
  load_memo* old = L->memo;
  size_t old_cap = L->memo_cap;
  L->memo = calloc(cap, sizeof *L->memo);
  if (!L->memo) {
    L->memo = old;
    return false;
  }
  L->memo_cap = cap;
  L->memo_len = 0;
  for (size_t i = 0; i < old_cap; i++) {
    if (old[i].gen != L->gen) continue;
    ir_val saved = L->mask;
    L->mask = old[i].mask;
    *memo_slot(L, old[i].v, old[i].idx) = old[i];
    L->mask = saved;
    L->memo_len++;
  }
  free(old);
  return true;
}

static ir_val lazy_load(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  for (uint32_t d = 0; d < v->rank; d++)
    if (!idx[d]) return ir_ops_const_i(L->body, 0, -1); /* OOM: poisons */
  if (!memo_reserve(L)) return v->load(L, v, idx);
  load_memo* m = memo_slot(L, v, idx);
  if (m->gen) return m->val;
  const sym_expr** key = lower_alloc(L, (v->rank + 1) * sizeof *key);
  ir_val mask = L->mask;
  ir_val r = v->load(L, v, idx);
  if (!key || r < 0) return r;
  memcpy(key, idx, v->rank * sizeof *key);
  if (!memo_reserve(L)) return r;
  m = memo_slot(L, v, key); /* the loader may have grown the table */
  if (!m->gen) {
    *m = (load_memo){L->gen, v, mask, key, r};
    L->memo_len++;
  }
  return r;
}

ir_val lval_load(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  if (v->kind == LV_LAZY) return lazy_load(L, v, idx);
  if (v->kind != LV_BUF) return ir_ops_const_i(L->body, 0, -1); /* poisons */
  const sym_expr* e = lower_dot(L, v->rank, idx, v->strides, v->offset);
  if (L->mask >= 0) return ir_ops_load_masked(L->p, L->body, v->buf, e, L->mask, 0.0);
  return ir_ops_load(L->p, L->body, v->buf, e);
}

void lower_note_rounding(lower_ctx* L, ir_val x, bool implicit) {
  if (x < 0 || !L->o.lowp_f32_math) return;
  if (!implicit) {
    if (L->rounding_gen == L->gen && (uint32_t)x < L->rounding_cap) L->rounding[x] = 0;
    return;
  }
  if (L->rounding_gen != L->gen) {
    if (L->rounding) memset(L->rounding, 0, L->rounding_cap);
    L->rounding_gen = L->gen;
  }
  if ((uint32_t)x >= L->rounding_cap) {
    uint32_t cap = L->rounding_cap ? L->rounding_cap : 64;
    while (cap <= (uint32_t)x) cap *= 2;
    uint8_t* r = realloc(L->rounding, cap);
    if (!r) return; /* not recorded: the value is just read rounded */
    memset(r + L->rounding_cap, 0, cap - L->rounding_cap);
    L->rounding = r;
    L->rounding_cap = cap;
  }
  L->rounding[x] = 1;
}

static bool is_rounding(const lower_ctx* L, ir_val x) {
  return x >= 0 && L->rounding_gen == L->gen && (uint32_t)x < L->rounding_cap && L->rounding[x];
}

ir_val lower_load_math(lower_ctx* L, const lval* v, const sym_expr* const* idx, int32_t tdt,
                       int32_t mdt) {
  ir_val x = lval_load(L, v, idx);
  if (L->o.lowp_f32_math && tdt == v->dtype && mdt == PTC_F32 && is_rounding(L, x) &&
      ir_body_ok(L->body)) {
    ir_val wide = L->body->ops[x].args[0];
    if (wide >= 0 && L->body->ops[wide].dtype == PTC_F32) return wide;
  }
  x = lower_convert(L, x, v->dtype, tdt);
  return lower_convert(L, x, tdt, mdt);
}

ir_val lower_load_masked(lower_ctx* L, const lval* v, const sym_expr* const* idx, ir_val m) {
  ir_val saved = L->mask;
  L->mask = saved >= 0 ? ir_ops_binary(L->body, IR_AND, saved, m, PTC_BOOL) : m;
  ir_val r = lval_load(L, v, idx);
  L->mask = saved;
  return r;
}

void lower_bcast_index(lower_ctx* L, const lval* in, uint32_t out_rank,
                       const sym_expr* const* out_shape, const sym_expr* const* idx,
                       const sym_expr** in_idx) {
  uint32_t lead = out_rank - in->rank;
  for (uint32_t j = 0; j < in->rank; j++) {
    uint32_t i = j + lead;
    bool bcast = lower_is(in->shape[j], 1) && !lower_is(out_shape[i], 1);
    in_idx[j] = bcast ? lower_const(L, 0) : idx[i];
  }
}

ir_val lower_convert(lower_ctx* L, ir_val x, int32_t from, int32_t to) {
  return from == to ? x : ir_ops_to_dtype(L->body, x, to);
}

ir_val lower_emit_const(lower_ctx* L, ir_scalar s, int32_t dt) {
  return ptc_dtype_is_float(dt) ? ir_ops_const_f(L->body, s.f, dt)
                                : ir_ops_const_i(L->body, s.i, dt);
}

ir_val lower_index_cmp(lower_ctx* L, ir_opcode cmp, const sym_expr* a, const sym_expr* b) {
  ir_val x = ir_ops_index_expr(L->p, L->body, a, PTC_I64);
  ir_val y = ir_ops_index_expr(L->p, L->body, b, PTC_I64);
  return ir_ops_binary(L->body, cmp, x, y, PTC_BOOL);
}

int32_t lower_opmath(int32_t dt) {
  if (dt == PTC_F16 || dt == PTC_BF16) return PTC_F32;
  if (dt == PTC_BOOL) return PTC_I64;
  return dt;
}

void lval_lazy(lval* out, int32_t dtype, uint32_t rank, const sym_expr** shape, lval_load_fn fn,
               const void* data) {
  memset(out, 0, sizeof *out);
  out->kind = LV_LAZY;
  out->dtype = dtype;
  out->rank = rank;
  out->shape = shape;
  out->buf = -1;
  out->load = fn;
  out->data = data;
  out->ext_node = -1;
}

bool lval_is_whole_buffer(const lower_ctx* L, const lval* v) {
  if (v->kind != LV_BUF) return false;
  const ir_buffer* b = ir_buf(L->p, v->buf);
  if (b->rank != v->rank || b->offset != v->offset) return false;
  for (uint32_t d = 0; d < v->rank; d++)
    if (b->shape[d] != v->shape[d] || b->strides[d] != v->strides[d]) return false;
  return true;
}

/* ---- attributes -------------------------------------------------------------------------- */

const gattr* lower_attr(const gnode* n, const char* name) { return gattrs_find(&n->attrs, name); }

int64_t lower_attr_int(const gnode* n, const char* name, int64_t dflt) {
  const gattr* a = lower_attr(n, name);
  if (!a) return dflt;
  if (a->type == PTC_ATTR_FLOAT) return (int64_t)a->f;
  if (a->type == PTC_ATTR_SYM) {
    int64_t v;
    return a->sym && sym_is_const(a->sym, &v) ? v : dflt;
  }
  return a->i;
}

double lower_attr_float(const gnode* n, const char* name, double dflt) {
  const gattr* a = lower_attr(n, name);
  if (!a) return dflt;
  return a->type == PTC_ATTR_FLOAT ? a->f : (double)lower_attr_int(n, name, 0);
}

bool lower_attr_bool(const gnode* n, const char* name, bool dflt) {
  const gattr* a = lower_attr(n, name);
  return a ? a->i != 0 : dflt;
}

const char* lower_attr_str(const gnode* n, const char* name, const char* dflt) {
  const gattr* a = lower_attr(n, name);
  return a && a->s ? a->s : dflt;
}

const sym_expr* lower_attr_expr(lower_ctx* L, const gnode* n, const char* name, int64_t dflt) {
  const gattr* a = lower_attr(n, name);
  if (a && a->type == PTC_ATTR_SYM && a->sym) return lower_imp(L, a->sym);
  return lower_const(L, a ? lower_attr_int(n, name, dflt) : dflt);
}

int lower_attr_cat(const gnode* n, const char* name) {
  const gattr* a = lower_attr(n, name);
  if (!a) return -1;
  return a->type == PTC_ATTR_FLOAT ? 2 : a->type == PTC_ATTR_BOOL ? 0 : 1;
}

uint32_t lower_norm_dim(int64_t d, uint32_t rank) {
  int64_t r = rank == 0 ? 1 : rank;
  if (d < 0) d += r;
  return d < 0 ? 0 : (uint32_t)d;
}

lval* lower_in(lower_ctx* L, const gnode* n, uint32_t k) {
  if (k >= n->n_in || n->in[k] == PTC_VALUE_NONE) return NULL;
  return &L->vals[n->in[k]];
}

int32_t lower_result_type(const lower_ctx* L, const gnode* n, size_t first, int scalar_cat) {
  meta_tensor mt[4];
  const meta_tensor* mp[4];
  meta_ctx m;
  memset(&m, 0, sizeof m);
  m.n_in = n->n_in < 4 ? n->n_in : 4;
  for (size_t i = 0; i < m.n_in; i++) {
    mp[i] = NULL;
    if (n->in[i] == PTC_VALUE_NONE) continue;
    const gvalue* v = graph_value(L->g, n->in[i]);
    memset(&mt[i], 0, sizeof mt[i]);
    mt[i].dtype = v->dtype;
    mt[i].rank = v->rank;
    mp[i] = &mt[i];
  }
  m.in = mp;
  return meta_result_type(&m, first, scalar_cat);
}
