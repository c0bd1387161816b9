/* ops_elementwise.c - op table and meta functions of the elementwise family:
 * unary and binary pointwise math with ATen type promotion (rank-0 tensors
 * and Python scalars via attribute `other`), where/clamp/masked_fill/
 * to_dtype/dropout, creation ops (full, zeros, ones, fill, arange, eye) and
 * random ops (rand, randn, bernoulli). Kernels live in
 * backends/ref/ref_elementwise.c and ref_random.c. */
#include "op.h"

#include <math.h>
#include <string.h>

/* dtype category masks for meta_expect_dtype */
enum { M_BOOL = 1, M_INT = 2, M_FLOAT = 4, M_ANY = 7 };

/* ---- small helpers ------------------------------------------------------------------------- */

static const gattr* attr(const meta_ctx* m, const char* name) {
  return m->attrs ? gattrs_find(m->attrs, name) : NULL;
}

/* Promotion category of a scalar attribute: -1 absent, 0 bool, 1 int, 2 float. */
static int scalar_cat(const meta_ctx* m, const char* name) {
  const gattr* a = attr(m, name);
  if (!a) return -1;
  return a->type == PTC_ATTR_FLOAT ? 2 : a->type == PTC_ATTR_BOOL ? 0 : 1;
}

static int cat_of(int32_t dtype) { return ptc_dtype_category(dtype); }

/* ATen refuses integer scalars that do not fit an integral result dtype
 * (clamp, masked_fill): "value cannot be converted to type int8_t". For u8,
 * negative values down to -255 are accepted and wrap (c10::overflows). */
static ptc_status check_scalar_fits(const meta_ctx* m, const char* name, int32_t dtype) {
  static const struct {
    int32_t dt;
    int64_t lo, hi;
  } lim[] = {{PTC_I8, INT8_MIN, INT8_MAX},
             {PTC_I16, INT16_MIN, INT16_MAX},
             {PTC_I32, INT32_MIN, INT32_MAX},
             {PTC_U8, -UINT8_MAX, UINT8_MAX}};
  const gattr* a = attr(m, name);
  if (!a || a->type != PTC_ATTR_INT) return PTC_OK;
  for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++)
    if (lim[i].dt == dtype && (a->i < lim[i].lo || a->i > lim[i].hi))
      return meta_fail(m, "'%s' value %lld cannot be converted to %s without overflow", name,
                       (long long)a->i, ptc_dtype_name(dtype));
  return PTC_OK;
}

/* Error unless tensor input i is present (optional inputs may be NONE). */
static ptc_status require(const meta_ctx* m, size_t i, const char* argname) {
  if (i < m->n_in && m->in[i]) return PTC_OK;
  return meta_fail(m, "argument '%s' (input %zu) is required", argname, i);
}

/* Output of the same shape as input 0. */
static ptc_status out_like(meta_ctx* m, size_t i, int32_t dtype) {
  return meta_add_out(m, dtype, m->in[i]->rank, m->in[i]->shape);
}

/* Output with the broadcast shape of the present inputs [first, n_in). */
static ptc_status out_broadcast(meta_ctx* m, size_t first, int32_t dtype) {
  uint32_t r = 0;
  const sym_expr** sh = NULL;
  PTC_TRY(meta_broadcast_inputs(m, first, &r, &sh));
  return meta_add_out(m, dtype, r, sh);
}

/* ---- unary ops ----------------------------------------------------------------------------- */

typedef enum unary_rule {
  U_TO_FLOAT, /* float keeps its dtype; int/bool compute in f32 (exp, sin, ...) */
  U_FLOAT,    /* floating inputs only (gelu, silu) */
  U_NUMERIC,  /* int or float, dtype kept; bool rejected (abs, neg, floor, ...) */
  U_ANY,      /* any dtype, kept (sign) */
  U_PREDICATE /* any dtype -> bool (isnan, isinf, logical_not) */
} unary_rule;

static ptc_status meta_unary(meta_ctx* m, unary_rule rule) {
  PTC_TRY(require(m, 0, "input"));
  int32_t dt = m->in[0]->dtype;
  switch (rule) {
    case U_TO_FLOAT:
      if (cat_of(dt) != 2) dt = PTC_F32;
      break;
    case U_FLOAT: PTC_TRY(meta_expect_dtype(m, 0, "input", M_FLOAT)); break;
    case U_NUMERIC: PTC_TRY(meta_expect_dtype(m, 0, "input", M_INT | M_FLOAT)); break;
    case U_ANY: break;
    case U_PREDICATE: dt = PTC_BOOL; break;
  }
  return out_like(m, 0, dt);
}

#define UNARY_META(name, rule) \
  static ptc_status meta_##name(meta_ctx* m) { return meta_unary(m, rule); }

static ptc_status meta_gelu(meta_ctx* m) {
  const char* a = meta_str(m, "approximate", "none");
  if (strcmp(a, "none") != 0 && strcmp(a, "tanh") != 0)
    return meta_fail(m, "attribute 'approximate' must be \"none\" or \"tanh\", got \"%s\"", a);
  return meta_unary(m, U_FLOAT);
}

static ptc_status meta_round(meta_ctx* m) {
  int64_t d = meta_int(m, "decimals", 0);
  if (d < -30 || d > 30)
    return meta_fail(m, "attribute 'decimals' %lld is out of range", (long long)d);
  if (d != 0) PTC_TRY(meta_expect_dtype(m, 0, "input", M_FLOAT));
  return meta_unary(m, U_NUMERIC);
}

/* ---- binary ops ---------------------------------------------------------------------------- */

enum {
  B_TO_FLOAT = 1u << 0,    /* integral results compute in f32 (atan2) */
  B_BOOL_OUT = 1u << 1,    /* comparisons and logical ops */
  B_NO_BOOL_IN = 1u << 2,  /* sub: no bool operand at all */
  B_NO_BOOL_OUT = 1u << 3, /* remainder, pow, rounding div: bool result rejected */
  B_INT_ONLY = 1u << 4,    /* bitwise ops */
  B_ALPHA = 1u << 5,       /* add/sub alpha */
  B_DIV = 1u << 6,         /* div rounding_mode */
  B_POW = 1u << 7          /* pow: no negative int scalar exponent for integers */
};

/* Checks the second operand (tensor input 1 xor attribute `other`); returns
 * the scalar category (-1 when it is a tensor). */
static ptc_status binary_operands(meta_ctx* m, int* cat) {
  bool has_t = m->n_in > 1 && m->in[1];
  *cat = scalar_cat(m, "other");
  PTC_TRY(require(m, 0, "self"));
  if (has_t && *cat >= 0)
    return meta_fail(m, "give the second operand either as input 1 or as attribute 'other', "
                        "not both");
  if (!has_t && *cat < 0)
    return meta_fail(m, "missing second operand: pass a second tensor input or attribute 'other'");
  return PTC_OK;
}

static ptc_status binary_checks(meta_ctx* m, unsigned rules, int cat, int32_t rt) {
  bool bool_in = m->in[0]->dtype == PTC_BOOL || cat == 0 ||
                 (m->n_in > 1 && m->in[1] && m->in[1]->dtype == PTC_BOOL);
  if ((rules & B_NO_BOOL_IN) && bool_in)
    return meta_fail(m, "subtraction with a bool tensor is not supported (use logical_xor or "
                        "logical_not)");
  if ((rules & B_NO_BOOL_OUT) && rt == PTC_BOOL)
    return meta_fail(m, "not supported for bool operands");
  if (rules & B_INT_ONLY) {
    PTC_TRY(meta_expect_dtype(m, 0, "self", M_BOOL | M_INT));
    PTC_TRY(meta_expect_dtype(m, 1, "other", M_BOOL | M_INT));
    if (cat == 2) return meta_fail(m, "attribute 'other' must be an integer or bool, got a float");
  }
  if ((rules & B_ALPHA) && cat_of(rt) != 2 && scalar_cat(m, "alpha") == 2)
    return meta_fail(m, "for integral input tensors, attribute 'alpha' must not be a floating "
                        "point number");
  if ((rules & B_POW) && cat == 1 && cat_of(rt) != 2 && meta_int(m, "other", 0) < 0)
    return meta_fail(m, "integers to negative integer powers are not allowed");
  return PTC_OK;
}

static ptc_status meta_binary(meta_ctx* m, unsigned rules) {
  int cat;
  PTC_TRY(binary_operands(m, &cat));
  int32_t rt = meta_result_type(m, 0, cat);
  const char* mode = meta_str(m, "rounding_mode", NULL);
  if ((rules & B_DIV) && mode) {
    if (strcmp(mode, "trunc") != 0 && strcmp(mode, "floor") != 0)
      return meta_fail(m, "attribute 'rounding_mode' must be \"trunc\" or \"floor\", got \"%s\"",
                       mode);
    rules |= B_NO_BOOL_OUT;
  } else if (rules & B_DIV) {
    rules |= B_TO_FLOAT; /* true division */
  }
  PTC_TRY(binary_checks(m, rules, cat, rt));
  int32_t dt = rt;
  if ((rules & B_TO_FLOAT) && cat_of(rt) != 2) dt = PTC_F32;
  if (rules & B_BOOL_OUT) dt = PTC_BOOL;
  return out_broadcast(m, 0, dt);
}

#define BINARY_META(name, rules) \
  static ptc_status meta_##name(meta_ctx* m) { return meta_binary(m, rules); }

/* ---- where / clamp / masked_fill / to_dtype / dropout -------------------------------------- */

static ptc_status meta_where(meta_ctx* m) {
  static const char* const names[] = {"condition", "self", "other"};
  for (size_t i = 0; i < 3; i++) PTC_TRY(require(m, i, names[i]));
  if (m->in[0]->dtype != PTC_BOOL)
    return meta_fail(m, "argument 'condition' must be a bool tensor, got %s",
                     ptc_dtype_name(m->in[0]->dtype));
  return out_broadcast(m, 0, meta_result_type(m, 1, -1));
}

static ptc_status meta_clamp(meta_ctx* m) {
  static const char* const names[] = {"min", "max"};
  PTC_TRY(require(m, 0, "self"));
  int cat = -1;
  bool any = false;
  for (size_t k = 0; k < 2; k++) {
    bool t = m->n_in > k + 1 && m->in[k + 1];
    int c = scalar_cat(m, names[k]);
    if (t && c >= 0)
      return meta_fail(m, "'%s' given both as attribute and as input %zu", names[k], k + 1);
    if (c > cat) cat = c;
    any |= t || c >= 0;
  }
  if (!any) return meta_fail(m, "at least one of 'min' or 'max' must be given");
  int32_t rt = meta_result_type(m, 0, cat);
  for (size_t k = 0; k < 2; k++) PTC_TRY(check_scalar_fits(m, names[k], rt));
  return out_broadcast(m, 0, rt);
}

static ptc_status meta_masked_fill(meta_ctx* m) {
  PTC_TRY(require(m, 0, "self"));
  PTC_TRY(require(m, 1, "mask"));
  if (m->in[1]->dtype != PTC_BOOL)
    return meta_fail(m, "argument 'mask' must be a bool tensor, got %s",
                     ptc_dtype_name(m->in[1]->dtype));
  bool vt = m->n_in > 2 && m->in[2];
  if (vt == meta_has(m, "value"))
    return meta_fail(m, "give the fill value either as attribute 'value' or as a 0-dim input 2");
  if (vt && m->in[2]->rank != 0)
    return meta_fail(m, "the value tensor must be 0-dimensional, got rank %u", m->in[2]->rank);
  PTC_TRY(check_scalar_fits(m, "value", m->in[0]->dtype));
  uint32_t r = 0;
  const sym_expr** sh = NULL;
  PTC_TRY(meta_broadcast(m, m->in[0]->rank, m->in[0]->shape, m->in[1]->rank, m->in[1]->shape, &r,
                         &sh));
  return meta_add_out(m, m->in[0]->dtype, r, sh);
}

static ptc_status meta_to_dtype(meta_ctx* m) {
  PTC_TRY(require(m, 0, "self"));
  return out_like(m, 0, meta_dtype(m, "dtype", m->in[0]->dtype));
}

static ptc_status meta_dropout(meta_ctx* m) {
  PTC_TRY(require(m, 0, "input"));
  double p = meta_float(m, "p", 0.5);
  if (!(p >= 0.0 && p <= 1.0))
    return meta_fail(m, "dropout probability has to be between 0 and 1, but got %g", p);
  if (meta_bool(m, "train", false)) return meta_fail(m, "training mode is not supported");
  return out_like(m, 0, m->in[0]->dtype);
}

/* ---- creation ops -------------------------------------------------------------------------- */

/* Reads the `size` attribute (static or symbolic, non-negative). */
static ptc_status size_attr(meta_ctx* m, uint32_t* rank, const sym_expr*** shape) {
  size_t n;
  const sym_expr** e = meta_exprs(m, "size", &n);
  if (n > PTC_MAX_RANK)
    return meta_fail(m, "attribute 'size' has %zu dimensions (at most %d)", n, PTC_MAX_RANK);
  for (size_t i = 0; i < n; i++) {
    int64_t v;
    if (sym_is_const(e[i], &v) && v < 0)
      return meta_fail(m, "attribute 'size' element %zu must be non-negative, got %lld", i,
                       (long long)v);
  }
  *rank = (uint32_t)n;
  *shape = e;
  return PTC_OK;
}

static ptc_status sized_out(meta_ctx* m, int32_t dtype) {
  uint32_t r = 0;
  const sym_expr** sh = NULL;
  PTC_TRY(size_attr(m, &r, &sh));
  return meta_add_out(m, dtype, r, sh);
}

static const int32_t cat_default_dtype[3] = {PTC_BOOL, PTC_I64, PTC_F32};

static ptc_status meta_full(meta_ctx* m) {
  int c = scalar_cat(m, "fill_value");
  return sized_out(m, meta_dtype(m, "dtype", cat_default_dtype[c < 0 ? 2 : c]));
}

static ptc_status meta_zeros(meta_ctx* m) { return sized_out(m, meta_dtype(m, "dtype", PTC_F32)); }

static ptc_status meta_fill(meta_ctx* m) {
  PTC_TRY(require(m, 0, "self"));
  return out_like(m, 0, meta_dtype(m, "dtype", m->in[0]->dtype));
}

/* arange: ATen checks the step and the bounds on the arguments converted to
 * the accumulate type (truncated for integer outputs), and computes the
 * length in double from the original arguments, except for i64 outputs
 * where it uses the truncated ones. */
static ptc_status meta_arange(meta_ctx* m) {
  bool ints =
      scalar_cat(m, "start") != 2 && scalar_cat(m, "end") != 2 && scalar_cat(m, "step") != 2;
  int32_t dt = meta_dtype(m, "dtype", ints ? PTC_I64 : PTC_F32);
  if (dt == PTC_BOOL) return meta_fail(m, "dtype bool is not supported");
  double s = meta_float(m, "start", 0), e = meta_float(m, "end", 0), st = meta_float(m, "step", 1);
  if (!isfinite(s) || !isfinite(e) || !isfinite(st))
    return meta_fail(m, "unsupported range: %g -> %g (step %g)", s, e, st);
  double as = s, ae = e, ast = st; /* accumulate-type values */
  if (cat_of(dt) != 2) {
    if (fabs(s) > 4e18 || fabs(e) > 4e18 || fabs(st) > 4e18)
      return meta_fail(m, "range %g -> %g does not fit an integer dtype", s, e);
    as = trunc(s);
    ae = trunc(e);
    ast = trunc(st);
  }
  if (ast == 0) return meta_fail(m, "step must be nonzero");
  if ((ast > 0 && ae < as) || (ast < 0 && ae > as))
    return meta_fail(m, "upper bound and larger bound inconsistent with step sign");
  double n = dt == PTC_I64 ? ceil((ae - as) / ast) : ceil((e - s) / st);
  if (!(n >= 0 && n < 4e18)) return meta_fail(m, "invalid size %g", n);
  const sym_expr* len = sym_const(m->env, (int64_t)n);
  if (!len) return ptc_status_oom();
  return meta_add_out(m, dt, 1, &len);
}

static ptc_status meta_eye(meta_ctx* m) {
  const gattr* n = attr(m, "n");
  const gattr* mm = attr(m, "m");
  const sym_expr* sh[2] = {n ? n->sym : NULL, mm ? mm->sym : NULL};
  if (!sh[1]) sh[1] = sh[0];
  static const char* const names[] = {"n", "m"};
  for (size_t i = 0; i < 2; i++) {
    int64_t v;
    if (!sh[i]) return ptc_status_oom();
    if (sym_is_const(sh[i], &v) && v < 0)
      return meta_fail(m, "'%s' must be greater or equal to 0, got %lld", names[i], (long long)v);
  }
  return meta_add_out(m, meta_dtype(m, "dtype", PTC_F32), 2, sh);
}

/* ---- random ops ---------------------------------------------------------------------------- */

static ptc_status meta_rand(meta_ctx* m) {
  int32_t dt = meta_dtype(m, "dtype", PTC_F32);
  if (cat_of(dt) != 2)
    return meta_fail(m, "attribute 'dtype' must be a floating dtype, got %s", ptc_dtype_name(dt));
  return sized_out(m, dt);
}

static ptc_status meta_bernoulli(meta_ctx* m) {
  PTC_TRY(require(m, 0, "input"));
  if (meta_has(m, "p")) {
    double p = meta_float(m, "p", 0.5);
    if (!(p >= 0.0 && p <= 1.0))
      return meta_fail(m, "attribute 'p' must be in [0, 1], got %g", p);
  } else {
    PTC_TRY(meta_expect_dtype(m, 0, "input", M_FLOAT));
  }
  return out_like(m, 0, m->in[0]->dtype);
}

/* ---- the table ----------------------------------------------------------------------------- */

/* name, rule (one place per op: the meta function and the table row) */
#define UNARY_OPS(X)                                                                       \
  X(neg, U_NUMERIC) X(abs, U_NUMERIC) X(exp, U_TO_FLOAT) X(exp2, U_TO_FLOAT)               \
  X(expm1, U_TO_FLOAT) X(log, U_TO_FLOAT) X(log2, U_TO_FLOAT) X(log1p, U_TO_FLOAT)         \
  X(sqrt, U_TO_FLOAT) X(rsqrt, U_TO_FLOAT) X(sin, U_TO_FLOAT) X(cos, U_TO_FLOAT)           \
  X(tan, U_TO_FLOAT) X(tanh, U_TO_FLOAT) X(sigmoid, U_TO_FLOAT) X(relu, U_NUMERIC)         \
  X(silu, U_FLOAT) X(erf, U_TO_FLOAT) X(floor, U_NUMERIC) X(ceil, U_NUMERIC)               \
  X(trunc, U_NUMERIC) X(reciprocal, U_TO_FLOAT) X(sign, U_ANY)                             \
  X(logical_not, U_PREDICATE) X(isnan, U_PREDICATE) X(isinf, U_PREDICATE)

#define BINARY_OPS(X)                                                                      \
  X(add, B_ALPHA, A_ALPHA) X(sub, B_ALPHA | B_NO_BOOL_IN, A_ALPHA) X(mul, 0, A_OTHER)      \
  X(div, B_DIV, A_DIV) X(remainder, B_NO_BOOL_OUT, A_OTHER)                                \
  X(pow, B_NO_BOOL_OUT | B_POW, A_OTHER) X(maximum, 0, A_OTHER) X(minimum, 0, A_OTHER)     \
  X(atan2, B_TO_FLOAT, A_OTHER) X(eq, B_BOOL_OUT, A_OTHER) X(ne, B_BOOL_OUT, A_OTHER)      \
  X(lt, B_BOOL_OUT, A_OTHER) X(le, B_BOOL_OUT, A_OTHER) X(gt, B_BOOL_OUT, A_OTHER)         \
  X(ge, B_BOOL_OUT, A_OTHER) X(logical_and, B_BOOL_OUT, A_OTHER)                           \
  X(logical_or, B_BOOL_OUT, A_OTHER) X(logical_xor, B_BOOL_OUT, A_OTHER)                   \
  X(bitwise_and, B_INT_ONLY, A_OTHER) X(bitwise_or, B_INT_ONLY, A_OTHER)                   \
  X(bitwise_xor, B_INT_ONLY, A_OTHER)

UNARY_OPS(UNARY_META)
#define BINARY_META_X(name, rules, attrs) BINARY_META(name, rules)
BINARY_OPS(BINARY_META_X)

#define END_ATTRS {NULL, 0, false}
static const op_attr_spec A_NONE[] = {END_ATTRS};
static const op_attr_spec A_OTHER[] = {{"other", PTC_ATTR_FLOAT, false}, END_ATTRS};
static const op_attr_spec A_ALPHA[] = {
    {"other", PTC_ATTR_FLOAT, false}, {"alpha", PTC_ATTR_FLOAT, false}, END_ATTRS};
static const op_attr_spec A_DIV[] = {
    {"other", PTC_ATTR_FLOAT, false}, {"rounding_mode", PTC_ATTR_STRING, false}, END_ATTRS};
static const op_attr_spec A_GELU[] = {{"approximate", PTC_ATTR_STRING, false}, END_ATTRS};
static const op_attr_spec A_ROUND[] = {{"decimals", PTC_ATTR_INT, false}, END_ATTRS};
static const op_attr_spec A_CLAMP[] = {
    {"min", PTC_ATTR_FLOAT, false}, {"max", PTC_ATTR_FLOAT, false}, END_ATTRS};
static const op_attr_spec A_TO[] = {{"dtype", PTC_ATTR_DTYPE, true}, END_ATTRS};
static const op_attr_spec A_MASKED[] = {{"value", PTC_ATTR_FLOAT, false}, END_ATTRS};
static const op_attr_spec A_DROPOUT[] = {
    {"p", PTC_ATTR_FLOAT, false}, {"train", PTC_ATTR_BOOL, false}, END_ATTRS};
static const op_attr_spec A_FULL[] = {{"size", PTC_ATTR_INTS, true},
                                      {"fill_value", PTC_ATTR_FLOAT, true},
                                      {"dtype", PTC_ATTR_DTYPE, false},
                                      END_ATTRS};
static const op_attr_spec A_ZEROS[] = {
    {"size", PTC_ATTR_INTS, true}, {"dtype", PTC_ATTR_DTYPE, false}, END_ATTRS};
static const op_attr_spec A_FILL[] = {
    {"value", PTC_ATTR_FLOAT, true}, {"dtype", PTC_ATTR_DTYPE, false}, END_ATTRS};
static const op_attr_spec A_ARANGE[] = {{"start", PTC_ATTR_FLOAT, false},
                                        {"end", PTC_ATTR_FLOAT, true},
                                        {"step", PTC_ATTR_FLOAT, false},
                                        {"dtype", PTC_ATTR_DTYPE, false},
                                        END_ATTRS};
static const op_attr_spec A_EYE[] = {{"n", PTC_ATTR_SYM, true},
                                     {"m", PTC_ATTR_SYM, false},
                                     {"dtype", PTC_ATTR_DTYPE, false},
                                     END_ATTRS};
static const op_attr_spec A_RAND[] = {{"size", PTC_ATTR_INTS, true},
                                      {"dtype", PTC_ATTR_DTYPE, false},
                                      {"seed", PTC_ATTR_INT, false},
                                      END_ATTRS};
static const op_attr_spec A_BERNOULLI[] = {
    {"p", PTC_ATTR_FLOAT, false}, {"seed", PTC_ATTR_INT, false}, END_ATTRS};

#define PW OP_POINTWISE
#define UNARY_ROW(name, rule) {#name, 1, 1, PW, A_NONE, meta_##name},
#define BINARY_ROW(name, rules, attrs) {#name, 1, 2, PW, attrs, meta_##name},

const op_def ptc_ops_elementwise[] = {
    UNARY_OPS(UNARY_ROW)
    {"gelu", 1, 1, PW, A_GELU, meta_gelu},
    {"round", 1, 1, PW, A_ROUND, meta_round},
    BINARY_OPS(BINARY_ROW)
    {"where", 3, 3, PW, A_NONE, meta_where},
    {"clamp", 1, 3, PW, A_CLAMP, meta_clamp},
    {"masked_fill", 2, 3, PW, A_MASKED, meta_masked_fill},
    {"to_dtype", 1, 1, PW, A_TO, meta_to_dtype},
    {"dropout", 1, 1, PW, A_DROPOUT, meta_dropout},
    {"fill", 1, 1, PW, A_FILL, meta_fill},
    {"full", 0, 0, OP_CREATION, A_FULL, meta_full},
    {"zeros", 0, 0, OP_CREATION, A_ZEROS, meta_zeros},
    {"ones", 0, 0, OP_CREATION, A_ZEROS, meta_zeros},
    {"arange", 0, 0, OP_CREATION, A_ARANGE, meta_arange},
    {"eye", 0, 0, OP_CREATION, A_EYE, meta_eye},
    {"rand", 0, 0, OP_RANDOM | OP_CREATION, A_RAND, meta_rand},
    {"randn", 0, 0, OP_RANDOM | OP_CREATION, A_RAND, meta_rand},
    {"bernoulli", 1, 1, OP_RANDOM, A_BERNOULLI, meta_bernoulli},
};
const size_t ptc_ops_elementwise_count = sizeof ptc_ops_elementwise / sizeof ptc_ops_elementwise[0];
