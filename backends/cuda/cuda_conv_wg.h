/* cuda_conv_wg.h - convolution on Hopper's warpgroup MMA (internal): the
 * host side (cuda_conv_wg.c) of the wgmma kernels in cuda_conv_wg.cuh.
 * sm_90 (compiled for sm_90a), NCHW, one group, no dilation, f16 / bf16
 * and f32 as TF32; the input copied to NHWC once, every tap's A tile a
 * shifted view of one shared-memory window of it per K stage (no im2col
 * matrix, no per-tap gather);
 * weights rearranged per call into wgmma's shared-memory image; bias +
 * activation in the epilogue. Used by the convolution extern
 * (cuda_ext_conv.c) before the mma.sync implicit GEMM (cuda_conv_igemm.c),
 * which stays the fallback for every shape and device this path refuses. */
#ifndef PTC_BACKENDS_CUDA_CONV_WG_H
#define PTC_BACKENDS_CUDA_CONV_WG_H

#include "cuda_conv_igemm.h"

extern const char ptc_cuda_conv_wg_text[];

/** The launch shape of one convolution on the wgmma kernels. */
typedef struct cuda_conv_wg_plan {
  int cfg;            /* tile shape: 0 BM 128 x BN 64, 1 128 x 128, 2 64 x 128 */
  int bm, bn;
  int64_t wq;         /* flat row width: OW + (KW-1)/SW */
  int64_t phases;     /* stride phases the window holds: min(KH,SH) * min(KW,SW) */
  int64_t wl, wlp;    /* window entries per phase and K column (wlp: rounded up to 8) */
  int64_t units;      /* 16-byte window units per stage */
  int64_t mtiles, ntiles, nk;
  int64_t kch;        /* K chunks (one wgmma K step each) per stage */
  int64_t tab_off;    /* shared-memory offset of the tap and row tables */
  int64_t win_bytes, b_bytes, stage_bytes, smem;
  int64_t blocks;     /* tiles: (image, M tile, N tile) */
  int occ;            /* blocks per SM the model assumes (shared memory, registers) */
  double cost;        /* the model's estimate (relative) */
} cuda_conv_wg_plan;

/** Why the wgmma kernels cannot take d on a device of compute capability
 * cc_major.cc_minor (NULL when they can): exactly sm_90 (the sm_90a cubin
 * loads nowhere else), dtype (f16/bf16; f32 only when `tf32`), one group,
 * no dilation, at most 64 taps, at least half a K step of channels (8 for
 * f16/bf16, 4 for TF32: the 3-channel stem stays on the implicit GEMM), non-negative
 * input strides and in-image offsets within 32 bits. Pure; thread-safe. */
const char* cuda_conv_wg_refusal(int cc_major, int cc_minor, const cuda_conv_desc* d, bool tf32);

/** The launch shape of d (accepted by cuda_conv_wg_refusal) on `sm_count`
 * SMs whose blocks may opt into `smem_optin` bytes of shared memory: per
 * tile shape the fewest K chunks per stage giving a stage at least 8 MMAs
 * (else the most that fit), then the tile shape of least modelled time
 * (waves x blocks per SM x padded block work, the 64x64 wgmmas 1.3x) among
 * those whose window and four stages fit;
 * `force` 0..2 takes that tile shape only (-1: choose). false when none
 * fits. Pure; thread-safe. */
bool cuda_conv_wg_shape(const cuda_conv_desc* d, int sm_count, int64_t smem_optin, int force,
                        cuda_conv_wg_plan* out);

/** Whether the convolution extern tries the wgmma kernels: 0 no
 * (PTC_CUDA_CONV_WG=0), 1 first, for every convolution they take (=1), 2
 * only for those its policy gives the implicit GEMM (=2: small planes stay
 * on the im2col GEMMs), 1 also for =3 (first, but cuda_conv_wg then takes
 * only the shapes cuda_conv_wg_selected picks); unset: the default mode
 * (CWG_DEFAULT in cuda_conv_wg.c). Read per call (tests and benchmarks
 * switch it). */
int cuda_conv_wg_enabled(void);

/** The shapes the selective mode (PTC_CUDA_CONV_WG=3) gives the wgmma
 * kernels, where they beat the implicit GEMM and the im2col GEMMs on an
 * H100 (test_cuda_conv --bench): stride 1, windows above 1x1, output
 * planes of 100 pixels up to PTC_CUDA_CONV_WG_MAXPLANE (default 1024; read
 * per call). Thread-safe; no device needed. */
bool cuda_conv_wg_selected(const cuda_conv_desc* d);

/** Runs the convolution on `stream`: out = act(conv(x, w) + beta * bias)
 * (pbias 0 = none), after copying the input to NHWC and the weights into
 * the kernels' layout (workspaces, freed on the stream). PTC_CUDA_CONV_WG_CFG=0/1/2 forces the
 * tile shape (read per call). The modules of the dtype (one per tile
 * shape, built in parallel through the kernel cache for sm_90a) are loaded
 * on first use (thread-safe; the primary context must be current). *done
 * false (PTC_OK) when it does not take the call (cuda_conv_wg_refusal, no
 * tile shape fits, in the selective mode a shape cuda_conv_wg_selected
 * does not pick) or when the modules failed to build or load (logged
 * once as a warning; not tried again). Errors: workspace allocation, the
 * launches. */
ptc_status cuda_conv_wg(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                        const cuda_conv_desc* desc, bool tf32, cu_deviceptr x, cu_deviceptr w,
                        cu_deviceptr pbias, cu_deviceptr out, bool* done);

/** Compiles the module (every type and tile shape) for sm_90a with NVRTC
 * (--Ofast-compile=max unless `full`), nothing loaded and no device
 * needed: the compile-only check of tests/cuda. Errors: UNAVAILABLE
 * without NVRTC, INTERNAL with the log ("compiler_log") when NVRTC rejects
 * it. */
ptc_status cuda_conv_wg_check_compile(bool full);

#endif /* PTC_BACKENDS_CUDA_CONV_WG_H */
