/* cpu_plan_run.c - executes a CPU run plan once: evaluates every buffer's
 * layout with the run's size symbols, binds memory (caller inputs, or a
 * copy in the compiled layout when the caller's strides differ; graph
 * constants; caller outputs written in place when their layout matches;
 * one workspace allocation for all slots, kept by the plan for the next
 * run; temporaries otherwise), calls the kernels and externs in order,
 * checks each kernel's error word, copies the outputs that were not written
 * in place, and frees the run's memory.
 * All run state lives in a frame on the heap: concurrent runs share nothing
 * mutable. Input and constant buffers (and their aliases: views of the
 * same storage with their own layout) point into the caller's memory or
 * the constant's data. */
#include "cpu_plan_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define WS_ALIGN CPU_WS_ALIGN

typedef struct buf_rt {
  runtime_tensor view;   /* data = storage element `offset` (set once bound) */
  int64_t offset;        /* elements */
  int64_t numel;         /* storage elements */
  char* base;            /* storage element 0 */
  size_t temp_bytes;     /* > 0: base is this run's allocation */
  int32_t direct_output; /* >= 0: the graph output written in place */
} buf_rt;

typedef struct run_frame {
  const cpu_plan* plan;
  ptc_context* ctx;
  buf_rt* b;
  char** in_base;        /* per graph input: its storage this run */
  size_t* in_bytes;      /* > 0: in_base is a copy of this size */
  char* ws;
  size_t ws_bytes;
  const int64_t* syms;
  size_t n_syms;
  uint64_t seed;
} run_frame;

static size_t esize(const ir_buffer* b) { return ptc_dtype_size(b->dtype); }

/* ---- layouts ---------------------------------------------------------------- */

/* Storage extent of a view: offset + sum (shape-1)*stride + 1 (0 if empty). */
static int64_t extent_of(const buf_rt* r) {
  int64_t e = r->offset + 1;
  for (int32_t d = 0; d < r->view.rank; d++) {
    if (r->view.shape[d] == 0) return 0;
    e += (r->view.shape[d] - 1) * (r->view.strides[d] < 0 ? 0 : r->view.strides[d]);
  }
  return e;
}

static ptc_status eval_layout(const run_frame* f, const ir_buffer* b, buf_rt* r) {
  r->view.dtype = b->dtype;
  r->view.rank = (int32_t)b->rank;
  r->direct_output = -1;
  for (uint32_t d = 0; d < b->rank; d++) {
    PTC_TRY(sym_eval(b->shape[d], f->syms, f->n_syms, &r->view.shape[d]));
    PTC_TRY(sym_eval(b->strides[d], f->syms, f->n_syms, &r->view.strides[d]));
  }
  r->offset = 0;
  if (b->offset) PTC_TRY(sym_eval(b->offset, f->syms, f->n_syms, &r->offset));
  int64_t ext = extent_of(r);
  r->numel = ext;
  if (b->numel) PTC_TRY(sym_eval(b->numel, f->syms, f->n_syms, &r->numel));
  if (r->numel < ext) r->numel = ext;
  return PTC_OK;
}

static ptc_status eval_layouts(run_frame* f) {
  const cpu_plan* plan = f->plan;
  for (size_t i = 0; i < plan->n_bufs; i++) {
    if (plan->s->buf_home[i] == SCHED_HOME_LOCAL) continue;
    ptc_status s = eval_layout(f, ir_buf(plan->p, (int32_t)i), &f->b[i]);
    if (s) return ptc_status_prefix(s, "cpu backend: buffer %s", ir_buf(plan->p, (int32_t)i)->name);
  }
  return PTC_OK;
}

/* ---- memory ------------------------------------------------------------------ */

static void set_base(buf_rt* r, char* base, size_t es) {
  r->base = base;
  r->view.data = base ? base + r->offset * (int64_t)es : NULL;
}

static ptc_status alloc_temp(run_frame* f, size_t id) {
  buf_rt* r = &f->b[id];
  int64_t bytes;
  if (!ptc_mul_ok(r->numel, (int64_t)esize(ir_buf(f->plan->p, (int32_t)id)), &bytes))
    return PTC_ERR(RESOURCE_EXHAUSTED, "cpu backend: buffer too large");
  r->temp_bytes = (size_t)bytes + WS_ALIGN;
  char* p = ptc_alloc_ctx(f->ctx, r->temp_bytes, WS_ALIGN);
  if (!p) {
    r->temp_bytes = 0;
    return PTC_ERR(RESOURCE_EXHAUSTED, "cpu backend: out of memory (%lld bytes)", (long long)bytes);
  }
  set_base(r, p, esize(ir_buf(f->plan->p, (int32_t)id)));
  return PTC_OK;
}

/* True when memory with `strides` (NULL = contiguous) can serve as r's
 * storage as is: offset 0 and equal strides on every dim of size > 1. */
static bool layout_matches(const buf_rt* r, const int64_t* strides) {
  if (r->offset != 0) return false;
  runtime_tensor c = r->view;
  if (!strides) runtime_tensor_contiguous(&c);
  for (int32_t d = 0; d < r->view.rank; d++) {
    int64_t s = strides ? strides[d] : c.strides[d];
    if (r->view.shape[d] > 1 && s != r->view.strides[d]) return false;
  }
  return true;
}

/* The storage of graph input i: the caller's memory when its strides are
 * the graph input's (the layout every INPUT buffer of i - the input itself
 * and its aliases, e.g. a transposed weight - was compiled against), else a
 * copy in that layout. */
static ptc_status bind_input_storage(run_frame* f, size_t i, const ptc_tensor* t) {
  const ptc_graph* g = f->plan->p->graph;
  const gvalue* gv = graph_value(g, PTC_VEC_AT(&g->inputs, ptc_value, i));
  buf_rt layout;
  memset(&layout, 0, sizeof layout);
  layout.view.dtype = gv->dtype;
  layout.view.rank = (int32_t)gv->rank;
  for (uint32_t d = 0; d < gv->rank; d++) {
    PTC_TRY(sym_eval(gv->shape[d], f->syms, f->n_syms, &layout.view.shape[d]));
    PTC_TRY(sym_eval(gv->strides[d], f->syms, f->n_syms, &layout.view.strides[d]));
  }
  char* data = t->data ? (char*)t->data + t->byte_offset : NULL;
  if (layout_matches(&layout, t->strides)) {
    f->in_base[i] = data;
    return PTC_OK;
  }
  size_t es = ptc_dtype_size(gv->dtype);
  int64_t bytes;
  if (!ptc_mul_ok(extent_of(&layout), (int64_t)es, &bytes))
    return PTC_ERR(RESOURCE_EXHAUSTED, "cpu backend: input %zu too large", i);
  f->in_bytes[i] = (size_t)bytes + WS_ALIGN;
  f->in_base[i] = ptc_alloc_ctx(f->ctx, f->in_bytes[i], WS_ALIGN);
  if (!f->in_base[i]) {
    f->in_bytes[i] = 0;
    return PTC_ERR(RESOURCE_EXHAUSTED, "cpu backend: out of memory copying input %zu", i);
  }
  runtime_tensor src = layout.view;
  src.data = data;
  if (t->strides)
    memcpy(src.strides, t->strides, (size_t)src.rank * sizeof *t->strides);
  else
    runtime_tensor_contiguous(&src);
  layout.view.data = f->in_base[i];
  runtime_tensor_copy(&src, &layout.view);
  return PTC_OK;
}

/* Inputs and constants: every such buffer (aliases included) views the
 * storage of its graph input or the constant's data. */
static ptc_status bind_inputs(run_frame* f, const ptc_tensor* in, size_t n_in) {
  const ir_program* p = f->plan->p;
  if (n_in != p->graph->inputs.len)
    return PTC_ERR(INVALID_ARGUMENT, "cpu backend: expected %zu inputs, got %zu",
                   p->graph->inputs.len, n_in);
  for (size_t i = 0; i < n_in; i++) PTC_TRY(bind_input_storage(f, i, &in[i]));
  for (size_t i = 0; i < p->buffers.len; i++) {
    const ir_buffer* b = ir_buf(p, (int32_t)i);
    if (b->kind == IR_BUF_INPUT) {
      if (b->graph_input < 0 || (size_t)b->graph_input >= n_in)
        return PTC_ERR(INTERNAL, "cpu backend: buffer %s reads input %d of %zu", b->name,
                       (int)b->graph_input, n_in);
      set_base(&f->b[i], f->in_base[b->graph_input], esize(b));
    } else if (b->kind == IR_BUF_CONSTANT) {
      set_base(&f->b[i], (char*)graph_value(p->graph, b->graph_value)->data, esize(b));
    }
  }
  return PTC_OK;
}

/* Caller outputs whose layout is the buffer's contiguous layout are
 * written in place (first such output of a buffer). */
static void bind_outputs_in_place(run_frame* f, const ptc_tensor* out, size_t n_out) {
  const cpu_plan* plan = f->plan;
  for (size_t j = 0; j < n_out && j < plan->p->n_outputs; j++) {
    int32_t id = plan->p->output_bufs[j];
    buf_rt* r = &f->b[id];
    if (plan->s->buf_home[id] != SCHED_HOME_OUTPUT || r->direct_output >= 0) continue;
    runtime_tensor contiguous = r->view;
    runtime_tensor_contiguous(&contiguous);
    bool packed = layout_matches(r, contiguous.strides) && r->numel == cpu_view_numel(&r->view);
    if (!packed || !layout_matches(r, out[j].strides)) continue;
    set_base(r, out[j].data ? (char*)out[j].data + out[j].byte_offset : NULL,
             esize(ir_buf(plan->p, id)));
    r->direct_output = (int32_t)j;
  }
}

static ptc_status bind_workspace(run_frame* f) {
  const sched_plan* s = f->plan->s;
  size_t* off = calloc(s->n_slots + 1, sizeof *off);
  if (!off) return ptc_status_oom();
  size_t total = 0;
  ptc_status st = sched_slot_offsets(s, f->syms, f->n_syms, WS_ALIGN, off, &total);
  plan_ws* kept = total ? atomic_exchange(&f->plan->ws_cache->kept, NULL) : NULL;
  if (kept && kept->bytes >= total) {
    f->ws = kept->base;
    f->ws_bytes = kept->bytes;
    free(kept);
  } else if (kept) {
    ptc_free_ctx(f->ctx, kept->base, kept->bytes, WS_ALIGN);
    free(kept);
  }
  if (!st && total && !f->ws) {
    f->ws = ptc_alloc_ctx(f->ctx, total, WS_ALIGN);
    f->ws_bytes = total;
    if (!f->ws) {
      f->ws_bytes = 0;
      st = PTC_ERR(RESOURCE_EXHAUSTED, "cpu backend: out of memory for the workspace (%zu bytes)",
                   total);
    }
  }
  for (size_t i = 0; !st && i < f->plan->n_bufs; i++)
    if (s->buf_home[i] == SCHED_HOME_SLOT)
      set_base(&f->b[i], f->ws + off[s->buf_slot[i]], esize(ir_buf(f->plan->p, (int32_t)i)));
  free(off);
  return st;
}

/* Computed buffers still without memory (outputs not written in place). */
static ptc_status bind_rest(run_frame* f) {
  const cpu_plan* plan = f->plan;
  for (size_t i = 0; i < plan->n_bufs; i++) {
    if (plan->s->buf_home[i] == SCHED_HOME_LOCAL || f->b[i].base) continue;
    if (ir_buf(plan->p, (int32_t)i)->kind != IR_BUF_COMPUTED || f->b[i].numel == 0) continue;
    PTC_TRY(alloc_temp(f, i));
  }
  return PTC_OK;
}

/* Gives the run's workspace to the plan for the next run (the larger one
 * stays when another run gave one back meanwhile). */
static void keep_workspace(run_frame* f) {
  plan_ws* mine = malloc(sizeof *mine);
  if (!mine) {
    ptc_free_ctx(f->ctx, f->ws, f->ws_bytes, WS_ALIGN);
    return;
  }
  *mine = (plan_ws){f->ws, f->ws_bytes};
  plan_ws* other = atomic_exchange(&f->plan->ws_cache->kept, mine);
  if (!other) return;
  if (other->bytes > mine->bytes) {
    plan_ws* back = atomic_exchange(&f->plan->ws_cache->kept, other);
    other = back; /* mine, or a third run's */
  }
  if (other) {
    ptc_free_ctx(f->ctx, other->base, other->bytes, WS_ALIGN);
    free(other);
  }
}

static void frame_free(run_frame* f) {
  for (size_t i = 0; f->b && i < f->plan->n_bufs; i++)
    if (f->b[i].temp_bytes) ptc_free_ctx(f->ctx, f->b[i].base, f->b[i].temp_bytes, WS_ALIGN);
  for (size_t i = 0; f->in_bytes && i < f->plan->p->graph->inputs.len; i++)
    if (f->in_bytes[i]) ptc_free_ctx(f->ctx, f->in_base[i], f->in_bytes[i], WS_ALIGN);
  free(f->in_base);
  free(f->in_bytes);
  if (f->ws) keep_workspace(f);
  free(f->b);
}

/* ---- steps ---------------------------------------------------------------------- */

static ptc_status kernel_error(const run_frame* f, const plan_step* st, const cpu_kernel_ctx* k) {
  const ir_program* p = f->plan->p;
  const char* origin = st->name;
  if (k->error_node >= 0 && (size_t)k->error_node < p->nodes.len &&
      ir_node_at(p, (size_t)k->error_node)->origin)
    origin = ir_node_at(p, (size_t)k->error_node)->origin;
  switch (k->error) {
    case CPU_KERR_INDIRECT:
      return PTC_ERR(INVALID_ARGUMENT, "%s: index %lld is out of bounds for dimension with size %lld",
                     origin, (long long)k->error_value, (long long)k->error_bound);
    case CPU_KERR_DIV_ZERO:
      return PTC_ERR(INVALID_ARGUMENT, "%s: integer division by zero", origin);
    case CPU_KERR_EMPTY:
      return PTC_ERR(INVALID_ARGUMENT, "%s: cannot reduce over a zero-size dimension", origin);
    case CPU_KERR_NOMEM:
      return PTC_ERR(RESOURCE_EXHAUSTED, "%s: kernel %s could not allocate %lld bytes", origin,
                     st->name, (long long)k->error_value);
    default:
      return PTC_ERR(INTERNAL, "%s: kernel %s failed with error %d", origin, st->name,
                     (int)k->error);
  }
}

static ptc_status run_kernel(const run_frame* f, const plan_step* st) {
  void* small[65];
  void** args = st->n_bufs < 64 ? small : malloc((st->n_bufs + 1) * sizeof *args);
  if (!args) return ptc_status_oom();
  for (uint32_t i = 0; i < st->n_bufs; i++) args[i] = f->b[st->bufs[i]].base;
  cpu_kernel_ctx k;
  memset(&k, 0, sizeof k);
  k.seed = f->seed;
  k.error_node = -1;
  args[st->n_bufs] = &k;
  st->compiled.fn(args, f->syms);
  if (args != small) free(args);
  return k.error ? kernel_error(f, st, &k) : PTC_OK;
}

static ptc_status run_extern(const run_frame* f, const plan_step* st) {
  const ir_node* n = ir_node_at(f->plan->p, st->node);
  const ir_extern* e = &n->ext;
  runtime_tensor* v = calloc(e->n_in + e->n_out + 1, sizeof *v);
  if (!v) return ptc_status_oom();
  for (uint32_t k = 0; k < e->n_in; k++)
    if (e->in[k] >= 0) v[k] = f->b[e->in[k]].view;
  for (uint32_t k = 0; k < e->n_out; k++) v[e->n_in + k] = f->b[e->out[k]].view;
  ptc_status s = cpu_extern_run(f->ctx, f->plan->p, n, v, v + e->n_in, f->syms, f->n_syms, f->seed);
  free(v);
  return s;
}

/* Copies graph outputs that were not written in place. */
static void copy_outputs(const run_frame* f, const ptc_tensor* out, size_t n_out) {
  const ir_program* p = f->plan->p;
  for (size_t j = 0; j < n_out && j < p->n_outputs; j++) {
    const buf_rt* r = &f->b[p->output_bufs[j]];
    if (r->direct_output == (int32_t)j) continue;
    runtime_tensor dst = r->view;
    dst.data = out[j].data ? (char*)out[j].data + out[j].byte_offset : NULL;
    if (out[j].strides)
      memcpy(dst.strides, out[j].strides, (size_t)dst.rank * sizeof *dst.strides);
    else
      runtime_tensor_contiguous(&dst);
    runtime_tensor_copy(&r->view, &dst);
  }
}

/* View buffers (IR_BUF_VIEW, read by externs) share their base's memory,
 * bound by now. */
static void bind_views(run_frame* f) {
  const ir_program* p = f->plan->p;
  for (size_t i = 0; i < p->buffers.len; i++) {
    const ir_buffer* b = ir_buf(p, (int32_t)i);
    if (b->kind == IR_BUF_VIEW) set_base(&f->b[i], f->b[b->base].base, esize(b));
  }
}

static ptc_status bind_all(run_frame* f, const ptc_tensor* in, size_t n_in, const ptc_tensor* out,
                           size_t n_out) {
  PTC_TRY(eval_layouts(f));
  PTC_TRY(bind_inputs(f, in, n_in));
  bind_outputs_in_place(f, out, n_out);
  PTC_TRY(bind_workspace(f));
  PTC_TRY(bind_rest(f));
  bind_views(f);
  return PTC_OK;
}

ptc_status cpu_plan_run(const cpu_plan* plan, const ptc_tensor* inputs, size_t n_in,
                        const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                        size_t n_syms, uint64_t seed) {
  if (n_out != plan->p->n_outputs)
    return PTC_ERR(INVALID_ARGUMENT, "cpu backend: expected %zu outputs, got %zu",
                   plan->p->n_outputs, n_out);
  run_frame f = {plan, plan->ctx, NULL, NULL, NULL, NULL, 0, sym_values, n_syms, seed};
  size_t n_gin = plan->p->graph->inputs.len;
  f.b = calloc(plan->n_bufs + 1, sizeof *f.b);
  f.in_base = calloc(n_gin + 1, sizeof *f.in_base);
  f.in_bytes = calloc(n_gin + 1, sizeof *f.in_bytes);
  if (!f.b || !f.in_base || !f.in_bytes) {
    frame_free(&f);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < plan->n_bufs; i++) f.b[i].direct_output = -1;
  ptc_status s = bind_all(&f, inputs, n_in, outputs, n_out);
  for (uint32_t i = 0; !s && i < plan->n_steps; i++) {
    const plan_step* st = &plan->steps[i];
    s = st->is_extern ? run_extern(&f, st) : run_kernel(&f, st);
  }
  if (!s) copy_outputs(&f, outputs, n_out);
  frame_free(&f);
  return s;
}
