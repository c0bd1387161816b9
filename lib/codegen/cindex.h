/* cindex.h - index expressions (sym_exprs of the symbolic engine) printed as
 * C-family integer arithmetic with Python floor semantics, shared by the
 * code generators of backends/cpu and backends/cuda, plus the symbol walks
 * both need (hints, variables, linear coefficients).
 *
 * FloorDiv/Mod/ModularIndexing/CeilDiv use plain `/` and `%` when sign
 * facts (constants, loop variables, symbol ranges) prove the dividend non-negative and the divisor
 * positive, else the prelude's helpers ptc_floordiv, ptc_mod, ptc_ceildiv,
 * ptc_imin, ptc_imax (called as <name><tmpl>(a, b)).
 */
#ifndef PTC_CODEGEN_CINDEX_H
#define PTC_CODEGEN_CINDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "../sym/sym.h"

/** What a backend supplies; `u` is its generator state. */
typedef struct cindex_ops {
  const char* tmpl; /* after helper names: "" (C) or "<IT>" (CUDA templates) */
  const char* who;  /* in error messages: "cpu codegen" */
  void (*print_const)(void* u, ptc_strbuf* sb, int64_t v);
  /* appends the name of a SYM_VAR (or "0" after reporting a failure) */
  void (*print_var)(void* u, ptc_strbuf* sb, const sym_expr* e);
  const sym_env* (*env)(const void* u); /* bounds of symbols and expressions */
  /* whether symbol `var` is a loop variable or an indirect index (>= 0) */
  bool (*loop_var)(const void* u, size_t var);
  /* NULL, or whether `var` is a size symbol (positive if its own range says) */
  bool (*size_var)(const void* u, size_t var);
  void (*fail)(void* u, ptc_status s); /* takes s */
} cindex_ops;

/** Appends index expression e (NULL: "0" and a failure). */
void cindex_print(const cindex_ops* o, void* u, ptc_strbuf* sb, const sym_expr* e);

/** Value of e with the env's hints; symbols without one count as
 * `unbacked` (so does an expression that cannot be evaluated). */
int64_t cindex_hint(const sym_env* env, size_t n_size_syms, const sym_expr* e, int64_t unbacked);

/** Calls fn(u, var) for every symbol occurrence in `e` (NULL: none). */
void cindex_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u);

/** Coefficient c of `var` in e when e is linear in it (a sum of terms var,
 * var*const and terms without var). A product term is recognised as
 * var*const only, or also as const*var when `either_order`. */
bool cindex_coef(const sym_expr* e, const sym_expr* var, bool either_order, int64_t* c);

#endif
