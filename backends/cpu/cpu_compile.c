/* cpu_compile.c - the CPU backend's compiler driver: runs the system C
 * compiler (PTC_CC, default "cc") on kernel sources, up to one process per
 * core at once, through the on-disk cache (cpu_cache.c), and loads the
 * resulting shared objects with dlopen. A cached entry that does not load
 * or lacks its symbol is deleted and rebuilt, never trusted. */
#include "cpu_rt.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

/* x86-64: 512-bit vectors where the CPU has them (GCC and clang default to
 * 256 bits for recent Intel parts; the math-heavy kernels - sin/cos, exp -
 * run ~1.4x faster per core with 512, measured on the 16-core Xeon). */
const char* const cpu_cc_flags[] = {"-O3",    "-march=native", "-fopenmp",          "-fPIC",
                                    "-shared", "-fno-math-errno", "-ffp-contract=off",
#if defined(__x86_64__)
                                    "-mprefer-vector-width=512",
#endif
                                    NULL};

#define MAX_LOG (1u << 20)
#define MAX_ARGS 64

const char* cpu_cc_command(void) {
  const char* cc = getenv("PTC_CC");
  return cc && *cc ? cc : "cc";
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- processes ------------------------------------------------------------ */

/* Splits the compiler command ("ccache gcc") into argv[0..] (words point into
 * `buf`, a copy); returns the word count or 0. */
static size_t split_command(const char* cmd, char* buf, size_t cap, char** argv, size_t max) {
  if ((size_t)snprintf(buf, cap, "%s", cmd) >= cap) return 0;
  size_t n = 0;
  for (char* save = NULL, *w = strtok_r(buf, " \t", &save); w && n < max;
       w = strtok_r(NULL, " \t", &save))
    argv[n++] = w;
  return n;
}

/* Runs argv with stdout+stderr captured into `log`; returns 0 or the spawn
 * errno, and the exit status in *status (128+signal when killed). */
static int run_capture(char* const* argv, ptc_strbuf* log, int* status) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return rc;
  }
  char buf[4096];
  for (;;) {
    ssize_t r = read(fds[0], buf, sizeof buf);
    if (r == 0 || (r < 0 && errno != EINTR)) break;
    if (r > 0 && log->len < MAX_LOG) ptc_sb_appendn(log, buf, (size_t)r);
  }
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  return 0;
}

/* ---- compiler identity ------------------------------------------------------ */

typedef struct ident_entry {
  struct ident_entry* next;
  char* cc;
  char* ident; /* NULL: the compiler does not run */
} ident_entry;

static pthread_mutex_t ident_lock = PTHREAD_MUTEX_INITIALIZER;
static ident_entry* ident_list;

/* The host CPU (for -march=native): model name and a hash of the flags. */
static void cpu_model(ptc_strbuf* sb) {
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[8192];
  bool model = false, flags = false;
  while (fgets(line, sizeof line, f) && !(model && flags)) {
    line[strcspn(line, "\n")] = 0;
    if (!model && strncmp(line, "model name", 10) == 0) {
      ptc_sb_printf(sb, "; cpu%s", strchr(line, ':') ? strchr(line, ':') + 1 : "");
      model = true;
    } else if (!flags && (strncmp(line, "flags", 5) == 0 || strncmp(line, "Features", 8) == 0)) {
      ptc_sb_printf(sb, "; isa %016llx", (unsigned long long)ptc_hash_bytes(line, strlen(line), 0));
      flags = true;
    }
  }
  fclose(f);
}

static char* compute_identity(const char* cc) {
  char buf[1024];
  char* argv[MAX_ARGS + 2];
  size_t n = split_command(cc, buf, sizeof buf, argv, MAX_ARGS);
  if (!n) return NULL;
  argv[n] = "--version";
  argv[n + 1] = NULL;
  ptc_strbuf out;
  ptc_sb_init(&out);
  int status = -1;
  char* ident = NULL;
  if (run_capture(argv, &out, &status) == 0 && status == 0 && out.len) {
    out.data[strcspn(out.data, "\r\n")] = 0;
    ptc_strbuf id;
    ptc_sb_init(&id);
    ptc_sb_append(&id, out.data);
    cpu_model(&id);
    ident = ptc_sb_take(&id);
  }
  ptc_sb_free(&out);
  return ident;
}

const char* cpu_cc_identity(void) {
  const char* cc = cpu_cc_command();
  pthread_mutex_lock(&ident_lock);
  ident_entry* e = ident_list;
  while (e && strcmp(e->cc, cc) != 0) e = e->next;
  if (!e) {
    e = calloc(1, sizeof *e);
    if (e) e->cc = strdup(cc);
    if (e && e->cc) {
      e->ident = compute_identity(cc);
      e->next = ident_list;
      ident_list = e;
    } else if (e) {
      free(e);
      e = NULL;
    }
  }
  const char* r = e ? e->ident : NULL;
  pthread_mutex_unlock(&ident_lock);
  return r;
}

/* ---- one kernel ---------------------------------------------------------------- */

typedef struct compile_job {
  const cpu_kernel_src* src;
  char so_path[512];
  char c_path[512];
  ptc_strbuf log;
  int spawn_err;   /* errno of posix_spawn, 0 if it ran */
  int status;      /* compiler exit status */
  ptc_status err;  /* I/O errors before the compiler ran */
  double ms;
} compile_job;

static void compile_one(compile_job* j) {
  double t0 = now_ms();
  j->err = cpu_cache_write_atomic(j->c_path, j->src->source, strlen(j->src->source));
  if (j->err) return;
  char tmp[600], cmd[1024];
  char* argv[MAX_ARGS + 16];
  if (!cpu_cache_temp_name(j->so_path, tmp, sizeof tmp)) {
    j->err = PTC_ERR(INVALID_ARGUMENT, "cpu backend: path too long: %s", j->so_path);
    return;
  }
  size_t n = split_command(cpu_cc_command(), cmd, sizeof cmd, argv, MAX_ARGS);
  for (const char* const* f = cpu_cc_flags; *f; f++) argv[n++] = (char*)*f;
  argv[n++] = "-o";
  argv[n++] = tmp;
  argv[n++] = j->c_path;
  argv[n++] = "-lm";
  argv[n] = NULL;
  j->spawn_err = run_capture(argv, &j->log, &j->status);
  if (!j->spawn_err && j->status == 0 && rename(tmp, j->so_path) != 0) {
    j->err = PTC_ERR(PERMISSION_DENIED, "cpu backend: cannot install %s: %s", j->so_path,
                     strerror(errno));
  }
  unlink(tmp); /* no-op after a successful rename */
  j->ms = now_ms() - t0;
}

typedef struct job_queue {
  compile_job* jobs;
  const size_t* todo; /* indices of the jobs to run */
  size_t n;
  _Atomic size_t next;
} job_queue;

static void* worker(void* arg) {
  job_queue* q = arg;
  for (size_t i; (i = atomic_fetch_add(&q->next, 1)) < q->n;) compile_one(&q->jobs[q->todo[i]]);
  return NULL;
}

/* Runs every job, up to one compiler per core at once. */
static void compile_parallel(job_queue* q) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  size_t n_threads = cores > 1 ? (size_t)cores : 1;
  if (n_threads > q->n) n_threads = q->n;
  if (n_threads > 64) n_threads = 64;
  pthread_t th[64];
  size_t started = 0;
  for (; started + 1 < n_threads; started++)
    if (pthread_create(&th[started], NULL, worker, q) != 0) break;
  worker(q); /* the calling thread works too */
  for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
}

/* ---- loading -------------------------------------------------------------------- */

/* Keeps the OpenMP runtime a kernel pulled in loaded for good: unloading it
 * with the last kernel would leave its worker threads without code (and
 * leak its pool); loading it again per plan would rebuild the pool. */
static void pin_openmp_runtime(void) {
  static const char* const names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (dlopen(names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) return; /* pinned */
}

/* Loads `path` and finds `symbol`; false (with the reason in why) if either fails. */
static bool load_so(const char* path, const char* symbol, cpu_compiled* out, char* why,
                    size_t cap) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    snprintf(why, cap, "%s", e ? e : "dlopen failed");
    return false;
  }
  void* fn = dlsym(h, symbol);
  if (!fn) {
    snprintf(why, cap, "symbol %s not found", symbol);
    dlclose(h);
    return false;
  }
  static pthread_once_t pinned = PTHREAD_ONCE_INIT;
  pthread_once(&pinned, pin_openmp_runtime);
  out->handle = h;
  memcpy(&out->fn, &fn, sizeof fn); /* object -> function pointer (POSIX) */
  snprintf(out->path, sizeof out->path, "%s", path);
  return true;
}

void cpu_compiled_unload(cpu_compiled* c) {
  if (!c) return;
  if (c->handle) dlclose(c->handle);
  if (c->path[0]) cpu_cache_release(c->path);
  memset(c, 0, sizeof *c);
}

static ptc_status compile_error(const compile_job* j) {
  const char* cc = cpu_cc_command();
  if (j->err) return ptc_status_prefix(j->err, "cpu backend: kernel %s", j->src->symbol);
  if (j->spawn_err)
    return PTC_ERR(UNAVAILABLE, "cpu backend: cannot run the C compiler '%s': %s (set PTC_CC)",
                   cc, strerror(j->spawn_err));
  ptc_status s = PTC_ERR(INTERNAL, "cpu backend: compiling kernel %s failed (see compiler_log)",
                         j->src->symbol);
  s = ptc_status_add_detail(s, "compiler_log", j->log.data ? j->log.data : "");
  return ptc_status_add_detail(s, "source_path", j->c_path);
}

/* Cache lookup for one kernel: true on a usable entry. A broken entry is
 * deleted so that it is rebuilt. */
static bool try_cached(ptc_context* ctx, compile_job* j, cpu_compiled* out) {
  if (access(j->so_path, F_OK) != 0) return false;
  char why[512];
  if (load_so(j->so_path, j->src->symbol, out, why, sizeof why)) {
    if (access(j->c_path, F_OK) != 0) /* keep the source beside it for inspection */
      ptc_status_destroy(cpu_cache_write_atomic(j->c_path, j->src->source, strlen(j->src->source)));
    return true;
  }
  ptc_log(ctx, PTC_LOG_WARN, "cpu backend: cache entry %s is unusable (%s); rebuilding",
          j->so_path, why);
  unlink(j->so_path);
  return false;
}

static ptc_status prepare_jobs(ptc_context* ctx, const cpu_cache_loc* loc, const char* ident,
                               const cpu_kernel_src* srcs, compile_job* jobs, size_t n,
                               cpu_compiled* out, size_t* n_todo, size_t* todo) {
  for (size_t i = 0; i < n; i++) {
    compile_job* j = &jobs[i];
    j->src = &srcs[i];
    ptc_sb_init(&j->log);
    char key[65];
    PTC_TRY(cpu_cache_key(srcs[i].source, ident, key));
    if (!cpu_cache_path(loc, key, ".so", j->so_path, sizeof j->so_path) ||
        !cpu_cache_path(loc, key, ".c", j->c_path, sizeof j->c_path))
      return PTC_ERR(INVALID_ARGUMENT, "cpu backend: cache folder path too long: %s", loc->dir);
    double t0 = now_ms();
    if (!loc->private_dir && try_cached(ctx, j, &out[i])) {
      out[i].cache_hit = true;
      ptc_log(ctx, PTC_LOG_INFO, "cpu backend: kernel %s: cache hit (%.1f ms) %s",
              srcs[i].symbol, now_ms() - t0, j->so_path);
      continue;
    }
    todo[(*n_todo)++] = i;
  }
  return PTC_OK;
}

static ptc_status finish_jobs(ptc_context* ctx, compile_job* jobs, const size_t* todo,
                              size_t n_todo, cpu_compiled* out) {
  for (size_t t = 0; t < n_todo; t++) {
    compile_job* j = &jobs[todo[t]];
    if (j->err || j->spawn_err || j->status != 0) return compile_error(j);
    char why[512];
    if (!load_so(j->so_path, j->src->symbol, &out[todo[t]], why, sizeof why))
      return PTC_ERR(INTERNAL, "cpu backend: loading kernel %s from %s failed: %s",
                     j->src->symbol, j->so_path, why);
    ptc_log(ctx, PTC_LOG_INFO, "cpu backend: kernel %s: cache miss, compiled in %.1f ms -> %s",
            j->src->symbol, j->ms, j->so_path);
  }
  return PTC_OK;
}

static void free_jobs(compile_job* jobs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    ptc_sb_free(&jobs[i].log);
    ptc_status_destroy(jobs[i].err);
  }
  free(jobs);
}

ptc_status cpu_compile_all(ptc_context* ctx, const cpu_kernel_src* srcs, size_t n,
                           cpu_compiled* out) {
  memset(out, 0, n * sizeof *out);
  if (n == 0) return PTC_OK;
  const char* ident = cpu_cc_identity();
  if (!ident)
    return PTC_ERR(UNAVAILABLE, "cpu backend: no C compiler found (set PTC_CC): '%s --version' "
                   "does not run", cpu_cc_command());
  cpu_cache_loc loc;
  PTC_TRY(cpu_cache_open(&loc));
  compile_job* jobs = calloc(n, sizeof *jobs);
  size_t* todo = calloc(n, sizeof *todo);
  job_queue q = {jobs, todo, 0, 0};
  ptc_status s = jobs && todo ? PTC_OK : ptc_status_oom();
  if (!s) s = prepare_jobs(ctx, &loc, ident, srcs, jobs, n, out, &q.n, todo);
  if (!s && q.n) compile_parallel(&q);
  if (!s) s = finish_jobs(ctx, jobs, todo, q.n, out);
  if (s)
    for (size_t i = 0; i < n; i++) cpu_compiled_unload(&out[i]);
  if (jobs) free_jobs(jobs, n);
  free(todo);
  if (loc.private_dir) rmdir(loc.dir); /* only if nothing was loaded from it */
  return s;
}
