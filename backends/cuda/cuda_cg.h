/* cuda_cg.h - the CUDA C code generator of the cuda backend (internal):
 * from one kernel of a scheduled program (the same ir_program + sched_plan
 * the cpu backend compiles) to one CUDA translation unit.
 *
 * Kernel shapes ("layouts", chosen per kernel from size hints and access
 * patterns, see cuda_cg_kernel.c):
 *  - POINTWISE: one thread per outer point, grid-stride over the flattened
 *    outer ranges, CUDA_CG_ILP points per thread per step (unrolled, each
 *    BLOCK apart so loads stay coalesced). When every store writes the flat
 *    index and no buffer is both read and written, the kernel is
 *    vectorised instead: chunks of V consecutive points per thread, one
 *    16-byte load per buffer read at the flat index and one store per
 *    output (cuda_cg_kernel.c, vec_plan), scalar for ragged or unaligned
 *    chunks.
 *  - ROW: a reduction whose rows are contiguous (or anything not COL): one
 *    row per group of `lanes` threads (whole warps) with `slots` rows per
 *    block; each lane folds r = lane, lane + lanes, ... and the lanes then
 *    combine with warp shuffles (and shared memory across warps), so every
 *    lane holds the reduced value and the member nodes after the reduction
 *    (pointwise epilogues, later reductions of the same row: softmax,
 *    layer norm) run in the same kernel. Lanes follow the row's bytes
 *    (rows of 2-byte elements get half the lanes of 4-byte ones). With one
 *    reduction dim, buffers accessed at r + (a multiple of V) are read and
 *    written with 16-byte vectors, V consecutive elements per lane step
 *    (cuda_cg_kernel.c, rvec_plan; the entry falls back to V = 1 when the
 *    row length or an alignment does not allow). With a static row of at
 *    most 16 elements per lane (lanes doubled up to 512 to fit) where that
 *    spares writing an intermediate (softmax's exp) or re-reading 4-byte
 *    rows, the row persists: its loops are unrolled and the buffers they
 *    share stay in registers (cuda_cg_kernel.c, persist_plan;
 *    PTC_CUDA_PERSIST* tune it). Persistent kernels carry
 *    __launch_bounds__ for 1024 resident threads per SM; 2-byte rows of >=
 *    2048 elements load the next tile's row during the current one's
 *    combines (prefetch_plan; the grid is capped at the resident blocks).
 *  - COL: a reduction over a strided dim whose last outer dim is contiguous
 *    (column sums): threadIdx.x walks the outer points (coalesced),
 *    threadIdx.y splits the reduction (32 x 32 threads, fewer lanes when
 *    many reductions share the kernel; PTC_CUDA_COL="X,Y" tunes it); shared
 *    memory combines (rows padded against bank conflicts). Tiny rows
 *    (rnumel <= CUDA_CG_TINY_ROW) use COL with one lane: a thread per row.
 *    Few column tiles (<= 16) over many rows: the rows are split over
 *    blocks as below, per (tile, chunk), with a per-tile counter.
 *  - ROW, split: few huge rows (x.sum() over everything, a [4, 2^24] row
 *    sum): each row is cut into `split` contiguous chunks, one 512-thread
 *    block each (the grid is xnumel * split blocks); each block publishes
 *    its partial accumulators to a module workspace (__device__ arrays),
 *    and the last block of a row (a per-row counter, reset by that block)
 *    folds the partials in chunk order - deterministic - and runs the
 *    epilogue. Kernels whose members form one reduction group (plus outer
 *    members after it) only (cuda_cg_kernel.c, split_plan). The workspace
 *    belongs to the loaded module: two launches of one plan's kernel must
 *    not overlap - stream order within a stream; a launch on another stream
 *    than the previous one waits for the device first (cuda_plan_run.c,
 *    launch_split).
 * Every kernel is emitted as a template over its index type IT with two
 * entry points <name>_i32 / <name>_i64: 32-bit indexing is used when every
 * extent the kernel touches fits (decided at launch, cuda_cg_use_i32); a
 * kernel with static sizes only gets the variant it needs.
 *
 * Entry signature (both variants):
 *   extern "C" __global__ void <name>_iNN(<buffers...>, i64 <size syms...>,
 *       i64 xnumel, i64 rnumel, ptc_kerr* kerr, u64 seed)
 * buffers: element 0 of each buffer's storage, in cuda_kernel_src.bufs
 * order; size syms: values of env symbols cuda_kernel_src.syms; xnumel /
 * rnumel: products of the kernel's ranges / rranges this run; kerr: the
 * run's error word (cuda_kerr), seed: the run seed.
 */
#ifndef PTC_BACKENDS_CUDA_CG_H
#define PTC_BACKENDS_CUDA_CG_H

#include "../../lib/ir/ir.h"
#include "../../lib/sched/sched.h"

#define PTC_CUDA_CODEGEN_VERSION "cuda-codegen-1"

/* ---- tunables --------------------------------------------------------------- */
#define CUDA_CG_BLOCK 256       /* pointwise threads per block */
#define CUDA_CG_ILP 4           /* pointwise points per thread per step */
#define CUDA_CG_TINY_ROW 16     /* rnumel at or below: a thread per row */
#define CUDA_CG_COL_X 32        /* COL: outer points per block */
#define CUDA_CG_COL_Y 32        /* COL: reduction lanes per outer point */
#define CUDA_CG_UNBACKED_HINT 8192
#define CUDA_CG_TUNE_MAX_BLOCK 512 /* pointwise: block sizes up to this (blockDim-driven) */
#define CUDA_CG_PW_UNROLL 1     /* vector pointwise: 16-byte chunks a thread a step (PTC_CUDA_PW_UNROLL) */
#define CUDA_CG_PW_NOCAP 0xffffffffu /* pointwise grid_per_sm: no grid cap (a thread a step) */
#define CUDA_CG_PW_LD 0        /* vector pointwise load cache hint (PTC_CUDA_PW_LD, cuda_cg_kernel.c io_hints) */
#define CUDA_CG_PW_ST 0        /* vector pointwise store cache hint (PTC_CUDA_PW_ST) */
#define CUDA_CG_PW_STREAM_MIB 64 /* from this traffic (MiB) vector pointwise kernels are big: 2 chunks, one pass (ld 2, st 1 for 1-2 byte elements) */
#define CUDA_CG_PW_BIG_BLOCK 128 /* big vector pointwise kernels (>= PW_STREAM MiB): threads per block */
#define CUDA_CG_ROW_GRID_4B 64 /* ROW kernels over 4-byte rows: grid cap in blocks an SM (PTC_CUDA_GRID overrides) */
#define CUDA_CG_PW_WAVES 8     /* pointwise grid cap in waves (PTC_CUDA_PW_WAVES): -1 the tune default, 0 none */

typedef enum cuda_layout { CUDA_LAYOUT_POINTWISE = 0, CUDA_LAYOUT_ROW, CUDA_LAYOUT_COL } cuda_layout;

/** The host-side twin of the prelude's ptc_kerr. */
typedef struct cuda_kerr {
  int32_t error;       /* 0 ok, else CUDA_KERR_* */
  int32_t node;        /* ir node index */
  int64_t value;
  int64_t bound;
} cuda_kerr;
enum { CUDA_KERR_INDIRECT = 1, CUDA_KERR_DIV_ZERO = 2, CUDA_KERR_EMPTY = 3 };

/** One generated kernel. */
typedef struct cuda_kernel_src {
  char* source;           /* malloc'ed CUDA translation unit (prelude included) */
  char name[48];          /* "ptc_k3"; entry points name_i32 / name_i64 */
  bool has_i32, has_i64;  /* which entry points exist */
  uint32_t n_bufs;
  int32_t* bufs;          /* malloc'ed buffer ids in argument order */
  uint32_t n_syms;
  uint32_t* syms;         /* malloc'ed env symbol indices passed by value */
  uint8_t layout;         /* cuda_layout */
  uint32_t block_x, block_y;
  uint32_t slots;         /* outer points per block per step (POINTWISE: BLOCK*ILP or BLOCK*V) */
  bool uses_err;          /* may report through kerr (the run reads it back) */
  /* launch-config tuning (cuda_tune.c): the most threads per block the kernel
   * accepts (0: exactly block_x * block_y) and whether repeated launches are
   * idempotent (no buffer read and written, no shared workspace slot) */
  uint32_t max_threads;
  bool tunable;
  /* split reductions (ROW layout, few huge rows: cuda_cg_kernel.c,
   * split_plan): each row is cut into `split` chunks, one block each; launch
   * xnumel * split blocks (0 or 1: not split) */
  uint32_t split;
  /* reduction layouts: the grid's cap in blocks per SM (0: the default cap,
   * cuda_tune.c); set for kernels that walk several tiles per block.
   * POINTWISE: the heuristic grid cap in waves of resident blocks (0: the
   * default CUDA_TUNE_DEFAULT_WAVES, CUDA_CG_PW_NOCAP: none) */
  uint32_t grid_per_sm;
} cuda_kernel_src;

/** Emits CUDA C for kernel `k` of plan `s` (not an extern), named "ptc_k<k>". */
ptc_status cuda_codegen_kernel(const ir_program* p, const sched_plan* s, uint32_t k,
                               cuda_kernel_src* out);
/** The same with the entry points named <name>_i32 / <name>_i64 (name: a C
 * identifier of at most 40 characters). */
ptc_status cuda_codegen_kernel_named(const ir_program* p, const sched_plan* s, uint32_t k,
                                     const char* name, cuda_kernel_src* out);
void cuda_kernel_src_free(cuda_kernel_src* src);

/** The device prelude (cuda_prelude.cuh, embedded at build time). */
extern const char ptc_cuda_prelude_text[];

#endif /* PTC_BACKENDS_CUDA_CG_H */
