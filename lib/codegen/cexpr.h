/* cexpr.h - C-family expression emission shared by the code generators
 * (backends/cpu: C11, backends/cuda: CUDA C): the class a dtype is computed
 * in, storage loads and encodings, ATen-exact dtype conversions and
 * literals. What differs between the targets (type spellings, the f16/bf16
 * converters, NaN/inf/int64 spellings) is a const cexpr_dialect each
 * backend defines; the logic is here once.
 *
 * Semantics (as backends/ref): float->int truncates (ptc_f2i), ->bool is
 * != 0, narrow ints wrap, f16/bf16 round to nearest even (ptc_round_f16 /
 * ptc_round_bf16 of the target's prelude), int -> float goes through double.
 */
#ifndef PTC_CODEGEN_CEXPR_H
#define PTC_CODEGEN_CEXPR_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/core.h"

/** Class a dtype's values are computed in. */
typedef enum cexpr_cls {
  CEXPR_F32 = 0, /* f16, bf16, f32: float */
  CEXPR_F64,     /* f64: double */
  CEXPR_INT,     /* i8..i64, u8: 64-bit int, wrapped to the dtype after each op */
  CEXPR_BOOL     /* bool: 8-bit unsigned holding 0/1 */
} cexpr_cls;

/** Spellings of one target language. */
typedef struct cexpr_dialect {
  const char *i8, *i16, *i32, *i64, *u8, *u16; /* integer type names */
  const char *f16_load, *bf16_load;            /* u16 storage -> float */
  const char *f16_store, *bf16_store;          /* float -> u16 storage */
  const char *nan_f, *nan_d;                   /* NaN literals */
  const char *inf_f, *ninf_f, *inf_d, *ninf_d; /* +-inf literals */
  const char* i64_min;                         /* INT64_MIN literal */
  const char *big_pre, *big_post;              /* around an int64 outside int32 */
  const char *true_lit, *false_lit;            /* bool constants */
} cexpr_dialect;

cexpr_cls cexpr_cls_of(int32_t dtype);
/** Type of a class (float, double, the i64 type, the u8 type). */
const char* cexpr_ctype(const cexpr_dialect* d, cexpr_cls c);
/** Type of a dtype's storage (the u16 type for f16/bf16). */
const char* cexpr_storage_type(const cexpr_dialect* d, int32_t dtype);
/** Appends `expr` (a value of dtype `from`) converted to dtype `to`. */
void cexpr_conv(const cexpr_dialect* d, ptc_strbuf* sb, int32_t from, int32_t to,
                const char* expr);
/** Appends the 64-bit int expression `expr` wrapped to integer dtype `to`. */
void cexpr_wrap_int(const cexpr_dialect* d, ptc_strbuf* sb, int32_t to, const char* expr);
/** Appends the value of storage element `ptr[idx]` of dtype dt. */
void cexpr_load(const cexpr_dialect* d, ptc_strbuf* sb, int32_t dt, const char* ptr,
                const char* idx);
/** Appends the storage encoding of `val` (class of dt) for dtype dt. */
void cexpr_encode(const cexpr_dialect* d, ptc_strbuf* sb, int32_t dt, const char* val);
/** Appends a literal of class c for double v / int64 v. */
void cexpr_float_lit(const cexpr_dialect* d, ptc_strbuf* sb, double v, cexpr_cls c);
void cexpr_int_lit(const cexpr_dialect* d, ptc_strbuf* sb, int64_t v);
/** Appends a constant of dtype dt (f for float dtypes, i otherwise), rounded
 * or wrapped to the dtype. */
void cexpr_const(const cexpr_dialect* d, ptc_strbuf* sb, int32_t dt, double f, int64_t i);


/* ---- table ops: math, comparisons, logic, where ----------------------------------- */
/** Dtype a table op's arguments are converted to. */
typedef enum cexpr_dom {
  CEXPR_DOM_RESULT = 0, /* arguments converted to the result dtype */
  CEXPR_DOM_ARGS,       /* arguments converted to their promoted dtype; result bool */
  CEXPR_DOM_WHERE       /* arg0 converted to bool, arg1/arg2 to the result dtype */
} cexpr_dom;

/** One opcode's templates: $0 $1 $2 the converted arguments, $F the libm
 * suffix ("f" for float, "" for double), $S the helper suffix (f32, f64,
 * i64), $T the type of the class, $K the error-context arguments. */
typedef struct cexpr_op_row {
  uint8_t nargs;    /* 0: no row */
  uint8_t dom;      /* cexpr_dom */
  bool int_checked; /* the integer template reports errors */
  const char* f;    /* float/double template; NULL: none */
  const char* i;    /* integer template (bool too unless b is set); NULL: none */
  const char* b;    /* bool template override */
} cexpr_op_row;

#define CEXPR_UN(f, i) {1, CEXPR_DOM_RESULT, false, f, i, NULL}
#define CEXPR_BIN(f, i) {2, CEXPR_DOM_RESULT, false, f, i, NULL}
#define CEXPR_CMP(t) {2, CEXPR_DOM_ARGS, false, t, t, NULL}

/** rows[opcode] when it is a row, else NULL. */
const cexpr_op_row* cexpr_row(const cexpr_op_row* rows, size_t n_rows, uint32_t opcode);
/** Appends the right-hand side of table op `r` (NULL: none) with result
 * dtype `dtype`; `args` are the argument expressions, `arg_dt` their dtypes,
 * `ctx_arg` replaces $K (sets *uses_ctx when the integer template reports
 * errors). Returns false (appending nothing) when there is no template for
 * the dtype. */
bool cexpr_math(const cexpr_dialect* d, const cexpr_op_row* r, ptc_strbuf* sb, int32_t dtype,
                const char* const* args, const int32_t* arg_dt, const char* ctx_arg,
                bool* uses_ctx);

#endif
