/* decomp_build.c - the dx_* emitter of decomposition functions: source-node
 * queries, node emission with sticky errors, and the shared building blocks
 * (casts, 0-dim constants, reductions over a dim mask, means). */
#include "decomp_build.h"

#include <string.h>

/* ---- source node ------------------------------------------------------------ */

const gattr* dx_attr(const dctx* d, const char* name) {
  return gattrs_find(&d->node->attrs, name);
}

int64_t dx_int(const dctx* d, const char* name, int64_t dflt) {
  const gattr* a = dx_attr(d, name);
  return a ? a->i : dflt;
}

double dx_float(const dctx* d, const char* name, double dflt) {
  const gattr* a = dx_attr(d, name);
  if (!a) return dflt;
  return a->type == PTC_ATTR_FLOAT ? a->f : (double)a->i;
}

bool dx_bool(const dctx* d, const char* name, bool dflt) {
  const gattr* a = dx_attr(d, name);
  return a ? a->i != 0 : dflt;
}

int32_t dx_dtype_attr(const dctx* d, const char* name, int32_t dflt) {
  const gattr* a = dx_attr(d, name);
  return a ? (int32_t)a->i : dflt;
}

ptc_value dx_in(const dctx* d, uint32_t i) { return i < d->n_in ? d->in[i] : PTC_VALUE_NONE; }

int32_t dx_out_dtype(const dctx* d, uint32_t k) {
  return graph_value(d->src, d->node->out[k])->dtype;
}

const sym_expr** dx_out_shape(dctx* d, uint32_t k, uint32_t* rank) {
  const gvalue* v = graph_value(d->src, d->node->out[k]);
  const sym_expr** sh = ptc_arena_alloc(d->scratch, (v->rank + 1) * sizeof *sh);
  for (uint32_t i = 0; sh && i < v->rank; i++)
    if (!(sh[i] = sym_import(d->g->env, v->shape[i]))) sh = NULL;
  if (!sh && !d->err) d->err = ptc_status_oom();
  *rank = v->rank;
  return sh;
}

uint32_t dx_norm_dim(int64_t dim, uint32_t rank) {
  if (rank == 0) return 0;
  return (uint32_t)(dim < 0 ? dim + (int64_t)rank : dim);
}

void dx_dims_mask(const dctx* d, uint32_t rank, bool* mask) {
  const gattr* a = dx_attr(d, "dim");
  size_t n = a ? (a->type == PTC_ATTR_INTS ? a->count : 1) : 0;
  for (uint32_t i = 0; i < rank; i++) mask[i] = n == 0;
  for (size_t k = 0; k < n; k++) {
    int64_t v = a->i;
    if (a->type == PTC_ATTR_INTS && !sym_is_const(a->exprs[k], &v)) continue;
    uint32_t dim = dx_norm_dim(v, rank);
    if (dim < rank) mask[dim] = true;
  }
}

/* ---- values ------------------------------------------------------------------ */

int32_t dx_dtype(const dctx* d, ptc_value v) { return graph_value(d->g, v)->dtype; }
uint32_t dx_rank(const dctx* d, ptc_value v) { return graph_value(d->g, v)->rank; }
const sym_expr* const* dx_shape(const dctx* d, ptc_value v) { return graph_value(d->g, v)->shape; }

bool dx_dim_is_zero(const dctx* d, ptc_value v, uint32_t dim) {
  int64_t c;
  return dim < dx_rank(d, v) && sym_is_const(dx_shape(d, v)[dim], &c) && c == 0;
}

int32_t dx_acc(int32_t dt) { return dt == PTC_F16 || dt == PTC_BF16 ? PTC_F32 : dt; }

/* ---- emitters ------------------------------------------------------------------ */

ptc_value dx_op(dctx* d, const char* op, const ptc_value* in, size_t n_in, const ptc_attr* a,
                size_t n_attrs) {
  if (d->err) return PTC_VALUE_NONE;
  ptc_value out = PTC_VALUE_NONE;
  size_t n = 0;
  d->err = ptc_graph_add_node(d->g, op, in, n_in, a, n_attrs, &out, 1, &n);
  return d->err ? PTC_VALUE_NONE : out;
}

ptc_value dx_unary(dctx* d, const char* op, ptc_value x) { return dx_op(d, op, &x, 1, NULL, 0); }

ptc_value dx_binary(dctx* d, const char* op, ptc_value x, ptc_value y) {
  ptc_value in[2] = {x, y};
  return dx_op(d, op, in, 2, NULL, 0);
}

ptc_value dx_where(dctx* d, ptc_value c, ptc_value x, ptc_value y) {
  ptc_value in[3] = {c, x, y};
  return dx_op(d, "where", in, 3, NULL, 0);
}

ptc_value dx_scalar(dctx* d, const char* op, ptc_value x, double c) {
  ptc_attr a = ptc_attr_float("other", c);
  return dx_op(d, op, &x, 1, &a, 1);
}

ptc_attr dx_number_attr(const char* name, const gattr* a) {
  ptc_attr o = ptc_attr_float(name, a->f);
  o.type = a->type;
  o.i = a->i;
  return o;
}

ptc_value dx_scalar_attr(dctx* d, const char* op, ptc_value x, const char* name, const gattr* a) {
  ptc_attr o = dx_number_attr(name, a);
  return dx_op(d, op, &x, 1, &o, 1);
}

ptc_value dx_cast(dctx* d, ptc_value x, int32_t dtype) {
  if (d->err || dx_dtype(d, x) == dtype) return d->err ? PTC_VALUE_NONE : x;
  ptc_attr a = ptc_attr_dtype("dtype", dtype);
  return dx_op(d, "to_dtype", &x, 1, &a, 1);
}

ptc_value dx_full(dctx* d, double v, int32_t dtype) {
  ptc_attr a[3] = {ptc_attr_ints("size", NULL, 0), ptc_attr_float("fill_value", v),
                   ptc_attr_dtype("dtype", dtype)};
  return dx_op(d, "full", NULL, 0, a, 3);
}

ptc_value dx_full_attr(dctx* d, const gattr* v, int32_t dtype) {
  ptc_attr a[3] = {ptc_attr_ints("size", NULL, 0), dx_number_attr("fill_value", v),
                   ptc_attr_dtype("dtype", dtype)};
  return dx_op(d, "full", NULL, 0, a, 3);
}

/* INTS attribute `name` holding a possibly symbolic shape of g's env. */
static bool shape_attr(dctx* d, const char* name, uint32_t rank, const sym_expr* const* shape,
                       ptc_attr* out) {
  if (d->err) return false;
  int64_t* ints;
  ptc_sym* syms;
  d->err = replay_exprs(d->g, shape, rank, d->scratch, &ints, &syms);
  *out = ptc_attr_ints(name, ints, rank);
  out->syms = syms;
  return !d->err;
}

ptc_value dx_reshape(dctx* d, ptc_value x, uint32_t rank, const sym_expr* const* shape) {
  ptc_attr a;
  if (!shape_attr(d, "shape", rank, shape, &a)) return PTC_VALUE_NONE;
  return dx_op(d, "reshape", &x, 1, &a, 1);
}

ptc_value dx_expand_to(dctx* d, ptc_value v, uint32_t rank, const sym_expr* const* shape) {
  if (d->err) return PTC_VALUE_NONE;
  bool same = dx_rank(d, v) == rank;
  for (uint32_t i = 0; same && i < rank; i++) same = dx_shape(d, v)[i] == shape[i];
  ptc_attr a;
  if (same || !shape_attr(d, "size", rank, shape, &a)) return d->err ? PTC_VALUE_NONE : v;
  return dx_op(d, "expand", &v, 1, &a, 1);
}

ptc_value dx_full_shape(dctx* d, double v, int32_t dtype, uint32_t rank,
                        const sym_expr* const* shape) {
  ptc_attr a[3];
  if (!shape_attr(d, "size", rank, shape, &a[0])) return PTC_VALUE_NONE;
  a[1] = ptc_attr_float("fill_value", v);
  a[2] = ptc_attr_dtype("dtype", dtype);
  return dx_op(d, "full", NULL, 0, a, 3);
}

ptc_value dx_transpose(dctx* d, ptc_value x, int64_t dim0, int64_t dim1) {
  ptc_attr a[2] = {ptc_attr_int("dim0", dim0), ptc_attr_int("dim1", dim1)};
  return dx_op(d, "transpose", &x, 1, a, 2);
}

ptc_value dx_reduce(dctx* d, const char* op, ptc_value x, const bool* mask, bool keepdim) {
  if (d->err) return PTC_VALUE_NONE;
  int64_t dims[PTC_MAX_RANK];
  size_t n = 0;
  for (uint32_t i = 0; i < dx_rank(d, x); i++)
    if (mask[i]) dims[n++] = i;
  ptc_attr a[2] = {ptc_attr_bool("keepdim", keepdim), ptc_attr_ints("dim", dims, n)};
  return dx_op(d, op, &x, 1, a, n ? 2 : 1);
}

/* ---- means ------------------------------------------------------------------------ */

/* Whether dim i of x is reduced by mask (none set: every dim, as dx_reduce). */
static bool reduced(const dctx* d, ptc_value x, const bool* mask, uint32_t i) {
  bool any = false;
  for (uint32_t k = 0; k < dx_rank(d, x); k++) any |= mask[k];
  return mask[i] || !any;
}

/* Static number of elements reduced by mask, false if symbolic. */
static bool static_count(const dctx* d, ptc_value x, const bool* mask, int64_t* n) {
  const sym_expr* const* sh = dx_shape(d, x);
  *n = 1;
  for (uint32_t i = 0; i < dx_rank(d, x); i++) {
    int64_t c;
    if (!reduced(d, x, mask, i)) continue;
    if (!sym_is_const(sh[i], &c) || !ptc_mul_ok(*n, c, n)) return false;
  }
  return true;
}

ptc_value dx_numel_tensor(dctx* d, uint32_t n, const sym_expr* const* sizes, int32_t dtype) {
  ptc_value ones = dx_full_shape(d, 1, PTC_I64, n, sizes);
  bool none[PTC_MAX_RANK] = {false};
  return dx_cast(d, dx_reduce(d, "sum", ones, none, false), dtype);
}

/* 0-dim tensor of dtype holding the number of elements of x reduced by mask. */
static ptc_value count_tensor(dctx* d, ptc_value x, const bool* mask, int32_t dtype) {
  const sym_expr* sizes[PTC_MAX_RANK];
  uint32_t n = 0;
  for (uint32_t i = 0; i < dx_rank(d, x); i++)
    if (reduced(d, x, mask, i)) sizes[n++] = dx_shape(d, x)[i];
  return dx_numel_tensor(d, n, sizes, dtype);
}

ptc_value dx_div_count(dctx* d, ptc_value s, ptc_value x, const bool* mask, double correction) {
  if (d->err) return PTC_VALUE_NONE;
  int64_t n;
  if (static_count(d, x, mask, &n)) {
    double dof = (double)n - correction;
    return dx_scalar(d, "div", s, dof > 0 ? dof : 0.0);
  }
  ptc_value cnt = count_tensor(d, x, mask, dx_dtype(d, s));
  if (correction != 0) cnt = dx_unary(d, "relu", dx_scalar(d, "sub", cnt, correction));
  if (d->err) return PTC_VALUE_NONE;
  return dx_binary(d, "div", s, dx_expand_to(d, cnt, dx_rank(d, s), dx_shape(d, s)));
}

ptc_value dx_mean(dctx* d, ptc_value x, const bool* mask, bool keepdim) {
  return dx_div_count(d, dx_reduce(d, "sum", x, mask, keepdim), x, mask, 0);
}

ptc_status dx_finish(dctx* d, ptc_value y) {
  d->out[0] = y;
  ptc_status s = d->err;
  d->err = PTC_OK;
  return s;
}
