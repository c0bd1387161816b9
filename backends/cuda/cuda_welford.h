/* cuda_welford.h - one-pass (Welford / Chan) var, std and var_mean on the
 * cuda backend (internal): the node check that lets the pipeline keep such
 * a reduction whole, and the extern step that runs it with the kernels of
 * cuda_welford.cuh. */
#ifndef PTC_BACKENDS_CUDA_WELFORD_H
#define PTC_BACKENDS_CUDA_WELFORD_H

#include "cuda_plan.h"

/** Reduced elements a row from which var / std / var_mean stay whole by
 * default (PTC_CUDA_WELFORD_MIN overrides). Shorter rows keep the
 * two-pass decomposition: up to 8192 f32 elements a row stay in registers
 * between the passes (single read) and short re-reads hit L2. */
#define CUDA_WELFORD_MIN_ROW 16384

/** True if node n of g (a var, std or var_mean) is one the cuda pipeline
 * keeps whole for the one-pass kernels: a floating input; the reduced dims
 * the trailing ones (size-1 dims aside); at least CUDA_WELFORD_MIN_ROW
 * reduced elements a row (at the shape hints; PTC_CUDA_WELFORD_MIN=<n>
 * sets the bound); an input that is in memory anyway with unit-stride
 * rows - a contiguous graph input or constant, possibly through views that
 * keep the last dim (view, reshape, flatten, unflatten, squeeze, unsqueeze,
 * permute / transpose leaving the last dim last), or a matmul / convolution
 * output - so keeping the node whole costs no extra write and reads
 * coalesced rows (a computed input stays fused into the two passes of the
 * decomposition). PTC_CUDA_WELFORD=0 in the environment makes it false
 * (the decomposition, e.g. to compare). Reads g only; thread-safe. */
bool cuda_welford_node_ok(const ptc_graph* g, const gnode* n);

/** True if extern node n is a var / std / var_mean the device kernels run
 * (a fallback extern of a floating dtype the pipeline kept whole).
 * Thread-safe. */
bool cuda_welford_handles(const ir_program* p, const ir_node* n);

/** Runs a var / std / var_mean extern step (cuda_welford_handles true) on
 * c->stream: builds and loads the module of the input dtype on first use
 * (process-wide, through the kernel cache; the primary context must be
 * current), then one launch of the rows kernel, and for few huge rows
 * (split into chunks over the SMs) a workspace of partial states from the
 * caching allocator and one launch of the fold kernel (deterministic: the
 * partials are merged in chunk order). Inputs of any strides.
 * Errors: UNIMPLEMENTED for an input dtype or rank the kernels do not take,
 * RESOURCE_EXHAUSTED (workspace), INTERNAL / NVRTC errors from building or
 * launching. Thread-safe. */
ptc_status cuda_welford_run(const cuda_ext_call* c);

/** Builds the module of every input dtype for sm_<arch> (no device needed,
 * nothing loaded): the compile-only check of tests/cuda. */
ptc_status cuda_welford_check_compile(ptc_context* ctx, int arch);

#endif /* PTC_BACKENDS_CUDA_WELFORD_H */
