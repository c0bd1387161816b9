/* lower_extern.c - ops that become IR_EXTERN nodes: matrix products
 * (mm, bmm, matmul, linear, addmm, baddbmm -> IR_EXT_MATMUL with the
 * linear weight transposed through strides), convolutions (IR_EXT_CONV,
 * attributes read from graph node `graph_node`), the generic ref-kernel
 * fallback for every op without a lowering and host-registered ops
 * (IR_EXT_CUSTOM), both on inputs realized into buffers; and epilogue
 * folding: a 1-D bias `add` along the last dim and a following
 * relu/gelu/silu/sigmoid/tanh consuming a MATMUL (activation: also CONV)
 * output that has no other user are folded into the extern. */
#include "lower_internal.h"

#include <string.h>

/* Contiguous output buffers for the node's outputs; out[k] become views of
 * them. */
static ptc_status output_buffers(lower_ctx* L, const gnode* n, lval* out, int32_t* ids) {
  for (uint32_t k = 0; k < n->n_out; k++) {
    const sym_expr** st = lower_exprs(L, out[k].rank);
    ir_buffer b;
    memset(&b, 0, sizeof b);
    b.kind = IR_BUF_COMPUTED;
    b.dtype = out[k].dtype;
    b.rank = out[k].rank;
    b.shape = out[k].shape;
    b.strides = st;
    b.offset = lower_const(L, 0);
    b.numel = lower_numel(L, b.rank, b.shape);
    b.graph_input = -1;
    b.graph_value = PTC_VALUE_NONE;
    if (!st || !lower_contig(L, b.rank, b.shape, st) || !b.offset || !b.numel)
      return ptc_status_oom();
    PTC_TRY(ir_add_buffer(L->p, &b, &ids[k]));
    const ir_buffer* nb = ir_buf(L->p, ids[k]);
    out[k].kind = LV_BUF;
    out[k].buf = ids[k];
    out[k].shape = nb->shape;
    out[k].strides = nb->strides;
    out[k].offset = nb->offset;
    out[k].ext_node = -1;
  }
  return PTC_OK;
}

/* Adds an extern node (inputs already buffers); returns its index. */
static ptc_status add_extern(lower_ctx* L, const gnode* n, int32_t kind, int32_t* in,
                             uint32_t n_in, lval* out, size_t* index) {
  int32_t* ids = lower_alloc(L, (n->n_out + 1) * sizeof *ids);
  if (!ids) return ptc_status_oom();
  PTC_TRY(output_buffers(L, n, out, ids));
  ir_node node;
  memset(&node, 0, sizeof node);
  node.kind = IR_EXTERN;
  node.out_buf = ids[0];
  node.origin = n->name;
  node.ext.kind = kind;
  node.ext.n_in = n_in;
  node.ext.in = in;
  node.ext.n_out = n->n_out;
  node.ext.out = ids;
  node.ext.graph_node = L->node_index;
  node.ext.alpha = 1.0;
  node.ext.beta = 0.0;
  node.ext.activation = IR_ACT_NONE;
  return ir_add_node(L->p, &node, index);
}

/* The node run whole on realized inputs: its ref kernel, or a host op. */
static ptc_status node_call(lower_ctx* L, const gnode* n, lval* out, int32_t kind) {
  int32_t* in = lower_alloc(L, (n->n_in + 1) * sizeof *in);
  if (!in) return ptc_status_oom();
  for (uint32_t k = 0; k < n->n_in; k++) {
    lval* v = lower_in(L, n, k);
    in[k] = -1;
    if (v) PTC_TRY(lower_as_buffer(L, v, n->name, &in[k]));
  }
  return add_extern(L, n, kind, in, n->n_in, out, NULL);
}

ptc_status lower_fallback(lower_ctx* L, const gnode* n, lval* out) {
  return node_call(L, n, out, IR_EXT_FALLBACK);
}

ptc_status lower_custom(lower_ctx* L, const gnode* n, lval* out) {
  return node_call(L, n, out, IR_EXT_CUSTOM);
}

/* ---- matrix products ------------------------------------------------------------------ */

/* True if b is a 1-D vector along the last dim of out (a GEMM bias). */
static bool is_row_bias(const lval* b, const lval* out) {
  return b && b->rank == 1 && out->rank >= 1 && b->shape[0] == out->shape[out->rank - 1] &&
         b->dtype == out->dtype;
}

/* MATMUL extern of a @ bm with an optional row bias and scales. */
static ptc_status matmul(lower_ctx* L, const gnode* n, lval* a, lval* bm, lval* bias,
                         double alpha, double beta, lval* out) {
  int32_t* in = lower_alloc(L, 4 * sizeof *in);
  if (!in) return ptc_status_oom();
  in[2] = -1;
  PTC_TRY(lower_as_buffer(L, a, n->name, &in[0]));
  PTC_TRY(lower_as_buffer(L, bm, n->name, &in[1]));
  if (bias) PTC_TRY(lower_as_buffer(L, bias, n->name, &in[2]));
  size_t idx;
  PTC_TRY(add_extern(L, n, IR_EXT_MATMUL, in, 3, out, &idx));
  ir_extern* e = &ir_node_at(L->p, idx)->ext;
  e->alpha = alpha;
  e->beta = bias ? beta : 0.0;
  out->ext_node = (int32_t)idx;
  return PTC_OK;
}

/* mm result plus beta * self, as a bias when self is a row vector, else as a
 * lazy pointwise add. */
static ptc_status matmul_plus(lower_ctx* L, const gnode* n, lval* a, lval* bm, lval* self,
                              double alpha, double beta, lval* out) {
  if (beta == 0.0) self = NULL;
  if (!self || is_row_bias(self, out)) return matmul(L, n, a, bm, self, alpha, beta, out);
  lval* mm = lower_alloc(L, sizeof *mm);
  if (!mm) return ptc_status_oom();
  *mm = *out;
  PTC_TRY(matmul(L, n, a, bm, NULL, alpha, 0.0, mm));
  mm->ext_node = -1;
  return lower_add_scaled(L, mm, self, beta, out);
}

static ptc_status lower_mm(lower_ctx* L, const gnode* n, lval* out) {
  return matmul(L, n, lower_in(L, n, 0), lower_in(L, n, 1), NULL, 1.0, 0.0, out);
}

static ptc_status lower_addmm(lower_ctx* L, const gnode* n, lval* out) {
  return matmul_plus(L, n, lower_in(L, n, 1), lower_in(L, n, 2), lower_in(L, n, 0),
                     lower_attr_float(n, "alpha", 1.0), lower_attr_float(n, "beta", 1.0), out);
}

/* linear: input @ weight^T (+ bias); the transpose is a strided view. */
static ptc_status lower_linear(lower_ctx* L, const gnode* n, lval* out) {
  lval* w = lower_in(L, n, 1);
  lval* wt = lower_alloc(L, sizeof *wt);
  lower_affine* a = lower_affine_new(L, w, 2);
  const sym_expr** sh = lower_exprs(L, 2);
  if (!wt || !a || !sh) return ptc_status_oom();
  sh[0] = w->shape[1];
  sh[1] = w->shape[0];
  a->coef[0 * 2 + 1] = lower_const(L, 1);
  a->coef[1 * 2 + 0] = lower_const(L, 1);
  PTC_TRY(lower_affine_apply(L, a, w->dtype, sh, wt));
  return matmul_plus(L, n, lower_in(L, n, 0), wt, lower_in(L, n, 2), 1.0, 1.0, out);
}

/* ---- convolution --------------------------------------------------------------------------- */

static ptc_status lower_conv(lower_ctx* L, const gnode* n, lval* out) {
  int32_t* in = lower_alloc(L, 4 * sizeof *in);
  if (!in) return ptc_status_oom();
  for (uint32_t k = 0; k < 3; k++) {
    lval* v = lower_in(L, n, k);
    in[k] = -1;
    if (v) PTC_TRY(lower_as_buffer(L, v, n->name, &in[k]));
  }
  size_t idx;
  PTC_TRY(add_extern(L, n, IR_EXT_CONV, in, 3, out, &idx));
  ir_node_at(L->p, idx)->ext.beta = in[2] >= 0 ? 1.0 : 0.0;
  out->ext_node = (int32_t)idx;
  return PTC_OK;
}

/* ---- epilogue folding ----------------------------------------------------------------------- */

/* The extern whose whole output is value v (used only once), or NULL. */
static ir_extern* sole_extern_output(lower_ctx* L, ptc_value v) {
  const lval* x = &L->vals[v];
  if (x->kind != LV_BUF || x->ext_node < 0 || L->users[v] != 1 || L->is_output[v]) return NULL;
  ir_extern* e = &ir_node_at(L->p, (size_t)x->ext_node)->ext;
  return e->activation == IR_ACT_NONE ? e : NULL;
}

static bool same_shape(const lval* a, const lval* b) {
  if (a->rank != b->rank) return false;
  for (uint32_t d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

/* add(mm, bias) or add(bias, mm) with bias a buffer row vector. */
static ptc_status fold_bias(lower_ctx* L, const gnode* n, lval* out, bool* done) {
  if (n->n_in != 2 || n->in[1] == PTC_VALUE_NONE) return PTC_OK;
  double alpha = lower_attr_float(n, "alpha", 1.0);
  for (uint32_t k = 0; k < 2; k++) {
    ptc_value mv = n->in[k];
    lval* bias = &L->vals[n->in[1 - k]];
    ir_extern* e = sole_extern_output(L, mv);
    if (!e || e->kind != IR_EXT_MATMUL || e->in[2] >= 0 || (k == 1 && alpha != 1.0)) continue;
    const lval* mm = &L->vals[mv];
    if (mm->dtype != out->dtype || !same_shape(mm, out) || !is_row_bias(bias, out)) continue;
    if (bias->kind != LV_BUF) continue; /* a new node would run after the extern */
    const ir_buffer* bb = ir_buf(L->p, bias->buf);
    if (bb->kind == IR_BUF_COMPUTED && (!lval_is_whole_buffer(L, bias) || bb->producer > mm->ext_node))
      continue;
    int32_t b;
    PTC_TRY(lower_as_buffer(L, bias, n->name, &b));
    e = sole_extern_output(L, mv); /* the node table may have moved */
    e->in[2] = b;
    e->beta = k == 0 ? alpha : 1.0;
    *out = *mm;
    *done = true;
    return PTC_OK;
  }
  return PTC_OK;
}

typedef struct act_row {
  const char* op;
  ir_activation act;
} act_row;

static const act_row act_rows[] = {
    {"relu", IR_ACT_RELU}, {"gelu", IR_ACT_GELU}, {"silu", IR_ACT_SILU},
    {"sigmoid", IR_ACT_SIGMOID}, {"tanh", IR_ACT_TANH},
};

static ptc_status fold_activation(lower_ctx* L, const gnode* n, ir_activation act, lval* out,
                                  bool* done) {
  if (n->n_in != 1) return PTC_OK;
  ir_extern* e = sole_extern_output(L, n->in[0]);
  const lval* x = &L->vals[n->in[0]];
  if (!e || (e->kind != IR_EXT_MATMUL && e->kind != IR_EXT_CONV) || x->dtype != out->dtype)
    return PTC_OK;
  if (act == IR_ACT_GELU && strcmp(lower_attr_str(n, "approximate", "none"), "tanh") == 0)
    act = IR_ACT_GELU_TANH;
  e->activation = act;
  *out = *x;
  *done = true;
  return PTC_OK;
}

ptc_status lower_try_epilogue(lower_ctx* L, const gnode* n, lval* out, bool* done) {
  *done = false;
  /* the no-fusion baseline keeps epilogues as separate kernels too */
  if (n->n_out != 1 || !L->o.inline_pointwise) return PTC_OK;
  if (strcmp(n->op->name, "add") == 0) return fold_bias(L, n, out, done);
  for (size_t i = 0; i < sizeof act_rows / sizeof act_rows[0]; i++)
    if (strcmp(n->op->name, act_rows[i].op) == 0)
      return fold_activation(L, n, act_rows[i].act, out, done);
  return PTC_OK;
}

const lower_entry lower_extern_table[] = {
    {"mm", lower_mm},         {"bmm", lower_mm},         {"matmul", lower_mm},
    {"addmm", lower_addmm},   {"baddbmm", lower_addmm},  {"linear", lower_linear},
    {"conv1d", lower_conv},   {"conv2d", lower_conv},
};
const size_t lower_extern_count = sizeof lower_extern_table / sizeof lower_extern_table[0];
