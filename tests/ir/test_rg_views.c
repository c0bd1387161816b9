/* test_rg_views.c - the random-graph generator's extern-view blocks
 * (tests/randgraph.h, rg_options.view_percent) reach lowering's in-place
 * extern operands (IR_BUF_VIEW, lib/ir/lower_extern.c), and views and the
 * copies they replace give the same results.
 *
 * Each seed's graph is decomposed the way the cpu backend does it (all but
 * gelu/silu) and the way the cuda backend does (scaled_dot_product_attention
 * also kept, a fallback extern, where cuda_attn_graph_ok takes the graph:
 * head dims 32/64/128), and each is lowered with extern views on and off, counting IR_BUF_VIEW buffers (by
 * the extern kind reading them; those at a nonzero offset), attention
 * outputs stored transposed, and pointwise nodes (where the copies are).
 * Checks:
 *  - with views off a program has no view buffer and no transposed output;
 *  - a program with views has fewer pointwise nodes than with views off
 *    (the copies come back);
 *  - on graphs with views: the cpu backend with views on and with
 *    PTC_EXTERN_VIEWS=0, and the IR interpreter on the cuda-like lowering
 *    both ways, match the ref backend at every size set
 *    (rg_compare's error model);
 *  - over >= 100 seeds: at least MIN_PERCENT of the graphs have views in
 *    each pipeline, and GEMM views, attention views, views at an offset and
 *    transposed attention outputs all occur.
 *
 * usage: test_rg_views [FIRST_SEED [N_SEEDS]] [-v]   (default 1 300, the
 * seeds of test_cpu_random). PTC_EXTERN_VIEWS is set by the test itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decomp/decomp.h"
#include "lib/ir/ir.h"
#include "backends/cuda/cuda_attn.h"
#include "lib/runtime/backend.h"
#include "tests/ir/rg_interp.h"
#include "tests/randgraph.h"

enum { MIN_PERCENT = 10, MIN_SEEDS_FOR_COVERAGE = 100 };
enum { P_CPU, P_ATTN, P_COUNT };
static const char* const pname[P_COUNT] = {"cpu", "cuda-like"};

/* What one lowered program holds. */
typedef struct census {
  int views, gemm_views, attn_views, offset_views, swapped, pointwise;
} census;

typedef struct totals {
  int graphs, with_views[P_COUNT], views[P_COUNT], gemm_views[P_COUNT], attn_views[P_COUNT];
  int offset_views[P_COUNT], swapped[P_COUNT], copies_saved[P_COUNT];
  int runs, passed, failed;
} totals;

static bool want_cpu(void* user, const char* op) {
  (void)user;
  return strcmp(op, "gelu") != 0 && strcmp(op, "silu") != 0;
}

/* user: a bool, whether the cuda backend keeps the graph's attention whole */
static bool want_cuda(void* user, const char* op) {
  if (strcmp(op, "scaled_dot_product_attention") == 0) return !*(const bool*)user;
  return want_cpu(user, op);
}

static ptc_status decompose(const ptc_graph* g, int pipe, ptc_graph** out) {
  bool keep_sdpa = cuda_attn_graph_ok(g);
  decomp_options o;
  memset(&o, 0, sizeof o);
  o.want = pipe == P_CPU ? want_cpu : want_cuda;
  o.user = &keep_sdpa;
  return decomp_graph_ex(g, &o, out);
}

/* The lowering options of both backends, extern views on or off. */
static ir_lower_options lower_options(bool views) {
  ir_lower_options o;
  ir_lower_options_init(&o);
  o.lowp_f32_math = true; /* as both backends */
  o.extern_views = views;
  return o;
}

static ptc_status lower(const ptc_graph* dg, bool views, ir_program** p) {
  ir_lower_options o = lower_options(views);
  return ir_lower(dg->ctx, dg, &o, p);
}

static census count(ir_program* p) {
  census c;
  memset(&c, 0, sizeof c);
  for (size_t i = 0; i < p->buffers.len; i++) {
    const ir_buffer* b = ir_buf(p, (int32_t)i);
    int64_t off = 0;
    if (b->kind != IR_BUF_VIEW) continue;
    c.views++;
    c.offset_views += !sym_is_const(b->offset, &off) || off != 0;
  }
  for (size_t i = 0; i < p->nodes.len; i++) {
    const ir_node* n = ir_node_at(p, i);
    if (n->kind == IR_POINTWISE) c.pointwise++;
    if (n->kind != IR_EXTERN) continue;
    for (uint32_t k = 0; k < n->ext.n_in; k++) {
      if (n->ext.in[k] < 0 || ir_buf(p, n->ext.in[k])->kind != IR_BUF_VIEW) continue;
      c.gemm_views += n->ext.kind == IR_EXT_MATMUL;
      c.attn_views += n->ext.kind == IR_EXT_FALLBACK;
    }
    if (n->ext.kind != IR_EXT_FALLBACK || n->ext.n_out != 1) continue;
    const ir_buffer* o = ir_buf(p, n->ext.out[0]);
    uint32_t r = o->rank;
    /* dims r-3, r-2 stored exchanged: the stride of r-3 is not that of r-2 times its size */
    if (r >= 4 && o->strides[r - 3] != sym_mul(p->env, o->strides[r - 2], o->shape[r - 2]))
      c.swapped++;
  }
  return c;
}

/* Lowers (views on/off, as lower()) and interprets dg into `got`. */
static ptc_status interpret(const ptc_graph* dg, bool views, const rg_inputs* in,
                            const ptc_results* got) {
  ir_lower_options o = lower_options(views);
  return rg_interpret(dg, &o, in, got);
}

static ptc_status compile(ptc_context* ctx, const rg_graph* rg, const char* backend, bool views,
                          ptc_executable** out) {
  setenv("PTC_EXTERN_VIEWS", views ? "1" : "0", 1);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  return ptc_compile(ctx, rg->g, &o, out);
}

static void fail(totals* t, const rg_graph* rg, bool verbose, const char* what,
                 const char* detail) {
  printf("FAIL seed %llu: %s: %s\n", (unsigned long long)rg->seed, what, detail);
  if (verbose) rg_print(rg, NULL, stdout);
  t->failed++;
}

/* cpu (views on, off) and the interpreter on the cuda-like lowering (on,
 * off) against ref at every size set. */
static void run_graph(ptc_context* ctx, const rg_graph* rg, const ptc_graph* attn_dg,
                      bool verbose, totals* t) {
  ptc_executable *ref = NULL, *cpu[2] = {NULL, NULL};
  ptc_status s = compile(ctx, rg, "ref", true, &ref);
  for (int v = 0; v < 2 && !s; v++) s = compile(ctx, rg, "cpu", v == 1, &cpu[v]);
  if (s) fail(t, rg, verbose, "compile", ptc_status_message(s));
  for (uint32_t k = 0; !s && k < rg_num_runs(rg); k++) {
    int64_t sv[RG_MAX_SYMS] = {0};
    rg_inputs in;
    ptc_results *want = NULL, *got = NULL;
    rg_run_sizes(rg, k, sv);
    if (!rg_inputs_make(rg, sv, rg->seed * 31 + k, &in)) {
      fail(t, rg, verbose, "inputs", "out of memory");
      break;
    }
    ptc_status rs = ptc_executable_run_alloc(ref, in.t, in.n, NULL, &want);
    if (rs) { /* the size set broke a guard of the graph */
      ptc_status_destroy(rs);
      rg_inputs_free(&in);
      continue;
    }
    for (int variant = 0; variant < 4; variant++) {
      static const char* const names[] = {"cpu, views off", "cpu, views on",
                                          "interpreter, views off", "interpreter, views on"};
      char msg[1024] = "";
      bool views = variant % 2 == 1;
      t->runs++;
      if (variant < 2) {
        rs = ptc_executable_run_alloc(cpu[views], in.t, in.n, NULL, &got);
      } else {
        rs = ptc_executable_run_alloc(ref, in.t, in.n, NULL, &got); /* shapes for the outputs */
        if (!rs) rs = interpret(attn_dg, views, &in, got);
      }
      int bad = rs ? 1 : rg_compare(rg, got, want, msg, sizeof msg);
      if (bad) fail(t, rg, verbose, names[variant], rs ? ptc_status_message(rs) : msg);
      else t->passed++;
      ptc_status_destroy(rs);
      ptc_results_destroy(got);
      got = NULL;
    }
    ptc_results_destroy(want);
    rg_inputs_free(&in);
  }
  ptc_status_destroy(s);
  ptc_executable_release(ref);
  ptc_executable_release(cpu[0]);
  ptc_executable_release(cpu[1]);
}

static void run_seed(ptc_context* ctx, uint64_t seed, bool verbose, totals* t) {
  rg_options ro;
  rg_options_init(&ro, seed);
  rg_graph rg;
  ptc_status s = rg_generate(ctx, &ro, &rg);
  if (s) {
    printf("FAIL seed %llu: generate: %s\n", (unsigned long long)seed, ptc_status_message(s));
    ptc_status_destroy(s);
    t->failed++;
    return;
  }
  t->graphs++;
  ptc_graph* dg[P_COUNT] = {NULL, NULL};
  bool any = false;
  for (int pipe = 0; pipe < P_COUNT && !s; pipe++) {
    census c[2];
    s = decompose(rg.g, pipe, &dg[pipe]);
    for (int v = 0; v < 2 && !s; v++) {
      ir_program* p = NULL;
      s = lower(dg[pipe], v == 1, &p);
      if (!s) c[v] = count(p);
      ir_program_destroy(p);
    }
    if (s) break;
    if (c[0].views || c[0].swapped)
      fail(t, &rg, verbose, pname[pipe], "views off still has views");
    bool has = c[1].views || c[1].swapped;
    if (has && c[0].pointwise <= c[1].pointwise)
      fail(t, &rg, verbose, pname[pipe], "views on has no fewer pointwise nodes");
    t->with_views[pipe] += has;
    t->views[pipe] += c[1].views;
    t->gemm_views[pipe] += c[1].gemm_views;
    t->attn_views[pipe] += c[1].attn_views;
    t->offset_views[pipe] += c[1].offset_views;
    t->swapped[pipe] += c[1].swapped;
    t->copies_saved[pipe] += c[0].pointwise - c[1].pointwise;
    any = any || has;
    if (verbose)
      printf("seed %llu %s: %d views (%d GEMM, %d attention, %d at an offset), %d transposed "
             "attention outputs, %d -> %d pointwise nodes\n", (unsigned long long)seed,
             pname[pipe], c[1].views, c[1].gemm_views, c[1].attn_views, c[1].offset_views,
             c[1].swapped, c[0].pointwise, c[1].pointwise);
  }
  if (s) fail(t, &rg, verbose, "decompose/lower", ptc_status_message(s));
  else if (any) run_graph(ctx, &rg, dg[P_ATTN], verbose, t);
  ptc_status_destroy(s);
  for (int pipe = 0; pipe < P_COUNT; pipe++) ptc_graph_destroy(dg[pipe]);
  rg_graph_free(&rg);
}

int main(int argc, char** argv) {
  bool verbose = argc > 1 && strcmp(argv[argc - 1], "-v") == 0;
  int nargs = argc - (verbose ? 1 : 0);
  uint64_t first = nargs > 1 ? strtoull(argv[1], NULL, 10) : 1;
  uint64_t n = nargs > 2 ? strtoull(argv[2], NULL, 10) : 300;
  const char* saved = getenv("PTC_EXTERN_VIEWS");
  char* keep = saved ? strdup(saved) : NULL;
  ptc_context* ctx = NULL;
  if (ptc_context_create(NULL, &ctx)) return 1;
  totals t;
  memset(&t, 0, sizeof t);
  for (uint64_t s = first; s < first + n; s++) run_seed(ctx, s, verbose, &t);
  if (keep) setenv("PTC_EXTERN_VIEWS", keep, 1);
  else unsetenv("PTC_EXTERN_VIEWS");
  free(keep);
  for (int pipe = 0; pipe < P_COUNT; pipe++) {
    printf("%s lowering: %d of %d graphs with views (%.1f%%): %d views (%d GEMM operands, %d "
           "attention operands, %d at an offset), %d transposed attention outputs, %d copies "
           "fewer than with views off\n", pname[pipe], t.with_views[pipe], t.graphs,
           t.graphs ? 100.0 * t.with_views[pipe] / t.graphs : 0.0, t.views[pipe],
           t.gemm_views[pipe], t.attn_views[pipe], t.offset_views[pipe], t.swapped[pipe],
           t.copies_saved[pipe]);
    if (t.graphs < MIN_SEEDS_FOR_COVERAGE) continue;
    if (t.with_views[pipe] * 100 < MIN_PERCENT * t.graphs) {
      printf("FAIL: %s lowering: fewer than %d%% of the graphs have views\n", pname[pipe],
             MIN_PERCENT);
      t.failed++;
    }
    if (!t.gemm_views[pipe] || !t.offset_views[pipe]) {
      printf("FAIL: %s lowering: no GEMM views or none at an offset\n", pname[pipe]);
      t.failed++;
    }
  }
  if (t.graphs >= MIN_SEEDS_FOR_COVERAGE && (!t.attn_views[P_ATTN] || !t.swapped[P_ATTN])) {
    printf("FAIL: cuda-like lowering: no attention views or no transposed outputs\n");
    t.failed++;
  }
  printf("test_rg_views: %d graphs, %d runs against ref\n%d passed, %d failed\n", t.graphs,
         t.runs, t.passed, t.failed);
  ptc_context_release(ctx);
  return t.failed ? 1 : 0;
}
