/* cuda_gemm_tc.h - the generated tensor-core GEMM (cuda_gemm_tc.c, device
 * code in cuda_gemm_tc.cuh): f16 / bf16 through mma.sync m16n8k16 and f32 as
 * TF32 through m16n8k8, f32 accumulation, bias + activation + alpha/beta in
 * its epilogue, any M/N/K, strides and batch. Used by the matmul extern
 * (cuda_ext.c) when cuBLASLt is absent, disabled (PTC_CUDA_BLASLT=0) or
 * cannot take the layout. */
#ifndef PTC_BACKENDS_CUDA_GEMM_TC_H
#define PTC_BACKENDS_CUDA_GEMM_TC_H

#include "cuda_plan.h"

extern const char ptc_cuda_gemm_tc_text[];

/** Kernel variants (cuda_gemm_tc.cuh). */
enum { CUDA_TCG_KK = 0, CUDA_TCG_KN = 1, CUDA_TCG_GEN = 2 };

/** Whether the tensor-core GEMM takes `dtype` on device d: sm_80 or newer,
 * f16 or bf16, or f32 when `tf32` (TF32 allowed). Pure; thread-safe. */
bool cuda_gemm_tc_supports(const cuda_device* d, int32_t dtype, bool tf32);

/** The variant a call would use: CUDA_TCG_KK (A and B with unit K stride,
 * 16-byte aligned rows, bases and batch strides), CUDA_TCG_KN (A unit K
 * stride, B unit N stride, aligned), else CUDA_TCG_GEN. Pure. */
int cuda_gemm_tc_variant(const cuda_mm_args* g, int32_t dtype, cu_deviceptr pa, cu_deviceptr pb);

/** C = act(alpha * A @ B + beta * bias) over `count` batch entries on
 * `stream` (g: cuda_ext.c's GEMM arguments; pbias 0 = none). The module for
 * the dtype is built through the kernel cache and loaded on first use
 * (thread-safe; the primary context must be current). *done false (PTC_OK)
 * when it does not take the call: dtype or device unsupported
 * (cuda_gemm_tc_supports), more than 65535 row tiles or batch entries.
 * Errors: the module build or load, the launch. */
ptc_status cuda_gemm_tc(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                        const cuda_mm_args* g, int64_t count, int32_t dtype, bool tf32,
                        cu_deviceptr pa, cu_deviceptr pb, cu_deviceptr pbias, cu_deviceptr pc,
                        bool* done);

#endif /* PTC_BACKENDS_CUDA_GEMM_TC_H */
