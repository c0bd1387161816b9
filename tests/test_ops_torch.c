/* test_ops_torch.c - differential test of the ref backend against PyTorch:
 * reads tests/data/ops_<family>.json (written by tests/gen_cases.py), builds
 * a one-node graph per case through the public C API, runs it with the ref
 * backend and compares every output with PyTorch's (rtol/atol per case).
 *
 * usage: test_ops_torch FILE.json [-k SUBSTRING] [-v]
 *        test_ops_torch --coverage FILE.json...   (every registered op has cases)
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "lib/graph/json_attr.h"

static char* read_file(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) b[n] = 0;
  *len = (size_t)n;
  return b;
}

static int64_t* json_int_list(const cJSON* a, size_t* n) {
  *n = (size_t)cJSON_GetArraySize(a);
  int64_t* v = calloc(*n + 1, sizeof *v);
  size_t i = 0;
  for (const cJSON* e = a ? a->child : NULL; e; e = e->next) v[i++] = (int64_t)e->valuedouble;
  return v;
}

/* Fills a contiguous buffer of `dtype` from a JSON array of numbers. */
static void* fill_buffer(int32_t dtype, const cJSON* arr, size_t* count) {
  size_t n = (size_t)cJSON_GetArraySize(arr);
  ref_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.data = calloc(n + 1, 8);
  size_t i = 0;
  for (const cJSON* e = arr->child; e; e = e->next, i++) {
    double d = 0;
    json_number(e, &d);
    if (ptc_dtype_is_float(dtype))
      ref_store_f(&t, (int64_t)i, d);
    else
      ref_store_i(&t, (int64_t)i, (int64_t)d);
  }
  *count = n;
  return t.data;
}

typedef struct stats {
  int cases, passed, failed;
} stats;

static bool close_enough(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  if (isnan(x)) return isnan(y) ? 0 : 1;
  if (isnan(y)) return -1;
  return (x > y) - (x < y);
}

static void sort_last(double* v, size_t numel, int64_t last) {
  if (last <= 1) return;
  for (size_t i = 0; i + (size_t)last <= numel; i += (size_t)last)
    qsort(v + i, (size_t)last, sizeof *v, cmp_double);
}

/* Compares one output; prints the first mismatch. */
static bool compare_output(const char* name, size_t k, const ptc_tensor* got, const cJSON* want,
                           double rtol, double atol, const char* check) {
  int32_t wdt = ptc_dtype_from_name(cJSON_GetObjectItem(want, "dtype")->valuestring);
  int32_t gdt = ptc_dtype_from_dl(got->dtype);
  if (wdt != gdt) {
    printf("FAIL %s: output %zu dtype %s, expected %s\n", name, k, ptc_dtype_name(gdt),
           ptc_dtype_name(wdt));
    return false;
  }
  size_t rank;
  int64_t* shape = json_int_list(cJSON_GetObjectItem(want, "shape"), &rank);
  bool ok = (size_t)got->ndim == rank;
  size_t numel = 1;
  for (size_t d = 0; ok && d < rank; d++) {
    ok = got->shape[d] == shape[d];
    numel *= (size_t)shape[d];
  }
  if (!ok) {
    printf("FAIL %s: output %zu has rank %d shape [", name, k, (int)got->ndim);
    for (int d = 0; d < got->ndim; d++) printf("%s%lld", d ? ", " : "", (long long)got->shape[d]);
    printf("], expected rank %zu shape [", rank);
    for (size_t d = 0; d < rank; d++) printf("%s%lld", d ? ", " : "", (long long)shape[d]);
    printf("]\n");
    free(shape);
    return false;
  }
  if (strcmp(check, "shape") == 0) {
    free(shape);
    return true;
  }
  const cJSON* data = cJSON_GetObjectItem(want, "data");
  double* w = calloc(numel + 1, sizeof *w);
  double* g = calloc(numel + 1, sizeof *g);
  ref_tensor t;
  memset(&t, 0, sizeof t);
  t.data = got->data;
  t.dtype = gdt;
  size_t i = 0;
  for (const cJSON* e = data->child; e && i < numel; e = e->next, i++) {
    json_number(e, &w[i]);
    g[i] = ptc_dtype_is_float(gdt) ? ref_load_f(&t, (int64_t)i) : (double)ref_load_i(&t, (int64_t)i);
  }
  if (strcmp(check, "sorted_last") == 0 && rank > 0) {
    sort_last(w, numel, shape[rank - 1]);
    sort_last(g, numel, shape[rank - 1]);
  }
  for (i = 0; i < numel; i++)
    if (!close_enough(g[i], w[i], rtol, atol)) {
      printf("FAIL %s: output %zu element %zu = %.9g, expected %.9g (rtol %g, atol %g)\n", name, k,
             i, g[i], w[i], rtol, atol);
      ok = false;
      break;
    }
  free(w);
  free(g);
  free(shape);
  return ok;
}

typedef struct input_buf {
  void* data;
  int64_t* shape;
  int64_t* strides;
  size_t rank;
} input_buf;

static bool run_case(ptc_context* ctx, const cJSON* c, bool verbose) {
  const char* name = cJSON_GetObjectItem(c, "name")->valuestring;
  const char* op = cJSON_GetObjectItem(c, "op")->valuestring;
  const cJSON* jin = cJSON_GetObjectItem(c, "inputs");
  const cJSON* jout = cJSON_GetObjectItem(c, "outputs");
  const cJSON* jattrs = cJSON_GetObjectItem(c, "attrs");
  const cJSON* jerr = cJSON_GetObjectItem(c, "expect_error");
  const cJSON* jcheck = cJSON_GetObjectItem(c, "check");
  const char* check = jcheck && cJSON_IsString(jcheck) ? jcheck->valuestring : "values";
  double rtol = cJSON_GetObjectItem(c, "rtol") ? cJSON_GetObjectItem(c, "rtol")->valuedouble : 0;
  double atol = cJSON_GetObjectItem(c, "atol") ? cJSON_GetObjectItem(c, "atol")->valuedouble : 0;
  size_t n_in = (size_t)cJSON_GetArraySize(jin);
  size_t n_attr = (size_t)cJSON_GetArraySize(jattrs);
  bool ok = false;
  ptc_graph* g = NULL;
  ptc_executable* exe = NULL;
  ptc_results* res = NULL;
  ptc_status s = ptc_graph_create(ctx, &g);
  input_buf* bufs = calloc(n_in + 1, sizeof *bufs);
  ptc_value* ids = calloc(n_in + 1, sizeof *ids);
  ptc_tensor* tens = calloc(n_in + 1, sizeof *tens);
  ptc_attr* attrs = calloc(n_attr + 1, sizeof *attrs);
  ptc_arena scratch;
  ptc_arena_init(&scratch, 0);
  size_t k = 0, n_t = 0;
  for (const cJSON* e = jin->child; !s && e; e = e->next, k++) {
    if (cJSON_IsNull(e)) {
      ids[k] = PTC_VALUE_NONE;
      continue;
    }
    int32_t dt = ptc_dtype_from_name(cJSON_GetObjectItem(e, "dtype")->valuestring);
    input_buf* b = &bufs[k];
    b->shape = json_int_list(cJSON_GetObjectItem(e, "shape"), &b->rank);
    size_t rs;
    b->strides = json_int_list(cJSON_GetObjectItem(e, "strides"), &rs);
    size_t cnt;
    b->data = fill_buffer(dt, cJSON_GetObjectItem(e, "storage"), &cnt);
    ptc_dim dims[PTC_MAX_RANK];
    for (size_t d = 0; d < b->rank && d < PTC_MAX_RANK; d++) dims[d] = (ptc_dim){b->shape[d], 0, 0};
    s = ptc_graph_add_input(g, NULL, dt, dims, b->rank, b->strides, &ids[k]);
    ptc_tensor* t = &tens[n_t++];
    t->data = b->data;
    t->device.device_type = PTC_DEVICE_CPU;
    t->ndim = (int32_t)b->rank;
    t->dtype = ptc_dtype_to_dl(dt);
    t->shape = b->shape;
    t->strides = b->strides;
  }
  k = 0;
  for (const cJSON* a = jattrs ? jattrs->child : NULL; !s && a; a = a->next)
    s = json_attr_parse(g, a, &scratch, &attrs[k++]);
  ptc_value outs[64];
  size_t n_out = 0;
  if (!s) s = ptc_graph_add_node(g, op, ids, n_in, attrs, k, outs, 64, &n_out);
  if (jerr) {
    ok = s && strstr(ptc_status_message(s), jerr->valuestring);
    if (!ok)
      printf("FAIL %s: expected an error containing '%s', got '%s'\n", name, jerr->valuestring,
             s ? ptc_status_message(s) : "success");
    goto done;
  }
  for (size_t o = 0; !s && o < n_out; o++) s = ptc_graph_add_output(g, outs[o]);
  if (!s) s = ptc_compile(ctx, g, NULL, &exe);
  if (!s) s = ptc_executable_run_alloc(exe, tens, n_t, NULL, &res);
  if (s) {
    printf("FAIL %s: %s: %s\n", name, ptc_code_name(ptc_status_code(s)), ptc_status_message(s));
    goto done;
  }
  if ((size_t)cJSON_GetArraySize(jout) != n_out) {
    printf("FAIL %s: %zu outputs, expected %d\n", name, n_out, cJSON_GetArraySize(jout));
    goto done;
  }
  ok = true;
  k = 0;
  for (const cJSON* w = jout->child; w; w = w->next, k++)
    ok &= compare_output(name, k, ptc_results_get(res, k), w, rtol, atol, check);
  if (ok && verbose) printf("ok   %s\n", name);
done:
  ptc_status_destroy(s);
  ptc_results_destroy(res);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
  for (size_t i = 0; i < n_in; i++) {
    free(bufs[i].data);
    free(bufs[i].shape);
    free(bufs[i].strides);
  }
  free(bufs);
  free(ids);
  free(tens);
  free(attrs);
  ptc_arena_free(&scratch);
  return ok;
}

static cJSON* load_cases(const char* path) {
  size_t len = 0;
  char* text = read_file(path, &len);
  if (!text) {
    printf("FAIL cannot read %s (run /usr/bin/python3 tests/gen_cases.py)\n", path);
    return NULL;
  }
  cJSON* root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!root) printf("FAIL %s: malformed JSON\n", path);
  return root;
}

static int coverage(int argc, char** argv) {
  size_t n_ops = ptc_op_count();
  bool* seen = calloc(n_ops + 1, 1);
  for (int i = 2; i < argc; i++) {
    cJSON* root = load_cases(argv[i]);
    if (!root) continue;
    for (const cJSON* c = cJSON_GetObjectItem(root, "cases")->child; c; c = c->next) {
      const char* op = cJSON_GetObjectItem(c, "op")->valuestring;
      for (size_t k = 0; k < n_ops; k++)
        if (strcmp(ptc_op_name(k), op) == 0 && !cJSON_GetObjectItem(c, "expect_error"))
          seen[k] = true;
    }
    cJSON_Delete(root);
  }
  size_t missing = 0;
  for (size_t k = 0; k < n_ops; k++)
    if (!seen[k]) {
      printf("FAIL op '%s' has no test case against PyTorch\n", ptc_op_name(k));
      missing++;
    }
  printf("coverage: %zu ops registered, %zu with cases, %zu without\n", n_ops, n_ops - missing,
         missing);
  free(seen);
  return missing ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc >= 2 && strcmp(argv[1], "--coverage") == 0) return coverage(argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE.json [-k SUBSTRING] [-v]\n", argv[0]);
    return 2;
  }
  const char* filter = NULL;
  bool verbose = false;
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) filter = argv[++i];
    if (strcmp(argv[i], "-v") == 0) verbose = true;
  }
  cJSON* root = load_cases(argv[1]);
  if (!root) return 1;
  ptc_context* ctx = NULL;
  ptc_status s = ptc_context_create(NULL, &ctx);
  if (s) return 1;
  stats st = {0, 0, 0};
  const cJSON* cases = cJSON_GetObjectItem(root, "cases");
  for (const cJSON* c = cases ? cases->child : NULL; c; c = c->next) {
    const char* name = cJSON_GetObjectItem(c, "name")->valuestring;
    if (filter && !strstr(name, filter)) continue;
    st.cases++;
    if (run_case(ctx, c, verbose))
      st.passed++;
    else
      st.failed++;
  }
  printf("%s: %d cases, %d passed, %d failed\n", argv[1], st.cases, st.passed, st.failed);
  cJSON_Delete(root);
  ptc_context_release(ctx);
  return st.failed || st.cases == 0 ? 1 : 0;
}
