/* ref_exec.c - the reference backend's executor: resolves a kernel per node
 * at prepare time, then per run evaluates shapes, allocates contiguous
 * outputs, calls kernels in graph order, frees buffers after their last use
 * and copies the graph outputs into the caller's tensors. */
#include "../../lib/runtime/backend.h"
#include "ref.h"

#include <stdlib.h>
#include <string.h>

typedef struct ref_state {
  ref_kernel_fn* kernels; /* per node */
  uint32_t* last_use;     /* per value: index of the last node reading it */
  bool* is_output;        /* per value */
} ref_state;

static const struct {
  const ref_kernel_entry* t;
  const size_t* n;
} tables[] = {
    {ref_kernels_elementwise, &ref_kernels_elementwise_count},
    {ref_kernels_reduce, &ref_kernels_reduce_count},
    {ref_kernels_nn, &ref_kernels_nn_count},
    {ref_kernels_shape, &ref_kernels_shape_count},
};

ref_kernel_fn ref_find_kernel(const char* op) {
  for (size_t f = 0; f < sizeof tables / sizeof tables[0]; f++)
    for (size_t i = 0; i < *tables[f].n; i++)
      if (strcmp(tables[f].t[i].op, op) == 0) return tables[f].t[i].fn;
  return NULL;
}

/* Host-registered ops (ptc_register_extern_op) run through the runtime's
 * libffi caller, like on every backend. */
static ptc_status ref_custom(ref_call* c) {
  runtime_tensor t[128];
  if (c->n_in + c->n_out > 128) return PTC_ERR(INTERNAL, "custom op: too many tensors");
  for (size_t k = 0; k < c->n_in + c->n_out; k++) {
    const ref_tensor* r = k < c->n_in ? c->in[k] : &c->out[k - c->n_in];
    memset(&t[k], 0, sizeof t[k]);
    if (!r) continue;
    t[k].data = r->data;
    t[k].dtype = r->dtype;
    t[k].rank = r->rank;
    memcpy(t[k].shape, r->shape, sizeof t[k].shape);
    memcpy(t[k].strides, r->strides, sizeof t[k].strides);
  }
  return runtime_custom_run(c->ctx, c->node, t, c->n_in, t + c->n_in, c->n_out);
}

static void ref_destroy(void* p) {
  ref_state* s = p;
  if (!s) return;
  free(s->kernels);
  free(s->last_use);
  free(s->is_output);
  free(s);
}

static ptc_status ref_prepare(ptc_context* ctx, const ptc_graph* g,
                              const ptc_compile_options* opts, void** out) {
  (void)ctx;
  (void)opts;
  ref_state* s = calloc(1, sizeof *s);
  if (!s) return ptc_status_oom();
  s->kernels = calloc(g->nodes.len + 1, sizeof *s->kernels);
  s->last_use = calloc(g->values.len + 1, sizeof *s->last_use);
  s->is_output = calloc(g->values.len + 1, sizeof *s->is_output);
  if (!s->kernels || !s->last_use || !s->is_output) {
    ref_destroy(s);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    s->kernels[i] = runtime_is_custom_op(n->op) ? ref_custom : ref_find_kernel(n->op->name);
    if (!s->kernels[i]) {
      ref_destroy(s);
      return PTC_ERR(UNIMPLEMENTED, "ref backend: no kernel for op '%s'", n->op->name);
    }
    for (uint32_t k = 0; k < n->n_in; k++)
      if (n->in[k] != PTC_VALUE_NONE) s->last_use[n->in[k]] = (uint32_t)i;
  }
  for (size_t i = 0; i < g->outputs.len; i++)
    s->is_output[PTC_VEC_AT(&g->outputs, ptc_value, i)] = true;
  *out = s;
  return PTC_OK;
}

static void wrap_external(const ptc_tensor* t, int32_t dtype, ref_tensor* r) {
  memset(r, 0, sizeof *r);
  r->data = t->data ? (char*)t->data + t->byte_offset : NULL;
  r->dtype = dtype;
  r->rank = t->ndim;
  for (int32_t d = 0; d < t->ndim; d++) r->shape[d] = t->shape[d];
  if (t->strides)
    for (int32_t d = 0; d < t->ndim; d++) r->strides[d] = t->strides[d];
  else
    ref_contiguous_strides(r->rank, r->shape, r->strides);
}

static void copy_out(const ref_tensor* src, ref_tensor* dst) {
  size_t es = ptc_dtype_size(src->dtype);
  if (ref_numel(src) == 0) return;
  int64_t idx[PTC_MAX_RANK] = {0};
  do {
    memcpy((char*)dst->data + ref_offset(dst, idx) * (int64_t)es,
           (const char*)src->data + ref_offset(src, idx) * (int64_t)es, es);
  } while (ref_next_index(src->rank, src->shape, idx));
}

typedef struct run_frame {
  ref_tensor* vals;
  bool* owned;
  size_t n;
  ptc_context* ctx;
} run_frame;

static void frame_free(run_frame* f) {
  for (size_t i = 0; i < f->n; i++)
    if (f->owned[i]) ref_tensor_free(f->ctx, &f->vals[i]);
  free(f->vals);
  free(f->owned);
}

static ptc_status run_node(const ptc_graph* g, const ref_state* st, run_frame* f, size_t i,
                           const int64_t* syms, size_t n_syms, uint64_t seed) {
  const gnode* n = graph_node(g, i);
  const ref_tensor* ins[64];
  const ref_tensor** in = n->n_in <= 64 ? ins : calloc(n->n_in, sizeof *in);
  ref_tensor outs[64];
  if (!in) return ptc_status_oom();
  if (n->n_out > 64) return PTC_ERR(INTERNAL, "%s: too many outputs", n->name);
  for (uint32_t k = 0; k < n->n_in; k++)
    in[k] = n->in[k] == PTC_VALUE_NONE ? NULL : &f->vals[n->in[k]];
  ptc_status s = PTC_OK;
  uint32_t made = 0;
  for (; made < n->n_out && !s; made++) {
    const gvalue* ov = graph_value(g, n->out[made]);
    int64_t shape[PTC_MAX_RANK];
    s = runtime_value_shape(g, n->out[made], syms, n_syms, shape);
    if (!s) s = ref_tensor_alloc(f->ctx, ov->dtype, (int32_t)ov->rank, shape, &outs[made]);
  }
  if (s) made--;
  if (!s) {
    ref_call c;
    memset(&c, 0, sizeof c);
    c.ctx = f->ctx;
    c.node = n;
    c.attrs = &n->attrs;
    c.n_in = n->n_in;
    c.in = in;
    c.n_out = n->n_out;
    c.out = outs;
    c.seed = seed;
    c.node_index = i;
    c.sym_values = syms;
    c.n_sym_values = n_syms;
    c.env = g->env;
    s = st->kernels[i](&c);
  }
  if (in != ins) free(in);
  if (s) {
    for (uint32_t k = 0; k < made; k++) ref_tensor_free(f->ctx, &outs[k]);
    return ptc_status_prefix(s, "node %s", n->name);
  }
  for (uint32_t k = 0; k < n->n_out; k++) {
    f->vals[n->out[k]] = outs[k];
    f->owned[n->out[k]] = true;
  }
  return PTC_OK;
}

static ptc_status ref_run(void* state, const ptc_graph* g, const ptc_tensor* inputs, size_t n_in,
                          const ptc_tensor* outputs, size_t n_out, const int64_t* syms,
                          size_t n_syms, uint64_t seed) {
  const ref_state* st = state;
  run_frame f;
  f.n = g->values.len;
  f.ctx = g->ctx;
  f.vals = calloc(f.n + 1, sizeof *f.vals);
  f.owned = calloc(f.n + 1, sizeof *f.owned);
  if (!f.vals || !f.owned) {
    free(f.vals);
    free(f.owned);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < n_in; i++) {
    ptc_value v = PTC_VEC_AT(&g->inputs, ptc_value, i);
    wrap_external(&inputs[i], graph_value(g, v)->dtype, &f.vals[v]);
  }
  for (size_t v = 0; v < f.n; v++) {
    const gvalue* gv = graph_value(g, (ptc_value)v);
    if (gv->kind != PTC_VALUE_CONSTANT) continue;
    ref_tensor* r = &f.vals[v];
    r->data = (void*)gv->data;
    r->dtype = gv->dtype;
    r->rank = (int32_t)gv->rank;
    for (uint32_t d = 0; d < gv->rank; d++) sym_is_const(gv->shape[d], &r->shape[d]);
    ref_contiguous_strides(r->rank, r->shape, r->strides);
  }
  ptc_status s = PTC_OK;
  for (size_t i = 0; i < g->nodes.len && !s; i++) {
    s = run_node(g, st, &f, i, syms, n_syms, seed);
    const gnode* n = graph_node(g, i);
    for (uint32_t k = 0; !s && k < n->n_in; k++) {
      ptc_value v = n->in[k];
      if (v != PTC_VALUE_NONE && st->last_use[v] == i && !st->is_output[v] && f.owned[v]) {
        ref_tensor_free(f.ctx, &f.vals[v]);
        f.owned[v] = false;
      }
    }
  }
  for (size_t i = 0; i < n_out && !s; i++) {
    ptc_value v = PTC_VEC_AT(&g->outputs, ptc_value, i);
    ref_tensor dst;
    wrap_external(&outputs[i], f.vals[v].dtype, &dst);
    copy_out(&f.vals[v], &dst);
  }
  frame_free(&f);
  return s;
}

static const char* ref_unavailable(void) { return NULL; }

static void ref_describe(const void* state, const ptc_graph* g, ptc_strbuf* sb) {
  (void)state;
  ptc_sb_printf(sb, "ref: interprets %zu nodes one by one (no fusion)\n", g->nodes.len);
}

static size_t ref_num_kernels(const void* state, const ptc_graph* g) {
  (void)state;
  return g->nodes.len;
}

const backend_vtable ptc_ref_backend = {
    .name = "ref",
    .unavailable_reason = ref_unavailable,
    .prepare = ref_prepare,
    .run = ref_run,
    .destroy = ref_destroy,
    .describe = ref_describe,
    .num_kernels = ref_num_kernels,
};
