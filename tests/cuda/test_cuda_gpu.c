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
 *    index reported by the kernel.
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

static ptc_status compile(const ptc_graph* g, const char* backend, bool nofuse, ptc_executable** e) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  o.disable_fusion = nofuse;
  return ptc_compile(ctx, g, &o, e);
}

/* ---- random graphs -------------------------------------------------------------------- */

/* Runs exe (cuda) on rg's inputs of size set k; the results land in `into`
 * (a ref results object of the same shapes, overwritten). */
static bool run_cuda_into(const ptc_executable* exe, const rg_inputs* in, ptc_results* into,
                          char** err) {
  ptc_tensor dev_in[RG_MAX_INPUTS];
  uint32_t n_up = 0;
  bool ok = true;
  for (; n_up < in->n && ok; n_up++) ok = upload(&in->t[n_up], &dev_in[n_up]);
  if (!ok) n_up--;
  ptc_results* r = NULL;
  ptc_status s = ok ? ptc_executable_run_alloc(exe, dev_in, in->n, NULL, &r)
                    : PTC_ERR(INTERNAL, "input upload failed");
  if (s) {
    *err = status_text(s);
    ok = false;
  }
  for (size_t i = 0; ok && i < ptc_results_count(r); i++) {
    const ptc_tensor* t = ptc_results_get(r, i);
    const ptc_tensor* h = ptc_results_get(into, i);
    ok = t->device.device_type == PTC_DEVICE_CUDA && h && numel_of(t) == numel_of(h) &&
         download(t, h->data, NULL);
    if (!ok) *err = strdup("output download failed or device type wrong");
  }
  ptc_status_destroy(s);
  ptc_results_destroy(r);
  for (uint32_t i = 0; i < n_up; i++) free_dev(&dev_in[i]);
  return ok;
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

/* An index out of range in a gather kernel comes back as an op error. */
static void check_kernel_error(void) {
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_create(ctx, &g);
  const ptc_dim xs[1] = {{10, 0, 0}}, is[1] = {{4, 0, 0}};
  ptc_value x = 0, idx = 0, y = 0;
  if (!s) s = ptc_graph_add_input(g, "x", PTC_F32, xs, 1, NULL, &x);
  if (!s) s = ptc_graph_add_input(g, "i", PTC_I64, is, 1, NULL, &idx);
  const ptc_value in[2] = {x, idx};
  ptc_attr a = ptc_attr_int("dim", 0);
  if (!s) s = ptc_graph_add_node(g, "index_select", in, 2, &a, 1, &y, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, y);
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
