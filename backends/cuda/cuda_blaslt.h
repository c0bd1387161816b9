/* cuda_blaslt.h - cuBLASLt GEMM algorithm tuning (cuda_blaslt.c): the
 * knob, the per-candidate timing the GEMM test and benchmark use, and the
 * cache's statistics. The matmul entry itself (cuda_blaslt_matmul) is
 * declared in cuda_plan.h. */
#ifndef PTC_CUDA_BLASLT_H
#define PTC_CUDA_BLASLT_H

#include "cuda_plan.h"

/** Counters of the cuBLASLt algorithm cache since the process started (or
 * the last cuda_blaslt_forget). */
typedef struct cuda_blaslt_stats {
  uint64_t hits;              /* calls served by a cached entry */
  uint64_t timed_keys;        /* keys whose candidates were timed */
  uint64_t timed_candidates;  /* candidates timed, all keys together */
  uint64_t disk_hits;         /* keys whose choice came from the disk record */
} cuda_blaslt_stats;

/** One timed candidate (cuda_blaslt_time_algos). */
typedef struct cuda_blaslt_algo_time {
  int index;         /* position in the candidate list (0: cuBLASLt's top heuristic) */
  int32_t algo_id, splitk;
  uint32_t tile;     /* cublasLtMatmulTile_t */
  size_t workspace;
  float ms;          /* per run; < 0 when cublasLtMatmul refused it */
  char text[128];    /* "algo A tile MxN stages S split-K K swizzle W ws B" */
} cuda_blaslt_algo_time;

/** Candidate variants beyond cuBLASLt's heuristic list (flags). */
enum {
  CUDA_BLASLT_VAR_SPLITK = 1, /* split-K 2..4 of the top two results */
  CUDA_BLASLT_VAR_TILES = 2   /* the top result's algorithm with each other tile it supports */
};

/** The number of candidates tuning times per key: PTC_CUDA_GEMM_TUNE
 * (unset: 8; 0 or 1: tuning off, 0 returned; at most 32). Read per call. */
int cuda_blaslt_tune_count(void);

/** Copies the counters. Thread-safe. */
void cuda_blaslt_get_stats(cuda_blaslt_stats* out);

/** Empties the algorithm cache (entries in use by a running call stay) and
 * zeroes the counters; for tests. Thread-safe. */
void cuda_blaslt_forget(void);

/** Times up to n_req heuristic candidates (plus the CUDA_BLASLT_VAR_*
 * variants in `variants`) of the GEMM cuda_blaslt_matmul would run for these arguments,
 * `reps` runs each (0: the tuner's count), into a scratch output (nothing
 * the caller owns is written), waiting for c->stream; writes up to cap
 * results to out and their number to *n_out (0 when cuBLASLt cannot take
 * the GEMM). Does not touch the cache. Errors: UNIMPLEMENTED without CUDA
 * event timing; a failed event or allocation. Thread-safe. */
ptc_status cuda_blaslt_time_algos(const cuda_ext_call* c, const cuda_mm_args* g, int64_t count,
                                  int32_t dtype, cu_deviceptr pa, cu_deviceptr pb,
                                  cu_deviceptr pbias, int n_req, int variants, int reps,
                                  cuda_blaslt_algo_time* out, int cap, int* n_out);

#endif
