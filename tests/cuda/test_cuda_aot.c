/* test_cuda_aot.c - the table of ahead-of-time cubins (backends/cuda/cuda_aot.h;
 * built only with -Daot_kernels=enabled/auto and NVRTC). No GPU needed:
 *  - every promised (source, arch) of the fixed modules has an entry (the
 *    wgmma and float32 attention entries counted), and
 *    the lookup returns it for the exact source the module builds at run
 *    time (so a change of a module's text without a rebuilt table fails);
 *  - a changed source, another architecture and PTC_CUDA_AOT=0 miss;
 *  - cuda_build_all takes the embedded cubin (cache hit, same bytes,
 *    nothing compiled) with the disk cache off;
 *  - prints the table's size and the cost of a lookup. */
#include "backends/cuda/cuda_aot.h"
#include "backends/cuda/cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;
#define CHECK(c, ...)                                   \
  do {                                                  \
    if (!(c)) {                                         \
      failures++;                                       \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                     \
      fprintf(stderr, "\n");                            \
    }                                                   \
  } while (0)

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(void) {
  unsetenv("PTC_CUDA_AOT");
  static cuda_aot_src srcs[CUDA_AOT_SRC_MAX];
  size_t n = 0;
  ptc_status s = cuda_aot_sources(srcs, CUDA_AOT_SRC_MAX, &n);
  CHECK(!s, "cuda_aot_sources: %s", s ? ptc_status_message(s) : "");
  ptc_status_destroy(s);
  CHECK(n >= 12 + 2 * 6 + 2, "%zu promised sources", n);
  CHECK(ptc_cuda_aot_count == n, "table holds %zu entries, %zu promised", ptc_cuda_aot_count, n);
  CHECK(ptc_cuda_aot_cuda_version >= 11000, "table's CUDA version %d", ptc_cuda_aot_cuda_version);
  size_t bytes = 0, wg = 0, f32 = 0;
  for (size_t i = 0; i < n; i++) {
    const cuda_aot_entry* e = cuda_aot_lookup(srcs[i].src.data, srcs[i].arch);
    CHECK(e != NULL, "no entry for %s (the table is stale: rebuild it)", srcs[i].label);
    if (!e) continue;
    bytes += e->size;
    if (strstr(srcs[i].label, "wgmma")) wg++;
    if (strstr(srcs[i].label, "attention f32")) f32++;
    CHECK(e->size > 4 && memcmp(e->data, "\177ELF", 4) == 0, "%s: not a cubin", srcs[i].label);
    CHECK(strcmp(e->label, srcs[i].label) == 0, "%s: entry labelled %s", srcs[i].label, e->label);
    /* another architecture (sm_90 plain for sm_90a, sm_86 for the others) misses */
    int other = (srcs[i].arch & CUDA_ARCH_SPECIFIC) ? 90 : 86;
    CHECK(cuda_aot_lookup(srcs[i].src.data, other) == NULL, "%s: hit for sm_%d", srcs[i].label, other);
  }
  CHECK(wg == 12, "%zu wgmma attention entries (12 promised)", wg);
  CHECK(f32 == 4, "%zu float32 attention entries (4 promised: d64/d128 x sm_80/sm_90)", f32);
  /* a changed source misses */
  if (n > 0) {
    ptc_strbuf changed;
    ptc_sb_init(&changed);
    ptc_sb_append(&changed, srcs[0].src.data);
    ptc_sb_append(&changed, "// changed\n");
    CHECK(!changed.oom && cuda_aot_lookup(changed.data, srcs[0].arch) == NULL, "changed source hits");
    changed.data[0] = ' '; /* same length, one byte differs */
    CHECK(cuda_aot_lookup(changed.data, srcs[0].arch) == NULL, "changed byte hits");
    ptc_sb_free(&changed);
    setenv("PTC_CUDA_AOT", "0", 1);
    CHECK(cuda_aot_lookup(srcs[0].src.data, srcs[0].arch) == NULL, "PTC_CUDA_AOT=0 hits");
    unsetenv("PTC_CUDA_AOT");
  }
  /* the hook: cuda_build_all hands out the embedded bytes, compiling nothing */
  if (n > 0) {
    setenv("PTC_CACHE", "0", 1);
    cuda_build_job job;
    memset(&job, 0, sizeof job);
    job.source = srcs[0].src.data;
    job.name = "aot_test";
    double t0 = now_ms();
    s = cuda_build_all(NULL, &job, 1, srcs[0].arch);
    double ms = now_ms() - t0;
    if (!s) { /* a second time: what a later module build costs (first: one-time setup) */
      cuda_cubin_free(&job.cubin);
      t0 = now_ms();
      s = cuda_build_all(NULL, &job, 1, srcs[0].arch);
      printf("cuda_build_all, embedded cubin, first call %.2f ms, second %.2f ms\n", ms, now_ms() - t0);
    }
    CHECK(!s, "cuda_build_all: %s", s ? ptc_status_message(s) : "");
    ptc_status_destroy(s);
    const cuda_aot_entry* e = cuda_aot_lookup(srcs[0].src.data, srcs[0].arch);
    CHECK(job.cache_hit && e && job.cubin.size == e->size &&
              memcmp(job.cubin.data, e->data, e->size) == 0,
          "cuda_build_all did not take the embedded cubin");
    CHECK(ms < 200, "cuda_build_all took %.1f ms for an embedded cubin", ms);
    cuda_cubin_free(&job.cubin);
    unsetenv("PTC_CACHE");
  }
  /* lookup cost: the largest source, hit and miss */
  size_t big = 0;
  for (size_t i = 1; i < n; i++)
    if (srcs[i].src.len > srcs[big].src.len) big = i;
  if (n > 0) {
    int reps = 200;
    double t0 = now_ms();
    for (int r = 0; r < reps; r++) CHECK(cuda_aot_lookup(srcs[big].src.data, srcs[big].arch), "miss");
    double hit = (now_ms() - t0) / reps;
    printf("table: %zu entries, %zu cubin bytes; lookup of a %zu-byte source: %.3f ms\n", n, bytes,
           srcs[big].src.len, hit);
  }
  cuda_aot_sources_free(srcs, n);
  if (failures) {
    fprintf(stderr, "%d failure(s)\n", failures);
    return 1;
  }
  printf("test_cuda_aot: ok\n");
  return 0;
}
