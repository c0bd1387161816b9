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
 * output dtype is f16, bf16 or f32). Thread-safe. */
bool cuda_attn_handles(const ir_program* p, const ir_node* n);

/** Runs an sdpa extern step (cuda_attn_handles true) on c->stream: builds
 * and loads the attention module the call needs on first use (one per
 * dtype, head dim, tile shape, mask kind and load path; process-wide,
 * through the kernel cache; the primary context must be current), then
 * one launch. f32 goes to cuda_attn_f32_run.
 * Errors: UNIMPLEMENTED for a layout the kernels do not take (a head dim
 * or dtype the graph check would have refused), INTERNAL / NVRTC errors
 * from building or launching. Thread-safe. */
ptc_status cuda_attn_run(const cuda_ext_call* c);

/** Builds the attention modules for sm_<arch> (no device needed, nothing
 * loaded): the compile-only check of tests/cuda, one program holding an
 * instantiation of every mask kind (none, additive, boolean), both load
 * paths (cp.async and element loads), both dtypes, the three head dims and
 * the large- and small-grid tile shapes. Thread-safe. */
ptc_status cuda_attn_check_compile(ptc_context* ctx, int arch);

#define CUDA_ATTN_MAXB 6 /* batch dims of an sdpa call the kernels take */

/** The geometry of one sdpa call as the device kernels read it: the first
 * 400 bytes of ptc_attn_args (cuda_attn.cuh) and of ptc_attn32_args
 * (cuda_attn_f32.cuh). Batch dims are the output's; a view's stride is 0
 * where it broadcasts. mask: 0 none, 1 additive, 2 boolean. */
typedef struct cuda_attn_geom {
  int64_t L, S, nbatch;
  int64_t batch[CUDA_ATTN_MAXB];
  int64_t q_bs[CUDA_ATTN_MAXB], k_bs[CUDA_ATTN_MAXB], v_bs[CUDA_ATTN_MAXB];
  int64_t m_bs[CUDA_ATTN_MAXB], o_bs[CUDA_ATTN_MAXB];
  int64_t q_sl, q_se, k_ss, k_se, v_ss, v_se, m_sl, m_ss, o_sl;
  int32_t nb, mask;
  int32_t causal;
  float scale_log2; /* scale * log2(e) */
} cuda_attn_geom;

/** Fills *g from sdpa extern call c, whose q, k, v and output must have
 * dtype `dt` (a mask: bool or `dt`), a head dim E of 32, 64 or 128 for q,
 * k and v (*hi gets its index 0, 1, 2), rank 2 to 8 and an output with
 * unit last stride; *m gets the mask tensor or NULL. `what` names the
 * kernel family in messages. Errors: INTERNAL for an extern of the wrong
 * arity, UNIMPLEMENTED for another dtype or layout. Reads c only;
 * thread-safe. */
ptc_status cuda_attn_geometry(const cuda_ext_call* c, int32_t dt, const char* what,
                              cuda_attn_geom* g, int* hi, const runtime_tensor** m);

#endif /* PTC_BACKENDS_CUDA_ATTN_H */
