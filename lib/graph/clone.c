/* clone.c - deep copy of a graph (used for executable snapshots): symbols,
 * guards and public symbol ids are preserved; owned constants are copied,
 * borrowed ones stay borrowed. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

static const sym_expr** import_list(ptc_graph* d, const sym_expr* const* src, size_t n) {
  const sym_expr** o = ptc_arena_alloc(&d->arena, (n + 1) * sizeof *o);
  if (!o) return NULL;
  for (size_t i = 0; i < n; i++)
    if (!(o[i] = sym_import(d->env, src[i]))) return NULL;
  return o;
}

static ptc_status clone_attrs(ptc_graph* d, const gattrs* src, gattrs* out) {
  gattr* a = ptc_arena_alloc(&d->arena, (src->n + 1) * sizeof *a);
  if (!a) return ptc_status_oom();
  for (size_t i = 0; i < src->n; i++) {
    const gattr* s = &src->a[i];
    a[i] = *s;
    a[i].name = ptc_arena_strdup(&d->arena, s->name);
    if (!a[i].name) return ptc_status_oom();
    if (s->s && !(a[i].s = ptc_arena_strdup(&d->arena, s->s))) return ptc_status_oom();
    if (s->sym && !(a[i].sym = sym_import(d->env, s->sym))) return ptc_status_oom();
    if (s->exprs && !(a[i].exprs = import_list(d, s->exprs, s->count))) return ptc_status_oom();
    if (s->floats &&
        !(a[i].floats = ptc_arena_memdup(&d->arena, s->floats, s->count * sizeof(double))))
      return ptc_status_oom();
  }
  out->n = src->n;
  out->a = a;
  return PTC_OK;
}

static ptc_status clone_into(const ptc_graph* g, ptc_graph* d) {
  sym_env_destroy(d->env);
  d->env = sym_env_clone(g->env);
  if (!d->env) return ptc_status_oom();
  for (size_t i = 0; i < g->syms.len; i++) {
    const sym_expr* e = sym_import(d->env, PTC_VEC_AT(&g->syms, const sym_expr*, i));
    if (!e || !ptc_vec_push(&d->syms, &e)) return ptc_status_oom();
  }
  for (size_t i = 0; i < g->values.len; i++) {
    const gvalue* s = graph_value(g, (ptc_value)i);
    const sym_expr** sh = import_list(d, s->shape, s->rank);
    const sym_expr** st = import_list(d, s->strides, s->rank);
    if (!sh || !st) return ptc_status_oom();
    ptc_value v;
    PTC_TRY(graph_push_value(d, s->kind, s->dtype, s->rank, sh, st, s->name, &v));
    gvalue* dv = graph_value(d, v);
    dv->node = s->node;
    dv->out_index = s->out_index;
    dv->nbytes = s->nbytes;
    dv->data = s->data;
    if (s->owned) {
      dv->owned = malloc(s->nbytes ? s->nbytes : 1);
      if (!dv->owned) return ptc_status_oom();
      memcpy(dv->owned, s->owned, s->nbytes);
      dv->data = dv->owned;
    }
  }
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* s = graph_node(g, i);
    gnode n = *s;
    n.in = ptc_arena_memdup(&d->arena, s->in, s->n_in * sizeof *s->in);
    n.out = ptc_arena_memdup(&d->arena, s->out, s->n_out * sizeof *s->out);
    n.name = ptc_arena_strdup(&d->arena, s->name);
    if (!n.in || !n.out || !n.name) return ptc_status_oom();
    PTC_TRY(clone_attrs(d, &s->attrs, &n.attrs));
    if (!ptc_vec_push(&d->nodes, &n)) return ptc_status_oom();
  }
  for (size_t i = 0; i < g->inputs.len; i++)
    if (!ptc_vec_push(&d->inputs, &PTC_VEC_AT(&g->inputs, ptc_value, i))) return ptc_status_oom();
  for (size_t i = 0; i < g->outputs.len; i++)
    if (!ptc_vec_push(&d->outputs, &PTC_VEC_AT(&g->outputs, ptc_value, i))) return ptc_status_oom();
  return PTC_OK;
}

ptc_status graph_clone(const ptc_graph* g, ptc_graph** out) {
  ptc_graph* d = NULL;
  PTC_TRY(ptc_graph_create(g->ctx, &d));
  ptc_status s = clone_into(g, d);
  if (s) {
    ptc_graph_destroy(d);
    return s;
  }
  *out = d;
  return PTC_OK;
}
