/* fallback.c - runs one graph node on concrete memory with its reference
 * kernel (backends/ref): how compiled backends execute ops that have no
 * lowering (IR_EXT_FALLBACK). Host-registered custom ops are routed to
 * runtime_custom_run. Backends never include backends/ref themselves. */
#include "../../backends/ref/ref.h"
#include "backend.h"

#include <stdlib.h>
#include <string.h>

static void to_ref(const runtime_tensor* t, ref_tensor* r) {
  memset(r, 0, sizeof *r);
  r->data = t->data;
  r->dtype = t->dtype;
  r->rank = t->rank;
  memcpy(r->shape, t->shape, sizeof r->shape);
  memcpy(r->strides, t->strides, sizeof r->strides);
}

static int64_t ref_bytes(const ref_tensor* r) {
  return ref_numel(r) * (int64_t)ptc_dtype_size(r->dtype);
}

/* Output k: the caller's memory when contiguous (zeroed, as ref kernels
 * expect), else a contiguous temporary (*temp set). */
static ptc_status bind_output(ptc_context* ctx, const runtime_tensor* t, ref_tensor* r,
                              bool* temp) {
  *temp = !runtime_tensor_is_contiguous(t);
  if (*temp) return ref_tensor_alloc(ctx, t->dtype, t->rank, t->shape, r);
  to_ref(t, r);
  ref_contiguous_strides(r->rank, r->shape, r->strides);
  if (r->data) memset(r->data, 0, (size_t)ref_bytes(r));
  return PTC_OK;
}

static void copy_back(const ref_tensor* r, const runtime_tensor* t) {
  runtime_tensor src = *t;
  src.data = r->data;
  runtime_tensor_contiguous(&src);
  runtime_tensor_copy(&src, t);
}

typedef struct fb_frame {
  ref_tensor* in;
  const ref_tensor** inp;
  ref_tensor* out;
  bool* temp;
} fb_frame;

static ptc_status call_kernel(ptc_context* ctx, const ptc_graph* g, uint32_t node,
                              ref_kernel_fn fn, fb_frame* f, const int64_t* syms,
                              size_t n_syms, uint64_t seed) {
  const gnode* n = graph_node(g, node);
  ref_call c;
  memset(&c, 0, sizeof c);
  c.ctx = ctx;
  c.node = n;
  c.attrs = &n->attrs;
  c.n_in = n->n_in;
  c.in = f->inp;
  c.n_out = n->n_out;
  c.out = f->out;
  c.seed = seed;
  c.node_index = node;
  c.sym_values = syms;
  c.n_sym_values = n_syms;
  c.env = g->env;
  return fn(&c);
}

static ptc_status run_ref(ptc_context* ctx, const ptc_graph* g, uint32_t node, ref_kernel_fn fn,
                          const runtime_tensor* in, const runtime_tensor* out,
                          const int64_t* syms, size_t n_syms, uint64_t seed) {
  const gnode* n = graph_node(g, node);
  fb_frame f;
  f.in = calloc(n->n_in + 1, sizeof *f.in);
  f.inp = calloc(n->n_in + 1, sizeof *f.inp);
  f.out = calloc(n->n_out + 1, sizeof *f.out);
  f.temp = calloc(n->n_out + 1, sizeof *f.temp);
  ptc_status s = f.in && f.inp && f.out && f.temp ? PTC_OK : ptc_status_oom();
  for (uint32_t k = 0; !s && k < n->n_in; k++) {
    to_ref(&in[k], &f.in[k]);
    f.inp[k] = n->in[k] != PTC_VALUE_NONE ? &f.in[k] : NULL;
  }
  uint32_t bound = 0;
  for (; !s && bound < n->n_out; bound++) s = bind_output(ctx, &out[bound], &f.out[bound], &f.temp[bound]);
  if (s && bound) bound--; /* the failed one holds nothing */
  if (!s) s = call_kernel(ctx, g, node, fn, &f, syms, n_syms, seed);
  for (uint32_t k = 0; k < bound; k++) {
    if (!f.temp[k]) continue;
    if (!s) copy_back(&f.out[k], &out[k]);
    ref_tensor_free(ctx, &f.out[k]);
  }
  free(f.in);
  free(f.inp);
  free(f.out);
  free(f.temp);
  return s;
}

ptc_status runtime_fallback_run(ptc_context* ctx, const ptc_graph* g, uint32_t node,
                                const runtime_tensor* in, size_t n_in,
                                const runtime_tensor* out, size_t n_out,
                                const int64_t* sym_values, size_t n_syms, uint64_t seed) {
  if (node >= g->nodes.len) return PTC_ERR(INTERNAL, "fallback: node %u out of range", node);
  const gnode* n = graph_node(g, node);
  if (n_in != n->n_in || n_out != n->n_out)
    return PTC_ERR(INTERNAL, "node %s: fallback given %zu inputs and %zu outputs, expected %u and %u",
                   n->name, n_in, n_out, n->n_in, n->n_out);
  ptc_status s;
  if (runtime_is_custom_op(n->op)) {
    s = runtime_custom_run(ctx, n, in, n_in, out, n_out);
  } else {
    ref_kernel_fn fn = ref_find_kernel(n->op->name);
    if (!fn) return PTC_ERR(UNIMPLEMENTED, "node %s: no kernel for op '%s'", n->name, n->op->name);
    s = run_ref(ctx, g, node, fn, in, out, sym_values, n_syms, seed);
  }
  return ptc_status_prefix(s, "node %s", n->name);
}
