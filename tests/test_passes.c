/* test_passes.c - graph passes: dead-code elimination (unused nodes and
 * constants removed, inputs and outputs kept, ids renumbered densely), CSE
 * (duplicates merged, different attributes and random ops kept), constant
 * folding (a constant-only chain becomes one constant with the right values,
 * random ops and input-dependent nodes stay), and the folded graph computing
 * the same outputs as the original. */
#include "lib/graph/op.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static ptc_value node1(ptc_graph* g, const char* op, const ptc_value* in, size_t n,
                       const ptc_attr* a, size_t na) {
  ptc_value out = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_node(g, op, in, n, a, na, &out, 1, NULL));
  return out;
}

static ptc_value input(ptc_graph* g, const char* name, int64_t n) {
  ptc_dim d = {n, 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, name, PTC_F32, &d, 1, NULL, &v));
  return v;
}

static ptc_value constant(ptc_graph* g, const char* name, const float* data, int64_t n) {
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_constant(g, name, PTC_F32, &n, 1, data, PTC_CONSTANT_COPY, &v));
  return v;
}

static const char* op_of(const ptc_graph* g, size_t node) {
  return graph_node(g, node)->op->name;
}

static void test_dce(ptc_context* ctx) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_value x = input(g, "x", 3);
  float cd[3] = {1, 2, 3};
  ptc_value unused_c = constant(g, "unused", cd, 3);
  ptc_value y = input(g, "y", 3); /* unused input: kept */
  ptc_value dead = node1(g, "neg", &x, 1, NULL, 0);
  ptc_value dead2 = node1(g, "add", (ptc_value[]){dead, unused_c}, 2, NULL, 0);
  ptc_value r = node1(g, "relu", &x, 1, NULL, 0);
  (void)dead2;
  CHECK_OK(ptc_graph_add_output(g, r));
  CHECK_OK(ptc_graph_add_output(g, x));
  size_t removed = 99;
  CHECK_OK(ptc_graph_eliminate_dead_code(g, &removed));
  CHECK(removed == 2);
  CHECK(ptc_graph_num_nodes(g) == 1);
  CHECK(ptc_graph_num_values(g) == 3); /* x, y, relu */
  CHECK(ptc_graph_num_inputs(g) == 2);
  CHECK(ptc_graph_input(g, 0) == 0 && ptc_graph_input(g, 1) == 1);
  (void)y;
  CHECK(ptc_graph_output(g, 0) == 2 && ptc_graph_output(g, 1) == 0);
  if (ptc_graph_num_nodes(g) == 1) {
    const gnode* n = graph_node(g, 0);
    CHECK(strcmp(op_of(g, 0), "relu") == 0);
    CHECK(n->in[0] == 0 && n->out[0] == 2);
    CHECK(graph_value(g, 2)->node == 0);
  }
  /* a second run removes nothing */
  CHECK_OK(ptc_graph_eliminate_dead_code(g, &removed));
  CHECK(removed == 0);
  ptc_status s = ptc_graph_eliminate_dead_code(NULL, &removed);
  CHECK(ptc_status_code(s) == PTC_CODE_INVALID_ARGUMENT);
  ptc_status_destroy(s);
  ptc_graph_destroy(g);
}

static void test_cse(ptc_context* ctx) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_value x = input(g, "x", 4), y = input(g, "y", 4);
  ptc_value a1 = node1(g, "add", (ptc_value[]){x, y}, 2, NULL, 0);
  ptc_value a2 = node1(g, "add", (ptc_value[]){x, y}, 2, NULL, 0);
  ptc_attr alpha = ptc_attr_float("alpha", 2.0);
  ptc_value a3 = node1(g, "add", (ptc_value[]){x, y}, 2, &alpha, 1); /* differs */
  ptc_value r1 = node1(g, "relu", &a1, 1, NULL, 0);
  ptc_value r2 = node1(g, "relu", &a2, 1, NULL, 0); /* same after merging a2 */
  int64_t four = 4;
  ptc_attr size = ptc_attr_ints("size", &four, 1);
  ptc_value n1 = node1(g, "rand", NULL, 0, &size, 1);
  ptc_value n2 = node1(g, "rand", NULL, 0, &size, 1); /* random: never merged */
  ptc_value m = node1(g, "mul", (ptc_value[]){r1, r2}, 2, NULL, 0);
  ptc_value m2 = node1(g, "mul", (ptc_value[]){n1, n2}, 2, NULL, 0);
  ptc_value m3 = node1(g, "add", (ptc_value[]){m, a3}, 2, NULL, 0);
  CHECK_OK(ptc_graph_add_output(g, m3));
  CHECK_OK(ptc_graph_add_output(g, m2));
  CHECK_OK(ptc_graph_add_output(g, r2));
  size_t before = ptc_graph_num_nodes(g), merged = 0;
  CHECK_OK(ptc_graph_eliminate_common_subexpressions(g, &merged));
  CHECK(merged == 2);
  CHECK(ptc_graph_num_nodes(g) == before - 2);
  size_t n_rand = 0, n_relu = 0;
  for (size_t i = 0; i < ptc_graph_num_nodes(g); i++) {
    n_rand += strcmp(op_of(g, i), "rand") == 0;
    n_relu += strcmp(op_of(g, i), "relu") == 0;
  }
  CHECK(n_rand == 2 && n_relu == 1);
  /* the output that was r2 now names the surviving relu, also used by mul twice */
  ptc_value out2 = ptc_graph_output(g, 2);
  CHECK(out2 < ptc_graph_num_values(g) && graph_value(g, out2)->kind == PTC_VALUE_NODE);
  for (size_t i = 0; i < ptc_graph_num_nodes(g); i++) {
    const gnode* n = graph_node(g, i);
    if (strcmp(op_of(g, i), "mul") == 0 && n->in[0] == out2) CHECK(n->in[1] == out2);
  }
  CHECK_OK(ptc_graph_eliminate_common_subexpressions(g, &merged));
  CHECK(merged == 0);
  ptc_graph_destroy(g);
}

/* Runs g on the given 1-D f32 inputs; copies output 0 (n floats) into out. */
static bool run_ref(ptc_context* ctx, const ptc_graph* g, float* in0, int64_t n_in0, float* out,
                    int64_t n) {
  ptc_executable* exe = NULL;
  ptc_results* r = NULL;
  ptc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = in0;
  t.device.device_type = PTC_DEVICE_CPU;
  t.ndim = 1;
  t.dtype = ptc_dtype_to_dl(PTC_F32);
  t.shape = &n_in0;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  if (exe) CHECK_OK(ptc_executable_run_alloc(exe, &t, 1, NULL, &r));
  const ptc_tensor* o = ptc_results_get(r, 0);
  bool ok = o && o->ndim == 1 && o->shape[0] == n;
  if (ok) memcpy(out, o->data, (size_t)n * sizeof(float));
  ptc_results_destroy(r);
  ptc_executable_release(exe);
  return ok;
}

static void test_fold(ptc_context* ctx) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_value x = input(g, "x", 3);
  float c1d[3] = {1, 2, 3}, c2d[3] = {10, 20, 30};
  ptc_value c1 = constant(g, "c1", c1d, 3), c2 = constant(g, "c2", c2d, 3);
  ptc_value s = node1(g, "add", (ptc_value[]){c1, c2}, 2, NULL, 0); /* 11 22 33 */
  ptc_value m = node1(g, "mul", (ptc_value[]){s, c2}, 2, NULL, 0);  /* 110 440 990 */
  ptc_value y = node1(g, "add", (ptc_value[]){x, m}, 2, NULL, 0);   /* depends on x */
  int64_t three = 3;
  ptc_attr size = ptc_attr_ints("size", &three, 1);
  ptc_value rn = node1(g, "rand", NULL, 0, &size, 1);
  ptc_value z = node1(g, "add", (ptc_value[]){rn, c1}, 2, NULL, 0); /* random input */
  ptc_value n = node1(g, "neg", &c1, 1, NULL, 0);                   /* unused: folded, dropped */
  (void)n;
  CHECK_OK(ptc_graph_add_output(g, y));
  CHECK_OK(ptc_graph_add_output(g, z));
  float xin[3] = {0.5f, -1, 2}, before[3] = {0}, after[3] = {0};
  CHECK(run_ref(ctx, g, xin, 3, before, 3));
  size_t folded = 0;
  CHECK_OK(ptc_graph_fold_constants(g, 0, &folded));
  CHECK(folded == 3);
  /* remaining: add(x, const), rand, add(rand, c1) */
  CHECK(ptc_graph_num_nodes(g) == 3);
  const gvalue* cv = NULL;
  for (size_t i = 0; i < ptc_graph_num_nodes(g); i++) {
    const gnode* nd = graph_node(g, i);
    if (strcmp(op_of(g, i), "add") == 0 && graph_value(g, nd->in[0])->kind == PTC_VALUE_INPUT)
      cv = graph_value(g, nd->in[1]);
  }
  CHECK(cv && cv->kind == PTC_VALUE_CONSTANT && cv->nbytes == 12 && cv->owned);
  if (cv && cv->nbytes == 12) {
    const float* d = cv->data;
    CHECK(d[0] == 110 && d[1] == 440 && d[2] == 990);
  }
  CHECK(run_ref(ctx, g, xin, 3, after, 3));
  CHECK(memcmp(before, after, sizeof before) == 0);
  CHECK(after[0] == 110.5f && after[1] == 439 && after[2] == 992);
  /* nothing more to fold; max_bytes limits what folds */
  CHECK_OK(ptc_graph_fold_constants(g, 0, &folded));
  CHECK(folded == 0);
  ptc_graph_destroy(g);

  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  c1 = constant(g, "c1", c1d, 3);
  s = node1(g, "neg", &c1, 1, NULL, 0);
  CHECK_OK(ptc_graph_add_output(g, s));
  CHECK_OK(ptc_graph_fold_constants(g, 8, &folded)); /* 12-byte output > 8 */
  CHECK(folded == 0 && ptc_graph_num_nodes(g) == 1);
  CHECK_OK(ptc_graph_fold_constants(g, 12, &folded));
  CHECK(folded == 1 && ptc_graph_num_nodes(g) == 0 && ptc_graph_num_values(g) == 1);
  ptc_value o = ptc_graph_output(g, 0);
  if (o < ptc_graph_num_values(g)) {
    const float* d = graph_value(g, o)->data;
    CHECK(d && d[0] == -1 && d[1] == -2 && d[2] == -3);
  }
  ptc_graph_destroy(g);
}

int main(void) {
  ptc_context* ctx = NULL;
  CHECK_OK(ptc_context_create(NULL, &ctx));
  if (!ctx) return 1;
  test_dce(ctx);
  test_cse(ctx);
  test_fold(ctx);
  ptc_context_release(ctx);
  return check_summary("test_passes");
}
