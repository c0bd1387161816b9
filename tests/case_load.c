/* case_load.c - shared loader of the PyTorch op cases (see case_load.h):
 * JSON file reading, one-node graph construction through the public API,
 * input/output tensor allocation, and tolerance-aware comparison. */
#include "case_load.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ref/ref.h"
#include "lib/graph/json_attr.h"

/* Memory owned by one built case. */
typedef struct case_priv {
  size_t n_blocks, cap;
  void** blocks; /* malloc'ed: data buffers, shapes, strides */
} case_priv;

static void* own(case_priv* p, size_t bytes) {
  if (p->n_blocks == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 16;
    void** nb = realloc(p->blocks, cap * sizeof *nb);
    if (!nb) return NULL;
    p->blocks = nb;
    p->cap = cap;
  }
  void* b = calloc(1, bytes ? bytes : 1);
  if (b) p->blocks[p->n_blocks++] = b;
  return b;
}

static char* read_all(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  char* b = NULL;
  if (fseek(f, 0, SEEK_END) == 0) {
    long n = ftell(f);
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (b = malloc((size_t)n + 1)) != NULL) {
      if (fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
      } else {
        b[n] = 0;
        *len = (size_t)n;
      }
    }
  }
  fclose(f);
  return b;
}

cJSON* case_file_load(const char* path) {
  size_t len = 0;
  char* text = read_all(path, &len);
  if (!text) {
    printf("FAIL cannot read %s (run /usr/bin/python3 tests/gen_cases.py)\n", path);
    return NULL;
  }
  cJSON* root = cJSON_ParseWithLength(text, len);
  free(text);
  if (!root) printf("FAIL %s: malformed JSON\n", path);
  return root;
}

const cJSON* case_first(const cJSON* root) {
  const cJSON* cases = root ? cJSON_GetObjectItem(root, "cases") : NULL;
  return cases ? cases->child : NULL;
}

static const char* str_item(const cJSON* o, const char* key, const char* dflt) {
  const cJSON* v = cJSON_GetObjectItem(o, key);
  return v && cJSON_IsString(v) ? v->valuestring : dflt;
}

static double num_item(const cJSON* o, const char* key) {
  const cJSON* v = cJSON_GetObjectItem(o, key);
  return v && cJSON_IsNumber(v) ? v->valuedouble : 0.0;
}

const char* case_name(const cJSON* c) { return str_item(c, "name", "?"); }

/* JSON int list into owned memory; *n elements. */
static int64_t* int_list(case_priv* p, const cJSON* a, size_t* n) {
  *n = (size_t)cJSON_GetArraySize(a);
  int64_t* v = own(p, (*n + 1) * sizeof *v);
  size_t i = 0;
  for (const cJSON* e = a ? a->child : NULL; v && e; e = e->next) v[i++] = (int64_t)e->valuedouble;
  return v;
}

/* Data buffer of `dtype` filled from a JSON number array. */
static void* fill(case_priv* p, int32_t dtype, const cJSON* arr) {
  size_t n = (size_t)cJSON_GetArraySize(arr);
  ref_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.data = own(p, (n + 1) * 8);
  if (!t.data) return NULL;
  int64_t i = 0;
  for (const cJSON* e = arr ? arr->child : NULL; e; e = e->next, i++) {
    double d = 0;
    json_number(e, &d);
    if (ptc_dtype_is_float(dtype))
      ref_store_f(&t, i, d);
    else
      ref_store_i(&t, i, (int64_t)d);
  }
  return t.data;
}

static ptc_status add_input(op_case* oc, case_priv* p, const cJSON* e, ptc_value* id) {
  int32_t dt = ptc_dtype_from_name(str_item(e, "dtype", "?"));
  if (dt < 0) return PTC_ERR(INVALID_ARGUMENT, "case %s: bad input dtype", oc->name);
  size_t rank, rs;
  int64_t* shape = int_list(p, cJSON_GetObjectItem(e, "shape"), &rank);
  int64_t* strides = int_list(p, cJSON_GetObjectItem(e, "strides"), &rs);
  void* data = fill(p, dt, cJSON_GetObjectItem(e, "storage"));
  if (!shape || !strides || !data) return ptc_status_oom();
  if (rank > PTC_MAX_RANK || rs != rank)
    return PTC_ERR(INVALID_ARGUMENT, "case %s: bad input rank", oc->name);
  ptc_dim dims[PTC_MAX_RANK];
  for (size_t d = 0; d < rank; d++) dims[d] = (ptc_dim){shape[d], 0, 0};
  PTC_TRY(ptc_graph_add_input(oc->graph, NULL, dt, dims, rank, strides, id));
  ptc_tensor* t = &oc->inputs[oc->n_inputs++];
  t->data = data;
  t->device.device_type = PTC_DEVICE_CPU;
  t->ndim = (int32_t)rank;
  t->dtype = ptc_dtype_to_dl(dt);
  t->shape = shape;
  t->strides = strides;
  return PTC_OK;
}

static ptc_status add_output_tensor(op_case* oc, case_priv* p, const cJSON* w, size_t k) {
  int32_t dt = ptc_dtype_from_name(str_item(w, "dtype", "?"));
  if (dt < 0) return PTC_ERR(INVALID_ARGUMENT, "case %s: bad output dtype", oc->name);
  size_t rank;
  int64_t* shape = int_list(p, cJSON_GetObjectItem(w, "shape"), &rank);
  if (!shape) return ptc_status_oom();
  size_t numel = 1;
  for (size_t d = 0; d < rank; d++) numel *= (size_t)shape[d];
  ptc_tensor* t = &oc->outputs[k];
  t->data = own(p, numel * ptc_dtype_size(dt) + 16);
  if (!t->data) return ptc_status_oom();
  t->device.device_type = PTC_DEVICE_CPU;
  t->ndim = (int32_t)rank;
  t->dtype = ptc_dtype_to_dl(dt);
  t->shape = shape;
  t->strides = NULL;
  return PTC_OK;
}

static ptc_status build(ptc_context* ctx, const cJSON* c, op_case* oc, case_priv* p) {
  const cJSON* jin = cJSON_GetObjectItem(c, "inputs");
  const cJSON* jattrs = cJSON_GetObjectItem(c, "attrs");
  size_t n_in = (size_t)cJSON_GetArraySize(jin), n_attr = (size_t)cJSON_GetArraySize(jattrs);
  ptc_value* ids = own(p, (n_in + 1) * sizeof *ids);
  ptc_attr* attrs = own(p, (n_attr + 1) * sizeof *attrs);
  oc->inputs = own(p, (n_in + 1) * sizeof *oc->inputs);
  if (!ids || !attrs || !oc->inputs) return ptc_status_oom();
  PTC_TRY(ptc_graph_create(ctx, &oc->graph));
  size_t k = 0;
  for (const cJSON* e = jin ? jin->child : NULL; e; e = e->next, k++) {
    ids[k] = PTC_VALUE_NONE;
    if (!cJSON_IsNull(e)) PTC_TRY(add_input(oc, p, e, &ids[k]));
  }
  ptc_arena scratch;
  ptc_arena_init(&scratch, 0);
  ptc_status s = PTC_OK;
  size_t na = 0;
  for (const cJSON* a = jattrs ? jattrs->child : NULL; !s && a; a = a->next)
    s = json_attr_parse(oc->graph, a, &scratch, &attrs[na++]);
  ptc_value outs[64];
  size_t n_out = 0;
  if (!s) s = ptc_graph_add_node(oc->graph, oc->op, ids, n_in, attrs, na, outs, 64, &n_out);
  ptc_arena_free(&scratch);
  PTC_TRY(s);
  for (size_t o = 0; o < n_out; o++) PTC_TRY(ptc_graph_add_output(oc->graph, outs[o]));
  oc->expected = cJSON_GetObjectItem(c, "outputs");
  if ((size_t)cJSON_GetArraySize(oc->expected) != n_out)
    return PTC_ERR(INVALID_ARGUMENT, "case %s: %zu outputs, expected %d", oc->name, n_out,
                   cJSON_GetArraySize(oc->expected));
  oc->n_outputs = n_out;
  oc->outputs = own(p, (n_out + 1) * sizeof *oc->outputs);
  if (!oc->outputs) return ptc_status_oom();
  k = 0;
  for (const cJSON* w = oc->expected->child; w; w = w->next, k++)
    PTC_TRY(add_output_tensor(oc, p, w, k));
  return PTC_OK;
}

ptc_status case_build(ptc_context* ctx, const cJSON* c, op_case* out) {
  memset(out, 0, sizeof *out);
  case_priv* p = calloc(1, sizeof *p);
  if (!p) return ptc_status_oom();
  out->priv = p;
  out->name = case_name(c);
  out->op = str_item(c, "op", "?");
  out->check = str_item(c, "check", "values");
  out->rtol = num_item(c, "rtol");
  out->atol = num_item(c, "atol");
  ptc_status s = build(ctx, c, out, p);
  if (s) case_free(out);
  return s;
}

void case_free(op_case* c) {
  case_priv* p = c->priv;
  if (p) {
    for (size_t i = 0; i < p->n_blocks; i++) free(p->blocks[i]);
    free(p->blocks);
    free(p);
  }
  ptc_graph_destroy(c->graph);
  memset(c, 0, sizeof *c);
}

/* ---- comparison ---------------------------------------------------------------- */

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

static void sort_rows(double* v, size_t numel, int64_t row) {
  if (row <= 1) return;
  for (size_t i = 0; i + (size_t)row <= numel; i += (size_t)row)
    qsort(v + i, (size_t)row, sizeof *v, cmp_double);
}

static bool same_shape(const op_case* c, size_t k, const ptc_tensor* got, const cJSON* want,
                       size_t* numel, int64_t* last) {
  const cJSON* sh = cJSON_GetObjectItem(want, "shape");
  size_t rank = (size_t)cJSON_GetArraySize(sh), d = 0;
  bool ok = (size_t)got->ndim == rank;
  *numel = 1;
  *last = 1;
  for (const cJSON* e = sh ? sh->child : NULL; ok && e; e = e->next, d++) {
    ok = got->shape[d] == (int64_t)e->valuedouble;
    *numel *= (size_t)e->valuedouble;
    *last = (int64_t)e->valuedouble;
  }
  if (!ok) printf("FAIL %s: output %zu has the wrong rank or shape\n", c->name, k);
  return ok;
}

bool case_compare(const op_case* c, size_t k, const ptc_tensor* got) {
  const cJSON* want = cJSON_GetArrayItem(c->expected, (int)k);
  if (!want) return false;
  int32_t wdt = ptc_dtype_from_name(str_item(want, "dtype", "?"));
  int32_t gdt = ptc_dtype_from_dl(got->dtype);
  if (wdt != gdt) {
    printf("FAIL %s: output %zu dtype %s, expected %s\n", c->name, k, ptc_dtype_name(gdt),
           ptc_dtype_name(wdt));
    return false;
  }
  size_t numel;
  int64_t last;
  if (!same_shape(c, k, got, want, &numel, &last)) return false;
  if (strcmp(c->check, "shape") == 0) return true;
  double* w = calloc(numel + 1, sizeof *w);
  double* g = calloc(numel + 1, sizeof *g);
  if (!w || !g) {
    free(w);
    free(g);
    printf("FAIL %s: out of memory comparing\n", c->name);
    return false;
  }
  ref_tensor t;
  memset(&t, 0, sizeof t);
  t.data = got->data;
  t.dtype = gdt;
  size_t i = 0;
  for (const cJSON* e = cJSON_GetObjectItem(want, "data")->child; e && i < numel; e = e->next, i++) {
    json_number(e, &w[i]);
    g[i] = ptc_dtype_is_float(gdt) ? ref_load_f(&t, (int64_t)i) : (double)ref_load_i(&t, (int64_t)i);
  }
  if (strcmp(c->check, "sorted_last") == 0 && got->ndim > 0) {
    sort_rows(w, numel, last);
    sort_rows(g, numel, last);
  }
  bool ok = true;
  for (i = 0; i < numel && ok; i++)
    if (!close_enough(g[i], w[i], c->rtol, c->atol)) {
      printf("FAIL %s: output %zu element %zu = %.9g, expected %.9g (rtol %g, atol %g)\n", c->name,
             k, i, g[i], w[i], c->rtol, c->atol);
      ok = false;
    }
  free(w);
  free(g);
  return ok;
}
