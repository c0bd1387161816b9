/* cuda_plan_run.c - executes a cuda run plan once on a stream: evaluates
 * every buffer's layout with the run's sizes, binds device memory (caller
 * inputs, relaid out on the device when their strides differ from the
 * compiled layout; uploaded constants; caller outputs written in place when
 * their layout matches; one workspace block for every scheduler slot;
 * temporaries otherwise, all from the caching allocator), launches the
 * kernels and extern steps in order, copies outputs that were not written
 * in place, and, when some kernel can report an error, reads the error word
 * back (which waits for the stream). All memory of the run is returned to
 * the cache on the run's stream, so the next user on that stream is ordered
 * after this run's kernels. With deferred errors (ptc_run_options), the
 * error word is copied into a pinned slot behind the run's work instead of
 * being waited for; the next run of the plan reports what finished slots
 * hold. PTC_CUDA_HOSTPROF=1 sums the host time of each phase (printed at
 * exit).
 * Static frames (cuda_frame_*, for cuda_graph.c): the same binding, but the
 * frame owns static inputs (compiled layout) and outputs (contiguous) and
 * keeps every allocation until it is closed, so a CUDA graph recorded from
 * cuda_frame_exec can be replayed on memory no other run is given. */
#include "cuda_graph.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define I32_LIMIT ((int64_t)1 << 30)
#define FRAME_SMALL 8 /* buffers / inputs a frame holds without allocating */

typedef struct buf_rt {
  runtime_tensor view;   /* data = device address of storage element `offset` */
  int64_t offset;
  int64_t numel;         /* storage elements */
  cu_deviceptr base;     /* storage element 0 */
  bool temp;             /* base is this run's allocation */
  int32_t direct_output; /* >= 0: the graph output written in place */
} buf_rt;

typedef struct run_frame {
  const cuda_plan* plan;
  cu_stream stream;
  buf_rt* b;
  cu_deviceptr* in_base;
  bool* in_temp;
  cu_deviceptr ws;
  cu_deviceptr kerr;
  const int64_t* syms;
  size_t n_syms;
  uint64_t seed;
  /* static frames (cuda_graph.h): the frame owns its inputs and outputs */
  bool own_io;
  const ptc_tensor* out;     /* the outputs copy_outputs writes */
  size_t n_out;
  ptc_tensor* own_out;       /* own_io: the static outputs (contiguous) */
  int64_t* own_out_shape;    /* their shapes, PTC_MAX_RANK each */
  runtime_tensor* in_views;  /* own_io: the static inputs in the compiled layout */
  /* b / in_base / in_temp of small plans (no heap allocation per run) */
  buf_rt small_b[FRAME_SMALL];
  cu_deviceptr small_in_base[FRAME_SMALL];
  bool small_in_temp[FRAME_SMALL];
} run_frame;

/* Layouts evaluated once for plans without size symbols (cuda_plan.h). */
struct cuda_static_layout {
  buf_rt* b;  /* per buffer, as eval_layout leaves it (unbound; LOCAL ones zero) */
  buf_rt* in; /* per graph input, as input_layout leaves it */
};

static size_t esize(const ir_buffer* b) { return ptc_dtype_size(b->dtype); }

static void* dptr(cu_deviceptr p) { return (void*)(uintptr_t)p; }

/* ---- layouts ------------------------------------------------------------------- */

static int64_t extent_of(const runtime_tensor* v, int64_t offset) {
  int64_t e = offset + 1;
  for (int32_t d = 0; d < v->rank; d++) {
    if (v->shape[d] == 0) return 0;
    e += (v->shape[d] - 1) * (v->strides[d] < 0 ? 0 : v->strides[d]);
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
  int64_t ext = extent_of(&r->view, r->offset);
  r->numel = ext;
  if (b->numel) PTC_TRY(sym_eval(b->numel, f->syms, f->n_syms, &r->numel));
  if (r->numel < ext) r->numel = ext;
  return PTC_OK;
}

static void set_base(buf_rt* r, cu_deviceptr base, size_t es) {
  r->base = base;
  r->view.data = base ? dptr(base + (cu_deviceptr)(r->offset * (int64_t)es)) : NULL;
}

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

static ptc_status alloc_bytes(const run_frame* f, int64_t numel, size_t es, cu_deviceptr* out) {
  int64_t bytes;
  if (!ptc_mul_ok(numel, (int64_t)es, &bytes))
    return PTC_ERR(RESOURCE_EXHAUSTED, "cuda backend: buffer too large");
  return cuda_alloc((size_t)bytes, f->stream, out);
}

/* ---- binding ---------------------------------------------------------------------- */

/* The compiled layout of graph input i with the run's sizes. */
static ptc_status input_layout(const cuda_plan* plan, size_t i, const int64_t* syms, size_t n_syms,
                               buf_rt* layout) {
  const ptc_graph* g = plan->p->graph;
  const gvalue* gv = graph_value(g, PTC_VEC_AT(&g->inputs, ptc_value, i));
  memset(layout, 0, sizeof *layout);
  layout->view.dtype = gv->dtype;
  layout->view.rank = (int32_t)gv->rank;
  for (uint32_t d = 0; d < gv->rank; d++) {
    PTC_TRY(sym_eval(gv->shape[d], syms, n_syms, &layout->view.shape[d]));
    PTC_TRY(sym_eval(gv->strides[d], syms, n_syms, &layout->view.strides[d]));
  }
  return PTC_OK;
}

static ptc_status bind_input_storage(run_frame* f, size_t i, const ptc_tensor* t) {
  const ptc_graph* g = f->plan->p->graph;
  const gvalue* gv = graph_value(g, PTC_VEC_AT(&g->inputs, ptc_value, i));
  buf_rt layout;
  if (f->plan->static_layout)
    layout = f->plan->static_layout->in[i];
  else
    PTC_TRY(input_layout(f->plan, i, f->syms, f->n_syms, &layout));
  if (f->own_io) { /* a static input of the compiled layout, owned by the frame */
    PTC_TRY(alloc_bytes(f, extent_of(&layout.view, 0), ptc_dtype_size(gv->dtype), &f->in_base[i]));
    f->in_temp[i] = true;
    f->in_views[i] = layout.view;
    f->in_views[i].data = dptr(f->in_base[i]);
    return PTC_OK;
  }
  cu_deviceptr data = t->data ? (cu_deviceptr)(uintptr_t)t->data + t->byte_offset : 0;
  if (layout_matches(&layout, t->strides)) {
    f->in_base[i] = data;
    return PTC_OK;
  }
  PTC_TRY(alloc_bytes(f, extent_of(&layout.view, 0), ptc_dtype_size(gv->dtype), &f->in_base[i]));
  f->in_temp[i] = true;
  runtime_tensor src = layout.view, dst = layout.view;
  src.data = dptr(data);
  if (t->strides)
    memcpy(src.strides, t->strides, (size_t)src.rank * sizeof *t->strides);
  else
    runtime_tensor_contiguous(&src);
  dst.data = dptr(f->in_base[i]);
  return cuda_copy_strided(f->plan->sup, f->plan->dev, f->stream, &src, &dst);
}

static ptc_status bind_inputs(run_frame* f, const ptc_tensor* in, size_t n_in) {
  const cuda_plan* plan = f->plan;
  const ir_program* p = plan->p;
  if (n_in != p->graph->inputs.len)
    return PTC_ERR(INVALID_ARGUMENT, "cuda backend: expected %zu inputs, got %zu",
                   p->graph->inputs.len, n_in);
  for (size_t i = 0; i < n_in; i++) PTC_TRY(bind_input_storage(f, i, f->own_io ? NULL : &in[i]));
  for (size_t i = 0; i < p->buffers.len; i++) {
    const ir_buffer* b = ir_buf(p, (int32_t)i);
    if (b->kind == IR_BUF_INPUT) {
      if (b->graph_input < 0 || (size_t)b->graph_input >= n_in)
        return PTC_ERR(INTERNAL, "cuda backend: buffer %s reads input %d of %zu", b->name,
                       (int)b->graph_input, n_in);
      set_base(&f->b[i], f->in_base[b->graph_input], esize(b));
    } else if (b->kind == IR_BUF_CONSTANT) {
      set_base(&f->b[i], plan->const_ptr[i], esize(b));
    }
  }
  return PTC_OK;
}

static void bind_outputs_in_place(run_frame* f, const ptc_tensor* out, size_t n_out) {
  const cuda_plan* plan = f->plan;
  for (size_t j = 0; j < n_out && j < plan->p->n_outputs; j++) {
    int32_t id = plan->p->output_bufs[j];
    buf_rt* r = &f->b[id];
    if (plan->s->buf_home[id] != SCHED_HOME_OUTPUT || r->direct_output >= 0) continue;
    runtime_tensor contiguous = r->view;
    runtime_tensor_contiguous(&contiguous);
    int64_t numel = 1;
    for (int32_t d = 0; d < r->view.rank; d++) numel *= r->view.shape[d];
    bool packed = layout_matches(r, contiguous.strides) && r->numel == numel;
    if (!packed || !layout_matches(r, out[j].strides)) continue;
    set_base(r, out[j].data ? (cu_deviceptr)(uintptr_t)out[j].data + out[j].byte_offset : 0,
             esize(ir_buf(plan->p, id)));
    r->direct_output = (int32_t)j;
  }
}

static ptc_status bind_workspace(run_frame* f) {
  const sched_plan* s = f->plan->s;
  size_t small[FRAME_SMALL + 1];
  size_t* off = s->n_slots <= FRAME_SMALL ? small : calloc(s->n_slots + 1, sizeof *off);
  if (!off) return ptc_status_oom();
  if (off == small) memset(small, 0, sizeof small);
  size_t total = 0;
  ptc_status st = sched_slot_offsets(s, f->syms, f->n_syms, 256, off, &total);
  if (!st && total) st = cuda_alloc(total, f->stream, &f->ws);
  for (size_t i = 0; !st && i < f->plan->n_bufs; i++)
    if (s->buf_home[i] == SCHED_HOME_SLOT)
      set_base(&f->b[i], f->ws + off[s->buf_slot[i]], esize(ir_buf(f->plan->p, (int32_t)i)));
  if (off != small) free(off);
  return st;
}

static ptc_status bind_rest(run_frame* f) {
  const cuda_plan* plan = f->plan;
  for (size_t i = 0; i < plan->n_bufs; i++) {
    if (plan->s->buf_home[i] == SCHED_HOME_LOCAL || f->b[i].base) continue;
    const ir_buffer* b = ir_buf(plan->p, (int32_t)i);
    if (b->kind != IR_BUF_COMPUTED || f->b[i].numel == 0) continue;
    cu_deviceptr p;
    PTC_TRY(alloc_bytes(f, f->b[i].numel, esize(b), &p));
    f->b[i].temp = true;
    set_base(&f->b[i], p, esize(b));
  }
  return PTC_OK;
}

/* own_io: one contiguous static output per graph output, owned by the frame,
 * of the output buffer's shape. */
static ptc_status alloc_own_outputs(run_frame* f, size_t n_out) {
  const cuda_plan* plan = f->plan;
  f->own_out = calloc(n_out + 1, sizeof *f->own_out);
  f->own_out_shape = calloc((n_out + 1) * PTC_MAX_RANK, sizeof *f->own_out_shape);
  if (!f->own_out || !f->own_out_shape) return ptc_status_oom();
  f->out = f->own_out;
  f->n_out = n_out; /* frame_free returns what was allocated so far */
  for (size_t j = 0; j < n_out; j++) {
    int32_t id = plan->p->output_bufs[j];
    const buf_rt* r = &f->b[id];
    int64_t numel = 1;
    for (int32_t d = 0; d < r->view.rank; d++) numel *= r->view.shape[d];
    ptc_tensor* t = &f->own_out[j];
    t->shape = f->own_out_shape + j * PTC_MAX_RANK;
    memcpy(t->shape, r->view.shape, (size_t)r->view.rank * sizeof *t->shape);
    t->ndim = r->view.rank;
    t->dtype = ptc_dtype_to_dl(r->view.dtype);
    t->device.device_type = PTC_DEVICE_CUDA;
    cu_deviceptr p = 0;
    PTC_TRY(alloc_bytes(f, numel, esize(ir_buf(plan->p, id)), &p));
    t->data = dptr(p);
  }
  return PTC_OK;
}

/* ---- static layouts (cuda_plan.h) --------------------------------------------------- */

void cuda_static_layout_free(struct cuda_static_layout* sl) {
  if (!sl) return;
  free(sl->b);
  free(sl->in);
  free(sl);
}

ptc_status cuda_plan_static_layout(cuda_plan* plan) {
  plan->static_layout = NULL;
  size_t n_in = plan->p->graph->inputs.len;
  struct cuda_static_layout* sl = calloc(1, sizeof *sl);
  if (sl) {
    sl->b = calloc(plan->n_bufs + 1, sizeof *sl->b);
    sl->in = calloc(n_in + 1, sizeof *sl->in);
  }
  if (!sl || !sl->b || !sl->in) {
    cuda_static_layout_free(sl);
    return ptc_status_oom();
  }
  run_frame f; /* no symbol values: a layout that needs one fails to evaluate */
  memset(&f, 0, offsetof(run_frame, small_b));
  f.plan = plan;
  ptc_status s = PTC_OK;
  for (size_t i = 0; !s && i < plan->n_bufs; i++) {
    sl->b[i].direct_output = -1;
    if (plan->s->buf_home[i] != SCHED_HOME_LOCAL)
      s = eval_layout(&f, ir_buf(plan->p, (int32_t)i), &sl->b[i]);
  }
  for (size_t i = 0; !s && i < n_in; i++) s = input_layout(plan, i, NULL, 0, &sl->in[i]);
  if (s) { /* sizes are symbolic: every run evaluates its layouts */
    ptc_status_destroy(s);
    cuda_static_layout_free(sl);
    return PTC_OK;
  }
  plan->static_layout = sl;
  return PTC_OK;
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
  const cuda_plan* plan = f->plan;
  if (plan->static_layout)
    memcpy(f->b, plan->static_layout->b, plan->n_bufs * sizeof *f->b);
  for (size_t i = 0; !plan->static_layout && i < plan->n_bufs; i++) {
    if (plan->s->buf_home[i] == SCHED_HOME_LOCAL) continue;
    ptc_status s = eval_layout(f, ir_buf(plan->p, (int32_t)i), &f->b[i]);
    if (s) return ptc_status_prefix(s, "cuda backend: buffer %s", ir_buf(plan->p, (int32_t)i)->name);
  }
  PTC_TRY(bind_inputs(f, in, n_in));
  if (f->own_io) {
    PTC_TRY(alloc_own_outputs(f, n_out));
    out = f->own_out;
  } else {
    f->out = out;
    f->n_out = n_out;
  }
  bind_outputs_in_place(f, out, n_out);
  PTC_TRY(bind_workspace(f));
  PTC_TRY(bind_rest(f));
  bind_views(f);
  return PTC_OK;
}

static void frame_free(run_frame* f) {
  for (size_t i = 0; f->b && i < f->plan->n_bufs; i++)
    if (f->b[i].temp) cuda_free(f->b[i].base);
  for (size_t i = 0; f->in_temp && i < f->plan->p->graph->inputs.len; i++)
    if (f->in_temp[i]) cuda_free(f->in_base[i]);
  cuda_free(f->ws);
  cuda_free(f->kerr);
  for (size_t j = 0; f->own_out && j < f->n_out; j++)
    cuda_free((cu_deviceptr)(uintptr_t)f->own_out[j].data);
  if (f->b != f->small_b) free(f->b);
  if (f->in_base != f->small_in_base) free(f->in_base);
  if (f->in_temp != f->small_in_temp) free(f->in_temp);
  free(f->own_out);
  free(f->own_out_shape);
  free(f->in_views);
}

/* ---- kernels ------------------------------------------------------------------------ */

static ptc_status eval_product(const run_frame* f, const sym_expr* const* r, uint32_t n,
                               int64_t* out) {
  int64_t p = 1;
  for (uint32_t d = 0; d < n; d++) {
    int64_t v;
    PTC_TRY(sym_eval(r[d], f->syms, f->n_syms, &v));
    if (!ptc_mul_ok(p, v < 0 ? 0 : v, &p)) return PTC_ERR(RESOURCE_EXHAUSTED, "cuda backend: loop too large");
  }
  *out = p;
  return PTC_OK;
}

/* A split-reduction kernel keeps partials and counters in its module's
 * memory: a launch on another stream than the plan's previous split launch
 * first waits for the device (that launch may still run), under a lock held
 * across the launch so two threads cannot interleave. Not while a stream is
 * being captured into a CUDA graph (nothing executes then; cuda_graph.c
 * orders replays on a changed stream). */
static pthread_mutex_t split_lock = PTHREAD_MUTEX_INITIALIZER;

/* The error of a failed launch of kernel `name` (the message is only
 * formatted on failure: launches are on every run's host path). */
static ptc_status launch_error(cu_result r, const char* name) {
  char what[96];
  snprintf(what, sizeof what, "launching kernel %s", name);
  return cuda_error(r, what);
}

static ptc_status launch_split(const cuda_plan* plan, cu_function fn, int64_t blocks,
                               const cuda_launch_cfg* cfg, const run_frame* f, void** params,
                               const char* name) {
  const cu_api* cu = &cuda_libs_get()->cu;
  int capturing = 0;
  if (cu->StreamIsCapturing && cu->StreamIsCapturing(f->stream, &capturing) != CU_SUCCESS)
    capturing = 0;
  cuda_split_order* o = plan->split_order;
  pthread_mutex_lock(&split_lock);
  cu_result r = CU_SUCCESS;
  if (!capturing && o->used && o->last != f->stream) r = cu->CtxSynchronize();
  if (r == CU_SUCCESS)
    r = cuda_launch_pdl(plan->dev, fn, (unsigned)blocks, 1, cfg->block_x, cfg->block_y, 0,
                        f->stream, params);
  if (r == CU_SUCCESS && !capturing) {
    o->last = f->stream;
    o->used = true;
  }
  pthread_mutex_unlock(&split_lock);
  return r == CU_SUCCESS ? PTC_OK : launch_error(r, name);
}

static ptc_status run_kernel(run_frame* f, const cuda_step* st) {
  const cuda_plan* plan = f->plan;
  const sched_kernel* k = &plan->s->kernels[st->sched_kernel];
  int64_t xn = 0, rn = 0;
  PTC_TRY(eval_product(f, k->ranges, k->n_ranges, &xn));
  PTC_TRY(eval_product(f, k->rranges, k->n_rranges, &rn));
  if (xn == 0) return PTC_OK;
  int64_t ext = xn > INT64_MAX / (rn > 0 ? rn : 1) ? INT64_MAX : xn * (rn > 0 ? rn : 1);
  size_t n_args = st->n_bufs + st->n_syms + 4;
  void* small[64];
  cu_deviceptr ptrs[64];
  int64_t vals[64];
  if (n_args > 64 || st->n_syms > 60) return PTC_ERR(UNIMPLEMENTED, "cuda backend: kernel %s has too many arguments", st->name);
  for (uint32_t j = 0; j < st->n_bufs; j++) {
    const buf_rt* r = &f->b[st->bufs[j]];
    ptrs[j] = r->base;
    if (r->numel > ext) ext = r->numel;
    small[j] = &ptrs[j];
  }
  for (uint32_t j = 0; j < st->n_syms; j++) {
    vals[j] = st->syms[j] < f->n_syms ? f->syms[st->syms[j]] : 0;
    small[st->n_bufs + j] = &vals[j];
  }
  vals[st->n_syms] = xn;
  vals[st->n_syms + 1] = rn;
  size_t a = st->n_bufs + st->n_syms;
  small[a] = &vals[st->n_syms];
  small[a + 1] = &vals[st->n_syms + 1];
  cu_deviceptr kerr = f->kerr;
  uint64_t seed = f->seed;
  small[a + 2] = &kerr;
  small[a + 3] = &seed;
  cu_function fn = st->fn_i32 && ext < I32_LIMIT ? st->fn_i32 : st->fn_i64;
  if (!fn)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: kernel %s was compiled for 32-bit indexing only "
                   "but this run needs %lld elements", st->name, (long long)ext);
  cuda_launch_cfg cfg; /* the heuristic, or the autotuned choice (cuda_tune.c) */
  PTC_TRY(cuda_tune_pick(plan, st, fn, small, xn, rn, ext, f->stream, &cfg));
  int64_t blocks = cuda_tune_blocks(st, &cfg, plan->dev->sm_count, xn);
  if (st->split > 1) { /* split reduction: a block per (row, chunk), at most 32 per SM (the
                        * kernel strides beyond; rows past its workspace run unsplit) */
    int64_t cap = (int64_t)(plan->dev->sm_count > 0 ? plan->dev->sm_count : 1) * 32;
    int64_t units = st->layout == CUDA_LAYOUT_COL && st->slots /* column tiles */
                        ? (xn + st->slots - 1) / st->slots : xn;
    int64_t want = units > cap / (int64_t)st->split ? cap : units * (int64_t)st->split;
    if (want > blocks) blocks = want;
  }
  if (st->split > 1 && plan->split_order)
    return launch_split(plan, fn, blocks, &cfg, f, small, st->name);
  cu_result r = cuda_launch_pdl(plan->dev, fn, (unsigned)blocks, 1, cfg.block_x, cfg.block_y, 0,
                                f->stream, small);
  return r == CU_SUCCESS ? PTC_OK : launch_error(r, st->name);
}

static ptc_status run_extern(run_frame* f, const cuda_step* st) {
  const ir_node* n = ir_node_at(f->plan->p, st->node);
  const ir_extern* e = &n->ext;
  runtime_tensor small[8]; /* no heap allocation per GEMM call */
  size_t nv = (size_t)e->n_in + e->n_out;
  runtime_tensor* v = nv <= 8 ? small : calloc(nv + 1, sizeof *v);
  if (!v) return ptc_status_oom();
  if (v == small) memset(small, 0, nv * sizeof *small);
  for (uint32_t k = 0; k < e->n_in; k++)
    if (e->in[k] >= 0) v[k] = f->b[e->in[k]].view;
  for (uint32_t k = 0; k < e->n_out; k++) v[e->n_in + k] = f->b[e->out[k]].view;
  cuda_ext_call c = {f->plan, n, v, v + e->n_in, f->syms, f->n_syms, f->seed, f->stream, false};
  ptc_status s = cuda_ext_run(&c);
  if (v != small) free(v);
  return s;
}

static ptc_status copy_outputs(const run_frame* f, const ptc_tensor* out, size_t n_out) {
  const ir_program* p = f->plan->p;
  for (size_t j = 0; j < n_out && j < p->n_outputs; j++) {
    const buf_rt* r = &f->b[p->output_bufs[j]];
    if (r->direct_output == (int32_t)j) continue;
    runtime_tensor dst = r->view;
    dst.data = out[j].data ? dptr((cu_deviceptr)(uintptr_t)out[j].data + out[j].byte_offset) : NULL;
    if (out[j].strides)
      memcpy(dst.strides, out[j].strides, (size_t)dst.rank * sizeof *dst.strides);
    else
      runtime_tensor_contiguous(&dst);
    PTC_TRY(cuda_copy_strided(f->plan->sup, f->plan->dev, f->stream, &r->view, &dst));
  }
  return PTC_OK;
}

/* ---- host-time profile (PTC_CUDA_HOSTPROF=1) ------------------------------------------ */

enum { HP_RUNS, HP_TOTAL, HP_BIND, HP_KERNELS, HP_N_KERNELS, HP_EXTERNS, HP_N_EXTERNS,
       HP_COPY_OUT, HP_ERRORS, HP_FREE, HP_COUNT };
static atomic_llong hostprof[HP_COUNT];
static int hostprof_on = -1; /* -1: not read yet */
static pthread_once_t hostprof_once = PTHREAD_ONCE_INIT;

static void hostprof_print(void) {
  long long n = atomic_load(&hostprof[HP_RUNS]);
  if (n <= 0) return;
  double r = 1e3 * (double)n; /* ns -> us per run */
  fprintf(stderr,
          "ptc cuda hostprof: %lld runs; per run (us): total %.2f = bind %.2f + kernels %.2f "
          "(%.1f launches) + externs %.2f (%.1f steps) + output copies %.2f + error check %.2f "
          "+ free %.2f\n",
          n, (double)atomic_load(&hostprof[HP_TOTAL]) / r, (double)atomic_load(&hostprof[HP_BIND]) / r,
          (double)atomic_load(&hostprof[HP_KERNELS]) / r,
          (double)atomic_load(&hostprof[HP_N_KERNELS]) / (double)n,
          (double)atomic_load(&hostprof[HP_EXTERNS]) / r,
          (double)atomic_load(&hostprof[HP_N_EXTERNS]) / (double)n,
          (double)atomic_load(&hostprof[HP_COPY_OUT]) / r, (double)atomic_load(&hostprof[HP_ERRORS]) / r,
          (double)atomic_load(&hostprof[HP_FREE]) / r);
}

static void hostprof_init(void) {
  const char* v = getenv("PTC_CUDA_HOSTPROF");
  hostprof_on = v && *v && strcmp(v, "0") != 0;
  if (hostprof_on) atexit(hostprof_print);
}

static bool hostprof_enabled(void) {
  pthread_once(&hostprof_once, hostprof_init);
  return hostprof_on > 0;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Adds the time since *t0 to counter `c` and restarts *t0 (only when on). */
static void hp_lap(bool on, int c, long long* t0) {
  if (!on) return;
  long long t = now_ns();
  atomic_fetch_add_explicit(&hostprof[c], t - *t0, memory_order_relaxed);
  *t0 = t;
}

/* ---- errors --------------------------------------------------------------------------- */

static ptc_status kernel_error(const cuda_plan* plan, const cuda_kerr* k) {
  const ir_program* p = plan->p;
  const char* origin = "a kernel";
  if (k->node >= 0 && (size_t)k->node < p->nodes.len && ir_node_at(p, (size_t)k->node)->origin)
    origin = ir_node_at(p, (size_t)k->node)->origin;
  switch (k->error) {
    case CUDA_KERR_INDIRECT:
      return PTC_ERR(INVALID_ARGUMENT, "%s: index %lld is out of bounds for dimension with size %lld",
                     origin, (long long)k->value, (long long)k->bound);
    case CUDA_KERR_DIV_ZERO: return PTC_ERR(INVALID_ARGUMENT, "%s: integer division by zero", origin);
    case CUDA_KERR_EMPTY:
      return PTC_ERR(INVALID_ARGUMENT, "%s: cannot reduce over a zero-size dimension", origin);
    default: return PTC_ERR(INTERNAL, "%s: kernel failed with error %d", origin, (int)k->error);
  }
}

static ptc_status check_errors(run_frame* f) {
  const cu_api* cu = &cuda_libs_get()->cu;
  cuda_kerr k;
  memset(&k, 0, sizeof k);
  CUDA_TRY(cu->MemcpyDtoHAsync(&k, f->kerr, sizeof k, f->stream), "reading the error word");
  CUDA_TRY(cu->StreamSynchronize(f->stream), "waiting for the run");
  return k.error ? kernel_error(f->plan, &k) : PTC_OK;
}

/* Allocates and binds the frame (inputs, outputs, workspace, temporaries,
 * the error word) with every allocation on `stream`; relayout copies of
 * caller inputs (not own_io) are queued there too. */
static ptc_status frame_init(run_frame* f, const cuda_plan* plan, bool own_io,
                             const ptc_tensor* inputs, size_t n_in, const ptc_tensor* outputs,
                             size_t n_out, const int64_t* sym_values, size_t n_syms, uint64_t seed,
                             cu_stream stream) {
  memset(f, 0, offsetof(run_frame, small_b)); /* the small arrays: only the part used */
  f->plan = plan;
  f->stream = stream;
  f->syms = sym_values;
  f->n_syms = n_syms;
  f->seed = seed;
  f->own_io = own_io;
  if (n_out != plan->p->n_outputs)
    return PTC_ERR(INVALID_ARGUMENT, "cuda backend: expected %zu outputs, got %zu",
                   plan->p->n_outputs, n_out);
  size_t n_gin = plan->p->graph->inputs.len;
  if (plan->n_bufs <= FRAME_SMALL) {
    f->b = f->small_b;
    memset(f->b, 0, plan->n_bufs * sizeof *f->b);
  } else {
    f->b = calloc(plan->n_bufs + 1, sizeof *f->b);
  }
  if (n_gin <= FRAME_SMALL) {
    f->in_base = f->small_in_base;
    f->in_temp = f->small_in_temp;
    memset(f->in_base, 0, n_gin * sizeof *f->in_base);
    memset(f->in_temp, 0, n_gin * sizeof *f->in_temp);
  } else {
    f->in_base = calloc(n_gin + 1, sizeof *f->in_base);
    f->in_temp = calloc(n_gin + 1, sizeof *f->in_temp);
  }
  if (own_io) f->in_views = calloc(n_gin + 1, sizeof *f->in_views);
  if (!f->b || !f->in_base || !f->in_temp || (own_io && !f->in_views)) return ptc_status_oom();
  for (size_t i = 0; i < plan->n_bufs; i++) f->b[i].direct_output = -1;
  if (plan->uses_err) PTC_TRY(cuda_alloc(sizeof(cuda_kerr), stream, &f->kerr));
  return bind_all(f, inputs, own_io ? n_gin : n_in, outputs, n_out);
}

/* Queues the run's work on f->stream: the error word cleared, every step,
 * the outputs not written in place copied. No host synchronisation (the
 * host steps of cuda_ext_run aside), so it can be captured into a graph. */
static ptc_status frame_exec(run_frame* f) {
  const cuda_plan* plan = f->plan;
  if (plan->uses_err &&
      cuda_libs_get()->cu.MemsetD8Async(f->kerr, 0, sizeof(cuda_kerr), f->stream) != CU_SUCCESS)
    return PTC_ERR(INTERNAL, "cuda backend: clearing the error word failed");
  bool prof = hostprof_enabled();
  long long t0 = prof ? now_ns() : 0;
  for (uint32_t i = 0; i < plan->n_steps; i++) {
    const cuda_step* st = &plan->steps[i];
    PTC_TRY(st->is_extern ? run_extern(f, st) : run_kernel(f, st));
    if (prof) {
      hp_lap(prof, st->is_extern ? HP_EXTERNS : HP_KERNELS, &t0);
      atomic_fetch_add_explicit(&hostprof[st->is_extern ? HP_N_EXTERNS : HP_N_KERNELS], 1,
                                memory_order_relaxed);
    }
  }
  ptc_status s = copy_outputs(f, f->out, f->n_out);
  hp_lap(prof, HP_COPY_OUT, &t0);
  return s;
}

/* ---- deferred error checks --------------------------------------------------------------- */

#define DEFER_SLOTS 8
enum { SLOT_FREE, SLOT_RESERVED, SLOT_PENDING };

struct cuda_deferred {
  pthread_mutex_t lock;
  bool ready, failed;      /* pinned words and events made / could not be (runs then wait) */
  cuda_kerr* host;         /* DEFER_SLOTS words in pinned host memory */
  cu_event ev[DEFER_SLOTS];
  uint8_t state[DEFER_SLOTS];
  uint32_t next;           /* where the search for a free slot starts */
};

ptc_status cuda_deferred_create(cuda_deferred** out) {
  *out = calloc(1, sizeof **out);
  if (!*out) return ptc_status_oom();
  pthread_mutex_init(&(*out)->lock, NULL);
  return PTC_OK;
}

void cuda_deferred_destroy(cuda_deferred* d) {
  if (!d) return;
  const cu_api* cu = &cuda_libs_get()->cu;
  if (d->ready) {
    for (int i = 0; i < DEFER_SLOTS; i++) {
      if (d->state[i] == SLOT_PENDING) cu->EventSynchronize(d->ev[i]);
      cu->EventDestroy(d->ev[i]);
    }
    cu->MemFreeHost(d->host);
  }
  pthread_mutex_destroy(&d->lock);
  free(d);
}

/* PTC_CUDA_SYNC_ERRORS=1: every run waits for its error word. */
static int sync_errors = -1;
static pthread_once_t sync_errors_once = PTHREAD_ONCE_INIT;
static void sync_errors_init(void) {
  const char* v = getenv("PTC_CUDA_SYNC_ERRORS");
  sync_errors = v && *v && strcmp(v, "0") != 0;
}

/* Makes the pinned words and events on first use (under d->lock); false
 * when the driver lacks them or they cannot be made (runs then wait). */
static bool deferred_ready(cuda_deferred* d) {
  if (d->ready || d->failed) return d->ready;
  const cu_api* cu = &cuda_libs_get()->cu;
  d->failed = true;
  if (!cu->EventCreate || !cu->EventRecord || !cu->EventQuery || !cu->EventSynchronize ||
      !cu->EventDestroy || !cu->MemAllocHost || !cu->MemFreeHost)
    return false;
  void* host = NULL;
  if (cu->MemAllocHost(&host, DEFER_SLOTS * sizeof(cuda_kerr)) != CU_SUCCESS) return false;
  int made = 0;
  for (; made < DEFER_SLOTS; made++)
    if (cu->EventCreate(&d->ev[made], CU_EVENT_DISABLE_TIMING) != CU_SUCCESS) break;
  if (made < DEFER_SLOTS) {
    for (int i = 0; i < made; i++) cu->EventDestroy(d->ev[i]);
    cu->MemFreeHost(host);
    return false;
  }
  d->host = host;
  memset(d->host, 0, DEFER_SLOTS * sizeof(cuda_kerr));
  d->ready = true;
  d->failed = false;
  return true;
}

/* The error in finished slot i (an earlier run's), the slot freed. */
static ptc_status deferred_take(const cuda_plan* plan, cuda_deferred* d, int i) {
  d->state[i] = SLOT_FREE;
  cuda_kerr k = d->host[i];
  if (!k.error) return PTC_OK;
  return ptc_status_prefix(kernel_error(plan, &k), "cuda backend: an earlier run of this "
                           "executable failed (errors are reported by the next run)");
}

/* Before a deferred run: the first error of the earlier runs that have
 * finished (their slots freed; later errors are dropped), else a reserved
 * slot in *slot (-1: none free, this run waits for its own word). Waits
 * for the oldest pending run only when every slot is pending. */
static ptc_status deferred_begin(const cuda_plan* plan, cuda_deferred* d, int* slot) {
  const cu_api* cu = &cuda_libs_get()->cu;
  *slot = -1;
  pthread_mutex_lock(&d->lock);
  ptc_status err = PTC_OK;
  if (!deferred_ready(d)) {
    pthread_mutex_unlock(&d->lock);
    return PTC_OK;
  }
  for (int i = 0; i < DEFER_SLOTS; i++) {
    if (d->state[i] != SLOT_PENDING) continue;
    cu_result r = cu->EventQuery(d->ev[i]);
    if (r == CU_ERROR_NOT_READY) continue;
    ptc_status e = r == CU_SUCCESS ? deferred_take(plan, d, i)
                                   : cuda_error(r, "checking an earlier run's error word");
    d->state[i] = SLOT_FREE;
    if (e && !err) err = e;
    else ptc_status_destroy(e);
  }
  for (int k = 0; !err && k < DEFER_SLOTS && *slot < 0; k++) {
    int i = (int)((d->next + (uint32_t)k) % DEFER_SLOTS);
    if (d->state[i] == SLOT_FREE) *slot = i;
  }
  if (!err && *slot < 0) { /* all in use: wait for the oldest pending one */
    for (int k = 0; k < DEFER_SLOTS && *slot < 0; k++) {
      int i = (int)((d->next + (uint32_t)k) % DEFER_SLOTS);
      if (d->state[i] != SLOT_PENDING) continue;
      cu_result r = cu->EventSynchronize(d->ev[i]);
      err = r == CU_SUCCESS ? deferred_take(plan, d, i)
                            : cuda_error(r, "waiting for an earlier run's error word");
      d->state[i] = SLOT_FREE;
      *slot = i;
    }
  }
  if (err) {
    *slot = -1;
  } else if (*slot >= 0) {
    d->state[*slot] = SLOT_RESERVED;
    d->next = (uint32_t)(*slot + 1) % DEFER_SLOTS;
  }
  pthread_mutex_unlock(&d->lock);
  return err;
}

/* After the run's work was queued (ok) or failed: the error word copied
 * into the slot behind it and the event recorded (the slot then pending),
 * else the slot freed. */
static ptc_status deferred_end(cuda_deferred* d, int slot, run_frame* f, bool ok) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_status s = PTC_OK;
  if (ok) {
    cu_result r = cu->MemcpyDtoHAsync(&d->host[slot], f->kerr, sizeof(cuda_kerr), f->stream);
    if (r == CU_SUCCESS) r = cu->EventRecord(d->ev[slot], f->stream);
    if (r != CU_SUCCESS) s = cuda_error(r, "queueing the error word's copy");
  }
  pthread_mutex_lock(&d->lock);
  d->state[slot] = ok && !s ? SLOT_PENDING : SLOT_FREE;
  pthread_mutex_unlock(&d->lock);
  return s;
}

ptc_status cuda_plan_run(const cuda_plan* plan, const ptc_tensor* inputs, size_t n_in,
                         const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                         size_t n_syms, uint64_t seed, cu_stream stream, bool deferred_errors) {
  bool prof = hostprof_enabled();
  long long t0 = prof ? now_ns() : 0, t_start = t0;
  int slot = -1;
  if (deferred_errors && plan->uses_err && plan->deferred) {
    pthread_once(&sync_errors_once, sync_errors_init);
    if (!sync_errors) PTC_TRY(deferred_begin(plan, plan->deferred, &slot));
  }
  run_frame f;
  ptc_status s = frame_init(&f, plan, false, inputs, n_in, outputs, n_out, sym_values, n_syms,
                            seed, stream);
  hp_lap(prof, HP_BIND, &t0);
  if (!s) s = frame_exec(&f);
  if (prof) t0 = now_ns();
  if (slot >= 0) {
    ptc_status e = deferred_end(plan->deferred, slot, &f, !s);
    if (!s) s = e;
    else ptc_status_destroy(e);
  } else if (!s && plan->uses_err) {
    s = check_errors(&f);
  }
  hp_lap(prof, HP_ERRORS, &t0);
  frame_free(&f);
  hp_lap(prof, HP_FREE, &t0);
  if (prof) {
    atomic_fetch_add_explicit(&hostprof[HP_TOTAL], now_ns() - t_start, memory_order_relaxed);
    atomic_fetch_add_explicit(&hostprof[HP_RUNS], 1, memory_order_relaxed);
  }
  return s;
}

/* ---- static frames (cuda_graph.h) ----------------------------------------------------- */

struct cuda_frame {
  run_frame f;
  int64_t* syms; /* a copy: the frame outlives the caller's array */
};

ptc_status cuda_frame_open(const cuda_plan* plan, const ptc_tensor* inputs, size_t n_in,
                           const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                           size_t n_syms, uint64_t seed, cu_stream alloc_stream, cuda_frame** out) {
  *out = NULL;
  cuda_frame* fr = calloc(1, sizeof *fr);
  if (!fr) return ptc_status_oom();
  fr->syms = calloc(n_syms + 1, sizeof *fr->syms);
  if (!fr->syms) {
    free(fr);
    return ptc_status_oom();
  }
  if (n_syms) memcpy(fr->syms, sym_values, n_syms * sizeof *sym_values);
  bool own = inputs == NULL;
  ptc_status s = frame_init(&fr->f, plan, own, inputs, n_in, outputs,
                            own ? plan->p->n_outputs : n_out, fr->syms, n_syms, seed, alloc_stream);
  for (size_t i = 0; !s && !own && i < plan->p->graph->inputs.len; i++)
    if (fr->f.in_temp[i])
      s = PTC_ERR(UNIMPLEMENTED, "cuda backend: input %zu needs a relayout copy", i);
  if (s) {
    cuda_frame_close(fr);
    return s;
  }
  *out = fr;
  return PTC_OK;
}

ptc_status cuda_frame_exec(cuda_frame* fr, cu_stream stream) {
  fr->f.stream = stream;
  ptc_status s = frame_exec(&fr->f);
  if (!fr->f.own_io) { /* the caller's output array is not kept */
    fr->f.out = NULL;
    fr->f.n_out = 0;
  }
  return s;
}

ptc_status cuda_frame_check(cuda_frame* fr, cu_stream stream) {
  if (!fr->f.plan->uses_err) return PTC_OK;
  fr->f.stream = stream;
  return check_errors(&fr->f);
}

const runtime_tensor* cuda_frame_input(const cuda_frame* fr, size_t i) {
  return &fr->f.in_views[i];
}

const ptc_tensor* cuda_frame_output(const cuda_frame* fr, size_t j) { return &fr->f.own_out[j]; }

void cuda_frame_close(cuda_frame* fr) {
  if (!fr) return;
  frame_free(&fr->f);
  free(fr->syms);
  free(fr);
}
