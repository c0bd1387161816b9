/* compile.c - ptc_compile and executables: snapshot the graph, hand it to a
 * backend, and run it with input checking and optional output allocation
 * (host memory from the context's allocator, or device memory from a device
 * backend's allocator; the run's stream comes from the run options). */
#include "backend.h"
#include "pass_conv_bn.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ptc_executable {
  _Atomic long refs;
  ptc_context* ctx;
  ptc_graph* graph; /* immutable snapshot */
  const backend_vtable* backend;
  void* state;
};

struct ptc_results {
  ptc_context* ctx;
  const backend_vtable* device; /* non-NULL: tensors are this backend's device memory */
  size_t n;
  ptc_tensor* t;
  int64_t* dims; /* shape storage for all tensors */
  size_t* bytes;
};

void ptc_compile_options_init(ptc_compile_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->backend = "ref";
  o->mode = "default";
}

void ptc_run_options_init(ptc_run_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
}

static bool one_of(const char* v, const char* const* names) {
  for (; *names; names++)
    if (!strcmp(v, *names)) return true;
  return false;
}

/* The mode and precision strings, checked here for every backend. */
static ptc_status check_mode_options(const ptc_compile_options* o) {
  static const char* const modes[] = {"default", "reduce-overhead", "max-autotune",
                                      "max-autotune-no-cudagraphs", NULL};
  static const char* const precisions[] = {"highest", "high", "medium", NULL};
  if (o->mode && !one_of(o->mode, modes))
    return PTC_ERR(INVALID_ARGUMENT,
                   "ptc_compile: unknown mode '%s' (default, reduce-overhead, max-autotune, "
                   "max-autotune-no-cudagraphs)", o->mode);
  if (o->matmul_precision && !one_of(o->matmul_precision, precisions))
    return PTC_ERR(INVALID_ARGUMENT,
                   "ptc_compile: unknown matmul_precision '%s' (highest, high, medium)",
                   o->matmul_precision);
  if (o->conv_precision && !one_of(o->conv_precision, precisions))
    return PTC_ERR(INVALID_ARGUMENT,
                   "ptc_compile: unknown conv_precision '%s' (highest, high, medium)",
                   o->conv_precision);
  return PTC_OK;
}

static ptc_status dump_debug(const ptc_graph* g, const char* dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s/graph.txt", dir);
  FILE* f = fopen(path, "w");
  if (!f) return PTC_ERR(UNKNOWN, "debug_dir: cannot write %s", path);
  ptc_status s = ptc_graph_print(g, f);
  if (fclose(f) != 0 && !s) s = PTC_ERR(UNKNOWN, "debug_dir: error writing %s", path);
  return s;
}

ptc_status ptc_compile(ptc_context* ctx, const ptc_graph* g, const ptc_compile_options* opts,
                       ptc_executable** out) {
  if (!ctx || !g || !out) return PTC_ERR(INVALID_ARGUMENT, "ptc_compile: NULL argument");
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  if (opts) {
    if (opts->struct_size < offsetof(ptc_compile_options, debug_dir) + sizeof(char*))
      return PTC_ERR(INVALID_ARGUMENT, "ptc_compile: options struct_size too small");
    memcpy(&o, opts, opts->struct_size < sizeof o ? opts->struct_size : sizeof o);
  }
  const char* bname = o.backend ? o.backend : "ref";
  const backend_vtable* b = backend_find(bname);
  if (!b) return PTC_ERR(NOT_FOUND, "ptc_compile: unknown backend '%s'", bname);
  const char* why = b->unavailable_reason ? b->unavailable_reason() : NULL;
  if (why) return PTC_ERR(UNAVAILABLE, "ptc_compile: backend '%s' is not available: %s", bname, why);
  PTC_TRY(check_mode_options(&o));
  if (g->outputs.len == 0) return PTC_ERR(INVALID_ARGUMENT, "ptc_compile: the graph has no outputs");
  if (!o.debug_dir) o.debug_dir = getenv("PTC_DEBUG_DIR");
  if (o.debug_dir && *o.debug_dir) {
    mkdir(o.debug_dir, 0777); /* may exist already; the dump reports real failures */
    PTC_TRY(dump_debug(g, o.debug_dir));
  } else {
    o.debug_dir = NULL;
  }
  if (o.n_dynamic_dims && !o.dynamic_dims)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_compile: dynamic_dims is NULL");
  ptc_executable* e = calloc(1, sizeof *e);
  if (!e) return ptc_status_oom();
  ptc_status s = o.n_dynamic_dims
                     ? graph_make_dynamic(g, o.dynamic_dims, o.n_dynamic_dims, &e->graph)
                     : graph_clone(g, &e->graph);
  if (!s) s = pass_conv_bn(&e->graph, pass_conv_bn_mode(bname, &o), NULL);
  if (!s) s = b->prepare(ctx, e->graph, &o, &e->state);
  if (s) {
    ptc_graph_destroy(e->graph);
    free(e);
    return s;
  }
  atomic_init(&e->refs, 1);
  e->ctx = ptc_context_retain(ctx);
  e->backend = b;
  ptc_log(ctx, PTC_LOG_INFO, "compiled %zu nodes for backend %s", g->nodes.len, b->name);
  *out = e;
  return PTC_OK;
}

ptc_executable* ptc_executable_retain(ptc_executable* e) {
  if (e) atomic_fetch_add(&e->refs, 1);
  return e;
}

void ptc_executable_release(ptc_executable* e) {
  if (!e || atomic_fetch_sub(&e->refs, 1) != 1) return;
  e->backend->destroy(e->state);
  ptc_graph_destroy(e->graph);
  ptc_context_release(e->ctx);
  free(e);
}

ptc_status ptc_executable_format(const ptc_executable* e, char* buf, size_t cap, size_t* needed) {
  if (!e) return PTC_ERR(INVALID_ARGUMENT, "ptc_executable_format: NULL executable");
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  ptc_sb_printf(&sb, "executable: backend %s, %zu inputs, %zu outputs, %zu graph nodes\n",
                e->backend->name, e->graph->inputs.len, e->graph->outputs.len, e->graph->nodes.len);
  if (e->backend->describe) e->backend->describe(e->state, e->graph, &sb);
  if (sb.oom) {
    ptc_sb_free(&sb);
    return ptc_status_oom();
  }
  size_t n = ptc_copy_out(sb.data ? sb.data : "", buf, cap);
  ptc_sb_free(&sb);
  if (needed) *needed = n;
  if (n + 1 > cap)
    return PTC_ERR(OUT_OF_RANGE, "ptc_executable_format: %zu bytes needed", n + 1);
  return PTC_OK;
}

size_t ptc_executable_num_kernels(const ptc_executable* e) {
  if (!e) return 0;
  return e->backend->num_kernels ? e->backend->num_kernels(e->state, e->graph) : 0;
}

size_t ptc_executable_num_inputs(const ptc_executable* e) { return e ? e->graph->inputs.len : 0; }
size_t ptc_executable_num_outputs(const ptc_executable* e) { return e ? e->graph->outputs.len : 0; }

typedef struct run_opts {
  uint64_t seed;
  void* stream;
  uint32_t flags; /* BACKEND_RUN_* */
} run_opts;

/* Reads the fields the caller's struct_size covers (older callers pass a
 * smaller struct: later fields keep their defaults). */
static ptc_status read_run_options(const ptc_run_options* opts, run_opts* r) {
  r->seed = 0;
  r->stream = NULL;
  r->flags = 0;
  if (!opts) return PTC_OK;
  if (opts->struct_size < offsetof(ptc_run_options, seed) + sizeof(uint64_t))
    return PTC_ERR(INVALID_ARGUMENT, "run options struct_size too small");
  r->seed = opts->seed;
  if (opts->struct_size >= offsetof(ptc_run_options, stream) + sizeof(void*))
    r->stream = opts->stream;
  if (opts->struct_size >= offsetof(ptc_run_options, deferred_errors) + sizeof(uint32_t) &&
      opts->deferred_errors)
    r->flags |= BACKEND_RUN_DEFERRED_ERRORS;
  return PTC_OK;
}

static ptc_status backend_run(const ptc_executable* e, const ptc_tensor* in, size_t n_in,
                              const ptc_tensor* out, size_t n_out, const int64_t* vals,
                              size_t n_syms, const run_opts* ro) {
  const backend_vtable* b = e->backend;
  if (b->run_stream)
    return b->run_stream(e->state, e->graph, in, n_in, out, n_out, vals, n_syms, ro->seed,
                         ro->stream, ro->flags);
  return b->run(e->state, e->graph, in, n_in, out, n_out, vals, n_syms, ro->seed);
}

/* Binds inputs; returns malloc'ed symbol values in *vals. */
static ptc_status bind(const ptc_executable* e, const ptc_tensor* in, size_t n_in,
                       int64_t** vals, size_t* n_syms) {
  *n_syms = sym_num_vars(e->graph->env);
  *vals = calloc(*n_syms + 1, sizeof **vals);
  if (!*vals) return ptc_status_oom();
  ptc_status s = runtime_bind_inputs_on(e->graph, backend_device_type(e->backend),
                                        e->backend->name, in, n_in, *vals, *n_syms);
  if (s) {
    free(*vals);
    *vals = NULL;
  }
  return s;
}

static ptc_status check_outputs(const ptc_executable* e, const ptc_tensor* out, size_t n_out,
                                const int64_t* vals, size_t n_syms) {
  const ptc_graph* g = e->graph;
  if (n_out != g->outputs.len)
    return PTC_ERR(INVALID_ARGUMENT, "expected %zu outputs, got %zu", g->outputs.len, n_out);
  if (n_out && !out) return PTC_ERR(INVALID_ARGUMENT, "outputs is NULL");
  for (size_t i = 0; i < n_out; i++) {
    ptc_value v = PTC_VEC_AT(&g->outputs, ptc_value, i);
    const gvalue* gv = graph_value(g, v);
    int64_t shape[PTC_MAX_RANK];
    PTC_TRY(runtime_value_shape(g, v, vals, n_syms, shape));
    const ptc_tensor* t = &out[i];
    int32_t want_dev = backend_device_type(e->backend);
    if (t->device.device_type != want_dev) {
      char got[32];
      snprintf(got, sizeof got, "%s", runtime_device_name(t->device.device_type));
      return PTC_ERR(INVALID_ARGUMENT, "output %zu: tensor on %s, but backend '%s' runs on %s "
                     "tensors", i, got, e->backend->name, runtime_device_name(want_dev));
    }
    if (ptc_dtype_from_dl(t->dtype) != gv->dtype)
      return PTC_ERR(INVALID_ARGUMENT, "output %zu: expected dtype %s", i, ptc_dtype_name(gv->dtype));
    if (t->ndim < 0 || (uint32_t)t->ndim != gv->rank || (t->ndim && !t->shape))
      return PTC_ERR(INVALID_ARGUMENT, "output %zu: expected rank %u, got %d", i, gv->rank,
                     (int)t->ndim);
    int64_t numel = 1;
    for (uint32_t d = 0; d < gv->rank; d++) {
      if (t->shape[d] != shape[d])
        return PTC_ERR(INVALID_ARGUMENT, "output %zu dim %u: expected %lld, got %lld", i, d,
                       (long long)shape[d], (long long)t->shape[d]);
      numel *= shape[d];
    }
    if (!t->data && numel > 0) return PTC_ERR(INVALID_ARGUMENT, "output %zu: data is NULL", i);
  }
  return PTC_OK;
}

ptc_status ptc_executable_run(const ptc_executable* e, const ptc_tensor* inputs, size_t n_in,
                              const ptc_tensor* outputs, size_t n_out, const ptc_run_options* opts) {
  if (!e) return PTC_ERR(INVALID_ARGUMENT, "ptc_executable_run: NULL executable");
  run_opts ro;
  PTC_TRY(read_run_options(opts, &ro));
  int64_t* vals;
  size_t n_syms;
  PTC_TRY(bind(e, inputs, n_in, &vals, &n_syms));
  ptc_status s = check_outputs(e, outputs, n_out, vals, n_syms);
  if (!s) s = backend_run(e, inputs, n_in, outputs, n_out, vals, n_syms, &ro);
  free(vals);
  return s;
}

ptc_status ptc_executable_infer_outputs(const ptc_executable* e, const ptc_tensor* inputs,
                                        size_t n_in, ptc_tensor* outputs, size_t n_out) {
  if (!e) return PTC_ERR(INVALID_ARGUMENT, "ptc_executable_infer_outputs: NULL executable");
  const ptc_graph* g = e->graph;
  if (n_out != g->outputs.len)
    return PTC_ERR(INVALID_ARGUMENT, "expected %zu outputs, got %zu", g->outputs.len, n_out);
  if (n_out && !outputs) return PTC_ERR(INVALID_ARGUMENT, "outputs is NULL");
  for (size_t i = 0; i < n_out; i++)
    if (!outputs[i].shape)
      return PTC_ERR(INVALID_ARGUMENT, "output %zu: shape must point at PTC_MAX_RANK sizes", i);
  int64_t* vals;
  size_t n_syms;
  PTC_TRY(bind(e, inputs, n_in, &vals, &n_syms));
  ptc_status s = PTC_OK;
  for (size_t i = 0; !s && i < n_out; i++) {
    ptc_value v = PTC_VEC_AT(&g->outputs, ptc_value, i);
    const gvalue* gv = graph_value(g, v);
    s = runtime_value_shape(g, v, vals, n_syms, outputs[i].shape);
    outputs[i].ndim = (int32_t)gv->rank;
    outputs[i].dtype = ptc_dtype_to_dl(gv->dtype);
    outputs[i].device.device_type = backend_device_type(e->backend);
    outputs[i].device.device_id = 0;
  }
  free(vals);
  return s;
}

void ptc_results_destroy(ptc_results* r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) {
    if (!r->device)
      ptc_free_ctx(r->ctx, r->t[i].data, r->bytes[i], 64);
    else if (r->t[i].data)
      r->device->free(r->t[i].data);
  }
  ptc_context_release(r->ctx);
  free(r->t);
  free(r->dims);
  free(r->bytes);
  free(r);
}

/* Memory of one output: the context's allocator (64 bytes of slack), or the
 * device backend's (none for empty outputs). */
static ptc_status alloc_one(const ptc_executable* e, ptc_results* r, size_t i, int64_t bytes,
                            void* stream) {
  ptc_tensor* t = &r->t[i];
  if (r->device) {
    r->bytes[i] = (size_t)bytes;
    return bytes > 0 ? r->device->alloc((size_t)bytes, stream, &t->data) : PTC_OK;
  }
  r->bytes[i] = (size_t)bytes + 64;
  t->data = ptc_alloc_ctx(e->ctx, r->bytes[i], 64);
  if (!t->data)
    return PTC_ERR(RESOURCE_EXHAUSTED, "out of memory for output %zu (%lld bytes)", i,
                   (long long)bytes);
  return PTC_OK;
}

static ptc_status alloc_results(const ptc_executable* e, const int64_t* vals, size_t n_syms,
                                void* stream, ptc_results** out) {
  const ptc_graph* g = e->graph;
  size_t n = g->outputs.len;
  ptc_results* r = calloc(1, sizeof *r);
  if (!r) return ptc_status_oom();
  r->ctx = ptc_context_retain(e->ctx);
  r->device = e->backend->alloc && e->backend->free ? e->backend : NULL;
  r->t = calloc(n + 1, sizeof *r->t);
  r->dims = calloc(n * PTC_MAX_RANK + 1, sizeof *r->dims);
  r->bytes = calloc(n + 1, sizeof *r->bytes);
  if (!r->t || !r->dims || !r->bytes) {
    ptc_results_destroy(r);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < n; i++) {
    ptc_value v = PTC_VEC_AT(&g->outputs, ptc_value, i);
    const gvalue* gv = graph_value(g, v);
    int64_t* shape = r->dims + i * PTC_MAX_RANK;
    ptc_status s = runtime_value_shape(g, v, vals, n_syms, shape);
    int64_t numel = 1, bytes = 0;
    for (uint32_t d = 0; !s && d < gv->rank; d++)
      if (!ptc_mul_ok(numel, shape[d], &numel)) s = PTC_ERR(RESOURCE_EXHAUSTED, "output too large");
    if (!s && !ptc_mul_ok(numel, (int64_t)ptc_dtype_size(gv->dtype), &bytes))
      s = PTC_ERR(RESOURCE_EXHAUSTED, "output too large");
    ptc_tensor* t = &r->t[i];
    if (!s) s = alloc_one(e, r, i, bytes, stream);
    if (s) {
      r->n = i;
      ptc_results_destroy(r);
      return s;
    }
    r->n = i + 1;
    t->device.device_type = backend_device_type(e->backend);
    t->ndim = (int32_t)gv->rank;
    t->dtype = ptc_dtype_to_dl(gv->dtype);
    t->shape = shape;
    t->strides = NULL;
  }
  *out = r;
  return PTC_OK;
}

ptc_status ptc_executable_run_alloc(const ptc_executable* e, const ptc_tensor* inputs, size_t n_in,
                                    const ptc_run_options* opts, ptc_results** out) {
  if (!e || !out) return PTC_ERR(INVALID_ARGUMENT, "ptc_executable_run_alloc: NULL argument");
  run_opts ro;
  PTC_TRY(read_run_options(opts, &ro));
  int64_t* vals;
  size_t n_syms;
  PTC_TRY(bind(e, inputs, n_in, &vals, &n_syms));
  ptc_results* r = NULL;
  ptc_status s = alloc_results(e, vals, n_syms, ro.stream, &r);
  if (!s) s = backend_run(e, inputs, n_in, r->t, r->n, vals, n_syms, &ro);
  free(vals);
  if (s) {
    ptc_results_destroy(r);
    return s;
  }
  *out = r;
  return PTC_OK;
}

size_t ptc_results_count(const ptc_results* r) { return r ? r->n : 0; }

const ptc_tensor* ptc_results_get(const ptc_results* r, size_t i) {
  return r && i < r->n ? &r->t[i] : NULL;
}
