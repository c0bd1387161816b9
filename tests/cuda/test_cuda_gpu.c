/* test_cuda_gpu.c - the cuda backend on a GPU (skipped, exit 77, where the
 * backend is unavailable; the reason is printed):
 *  - random graphs (tests/randgraph.h) compiled for "cuda" and "ref", run on
 *    the same inputs (uploaded to the device, strided ones with their
 *    strides; dynamic graphs at every size set) and compared with the
 *    generator's error model; every tenth graph also unfused;
 *  - every PyTorch op case of the given tests/data/ops_*.json files, run on
 *    the device and compared with PyTorch's outputs;
 *  - API checks: a run on a caller-created stream (outputs read after
 *    synchronising it), caller-provided device outputs with strides, device
 *    mismatches reported as INVALID_ARGUMENT, and an out-of-range gather
 *    index reported by the kernel;
 *  - CUDA-graph mode (mode "reduce-overhead"): random graphs at every size
 *    set, three calls each with new input values, alternating a caller
 *    stream and the NULL stream, against ref and against the plain mode;
 *    a dynamic graph over 12 batch sizes (shape changes and the 8-graph
 *    cap, counted in the executable's description), different caller
 *    output buffers every call (one with strides), the kernel error flag
 *    through a replayed graph, and the per-call host time of both modes.
 * Work is spread over threads (graphs compile and run concurrently, which
 * also exercises the thread-safety of executables and the allocator).
 *
 * Usage: test_cuda_gpu [--seeds N] [--first N] [--threads N] [CASES.json...]
 * Exit status: 0 all passed, 1 a failure, 77 no usable device.
 */
#include "backends/cuda/cuda_rt.h"
#include "tests/case_load.h"
#include "tests/randgraph.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_THREADS = 32, MAX_PRINTED = 12 };

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned passed, failed, printed;
static ptc_context* ctx;
static const cuda_device* dev;

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

static void fail(const char* fmt, const char* a, const char* b) {
  atomic_fetch_add(&failed, 1);
  if (atomic_fetch_add(&printed, 1) >= MAX_PRINTED) return;
  pthread_mutex_lock(&out_lock);
  printf(fmt, a, b ? b : "");
  printf("\n");
  pthread_mutex_unlock(&out_lock);
}

static char* status_text(ptc_status s) {
  const char* log = ptc_status_detail(s, "compiler_log");
  size_t n = strlen(ptc_status_message(s)) + (log ? strlen(log) : 0) + 64;
  char* t = malloc(n);
  if (t) snprintf(t, n, "%s: %s%s%s", ptc_code_name(ptc_status_code(s)), ptc_status_message(s),
                  log ? "\n" : "", log ? log : "");
  return t;
}

/* ---- device copies ------------------------------------------------------------------- */

static int64_t numel_of(const ptc_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

static size_t storage_bytes(const ptc_tensor* t) {
  int64_t e = 1;
  for (int32_t d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 0) return 0;
    int64_t st = t->strides ? t->strides[d] : 1;
    if (!t->strides) {
      st = 1;
      for (int32_t j = d + 1; j < t->ndim; j++) st *= t->shape[j];
    }
    e += (t->shape[d] - 1) * st;
  }
  return (size_t)e * ptc_dtype_size(ptc_dtype_from_dl(t->dtype));
}

/* A device copy of host tensor h (same shape and strides). */
static bool upload(const ptc_tensor* h, ptc_tensor* d) {
  *d = *h;
  d->device.device_type = PTC_DEVICE_CUDA;
  d->device.device_id = 0;
  d->byte_offset = 0;
  size_t bytes = storage_bytes(h);
  cu_deviceptr p = 0;
  ptc_status s = cuda_alloc(bytes, NULL, &p);
  if (!s && bytes)
    s = cu()->MemcpyHtoDAsync(p, (const char*)h->data + h->byte_offset, bytes, NULL) == CU_SUCCESS &&
                cu()->StreamSynchronize(NULL) == CU_SUCCESS
            ? PTC_OK
            : PTC_ERR(INTERNAL, "upload failed");
  d->data = (void*)(uintptr_t)p;
  bool ok = !s;
  ptc_status_destroy(s);
  return ok;
}

static void free_dev(ptc_tensor* d) { cuda_free((cu_deviceptr)(uintptr_t)d->data); }

static bool download(const ptc_tensor* d, void* host, cu_stream stream) {
  size_t bytes = storage_bytes(d);
  if (!bytes) return true;
  return cu()->MemcpyDtoHAsync(host, (cu_deviceptr)(uintptr_t)d->data + d->byte_offset, bytes,
                               stream) == CU_SUCCESS &&
         cu()->StreamSynchronize(stream) == CU_SUCCESS;
}

static ptc_status compile_mode(const ptc_graph* g, const char* backend, bool nofuse,
                               const char* mode, ptc_executable** e) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  o.disable_fusion = nofuse;
  o.mode = mode;
  return ptc_compile(ctx, g, &o, e);
}

static ptc_status compile(const ptc_graph* g, const char* backend, bool nofuse, ptc_executable** e) {
  return compile_mode(g, backend, nofuse, NULL, e);
}

/* ---- random graphs -------------------------------------------------------------------- */

/* Runs exe (cuda) on rg's inputs of size set k; the results land in `into`
 * (a ref results object of the same shapes, overwritten). */
static bool run_cuda_into_on(const ptc_executable* exe, const rg_inputs* in, ptc_results* into,
                             cu_stream stream, char** err) {
  ptc_tensor dev_in[RG_MAX_INPUTS];
  uint32_t n_up = 0;
  bool ok = true;
  for (; n_up < in->n && ok; n_up++) ok = upload(&in->t[n_up], &dev_in[n_up]);
  if (!ok) n_up--;
  ptc_results* r = NULL;
  ptc_run_options ro;
  ptc_run_options_init(&ro);
  ro.stream = stream;
  ptc_status s = ok ? ptc_executable_run_alloc(exe, dev_in, in->n, &ro, &r)
                    : PTC_ERR(INTERNAL, "input upload failed");
  if (s) {
    *err = status_text(s);
    ok = false;
  }
  for (size_t i = 0; ok && i < ptc_results_count(r); i++) {
    const ptc_tensor* t = ptc_results_get(r, i);
    const ptc_tensor* h = ptc_results_get(into, i);
    ok = t->device.device_type == PTC_DEVICE_CUDA && h && numel_of(t) == numel_of(h) &&
         download(t, h->data, stream);
    if (!ok) *err = strdup("output download failed or device type wrong");
  }
  ptc_status_destroy(s);
  ptc_results_destroy(r);
  if (stream) cu()->StreamSynchronize(stream); /* the inputs are freed on the NULL stream's cache */
  for (uint32_t i = 0; i < n_up; i++) free_dev(&dev_in[i]);
  return ok;
}

static bool run_cuda_into(const ptc_executable* exe, const rg_inputs* in, ptc_results* into,
                          char** err) {
  return run_cuda_into_on(exe, in, into, NULL, err);
}

static void check_variant(const rg_graph* rg, const ptc_executable* eb, bool nofuse) {
  char label[64];
  snprintf(label, sizeof label, "seed %llu%s", (unsigned long long)rg->seed, nofuse ? " (unfused)" : "");
  ptc_executable* ea = NULL;
  ptc_status s = compile(rg->g, "cuda", nofuse, &ea);
  if (s) {
    char* t = status_text(s);
    fail("FAIL %s: cuda compile: %s", label, t);
    free(t);
    ptc_status_destroy(s);
    return;
  }
  for (uint32_t k = 0; k < rg_num_runs(rg); k++) {
    int64_t sizes[RG_MAX_SYMS];
    rg_run_sizes(rg, k, sizes);
    rg_inputs in;
    if (!rg_inputs_make(rg, sizes, rg->seed * 31 + k, &in)) {
      fail("FAIL %s: inputs%s", label, NULL);
      continue;
    }
    ptc_results *rb = NULL, *ra = NULL;
    ptc_status sb = ptc_executable_run_alloc(eb, in.t, in.n, NULL, &rb);
    ptc_status sa = sb ? NULL : ptc_executable_run_alloc(eb, in.t, in.n, NULL, &ra);
    if (sb && k > 0 && ptc_status_code(sb) == PTC_CODE_INVALID_ARGUMENT) {
      /* these sizes break a guard of the graph itself */
    } else if (sb || sa) {
      fail("FAIL %s: the ref backend failed: %s", label, ptc_status_message(sb ? sb : sa));
    } else {
      char* err = NULL;
      char msg[4096];
      if (!run_cuda_into(ea, &in, ra, &err)) {
        fail("FAIL %s: cuda run: %s", label, err);
      } else if (rg_compare(rg, ra, rb, msg, sizeof msg) != 0) {
        fail("FAIL %s: outputs differ: %s", label, msg);
      } else {
        atomic_fetch_add(&passed, 1);
      }
      free(err);
    }
    ptc_status_destroy(sa);
    ptc_status_destroy(sb);
    ptc_results_destroy(ra);
    ptc_results_destroy(rb);
    rg_inputs_free(&in);
  }
  ptc_executable_release(ea);
}

static void check_seed(uint64_t seed) {
  rg_options o;
  rg_options_init(&o, seed);
  rg_graph rg;
  ptc_status s = rg_generate(ctx, &o, &rg);
  if (s) {
    fail("FAIL seed: generator: %s%s", ptc_status_message(s), NULL);
    ptc_status_destroy(s);
    return;
  }
  ptc_executable* eb = NULL;
  s = compile(rg.g, "ref", false, &eb);
  if (s) {
    fail("FAIL: ref compile: %s%s", ptc_status_message(s), NULL);
    ptc_status_destroy(s);
  } else {
    check_variant(&rg, eb, false);
    if (seed % 10 == 0) check_variant(&rg, eb, true);
  }
  ptc_executable_release(eb);
  rg_graph_free(&rg);
}

/* ---- op cases ------------------------------------------------------------------------------- */

static void check_case(const cJSON* c) {
  op_case oc;
  ptc_status s = case_build(ctx, c, &oc);
  if (s) {
    fail("FAIL %s: building: %s", case_name(c), ptc_status_message(s));
    ptc_status_destroy(s);
    return;
  }
  ptc_executable* exe = NULL;
  s = compile(oc.graph, "cuda", false, &exe);
  ptc_tensor din[64];
  size_t n_up = 0;
  bool ok = !s && oc.n_inputs <= 64;
  for (; ok && n_up < oc.n_inputs; n_up++) ok = upload(&oc.inputs[n_up], &din[n_up]);
  if (!ok && !s) s = PTC_ERR(INTERNAL, "upload failed");
  ptc_results* r = NULL;
  if (!s) s = ptc_executable_run_alloc(exe, din, oc.n_inputs, NULL, &r);
  if (s) {
    char* t = status_text(s);
    fail("FAIL %s: %s", oc.name, t);
    free(t);
  } else {
    bool good = true;
    for (size_t k = 0; good && k < oc.n_outputs; k++) {
      const ptc_tensor* t = ptc_results_get(r, k);
      good = download(t, oc.outputs[k].data, NULL);
      ptc_tensor h = *t;
      h.data = oc.outputs[k].data;
      h.device.device_type = PTC_DEVICE_CPU;
      pthread_mutex_lock(&out_lock);
      good = good && case_compare(&oc, k, &h);
      pthread_mutex_unlock(&out_lock);
    }
    if (good)
      atomic_fetch_add(&passed, 1);
    else
      fail("FAIL %s: outputs differ from PyTorch's (above)%s", oc.name, NULL);
  }
  ptc_status_destroy(s);
  ptc_results_destroy(r);
  for (size_t i = 0; i < n_up; i++) free_dev(&din[i]);
  ptc_executable_release(exe);
  case_free(&oc);
}

/* ---- work queue ------------------------------------------------------------------------------ */

typedef struct work {
  uint64_t first_seed, n_seeds;
  const cJSON** cases;
  size_t n_cases;
  _Atomic size_t next;
} work;

static void* worker(void* arg) {
  work* w = arg;
  cu_context prev;
  ptc_status s = cuda_ctx_enter(dev, &prev); /* for the test's own copies */
  ptc_status_destroy(s);
  size_t total = w->n_seeds + w->n_cases;
  for (size_t i; (i = atomic_fetch_add(&w->next, 1)) < total;) {
    if (i < w->n_seeds)
      check_seed(w->first_seed + i);
    else
      check_case(w->cases[i - w->n_seeds]);
  }
  return NULL;
}

static void run_parallel(work* w, int threads) {
  pthread_t th[MAX_THREADS];
  int started = 0;
  for (; started < threads - 1; started++)
    if (pthread_create(&th[started], NULL, worker, w) != 0) break;
  worker(w);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
}

/* ---- API checks -------------------------------------------------------------------------------- */

static void expect(bool ok, const char* what) {
  if (ok)
    atomic_fetch_add(&passed, 1);
  else
    fail("FAIL api: %s%s", what, NULL);
}

/* y = relu(x * 2) + sum(x, dim 1, keepdim): on a caller stream, with
 * strided caller outputs, and the device checks. */
static void check_api(void) {
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_create(ctx, &g);
  const ptc_dim shape[2] = {{64, 0, 0}, {1000, 0, 0}};
  ptc_value x = 0, two = 0, m = 0, r = 0, sm = 0, y = 0;
  if (!s) s = ptc_graph_add_input(g, "x", PTC_F32, shape, 2, NULL, &x);
  float two_v = 2.0f;
  const int64_t scalar[1] = {1};
  if (!s) s = ptc_graph_add_constant(g, "two", PTC_F32, scalar, 1, &two_v, 0, &two);
  const ptc_value xm[2] = {x, two};
  if (!s) s = ptc_graph_add_node(g, "mul", xm, 2, NULL, 0, &m, 1, NULL);
  if (!s) s = ptc_graph_add_node(g, "relu", &m, 1, NULL, 0, &r, 1, NULL);
  const int64_t last[1] = {1};
  ptc_attr red[2] = {ptc_attr_bool("keepdim", 1), ptc_attr_ints("dim", last, 1)};
  if (!s) s = ptc_graph_add_node(g, "amax", &x, 1, red, 2, &sm, 1, NULL);
  const ptc_value rs[2] = {r, sm};
  if (!s) s = ptc_graph_add_node(g, "add", rs, 2, NULL, 0, &y, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, y);
  ptc_executable *ec = NULL, *er = NULL;
  if (!s) s = compile(g, "cuda", false, &ec);
  if (!s) s = compile(g, "ref", false, &er);
  if (s) {
    fail("FAIL api: building the graph: %s%s", ptc_status_message(s), NULL);
    ptc_status_destroy(s);
    ptc_graph_destroy(g);
    return;
  }
  enum { N = 64 * 1000 };
  float* hx = malloc(N * sizeof *hx);
  float* got = malloc(N * sizeof *got);
  for (int i = 0; i < N; i++) hx[i] = (float)((i * 37) % 101 - 50) / 7.0f;
  int64_t dims[2] = {64, 1000};
  ptc_tensor hin = {hx, {PTC_DEVICE_CPU, 0}, 2, ptc_dtype_to_dl(PTC_F32), dims, NULL, 0};
  ptc_results* want = NULL;
  s = ptc_executable_run_alloc(er, &hin, 1, NULL, &want);
  const float* w = s ? NULL : ptc_results_get(want, 0)->data;
  ptc_status_destroy(s);
  /* device mismatch both ways */
  ptc_results* r0 = NULL;
  s = ptc_executable_run_alloc(ec, &hin, 1, NULL, &r0);
  expect(s && ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT &&
             strstr(ptc_status_message(s), "tensor on cpu") &&
             strstr(ptc_status_message(s), "cuda"),
         "a cpu tensor given to a cuda executable is INVALID_ARGUMENT naming both devices");
  ptc_status_destroy(s);
  ptc_tensor din;
  bool up = upload(&hin, &din);
  s = ptc_executable_run_alloc(er, &din, 1, NULL, &r0);
  expect(s && ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT &&
             strstr(ptc_status_message(s), "tensor on cuda"),
         "a cuda tensor given to a ref executable is INVALID_ARGUMENT");
  ptc_status_destroy(s);
  /* infer_outputs reports the device */
  int64_t oshape[PTC_MAX_RANK];
  ptc_tensor info;
  memset(&info, 0, sizeof info);
  info.shape = oshape;
  s = ptc_executable_infer_outputs(ec, &din, 1, &info, 1);
  expect(!s && info.device.device_type == PTC_DEVICE_CUDA && oshape[0] == 64 && oshape[1] == 1000,
         "infer_outputs reports cuda outputs");
  ptc_status_destroy(s);
  /* a caller stream, run_alloc */
  cu_stream st = NULL;
  bool have_stream = cu()->StreamCreate(&st, 1 /* non-blocking */) == CU_SUCCESS;
  ptc_run_options ro;
  ptc_run_options_init(&ro);
  ro.stream = st;
  ptc_results* rr = NULL;
  s = up && have_stream ? ptc_executable_run_alloc(ec, &din, 1, &ro, &rr) : PTC_ERR(INTERNAL, "setup");
  bool ok = !s && download(ptc_results_get(rr, 0), got, st);
  for (int i = 0; ok && w && i < N; i++) ok = got[i] == w[i];
  expect(ok && w, "run_alloc on a caller stream matches ref");
  ptc_status_destroy(s);
  ptc_results_destroy(rr);
  /* an older caller's smaller run options still work */
  ptc_run_options old = ro;
  old.struct_size = offsetof(ptc_run_options, stream);
  s = ptc_executable_run_alloc(ec, &din, 1, &old, &rr);
  expect(!s, "run options without the stream field");
  ptc_status_destroy(s);
  ptc_results_destroy(rr);
  /* caller outputs, transposed layout (strides 1, 64) */
  cu_deviceptr outp = 0;
  ptc_status_destroy(cuda_alloc(N * sizeof(float), st, &outp));
  int64_t ostr[2] = {1, 64};
  ptc_tensor dout = {(void*)(uintptr_t)outp, {PTC_DEVICE_CUDA, 0}, 2, ptc_dtype_to_dl(PTC_F32),
                     dims, ostr, 0};
  s = ptc_executable_run(ec, &din, 1, &dout, 1, &ro);
  ok = !s && download(&dout, got, st);
  for (int i = 0; ok && w && i < 64; i++)
    for (int j = 0; ok && j < 1000; j++) ok = got[j * 64 + i] == w[i * 1000 + j];
  expect(ok && w, "caller outputs with strides on a caller stream");
  ptc_status_destroy(s);
  cuda_free(outp);
  if (have_stream) cu()->StreamDestroy(st);
  if (up) free_dev(&din);
  ptc_results_destroy(want);
  ptc_executable_release(ec);
  ptc_executable_release(er);
  ptc_graph_destroy(g);
  free(hx);
  free(got);
}

/* index_select(x[10] f32, i[4] i64, dim 0): the graph whose kernel reports
 * an out-of-range index. *s receives the build status (*g may be partial). */
static ptc_graph* gather_graph(ptc_status* s) {
  ptc_graph* g = NULL;
  *s = ptc_graph_create(ctx, &g);
  const ptc_dim xs[1] = {{10, 0, 0}}, is[1] = {{4, 0, 0}};
  ptc_value x = 0, idx = 0, y = 0;
  if (!*s) *s = ptc_graph_add_input(g, "x", PTC_F32, xs, 1, NULL, &x);
  if (!*s) *s = ptc_graph_add_input(g, "i", PTC_I64, is, 1, NULL, &idx);
  const ptc_value in[2] = {x, idx};
  ptc_attr a = ptc_attr_int("dim", 0);
  if (!*s) *s = ptc_graph_add_node(g, "index_select", in, 2, &a, 1, &y, 1, NULL);
  if (!*s) *s = ptc_graph_add_output(g, y);
  return g;
}

/* An index out of range in a gather kernel comes back as an op error. */
static void check_kernel_error(void) {
  ptc_status s;
  ptc_graph* g = gather_graph(&s);
  ptc_executable* e = NULL;
  if (!s) s = compile(g, "cuda", false, &e);
  float hx[10] = {0};
  int64_t hi[4] = {1, 2, 12, 3}, d10[1] = {10}, d4[1] = {4};
  ptc_tensor h[2] = {{hx, {PTC_DEVICE_CPU, 0}, 1, ptc_dtype_to_dl(PTC_F32), d10, NULL, 0},
                     {hi, {PTC_DEVICE_CPU, 0}, 1, ptc_dtype_to_dl(PTC_I64), d4, NULL, 0}};
  ptc_tensor d[2];
  bool up = !s && upload(&h[0], &d[0]) && upload(&h[1], &d[1]);
  ptc_results* r = NULL;
  ptc_status rs = up ? ptc_executable_run_alloc(e, d, 2, NULL, &r) : NULL;
  expect(!s && rs && ptc_status_code(rs) == PTC_CODE_INVALID_ARGUMENT &&
             strstr(ptc_status_message(rs), "out of bounds"),
         "an out-of-range index_select index is INVALID_ARGUMENT 'out of bounds'");
  if (s) printf("  (%s)\n", ptc_status_message(s));
  if (rs && ptc_status_code(rs) != PTC_CODE_INVALID_ARGUMENT) printf("  (%s)\n", ptc_status_message(rs));
  ptc_status_destroy(s);
  ptc_status_destroy(rs);
  ptc_results_destroy(r);
  if (up) {
    free_dev(&d[0]);
    free_dev(&d[1]);
  }
  ptc_executable_release(e);
  ptc_graph_destroy(g);
}

/* ---- CUDA-graph mode ---------------------------------------------------------------------- */

/* The executable's description (malloc'ed, "" on failure). */
static char* describe_exe(const ptc_executable* e) {
  size_t need = 0;
  ptc_status s = ptc_executable_format(e, NULL, 0, &need);
  ptc_status_destroy(s);
  char* t = calloc(need + 2, 1);
  if (t) {
    s = ptc_executable_format(e, t, need + 2, NULL);
    ptc_status_destroy(s);
  }
  return t ? t : strdup("");
}

/* The number before `what` in the graph-mode line of e's description, or -1. */
static long graph_stat(const ptc_executable* e, const char* what) {
  char* t = describe_exe(e);
  const char* line = strstr(t, "graph mode (");
  const char* at = line ? strstr(line, what) : NULL;
  long v = -1;
  if (at) {
    const char* p = at;
    while (p > line && p[-1] == ' ') p--;
    while (p > line && p[-1] >= '0' && p[-1] <= '9') p--;
    v = strtol(p, NULL, 10);
  }
  free(t);
  return v;
}

static _Atomic unsigned graph_random_checked, graph_random_on;

/* One random graph in graph mode: every size set, three calls with new
 * input values each, on `st` and the NULL stream in turn, compared with ref
 * and with the plain cuda mode. */
static void check_graph_seed(uint64_t seed, cu_stream st) {
  rg_options o;
  rg_options_init(&o, seed);
  rg_graph rg;
  ptc_status s = rg_generate(ctx, &o, &rg);
  if (s) {
    fail("FAIL graphs seed: generator: %s%s", ptc_status_message(s), NULL);
    ptc_status_destroy(s);
    return;
  }
  char label[64];
  snprintf(label, sizeof label, "graphs seed %llu", (unsigned long long)seed);
  ptc_executable *eb = NULL, *ep = NULL, *eg = NULL;
  s = compile(rg.g, "ref", false, &eb);
  if (!s) s = compile(rg.g, "cuda", false, &ep);
  if (!s) s = compile_mode(rg.g, "cuda", false, "reduce-overhead", &eg);
  if (s) {
    char* t = status_text(s);
    fail("FAIL %s: compile: %s", label, t);
    free(t);
    ptc_status_destroy(s);
  }
  for (uint32_t k = 0; !s && k < rg_num_runs(&rg); k++) {
    int64_t sizes[RG_MAX_SYMS];
    rg_run_sizes(&rg, k, sizes);
    for (uint32_t call = 0; call < 3; call++) {
      rg_inputs in;
      if (!rg_inputs_make(&rg, sizes, seed * 131 + k * 7 + call, &in)) {
        fail("FAIL %s: inputs%s", label, NULL);
        break;
      }
      ptc_results *rb = NULL, *rp = NULL, *rgr = NULL;
      ptc_status sb = ptc_executable_run_alloc(eb, in.t, in.n, NULL, &rb);
      ptc_status s2 = sb ? NULL : ptc_executable_run_alloc(eb, in.t, in.n, NULL, &rp);
      ptc_status s3 = sb || s2 ? NULL : ptc_executable_run_alloc(eb, in.t, in.n, NULL, &rgr);
      bool skip = sb && k > 0 && ptc_status_code(sb) == PTC_CODE_INVALID_ARGUMENT;
      if (!skip && (sb || s2 || s3)) {
        fail("FAIL %s: ref failed: %s", label, ptc_status_message(sb ? sb : s2 ? s2 : s3));
      } else if (!skip) {
        char *err = NULL, msg[4096];
        cu_stream use = call % 2 ? NULL : st;
        if (!run_cuda_into_on(ep, &in, rp, use, &err) || !run_cuda_into_on(eg, &in, rgr, use, &err))
          fail("FAIL %s: cuda run: %s", label, err);
        else if (rg_compare(&rg, rgr, rb, msg, sizeof msg) != 0)
          fail("FAIL %s: graph mode differs from ref: %s", label, msg);
        else if (rg_compare(&rg, rgr, rp, msg, sizeof msg) != 0)
          fail("FAIL %s: graph mode differs from the plain mode: %s", label, msg);
        else
          atomic_fetch_add(&passed, 1);
        free(err);
      }
      ptc_status_destroy(sb);
      ptc_status_destroy(s2);
      ptc_status_destroy(s3);
      ptc_results_destroy(rb);
      ptc_results_destroy(rp);
      ptc_results_destroy(rgr);
      rg_inputs_free(&in);
    }
  }
  if (!s) {
    atomic_fetch_add(&graph_random_checked, 1);
    if (graph_stat(eg, "CUDA graphs recorded") > 0) atomic_fetch_add(&graph_random_on, 1);
  }
  ptc_executable_release(eb);
  ptc_executable_release(ep);
  ptc_executable_release(eg);
  rg_graph_free(&rg);
}

/* y = relu(x * 2) + amax(x, 1, keepdim) for x [B, 1000], B symbolic. */
static ptc_graph* graph_api_graph(void) {
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_create(ctx, &g);
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  so.hint = 64;
  so.min_value = 2;
  ptc_sym b = 0;
  if (!s) s = ptc_graph_add_symbol(g, "B", &so, &b);
  const ptc_dim shape[2] = {{64, b, 0}, {1000, 0, 0}};
  ptc_value x = 0, m = 0, r = 0, sm = 0, y = 0;
  if (!s) s = ptc_graph_add_input(g, "x", PTC_F32, shape, 2, NULL, &x);
  ptc_attr two = ptc_attr_float("other", 2.0);
  if (!s) s = ptc_graph_add_node(g, "mul", &x, 1, &two, 1, &m, 1, NULL);
  if (!s) s = ptc_graph_add_node(g, "relu", &m, 1, NULL, 0, &r, 1, NULL);
  const int64_t last[1] = {1};
  ptc_attr red[2] = {ptc_attr_bool("keepdim", 1), ptc_attr_ints("dim", last, 1)};
  if (!s) s = ptc_graph_add_node(g, "amax", &x, 1, red, 2, &sm, 1, NULL);
  const ptc_value rs[2] = {r, sm};
  if (!s) s = ptc_graph_add_node(g, "add", rs, 2, NULL, 0, &y, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, y);
  if (s) {
    fail("FAIL graphs api: building the graph: %s%s", ptc_status_message(s), NULL);
    ptc_status_destroy(s);
    ptc_graph_destroy(g);
    return NULL;
  }
  return g;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Per-call host time of `calls` runs into fixed device buffers on the NULL
 * stream (one sync at the end), microseconds. */
static double time_calls(const ptc_executable* e, const ptc_tensor* din, const ptc_tensor* dout,
                         const ptc_tensor* dout2, int calls) {
  ptc_status s = NULL;
  for (int i = 0; i < 20 && !s; i++)
    s = ptc_executable_run(e, din, 1, dout2 && i % 2 ? dout2 : dout, 1, NULL);
  cu()->StreamSynchronize(NULL);
  double t0 = now_s();
  for (int i = 0; i < calls && !s; i++)
    s = ptc_executable_run(e, din, 1, dout2 && i % 2 ? dout2 : dout, 1, NULL);
  cu()->StreamSynchronize(NULL);
  double t = (now_s() - t0) / calls * 1e6;
  ptc_status_destroy(s);
  return t;
}

static void check_graph_api(cu_stream st) {
  ptc_graph* g = graph_api_graph();
  if (!g) return;
  ptc_executable *eg = NULL, *er = NULL, *ep = NULL;
  ptc_status s = compile_mode(g, "cuda", false, "reduce-overhead", &eg);
  if (!s) s = compile(g, "ref", false, &er);
  if (!s) s = compile(g, "cuda", false, &ep);
  if (s) {
    fail("FAIL graphs api: compile: %s%s", ptc_status_message(s), NULL);
    ptc_status_destroy(s);
    ptc_graph_destroy(g);
    return;
  }
  char* d0 = describe_exe(eg);
  expect(strstr(d0, "graph mode (reduce-overhead): on") != NULL, "describe: graph mode on");
  free(d0);
  d0 = describe_exe(ep);
  expect(strstr(d0, "graph mode") == NULL, "describe: no graph mode line in the default mode");
  free(d0);
  enum { MAXB = 64, N = MAXB * 1000 };
  float* hx = malloc(N * sizeof *hx);
  float* got = malloc(N * sizeof *got);
  cu_deviceptr xin = 0, outs[3] = {0, 0, 0};
  ptc_status_destroy(cuda_alloc(N * sizeof(float), NULL, &xin));
  for (int i = 0; i < 3; i++) ptc_status_destroy(cuda_alloc(N * sizeof(float), NULL, &outs[i]));
  /* batch sizes: 64 x3, 32 x2, 64, then 2..11 twice each: 12 keys, 8 graphs */
  int64_t seq[40];
  int n_seq = 0;
  seq[n_seq++] = 64, seq[n_seq++] = 64, seq[n_seq++] = 64, seq[n_seq++] = 32, seq[n_seq++] = 32;
  seq[n_seq++] = 64;
  for (int64_t b = 2; b <= 11; b++) seq[n_seq++] = b, seq[n_seq++] = b;
  bool all_ok = xin && outs[0] && outs[1] && outs[2];
  for (int c = 0; c < n_seq && all_ok; c++) {
    int64_t B = seq[c];
    for (int64_t i = 0; i < B * 1000; i++) hx[i] = (float)(((i + c * 13) * 37) % 101 - 50) / 7.0f;
    int64_t dims[2] = {B, 1000};
    ptc_tensor hin = {hx, {PTC_DEVICE_CPU, 0}, 2, ptc_dtype_to_dl(PTC_F32), dims, NULL, 0};
    ptc_results* want = NULL;
    s = ptc_executable_run_alloc(er, &hin, 1, NULL, &want);
    /* new input values every call (same device buffer), a different output
     * buffer every call, the third one transposed */
    cu_stream use = c % 2 ? NULL : st;
    all_ok = !s && cu()->MemcpyHtoDAsync(xin, hx, (size_t)B * 1000 * sizeof(float), use) == CU_SUCCESS;
    int o = c % 3;
    int64_t tstr[2] = {1, B};
    ptc_tensor din = {(void*)(uintptr_t)xin, {PTC_DEVICE_CUDA, 0}, 2, ptc_dtype_to_dl(PTC_F32), dims, NULL, 0};
    ptc_tensor dout = {(void*)(uintptr_t)outs[o], {PTC_DEVICE_CUDA, 0}, 2, ptc_dtype_to_dl(PTC_F32),
                       dims, o == 2 ? tstr : NULL, 0};
    ptc_run_options ro;
    ptc_run_options_init(&ro);
    ro.stream = use;
    ptc_status rs = all_ok ? ptc_executable_run(eg, &din, 1, &dout, 1, &ro) : NULL;
    all_ok = all_ok && !rs &&
             cu()->MemcpyDtoHAsync(got, outs[o], (size_t)B * 1000 * sizeof(float), use) == CU_SUCCESS &&
             cu()->StreamSynchronize(use) == CU_SUCCESS;
    const float* w = all_ok ? ptc_results_get(want, 0)->data : NULL;
    for (int64_t i = 0; all_ok && i < B; i++)
      for (int64_t j = 0; all_ok && j < 1000; j++)
        all_ok = (o == 2 ? got[j * B + i] : got[i * 1000 + j]) == w[i * 1000 + j];
    if (!all_ok)
      printf("  graph api: call %d (B=%lld, output %d, %s stream) wrong%s%s\n", c, (long long)B, o,
             use ? "caller" : "NULL", rs ? ": " : "", rs ? ptc_status_message(rs) : "");
    ptc_status_destroy(s);
    ptc_status_destroy(rs);
    ptc_results_destroy(want);
  }
  expect(all_ok, "graph mode matches ref over shape changes, new inputs, changing output buffers, "
                 "caller and NULL streams");
  /* 8 shapes get a copy graph; B=64's fourth call repeats the buffers of
   * its third, so it records a direct graph on them */
  long rec = graph_stat(eg, "CUDA graphs recorded"), dir = graph_stat(eg, "on caller buffers"),
       rep = graph_stat(eg, "replays"), pl = graph_stat(eg, "plain runs");
  printf("graph mode counters: %ld recorded (%ld direct), %ld replays, %ld plain runs (want 9 (1), "
         "10, 16)\n", rec, dir, rep, pl);
  expect(rec == 9 && dir == 1 && rep == 10 && pl == 16,
         "graph mode: 8-shape cap, direct graph, replay and plain-run counts");
  /* per-call host time, plain vs graph, B = 64 */
  int64_t dims[2] = {64, 1000};
  ptc_tensor din = {(void*)(uintptr_t)xin, {PTC_DEVICE_CUDA, 0}, 2, ptc_dtype_to_dl(PTC_F32), dims, NULL, 0};
  ptc_tensor dout = {(void*)(uintptr_t)outs[0], {PTC_DEVICE_CUDA, 0}, 2, ptc_dtype_to_dl(PTC_F32), dims, NULL, 0};
  ptc_tensor dout2 = dout;
  dout2.data = (void*)(uintptr_t)outs[1];
  if (xin && outs[0] && outs[1]) {
    double tp = time_calls(ep, &din, &dout, NULL, 2000), tg = time_calls(eg, &din, &dout, NULL, 2000);
    double tc = time_calls(eg, &din, &dout, &dout2, 2000);
    printf("graph mode timing (C API, relu(x*2)+amax, 64x1000, NULL stream): plain %.2f us/call, "
           "graph on the same buffers %.2f us/call, graph alternating two output buffers (a "
           "direct graph per buffer after the first calls) %.2f us/call\n", tp, tg, tc);
  }
  cuda_free(xin);
  for (int i = 0; i < 3; i++) cuda_free(outs[i]);
  free(hx);
  free(got);
  ptc_executable_release(eg);
  ptc_executable_release(er);
  ptc_executable_release(ep);
  ptc_graph_destroy(g);
}

/* The kernel error flag through a replayed graph: a bad index is reported
 * on the plain (first), recorded (second) and replayed (third) call, and a
 * good call after them succeeds (the error word is cleared in the graph). */
static void check_graph_kernel_error(void) {
  ptc_status s;
  ptc_graph* g = gather_graph(&s);
  ptc_executable* e = NULL;
  if (!s) s = compile_mode(g, "cuda", false, "reduce-overhead", &e);
  float hx[10];
  for (int i = 0; i < 10; i++) hx[i] = (float)i * 1.5f;
  int64_t bad[4] = {1, 2, 12, 3}, good[4] = {9, 0, 4, 4}, d10[1] = {10}, d4[1] = {4};
  ptc_tensor h[2] = {{hx, {PTC_DEVICE_CPU, 0}, 1, ptc_dtype_to_dl(PTC_F32), d10, NULL, 0},
                     {bad, {PTC_DEVICE_CPU, 0}, 1, ptc_dtype_to_dl(PTC_I64), d4, NULL, 0}};
  ptc_tensor d[2];
  bool up = !s && upload(&h[0], &d[0]) && upload(&h[1], &d[1]);
  bool ok = up;
  for (int call = 0; ok && call < 3; call++) {
    ptc_results* r = NULL;
    ptc_status rs = ptc_executable_run_alloc(e, d, 2, NULL, &r);
    ok = rs && ptc_status_code(rs) == PTC_CODE_INVALID_ARGUMENT &&
         strstr(ptc_status_message(rs), "out of bounds");
    ptc_status_destroy(rs);
    ptc_results_destroy(r);
  }
  expect(ok, "graph mode: an out-of-range index is reported by plain, recorded and replayed calls");
  ok = up && cu()->MemcpyHtoDAsync((cu_deviceptr)(uintptr_t)d[1].data, good, sizeof good, NULL) == CU_SUCCESS;
  ptc_results* r = NULL;
  ptc_status rs = ok ? ptc_executable_run_alloc(e, d, 2, NULL, &r) : NULL;
  float out[4] = {0};
  ok = ok && !rs && download(ptc_results_get(r, 0), out, NULL) && out[0] == hx[9] &&
       out[1] == hx[0] && out[2] == hx[4] && out[3] == hx[4];
  expect(ok && graph_stat(e, "replays") >= 3,
         "graph mode: a good call after the errors replays and is right");
  ptc_status_destroy(rs);
  ptc_results_destroy(r);
  if (s) printf("  (%s)\n", ptc_status_message(s));
  ptc_status_destroy(s);
  if (up) {
    free_dev(&d[0]);
    free_dev(&d[1]);
  }
  ptc_executable_release(e);
  ptc_graph_destroy(g);
}

static void check_graphs(uint64_t first, uint64_t n_seeds) {
  cu_stream st = NULL;
  if (cu()->StreamCreate(&st, 1 /* non-blocking */) != CU_SUCCESS) {
    fail("FAIL graphs: no stream%s%s", NULL, NULL);
    return;
  }
  unsigned p0 = passed, f0 = failed;
  check_graph_api(st);
  check_graph_kernel_error();
  for (uint64_t i = 0; i < n_seeds; i++) check_graph_seed(first + i, st);
  expect(graph_random_on > 0, "graph mode recorded graphs for some random graphs");
  printf("graph mode: %u random graphs (%u recorded graphs, the rest off: host steps or random "
         "numbers), checks %u passed, %u failed\n", graph_random_checked, graph_random_on,
         passed - p0, failed - f0);
  cu()->StreamDestroy(st);
}

int main(int argc, char** argv) {
  const char* why = NULL;
  if (!ptc_backend_available("cuda", &why)) {
    printf("SKIP: the cuda backend is not available here: %s\n", why ? why : "?");
    return 77;
  }
  dev = cuda_device_get();
  uint64_t seeds = 300, first = 1;
  int threads = 8;
  const char* files[16];
  size_t n_files = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
      seeds = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--first") && i + 1 < argc)
      first = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = atoi(argv[++i]);
    else if (n_files < 16)
      files[n_files++] = argv[i];
  }
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  ptc_status s = ptc_context_create(NULL, &ctx);
  if (s) return 1;
  printf("device: %s (sm_%d%d, %d SMs)\n", dev->name, dev->cc_major, dev->cc_minor, dev->sm_count);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cu_context prev;
  ptc_status_destroy(cuda_ctx_enter(dev, &prev));
  check_api();
  check_kernel_error();
  unsigned api_pass = passed, api_fail = failed;
  printf("api checks: %u passed, %u failed\n", api_pass, api_fail);
  check_graphs(first, seeds < 40 ? seeds : 40);
  cJSON* roots[16];
  size_t n_cases = 0, cap = 0;
  const cJSON** cases = NULL;
  for (size_t f = 0; f < n_files; f++) {
    roots[f] = case_file_load(files[f]);
    for (const cJSON* c = roots[f] ? case_first(roots[f]) : NULL; c; c = c->next) {
      if (n_cases == cap) {
        cap = cap ? cap * 2 : 1024;
        cases = realloc(cases, cap * sizeof *cases);
      }
      cases[n_cases++] = c;
    }
  }
  work w = {first, seeds, cases, n_cases, 0};
  run_parallel(&w, threads);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  size_t in_use = 0, cached = 0;
  cuda_alloc_stats(&in_use, &cached);
  printf("test_cuda_gpu: %llu random seeds, %zu op cases, %d threads: %u passed, %u failed "
         "(%.1f s; device memory in use %zu bytes, cached %zu)\n",
         (unsigned long long)seeds, n_cases, threads, passed, failed,
         (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec), in_use, cached);
  printf("%u passed, %u failed\n", passed, failed);
  for (size_t f = 0; f < n_files; f++) cJSON_Delete(roots[f]);
  free(cases);
  ptc_context_release(ctx);
  return failed ? 1 : 0;
}
