/* cpu_gemm.c - the GEMM driver and the entry points of cpu.h (cpu_gemm_*,
 * cpu_gemm_batch_*): path choice (packed vs direct), cache blocking
 * loops, packing buffers (per call, shared by the threads of the call),
 * OpenMP work split, and the serial threshold. The kernels themselves are in
 * cpu_gemm_kernels.c; cpu_gemm_internal.h describes the structure. */
#include <stdlib.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "../../lib/core/core.h"
#include "cpu.h"
#include "cpu_gemm_internal.h"

/* Work below which one more thread does not pay for itself (flops). */
#define GEMM_FLOPS_PER_THREAD 4.0e6
/* Problems with at most GEMM_DIRECT_MAX_M rows, at most that many columns
 * where the direct path's dot-product form applies, or at most
 * GEMM_DIRECT_MAX_MNK multiply-adds with contiguous B rows take the
 * unpacked path: packing B would cost more than the packed kernel saves
 * (measured: the direct path wins up to ~20^3 and for m <= 8 at
 * k = n = 512). */
#define GEMM_DIRECT_MAX_MNK 8192
#define GEMM_DIRECT_MAX_M 8
/* Rows of A packed at once (bounds the A buffer at rows x KC elements). */
#define GEMM_MAX_PACKED_ROWS 3072

/* ---- OpenMP shims (the library also builds without OpenMP) ------------------------- */
static int omp_max(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

static int team_size(void) {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Threads for `flops` of work: serial below the threshold. */
static int threads_for(double flops, int max_threads) {
  int t = max_threads > 0 ? max_threads : omp_max();
  double by_work = flops / GEMM_FLOPS_PER_THREAD;
  if (by_work < t) t = by_work < 1 ? 1 : (int)by_work;
  return t < 1 ? 1 : t;
}

/* ---- direct path -------------------------------------------------------------------- */
static void run_direct(const cpu_gemm_kernel* kn, const cpu_gemm_args* g, int nt) {
  CPU_OMP(parallel num_threads(nt) if (nt > 1))
  {
    int team = team_size();
    if (g->m >= team) { /* rows */
      CPU_OMP(for schedule(static))
      for (int64_t i = 0; i < g->m; i++) kn->direct(g, i, i + 1, 0, g->n);
    } else { /* columns, in chunks of 64 */
      int64_t chunks = ceil_div(g->n, 64);
      CPU_OMP(for schedule(static))
      for (int64_t q = 0; q < chunks; q++)
        kn->direct(g, 0, g->m, q * 64, min64(g->n, q * 64 + 64));
    }
  }
}

/* ---- packed path -------------------------------------------------------------------- */
typedef struct packed_plan {
  const cpu_gemm_kernel* kn;
  const cpu_gemm_args* g;
  int64_t kc, nc, mb; /* K slice, column panel, rows packed together */
  char* apack;        /* mb x kc, MR-row micro-panels */
  char* bpack;        /* kc x nc, NR-wide micro-panels */
} packed_plan;

/* The current (jc, pc, ic) block being computed. */
typedef struct block_pos {
  int64_t jc, ncur, pc, kcur, ic, mcur;
} block_pos;

/* How the tiles of one block are split into tasks: row blocks of `ppb` A
 * micro-panels times column ranges of `cpb` B micro-panels. */
typedef struct task_split {
  int64_t mblocks, ppb, nsplit, cpb;
} task_split;

static task_split split_tasks(int64_t mpan, int64_t npan, int64_t mc_pan, int nt) {
  task_split s = {ceil_div(mpan, mc_pan), 0, 1, 0};
  if (nt > 1 && s.mblocks >= nt) {
    s.mblocks = min64(ceil_div(s.mblocks, nt) * nt, mpan); /* a multiple of the team */
  } else if (nt > 1) {
    s.nsplit = min64(ceil_div(nt, s.mblocks), npan); /* too few rows: split columns */
  }
  s.ppb = ceil_div(mpan, s.mblocks);
  s.mblocks = ceil_div(mpan, s.ppb);
  s.cpb = ceil_div(npan, s.nsplit);
  s.nsplit = ceil_div(npan, s.cpb);
  return s;
}

/* Asks for the C tile's rows ahead of the micro-kernel, which takes long
 * enough (KC steps) to hide the misses that the epilogue would otherwise
 * wait for: a tile's rows are far apart, so hardware prefetchers miss them.
 * Always inlined: GCC deems a function of prefetches alone const and
 * deletes its calls. */
static inline __attribute__((always_inline)) void prefetch_c(const cpu_gemm_args* g, int64_t i0,
                                                             int64_t rows, int64_t j0,
                                                             size_t es) {
  const char* c = (const char*)g->c + (size_t)(i0 * g->c_sm + j0 * g->c_sn) * es;
  for (int64_t r = 0; r < rows; r++) {
    const char* row = c + (ptrdiff_t)(r * g->c_sm) * (ptrdiff_t)es;
    __builtin_prefetch(row, 1, 2);
    if (g->c_sn == 1) __builtin_prefetch(row + 64, 1, 2);
  }
}

/* Tiles of row panels [rp0, rp1) x column panels [cp0, cp1) of the block:
 * each B micro-panel stays in L1 while the A micro-panels stream past. */
static void compute_tiles(const packed_plan* P, const block_pos* b, int64_t rp0, int64_t rp1,
                          int64_t cp0, int64_t cp1) {
  const cpu_gemm_kernel* kn = P->kn;
  const size_t es = kn->esize;
  const int64_t mr = kn->mr, nr = kn->nr;
  _Alignas(CPU_GEMM_ALIGN) char tile[CPU_GEMM_MAX_TILE * sizeof(double)];
  cpu_gemm_tile_pos pos;
  pos.first = b->pc == 0;
  pos.last = b->pc + b->kcur >= P->g->k;
  for (int64_t cq = cp0; cq < cp1; cq++) {
    const char* bp = P->bpack + (size_t)(cq * b->kcur * nr) * es;
    pos.j0 = b->jc + cq * nr;
    pos.cols = (int32_t)min64(nr, b->ncur - cq * nr);
    for (int64_t rq = rp0; rq < rp1; rq++) {
      prefetch_c(P->g, b->ic + rq * mr, min64(mr, b->mcur - rq * mr), pos.j0, es);
      kn->ukernel(b->kcur, P->apack + (size_t)(rq * b->kcur * mr) * es, bp, tile);
      pos.i0 = b->ic + rq * mr;
      pos.rows = (int32_t)min64(mr, b->mcur - rq * mr);
      kn->store(P->g, &pos, tile, nr);
    }
  }
}

/* Packs this block's rows of A (and, for the first row block of a K
 * slice, B's panels in the same loop: one barrier less), then computes its
 * tiles. Team-shared. */
static void block_rows(const packed_plan* P, const block_pos* b, int64_t npan, bool with_b) {
  const cpu_gemm_kernel* kn = P->kn;
  const cpu_gemm_args* g = P->g;
  const int64_t mr = kn->mr, nr = kn->nr, mpan = ceil_div(b->mcur, mr);
  const int64_t nb = with_b ? npan : 0;
  CPU_OMP(for schedule(static))
  for (int64_t q = 0; q < nb + mpan; q++) {
    if (q < nb) {
      int64_t j0 = b->jc + q * nr, cols = min64(nr, b->ncur - q * nr);
      char* dst = P->bpack + (size_t)(q * b->kcur * nr) * kn->esize;
      if (g->pack_b_fn)
        g->pack_b_fn(g->pack_b_ctx, b->pc, b->kcur, j0, cols, (int32_t)nr, dst);
      else
        kn->pack_b(g, b->pc, b->kcur, j0, cols, dst);
    } else {
      int64_t qa = q - nb;
      kn->pack_a(g, b->ic + qa * mr, min64(mr, b->mcur - qa * mr), b->pc, b->kcur,
                 P->apack + (size_t)(qa * mr * b->kcur) * kn->esize);
    }
  }
  task_split s = split_tasks(mpan, npan, kn->mc / mr, team_size());
  CPU_OMP(for schedule(static))
  for (int64_t t = 0; t < s.mblocks * s.nsplit; t++) {
    int64_t rb = t / s.nsplit, cb = t % s.nsplit;
    compute_tiles(P, b, rb * s.ppb, min64(mpan, rb * s.ppb + s.ppb), cb * s.cpb,
                  min64(npan, cb * s.cpb + s.cpb));
  }
}

/* Run by every thread of the team; the `omp for` loops (with their implicit
 * barriers) share the packing and the tiles. Serially it is plain loops. */
static void packed_body(const packed_plan* P) {
  const cpu_gemm_args* g = P->g;
  block_pos b;
  for (b.jc = 0; b.jc < g->n; b.jc += P->nc) {
    b.ncur = min64(P->nc, g->n - b.jc);
    int64_t npan = ceil_div(b.ncur, P->kn->nr);
    for (b.pc = 0; b.pc < g->k; b.pc += P->kc) {
      b.kcur = min64(P->kc, g->k - b.pc);
      for (b.ic = 0; b.ic < g->m; b.ic += P->mb) {
        b.mcur = min64(P->mb, g->m - b.ic);
        block_rows(P, &b, npan, b.ic == 0);
      }
    }
  }
}

/* Block size for `total` split into pieces of at most `cap`, balanced and
 * rounded up to a multiple of `unit`. */
static int64_t balanced(int64_t total, int64_t cap, int64_t unit) {
  int64_t pieces = ceil_div(total, cap);
  return ceil_div(ceil_div(total, pieces), unit) * unit;
}

/* False when the packing buffers cannot be allocated. */
static bool run_packed(const cpu_gemm_kernel* kn, const cpu_gemm_args* g, int nt) {
  packed_plan P = {kn, g, 0, 0, 0, NULL, NULL};
  P.kc = balanced(g->k, kn->kc, 1);
  P.nc = balanced(g->n, kn->nc, kn->nr);
  P.mb = balanced(g->m, GEMM_MAX_PACKED_ROWS, kn->mr);
  size_t asize = (size_t)(P.mb * P.kc) * kn->esize, bsize = (size_t)(P.kc * P.nc) * kn->esize;
  P.apack = ptc_alloc_ctx(NULL, asize, CPU_GEMM_ALIGN);
  P.bpack = ptc_alloc_ctx(NULL, bsize, CPU_GEMM_ALIGN);
  bool ok = P.apack && P.bpack;
  if (ok) {
    CPU_OMP(parallel num_threads(nt) if (nt > 1))
    packed_body(&P);
  }
  if (P.apack) ptc_free_ctx(NULL, P.apack, asize, CPU_GEMM_ALIGN);
  if (P.bpack) ptc_free_ctx(NULL, P.bpack, bsize, CPU_GEMM_ALIGN);
  return ok;
}

/* ---- entry points ------------------------------------------------------------------- */
static bool prefer_direct(const cpu_gemm_args* g) {
  bool dot_form = g->a_sk == 1 && g->b_sk == 1; /* contiguous A rows and B columns */
  bool tiny = (double)g->m * (double)g->n * (double)g->k <= GEMM_DIRECT_MAX_MNK;
  return g->k == 0 || g->m <= GEMM_DIRECT_MAX_M || (dot_form && g->n <= GEMM_DIRECT_MAX_M) ||
         (tiny && g->b_sn == 1);
}

bool cpu_gemm_run(const cpu_gemm_kernel* kn, const cpu_gemm_args* g, cpu_gemm_path path,
                  int max_threads) {
  if (g->m <= 0 || g->n <= 0) return true;
  int nt = threads_for(2.0 * (double)g->m * (double)g->n * (double)g->k, max_threads);
  bool direct = g->k <= 0 || (!g->pack_b_fn && (path == CPU_GEMM_PATH_DIRECT ||
                                                (path == CPU_GEMM_PATH_AUTO && prefer_direct(g))));
  if (!direct && run_packed(kn, g, nt)) return true;
  if (g->pack_b_fn && g->k > 0) return false; /* B exists only through packing */
  run_direct(kn, g, nt);
  return true;
}

void cpu_gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_sm,
                  int64_t a_sk, const float* b, int64_t b_sk, int64_t b_sn, float beta,
                  const float* bias, int64_t bias_sn, float* c, int64_t c_sm, int64_t c_sn,
                  int32_t activation) {
  cpu_gemm_args g = {m,    n,    k,    alpha, beta,    a, a_sm, a_sk, b,          b_sk,
                     b_sn, bias, 0,    bias_sn, c,     c_sm, c_sn, activation, NULL, NULL};
  (void)cpu_gemm_run(cpu_gemm_kernel_for(4, cpu_gemm_best_isa()), &g, CPU_GEMM_PATH_AUTO, 0);
}

void cpu_gemm_f64(int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t a_sm,
                  int64_t a_sk, const double* b, int64_t b_sk, int64_t b_sn, double beta,
                  const double* bias, int64_t bias_sn, double* c, int64_t c_sm, int64_t c_sn,
                  int32_t activation) {
  cpu_gemm_args g = {m,    n,    k,    alpha, beta,    a, a_sm, a_sk, b,          b_sk,
                     b_sn, bias, 0,    bias_sn, c,     c_sm, c_sn, activation, NULL, NULL};
  (void)cpu_gemm_run(cpu_gemm_kernel_for(8, cpu_gemm_best_isa()), &g, CPU_GEMM_PATH_AUTO, 0);
}

/* ---- batches -------------------------------------------------------------------------- */
/* Entry offsets of a batch, in elements (bias may have none). */
typedef struct batch_offs {
  const int64_t *a, *b, *bias, *c;
} batch_offs;

/* Whether the entries of a batch run in parallel with each other (each one
 * serial) rather than one after another with the team inside each: when
 * an entry is too small for the team, or when there are enough entries to
 * keep every thread busy to the end (at least 3/4 of the thread-rounds
 * used: 128 attention heads on 16 threads are 8 rounds, none idle), which
 * saves the team's barriers between packing and compute of every block. */
static bool batch_across(const cpu_gemm_args* g0, int64_t count, int nt) {
  if (nt <= 1 || count <= 1) return false;
  if (2.0 * (double)g0->m * (double)g0->n * (double)g0->k < GEMM_FLOPS_PER_THREAD * nt) return true;
  int64_t rounds = ceil_div(count, nt);
  return count >= nt && 4 * count >= 3 * rounds * nt;
}

static void run_batch(const cpu_gemm_kernel* kn, const cpu_gemm_args* g0, int64_t count,
                      const batch_offs* o) {
  const size_t es = kn->esize;
  int nt = omp_max();
  bool across = batch_across(g0, count, nt);
  (void)across; /* used by the pragma only */
  CPU_OMP(parallel for schedule(dynamic, 1) num_threads(nt) if (across))
  for (int64_t e = 0; e < count; e++) {
    cpu_gemm_args g = *g0;
    g.a = (const char*)g0->a + (ptrdiff_t)o->a[e] * (ptrdiff_t)es;
    g.b = (const char*)g0->b + (ptrdiff_t)o->b[e] * (ptrdiff_t)es;
    if (g0->bias && o->bias) g.bias = (const char*)g0->bias + (ptrdiff_t)o->bias[e] * (ptrdiff_t)es;
    g.c = (char*)g0->c + (ptrdiff_t)o->c[e] * (ptrdiff_t)es;
    (void)cpu_gemm_run(kn, &g, CPU_GEMM_PATH_AUTO, 0);
  }
}

void cpu_gemm_batch_f32(int64_t count, const int64_t* a_off, const int64_t* b_off,
                        const int64_t* bias_off, const int64_t* c_off, int64_t m, int64_t n,
                        int64_t k, float alpha, const float* a, int64_t a_sm, int64_t a_sk,
                        const float* b, int64_t b_sk, int64_t b_sn, float beta, const float* bias,
                        int64_t bias_sn, float* c, int64_t c_sm, int64_t c_sn,
                        int32_t activation) {
  cpu_gemm_args g = {m,    n,    k,    alpha, beta,    a, a_sm, a_sk, b,          b_sk,
                     b_sn, bias, 0,    bias_sn, c,     c_sm, c_sn, activation, NULL, NULL};
  batch_offs o = {a_off, b_off, bias_off, c_off};
  run_batch(cpu_gemm_kernel_for(4, cpu_gemm_best_isa()), &g, count, &o);
}

void cpu_gemm_batch_f64(int64_t count, const int64_t* a_off, const int64_t* b_off,
                        const int64_t* bias_off, const int64_t* c_off, int64_t m, int64_t n,
                        int64_t k, double alpha, const double* a, int64_t a_sm, int64_t a_sk,
                        const double* b, int64_t b_sk, int64_t b_sn, double beta,
                        const double* bias, int64_t bias_sn, double* c, int64_t c_sm,
                        int64_t c_sn, int32_t activation) {
  cpu_gemm_args g = {m,    n,    k,    alpha, beta,    a, a_sm, a_sk, b,          b_sk,
                     b_sn, bias, 0,    bias_sn, c,     c_sm, c_sn, activation, NULL, NULL};
  batch_offs o = {a_off, b_off, bias_off, c_off};
  run_batch(cpu_gemm_kernel_for(8, cpu_gemm_best_isa()), &g, count, &o);
}
