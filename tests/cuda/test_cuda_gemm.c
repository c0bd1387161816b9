/* test_cuda_gemm.c - the tensor-core GEMM (backends/cuda/cuda_gemm_tc.c).
 *
 *  --compile-only (needs NVRTC only; exit 77 without it): the variant
 *    choice from strides and alignment (pure), and the module
 *    (cuda_gemm_tc.cuh, every type and variant) compiles for sm_80 and sm_90.
 *  default (needs an sm_80+ GPU; exit 77 without one): the GEMM against a
 *    float64 host GEMM of the same (dtype-rounded) inputs: f16, bf16 and f32
 *    as TF32; sizes that are not tile multiples (M, N, K = 1, 7, 31, 129,
 *    257, ...), K = 1, batches (B shared or per entry), A transposed, B
 *    K-major (x @ W^T), B N-major (a @ b), odd strides (the generic
 *    variant), every activation, bias with beta, alpha; the variant chosen
 *    is checked against the expected one. Tolerance per element, relative
 *    to sum_k |a b| (+ |beta bias| + 1): f16 2e-3, bf16 1e-2, TF32 3e-3
 *    (PyTorch's matmul tolerances for these types are of the same order).
 *    Then the matmul extern through the API (cuda backend): act(x @ w + b)
 *    and act(addmm(b, x, w)) for f16, bf16, f32 and every activation, sizes
 *    with and without a partial 16-byte chunk (the epilogue pass's tail).
 *    Then cuBLASLt's algorithm tuning (cuda_blaslt.c; PTC_CUDA_GEMM_TUNE=4,
 *    every size tuned): a key's first call times its candidates once, the
 *    second does not, results right (f32, bf16 with split-K variants too;
 *    bias + relu epilogue and plain); PTC_CUDA_GEMM_TUNE=0 times nothing and a later call with it on
 *    times the key then; no timing during stream capture (the captured
 *    graph's GEMM right) and timing on the next call outside; 4 host threads
 *    enqueueing one key at once, each with its own bias, on their own
 *    streams (the lock is not held around cublasLtMatmul); the disk record
 *    read back after the cache is emptied (no second timing).
 *  --bench: M=4096 K=1024 N=4096 (bf16, f16, f32 as TF32; B K-major and
 *    N-major) with the tensor-core GEMM and with cuBLASLt, ms and TFLOP/s.
 *  --algos: every cuBLASLt candidate (16 heuristic results, PTC_ALGOS_N,
 *    the top one's other tiles, split-K 2..4 variants of the top two) of BERT-base's and GPT-2's
 *    GEMM shapes (f32 full precision, bf16), us and TFLOP/s each.
 * Exit status: 0 passed, 1 a failure, 77 skipped.
 */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_blaslt.h"
#include "backends/cuda/cuda_gemm_tc.h"
#include "backends/cuda/cuda_rt.h"
#include "cuda_test_dev.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ptc_context* ctx;
static const cuda_device* dev;
static int failed, passed;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct gcase {
  int32_t dtype;
  int64_t m, n, k, batch;
  int a_trans;     /* A stored [k][m] */
  int b_layout;    /* 0: B N-major [k][n]; 1: K-major [n][k]; 2: odd strides */
  int b_shared;    /* batch: one B for every entry */
  int act, bias;
  double alpha, beta;
  int want;        /* expected variant, -1 any */
} gcase;

static const char* vname(int v) { return v == CUDA_TCG_KK ? "kk" : v == CUDA_TCG_KN ? "kn" : "gen"; }

static void run_case(const gcase* c) {
  const cu_api* cu = &cuda_libs_get()->cu;
  int32_t dt = c->dtype;
  size_t es = ptc_dtype_size(dt);
  int64_t M = c->m, N = c->n, K = c->k, Bt = c->batch;
  cuda_mm_args g;
  memset(&g, 0, sizeof g);
  g.m = M, g.n = N, g.k = K;
  /* A: [batch][m][k] (or [batch][k][m]), padded rows keep 16-byte alignment */
  int64_t lda = c->a_trans ? ((M + 7) / 8) * 8 : ((K + 7) / 8) * 8;
  int64_t a_rows = c->a_trans ? K : M, a_per = a_rows * lda;
  g.a_sm = c->a_trans ? 1 : lda;
  g.a_sk = c->a_trans ? lda : 1;
  int64_t ldb, b_per;
  if (c->b_layout == 0) {
    ldb = ((N + 7) / 8) * 8;
    g.b_sk = ldb, g.b_sn = 1;
    b_per = K * ldb;
  } else if (c->b_layout == 1) {
    ldb = ((K + 7) / 8) * 8;
    g.b_sk = 1, g.b_sn = ldb;
    b_per = N * ldb;
  } else { /* element (k, n) at k * (2n + 1) + 2 n: no unit stride */
    g.b_sk = 2 * N + 1, g.b_sn = 2;
    b_per = K * (2 * N + 1);
  }
  g.c_sm = N, g.c_sn = 1;
  g.alpha = c->alpha;
  g.beta = c->beta;
  g.act = c->act;
  g.has_bias = c->bias;
  g.d_sm = 0, g.d_sn = 1;
  g.nb = 1;
  g.batch[0] = Bt;
  g.a_bs[0] = a_per;
  g.b_bs[0] = c->b_shared ? 0 : b_per;
  g.c_bs[0] = M * N;
  int64_t b_count = c->b_shared ? 1 : Bt;
  size_t abytes = (size_t)(Bt * a_per) * es, bbytes = (size_t)(b_count * b_per) * es;
  size_t cbytes = (size_t)(Bt * M * N) * es, dbytes = (size_t)N * es;
  void* ha = calloc(1, abytes + 16);
  void* hb = calloc(1, bbytes + 16);
  void* hc = calloc(1, cbytes + 16);
  void* hd = calloc(1, dbytes + 16);
  double* ad = calloc((size_t)(Bt * M * K) + 1, sizeof(double));
  double* bd = calloc((size_t)(b_count * K * N) + 1, sizeof(double));
  double* dd = calloc((size_t)N + 1, sizeof(double));
  cu_deviceptr pa = 0, pb = 0, pc = 0, pd = 0;
  char what[256];
  snprintf(what, sizeof what, "%s m%lld n%lld k%lld batch%lld%s B%s%s act%d%s alpha%g beta%g",
           ptc_dtype_name(dt), (long long)M, (long long)N, (long long)K, (long long)Bt,
           c->a_trans ? " A^T" : "", c->b_layout == 0 ? "[k][n]" : c->b_layout == 1 ? "[n][k]" : "(odd)",
           c->b_shared ? " shared" : "", c->act, c->bias ? " bias" : "", c->alpha, c->beta);
  if (!ha || !hb || !hc || !hd || !ad || !bd || !dd) {
    printf("FAIL %s: out of host memory\n", what);
    failed++;
    goto out;
  }
  for (int64_t b = 0; b < Bt; b++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t q = 0; q < K; q++)
        ad[(b * M + i) * K + q] = ctd_store(ha, dt, b * a_per + i * g.a_sm + q * g.a_sk, ctd_urand());
  for (int64_t b = 0; b < b_count; b++)
    for (int64_t q = 0; q < K; q++)
      for (int64_t j = 0; j < N; j++)
        bd[(b * K + q) * N + j] = ctd_store(hb, dt, b * b_per + q * g.b_sk + j * g.b_sn, ctd_urand());
  for (int64_t j = 0; j < N; j++) dd[j] = ctd_store(hd, dt, j, ctd_urand());
  if (cuda_alloc(abytes + 16, NULL, &pa) || cuda_alloc(bbytes + 16, NULL, &pb) ||
      cuda_alloc(cbytes + 16, NULL, &pc) || cuda_alloc(dbytes + 16, NULL, &pd) ||
      cu->MemcpyHtoDAsync(pa, ha, abytes, NULL) || cu->MemcpyHtoDAsync(pb, hb, bbytes, NULL) ||
      cu->MemcpyHtoDAsync(pd, hd, dbytes, NULL) || cu->MemsetD8Async(pc, 0xff, cbytes, NULL)) {
    printf("FAIL %s: device memory\n", what);
    failed++;
    goto out;
  }
  int v = cuda_gemm_tc_variant(&g, dt, pa, pb);
  if (c->want >= 0 && v != c->want) {
    printf("FAIL %s: variant %s, expected %s\n", what, vname(v), vname(c->want));
    failed++;
    goto out;
  }
  bool done = false;
  ptc_status s = cuda_gemm_tc(ctx, dev, NULL, &g, Bt, dt, true, pa, pb, c->bias ? pd : 0, pc, &done);
  if (!s && cu->StreamSynchronize(NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronize failed");
  if (!s && cu->MemcpyDtoHAsync(hc, pc, cbytes, NULL) != CU_SUCCESS)
    s = PTC_ERR(INTERNAL, "copy back failed");
  if (!s) cu->StreamSynchronize(NULL);
  if (s || !done) {
    printf("FAIL %s: %s\n", what, s ? ptc_status_message(s) : "not taken");
    ptc_status_destroy(s);
    failed++;
    goto out;
  }
  double tol = dt == PTC_F16 ? 2e-3 : dt == PTC_BF16 ? 1e-2 : 3e-3, worst = 0;
  int64_t bad = -1;
  for (int64_t b = 0; b < Bt && bad < 0; b++)
    for (int64_t i = 0; i < M && bad < 0; i++)
      for (int64_t j = 0; j < N; j++) {
        const double* bb = bd + (c->b_shared ? 0 : b) * K * N;
        double acc = 0, mag = 0;
        for (int64_t q = 0; q < K; q++) {
          double p = ad[(b * M + i) * K + q] * bb[q * N + j];
          acc += p;
          mag += fabs(p);
        }
        double x = c->alpha * acc, scale = fabs(c->alpha) * mag + 1;
        if (c->bias) {
          x += c->beta * dd[j];
          scale += fabs(c->beta * dd[j]);
        }
        double want = ctd_act_ref(c->act, x), got = ctd_load(hc, dt, (b * M + i) * N + j);
        double err = fabs(got - want) / scale;
        if (!(err <= tol)) {
          printf("FAIL %s (%s): [%lld, %lld, %lld] = %g, expected %g\n", what, vname(v),
                 (long long)b, (long long)i, (long long)j, got, want);
          bad = j;
          break;
        }
        if (err > worst) worst = err;
      }
  if (bad >= 0) {
    failed++;
  } else {
    passed++;
    if (getenv("PTC_TEST_VERBOSE")) printf("ok %s (%s): max rel err %.2e\n", what, vname(v), worst);
  }
out:
  cuda_free(pa);
  cuda_free(pb);
  cuda_free(pc);
  cuda_free(pd);
  free(ha);
  free(hb);
  free(hc);
  free(hd);
  free(ad);
  free(bd);
  free(dd);
}

static void run_all(void) {
  static const int32_t dts[3] = {PTC_F16, PTC_BF16, PTC_F32};
  static const int64_t sizes[][3] = {{1, 1, 1},     {17, 33, 1},   {130, 129, 31}, {257, 100, 200},
                                     {64, 256, 512}, {5, 300, 7},  {128, 128, 64}, {200, 8, 1000}};
  for (int di = 0; di < 3; di++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int bl = 0; bl < 3; bl++)
        for (int at = 0; at < 2; at++) {
          gcase c = {dts[di], sizes[si][0], sizes[si][1], sizes[si][2], 1, at, bl, 0,
                     IR_ACT_NONE, 0, 1.0, 1.0, -1};
          c.want = at || bl == 2 ? CUDA_TCG_GEN : bl == 1 ? CUDA_TCG_KK : CUDA_TCG_KN;
          if (c.m == 1 && !at) c.want = -1; /* a 1-row A may count as either */
          if (c.k == 1 || c.n == 1 || c.m == 1) c.want = -1;
          run_case(&c);
        }
  /* epilogues: every activation, bias with beta, alpha; batches */
  for (int di = 0; di < 3; di++)
    for (int act = 0; act <= IR_ACT_TANH; act++)
      for (int bl = 0; bl < 3; bl++) {
        gcase c = {dts[di], 77, 150, 45, 3, 0, bl, act % 2, act, act % 3 != 0, 1.5, 0.5, -1};
        run_case(&c);
      }
  /* larger, several K stages and full tiles */
  for (int di = 0; di < 3; di++) {
    gcase c = {dts[di], 384, 256, 1024, 2, 0, 1, 0, IR_ACT_GELU, 1, 1.0, 1.0, CUDA_TCG_KK};
    run_case(&c);
    c.b_layout = 0, c.want = CUDA_TCG_KN, c.act = IR_ACT_RELU;
    run_case(&c);
  }
}

/* ---- the matmul extern through the API ------------------------------------------------- */

/* act(x @ w + b) (addmm: act(addmm(b, x, w))) compiled for the cuda backend:
 * the bias is the extern's (cuBLASLt's epilogue), the activation cuBLASLt
 * has no epilogue for runs in the GEMM epilogue pass (ptc_epi_*: 16-byte
 * chunks, a scalar tail when M*N is not a multiple of the chunk). Checked
 * against a float64 host result with run_case's tolerance. */
static void api_case(int32_t dt, int64_t M, int64_t K, int64_t N, const char* act, bool addmm) {
  const cu_api* cu = &cuda_libs_get()->cu;
  size_t es = ptc_dtype_size(dt);
  char what[160];
  snprintf(what, sizeof what, "api %s(%s) %s m%lld k%lld n%lld", act ? act : "none",
           addmm ? "addmm" : "mm + add", ptc_dtype_name(dt), (long long)M, (long long)K,
           (long long)N);
  int64_t shapes[3][2] = {{M, K}, {K, N}, {N, 0}};
  const int32_t ranks[3] = {2, 2, 1};
  const int64_t counts[3] = {M * K, K * N, N};
  void* h[3] = {NULL, NULL, NULL};
  double* d[3] = {NULL, NULL, NULL};
  cu_deviceptr p[3] = {0, 0, 0};
  ptc_tensor in[3];
  ptc_graph* g = NULL;
  ptc_executable* e = NULL;
  ptc_results* r = NULL;
  void* hc = calloc((size_t)(M * N) + 8, es);
  ptc_status s = hc ? ptc_graph_create(ctx, &g) : ptc_status_oom();
  ptc_value v[3];
  for (int i = 0; i < 3 && !s; i++) {
    h[i] = calloc((size_t)counts[i] + 8, es);
    d[i] = calloc((size_t)counts[i] + 8, sizeof(double));
    if (!h[i] || !d[i]) s = ptc_status_oom();
    for (int64_t j = 0; !s && j < counts[i]; j++) d[i][j] = ctd_store(h[i], dt, j, ctd_urand());
    ptc_dim dims[2] = {{shapes[i][0], 0, 0}, {shapes[i][1], 0, 0}};
    if (!s) s = ptc_graph_add_input(g, NULL, dt, dims, (size_t)ranks[i], NULL, &v[i]);
    if (!s) s = cuda_alloc((size_t)counts[i] * es + 16, NULL, &p[i]);
    if (!s && cu->MemcpyHtoDAsync(p[i], h[i], (size_t)counts[i] * es, NULL) != CU_SUCCESS)
      s = PTC_ERR(INTERNAL, "copy to the device failed");
    memset(&in[i], 0, sizeof in[i]);
    in[i].data = (void*)(uintptr_t)p[i];
    in[i].device.device_type = PTC_DEVICE_CUDA;
    in[i].ndim = ranks[i];
    in[i].dtype = ptc_dtype_to_dl(dt);
    in[i].shape = shapes[i];
  }
  ptc_value y = PTC_VALUE_NONE, t = PTC_VALUE_NONE;
  size_t n_out = 0;
  if (!s && addmm) {
    ptc_value a3[3] = {v[2], v[0], v[1]};
    s = ptc_graph_add_node(g, "addmm", a3, 3, NULL, 0, &y, 1, &n_out);
  } else if (!s) {
    ptc_value a2[2] = {v[0], v[1]};
    s = ptc_graph_add_node(g, "mm", a2, 2, NULL, 0, &t, 1, &n_out);
    ptc_value b2[2] = {t, v[2]};
    if (!s) s = ptc_graph_add_node(g, "add", b2, 2, NULL, 0, &y, 1, &n_out);
  }
  if (!s && act) {
    t = y;
    s = ptc_graph_add_node(g, act, &t, 1, NULL, 0, &y, 1, &n_out);
  }
  if (!s) s = ptc_graph_add_output(g, y);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "cuda";
  if (!s) s = ptc_compile(ctx, g, &o, &e);
  if (!s) s = ptc_executable_run_alloc(e, in, 3, NULL, &r);
  if (!s && cu->StreamSynchronize(NULL) != CU_SUCCESS) s = PTC_ERR(INTERNAL, "synchronize failed");
  const ptc_tensor* out = s ? NULL : ptc_results_get(r, 0);
  if (out && cu->MemcpyDtoHAsync(hc, (cu_deviceptr)(uintptr_t)out->data + out->byte_offset,
                                 (size_t)(M * N) * es, NULL) != CU_SUCCESS)
    s = PTC_ERR(INTERNAL, "copy back failed");
  if (!s) cu->StreamSynchronize(NULL);
  int code = !act ? IR_ACT_NONE : !strcmp(act, "gelu") ? IR_ACT_GELU : !strcmp(act, "relu") ? IR_ACT_RELU
             : !strcmp(act, "tanh") ? IR_ACT_TANH : !strcmp(act, "sigmoid") ? IR_ACT_SIGMOID
                                                  : IR_ACT_SILU;
  double tol = dt == PTC_F16 ? 2e-3 : dt == PTC_BF16 ? 1e-2 : 1e-4;
  int64_t bad = -1;
  for (int64_t i = 0; !s && i < M && bad < 0; i++)
    for (int64_t j = 0; j < N; j++) {
      double acc = 0, mag = 0;
      for (int64_t q = 0; q < K; q++) {
        double pr = d[0][i * K + q] * d[1][q * N + j];
        acc += pr;
        mag += fabs(pr);
      }
      double want = ctd_act_ref(code, acc + d[2][j]), got = ctd_load(hc, dt, i * N + j);
      if (!(fabs(got - want) / (mag + fabs(d[2][j]) + 1) <= tol)) {
        printf("FAIL %s: [%lld, %lld] = %g, expected %g\n", what, (long long)i, (long long)j, got,
               want);
        bad = j;
        break;
      }
    }
  if (s) printf("FAIL %s: %s\n", what, ptc_status_message(s));
  if (s || bad >= 0)
    failed++;
  else
    passed++;
  ptc_status_destroy(s);
  ptc_results_destroy(r);
  ptc_executable_release(e);
  ptc_graph_destroy(g);
  for (int i = 0; i < 3; i++) {
    cuda_free(p[i]);
    free(h[i]);
    free(d[i]);
  }
  free(hc);
}

static void api_cases(void) {
  static const int32_t dts[3] = {PTC_BF16, PTC_F16, PTC_F32};
  static const int64_t sizes[][3] = {{64, 32, 96}, {33, 16, 13}, {7, 40, 24}};
  static const char* const acts[6] = {NULL, "gelu", "relu", "tanh", "sigmoid", "silu"};
  for (int di = 0; di < 3; di++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int a = 0; a < 6; a++) api_case(dts[di], sizes[si][0], sizes[si][1], sizes[si][2], acts[a], a % 2);
}

/* ---- bench ------------------------------------------------------------------------------ */

static void bench(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  const int64_t M = 4096, K = 1024, N = 4096;
  static const int32_t dts[3] = {PTC_BF16, PTC_F16, PTC_F32};
  for (int di = 0; di < 3; di++)
    for (int bl = 0; bl < 2; bl++) {
      int32_t dt = dts[di];
      size_t es = ptc_dtype_size(dt);
      cu_deviceptr pa = 0, pb = 0, pc = 0;
      if (cuda_alloc((size_t)(M * K) * es, NULL, &pa) || cuda_alloc((size_t)(K * N) * es, NULL, &pb) ||
          cuda_alloc((size_t)(M * N) * es, NULL, &pc)) {
        printf("bench: out of device memory\n");
        return;
      }
      cu->MemsetD8Async(pa, 0x3c, (size_t)(M * K) * es, NULL);
      cu->MemsetD8Async(pb, 0x3c, (size_t)(K * N) * es, NULL);
      cuda_mm_args g;
      memset(&g, 0, sizeof g);
      g.m = M, g.n = N, g.k = K;
      g.a_sm = K, g.a_sk = 1;
      if (bl) g.b_sk = 1, g.b_sn = K;
      else g.b_sk = N, g.b_sn = 1;
      g.c_sm = N, g.c_sn = 1;
      g.alpha = 1.0;
      double ms[2] = {-1, -1};
      for (int lib = 0; lib < 2; lib++) {
        cuda_ext_call call;
        memset(&call, 0, sizeof call);
        call.tf32 = true;
        int reps = 20;
        double t0 = 0;
        for (int it = -3; it < reps; it++) {
          if (it == 0) {
            cu->StreamSynchronize(NULL);
            t0 = now_s();
          }
          bool done = false;
          ptc_status s = lib ? cuda_blaslt_matmul(&call, &g, 1, dt, pa, pb, 0, pc, &done)
                             : cuda_gemm_tc(ctx, dev, NULL, &g, 1, dt, true, pa, pb, 0, pc, &done);
          if (s || !done) {
            ptc_status_destroy(s);
            t0 = -1;
            break;
          }
        }
        cu->StreamSynchronize(NULL);
        if (t0 >= 0) ms[lib] = (now_s() - t0) * 1e3 / reps;
      }
      double fl = 2.0 * (double)M * (double)N * (double)K;
      printf("bench %s%s M%lld K%lld N%lld B %s: tensor-core GEMM %.3f ms (%.1f TFLOP/s), "
             "cuBLASLt %.3f ms (%.1f TFLOP/s)%s\n",
             dt == PTC_F32 ? "f32-tf32" : ptc_dtype_name(dt), "", (long long)M, (long long)K,
             (long long)N, bl ? "[n][k]" : "[k][n]", ms[0], ms[0] > 0 ? fl / ms[0] / 1e9 : 0, ms[1],
             ms[1] > 0 ? fl / ms[1] / 1e9 : 0, ms[1] > 0 ? "" : " (cuBLASLt unavailable)");
      cuda_free(pa);
      cuda_free(pb);
      cuda_free(pc);
    }
}

/* ---- cuBLASLt algorithm tuning (cuda_blaslt.c) ------------------------------------------ */

/* One GEMM for the tuning cases: relu(x @ w^T + b) (Linear's layout: A
 * [m][k], B K-major [n][k], bias [n]) or x @ w (B [k][n], no bias), its
 * inputs on the device and its float64 host result. */
typedef struct tfix {
  int32_t dt;
  int64_t m, n, k;
  bool linear;
  cuda_mm_args g;
  cu_deviceptr pa, pb, pd;
  double* want;  /* [m][n] without the bias (added per call: each thread has its own) */
  double* bias;  /* [n] (linear) */
  void* hd;
} tfix;

static bool tfix_make(tfix* f, int32_t dt, int64_t m, int64_t n, int64_t k, bool linear) {
  const cu_api* cu = &cuda_libs_get()->cu;
  memset(f, 0, sizeof *f);
  f->dt = dt, f->m = m, f->n = n, f->k = k, f->linear = linear;
  size_t es = ptc_dtype_size(dt);
  void* ha = calloc((size_t)(m * k), es);
  void* hb = calloc((size_t)(n * k), es);
  double* ad = calloc((size_t)(m * k), sizeof(double));
  double* bd = calloc((size_t)(n * k), sizeof(double));
  f->want = calloc((size_t)(m * n), sizeof(double));
  f->bias = calloc((size_t)n, sizeof(double));
  f->hd = calloc((size_t)n, es);
  bool ok = ha && hb && ad && bd && f->want && f->bias && f->hd;
  for (int64_t i = 0; ok && i < m * k; i++) ad[i] = ctd_store(ha, dt, i, ctd_urand());
  for (int64_t i = 0; ok && i < n * k; i++) bd[i] = ctd_store(hb, dt, i, ctd_urand());
  for (int64_t j = 0; ok && j < n; j++) f->bias[j] = ctd_store(f->hd, dt, j, ctd_urand());
  for (int64_t i = 0; ok && i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double acc = 0;
      for (int64_t q = 0; q < k; q++) acc += ad[i * k + q] * (linear ? bd[j * k + q] : bd[q * n + j]);
      f->want[i * n + j] = acc;
    }
  ok = ok && !cuda_alloc((size_t)(m * k) * es, NULL, &f->pa) &&
       !cuda_alloc((size_t)(n * k) * es, NULL, &f->pb) && !cuda_alloc((size_t)n * es, NULL, &f->pd) &&
       cu->MemcpyHtoDAsync(f->pa, ha, (size_t)(m * k) * es, NULL) == CU_SUCCESS &&
       cu->MemcpyHtoDAsync(f->pb, hb, (size_t)(n * k) * es, NULL) == CU_SUCCESS &&
       cu->MemcpyHtoDAsync(f->pd, f->hd, (size_t)n * es, NULL) == CU_SUCCESS &&
       cu->StreamSynchronize(NULL) == CU_SUCCESS;
  cuda_mm_args* g = &f->g;
  g->m = m, g->n = n, g->k = k;
  g->a_sm = k, g->a_sk = 1;
  if (linear) g->b_sk = 1, g->b_sn = k;
  else g->b_sk = n, g->b_sn = 1;
  g->c_sm = n, g->c_sn = 1;
  g->alpha = 1.0, g->beta = 1.0;
  g->has_bias = linear;
  g->act = linear ? IR_ACT_RELU : IR_ACT_NONE;
  g->d_sm = 0, g->d_sn = 1;
  free(ha);
  free(hb);
  free(ad);
  free(bd);
  return ok;
}

static void tfix_free(tfix* f) {
  cuda_free(f->pa);
  cuda_free(f->pb);
  cuda_free(f->pd);
  free(f->want);
  free(f->bias);
  free(f->hd);
}

/* Runs the GEMM through cuda_blaslt_matmul on `stream` into pc with bias
 * pbias (host values hbias); NULL on success, else what failed. */
static const char* tfix_run(const tfix* f, cu_stream stream, cu_deviceptr pbias, cu_deviceptr pc) {
  cuda_ext_call call;
  memset(&call, 0, sizeof call);
  call.stream = stream;
  bool done = false;
  ptc_status s = cuda_blaslt_matmul(&call, &f->g, 1, f->dt, f->pa, f->pb, pbias, pc, &done);
  if (s) {
    static _Thread_local char msg[256];
    snprintf(msg, sizeof msg, "%s", ptc_status_message(s));
    ptc_status_destroy(s);
    return msg;
  }
  return done ? NULL : "cuBLASLt did not take it";
}

/* Compares C at pc (synchronises `stream`) with the host result + hbias. */
static const char* tfix_check(const tfix* f, cu_stream stream, cu_deviceptr pc, const double* hbias) {
  const cu_api* cu = &cuda_libs_get()->cu;
  size_t es = ptc_dtype_size(f->dt);
  void* hc = malloc((size_t)(f->m * f->n) * es);
  if (!hc) return "out of host memory";
  const char* why = NULL;
  if (cu->StreamSynchronize(stream) != CU_SUCCESS ||
      cu->MemcpyDtoHAsync(hc, pc, (size_t)(f->m * f->n) * es, stream) != CU_SUCCESS ||
      cu->StreamSynchronize(stream) != CU_SUCCESS)
    why = "device error";
  double tol = f->dt == PTC_BF16 ? 1e-2 : 1e-5;
  for (int64_t i = 0; !why && i < f->m * f->n; i++) {
    double x = f->want[i] + (f->linear ? hbias[i % f->n] : 0);
    if (f->linear) x = x < 0 ? 0 : x;
    double err = fabs(ctd_load(hc, f->dt, i) - x) / (fabs(x) + 1);
    if (!(err <= tol * (double)(f->k < 32 ? 32 : f->k) / 32)) why = "wrong result";
  }
  free(hc);
  return why;
}

static void tune_expect(bool ok, const char* what, const char* why) {
  if (ok) {
    passed++;
  } else {
    printf("FAIL: GEMM tuning: %s: %s\n", what, why ? why : "");
    failed++;
  }
}

/* One fixture's call (fresh output) and its check. */
static const char* tfix_once(const tfix* f, cu_stream stream) {
  cu_deviceptr pc = 0;
  if (cuda_alloc((size_t)(f->m * f->n) * ptc_dtype_size(f->dt), stream, &pc)) return "device memory";
  cuda_libs_get()->cu.MemsetD8Async(pc, 0xff, (size_t)(f->m * f->n) * ptc_dtype_size(f->dt), stream);
  const char* why = tfix_run(f, stream, f->pd, pc);
  if (!why) why = tfix_check(f, stream, pc, f->bias);
  cuda_free(pc);
  return why;
}

typedef struct tthread {
  const tfix* f;
  int id;
  const char* why;
} tthread;

/* A host thread enqueueing 24 GEMMs of the shared fixture's key on its own
 * stream, each with its own bias (the cached descriptor's bias pointer is
 * per call) and output, all checked. */
static void* tthread_main(void* arg) {
  tthread* t = arg;
  const tfix* f = t->f;
  const cu_api* cu = &cuda_libs_get()->cu;
  cu_stream st = NULL;
  size_t es = ptc_dtype_size(f->dt);
  double* hb = calloc((size_t)f->n, sizeof(double));
  void* raw = calloc((size_t)f->n, es);
  cu_deviceptr pd = 0, pc[24] = {0};
  cu->CtxSetCurrent(dev->ctx);
  if (!hb || !raw || cu->StreamCreate(&st, 1) != CU_SUCCESS || cuda_alloc((size_t)f->n * es, st, &pd)) {
    t->why = "setup";
    goto out;
  }
  for (int64_t j = 0; j < f->n; j++) hb[j] = ctd_store(raw, f->dt, j, (double)(t->id + 1) * 0.25 - (double)(j % 5));
  cu->MemcpyHtoDAsync(pd, raw, (size_t)f->n * es, st);
  for (int r = 0; r < 24 && !t->why; r++) {
    if (cuda_alloc((size_t)(f->m * f->n) * es, st, &pc[r])) t->why = "device memory";
    if (!t->why) t->why = tfix_run(f, st, pd, pc[r]);
  }
  for (int r = 0; r < 24 && !t->why; r++) t->why = tfix_check(f, st, pc[r], hb);
out:
  for (int r = 0; r < 24; r++) cuda_free(pc[r]);
  cuda_free(pd);
  if (st) {
    cu->StreamSynchronize(st);
    cu->StreamDestroy(st);
  }
  free(hb);
  free(raw);
  return NULL;
}

static void tune_cases(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  if (!cuda_libs_get()->have_lt || getenv("PTC_CUDA_BLASLT")) {
    printf("GEMM tuning: skipped (no cuBLASLt)\n");
    return;
  }
  setenv("PTC_CACHE", "0", 1); /* no disk records until the disk case */
  setenv("PTC_CUDA_GEMM_TUNE", "4", 1);
  setenv("PTC_CUDA_GEMM_TUNE_MIN_MFLOP", "0", 1);
  cuda_blaslt_forget();
  cuda_blaslt_stats st;
  char what[96];
  /* first call of a key times its candidates once; later calls take the choice */
  static const int32_t dts[2] = {PTC_F32, PTC_BF16};
  for (int di = 0; di < 2; di++)
    for (int lin = 0; lin < 2; lin++) {
      tfix f;
      snprintf(what, sizeof what, "%s %s", ptc_dtype_name(dts[di]), lin ? "relu(x @ w^T + b)" : "x @ w");
      if (!tfix_make(&f, dts[di], 192, 160, 96 + 8 * lin, lin)) {
        tune_expect(false, what, "setup");
        tfix_free(&f);
        continue;
      }
      if (dts[di] == PTC_BF16) setenv("PTC_CUDA_GEMM_TUNE_SPLITK", "1", 1); /* split-K variants too */
      cuda_blaslt_stats before;
      cuda_blaslt_get_stats(&before);
      const char* why = tfix_once(&f, NULL);
      unsetenv("PTC_CUDA_GEMM_TUNE_SPLITK");
      cuda_blaslt_get_stats(&st);
      tune_expect(!why && st.timed_keys == before.timed_keys + 1 && st.timed_candidates > before.timed_candidates,
                  what, why ? why : "not timed on its first call");
      why = tfix_once(&f, NULL);
      cuda_blaslt_stats after;
      cuda_blaslt_get_stats(&after);
      tune_expect(!why && after.timed_keys == st.timed_keys && after.hits == st.hits + 1, what,
                  why ? why : "timed again on its second call");
      tfix_free(&f);
    }
  /* knob off: not timed; on again: the untuned entry is timed then */
  tfix f;
  if (tfix_make(&f, PTC_F32, 130, 200, 72, true)) {
    setenv("PTC_CUDA_GEMM_TUNE", "0", 1);
    cuda_blaslt_stats before;
    cuda_blaslt_get_stats(&before);
    const char* why = tfix_once(&f, NULL);
    cuda_blaslt_get_stats(&st);
    tune_expect(!why && st.timed_keys == before.timed_keys, "PTC_CUDA_GEMM_TUNE=0", why ? why : "timed");
    setenv("PTC_CUDA_GEMM_TUNE", "4", 1);
    why = tfix_once(&f, NULL);
    cuda_blaslt_get_stats(&before);
    tune_expect(!why && before.timed_keys == st.timed_keys + 1, "tuning on after off", why ? why : "not timed");
  } else {
    tune_expect(false, "knob", "setup");
  }
  tfix_free(&f);
  /* stream capture: no timing inside it (the graph replays the top
   * heuristic's GEMM correctly); the next call outside times the key */
  if (cu->StreamBeginCapture && cu->StreamEndCapture && cu->GraphInstantiateWithFlags &&
      cu->GraphLaunch && tfix_make(&f, PTC_F32, 96, 136, 80, true)) {
    cu_stream cs = NULL;
    cu_graph gr = NULL;
    cu_graph_exec ge = NULL;
    cu_deviceptr pc = 0;
    const char* why = NULL;
    cuda_blaslt_stats before;
    cuda_blaslt_get_stats(&before);
    if (cu->StreamCreate(&cs, 1) != CU_SUCCESS || cuda_alloc_hold_stream(cs, true) ||
        cuda_alloc((size_t)(f.m * f.n) * 4, cs, &pc) || cu->StreamSynchronize(cs) != CU_SUCCESS)
      why = "setup";
    if (!why && cu->StreamBeginCapture(cs, CU_CAPTURE_MODE_RELAXED) != CU_SUCCESS) why = "begin capture";
    if (!why) {
      why = tfix_run(&f, cs, f.pd, pc);
      if (cu->StreamEndCapture(cs, &gr) != CU_SUCCESS && !why) why = "end capture";
    }
    cuda_blaslt_get_stats(&st);
    if (!why && st.timed_keys != before.timed_keys) why = "timed during capture";
    if (!why && (cu->GraphInstantiateWithFlags(&ge, gr, 0) != CU_SUCCESS ||
                 cu->MemsetD8Async(pc, 0xff, (size_t)(f.m * f.n) * 4, cs) != CU_SUCCESS ||
                 cu->GraphLaunch(ge, cs) != CU_SUCCESS))
      why = "graph launch";
    if (!why) why = tfix_check(&f, cs, pc, f.bias);
    tune_expect(!why, "stream capture", why);
    why = tfix_once(&f, NULL);
    cuda_blaslt_get_stats(&before);
    tune_expect(!why && before.timed_keys == st.timed_keys + 1, "after capture", why ? why : "not timed");
    if (ge) cu->GraphExecDestroy(ge);
    if (gr) cu->GraphDestroy(gr);
    cuda_free(pc);
    if (cs) {
      cu->StreamSynchronize(cs);
      cuda_alloc_hold_stream(cs, false);
      cu->StreamDestroy(cs);
    }
    tfix_free(&f);
  }
  /* host threads enqueueing one (tuned) key at once, each with its own bias */
  if (tfix_make(&f, PTC_F32, 128, 96, 64, true)) {
    const char* why = tfix_once(&f, NULL);
    pthread_t th[4];
    tthread ts[4];
    int started = 0;
    for (int i = 0; i < 4 && !why; i++) {
      ts[i] = (tthread){&f, i, NULL};
      if (pthread_create(&th[i], NULL, tthread_main, &ts[i]) == 0) started++;
    }
    for (int i = 0; i < started; i++) {
      pthread_join(th[i], NULL);
      if (!why) why = ts[i].why;
    }
    tune_expect(!why && started == 4, "4 host threads, one key", why ? why : "threads");
  } else {
    tune_expect(false, "threads", "setup");
  }
  tfix_free(&f);
  /* the disk record: a new process (here: an emptied cache) takes the choice without timing */
  char dir[] = "/tmp/ptc-gemm-tune-XXXXXX";
  if (mkdtemp(dir) && tfix_make(&f, PTC_BF16, 144, 112, 48, true)) {
    setenv("PTC_CACHE", "1", 1);
    setenv("PTC_CACHE_DIR", dir, 1);
    cuda_blaslt_forget();
    const char* why = tfix_once(&f, NULL);
    cuda_blaslt_get_stats(&st);
    tune_expect(!why && st.timed_keys == 1 && st.disk_hits == 0, "disk record written", why ? why : "not timed");
    cuda_blaslt_forget();
    why = tfix_once(&f, NULL);
    cuda_blaslt_get_stats(&st);
    tune_expect(!why && st.timed_keys == 0 && st.disk_hits == 1, "disk record read", why ? why : "timed again");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("note: could not remove %s\n", dir);
    unsetenv("PTC_CACHE_DIR");
  } else {
    tune_expect(false, "disk", "setup");
  }
  tfix_free(&f);
  unsetenv("PTC_CACHE");
  unsetenv("PTC_CUDA_GEMM_TUNE");
  unsetenv("PTC_CUDA_GEMM_TUNE_MIN_MFLOP");
  cuda_blaslt_forget();
}

/* ---- --algos: every cuBLASLt candidate of the models' GEMM shapes ----------------------- */

typedef struct ashape {
  const char* name;
  int64_t m, n, k, batch;
  int b_layout;  /* 0: B [k][n] (Conv1D, a @ b); 1: B [n][k] (Linear, x @ w^T) */
  bool bias;
} ashape;

static void algos(void) {
  const cu_api* cu = &cuda_libs_get()->cu;
  static const ashape shapes[] = {
      {"bert qkv/out x@w^T+b", 2048, 768, 768, 1, 1, true},
      {"bert fc1 x@w^T+b", 2048, 3072, 768, 1, 1, true},
      {"bert fc2 x@w^T+b", 2048, 768, 3072, 1, 1, true},
      {"bert q@k^T (b192)", 128, 128, 64, 192, 1, false},
      {"bert p@v (b192)", 128, 64, 128, 192, 0, false},
      {"gpt2 c_attn x@w+b", 2048, 2304, 768, 1, 0, true},
      {"gpt2 c_proj x@w+b", 2048, 768, 768, 1, 0, true},
      {"gpt2 c_fc x@w+b", 2048, 3072, 768, 1, 0, true},
      {"gpt2 mlp c_proj x@w+b", 2048, 768, 3072, 1, 0, true},
  };
  static const int32_t dts[2] = {PTC_F32, PTC_BF16};
  int n_req = 16;
  const char* e = getenv("PTC_ALGOS_N");
  if (e && atoi(e) > 0) n_req = atoi(e);
  for (int di = 0; di < 2; di++)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      const ashape* sh = &shapes[si];
      int32_t dt = dts[di];
      size_t es = ptc_dtype_size(dt);
      int64_t M = sh->m, N = sh->n, K = sh->k, Bt = sh->batch;
      cu_deviceptr pa = 0, pb = 0, pd = 0;
      if (cuda_alloc((size_t)(Bt * M * K) * es, NULL, &pa) || cuda_alloc((size_t)(Bt * K * N) * es, NULL, &pb) ||
          cuda_alloc((size_t)N * es, NULL, &pd)) {
        printf("algos: out of device memory\n");
        return;
      }
      cu->MemsetD8Async(pa, 0x3c, (size_t)(Bt * M * K) * es, NULL);
      cu->MemsetD8Async(pb, 0x3c, (size_t)(Bt * K * N) * es, NULL);
      cu->MemsetD8Async(pd, 0, (size_t)N * es, NULL);
      cuda_mm_args g;
      memset(&g, 0, sizeof g);
      g.m = M, g.n = N, g.k = K;
      g.a_sm = K, g.a_sk = 1;
      if (sh->b_layout) g.b_sk = 1, g.b_sn = K;
      else g.b_sk = N, g.b_sn = 1;
      g.c_sm = N, g.c_sn = 1;
      g.alpha = 1.0, g.beta = 1.0;
      g.has_bias = sh->bias;
      g.d_sm = 0, g.d_sn = 1;
      if (Bt > 1) {
        g.nb = 1;
        g.batch[0] = Bt;
        g.a_bs[0] = M * K, g.b_bs[0] = K * N, g.c_bs[0] = M * N;
      }
      cuda_ext_call call;
      memset(&call, 0, sizeof call);
      cuda_blaslt_algo_time t[80];
      int n = 0;
      ptc_status s = cuda_blaslt_time_algos(&call, &g, Bt, dt, pa, pb, sh->bias ? pd : 0, n_req,
                                            CUDA_BLASLT_VAR_SPLITK | CUDA_BLASLT_VAR_TILES, 10, t, 80, &n);
      double fl = 2.0 * (double)M * (double)N * (double)K * (double)Bt;
      printf("algos %s %s: M%lld N%lld K%lld batch %lld, %d candidates%s%s\n", ptc_dtype_name(dt), sh->name,
             (long long)M, (long long)N, (long long)K, (long long)Bt, n, s ? ": " : "",
             s ? ptc_status_message(s) : "");
      ptc_status_destroy(s);
      int best = -1;
      for (int i = 0; i < n; i++)
        if (t[i].ms >= 0 && (best < 0 || t[i].ms < t[best].ms)) best = i;
      for (int i = 0; i < n; i++)
        printf("  %2d%s %8.1f us %6.1f TFLOP/s  %s\n", i, i == best ? "*" : " ", 1e3 * t[i].ms,
               t[i].ms > 0 ? fl / t[i].ms / 1e9 : 0.0, t[i].text);
      if (n > 0 && best >= 0 && t[0].ms > 0)
        printf("  best/top: %.3f (%.1f us saved per call)\n", t[best].ms / t[0].ms, 1e3 * (t[0].ms - t[best].ms));
      cuda_free(pa);
      cuda_free(pb);
      cuda_free(pd);
    }
}

/* The variant choice (pure; no device): unit-K A with K-major or N-major B
 * and 16-byte alignment take the cp.async kernels, anything else the
 * generic one. Returns the number of wrong choices. */
static int check_variants(void) {
  cuda_mm_args g;
  memset(&g, 0, sizeof g);
  g.m = 64, g.n = 48, g.k = 40;
  g.a_sm = 40, g.a_sk = 1, g.b_sk = 1, g.b_sn = 40;
  struct {
    int64_t a_sm, a_sk, b_sk, b_sn, b_bs;
    int32_t dt;
    cu_deviceptr pa, pb;
    int want;
  } cs[] = {
      {40, 1, 1, 40, 0, PTC_BF16, 256, 512, CUDA_TCG_KK},
      {40, 1, 48, 1, 0, PTC_BF16, 256, 512, CUDA_TCG_KN},
      {40, 1, 48, 1, 0, PTC_F32, 256, 512, CUDA_TCG_KN},
      {1, 64, 1, 40, 0, PTC_F16, 256, 512, CUDA_TCG_GEN},   /* A transposed */
      {41, 1, 1, 40, 0, PTC_F16, 256, 512, CUDA_TCG_GEN},   /* rows not 16-byte aligned */
      {40, 1, 1, 40, 0, PTC_F16, 258, 512, CUDA_TCG_GEN},   /* base not aligned */
      {40, 1, 48, 1, 0, PTC_F32, 256, 516, CUDA_TCG_GEN},
      {40, 1, 2, 97, 0, PTC_F16, 256, 512, CUDA_TCG_GEN},   /* no unit stride in B */
      {40, 1, 1, 40, 1960, PTC_BF16, 256, 512, CUDA_TCG_KK}, /* batch stride 16-byte aligned */
      {40, 1, 1, 40, 1961, PTC_BF16, 256, 512, CUDA_TCG_GEN},
      {12, 1, 1, 12, 0, PTC_F32, 256, 512, CUDA_TCG_KK},
      {6, 1, 1, 40, 0, PTC_F32, 256, 512, CUDA_TCG_GEN},
  };
  int bad = 0;
  for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
    g.a_sm = cs[i].a_sm, g.a_sk = cs[i].a_sk, g.b_sk = cs[i].b_sk, g.b_sn = cs[i].b_sn;
    g.nb = 1;
    g.batch[0] = 3;
    g.b_bs[0] = cs[i].b_bs;
    int v = cuda_gemm_tc_variant(&g, cs[i].dt, cs[i].pa, cs[i].pb);
    if (v != cs[i].want) {
      printf("FAIL: variant case %zu: %s, expected %s\n", i, vname(v), vname(cs[i].want));
      bad++;
    }
  }
  return bad;
}

int main(int argc, char** argv) {
  bool compile_only = argc > 1 && !strcmp(argv[1], "--compile-only");
  bool do_bench = argc > 1 && !strcmp(argv[1], "--bench");
  bool do_algos = argc > 1 && !strcmp(argv[1], "--algos");
  if (compile_only) {
    if (check_variants()) return 1;
    printf("variant choice: ok\n");
    const char* why = cuda_nvrtc_unavailable();
    if (why) {
      printf("skipped: %s\n", why);
      return 77;
    }
    static const int archs[2] = {80, 90};
    cuda_check_stats st;
    memset(&st, 0, sizeof st);
    ptc_status s = cuda_check_compile(ptc_cuda_gemm_tc_text, archs, 2, &st);
    if (s) {
      printf("FAIL: the tensor-core GEMM module: %s\n", ptc_status_message(s));
      const char* log = ptc_status_detail(s, "compiler_log");
      if (log) printf("%s\n", log);
      ptc_status_destroy(s);
      return 1;
    }
    printf("tensor-core GEMM module: compiled for sm_80 and sm_90 (%zu bytes of cubin, %.0f ms)\n",
           st.cubin_bytes, st.nvrtc_ms);
    return 0;
  }
  dev = cuda_device_get();
  if (!dev) {
    printf("skipped: %s\n", cuda_unavailable_reason());
    return 77;
  }
  if (!cuda_gemm_tc_supports(dev, PTC_BF16, true)) {
    printf("skipped: %s is sm_%d%d (the tensor-core GEMM needs sm_80)\n", dev->name, dev->cc_major,
           dev->cc_minor);
    return 77;
  }
  ptc_status s = ptc_context_create(NULL, &ctx);
  cu_context prev = NULL;
  if (!s) s = cuda_ctx_enter(dev, &prev);
  if (s) {
    printf("FAIL: setup: %s\n", ptc_status_message(s));
    return 1;
  }
  double t0 = now_s();
  if (do_bench)
    bench();
  else if (do_algos)
    algos();
  else {
    run_all();
    api_cases();
    tune_cases();
  }
  cuda_ctx_leave(dev, prev);
  ptc_context_release(ctx);
  if (!do_bench && !do_algos)
    printf("test_cuda_gemm: %d passed, %d failed (%.1f s)\n", passed, failed, now_s() - t0);
  return failed ? 1 : 0;
}
