/* lower.c - ir_lower, the driver of the lowering: graph inputs and
 * constants become buffers, each node is lowered in graph order through the
 * family tables (or folded into an extern's epilogue, or run as a ref-kernel
 * fallback, or as an extern call of a host-registered op), the realize rules
 * run on each new value, and the graph outputs are mapped to buffers. See
 * lower_internal.h for the value model. */
#include "lower_internal.h"

#include <stdlib.h>
#include <string.h>

void ir_lower_options_init(ir_lower_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->realize_reads_threshold = 4;
  o->realize_opcount_threshold = 30;
  o->realize_acc_reads_threshold = 8;
  o->max_inline_ops = 100;
  o->inline_pointwise = true;
  const char* ev = getenv("PTC_EXTERN_VIEWS");
  o->extern_views = !(ev && strcmp(ev, "0") == 0);
  o->conv_nhwc = false;
  o->conv_nhwc_plane = 196;
  o->conv_nhwc_plane_f32 = 196;
}

static const struct {
  const lower_entry* t;
  const size_t* n;
} tables[] = {
    {lower_pointwise_table, &lower_pointwise_count}, {lower_create_table, &lower_create_count},
    {lower_view_table, &lower_view_count},           {lower_index_table, &lower_index_count},
    {lower_reduce_table, &lower_reduce_count},       {lower_extern_table, &lower_extern_count},
};

static lower_fn find_lowering(const char* op) {
  for (size_t f = 0; f < sizeof tables / sizeof tables[0]; f++)
    for (size_t i = 0; i < *tables[f].n; i++)
      if (strcmp(tables[f].t[i].op, op) == 0) return tables[f].t[i].fn;
  return NULL;
}

/* ---- setup ------------------------------------------------------------------------------- */

static bool is_reduction_op(const char* op) {
  for (size_t i = 0; i < lower_reduce_count; i++)
    if (strcmp(lower_reduce_table[i].op, op) == 0) return true;
  return false;
}

static void count_users(lower_ctx* L) {
  const ptc_graph* g = L->g;
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    bool red = is_reduction_op(n->op->name);
    for (uint32_t k = 0; k < n->n_in; k++) {
      bool dup = n->in[k] == PTC_VALUE_NONE;
      for (uint32_t j = 0; j < k && !dup; j++) dup = n->in[j] == n->in[k];
      if (!dup) L->users[n->in[k]]++;
      if (red && n->in[k] != PTC_VALUE_NONE) L->feeds_reduction[n->in[k]] = true;
    }
  }
  for (size_t i = 0; i < g->outputs.len; i++) {
    ptc_value v = PTC_VEC_AT(&g->outputs, ptc_value, i);
    if (!L->is_output[v]) L->users[v]++;
    L->is_output[v] = true;
  }
}

/* Imported shape and strides of graph value v. */
static bool import_layout(lower_ctx* L, const gvalue* gv, const sym_expr** shape,
                          const sym_expr** strides) {
  for (uint32_t d = 0; d < gv->rank; d++) {
    shape[d] = lower_imp(L, gv->shape[d]);
    if (!shape[d]) return false;
    if (strides && !(strides[d] = lower_imp(L, gv->strides[d]))) return false;
  }
  return true;
}

/* Buffer of a graph input or constant, with the graph's layout. */
static ptc_status leaf_buffer(lower_ctx* L, ptc_value v, int32_t kind, int32_t input,
                              int32_t* id) {
  const gvalue* gv = graph_value(L->g, v);
  const sym_expr *sh[PTC_MAX_RANK + 1], *st[PTC_MAX_RANK + 1];
  if (!import_layout(L, gv, sh, st)) return ptc_status_oom();
  ir_buffer b;
  memset(&b, 0, sizeof b);
  b.kind = kind;
  b.dtype = gv->dtype;
  b.rank = gv->rank;
  b.shape = sh;
  b.strides = st;
  b.offset = lower_const(L, 0);
  b.numel = lower_const(L, 1); /* storage extent: 1 + sum((size - 1) * stride) */
  for (uint32_t d = 0; d < gv->rank && b.numel; d++)
    b.numel = lower_is(sh[d], 0) ? lower_const(L, 0)
              : lower_is(b.numel, 0) ? b.numel
                                     : sym_add(L->env, b.numel,
                                               sym_mul(L->env, sym_add_c(L->env, sh[d], -1), st[d]));
  b.graph_input = input;
  b.graph_value = v;
  if (!b.offset || !b.numel) return ptc_status_oom();
  PTC_TRY(ir_add_buffer(L->p, &b, id));
  lval* lv = &L->vals[v];
  const ir_buffer* nb = ir_buf(L->p, *id);
  lv->kind = LV_BUF;
  lv->dtype = gv->dtype;
  lv->rank = gv->rank;
  lv->shape = nb->shape;
  lv->buf = *id;
  lv->strides = nb->strides;
  lv->offset = nb->offset;
  lv->ext_node = -1;
  return PTC_OK;
}

static ptc_status add_leaves(lower_ctx* L) {
  const ptc_graph* g = L->g;
  ir_program* p = L->p;
  p->n_inputs = g->inputs.len;
  p->input_bufs = ptc_arena_alloc(&p->arena, (p->n_inputs + 1) * sizeof *p->input_bufs);
  if (!p->input_bufs) return ptc_status_oom();
  for (size_t i = 0; i < g->inputs.len; i++)
    PTC_TRY(leaf_buffer(L, PTC_VEC_AT(&g->inputs, ptc_value, i), IR_BUF_INPUT, (int32_t)i,
                        &p->input_bufs[i]));
  for (size_t v = 0; v < g->values.len; v++) {
    int32_t id;
    if (graph_value(g, (ptc_value)v)->kind == PTC_VALUE_CONSTANT)
      PTC_TRY(leaf_buffer(L, (ptc_value)v, IR_BUF_CONSTANT, -1, &id));
  }
  return PTC_OK;
}

/* ---- nodes ------------------------------------------------------------------------------- */

static ptc_status init_outputs(lower_ctx* L, const gnode* n, lval* out) {
  for (uint32_t k = 0; k < n->n_out; k++) {
    const gvalue* gv = graph_value(L->g, n->out[k]);
    memset(&out[k], 0, sizeof out[k]);
    out[k].dtype = gv->dtype;
    out[k].rank = gv->rank;
    out[k].buf = -1;
    out[k].ext_node = -1;
    out[k].shape = lower_exprs(L, gv->rank);
    if (!out[k].shape || !import_layout(L, gv, out[k].shape, NULL)) return ptc_status_oom();
  }
  return PTC_OK;
}

static ptc_status lower_node(lower_ctx* L, uint32_t i) {
  const gnode* n = graph_node(L->g, i);
  lval out[64];
  if (n->n_out > 64) return PTC_ERR(UNIMPLEMENTED, "%s: more than 64 outputs", n->name);
  L->node = n;
  L->node_index = i;
  PTC_TRY(init_outputs(L, n, out));
  bool done = false;
  ptc_status s = lower_try_epilogue(L, n, out, &done);
  if (!s && !done && (n->op->flags & OP_CUSTOM)) {
    s = lower_custom(L, n, out);
  } else if (!s && !done) {
    lower_fn fn = find_lowering(n->op->name);
    s = fn ? fn(L, n, out) : lower_fallback(L, n, out);
  }
  uint32_t depth = 0;
  for (uint32_t k = 0; k < n->n_in; k++)
    if (n->in[k] != PTC_VALUE_NONE && L->vals[n->in[k]].kind == LV_LAZY &&
        L->vals[n->in[k]].depth > depth)
      depth = L->vals[n->in[k]].depth;
  for (uint32_t k = 0; k < n->n_out && !s; k++) {
    out[k].depth = out[k].kind == LV_LAZY ? depth + 1 : 0;
    if (out[k].kind == LV_NONE) {
      s = PTC_ERR(INTERNAL, "output %u was not lowered", k);
      break;
    }
    L->vals[n->out[k]] = out[k];
    s = lower_maybe_realize(L, &L->vals[n->out[k]], n->out[k], n->name);
  }
  return s ? ptc_status_prefix(s, "lowering node %s (%s)", n->name, n->op->name) : PTC_OK;
}

static ptc_status map_outputs(lower_ctx* L) {
  const ptc_graph* g = L->g;
  ir_program* p = L->p;
  p->n_outputs = g->outputs.len;
  p->output_bufs = ptc_arena_alloc(&p->arena, (p->n_outputs + 1) * sizeof *p->output_bufs);
  if (!p->output_bufs) return ptc_status_oom();
  for (size_t i = 0; i < g->outputs.len; i++) {
    ptc_value v = PTC_VEC_AT(&g->outputs, ptc_value, i);
    const gvalue* gv = graph_value(g, v);
    lval* lv = &L->vals[v];
    if (gv->kind == PTC_VALUE_NODE) {
      const gnode* n = graph_node(g, gv->node);
      PTC_TRY(ptc_status_prefix(lower_realize(L, lv, true, n->name), "graph output %zu", i));
    }
    /* a channels-last convolution output (o.conv_nhwc) leaves contiguous */
    if (gv->kind == PTC_VALUE_NODE && L->o.conv_nhwc)
      PTC_TRY(ptc_status_prefix(lower_realize_contig(L, lv, "graph output"), "graph output %zu", i));
    p->output_bufs[i] = lv->buf;
  }
  return PTC_OK;
}

/* ---- entry -------------------------------------------------------------------------------- */

static void ctx_free(lower_ctx* L) {
  free(L->vals);
  free(L->users);
  free(L->is_output);
  free(L->feeds_reduction);
  free(L->memo);
  free(L->rounding);
  ptc_arena_free(&L->arena);
}

static ptc_status lower_all(lower_ctx* L) {
  size_t nv = L->g->values.len + 1;
  L->vals = calloc(nv, sizeof *L->vals);
  L->users = calloc(nv, sizeof *L->users);
  L->is_output = calloc(nv, sizeof *L->is_output);
  L->feeds_reduction = calloc(nv, sizeof *L->feeds_reduction);
  if (!L->vals || !L->users || !L->is_output || !L->feeds_reduction) return ptc_status_oom();
  count_users(L);
  PTC_TRY(add_leaves(L));
  for (size_t i = 0; i < L->g->nodes.len; i++) PTC_TRY(lower_node(L, (uint32_t)i));
  return map_outputs(L);
}

ptc_status ir_lower(ptc_context* ctx, const ptc_graph* g, const ir_lower_options* o,
                    ir_program** out) {
  if (!g || !out) return PTC_ERR(INVALID_ARGUMENT, "ir_lower: NULL argument");
  lower_ctx L;
  memset(&L, 0, sizeof L);
  ir_lower_options_init(&L.o);
  if (o) L.o = *o;
  L.g = g;
  L.mask = -1;
  ptc_arena_init(&L.arena, 0);
  PTC_TRY(ir_program_create(ctx, g, &L.p));
  L.env = L.p->env;
  ptc_status s = lower_all(&L);
  ctx_free(&L);
  if (s) {
    ir_program_destroy(L.p);
    return s;
  }
  *out = L.p;
  return PTC_OK;
}
