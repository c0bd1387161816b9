/* sym_eval.c - evaluation of expressions with concrete symbol values
 * (overflow- and division-by-zero-checked, Python floor semantics), the value
 * at the symbols' hints (sym_hint / sym_has_hint), and the integer helpers
 * shared with constant folding. */
#include "sym_internal.h"

#include <stdlib.h>

int sym_i64_floordiv(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return SYM_EVAL_DIV0;
  if (a == INT64_MIN && b == -1) return SYM_EVAL_OVERFLOW;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
  *out = q;
  return SYM_EVAL_OK;
}

int sym_i64_mod(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return SYM_EVAL_DIV0;
  if (b == -1) {
    *out = 0;
    return SYM_EVAL_OK;
  }
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  *out = r;
  return SYM_EVAL_OK;
}

int sym_i64_ceildiv(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return SYM_EVAL_DIV0;
  if (a == INT64_MIN && b == -1) return SYM_EVAL_OVERFLOW;
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0))) q++;
  *out = q;
  return SYM_EVAL_OK;
}

int sym_apply(sym_kind kind, const int64_t* v, uint32_t n, int64_t* out) {
  int64_t acc;
  int rc;
  switch (kind) {
    case SYM_ADD:
      acc = 0;
      for (uint32_t i = 0; i < n; i++)
        if (!ptc_add_ok(acc, v[i], &acc)) return SYM_EVAL_OVERFLOW;
      *out = acc;
      return SYM_EVAL_OK;
    case SYM_MUL:
      acc = 1;
      for (uint32_t i = 0; i < n; i++)
        if (!ptc_mul_ok(acc, v[i], &acc)) return SYM_EVAL_OVERFLOW;
      *out = acc;
      return SYM_EVAL_OK;
    case SYM_FLOORDIV:
      return n == 2 ? sym_i64_floordiv(v[0], v[1], out) : SYM_EVAL_OVERFLOW;
    case SYM_MOD:
      return n == 2 ? sym_i64_mod(v[0], v[1], out) : SYM_EVAL_OVERFLOW;
    case SYM_CEILDIV:
      return n == 2 ? sym_i64_ceildiv(v[0], v[1], out) : SYM_EVAL_OVERFLOW;
    case SYM_MODIDX:
      if (n != 3) return SYM_EVAL_OVERFLOW;
      rc = sym_i64_floordiv(v[0], v[1], &acc);
      if (rc != SYM_EVAL_OK) return rc;
      if (v[2] == 0) return SYM_EVAL_DIV0;
      return sym_i64_mod(acc, v[2], out);
    case SYM_MIN:
    case SYM_MAX:
      if (n == 0) return SYM_EVAL_OVERFLOW;
      acc = v[0];
      for (uint32_t i = 1; i < n; i++) {
        if (kind == SYM_MIN ? v[i] < acc : v[i] > acc) acc = v[i];
      }
      *out = acc;
      return SYM_EVAL_OK;
    default:
      return SYM_EVAL_OVERFLOW;
  }
}

/* ---- sym_eval ---------------------------------------------------------------------- */

#define SYM_EVAL_MAX_DEPTH 10000

typedef struct eval_ctx {
  const int64_t* values;
  size_t n_values;
  ptc_status err;
} eval_ctx;

static bool eval_rec(eval_ctx* c, const sym_expr* e, int depth, int64_t* out) {
  if (depth > SYM_EVAL_MAX_DEPTH) {
    c->err = PTC_ERR(INVALID_ARGUMENT, "sym_eval: expression nested too deeply");
    return false;
  }
  if (e->kind == SYM_CONST) {
    *out = e->value;
    return true;
  }
  if (e->kind == SYM_VAR) {
    if (e->value < 0 || (uint64_t)e->value >= c->n_values) {
      c->err = PTC_ERR(INVALID_ARGUMENT, "sym_eval: no value for symbol index %lld (%zu given)",
                       (long long)e->value, c->n_values);
      return false;
    }
    *out = c->values[e->value];
    return true;
  }
  int64_t small[8] = {0};
  int64_t* v = e->n <= 8 ? small : malloc((size_t)e->n * sizeof *v);
  if (!v) {
    c->err = ptc_status_oom();
    return false;
  }
  bool ok = true;
  for (uint32_t i = 0; i < e->n && ok; i++) ok = eval_rec(c, e->args[i], depth + 1, &v[i]);
  if (ok) {
    int rc = sym_apply((sym_kind)e->kind, v, e->n, out);
    if (rc == SYM_EVAL_DIV0) {
      c->err = PTC_ERR(INVALID_ARGUMENT, "sym_eval: division by zero");
      ok = false;
    } else if (rc != SYM_EVAL_OK) {
      c->err = PTC_ERR(INVALID_ARGUMENT, "sym_eval: integer overflow");
      ok = false;
    }
  }
  if (v != small) free(v);
  return ok;
}

ptc_status sym_eval(const sym_expr* e, const int64_t* values, size_t n_values, int64_t* out) {
  if (!e || !out || (!values && n_values)) return PTC_ERR(INVALID_ARGUMENT, "sym_eval: NULL argument");
  eval_ctx c = {values, n_values, NULL};
  int64_t v;
  if (!eval_rec(&c, e, 0, &v)) return c.err;
  *out = v;
  return PTC_OK;
}

/* ---- hints ------------------------------------------------------------------------- */

/* Value at the hints for an expression of another env (same symbol indices):
 * 1 ok, 0 unbacked, -1 arithmetic error. */
static int foreign_hint(const sym_env* env, const sym_expr* e, int depth, int64_t* out) {
  if (depth > SYM_EVAL_MAX_DEPTH) return -1;
  const sym_node* nd = sym_node_of(env, e);
  if (nd) {
    if (nd->hint_state == SYM_HINT_UNBACKED) return 0;
    if (nd->hint_state == SYM_HINT_ERROR) return -1;
    *out = nd->hint;
    return 1;
  }
  if (e->kind == SYM_CONST) {
    *out = e->value;
    return 1;
  }
  if (e->kind == SYM_VAR) {
    if (e->value < 0 || (uint64_t)e->value >= env->nvars) return 0;
    int64_t h = env->vars[e->value].hint;
    if (h == SYM_NO_HINT) return 0;
    *out = h;
    return 1;
  }
  int64_t small[8] = {0};
  int64_t* v = e->n <= 8 ? small : malloc((size_t)e->n * sizeof *v);
  if (!v) return -1;
  int r = 1;
  for (uint32_t i = 0; i < e->n; i++) {
    int ri = foreign_hint(env, e->args[i], depth + 1, &v[i]);
    if (ri == 0) {
      r = 0;
      break;
    }
    if (ri < 0) r = -1;
  }
  if (r == 1 && sym_apply((sym_kind)e->kind, v, e->n, out) != SYM_EVAL_OK) r = -1;
  if (v != small) free(v);
  return r;
}

bool sym_has_hint(const sym_env* env, const sym_expr* e) {
  if (!env || !e) return false;
  const sym_node* nd = sym_node_of(env, e);
  if (nd) return nd->hint_state != SYM_HINT_UNBACKED;
  int64_t v;
  return foreign_hint(env, e, 0, &v) != 0;
}

bool sym_hint(const sym_env* env, const sym_expr* e, int64_t* out) {
  if (!env || !e) return false;
  int64_t v;
  if (foreign_hint(env, e, 0, &v) != 1) return false;
  if (out) *out = v;
  return true;
}
