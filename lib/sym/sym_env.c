/* sym_env.c - the shape environment: create/destroy/clone/import, symbols
 * (names, hints, ranges), bounds by interval arithmetic over the symbols'
 * ranges (saturating: INT64_MIN/INT64_MAX stand for "unbounded"), static
 * decisions (sym_static), guarded decisions from hints (sym_guard), and the
 * guard list with its runtime check (sym_check_guards). */
#include "sym_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- env lifetime ---------------------------------------------------------------- */

sym_env* sym_env_create(void) {
  sym_env* env = calloc(1, sizeof *env);
  if (!env) return NULL;
  ptc_arena_init(&env->arena, 0);
  return env;
}

void sym_env_destroy(sym_env* env) {
  if (!env) return;
  sym_store_free(env);
  ptc_arena_free(&env->arena);
  free(env->vars);
  free(env->guards);
  free(env);
}

static bool vars_reserve(sym_env* env, size_t n) {
  if (n <= env->vcap) return true;
  size_t ncap = env->vcap ? env->vcap : 8;
  while (ncap < n) ncap *= 2;
  sym_var_info* v = realloc(env->vars, ncap * sizeof *v);
  if (!v) return false;
  env->vars = v;
  env->vcap = ncap;
  return true;
}

static bool guards_reserve(sym_env* env, size_t n) {
  if (n <= env->gcap) return true;
  size_t ncap = env->gcap ? env->gcap : 8;
  while (ncap < n) ncap *= 2;
  sym_guard_rec* g = realloc(env->guards, ncap * sizeof *g);
  if (!g) return false;
  env->guards = g;
  env->gcap = ncap;
  return true;
}

sym_env* sym_env_clone(const sym_env* src) {
  if (!src) return NULL;
  sym_env* dst = sym_env_create();
  if (!dst) return NULL;
  if (!vars_reserve(dst, src->nvars) || !guards_reserve(dst, src->nguards)) goto fail;
  for (size_t i = 0; i < src->nvars; i++) {
    dst->vars[i] = src->vars[i];
    dst->vars[i].name = ptc_arena_strdup(&dst->arena, src->vars[i].name);
    dst->vars[i].expr = NULL;
    if (!dst->vars[i].name) goto fail;
  }
  dst->nvars = src->nvars;
  /* Children always have smaller ids than their parents, so re-interning in
   * id order reproduces every node with the same id. */
  for (size_t i = 0; i < src->count; i++) {
    const sym_expr* e = src->nodes[i].e;
    const sym_expr* small[8];
    const sym_expr** args = e->n <= 8 ? small : malloc((size_t)e->n * sizeof *args);
    if (!args) goto fail;
    for (uint32_t k = 0; k < e->n; k++) args[k] = dst->nodes[e->args[k]->id].e;
    const sym_expr* c = sym_intern(dst, (sym_kind)e->kind, e->value, args, e->n);
    if (args != small) free(args);
    if (!c || c->id != e->id) goto fail;
  }
  for (size_t i = 0; i < src->nvars; i++) dst->vars[i].expr = dst->nodes[src->vars[i].expr->id].e;
  for (size_t i = 0; i < src->nguards; i++) {
    dst->guards[i].rel = src->guards[i].rel;
    dst->guards[i].lhs = dst->nodes[src->guards[i].lhs->id].e;
    dst->guards[i].rhs = dst->nodes[src->guards[i].rhs->id].e;
  }
  dst->nguards = src->nguards;
  return dst;
fail:
  sym_env_destroy(dst);
  return NULL;
}

const sym_expr* sym_import(sym_env* dst, const sym_expr* e) {
  if (!dst || !e) return NULL;
  if (sym_node_of(dst, e)) return e;
  sym_map memo = {0};
  const sym_expr* r = sym_rebuild(dst, e, NULL, 0, &memo);
  sym_map_free(&memo);
  return r;
}

/* ---- symbols ------------------------------------------------------------------------ */

static bool valid_name(const char* s) {
  if (!s || !*s) return false;
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (const char* p = s + 1; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  }
  static const char* const reserved[] = {"min", "max", "ceildiv", "modidx"};
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (strcmp(s, reserved[i]) == 0) return false;
  return true;
}

ptc_status sym_new_var(sym_env* env, const char* name, int64_t hint, int64_t lo, int64_t hi,
                       const sym_expr** out) {
  if (!env || !name || !out) return PTC_ERR(INVALID_ARGUMENT, "sym_new_var: NULL argument");
  if (!valid_name(name))
    return PTC_ERR(INVALID_ARGUMENT, "symbol name '%s' is not a valid identifier", name);
  if (sym_find_var(env, name) >= 0)
    return PTC_ERR(INVALID_ARGUMENT, "symbol '%s' already exists", name);
  if (lo > hi)
    return PTC_ERR(INVALID_ARGUMENT, "symbol '%s': empty range [%lld, %lld]", name, (long long)lo,
                   (long long)hi);
  if (hint != SYM_NO_HINT && (hint < lo || hint > hi))
    return PTC_ERR(INVALID_ARGUMENT, "symbol '%s': hint %lld is outside its range [%lld, %lld]",
                   name, (long long)hint, (long long)lo, (long long)hi);
  if (env->nvars >= UINT32_MAX || !vars_reserve(env, env->nvars + 1)) return ptc_status_oom();
  const char* copy = ptc_arena_strdup(&env->arena, name);
  if (!copy) return ptc_status_oom();
  size_t idx = env->nvars;
  env->vars[idx].name = copy;
  env->vars[idx].hint = hint;
  env->vars[idx].lo = lo;
  env->vars[idx].hi = hi;
  env->vars[idx].expr = NULL;
  env->nvars++;
  const sym_expr* e = sym_intern(env, SYM_VAR, (int64_t)idx, NULL, 0);
  if (!e) {
    env->nvars--;
    return ptc_status_oom();
  }
  env->vars[idx].expr = e;
  *out = e;
  return PTC_OK;
}

size_t sym_num_vars(const sym_env* env) { return env ? env->nvars : 0; }

const char* sym_var_name(const sym_env* env, size_t i) {
  return env && i < env->nvars ? env->vars[i].name : NULL;
}

int64_t sym_var_hint(const sym_env* env, size_t i) {
  return env && i < env->nvars ? env->vars[i].hint : SYM_NO_HINT;
}

void sym_var_range(const sym_env* env, size_t i, int64_t* lo, int64_t* hi) {
  int64_t l = INT64_MIN, h = INT64_MAX;
  if (env && i < env->nvars) {
    l = env->vars[i].lo;
    h = env->vars[i].hi;
  }
  if (lo) *lo = l;
  if (hi) *hi = h;
}

const sym_expr* sym_var(const sym_env* env, size_t i) {
  return env && i < env->nvars ? env->vars[i].expr : NULL;
}

long sym_find_var(const sym_env* env, const char* name) {
  if (!env || !name) return -1;
  for (size_t i = 0; i < env->nvars; i++)
    if (strcmp(env->vars[i].name, name) == 0) return (long)i;
  return -1;
}

bool sym_is_const(const sym_expr* e, int64_t* v) {
  if (!e || e->kind != SYM_CONST) return false;
  if (v) *v = e->value;
  return true;
}

/* ---- interval arithmetic ----------------------------------------------------------- */

/* Bounds are computed exactly in 128 bits from the args' int64 bounds (sums
 * and quotients cannot overflow there); only long product chains saturate to
 * an infinity, which stays sound because multiplying by a nonzero integer
 * never shrinks a magnitude. Results are clamped back to int64: a lower bound
 * below INT64_MIN becomes INT64_MIN (none), one above INT64_MAX becomes
 * INT64_MAX (still a true lower bound), and symmetrically for upper bounds. */
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;
#define I128_MAX ((i128)(((u128)1 << 127) - 1))
#define I128_MIN (-I128_MAX - 1)

/* Extended integer: inf = -1 (minus infinity), +1 (plus infinity) or 0 (v). */
typedef struct xint {
  int inf;
  i128 v;
} xint;

static xint xfin(i128 v) {
  xint x = {0, v};
  if (v == I128_MIN) x.inf = -1; /* keeps negation and division safe */
  return x;
}
static xint xinf(int s) { return (xint){s, 0}; }
static xint x_from_lo(int64_t lo) { return lo == INT64_MIN ? xinf(-1) : xfin(lo); }
static xint x_from_hi(int64_t hi) { return hi == INT64_MAX ? xinf(1) : xfin(hi); }
static int64_t x_to_i64(xint x) {
  if (x.inf) return x.inf < 0 ? INT64_MIN : INT64_MAX;
  if (x.v < INT64_MIN) return INT64_MIN;
  if (x.v > INT64_MAX) return INT64_MAX;
  return (int64_t)x.v;
}

static int xsign(xint x) { return x.inf ? x.inf : (x.v > 0) - (x.v < 0); }

static int xcmp(xint a, xint b) {
  if (a.inf || b.inf) return (a.inf > b.inf) - (a.inf < b.inf);
  return (a.v > b.v) - (a.v < b.v);
}
static xint xmin(xint a, xint b) { return xcmp(a, b) <= 0 ? a : b; }
static xint xmax(xint a, xint b) { return xcmp(a, b) >= 0 ? a : b; }

/* a + b; `dir` decides +inf + -inf (the direction that keeps the bound sound). */
static xint xadd(xint a, xint b, int dir) {
  if (a.inf && b.inf && a.inf != b.inf) return xinf(dir);
  if (a.inf) return a;
  if (b.inf) return b;
  i128 r;
  if (!__builtin_add_overflow(a.v, b.v, &r)) return xfin(r);
  return xinf(a.v > 0 ? 1 : -1);
}

static xint xneg(xint a) { return a.inf ? xinf(-a.inf) : xfin(-a.v); }

static xint xmul(xint a, xint b) {
  int sa = xsign(a), sb = xsign(b);
  if (sa == 0 || sb == 0) return xfin(0);
  if (a.inf || b.inf) return xinf(sa * sb);
  i128 r;
  if (!__builtin_mul_overflow(a.v, b.v, &r)) return xfin(r);
  return xinf(sa * sb);
}

static i128 i128_floordiv(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  return q;
}

static i128 i128_mod(i128 a, i128 b) {
  i128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

/* floor(a / b) for b != 0; false when undetermined (inf / inf). */
static bool xfloordiv(xint a, xint b, xint* out) {
  if (a.inf && b.inf) return false;
  if (a.inf) {
    *out = xinf(a.inf * xsign(b));
    return true;
  }
  if (b.inf) {
    int sa = xsign(a);
    *out = xfin(sa == 0 || sa == b.inf ? 0 : -1);
    return true;
  }
  *out = xfin(i128_floordiv(a.v, b.v)); /* finite values are > I128_MIN */
  return true;
}

typedef struct xrange {
  xint lo, hi;
} xrange;

static const xrange XFULL = {{-1, 0}, {1, 0}};

static xrange xr_from(int64_t lo, int64_t hi) {
  xrange r = {x_from_lo(lo), x_from_hi(hi)};
  return r;
}

static xrange xr_add(xrange a, xrange b) {
  xrange r = {xadd(a.lo, b.lo, -1), xadd(a.hi, b.hi, 1)};
  return r;
}

static xrange xr_neg(xrange a) {
  xrange r = {xneg(a.hi), xneg(a.lo)};
  return r;
}

static xrange xr_mul(xrange a, xrange b) {
  xint c[4] = {xmul(a.lo, b.lo), xmul(a.lo, b.hi), xmul(a.hi, b.lo), xmul(a.hi, b.hi)};
  xrange r = {c[0], c[0]};
  for (int i = 1; i < 4; i++) {
    r.lo = xmin(r.lo, c[i]);
    r.hi = xmax(r.hi, c[i]);
  }
  return r;
}

static xrange xr_square(xrange a) {
  xint l2 = xmul(a.lo, a.lo), h2 = xmul(a.hi, a.hi);
  xrange r;
  if (xsign(a.lo) >= 0) {
    r.lo = l2;
    r.hi = h2;
  } else if (xsign(a.hi) <= 0) {
    r.lo = h2;
    r.hi = l2;
  } else {
    r.lo = xfin(0);
    r.hi = xmax(l2, h2);
  }
  return r;
}

/* Floor division over the divisor's nonzero values (corners are extreme
 * because a/b is monotone in each argument on each side of b = 0). */
static xrange xr_floordiv(xrange a, xrange b) {
  xrange parts[2];
  int np = 0;
  if (xcmp(b.lo, xfin(-1)) <= 0) parts[np++] = (xrange){b.lo, xmin(b.hi, xfin(-1))};
  if (xcmp(b.hi, xfin(1)) >= 0) parts[np++] = (xrange){xmax(b.lo, xfin(1)), b.hi};
  if (np == 0) return XFULL;
  xrange r = {xinf(1), xinf(-1)};
  for (int p = 0; p < np; p++) {
    xint as[2] = {a.lo, a.hi}, bs[2] = {parts[p].lo, parts[p].hi};
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++) {
        xint q;
        if (!xfloordiv(as[i], bs[j], &q)) return XFULL;
        r.lo = xmin(r.lo, q);
        r.hi = xmax(r.hi, q);
      }
  }
  return r;
}

static xrange xr_mod(xrange a, xrange b) {
  xrange r;
  if (xcmp(b.lo, xfin(1)) >= 0) {
    /* positive divisor: result in [0, b - 1] */
    if (!b.lo.inf && !b.hi.inf && b.lo.v == b.hi.v && !a.lo.inf && !a.hi.inf) {
      i128 d = b.lo.v;
      if (i128_floordiv(a.lo.v, d) == i128_floordiv(a.hi.v, d)) {
        i128 m = i128_mod(a.lo.v, d);
        r.lo = xfin(m);
        r.hi = xfin(m + (a.hi.v - a.lo.v));
        return r;
      }
    }
    if (xsign(a.lo) >= 0 && xcmp(a.hi, b.lo) < 0) return a;
    r.lo = xfin(0);
    r.hi = xadd(b.hi, xfin(-1), 1);
    if (xsign(a.lo) >= 0) r.hi = xmin(r.hi, a.hi);
    return r;
  }
  if (xcmp(b.hi, xfin(-1)) <= 0) {
    /* negative divisor: result in [b + 1, 0] */
    if (xsign(a.hi) <= 0 && xcmp(a.lo, b.hi) > 0) return a;
    r.lo = xadd(b.lo, xfin(1), -1);
    r.hi = xfin(0);
    if (xsign(a.hi) <= 0) r.lo = xmax(r.lo, a.lo);
    return r;
  }
  r.lo = xmin(xfin(0), xadd(b.lo, xfin(1), -1));
  r.hi = xmax(xfin(0), xadd(b.hi, xfin(-1), 1));
  return r;
}

static xrange expr_range(const sym_env* env, const sym_expr* e) {
  const sym_node* nd = sym_node_of(env, e);
  if (nd) return xr_from(nd->lo, nd->hi);
  if (e->kind == SYM_CONST) return xr_from(e->value, e->value);
  return XFULL;
}

void sym_interval(const sym_env* env, sym_kind kind, int64_t value, const sym_expr* const* args,
                  uint32_t n, int64_t* lo, int64_t* hi) {
  xrange r = XFULL;
  switch (kind) {
    case SYM_CONST:
      *lo = *hi = value;
      return;
    case SYM_VAR:
      if (value >= 0 && (uint64_t)value < env->nvars) r = xr_from(env->vars[value].lo, env->vars[value].hi);
      break;
    case SYM_ADD:
      r = xr_from(0, 0);
      for (uint32_t i = 0; i < n; i++) r = xr_add(r, expr_range(env, args[i]));
      break;
    case SYM_MUL:
      r = xr_from(1, 1);
      for (uint32_t i = 0; i < n; i++) {
        if (i + 1 < n && args[i] == args[i + 1]) {
          r = xr_mul(r, xr_square(expr_range(env, args[i])));
          i++;
        } else {
          r = xr_mul(r, expr_range(env, args[i]));
        }
      }
      break;
    case SYM_FLOORDIV:
      if (n == 2) r = xr_floordiv(expr_range(env, args[0]), expr_range(env, args[1]));
      break;
    case SYM_CEILDIV:
      if (n == 2) r = xr_neg(xr_floordiv(xr_neg(expr_range(env, args[0])), expr_range(env, args[1])));
      break;
    case SYM_MOD:
      if (n == 2) r = xr_mod(expr_range(env, args[0]), expr_range(env, args[1]));
      break;
    case SYM_MODIDX:
      if (n == 3)
        r = xr_mod(xr_floordiv(expr_range(env, args[0]), expr_range(env, args[1])),
                   expr_range(env, args[2]));
      break;
    case SYM_MIN:
    case SYM_MAX:
      if (n == 0) break;
      r = expr_range(env, args[0]);
      for (uint32_t i = 1; i < n; i++) {
        xrange a = expr_range(env, args[i]);
        if (kind == SYM_MIN) {
          r.lo = xmin(r.lo, a.lo);
          r.hi = xmin(r.hi, a.hi);
        } else {
          r.lo = xmax(r.lo, a.lo);
          r.hi = xmax(r.hi, a.hi);
        }
      }
      break;
    default:
      break;
  }
  /* An empty interval cannot come out of sound arithmetic on non-empty ones,
   * but guard against it anyway. */
  if (xcmp(r.lo, r.hi) > 0) r = XFULL;
  *lo = x_to_i64(r.lo);
  *hi = x_to_i64(r.hi);
}

void sym_bounds(const sym_env* env, const sym_expr* e, int64_t* lo, int64_t* hi) {
  int64_t l = INT64_MIN, h = INT64_MAX;
  if (e) {
    xrange r = expr_range(env, e);
    l = x_to_i64(r.lo);
    h = x_to_i64(r.hi);
  }
  if (lo) *lo = l;
  if (hi) *hi = h;
}

/* ---- difference bounds -------------------------------------------------------------- */

typedef struct dterm {
  const sym_expr* node;
  int64_t coef; /* multiplier applied to the whole node (its own coefficient included) */
} dterm;

static int dterm_cmp(const void* x, const void* y) {
  const dterm* a = x;
  const dterm* b = y;
  return sym_base_cmp(a->node, b->node);
}

/* Bounds of sum(coef_i * base_i) + c by merging terms of equal bases. */
static bool diff_terms(const sym_env* env, const sym_expr* a, const sym_expr* b, xrange* out) {
  size_t na = a->kind == SYM_ADD ? a->n : 1, nb = b->kind == SYM_ADD ? b->n : 1;
  dterm small[32];
  dterm* t = na + nb <= 32 ? small : malloc((na + nb) * sizeof *t);
  if (!t) return false;
  size_t nt = 0;
  int64_t c = 0;
  bool ok = true;
  for (int side = 0; side < 2 && ok; side++) {
    const sym_expr* x = side ? b : a;
    size_t nx = x->kind == SYM_ADD ? x->n : 1;
    for (size_t i = 0; i < nx && ok; i++) {
      const sym_expr* term = x->kind == SYM_ADD ? x->args[i] : x;
      int64_t k = sym_coef(term);
      if (side && (k == INT64_MIN)) {
        ok = false;
        break;
      }
      if (side) k = -k;
      if (term->kind == SYM_CONST) {
        ok = ptc_add_ok(c, k, &c);
        continue;
      }
      t[nt].node = term;
      t[nt].coef = k;
      nt++;
    }
  }
  if (ok) {
    qsort(t, nt, sizeof *t, dterm_cmp);
    xrange r = xr_from(c, c);
    for (size_t i = 0; i < nt && ok;) {
      int64_t k = t[i].coef;
      size_t j = i + 1;
      while (j < nt && sym_base_cmp(t[i].node, t[j].node) == 0) {
        if (!ptc_add_ok(k, t[j].coef, &k)) ok = false;
        j++;
      }
      if (ok && k != 0) {
        const sym_expr* tmp;
        const sym_expr* const* f;
        uint32_t nf = sym_factors(t[i].node, &f, &tmp);
        int64_t lo, hi;
        sym_interval(env, SYM_MUL, 0, f, nf, &lo, &hi);
        r = xr_add(r, xr_mul(xr_from(lo, hi), xr_from(k, k)));
      }
      i = j;
    }
    *out = r;
  }
  if (t != small) free(t);
  return ok;
}

void sym_diff_bounds(const sym_env* env, const sym_expr* a, const sym_expr* b, int64_t* lo,
                     int64_t* hi) {
  xrange r = xr_add(expr_range(env, a), xr_neg(expr_range(env, b)));
  xrange t;
  if (diff_terms(env, a, b, &t)) {
    r.lo = xmax(r.lo, t.lo);
    r.hi = xmin(r.hi, t.hi);
    if (xcmp(r.lo, r.hi) > 0) r = t; /* cannot happen with sound bounds */
  }
  *lo = x_to_i64(r.lo);
  *hi = x_to_i64(r.hi);
}

/* ---- static and guarded questions ---------------------------------------------------- */

int sym_static(const sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return -1;
  if (a == b) return rel == SYM_EQ || rel == SYM_LE || rel == SYM_GE;
  int64_t lo, hi;
  sym_diff_bounds(env, a, b, &lo, &hi);
  /* lo == INT64_MIN / hi == INT64_MAX mean unbounded on that side. */
  bool pos = lo > 0, neg = hi < 0, nonneg = lo >= 0, nonpos = hi <= 0;
  switch (rel) {
    case SYM_EQ:
      if (lo == 0 && hi == 0) return 1;
      return (pos || neg) ? 0 : -1;
    case SYM_NE:
      if (lo == 0 && hi == 0) return 0;
      return (pos || neg) ? 1 : -1;
    case SYM_LT:
      return neg ? 1 : nonneg ? 0 : -1;
    case SYM_LE:
      return nonpos ? 1 : pos ? 0 : -1;
    case SYM_GT:
      return pos ? 1 : nonpos ? 0 : -1;
    case SYM_GE:
      return nonneg ? 1 : neg ? 0 : -1;
  }
  return -1;
}

static sym_rel rel_negate(sym_rel r) {
  switch (r) {
    case SYM_EQ: return SYM_NE;
    case SYM_NE: return SYM_EQ;
    case SYM_LT: return SYM_GE;
    case SYM_LE: return SYM_GT;
    case SYM_GT: return SYM_LE;
    case SYM_GE: return SYM_LT;
  }
  return r;
}

static sym_rel rel_swap(sym_rel r) {
  switch (r) {
    case SYM_LT: return SYM_GT;
    case SYM_LE: return SYM_GE;
    case SYM_GT: return SYM_LT;
    case SYM_GE: return SYM_LE;
    default: return r;
  }
}

static bool rel_valid(sym_rel r) { return (unsigned)r <= (unsigned)SYM_GE; }

static ptc_status guard_record(sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b) {
  for (size_t i = 0; i < env->nguards; i++) {
    const sym_guard_rec* g = &env->guards[i];
    if (g->rel == rel && g->lhs == a && g->rhs == b) return PTC_OK;
    if (g->rel == rel_swap(rel) && g->lhs == b && g->rhs == a) return PTC_OK;
  }
  if (!guards_reserve(env, env->nguards + 1)) return ptc_status_oom();
  env->guards[env->nguards].rel = rel;
  env->guards[env->nguards].lhs = a;
  env->guards[env->nguards].rhs = b;
  env->nguards++;
  return PTC_OK;
}

/* Marks the symbols used by e (visited: one byte per node id). */
static void mark_vars(const sym_env* env, const sym_expr* e, uint8_t* visited, bool* used) {
  const sym_node* nd = sym_node_of(env, e);
  if (nd) {
    if (visited[e->id]) return;
    visited[e->id] = 1;
  }
  if (e->kind == SYM_VAR) {
    if (e->value >= 0 && (uint64_t)e->value < env->nvars) used[e->value] = true;
    return;
  }
  for (uint32_t i = 0; i < e->n; i++) mark_vars(env, e->args[i], visited, used);
}

/* used[nvars] for the symbols of a and b; NULL on OOM. Caller frees. */
static bool* vars_used(const sym_env* env, const sym_expr* a, const sym_expr* b) {
  bool* used = calloc(env->nvars + 1, sizeof *used);
  uint8_t* visited = calloc(env->count + 1, 1);
  if (!used || !visited) {
    free(used);
    free(visited);
    return NULL;
  }
  mark_vars(env, a, visited, used);
  mark_vars(env, b, visited, used);
  free(visited);
  return used;
}

static ptc_status rel_error(const sym_env* env, int32_t code, sym_rel rel, const sym_expr* a,
                            const sym_expr* b, const char* what) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  sym_format_rel_sb(env, rel, a, b, &sb);
  ptc_status s = sb.oom ? ptc_status_oom() : ptc_status_new(code, "cannot decide %s: %s", sb.data, what);
  ptc_sb_free(&sb);
  return s;
}

ptc_status sym_guard(sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b,
                     bool* result) {
  if (!env || !a || !b || !result || !rel_valid(rel))
    return PTC_ERR(INVALID_ARGUMENT, "sym_guard: NULL or invalid argument");
  int s = sym_static(env, rel, a, b);
  if (s >= 0) {
    *result = s == 1;
    return PTC_OK;
  }
  const sym_node* na = sym_node_of(env, a);
  const sym_node* nb = sym_node_of(env, b);
  if (!na || !nb) return PTC_ERR(INVALID_ARGUMENT, "sym_guard: expression of another env");
  if (na->hint_state == SYM_HINT_UNBACKED || nb->hint_state == SYM_HINT_UNBACKED) {
    bool* used = vars_used(env, a, b);
    if (!used) return ptc_status_oom();
    const char* name = "?";
    for (size_t i = 0; i < env->nvars; i++) {
      if (used[i] && env->vars[i].hint == SYM_NO_HINT) {
        name = env->vars[i].name;
        break;
      }
    }
    free(used);
    ptc_strbuf what;
    ptc_sb_init(&what);
    ptc_sb_printf(&what, "%s has no hint (data-dependent)", name);
    ptc_status st = what.oom ? ptc_status_oom()
                             : rel_error(env, PTC_CODE_FAILED_PRECONDITION, rel, a, b, what.data);
    ptc_sb_free(&what);
    return st;
  }
  if (na->hint_state != SYM_HINT_OK || nb->hint_state != SYM_HINT_OK)
    return rel_error(env, PTC_CODE_INVALID_ARGUMENT, rel, a, b,
                     "evaluating at the hints overflows or divides by zero");
  int64_t x = na->hint, y = nb->hint;
  bool r = false;
  switch (rel) {
    case SYM_EQ: r = x == y; break;
    case SYM_NE: r = x != y; break;
    case SYM_LT: r = x < y; break;
    case SYM_LE: r = x <= y; break;
    case SYM_GT: r = x > y; break;
    case SYM_GE: r = x >= y; break;
  }
  PTC_TRY(guard_record(env, r ? rel : rel_negate(rel), a, b));
  *result = r;
  return PTC_OK;
}

ptc_status sym_add_guard(sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b || !rel_valid(rel))
    return PTC_ERR(INVALID_ARGUMENT, "sym_add_guard: NULL or invalid argument");
  if (!sym_node_of(env, a) || !sym_node_of(env, b))
    return PTC_ERR(INVALID_ARGUMENT, "sym_add_guard: expression of another env");
  if (sym_static(env, rel, a, b) == 1) return PTC_OK;
  return guard_record(env, rel, a, b);
}

size_t sym_num_guards(const sym_env* env) { return env ? env->nguards : 0; }

void sym_truncate_guards(sym_env* env, size_t n) {
  if (env && n < env->nguards) env->nguards = n;
}

ptc_status sym_check_guards(const sym_env* env, const int64_t* values, size_t n_values) {
  if (!env || (!values && n_values)) return PTC_ERR(INVALID_ARGUMENT, "sym_check_guards: NULL argument");
  if (n_values < env->nvars)
    return PTC_ERR(INVALID_ARGUMENT, "sym_check_guards: %zu symbol values given, %zu needed",
                   n_values, env->nvars);
  for (size_t i = 0; i < env->nvars; i++) {
    const sym_var_info* v = &env->vars[i];
    if (values[i] < v->lo || values[i] > v->hi)
      return PTC_ERR(INVALID_ARGUMENT, "symbol %s = %lld is outside its range [%lld, %lld]",
                     v->name, (long long)values[i], (long long)v->lo, (long long)v->hi);
  }
  for (size_t i = 0; i < env->nguards; i++) {
    const sym_guard_rec* g = &env->guards[i];
    int64_t x = 0, y = 0;
    ptc_status se = sym_eval(g->lhs, values, n_values, &x);
    if (!se) se = sym_eval(g->rhs, values, n_values, &y);
    bool ok = false;
    if (!se) {
      switch (g->rel) {
        case SYM_EQ: ok = x == y; break;
        case SYM_NE: ok = x != y; break;
        case SYM_LT: ok = x < y; break;
        case SYM_LE: ok = x <= y; break;
        case SYM_GT: ok = x > y; break;
        case SYM_GE: ok = x >= y; break;
      }
    }
    if (ok) continue;
    ptc_strbuf sb;
    ptc_sb_init(&sb);
    ptc_sb_append(&sb, "shape guard ");
    sym_format_rel_sb(env, g->rel, g->lhs, g->rhs, &sb);
    ptc_sb_append(&sb, " failed: ");
    bool* used = vars_used(env, g->lhs, g->rhs);
    if (!used) {
      ptc_sb_free(&sb);
      ptc_status_destroy(se);
      return ptc_status_oom();
    }
    bool first = true;
    for (size_t k = 0; k < env->nvars; k++) {
      if (!used[k]) continue;
      ptc_sb_printf(&sb, "%s%s=%lld", first ? "" : ", ", env->vars[k].name, (long long)values[k]);
      first = false;
    }
    free(used);
    if (first) ptc_sb_printf(&sb, "%lld %s %lld", (long long)x, sym_rel_str(g->rel), (long long)y);
    if (se) ptc_sb_printf(&sb, " (%s)", ptc_status_message(se));
    ptc_status_destroy(se);
    ptc_status st = sb.oom ? ptc_status_oom() : ptc_status_new(PTC_CODE_INVALID_ARGUMENT, "%s", sb.data);
    ptc_sb_free(&sb);
    return st;
  }
  return PTC_OK;
}
