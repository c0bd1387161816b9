/* randgraph_ops.c - the random-graph generator's op families: a weighted
 * table of families (unary, binary, view, reduce, norm, matmul, cat,
 * select, to_dtype), per family a table of ops with their accepted dtypes,
 * domain and error model, and one builder per family that picks operands,
 * conditions them and adds the node. Public API only. */
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
