/* ref_elementwise.c - reference kernels of the elementwise family.
 *
 * One generic pointwise driver (run_pw) walks the output in row-major order
 * with every operand broadcast to the output shape. Each operand is loaded
 * and converted to the op's compute dtype exactly as ATen casts its inputs
 * to the common dtype (a Python scalar 300 added to an i8 tensor wraps to
 * 44; 0.1 compared with an f16 tensor is rounded to f16 first); the element
 * function then runs in double (floating compute dtypes) or in int64 with
 * wrap-around (integer and bool compute dtypes), and the result is rounded
 * once on store. Ops are rows of small tables of scalar functions.
 * The random ops use the Philox generator of ref_random.c.
 */
#include "ref.h"

#include <math.h>
#include <string.h>

#define MAX_OPS 3

typedef struct pw_call pw_call;
typedef double (*pw_f)(const double* x, pw_call* k);
typedef int64_t (*pw_i)(const int64_t* x, pw_call* k);
typedef double (*un_fn_f)(double);
typedef int64_t (*un_fn_i)(int64_t);
typedef double (*bin_fn_f)(double, double, pw_call*);
typedef int64_t (*bin_fn_i)(int64_t, int64_t, pw_call*);

/* Parameters of one pointwise run. */
struct pw_call {
  int32_t cdt;      /* compute dtype: operands are converted to it */
  pw_f f;           /* element function of the floating path */
  pw_i i;           /* element function of the integer/bool path */
  un_fn_f uf;       /* unary scalar functions (un_f / un_i adapters) */
  un_fn_i ui;
  bin_fn_f bf;      /* binary scalar functions (bin_f / bin_i adapters) */
  bin_fn_i bi;
  double alpha_f;   /* add/sub */
  int64_t alpha_i;
  int32_t opdt;     /* round(decimals): dtype of intermediate results */
  double ten;       /* round(decimals): 10^|decimals| */
  bool ten_neg;     /* decimals < 0 */
  bool has_lo, has_hi, nan_bounds; /* clamp */
  bool pow_scalar;   /* pow with a scalar exponent (ATen's pow_tensor_scalar) */
  bool p_attr;      /* bernoulli: probability from attribute p */
  double p;
  uint64_t seed, stream;
  int64_t index;    /* linear index of the element being computed */
  const char* err;  /* set by an element function on a data error */
};

/* ---- conversions to the compute dtype ------------------------------------------------------ */

static bool is_float(int32_t dt) { return ptc_dtype_is_float(dt); }

/* Rounds v to dtype dt (through the storage conversion of ref_tensor.c). */
static double cast_f(int32_t dt, double v) {
  uint64_t buf;
  ref_tensor t;
  t.data = &buf;
  t.dtype = dt;
  ref_store_f(&t, 0, v);
  return ref_load_f(&t, 0);
}

static int64_t cast_i(int32_t dt, int64_t v) {
  uint64_t buf;
  ref_tensor t;
  t.data = &buf;
  t.dtype = dt;
  ref_store_i(&t, 0, v);
  return ref_load_i(&t, 0);
}

/* Operand element for the integer path (a float operand only reaches it via
 * a Python float scalar, e.g. masked_fill of an int tensor with 2.7). */
static int64_t load_as_int(const ref_tensor* t, int64_t off, int32_t cdt) {
  if (cdt == PTC_BOOL && is_float(t->dtype)) return ref_load_f(t, off) != 0;
  return cast_i(cdt, ref_load_i(t, off));
}

/* ---- the pointwise driver ------------------------------------------------------------------ */

static void advance(int32_t rank, const int64_t* shape, int64_t* idx, size_t n,
                    const ref_tensor* b, int64_t* off) {
  for (int32_t d = rank - 1; d >= 0; d--) {
    idx[d]++;
    for (size_t i = 0; i < n; i++) off[i] += b[i].strides[d];
    if (idx[d] < shape[d]) return;
    for (size_t i = 0; i < n; i++) off[i] -= b[i].strides[d] * shape[d];
    idx[d] = 0;
  }
}

static const char* op_name(const ref_call* c) {
  return c->node && c->node->op ? c->node->op->name : "elementwise";
}

static ptc_status run_pw(ref_call* c, pw_call* k, size_t n, const ref_tensor* const* ops) {
  ref_tensor* out = &c->out[0];
  ref_tensor b[MAX_OPS];
  bool cast[MAX_OPS];
  bool fl = is_float(k->cdt);
  if (fl ? !k->f : !k->i)
    return PTC_ERR(INTERNAL, "%s: no kernel for compute dtype %s", op_name(c),
                   ptc_dtype_name(k->cdt));
  for (size_t i = 0; i < n; i++) {
    ref_broadcast_to(ops[i], out->rank, out->shape, &b[i]);
    cast[i] = ops[i]->dtype != k->cdt;
  }
  int64_t total = ref_numel(out);
  int64_t idx[PTC_MAX_RANK] = {0}, off[MAX_OPS] = {0};
  for (int64_t e = 0; e < total; e++) {
    k->index = e;
    if (fl) {
      double x[MAX_OPS];
      for (size_t i = 0; i < n; i++) {
        x[i] = ref_load_f(&b[i], off[i]);
        if (cast[i]) x[i] = cast_f(k->cdt, x[i]);
      }
      ref_store_f(out, e, k->f(x, k));
    } else {
      int64_t x[MAX_OPS];
      for (size_t i = 0; i < n; i++)
        x[i] = cast[i] ? load_as_int(&b[i], off[i], k->cdt) : ref_load_i(&b[i], off[i]);
      ref_store_i(out, e, k->i(x, k));
    }
    if (k->err)
      return PTC_ERR(INVALID_ARGUMENT, "%s: %s (output element %lld)", op_name(c), k->err,
                     (long long)e);
    advance(out->rank, out->shape, idx, n, b, off);
  }
  return PTC_OK;
}

/* ---- operands from attributes -------------------------------------------------------------- */

typedef struct scalar_op {
  ref_tensor t;
  union {
    double f;
    int64_t i;
  } v;
} scalar_op;

/* Promotion category of a scalar attribute: -1 absent, 0 bool, 1 int, 2 float. */
static int scalar_cat(const ref_call* c, const char* name) {
  const gattr* a = c->attrs ? gattrs_find(c->attrs, name) : NULL;
  if (!a) return -1;
  return a->type == PTC_ATTR_FLOAT ? 2 : a->type == PTC_ATTR_BOOL ? 0 : 1;
}

/* A rank-0 operand holding a scalar attribute; NULL when absent. */
static const ref_tensor* scalar_operand(const ref_call* c, const char* name, scalar_op* s) {
  int cat = scalar_cat(c, name);
  if (cat < 0) return NULL;
  memset(&s->t, 0, sizeof s->t);
  s->t.data = &s->v;
  if (cat == 2) {
    s->t.dtype = PTC_F64;
    s->v.f = ref_attr_float(c, name, 0);
  } else {
    s->t.dtype = PTC_I64;
    s->v.i = ref_attr_int(c, name, 0);
  }
  return &s->t;
}

/* Tensor input i if present, else the scalar attribute `name`. */
static const ref_tensor* operand(const ref_call* c, size_t i, const char* name, scalar_op* s) {
  if (c->n_in > i && c->in[i]) return c->in[i];
  return scalar_operand(c, name, s);
}

/* ATen result_type of the inputs [first, n_in) plus a scalar (meta.c's rule). */
static int32_t common_dtype(const ref_call* c, size_t first, int scat) {
  meta_tensor mt[MAX_OPS];
  const meta_tensor* mp[MAX_OPS];
  meta_ctx m;
  memset(&m, 0, sizeof m);
  m.n_in = c->n_in < MAX_OPS ? c->n_in : MAX_OPS;
  for (size_t i = 0; i < m.n_in; i++) {
    mp[i] = NULL;
    if (!c->in[i]) continue;
    memset(&mt[i], 0, sizeof mt[i]);
    mt[i].dtype = c->in[i]->dtype;
    mt[i].rank = (uint32_t)c->in[i]->rank;
    mp[i] = &mt[i];
  }
  m.in = mp;
  return meta_result_type(&m, first, scat);
}

/* ---- unary ops ----------------------------------------------------------------------------- */

static double un_f(const double* x, pw_call* k) { return k->uf(x[0]); }
static int64_t un_i(const int64_t* x, pw_call* k) { return k->ui(x[0]); }

static double f_neg(double x) { return -x; }
static int64_t i_neg(int64_t x) { return (int64_t)(0u - (uint64_t)x); }
static int64_t i_abs(int64_t x) { return x < 0 ? i_neg(x) : x; }
static int64_t i_ident(int64_t x) { return x; }
static double f_ident(double x) { return x; }
static double f_rsqrt(double x) { return 1.0 / sqrt(x); }
static double f_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double f_relu(double x) { return x < 0 ? 0.0 : x; } /* NaN stays NaN */
static int64_t i_relu(int64_t x) { return x < 0 ? 0 : x; }
static double f_silu(double x) { return x / (1.0 + exp(-x)); }
static double f_reciprocal(double x) { return 1.0 / x; }
static double f_sign(double x) { return (double)((x > 0) - (x < 0)); } /* sign(NaN) = 0 */
static int64_t i_sign(int64_t x) { return (x > 0) - (x < 0); }
static double f_not(double x) { return x == 0; }
static int64_t i_not(int64_t x) { return x == 0; }
static double f_isnan(double x) { return isnan(x) ? 1 : 0; }
static double f_isinf(double x) { return isinf(x) ? 1 : 0; }
static int64_t i_false(int64_t x) {
  (void)x;
  return 0;
}
static double f_gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }
static double f_gelu_tanh(double x) {
  const double k = 0.79788456080286535588; /* sqrt(2/pi) */
  return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
}

/* Compute dtype of a unary op: the float result dtype, else the input's. */
static ptc_status run_unary(ref_call* c, un_fn_f uf, un_fn_i ui) {
  pw_call k;
  memset(&k, 0, sizeof k);
  k.uf = uf;
  k.ui = ui;
  k.f = uf ? un_f : NULL;
  k.i = ui ? un_i : NULL;
  k.cdt = is_float(c->out[0].dtype) ? c->out[0].dtype : c->in[0]->dtype;
  return run_pw(c, &k, 1, c->in);
}

/* name, floating function, integer function (NULL: ints never reach it) */
#define UNARY_KERNELS(X)                                                                       \
  X(neg, f_neg, i_neg) X(abs, fabs, i_abs) X(exp, exp, NULL) X(exp2, exp2, NULL)               \
  X(expm1, expm1, NULL) X(log, log, NULL) X(log2, log2, NULL) X(log1p, log1p, NULL)            \
  X(sqrt, sqrt, NULL) X(rsqrt, f_rsqrt, NULL) X(sin, sin, NULL) X(cos, cos, NULL)              \
  X(tan, tan, NULL) X(tanh, tanh, NULL) X(sigmoid, f_sigmoid, NULL) X(relu, f_relu, i_relu)    \
  X(silu, f_silu, NULL) X(erf, erf, NULL) X(floor, floor, i_ident) X(ceil, ceil, i_ident)      \
  X(trunc, trunc, i_ident) X(reciprocal, f_reciprocal, NULL) X(sign, f_sign, i_sign)           \
  X(logical_not, f_not, i_not) X(isnan, f_isnan, i_false) X(isinf, f_isinf, i_false)          \
  X(to_dtype, f_ident, i_ident) X(dropout, f_ident, i_ident)

#define UNARY_KERNEL(name, ff, fi) \
  static ptc_status k_##name(ref_call* c) { return run_unary(c, ff, fi); }
UNARY_KERNELS(UNARY_KERNEL)

static ptc_status k_gelu(ref_call* c) {
  bool t = strcmp(ref_attr_str(c, "approximate", "none"), "tanh") == 0;
  return run_unary(c, t ? f_gelu_tanh : f_gelu_erf, NULL);
}

/* round(decimals): ATen scales in the op-math dtype (f32 for f32/f16/bf16),
 * rounds half to even, and scales back. */
static double f_round_dec(const double* x, pw_call* k) {
  if (k->ten_neg) return nearbyint(cast_f(k->opdt, x[0] / k->ten)) * k->ten;
  return nearbyint(cast_f(k->opdt, x[0] * k->ten)) / k->ten;
}

static ptc_status k_round(ref_call* c) {
  int64_t d = ref_attr_int(c, "decimals", 0);
  if (d == 0) return run_unary(c, nearbyint, i_ident);
  pw_call k;
  memset(&k, 0, sizeof k);
  k.cdt = c->out[0].dtype;
  k.opdt = k.cdt == PTC_F64 ? PTC_F64 : PTC_F32;
  k.ten_neg = d < 0;
  k.ten = cast_f(k.opdt, pow(10.0, (double)(d < 0 ? -d : d)));
  k.f = f_round_dec;
  return run_pw(c, &k, 1, c->in);
}

/* ---- binary ops ---------------------------------------------------------------------------- */

static double bin_f(const double* x, pw_call* k) { return k->bf(x[0], x[1], k); }
static int64_t bin_i(const int64_t* x, pw_call* k) { return k->bi(x[0], x[1], k); }

static uint64_t to_u(int64_t v) { return (uint64_t)v; }
static int64_t to_s(uint64_t v) { return (int64_t)v; } /* modular (gcc/clang) */

static double f_add(double a, double b, pw_call* k) { return a + k->alpha_f * b; }
static int64_t i_add(int64_t a, int64_t b, pw_call* k) {
  return to_s(to_u(a) + to_u(k->alpha_i) * to_u(b));
}
static double f_sub(double a, double b, pw_call* k) { return a - k->alpha_f * b; }
static int64_t i_sub(int64_t a, int64_t b, pw_call* k) {
  return to_s(to_u(a) - to_u(k->alpha_i) * to_u(b));
}
/* simple binary scalar functions (no parameters) */
#define FBIN(name, expr)                                 \
  static double name(double a, double b, pw_call* k) { \
    (void)k;                                             \
    return (expr);                                       \
  }
#define IBIN(name, expr)                                    \
  static int64_t name(int64_t a, int64_t b, pw_call* k) { \
    (void)k;                                                \
    return (expr);                                          \
  }
FBIN(f_mul, a * b)
IBIN(i_mul, to_s(to_u(a) * to_u(b)))
FBIN(f_div, a / b)

/* Intermediate rounding to the compute dtype, as ATen's scalar_t arithmetic. */
static double rnd(pw_call* k, double v) { return cast_f(k->cdt, v); }

static double f_div_trunc(double a, double b, pw_call* k) { return trunc(rnd(k, a / b)); }

/* ATen's div_floor_floating (Python's // with IEEE results for b == 0). */
static double f_div_floor(double a, double b, pw_call* k) {
  if (b == 0) return a / b;
  double mod = fmod(a, b);
  double div = rnd(k, rnd(k, a - mod) / b);
  if (mod != 0 && (b < 0) != (mod < 0)) div = rnd(k, div - 1);
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  if (rnd(k, div - fl) > 0.5) fl += 1;
  return fl;
}

static bool int_zero(int64_t b, pw_call* k) {
  if (b != 0) return false;
  k->err = "integer division by zero";
  return true;
}

static int64_t i_div_trunc(int64_t a, int64_t b, pw_call* k) {
  if (int_zero(b, k)) return 0;
  if (b == -1) return i_neg(a); /* INT64_MIN / -1 wraps */
  return a / b;
}

static int64_t i_div_floor(int64_t a, int64_t b, pw_call* k) {
  if (int_zero(b, k)) return 0;
  if (b == -1) return i_neg(a);
  int64_t q = a / b;
  return ((a < 0) != (b < 0) && a % b != 0) ? q - 1 : q;
}

/* Python remainder: the result has the divisor's sign. */
static double f_rem(double a, double b, pw_call* k) {
  (void)k;
  double m = fmod(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;
  return m;
}

static int64_t i_rem(int64_t a, int64_t b, pw_call* k) {
  if (int_zero(b, k)) return 0;
  if (b == -1) return 0;
  int64_t m = a % b;
  return (m != 0 && (b < 0) != (m < 0)) ? m + b : m;
}

/* ATen's pow_tensor_scalar: a tensor to the scalar power 0.5 / -0.5 / 2 / 3
 * / -2 is sqrt / rsqrt / x*x / x*x*x / 1/(x*x) in the compute dtype
 * (-inf ** 0.5 is NaN, -0 ** -0.5 is -inf, 1e20f ** -2 is 0, unlike pow). */
static double f_pow(double a, double b, pw_call* k) {
  if (k->pow_scalar) {
    if (b == 0.5) return sqrt(a);
    if (b == -0.5) return 1.0 / rnd(k, sqrt(a));
    if (b == 2) return a * a;
    if (b == 3) return rnd(k, a * a) * a;
    if (b == -2) return 1.0 / rnd(k, a * a);
  }
  return pow(a, b);
}

/* ATen powi: negative exponents give 1, +-1 or 0 (integer truncation). */
static int64_t i_pow(int64_t a, int64_t b, pw_call* k) {
  (void)k;
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b & 1) ? -1 : 1;
    return 0;
  }
  uint64_t r = 1, base = to_u(a);
  for (uint64_t e = to_u(b); e; e >>= 1) {
    if (e & 1) r *= base;
    base *= base;
  }
  return to_s(r);
}

FBIN(f_max, isnan(a) || isnan(b) ? a + b : a > b ? a : b) /* NaN propagates */
IBIN(i_max, a > b ? a : b)
FBIN(f_min, isnan(a) || isnan(b) ? a + b : a < b ? a : b)
IBIN(i_min, a < b ? a : b)
FBIN(f_atan2, atan2(a, b))

#define CMP(name, expr)       \
  FBIN(f_##name, (expr) ? 1 : 0) \
  IBIN(i_##name, (expr) ? 1 : 0)
CMP(eq, a == b)
CMP(ne, a != b)
CMP(lt, a < b)
CMP(le, a <= b)
CMP(gt, a > b)
CMP(ge, a >= b)
CMP(land, a != 0 && b != 0)
CMP(lor, a != 0 || b != 0)
CMP(lxor, (a != 0) != (b != 0))
#undef CMP

IBIN(i_band, a & b)
IBIN(i_bor, a | b)
IBIN(i_bxor, a ^ b)

/* Compute dtype of a binary op: the float result dtype (true division,
 * atan2, float results), else ATen's common dtype (comparisons of an i8
 * tensor with 200 compare against the wrapped -56, as ATen does). */
static ptc_status run_binary(ref_call* c, bin_fn_f bf, bin_fn_i bi) {
  pw_call k;
  scalar_op so;
  memset(&k, 0, sizeof k);
  const ref_tensor* ops[2] = {c->in[0], operand(c, 1, "other", &so)};
  if (!ops[1]) return PTC_ERR(INVALID_ARGUMENT, "%s: missing second operand", op_name(c));
  int32_t odt = c->out[0].dtype;
  k.cdt = is_float(odt) ? odt : common_dtype(c, 0, scalar_cat(c, "other"));
  k.bf = bf;
  k.bi = bi;
  k.f = bf ? bin_f : NULL;
  k.i = bi ? bin_i : NULL;
  k.alpha_f = ref_attr_float(c, "alpha", 1.0);
  k.alpha_i = ref_attr_int(c, "alpha", 1);
  k.pow_scalar = bf == f_pow && ops[1] == &so.t;
  return run_pw(c, &k, 2, ops);
}

/* name, floating function, integer function */
#define BINARY_KERNELS(X)                                                                      \
  X(add, f_add, i_add) X(sub, f_sub, i_sub) X(mul, f_mul, i_mul) X(remainder, f_rem, i_rem)    \
  X(pow, f_pow, i_pow) X(maximum, f_max, i_max) X(minimum, f_min, i_min)                       \
  X(atan2, f_atan2, NULL) X(eq, f_eq, i_eq) X(ne, f_ne, i_ne) X(lt, f_lt, i_lt)                \
  X(le, f_le, i_le) X(gt, f_gt, i_gt) X(ge, f_ge, i_ge) X(logical_and, f_land, i_land)         \
  X(logical_or, f_lor, i_lor) X(logical_xor, f_lxor, i_lxor) X(bitwise_and, NULL, i_band)      \
  X(bitwise_or, NULL, i_bor) X(bitwise_xor, NULL, i_bxor)

#define BINARY_KERNEL(name, ff, fi) \
  static ptc_status k_##name(ref_call* c) { return run_binary(c, ff, fi); }
BINARY_KERNELS(BINARY_KERNEL)

static ptc_status k_div(ref_call* c) {
  const char* mode = ref_attr_str(c, "rounding_mode", "");
  if (strcmp(mode, "trunc") == 0) return run_binary(c, f_div_trunc, i_div_trunc);
  if (strcmp(mode, "floor") == 0) return run_binary(c, f_div_floor, i_div_floor);
  return run_binary(c, f_div, NULL);
}

/* ---- where / clamp / masked_fill ----------------------------------------------------------- */

static double f_where(const double* x, pw_call* k) {
  (void)k;
  return x[0] != 0 ? x[1] : x[2];
}
static int64_t i_where(const int64_t* x, pw_call* k) {
  (void)k;
  return x[0] != 0 ? x[1] : x[2];
}

static ptc_status k_where(ref_call* c) {
  pw_call k;
  memset(&k, 0, sizeof k);
  k.cdt = c->out[0].dtype;
  k.f = f_where;
  k.i = i_where;
  return run_pw(c, &k, 3, c->in);
}

/* clamp = min(max(x, lo), hi); NaN in x propagates; NaN in a tensor bound
 * gives NaN while a NaN scalar bound is ignored (ATen's two kernels). */
static double f_clamp(const double* x, pw_call* k) {
  double v = x[0];
  if (isnan(v)) return v;
  if (k->has_lo) {
    if (isnan(x[1]) && k->nan_bounds) return x[1];
    if (v < x[1]) v = x[1];
  }
  if (k->has_hi) {
    if (isnan(x[2]) && k->nan_bounds) return x[2];
    if (v > x[2]) v = x[2];
  }
  return v;
}

static int64_t i_clamp(const int64_t* x, pw_call* k) {
  int64_t v = x[0];
  if (k->has_lo && v < x[1]) v = x[1];
  if (k->has_hi && v > x[2]) v = x[2];
  return v;
}

static ptc_status k_clamp(ref_call* c) {
  pw_call k;
  scalar_op lo, hi;
  memset(&k, 0, sizeof k);
  const ref_tensor* ops[3] = {c->in[0], operand(c, 1, "min", &lo), operand(c, 2, "max", &hi)};
  k.has_lo = ops[1] != NULL;
  k.has_hi = ops[2] != NULL;
  k.nan_bounds = (c->n_in > 1 && c->in[1]) || (c->n_in > 2 && c->in[2]);
  for (size_t i = 1; i < 3; i++)
    if (!ops[i]) ops[i] = ops[0]; /* unused placeholder */
  k.cdt = c->out[0].dtype;
  k.f = f_clamp;
  k.i = i_clamp;
  return run_pw(c, &k, 3, ops);
}

static double f_masked(const double* x, pw_call* k) {
  (void)k;
  return x[1] != 0 ? x[2] : x[0];
}
static int64_t i_masked(const int64_t* x, pw_call* k) {
  (void)k;
  return x[1] != 0 ? x[2] : x[0];
}

static ptc_status k_masked_fill(ref_call* c) {
  pw_call k;
  scalar_op v;
  memset(&k, 0, sizeof k);
  const ref_tensor* ops[3] = {c->in[0], c->in[1], operand(c, 2, "value", &v)};
  if (!ops[2]) return PTC_ERR(INVALID_ARGUMENT, "masked_fill: missing value");
  k.cdt = c->out[0].dtype;
  k.f = f_masked;
  k.i = i_masked;
  return run_pw(c, &k, 3, ops);
}

/* ---- creation ops -------------------------------------------------------------------------- */

/* Stores a scalar attribute (float or integer/bool, by its type) everywhere. */
static ptc_status fill_attr(ref_call* c, const char* name) {
  ref_tensor* out = &c->out[0];
  int64_t n = ref_numel(out);
  if (scalar_cat(c, name) == 2) {
    double v = ref_attr_float(c, name, 0);
    for (int64_t e = 0; e < n; e++) ref_store_f(out, e, v);
  } else {
    int64_t v = ref_attr_int(c, name, 0);
    for (int64_t e = 0; e < n; e++) ref_store_i(out, e, v);
  }
  return PTC_OK;
}

static ptc_status fill_int(ref_call* c, int64_t v) {
  int64_t n = ref_numel(&c->out[0]);
  for (int64_t e = 0; e < n; e++) ref_store_i(&c->out[0], e, v);
  return PTC_OK;
}

static ptc_status k_full(ref_call* c) { return fill_attr(c, "fill_value"); }
static ptc_status k_fill(ref_call* c) { return fill_attr(c, "value"); }
static ptc_status k_zeros(ref_call* c) { return fill_int(c, 0); }
static ptc_status k_ones(ref_call* c) { return fill_int(c, 1); }

/* arange: start + i * step, in int64 with truncated arguments for integer
 * outputs and in double otherwise (ATen's accumulate types). */
static ptc_status k_arange(ref_call* c) {
  ref_tensor* out = &c->out[0];
  int64_t n = ref_numel(out);
  double start = ref_attr_float(c, "start", 0), step = ref_attr_float(c, "step", 1);
  if (is_float(out->dtype)) {
    for (int64_t e = 0; e < n; e++) ref_store_f(out, e, start + step * (double)e);
  } else {
    uint64_t s0 = to_u((int64_t)start), st = to_u((int64_t)step);
    for (int64_t e = 0; e < n; e++) ref_store_i(out, e, to_s(s0 + st * to_u(e)));
  }
  return PTC_OK;
}

static ptc_status k_eye(ref_call* c) {
  ref_tensor* out = &c->out[0];
  for (int64_t i = 0; i < out->shape[0]; i++)
    for (int64_t j = 0; j < out->shape[1]; j++)
      ref_store_i(out, i * out->shape[1] + j, i == j);
  return PTC_OK;
}

/* ---- random ops ---------------------------------------------------------------------------- */

/* Seed and stream: the `seed` attribute (stream 0) or the run seed with the
 * node index as stream. */
static void rng_of(const ref_call* c, uint64_t* seed, uint64_t* stream) {
  if (ref_attr_has(c, "seed")) {
    *seed = (uint64_t)ref_attr_int(c, "seed", 0);
    *stream = 0;
  } else {
    *seed = c->seed;
    *stream = c->node_index;
  }
}

/* Mantissa bits of a floating dtype: uniforms are truncated to them so a
 * value never rounds up to 1. */
static double mantissa_scale(int32_t dt) {
  switch (dt) {
    case PTC_F64: return 9007199254740992.0; /* 2^53 */
    case PTC_F16: return 2048.0;             /* 2^11 */
    case PTC_BF16: return 256.0;             /* 2^8 */
    default: return 16777216.0;              /* 2^24 */
  }
}

static ptc_status k_rand(ref_call* c) {
  ref_tensor* out = &c->out[0];
  uint64_t seed, stream;
  rng_of(c, &seed, &stream);
  double sc = mantissa_scale(out->dtype);
  int64_t n = ref_numel(out);
  for (int64_t e = 0; e < n; e++)
    ref_store_f(out, e, floor(ref_uniform(seed, stream, (uint64_t)e) * sc) / sc);
  return PTC_OK;
}

static ptc_status k_randn(ref_call* c) {
  ref_tensor* out = &c->out[0];
  uint64_t seed, stream;
  rng_of(c, &seed, &stream);
  int64_t n = ref_numel(out);
  for (int64_t e = 0; e < n; e++) ref_store_f(out, e, ref_normal(seed, stream, (uint64_t)e));
  return PTC_OK;
}

static double bernoulli_draw(double p, pw_call* k) {
  if (!(p >= 0 && p <= 1)) {
    k->err = "probability must be in [0, 1]";
    return 0;
  }
  return ref_uniform(k->seed, k->stream, (uint64_t)k->index) < p ? 1 : 0;
}

static double f_bernoulli(const double* x, pw_call* k) {
  return bernoulli_draw(k->p_attr ? k->p : x[0], k);
}
static int64_t i_bernoulli(const int64_t* x, pw_call* k) {
  (void)x;
  return (int64_t)bernoulli_draw(k->p, k);
}

static ptc_status k_bernoulli(ref_call* c) {
  pw_call k;
  memset(&k, 0, sizeof k);
  rng_of(c, &k.seed, &k.stream);
  k.p_attr = ref_attr_has(c, "p");
  k.p = ref_attr_float(c, "p", 0.5);
  k.cdt = c->in[0]->dtype;
  k.f = f_bernoulli;
  k.i = i_bernoulli;
  return run_pw(c, &k, 1, c->in);
}

/* ---- the table ----------------------------------------------------------------------------- */

#define KERNEL_ROW(name, ff, fi) {#name, k_##name},

const ref_kernel_entry ref_kernels_elementwise[] = {
    UNARY_KERNELS(KERNEL_ROW)
    BINARY_KERNELS(KERNEL_ROW)
    {"gelu", k_gelu},
    {"round", k_round},
    {"div", k_div},
    {"where", k_where},
    {"clamp", k_clamp},
    {"masked_fill", k_masked_fill},
    {"fill", k_fill},
    {"full", k_full},
    {"zeros", k_zeros},
    {"ones", k_ones},
    {"arange", k_arange},
    {"eye", k_eye},
    {"rand", k_rand},
    {"randn", k_randn},
    {"bernoulli", k_bernoulli},
};
const size_t ref_kernels_elementwise_count =
    sizeof ref_kernels_elementwise / sizeof ref_kernels_elementwise[0];
