/* test_sym_api.c - the public size-arithmetic API (ptc_graph_sym_op,
 * ptc_graph_sym_decide, ptc_graph_sym_static) and output-shape inference
 * (ptc_executable_infer_outputs), as a tracing host uses them. */
#include "check.h"

static ptc_dim dim_c(int64_t v) {
  ptc_dim d = {v, 0, 0};
  return d;
}

static ptc_dim dim_s(ptc_sym s, int64_t hint) {
  ptc_dim d = {hint, s, 0};
  return d;
}

static void test_sym_ops(ptc_graph* g, ptc_sym s0) {
  ptc_dim r;
  CHECK_OK(ptc_graph_sym_op(g, PTC_SYM_MUL, dim_s(s0, 8), dim_c(4), &r));
  CHECK(r.sym != 0 && r.value == 32);
  char buf[64];
  ptc_graph_sym_format(g, r.sym, buf, sizeof buf);
  CHECK(strcmp(buf, "4*s0") == 0 || strcmp(buf, "s0*4") == 0);
  ptc_dim back;
  CHECK_OK(ptc_graph_sym_op(g, PTC_SYM_FLOORDIV, r, dim_c(4), &back));
  CHECK(back.sym == s0 && back.value == 8);
  ptc_dim z;
  CHECK_OK(ptc_graph_sym_op(g, PTC_SYM_SUB, dim_s(s0, 8), dim_s(s0, 8), &z));
  CHECK(z.sym == 0 && z.value == 0);
  ptc_dim c;
  CHECK_OK(ptc_graph_sym_op(g, PTC_SYM_ADD, dim_c(3), dim_c(4), &c));
  CHECK(c.sym == 0 && c.value == 7);
  CHECK_ERR(ptc_graph_sym_op(g, PTC_SYM_FLOORDIV, dim_s(s0, 8), dim_c(0), &c),
            PTC_CODE_INVALID_ARGUMENT, "division by zero");
  CHECK_ERR(ptc_graph_sym_op(g, 99, dim_c(1), dim_c(1), &c), PTC_CODE_INVALID_ARGUMENT,
            "unknown operation");
  CHECK_ERR(ptc_graph_sym_op(g, PTC_SYM_ADD, dim_s(777, 1), dim_c(1), &c),
            PTC_CODE_INVALID_ARGUMENT, "unknown symbol");
}

static void test_sym_decide(ptc_graph* g, ptc_sym s0) {
  size_t guards = ptc_graph_num_guards(g);
  /* static: s0 >= 2 always, so "s0 > 1" records nothing */
  CHECK(ptc_graph_sym_static(g, PTC_SYM_GT, dim_s(s0, 8), dim_c(1)) == 1);
  int r = -1;
  CHECK_OK(ptc_graph_sym_decide(g, PTC_SYM_GT, dim_s(s0, 8), dim_c(1), &r));
  CHECK(r == 1 && ptc_graph_num_guards(g) == guards);
  /* depends on the value: decided from the hint 8, guarded */
  CHECK(ptc_graph_sym_static(g, PTC_SYM_LT, dim_s(s0, 8), dim_c(16)) == -1);
  CHECK_OK(ptc_graph_sym_decide(g, PTC_SYM_LT, dim_s(s0, 8), dim_c(16), &r));
  CHECK(r == 1 && ptc_graph_num_guards(g) == guards + 1);
  CHECK_OK(ptc_graph_sym_decide(g, PTC_SYM_EQ, dim_s(s0, 8), dim_c(5), &r));
  CHECK(r == 0);
  CHECK_ERR(ptc_graph_sym_decide(g, 42, dim_c(1), dim_c(1), &r), PTC_CODE_INVALID_ARGUMENT,
            "unknown relation");
}

/* The guard "s0 < 16" recorded above is checked at run time, and
 * infer_outputs reports shapes (and mismatches) without running. */
static void test_infer(ptc_context* ctx, ptc_graph* g, ptc_value x) {
  ptc_value y;
  size_t n = 0;
  CHECK_OK(ptc_graph_add_node(g, "relu", &x, 1, NULL, 0, &y, 1, &n));
  CHECK_OK(ptc_graph_add_output(g, y));
  ptc_executable* exe = NULL;
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  CHECK_OK(ptc_compile(ctx, g, &o, &exe));
  if (!exe) return;
  float data[15 * 3] = {0};
  int64_t shape[2] = {6, 3};
  ptc_tensor in = {data, {PTC_DEVICE_CPU, 0}, 2, ptc_dtype_to_dl(PTC_F32), shape, NULL, 0};
  int64_t oshape[PTC_MAX_RANK];
  ptc_tensor out = {0};
  out.shape = oshape;
  CHECK_OK(ptc_executable_infer_outputs(exe, &in, 1, &out, 1));
  CHECK(out.ndim == 2 && oshape[0] == 6 && oshape[1] == 3);
  CHECK(ptc_dtype_from_dl(out.dtype) == PTC_F32 && out.device.device_type == PTC_DEVICE_CPU);
  shape[0] = 20; /* violates s0 < 16 */
  CHECK_ERR(ptc_executable_infer_outputs(exe, &in, 1, &out, 1), PTC_CODE_INVALID_ARGUMENT,
            "s0");
  shape[0] = 6;
  shape[1] = 4;
  CHECK_ERR(ptc_executable_infer_outputs(exe, &in, 1, &out, 1), PTC_CODE_INVALID_ARGUMENT,
            "input 0 dim 1: expected 3, got 4");
  out.shape = NULL;
  CHECK_ERR(ptc_executable_infer_outputs(exe, &in, 1, &out, 1), PTC_CODE_INVALID_ARGUMENT,
            "PTC_MAX_RANK");
  ptc_executable_release(exe);
}

int main(void) {
  ptc_context* ctx = NULL;
  CHECK_OK(ptc_context_create(NULL, &ctx));
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  so.hint = 8;
  ptc_sym s0 = 0;
  CHECK_OK(ptc_graph_add_symbol(g, "s0", &so, &s0));
  ptc_dim shape[2] = {dim_s(s0, 8), dim_c(3)};
  ptc_value x;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, shape, 2, NULL, &x));
  test_sym_ops(g, s0);
  test_sym_decide(g, s0);
  test_infer(ctx, g, x);
  ptc_graph_destroy(g);
  ptc_context_release(ctx);
  return check_summary("test_sym_api");
}
