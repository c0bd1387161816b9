/* graph_sym.c - the public size-arithmetic API: building symbolic size
 * expressions from dims (ptc_graph_sym_op) and deciding comparisons with
 * guards (ptc_graph_sym_decide). Hosts that trace programs (the FX bridge,
 * bytecode capture) use these to compute `x.size(0) * 4` or to branch on
 * `x.size(1) > 8` exactly as the graph's meta functions do. */
#include "graph.h"

#include <string.h>

/* The expression of a dim: its symbol's expression, or a constant. */
static ptc_status dim_expr(ptc_graph* g, ptc_dim d, const char* which, const sym_expr** out) {
  if (d.sym == 0) {
    *out = sym_const(g->env, d.value);
  } else {
    *out = graph_sym_expr(g, d.sym);
    if (!*out)
      return PTC_ERR(INVALID_ARGUMENT, "%s: unknown symbol id %u in this graph", which,
                     (unsigned)d.sym);
  }
  return *out ? PTC_OK : ptc_status_oom();
}

/* A dim for an expression: static when it folds to a constant. */
static ptc_status expr_dim(ptc_graph* g, const sym_expr* e, ptc_dim* out) {
  memset(out, 0, sizeof *out);
  int64_t c;
  if (sym_is_const(e, &c)) {
    out->value = c;
    return PTC_OK;
  }
  bool oom = false;
  out->sym = graph_sym_id(g, e, &oom);
  if (oom) return ptc_status_oom();
  if (!sym_hint(g->env, e, &out->value)) out->value = -1;
  return PTC_OK;
}

ptc_status ptc_graph_sym_op(ptc_graph* g, int32_t op, ptc_dim a, ptc_dim b, ptc_dim* out) {
  if (!g || !out) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_sym_op: NULL argument");
  const sym_expr *x, *y, *r = NULL;
  PTC_TRY(dim_expr(g, a, "ptc_graph_sym_op", &x));
  PTC_TRY(dim_expr(g, b, "ptc_graph_sym_op", &y));
  bool divides = op == PTC_SYM_FLOORDIV || op == PTC_SYM_MOD || op == PTC_SYM_CEILDIV;
  int64_t c;
  if (divides && sym_is_const(y, &c) && c == 0)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_sym_op: division by zero");
  if (divides && sym_static(g->env, SYM_GT, y, sym_const(g->env, 0)) != 1)
    return PTC_ERR(INVALID_ARGUMENT,
                   "ptc_graph_sym_op: the divisor must be known to be positive");
  switch (op) {
    case PTC_SYM_ADD: r = sym_add(g->env, x, y); break;
    case PTC_SYM_SUB: r = sym_sub(g->env, x, y); break;
    case PTC_SYM_MUL: r = sym_mul(g->env, x, y); break;
    case PTC_SYM_FLOORDIV: r = sym_floordiv(g->env, x, y); break;
    case PTC_SYM_MOD: r = sym_mod(g->env, x, y); break;
    case PTC_SYM_CEILDIV: r = sym_ceildiv(g->env, x, y); break;
    case PTC_SYM_MIN: r = sym_min(g->env, x, y); break;
    case PTC_SYM_MAX: r = sym_max(g->env, x, y); break;
    default:
      return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_sym_op: unknown operation %d", (int)op);
  }
  if (!r) return PTC_ERR(RESOURCE_EXHAUSTED, "ptc_graph_sym_op: out of memory or overflow");
  return expr_dim(g, r, out);
}

ptc_status ptc_graph_sym_decide(ptc_graph* g, int32_t rel, ptc_dim a, ptc_dim b, int* result) {
  if (!g || !result) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_sym_decide: NULL argument");
  if (rel < PTC_SYM_EQ || rel > PTC_SYM_GE)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_sym_decide: unknown relation %d", (int)rel);
  const sym_expr *x, *y;
  PTC_TRY(dim_expr(g, a, "ptc_graph_sym_decide", &x));
  PTC_TRY(dim_expr(g, b, "ptc_graph_sym_decide", &y));
  /* PTC_SYM_EQ..GE are numbered like sym_rel */
  bool r = false;
  PTC_TRY(sym_guard(g->env, (sym_rel)rel, x, y, &r));
  *result = r ? 1 : 0;
  return PTC_OK;
}

int ptc_graph_sym_static(const ptc_graph* g, int32_t rel, ptc_dim a, ptc_dim b) {
  if (!g || rel < PTC_SYM_EQ || rel > PTC_SYM_GE) return -1;
  /* constants are interned in the env; graph_sym_expr only reads */
  ptc_graph* mg = (ptc_graph*)g;
  const sym_expr *x, *y;
  ptc_status s = dim_expr(mg, a, "ptc_graph_sym_static", &x);
  if (!s) s = dim_expr(mg, b, "ptc_graph_sym_static", &y);
  if (s) {
    ptc_status_destroy(s);
    return -1;
  }
  return sym_static(g->env, (sym_rel)rel, x, y);
}
