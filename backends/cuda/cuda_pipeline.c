/* cuda_pipeline.c - the cuda backend's compile pipeline up to the schedule
 * (decomp_graph -> ir_lower -> sched_run, as the cpu backend; gelu and silu
 * stay whole so the lowering folds them into GEMM epilogues; sdpa stays whole,
 * a fallback extern the device runs, when cuda_attn_graph_ok; so do var /
 * std / var_mean of long rows, cuda_welford_node_ok), and the
 * compile-only check used by CI, where NVRTC exists but no GPU does. */
#include "../../lib/decomp/decomp.h"
#include "cuda.h"
#include "cuda_attn.h"
#include "cuda_attn_match.h"
#include "cuda_cg.h"
#include "cuda_conv_tma.h"
#include "cuda_nvrtc.h"
#include "cuda_welford.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* user: a bool, true if the graph's sdpa nodes stay whole (cuda_attn.c) */
static bool want_decomposed(void* user, const char* op) {
  if (strcmp(op, "scaled_dot_product_attention") == 0) return !*(const bool*)user;
  static const char* const kept[] = {"gelu", "silu"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    if (strcmp(op, kept[i]) == 0) return false;
  return true;
}

/* var / std / var_mean of long rows stay whole (cuda_welford.c) */
static bool want_node(void* user, const ptc_graph* g, const gnode* n) {
  (void)user;
  return !cuda_welford_node_ok(g, n);
}

ptc_status cuda_pipeline(ptc_context* ctx, const cuda_device* dev, const ptc_graph* g, bool fuse,
                         ptc_graph** dg, ir_program** p, sched_plan** s) {
  *dg = NULL;
  *p = NULL;
  *s = NULL;
  decomp_options dopt;
  memset(&dopt, 0, sizeof dopt);
  dopt.borrow_constants = true;
  dopt.want = want_decomposed;
  dopt.want_node = want_node;
  ptc_graph* ag = NULL; /* written-out attention rewritten into sdpa (cuda_attn_match.c) */
  PTC_TRY(cuda_attn_match(g, &ag, NULL));
  bool keep_sdpa = cuda_attn_graph_ok(ag ? ag : g);
  dopt.user = &keep_sdpa;
  ptc_status ds = decomp_graph_ex(ag ? ag : g, &dopt, dg);
  ptc_graph_destroy(ag);
  PTC_TRY(ds);
  ir_lower_options lo;
  ir_lower_options_init(&lo);
  lo.inline_pointwise = fuse;
  lo.lowp_f32_math = true; /* f16/bf16: f32 between fused ops, as Inductor */
  /* channels-last activations around the large-plane convolutions (their
   * implicit GEMM reads 16-byte vectors along C and writes [N][H][W][C]);
   * PTC_CUDA_CONV_NHWC=0: NCHW everywhere (before) */
  const char* nhwc = getenv("PTC_CUDA_CONV_NHWC");
  lo.conv_nhwc = !(nhwc && *nhwc == '0');
  /* PTC_CUDA_CONV_NHWC_PLANE=N: channels-last for output planes of more
   * than N pixels (default 196: the small planes stay on NCHW im2col GEMMs;
   * 49 where the Hopper TMA convolution runs them: resnet18 b32 layer3 on
   * it, GPU time per call on an H100 fp32 1.21 -> 1.12 ms, bf16 0.776 ->
   * 0.701) */
  if (cuda_conv_tma_enabled(dev)) lo.conv_nhwc_plane = lo.conv_nhwc_plane_f32 = 49;
  const char* plane = getenv("PTC_CUDA_CONV_NHWC_PLANE");
  if (plane && *plane) lo.conv_nhwc_plane = lo.conv_nhwc_plane_f32 = strtoll(plane, NULL, 10);
  ptc_status st = ir_lower(ctx, *dg, &lo, p);
  if (!st) {
    sched_options so;
    sched_options_init(&so);
    so.fuse = fuse;
    st = sched_run(*p, &so, s);
  }
  if (st) {
    ir_program_destroy(*p);
    ptc_graph_destroy(*dg);
    *p = NULL;
    *dg = NULL;
  }
  return st;
}

const char* cuda_nvrtc_unavailable(void) {
  const cuda_libs* L = cuda_libs_get();
  return L->have_nvrtc ? NULL : L->nvrtc_error;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

ptc_status cuda_check_generate(ptc_context* ctx, const ptc_graph* g, bool fuse, const char* prefix,
                               ptc_strbuf* tu, cuda_check_stats* st) {
  ptc_graph* dg;
  ir_program* p;
  sched_plan* s;
  double t0 = now_ms();
  PTC_TRY(cuda_pipeline(ctx, NULL, g, fuse, &dg, &p, &s));
  size_t plen = strlen(ptc_cuda_prelude_text);
  ptc_status e = PTC_OK;
  for (uint32_t k = 0; !e && k < s->n_kernels; k++) {
    if (s->kernels[k].is_extern) {
      st->externs++;
      continue;
    }
    char name[48];
    snprintf(name, sizeof name, "%sk%u", prefix ? prefix : "ptc_", k);
    cuda_kernel_src src;
    e = cuda_codegen_kernel_named(p, s, k, name, &src);
    if (e) break;
    const char* rest = strstr(src.source, ptc_cuda_prelude_text);
    ptc_sb_append(tu, rest ? rest + plen : src.source);
    cuda_kernel_src_free(&src);
    st->kernels++;
  }
  if (!e && tu->oom) e = ptc_status_oom();
  sched_plan_destroy(s);
  ir_program_destroy(p);
  ptc_graph_destroy(dg);
  st->codegen_ms += now_ms() - t0;
  return e;
}

ptc_status cuda_check_compile(const char* kernels, const int* archs, size_t n_archs,
                              cuda_check_stats* st) {
  const char* why = cuda_nvrtc_unavailable();
  if (why) return PTC_ERR(UNAVAILABLE, "cuda backend: %s", why);
  ptc_strbuf tu;
  ptc_sb_init(&tu);
  ptc_sb_append(&tu, ptc_cuda_prelude_text);
  ptc_sb_append(&tu, kernels ? kernels : "");
  ptc_status e = tu.oom ? ptc_status_oom() : PTC_OK;
  double t0 = now_ms();
  for (size_t a = 0; !e && a < n_archs; a++) {
    cuda_cubin c;
    e = cuda_nvrtc_compile_ex(tu.data, "ptc_check", archs[a], "--Ofast-compile=max", &c);
    st->cubin_bytes += c.size;
    st->programs++;
    cuda_cubin_free(&c);
  }
  st->nvrtc_ms += now_ms() - t0;
  ptc_sb_free(&tu);
  return e;
}

ptc_status cuda_compile_check(ptc_context* ctx, const ptc_graph* g, bool fuse, const int* archs,
                              size_t n_archs, cuda_check_stats* stats) {
  ptc_strbuf tu;
  ptc_sb_init(&tu);
  ptc_status e = cuda_check_generate(ctx, g, fuse, NULL, &tu, stats);
  if (!e) e = cuda_check_compile(tu.data, archs, n_archs, stats);
  ptc_sb_free(&tu);
  return e;
}
