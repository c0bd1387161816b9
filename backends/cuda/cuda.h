/* cuda.h - the cuda backend's internal entry points used by tests and tools
 * (not public API): the compile pipeline shared with ptc_compile, and a
 * compile-only check that needs NVRTC but no GPU. */
#ifndef PTC_BACKENDS_CUDA_H
#define PTC_BACKENDS_CUDA_H

#include "../../lib/ir/ir.h"
#include "../../lib/sched/sched.h"
#include "../../lib/core/core.h"
#include "cuda_rt.h"

/** Decomposes, lowers and schedules `g` exactly as the cuda backend's
 * prepare does for device `dev` (NULL: none, as the compile-only check;
 * the device picks the float32 convolutions' channels-last plane bound)
 * (fusion unless `fuse` is false). *dg (the decomposed graph, borrowing
 * g's constants), *p and *s are the caller's: destroy s, p, then dg. */
ptc_status cuda_pipeline(ptc_context* ctx, const cuda_device* dev, const ptc_graph* g, bool fuse,
                         ptc_graph** dg, ir_program** p, sched_plan** s);

/** Statistics of cuda_compile_check. */
typedef struct cuda_check_stats {
  size_t kernels;      /* generated kernels */
  size_t externs;      /* extern steps (GEMM, convolution, fallbacks) */
  size_t programs;     /* NVRTC compilations (one per graph and architecture) */
  size_t cubin_bytes;
  double codegen_ms, nvrtc_ms;
} cuda_check_stats;

/** Compile-only check, first half: runs cuda_pipeline on `g` and appends
 * the CUDA source of every generated kernel (without the prelude; entry
 * points named <prefix>k<i>_i32/_i64, so several graphs can share one
 * translation unit) to *tu. Adds to the kernel and extern counts of
 * *stats. Errors: any pipeline or codegen error. Thread-safe. */
ptc_status cuda_check_generate(ptc_context* ctx, const ptc_graph* g, bool fuse, const char* prefix,
                               ptc_strbuf* tu, cuda_check_stats* stats);
/** Second half: compiles the prelude followed by `kernels` (text from
 * cuda_check_generate) with NVRTC for each architecture archs[i] (e.g. 80,
 * 90) down to cubins, with --Ofast-compile=max (the same front end and
 * code generation with fewer optimisation passes: 2-3x faster, which CI
 * needs for thousands of kernels); no cache, no device. Errors: UNAVAILABLE without NVRTC; an NVRTC
 * rejection as INTERNAL with the program log in the detail "compiler_log".
 * Thread-safe. */
ptc_status cuda_check_compile(const char* kernels, const int* archs, size_t n_archs,
                              cuda_check_stats* stats);
/** Both halves for one graph. */
ptc_status cuda_compile_check(ptc_context* ctx, const ptc_graph* g, bool fuse, const int* archs,
                              size_t n_archs, cuda_check_stats* stats);

/** NULL when NVRTC can be opened (no device needed), else why not. */
const char* cuda_nvrtc_unavailable(void);

#endif /* PTC_BACKENDS_CUDA_H */
