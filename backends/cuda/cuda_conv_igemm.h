/* cuda_conv_igemm.h - implicit-GEMM convolution on tensor cores (internal):
 * the host side (cuda_conv_igemm.c) of the kernels in cuda_conv_igemm.cuh.
 * conv1d/conv2d of NCHW tensors (or channels-last ones: input read by
 * cp.async along C, output [N][OH][OW][OC]), f16 / bf16 and f32 as TF32, sm_80+, the
 * B operand gathered from the input inside the kernel (no im2col matrix),
 * bias + activation in its epilogue, split K for grids too small to fill
 * the device. Used by the convolution extern (cuda_ext.c). */
#ifndef PTC_BACKENDS_CUDA_CONV_IGEMM_H
#define PTC_BACKENDS_CUDA_CONV_IGEMM_H

#include "cuda_conv_wcache.h"
#include "cuda_plan.h"

extern const char ptc_cuda_conv_igemm_text[];
/** cuda_conv_common.cuh: element kinds and activations of both convolution
 * modules (appended before cuda_conv_igemm.cuh / cuda_conv_wg.cuh). */
extern const char ptc_cuda_conv_common_text[];

/** One convolution, 2-D (a 1-D one as H = 1): input x [N, C, H, W] (any
 * strides, elements), weights [OC, C/groups, KH, KW] (ws: strides; the
 * inner three dims must be contiguous, rows any stride), output [N, OC,
 * OH, OW] contiguous; bias (optional) one value per output channel. */
typedef struct cuda_conv_desc {
  int32_t dtype;  /* PTC_F16, PTC_BF16, or PTC_F32 (run as TF32) */
  int32_t act;    /* ir_activation applied last */
  int64_t n, c, h, w;
  int64_t oc, oh, ow;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int64_t xs[4];  /* input strides n, c, h, w */
  int64_t ws[4];  /* weight strides oc, c, kh, kw */
  int64_t bias_st;
  double beta;    /* the bias is scaled by beta */
  /* optional (NULL: the weights are copied on every call when the kernel
   * needs them copied): the plan's table where the copy of immutable
   * weights (a plan constant) is kept across calls, and the slot */
  cuda_wcache* wcache;
  int64_t wcache_slot;
  /* the output channels-last, [N][OH][OW][OC] (else NCHW contiguous) */
  bool out_nhwc;
} cuda_conv_desc;

/** The launch shape chosen for a convolution: block rows (64 or 128 output
 * channels), K splits, dynamic shared memory and grid. */
typedef struct cuda_conv_shape {
  bool tap;          /* tap-major K over transformed weights (else channel-major) */
  int bm;
  int threads;       /* per block: 256 (8 warps), or 128 (4 warps; BM 64, PTC_CUDA_CONV_W4) */
  int splits;
  int64_t kps;       /* GEMM K per split */
  int64_t smem;      /* dynamic shared memory per block, bytes */
  int64_t gx, gy, gz;
} cuda_conv_shape;

/** Why the kernel cannot take d on a device of compute capability
 * cc_major.x (NULL when it can): dtype (f16/bf16; f32 only when `tf32`),
 * sm_80+, sizes that overflow its 32-bit index math or its 16-bit packed
 * window offsets. Pure; thread-safe. */
const char* cuda_conv_igemm_refusal(int cc_major, const cuda_conv_desc* d, bool tf32);

/** The launch shape for d on `sm_count` SMs whose blocks may opt into
 * `smem_optin` bytes of shared memory (d accepted by
 * cuda_conv_igemm_refusal). K order: tap-major (k = (kh, kw, c): a thread
 * gathers consecutive channels of one tap with one bounds test; weights
 * copied to [OC][KH*KW][channels padded to the K step]) when a group has at
 * least half a K step of channels, else channel-major (k = (c, kh, kw)
 * through a per-block offset table, weights as they are: the 3-channel
 * stem). BM 64 when a group has <= 64 output channels, else 128. K splits
 * from a small cost model (K steps per split x blocks per SM + the partial
 * sums written and read again), at most 16, more when a channel-major
 * block's K range would not fit its shared-memory table. Environment:
 * PTC_CUDA_CONV_SPLIT=N forces N splits (clamped to the K steps),
 * PTC_CUDA_CONV_TAP=0/1 forces the K order, PTC_CUDA_CONV_BM=64/128 the
 * block rows. Threads: 128 (4-warp blocks) for BM 64 when tap-major or
 * TF32, else 256; PTC_CUDA_CONV_W4=0/1 forces 256/128 for BM 64. Pure
 * apart from reading the environment; thread-safe. */
void cuda_conv_igemm_shape(const cuda_conv_desc* d, int sm_count, int64_t smem_optin,
                           cuda_conv_shape* out);

/** The blocks per SM the 4-warp kernel of dtype and K order (tap-major or
 * channel-major) is built for (its launch bounds; 3 or 4):
 * PTC_CUDA_CONV_OCC unset or 1: 4 for the channel-major f32 (TF32) one,
 * else 3; 2: 4 for every one; 0: 3. Reads the environment. */
int cuda_conv_igemm_w4_blocks(int32_t dtype, bool tap);

/** Whether the tap-major kernels read d's input channels-last by cp.async
 * (16 bytes along C straight into shared memory; args vio bit 1): unit
 * channel stride, the group's channels and the pixel strides multiples of
 * 16 bytes, x 16-byte aligned, and PTC_CUDA_CONV_NHWC_IN not 0 (read per
 * call). Pure apart from the environment. */
bool cuda_conv_igemm_vec_input(const cuda_conv_desc* d, cu_deviceptr x);

/** Runs the convolution on `stream`: out = act(conv(x, w) + beta * bias)
 * (pbias 0 = none). Tap-major shapes first copy the weights into their
 * layout, channel-major ones when the weight rows are not 16-byte aligned
 * or not contiguous, f32 ones always (the copy rounds them to TF32 once,
 * so the MMA loop converts only the gathered input); with desc->wcache the
 * first such copy is kept there (cuda_wcache_offer: the stream is waited
 * for once) and later calls with the same weights and layout read it; split K adds an f32 workspace of partial sums and
 * per-tile counters (zeroed by a memset; the last block of a tile adds the
 * partials up). The modules of the dtype (one per kernel variant, built
 * in parallel through the kernel cache) are loaded on first use
 * (thread-safe; the primary context must be current). *done false (PTC_OK)
 * when it does not take the call (cuda_conv_igemm_refusal, a launch shape
 * beyond the grid or shared-memory limits) or when the modules failed to
 * build or load (logged once as a warning; not tried again): the caller
 * then runs the convolution another way. Errors: workspace allocation
 * (RESOURCE_EXHAUSTED), the launches. */
ptc_status cuda_conv_igemm(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                           const cuda_conv_desc* desc, bool tf32, cu_deviceptr x, cu_deviceptr w,
                           cu_deviceptr pbias, cu_deviceptr out, bool* done);

/** The wide im2col of the small-plane convolutions (cuda_ext_conv.c):
 * nimg images of x [C, H, W] (strides xs: n, c, h, w; elements) into
 * col[r][j], r = (c * KH + kh) * KW + kw, j = img * OH*OW + oy * OW + ox
 * (row length nimg * OH*OW). */
typedef struct cuda_conv_i2c {
  int64_t nimg, c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
  int64_t xs[4];
} cuda_conv_i2c;

/** Writes the wide im2col of `a` into col on `stream` with the module's
 * kernel (a block row per (channel, window row), a thread's 16 bytes of
 * columns decomposed once for every window column; for a channels-last
 * input, unit channel stride, 32 x 32 tiles transposed in shared memory
 * per window position, unless PTC_CUDA_CONV_NHWC_IN=0), dtype f16, bf16 or f32
 * (copied as it is). *done false (PTC_OK) when it does not take the call:
 * PTC_CUDA_CONV_I2C=0, below sm_80, the row length not a multiple of 16
 * bytes, col not 16-byte aligned, C * KH above 65535, negative strides or
 * offsets beyond its 32-bit index math, or the module unavailable. Errors:
 * the launch. */
ptc_status cuda_conv_igemm_im2col(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                                  int32_t dtype, const cuda_conv_i2c* a, cu_deviceptr x,
                                  cu_deviceptr col, bool* done);

/** A max pool of channels-last tensors: x [N][H][W][C] -> out [N][OH][OW][C],
 * both dense. */
typedef struct cuda_conv_mp {
  int64_t n, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} cuda_conv_mp;

/** Runs the max pool on `stream` with the module's kernel (a thread per 16
 * bytes of channels of one output pixel; NaN propagates). *done false
 * (PTC_OK) when it does not take the call: below sm_80, channels not whole
 * 16-byte vectors, x or out not 16-byte aligned, sizes beyond its 32-bit
 * index math, or the module unavailable. Errors: the launch. */
ptc_status cuda_conv_igemm_maxpool(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                                   int32_t dtype, const cuda_conv_mp* a, cu_deviceptr x,
                                   cu_deviceptr out, bool* done);

/** Compiles the module (every type and variant) for sm_<arch> with NVRTC
 * (--Ofast-compile=max), nothing loaded and no device needed: the
 * compile-only check of tests/cuda.
 * Errors: UNAVAILABLE without NVRTC, INTERNAL with the log
 * ("compiler_log") when NVRTC rejects it. */
ptc_status cuda_conv_igemm_check_compile(int arch);

#endif /* PTC_BACKENDS_CUDA_CONV_IGEMM_H */
