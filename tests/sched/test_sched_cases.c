/* test_sched_cases.c - the scheduler over every PyTorch op case of
 * tests/data/ops_*.json: each case's graph (as built, decomposed, fully
 * realized, and with every input dim of size >= 2 made symbolic) is lowered
 * and scheduled with and without fusion; every plan must satisfy the
 * invariants of sched_check.h (node coverage, loop fit, producer order,
 * index match inside kernels, local buffers, slot lifetimes). Prints the
 * totals (kernels, fusions, locals, in-place, reused slots).
 *
 * usage: test_sched_cases FILE.json... [-k SUBSTRING] [-d (dump failing plans)]
 *                         [-v (one line per plan)]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/decomp/decomp.h"
#include "lib/ir/ir.h"
#include "lib/sched/sched.h"
#include "tests/case_load.h"
#include "tests/sched/sched_check.h"

enum { V_PLAIN, V_DECOMP, V_NOFUSE, V_DYNAMIC, V_COUNT };
static const char* const variant_names[V_COUNT] = {"plain", "decomp", "nofuse", "dynamic"};

typedef struct totals {
  int plans, failed, skipped;
  long nodes, kernels, fusions, locals, inplace, reused, slots;
} totals;

static bool g_dump = false;
static bool g_verbose = false;

/* Graph of variant v: as built (plain), or decomposed; the dynamic variant
 * makes every input dim of size >= 2 symbolic first (as compiling with
 * dynamic dims does), then decomposes. */
static ptc_status variant_graph(int v, const op_case* oc, ptc_graph** out, bool* skip) {
  *out = NULL;
  *skip = false;
  if (v == V_PLAIN) return graph_clone(oc->graph, out);
  if (v != V_DYNAMIC) return decomp_graph(oc->graph, out);
  ptc_dynamic_dim dims[64];
  size_t n = 0;
  for (size_t i = 0; i < oc->n_inputs; i++)
    for (int32_t k = 0; k < oc->inputs[i].ndim && n < 64; k++)
      if (oc->inputs[i].shape[k] >= 2) dims[n++] = (ptc_dynamic_dim){(uint32_t)i, (uint32_t)k};
  ptc_graph* dyn = NULL;
  ptc_status s = n ? graph_make_dynamic(oc->graph, dims, n, &dyn) : NULL;
  if (s || !n) {
    *skip = true; /* attributes fix a size, or nothing to make dynamic */
    ptc_status_destroy(s);
    return NULL;
  }
  s = decomp_graph(dyn, out);
  ptc_graph_destroy(dyn);
  return s;
}

static void count(totals* t, const ir_program* p, const sched_plan* s) {
  t->plans++;
  t->nodes += (long)p->nodes.len;
  t->kernels += s->n_kernels;
  t->fusions += s->n_fusions;
  t->inplace += s->n_inplace;
  t->reused += s->n_reused;
  t->slots += s->n_slots;
  for (size_t b = 0; b < p->buffers.len; b++) t->locals += s->buf_home[b] == SCHED_HOME_LOCAL;
}

static void dump(const char* name, const ir_program* p, const sched_plan* s) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  ir_program_dump(p, &sb);
  if (s) sched_plan_dump(p, s, &sb);
  printf("---- %s\n%s", name, sb.data ? sb.data : "");
  ptc_sb_free(&sb);
}

/* Lowers g and schedules it with fusion on and off. */
static void run_variant(int v, const op_case* oc, const ptc_graph* g, totals* t) {
  ir_lower_options lo;
  ir_lower_options_init(&lo);
  lo.inline_pointwise = v != V_NOFUSE;
  ir_program* p = NULL;
  ptc_status s = ir_lower(g->ctx, g, &lo, &p);
  if (s) { /* lowering errors belong to tests/ir; count as skipped here */
    t[v].skipped++;
    ptc_status_destroy(s);
    return;
  }
  for (int fuse = 1; fuse >= 0; fuse--) {
    sched_options so;
    sched_options_init(&so);
    so.fuse = fuse != 0;
    sched_plan* plan = NULL;
    char what[160];
    snprintf(what, sizeof what, "%s [%s%s]", oc->name, variant_names[v], fuse ? "" : ", no fusion");
    s = sched_run(p, &so, &plan);
    if (s) {
      printf("FAIL %s: %s\n", what, ptc_status_message(s));
      ptc_status_destroy(s);
      t[v].failed++;
      if (g_dump) dump(what, p, NULL);
      continue;
    }
    if (sched_check_plan(p, plan, what)) {
      printf("FAIL %s: invariants\n", what);
      t[v].failed++;
      if (g_dump) dump(what, p, plan);
    }
    count(&t[v], p, plan);
    if (g_verbose)
      printf("ok   %s: %u kernels, %u fusions, %u slots, %u in place, %u reused\n", what,
             plan->n_kernels, plan->n_fusions, plan->n_slots, plan->n_inplace, plan->n_reused);
    sched_plan_destroy(plan);
  }
  ir_program_destroy(p);
}

static void run_case(ptc_context* ctx, const cJSON* c, totals* t) {
  op_case oc;
  ptc_status s = case_build(ctx, c, &oc);
  if (s) { /* cases that expect a build error */
    ptc_status_destroy(s);
    return;
  }
  for (int v = 0; v < V_COUNT; v++) {
    ptc_graph* g = NULL;
    bool skip = false;
    s = variant_graph(v, &oc, &g, &skip);
    if (s) {
      t[v].skipped++;
      ptc_status_destroy(s);
    } else if (skip) {
      t[v].skipped++;
    } else {
      run_variant(v, &oc, g, t);
    }
    ptc_graph_destroy(g);
  }
  case_free(&oc);
}

int main(int argc, char** argv) {
  const char* filter = NULL;
  ptc_context* ctx = NULL;
  if (ptc_context_create(NULL, &ctx)) return 1;
  totals t[V_COUNT];
  memset(t, 0, sizeof t);
  int files = 0, bad_files = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-k") && i + 1 < argc) filter = argv[++i];
    if (!strcmp(argv[i], "-d")) g_dump = true;
    if (!strcmp(argv[i], "-v")) g_verbose = true;
  }
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') {
      i += !strcmp(argv[i], "-k");
      continue;
    }
    cJSON* root = case_file_load(argv[i]);
    if (!root) {
      bad_files++;
      continue;
    }
    files++;
    for (const cJSON* c = case_first(root); c; c = c->next)
      if (!filter || strstr(case_name(c), filter)) run_case(ctx, c, t);
    cJSON_Delete(root);
  }
  int failed = 0, plans = 0;
  for (int v = 0; v < V_COUNT; v++) {
    printf(
        "sched cases [%s]: %d plans, %d failed, %d skipped; %ld nodes -> %ld kernels, "
        "%ld fusions, %ld locals, %ld slots, %ld in place, %ld reused\n",
        variant_names[v], t[v].plans, t[v].failed, t[v].skipped, t[v].nodes, t[v].kernels,
        t[v].fusions, t[v].locals, t[v].slots, t[v].inplace, t[v].reused);
    failed += t[v].failed;
    plans += t[v].plans;
  }
  ptc_context_release(ctx);
  return failed || bad_files || files == 0 || plans == 0 ? 1 : 0;
}
