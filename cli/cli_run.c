/* cli_run.c - the commands of the `ptc` tool (info, print, run, check).
 *
 * Uses only the public API. Also holds what the tool needs around it:
 * option parsing, host tensors with dtype conversion (including f16/bf16),
 * seeded random inputs, a small JSON reader for --inputs files, output
 * checksums and the two-backend comparison.
 */
#include <ptc/ptc.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { EXIT_MISMATCH = 1, EXIT_ERROR = 2 };

static int fail_status(ptc_status s) {
  fprintf(stderr, "ptc: error: %s (%s)\n", ptc_status_message(s),
          ptc_code_name(ptc_status_code(s)));
  ptc_status_destroy(s);
  return EXIT_ERROR;
}

static int fail_msg(const char* what, const char* detail) {
  fprintf(stderr, "ptc: error: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return EXIT_ERROR;
}

/* ---- options ------------------------------------------------------------------- */
typedef struct cli_opts {
  const char* graph;
  const char* backend;
  const char* against;
  const char* inputs;
  uint64_t seed;
  double rtol, atol;
} cli_opts;

enum { OPT_BACKEND = 1, OPT_AGAINST = 2, OPT_SEED = 4, OPT_INPUTS = 8, OPT_TOL = 16 };

static bool parse_u64(const char* s, uint64_t* out) {
  if (!s || !*s || *s == '-') return false;
  errno = 0;
  char* end;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end) return false;
  *out = v;
  return true;
}

static bool parse_double(const char* s, double* out) {
  if (!s || !*s) return false;
  errno = 0;
  char* end;
  double v = strtod(s, &end);
  if (errno || *end || !(v >= 0)) return false;
  *out = v;
  return true;
}

/* Applies option `key` = `val`; 0 on success, else prints and returns 2. */
static int set_opt(cli_opts* o, unsigned allowed, const char* key, const char* val) {
  static const struct {
    const char* name;
    unsigned bit;
  } known[] = {{"backend", OPT_BACKEND}, {"against", OPT_AGAINST},
                            {"seed", OPT_SEED},       {"inputs", OPT_INPUTS},
                            {"rtol", OPT_TOL},        {"atol", OPT_TOL}};
  unsigned bit = 0;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(key, known[i].name)) bit = known[i].bit;
  if (!(bit & allowed)) {
    fprintf(stderr, "ptc: error: unknown option --%s (see 'ptc help')\n", key);
    return EXIT_ERROR;
  }
  if (!val) {
    fprintf(stderr, "ptc: error: option --%s needs a value\n", key);
    return EXIT_ERROR;
  }
  bool ok = true;
  if (bit == OPT_BACKEND) o->backend = val;
  if (bit == OPT_AGAINST) o->against = val;
  if (bit == OPT_INPUTS) o->inputs = val;
  if (bit == OPT_SEED) ok = parse_u64(val, &o->seed);
  if (bit == OPT_TOL) ok = parse_double(val, key[0] == 'r' ? &o->rtol : &o->atol);
  if (!ok) {
    fprintf(stderr, "ptc: error: bad value '%s' for --%s\n", val, key);
    return EXIT_ERROR;
  }
  return 0;
}

/* argv[0] is the command; one positional argument (the graph). */
static int parse_args(int argc, char** argv, unsigned allowed, cli_opts* o) {
  memset(o, 0, sizeof *o);
  o->backend = "ref";
  o->rtol = 1e-5;
  o->atol = 1e-8;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (strncmp(a, "--", 2) != 0) {
      if (o->graph) {
        fprintf(stderr, "ptc: error: unexpected argument '%s'\n", a);
        return EXIT_ERROR;
      }
      o->graph = a;
      continue;
    }
    char key[32];
    const char* eq = strchr(a + 2, '=');
    size_t klen = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
    if (klen >= sizeof key) klen = sizeof key - 1;
    memcpy(key, a + 2, klen);
    key[klen] = 0;
    const char* val = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
    int rc = set_opt(o, allowed, key, val);
    if (rc) return rc;
  }
  if (!o->graph) {
    fprintf(stderr, "ptc: error: '%s' needs a graph file (see 'ptc help')\n", argv[0]);
    return EXIT_ERROR;
  }
  return 0;
}

/* ---- dtype conversion --------------------------------------------------------------- */
static float f16_to_f32(uint16_t h) {
  unsigned e = (h >> 10) & 0x1f, m = h & 0x3ff;
  float r = e == 0 ? ldexpf((float)m, -24)
                   : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m | 0x400), (int)e - 25);
  return (h & 0x8000) ? -r : r;
}

static uint16_t f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return sign | 0x7e00;   /* nan */
  if (ax >= 0x477ff000u) return sign | 0x7c00;  /* rounds to inf */
  if (ax < 0x38800000u) {                        /* subnormal: multiples of 2^-24 */
    float a;
    memcpy(&a, &ax, sizeof a);
    return sign | (uint16_t)lrintf(a * 16777216.0f);
  }
  ax += 0xc8000fffu + ((ax >> 13) & 1); /* rebias exponent, round to nearest even */
  return sign | (uint16_t)(ax >> 13);
}

static float bf16_to_f32(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

static uint16_t f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static double load_elem(const void* p, int32_t dt, int64_t i) {
  switch (dt) {
    case PTC_F32: return ((const float*)p)[i];
    case PTC_F64: return ((const double*)p)[i];
    case PTC_F16: return f16_to_f32(((const uint16_t*)p)[i]);
    case PTC_BF16: return bf16_to_f32(((const uint16_t*)p)[i]);
    case PTC_I8: return ((const int8_t*)p)[i];
    case PTC_I16: return ((const int16_t*)p)[i];
    case PTC_I32: return ((const int32_t*)p)[i];
    case PTC_I64: return (double)((const int64_t*)p)[i];
    case PTC_U8: return ((const uint8_t*)p)[i];
    case PTC_BOOL: return ((const uint8_t*)p)[i] != 0;
    default: return 0;
  }
}

static int64_t to_int(double v) {
  if (!(v == v)) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return (int64_t)v;
}

static void store_elem(void* p, int32_t dt, int64_t i, double v) {
  switch (dt) {
    case PTC_F32: ((float*)p)[i] = (float)v; break;
    case PTC_F64: ((double*)p)[i] = v; break;
    case PTC_F16: ((uint16_t*)p)[i] = f32_to_f16((float)v); break;
    case PTC_BF16: ((uint16_t*)p)[i] = f32_to_bf16((float)v); break;
    case PTC_I8: ((int8_t*)p)[i] = (int8_t)to_int(v); break;
    case PTC_I16: ((int16_t*)p)[i] = (int16_t)to_int(v); break;
    case PTC_I32: ((int32_t*)p)[i] = (int32_t)to_int(v); break;
    case PTC_I64: ((int64_t*)p)[i] = to_int(v); break;
    case PTC_U8: ((uint8_t*)p)[i] = (uint8_t)to_int(v); break;
    case PTC_BOOL: ((uint8_t*)p)[i] = v != 0; break;
    default: break;
  }
}

static bool is_float_dtype(int32_t dt) {
  return dt == PTC_F32 || dt == PTC_F64 || dt == PTC_F16 || dt == PTC_BF16;
}

/* ---- host tensors -------------------------------------------------------------------- */
typedef struct host_tensor {
  ptc_tensor t;
  int32_t dtype;
  int64_t shape[PTC_MAX_RANK];
  int64_t strides[PTC_MAX_RANK];
  int64_t extent; /* elements of storage */
} host_tensor;

/* Allocates storage for dtype/shape/strides (strides NULL = contiguous). */
static bool host_alloc(host_tensor* h, int32_t dtype, int rank, const int64_t* shape,
                       const int64_t* strides) {
  memset(h, 0, sizeof *h);
  h->dtype = dtype;
  int64_t extent = 1;
  bool empty = false;
  for (int d = 0; d < rank; d++) {
    h->shape[d] = shape[d];
    empty |= shape[d] == 0;
    if (strides) {
      h->strides[d] = strides[d];
      if (shape[d] > 0 && strides[d] > 0) extent += (shape[d] - 1) * strides[d];
    } else {
      extent *= shape[d];
    }
    if (extent < 0 || extent > ((int64_t)1 << 40)) return false;
  }
  h->extent = empty ? 0 : extent;
  size_t bytes = (size_t)h->extent * ptc_dtype_size(dtype);
  h->t.data = calloc(bytes ? bytes : 1, 1);
  if (!h->t.data) return false;
  h->t.device.device_type = PTC_DEVICE_CPU;
  h->t.ndim = rank;
  h->t.dtype = ptc_dtype_to_dl(dtype);
  h->t.shape = h->shape;
  h->t.strides = strides ? h->strides : NULL;
  return true;
}

static void host_free(host_tensor* h, size_t n) {
  for (size_t i = 0; h && i < n; i++) free(h[i].t.data);
  free(h);
}

/* splitmix64 */
static uint64_t rng_next(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static void fill_random(host_tensor* h, uint64_t* rng) {
  for (int64_t i = 0; i < h->extent; i++) {
    uint64_t r = rng_next(rng);
    double v;
    if (h->dtype == PTC_BOOL)
      v = (double)(r & 1);
    else if (is_float_dtype(h->dtype))
      v = (double)(r >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0;
    else
      v = (double)(r % 10);
    store_elem(h->t.data, h->dtype, i, v);
  }
}

/* Random inputs shaped like the graph's inputs (symbolic sizes: hints). */
static int random_inputs(const ptc_graph* g, uint64_t seed, host_tensor** out, size_t* n) {
  size_t k = ptc_graph_num_inputs(g);
  host_tensor* hs = calloc(k + 1, sizeof *hs);
  if (!hs) return fail_msg("out of memory", NULL);
  uint64_t rng = seed;
  for (size_t i = 0; i < k; i++) {
    ptc_value_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ptc_status s = ptc_graph_value_info(g, ptc_graph_input(g, i), &info);
    if (s) {
      host_free(hs, i);
      return fail_status(s);
    }
    int64_t shape[PTC_MAX_RANK], strides[PTC_MAX_RANK];
    bool static_strides = true;
    for (uint32_t d = 0; d < info.rank && d < PTC_MAX_RANK; d++) {
      shape[d] = info.shape[d].value;
      strides[d] = info.strides[d].value;
      static_strides &= info.strides[d].sym == 0;
      if (info.shape[d].sym && shape[d] < 0) {
        char sym[128];
        ptc_graph_sym_format(g, info.shape[d].sym, sym, sizeof sym);
        fprintf(stderr, "ptc: error: input %zu (%s) dim %u: size %s has no hint; give the "
                "inputs with --inputs FILE\n", i, info.name, d, sym);
        host_free(hs, i);
        return EXIT_ERROR;
      }
    }
    if (!host_alloc(&hs[i], info.dtype, (int)info.rank, shape, static_strides ? strides : NULL)) {
      host_free(hs, i + 1);
      return fail_msg("out of memory for the inputs", NULL);
    }
    fill_random(&hs[i], &rng);
  }
  *out = hs;
  *n = k;
  return 0;
}

/* ---- a small JSON reader (for --inputs files) ------------------------------------------- */
enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct jval {
  int kind;
  double num;      /* J_NUM, J_BOOL */
  char* str;       /* J_STR */
  size_t n, cap;   /* J_ARR, J_OBJ */
  struct jval* items;
  char** keys;     /* J_OBJ */
} jval;

typedef struct jparser {
  const char* p;
  const char* end;
  const char* err;
  int depth;
} jparser;

static void jfree(jval* v) {
  for (size_t i = 0; i < v->n; i++) {
    jfree(&v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->str);
  memset(v, 0, sizeof *v);
}

static void jskip(jparser* P) {
  while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' || *P->p == '\r'))
    P->p++;
}

static bool jfail(jparser* P, const char* msg) {
  if (!P->err) P->err = msg;
  return false;
}

static bool jliteral(jparser* P, const char* word) {
  size_t n = strlen(word);
  if ((size_t)(P->end - P->p) < n || memcmp(P->p, word, n) != 0) return jfail(P, "bad literal");
  P->p += n;
  return true;
}

static bool jstring(jparser* P, char** out) {
  P->p++; /* opening quote */
  size_t cap = 16, len = 0;
  char* s = malloc(cap);
  if (!s) return jfail(P, "out of memory");
  while (P->p < P->end && *P->p != '"') {
    char c = *P->p++;
    if (c == '\\') {
      if (P->p >= P->end) break;
      char e = *P->p++;
      const char* from = "\"\\/bfnrt";
      const char* to = "\"\\/\b\f\n\r\t";
      const char* hit = strchr(from, e);
      if (e == 'u') {
        c = '?'; /* non-ASCII escapes are not needed here */
        P->p += (P->end - P->p >= 4) ? 4 : P->end - P->p;
      } else if (hit && e) {
        c = to[hit - from];
      } else {
        free(s);
        return jfail(P, "bad escape in string");
      }
    }
    if (len + 2 > cap) {
      char* t = realloc(s, cap *= 2);
      if (!t) {
        free(s);
        return jfail(P, "out of memory");
      }
      s = t;
    }
    s[len++] = c;
  }
  if (P->p >= P->end) {
    free(s);
    return jfail(P, "unterminated string");
  }
  P->p++;
  s[len] = 0;
  *out = s;
  return true;
}

static bool jvalue(jparser* P, jval* v);

/* Appends a member (taking ownership of key) and parses its value. */
static bool jpush(jparser* P, jval* v, char* key) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? v->cap * 2 : 4;
    jval* it = realloc(v->items, cap * sizeof *it);
    if (it) v->items = it;
    char** k = it && v->kind == J_OBJ ? realloc(v->keys, cap * sizeof *k) : NULL;
    if (k) v->keys = k;
    if (!it || (v->kind == J_OBJ && !k)) {
      free(key);
      return jfail(P, "out of memory");
    }
    v->cap = cap;
  }
  memset(&v->items[v->n], 0, sizeof v->items[v->n]);
  if (v->kind == J_OBJ) v->keys[v->n] = key;
  v->n++;
  return jvalue(P, &v->items[v->n - 1]);
}

static bool jcontainer(jparser* P, jval* v, bool obj) {
  if (++P->depth > 32) return jfail(P, "nesting too deep");
  v->kind = obj ? J_OBJ : J_ARR;
  P->p++;
  jskip(P);
  if (P->p < P->end && *P->p == (obj ? '}' : ']')) {
    P->p++;
    P->depth--;
    return true;
  }
  for (;;) {
    char* key = NULL;
    jskip(P);
    if (obj) {
      if (P->p >= P->end || *P->p != '"' || !jstring(P, &key)) return jfail(P, "expected a key");
      jskip(P);
      if (P->p >= P->end || *P->p != ':') {
        free(key);
        return jfail(P, "expected ':'");
      }
      P->p++;
    }
    if (!jpush(P, v, key)) return false;
    jskip(P);
    if (P->p < P->end && *P->p == ',') {
      P->p++;
      continue;
    }
    if (P->p < P->end && *P->p == (obj ? '}' : ']')) {
      P->p++;
      P->depth--;
      return true;
    }
    return jfail(P, obj ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static bool jvalue(jparser* P, jval* v) {
  jskip(P);
  if (P->p >= P->end) return jfail(P, "unexpected end of input");
  char c = *P->p;
  if (c == '{' || c == '[') return jcontainer(P, v, c == '{');
  if (c == '"') {
    v->kind = J_STR;
    return jstring(P, &v->str);
  }
  if (c == 't' || c == 'f') {
    v->kind = J_BOOL;
    v->num = c == 't';
    return jliteral(P, c == 't' ? "true" : "false");
  }
  if (c == 'n') {
    v->kind = J_NULL;
    return jliteral(P, "null");
  }
  const char* q = P->p + (c == '-');
  if (q >= P->end || *q < '0' || *q > '9') return jfail(P, "unexpected character");
  char* end;
  v->kind = J_NUM;
  v->num = strtod(P->p, &end); /* the buffer is NUL-terminated */
  if (end == P->p || end > P->end) return jfail(P, "bad number");
  P->p = end;
  return true;
}

static const jval* jget(const jval* obj, const char* key) {
  for (size_t i = 0; obj->kind == J_OBJ && i < obj->n; i++)
    if (!strcmp(obj->keys[i], key)) return &obj->items[i];
  return NULL;
}

static bool jnumber(const jval* v, double* out) {
  if (v->kind == J_NUM || v->kind == J_BOOL) {
    *out = v->num;
    return true;
  }
  if (v->kind != J_STR) return false;
  if (!strcmp(v->str, "nan")) *out = NAN;
  else if (!strcmp(v->str, "inf")) *out = INFINITY;
  else if (!strcmp(v->str, "-inf")) *out = -INFINITY;
  else return false;
  return true;
}

static char* read_text(const char* path, size_t* len) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char* buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n - 1, f);
    if (n < cap - 1) break;
    char* b = realloc(buf, cap *= 2);
    if (!b) free(buf);
    buf = b;
  }
  bool bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  *len = n;
  return buf;
}

/* One {"dtype", "shape", "data"} entry of an inputs file. */
static int file_tensor(const char* path, size_t i, const jval* e, host_tensor* h) {
  const jval *dt = jget(e, "dtype"), *sh = jget(e, "shape"), *data = jget(e, "data");
  int32_t dtype = dt && dt->kind == J_STR ? ptc_dtype_from_name(dt->str) : -1;
  if (dtype < 0 || !sh || sh->kind != J_ARR || sh->n > PTC_MAX_RANK || !data ||
      data->kind != J_ARR) {
    fprintf(stderr, "ptc: error: %s: inputs[%zu]: expected {\"dtype\": name, \"shape\": [sizes], "
            "\"data\": [numbers]} with a known dtype and rank <= %d\n", path, i, PTC_MAX_RANK);
    return EXIT_ERROR;
  }
  int64_t shape[PTC_MAX_RANK];
  for (size_t d = 0; d < sh->n; d++) {
    double x = -1;
    if (!jnumber(&sh->items[d], &x) || !(x >= 0 && x < 1e12) || x != floor(x)) {
      fprintf(stderr, "ptc: error: %s: inputs[%zu].shape[%zu]: expected a size\n", path, i, d);
      return EXIT_ERROR;
    }
    shape[d] = (int64_t)x;
  }
  if (!host_alloc(h, dtype, (int)sh->n, shape, NULL)) return fail_msg("out of memory", NULL);
  if ((int64_t)data->n != h->extent) {
    fprintf(stderr, "ptc: error: %s: inputs[%zu].data: expected %" PRId64 " numbers, got %zu\n",
            path, i, h->extent, data->n);
    return EXIT_ERROR;
  }
  for (size_t k = 0; k < data->n; k++) {
    double x;
    if (!jnumber(&data->items[k], &x)) {
      fprintf(stderr, "ptc: error: %s: inputs[%zu].data[%zu]: expected a number\n", path, i, k);
      return EXIT_ERROR;
    }
    store_elem(h->t.data, dtype, (int64_t)k, x);
  }
  return 0;
}

static int file_inputs(const char* path, host_tensor** out, size_t* n) {
  size_t len = 0;
  char* text = read_text(path, &len);
  if (!text) return fail_msg("cannot read the inputs file", path);
  jparser P = {text, text + len, NULL, 0};
  jval root;
  memset(&root, 0, sizeof root);
  bool ok = jvalue(&P, &root);
  jskip(&P);
  if (ok && P.p != P.end) ok = jfail(&P, "unexpected text after the value");
  if (!ok) {
    fprintf(stderr, "ptc: error: %s: malformed JSON at byte %zu: %s\n", path,
            (size_t)(P.p - text), P.err ? P.err : "?");
    jfree(&root);
    free(text);
    return EXIT_ERROR;
  }
  const jval* list = jget(&root, "inputs");
  int rc = 0;
  host_tensor* hs = NULL;
  if (!list || list->kind != J_ARR) {
    fprintf(stderr, "ptc: error: %s: expected {\"inputs\": [...]}\n", path);
    rc = EXIT_ERROR;
  } else if (!(hs = calloc(list->n + 1, sizeof *hs))) {
    rc = fail_msg("out of memory", NULL);
  }
  size_t k = 0;
  for (; !rc && k < list->n; k++) rc = file_tensor(path, k, &list->items[k], &hs[k]);
  if (rc) {
    host_free(hs, k);
  } else {
    *out = hs;
    *n = list->n;
  }
  jfree(&root);
  free(text);
  return rc;
}

/* ---- running ---------------------------------------------------------------------------- */
static int run_backend(ptc_context* ctx, const ptc_graph* g, const char* backend,
                       const host_tensor* in, size_t n_in, uint64_t seed, ptc_results** out) {
  ptc_compile_options co;
  ptc_compile_options_init(&co);
  co.backend = backend;
  ptc_executable* exe = NULL;
  ptc_status s = ptc_compile(ctx, g, &co, &exe);
  if (s) return fail_status(s);
  ptc_tensor* ts = calloc(n_in + 1, sizeof *ts);
  if (!ts) {
    ptc_executable_release(exe);
    return fail_msg("out of memory", NULL);
  }
  for (size_t i = 0; i < n_in; i++) ts[i] = in[i].t;
  ptc_run_options ro;
  ptc_run_options_init(&ro);
  ro.seed = seed;
  s = ptc_executable_run_alloc(exe, ts, n_in, &ro, out);
  free(ts);
  ptc_executable_release(exe);
  if (s) return fail_status(s);
  return 0;
}

static int64_t tensor_numel(const ptc_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* Element k (row-major order) of t as a double. */
static double tensor_at(const ptc_tensor* t, int64_t k) {
  int64_t off = 0;
  if (t->strides) {
    for (int32_t d = t->ndim; d-- > 0;) {
      int64_t idx = t->shape[d] ? k % t->shape[d] : 0;
      k = t->shape[d] ? k / t->shape[d] : 0;
      off += idx * t->strides[d];
    }
  } else {
    off = k;
  }
  const char* base = (const char*)t->data + t->byte_offset;
  return load_elem(base, ptc_dtype_from_dl(t->dtype), off);
}

static void print_tensor_head(size_t i, const ptc_tensor* t) {
  printf("output %zu: %s [", i, ptc_dtype_name(ptc_dtype_from_dl(t->dtype)));
  for (int32_t d = 0; d < t->ndim; d++) printf("%s%" PRId64, d ? ", " : "", t->shape[d]);
  printf("]");
}

typedef struct loaded {
  ptc_context* ctx;
  ptc_graph* g;
  host_tensor* in;
  size_t n_in;
} loaded;

/* Frees what L holds and clears it, so calling it twice is harmless. */
static void loaded_free(loaded* L) {
  host_free(L->in, L->n_in);
  ptc_graph_destroy(L->g);
  ptc_context_release(L->ctx);
  memset(L, 0, sizeof *L);
}

static int load_graph(const char* path, loaded* L) {
  memset(L, 0, sizeof *L);
  ptc_status s = ptc_context_create(NULL, &L->ctx);
  if (!s) s = ptc_graph_load(L->ctx, path, NULL, &L->g);
  if (s) {
    loaded_free(L);
    return fail_status(s);
  }
  return 0;
}

static int load_with_inputs(const cli_opts* o, loaded* L) {
  int rc = load_graph(o->graph, L);
  if (!rc)
    rc = o->inputs ? file_inputs(o->inputs, &L->in, &L->n_in)
                   : random_inputs(L->g, o->seed, &L->in, &L->n_in);
  if (rc) loaded_free(L);
  return rc;
}

/* ---- commands ------------------------------------------------------------------------------ */
int cli_info(int argc, char** argv) {
  (void)argv;
  if (argc > 1) return fail_msg("'info' takes no arguments", NULL);
  printf("ptc %s (library %s)\n", PTC_VERSION_STRING, ptc_version_string());
  printf("ops: %zu\n", ptc_op_count());
  printf("backends:\n");
  for (size_t i = 0; i < ptc_backend_count(); i++) {
    const char* name = ptc_backend_name(i);
    const char* why = NULL;
    if (ptc_backend_available(name, &why))
      printf("  %s: available\n", name);
    else
      printf("  %s: unavailable (%s)\n", name, why ? why : "no reason given");
  }
  return 0;
}

int cli_print(int argc, char** argv) {
  cli_opts o;
  int rc = parse_args(argc, argv, 0, &o);
  if (rc) return rc;
  loaded L;
  if ((rc = load_graph(o.graph, &L))) return rc;
  ptc_status s = ptc_graph_print(L.g, stdout);
  loaded_free(&L);
  return s ? fail_status(s) : 0;
}

int cli_run(int argc, char** argv) {
  cli_opts o;
  int rc = parse_args(argc, argv, OPT_BACKEND | OPT_SEED | OPT_INPUTS, &o);
  if (rc) return rc;
  loaded L;
  if ((rc = load_with_inputs(&o, &L))) return rc;
  ptc_results* res = NULL;
  rc = run_backend(L.ctx, L.g, o.backend, L.in, L.n_in, o.seed, &res);
  for (size_t i = 0; !rc && i < ptc_results_count(res); i++) {
    const ptc_tensor* t = ptc_results_get(res, i);
    double sum = 0, abs_sum = 0;
    for (int64_t k = 0, n = tensor_numel(t); k < n; k++) {
      double v = tensor_at(t, k);
      sum += v;
      abs_sum += fabs(v);
    }
    print_tensor_head(i, t);
    printf(" sum=%.10g abs_sum=%.10g\n", isnan(sum) ? NAN : sum, isnan(abs_sum) ? NAN : abs_sum);
  }
  ptc_results_destroy(res);
  loaded_free(&L);
  return rc;
}

typedef struct diff {
  double max_abs, max_rel;
  int64_t bad;
} diff;

static diff compare(const ptc_tensor* a, const ptc_tensor* b, double rtol, double atol) {
  diff r = {0, 0, 0};
  for (int64_t k = 0, n = tensor_numel(a); k < n; k++) {
    double x = tensor_at(a, k), y = tensor_at(b, k);
    if ((isnan(x) && isnan(y)) || x == y) continue;
    double e = fabs(x - y);
    double rel = y != 0 ? e / fabs(y) : INFINITY;
    if (isnan(e)) e = rel = INFINITY;
    if (e > r.max_abs) r.max_abs = e;
    if (rel > r.max_rel) r.max_rel = rel;
    if (!(e <= atol + rtol * fabs(y))) r.bad++;
  }
  return r;
}

static bool same_layout(const ptc_tensor* a, const ptc_tensor* b) {
  if (a->ndim != b->ndim || memcmp(&a->dtype, &b->dtype, sizeof a->dtype) != 0) return false;
  for (int32_t d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

static bool report_outputs(const ptc_results* ra, const ptc_results* rb, const cli_opts* o) {
  bool all_ok = ptc_results_count(ra) == ptc_results_count(rb);
  for (size_t i = 0; all_ok && i < ptc_results_count(ra); i++) {
    const ptc_tensor *a = ptc_results_get(ra, i), *b = ptc_results_get(rb, i);
    print_tensor_head(i, a);
    if (!same_layout(a, b)) {
      printf(" FAIL (%s gives a different dtype or shape)\n", o->against);
      all_ok = false;
      continue;
    }
    diff d = compare(a, b, o->rtol, o->atol);
    printf(" max_abs=%.6g max_rel=%.6g %s", d.max_abs, d.max_rel, d.bad ? "FAIL" : "PASS");
    if (d.bad) printf(" (%" PRId64 " elements out of tolerance)", d.bad);
    printf("\n");
    all_ok &= d.bad == 0;
  }
  return all_ok;
}

int cli_check(int argc, char** argv) {
  cli_opts o;
  int rc = parse_args(argc, argv, OPT_BACKEND | OPT_AGAINST | OPT_SEED | OPT_TOL, &o);
  if (rc) return rc;
  if (!o.against) return fail_msg("'check' needs --against BACKEND", NULL);
  loaded L;
  if ((rc = load_with_inputs(&o, &L))) return rc;
  ptc_results *ra = NULL, *rb = NULL;
  rc = run_backend(L.ctx, L.g, o.backend, L.in, L.n_in, o.seed, &ra);
  if (!rc) rc = run_backend(L.ctx, L.g, o.against, L.in, L.n_in, o.seed, &rb);
  if (!rc) {
    bool ok = report_outputs(ra, rb, &o);
    printf("%s: %s vs %s (rtol %g, atol %g)\n", ok ? "PASS" : "FAIL", o.backend, o.against,
           o.rtol, o.atol);
    rc = ok ? 0 : EXIT_MISMATCH;
  }
  ptc_results_destroy(ra);
  ptc_results_destroy(rb);
  loaded_free(&L);
  return rc;
}
