/* test_badinput.c - every kind of bad input named by the issue gives a
 * status whose message says what is wrong (run under ASan/valgrind: nothing
 * crashes or leaks): unknown op, wrong arity, bad attribute, dtype and shape
 * mismatches, negative and overflowing sizes, malformed JSON, truncated and
 * corrupted weight files. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"

static ptc_context* ctx;

static ptc_graph* graph_with_input(int32_t dt, int64_t a, int64_t b, ptc_value* x) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_dim d[2] = {{a, 0, 0}, {b, 0, 0}};
  CHECK_OK(ptc_graph_add_input(g, "x", dt, d, 2, NULL, x));
  return g;
}

static void graph_errors(void) {
  ptc_value x, y[2], out[4];
  size_t n;
  ptc_graph* g = graph_with_input(PTC_F32, 4, 3, &x);
  ptc_dim d[2] = {{4, 0, 0}, {3, 0, 0}};
  CHECK_OK(ptc_graph_add_input(g, "i", PTC_I64, d, 2, NULL, &y[0]));
  y[1] = x;
  CHECK_ERR(ptc_graph_add_node(g, "frobnicate", &x, 1, NULL, 0, out, 4, &n), PTC_CODE_NOT_FOUND,
            "unknown op 'frobnicate'");
  CHECK_ERR(ptc_graph_add_node(g, "mm", &x, 1, NULL, 0, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "mm: expected 2 inputs, got 1");
  ptc_attr a = ptc_attr_float("dim", 1.5);
  CHECK_ERR(ptc_graph_add_node(g, "softmax", &x, 1, &a, 1, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "softmax: attribute 'dim': expected int, got float");
  ptc_attr big_dim = ptc_attr_int("dim", 5);
  CHECK_ERR(ptc_graph_add_node(g, "softmax", &x, 1, &big_dim, 1, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "softmax: dim 5 is out of range for a tensor of rank 2");
  ptc_value w[2] = {x, x};
  CHECK_ERR(ptc_graph_add_node(g, "mm", w, 2, NULL, 0, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "mm");
  ptc_value mixed[3] = {x, x, x};
  /* where needs a bool condition */
  CHECK_ERR(ptc_graph_add_node(g, "where", mixed, 3, NULL, 0, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "where");
  /* dtype mismatch: float indices */
  ptc_attr dim0 = ptc_attr_int("dim", 0);
  ptc_value gx[2] = {x, x};
  CHECK_ERR(ptc_graph_add_node(g, "gather", gx, 2, &dim0, 1, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "gather");
  /* shape mismatch */
  ptc_value c;
  ptc_dim d5[2] = {{5, 0, 0}, {3, 0, 0}};
  CHECK_OK(ptc_graph_add_input(g, "z", PTC_F32, d5, 2, NULL, &c));
  ptc_value xc[2] = {x, c};
  CHECK_ERR(ptc_graph_add_node(g, "add", xc, 2, NULL, 0, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "add: cannot broadcast [4, 3] with [5, 3]");
  /* negative and overflowing sizes */
  int64_t neg[2] = {-1, -1};
  ptc_attr sz = ptc_attr_ints("size", neg, 2);
  CHECK_ERR(ptc_graph_add_node(g, "reshape", &x, 1, &sz, 1, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "reshape");
  int64_t huge[3] = {1LL << 40, 1LL << 40, 1LL << 40};
  ptc_attr hz = ptc_attr_ints("size", huge, 3);
  CHECK_ERR(ptc_graph_add_node(g, "zeros", NULL, 0, &hz, 1, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "overflow");
  int64_t negz[1] = {-5};
  ptc_attr nz = ptc_attr_ints("size", negz, 1);
  CHECK_ERR(ptc_graph_add_node(g, "zeros", NULL, 0, &nz, 1, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "zeros");
  CHECK(ptc_graph_num_nodes(g) == 0);
  ptc_graph_destroy(g);
}

static void json_errors(void) {
  ptc_graph* g = NULL;
  const char* bad[] = {
      "{",
      "[1, 2, 3]",
      "{\"format\": \"ptc-graph\", \"version\": 1, \"values\": [], \"nodes\": "
      "[{\"op\": \"frobnicate\", \"inputs\": [], \"outputs\": [0]}], \"outputs\": [0]}",
      "{\"format\": \"ptc-graph\", \"version\": 1, \"values\": [{\"id\": 0, \"kind\": "
      "\"input\", \"dtype\": \"f32\", \"shape\": [-4]}], \"nodes\": [], \"outputs\": [0]}",
      "{\"format\": \"ptc-graph\", \"version\": 1, \"values\": [{\"id\": 0, \"kind\": "
      "\"input\", \"dtype\": \"f32\", \"shape\": [4]}], \"nodes\": [{\"op\": \"relu\", "
      "\"inputs\": [7], \"outputs\": [1]}], \"outputs\": [1]}",
  };
  const char* want[] = {"", "", "frobnicate", "negative", "7"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ptc_status s = ptc_graph_from_json(ctx, bad[i], strlen(bad[i]), NULL, &g);
    CHECK(s != NULL && strstr(ptc_status_message(s), want[i]) != NULL);
    if (s) printf("  json error %zu: %s\n", i, ptc_status_message(s));
    ptc_status_destroy(s);
    CHECK(g == NULL);
  }
}

static void weight_file_errors(void) {
  char dir[] = "/tmp/ptc_badinput_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  char json_path[256], bin_path[256];
  snprintf(json_path, sizeof json_path, "%s/g.json", dir);
  snprintf(bin_path, sizeof bin_path, "%s/g.bin", dir);
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  float w[1024];
  for (int i = 0; i < 1024; i++) w[i] = (float)i;
  int64_t shape[1] = {1024};
  ptc_value c, y;
  size_t n;
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, shape, 1, w, PTC_CONSTANT_COPY, &c));
  CHECK_OK(ptc_graph_add_node(g, "neg", &c, 1, NULL, 0, &y, 1, &n));
  CHECK_OK(ptc_graph_add_output(g, y));
  ptc_json_save_options so;
  ptc_json_save_options_init(&so);
  so.inline_limit = 16;
  so.weights_path = bin_path;
  CHECK_OK(ptc_graph_save(g, json_path, &so));
  ptc_graph_destroy(g);
  g = NULL;
  CHECK_OK(ptc_graph_load(ctx, json_path, NULL, &g));
  ptc_graph_destroy(g);
  g = NULL;
  /* corrupt one byte: hash mismatch */
  FILE* f = fopen(bin_path, "r+b");
  if (f) {
    fseek(f, 100, SEEK_SET);
    fputc(0x7f, f);
    fclose(f);
  }
  CHECK_ERR(ptc_graph_load(ctx, json_path, NULL, &g), PTC_CODE_DATA_LOSS, "");
  /* truncate */
  CHECK(truncate(bin_path, 100) == 0);
  ptc_status s = ptc_graph_load(ctx, json_path, NULL, &g);
  CHECK(ptc_status_code(s) == PTC_CODE_DATA_LOSS);
  if (s) printf("  truncated weights: %s\n", ptc_status_message(s));
  ptc_status_destroy(s);
  CHECK(g == NULL);
  unlink(bin_path);
  CHECK_ERR(ptc_graph_load(ctx, json_path, NULL, &g), PTC_CODE_NOT_FOUND, "g.bin");
  unlink(json_path);
  rmdir(dir);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  graph_errors();
  json_errors();
  weight_file_errors();
  ptc_context_release(ctx);
  return check_summary("test_badinput");
}
