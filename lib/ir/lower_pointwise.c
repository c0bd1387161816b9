/* lower_pointwise.c - lowerings of the elementwise ops into lazy loaders.
 *
 * Type promotion follows the ref backend (backends/ref/ref_elementwise.c):
 * each operand is converted to the op's compute dtype `cdt` (a unary op's
 * floating output dtype or its input's dtype; a binary op's floating output
 * dtype or ATen's common dtype, so comparisons happen in the promoted
 * dtype), then widened to the math dtype (f16/bf16 compute in f32; bool
 * arithmetic in i64 as ATen's integer path), the op runs, and the result is
 * converted to the output dtype. Python scalars (attributes) are converted
 * to cdt at lowering time and become constants.
 */
#include "lower_internal.h"

#include <math.h>
#include <string.h>

typedef struct pw_operand {
  const lval* v;   /* tensor operand; NULL: scalar s (or absent when `absent`) */
  bool absent;
  ir_scalar s;     /* scalar value, of dtype tdt */
  int32_t tdt;     /* dtype the operand is converted to */
  int32_t mdt;     /* dtype it is computed in */
} pw_operand;

typedef struct pw_data pw_data;
typedef ir_val (*pw_emit_fn)(lower_ctx* L, const pw_data* d, const ir_val* x);

struct pw_data {
  uint32_t n;
  pw_operand op[3];
  pw_emit_fn emit;
  ir_opcode opc;
  int32_t mdt;     /* math dtype of the result */
  int32_t out_dt;
  uint32_t rank;
  const sym_expr** shape;
  ir_scalar k;     /* parameter: alpha (add/sub), 10^decimals (round) */
  uint32_t flags;
};

/* Emits operand k converted to its math dtype. */
static ir_val load_operand(lower_ctx* L, const pw_data* d, uint32_t k,
                           const sym_expr* const* idx) {
  const pw_operand* o = &d->op[k];
  if (o->absent) return -1;
  if (!o->v) return lower_emit_const(L, ir_scalar_convert(o->s, o->tdt, o->mdt), o->mdt);
  const sym_expr* bi[PTC_MAX_RANK + 1];
  lower_bcast_index(L, o->v, d->rank, d->shape, idx, bi);
  return lower_load_math(L, o->v, bi, o->tdt, o->mdt);
}

static bool is_lowp(int32_t dt) { return dt == PTC_F16 || dt == PTC_BF16; }

static ir_val emit_identity(lower_ctx* L, const pw_data* d, const ir_val* x);

static ir_val pw_load(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const pw_data* d = v->data;
  ir_val x[3] = {-1, -1, -1};
  for (uint32_t k = 0; k < d->n; k++) x[k] = load_operand(L, d, k, idx);
  ir_val r = d->emit(L, d, x);
  if (r < 0 || !ir_body_ok(L->body)) return -1;
  int32_t rdt = L->body->ops[r].dtype;
  ir_val out = lower_convert(L, r, rdt, d->out_dt);
  /* an op's own rounding of its f32 result may be skipped by the ops that
   * read it; an explicit cast (to_dtype) rounds whatever happens */
  if (d->emit == emit_identity)
    lower_note_rounding(L, out, false);
  else if (out != r && rdt == PTC_F32 && is_lowp(d->out_dt))
    lower_note_rounding(L, out, true);
  return out;
}

/* The dtype selections (where, masked_fill) compute in: the output dtype,
 * or f32 for f16/bf16 when the lowering keeps f32 values between ops (the
 * same result: a selection of rounded values is the rounded selection). */
static int32_t select_dtype(const lower_ctx* L, int32_t dt) {
  return L->o.lowp_f32_math && is_lowp(dt) ? PTC_F32 : dt;
}

static pw_data* pw_new(lower_ctx* L, const lval* out, pw_emit_fn emit, uint32_t n) {
  pw_data* d = lower_alloc(L, sizeof *d);
  if (!d) return NULL;
  d->n = n;
  d->emit = emit;
  d->out_dt = out->dtype;
  d->rank = out->rank;
  d->shape = out->shape;
  return d;
}

static void tensor_op(pw_operand* o, const lval* v, int32_t tdt, int32_t mdt) {
  o->v = v;
  o->tdt = tdt;
  o->mdt = mdt;
}

/* Scalar attribute `name` as an operand (absent if missing). */
static void scalar_op(pw_operand* o, const gnode* n, const char* name, int32_t tdt, int32_t mdt) {
  int cat = lower_attr_cat(n, name);
  o->tdt = tdt;
  o->mdt = mdt;
  o->absent = cat < 0;
  if (cat == 2)
    o->s = ir_scalar_of_f(lower_attr_float(n, name, 0), tdt);
  else if (cat >= 0)
    o->s = ir_scalar_of_i(lower_attr_int(n, name, 0), tdt);
}

/* Tensor input k if present, else scalar attribute `name`. */
static void input_or_scalar(lower_ctx* L, pw_operand* o, const gnode* n, uint32_t k,
                            const char* name, int32_t tdt, int32_t mdt) {
  lval* v = lower_in(L, n, k);
  if (v)
    tensor_op(o, v, tdt, mdt);
  else
    scalar_op(o, n, name, tdt, mdt);
}

static ptc_status finish(lval* out, pw_data* d) {
  if (!d) return ptc_status_oom();
  lval_lazy(out, out->dtype, out->rank, out->shape, pw_load, d);
  return PTC_OK;
}

static int32_t math_of(int32_t cdt) { return lower_opmath(cdt); }

/* ---- unary ops ------------------------------------------------------------------------- */

enum { INT_OK = 0, INT_IDENT = 1, INT_FALSE = 2, PRED = 4 };

typedef struct unary_row {
  const char* name;
  ir_opcode opc;
  uint32_t flags;
} unary_row;

static const unary_row unary_rows[] = {
    {"neg", IR_NEG, INT_OK},          {"abs", IR_ABS, INT_OK},
    {"exp", IR_EXP, INT_OK},          {"exp2", IR_EXP2, INT_OK},
    {"expm1", IR_EXPM1, INT_OK},      {"log", IR_LOG, INT_OK},
    {"log2", IR_LOG2, INT_OK},        {"log1p", IR_LOG1P, INT_OK},
    {"sqrt", IR_SQRT, INT_OK},        {"rsqrt", IR_RSQRT, INT_OK},
    {"sin", IR_SIN, INT_OK},          {"cos", IR_COS, INT_OK},
    {"tan", IR_TAN, INT_OK},          {"tanh", IR_TANH, INT_OK},
    {"sigmoid", IR_SIGMOID, INT_OK},  {"relu", IR_RELU, INT_OK},
    {"erf", IR_ERF, INT_OK},          {"floor", IR_FLOOR, INT_IDENT},
    {"ceil", IR_CEIL, INT_IDENT},     {"trunc", IR_TRUNC, INT_IDENT},
    {"round", IR_ROUND, INT_IDENT},   {"reciprocal", IR_RECIPROCAL, INT_OK},
    {"sign", IR_SIGN, INT_OK},        {"logical_not", IR_NOT, PRED},
    {"isnan", IR_ISNAN, PRED | INT_FALSE}, {"isinf", IR_ISINF, PRED | INT_FALSE},
};

static const unary_row* find_unary(const char* name) {
  for (size_t i = 0; i < sizeof unary_rows / sizeof unary_rows[0]; i++)
    if (strcmp(unary_rows[i].name, name) == 0) return &unary_rows[i];
  return NULL;
}

static ir_val emit_unary(lower_ctx* L, const pw_data* d, const ir_val* x) {
  bool fl = ptc_dtype_is_float(d->mdt);
  if (!fl && (d->flags & INT_IDENT)) return x[0];
  if (!fl && (d->flags & INT_FALSE)) return ir_ops_const_i(L->body, 0, PTC_BOOL);
  /* sin / cos / sigmoid whose graph dtype is f16/bf16: a device may
   * approximate them (ir.h, IR_MATH_LOWP) */
  bool approx = d->opc == IR_SIN || d->opc == IR_COS || d->opc == IR_SIGMOID;
  int64_t flags = approx && L->o.lowp_f32_math && is_lowp(d->out_dt) && d->mdt == PTC_F32
                      ? IR_MATH_LOWP
                      : 0;
  return ir_ops_unary_flags(L->body, d->opc, x[0], (d->flags & PRED) ? PTC_BOOL : d->mdt, flags);
}

/* Sets up a one-operand pointwise value computed in the unary rule's dtype. */
static pw_data* unary_data(lower_ctx* L, const gnode* n, lval* out, pw_emit_fn emit) {
  lval* x = lower_in(L, n, 0);
  int32_t cdt = ptc_dtype_is_float(out->dtype) ? out->dtype : x->dtype;
  pw_data* d = pw_new(L, out, emit, 1);
  if (!d) return NULL;
  d->mdt = math_of(cdt);
  tensor_op(&d->op[0], x, cdt, d->mdt);
  return d;
}

static ptc_status lower_unary(lower_ctx* L, const gnode* n, lval* out) {
  const unary_row* row = find_unary(n->op->name);
  pw_data* d = unary_data(L, n, out, emit_unary);
  if (!row || !d) return row ? ptc_status_oom() : PTC_ERR(INTERNAL, "no unary row");
  d->opc = row->opc;
  d->flags = row->flags;
  return finish(out, d);
}

static ir_val cf(lower_ctx* L, double v, int32_t dt) { return ir_ops_const_f(L->body, v, dt); }
static ir_val bin(lower_ctx* L, ir_opcode op, ir_val a, ir_val b, int32_t dt) {
  return ir_ops_binary(L->body, op, a, b, dt);
}

/* gelu: 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation. */
static ir_val emit_gelu(lower_ctx* L, const pw_data* d, const ir_val* x) {
  int32_t t = d->mdt;
  ir_val inner;
  if (d->flags) {
    ir_val x3 = bin(L, IR_MUL, bin(L, IR_MUL, x[0], x[0], t), x[0], t);
    ir_val s = bin(L, IR_ADD, x[0], bin(L, IR_MUL, x3, cf(L, 0.044715, t), t), t);
    inner = ir_ops_unary(L->body, IR_TANH, bin(L, IR_MUL, s, cf(L, 0.79788456080286535588, t), t),
                         t);
  } else {
    inner = ir_ops_unary(L->body, IR_ERF, bin(L, IR_MUL, x[0], cf(L, 0.70710678118654752440, t), t),
                         t);
  }
  ir_val half = bin(L, IR_MUL, x[0], cf(L, 0.5, t), t);
  return bin(L, IR_MUL, half, bin(L, IR_ADD, inner, cf(L, 1.0, t), t), t);
}

static ptc_status lower_gelu(lower_ctx* L, const gnode* n, lval* out) {
  pw_data* d = unary_data(L, n, out, emit_gelu);
  if (d) d->flags = strcmp(lower_attr_str(n, "approximate", "none"), "tanh") == 0;
  return finish(out, d);
}

/* silu: x / (1 + exp(-x)). */
static ir_val emit_silu(lower_ctx* L, const pw_data* d, const ir_val* x) {
  int32_t t = d->mdt;
  ir_val e = ir_ops_unary(L->body, IR_EXP, ir_ops_unary(L->body, IR_NEG, x[0], t), t);
  return bin(L, IR_DIV, x[0], bin(L, IR_ADD, e, cf(L, 1.0, t), t), t);
}

static ptc_status lower_silu(lower_ctx* L, const gnode* n, lval* out) {
  return finish(out, unary_data(L, n, out, emit_silu));
}

/* round(decimals): scale by 10^|decimals| in the op-math dtype, round half
 * to even, scale back (ATen). */
static ir_val emit_round_dec(lower_ctx* L, const pw_data* d, const ir_val* x) {
  int32_t t = d->mdt;
  ir_val ten = cf(L, d->k.f, t);
  if (d->flags) {
    ir_val r = ir_ops_unary(L->body, IR_ROUND, bin(L, IR_DIV, x[0], ten, t), t);
    return bin(L, IR_MUL, r, ten, t);
  }
  ir_val r = ir_ops_unary(L->body, IR_ROUND, bin(L, IR_MUL, x[0], ten, t), t);
  return bin(L, IR_DIV, r, ten, t);
}

static ptc_status lower_round(lower_ctx* L, const gnode* n, lval* out) {
  int64_t dec = lower_attr_int(n, "decimals", 0);
  if (dec == 0) return lower_unary(L, n, out);
  pw_data* d = unary_data(L, n, out, emit_round_dec);
  if (!d) return ptc_status_oom();
  d->flags = dec < 0;
  d->k.f = ir_round_float(pow(10.0, (double)(dec < 0 ? -dec : dec)), d->mdt);
  return finish(out, d);
}

/* ---- binary ops ------------------------------------------------------------------------- */

enum { B_ALPHA = 1, B_BOOL = 2, B_DIV = 4 };
enum { DIV_TRUE = 0, DIV_TRUNC = 8, DIV_FLOOR = 16 };

/* pow(tensor, constant scalar) as ATen's pow_tensor_scalar computes it
 * (Pow.cpp: exponent 0 fills 1, exponent 1 copies; PowKernel.cpp/.cu:
 * 0.5 -> sqrt, -0.5 -> rsqrt, -1 -> reciprocal for floating dtypes, then
 * 2 -> x*x, 3 -> x*x*x, -2 -> 1/(x*x)); integer dtypes keep their exact,
 * wrapping integer semantics (x*x*x wraps like powi). Other exponents stay
 * IR_POW. Stored in pw_data.flags above the binary flags. */
enum {
  PK_NONE = 0, PK_ZERO, PK_ONE, PK_SQUARE, PK_CUBE, PK_INV_SQUARE, PK_SQRT, PK_RSQRT, PK_RECIP
};
enum { PK_SHIFT = 8 };

static uint32_t pow_kind(const pw_operand* e, int32_t cdt) {
  if (e->v || e->absent) return PK_NONE;
  bool fl = ptc_dtype_is_float(cdt);
  double v = fl ? e->s.f : (double)e->s.i;
  if (v == 0) return PK_ZERO;
  if (v == 1) return PK_ONE;
  if (v == 2) return PK_SQUARE;
  if (v == 3) return PK_CUBE;
  if (!fl) return PK_NONE; /* negative integer exponents of integers: an error (meta) */
  if (v == -2) return PK_INV_SQUARE;
  if (v == 0.5) return PK_SQRT;
  if (v == -0.5) return PK_RSQRT;
  if (v == -1) return PK_RECIP;
  return PK_NONE;
}

static ir_val emit_pow_kind(lower_ctx* L, uint32_t pk, ir_val x, int32_t t) {
  switch (pk) {
    case PK_ZERO: return lower_emit_const(L, ir_scalar_of_i(1, t), t);
    case PK_ONE: return x;
    case PK_SQUARE: return bin(L, IR_MUL, x, x, t);
    case PK_CUBE: return bin(L, IR_MUL, bin(L, IR_MUL, x, x, t), x, t);
    case PK_INV_SQUARE: return bin(L, IR_DIV, cf(L, 1.0, t), bin(L, IR_MUL, x, x, t), t);
    case PK_SQRT: return ir_ops_unary(L->body, IR_SQRT, x, t);
    case PK_RSQRT: return ir_ops_unary(L->body, IR_RSQRT, x, t);
    default: return ir_ops_unary(L->body, IR_RECIPROCAL, x, t);
  }
}

typedef struct binary_row {
  const char* name;
  ir_opcode opc;
  uint32_t flags;
} binary_row;

static const binary_row binary_rows[] = {
    {"add", IR_ADD, B_ALPHA},           {"sub", IR_SUB, B_ALPHA},
    {"mul", IR_MUL, 0},                 {"div", IR_DIV, B_DIV},
    {"remainder", IR_MOD, 0},           {"pow", IR_POW, 0},
    {"maximum", IR_MAX, 0},             {"minimum", IR_MIN, 0},
    {"atan2", IR_ATAN2, 0},             {"eq", IR_EQ, B_BOOL},
    {"ne", IR_NE, B_BOOL},              {"lt", IR_LT, B_BOOL},
    {"le", IR_LE, B_BOOL},              {"gt", IR_GT, B_BOOL},
    {"ge", IR_GE, B_BOOL},              {"logical_and", IR_AND, B_BOOL},
    {"logical_or", IR_OR, B_BOOL},      {"logical_xor", IR_XOR, B_BOOL},
    {"bitwise_and", IR_BAND, 0},        {"bitwise_or", IR_BOR, 0},
    {"bitwise_xor", IR_BXOR, 0},
};

static const binary_row* find_binary(const char* name) {
  for (size_t i = 0; i < sizeof binary_rows / sizeof binary_rows[0]; i++)
    if (strcmp(binary_rows[i].name, name) == 0) return &binary_rows[i];
  return NULL;
}

static ir_val emit_binary(lower_ctx* L, const pw_data* d, const ir_val* x) {
  int32_t t = d->mdt;
  ir_val y = x[1];
  bool is_one = ptc_dtype_is_float(t) ? d->k.f == 1.0 : d->k.i == 1;
  if ((d->flags & B_ALPHA) && !is_one) y = bin(L, IR_MUL, y, lower_emit_const(L, d->k, t), t);
  if (d->flags & B_BOOL) return bin(L, d->opc, x[0], y, PTC_BOOL);
  if ((d->flags & DIV_TRUNC) && ptc_dtype_is_float(t))
    return ir_ops_unary(L->body, IR_TRUNC, bin(L, IR_DIV, x[0], y, t), t);
  if (d->flags & DIV_FLOOR) return bin(L, IR_FLOORDIV, x[0], y, t);
  if (d->flags >> PK_SHIFT) return emit_pow_kind(L, d->flags >> PK_SHIFT, x[0], t);
  return bin(L, d->opc, x[0], y, t);
}

static uint32_t div_mode(const gnode* n) {
  const char* m = lower_attr_str(n, "rounding_mode", "");
  return strcmp(m, "trunc") == 0 ? DIV_TRUNC : strcmp(m, "floor") == 0 ? DIV_FLOOR : DIV_TRUE;
}

static ptc_status lower_binary(lower_ctx* L, const gnode* n, lval* out) {
  const binary_row* row = find_binary(n->op->name);
  if (!row) return PTC_ERR(INTERNAL, "no binary row for %s", n->op->name);
  int cat = lower_attr_cat(n, "other");
  int32_t cdt = ptc_dtype_is_float(out->dtype) ? out->dtype : lower_result_type(L, n, 0, cat);
  pw_data* d = pw_new(L, out, emit_binary, 2);
  if (!d) return ptc_status_oom();
  d->mdt = math_of(cdt);
  d->opc = row->opc;
  d->flags = row->flags | ((row->flags & B_DIV) ? div_mode(n) : 0);
  tensor_op(&d->op[0], lower_in(L, n, 0), cdt, d->mdt);
  input_or_scalar(L, &d->op[1], n, 1, "other", cdt, d->mdt);
  if (row->opc == IR_POW) d->flags |= pow_kind(&d->op[1], cdt) << PK_SHIFT;
  if (ptc_dtype_is_float(d->mdt))
    d->k.f = lower_attr_float(n, "alpha", 1.0);
  else
    d->k.i = lower_attr_int(n, "alpha", 1);
  return finish(out, d);
}

ptc_status lower_add_scaled(lower_ctx* L, const lval* a, const lval* b, double beta,
                            lval* out) {
  pw_data* d = pw_new(L, out, emit_binary, 2);
  if (!d) return ptc_status_oom();
  d->mdt = math_of(out->dtype);
  d->opc = IR_ADD;
  d->flags = B_ALPHA;
  d->k = ir_scalar_of_f(beta, d->mdt);
  tensor_op(&d->op[0], a, out->dtype, d->mdt);
  tensor_op(&d->op[1], b, out->dtype, d->mdt);
  return finish(out, d);
}

/* ---- where / clamp / masked_fill / to_dtype / identities --------------------------------- */

static ir_val emit_where(lower_ctx* L, const pw_data* d, const ir_val* x) {
  return ir_ops_where(L->body, x[0], x[1], x[2], d->mdt);
}

static ptc_status lower_where(lower_ctx* L, const gnode* n, lval* out) {
  pw_data* d = pw_new(L, out, emit_where, 3);
  if (!d) return ptc_status_oom();
  d->mdt = select_dtype(L, out->dtype);
  tensor_op(&d->op[0], lower_in(L, n, 0), PTC_BOOL, PTC_BOOL);
  tensor_op(&d->op[1], lower_in(L, n, 1), out->dtype, d->mdt);
  tensor_op(&d->op[2], lower_in(L, n, 2), out->dtype, d->mdt);
  return finish(out, d);
}

/* clamp = min(max(x, lo), hi): NaN in x or a tensor bound propagates; a NaN
 * scalar bound is ignored (ATen's scalar kernel). */
static ir_val emit_clamp(lower_ctx* L, const pw_data* d, const ir_val* x) {
  ir_val v = x[0];
  if (x[1] >= 0) v = bin(L, IR_MAX, v, x[1], d->mdt);
  if (x[2] >= 0) v = bin(L, IR_MIN, v, x[2], d->mdt);
  return v;
}

static ptc_status lower_clamp(lower_ctx* L, const gnode* n, lval* out) {
  static const char* const names[] = {"min", "max"};
  pw_data* d = pw_new(L, out, emit_clamp, 3);
  if (!d) return ptc_status_oom();
  d->mdt = math_of(out->dtype);
  tensor_op(&d->op[0], lower_in(L, n, 0), out->dtype, d->mdt);
  for (uint32_t k = 1; k < 3; k++) {
    pw_operand* o = &d->op[k];
    input_or_scalar(L, o, n, k, names[k - 1], out->dtype, d->mdt);
    if (!o->v && !o->absent && lower_attr_cat(n, names[k - 1]) == 2 &&
        isnan(lower_attr_float(n, names[k - 1], 0)))
      o->absent = true;
  }
  return finish(out, d);
}

static ir_val emit_masked_fill(lower_ctx* L, const pw_data* d, const ir_val* x) {
  return ir_ops_where(L->body, x[1], x[2], x[0], d->mdt);
}

static ptc_status lower_masked_fill(lower_ctx* L, const gnode* n, lval* out) {
  pw_data* d = pw_new(L, out, emit_masked_fill, 3);
  if (!d) return ptc_status_oom();
  d->mdt = select_dtype(L, out->dtype);
  tensor_op(&d->op[0], lower_in(L, n, 0), out->dtype, d->mdt);
  tensor_op(&d->op[1], lower_in(L, n, 1), PTC_BOOL, PTC_BOOL);
  input_or_scalar(L, &d->op[2], n, 2, "value", out->dtype, d->mdt);
  return finish(out, d);
}

static ir_val emit_identity(lower_ctx* L, const pw_data* d, const ir_val* x) {
  (void)L;
  (void)d;
  return x[0];
}

static ptc_status lower_to_dtype(lower_ctx* L, const gnode* n, lval* out) {
  lval* x = lower_in(L, n, 0);
  if (x->dtype == out->dtype) {
    *out = *x;
    return PTC_OK;
  }
  pw_data* d = pw_new(L, out, emit_identity, 1);
  if (!d) return ptc_status_oom();
  d->mdt = out->dtype;
  tensor_op(&d->op[0], x, out->dtype, out->dtype);
  return finish(out, d);
}

/* dropout (inference), contiguous, clone: the same value. */
static ptc_status lower_identity(lower_ctx* L, const gnode* n, lval* out) {
  *out = *lower_in(L, n, 0);
  return PTC_OK;
}

/* ---- the table ----------------------------------------------------------------------------- */

const lower_entry lower_pointwise_table[] = {
    {"neg", lower_unary},         {"abs", lower_unary},        {"exp", lower_unary},
    {"exp2", lower_unary},        {"expm1", lower_unary},      {"log", lower_unary},
    {"log2", lower_unary},        {"log1p", lower_unary},      {"sqrt", lower_unary},
    {"rsqrt", lower_unary},       {"sin", lower_unary},        {"cos", lower_unary},
    {"tan", lower_unary},         {"tanh", lower_unary},       {"sigmoid", lower_unary},
    {"relu", lower_unary},        {"erf", lower_unary},        {"floor", lower_unary},
    {"ceil", lower_unary},        {"trunc", lower_unary},      {"reciprocal", lower_unary},
    {"sign", lower_unary},        {"logical_not", lower_unary}, {"isnan", lower_unary},
    {"isinf", lower_unary},       {"gelu", lower_gelu},        {"silu", lower_silu},
    {"round", lower_round},       {"add", lower_binary},       {"sub", lower_binary},
    {"mul", lower_binary},        {"div", lower_binary},       {"remainder", lower_binary},
    {"pow", lower_binary},        {"maximum", lower_binary},   {"minimum", lower_binary},
    {"atan2", lower_binary},      {"eq", lower_binary},        {"ne", lower_binary},
    {"lt", lower_binary},         {"le", lower_binary},        {"gt", lower_binary},
    {"ge", lower_binary},         {"logical_and", lower_binary}, {"logical_or", lower_binary},
    {"logical_xor", lower_binary}, {"bitwise_and", lower_binary}, {"bitwise_or", lower_binary},
    {"bitwise_xor", lower_binary}, {"where", lower_where},     {"clamp", lower_clamp},
    {"masked_fill", lower_masked_fill}, {"to_dtype", lower_to_dtype}, {"dropout", lower_identity},
    {"contiguous", lower_identity}, {"clone", lower_identity},
};
const size_t lower_pointwise_count = sizeof lower_pointwise_table / sizeof lower_pointwise_table[0];
