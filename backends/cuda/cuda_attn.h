/* cuda_attn.h - fused scaled_dot_product_attention on the cuda backend
 * (internal): the graph check that lets the pipeline keep sdpa whole, and
 * the extern step that runs it with the flash-attention kernels of
 * cuda_attn.cuh. */
#ifndef PTC_BACKENDS_CUDA_ATTN_H
#define PTC_BACKENDS_CUDA_ATTN_H

#include "cuda_plan.h"

/** True if every scaled_dot_product_attention node of `g` is one the
 * device kernels take: q, k, v of one dtype, f16, bf16 or f32 (f32:
 * cuda_attn_f32.c); a constant head dim E in {32, 64, 128} with Ev == E;
 * no more than 6 batch dims; a mask absent, bool or of q's dtype. Then the cuda pipeline keeps sdpa whole
 * (it lowers to a fallback extern the device runs), else it decomposes
 * them all. PTC_CUDA_ATTN=0 in the environment makes it false (the
 * decomposition, e.g. to compare). Reads `g` only; thread-safe. */
bool cuda_attn_graph_ok(const ptc_graph* g);

/** True if extern node n is an sdpa node the device kernels run (its
 * output dtype is f16 or bf16). Thread-safe. */
bool cuda_attn_handles(const ir_program* p, const ir_node* n);

/** Runs an sdpa extern step (cuda_attn_handles true) on c->stream: builds
 * and loads the attention module of the dtype and head dim on first use
 * (process-wide, through the kernel cache; the primary context must be
 * current), then one launch.
 * Errors: UNIMPLEMENTED for a layout the kernels do not take (a head dim
 * or dtype the graph check would have refused), INTERNAL / NVRTC errors
 * from building or launching. Thread-safe. */
ptc_status cuda_attn_run(const cuda_ext_call* c);

/** Builds the attention module for sm_<arch> (no device needed, nothing
 * loaded): the compile-only check of tests/cuda. */
ptc_status cuda_attn_check_compile(ptc_context* ctx, int arch);

#endif /* PTC_BACKENDS_CUDA_ATTN_H */
