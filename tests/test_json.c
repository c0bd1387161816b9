/* test_json.c - graph JSON save/load: round trips (symbols, symbolic and
 * strided inputs, constants inline and in a side file, multi-output nodes,
 * absent optional inputs, every attribute type), identical text after
 * save -> load -> save, every loader error with its code and message, limits,
 * and ptc_graph_format/print. Runs under ASan to catch leaks on error paths. */
#include "lib/graph/graph.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char tmpdir[64];

static void path_in_tmp(char* out, size_t cap, const char* name) {
  snprintf(out, cap, "%s/%s", tmpdir, name);
}

static ptc_value add1(ptc_graph* g, const char* op, const ptc_value* in, size_t n,
                      const ptc_attr* a, size_t na) {
  ptc_value out = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_node(g, op, in, n, a, na, &out, 1, NULL));
  return out;
}

static ptc_sym expr_sym(ptc_graph* g, const sym_expr* e) {
  bool oom = false;
  return graph_sym_id(g, e, &oom);
}

/* A graph exercising every part of the format. */
static ptc_graph* build_graph(ptc_context* ctx) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return NULL;
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  so.hint = 8;
  ptc_sym s0 = 0, s1 = 0;
  CHECK_OK(ptc_graph_add_symbol(g, "s0", &so, &s0));
  so.hint = 6;
  so.min_value = 2;
  so.max_value = 100;
  CHECK_OK(ptc_graph_add_symbol(g, "s1", &so, &s1));
  const sym_expr* e1 = graph_sym_expr(g, s1);
  ptc_sym s1x2 = expr_sym(g, sym_mul_c(g->env, e1, 2));

  ptc_value x, y, z, w, big, big2;
  ptc_dim xs[2] = {{0, s0, 0}, {4, 0, 0}};
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xs, 2, NULL, &x));
  ptc_dim ys[1] = {{0, s1x2, 0}};
  CHECK_OK(ptc_graph_add_input(g, "y", PTC_F32, ys, 1, NULL, &y));
  ptc_dim zs[2] = {{3, 0, 0}, {2, 0, 0}};
  int64_t zst[2] = {1, 3};
  CHECK_OK(ptc_graph_add_input(g, "z", PTC_I64, zs, 2, zst, &z));
  float wd[4] = {1, -2, 3.5f, NAN};
  int64_t w_shape[1] = {4};
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, w_shape, 1, wd, PTC_CONSTANT_COPY, &w));
  static float bd[256], b2d[300];
  for (int i = 0; i < 256; i++) bd[i] = (float)i * 0.25f;
  for (int i = 0; i < 300; i++) b2d[i] = (float)(300 - i);
  int64_t big_shape[2] = {64, 4}, big2_shape[1] = {300};
  CHECK_OK(ptc_graph_add_constant(g, "big", PTC_F32, big_shape, 2, bd, PTC_CONSTANT_BORROW, &big));
  CHECK_OK(ptc_graph_add_constant(g, "big2", PTC_F32, big2_shape, 1, b2d, PTC_CONSTANT_COPY, &big2));

  ptc_attr alpha = ptc_attr_float("alpha", 2.0);
  ptc_value a = add1(g, "add", (ptc_value[]){x, w}, 2, &alpha, 1);
  ptc_value r = add1(g, "relu", &a, 1, NULL, 0);
  ptc_attr approx = ptc_attr_string("approximate", "tanh");
  ptc_value ge = add1(g, "gelu", &r, 1, &approx, 1);
  int64_t dim1 = 1;
  ptc_attr sum_attrs[2] = {ptc_attr_ints("dim", &dim1, 1), ptc_attr_bool("keepdim", 1)};
  ptc_value s = add1(g, "sum", &ge, 1, sum_attrs, 2);
  ptc_attr to = ptc_attr_dtype("dtype", PTC_F32);
  ptc_value t = add1(g, "to_dtype", &z, 1, &to, 1);
  ptc_attr other = ptc_attr_float("other", 1.5);
  ptc_value ys2 = add1(g, "add", &y, 1, &other, 1);
  /* multi-output node with a SYM-typed attribute given as an int */
  ptc_attr topk[2] = {ptc_attr_int("k", 2), ptc_attr_int("dim", 1)};
  ptc_value tk[2] = {PTC_VALUE_NONE, PTC_VALUE_NONE};
  size_t ntk = 0;
  CHECK_OK(ptc_graph_add_node(g, "topk", &x, 1, topk, 2, tk, 2, &ntk));
  CHECK(ntk == 2);
  /* symbolic INTS attribute */
  int64_t shp[1] = {0};
  ptc_sym shs[1] = {expr_sym(g, sym_mul_c(g->env, graph_sym_expr(g, s0), 4))};
  ptc_attr rs = ptc_attr_ints("shape", shp, 1);
  rs.syms = shs;
  ptc_value rsh = add1(g, "reshape", &x, 1, &rs, 1);
  /* absent optional input */
  int64_t four = 4;
  ptc_attr ln = ptc_attr_ints("normalized_shape", &four, 1);
  ptc_value lnv = add1(g, "layer_norm", (ptc_value[]){x, PTC_VALUE_NONE, w}, 3, &ln, 1);
  int64_t d0 = 0;
  ptc_attr sd0 = ptc_attr_ints("dim", &d0, 1);
  ptc_value sb = add1(g, "sum", &big, 1, &sd0, 1);
  ptc_value m = add1(g, "mul", (ptc_value[]){r, sb}, 2, NULL, 0);
  ptc_value sb2 = add1(g, "sum", &big2, 1, NULL, 0);
  ptc_value outs[] = {m, s, tk[0], tk[1], t, rsh, lnv, sb2, ys2, m};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) CHECK_OK(ptc_graph_add_output(g, outs[i]));
  return g;
}

static char* save_text(const ptc_graph* g, const char* weights, uint64_t inline_limit) {
  ptc_json_save_options so;
  ptc_json_save_options_init(&so);
  so.weights_path = weights;
  so.inline_limit = inline_limit;
  char* text = NULL;
  CHECK_OK(ptc_graph_to_json(g, &so, &text));
  return text;
}

static ptc_graph* load_text(ptc_context* ctx, const char* text) {
  ptc_json_load_options lo;
  ptc_json_load_options_init(&lo);
  lo.base_dir = tmpdir;
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_from_json(ctx, text, strlen(text), &lo, &g));
  return g;
}

static void check_same_graph(const ptc_graph* a, const ptc_graph* b) {
  CHECK(ptc_graph_num_values(a) == ptc_graph_num_values(b));
  CHECK(ptc_graph_num_nodes(a) == ptc_graph_num_nodes(b));
  CHECK(ptc_graph_num_inputs(a) == ptc_graph_num_inputs(b));
  CHECK(ptc_graph_num_outputs(a) == ptc_graph_num_outputs(b));
  CHECK(ptc_graph_num_guards(a) == ptc_graph_num_guards(b));
  if (ptc_graph_num_values(a) != ptc_graph_num_values(b)) return;
  for (size_t i = 0; i < ptc_graph_num_values(a); i++) {
    const gvalue* va = graph_value(a, (ptc_value)i);
    const gvalue* vb = graph_value(b, (ptc_value)i);
    CHECK(va->kind == vb->kind && va->dtype == vb->dtype && va->rank == vb->rank);
    if (va->kind == PTC_VALUE_CONSTANT) {
      CHECK(va->nbytes == vb->nbytes);
      CHECK(va->nbytes == vb->nbytes && memcmp(va->data, vb->data, va->nbytes) == 0);
      CHECK(strcmp(va->name, vb->name) == 0);
    }
  }
}

static void test_round_trip(ptc_context* ctx) {
  ptc_graph* g = build_graph(ctx);
  if (!g) return;
  char wpath[128];
  path_in_tmp(wpath, sizeof wpath, "weights.bin");
  char* t1 = save_text(g, wpath, 512);
  CHECK(t1 && strstr(t1, "\"file\":\t\"weights.bin\""));
  CHECK(t1 && strstr(t1, "\"2*s1\""));
  CHECK(t1 && strstr(t1, "\"strides\":\t[1, 3]"));
  struct stat st;
  CHECK(stat(wpath, &st) == 0 && st.st_size == 1024 + 1200);
  ptc_graph* g2 = t1 ? load_text(ctx, t1) : NULL;
  if (g2) {
    check_same_graph(g, g2);
    char* t2 = save_text(g2, wpath, 512);
    CHECK(t2 && strcmp(t1, t2) == 0);
    free(t2);
    ptc_graph_destroy(g2);
  }
  /* everything inline */
  char* t3 = save_text(g, NULL, 0);
  CHECK(t3 && !strstr(t3, "\"file\""));
  ptc_graph* g3 = t3 ? load_text(ctx, t3) : NULL;
  if (g3) {
    check_same_graph(g, g3);
    char* t4 = save_text(g3, NULL, 0);
    CHECK(t4 && strcmp(t3, t4) == 0);
    free(t4);
    ptc_graph_destroy(g3);
  }
  /* file helpers: a plain weights name lands next to the JSON */
  char jpath[128], w2[128];
  path_in_tmp(jpath, sizeof jpath, "g.json");
  path_in_tmp(w2, sizeof w2, "side.bin");
  ptc_json_save_options so;
  ptc_json_save_options_init(&so);
  so.weights_path = "side.bin";
  so.inline_limit = 100;
  CHECK_OK(ptc_graph_save(g, jpath, &so));
  CHECK(stat(w2, &st) == 0);
  ptc_graph* g4 = NULL;
  CHECK_OK(ptc_graph_load(ctx, jpath, NULL, &g4));
  if (g4) check_same_graph(g, g4);
  ptc_graph_destroy(g4);
  unlink(jpath);
  unlink(w2);
  unlink(wpath);
  free(t1);
  free(t3);
  ptc_graph_destroy(g);
}

/* ---- loader errors ------------------------------------------------------------------- */
/* JSON written with single quotes for readability. */
static char* dq(const char* s) {
  char* r = strdup(s);
  for (char* p = r; p && *p; p++)
    if (*p == '\'') *p = '"';
  return r;
}

static const char* const BASE =
    "{'format': 'ptc-graph', 'version': 1, 'symbols': [{'name': 's0', 'hint': 5}],"
    " 'values': [{'id': 0, 'kind': 'input', 'name': 'x', 'dtype': 'f32', 'shape': [2, 3],"
    " 'strides': null},"
    " {'id': 5, 'kind': 'constant', 'name': 'c', 'dtype': 'f32', 'shape': [3],"
    " 'data': 'AAAAAAAAAAAAAAAA'}],"
    " 'nodes': [{'op': 'add', 'inputs': [0, 5], 'attrs': {}, 'outputs': [9]},"
    " {'op': 'relu', 'inputs': [9], 'attrs': {}, 'outputs': [17]}],"
    " 'outputs': [17] }";

/* BASE with the first occurrence of `from` replaced by `to` (double quotes). */
static char* mutate(const char* base, const char* from, const char* to) {
  char *b = dq(base), *f = dq(from), *t = dq(to);
  char* hit = b && f ? strstr(b, f) : NULL;
  char* r = NULL;
  if (hit && t) {
    size_t n = strlen(b) - strlen(f) + strlen(t) + 1;
    r = malloc(n);
    if (r) snprintf(r, n, "%.*s%s%s", (int)(hit - b), b, t, hit + strlen(f));
  } else {
    fprintf(stderr, "test bug: '%s' not in base\n", from);
    check_failures++;
  }
  free(b);
  free(f);
  free(t);
  return r;
}

static void expect_load_error(ptc_context* ctx, const char* text, size_t len,
                              const ptc_json_load_options* lo, int32_t code, const char* substr,
                              int line) {
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_from_json(ctx, text, len, lo, &g);
  if (!s || ptc_status_code(s) != code || !strstr(ptc_status_message(s), substr)) {
    fprintf(stderr, "%s:%d: expected %s containing \"%s\", got %s: \"%s\"\n", __FILE__, line,
            ptc_code_name(code), substr, ptc_code_name(ptc_status_code(s)),
            ptc_status_message(s));
    check_failures++;
  }
  CHECK(g == NULL);
  ptc_graph_destroy(g);
  ptc_status_destroy(s);
}

static void expect_mut(ptc_context* ctx, const char* base, const char* from, const char* to,
                       int32_t code, const char* substr, int line) {
  char* t = mutate(base, from, to);
  ptc_json_load_options lo;
  ptc_json_load_options_init(&lo);
  lo.base_dir = tmpdir;
  if (t) expect_load_error(ctx, t, strlen(t), &lo, code, substr, line);
  free(t);
}

#define EXPECT_MUT(from, to, code, substr) \
  expect_mut(ctx, BASE, from, to, PTC_CODE_##code, substr, __LINE__)

static void test_base_loads(ptc_context* ctx) {
  char* t = dq(BASE);
  ptc_graph* g = load_text(ctx, t);
  CHECK(g && ptc_graph_num_nodes(g) == 2 && ptc_graph_num_values(g) == 4);
  CHECK(g && ptc_graph_output(g, 0) == 3);
  ptc_graph_destroy(g);
  free(t);
}

static void test_errors(ptc_context* ctx) {
  ptc_json_load_options lo;
  ptc_json_load_options_init(&lo);
  expect_load_error(ctx, "{", 1, &lo, PTC_CODE_INVALID_ARGUMENT, "malformed JSON at line 1", __LINE__);
  expect_load_error(ctx, "{\n  \"a\": [1,,]}", 15, &lo, PTC_CODE_INVALID_ARGUMENT,
                    "malformed JSON at line 2", __LINE__);
  expect_load_error(ctx, "", 0, &lo, PTC_CODE_INVALID_ARGUMENT, "empty", __LINE__);
  expect_load_error(ctx, "[1]", 3, &lo, PTC_CODE_INVALID_ARGUMENT, "top level: expected an object",
                    __LINE__);
  expect_load_error(ctx, "{} x", 4, &lo, PTC_CODE_INVALID_ARGUMENT, "unexpected text", __LINE__);
  /* the length bounds the parse: a valid prefix followed by garbage beyond len is fine */
  {
    char* t = dq(BASE);
    size_t n = strlen(t);
    char* u = malloc(n + 8);
    if (u) {
      memcpy(u, t, n);
      memcpy(u + n, "garbage", 8);
      ptc_graph* g = NULL;
      CHECK_OK(ptc_graph_from_json(ctx, u, n, &lo, &g));
      ptc_graph_destroy(g);
      expect_load_error(ctx, u, n - 1, &lo, PTC_CODE_INVALID_ARGUMENT, "malformed JSON", __LINE__);
    }
    free(u);
    free(t);
  }
  EXPECT_MUT("'ptc-graph'", "'onnx'", INVALID_ARGUMENT, "format: expected \"ptc-graph\"");
  EXPECT_MUT("'version': 1", "'version': 2", INVALID_ARGUMENT, "version 2");
  EXPECT_MUT("'version': 1", "'version': 1, 'extra': 3", INVALID_ARGUMENT,
             "top level: unknown key 'extra'");
  EXPECT_MUT("'version': 1", "'version': 1, 'version': 1", INVALID_ARGUMENT, "appears twice");
  EXPECT_MUT("'inputs': [0, 5]", "'inputs': [0, 77]", INVALID_ARGUMENT,
             "nodes[0].inputs[1]: unknown value id 77");
  EXPECT_MUT("'inputs': [0, 5]", "'inputs': [0, 17]", INVALID_ARGUMENT,
             "cycle or forward reference at nodes[0]");
  EXPECT_MUT("'inputs': [9]", "'inputs': [17]", INVALID_ARGUMENT,
             "cycle or forward reference at nodes[1]");
  EXPECT_MUT("'inputs': [0, 5]", "'inputs': [0, -1]", INVALID_ARGUMENT, "nodes[0].inputs[1]");
  EXPECT_MUT("'inputs': [0, 5]", "'inputs': [0, 1.5]", INVALID_ARGUMENT, "expected an integer");
  EXPECT_MUT("'op': 'relu'", "'op': 'foo'", NOT_FOUND, "nodes[1]: unknown op 'foo'");
  EXPECT_MUT("'op': 'relu'", "'op': 7", INVALID_ARGUMENT, "nodes[1].op: expected a string");
  EXPECT_MUT("'shape': [2, 3]", "'shape': [2, -4]", INVALID_ARGUMENT,
             "values[0].shape[1]: negative size -4");
  EXPECT_MUT("'shape': [2, 3]", "'shape': [2, 'q']", INVALID_ARGUMENT, "values[0].shape[1]");
  EXPECT_MUT("'shape': [2, 3]", "'shape': [2, [3]]", INVALID_ARGUMENT,
             "values[0].shape[1]: expected an integer or an expression string");
  EXPECT_MUT("'shape': [2, 3]", "'shape': [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", INVALID_ARGUMENT,
             "rank 17 exceeds");
  EXPECT_MUT("'dtype': 'f32'", "'dtype': 'f33'", INVALID_ARGUMENT,
             "values[0].dtype: unknown dtype 'f33'");
  EXPECT_MUT("'kind': 'input'", "'kind': 'weird'", INVALID_ARGUMENT, "values[0].kind");
  EXPECT_MUT("'strides': null", "'strides': [1]", INVALID_ARGUMENT,
             "values[0].strides: 1 strides for a tensor of rank 2");
  EXPECT_MUT("'strides': null", "'stride': null", INVALID_ARGUMENT,
             "values[0]: unknown key 'stride'");
  EXPECT_MUT("'attrs': {}", "'attrs': {'alpha': {'ints': 'x'}}", INVALID_ARGUMENT,
             "attribute 'alpha'");
  EXPECT_MUT("'attrs': {}", "'attrs': {'alpha': {'string': 'x'}}", INVALID_ARGUMENT,
             "nodes[0]: add: attribute 'alpha': expected float, got string");
  EXPECT_MUT("'attrs': {}", "'attrs': {'alpha': 3}", INVALID_ARGUMENT, "attribute 'alpha'");
  EXPECT_MUT("'attrs': {}", "'attrs': {'beta': {'float': 1}}", INVALID_ARGUMENT,
             "unknown attribute 'beta'");
  EXPECT_MUT("'attrs': {}", "'attrs': []", INVALID_ARGUMENT, "nodes[0].attrs: expected an object");
  EXPECT_MUT("'id': 5", "'id': 0", INVALID_ARGUMENT, "value id 0 is already defined");
  EXPECT_MUT("'outputs': [17]}", "'outputs': [9]}", INVALID_ARGUMENT,
             "value id 9 is already defined by nodes[0]");
  EXPECT_MUT("'outputs': [17]}", "'outputs': [17, 18]}", INVALID_ARGUMENT,
             "nodes[1].outputs: op 'relu' produces 1 outputs, the file lists 2");
  EXPECT_MUT("'outputs': [17]}", "'outputs': []}", INVALID_ARGUMENT, "produces 1 outputs");
  EXPECT_MUT("'outputs': [17]}]", "'outputs': [17]}, {'op': 'relu'}]", INVALID_ARGUMENT,
             "nodes[2]: missing \"outputs\"");
  EXPECT_MUT("'outputs': [17] }", "'outputs': [99] }", INVALID_ARGUMENT,
             "outputs[0]: unknown value id 99");
  EXPECT_MUT("'shape': [3]", "'shape': [1099511627776]", INVALID_ARGUMENT, "max_tensor_bytes");
  EXPECT_MUT("'shape': [3]", "'shape': [4294967296, 4294967296, 4294967296]", INVALID_ARGUMENT,
             "overflows");
  EXPECT_MUT("'shape': [3]", "'shape': ['s0']", INVALID_ARGUMENT,
             "values[1].shape[0]: expected an integer");
  EXPECT_MUT("'AAAAAAAAAAAAAAAA'", "'AAAA'", DATA_LOSS, "values[1].data: expected 12 bytes, got 3");
  EXPECT_MUT("'AAAAAAAAAAAAAAAA'", "'AA!AAAAAAAAAAAAA'", INVALID_ARGUMENT, "invalid base64");
  EXPECT_MUT("'data': 'AAAAAAAAAAAAAAAA'", "'data': 'AAAAAAAAAAAAAAAA', 'file': 'w.bin'",
             INVALID_ARGUMENT, "either \"data\" or \"file\"");
  EXPECT_MUT("'hint': 5}", "'hint': 5}, {'name': 's0'}", INVALID_ARGUMENT, "symbols[1]");
  EXPECT_MUT("'hint': 5}", "'hint': 5, 'min': 10}", INVALID_ARGUMENT, "symbols[0]");
  EXPECT_MUT("'hint': 5}", "'hint': 'five'}", INVALID_ARGUMENT, "symbols[0].hint");
  EXPECT_MUT("'name': 's0'", "'name': '1abc'", INVALID_ARGUMENT, "symbols[0]");
  /* symbols: ranges beyond 2^53 as strings; expression sizes */
  {
    char* t = mutate(BASE, "'hint': 5}", "'hint': 5, 'max': '4611686018427387904'}");
    char* t2 = t ? mutate(t, "'shape': [2, 3]", "'shape': ['s0*2', 3]") : NULL;
    ptc_graph* g = t2 ? load_text(ctx, t2) : NULL;
    CHECK(g != NULL);
    if (g) {
      ptc_value_info info;
      info.struct_size = sizeof info;
      CHECK_OK(ptc_graph_value_info(g, 0, &info));
      CHECK(info.shape[0].sym != 0 && info.shape[0].value == 10);
    }
    ptc_graph_destroy(g);
    free(t);
    free(t2);
  }
}

static void write_file(const char* name, const void* data, size_t n) {
  char p[128];
  path_in_tmp(p, sizeof p, name);
  FILE* f = fopen(p, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(data, 1, n, f) == n);
  fclose(f);
}

static void test_side_file_errors(ptc_context* ctx) {
  unsigned char data[12] = {0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64}; /* 1, 2, 3 */
  char hex[65], good[256];
  ptc_sha256_hex(data, sizeof data, hex);
  snprintf(good, sizeof good,
           "'file': 'w.bin', 'offset': 0, 'nbytes': 12, 'sha256': '%s'", hex);
  const char* inl = "'data': 'AAAAAAAAAAAAAAAA'";
  write_file("w.bin", data, sizeof data);
  {
    char* t = mutate(BASE, inl, good);
    ptc_graph* g = t ? load_text(ctx, t) : NULL;
    CHECK(g != NULL);
    if (g) CHECK(memcmp(graph_value(g, 1)->data, data, 12) == 0);
    ptc_graph_destroy(g);
    free(t);
  }
  char bad[300];
  snprintf(bad, sizeof bad, "'file': '../w.bin', 'offset': 0, 'nbytes': 12, 'sha256': '%s'", hex);
  expect_mut(ctx, BASE, inl, bad, PTC_CODE_INVALID_ARGUMENT, "not a plain file name", __LINE__);
  snprintf(bad, sizeof bad, "'file': 'd/w.bin', 'offset': 0, 'nbytes': 12, 'sha256': '%s'", hex);
  expect_mut(ctx, BASE, inl, bad, PTC_CODE_INVALID_ARGUMENT, "not a plain file name", __LINE__);
  snprintf(bad, sizeof bad, "'file': 'nope.bin', 'offset': 0, 'nbytes': 12, 'sha256': '%s'", hex);
  expect_mut(ctx, BASE, inl, bad, PTC_CODE_NOT_FOUND, "weights file 'nope.bin' not found", __LINE__);
  snprintf(bad, sizeof bad, "'file': 'w.bin', 'offset': 0, 'nbytes': 16, 'sha256': '%s'", hex);
  expect_mut(ctx, BASE, inl, bad, PTC_CODE_INVALID_ARGUMENT, "values[1].nbytes: 16 does not match",
             __LINE__);
  snprintf(bad, sizeof bad, "'file': 'w.bin', 'offset': 4, 'nbytes': 12, 'sha256': '%s'", hex);
  expect_mut(ctx, BASE, inl, bad, PTC_CODE_DATA_LOSS,
             "weights file 'w.bin': expected 12 bytes at offset 4, file has 12", __LINE__);
  snprintf(bad, sizeof bad, "'file': 'w.bin', 'offset': 0, 'nbytes': 12, 'sha256': 'abc'");
  expect_mut(ctx, BASE, inl, bad, PTC_CODE_INVALID_ARGUMENT, "64 hex digits", __LINE__);
  snprintf(bad, sizeof bad, "'file': 'w.bin', 'offset': 0, 'nbytes': 12");
  expect_mut(ctx, BASE, inl, bad, PTC_CODE_INVALID_ARGUMENT, "missing \"sha256\"", __LINE__);
  /* truncated, then corrupted */
  write_file("w.bin", data, 5);
  expect_mut(ctx, BASE, inl, good, PTC_CODE_DATA_LOSS,
             "weights file 'w.bin': expected 12 bytes at offset 0, file has 5", __LINE__);
  unsigned char corrupt[12];
  memcpy(corrupt, data, 12);
  corrupt[7] ^= 1;
  write_file("w.bin", corrupt, 12);
  expect_mut(ctx, BASE, inl, good, PTC_CODE_DATA_LOSS, "sha256 mismatch", __LINE__);
  char p[128];
  path_in_tmp(p, sizeof p, "w.bin");
  unlink(p);
}

static void test_limits(ptc_context* ctx) {
  char* t = dq(BASE);
  if (!t) return;
  size_t n = strlen(t);
  ptc_json_load_options lo;
  ptc_json_load_options_init(&lo);
  lo.max_bytes = 10;
  expect_load_error(ctx, t, n, &lo, PTC_CODE_INVALID_ARGUMENT, "max_bytes", __LINE__);
  ptc_json_load_options_init(&lo);
  lo.max_nodes = 1;
  expect_load_error(ctx, t, n, &lo, PTC_CODE_INVALID_ARGUMENT, "2 nodes exceed the limit of 1",
                    __LINE__);
  ptc_json_load_options_init(&lo);
  lo.max_depth = 3;
  expect_load_error(ctx, t, n, &lo, PTC_CODE_INVALID_ARGUMENT, "max_depth", __LINE__);
  ptc_json_load_options_init(&lo);
  lo.max_tensor_bytes = 8;
  expect_load_error(ctx, t, n, &lo, PTC_CODE_INVALID_ARGUMENT,
                    "values[0].shape: a tensor of 24 bytes exceeds the limit of 8", __LINE__);
  ptc_json_load_options_init(&lo);
  lo.struct_size = 8;
  expect_load_error(ctx, t, n, &lo, PTC_CODE_INVALID_ARGUMENT, "struct_size", __LINE__);
  /* deep nesting beyond our default limit (cJSON's own limit is 1000) */
  char deep[400];
  size_t k = 0;
  deep[k++] = '{';
  const char* key = "\"a\":";
  memcpy(deep + k, key, 4);
  k += 4;
  for (int i = 0; i < 100; i++) deep[k++] = '[';
  for (int i = 0; i < 100; i++) deep[k++] = ']';
  deep[k++] = '}';
  ptc_json_load_options_init(&lo);
  expect_load_error(ctx, deep, k, &lo, PTC_CODE_INVALID_ARGUMENT, "limit of 64", __LINE__);
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_load(ctx, "/nonexistent/dir/g.json", NULL, &g);
  CHECK(ptc_status_code(s) == PTC_CODE_NOT_FOUND);
  ptc_status_destroy(s);
  free(t);
}

static void test_format(ptc_context* ctx) {
  ptc_graph* g = build_graph(ctx);
  if (!g) return;
  size_t need = 0;
  ptc_status s = ptc_graph_format(g, NULL, 0, &need);
  CHECK(ptc_status_code(s) == PTC_CODE_OUT_OF_RANGE && need > 100);
  ptc_status_destroy(s);
  char small[16];
  s = ptc_graph_format(g, small, sizeof small, &need);
  CHECK(ptc_status_code(s) == PTC_CODE_OUT_OF_RANGE && strlen(small) == 15);
  ptc_status_destroy(s);
  char* buf = malloc(need + 1);
  if (buf) {
    size_t need2 = 0;
    CHECK_OK(ptc_graph_format(g, buf, need + 1, &need2));
    CHECK(need2 == need && strlen(buf) == need);
    CHECK(strstr(buf, "opcode") && strstr(buf, "placeholder") && strstr(buf, "get_attr"));
    CHECK(strstr(buf, "call_function") && strstr(buf, "topk"));
    CHECK(strstr(buf, "s0: hint 8") && strstr(buf, "s1: hint 6, range [2, 100]"));
    CHECK(strstr(buf, "{alpha=2, }") == NULL && strstr(buf, "{alpha=2}"));
    CHECK(strstr(buf, "approximate='tanh'") && strstr(buf, "[s0, 4]"));
    CHECK(strstr(buf, "(x, None, w)"));
    free(buf);
  }
  FILE* f = tmpfile();
  if (f) {
    CHECK_OK(ptc_graph_print(g, f));
    CHECK(ftell(f) == (long)need);
    fclose(f);
  }
  s = ptc_graph_print(NULL, stdout);
  CHECK(ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT);
  ptc_status_destroy(s);
  ptc_graph_destroy(g);
}

static void test_save_errors(ptc_context* ctx) {
  ptc_graph* g = build_graph(ctx);
  if (!g) return;
  ptc_json_save_options so;
  ptc_json_save_options_init(&so);
  so.weights_path = "/nonexistent/dir/w.bin";
  so.inline_limit = 16;
  char* text = NULL;
  ptc_status s = ptc_graph_to_json(g, &so, &text);
  CHECK(ptc_status_code(s) == PTC_CODE_UNKNOWN && strstr(ptc_status_message(s), "w.bin"));
  CHECK(text == NULL);
  ptc_status_destroy(s);
  so.struct_size = 4;
  s = ptc_graph_to_json(g, &so, &text);
  CHECK(ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT);
  ptc_status_destroy(s);
  s = ptc_graph_save(g, "/nonexistent/dir/g.json", NULL);
  CHECK(ptc_status_code(s) == PTC_CODE_UNKNOWN);
  ptc_status_destroy(s);
  ptc_graph_destroy(g);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ptc_test_json_XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  ptc_context* ctx = NULL;
  CHECK_OK(ptc_context_create(NULL, &ctx));
  if (!ctx) return 1;
  test_round_trip(ctx);
  test_base_loads(ctx);
  test_errors(ctx);
  test_side_file_errors(ctx);
  test_limits(ctx);
  test_format(ctx);
  test_save_errors(ctx);
  ptc_context_release(ctx);
  rmdir(tmpdir);
  return check_summary("test_json");
}
