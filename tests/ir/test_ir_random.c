/* test_ir_random.c - differential test of lowering + the IR interpreter
 * against the ref backend on random graphs (tests/randgraph.h): each seed's
 * graph is lowered as built, after decomp_graph, and without fusion, run at
 * every size set of the graph with ir_interpret, and compared with the ref
 * backend's outputs by rg_compare (its error model).
 *
 * usage: test_ir_random [FIRST_SEED] [N_SEEDS] [-v]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decomp/decomp.h"
#include "lib/ir/ir.h"
#include "lib/runtime/backend.h"
#include "tests/ir/rg_interp.h"
#include "tests/randgraph.h"

enum { V_PLAIN, V_DECOMP, V_NOFUSE, V_COUNT };
static const char* const vname[V_COUNT] = {"plain", "decomp", "nofuse"};

typedef struct tally {
  int runs, passed, failed;
} tally;

/* Lowers g (pointwise inlined when `fuse`) and interprets it into `got`. */
static ptc_status interpret(const ptc_graph* g, bool fuse, const rg_inputs* in,
                            const ptc_results* got) {
  ir_lower_options o;
  ir_lower_options_init(&o);
  o.inline_pointwise = fuse;
  return rg_interpret(g, &o, in, got);
}

static bool run_seed(ptc_context* ctx, uint64_t seed, bool verbose, tally* t) {
  rg_options ro;
  rg_options_init(&ro, seed);
  rg_graph rg;
  ptc_status s = rg_generate(ctx, &ro, &rg);
  if (s) {
    printf("FAIL seed %llu: generate: %s\n", (unsigned long long)seed, ptc_status_message(s));
    ptc_status_destroy(s);
    return false;
  }
  ptc_graph* dg = NULL;
  ptc_executable* exe = NULL;
  s = decomp_graph(rg.g, &dg);
  if (!s) s = ptc_compile(ctx, rg.g, NULL, &exe);
  bool ok = !s;
  if (s) printf("FAIL seed %llu: %s\n", (unsigned long long)seed, ptc_status_message(s));
  ptc_status_destroy(s);
  for (uint32_t k = 0; ok && k < rg_num_runs(&rg); k++) {
    int64_t sv[RG_MAX_SYMS] = {0};
    rg_inputs in;
    ptc_results *want = NULL, *got = NULL;
    rg_run_sizes(&rg, k, sv);
    if (!rg_inputs_make(&rg, sv, seed * 31 + k, &in)) return false;
    s = ptc_executable_run_alloc(exe, in.t, in.n, NULL, &want);
    if (!s) s = ptc_executable_run_alloc(exe, in.t, in.n, NULL, &got);
    if (s) { /* the size set broke a guard, or the graph errs at run time on ref */
      ptc_status_destroy(s);
      rg_inputs_free(&in);
      continue;
    }
    for (int v = 0; v < V_COUNT; v++) {
      const ptc_graph* g = v == V_DECOMP ? dg : rg.g;
      char msg[512] = "";
      t[v].runs++;
      s = interpret(g, v != V_NOFUSE, &in, got);
      int bad = s ? 1 : rg_compare(&rg, got, want, msg, sizeof msg);
      if (bad) {
        printf("FAIL seed %llu size set %u [%s]: %s\n", (unsigned long long)seed, k, vname[v],
               s ? ptc_status_message(s) : msg);
        if (verbose) rg_print(&rg, sv, stdout);
      }
      ptc_status_destroy(s);
      t[v].passed += !bad;
      t[v].failed += bad != 0;
      ok &= !bad;
    }
    ptc_results_destroy(want);
    ptc_results_destroy(got);
    rg_inputs_free(&in);
  }
  ptc_executable_release(exe);
  ptc_graph_destroy(dg);
  rg_graph_free(&rg);
  return ok;
}

int main(int argc, char** argv) {
  uint64_t first = argc > 1 ? strtoull(argv[1], NULL, 10) : 0;
  uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 300;
  bool verbose = argc > 3 && strcmp(argv[3], "-v") == 0;
  ptc_context* ctx = NULL;
  if (ptc_context_create(NULL, &ctx)) return 1;
  tally t[V_COUNT];
  memset(t, 0, sizeof t);
  int bad_seeds = 0;
  for (uint64_t s = first; s < first + n; s++) bad_seeds += !run_seed(ctx, s, verbose, t);
  int passed = 0, failed = 0;
  for (int v = 0; v < V_COUNT; v++) {
    printf("ir random [%s]: %d runs, %d passed, %d failed\n", vname[v], t[v].runs, t[v].passed,
           t[v].failed);
    passed += t[v].passed;
    failed += t[v].failed;
  }
  printf("test_ir_random: %llu seeds, %d with failures\n%d passed, %d failed\n",
         (unsigned long long)n, bad_seeds, passed, failed);
  ptc_context_release(ctx);
  return bad_seeds ? 1 : 0;
}
