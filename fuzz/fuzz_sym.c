/* fuzz_sym.c - libFuzzer harness for the symbolic-shape engine (lib/sym).
 *
 * The input is decoded into three symbol ranges and a small stack program
 * that builds an expression tree. Every tree node is built twice: through the
 * simplifying builders, and as a naive node of this harness evaluated
 * directly with Python floor semantics. For several assignments of the
 * symbols inside their ranges, wherever the naive evaluation neither divides
 * by zero nor overflows, the simplified expression must evaluate to the same
 * value and lie within sym_bounds; sym_static answers must agree with the
 * values; a builder may return NULL only when the naive node always divides
 * by zero.
 *
 * Overflow: the canonical form re-associates, so it may need a constant or
 * an intermediate value the naive tree never computed (2^62 + (2^62 - x)
 * needs 2^63). Each node gets a magnitude bound `mag` (sum of |coefficient|
 * times the largest |symbol value| per factor, squared at divisions for the
 * divisor products of flattening); below MAG_LIMIT no canonical constant,
 * coefficient or evaluation step can overflow, so there a NULL builder
 * result or an overflowing evaluation is a bug; above it both are allowed. Every simplified node must also survive sym_format -> sym_parse as
 * the same pointer, and sym_import into a clone must give the same text.
 * Any violation calls __builtin_trap().
 *
 * Built with -DFUZZ_SYM_MAIN (and without -fsanitize=fuzzer) it becomes a
 * standalone program that runs the files named on its command line and
 * explains a failure instead of trapping. */
#include "lib/sym/sym.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef FUZZ_SYM_MAIN
static sym_env* g_dbg_env;
static void dbg_fail(int line, const sym_expr* x, const sym_expr* y, const char* what) {
  char a[512] = "", b[512] = "";
  if (x) sym_format(g_dbg_env, x, a, sizeof a);
  if (y) sym_format(g_dbg_env, y, b, sizeof b);
  fprintf(stderr, "fuzz_sym.c:%d: %s\n  x = %s\n  y = %s\n", line, what, a, b);
  abort();
}
#define FAIL(x, y, what) dbg_fail(__LINE__, x, y, what)
#else
#define FAIL(x, y, what) __builtin_trap()
#endif

#define MAX_NODES 64
#define MAX_STACK 16
#define N_ASSIGN 8
#define N_VARS 3
#define MAG_LIMIT 1e18 /* < 2^62 */

enum {
  OP_CONST,
  OP_VAR,
  OP_ADD,
  OP_SUB,
  OP_MUL,
  OP_NEG,
  OP_FLOORDIV,
  OP_MOD,
  OP_MODIDX,
  OP_CEILDIV,
  OP_MIN,
  OP_MAX,
  OP_COUNT
};

typedef struct naive {
  int op;
  int64_t c;
  int var;
  int arg[3];
} naive;

typedef struct reader {
  const uint8_t* p;
  size_t n, pos;
} reader;

static uint8_t rd(reader* r) { return r->pos < r->n ? r->p[r->pos++] : 0; }

static uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- naive semantics (independent of the library) ------------------------------ */

/* 0 ok, 1 division by zero, 2 overflow */
static int n_floordiv(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return 1;
  if (a == INT64_MIN && b == -1) return 2;
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) q -= 1;
  *out = q;
  return 0;
}

static int n_mod(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return 1;
  if (b == -1) {
    *out = 0;
    return 0;
  }
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  *out = r;
  return 0;
}

static int n_eval(const naive* nd, const int64_t* kid, const int64_t* vars, int64_t* out) {
  int64_t t;
  switch (nd->op) {
    case OP_CONST: *out = nd->c; return 0;
    case OP_VAR: *out = vars[nd->var]; return 0;
    case OP_ADD: return __builtin_add_overflow(kid[0], kid[1], out) ? 2 : 0;
    case OP_SUB: return __builtin_sub_overflow(kid[0], kid[1], out) ? 2 : 0;
    case OP_MUL: return __builtin_mul_overflow(kid[0], kid[1], out) ? 2 : 0;
    case OP_NEG: return __builtin_sub_overflow((int64_t)0, kid[0], out) ? 2 : 0;
    case OP_FLOORDIV: return n_floordiv(kid[0], kid[1], out);
    case OP_MOD: return n_mod(kid[0], kid[1], out);
    case OP_MODIDX: {
      int rc = n_floordiv(kid[0], kid[1], &t);
      if (rc) return rc;
      return n_mod(t, kid[2], out);
    }
    case OP_CEILDIV: {
      /* ceil(a / b) == -((-a) // b) */
      int64_t na;
      if (__builtin_sub_overflow((int64_t)0, kid[0], &na)) return 2;
      int rc = n_floordiv(na, kid[1], &t);
      if (rc) return rc;
      return __builtin_sub_overflow((int64_t)0, t, out) ? 2 : 0;
    }
    case OP_MIN: *out = kid[0] < kid[1] ? kid[0] : kid[1]; return 0;
    case OP_MAX: *out = kid[0] > kid[1] ? kid[0] : kid[1]; return 0;
  }
  return 2;
}

static double dmax(double a, double b) { return a > b ? a : b; }

static double magnitude(const naive* nd, const double* kid, const int64_t* lo, const int64_t* hi) {
  double m;
  switch (nd->op) {
    case OP_CONST: return nd->c < 0 ? -(double)nd->c : (double)nd->c;
    case OP_VAR: {
      double a = lo[nd->var] < 0 ? -(double)lo[nd->var] : (double)lo[nd->var];
      double b = hi[nd->var] < 0 ? -(double)hi[nd->var] : (double)hi[nd->var];
      return dmax(1, dmax(a, b));
    }
    case OP_ADD:
    case OP_SUB: return kid[0] + kid[1];
    case OP_MUL: return kid[0] * kid[1];
    case OP_NEG: return kid[0];
    case OP_MIN:
    case OP_MAX: return dmax(kid[0], kid[1]) + 1;
    case OP_MODIDX: m = dmax(kid[0], dmax(kid[1], kid[2])); return m * m + 2;
    default: m = dmax(kid[0], kid[1]); return m * m + 2;
  }
}

static int arity(int op) {
  switch (op) {
    case OP_CONST:
    case OP_VAR: return 0;
    case OP_NEG: return 1;
    case OP_MODIDX: return 3;
    default: return 2;
  }
}

static const sym_expr* build(sym_env* env, const naive* nd, const sym_expr* const* k,
                             const sym_expr* const* vars) {
  switch (nd->op) {
    case OP_CONST: return sym_const(env, nd->c);
    case OP_VAR: return vars[nd->var];
    case OP_ADD: return sym_add(env, k[0], k[1]);
    case OP_SUB: return sym_sub(env, k[0], k[1]);
    case OP_MUL: return sym_mul(env, k[0], k[1]);
    case OP_NEG: return sym_neg(env, k[0]);
    case OP_FLOORDIV: return sym_floordiv(env, k[0], k[1]);
    case OP_MOD: return sym_mod(env, k[0], k[1]);
    case OP_MODIDX: return sym_modidx(env, k[0], k[1], k[2]);
    case OP_CEILDIV: return sym_ceildiv(env, k[0], k[1]);
    case OP_MIN: return sym_min(env, k[0], k[1]);
    case OP_MAX: return sym_max(env, k[0], k[1]);
  }
  return NULL;
}

static int64_t decode_const(reader* r) {
  uint8_t k = rd(r);
  if (k < 192) return (int64_t)(k % 41) - 20;
  if (k < 240) {
    int64_t v = (int64_t)1 << (k - 192) % 40;
    return (k & 1) ? -v : v;
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | rd(r);
  return (int64_t)v;
}

static bool rel_holds(sym_rel rel, int64_t x, int64_t y) {
  switch (rel) {
    case SYM_EQ: return x == y;
    case SYM_NE: return x != y;
    case SYM_LT: return x < y;
    case SYM_LE: return x <= y;
    case SYM_GT: return x > y;
    case SYM_GE: return x >= y;
  }
  return false;
}

static void check_round_trip(sym_env* env, const sym_expr* e) {
  char small[256];
  size_t n = sym_format(env, e, small, sizeof small);
  char* text = small;
  if (n >= sizeof small) {
    text = malloc(n + 1);
    if (!text) return;
    sym_format(env, e, text, n + 1);
  }
  const sym_expr* back = NULL;
  ptc_status s = sym_parse(env, text, n, &back);
  if (s && ptc_status_code(s) == PTC_CODE_RESOURCE_EXHAUSTED) {
    ptc_status_destroy(s);
  } else if (s || back != e) {
    FAIL(e, back, "round trip");
  }
  if (text != small) free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  reader r = {data, size, 0};
  sym_env* env = sym_env_create();
  if (!env) return 0;
#ifdef FUZZ_SYM_MAIN
  g_dbg_env = env;
#endif

  /* symbols */
  int64_t lo[N_VARS], hi[N_VARS];
  const sym_expr* vars[N_VARS];
  static const char* const names[N_VARS] = {"s0", "s1", "s2"};
  for (int i = 0; i < N_VARS; i++) {
    uint8_t a = rd(&r), b = rd(&r);
    lo[i] = (a & 0x80) ? (int64_t)(a % 16) - 8 : (int64_t)(a % 5);
    hi[i] = lo[i] + b % 51;
    ptc_status s = sym_new_var(env, names[i], lo[i] + (hi[i] - lo[i]) / 2, lo[i], hi[i], &vars[i]);
    if (s) {
      ptc_status_destroy(s);
      sym_env_destroy(env);
      return 0;
    }
  }

  /* program */
  naive nodes[MAX_NODES];
  int nn = 0;
  int stack[MAX_STACK];
  int sp = 0;
  while (r.pos < r.n && nn < MAX_NODES) {
    int op = rd(&r) % OP_COUNT;
    naive nd = {op, 0, 0, {-1, -1, -1}};
    int ar = arity(op);
    if (op == OP_CONST) nd.c = decode_const(&r);
    if (op == OP_VAR) nd.var = rd(&r) % N_VARS;
    if (ar > sp) continue;
    if (ar == 0 && sp == MAX_STACK) continue;
    for (int i = ar - 1; i >= 0; i--) nd.arg[i] = stack[--sp];
    nodes[nn] = nd;
    stack[sp++] = nn++;
  }

  /* assignments: the range ends and random interior points */
  uint64_t seed = 0x1234567ull ^ size;
  for (size_t i = 0; i < size; i++) seed = seed * 131 + data[i];
  int64_t assign[N_ASSIGN][N_VARS];
  for (int a = 0; a < N_ASSIGN; a++)
    for (int v = 0; v < N_VARS; v++) {
      uint64_t span = (uint64_t)(hi[v] - lo[v]) + 1;
      assign[a][v] = a == 0 ? lo[v] : a == 1 ? hi[v] : lo[v] + (int64_t)(splitmix(&seed) % span);
    }

  /* build and evaluate */
  const sym_expr* simp[MAX_NODES];
  double mag[MAX_NODES];
  int64_t val[MAX_NODES][N_ASSIGN];
  bool ok[MAX_NODES][N_ASSIGN];
  bool oom = false;
  for (int i = 0; i < nn && !oom; i++) {
    const naive* nd = &nodes[i];
    int ar = arity(nd->op);
    const sym_expr* k[3] = {NULL, NULL, NULL};
    double kmag[3] = {0, 0, 0};
    bool kids_built = true;
    for (int j = 0; j < ar; j++) {
      k[j] = simp[nd->arg[j]];
      kmag[j] = mag[nd->arg[j]];
      if (!k[j]) kids_built = false;
    }
    mag[i] = magnitude(nd, kmag, lo, hi);
    bool small = mag[i] < MAG_LIMIT;
    simp[i] = kids_built ? build(env, nd, k, vars) : NULL;
    bool any_ok = false;
    for (int a = 0; a < N_ASSIGN; a++) {
      int64_t kv[3] = {0, 0, 0};
      bool kok = true;
      for (int j = 0; j < ar; j++) {
        kok &= ok[nd->arg[j]][a];
        kv[j] = val[nd->arg[j]][a];
      }
      ok[i][a] = kok && n_eval(nd, kv, assign[a], &val[i][a]) == 0;
      any_ok |= ok[i][a];
    }
    if (kids_built && !simp[i]) {
      /* NULL: division by a constant zero, a constant beyond int64, or out
       * of memory */
      if (any_ok && small) {
        /* possible only on OOM: probe whether allocation works at all */
        if (sym_const(env, 0x5eed) != NULL) FAIL(k[0], k[1], "builder returned NULL");
        oom = true;
      }
      continue;
    }
    if (!simp[i]) continue;
    check_round_trip(env, simp[i]);
    int64_t blo, bhi;
    sym_bounds(env, simp[i], &blo, &bhi);
    for (int a = 0; a < N_ASSIGN; a++) {
      if (!ok[i][a]) continue;
      int64_t got;
      ptc_status s = sym_eval(simp[i], assign[a], N_VARS, &got);
      if (s) {
        const char* msg = ptc_status_message(s);
        /* never a division by zero where the naive tree has none; overflow
         * only with large magnitudes */
        bool overflow = strstr(msg, "overflow") != NULL;
        ptc_status_destroy(s);
        if (!overflow || small) FAIL(simp[i], NULL, "simplified eval failed");
        continue;
      }
      if (got != val[i][a]) FAIL(simp[i], NULL, "value differs");
      if ((blo != INT64_MIN && got < blo) || (bhi != INT64_MAX && got > bhi))
        FAIL(simp[i], NULL, "value outside bounds");
    }
    /* the value at the hints */
    int64_t hints[N_VARS], hv, ev;
    for (int v = 0; v < N_VARS; v++) hints[v] = sym_var_hint(env, (size_t)v);
    ptc_status se = sym_eval(simp[i], hints, N_VARS, &ev);
    bool hok = sym_hint(env, simp[i], &hv);
    if (hok != (se == NULL) || (hok && hv != ev)) FAIL(simp[i], NULL, "hint");
    ptc_status_destroy(se);
  }

  /* static answers agree with the values */
  for (int i = 0; i + 1 < nn && !oom; i++) {
    for (int step = 1; step <= 2 && i + step < nn; step++) {
      int j = i + step;
      if (!simp[i] || !simp[j]) continue;
      for (int rel = SYM_EQ; rel <= SYM_GE; rel++) {
        int st = sym_static(env, (sym_rel)rel, simp[i], simp[j]);
        if (st < 0) continue;
        for (int a = 0; a < N_ASSIGN; a++) {
          if (!ok[i][a] || !ok[j][a]) continue;
          if (rel_holds((sym_rel)rel, val[i][a], val[j][a]) != (st == 1))
            FAIL(simp[i], simp[j], "static answer");
        }
      }
    }
  }

  /* guards decided from the hints hold at the hints; sym_check_guards agrees
   * with the naive relations on every assignment */
  int gi[4], gj[4];
  sym_rel grel[4];
  bool gres[4];
  int ng = 0;
  for (int i = nn - 1; i >= 1 && ng < 4 && !oom; i -= 2) {
    int j = (i * 7 + 3) % i;
    if (!simp[i] || !simp[j] || mag[i] >= MAG_LIMIT || mag[j] >= MAG_LIMIT) continue;
    sym_rel rel = (sym_rel)((size_t)(i + j) % 6);
    bool res = false;
    ptc_status s = sym_guard(env, rel, simp[i], simp[j], &res);
    if (s) {
      int32_t code = ptc_status_code(s);
      ptc_status_destroy(s);
      /* only an arithmetic error at the hints (or OOM) may refuse */
      if (code != PTC_CODE_INVALID_ARGUMENT && code != PTC_CODE_RESOURCE_EXHAUSTED)
        FAIL(simp[i], simp[j], "sym_guard failed");
      continue;
    }
    gi[ng] = i;
    gj[ng] = j;
    grel[ng] = rel;
    gres[ng] = res;
    ng++;
  }
  if (ng > 0 && !oom) {
    int64_t hints[N_VARS];
    for (int v = 0; v < N_VARS; v++) hints[v] = sym_var_hint(env, (size_t)v);
    ptc_status s = sym_check_guards(env, hints, N_VARS);
    if (s) FAIL(NULL, NULL, ptc_status_message(s));
    for (int a = 0; a < N_ASSIGN; a++) {
      bool all_ok = true, expect = true;
      for (int g = 0; g < ng; g++) {
        if (!ok[gi[g]][a] || !ok[gj[g]][a]) all_ok = false;
        else if (rel_holds(grel[g], val[gi[g]][a], val[gj[g]][a]) != gres[g]) expect = false;
      }
      if (!all_ok) continue;
      s = sym_check_guards(env, assign[a], N_VARS);
      bool passed = s == NULL;
      ptc_status_destroy(s);
      if (passed != expect) FAIL(NULL, NULL, "sym_check_guards disagrees");
    }
  }

  /* hash-consing: commuted builds give the same pointer */
  if (nn >= 2 && simp[nn - 1] && simp[nn - 2] && !oom) {
    const sym_expr* x = simp[nn - 1];
    const sym_expr* y = simp[nn - 2];
    const sym_expr* p1 = sym_add(env, x, y);
    const sym_expr* p2 = sym_add(env, y, x);
    const sym_expr* m1 = sym_mul(env, x, y);
    const sym_expr* m2 = sym_mul(env, y, x);
    if (p1 && p2 && p1 != p2) FAIL(p1, p2, "add not commutative");
    if (m1 && m2 && m1 != m2) FAIL(m1, m2, "mul not commutative");
    if (p1 && sym_sub(env, p1, y) && sym_sub(env, p1, y) != x) FAIL(p1, x, "(x + y) - y");
  }

  /* clone + import keep the text */
  if (nn > 0 && simp[nn - 1] && !oom) {
    sym_env* cl = sym_env_clone(env);
    if (cl) {
      const sym_expr* im = sym_import(cl, simp[nn - 1]);
      if (im) {
        char t1[512], t2[512];
        size_t n1 = sym_format(env, simp[nn - 1], t1, sizeof t1);
        size_t n2 = sym_format(cl, im, t2, sizeof t2);
        if (n1 != n2 || strcmp(t1, t2) != 0) FAIL(simp[nn - 1], NULL, "import");
      }
      sym_env_destroy(cl);
    }
  }

  sym_env_destroy(env);
  return 0;
}

#ifdef FUZZ_SYM_MAIN
int main(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    FILE* f = fopen(argv[i], "rb");
    if (!f) continue;
    uint8_t buf[4096];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
  }
  return 0;
}
#endif
