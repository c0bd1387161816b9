/* replay.c - rebuilds a graph node by node through the public building calls
 * (symbols by name, inputs, constants, nodes, outputs), converting stored
 * attributes back to ptc_attr form so every meta function runs again. Hooks
 * change input dims or replace nodes (see replay.h). */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

struct replay {
  const ptc_graph* src;
  ptc_graph* dst;
  ptc_value* map;    /* source value -> destination value */
  ptc_arena scratch; /* attribute arrays of the calls made so far */
};

const ptc_graph* replay_src(const replay* r) { return r->src; }
ptc_graph* replay_dst(replay* r) { return r->dst; }

ptc_value replay_map(const replay* r, ptc_value v) {
  return v < r->src->values.len ? r->map[v] : PTC_VALUE_NONE;
}

void replay_set(replay* r, ptc_value v, ptc_value to) {
  if (v < r->src->values.len) r->map[v] = to;
}

/* ---- attributes ------------------------------------------------------------- */

ptc_status replay_exprs(ptc_graph* dst, const sym_expr* const* e, size_t n, ptc_arena* scratch,
                        int64_t** ints, ptc_sym** syms) {
  *ints = ptc_arena_alloc(scratch, (n + 1) * sizeof **ints);
  *syms = ptc_arena_alloc(scratch, (n + 1) * sizeof **syms);
  if (!*ints || !*syms) return ptc_status_oom();
  for (size_t i = 0; i < n; i++) {
    const sym_expr* x = sym_import(dst->env, e[i]);
    if (!x) return ptc_status_oom();
    if (sym_is_const(x, &(*ints)[i])) continue;
    bool oom = false;
    (*syms)[i] = graph_sym_id(dst, x, &oom);
    if (oom) return ptc_status_oom();
    if (!sym_hint(dst->env, x, &(*ints)[i])) (*ints)[i] = 0;
  }
  return PTC_OK;
}

/* A SYM attribute: a plain INT when the expression is constant. */
static ptc_status sym_attr(ptc_graph* dst, const gattr* s, ptc_attr* o) {
  const sym_expr* x = sym_import(dst->env, s->sym);
  if (!x) return ptc_status_oom();
  if (sym_is_const(x, &o->i)) {
    o->type = PTC_ATTR_INT;
    return PTC_OK;
  }
  bool oom = false;
  o->sym = graph_sym_id(dst, x, &oom);
  return oom ? ptc_status_oom() : PTC_OK;
}

static ptc_status one_attr(ptc_graph* dst, const gattr* s, ptc_arena* scratch, ptc_attr* o) {
  memset(o, 0, sizeof *o);
  o->name = s->name;
  o->type = s->type;
  o->i = s->i;
  o->f = s->f;
  o->s = s->s;
  switch (s->type) {
    case PTC_ATTR_INTS: {
      int64_t* ints;
      ptc_sym* syms;
      PTC_TRY(replay_exprs(dst, s->exprs, s->count, scratch, &ints, &syms));
      o->ints = ints;
      o->syms = syms;
      o->count = s->count;
      return PTC_OK;
    }
    case PTC_ATTR_FLOATS:
      o->floats = s->floats;
      o->count = s->count;
      return PTC_OK;
    case PTC_ATTR_SYM: return sym_attr(dst, s, o);
    default: return PTC_OK;
  }
}

ptc_status replay_attrs(ptc_graph* dst, const gattrs* a, ptc_arena* scratch, ptc_attr* out) {
  for (size_t i = 0; i < a->n; i++) PTC_TRY(one_attr(dst, &a->a[i], scratch, &out[i]));
  return PTC_OK;
}

/* ---- symbols, inputs, constants ------------------------------------------------ */

/* Same names, hints and ranges, same order (so indices match). */
static ptc_status copy_symbols(replay* r) {
  const sym_env* se = r->src->env;
  for (size_t i = 0; i < sym_num_vars(se); i++) {
    int64_t lo, hi;
    sym_var_range(se, i, &lo, &hi);
    const sym_expr* e = NULL;
    PTC_TRY(sym_new_var(r->dst->env, sym_var_name(se, i), sym_var_hint(se, i), lo, hi, &e));
  }
  return PTC_OK;
}

/* Layout of an input: `exact` when its strides are the contiguous ones,
 * `loose` when they are up to size-1 dims (whose stride never matters);
 * otherwise (and when not exact) its static strides in st. */
typedef struct layout {
  bool exact, loose;
  int64_t st[PTC_MAX_RANK + 1];
} layout;

static ptc_status input_layout(replay* r, const gvalue* v, layout* l) {
  const sym_expr* cs[PTC_MAX_RANK + 1];
  if (!graph_contiguous_strides(r->src->env, v->rank, v->shape, cs)) return ptc_status_oom();
  l->exact = l->loose = true;
  for (uint32_t d = 0; d < v->rank; d++) {
    int64_t one;
    bool unit = sym_is_const(v->shape[d], &one) && one == 1;
    l->exact &= cs[d] == v->strides[d];
    l->loose &= unit || cs[d] == v->strides[d];
  }
  for (uint32_t d = 0; !l->exact && d < v->rank; d++)
    if (!sym_is_const(v->strides[d], &l->st[d]))
      return PTC_ERR(INTERNAL, "replay: input %s has a symbolic stride", v->name);
  return PTC_OK;
}

static ptc_status input_dims(replay* r, const gvalue* v, ptc_dim* dims) {
  for (uint32_t d = 0; d < v->rank; d++) {
    const sym_expr* x = sym_import(r->dst->env, v->shape[d]);
    if (!x) return ptc_status_oom();
    memset(&dims[d], 0, sizeof dims[d]);
    if (sym_is_const(x, &dims[d].value)) continue;
    bool oom = false;
    dims[d].sym = graph_sym_id(r->dst, x, &oom);
    if (oom) return ptc_status_oom();
  }
  return PTC_OK;
}

/* Lets the hook change the dims; *changed tells whether it did. */
static ptc_status hook_dims(replay* r, const replay_hooks* h, size_t i, ptc_dim* dims,
                            uint32_t rank, bool* changed) {
  *changed = false;
  if (!h || !h->input_dims) return PTC_OK;
  ptc_dim before[PTC_MAX_RANK + 1];
  memcpy(before, dims, rank * sizeof *dims);
  PTC_TRY(h->input_dims(h->user, r, i, dims, rank));
  for (uint32_t d = 0; d < rank; d++)
    *changed |= before[d].sym != dims[d].sym || before[d].value != dims[d].value;
  return PTC_OK;
}

/* Same name, dtype, dims (as the hook leaves them) and strides: explicit
 * ones are kept unless the dims changed, which needs a contiguous input. */
static ptc_status copy_input(replay* r, const replay_hooks* h, size_t i) {
  ptc_value sv = PTC_VEC_AT(&r->src->inputs, ptc_value, i);
  const gvalue* v = graph_value(r->src, sv);
  ptc_dim dims[PTC_MAX_RANK + 1];
  layout l;
  bool changed = false;
  PTC_TRY(input_dims(r, v, dims));
  PTC_TRY(input_layout(r, v, &l));
  PTC_TRY(hook_dims(r, h, i, dims, v->rank, &changed));
  if (changed && !l.loose)
    return PTC_ERR(INVALID_ARGUMENT,
                   "input %zu (%s) has non-contiguous strides: its dims cannot be made dynamic", i,
                   v->name);
  bool contiguous = l.exact || changed;
  ptc_value nv;
  PTC_TRY(ptc_graph_add_input(r->dst, v->name, v->dtype, dims, v->rank, contiguous ? NULL : l.st,
                              &nv));
  replay_set(r, sv, nv);
  return PTC_OK;
}

static ptc_status copy_constant(replay* r, const replay_hooks* h, ptc_value sv) {
  const gvalue* v = graph_value(r->src, sv);
  int64_t shape[PTC_MAX_RANK + 1];
  for (uint32_t d = 0; d < v->rank; d++)
    if (!sym_is_const(v->shape[d], &shape[d]))
      return PTC_ERR(INTERNAL, "replay: constant %s has a symbolic size", v->name);
  bool borrow = !v->owned || (h && h->borrow_constants);
  uint32_t flags = borrow ? PTC_CONSTANT_BORROW : PTC_CONSTANT_COPY;
  ptc_value nv;
  PTC_TRY(ptc_graph_add_constant(r->dst, v->name, v->dtype, shape, v->rank, v->data, flags, &nv));
  replay_set(r, sv, nv);
  return PTC_OK;
}

/* ---- nodes ----------------------------------------------------------------------- */

ptc_status replay_copy_node(replay* r, uint32_t node) {
  const gnode* n = graph_node(r->src, node);
  ptc_value* in = ptc_arena_alloc(&r->scratch, (n->n_in + 1) * sizeof *in);
  ptc_value* out = ptc_arena_alloc(&r->scratch, (n->n_out + 1) * sizeof *out);
  ptc_attr* at = ptc_arena_alloc(&r->scratch, (n->attrs.n + 1) * sizeof *at);
  if (!in || !out || !at) return ptc_status_oom();
  for (uint32_t i = 0; i < n->n_in; i++) in[i] = replay_map(r, n->in[i]);
  PTC_TRY(replay_attrs(r->dst, &n->attrs, &r->scratch, at));
  size_t n_out = 0;
  PTC_TRY(ptc_graph_add_node(r->dst, n->op->name, in, n->n_in, at, n->attrs.n, out, n->n_out,
                             &n_out));
  if (n_out != n->n_out)
    return PTC_ERR(INTERNAL, "produced %zu outputs instead of %u", n_out, n->n_out);
  for (uint32_t o = 0; o < n->n_out; o++) replay_set(r, n->out[o], out[o]);
  return PTC_OK;
}

static ptc_status replay_node(replay* r, const replay_hooks* h, uint32_t node) {
  bool handled = false;
  if (h && h->rewrite) PTC_TRY(h->rewrite(h->user, r, node, &handled));
  if (!handled) PTC_TRY(replay_copy_node(r, node));
  const gnode* n = graph_node(r->src, node);
  for (uint32_t o = 0; o < n->n_out; o++)
    if (replay_map(r, n->out[o]) == PTC_VALUE_NONE)
      return PTC_ERR(INTERNAL, "output %u was not replayed", o);
  return PTC_OK;
}

static ptc_status replay_nodes(replay* r, const replay_hooks* h) {
  for (uint32_t i = 0; i < r->src->nodes.len; i++) {
    ptc_status s = replay_node(r, h, i);
    if (s && h && h->node_error) return h->node_error(h->user, r, i, s);
    if (s) {
      const gnode* n = graph_node(r->src, i);
      return ptc_status_prefix(s, "node %s (%s)", n->name, n->op->name);
    }
    if (h && h->after_node) PTC_TRY(h->after_node(h->user, r, i));
  }
  return PTC_OK;
}

static ptc_status replay_all(replay* r, const replay_hooks* h) {
  const ptc_graph* g = r->src;
  PTC_TRY(copy_symbols(r));
  for (size_t i = 0; i < g->inputs.len; i++) PTC_TRY(copy_input(r, h, i));
  for (size_t v = 0; v < g->values.len; v++)
    if (graph_value(g, (ptc_value)v)->kind == PTC_VALUE_CONSTANT)
      PTC_TRY(copy_constant(r, h, (ptc_value)v));
  PTC_TRY(replay_nodes(r, h));
  for (size_t i = 0; i < g->outputs.len; i++) {
    ptc_value v = replay_map(r, PTC_VEC_AT(&g->outputs, ptc_value, i));
    if (v == PTC_VALUE_NONE) return PTC_ERR(INTERNAL, "replay: output %zu was not replayed", i);
    PTC_TRY(ptc_graph_add_output(r->dst, v));
  }
  return PTC_OK;
}

ptc_status replay_run(const ptc_graph* g, const replay_hooks* hooks, ptc_graph** out) {
  if (!g || !out) return PTC_ERR(INVALID_ARGUMENT, "replay: NULL argument");
  replay r;
  memset(&r, 0, sizeof r);
  r.src = g;
  ptc_arena_init(&r.scratch, 0);
  r.map = malloc((g->values.len + 1) * sizeof *r.map);
  ptc_status s = r.map ? ptc_graph_create(g->ctx, &r.dst) : ptc_status_oom();
  if (!s) {
    for (size_t v = 0; v < g->values.len; v++) r.map[v] = PTC_VALUE_NONE;
    s = replay_all(&r, hooks);
  }
  free(r.map);
  ptc_arena_free(&r.scratch);
  if (s) {
    ptc_graph_destroy(r.dst);
    return s;
  }
  *out = r.dst;
  return PTC_OK;
}
