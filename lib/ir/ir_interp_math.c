/* ir_interp_math.c - scalar semantics of the IR's math ops and reductions
 * for the interpreter, matching the ref backend: floating ops compute in
 * double and round once to the op's dtype; integer ops compute in int64
 * with wrap-around and wrap to the op's dtype; max/min propagate NaN;
 * floor division and remainder follow Python; argmax/argmin keep the first
 * extreme with NaN beating everything. */
#include "ir_interp_internal.h"

#include <math.h>

static bool is_f(int32_t dt) { return ptc_dtype_is_float(dt); }
static uint64_t u(int64_t v) { return (uint64_t)v; }
static int64_t s(uint64_t v) { return (int64_t)v; }

static ir_scalar fres(double v, int32_t dt) {
  ir_scalar r = {v, 0};
  if (is_f(dt)) {
    r.f = ir_round_float(v, dt);
    return r;
  }
  return ir_scalar_of_f(v, dt);
}

static ir_scalar ires(int64_t v, int32_t dt) {
  ir_scalar r = {0.0, v};
  if (is_f(dt)) return ir_scalar_of_i(v, dt);
  r.i = ir_wrap_int(v, dt);
  return r;
}

/* ---- unary ---------------------------------------------------------------------------------- */

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static bool unary_f(ir_opcode op, double x, double* r) {
  switch (op) {
    case IR_NEG: *r = -x; break;
    case IR_ABS: *r = fabs(x); break;
    case IR_EXP: *r = exp(x); break;
    case IR_EXP2: *r = exp2(x); break;
    case IR_EXPM1: *r = expm1(x); break;
    case IR_LOG: *r = log(x); break;
    case IR_LOG2: *r = log2(x); break;
    case IR_LOG1P: *r = log1p(x); break;
    case IR_SQRT: *r = sqrt(x); break;
    case IR_RSQRT: *r = 1.0 / sqrt(x); break;
    case IR_SIN: *r = sin(x); break;
    case IR_COS: *r = cos(x); break;
    case IR_TAN: *r = tan(x); break;
    case IR_TANH: *r = tanh(x); break;
    case IR_SIGMOID: *r = sigmoid(x); break;
    case IR_RELU: *r = x < 0 ? 0.0 : x; break;
    case IR_ERF: *r = erf(x); break;
    case IR_FLOOR: *r = floor(x); break;
    case IR_CEIL: *r = ceil(x); break;
    case IR_ROUND: *r = nearbyint(x); break;
    case IR_TRUNC: *r = trunc(x); break;
    case IR_RECIPROCAL: *r = 1.0 / x; break;
    case IR_SIGN: *r = (double)((x > 0) - (x < 0)); break;
    case IR_NOT: *r = x == 0; break;
    case IR_ISNAN: *r = isnan(x) ? 1 : 0; break;
    case IR_ISINF: *r = isinf(x) ? 1 : 0; break;
    default: return false;
  }
  return true;
}

static bool unary_i(ir_opcode op, int64_t x, int32_t xdt, int64_t* r) {
  switch (op) {
    case IR_NEG: *r = s(0u - u(x)); break;
    case IR_ABS: *r = x < 0 ? s(0u - u(x)) : x; break;
    case IR_RELU: *r = x < 0 ? 0 : x; break;
    case IR_FLOOR:
    case IR_CEIL:
    case IR_ROUND:
    case IR_TRUNC: *r = x; break;
    case IR_SIGN: *r = (x > 0) - (x < 0); break;
    case IR_NOT: *r = x == 0; break;
    case IR_ISNAN:
    case IR_ISINF: *r = 0; break;
    case IR_BNOT: *r = xdt == PTC_BOOL ? !x : ~x; break;
    default: return false;
  }
  return true;
}

ir_scalar interp_unary(ir_opcode op, ir_scalar x, int32_t xdt, int32_t dt, const char** err) {
  if (!is_f(xdt)) {
    int64_t r;
    if (unary_i(op, x.i, xdt, &r)) return ires(r, dt);
    x.f = (double)x.i; /* a floating function of an integer */
  }
  double r = 0;
  if (!unary_f(op, x.f, &r)) *err = "op not defined for this dtype";
  return fres(r, dt);
}

/* ---- binary --------------------------------------------------------------------------------- */

/* ATen's div_floor_floating with intermediate rounding to dtype dt. */
static double floordiv_f(double a, double b, int32_t dt) {
  if (b == 0) return a / b;
  double mod = fmod(a, b);
  double div = ir_round_float(ir_round_float(a - mod, dt) / b, dt);
  if (mod != 0 && (b < 0) != (mod < 0)) div = ir_round_float(div - 1, dt);
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  if (ir_round_float(div - fl, dt) > 0.5) fl += 1;
  return fl;
}

static double mod_f(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;
  return m;
}

static int64_t pow_i(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, base = u(a);
  for (uint64_t e = u(b); e; e >>= 1) {
    if (e & 1) r *= base;
    base *= base;
  }
  return s(r);
}

static bool binary_f(ir_opcode op, double a, double b, int32_t dt, double* r) {
  switch (op) {
    case IR_ADD: *r = a + b; break;
    case IR_SUB: *r = a - b; break;
    case IR_MUL: *r = a * b; break;
    case IR_DIV: *r = a / b; break;
    case IR_FLOORDIV: *r = floordiv_f(a, b, dt); break;
    case IR_MOD: *r = mod_f(a, b); break;
    case IR_POW: *r = pow(a, b); break;
    case IR_MAX: *r = isnan(a) || isnan(b) ? a + b : a > b ? a : b; break;
    case IR_MIN: *r = isnan(a) || isnan(b) ? a + b : a < b ? a : b; break;
    case IR_ATAN2: *r = atan2(a, b); break;
    case IR_EQ: *r = a == b; break;
    case IR_NE: *r = a != b; break;
    case IR_LT: *r = a < b; break;
    case IR_LE: *r = a <= b; break;
    case IR_GT: *r = a > b; break;
    case IR_GE: *r = a >= b; break;
    case IR_AND: *r = a != 0 && b != 0; break;
    case IR_OR: *r = a != 0 || b != 0; break;
    case IR_XOR: *r = (a != 0) != (b != 0); break;
    default: return false;
  }
  return true;
}

static bool div_i(ir_opcode op, int64_t a, int64_t b, int64_t* r, const char** err) {
  if (b == 0) {
    *err = "integer division by zero";
    return true;
  }
  if (b == -1) {
    *r = op == IR_MOD ? 0 : s(0u - u(a));
    return true;
  }
  int64_t q = a / b, m = a % b;
  if (op == IR_DIV) *r = q;
  if (op == IR_FLOORDIV) *r = (m != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
  if (op == IR_MOD) *r = (m != 0 && (b < 0) != (m < 0)) ? m + b : m;
  return true;
}

static bool binary_i(ir_opcode op, int64_t a, int64_t b, int64_t* r, const char** err) {
  switch (op) {
    case IR_ADD: *r = s(u(a) + u(b)); break;
    case IR_SUB: *r = s(u(a) - u(b)); break;
    case IR_MUL: *r = s(u(a) * u(b)); break;
    case IR_DIV:
    case IR_FLOORDIV:
    case IR_MOD: return div_i(op, a, b, r, err);
    case IR_POW: *r = pow_i(a, b); break;
    case IR_MAX: *r = a > b ? a : b; break;
    case IR_MIN: *r = a < b ? a : b; break;
    case IR_EQ: *r = a == b; break;
    case IR_NE: *r = a != b; break;
    case IR_LT: *r = a < b; break;
    case IR_LE: *r = a <= b; break;
    case IR_GT: *r = a > b; break;
    case IR_GE: *r = a >= b; break;
    case IR_AND: *r = a != 0 && b != 0; break;
    case IR_OR: *r = a != 0 || b != 0; break;
    case IR_XOR: *r = (a != 0) != (b != 0); break;
    case IR_BAND: *r = a & b; break;
    case IR_BOR: *r = a | b; break;
    case IR_BXOR: *r = a ^ b; break;
    default: return false;
  }
  return true;
}

ir_scalar interp_binary(ir_opcode op, ir_scalar a, ir_scalar b, int32_t adt, int32_t dt,
                        const char** err) {
  if (!is_f(adt)) {
    int64_t r = 0;
    if (binary_i(op, a.i, b.i, &r, err)) return ires(r, dt);
    a.f = (double)a.i;
    b.f = (double)b.i;
  }
  double r = 0;
  if (!binary_f(op, a.f, b.f, is_f(dt) ? dt : PTC_F64, &r)) *err = "op not defined for this dtype";
  return fres(r, dt);
}

/* ---- reductions ----------------------------------------------------------------------------- */

void interp_acc_init(interp_acc* a, ir_rtype rt, int32_t vdt) {
  a->count = 0;
  a->best = 0;
  a->v.f = rt == IR_R_PROD ? 1.0 : 0.0;
  a->v.i = rt == IR_R_PROD || rt == IR_R_ALL;
  (void)vdt;
}

/* Whether x beats the current best (strictly; NaN beats everything). */
static bool beats(ir_scalar x, ir_scalar best, int32_t vdt, bool want_max) {
  if (!is_f(vdt)) return want_max ? x.i > best.i : x.i < best.i;
  if (isnan(best.f)) return false;
  if (isnan(x.f)) return true;
  return want_max ? x.f > best.f : x.f < best.f;
}

void interp_acc_fold(interp_acc* a, ir_rtype rt, ir_scalar v, int32_t vdt, int64_t index) {
  bool fl = is_f(vdt), first = a->count++ == 0;
  bool nz = fl ? v.f != 0 : v.i != 0;
  switch (rt) {
    case IR_R_SUM:
      if (fl) a->v.f += v.f;
      else a->v.i = s(u(a->v.i) + u(v.i));
      break;
    case IR_R_PROD:
      if (fl) a->v.f *= v.f;
      else a->v.i = s(u(a->v.i) * u(v.i));
      break;
    case IR_R_MAX:
    case IR_R_MIN:
    case IR_R_ARGMAX:
    case IR_R_ARGMIN: {
      bool want_max = rt == IR_R_MAX || rt == IR_R_ARGMAX;
      if (first || beats(v, a->v, vdt, want_max)) {
        a->v = v;
        a->best = index;
      }
      break;
    }
    case IR_R_ANY: a->v.i = a->v.i || nz; break;
    case IR_R_ALL: a->v.i = a->v.i && nz; break;
  }
}

ptc_status interp_acc_result(const interp_acc* a, ir_rtype rt, int32_t vdt, int32_t dt,
                             ir_scalar* out) {
  bool arg = rt == IR_R_ARGMAX || rt == IR_R_ARGMIN;
  if (a->count == 0 && rt >= IR_R_MAX && rt <= IR_R_ARGMIN)
    return PTC_ERR(INVALID_ARGUMENT, "%s: cannot reduce over a zero-size dimension",
                   ir_rtype_name(rt));
  if (arg) {
    *out = ir_scalar_of_i(a->best, dt);
    return PTC_OK;
  }
  int32_t from = rt == IR_R_ANY || rt == IR_R_ALL ? PTC_BOOL : vdt;
  *out = ir_scalar_convert(a->v, from, dt);
  return PTC_OK;
}

double interp_activation(int32_t act, double x) {
  switch (act) {
    case IR_ACT_RELU: return x < 0 ? 0.0 : x;
    case IR_ACT_GELU: return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
    case IR_ACT_GELU_TANH:
      return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case IR_ACT_SILU: return x / (1.0 + exp(-x));
    case IR_ACT_SIGMOID: return sigmoid(x);
    case IR_ACT_TANH: return tanh(x);
    default: return x;
  }
}
