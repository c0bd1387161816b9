/* cuda_graph.c - CUDA-graph mode of the cuda backend (mode="reduce-overhead"
 * and "max-autotune"): per executable, a table of graphs recorded from the
 * run plan, keyed by the run's symbol values, each over a static frame of
 * its own; replays copy the caller's inputs in and the outputs out around
 * one cuGraphLaunch on the caller's stream. The rules (warm-up call, cap,
 * when the mode turns itself off) are in cuda_graph.h. */
#include "cuda_graph.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { KEY_SEEN = 0, KEY_RECORDED, KEY_FAILED };

typedef struct graph_entry {
  int64_t* key;          /* symbol values */
  int state;             /* KEY_* */
  cu_stream cap;         /* private capture stream (its cache holds the capture's blocks) */
  cuda_frame* frame;
  cu_graph graph;
  cu_graph_exec exec;
  cu_stream last;        /* the stream of the last replay */
  bool launched;
} graph_entry;

struct cuda_graphs {
  pthread_mutex_t lock;
  const cuda_plan* plan;
  char mode[32];
  bool on;
  char why_off[200];
  size_t n_key;          /* symbol values per key (set by the first call) */
  bool have_n_key;
  graph_entry e[CUDA_GRAPH_CAP];
  uint32_t n;
  bool cap_logged;
  uint64_t recorded, replays, plain, failures;
};

/* ---- safety ------------------------------------------------------------------------ */

static bool uses_rng(const ir_program* p) {
  for (size_t i = 0; i < p->nodes.len; i++) {
    const ir_node* n = ir_node_at(p, i);
    if (n->kind == IR_EXTERN) continue;
    for (uint32_t k = 0; k < n->body.n; k++)
      if (n->body.ops[k].opcode == IR_RAND || n->body.ops[k].opcode == IR_RANDN) return true;
  }
  return false;
}

static bool have_graph_api(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  return cu->StreamBeginCapture && cu->StreamEndCapture && cu->StreamIsCapturing &&
         cu->GraphInstantiateWithFlags && cu->GraphLaunch && cu->GraphExecDestroy &&
         cu->GraphDestroy;
}

ptc_status cuda_graphs_create(const cuda_plan* plan, const char* mode, cuda_graphs** out) {
  *out = NULL;
  if (!mode || (strcmp(mode, "reduce-overhead") != 0 && strcmp(mode, "max-autotune") != 0))
    return PTC_OK;
  cuda_graphs* t = calloc(1, sizeof *t);
  if (!t) return ptc_status_oom();
  if (pthread_mutex_init(&t->lock, NULL) != 0) {
    free(t);
    return ptc_status_oom();
  }
  t->plan = plan;
  snprintf(t->mode, sizeof t->mode, "%s", mode);
  t->on = true;
  if (!have_graph_api())
    snprintf(t->why_off, sizeof t->why_off,
             "the CUDA driver lacks the graph entry points (cuStreamBeginCapture_v2, "
             "cuGraphInstantiateWithFlags, ...)");
  else if (plan->n_host_steps)
    snprintf(t->why_off, sizeof t->why_off, "%u step(s) run on the host (%.120s)", plan->n_host_steps,
             plan->host_ops);
  else if (uses_rng(plan->p))
    snprintf(t->why_off, sizeof t->why_off,
             "the graph draws random numbers (the seed is a kernel argument fixed at capture)");
  if (t->why_off[0]) {
    t->on = false;
    ptc_log(plan->ctx, PTC_LOG_INFO, "cuda backend: mode %s: CUDA graphs off: %s", mode,
            t->why_off);
  }
  *out = t;
  return PTC_OK;
}

/* ---- recording ------------------------------------------------------------------------ */

static void entry_release(graph_entry* en) {
  const cu_api* cu = &cuda_libs_get()->cu;
  if (en->exec) cu->GraphExecDestroy(en->exec);
  if (en->graph) cu->GraphDestroy(en->graph);
  cuda_frame_close(en->frame);
  if (en->cap) cu->StreamDestroy(en->cap);
  en->exec = NULL;
  en->graph = NULL;
  en->frame = NULL;
  en->cap = NULL;
}

static ptc_status record(cuda_graphs* t, graph_entry* en, const int64_t* syms, size_t n_syms,
                         uint64_t seed) {
  const cu_api* cu = &cuda_libs_get()->cu;
  CUDA_TRY(cu->StreamCreate(&en->cap, CU_STREAM_NON_BLOCKING), "creating the capture stream");
  PTC_TRY(cuda_frame_open(t->plan, syms, n_syms, seed, en->cap, &en->frame));
  CUDA_TRY(cu->StreamBeginCapture(en->cap, CU_CAPTURE_MODE_RELAXED), "cuStreamBeginCapture");
  ptc_status s = cuda_frame_exec(en->frame, en->cap);
  cu_graph g = NULL;
  cu_result r = cu->StreamEndCapture(en->cap, &g);
  en->graph = g;
  if (s) return s;
  CUDA_TRY(r, "cuStreamEndCapture");
  if (!g) return PTC_ERR(INTERNAL, "cuda backend: the capture gave no graph");
  CUDA_TRY(cu->GraphInstantiateWithFlags(&en->exec, g, 0), "cuGraphInstantiateWithFlags");
  return PTC_OK;
}

/* ---- replay ------------------------------------------------------------------------------ */

static bool same_strides(int32_t rank, const int64_t* shape, const int64_t* a, const int64_t* b) {
  for (int32_t d = 0; d < rank; d++)
    if (shape[d] > 1 && a[d] != b[d]) return false;
  return true;
}

static void contiguous_strides(int32_t rank, const int64_t* shape, int64_t* st) {
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= shape[d] > 1 ? shape[d] : 1;
  }
}

/* Copies src (a view) into dst (a view of the same shape and dtype): one
 * DtoD copy of `bytes` when the strides agree, the strided-copy kernel
 * otherwise. */
static ptc_status copy_view(const cuda_plan* plan, cu_stream stream, const runtime_tensor* src,
                            const runtime_tensor* dst, size_t bytes) {
  for (int32_t d = 0; d < src->rank; d++)
    if (src->shape[d] == 0) return PTC_OK;
  if (same_strides(src->rank, src->shape, src->strides, dst->strides)) {
    if (!bytes) return PTC_OK;
    CUDA_TRY(cuda_libs_get()->cu.MemcpyDtoDAsync((cu_deviceptr)(uintptr_t)dst->data,
                                                 (cu_deviceptr)(uintptr_t)src->data, bytes, stream),
             "copying a graph input or output");
    return PTC_OK;
  }
  return cuda_copy_strided(plan->sup, plan->dev, stream, src, dst);
}

static size_t extent_bytes(const runtime_tensor* v) {
  int64_t e = 1;
  for (int32_t d = 0; d < v->rank; d++) {
    if (v->shape[d] == 0) return 0;
    e += (v->shape[d] - 1) * (v->strides[d] < 0 ? 0 : v->strides[d]);
  }
  return (size_t)e * ptc_dtype_size(v->dtype);
}

static ptc_status replay(cuda_graphs* t, graph_entry* en, const ptc_tensor* inputs, size_t n_in,
                         const ptc_tensor* outputs, size_t n_out, cu_stream stream) {
  const cuda_plan* plan = t->plan;
  const cu_api* cu = &cuda_libs_get()->cu;
  if (n_in != plan->p->graph->inputs.len)
    return PTC_ERR(INVALID_ARGUMENT, "cuda backend: expected %zu inputs, got %zu",
                   plan->p->graph->inputs.len, n_in);
  if (n_out != plan->p->n_outputs)
    return PTC_ERR(INVALID_ARGUMENT, "cuda backend: expected %zu outputs, got %zu",
                   plan->p->n_outputs, n_out);
  /* the static memory is shared: a replay on another stream waits for the
   * last one (the whole context: that stream may be gone by now) */
  if (en->launched && en->last != stream)
    CUDA_TRY(cu->CtxSynchronize(), "waiting for the previous graph replay");
  for (size_t i = 0; i < n_in; i++) {
    const runtime_tensor* dst = cuda_frame_input(en->frame, i);
    runtime_tensor src = *dst;
    src.data = inputs[i].data ? (char*)inputs[i].data + inputs[i].byte_offset : NULL;
    if (inputs[i].strides)
      memcpy(src.strides, inputs[i].strides, (size_t)src.rank * sizeof *src.strides);
    else
      contiguous_strides(src.rank, src.shape, src.strides);
    PTC_TRY(copy_view(plan, stream, &src, dst, extent_bytes(dst)));
  }
  CUDA_TRY(cu->GraphLaunch(en->exec, stream), "cuGraphLaunch");
  en->launched = true;
  en->last = stream;
  for (size_t j = 0; j < n_out; j++) {
    const ptc_tensor* so = cuda_frame_output(en->frame, j);
    runtime_tensor src, dst;
    memset(&src, 0, sizeof src);
    src.dtype = ptc_dtype_from_dl(so->dtype);
    src.rank = so->ndim;
    memcpy(src.shape, so->shape, (size_t)so->ndim * sizeof *so->shape);
    contiguous_strides(src.rank, src.shape, src.strides);
    src.data = so->data;
    dst = src;
    dst.data = outputs[j].data ? (char*)outputs[j].data + outputs[j].byte_offset : NULL;
    if (outputs[j].strides)
      memcpy(dst.strides, outputs[j].strides, (size_t)dst.rank * sizeof *dst.strides);
    PTC_TRY(copy_view(plan, stream, &src, &dst, extent_bytes(&src)));
  }
  return cuda_frame_check(en->frame, stream);
}

/* ---- the table ----------------------------------------------------------------------------- */

static graph_entry* find(cuda_graphs* t, const int64_t* syms) {
  for (uint32_t i = 0; i < t->n; i++)
    if (t->n_key == 0 || memcmp(t->e[i].key, syms, t->n_key * sizeof *syms) == 0) return &t->e[i];
  return NULL;
}

static ptc_status run_locked(cuda_graphs* t, const ptc_tensor* inputs, size_t n_in,
                             const ptc_tensor* outputs, size_t n_out, const int64_t* syms,
                             size_t n_syms, uint64_t seed, cu_stream stream, bool* done) {
  if (!t->have_n_key) {
    t->n_key = n_syms;
    t->have_n_key = true;
  }
  if (n_syms != t->n_key) return PTC_OK; /* not expected: plain */
  graph_entry* en = find(t, syms);
  if (!en) {
    if (t->n >= CUDA_GRAPH_CAP) {
      if (!t->cap_logged)
        ptc_log(t->plan->ctx, PTC_LOG_INFO,
                "cuda backend: %d shapes have CUDA graphs already; further shapes run plainly",
                CUDA_GRAPH_CAP);
      t->cap_logged = true;
      return PTC_OK;
    }
    en = &t->e[t->n];
    memset(en, 0, sizeof *en);
    en->key = calloc(n_syms + 1, sizeof *en->key);
    if (!en->key) return ptc_status_oom();
    if (n_syms) memcpy(en->key, syms, n_syms * sizeof *syms);
    en->state = KEY_SEEN;
    t->n++;
    return PTC_OK; /* the warm-up call runs plainly */
  }
  if (en->state == KEY_FAILED) return PTC_OK;
  if (en->state == KEY_SEEN) {
    ptc_status s = record(t, en, syms, n_syms, seed);
    if (s) {
      ptc_log(t->plan->ctx, PTC_LOG_INFO,
              "cuda backend: recording a CUDA graph failed (this shape runs plainly): %s",
              ptc_status_message(s));
      ptc_status_destroy(s);
      entry_release(en);
      en->state = KEY_FAILED;
      t->failures++;
      return PTC_OK;
    }
    en->state = KEY_RECORDED;
    t->recorded++;
  }
  *done = true;
  t->replays++;
  return replay(t, en, inputs, n_in, outputs, n_out, stream);
}

ptc_status cuda_graphs_run(cuda_graphs* t, const ptc_tensor* inputs, size_t n_in,
                           const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                           size_t n_syms, uint64_t seed, cu_stream stream, bool* done) {
  *done = false;
  if (!t || !t->on) return PTC_OK;
  pthread_mutex_lock(&t->lock);
  ptc_status s = run_locked(t, inputs, n_in, outputs, n_out, sym_values, n_syms, seed, stream, done);
  if (!*done) t->plain++;
  pthread_mutex_unlock(&t->lock);
  return s;
}

void cuda_graphs_describe(cuda_graphs* t, ptc_strbuf* sb) {
  if (!t) return;
  pthread_mutex_lock(&t->lock);
  if (t->on)
    ptc_sb_printf(sb, "graph mode (%s): on, %llu CUDA graphs recorded (cap %d shapes), %llu replays, "
                  "%llu plain runs, %llu failed recordings\n", t->mode,
                  (unsigned long long)t->recorded, CUDA_GRAPH_CAP, (unsigned long long)t->replays,
                  (unsigned long long)t->plain, (unsigned long long)t->failures);
  else
    ptc_sb_printf(sb, "graph mode (%s): off: %s\n", t->mode, t->why_off);
  pthread_mutex_unlock(&t->lock);
}

void cuda_graphs_stats(cuda_graphs* t, uint64_t* recorded, uint64_t* replays, uint64_t* plain) {
  uint64_t a = 0, b = 0, c = 0;
  if (t) {
    pthread_mutex_lock(&t->lock);
    a = t->recorded;
    b = t->replays;
    c = t->plain;
    pthread_mutex_unlock(&t->lock);
  }
  if (recorded) *recorded = a;
  if (replays) *replays = b;
  if (plain) *plain = c;
}

void cuda_graphs_destroy(cuda_graphs* t) {
  if (!t) return;
  bool any = false;
  for (uint32_t i = 0; i < t->n; i++) any = any || t->e[i].frame || t->e[i].cap;
  cu_context prev = NULL;
  ptc_status s = any ? cuda_ctx_enter(t->plan->dev, &prev) : NULL;
  if (any && !s) {
    cuda_libs_get()->cu.CtxSynchronize(); /* a replay may still be queued */
    for (uint32_t i = 0; i < t->n; i++) entry_release(&t->e[i]);
    cuda_ctx_leave(t->plan->dev, prev);
  }
  ptc_status_destroy(s); /* without the context the graphs are leaked, never freed under the device */
  for (uint32_t i = 0; i < t->n; i++) free(t->e[i].key);
  pthread_mutex_destroy(&t->lock);
  free(t);
}
