/* test_decomp_ops.c - differential test of the decompositions on every
 * PyTorch case (tests/data/ops_*.json) whose op has a decomposition:
 *  1. the case's one-node graph runs on the ref backend (the oracle);
 *  2. decomp_graph rewrites it; the result must contain no decomposed op;
 *  3. the decomposed graph runs on the ref backend and must match the
 *     original within the case's tolerance - or, for f16/bf16 cases (where
 *     decompositions round differently), match PyTorch's outputs;
 *  4. the same with every dim of the contiguous inputs made dynamic first
 *     (graph_make_dynamic), which exercises the symbolic paths; cases whose
 *     attributes bake a size are counted as skipped.
 *
 * usage: test_decomp_ops FILE.json... [-k SUBSTRING] [-v]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "lib/decomp/decomp.h"
#include "tests/case_load.h"

typedef struct stats {
  int cases, passed, failed;
  int vs_ref, vs_torch;     /* comparison partner of the passed cases */
  int clean;                /* decomposed graphs free of decomposed ops */
  int dyn_passed, dyn_failed, dyn_skipped;
  int* per_op;              /* cases per table entry */
} stats;

static bool verbose = false;

/* ---- running ------------------------------------------------------------------ */

static ptc_status run_graph(ptc_context* ctx, const ptc_graph* g, const op_case* oc,
                            ptc_results** out) {
  ptc_executable* exe = NULL;
  ptc_status s = ptc_compile(ctx, g, NULL, &exe);
  if (!s) s = ptc_executable_run_alloc(exe, oc->inputs, oc->n_inputs, NULL, out);
  ptc_executable_release(exe);
  return s;
}

static bool is_half(int32_t dt) { return dt == PTC_F16 || dt == PTC_BF16; }

/* f16/bf16 anywhere: the decomposition rounds differently from the ref
 * kernel (which rounds once), so compare with PyTorch instead. */
static bool half_case(const op_case* oc) {
  for (size_t i = 0; i < oc->n_inputs; i++)
    if (is_half(ptc_dtype_from_dl(oc->inputs[i].dtype))) return true;
  for (size_t k = 0; k < oc->n_outputs; k++)
    if (is_half(ptc_dtype_from_dl(oc->outputs[k].dtype))) return true;
  return false;
}

static bool close_enough(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

/* got vs want (both contiguous results of the same graph outputs). */
static bool same_tensor(const op_case* oc, const char* what, size_t k, const ptc_tensor* got,
                        const ptc_tensor* want) {
  int32_t dt = ptc_dtype_from_dl(got->dtype);
  bool ok = dt == ptc_dtype_from_dl(want->dtype) && got->ndim == want->ndim;
  int64_t n = 1;
  for (int32_t d = 0; ok && d < got->ndim; d++) {
    ok = got->shape[d] == want->shape[d];
    n *= got->shape[d];
  }
  if (!ok) {
    printf("FAIL %s (%s): output %zu dtype/shape differs from the original's\n", oc->name, what, k);
    return false;
  }
  if (strcmp(oc->check, "shape") == 0) return true;
  ref_tensor a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.data = got->data;
  b.data = want->data;
  a.dtype = b.dtype = dt;
  for (int64_t i = 0; i < n; i++) {
    double x = ptc_dtype_is_float(dt) ? ref_load_f(&a, i) : (double)ref_load_i(&a, i);
    double y = ptc_dtype_is_float(dt) ? ref_load_f(&b, i) : (double)ref_load_i(&b, i);
    if (!close_enough(x, y, oc->rtol, oc->atol)) {
      printf("FAIL %s (%s): output %zu element %lld = %.9g, original %.9g (rtol %g, atol %g)\n",
             oc->name, what, k, (long long)i, x, y, oc->rtol, oc->atol);
      return false;
    }
  }
  return true;
}

/* Results of a rewritten graph against the original's (or PyTorch's). */
static bool compare_all(const op_case* oc, const char* what, const ptc_results* got,
                        const ptc_results* orig) {
  bool ok = ptc_results_count(got) == oc->n_outputs;
  for (size_t k = 0; ok && k < oc->n_outputs; k++)
    ok = half_case(oc) ? case_compare(oc, k, ptc_results_get(got, k))
                       : same_tensor(oc, what, k, ptc_results_get(got, k),
                                     ptc_results_get(orig, k));
  return ok;
}

/* No node of g calls an op that has a decomposition. */
static bool graph_clean(const op_case* oc, const ptc_graph* g) {
  for (size_t i = 0; i < g->nodes.len; i++) {
    const char* op = graph_node(g, i)->op->name;
    if (decomp_has(op)) {
      printf("FAIL %s: the decomposed graph still calls '%s'\n", oc->name, op);
      return false;
    }
  }
  return true;
}

static bool report(const op_case* oc, const char* what, ptc_status s) {
  if (!s) return true;
  printf("FAIL %s (%s): %s: %s\n", oc->name, what, ptc_code_name(ptc_status_code(s)),
         ptc_status_message(s));
  ptc_status_destroy(s);
  return false;
}

/* Decomposes g, checks it is clean, runs it and compares. */
static bool decomposed_matches(ptc_context* ctx, const op_case* oc, const ptc_graph* g,
                               const ptc_results* orig, const char* what, bool* clean) {
  ptc_graph* d = NULL;
  ptc_results* res = NULL;
  if (!report(oc, what, decomp_graph(g, &d))) return false;
  *clean = graph_clean(oc, d);
  bool ok = report(oc, what, run_graph(ctx, d, oc, &res)) && compare_all(oc, what, res, orig);
  ptc_results_destroy(res);
  ptc_graph_destroy(d);
  return ok && *clean;
}

/* ---- dynamic variant ------------------------------------------------------------- */

static bool contiguous(const ptc_tensor* t) {
  int64_t expect = 1;
  for (int32_t d = t->ndim; d-- > 0;) {
    if (t->shape[d] != 1 && t->strides && t->strides[d] != expect) return false;
    expect *= t->shape[d];
  }
  return true;
}

/* Every dim of the contiguous inputs (sizes 0/1 stay static anyway). */
static size_t all_dims(const op_case* oc, ptc_dynamic_dim* dims) {
  size_t n = 0;
  for (size_t i = 0; i < oc->n_inputs; i++)
    for (int32_t d = 0; contiguous(&oc->inputs[i]) && d < oc->inputs[i].ndim; d++)
      dims[n++] = (ptc_dynamic_dim){(uint32_t)i, (uint32_t)d};
  return n;
}

static void run_dynamic(ptc_context* ctx, const op_case* oc, const ptc_results* orig,
                        stats* st) {
  ptc_dynamic_dim dims[64 * PTC_MAX_RANK];
  size_t n = all_dims(oc, dims);
  ptc_graph* gd = NULL;
  ptc_status s = n ? graph_make_dynamic(oc->graph, dims, n, &gd) : NULL;
  if (!n || (s && ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT)) {
    if (verbose && s) printf("skip %s (dynamic): %s\n", oc->name, ptc_status_message(s));
    ptc_status_destroy(s);
    st->dyn_skipped++;
    return;
  }
  bool clean = true;
  bool ok = report(oc, "dynamic", s) && decomposed_matches(ctx, oc, gd, orig, "dynamic", &clean);
  ptc_graph_destroy(gd);
  if (ok)
    st->dyn_passed++;
  else
    st->dyn_failed++;
}

/* ---- one case ------------------------------------------------------------------------ */

static bool run_case(ptc_context* ctx, const cJSON* c, stats* st) {
  op_case oc;
  ptc_results* orig = NULL;
  ptc_status s = case_build(ctx, c, &oc);
  if (s) {
    printf("FAIL %s (build): %s\n", case_name(c), ptc_status_message(s));
    ptc_status_destroy(s);
    return false;
  }
  bool clean = false;
  bool ok = report(&oc, "original", run_graph(ctx, oc.graph, &oc, &orig)) &&
            decomposed_matches(ctx, &oc, oc.graph, orig, "decomposed", &clean);
  st->clean += clean;
  if (ok) {
    if (half_case(&oc))
      st->vs_torch++;
    else
      st->vs_ref++;
    if (verbose) printf("ok   %s\n", oc.name);
    run_dynamic(ctx, &oc, orig, st);
  }
  ptc_results_destroy(orig);
  case_free(&oc);
  return ok;
}

static int table_index(const char* op) {
  for (size_t i = 0; i < decomp_count(); i++)
    if (strcmp(decomp_op_at(i), op) == 0) return (int)i;
  return -1;
}

static void run_file(ptc_context* ctx, const char* path, const char* filter, stats* st) {
  cJSON* root = case_file_load(path);
  if (!root) {
    st->failed++;
    return;
  }
  for (const cJSON* c = case_first(root); c; c = c->next) {
    const cJSON* op = cJSON_GetObjectItem(c, "op");
    int t = op && cJSON_IsString(op) ? table_index(op->valuestring) : -1;
    if (t < 0 || cJSON_GetObjectItem(c, "expect_error")) continue;
    if (filter && !strstr(case_name(c), filter)) continue;
    st->cases++;
    st->per_op[t]++;
    if (run_case(ctx, c, st))
      st->passed++;
    else
      st->failed++;
  }
  cJSON_Delete(root);
}

/* Every table op must have been exercised by at least one case. */
static int missing_ops(const stats* st) {
  int missing = 0;
  for (size_t i = 0; i < decomp_count(); i++)
    if (st->per_op[i] == 0) {
      printf("FAIL decomposed op '%s' has no PyTorch case\n", decomp_op_at(i));
      missing++;
    }
  return missing;
}

int main(int argc, char** argv) {
  const char* filter = NULL;
  stats st;
  memset(&st, 0, sizeof st);
  st.per_op = calloc(decomp_count() + 1, sizeof *st.per_op);
  ptc_context* ctx = NULL;
  if (!st.per_op || ptc_context_create(NULL, &ctx)) return 1;
  int files = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) filter = argv[++i];
    else if (strcmp(argv[i], "-v") == 0) verbose = true;
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-k") == 0) i++;
    else if (strcmp(argv[i], "-v") != 0 && ++files) run_file(ctx, argv[i], filter, &st);
  }
  int missing = filter || files == 0 ? 0 : missing_ops(&st);
  for (size_t i = 0; verbose && i < decomp_count(); i++)
    printf("  %-30s %d cases\n", decomp_op_at(i), st.per_op[i]);
  printf("decomp: %d cases of %zu decomposed ops: %d passed, %d failed (%d compared with the "
         "original on ref, %d with PyTorch for f16/bf16); %d decomposed graphs free of composite "
         "ops\n",
         st.cases, decomp_count(), st.passed, st.failed, st.vs_ref, st.vs_torch, st.clean);
  printf("decomp dynamic: %d passed, %d failed, %d skipped (a size baked by an attribute, or "
         "no dynamic dim)\n",
         st.dyn_passed, st.dyn_failed, st.dyn_skipped);
  ptc_context_release(ctx);
  free(st.per_op);
  return st.failed || st.dyn_failed || missing || st.cases == 0 ? 1 : 0;
}
