/* cuda_aot.h - ahead-of-time cubins of the cuda backend's fixed modules
 * (internal; cuda_aot.c): a table of cubins compiled at build time
 * (meson option aot_kernels, generator backends/cuda/aot/cuda_aot_gen.c)
 * that cuda_build_all consults before the disk cache and NVRTC, and the
 * module sources it promises (each module file says which of its sources
 * it would build at run time for its common configurations). The
 * generated kernels of graphs are never in the table. */
#ifndef PTC_BACKENDS_CUDA_AOT_H
#define PTC_BACKENDS_CUDA_AOT_H

#include "cuda_rt.h"

/** One embedded cubin: key = cuda_aot_key(source, arch). */
typedef struct cuda_aot_entry {
  const char* key;              /* 64 hex digits */
  int arch;                     /* as cuda_build_all's `arch` (CUDA_ARCH_SPECIFIC or'ed in) */
  const unsigned char* data;    /* the cubin (an ELF image) */
  size_t size;
  const char* label;            /* what it is, for messages */
  size_t source_len;            /* strlen of the source (a cheap first filter) */
} cuda_aot_entry;

/** The table (backends/cuda/aot: generated, or empty without the option). */
extern const cuda_aot_entry ptc_cuda_aot_table[];
extern const size_t ptc_cuda_aot_count;
/** The CUDA version of the NVRTC that built the table (major * 1000 +
 * minor * 10, as cuDriverGetVersion counts; 0 for an empty table). */
extern const int ptc_cuda_aot_cuda_version;

/** The table key of `source` built for `arch`: sha256 over the source, the
 * architecture, the NVRTC flags (cuda_nvrtc_flags) and
 * PTC_CUDA_CODEGEN_VERSION. Not the NVRTC version: a cubin is machine code
 * that any driver supporting the building CUDA version loads. Errors:
 * RESOURCE_EXHAUSTED. Thread-safe. */
ptc_status cuda_aot_key(const char* source, int arch, char key[65]);

/** The embedded cubin of `source` for `arch`, or NULL: when the table has
 * none, when PTC_CUDA_AOT=0 (read per call; for measurements), or when the
 * driver is older than the CUDA version that built the table (then NVRTC
 * builds it as without the table). Costs a strlen, and one sha256 of the
 * source when an entry has its length; nothing with an empty table. The entry is static data.
 * Thread-safe. */
const cuda_aot_entry* cuda_aot_lookup(const char* source, int arch);

/** One module source a fixed module promises to the table. */
typedef struct cuda_aot_src {
  ptc_strbuf src;   /* the exact text the module builds at run time */
  int arch;         /* as cuda_build_all's `arch` */
  char label[64];
} cuda_aot_src;

/** The most sources cuda_aot_sources returns. */
#define CUDA_AOT_SRC_MAX 64

/** Every promised (source, arch): the wgmma attention defaults (sm_90a:
 * f16/bf16 x head dim 64/128 x causal), the mma.sync attention modules
 * (sm_80 and sm_90: f16/bf16 x head dim 64/128 x both grid shapes, no mask
 * tensor, cp.async loads), the float32 attention modules (sm_80 and
 * sm_90: head dim 64/128, no mask tensor, cp.async tiles) and the support
 * kernels (sm_80, sm_90); each
 * distinct (source, arch) once. Fills out[0..*n); the caller frees them
 * with cuda_aot_sources_free (also on error, which is RESOURCE_EXHAUSTED,
 * or INTERNAL when cap is too small).
 * Thread-safe. */
ptc_status cuda_aot_sources(cuda_aot_src* out, size_t cap, size_t* n);
void cuda_aot_sources_free(cuda_aot_src* srcs, size_t n);

/* The modules' own lists (each appends to out[*n..cap), advancing *n). */
ptc_status cuda_attn_wg_aot_sources(cuda_aot_src* out, size_t cap, size_t* n);
ptc_status cuda_attn_aot_sources(int arch, cuda_aot_src* out, size_t cap, size_t* n);
ptc_status cuda_attn_f32_aot_sources(int arch, cuda_aot_src* out, size_t cap, size_t* n);
ptc_status cuda_support_aot_sources(int arch, cuda_aot_src* out, size_t cap, size_t* n);

#endif /* PTC_BACKENDS_CUDA_AOT_H */
