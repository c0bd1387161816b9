/* test_ir_cases.c - lowering + IR interpreter against PyTorch: every case of
 * tests/data/ops_*.json is built as a one-node graph, lowered with ir_lower
 * and executed by ir_interpret, and its outputs are compared with PyTorch's
 * within the case's tolerance. Variants (each counted separately):
 *   plain     the graph as built
 *   decomp    after decomp_graph (lib/decomp), when present
 *   nofuse    inline_pointwise = false (every value realized)
 *   dynamic   every input dim of size >= 2 made symbolic (graph_make_dynamic);
 *             cases whose attributes fix a size are skipped
 *
 * usage: test_ir_cases FILE.json... [-k SUBSTRING] [-v] [-d (dump IR)]
 *                      [--variants plain,decomp,...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ir/ir.h"
#include "lib/runtime/backend.h"
#include "tests/case_load.h"

#if defined(__has_include)
#if __has_include("lib/decomp/decomp.h")
#include "lib/decomp/decomp.h"
#define HAVE_DECOMP 1
#endif
#endif
#ifndef HAVE_DECOMP
#define HAVE_DECOMP 0
#endif

enum { V_PLAIN, V_DECOMP, V_NOFUSE, V_DYNAMIC, V_COUNT };
static const char* const variant_names[V_COUNT] = {"plain", "decomp", "nofuse", "dynamic"};

typedef struct counts {
  int run, passed, failed, skipped;
} counts;

typedef struct opts {
  const char* filter;
  bool verbose;
  bool variant[V_COUNT];
} opts;

/* Graph of the variant (borrowed g, or a new graph in *owned); NULL with
 * *skip set when the variant does not apply. */
static ptc_status variant_graph(int v, const op_case* oc, ptc_graph** owned, bool* skip) {
  *owned = NULL;
  *skip = false;
  if (v == V_DECOMP) {
#if HAVE_DECOMP
    return decomp_graph(oc->graph, owned);
#else
    *skip = true;
    return PTC_OK;
#endif
  }
  if (v != V_DYNAMIC) return PTC_OK;
  ptc_dynamic_dim dims[64];
  size_t n = 0;
  for (size_t i = 0; i < oc->n_inputs; i++)
    for (int32_t d = 0; d < oc->inputs[i].ndim && n < 64; d++)
      if (oc->inputs[i].shape[d] >= 2) dims[n++] = (ptc_dynamic_dim){(uint32_t)i, (uint32_t)d};
  if (n == 0) {
    *skip = true;
    return PTC_OK;
  }
  ptc_status s = graph_make_dynamic(oc->graph, dims, n, owned);
  if (s) {
    *skip = true; /* the case's attributes fix a size */
    ptc_status_destroy(s);
  }
  return PTC_OK;
}

static bool g_dump = false;

static ptc_status run_variant(int v, const op_case* oc, const ptc_graph* g) {
  ir_lower_options lo;
  ir_lower_options_init(&lo);
  lo.inline_pointwise = v != V_NOFUSE;
  size_t n_syms = sym_num_vars(g->env);
  int64_t* syms = calloc(n_syms + 1, sizeof *syms);
  if (!syms) return ptc_status_oom();
  ptc_status s = runtime_bind_inputs(g, oc->inputs, oc->n_inputs, syms, n_syms);
  ir_program* p = NULL;
  if (!s) s = ir_lower(g->ctx, g, &lo, &p);
  if (!s && g_dump) {
    ptc_strbuf sb;
    ptc_sb_init(&sb);
    ir_program_dump(p, &sb);
    printf("---- %s [%s]\n%s", oc->name, variant_names[v], sb.data ? sb.data : "");
    ptc_sb_free(&sb);
  }
  for (size_t k = 0; !s && k < oc->n_outputs; k++) {
    const ptc_tensor* t = &oc->outputs[k];
    size_t bytes = ptc_dtype_size(ptc_dtype_from_dl(t->dtype));
    for (int32_t d = 0; d < t->ndim; d++) bytes *= (size_t)t->shape[d];
    memset(t->data, 0xA5, bytes); /* garbage: every element must be written */
  }
  if (!s) s = ir_interpret(p, oc->inputs, oc->n_inputs, oc->outputs, oc->n_outputs, syms, n_syms, 0);
  ir_program_destroy(p);
  free(syms);
  return s;
}

static void run_case(ptc_context* ctx, const cJSON* c, const opts* o, counts* cnt) {
  op_case oc;
  ptc_status s = case_build(ctx, c, &oc);
  if (s) {
    printf("FAIL %s: building: %s\n", case_name(c), ptc_status_message(s));
    ptc_status_destroy(s);
    cnt[V_PLAIN].run++;
    cnt[V_PLAIN].failed++;
    return;
  }
  for (int v = 0; v < V_COUNT; v++) {
    if (!o->variant[v]) continue;
    ptc_graph* owned = NULL;
    bool skip = false;
    s = variant_graph(v, &oc, &owned, &skip);
    if (skip) {
      cnt[v].skipped++;
      continue;
    }
    cnt[v].run++;
    if (!s) s = run_variant(v, &oc, owned ? owned : oc.graph);
    bool ok = !s;
    if (s) printf("FAIL %s [%s]: %s\n", oc.name, variant_names[v], ptc_status_message(s));
    for (size_t k = 0; ok && k < oc.n_outputs; k++) {
      ok = case_compare(&oc, k, &oc.outputs[k]);
      if (!ok) printf("     (variant %s)\n", variant_names[v]);
    }
    if (ok && o->verbose) printf("ok   %s [%s]\n", oc.name, variant_names[v]);
    cnt[v].passed += ok;
    cnt[v].failed += !ok;
    ptc_status_destroy(s);
    ptc_graph_destroy(owned);
  }
  case_free(&oc);
}

static void parse_variants(const char* list, opts* o) {
  for (int v = 0; v < V_COUNT; v++) o->variant[v] = strstr(list, variant_names[v]) != NULL;
}

int main(int argc, char** argv) {
  opts o;
  memset(&o, 0, sizeof o);
  o.variant[V_PLAIN] = true;
  o.variant[V_DECOMP] = HAVE_DECOMP;
  ptc_context* ctx = NULL;
  if (ptc_context_create(NULL, &ctx)) return 1;
  counts cnt[V_COUNT];
  memset(cnt, 0, sizeof cnt);
  int files = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) o.filter = argv[++i];
    else if (strcmp(argv[i], "-v") == 0) o.verbose = true;
    else if (strcmp(argv[i], "-d") == 0) g_dump = true;
    else if (strcmp(argv[i], "--variants") == 0 && i + 1 < argc) parse_variants(argv[++i], &o);
  }
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-') {
      i += strcmp(argv[i], "-v") != 0 && strcmp(argv[i], "-d") != 0;
      continue;
    }
    cJSON* root = case_file_load(argv[i]);
    if (!root) {
      cnt[V_PLAIN].failed++;
      continue;
    }
    files++;
    for (const cJSON* c = case_first(root); c; c = c->next)
      if (!o.filter || strstr(case_name(c), o.filter)) run_case(ctx, c, &o, cnt);
    cJSON_Delete(root);
  }
  int passed = 0, failed = 0;
  for (int v = 0; v < V_COUNT; v++) {
    if (!o.variant[v]) continue;
    printf("ir cases [%s]: %d run, %d passed, %d failed, %d skipped\n", variant_names[v],
           cnt[v].run, cnt[v].passed, cnt[v].failed, cnt[v].skipped);
    passed += cnt[v].passed;
    failed += cnt[v].failed;
  }
  printf("%d passed, %d failed\n", passed, failed);
  ptc_context_release(ctx);
  return failed || files == 0 ? 1 : 0;
}
