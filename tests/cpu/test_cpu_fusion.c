/* test_cpu_fusion.c - asserts on the CPU backend's schedule through the
 * public API (ptc_executable_num_kernels / ptc_executable_format): small
 * graphs whose fused kernel counts are known (a pointwise chain is one
 * kernel, softmax and layer_norm at most two, matmul + bias + relu one
 * extern call with the epilogue fused), the same graphs compiled with
 * disable_fusion have more kernels, every result equals the oracle's, and
 * one executable with a dynamic batch dim (min_value 1) runs batch sizes 1,
 * 2, 7, 64 and 1000.
 *
 * Usage: test_cpu_fusion [A [B]]   (defaults "cpu" and "ref")
 * A backend A that is missing is a skip (exit 77) unless PTC_EXPECT_CPU=1;
 * A = "ref" is a skip too (it never fuses). */
#include "../check.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

enum { SKIP = 77 };

static ptc_context* ctx;
static const char* backend_a = "cpu";
static const char* backend_b = "ref";

/* ---- graph building ------------------------------------------------------------------ */
static ptc_value node(ptc_graph* g, const char* op, const ptc_value* in, size_t n_in,
                      const ptc_attr* a, size_t n_a) {
  ptc_value out = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_node(g, op, in, n_in, a, n_a, &out, 1, NULL));
  return out;
}

static ptc_value unary(ptc_graph* g, const char* op, ptc_value x) {
  return node(g, op, &x, 1, NULL, 0);
}

static ptc_value scalar_op(ptc_graph* g, const char* op, ptc_value x, double s) {
  ptc_attr a = ptc_attr_float("other", s);
  return node(g, op, &x, 1, &a, 1);
}

static ptc_value input2(ptc_graph* g, const char* name, int64_t r, int64_t c) {
  ptc_dim d[2] = {{r, 0, 0}, {c, 0, 0}};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, name, PTC_F32, d, 2, NULL, &v));
  return v;
}

static ptc_value constant(ptc_graph* g, const char* name, const int64_t* shape, size_t rank) {
  int64_t n = 1;
  for (size_t i = 0; i < rank; i++) n *= shape[i];
  float* data = malloc((size_t)n * sizeof *data);
  ptc_value v = PTC_VALUE_NONE;
  if (!data) return v;
  for (int64_t i = 0; i < n; i++) data[i] = (float)sin((double)i * 0.37) * 0.3f;
  CHECK_OK(ptc_graph_add_constant(g, name, PTC_F32, shape, rank, data, PTC_CONSTANT_COPY, &v));
  free(data);
  return v;
}

static void build_sin_cos(ptc_graph* g) {
  ptc_value x = input2(g, "x", 64, 33);
  CHECK_OK(ptc_graph_add_output(g, unary(g, "cos", unary(g, "sin", x))));
}

static void build_chain7(ptc_graph* g) {
  ptc_value x = input2(g, "x", 128, 130);
  ptc_value y = unary(g, "sin", x);
  y = scalar_op(g, "mul", y, 2.0);
  y = scalar_op(g, "add", y, 1.0);
  y = unary(g, "relu", y);
  y = unary(g, "cos", y);
  y = unary(g, "neg", y);
  y = scalar_op(g, "mul", y, 0.5);
  CHECK_OK(ptc_graph_add_output(g, y));
}

static void build_softmax(ptc_graph* g) {
  ptc_value x = input2(g, "x", 32, 100);
  ptc_attr a = ptc_attr_int("dim", -1);
  CHECK_OK(ptc_graph_add_output(g, node(g, "softmax", &x, 1, &a, 1)));
}

static void build_layer_norm(ptc_graph* g) {
  int64_t n = 64;
  ptc_value in[3] = {input2(g, "x", 16, n), constant(g, "w", &n, 1), constant(g, "b", &n, 1)};
  ptc_attr a = ptc_attr_ints("normalized_shape", &n, 1);
  CHECK_OK(ptc_graph_add_output(g, node(g, "layer_norm", in, 3, &a, 1)));
}

static void build_mm_bias_relu(ptc_graph* g) {
  int64_t ws[2] = {32, 16}, bs[1] = {16};
  ptc_value in[2] = {input2(g, "x", 8, 32), constant(g, "w", ws, 2)};
  ptc_value mm = node(g, "matmul", in, 2, NULL, 0);
  ptc_value add_in[2] = {mm, constant(g, "b", bs, 1)};
  ptc_value y = unary(g, "relu", node(g, "add", add_in, 2, NULL, 0));
  CHECK_OK(ptc_graph_add_output(g, y));
}

/* ---- running and comparing --------------------------------------------------------- */
static ptc_executable* compile(const ptc_graph* g, const char* backend, bool nofuse) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  o.disable_fusion = nofuse;
  ptc_executable* exe = NULL;
  CHECK_OK(ptc_compile(ctx, g, &o, &exe));
  return exe;
}

static char* describe(const ptc_executable* exe) {
  size_t need = 0;
  ptc_status s = ptc_executable_format(exe, NULL, 0, &need);
  ptc_status_destroy(s);
  char* buf = malloc(need + 1);
  if (!buf) return NULL;
  s = ptc_executable_format(exe, buf, need + 1, &need);
  if (s) buf[0] = 0;
  ptc_status_destroy(s);
  return buf;
}

/* Contiguous f32 inputs shaped like the graph's inputs; symbolic dims take
 * `batch`. Returns the count (<= 4). */
static size_t make_inputs(const ptc_graph* g, int64_t batch, ptc_tensor* t, int64_t (*shapes)[4],
                          float** data) {
  size_t n = ptc_graph_num_inputs(g);
  for (size_t i = 0; i < n && i < 4; i++) {
    ptc_value_info info = {.struct_size = sizeof info};
    CHECK_OK(ptc_graph_value_info(g, ptc_graph_input(g, i), &info));
    int64_t numel = 1;
    for (uint32_t d = 0; d < info.rank && d < 4; d++) {
      shapes[i][d] = info.shape[d].sym ? batch : info.shape[d].value;
      numel *= shapes[i][d];
    }
    data[i] = malloc((size_t)numel * sizeof(float));
    for (int64_t k = 0; data[i] && k < numel; k++)
      data[i][k] = (float)(((k * 7919 + (int64_t)i * 104729) % 2001) - 1000) / 1000.0f;
    t[i] = (ptc_tensor){data[i], {PTC_DEVICE_CPU, 0}, (int32_t)info.rank,
                        ptc_dtype_to_dl(PTC_F32), shapes[i], NULL, 0};
  }
  return n < 4 ? n : 4;
}

/* Runs both executables on the same inputs; true when every f32 output is
 * within rtol 1e-4 / atol 1e-5. */
static bool same_results(const ptc_graph* g, const ptc_executable* a, const ptc_executable* b,
                         int64_t batch) {
  ptc_tensor t[4];
  int64_t shapes[4][4];
  float* data[4] = {NULL, NULL, NULL, NULL};
  size_t n = make_inputs(g, batch, t, shapes, data);
  ptc_results *ra = NULL, *rb = NULL;
  CHECK_OK(ptc_executable_run_alloc(a, t, n, NULL, &ra));
  CHECK_OK(ptc_executable_run_alloc(b, t, n, NULL, &rb));
  bool ok = ra && rb && ptc_results_count(ra) == ptc_results_count(rb);
  for (size_t i = 0; ok && i < ptc_results_count(ra); i++) {
    const ptc_tensor *x = ptc_results_get(ra, i), *y = ptc_results_get(rb, i);
    int64_t numel = 1;
    ok = x->ndim == y->ndim;
    for (int32_t d = 0; ok && d < x->ndim; d++) {
      ok = x->shape[d] == y->shape[d];
      numel *= x->shape[d];
    }
    const float *px = x->data, *py = y->data;
    for (int64_t k = 0; ok && k < numel; k++) {
      ok = fabsf(px[k] - py[k]) <= 1e-5f + 1e-4f * fabsf(py[k]);
      if (!ok)
        printf("  output %zu element %lld: %s %.9g, %s %.9g\n", i, (long long)k, backend_a,
               px[k], backend_b, py[k]);
    }
  }
  ptc_results_destroy(ra);
  ptc_results_destroy(rb);
  for (size_t i = 0; i < n; i++) free(data[i]);
  return ok;
}

/* ---- the cases --------------------------------------------------------------------------- */
typedef struct fusion_case {
  const char* name;
  void (*build)(ptc_graph* g);
  size_t max_kernels;    /* asserted */
  size_t target_kernels; /* reported when missed */
  bool needs_extern;     /* the description names an extern call */
} fusion_case;

static const fusion_case cases[] = {
    {"sin_cos", build_sin_cos, 1, 1, false},
    {"pointwise_chain_7", build_chain7, 1, 1, false},
    {"softmax_last_dim", build_softmax, 2, 1, false},
    {"layer_norm", build_layer_norm, 2, 1, false},
    {"matmul_bias_relu", build_mm_bias_relu, 1, 1, true},
};

static void run_case(const fusion_case* fc) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  fc->build(g);
  ptc_executable* fused = compile(g, backend_a, false);
  ptc_executable* nofuse = compile(g, backend_a, true);
  ptc_executable* oracle = compile(g, backend_b, false);
  size_t k = ptc_executable_num_kernels(fused), ku = ptc_executable_num_kernels(nofuse);
  char* text = describe(fused);
  printf("%s: %zu kernel(s) fused (max %zu, target %zu), %zu unfused%s\n", fc->name, k,
         fc->max_kernels, fc->target_kernels, ku,
         k > fc->target_kernels && k <= fc->max_kernels ? "  [target missed]" : "");
  CHECK(fused && k >= 1 && k <= fc->max_kernels);
  CHECK(nofuse && ku > k);
  if (fc->needs_extern) CHECK(text && strstr(text, "extern"));
  if (k > fc->max_kernels && text) printf("%s", text);
  CHECK(fused && oracle && same_results(g, fused, oracle, 0));
  CHECK(nofuse && oracle && same_results(g, nofuse, oracle, 0));
  free(text);
  ptc_executable_release(fused);
  ptc_executable_release(nofuse);
  ptc_executable_release(oracle);
  ptc_graph_destroy(g);
}

/* layer_norm -> gelu -> linear on x[b, 64] with b a symbol of range [1, ...]. */
static void test_dynamic_batch(void) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  so.hint = 8;
  so.min_value = 1;
  ptc_sym b = 0;
  CHECK_OK(ptc_graph_add_symbol(g, "batch", &so, &b));
  int64_t n = 64, ws[2] = {24, 64}, bs[1] = {24};
  ptc_dim xd[2] = {{8, b, 0}, {n, 0, 0}};
  ptc_value x = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 2, NULL, &x));
  ptc_value ln_in[3] = {x, constant(g, "ln_w", &n, 1), constant(g, "ln_b", &n, 1)};
  ptc_attr ns = ptc_attr_ints("normalized_shape", &n, 1);
  ptc_value h = unary(g, "gelu", node(g, "layer_norm", ln_in, 3, &ns, 1));
  ptc_value lin_in[3] = {h, constant(g, "fc_w", ws, 2), constant(g, "fc_b", bs, 1)};
  CHECK_OK(ptc_graph_add_output(g, node(g, "linear", lin_in, 3, NULL, 0)));
  ptc_executable* a = compile(g, backend_a, false);
  ptc_executable* o = compile(g, backend_b, false);
  static const int64_t batches[] = {1, 2, 7, 64, 1000};
  for (size_t i = 0; a && o && i < sizeof batches / sizeof batches[0]; i++) {
    bool ok = same_results(g, a, o, batches[i]);
    printf("dynamic batch %lld: %s\n", (long long)batches[i], ok ? "ok" : "MISMATCH");
    CHECK(ok);
  }
  printf("dynamic batch: %zu kernel(s) in one executable\n", ptc_executable_num_kernels(a));
  ptc_executable_release(a);
  ptc_executable_release(o);
  ptc_graph_destroy(g);
}

int main(int argc, char** argv) {
  if (argc > 1) backend_a = argv[1];
  if (argc > 2) backend_b = argv[2];
  const char* why = NULL;
  const char* expect = getenv("PTC_EXPECT_CPU");
  bool expected = expect && !strcmp(expect, "1");
  if (!ptc_backend_available(backend_a, &why) || !strcmp(backend_a, "ref")) {
    printf("%s: backend '%s' %s (%s)\n", expected ? "FAIL" : "SKIP", backend_a,
           strcmp(backend_a, "ref") ? "is not available" : "does not fuse",
           why ? why : "no reason given");
    return expected ? 1 : SKIP;
  }
  CHECK_OK(ptc_context_create(NULL, &ctx));
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
  test_dynamic_batch();
  ptc_context_release(ctx);
  return check_summary("test_cpu_fusion");
}
