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
 */
#include "cpu_codegen_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- dtype facts --------------------------------------------------------------- */
typedef struct dtype_row {
  uint8_t cls;           /* cg_cls */
  const char* storage;   /* C storage type */
  const char* narrow;    /* cast that wraps an int64 to the dtype, NULL = none */
  int8_t rank;           /* signed ints: i8 < i16 < i32 < i64 (range containment) */
} dtype_row;

static const dtype_row dtype_rows[PTC_DTYPE_COUNT] = {
    [PTC_F32] = {CG_F32, "float", NULL, 0},
    [PTC_F64] = {CG_F64, "double", NULL, 0},
    [PTC_F16] = {CG_F32, "uint16_t", NULL, 0},
    [PTC_BF16] = {CG_F32, "uint16_t", NULL, 0},
    [PTC_I8] = {CG_INT, "int8_t", "int8_t", 1},
    [PTC_I16] = {CG_INT, "int16_t", "int16_t", 2},
    [PTC_I32] = {CG_INT, "int32_t", "int32_t", 3},
    [PTC_I64] = {CG_INT, "int64_t", NULL, 4},
    [PTC_U8] = {CG_INT, "uint8_t", "uint8_t", 1},
    [PTC_BOOL] = {CG_BOOL, "uint8_t", NULL, 0},
};

static const dtype_row* drow(int32_t dt) {
  return dt >= 0 && dt < PTC_DTYPE_COUNT ? &dtype_rows[dt] : &dtype_rows[PTC_F32];
}

cg_cls cg_cls_of(int32_t dtype) { return (cg_cls)drow(dtype)->cls; }

const char* cg_ctype(cg_cls c) {
  static const char* const names[] = {"float", "double", "int64_t", "uint8_t"};
  return names[c];
}

const char* cg_storage_type(int32_t dtype) { return drow(dtype)->storage; }

/* Whether every value of integer dtype `from` is a value of `to`. */
static bool int_fits(int32_t from, int32_t to) {
  if (from == to || to == PTC_I64 || from == PTC_BOOL) return true;
  if (from == PTC_U8) return to == PTC_I16 || to == PTC_I32;
  if (to == PTC_U8) return false;
  return drow(from)->rank <= drow(to)->rank;
}

/* int64 expression wrapped to integer dtype `to`. */
static void wrap_int(ptc_strbuf* sb, int32_t to, const char* expr) {
  const char* n = drow(to)->narrow;
  if (n)
    ptc_sb_printf(sb, "(int64_t)(%s)(%s)", n, expr);
  else
    ptc_sb_append(sb, expr);
}

/* ---- conversions ------------------------------------------------------------------- */
static void conv_to_f32class(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr) {
  ptc_strbuf v;
  ptc_sb_init(&v);
  cg_cls cf = cg_cls_of(from);
  if (cf == CG_F32)
    ptc_sb_append(&v, expr);
  else if (cf == CG_INT)
    ptc_sb_printf(&v, "(float)(double)(%s)", expr); /* ref: int -> double -> float */
  else
    ptc_sb_printf(&v, "(float)(%s)", expr);
  const char* round = to == PTC_F16 ? "ptc_round_f16" : to == PTC_BF16 ? "ptc_round_bf16" : NULL;
  if (round && from != to)
    ptc_sb_printf(sb, "%s(%s)", round, v.data ? v.data : "");
  else
    ptc_sb_append(sb, v.data ? v.data : "");
  if (v.oom) sb->oom = true;
  ptc_sb_free(&v);
}

void cg_conv(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr) {
  if (from == to) {
    ptc_sb_append(sb, expr);
    return;
  }
  cg_cls cf = cg_cls_of(from);
  switch (cg_cls_of(to)) {
    case CG_F32: conv_to_f32class(sb, from, to, expr); return;
    case CG_F64: ptc_sb_printf(sb, "(double)(%s)", expr); return;
    case CG_BOOL: ptc_sb_printf(sb, "(uint8_t)((%s) != 0)", expr); return;
    case CG_INT: break;
  }
  if (cf == CG_F32 || cf == CG_F64) {
    ptc_strbuf v;
    ptc_sb_init(&v);
    ptc_sb_printf(&v, "ptc_f2i((double)(%s))", expr);
    wrap_int(sb, to, v.data ? v.data : "0");
    if (v.oom) sb->oom = true;
    ptc_sb_free(&v);
  } else if (cf == CG_BOOL || int_fits(from, to)) {
    ptc_sb_printf(sb, "(int64_t)(%s)", expr);
  } else {
    wrap_int(sb, to, expr);
  }
}

void cg_load(ptc_strbuf* sb, int32_t dt, const char* ptr, const char* idx) {
  switch (dt) {
    case PTC_F16: ptc_sb_printf(sb, "ptc_f16_to_f32(%s[%s])", ptr, idx); return;
    case PTC_BF16: ptc_sb_printf(sb, "ptc_bf16_to_f32(%s[%s])", ptr, idx); return;
    case PTC_F32:
    case PTC_F64: ptc_sb_printf(sb, "%s[%s]", ptr, idx); return;
    case PTC_BOOL: ptc_sb_printf(sb, "(uint8_t)(%s[%s] != 0)", ptr, idx); return;
    default: ptc_sb_printf(sb, "(int64_t)%s[%s]", ptr, idx); return;
  }
}

void cg_encode(ptc_strbuf* sb, int32_t dt, const char* val) {
  switch (dt) {
    case PTC_F16: ptc_sb_printf(sb, "ptc_f32_to_f16(%s)", val); return;
    case PTC_BF16: ptc_sb_printf(sb, "ptc_f32_to_bf16(%s)", val); return;
    case PTC_F32:
    case PTC_F64:
    case PTC_I64: ptc_sb_append(sb, val); return;
    default: ptc_sb_printf(sb, "(%s)(%s)", cg_storage_type(dt), val); return;
  }
}

/* ---- literals ------------------------------------------------------------------------ */
void cg_float_lit(ptc_strbuf* sb, double v, cg_cls c) {
  bool f32 = c != CG_F64;
  if (f32 && !isnan(v)) v = (double)(float)v;
  if (isnan(v)) {
    ptc_sb_append(sb, f32 ? "NAN" : "(double)NAN");
    return;
  }
  if (isinf(v)) {
    ptc_sb_append(sb, f32 ? (v > 0 ? "INFINITY" : "(-INFINITY)")
                          : (v > 0 ? "(double)INFINITY" : "(-(double)INFINITY)"));
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
  bool has_point = strpbrk(buf, ".e") != NULL;
  ptc_sb_printf(sb, "%s%s%s%s%s", v < 0 ? "(" : "", buf, has_point ? "" : ".0", f32 ? "f" : "",
                v < 0 ? ")" : "");
}

void cg_int_lit(ptc_strbuf* sb, int64_t v) {
  if (v == INT64_MIN)
    ptc_sb_append(sb, "INT64_MIN");
  else if (v >= INT32_MIN && v <= INT32_MAX)
    ptc_sb_printf(sb, v < 0 ? "(%lld)" : "%lld", (long long)v);
  else
    ptc_sb_printf(sb, "INT64_C(%lld)", (long long)v);
}

/* Value of integer v as dtype dt (wrap-around), at codegen time. */
static int64_t wrap_now(int32_t dt, int64_t v) {
  uint64_t u = (uint64_t)v;
  switch (dt) {
    case PTC_I8: return (int8_t)(uint8_t)u;
    case PTC_I16: return (int16_t)(uint16_t)u;
    case PTC_I32: return (int32_t)(uint32_t)u;
    case PTC_U8: return (uint8_t)u;
    case PTC_BOOL: return v != 0;
    default: return v;
  }
}

void cg_const(ptc_strbuf* sb, const ir_op* op) {
  switch (op->dtype) {
    case PTC_F16: cg_float_lit(sb, ptc_f16_to_f32(ptc_f32_to_f16((float)op->f)), CG_F32); return;
    case PTC_BF16: cg_float_lit(sb, ptc_bf16_to_f32(ptc_f32_to_bf16((float)op->f)), CG_F32); return;
    case PTC_F32: cg_float_lit(sb, op->f, CG_F32); return;
    case PTC_F64: cg_float_lit(sb, op->f, CG_F64); return;
    default: cg_int_lit(sb, wrap_now(op->dtype, op->i)); return;
  }
}

/* ---- the opcode table ------------------------------------------------------------------ */
typedef enum dom_rule {
  DOM_RESULT = 0, /* arguments converted to the result dtype */
  DOM_ARGS,       /* arguments converted to their promoted dtype; result bool */
  DOM_WHERE       /* arg0 converted to bool, arg1/arg2 to the result dtype */
} dom_rule;

typedef struct op_row {
  uint8_t nargs;
  uint8_t dom;        /* dom_rule */
  bool int_checked;   /* the integer template reports errors (blocks simd) */
  const char* f;      /* float/double template; NULL: none */
  const char* i;      /* integer template (bool too unless b is set); NULL: none */
  const char* b;      /* bool template override */
} op_row;

#define UN(f, i) {1, DOM_RESULT, false, f, i, NULL}
#define BIN(f, i) {2, DOM_RESULT, false, f, i, NULL}
#define CMP(t) {2, DOM_ARGS, false, t, t, NULL}
#define FLT1(name) UN(name "$F($0)", NULL)

static const op_row op_rows[IR_OPCODE_COUNT] = {
    [IR_NEG] = UN("(-$0)", "ptc_ineg($0)"),
    [IR_ABS] = {1, DOM_RESULT, false, "fabs$F($0)", "ptc_iabs($0)", "$0"},
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
    [IR_RELU] = {1, DOM_RESULT, false, "ptc_relu_$S($0)", "($0 < 0 ? 0 : $0)", "$0"},
    [IR_ERF] = FLT1("erf"),
    [IR_FLOOR] = UN("floor$F($0)", "$0"),
    [IR_CEIL] = UN("ceil$F($0)", "$0"),
    [IR_ROUND] = UN("rint$F($0)", "$0"),
    [IR_TRUNC] = UN("trunc$F($0)", "$0"),
    [IR_RECIPROCAL] = UN("(($T)1 / $0)", NULL),
    [IR_SIGN] = UN("ptc_sign_$S($0)", "(int64_t)(($0 > 0) - ($0 < 0))"),
    [IR_NOT] = {1, DOM_ARGS, false, "($0 == 0)", "($0 == 0)", NULL},
    [IR_ISNAN] = {1, DOM_ARGS, false, "(isnan($0) != 0)", "((void)$0, 0)", NULL},
    [IR_ISINF] = {1, DOM_ARGS, false, "(isinf($0) != 0)", "((void)$0, 0)", NULL},
    [IR_BNOT] = {1, DOM_RESULT, false, NULL, "(~$0)", "($0 == 0)"},
    [IR_ADD] = BIN("($0 + $1)", "ptc_iadd($0, $1)"),
    [IR_SUB] = BIN("($0 - $1)", "ptc_isub($0, $1)"),
    [IR_MUL] = BIN("($0 * $1)", "ptc_imul($0, $1)"),
    [IR_DIV] = {2, DOM_RESULT, true, "($0 / $1)", "ptc_idiv_chk($K, $0, $1)", NULL},
    [IR_FLOORDIV] = {2, DOM_RESULT, true, "ptc_floordiv_$S($0, $1)",
                     "ptc_floordiv_chk($K, $0, $1)", NULL},
    [IR_MOD] = {2, DOM_RESULT, true, "ptc_mod_$S($0, $1)", "ptc_mod_chk($K, $0, $1)", NULL},
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
    [IR_WHERE] = {3, DOM_WHERE, false, "($0 ? $1 : $2)", "($0 ? $1 : $2)", NULL},
};

static const op_row* row_of(uint16_t opcode) {
  if (opcode >= IR_OPCODE_COUNT) return NULL;
  const op_row* r = &op_rows[opcode];
  return r->nargs ? r : NULL;
}

/* Expands template t with the given substitutions. */
static void expand(ptc_strbuf* sb, const char* t, const char* const* args, cg_cls c,
                   const char* ctx_arg) {
  static const char* const lib_suffix[] = {"f", "", "", ""};
  static const char* const helper_suffix[] = {"f32", "f64", "i64", "i64"};
  for (const char* q = t; *q; q++) {
    if (*q != '$' || !q[1]) {
      ptc_sb_appendn(sb, q, 1);
      continue;
    }
    char k = *++q;
    if (k >= '0' && k <= '2')
      ptc_sb_append(sb, args[k - '0']);
    else if (k == 'F')
      ptc_sb_append(sb, lib_suffix[c]);
    else if (k == 'S')
      ptc_sb_append(sb, helper_suffix[c]);
    else if (k == 'T')
      ptc_sb_append(sb, cg_ctype(c));
    else if (k == 'K')
      ptc_sb_append(sb, ctx_arg);
  }
}

/* Dtype the arguments of `op` are converted to. */
static int32_t domain_dtype(const op_row* r, const ir_op* op, const int32_t* arg_dt) {
  if (r->dom != DOM_ARGS) return op->dtype;
  int32_t d = arg_dt[0];
  if (r->nargs > 1) d = ptc_promote_types(d, arg_dt[1]);
  return d;
}

bool cg_math(ptc_strbuf* sb, const ir_op* op, const char* const* args, const int32_t* arg_dt,
             const char* ctx_arg, bool* uses_ctx) {
  const op_row* r = row_of(op->opcode);
  if (!r) return false;
  int32_t dom = domain_dtype(r, op, arg_dt);
  cg_cls c = cg_cls_of(dom);
  const char* t = c == CG_F32 || c == CG_F64 ? r->f : (c == CG_BOOL && r->b) ? r->b : r->i;
  if (!t) return false;
  ptc_strbuf conv[3];
  const char* cargs[3] = {"", "", ""};
  for (int i = 0; i < r->nargs; i++) {
    ptc_sb_init(&conv[i]);
    int32_t to = (r->dom == DOM_WHERE && i == 0) ? PTC_BOOL : dom;
    cg_conv(&conv[i], arg_dt[i], to, args[i]);
    cargs[i] = conv[i].data ? conv[i].data : "0";
  }
  ptc_strbuf e;
  ptc_sb_init(&e);
  expand(&e, t, cargs, c == CG_BOOL ? CG_INT : c, ctx_arg);
  const char* ex = e.data ? e.data : "0";
  if (r->dom == DOM_ARGS)
    ptc_sb_printf(sb, "(uint8_t)%s", ex);
  else if (c == CG_BOOL && !r->b && r->dom != DOM_WHERE)
    ptc_sb_printf(sb, "(uint8_t)((%s) != 0)", ex);
  else if (c == CG_INT && r->dom != DOM_WHERE)
    wrap_int(sb, op->dtype, ex);
  else
    ptc_sb_append(sb, ex);
  if (t == r->i && r->int_checked) *uses_ctx = true;
  for (int i = 0; i < r->nargs; i++) {
    if (conv[i].oom) sb->oom = true;
    ptc_sb_free(&conv[i]);
  }
  if (e.oom) sb->oom = true;
  ptc_sb_free(&e);
  return true;
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
  const op_row* r = row_of(op->opcode);
  cg_cls c = cg_cls_of(op->dtype);
  return r && r->int_checked && (c == CG_INT || c == CG_BOOL);
}
