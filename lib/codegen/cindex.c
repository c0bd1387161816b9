/* cindex.c - index expressions and symbol walks shared by the code
 * generators (see cindex.h). */
#include "cindex.h"

#include <stdlib.h>

/* ---- sign facts ------------------------------------------------------------------ */
static bool nonneg(const cindex_ops* o, const void* u, const sym_expr* e);

static bool positive(const cindex_ops* o, const void* u, const sym_expr* e) {
  int64_t lo, hi;
  if (e->kind == SYM_CONST) return e->value > 0;
  if (e->kind == SYM_VAR && o->size_var && o->size_var(u, (size_t)e->value)) {
    sym_var_range(o->env(u), (size_t)e->value, &lo, &hi);
    return lo >= 1;
  }
  if (e->kind == SYM_MUL) {
    for (uint32_t i = 0; i < e->n; i++)
      if (!positive(o, u, e->args[i])) return false;
    return true;
  }
  sym_bounds(o->env(u), e, &lo, &hi);
  return lo >= 1;
}

static bool all_nonneg(const cindex_ops* o, const void* u, const sym_expr* e) {
  for (uint32_t i = 0; i < e->n; i++)
    if (!nonneg(o, u, e->args[i])) return false;
  return true;
}

static bool nonneg(const cindex_ops* o, const void* u, const sym_expr* e) {
  switch (e->kind) {
    case SYM_CONST: return e->value >= 0;
    case SYM_VAR:
      if (o->loop_var(u, (size_t)e->value)) return true;
      break;
    case SYM_ADD:
    case SYM_MUL:
    case SYM_MIN:
    case SYM_MAX:
      if (all_nonneg(o, u, e)) return true;
      break;
    case SYM_FLOORDIV:
    case SYM_CEILDIV:
      if (all_nonneg(o, u, e) && positive(o, u, e->args[1])) return true;
      break;
    case SYM_MOD:
      if (positive(o, u, e->args[1])) return true;
      break;
    case SYM_MODIDX:
      if (positive(o, u, e->args[2])) return true;
      break;
    default: break;
  }
  int64_t lo, hi;
  sym_bounds(o->env(u), e, &lo, &hi);
  return lo >= 0;
}

/* True if a // b may use C division (a >= 0, b > 0). */
static bool plain_div(const cindex_ops* o, const void* u, const sym_expr* a, const sym_expr* b) {
  return nonneg(o, u, a) && positive(o, u, b);
}

/* ---- printing -------------------------------------------------------------------- */

static void print_list(const cindex_ops* o, void* u, ptc_strbuf* sb, const sym_expr* e,
                       const char* sep) {
  ptc_sb_append(sb, "(");
  for (uint32_t i = 0; i < e->n; i++) {
    if (i) ptc_sb_append(sb, sep);
    cindex_print(o, u, sb, e->args[i]);
  }
  ptc_sb_append(sb, ")");
}

static void print_call2(const cindex_ops* o, void* u, ptc_strbuf* sb, const char* fn,
                        const sym_expr* a, const sym_expr* b) {
  ptc_sb_printf(sb, "%s%s(", fn, o->tmpl);
  cindex_print(o, u, sb, a);
  ptc_sb_append(sb, ", ");
  cindex_print(o, u, sb, b);
  ptc_sb_append(sb, ")");
}

/* min/max of n args as nested two-argument helper calls. */
static void print_minmax(const cindex_ops* o, void* u, ptc_strbuf* sb, const sym_expr* e,
                         uint32_t from, const char* fn) {
  if (from + 1 == e->n) {
    cindex_print(o, u, sb, e->args[from]);
    return;
  }
  ptc_sb_printf(sb, "%s%s(", fn, o->tmpl);
  cindex_print(o, u, sb, e->args[from]);
  ptc_sb_append(sb, ", ");
  print_minmax(o, u, sb, e, from + 1, fn);
  ptc_sb_append(sb, ")");
}

static void print_binop(const cindex_ops* o, void* u, ptc_strbuf* sb, const sym_expr* a,
                        const char* op, const sym_expr* b) {
  ptc_sb_append(sb, "(");
  cindex_print(o, u, sb, a);
  ptc_sb_printf(sb, " %s ", op);
  cindex_print(o, u, sb, b);
  ptc_sb_append(sb, ")");
}

static void print_modidx(const cindex_ops* o, void* u, ptc_strbuf* sb, const sym_expr* e) {
  const sym_expr *a = e->args[0], *d = e->args[1], *m = e->args[2];
  bool plain = plain_div(o, u, a, d) && positive(o, u, m);
  if (plain) {
    ptc_sb_append(sb, "(");
    print_binop(o, u, sb, a, "/", d);
    ptc_sb_append(sb, " % ");
  } else {
    ptc_sb_printf(sb, "ptc_mod%s(", o->tmpl);
    print_call2(o, u, sb, "ptc_floordiv", a, d);
    ptc_sb_append(sb, ", ");
  }
  cindex_print(o, u, sb, m);
  ptc_sb_append(sb, ")");
}

static void print_ceildiv(const cindex_ops* o, void* u, ptc_strbuf* sb, const sym_expr* e) {
  const sym_expr *a = e->args[0], *b = e->args[1];
  if (!plain_div(o, u, a, b)) {
    print_call2(o, u, sb, "ptc_ceildiv", a, b);
    return;
  }
  ptc_sb_append(sb, "((");
  cindex_print(o, u, sb, a);
  ptc_sb_append(sb, " + ");
  cindex_print(o, u, sb, b);
  ptc_sb_append(sb, " - 1) / ");
  cindex_print(o, u, sb, b);
  ptc_sb_append(sb, ")");
}

void cindex_print(const cindex_ops* o, void* u, ptc_strbuf* sb, const sym_expr* e) {
  if (!e) {
    ptc_sb_append(sb, "0");
    o->fail(u, PTC_ERR(INTERNAL, "%s: missing index expression", o->who));
    return;
  }
  const sym_expr *a = e->n > 0 ? e->args[0] : NULL, *b = e->n > 1 ? e->args[1] : NULL;
  switch (e->kind) {
    case SYM_CONST: o->print_const(u, sb, e->value); return;
    case SYM_VAR: o->print_var(u, sb, e); return;
    case SYM_ADD: print_list(o, u, sb, e, " + "); return;
    case SYM_MUL: print_list(o, u, sb, e, "*"); return;
    case SYM_FLOORDIV:
      if (plain_div(o, u, a, b))
        print_binop(o, u, sb, a, "/", b);
      else
        print_call2(o, u, sb, "ptc_floordiv", a, b);
      return;
    case SYM_MOD:
      if (plain_div(o, u, a, b))
        print_binop(o, u, sb, a, "%", b);
      else
        print_call2(o, u, sb, "ptc_mod", a, b);
      return;
    case SYM_MODIDX: print_modidx(o, u, sb, e); return;
    case SYM_CEILDIV: print_ceildiv(o, u, sb, e); return;
    case SYM_MIN: print_minmax(o, u, sb, e, 0, "ptc_imin"); return;
    case SYM_MAX: print_minmax(o, u, sb, e, 0, "ptc_imax"); return;
    default:
      ptc_sb_append(sb, "0");
      o->fail(u, PTC_ERR(INTERNAL, "%s: unknown expression kind %d", o->who, e->kind));
      return;
  }
}

/* ---- hints and symbol walks -------------------------------------------------------- */
int64_t cindex_hint(const sym_env* env, size_t n_size_syms, const sym_expr* e, int64_t unbacked) {
  int64_t v;
  if (sym_is_const(e, &v)) return v;
  if (sym_hint(env, e, &v)) return v;
  size_t n = n_size_syms;
  int64_t* vals = calloc(n ? n : 1, sizeof *vals);
  if (!vals) return unbacked;
  for (size_t i = 0; i < n; i++) {
    int64_t h = sym_var_hint(env, i);
    vals[i] = h == SYM_NO_HINT ? unbacked : h;
  }
  ptc_status s = sym_eval(e, vals, n, &v);
  free(vals);
  if (s) {
    ptc_status_destroy(s);
    return unbacked;
  }
  return v;
}

void cindex_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u) {
  if (!e) return;
  if (e->kind == SYM_VAR) {
    fn(u, (size_t)e->value);
    return;
  }
  for (uint32_t i = 0; i < e->n; i++) cindex_vars(e->args[i], fn, u);
}

static bool mentions(const sym_expr* e, const sym_expr* var) {
  if (e == var) return true;
  for (uint32_t i = 0; i < e->n; i++)
    if (mentions(e->args[i], var)) return true;
  return false;
}

/* Coefficient of var in one product term: var, or var * constant. */
static bool term_coef(const sym_expr* t, const sym_expr* var, bool either_order, int64_t* c) {
  if (t == var) {
    *c = 1;
    return true;
  }
  if (!mentions(t, var)) {
    *c = 0;
    return true;
  }
  if (t->kind == SYM_MUL && t->n == 2) {
    for (int i = 0; i < (either_order ? 2 : 1); i++)
      if (t->args[i] == var && t->args[1 - i]->kind == SYM_CONST) {
        *c = t->args[1 - i]->value;
        return true;
      }
  }
  return false;
}

bool cindex_coef(const sym_expr* e, const sym_expr* var, bool either_order, int64_t* c) {
  if (!e || !var) return false;
  if (e->kind != SYM_ADD) return term_coef(e, var, either_order, c);
  int64_t total = 0;
  for (uint32_t i = 0; i < e->n; i++) {
    int64_t t;
    if (!term_coef(e->args[i], var, either_order, &t)) return false;
    total += t;
  }
  *c = total;
  return true;
}
