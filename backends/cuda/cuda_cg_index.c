/* cuda_cg_index.c - symbols and index expressions in CUDA C: the role and
 * name of every env symbol (size symbol -> an IT local made from a kernel
 * argument, loop var -> x<k>/r<k>, indirect symbol -> its checked index),
 * sym_expr -> IT arithmetic with Python floor semantics, size hints and
 * linear coefficients for the layout decisions.
 *
 * FloorDiv/Mod/ModularIndexing/CeilDiv use plain `/` and `%` when the
 * dividend is provably non-negative and the divisor provably positive (loop
 * variables and sizes: the common case), else the prelude's templates.
 */
#include "cuda_cg_internal.h"

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

/* ---- sign facts ------------------------------------------------------------------ */
static bool nonneg(const cug* g, const sym_expr* e);

static bool positive(const cug* g, const sym_expr* e) {
  int64_t lo, hi;
  if (e->kind == SYM_CONST) return e->value > 0;
  if (e->kind == SYM_MUL) {
    for (uint32_t i = 0; i < e->n; i++)
      if (!positive(g, e->args[i])) return false;
    return true;
  }
  sym_bounds(g->p->env, e, &lo, &hi);
  return lo >= 1;
}

static bool all_nonneg(const cug* g, const sym_expr* e) {
  for (uint32_t i = 0; i < e->n; i++)
    if (!nonneg(g, e->args[i])) return false;
  return true;
}

static bool nonneg(const cug* g, const sym_expr* e) {
  switch (e->kind) {
    case SYM_CONST: return e->value >= 0;
    case SYM_VAR:
      if ((size_t)e->value < g->n_vars && g->vars[e->value].role >= CU_VAR_X) return true;
      break;
    case SYM_ADD:
    case SYM_MUL:
    case SYM_MIN:
    case SYM_MAX:
      if (all_nonneg(g, e)) return true;
      break;
    case SYM_FLOORDIV:
    case SYM_CEILDIV:
      if (all_nonneg(g, e) && positive(g, e->args[1])) return true;
      break;
    case SYM_MOD:
      if (positive(g, e->args[1])) return true;
      break;
    case SYM_MODIDX:
      if (positive(g, e->args[2])) return true;
      break;
    default: break;
  }
  int64_t lo, hi;
  sym_bounds(g->p->env, e, &lo, &hi);
  return lo >= 0;
}

static bool plain_div(const cug* g, const sym_expr* a, const sym_expr* b) {
  return nonneg(g, a) && positive(g, b);
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

static void print_list(cug* g, ptc_strbuf* sb, const sym_expr* e, const char* sep) {
  ptc_sb_append(sb, "(");
  for (uint32_t i = 0; i < e->n; i++) {
    if (i) ptc_sb_append(sb, sep);
    cug_index(g, sb, e->args[i]);
  }
  ptc_sb_append(sb, ")");
}

static void print_call2(cug* g, ptc_strbuf* sb, const char* fn, const sym_expr* a,
                        const sym_expr* b) {
  ptc_sb_printf(sb, "%s<IT>(", fn);
  cug_index(g, sb, a);
  ptc_sb_append(sb, ", ");
  cug_index(g, sb, b);
  ptc_sb_append(sb, ")");
}

static void print_minmax(cug* g, ptc_strbuf* sb, const sym_expr* e, uint32_t from, const char* fn) {
  if (from + 1 == e->n) {
    cug_index(g, sb, e->args[from]);
    return;
  }
  ptc_sb_printf(sb, "%s<IT>(", fn);
  cug_index(g, sb, e->args[from]);
  ptc_sb_append(sb, ", ");
  print_minmax(g, sb, e, from + 1, fn);
  ptc_sb_append(sb, ")");
}

static void print_binop(cug* g, ptc_strbuf* sb, const sym_expr* a, const char* op,
                        const sym_expr* b) {
  ptc_sb_append(sb, "(");
  cug_index(g, sb, a);
  ptc_sb_printf(sb, " %s ", op);
  cug_index(g, sb, b);
  ptc_sb_append(sb, ")");
}

static void print_modidx(cug* g, ptc_strbuf* sb, const sym_expr* e) {
  const sym_expr *a = e->args[0], *d = e->args[1], *m = e->args[2];
  bool plain = plain_div(g, a, d) && positive(g, m);
  ptc_sb_append(sb, plain ? "(" : "ptc_mod<IT>(");
  if (plain)
    print_binop(g, sb, a, "/", d);
  else
    print_call2(g, sb, "ptc_floordiv", a, d);
  ptc_sb_append(sb, plain ? " % " : ", ");
  cug_index(g, sb, m);
  ptc_sb_append(sb, ")");
}

static void print_ceildiv(cug* g, ptc_strbuf* sb, const sym_expr* e) {
  const sym_expr *a = e->args[0], *b = e->args[1];
  if (!plain_div(g, a, b)) {
    print_call2(g, sb, "ptc_ceildiv", a, b);
    return;
  }
  ptc_sb_append(sb, "((");
  cug_index(g, sb, a);
  ptc_sb_append(sb, " + ");
  cug_index(g, sb, b);
  ptc_sb_append(sb, " - 1) / ");
  cug_index(g, sb, b);
  ptc_sb_append(sb, ")");
}

void cug_index(cug* g, ptc_strbuf* sb, const sym_expr* e) {
  if (!e) {
    ptc_sb_append(sb, "0");
    cug_fail(g, PTC_ERR(INTERNAL, "cuda codegen: missing index expression"));
    return;
  }
  const sym_expr *a = e->n > 0 ? e->args[0] : NULL, *b = e->n > 1 ? e->args[1] : NULL;
  switch (e->kind) {
    case SYM_CONST:
      if (e->value >= INT32_MIN && e->value <= INT32_MAX)
        ptc_sb_printf(sb, e->value < 0 ? "(IT)(%lld)" : "(IT)%lld", (long long)e->value);
      else
        ptc_sb_printf(sb, "(IT)(%lldLL)", (long long)e->value);
      return;
    case SYM_VAR: print_var(g, sb, e); return;
    case SYM_ADD: print_list(g, sb, e, " + "); return;
    case SYM_MUL: print_list(g, sb, e, "*"); return;
    case SYM_FLOORDIV:
      if (plain_div(g, a, b))
        print_binop(g, sb, a, "/", b);
      else
        print_call2(g, sb, "ptc_floordiv", a, b);
      return;
    case SYM_MOD:
      if (plain_div(g, a, b))
        print_binop(g, sb, a, "%", b);
      else
        print_call2(g, sb, "ptc_mod", a, b);
      return;
    case SYM_MODIDX: print_modidx(g, sb, e); return;
    case SYM_CEILDIV: print_ceildiv(g, sb, e); return;
    case SYM_MIN: print_minmax(g, sb, e, 0, "ptc_imin"); return;
    case SYM_MAX: print_minmax(g, sb, e, 0, "ptc_imax"); return;
    default:
      ptc_sb_append(sb, "0");
      cug_fail(g, PTC_ERR(INTERNAL, "cuda codegen: unknown expression kind %d", e->kind));
      return;
  }
}

/* ---- hints and walks ------------------------------------------------------------------ */
int64_t cug_hint(const cug* g, const sym_expr* e) {
  int64_t v;
  if (sym_is_const(e, &v)) return v;
  if (sym_hint(g->p->env, e, &v)) return v;
  size_t n = g->p->n_size_syms;
  int64_t* vals = calloc(n ? n : 1, sizeof *vals);
  if (!vals) return CUDA_CG_UNBACKED_HINT;
  for (size_t i = 0; i < n; i++) {
    int64_t h = sym_var_hint(g->p->env, i);
    vals[i] = h == SYM_NO_HINT ? CUDA_CG_UNBACKED_HINT : h;
  }
  ptc_status s = sym_eval(e, vals, n, &v);
  free(vals);
  if (s) {
    ptc_status_destroy(s);
    return CUDA_CG_UNBACKED_HINT;
  }
  return v;
}

void cug_index_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u) {
  if (!e) return;
  if (e->kind == SYM_VAR) {
    fn(u, (size_t)e->value);
    return;
  }
  for (uint32_t i = 0; i < e->n; i++) cug_index_vars(e->args[i], fn, u);
}

static bool mentions(const sym_expr* e, const sym_expr* var) {
  if (e == var) return true;
  for (uint32_t i = 0; i < e->n; i++)
    if (mentions(e->args[i], var)) return true;
  return false;
}

/* Coefficient of var in one product term: var, or var * constant. */
static bool term_coef(const sym_expr* t, const sym_expr* var, int64_t* c) {
  if (t == var) {
    *c = 1;
    return true;
  }
  if (!mentions(t, var)) {
    *c = 0;
    return true;
  }
  if (t->kind == SYM_MUL && t->n == 2) {
    for (int i = 0; i < 2; i++)
      if (t->args[i] == var && t->args[1 - i]->kind == SYM_CONST) {
        *c = t->args[1 - i]->value;
        return true;
      }
  }
  return false;
}

bool cug_coef(const sym_expr* e, const sym_expr* var, int64_t* c) {
  if (!e || !var) return false;
  if (e->kind != SYM_ADD) return term_coef(e, var, c);
  int64_t total = 0;
  for (uint32_t i = 0; i < e->n; i++) {
    int64_t t;
    if (!term_coef(e->args[i], var, &t)) return false;
    total += t;
  }
  *c = total;
  return true;
}
