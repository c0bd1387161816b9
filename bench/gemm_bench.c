/* gemm_bench.c - times the CPU backend's GEMM (cpu_gemm_f32/f64) and
 * convolution: medians of repeated runs in GFLOP/s (wall clock, and per
 * CPU-second of all threads, which load from other processes distorts
 * less) for 1024^3, the MLP shape 1024x4096x1024 with bias + GELU fused
 * (also with B transposed, as a linear layer's weight), 4096^3, f64, small
 * sizes (serial threshold), GEMV, attention's batched products (through
 * cpu_gemm_batch_f32 and as one call per entry), 3x3 convolutions, and a
 * naive triple loop for the speed-up ratio; plus the machine's estimated
 * peak (the assumptions are printed).
 * Usage: gemm_bench [--quick] (skips 4096^3 and the batches) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../backends/cpu/cpu.h"
#include "../backends/cpu/cpu_gemm_internal.h"

static int max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now_s(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of all threads: flops per CPU-second is the per-core rate,
 * which other load on the machine does not distort the way wall time is. */
static double cpu_s(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void* fill(size_t n, size_t es, unsigned seed) {
  char* p = malloc(n * es);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    double v = ((seed >> 8) & 0xffff) / 32768.0 - 1.0;
    if (es == 4) {
      float f = (float)v;
      memcpy(p + i * 4, &f, 4);
    } else {
      memcpy(p + i * 8, &v, 8);
    }
  }
  return p;
}

typedef struct gemm_shape {
  const char* label;
  int64_t m, n, k;
  size_t es;
  int32_t act;
  bool bias;
  bool bt; /* B given transposed (a linear layer's weight [n, k]) */
} gemm_shape;

typedef struct timing {
  double wall, cpu; /* medians, seconds */
} timing;

/* Medians of `reps` runs (after one warm-up) of the shape. */
static timing time_gemm(const gemm_shape* s, int reps) {
  void* a = fill((size_t)(s->m * s->k), s->es, 1);
  void* b = fill((size_t)(s->k * s->n), s->es, 2);
  void* bias = fill((size_t)s->n, s->es, 3);
  void* c = fill((size_t)(s->m * s->n), s->es, 4);
  int64_t b_sk = s->bt ? 1 : s->n, b_sn = s->bt ? s->k : 1;
  double t[64], u[64];
  for (int r = -1; r < reps; r++) {
    double t0 = now_s(), u0 = cpu_s();
    if (s->es == 4)
      cpu_gemm_f32(s->m, s->n, s->k, 1.0f, a, s->k, 1, b, b_sk, b_sn, 1.0f,
                   s->bias ? bias : NULL, 1, c, s->n, 1, s->act);
    else
      cpu_gemm_f64(s->m, s->n, s->k, 1.0, a, s->k, 1, b, b_sk, b_sn, 1.0, s->bias ? bias : NULL,
                   1, c, s->n, 1, s->act);
    if (r >= 0) {
      t[r] = now_s() - t0;
      u[r] = cpu_s() - u0;
    }
  }
  free(a);
  free(b);
  free(bias);
  free(c);
  timing tm = {median(t, reps), median(u, reps)};
  return tm;
}

/* `count` GEMMs of one shape (attention's per-head products) through
 * cpu_gemm_batch_f32, or (`loop`) one cpu_gemm_f32 call per entry, each
 * with the whole team inside. B^T when bt (q @ k^T). */
static timing time_batch(int64_t count, int64_t m, int64_t n, int64_t k, bool bt, bool loop,
                         int reps) {
  float* a = fill((size_t)(count * m * k), 4, 1);
  float* b = fill((size_t)(count * k * n), 4, 2);
  float* c = fill((size_t)(count * m * n), 4, 4);
  int64_t* off = malloc(sizeof(int64_t) * (size_t)count * 3);
  if (!off) exit(1);
  for (int64_t e = 0; e < count; e++) {
    off[e] = e * m * k;
    off[count + e] = e * k * n;
    off[2 * count + e] = e * m * n;
  }
  int64_t b_sk = bt ? 1 : n, b_sn = bt ? k : 1;
  double t[64], u[64];
  for (int r = -1; r < reps; r++) {
    double t0 = now_s(), u0 = cpu_s();
    if (loop)
      for (int64_t e = 0; e < count; e++)
        cpu_gemm_f32(m, n, k, 1.0f, a + off[e], k, 1, b + off[count + e], b_sk, b_sn, 0.0f, NULL,
                     0, c + off[2 * count + e], n, 1, 0);
    else
      cpu_gemm_batch_f32(count, off, off + count, NULL, off + 2 * count, m, n, k, 1.0f, a, k, 1,
                         b, b_sk, b_sn, 0.0f, NULL, 0, c, n, 1, 0);
    if (r >= 0) {
      t[r] = now_s() - t0;
      u[r] = cpu_s() - u0;
    }
  }
  free(a);
  free(b);
  free(c);
  free(off);
  timing tm = {median(t, reps), median(u, reps)};
  return tm;
}

/* The textbook loop (i, k, j order, which compilers vectorise), serial. */
static double time_naive(int64_t n, int reps) {
  float* a = fill((size_t)(n * n), 4, 1);
  float* b = fill((size_t)(n * n), 4, 2);
  float* c = malloc(sizeof(float) * (size_t)(n * n));
  double t[64];
  for (int r = -1; r < reps; r++) {
    double t0 = now_s();
    for (int64_t i = 0; i < n * n; i++) c[i] = 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t p = 0; p < n; p++) {
        float av = a[i * n + p];
        for (int64_t j = 0; j < n; j++) c[i * n + j] += av * b[p * n + j];
      }
    if (r >= 0) t[r] = now_s() - t0;
  }
  volatile float sink = c[n + 1];
  (void)sink;
  free(a);
  free(b);
  free(c);
  return median(t, reps);
}

static timing time_conv(int64_t n, int64_t ci, int64_t hw, int64_t co, int64_t k, int reps,
                        double* flops) {
  cpu_conv_geom g;
  memset(&g, 0, sizeof g);
  g.n = n;
  g.c_in = ci;
  g.h = g.w = hw;
  g.c_out = co;
  g.kh = g.kw = k;
  g.stride[0] = g.stride[1] = g.dil[0] = g.dil[1] = 1;
  g.pad[0] = g.pad[1] = k / 2;
  g.groups = 1;
  g.out_h = cpu_conv_out_size(hw, k, 1, k / 2, 1);
  g.out_w = g.out_h;
  int64_t xs[4] = {ci * hw * hw, hw * hw, hw, 1}, ws[4] = {ci * k * k, k * k, k, 1},
          os[4] = {co * g.out_h * g.out_w, g.out_h * g.out_w, g.out_w, 1};
  memcpy(g.x_strides, xs, sizeof xs);
  memcpy(g.w_strides, ws, sizeof ws);
  memcpy(g.out_strides, os, sizeof os);
  g.bias_stride = 1;
  g.alpha = g.beta = 1;
  g.activation = 1; /* relu */
  float* x = fill((size_t)(n * ci * hw * hw), 4, 1);
  float* w = fill((size_t)(co * ci * k * k), 4, 2);
  float* b = fill((size_t)co, 4, 3);
  float* o = fill((size_t)(n * co * g.out_h * g.out_w), 4, 4);
  double t[64], u[64];
  for (int r = -1; r < reps; r++) {
    double t0 = now_s(), u0 = cpu_s();
    ptc_status s = cpu_conv2d_f32(&g, x, w, b, o);
    if (s) {
      fprintf(stderr, "conv failed\n");
      exit(1);
    }
    if (r >= 0) {
      t[r] = now_s() - t0;
      u[r] = cpu_s() - u0;
    }
  }
  *flops = 2.0 * (double)(n * co * g.out_h * g.out_w) * (double)(ci * k * k);
  free(x);
  free(w);
  free(b);
  free(o);
  timing tm = {median(t, reps), median(u, reps)};
  return tm;
}

/* Peak estimate: cores x clock x FLOPs per cycle per core of the kernel's ISA. */
static double peak_gflops(size_t es, const char** why) {
  static char buf[256];
  double mhz = 0;
  FILE* f = fopen("/proc/cpuinfo", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, "cpu MHz", 7) == 0) {
      const char* colon = strchr(line, ':');
      if (colon) mhz = atof(colon + 1);
      break;
    }
  if (f) fclose(f);
  if (mhz <= 0) mhz = 2000;
  static const int lanes32[CPU_GEMM_ISA_COUNT] = {4, 8, 16};
  static const char* const isa_names[CPU_GEMM_ISA_COUNT] = {"generic SSE", "AVX2", "AVX-512"};
  cpu_gemm_isa isa = cpu_gemm_best_isa();
  int lanes = lanes32[isa] * 4 / (int)es;
  int fma_units = 2;
  /* generic (SSE, no FMA): separate mul + add per lane = 2 FLOPs/lane/cycle */
  int per_cycle = isa == CPU_GEMM_ISA_GENERIC ? 2 * lanes : fma_units * 2 * lanes;
  int cores = max_threads();
  snprintf(buf, sizeof buf,
           "%d cores x %.0f MHz (/proc/cpuinfo; turbo ignored) x %d FLOP/cycle (%s, %d lanes, "
           "%d FMA units x 2)",
           cores, mhz, per_cycle, isa_names[isa], lanes, fma_units);
  *why = buf;
  return cores * mhz * 1e-3 * per_cycle;
}

int main(int argc, char** argv) {
  bool quick = false, big = true;
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--quick") == 0) quick = true, big = false;
  int reps = quick ? 3 : 7;
  const char* why;
  double peak32 = peak_gflops(4, &why);
  printf("threads %d, kernel %s\n", max_threads(),
         cpu_gemm_kernel_for(4, cpu_gemm_best_isa())->name);
  printf("peak f32 ~ %.0f GFLOP/s: %s\n", peak32, why);
  double peak64 = peak_gflops(8, &why);
  printf("peak f64 ~ %.0f GFLOP/s\n\n", peak64);

  const gemm_shape shapes[] = {
      {"f32 1024x1024x1024", 1024, 1024, 1024, 4, 0, false, false},
      {"f32 m1024 n4096 k1024 +bias+gelu", 1024, 4096, 1024, 4, 2, true, false},
      {"f32 m1024 n4096 k1024 (no epilogue)", 1024, 4096, 1024, 4, 0, false, false},
      {"f32 m1024 n4096 k1024 +bias+gelu, B^T", 1024, 4096, 1024, 4, 2, true, true},
      {"f32 m1024 n1024 k4096 +bias+gelu", 1024, 1024, 4096, 4, 2, true, false},
      {"f64 1024x1024x1024", 1024, 1024, 1024, 8, 0, false, false},
      {"f32 64x64x64", 64, 64, 64, 4, 0, false, false},
      {"f32 128x128x128", 128, 128, 128, 4, 0, false, false},
      {"f32 256x256x256", 256, 256, 256, 4, 0, false, false},
      {"f32 m1 n4096 k4096 (gemv)", 1, 4096, 4096, 4, 0, false, false},
      {"f32 4096x4096x4096", 4096, 4096, 4096, 4, 0, false, false},
  };
  printf("%-40s %10s %9s %11s %8s\n", "shape (C[m,n] = A[m,k] B[k,n])", "median ms", "GFLOP/s",
         "GF/cpu-sec", "of peak");
  double g1024 = 0;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    const gemm_shape* s = &shapes[i];
    if (s->m == 4096 && !big) continue;
    double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    int r = flops > 1e11 ? 3 : flops < 1e8 ? 51 : reps;
    timing t = time_gemm(s, r);
    double gf = flops / t.wall * 1e-9;
    if (i == 0) g1024 = gf;
    printf("%-40s %10.3f %9.1f %11.1f %7.0f%%\n", s->label, t.wall * 1e3, gf,
           flops / t.cpu * 1e-9, 100 * gf / (s->es == 4 ? peak32 : peak64));
  }
  /* attention b8 h16 s1024 d64: scores = q @ k^T, out = p @ v (128 entries each) */
  static const struct {
    const char* label;
    int64_t m, n, k;
    bool bt, loop;
  } batches[] = {
      {"bmm 128 x (1024x1024x64), B^T (q k^T)", 1024, 1024, 64, true, false},
      {"  same, one cpu_gemm_f32 call per entry", 1024, 1024, 64, true, true},
      {"bmm 128 x (1024x64x1024) (p v)", 1024, 64, 1024, false, false},
      {"  same, one cpu_gemm_f32 call per entry", 1024, 64, 1024, false, true},
  };
  for (size_t i = 0; i < sizeof batches / sizeof batches[0] && big; i++) {
    double flops = 2.0 * 128 * (double)batches[i].m * (double)batches[i].n * (double)batches[i].k;
    timing t = time_batch(128, batches[i].m, batches[i].n, batches[i].k, batches[i].bt,
                          batches[i].loop, 3);
    printf("%-40s %10.3f %9.1f %11.1f %7.0f%%\n", batches[i].label, t.wall * 1e3,
           flops / t.wall * 1e-9, flops / t.cpu * 1e-9, 100 * flops / t.wall * 1e-9 / peak32);
  }
  double cf;
  timing ct = time_conv(1, 64, 56, 64, 3, reps, &cf);
  printf("%-40s %10.3f %9.1f %11.1f %7.0f%%\n", "conv 3x3 64->64 56x56 +bias+relu",
         ct.wall * 1e3, cf / ct.wall * 1e-9, cf / ct.cpu * 1e-9, 100 * cf / ct.wall * 1e-9 / peak32);
  ct = time_conv(8, 32, 28, 32, 3, reps, &cf);
  printf("%-40s %10.3f %9.1f %11.1f %7.0f%%\n", "conv 3x3 32->32 28x28 batch 8", ct.wall * 1e3,
         cf / ct.wall * 1e-9, cf / ct.cpu * 1e-9, 100 * cf / ct.wall * 1e-9 / peak32);

  int64_t nn = 512;
  double tn = time_naive(nn, 3), gn = 2.0 * (double)(nn * nn * nn) / tn * 1e-9;
  printf("\nnaive triple loop f32 %lldx%lldx%lld (serial): %.1f ms, %.2f GFLOP/s\n",
         (long long)nn, (long long)nn, (long long)nn, tn * 1e3, gn);
  gemm_shape s512 = {"", nn, nn, nn, 4, 0, false, false};
  timing t512 = time_gemm(&s512, reps);
  printf("cpu_gemm_f32 same size: %.2f ms, %.1f GFLOP/s: %.0fx the naive loop "
         "(1024^3: %.0fx the naive GFLOP/s)\n",
         t512.wall * 1e3, 2.0 * (double)(nn * nn * nn) / t512.wall * 1e-9, tn / t512.wall,
         g1024 / gn);
  return 0;
}
