/* ops_reduce.c - meta functions and op table of the reduce family:
 * reductions over a set of dims (sum, mean, prod, amax, amin, argmax, argmin,
 * any, all, var, std, var_mean, logsumexp), ops along one dim (softmax,
 * log_softmax, cumsum, topk, sort) and normalisations (layer_norm, rms_norm,
 * batch_norm, group_norm). Shapes stay symbolic: reduced dims are dropped or
 * become 1 (keepdim); required equalities go through meta_expect_eq. */
#include "op.h"

#include <stdio.h>
#include <string.h>

/* dtype category masks for meta_expect_dtype */
enum { CAT_BOOL = 1, CAT_INT = 2, CAT_FLOAT = 4 };

/* Output dtype rules of the reductions. */
typedef enum dt_rule {
  DT_ACCUM,   /* sum/prod/cumsum: 'dtype', else bool/int -> i64, else input */
  DT_MEAN,    /* 'dtype' or input; must be floating */
  DT_SAME,    /* input dtype */
  DT_INDEX,   /* i64 (argmax/argmin; bool input rejected as ATen) */
  DT_LOGICAL, /* any/all: u8 stays u8, everything else -> bool */
  DT_FLOATIN, /* input must be floating; same dtype (var, std, norms) */
  DT_TOFLOAT, /* floating stays, bool/int -> f32 (logsumexp) */
  DT_SOFTMAX  /* 'dtype' or input; must be floating */
} dt_rule;

static const gattr* attr(const meta_ctx* m, const char* name) {
  return m->attrs ? gattrs_find(m->attrs, name) : NULL;
}

static ptc_status need_input(const meta_ctx* m, size_t i, const char* what) {
  if (i < m->n_in && m->in[i]) return PTC_OK;
  return meta_fail(m, "%s is required", what);
}

/* Text of one size expression ("s0*2", "4") in the arena, for messages. */
static const char* expr_str(meta_ctx* m, const sym_expr* e) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  sym_format_sb(m->env, e, &sb);
  const char* r = sb.oom || !sb.data ? NULL : ptc_arena_strdup(m->arena, sb.data);
  ptc_sb_free(&sb);
  return r ? r : "?";
}

/* ---- dtypes ------------------------------------------------------------------ */
static ptc_status float_result(const meta_ctx* m, int32_t dt, int32_t in_dt) {
  if (ptc_dtype_is_float(dt)) return PTC_OK;
  return meta_fail(m,
                   "could not infer output dtype: result must be floating, got %s "
                   "(input %s; pass a floating 'dtype')",
                   ptc_dtype_name(dt), ptc_dtype_name(in_dt));
}

static ptc_status out_dtype(const meta_ctx* m, dt_rule rule, int32_t* out) {
  int32_t x = m->in[0]->dtype;
  switch (rule) {
    case DT_ACCUM: *out = meta_dtype(m, "dtype", ptc_dtype_is_float(x) ? x : PTC_I64); break;
    case DT_MEAN:
    case DT_SOFTMAX:
      *out = meta_dtype(m, "dtype", x);
      return float_result(m, *out, x);
    case DT_SAME: *out = x; break;
    case DT_INDEX:
      *out = PTC_I64;
      return meta_expect_dtype(m, 0, "input", CAT_INT | CAT_FLOAT);
    case DT_LOGICAL: *out = x == PTC_U8 ? PTC_U8 : PTC_BOOL; break;
    case DT_FLOATIN:
      *out = x;
      return meta_expect_dtype(m, 0, "input", CAT_FLOAT);
    case DT_TOFLOAT: *out = ptc_dtype_is_float(x) ? x : PTC_F32; break;
  }
  return PTC_OK;
}

/* ---- dims -------------------------------------------------------------------- */
/* Reduced dims of a rank-`rank` input from attribute "dim" (INT or INTS;
 * absent or empty = every dim). Repeated dims are rejected as in ATen. */
static ptc_status reduce_mask(meta_ctx* m, uint32_t rank, bool* mask) {
  memset(mask, 0, PTC_MAX_RANK * sizeof *mask);
  const gattr* a = attr(m, "dim");
  int64_t dims[PTC_MAX_RANK];
  size_t n = 0;
  if (a && a->type == PTC_ATTR_INTS) {
    PTC_TRY(meta_ints(m, "dim", dims, PTC_MAX_RANK, &n));
  } else if (a) {
    dims[0] = a->i;
    n = 1;
  }
  if (n == 0) {
    for (uint32_t d = 0; d < rank; d++) mask[d] = true;
    return PTC_OK;
  }
  bool seen[PTC_MAX_RANK + 1] = {false};
  for (size_t i = 0; i < n; i++) {
    uint32_t d;
    PTC_TRY(meta_dim(m, dims[i], rank, &d));
    if (seen[d]) return meta_fail(m, "dim %u appears multiple times in the list of dims", d);
    seen[d] = true;
    if (d < rank) mask[d] = true;
  }
  return PTC_OK;
}

/* Output shape of a reduction: reduced dims dropped, or 1 with keepdim. */
static const sym_expr** reduced_shape(meta_ctx* m, const meta_tensor* x, const bool* mask,
                                      bool keep, uint32_t* rank) {
  const sym_expr** sh = meta_alloc(m, (x->rank + 1) * sizeof *sh);
  const sym_expr* one = sym_const(m->env, 1);
  if (!sh || !one) return NULL;
  uint32_t r = 0;
  for (uint32_t d = 0; d < x->rank; d++) {
    if (!mask[d])
      sh[r++] = x->shape[d];
    else if (keep)
      sh[r++] = one;
  }
  *rank = r;
  return sh;
}

/* amax/argmax & co: a statically empty reduced dim is an error (ATen). */
static ptc_status check_nonzero(const meta_ctx* m, const meta_tensor* x, const bool* mask) {
  for (uint32_t d = 0; d < x->rank; d++) {
    int64_t v;
    if (mask[d] && sym_is_const(x->shape[d], &v) && v == 0)
      return meta_fail(m, "cannot reduce over a zero-size dimension (dim %u has size 0)", d);
  }
  return PTC_OK;
}

/* ---- reductions --------------------------------------------------------------- */
static ptc_status reduce_meta(meta_ctx* m, dt_rule rule, bool nonzero, size_t n_out) {
  PTC_TRY(need_input(m, 0, "input"));
  const meta_tensor* x = m->in[0];
  bool mask[PTC_MAX_RANK];
  int32_t dt;
  PTC_TRY(out_dtype(m, rule, &dt));
  PTC_TRY(reduce_mask(m, x->rank, mask));
  if (nonzero) PTC_TRY(check_nonzero(m, x, mask));
  uint32_t r;
  const sym_expr** sh = reduced_shape(m, x, mask, meta_bool(m, "keepdim", false), &r);
  if (!sh) return ptc_status_oom();
  for (size_t i = 0; i < n_out; i++) PTC_TRY(meta_add_out(m, dt, r, sh));
  return PTC_OK;
}

static ptc_status var_meta(meta_ctx* m, size_t n_out) {
  if (meta_has(m, "correction") && meta_has(m, "unbiased"))
    return meta_fail(m, "cannot specify both 'correction' and 'unbiased'");
  return reduce_meta(m, DT_FLOATIN, false, n_out);
}

static ptc_status meta_sum(meta_ctx* m) { return reduce_meta(m, DT_ACCUM, false, 1); }
static ptc_status meta_mean(meta_ctx* m) { return reduce_meta(m, DT_MEAN, false, 1); }
static ptc_status meta_minmax(meta_ctx* m) { return reduce_meta(m, DT_SAME, true, 1); }
static ptc_status meta_argminmax(meta_ctx* m) { return reduce_meta(m, DT_INDEX, true, 1); }
static ptc_status meta_logical(meta_ctx* m) { return reduce_meta(m, DT_LOGICAL, false, 1); }
static ptc_status meta_var(meta_ctx* m) { return var_meta(m, 1); }
static ptc_status meta_var_mean(meta_ctx* m) { return var_meta(m, 2); }
static ptc_status meta_logsumexp(meta_ctx* m) { return reduce_meta(m, DT_TOFLOAT, false, 1); }

/* ---- ops along one dim ----------------------------------------------------------- */
static ptc_status along_meta(meta_ctx* m, dt_rule rule) {
  PTC_TRY(need_input(m, 0, "input"));
  const meta_tensor* x = m->in[0];
  uint32_t d;
  int32_t dt;
  PTC_TRY(meta_dim(m, meta_int(m, "dim", -1), x->rank, &d));
  PTC_TRY(out_dtype(m, rule, &dt));
  return meta_add_out(m, dt, x->rank, x->shape);
}

static ptc_status meta_softmax(meta_ctx* m) { return along_meta(m, DT_SOFTMAX); }
static ptc_status meta_cumsum(meta_ctx* m) { return along_meta(m, DT_ACCUM); }

static ptc_status meta_sort(meta_ctx* m) {
  PTC_TRY(along_meta(m, DT_SAME));
  return meta_add_out(m, PTC_I64, m->in[0]->rank, m->in[0]->shape);
}

/* k <= size of the dim (statically or with a guard). */
static ptc_status check_k(meta_ctx* m, const sym_expr* k, const sym_expr* size, uint32_t d) {
  int64_t kv = 0;
  bool kc = sym_is_const(k, &kv);
  if (kc && kv < 0) return meta_fail(m, "k (%lld) must be non-negative", (long long)kv);
  bool ok = false;
  ptc_status s = sym_guard(m->env, SYM_LE, k, size, &ok);
  if (s) return ptc_status_prefix(s, "%s: k", m->op->name);
  if (ok) return PTC_OK;
  return meta_fail(m, "selected index k out of range: k = %s exceeds the size %s of dim %u",
                   expr_str(m, k), expr_str(m, size), d);
}

static ptc_status meta_topk(meta_ctx* m) {
  PTC_TRY(need_input(m, 0, "input"));
  const meta_tensor* x = m->in[0];
  const gattr* ka = attr(m, "k");
  if (!ka || !ka->sym) return meta_fail(m, "missing required attribute 'k'");
  PTC_TRY(meta_expect_dtype(m, 0, "input", CAT_INT | CAT_FLOAT));
  uint32_t d;
  PTC_TRY(meta_dim(m, meta_int(m, "dim", -1), x->rank, &d));
  const sym_expr* one = sym_const(m->env, 1);
  if (!one) return ptc_status_oom();
  PTC_TRY(check_k(m, ka->sym, x->rank ? x->shape[d] : one, d));
  const sym_expr** sh = meta_alloc(m, (x->rank + 1) * sizeof *sh);
  if (!sh) return ptc_status_oom();
  for (uint32_t i = 0; i < x->rank; i++) sh[i] = i == d ? ka->sym : x->shape[i];
  PTC_TRY(meta_add_out(m, x->dtype, x->rank, sh));
  return meta_add_out(m, PTC_I64, x->rank, sh);
}

/* ---- normalisations ---------------------------------------------------------------- */
/* Optional parameter tensor `i` must be floating and have shape `shape`. */
static ptc_status check_param(meta_ctx* m, size_t i, const char* name, uint32_t rank,
                              const sym_expr* const* shape) {
  const meta_tensor* p = i < m->n_in ? m->in[i] : NULL;
  if (!p) return PTC_OK;
  PTC_TRY(meta_expect_dtype(m, i, name, CAT_FLOAT));
  if (p->rank != rank)
    return meta_fail(m, "%s: expected shape %s, got %s", name, meta_shape_str(m, rank, shape),
                     meta_shape_str(m, p->rank, p->shape));
  char what[96];
  for (uint32_t d = 0; d < rank; d++) {
    snprintf(what, sizeof what, "%s dim %u", name, d);
    PTC_TRY(meta_expect_eq(m, shape[d], p->shape[d], what));
  }
  return PTC_OK;
}

/* Input 0 floating, its trailing dims equal to normalized_shape, params
 * 1..n_in of shape normalized_shape. */
static ptc_status meta_last_dims_norm(meta_ctx* m) {
  static const char* const names[] = {"input", "weight", "bias"};
  PTC_TRY(need_input(m, 0, "input"));
  const meta_tensor* x = m->in[0];
  PTC_TRY(meta_expect_dtype(m, 0, "input", CAT_FLOAT));
  size_t n;
  const sym_expr** ns = meta_exprs(m, "normalized_shape", &n);
  if (n == 0) return meta_fail(m, "normalized_shape must have at least one element");
  if (n > x->rank)
    return meta_fail(m, "normalized_shape %s has more dims than the input %s",
                     meta_shape_str(m, (uint32_t)n, ns), meta_shape_str(m, x->rank, x->shape));
  char what[96];
  for (size_t i = 0; i < n; i++) {
    snprintf(what, sizeof what, "input dim %zu (normalized_shape[%zu])", x->rank - n + i, i);
    PTC_TRY(meta_expect_eq(m, ns[i], x->shape[x->rank - n + i], what));
  }
  for (size_t i = 1; i < m->n_in; i++) PTC_TRY(check_param(m, i, names[i], (uint32_t)n, ns));
  return meta_add_out(m, x->dtype, x->rank, x->shape);
}

/* Input 0 floating of rank >= 2 ([N, C, ...]); params 1.. of shape [C]. */
static ptc_status channel_norm(meta_ctx* m, const char* const* names) {
  PTC_TRY(need_input(m, 0, "input"));
  const meta_tensor* x = m->in[0];
  PTC_TRY(meta_expect_dtype(m, 0, "input", CAT_FLOAT));
  if (x->rank < 2)
    return meta_fail(m, "expected input of rank >= 2 ([N, C, ...]), got rank %u", x->rank);
  for (size_t i = 1; i < m->n_in; i++) PTC_TRY(check_param(m, i, names[i], 1, &x->shape[1]));
  return meta_add_out(m, x->dtype, x->rank, x->shape);
}

static ptc_status meta_batch_norm(meta_ctx* m) {
  static const char* const names[] = {"input", "weight", "bias", "running_mean", "running_var"};
  if (meta_bool(m, "training", false))
    return meta_fail(m, "training=True is not supported (inference only)");
  PTC_TRY(need_input(m, 3, "running_mean (inference mode)"));
  PTC_TRY(need_input(m, 4, "running_var (inference mode)"));
  return channel_norm(m, names);
}

static ptc_status meta_group_norm(meta_ctx* m) {
  static const char* const names[] = {"input", "weight", "bias"};
  PTC_TRY(channel_norm(m, names));
  const meta_tensor* x = m->in[0];
  int64_t g = meta_int(m, "num_groups", 0);
  if (g <= 0) return meta_fail(m, "num_groups must be positive, got %lld", (long long)g);
  if (x->rank >= PTC_MAX_RANK)
    return meta_fail(m, "input rank %u is not supported (at most %d)", x->rank, PTC_MAX_RANK - 1);
  const sym_expr* rem = sym_mod(m->env, x->shape[1], sym_const(m->env, g));
  const sym_expr* zero = sym_const(m->env, 0);
  if (!rem || !zero) return ptc_status_oom();
  bool ok = false;
  ptc_status s = sym_guard(m->env, SYM_EQ, rem, zero, &ok);
  if (s) return ptc_status_prefix(s, "%s: channels", m->op->name);
  if (!ok)
    return meta_fail(m, "expected the number of channels %s to be divisible by num_groups %lld",
                     expr_str(m, x->shape[1]), (long long)g);
  return PTC_OK;
}

/* ---- table ------------------------------------------------------------------------- */
static const op_attr_spec a_reduce[] = {{"dim", PTC_ATTR_INTS, false},
                                        {"keepdim", PTC_ATTR_BOOL, false},
                                        {"dtype", PTC_ATTR_DTYPE, false},
                                        {NULL, 0, false}};
static const op_attr_spec a_dims[] = {
    {"dim", PTC_ATTR_INTS, false}, {"keepdim", PTC_ATTR_BOOL, false}, {NULL, 0, false}};
static const op_attr_spec a_arg[] = {
    {"dim", PTC_ATTR_INT, false}, {"keepdim", PTC_ATTR_BOOL, false}, {NULL, 0, false}};
static const op_attr_spec a_var[] = {{"dim", PTC_ATTR_INTS, false},
                                     {"keepdim", PTC_ATTR_BOOL, false},
                                     {"correction", PTC_ATTR_FLOAT, false},
                                     {"unbiased", PTC_ATTR_BOOL, false},
                                     {NULL, 0, false}};
static const op_attr_spec a_lse[] = {
    {"dim", PTC_ATTR_INTS, true}, {"keepdim", PTC_ATTR_BOOL, false}, {NULL, 0, false}};
static const op_attr_spec a_along[] = {
    {"dim", PTC_ATTR_INT, true}, {"dtype", PTC_ATTR_DTYPE, false}, {NULL, 0, false}};
static const op_attr_spec a_topk[] = {{"k", PTC_ATTR_SYM, true},
                                      {"dim", PTC_ATTR_INT, false},
                                      {"largest", PTC_ATTR_BOOL, false},
                                      {"sorted", PTC_ATTR_BOOL, false},
                                      {NULL, 0, false}};
static const op_attr_spec a_sort[] = {{"dim", PTC_ATTR_INT, false},
                                      {"descending", PTC_ATTR_BOOL, false},
                                      {"stable", PTC_ATTR_BOOL, false},
                                      {NULL, 0, false}};
static const op_attr_spec a_last_norm[] = {
    {"normalized_shape", PTC_ATTR_INTS, true}, {"eps", PTC_ATTR_FLOAT, false}, {NULL, 0, false}};
static const op_attr_spec a_batch_norm[] = {{"eps", PTC_ATTR_FLOAT, false},
                                            {"momentum", PTC_ATTR_FLOAT, false},
                                            {"training", PTC_ATTR_BOOL, false},
                                            {NULL, 0, false}};
static const op_attr_spec a_group_norm[] = {
    {"num_groups", PTC_ATTR_INT, true}, {"eps", PTC_ATTR_FLOAT, false}, {NULL, 0, false}};

#define RED OP_REDUCTION
#define MULTI OP_MULTI_OUT
const op_def ptc_ops_reduce[] = {
    {"sum", 1, 1, RED, a_reduce, meta_sum},
    {"mean", 1, 1, RED, a_reduce, meta_mean},
    {"prod", 1, 1, RED, a_reduce, meta_sum},
    {"amax", 1, 1, RED, a_dims, meta_minmax},
    {"amin", 1, 1, RED, a_dims, meta_minmax},
    {"argmax", 1, 1, RED, a_arg, meta_argminmax},
    {"argmin", 1, 1, RED, a_arg, meta_argminmax},
    {"any", 1, 1, RED, a_dims, meta_logical},
    {"all", 1, 1, RED, a_dims, meta_logical},
    {"var", 1, 1, RED, a_var, meta_var},
    {"std", 1, 1, RED, a_var, meta_var},
    {"var_mean", 1, 1, RED | MULTI, a_var, meta_var_mean},
    {"logsumexp", 1, 1, RED, a_lse, meta_logsumexp},
    {"softmax", 1, 1, 0, a_along, meta_softmax},
    {"log_softmax", 1, 1, 0, a_along, meta_softmax},
    {"cumsum", 1, 1, 0, a_along, meta_cumsum},
    {"topk", 1, 1, MULTI, a_topk, meta_topk},
    {"sort", 1, 1, MULTI, a_sort, meta_sort},
    {"layer_norm", 1, 3, 0, a_last_norm, meta_last_dims_norm},
    {"rms_norm", 1, 2, 0, a_last_norm, meta_last_dims_norm},
    {"batch_norm", 5, 5, 0, a_batch_norm, meta_batch_norm},
    {"group_norm", 1, 3, 0, a_group_norm, meta_group_norm},
};
const size_t ptc_ops_reduce_count = sizeof ptc_ops_reduce / sizeof ptc_ops_reduce[0];
