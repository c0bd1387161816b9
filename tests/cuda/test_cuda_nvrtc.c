/* test_cuda_nvrtc.c - compile-only test of the cuda code generator (CI has
 * NVRTC but no GPU): every graph of the random-graph generator
 * (tests/randgraph.h; every tenth also unfused) and every PyTorch op case of
 * tests/data/ops_*.json is lowered, scheduled and generated exactly as
 * ptc_compile(backend "cuda") does, and the kernels are compiled by NVRTC
 * for sm_80 and sm_90, and so are the support kernels (cuda_support.cuh)
 * and the tensor-core GEMM (cuda_gemm_tc.cuh). Graphs are batched into shared translation units
 * (BATCH graphs each); a batch that fails is retried graph by graph to name
 * the culprit, whose kernels and NVRTC log are printed.
 *
 * Usage: test_cuda_nvrtc [--seeds N] [--first N] [--batch N] [--graph G.json]... [CASES.json...]
 * --graph adds a saved graph (ptc_graph_save / Python Graph.to_json(), e.g.
 * a model's): its kernels are generated and compiled like the others (with
 * PTC_CUDA_SAVE_TU they can be read: that is how model kernels are looked at
 * without a GPU).
 * Environment: PTC_CUDA_SAVE_TU=FILE appends every batch's source to FILE;
 * PTC_RANDGRAPH_COUNT / PTC_RANDGRAPH_FIRST override the seed
 * range (default 300 seeds from 1); PTC_CUDA_ARCHS="80,90" the targets.
 * Exit status: 0 all compiled, 1 a failure, 77 (skip) when NVRTC cannot be
 * opened (the reason is printed).
 */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_gemm_tc.h"
#include "backends/cuda/cuda_plan.h"
#include "tests/case_load.h"
#include "tests/randgraph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { DEFAULT_SEEDS = 300, DEFAULT_BATCH = 150, MAX_ARCHS = 8, MAX_PRINTED = 6 };

typedef struct item {
  ptc_graph* g;        /* borrowed */
  bool fuse;
  char label[96];
} item;

typedef struct tester {
  ptc_context* ctx;
  int archs[MAX_ARCHS];
  size_t n_archs;
  size_t batch_cap;
  item* batch;
  size_t n_batch;
  /* owned graphs of the pending batch (freed at flush) */
  ptc_graph** owned;
  rg_graph* rgs;
  size_t n_owned, n_rgs;
  cuda_check_stats st;
  size_t graphs, failures, printed;
} tester;

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void print_failure(tester* t, const item* it, ptc_status s, const char* source) {
  t->failures++;
  printf("FAIL %s%s: %s: %s\n", it->label, it->fuse ? "" : " (unfused)",
         ptc_code_name(ptc_status_code(s)), ptc_status_message(s));
  if (t->printed++ >= MAX_PRINTED) return;
  const char* log = ptc_status_detail(s, "compiler_log");
  if (source) printf("---- generated kernels ----\n%s\n", source);
  if (log) printf("---- NVRTC log ----\n%.20000s\n", log);
  ptc_status_destroy(ptc_graph_print(it->g, stdout));
}

/* Generates one graph's kernels into tu under a unique prefix. */
static ptc_status gen_item(tester* t, const item* it, size_t idx, ptc_strbuf* tu) {
  char prefix[32];
  snprintf(prefix, sizeof prefix, "g%zu_", idx);
  return cuda_check_generate(t->ctx, it->g, it->fuse, prefix, tu, &t->st);
}

/* A failing batch: every graph alone, reporting the ones that fail. */
static void retry_alone(tester* t) {
  for (size_t i = 0; i < t->n_batch; i++) {
    ptc_strbuf tu;
    ptc_sb_init(&tu);
    ptc_status s = gen_item(t, &t->batch[i], i, &tu);
    if (!s) s = cuda_check_compile(tu.data, t->archs, t->n_archs, &t->st);
    if (s) print_failure(t, &t->batch[i], s, tu.data);
    ptc_status_destroy(s);
    ptc_sb_free(&tu);
  }
}

static void flush(tester* t) {
  if (!t->n_batch) return;
  ptc_strbuf tu;
  ptc_sb_init(&tu);
  bool gen_failed = false;
  for (size_t i = 0; i < t->n_batch; i++) {
    ptc_status s = gen_item(t, &t->batch[i], i, &tu);
    if (s) {
      print_failure(t, &t->batch[i], s, NULL);
      ptc_status_destroy(s);
      gen_failed = true;
    }
  }
  const char* save = getenv("PTC_CUDA_SAVE_TU");
  if (save && *save && tu.data) {
    FILE* f = fopen(save, "a"); /* every batch, appended */
    if (f) {
      fputs(tu.data, f);
      fclose(f);
    }
  }
  if (!gen_failed) {
    ptc_status s = cuda_check_compile(tu.data, t->archs, t->n_archs, &t->st);
    if (s) {
      printf("note: a batch of %zu graphs failed to compile; retrying one by one\n", t->n_batch);
      ptc_status_destroy(s);
      retry_alone(t);
    }
  }
  ptc_sb_free(&tu);
  for (size_t i = 0; i < t->n_owned; i++) ptc_graph_destroy(t->owned[i]);
  for (size_t i = 0; i < t->n_rgs; i++) rg_graph_free(&t->rgs[i]);
  t->n_owned = t->n_rgs = t->n_batch = 0;
}

static void add(tester* t, ptc_graph* g, bool fuse, const char* label) {
  item* it = &t->batch[t->n_batch++];
  it->g = g;
  it->fuse = fuse;
  snprintf(it->label, sizeof it->label, "%s", label);
  t->graphs++;
}

static void check_seeds(tester* t, uint64_t first, uint64_t count) {
  for (uint64_t seed = first; seed < first + count; seed++) {
    rg_options o;
    rg_options_init(&o, seed);
    rg_graph* rg = &t->rgs[t->n_rgs];
    ptc_status s = rg_generate(t->ctx, &o, rg);
    if (s) {
      printf("FAIL seed %llu: generator: %s\n", (unsigned long long)seed, ptc_status_message(s));
      ptc_status_destroy(s);
      t->failures++;
      continue;
    }
    t->n_rgs++;
    char label[64];
    snprintf(label, sizeof label, "seed %llu", (unsigned long long)seed);
    add(t, rg->g, true, label);
    if (seed % 10 == 0) add(t, rg->g, false, label);
    if (t->n_batch + 2 > t->batch_cap) flush(t);
  }
  flush(t);
}

static void check_cases(tester* t, const char* path) {
  cJSON* root = case_file_load(path);
  if (!root) {
    t->failures++;
    return;
  }
  const char* base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  for (const cJSON* c = case_first(root); c; c = c->next) {
    op_case oc;
    ptc_status s = case_build(t->ctx, c, &oc);
    if (s) { /* cases that test build errors */
      ptc_status_destroy(s);
      continue;
    }
    t->owned[t->n_owned++] = oc.graph;
    oc.graph = NULL;
    case_free(&oc);
    char label[96];
    snprintf(label, sizeof label, "%s case %s", base, case_name(c));
    add(t, t->owned[t->n_owned - 1], true, label);
    if (t->n_batch + 1 > t->batch_cap) flush(t);
  }
  flush(t);
  cJSON_Delete(root);
}

static void check_graph(tester* t, const char* path) {
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_load(t->ctx, path, NULL, &g);
  if (s) {
    printf("FAIL %s: load: %s\n", path, ptc_status_message(s));
    ptc_status_destroy(s);
    t->failures++;
    return;
  }
  t->owned[t->n_owned++] = g;
  add(t, g, true, path);
  flush(t);
}

static size_t parse_archs(const char* s, int* out) {
  size_t n = 0;
  while (s && *s && n < MAX_ARCHS) {
    char* end;
    long v = strtol(s, &end, 10);
    if (end == s) break;
    out[n++] = (int)v;
    s = *end == ',' ? end + 1 : end;
  }
  return n;
}

int main(int argc, char** argv) {
  const char* why = cuda_nvrtc_unavailable();
  if (why) {
    printf("SKIP: NVRTC is not available here: %s\n", why);
    return 77;
  }
  tester t;
  memset(&t, 0, sizeof t);
  uint64_t seeds = DEFAULT_SEEDS, first = 1;
  const char* ec = getenv("PTC_RANDGRAPH_COUNT");
  const char* ef = getenv("PTC_RANDGRAPH_FIRST");
  if (ec && *ec) seeds = strtoull(ec, NULL, 10);
  if (ef && *ef) first = strtoull(ef, NULL, 10);
  t.batch_cap = DEFAULT_BATCH;
  const char* files[16];
  const char* graphs[16];
  size_t n_files = 0, n_graphs = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seeds") && i + 1 < argc)
      seeds = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--first") && i + 1 < argc)
      first = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
      t.batch_cap = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--graph") && i + 1 < argc) {
      if (n_graphs < 16) graphs[n_graphs++] = argv[i + 1];
      i++;
    } else if (n_files < 16)
      files[n_files++] = argv[i];
  }
  if (t.batch_cap < 2) t.batch_cap = 2;
  const char* ea = getenv("PTC_CUDA_ARCHS");
  t.n_archs = parse_archs(ea && *ea ? ea : "80,90", t.archs);
  t.batch = calloc(t.batch_cap + 2, sizeof *t.batch);
  t.owned = calloc(t.batch_cap + 2, sizeof *t.owned);
  t.rgs = calloc(t.batch_cap + 2, sizeof *t.rgs);
  ptc_status s = t.batch && t.owned && t.rgs ? ptc_context_create(NULL, &t.ctx) : ptc_status_oom();
  if (s) {
    printf("FAIL: setup: %s\n", ptc_status_message(s));
    return 1;
  }
  double t0 = now();
  /* the fixed support kernels (copies, fallback GEMM, GEMM epilogue, im2col) */
  s = cuda_check_compile(ptc_cuda_support_text, t.archs, t.n_archs, &t.st);
  if (s) {
    printf("FAIL: support kernels: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    t.failures++;
  } else {
    printf("support kernels: compiled\n");
  }
  /* the tensor-core GEMM (cuda_gemm_tc.cuh, every type and variant) */
  s = cuda_check_compile(ptc_cuda_gemm_tc_text, t.archs, t.n_archs, &t.st);
  if (s) {
    printf("FAIL: tensor-core GEMM: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    t.failures++;
  } else {
    printf("tensor-core GEMM: compiled\n");
  }
  check_seeds(&t, first, seeds);
  for (size_t f = 0; f < n_files; f++) check_cases(&t, files[f]);
  for (size_t f = 0; f < n_graphs; f++) check_graph(&t, graphs[f]);
  printf("test_cuda_nvrtc: %zu graphs (%llu random seeds from %llu, %zu case files): %zu kernels "
         "+ %zu extern steps generated in %.1f s; %zu NVRTC programs for", t.graphs,
         (unsigned long long)seeds, (unsigned long long)first, n_files, t.st.kernels,
         t.st.externs, t.st.codegen_ms / 1e3, t.st.programs);
  for (size_t a = 0; a < t.n_archs; a++) printf(" sm_%d", t.archs[a]);
  printf(" in %.1f s (%zu cubin bytes); total %.1f s\n", t.st.nvrtc_ms / 1e3, t.st.cubin_bytes,
         now() - t0);
  printf("%zu passed, %zu failed\n", t.graphs - t.failures, t.failures);
  ptc_context_release(t.ctx);
  free(t.batch);
  free(t.owned);
  free(t.rgs);
  return t.failures ? 1 : 0;
}
