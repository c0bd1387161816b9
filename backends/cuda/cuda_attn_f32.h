/* cuda_attn_f32.h - float32 scaled_dot_product_attention on the cuda
 * backend (internal): the extern step of the float32 flash-attention
 * kernels of cuda_attn_f32.cuh (3xTF32 on tensor cores), dispatched by
 * cuda_attn_run for float32 outputs. */
#ifndef PTC_BACKENDS_CUDA_ATTN_F32_H
#define PTC_BACKENDS_CUDA_ATTN_F32_H

#include "cuda_plan.h"

/** Runs an sdpa extern step whose q, k, v and output are float32 (head dim
 * 32, 64 or 128, Ev == E; mask absent, bool or float32; at most 6 batch
 * dims) on c->stream: builds and loads the module of the head dim on first
 * use (process-wide, through the kernel cache; the primary context must be
 * current), then one launch.
 * Errors: UNIMPLEMENTED for a layout the kernels do not take (one the graph
 * check would have refused, or an output whose last stride is not 1),
 * INTERNAL / NVRTC / driver errors from building or launching. Thread-safe. */
ptc_status cuda_attn_f32_run(const cuda_ext_call* c);

/** Builds the float32 attention module (every head dim) for sm_<arch> (no
 * device needed, nothing loaded): the compile-only check of tests/cuda. */
ptc_status cuda_attn_f32_check_compile(int arch);

#endif /* PTC_BACKENDS_CUDA_ATTN_F32_H */
