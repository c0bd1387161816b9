/* cuda_compile.c - builds a batch of generated kernels to cubins for one
 * architecture: the table of ahead-of-time cubins of the fixed modules
 * first (cuda_aot.h; empty unless built with -Daot_kernels=enabled), then
 * a cache lookup per kernel (lib/runtime/kcache.h, folder
 * <root>/cuda), NVRTC for the misses in parallel threads, atomic writes of
 * the new entries with their source beside them (<key>.cu) for
 * inspection and for the "source_path" of error reports. */
#include "../../lib/runtime/kcache.h"
#include "cuda_aot.h"
#include "cuda_cg.h"
#include "cuda_nvrtc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 16

typedef struct build_slot {
  cuda_build_job* job;
  char cubin_path[600];
  ptc_status err;
  double ms;
} build_slot;

typedef struct build_queue {
  build_slot* slots;
  const size_t* todo;
  size_t n;
  int arch;
  _Atomic size_t next;
} build_queue;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static ptc_status cache_key(const char* source, int arch, char key[65]) {
  const cuda_libs* L = cuda_libs_get();
  char ver[32], archs[16];
  snprintf(ver, sizeof ver, "nvrtc %d.%d", L->nvrtc_major, L->nvrtc_minor);
  snprintf(archs, sizeof archs, "sm_%d", arch);
  ptc_strbuf flags;
  ptc_sb_init(&flags);
  for (const char* const* f = cuda_nvrtc_flags; *f; f++) ptc_sb_printf(&flags, "%s ", *f);
  const char* parts[] = {"ptc-cuda-kernel", ver, archs, flags.data ? flags.data : "",
                         PTC_CUDA_CODEGEN_VERSION, source};
  ptc_status s = flags.oom ? ptc_status_oom() : kcache_key(parts, sizeof parts / sizeof parts[0], key);
  ptc_sb_free(&flags);
  return s;
}

static void build_one(build_queue* q, build_slot* sl) {
  double t0 = now_ms();
  cuda_build_job* j = sl->job;
  sl->err = cuda_nvrtc_compile(j->source, j->name, q->arch, &j->cubin);
  if (!sl->err && sl->cubin_path[0]) {
    sl->err = kcache_write_atomic(sl->cubin_path, j->cubin.data, j->cubin.size);
    if (sl->err) cuda_cubin_free(&j->cubin);
  }
  if (sl->err && j->source_path[0]) {
    /* keep the failing source where the report points */
    ptc_status_destroy(kcache_write_atomic(j->source_path, j->source, strlen(j->source)));
    sl->err = ptc_status_add_detail(sl->err, "source_path", j->source_path);
  }
  sl->ms = now_ms() - t0;
}

static void* worker(void* arg) {
  build_queue* q = arg;
  for (size_t i; (i = atomic_fetch_add(&q->next, 1)) < q->n;) build_one(q, &q->slots[q->todo[i]]);
  return NULL;
}

static void build_parallel(build_queue* q) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t n_threads = cores > 1 ? (size_t)cores : 1;
  if (n_threads > q->n) n_threads = q->n;
  if (n_threads > MAX_THREADS) n_threads = MAX_THREADS;
  pthread_t th[MAX_THREADS];
  size_t started = 0;
  for (; started + 1 < n_threads; started++)
    if (pthread_create(&th[started], NULL, worker, q) != 0) break;
  worker(q);
  for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
}

/* A usable cache entry: the cubin read into the job. */
static bool try_cached(ptc_context* ctx, build_slot* sl) {
  cuda_build_job* j = sl->job;
  char* data;
  size_t len;
  ptc_status s = kcache_read(sl->cubin_path, &data, &len);
  if (s) {
    if (ptc_status_code(s) != PTC_CODE_NOT_FOUND)
      ptc_log(ctx, PTC_LOG_WARN, "cuda backend: cache entry %s is unusable (%s); rebuilding",
              sl->cubin_path, ptc_status_message(s));
    ptc_status_destroy(s);
    return false;
  }
  if (len < 4 || memcmp(data, "\177ELF", 4) != 0) { /* cubins are ELF images */
    ptc_log(ctx, PTC_LOG_WARN, "cuda backend: cache entry %s is not a cubin; rebuilding",
            sl->cubin_path);
    free(data);
    unlink(sl->cubin_path);
    return false;
  }
  j->cubin.data = data;
  j->cubin.size = len;
  j->cache_hit = true;
  if (access(j->source_path, F_OK) != 0)
    ptc_status_destroy(kcache_write_atomic(j->source_path, j->source, strlen(j->source)));
  return true;
}

/* An embedded ahead-of-time cubin, copied into the job (which owns and
 * frees its cubin; nothing is written to the disk cache). */
static bool try_aot(build_slot* sl, int arch, ptc_status* err) {
  cuda_build_job* j = sl->job;
  const cuda_aot_entry* e = cuda_aot_lookup(j->source, arch);
  if (!e) return false;
  j->cubin.data = malloc(e->size);
  if (!j->cubin.data) {
    *err = ptc_status_oom();
    return false;
  }
  memcpy(j->cubin.data, e->data, e->size);
  j->cubin.size = e->size;
  j->cache_hit = true;
  return true;
}

static ptc_status prepare(ptc_context* ctx, const kcache_loc* loc, build_slot* slots, size_t n,
                          int arch, size_t* todo, size_t* n_todo) {
  for (size_t i = 0; i < n; i++) {
    build_slot* sl = &slots[i];
    cuda_build_job* j = sl->job;
    j->cache_hit = false;
    j->source_path[0] = 0;
    ptc_status err = PTC_OK;
    if (try_aot(sl, arch, &err)) {
      ptc_log(ctx, PTC_LOG_INFO, "cuda backend: kernel %s: ahead-of-time cubin for sm_%d%s", j->name,
              arch & ~CUDA_ARCH_SPECIFIC, (arch & CUDA_ARCH_SPECIFIC) ? "a" : "");
      PTC_TRY(cache_key(j->source, arch, j->key));
      continue;
    }
    PTC_TRY(err);
    if (loc) {
      char* key = j->key;
      PTC_TRY(cache_key(j->source, arch, key));
      if (!kcache_path(loc, key, ".cubin", sl->cubin_path, sizeof sl->cubin_path) ||
          !kcache_path(loc, key, ".cu", j->source_path, sizeof j->source_path))
        return PTC_ERR(INVALID_ARGUMENT, "cuda backend: cache folder path too long: %s", loc->dir);
      if (!loc->private_dir && try_cached(ctx, sl)) continue;
    }
    todo[(*n_todo)++] = i;
  }
  return PTC_OK;
}

/* Cubins of a private folder are only needed in memory: the folder goes. */
static void drop_private(const kcache_loc* loc, build_slot* slots, size_t n) {
  static const char* const siblings[] = {".cu", NULL};
  for (size_t i = 0; i < n; i++)
    if (slots[i].cubin_path[0]) kcache_release(slots[i].cubin_path, siblings);
  rmdir(loc->dir);
}

ptc_status cuda_build_all(ptc_context* ctx, cuda_build_job* jobs, size_t n, int arch) {
  for (size_t i = 0; i < n; i++) memset(&jobs[i].cubin, 0, sizeof jobs[i].cubin);
  if (n == 0) return PTC_OK;
  const cuda_libs* L = cuda_libs_get();
  if (!L->have_nvrtc && ptc_cuda_aot_count == 0)
    return PTC_ERR(UNAVAILABLE, "cuda backend: %s", L->nvrtc_error);
  kcache_loc loc;
  PTC_TRY(kcache_open("cuda", &loc));
  build_slot* slots = calloc(n, sizeof *slots);
  size_t* todo = calloc(n, sizeof *todo);
  build_queue q = {slots, todo, 0, arch, 0};
  ptc_status s = slots && todo ? PTC_OK : ptc_status_oom();
  for (size_t i = 0; !s && i < n; i++) slots[i].job = &jobs[i];
  if (!s) s = prepare(ctx, &loc, slots, n, arch, todo, &q.n);
  /* without NVRTC only a batch the ahead-of-time table holds whole builds */
  if (!s && q.n && !L->have_nvrtc) {
    s = PTC_ERR(UNAVAILABLE, "cuda backend: %s", L->nvrtc_error);
    if (loc.private_dir) rmdir(loc.dir);
  }
  if (!s && q.n) build_parallel(&q);
  for (size_t t = 0; !s && t < q.n; t++) {
    build_slot* sl = &slots[todo[t]];
    if (sl->err) {
      s = sl->err;
      sl->err = NULL;
    } else {
      ptc_log(ctx, PTC_LOG_INFO, "cuda backend: kernel %s: compiled for sm_%d%s in %.1f ms",
              sl->job->name, arch & ~CUDA_ARCH_SPECIFIC, (arch & CUDA_ARCH_SPECIFIC) ? "a" : "",
              sl->ms);
    }
  }
  for (size_t i = 0; slots && i < n; i++) ptc_status_destroy(slots[i].err);
  if (loc.private_dir && slots && !s) drop_private(&loc, slots, n); /* failing sources stay */
  if (s)
    for (size_t i = 0; i < n; i++) cuda_cubin_free(&jobs[i].cubin);
  free(slots);
  free(todo);
  return s;
}

ptc_status cuda_build_modules(ptc_context* ctx, int arch, ptc_strbuf* srcs, size_t n,
                              const char* name, const char* what, cu_module* out) {
  if (n > CUDA_BUILD_MODULES_MAX) {
    for (size_t i = 0; i < n; i++) ptc_sb_free(&srcs[i]);
    return PTC_ERR(INTERNAL, "cuda backend: %zu modules at once (at most %d)", n,
                   CUDA_BUILD_MODULES_MAX);
  }
  cuda_build_job jobs[CUDA_BUILD_MODULES_MAX];
  memset(jobs, 0, sizeof jobs);
  ptc_status s = PTC_OK;
  for (size_t i = 0; i < n; i++) {
    out[i] = NULL;
    if (srcs[i].oom && !s) s = ptc_status_oom();
    jobs[i].source = srcs[i].data;
    jobs[i].name = name;
  }
  if (!s) s = cuda_build_all(ctx, jobs, n, arch);
  for (size_t i = 0; i < n; i++) ptc_sb_free(&srcs[i]);
  if (s) return s;
  const cu_api* cu = &cuda_libs_get()->cu;
  cu_result r = CU_SUCCESS;
  for (size_t i = 0; i < n && r == CU_SUCCESS; i++) r = cu->ModuleLoadData(&out[i], jobs[i].cubin.data);
  for (size_t i = 0; i < n; i++) cuda_cubin_free(&jobs[i].cubin);
  if (r != CU_SUCCESS) {
    for (size_t i = 0; i < n; i++) {
      if (out[i]) cu->ModuleUnload(out[i]);
      out[i] = NULL;
    }
    char msg[96];
    snprintf(msg, sizeof msg, "loading %s", what);
    return cuda_error(r, msg);
  }
  return PTC_OK;
}

ptc_status cuda_build_module(ptc_context* ctx, int arch, ptc_strbuf* src, const char* name,
                             const char* what, cu_module* out) {
  return cuda_build_modules(ctx, arch, src, 1, name, what, out);
}
