/* test_cuda_tune.c - the cuda backend's launch-config autotuning
 * (backends/cuda/cuda_tune.c, modes "max-autotune*").
 *
 *  --cpu (no GPU needed): the cache logic - keys differ by kernel, device
 *    and sizes; the .tune file format round-trips and rejects junk; a stored
 *    choice is written under $PTC_CACHE_DIR/cuda and read back from disk
 *    after the process table is emptied; PTC_CACHE=0 writes nothing; the
 *    candidate lists (only tunable pointwise steps get more than the
 *    heuristic; grid sizes follow the block and wave cap); the describe line.
 *  default (GPU; exit 77 without one): a pointwise chain on 2^22 floats
 *    (--log2n K: 2^K, e.g. 26 for the benchmark's size; the log shows the
 *    default and the tuned time)
 *    compiled in mode "max-autotune-no-cudagraphs" gives the same bits as
 *    the default mode, logs one "tuned launch" line and writes one .tune
 *    file; a second executable (after the process table is emptied, as in a
 *    new process) reuses the file and times nothing.
 * PTC_CACHE_DIR is pointed at a fresh temporary folder first. */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_plan.h"

#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;
#define CHECK(c)                                                   \
  do {                                                             \
    if (!(c)) {                                                    \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);          \
      failures++;                                                  \
    }                                                              \
  } while (0)

static char cache_root[256];

static int count_tune_files(void) {
  char dir[300];
  snprintf(dir, sizeof dir, "%s/cuda", cache_root);
  DIR* d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    n += len > 5 && strcmp(e->d_name + len - 5, ".tune") == 0;
  }
  closedir(d);
  return n;
}

/* ---- CPU part ------------------------------------------------------------------------ */

static void cpu_tests(void) {
  char k1[65], k2[65], k3[65], k4[65];
  const char* kk = "0123456789abcdef";
  CHECK(!cuda_tune_key(kk, "H100", 132, 90, 1 << 22, 1, 1 << 22, k1));
  CHECK(!cuda_tune_key(kk, "H100", 132, 90, 1 << 23, 1, 1 << 23, k2));
  CHECK(!cuda_tune_key(kk, "H200", 132, 90, 1 << 22, 1, 1 << 22, k3));
  CHECK(!cuda_tune_key("fedcba", "H100", 132, 90, 1 << 22, 1, 1 << 22, k4));
  CHECK(strcmp(k1, k2) && strcmp(k1, k3) && strcmp(k1, k4) && strlen(k1) == 64);
  char again[65];
  CHECK(!cuda_tune_key(kk, "H100", 132, 90, 1 << 22, 1, 1 << 22, again) && !strcmp(k1, again));
  ptc_status s = cuda_tune_key("", "H100", 132, 90, 1, 1, 1, again);
  CHECK(s && ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT);
  ptc_status_destroy(s);

  cuda_launch_cfg c = {512, 1, 8}, r;
  char text[96];
  cuda_tune_format(&c, text, sizeof text);
  CHECK(cuda_tune_parse(text, &r) && r.block_x == 512 && r.block_y == 1 && r.waves == 8);
  CHECK(!cuda_tune_parse("ptc-tune-1 block 0 1 waves 2\n", &r));
  CHECK(!cuda_tune_parse("ptc-tune-1 block 2048 1 waves 2\n", &r));
  CHECK(!cuda_tune_parse("ptc-tune-1 block 256 1 waves 2", &r)); /* truncated */
  CHECK(!cuda_tune_parse("garbage", &r));

  /* store -> file; forget; lookup reads the file */
  int before = count_tune_files();
  CHECK(!cuda_tune_lookup(k1, &r));
  CHECK(!cuda_tune_store(k1, &c));
  CHECK(count_tune_files() == before + 1);
  cuda_tune_forget();
  memset(&r, 0, sizeof r);
  CHECK(cuda_tune_lookup(k1, &r) && r.block_x == 512 && r.waves == 8);
  /* a corrupt file is not trusted */
  char path[400];
  snprintf(path, sizeof path, "%s/cuda/%s.tune", cache_root, k2);
  FILE* f = fopen(path, "w");
  if (f) {
    fputs("ptc-tune-1 block 99999 1 waves 1\n", f);
    fclose(f);
  }
  CHECK(!cuda_tune_lookup(k2, &r));
  /* PTC_CACHE=0: memory only */
  setenv("PTC_CACHE", "0", 1);
  int n0 = count_tune_files();
  CHECK(!cuda_tune_store(k3, &c));
  CHECK(count_tune_files() == n0);
  unsetenv("PTC_CACHE");
  cuda_tune_forget();

  /* candidates */
  cuda_step st;
  memset(&st, 0, sizeof st);
  st.layout = CUDA_LAYOUT_POINTWISE;
  st.block_x = 256;
  st.block_y = 1;
  st.slots = 256 * 4;
  st.max_threads = 512;
  cuda_launch_cfg cand[32];
  CHECK(cuda_tune_candidates(&st, cand, 32) == 1); /* not tunable */
  CHECK(cand[0].block_x == 256 && cand[0].waves == CUDA_TUNE_DEFAULT_WAVES);
  st.tunable = true;
  size_t n = cuda_tune_candidates(&st, cand, 32);
  CHECK(n == 15);
  bool has512 = false;
  for (size_t i = 1; i < n; i++) {
    has512 |= cand[i].block_x == 512;
    CHECK(!(cand[i].block_x == 256 && cand[i].waves == CUDA_TUNE_DEFAULT_WAVES));
  }
  CHECK(has512);
  st.max_threads = 256;
  CHECK(cuda_tune_candidates(&st, cand, 32) == 10);
  /* grid sizes: the default matches the old heuristic; no cap covers xn */
  cuda_launch_cfg d = {256, 1, 4}, big = {512, 1, 0};
  CHECK(cuda_tune_blocks(&st, &d, 132, (int64_t)1 << 26) == 132 * 8 * 4);
  CHECK(cuda_tune_blocks(&st, &big, 132, (int64_t)1 << 26) == ((int64_t)1 << 26) / (512 * 4));
  CHECK(cuda_tune_blocks(&st, &d, 132, 10) == 1);
  /* describe: a tunable step before any run, a non-tunable one, a default-mode plan */
  cuda_plan plan;
  memset(&plan, 0, sizeof plan);
  plan.autotune = true;
  st.max_threads = 512;
  snprintf(st.tune_key, sizeof st.tune_key, "%s", kk);
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  cuda_tune_describe(&plan, &st, &sb);
  CHECK(sb.data && strstr(sb.data, "autotune: 15 launch configs; not tuned yet"));
  ptc_sb_free(&sb);
  st.layout = CUDA_LAYOUT_ROW;
  ptc_sb_init(&sb);
  cuda_tune_describe(&plan, &st, &sb);
  CHECK(sb.data && strstr(sb.data, "not tunable"));
  ptc_sb_free(&sb);
  plan.autotune = false;
  ptc_sb_init(&sb);
  cuda_tune_describe(&plan, &st, &sb);
  CHECK(!sb.data || !*sb.data);
  ptc_sb_free(&sb);
  CHECK(cuda_tune_candidates(&st, cand, 32) == 1);
  CHECK(cuda_tune_mode("max-autotune") && cuda_tune_mode("max-autotune-no-cudagraphs"));
  CHECK(!cuda_tune_mode(NULL) && !cuda_tune_mode("default") && !cuda_tune_mode("reduce-overhead"));
}

/* ---- GPU part ------------------------------------------------------------------------- */

static atomic_int tuned_lines;

static void on_log(void* user, int32_t level, const char* msg) {
  (void)user;
  (void)level;
  if (strstr(msg, "tuned launch")) {
    atomic_fetch_add(&tuned_lines, 1);
    printf("log: %s\n", msg);
  }
}

static int64_t N = (int64_t)1 << 22; /* --log2n K: 2^K elements */

static ptc_status build(ptc_context* ctx, ptc_graph** out) {
  ptc_graph* g;
  PTC_TRY(ptc_graph_create(ctx, &g));
  ptc_dim sh[1] = {{N, 0, 0}};
  ptc_value x, y;
  ptc_attr two = ptc_attr_float("other", 2.0), one = ptc_attr_float("other", 1.0);
  ptc_status s = ptc_graph_add_input(g, "x", PTC_F32, sh, 1, NULL, &x);
  if (!s) s = ptc_graph_add_node(g, "sin", &x, 1, NULL, 0, &y, 1, NULL);
  if (!s) s = ptc_graph_add_node(g, "mul", &y, 1, &two, 1, &y, 1, NULL);
  if (!s) s = ptc_graph_add_node(g, "add", &y, 1, &one, 1, &y, 1, NULL);
  if (!s) s = ptc_graph_add_node(g, "relu", &y, 1, NULL, 0, &y, 1, NULL);
  if (!s) s = ptc_graph_add_node(g, "cos", &y, 1, NULL, 0, &y, 1, NULL);
  if (!s) s = ptc_graph_add_node(g, "sigmoid", &y, 1, NULL, 0, &y, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, y);
  if (s) {
    ptc_graph_destroy(g);
    return s;
  }
  *out = g;
  return PTC_OK;
}

/* Compiles g in `mode`, runs it on x (device) and copies the output to host. */
static bool run_mode(ptc_context* ctx, const ptc_graph* g, const char* mode, const ptc_tensor* x,
                     float* host) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  o.mode = mode;
  ptc_executable* e = NULL;
  ptc_results* r = NULL;
  ptc_status s = ptc_compile(ctx, g, &o, &e);
  if (!s) s = ptc_executable_run_alloc(e, x, 1, NULL, &r);
  bool ok = !s;
  if (s) printf("FAIL mode %s: %s\n", mode ? mode : "default", ptc_status_message(s));
  ptc_status_destroy(s);
  if (ok) {
    const ptc_tensor* t = ptc_results_get(r, 0);
    const cu_api* cu = &cuda_libs_get()->cu;
    ok = cu->MemcpyDtoHAsync(host, (cu_deviceptr)(uintptr_t)t->data + t->byte_offset,
                             (size_t)N * sizeof(float), NULL) == CU_SUCCESS &&
         cu->StreamSynchronize(NULL) == CU_SUCCESS;
    if (!ok) printf("FAIL: download\n");
  }
  ptc_results_destroy(r);
  ptc_executable_release(e);
  return ok;
}

static int gpu_tests(void) {
  const char* why = NULL;
  if (!ptc_backend_available("cuda", &why)) {
    printf("SKIP: the cuda backend is not available here: %s\n", why ? why : "?");
    return 77;
  }
  ptc_context_options co;
  ptc_context_options_init(&co);
  co.log_fn = on_log;
  co.log_level = PTC_LOG_INFO;
  ptc_context* ctx;
  if (ptc_context_create(&co, &ctx)) return 1;
  const cuda_device* dev = cuda_device_get();
  cu_context prev;
  ptc_status_destroy(cuda_ctx_enter(dev, &prev));
  ptc_graph* g = NULL;
  ptc_status s = build(ctx, &g);
  float* hx = malloc((size_t)N * sizeof(float));
  float* a = malloc((size_t)N * sizeof(float));
  float* b = malloc((size_t)N * sizeof(float));
  float* c = malloc((size_t)N * sizeof(float));
  if (s || !hx || !a || !b || !c) return 1;
  for (int64_t i = 0; i < N; i++) hx[i] = (float)((i * 7919) % 20001 - 10000) * 1e-3f;
  cu_deviceptr dx = 0;
  if (cuda_alloc((size_t)N * sizeof(float), NULL, &dx)) return 1;
  const cu_api* cu = &cuda_libs_get()->cu;
  if (cu->MemcpyHtoDAsync(dx, hx, (size_t)N * sizeof(float), NULL) != CU_SUCCESS ||
      cu->StreamSynchronize(NULL) != CU_SUCCESS)
    return 1;
  int64_t shape[1] = {N};
  ptc_tensor x;
  memset(&x, 0, sizeof x);
  x.data = (void*)(uintptr_t)dx;
  x.device.device_type = PTC_DEVICE_CUDA;
  x.device.device_id = 0;
  x.ndim = 1;
  x.dtype = ptc_dtype_to_dl(PTC_F32);
  x.shape = shape;

  CHECK(run_mode(ctx, g, NULL, &x, a));
  CHECK(atomic_load(&tuned_lines) == 0);
  int files0 = count_tune_files();
  CHECK(run_mode(ctx, g, "max-autotune-no-cudagraphs", &x, b));
  CHECK(atomic_load(&tuned_lines) == 1);
  CHECK(count_tune_files() == files0 + 1);
  CHECK(memcmp(a, b, (size_t)N * sizeof(float)) == 0);
  /* as a new process: the table is empty, the file is reused, nothing is timed */
  cuda_tune_forget();
  CHECK(run_mode(ctx, g, "max-autotune-no-cudagraphs", &x, c));
  CHECK(atomic_load(&tuned_lines) == 1);
  CHECK(count_tune_files() == files0 + 1);
  CHECK(memcmp(a, c, (size_t)N * sizeof(float)) == 0);
  cuda_free(dx);
  cuda_ctx_leave(dev, prev);
  ptc_graph_destroy(g);
  ptc_context_release(ctx);
  free(hx);
  free(a);
  free(b);
  free(c);
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  snprintf(cache_root, sizeof cache_root, "%s/ptc-tune-test-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(cache_root)) {
    printf("FAIL: mkdtemp\n");
    return 1;
  }
  setenv("PTC_CACHE_DIR", cache_root, 1);
  unsetenv("PTC_CACHE");
  int rc;
  if (argc > 2 && !strcmp(argv[1], "--log2n")) {
    int k = atoi(argv[2]);
    N = (int64_t)1 << (k >= 4 && k <= 30 ? k : 22);
  }
  if (argc > 1 && !strcmp(argv[1], "--cpu")) {
    cpu_tests();
    rc = failures ? 1 : 0;
  } else {
    rc = gpu_tests();
  }
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_root);
  if (system(cmd) != 0) printf("note: could not remove %s\n", cache_root);
  printf("%s\n", rc == 0 ? "ok" : rc == 77 ? "skipped" : "FAILED");
  return rc;
}
