/* test_cpu_gemm.c - cpu_gemm_f32/f64 and every kernel table (each ISA the
 * machine runs, packed and direct paths, serial and threaded) against a
 * naive long-double reference: many shapes (1x1x1, primes, tall/skinny,
 * K = 0 and 1, blocks that cross every cache-blocking edge), layouts
 * (row/column-major, padded, non-unit and negative strides), and epilogues
 * (alpha, beta, bias, each activation). C starts as NaN: elements outside
 * the matrix must stay NaN, and C is never read. Also: activation accuracy
 * over a wide input range, bitwise-equal results for any thread count,
 * calls from concurrent threads, and the batched entry points. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../../backends/cpu/cpu.h"
#include "../../backends/cpu/cpu_gemm_internal.h"
#include "../check.h"
#include "gemm_ref.h"

/* ---- strided matrices -------------------------------------------------------------- */
typedef enum layout { L_ROW, L_COL, L_PAD, L_STRIDED, L_NEG, N_LAYOUTS } layout;
static const char* const layout_names[] = {"row", "col", "pad", "strided", "neg"};

typedef struct tmat {
  size_t es;
  int64_t rows, cols, sr, sc;
  char* mem;   /* allocation */
  size_t span; /* elements in mem */
  char* base;  /* element (0, 0) */
} tmat;

static void tmat_init(tmat* t, size_t es, int64_t rows, int64_t cols, layout l) {
  int64_t r = rows > 0 ? rows : 1, c = cols > 0 ? cols : 1;
  t->es = es;
  t->rows = rows;
  t->cols = cols;
  int64_t first = 0; /* element offset of (0, 0) from mem */
  switch (l) {
    case L_ROW: t->sr = c; t->sc = 1; t->span = (size_t)(r * c); break;
    case L_COL: t->sr = 1; t->sc = r; t->span = (size_t)(r * c); break;
    case L_PAD: t->sr = c + 3; t->sc = 1; t->span = (size_t)(r * (c + 3)); break;
    case L_STRIDED: t->sr = 2 * c + 1; t->sc = 2; t->span = (size_t)(r * (2 * c + 1)); break;
    default: /* L_NEG: rows stored bottom-up */
      t->sr = -c; t->sc = 1; t->span = (size_t)(r * c); first = (r - 1) * c; break;
  }
  t->mem = malloc(t->span * es);
  t->base = t->mem + (size_t)first * es;
}

static int64_t tmat_off(const tmat* t, int64_t i, int64_t j) { return i * t->sr + j * t->sc; }

static void tmat_set(tmat* t, int64_t i, int64_t j, double v) {
  char* p = t->base + tmat_off(t, i, j) * (int64_t)t->es;
  if (t->es == 4) {
    float f = (float)v;
    memcpy(p, &f, 4);
  } else {
    memcpy(p, &v, 8);
  }
}

static double tmat_get_raw(const tmat* t, size_t idx) {
  if (t->es == 4) {
    float f;
    memcpy(&f, t->mem + idx * 4, 4);
    return f;
  }
  double d;
  memcpy(&d, t->mem + idx * 8, 8);
  return d;
}

static double tmat_get(const tmat* t, int64_t i, int64_t j) {
  return tmat_get_raw(t, (size_t)((t->base - t->mem) / (int64_t)t->es + tmat_off(t, i, j)));
}

static void tmat_fill_nan(tmat* t) {
  for (size_t i = 0; i < t->span; i++) {
    if (t->es == 4) {
      float f = NAN;
      memcpy(t->mem + i * 4, &f, 4);
    } else {
      double d = NAN;
      memcpy(t->mem + i * 8, &d, 8);
    }
  }
}

/* ---- one case ----------------------------------------------------------------------- */
typedef struct gcase {
  int64_t m, n, k;
  double alpha, beta;
  bool bias;
  int32_t act;
  layout la, lb, lc;
} gcase;

/* Logical data (values representable in f32) and the reference result. */
typedef struct gdata {
  double *a, *b, *bias, *ref, *mag;
} gdata;

static void gdata_make(const gcase* c, gdata* d, uint64_t seed) {
  int64_t m = c->m, n = c->n, k = c->k;
  d->a = malloc(sizeof(double) * (size_t)(m * k + 1));
  d->b = malloc(sizeof(double) * (size_t)(k * n + 1));
  d->bias = malloc(sizeof(double) * (size_t)(n + 1));
  d->ref = malloc(sizeof(double) * (size_t)(m * n + 1));
  d->mag = malloc(sizeof(double) * (size_t)(m * n + 1));
  for (int64_t i = 0; i < m * k; i++) d->a[i] = (float)rnd_next(&seed);
  for (int64_t i = 0; i < k * n; i++) d->b[i] = (float)rnd_next(&seed);
  for (int64_t i = 0; i < n; i++) d->bias[i] = (float)(2 * rnd_next(&seed));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      long double s = 0, mag = 0;
      for (int64_t p = 0; p < k; p++) {
        s += (long double)d->a[i * k + p] * d->b[p * n + j];
        mag += fabsl((long double)d->a[i * k + p] * d->b[p * n + j]);
      }
      long double v = (long double)c->alpha * s;
      mag *= fabs(c->alpha);
      if (c->bias && c->beta != 0) {
        v += (long double)c->beta * d->bias[j];
        mag += fabs(c->beta * d->bias[j]);
      }
      d->ref[i * n + j] = ref_act((double)v, c->act);
      d->mag[i * n + j] = (double)mag;
    }
}

static void gdata_free(gdata* d) {
  free(d->a);
  free(d->b);
  free(d->bias);
  free(d->ref);
  free(d->mag);
}

typedef struct grun {
  size_t es;
  const cpu_gemm_kernel* kn; /* NULL: the public cpu_gemm_f32/f64 */
  cpu_gemm_path path;
  int threads;
} grun;

static const char* const path_names[] = {"auto", "packed", "direct"};

/* Runs case c one way; returns true when every element is within bounds. */
static bool run_one(const gcase* c, const gdata* d, const grun* r, tmat* out) {
  tmat A, B, bias, C;
  size_t es = r->es;
  tmat_init(&A, es, c->m, c->k, c->la);
  tmat_init(&B, es, c->k, c->n, c->lb);
  tmat_init(&bias, es, 1, c->n, L_STRIDED);
  tmat_init(&C, es, c->m, c->n, c->lc);
  for (int64_t i = 0; i < c->m; i++)
    for (int64_t p = 0; p < c->k; p++) tmat_set(&A, i, p, d->a[i * c->k + p]);
  for (int64_t p = 0; p < c->k; p++)
    for (int64_t j = 0; j < c->n; j++) tmat_set(&B, p, j, d->b[p * c->n + j]);
  for (int64_t j = 0; j < c->n; j++) tmat_set(&bias, 0, j, d->bias[j]);
  tmat_fill_nan(&C);
  const void* bp = c->bias ? bias.base : NULL;
  if (r->kn) {
    cpu_gemm_args g = {c->m, c->n, c->k,    c->alpha, c->beta, A.base, A.sr, A.sc, B.base, B.sr,
                       B.sc, bp,   0,       bias.sc,  C.base,  C.sr,   C.sc, c->act, NULL, NULL};
    cpu_gemm_run(r->kn, &g, r->path, r->threads);
  } else if (es == 4) {
    cpu_gemm_f32(c->m, c->n, c->k, (float)c->alpha, (const float*)A.base, A.sr, A.sc,
                 (const float*)B.base, B.sr, B.sc, (float)c->beta, (const float*)bp, bias.sc,
                 (float*)C.base, C.sr, C.sc, c->act);
  } else {
    cpu_gemm_f64(c->m, c->n, c->k, c->alpha, (const double*)A.base, A.sr, A.sc,
                 (const double*)B.base, B.sr, B.sc, c->beta, (const double*)bp, bias.sc,
                 (double*)C.base, C.sr, C.sc, c->act);
  }
  bool ok = true;
  double eps = es == 4 ? FLT_EPSILON : DBL_EPSILON;
  int64_t inside = 0;
  for (int64_t i = 0; i < c->m && ok; i++)
    for (int64_t j = 0; j < c->n && ok; j++) {
      double got = tmat_get(&C, i, j), want = d->ref[i * c->n + j];
      inside++;
      if (!(fabs(got - want) <= ref_tol(d->mag[i * c->n + j], want, c->k, eps))) {
        printf("  mismatch at (%lld, %lld): got %.9g want %.9g (tol %.3g)\n", (long long)i,
               (long long)j, got, want, ref_tol(d->mag[i * c->n + j], want, c->k, eps));
        ok = false;
      }
    }
  int64_t nan_left = 0;
  for (size_t q = 0; q < C.span; q++) nan_left += isnan(tmat_get_raw(&C, q));
  if (ok && nan_left != (int64_t)C.span - inside) {
    printf("  %lld elements outside C were written\n",
           (long long)((int64_t)C.span - inside - nan_left));
    ok = false;
  }
  free(A.mem);
  free(B.mem);
  free(bias.mem);
  if (out)
    *out = C;
  else
    free(C.mem);
  return ok;
}

/* All kernel tables the machine runs, both paths, 1 and default threads,
 * and the public entry point; both element types. */
static void run_case(const gcase* c, uint64_t seed) {
  gdata d;
  gdata_make(c, &d, seed);
  for (size_t es = 4; es <= 8; es += 4) {
    grun pub = {es, NULL, CPU_GEMM_PATH_AUTO, 0};
    CHECK(run_one(c, &d, &pub, NULL));
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++) {
      const cpu_gemm_kernel* kn = cpu_gemm_kernel_for(es, (cpu_gemm_isa)isa);
      if (!kn) continue;
      for (int path = CPU_GEMM_PATH_PACKED; path <= CPU_GEMM_PATH_DIRECT; path++)
        for (int threads = 0; threads <= 1; threads++) {
          grun r = {es, kn, (cpu_gemm_path)path, threads};
          bool ok = run_one(c, &d, &r, NULL);
          CHECK(ok);
          if (!ok)
            printf("  case %lldx%lldx%lld alpha %g beta %g bias %d act %s layouts %s/%s/%s "
                   "kernel %s path %s threads %d\n",
                   (long long)c->m, (long long)c->n, (long long)c->k, c->alpha, c->beta,
                   c->bias, act_names[c->act], layout_names[c->la], layout_names[c->lb],
                   layout_names[c->lc], kn->name, path_names[path], threads);
        }
    }
  }
  gdata_free(&d);
}

static const int64_t shapes[][3] = {
    {1, 1, 1},    {37, 53, 61},   {1, 1000, 7},  {1000, 1, 7},   {2, 3, 1},
    {64, 64, 64}, {100, 33, 257}, {13, 300, 5},  {7, 5, 600},    {300, 200, 520},
    {3100, 20, 9}, {20, 3100, 30}, {25, 17, 1},   {0, 5, 5},      {5, 0, 5},
    {5, 5, 0},    {4, 40, 40},    {12, 32, 16},  {24, 64, 3},
};

static void test_shapes(void) {
  uint64_t seed = 42;
  size_t n_shapes = sizeof shapes / sizeof shapes[0];
  for (size_t s = 0; s < n_shapes; s++) {
    const int64_t* sh = shapes[s];
    bool big = sh[0] * sh[1] * sh[2] > 1000000;
    for (int variant = 0; variant < (big ? 2 : 5); variant++) {
      gcase c = {sh[0], sh[1], sh[2], 1.0, 1.0, false, IR_ACT_NONE, L_ROW, L_ROW, L_ROW};
      /* Layouts rotate so each operand sees each layout across variants. */
      c.la = (layout)variant;
      c.lb = (layout)((variant + 1) % N_LAYOUTS);
      c.lc = (layout)((variant + 2) % N_LAYOUTS);
      if (variant > 0) {
        c.alpha = variant == 2 ? -0.75 : 1.5;
        c.beta = variant == 3 ? 0.0 : 0.5 * variant;
        c.bias = true;
        c.act = (int32_t)((s + (size_t)variant) % N_ACTS);
      }
      run_case(&c, seed++);
    }
  }
}

/* Every activation, with and without bias, on a shape that crosses tiles. */
static void test_activations(void) {
  for (int32_t act = 0; act < N_ACTS; act++)
    for (int bias = 0; bias <= 1; bias++) {
      gcase c = {29, 70, 45, 2.0, -1.25, bias != 0, act, L_ROW, L_COL, L_ROW};
      run_case(&c, 1000u + (uint64_t)act * 2u + (uint64_t)bias);
    }
  /* An unknown activation code is the identity. */
  gcase c = {5, 6, 7, 1.0, 1.0, false, 99, L_ROW, L_ROW, L_ROW};
  gdata d;
  gdata_make(&(gcase){5, 6, 7, 1.0, 1.0, false, IR_ACT_NONE, L_ROW, L_ROW, L_ROW}, &d, 7);
  grun r = {4, NULL, CPU_GEMM_PATH_AUTO, 0};
  CHECK(run_one(&c, &d, &r, NULL));
  gdata_free(&d);
}

/* ---- activation accuracy ------------------------------------------------------------- */
/* ulp of v in the type with epsilon eps (smallest subnormal step at 0). */
static double ulp_of(double v, size_t es) {
  double tiny = es == 4 ? 1.4012984643e-45 : 4.9406564584124654e-324;
  double u = fabs(v) * (es == 4 ? FLT_EPSILON : DBL_EPSILON);
  return u > tiny ? u : tiny;
}

/* act(x) through the epilogue (C = act(1 * [1] @ x)) for a wide range of x,
 * including +-0, subnormals, +-inf and NaN, on every kernel and path.
 * Bound: 8 ulps of the result, plus 2 eps |x| for the x-scaled activations
 * (GELU, SiLU: the input's own rounding is that large). */
static void test_activation_accuracy(void) {
  enum { NX = 4103 };
  double* xs = malloc(sizeof(double) * NX);
  int nx = 0;
  for (int i = 0; i < 4000; i++) xs[nx++] = -120.0 + 240.0 * i / 3999.0; /* coarse */
  for (int i = 0; i < 80; i++) xs[nx++] = -4.0 + 8.0 * i / 79.0 + 1e-3;    /* branch edges */
  const double special[] = {0.0, -0.0, 1e-40, -1e-40, 1e-8, -1e-8, 88.5, 89.5, -103.0, -104.5,
                            0.625, -0.625, 1.4142135, -1.4142135, 200.0, -200.0, INFINITY,
                            -INFINITY, NAN, 3.0e38, -3.0e38, 2e-30, -2e-30};
  for (size_t i = 0; i < sizeof special / sizeof special[0] && nx < NX; i++) xs[nx++] = special[i];
  const double one = 1.0;
  for (size_t es = 4; es <= 8; es += 4) {
    double eps = es == 4 ? FLT_EPSILON : DBL_EPSILON;
    char *x = malloc((size_t)nx * es), *c = malloc((size_t)nx * es), a1[8];
    for (int i = 0; i < nx; i++) {
      if (es == 4) {
        float f = (float)xs[i];
        memcpy(x + i * 4, &f, 4);
      } else {
        memcpy(x + i * 8, &xs[i], 8);
      }
    }
    if (es == 4) {
      float f = 1.0f;
      memcpy(a1, &f, 4);
    } else {
      memcpy(a1, &one, 8);
    }
    for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++) {
      const cpu_gemm_kernel* kn = cpu_gemm_kernel_for(es, (cpu_gemm_isa)isa);
      if (!kn) continue;
      for (int32_t act = 1; act < N_ACTS; act++)
        for (int path = CPU_GEMM_PATH_PACKED; path <= CPU_GEMM_PATH_DIRECT; path++) {
          cpu_gemm_args g = {1, nx, 1,  1.0, 0.0, a1, 1,   1,    x,    nx,
                             1, NULL, 0, 0, c, nx, 1, act, NULL, NULL};
          cpu_gemm_run(kn, &g, (cpu_gemm_path)path, 1);
          int bad = 0;
          for (int i = 0; i < nx && !bad; i++) {
            double xi = es == 4 ? (double)(float)xs[i] : xs[i];
            double want = ref_act(xi, act), got;
            if (es == 4) {
              float f;
              memcpy(&f, c + i * 4, 4);
              got = f;
            } else {
              memcpy(&got, c + i * 8, 8);
            }
            bool scaled = act == IR_ACT_GELU || act == IR_ACT_GELU_TANH || act == IR_ACT_SILU;
            double tol = 8 * ulp_of(want, es) + (scaled ? 2 * eps * fabs(xi) : 0);
            bool ok = isnan(want) ? isnan(got)
                      : isinf(want) ? got == want
                                    : fabs(got - want) <= tol;
            if (!ok) {
              printf("  %s %s(%.9g) = %.9g, want %.9g (tol %.3g)\n", kn->name, act_names[act],
                     xi, got, want, tol);
              bad = 1;
            }
          }
          CHECK(!bad);
        }
    }
    free(x);
    free(c);
  }
  free(xs);
}

/* ---- determinism and concurrency ----------------------------------------------------- */
/* Packed results do not depend on the thread count (each element's sum has
 * a fixed order), so 1 and 2 threads agree bitwise. */
static void test_thread_invariance(void) {
  const cpu_gemm_kernel* kn = cpu_gemm_kernel_for(4, cpu_gemm_best_isa());
  const int64_t dims[][3] = {{300, 280, 300}, {20, 3000, 200}, {500, 40, 100}};
  for (size_t s = 0; s < 3; s++) {
    gcase c = {dims[s][0], dims[s][1], dims[s][2], 1.0, 1.0, true, IR_ACT_GELU,
               L_ROW, L_ROW, L_ROW};
    gdata d;
    gdata_make(&c, &d, 99 + s);
    tmat c1, c2;
    grun r1 = {4, kn, CPU_GEMM_PATH_PACKED, 1}, r2 = {4, kn, CPU_GEMM_PATH_PACKED, 2};
    CHECK(run_one(&c, &d, &r1, &c1));
    CHECK(run_one(&c, &d, &r2, &c2));
    CHECK(memcmp(c1.mem, c2.mem, c1.span * 4) == 0);
    free(c1.mem);
    free(c2.mem);
    gdata_free(&d);
  }
}

typedef struct conc_job {
  int64_t m, n, k;
  float *a, *b, *c, *want;
  int ok;
} conc_job;

static void conc_compute(conc_job* j, float* c) {
  cpu_gemm_f32(j->m, j->n, j->k, 1.0f, j->a, j->k, 1, j->b, j->n, 1, 0.0f, NULL, 0, c, j->n, 1,
               IR_ACT_RELU);
}

static void* conc_thread(void* arg) {
  conc_job* j = arg;
  for (int rep = 0; rep < 3; rep++) {
    conc_compute(j, j->c);
    j->ok &= memcmp(j->c, j->want, sizeof(float) * (size_t)(j->m * j->n)) == 0;
  }
  return NULL;
}

static void conc_setup(conc_job* j, int64_t m, int64_t n, int64_t k, uint64_t seed) {
  j->m = m;
  j->n = n;
  j->k = k;
  j->a = malloc(sizeof(float) * (size_t)(m * k));
  j->b = malloc(sizeof(float) * (size_t)(k * n));
  j->c = malloc(sizeof(float) * (size_t)(m * n));
  j->want = malloc(sizeof(float) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++) j->a[i] = (float)rnd_next(&seed);
  for (int64_t i = 0; i < k * n; i++) j->b[i] = (float)rnd_next(&seed);
  conc_compute(j, j->want);
  j->ok = 1;
}

static void conc_free(conc_job* j) {
  free(j->a);
  free(j->b);
  free(j->c);
  free(j->want);
}

/* Threads of the host, and an OpenMP team, calling the GEMM at once. */
static void test_concurrency(void) {
  enum { NJ = 4 };
  conc_job jobs[NJ];
  pthread_t th[NJ];
  for (int i = 0; i < NJ; i++) conc_setup(&jobs[i], 150 + 10 * i, 170, 190 - 20 * i, 5u + i);
  for (int i = 0; i < NJ; i++) CHECK(pthread_create(&th[i], NULL, conc_thread, &jobs[i]) == 0);
  for (int i = 0; i < NJ; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < NJ; i++) CHECK(jobs[i].ok);
#ifdef _OPENMP
#pragma omp parallel for num_threads(2)
  for (int i = 0; i < NJ; i++) conc_thread(&jobs[i]);
  for (int i = 0; i < NJ; i++) CHECK(jobs[i].ok);
#endif
  for (int i = 0; i < NJ; i++) conc_free(&jobs[i]);
}

/* cpu_gemm_batch_*: bitwise equal to one cpu_gemm_* call per entry, for
 * small entries (run in parallel with each other) and big ones (threads
 * inside each), with a broadcast B (all offsets 0) and per-entry bias. */
static void test_batch(void) {
  const int64_t dims[][4] = {{24, 20, 16, 9}, {200, 180, 160, 3}}; /* m, n, k, count */
  for (size_t s = 0; s < 2; s++) {
    int64_t m = dims[s][0], n = dims[s][1], k = dims[s][2], cnt = dims[s][3];
    uint64_t seed = 77 + s;
    float *a = malloc(sizeof(float) * (size_t)(cnt * m * k)),
          *b = malloc(sizeof(float) * (size_t)(k * n));
    float* bias = malloc(sizeof(float) * (size_t)(cnt * n));
    float *c1 = malloc(sizeof(float) * (size_t)(cnt * m * n)),
          *c2 = malloc(sizeof(float) * (size_t)(cnt * m * n));
    double *d1 = malloc(sizeof(double) * (size_t)(cnt * m * n)),
           *d2 = malloc(sizeof(double) * (size_t)(cnt * m * n));
    double *da = malloc(sizeof(double) * (size_t)(cnt * m * k)),
           *db = malloc(sizeof(double) * (size_t)(k * n));
    int64_t *ao = malloc(sizeof(int64_t) * (size_t)cnt),
            *bo = malloc(sizeof(int64_t) * (size_t)cnt);
    int64_t *dof = malloc(sizeof(int64_t) * (size_t)cnt),
            *co = malloc(sizeof(int64_t) * (size_t)cnt);
    for (int64_t i = 0; i < cnt * m * k; i++) da[i] = a[i] = (float)rnd_next(&seed);
    for (int64_t i = 0; i < k * n; i++) db[i] = b[i] = (float)rnd_next(&seed);
    for (int64_t i = 0; i < cnt * n; i++) bias[i] = (float)rnd_next(&seed);
    for (int64_t e = 0; e < cnt; e++) {
      ao[e] = e * m * k;
      bo[e] = 0;
      dof[e] = e * n;
      co[e] = e * m * n;
      cpu_gemm_f32(m, n, k, 0.5f, a + ao[e], k, 1, b, n, 1, 2.0f, bias + dof[e], 1, c1 + co[e], n,
                   1, IR_ACT_GELU);
      cpu_gemm_f64(m, n, k, 0.5, da + ao[e], k, 1, db, n, 1, 0.0, NULL, 0, d1 + co[e], n, 1,
                   IR_ACT_NONE);
    }
    cpu_gemm_batch_f32(cnt, ao, bo, dof, co, m, n, k, 0.5f, a, k, 1, b, n, 1, 2.0f, bias, 1, c2, n,
                       1, IR_ACT_GELU);
    cpu_gemm_batch_f64(cnt, ao, bo, NULL, co, m, n, k, 0.5, da, k, 1, db, n, 1, 0.0, NULL, 0, d2, n,
                       1, IR_ACT_NONE);
    CHECK(memcmp(c1, c2, sizeof(float) * (size_t)(cnt * m * n)) == 0);
    CHECK(memcmp(d1, d2, sizeof(double) * (size_t)(cnt * m * n)) == 0);
    free(a), free(b), free(bias), free(c1), free(c2), free(d1), free(d2), free(da), free(db);
    free(ao), free(bo), free(dof), free(co);
  }
}

static void test_kernel_tables(void) {
  CHECK(cpu_gemm_kernel_for(4, CPU_GEMM_ISA_GENERIC) != NULL);
  CHECK(cpu_gemm_kernel_for(8, CPU_GEMM_ISA_GENERIC) != NULL);
  CHECK(cpu_gemm_kernel_for(2, CPU_GEMM_ISA_GENERIC) == NULL);
  CHECK(cpu_gemm_kernel_for(4, CPU_GEMM_ISA_COUNT) == NULL);
  CHECK(cpu_gemm_kernel_for(4, cpu_gemm_best_isa()) != NULL);
  for (int isa = 0; isa < CPU_GEMM_ISA_COUNT; isa++)
    for (size_t es = 4; es <= 8; es += 4) {
      const cpu_gemm_kernel* kn = cpu_gemm_kernel_for(es, (cpu_gemm_isa)isa);
      if (!kn) continue;
      printf("kernel %s: %dx%d, mc %d kc %d nc %d\n", kn->name, kn->mr, kn->nr, kn->mc, kn->kc,
             kn->nc);
      CHECK(kn->esize == es);
      CHECK(kn->mr * kn->nr <= CPU_GEMM_MAX_TILE && kn->nr <= CPU_GEMM_MAX_NR);
      CHECK(kn->mc % kn->mr == 0 && kn->nc % kn->nr == 0);
    }
}

int main(void) {
  test_kernel_tables();
  test_shapes();
  test_activations();
  test_activation_accuracy();
  test_thread_invariance();
  test_concurrency();
  test_batch();
  return check_summary("test_cpu_gemm");
}
