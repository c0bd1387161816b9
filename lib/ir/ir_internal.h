/* ir_internal.h - private helpers of lib/ir shared by the program code, the
 * body builder, the dump, the lowering and the interpreter: symbol
 * predicates over expressions, and scalar conversion with ATen semantics
 * (one place for "how a value of dtype A becomes dtype B"). */
#ifndef PTC_LIB_IR_INTERNAL_H
#define PTC_LIB_IR_INTERNAL_H

#include "ir.h"

/* Upper bound of loop and indirect index variables. */
#define IR_INDEX_MAX ((int64_t)1 << 62)

/* A predicate over symbol indices, for ir_expr_mentions. */
typedef struct ir_sym_pred ir_sym_pred;
struct ir_sym_pred {
  bool (*fn)(const ir_sym_pred* self, size_t sym);
  const ir_program* p;
  const void* data;
};
/** True if e mentions a symbol for which pred holds. */
bool ir_expr_mentions(const sym_expr* e, const ir_sym_pred* pred);

/* ---- scalars (ir_scalar.c) ----------------------------------------------------------
 * A scalar of some dtype: floating dtypes use f, integer and bool dtypes use
 * i. Conversions follow ATen (and the ref backend's storage conversions):
 * float -> int truncates toward zero through int64 then wraps, -> bool is
 * v != 0, int -> int wraps, -> f16/bf16 rounds to nearest even via f32. */
typedef struct ir_scalar {
  double f;
  int64_t i;
} ir_scalar;

ir_scalar ir_scalar_of_f(double v, int32_t dtype);  /* v converted to dtype */
ir_scalar ir_scalar_of_i(int64_t v, int32_t dtype); /* v converted to dtype */
ir_scalar ir_scalar_convert(ir_scalar v, int32_t from, int32_t to);
/** Rounds a float result to dtype (f32/f16/bf16 rounding; f64 unchanged). */
double ir_round_float(double v, int32_t dtype);
/** Wraps an integer result to dtype (i8/i16/i32/u8 wrap, bool = v != 0). */
int64_t ir_wrap_int(int64_t v, int32_t dtype);
/** Element load/store of raw storage. */
ir_scalar ir_scalar_load(const void* storage, int32_t dtype, int64_t elem);
void ir_scalar_store(void* storage, int32_t dtype, int64_t elem, ir_scalar v);

/* Names for dumps. */
const char* ir_rtype_name(ir_rtype rt);
const char* ir_activation_name(ir_activation a);
const char* ir_extern_kind_name(ir_extern_kind k);

#endif /* PTC_LIB_IR_INTERNAL_H */
