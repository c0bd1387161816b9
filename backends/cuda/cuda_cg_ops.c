/* cuda_cg_ops.c - what one value or op looks like in CUDA C: the class a
 * dtype is computed in, storage loads and encodings (f16/bf16 as u16 with
 * the prelude's converters), ATen-exact conversions, literals, and the
 * per-opcode table of templates for every math, comparison, logical and
 * select op, with the semantics of backends/ref (Python floor division and
 * remainder, NaN-propagating max/min, sign(NaN) = 0, integer wrap-around,
 * float->int truncation).
 * Float32 exp and sigmoid take Inductor's fast forms (the prelude's
 * "fast math" section: ex2.approx, div.full); sin, cos and sigmoid of
 * f16/bf16 graph ops (IR_MATH_LOWP) approximations far more accurate than
 * the op's f16/bf16 rounding; everything else is precise.
 *
 * Templates: $0 $1 $2 the converted arguments, $F the math suffix ("f" for
 * float, "" for double), $T the CUDA type, $K the error-reporting arguments
 * of checked integer helpers ("ke, <node>").
 * The logic (conversions, literals, template expansion) is
 * lib/codegen/cexpr.c, shared by both backends; this file holds the
 * dialect (type and helper spellings) and the opcode table.
 */
#include "cuda_cg_internal.h"
#include "../../lib/codegen/cexpr.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtype facts, conversions, literals: lib/codegen/cexpr.c in CUDA spelling ---- */
static const cexpr_dialect cuda_c = {
    .i8 = "i8", .i16 = "i16", .i32 = "i32", .i64 = "i64", .u8 = "u8", .u16 = "u16",
    .f16_load = "ptc_h2f", .bf16_load = "ptc_bf2f", .f16_store = "ptc_f2h",
    .bf16_store = "ptc_f2bf", .nan_f = "PTC_NAN_F", .nan_d = "PTC_NAN_D",
    .inf_f = "PTC_INF_F", .ninf_f = "(-PTC_INF_F)", .inf_d = "PTC_INF_D",
    .ninf_d = "(-PTC_INF_D)", .i64_min = "PTC_I64_MIN", .big_pre = "(", .big_post = "LL)",
    .true_lit = "(u8)1", .false_lit = "(u8)0",
};
_Static_assert(CU_F32 == (int)CEXPR_F32 && CU_F64 == (int)CEXPR_F64 &&
                   CU_INT == (int)CEXPR_INT && CU_BOOL == (int)CEXPR_BOOL,
               "cu_cls mirrors cexpr_cls");

cu_cls cu_cls_of(int32_t dtype) { return (cu_cls)cexpr_cls_of(dtype); }
const char* cu_ctype(cu_cls c) { return cexpr_ctype(&cuda_c, (cexpr_cls)c); }
const char* cu_storage_type(int32_t dtype) { return cexpr_storage_type(&cuda_c, dtype); }
void cu_conv(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr) {
  cexpr_conv(&cuda_c, sb, from, to, expr);
}
void cu_load(ptc_strbuf* sb, int32_t dt, const char* ptr, const char* idx) {
  cexpr_load(&cuda_c, sb, dt, ptr, idx);
}
void cu_encode(ptc_strbuf* sb, int32_t dt, const char* val) { cexpr_encode(&cuda_c, sb, dt, val); }
void cu_float_lit(ptc_strbuf* sb, double v, cu_cls c) {
  cexpr_float_lit(&cuda_c, sb, v, (cexpr_cls)c);
}
void cu_int_lit(ptc_strbuf* sb, int64_t v) { cexpr_int_lit(&cuda_c, sb, v); }
void cu_const(ptc_strbuf* sb, const ir_op* op) { cexpr_const(&cuda_c, sb, op->dtype, op->f, op->i); }

/* ---- the opcode table ---------------------------------------------------------------- */
#define UN CEXPR_UN
#define BIN CEXPR_BIN
#define CMP CEXPR_CMP
#define FN1(name) UN(name "$F($0)", NULL)

static const cexpr_op_row op_rows[IR_OPCODE_COUNT] = {
    [IR_NEG] = UN("(-$0)", "ptc_ineg($0)"),
    [IR_ABS] = {1, CEXPR_DOM_RESULT, false, "fabs$F($0)", "ptc_iabs($0)", "$0"},
    [IR_EXP] = UN("ptc_exp($0)", NULL), /* f32: ex2.approx as Inductor (prelude) */
    [IR_EXP2] = FN1("exp2"),
    [IR_EXPM1] = FN1("expm1"),
    [IR_LOG] = FN1("log"),
    [IR_LOG2] = FN1("log2"),
    [IR_LOG1P] = FN1("log1p"),
    [IR_SQRT] = FN1("sqrt"),
    [IR_RSQRT] = FN1("rsqrt"),
    [IR_SIN] = FN1("sin"), /* f32 vector paths: ptc_sin_v (cuda_cg_body.c) */
    [IR_COS] = FN1("cos"),
    [IR_TAN] = FN1("tan"),
    [IR_TANH] = FN1("tanh"),
    [IR_SIGMOID] = UN("ptc_sigmoid_fast($0)", NULL), /* f32: 1 / (1 + exp(-x)) as Inductor */
    [IR_RELU] = {1, CEXPR_DOM_RESULT, false, "ptc_relu($0)", "($0 < 0 ? (i64)0 : $0)", "$0"},
    [IR_ERF] = FN1("erf"),
    [IR_FLOOR] = UN("floor$F($0)", "$0"),
    [IR_CEIL] = UN("ceil$F($0)", "$0"),
    [IR_ROUND] = UN("rint$F($0)", "$0"),
    [IR_TRUNC] = UN("trunc$F($0)", "$0"),
    [IR_RECIPROCAL] = UN("(($T)1 / $0)", NULL),
    [IR_SIGN] = UN("ptc_sign($0)", "(i64)(($0 > 0) - ($0 < 0))"),
    [IR_NOT] = {1, CEXPR_DOM_ARGS, false, "($0 == 0)", "($0 == 0)", NULL},
    [IR_ISNAN] = {1, CEXPR_DOM_ARGS, false, "ptc_isnan($0)", "((void)$0, false)", NULL},
    [IR_ISINF] = {1, CEXPR_DOM_ARGS, false, "ptc_isinf($0)", "((void)$0, false)", NULL},
    [IR_BNOT] = {1, CEXPR_DOM_RESULT, false, NULL, "(~$0)", "($0 == 0)"},
    [IR_ADD] = BIN("($0 + $1)", "ptc_iadd($0, $1)"),
    [IR_SUB] = BIN("($0 - $1)", "ptc_isub($0, $1)"),
    [IR_MUL] = BIN("($0 * $1)", "ptc_imul($0, $1)"),
    [IR_DIV] = {2, CEXPR_DOM_RESULT, true, "($0 / $1)", "ptc_idiv_chk($K, $0, $1)", NULL},
    [IR_FLOORDIV] = {2, CEXPR_DOM_RESULT, true, "ptc_ffloordiv($0, $1)", "ptc_floordiv_chk($K, $0, $1)",
                     NULL},
    [IR_MOD] = {2, CEXPR_DOM_RESULT, true, "ptc_fmod_py($0, $1)", "ptc_mod_chk($K, $0, $1)", NULL},
    [IR_POW] = BIN("pow$F($0, $1)", "ptc_ipow($0, $1)"),
    [IR_MAX] = BIN("ptc_fmax($0, $1)", "($0 > $1 ? $0 : $1)"),
    [IR_MIN] = BIN("ptc_fmin($0, $1)", "($0 < $1 ? $0 : $1)"),
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

/* sin, cos and sigmoid of f16/bf16 graph ops (IR_MATH_LOWP, computed in
 * float): the prelude's approximations, whose errors are far below the
 * f16/bf16 rounding of the op's value (see the prelude and docs/cuda.md).
 * PTC_CUDA_LOWP_MATH (read at code generation): unset = the default
 * (sin.approx/cos.approx after the range reduction), "poly" (polynomial sin
 * and cos, relative accuracy also next to their zeros), "precise" (sinf,
 * cosf and the float32 sigmoid, as for float32 ops). */
static const cexpr_op_row lowp_rows[3][3] = {
    {UN("ptc_sin_lowp($0)", NULL), UN("ptc_cos_lowp($0)", NULL), UN("ptc_sigmoid_lowp($0)", NULL)},
    {UN("ptc_sin_lowp_poly($0)", NULL), UN("ptc_cos_lowp_poly($0)", NULL),
     UN("ptc_sigmoid_lowp($0)", NULL)},
    {FN1("sin"), FN1("cos"), UN("ptc_sigmoid_fast($0)", NULL)},
};

static int lowp_mode(void) {
  const char* e = getenv("PTC_CUDA_LOWP_MATH");
  if (!e || !*e) return 0;
  return strcmp(e, "poly") == 0 ? 1 : strcmp(e, "precise") == 0 ? 2 : 0;
}

static const cexpr_op_row* row_of(const ir_op* op) {
  if ((op->i & IR_MATH_LOWP) && op->dtype == PTC_F32) {
    int f = op->opcode == IR_SIN ? 0 : op->opcode == IR_COS ? 1 : op->opcode == IR_SIGMOID ? 2 : -1;
    if (f >= 0) return &lowp_rows[lowp_mode()][f];
  }
  return cexpr_row(op_rows, IR_OPCODE_COUNT, op->opcode);
}

bool cu_math(ptc_strbuf* sb, const ir_op* op, const char* const* args, const int32_t* arg_dt,
             const char* ctx_arg, bool* uses_err) {
  return cexpr_math(&cuda_c, row_of(op), sb, op->dtype, args, arg_dt, ctx_arg, uses_err);
}
