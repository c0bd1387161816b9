/* sym_simplify.c - the canonicalising builders.
 *
 * Canonical form (all within one env):
 *  - constants are folded; a constant or coefficient that does not fit in
 *    int64 makes the builder return NULL (with env->overflow set) rather than
 *    wrap, so every expression built means exactly what was asked for;
 *    optional rewrites that would overflow are skipped instead;
 *  - ADD: flat sum of terms with distinct bases, sorted by base (the
 *    non-constant factors, compared by id), a nonzero constant term last;
 *    a sum of one term collapses;
 *  - MUL: flat product of non-constant factors sorted by id (repeats allowed),
 *    a coefficient != 1 last; a constant times a single sum is distributed;
 *    a coefficient-1 product of one factor collapses; products of sums are not
 *    expanded;
 *  - FloorDiv/CeilDiv/Mod/ModularIndexing: constant divisors made positive,
 *    summands divisible by the divisor pulled out (or dropped for Mod), common
 *    constant factors cancelled, nested divisions flattened, range-aware
 *    rewrites (x // d -> const when the bounds fit in one period,
 *    x % d -> x - k*d likewise), Mod of a FloorDiv becomes ModularIndexing;
 *  - Min/Max: flattened, deduplicated, arguments statically dominated by
 *    another argument dropped, sorted by id with one constant last.
 * Every rewrite re-enters a builder, and a node is interned only when no rule
 * applies, so rebuilding a node from its own args returns the node itself
 * (what makes format -> parse return the same pointer). */
#include "sym_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- small buffers -------------------------------------------------------------- */

typedef struct ebuf {
  const sym_expr** p;
  size_t n, cap;
  bool oom;
  const sym_expr* small[16];
} ebuf;

static void eb_init(ebuf* b) {
  b->p = b->small;
  b->n = 0;
  b->cap = 16;
  b->oom = false;
}

static void eb_push(ebuf* b, const sym_expr* e) {
  if (b->oom) return;
  if (b->n == b->cap) {
    size_t ncap = b->cap * 2;
    const sym_expr** np = malloc(ncap * sizeof *np);
    if (!np) {
      b->oom = true;
      return;
    }
    memcpy(np, b->p, b->n * sizeof *np);
    if (b->p != b->small) free(b->p);
    b->p = np;
    b->cap = ncap;
  }
  b->p[b->n++] = e;
}

static void eb_free(ebuf* b) {
  if (b->p != b->small) free(b->p);
  b->p = b->small;
  b->n = 0;
}

typedef struct term {
  const sym_expr* node; /* supplies the base (its non-constant factors) */
  int64_t coef;         /* the coefficient to use (node's own is ignored) */
} term;

typedef struct tbuf {
  term* p;
  size_t n, cap;
  bool oom;
  term small[16];
} tbuf;

static void tb_init(tbuf* b) {
  b->p = b->small;
  b->n = 0;
  b->cap = 16;
  b->oom = false;
}

static void tb_push(tbuf* b, const sym_expr* node, int64_t coef) {
  if (b->oom) return;
  if (b->n == b->cap) {
    size_t ncap = b->cap * 2;
    term* np = malloc(ncap * sizeof *np);
    if (!np) {
      b->oom = true;
      return;
    }
    memcpy(np, b->p, b->n * sizeof *np);
    if (b->p != b->small) free(b->p);
    b->p = np;
    b->cap = ncap;
  }
  b->p[b->n].node = node;
  b->p[b->n].coef = coef;
  b->n++;
}

static void tb_free(tbuf* b) {
  if (b->p != b->small) free(b->p);
  b->p = b->small;
  b->n = 0;
}

static bool is_const(const sym_expr* e, int64_t* v) {
  if (e->kind != SYM_CONST) return false;
  *v = e->value;
  return true;
}

static void bounds_of(const sym_env* env, const sym_expr* e, int64_t* lo, int64_t* hi) {
  sym_bounds(env, e, lo, hi);
}

/* Checked coefficient arithmetic: false (and env->overflow set) on overflow. */
static bool ck_add(sym_env* env, int64_t a, int64_t b, int64_t* out) {
  if (ptc_add_ok(a, b, out)) return true;
  env->overflow = true;
  return false;
}

static bool ck_mul(sym_env* env, int64_t a, int64_t b, int64_t* out) {
  if (ptc_mul_ok(a, b, out)) return true;
  env->overflow = true;
  return false;
}

/* For optional rewrites: true if `r` failed only because of overflow (the
 * flag is cleared so the caller can fall back to not rewriting). */
static bool overflowed(sym_env* env, const sym_expr* r) {
  if (r || !env->overflow) return false;
  env->overflow = false;
  return true;
}

/* ---- products ---------------------------------------------------------------------- */

static const sym_expr* scale(sym_env* env, const sym_expr* x, int64_t c);
static const sym_expr* sum_terms(sym_env* env, tbuf* t, int64_t cst);

/* Product of sorted non-constant, non-MUL factors f[0..nf) and coef. */
static const sym_expr* mk_product(sym_env* env, const sym_expr* const* f, size_t nf, int64_t coef) {
  if (coef == 0) return sym_const(env, 0);
  if (nf == 0) return sym_const(env, coef);
  if (nf == 1 && coef == 1) return f[0];
  if (nf == 1 && f[0]->kind == SYM_ADD) return scale(env, f[0], coef);
  if (nf >= SYM_MAX_ARGS) return NULL;
  if (coef == 1) return sym_intern(env, SYM_MUL, 0, f, (uint32_t)nf);
  const sym_expr* c = sym_const(env, coef);
  if (!c) return NULL;
  ebuf b;
  eb_init(&b);
  for (size_t i = 0; i < nf; i++) eb_push(&b, f[i]);
  eb_push(&b, c);
  const sym_expr* r = b.oom ? NULL : sym_intern(env, SYM_MUL, 0, b.p, (uint32_t)b.n);
  eb_free(&b);
  return r;
}

/* The term `node` with coefficient `coef` (node's own coefficient replaced). */
static const sym_expr* mk_term(sym_env* env, const sym_expr* node, int64_t coef) {
  if (coef == sym_coef(node)) return node;
  const sym_expr* tmp;
  const sym_expr* const* f;
  uint32_t nf = sym_factors(node, &f, &tmp);
  return mk_product(env, f, nf, coef);
}

/* x * c. */
static const sym_expr* scale(sym_env* env, const sym_expr* x, int64_t c) {
  if (c == 0) return sym_const(env, 0);
  if (c == 1) return x;
  int64_t k;
  if (x->kind == SYM_CONST) return ck_mul(env, x->value, c, &k) ? sym_const(env, k) : NULL;
  if (x->kind == SYM_ADD) {
    tbuf t;
    tb_init(&t);
    int64_t cst = 0;
    bool ok = true;
    for (uint32_t i = 0; i < x->n && ok; i++) {
      const sym_expr* a = x->args[i];
      if (a->kind == SYM_CONST) ok = ck_mul(env, a->value, c, &cst);
      else if ((ok = ck_mul(env, sym_coef(a), c, &k))) tb_push(&t, a, k);
    }
    const sym_expr* r = (!ok || t.oom) ? NULL : sum_terms(env, &t, cst);
    tb_free(&t);
    return r;
  }
  const sym_expr* tmp;
  const sym_expr* const* f;
  uint32_t nf = sym_factors(x, &f, &tmp);
  if (!ck_mul(env, sym_coef(x), c, &k)) return NULL;
  return mk_product(env, f, nf, k);
}

/* ---- sums ----------------------------------------------------------------------------- */

static int term_cmp(const void* x, const void* y) {
  const term* a = x;
  const term* b = y;
  return sym_base_cmp(a->node, b->node);
}

/* Canonical sum of the terms (any order, equal bases allowed) plus cst. */
static const sym_expr* sum_terms(sym_env* env, tbuf* t, int64_t cst) {
  size_t m = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (t->p[i].node->kind != SYM_CONST) t->p[m++] = t->p[i];
    else if (!ck_add(env, cst, t->p[i].coef, &cst)) return NULL;
  }
  t->n = m;
  if (t->n > 1) qsort(t->p, t->n, sizeof *t->p, term_cmp);
  ebuf out;
  eb_init(&out);
  for (size_t i = 0; i < t->n;) {
    int64_t k = t->p[i].coef;
    size_t j = i + 1;
    while (j < t->n && sym_base_cmp(t->p[i].node, t->p[j].node) == 0) {
      if (!ck_add(env, k, t->p[j].coef, &k)) {
        eb_free(&out);
        return NULL;
      }
      j++;
    }
    if (k != 0) {
      const sym_expr* e = mk_term(env, t->p[i].node, k);
      if (!e) {
        eb_free(&out);
        return NULL;
      }
      eb_push(&out, e);
    }
    i = j;
  }
  const sym_expr* r = NULL;
  if (out.oom) {
    r = NULL;
  } else if (out.n == 0) {
    r = sym_const(env, cst);
  } else if (out.n == 1 && cst == 0) {
    r = out.p[0];
  } else {
    const sym_expr* c = cst ? sym_const(env, cst) : NULL;
    if (!cst || c) {
      if (c) eb_push(&out, c);
      if (!out.oom && out.n < SYM_MAX_ARGS)
        r = sym_intern(env, SYM_ADD, 0, out.p, (uint32_t)out.n);
    }
  }
  eb_free(&out);
  return r;
}

/* Adds the terms of x (flattening a sum) into t / *cst; false on overflow. */
static bool collect_terms(sym_env* env, tbuf* t, const sym_expr* x, int64_t* cst) {
  if (x->kind == SYM_ADD) {
    for (uint32_t i = 0; i < x->n; i++)
      if (!collect_terms(env, t, x->args[i], cst)) return false;
    return true;
  }
  if (x->kind == SYM_CONST) return ck_add(env, *cst, x->value, cst);
  tb_push(t, x, sym_coef(x));
  return true;
}

static const sym_expr* sum_list(sym_env* env, const sym_expr* const* xs, size_t n) {
  tbuf t;
  tb_init(&t);
  int64_t cst = 0;
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) ok = collect_terms(env, &t, xs[i], &cst);
  const sym_expr* r = (!ok || t.oom) ? NULL : sum_terms(env, &t, cst);
  tb_free(&t);
  return r;
}

/* ---- public arithmetic builders ------------------------------------------------------ */

const sym_expr* sym_const(sym_env* env, int64_t v) {
  if (!env) return NULL;
  return sym_intern(env, SYM_CONST, v, NULL, 0);
}

const sym_expr* sym_add(sym_env* env, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return NULL;
  int64_t av = 0, bv = 0;
  bool ac = is_const(a, &av), bc = is_const(b, &bv);
  if (ac && bc) {
    int64_t v;
    return ck_add(env, av, bv, &v) ? sym_const(env, v) : NULL;
  }
  if (ac && av == 0) return b;
  if (bc && bv == 0) return a;
  const sym_expr* xs[2] = {a, b};
  return sum_list(env, xs, 2);
}

const sym_expr* sym_neg(sym_env* env, const sym_expr* a) {
  if (!env || !a) return NULL;
  return scale(env, a, -1);
}

const sym_expr* sym_sub(sym_env* env, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return NULL;
  return sym_add(env, a, sym_neg(env, b));
}

const sym_expr* sym_mul(sym_env* env, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return NULL;
  int64_t av = 0, bv = 0;
  if (is_const(a, &av)) return scale(env, b, av);
  if (is_const(b, &bv)) return scale(env, a, bv);
  int64_t coef;
  if (!ck_mul(env, sym_coef(a), sym_coef(b), &coef)) return NULL;
  if (coef == 0) return sym_const(env, 0);
  const sym_expr *ta, *tb;
  const sym_expr* const* fa;
  const sym_expr* const* fb;
  uint32_t na = sym_factors(a, &fa, &ta);
  uint32_t nb = sym_factors(b, &fb, &tb);
  if ((size_t)na + nb >= SYM_MAX_ARGS) return NULL;
  ebuf f;
  eb_init(&f);
  uint32_t i = 0, j = 0;
  while (i < na || j < nb) {
    if (j >= nb || (i < na && sym_expr_cmp(fa[i], fb[j]) <= 0)) eb_push(&f, fa[i++]);
    else eb_push(&f, fb[j++]);
  }
  const sym_expr* r = f.oom ? NULL : mk_product(env, f.p, f.n, coef);
  eb_free(&f);
  return r;
}

const sym_expr* sym_add_c(sym_env* env, const sym_expr* a, int64_t c) {
  if (!env || !a) return NULL;
  return sym_add(env, a, sym_const(env, c));
}

const sym_expr* sym_mul_c(sym_env* env, const sym_expr* a, int64_t c) {
  if (!env || !a) return NULL;
  return scale(env, a, c);
}

/* ---- division helpers ------------------------------------------------------------------ */

/* The divisor as (non-constant factors, coefficient). */
typedef struct divisor {
  const sym_expr* const* f;
  uint32_t nf;
  int64_t coef;
  const sym_expr* tmp;
} divisor;

static void divisor_of(const sym_expr* b, divisor* d) {
  if (b->kind == SYM_CONST) {
    d->f = NULL;
    d->nf = 0;
    d->coef = b->value;
    return;
  }
  d->nf = sym_factors(b, &d->f, &d->tmp);
  d->coef = sym_coef(b);
}

/* If non-constant term t is a multiple of the divisor: 1 and *q = t / d;
 * 0 if not; -1 on OOM. */
static int term_div(sym_env* env, const sym_expr* t, const divisor* d, const sym_expr** q) {
  int64_t tc = sym_coef(t), r, qc;
  if (d->coef == 0) return 0;
  if (sym_i64_mod(tc, d->coef, &r) != SYM_EVAL_OK || r != 0) return 0;
  if (sym_i64_floordiv(tc, d->coef, &qc) != SYM_EVAL_OK) return 0;
  const sym_expr* tmp;
  const sym_expr* const* f;
  uint32_t nf = sym_factors(t, &f, &tmp);
  if (d->nf > nf) return 0;
  ebuf rest;
  eb_init(&rest);
  uint32_t i = 0, j = 0;
  while (i < nf) {
    if (j < d->nf && f[i] == d->f[j]) {
      i++;
      j++;
    } else if (j < d->nf && sym_expr_cmp(d->f[j], f[i]) < 0) {
      break; /* d->f[j] is missing from t */
    } else {
      eb_push(&rest, f[i++]);
    }
  }
  if (j < d->nf) {
    eb_free(&rest);
    return 0;
  }
  if (rest.oom) {
    eb_free(&rest);
    return -1;
  }
  *q = mk_product(env, rest.p, rest.n, qc);
  eb_free(&rest);
  return *q ? 1 : -1;
}

static uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static uint64_t abs_u64(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

/* gcd of the divisor's coefficient and every coefficient of a. */
static uint64_t content_gcd(const sym_expr* a, int64_t dcoef) {
  uint64_t g = abs_u64(dcoef);
  uint32_t n = a->kind == SYM_ADD ? a->n : 1;
  for (uint32_t i = 0; i < n && g != 1; i++) {
    const sym_expr* t = a->kind == SYM_ADD ? a->args[i] : a;
    g = gcd_u64(g, abs_u64(sym_coef(t)));
  }
  return g;
}

/* x / g for a g dividing every coefficient of x. */
static const sym_expr* div_exact(sym_env* env, const sym_expr* x, int64_t g) {
  if (x->kind == SYM_CONST) return sym_const(env, x->value / g);
  if (x->kind == SYM_ADD) {
    tbuf t;
    tb_init(&t);
    int64_t cst = 0;
    for (uint32_t i = 0; i < x->n; i++) {
      const sym_expr* a = x->args[i];
      if (a->kind == SYM_CONST) cst = a->value / g;
      else tb_push(&t, a, sym_coef(a) / g);
    }
    const sym_expr* r = t.oom ? NULL : sum_terms(env, &t, cst);
    tb_free(&t);
    return r;
  }
  return mk_term(env, x, sym_coef(x) / g);
}

/* Splits a into multiples of the divisor (quotients into q) and the rest (r).
 * A constant term c with a constant divisor d contributes floor(c/d) to qc and
 * c mod d to rc. Returns -1 on OOM, else whether anything was pulled. */
static int split_multiples(sym_env* env, const sym_expr* a, const sym_expr* b, tbuf* q, int64_t* qc,
                           tbuf* r, int64_t* rc) {
  divisor d;
  divisor_of(b, &d);
  *qc = 0;
  *rc = 0;
  int pulled = 0;
  uint32_t n = a->kind == SYM_ADD ? a->n : 1;
  for (uint32_t i = 0; i < n; i++) {
    const sym_expr* t = a->kind == SYM_ADD ? a->args[i] : a;
    if (t->kind == SYM_CONST) {
      int64_t k, m;
      if (b->kind == SYM_CONST && sym_i64_floordiv(t->value, b->value, &k) == SYM_EVAL_OK &&
          sym_i64_mod(t->value, b->value, &m) == SYM_EVAL_OK) {
        if (k != 0) pulled = 1;
        if (!ck_add(env, *qc, k, qc)) return -1;
        *rc = m;
      } else {
        *rc = t->value;
      }
      continue;
    }
    const sym_expr* qt = NULL;
    int rr = term_div(env, t, &d, &qt);
    if (rr < 0) return -1;
    if (rr == 1) {
      pulled = 1;
      /* the quotient may be a constant or a sum: ((x + 1)*y) // y */
      if (!collect_terms(env, q, qt, qc)) return -1;
    } else {
      tb_push(r, t, sym_coef(t));
    }
  }
  if (q->oom || r->oom) return -1;
  return pulled;
}

/* Positive constant value of e, or 0. */
static int64_t pos_const(const sym_expr* e) {
  return e->kind == SYM_CONST && e->value > 0 ? e->value : 0;
}

/* Whether x // e // b may be flattened to x // (e*b): both positive, and the
 * product cannot overflow. */
static bool can_flatten(const sym_env* env, const sym_expr* e, const sym_expr* b) {
  int64_t elo, ehi, blo, bhi, p;
  bounds_of(env, e, &elo, &ehi);
  bounds_of(env, b, &blo, &bhi);
  if (elo < 1 || blo < 1 || ehi == INT64_MAX || bhi == INT64_MAX) return false;
  return ptc_mul_ok(ehi, bhi, &p);
}

typedef enum divop { DIV_FLOOR, DIV_CEIL } divop;

static const sym_expr* div_common(sym_env* env, divop op, const sym_expr* a, const sym_expr* b);

const sym_expr* sym_floordiv(sym_env* env, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return NULL;
  return div_common(env, DIV_FLOOR, a, b);
}

const sym_expr* sym_ceildiv(sym_env* env, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return NULL;
  return div_common(env, DIV_CEIL, a, b);
}

static const sym_expr* div_build(sym_env* env, divop op, const sym_expr* a, const sym_expr* b) {
  return op == DIV_FLOOR ? sym_floordiv(env, a, b) : sym_ceildiv(env, a, b);
}

static const sym_expr* div_common(sym_env* env, divop op, const sym_expr* a, const sym_expr* b) {
  int64_t av = 0, bv = 0;
  bool ac = is_const(a, &av), bc = is_const(b, &bv);
  if (bc) {
    if (bv == 0) return NULL;
    if (ac) {
      int64_t q;
      int rc = op == DIV_FLOOR ? sym_i64_floordiv(av, bv, &q) : sym_i64_ceildiv(av, bv, &q);
      if (rc != SYM_EVAL_OK) {
        env->overflow = true; /* INT64_MIN / -1 */
        return NULL;
      }
      return sym_const(env, q);
    }
    if (bv == 1) return a;
    /* a // -d == (-a) // d; skipped when -a is not representable */
    if (bv < 0 && bv != INT64_MIN) {
      const sym_expr* na = sym_neg(env, a);
      if (!overflowed(env, na)) return bv == -1 ? na : div_build(env, op, na, sym_const(env, -bv));
    }
  }
  if (ac && av == 0) return sym_const(env, 0);
  if (a == b) return sym_const(env, 1);

  /* Range-aware: the quotient is the same for every value in the bounds. */
  int64_t alo, ahi, blo, bhi;
  bounds_of(env, a, &alo, &ahi);
  bounds_of(env, b, &blo, &bhi);
  if (bc && bv > 0 && alo != INT64_MIN && ahi != INT64_MAX) {
    int64_t k1, k2;
    if (op == DIV_FLOOR) {
      sym_i64_floordiv(alo, bv, &k1);
      sym_i64_floordiv(ahi, bv, &k2);
    } else {
      sym_i64_ceildiv(alo, bv, &k1);
      sym_i64_ceildiv(ahi, bv, &k2);
    }
    if (k1 == k2) return sym_const(env, k1);
  }
  if (blo >= 1 && blo != INT64_MIN) {
    if (op == DIV_FLOOR) {
      if (alo >= 0 && ahi < blo) return sym_const(env, 0);
      if (alo != INT64_MIN && alo >= -blo && ahi < 0) return sym_const(env, -1);
    } else {
      if (alo >= 1 && ahi <= blo) return sym_const(env, 1);
      if (alo != INT64_MIN && alo > -blo && ahi <= 0) return sym_const(env, 0);
    }
  }

  /* (q*b + r) // b == q + r // b, and likewise for ceildiv. */
  tbuf q, r;
  tb_init(&q);
  tb_init(&r);
  int64_t qc, rc;
  int pulled = split_multiples(env, a, b, &q, &qc, &r, &rc);
  const sym_expr* res = NULL;
  if (pulled == 1) {
    const sym_expr* qs = sum_terms(env, &q, qc);
    const sym_expr* rs = sum_terms(env, &r, rc);
    res = (qs && rs) ? sym_add(env, qs, div_build(env, op, rs, b)) : NULL;
  }
  tb_free(&q);
  tb_free(&r);
  if (pulled != 0) return res;

  /* Cancel a common constant factor: (g*x) // (g*y) == x // y for g > 0. */
  divisor d;
  divisor_of(b, &d);
  uint64_t g = content_gcd(a, d.coef);
  if (g > 1 && g <= (uint64_t)INT64_MAX) {
    const sym_expr* a2 = div_exact(env, a, (int64_t)g);
    const sym_expr* b2 = div_exact(env, b, (int64_t)g);
    if (!a2 || !b2) return NULL;
    return div_build(env, op, a2, b2);
  }

  /* Nested divisions by positive values: x // e // b == x // (e*b). */
  if (a->kind == (op == DIV_FLOOR ? SYM_FLOORDIV : SYM_CEILDIV) && can_flatten(env, a->args[1], b)) {
    const sym_expr* eb = sym_mul(env, a->args[1], b);
    if (!overflowed(env, eb)) return div_build(env, op, a->args[0], eb);
  }

  if (op == DIV_FLOOR && bc && bv > 0) {
    int64_t m, d1;
    /* (x % (k*d)) // d == modidx(x, d, k) */
    if (a->kind == SYM_MOD && (m = pos_const(a->args[1])) && m % bv == 0)
      return sym_modidx(env, a->args[0], b, sym_const(env, m / bv));
    /* modidx(x, d1, k*d) // d == modidx(x, d1*d, k) */
    if (a->kind == SYM_MODIDX && (d1 = pos_const(a->args[1])) && (m = pos_const(a->args[2])) &&
        m % bv == 0 && ptc_mul_ok(d1, bv, &d1))
      return sym_modidx(env, a->args[0], sym_const(env, d1), sym_const(env, m / bv));
  }
  const sym_expr* args[2] = {a, b};
  return sym_intern(env, op == DIV_FLOOR ? SYM_FLOORDIV : SYM_CEILDIV, 0, args, 2);
}

const sym_expr* sym_mod(sym_env* env, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return NULL;
  int64_t av = 0, bv = 0;
  bool ac = is_const(a, &av), bc = is_const(b, &bv);
  if (bc) {
    if (bv == 0) return NULL;
    if (ac) {
      int64_t m;
      sym_i64_mod(av, bv, &m);
      return sym_const(env, m);
    }
    if (bv == 1 || bv == -1) return sym_const(env, 0);
    /* a % -d == -((-a) % d); skipped when -a is not representable */
    if (bv < 0 && bv != INT64_MIN) {
      const sym_expr* na = sym_neg(env, a);
      if (!overflowed(env, na)) return sym_neg(env, sym_mod(env, na, sym_const(env, -bv)));
    }
  }
  if (ac && av == 0) return sym_const(env, 0);
  if (a == b) return sym_const(env, 0);

  /* (q*b + r) % b == r % b */
  tbuf q, r;
  tb_init(&q);
  tb_init(&r);
  int64_t qc, rc;
  int pulled = split_multiples(env, a, b, &q, &qc, &r, &rc);
  const sym_expr* res = NULL;
  if (pulled == 1) {
    const sym_expr* rs = sum_terms(env, &r, rc);
    res = rs ? sym_mod(env, rs, b) : NULL;
  }
  tb_free(&q);
  tb_free(&r);
  if (pulled != 0) return res;

  /* (g*x) % (g*y) == g * (x % y) for g > 0 */
  divisor d;
  divisor_of(b, &d);
  uint64_t g = content_gcd(a, d.coef);
  if (g > 1 && g <= (uint64_t)INT64_MAX) {
    const sym_expr* a2 = div_exact(env, a, (int64_t)g);
    const sym_expr* b2 = div_exact(env, b, (int64_t)g);
    if (!a2 || !b2) return NULL;
    return sym_mul_c(env, sym_mod(env, a2, b2), (int64_t)g);
  }

  /* Range-aware: a stays within one period of the divisor. */
  int64_t alo, ahi, blo, bhi;
  bounds_of(env, a, &alo, &ahi);
  bounds_of(env, b, &blo, &bhi);
  if (bc && bv > 0 && alo != INT64_MIN && ahi != INT64_MAX) {
    int64_t k1, k2, m;
    sym_i64_floordiv(alo, bv, &k1);
    sym_i64_floordiv(ahi, bv, &k2);
    int64_t delta;
    sym_i64_mod(alo, bv, &m);
    if (k1 == k2 && ptc_add_ok(m, -alo, &delta)) return sym_add_c(env, a, delta); /* a - k*d */
  }
  if (blo >= 1 && blo != INT64_MIN && alo >= 0 && ahi < blo) return a;
  if (bhi <= -1 && bhi != INT64_MAX && ahi <= 0 && alo > bhi) return a;

  if (bc && bv > 0) {
    int64_t m;
    /* (x % (k*d)) % d == x % d */
    if (a->kind == SYM_MOD && (m = pos_const(a->args[1])) && m % bv == 0)
      return sym_mod(env, a->args[0], b);
    /* modidx(x, e, k*d) % d == modidx(x, e, d) */
    if (a->kind == SYM_MODIDX && (m = pos_const(a->args[2])) && m % bv == 0)
      return sym_modidx(env, a->args[0], a->args[1], b);
  }
  if (a->kind == SYM_FLOORDIV) {
    const sym_expr* args[3] = {a->args[0], a->args[1], b};
    return sym_intern(env, SYM_MODIDX, 0, args, 3);
  }
  const sym_expr* args[2] = {a, b};
  return sym_intern(env, SYM_MOD, 0, args, 2);
}

const sym_expr* sym_modidx(sym_env* env, const sym_expr* a, const sym_expr* div,
                           const sym_expr* mod) {
  if (!env || !a || !div || !mod) return NULL;
  int64_t v;
  if (is_const(mod, &v) && v == 0) return NULL;
  return sym_mod(env, sym_floordiv(env, a, div), mod);
}

/* ---- min / max ------------------------------------------------------------------------- */

static int expr_qcmp(const void* x, const void* y) {
  return sym_expr_cmp(*(const sym_expr* const*)x, *(const sym_expr* const*)y);
}

static void collect_args(ebuf* b, sym_kind kind, const sym_expr* x) {
  if (x->kind == kind) {
    for (uint32_t i = 0; i < x->n; i++) eb_push(b, x->args[i]);
  } else {
    eb_push(b, x);
  }
}

static const sym_expr* minmax_list(sym_env* env, sym_kind kind, const sym_expr* const* xs, size_t n) {
  ebuf b;
  eb_init(&b);
  for (size_t i = 0; i < n; i++) collect_args(&b, kind, xs[i]);
  if (b.oom) {
    eb_free(&b);
    return NULL;
  }
  qsort(b.p, b.n, sizeof *b.p, expr_qcmp);
  /* dedupe and keep one (the extreme) constant */
  size_t m = 0;
  for (size_t i = 0; i < b.n; i++) {
    const sym_expr* x = b.p[i];
    if (m && b.p[m - 1] == x) continue;
    if (m && x->kind == SYM_CONST && b.p[m - 1]->kind == SYM_CONST) {
      int64_t prev = b.p[m - 1]->value;
      if (kind == SYM_MIN ? x->value < prev : x->value > prev) b.p[m - 1] = x;
      continue;
    }
    b.p[m++] = x;
  }
  /* drop arguments statically dominated by another one */
  sym_rel rel = kind == SYM_MIN ? SYM_LE : SYM_GE;
  bool small_keep[16];
  bool* keep = m <= 16 ? small_keep : malloc(m * sizeof *keep);
  if (!keep) {
    eb_free(&b);
    return NULL;
  }
  for (size_t i = 0; i < m; i++) {
    keep[i] = true;
    for (size_t j = 0; j < i && keep[i]; j++) {
      if (!keep[j]) continue;
      if (sym_static(env, rel, b.p[j], b.p[i]) == 1) keep[i] = false;
      else if (sym_static(env, rel, b.p[i], b.p[j]) == 1) keep[j] = false;
    }
  }
  size_t k = 0;
  for (size_t i = 0; i < m; i++)
    if (keep[i]) b.p[k++] = b.p[i];
  if (keep != small_keep) free(keep);
  const sym_expr* r;
  if (k == 1) r = b.p[0];
  else if (k >= SYM_MAX_ARGS) r = NULL;
  else r = sym_intern(env, kind, 0, b.p, (uint32_t)k);
  eb_free(&b);
  return r;
}

static const sym_expr* minmax(sym_env* env, sym_kind kind, const sym_expr* a, const sym_expr* b) {
  if (!env || !a || !b) return NULL;
  if (a == b) return a;
  int64_t av = 0, bv = 0;
  if (is_const(a, &av) && is_const(b, &bv))
    return sym_const(env, kind == SYM_MIN ? (av < bv ? av : bv) : (av > bv ? av : bv));
  const sym_expr* xs[2] = {a, b};
  return minmax_list(env, kind, xs, 2);
}

const sym_expr* sym_min(sym_env* env, const sym_expr* a, const sym_expr* b) {
  return minmax(env, SYM_MIN, a, b);
}

const sym_expr* sym_max(sym_env* env, const sym_expr* a, const sym_expr* b) {
  return minmax(env, SYM_MAX, a, b);
}

/* ---- rebuild / substitution ------------------------------------------------------------ */

const sym_expr* sym_rebuild(sym_env* dst, const sym_expr* e, const sym_expr* const* repl,
                            size_t nrepl, sym_map* memo) {
  if (!e) return NULL;
  const sym_expr* hit = sym_map_get(memo, e);
  if (hit) return hit;
  const sym_expr* r = NULL;
  if (e->kind == SYM_CONST) {
    r = sym_const(dst, e->value);
  } else if (e->kind == SYM_VAR) {
    if (e->value >= 0 && repl && (uint64_t)e->value < nrepl && repl[e->value]) r = repl[e->value];
    else if (e->value >= 0 && (uint64_t)e->value < dst->nvars) r = dst->vars[e->value].expr;
  } else {
    ebuf kids;
    eb_init(&kids);
    bool same = sym_node_of(dst, e) != NULL;
    for (uint32_t i = 0; i < e->n; i++) {
      const sym_expr* k = sym_rebuild(dst, e->args[i], repl, nrepl, memo);
      if (!k) {
        eb_free(&kids);
        return NULL;
      }
      if (k != e->args[i]) same = false;
      eb_push(&kids, k);
    }
    if (kids.oom) {
      eb_free(&kids);
      return NULL;
    }
    const sym_expr* const* k = kids.p;
    if (same) {
      r = e;
    } else {
      switch ((sym_kind)e->kind) {
        case SYM_ADD:
          r = sum_list(dst, k, kids.n);
          break;
        case SYM_MUL:
          r = k[0];
          for (size_t i = 1; i < kids.n && r; i++) r = sym_mul(dst, r, k[i]);
          break;
        case SYM_FLOORDIV:
          r = e->n == 2 ? sym_floordiv(dst, k[0], k[1]) : NULL;
          break;
        case SYM_CEILDIV:
          r = e->n == 2 ? sym_ceildiv(dst, k[0], k[1]) : NULL;
          break;
        case SYM_MOD:
          r = e->n == 2 ? sym_mod(dst, k[0], k[1]) : NULL;
          break;
        case SYM_MODIDX:
          r = e->n == 3 ? sym_modidx(dst, k[0], k[1], k[2]) : NULL;
          break;
        case SYM_MIN:
        case SYM_MAX:
          r = kids.n ? minmax_list(dst, (sym_kind)e->kind, k, kids.n) : NULL;
          break;
        default:
          r = NULL;
          break;
      }
    }
    eb_free(&kids);
  }
  if (r && !sym_map_put(memo, e, r)) return NULL;
  return r;
}

const sym_expr* sym_subst(sym_env* env, const sym_expr* e, const sym_expr* const* repl) {
  if (!env || !e) return NULL;
  sym_map memo = {0};
  const sym_expr* r = sym_rebuild(env, e, repl, env->nvars, &memo);
  sym_map_free(&memo);
  return r;
}
