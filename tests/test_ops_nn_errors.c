/* test_ops_nn_errors.c - error paths of the nn family's meta functions
 * (wrong dtype, wrong rank, mismatched sizes, bad attributes; each message
 * names the op and the problem), symbolic output shapes of the nn ops, and
 * the runtime error of embedding for an index out of range. */
#include <stdlib.h>

#include "check.h"

static ptc_context* ctx;

static ptc_value in(ptc_graph* g, int32_t dt, const int64_t* shape, size_t rank) {
  ptc_dim d[PTC_MAX_RANK];
  for (size_t i = 0; i < rank; i++) d[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, NULL, dt, d, rank, NULL, &v));
  return v;
}

#define SHAPE(...) (const int64_t[]){__VA_ARGS__}, sizeof((const int64_t[]){__VA_ARGS__}) / 8
/* Adds op on the array `ins` without attributes. */
#define ADD0(g, op, ins) \
  ptc_graph_add_node(g, op, ins, sizeof ins / sizeof ins[0], NULL, 0, &out, 1, NULL)

static ptc_value out;

static void test_matmul_errors(ptc_graph* g) {
  ptc_value a = in(g, PTC_F32, SHAPE(2, 3)), b = in(g, PTC_F32, SHAPE(4, 5));
  ptc_value c = in(g, PTC_F64, SHAPE(3, 5)), i = in(g, PTC_I64, SHAPE(3, 5));
  ptc_value a3 = in(g, PTC_F32, SHAPE(2, 2, 3)), b3 = in(g, PTC_F32, SHAPE(3, 3, 4));
  ptc_value v = in(g, PTC_F32, SHAPE(4));
  ptc_value ab[] = {a, b}, ac[] = {a, c}, ai[] = {i, c}, a3b[] = {a3, b}, bb3[] = {a3, b3};
  CHECK_ERR(ADD0(g, "mm", ab), PTC_CODE_INVALID_ARGUMENT, "mm: mat2 dim 0: expected 3, got 4");
  CHECK_ERR(ADD0(g, "mm", ac), PTC_CODE_INVALID_ARGUMENT, "mm: argument 'mat2' has dtype f64");
  CHECK_ERR(ADD0(g, "mm", ai), PTC_CODE_INVALID_ARGUMENT,
            "mm: argument 'self' must be a floating tensor, got i64");
  CHECK_ERR(ADD0(g, "mm", a3b), PTC_CODE_INVALID_ARGUMENT,
            "mm: argument 'self' must be 2-D, got 3-D");
  CHECK_ERR(ADD0(g, "bmm", bb3), PTC_CODE_INVALID_ARGUMENT, "bmm: mat2 dim 0: expected 2, got 3");
  CHECK_ERR(ADD0(g, "matmul", ab), PTC_CODE_INVALID_ARGUMENT, "matmul: other dim 0");
  ptc_value av[] = {a, v};
  CHECK_ERR(ADD0(g, "matmul", av), PTC_CODE_INVALID_ARGUMENT,
            "matmul: other dim 0: expected 3, got 4");
  ptc_value s0 = in(g, PTC_F32, NULL, 0), as0[] = {a, s0};
  CHECK_ERR(ADD0(g, "matmul", as0), PTC_CODE_INVALID_ARGUMENT, "at least 1-D, got 0-D");
  ptc_value x = in(g, PTC_F32, SHAPE(3, 3)), m1 = in(g, PTC_F32, SHAPE(2, 4)),
            m2 = in(g, PTC_F32, SHAPE(4, 3));
  ptc_value addm[] = {x, m1, m2};
  CHECK_ERR(ADD0(g, "addmm", addm), PTC_CODE_INVALID_ARGUMENT,
            "addmm: self dim 0: expected 2, got 3");
  ptc_value w = in(g, PTC_F32, SHAPE(5, 4)), lin[] = {a, w};
  CHECK_ERR(ADD0(g, "linear", lin), PTC_CODE_INVALID_ARGUMENT,
            "linear: weight dim 1: expected 3, got 4");
  ptc_value w3 = in(g, PTC_F32, SHAPE(5, 3)), bias = in(g, PTC_F32, SHAPE(4)),
            linb[] = {a, w3, bias};
  CHECK_ERR(ADD0(g, "linear", linb), PTC_CODE_INVALID_ARGUMENT,
            "linear: bias dim 0: expected 5, got 4");
  ptc_value missing[] = {a, PTC_VALUE_NONE};
  CHECK_ERR(ADD0(g, "mm", missing), PTC_CODE_INVALID_ARGUMENT, "argument 'mat2' is required");
  CHECK_OK(ADD0(g, "matmul", ((ptc_value[]){v, v})));
}

static void test_conv_pool_errors(ptc_graph* g) {
  ptc_value x = in(g, PTC_F32, SHAPE(2, 3, 8, 8)), w = in(g, PTC_F32, SHAPE(4, 2, 3, 3));
  ptc_value xw[] = {x, w};
  CHECK_ERR(ADD0(g, "conv2d", xw), PTC_CODE_INVALID_ARGUMENT,
            "conv2d: input dim 1: expected 2, got 3");
  ptc_attr g3 = ptc_attr_int("groups", 3);
  ptc_value w1 = in(g, PTC_F32, SHAPE(4, 1, 3, 3)), xw1[] = {x, w1};
  CHECK_ERR(ptc_graph_add_node(g, "conv2d", xw1, 2, &g3, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "must be divisible by groups");
  ptc_attr g0 = ptc_attr_int("groups", 0);
  CHECK_ERR(ptc_graph_add_node(g, "conv2d", xw1, 2, &g0, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "conv2d: groups must be positive, got 0");
  ptc_value x5 = in(g, PTC_F32, SHAPE(1, 2, 3, 8, 8)), x5w[] = {x5, w};
  CHECK_ERR(ADD0(g, "conv2d", x5w), PTC_CODE_INVALID_ARGUMENT,
            "conv2d: argument 'input' must be 3-D to 4-D, got 5-D");
  ptc_value wok = in(g, PTC_F32, SHAPE(4, 3, 3, 3)), ok[] = {x, wok};
  int64_t s3[] = {1, 2, 3};
  ptc_attr bad_stride = ptc_attr_ints("stride", s3, 3);
  CHECK_ERR(ptc_graph_add_node(g, "conv2d", ok, 2, &bad_stride, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "attribute 'stride' must have 1 or 2 elements, got 3");
  int64_t zero = 0;
  ptc_attr stride0 = ptc_attr_ints("stride", &zero, 1);
  CHECK_ERR(ptc_graph_add_node(g, "conv2d", ok, 2, &stride0, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "attribute 'stride' must be positive, got 0");
  ptc_attr same[] = {ptc_attr_string("padding_str", "same"), ptc_attr_int("stride", 2)};
  CHECK_ERR(ptc_graph_add_node(g, "conv2d", ok, 2, same, 2, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "not supported for strided convolutions");
  ptc_attr full = ptc_attr_string("padding_str", "full");
  CHECK_ERR(ptc_graph_add_node(g, "conv2d", ok, 2, &full, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "must be 'valid' or 'same', got 'full'");
  ptc_value wbig = in(g, PTC_F32, SHAPE(4, 3, 9, 9)), big[] = {x, wbig};
  CHECK_ERR(ADD0(g, "conv2d", big), PTC_CODE_INVALID_ARGUMENT,
            "conv2d: kernel size 9 (dilated) is larger than the padded input size 8");
  ptc_value x1 = in(g, PTC_F32, SHAPE(2, 3, 10)), xw1d[] = {x1, w};
  CHECK_ERR(ADD0(g, "conv1d", xw1d), PTC_CODE_INVALID_ARGUMENT,
            "conv1d: argument 'weight' must be 3-D, got 4-D");

  ptc_value xs[] = {x};
  int64_t k3 = 3, p2 = 2;
  ptc_attr kp[] = {ptc_attr_ints("kernel_size", &k3, 1), ptc_attr_ints("padding", &p2, 1)};
  CHECK_ERR(ptc_graph_add_node(g, "max_pool2d", xs, 1, kp, 2, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "max_pool2d: padding should be at most half");
  CHECK_ERR(ptc_graph_add_node(g, "max_pool2d", xs, 1, NULL, 0, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "missing required attribute 'kernel_size'");
  int64_t k9 = 9;
  ptc_attr kbig = ptc_attr_ints("kernel_size", &k9, 1);
  CHECK_ERR(ptc_graph_add_node(g, "avg_pool2d", xs, 1, &kbig, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "avg_pool2d: output size is too small");
  ptc_attr div0[] = {ptc_attr_ints("kernel_size", &k3, 1), ptc_attr_int("divisor_override", 0)};
  CHECK_ERR(ptc_graph_add_node(g, "avg_pool2d", xs, 1, div0, 2, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "divisor_override must not be zero");
  ptc_value xi = in(g, PTC_I32, SHAPE(1, 2, 4, 4)), xis[] = {xi};
  CHECK_ERR(ptc_graph_add_node(g, "max_pool2d", xis, 1, &kp[0], 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "max_pool2d: argument 'self' must be a floating tensor");
  ptc_value x2 = in(g, PTC_F32, SHAPE(4, 4)), x2s[] = {x2};
  int64_t os[] = {2, 2, 2};
  ptc_attr ap = ptc_attr_ints("output_size", os, 2);
  CHECK_ERR(ptc_graph_add_node(g, "adaptive_avg_pool2d", x2s, 1, &ap, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "adaptive_avg_pool2d: argument 'self' must be 3-D to 4-D");
  ap.count = 3;
  CHECK_ERR(ptc_graph_add_node(g, "adaptive_avg_pool2d", xs, 1, &ap, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "'output_size' must have 1 or 2 elements, got 3");
}

static void test_misc_errors(ptc_graph* g) {
  ptc_value x = in(g, PTC_F32, SHAPE(1, 2, 4, 4)), xs[] = {x};
  int64_t sz[] = {8, 8};
  double sc = 2.0;
  ptc_attr both[] = {ptc_attr_ints("size", sz, 2), ptc_attr_floats("scale_factor", &sc, 1)};
  CHECK_ERR(ptc_graph_add_node(g, "interpolate", xs, 1, both, 2, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "interpolate: exactly one of 'size' or 'scale_factor'");
  ptc_attr cubic[] = {ptc_attr_ints("size", sz, 2), ptc_attr_string("mode", "bicubic")};
  CHECK_ERR(ptc_graph_add_node(g, "interpolate", xs, 1, cubic, 2, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "interpolate: mode 'bicubic' is not supported");
  ptc_attr ac[] = {ptc_attr_ints("size", sz, 2), ptc_attr_bool("align_corners", 1)};
  CHECK_ERR(ptc_graph_add_node(g, "interpolate", xs, 1, ac, 2, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "align_corners can only be set with mode 'bilinear'");

  ptc_value q = in(g, PTC_F32, SHAPE(2, 4, 8)), k = in(g, PTC_F32, SHAPE(2, 6, 7));
  ptc_value v = in(g, PTC_F32, SHAPE(2, 6, 5)), qkv[] = {q, k, v};
  CHECK_ERR(ADD0(g, "scaled_dot_product_attention", qkv), PTC_CODE_INVALID_ARGUMENT,
            "scaled_dot_product_attention: key dim 2: expected 8, got 7");
  ptc_value k8 = in(g, PTC_F32, SHAPE(2, 6, 8)), qkv8[] = {q, k8, v};
  ptc_attr drop = ptc_attr_float("dropout_p", 0.1);
  CHECK_ERR(ptc_graph_add_node(g, "scaled_dot_product_attention", qkv8, 3, &drop, 1, &out, 1,
                               NULL),
            PTC_CODE_INVALID_ARGUMENT, "dropout_p must be 0");
  ptc_value mi = in(g, PTC_I64, SHAPE(4, 6)), withmask[] = {q, k8, v, mi};
  CHECK_ERR(ADD0(g, "scaled_dot_product_attention", withmask), PTC_CODE_INVALID_ARGUMENT,
            "argument 'attn_mask' must be bool or f32");
  ptc_value mb = in(g, PTC_BOOL, SHAPE(4, 5)), badmask[] = {q, k8, v, mb};
  CHECK_ERR(ADD0(g, "scaled_dot_product_attention", badmask), PTC_CODE_INVALID_ARGUMENT,
            "attn_mask dim 1: expected 6, got 5");
  ptc_value mok = in(g, PTC_BOOL, SHAPE(4, 6)), okmask[] = {q, k8, v, mok};
  ptc_attr causal = ptc_attr_bool("is_causal", 1);
  CHECK_ERR(ptc_graph_add_node(g, "scaled_dot_product_attention", okmask, 4, &causal, 1, &out,
                               1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "must not be given when is_causal is true");

  ptc_value w = in(g, PTC_F32, SHAPE(10, 4)), fidx = in(g, PTC_F32, SHAPE(3));
  ptc_value emb[] = {w, fidx};
  CHECK_ERR(ADD0(g, "embedding", emb), PTC_CODE_INVALID_ARGUMENT,
            "embedding: argument 'indices' must be an i32 or i64 tensor, got f32");
  ptc_value w3 = in(g, PTC_F32, SHAPE(10, 4, 2)), idx = in(g, PTC_I64, SHAPE(3));
  ptc_value emb3[] = {w3, idx};
  CHECK_ERR(ADD0(g, "embedding", emb3), PTC_CODE_INVALID_ARGUMENT,
            "embedding: argument 'weight' must be 2-D, got 3-D");

  ptc_value x2 = in(g, PTC_F32, SHAPE(2, 3)), x2s[] = {x2};
  int64_t p3[] = {1, 1, 1}, p6[] = {1, 1, 1, 1, 1, 1}, neg[] = {-2, -2};
  ptc_attr pa = ptc_attr_ints("pad", p3, 3);
  CHECK_ERR(ptc_graph_add_node(g, "pad", x2s, 1, &pa, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "pad: padding length must be divisible by 2, got 3");
  pa = ptc_attr_ints("pad", p6, 6);
  CHECK_ERR(ptc_graph_add_node(g, "pad", x2s, 1, &pa, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "padding length 6 is too large for a tensor of rank 2");
  ptc_attr refl[] = {ptc_attr_ints("pad", p6, 2), ptc_attr_string("mode", "reflect")};
  CHECK_ERR(ptc_graph_add_node(g, "pad", x2s, 1, refl, 2, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "pad: mode 'reflect' is not supported");
  pa = ptc_attr_ints("pad", neg, 2);
  CHECK_ERR(ptc_graph_add_node(g, "pad", x2s, 1, &pa, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "gives a negative size -1");
}

/* Text of dim `d` of value v ("s0*2 + 1" or "7"). */
static void dim_text(ptc_graph* g, ptc_value v, uint32_t d, char* buf, size_t cap) {
  ptc_value_info info = {sizeof info, 0, 0, 0, 0, NULL, NULL, NULL};
  buf[0] = 0;
  CHECK_OK(ptc_graph_value_info(g, v, &info));
  if (d >= info.rank) return;
  if (info.shape[d].sym)
    ptc_graph_sym_format(g, info.shape[d].sym, buf, cap);
  else
    snprintf(buf, cap, "%lld", (long long)info.shape[d].value);
}

static void test_symbolic(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 16;
  ptc_sym h = 0, n = 0;
  CHECK_OK(ptc_graph_add_symbol(g, "h", &o, &h));
  o.hint = 3;
  CHECK_OK(ptc_graph_add_symbol(g, "n", &o, &n));
  ptc_dim xd[4] = {{3, n, 0}, {3, 0, 0}, {16, h, 0}, {16, h, 0}};
  ptc_value x, wv, y;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 4, NULL, &x));
  wv = in(g, PTC_F32, SHAPE(4, 3, 3, 3));
  ptc_attr ca[] = {ptc_attr_int("stride", 2), ptc_attr_int("padding", 1)};
  ptc_value xw[] = {x, wv};
  CHECK_OK(ptc_graph_add_node(g, "conv2d", xw, 2, ca, 2, &y, 1, NULL));
  char buf[64], buf2[64];
  dim_text(g, y, 0, buf, sizeof buf);
  CHECK(strcmp(buf, "n") == 0);
  dim_text(g, y, 2, buf, sizeof buf);
  dim_text(g, x, 2, buf2, sizeof buf2);
  CHECK(strcmp(buf2, "h") == 0);
  CHECK(strstr(buf, "h") != NULL); /* ((h - 1)//2) + 1 in some canonical form */
  int64_t k2 = 2;
  ptc_attr pk[] = {ptc_attr_ints("kernel_size", &k2, 1), ptc_attr_bool("ceil_mode", 1)};
  ptc_value xs[] = {x}, p;
  CHECK_OK(ptc_graph_add_node(g, "max_pool2d", xs, 1, pk, 2, &p, 1, NULL));
  dim_text(g, p, 3, buf, sizeof buf);
  CHECK(strstr(buf, "h") != NULL);
  /* matmul with a symbolic batch: [n, 3, h] @ [h, 5] -> [n, 3, 5] */
  ptc_dim ad[3] = {{3, n, 0}, {3, 0, 0}, {16, h, 0}}, bd[2] = {{16, h, 0}, {5, 0, 0}};
  ptc_value a, b, mmv;
  CHECK_OK(ptc_graph_add_input(g, "a", PTC_F32, ad, 3, NULL, &a));
  CHECK_OK(ptc_graph_add_input(g, "b", PTC_F32, bd, 2, NULL, &b));
  ptc_value ab[] = {a, b};
  CHECK_OK(ptc_graph_add_node(g, "matmul", ab, 2, NULL, 0, &mmv, 1, NULL));
  dim_text(g, mmv, 0, buf, sizeof buf);
  CHECK(strcmp(buf, "n") == 0);
  dim_text(g, mmv, 2, buf, sizeof buf);
  CHECK(strcmp(buf, "5") == 0);
  /* pad by a symbolic amount */
  ptc_sym syms[2] = {n, 0};
  int64_t pv[2] = {0, 1};
  ptc_attr pa = ptc_attr_ints("pad", pv, 2);
  pa.syms = syms;
  ptc_value pd;
  CHECK_OK(ptc_graph_add_node(g, "pad", xs, 1, &pa, 1, &pd, 1, NULL));
  dim_text(g, pd, 3, buf, sizeof buf);
  CHECK(strstr(buf, "h") && strstr(buf, "n"));
  ptc_graph_destroy(g);
}

static void test_embedding_runtime(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  static const float wdata[6] = {1, 2, 3, 4, 5, 6};
  int64_t ws[2] = {3, 2};
  ptc_value w, idx, y;
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, ws, 2, wdata, PTC_CONSTANT_BORROW, &w));
  idx = in(g, PTC_I64, SHAPE(2));
  ptc_value ins[] = {w, idx};
  CHECK_OK(ptc_graph_add_node(g, "embedding", ins, 2, NULL, 0, &y, 1, NULL));
  CHECK_OK(ptc_graph_add_output(g, y));
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  if (exe) {
    int64_t ix[2] = {2, 0}, shape[1] = {2};
    ptc_tensor t;
    memset(&t, 0, sizeof t);
    t.data = ix;
    t.device.device_type = PTC_DEVICE_CPU;
    t.ndim = 1;
    t.dtype = ptc_dtype_to_dl(PTC_I64);
    t.shape = shape;
    ptc_results* r = NULL;
    CHECK_OK(ptc_executable_run_alloc(exe, &t, 1, NULL, &r));
    const ptc_tensor* o = ptc_results_get(r, 0);
    CHECK(o && ((const float*)o->data)[0] == 5 && ((const float*)o->data)[3] == 2);
    ptc_results_destroy(r);
    r = NULL;
    ix[1] = 3;
    CHECK_ERR(ptc_executable_run_alloc(exe, &t, 1, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
              "embedding: argument 'indices': index 3 is out of range");
    ix[1] = -1;
    CHECK_ERR(ptc_executable_run_alloc(exe, &t, 1, NULL, &r), PTC_CODE_INVALID_ARGUMENT,
              "index -1 is out of range");
    ptc_results_destroy(r);
  }
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

/* conv2d with a symbolic spatial size, run at two sizes: all-ones input and
 * 3x3 all-ones kernel, stride 2, padding 1 -> corner 4, interior 9. */
static void test_conv_dynamic_run(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = 8;
  ptc_sym h = 0;
  CHECK_OK(ptc_graph_add_symbol(g, "h", &o, &h));
  ptc_dim xd[4] = {{1, 0, 0}, {1, 0, 0}, {8, h, 0}, {8, h, 0}};
  static const float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  int64_t ws[4] = {1, 1, 3, 3};
  ptc_value x, w, y;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 4, NULL, &x));
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, ws, 4, ones, PTC_CONSTANT_BORROW, &w));
  ptc_attr ca[] = {ptc_attr_int("stride", 2), ptc_attr_int("padding", 1)};
  ptc_value xw[] = {x, w};
  CHECK_OK(ptc_graph_add_node(g, "conv2d", xw, 2, ca, 2, &y, 1, NULL));
  CHECK_OK(ptc_graph_add_output(g, y));
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  for (int64_t hv = 7; exe && hv <= 12; hv += 5) {
    float* data = malloc(sizeof(float) * (size_t)(hv * hv));
    if (!data) break;
    for (int64_t i = 0; i < hv * hv; i++) data[i] = 1.0f;
    int64_t shape[4] = {1, 1, hv, hv};
    ptc_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.device.device_type = PTC_DEVICE_CPU;
    t.ndim = 4;
    t.dtype = ptc_dtype_to_dl(PTC_F32);
    t.shape = shape;
    ptc_results* r = NULL;
    CHECK_OK(ptc_executable_run_alloc(exe, &t, 1, NULL, &r));
    const ptc_tensor* ot = ptc_results_get(r, 0);
    int64_t oh = (hv - 1) / 2 + 1;
    CHECK(ot && ot->ndim == 4 && ot->shape[2] == oh && ot->shape[3] == oh);
    if (ot && ot->ndim == 4) {
      const float* v = ot->data;
      CHECK(v[0] == 4.0f && v[oh + 1] == 9.0f);
    }
    ptc_results_destroy(r);
    free(data);
  }
  ptc_executable_release(exe);
  ptc_graph_destroy(g);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (g) {
    test_matmul_errors(g);
    test_conv_pool_errors(g);
    test_misc_errors(g);
  }
  ptc_graph_destroy(g);
  test_symbolic();
  test_embedding_runtime();
  test_conv_dynamic_run();
  ptc_context_release(ctx);
  return check_summary("test_ops_nn_errors");
}
