/* test_ir_pow.c - pow(tensor, constant scalar) as ATen's pow_tensor_scalar
 * computes it (lib/ir/lower_pointwise.c): exponents 0, 1, 2, 3, -2, 0.5,
 * -0.5 and -1 lower to a constant, the operand, multiplies, a division,
 * sqrt, rsqrt and reciprocal (no IR_POW, so no powf in the generated
 * kernels); other exponents stay IR_POW; integer dtypes keep exact,
 * wrapping integer results. Each graph's values are checked on the ref
 * backend against eager's (edge values included: -inf ** 0.5 is NaN,
 * -0 ** -0.5 is -inf), and the IR interpreter and the cpu backend against
 * the ref backend; the cuda kernels of GPT-2's written-out gelu (pow(x, 3.0))
 * are generated (no GPU or NVRTC needed) and must not call pow/powf. */
#include "ir_test_util.h"

#include "backends/cuda/cuda.h"

#define N_VALS 16

/* Inputs: specials first, then ordinary values of both signs. */
static const double VALS[N_VALS] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0,  -1.0,   0.5,
                                    -2.5, 3.25, 1e-3,    -7.0,      1e20, 1e-30, -0.125, 2.0};

typedef struct pow_case {
  double e;
  bool is_int; /* the exponent as a Python int */
  ir_opcode want; /* an opcode the body must hold (IR_LOAD: none in particular) */
  bool keeps_pow;
} pow_case;

static const pow_case CASES[] = {
    {0, false, IR_LOAD, false},      {1, false, IR_LOAD, false},     {2, false, IR_MUL, false},
    {3, false, IR_MUL, false},       {-2, false, IR_DIV, false},     {0.5, false, IR_SQRT, false},
    {-0.5, false, IR_RSQRT, false},  {-1, false, IR_RECIPROCAL, false}, {2, true, IR_MUL, false},
    {3, true, IR_MUL, false},        {-1, true, IR_RECIPROCAL, false}, {2.5, false, IR_POW, true},
    {-1.5, false, IR_POW, true},     {4, true, IR_POW, true},
};

/* Eager's result (torch.pow(x, e) for a float32 tensor). */
static float eager_f32(float x, double e) {
  if (e == 0) return 1.0f;
  if (e == 1) return x;
  if (e == 0.5) return sqrtf(x);
  if (e == -0.5) return 1.0f / sqrtf(x);
  if (e == -1) return 1.0f / x;
  if (e == 2) return x * x;
  if (e == 3) return x * x * x;
  if (e == -2) return 1.0f / (x * x);
  return powf(x, (float)e);
}

static bool same_f32(float a, float b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b) || a == 0 || b == 0) return a == b && signbit(a) == signbit(b);
  return fabsf(a - b) <= 1e-6f * fabsf(b);
}

static ptc_value pow_node(ptc_graph* g, ptc_value x, const pow_case* c) {
  ptc_attr at = c->is_int ? ptc_attr_int("other", (int64_t)c->e) : ptc_attr_float("other", c->e);
  return t_node(g, "pow", &x, 1, &at, 1);
}

static ptc_status run_on(ptc_context* ctx, const ptc_graph* g, const char* backend,
                         const ptc_tensor* in, ptc_results** res) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  ptc_executable* e = NULL;
  ptc_status s = ptc_compile(ctx, g, &o, &e);
  if (!s) s = ptc_executable_run_alloc(e, in, 1, NULL, res);
  ptc_executable_release(e);
  return s;
}

static const float* out_f32(const ptc_results* r) {
  const ptc_tensor* t = ptc_results_get(r, 0);
  return (const float*)((const char*)t->data + t->byte_offset);
}

/* f32 x ** e: the IR, the values of ref (against eager), ir_interpret and cpu. */
static void test_f32(ptc_context* ctx, const pow_case* c) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  const int64_t shape[1] = {N_VALS};
  ptc_value x = t_input(g, PTC_F32, 1, shape);
  CHECK_OK(ptc_graph_add_output(g, pow_node(g, x, c)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 1);
  if (p && p->nodes.len == 1) {
    uint32_t pows = t_count_ops(p, 0, IR_POW);
    bool has_want = c->want == IR_LOAD || t_count_ops(p, 0, c->want) >= 1;
    if ((pows != 0) != c->keeps_pow || !has_want)
      printf("  f32 ** %g%s: %u IR_POW, wanted opcode %s %s\n", c->e, c->is_int ? " (int)" : "",
             pows, ir_opcode_name(c->want), has_want ? "present" : "missing");
    CHECK((pows != 0) == c->keeps_pow && has_want);
    if (c->e == 3) CHECK(t_count_ops(p, 0, IR_MUL) == 2);
  }
  ir_program_destroy(p);

  float xs[N_VALS];
  for (int i = 0; i < N_VALS; i++) xs[i] = (float)VALS[i];
  ptc_tensor in;
  memset(&in, 0, sizeof in);
  in.data = xs;
  in.device.device_type = PTC_DEVICE_CPU;
  in.ndim = 1;
  in.dtype = ptc_dtype_to_dl(PTC_F32);
  in.shape = (int64_t*)shape;
  ptc_results* ref = NULL;
  ptc_results* cpu = NULL;
  CHECK_OK(run_on(ctx, g, "ref", &in, &ref));
  CHECK_OK(run_on(ctx, g, "cpu", &in, &cpu));
  for (int i = 0; ref && cpu && i < N_VALS; i++) {
    float want = eager_f32(xs[i], c->e), r = out_f32(ref)[i], cp = out_f32(cpu)[i];
    /* 1e20 ** 2.5 etc. are powf's; 1e-30 ** -1.5 overflows in both */
    if (!same_f32(r, want) || !same_f32(cp, r)) {
      printf("  f32 %g ** %g: eager %.9g, ref %.9g, cpu %.9g\n", (double)xs[i], c->e,
             (double)want, (double)r, (double)cp);
      CHECK(false);
    }
  }
  ptc_results_destroy(ref);
  ptc_results_destroy(cpu);
  /* the IR interpreter on finite, non-zero values (t_matches_ref's tolerance
   * compares finite numbers) */
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 1, shape, 7);
  for (int i = 0; i < N_VALS; i++)
    if (((float*)a.data)[i] == 0) ((float*)a.data)[i] = 0.25f;
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
  t_tensor_free(&a);
  ptc_graph_destroy(g);
}

/* Integer x ** k for k in 0..3: exact and wrapping (i8: (-6) ** 3 = -216
 * wraps to 40), no IR_POW; on i64, and on i8 against hand-computed values. */
static void test_int(ptc_context* ctx) {
  static const int8_t xs8[8] = {-6, -3, -1, 0, 1, 2, 7, 100};
  for (int k = 0; k <= 4; k++) {
    pow_case c = {(double)k, true, IR_LOAD, k == 4};
    for (int w = 0; w < 2; w++) {
      int32_t dt = w ? PTC_I8 : PTC_I64;
      ptc_graph* g = NULL;
      CHECK_OK(ptc_graph_create(ctx, &g));
      const int64_t shape[1] = {8};
      ptc_value x = t_input(g, dt, 1, shape);
      CHECK_OK(ptc_graph_add_output(g, pow_node(g, x, &c)));
      ir_program* p = t_lower(g, NULL);
      CHECK(p && p->nodes.len == 1 && (t_count_ops(p, 0, IR_POW) != 0) == c.keeps_pow);
      ir_program_destroy(p);
      if (dt == PTC_I64) {
        t_tensor a;
        t_tensor_init(&a, PTC_I64, 1, shape, 3);
        CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 0, 0));
        t_tensor_free(&a);
      } else {
        ptc_tensor in;
        memset(&in, 0, sizeof in);
        in.data = (void*)xs8;
        in.device.device_type = PTC_DEVICE_CPU;
        in.ndim = 1;
        in.dtype = ptc_dtype_to_dl(PTC_I8);
        in.shape = (int64_t*)shape;
        const char* const backends[2] = {"ref", "cpu"};
        for (int b = 0; b < 2; b++) {
          ptc_results* r = NULL;
          CHECK_OK(run_on(ctx, g, backends[b], &in, &r));
          const ptc_tensor* t = r ? ptc_results_get(r, 0) : NULL;
          for (int i = 0; t && i < 8; i++) {
            int64_t want = 1;
            for (int j = 0; j < k; j++) want *= xs8[i];
            int8_t got = ((const int8_t*)t->data + t->byte_offset)[i];
            if (got != (int8_t)(uint8_t)(want & 0xff)) {
              printf("  %s i8 %d ** %d = %d, want %d\n", backends[b], xs8[i], k, got,
                     (int8_t)(uint8_t)(want & 0xff));
              CHECK(false);
            }
          }
          ptc_results_destroy(r);
        }
      }
      ptc_graph_destroy(g);
    }
  }
}

/* bf16 (math in f32) and an int tensor to a float exponent (result f32). */
static void test_other_dtypes(ptc_context* ctx) {
  const int64_t shape[2] = {4, 5};
  const pow_case c3 = {3, false, IR_MUL, false}, ch = {0.5, false, IR_SQRT, false};
  const int32_t dts[3] = {PTC_BF16, PTC_F16, PTC_I64};
  for (int d = 0; d < 3; d++) {
    for (int k = 0; k < 2; k++) {
      ptc_graph* g = NULL;
      CHECK_OK(ptc_graph_create(ctx, &g));
      ptc_value x = t_input(g, dts[d], 2, shape);
      CHECK_OK(ptc_graph_add_output(g, pow_node(g, x, k ? &ch : &c3)));
      ir_program* p = t_lower(g, NULL);
      CHECK(p && p->nodes.len == 1 && t_count_ops(p, 0, IR_POW) == 0 &&
            t_count_ops(p, 0, k ? IR_SQRT : IR_MUL) >= 1);
      ir_program_destroy(p);
      if (dts[d] == PTC_I64) {
        t_tensor a;
        t_tensor_init(&a, PTC_I64, 2, shape, 5);
        CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
        t_tensor_free(&a);
      }
      ptc_graph_destroy(g);
    }
  }
}

/* GPT-2's gelu_new written out, in bf16 and f32: one cuda kernel, no pow. */
static void test_cuda_gelu_new(ptc_context* ctx) {
  const int32_t dts[2] = {PTC_BF16, PTC_F32};
  for (int d = 0; d < 2; d++) {
    ptc_graph* g = NULL;
    CHECK_OK(ptc_graph_create(ctx, &g));
    const int64_t shape[2] = {64, 3072};
    ptc_value x = t_input(g, dts[d], 2, shape);
    pow_case c3 = {3.0, false, IR_MUL, false};
    ptc_value x3 = t_scalar_op(g, "mul", pow_node(g, x, &c3), 0.044715);
    ptc_value inner = t_scalar_op(g, "mul", t_binary(g, "add", x, x3), 0.7978845608028654);
    ptc_value th = t_scalar_op(g, "add", t_unary(g, "tanh", inner), 1.0);
    CHECK_OK(ptc_graph_add_output(g, t_binary(g, "mul", t_scalar_op(g, "mul", x, 0.5), th)));
    ptc_strbuf tu;
    ptc_sb_init(&tu);
    cuda_check_stats st;
    memset(&st, 0, sizeof st);
    CHECK_OK(cuda_check_generate(ctx, g, true, "gelu_new_", &tu, &st));
    const char* src = tu.data ? tu.data : "";
    bool has_pow = strstr(src, "powf(") || strstr(src, " pow(") || strstr(src, "(pow(");
    printf("cuda gelu_new %s: %zu kernel(s), %zu bytes of source, pow call: %s\n",
           ptc_dtype_name(dts[d]), st.kernels, strlen(src), has_pow ? "yes" : "no");
    CHECK(st.kernels == 1 && strlen(src) > 0 && !has_pow);
    ptc_sb_free(&tu);
    ptc_graph_destroy(g);
  }
}

int main(void) {
  ptc_context* ctx = NULL;
  CHECK_OK(ptc_context_create(NULL, &ctx));
  for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) test_f32(ctx, &CASES[i]);
  test_int(ctx);
  test_other_dtypes(ctx);
  test_cuda_gelu_new(ctx);
  ptc_context_release(ctx);
  return check_summary("test_ir_pow");
}
