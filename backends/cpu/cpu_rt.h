/* cpu_rt.h - private interfaces between the CPU backend's runtime files:
 * the compiler driver (cpu_compile.c), the on-disk kernel cache
 * (cpu_cache.c), the extern calls (cpu_extern.c) and the run plan
 * (cpu_plan.c). Not used outside backends/cpu. */
#ifndef PTC_BACKENDS_CPU_RT_H
#define PTC_BACKENDS_CPU_RT_H

#include "../../lib/runtime/backend.h"
#include "cpu.h"

/** Alignment of run workspaces (cpu_plan_run.c, cpu_plan.c). */
#define CPU_WS_ALIGN 64

/* ---- compiler (cpu_compile.c) ------------------------------------------------ */
/** The flags every kernel is compiled with (one place for this fact). */
extern const char* const cpu_cc_flags[];
/** The compiler command from PTC_CC (default "cc"), as given. */
const char* cpu_cc_command(void);
/** First line of `<cc> --version` for the compiler in use plus the host CPU
 * model; computed once per compiler per process (thread-safe). Returns NULL
 * when the compiler cannot be run. The string lives until process exit. */
const char* cpu_cc_identity(void);

/* ---- cache (cpu_cache.c) ------------------------------------------------------ */
/** Where one compilation goes: `dir` is the cache folder (<root>/cpu) or a
 * private temporary folder (PTC_CACHE=0, `private_dir` true). */
typedef struct cpu_cache_loc {
  char dir[512];
  bool private_dir;
} cpu_cache_loc;
/** Opens the folder for this batch: creates <root>/cpu (0700) or a private
 * temporary folder. Errors name the folder. */
ptc_status cpu_cache_open(cpu_cache_loc* loc);
/** sha256 key of a kernel source for the compiler identity `ident`. */
ptc_status cpu_cache_key(const char* source, const char* ident, char key[65]);
/** "<dir>/<key><suffix>" into out[cap]; false if it does not fit. */
bool cpu_cache_path(const cpu_cache_loc* loc, const char* key, const char* suffix, char* out,
                    size_t cap);
/** Writes `data` to `path` atomically (unique temp file + rename). */
ptc_status cpu_cache_write_atomic(const char* path, const char* data, size_t len);
/** A unique temporary name beside `path` (same folder) into out[cap]. */
bool cpu_cache_temp_name(const char* path, char* out, size_t cap);
/** Removes a private folder's files for one kernel and the folder when it is
 * empty; no-op for cache entries. */
void cpu_cache_release(const char* so_path);

/* ---- extern calls (cpu_extern.c, cpu_ext_matmul.c, cpu_ext_conv.c) ----------- */
/** One extern call: the node's views (one per ext->in / ext->out entry; an
 * absent optional input has ext->in[k] < 0 and is not looked at). */
typedef struct cpu_ext_call {
  ptc_context* ctx;
  const ir_program* p;
  const ir_extern* ext;
  const runtime_tensor* in;
  const runtime_tensor* out;
  const int64_t* syms;
  size_t n_syms;
  uint64_t seed;
} cpu_ext_call;
/** Runs extern node `n` of `p` on concrete views of its buffers. Reentrant. */
ptc_status cpu_extern_run(ptc_context* ctx, const ir_program* p, const ir_node* n,
                          const runtime_tensor* in, const runtime_tensor* out,
                          const int64_t* sym_values, size_t n_syms, uint64_t seed);
/** "matmul", "conv", "fallback", "custom". */
const char* cpu_extern_kind_name(int32_t kind);
ptc_status cpu_ext_matmul(const cpu_ext_call* c);
ptc_status cpu_ext_conv(const cpu_ext_call* c);

/* element access and iteration over views (any dtype, element offsets) */
double cpu_elem_load(int32_t dtype, const void* base, int64_t off);
int64_t cpu_elem_load_i(int32_t dtype, const void* base, int64_t off);
void cpu_elem_store(int32_t dtype, void* base, int64_t off, double v);
void cpu_elem_store_i(int32_t dtype, void* base, int64_t off, int64_t v);
int64_t cpu_view_numel(const runtime_tensor* t);
int64_t cpu_view_offset(const runtime_tensor* t, const int64_t* idx);
/** Advances a row-major multi-index; false after the last one. */
bool cpu_next_index(int32_t rank, const int64_t* shape, int64_t* idx);
/** Converts src's elements into dst (same shape, any dtypes and strides). */
void cpu_convert(const runtime_tensor* src, const runtime_tensor* dst);

/** A contiguous temporary allocated through the context. */
typedef struct cpu_temp {
  runtime_tensor view;
  size_t bytes;
  ptc_context* ctx;
} cpu_temp;
/** Temporary with t's shape and `dtype` (contents undefined). */
ptc_status cpu_temp_like(ptc_context* ctx, const runtime_tensor* t, int32_t dtype, cpu_temp* out);
/** Temporary holding t's elements converted to `dtype`. */
ptc_status cpu_temp_convert(ptc_context* ctx, const runtime_tensor* t, int32_t dtype,
                            cpu_temp* out);
void cpu_temp_free(cpu_temp* t);

/** ir_activation applied to x (IR_ACT_NONE: x). */
double cpu_activate(int32_t act, double x);
bool cpu_activation_valid(int32_t act);

#endif /* PTC_BACKENDS_CPU_RT_H */
