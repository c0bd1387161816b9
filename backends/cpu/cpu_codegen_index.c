/* cpu_codegen_index.c - symbols and index expressions in C: the role and C
 * name of every env symbol (size symbol -> a const int64_t read from
 * syms[], loop var -> x<k>/r<k>, indirect symbol -> the checked index
 * variable), sym_expr -> C int64 arithmetic with Python floor semantics,
 * and size hints for the parallelisation decision.
 *
 * FloorDiv/Mod/ModularIndexing/CeilDiv use plain C `/` and `%` when the
 * dividend is provably non-negative and the divisor provably positive (the
 * common case: loop variables and sizes), else the prelude's floor helpers.
 * The printing, sign facts and walks are lib/codegen/cindex.c (shared with
 * backends/cuda); this file supplies the C spellings and symbol roles.
 */
#include "cpu_codegen_internal.h"
#include "../../lib/codegen/cindex.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Generated symbol names ("s0", "u3") cannot clash with the generator's own
 * names; any other name is prefixed and sanitised. */
static void size_name(const char* name, size_t i, char* out, size_t cap) {
  bool plain = (name[0] == 's' || name[0] == 'u') && name[1];
  for (const char* q = name + 1; plain && *q; q++) plain = isdigit((unsigned char)*q);
  if (plain) {
    snprintf(out, cap, "%s", name);
    return;
  }
  char clean[32];
  size_t n = 0;
  bool changed = false;
  for (const char* q = name; *q && n + 1 < sizeof clean; q++) {
    bool ok = isalnum((unsigned char)*q) || *q == '_';
    clean[n++] = ok ? *q : '_';
    changed |= !ok;
  }
  clean[n] = 0;
  if (changed || strlen(name) >= sizeof clean)
    snprintf(out, cap, "sym_%s_%zu", clean, i);
  else
    snprintf(out, cap, "sym_%s", clean);
}

/* IR buffer names the generator may use as C names: in<k>[_<j>], c<k>,
 * buf<k> (none of them can be a name the generator makes itself). */
static bool plain_buf_name(const char* n) {
  bool in = strncmp(n, "in", 2) == 0;
  const char* q = strncmp(n, "buf", 3) == 0 ? n + 3 : in ? n + 2 : n[0] == 'c' ? n + 1 : NULL;
  if (!q || !isdigit((unsigned char)*q)) return false;
  for (; *q; q++)
    if (!isdigit((unsigned char)*q) && !(in && *q == '_')) return false;
  return true;
}

void cg_buf_name(const cg* g, int32_t id, char* out, size_t cap) {
  const char* n = ir_buf(g->p, id)->name;
  if (plain_buf_name(n))
    snprintf(out, cap, "%s", n);
  else
    snprintf(out, cap, "b%d", (int)id);
}

static void mark_loop_vars(cg* g, const sym_expr* const* vars, uint8_t role) {
  for (uint32_t k = 0; k < PTC_MAX_RANK; k++) {
    const sym_expr* v = vars[k];
    if (!v || v->kind != SYM_VAR || (size_t)v->value >= g->n_vars) continue;
    g->vars[v->value].role = role;
    g->vars[v->value].k = k;
  }
}

ptc_status cg_vars_init(cg* g) {
  g->n_vars = sym_num_vars(g->p->env);
  g->vars = calloc(g->n_vars ? g->n_vars : 1, sizeof *g->vars);
  if (!g->vars) return ptc_status_oom();
  for (size_t i = 0; i < g->p->n_size_syms && i < g->n_vars; i++) {
    g->vars[i].role = CG_VAR_SIZE;
    g->vars[i].k = (uint32_t)i;
    size_name(sym_var_name(g->p->env, i), i, g->vars[i].name, sizeof g->vars[i].name);
  }
  mark_loop_vars(g, g->p->xvars, CG_VAR_X);
  mark_loop_vars(g, g->p->rvars, CG_VAR_R);
  return PTC_OK;
}

/* ---- printing ----------------------------------------------------------------------------- */
static void print_var(cg* g, ptc_strbuf* sb, const sym_expr* e) {
  size_t v = (size_t)e->value;
  cg_var* var = v < g->n_vars ? &g->vars[v] : NULL;
  uint32_t n_outer = g->k->n_ranges;
  switch (var ? var->role : CG_VAR_NONE) {
    case CG_VAR_SIZE:
      var->used = true;
      ptc_sb_append(sb, var->name);
      return;
    case CG_VAR_X:
      if (var->k < n_outer) {
        ptc_sb_printf(sb, "x%u", var->k);
        return;
      }
      if (g->rename_x && var->k - n_outer < g->k->n_rranges) {
        ptc_sb_printf(sb, "r%u", var->k - n_outer);
        return;
      }
      break;
    case CG_VAR_R:
      if (var->k < g->k->n_rranges && !g->rename_x) {
        ptc_sb_printf(sb, "r%u", var->k);
        return;
      }
      break;
    case CG_VAR_INDIRECT:
      ptc_sb_append(sb, var->name);
      return;
    default: break;
  }
  ptc_sb_append(sb, "0");
  cg_fail(g, PTC_ERR(INTERNAL, "cpu codegen: kernel %s, node %d uses symbol %s outside its loops",
                     g->k->name, g->node_index, sym_var_name(g->p->env, v)));
}

/* ---- index expressions, hints, symbol walks: lib/codegen/cindex.c ----------------------- */
static void ix_const(void* u, ptc_strbuf* sb, int64_t v) { cg_int_lit(sb, v); }
static void ix_var(void* u, ptc_strbuf* sb, const sym_expr* e) { print_var(u, sb, e); }
static const sym_env* ix_env(const void* u) { return ((const cg*)u)->p->env; }
static uint8_t ix_role(const void* u, size_t var) {
  const cg* g = u;
  return var < g->n_vars ? g->vars[var].role : CG_VAR_NONE;
}
static bool ix_loop_var(const void* u, size_t var) {
  uint8_t role = ix_role(u, var);
  return role == CG_VAR_X || role == CG_VAR_R || role == CG_VAR_INDIRECT;
}
static bool ix_size_var(const void* u, size_t var) { return ix_role(u, var) == CG_VAR_SIZE; }
static void ix_fail(void* u, ptc_status s) { cg_fail(u, s); }
static const cindex_ops ix_ops = {
    .tmpl = "", .who = "cpu codegen", .print_const = ix_const, .print_var = ix_var,
    .env = ix_env, .loop_var = ix_loop_var, .size_var = ix_size_var, .fail = ix_fail};

void cg_index(cg* g, ptc_strbuf* sb, const sym_expr* e) { cindex_print(&ix_ops, g, sb, e); }

int64_t cg_hint(const cg* g, const sym_expr* e) {
  return cindex_hint(g->p->env, g->p->n_size_syms, e, CPU_CG_UNBACKED_HINT);
}

void cg_index_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u) {
  cindex_vars(e, fn, u);
}

bool cg_coef(const sym_expr* e, const sym_expr* var, int64_t* c) {
  return cindex_coef(e, var, false, c);
}
