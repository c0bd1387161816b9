/* test_sym.c - unit tests of the symbolic-shape engine (lib/sym): hash-consing,
 * canonical sums of products, division/modulo/min/max rules, range-aware
 * simplification, static and guarded questions, evaluation, text round trip,
 * parse errors, clone/import/subst. Prints one line per failed check and a
 * summary; exits non-zero on any failure. */
#include "lib/sym/sym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_pass, g_fail;

#define CHECK(cond)                                                  \
  do {                                                               \
    if (cond) {                                                      \
      g_pass++;                                                      \
    } else {                                                         \
      g_fail++;                                                      \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
    }                                                                \
  } while (0)

static sym_env* g_env; /* env used by P() and TXT() */

/* Parses `text` in g_env; NULL (and a failure) if it does not parse. */
static const sym_expr* P_at(const char* text, int line) {
  const sym_expr* e = NULL;
  ptc_status s = sym_parse(g_env, text, strlen(text), &e);
  if (s) {
    g_fail++;
    printf("FAIL %s:%d: parse \"%s\": %s\n", __FILE__, line, text, ptc_status_message(s));
    ptc_status_destroy(s);
    return NULL;
  }
  return e;
}
#define P(text) P_at(text, __LINE__)

static const char* fmt_e(const sym_expr* e) {
  static char buf[4][512];
  static int k;
  char* b = buf[k++ & 3];
  if (!e) return "<null>";
  sym_format(g_env, e, b, 512);
  return b;
}

/* The expression formats as `want`. */
static void check_text(const sym_expr* e, const char* want, int line) {
  const char* got = fmt_e(e);
  if (e && strcmp(got, want) == 0) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL %s:%d: got \"%s\", want \"%s\"\n", __FILE__, line, got, want);
  }
}
#define TXT(e, want) check_text(e, want, __LINE__)

/* Two expressions are the same pointer. */
static void check_same(const sym_expr* a, const sym_expr* b, int line) {
  if (a && a == b) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL %s:%d: \"%s\" is not the same expression as \"%s\"\n", __FILE__, line, fmt_e(a),
           fmt_e(b));
  }
}
#define SAME(a, b) check_same(a, b, __LINE__)

static void check_const(const sym_expr* e, int64_t v, int line) {
  int64_t got;
  if (e && sym_is_const(e, &got) && got == v) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL %s:%d: \"%s\" is not the constant %lld\n", __FILE__, line, fmt_e(e), (long long)v);
  }
}
#define CONST_IS(e, v) check_const(e, v, __LINE__)

/* The status has `code` and its message contains `needle`; destroys it. */
static void check_status(ptc_status s, int32_t code, const char* needle, int line) {
  const char* msg = ptc_status_message(s);
  if (s && ptc_status_code(s) == code && (!needle || strstr(msg, needle))) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL %s:%d: status %s \"%s\", want %s containing \"%s\"\n", __FILE__, line,
           ptc_code_name(ptc_status_code(s)), msg, ptc_code_name(code), needle ? needle : "");
  }
  ptc_status_destroy(s);
}
#define STATUS(s, code, needle) check_status(s, PTC_CODE_##code, needle, __LINE__)

static void check_ok(ptc_status s, int line) {
  if (!s) {
    g_pass++;
  } else {
    g_fail++;
    printf("FAIL %s:%d: unexpected error: %s\n", __FILE__, line, ptc_status_message(s));
    ptc_status_destroy(s);
  }
}
#define OK(s) check_ok(s, __LINE__)

static const sym_expr* new_var(sym_env* env, const char* name, int64_t hint, int64_t lo, int64_t hi) {
  const sym_expr* e = NULL;
  ptc_status s = sym_new_var(env, name, hint, lo, hi, &e);
  if (s) {
    printf("FAIL: sym_new_var(%s): %s\n", name, ptc_status_message(s));
    g_fail++;
    ptc_status_destroy(s);
  }
  return e;
}

#define DEF_LO 2
#define DEF_HI ((int64_t)1 << 62)

/* ---- tests ----------------------------------------------------------------------- */

static void test_hash_consing(void) {
  sym_env* env = g_env;
  const sym_expr* s0 = sym_var(env, 0);
  const sym_expr* s1 = sym_var(env, 1);
  SAME(sym_add(env, s0, s1), sym_add(env, s1, s0));
  SAME(sym_mul(env, s0, s1), sym_mul(env, s1, s0));
  SAME(sym_const(env, 42), sym_const(env, 42));
  SAME(sym_min(env, s0, s1), sym_min(env, s1, s0));
  SAME(sym_max(env, s0, s1), sym_max(env, s1, s0));
  const sym_expr* a = sym_add(env, sym_add(env, s0, sym_const(env, 1)), s1);
  const sym_expr* b = sym_add(env, s1, sym_add(env, sym_const(env, 1), s0));
  SAME(a, b);
  const sym_expr* m1 = sym_mul(env, sym_mul(env, s0, s1), sym_const(env, 3));
  const sym_expr* m2 = sym_mul(env, sym_const(env, 3), sym_mul(env, s1, s0));
  SAME(m1, m2);
  CHECK(sym_floordiv(env, s0, s1) == sym_floordiv(env, s0, s1));
  CHECK(sym_floordiv(env, s0, s1) != sym_floordiv(env, s1, s0));
  /* ids are dense, creation-ordered */
  CHECK(s0->id < s1->id);
  CHECK(a->id > s0->id && a->id > s1->id);
}

static void test_canonical_sums(void) {
  sym_env* env = g_env;
  const sym_expr* s0 = sym_var(env, 0);
  const sym_expr* s1 = sym_var(env, 1);
  const sym_expr* three_s0 = sym_add(env, sym_mul_c(env, s0, 2), s0);
  SAME(three_s0, sym_mul_c(env, s0, 3));
  TXT(three_s0, "3*s0");
  CHECK(three_s0->kind == SYM_MUL && three_s0->n == 2);
  CONST_IS(sym_sub(env, sym_mul(env, s0, s1), sym_mul(env, s1, s0)), 0);
  CONST_IS(sym_sub(env, s0, s0), 0);
  SAME(sym_neg(env, sym_neg(env, s0)), s0);
  SAME(sym_mul_c(env, s0, 1), s0);
  CONST_IS(sym_mul_c(env, s0, 0), 0);
  SAME(sym_add_c(env, s0, 0), s0);
  SAME(P("2*(s0 + 1)"), P("2*s0 + 2"));
  TXT(P("2*(s0 + 1)"), "2*s0 + 2");
  TXT(P("s0 + s1 + s0 + 3 - 1"), "2*s0 + s1 + 2");
  TXT(P("s0 - s1"), "s0 - s1");
  TXT(P("-s0 + s1"), "-s0 + s1");
  TXT(P("s0*s1*2 - s1*s0"), "s0*s1");
  TXT(P("s0*s0"), "s0*s0");
  TXT(P("s1*s0*s0*3"), "3*s0*s0*s1");
  /* factors are ordered by id: the sum is created after s1 */
  TXT(P("(s0 + 1)*s1"), "s1*(s0 + 1)");
  TXT(P("3*((s0 + 1)*s1)"), "3*(s1*(s0 + 1))");
  TXT(P("s0 - 3*((s0 + 1)*s1)"), "s0 - 3*(s1*(s0 + 1))");
  TXT(P("-((s0 + 1)*s1)"), "-(s1*(s0 + 1))");
  SAME(P("(3*(s0 + 1))*s1"), P("s1*(3*s0 + 3)")); /* 3*(sum) distributes first */
  TXT(P("s0 - 5"), "s0 - 5");
  TXT(P("-s0"), "-s0");
  TXT(P("-3*s0*s1"), "-3*s0*s1");
  /* ADD args: terms sorted by base, constant last */
  const sym_expr* sum = P("7 + s1 + s0");
  CHECK(sum && sum->kind == SYM_ADD && sum->n == 3 && sum->args[0] == s0 && sum->args[1] == s1 &&
        sum->args[2]->kind == SYM_CONST);
  /* MUL args: coefficient last */
  const sym_expr* prod = P("s1*5*s0");
  CHECK(prod && prod->kind == SYM_MUL && prod->n == 3 && prod->args[0] == s0 &&
        prod->args[1] == s1 && prod->args[2]->kind == SYM_CONST && prod->args[2]->value == 5);
}

static void test_constant_folding(void) {
  sym_env* env = g_env;
  const sym_expr* c7 = sym_const(env, 7);
  const sym_expr* cm7 = sym_const(env, -7);
  const sym_expr* c2 = sym_const(env, 2);
  const sym_expr* c3 = sym_const(env, 3);
  CONST_IS(sym_add(env, c7, c2), 9);
  CONST_IS(sym_sub(env, c7, c2), 5);
  CONST_IS(sym_mul(env, c7, c2), 14);
  CONST_IS(sym_neg(env, c7), -7);
  CONST_IS(sym_floordiv(env, c7, c2), 3);
  CONST_IS(sym_floordiv(env, cm7, c2), -4);
  CONST_IS(sym_floordiv(env, c7, sym_const(env, -2)), -4);
  CONST_IS(sym_mod(env, cm7, c3), 2);
  CONST_IS(sym_mod(env, c7, sym_const(env, -3)), -2);
  CONST_IS(sym_ceildiv(env, c7, c2), 4);
  CONST_IS(sym_ceildiv(env, cm7, c2), -3);
  CONST_IS(sym_modidx(env, sym_const(env, 37), sym_const(env, 4), c3), 0);
  CONST_IS(sym_modidx(env, sym_const(env, 39), sym_const(env, 4), sym_const(env, 5)), 4);
  CONST_IS(sym_min(env, c7, c2), 2);
  CONST_IS(sym_max(env, c7, cm7), 7);
  CONST_IS(P("(3 + 4)*2 - 10 // 3 + 7 % 4"), 14 - 3 + 3);
  CONST_IS(P("-9223372036854775808"), INT64_MIN);
  CONST_IS(P("9223372036854775807"), INT64_MAX);
  CONST_IS(P("min(4, 2, 9)"), 2);
  CONST_IS(P("max(4, 2, 9)"), 9);
  CONST_IS(P("ceildiv(9, 4)"), 3);
  /* division by constant zero is statically invalid */
  CHECK(sym_floordiv(env, sym_var(env, 0), sym_const(env, 0)) == NULL);
  CHECK(sym_mod(env, sym_var(env, 0), sym_const(env, 0)) == NULL);
  CHECK(sym_ceildiv(env, c7, sym_const(env, 0)) == NULL);
  CHECK(sym_modidx(env, sym_var(env, 0), c2, sym_const(env, 0)) == NULL);
  CHECK(sym_modidx(env, sym_var(env, 0), sym_const(env, 0), c2) == NULL);
  /* NULL propagates */
  CHECK(sym_add(env, NULL, c7) == NULL);
  CHECK(sym_mul(env, c7, NULL) == NULL);
  CHECK(sym_is_const(c7, NULL));
  CHECK(!sym_is_const(sym_var(env, 0), NULL));
  CHECK(!sym_is_const(NULL, NULL));
}

static void test_division_rules(void) {
  sym_env* env = g_env;
  const sym_expr* s0 = sym_var(env, 0);
  const sym_expr* v = sym_var(env, 3);  /* v in [0, 7] */
  const sym_expr* w = sym_var(env, 4);  /* w in [0, 9] */
  const sym_expr* x = sym_var(env, 5);  /* x in [0, 63] */
  const sym_expr* c8 = sym_const(env, 8);

  /* (a*b + c) // b == a + c // b, and c // b == 0 when 0 <= c < b */
  SAME(sym_floordiv(env, sym_add(env, sym_mul(env, s0, c8), v), c8), s0);
  SAME(sym_mod(env, sym_add(env, sym_mul(env, s0, c8), v), c8), v);
  TXT(sym_floordiv(env, sym_add(env, sym_mul(env, s0, c8), w), c8), "s0 + (w//8)");
  SAME(P("(8*s0 + s1 % 8) // 8"), s0);
  SAME(P("(8*s0 + modidx(s1, 4, 8)) // 8"), s0);
  SAME(P("(s0*s1 + v) // s1"), P("s0 + v // s1"));
  SAME(P("(s0*s1 + 1) // s1"), s0); /* s1 >= 2 */
  SAME(P("(s0*s1 + s1) // s1"), P("s0 + 1"));
  TXT(P("(4*s0 + 2) // 8"), "((2*s0 + 1)//4)");
  TXT(P("(6*s0 + 9) // 3"), "2*s0 + 3");
  TXT(P("(6*s0 + 10) // 3"), "2*s0 + 3");
  TXT(P("(6*s0 - 1) // 3"), "2*s0 - 1");
  TXT(P("s0 // -2"), "(-s0//2)");
  SAME(P("s0 // 1"), s0);
  SAME(P("s0 // -1"), P("-s0"));
  CONST_IS(P("s0 // s0"), 1);
  CONST_IS(P("v // 8"), 0);
  CONST_IS(P("(v + 8) // 8"), 1);
  CONST_IS(P("(v - 8) // 8"), -1);
  TXT(P("v // s1"), "(v//s1)");

  /* nested floordiv flattening */
  SAME(P("s0 // 2 // 3"), P("s0 // 6"));
  SAME(P("(x // 4) // 2"), P("x // 8"));
  const sym_expr* a = sym_var(env, 6); /* [1, 1000] */
  const sym_expr* b = sym_var(env, 7); /* [1, 1000] */
  SAME(sym_floordiv(env, sym_floordiv(env, s0, a), b), sym_floordiv(env, s0, sym_mul(env, a, b)));
  /* not flattened when the product could overflow (default ranges reach 2^62) */
  TXT(P("s0 // s1 // s0"), "((s0//s1)//s0)");

  /* modulo */
  CONST_IS(P("s0 % 1"), 0);
  CONST_IS(P("(s0*s1) % s1"), 0);
  CONST_IS(P("(3*s0*s1) % s0"), 0);
  CONST_IS(P("(6*s0) % 3"), 0);
  CONST_IS(P("s0 % s0"), 0);
  SAME(P("(6*s0 + 7) % 3"), P("1"));
  TXT(P("(4*s0 + 2) % 8"), "2*((2*s0 + 1) % 4)");
  SAME(P("(s0*s1 + v) % s1"), P("v % s1"));
  SAME(P("v % 8"), v);
  SAME(P("(v + 8) % 8"), v);
  TXT(P("w % 8"), "(w % 8)");
  SAME(P("(s0 % 16) % 4"), P("s0 % 4"));
  TXT(P("s0 % -3"), "-(-s0 % 3)");

  /* modidx */
  SAME(sym_modidx(env, x, sym_const(env, 4), sym_const(env, 16)), sym_floordiv(env, x, sym_const(env, 4)));
  TXT(sym_modidx(env, x, sym_const(env, 4), sym_const(env, 16)), "(x//4)");
  TXT(sym_modidx(env, x, sym_const(env, 4), sym_const(env, 8)), "modidx(x, 4, 8)");
  TXT(P("modidx(s0, 1, 8)"), "(s0 % 8)");
  SAME(P("(s0 // 4) % 8"), P("modidx(s0, 4, 8)"));
  SAME(P("(s0 % 32) // 4"), P("modidx(s0, 4, 8)"));
  SAME(P("modidx(s0, 2, 16) // 4"), P("modidx(s0, 8, 4)"));
  SAME(P("modidx(s0 + 64, 4, 16)"), P("modidx(s0, 4, 16)"));
  SAME(P("modidx(s0 // 2, 4, 16)"), P("modidx(s0, 8, 16)"));
  CONST_IS(P("modidx(s0, 4, 1)"), 0);
  SAME(P("modidx(s0, 4, 16) % 4"), P("modidx(s0, 4, 4)"));

  /* ceildiv */
  SAME(P("ceildiv(4*s0, 4)"), s0);
  SAME(P("ceildiv(4*s0 + 1, 4)"), P("s0 + 1"));
  SAME(P("ceildiv(4*s0 + 4, 4)"), P("s0 + 1"));
  CONST_IS(P("ceildiv(v + 1, 8)"), 1);
  TXT(P("ceildiv(v, 16)"), "ceildiv(v, 16)"); /* 0 or 1 */
  CONST_IS(P("ceildiv(v - 7, 16)"), 0);
  TXT(P("ceildiv(s0, 4)"), "ceildiv(s0, 4)");
  TXT(P("ceildiv(s0, -4)"), "ceildiv(-s0, 4)");
  TXT(P("ceildiv(2*s0, 4)"), "ceildiv(s0, 2)");
  SAME(P("ceildiv(ceildiv(s0, 2), 3)"), P("ceildiv(s0, 6)"));
}

/* Cases the fuzzer found. */
static void test_regressions(void) {
  sym_env* env = g_env;
  const sym_expr* s0 = sym_var(env, 0);
  const sym_expr* s1 = sym_var(env, 1);
  /* a quotient that is a constant joins the constant term */
  SAME(P("(-20*s0 + 3) // s0"), P("-20 + 3 // s0"));
  const sym_expr* q = P("(-20*s0) // s0 + 1");
  CONST_IS(q, -19);
  /* a quotient that is a sum is flattened into the result */
  SAME(P("((s0 + 1)*s1) // s1"), P("s0 + 1"));
  const sym_expr* e = P("((s0 + 1)*s1 + 2*s1 - 1) // s1");
  SAME(e, P("s0 + 2 + (s1 - 1) // s1"));
  CHECK(e && e->kind == SYM_ADD);
  for (uint32_t i = 0; e && i < e->n; i++) CHECK(e->args[i]->kind != SYM_ADD);
  /* bounds use exact intermediates: ceildiv(INT64_MIN, s0) is > INT64_MIN */
  int64_t lo, hi;
  sym_bounds(env, sym_ceildiv(env, sym_const(env, INT64_MIN), s0), &lo, &hi);
  CHECK(lo <= INT64_MIN / 2 && hi == -2);
  sym_bounds(env, sym_floordiv(env, sym_add_c(env, sym_neg(env, P("x")), INT64_MAX), sym_const(env, 4)), &lo, &hi);
  CHECK(lo == (INT64_MAX - 63) / 4 && hi == INT64_MAX / 4);
  (void)s1;
}

static void test_min_max(void) {
  sym_env* env = g_env;
  const sym_expr* s0 = sym_var(env, 0);
  const sym_expr* s1 = sym_var(env, 1);
  SAME(P("min(s0, s0 + 1)"), s0);
  SAME(P("max(s0, s0 + 1)"), P("s0 + 1"));
  CONST_IS(P("min(s0, 1)"), 1); /* s0 >= 2 */
  SAME(P("max(s0, 1)"), s0);
  SAME(P("max(s0, 2)"), s0);
  TXT(P("min(s0, 8)"), "min(s0, 8)");
  TXT(P("min(8, s0)"), "min(s0, 8)");
  TXT(P("min(s0, s1)"), "min(s0, s1)");
  SAME(P("min(min(s0, s1), s0)"), P("min(s0, s1)"));
  SAME(P("min(s0, min(s1, 3))"), P("min(min(s0, 3), s1)"));
  SAME(P("min(s0, s1, 3, 5)"), P("min(s0, s1, 3)"));
  SAME(P("max(s0, s1, 3, 5)"), P("max(s1, s0, 5)"));
  SAME(P("max(s0, 2*s0)"), P("2*s0"));
  SAME(P("min(s0, s0)"), s0);
  SAME(sym_min(env, s0, s1), sym_min(env, s1, s0));
  TXT(P("max(min(s0, 4), 3)"), "max(min(s0, 4), 3)");
}

static void test_static(void) {
  sym_env* env = g_env;
  const sym_expr* s0 = sym_var(env, 0);
  const sym_expr* s1 = sym_var(env, 1);
  const sym_expr* one = sym_const(env, 1);
  const sym_expr* two = sym_const(env, 2);
  CHECK(sym_static(env, SYM_GE, s0, one) == 1);
  CHECK(sym_static(env, SYM_GT, s0, one) == 1);
  CHECK(sym_static(env, SYM_GE, s0, two) == 1);
  CHECK(sym_static(env, SYM_LT, s0, two) == 0);
  CHECK(sym_static(env, SYM_EQ, s0, one) == 0);
  CHECK(sym_static(env, SYM_NE, s0, one) == 1);
  CHECK(sym_static(env, SYM_EQ, s0, s1) == -1);
  CHECK(sym_static(env, SYM_EQ, s0, s0) == 1);
  CHECK(sym_static(env, SYM_LT, s0, s0) == 0);
  CHECK(sym_static(env, SYM_GT, sym_add_c(env, s0, 1), s0) == 1);
  CHECK(sym_static(env, SYM_LE, sym_add_c(env, s0, 1), s0) == 0);
  CHECK(sym_static(env, SYM_GE, sym_mul(env, s0, s1), sym_const(env, 4)) == 1);
  CHECK(sym_static(env, SYM_EQ, sym_mul(env, s0, s1), sym_const(env, 3)) == 0);
  CHECK(sym_static(env, SYM_LT, P("v"), sym_const(env, 8)) == 1);
  CHECK(sym_static(env, SYM_GE, P("s0 + v"), s0) == 1);
  CHECK(sym_static(env, SYM_LT, P("s0 - s1"), s0) == 1);
  CHECK(sym_static(env, SYM_NE, s0, s1) == -1);

  int64_t lo, hi;
  sym_bounds(env, s0, &lo, &hi);
  CHECK(lo == DEF_LO && hi == DEF_HI);
  sym_bounds(env, P("x // 2"), &lo, &hi);
  CHECK(lo == 0 && hi == 31);
  sym_bounds(env, P("modidx(x, 2, 4)"), &lo, &hi);
  CHECK(lo == 0 && hi == 3);
  sym_bounds(env, P("s0 % s1"), &lo, &hi);
  CHECK(lo == 0 && hi == DEF_HI - 1);
  sym_bounds(env, P("-x"), &lo, &hi);
  CHECK(lo == -63 && hi == 0);
  sym_bounds(env, P("ceildiv(x, 8)"), &lo, &hi);
  CHECK(lo == 0 && hi == 8);
  sym_bounds(env, P("min(x, v)"), &lo, &hi);
  CHECK(lo == 0 && hi == 7);
  sym_bounds(env, P("s0*s1"), &lo, &hi);
  CHECK(lo == 4 && hi == INT64_MAX);
  sym_bounds(env, P("x - 2*v"), &lo, &hi);
  CHECK(lo == -14 && hi == 63);
}

static void test_guards(void) {
  sym_env* env = sym_env_create();
  CHECK(env != NULL);
  if (!env) return;
  sym_env* saved = g_env;
  g_env = env;
  const sym_expr* s0 = new_var(env, "s0", 4, DEF_LO, DEF_HI);
  const sym_expr* s1 = new_var(env, "s1", 4, DEF_LO, DEF_HI);
  const sym_expr* s2 = new_var(env, "s2", 6, DEF_LO, DEF_HI);
  const sym_expr* u0 = new_var(env, "u0", SYM_NO_HINT, 0, DEF_HI);
  bool r = false;
  OK(sym_guard(env, SYM_EQ, s0, s1, &r));
  CHECK(r);
  CHECK(sym_num_guards(env) == 1);
  char buf[64];
  CHECK(sym_guard_format(env, 0, buf, sizeof buf) == strlen("s0 == s1"));
  CHECK(strcmp(buf, "s0 == s1") == 0);
  /* the same question again (either way round) records nothing new */
  OK(sym_guard(env, SYM_EQ, s0, s1, &r));
  OK(sym_guard(env, SYM_EQ, s1, s0, &r));
  CHECK(sym_num_guards(env) == 1);
  /* statically known: nothing recorded */
  OK(sym_guard(env, SYM_GE, s0, sym_const(env, 1), &r));
  CHECK(r);
  OK(sym_guard(env, SYM_LT, s0, sym_const(env, 2), &r));
  CHECK(!r);
  CHECK(sym_num_guards(env) == 1);
  /* false answers record the negation */
  OK(sym_guard(env, SYM_LT, s2, s0, &r));
  CHECK(!r);
  CHECK(sym_num_guards(env) == 2);
  sym_guard_format(env, 1, buf, sizeof buf);
  CHECK(strcmp(buf, "s2 >= s0") == 0);
  OK(sym_guard(env, SYM_GT, sym_mul(env, s0, s1), P("s2 + 9"), &r));
  CHECK(r);
  sym_guard_format(env, 2, buf, sizeof buf);
  CHECK(strcmp(buf, "s0*s1 > s2 + 9") == 0);
  CHECK(sym_guard_format(env, 99, buf, sizeof buf) == 0 && buf[0] == '\0');
  /* two-call convention */
  size_t need = sym_guard_format(env, 2, NULL, 0);
  CHECK(need == strlen("s0*s1 > s2 + 9"));
  char tiny[5];
  CHECK(sym_guard_format(env, 2, tiny, sizeof tiny) == need && strcmp(tiny, "s0*s") == 0);

  /* checking guards with concrete values */
  int64_t good[4] = {4, 4, 6, 0};
  OK(sym_check_guards(env, good, 4));
  int64_t good2[4] = {7, 7, 7, 100};
  OK(sym_check_guards(env, good2, 4));
  int64_t bad[4] = {4, 5, 6, 0};
  STATUS(sym_check_guards(env, bad, 4), INVALID_ARGUMENT, "shape guard s0 == s1 failed: s0=4, s1=5");
  int64_t bad2[4] = {4, 4, 3, 0};
  STATUS(sym_check_guards(env, bad2, 4), INVALID_ARGUMENT, "shape guard s2 >= s0 failed: s0=4, s2=3");
  int64_t bad3[4] = {1, 1, 6, 0};
  STATUS(sym_check_guards(env, bad3, 4), INVALID_ARGUMENT,
         "symbol s0 = 1 is outside its range [2, 4611686018427387904]");
  int64_t bad4[4] = {4, 4, 6, -1};
  STATUS(sym_check_guards(env, bad4, 4), INVALID_ARGUMENT, "symbol u0 = -1 is outside its range");
  STATUS(sym_check_guards(env, good, 2), INVALID_ARGUMENT, "4 needed");

  /* unbacked symbols cannot be decided */
  STATUS(sym_guard(env, SYM_EQ, s0, u0, &r), FAILED_PRECONDITION,
         "cannot decide s0 == u0: u0 has no hint (data-dependent)");
  STATUS(sym_guard(env, SYM_LT, P("u0 + s1"), s2, &r), FAILED_PRECONDITION, "u0 has no hint");
  /* ... unless the answer is static */
  OK(sym_guard(env, SYM_GE, u0, sym_const(env, 0), &r));
  CHECK(r);
  OK(sym_guard(env, SYM_LT, u0, P("u0 + 1"), &r));
  CHECK(r);
  CHECK(!sym_has_hint(env, u0));
  CHECK(sym_has_hint(env, s0));
  CHECK(!sym_has_hint(env, P("u0 + s0")));
  int64_t h = 0;
  CHECK(!sym_hint(env, u0, &h));
  CHECK(sym_hint(env, P("u0 + s0 - u0"), &h) && h == 4);
  CHECK(sym_hint(env, P("s0*s1 + s2 // 4"), &h) && h == 17);
  CHECK(sym_hint(env, P("modidx(s2, 4, 1) + max(s0, s2)"), &h) && h == 6);

  /* user facts */
  size_t n = sym_num_guards(env);
  OK(sym_add_guard(env, SYM_LE, u0, sym_const(env, 100)));
  CHECK(sym_num_guards(env) == n + 1);
  OK(sym_add_guard(env, SYM_GE, u0, sym_const(env, 0))); /* static: skipped */
  CHECK(sym_num_guards(env) == n + 1);
  int64_t big[4] = {4, 4, 6, 101};
  STATUS(sym_check_guards(env, big, 4), INVALID_ARGUMENT, "shape guard u0 <= 100 failed: u0=101");
  /* guard whose evaluation fails */
  OK(sym_add_guard(env, SYM_EQ, P("s0 // (u0 + 1)"), sym_const(env, 0)));
  int64_t ok4[4] = {4, 4, 6, 5};
  OK(sym_check_guards(env, ok4, 4));

  STATUS(sym_guard(env, SYM_EQ, NULL, s0, &r), INVALID_ARGUMENT, NULL);
  STATUS(sym_guard(env, (sym_rel)17, s0, s1, &r), INVALID_ARGUMENT, NULL);
  g_env = saved;
  sym_env_destroy(env);
}

static void test_vars(void) {
  sym_env* env = sym_env_create();
  if (!env) {
    CHECK(env != NULL);
    return;
  }
  const sym_expr* e = NULL;
  OK(sym_new_var(env, "s0", 3, 2, 10, &e));
  CHECK(e && e->kind == SYM_VAR && e->value == 0);
  STATUS(sym_new_var(env, "s0", 3, 2, 10, &e), INVALID_ARGUMENT, "already exists");
  STATUS(sym_new_var(env, "1x", 3, 2, 10, &e), INVALID_ARGUMENT, "identifier");
  STATUS(sym_new_var(env, "", 3, 2, 10, &e), INVALID_ARGUMENT, "identifier");
  STATUS(sym_new_var(env, "a-b", 3, 2, 10, &e), INVALID_ARGUMENT, "identifier");
  STATUS(sym_new_var(env, "min", 3, 2, 10, &e), INVALID_ARGUMENT, "identifier");
  STATUS(sym_new_var(env, "s1", 3, 10, 2, &e), INVALID_ARGUMENT, "empty range");
  STATUS(sym_new_var(env, "s1", 11, 2, 10, &e), INVALID_ARGUMENT, "hint 11 is outside");
  STATUS(sym_new_var(env, NULL, 11, 2, 10, &e), INVALID_ARGUMENT, NULL);
  OK(sym_new_var(env, "_x9", SYM_NO_HINT, INT64_MIN, INT64_MAX, &e));
  CHECK(sym_num_vars(env) == 2);
  CHECK(strcmp(sym_var_name(env, 1), "_x9") == 0);
  CHECK(sym_var_name(env, 2) == NULL);
  CHECK(sym_var_hint(env, 0) == 3 && sym_var_hint(env, 1) == SYM_NO_HINT);
  int64_t lo, hi;
  sym_var_range(env, 0, &lo, &hi);
  CHECK(lo == 2 && hi == 10);
  CHECK(sym_var(env, 1) == e && sym_var(env, 5) == NULL);
  CHECK(sym_find_var(env, "_x9") == 1 && sym_find_var(env, "nope") == -1);
  sym_bounds(env, e, &lo, &hi);
  CHECK(lo == INT64_MIN && hi == INT64_MAX);
  sym_env_destroy(env);
  sym_env_destroy(NULL);
}

static void test_eval(void) {
  sym_env* env = g_env;
  int64_t vals[8] = {10, 3, 0, 5, 9, 40, 7, 11};
  int64_t out = 0;
  OK(sym_eval(P("s0*s1 + 2"), vals, 8, &out));
  CHECK(out == 32);
  OK(sym_eval(P("(s0 - 27) // s1"), vals, 8, &out));
  CHECK(out == -6);
  OK(sym_eval(P("(s0 - 27) % s1"), vals, 8, &out));
  CHECK(out == 1);
  OK(sym_eval(P("modidx(x, 3, 4)"), vals, 8, &out));
  CHECK(out == 1);
  OK(sym_eval(P("ceildiv(s0, s1)"), vals, 8, &out));
  CHECK(out == 4);
  OK(sym_eval(P("ceildiv(-s0, s1)"), vals, 8, &out));
  CHECK(out == -3);
  OK(sym_eval(P("min(s0, s1, 7) + max(s0, w)"), vals, 8, &out));
  CHECK(out == 13);
  /* errors */
  STATUS(sym_eval(P("s0 // s2"), vals, 8, &out), INVALID_ARGUMENT, "division by zero");
  STATUS(sym_eval(P("s0 % s2"), vals, 8, &out), INVALID_ARGUMENT, "division by zero");
  STATUS(sym_eval(P("modidx(s0, 2, s2)"), vals, 8, &out), INVALID_ARGUMENT, "division by zero");
  int64_t big[8] = {(int64_t)1 << 40, (int64_t)1 << 40, 1, 1, 1, 1, 1, 1};
  STATUS(sym_eval(P("s0*s1"), big, 8, &out), INVALID_ARGUMENT, "overflow");
  int64_t big2[8] = {INT64_MAX, 1, 1, 1, 1, 1, 1, 1};
  STATUS(sym_eval(P("s0 + 1"), big2, 8, &out), INVALID_ARGUMENT, "overflow");
  STATUS(sym_eval(P("s0 + s1"), vals, 1, &out), INVALID_ARGUMENT, "no value for symbol");
  STATUS(sym_eval(NULL, vals, 1, &out), INVALID_ARGUMENT, NULL);
  OK(sym_eval(sym_const(env, 5), NULL, 0, &out));
  CHECK(out == 5);
}

static void test_round_trip(void) {
  sym_env* env = g_env;
  static const char* const texts[] = {
      "s0", "42", "-7", "s0 + s1", "s0 - s1", "-s0", "-s0 + 3", "3*s0 - 2*s1 + 4", "s0*s1",
      "s0*s0*s1", "-3*s0*s1 + s0", "(s0 + 1)*(s1 + 2)", "2*((s0 + 1)*s1)", "-((s0 + 1)*s1) + s0",
      "s0 // 2", "(s0 + s1) // 3", "-s0 // 4", "(-3*s0 + 1) // 4", "s0 // s1", "s0 // (s1 + 1)",
      "s0 // (2*s1)", "(s0*s1) // (s1 + 3)", "s0 % 8", "s0 % s1", "(s0 + 3) % (s1 + 1)",
      "(s0 % 8)*s1", "modidx(s0, 4, 8)", "modidx(s0 + s1, s1, 8)", "modidx(s0, 4, s1)",
      "ceildiv(s0, 4)", "ceildiv(s0 + s1, s1)", "min(s0, s1)", "max(s0, s1, 4)", "min(s0, -3)",
      "max(s0 - s1, 0)", "min(s0 // 2, s1 % 3, 7)", "s0 - (s0 // 2)", "2*(s0 // 2) + s0 % 2",
      "-(s0 // 2)", "-(s0 % 5)", "(s0 // 2)*(s1 // 3)", "s1 - 5*(s0 // 2)",
      "-9223372036854775808*s0", "s0 - 9223372036854775807", "s0 + -9223372036854775808",
      "(s0 // -9223372036854775808)", "x - 2*v + modidx(w, 2, 3)", "ceildiv(-s0, s1)",
      "max(min(s0, 4), min(s1, 5))", "(s0 + 1)*(s0 + 1)", "3*(s0 + 1)*(s1 + 2)",
      "((s0 + 1)*s1) // 2", "(s0 - (s0 + 1)*s1) // 2", "s0 % (s1 % 7 + 1)",
  };
  int64_t vals[8] = {11, 5, 0, 3, 4, 21, 2, 3};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    const sym_expr* e = P(texts[i]);
    if (!e) continue;
    size_t n = sym_format(env, e, NULL, 0);
    char* buf = malloc(n + 1);
    if (!buf) continue;
    CHECK(sym_format(env, e, buf, n + 1) == n && strlen(buf) == n);
    const sym_expr* back = NULL;
    ptc_status s = sym_parse(env, buf, n, &back);
    if (s || back != e) {
      g_fail++;
      printf("FAIL round trip of \"%s\": formatted \"%s\", parsed to \"%s\" (%s)\n", texts[i], buf,
             back ? fmt_e(back) : "-", s ? ptc_status_message(s) : "different pointer");
    } else {
      g_pass++;
    }
    ptc_status_destroy(s);
    /* strbuf variant gives the same text */
    ptc_strbuf sb;
    ptc_sb_init(&sb);
    sym_format_sb(env, e, &sb);
    CHECK(!sb.oom && sb.len == n && strcmp(sb.data, buf) == 0);
    ptc_sb_free(&sb);
    free(buf);
    /* evaluating the simplified form agrees with... itself via the text */
    int64_t a = 0, b = 0;
    ptc_status s1 = sym_eval(e, vals, 8, &a);
    ptc_status s2 = back ? sym_eval(back, vals, 8, &b) : NULL;
    CHECK((s1 == NULL) == (s2 == NULL) && (s1 || a == b));
    ptc_status_destroy(s1);
    ptc_status_destroy(s2);
  }
  /* a truncated buffer is NUL-terminated and the full length returned */
  const sym_expr* e = P("s0*s1 + 4");
  char small[6];
  CHECK(sym_format(env, e, small, sizeof small) == 9 && strcmp(small, "s0*s1") == 0);
  CHECK(sym_format(env, e, small, 1) == 9 && small[0] == '\0');
  /* whitespace is free-form */
  SAME(P("  s0*s1+4 "), e);
  SAME(P("\ts0 *\n s1 + 4"), e);
  SAME(P("--s0"), sym_var(env, 0));
  SAME(P("- 5"), sym_const(env, -5));
}

static void test_parse_errors(void) {
  sym_env* env = g_env;
  static const struct {
    const char* text;
    const char* needle;
  } cases[] = {
      {"", "unexpected end of input at position 0"},
      {"   ", "unexpected end of input at position 3"},
      {"s0 +", "unexpected end of input at position 4"},
      {"s0 + foo", "unknown symbol 'foo' at position 5"},
      {"(s0 + 1", "unclosed '(' at position 0"},
      {"s0 $ 1", "unexpected character '$' at position 3"},
      {"s0 s1", "unexpected character 's' at position 3"},
      {"s0)", "unexpected character ')' at position 2"},
      {"99999999999999999999", "integer literal out of range at position 0"},
      {"9223372036854775808", "integer literal out of range at position 0"},
      {"-9223372036854775809", "integer literal out of range at position 1"},
      {"2x", "unexpected character 'x' at position 1"},
      {"min()", "unexpected character ')' at position 4"},
      {"ceildiv(s0)", "ceildiv expects 2 arguments, got 1 at position 0"},
      {"modidx(s0, 1)", "modidx expects 3 arguments, got 2 at position 0"},
      {"foo(s0)", "unknown function 'foo' at position 0"},
      {"s0 // 0", "division by zero at position 3"},
      {"s0 % (s1 - s1)", "division by zero at position 3"},
      {"modidx(s0, 2, 0)", "division by zero at position 0"},
      {"ceildiv(s0, 0)", "division by zero at position 0"},
      {"s0 / 2", "unexpected character '/' at position 3"},
      {"min(s0, s1", "unexpected end of input at position 10"},
      {"s0 +\x01", "unexpected byte 0x01 at position 4"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const sym_expr* e = NULL;
    ptc_status s = sym_parse(env, cases[i].text, strlen(cases[i].text), &e);
    if (!s || ptc_status_code(s) != PTC_CODE_INVALID_ARGUMENT ||
        !strstr(ptc_status_message(s), cases[i].needle)) {
      g_fail++;
      printf("FAIL parse error for \"%s\": got \"%s\", want \"%s\"\n", cases[i].text,
             s ? ptc_status_message(s) : "success", cases[i].needle);
    } else {
      g_pass++;
    }
    ptc_status_destroy(s);
  }
  /* length-delimited: text after len is ignored; embedded NUL is an error */
  const sym_expr* e = NULL;
  OK(sym_parse(env, "s0 + 1garbage", 6, &e));
  SAME(e, P("s0 + 1"));
  STATUS(sym_parse(env, "s0\0+1", 5, &e), INVALID_ARGUMENT, "unexpected byte 0x00 at position 2");
  /* depth limit */
  char deep[1024];
  size_t k = 0;
  for (int i = 0; i < 300; i++) deep[k++] = '(';
  deep[k++] = '1';
  for (int i = 0; i < 300; i++) deep[k++] = ')';
  STATUS(sym_parse(env, deep, k, &e), INVALID_ARGUMENT, "nested too deeply");
  k = 0;
  for (int i = 0; i < 150; i++) deep[k++] = '(';
  deep[k++] = 's';
  deep[k++] = '0';
  for (int i = 0; i < 150; i++) deep[k++] = ')';
  OK(sym_parse(env, deep, k, &e));
  SAME(e, sym_var(env, 0));
  k = 0;
  for (int i = 0; i < 500; i++) deep[k++] = '-';
  deep[k++] = 's';
  deep[k++] = '0';
  STATUS(sym_parse(env, deep, k, &e), INVALID_ARGUMENT, "nested too deeply");
  STATUS(sym_parse(env, NULL, 3, &e), INVALID_ARGUMENT, NULL);
  STATUS(sym_parse(NULL, "s0", 2, &e), INVALID_ARGUMENT, NULL);
}

static void test_clone_import_subst(void) {
  sym_env* src = sym_env_create();
  if (!src) {
    CHECK(src != NULL);
    return;
  }
  sym_env* saved = g_env;
  g_env = src;
  const sym_expr* s0 = new_var(src, "s0", 6, 2, 100);
  const sym_expr* s1 = new_var(src, "s1", 4, 2, 100);
  const sym_expr* e = P("modidx(s0*s1 + 3, 2, 8) + min(s0, s1) - ceildiv(s1, 3)");
  bool r;
  OK(sym_guard(src, SYM_GT, s0, s1, &r));
  CHECK(r);
  char a[256], b[256];
  sym_format(src, e, a, sizeof a);

  sym_env* cl = sym_env_clone(src);
  CHECK(cl != NULL);
  if (cl) {
    CHECK(sym_num_vars(cl) == 2 && strcmp(sym_var_name(cl, 1), "s1") == 0);
    CHECK(sym_var_hint(cl, 0) == 6);
    CHECK(sym_num_guards(cl) == 1);
    sym_guard_format(cl, 0, b, sizeof b);
    CHECK(strcmp(b, "s0 > s1") == 0);
    const sym_expr* ei = sym_import(cl, e);
    CHECK(ei != NULL && ei != e);
    sym_format(cl, ei, b, sizeof b);
    CHECK(strcmp(a, b) == 0);
    const sym_expr* pe = NULL;
    OK(sym_parse(cl, a, strlen(a), &pe));
    CHECK(pe == ei);
    CHECK(sym_import(cl, ei) == ei);
    CHECK(sym_import(cl, sym_var(src, 0)) == sym_var(cl, 0));
    /* the clone evolves independently */
    const sym_expr* c2 = NULL;
    OK(sym_new_var(cl, "s2", 5, 2, 10, &c2));
    CHECK(sym_num_vars(cl) == 3 && sym_num_vars(src) == 2);
    OK(sym_guard(cl, SYM_EQ, sym_var(cl, 0), c2, &r));
    CHECK(!r && sym_num_guards(cl) == 2 && sym_num_guards(src) == 1);
    int64_t vals[3] = {7, 5, 5};
    OK(sym_check_guards(cl, vals, 3));
    vals[1] = 9;
    STATUS(sym_check_guards(cl, vals, 3), INVALID_ARGUMENT, "shape guard s0 > s1 failed: s0=7, s1=9");
    /* importing an expression that uses a symbol the destination lacks */
    const sym_expr* only_in_clone = sym_add(cl, c2, sym_var(cl, 0));
    CHECK(sym_import(src, only_in_clone) == NULL);
    sym_env_destroy(cl);
  }

  /* a separately built env with the same symbols */
  sym_env* other = sym_env_create();
  if (other) {
    g_env = other;
    new_var(other, "s0", 6, 2, 100);
    new_var(other, "s1", 4, 2, 100);
    P("s1*s0 + s1 + 17"); /* different creation order of nodes */
    const sym_expr* ei = sym_import(other, e);
    CHECK(ei != NULL);
    sym_format(other, ei, b, sizeof b);
    CHECK(strcmp(a, b) == 0);
    SAME(P(a), ei);
    sym_env_destroy(other);
    g_env = src;
  }

  /* substitution */
  const sym_expr* four = sym_const(src, 4);
  const sym_expr* repl[2] = {four, NULL};
  SAME(sym_subst(src, P("s0*s1 + s0"), repl), P("4*s1 + 4"));
  CONST_IS(sym_subst(src, P("s0 // 2 + s0 % 3"), repl), 3);
  const sym_expr* repl2[2] = {P("s1 + 1"), P("s0")};
  SAME(sym_subst(src, P("s0 - s1"), repl2), P("s1 + 1 - s0"));
  const sym_expr* none[2] = {NULL, NULL};
  SAME(sym_subst(src, e, none), e);
  SAME(sym_subst(src, e, NULL), e);
  const sym_expr* repl3[2] = {P("2*s1"), NULL};
  SAME(sym_subst(src, P("s0 // s1"), repl3), sym_const(src, 2));
  (void)s0;
  (void)s1;
  g_env = saved;
  sym_env_destroy(src);
}

static void test_overflow(void) {
  sym_env* env = g_env;
  /* a constant or coefficient that does not fit in int64 fails the build
   * (NULL) instead of wrapping */
  const sym_expr* s0 = sym_var(env, 0);
  const sym_expr* big = sym_mul_c(env, s0, INT64_MAX);
  CHECK(big != NULL);
  CHECK(sym_add(env, big, s0) == NULL);
  CHECK(sym_sub(env, big, s0) != NULL);
  CHECK(sym_mul_c(env, big, 2) == NULL);
  CHECK(sym_add_c(env, sym_const(env, INT64_MAX), 1) == NULL);
  CHECK(sym_neg(env, sym_const(env, INT64_MIN)) == NULL);
  CHECK(sym_floordiv(env, sym_const(env, INT64_MIN), sym_const(env, -1)) == NULL);
  CHECK(sym_ceildiv(env, sym_const(env, INT64_MIN), sym_const(env, -1)) == NULL);
  CONST_IS(sym_mod(env, sym_const(env, INT64_MIN), sym_const(env, -1)), 0);
  /* the reassociated constant 2^62 + 2^62 is not representable */
  const sym_expr* e = NULL;
  const char* t1 = "4611686018427387904 + (4611686018427387904 - s0)";
  STATUS(sym_parse(env, t1, strlen(t1), &e), INVALID_ARGUMENT, "integer overflow at position 20");
  const char* t2 = "9223372036854775807 + 1";
  STATUS(sym_parse(env, t2, strlen(t2), &e), INVALID_ARGUMENT, "integer overflow at position 20");
  /* optional rewrites that would overflow are skipped, not failed */
  const sym_expr* m = sym_mul_c(env, s0, INT64_MIN);
  const sym_expr* d = sym_floordiv(env, m, sym_const(env, -1));
  CHECK(d != NULL && d->kind == SYM_FLOORDIV);
  const sym_expr* md = sym_mod(env, sym_add_c(env, m, 1), sym_const(env, -3));
  CHECK(md != NULL);
  CHECK(sym_floordiv(env, s0, sym_const(env, INT64_MIN)) != NULL);
  CHECK(sym_mod(env, s0, sym_const(env, INT64_MIN)) != NULL);
  CHECK(sym_ceildiv(env, s0, sym_const(env, INT64_MIN)) != NULL);
  int64_t lo, hi;
  sym_bounds(env, P("s0*s1*s0"), &lo, &hi);
  CHECK(lo == 8 && hi == INT64_MAX);
  sym_bounds(env, P("-s0*s1"), &lo, &hi);
  CHECK(lo == INT64_MIN && hi == -4);
  int64_t vals[8] = {3, 1, 0, 0, 0, 0, 1, 1};
  int64_t out;
  STATUS(sym_eval(d, vals, 8, &out), INVALID_ARGUMENT, "overflow");
}

static void test_many(void) {
  /* a larger env: many distinct nodes force table growth; all stay unique */
  sym_env* env = sym_env_create();
  if (!env) return;
  const sym_expr* v[20];
  for (int i = 0; i < 20; i++) {
    char name[8];
    snprintf(name, sizeof name, "t%d", i);
    v[i] = new_var(env, name, i + 2, 2, 1000);
  }
  const sym_expr* acc = sym_const(env, 0);
  for (int i = 0; i < 2000; i++) {
    const sym_expr* t = sym_mul(env, v[i % 20], v[(i * 7) % 20]);
    acc = sym_add(env, acc, sym_mul_c(env, t, i % 5 - 2));
    if (i % 97 == 0) acc = sym_floordiv(env, sym_add_c(env, acc, i), v[i % 20]);
  }
  CHECK(acc != NULL);
  sym_env* saved = g_env;
  g_env = env;
  char* text = NULL;
  size_t n = sym_format(env, acc, NULL, 0);
  text = malloc(n + 1);
  if (text) {
    sym_format(env, acc, text, n + 1);
    const sym_expr* back = NULL;
    OK(sym_parse(env, text, n, &back));
    CHECK(back == acc);
    free(text);
  }
  sym_env* cl = sym_env_clone(env);
  CHECK(cl != NULL);
  if (cl) {
    const sym_expr* ia = sym_import(cl, acc);
    CHECK(ia != NULL && ia->id == acc->id);
    sym_env_destroy(cl);
  }
  g_env = saved;
  sym_env_destroy(env);
}

int main(void) {
  g_env = sym_env_create();
  if (!g_env) {
    printf("FAIL: sym_env_create\n");
    return 1;
  }
  new_var(g_env, "s0", 10, DEF_LO, DEF_HI);  /* 0 */
  new_var(g_env, "s1", 3, DEF_LO, DEF_HI);   /* 1 */
  new_var(g_env, "s2", 0, 0, 0);             /* 2 */
  new_var(g_env, "v", 5, 0, 7);              /* 3 */
  new_var(g_env, "w", 9, 0, 9);              /* 4 */
  new_var(g_env, "x", 40, 0, 63);            /* 5 */
  new_var(g_env, "a", 7, 1, 1000);           /* 6 */
  new_var(g_env, "b", 11, 1, 1000);          /* 7 */

  test_hash_consing();
  test_canonical_sums();
  test_constant_folding();
  test_division_rules();
  test_regressions();
  test_min_max();
  test_static();
  test_guards();
  test_vars();
  test_eval();
  test_round_trip();
  test_parse_errors();
  test_clone_import_subst();
  test_overflow();
  test_many();

  sym_env_destroy(g_env);
  printf("test_sym: %d checks passed, %d failed\n", g_pass, g_fail);
  return g_fail ? 1 : 0;
}
