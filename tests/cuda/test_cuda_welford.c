/* test_cuda_welford.c - one-pass var / std / var_mean on the cuda backend
 * (backends/cuda/cuda_welford.c, cuda_welford.cuh).
 *
 *  --compile-only (needs NVRTC only; exit 77 without it): the welford
 *    module (every input dtype) compiles for sm_80 and sm_90, and the
 *    pipeline keeps var / std / var_mean whole exactly where it should:
 *    long rows (>= 16384) of a graph input, through views that keep the
 *    last dim too; not short rows, not a computed input (neg(x)), not when
 *    the last dim is kept or moved (strided rows) or the reduced dims are
 *    not trailing, not with PTC_CUDA_WELFORD=0; a kept node is one extern
 *    the device runs (two outputs for var_mean).
 *  default (needs a GPU; exit 77 without one): graphs compiled for "cuda"
 *    and "ref" run on the same inputs and compared: few huge rows (the
 *    split path), many long rows, rows of odd lengths (unaligned row
 *    starts), several dims, a transposed input (kept: last dim in place;
 *    decomposed: strided rows), non-trailing dims (decomposed), keepdim,
 *    correction 0 / 1 / 2 / unbiased=false, f64, bf16 and f16 inputs,
 *    values 1e4 + noise (a naive sum of squares loses every digit there),
 *    n - correction <= 0 (inf / NaN), empty rows, small rows through the
 *    kernels (PTC_CUDA_WELFORD_MIN=0); results are bitwise equal over two
 *    runs.
 *  --bench: var_mean over f32 [64, 2^20], [4, 2^24] and a few other shapes,
 *    one-pass vs the two-pass decomposition (PTC_CUDA_WELFORD=0), ms per
 *    call and GB/s of the input read.
 * Exit status: 0 passed, 1 a failure, 77 skipped.
 */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_rt.h"
#include "cuda_test_dev.h"
#include "backends/cuda/cuda_welford.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static ptc_context* ctx;
static int failed, passed;

#define NO_CORR (-1e300) /* no correction attribute (unbiased default) */

typedef struct wcase {
  const char* op;     /* var, std, var_mean */
  int32_t dtype;
  uint32_t rank;
  int64_t shape[4];
  uint32_t ndims;     /* 0: no dim attribute (every dim) */
  int64_t dims[4];
  int keepdim;
  double corr;        /* the correction attribute; NO_CORR: none */
  int unbiased;       /* -1 absent, else the unbiased attribute (corr NO_CORR) */
  int input;          /* 0 graph input, 1 neg(x), 2 transpose(0, 1) of the input, 3 reshape */
  double offset;      /* added to the noise */
} wcase;

static void report(bool ok, const char* what, const char* detail) {
  if (ok) {
    passed++;
    return;
  }
  failed++;
  printf("FAIL %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static void report_status(const char* what, ptc_status s) {
  report(false, what, ptc_status_message(s));
  ptc_status_destroy(s);
}

static ptc_status build(const wcase* c, ptc_graph** out) {
  ptc_graph* g = NULL;
  PTC_TRY(ptc_graph_create(ctx, &g));
  ptc_dim sh[4];
  for (uint32_t d = 0; d < c->rank; d++) sh[d] = (ptc_dim){c->shape[d], 0, 0};
  if (c->input == 2) { /* the input is [d1, d0, ...]; the graph transposes it */
    sh[0].value = c->shape[1];
    sh[1].value = c->shape[0];
  }
  ptc_value x = 0, y = 0, o[2] = {0, 0};
  ptc_status s = PTC_OK;
  if (c->input == 3) { /* a flat input reshaped to the case's shape */
    int64_t n = 1;
    for (uint32_t d = 0; d < c->rank; d++) n *= c->shape[d];
    ptc_dim flat = {n, 0, 0};
    s = ptc_graph_add_input(g, "x", c->dtype, &flat, 1, NULL, &x);
    ptc_attr a = ptc_attr_ints("shape", c->shape, c->rank);
    if (!s) s = ptc_graph_add_node(g, "reshape", &x, 1, &a, 1, &y, 1, NULL);
  } else {
    s = ptc_graph_add_input(g, "x", c->dtype, sh, c->rank, NULL, &x);
    y = x;
  }
  if (!s && c->input == 1) s = ptc_graph_add_node(g, "neg", &x, 1, NULL, 0, &y, 1, NULL);
  if (!s && c->input == 2) {
    ptc_attr t[2] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
    s = ptc_graph_add_node(g, "transpose", &x, 1, t, 2, &y, 1, NULL);
  }
  ptc_attr at[4];
  size_t na = 0;
  if (c->ndims) at[na++] = ptc_attr_ints("dim", c->dims, c->ndims);
  if (c->keepdim) at[na++] = ptc_attr_bool("keepdim", 1);
  if (c->corr != NO_CORR) at[na++] = ptc_attr_float("correction", c->corr);
  if (c->corr == NO_CORR && c->unbiased >= 0) at[na++] = ptc_attr_bool("unbiased", c->unbiased);
  size_t n_out = strcmp(c->op, "var_mean") == 0 ? 2 : 1;
  if (!s) s = ptc_graph_add_node(g, c->op, &y, 1, at, na, o, n_out, NULL);
  for (size_t k = 0; !s && k < n_out; k++) s = ptc_graph_add_output(g, o[k]);
  if (s) {
    ptc_graph_destroy(g);
    return s;
  }
  *out = g;
  return PTC_OK;
}

/* ---- compile-only checks ------------------------------------------------------------- */

/* Runs the cuda pipeline on c's graph: *n_ext externs, *n_wf of them the
 * device welford step (with *outs outputs). */
static bool pipeline(const wcase* c, uint32_t* n_ext, uint32_t* n_wf, uint32_t* outs) {
  ptc_graph* g = NULL;
  ptc_graph* dg = NULL;
  ir_program* p = NULL;
  sched_plan* sp = NULL;
  ptc_status s = build(c, &g);
  if (!s) s = cuda_pipeline(ctx, NULL, g, true, &dg, &p, &sp);
  *n_ext = *n_wf = *outs = 0;
  if (s) {
    report_status("the cuda pipeline", s);
    ptc_graph_destroy(g);
    return false;
  }
  for (uint32_t i = 0; i < sp->n_kernels; i++) {
    if (!sp->kernels[i].is_extern) continue;
    (*n_ext)++;
    const ir_node* n = ir_node_at(p, sp->kernels[i].nodes[0]);
    if (cuda_welford_handles(p, n)) {
      (*n_wf)++;
      *outs = n->ext.n_out;
    }
  }
  sched_plan_destroy(sp);
  ir_program_destroy(p);
  ptc_graph_destroy(dg);
  ptc_graph_destroy(g);
  return true;
}

static int compile_only(void) {
  const char* why = cuda_nvrtc_unavailable();
  if (why) {
    printf("SKIP: NVRTC is not available here: %s\n", why);
    return 77;
  }
  static const int archs[2] = {80, 90};
  for (int i = 0; i < 2; i++) {
    ptc_status s = cuda_welford_check_compile(ctx, archs[i]);
    char what[64];
    snprintf(what, sizeof what, "welford module for sm_%d", archs[i]);
    if (s) {
      const char* log = ptc_status_detail(s, "compiler_log");
      if (log) printf("%s\n", log);
      report_status(what, s);
    } else {
      report(true, what, NULL);
    }
  }
  const int64_t M = (int64_t)1 << 20;
  struct {
    wcase c;
    bool keep;
    const char* what;
  } rows[] = {
      {{"var", PTC_F32, 2, {64, M}, 1, {-1}, 0, NO_CORR, -1, 0, 0}, true, "var [64, 2^20] kept"},
      {{"var_mean", PTC_BF16, 2, {8, 32768}, 1, {1}, 1, 0, -1, 0, 0}, true,
       "var_mean bf16 keepdim kept"},
      {{"std", PTC_F64, 3, {4, 128, 256}, 2, {1, 2}, 0, 2, -1, 0, 0}, true, "std over 2 dims kept"},
      {{"var", PTC_F32, 1, {M}, 0, {0}, 0, NO_CORR, 0, 0, 0}, true, "var of everything kept"},
      {{"var", PTC_F32, 3, {4, 8, 20000}, 1, {-1}, 0, NO_CORR, -1, 2, 0}, true,
       "var of an input transposed, last dim kept in place: kept"},
      {{"var", PTC_F32, 2, {3, 20000}, 1, {1}, 0, NO_CORR, -1, 2, 0}, false,
       "var of a transposed input (strided rows) decomposed"},
      {{"var", PTC_F32, 3, {40, 8, 20000}, 2, {0, 2}, 0, NO_CORR, -1, 0, 0}, false,
       "dims (0, 2) (not trailing) decomposed"},
      {{"var", PTC_F32, 3, {4, 256, 256}, 2, {1, 2}, 0, NO_CORR, -1, 3, 0}, true,
       "var of a reshaped input kept"},
      {{"var", PTC_F32, 2, {1024, 1024}, 1, {1}, 0, NO_CORR, -1, 0, 0}, false,
       "short rows decomposed"},
      {{"var", PTC_F32, 2, {4, M}, 1, {1}, 0, NO_CORR, -1, 1, 0}, false,
       "computed input decomposed"},
      {{"var", PTC_F32, 2, {M, 4}, 1, {0}, 0, NO_CORR, -1, 0, 0}, false,
       "last dim kept: decomposed"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    uint32_t ne, nw, outs;
    if (!pipeline(&rows[i].c, &ne, &nw, &outs)) continue;
    bool ok = rows[i].keep ? ne == 1 && nw == 1 &&
                                 outs == (strcmp(rows[i].c.op, "var_mean") == 0 ? 2u : 1u)
                           : nw == 0;
    char d[64];
    snprintf(d, sizeof d, "%u externs, %u welford", ne, nw);
    report(ok, rows[i].what, d);
  }
  setenv("PTC_CUDA_WELFORD", "0", 1);
  uint32_t ne, nw, outs;
  if (pipeline(&rows[0].c, &ne, &nw, &outs)) report(nw == 0, "PTC_CUDA_WELFORD=0 decomposes", NULL);
  unsetenv("PTC_CUDA_WELFORD");
  setenv("PTC_CUDA_WELFORD_MIN", "0", 1);
  if (pipeline(&rows[8].c, &ne, &nw, &outs))
    report(nw == 1, "PTC_CUDA_WELFORD_MIN=0 keeps short rows", NULL);
  unsetenv("PTC_CUDA_WELFORD_MIN");
  printf("test_cuda_welford --compile-only: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

/* ---- GPU runs ----------------------------------------------------------------------------- */

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

static uint64_t rng_state = 88172645463325252ull;
static double urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Roughly normal noise (sum of 4 uniforms, centred, variance 1). */
static double noise(void) {
  return (urand() + urand() + urand() + urand() - 2.0) * 1.7320508075688772;
}

static bool fast_fill; /* --bench: uniform values, one draw each */

/* offset + noise, or (--bench) one uniform draw. */
static double fill(void* user, const ptc_value_info* info) {
  (void)info;
  return fast_fill ? urand() - 0.5 : *(const double*)user + noise();
}

/* Graph input 0 of g with values offset + noise. */
static bool make_input(const ptc_graph* g, double offset, ctd_tensor* h) {
  return ctd_make_input(g, 0, fill, &offset, h);
}

static int64_t numel(const ptc_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* Output k of a cuda run copied to host memory (malloc'ed). */
static void* download(const ptc_results* r, size_t k, size_t* bytes) {
  const ptc_tensor* t = ptc_results_get(r, k);
  int32_t dt = ptc_dtype_from_dl(t->dtype);
  *bytes = (size_t)numel(t) * ptc_dtype_size(dt);
  void* h = malloc(*bytes ? *bytes : 1);
  if (!h || t->device.device_type != PTC_DEVICE_CUDA) {
    free(h);
    return NULL;
  }
  if (*bytes && (cu()->MemcpyDtoHAsync(h, (cu_deviceptr)(uintptr_t)t->data + t->byte_offset,
                                       *bytes, NULL) != CU_SUCCESS ||
                 cu()->StreamSynchronize(NULL) != CU_SUCCESS)) {
    free(h);
    return NULL;
  }
  return h;
}

static void describe(const wcase* c, const char* env, char* what, size_t cap) {
  int n = snprintf(what, cap, "%s %s [", c->op, ptc_dtype_name(c->dtype));
  for (uint32_t d = 0; d < c->rank && n > 0 && (size_t)n < cap; d++)
    n += snprintf(what + n, cap - (size_t)n, "%s%lld", d ? ", " : "", (long long)c->shape[d]);
  if (n > 0 && (size_t)n < cap) n += snprintf(what + n, cap - (size_t)n, "] dims");
  for (uint32_t d = 0; d < c->ndims && n > 0 && (size_t)n < cap; d++)
    n += snprintf(what + n, cap - (size_t)n, " %lld", (long long)c->dims[d]);
  if (n > 0 && (size_t)n < cap)
    snprintf(what + n, cap - (size_t)n, "%s%s corr %g%s%s%s%s", c->ndims ? "" : " all",
             c->keepdim ? " keepdim" : "", c->corr == NO_CORR ? (c->unbiased == 0 ? 0.0 : 1.0) : c->corr,
             c->input == 2 ? " transposed" : c->input == 3 ? " reshaped" : "",
             c->offset != 0 ? " offset" : "", env ? " " : "", env ? env : "");
}

/* cuda vs ref on one case; `env` "NAME=VALUE" set while it compiles and runs. */
static void check_case(const wcase* c, const char* env, bool twice) {
  char what[200];
  describe(c, env, what, sizeof what);
  char ename[64] = "";
  if (env) {
    const char* eq = strchr(env, '=');
    snprintf(ename, sizeof ename, "%.*s", (int)(eq - env), env);
    setenv(ename, eq + 1, 1);
  }
  ptc_graph* g = NULL;
  ptc_executable *ec = NULL, *er = NULL;
  ptc_status s = build(c, &g);
  if (!s) s = ctd_compile(ctx, g, "cuda", &ec);
  if (!s) s = ctd_compile(ctx, g, "ref", &er);
  ctd_tensor h;
  memset(&h, 0, sizeof h);
  if (!s && !make_input(g, c->offset, &h)) s = PTC_ERR(INTERNAL, "input setup failed");
  ptc_results *rr = NULL, *rc = NULL, *rc2 = NULL;
  ptc_tensor din = ctd_on_device(&h);
  if (!s) s = ptc_executable_run_alloc(er, &h.t, 1, NULL, &rr);
  if (!s) s = ptc_executable_run_alloc(ec, &din, 1, NULL, &rc);
  if (!s && twice) s = ptc_executable_run_alloc(ec, &din, 1, NULL, &rc2);
  if (s) {
    report_status(what, s);
  } else {
    bool ok = true;
    double worst = 0;
    char detail[240] = "";
    for (size_t k = 0; k < ptc_results_count(rr); k++) {
      const ptc_tensor* tr = ptc_results_get(rr, k);
      int32_t dt = ptc_dtype_from_dl(tr->dtype);
      size_t bytes = 0, bytes2 = 0;
      void* got = download(rc, k, &bytes);
      if (!got || (size_t)numel(tr) * ptc_dtype_size(dt) != bytes) {
        ok = false;
        snprintf(detail, sizeof detail, "output %zu: download or size mismatch", k);
        free(got);
        break;
      }
      if (rc2) {
        void* got2 = download(rc2, k, &bytes2);
        if (!got2 || bytes2 != bytes || memcmp(got, got2, bytes) != 0) {
          ok = false;
          snprintf(detail, sizeof detail, "output %zu differs between two runs", k);
        }
        free(got2);
      }
      /* relative, with a floor for means near zero (the noise has variance 1,
       * so the floor is torch.testing's absolute tolerance for the dtype: an
       * f32 mean of 25600 such values is ~1e-3 and its summation error ~1e-7;
       * a half mean there may round to a neighbouring subnormal) */
      double tol = dt == PTC_BF16 ? 1e-2 : dt == PTC_F16 ? 2e-3 : dt == PTC_F64 ? 1e-10 : 5e-5;
      double atol = dt == PTC_F64 ? 1e-12 : 1e-5;
      const void* ref = (const char*)tr->data + tr->byte_offset;
      for (int64_t i = 0; i < numel(tr); i++) {
        double a = ctd_load(got, dt, i), b = ctd_load(ref, dt, i);
        bool same = (isnan(a) && isnan(b)) || (isinf(a) && isinf(b) && (a > 0) == (b > 0));
        double err = same ? 0 : fabs(a - b) / (atol + fabs(b));
        if (!same && !(fabs(a - b) <= tol * fabs(b) + atol)) {
          if (ok)
            snprintf(detail, sizeof detail, "output %zu [%lld]: %.9g, ref %.9g (tolerance %.1g)",
                     k, (long long)i, a, b, tol);
          ok = false;
        }
        if (err > worst || err != err) worst = err;
      }
      free(got);
    }
    report(ok, what, detail);
    if (ok) printf("ok   %s: worst relative error %.3g%s\n", what, worst,
                   rc2 ? ", two runs bitwise equal" : "");
  }
  ptc_results_destroy(rr);
  ptc_results_destroy(rc);
  ptc_results_destroy(rc2);
  ctd_free(&h);
  ptc_executable_release(ec);
  ptc_executable_release(er);
  ptc_graph_destroy(g);
  if (env) unsetenv(ename);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ms per call of c on the cuda backend, with `env` set while compiling. */
static double time_case(const wcase* c, const char* env) {
  char ename[64] = "";
  if (env) {
    const char* eq = strchr(env, '=');
    snprintf(ename, sizeof ename, "%.*s", (int)(eq - env), env);
    setenv(ename, eq + 1, 1);
  }
  ptc_graph* g = NULL;
  ptc_executable* e = NULL;
  ptc_status s = build(c, &g);
  if (!s) s = ctd_compile(ctx, g, "cuda", &e);
  if (env) unsetenv(ename);
  double ms = -1;
  ctd_tensor h;
  memset(&h, 0, sizeof h);
  bool ok = !s && make_input(g, 0, &h);
  ptc_tensor din = ctd_on_device(&h);
  for (int it = 0, iters = 3; ok && it < 2; it++, iters = 20) {
    double t0 = now_s();
    for (int r = 0; ok && r < iters; r++) {
      ptc_results* res = NULL;
      ptc_status rs = ptc_executable_run_alloc(e, &din, 1, NULL, &res);
      ok = !rs;
      ptc_status_destroy(rs);
      ptc_results_destroy(res);
    }
    ok = ok && cu()->CtxSynchronize() == CU_SUCCESS;
    ms = (now_s() - t0) * 1e3 / iters;
  }
  ptc_status_destroy(s);
  ctd_free(&h);
  ptc_executable_release(e);
  ptc_graph_destroy(g);
  return ok ? ms : -1;
}

static void bench(void) {
  const int64_t M = (int64_t)1 << 20;
  static const struct {
    int64_t rows, cols;
  } shapes[] = {{64, (int64_t)1 << 20}, {4, (int64_t)1 << 24}, {1, (int64_t)1 << 26},
                {2048, 32768}, {16384, 4096}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    wcase c = {"var_mean", PTC_F32, 2, {shapes[i].rows, shapes[i].cols}, 1, {-1}, 0, NO_CORR, -1,
               0, 0};
    double gb = (double)shapes[i].rows * (double)shapes[i].cols * 4.0 / 1e9;
    double tw = time_case(&c, "PTC_CUDA_WELFORD_MIN=0");
    double tt = time_case(&c, "PTC_CUDA_WELFORD=0");
    printf("bench var_mean f32 [%lld, %lld]: welford %.4f ms (%.0f GB/s), two-pass %.4f ms "
           "(%.0f GB/s)\n",
           (long long)shapes[i].rows, (long long)shapes[i].cols, tw, gb / (tw * 1e-3), tt,
           gb / (tt * 1e-3));
  }
  wcase b = {"var_mean", PTC_BF16, 2, {64, M}, 1, {-1}, 0, NO_CORR, -1, 0, 0};
  double tw = time_case(&b, NULL), tt = time_case(&b, "PTC_CUDA_WELFORD=0");
  printf("bench var_mean bf16 [64, 2^20]: welford %.4f ms (%.0f GB/s), two-pass %.4f ms\n", tw,
         64.0 * (double)M * 2 / 1e9 / (tw * 1e-3), tt);
}

int main(int argc, char** argv) {
  bool compile_check = false, do_bench = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--compile-only")) compile_check = true;
    if (!strcmp(argv[i], "--bench")) do_bench = true;
  }
  if (ptc_context_create(NULL, &ctx)) return 1;
  if (compile_check) {
    int rc = compile_only();
    ptc_context_release(ctx);
    return rc;
  }
  if (!ctd_gpu_enter()) {
    ptc_context_release(ctx);
    return 77;
  }
  if (do_bench) {
    fast_fill = true;
    bench();
    ptc_context_release(ctx);
    return 0;
  }
  const int64_t M = (int64_t)1 << 20;
  const wcase cases[] = {
      /* few huge rows: split into chunks, partials folded */
      {"var", PTC_F32, 2, {16, M}, 1, {-1}, 0, NO_CORR, -1, 0, 0},
      {"var_mean", PTC_F32, 2, {4, 4 * M}, 1, {1}, 0, 1, -1, 0, 1e4},
      {"std", PTC_F32, 1, {3 * M + 7}, 0, {0}, 0, 0, -1, 0, 1e4},
      {"var_mean", PTC_F64, 2, {8, 100003}, 1, {1}, 1, 0, -1, 0, 1e4},
      {"var_mean", PTC_BF16, 2, {32, 65536}, 1, {1}, 1, NO_CORR, -1, 0, 100},
      {"var_mean", PTC_F16, 2, {3, 50001}, 1, {-1}, 0, 2, -1, 0, 100},
      {"std", PTC_BF16, 2, {5, 40000}, 1, {1}, 0, NO_CORR, 0, 0, 0},
      /* rows of odd length: every row starts at another alignment */
      {"std", PTC_F32, 2, {512, 20001}, 1, {1}, 0, NO_CORR, -1, 0, 1e4},
      /* many long rows: one block a row */
      {"var", PTC_F32, 2, {1200, 16384}, 1, {1}, 1, NO_CORR, -1, 0, 0},
      {"var_mean", PTC_F16, 2, {2000, 16400}, 1, {1}, 0, 1, -1, 0, 0},
      /* several dims, everything, strided rows */
      {"var", PTC_F32, 3, {6, 130, 131}, 2, {1, 2}, 0, NO_CORR, -1, 0, 1e4},
      {"var_mean", PTC_F32, 3, {6, 130, 131}, 2, {-2, -1}, 1, 2, -1, 0, 0},
      {"var", PTC_F32, 2, {300, 200}, 0, {0}, 0, NO_CORR, -1, 0, 1e4},
      {"var", PTC_F32, 3, {40, 8, 500}, 2, {0, 2}, 0, NO_CORR, -1, 0, 1e4},
      {"var_mean", PTC_F64, 3, {40, 8, 500}, 2, {0, 2}, 1, 1, -1, 0, 0},
      {"var", PTC_F32, 2, {3, 20000}, 1, {1}, 0, NO_CORR, -1, 2, 1e4},
      {"var_mean", PTC_F32, 3, {4, 8, 20000}, 1, {-1}, 0, 1, -1, 2, 1e4},
      {"std", PTC_BF16, 2, {5, 20000}, 1, {-1}, 1, 2, -1, 2, 0},
      {"var_mean", PTC_F32, 3, {4, 128, 200}, 2, {1, 2}, 0, NO_CORR, -1, 3, 0},
      /* n - correction <= 0 */
      {"var", PTC_F32, 2, {4, 16384}, 1, {1}, 0, 16384, -1, 0, 0},
      {"var_mean", PTC_F32, 2, {4, 16384}, 1, {1}, 0, 20000, -1, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i], NULL, true);
  /* the unsplit path for few rows, and the two-pass path for reference */
  check_case(&cases[1], "PTC_CUDA_WELFORD_SPLIT=0", false);
  check_case(&cases[7], "PTC_CUDA_WELFORD=0", false);
  /* small and degenerate rows through the kernels */
  const wcase small[] = {
      {"var", PTC_F32, 2, {7, 3}, 1, {1}, 0, NO_CORR, -1, 0, 0},
      {"var", PTC_F32, 2, {4, 1}, 1, {1}, 0, NO_CORR, -1, 0, 0},
      {"var_mean", PTC_F32, 2, {4, 0}, 1, {1}, 1, NO_CORR, -1, 0, 0},
      {"var_mean", PTC_F64, 2, {4, 0}, 1, {1}, 0, -1, -1, 0, 0},
      {"std", PTC_F32, 2, {1000, 33}, 1, {1}, 0, NO_CORR, -1, 0, 1e4},
      {"var", PTC_F32, 2, {2, 5}, 1, {1}, 1, 2, -1, 0, 0},
      {"var", PTC_F32, 2, {2, 5}, 1, {1}, 0, 5, -1, 0, 0},
      {"var", PTC_F32, 2, {2, 5}, 1, {1}, 0, 7, -1, 0, 0},
      {"var_mean", PTC_BF16, 3, {3, 5, 7}, 2, {0, 2}, 0, NO_CORR, -1, 0, 0},
      {"var", PTC_F32, 2, {1, 1}, 0, {0}, 0, NO_CORR, -1, 0, 0},
  };
  for (size_t i = 0; i < sizeof small / sizeof small[0]; i++)
    check_case(&small[i], "PTC_CUDA_WELFORD_MIN=0", false);
  printf("test_cuda_welford: %d passed, %d failed\n", passed, failed);
  ptc_context_release(ctx);
  return failed ? 1 : 0;
}
