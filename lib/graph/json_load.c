/* json_load.c - parses and validates a "ptc-graph" version 1 JSON text
 * (format: see json_save.c) and rebuilds the graph through the public
 * building calls (ptc_graph_add_symbol/add_input/add_constant/add_node/
 * add_output), so a loaded graph is validated exactly like a built one.
 *
 * Validation order: size limit, JSON syntax (cJSON_ParseWithLengthOpts),
 * nesting depth, top-level keys, a pre-scan that records where every value
 * id is defined (duplicates, node-count limit), then symbols, values, nodes
 * and outputs in file order. Errors name the place, e.g.
 * "nodes[3].inputs[1]: unknown value id 17". Weights in the side file are
 * checked by size and sha256 (DATA_LOSS when truncated or corrupt).
 */
#include "json_attr.h"
#include "op.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_EXACT_INT ((int64_t)1 << 53)
#define MAX_NODE_OUTPUTS 64

void ptc_json_load_options_init(ptc_json_load_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
}

/* ---- id map: file value id -> graph value id -------------------------------- */
typedef struct id_slot {
  int64_t key;     /* file id; -1 = empty slot */
  int64_t site;    /* defining node index, or -1 for values[] */
  ptc_value gid;   /* PTC_VALUE_NONE until the definition is loaded */
} id_slot;

typedef struct id_map {
  id_slot* slots;
  size_t cap; /* power of two */
} id_map;

static bool id_map_init(id_map* m, size_t n) {
  size_t cap = 16;
  while (cap < 2 * n + 2) {
    if (cap > SIZE_MAX / 4 / sizeof(id_slot)) return false;
    cap *= 2;
  }
  m->slots = malloc(cap * sizeof *m->slots);
  if (!m->slots) return false;
  m->cap = cap;
  for (size_t i = 0; i < cap; i++) m->slots[i].key = -1;
  return true;
}

static id_slot* id_map_find(const id_map* m, int64_t key, bool* empty) {
  size_t i = (size_t)ptc_hash_mix((uint64_t)key, 0x9e3779b97f4a7c15u) & (m->cap - 1);
  while (m->slots[i].key != -1 && m->slots[i].key != key) i = (i + 1) & (m->cap - 1);
  *empty = m->slots[i].key == -1;
  return &m->slots[i];
}

/* ---- loader state --------------------------------------------------------------- */
typedef struct loader {
  ptc_graph* g;
  ptc_json_load_options o;
  id_map ids;
  ptc_arena scratch; /* attribute arrays */
} loader;

static const cJSON* field(const cJSON* obj, const char* key) {
  return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* Rejects keys outside `allowed` (NULL-terminated) and duplicate keys. */
static ptc_status check_keys(const cJSON* obj, const char* where, const char* const* allowed) {
  for (const cJSON* c = obj->child; c; c = c->next) {
    bool known = false;
    for (const char* const* k = allowed; *k; k++) known |= strcmp(*k, c->string) == 0;
    if (!known) return PTC_ERR(INVALID_ARGUMENT, "%s: unknown key '%s'", where, c->string);
    for (const cJSON* d = obj->child; d != c; d = d->next)
      if (strcmp(d->string, c->string) == 0)
        return PTC_ERR(INVALID_ARGUMENT, "%s: key '%s' appears twice", where, c->string);
  }
  return PTC_OK;
}

static ptc_status need(const cJSON* obj, const char* where, const char* key, const cJSON** out) {
  *out = field(obj, key);
  if (!*out) return PTC_ERR(INVALID_ARGUMENT, "%s: missing \"%s\"", where, key);
  return PTC_OK;
}

/* Integer from a JSON number (exact, within +-2^53) or, when allow_text,
 * a decimal string (used for int64 values beyond 2^53). */
static bool json_to_int(const cJSON* v, bool allow_text, int64_t* out) {
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (!(d >= -(double)JSON_EXACT_INT && d <= (double)JSON_EXACT_INT) || d != (double)(int64_t)d)
      return false;
    *out = (int64_t)d;
    return true;
  }
  if (!allow_text || !cJSON_IsString(v) || !v->valuestring[0]) return false;
  const char* p = v->valuestring;
  for (const char* q = *p == '-' ? p + 1 : p; *q; q++)
    if (*q < '0' || *q > '9' || q - p > 20) return false;
  errno = 0;
  char* end = NULL;
  long long x = strtoll(p, &end, 10);
  if (errno || !end || *end || end == p) return false;
  *out = (int64_t)x;
  return true;
}

static ptc_status get_int(const cJSON* v, const char* where, int64_t lo, int64_t hi,
                          bool allow_text, int64_t* out) {
  int64_t x = 0;
  if (!json_to_int(v, allow_text, &x))
    return PTC_ERR(INVALID_ARGUMENT, "%s: expected an integer", where);
  if (x < lo || x > hi)
    return PTC_ERR(INVALID_ARGUMENT, "%s: %" PRId64 " is out of range [%" PRId64 ", %" PRId64 "]",
                   where, x, lo, hi);
  *out = x;
  return PTC_OK;
}

static ptc_status get_string(const cJSON* v, const char* where, const char** out) {
  if (!cJSON_IsString(v)) return PTC_ERR(INVALID_ARGUMENT, "%s: expected a string", where);
  *out = v->valuestring;
  return PTC_OK;
}

static ptc_status get_array(const cJSON* v, const char* where, size_t max, size_t* n) {
  if (!cJSON_IsArray(v)) return PTC_ERR(INVALID_ARGUMENT, "%s: expected an array", where);
  size_t k = 0;
  for (const cJSON* c = v->child; c; c = c->next) k++;
  if (k > max)
    return PTC_ERR(INVALID_ARGUMENT, "%s: %zu elements, more than the limit of %zu", where, k, max);
  *n = k;
  return PTC_OK;
}

static ptc_status get_object(const cJSON* v, const char* where) {
  if (!cJSON_IsObject(v)) return PTC_ERR(INVALID_ARGUMENT, "%s: expected an object", where);
  return PTC_OK;
}

static ptc_status get_dtype(const cJSON* v, const char* where, int32_t* out) {
  const char* s = NULL;
  PTC_TRY(get_string(v, where, &s));
  int32_t dt = ptc_dtype_from_name(s);
  if (dt < 0) return PTC_ERR(INVALID_ARGUMENT, "%s: unknown dtype '%s'", where, s);
  *out = dt;
  return PTC_OK;
}

/* ---- structure checks ------------------------------------------------------------- */
static bool depth_ok(const cJSON* j, uint32_t depth, uint32_t max) {
  if (depth > max) return false;
  for (const cJSON* c = j->child; c; c = c->next)
    if (c->child && !depth_ok(c, depth + 1, max)) return false;
  return true;
}

static ptc_status syntax_error(const char* json, size_t len, const char* end) {
  size_t pos = end && end >= json && end <= json + len ? (size_t)(end - json) : 0;
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos; i++) {
    if (json[i] == '\n') {
      line++;
      col = 1;
    } else {
      col++;
    }
  }
  return PTC_ERR(INVALID_ARGUMENT, "malformed JSON at line %zu, column %zu (byte %zu)", line, col,
                 pos);
}

static ptc_status parse_json(const loader* L, const char* json, size_t len, cJSON** out) {
  if (len > L->o.max_bytes)
    return PTC_ERR(INVALID_ARGUMENT, "JSON text of %zu bytes exceeds the limit of %" PRIu64
                   " bytes (max_bytes)", len, L->o.max_bytes);
  if (len == 0) return PTC_ERR(INVALID_ARGUMENT, "empty JSON text");
  const char* end = NULL;
  cJSON* root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
  if (!root) return syntax_error(json, len, end);
  for (const char* p = end; p && p < json + len; p++)
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r' && *p != '\0') {
      cJSON_Delete(root);
      return PTC_ERR(INVALID_ARGUMENT, "unexpected text after the JSON value (byte %zu)",
                     (size_t)(p - json));
    }
  if (!depth_ok(root, 1, L->o.max_depth)) {
    cJSON_Delete(root);
    return PTC_ERR(INVALID_ARGUMENT, "JSON nesting depth exceeds the limit of %u (max_depth)",
                   L->o.max_depth);
  }
  *out = root;
  return PTC_OK;
}

static const char* const top_keys[] = {"format", "version", "symbols", "values",
                                       "nodes",  "outputs", NULL};

static ptc_status check_header(const cJSON* root) {
  PTC_TRY(get_object(root, "top level"));
  PTC_TRY(check_keys(root, "top level", top_keys));
  const cJSON* f;
  const char* fs = NULL;
  int64_t ver = 0;
  PTC_TRY(need(root, "top level", "format", &f));
  PTC_TRY(get_string(f, "format", &fs));
  if (strcmp(fs, "ptc-graph") != 0)
    return PTC_ERR(INVALID_ARGUMENT, "format: expected \"ptc-graph\", got \"%s\"", fs);
  PTC_TRY(need(root, "top level", "version", &f));
  PTC_TRY(get_int(f, "version", INT64_MIN, INT64_MAX, false, &ver));
  if (ver != 1)
    return PTC_ERR(INVALID_ARGUMENT, "version: this library reads version 1, the file is "
                   "version %" PRId64, ver);
  static const char* const arrays[] = {"symbols", "values", "nodes", "outputs"};
  for (size_t i = 0; i < 4; i++) {
    const cJSON* a = field(root, arrays[i]);
    size_t n = 0;
    if (a) PTC_TRY(get_array(a, arrays[i], SIZE_MAX, &n));
  }
  return PTC_OK;
}

/* Registers a definition of file id `v` (a values[] entry when site < 0). */
static ptc_status define_id(loader* L, const cJSON* v, const char* where, int64_t site) {
  int64_t id = 0;
  PTC_TRY(get_int(v, where, 0, JSON_EXACT_INT, false, &id));
  bool empty;
  id_slot* s = id_map_find(&L->ids, id, &empty);
  if (!empty) {
    if (s->site < 0)
      return PTC_ERR(INVALID_ARGUMENT, "%s: value id %" PRId64 " is already defined in values[]",
                     where, id);
    return PTC_ERR(INVALID_ARGUMENT, "%s: value id %" PRId64 " is already defined by nodes[%" PRId64
                   "]", where, id, s->site);
  }
  s->key = id;
  s->site = site;
  s->gid = PTC_VALUE_NONE;
  return PTC_OK;
}

/* Pre-scan: counts, limits, and where each id is defined. */
static ptc_status prescan(loader* L, const cJSON* values, const cJSON* nodes) {
  size_t n_nodes = 0, n_ids = 0, n;
  char where[96];
  for (const cJSON* v = values ? values->child : NULL; v; v = v->next) n_ids++;
  for (const cJSON* nd = nodes ? nodes->child : NULL; nd; nd = nd->next, n_nodes++) {
    const cJSON* outs = cJSON_IsObject(nd) ? field(nd, "outputs") : NULL;
    if (cJSON_IsArray(outs)) n_ids += (size_t)cJSON_GetArraySize(outs);
  }
  if (n_nodes > L->o.max_nodes)
    return PTC_ERR(INVALID_ARGUMENT, "%zu nodes exceed the limit of %" PRIu64 " (max_nodes)",
                   n_nodes, L->o.max_nodes);
  if (!id_map_init(&L->ids, n_ids)) return ptc_status_oom();
  size_t i = 0;
  for (const cJSON* v = values ? values->child : NULL; v; v = v->next, i++) {
    snprintf(where, sizeof where, "values[%zu]", i);
    PTC_TRY(get_object(v, where));
    const cJSON* id;
    PTC_TRY(need(v, where, "id", &id));
    snprintf(where, sizeof where, "values[%zu].id", i);
    PTC_TRY(define_id(L, id, where, -1));
  }
  i = 0;
  for (const cJSON* nd = nodes ? nodes->child : NULL; nd; nd = nd->next, i++) {
    snprintf(where, sizeof where, "nodes[%zu]", i);
    PTC_TRY(get_object(nd, where));
    const cJSON* outs;
    PTC_TRY(need(nd, where, "outputs", &outs));
    snprintf(where, sizeof where, "nodes[%zu].outputs", i);
    PTC_TRY(get_array(outs, where, MAX_NODE_OUTPUTS, &n));
    size_t k = 0;
    for (const cJSON* o = outs->child; o; o = o->next, k++) {
      snprintf(where, sizeof where, "nodes[%zu].outputs[%zu]", i, k);
      PTC_TRY(define_id(L, o, where, (int64_t)i));
    }
  }
  return PTC_OK;
}

static void set_gid(loader* L, const cJSON* id, ptc_value gid) {
  bool empty;
  int64_t key = 0;
  json_to_int(id, false, &key); /* validated by the pre-scan */
  id_map_find(&L->ids, key, &empty)->gid = gid;
}

/* Resolves a use of a value id at nodes[node] (or in outputs when node < 0). */
static ptc_status use_id(loader* L, const cJSON* v, const char* where, int64_t node,
                         ptc_value* out) {
  if (node >= 0 && cJSON_IsNull(v)) {
    *out = PTC_VALUE_NONE;
    return PTC_OK;
  }
  int64_t id = 0;
  PTC_TRY(get_int(v, where, 0, JSON_EXACT_INT, false, &id));
  bool empty;
  const id_slot* s = id_map_find(&L->ids, id, &empty);
  if (empty) return PTC_ERR(INVALID_ARGUMENT, "%s: unknown value id %" PRId64, where, id);
  if (s->gid == PTC_VALUE_NONE)
    return PTC_ERR(INVALID_ARGUMENT, "cycle or forward reference at nodes[%" PRId64 "]: %s uses "
                   "value id %" PRId64 ", which nodes[%" PRId64 "] defines", node, where, id,
                   s->site);
  *out = s->gid;
  return PTC_OK;
}

/* ---- symbols ------------------------------------------------------------------------ */
static const char* const symbol_keys[] = {"name", "hint", "min", "max", NULL};

static ptc_status load_symbol(loader* L, const cJSON* s, size_t i) {
  char where[96];
  snprintf(where, sizeof where, "symbols[%zu]", i);
  PTC_TRY(get_object(s, where));
  PTC_TRY(check_keys(s, where, symbol_keys));
  const cJSON* v;
  const char* name = NULL;
  PTC_TRY(need(s, where, "name", &v));
  snprintf(where, sizeof where, "symbols[%zu].name", i);
  PTC_TRY(get_string(v, where, &name));
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  static const char* const keys[] = {"hint", "min", "max"};
  int64_t* dst[] = {&so.hint, &so.min_value, &so.max_value};
  for (size_t k = 0; k < 3; k++) {
    v = field(s, keys[k]);
    if (!v || (k == 0 && cJSON_IsNull(v))) continue;
    snprintf(where, sizeof where, "symbols[%zu].%s", i, keys[k]);
    PTC_TRY(get_int(v, where, k == 0 ? -1 : INT64_MIN, INT64_MAX, true, dst[k]));
  }
  ptc_sym id = 0;
  ptc_status st = ptc_graph_add_symbol(L->g, name, &so, &id);
  return st ? ptc_status_prefix(st, "symbols[%zu]", i) : PTC_OK;
}

/* ---- values --------------------------------------------------------------------------- */
static const char* const input_keys[] = {"id", "kind", "name", "dtype", "shape", "strides", NULL};
static const char* const const_keys[] = {"id",   "kind",   "name",   "dtype", "shape",
                                         "data", "file", "offset", "nbytes", "sha256", NULL};

typedef struct shape_info {
  size_t rank;
  ptc_dim dims[PTC_MAX_RANK];
  int64_t ints[PTC_MAX_RANK];
  int64_t static_numel; /* product of the static sizes */
} shape_info;

/* A dimension written as an expression string ("s0*2"). */
static ptc_status parse_dim_expr(loader* L, const cJSON* d, const char* where, ptc_dim* out) {
  const sym_expr* e = NULL;
  PTC_TRY(ptc_status_prefix(sym_parse(L->g->env, d->valuestring, strlen(d->valuestring), &e),
                            "%s", where));
  int64_t c, lo, hi;
  if (sym_is_const(e, &c)) {
    if (c < 0) return PTC_ERR(INVALID_ARGUMENT, "%s: negative size %" PRId64, where, c);
    out->value = c;
    return PTC_OK;
  }
  sym_bounds(L->g->env, e, &lo, &hi);
  if (hi < 0)
    return PTC_ERR(INVALID_ARGUMENT, "%s: size '%s' is always negative", where, d->valuestring);
  bool oom = false;
  out->sym = graph_sym_id(L->g, e, &oom);
  return oom ? ptc_status_oom() : PTC_OK;
}

static ptc_status load_shape(loader* L, const cJSON* sh, const char* where, bool allow_sym,
                             int32_t dtype, shape_info* out) {
  char w[128];
  PTC_TRY(get_array(sh, where, SIZE_MAX, &out->rank));
  if (out->rank > PTC_MAX_RANK)
    return PTC_ERR(INVALID_ARGUMENT, "%s: rank %zu exceeds the limit %d", where, out->rank,
                   PTC_MAX_RANK);
  out->static_numel = 1;
  bool overflow = false;
  size_t i = 0;
  for (const cJSON* d = sh->child; d; d = d->next, i++) {
    snprintf(w, sizeof w, "%s[%zu]", where, i);
    memset(&out->dims[i], 0, sizeof out->dims[i]);
    if (allow_sym && cJSON_IsString(d)) {
      PTC_TRY(parse_dim_expr(L, d, w, &out->dims[i]));
    } else {
      int64_t x = 0;
      if (!json_to_int(d, false, &x))
        return PTC_ERR(INVALID_ARGUMENT, "%s: expected an integer%s", w,
                       allow_sym ? " or an expression string" : "");
      if (x < 0) return PTC_ERR(INVALID_ARGUMENT, "%s: negative size %" PRId64, w, x);
      out->dims[i].value = x;
    }
    out->ints[i] = out->dims[i].value;
    if (!out->dims[i].sym) overflow |= !ptc_mul_ok(out->static_numel, out->dims[i].value,
                                                   &out->static_numel);
  }
  int64_t bytes;
  if (overflow || !ptc_mul_ok(out->static_numel, (int64_t)ptc_dtype_size(dtype), &bytes))
    return PTC_ERR(INVALID_ARGUMENT, "%s: the tensor's byte size overflows", where);
  if ((uint64_t)bytes > L->o.max_tensor_bytes)
    return PTC_ERR(INVALID_ARGUMENT, "%s: a tensor of %" PRId64 " bytes exceeds the limit of %"
                   PRIu64 " bytes (max_tensor_bytes)", where, bytes, L->o.max_tensor_bytes);
  return PTC_OK;
}

static ptc_status load_input(loader* L, const cJSON* v, size_t i, const char* name, int32_t dt,
                             ptc_value* out) {
  char where[96];
  snprintf(where, sizeof where, "values[%zu]", i);
  PTC_TRY(check_keys(v, where, input_keys));
  shape_info sh = {0};
  const cJSON* x;
  PTC_TRY(need(v, where, "shape", &x));
  snprintf(where, sizeof where, "values[%zu].shape", i);
  PTC_TRY(load_shape(L, x, where, true, dt, &sh));
  int64_t strides[PTC_MAX_RANK + 1];
  const cJSON* st = field(v, "strides");
  bool has_strides = st && !cJSON_IsNull(st);
  if (has_strides) {
    size_t n = 0, k = 0;
    snprintf(where, sizeof where, "values[%zu].strides", i);
    PTC_TRY(get_array(st, where, PTC_MAX_RANK, &n));
    if (n != sh.rank)
      return PTC_ERR(INVALID_ARGUMENT, "%s: %zu strides for a tensor of rank %zu", where, n,
                     sh.rank);
    for (const cJSON* s = st->child; s; s = s->next, k++) {
      snprintf(where, sizeof where, "values[%zu].strides[%zu]", i, k);
      PTC_TRY(get_int(s, where, 0, JSON_EXACT_INT, false, &strides[k]));
    }
  }
  ptc_status s = ptc_graph_add_input(L->g, name, dt, sh.dims, sh.rank,
                                     has_strides ? strides : NULL, out);
  return s ? ptc_status_prefix(s, "values[%zu]", i) : PTC_OK;
}

static bool plain_file_name(const char* s) {
  return s[0] && !strchr(s, '/') && !strchr(s, '\\') && !strstr(s, "..") && strcmp(s, ".") != 0;
}

static bool hex_digest(const char* s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f') ||
          (s[n] >= 'A' && s[n] <= 'F')))
      return false;
  return n == 64;
}

static ptc_status open_weights(const loader* L, const char* file, FILE** f) {
  const char* dir = L->o.base_dir;
  size_t n = (dir ? strlen(dir) + 1 : 0) + strlen(file) + 1;
  char* path = malloc(n);
  if (!path) return ptc_status_oom();
  if (dir)
    snprintf(path, n, "%s/%s", dir, file);
  else
    snprintf(path, n, "%s", file);
  errno = 0;
  *f = fopen(path, "rb");
  ptc_status s = PTC_OK;
  if (!*f)
    s = errno == ENOENT
            ? PTC_ERR(NOT_FOUND, "weights file '%s' not found (looked for '%s')", file, path)
            : PTC_ERR(UNKNOWN, "cannot open weights file '%s' ('%s'): %s", file, path,
                      strerror(errno));
  free(path);
  return s;
}

/* Reads and verifies nbytes at offset from the side file into *out. */
static ptc_status read_weights(const loader* L, const char* file, int64_t offset, int64_t nbytes,
                               const char* sha, void** out) {
  FILE* f = NULL;
  PTC_TRY(open_weights(L, file, &f));
  ptc_status s = PTC_OK;
  int64_t size = -1;
  if (fseeko(f, 0, SEEK_END) == 0) size = (int64_t)ftello(f);
  if (size < 0) {
    s = PTC_ERR(UNKNOWN, "weights file '%s': cannot determine its size", file);
  } else if (offset > size || size - offset < nbytes) {
    s = PTC_ERR(DATA_LOSS, "weights file '%s': expected %" PRId64 " bytes at offset %" PRId64
                ", file has %" PRId64, file, nbytes, offset, size);
  }
  void* buf = NULL;
  if (!s) {
    buf = malloc(nbytes ? (size_t)nbytes : 1);
    if (!buf) s = PTC_ERR(RESOURCE_EXHAUSTED, "out of memory for %" PRId64 " bytes of weights",
                          nbytes);
  }
  if (!s && (fseeko(f, (off_t)offset, SEEK_SET) != 0 ||
             fread(buf, 1, (size_t)nbytes, f) != (size_t)nbytes))
    s = PTC_ERR(DATA_LOSS, "weights file '%s': cannot read %" PRId64 " bytes at offset %" PRId64,
                file, nbytes, offset);
  fclose(f);
  if (!s) {
    char hex[65];
    ptc_sha256_hex(buf, (size_t)nbytes, hex);
    bool same = true;
    for (int k = 0; k < 64; k++) same &= (hex[k] == sha[k] || hex[k] == (sha[k] | 0x20));
    if (!same)
      s = PTC_ERR(DATA_LOSS, "weights file '%s': sha256 mismatch for %" PRId64 " bytes at offset %"
                  PRId64 " (expected %s, got %s)", file, nbytes, offset, sha, hex);
  }
  if (s) {
    free(buf);
    return s;
  }
  *out = buf;
  return PTC_OK;
}

static ptc_status load_const_file(loader* L, const cJSON* v, const char* where, int64_t nbytes,
                                  void** out) {
  const cJSON* x;
  const char *file = NULL, *sha = NULL;
  int64_t offset = 0, nb = 0;
  char w[128];
  PTC_TRY(need(v, where, "file", &x));
  snprintf(w, sizeof w, "%s.file", where);
  PTC_TRY(get_string(x, w, &file));
  if (!plain_file_name(file))
    return PTC_ERR(INVALID_ARGUMENT, "%s: '%s' is not a plain file name (no '/', '\\' or '..')",
                   w, file);
  PTC_TRY(need(v, where, "offset", &x));
  snprintf(w, sizeof w, "%s.offset", where);
  PTC_TRY(get_int(x, w, 0, JSON_EXACT_INT, false, &offset));
  PTC_TRY(need(v, where, "nbytes", &x));
  snprintf(w, sizeof w, "%s.nbytes", where);
  PTC_TRY(get_int(x, w, 0, JSON_EXACT_INT, false, &nb));
  if (nb != nbytes)
    return PTC_ERR(INVALID_ARGUMENT, "%s: %" PRId64 " does not match the dtype and shape (%"
                   PRId64 " bytes)", w, nb, nbytes);
  PTC_TRY(need(v, where, "sha256", &x));
  snprintf(w, sizeof w, "%s.sha256", where);
  PTC_TRY(get_string(x, w, &sha));
  if (!hex_digest(sha)) return PTC_ERR(INVALID_ARGUMENT, "%s: expected 64 hex digits", w);
  return ptc_status_prefix(read_weights(L, file, offset, nbytes, sha, out), "%s", where);
}

static ptc_status load_const_inline(const cJSON* d, const char* where, int64_t nbytes,
                                    void** out) {
  char w[128];
  const char* text = NULL;
  snprintf(w, sizeof w, "%s.data", where);
  PTC_TRY(get_string(d, w, &text));
  size_t n = 0;
  void* buf = NULL;
  if (!ptc_base64_decode(text, strlen(text), &buf, &n))
    return PTC_ERR(INVALID_ARGUMENT, "%s: invalid base64 (or out of memory)", w);
  if ((int64_t)n != nbytes) {
    free(buf);
    return PTC_ERR(DATA_LOSS, "%s: expected %" PRId64 " bytes, got %zu", w, nbytes, n);
  }
  *out = buf;
  return PTC_OK;
}

static ptc_status load_constant(loader* L, const cJSON* v, size_t i, const char* name,
                                int32_t dt, ptc_value* out) {
  char where[96];
  snprintf(where, sizeof where, "values[%zu]", i);
  PTC_TRY(check_keys(v, where, const_keys));
  shape_info sh = {0};
  const cJSON* x;
  PTC_TRY(need(v, where, "shape", &x));
  char w[128];
  snprintf(w, sizeof w, "%s.shape", where);
  PTC_TRY(load_shape(L, x, w, false, dt, &sh));
  int64_t nbytes = sh.static_numel * (int64_t)ptc_dtype_size(dt); /* checked by load_shape */
  const cJSON* data = field(v, "data");
  bool has_file = field(v, "file") || field(v, "offset") || field(v, "nbytes") || field(v, "sha256");
  if ((data != NULL) == has_file)
    return PTC_ERR(INVALID_ARGUMENT, "%s: a constant needs either \"data\" or \"file\", "
                   "\"offset\", \"nbytes\" and \"sha256\"", where);
  void* buf = NULL;
  PTC_TRY(data ? load_const_inline(data, where, nbytes, &buf)
               : load_const_file(L, v, where, nbytes, &buf));
  if (nbytes == 0) {
    free(buf);
    buf = NULL;
  }
  ptc_status s = ptc_graph_add_constant(L->g, name, dt, sh.ints, sh.rank, buf,
                                        PTC_CONSTANT_BORROW, out);
  if (s) {
    free(buf);
    return ptc_status_prefix(s, "%s", where);
  }
  if (!buf) return PTC_OK;
  gvalue* gv = graph_value(L->g, *out); /* the graph takes ownership */
  gv->owned = buf;
  gv->data = buf;
  return PTC_OK;
}

static ptc_status load_value(loader* L, const cJSON* v, size_t i) {
  char where[96];
  const cJSON* x;
  const char *kind = NULL, *name = NULL;
  int32_t dt = 0;
  snprintf(where, sizeof where, "values[%zu]", i);
  PTC_TRY(need(v, where, "kind", &x));
  snprintf(where, sizeof where, "values[%zu].kind", i);
  PTC_TRY(get_string(x, where, &kind));
  if (strcmp(kind, "input") && strcmp(kind, "constant"))
    return PTC_ERR(INVALID_ARGUMENT, "%s: expected \"input\" or \"constant\", got \"%s\"", where,
                   kind);
  if ((x = field(v, "name"))) {
    snprintf(where, sizeof where, "values[%zu].name", i);
    PTC_TRY(get_string(x, where, &name));
  }
  snprintf(where, sizeof where, "values[%zu]", i);
  PTC_TRY(need(v, where, "dtype", &x));
  snprintf(where, sizeof where, "values[%zu].dtype", i);
  PTC_TRY(get_dtype(x, where, &dt));
  ptc_value gid = PTC_VALUE_NONE;
  if (kind[0] == 'i')
    PTC_TRY(load_input(L, v, i, name, dt, &gid));
  else
    PTC_TRY(load_constant(L, v, i, name, dt, &gid));
  set_gid(L, field(v, "id"), gid);
  return PTC_OK;
}

/* ---- nodes -------------------------------------------------------------------------------- */
static const char* const node_keys[] = {"op", "inputs", "attrs", "outputs", NULL};

static ptc_status load_attrs(loader* L, const cJSON* attrs, size_t i, ptc_attr** out,
                             size_t* n) {
  char where[96];
  snprintf(where, sizeof where, "nodes[%zu].attrs", i);
  *n = 0;
  *out = NULL;
  if (!attrs) return PTC_OK;
  PTC_TRY(get_object(attrs, where));
  size_t k = 0;
  for (const cJSON* a = attrs->child; a; a = a->next) k++;
  ptc_attr* arr = ptc_arena_alloc(&L->scratch, (k + 1) * sizeof *arr);
  if (!arr) return ptc_status_oom();
  k = 0;
  for (const cJSON* a = attrs->child; a; a = a->next, k++)
    PTC_TRY(ptc_status_prefix(json_attr_parse(L->g, a, &L->scratch, &arr[k]), "%s", where));
  *out = arr;
  *n = k;
  return PTC_OK;
}

static ptc_status load_node(loader* L, const cJSON* nd, size_t i) {
  char where[96];
  snprintf(where, sizeof where, "nodes[%zu]", i);
  PTC_TRY(check_keys(nd, where, node_keys));
  const cJSON *x, *ins, *outs = field(nd, "outputs");
  const char* opname = NULL;
  PTC_TRY(need(nd, where, "op", &x));
  snprintf(where, sizeof where, "nodes[%zu].op", i);
  PTC_TRY(get_string(x, where, &opname));
  if (!op_find(opname)) return PTC_ERR(NOT_FOUND, "nodes[%zu]: unknown op '%s'", i, opname);
  size_t n_in = 0, n_attrs, k = 0;
  ptc_value* in = NULL;
  ins = field(nd, "inputs");
  if (ins) {
    snprintf(where, sizeof where, "nodes[%zu].inputs", i);
    PTC_TRY(get_array(ins, where, 4096, &n_in));
    in = ptc_arena_alloc(&L->scratch, (n_in + 1) * sizeof *in);
    if (!in) return ptc_status_oom();
    for (const cJSON* v = ins->child; v; v = v->next, k++) {
      snprintf(where, sizeof where, "nodes[%zu].inputs[%zu]", i, k);
      PTC_TRY(use_id(L, v, where, (int64_t)i, &in[k]));
    }
  }
  ptc_attr* attrs;
  PTC_TRY(load_attrs(L, field(nd, "attrs"), i, &attrs, &n_attrs));
  size_t n_file = (size_t)cJSON_GetArraySize(outs), n_out = 0; /* validated by the pre-scan */
  ptc_value got[MAX_NODE_OUTPUTS];
  ptc_status s = ptc_graph_add_node(L->g, opname, in, n_in, attrs, n_attrs, got, n_file, &n_out);
  if (s && ptc_status_code(s) != PTC_CODE_OUT_OF_RANGE) return ptc_status_prefix(s, "nodes[%zu]", i);
  ptc_status_destroy(s);
  if (s || n_out != n_file)
    return PTC_ERR(INVALID_ARGUMENT, "nodes[%zu].outputs: op '%s' produces %zu outputs, the file "
                   "lists %zu", i, opname, n_out, n_file);
  k = 0;
  for (const cJSON* o = outs->child; o; o = o->next, k++) set_gid(L, o, got[k]);
  return PTC_OK;
}

static ptc_status load_outputs(loader* L, const cJSON* outs) {
  char where[64];
  size_t k = 0;
  for (const cJSON* o = outs ? outs->child : NULL; o; o = o->next, k++) {
    snprintf(where, sizeof where, "outputs[%zu]", k);
    ptc_value v = PTC_VALUE_NONE;
    PTC_TRY(use_id(L, o, where, -1, &v));
    PTC_TRY(ptc_status_prefix(ptc_graph_add_output(L->g, v), "%s", where));
  }
  return PTC_OK;
}

static ptc_status load_all(loader* L, const cJSON* root) {
  PTC_TRY(check_header(root));
  const cJSON* values = field(root, "values");
  const cJSON* nodes = field(root, "nodes");
  PTC_TRY(prescan(L, values, nodes));
  size_t i = 0;
  const cJSON* syms = field(root, "symbols");
  for (const cJSON* s = syms ? syms->child : NULL; s; s = s->next, i++)
    PTC_TRY(load_symbol(L, s, i));
  i = 0;
  for (const cJSON* v = values ? values->child : NULL; v; v = v->next, i++)
    PTC_TRY(load_value(L, v, i));
  i = 0;
  for (const cJSON* nd = nodes ? nodes->child : NULL; nd; nd = nd->next, i++)
    PTC_TRY(load_node(L, nd, i));
  return load_outputs(L, field(root, "outputs"));
}

static ptc_status read_load_options(const ptc_json_load_options* opts, ptc_json_load_options* o) {
  ptc_json_load_options_init(o);
  if (opts) {
    if (opts->struct_size < sizeof *o)
      return PTC_ERR(INVALID_ARGUMENT, "JSON load options: struct_size %zu is too small (%zu); "
                     "call ptc_json_load_options_init", opts->struct_size, sizeof *o);
    *o = *opts;
    o->struct_size = sizeof *o;
  }
  if (!o->max_bytes) o->max_bytes = (uint64_t)64 << 20;
  if (!o->max_nodes) o->max_nodes = 1000000;
  if (!o->max_depth) o->max_depth = 64;
  if (!o->max_tensor_bytes) o->max_tensor_bytes = (uint64_t)16 << 30;
  return PTC_OK;
}

ptc_status ptc_graph_from_json(ptc_context* ctx, const char* json, size_t len,
                               const ptc_json_load_options* opts, ptc_graph** out) {
  if (!ctx || !out || (!json && len))
    return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_from_json: NULL argument");
  loader L;
  memset(&L, 0, sizeof L);
  PTC_TRY(read_load_options(opts, &L.o));
  cJSON* root = NULL;
  PTC_TRY(parse_json(&L, json ? json : "", len, &root));
  ptc_status s = ptc_graph_create(ctx, &L.g);
  ptc_arena_init(&L.scratch, 0);
  if (!s) s = load_all(&L, root);
  cJSON_Delete(root);
  free(L.ids.slots);
  ptc_arena_free(&L.scratch);
  if (s) {
    ptc_graph_destroy(L.g);
    return s;
  }
  *out = L.g;
  return PTC_OK;
}

/* Reads a whole file of at most `limit` bytes. */
static ptc_status read_file(const char* path, uint64_t limit, char** data, size_t* len) {
  errno = 0;
  FILE* f = fopen(path, "rb");
  if (!f)
    return errno == ENOENT ? PTC_ERR(NOT_FOUND, "'%s' not found", path)
                           : PTC_ERR(UNKNOWN, "cannot open '%s': %s", path, strerror(errno));
  ptc_status s = PTC_OK;
  off_t size = -1;
  if (fseeko(f, 0, SEEK_END) == 0) size = ftello(f);
  if (size < 0 || fseeko(f, 0, SEEK_SET) != 0)
    s = PTC_ERR(UNKNOWN, "cannot read '%s'", path);
  else if ((uint64_t)size > limit)
    s = PTC_ERR(INVALID_ARGUMENT, "'%s' is %lld bytes, more than the limit of %" PRIu64
                " bytes (max_bytes)", path, (long long)size, limit);
  char* buf = s ? NULL : malloc((size_t)size + 1);
  if (!s && !buf) s = ptc_status_oom();
  if (!s && fread(buf, 1, (size_t)size, f) != (size_t)size)
    s = PTC_ERR(UNKNOWN, "error reading '%s'", path);
  fclose(f);
  if (s) {
    free(buf);
    return s;
  }
  *data = buf;
  *len = (size_t)size;
  return PTC_OK;
}

ptc_status ptc_graph_load(ptc_context* ctx, const char* path, const ptc_json_load_options* opts,
                          ptc_graph** out) {
  if (!ctx || !path || !out) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_load: NULL argument");
  ptc_json_load_options o;
  PTC_TRY(read_load_options(opts, &o));
  char* dir = NULL;
  const char* slash = strrchr(path, '/');
  if (!o.base_dir && slash) {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    dir = malloc(n + 1);
    if (!dir) return ptc_status_oom();
    memcpy(dir, path, n);
    dir[n] = 0;
    o.base_dir = dir;
  }
  char* text = NULL;
  size_t len = 0;
  ptc_status s = read_file(path, o.max_bytes, &text, &len);
  if (!s) s = ptc_status_prefix(ptc_graph_from_json(ctx, text, len, &o, out), "%s", path);
  free(text);
  free(dir);
  return s;
}
