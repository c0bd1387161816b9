/* cuda_rt.h - the cuda backend's runtime services (internal): the driver,
 * NVRTC and cuBLASLt libraries opened at run time (cuda_loader.c), the
 * device and its context (cuda_device.c), the caching device allocator
 * (cuda_alloc.c) and status helpers. Nothing here links against CUDA: a
 * build on a machine without the toolkit or a GPU works, and the backend
 * then reports why it is unavailable.
 *
 * Thread-safety: the library tables and the device record are built once
 * (pthread_once) and immutable afterwards; the allocator is locked.
 */
#ifndef PTC_BACKENDS_CUDA_RT_H
#define PTC_BACKENDS_CUDA_RT_H

#include "../../lib/runtime/backend.h"
#include "cuda_api.h"

/* ---- libraries (cuda_loader.c) --------------------------------------------- */
typedef struct cuda_libs {
  bool have_cu;        /* libcuda.so.1 opened and every entry found */
  bool have_nvrtc;     /* NVRTC opened and every entry found */
  bool have_lt;        /* cuBLASLt opened and every entry found */
  cu_api cu;
  nvrtc_api nvrtc;
  cublaslt_api lt;
  int nvrtc_major, nvrtc_minor;
  char nvrtc_path[256];   /* the NVRTC library that was opened */
  char cu_error[256];     /* why have_cu is false */
  char nvrtc_error[256];  /* why have_nvrtc is false */
} cuda_libs;

/** The libraries, opened on first use (environment: PTC_NVRTC_PATH names an
 * NVRTC library to try first; PTC_CUDA_DISABLE=1 pretends libcuda is
 * absent, for tests; PTC_CUBLASLT=0 leaves cuBLASLt unused). Never NULL. */
const cuda_libs* cuda_libs_get(void);

/* ---- device (cuda_device.c) ---------------------------------------------------- */
typedef struct cuda_device {
  cu_device dev;
  cu_context ctx;      /* the device's primary context (retained for the process) */
  int cc_major, cc_minor;
  int sm_count;
  int max_smem_optin;  /* bytes of shared memory a block may opt into */
  bool pdl;            /* generated kernels launch with programmatic dependent
                        * launch (sm_90+, cuLaunchKernelEx, PTC_CUDA_PDL not 0) */
  bool pdl_capture;    /* ... also into streams being captured (driver 12.3+) */
  char name[128];
} cuda_device;

/** Device 0 with its primary context, initialised once; NULL when there is
 * none (cuda_unavailable_reason says why). */
const cuda_device* cuda_device_get(void);
/** NULL when the backend can run here, else a static reason such as
 * "libcuda.so.1 not found: ..." or "no CUDA device". */
const char* cuda_unavailable_reason(void);
/** Makes the device's primary context current on the calling thread (every
 * module, stream and allocation of the backend belongs to it; a caller's
 * stream must belong to it too, as PyTorch's do) and stores the context
 * that was current in *prev, for cuda_ctx_leave to restore. */
ptc_status cuda_ctx_enter(const cuda_device* d, cu_context* prev);
void cuda_ctx_leave(const cuda_device* d, cu_context prev);

/** Whether generated kernels should use programmatic dependent launch: a
 * device of compute capability 9 or more (griddepcontrol is sm_90 PTX), a
 * driver with cuLaunchKernelEx, and env (PTC_CUDA_PDL's value, may be
 * NULL) not "0". Pure; thread-safe. */
bool cuda_pdl_wanted(int cc_major, bool have_launch_ex, const char* env);
/** Whether a driver of version v (cuDriverGetVersion: 1000 * major + 10 *
 * minor) records such launches into CUDA graphs by stream capture (12.3+);
 * older ones get plain launches while a stream is captured. Pure. */
bool cuda_pdl_capture_ok(int driver_version);
/** Launches kernel fn, whose every entry starts with a ptc_pdl_enter
 * variant (cuda_prelude.cuh: generated kernels, the attention kernels), as
 * a gx x gy grid of bx x by blocks with shmem bytes of dynamic shared
 * memory on stream s with params. On a device with d->pdl set it goes
 * through cuLaunchKernelEx with programmatic stream serialization, so it
 * may start before the previous kernel on the stream has fully ended (its
 * first statement waits for that kernel's end); else cuLaunchKernel, also
 * while s is being captured on a driver older than 12.3, and as a retry
 * when the driver answers the attribute with CUDA_ERROR_NOT_SUPPORTED. A
 * kernel without that wait must never come here. d may be NULL (plain
 * launch). The driver's result; thread-safe as the Driver API. */
cu_result cuda_launch_pdl(const cuda_device* d, cu_function fn, unsigned gx, unsigned gy,
                          unsigned bx, unsigned by, unsigned shmem, cu_stream s, void** params);

/** A status for a failed driver call: "<what>: CUDA_ERROR_X (text)";
 * OUT_OF_MEMORY maps to RESOURCE_EXHAUSTED, others to INTERNAL. */
ptc_status cuda_error(cu_result r, const char* what);
#define CUDA_TRY(call, what)                       \
  do {                                             \
    cu_result cuda_try_r_ = (call);                \
    if (cuda_try_r_ != CU_SUCCESS) return cuda_error(cuda_try_r_, (what)); \
  } while (0)

/* ---- caching allocator (cuda_alloc.c) ------------------------------------------ */
/** Device memory of at least `bytes` (256-byte aligned) for use on `stream`:
 * a cached block freed on the same stream when one fits (block sizes are
 * rounded to classes, so a hit wastes at most 1/8), else cuMemAlloc; on
 * out of memory the cache is emptied and the allocation retried. bytes = 0
 * gives *out = 0. Errors: RESOURCE_EXHAUSTED. Thread-safe. */
ptc_status cuda_alloc(size_t bytes, cu_stream stream, cu_deviceptr* out);
/** Returns a block from cuda_alloc to the cache (work queued on its stream
 * before the free stays ordered before any reuse on that stream). Accepts 0.
 * Thread-safe. */
void cuda_free(cu_deviceptr p);
/** hold = true: the cached blocks of stream `s` are kept when the cache is
 * emptied (a CUDA graph captured on `s` still uses the blocks freed there
 * during its capture). hold = false: ends that and releases the stream's
 * cached blocks (call it before destroying the stream, after the graph).
 * Errors: RESOURCE_EXHAUSTED (not held). Thread-safe. */
ptc_status cuda_alloc_hold_stream(cu_stream s, bool hold);
/** Releases every cached block of streams not held to the driver; returns
 * the bytes released. Thread-safe. */
size_t cuda_alloc_empty_cache(void);
/** Bytes held by the allocator: in use and cached. */
void cuda_alloc_stats(size_t* in_use, size_t* cached);

#endif /* PTC_BACKENDS_CUDA_RT_H */
