/* sym_internal.h - private structures and helpers shared by the lib/sym
 * sources: the env layout, per-expression facts (bounds, value at the hints),
 * hash-consing, canonical term ordering, interval arithmetic and the
 * checked integer operations used by evaluation and constant folding. */
#ifndef PTC_LIB_SYM_INTERNAL_H
#define PTC_LIB_SYM_INTERNAL_H

#include "sym.h"

/* Facts kept for every expression of an env, indexed by expression id. */
typedef struct sym_node {
  const sym_expr* e;
  int64_t lo, hi;     /* bounds; lo == INT64_MIN: none below, hi == INT64_MAX: none above */
  int64_t hint;       /* value at the symbols' hints when hint_state == SYM_HINT_OK */
  uint8_t hint_state; /* SYM_HINT_* */
} sym_node;

/* Ordered so that the maximum over a node's args is the node's state:
 * an unbacked symbol anywhere wins over an arithmetic error. */
enum { SYM_HINT_OK = 0, SYM_HINT_ERROR = 1, SYM_HINT_UNBACKED = 2 };

typedef struct sym_var_info {
  const char* name; /* in the env's arena */
  int64_t hint, lo, hi;
  const sym_expr* expr;
} sym_var_info;

typedef struct sym_guard_rec {
  sym_rel rel;
  const sym_expr* lhs;
  const sym_expr* rhs;
} sym_guard_rec;

struct sym_env {
  ptc_arena arena;        /* expression nodes and symbol names */
  sym_node* nodes;        /* by id */
  size_t count, cap;
  uint32_t* table;        /* open addressing, id + 1 per slot, 0 = empty */
  size_t tcap;            /* power of two */
  sym_var_info* vars;
  size_t nvars, vcap;
  sym_guard_rec* guards;
  size_t nguards, gcap;
  /* Set by a builder that returned NULL because a constant or coefficient of
   * the canonical form does not fit in int64 (not an allocation failure). */
  bool overflow;
};

/* Most arguments one ADD/MUL/MIN/MAX node may have; builders that would
 * exceed it fail like an allocation failure (NULL). */
#define SYM_MAX_ARGS 65536u

/* ---- sym_expr.c: storage and ordering ---------------------------------------- */
/** Hash-consed node (kind, value, args[0..n)); args must belong to `env`.
 * No simplification. NULL on OOM. */
const sym_expr* sym_intern(sym_env* env, sym_kind kind, int64_t value,
                           const sym_expr* const* args, uint32_t n);
/** The facts of `e` if it is an expression of `env`, else NULL. */
const sym_node* sym_node_of(const sym_env* env, const sym_expr* e);
/** Frees the node storage and hash table (not the arena). */
void sym_store_free(sym_env* env);

/** Non-constant factors of a product term: the MUL's args without its
 * coefficient, or `e` itself (through *tmp) for any other expression. */
uint32_t sym_factors(const sym_expr* e, const sym_expr* const** f, const sym_expr** tmp);
/** Coefficient of a term (the MUL's constant, else 1). */
int64_t sym_coef(const sym_expr* e);
/** Total order on the bases (factor lists) of two non-constant terms. */
int sym_base_cmp(const sym_expr* a, const sym_expr* b);
/** Total order on expressions of one env: by id, constants last. */
int sym_expr_cmp(const sym_expr* a, const sym_expr* b);

/** Pointer -> pointer map used as a memo while rebuilding. */
typedef struct sym_map {
  const sym_expr** keys;
  const sym_expr** vals;
  size_t cap, len;
} sym_map;
const sym_expr* sym_map_get(const sym_map* m, const sym_expr* k);
bool sym_map_put(sym_map* m, const sym_expr* k, const sym_expr* v);
void sym_map_free(sym_map* m);

/* ---- sym_simplify.c --------------------------------------------------------------- */
/** Rebuilds `e` (of any env with compatible symbol indices) in `dst` through
 * the builders; symbol i becomes repl[i] when i < nrepl and repl[i] != NULL.
 * NULL on OOM or an unknown symbol index. */
const sym_expr* sym_rebuild(sym_env* dst, const sym_expr* e, const sym_expr* const* repl,
                            size_t nrepl, sym_map* memo);

/* ---- sym_env.c: bounds ------------------------------------------------------------- */
/** Bounds of the node (kind, value, args) from its args' bounds. */
void sym_interval(const sym_env* env, sym_kind kind, int64_t value,
                  const sym_expr* const* args, uint32_t n, int64_t* lo, int64_t* hi);
/** Bounds of a - b (term-wise, without building anything). */
void sym_diff_bounds(const sym_env* env, const sym_expr* a, const sym_expr* b, int64_t* lo,
                     int64_t* hi);

/* ---- sym_eval.c: integer operations -------------------------------------------------- */
enum { SYM_EVAL_OK = 0, SYM_EVAL_DIV0 = 1, SYM_EVAL_OVERFLOW = 2 };
/** Python floor division / modulo / ceiling division; SYM_EVAL_* result. */
int sym_i64_floordiv(int64_t a, int64_t b, int64_t* out);
int sym_i64_mod(int64_t a, int64_t b, int64_t* out);
int sym_i64_ceildiv(int64_t a, int64_t b, int64_t* out);
/** Applies operator `kind` (not CONST/VAR) to argument values v[0..n). */
int sym_apply(sym_kind kind, const int64_t* v, uint32_t n, int64_t* out);

/* ---- sym_text.c ----------------------------------------------------------------------- */
/** Appends "lhs rel rhs" to sb. */
void sym_format_rel_sb(const sym_env* env, sym_rel rel, const sym_expr* a, const sym_expr* b,
                       ptc_strbuf* sb);
const char* sym_rel_str(sym_rel rel);

#endif /* PTC_LIB_SYM_INTERNAL_H */
