/* cuda_nvrtc.h - NVRTC compilation of generated sources (cuda_nvrtc.c) and
 * the compile step of the cuda backend: many kernels at once, in threads,
 * through the on-disk cache of lib/runtime/kcache.h (cuda_compile.c). */
#ifndef PTC_BACKENDS_CUDA_NVRTC_H
#define PTC_BACKENDS_CUDA_NVRTC_H

#include "cuda_rt.h"

/** A compiled cubin (malloc'ed bytes). */
typedef struct cuda_cubin {
  char* data;
  size_t size;
} cuda_cubin;

/** The NVRTC options every kernel gets besides the architecture. */
extern const char* const cuda_nvrtc_flags[];
/** Or'ed into an `arch` argument of the functions below: compile for the
 * architecture-specific target sm_<arch>a (e.g. sm_90a, which wgmma and
 * setmaxnreg need); such a cubin loads only on exactly that architecture. */
#define CUDA_ARCH_SPECIFIC 0x10000
/** "--gpu-architecture=sm_<arch>" (or "sm_<arch>a" with CUDA_ARCH_SPECIFIC)
 * into out. */
void cuda_arch_option(int arch, char* out, size_t cap);

/** Compiles `source` (file name `<name>.cu` in messages) for sm_<arch>.
 * Errors: UNAVAILABLE (no NVRTC), INTERNAL with the program log in the
 * detail "compiler_log" when NVRTC rejects the source, RESOURCE_EXHAUSTED.
 * Thread-safe (NVRTC programs are independent). */
ptc_status cuda_nvrtc_compile(const char* source, const char* name, int arch, cuda_cubin* out);
/** The same with one extra NVRTC option (NULL = none), e.g.
 * "--Ofast-compile=max" for compile-only checks. */
ptc_status cuda_nvrtc_compile_ex(const char* source, const char* name, int arch,
                                 const char* extra, cuda_cubin* out);
void cuda_cubin_free(cuda_cubin* c);

/** One kernel source to build. */
typedef struct cuda_build_job {
  const char* source;
  const char* name;       /* kernel name, for messages */
  cuda_cubin cubin;       /* result */
  bool cache_hit;
  char source_path[600];  /* the source kept beside the cached cubin ("" when disabled) */
  char key[65];           /* the cubin's cache key (set even when the cache is disabled) */
} cuda_build_job;

/** Builds every job for sm_<arch>: a source the table of ahead-of-time
 * cubins holds (cuda_aot.h; the fixed modules, with -Daot_kernels) takes
 * its embedded cubin (cache_hit true, nothing written to disk; no NVRTC
 * needed), the others go through the cache (key: sha256 of the
 * source, the NVRTC version, the options, the architecture and
 * PTC_CUDA_CODEGEN_VERSION), compiling the misses in parallel threads (one
 * per core, at most 16). A cached cubin that cannot be read is rebuilt. On
 * error every job's cubin is freed and the status names the kernel, with
 * the program log ("compiler_log") and the source path ("source_path") in
 * the detail. Environment: the cache variables of kcache.h. */
ptc_status cuda_build_all(ptc_context* ctx, cuda_build_job* jobs, size_t n, int arch);

/** Builds one module source for sm_<arch> through the cache
 * (cuda_build_all) and loads it into the current context: the support,
 * tensor-core GEMM and attention modules. Takes ownership of `src` (freed,
 * also when it ran out of memory while being written). `name` is for
 * messages, `what` says what failed to load ("loading <what>"). */
ptc_status cuda_build_module(ptc_context* ctx, int arch, ptc_strbuf* src, const char* name,
                             const char* what, cu_module* out);

/** The most modules cuda_build_modules builds at once. */
#define CUDA_BUILD_MODULES_MAX 16
/** Builds n module sources in parallel through the cache (cuda_build_all)
 * and loads out[i] from srcs[i] into the current context (the variant
 * modules of the convolution kernels). Takes ownership of every srcs[i]
 * (all freed, also on error). On error no module stays loaded (out[] all
 * NULL); a load failure says "loading <what>". */
ptc_status cuda_build_modules(ptc_context* ctx, int arch, ptc_strbuf* srcs, size_t n,
                              const char* name, const char* what, cu_module* out);

#endif /* PTC_BACKENDS_CUDA_NVRTC_H */
