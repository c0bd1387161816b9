/* cuda_cg_index.c - symbols and index expressions in CUDA C: the role and
 * name of every env symbol (size symbol -> an IT local made from a kernel
 * argument, loop var -> x<k>/r<k>, indirect symbol -> its checked index),
 * sym_expr -> IT arithmetic with Python floor semantics, size hints and
 * linear coefficients for the layout decisions.
 *
 * FloorDiv/Mod/ModularIndexing/CeilDiv use plain `/` and `%` when the
 * dividend is provably non-negative and the divisor provably positive (loop
 * variables and sizes: the common case), else the prelude's templates.
 * The printing, sign facts and walks are lib/codegen/cindex.c (shared with
 * backends/cpu); this file supplies the CUDA spellings and symbol roles.
 */
#include "cuda_cg_internal.h"
#include "../../lib/codegen/cindex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Plain generated names ("s0", "u3") are kept; others become sym_<clean>_<i>. */
static void size_name(const char* name, size_t i, char* out, size_t cap) {
  bool plain = (name[0] == 's' || name[0] == 'u') && name[1];
  for (const char* q = name + 1; plain && *q; q++) plain = isdigit((unsigned char)*q);
  if (plain) {
    snprintf(out, cap, "%s", name);
    return;
  }
  char clean[20];
  size_t n = 0;
  for (const char* q = name; *q && n + 1 < sizeof clean; q++)
    clean[n++] = isalnum((unsigned char)*q) ? *q : '_';
  clean[n] = 0;
  snprintf(out, cap, "sym_%.19s_%zu", clean, i % 100000);
}

static void mark_loop_vars(cug* g, const sym_expr* const* vars, uint8_t role) {
  for (uint32_t k = 0; k < PTC_MAX_RANK; k++) {
    const sym_expr* v = vars[k];
    if (!v || v->kind != SYM_VAR || (size_t)v->value >= g->n_vars) continue;
    g->vars[v->value].role = role;
    g->vars[v->value].k = k;
  }
}

ptc_status cug_vars_init(cug* g) {
  g->n_vars = sym_num_vars(g->p->env);
  g->vars = calloc(g->n_vars ? g->n_vars : 1, sizeof *g->vars);
  if (!g->vars) return ptc_status_oom();
  for (size_t i = 0; i < g->p->n_size_syms && i < g->n_vars; i++) {
    g->vars[i].role = CU_VAR_SIZE;
    g->vars[i].k = (uint32_t)i;
    size_name(sym_var_name(g->p->env, i), i, g->vars[i].name, sizeof g->vars[i].name);
  }
  mark_loop_vars(g, g->p->xvars, CU_VAR_X);
  mark_loop_vars(g, g->p->rvars, CU_VAR_R);
  return PTC_OK;
}

/* ---- printing ------------------------------------------------------------------------ */
static void print_var(cug* g, ptc_strbuf* sb, const sym_expr* e) {
  size_t v = (size_t)e->value;
  cu_var* var = v < g->n_vars ? &g->vars[v] : NULL;
  uint32_t n_outer = g->k->n_ranges;
  switch (var ? var->role : CU_VAR_NONE) {
    case CU_VAR_SIZE:
      var->used = true;
      ptc_sb_append(sb, var->name);
      return;
    case CU_VAR_X:
      if (var->k < n_outer) {
        ptc_sb_printf(sb, "x%u", var->k);
        return;
      }
      if (g->rename_x && var->k - n_outer < g->k->n_rranges) {
        ptc_sb_printf(sb, "r%u", var->k - n_outer);
        return;
      }
      break;
    case CU_VAR_R:
      if (var->k < g->k->n_rranges && !g->rename_x) {
        ptc_sb_printf(sb, "r%u", var->k);
        return;
      }
      break;
    case CU_VAR_INDIRECT:
      if (var->name[0]) {
        ptc_sb_printf(sb, "((IT)%s)", var->name);
        return;
      }
      break;
    default: break;
  }
  ptc_sb_append(sb, "0");
  cug_fail(g, PTC_ERR(INTERNAL, "cuda codegen: kernel %s, node %d uses symbol %s outside its loops",
                      g->k->name, g->node_index, sym_var_name(g->p->env, v)));
}

/* ---- index expressions, hints, symbol walks: lib/codegen/cindex.c ----------------------- */
static void ix_const(void* u, ptc_strbuf* sb, int64_t v) {
  if (v >= INT32_MIN && v <= INT32_MAX)
    ptc_sb_printf(sb, v < 0 ? "(IT)(%lld)" : "(IT)%lld", (long long)v);
  else
    ptc_sb_printf(sb, "(IT)(%lldLL)", (long long)v);
}
static void ix_var(void* u, ptc_strbuf* sb, const sym_expr* e) { print_var(u, sb, e); }
static const sym_env* ix_env(const void* u) { return ((const cug*)u)->p->env; }
static bool ix_loop_var(const void* u, size_t var) {
  const cug* g = u;
  return var < g->n_vars && g->vars[var].role >= CU_VAR_X;
}
static void ix_fail(void* u, ptc_status s) { cug_fail(u, s); }
static const cindex_ops ix_ops = {
    .tmpl = "<IT>", .who = "cuda codegen", .print_const = ix_const, .print_var = ix_var,
    .env = ix_env, .loop_var = ix_loop_var, .size_var = NULL, .fail = ix_fail};

void cug_index(cug* g, ptc_strbuf* sb, const sym_expr* e) { cindex_print(&ix_ops, g, sb, e); }

int64_t cug_hint(const cug* g, const sym_expr* e) {
  return cindex_hint(g->p->env, g->p->n_size_syms, e, CUDA_CG_UNBACKED_HINT);
}

void cug_index_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u) {
  cindex_vars(e, fn, u);
}

bool cug_coef(const sym_expr* e, const sym_expr* var, int64_t* c) {
  return cindex_coef(e, var, true, c);
}
