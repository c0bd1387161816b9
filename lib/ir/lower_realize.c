/* lower_realize.c - turning values into buffers: the IR_POINTWISE node that
 * stores a lazy value contiguously, alias buffers for views of inputs and
 * constants passed to externs, view buffers (IR_BUF_VIEW) for views of
 * computed buffers passed to externs that take their layout, and Inductor's realize rules (reads, op
 * count, expensive ops, multiple users) measured by tracing a value's loader
 * into a scratch body; values read under a mask (cat, pad) are realized
 * when their ops could fail on the masked-off placeholders. */
#include "lower_internal.h"

#include <string.h>

/* Loop indices for a shape: x vars for dims that are not statically 1
 * (their sizes go to ranges[*n_ranges]), constant 0 for size-1 dims. */
static void loop_index(lower_ctx* L, uint32_t rank, const sym_expr* const* shape,
                       const sym_expr** idx, const sym_expr** ranges, uint32_t* n_ranges) {
  uint32_t k = 0;
  for (uint32_t d = 0; d < rank; d++) {
    if (lower_is(shape[d], 1)) {
      idx[d] = lower_const(L, 0);
      continue;
    }
    ranges[k] = shape[d];
    idx[d] = L->p->xvars[k++];
  }
  *n_ranges = k;
}

static ptc_status new_contig_buffer(lower_ctx* L, int32_t dtype, uint32_t rank,
                                    const sym_expr* const* shape, int32_t* id) {
  const sym_expr* st[PTC_MAX_RANK + 1];
  ir_buffer b;
  memset(&b, 0, sizeof b);
  b.kind = IR_BUF_COMPUTED;
  b.dtype = dtype;
  b.rank = rank;
  b.shape = (const sym_expr**)shape;
  b.strides = st;
  b.offset = lower_const(L, 0);
  b.numel = lower_numel(L, rank, shape);
  b.graph_input = -1;
  b.graph_value = PTC_VALUE_NONE;
  if (!lower_contig(L, rank, shape, st) || !b.offset || !b.numel) return ptc_status_oom();
  return ir_add_buffer(L->p, &b, id);
}

/* Adds an IR_POINTWISE node over `ranges` (n_ranges loops) storing v,
 * loaded at idx, into buffer id at the element offset of strides st. */
static ptc_status copy_node(lower_ctx* L, const lval* v, int32_t id, const char* origin,
                            const sym_expr** ranges, uint32_t n_ranges,
                            const sym_expr* const* idx, const sym_expr* const* st) {
  ir_node n;
  memset(&n, 0, sizeof n);
  n.kind = IR_POINTWISE;
  n.out_buf = id;
  n.ranges = ranges;
  n.n_ranges = n_ranges;
  n.origin = origin;
  lower_target saved;
  lower_begin_body(L, &n.body, &saved);
  ir_val x = lval_load(L, v, idx);
  const ir_buffer* b = ir_buf(L->p, id);
  ir_ops_store(L->p, &n.body, id, lower_dot(L, v->rank, idx, st, b->offset), x);
  lower_end_body(L, &saved);
  return ir_add_node(L->p, &n, NULL);
}

/* New IR_POINTWISE node storing v contiguously into a new buffer *id (of
 * v's shape). With `by_source`, a lazy reshape is stored by a loop over the
 * shape of the value it reshapes (through nested reshapes), each element at
 * its row-major position, which is the same position in v's row-major
 * layout: the node then has the loop structure of the value's producers (a
 * layer norm's [rows] x r[cols], say, rather than the flattened [rows, cols]
 * a GEMM input is viewed as), so the scheduler can fuse it with them, and
 * its loads need no FloorDiv/ModularIndexing of a flat index. */
static ptc_status store_node(lower_ctx* L, const lval* v, bool by_source, const char* origin,
                             int32_t* id) {
  PTC_TRY(new_contig_buffer(L, v->dtype, v->rank, v->shape, id));
  const lval* it = v;
  for (const lval* s; by_source && (s = lower_reshape_source(it)) != NULL;) it = s;
  const sym_expr *idx[PTC_MAX_RANK + 1], *ranges[PTC_MAX_RANK + 1], *st[PTC_MAX_RANK + 1];
  uint32_t n_ranges;
  loop_index(L, it->rank, it->shape, idx, ranges, &n_ranges);
  if (!lower_contig(L, it->rank, it->shape, st)) return ptc_status_oom();
  return copy_node(L, it, *id, origin, ranges, n_ranges, idx, st);
}

/* New IR_POINTWISE node storing rank-4 v [N, C, H, W] channels-last into a
 * new buffer *id: strides [H*W*C, 1, W*C, C], the loop over (n, h, w, c)
 * in that order so that consecutive elements are stored together. */
static ptc_status store_node_nhwc(lower_ctx* L, const lval* v, const char* origin, int32_t* id) {
  static const uint32_t perm[4] = {0, 2, 3, 1}; /* loop order: dims n, h, w, c */
  const sym_expr *psh[4], *pst[4], *st[4], *idx[4], *ranges[4];
  for (uint32_t k = 0; k < 4; k++) psh[k] = v->shape[perm[k]];
  if (!lower_contig(L, 4, psh, pst)) return ptc_status_oom();
  const sym_expr** bst = lower_exprs(L, 4);
  if (!bst) return ptc_status_oom();
  for (uint32_t k = 0; k < 4; k++) st[perm[k]] = pst[k];
  for (uint32_t d = 0; d < 4; d++) bst[d] = st[d];
  ir_buffer b;
  memset(&b, 0, sizeof b);
  b.kind = IR_BUF_COMPUTED;
  b.dtype = v->dtype;
  b.rank = 4;
  b.shape = v->shape;
  b.strides = bst;
  b.offset = lower_const(L, 0);
  b.numel = lower_numel(L, 4, v->shape);
  b.graph_input = -1;
  b.graph_value = PTC_VALUE_NONE;
  if (!b.offset || !b.numel) return ptc_status_oom();
  PTC_TRY(ir_add_buffer(L->p, &b, id));
  uint32_t k = 0;
  for (uint32_t j = 0; j < 4; j++) {
    uint32_t d = perm[j];
    if (lower_is(v->shape[d], 1)) {
      idx[d] = lower_const(L, 0);
      continue;
    }
    ranges[k] = v->shape[d];
    idx[d] = L->p->xvars[k++];
  }
  return copy_node(L, v, *id, origin, ranges, k, idx, st);
}

static void as_whole_buffer(lower_ctx* L, lval* v, int32_t id) {
  const ir_buffer* b = ir_buf(L->p, id);
  v->kind = LV_BUF;
  v->buf = id;
  v->strides = b->strides;
  v->offset = b->offset;
  v->shape = b->shape;
  v->load = NULL;
  v->data = NULL;
  v->ext_node = -1;
  v->depth = 0;
}

static ptc_status realize(lower_ctx* L, lval* v, bool copy, bool by_source, const char* origin) {
  if (v->kind == LV_BUF && (!copy || lval_is_whole_buffer(L, v))) return PTC_OK;
  int32_t id;
  PTC_TRY(store_node(L, v, by_source, origin, &id));
  as_whole_buffer(L, v, id);
  return PTC_OK;
}

ptc_status lower_realize(lower_ctx* L, lval* v, bool copy, const char* origin) {
  return realize(L, v, copy, false, origin);
}

/* A buffer aliasing an input/constant buffer's storage with v's layout. */
static ptc_status alias_buffer(lower_ctx* L, const lval* v, int32_t* id) {
  ir_buffer b = *ir_buf(L->p, v->buf);
  b.rank = v->rank;
  b.shape = v->shape;
  b.strides = v->strides;
  b.offset = v->offset;
  return ir_add_buffer(L->p, &b, id);
}

/* A view buffer of computed buffer v->buf with v's layout. */
static ptc_status view_buffer(lower_ctx* L, const lval* v, int32_t* id) {
  const ir_buffer* base = ir_buf(L->p, v->buf);
  ir_buffer b;
  memset(&b, 0, sizeof b);
  b.kind = IR_BUF_VIEW;
  b.dtype = base->dtype;
  b.rank = v->rank;
  b.shape = v->shape;
  b.strides = v->strides;
  b.offset = v->offset;
  b.numel = base->numel;
  b.graph_input = -1;
  b.graph_value = PTC_VALUE_NONE;
  b.base = v->buf;
  return ir_add_buffer(L->p, &b, id);
}

ptc_status lower_as_view_buffer(lower_ctx* L, lval* v, lower_view_ok_fn ok, const char* origin,
                                int32_t* buf) {
  if (L->o.extern_views && v->kind == LV_BUF && !lval_is_whole_buffer(L, v) &&
      ir_buf(L->p, v->buf)->kind == IR_BUF_COMPUTED && ok && ok(L, v))
    return view_buffer(L, v, buf);
  return lower_as_buffer(L, v, origin, buf);
}

ptc_status lower_as_buffer(lower_ctx* L, lval* v, const char* origin, int32_t* buf) {
  if (lval_is_whole_buffer(L, v)) {
    *buf = v->buf;
    return PTC_OK;
  }
  if (v->kind == LV_BUF && ir_buf(L->p, v->buf)->kind != IR_BUF_COMPUTED)
    return alias_buffer(L, v, buf);
  /* An extern's input fuses with its producers only (the extern is its one
   * consumer here), so a reshape is stored in its source's loop structure. */
  lval tmp = *v; /* a copy: the value itself stays as it is for its other users */
  PTC_TRY(realize(L, &tmp, true, true, origin));
  if (v->kind == LV_LAZY) *v = tmp; /* realized once for every later user */
  *buf = tmp.buf;
  return PTC_OK;
}

ptc_status lower_as_buffer_nhwc(lower_ctx* L, lval* v, const char* origin, int32_t* buf) {
  if (v->rank != 4 || lval_is_whole_buffer(L, v) ||
      (v->kind == LV_BUF && ir_buf(L->p, v->buf)->kind != IR_BUF_COMPUTED))
    return lower_as_buffer(L, v, origin, buf);
  lval tmp = *v;
  int32_t id;
  PTC_TRY(store_node_nhwc(L, v, origin, &id));
  as_whole_buffer(L, &tmp, id);
  if (v->kind == LV_LAZY) *v = tmp; /* stored once for every later user */
  *buf = id;
  return PTC_OK;
}

ptc_status lower_realize_contig(lower_ctx* L, lval* v, const char* origin) {
  if (v->kind != LV_BUF || ir_buf(L->p, v->buf)->kind != IR_BUF_COMPUTED) return PTC_OK;
  const sym_expr* st[PTC_MAX_RANK + 1];
  if (!lower_contig(L, v->rank, v->shape, st)) return ptc_status_oom();
  bool contig = true;
  for (uint32_t d = 0; d < v->rank; d++)
    if (!lower_is(v->shape[d], 1) && v->strides[d] != st[d]) contig = false;
  if (contig) return PTC_OK;
  int32_t id;
  PTC_TRY(store_node(L, v, false, origin, &id));
  as_whole_buffer(L, v, id);
  return PTC_OK;
}

/* ---- realize rules --------------------------------------------------------------------- */

typedef struct lstats {
  uint32_t reads, ops;
  bool expensive;
  bool unsafe_masked; /* integer division or indirect indexing */
} lstats;

/* Ops that may fail on the placeholder values a masked load gives. */
static bool unsafe_when_masked(const ir_op* op) {
  bool div = op->opcode == IR_DIV || op->opcode == IR_FLOORDIV || op->opcode == IR_MOD;
  return op->opcode == IR_INDIRECT || (div && !ptc_dtype_is_float(op->dtype));
}

static bool expensive_op(uint16_t op) {
  static const uint16_t ops[] = {IR_EXP, IR_LOG, IR_TANH, IR_SIGMOID, IR_ERF,
                                 IR_POW, IR_SIN, IR_COS};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (ops[i] == op) return true;
  return false;
}

/* Distinct (buffer, index) loads, op count and expensive ops of v's loader. */
static ptc_status trace(lower_ctx* L, const lval* v, lstats* st) {
  const sym_expr *idx[PTC_MAX_RANK + 1], *ranges[PTC_MAX_RANK + 1];
  uint32_t nr;
  ir_body b;
  memset(&b, 0, sizeof b);
  memset(st, 0, sizeof *st);
  loop_index(L, v->rank, v->shape, idx, ranges, &nr);
  lower_target saved;
  lower_begin_body(L, &b, &saved);
  lval_load(L, v, idx);
  lower_end_body(L, &saved);
  bool ok = ir_body_ok(&b);
  for (uint32_t i = 0; ok && i < b.n; i++) {
    const ir_op* op = &b.ops[i];
    st->expensive |= expensive_op(op->opcode);
    st->unsafe_masked |= unsafe_when_masked(op);
    if (op->opcode != IR_LOAD) continue;
    bool seen = false;
    for (uint32_t k = 0; k < i && !seen; k++)
      seen = b.ops[k].opcode == IR_LOAD && b.ops[k].buf == op->buf && b.ops[k].index == op->index;
    st->reads += !seen;
  }
  if (ok) st->ops = b.n;
  ir_body_free(&b);
  return ok ? PTC_OK : ptc_status_oom();
}

ptc_status lower_realize_for_mask(lower_ctx* L, lval* v, const char* origin) {
  if (v->kind != LV_LAZY) return PTC_OK;
  lstats st;
  PTC_TRY(trace(L, v, &st));
  return st.unsafe_masked ? lower_realize(L, v, false, origin) : PTC_OK;
}

ptc_status lower_maybe_realize(lower_ctx* L, lval* v, ptc_value gv, const char* origin) {
  if (v->kind != LV_LAZY) return PTC_OK;
  /* graph outputs are stored once, where they are computed, so that their
   * other users load them instead of recomputing them */
  if (!L->o.inline_pointwise || L->is_output[gv] || v->depth >= LOWER_MAX_DEPTH)
    return lower_realize(L, v, false, origin);
  lstats st;
  PTC_TRY(trace(L, v, &st));
  const ir_lower_options* o = &L->o;
  bool reuse = L->users[gv] > 1 && (st.reads > o->realize_reads_threshold ||
                                    st.ops > o->realize_opcount_threshold || st.expensive);
  /* A value of several reads that a reduction reads and at least two other
   * users read as well (a transformer's residual stream x + f(x): its layer
   * norm's mean and centring, and the next residual add) is stored once, by
   * the reduction's kernel as it reads it: otherwise every later residual
   * inlines the whole chain of adds, re-reading a growing number of tensors
   * in each layer norm until the accumulated-reads rule stores one. */
  reuse = reuse || (L->users[gv] > 2 && L->feeds_reduction[gv] && st.reads > 1);
  if (reuse || st.reads > o->realize_acc_reads_threshold || st.ops > o->max_inline_ops)
    return lower_realize(L, v, false, origin);
  return PTC_OK;
}
