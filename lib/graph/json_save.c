/* json_save.c - serialises a graph to the JSON format "ptc-graph" version 1
 * (ptc_graph_to_json, ptc_graph_save).
 *
 *   {"format": "ptc-graph", "version": 1,
 *    "symbols": [{"name", "hint" (null when unbacked), "min", "max"}],
 *    "values":  [inputs and constants],
 *    "nodes":   [{"op", "inputs": [id | null], "attrs": {name: {type: v}},
 *                 "outputs": [id]}],
 *    "outputs": [id]}
 *
 * File ids are assigned in the order the loader recreates values (inputs and
 * constants first, then node outputs in node order), so save -> load -> save
 * reproduces the same text. Integers beyond 2^53 (symbol ranges) are written
 * as decimal strings to stay exact. Constants larger than inline_limit go to
 * the side weights file (64-byte aligned offsets, sha256 per constant) when
 * weights_path is set; smaller ones are inline base64.
 */
#include "json_attr.h"
#include "op.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JSON_EXACT_INT ((int64_t)1 << 53)
#define WEIGHT_ALIGN 64

void ptc_json_save_options_init(ptc_json_save_options* o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->inline_limit = 4096;
  o->weights_path = NULL;
}

/* Builder state: a sticky OOM flag spares checks at every cJSON call. */
typedef struct saver {
  const ptc_graph* g;
  ptc_json_save_options o;
  const char* weights_file; /* path the side file is written to */
  const char* weights_name; /* base name recorded in the JSON */
  FILE* wf;
  uint64_t woff;
  uint32_t* fid; /* graph value id -> file id */
  bool oom;
  ptc_status err; /* I/O error */
} saver;

/* Attaches `item` to `parent` (array when key is NULL); NULL item = OOM. */
static cJSON* put(saver* s, cJSON* parent, const char* key, cJSON* item) {
  if (!item || !parent) {
    cJSON_Delete(item);
    s->oom = true;
    return NULL;
  }
  bool ok = key ? cJSON_AddItemToObject(parent, key, item) : cJSON_AddItemToArray(parent, item);
  if (!ok) {
    cJSON_Delete(item);
    s->oom = true;
    return NULL;
  }
  return item;
}

static cJSON* int_json(int64_t v) {
  if (v >= -JSON_EXACT_INT && v <= JSON_EXACT_INT) return cJSON_CreateNumber((double)v);
  char buf[32];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return cJSON_CreateString(buf);
}

static cJSON* expr_json(const ptc_graph* g, const sym_expr* e) {
  int64_t c;
  if (sym_is_const(e, &c)) return int_json(c);
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  sym_format_sb(g->env, e, &sb);
  cJSON* r = sb.oom ? NULL : cJSON_CreateString(sb.data ? sb.data : "");
  ptc_sb_free(&sb);
  return r;
}

static cJSON* shape_json(const ptc_graph* g, uint32_t rank, const sym_expr* const* dims) {
  cJSON* a = cJSON_CreateArray();
  for (uint32_t i = 0; a && i < rank; i++) {
    cJSON* d = expr_json(g, dims[i]);
    if (!d || !cJSON_AddItemToArray(a, d)) {
      cJSON_Delete(d);
      cJSON_Delete(a);
      a = NULL;
    }
  }
  return a;
}

static cJSON* id_json(const saver* s, ptc_value v) {
  if (v == PTC_VALUE_NONE) return cJSON_CreateNull();
  return cJSON_CreateNumber((double)s->fid[v]);
}

static cJSON* ids_json(const saver* s, const ptc_value* v, size_t n) {
  cJSON* a = cJSON_CreateArray();
  for (size_t i = 0; a && i < n; i++) {
    cJSON* e = id_json(s, v[i]);
    if (!e || !cJSON_AddItemToArray(a, e)) {
      cJSON_Delete(e);
      cJSON_Delete(a);
      a = NULL;
    }
  }
  return a;
}

/* Strides are written only when they differ from the contiguous layout.
 * Explicit input strides are always static; strides that are symbolic were
 * derived by the graph from the shape and are contiguous by construction. */
static bool strides_are_contiguous(const gvalue* v) {
  int64_t acc = 1;
  bool acc_known = true;
  for (uint32_t i = v->rank; i-- > 0;) {
    int64_t st, sz;
    if (!sym_is_const(v->strides[i], &st)) {
      acc_known = false;
      continue;
    }
    if (!acc_known || st != acc) return false;
    if (!sym_is_const(v->shape[i], &sz) || !ptc_mul_ok(acc, sz, &acc)) acc_known = false;
  }
  return true;
}

static void symbols_json(saver* s, cJSON* root) {
  const sym_env* env = s->g->env;
  cJSON* arr = put(s, root, "symbols", cJSON_CreateArray());
  for (size_t i = 0; arr && i < sym_num_vars(env); i++) {
    cJSON* o = put(s, arr, NULL, cJSON_CreateObject());
    int64_t lo, hi, hint = sym_var_hint(env, i);
    sym_var_range(env, i, &lo, &hi);
    put(s, o, "name", cJSON_CreateString(sym_var_name(env, i)));
    put(s, o, "hint", hint == SYM_NO_HINT ? cJSON_CreateNull() : int_json(hint));
    put(s, o, "min", int_json(lo));
    put(s, o, "max", int_json(hi));
  }
}

static ptc_status io_error(const char* what, const char* path) {
  return PTC_ERR(UNKNOWN, "cannot %s weights file '%s'", what, path);
}

/* Appends a constant's bytes to the side file; returns its offset. */
static bool write_weights(saver* s, const gvalue* v, uint64_t* offset) {
  if (!s->wf) {
    s->wf = fopen(s->weights_file, "wb");
    if (!s->wf) {
      s->err = io_error("create", s->weights_file);
      return false;
    }
  }
  static const unsigned char zeros[WEIGHT_ALIGN];
  size_t pad = (size_t)((WEIGHT_ALIGN - s->woff % WEIGHT_ALIGN) % WEIGHT_ALIGN);
  if ((pad && fwrite(zeros, 1, pad, s->wf) != pad) ||
      (v->nbytes && fwrite(v->data, 1, v->nbytes, s->wf) != v->nbytes)) {
    s->err = io_error("write", s->weights_file);
    return false;
  }
  *offset = s->woff + pad;
  s->woff = *offset + v->nbytes;
  return true;
}

static void constant_data_json(saver* s, const gvalue* v, cJSON* o) {
  if (s->weights_file && v->nbytes > s->o.inline_limit) {
    uint64_t off = 0;
    if (!write_weights(s, v, &off)) return;
    char hex[65];
    ptc_sha256_hex(v->data, v->nbytes, hex);
    put(s, o, "file", cJSON_CreateString(s->weights_name));
    put(s, o, "offset", int_json((int64_t)off));
    put(s, o, "nbytes", int_json((int64_t)v->nbytes));
    put(s, o, "sha256", cJSON_CreateString(hex));
    return;
  }
  char* b64 = ptc_base64_encode(v->data, v->nbytes);
  put(s, o, "data", b64 ? cJSON_CreateString(b64) : NULL);
  free(b64);
}

static void value_json(saver* s, cJSON* arr, ptc_value id) {
  const ptc_graph* g = s->g;
  const gvalue* v = graph_value(g, id);
  bool input = v->kind == PTC_VALUE_INPUT;
  cJSON* o = put(s, arr, NULL, cJSON_CreateObject());
  put(s, o, "id", id_json(s, id));
  put(s, o, "kind", cJSON_CreateString(input ? "input" : "constant"));
  put(s, o, "name", cJSON_CreateString(v->name));
  put(s, o, "dtype", cJSON_CreateString(ptc_dtype_name(v->dtype)));
  put(s, o, "shape", shape_json(g, v->rank, v->shape));
  if (input)
    put(s, o, "strides", strides_are_contiguous(v) ? cJSON_CreateNull()
                                                   : shape_json(g, v->rank, v->strides));
  else if (o)
    constant_data_json(s, v, o);
}

static void node_json(saver* s, cJSON* arr, const gnode* n) {
  cJSON* o = put(s, arr, NULL, cJSON_CreateObject());
  put(s, o, "op", cJSON_CreateString(n->op->name));
  put(s, o, "inputs", ids_json(s, n->in, n->n_in));
  cJSON* attrs = put(s, o, "attrs", cJSON_CreateObject());
  for (size_t i = 0; attrs && i < n->attrs.n; i++)
    if (!json_attr_emit(s->g, &n->attrs.a[i], attrs)) s->oom = true;
  put(s, o, "outputs", ids_json(s, n->out, n->n_out));
}

/* File ids in loader order: inputs and constants, then node outputs. */
static ptc_status assign_ids(saver* s) {
  const ptc_graph* g = s->g;
  s->fid = malloc((g->values.len + 1) * sizeof *s->fid);
  if (!s->fid) return ptc_status_oom();
  uint32_t next = 0;
  for (size_t i = 0; i < g->values.len; i++) {
    const gvalue* v = graph_value(g, (ptc_value)i);
    s->fid[i] = v->kind == PTC_VALUE_NODE ? PTC_VALUE_NONE : next++;
  }
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    for (uint32_t o = 0; o < n->n_out; o++) s->fid[n->out[o]] = next++;
  }
  if (next != g->values.len)
    return PTC_ERR(INTERNAL, "ptc_graph_to_json: %zu values but %u are inputs, constants or "
                   "node outputs", g->values.len, next);
  return PTC_OK;
}

static cJSON* build(saver* s) {
  const ptc_graph* g = s->g;
  cJSON* root = cJSON_CreateObject();
  if (!root) {
    s->oom = true;
    return NULL;
  }
  put(s, root, "format", cJSON_CreateString("ptc-graph"));
  put(s, root, "version", cJSON_CreateNumber(1));
  symbols_json(s, root);
  cJSON* values = put(s, root, "values", cJSON_CreateArray());
  for (size_t i = 0; values && !s->err && i < g->values.len; i++)
    if (graph_value(g, (ptc_value)i)->kind != PTC_VALUE_NODE) value_json(s, values, (ptc_value)i);
  cJSON* nodes = put(s, root, "nodes", cJSON_CreateArray());
  for (size_t i = 0; nodes && i < g->nodes.len; i++) node_json(s, nodes, graph_node(g, i));
  put(s, root, "outputs", ids_json(s, (const ptc_value*)g->outputs.data, g->outputs.len));
  return root;
}

static ptc_status read_save_options(const ptc_json_save_options* opts, ptc_json_save_options* o) {
  ptc_json_save_options_init(o);
  if (!opts) return PTC_OK;
  if (opts->struct_size < sizeof *o)
    return PTC_ERR(INVALID_ARGUMENT, "JSON save options: struct_size %zu is too small (%zu); "
                   "call ptc_json_save_options_init", opts->struct_size, sizeof *o);
  *o = *opts;
  o->struct_size = sizeof *o;
  return PTC_OK;
}

static const char* base_name(const char* path) {
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* weights_file: where the side file is written (NULL: everything inline). */
static ptc_status save(const ptc_graph* g, const ptc_json_save_options* opts,
                       const char* weights_file, char** out) {
  if (!g || !out) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_to_json: NULL argument");
  saver s;
  memset(&s, 0, sizeof s);
  s.g = g;
  PTC_TRY(read_save_options(opts, &s.o));
  if (weights_file) {
    s.weights_file = weights_file;
    s.weights_name = base_name(s.o.weights_path);
    if (!*s.weights_name || strcmp(s.weights_name, ".") == 0 || strstr(s.weights_name, ".."))
      return PTC_ERR(INVALID_ARGUMENT, "weights_path '%s' does not end in a plain file name",
                     s.o.weights_path);
  }
  ptc_status st = assign_ids(&s);
  cJSON* root = st ? NULL : build(&s);
  if (s.wf && fclose(s.wf) != 0 && !s.err) s.err = io_error("write", s.weights_file);
  char* text = NULL;
  if (!st && !s.err && !s.oom) {
    text = cJSON_Print(root);
    if (!text) s.oom = true;
  }
  cJSON_Delete(root);
  free(s.fid);
  if (!st) st = s.err ? s.err : s.oom ? ptc_status_oom() : PTC_OK;
  else ptc_status_destroy(s.err);
  if (st) {
    free(text);
    return st;
  }
  *out = text;
  return PTC_OK;
}

ptc_status ptc_graph_to_json(const ptc_graph* g, const ptc_json_save_options* opts, char** out) {
  const char* wp = opts && opts->struct_size >= sizeof *opts ? opts->weights_path : NULL;
  return save(g, opts, wp, out);
}

ptc_status ptc_graph_save(const ptc_graph* g, const char* path, const ptc_json_save_options* opts) {
  if (!g || !path) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_save: NULL argument");
  const char* wp = opts && opts->struct_size >= sizeof *opts ? opts->weights_path : NULL;
  /* A plain weights file name is placed next to the JSON file. */
  char* wfile = NULL;
  if (wp && !strchr(wp, '/') && strchr(path, '/')) {
    size_t dir = (size_t)(strrchr(path, '/') - path) + 1;
    wfile = malloc(dir + strlen(wp) + 1);
    if (!wfile) return ptc_status_oom();
    memcpy(wfile, path, dir);
    strcpy(wfile + dir, wp);
  }
  char* text = NULL;
  ptc_status st = save(g, opts, wfile ? wfile : wp, &text);
  free(wfile);
  if (st) return ptc_status_prefix(st, "ptc_graph_save '%s'", path);
  FILE* f = fopen(path, "wb");
  if (!f) {
    free(text);
    return PTC_ERR(UNKNOWN, "ptc_graph_save: cannot create '%s'", path);
  }
  size_t n = strlen(text);
  bool bad = fwrite(text, 1, n, f) != n || fputc('\n', f) == EOF;
  bad |= fclose(f) != 0;
  free(text);
  if (bad) return PTC_ERR(UNKNOWN, "ptc_graph_save: error writing '%s'", path);
  return PTC_OK;
}
