/* cpu_codegen_ops.c - what one value or op looks like in C: the class a
 * dtype is computed in, storage loads/encodings, ATen-exact conversions,
 * literals, and the per-opcode table of C templates used for every math,
 * comparison, logical and select op (semantics of backends/ref
 * ref_elementwise.c: Python floor division/remainder, NaN-propagating
 * max/min, sign(NaN) = 0, integer wrap-around, float->int truncation).
 *
 * Templates: $0 $1 $2 the (converted) arguments, $F the libm suffix ("f" or
 * ""), $S the helper suffix (f32/f64), $T the C type, $K the error-context
 * arguments of checked integer helpers ("kctx, <node>").
 * The logic (conversions, literals, template expansion) is
 * lib/codegen/cexpr.c, shared by both backends; this file holds the
 * dialect (type and helper spellings) and the opcode table.
 */
#include "cpu_codegen_internal.h"
#include "../../lib/codegen/cexpr.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- dtype facts, conversions, literals: lib/codegen/cexpr.c in C11 spelling ---- */
static const cexpr_dialect c11 = {
    .i8 = "int8_t", .i16 = "int16_t", .i32 = "int32_t", .i64 = "int64_t", .u8 = "uint8_t",
    .u16 = "uint16_t", .f16_load = "ptc_f16_to_f32", .bf16_load = "ptc_bf16_to_f32",
    .f16_store = "ptc_f32_to_f16", .bf16_store = "ptc_f32_to_bf16", .nan_f = "NAN",
    .nan_d = "(double)NAN", .inf_f = "INFINITY", .ninf_f = "(-INFINITY)",
    .inf_d = "(double)INFINITY", .ninf_d = "(-(double)INFINITY)", .i64_min = "INT64_MIN",
    .big_pre = "INT64_C(", .big_post = ")", .true_lit = "1", .false_lit = "0",
};
_Static_assert(CG_F32 == (int)CEXPR_F32 && CG_F64 == (int)CEXPR_F64 &&
                   CG_INT == (int)CEXPR_INT && CG_BOOL == (int)CEXPR_BOOL,
               "cg_cls mirrors cexpr_cls");

cg_cls cg_cls_of(int32_t dtype) { return (cg_cls)cexpr_cls_of(dtype); }
const char* cg_ctype(cg_cls c) { return cexpr_ctype(&c11, (cexpr_cls)c); }
const char* cg_storage_type(int32_t dtype) { return cexpr_storage_type(&c11, dtype); }
void cg_conv(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr) {
  cexpr_conv(&c11, sb, from, to, expr);
}
void cg_load(ptc_strbuf* sb, int32_t dt, const char* ptr, const char* idx) {
  cexpr_load(&c11, sb, dt, ptr, idx);
}
void cg_encode(ptc_strbuf* sb, int32_t dt, const char* val) { cexpr_encode(&c11, sb, dt, val); }
void cg_float_lit(ptc_strbuf* sb, double v, cg_cls c) {
  cexpr_float_lit(&c11, sb, v, (cexpr_cls)c);
}
void cg_int_lit(ptc_strbuf* sb, int64_t v) { cexpr_int_lit(&c11, sb, v); }
void cg_const(ptc_strbuf* sb, const ir_op* op) { cexpr_const(&c11, sb, op->dtype, op->f, op->i); }

/* ---- the opcode table ------------------------------------------------------------------ */
#define UN CEXPR_UN
#define BIN CEXPR_BIN
#define CMP CEXPR_CMP
#define FLT1(name) UN(name "$F($0)", NULL)

static const cexpr_op_row op_rows[IR_OPCODE_COUNT] = {
    [IR_NEG] = UN("(-$0)", "ptc_ineg($0)"),
    [IR_ABS] = {1, CEXPR_DOM_RESULT, false, "fabs$F($0)", "ptc_iabs($0)", "$0"},
    [IR_EXP] = UN("ptc_exp_$S($0)", NULL),
    [IR_EXP2] = FLT1("exp2"),
    [IR_EXPM1] = FLT1("expm1"),
    [IR_LOG] = UN("ptc_log_$S($0)", NULL),
    [IR_LOG2] = FLT1("log2"),
    [IR_LOG1P] = FLT1("log1p"),
    [IR_SQRT] = FLT1("sqrt"),
    [IR_RSQRT] = UN("(($T)1 / sqrt$F($0))", NULL),
    [IR_SIN] = FLT1("sin"),
    [IR_COS] = FLT1("cos"),
    [IR_TAN] = FLT1("tan"),
    [IR_TANH] = UN("ptc_tanh_$S($0)", NULL),
    [IR_SIGMOID] = UN("ptc_sigmoid_$S($0)", NULL),
    [IR_RELU] = {1, CEXPR_DOM_RESULT, false, "ptc_relu_$S($0)", "($0 < 0 ? 0 : $0)", "$0"},
    [IR_ERF] = FLT1("erf"),
    [IR_FLOOR] = UN("floor$F($0)", "$0"),
    [IR_CEIL] = UN("ceil$F($0)", "$0"),
    [IR_ROUND] = UN("rint$F($0)", "$0"),
    [IR_TRUNC] = UN("trunc$F($0)", "$0"),
    [IR_RECIPROCAL] = UN("(($T)1 / $0)", NULL),
    [IR_SIGN] = UN("ptc_sign_$S($0)", "(int64_t)(($0 > 0) - ($0 < 0))"),
    [IR_NOT] = {1, CEXPR_DOM_ARGS, false, "($0 == 0)", "($0 == 0)", NULL},
    [IR_ISNAN] = {1, CEXPR_DOM_ARGS, false, "(isnan($0) != 0)", "((void)$0, 0)", NULL},
    [IR_ISINF] = {1, CEXPR_DOM_ARGS, false, "(isinf($0) != 0)", "((void)$0, 0)", NULL},
    [IR_BNOT] = {1, CEXPR_DOM_RESULT, false, NULL, "(~$0)", "($0 == 0)"},
    [IR_ADD] = BIN("($0 + $1)", "ptc_iadd($0, $1)"),
    [IR_SUB] = BIN("($0 - $1)", "ptc_isub($0, $1)"),
    [IR_MUL] = BIN("($0 * $1)", "ptc_imul($0, $1)"),
    [IR_DIV] = {2, CEXPR_DOM_RESULT, true, "($0 / $1)", "ptc_idiv_chk($K, $0, $1)", NULL},
    [IR_FLOORDIV] = {2, CEXPR_DOM_RESULT, true, "ptc_floordiv_$S($0, $1)",
                     "ptc_floordiv_chk($K, $0, $1)", NULL},
    [IR_MOD] = {2, CEXPR_DOM_RESULT, true, "ptc_mod_$S($0, $1)", "ptc_mod_chk($K, $0, $1)", NULL},
    [IR_POW] = BIN("pow$F($0, $1)", "ptc_ipow($0, $1)"),
    [IR_MAX] = BIN("ptc_max_$S($0, $1)", "($0 > $1 ? $0 : $1)"),
    [IR_MIN] = BIN("ptc_min_$S($0, $1)", "($0 < $1 ? $0 : $1)"),
    [IR_ATAN2] = BIN("atan2$F($0, $1)", NULL),
    [IR_EQ] = CMP("($0 == $1)"),
    [IR_NE] = CMP("($0 != $1)"),
    [IR_LT] = CMP("($0 < $1)"),
    [IR_LE] = CMP("($0 <= $1)"),
    [IR_GT] = CMP("($0 > $1)"),
    [IR_GE] = CMP("($0 >= $1)"),
    [IR_AND] = CMP("($0 != 0 && $1 != 0)"),
    [IR_OR] = CMP("($0 != 0 || $1 != 0)"),
    [IR_XOR] = CMP("(($0 != 0) != ($1 != 0))"),
    [IR_BAND] = BIN(NULL, "($0 & $1)"),
    [IR_BOR] = BIN(NULL, "($0 | $1)"),
    [IR_BXOR] = BIN(NULL, "($0 ^ $1)"),
    [IR_WHERE] = {3, CEXPR_DOM_WHERE, false, "($0 ? $1 : $2)", "($0 ? $1 : $2)", NULL},
};

static const cexpr_op_row* row_of(uint16_t opcode) {
  return cexpr_row(op_rows, IR_OPCODE_COUNT, opcode);
}

bool cg_math(ptc_strbuf* sb, const ir_op* op, const char* const* args, const int32_t* arg_dt,
             const char* ctx_arg, bool* uses_ctx) {
  return cexpr_math(&c11, row_of(op->opcode), sb, op->dtype, args, arg_dt, ctx_arg, uses_ctx);
}

bool cg_op_fast_trig(const ir_op* op) {
  return (op->opcode == IR_SIN || op->opcode == IR_COS) && cg_cls_of(op->dtype) == CG_F32;
}

bool cg_op_blocks_simd(const ir_op* op) {
  switch (op->opcode) {
    case IR_RAND:
    case IR_RANDN:
    case IR_INDIRECT: return true;
    default: break;
  }
  const cexpr_op_row* r = row_of(op->opcode);
  cg_cls c = cg_cls_of(op->dtype);
  return r && r->int_checked && (c == CG_INT || c == CG_BOOL);
}
