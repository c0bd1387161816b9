/* test_ir_addmm.c - addmm(bias, x, W) (GPT-2's Conv1D: W is [in, out], a
 * bias along the last dim) after the decompositions (lib/decomp) and the
 * lowering: for f32, f16 and bf16 the GEMM extern carries the bias (its
 * epilogue; the cuda pipeline generates no pointwise kernel for it, also
 * with the view that follows in GPT-2), beta becomes the extern's beta;
 * alpha != 1 keeps the general form (a scaled product plus a pointwise
 * add), as PTC_ADDMM_BIAS_EPILOGUE=0 does in f16/bf16. Values: the cpu
 * backend against the ref backend. */
#include "ir_test_util.h"

#include "backends/cuda/cuda.h"
#include "lib/decomp/decomp.h"

#define M 6
#define K 5
#define N 8

static ptc_value addmm_graph(ptc_graph* g, int32_t dt, double beta, double alpha, bool view) {
  const int64_t sb[1] = {N}, sx[2] = {M, K}, sw[2] = {K, N};
  ptc_value in[3] = {t_input(g, dt, 1, sb), t_input(g, dt, 2, sx), t_input(g, dt, 2, sw)};
  ptc_attr at[2] = {ptc_attr_float("beta", beta), ptc_attr_float("alpha", alpha)};
  ptc_value y = t_node(g, "addmm", in, 3, at, 2);
  if (view) {
    ptc_attr sh = ptc_attr_ints("size", (const int64_t[]){2, M / 2, N}, 3);
    y = t_node(g, "view", &y, 1, &sh, 1);
  }
  return y;
}

/* The decomposed + lowered program's nodes, the extern's bias and beta. */
static void check_ir(ptc_context* ctx, int32_t dt, double beta, double alpha) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  CHECK_OK(ptc_graph_add_output(g, addmm_graph(g, dt, beta, alpha, false)));
  ptc_graph* dg = NULL;
  CHECK_OK(decomp_graph(g, &dg));
  ir_program* p = dg ? t_lower(dg, NULL) : NULL;
  const char* env = getenv("PTC_ADDMM_BIAS_EPILOGUE");
  bool folded = alpha == 1.0 && !(env && !strcmp(env, "0") && dt != PTC_F32);
  size_t want_nodes = folded ? 1 : 2;
  CHECK(p && p->nodes.len == want_nodes && t_count_nodes(p, IR_EXTERN) == 1);
  const ir_extern* e = NULL;
  for (size_t i = 0; p && i < p->nodes.len; i++)
    if (ir_node_at(p, i)->kind == IR_EXTERN) e = &ir_node_at(p, i)->ext;
  CHECK(e && e->kind == IR_EXT_MATMUL);
  if (e && folded) {
    if (!(e->in[2] >= 0 && e->beta == beta))
      printf("  %s addmm beta %g: extern bias %d beta %g\n", ptc_dtype_name(dt), beta, e->in[2],
             e->beta);
    CHECK(e->in[2] >= 0 && e->beta == beta && e->alpha == 1.0);
  }
  if (e && !folded) CHECK(e->in[2] < 0);
  ir_program_destroy(p);
  ptc_graph_destroy(dg);
  ptc_graph_destroy(g);
}

static void fill(void* data, int32_t dt, size_t n, uint32_t seed) {
  uint32_t s = seed * 2654435761u + 7;
  for (size_t i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    float v = (float)((int)((s >> 8) % 17) - 8) / 8.0f; /* exact in bf16/f16 */
    if (dt == PTC_F32) ((float*)data)[i] = v;
    else {
      uint32_t u;
      memcpy(&u, &v, 4);
      ((uint16_t*)data)[i] = (uint16_t)(u >> 16); /* bf16: v has few mantissa bits */
    }
  }
}

static float elem(const ptc_tensor* t, int32_t dt, size_t i) {
  const char* base = (const char*)t->data + t->byte_offset;
  if (dt == PTC_F32) return ((const float*)base)[i];
  uint32_t u = (uint32_t)((const uint16_t*)base)[i] << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* cpu backend against ref on the original graph (f32 and bf16). */
static void check_values(ptc_context* ctx, int32_t dt, double beta, double alpha) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  CHECK_OK(ptc_graph_add_output(g, addmm_graph(g, dt, beta, alpha, true)));
  int64_t shapes[3][2] = {{N, 0}, {M, K}, {K, N}};
  const int32_t ranks[3] = {1, 2, 2};
  size_t counts[3] = {N, M * K, K * N};
  float store[3][M * K + K * N];
  ptc_tensor in[3];
  for (int k = 0; k < 3; k++) {
    fill(store[k], dt, counts[k], (uint32_t)k + 1);
    memset(&in[k], 0, sizeof in[k]);
    in[k].data = store[k];
    in[k].device.device_type = PTC_DEVICE_CPU;
    in[k].ndim = ranks[k];
    in[k].dtype = ptc_dtype_to_dl(dt);
    in[k].shape = shapes[k];
  }
  ptc_results* res[2] = {NULL, NULL};
  const char* const backends[2] = {"ref", "cpu"};
  for (int b = 0; b < 2; b++) {
    ptc_compile_options o;
    ptc_compile_options_init(&o);
    o.backend = backends[b];
    ptc_executable* e = NULL;
    CHECK_OK(ptc_compile(ctx, g, &o, &e));
    if (e) CHECK_OK(ptc_executable_run_alloc(e, in, 3, NULL, &res[b]));
    ptc_executable_release(e);
  }
  double tol = dt == PTC_F32 ? 1e-5 : 1e-2;
  for (size_t i = 0; res[0] && res[1] && i < M * N; i++) {
    float r = elem(ptc_results_get(res[0], 0), dt, i), c = elem(ptc_results_get(res[1], 0), dt, i);
    if (!(fabs((double)r - c) <= tol * (1 + fabs((double)r)))) {
      printf("  %s addmm element %zu: ref %g cpu %g\n", ptc_dtype_name(dt), i, (double)r,
             (double)c);
      CHECK(false);
      break;
    }
  }
  ptc_results_destroy(res[0]);
  ptc_results_destroy(res[1]);
  ptc_graph_destroy(g);
}

/* The cuda pipeline: addmm alone is the extern alone (no kernel); addmm +
 * view + tanh (GPT-2: the view feeds the next op) one kernel, the tanh,
 * which reads the GEMM output only (2 pointer parameters: in and out). */
static void check_cuda(ptc_context* ctx, int32_t dt) {
  for (int consumer = 0; consumer < 2; consumer++) {
    ptc_graph* g = NULL;
    CHECK_OK(ptc_graph_create(ctx, &g));
    ptc_value y = addmm_graph(g, dt, 1.0, 1.0, consumer == 1);
    if (consumer) y = t_unary(g, "tanh", y);
    CHECK_OK(ptc_graph_add_output(g, y));
    ptc_strbuf tu;
    ptc_sb_init(&tu);
    cuda_check_stats st;
    memset(&st, 0, sizeof st);
    CHECK_OK(cuda_check_generate(ctx, g, true, "addmm_", &tu, &st));
    const char* src = tu.data ? tu.data : "";
    size_t ptrs = 0;
    const char* entry = strstr(src, "_i32(");
    for (const char* q = entry; q && *q && *q != ')'; q++) ptrs += *q == '*';
    printf("cuda addmm%s %s: %zu kernel(s), %zu extern(s), %zu pointer parameters\n",
           consumer ? " + view + tanh" : "", ptc_dtype_name(dt), st.kernels, st.externs, ptrs);
    CHECK(st.externs == 1 && st.kernels == (size_t)consumer);
    if (consumer) CHECK(ptrs == 3); /* in, out, the error flag */
    ptc_sb_free(&tu);
    ptc_graph_destroy(g);
  }
}

int main(void) {
  ptc_context* ctx = NULL;
  CHECK_OK(ptc_context_create(NULL, &ctx));
  const int32_t dts[3] = {PTC_F32, PTC_BF16, PTC_F16};
  /* PTC_ADDMM_BIAS_EPILOGUE=0: the general form (bf16: product, casts, add) */
  setenv("PTC_ADDMM_BIAS_EPILOGUE", "0", 1);
  check_ir(ctx, PTC_BF16, 1.0, 1.0);
  check_ir(ctx, PTC_BF16, 1.0, 2.0);
  unsetenv("PTC_ADDMM_BIAS_EPILOGUE");
  for (int d = 0; d < 3; d++) {
    check_ir(ctx, dts[d], 1.0, 1.0);
    check_ir(ctx, dts[d], 0.5, 1.0);
    check_ir(ctx, dts[d], 1.0, 2.0);
  }
  for (int d = 0; d < 2; d++) {
    check_values(ctx, dts[d], 1.0, 1.0);
    check_values(ctx, dts[d], 0.5, 1.0);
    check_values(ctx, dts[d], 1.0, 2.0);
    check_cuda(ctx, dts[d]);
  }
  ptc_context_release(ctx);
  return check_summary("test_ir_addmm");
}
