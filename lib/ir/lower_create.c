/* lower_create.c - lowerings of the creation ops as lazy loaders: constants
 * (full, zeros, ones, fill), index expressions (arange, eye) and the
 * counter-based random ops (rand, randn: IR_RAND/IR_RANDN at the element's
 * row-major index, stream = the graph node index, as the ref backend; a
 * `seed` attribute or a half-precision dtype goes to the ref fallback). */
#include "lower_internal.h"

#include <string.h>

typedef struct create_data {
  ir_scalar s;       /* constant value (of the output dtype) */
  double start, step;
  int64_t stream;
  int normal;
} create_data;

static create_data* new_data(lower_ctx* L) { return lower_alloc(L, sizeof(create_data)); }

static ptc_status finish(lval* out, lval_load_fn fn, create_data* d) {
  if (!d) return ptc_status_oom();
  lval_lazy(out, out->dtype, out->rank, out->shape, fn, d);
  return PTC_OK;
}

/* ---- constants -------------------------------------------------------------------------- */

static ir_val load_const(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  (void)idx;
  const create_data* d = v->data;
  return lower_emit_const(L, d->s, v->dtype);
}

/* A constant from scalar attribute `name` (float or integer by its type). */
static ptc_status const_from_attr(lower_ctx* L, const gnode* n, const char* name, lval* out) {
  create_data* d = new_data(L);
  if (d && lower_attr_cat(n, name) == 2)
    d->s = ir_scalar_of_f(lower_attr_float(n, name, 0), out->dtype);
  else if (d)
    d->s = ir_scalar_of_i(lower_attr_int(n, name, 0), out->dtype);
  return finish(out, load_const, d);
}

static ptc_status lower_full(lower_ctx* L, const gnode* n, lval* out) {
  return const_from_attr(L, n, "fill_value", out);
}

static ptc_status lower_fill(lower_ctx* L, const gnode* n, lval* out) {
  return const_from_attr(L, n, "value", out);
}

static ptc_status const_int(lower_ctx* L, int64_t v, lval* out) {
  create_data* d = new_data(L);
  if (d) d->s = ir_scalar_of_i(v, out->dtype);
  return finish(out, load_const, d);
}

static ptc_status lower_zeros(lower_ctx* L, const gnode* n, lval* out) {
  (void)n;
  return const_int(L, 0, out);
}

static ptc_status lower_ones(lower_ctx* L, const gnode* n, lval* out) {
  (void)n;
  return const_int(L, 1, out);
}

/* ---- index expressions ------------------------------------------------------------------ */

/* arange: start + i * step in double for floating outputs (rounded once), in
 * int64 with truncated arguments for integer outputs (ATen's accumulate
 * types). */
static ir_val load_arange(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const create_data* d = v->data;
  if (!ptc_dtype_is_float(v->dtype)) {
    const sym_expr* e = sym_add_c(L->env, sym_mul_c(L->env, idx[0], (int64_t)d->step),
                                  (int64_t)d->start);
    return lower_convert(L, ir_ops_index_expr(L->p, L->body, e, PTC_I64), PTC_I64, v->dtype);
  }
  ir_val i = ir_ops_to_dtype(L->body, ir_ops_index_expr(L->p, L->body, idx[0], PTC_I64), PTC_F64);
  ir_val m = ir_ops_binary(L->body, IR_MUL, ir_ops_const_f(L->body, d->step, PTC_F64), i, PTC_F64);
  ir_val r = ir_ops_binary(L->body, IR_ADD, ir_ops_const_f(L->body, d->start, PTC_F64), m, PTC_F64);
  return lower_convert(L, r, PTC_F64, v->dtype);
}

static ptc_status lower_arange(lower_ctx* L, const gnode* n, lval* out) {
  create_data* d = new_data(L);
  if (d) {
    d->start = lower_attr_float(n, "start", 0);
    d->step = lower_attr_float(n, "step", 1);
  }
  return finish(out, load_arange, d);
}

static ir_val load_eye(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  return lower_convert(L, lower_index_cmp(L, IR_EQ, idx[0], idx[1]), PTC_BOOL, v->dtype);
}

static ptc_status lower_eye(lower_ctx* L, const gnode* n, lval* out) {
  (void)n;
  return finish(out, load_eye, new_data(L));
}

/* ---- random --------------------------------------------------------------------------------- */

static ir_val load_rand(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const create_data* d = v->data;
  const sym_expr* st[PTC_MAX_RANK + 1];
  const sym_expr* flat = lower_contig(L, v->rank, v->shape, st)
                             ? lower_dot(L, v->rank, idx, st, NULL)
                             : NULL;
  return ir_ops_rand(L->p, L->body, d->normal, flat, d->stream, v->dtype);
}

static ptc_status lower_rand_common(lower_ctx* L, const gnode* n, lval* out, int normal) {
  if (lower_attr(n, "seed") || (out->dtype != PTC_F32 && out->dtype != PTC_F64))
    return lower_fallback(L, n, out);
  create_data* d = new_data(L);
  if (d) {
    d->normal = normal;
    d->stream = (int64_t)L->node_index;
  }
  return finish(out, load_rand, d);
}

static ptc_status lower_rand(lower_ctx* L, const gnode* n, lval* out) {
  return lower_rand_common(L, n, out, 0);
}

static ptc_status lower_randn(lower_ctx* L, const gnode* n, lval* out) {
  return lower_rand_common(L, n, out, 1);
}

const lower_entry lower_create_table[] = {
    {"full", lower_full},   {"fill", lower_fill},   {"zeros", lower_zeros},
    {"ones", lower_ones},   {"arange", lower_arange}, {"eye", lower_eye},
    {"rand", lower_rand},   {"randn", lower_randn},
};
const size_t lower_create_count = sizeof lower_create_table / sizeof lower_create_table[0];
