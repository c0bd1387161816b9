/* lower_extern.c - ops that become IR_EXTERN nodes: matrix products
 * (mm, bmm, matmul, linear, addmm, baddbmm -> IR_EXT_MATMUL with the
 * linear weight transposed through strides), convolutions (IR_EXT_CONV,
 * attributes read from graph node `graph_node`), the generic ref-kernel
 * fallback for every op without a lowering and host-registered ops
 * (IR_EXT_CUSTOM), both on inputs realized into buffers. GEMM operands and
 * attention's q/k/v/mask that are views of computed buffers are passed as
 * view buffers (IR_BUF_VIEW) where the extern takes the layout (no copy),
 * and an attention output whose users transpose heads and sequence back is
 * stored in that transposed order. And epilogue
 * folding: a 1-D bias `add` along the last dim and a following
 * relu/gelu/silu/sigmoid/tanh consuming a MATMUL (activation: also CONV)
 * output that has no other user are folded into the extern. */
#include "lower_internal.h"

#include <string.h>

enum { OUT_CONTIG = 0, OUT_SWAP = 1, OUT_NHWC = 2 };

/* Contiguous strides of shape (rank r) into st, or with OUT_SWAP (r >= 3)
 * those of the layout with dims r-3 and r-2 exchanged ([B, H, L, E] stored
 * as [B, L, H, E]), or with OUT_NHWC (r == 4) channels-last ones ([N, C,
 * H, W] stored as [N][H][W][C]). */
static bool out_strides(lower_ctx* L, uint32_t r, const sym_expr* const* shape, int swap,
                        const sym_expr** st) {
  if (swap == OUT_NHWC && r == 4) {
    const sym_expr *sh[4] = {shape[0], shape[2], shape[3], shape[1]}, *ps[4];
    if (!lower_contig(L, 4, sh, ps)) return false;
    st[0] = ps[0], st[2] = ps[1], st[3] = ps[2], st[1] = ps[3];
    return true;
  }
  if (swap != OUT_SWAP) return lower_contig(L, r, shape, st);
  const sym_expr *sh[PTC_MAX_RANK + 1], *ps[PTC_MAX_RANK + 1];
  for (uint32_t d = 0; d < r; d++) sh[d] = shape[d];
  sh[r - 3] = shape[r - 2];
  sh[r - 2] = shape[r - 3];
  if (!lower_contig(L, r, sh, ps)) return false;
  for (uint32_t d = 0; d < r; d++) st[d] = ps[d];
  st[r - 3] = ps[r - 2];
  st[r - 2] = ps[r - 3];
  return true;
}

/* Output buffers for the node's outputs (contiguous; with `swap`, output 0
 * laid out with its dims r-3 and r-2 exchanged); out[k] become views of
 * them. */
static ptc_status output_buffers(lower_ctx* L, const gnode* n, lval* out, int32_t* ids,
                                 int swap) {
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
    int lay = k > 0 ? OUT_CONTIG : swap == OUT_SWAP && b.rank >= 3 ? OUT_SWAP
              : swap == OUT_NHWC && b.rank == 4 ? OUT_NHWC : OUT_CONTIG;
    if (!st || !out_strides(L, b.rank, b.shape, lay, st) || !b.offset ||
        !b.numel)
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
static ptc_status add_extern_swap(lower_ctx* L, const gnode* n, int32_t kind, int32_t* in,
                                  uint32_t n_in, lval* out, size_t* index, int swap) {
  int32_t* ids = lower_alloc(L, (n->n_out + 1) * sizeof *ids);
  if (!ids) return ptc_status_oom();
  PTC_TRY(output_buffers(L, n, out, ids, swap));
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

static ptc_status add_extern(lower_ctx* L, const gnode* n, int32_t kind, int32_t* in,
                             uint32_t n_in, lval* out, size_t* index) {
  return add_extern_swap(L, n, kind, in, n_in, out, index, OUT_CONTIG);
}

/* ---- views of computed buffers as extern operands ------------------------------------- */

static bool is_static(lower_ctx* L, sym_rel rel, const sym_expr* a, const sym_expr* b) {
  return a && b && sym_static(L->env, rel, a, b) == 1;
}

/* Dim d of v has unit stride or size 1. */
static bool unit_dim(const lval* v, uint32_t d) {
  return lower_is(v->strides[d], 1) || lower_is(v->shape[d], 1);
}

/* A GEMM operand layout every backend's GEMM takes in place (cuBLASLt's
 * model, cuda_blaslt.c: a unit stride in one matrix dim and a leading
 * dimension covering the other, batch dims collapsing into one stride; an
 * offset of a multiple of 256 bytes, the alignment cuBLASLt's heuristics
 * assume), decided statically. */
static bool gemm_view_ok(lower_ctx* L, const lval* v) {
  int64_t off = -1;
  int64_t es = (int64_t)ptc_dtype_size(v->dtype);
  uint32_t r = v->rank;
  if (r < 1 || !sym_is_const(v->offset, &off) || off < 0 || (off * es) % 256 != 0) return false;
  const sym_expr* zero = lower_const(L, 0);
  for (uint32_t d = 0; d < r; d++)
    if (!is_static(L, SYM_GE, v->strides[d], zero)) return false;
  if (r == 1) return unit_dim(v, 0);
  uint32_t rm = r - 2, cm = r - 1;
  if (unit_dim(v, cm)) {
    if (!lower_is(v->shape[rm], 1) && !is_static(L, SYM_GE, v->strides[rm], v->shape[cm]))
      return false;
  } else if (unit_dim(v, rm)) {
    if (!lower_is(v->shape[cm], 1) && !is_static(L, SYM_GE, v->strides[cm], v->shape[rm]))
      return false;
  } else {
    return false;
  }
  const sym_expr* expect = NULL; /* stride * size of the inner batch dim seen last */
  for (uint32_t d = rm; d-- > 0;) {
    if (lower_is(v->shape[d], 1)) continue;
    if (expect && !is_static(L, SYM_EQ, v->strides[d], expect)) return false;
    expect = sym_mul(L->env, v->strides[d], v->shape[d]);
    if (!expect) return false;
  }
  return true;
}

/* The attention kernels (cuda_attn*.c) and the ref kernel take any strides
 * for q, k, v and the mask. */
static bool any_view_ok(lower_ctx* L, const lval* v) {
  (void)L;
  (void)v;
  return true;
}

static bool is_sdpa(const gnode* n) {
  return strcmp(n->op->name, "scaled_dot_product_attention") == 0;
}

/* True if node u (a user of a rank-r value) is transpose/permute exchanging
 * dims r-3 and r-2 and nothing else. */
static bool swaps_heads(const gnode* u, uint32_t r) {
  if (strcmp(u->op->name, "transpose") == 0) {
    uint32_t d0 = lower_norm_dim(lower_attr_int(u, "dim0", 0), r);
    uint32_t d1 = lower_norm_dim(lower_attr_int(u, "dim1", 0), r);
    return (d0 == r - 3 && d1 == r - 2) || (d0 == r - 2 && d1 == r - 3);
  }
  if (strcmp(u->op->name, "permute") != 0) return false;
  const gattr* dims = lower_attr(u, "dims");
  if (!dims || dims->count != r) return false;
  for (uint32_t i = 0; i < r; i++) {
    int64_t d = -1;
    if (!sym_is_const(dims->exprs[i], &d)) return false;
    uint32_t want = i == r - 3 ? r - 2 : i == r - 2 ? r - 3 : i;
    if (lower_norm_dim(d, r) != want) return false;
  }
  return true;
}

/* An attention output [..., H, L, Ev] (rank >= 4) that no graph output is
 * and whose every user swaps H and L back (the way models merge heads):
 * stored [..., L, H, Ev], so that the transposed value is contiguous. */
static bool attn_out_swapped(lower_ctx* L, const gnode* n) {
  if (!L->o.extern_views || !is_sdpa(n) || n->n_out != 1) return false;
  ptc_value v = n->out[0];
  uint32_t r = graph_value(L->g, v)->rank, seen = 0;
  if (r < 4 || L->is_output[v] || L->users[v] == 0) return false;
  for (size_t i = L->node_index + 1; i < L->g->nodes.len; i++) {
    const gnode* u = graph_node(L->g, i);
    bool uses = false;
    for (uint32_t k = 0; k < u->n_in; k++) uses = uses || u->in[k] == v;
    if (!uses) continue;
    if (u->n_in < 1 || u->in[0] != v || !swaps_heads(u, r)) return false;
    seen++;
  }
  return seen == L->users[v];
}

/* A max_pool2d whose input is a channels-last buffer (o.conv_nhwc: a
 * channels-last convolution's output) of static channels filling 16-byte
 * vectors: its output channels-last too (the CUDA backend's vector kernel;
 * the next convolution and the residual read it in that layout). */
static bool pool_nhwc(lower_ctx* L, const gnode* n, int32_t in0) {
  if (!L->o.conv_nhwc || strcmp(n->op->name, "max_pool2d") != 0 || n->n_out != 1 || in0 < 0)
    return false;
  const ir_buffer* b = ir_buf(L->p, in0);
  const gvalue* o = graph_value(L->g, n->out[0]);
  if (b->rank != 4 || o->rank != 4 || o->dtype != b->dtype ||
      (b->dtype != PTC_F32 && b->dtype != PTC_F16 && b->dtype != PTC_BF16))
    return false;
  int64_t sh[4], st[4];
  for (uint32_t d = 0; d < 4; d++)
    if (!sym_is_const(b->shape[d], &sh[d]) || !sym_is_const(b->strides[d], &st[d])) return false;
  if ((sh[1] * (int64_t)ptc_dtype_size(b->dtype)) % 16 != 0) return false;
  return st[1] == 1 && st[3] == sh[1] && st[2] == sh[1] * sh[3] && st[0] == sh[1] * sh[2] * sh[3];
}

/* The node run whole on realized inputs: its ref kernel, or a host op.
 * Attention reads views of computed buffers in place. */
static ptc_status node_call(lower_ctx* L, const gnode* n, lval* out, int32_t kind) {
  int32_t* in = lower_alloc(L, (n->n_in + 1) * sizeof *in);
  if (!in) return ptc_status_oom();
  bool attn = kind == IR_EXT_FALLBACK && is_sdpa(n);
  for (uint32_t k = 0; k < n->n_in; k++) {
    lval* v = lower_in(L, n, k);
    in[k] = -1;
    if (v) PTC_TRY(lower_as_view_buffer(L, v, attn ? any_view_ok : NULL, n->name, &in[k]));
  }
  int lay = attn && attn_out_swapped(L, n) ? OUT_SWAP
            : kind == IR_EXT_FALLBACK && n->n_in > 0 && pool_nhwc(L, n, in[0]) ? OUT_NHWC
                                                                              : OUT_CONTIG;
  return add_extern_swap(L, n, kind, in, n->n_in, out, NULL, lay);
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
  PTC_TRY(lower_as_view_buffer(L, a, gemm_view_ok, n->name, &in[0]));
  PTC_TRY(lower_as_view_buffer(L, bm, gemm_view_ok, n->name, &in[1]));
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

/* A static dim or -1. */
static int64_t static_dim(const sym_expr* e) {
  int64_t v = -1;
  return e && sym_is_const(e, &v) ? v : -1;
}

/* The plane bound of a convolution of dtype dt (o.conv_nhwc_plane_f32 for
 * float32, else o.conv_nhwc_plane). */
static int64_t nhwc_plane(const lower_ctx* L, int32_t dt) {
  return dt == PTC_F32 ? L->o.conv_nhwc_plane_f32 : L->o.conv_nhwc_plane;
}

/* Whether conv node n runs channels-last (o.conv_nhwc): conv2d of one
 * group, floating output [N, C, H, W] of more than nhwc_plane static
 * pixels a plane. */
static bool conv_nhwc(lower_ctx* L, const gnode* n) {
  if (!L->o.conv_nhwc || strcmp(n->op->name, "conv2d") != 0 || n->n_out != 1 || n->n_in < 2)
    return false;
  if (lower_attr_int(n, "groups", 1) != 1) return false;
  const gvalue* o = graph_value(L->g, n->out[0]);
  int32_t dt = o->dtype;
  if (o->rank != 4 || (dt != PTC_F32 && dt != PTC_F16 && dt != PTC_BF16)) return false;
  int64_t oh = static_dim(o->shape[2]), ow = static_dim(o->shape[3]);
  return oh > 0 && ow > 0 && oh * ow > nhwc_plane(L, dt);
}

/* Whether conv node n's stored input is stored channels-last although its
 * output is not (o.conv_nhwc): a conv2d of one group whose input plane is
 * larger than nhwc_plane (where the input's producers write
 * channels-last: the first small-plane convolutions after the large ones,
 * whose wide im2col reads a channels-last input in transposing tiles). */
static bool conv_nhwc_input(lower_ctx* L, const gnode* n, const lval* x) {
  if (!L->o.conv_nhwc || strcmp(n->op->name, "conv2d") != 0 || n->n_out != 1 || x->rank != 4 ||
      lower_attr_int(n, "groups", 1) != 1)
    return false;
  int64_t h = static_dim(x->shape[2]), w = static_dim(x->shape[3]);
  return h > 0 && w > 0 && h * w > nhwc_plane(L, x->dtype);
}

static ptc_status lower_conv(lower_ctx* L, const gnode* n, lval* out) {
  int32_t* in = lower_alloc(L, 4 * sizeof *in);
  if (!in) return ptc_status_oom();
  bool nhwc = conv_nhwc(L, n);
  for (uint32_t k = 0; k < 3; k++) {
    lval* v = lower_in(L, n, k);
    in[k] = -1;
    if (!v) continue;
    /* a stored input channels-last when its channels fill 16-byte vectors
     * (the kernels' cp.async loads along C) */
    int64_t ch = v->rank == 4 ? static_dim(v->shape[1]) : -1;
    if (k == 0 && (nhwc || conv_nhwc_input(L, n, v)) && ch > 0 &&
        (ch * (int64_t)ptc_dtype_size(v->dtype)) % 16 == 0)
      PTC_TRY(lower_as_buffer_nhwc(L, v, n->name, &in[k]));
    else
      PTC_TRY(lower_as_buffer(L, v, n->name, &in[k]));
  }
  size_t idx;
  PTC_TRY(add_extern_swap(L, n, IR_EXT_CONV, in, 3, out, &idx, nhwc ? OUT_NHWC : OUT_CONTIG));
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
