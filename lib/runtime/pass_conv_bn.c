/* pass_conv_bn.c - folds inference batch_norm into the preceding conv1d /
 * conv2d, as Inductor does when freezing: conv -> batch_norm(eval) -> relu
 * becomes one convolution with a bias (whose relu the lowering then folds
 * into the CONV extern, lib/ir/lower_extern.c).
 *
 *   s  = gamma * rsqrt(running_var + eps)        (gamma absent: 1)
 *   W' = W * s.reshape(OC, 1, ...)               (weight [OC, C/groups, *k])
 *   b' = (b - running_mean) * s + beta           (b absent: 0, beta absent: 0)
 *
 * Conditions: the batch_norm has training=false, its input is the only
 * use of the convolution's output (which is no graph output), that output
 * is batched ([N, C, *], channel dim 1), weight and bias have the output's
 * floating dtype, and the batch_norm's parameters exist before the
 * convolution in node order (graph inputs, constants or earlier nodes).
 *
 * The fold is emitted as ordinary nodes (to_dtype, add, rsqrt, mul,
 * reshape, sub/neg) just before the convolution. When every parameter is a
 * constant the same nodes are built in a small graph and evaluated now by
 * the "ref" backend (constant folding), so the convolution takes two new
 * constants. When they are graph inputs (torch.compile lifts parameters)
 * the fold costs small pointwise kernels over the weights on every run;
 * that case is folded only with PTC_FOLD_CONV_BN=1: on an H100 (resnet18
 * b32, torch.compile backend, parameters as inputs) it was slower than the
 * unfolded graph (f32 2.13 vs 2.08 ms, bf16 1.47 vs 1.37), while folding
 * constant parameters (ptc.from_fx) was faster (f32 1.91 vs 1.98 ms, bf16
 * 1.26 vs 1.32). The torch.compile backend therefore freezes the parameter
 * and buffer inputs of inference graphs into constants (guarded per call,
 * python/ptc/backend.py; PTC_FREEZE_PARAMS=0: not), so they fold here:
 * H100 resnet18 b32 through the backend f32 1.86 -> 1.76 ms, bf16 1.25 ->
 * 1.19 ms.
 *
 * Mixed precision: f16/bf16 convolutions compute s, W' and b' in f32 and
 * cast W' and b' back to the convolution's dtype. Numerics differ from the
 * unfolded graph by rounding (the scale is applied to the weights before
 * the convolution instead of to its output), as with Inductor's freezing;
 * for half dtypes W' carries one extra rounding to the storage dtype.
 *
 * The rewrite is a replay (lib/decomp/replay.h) of the whole graph; graphs
 * with nothing to fold are not replayed. */
#include "pass_conv_bn.h"

#include "../decomp/replay.h"

#include <stdlib.h>
#include <string.h>

/* ---- switch ------------------------------------------------------------------------- */

conv_bn_mode pass_conv_bn_mode(const char* backend, const ptc_compile_options* o) {
  if (backend && strcmp(backend, "ref") == 0) return CONV_BN_OFF;
  if (o && o->disable_fusion) return CONV_BN_OFF;
  const char* env = getenv("PTC_FOLD_CONV_BN");
  if (env && strcmp(env, "0") == 0) return CONV_BN_OFF;
  if (env && (strcmp(env, "1") == 0 || strcmp(env, "all") == 0)) return CONV_BN_ALL;
  return CONV_BN_CONSTANTS;
}

/* ---- matching ----------------------------------------------------------------------- */

/* Batch-norm inputs: 0 input, 1 weight (gamma), 2 bias (beta), 3 running_mean,
 * 4 running_var (ops_reduce.c). */
enum { BN_X, BN_GAMMA, BN_BETA, BN_MEAN, BN_VAR, BN_N_IN };

static uint32_t spatial_dims(const gnode* n) {
  if (strcmp(n->op->name, "conv1d") == 0) return 1;
  if (strcmp(n->op->name, "conv2d") == 0) return 2;
  return 0;
}

/* Value v exists before node `before` in replay order. */
static bool defined_before(const ptc_graph* g, ptc_value v, uint32_t before) {
  if (v == PTC_VALUE_NONE) return true;
  const gvalue* x = graph_value(g, v);
  return x->kind != PTC_VALUE_NODE || x->node < before;
}

/* The batch_norm node that conv node c may fold into, or -1. uses[v]: input
 * slots reading value v, graph outputs counted too. */
static bool is_constant(const ptc_graph* g, ptc_value v) {
  return v == PTC_VALUE_NONE || graph_value(g, v)->kind == PTC_VALUE_CONSTANT;
}

static int64_t fold_partner(const ptc_graph* g, uint32_t c, const uint32_t* uses,
                            const int64_t* user, conv_bn_mode mode) {
  const gnode* conv = graph_node(g, c);
  uint32_t nsp = spatial_dims(conv);
  if (!nsp || conv->n_out != 1 || conv->n_in < 2) return -1;
  ptc_value y = conv->out[0];
  if (uses[y] != 1 || user[y] < 0) return -1;
  const gnode* bn = graph_node(g, (size_t)user[y]);
  if (strcmp(bn->op->name, "batch_norm") != 0 || bn->n_in != BN_N_IN || bn->in[BN_X] != y)
    return -1;
  const gattr* tr = gattrs_find(&bn->attrs, "training");
  if (tr && tr->i) return -1;
  const gvalue* yv = graph_value(g, y);
  if (yv->rank != nsp + 2 || !ptc_dtype_is_float(yv->dtype)) return -1;
  for (uint32_t i = 1; i < conv->n_in && i < 3; i++)
    if (conv->in[i] != PTC_VALUE_NONE && graph_value(g, conv->in[i])->dtype != yv->dtype)
      return -1;
  if (graph_value(g, bn->out[0])->dtype != yv->dtype) return -1;
  for (uint32_t i = 1; i < conv->n_in && i < 3 && mode == CONV_BN_CONSTANTS; i++)
    if (!is_constant(g, conv->in[i])) return -1;
  for (uint32_t i = 1; i < BN_N_IN; i++) {
    if (mode == CONV_BN_CONSTANTS && !is_constant(g, bn->in[i])) return -1;
    if (!defined_before(g, bn->in[i], c)) return -1;
    if (bn->in[i] != PTC_VALUE_NONE && !ptc_dtype_is_float(graph_value(g, bn->in[i])->dtype)) return -1;
  }
  return bn->in[BN_MEAN] != PTC_VALUE_NONE && bn->in[BN_VAR] != PTC_VALUE_NONE
             ? (int64_t)user[y]
             : -1;
}

/* partner[c] = batch_norm node folded into conv node c, or -1; folded[b] =
 * true for those batch_norm nodes. Returns the number of pairs. */
static size_t find_pairs(const ptc_graph* g, conv_bn_mode mode, int64_t* partner, bool* folded,
                         bool* oom) {
  size_t nv = g->values.len, nn = g->nodes.len, count = 0;
  uint32_t* uses = calloc(nv + 1, sizeof *uses);
  int64_t* user = malloc((nv + 1) * sizeof *user);
  *oom = !uses || !user;
  for (size_t v = 0; !*oom && v < nv; v++) user[v] = -1;
  for (size_t i = 0; !*oom && i < nn; i++) {
    const gnode* n = graph_node(g, i);
    for (uint32_t k = 0; k < n->n_in; k++) {
      if (n->in[k] == PTC_VALUE_NONE) continue;
      uses[n->in[k]]++;
      user[n->in[k]] = (int64_t)i;
    }
  }
  for (size_t i = 0; !*oom && i < g->outputs.len; i++)
    uses[PTC_VEC_AT(&g->outputs, ptc_value, i)] += 2; /* never folded away */
  for (size_t i = 0; !*oom && i < nn; i++) {
    partner[i] = fold_partner(g, (uint32_t)i, uses, user, mode);
    if (partner[i] >= 0) {
      folded[partner[i]] = true;
      count++;
    }
  }
  free(uses);
  free(user);
  return *oom ? 0 : count;
}

/* ---- emitting the fold ------------------------------------------------------------------ */

/* The fold's operands, all values of one graph (weights of the conv and the
 * batch_norm's parameters; b, gamma, beta may be PTC_VALUE_NONE). */
typedef struct fold_args {
  ptc_value w, b, gamma, beta, mean, var;
  double eps;
  int32_t dtype; /* the convolution's */
} fold_args;

typedef struct emitter {
  ptc_graph* g;
  ptc_status err; /* sticky */
} emitter;

static ptc_value emit(emitter* e, const char* op, const ptc_value* in, size_t n,
                      const ptc_attr* a, size_t na) {
  if (e->err) return PTC_VALUE_NONE;
  ptc_value out = PTC_VALUE_NONE;
  e->err = ptc_graph_add_node(e->g, op, in, n, a, na, &out, 1, NULL);
  return e->err ? PTC_VALUE_NONE : out;
}

static ptc_value emit2(emitter* e, const char* op, ptc_value x, ptc_value y) {
  ptc_value in[2] = {x, y};
  return emit(e, op, in, 2, NULL, 0);
}

static ptc_value cast(emitter* e, ptc_value x, int32_t dtype) {
  if (e->err || graph_value(e->g, x)->dtype == dtype) return e->err ? PTC_VALUE_NONE : x;
  ptc_attr a = ptc_attr_dtype("dtype", dtype);
  return emit(e, "to_dtype", &x, 1, &a, 1);
}

/* s as [OC, 1, ...] with the weight's rank (static shapes: checked). */
static ptc_value channel_view(emitter* e, ptc_value s, ptc_value w) {
  if (e->err) return PTC_VALUE_NONE;
  const gvalue* wv = graph_value(e->g, w);
  int64_t shape[PTC_MAX_RANK] = {0};
  for (uint32_t d = 0; d < wv->rank; d++) shape[d] = 1;
  if (!sym_is_const(wv->shape[0], &shape[0])) {
    e->err = PTC_ERR(INTERNAL, "conv-bn fold: symbolic output channel count");
    return PTC_VALUE_NONE;
  }
  ptc_attr a = ptc_attr_ints("shape", shape, wv->rank);
  return emit(e, "reshape", &s, 1, &a, 1);
}

/* Emits W' and b' into e->g. */
static void emit_fold(emitter* e, const fold_args* f, ptc_value* w_out, ptc_value* b_out) {
  int32_t cd = f->dtype == PTC_F16 || f->dtype == PTC_BF16 ? PTC_F32 : f->dtype;
  ptc_attr eps = ptc_attr_float("other", f->eps);
  ptc_value var = cast(e, f->var, cd);
  ptc_value s = emit(e, "rsqrt", (ptc_value[]){emit(e, "add", &var, 1, &eps, 1)}, 1, NULL, 0);
  if (f->gamma != PTC_VALUE_NONE) s = emit2(e, "mul", cast(e, f->gamma, cd), s);
  ptc_value w = emit2(e, "mul", cast(e, f->w, cd), channel_view(e, s, f->w));
  ptc_value mean = cast(e, f->mean, cd);
  ptc_value shift = f->b != PTC_VALUE_NONE ? emit2(e, "sub", cast(e, f->b, cd), mean)
                                           : emit(e, "neg", &mean, 1, NULL, 0);
  ptc_value b = emit2(e, "mul", shift, s);
  if (f->beta != PTC_VALUE_NONE) b = emit2(e, "add", b, cast(e, f->beta, cd));
  *w_out = cast(e, w, f->dtype);
  *b_out = cast(e, b, f->dtype);
}

/* ---- constant parameters: evaluated now -------------------------------------------------- */

static bool all_constant(const ptc_graph* g, const fold_args* f) {
  const ptc_value vs[] = {f->w, f->b, f->gamma, f->beta, f->mean, f->var};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++)
    if (vs[i] != PTC_VALUE_NONE && graph_value(g, vs[i])->kind != PTC_VALUE_CONSTANT)
      return false;
  return true;
}

/* Borrowed copy of constant v of `src` in `small` (NONE stays NONE). */
static ptc_status borrow(const ptc_graph* src, ptc_value v, ptc_graph* small, ptc_value* out) {
  *out = PTC_VALUE_NONE;
  if (v == PTC_VALUE_NONE) return PTC_OK;
  const gvalue* c = graph_value(src, v);
  int64_t dims[PTC_MAX_RANK + 1];
  for (uint32_t d = 0; d < c->rank; d++) sym_is_const(c->shape[d], &dims[d]); /* constants */
  return ptc_graph_add_constant(small, c->name, c->dtype, dims, c->rank, c->data,
                                PTC_CONSTANT_BORROW, out);
}

/* Result i of `res` as a new owned constant of dst named base + suffix. */
static ptc_status keep_result(const ptc_results* res, size_t i, int32_t dtype, ptc_graph* dst,
                              const char* base, const char* suffix, ptc_value* out) {
  const ptc_tensor* t = ptc_results_get(res, i);
  if (!t || t->strides || t->byte_offset || ptc_dtype_from_dl(t->dtype) != dtype)
    return PTC_ERR(INTERNAL, "conv-bn fold: unexpected layout of folded constant %zu", i);
  int64_t numel = 1;
  for (int32_t d = 0; d < t->ndim; d++) numel *= t->shape[d];
  char name[256];
  snprintf(name, sizeof name, "%s%s", base, suffix);
  return ptc_graph_add_constant(dst, name, dtype, t->shape, (size_t)t->ndim,
                                numel ? t->data : NULL, PTC_CONSTANT_COPY, out);
}

/* W' and b' of constant parameters f (values of src) as constants of dst. */
static ptc_status fold_now(const ptc_graph* src, const fold_args* f, ptc_graph* dst,
                           const char* conv_name, ptc_value* w_out, ptc_value* b_out) {
  ptc_graph* small = NULL;
  ptc_executable* exe = NULL;
  ptc_results* res = NULL;
  ptc_compile_options co;
  ptc_compile_options_init(&co);
  co.backend = "ref";
  fold_args sf = *f;
  ptc_status s = ptc_graph_create(src->ctx, &small);
  if (!s) s = borrow(src, f->w, small, &sf.w);
  if (!s) s = borrow(src, f->b, small, &sf.b);
  if (!s) s = borrow(src, f->gamma, small, &sf.gamma);
  if (!s) s = borrow(src, f->beta, small, &sf.beta);
  if (!s) s = borrow(src, f->mean, small, &sf.mean);
  if (!s) s = borrow(src, f->var, small, &sf.var);
  if (!s) {
    emitter e = {small, PTC_OK};
    ptc_value w, b;
    emit_fold(&e, &sf, &w, &b);
    s = e.err;
    if (!s) s = ptc_graph_add_output(small, w);
    if (!s) s = ptc_graph_add_output(small, b);
  }
  if (!s) s = ptc_compile(src->ctx, small, &co, &exe);
  if (!s) s = ptc_executable_run_alloc(exe, NULL, 0, NULL, &res);
  if (!s) s = keep_result(res, 0, f->dtype, dst, conv_name, ".bn_weight", w_out);
  if (!s) s = keep_result(res, 1, f->dtype, dst, conv_name, ".bn_bias", b_out);
  ptc_results_destroy(res);
  ptc_executable_release(exe);
  ptc_graph_destroy(small);
  return s;
}

/* ---- the replay ------------------------------------------------------------------------- */

typedef struct owned_pair {
  ptc_value src, dst;
} owned_pair;

typedef struct cb_state {
  const int64_t* partner; /* per source node */
  const bool* folded;     /* per source node: a batch_norm folded away */
  ptc_arena scratch;
  owned_pair* owned; /* owned constants of the source and their replayed ids */
  size_t n_owned;
  bool recorded;
} cb_state;

/* Source constants with owned data and their (borrowing) replayed ids;
 * the data moves to the new graph once the replay has succeeded. */
static ptc_status record_owned(cb_state* st, replay* r) {
  const ptc_graph* g = replay_src(r);
  st->recorded = true;
  st->owned = malloc((g->values.len + 1) * sizeof *st->owned);
  if (!st->owned) return ptc_status_oom();
  for (size_t v = 0; v < g->values.len; v++) {
    const gvalue* x = graph_value(g, (ptc_value)v);
    if (x->kind == PTC_VALUE_CONSTANT && x->owned)
      st->owned[st->n_owned++] = (owned_pair){(ptc_value)v, replay_map(r, (ptc_value)v)};
  }
  return PTC_OK;
}

static void move_owned(const cb_state* st, ptc_graph* src, ptc_graph* dst) {
  for (size_t i = 0; i < st->n_owned; i++) {
    gvalue* s = graph_value(src, st->owned[i].src);
    gvalue* d = graph_value(dst, st->owned[i].dst);
    if (d->owned || d->data != s->owned) continue; /* not borrowing it */
    d->owned = s->owned;
    s->owned = NULL;
  }
}

/* Emits the folded convolution for source conv node c and batch_norm bn. */
static ptc_status fold_pair(cb_state* st, replay* r, const gnode* conv, const gnode* bn) {
  const ptc_graph* src = replay_src(r);
  ptc_graph* dst = replay_dst(r);
  const gattr* eps = gattrs_find(&bn->attrs, "eps");
  fold_args f = {conv->in[1],       conv->n_in > 2 ? conv->in[2] : PTC_VALUE_NONE,
                 bn->in[BN_GAMMA], bn->in[BN_BETA],
                 bn->in[BN_MEAN],  bn->in[BN_VAR],
                 eps ? (eps->type == PTC_ATTR_FLOAT ? eps->f : (double)eps->i) : 1e-5,
                 graph_value(src, conv->out[0])->dtype};
  ptc_value w, b;
  if (all_constant(src, &f)) {
    PTC_TRY(fold_now(src, &f, dst, conv->name, &w, &b));
  } else {
    fold_args d = f;
    d.w = replay_map(r, f.w);
    d.b = replay_map(r, f.b);
    d.gamma = replay_map(r, f.gamma);
    d.beta = replay_map(r, f.beta);
    d.mean = replay_map(r, f.mean);
    d.var = replay_map(r, f.var);
    emitter e = {dst, PTC_OK};
    emit_fold(&e, &d, &w, &b);
    PTC_TRY(e.err);
  }
  ptc_attr* at = ptc_arena_alloc(&st->scratch, (conv->attrs.n + 1) * sizeof *at);
  if (!at) return ptc_status_oom();
  PTC_TRY(replay_attrs(dst, &conv->attrs, &st->scratch, at));
  ptc_value in[3] = {replay_map(r, conv->in[0]), w, b}, out = PTC_VALUE_NONE;
  PTC_TRY(ptc_graph_add_node(dst, conv->op->name, in, 3, at, conv->attrs.n, &out, 1, NULL));
  replay_set(r, conv->out[0], out);
  return PTC_OK;
}

static ptc_status rewrite(void* user, replay* r, uint32_t node, bool* handled) {
  cb_state* st = user;
  if (!st->recorded) PTC_TRY(record_owned(st, r));
  const ptc_graph* src = replay_src(r);
  const gnode* n = graph_node(src, node);
  if (st->folded[node]) { /* its conv already computes the normalised output */
    replay_set(r, n->out[0], replay_map(r, n->in[BN_X]));
    *handled = true;
    return PTC_OK;
  }
  if (st->partner[node] < 0) return PTC_OK;
  *handled = true;
  return fold_pair(st, r, n, graph_node(src, (size_t)st->partner[node]));
}

static ptc_status replay_folded(ptc_graph* g, const int64_t* partner, const bool* folded,
                                ptc_graph** out) {
  cb_state st;
  memset(&st, 0, sizeof st);
  st.partner = partner;
  st.folded = folded;
  ptc_arena_init(&st.scratch, 0);
  replay_hooks h;
  memset(&h, 0, sizeof h);
  h.user = &st;
  h.rewrite = rewrite;
  h.borrow_constants = true;
  ptc_status s = replay_run(g, &h, out);
  if (!s) move_owned(&st, g, *out);
  free(st.owned);
  ptc_arena_free(&st.scratch);
  return s;
}

ptc_status pass_conv_bn(ptc_graph** gp, conv_bn_mode mode, size_t* folded_count) {
  if (folded_count) *folded_count = 0;
  if (!gp || !*gp) return PTC_ERR(INVALID_ARGUMENT, "conv-bn fold: NULL graph");
  ptc_graph* g = *gp;
  if (mode == CONV_BN_OFF || sym_num_vars(g->env) != 0 || g->nodes.len == 0) return PTC_OK;
  int64_t* partner = malloc(g->nodes.len * sizeof *partner);
  bool* folded = calloc(g->nodes.len, sizeof *folded);
  bool oom = !partner || !folded;
  size_t count = oom ? 0 : find_pairs(g, mode, partner, folded, &oom);
  ptc_status s = oom ? ptc_status_oom() : PTC_OK;
  ptc_graph* ng = NULL;
  if (!s && count) s = replay_folded(g, partner, folded, &ng);
  free(partner);
  free(folded);
  if (s) return ptc_status_prefix(s, "conv-bn fold"); /* replay_run freed its graph */
  if (ng) {
    /* drops the unfolded weights; on failure ng stays valid, only larger */
    ptc_status_destroy(ptc_graph_eliminate_dead_code(ng, NULL));
    ptc_graph_destroy(g);
    *gp = ng;
  }
  if (folded_count) *folded_count = count;
  return PTC_OK;
}
