/* randgraph_ops.c - the random-graph generator's op families: a weighted
 * table of families (unary, binary, view, reduce, norm, matmul, cat,
 * select, to_dtype), per family a table of ops with their accepted dtypes,
 * domain and error model, and one builder per family that picks operands,
 * conditions them and adds the node; and the extern-view blocks (GEMM
 * outputs viewed into further GEMMs and attention, rg_view_block). Public
 * API only. */
#include "randgraph_internal.h"

#include <math.h>
#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- operand filters ------------------------------------------------------------------ */
static bool f_float(const rg_val* v) { return rg_is_float(v->dtype); }
static bool f_numeric(const rg_val* v) { return v->dtype != PTC_BOOL; }
static bool f_int(const rg_val* v) { return rg_is_int(v->dtype); }
static bool f_exact(const rg_val* v) { return v->exact; }
static bool f_ranked(const rg_val* v) { return v->rank >= 1; }
static bool f_ranked_float(const rg_val* v) { return v->rank >= 1 && rg_is_float(v->dtype); }
static bool f_any(const rg_val* v) { (void)v; return true; }

/* Which operands an op accepts. */
enum { A_FLOAT, A_NUMERIC, A_INT, A_ANY };
static const rg_filter accept_filter[] = {f_float, f_numeric, f_int, f_any};

/* Unit roundoff used for an op's own extra rounding (ints compute in f32). */
static double op_roundoff(int32_t dt) { return rg_is_float(dt) ? rg_unit_roundoff(dt) : 5.96e-8; }

static double log2p(double n) { return log2(n < 1 ? 1 : n) + 1; }

/* Weighted choice among `n` weights. */
static size_t pick_weighted(rg_gen* G, const uint8_t* w, size_t stride, size_t n) {
  uint32_t total = 0;
  for (size_t i = 0; i < n; i++) total += w[i * stride];
  uint32_t r = (uint32_t)(rg_next(G) % (total ? total : 1));
  for (size_t i = 0; i < n; i++) {
    if (r < w[i * stride]) return i;
    r -= w[i * stride];
  }
  return 0;
}

static rg_model model_of(double mag, double lo, double err, bool exact) {
  rg_model m = {mag, lo, err, exact};
  return m;
}

/* ---- conditioning ------------------------------------------------------------------------ */
int32_t rg_make_positive(rg_gen* G, int32_t x) {
  if (x < 0) return -1;
  rg_val v = G->pool[x];
  if (v.lo >= 0.5) return x;
  if (v.dtype == PTC_BOOL) {
    ptc_attr a = ptc_attr_dtype("dtype", PTC_F32);
    x = rg_add1(G, "to_dtype", &v.v, 1, &a, 1, &(rg_model){1, 0, 0, true});
    if (x < 0) return -1;
    v = G->pool[x];
  }
  int32_t ax = rg_add1(G, "abs", &v.v, 1, NULL, 0, &(rg_model){v.mag, 0, v.err, v.exact});
  if (ax < 0) return -1;
  bool is_int = rg_is_int(v.dtype);
  ptc_attr other = is_int ? ptc_attr_int("other", 1) : ptc_attr_float("other", 0.5);
  double shift = is_int ? 1 : 0.5;
  rg_model m = model_of(v.mag + shift, shift, v.err, is_int);
  return rg_add1(G, "add", &G->pool[ax].v, 1, &other, 1, &m);
}

int32_t rg_make_small(rg_gen* G, int32_t x, double limit) {
  if (x < 0) return -1;
  const rg_val* v = &G->pool[x];
  if (v->mag <= limit) return x;
  rg_model m = model_of(1, -1, v->err, false);
  return rg_add1(G, "tanh", &v->v, 1, NULL, 0, &m);
}

int32_t rg_rescale(rg_gen* G, int32_t x) {
  if (x < 0) return -1;
  const rg_val* v = &G->pool[x];
  if (v->mag <= rg_mag_limit(v->dtype) || v->dtype == PTC_BOOL) return x;
  if (rg_is_int(v->dtype)) { /* remainder keeps ints exact and small */
    ptc_attr a = ptc_attr_int("other", 97);
    return rg_add1(G, "remainder", &v->v, 1, &a, 1, &(rg_model){97, 0, 0, v->exact});
  }
  double k = ceil(log2(v->mag)); /* a power of two: scaling stays exact */
  double f = ldexp(1.0, -(int)k);
  ptc_attr a = ptc_attr_float("other", f);
  rg_model m = model_of(v->mag * f, v->lo * f, v->err * f, v->exact);
  return rg_add1(G, "mul", &v->v, 1, &a, 1, &m);
}

/* ---- broadcasting ------------------------------------------------------------------------ */
/* Whether a and b broadcast without a guard; *numel gets the result's size. */
static bool broadcastable(const rg_gen* G, const rg_val* a, const rg_val* b, int64_t* numel) {
  uint32_t r = a->rank > b->rank ? a->rank : b->rank;
  ptc_dim out[RG_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) {
    const ptc_dim* da = i < a->rank ? &a->dims[a->rank - 1 - i] : NULL;
    const ptc_dim* db = i < b->rank ? &b->dims[b->rank - 1 - i] : NULL;
    bool a1 = !da || (!da->sym && da->value == 1);
    bool b1 = !db || (!db->sym && db->value == 1);
    if (!a1 && !b1 && !rg_dim_eq(da, db)) return false;
    out[r - 1 - i] = a1 ? (db ? *db : *da) : *da;
  }
  *numel = rg_numel_max(G, r, out);
  return true;
}

/* A second operand for x: an existing compatible value or a new input
 * (dtype `dt`, dims broadcastable against x). -1 if none could be made. */
static int32_t other_operand(rg_gen* G, int32_t x, int32_t dt, rg_filter ok) {
  if (rg_chance(G, 45)) {
    int32_t cand[RG_MAX_VALS];
    uint32_t n = 0;
    for (uint32_t i = 0; i < G->n_pool; i++) {
      const rg_val* v = &G->pool[i];
      int64_t numel;
      if ((int32_t)i == x || v->is_arg || v->rank > RG_MAX_RANK || (ok && !ok(v))) continue;
      if (broadcastable(G, &G->pool[x], v, &numel) && numel <= G->o->max_numel)
        cand[n++] = (int32_t)i;
    }
    if (n) return cand[rg_int(G, 0, (int64_t)n - 1)];
  }
  ptc_dim dims[RG_MAX_RANK];
  uint32_t r = rg_broadcast_dims(G, &G->pool[x], dims);
  return rg_new_input(G, dt, r, dims);
}

/* ---- unary ops ----------------------------------------------------------------------------- */
enum { D_ANY, D_POS, D_SMALL, D_UNIT, D_EXACT };

/* mag/lo of the result and the Lipschitz constant over the input's range. */
typedef void (*un_model_fn)(const rg_val* x, double c, double* mag, double* lo, double* lip);

static void um_neg(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)c;
  *mag = x->mag, *lo = -x->mag, *lip = 1;
}
static void um_abs(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)c;
  *mag = x->mag, *lo = x->lo > 0 ? x->lo : 0, *lip = 1;
}
static void um_round(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  *mag = x->mag + c, *lo = x->lo - c, *lip = 1;
}
static void um_bounded(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)x;
  *mag = 1, *lo = -1, *lip = c;
}
static void um_sigmoid(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)x;
  *mag = 1, *lo = 0, *lip = c;
}
static void um_exp(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  *mag = exp(x->mag * c), *lo = c < 0 ? -1 : 0, *lip = *mag * fabs(c);
  if (c < 0) *mag = exp(x->mag); /* expm1 (c = -1): same bound, range (-1, inf) */
}
static void um_log(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  double a = fabs(log(x->lo)), b = fabs(log(x->mag));
  *mag = (a > b ? a : b) * c, *lo = -*mag, *lip = c / x->lo;
}
static void um_log1p(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)c;
  *mag = log1p(x->mag), *lo = log1p(x->lo), *lip = 1 / (1 + x->lo);
}
static void um_sqrt(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)c;
  *mag = sqrt(x->mag), *lo = sqrt(x->lo), *lip = 0.5 / sqrt(x->lo);
}
static void um_rsqrt(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)c;
  *mag = 1 / sqrt(x->lo), *lo = 1 / sqrt(x->mag), *lip = 0.5 * pow(x->lo, -1.5);
}
static void um_recip(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)c;
  *mag = 1 / x->lo, *lo = 1 / x->mag, *lip = 1 / (x->lo * x->lo);
}
static void um_tan(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)c;
  double m = x->mag < 1 ? x->mag : 1;
  *mag = tan(m), *lo = -*mag, *lip = 1 / (cos(m) * cos(m));
}
static void um_act(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  *mag = x->mag, *lo = -0.3, *lip = c; /* silu, gelu */
}
static void um_pred(const rg_val* x, double c, double* mag, double* lo, double* lip) {
  (void)x, (void)c;
  *mag = 1, *lo = 0, *lip = 0;
}

typedef struct un_def {
  const char* name;
  uint8_t domain, accepts;
  bool keeps_exact;
  double ulps; /* extra rounding of the op, in units of roundoff */
  un_model_fn model;
  double c;
  uint8_t weight;
} un_def;

static const un_def unary_ops[] = {
    {"neg", D_ANY, A_NUMERIC, true, 0, um_neg, 0, 4},
    {"abs", D_ANY, A_NUMERIC, true, 0, um_abs, 0, 4},
    {"relu", D_ANY, A_NUMERIC, true, 0, um_abs, 0, 6},
    {"exp", D_SMALL, A_NUMERIC, false, 4, um_exp, 1, 5},
    {"exp2", D_SMALL, A_NUMERIC, false, 4, um_exp, 0.6931471805599453, 1},
    {"expm1", D_SMALL, A_NUMERIC, false, 4, um_exp, -1, 1},
    {"log", D_POS, A_NUMERIC, false, 4, um_log, 1, 4},
    {"log2", D_POS, A_NUMERIC, false, 4, um_log, 1.4426950408889634, 1},
    {"log1p", D_POS, A_NUMERIC, false, 4, um_log1p, 0, 1},
    {"sqrt", D_POS, A_NUMERIC, false, 1, um_sqrt, 0, 3},
    {"rsqrt", D_POS, A_NUMERIC, false, 2, um_rsqrt, 0, 2},
    {"reciprocal", D_POS, A_NUMERIC, false, 1, um_recip, 0, 2},
    {"sin", D_ANY, A_NUMERIC, false, 4, um_bounded, 1, 5},
    {"cos", D_ANY, A_NUMERIC, false, 4, um_bounded, 1, 5},
    {"tan", D_UNIT, A_NUMERIC, false, 4, um_tan, 0, 1},
    {"tanh", D_ANY, A_NUMERIC, false, 4, um_bounded, 1, 4},
    {"sigmoid", D_ANY, A_NUMERIC, false, 4, um_sigmoid, 0.25, 4},
    {"erf", D_ANY, A_NUMERIC, false, 4, um_bounded, 1.13, 2},
    {"silu", D_ANY, A_FLOAT, false, 4, um_act, 1.1, 3},
    {"gelu", D_ANY, A_FLOAT, false, 4, um_act, 1.13, 3},
    {"floor", D_EXACT, A_NUMERIC, true, 0, um_round, 1, 2},
    {"ceil", D_EXACT, A_NUMERIC, true, 0, um_round, 1, 1},
    {"trunc", D_EXACT, A_NUMERIC, true, 0, um_round, 1, 1},
    {"round", D_EXACT, A_NUMERIC, true, 0, um_round, 1, 1},
    {"sign", D_EXACT, A_NUMERIC, true, 0, um_bounded, 0, 1},
    {"logical_not", D_EXACT, A_ANY, true, 0, um_pred, 0, 1},
    {"isnan", D_ANY, A_ANY, true, 0, um_pred, 0, 1},
    {"isinf", D_ANY, A_NUMERIC, true, 0, um_pred, 0, 1},
};

static uint32_t b_unary(rg_gen* G) {
  const un_def* u = &unary_ops[pick_weighted(G, &unary_ops[0].weight, sizeof(un_def),
                                             N_OF(unary_ops))];
  int32_t x = rg_pick(G, accept_filter[u->accepts]);
  if (x < 0 || (u->domain == D_EXACT && !G->pool[x].exact)) return 0;
  if (u->domain == D_POS) x = rg_make_positive(G, x);
  if (u->domain == D_SMALL) x = rg_make_small(G, x, 3);
  if (u->domain == D_UNIT) x = rg_make_small(G, x, 1);
  if (x < 0) return 0;
  const rg_val* v = &G->pool[x];
  double mag, lo, lip;
  u->model(v, u->c, &mag, &lo, &lip);
  rg_model m = model_of(mag, lo, lip * v->err + u->ulps * op_roundoff(v->dtype) * mag,
                        u->keeps_exact && v->exact);
  ptc_attr a[1];
  size_t na = 0;
  if (!strcmp(u->name, "gelu") && rg_chance(G, 50)) a[na++] = ptc_attr_string("approximate", "tanh");
  return rg_add1(G, u->name, &v->v, 1, a, na, &m) >= 0;
}

/* ---- binary ops ------------------------------------------------------------------------------ */
enum { R_ADD, R_SUB, R_MUL, R_DIV, R_FLOORDIV, R_REM, R_POW, R_MAXMIN, R_ATAN2, R_BOOL, R_BITWISE };

typedef struct bin_def {
  const char* name;
  uint8_t accepts, rule;
  bool need_exact;
  uint8_t weight;
} bin_def;

static const bin_def binary_ops[] = {
    {"add", A_NUMERIC, R_ADD, false, 10},      {"sub", A_NUMERIC, R_SUB, false, 6},
    {"mul", A_NUMERIC, R_MUL, false, 10},      {"div", A_NUMERIC, R_DIV, false, 5},
    {"div", A_INT, R_FLOORDIV, false, 2},      {"remainder", A_NUMERIC, R_REM, false, 2},
    {"pow", A_NUMERIC, R_POW, false, 3},       {"maximum", A_NUMERIC, R_MAXMIN, false, 3},
    {"minimum", A_NUMERIC, R_MAXMIN, false, 2}, {"atan2", A_FLOAT, R_ATAN2, true, 1},
    {"eq", A_ANY, R_BOOL, true, 1},            {"ne", A_ANY, R_BOOL, true, 1},
    {"lt", A_NUMERIC, R_BOOL, true, 2},        {"le", A_NUMERIC, R_BOOL, true, 1},
    {"gt", A_NUMERIC, R_BOOL, true, 2},        {"ge", A_NUMERIC, R_BOOL, true, 1},
    {"logical_and", A_ANY, R_BOOL, true, 1},   {"logical_or", A_ANY, R_BOOL, true, 1},
    {"logical_xor", A_ANY, R_BOOL, true, 1},   {"bitwise_and", A_INT, R_BITWISE, true, 1},
    {"bitwise_or", A_INT, R_BITWISE, true, 1}, {"bitwise_xor", A_INT, R_BITWISE, true, 1},
};

/* The right operand: a tensor (pool index) or a Python scalar. */
typedef struct operand {
  int32_t idx;   /* -1: scalar */
  double s;      /* scalar value */
  bool s_int;    /* scalar is an int */
  rg_val sv;     /* the scalar seen as a value (for the model) */
} operand;

static operand scalar_operand(double s, bool is_int) {
  operand o;
  memset(&o, 0, sizeof o);
  o.idx = -1;
  o.s = s;
  o.s_int = is_int;
  o.sv.dtype = is_int ? PTC_I64 : PTC_F32;
  o.sv.mag = fabs(s);
  o.sv.lo = s;
  o.sv.exact = true;
  o.sv.is_scalar = true;
  return o;
}

static const rg_val* opv(const rg_gen* G, const operand* o) {
  return o->idx >= 0 ? &G->pool[o->idx] : &o->sv;
}

/* A scalar from a small table of friendly values, typed like x. */
static operand random_scalar(rg_gen* G, const rg_val* x) {
  static const double fs[] = {0.5, -1.25, 2.0, 3.0, 0.1, -0.75, 1.5};
  bool is_int = !rg_is_float(x->dtype) && rg_chance(G, 80);
  return is_int ? scalar_operand((double)rg_int(G, -3, 5), true)
                : scalar_operand(fs[rg_int(G, 0, (int64_t)N_OF(fs) - 1)], false);
}

/* A divisor: positive tensor (abs + shift) or a nonzero scalar. */
static operand divisor(rg_gen* G, int32_t x, bool want_int) {
  static const double fs[] = {0.5, 2.0, -1.5, 3.0, 0.75};
  if (rg_chance(G, 40)) {
    int32_t y = other_operand(G, x, G->pool[x].dtype, want_int ? f_int : f_numeric);
    operand o = scalar_operand(0, false);
    o.idx = rg_make_positive(G, y);
    if (o.idx >= 0) return o;
  }
  if (want_int) return scalar_operand((double)rg_int(G, 2, 7), true);
  return scalar_operand(fs[rg_int(G, 0, (int64_t)N_OF(fs) - 1)], false);
}

static operand general_operand(rg_gen* G, int32_t x, const bin_def* b) {
  const rg_val* v = &G->pool[x];
  if (b->rule != R_BITWISE && b->rule != R_BOOL && rg_chance(G, 35)) return random_scalar(G, v);
  if (b->rule == R_BOOL && rg_chance(G, 35)) {
    operand o = random_scalar(G, v);
    if (rg_chance(G, 40)) o = scalar_operand(0, !rg_is_float(v->dtype));
    return o;
  }
  int32_t dt = v->dtype;
  if (rg_is_float(dt) && rg_chance(G, 10)) dt = dt == PTC_F32 ? PTC_F64 : PTC_F32;
  rg_filter ok = b->need_exact ? f_exact : accept_filter[b->accepts];
  operand o = scalar_operand(0, false);
  o.idx = other_operand(G, x, dt, ok);
  if (o.idx >= 0 && b->need_exact && !G->pool[o.idx].exact) o.idx = -1;
  if (o.idx < 0) o = random_scalar(G, v);
  return o;
}

/* Exponent: a friendly scalar or a tensor squashed into [-1, 1]. */
static operand exponent(rg_gen* G, int32_t x) {
  static const double es[] = {2, 3, 0.5, -1, 1.5, -0.5};
  if (rg_is_float(G->pool[x].dtype) && rg_chance(G, 30)) {
    int32_t y = other_operand(G, x, G->pool[x].dtype, f_float);
    operand o = scalar_operand(0, false);
    o.idx = rg_make_small(G, y, 1);
    if (o.idx >= 0) return o;
  }
  if (!rg_is_float(G->pool[x].dtype)) return scalar_operand(2, true);
  return scalar_operand(es[rg_int(G, 0, (int64_t)N_OF(es) - 1)], false);
}


static bool both_int(const rg_val* x, const rg_val* y) {
  return !rg_is_float(x->dtype) && !rg_is_float(y->dtype);
}

/* Models of the binary rules: y is the right operand (a scalar is a value
 * with lo = the scalar, mag = its magnitude); alpha scales y in add/sub. */
typedef rg_model (*bin_model_fn)(const rg_val* x, const rg_val* y, double alpha);

static rg_model bm_add(const rg_val* x, const rg_val* y, double alpha) {
  double mag = x->mag + fabs(alpha) * y->mag;
  bool pos = x->lo >= 0 && alpha * y->lo >= 0 && y->lo >= 0;
  return model_of(mag, pos ? x->lo + alpha * y->lo : -mag, x->err + fabs(alpha) * y->err,
                  both_int(x, y));
}
static rg_model bm_sub(const rg_val* x, const rg_val* y, double alpha) {
  double mag = x->mag + fabs(alpha) * y->mag;
  return model_of(mag, -mag, x->err + fabs(alpha) * y->err, both_int(x, y));
}
static rg_model bm_mul(const rg_val* x, const rg_val* y, double alpha) {
  (void)alpha;
  double mag = x->mag * y->mag;
  bool pos = x->lo >= 0 && y->lo >= 0;
  return model_of(mag, pos ? x->lo * y->lo : -mag, x->err * y->mag + y->err * x->mag,
                  both_int(x, y));
}
/* y > 0 with lo >= 0.5 (a conditioned tensor) or a nonzero scalar. */
static rg_model bm_div(const rg_val* x, const rg_val* y, double alpha) {
  (void)alpha;
  double ymin = fabs(y->lo);
  double mag = x->mag / ymin;
  return model_of(mag, -mag, x->err / ymin + x->mag * y->err / (ymin * ymin), false);
}
static rg_model bm_floordiv(const rg_val* x, const rg_val* y, double alpha) {
  (void)y, (void)alpha;
  return model_of(x->mag + 1, -x->mag - 1, 0, true);
}
static rg_model bm_rem(const rg_val* x, const rg_val* y, double alpha) {
  (void)alpha;
  return model_of(y->mag, -y->mag, x->err, both_int(x, y));
}
static rg_model bm_pow(const rg_val* x, const rg_val* y, double alpha) {
  (void)alpha;
  bool scalar = y->is_scalar;
  double ex[2] = {scalar ? y->lo : -y->mag, scalar ? y->lo : y->mag};
  double base[2] = {x->lo, x->mag};
  double mag = 0, lo = INFINITY, d = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      double p = pow(base[i], ex[j]);
      mag = fmax(mag, p);
      lo = fmin(lo, p);
      d = fmax(d, fabs(ex[j]) * pow(base[i], ex[j] - 1));
    }
  double ln = fmax(fabs(log(x->lo)), fabs(log(x->mag)));
  return model_of(mag, lo, d * x->err + ln * mag * y->err, both_int(x, y));
}
static rg_model bm_maxmin(const rg_val* x, const rg_val* y, double alpha) {
  (void)alpha;
  return model_of(fmax(x->mag, y->mag), fmin(x->lo, y->lo), fmax(x->err, y->err),
                  x->exact && y->exact);
}
static rg_model bm_atan2(const rg_val* x, const rg_val* y, double alpha) {
  (void)x, (void)y, (void)alpha;
  return model_of(3.1416, -3.1416, 4 * 5.96e-8 * 3.1416, false);
}
static rg_model bm_bool(const rg_val* x, const rg_val* y, double alpha) {
  (void)x, (void)y, (void)alpha;
  return model_of(1, 0, 0, true);
}
static rg_model bm_bitwise(const rg_val* x, const rg_val* y, double alpha) {
  (void)alpha;
  double mag = 2 * fmax(x->mag, y->mag);
  return model_of(mag, -mag, 0, true);
}

static const bin_model_fn bin_models[] = {
    [R_ADD] = bm_add,   [R_SUB] = bm_sub,       [R_MUL] = bm_mul,         [R_DIV] = bm_div,
    [R_FLOORDIV] = bm_floordiv, [R_REM] = bm_rem, [R_POW] = bm_pow,       [R_MAXMIN] = bm_maxmin,
    [R_ATAN2] = bm_atan2, [R_BOOL] = bm_bool,   [R_BITWISE] = bm_bitwise,
};

/* A value accepted by `ok` and, if required, exact; -1 if none. */
static int32_t pick_operand(rg_gen* G, rg_filter ok, bool need_exact) {
  for (int tries = 0; tries < 6; tries++) {
    int32_t x = rg_pick(G, ok);
    if (x < 0 || !need_exact || G->pool[x].exact) return x;
  }
  return -1;
}

/* The right operand of binary op b for x (x may be replaced by its
 * conditioned form through *x). */
static operand right_operand(rg_gen* G, const bin_def* b, int32_t* x) {
  static const double rem_fs[] = {0.75, 1.5, 2.0};
  switch (b->rule) {
    case R_DIV: return divisor(G, *x, false);
    case R_FLOORDIV: return divisor(G, *x, true);
    case R_REM:
      if (!rg_is_float(G->pool[*x].dtype)) return divisor(G, *x, true);
      if (!G->pool[*x].exact) *x = -1; /* float remainder jumps: exact inputs only */
      return scalar_operand(rem_fs[rg_int(G, 0, 2)], false);
    case R_POW:
      *x = rg_make_positive(G, *x);
      return *x < 0 ? scalar_operand(2, true) : exponent(G, *x);
    default: return general_operand(G, *x, b);
  }
}

static bool symmetric_rule(int rule) {
  return rule == R_ADD || rule == R_SUB || rule == R_MUL || rule == R_MAXMIN || rule == R_BOOL ||
         rule == R_BITWISE;
}

static uint32_t b_binary(rg_gen* G) {
  const bin_def* b = &binary_ops[pick_weighted(G, &binary_ops[0].weight, sizeof(bin_def),
                                               N_OF(binary_ops))];
  int32_t x = pick_operand(G, accept_filter[b->accepts], b->need_exact);
  if (x < 0) return 0;
  operand y = right_operand(G, b, &x);
  if (x < 0) return 0;
  const rg_val* xv = &G->pool[x];
  ptc_attr attrs[2];
  size_t na = 0;
  double alpha = 1;
  if ((b->rule == R_ADD || b->rule == R_SUB) && rg_chance(G, 20)) {
    bool i = !rg_is_float(xv->dtype) && (y.idx < 0 ? y.s_int : !rg_is_float(G->pool[y.idx].dtype));
    alpha = i ? 2 : -0.5;
    attrs[na++] = i ? ptc_attr_int("alpha", 2) : ptc_attr_float("alpha", -0.5);
  }
  if (b->rule == R_FLOORDIV)
    attrs[na++] = ptc_attr_string("rounding_mode", rg_chance(G, 50) ? "floor" : "trunc");
  rg_model m = bin_models[b->rule](xv, opv(G, &y), alpha);
  if (y.idx < 0) {
    attrs[na++] = y.s_int ? ptc_attr_int("other", (int64_t)y.s) : ptc_attr_float("other", y.s);
    return rg_add1(G, b->name, &xv->v, 1, attrs, na, &m) >= 0;
  }
  ptc_value in[2] = {xv->v, G->pool[y.idx].v};
  if (symmetric_rule(b->rule) && rg_chance(G, 25)) {
    in[0] = G->pool[y.idx].v;
    in[1] = xv->v;
  }
  return rg_add1(G, b->name, in, 2, attrs, na, &m) >= 0;
}

/* ---- views ------------------------------------------------------------------------------------ */
static rg_model same_model(const rg_val* x) { return model_of(x->mag, x->lo, x->err, x->exact); }

static int64_t rand_dim(rg_gen* G, uint32_t rank) { return rg_int(G, 0, (int64_t)rank - 1); }

/* A negative spelling of dim d half of the time. */
static int64_t spell_dim(rg_gen* G, int64_t d, uint32_t rank) {
  return rg_chance(G, 30) ? d - (int64_t)rank : d;
}

static bool dim_is_static(const rg_val* x, int64_t d) { return !x->dims[d].sym; }

static int32_t v_transpose(rg_gen* G, const rg_val* x) {
  if (x->rank < 2) return -1;
  int64_t a = rand_dim(G, x->rank), b = rand_dim(G, x->rank);
  if (a == b) b = (a + 1) % x->rank;
  ptc_attr at[2] = {ptc_attr_int("dim0", spell_dim(G, a, x->rank)), ptc_attr_int("dim1", b)};
  rg_model m = same_model(x);
  return rg_add1(G, "transpose", &x->v, 1, at, 2, &m);
}

static int32_t v_permute(rg_gen* G, const rg_val* x) {
  if (x->rank < 2) return -1;
  int64_t p[RG_MAX_RANK];
  for (uint32_t i = 0; i < x->rank; i++) p[i] = i;
  for (uint32_t i = x->rank - 1; i > 0; i--) {
    int64_t j = rg_int(G, 0, i), t = p[i];
    p[i] = p[j];
    p[j] = t;
  }
  ptc_attr a = ptc_attr_ints("dims", p, x->rank);
  rg_model m = same_model(x);
  return rg_add1(G, "permute", &x->v, 1, &a, 1, &m);
}

static int32_t v_slice(rg_gen* G, const rg_val* x) {
  if (x->rank < 1) return -1;
  int64_t d = rand_dim(G, x->rank);
  ptc_attr a[4];
  size_t na = 0;
  a[na++] = ptc_attr_int("dim", spell_dim(G, d, x->rank));
  if (dim_is_static(x, d)) {
    int64_t n = x->dims[d].value;
    if (n < 2) return -1;
    int64_t start = rg_int(G, 0, n / 2);
    a[na++] = ptc_attr_int("start", start);
    if (rg_chance(G, 50)) a[na++] = ptc_attr_int("end", rg_int(G, start + 1, n));
    a[na++] = ptc_attr_int("step", rg_int(G, 1, 3));
  } else {
    a[na++] = ptc_attr_int("start", rg_int(G, 0, 1));
    a[na++] = ptc_attr_int("step", rg_int(G, 1, 2));
  }
  rg_model m = same_model(x);
  return rg_add1(G, "slice", &x->v, 1, a, na, &m);
}

static int32_t v_expand(rg_gen* G, const rg_val* x) {
  int64_t size[RG_MAX_RANK];
  ptc_dim out[RG_MAX_RANK];
  uint32_t pre = x->rank < 4 && rg_chance(G, 40) ? 1 : 0;
  bool grew = pre > 0;
  for (uint32_t i = 0; i < pre; i++) out[i] = (ptc_dim){size[i] = rg_int(G, 2, 3), 0, 0};
  for (uint32_t i = 0; i < x->rank; i++) {
    const ptc_dim* d = &x->dims[i];
    bool one = !d->sym && d->value == 1;
    size[pre + i] = -1;
    out[pre + i] = *d;
    if (one && rg_chance(G, 70)) {
      size[pre + i] = rg_int(G, 2, 6);
      out[pre + i] = (ptc_dim){size[pre + i], 0, 0};
      grew = true;
    }
  }
  if (!grew || rg_numel_max(G, x->rank + pre, out) > G->o->max_numel) return -1;
  ptc_attr a = ptc_attr_ints("size", size, x->rank + pre);
  rg_model m = same_model(x);
  return rg_add1(G, "expand", &x->v, 1, &a, 1, &m);
}

static bool all_static(const rg_val* x) {
  for (uint32_t i = 0; i < x->rank; i++)
    if (x->dims[i].sym) return false;
  return true;
}

/* A divisor of n in [2, n/2], or 0. */
static int64_t some_divisor(rg_gen* G, int64_t n) {
  int64_t divs[64];
  int nd = 0;
  for (int64_t a = 2; a <= n / 2 && nd < 64; a++)
    if (n % a == 0) divs[nd++] = a;
  return nd ? divs[rg_int(G, 0, nd - 1)] : 0;
}

static int32_t v_reshape(rg_gen* G, const rg_val* x) {
  if (!all_static(x)) return -1;
  int64_t n = 1;
  for (uint32_t i = 0; i < x->rank; i++) n *= x->dims[i].value;
  int64_t shape[3] = {-1, 0, 0};
  size_t r = 1;
  int64_t a = some_divisor(G, n);
  if (a && rg_chance(G, 70)) {
    shape[0] = a;
    shape[1] = -1;
    r = 2;
    int64_t b = some_divisor(G, n / a);
    if (b && rg_chance(G, 40)) shape[1] = b, shape[2] = -1, r = 3;
  }
  ptc_attr at = ptc_attr_ints(rg_chance(G, 50) ? "shape" : "size", shape, r);
  rg_model m = same_model(x);
  return rg_add1(G, "reshape", &x->v, 1, &at, 1, &m);
}

static int32_t v_flatten(rg_gen* G, const rg_val* x) {
  if (x->rank < 2) return -1;
  int64_t s = rg_int(G, 0, x->rank - 2), e = rg_int(G, s + 1, x->rank - 1);
  ptc_attr a[2] = {ptc_attr_int("start_dim", s), ptc_attr_int("end_dim", spell_dim(G, e, x->rank))};
  rg_model m = same_model(x);
  return rg_add1(G, "flatten", &x->v, 1, a, 2, &m);
}

static int32_t v_unflatten(rg_gen* G, const rg_val* x) {
  if (x->rank < 1 || x->rank >= RG_MAX_RANK) return -1;
  int64_t d = rand_dim(G, x->rank);
  if (!dim_is_static(x, d)) return -1;
  int64_t a = some_divisor(G, x->dims[d].value);
  if (!a) return -1;
  int64_t sizes[2] = {a, rg_chance(G, 50) ? -1 : x->dims[d].value / a};
  ptc_attr at[2] = {ptc_attr_int("dim", d), ptc_attr_ints("sizes", sizes, 2)};
  rg_model m = same_model(x);
  return rg_add1(G, "unflatten", &x->v, 1, at, 2, &m);
}

static int32_t v_squeeze(rg_gen* G, const rg_val* x) {
  for (uint32_t i = 0; i < x->rank; i++)
    if (!x->dims[i].sym && x->dims[i].value == 1) {
      int64_t d = i;
      ptc_attr a = ptc_attr_ints("dim", &d, 1);
      rg_model m = same_model(x);
      return rg_add1(G, "squeeze", &x->v, 1, &a, rg_chance(G, 70) ? 1 : 0, &m);
    }
  return -1;
}

static int32_t v_unsqueeze(rg_gen* G, const rg_val* x) {
  if (x->rank >= 5) return -1;
  ptc_attr a = ptc_attr_int("dim", rg_int(G, 0, x->rank));
  rg_model m = same_model(x);
  return rg_add1(G, "unsqueeze", &x->v, 1, &a, 1, &m);
}

static int32_t v_select(rg_gen* G, const rg_val* x) {
  if (x->rank < 1) return -1;
  int64_t d = rand_dim(G, x->rank);
  int64_t n = dim_is_static(x, d) ? x->dims[d].value : 2;
  int64_t i = rg_int(G, 0, n - 1);
  if (rg_chance(G, 20)) i = i - n; /* negative index */
  ptc_attr a[2] = {ptc_attr_int("dim", d), ptc_attr_int("index", i)};
  rg_model m = same_model(x);
  return rg_add1(G, "select", &x->v, 1, a, 2, &m);
}

static int32_t v_narrow(rg_gen* G, const rg_val* x) {
  if (x->rank < 1) return -1;
  int64_t d = rand_dim(G, x->rank);
  if (!dim_is_static(x, d) || x->dims[d].value < 2) return -1;
  int64_t n = x->dims[d].value, s = rg_int(G, 0, n - 1);
  ptc_attr a[3] = {ptc_attr_int("dim", d), ptc_attr_int("start", s),
                   ptc_attr_int("length", rg_int(G, 1, n - s))};
  rg_model m = same_model(x);
  return rg_add1(G, "narrow", &x->v, 1, a, 3, &m);
}

static int32_t v_copy(rg_gen* G, const rg_val* x) {
  rg_model m = same_model(x);
  return rg_add1(G, rg_chance(G, 50) ? "contiguous" : "clone", &x->v, 1, NULL, 0, &m);
}

typedef int32_t (*view_fn)(rg_gen* G, const rg_val* x);
static const struct {
  view_fn fn;
  uint8_t weight;
} view_ops[] = {
    {v_transpose, 4}, {v_permute, 3}, {v_slice, 4},   {v_expand, 3},
    {v_reshape, 3},   {v_flatten, 2}, {v_unflatten, 1}, {v_squeeze, 1},
    {v_unsqueeze, 2}, {v_select, 2},  {v_narrow, 1},  {v_copy, 1},
};

static uint32_t b_view(rg_gen* G) {
  size_t k = pick_weighted(G, &view_ops[0].weight, sizeof view_ops[0], N_OF(view_ops));
  int32_t x = rg_pick(G, NULL);
  if (x < 0) return 0;
  rg_val xv = G->pool[x];
  return view_ops[k].fn(G, &xv) >= 0;
}

/* ---- reductions ----------------------------------------------------------------------------------- */
enum { K_SUM, K_MEAN, K_PROD, K_MINMAX, K_ARG, K_VAR, K_VARMEAN, K_LSE, K_ANYALL };

typedef struct red_def {
  const char* name;
  uint8_t accepts, kind;
  bool is_max;
  uint8_t weight;
} red_def;

static const red_def reduce_ops[] = {
    {"sum", A_ANY, K_SUM, false, 8},        {"mean", A_FLOAT, K_MEAN, false, 5},
    {"prod", A_NUMERIC, K_PROD, false, 1},  {"amax", A_NUMERIC, K_MINMAX, true, 4},
    {"amin", A_NUMERIC, K_MINMAX, false, 2}, {"argmax", A_NUMERIC, K_ARG, true, 2},
    {"argmin", A_NUMERIC, K_ARG, false, 1}, {"var", A_FLOAT, K_VAR, false, 2},
    {"var_mean", A_FLOAT, K_VARMEAN, false, 1}, {"logsumexp", A_FLOAT, K_LSE, false, 2},
    {"any", A_ANY, K_ANYALL, false, 1},     {"all", A_ANY, K_ANYALL, false, 1},
};

/* Reduced dims: one (60%), two, or all (listed when `list_all`, else
 * omitted: *n = 0). *len gets the reduction length at the largest size. */
static void choose_dims(rg_gen* G, const rg_val* x, bool list_all, bool single, int64_t* dims,
                        size_t* n, int64_t* len) {
  *n = 0;
  *len = 1;
  uint64_t r = rg_next(G) % 100;
  if (x->rank == 0 || r < 15) {
    for (uint32_t i = 0; i < x->rank; i++) {
      *len *= rg_dim_max(G, &x->dims[i]);
      if (list_all) dims[(*n)++] = i;
    }
    return;
  }
  int64_t a = rand_dim(G, x->rank);
  dims[(*n)++] = spell_dim(G, a, x->rank);
  *len = rg_dim_max(G, &x->dims[a]);
  if (!single && x->rank >= 2 && r < 45) {
    int64_t b = (a + rg_int(G, 1, x->rank - 1)) % x->rank;
    dims[(*n)++] = b;
    *len *= rg_dim_max(G, &x->dims[b]);
  }
}

static rg_model reduce_model(const red_def* d, const rg_val* x, int64_t len, double* corr) {
  double n = (double)len, u = op_roundoff(x->dtype), m = x->mag;
  switch (d->kind) {
    case K_SUM:
      return model_of(n * m, x->lo >= 0 ? 0 : -n * m, n * x->err + log2p(n) * u * n * m,
                      !rg_is_float(x->dtype));
    case K_MEAN: return model_of(m, x->lo, x->err + log2p(n) * u * m, false);
    case K_PROD: {
      double mag = pow(m, n);
      return model_of(mag, -mag, n * x->err * fmax(1, pow(m, n - 1)) + n * u * mag,
                      !rg_is_float(x->dtype));
    }
    case K_MINMAX: case K_ARG: return same_model(x);
    case K_VAR: case K_VARMEAN: {
      double f = *corr > 0 ? n / (n - 1) : 1;
      return model_of(fmax(m, m * m * f), -m, f * (4 * m * x->err + log2p(n) * 4 * u * m * m),
                      false);
    }
    case K_LSE: {
      double mag = m + log(n);
      return model_of(mag, -mag, x->err + (log2p(n) + 4) * u * mag, false);
    }
    default: return model_of(1, 0, 0, true); /* any/all */
  }
}

static uint32_t b_reduce(rg_gen* G) {
  const red_def* d = &reduce_ops[pick_weighted(G, &reduce_ops[0].weight, sizeof(red_def),
                                               N_OF(reduce_ops))];
  int32_t x = pick_operand(G, accept_filter[d->accepts], d->kind == K_ANYALL);
  if (x < 0) return 0;
  int64_t dims[RG_MAX_RANK], len;
  size_t nd;
  choose_dims(G, &G->pool[x], d->kind == K_LSE, d->kind == K_ARG, dims, &nd, &len);
  if (d->kind == K_PROD) {
    if (len > 8) return 0;
    if (rg_is_float(G->pool[x].dtype)) x = rg_make_small(G, x, 1);
    if (x < 0 || pow(G->pool[x].mag, (double)len) > 1e12) return 0;
  }
  rg_val xv = G->pool[x];
  ptc_attr a[3];
  size_t na = 0;
  bool keep = rg_chance(G, 40);
  if (nd) a[na++] = d->kind == K_ARG ? ptc_attr_int("dim", dims[0]) : ptc_attr_ints("dim", dims, nd);
  if (keep && (nd || d->kind != K_ARG)) a[na++] = ptc_attr_bool("keepdim", 1);
  double corr = 0;
  if (d->kind == K_VAR || d->kind == K_VARMEAN) {
    corr = len >= 2 && rg_chance(G, 60) ? 1 : 0;
    if (len < 2) return 0; /* a size-1 sym-free reduction: correction 0 only, skip */
    a[na++] = ptc_attr_float("correction", corr);
  }
  rg_model m = reduce_model(d, &xv, len, &corr);
  int32_t out[4];
  uint32_t n = rg_add(G, d->name, &xv.v, 1, a, na, &m, out);
  if (!n) return 0;
  if (d->kind == K_ARG) {
    rg_val* p = &G->pool[out[0]];
    p->is_arg = true;
    p->arg_src = x;
    p->arg_dim = nd ? (int32_t)((dims[0] + xv.rank) % xv.rank) : -1;
    p->arg_keepdim = keep && nd;
    p->arg_is_max = d->is_max;
  }
  return 1;
}

/* ---- softmax and normalisations ------------------------------------------------------------------- */
/* A normalised shape: the last k static dims of x; false if symbolic. */
static bool last_dims(const rg_val* x, uint32_t k, int64_t* shape, int64_t* n) {
  *n = 1;
  for (uint32_t i = 0; i < k; i++) {
    const ptc_dim* d = &x->dims[x->rank - k + i];
    if (d->sym) return false;
    shape[i] = d->value;
    *n *= d->value;
  }
  return true;
}

/* A weight-like operand of x's dtype and `shape`: a constant or an input. */
static int32_t param(rg_gen* G, int32_t dtype, uint32_t rank, const int64_t* shape) {
  if ((dtype == PTC_F32 || dtype == PTC_F64) && rg_chance(G, 50))
    return rg_new_constant(G, dtype, rank, shape, 1.0);
  ptc_dim dims[RG_MAX_RANK];
  for (uint32_t i = 0; i < rank; i++) dims[i] = (ptc_dim){shape[i], 0, 0};
  return rg_new_input(G, dtype, rank, dims);
}

static uint32_t n_softmax(rg_gen* G, int32_t x) {
  rg_val xv = G->pool[x];
  int64_t d = rand_dim(G, xv.rank);
  double n = (double)rg_dim_max(G, &xv.dims[d]), u = op_roundoff(xv.dtype);
  bool log_sm = rg_chance(G, 35);
  rg_model m = log_sm ? model_of(2 * xv.mag + log(n), -2 * xv.mag - log(n),
                                 2 * xv.err + (log2p(n) + 4) * u * (2 * xv.mag + log(n)), false)
                      : model_of(1, 0, 2 * xv.err + (log2p(n) + 4) * u, false);
  ptc_attr a = ptc_attr_int("dim", spell_dim(G, d, xv.rank));
  return rg_add1(G, log_sm ? "log_softmax" : "softmax", &xv.v, 1, &a, 1, &m) >= 0;
}

/* layer_norm (weight, bias optional) or rms_norm (weight optional). */
static uint32_t n_norm(rg_gen* G, int32_t x, bool rms) {
  rg_val xv = G->pool[x];
  uint32_t k = xv.rank >= 2 && rg_chance(G, 30) ? 2 : 1;
  int64_t shape[2], n;
  if (!last_dims(&xv, k, shape, &n) || n < 2) return 0;
  ptc_value in[3] = {xv.v, PTC_VALUE_NONE, PTC_VALUE_NONE};
  double wmag = 1, bmag = 0;
  for (uint32_t i = 0; i < (rms ? 1u : 2u); i++) {
    if (!rg_chance(G, 60)) continue;
    int32_t p = param(G, xv.dtype, k, shape);
    if (p < 0) continue;
    in[1 + i] = G->pool[p].v;
    if (i == 1) bmag = 1;
  }
  double mag = sqrt((double)n) * wmag + bmag, u = op_roundoff(xv.dtype);
  double rel = (xv.err + (log2p((double)n) + 4) * u * xv.mag) / xv.mag;
  /* x - mean cancels when a row's spread is small against its magnitude */
  rg_model m = model_of(mag, -mag, (rms ? 2 : 30) * rel * mag, false);
  ptc_attr a = ptc_attr_ints("normalized_shape", shape, k);
  return rg_add1(G, rms ? "rms_norm" : "layer_norm", in, rms ? 2 : 3, &a, 1, &m) >= 0;
}

static uint32_t b_norm(rg_gen* G) {
  int32_t x = rg_pick(G, f_ranked_float);
  if (x < 0) return 0;
  uint64_t r = rg_next(G) % 100;
  if (r < 50) return n_softmax(G, x);
  return n_norm(G, x, r >= 80);
}

/* ---- matmul ----------------------------------------------------------------------------------------- */
static rg_model mm_model(const rg_val* a, const rg_val* b, double k, double bias_mag) {
  double mag = k * a->mag * b->mag + bias_mag, u = op_roundoff(a->dtype);
  return model_of(mag, -mag, k * (a->err * b->mag + b->err * a->mag) + (log2p(k) + 2) * u * mag,
                  false);
}

/* x @ w[K, N] or linear(x, w[N, K], bias[N]). */
static uint32_t mm_weight(rg_gen* G, const rg_val* x, int64_t k, bool linear) {
  int64_t n = rg_int(G, 1, 17);
  ptc_dim out[RG_MAX_RANK];
  memcpy(out, x->dims, x->rank * sizeof *out);
  out[x->rank - 1] = (ptc_dim){n, 0, 0};
  if (rg_numel_max(G, x->rank, out) > G->o->max_numel) return 0;
  int64_t wshape[2] = {linear ? n : k, linear ? k : n};
  int32_t w = param(G, x->dtype, 2, wshape);
  if (w < 0) return 0;
  ptc_value in[3] = {x->v, G->pool[w].v, PTC_VALUE_NONE};
  double bmag = 0;
  if (linear && rg_chance(G, 60)) {
    int32_t b = param(G, x->dtype, 1, &n);
    if (b >= 0) in[2] = G->pool[b].v, bmag = 1;
  }
  rg_model m = mm_model(x, &G->pool[w], (double)k, bmag);
  return rg_add1(G, linear ? "linear" : "matmul", in, linear ? 3 : 2, NULL, 0, &m) >= 0;
}

/* x @ x^T over the last two dims. */
static uint32_t mm_gram(rg_gen* G, int32_t xi, int64_t k) {
  rg_val x = G->pool[xi];
  if (x.rank < 2) return 0;
  ptc_dim out[RG_MAX_RANK];
  memcpy(out, x.dims, x.rank * sizeof *out);
  out[x.rank - 1] = x.dims[x.rank - 2];
  if (rg_numel_max(G, x.rank, out) > G->o->max_numel) return 0;
  ptc_attr a[2] = {ptc_attr_int("dim0", -1), ptc_attr_int("dim1", -2)};
  rg_model tm = same_model(&x);
  int32_t t = rg_add1(G, "transpose", &x.v, 1, a, 2, &tm);
  if (t < 0) return 0;
  ptc_value in[2] = {x.v, G->pool[t].v};
  rg_model m = mm_model(&x, &x, (double)k, 0);
  return rg_add1(G, "matmul", in, 2, NULL, 0, &m) >= 0;
}

/* Batched: x[..., M, K] @ y[..., K, N] with y a new input. */
static uint32_t mm_batched(rg_gen* G, const rg_val* x, int64_t k) {
  if (x->rank < 3) return 0;
  ptc_dim yd[RG_MAX_RANK], out[RG_MAX_RANK];
  memcpy(yd, x->dims, x->rank * sizeof *yd);
  yd[x->rank - 2] = (ptc_dim){k, 0, 0};
  yd[x->rank - 1] = (ptc_dim){rg_int(G, 1, 9), 0, 0};
  memcpy(out, x->dims, x->rank * sizeof *out);
  out[x->rank - 1] = yd[x->rank - 1];
  if (rg_numel_max(G, x->rank, out) > G->o->max_numel) return 0;
  int32_t y = rg_new_input(G, x->dtype, x->rank, yd);
  if (y < 0) return 0;
  ptc_value in[2] = {x->v, G->pool[y].v};
  rg_model m = mm_model(x, &G->pool[y], (double)k, 0);
  return rg_add1(G, rg_chance(G, 50) || x->rank != 3 ? "matmul" : "bmm", in, 2, NULL, 0, &m) >= 0;
}

static uint32_t b_matmul(rg_gen* G) {
  int32_t xi = rg_pick(G, f_ranked_float);
  if (xi < 0) return 0;
  rg_val x = G->pool[xi];
  const ptc_dim* kd = &x.dims[x.rank - 1];
  if (kd->sym || kd->value < 1 || kd->value > 96) return 0;
  int64_t k = kd->value;
  uint64_t r = rg_next(G) % 100;
  if (r < 40) return mm_weight(G, &x, k, false);
  if (r < 70) return mm_weight(G, &x, k, true);
  if (r < 85) return mm_gram(G, xi, k);
  return mm_batched(G, &x, k);
}

/* ---- cat ---------------------------------------------------------------------------------------------- */
static bool cat_partner(const rg_val* x, const rg_val* y, int64_t d) {
  if (y->rank != x->rank || y->is_arg) return false;
  for (uint32_t i = 0; i < x->rank; i++)
    if ((int64_t)i != d && !rg_dim_eq(&x->dims[i], &y->dims[i])) return false;
  return true;
}

static uint32_t b_cat(rg_gen* G) {
  int32_t xi = rg_pick(G, f_ranked);
  if (xi < 0) return 0;
  rg_val x = G->pool[xi];
  int64_t d = rand_dim(G, x.rank);
  int32_t y = -1;
  for (uint32_t i = 0; i < G->n_pool && rg_chance(G, 60); i++) {
    uint32_t j = (uint32_t)rg_int(G, 0, G->n_pool - 1);
    if ((int32_t)j != xi && cat_partner(&x, &G->pool[j], d)) y = (int32_t)j;
    if (y >= 0) break;
  }
  if (y < 0) {
    ptc_dim dims[RG_MAX_RANK];
    memcpy(dims, x.dims, x.rank * sizeof *dims);
    dims[d] = (ptc_dim){rg_int(G, 1, 5), 0, 0};
    y = rg_new_input(G, x.dtype, x.rank, dims);
  }
  if (y < 0) return 0;
  const rg_val* yv = &G->pool[y];
  ptc_value in[3] = {x.v, yv->v, x.v};
  size_t n_in = rg_chance(G, 20) ? 3 : 2;
  ptc_dim out[RG_MAX_RANK];
  memcpy(out, x.dims, x.rank * sizeof *out);
  out[d].value = rg_dim_max(G, &x.dims[d]) * 2 + rg_dim_max(G, &yv->dims[d]);
  out[d].sym = 0;
  if (rg_numel_max(G, x.rank, out) > G->o->max_numel) return 0;
  rg_model m = model_of(fmax(x.mag, yv->mag), fmin(x.lo, yv->lo), fmax(x.err, yv->err),
                        x.exact && yv->exact);
  ptc_attr a = ptc_attr_int("dim", spell_dim(G, d, x.rank));
  return rg_add1(G, "cat", in, n_in, &a, 1, &m) >= 0;
}

/* ---- where, clamp, masked_fill ------------------------------------------------------------------------ */
static bool f_bool(const rg_val* v) { return v->dtype == PTC_BOOL; }

/* A bool tensor broadcastable against x: a comparison of an exact value,
 * an existing bool, or a new bool input. */
static int32_t condition(rg_gen* G, int32_t x) {
  uint64_t r = rg_next(G) % 100;
  if (r < 45) {
    int32_t c = other_operand(G, x, G->pool[x].dtype, f_exact);
    if (c >= 0 && G->pool[c].exact && G->pool[c].dtype != PTC_BOOL) {
      ptc_attr a = ptc_attr_float("other", rg_chance(G, 50) ? 0.0 : 0.25);
      if (!rg_is_float(G->pool[c].dtype)) a = ptc_attr_int("other", 0);
      rg_model m = model_of(1, 0, 0, true);
      return rg_add1(G, rg_chance(G, 50) ? "gt" : "le", &G->pool[c].v, 1, &a, 1, &m);
    }
    if (c >= 0 && G->pool[c].dtype == PTC_BOOL) return c;
  }
  if (r < 70) {
    int32_t c = other_operand(G, x, PTC_BOOL, f_bool);
    if (c >= 0 && G->pool[c].dtype == PTC_BOOL) return c;
  }
  ptc_dim dims[RG_MAX_RANK];
  uint32_t rank = rg_broadcast_dims(G, &G->pool[x], dims);
  return rg_new_input(G, PTC_BOOL, rank, dims);
}

static uint32_t s_where(rg_gen* G, int32_t x) {
  int32_t c = condition(G, x);
  int32_t y = c < 0 ? -1 : other_operand(G, x, G->pool[x].dtype, f_any);
  if (y < 0 || G->pool[y].dtype == PTC_BOOL) return 0;
  const rg_val *xv = &G->pool[x], *yv = &G->pool[y];
  ptc_value in[3] = {G->pool[c].v, xv->v, yv->v};
  if (rg_chance(G, 50)) in[1] = yv->v, in[2] = xv->v;
  rg_model m = model_of(fmax(xv->mag, yv->mag), fmin(xv->lo, yv->lo), fmax(xv->err, yv->err),
                        xv->exact && yv->exact);
  return rg_add1(G, "where", in, 3, NULL, 0, &m) >= 0;
}

static uint32_t s_clamp(rg_gen* G, int32_t x) {
  const rg_val* xv = &G->pool[x];
  bool is_int = !rg_is_float(xv->dtype);
  ptc_attr a[2];
  size_t na = 0;
  double lo = -xv->mag, hi = xv->mag;
  if (rg_chance(G, 70)) {
    lo = is_int ? -2 : -0.5;
    a[na++] = is_int ? ptc_attr_int("min", -2) : ptc_attr_float("min", -0.5);
  }
  if (!na || rg_chance(G, 60)) {
    hi = is_int ? 3 : 0.75;
    a[na++] = is_int ? ptc_attr_int("max", 3) : ptc_attr_float("max", 0.75);
  }
  rg_model m = model_of(fmax(fabs(lo), fabs(hi)), lo, xv->err, xv->exact);
  return rg_add1(G, "clamp", &xv->v, 1, a, na, &m) >= 0;
}

static uint32_t s_masked_fill(rg_gen* G, int32_t x) {
  int32_t c = condition(G, x);
  if (c < 0) return 0;
  const rg_val* xv = &G->pool[x];
  ptc_value in[2] = {xv->v, G->pool[c].v};
  ptc_attr a = rg_is_float(xv->dtype) ? ptc_attr_float("value", -0.5) : ptc_attr_int("value", 3);
  rg_model m = model_of(fmax(xv->mag, 3), -fmax(xv->mag, 3), xv->err, xv->exact);
  return rg_add1(G, "masked_fill", in, 2, &a, 1, &m) >= 0;
}

static uint32_t b_select(rg_gen* G) {
  int32_t x = rg_pick(G, f_numeric);
  if (x < 0) return 0;
  uint64_t r = rg_next(G) % 100;
  if (r < 55) return s_where(G, x);
  if (r < 80) return s_clamp(G, x);
  return s_masked_fill(G, x);
}

/* ---- to_dtype -------------------------------------------------------------------------------------------- */
static uint32_t b_to_dtype(rg_gen* G) {
  static const int32_t targets[] = {PTC_F32, PTC_F64, PTC_F16, PTC_BF16, PTC_I32, PTC_I64, PTC_BOOL};
  int32_t x = rg_pick(G, NULL);
  if (x < 0) return 0;
  rg_val xv = G->pool[x];
  int32_t to = targets[rg_int(G, 0, (int64_t)N_OF(targets) - 1)];
  if (to == xv.dtype) return 0;
  bool narrow_to_int = rg_is_float(xv.dtype) && !rg_is_float(to);
  if (narrow_to_int && !xv.exact) return 0; /* truncation jumps: exact values only */
  if (to == PTC_F16 && xv.mag > 3e4) return 0;
  if (to == PTC_I32 && xv.mag > 2e9) return 0;
  bool exact = xv.exact; /* a cast of an exact value rounds the same everywhere */
  rg_model m = model_of(to == PTC_BOOL ? 1 : xv.mag + (narrow_to_int ? 1 : 0),
                        to == PTC_BOOL ? 0 : xv.lo - 1, xv.err, exact);
  ptc_attr a = ptc_attr_dtype("dtype", to);
  return rg_add1(G, "to_dtype", &xv.v, 1, &a, 1, &m) >= 0;
}

/* ---- extern-view blocks ---------------------------------------------------------------------------------- */
/* Patterns that make lowering pass views of computed buffers to externs in
 * place (IR_BUF_VIEW, lib/ir/lower_extern.c) or, where the layout does not
 * fit, copy them: a GEMM output split, sliced, selected, reshaped, expanded,
 * permuted or transposed into the operands of further GEMMs and of
 * scaled_dot_product_attention, with offsets that are and are not 256-byte
 * aligned, unit strides in either matrix dim, batch dims that do and do not
 * collapse into one stride, a step that forces a copy; attention outputs
 * transposed back and flattened into a GEMM (stored transposed) or read by
 * other users too; bases that pointwise ops and reductions also read before
 * and after the views (the base must live while a view is read). One block
 * is added to rg_options.view_percent of the graphs (rg_view_block). */

/* Elements of dtype dt in 256 bytes: the unit of an aligned offset. */
static int64_t align_elems(int32_t dt) { return 256 / (int64_t)ptc_dtype_size(dt); }

/* A dim of `size`, or the graph's first symbol (40% when there is one). */
static ptc_dim vb_dim(rg_gen* G, int64_t size, bool may_be_sym) {
  if (may_be_sym && G->rg->n_syms && rg_chance(G, 40))
    return (ptc_dim){G->rg->hints[0], G->sym_ids[0], 0};
  return (ptc_dim){size, 0, 0};
}

/* A [rows, cols] weight of magnitude about 1/sqrt(k), a power of two (a
 * k-term GEMM of random signs then keeps its input's typical size, so that
 * outputs stay well above the comparison's atol): a constant (f32/f64,
 * static dims) or a new input times that power of two. Dims are static or
 * bare symbols. */
static int32_t vb_weight(rg_gen* G, int32_t dt, ptc_dim rows, ptc_dim cols, int64_t k) {
  double f = ldexp(1.0, -(int)lround(0.5 * log2((double)(k > 1 ? k : 1))));
  if ((dt == PTC_F32 || dt == PTC_F64) && !rows.sym && !cols.sym && rg_chance(G, 85)) {
    int64_t shape[2] = {rows.value, cols.value};
    return rg_new_constant(G, dt, 2, shape, f);
  }
  ptc_dim dims[2] = {rows, cols};
  int32_t w = rg_new_input(G, dt, 2, dims);
  if (w < 0 || f == 1) return w;
  ptc_attr a = ptc_attr_float("other", f);
  return rg_add1(G, "mul", &G->pool[w].v, 1, &a, 1, &(rg_model){f, -f, 0, true});
}

/* A single-output view (or any shape op keeping values) of pool value x. */
static int32_t vb_view(rg_gen* G, const char* op, int32_t x, const ptc_attr* a, size_t na) {
  if (x < 0) return -1;
  rg_model m = same_model(&G->pool[x]);
  return rg_add1(G, op, &G->pool[x].v, 1, a, na, &m);
}

static int32_t vb_transpose(rg_gen* G, int32_t x, int64_t d0, int64_t d1) {
  ptc_attr a[2] = {ptc_attr_int("dim0", d0), ptc_attr_int("dim1", d1)};
  return vb_view(G, "transpose", x, a, 2);
}

/* a @ b (bmm for two 3-D operands half of the time); -1 if the result
 * would pass the element budget. */
static int32_t vb_mm(rg_gen* G, int32_t a, int32_t b) {
  if (a < 0 || b < 0) return -1;
  const rg_val *av = &G->pool[a], *bv = &G->pool[b];
  if (av->rank < 2 || bv->rank < 2) return -1;
  uint32_t r = av->rank > bv->rank ? av->rank : bv->rank;
  ptc_dim out[RG_MAX_RANK];
  for (uint32_t i = 0; i + 2 < r; i++) {
    const ptc_dim* da = i + av->rank >= r ? &av->dims[i + av->rank - r] : NULL;
    const ptc_dim* db = i + bv->rank >= r ? &bv->dims[i + bv->rank - r] : NULL;
    out[i] = da && (!db || da->sym || da->value != 1) ? *da : *db;
  }
  out[r - 2] = av->dims[av->rank - 2];
  out[r - 1] = bv->dims[bv->rank - 1];
  if (rg_numel_max(G, r, out) > G->o->max_numel) return -1;
  int64_t k = rg_dim_max(G, &av->dims[av->rank - 1]);
  ptc_value in[2] = {av->v, bv->v};
  rg_model m = mm_model(av, bv, (double)k, 0);
  bool bmm = av->rank == 3 && bv->rank == 3 && rg_chance(G, 50);
  return rg_add1(G, bmm ? "bmm" : "matmul", in, 2, NULL, 0, &m);
}

/* Columns of a new right operand: as many as fit the budget, at most 12. */
static int64_t vb_out_cols(rg_gen* G, const rg_val* x) {
  int64_t rest = rg_numel_max(G, x->rank - 1, x->dims);
  int64_t pmax = G->o->max_numel / (rest > 0 ? rest : 1);
  return pmax < 1 ? 0 : rg_int(G, 1, pmax < 12 ? pmax : 12);
}

/* v @ w[K, P] with w a new weight (v is the left GEMM operand). */
static int32_t vb_times_weight(rg_gen* G, int32_t v) {
  if (v < 0) return -1;
  const rg_val* x = &G->pool[v];
  ptc_dim kd = x->dims[x->rank - 1];
  int64_t p = vb_out_cols(G, x);
  if (!p || (kd.sym && rg_sym_index(G, kd.sym) < 0)) return -1;
  return vb_mm(G, v, vb_weight(G, x->dtype, kd, (ptc_dim){p, 0, 0}, rg_dim_max(G, &kd)));
}

/* w[P, M] @ v with w a new weight (v is the right GEMM operand). */
static int32_t vb_weight_times(rg_gen* G, int32_t v) {
  if (v < 0) return -1;
  const rg_val* x = &G->pool[v];
  ptc_dim kd = x->dims[x->rank - 2];
  int64_t p = rg_int(G, 1, 8);
  if (kd.sym && rg_sym_index(G, kd.sym) < 0) return -1;
  return vb_mm(G, vb_weight(G, x->dtype, (ptc_dim){p, 0, 0}, kd, rg_dim_max(G, &kd)), v);
}

/* Longest contraction the blocks prefer: the error model grows about
 * sqrt(k) times faster than the actual error per GEMM, so chains of long
 * contractions would make tolerances too loose for the sensitivity probes. */
enum { VB_SHORT_K = 24 };

/* The view as a GEMM operand: on the left (70%) or the right, or on the
 * side whose contraction is short when only one is. */
static int32_t vb_use(rg_gen* G, int32_t v) {
  if (v < 0) return -1;
  const rg_val* x = &G->pool[v];
  bool left_short = rg_dim_max(G, &x->dims[x->rank - 1]) <= VB_SHORT_K;
  bool right_short = rg_dim_max(G, &x->dims[x->rank - 2]) <= VB_SHORT_K;
  bool left = left_short == right_short ? rg_chance(G, 70) : left_short;
  return left ? vb_times_weight(G, v) : vb_weight_times(G, v);
}

/* Start of a slice of length len within n along a dim whose stride is
 * `stride` elements: 0, a 256-byte-aligned offset or an unaligned one. */
static int64_t vb_start(rg_gen* G, int64_t n, int64_t len, int64_t stride, int64_t unit) {
  int64_t room = n - len;
  if (room <= 0) return 0;
  uint64_t r = rg_next(G) % 100;
  if (r < 25) return 0;
  if (r < 65) /* the first aligned start that fits, if any */
    for (int64_t s = 1; s <= room; s++)
      if ((s * stride) % unit == 0) return s;
  return rg_int(G, 1, room);
}

/* A pointwise op or a reduction reading base h: another user of the base. */
static int32_t vb_other_user(rg_gen* G, int32_t h) {
  rg_val x = G->pool[h];
  uint64_t r = rg_next(G) % 100;
  if (r < 40) {
    ptc_attr a = ptc_attr_float("other", 0.5);
    return rg_add1(G, "mul", &x.v, 1, &a, 1,
                   &(rg_model){0.5 * x.mag, -0.5 * x.mag, 0.5 * x.err, x.exact});
  }
  if (r < 70) {
    rg_model m = model_of(1, -1, x.err + 4 * op_roundoff(x.dtype), false);
    return rg_add1(G, "tanh", &x.v, 1, NULL, 0, &m);
  }
  int64_t d = -1;
  double n = (double)rg_dim_max(G, &x.dims[x.rank - 1]), u = op_roundoff(x.dtype);
  if (n > VB_SHORT_K) return rg_add1(G, "relu", &x.v, 1, NULL, 0, &(rg_model){x.mag, 0, x.err, x.exact});
  ptc_attr a = ptc_attr_ints("dim", &d, 1);
  rg_model m = model_of(n * x.mag, -n * x.mag, n * x.err + log2p(n) * u * n * x.mag, false);
  return rg_add1(G, "sum", &x.v, 1, &a, 1, &m);
}

enum { VB_T, VB_COLS, VB_ROWS, VB_SELECT, VB_SPLIT, VB_RESHAPE, VB_EXPAND, VB_GRAM, VB_PERMUTE,
       VB_STEP, VB_KINDS };

/* One GEMM reading a view of base h ([M, N] or [B, M, N]); its result, or -1. */
static int32_t vb_consumer(rg_gen* G, int32_t h, int kind) {
  if (h < 0) return -1;
  const rg_val x = G->pool[h];
  uint32_t r = x.rank;
  if (r < 2 || r > 3 || x.dims[r - 1].sym) return -1;
  int64_t unit = align_elems(x.dtype);
  const ptc_dim *md = &x.dims[r - 2], *nd = &x.dims[r - 1];
  int64_t n = nd->value; /* the last dim is static */
  switch (kind) {
    case VB_T: { /* the unit stride moves to the row dim */
      int32_t t = vb_transpose(G, h, rg_chance(G, 50) ? -1 : (int64_t)r - 1, -2);
      return vb_use(G, t);
    }
    case VB_COLS: case VB_STEP: { /* a column range: offset start (aligned or not) */
      int64_t len = rg_int(G, 1, n), step = kind == VB_STEP ? 2 : 1;
      if (rg_chance(G, 50) && n >= 2 * unit) len = unit;
      int64_t s = vb_start(G, n, len, 1, unit);
      ptc_attr a[4] = {ptc_attr_int("dim", -1), ptc_attr_int("start", s),
                       ptc_attr_int("end", s + len), ptc_attr_int("step", step)};
      int32_t v = rg_chance(G, 30) && step == 1
                      ? vb_view(G, "narrow", h, (ptc_attr[]){ptc_attr_int("dim", (int64_t)r - 1),
                                                             ptc_attr_int("start", s),
                                                             ptc_attr_int("length", len)}, 3)
                      : vb_view(G, "slice", h, a, 4);
      return rg_chance(G, 25) ? vb_use(G, vb_transpose(G, v, -1, -2)) : vb_use(G, v);
    }
    case VB_ROWS: { /* a row range: offset start * N */
      if (md->sym || md->value < 2) return -1;
      int64_t m = md->value, len = rg_int(G, 1, m - 1), s = vb_start(G, m, len, n, unit);
      ptc_attr a[3] = {ptc_attr_int("dim", -2), ptc_attr_int("start", s),
                       ptc_attr_int("end", s + len)};
      return vb_use(G, vb_view(G, "slice", h, a, 3));
    }
    case VB_SELECT: { /* one matrix of a batch: offset i * M * N */
      if (r < 3 || x.dims[0].sym) return -1;
      ptc_attr a[2] = {ptc_attr_int("dim", 0), ptc_attr_int("index", rg_int(G, 0, x.dims[0].value - 1))};
      return vb_use(G, vb_view(G, "select", h, a, 2));
    }
    case VB_SPLIT: { /* pieces of the columns (split or chunk); one piece is used */
      if (n < 2) return -1;
      int32_t out[4];
      int64_t parts = rg_int(G, 2, n < 4 ? n : 4);
      bool split = rg_chance(G, 50);
      ptc_attr a[2] = {ptc_attr_int("dim", -1), ptc_attr_int("chunks", parts)};
      if (split) a[1] = ptc_attr_int("split_size", (n + parts - 1) / parts);
      rg_model m = same_model(&x);
      uint32_t got = rg_add(G, split ? "split" : "chunk", &x.v, 1, a, 2, &m, out);
      if (!got) return -1;
      return vb_use(G, out[rg_int(G, 0, got - 1)]);
    }
    case VB_RESHAPE: { /* the same storage in another shape: offset 0, not the whole buffer */
      if (r == 3) {
        ptc_attr a[2] = {ptc_attr_int("start_dim", 0), ptc_attr_int("end_dim", 1)};
        return vb_use(G, vb_view(G, "flatten", h, a, 2));
      }
      int64_t d = md->sym ? 0 : some_divisor(G, md->value);
      if (!d) return -1;
      int64_t sizes[2] = {d, -1};
      ptc_attr a[2] = {ptc_attr_int("dim", 0), ptc_attr_ints("sizes", sizes, 2)};
      return vb_use(G, vb_view(G, "unflatten", h, a, 2));
    }
    case VB_EXPAND: { /* a batch of copies of one matrix: batch stride 0 */
      if (r != 2) return -1;
      int64_t b = rg_int(G, 2, 3), size[3] = {b, -1, -1};
      ptc_attr u = ptc_attr_int("dim", 0), e = ptc_attr_ints("size", size, 3);
      int32_t v = vb_view(G, "expand", vb_view(G, "unsqueeze", h, &u, 1), &e, 1);
      if (v < 0) return -1;
      ptc_dim yd[3] = {{b, 0, 0}, *nd, {rg_int(G, 1, 6), 0, 0}};
      if (rg_numel_max(G, 3, yd) > G->o->max_numel) return -1;
      return vb_mm(G, v, rg_new_input(G, x.dtype, 3, yd));
    }
    case VB_GRAM: { /* both operands read h: h @ h^T or h^T @ h */
      if (n > VB_SHORT_K) return -1;
      int32_t t = vb_transpose(G, h, -2, -1);
      return rg_chance(G, 50) ? vb_mm(G, h, t) : vb_mm(G, t, h);
    }
    case VB_PERMUTE: { /* [B, M, N] -> [M, B, N] (batch stride N) or [B, N, M] */
      if (r != 3) return -1;
      int64_t p[3] = {1, 0, 2};
      if (rg_chance(G, 50)) p[0] = 0, p[1] = 2, p[2] = 1;
      ptc_attr a = ptc_attr_ints("dims", p, 3);
      return vb_use(G, vb_view(G, "permute", h, &a, 1));
    }
    default: return -1;
  }
}

/* A GEMM output h = act(x @ W (+ bias)) and 1-3 GEMMs reading views of it,
 * some nested, with other users of h before and after. */
static uint32_t vb_gemm_chain(rg_gen* G, int32_t dt) {
  uint32_t before = G->rg->n_ops;
  int64_t unit = align_elems(dt), b = rg_chance(G, 35) ? rg_int(G, 2, 3) : 0;
  int64_t k = rg_int(G, 1, 16), n = rg_chance(G, 45) ? 2 * unit : rg_int(G, 2, 24);
  ptc_dim hd[3];
  uint32_t r = 0;
  if (b) hd[r++] = (ptc_dim){b, 0, 0};
  hd[r++] = vb_dim(G, rg_chance(G, 10) ? 1 : rg_int(G, 2, 12), true);
  hd[r++] = (ptc_dim){n, 0, 0};
  if (rg_numel_max(G, r, hd) > G->o->max_numel) hd[r - 1].value = n = rg_int(G, 2, 24);
  ptc_dim xd[3];
  memcpy(xd, hd, sizeof xd);
  xd[r - 1].value = k;
  int32_t x = rg_new_input(G, dt, r, xd);
  if (x < 0) return 0;
  bool linear = rg_chance(G, 50);
  int32_t w = linear ? vb_weight(G, dt, (ptc_dim){n, 0, 0}, (ptc_dim){k, 0, 0}, k)
                     : vb_weight(G, dt, (ptc_dim){k, 0, 0}, (ptc_dim){n, 0, 0}, k);
  if (w < 0) return 0;
  ptc_value in[3] = {G->pool[x].v, G->pool[w].v, PTC_VALUE_NONE};
  double bmag = 0;
  if (linear && rg_chance(G, 50)) {
    int32_t bias = param(G, dt, 1, &n);
    if (bias >= 0) in[2] = G->pool[bias].v, bmag = 1;
  }
  rg_model m = mm_model(&G->pool[x], &G->pool[w], (double)k, bmag);
  int32_t h = rg_add1(G, linear ? "linear" : "matmul", in, linear ? 3 : 2, NULL, 0, &m);
  if (h < 0) return G->rg->n_ops - before;
  if (rg_chance(G, 30)) { /* an activation the lowering folds into the GEMM */
    static const char* const acts[] = {"relu", "gelu", "silu", "tanh", "sigmoid"};
    const char* act = acts[rg_int(G, 0, 4)];
    const rg_val* hv = &G->pool[h];
    rg_model am = model_of(hv->mag, -hv->mag, 1.13 * hv->err + 4 * op_roundoff(dt) * hv->mag, false);
    int32_t a = rg_add1(G, act, &hv->v, 1, NULL, 0, &am);
    if (a >= 0) h = a;
  }
  if (rg_chance(G, 25)) vb_other_user(G, h);
  uint32_t n_cons = (uint32_t)rg_int(G, 1, 3);
  for (uint32_t i = 0; i < n_cons; i++) {
    int32_t c = -1;
    for (int tries = 0; tries < 4 && c < 0; tries++)
      c = vb_consumer(G, h, (int)rg_int(G, 0, VB_KINDS - 1));
    if (c >= 0 && rg_chance(G, 25)) /* a view of a view-reading GEMM's output */
      vb_consumer(G, c, rg_chance(G, 50) ? VB_T : VB_COLS);
  }
  if (rg_chance(G, 45)) vb_other_user(G, h); /* h is read after its views */
  return G->rg->n_ops - before;
}

/* softmax(q k^T * scale + mask) v model: the output is a convex combination
 * of v's rows; a score error e moves the weights by at most 2e in sum. */
static rg_model sdpa_model(const rg_val* q, const rg_val* k, const rg_val* v, const rg_val* mask,
                           double e, double s_len, double scale) {
  double u = op_roundoff(q->dtype);
  double smag = e * q->mag * k->mag * scale + (mask ? mask->mag : 0);
  double serr = scale * e * (q->err * k->mag + k->err * q->mag) + (log2p(e) + 2) * u * smag +
                (mask ? mask->err : 0);
  return model_of(v->mag, -v->mag, v->err + 2 * serr * v->mag + (log2p(s_len) + 6) * u * v->mag,
                  false);
}

/* [..., L, H * E] -> [..., H, L, E] (unflatten and transpose), or as it is
 * when there is one head and `keep`. */
static int32_t vb_heads(rg_gen* G, int32_t x, int64_t h, int64_t e, bool keep) {
  if (x < 0 || keep) return x;
  int64_t sizes[2] = {h, rg_chance(G, 50) ? -1 : e};
  ptc_attr a[2] = {ptc_attr_int("dim", -1), ptc_attr_ints("sizes", sizes, 2)};
  return vb_transpose(G, vb_view(G, "unflatten", x, a, 2), -3, -2);
}

/* q, k, v from GEMM outputs: one packed [.., L, 3D] (split, chunk, narrow,
 * or unflatten-permute-select) or q from one GEMM and k, v from another
 * (cross attention, S != L); attention with no mask, causal, a float mask
 * that views a GEMM output, or a bool mask; its output transposed back and
 * flattened into a GEMM, or read otherwise. */
static uint32_t vb_attention(rg_gen* G, int32_t dt) {
  uint32_t before = G->rg->n_ops;
  static const int64_t heads[] = {1, 2, 4};
  int64_t unit = align_elems(dt), h = heads[rg_int(G, 0, 2)], e = rg_int(G, 1, 12);
  uint64_t he = rg_next(G) % 100;
  /* head dims 32/64 are those the cuda backend's attention kernels take */
  if (he < 45) e = 32, h = unit > 32 ? unit / 32 : 1; /* k, v at 256-byte-aligned offsets */
  if (he >= 45 && he < 60) e = 64, h = 1;
  int64_t din = rg_int(G, 1, 12);
  int64_t b = rg_chance(G, 25) ? 0 : rg_int(G, 1, 2);
  bool cross = rg_chance(G, 30), one_head = h == 1 && e < 32 && rg_chance(G, 50);
  ptc_dim ld = vb_dim(G, rg_int(G, 1, 10), true);
  ptc_dim sd = cross ? vb_dim(G, rg_int(G, 1, 10), true) : ld;
  ptc_dim xd[3], yd[3];
  uint32_t r = 0;
  for (int tries = 0;; tries++) { /* [.., L, 3D] within the budget: fewer batches, smaller heads */
    r = 0;
    if (b) {
      xd[r] = yd[r] = (ptc_dim){b, 0, 0};
      r++;
    }
    xd[r] = ld;
    yd[r] = sd;
    r++;
    xd[r] = yd[r] = (ptc_dim){3 * h * e, 0, 0};
    if (rg_numel_max(G, r + 1, xd) <= G->o->max_numel &&
        rg_numel_max(G, r + 1, yd) <= G->o->max_numel)
      break;
    if (tries == 2) return 0;
    if (b > 1 && tries == 0) b = 1;
    else e = rg_int(G, 1, 4);
  }
  int64_t d = h * e;
  xd[r] = yd[r] = (ptc_dim){din, 0, 0};
  r++;
  int32_t q = -1, k = -1, v = -1, packed = -1, xi = rg_new_input(G, dt, r, xd);
  if (xi < 0) return 0;
  if (!cross) {
    int32_t w = vb_weight(G, dt, (ptc_dim){3 * d, 0, 0}, (ptc_dim){din, 0, 0}, din);
    if (w < 0) return 0;
    ptc_value in[3] = {G->pool[xi].v, G->pool[w].v, PTC_VALUE_NONE};
    int64_t n3 = 3 * d;
    int32_t bias = rg_chance(G, 40) ? param(G, dt, 1, &n3) : -1;
    if (bias >= 0) in[2] = G->pool[bias].v;
    rg_model m = mm_model(&G->pool[xi], &G->pool[w], (double)din, bias >= 0 ? 1 : 0);
    packed = rg_add1(G, "linear", in, bias >= 0 ? 3 : 2, NULL, 0, &m);
    if (packed < 0) return G->rg->n_ops - before;
    uint64_t how = rg_next(G) % 100;
    if (how < 55) { /* split / chunk into three [.., L, D] */
      int32_t out[4];
      ptc_attr a[2] = {ptc_attr_int("dim", -1), ptc_attr_int("split_size", d)};
      if (how < 25) a[1] = ptc_attr_int("chunks", 3);
      rg_model sm = same_model(&G->pool[packed]);
      if (rg_add(G, how < 25 ? "chunk" : "split", &G->pool[packed].v, 1, a, 2, &sm, out) != 3)
        return G->rg->n_ops - before;
      q = vb_heads(G, out[0], h, e, one_head);
      k = vb_heads(G, out[1], h, e, one_head);
      v = vb_heads(G, out[2], h, e, one_head);
    } else if (how < 75) { /* narrow at 0, D, 2D */
      int32_t* qkv[3] = {&q, &k, &v};
      for (int64_t i = 0; i < 3; i++) {
        ptc_attr a[3] = {ptc_attr_int("dim", -1), ptc_attr_int("start", i * d),
                         ptc_attr_int("length", d)};
        *qkv[i] = vb_heads(G, vb_view(G, "narrow", packed, a, 3), h, e, one_head);
      }
    } else { /* [.., L, 3, H, E] -> [3, .., H, L, E], select 0, 1, 2 */
      one_head = false;
      int64_t sizes[3] = {3, h, e};
      ptc_attr a[2] = {ptc_attr_int("dim", -1), ptc_attr_ints("sizes", sizes, 3)};
      int32_t u = vb_view(G, "unflatten", packed, a, 2);
      int64_t p[4] = {1, 2, 0, 3}, p5[5] = {2, 0, 3, 1, 4};
      ptc_attr pa = b ? ptc_attr_ints("dims", p5, 5) : ptc_attr_ints("dims", p, 4);
      int32_t t = vb_view(G, "permute", u, &pa, 1);
      int32_t* qkv[3] = {&q, &k, &v};
      for (int64_t i = 0; i < 3; i++) {
        ptc_attr sa[2] = {ptc_attr_int("dim", 0), ptc_attr_int("index", i)};
        *qkv[i] = vb_view(G, "select", t, sa, 2);
      }
    }
  } else { /* q = x Wq; k, v = chunks of y Wkv */
    int32_t yi = rg_new_input(G, dt, r, yd);
    int32_t wq = vb_weight(G, dt, (ptc_dim){d, 0, 0}, (ptc_dim){din, 0, 0}, din);
    int32_t wkv = vb_weight(G, dt, (ptc_dim){din, 0, 0}, (ptc_dim){2 * d, 0, 0}, din);
    if (yi < 0 || wq < 0 || wkv < 0) return G->rg->n_ops - before;
    ptc_value in[2] = {G->pool[xi].v, G->pool[wq].v};
    rg_model m = mm_model(&G->pool[xi], &G->pool[wq], (double)din, 0);
    int32_t qa = rg_add1(G, "linear", in, 2, NULL, 0, &m);
    packed = vb_mm(G, yi, wkv);
    int32_t out[4];
    ptc_attr a[2] = {ptc_attr_int("dim", -1), ptc_attr_int("chunks", 2)};
    if (qa < 0 || packed < 0) return G->rg->n_ops - before;
    rg_model sm = same_model(&G->pool[packed]);
    if (rg_add(G, "chunk", &G->pool[packed].v, 1, a, 2, &sm, out) != 2)
      return G->rg->n_ops - before;
    q = vb_heads(G, qa, h, e, one_head);
    k = vb_heads(G, out[0], h, e, one_head);
    v = vb_heads(G, out[1], h, e, one_head);
  }
  if (q < 0 || k < 0 || v < 0) return G->rg->n_ops - before;
  /* the mask [L, S] */
  ptc_value in[4] = {G->pool[q].v, G->pool[k].v, G->pool[v].v, PTC_VALUE_NONE};
  ptc_attr a[2];
  size_t na = 0;
  int32_t mask = -1;
  uint64_t mk = rg_next(G) % 100;
  if (mk >= 45 && mk < 65) a[na++] = ptc_attr_bool("is_causal", 1);
  if (mk >= 65 && mk < 85) { /* a float mask viewing a GEMM output: columns or transposed */
    int64_t km = rg_int(G, 1, 6), extra = rg_chance(G, 50) ? 0 : rg_int(G, 1, 3);
    bool tr = rg_chance(G, 40) || sd.sym;
    ptc_dim zd[2] = {tr ? sd : ld, {km, 0, 0}};
    int32_t z = rg_new_input(G, dt, 2, zd);
    ptc_dim cols = tr ? ld : (ptc_dim){sd.value + extra, 0, 0};
    int32_t mm = z < 0 ? -1 : vb_mm(G, z, vb_weight(G, dt, (ptc_dim){km, 0, 0}, cols, km));
    if (mm >= 0 && tr) mask = vb_transpose(G, mm, 0, 1);
    if (mm >= 0 && !tr) {
      ptc_attr sa[4] = {ptc_attr_int("dim", 1), ptc_attr_int("start", extra),
                        ptc_attr_int("end", extra + sd.value), ptc_attr_int("step", 1)};
      mask = vb_view(G, "slice", mm, sa, 4);
    }
  }
  if (mk >= 85) {
    ptc_dim md[2] = {ld, sd};
    mask = rg_new_input(G, PTC_BOOL, 2, md);
  }
  if (mask >= 0) in[3] = G->pool[mask].v;
  /* scores within about 2 by their bound: their rounding error, which the
   * output error model multiplies by v's bound, stays well below the
   * tolerance the sensitivity probes check */
  double scale = 1 / sqrt((double)e), qk = (double)e * G->pool[q].mag * G->pool[k].mag;
  if (qk * scale > 4 || rg_chance(G, 30)) {
    scale = qk * scale > 4 ? ldexp(1.0, -(int)ceil(log2(qk / 2))) : rg_chance(G, 50) ? 0.25 : 0.5;
    a[na++] = ptc_attr_float("scale", scale);
  }
  const rg_val* fmask = mask >= 0 && G->pool[mask].dtype != PTC_BOOL ? &G->pool[mask] : NULL;
  rg_model m = sdpa_model(&G->pool[q], &G->pool[k], &G->pool[v], fmask, (double)e,
                          (double)rg_dim_max(G, &sd), scale);
  int32_t o = rg_add1(G, "scaled_dot_product_attention", in, mask >= 0 ? 4 : 3, a, na, &m);
  if (o < 0) return G->rg->n_ops - before;
  uint64_t use = rg_next(G) % 100;
  if (!one_head && use < 80) { /* merge heads: [.., H, L, E] -> [.., L, H * E] -> GEMM */
    int32_t t;
    if (rg_chance(G, 70)) {
      t = vb_transpose(G, o, rg_chance(G, 50) ? -3 : (int64_t)G->pool[o].rank - 3, -2);
    } else {
      int64_t p[3] = {1, 0, 2}, p4[4] = {0, 2, 1, 3};
      ptc_attr pa = b ? ptc_attr_ints("dims", p4, 4) : ptc_attr_ints("dims", p, 3);
      t = vb_view(G, "permute", o, &pa, 1);
    }
    ptc_attr fa[2] = {ptc_attr_int("start_dim", -2), ptc_attr_int("end_dim", -1)};
    int32_t f = vb_view(G, "flatten", t, fa, 2);
    if (f >= 0 && d > VB_SHORT_K) {
      vb_weight_times(G, f); /* w[P, L] @ [.., L, D]: a short contraction */
    } else if (f >= 0) {
      int64_t dout = rg_int(G, 1, 12);
      int32_t wo = vb_weight(G, dt, (ptc_dim){dout, 0, 0}, (ptc_dim){d, 0, 0}, d);
      if (wo >= 0) {
        ptc_value li[2] = {G->pool[f].v, G->pool[wo].v};
        rg_model lm = mm_model(&G->pool[f], &G->pool[wo], (double)d, 0);
        rg_add1(G, "linear", li, 2, NULL, 0, &lm);
      }
    }
    if (rg_chance(G, 15)) vb_other_user(G, o); /* a user that does not swap: stored as is */
  } else if (use < 90) {
    vb_use(G, vb_transpose(G, o, -2, -1)); /* a transposed view of the output */
  }
  if (packed >= 0 && rg_chance(G, 40)) vb_other_user(G, packed); /* read after its views */
  return G->rg->n_ops - before;
}

uint32_t rg_view_block(rg_gen* G) {
  int32_t dt = rg_is_float(G->main_dtype) ? G->main_dtype : PTC_F32;
  uint64_t r = rg_next(G) % 100;
  uint32_t n = 0;
  if (r < 60) n += vb_attention(G, dt);
  if (r >= 50) n += vb_gemm_chain(G, dt);
  return n;
}

/* ---- the family table ----------------------------------------------------------------------------------- */
typedef uint32_t (*family_fn)(rg_gen* G);
static const struct {
  family_fn fn;
  uint8_t weight;
} families[] = {
    {b_unary, 26}, {b_binary, 26}, {b_view, 16}, {b_reduce, 12}, {b_norm, 5},
    {b_matmul, 5}, {b_cat, 3},     {b_select, 5}, {b_to_dtype, 3},
};

uint32_t rg_step(rg_gen* G) {
  uint32_t before = G->rg->n_ops;
  size_t k = pick_weighted(G, &families[0].weight, sizeof families[0], N_OF(families));
  families[k].fn(G);
  if (G->rg->n_ops > before && G->n_pool) rg_rescale(G, (int32_t)G->n_pool - 1);
  return G->rg->n_ops - before;
}
