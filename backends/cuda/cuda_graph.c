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

/* One recorded graph and the frame it runs on. */
typedef struct graph_rec {
  cu_stream cap;         /* private capture stream (its cache holds the capture's blocks) */
  cuda_frame* frame;
  cu_graph graph;
  cu_graph_exec exec;
  cu_stream last;        /* the stream of the last launch */
  bool launched;
  int64_t* sig;          /* direct graphs: the caller buffers it was recorded on */
} graph_rec;

typedef struct graph_entry {
  int64_t* key;          /* symbol values */
  int state;             /* KEY_* */
  graph_rec* copy;       /* the static-copy graph (recorded when first needed) */
  graph_rec* direct[CUDA_GRAPH_DIRECT];
  uint32_t n_direct;
  bool no_direct;        /* a direct recording failed: copies only */
  int64_t* prev_sig;     /* the buffers of the previous call of this key */
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
  size_t n_sig;          /* signature length: addresses and strides of every input and output */
  uint64_t recorded, direct, replays, plain, failures;
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

static void rec_destroy(graph_rec* g) {
  if (!g) return;
  const cu_api* cu = &cuda_libs_get()->cu;
  if (g->exec) cu->GraphExecDestroy(g->exec);
  if (g->graph) cu->GraphDestroy(g->graph);
  cuda_frame_close(g->frame);
  if (g->cap) {
    (void)cuda_alloc_hold_stream(g->cap, false);
    cu->StreamDestroy(g->cap);
  }
  free(g->sig);
  free(g);
}

static void entry_release(graph_entry* en) {
  rec_destroy(en->copy);
  en->copy = NULL;
  for (uint32_t i = 0; i < en->n_direct; i++) rec_destroy(en->direct[i]);
  en->n_direct = 0;
}

/* Records a graph: over a static frame (inputs NULL) or over the caller's
 * buffers. *out NULL on failure (the status says why). */
static ptc_status record(cuda_graphs* t, const ptc_tensor* inputs, size_t n_in,
                         const ptc_tensor* outputs, size_t n_out, const int64_t* syms,
                         size_t n_syms, uint64_t seed, graph_rec** out) {
  const cu_api* cu = &cuda_libs_get()->cu;
  graph_rec* g = calloc(1, sizeof *g);
  if (!g) return ptc_status_oom();
  *out = NULL;
  ptc_status s = cu->StreamCreate(&g->cap, CU_STREAM_NON_BLOCKING) == CU_SUCCESS
                     ? PTC_OK
                     : PTC_ERR(INTERNAL, "cuda backend: creating the capture stream failed");
  if (!s) s = cuda_alloc_hold_stream(g->cap, true);
  if (!s)
    s = cuda_frame_open(t->plan, inputs, n_in, outputs, n_out, syms, n_syms, seed, g->cap,
                        &g->frame);
  if (!s) {
    cu_result r = cu->StreamBeginCapture(g->cap, CU_CAPTURE_MODE_RELAXED);
    if (r != CU_SUCCESS) s = cuda_error(r, "cuStreamBeginCapture");
  }
  if (!s) {
    s = cuda_frame_exec(g->frame, g->cap);
    cu_result r = cu->StreamEndCapture(g->cap, &g->graph);
    if (!s && r != CU_SUCCESS) s = cuda_error(r, "cuStreamEndCapture");
    if (!s && !g->graph) s = PTC_ERR(INTERNAL, "cuda backend: the capture gave no graph");
  }
  if (!s) {
    cu_result r = cu->GraphInstantiateWithFlags(&g->exec, g->graph, 0);
    if (r != CU_SUCCESS) s = cuda_error(r, "cuGraphInstantiateWithFlags");
  }
  if (s) {
    rec_destroy(g);
    return s;
  }
  t->recorded++;
  *out = g;
  return PTC_OK;
}

/* Launches g on stream; a launch on another stream than the last one waits
 * for the device first (the graph's memory is shared between launches; the
 * last stream may be gone by now). */
static ptc_status launch(graph_rec* g, cu_stream stream) {
  const cu_api* cu = &cuda_libs_get()->cu;
  if (g->launched && g->last != stream)
    CUDA_TRY(cu->CtxSynchronize(), "waiting for the previous graph replay");
  CUDA_TRY(cu->GraphLaunch(g->exec, stream), "cuGraphLaunch");
  g->launched = true;
  g->last = stream;
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

/* Replays the static-copy graph: inputs copied in, one launch, outputs
 * copied out. */
static ptc_status replay_copy(cuda_graphs* t, graph_rec* en, const ptc_tensor* inputs, size_t n_in,
                              const ptc_tensor* outputs, size_t n_out, cu_stream stream) {
  const cuda_plan* plan = t->plan;
  if (en->launched && en->last != stream)
    CUDA_TRY(cuda_libs_get()->cu.CtxSynchronize(), "waiting for the previous graph replay");
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
  PTC_TRY(launch(en, stream));
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

/* The call's buffers: per input and output its address and strides
 * (contiguous ones spelled out), written into sig[t->n_sig]. */
static size_t sig_len(const cuda_plan* plan, const ptc_tensor* in, size_t n_in,
                      const ptc_tensor* out, size_t n_out) {
  size_t n = 0;
  for (size_t i = 0; i < n_in; i++) n += 1 + (size_t)in[i].ndim;
  for (size_t j = 0; j < n_out; j++) n += 1 + (size_t)out[j].ndim;
  (void)plan;
  return n;
}

static void sig_put(const ptc_tensor* v, int64_t* sig, size_t* k) {
  sig[(*k)++] = (int64_t)((uintptr_t)v->data + v->byte_offset);
  int64_t st[PTC_MAX_RANK];
  if (v->strides)
    memcpy(st, v->strides, (size_t)v->ndim * sizeof *st);
  else
    contiguous_strides(v->ndim, v->shape, st);
  for (int32_t d = 0; d < v->ndim; d++) sig[(*k)++] = v->shape[d] > 1 ? st[d] : 0;
}

static void sig_make(const ptc_tensor* in, size_t n_in, const ptc_tensor* out, size_t n_out,
                     int64_t* sig) {
  size_t k = 0;
  for (size_t i = 0; i < n_in; i++) sig_put(&in[i], sig, &k);
  for (size_t j = 0; j < n_out; j++) sig_put(&out[j], sig, &k);
}

static ptc_status run_locked(cuda_graphs* t, const ptc_tensor* inputs, size_t n_in,
                             const ptc_tensor* outputs, size_t n_out, const int64_t* syms,
                             size_t n_syms, uint64_t seed, cu_stream stream, bool* done) {
  const cuda_plan* plan = t->plan;
  if (n_in != plan->p->graph->inputs.len || n_out != plan->p->n_outputs) return PTC_OK; /* plain reports it */
  if (!t->have_n_key) {
    t->n_key = n_syms;
    t->n_sig = sig_len(plan, inputs, n_in, outputs, n_out);
    t->have_n_key = true;
  }
  if (n_syms != t->n_key || sig_len(plan, inputs, n_in, outputs, n_out) != t->n_sig)
    return PTC_OK; /* not expected: plain */
  int64_t sig_small[64];
  int64_t* sig = t->n_sig <= 64 ? sig_small : calloc(t->n_sig, sizeof *sig);
  if (!sig) return ptc_status_oom();
  sig_make(inputs, n_in, outputs, n_out, sig);
  size_t sig_bytes = t->n_sig * sizeof *sig;
  ptc_status s = PTC_OK;
  graph_entry* en = find(t, syms);
  if (!en) {
    if (t->n >= CUDA_GRAPH_CAP) {
      if (!t->cap_logged)
        ptc_log(plan->ctx, PTC_LOG_INFO,
                "cuda backend: %d shapes have CUDA graphs already; further shapes run plainly",
                CUDA_GRAPH_CAP);
      t->cap_logged = true;
      goto out;
    }
    en = &t->e[t->n];
    memset(en, 0, sizeof *en);
    en->key = calloc(n_syms + 1, sizeof *en->key);
    en->prev_sig = calloc(t->n_sig + 1, sizeof *en->prev_sig);
    if (!en->key || !en->prev_sig) {
      free(en->key);
      free(en->prev_sig);
      s = ptc_status_oom();
      goto out;
    }
    if (n_syms) memcpy(en->key, syms, n_syms * sizeof *syms);
    memcpy(en->prev_sig, sig, sig_bytes);
    en->state = KEY_SEEN;
    t->n++;
    goto out; /* the warm-up call runs plainly */
  }
  if (en->state == KEY_FAILED) goto out;
  en->state = KEY_RECORDED;
  /* 1. a direct graph on exactly these buffers */
  for (uint32_t i = 0; i < en->n_direct; i++)
    if (memcmp(en->direct[i]->sig, sig, sig_bytes) == 0) {
      *done = true;
      t->replays++;
      s = launch(en->direct[i], stream);
      if (!s) s = cuda_frame_check(en->direct[i]->frame, stream);
      goto out;
    }
  /* 2. the same buffers as the previous call: record one */
  if (!en->no_direct && en->n_direct < CUDA_GRAPH_DIRECT &&
      memcmp(en->prev_sig, sig, sig_bytes) == 0) {
    graph_rec* g = NULL;
    ptc_status r = record(t, inputs, n_in, outputs, n_out, syms, n_syms, seed, &g);
    if (!r) r = (g->sig = malloc(sig_bytes + 1)) ? PTC_OK : ptc_status_oom();
    if (r) {
      ptc_log(plan->ctx, PTC_LOG_INFO,
              "cuda backend: recording a CUDA graph on the caller's buffers failed (copies "
              "from now on for this shape): %s", ptc_status_message(r));
      ptc_status_destroy(r);
      rec_destroy(g);
      en->no_direct = true;
    } else {
      memcpy(g->sig, sig, sig_bytes);
      en->direct[en->n_direct++] = g;
      t->direct++;
      *done = true;
      t->replays++;
      s = launch(g, stream);
      if (!s) s = cuda_frame_check(g->frame, stream);
      goto out;
    }
  }
  memcpy(en->prev_sig, sig, sig_bytes);
  /* 3. the static-copy graph */
  if (!en->copy) {
    ptc_status r = record(t, NULL, 0, NULL, 0, syms, n_syms, seed, &en->copy);
    if (r) {
      ptc_log(plan->ctx, PTC_LOG_INFO,
              "cuda backend: recording a CUDA graph failed (this shape runs plainly): %s",
              ptc_status_message(r));
      ptc_status_destroy(r);
      en->state = KEY_FAILED;
      t->failures++;
      goto out;
    }
  }
  *done = true;
  t->replays++;
  s = replay_copy(t, en->copy, inputs, n_in, outputs, n_out, stream);
out:
  if (sig != sig_small) free(sig);
  return s;
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
    ptc_sb_printf(sb, "graph mode (%s): on, %llu CUDA graphs recorded (%llu on caller buffers; "
                  "cap %d shapes), %llu replays, %llu plain runs, %llu failed recordings\n",
                  t->mode, (unsigned long long)t->recorded, (unsigned long long)t->direct,
                  CUDA_GRAPH_CAP, (unsigned long long)t->replays,
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
  for (uint32_t i = 0; i < t->n; i++) any = any || t->e[i].copy || t->e[i].n_direct;
  cu_context prev = NULL;
  ptc_status s = any ? cuda_ctx_enter(t->plan->dev, &prev) : NULL;
  if (any && !s) {
    cuda_libs_get()->cu.CtxSynchronize(); /* a replay may still be queued */
    for (uint32_t i = 0; i < t->n; i++) entry_release(&t->e[i]);
    cuda_ctx_leave(t->plan->dev, prev);
  }
  ptc_status_destroy(s); /* without the context the graphs are leaked, never freed under the device */
  for (uint32_t i = 0; i < t->n; i++) {
    free(t->e[i].key);
    free(t->e[i].prev_sig);
  }
  pthread_mutex_destroy(&t->lock);
  free(t);
}
