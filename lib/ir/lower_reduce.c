/* lower_reduce.c - lowerings of the reductions sum, prod, mean, amax, amin,
 * argmax, argmin, any, all into IR_REDUCTION nodes: ranges are the output's
 * dims (kept dims; keepdim's size-1 dims index 0), rranges the reduced dims
 * (statically size-1 dims are dropped from both: they index 0). The input's
 * loader is inlined into the reduction body. dtype rules follow the ref
 * backend: sum/prod/mean convert the input to the output dtype first and
 * accumulate in its math dtype; amax/amin/argmax/argmin compare in the
 * input dtype (NaN wins, first index on ties); any/all test x != 0.
 * A reduction with nothing to reduce is a lazy pointwise value. */
#include "lower_internal.h"

#include <string.h>

enum { DOM_OUT, DOM_IN, DOM_BOOL };

typedef struct red_row {
  const char* name;
  ir_rtype rt;
  int dom;
  bool mean;
} red_row;

static const red_row red_rows[] = {
    {"sum", IR_R_SUM, DOM_OUT, false},     {"prod", IR_R_PROD, DOM_OUT, false},
    {"mean", IR_R_SUM, DOM_OUT, true},     {"amax", IR_R_MAX, DOM_IN, false},
    {"amin", IR_R_MIN, DOM_IN, false},     {"argmax", IR_R_ARGMAX, DOM_IN, false},
    {"argmin", IR_R_ARGMIN, DOM_IN, false}, {"any", IR_R_ANY, DOM_BOOL, false},
    {"all", IR_R_ALL, DOM_BOOL, false},
};

typedef struct red_plan {
  const red_row* row;
  const lval* x;
  bool mask[PTC_MAX_RANK];   /* reduced input dims */
  bool keep;
  int32_t tdt, mdt, rdt;     /* input converted to tdt, computed in mdt, reduced in rdt */
  int32_t out_dt;
  uint32_t out_rank;
  const sym_expr** out_shape;
} red_plan;

static bool is_arg(ir_rtype rt) { return rt == IR_R_ARGMAX || rt == IR_R_ARGMIN; }

static void plan_dims(const gnode* n, red_plan* r) {
  uint32_t rank = r->x->rank;
  const gattr* a = lower_attr(n, "dim");
  int64_t dims[PTC_MAX_RANK + 1];
  size_t nd = 0;
  if (a && a->type == PTC_ATTR_INTS) {
    for (size_t i = 0; i < a->count && i <= PTC_MAX_RANK; i++)
      if (sym_is_const(a->exprs[i], &dims[nd])) nd++;
  } else if (a) {
    dims[nd++] = a->i;
  }
  for (uint32_t d = 0; d < rank; d++) r->mask[d] = nd == 0;
  for (size_t i = 0; i < nd; i++) {
    int64_t d = dims[i] < 0 ? dims[i] + rank : dims[i];
    if (d >= 0 && d < (int64_t)rank) r->mask[d] = true;
  }
}

static void plan_dtypes(red_plan* r) {
  switch (r->row->dom) {
    case DOM_OUT: r->tdt = r->out_dt; break;
    case DOM_IN: r->tdt = r->x->dtype; break;
    default: r->tdt = PTC_BOOL; break;
  }
  r->mdt = r->row->dom == DOM_BOOL ? PTC_BOOL : lower_opmath(r->tdt);
  r->rdt = is_arg(r->row->rt) ? PTC_I64 : r->mdt;
}

/* Input index for output index oidx; reduced dims get rv[d]. */
static void input_index(lower_ctx* L, const red_plan* r, const sym_expr* const* oidx,
                        const sym_expr* const* rv, const sym_expr** xi) {
  uint32_t o = 0;
  for (uint32_t d = 0; d < r->x->rank; d++) {
    if (r->mask[d]) {
      xi[d] = rv ? rv[d] : lower_const(L, 0);
      if (r->keep) o++;
    } else {
      xi[d] = oidx[o++];
    }
  }
}

/* The input element converted to the math dtype. */
static ir_val load_value(lower_ctx* L, const red_plan* r, const sym_expr* const* xi) {
  return lower_load_math(L, r->x, xi, r->tdt, r->mdt);
}

/* ---- nothing to reduce: a pointwise value ------------------------------------------- */

static ir_val load_trivial(lower_ctx* L, const lval* v, const sym_expr* const* idx) {
  const red_plan* r = v->data;
  const sym_expr* xi[PTC_MAX_RANK + 1];
  input_index(L, r, idx, NULL, xi);
  ir_val x = is_arg(r->row->rt) ? ir_ops_const_i(L->body, 0, PTC_I64) : load_value(L, r, xi);
  int32_t dt = is_arg(r->row->rt) ? PTC_I64 : r->mdt;
  return lower_convert(L, x, dt, v->dtype);
}

/* ---- the reduction node ----------------------------------------------------------------- */

typedef struct red_loops {
  const sym_expr* oidx[PTC_MAX_RANK + 1];
  const sym_expr* rv[PTC_MAX_RANK + 1];     /* per input dim (reduced dims) */
  const sym_expr* ranges[PTC_MAX_RANK + 1];
  const sym_expr* rranges[PTC_MAX_RANK + 1];
  uint32_t n_ranges, n_rranges;
  const sym_expr* flat;                     /* row-major index over the reduced dims */
  const sym_expr* count;                    /* number of reduced elements */
} red_loops;

static bool make_loops(lower_ctx* L, const red_plan* r, red_loops* lp) {
  lp->n_ranges = lp->n_rranges = 0;
  for (uint32_t o = 0; o < r->out_rank; o++) {
    bool one = lower_is(r->out_shape[o], 1);
    lp->oidx[o] = one ? lower_const(L, 0) : L->p->xvars[lp->n_ranges];
    if (!one) lp->ranges[lp->n_ranges++] = r->out_shape[o];
  }
  lp->flat = lower_const(L, 0);
  lp->count = lower_const(L, 1);
  for (uint32_t d = 0; d < r->x->rank; d++) {
    if (!r->mask[d]) continue;
    bool one = lower_is(r->x->shape[d], 1);
    lp->rv[d] = one ? lower_const(L, 0) : L->p->rvars[lp->n_rranges];
    if (!one) lp->rranges[lp->n_rranges++] = r->x->shape[d];
    lp->flat = sym_add(L->env, sym_mul(L->env, lp->flat, r->x->shape[d]), lp->rv[d]);
    lp->count = sym_mul(L->env, lp->count, r->x->shape[d]);
  }
  return lp->flat && lp->count;
}

static ptc_status out_buffer(lower_ctx* L, const red_plan* r, int32_t* id) {
  const sym_expr* st[PTC_MAX_RANK + 1];
  ir_buffer b;
  memset(&b, 0, sizeof b);
  b.kind = IR_BUF_COMPUTED;
  b.dtype = r->out_dt;
  b.rank = r->out_rank;
  b.shape = r->out_shape;
  b.strides = st;
  b.offset = lower_const(L, 0);
  b.numel = lower_numel(L, r->out_rank, r->out_shape);
  b.graph_input = -1;
  b.graph_value = PTC_VALUE_NONE;
  if (!lower_contig(L, r->out_rank, r->out_shape, st) || !b.offset || !b.numel)
    return ptc_status_oom();
  return ir_add_buffer(L->p, &b, id);
}

/* Body: load (inner), reduce, finish (mean), convert, store. */
static void emit_body(lower_ctx* L, const red_plan* r, const red_loops* lp, int32_t buf) {
  const sym_expr* xi[PTC_MAX_RANK + 1];
  input_index(L, r, lp->oidx, lp->rv, xi);
  ir_val v = load_value(L, r, xi);
  ir_val ix = is_arg(r->row->rt) ? ir_ops_index_expr(L->p, L->body, lp->flat, PTC_I64) : -1;
  ir_val red = ir_ops_reduce(L->body, r->row->rt, v, ix, r->rdt);
  if (r->row->mean) {
    ir_val n = ir_ops_index_expr(L->p, L->body, lp->count, PTC_I64);
    red = ir_ops_binary(L->body, IR_DIV, red, lower_convert(L, n, PTC_I64, r->rdt), r->rdt);
  }
  red = lower_convert(L, red, r->rdt, r->out_dt);
  const ir_buffer* b = ir_buf(L->p, buf);
  ir_ops_store(L->p, L->body, buf, lower_dot(L, r->out_rank, lp->oidx, b->strides, b->offset),
               red);
}

static ptc_status reduction_node(lower_ctx* L, const red_plan* r, const gnode* n, lval* out) {
  red_loops lp;
  int32_t buf;
  if (!make_loops(L, r, &lp)) return ptc_status_oom();
  PTC_TRY(out_buffer(L, r, &buf));
  ir_node node;
  memset(&node, 0, sizeof node);
  node.kind = IR_REDUCTION;
  node.out_buf = buf;
  node.n_ranges = lp.n_ranges;
  node.ranges = lp.ranges;
  node.n_rranges = lp.n_rranges;
  node.rranges = lp.rranges;
  node.origin = n->name;
  lower_target saved;
  lower_begin_body(L, &node.body, &saved);
  emit_body(L, r, &lp, buf);
  lower_end_body(L, &saved);
  PTC_TRY(ir_add_node(L->p, &node, NULL));
  const ir_buffer* b = ir_buf(L->p, buf);
  out->kind = LV_BUF;
  out->buf = buf;
  out->shape = b->shape;
  out->strides = b->strides;
  out->offset = b->offset;
  out->ext_node = -1;
  return PTC_OK;
}

static ptc_status lower_reduction(lower_ctx* L, const gnode* n, lval* out) {
  red_plan* r = lower_alloc(L, sizeof *r);
  if (!r) return ptc_status_oom();
  for (size_t i = 0; i < sizeof red_rows / sizeof red_rows[0]; i++)
    if (strcmp(red_rows[i].name, n->op->name) == 0) r->row = &red_rows[i];
  if (!r->row) return PTC_ERR(INTERNAL, "no reduction row for %s", n->op->name);
  r->x = lower_in(L, n, 0);
  r->keep = lower_attr_bool(n, "keepdim", false);
  r->out_dt = out->dtype;
  r->out_rank = out->rank;
  r->out_shape = out->shape;
  plan_dims(n, r);
  plan_dtypes(r);
  bool real = false;
  for (uint32_t d = 0; d < r->x->rank; d++) real |= r->mask[d] && !lower_is(r->x->shape[d], 1);
  if (real) return reduction_node(L, r, n, out);
  lval_lazy(out, out->dtype, out->rank, out->shape, load_trivial, r);
  return PTC_OK;
}

const lower_entry lower_reduce_table[] = {
    {"sum", lower_reduction},    {"prod", lower_reduction},   {"mean", lower_reduction},
    {"amax", lower_reduction},   {"amin", lower_reduction},   {"argmax", lower_reduction},
    {"argmin", lower_reduction}, {"any", lower_reduction},    {"all", lower_reduction},
};
const size_t lower_reduce_count = sizeof lower_reduce_table / sizeof lower_reduce_table[0];
