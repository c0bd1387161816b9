/* test_cpu_extern.c - the CPU backend's extern calls against the ref
 * backend: matmul (2-D, batched with broadcast batch dims, 1-D operands,
 * transposed and padded strides, bias per column and full bias with alpha,
 * beta and activations, f32/f64/f16/bf16), conv1d/conv2d (groups,
 * stride, padding incl. 'same', dilation, bias, activation, unbatched,
 * f16, strided output), and the ref-kernel fallback (single and multiple
 * outputs, strided outputs written through a temporary). The reference
 * runs in f64 on the same values. */
#include <math.h>
#include <stdlib.h>

#include "../../backends/cpu/cpu_rt.h"
#include "../check.h"

static ptc_context* ctx;

/* ---- views with their own storage ------------------------------------------------- */

typedef enum { LAYOUT_CONTIG = 0, LAYOUT_T, LAYOUT_PAD } layout;

typedef struct tview {
  runtime_tensor v;
  void* mem;
} tview;

static double gen(int64_t i, int salt) { return (double)(((i * 7 + salt * 13) % 23) - 11) / 8.0; }

/* Storage for shape with the given layout: LAYOUT_T swaps the strides of
 * the last two dims, LAYOUT_PAD pads every row by 3 elements. */
static tview make_view(int32_t dt, int rank, const int64_t* shape, layout lay) {
  tview t;
  memset(&t, 0, sizeof t);
  t.v.dtype = dt;
  t.v.rank = rank;
  memcpy(t.v.shape, shape, (size_t)rank * sizeof *shape);
  int64_t phys[PTC_MAX_RANK];
  memcpy(phys, shape, (size_t)rank * sizeof *shape);
  if (lay == LAYOUT_T && rank >= 2) {
    phys[rank - 2] = shape[rank - 1];
    phys[rank - 1] = shape[rank - 2];
  }
  if (lay == LAYOUT_PAD && rank >= 1) phys[rank - 1] += 3;
  int64_t st[PTC_MAX_RANK] = {0}, s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    st[d] = s;
    s *= phys[d];
  }
  memcpy(t.v.strides, st, sizeof st);
  if (lay == LAYOUT_T && rank >= 2) {
    t.v.strides[rank - 2] = st[rank - 1];
    t.v.strides[rank - 1] = st[rank - 2];
  }
  t.mem = calloc((size_t)(s > 0 ? s : 1), 8);
  t.v.data = t.mem;
  return t;
}

static void fill_view(tview* t, int salt) {
  if (cpu_view_numel(&t->v) == 0) return;
  int64_t idx[PTC_MAX_RANK] = {0}, flat = 0;
  do {
    cpu_elem_store(t->v.dtype, t->v.data, cpu_view_offset(&t->v, idx), gen(flat++, salt));
  } while (cpu_next_index(t->v.rank, t->v.shape, idx));
}

/* Logical (row-major) values of a view as doubles (malloc'ed). */
static double* values_of(const runtime_tensor* v) {
  int64_t n = cpu_view_numel(v);
  double* out = calloc((size_t)(n > 0 ? n : 1), sizeof *out);
  if (n == 0) return out;
  int64_t idx[PTC_MAX_RANK] = {0}, flat = 0;
  do {
    out[flat++] = cpu_elem_load(v->dtype, v->data, cpu_view_offset(v, idx));
  } while (cpu_next_index(v->rank, v->shape, idx));
  return out;
}

static ptc_tensor as_tensor(void* data, int32_t dt, int rank, int64_t* shape) {
  ptc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = PTC_DEVICE_CPU;
  t.ndim = rank;
  t.dtype = ptc_dtype_to_dl(dt);
  t.shape = shape;
  return t;
}

static double tolerance(int32_t dt) {
  switch (dt) {
    case PTC_F32: return 1e-4;
    case PTC_F64: return 1e-10;
    case PTC_F16: return 1e-2;
    case PTC_BF16: return 4e-2;
    default: return 0;
  }
}

/* Compares view `got` with f64 values `want`; prints the first mismatch. */
static bool close_to(const char* what, const runtime_tensor* got, const double* want) {
  double* g = values_of(got);
  int64_t n = cpu_view_numel(got);
  double tol = tolerance(got->dtype);
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) {
    double w = want[i];
    if (!(fabs(g[i] - w) <= tol * (1 + fabs(w)))) {
      printf("  %s: element %lld: got %g, want %g\n", what, (long long)i, g[i], w);
      ok = false;
    }
  }
  free(g);
  return ok;
}

/* Runs graph g (inputs in order, f64 data) with the ref backend; returns
 * output 0 as doubles (malloc'ed). */
static double* run_ref(ptc_graph* g, ptc_tensor* ins, size_t n_in, size_t out_index) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "ref";
  ptc_executable* exe = NULL;
  ptc_results* r = NULL;
  double* out = NULL;
  ptc_status s = ptc_compile(ctx, g, &o, &exe);
  if (!s) s = ptc_executable_run_alloc(exe, ins, n_in, NULL, &r);
  if (s) {
    printf("  ref failed: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
  } else {
    const ptc_tensor* t = ptc_results_get(r, out_index);
    runtime_tensor v;
    memset(&v, 0, sizeof v);
    v.data = t->data;
    v.dtype = ptc_dtype_from_dl(t->dtype);
    v.rank = t->ndim;
    memcpy(v.shape, t->shape, (size_t)t->ndim * sizeof *t->shape);
    runtime_tensor_contiguous(&v);
    out = values_of(&v);
  }
  ptc_results_destroy(r);
  ptc_executable_release(exe);
  return out;
}

static ptc_value add_input(ptc_graph* g, const char* name, int32_t dt, const runtime_tensor* v) {
  ptc_dim d[PTC_MAX_RANK];
  for (int i = 0; i < v->rank; i++) d[i] = (ptc_dim){v->shape[i], 0, 0};
  ptc_value x = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, name, dt, d, (uint32_t)v->rank, NULL, &x));
  return x;
}

static ptc_value unary(ptc_graph* g, const char* op, ptc_value x, const ptc_attr* a, size_t na) {
  ptc_value y = PTC_VALUE_NONE;
  size_t n;
  CHECK_OK(ptc_graph_add_node(g, op, &x, 1, a, na, &y, 1, &n));
  return y;
}

static ptc_value binary(ptc_graph* g, const char* op, ptc_value x, ptc_value y) {
  ptc_value in[2] = {x, y}, z = PTC_VALUE_NONE;
  size_t n;
  CHECK_OK(ptc_graph_add_node(g, op, in, 2, NULL, 0, &z, 1, &n));
  return z;
}

static const char* const act_op[] = {
    [IR_ACT_NONE] = NULL,     [IR_ACT_RELU] = "relu", [IR_ACT_GELU] = "gelu",
    [IR_ACT_GELU_TANH] = "gelu", [IR_ACT_SILU] = "silu", [IR_ACT_SIGMOID] = "sigmoid",
    [IR_ACT_TANH] = "tanh"};

static ptc_value activation(ptc_graph* g, ptc_value x, int32_t act) {
  if (act == IR_ACT_NONE) return x;
  ptc_attr tanh_mode = ptc_attr_string("approximate", "tanh");
  return unary(g, act_op[act], x, &tanh_mode, act == IR_ACT_GELU_TANH ? 1 : 0);
}

/* ---- matmul ---------------------------------------------------------------------------- */

typedef struct mm_case {
  const char* what;
  int32_t dt;
  int ra, rb, rbias, rc;
  int64_t a[4], b[4], bias[4], c[4];
  double alpha, beta;
  int32_t act;
  layout la, lb, lc;
} mm_case;

static double* mm_reference(const mm_case* k, tview* views, int n_in) {
  int32_t rdt = PTC_F64;
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_value in[3];
  ptc_tensor ts[3];
  double* vals[3] = {NULL, NULL, NULL};
  int64_t* shapes[3] = {views[0].v.shape, views[1].v.shape, views[2].v.shape};
  void* data[3];
  for (int i = 0; i < n_in; i++) {
    in[i] = add_input(g, i == 0 ? "a" : i == 1 ? "b" : "bias", rdt, &views[i].v);
    vals[i] = values_of(&views[i].v);
    data[i] = vals[i];
    ts[i] = as_tensor(data[i], rdt, views[i].v.rank, shapes[i]);
  }
  ptc_value y = binary(g, "matmul", in[0], in[1]);
  if (k->alpha != 1) {
    ptc_attr a = ptc_attr_float("other", k->alpha);
    y = unary(g, "mul", y, &a, 1);
  }
  if (n_in > 2) {
    ptc_attr b = ptc_attr_float("other", k->beta);
    y = binary(g, "add", y, k->beta != 1 ? unary(g, "mul", in[2], &b, 1) : in[2]);
  }
  y = activation(g, y, k->act);
  CHECK_OK(ptc_graph_add_output(g, y));
  double* want = run_ref(g, ts, (size_t)n_in, 0);
  for (int i = 0; i < n_in; i++) free(vals[i]);
  ptc_graph_destroy(g);
  return want;
}

static void run_mm_case(const mm_case* k) {
  int n_in = k->rbias ? 3 : 2;
  tview v[4];
  v[0] = make_view(k->dt, k->ra, k->a, k->la);
  v[1] = make_view(k->dt, k->rb, k->b, k->lb);
  v[2] = make_view(k->dt, k->rbias, k->bias, LAYOUT_CONTIG);
  v[3] = make_view(k->dt, k->rc, k->c, k->lc);
  for (int i = 0; i < 3; i++) fill_view(&v[i], i + 1);
  double* want = mm_reference(k, v, n_in);
  ir_program p;
  memset(&p, 0, sizeof p);
  ir_node n;
  memset(&n, 0, sizeof n);
  int32_t ins[3] = {0, 1, k->rbias ? 2 : -1}, outs[1] = {3};
  n.kind = IR_EXTERN;
  n.ext.kind = IR_EXT_MATMUL;
  n.ext.n_in = 3;
  n.ext.n_out = 1;
  n.ext.in = ins;
  n.ext.out = outs;
  n.ext.alpha = k->alpha;
  n.ext.beta = k->beta;
  n.ext.activation = k->act;
  runtime_tensor views[4] = {v[0].v, v[1].v, v[2].v, v[3].v};
  ptc_status s = cpu_extern_run(ctx, &p, &n, views, views + 3, NULL, 0, 0);
  CHECK_OK(s);
  if (want) {
    bool ok = close_to(k->what, &views[3], want);
    CHECK(ok);
    if (!ok) printf("  case: %s\n", k->what);
  }
  free(want);
  for (int i = 0; i < 4; i++) free(v[i].mem);
}

static void test_matmul(void) {
  static const mm_case cases[] = {
      {"2-D f32", PTC_F32, 2, 2, 0, 2, {5, 7}, {7, 3}, {0}, {5, 3}, 1, 1, 0, 0, 0, 0},
      {"2-D f32 large", PTC_F32, 2, 2, 0, 2, {70, 130}, {130, 90}, {0}, {70, 90}, 1, 1, 0, 0, 0, 0},
      {"A^T B^T padded C", PTC_F32, 2, 2, 0, 2, {6, 9}, {9, 4}, {0}, {6, 4}, 1, 1, 0,
       LAYOUT_T, LAYOUT_T, LAYOUT_PAD},
      {"batched broadcast", PTC_F32, 4, 3, 0, 4, {2, 1, 4, 5}, {3, 5, 6}, {0}, {2, 3, 4, 6}, 1, 1,
       0, 0, LAYOUT_T, 0},
      {"1-D @ 2-D", PTC_F32, 1, 2, 0, 1, {5}, {5, 4}, {0}, {4}, 1, 1, 0, 0, 0, 0},
      {"2-D @ 1-D", PTC_F64, 2, 1, 0, 1, {3, 5}, {5}, {0}, {3}, 1, 1, 0, 0, 0, 0},
      {"1-D @ 1-D", PTC_F32, 1, 1, 0, 0, {6}, {6}, {0}, {0}, 1, 1, 0, 0, 0, 0},
      {"1-D @ batched", PTC_F32, 1, 3, 0, 2, {5}, {2, 5, 3}, {0}, {2, 3}, 1, 1, 0, 0, 0, 0},
      {"bias per column, alpha, beta, relu", PTC_F32, 2, 2, 1, 2, {8, 6}, {6, 5}, {5}, {8, 5},
       0.5, 2.0, IR_ACT_RELU, 0, LAYOUT_T, 0},
      {"full bias, gelu", PTC_F32, 2, 2, 2, 2, {4, 3}, {3, 5}, {4, 5}, {4, 5}, 1.5, -1.0,
       IR_ACT_GELU, 0, 0, LAYOUT_PAD},
      {"row bias [M,1], sigmoid", PTC_F64, 2, 2, 2, 2, {4, 3}, {3, 5}, {4, 1}, {4, 5}, 1, 1,
       IR_ACT_SIGMOID, 0, 0, 0},
      {"batched bias per column, tanh", PTC_F32, 3, 3, 1, 3, {2, 3, 4}, {2, 4, 5}, {5}, {2, 3, 5},
       1, 1, IR_ACT_TANH, 0, 0, 0},
      {"f64 gelu_tanh", PTC_F64, 2, 2, 1, 2, {7, 9}, {9, 2}, {2}, {7, 2}, 1, 0.5,
       IR_ACT_GELU_TANH, 0, 0, 0},
      {"f16 silu", PTC_F16, 2, 2, 1, 2, {6, 8}, {8, 5}, {5}, {6, 5}, 1, 1, IR_ACT_SILU, 0, 0, 0},
      {"bf16 batched", PTC_BF16, 3, 2, 0, 3, {2, 3, 4}, {4, 3}, {0}, {2, 3, 3}, 1, 1, 0, 0,
       LAYOUT_T, 0},
      {"k = 0", PTC_F32, 2, 2, 1, 2, {3, 0}, {0, 4}, {4}, {3, 4}, 1, 1, IR_ACT_RELU, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_mm_case(&cases[i]);
}

/* ---- convolution ------------------------------------------------------------------------- */

typedef struct conv_case {
  const char* what;
  const char* op;
  int32_t dt;
  int rx, rw;
  int64_t x[4], w[4], out[4];
  int64_t stride, pad, dil, groups;
  const char* padding_str;
  bool bias;
  int32_t act;
  layout lout;
} conv_case;

static void run_conv_case(const conv_case* k) {
  tview v[4];
  int64_t bshape[1] = {k->w[0]};
  v[0] = make_view(k->dt, k->rx, k->x, LAYOUT_CONTIG);
  v[1] = make_view(k->dt, k->rw, k->w, LAYOUT_CONTIG);
  v[2] = make_view(k->dt, 1, bshape, LAYOUT_CONTIG);
  v[3] = make_view(k->dt, k->rx, k->out, k->lout);
  for (int i = 0; i < 3; i++) fill_view(&v[i], i + 4);
  /* the graph: its conv node (index 0) is the one the extern reads */
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_value in[3];
  ptc_tensor ts[3];
  double* vals[3];
  int n_in = k->bias ? 3 : 2;
  for (int i = 0; i < n_in; i++) {
    in[i] = add_input(g, i == 0 ? "x" : i == 1 ? "w" : "b", PTC_F64, &v[i].v);
    vals[i] = values_of(&v[i].v);
    ts[i] = as_tensor(vals[i], PTC_F64, v[i].v.rank, v[i].v.shape);
  }
  ptc_attr attrs[5];
  size_t na = 0;
  attrs[na++] = ptc_attr_ints("stride", &k->stride, 1);
  attrs[na++] = ptc_attr_ints("dilation", &k->dil, 1);
  attrs[na++] = ptc_attr_int("groups", k->groups);
  if (k->padding_str)
    attrs[na++] = ptc_attr_string("padding_str", k->padding_str);
  else
    attrs[na++] = ptc_attr_ints("padding", &k->pad, 1);
  ptc_value y = PTC_VALUE_NONE;
  size_t no;
  CHECK_OK(ptc_graph_add_node(g, k->op, in, (size_t)n_in, attrs, na, &y, 1, &no));
  y = activation(g, y, k->act);
  CHECK_OK(ptc_graph_add_output(g, y));
  double* want = run_ref(g, ts, (size_t)n_in, 0);
  ir_program p;
  memset(&p, 0, sizeof p);
  p.graph = g;
  ir_node n;
  memset(&n, 0, sizeof n);
  int32_t ins[3] = {0, 1, k->bias ? 2 : -1}, outs[1] = {3};
  n.kind = IR_EXTERN;
  n.ext.kind = IR_EXT_CONV;
  n.ext.n_in = 3;
  n.ext.n_out = 1;
  n.ext.in = ins;
  n.ext.out = outs;
  n.ext.graph_node = 0;
  n.ext.alpha = 1;
  n.ext.beta = 1;
  n.ext.activation = k->act;
  runtime_tensor views[4] = {v[0].v, v[1].v, v[2].v, v[3].v};
  CHECK_OK(cpu_extern_run(ctx, &p, &n, views, views + 3, NULL, 0, 0));
  if (want) {
    bool ok = close_to(k->what, &views[3], want);
    CHECK(ok);
    if (!ok) printf("  case: %s\n", k->what);
  }
  free(want);
  for (int i = 0; i < n_in; i++) free(vals[i]);
  for (int i = 0; i < 4; i++) free(v[i].mem);
  ptc_graph_destroy(g);
}

static void test_conv(void) {
  static const conv_case cases[] = {
      {"conv2d groups 2, stride 2, pad 1, bias, relu", "conv2d", PTC_F32, 4, 4, {2, 4, 7, 6},
       {6, 2, 3, 3}, {2, 6, 4, 3}, 2, 1, 1, 2, NULL, true, IR_ACT_RELU, 0},
      {"conv2d 1x1", "conv2d", PTC_F32, 4, 4, {1, 3, 5, 5}, {4, 3, 1, 1}, {1, 4, 5, 5}, 1, 0, 1,
       1, NULL, true, 0, 0},
      {"conv2d unbatched dilation 2, padded output", "conv2d", PTC_F64, 3, 4, {3, 8, 8},
       {2, 3, 3, 3}, {2, 4, 4}, 1, 0, 2, 1, NULL, false, 0, LAYOUT_PAD},
      {"conv2d same, even kernel", "conv2d", PTC_F32, 4, 4, {1, 2, 5, 6}, {3, 2, 2, 4},
       {1, 3, 5, 6}, 1, 0, 1, 1, "same", true, 0, 0},
      {"conv1d batched stride 2 pad 2", "conv1d", PTC_F32, 3, 3, {2, 3, 11}, {4, 3, 3},
       {2, 4, 7}, 2, 2, 1, 1, NULL, true, IR_ACT_SILU, 0},
      {"conv1d unbatched same dilation 2", "conv1d", PTC_F32, 2, 3, {2, 9}, {2, 2, 3}, {2, 9}, 1, 0,
       2, 1, "same", false, 0, 0},
      {"conv2d f16", "conv2d", PTC_F16, 4, 4, {1, 2, 4, 4}, {2, 2, 3, 3}, {1, 2, 2, 2}, 1, 0, 1, 1,
       NULL, true, 0, 0},
      {"conv2d bf16 depthwise", "conv2d", PTC_BF16, 4, 4, {1, 3, 5, 5}, {3, 1, 3, 3},
       {1, 3, 5, 5}, 1, 1, 1, 3, NULL, true, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_conv_case(&cases[i]);
}

/* ---- fallback ------------------------------------------------------------------------------ */

static void test_fallback(void) {
  int64_t shape[2] = {4, 6};
  tview x = make_view(PTC_F32, 2, shape, LAYOUT_T); /* strided input */
  fill_view(&x, 9);
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  ptc_value xi = add_input(g, "x", PTC_F32, &x.v);
  ptc_attr dim = ptc_attr_int("dim", 1);
  ptc_value cs = unary(g, "cumsum", xi, &dim, 1);
  ptc_attr kk[2] = {ptc_attr_int("k", 3), ptc_attr_int("dim", 1)};
  ptc_value tk[2];
  size_t n_out = 0;
  CHECK_OK(ptc_graph_add_node(g, "topk", &xi, 1, kk, 2, tk, 2, &n_out));
  CHECK(n_out == 2);
  CHECK_OK(ptc_graph_add_output(g, cs));
  CHECK_OK(ptc_graph_add_output(g, tk[0]));
  CHECK_OK(ptc_graph_add_output(g, tk[1]));
  double* xv = values_of(&x.v);
  float xf[24];
  for (int i = 0; i < 24; i++) xf[i] = (float)xv[i];
  ptc_tensor tin = as_tensor(xf, PTC_F32, 2, shape);
  double* want_cs = run_ref(g, &tin, 1, 0);
  double* want_tv = run_ref(g, &tin, 1, 1);
  double* want_ti = run_ref(g, &tin, 1, 2);
  ir_program p;
  memset(&p, 0, sizeof p);
  p.graph = g;
  ir_node n;
  memset(&n, 0, sizeof n);
  int32_t ins[1] = {0}, outs[2] = {1, 2};
  n.kind = IR_EXTERN;
  n.ext.kind = IR_EXT_FALLBACK;
  n.ext.n_in = 1;
  n.ext.n_out = 1;
  n.ext.in = ins;
  n.ext.out = outs;
  n.ext.graph_node = 0; /* cumsum, into a transposed (strided) output */
  tview o = make_view(PTC_F32, 2, shape, LAYOUT_T);
  runtime_tensor views[3] = {x.v, o.v};
  CHECK_OK(cpu_extern_run(ctx, &p, &n, views, views + 1, NULL, 0, 0));
  if (want_cs) CHECK(close_to("cumsum", &views[1], want_cs));
  /* topk: two outputs, one padded */
  int64_t kshape[2] = {4, 3};
  tview tv = make_view(PTC_F32, 2, kshape, LAYOUT_PAD), ti = make_view(PTC_I64, 2, kshape, 0);
  n.ext.graph_node = 1;
  n.ext.n_out = 2;
  runtime_tensor kv[3] = {x.v, tv.v, ti.v};
  CHECK_OK(cpu_extern_run(ctx, &p, &n, kv, kv + 1, NULL, 0, 0));
  if (want_tv) CHECK(close_to("topk values", &kv[1], want_tv));
  if (want_ti) CHECK(close_to("topk indices", &kv[2], want_ti));
  /* arity mismatch is an error, not a crash */
  n.ext.n_out = 1;
  CHECK_ERR(cpu_extern_run(ctx, &p, &n, kv, kv + 1, NULL, 0, 0), PTC_CODE_INTERNAL, "topk");
  free(xv);
  free(want_cs);
  free(want_tv);
  free(want_ti);
  free(x.mem);
  free(o.mem);
  free(tv.mem);
  free(ti.mem);
  ptc_graph_destroy(g);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  test_matmul();
  test_conv();
  test_fallback();
  ptc_context_release(ctx);
  return check_summary("test_cpu_extern");
}
