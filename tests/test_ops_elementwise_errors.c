/* test_ops_elementwise_errors.c - error paths of the elementwise family's
 * meta functions (wrong dtypes, missing or conflicting operands, bad
 * attribute values; each message names the op and the problem), symbolic
 * output shapes (broadcasting with guards, full/eye with symbolic sizes), and
 * the data-dependent runtime errors (integer division by zero, bernoulli
 * probabilities outside [0, 1]). */
#include <stdlib.h>

#include "check.h"

static ptc_context* ctx;
static ptc_value out;

static ptc_value in(ptc_graph* g, int32_t dt, const int64_t* shape, size_t rank) {
  ptc_dim d[PTC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) d[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, dt, d, rank, NULL, &v));
  return v;
}

#define SHAPE(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / 8
#define N(a) (sizeof a / sizeof a[0])
/* Adds op on the array `ins` with the attribute array `at` (may be NULL). */
#define ADD(g, op, ins, at, n_at) ptc_graph_add_node(g, op, ins, N(ins), at, n_at, &out, 1, NULL)
#define ADD0(g, op, ins) ADD(g, op, ins, NULL, 0)
#define ADD1(g, op, ins, attr) \
  ptc_graph_add_node(g, op, ins, N(ins), (const ptc_attr[]){attr}, 1, &out, 1, NULL)
#define BAD PTC_CODE_INVALID_ARGUMENT

static void test_binary_errors(ptc_graph* g) {
  ptc_value x = in(g, PTC_F32, SHAPE(3, 4)), y = in(g, PTC_F32, SHAPE(5));
  ptc_value xi = in(g, PTC_I64, SHAPE(3, 4)), xb = in(g, PTC_BOOL, SHAPE(3, 4));
  ptc_value xy[] = {x, y}, xx[] = {x, x}, xix[] = {xi, x}, bb[] = {xb, xb}, one[] = {x};
  ptc_value ii[] = {xi, xi}, onei[] = {xi};
  CHECK_ERR(ADD0(g, "add", xy), BAD, "add: cannot broadcast [3, 4] with [5]");
  CHECK_ERR(ADD0(g, "bitwise_and", xx), BAD,
            "bitwise_and: argument 'self' must be a bool or integer tensor, got f32");
  CHECK_ERR(ADD0(g, "bitwise_or", xix), BAD, "bitwise_or: argument 'other'");
  CHECK_ERR(ADD1(g, "bitwise_xor", onei, ptc_attr_float("other", 2.5)), BAD,
            "bitwise_xor: attribute 'other' must be an integer or bool");
  CHECK_ERR(ADD0(g, "sub", bb), BAD, "sub: subtraction with a bool tensor is not supported");
  CHECK_ERR(ADD1(g, "sub", ((ptc_value[]){xb}), ptc_attr_int("other", 1)), BAD, "sub: subtraction");
  CHECK_ERR(ADD0(g, "add", one), BAD, "add: missing second operand");
  CHECK_ERR(ADD1(g, "mul", xx, ptc_attr_float("other", 2.0)), BAD, "mul: give the second operand");
  CHECK_ERR(ADD1(g, "add", ii, ptc_attr_float("alpha", 0.5)), BAD,
            "add: for integral input tensors, attribute 'alpha'");
  CHECK_ERR(ADD1(g, "div", xx, ptc_attr_string("rounding_mode", "ceil")), BAD,
            "div: attribute 'rounding_mode' must be \"trunc\" or \"floor\", got \"ceil\"");
  CHECK_ERR(ADD1(g, "div", bb, ptc_attr_string("rounding_mode", "floor")), BAD,
            "div: not supported for bool operands");
  CHECK_ERR(ADD0(g, "remainder", bb), BAD, "remainder: not supported for bool");
  CHECK_ERR(ADD1(g, "pow", onei, ptc_attr_int("other", -1)), BAD,
            "pow: integers to negative integer powers are not allowed");
  CHECK_ERR(ADD1(g, "add", one, ptc_attr_string("other", "2")), BAD,
            "add: attribute 'other': expected float, got string");
  CHECK_ERR(ADD1(g, "eq", one, ptc_attr_int("alpha", 2)), BAD, "eq: unknown attribute 'alpha'");
  ptc_value three[] = {x, x, x};
  CHECK_ERR(ADD0(g, "add", three), BAD, "add: expected 1 to 2 inputs, got 3");
  /* successes: promotion and broadcasting */
  ptc_value r0 = in(g, PTC_F64, NULL, 0), xr0[] = {x, r0};
  CHECK_OK(ADD0(g, "add", xr0));
  ptc_value_info vi = {sizeof vi, 0, 0, 0, 0, NULL, NULL, NULL};
  CHECK_OK(ptc_graph_value_info(g, out, &vi));
  CHECK(vi.dtype == PTC_F32 && vi.rank == 2);
  CHECK_OK(ADD0(g, "lt", xix));
  CHECK_OK(ptc_graph_value_info(g, out, &vi));
  CHECK(vi.dtype == PTC_BOOL);
  CHECK_OK(ADD1(g, "div", onei, ptc_attr_int("other", 2)));
  CHECK_OK(ptc_graph_value_info(g, out, &vi));
  CHECK(vi.dtype == PTC_F32);
}

static void test_unary_and_misc_errors(ptc_graph* g) {
  ptc_value x = in(g, PTC_F32, SHAPE(3, 4)), xi = in(g, PTC_I64, SHAPE(3, 4));
  ptc_value xb = in(g, PTC_BOOL, SHAPE(3, 4)), v1 = in(g, PTC_F32, SHAPE(2));
  ptc_value i8 = in(g, PTC_I8, SHAPE(3));
  ptc_value one[] = {x}, onei[] = {xi}, oneb[] = {xb}, two[] = {x, x};
  CHECK_ERR(ADD0(g, "gelu", onei), BAD,
            "gelu: argument 'input' must be a floating tensor, got i64");
  CHECK_ERR(ADD1(g, "gelu", one, ptc_attr_string("approximate", "fast")), BAD,
            "gelu: attribute 'approximate' must be \"none\" or \"tanh\"");
  CHECK_ERR(ADD0(g, "neg", oneb), BAD, "neg: argument 'input' must be an integer or floating");
  CHECK_ERR(ADD0(g, "silu", oneb), BAD, "silu: argument 'input' must be a floating tensor");
  CHECK_ERR(ADD1(g, "round", onei, ptc_attr_int("decimals", 2)), BAD,
            "round: argument 'input' must be a floating tensor, got i64");
  CHECK_ERR(ADD0(g, "exp", two), BAD, "exp: expected 1 inputs, got 2");
  ptc_value absent[] = {PTC_VALUE_NONE}, absent2[] = {x, PTC_VALUE_NONE};
  CHECK_ERR(ADD0(g, "exp", absent), BAD, "exp: argument 'input' (input 0) is required");
  CHECK_ERR(ADD1(g, "to_dtype", absent, ptc_attr_dtype("dtype", PTC_F64)), BAD,
            "to_dtype: argument 'self' (input 0) is required");
  CHECK_ERR(ADD0(g, "dropout", absent), BAD, "dropout: argument 'input' (input 0) is required");
  CHECK_ERR(ADD1(g, "fill", absent, ptc_attr_int("value", 1)), BAD, "fill: argument 'self'");
  CHECK_ERR(ADD0(g, "bernoulli", absent), BAD, "bernoulli: argument 'input'");
  CHECK_ERR(ADD0(g, "add", absent2), BAD, "add: missing second operand");
  CHECK_ERR(ADD1(g, "masked_fill", absent2, ptc_attr_int("value", 1)), BAD,
            "masked_fill: argument 'mask' (input 1) is required");
  /* where */
  ptc_value wi[] = {xi, x, x}, wok[] = {xb, xi, x};
  ptc_value wn[] = {xb, x, PTC_VALUE_NONE};
  CHECK_ERR(ADD0(g, "where", wn), BAD, "where: argument 'other' (input 2) is required");
  CHECK_ERR(ADD0(g, "where", wi), BAD,
            "where: argument 'condition' must be a bool tensor, got i64");
  CHECK_OK(ADD0(g, "where", wok));
  /* clamp */
  CHECK_ERR(ADD0(g, "clamp", one), BAD, "clamp: at least one of 'min' or 'max' must be given");
  CHECK_ERR(ADD1(g, "clamp", ((ptc_value[]){i8}), ptc_attr_int("max", 300)), BAD,
            "clamp: 'max' value 300 cannot be converted to i8");
  ptc_value cl[] = {x, x};
  CHECK_ERR(ADD1(g, "clamp", cl, ptc_attr_float("min", 0.0)), BAD,
            "clamp: 'min' given both as attribute and as input 1");
  /* masked_fill */
  ptc_value mf_bad[] = {x, xi}, mf[] = {x, xb}, mf_v1[] = {x, xb, v1};
  CHECK_ERR(ADD1(g, "masked_fill", mf_bad, ptc_attr_float("value", 1)), BAD,
            "masked_fill: argument 'mask' must be a bool tensor, got i64");
  CHECK_ERR(ADD0(g, "masked_fill", mf), BAD, "masked_fill: give the fill value");
  CHECK_ERR(ADD0(g, "masked_fill", mf_v1), BAD,
            "masked_fill: the value tensor must be 0-dimensional, got rank 1");
  /* to_dtype, dropout */
  CHECK_ERR(ADD0(g, "to_dtype", one), BAD, "to_dtype: missing required attribute 'dtype'");
  CHECK_ERR(ADD1(g, "to_dtype", one, ptc_attr_dtype("dtype", 42)), BAD, "invalid dtype 42");
  CHECK_ERR(ADD1(g, "dropout", one, ptc_attr_bool("train", 1)), BAD,
            "dropout: training mode is not supported");
  CHECK_ERR(ADD1(g, "dropout", one, ptc_attr_float("p", 1.5)), BAD,
            "dropout: dropout probability has to be between 0 and 1, but got 1.5");
}

static void test_creation_errors(ptc_graph* g) {
  int64_t neg[] = {2, -3};
  ptc_attr full_neg[] = {ptc_attr_ints("size", neg, 2), ptc_attr_float("fill_value", 1)};
  CHECK_ERR(ptc_graph_add_node(g, "full", NULL, 0, full_neg, 2, &out, 1, NULL), BAD,
            "full: attribute 'size' element 1 must be non-negative, got -3");
  ptc_attr size2 = ptc_attr_ints("size", neg, 1);
  CHECK_ERR(ptc_graph_add_node(g, "full", NULL, 0, &size2, 1, &out, 1, NULL), BAD,
            "full: missing required attribute 'fill_value'");
  int64_t big[17] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  ptc_attr z17 = ptc_attr_ints("size", big, 17);
  CHECK_ERR(ptc_graph_add_node(g, "zeros", NULL, 0, &z17, 1, &out, 1, NULL), BAD,
            "zeros: attribute 'size' has 17 dimensions");
  ptc_attr ar0[] = {ptc_attr_int("end", 5), ptc_attr_int("step", 0)};
  CHECK_ERR(ptc_graph_add_node(g, "arange", NULL, 0, ar0, 2, &out, 1, NULL), BAD,
            "arange: step must be nonzero");
  ptc_attr ar_sign[] = {ptc_attr_int("start", 5), ptc_attr_int("end", 0)};
  CHECK_ERR(ptc_graph_add_node(g, "arange", NULL, 0, ar_sign, 2, &out, 1, NULL), BAD,
            "arange: upper bound and larger bound inconsistent with step sign");
  ptc_attr ar_nan[] = {ptc_attr_float("end", 0.0 / 0.0)};
  CHECK_ERR(ptc_graph_add_node(g, "arange", NULL, 0, ar_nan, 1, &out, 1, NULL), BAD,
            "arange: unsupported range");
  ptc_attr ar_frac[] = {ptc_attr_float("end", 0.5), ptc_attr_float("step", 0.25),
                        ptc_attr_dtype("dtype", PTC_I64)};
  CHECK_ERR(ptc_graph_add_node(g, "arange", NULL, 0, ar_frac, 3, &out, 1, NULL), BAD,
            "arange: step must be nonzero");
  ptc_attr eye_neg = ptc_attr_int("n", -1);
  CHECK_ERR(ptc_graph_add_node(g, "eye", NULL, 0, &eye_neg, 1, &out, 1, NULL), BAD,
            "eye: 'n' must be greater or equal to 0, got -1");
  int64_t s3[] = {3};
  ptc_attr rand_i[] = {ptc_attr_ints("size", s3, 1), ptc_attr_dtype("dtype", PTC_I64)};
  CHECK_ERR(ptc_graph_add_node(g, "rand", NULL, 0, rand_i, 2, &out, 1, NULL), BAD,
            "rand: attribute 'dtype' must be a floating dtype, got i64");
  ptc_value xi = in(g, PTC_I64, SHAPE(3)), x = in(g, PTC_F32, SHAPE(3));
  ptc_value bi[] = {xi}, bx[] = {x};
  CHECK_ERR(ADD0(g, "bernoulli", bi), BAD,
            "bernoulli: argument 'input' must be a floating tensor, got i64");
  CHECK_ERR(ADD1(g, "bernoulli", bx, ptc_attr_float("p", 2.0)), BAD,
            "bernoulli: attribute 'p' must be in [0, 1], got 2");
  CHECK_OK(ADD1(g, "bernoulli", bi, ptc_attr_float("p", 0.5)));
  CHECK_ERR(ADD0(g, "zeros", bx), BAD, "zeros: expected 0 inputs, got 1");
}

/* Symbolic sizes: broadcasting records a guard; creation ops take symbolic
 * sizes. */
static void test_symbolic(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 8;
  ptc_sym s0 = 0, s1 = 0;
  CHECK_OK(ptc_graph_add_symbol(g, "s0", &o, &s0));
  CHECK_OK(ptc_graph_add_symbol(g, "s1", &o, &s1));
  ptc_value a, b;
  ptc_dim da[] = {{0, s0, 0}, {4, 0, 0}}, db[] = {{0, s1, 0}, {1, 0, 0}};
  CHECK_OK(ptc_graph_add_input(g, "a", PTC_F32, da, 2, NULL, &a));
  CHECK_OK(ptc_graph_add_input(g, "b", PTC_I32, db, 2, NULL, &b));
  ptc_value ab[] = {a, b};
  CHECK_OK(ADD0(g, "mul", ab));
  ptc_value_info vi = {sizeof vi, 0, 0, 0, 0, NULL, NULL, NULL};
  CHECK_OK(ptc_graph_value_info(g, out, &vi));
  CHECK(vi.dtype == PTC_F32 && vi.rank == 2 && vi.shape[1].value == 4);
  CHECK(ptc_graph_num_guards(g) == 1);
  ptc_attr full[] = {(ptc_attr){"size", PTC_ATTR_INTS, 0, 0, 0.0, (const int64_t[]){0, 3},
                                (const ptc_sym[]){s0, 0}, NULL, 2, NULL},
                     ptc_attr_int("fill_value", 7)};
  CHECK_OK(ptc_graph_add_node(g, "full", NULL, 0, full, 2, &out, 1, NULL));
  CHECK_OK(ptc_graph_value_info(g, out, &vi));
  CHECK(vi.dtype == PTC_I64 && vi.rank == 2 && vi.shape[0].sym == s0 && vi.shape[1].value == 3);
  ptc_attr eye = {"n", PTC_ATTR_SYM, s1, 0, 0.0, NULL, NULL, NULL, 0, NULL};
  CHECK_OK(ptc_graph_add_node(g, "eye", NULL, 0, &eye, 1, &out, 1, NULL));
  CHECK_OK(ptc_graph_value_info(g, out, &vi));
  CHECK(vi.rank == 2 && vi.shape[0].sym == s1 && vi.shape[1].sym == s1);
  ptc_graph_destroy(g);
}

/* Runs a one-node graph on a 1-D input and returns the status. */
static ptc_status run_one(const char* op, int32_t dt, void* data, int64_t n, const ptc_attr* at,
                          size_t n_at) {
  ptc_graph* g = NULL;
  ptc_executable* exe = NULL;
  ptc_results* res = NULL;
  ptc_status s = ptc_graph_create(ctx, &g);
  ptc_value x = PTC_VALUE_NONE, y = PTC_VALUE_NONE;
  ptc_dim d = {n, 0, 0};
  if (!s) s = ptc_graph_add_input(g, "x", dt, &d, 1, NULL, &x);
  if (!s) s = ptc_graph_add_node(g, op, &x, 1, at, n_at, &y, 1, NULL);
  if (!s) s = ptc_graph_add_output(g, y);
  if (!s) s = ptc_compile(ctx, g, NULL, &exe);
  int64_t shape[1] = {n};
  ptc_tensor t = {data, {PTC_DEVICE_CPU, 0}, 1, ptc_dtype_to_dl(dt), shape, NULL, 0};
  if (!s) s = ptc_executable_run_alloc(exe, &t, 1, NULL, &res);
  ptc_results_destroy(res);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
  return s;
}

static void test_runtime_errors(void) {
  int64_t xi[] = {4, -3, 5};
  ptc_attr zero[] = {ptc_attr_int("other", 0), ptc_attr_string("rounding_mode", "floor")};
  CHECK_ERR(run_one("div", PTC_I64, xi, 3, zero, 2), BAD, "div: integer division by zero");
  CHECK_ERR(run_one("remainder", PTC_I64, xi, 3, zero, 1), BAD,
            "remainder: integer division by zero");
  CHECK_OK(run_one("div", PTC_I64, xi, 3, zero, 1)); /* true division: inf */
  float p[] = {0.5f, 1.5f, 0.25f};
  CHECK_ERR(run_one("bernoulli", PTC_F32, p, 3, NULL, 0), BAD,
            "bernoulli: probability must be in [0, 1] (output element 1)");
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  test_binary_errors(g);
  test_unary_and_misc_errors(g);
  test_creation_errors(g);
  ptc_graph_destroy(g);
  test_symbolic();
  test_runtime_errors();
  ptc_context_release(ctx);
  return check_summary("test_ops_elementwise_errors");
}
