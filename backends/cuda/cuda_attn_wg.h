/* cuda_attn_wg.h - the Hopper (sm_90a, wgmma) attention forward path of the
 * cuda backend (internal): which sdpa calls it takes and the launch
 * (cuda_attn_wg.c, kernel cuda_attn_wg.cuh). cuda_attn_run asks it first and
 * falls back to the mma.sync kernel of cuda_attn.cuh. */
#ifndef PTC_BACKENDS_CUDA_ATTN_WG_H
#define PTC_BACKENDS_CUDA_ATTN_WG_H

#include "cuda_attn.h"

/** True if the wgmma kernel runs this call: the device is sm_90 (the
 * module is built for sm_90a), f16/bf16 with head dim index hi 1 or 2 (64,
 * 128), no mask tensor (is_causal allowed), `vec` (q/k/v unit last stride,
 * 16-byte aligned rows: cp.async), PTC_CUDA_ATTN_WG is not "0"
 * (PTC_CUDA_ATTN_WG=0 keeps every call on the mma.sync kernel), and the
 * call has two row tiles per SM at the default shape (smaller calls stay
 * on the mma.sync kernel, measured as fast there) unless
 * PTC_CUDA_ATTN_WG_CFG names a shape (then every call it fits). Reads the
 * environment; thread-safe. */
bool cuda_attn_wg_takes(const cuda_device* d, const cuda_attn_geom* g, int hi, bool vec);

/** The kernel shape the wgmma kernel would run this call with: false if it
 * does not take the call (cuda_attn_wg_takes), else true with shape[] =
 * {consumer warpgroups, key tile rows, k/v buffers, ex} of
 * PTC_CUDA_ATTN_WG_CFG or the default (for tests: the default's rules need
 * only the device's compute capability, SM count and shared memory, so a
 * test may pass a made-up device). Reads the environment; thread-safe. */
bool cuda_attn_wg_shape(const cuda_device* d, const cuda_attn_geom* g, int hi, bool vec, int shape[4]);

/** Runs one sdpa call the wgmma kernel takes (cuda_attn_wg_takes true) on
 * c->stream: q, k, v, o device pointers of dtype bf16 (bf) or f16, geometry
 * g. Builds and loads the module the call needs on first use (one per
 * dtype, head dim, causal flag and kernel shape; process-wide, through the
 * kernel cache; the primary context must be current). The kernel shape is
 * the default (per head dim and causal flag) or
 * PTC_CUDA_ATTN_WG_CFG="nwg,bn,ns[,ex]" (one of the shapes of
 * cuda_attn_wg.c's table, read per call). Errors: INTERNAL / NVRTC errors
 * from building or launching, UNIMPLEMENTED for too many keys.
 * Thread-safe. */
ptc_status cuda_attn_wg_run(const cuda_ext_call* c, const cuda_attn_geom* g, bool bf, int hi,
                            cu_deviceptr q, cu_deviceptr k, cu_deviceptr v, cu_deviceptr o);

/** Compiles the wgmma attention kernels for sm_<arch>a (no device needed,
 * nothing loaded): one program holding every kernel shape of the table
 * and the default of each head dim and causal flag (both dtypes). The compile-only check of
 * tests/cuda. Thread-safe. */
ptc_status cuda_attn_wg_check_compile(int arch);

#endif /* PTC_BACKENDS_CUDA_ATTN_WG_H */
