/* test_random.c - the counter-based RNG and the random ops: Philox4x32-10
 * against the Random123 known-answer vectors, the uniform and normal
 * transforms' moments, and rand/randn/bernoulli through the public API
 * (same seed -> same values, different seed or node -> different values, the
 * `seed` attribute, mean/variance within statistical tolerance on 100k
 * samples, bernoulli rates, value ranges per dtype). */
#include <math.h>
#include <stdlib.h>

#include "backends/ref/ref.h"
#include "check.h"

#define NS 100000

static ptc_context* ctx;

static void test_philox_kat(void) {
  static const struct {
    uint64_t seed, stream, counter;
    uint32_t want[4];
  } kat[] = {
      {0, 0, 0, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {UINT64_MAX, UINT64_MAX, UINT64_MAX, {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      /* key 243f6a88.. digits of pi: counter 243f6a88 85a308d3 13198a2e 03707344,
       * key a4093822 299f31d0 */
      {0x299f31d0a4093822ull,
       0x0370734413198a2eull,
       0x85a308d3243f6a88ull,
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (size_t k = 0; k < sizeof kat / sizeof kat[0]; k++) {
    uint32_t w[4];
    ref_philox(kat[k].seed, kat[k].stream, kat[k].counter, w);
    for (int i = 0; i < 4; i++) CHECK(w[i] == kat[k].want[i]);
  }
}

static void moments(const double* v, size_t n, double* mean, double* var) {
  double s = 0, q = 0;
  for (size_t i = 0; i < n; i++) s += v[i];
  *mean = s / (double)n;
  for (size_t i = 0; i < n; i++) q += (v[i] - *mean) * (v[i] - *mean);
  *var = q / (double)(n - 1);
}

static void test_transforms(void) {
  double* v = malloc(NS * sizeof *v);
  if (!v) return;
  double mean, var, lo = 1, hi = 0;
  for (size_t i = 0; i < NS; i++) {
    v[i] = ref_uniform(7, 3, i);
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  moments(v, NS, &mean, &var);
  CHECK(lo >= 0.0 && hi < 1.0);
  CHECK(fabs(mean - 0.5) < 0.005);           /* sd of the mean ~0.0009 */
  CHECK(fabs(var - 1.0 / 12.0) < 0.003);
  for (size_t i = 0; i < NS; i++) v[i] = ref_normal(7, 3, i);
  moments(v, NS, &mean, &var);
  CHECK(fabs(mean) < 0.02);                  /* sd of the mean ~0.003 */
  CHECK(fabs(var - 1.0) < 0.03);             /* sd of the variance ~0.0045 */
  size_t within1 = 0;
  for (size_t i = 0; i < NS; i++) within1 += fabs(v[i]) < 1.0;
  CHECK(fabs((double)within1 / NS - 0.6827) < 0.01);
  CHECK(ref_uniform(7, 3, 0) == ref_uniform(7, 3, 0));
  CHECK(ref_uniform(7, 3, 0) != ref_uniform(8, 3, 0));
  CHECK(ref_uniform(7, 3, 0) != ref_uniform(7, 4, 0));
  CHECK(ref_uniform(7, 3, 0) != ref_uniform(7, 3, 1));
  free(v);
}

/* Graph with `n_nodes` nodes of op `op` (no tensor inputs unless `x` data is
 * given), run with `seed`; returns the results. */
typedef struct rgraph {
  ptc_graph* g;
  ptc_executable* exe;
} rgraph;

static ptc_status build(rgraph* r, const char* op, const ptc_attr* at, size_t n_at,
                        size_t n_nodes, int32_t in_dt, int64_t in_n) {
  r->g = NULL;
  r->exe = NULL;
  ptc_status s = ptc_graph_create(ctx, &r->g);
  ptc_value x = PTC_VALUE_NONE;
  ptc_dim d = {in_n, 0, 0};
  if (!s && in_n > 0) s = ptc_graph_add_input(r->g, "x", in_dt, &d, 1, NULL, &x);
  for (size_t k = 0; !s && k < n_nodes; k++) {
    ptc_value y;
    s = ptc_graph_add_node(r->g, op, &x, in_n > 0 ? 1 : 0, at, n_at, &y, 1, NULL);
    if (!s) s = ptc_graph_add_output(r->g, y);
  }
  if (!s) s = ptc_compile(ctx, r->g, NULL, &r->exe);
  return s;
}

static void rg_free(rgraph* r) {
  ptc_executable_release(r->exe);
  ptc_graph_destroy(r->g);
}

static ptc_results* run(rgraph* r, uint64_t seed, const ptc_tensor* in) {
  ptc_run_options o;
  ptc_run_options_init(&o);
  o.seed = seed;
  ptc_results* res = NULL;
  CHECK_OK(ptc_executable_run_alloc(r->exe, in, in ? 1 : 0, &o, &res));
  return res;
}

/* Output k of res as doubles (n elements). */
static double* values(const ptc_results* res, size_t k, size_t n) {
  const ptc_tensor* t = ptc_results_get(res, k);
  double* v = calloc(n + 1, sizeof *v);
  if (!t || !v) {
    free(v);
    return NULL;
  }
  ref_tensor rt;
  rt.data = t->data;
  rt.dtype = ptc_dtype_from_dl(t->dtype);
  for (size_t i = 0; i < n; i++) v[i] = ref_load_f(&rt, (int64_t)i);
  return v;
}

static bool same(const double* a, const double* b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

static void test_rand_op(const char* op, double want_mean, double want_var, double tol_m,
                         double tol_v) {
  int64_t size[] = {NS};
  ptc_attr at[] = {ptc_attr_ints("size", size, 1)};
  rgraph r;
  CHECK_OK(build(&r, op, at, 1, 2, 0, 0));
  if (!r.exe) {
    rg_free(&r);
    return;
  }
  ptc_results *a = run(&r, 1, NULL), *b = run(&r, 1, NULL), *c = run(&r, 2, NULL);
  double *a0 = values(a, 0, NS), *a1 = values(a, 1, NS), *b0 = values(b, 0, NS),
         *c0 = values(c, 0, NS);
  if (a0 && a1 && b0 && c0) {
    CHECK(same(a0, b0, NS));  /* same seed, same values */
    CHECK(!same(a0, c0, NS)); /* another seed */
    CHECK(!same(a0, a1, NS)); /* another node: another stream */
    double mean, var;
    moments(a0, NS, &mean, &var);
    CHECK(fabs(mean - want_mean) < tol_m);
    CHECK(fabs(var - want_var) < tol_v);
    moments(c0, NS, &mean, &var);
    CHECK(fabs(mean - want_mean) < tol_m);
  }
  free(a0);
  free(a1);
  free(b0);
  free(c0);
  ptc_results_destroy(a);
  ptc_results_destroy(b);
  ptc_results_destroy(c);
  rg_free(&r);
}

/* The `seed` attribute fixes the values whatever the run seed. */
static void test_seed_attr(void) {
  int64_t size[] = {64};
  ptc_attr at[] = {ptc_attr_ints("size", size, 1), ptc_attr_int("seed", 123)};
  rgraph r;
  CHECK_OK(build(&r, "randn", at, 2, 1, 0, 0));
  if (!r.exe) {
    rg_free(&r);
    return;
  }
  ptc_results *a = run(&r, 1, NULL), *b = run(&r, 99, NULL);
  double *a0 = values(a, 0, 64), *b0 = values(b, 0, 64);
  if (a0 && b0) {
    CHECK(same(a0, b0, 64));
    CHECK(a0[5] == (double)(float)ref_normal(123, 0, 5));
  }
  free(a0);
  free(b0);
  ptc_results_destroy(a);
  ptc_results_destroy(b);
  rg_free(&r);
}

/* Uniforms of every floating dtype stay in [0, 1). */
static void test_rand_dtypes(void) {
  static const int32_t dts[] = {PTC_F32, PTC_F64, PTC_F16, PTC_BF16};
  for (size_t k = 0; k < 4; k++) {
    int64_t size[] = {20000};
    ptc_attr at[] = {ptc_attr_ints("size", size, 1), ptc_attr_dtype("dtype", dts[k])};
    rgraph r;
    CHECK_OK(build(&r, "rand", at, 2, 1, 0, 0));
    if (!r.exe) {
      rg_free(&r);
      continue;
    }
    ptc_results* a = run(&r, 5, NULL);
    CHECK(a && ptc_dtype_from_dl(ptc_results_get(a, 0)->dtype) == dts[k]);
    double* v = values(a, 0, 20000);
    double lo = 1, hi = 0;
    for (size_t i = 0; v && i < 20000; i++) {
      lo = v[i] < lo ? v[i] : lo;
      hi = v[i] > hi ? v[i] : hi;
    }
    CHECK(v && lo >= 0.0 && hi < 1.0 && hi > 0.9);
    free(v);
    ptc_results_destroy(a);
    rg_free(&r);
  }
}

static void test_bernoulli(void) {
  float* p = malloc(NS * sizeof *p);
  if (!p) return;
  for (size_t i = 0; i < NS; i++) p[i] = i % 2 ? 0.3f : 0.8f;
  int64_t shape[] = {NS};
  ptc_tensor in = {p, {PTC_DEVICE_CPU, 0}, 1, ptc_dtype_to_dl(PTC_F32), shape, NULL, 0};
  rgraph r;
  CHECK_OK(build(&r, "bernoulli", NULL, 0, 1, PTC_F32, NS));
  if (r.exe) {
    ptc_results *a = run(&r, 11, &in), *b = run(&r, 11, &in), *c = run(&r, 12, &in);
    double *a0 = values(a, 0, NS), *b0 = values(b, 0, NS), *c0 = values(c, 0, NS);
    if (a0 && b0 && c0) {
      double odd = 0, even = 0;
      bool binary = true;
      for (size_t i = 0; i < NS; i++) {
        binary &= a0[i] == 0.0 || a0[i] == 1.0;
        *(i % 2 ? &odd : &even) += a0[i];
      }
      CHECK(binary);
      CHECK(fabs(odd / (NS / 2) - 0.3) < 0.01); /* sd ~0.002 */
      CHECK(fabs(even / (NS / 2) - 0.8) < 0.01);
      CHECK(same(a0, b0, NS));
      CHECK(!same(a0, c0, NS));
    }
    free(a0);
    free(b0);
    free(c0);
    ptc_results_destroy(a);
    ptc_results_destroy(b);
    ptc_results_destroy(c);
  }
  rg_free(&r);
  /* probability from the attribute, integer output */
  int64_t* z = calloc(NS, sizeof *z);
  ptc_attr pa = ptc_attr_float("p", 0.25);
  CHECK_OK(build(&r, "bernoulli", &pa, 1, 1, PTC_I64, NS));
  if (r.exe && z) {
    ptc_tensor zi = {z, {PTC_DEVICE_CPU, 0}, 1, ptc_dtype_to_dl(PTC_I64), shape, NULL, 0};
    ptc_results* a = run(&r, 3, &zi);
    double* v = values(a, 0, NS);
    double sum = 0;
    for (size_t i = 0; v && i < NS; i++) sum += v[i];
    CHECK(v && fabs(sum / NS - 0.25) < 0.01);
    free(v);
    ptc_results_destroy(a);
  }
  rg_free(&r);
  free(z);
  free(p);
}

int main(void) {
  CHECK_OK(ptc_context_create(NULL, &ctx));
  test_philox_kat();
  test_transforms();
  test_rand_op("rand", 0.5, 1.0 / 12.0, 0.005, 0.003);
  test_rand_op("randn", 0.0, 1.0, 0.02, 0.03);
  test_seed_attr();
  test_rand_dtypes();
  test_bernoulli();
  ptc_context_release(ctx);
  return check_summary("test_random");
}
