/* test_cpu_compile.c - the CPU backend's compiler driver and kernel cache:
 * a cache hit on the second compile (same process and a second process),
 * rebuild of a corrupted entry, PTC_CACHE=0 (private folder removed at
 * unload), a compiler error with its log and source path, 8 kernels
 * compiled in parallel, and PTC_CC naming a missing compiler. */
#include <ftw.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../backends/cpu/cpu_rt.h"
#include "../check.h"

extern char** environ;
static ptc_context* ctx;
static char cache_dir[256];

/* A kernel `ptc_t<id>` writing bufs[0][i] = i * mul + add for i < syms[0]. */
static void make_src(cpu_kernel_src* s, int id, int mul, int add) {
  memset(s, 0, sizeof *s);
  snprintf(s->symbol, sizeof s->symbol, "ptc_t%d", id);
  char buf[1024];
  snprintf(buf, sizeof buf,
           "#include <stdint.h>\n"
           "void %s(void* const* bufs, const int64_t* syms) {\n"
           "  float* out = (float*)bufs[0];\n"
           "#pragma omp parallel for if (syms[0] > 100000)\n"
           "  for (int64_t i = 0; i < syms[0]; i++) out[i] = (float)(i * %d + %d);\n"
           "}\n",
           s->symbol, mul, add);
  s->source = strdup(buf);
}

static void src_free(cpu_kernel_src* s) {
  free(s->source);
  free(s->bufs);
  memset(s, 0, sizeof *s);
}

static bool kernel_works(const cpu_compiled* c, int mul, int add) {
  float out[16];
  int64_t n = 16;
  void* bufs[1] = {out};
  if (!c->fn) return false;
  c->fn(bufs, &n);
  for (int i = 0; i < 16; i++)
    if (out[i] != (float)(i * mul + add)) return false;
  return true;
}

static bool file_exists(const char* p) { return access(p, F_OK) == 0; }

static void test_hit_same_process(void) {
  cpu_kernel_src s;
  make_src(&s, 1, 3, 1);
  cpu_compiled c[2];
  CHECK_OK(cpu_compile_all(ctx, &s, 1, &c[0]));
  CHECK(!c[0].cache_hit);
  CHECK(kernel_works(&c[0], 3, 1));
  CHECK(strncmp(c[0].path, cache_dir, strlen(cache_dir)) == 0);
  CHECK(strstr(c[0].path, "/cpu/") != NULL);
  char src_path[600];
  snprintf(src_path, sizeof src_path, "%.*s.c", (int)strlen(c[0].path) - 3, c[0].path);
  CHECK(file_exists(src_path)); /* source kept beside the entry */
  struct stat st;
  char dir[600];
  snprintf(dir, sizeof dir, "%s/cpu", cache_dir);
  CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
  CHECK_OK(cpu_compile_all(ctx, &s, 1, &c[1]));
  CHECK(c[1].cache_hit);
  CHECK(strcmp(c[0].path, c[1].path) == 0);
  CHECK(kernel_works(&c[1], 3, 1));
  cpu_compiled_unload(&c[0]);
  cpu_compiled_unload(&c[1]);
  CHECK(file_exists(src_path)); /* cache entries stay after unload */
  src_free(&s);
}

/* Child mode: compile kernel 1 and exit 0 on a cache hit, 3 on a miss. */
static int child_main(void) {
  cpu_kernel_src s;
  make_src(&s, 1, 3, 1);
  cpu_compiled c;
  ptc_status st = cpu_compile_all(NULL, &s, 1, &c);
  int rc = st ? 2 : !c.cache_hit ? 3 : kernel_works(&c, 3, 1) ? 0 : 4;
  ptc_status_destroy(st);
  cpu_compiled_unload(&c);
  src_free(&s);
  return rc;
}

static void test_hit_second_process(void) {
  char* argv[] = {"/proc/self/exe", "--child", NULL};
  pid_t pid;
  CHECK(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ) == 0);
  int st = 0;
  waitpid(pid, &st, 0);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_corrupt_entry(void) {
  cpu_kernel_src s;
  make_src(&s, 2, 5, 2);
  cpu_compiled c;
  CHECK_OK(cpu_compile_all(ctx, &s, 1, &c));
  char path[512];
  snprintf(path, sizeof path, "%s", c.path);
  cpu_compiled_unload(&c);
  /* replace the entry by garbage (a new file: the old mapping is gone) */
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s.garbage", path);
  FILE* f = fopen(tmp, "wb");
  CHECK(f != NULL);
  if (f) {
    fputs("\x7f" "ELF this is not a shared object", f);
    fclose(f);
  }
  CHECK(rename(tmp, path) == 0);
  CHECK_OK(cpu_compile_all(ctx, &s, 1, &c));
  CHECK(!c.cache_hit); /* rebuilt, not trusted */
  CHECK(kernel_works(&c, 5, 2));
  cpu_compiled_unload(&c);
  /* a valid object lacking the symbol is rebuilt too */
  cpu_kernel_src other;
  make_src(&other, 3, 1, 0);
  cpu_compiled o;
  CHECK_OK(cpu_compile_all(ctx, &other, 1, &o));
  char opath[512];
  snprintf(opath, sizeof opath, "%s", o.path);
  cpu_compiled_unload(&o);
  char cmd[2200];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s.x' && mv '%s.x' '%s'", opath, path, path, path);
  CHECK(system(cmd) == 0);
  CHECK_OK(cpu_compile_all(ctx, &s, 1, &c));
  CHECK(!c.cache_hit);
  CHECK(kernel_works(&c, 5, 2));
  cpu_compiled_unload(&c);
  CHECK_OK(cpu_compile_all(ctx, &s, 1, &c));
  CHECK(c.cache_hit);
  cpu_compiled_unload(&c);
  src_free(&s);
  src_free(&other);
}

static void test_no_cache(void) {
  setenv("PTC_CACHE", "0", 1);
  CHECK(strcmp(cpu_cache_dir(), "") == 0);
  cpu_kernel_src s[2];
  make_src(&s[0], 4, 2, 7);
  make_src(&s[1], 5, 1, 1);
  cpu_compiled c[2];
  CHECK_OK(cpu_compile_all(ctx, s, 2, c));
  CHECK(!c[0].cache_hit && !c[1].cache_hit);
  CHECK(strstr(c[0].path, "ptc-nocache-") != NULL);
  CHECK(strncmp(c[0].path, cache_dir, strlen(cache_dir)) != 0);
  CHECK(kernel_works(&c[0], 2, 7) && kernel_works(&c[1], 1, 1));
  char dir[512];
  snprintf(dir, sizeof dir, "%s", c[0].path);
  *strrchr(dir, '/') = 0;
  CHECK(file_exists(dir));
  cpu_compiled_unload(&c[0]);
  CHECK(file_exists(dir)); /* kernel 1 still lives there */
  cpu_compiled_unload(&c[1]);
  CHECK(!file_exists(dir)); /* removed with the last kernel */
  /* the same source compiles again (no reuse) */
  CHECK_OK(cpu_compile_all(ctx, s, 1, c));
  CHECK(!c[0].cache_hit);
  cpu_compiled_unload(&c[0]);
  unsetenv("PTC_CACHE");
  CHECK(strcmp(cpu_cache_dir(), cache_dir) == 0);
  src_free(&s[0]);
  src_free(&s[1]);
}

static void test_compiler_error(void) {
  cpu_kernel_src s[2];
  make_src(&s[0], 6, 1, 2);
  memset(&s[1], 0, sizeof s[1]);
  snprintf(s[1].symbol, sizeof s[1].symbol, "ptc_k3");
  s[1].source = strdup("void ptc_k3(void* const* bufs, const long* syms) { this is not C; }\n");
  cpu_compiled c[2];
  ptc_status st = cpu_compile_all(ctx, s, 2, c);
  CHECK(ptc_status_code(st) == PTC_CODE_INTERNAL);
  CHECK(strstr(ptc_status_message(st), "compiling kernel ptc_k3 failed (see compiler_log)") != NULL);
  const char* log = ptc_status_detail(st, "compiler_log");
  CHECK(log && strstr(log, "error") != NULL);
  const char* src = ptc_status_detail(st, "source_path");
  CHECK(src && file_exists(src));
  CHECK(c[0].handle == NULL && c[1].handle == NULL); /* nothing stays loaded */
  ptc_status_destroy(st);
  src_free(&s[0]);
  src_free(&s[1]);
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Through a compiler wrapper that sleeps 0.3 s per call, so the timing
 * shows the overlap even on a loaded machine. */
static void test_parallel(void) {
  char wrapper[300];
  snprintf(wrapper, sizeof wrapper, "%s/slowcc.sh", cache_dir);
  FILE* f = fopen(wrapper, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs("#!/bin/sh\nsleep 0.3\nexec cc \"$@\"\n", f);
  fclose(f);
  chmod(wrapper, 0700);
  setenv("PTC_CC", wrapper, 1);
  setenv("PTC_CACHE", "0", 1);
  CHECK(cpu_cc_identity() != NULL);
  cpu_kernel_src s[8];
  cpu_compiled c[8];
  for (int i = 0; i < 8; i++) make_src(&s[i], 10 + i, i + 2, 100 + i);
  double t0 = now_ms();
  CHECK_OK(cpu_compile_all(ctx, s, 8, c));
  double par = now_ms() - t0;
  for (int i = 0; i < 8; i++) {
    CHECK(!c[i].cache_hit);
    CHECK(kernel_works(&c[i], i + 2, 100 + i));
  }
  for (int i = 0; i < 8; i++) cpu_compiled_unload(&c[i]);
  t0 = now_ms();
  for (int i = 0; i < 8; i++) { /* the same 8, one at a time */
    CHECK_OK(cpu_compile_all(ctx, &s[i], 1, &c[i]));
    cpu_compiled_unload(&c[i]);
  }
  double serial = now_ms() - t0;
  unsetenv("PTC_CACHE");
  unsetenv("PTC_CC");
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  printf("8 kernels: parallel %.0f ms, one at a time %.0f ms (%ld cores)\n", par, serial, cores);
  if (cores >= 2) CHECK(par < serial * 0.75);
  for (int i = 0; i < 8; i++) src_free(&s[i]);
}

static void test_missing_compiler(void) {
  setenv("PTC_CC", "/nonexistent/ptc-no-such-cc", 1);
  CHECK(cpu_cc_identity() == NULL);
  cpu_kernel_src s;
  make_src(&s, 30, 1, 1);
  cpu_compiled c;
  CHECK_ERR(cpu_compile_all(ctx, &s, 1, &c), PTC_CODE_UNAVAILABLE, "no C compiler found (set PTC_CC)");
  /* a compiler given with arguments ("ccache cc" style) works */
  setenv("PTC_CC", "cc -DPTC_TEST_FLAG=1", 1);
  CHECK(cpu_cc_identity() != NULL);
  CHECK_OK(cpu_compile_all(ctx, &s, 1, &c));
  CHECK(kernel_works(&c, 1, 1));
  cpu_compiled_unload(&c);
  unsetenv("PTC_CC");
  src_free(&s);
}

static int rm_entry(const char* p, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(p);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--child") == 0) return child_main();
  snprintf(cache_dir, sizeof cache_dir, "/tmp/ptc-test-cache-XXXXXX");
  if (!mkdtemp(cache_dir)) return 1;
  setenv("PTC_CACHE_DIR", cache_dir, 1);
  unsetenv("PTC_CACHE");
  unsetenv("PTC_CC");
  CHECK_OK(ptc_context_create(NULL, &ctx));
  CHECK(strcmp(cpu_cache_dir(), cache_dir) == 0);
  test_hit_same_process();
  test_hit_second_process();
  test_corrupt_entry();
  test_no_cache();
  test_compiler_error();
  test_parallel();
  test_missing_compiler();
  ptc_context_release(ctx);
  nftw(cache_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return check_summary("test_cpu_compile");
}
