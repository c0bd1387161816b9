/* cuda_conv_tma.h - the Hopper TF32 convolution of channels-last
 * activations by TMA halo-tile loads and wgmma (internal; kernel
 * cuda_conv_tma.cuh; cuda_ext_conv.c routes the channels-last TF32
 * convolutions it takes here on sm_90). tests/cuda/test_cuda_conv_tma.c
 * checks that it compiles (CI) and, on an H100, compares it with a float64
 * host convolution. docs/cuda.md ("A Hopper convolution") says why. */
#ifndef PTC_BACKENDS_CUDA_CONV_TMA_H
#define PTC_BACKENDS_CUDA_CONV_TMA_H

#include "cuda_rt.h"

#include <stdbool.h>
#include <stdint.h>

/** One convolution: input [n][h][w][c] and output [n][oh][ow][oc], both
 * dense channels-last; weights [oc][c][kh][kw]; bias [oc] or none; all of
 * element type dt (0 f32, run as TF32; 1 bf16; 2 f16); dilation 1, one
 * group, padding ph / pw, strides sh / sw (0 reads as 1); relu. */
typedef struct cuda_conv_tma_desc {
  int n, h, w, c, oc, kh, kw, ph, pw;
  bool relu;
  int sh, sw;
  int dt;
} cuda_conv_tma_desc;

/** Whether the backend runs the channels-last convolutions the kernel takes
 * (f32 as TF32 where allowed, bf16, f16) on it: d is an sm_90 device (not
 * NULL), the driver has cuTensorMapEncodeTiled, and PTC_CUDA_CONV_TMA is
 * not "0" (read per call; H100, resnet18 b32 GPU time per call with layers
 * 1-3 on it: fp32 1.452 -> 1.057 ms, bf16 0.925 -> 0.701). Thread-safe. */
bool cuda_conv_tma_enabled(const cuda_device* d);

/** NULL when the kernel takes d on a device of compute capability
 * cc_major.cc_minor, else why not (static text): sm_90 only, c a multiple
 * of 32 (f32) or 64 (16-bit types), oc of 64, output planes of at least
 * one pixel, sizes below 2^31 elements. Pure; thread-safe. */
const char* cuda_conv_tma_refusal(int cc_major, int cc_minor, const cuda_conv_tma_desc* d);

/** Bytes of device scratch cuda_conv_tma_run needs for the prepared
 * weights (oc * c * kh * kw elements). Pure. */
size_t cuda_conv_tma_scratch(const cuda_conv_tma_desc* d);

/** Runs d on `stream` (the current context's; NULL: the legacy stream):
 * unless `prepared`, prepares the weights w into `scratch`
 * (cuda_conv_tma_scratch bytes, 16-byte aligned; the caller owns all
 * buffers); then the convolution of x into out (bias 0: none) with the
 * prepared weights in scratch (w unused when prepared: a kept copy). x, out 16-byte aligned. Builds the module on
 * first use (process-wide, through the kernel cache, for the device's
 * sm_90a). Errors: UNIMPLEMENTED with cuda_conv_tma_refusal's text, or when
 * the driver lacks cuTensorMapEncodeTiled or refuses a map; INTERNAL /
 * NVRTC errors from building or launching. Thread-safe. */
ptc_status cuda_conv_tma_run(ptc_context* ctx, const cuda_device* dev, cu_stream stream,
                             const cuda_conv_tma_desc* d, cu_deviceptr x, cu_deviceptr w,
                             cu_deviceptr bias, cu_deviceptr out, cu_deviceptr scratch, bool prepared);

/** Compiles the kernel's module for sm_90a in four forms (f32 with
 * register and shared-memory rounding, bf16, f16; no device needed,
 * nothing loaded): the compile-only check of
 * tests/cuda. Thread-safe. */
ptc_status cuda_conv_tma_check_compile(void);

#endif /* PTC_BACKENDS_CUDA_CONV_TMA_H */
