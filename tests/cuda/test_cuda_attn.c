/* test_cuda_attn.c - fused scaled_dot_product_attention on the cuda backend.
 *
 *  --compile-only (needs NVRTC only; exit 77 without it): the attention
 *    module (cuda_attn.cuh) compiles for sm_80 and sm_90, and the pipeline
 *    keeps sdpa whole exactly for the graphs the kernels take (f16/bf16,
 *    and f32 through cuda_attn_f32.c; head dim 32/64/128) and decomposes
 *    the others (head dim 96, PTC_CUDA_ATTN=0).
 *  default (needs a GPU; exit 77 without one): sdpa graphs compiled for
 *    "cuda" and "ref" run on the same random inputs and compared: f16 and
 *    bf16, causal or not, additive and boolean masks (broadcast), odd
 *    sequence lengths (1, 17, 1000, L != S, S = 0), head dims 32/64/128,
 *    batch * heads (more than 65535 too), q/k/v as transposed views ([B,
 *    L, H, E] -> [B, H, L, E]) and as views with last stride L (element
 *    loads), rank-3 q with k/v broadcast over the batch, a given scale,
 *    causal row tiles with ragged ends and L > S, boolean masks holding the
 *    causal pattern (Hugging Face's) and causal with left padding (rows
 *    keeping no key), GPT-2's shape (small-grid tile shape); plus f32
 *    (cuda_attn_f32.c) for the dispatch. On an H100 the f16/bf16 cases with
 *    head dim 64/128, no mask tensor and unit last stride run the wgmma
 *    kernel (cuda_attn_wg.cuh; by default its warp-specialized form: a
 *    producer warpgroup, mbarrier rings, a persistent grid whose blocks
 *    take several (row tile, batch entry) items, as the b300 / b150 cases
 *    do) unless PTC_CUDA_ATTN_WG=0 or the grid is small (all of them with
 *    PTC_CUDA_ATTN_WG_CFG set).
 *    On an H100 the wgmma cases then run again under each other setting
 *    of cuda_attn_wg.c (passes 0-2: PTC_CUDA_ATTN_WG_CFG=4,64,3 for every
 *    call, PTC_CUDA_ATTN_WG_FOUR=0: the wide d64 default,
 *    PTC_CUDA_ATTN_WG_FLAT=1), one summary line each; --no-wg-passes leaves
 *    them out, --wg-pass K runs only pass K (so that scripts/gpu-check.sh
 *    runs them beside the other tests; exit 77 on other devices).
 *  --wg-cases: only the default cases the Hopper wgmma kernel takes
 *    (cuda_attn_wg.c: f16/bf16, head dim 64/128, no mask tensor, unit last
 *    stride); run with each PTC_CUDA_ATTN_WG_CFG (a named shape takes every
 *    call, small grids too) to cover the kernel shapes.
 *  --bench-small: GPT-2's attention shape (b8 h12 s256 d64 bf16:
 *    is_causal, causal bool mask, causal + padding mask, no mask) and b8
 *    h16 s1024, 12 chained sdpa per run, ms per sdpa.
 *  --bench: b8 h16 s1024 d64 (f16, bf16; causal or not) with the fused
 *    kernel and with the decomposition (PTC_CUDA_ATTN=0), bf16 d32 and
 *    d128 fused, ms per call and TFLOP/s; --bench-fused: the fused rows
 *    only (f32 too).
 *  --bench-wg: the wgmma kernel's timing rows: bf16 b8 h16 s1024 d64 and
 *    d128, causal or not, 8 chained sdpa per run, best of 3 (ms, TFLOP/s);
 *    run once per PTC_CUDA_ATTN_WG_CFG to compare shapes. Benchmark-only
 *    settings: PTC_TEST_WG_BHS="b,h,s" another batch / heads / length,
 *    PTC_TEST_WG_QUICK=1 the d64 row only, PTC_TEST_WG_CHAIN=n sdpa nodes
 *    per run.
 *  --bench-cold: b8 h16 s1024 d64 bf16 and f32, causal or not: the first
 *    run's seconds (the attention module's build: the NVRTC compile when
 *    the kernel cache (PTC_CACHE_DIR) is cold) and ms per warm call; run it
 *    once per kernel shape (the modules are process-wide). PTC_CUDA_ATTN_CFG="bn,mt,qreg" picks another kernel shape (for
 *    the GPU cases too: run them once per shape to cover it), as do
 *    PTC_CUDA_ATTN_CFG_SMALL and PTC_CUDA_ATTN_MRANGE=1 (the bool-mask
 *    kept-tile range).
 * Exit status: 0 passed, 1 a failure, 77 skipped.
 */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_attn.h"
#include "backends/cuda/cuda_attn_wg.h"
#include "backends/cuda/cuda_rt.h"
#include "cuda_test_dev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ptc_context* ctx;
static int failed, passed;

typedef struct acase {
  int32_t dtype;
  int64_t B, H, L, S, E;
  int causal;
  int mask;       /* 0 none, 1 additive [L, S], 2 bool [B, 1, L, S] (random),
                     3 bool [B, 1, L, S] causal (key <= query, as Hugging Face
                     models pass it), 4 causal and left padding (batch entry
                     b drops keys < 3 b: its first rows keep none) */
  int transposed; /* 1: inputs [B, L, H, E], transposed into [B, H, L, E];
                     2: inputs [B, H, E, L] transposed into [B, H, L, E]
                     (last stride L: the kernel's element loads) */
                  /* H == 0: rank-3 q [B, L, E], k and v [1, S, E] (broadcast) */
  double scale;   /* 0: default */
} acase;

static const char* dname(int32_t dt) { return ptc_dtype_name(dt); }

/* --bench: sdpa nodes per graph (each one's output is the next one's q,
 * so that one run's host time is spread over many kernels) */
static int chain = 1;
/* time_case: seconds of its first run (module builds included) */
static double first_run_s;

/* The graph: sdpa(q, k, v[, mask]) with the case's attributes. */
static ptc_status build(const acase* c, ptc_graph** out) {
  ptc_graph* g = NULL;
  PTC_TRY(ptc_graph_create(ctx, &g));
  ptc_status s = PTC_OK;
  ptc_value in[4] = {0, 0, 0, PTC_VALUE_NONE}, x[4];
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3 && !s; i++) {
    int64_t rows = i == 0 ? c->L : c->S;
    ptc_dim sh[4] = {{c->B, 0, 0}, {c->H, 0, 0}, {rows, 0, 0}, {c->E, 0, 0}};
    if (c->transposed == 1) {
      sh[1].value = rows;
      sh[2].value = c->H;
    } else if (c->transposed == 2) {
      sh[2].value = c->E;
      sh[3].value = rows;
    }
    if (c->H == 0) { /* rank 3 [B, rows, E]; k and v broadcast over B (batch 1) */
      sh[0].value = i == 0 ? c->B : 1;
      sh[1] = sh[2];
      sh[2] = sh[3];
    }
    s = ptc_graph_add_input(g, names[i], c->dtype, sh, c->H == 0 ? 3 : 4, NULL, &x[i]);
    in[i] = x[i];
    if (!s && c->transposed) {
      int d0 = c->transposed == 1 ? 1 : 2;
      ptc_attr t[2] = {ptc_attr_int("dim0", d0), ptc_attr_int("dim1", d0 + 1)};
      s = ptc_graph_add_node(g, "transpose", &x[i], 1, t, 2, &in[i], 1, NULL);
    }
  }
  if (!s && c->mask == 1) {
    ptc_dim sh[2] = {{c->L, 0, 0}, {c->S, 0, 0}};
    s = ptc_graph_add_input(g, "mask", c->dtype, sh, 2, NULL, &in[3]);
  } else if (!s && c->mask >= 2) {
    ptc_dim sh[4] = {{c->B, 0, 0}, {1, 0, 0}, {c->L, 0, 0}, {c->S, 0, 0}};
    s = ptc_graph_add_input(g, "mask", PTC_BOOL, sh, 4, NULL, &in[3]);
  }
  ptc_attr at[2];
  size_t na = 0;
  if (c->causal) at[na++] = ptc_attr_bool("is_causal", 1);
  if (c->scale != 0.0) at[na++] = ptc_attr_float("scale", c->scale);
  ptc_value o = 0;
  for (int r = 0; r < chain && !s; r++) {
    if (r) in[0] = o;
    s = ptc_graph_add_node(g, "scaled_dot_product_attention", in, c->mask ? 4 : 3, at, na, &o, 1,
                           NULL);
  }
  if (!s) s = ptc_graph_add_output(g, o);
  if (s) {
    ptc_graph_destroy(g);
    return s;
  }
  *out = g;
  return PTC_OK;
}

static void report(bool ok, const char* what, const char* detail) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static void report_status(const char* what, ptc_status s) {
  report(false, what, ptc_status_message(s));
  ptc_status_destroy(s);
}

/* ---- compile-only checks --------------------------------------------------------------- */

static bool graph_keeps(const acase* c, bool* keeps) {
  ptc_graph* g = NULL;
  ptc_status s = build(c, &g);
  if (s) {
    report_status("building a graph", s);
    return false;
  }
  *keeps = cuda_attn_graph_ok(g);
  ptc_graph_destroy(g);
  return true;
}

static int compile_only(void) {
  const char* why = cuda_nvrtc_unavailable();
  if (why) {
    printf("SKIP: NVRTC is not available here: %s\n", why);
    return 77;
  }
  /* the default kernel shapes for sm_80 and sm_90, then the other shapes
   * PTC_CUDA_ATTN_CFG can pick (q from shared memory, one m tile per
   * warp, key tiles of 32 / 128) */
  static const int archs[5] = {80, 90, 90, 90, 80};
  static const char* cfgs[5] = {NULL, NULL, "64,2,0", "128,1,1", "32,1,0"};
  for (int i = 0; i < 5; i++) {
    if (cfgs[i]) setenv("PTC_CUDA_ATTN_CFG", cfgs[i], 1);
    ptc_status s = cuda_attn_check_compile(ctx, archs[i]);
    unsetenv("PTC_CUDA_ATTN_CFG");
    char what[80];
    snprintf(what, sizeof what, "attention module for sm_%d (shape %s)", archs[i],
             cfgs[i] ? cfgs[i] : "default");
    if (s) {
      const char* log = ptc_status_detail(s, "compiler_log");
      if (log) printf("%s\n", log);
      report_status(what, s);
    } else {
      report(true, what, NULL);
    }
  }
  {
    /* the wgmma kernels (cuda_attn_wg.cuh) for sm_90a: every shape, both
     * dtypes and head dims, causal or not */
    ptc_status s = cuda_attn_wg_check_compile(90);
    if (s) {
      const char* log = ptc_status_detail(s, "compiler_log");
      if (log) printf("%s\n", log);
      report_status("wgmma attention module for sm_90a", s);
    } else {
      report(true, "wgmma attention module for sm_90a", NULL);
    }
  }
  struct {
    acase c;
    bool keep;
    const char* what;
  } rows[] = {
      {{PTC_BF16, 2, 4, 128, 128, 64, 0, 0, 0, 0}, true, "bf16 d64 kept"},
      {{PTC_F16, 2, 4, 17, 33, 32, 1, 0, 1, 0}, true, "f16 d32 causal transposed kept"},
      {{PTC_F16, 1, 2, 16, 16, 128, 0, 2, 0, 0}, true, "f16 d128 bool mask kept"},
      {{PTC_F32, 2, 4, 128, 128, 64, 0, 0, 0, 0}, true, "f32 kept (cuda_attn_f32.c)"},
      {{PTC_BF16, 2, 4, 128, 128, 96, 0, 0, 0, 0}, false, "head dim 96 decomposed"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    bool k = false;
    if (graph_keeps(&rows[i].c, &k)) report(k == rows[i].keep, rows[i].what, NULL);
  }
  setenv("PTC_CUDA_ATTN", "0", 1);
  bool k = true;
  if (graph_keeps(&rows[0].c, &k)) report(!k, "PTC_CUDA_ATTN=0 decomposes", NULL);
  unsetenv("PTC_CUDA_ATTN");
  /* the kept graph lowers to one extern and schedules */
  ptc_graph* g = NULL;
  ptc_status s = build(&rows[1].c, &g);
  ptc_graph* dg = NULL;
  ir_program* p = NULL;
  sched_plan* sp = NULL;
  if (!s) s = cuda_pipeline(ctx, NULL, g, true, &dg, &p, &sp);
  if (s) {
    report_status("pipeline of a kept sdpa graph", s);
  } else {
    uint32_t ext = 0;
    bool found = false;
    for (uint32_t i = 0; i < sp->n_kernels; i++) {
      if (!sp->kernels[i].is_extern) continue;
      ext++;
      const ir_node* n = ir_node_at(p, sp->kernels[i].nodes[0]);
      found = found || cuda_attn_handles(p, n);
    }
    report(found && ext == 1, "the kept sdpa is one extern the device runs", NULL);
    sched_plan_destroy(sp);
    ir_program_destroy(p);
    ptc_graph_destroy(dg);
  }
  ptc_graph_destroy(g);
  printf("test_cuda_attn --compile-only: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

/* ---- GPU runs --------------------------------------------------------------------------------- */

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A structured bool mask [B, 1, L, S] being filled (mask kinds 3, 4):
 * the next element's index. */
typedef struct mfill {
  const struct acase* c;
  int64_t k;
} mfill;

/* Values uniform in [-2, 2); bool inputs true with probability 0.8 (a
 * second draw), or (user: an mfill) the causal / causal-and-padding
 * pattern of the case. */
static double fill(void* user, const ptc_value_info* info) {
  double x = urand() * 4.0 - 2.0;
  mfill* mf = user;
  if (info->dtype == PTC_BOOL && mf) {
    int64_t k = mf->k++, S = mf->c->S, L = mf->c->L;
    int64_t j = k % S, i = (k / S) % L, b = k / (S * L);
    return (double)(j <= i && (mf->c->mask == 3 || j >= 3 * b));
  }
  return info->dtype == PTC_BOOL ? (double)(urand() < 0.8) : x;
}

static const acase* fill_case; /* the case whose inputs make_input fills */

static bool make_input(const ptc_graph* g, size_t i, ctd_tensor* h) {
  mfill mf = {fill_case, 0};
  bool structured = i == 3 && fill_case && fill_case->mask >= 3;
  return ctd_make_input(g, i, fill, structured ? &mf : NULL, h);
}

static void check_case(const acase* c) {
  char what[160];
  static const char* const mname[5] = {"", " add-mask", " bool-mask", " causal-mask",
                                       " causal-pad-mask"};
  snprintf(what, sizeof what, "%s B%lld H%lld L%lld S%lld E%lld%s%s%s", dname(c->dtype),
           (long long)c->B, (long long)c->H, (long long)c->L, (long long)c->S, (long long)c->E,
           c->causal ? " causal" : "", mname[c->mask],
           c->transposed == 1 ? " transposed" : c->transposed == 2 ? " e-major" : "");
  ptc_graph* g = NULL;
  ptc_executable *ec = NULL, *er = NULL;
  ptc_status s = build(c, &g);
  if (!s) s = ctd_compile(ctx, g, "cuda", &ec);
  if (!s) s = ctd_compile(ctx, g, "ref", &er);
  if (s) {
    report_status(what, s);
    ptc_executable_release(ec);
    ptc_executable_release(er);
    ptc_graph_destroy(g);
    return;
  }
  size_t n_in = c->mask ? 4 : 3;
  ctd_tensor h[4];
  ptc_tensor hin[4], din[4];
  bool ok = true;
  fill_case = c;
  for (size_t i = 0; i < n_in; i++) {
    ok = ok && make_input(g, i, &h[i]);
    hin[i] = h[i].t;
    din[i] = ctd_on_device(&h[i]);
  }
  ptc_results *rr = NULL, *rc = NULL;
  if (!ok) s = PTC_ERR(INTERNAL, "input setup failed");
  if (!s) s = ptc_executable_run_alloc(er, hin, n_in, NULL, &rr);
  if (!s) s = ptc_executable_run_alloc(ec, din, n_in, NULL, &rc);
  if (s) {
    report_status(what, s);
  } else {
    const ptc_tensor* tr = ptc_results_get(rr, 0);
    const ptc_tensor* tc = ptc_results_get(rc, 0);
    int64_t n = 1;
    for (int32_t d = 0; d < tr->ndim; d++) n *= tr->shape[d];
    size_t bytes = (size_t)n * ptc_dtype_size(c->dtype);
    void* got = malloc(bytes ? bytes : 1);
    bool dl = got && tc->device.device_type == PTC_DEVICE_CUDA &&
              (!bytes || (cu()->MemcpyDtoHAsync(got, (cu_deviceptr)(uintptr_t)tc->data + tc->byte_offset,
                                                bytes, NULL) == CU_SUCCESS &&
                          cu()->StreamSynchronize(NULL) == CU_SUCCESS));
    double tol = c->dtype == PTC_BF16 ? 2e-2 : c->dtype == PTC_F16 ? 4e-3 : 1e-4, worst = 0;
    int64_t bad = -1;
    for (int64_t k = 0; dl && k < n; k++) {
      double a = ctd_load(got, c->dtype, k), b = ctd_load((const char*)tr->data + tr->byte_offset,
                                                      c->dtype, k);
      double err = fabs(a - b) / (1.0 + fabs(b));
      if (!(err <= tol) && bad < 0) bad = k;
      if (err > worst || err != err) worst = err;
    }
    char detail[160];
    snprintf(detail, sizeof detail, "worst relative error %.3g (tolerance %.1g), first bad index %lld",
             worst, tol, (long long)bad);
    report(dl && bad < 0, what, dl ? detail : "download failed");
    free(got);
  }
  ptc_results_destroy(rr);
  ptc_results_destroy(rc);
  for (size_t i = 0; i < n_in; i++) ctd_free(&h[i]);
  ptc_executable_release(ec);
  ptc_executable_release(er);
  ptc_graph_destroy(g);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ms per call of the graph of c on the cuda backend (fused unless env). */
static double time_case(const acase* c, bool fused) {
  if (!fused) setenv("PTC_CUDA_ATTN", "0", 1);
  ptc_graph* g = NULL;
  ptc_executable* e = NULL;
  ptc_status s = build(c, &g);
  if (!s) s = ctd_compile(ctx, g, "cuda", &e);
  unsetenv("PTC_CUDA_ATTN");
  double ms = -1;
  size_t n_in = c->mask ? 4 : 3;
  ctd_tensor h[4];
  ptc_tensor din[4];
  bool ok = !s;
  fill_case = c;
  for (size_t i = 0; ok && i < n_in; i++) {
    ok = make_input(g, i, &h[i]);
    din[i] = ctd_on_device(&h[i]);
  }
  first_run_s = -1;
  if (ok) {
    double t0 = now_s();
    ptc_results* res = NULL;
    ptc_status rs = ptc_executable_run_alloc(e, din, n_in, NULL, &res);
    ok = !rs && cu()->CtxSynchronize() == CU_SUCCESS;
    ptc_status_destroy(rs);
    ptc_results_destroy(res);
    first_run_s = now_s() - t0;
  }
  for (int it = 0, iters = 10; ok && it < 2; it++, iters = 100) {
    double t0 = now_s();
    for (int r = 0; ok && r < iters; r++) {
      ptc_results* res = NULL;
      ptc_status rs = ptc_executable_run_alloc(e, din, n_in, NULL, &res);
      ok = !rs;
      ptc_status_destroy(rs);
      ptc_results_destroy(res);
    }
    ok = ok && cu()->CtxSynchronize() == CU_SUCCESS;
    ms = (now_s() - t0) * 1e3 / iters / chain;
  }
  if (s) ptc_status_destroy(s);
  for (size_t i = 0; i < n_in && !s; i++) ctd_free(&h[i]);
  ptc_executable_release(e);
  ptc_graph_destroy(g);
  return ok ? ms : -1;
}

/* Whether the Hopper wgmma kernel can take case c (cuda_attn_wg.c:
 * f16/bf16, head dim 64/128, no mask tensor, unit last stride). */
static bool wg_case(const acase* c) {
  return c->dtype != PTC_F32 && !c->mask && c->E != 32 && c->transposed != 2;
}

int main(int argc, char** argv) {
  bool compile_check = false, bench = false, bench_fused = false, bench_small = false;
  bool bench_cold = false, wg_only = false, bench_wg = false, wg_passes = true;
  int wg_pass = -1; /* --wg-pass K: only the K-th extra pass */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--wg-cases")) wg_only = true;
    if (!strcmp(argv[i], "--no-wg-passes")) wg_passes = false;
    if (!strcmp(argv[i], "--wg-pass") && i + 1 < argc) wg_pass = atoi(argv[++i]);
    if (!strcmp(argv[i], "--compile-only")) compile_check = true;
    if (!strcmp(argv[i], "--bench")) bench = true;
    if (!strcmp(argv[i], "--bench-fused")) bench = bench_fused = true;
    if (!strcmp(argv[i], "--bench-small")) bench_small = true;
    if (!strcmp(argv[i], "--bench-cold")) bench_cold = true;
    if (!strcmp(argv[i], "--bench-wg")) bench_wg = true;
  }
  if (ptc_context_create(NULL, &ctx)) return 1;
  if (compile_check) {
    int rc = compile_only();
    ptc_context_release(ctx);
    return rc;
  }
  if (!ctd_gpu_enter()) {
    ptc_context_release(ctx);
    return 77;
  }
  if (bench_cold) {
    const char* cfg = getenv("PTC_CUDA_ATTN_CFG");
    const char* cfg32 = getenv("PTC_CUDA_ATTN_F32_CFG");
    printf("kernel shape: bf16 %s, f32 %s\n", cfg ? cfg : "default", cfg32 ? cfg32 : "default");
    static const int32_t dts[2] = {PTC_BF16, PTC_F32};
    for (int r = 0; r < 2; r++)
      for (int causal = 0; causal < 2; causal++) {
        acase c = {dts[r], 8, 16, 1024, 1024, 64, causal, 0, 0, 0};
        double ms = time_case(&c, true);
        printf("bench-cold sdpa %s b8 h16 s1024 d64%s: first run %.3f s, %.4f ms per call\n",
               dname(dts[r]), causal ? " causal" : "", first_run_s, ms);
      }
    ptc_context_release(ctx);
    return 0;
  }
  if (bench_wg) {
    const char* cfg = getenv("PTC_CUDA_ATTN_WG_CFG");
    const char* bhs = getenv("PTC_TEST_WG_BHS");
    int tb = 8, th = 16, ts = 1024;
    if (bhs) sscanf(bhs, "%d,%d,%d", &tb, &th, &ts);
    chain = getenv("PTC_TEST_WG_CHAIN") ? atoi(getenv("PTC_TEST_WG_CHAIN")) : 8;
    const bool quick = getenv("PTC_TEST_WG_QUICK") != NULL;
    for (int e = 64; e <= (quick ? 64 : 128); e += 64)
      for (int causal = 0; causal < (quick ? 1 : 2); causal++) {
        acase c = {PTC_BF16, tb, th, ts, ts, e, causal, 0, 0, 0};
        double best = -1;
        for (int r = 0; r < 3; r++) {
          double ms = time_case(&c, true);
          if (ms > 0 && (best < 0 || ms < best)) best = ms;
        }
        double flops = 4.0 * tb * th * (double)ts * ts * e / (causal ? 2 : 1);
        printf("bench-wg cfg %s bf16 b%d h%d s%d d%d%s: %.4f ms (%.0f TFLOP/s)\n",
               cfg ? cfg : "default", tb, th, ts, e, causal ? " causal" : "", best,
               best > 0 ? flops / (best * 1e-3) / 1e12 : 0.0);
      }
    ptc_context_release(ctx);
    return 0;
  }
  if (bench_small) {
    /* GPT-2's attention (b8 h12 s256 d64 bf16) as is_causal, as a causal
     * bool mask (Hugging Face), causal with padding, unmasked; then b8 h16
     * s1024; 12 chained sdpa nodes per run (host time spread) */
    const char* cfg = getenv("PTC_CUDA_ATTN_CFG");
    printf("kernel shape: %s\n", cfg ? cfg : "default");
    static const struct {
      int64_t h, s;
      int causal, mask;
      const char* what;
    } rows[] = {{12, 256, 1, 0, "is_causal"}, {12, 256, 0, 3, "causal bool mask"},
                {12, 256, 0, 4, "causal+pad bool mask"}, {12, 256, 0, 0, "no mask"},
                {16, 1024, 0, 0, "no mask"}, {16, 1024, 1, 0, "is_causal"},
                {16, 1024, 0, 3, "causal bool mask"}};
    chain = 12;
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
      acase c = {PTC_BF16, 8, rows[r].h, rows[r].s, rows[r].s, 64, rows[r].causal, rows[r].mask, 0, 0};
      printf("bench-small bf16 b8 h%lld s%lld d64 %s: %.4f ms\n", (long long)rows[r].h,
             (long long)rows[r].s, rows[r].what, time_case(&c, true));
    }
    ptc_context_release(ctx);
    return 0;
  }
  if (bench) {
    /* b8 h16 s1024: d64 f16/bf16, causal or not, fused and (unless
     * --bench-fused) decomposed; bf16 d32 and d128 fused */
    const char* cfg = getenv("PTC_CUDA_ATTN_CFG");
    printf("kernel shape: %s\n", cfg ? cfg : "default");
    static const struct {
      int32_t dt;
      int64_t e;
    } rows[4] = {{PTC_BF16, 64}, {PTC_F16, 64}, {PTC_BF16, 32}, {PTC_BF16, 128}};
    for (int r = 0; r < 4; r++)
      for (int causal = 0; causal < 2; causal++) {
        acase c = {rows[r].dt, 8, 16, 1024, 1024, rows[r].e, causal, 0, 0, 0};
        double tf = time_case(&c, true), td = bench_fused || r >= 2 ? -1 : time_case(&c, false);
        double flops = 4.0 * 8 * 16 * 1024.0 * 1024 * (double)rows[r].e / (causal ? 2 : 1);
        printf("bench sdpa %s b8 h16 s1024 d%lld%s: fused %.4f ms (%.0f TFLOP/s)", dname(rows[r].dt),
               (long long)rows[r].e, causal ? " causal" : "", tf, flops / (tf * 1e-3) / 1e12);
        if (td > 0) printf(", decomposed %.4f ms", td);
        printf("\n");
      }
    {
      acase c32 = {PTC_F32, 8, 16, 1024, 1024, 64, 0, 0, 0, 0};
      printf("bench sdpa f32 b8 h16 s1024 d64 (fused, cuda_attn_f32.c): %.4f ms\n", time_case(&c32, true));
    }
    ptc_context_release(ctx);
    return 0;
  }
  static const acase cases[] = {
      {PTC_BF16, 2, 4, 128, 128, 64, 0, 0, 0, 0},
      {PTC_F16, 2, 4, 128, 128, 64, 0, 0, 0, 0},
      {PTC_BF16, 2, 3, 1000, 1000, 64, 1, 0, 0, 0},
      {PTC_F16, 1, 2, 1000, 1000, 64, 0, 0, 1, 0},
      {PTC_BF16, 3, 2, 17, 17, 64, 0, 0, 0, 0},
      {PTC_F16, 3, 2, 1, 1, 64, 0, 0, 0, 0},
      {PTC_F16, 1, 1, 1, 17, 64, 0, 0, 0, 0},
      {PTC_BF16, 2, 2, 17, 1000, 64, 0, 1, 0, 0},
      {PTC_F16, 2, 2, 100, 33, 64, 1, 0, 0, 0},
      {PTC_F16, 2, 2, 33, 100, 64, 1, 0, 0, 0},
      {PTC_BF16, 2, 2, 70, 90, 64, 0, 2, 0, 0},
      {PTC_F16, 2, 2, 70, 90, 64, 0, 1, 1, 0.3},
      {PTC_F16, 2, 3, 65, 129, 32, 0, 0, 0, 0},
      {PTC_BF16, 2, 3, 65, 129, 32, 1, 0, 1, 0},
      {PTC_F16, 2, 3, 200, 77, 128, 0, 0, 0, 0},
      {PTC_BF16, 1, 4, 300, 300, 128, 0, 2, 1, 0},
      {PTC_BF16, 1, 2, 64, 0, 64, 0, 0, 0, 0},
      {PTC_F16, 3, 0, 40, 50, 64, 0, 0, 0, 0},
      {PTC_BF16, 3, 0, 40, 50, 128, 1, 0, 0, 0},
      /* row tiles of 128 with ragged ends; causal row tiles past the
       * diagonal, L > S, warps with no keys; masks on every tile */
      {PTC_F16, 1, 3, 300, 300, 128, 1, 0, 0, 0},
      {PTC_F16, 2, 2, 257, 257, 32, 1, 0, 0, 0},
      {PTC_BF16, 1, 2, 300, 130, 64, 1, 0, 0, 0},
      {PTC_BF16, 1, 2, 200, 200, 64, 0, 1, 0, 0},
      {PTC_F16, 1, 2, 300, 20, 64, 0, 2, 0, 0},
      /* last stride != 1: element loads, no cp.async */
      {PTC_F16, 2, 2, 33, 47, 64, 0, 0, 2, 0},
      {PTC_BF16, 1, 2, 130, 70, 128, 1, 0, 2, 0},
      {PTC_F16, 1, 2, 130, 70, 64, 0, 1, 2, 0},
      {PTC_BF16, 1, 2, 150, 150, 32, 0, 2, 2, 0},
      /* more than 65535 batch entries: blocks loop over the batch */
      {PTC_F16, 70000, 1, 3, 5, 32, 0, 0, 0, 0},
      {PTC_F32, 2, 2, 100, 90, 64, 1, 0, 0, 0},
      {PTC_F32, 2, 2, 100, 90, 64, 0, 1, 1, 0},
      /* boolean masks by keep bits per tile: causal patterns (tiles
       * skipped, kept whole, tested per element) and causal with left
       * padding (rows keeping no key give zeros), lengths not multiples of
       * the tiles, 16-byte mask rows or not (S % 16), element loads, small
       * grids (one m16 tile per warp), GPT-2's shape */
      {PTC_BF16, 2, 3, 300, 300, 64, 0, 3, 0, 0},
      {PTC_F16, 2, 3, 300, 300, 64, 0, 4, 0, 0},
      {PTC_F16, 2, 2, 257, 257, 32, 0, 4, 0, 0},
      {PTC_BF16, 2, 2, 257, 257, 32, 0, 3, 0, 0},
      {PTC_BF16, 1, 3, 272, 272, 64, 0, 4, 0, 0},
      {PTC_F16, 1, 2, 100, 90, 128, 0, 3, 0, 0},
      {PTC_BF16, 1, 2, 130, 130, 128, 0, 4, 0, 0},
      {PTC_BF16, 2, 2, 200, 200, 64, 0, 4, 2, 0},
      {PTC_F16, 2, 2, 70, 150, 64, 0, 3, 1, 0},
      {PTC_BF16, 8, 12, 256, 256, 64, 0, 4, 0, 0},
      {PTC_F16, 8, 12, 256, 256, 64, 0, 3, 0, 0},
      {PTC_BF16, 8, 12, 256, 256, 64, 1, 0, 0, 0},
      {PTC_F16, 4, 12, 200, 200, 64, 1, 0, 0, 0},
      {PTC_BF16, 4, 4, 96, 96, 32, 0, 2, 0, 0},
      {PTC_F32, 2, 2, 100, 90, 64, 0, 4, 0, 0},
      /* f32: an instantiation per mask kind and load path (cuda_attn_f32.c) */
      {PTC_F32, 2, 2, 200, 200, 64, 0, 0, 0, 0},
      {PTC_F32, 2, 2, 33, 47, 64, 0, 0, 2, 0},
      {PTC_F32, 1, 2, 130, 70, 128, 1, 0, 2, 0},
      {PTC_F32, 2, 3, 65, 129, 32, 0, 1, 0, 0},
      {PTC_F32, 1, 2, 150, 150, 32, 0, 2, 2, 0},
      /* the wgmma kernel's cases (on an H100; the
       * mma.sync kernel elsewhere; PTC_CUDA_ATTN_WG=0 forces that):
       * many key tiles, ragged L and S,
       * causal with L != S, a negative scale (every tile scaled and tested
       * per element), head dim 128, q/k/v transposed views */
      {PTC_BF16, 1, 2, 1024, 1024, 64, 0, 0, 0, 0},
      {PTC_F16, 1, 1, 1024, 1024, 128, 0, 0, 0, 0},
      {PTC_F16, 1, 1, 1536, 1536, 64, 1, 0, 0, 0},
      {PTC_BF16, 2, 3, 1000, 777, 64, 0, 0, 0, 0},
      {PTC_BF16, 2, 2, 130, 250, 64, 0, 0, 0, -0.5},
      {PTC_BF16, 1, 3, 513, 700, 128, 1, 0, 1, 0.2},
      {PTC_F16, 2, 2, 777, 513, 128, 1, 0, 0, 0},
      {PTC_BF16, 1, 2, 65, 64, 64, 1, 0, 0, 0},
      /* grids of at least two blocks per SM at the default shape: the
       * wgmma kernel's default path (without PTC_CUDA_ATTN_WG_CFG) */
      {PTC_BF16, 300, 1, 130, 70, 64, 0, 0, 0, 0},
      {PTC_F16, 150, 2, 100, 129, 128, 1, 0, 0, 0},
      /* several work items a block, each of several key tiles (the last
       * partial): the chained key-tile stream (PTC_CUDA_ATTN_WG_CHAIN)
       * switches items mid-stream, with and without causal */
      {PTC_BF16, 40, 4, 300, 333, 64, 0, 0, 0, 0},
      {PTC_BF16, 40, 4, 300, 300, 64, 1, 0, 0, 0},
      /* the four-warpgroup default on an H100 (288 items of 256 rows on
       * 132 blocks: some take three; ragged last row tile and key tile) */
      {PTC_BF16, 24, 4, 700, 650, 64, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0] && wg_pass < 0; i++) {
    const acase* c = &cases[i];
    /* --wg-cases: only the cases the wgmma kernel takes */
    if (wg_only && !wg_case(c)) continue;
    check_case(c);
  }
  /* on an H100 (and without --wg-cases, whose caller names the settings):
   * the wgmma cases again under each other setting of cuda_attn_wg.c (the
   * four-warpgroup shape named for every call, the wide d64 default it
   * replaced (PTC_CUDA_ATTN_WG_FOUR=0), work items back to back), so that
   * the shapes off by default stay checked */
  const cuda_device* dev = cuda_device_get();
  const bool h100 = dev->cc_major == 9 && dev->cc_minor == 0;
  if (wg_pass >= 0 && !h100) {
    printf("test_cuda_attn --wg-pass: not an sm_90 device (skipped)\n");
    ptc_context_release(ctx);
    return 77;
  }
  if (!wg_only && wg_passes && h100) {
    static const char* const opt_in[][2] = {{"PTC_CUDA_ATTN_WG_CFG", "4,64,3"},
                                            {"PTC_CUDA_ATTN_WG_FOUR", "0"},
                                            {"PTC_CUDA_ATTN_WG_FLAT", "1"}};
    const int npass = (int)(sizeof opt_in / sizeof opt_in[0]);
    if (wg_pass >= npass) {
      printf("test_cuda_attn --wg-pass %d: there are %d passes (0-%d)\n", wg_pass, npass, npass - 1);
      ptc_context_release(ctx);
      return 2;
    }
    for (int k = 0; k < npass; k++) {
      if (wg_pass >= 0 && k != wg_pass) continue;
      if (getenv(opt_in[k][0])) continue; /* the caller's setting ran above */
      setenv(opt_in[k][0], opt_in[k][1], 1);
      int f0 = failed, p0 = passed;
      for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (wg_case(&cases[i])) check_case(&cases[i]);
      unsetenv(opt_in[k][0]);
      printf("wgmma cases with %s=%s: %d passed, %d failed\n", opt_in[k][0], opt_in[k][1],
             passed - p0, failed - f0);
    }
  }
  printf("test_cuda_attn: %d passed, %d failed\n", passed, failed);
  ptc_context_release(ctx);
  return failed ? 1 : 0;
}
