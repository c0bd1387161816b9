/* ir_interp_ext.c - extern nodes in the IR interpreter, run by the ref
 * backend's kernels: FALLBACK calls the kernel of its graph node; MATMUL
 * runs the ref matmul kernel on its two operand buffers and applies the
 * epilogue (alpha, beta * bias broadcast to the output, activation); CONV
 * runs the graph node's conv kernel (attributes from the node, bias in[2])
 * and applies the activation; CUSTOM (the host function) and FALLBACK with
 * an output that is not contiguous (sdpa's [B, L, H, Ev] layout: the ref
 * kernel on a staged output) go through lib/runtime (runtime_fallback_run). */
#include "ir_interp_internal.h"

#include <string.h>

#include "../../backends/ref/ref.h"
#include "../runtime/backend.h"

/* A ref_tensor view of buffer id with its layout. */
static ptc_status tensor_of(const interp* it, int32_t id, ref_tensor* t) {
  const ir_buffer* b = ir_buf(it->p, id);
  int64_t off;
  memset(t, 0, sizeof *t);
  if (b->rank > PTC_MAX_RANK) return PTC_ERR(INTERNAL, "ir_interpret: rank too large");
  PTC_TRY(interp_eval(it, b->offset, &off));
  t->data = (char*)it->bufs[id].data + off * (int64_t)ptc_dtype_size(b->dtype);
  t->dtype = b->dtype;
  t->rank = (int32_t)b->rank;
  for (uint32_t d = 0; d < b->rank; d++) {
    PTC_TRY(interp_eval(it, b->shape[d], &t->shape[d]));
    PTC_TRY(interp_eval(it, b->strides[d], &t->strides[d]));
  }
  return PTC_OK;
}

typedef struct ext_call {
  ref_tensor in_t[8];
  const ref_tensor* in[8];
  ref_tensor out[8];
} ext_call;

static ptc_status gather(const interp* it, const ir_extern* e, ext_call* c) {
  if (e->n_in > 8 || e->n_out > 8) return PTC_ERR(UNIMPLEMENTED, "ir_interpret: extern arity");
  for (uint32_t k = 0; k < e->n_in; k++) {
    c->in[k] = NULL;
    if (e->in[k] < 0) continue;
    PTC_TRY(tensor_of(it, e->in[k], &c->in_t[k]));
    c->in[k] = &c->in_t[k];
  }
  for (uint32_t k = 0; k < e->n_out; k++) PTC_TRY(tensor_of(it, e->out[k], &c->out[k]));
  return PTC_OK;
}

static ptc_status call_kernel(interp* it, const ir_extern* e, const char* op, ext_call* c,
                              uint32_t n_in) {
  const ptc_graph* g = it->p->graph;
  if (e->graph_node >= g->nodes.len) return PTC_ERR(INTERNAL, "ir_interpret: bad graph node");
  const gnode* n = graph_node(g, e->graph_node);
  ref_kernel_fn fn = ref_find_kernel(op ? op : n->op->name);
  if (!fn) return PTC_ERR(UNIMPLEMENTED, "ir_interpret: no ref kernel for %s", n->op->name);
  ref_call rc;
  memset(&rc, 0, sizeof rc);
  rc.ctx = it->p->ctx;
  rc.node = n;
  rc.attrs = &n->attrs;
  rc.n_in = n_in;
  rc.in = c->in;
  rc.n_out = e->n_out;
  rc.out = c->out;
  rc.seed = it->seed;
  rc.node_index = e->graph_node;
  rc.sym_values = it->vals;
  rc.n_sym_values = it->p->n_size_syms;
  rc.env = g->env;
  return fn(&rc);
}

/* out = act(alpha * out + beta * bias) elementwise (bias broadcast). */
static void epilogue(const ir_extern* e, const ext_call* c, bool scale, bool bias) {
  ref_tensor* out = (ref_tensor*)&c->out[0];
  ref_tensor b;
  bool use_bias = bias && c->in[2] && e->beta != 0.0;
  if (use_bias) ref_broadcast_to(c->in[2], out->rank, out->shape, &b);
  int64_t n = ref_numel(out), idx[PTC_MAX_RANK] = {0};
  for (int64_t k = 0; k < n; k++) {
    double v = ref_load_f(out, k);
    if (scale) v *= e->alpha;
    if (use_bias) v += e->beta * ref_load_f(&b, ref_offset(&b, idx));
    ref_store_f(out, k, interp_activation(e->activation, v));
    ref_next_index(out->rank, out->shape, idx);
  }
}

static void to_runtime(const ref_tensor* r, runtime_tensor* t) {
  memset(t, 0, sizeof *t);
  if (!r) return;
  t->data = r->data;
  t->dtype = r->dtype;
  t->rank = r->rank;
  memcpy(t->shape, r->shape, sizeof t->shape);
  memcpy(t->strides, r->strides, sizeof t->strides);
}

static ptc_status custom(interp* it, const ir_extern* e, const ext_call* c) {
  runtime_tensor in[8], out[8];
  for (uint32_t k = 0; k < e->n_in; k++) to_runtime(c->in[k], &in[k]);
  for (uint32_t k = 0; k < e->n_out; k++) to_runtime(&c->out[k], &out[k]);
  return runtime_fallback_run(it->p->ctx, it->p->graph, e->graph_node, in, e->n_in, out,
                              e->n_out, it->vals, it->p->n_size_syms, it->seed);
}

/* True if every output of c is laid out contiguously (what the ref kernels
 * write); other outputs go through runtime_fallback_run, which stages them. */
static bool outputs_contiguous(const ir_extern* e, const ext_call* c) {
  for (uint32_t k = 0; k < e->n_out; k++) {
    int64_t expect = 1;
    for (int32_t d = c->out[k].rank - 1; d >= 0; d--) {
      if (c->out[k].shape[d] != 1 && c->out[k].strides[d] != expect) return false;
      expect *= c->out[k].shape[d];
    }
  }
  return true;
}

/* The convolution into a non-contiguous output through lib/runtime (which
 * stages it); the graph node may have no bias input where the extern has
 * its (absent) bias slot. */
static ptc_status conv_staged(interp* it, const ir_extern* e, const ext_call* c) {
  runtime_tensor in[8], out[1];
  const ptc_graph* g = it->p->graph;
  if (e->graph_node >= g->nodes.len) return PTC_ERR(INTERNAL, "ir_interpret: bad graph node");
  uint32_t n_in = e->n_in, gn_in = graph_node(g, e->graph_node)->n_in;
  if (gn_in < n_in) n_in = gn_in;
  for (uint32_t k = 0; k < n_in; k++) to_runtime(c->in[k], &in[k]);
  to_runtime(&c->out[0], &out[0]);
  return runtime_fallback_run(it->p->ctx, g, e->graph_node, in, n_in, out, 1, it->vals,
                              it->p->n_size_syms, it->seed);
}

ptc_status interp_extern(interp* it, const ir_node* n) {
  const ir_extern* e = &n->ext;
  ext_call c;
  memset(&c, 0, sizeof c);
  PTC_TRY(gather(it, e, &c));
  switch (e->kind) {
    case IR_EXT_FALLBACK:
      return outputs_contiguous(e, &c) ? call_kernel(it, e, NULL, &c, e->n_in) : custom(it, e, &c);
    case IR_EXT_MATMUL:
      if (e->n_in < 2 || !c.in[0] || !c.in[1] || e->n_out != 1)
        return PTC_ERR(INTERNAL, "ir_interpret: malformed matmul extern");
      PTC_TRY(call_kernel(it, e, "matmul", &c, 2));
      epilogue(e, &c, true, e->n_in > 2);
      return PTC_OK;
    case IR_EXT_CONV:
      if (e->n_in < 2 || e->n_out != 1) return PTC_ERR(INTERNAL, "ir_interpret: malformed conv");
      if (outputs_contiguous(e, &c)) {
        PTC_TRY(call_kernel(it, e, NULL, &c, e->n_in));
      } else {
        /* a channels-last output (ir_lower_options.conv_nhwc): the kernel on
         * a staged output; the activation below runs over the dense storage */
        PTC_TRY(conv_staged(it, e, &c));
      }
      epilogue(e, &c, false, false);
      return PTC_OK;
    case IR_EXT_CUSTOM: return custom(it, e, &c);
    default: return PTC_ERR(INTERNAL, "ir_interpret: unknown extern kind %d", (int)e->kind);
  }
}
