/* loops.c - loop structure and index questions of the scheduler: symbol
 * classes (x, r, indirect), the x_{n+k} -> r_k renaming of inner pointwise
 * nodes, merging two loop structures, and buffer byte sizes. */
#include <stdlib.h>

#include "sched_internal.h"

/* Unbacked sizes count as this many elements in heuristics. */
#define SCHED_UNBACKED_NUMEL 8192

static void mark_var(sched_ctx* c, const sym_expr* v, uint8_t cls) {
  if (v && v->kind == SYM_VAR && v->value >= 0 && (size_t)v->value < c->n_vars)
    c->var_class[v->value] = cls;
}

ptc_status sched_classify_vars(sched_ctx* c) {
  c->n_vars = sym_num_vars(c->env);
  c->var_class = calloc(c->n_vars + 1, 1);
  if (!c->var_class) return ptc_status_oom();
  for (int k = 0; k < PTC_MAX_RANK; k++) {
    mark_var(c, c->p->xvars[k], SVAR_X);
    mark_var(c, c->p->rvars[k], SVAR_R);
  }
  for (size_t i = 0; i < c->n_nodes; i++) {
    const ir_body* b = &ir_node_at(c->p, i)->body;
    for (uint32_t k = 0; k < b->n; k++)
      if (b->ops[k].opcode == IR_INDIRECT) mark_var(c, b->ops[k].sym, SVAR_INDIRECT);
  }
  return NULL;
}

bool sched_expr_uses(const sched_ctx* c, const sym_expr* e, int cls) {
  if (!e) return false;
  if (e->kind == SYM_VAR)
    return e->value >= 0 && (size_t)e->value < c->n_vars && c->var_class[e->value] == cls;
  for (uint32_t i = 0; i < e->n; i++)
    if (sched_expr_uses(c, e->args[i], cls)) return true;
  return false;
}

static const sym_expr** rename_table(sched_ctx* c, uint32_t n_outer) {
  if (n_outer > PTC_MAX_RANK) return NULL;
  if (c->rename[n_outer]) return c->rename[n_outer];
  const sym_expr** t = calloc(c->n_vars + 1, sizeof *t);
  if (!t) return NULL;
  for (uint32_t k = 0; n_outer + k < PTC_MAX_RANK; k++) {
    const sym_expr* x = c->p->xvars[n_outer + k];
    const sym_expr* r = c->p->rvars[k];
    if (x && r && x->kind == SYM_VAR && (size_t)x->value < c->n_vars) t[x->value] = r;
  }
  c->rename[n_outer] = t;
  return t;
}

const sym_expr* sched_kidx(sched_ctx* c, bool inner, uint32_t n_outer, const sym_expr* e) {
  if (!inner || !e) return e;
  const sym_expr** t = rename_table(c, n_outer);
  const sym_expr* r = t ? sym_subst(c->env, e, t) : NULL;
  if (!r) c->oom = true;
  return r;
}

static bool same_list(uint32_t n1, const sym_expr* const* a, uint32_t n2,
                      const sym_expr* const* b) {
  if (n1 != n2) return false;
  for (uint32_t i = 0; i < n1; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* pw ranges == red ranges ++ red rranges */
static bool is_concat(const sgroup* pw, const sgroup* red) {
  if (pw->n_ranges != red->n_ranges + red->n_rranges || red->n_rranges == 0) return false;
  return same_list(red->n_ranges, pw->ranges, red->n_ranges, red->ranges) &&
         same_list(red->n_rranges, pw->ranges + red->n_ranges, red->n_rranges, red->rranges);
}

static void shape_of(const sgroup* g, sshape* s) {
  s->n = g->n_ranges;
  s->m = g->n_rranges;
  s->ranges = g->ranges;
  s->rranges = g->rranges;
  s->red = g->is_red;
}

bool sched_merge_shape(const sgroup* a, const sgroup* b, sshape* out) {
  *out = (sshape){0};
  if (a->is_red == b->is_red) {
    if (!same_list(a->n_ranges, a->ranges, b->n_ranges, b->ranges)) return false;
    if (!same_list(a->n_rranges, a->rranges, b->n_rranges, b->rranges)) return false;
    shape_of(a, out);
    return true;
  }
  const sgroup* red = a->is_red ? a : b;
  const sgroup* pw = a->is_red ? b : a;
  shape_of(red, out);
  if (same_list(pw->n_ranges, pw->ranges, red->n_ranges, red->ranges)) return true; /* outer */
  if (!is_concat(pw, red)) return false;
  if (pw == a)
    out->inner_a = 1;
  else
    out->inner_b = 1;
  return true;
}

bool sched_shape_trivial_outer(const sshape* s) {
  for (uint32_t i = 0; i < s->n; i++) {
    int64_t v;
    if (!sym_is_const(s->ranges[i], &v) || v != 1) return false;
  }
  return true;
}

static void format_list(const sched_ctx* c, uint32_t n, const sym_expr* const* e, ptc_strbuf* sb) {
  ptc_sb_append(sb, "[");
  for (uint32_t i = 0; i < n; i++) {
    if (i) ptc_sb_append(sb, ", ");
    sym_format_sb(c->env, e[i], sb);
  }
  ptc_sb_append(sb, "]");
}

void sched_format_loops(const sched_ctx* c, const sgroup* g, ptc_strbuf* sb) {
  format_list(c, g->n_ranges, g->ranges, sb);
  if (!g->is_red) return;
  ptc_sb_append(sb, " x r");
  format_list(c, g->n_rranges, g->rranges, sb);
}

static const sym_expr* buf_numel(const sched_ctx* c, int32_t b) {
  const ir_buffer* buf = ir_buf(c->p, b);
  if (buf->numel) return buf->numel;
  const sym_expr* n = sym_const(c->env, 1);
  for (uint32_t i = 0; i < buf->rank && n; i++) n = sym_mul(c->env, n, buf->shape[i]);
  return n;
}

int64_t sched_buf_bytes_hint(const sched_ctx* c, int32_t b) {
  const sym_expr* n = buf_numel(c, b);
  int64_t v = SCHED_UNBACKED_NUMEL, bytes;
  if (!n || !sym_hint(c->env, n, &v) || v < 0) v = SCHED_UNBACKED_NUMEL;
  if (!ptc_mul_ok(v, (int64_t)ptc_dtype_size(ir_buf(c->p, b)->dtype), &bytes)) return INT64_MAX;
  return bytes;
}

const sym_expr* sched_buf_bytes(const sched_ctx* c, int32_t b) {
  const sym_expr* n = buf_numel(c, b);
  return n ? sym_mul_c(c->env, n, (int64_t)ptc_dtype_size(ir_buf(c->p, b)->dtype)) : NULL;
}
