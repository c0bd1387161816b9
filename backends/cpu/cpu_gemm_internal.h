/* cpu_gemm_internal.h - private interfaces of the CPU GEMM (cpu_gemm.c,
 * cpu_gemm_kernels.c) and its users inside backends/cpu (cpu_conv.c, tests,
 * bench): the type-erased call description, the per-type/per-ISA kernel
 * table (micro-kernel, packing, epilogue, direct path) and the driver.
 *
 * Structure (GotoBLAS/BLIS): for each NC-wide column panel of B and KC-deep
 * slice of K, B is packed into NR-wide micro-panels; A is packed into MR-row
 * micro-panels; a register-blocked MR x NR micro-kernel multiplies one A
 * micro-panel by one B micro-panel into a tile, and the epilogue merges the
 * tile into C (alpha, bias, activation fused in the write-back of the last
 * K slice). Threads share the packed buffers and split the tiles; each C
 * element's sum has the same order for any thread count, so results are
 * bitwise independent of it. */
#ifndef PTC_BACKENDS_CPU_GEMM_INTERNAL_H
#define PTC_BACKENDS_CPU_GEMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* OpenMP directives that vanish (without -Wunknown-pragmas warnings) when
 * the library is built without OpenMP: CPU_OMP(parallel for ...). */
#ifdef _OPENMP
#define CPU_OMP_STR(...) #__VA_ARGS__
#define CPU_OMP(...) _Pragma(CPU_OMP_STR(omp __VA_ARGS__))
#else
#define CPU_OMP(...)
#endif

/* Largest micro-tile and micro-panel width any kernel uses, in elements
 * (tile buffers are sized by them), and the alignment of packed buffers and
 * tiles in bytes. */
#define CPU_GEMM_MAX_TILE 512
#define CPU_GEMM_MAX_NR 64
#define CPU_GEMM_ALIGN 64

/** One GEMM call, type-erased: C[i,j] = act(alpha * sum_p A[i,p]*B[p,j]
 * + beta * bias[i*bias_sm + j*bias_sn]). Strides in elements, of any sign;
 * C must not overlap A, B or bias. bias NULL or beta == 0: no bias term
 * (bias is not read). C is only written (never read before it is). */
typedef struct cpu_gemm_args {
  int64_t m, n, k;
  double alpha, beta; /* rounded to the element type by the kernels */
  const void* a;
  int64_t a_sm, a_sk;
  const void* b;
  int64_t b_sk, b_sn;
  const void* bias;
  int64_t bias_sm, bias_sn;
  void* c;
  int64_t c_sm, c_sn;
  int32_t act; /* ir_activation */
  /** Optional: B is implicit and this packs one NR-wide micro-panel of it
   * (same contract as cpu_gemm_kernel.pack_b, nr given); b, b_sk, b_sn are
   * then unused. Convolution uses it to pack straight from the input
   * (im2col fused into packing). Forces the packed path. */
  void (*pack_b_fn)(const void* ctx, int64_t p0, int64_t kc, int64_t j0, int64_t cols,
                    int32_t nr, void* dst);
  const void* pack_b_ctx;
} cpu_gemm_args;

/** Where a tile lands and how it is merged (see cpu_gemm_kernel.store). */
typedef struct cpu_gemm_tile_pos {
  int64_t i0, j0;    /* top-left element of the tile in C */
  int32_t rows, cols; /* valid part (edge tiles are smaller than MR x NR) */
  bool first, last;  /* first / last K slice of this tile */
} cpu_gemm_tile_pos;

typedef enum cpu_gemm_isa {
  CPU_GEMM_ISA_GENERIC = 0, /* 16-byte vectors, any target */
  CPU_GEMM_ISA_AVX2,        /* x86-64 AVX2 + FMA */
  CPU_GEMM_ISA_AVX512,      /* x86-64 AVX-512F */
  CPU_GEMM_ISA_COUNT
} cpu_gemm_isa;

/** The kernels for one element type on one ISA. */
typedef struct cpu_gemm_kernel {
  const char* name; /* "f32-avx512" */
  size_t esize;     /* element size in bytes */
  int32_t mr, nr;   /* micro-tile */
  int32_t mc, kc, nc; /* cache blocking (mc multiple of mr, nc of nr) */
  /** Packs rows [i0, i0+rows) x K slice [p0, p0+kc) of A into MR-row
   * micro-panels (column p of a panel = MR consecutive elements), rows past
   * `rows` zero-filled up to a multiple of MR. */
  void (*pack_a)(const cpu_gemm_args* g, int64_t i0, int64_t rows, int64_t p0, int64_t kc,
                 void* dst);
  /** Packs K slice [p0, p0+kc) x columns [j0, j0+cols) of B into one NR-wide
   * micro-panel (row p = NR consecutive elements), zero-filled past cols. */
  void (*pack_b)(const cpu_gemm_args* g, int64_t p0, int64_t kc, int64_t j0, int64_t cols,
                 void* dst);
  /** tile[MR x NR row-major] = A panel (kc x MR) times B panel (kc x NR). */
  void (*ukernel)(int64_t kc, const void* a, const void* b, void* tile);
  /** Merges a tile (rows tile_ld elements apart) into C: first K slice
   * alpha*t + beta*bias, later slices c + alpha*t; the last slice then
   * applies the activation. */
  void (*store)(const cpu_gemm_args* g, const cpu_gemm_tile_pos* pos, const void* tile,
                int64_t tile_ld);
  /** Unpacked path for the block rows [i0, i1) x columns [j0, j1) of C
   * (small problems, matrix-vector shapes, K = 0, and when packing buffers
   * cannot be allocated): needs no heap memory. */
  void (*direct)(const cpu_gemm_args* g, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
  /** acc[l] += sum_{t < n} w[t] * p[t][l] for l in [0, len), all contiguous
   * (the direct convolution's inner loop: one tap per input row segment). */
  void (*taps)(void* acc, int64_t len, const void* const* p, const void* w, int n);
} cpu_gemm_kernel;

/** Best ISA this machine runs (checked at run time). */
cpu_gemm_isa cpu_gemm_best_isa(void);
/** Kernels for `esize` (4: f32, 8: f64) on `isa`, or NULL when that ISA was
 * not compiled in or the machine cannot run it. */
const cpu_gemm_kernel* cpu_gemm_kernel_for(size_t esize, cpu_gemm_isa isa);

/** Path choice of cpu_gemm_run (tests force each one). */
typedef enum cpu_gemm_path {
  CPU_GEMM_PATH_AUTO = 0,
  CPU_GEMM_PATH_PACKED, /* blocked + packed (falls back to direct on OOM) */
  CPU_GEMM_PATH_DIRECT
} cpu_gemm_path;

/** Runs one GEMM with kernel table `kern`. max_threads <= 0: OpenMP's
 * default; the count actually used also depends on the amount of work
 * (small problems run serially). Thread-safe; called inside an OpenMP
 * parallel region it runs serially on the calling thread. Returns false
 * only when g->pack_b_fn is set and the packing buffers cannot be
 * allocated (without it, the direct path needs no memory). */
bool cpu_gemm_run(const cpu_gemm_kernel* kern, const cpu_gemm_args* g, cpu_gemm_path path,
                  int max_threads);

#endif /* PTC_BACKENDS_CPU_GEMM_INTERNAL_H */
