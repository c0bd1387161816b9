/* test_ops_shape_errors.c - the shape family beyond the PyTorch cases:
 * error paths of the meta functions (wrong dtype, rank, sizes, attribute
 * values; each message names the op and the problem), the strides view ops
 * report (compared with PyTorch's), symbolic output shapes (reshape to -1,
 * cat of symbolic sizes, splits under guards...), checked by text and by
 * evaluating the expressions, and run-time index errors. */
#include <stdlib.h>

#include "check.h"
#include "lib/graph/graph.h"

static ptc_context* ctx;
static ptc_value out;

static ptc_value in_strided(ptc_graph* g, int32_t dt, const int64_t* shape, size_t rank,
                            const int64_t* strides) {
  ptc_dim d[PTC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) d[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, dt, d, rank, strides, &v));
  return v;
}

static ptc_value in(ptc_graph* g, int32_t dt, const int64_t* shape, size_t rank) {
  return in_strided(g, dt, shape, rank, NULL);
}

#define L(...) (const int64_t[]){__VA_ARGS__}
#define N(...) sizeof((const int64_t[]){__VA_ARGS__}) / 8
#define SHAPE(...) L(__VA_ARGS__), N(__VA_ARGS__)
#define INTS(name, ...) ptc_attr_ints(name, L(__VA_ARGS__), N(__VA_ARGS__))

/* Adds `op` on one input with attributes. */
static ptc_status add1(ptc_graph* g, const char* op, ptc_value x, const ptc_attr* a, size_t na) {
  return ptc_graph_add_node(g, op, &x, 1, a, na, &out, 1, NULL);
}
static ptc_status addn(ptc_graph* g, const char* op, const ptc_value* x, size_t n,
                       const ptc_attr* a, size_t na) {
  return ptc_graph_add_node(g, op, x, n, a, na, &out, 1, NULL);
}

#define EI PTC_CODE_INVALID_ARGUMENT

static void test_view_errors(ptc_graph* g) {
  ptc_value x = in(g, PTC_F32, SHAPE(4, 6));
  ptc_value xt = in_strided(g, PTC_F32, SHAPE(6, 4), L(1, 6));
  ptc_attr a = INTS("size", -1);
  CHECK_ERR(add1(g, "view", xt, &a, 1), EI,
            "view: view size is not compatible with input tensor's size and stride");
  CHECK_OK(add1(g, "reshape", xt, &a, 1));
  a = INTS("size", 5, 5);
  CHECK_ERR(add1(g, "view", x, &a, 1), EI, "view: shape '[5, 5]' is invalid for input of size 24");
  a = INTS("size", -1, 5);
  CHECK_ERR(add1(g, "view", x, &a, 1), EI, "view: shape '[-1, 5]' is invalid for input of size 24");
  a = INTS("size", -1, -1);
  CHECK_ERR(add1(g, "view", x, &a, 1), EI, "view: only one dimension can be inferred");
  a = INTS("size", 4, -3);
  CHECK_ERR(add1(g, "view", x, &a, 1), EI, "view: invalid shape dimension -3");
  ptc_value z = in(g, PTC_F32, SHAPE(0, 4));
  a = INTS("size", 0, -1);
  CHECK_ERR(add1(g, "view", z, &a, 1), EI, "view: cannot reshape tensor of 0 elements");
  CHECK_ERR(add1(g, "reshape", x, NULL, 0), EI, "reshape: missing required attribute 'shape'");
  CHECK_ERR(add1(g, "view", x, NULL, 0), EI, "view: missing required attribute 'size'");
  ptc_attr fl[] = {ptc_attr_int("start_dim", 1), ptc_attr_int("end_dim", 0)};
  CHECK_ERR(add1(g, "flatten", x, fl, 2), EI, "flatten: start_dim (1) cannot come after end_dim (0)");
  fl[0] = ptc_attr_int("start_dim", 2);
  CHECK_ERR(add1(g, "flatten", x, fl, 1), EI, "flatten: dim 2 is out of range for a tensor of rank 2");
  ptc_attr uf[] = {ptc_attr_int("dim", 1), INTS("sizes", 4, 4)};
  CHECK_ERR(add1(g, "unflatten", x, uf, 2), EI, "unflatten: sizes '[4, 4]' is invalid for input of size 6");
  uf[1] = INTS("sizes", 0);
  uf[1].count = 0;
  CHECK_ERR(add1(g, "unflatten", x, uf, 2), EI, "unflatten: sizes must be non-empty");
  a = INTS("dims", 0, 0);
  CHECK_ERR(add1(g, "permute", x, &a, 1), EI, "permute: repeated dim 0 in dims");
  a = INTS("dims", 1, 0, 2);
  CHECK_ERR(add1(g, "permute", x, &a, 1), EI, "permute: the number of dims (3) does not match");
  ptc_attr tr[] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 2)};
  CHECK_ERR(add1(g, "transpose", x, tr, 2), EI, "transpose: dim 2 is out of range");
  a = INTS("size", 4, 5);
  CHECK_ERR(add1(g, "expand", x, &a, 1), EI,
            "expand: the expanded size of the tensor (5) must match the existing size (6) at "
            "non-singleton dimension 1");
  a = INTS("size", 6);
  CHECK_ERR(add1(g, "expand", x, &a, 1), EI, "expand: the number of sizes provided (1)");
  a = INTS("size", -1, 4, 6);
  CHECK_ERR(add1(g, "expand", x, &a, 1), EI, "expand: the expanded size -1 is not allowed");
  a = ptc_attr_int("dim", 3);
  CHECK_ERR(add1(g, "unsqueeze", x, &a, 1), EI, "unsqueeze: dim 3 is out of range");
  a = INTS("dim", -3);
  CHECK_ERR(add1(g, "squeeze", x, &a, 1), EI, "squeeze: dim -3 is out of range");
  ptc_value bad = PTC_VALUE_NONE;
  CHECK_ERR(add1(g, "contiguous", bad, NULL, 0), EI, "contiguous: argument 'self' is required");
}

static void test_slice_errors(ptc_graph* g) {
  ptc_value x = in(g, PTC_F32, SHAPE(4, 6)), s = in(g, PTC_F32, NULL, 0);
  ptc_attr a[] = {ptc_attr_int("dim", 1), ptc_attr_int("step", 0)};
  CHECK_ERR(add1(g, "slice", x, a, 2), EI, "slice: slice step must be positive, got 0");
  CHECK_ERR(add1(g, "slice", s, a, 1), EI, "slice: cannot be applied to a 0-dim tensor");
  ptc_attr se[] = {ptc_attr_int("dim", 0), ptc_attr_int("index", 4)};
  CHECK_ERR(add1(g, "select", x, se, 2), EI,
            "select: index 4 out of range for tensor of size [4, 6] at dimension 0");
  se[1] = ptc_attr_int("index", -5);
  CHECK_ERR(add1(g, "select", x, se, 2), EI, "select: index -5 out of range");
  se[1] = ptc_attr_int("index", -4);
  CHECK_OK(add1(g, "select", x, se, 2));
  ptc_attr na[] = {ptc_attr_int("dim", 0), ptc_attr_int("start", 3), ptc_attr_int("length", 2)};
  CHECK_ERR(add1(g, "narrow", x, na, 3), EI, "narrow: start (3) + length (2) exceeds dimension size (4)");
  na[2] = ptc_attr_int("length", -1);
  CHECK_ERR(add1(g, "narrow", x, na, 3), EI, "narrow: length must be non-negative");
  na[1] = ptc_attr_int("start", -5);
  na[2] = ptc_attr_int("length", 1);
  CHECK_ERR(add1(g, "narrow", x, na, 3), EI, "narrow: start out of range");
  ptc_attr as[] = {INTS("size", 3, 3), INTS("stride", 6, 1), ptc_attr_int("storage_offset", 10)};
  CHECK_ERR(add1(g, "as_strided", x, as, 3), EI,
            "as_strided: the view reaches element 24 but the input spans 24 elements");
  as[2] = ptc_attr_int("storage_offset", 6);
  CHECK_OK(add1(g, "as_strided", x, as, 3));
  as[1] = INTS("stride", 6);
  CHECK_ERR(add1(g, "as_strided", x, as, 3), EI, "as_strided: mismatch in length of strides");
  as[1] = INTS("stride", -1, 1);
  CHECK_ERR(add1(g, "as_strided", x, as, 3), EI, "as_strided: negative strides are not supported");
}

static void test_join_errors(ptc_graph* g) {
  ptc_value a = in(g, PTC_F32, SHAPE(2, 3)), b = in(g, PTC_F32, SHAPE(2, 4));
  ptc_value c = in(g, PTC_F32, SHAPE(2, 3, 1)), s = in(g, PTC_F32, NULL, 0);
  ptc_value ab[] = {a, b}, ac[] = {a, c}, as[] = {a, s}, an[] = {a, PTC_VALUE_NONE};
  CHECK_ERR(addn(g, "cat", ab, 2, NULL, 0), EI,
            "cat: sizes of tensors must match except in dimension 0 (input 1, dimension 1)");
  ptc_attr d1 = ptc_attr_int("dim", 1);
  CHECK_OK(addn(g, "cat", ab, 2, &d1, 1));
  CHECK_ERR(addn(g, "cat", ac, 2, NULL, 0), EI, "cat: tensors must have same number of dimensions");
  CHECK_ERR(addn(g, "cat", as, 2, NULL, 0), EI,
            "cat: zero-dimensional tensor (at position 1) cannot be concatenated");
  CHECK_ERR(addn(g, "cat", an, 2, NULL, 0), EI, "cat: input 1 is absent");
  ptc_attr d2 = ptc_attr_int("dim", 2);
  CHECK_ERR(addn(g, "cat", ab, 2, &d2, 1), EI, "cat: dim 2 is out of range");
  CHECK_ERR(addn(g, "stack", ab, 2, NULL, 0), EI, "stack: stack expects each tensor to be equal size");
  ptc_attr d3 = ptc_attr_int("dim", 3);
  ptc_value aa[] = {a, a};
  CHECK_ERR(addn(g, "stack", aa, 2, &d3, 1), EI, "stack: dim 3 is out of range");
  ptc_value outs[8];
  size_t n = 0;
  ptc_attr sp[] = {ptc_attr_int("split_size", 2), INTS("split_sizes", 1, 1)};
  CHECK_ERR(ptc_graph_add_node(g, "split", &b, 1, sp, 2, outs, 8, &n), EI,
            "split: give exactly one of 'split_size' (int) and 'split_sizes' (ints)");
  ptc_attr ss[] = {INTS("split_sizes", 1, 2), ptc_attr_int("dim", 1)};
  CHECK_ERR(ptc_graph_add_node(g, "split", &b, 1, ss, 2, outs, 8, &n), EI,
            "split: split_sizes [1, 2] must sum exactly to 4");
  sp[0] = ptc_attr_int("split_size", -1);
  CHECK_ERR(ptc_graph_add_node(g, "split", &b, 1, sp, 1, outs, 8, &n), EI,
            "split: split_size must be non-negative");
  sp[0] = ptc_attr_int("split_size", 1);
  CHECK_ERR(ptc_graph_add_node(g, "split", &a, 1, sp, 1, outs, 1, &n), PTC_CODE_OUT_OF_RANGE,
            "split: produces 2 outputs");
  CHECK(n == 2);
  ptc_attr ch = ptc_attr_int("chunks", 0);
  CHECK_ERR(ptc_graph_add_node(g, "chunk", &a, 1, &ch, 1, outs, 8, &n), EI,
            "chunk: chunks must be greater than 0, got 0");
  ch = ptc_attr_int("chunks", 2);
  CHECK_OK(ptc_graph_add_node(g, "chunk", &b, 1, &ch, 1, outs, 8, &n));
  CHECK(n == 2);
}

static void test_index_errors(ptc_graph* g) {
  ptc_value x = in(g, PTC_F32, SHAPE(4, 5)), fi = in(g, PTC_F32, SHAPE(2, 5));
  ptc_value i1 = in(g, PTC_I64, SHAPE(3)), i2 = in(g, PTC_I64, SHAPE(2, 6));
  ptc_value i32 = in(g, PTC_I32, SHAPE(2, 5)), ib = in(g, PTC_BOOL, SHAPE(4));
  ptc_value src64 = in(g, PTC_F64, SHAPE(4, 5)), src = in(g, PTC_F32, SHAPE(4, 5));
  ptc_attr d0 = ptc_attr_int("dim", 0);
  ptc_value xf[] = {x, fi}, x1[] = {x, i1}, x2[] = {x, i2}, x32[] = {x, i32};
  CHECK_ERR(addn(g, "gather", xf, 2, &d0, 1), EI,
            "gather: index tensor (input 1) must be i64, got f32");
  CHECK_ERR(addn(g, "gather", x32, 2, &d0, 1), EI, "gather: index tensor (input 1) must be i64, got i32");
  CHECK_ERR(addn(g, "gather", x1, 2, &d0, 1), EI,
            "gather: index tensor must have the same number of dimensions as input tensor");
  CHECK_ERR(addn(g, "gather", x2, 2, &d0, 1), EI, "gather: size does not match at dimension 1");
  CHECK_ERR(addn(g, "gather", x2, 2, NULL, 0), EI, "gather: missing required attribute 'dim'");
  ptc_value sc64[] = {x, i2, src64}, scn[] = {x, i2, PTC_VALUE_NONE};
  ptc_value i25 = in(g, PTC_I64, SHAPE(2, 5)), sc[] = {x, i25, src}, sn[] = {x, i25, PTC_VALUE_NONE};
  ptc_value sc64b[] = {x, i25, src64};
  CHECK_ERR(addn(g, "scatter", sc64b, 3, &d0, 1), EI,
            "scatter: expected self.dtype to be equal to src.dtype (f32 vs f64)");
  CHECK_ERR(addn(g, "scatter", sc64, 3, &d0, 1), EI, "scatter: size does not match at dimension 1");
  CHECK_ERR(addn(g, "scatter", scn, 3, &d0, 1), EI,
            "scatter: give exactly one of the 'src' input and the 'value' attribute");
  ptc_attr dv[] = {ptc_attr_int("dim", 0), ptc_attr_float("value", 1.5)};
  CHECK_ERR(addn(g, "scatter", sc, 3, dv, 2), EI, "scatter: give exactly one of");
  CHECK_OK(addn(g, "scatter", sn, 3, dv, 2));
  CHECK_OK(addn(g, "scatter", sn, 2, dv, 2));
  CHECK_ERR(addn(g, "scatter_add", sn, 3, &d0, 1), EI, "scatter_add: argument 'src' is required");
  CHECK_OK(addn(g, "scatter_add", sc, 3, &d0, 1));
  CHECK_ERR(addn(g, "index_select", x2, 2, &d0, 1), EI,
            "index_select: index is supposed to be a vector, got rank 2");
  ptc_value xb[] = {x, ib}, xn3[] = {x, i1, i1, i1}, xi1n[] = {x, PTC_VALUE_NONE, i32};
  CHECK_ERR(addn(g, "index_select", xf, 2, &d0, 1), EI,
            "index_select: index tensor (input 1) must be i64 or i32, got f32");
  CHECK_ERR(addn(g, "index", xb, 2, NULL, 0), EI, "index: boolean mask indices (input 1) are not supported");
  CHECK_ERR(addn(g, "index", xn3, 4, NULL, 0), EI,
            "index: too many indices for tensor of dimension 2 (got 3)");
  CHECK_ERR(addn(g, "index", xf, 2, NULL, 0), EI, "index: index tensor (input 1) must be i64 or i32");
  ptc_value x12[] = {x, i1, i2};
  CHECK_ERR(addn(g, "index", x12, 3, NULL, 0), EI, "index: cannot broadcast [3] with [2, 6]");
  CHECK_OK(addn(g, "index", xi1n, 3, NULL, 0));
  ptc_value v = in(g, PTC_F32, SHAPE(5));
  CHECK_ERR(add1(g, "tril", v, NULL, 0), EI, "tril: input tensor must have at least 2 dimensions, got 1");
  CHECK_ERR(add1(g, "triu", v, NULL, 0), EI, "triu: input tensor must have at least 2 dimensions");
  ptc_attr fd = ptc_attr_float("diagonal", 1.0);
  CHECK_ERR(add1(g, "triu", x, &fd, 1), EI, "triu: attribute 'diagonal': expected int, got float");
}

/* ---- strides of views, compared with PyTorch -------------------------------------- */

static bool strides_are(ptc_graph* g, ptc_value v, const int64_t* want, size_t n) {
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  if (ptc_graph_value_info(g, v, &info) || info.rank != n) return false;
  for (size_t i = 0; i < n; i++)
    if (info.strides[i].sym || info.strides[i].value != want[i]) return false;
  return true;
}

#define STRIDES(v, ...) strides_are(g, v, L(__VA_ARGS__), N(__VA_ARGS__))

static void test_view_strides(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_value xt = in_strided(g, PTC_F32, SHAPE(6, 4), L(1, 6)); /* x[4, 6].t() */
  ptc_attr a = INTS("shape", 2, 3, 4);
  CHECK_OK(add1(g, "reshape", xt, &a, 1));
  CHECK(STRIDES(out, 3, 1, 6));
  a = INTS("shape", 24);
  CHECK_OK(add1(g, "reshape", xt, &a, 1));
  CHECK(STRIDES(out, 1));
  a = ptc_attr_int("dim", 1);
  CHECK_OK(add1(g, "unsqueeze", xt, &a, 1));
  CHECK(STRIDES(out, 1, 24, 6));
  ptc_attr uf[] = {ptc_attr_int("dim", 1), INTS("sizes", 2, 2)};
  CHECK_OK(add1(g, "unflatten", xt, uf, 2));
  CHECK(STRIDES(out, 1, 12, 6));
  CHECK_OK(add1(g, "clone", xt, NULL, 0));
  CHECK(STRIDES(out, 1, 6));
  CHECK_OK(add1(g, "contiguous", xt, NULL, 0));
  CHECK(STRIDES(out, 4, 1));
  ptc_value e = in_strided(g, PTC_F32, SHAPE(3, 4), L(1, 0)); /* [3,1].expand(3,4) */
  a = INTS("size", 3, 2, 2);
  CHECK_OK(add1(g, "view", e, &a, 1));
  CHECK(STRIDES(out, 1, 0, 0));
  ptc_value c = in(g, PTC_F32, SHAPE(4, 1));
  a = INTS("size", 3, 4, 5);
  CHECK_OK(add1(g, "expand", c, &a, 1));
  CHECK(STRIDES(out, 0, 1, 0));
  ptc_value x = in(g, PTC_F32, SHAPE(4, 6));
  ptc_attr sl[] = {ptc_attr_int("dim", 1), ptc_attr_int("start", 1), ptc_attr_int("step", 2)};
  CHECK_OK(add1(g, "slice", x, sl, 3));
  CHECK(STRIDES(out, 6, 2));
  ptc_value step2 = out;
  CHECK_OK(add1(g, "clone", step2, NULL, 0));
  CHECK(STRIDES(out, 3, 1));
  ptc_value p = in_strided(g, PTC_F32, SHAPE(4, 2, 3), L(1, 12, 4)); /* [2,3,4].permute(2,0,1) */
  ptc_attr fl = ptc_attr_int("start_dim", 1);
  CHECK_OK(add1(g, "flatten", p, &fl, 1));
  CHECK(STRIDES(out, 1, 4));
  ptc_value q = in(g, PTC_F32, SHAPE(1, 4, 1, 6));
  CHECK_OK(add1(g, "squeeze", q, NULL, 0));
  CHECK(STRIDES(out, 6, 1));
  ptc_attr tr[] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", -1)};
  CHECK_OK(add1(g, "transpose", x, tr, 2));
  CHECK(STRIDES(out, 1, 6));
  ptc_graph_destroy(g);
}

/* ---- symbolic shapes ------------------------------------------------------------------ */

/* Evaluates dim d of v with s0 = a, s1 = b (symbols 0 and 1 of the graph);
 * -1 on failure. Also checks the public text names the expected symbols. */
static int64_t eval_dim(ptc_graph* g, ptc_value v, uint32_t d, int64_t a, int64_t b,
                        const char* must_contain) {
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  if (ptc_graph_value_info(g, v, &info) || d >= info.rank) return -1;
  if (!info.shape[d].sym) return info.shape[d].value;
  char buf[128];
  ptc_graph_sym_format(g, info.shape[d].sym, buf, sizeof buf);
  for (const char* p = must_contain; p && *p; p += strlen(p) + 1)
    if (!strstr(buf, p)) {
      printf("  dim %u text '%s' lacks '%s'\n", d, buf, p);
      return -1;
    }
  const sym_expr* e = graph_sym_expr(g, info.shape[d].sym);
  int64_t vals[2] = {a, b}, r = -1;
  ptc_status s = sym_eval(e, vals, 2, &r);
  ptc_status_destroy(s);
  return s ? -1 : r;
}

static uint32_t rank_of(ptc_graph* g, ptc_value v) {
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  return ptc_graph_value_info(g, v, &info) ? 999 : info.rank;
}

static void test_symbolic(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  ptc_sym s0 = 0, s1 = 0;
  o.hint = 5;
  CHECK_OK(ptc_graph_add_symbol(g, "s0", &o, &s0));
  o.hint = 3;
  CHECK_OK(ptc_graph_add_symbol(g, "s1", &o, &s1));
  ptc_dim xd[2] = {{5, s0, 0}, {3, s1, 0}}, ad[2] = {{5, s0, 0}, {4, 0, 0}};
  ptc_dim bd[2] = {{3, s1, 0}, {4, 0, 0}};
  ptc_value x, a, b;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 2, NULL, &x));
  CHECK_OK(ptc_graph_add_input(g, "a", PTC_F32, ad, 2, NULL, &a));
  CHECK_OK(ptc_graph_add_input(g, "b", PTC_F32, bd, 2, NULL, &b));
  size_t guards0 = ptc_graph_num_guards(g);

  /* reshape(x[s0, s1], [-1]) -> [s0*s1] */
  ptc_attr r = INTS("shape", -1);
  CHECK_OK(add1(g, "reshape", x, &r, 1));
  CHECK(rank_of(g, out) == 1);
  CHECK(eval_dim(g, out, 0, 4, 7, "s0\0s1\0") == 28);
  CHECK(STRIDES(out, 1));
  /* view(a[s0, 4], [-1, 2]) -> [2*s0, 2] */
  ptc_attr v = INTS("size", -1, 2);
  CHECK_OK(add1(g, "view", a, &v, 1));
  CHECK(eval_dim(g, out, 0, 6, 0, "s0\0") == 12);
  CHECK(eval_dim(g, out, 1, 6, 0, NULL) == 2);
  /* reshape(x, [s1, -1]) -> [s1, s0] */
  ptc_sym sy[2] = {s1, 0};
  r = INTS("shape", 0, -1);
  r.syms = sy;
  CHECK_OK(add1(g, "reshape", x, &r, 1));
  CHECK(eval_dim(g, out, 0, 4, 7, "s1\0") == 7);
  CHECK(eval_dim(g, out, 1, 4, 7, "s0\0") == 4);
  /* cat([s0, 4], [s1, 4]) -> [s0 + s1, 4] */
  ptc_value ab[] = {a, b};
  CHECK_OK(addn(g, "cat", ab, 2, NULL, 0));
  CHECK(eval_dim(g, out, 0, 4, 7, "s0\0s1\0+\0") == 11);
  CHECK(eval_dim(g, out, 1, 4, 7, NULL) == 4);
  /* stack -> [2, s0, 4]; flatten(x) -> [s0*s1]; transpose strides [1, s1] */
  ptc_value aa[] = {a, a};
  CHECK_OK(addn(g, "stack", aa, 2, NULL, 0));
  CHECK(eval_dim(g, out, 0, 4, 7, NULL) == 2 && eval_dim(g, out, 1, 4, 7, "s0\0") == 4);
  CHECK_OK(add1(g, "flatten", x, NULL, 0));
  CHECK(eval_dim(g, out, 0, 4, 7, "s0\0s1\0") == 28);
  ptc_attr tr[] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
  CHECK_OK(add1(g, "transpose", x, tr, 2));
  ptc_value xt = out;
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  CHECK_OK(ptc_graph_value_info(g, xt, &info));
  CHECK(info.rank == 2 && info.strides[0].sym == 0 && info.strides[0].value == 1 &&
        info.strides[1].sym != 0);
  /* a view of the transpose as [-1] needs a copy: view refuses, reshape copies */
  r = INTS("shape", -1);
  CHECK_ERR(ptc_graph_add_node(g, "view", &xt, 1, (ptc_attr[]){INTS("size", -1)}, 1, &out, 1,
                               NULL),
            EI, "view: view size is not compatible");
  CHECK_OK(add1(g, "reshape", xt, &r, 1));
  CHECK(eval_dim(g, out, 0, 4, 7, "s0\0s1\0") == 28);
  guards0 = ptc_graph_num_guards(g); /* that may guard s0*s1 != s0 (size-oblivious in torch) */
  /* slice(x, dim 0, start 1) -> [s0 - 1]; end -1 -> [s0 - 2]; step 2 -> ceil */
  ptc_attr sl[] = {ptc_attr_int("dim", 0), ptc_attr_int("start", 1)};
  CHECK_OK(add1(g, "slice", x, sl, 2));
  CHECK(eval_dim(g, out, 0, 9, 7, "s0\0") == 8);
  ptc_attr sl2[] = {ptc_attr_int("dim", 0), ptc_attr_int("end", -1), ptc_attr_int("step", 2)};
  CHECK_OK(add1(g, "slice", x, sl2, 3));
  CHECK(eval_dim(g, out, 0, 9, 7, "s0\0") == 4);
  CHECK(eval_dim(g, out, 0, 10, 7, "s0\0") == 5);
  /* expand(y[1, s1], [s0, -1]) -> [s0, s1] with stride 0 */
  ptc_dim yd[2] = {{1, 0, 0}, {3, s1, 0}};
  ptc_value y;
  CHECK_OK(ptc_graph_add_input(g, "y", PTC_F32, yd, 2, NULL, &y));
  ptc_sym es[2] = {s0, 0};
  ptc_attr ex = INTS("size", 0, -1);
  ex.syms = es;
  CHECK_OK(add1(g, "expand", y, &ex, 1));
  CHECK(eval_dim(g, out, 0, 4, 7, "s0\0") == 4 && eval_dim(g, out, 1, 4, 7, "s1\0") == 7);
  CHECK_OK(ptc_graph_value_info(g, out, &info));
  CHECK(info.strides[0].sym == 0 && info.strides[0].value == 0);
  /* index(a[s0, 4], i[s1]) -> [s1, 4]; index_select -> [s0, 3] */
  ptc_dim id[1] = {{3, s1, 0}};
  ptc_value idx;
  CHECK_OK(ptc_graph_add_input(g, "i", PTC_I64, id, 1, NULL, &idx));
  ptc_value ai[] = {a, idx};
  CHECK_OK(addn(g, "index", ai, 2, NULL, 0));
  CHECK(eval_dim(g, out, 0, 4, 7, "s1\0") == 7 && eval_dim(g, out, 1, 4, 7, NULL) == 4);
  CHECK(ptc_graph_num_guards(g) == guards0); /* nothing above needed a guard */

  /* split(a[s0, 4], 2) with s0 hinted 5 -> 3 outputs under a guard */
  ptc_value outs[8];
  size_t n = 0;
  ptc_attr sp = ptc_attr_int("split_size", 2);
  CHECK_OK(ptc_graph_add_node(g, "split", &a, 1, &sp, 1, outs, 8, &n));
  CHECK(n == 3);
  CHECK(ptc_graph_num_guards(g) > guards0);
  if (n == 3) CHECK(eval_dim(g, outs[2], 0, 5, 0, "s0\0") == 1);
  /* narrow(a[s0, 4], 0, start 1, length s1) -> [s1, 4], guarded 1 + s1 <= s0 */
  ptc_attr na[] = {ptc_attr_int("dim", 0), ptc_attr_int("start", 1), ptc_attr_int("length", 0)};
  na[2].type = PTC_ATTR_SYM;
  na[2].sym = s1;
  CHECK_OK(add1(g, "narrow", a, na, 3));
  CHECK(eval_dim(g, out, 0, 9, 7, "s1\0") == 7);
  /* select(a, 0, index s1) -> [4] */
  ptc_attr se[] = {ptc_attr_int("dim", 0), ptc_attr_int("index", 0)};
  se[1].type = PTC_ATTR_SYM;
  se[1].sym = s1;
  CHECK_OK(add1(g, "select", a, se, 2));
  CHECK(rank_of(g, out) == 1);
  /* unflatten(x, 1, [1, -1]) -> [s0, 1, s1] */
  ptc_attr uf[] = {ptc_attr_int("dim", 1), INTS("sizes", 1, -1)};
  CHECK_OK(add1(g, "unflatten", x, uf, 2));
  CHECK(eval_dim(g, out, 2, 4, 7, "s1\0") == 7);
  ptc_graph_destroy(g);
}

/* Runs cat(a[s0, 2], b[s1, 2]) and slice(a, end=-1) with s0 = 2, s1 = 3. */
static void test_symbolic_run(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  ptc_sym s0 = 0, s1 = 0;
  o.hint = 4;
  CHECK_OK(ptc_graph_add_symbol(g, "s0", &o, &s0));
  CHECK_OK(ptc_graph_add_symbol(g, "s1", &o, &s1));
  ptc_dim ad[2] = {{4, s0, 0}, {2, 0, 0}}, bd[2] = {{4, s1, 0}, {2, 0, 0}};
  ptc_value a, b, c, sl;
  CHECK_OK(ptc_graph_add_input(g, "a", PTC_F32, ad, 2, NULL, &a));
  CHECK_OK(ptc_graph_add_input(g, "b", PTC_I32, bd, 2, NULL, &b));
  ptc_value ab[] = {a, b};
  CHECK_OK(ptc_graph_add_node(g, "cat", ab, 2, NULL, 0, &c, 1, NULL));
  ptc_attr end = ptc_attr_int("end", -1);
  CHECK_OK(ptc_graph_add_node(g, "slice", &a, 1, &end, 1, &sl, 1, NULL));
  CHECK_OK(ptc_graph_add_output(g, c));
  CHECK_OK(ptc_graph_add_output(g, sl));
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  float av[4] = {1, 2, 3, 4};
  int32_t bv[6] = {5, 6, 7, 8, 9, 10};
  int64_t as[2] = {2, 2}, bs[2] = {3, 2};
  ptc_tensor t[2];
  memset(t, 0, sizeof t);
  t[0].data = av;
  t[0].ndim = 2;
  t[0].dtype = ptc_dtype_to_dl(PTC_F32);
  t[0].shape = as;
  t[1].data = bv;
  t[1].ndim = 2;
  t[1].dtype = ptc_dtype_to_dl(PTC_I32);
  t[1].shape = bs;
  t[0].device.device_type = t[1].device.device_type = PTC_DEVICE_CPU;
  ptc_results* r = NULL;
  CHECK_OK(ptc_executable_run_alloc(exe, t, 2, NULL, &r));
  const ptc_tensor* oc = ptc_results_get(r, 0);
  const ptc_tensor* os = ptc_results_get(r, 1);
  CHECK(oc && oc->ndim == 2 && oc->shape[0] == 5 && oc->shape[1] == 2);
  CHECK(oc && ((const float*)oc->data)[3] == 4 && ((const float*)oc->data)[9] == 10);
  CHECK(os && os->ndim == 2 && os->shape[0] == 1 && ((const float*)os->data)[1] == 2);
  ptc_results_destroy(r);
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

/* ---- run-time index errors ------------------------------------------------------------- */

static ptc_status run1(ptc_graph* g, ptc_tensor* ins, size_t n) {
  ptc_executable* exe = NULL;
  ptc_results* r = NULL;
  ptc_status s = ptc_compile(ctx, g, NULL, &exe);
  if (!s) s = ptc_executable_run_alloc(exe, ins, n, NULL, &r);
  ptc_results_destroy(r);
  ptc_executable_release(exe);
  return s;
}

static ptc_tensor tensor(void* data, int32_t dt, int64_t* shape, int32_t rank) {
  ptc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = PTC_DEVICE_CPU;
  t.ndim = rank;
  t.dtype = ptc_dtype_to_dl(dt);
  t.shape = shape;
  return t;
}

static void test_runtime_index(const char* op, size_t n_in, const char* want) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_value x = in(g, PTC_F32, SHAPE(4)), i = in(g, PTC_I64, SHAPE(2));
  ptc_value src = n_in > 2 ? in(g, PTC_F32, SHAPE(2)) : PTC_VALUE_NONE;
  ptc_value ins[] = {x, i, src};
  ptc_attr d0 = ptc_attr_int("dim", 0);
  CHECK_OK(ptc_graph_add_node(g, op, ins, n_in, &d0, strcmp(op, "index") ? 1 : 0, &out, 1, NULL));
  CHECK_OK(ptc_graph_add_output(g, out));
  float xs[4] = {1, 2, 3, 4}, ss[2] = {5, 6};
  int64_t ix[2] = {1, 7}, s4[1] = {4}, s2[1] = {2}, s2b[1] = {2};
  ptc_tensor t[3] = {tensor(xs, PTC_F32, s4, 1), tensor(ix, PTC_I64, s2, 1),
                     tensor(ss, PTC_F32, s2b, 1)};
  CHECK_ERR(run1(g, t, n_in), EI, want);
  ix[1] = -1;
  if (strcmp(op, "index") == 0) {
    CHECK_OK(run1(g, t, n_in)); /* negative indices wrap for advanced indexing */
    ix[1] = -5;
    CHECK_ERR(run1(g, t, n_in), EI, "index: index -5 is out of bounds for dimension 0 with size 4");
  } else {
    CHECK_ERR(run1(g, t, n_in), EI, "index -1 is out of bounds for dimension 0 with size 4");
  }
  ptc_graph_destroy(g);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (g) {
    test_view_errors(g);
    test_slice_errors(g);
    test_join_errors(g);
    test_index_errors(g);
  }
  ptc_graph_destroy(g);
  test_view_strides();
  test_symbolic();
  test_symbolic_run();
  const char* w = "index 7 is out of bounds for dimension 0 with size 4";
  char buf[128];
  const char* ops[] = {"gather", "scatter", "scatter_add", "index_select", "index"};
  const size_t nin[] = {2, 3, 3, 2, 2};
  for (size_t k = 0; k < 5; k++) {
    snprintf(buf, sizeof buf, "%s: %s", ops[k], w);
    test_runtime_index(ops[k], nin[k], buf);
  }
  ptc_context_release(ctx);
  return check_summary("test_ops_shape_errors");
}
