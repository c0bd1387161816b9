/* sym.h - symbolic integer expressions and the shape environment (internal).
 *
 * Expressions are hash-consed inside a sym_env: building the same canonical
 * expression twice returns the same pointer, so equality is `a == b`.
 * Builders canonicalise and simplify as they build (constant folding, sums of
 * products with sorted terms and integer coefficients, FloorDiv/Mod/
 * ModularIndexing/CeilDiv/Min/Max rules, range-aware rewrites using the
 * symbols' value ranges). Expressions live as long as their env.
 *
 * Builders return NULL only on allocation failure or on a statically invalid
 * operation (division/modulo by constant 0); callers report that as an error.
 *
 * Semantics: integer arithmetic on int64; floordiv/mod are Python's floor
 * semantics (mod result has the divisor's sign); modidx(a,d,m) =
 * floordiv(a,d) mod m; ceildiv(a,b) = -floordiv(-a,b).
 *
 * Thread-safety: a sym_env is externally synchronised (like its graph).
 * Expressions are immutable and may be read from any thread.
 */
#ifndef PTC_LIB_SYM_H
#define PTC_LIB_SYM_H

#include "../core/core.h"

typedef enum sym_kind {
  SYM_CONST = 0, /* value */
  SYM_VAR,       /* value = symbol index in the env */
  SYM_ADD,       /* args[0..n): sum of terms; a constant term, if any, is last */
  SYM_MUL,       /* args[0..n): product; a constant coefficient, if any, is last */
  SYM_FLOORDIV,  /* args[0] // args[1] */
  SYM_MOD,       /* args[0] % args[1] (Python semantics) */
  SYM_MODIDX,    /* (args[0] // args[1]) % args[2] */
  SYM_CEILDIV,   /* ceil(args[0] / args[1]) */
  SYM_MIN,       /* min(args[0..n)) */
  SYM_MAX,       /* max(args[0..n)) */
  SYM_KIND_COUNT
} sym_kind;

typedef struct sym_expr sym_expr;
struct sym_expr {
  uint8_t kind;       /* sym_kind */
  uint32_t n;         /* number of args */
  uint32_t id;        /* creation order within the env (dense from 0) */
  uint64_t hash;
  int64_t value;      /* SYM_CONST: the value; SYM_VAR: symbol index */
  const sym_expr* args[];
};

typedef struct sym_env sym_env;

/** Relations used by queries and guards. */
typedef enum sym_rel { SYM_EQ = 0, SYM_NE, SYM_LT, SYM_LE, SYM_GT, SYM_GE } sym_rel;

/* ---- env lifetime ---------------------------------------------------------- */
sym_env* sym_env_create(void);        /* NULL on OOM */
void sym_env_destroy(sym_env* env);   /* accepts NULL */
/** Deep copy: same symbols (same indices), same guards. NULL on OOM. */
sym_env* sym_env_clone(const sym_env* src);
/** Rebuilds `e` (an expression of another env with the same symbol indices,
 * e.g. the source of a clone) inside `dst`. NULL on OOM. */
const sym_expr* sym_import(sym_env* dst, const sym_expr* e);

/* ---- symbols ----------------------------------------------------------------- */
#define SYM_NO_HINT INT64_MIN
/** Creates symbol `name` with a hint (SYM_NO_HINT = unbacked) and inclusive
 * range [lo, hi]. Fails (INVALID_ARGUMENT) on a duplicate or non-identifier
 * name, lo > hi, or a hint outside the range. 0/1 specialisation is the
 * caller's decision (the graph layer returns a constant for hints 0 and 1). */
ptc_status sym_new_var(sym_env* env, const char* name, int64_t hint, int64_t lo,
                       int64_t hi, const sym_expr** out);
size_t sym_num_vars(const sym_env* env);
const char* sym_var_name(const sym_env* env, size_t i);
int64_t sym_var_hint(const sym_env* env, size_t i); /* SYM_NO_HINT if unbacked */
void sym_var_range(const sym_env* env, size_t i, int64_t* lo, int64_t* hi);
const sym_expr* sym_var(const sym_env* env, size_t i); /* the SYM_VAR expr */
/** Index of the symbol called `name`, or -1. */
long sym_find_var(const sym_env* env, const char* name);

/* ---- builders (canonicalising, hash-consed) ---------------------------------- */
const sym_expr* sym_const(sym_env* env, int64_t v);
const sym_expr* sym_add(sym_env* env, const sym_expr* a, const sym_expr* b);
const sym_expr* sym_sub(sym_env* env, const sym_expr* a, const sym_expr* b);
const sym_expr* sym_mul(sym_env* env, const sym_expr* a, const sym_expr* b);
const sym_expr* sym_neg(sym_env* env, const sym_expr* a);
const sym_expr* sym_floordiv(sym_env* env, const sym_expr* a, const sym_expr* b);
const sym_expr* sym_mod(sym_env* env, const sym_expr* a, const sym_expr* b);
const sym_expr* sym_modidx(sym_env* env, const sym_expr* a, const sym_expr* div,
                           const sym_expr* mod);
const sym_expr* sym_ceildiv(sym_env* env, const sym_expr* a, const sym_expr* b);
const sym_expr* sym_min(sym_env* env, const sym_expr* a, const sym_expr* b);
const sym_expr* sym_max(sym_env* env, const sym_expr* a, const sym_expr* b);
/** Convenience: a + c, a * c for an int64 constant c. */
const sym_expr* sym_add_c(sym_env* env, const sym_expr* a, int64_t c);
const sym_expr* sym_mul_c(sym_env* env, const sym_expr* a, int64_t c);
/** Substitutes symbol i by repl[i] (NULL entries keep the symbol). */
const sym_expr* sym_subst(sym_env* env, const sym_expr* e, const sym_expr* const* repl);

/* ---- inspection --------------------------------------------------------------- */
/** True and *v set when `e` is a constant. */
bool sym_is_const(const sym_expr* e, int64_t* v);
/** True if every symbol in `e` has a hint. */
bool sym_has_hint(const sym_env* env, const sym_expr* e);
/** Value of `e` at the hints; false if unbacked or arithmetic fails. */
bool sym_hint(const sym_env* env, const sym_expr* e, int64_t* out);
/** Bounds of `e` from the symbols' ranges (conservative; may be
 * INT64_MIN/INT64_MAX when unknown). */
void sym_bounds(const sym_env* env, const sym_expr* e, int64_t* lo, int64_t* hi);

/* ---- evaluation with concrete symbol values ------------------------------------ */
/** Evaluates `e` with symbol i = values[i] (n_values >= number of symbols used).
 * Errors: INVALID_ARGUMENT on division by zero, overflow, or a missing value. */
ptc_status sym_eval(const sym_expr* e, const int64_t* values, size_t n_values, int64_t* out);

/* ---- questions ---------------------------------------------------------------------- */
/** Statically known: 1 if `a rel b` holds for every value in the symbols'
 * ranges, 0 if it never holds, -1 if unknown. Records nothing. */
int sym_static(const sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b);
/** Guarded: decides `a rel b` statically if possible; otherwise from the
 * hints, recording the guard (or its negation) that makes the answer hold.
 * Errors: FAILED_PRECONDITION if an unbacked symbol is involved
 * ("cannot decide s0 == u0: u0 has no hint (data-dependent)"). */
ptc_status sym_guard(sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b,
                     bool* result);
/** Records `a rel b` as a guard without deciding it (e.g. a user fact). */
ptc_status sym_add_guard(sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b);

/* ---- guards ----------------------------------------------------------------------- */
size_t sym_num_guards(const sym_env* env);
/** Drops guards recorded after the first n (rolls back a failed decision,
 * e.g. a node whose meta function failed). */
void sym_truncate_guards(sym_env* env, size_t n);
/** Text of guard i ("s0 == s1"), two-call buffer convention. */
size_t sym_guard_format(const sym_env* env, size_t i, char* buf, size_t cap);
/** Evaluates all guards with concrete symbol values; on the first failure
 * returns INVALID_ARGUMENT naming it with the values involved, e.g.
 * "shape guard s0 == s1 failed: s0=4, s1=5". Also checks each symbol's range. */
ptc_status sym_check_guards(const sym_env* env, const int64_t* values, size_t n_values);

/* ---- text -------------------------------------------------------------------------- */
/** Formats `e` ("s0*s1 + 4", "(s0//2)", "min(s0, 8)", "modidx(s0, 4, 8)")
 * with the env's symbol names; two-call buffer convention. The text parses
 * back with sym_parse to the same pointer. */
size_t sym_format(const sym_env* env, const sym_expr* e, char* buf, size_t cap);
/** Appends the formatted text to a strbuf. */
void sym_format_sb(const sym_env* env, const sym_expr* e, ptc_strbuf* sb);
/** Parses integers, symbol names, + - * // % unary -, parentheses, and the
 * calls min(a,b,...), max(...), ceildiv(a,b), modidx(a,d,m). Unknown names and
 * syntax errors give INVALID_ARGUMENT naming the position. Depth-limited. */
ptc_status sym_parse(sym_env* env, const char* text, size_t len, const sym_expr** out);

#endif /* PTC_LIB_SYM_H */
