/* cuda_cg_ops.c - what one value or op looks like in CUDA C: the class a
 * dtype is computed in, storage loads and encodings (f16/bf16 as u16 with
 * the prelude's converters), ATen-exact conversions, literals, and the
 * per-opcode table of templates for every math, comparison, logical and
 * select op, with the semantics of backends/ref (Python floor division and
 * remainder, NaN-propagating max/min, sign(NaN) = 0, integer wrap-around,
 * float->int truncation).
 *
 * Templates: $0 $1 $2 the converted arguments, $F the math suffix ("f" for
 * float, "" for double), $T the CUDA type, $K the error-reporting arguments
 * of checked integer helpers ("ke, <node>").
 */
#include "cuda_cg_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- dtype facts ------------------------------------------------------------ */
typedef struct dt_row {
  uint8_t cls;          /* cu_cls */
  const char* storage;  /* storage type */
  const char* narrow;   /* cast wrapping an i64 to the dtype; NULL = none */
  int8_t rank;          /* signed ints: i8 < i16 < i32 < i64 */
} dt_row;

static const dt_row dt_rows[PTC_DTYPE_COUNT] = {
    [PTC_F32] = {CU_F32, "float", NULL, 0},  [PTC_F64] = {CU_F64, "double", NULL, 0},
    [PTC_F16] = {CU_F32, "u16", NULL, 0},    [PTC_BF16] = {CU_F32, "u16", NULL, 0},
    [PTC_I8] = {CU_INT, "i8", "i8", 1},      [PTC_I16] = {CU_INT, "i16", "i16", 2},
    [PTC_I32] = {CU_INT, "i32", "i32", 3},   [PTC_I64] = {CU_INT, "i64", NULL, 4},
    [PTC_U8] = {CU_INT, "u8", "u8", 1},      [PTC_BOOL] = {CU_BOOL, "u8", NULL, 0},
};

static const dt_row* drow(int32_t dt) {
  return dt >= 0 && dt < PTC_DTYPE_COUNT ? &dt_rows[dt] : &dt_rows[PTC_F32];
}

cu_cls cu_cls_of(int32_t dtype) { return (cu_cls)drow(dtype)->cls; }

const char* cu_ctype(cu_cls c) {
  static const char* const names[] = {"float", "double", "i64", "u8"};
  return names[c];
}

const char* cu_storage_type(int32_t dtype) { return drow(dtype)->storage; }

/* Whether every value of integer dtype `from` is a value of `to`. */
static bool int_fits(int32_t from, int32_t to) {
  if (from == to || to == PTC_I64 || from == PTC_BOOL) return true;
  if (from == PTC_U8) return to == PTC_I16 || to == PTC_I32;
  if (to == PTC_U8) return false;
  return drow(from)->rank <= drow(to)->rank;
}

static void wrap_int(ptc_strbuf* sb, int32_t to, const char* expr) {
  const char* n = drow(to)->narrow;
  if (n)
    ptc_sb_printf(sb, "(i64)(%s)(%s)", n, expr);
  else
    ptc_sb_append(sb, expr);
}

/* ---- conversions ------------------------------------------------------------- */
static void to_float_class(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr) {
  ptc_strbuf v;
  ptc_sb_init(&v);
  cu_cls cf = cu_cls_of(from);
  if (cf == CU_F32)
    ptc_sb_append(&v, expr);
  else if (cf == CU_INT)
    ptc_sb_printf(&v, "(float)(double)(%s)", expr); /* as ref: int -> double -> float */
  else
    ptc_sb_printf(&v, "(float)(%s)", expr);
  const char* round = to == PTC_F16 ? "ptc_round_f16" : to == PTC_BF16 ? "ptc_round_bf16" : NULL;
  if (round && from != to)
    ptc_sb_printf(sb, "%s(%s)", round, v.data ? v.data : "0");
  else
    ptc_sb_append(sb, v.data ? v.data : "0");
  if (v.oom) sb->oom = true;
  ptc_sb_free(&v);
}

void cu_conv(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr) {
  if (from == to) {
    ptc_sb_append(sb, expr);
    return;
  }
  cu_cls cf = cu_cls_of(from);
  switch (cu_cls_of(to)) {
    case CU_F32: to_float_class(sb, from, to, expr); return;
    case CU_F64: ptc_sb_printf(sb, "(double)(%s)", expr); return;
    case CU_BOOL: ptc_sb_printf(sb, "(u8)((%s) != 0)", expr); return;
    case CU_INT: break;
  }
  if (cf == CU_F32 || cf == CU_F64) {
    ptc_strbuf v;
    ptc_sb_init(&v);
    ptc_sb_printf(&v, "ptc_f2i((double)(%s))", expr);
    wrap_int(sb, to, v.data ? v.data : "0");
    if (v.oom) sb->oom = true;
    ptc_sb_free(&v);
  } else if (cf == CU_BOOL || int_fits(from, to)) {
    ptc_sb_printf(sb, "(i64)(%s)", expr);
  } else {
    wrap_int(sb, to, expr);
  }
}

void cu_load(ptc_strbuf* sb, int32_t dt, const char* ptr, const char* idx) {
  switch (dt) {
    case PTC_F16: ptc_sb_printf(sb, "ptc_h2f(%s[%s])", ptr, idx); return;
    case PTC_BF16: ptc_sb_printf(sb, "ptc_bf2f(%s[%s])", ptr, idx); return;
    case PTC_F32:
    case PTC_F64: ptc_sb_printf(sb, "%s[%s]", ptr, idx); return;
    case PTC_BOOL: ptc_sb_printf(sb, "(u8)(%s[%s] != 0)", ptr, idx); return;
    default: ptc_sb_printf(sb, "(i64)%s[%s]", ptr, idx); return;
  }
}

void cu_encode(ptc_strbuf* sb, int32_t dt, const char* val) {
  switch (dt) {
    case PTC_F16: ptc_sb_printf(sb, "ptc_f2h(%s)", val); return;
    case PTC_BF16: ptc_sb_printf(sb, "ptc_f2bf(%s)", val); return;
    case PTC_F32:
    case PTC_F64:
    case PTC_I64: ptc_sb_append(sb, val); return;
    default: ptc_sb_printf(sb, "(%s)(%s)", cu_storage_type(dt), val); return;
  }
}

/* ---- literals --------------------------------------------------------------------- */
void cu_float_lit(ptc_strbuf* sb, double v, cu_cls c) {
  bool f32 = c != CU_F64;
  if (f32 && !isnan(v)) v = (double)(float)v;
  if (isnan(v)) {
    ptc_sb_append(sb, f32 ? "PTC_NAN_F" : "PTC_NAN_D");
    return;
  }
  if (isinf(v)) {
    ptc_sb_append(sb, f32 ? (v > 0 ? "PTC_INF_F" : "(-PTC_INF_F)")
                          : (v > 0 ? "PTC_INF_D" : "(-PTC_INF_D)"));
    return;
  }
  char buf[64];
  snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
  bool point = strpbrk(buf, ".e") != NULL;
  ptc_sb_printf(sb, "%s%s%s%s%s", v < 0 ? "(" : "", buf, point ? "" : ".0", f32 ? "f" : "",
                v < 0 ? ")" : "");
}

void cu_int_lit(ptc_strbuf* sb, int64_t v) {
  if (v == INT64_MIN)
    ptc_sb_append(sb, "PTC_I64_MIN");
  else if (v >= INT32_MIN && v <= INT32_MAX)
    ptc_sb_printf(sb, v < 0 ? "(%lld)" : "%lld", (long long)v);
  else
    ptc_sb_printf(sb, "(%lldLL)", (long long)v);
}

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

void cu_const(ptc_strbuf* sb, const ir_op* op) {
  switch (op->dtype) {
    case PTC_F16: cu_float_lit(sb, ptc_f16_to_f32(ptc_f32_to_f16((float)op->f)), CU_F32); return;
    case PTC_BF16: cu_float_lit(sb, ptc_bf16_to_f32(ptc_f32_to_bf16((float)op->f)), CU_F32); return;
    case PTC_F32: cu_float_lit(sb, op->f, CU_F32); return;
    case PTC_F64: cu_float_lit(sb, op->f, CU_F64); return;
    case PTC_BOOL: ptc_sb_append(sb, op->i ? "(u8)1" : "(u8)0"); return;
    default: cu_int_lit(sb, wrap_now(op->dtype, op->i)); return;
  }
}

/* ---- the opcode table ---------------------------------------------------------------- */
typedef enum dom_rule {
  DOM_RESULT = 0, /* arguments converted to the result dtype */
  DOM_ARGS,       /* arguments converted to their promoted dtype; result bool */
  DOM_WHERE       /* arg0 converted to bool, arg1/arg2 to the result dtype */
} dom_rule;

typedef struct op_row {
  uint8_t nargs;
  uint8_t dom;        /* dom_rule */
  bool int_checked;   /* the integer template reports errors */
  const char* f;      /* float/double template */
  const char* i;      /* integer template (bool too unless b is set) */
  const char* b;      /* bool override */
} op_row;

#define UN(f, i) {1, DOM_RESULT, false, f, i, NULL}
#define BIN(f, i) {2, DOM_RESULT, false, f, i, NULL}
#define CMP(t) {2, DOM_ARGS, false, t, t, NULL}
#define FN1(name) UN(name "$F($0)", NULL)

static const op_row op_rows[IR_OPCODE_COUNT] = {
    [IR_NEG] = UN("(-$0)", "ptc_ineg($0)"),
    [IR_ABS] = {1, DOM_RESULT, false, "fabs$F($0)", "ptc_iabs($0)", "$0"},
    [IR_EXP] = FN1("exp"),
    [IR_EXP2] = FN1("exp2"),
    [IR_EXPM1] = FN1("expm1"),
    [IR_LOG] = FN1("log"),
    [IR_LOG2] = FN1("log2"),
    [IR_LOG1P] = FN1("log1p"),
    [IR_SQRT] = FN1("sqrt"),
    [IR_RSQRT] = FN1("rsqrt"),
    [IR_SIN] = FN1("sin"),
    [IR_COS] = FN1("cos"),
    [IR_TAN] = FN1("tan"),
    [IR_TANH] = FN1("tanh"),
    [IR_SIGMOID] = UN("ptc_sigmoid($0)", NULL),
    [IR_RELU] = {1, DOM_RESULT, false, "ptc_relu($0)", "($0 < 0 ? (i64)0 : $0)", "$0"},
    [IR_ERF] = FN1("erf"),
    [IR_FLOOR] = UN("floor$F($0)", "$0"),
    [IR_CEIL] = UN("ceil$F($0)", "$0"),
    [IR_ROUND] = UN("rint$F($0)", "$0"),
    [IR_TRUNC] = UN("trunc$F($0)", "$0"),
    [IR_RECIPROCAL] = UN("(($T)1 / $0)", NULL),
    [IR_SIGN] = UN("ptc_sign($0)", "(i64)(($0 > 0) - ($0 < 0))"),
    [IR_NOT] = {1, DOM_ARGS, false, "($0 == 0)", "($0 == 0)", NULL},
    [IR_ISNAN] = {1, DOM_ARGS, false, "ptc_isnan($0)", "((void)$0, false)", NULL},
    [IR_ISINF] = {1, DOM_ARGS, false, "ptc_isinf($0)", "((void)$0, false)", NULL},
    [IR_BNOT] = {1, DOM_RESULT, false, NULL, "(~$0)", "($0 == 0)"},
    [IR_ADD] = BIN("($0 + $1)", "ptc_iadd($0, $1)"),
    [IR_SUB] = BIN("($0 - $1)", "ptc_isub($0, $1)"),
    [IR_MUL] = BIN("($0 * $1)", "ptc_imul($0, $1)"),
    [IR_DIV] = {2, DOM_RESULT, true, "($0 / $1)", "ptc_idiv_chk($K, $0, $1)", NULL},
    [IR_FLOORDIV] = {2, DOM_RESULT, true, "ptc_ffloordiv($0, $1)", "ptc_floordiv_chk($K, $0, $1)",
                     NULL},
    [IR_MOD] = {2, DOM_RESULT, true, "ptc_fmod_py($0, $1)", "ptc_mod_chk($K, $0, $1)", NULL},
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
    [IR_WHERE] = {3, DOM_WHERE, false, "($0 ? $1 : $2)", "($0 ? $1 : $2)", NULL},
};

static const op_row* row_of(uint16_t opcode) {
  if (opcode >= IR_OPCODE_COUNT) return NULL;
  const op_row* r = &op_rows[opcode];
  return r->nargs ? r : NULL;
}

static void expand(ptc_strbuf* sb, const char* t, const char* const* args, cu_cls c,
                   const char* ctx_arg) {
  for (const char* q = t; *q; q++) {
    if (*q != '$' || !q[1]) {
      ptc_sb_appendn(sb, q, 1);
      continue;
    }
    char k = *++q;
    if (k >= '0' && k <= '2')
      ptc_sb_append(sb, args[k - '0']);
    else if (k == 'F')
      ptc_sb_append(sb, c == CU_F32 ? "f" : "");
    else if (k == 'T')
      ptc_sb_append(sb, cu_ctype(c));
    else if (k == 'K')
      ptc_sb_append(sb, ctx_arg);
  }
}

static int32_t domain_dtype(const op_row* r, const ir_op* op, const int32_t* arg_dt) {
  if (r->dom != DOM_ARGS) return op->dtype;
  int32_t d = arg_dt[0];
  if (r->nargs > 1) d = ptc_promote_types(d, arg_dt[1]);
  return d;
}

bool cu_math(ptc_strbuf* sb, const ir_op* op, const char* const* args, const int32_t* arg_dt,
             const char* ctx_arg, bool* uses_err) {
  const op_row* r = row_of(op->opcode);
  if (!r) return false;
  int32_t dom = domain_dtype(r, op, arg_dt);
  cu_cls c = cu_cls_of(dom);
  const char* t = c == CU_F32 || c == CU_F64 ? r->f : (c == CU_BOOL && r->b) ? r->b : r->i;
  if (!t) return false;
  ptc_strbuf conv[3];
  const char* cargs[3] = {"", "", ""};
  for (int i = 0; i < r->nargs; i++) {
    ptc_sb_init(&conv[i]);
    int32_t to = (r->dom == DOM_WHERE && i == 0) ? PTC_BOOL : dom;
    cu_conv(&conv[i], arg_dt[i], to, args[i]);
    cargs[i] = conv[i].data ? conv[i].data : "0";
  }
  ptc_strbuf e;
  ptc_sb_init(&e);
  expand(&e, t, cargs, c == CU_BOOL ? CU_INT : c, ctx_arg);
  const char* ex = e.data ? e.data : "0";
  if (r->dom == DOM_ARGS)
    ptc_sb_printf(sb, "(u8)%s", ex);
  else if (c == CU_BOOL && !r->b && r->dom != DOM_WHERE)
    ptc_sb_printf(sb, "(u8)((%s) != 0)", ex);
  else if (c == CU_INT && r->dom != DOM_WHERE)
    wrap_int(sb, op->dtype, ex);
  else
    ptc_sb_append(sb, ex);
  if (t == r->i && r->int_checked) *uses_err = true;
  for (int i = 0; i < r->nargs; i++) {
    if (conv[i].oom) sb->oom = true;
    ptc_sb_free(&conv[i]);
  }
  if (e.oom) sb->oom = true;
  ptc_sb_free(&e);
  return true;
}
