/* test_cg_ops.c - generated C for every math/comparison/logical/select
 * opcode in f32, f64, f16, bf16, i32, i64, i8 and bool (one fused pointwise
 * kernel per dtype with one member node per op), compared with values
 * computed here with the ref backend's semantics (double math rounded to
 * the dtype; Python floor division and remainder; NaN-propagating max/min;
 * wrap-around integers) and with the IR interpreter; dtype conversions
 * between all ten dtypes against ir_scalar_convert and the interpreter; the
 * random ops bit-exactly against backends/ref's Philox; and the accuracy of
 * the generator's vectorisable float exp/log/tanh/sigmoid/sin/cos over 2^20 inputs
 * spread over every exponent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "cg_harness.h"
#include "lib/ir/ir_internal.h"

#define N 16

static const double fa[N] = {0.0, -0.0, 1.5,  -2.25, 3.0, -7.5,     0.5,       10.0,
                             -0.75, 2.0, NAN, INFINITY, -INFINITY, 1e-3, 100.0, -3.0};
static const double fb[N] = {2.0, 1.5,  -2.0,     0.5, 0.0,   3.0,  -4.0, NAN,
                             1.0, -0.0, 2.0, INFINITY, 1.0, -1e-3, 7.0, -3.0};
static const int64_t ia[N] = {0, 1, -1, 7, -7, 100, -100, 2147483647, -2147483647 - 1, 3, -3,
                              12, 5, -5, 64, 2};
static const int64_t ib[N] = {3, -3, 2, 2, 2, -7, 7, 1, -1, 5, 5, -5, 3, -2, 3, -1};
static const int64_t ba[N] = {0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0};
static const int64_t bb[N] = {0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0};

/* ---- reference semantics (independent of the generator) ----------------------------- */
static int64_t wrapi(int32_t dt, int64_t v) { return ir_wrap_int(v, dt); }
static int64_t s_(uint64_t u) { return (int64_t)u; }

static double py_mod_f(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;
  return m;
}

static double py_floordiv_f(double a, double b) {
  if (b == 0) return a / b;
  double m = fmod(a, b), d = (a - m) / b;
  if (m != 0 && (b < 0) != (m < 0)) d -= 1;
  if (d == 0) return copysign(0.0, a / b);
  double fl = floor(d);
  if (d - fl > 0.5) fl += 1;
  return fl;
}

static int64_t py_floordiv_i(int64_t a, int64_t b) {
  if (b == -1) return s_(0u - (uint64_t)a);
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int64_t py_mod_i(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t m = a % b;
  return (m != 0 && (b < 0) != (m < 0)) ? m + b : m;
}

static int64_t ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  for (uint64_t e = (uint64_t)b; e; e >>= 1) {
    if (e & 1) r *= x;
    x *= x;
  }
  return s_(r);
}

static double fmaxn(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double fminn(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

/* Float-domain result (double) of op on a, b, c. */
static double want_f(ir_opcode op, double a, double b, double c) {
  switch (op) {
    case IR_NEG: return -a;
    case IR_ABS: return fabs(a);
    case IR_EXP: return exp(a);
    case IR_EXP2: return exp2(a);
    case IR_EXPM1: return expm1(a);
    case IR_LOG: return log(a);
    case IR_LOG2: return log2(a);
    case IR_LOG1P: return log1p(a);
    case IR_SQRT: return sqrt(a);
    case IR_RSQRT: return 1.0 / sqrt(a);
    case IR_SIN: return sin(a);
    case IR_COS: return cos(a);
    case IR_TAN: return tan(a);
    case IR_TANH: return tanh(a);
    case IR_SIGMOID: return 1.0 / (1.0 + exp(-a));
    case IR_RELU: return a < 0 ? 0.0 : a;
    case IR_ERF: return erf(a);
    case IR_FLOOR: return floor(a);
    case IR_CEIL: return ceil(a);
    case IR_ROUND: return nearbyint(a);
    case IR_TRUNC: return trunc(a);
    case IR_RECIPROCAL: return 1.0 / a;
    case IR_SIGN: return (double)((a > 0) - (a < 0));
    case IR_NOT: return a == 0;
    case IR_ISNAN: return isnan(a) != 0;
    case IR_ISINF: return isinf(a) != 0;
    case IR_ADD: return a + b;
    case IR_SUB: return a - b;
    case IR_MUL: return a * b;
    case IR_DIV: return a / b;
    case IR_FLOORDIV: return py_floordiv_f(a, b);
    case IR_MOD: return py_mod_f(a, b);
    case IR_POW: return pow(a, b);
    case IR_MAX: return fmaxn(a, b);
    case IR_MIN: return fminn(a, b);
    case IR_ATAN2: return atan2(a, b);
    case IR_EQ: return a == b;
    case IR_NE: return a != b;
    case IR_LT: return a < b;
    case IR_LE: return a <= b;
    case IR_GT: return a > b;
    case IR_GE: return a >= b;
    case IR_AND: return a != 0 && b != 0;
    case IR_OR: return a != 0 || b != 0;
    case IR_XOR: return (a != 0) != (b != 0);
    case IR_WHERE: return c != 0 ? a : b;
    default: return NAN;
  }
}

/* Integer-domain result of op on a, b (c = condition of where). */
static int64_t want_i(ir_opcode op, int64_t a, int64_t b, int64_t c) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
    case IR_NEG: return s_(0u - ua);
    case IR_ABS: return a < 0 ? s_(0u - ua) : a;
    case IR_RELU: return a < 0 ? 0 : a;
    case IR_FLOOR:
    case IR_CEIL:
    case IR_ROUND:
    case IR_TRUNC: return a;
    case IR_SIGN: return (a > 0) - (a < 0);
    case IR_NOT: return a == 0;
    case IR_ISNAN:
    case IR_ISINF: return 0;
    case IR_BNOT: return ~a;
    case IR_ADD: return s_(ua + ub);
    case IR_SUB: return s_(ua - ub);
    case IR_MUL: return s_(ua * ub);
    case IR_DIV: return b == -1 ? s_(0u - ua) : a / b;
    case IR_FLOORDIV: return py_floordiv_i(a, b);
    case IR_MOD: return py_mod_i(a, b);
    case IR_POW: return ipow(a, b);
    case IR_MAX: return a > b ? a : b;
    case IR_MIN: return a < b ? a : b;
    case IR_EQ: return a == b;
    case IR_NE: return a != b;
    case IR_LT: return a < b;
    case IR_LE: return a <= b;
    case IR_GT: return a > b;
    case IR_GE: return a >= b;
    case IR_AND: return a != 0 && b != 0;
    case IR_OR: return a != 0 || b != 0;
    case IR_XOR: return (a != 0) != (b != 0);
    case IR_BAND: return a & b;
    case IR_BOR: return a | b;
    case IR_BXOR: return a ^ b;
    case IR_WHERE: return c != 0 ? a : b;
    default: return 0;
  }
}

/* ---- op lists ----------------------------------------------------------------------- */
static const ir_opcode float_ops[] = {
    IR_NEG,  IR_ABS,   IR_EXP,     IR_EXP2,  IR_EXPM1, IR_LOG,   IR_LOG2,     IR_LOG1P, IR_SQRT,
    IR_RSQRT, IR_SIN,  IR_COS,     IR_TAN,   IR_TANH,  IR_SIGMOID, IR_RELU,   IR_ERF,   IR_FLOOR,
    IR_CEIL, IR_ROUND, IR_TRUNC,   IR_RECIPROCAL, IR_SIGN, IR_NOT, IR_ISNAN,  IR_ISINF, IR_ADD,
    IR_SUB,  IR_MUL,   IR_DIV,     IR_FLOORDIV, IR_MOD, IR_POW,   IR_MAX,     IR_MIN,   IR_ATAN2,
    IR_EQ,   IR_NE,    IR_LT,      IR_LE,    IR_GT,    IR_GE,    IR_AND,      IR_OR,    IR_XOR,
    IR_WHERE};
static const ir_opcode int_ops[] = {
    IR_NEG, IR_ABS,  IR_RELU, IR_FLOOR, IR_CEIL, IR_ROUND, IR_TRUNC, IR_SIGN, IR_NOT, IR_ISNAN,
    IR_ISINF, IR_BNOT, IR_ADD, IR_SUB,  IR_MUL,  IR_DIV,   IR_FLOORDIV, IR_MOD, IR_POW, IR_MAX,
    IR_MIN, IR_EQ,   IR_NE,   IR_LT,    IR_LE,   IR_GT,    IR_GE,    IR_AND,  IR_OR,  IR_XOR,
    IR_BAND, IR_BOR, IR_BXOR, IR_WHERE};
static const ir_opcode bool_ops[] = {IR_NOT, IR_BNOT, IR_ABS, IR_AND, IR_OR,  IR_XOR, IR_BAND,
                                     IR_BOR, IR_BXOR, IR_EQ,  IR_NE,  IR_LT,  IR_LE,  IR_GT,
                                     IR_GE,  IR_MAX,  IR_MIN, IR_ADD, IR_MUL, IR_WHERE};

static int nargs_of(ir_opcode op) {
  if (op == IR_WHERE) return 3;
  return op >= IR_ADD && op <= IR_BXOR ? 2 : 1;
}

static bool bool_result(ir_opcode op) {
  return op == IR_NOT || op == IR_ISNAN || op == IR_ISINF || (op >= IR_EQ && op <= IR_XOR);
}

/* Storage helpers. */
static void store_val(int32_t dt, void* p, int64_t i, double f, int64_t v) {
  ir_scalar s = {f, v};
  ir_scalar_store(p, dt, i, s);
}

static ir_scalar load_val(int32_t dt, const void* p, int64_t i) { return ir_scalar_load(p, dt, i); }

static void fill_inputs(int32_t dt, void* a, void* b, void* cond) {
  for (int64_t i = 0; i < N; i++) {
    bool fl = ptc_dtype_is_float(dt), bo = dt == PTC_BOOL;
    store_val(dt, a, i, fl ? ir_scalar_of_f(fa[i], dt).f : 0, bo ? ba[i] : wrapi(dt, ia[i]));
    store_val(dt, b, i, fl ? ir_scalar_of_f(fb[i], dt).f : 0, bo ? bb[i] : wrapi(dt, ib[i]));
    store_val(PTC_BOOL, cond, i, 0, (i * 7) % 3 == 0);
  }
}

/* Tolerance of float results of dtype dt. */
static double rtol_of(int32_t dt) {
  switch (dt) {
    case PTC_F64: return 1e-13;
    case PTC_F16: return 2e-3;
    case PTC_BF16: return 1.6e-2;
    default: return 1e-6;
  }
}

static void check_op(ir_opcode op, int32_t dt, int32_t rdt, const void* a, const void* b,
                     const void* cond, const void* out) {
  int bad = 0;
  for (int64_t i = 0; i < N && bad < 3; i++) {
    ir_scalar x = load_val(dt, a, i), y = load_val(dt, b, i), c = load_val(PTC_BOOL, cond, i);
    ir_scalar got = load_val(rdt, out, i);
    bool ok;
    double wf = 0;
    int64_t wi = 0;
    if (ptc_dtype_is_float(dt)) {
      wf = want_f(op, x.f, y.f, (double)c.i);
      if (ptc_dtype_is_float(rdt)) {
        wf = ir_round_float(wf, rdt);
        ok = cgh_close(got.f, wf, rtol_of(rdt), rtol_of(rdt) * 1e-3);
      } else {
        wi = (int64_t)wf;
        ok = got.i == wi;
      }
    } else {
      wi = dt == PTC_BOOL && op == IR_BNOT ? x.i == 0 : wrapi(rdt, want_i(op, x.i, y.i, c.i));
      ok = got.i == wi;
    }
    if (!ok) {
      bad++;
      printf("FAIL %s %s[%lld]: a=%g/%lld b=%g/%lld got %.9g/%lld want %.9g/%lld\n",
             ir_opcode_name(op), ptc_dtype_name(dt), (long long)i, x.f, (long long)x.i, y.f,
             (long long)y.i, got.f, (long long)got.i, wf, (long long)wi);
    }
    CHECK(ok);
  }
}

/* One kernel computing every op of `ops` for dtype dt. */
static void test_dtype(int32_t dt, const ir_opcode* ops, size_t n_ops) {
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  const sym_expr* sz[1] = {cgh_c(&h, N)};
  int32_t A = cgh_buffer(&h, true, dt, 1, sz), B = cgh_buffer(&h, true, dt, 1, sz);
  int32_t C = cgh_buffer(&h, true, PTC_BOOL, 1, sz);
  int32_t out[64];
  uint32_t nodes[64];
  const sym_expr* x0 = h.p->xvars[0];
  for (size_t k = 0; k < n_ops; k++) {
    ir_opcode op = ops[k];
    int32_t rdt = bool_result(op) ? PTC_BOOL : dt;
    out[k] = cgh_buffer(&h, false, rdt, 1, sz);
    ir_body b = {0};
    ir_val va = ir_ops_load(h.p, &b, A, x0), r;
    int na = nargs_of(op);
    if (na == 1) {
      r = ir_ops_unary(&b, op, va, rdt);
    } else if (na == 2) {
      r = ir_ops_binary(&b, op, va, ir_ops_load(h.p, &b, B, x0), rdt);
    } else {
      ir_val c = ir_ops_load(h.p, &b, C, x0);
      r = ir_ops_where(&b, c, va, ir_ops_load(h.p, &b, B, x0), rdt);
    }
    ir_ops_store(h.p, &b, out[k], x0, r);
    CHECK(ir_body_ok(&b));
    nodes[k] = cgh_node(&h, IR_POINTWISE, out[k], sz, 1, NULL, 0, &b);
  }
  sched_plan* s = cgh_plan(&h, nodes, NULL, (uint32_t)n_ops, sz, 1, NULL, 0);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    void* mem[80] = {0};
    for (size_t i = 0; i < h.p->buffers.len; i++) mem[i] = calloc(N, 8);
    fill_inputs(dt, mem[A], mem[B], mem[C]);
    cpu_kernel_ctx kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == 0);
    for (size_t i = 0; i < n_ops; i++)
      check_op(ops[i], dt, ir_buf(h.p, out[i])->dtype, mem[A], mem[B], mem[C], mem[out[i]]);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, rtol_of(dt), rtol_of(dt) * 1e-3) == 0);
    for (size_t i = 0; i < h.p->buffers.len; i++) free(mem[i]);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- conversions ---------------------------------------------------------------------- */
static const double conv_f[N] = {0.0, -0.0, 1.5, -2.5, 255.9, -128.7, 3e9, -3e9, 1e20, 65504.0,
                                  70000.0, NAN, INFINITY, -INFINITY, 0.1, 1e-8};
static const int64_t conv_i[N] = {0, 1, -1, 127, 128, -129, 255, 256, 32767, -32769, 2147483647,
                                  -2147483648LL, 4294967297LL, INT64_MAX, INT64_MIN, 16777217};

static void test_conversions_from(int32_t from) {
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  const sym_expr* sz[1] = {cgh_c(&h, N)};
  const sym_expr* x0 = h.p->xvars[0];
  int32_t A = cgh_buffer(&h, true, from, 1, sz);
  int32_t out[PTC_DTYPE_COUNT];
  uint32_t nodes[PTC_DTYPE_COUNT];
  for (int32_t to = 0; to < PTC_DTYPE_COUNT; to++) {
    out[to] = cgh_buffer(&h, false, to, 1, sz);
    ir_body b = {0};
    ir_val v = ir_ops_to_dtype(&b, ir_ops_load(h.p, &b, A, x0), to);
    ir_ops_store(h.p, &b, out[to], x0, v);
    nodes[to] = cgh_node(&h, IR_POINTWISE, out[to], sz, 1, NULL, 0, &b);
  }
  sched_plan* s = cgh_plan(&h, nodes, NULL, PTC_DTYPE_COUNT, sz, 1, NULL, 0);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    void* mem[16] = {0};
    for (size_t i = 0; i < h.p->buffers.len; i++) mem[i] = calloc(N, 8);
    bool fl = ptc_dtype_is_float(from);
    for (int64_t i = 0; i < N; i++) {
      ir_scalar v = fl ? ir_scalar_of_f(conv_f[i], from) : ir_scalar_of_i(conv_i[i], from);
      ir_scalar_store(mem[A], from, i, v);
    }
    cpu_kernel_ctx kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == 0);
    for (int32_t to = 0; to < PTC_DTYPE_COUNT; to++) {
      for (int64_t i = 0; i < N; i++) {
        ir_scalar in = ir_scalar_load(mem[A], from, i);
        ir_scalar want = ir_scalar_convert(in, from, to);
        ir_scalar got = ir_scalar_load(mem[out[to]], to, i);
        bool same = ptc_dtype_is_float(to)
                        ? (isnan(want.f) ? isnan(got.f) : memcmp(&got.f, &want.f, 8) == 0)
                        : got.i == want.i;
        if (!same)
          printf("FAIL convert %s -> %s [%lld]: got %g/%lld want %g/%lld\n",
                 ptc_dtype_name(from), ptc_dtype_name(to), (long long)i, got.f,
                 (long long)got.i, want.f, (long long)want.i);
        CHECK(same);
      }
    }
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 0, 0) == 0);
    for (size_t i = 0; i < h.p->buffers.len; i++) free(mem[i]);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- random ops ------------------------------------------------------------------------- */
static void test_random(void) {
  enum { R = 1000 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  const sym_expr* sz[1] = {cgh_c(&h, R)};
  const sym_expr* x0 = h.p->xvars[0];
  static const int32_t dts[4] = {PTC_F32, PTC_F64, PTC_F16, PTC_F64};
  static const int normal[4] = {0, 0, 0, 1};
  int32_t out[4];
  uint32_t nodes[4];
  for (int j = 0; j < 4; j++) {
    out[j] = cgh_buffer(&h, false, dts[j], 1, sz);
    ir_body b = {0};
    ir_val v = ir_ops_rand(h.p, &b, normal[j], sym_add_c(h.p->env, x0, 3), 7 + j, dts[j]);
    ir_ops_store(h.p, &b, out[j], x0, v);
    nodes[j] = cgh_node(&h, IR_POINTWISE, out[j], sz, 1, NULL, 0, &b);
  }
  sched_plan* s = cgh_plan(&h, nodes, NULL, 4, sz, 1, NULL, 0);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    void* mem[4];
    for (int j = 0; j < 4; j++) mem[j] = calloc(R, 8);
    const uint64_t seed = 0x1234567890abcdefull;
    cpu_kernel_ctx kc = cgh_run(&k, mem, NULL, seed);
    CHECK(kc.error == 0);
    static const double scale[4] = {16777216.0, 9007199254740992.0, 2048.0, 0};
    int bad = 0;
    for (int64_t i = 0; i < R; i++) {
      for (int j = 0; j < 4; j++) {
        uint64_t e = (uint64_t)i + 3;
        double w = normal[j] ? ref_normal(seed, 7 + (uint64_t)j, e)
                             : floor(ref_uniform(seed, 7 + (uint64_t)j, e) * scale[j]) / scale[j];
        w = ir_round_float(w, dts[j]);
        double got = ir_scalar_load(mem[out[j]], dts[j], i).f;
        if (got != w && bad++ < 3) printf("FAIL rand %d[%lld]: %.17g vs %.17g\n", j, (long long)i, got, w);
        CHECK(got == w);
        if (!normal[j]) CHECK(got >= 0 && got < 1);
      }
    }
    /* (no interpreter check: it truncates f16 uniforms to 24 bits where the ref
     * backend uses the f16 mantissa; the lowering only emits f32/f64 rand) */
    for (int j = 0; j < 4; j++) free(mem[j]);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- vectorised float exp / log / tanh / sigmoid: accuracy ------------------------------ */

/* Error of got in units of the last place of the float nearest to w. */
static double ulp_error(float got, double w) {
  float wf = (float)w;
  if (got == wf || (isnan(got) && isnan(w))) return 0;
  if (isnan(got) || isnan(w) || isinf(got) || isinf(wf)) return 1e9;
  int e;
  frexp(wf, &e);
  double u = ldexp(1.0, e - 24);
  return fabs((double)got - w) / (u < 1.401298464324817e-45 ? 1.401298464324817e-45 : u);
}

static void test_transcendental_accuracy(void) {
  enum { NS = 1 << 20, NOPS = 6 };
  static const ir_opcode ops[NOPS] = {IR_EXP, IR_LOG, IR_TANH, IR_SIGMOID, IR_SIN, IR_COS};
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  const sym_expr* sz[1] = {cgh_c(&h, NS)};
  const sym_expr* x0 = h.p->xvars[0];
  int32_t A = cgh_buffer(&h, true, PTC_F32, 1, sz);
  int32_t out[NOPS];
  uint32_t nodes[NOPS];
  for (int j = 0; j < NOPS; j++) {
    out[j] = cgh_buffer(&h, false, PTC_F32, 1, sz);
    ir_body b = {0};
    ir_ops_store(h.p, &b, out[j], x0, ir_ops_unary(&b, ops[j], ir_ops_load(h.p, &b, A, x0), PTC_F32));
    nodes[j] = cgh_node(&h, IR_POINTWISE, out[j], sz, 1, NULL, 0, &b);
  }
  sched_plan* s = cgh_plan(&h, nodes, NULL, NOPS, sz, 1, NULL, 0);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    float* x = malloc(NS * sizeof *x);
    float* y[NOPS];
    for (int j = 0; j < NOPS; j++) y[j] = malloc(NS * sizeof *y[j]);
    for (uint32_t i = 0; i < NS; i++) {
      uint32_t u = i * 4099u; /* every exponent, both signs, specials */
      memcpy(&x[i], &u, 4);
      /* a quarter in sin/cos's polynomial range, in runs (blocks of the
       * fast-trig loop without a large argument) */
      if ((i >> 9) % 4 == 1) x[i] = ldexpf(x[i] - truncf(x[i]), (int)(i % 21)) + (float)(i % 7);
    }
    void* mem[1 + NOPS] = {x, y[0], y[1], y[2], y[3], y[4], y[5]};
    cgh_run(&k, mem, NULL, 0);
    static const double limit[NOPS] = {1.0, 1.0, 1.5, 2.5, 1.6, 1.6};
    for (int j = 0; j < NOPS; j++) {
      double worst = 0;
      float at = 0;
      for (uint32_t i = 0; i < NS; i++) {
        double xd = x[i];
        double w = j == 0 ? exp(xd) : j == 1 ? log(xd) : j == 2 ? tanh(xd)
                 : j == 3 ? 1.0 / (1.0 + exp(-xd)) : j == 4 ? sin(xd) : cos(xd);
        double e = ulp_error(y[j][i], w);
        if (e > worst) worst = e, at = x[i];
      }
      printf("%s f32: max error %.3f ulp (at %.9g)\n", ir_opcode_name(ops[j]), worst, at);
      CHECK(worst <= limit[j]);
    }
    free(x);
    for (int j = 0; j < NOPS; j++) free(y[j]);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

int main(void) {
  static const int32_t float_dts[] = {PTC_F32, PTC_F64, PTC_F16, PTC_BF16};
  for (size_t i = 0; i < sizeof float_dts / sizeof float_dts[0]; i++)
    test_dtype(float_dts[i], float_ops, sizeof float_ops / sizeof float_ops[0]);
  static const int32_t int_dts[] = {PTC_I32, PTC_I64, PTC_I8};
  for (size_t i = 0; i < sizeof int_dts / sizeof int_dts[0]; i++)
    test_dtype(int_dts[i], int_ops, sizeof int_ops / sizeof int_ops[0]);
  test_dtype(PTC_BOOL, bool_ops, sizeof bool_ops / sizeof bool_ops[0]);
  for (int32_t from = 0; from < PTC_DTYPE_COUNT; from++) test_conversions_from(from);
  test_random();
  test_transcendental_accuracy();
  return check_summary("cpu_codegen_ops");
}
