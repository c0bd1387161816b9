/* test_graph.c - graph building through the public API: symbols, inputs,
 * constants, node validation and its messages, symbolic meta results and
 * guards, value queries, printing, op registry. */
#include <stdlib.h>

#include "check.h"

static ptc_context* ctx;

static ptc_graph* new_graph(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  return g;
}

static ptc_value input(ptc_graph* g, int32_t dt, const int64_t* shape, size_t rank) {
  ptc_dim d[PTC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) d[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, dt, d, rank, NULL, &v));
  return v;
}

static void sym_text(ptc_graph* g, ptc_value v, uint32_t dim, char* buf, size_t cap) {
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  buf[0] = 0;
  CHECK_OK(ptc_graph_value_info(g, v, &info));
  if (dim >= info.rank) return;
  if (info.shape[dim].sym)
    ptc_graph_sym_format(g, info.shape[dim].sym, buf, cap);
  else
    snprintf(buf, cap, "%lld", (long long)info.shape[dim].value);
}

static void test_create_and_nulls(void) {
  ptc_graph* g = NULL;
  CHECK_ERR(ptc_graph_create(NULL, &g), PTC_CODE_INVALID_ARGUMENT, "NULL");
  CHECK(g == NULL);
  ptc_graph_destroy(NULL);
  CHECK(ptc_graph_num_nodes(NULL) == 0);
  CHECK(ptc_graph_input(NULL, 0) == PTC_VALUE_NONE);
  g = new_graph();
  ptc_value v = 123;
  CHECK_ERR(ptc_graph_add_input(g, "x", 99, NULL, 0, NULL, &v), PTC_CODE_INVALID_ARGUMENT,
            "invalid dtype");
  CHECK(v == 123); /* out-param untouched on error */
  ptc_graph_destroy(g);
}

static void test_symbols(void) {
  ptc_graph* g = new_graph();
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 8;
  ptc_sym s0 = 0, s1 = 0, one = 99;
  CHECK_OK(ptc_graph_add_symbol(g, "batch", &o, &s0));
  CHECK(s0 != 0);
  CHECK_ERR(ptc_graph_add_symbol(g, "batch", &o, &s1), PTC_CODE_INVALID_ARGUMENT, "batch");
  CHECK_ERR(ptc_graph_add_symbol(g, "2bad", &o, &s1), PTC_CODE_INVALID_ARGUMENT, "not a valid");
  CHECK_ERR(ptc_graph_add_symbol(g, "min", &o, &s1), PTC_CODE_INVALID_ARGUMENT, "not a valid");
  o.hint = 1;
  CHECK_OK(ptc_graph_add_symbol(g, "unit", &o, &one));
  CHECK(one == 0); /* 0/1 specialisation */
  o.hint = 3;
  o.min_value = 4;
  CHECK_ERR(ptc_graph_add_symbol(g, "lo", &o, &s1), PTC_CODE_INVALID_ARGUMENT, "");
  char buf[64];
  CHECK(ptc_graph_sym_format(g, s0, buf, sizeof buf) == 5 && strcmp(buf, "batch") == 0);
  CHECK(ptc_graph_sym_format(g, 999, buf, sizeof buf) == 0 && buf[0] == 0);
  ptc_graph_destroy(g);
}

static void test_inputs_constants(void) {
  ptc_graph* g = new_graph();
  ptc_dim neg[2] = {{4, 0, 0}, {-3, 0, 0}};
  ptc_value v;
  CHECK_ERR(ptc_graph_add_input(g, "x", PTC_F32, neg, 2, NULL, &v), PTC_CODE_INVALID_ARGUMENT,
            "negative size");
  ptc_dim big[3] = {{1LL << 40, 0, 0}, {1LL << 40, 0, 0}, {1LL << 40, 0, 0}};
  CHECK_ERR(ptc_graph_add_input(g, "x", PTC_F32, big, 3, NULL, &v), PTC_CODE_INVALID_ARGUMENT,
            "overflow");
  ptc_dim many[PTC_MAX_RANK + 1];
  for (int i = 0; i <= PTC_MAX_RANK; i++) many[i] = (ptc_dim){1, 0, 0};
  CHECK_ERR(ptc_graph_add_input(g, "x", PTC_F32, many, PTC_MAX_RANK + 1, NULL, &v),
            PTC_CODE_INVALID_ARGUMENT, "rank");
  ptc_dim badsym[1] = {{0, 77, 0}};
  CHECK_ERR(ptc_graph_add_input(g, "x", PTC_F32, badsym, 1, NULL, &v), PTC_CODE_INVALID_ARGUMENT,
            "unknown symbol");
  int64_t shape[2] = {2, 3};
  float w[6] = {1, 2, 3, 4, 5, 6};
  ptc_value c1, c2;
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, shape, 2, w, PTC_CONSTANT_COPY, &c1));
  CHECK_OK(ptc_graph_add_constant(g, "wb", PTC_F32, shape, 2, w, PTC_CONSTANT_BORROW, &c2));
  CHECK_ERR(ptc_graph_add_constant(g, "n", PTC_F32, shape, 2, NULL, 0, &v),
            PTC_CODE_INVALID_ARGUMENT, "NULL");
  CHECK_ERR(ptc_graph_add_constant(g, "f", PTC_F32, shape, 2, w, 7, &v), PTC_CODE_INVALID_ARGUMENT,
            "flags");
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  CHECK_OK(ptc_graph_value_info(g, c1, &info));
  CHECK(info.kind == PTC_VALUE_CONSTANT && info.rank == 2 && info.shape[1].value == 3);
  CHECK(info.strides[0].value == 3 && info.strides[1].value == 1);
  CHECK(strcmp(info.name, "w") == 0);
  info.struct_size = 4;
  CHECK_ERR(ptc_graph_value_info(g, c1, &info), PTC_CODE_INVALID_ARGUMENT, "struct_size");
  CHECK(ptc_graph_num_values(g) == 2);
  CHECK_ERR(ptc_graph_add_output(g, 55), PTC_CODE_INVALID_ARGUMENT, "unknown value");
  ptc_graph_destroy(g);
}

static void test_node_validation(void) {
  ptc_graph* g = new_graph();
  int64_t s43[2] = {4, 3}, s5[1] = {5};
  ptc_value a = input(g, PTC_F32, s43, 2), b = input(g, PTC_F32, s5, 1);
  ptc_value in[2] = {a, b}, out[4];
  size_t n = 0;
  CHECK_ERR(ptc_graph_add_node(g, "no_such_op", in, 2, NULL, 0, out, 4, &n), PTC_CODE_NOT_FOUND,
            "unknown op 'no_such_op'");
  CHECK_ERR(ptc_graph_add_node(g, "add", in, 2, NULL, 0, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "add: cannot broadcast [4, 3] with [5]");
  CHECK_ERR(ptc_graph_add_node(g, "relu", in, 2, NULL, 0, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "relu: expected 1 inputs, got 2");
  ptc_attr bad = ptc_attr_int("nonsense", 1);
  CHECK_ERR(ptc_graph_add_node(g, "relu", in, 1, &bad, 1, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "unknown attribute 'nonsense'");
  ptc_attr wrongtype = ptc_attr_string("dim", "x");
  CHECK_ERR(ptc_graph_add_node(g, "softmax", in, 1, &wrongtype, 1, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "attribute 'dim': expected int");
  CHECK_ERR(ptc_graph_add_node(g, "softmax", in, 1, NULL, 0, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "missing required attribute 'dim'");
  ptc_value bogus[2] = {a, 999};
  CHECK_ERR(ptc_graph_add_node(g, "add", bogus, 2, NULL, 0, out, 4, &n), PTC_CODE_INVALID_ARGUMENT,
            "unknown value id 999");
  /* a leading size-1 dim against a lower-rank operand broadcasts */
  int64_t s13[2] = {1, 3}, s3b[1] = {3};
  ptc_value lead[2] = {input(g, PTC_F32, s13, 2), input(g, PTC_F32, s3b, 1)};
  CHECK_OK(ptc_graph_add_node(g, "add", lead, 2, NULL, 0, out, 4, &n));
  ptc_value_info li = {sizeof li, 0, 0, 0, 0, NULL, NULL, NULL};
  CHECK_OK(ptc_graph_value_info(g, out[0], &li));
  CHECK(li.rank == 2 && li.shape[0].value == 1 && li.shape[1].value == 3);
  ptc_graph_destroy(g);
  g = new_graph();
  a = input(g, PTC_F32, s43, 2);
  b = input(g, PTC_F32, s5, 1);
  in[0] = a;
  in[1] = b;
  size_t before = ptc_graph_num_values(g);
  CHECK(ptc_graph_num_nodes(g) == 0 && before == 2); /* failed adds leave no trace */
  ptc_value one[1] = {a};
  CHECK_OK(ptc_graph_add_node(g, "relu", one, 1, NULL, 0, out, 1, &n));
  CHECK(n == 1 && out[0] == 2 && ptc_graph_num_nodes(g) == 1);
  /* capacity too small reports the needed count */
  ptc_attr chunks[2] = {ptc_attr_int("chunks", 2), ptc_attr_int("dim", 0)};
  CHECK_ERR(ptc_graph_add_node(g, "chunk", one, 1, chunks, 2, out, 1, &n), PTC_CODE_OUT_OF_RANGE,
            "max_outputs");
  CHECK(n == 2);
  CHECK_OK(ptc_graph_add_node(g, "chunk", one, 1, chunks, 2, out, 4, &n));
  CHECK(n == 2);
  /* dtype validation */
  int64_t s3[1] = {3};
  ptc_value fi[2] = {input(g, PTC_F32, s3, 1), input(g, PTC_F32, s3, 1)};
  CHECK_ERR(ptc_graph_add_node(g, "bitwise_and", fi, 2, NULL, 0, out, 4, &n),
            PTC_CODE_INVALID_ARGUMENT, "bitwise_and");
  ptc_graph_destroy(g);
}

static void test_symbolic_meta(void) {
  ptc_graph* g = new_graph();
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 5;
  ptc_sym s0, s1;
  CHECK_OK(ptc_graph_add_symbol(g, "s0", &o, &s0));
  o.hint = 7;
  CHECK_OK(ptc_graph_add_symbol(g, "s1", &o, &s1));
  ptc_dim d0[2] = {{5, s0, 0}, {4, 0, 0}}, d1[2] = {{7, s1, 0}, {4, 0, 0}};
  ptc_value x, y, out[2];
  size_t n;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, d0, 2, NULL, &x));
  CHECK_OK(ptc_graph_add_input(g, "y", PTC_F32, d1, 2, NULL, &y));
  ptc_value xy[2] = {x, y};
  ptc_attr dim0 = ptc_attr_int("dim", 0);
  CHECK_OK(ptc_graph_add_node(g, "cat", xy, 2, &dim0, 1, out, 1, &n));
  char buf[128];
  sym_text(g, out[0], 0, buf, sizeof buf);
  CHECK(strcmp(buf, "s0 + s1") == 0);
  if (strcmp(buf, "s0 + s1")) printf("  cat dim 0 is '%s'\n", buf);
  sym_text(g, out[0], 1, buf, sizeof buf);
  CHECK(strcmp(buf, "4") == 0);
  /* reshape(x[s0, s1-ish], [-1]) -> numel */
  ptc_dim d2[2] = {{5, s0, 0}, {7, s1, 0}};
  ptc_value z;
  CHECK_OK(ptc_graph_add_input(g, "z", PTC_F32, d2, 2, NULL, &z));
  int64_t m1 = -1;
  ptc_attr size = ptc_attr_ints("size", &m1, 1);
  CHECK_OK(ptc_graph_add_node(g, "reshape", &z, 1, &size, 1, out, 1, &n));
  sym_text(g, out[0], 0, buf, sizeof buf);
  CHECK(strcmp(buf, "s0*s1") == 0);
  if (strcmp(buf, "s0*s1")) printf("  reshape is '%s'\n", buf);
  /* broadcasting s0 with s1 records a guard */
  CHECK(ptc_graph_num_guards(g) == 0);
  ptc_dim e0[1] = {{5, s0, 0}}, e1[1] = {{7, s1, 0}};
  ptc_value p, q;
  CHECK_OK(ptc_graph_add_input(g, "p", PTC_F32, e0, 1, NULL, &p));
  CHECK_OK(ptc_graph_add_input(g, "q", PTC_F32, e1, 1, NULL, &q));
  ptc_value pq[2] = {p, q};
  /* hints differ (5 vs 7): broadcasting is an error, decided by a guard */
  CHECK_ERR(ptc_graph_add_node(g, "add", pq, 2, NULL, 0, out, 1, &n), PTC_CODE_INVALID_ARGUMENT,
            "cannot broadcast");
  CHECK(ptc_graph_num_guards(g) == 0); /* the failed node leaves no guard behind */
  /* equal hints: broadcasting succeeds under the guard s0 == s2 */
  ptc_sym s2;
  o.hint = 5;
  CHECK_OK(ptc_graph_add_symbol(g, "s2", &o, &s2));
  ptc_dim e2[1] = {{5, s2, 0}};
  ptc_value r;
  CHECK_OK(ptc_graph_add_input(g, "r", PTC_F32, e2, 1, NULL, &r));
  ptc_value pr[2] = {p, r};
  CHECK_OK(ptc_graph_add_node(g, "add", pr, 2, NULL, 0, out, 1, &n));
  CHECK(ptc_graph_num_guards(g) == 1);
  ptc_graph_guard_format(g, 0, buf, sizeof buf);
  CHECK(strstr(buf, "s0") && strstr(buf, "s2") && strstr(buf, "=="));
  printf("  guard recorded: %s\n", buf);
  ptc_graph_destroy(g);
}

static void test_print_and_registry(void) {
  ptc_graph* g = new_graph();
  int64_t s[2] = {2, 3};
  ptc_value x = input(g, PTC_F32, s, 2), out[1];
  size_t n;
  CHECK_OK(ptc_graph_add_node(g, "relu", &x, 1, NULL, 0, out, 1, &n));
  CHECK_OK(ptc_graph_add_output(g, out[0]));
  size_t need = 0;
  ptc_status st = ptc_graph_format(g, NULL, 0, &need);
  CHECK(need > 0);
  ptc_status_destroy(st);
  char* buf = malloc(need + 1);
  CHECK_OK(ptc_graph_format(g, buf, need + 1, &need));
  CHECK(strstr(buf, "relu") != NULL && strstr(buf, "placeholder") != NULL);
  free(buf);
  ptc_graph_destroy(g);
  size_t count = ptc_op_count();
  printf("  registry: %zu ops\n", count);
  CHECK(count >= 120);
  CHECK(ptc_op_name(count) == NULL);
  for (size_t i = 0; i < count; i++)
    for (size_t j = i + 1; j < count; j++) CHECK(strcmp(ptc_op_name(i), ptc_op_name(j)) != 0);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  test_create_and_nulls();
  test_symbols();
  test_inputs_constants();
  test_node_validation();
  test_symbolic_meta();
  test_print_and_registry();
  ptc_context_release(ctx);
  return check_summary("test_graph");
}
