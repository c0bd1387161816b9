/* cpu_codegen_index.c - symbols and index expressions in C: the role and C
 * name of every env symbol (size symbol -> a const int64_t read from
 * syms[], loop var -> x<k>/r<k>, indirect symbol -> the checked index
 * variable), sym_expr -> C int64 arithmetic with Python floor semantics,
 * and size hints for the parallelisation decision.
 *
 * FloorDiv/Mod/ModularIndexing/CeilDiv use plain C `/` and `%` when the
 * dividend is provably non-negative and the divisor provably positive (the
 * common case: loop variables and sizes), else the prelude's floor helpers.
 */
#include "cpu_codegen_internal.h"

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

/* ---- sign facts ------------------------------------------------------------------------ */
static bool nonneg(const cg* g, const sym_expr* e);

static bool positive(const cg* g, const sym_expr* e) {
  int64_t lo, hi;
  if (e->kind == SYM_CONST) return e->value > 0;
  if (e->kind == SYM_VAR && (size_t)e->value < g->n_vars &&
      g->vars[e->value].role == CG_VAR_SIZE) {
    sym_var_range(g->p->env, (size_t)e->value, &lo, &hi);
    return lo >= 1;
  }
  if (e->kind == SYM_MUL) {
    for (uint32_t i = 0; i < e->n; i++)
      if (!positive(g, e->args[i])) return false;
    return true;
  }
  sym_bounds(g->p->env, e, &lo, &hi);
  return lo >= 1;
}

static bool all_nonneg(const cg* g, const sym_expr* e) {
  for (uint32_t i = 0; i < e->n; i++)
    if (!nonneg(g, e->args[i])) return false;
  return true;
}

static bool nonneg(const cg* g, const sym_expr* e) {
  switch (e->kind) {
    case SYM_CONST: return e->value >= 0;
    case SYM_VAR: {
      if ((size_t)e->value >= g->n_vars) return false;
      uint8_t role = g->vars[e->value].role;
      if (role == CG_VAR_X || role == CG_VAR_R || role == CG_VAR_INDIRECT) return true;
      break;
    }
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

static void print_list(cg* g, ptc_strbuf* sb, const sym_expr* e, const char* sep) {
  ptc_sb_append(sb, "(");
  for (uint32_t i = 0; i < e->n; i++) {
    if (i) ptc_sb_append(sb, sep);
    cg_index(g, sb, e->args[i]);
  }
  ptc_sb_append(sb, ")");
}

/* min/max of n args as nested two-argument helper calls. */
static void print_minmax(cg* g, ptc_strbuf* sb, const sym_expr* e, uint32_t from,
                         const char* fn) {
  if (from + 1 == e->n) {
    cg_index(g, sb, e->args[from]);
    return;
  }
  ptc_sb_printf(sb, "%s(", fn);
  cg_index(g, sb, e->args[from]);
  ptc_sb_append(sb, ", ");
  print_minmax(g, sb, e, from + 1, fn);
  ptc_sb_append(sb, ")");
}

static void print_call2(cg* g, ptc_strbuf* sb, const char* fn, const sym_expr* a,
                        const sym_expr* b) {
  ptc_sb_printf(sb, "%s(", fn);
  cg_index(g, sb, a);
  ptc_sb_append(sb, ", ");
  cg_index(g, sb, b);
  ptc_sb_append(sb, ")");
}

static void print_binop(cg* g, ptc_strbuf* sb, const sym_expr* a, const char* op,
                        const sym_expr* b) {
  ptc_sb_append(sb, "(");
  cg_index(g, sb, a);
  ptc_sb_printf(sb, " %s ", op);
  cg_index(g, sb, b);
  ptc_sb_append(sb, ")");
}

/* True if a // b may use C division (a >= 0, b > 0). */
static bool plain_div(const cg* g, const sym_expr* a, const sym_expr* b) {
  return nonneg(g, a) && positive(g, b);
}

static void print_modidx(cg* g, ptc_strbuf* sb, const sym_expr* e) {
  const sym_expr *a = e->args[0], *d = e->args[1], *m = e->args[2];
  bool plain = plain_div(g, a, d) && positive(g, m);
  ptc_sb_append(sb, plain ? "(" : "ptc_mod(");
  if (plain)
    print_binop(g, sb, a, "/", d);
  else
    print_call2(g, sb, "ptc_floordiv", a, d);
  ptc_sb_append(sb, plain ? " % " : ", ");
  cg_index(g, sb, m);
  ptc_sb_append(sb, ")");
}

static void print_ceildiv(cg* g, ptc_strbuf* sb, const sym_expr* e) {
  const sym_expr *a = e->args[0], *b = e->args[1];
  if (!plain_div(g, a, b)) {
    print_call2(g, sb, "ptc_ceildiv", a, b);
    return;
  }
  ptc_sb_append(sb, "((");
  cg_index(g, sb, a);
  ptc_sb_append(sb, " + ");
  cg_index(g, sb, b);
  ptc_sb_append(sb, " - 1) / ");
  cg_index(g, sb, b);
  ptc_sb_append(sb, ")");
}

void cg_index(cg* g, ptc_strbuf* sb, const sym_expr* e) {
  if (!e) {
    ptc_sb_append(sb, "0");
    cg_fail(g, PTC_ERR(INTERNAL, "cpu codegen: missing index expression"));
    return;
  }
  const sym_expr *a = e->n > 0 ? e->args[0] : NULL, *b = e->n > 1 ? e->args[1] : NULL;
  switch (e->kind) {
    case SYM_CONST: cg_int_lit(sb, e->value); return;
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
      cg_fail(g, PTC_ERR(INTERNAL, "cpu codegen: unknown expression kind %d", e->kind));
      return;
  }
}

/* ---- hints and symbol walks --------------------------------------------------------------- */
int64_t cg_hint(const cg* g, const sym_expr* e) {
  int64_t v;
  if (sym_is_const(e, &v)) return v;
  if (sym_hint(g->p->env, e, &v)) return v;
  /* unbacked: evaluate with CPU_CG_UNBACKED_HINT for symbols without a hint */
  size_t n = g->p->n_size_syms;
  int64_t* vals = calloc(n ? n : 1, sizeof *vals);
  if (!vals) return CPU_CG_UNBACKED_HINT;
  for (size_t i = 0; i < n; i++) {
    int64_t h = sym_var_hint(g->p->env, i);
    vals[i] = h == SYM_NO_HINT ? CPU_CG_UNBACKED_HINT : h;
  }
  ptc_status s = sym_eval(e, vals, n, &v);
  free(vals);
  if (s) {
    ptc_status_destroy(s);
    return CPU_CG_UNBACKED_HINT;
  }
  return v;
}

void cg_index_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u) {
  if (!e) return;
  if (e->kind == SYM_VAR) {
    fn(u, (size_t)e->value);
    return;
  }
  for (uint32_t i = 0; i < e->n; i++) cg_index_vars(e->args[i], fn, u);
}

static bool mentions(const sym_expr* e, const sym_expr* var) {
  if (e == var) return true;
  for (uint32_t i = 0; i < e->n; i++)
    if (mentions(e->args[i], var)) return true;
  return false;
}

/* Coefficient of var in one product term (var or var*const). */
static bool term_coef(const sym_expr* t, const sym_expr* var, int64_t* c) {
  if (t == var) {
    *c = 1;
    return true;
  }
  if (!mentions(t, var)) {
    *c = 0;
    return true;
  }
  if (t->kind == SYM_MUL && t->n == 2 && t->args[0] == var && t->args[1]->kind == SYM_CONST) {
    *c = t->args[1]->value;
    return true;
  }
  return false;
}

bool cg_coef(const sym_expr* e, const sym_expr* var, int64_t* c) {
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
