/* cuda_ext_internal.h - what cuda_ext.c (matmul, host round trip, dispatch)
 * and cuda_ext_conv.c (convolution and pooling on the device) share: the
 * GEMM launcher and the in-place epilogue pass of cuda_ext.c, the device
 * convolution / pooling steps of cuda_ext_conv.c. Internal to the cuda
 * backend; all functions are thread-safe (they touch no shared state but
 * the stream they are given).
 */
#ifndef PTC_CUDA_EXT_INTERNAL_H
#define PTC_CUDA_EXT_INTERNAL_H

#include "cuda_plan.h"

/** Index of dtype in the support kernels' per-type tables (f32 0, f64 1,
 * f16 2, bf16 3), -1 for other types. */
int cuda_ext_gemm_index(int32_t dt);

/** True when every dimension of t of size > 1 has the row-major contiguous
 * stride. */
bool cuda_ext_view_contiguous(const runtime_tensor* t);

/** In-place epilogue over the n contiguous elements at pc on c's stream:
 * + beta * bias (bias[((i / inner) % nbias) * bias_st]) when pd, then the
 * activation act. gi: cuda_ext_gemm_index of the type. Errors: a failed
 * launch. */
ptc_status cuda_ext_run_epilogue(const cuda_ext_call* c, int gi, cu_deviceptr pc, int64_t n,
                                 cu_deviceptr pd, int64_t inner, int64_t nbias, int64_t bias_st,
                                 double beta, int32_t act);

/** One (batched: count entries) GEMM described by g on c's stream: cuBLASLt
 * when it takes the layout, else the tensor-core GEMM, else the support
 * GEMM; f32 uses TF32 when c->tf32. g->act may be changed and restored.
 * c_contiguous: C is one contiguous block (an activation cuBLASLt has no
 * epilogue for may then run as a pass after it). Errors: launch failures,
 * UNIMPLEMENTED for sizes no path takes. */
ptc_status cuda_ext_mm_launch(const cuda_ext_call* c, cuda_mm_args* g, int64_t count, int32_t dtype,
                              cu_deviceptr pa, cu_deviceptr pb, cu_deviceptr pd, cu_deviceptr pc,
                              bool c_contiguous);

/** IR_EXT_CONV on the device (cuda_ext_conv.c): implicit GEMM or im2col +
 * GEMMs. *done false (and PTC_OK) when the layout is one the device paths
 * do not take: the caller runs the node on the host. Errors: launch or
 * allocation failures. */
ptc_status cuda_ext_conv_device(const cuda_ext_call* c, bool* done);

/** max_pool2d (mode 0), avg_pool2d (1), adaptive_avg_pool2d (2) on the
 * device (cuda_ext_conv.c); *done false when it does not take the layout. */
ptc_status cuda_ext_pool_device(const cuda_ext_call* c, int mode, bool* done);

#endif
