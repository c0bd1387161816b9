/* cpu.h - the CPU backend's internal interfaces: C code generation from
 * scheduled kernels, the compiler driver and on-disk kernel cache, the
 * extern kernels (GEMM, convolution, ref fallback, custom ops), and the run
 * plan. The backend vtable itself is in cpu_backend.c.
 *
 * Generated kernels share one entry signature (PTC_CPU_KERNEL_ABI 1):
 *     void <symbol>(void* const* bufs, const int64_t* syms);
 * `bufs` are the kernel's buffers in the order of cpu_kernel_src.bufs,
 * `syms` the values of the size symbols (program env symbols
 * [0, n_size_syms)) for this run. Kernels parallelise with OpenMP inside.
 */
#ifndef PTC_BACKENDS_CPU_H
#define PTC_BACKENDS_CPU_H

#include "../../lib/ir/ir.h"
#include "../../lib/sched/sched.h"

#define PTC_CPU_KERNEL_ABI 1
#define PTC_CPU_CODEGEN_VERSION "cpu-codegen-1"

typedef void (*cpu_kernel_fn)(void* const* bufs, const int64_t* syms);

/* ---- codegen (cpu_codegen.c) --------------------------------------------- */
typedef struct cpu_kernel_src {
  char* source;        /* malloc'ed C translation unit defining `symbol` */
  char symbol[64];     /* entry point name, e.g. "ptc_k3" */
  uint32_t n_bufs;
  int32_t* bufs;       /* malloc'ed: buffer ids in argument order */
} cpu_kernel_src;
/** Emits C for kernel `k` of plan `s` (not for extern kernels). */
ptc_status cpu_codegen_kernel(const ir_program* p, const sched_plan* s, uint32_t k,
                              cpu_kernel_src* out);
void cpu_kernel_src_free(cpu_kernel_src* src);

/* ---- compiler driver + cache (cpu_compile.c, cpu_cache.c) ---------------- */
typedef struct cpu_compiled {
  void* handle;        /* dlopen handle */
  cpu_kernel_fn fn;
  bool cache_hit;
  char path[512];      /* the .so used */
} cpu_compiled;
/** Compiles (in parallel, up to the number of cores) and loads every
 * source, through the cache: key = sha256(source, compiler identity, flags,
 * PTC_CPU_CODEGEN_VERSION). Compiler errors return INTERNAL with the
 * compiler log ("compiler_log") and the source path in the detail.
 * Environment: PTC_CC (compiler, default "cc"), PTC_CACHE_DIR (default
 * $XDG_CACHE_HOME/ptc or ~/.cache/ptc), PTC_CACHE=0 (compile into a private
 * temporary folder, no reuse). */
ptc_status cpu_compile_all(ptc_context* ctx, const cpu_kernel_src* srcs, size_t n,
                           cpu_compiled* out);
void cpu_compiled_unload(cpu_compiled* c);
/** Cache root in use (for dumps and tests); "" when disabled. */
const char* cpu_cache_dir(void);

/* ---- GEMM and convolution (cpu_gemm.c) -------------------------------------- */
/** C[m,n] = act(alpha * sum_k A[m,k]*B[k,n] + beta * bias[n]) for f32, with
 * arbitrary element strides (lda_m, lda_k, ...). Blocked, packed, OpenMP
 * parallel. bias may be NULL. Thread-safe. */
void cpu_gemm_f32(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t a_sm,
                  int64_t a_sk, const float* b, int64_t b_sk, int64_t b_sn, float beta,
                  const float* bias, int64_t bias_sn, float* c, int64_t c_sm, int64_t c_sn,
                  int32_t activation);
/** Same for f64 (no packing required to be as fast). */
void cpu_gemm_f64(int64_t m, int64_t n, int64_t k, double alpha, const double* a, int64_t a_sm,
                  int64_t a_sk, const double* b, int64_t b_sk, int64_t b_sn, double beta,
                  const double* bias, int64_t bias_sn, double* c, int64_t c_sm, int64_t c_sn,
                  int32_t activation);

/* ---- run plan (cpu_plan.c) -------------------------------------------------- */
typedef struct cpu_plan cpu_plan;
/** Builds the plan for a scheduled program: compiles kernels, resolves
 * externs. Takes ownership of p and s. */
ptc_status cpu_plan_build(ptc_context* ctx, ir_program* p, sched_plan* s, cpu_plan** out);
void cpu_plan_destroy(cpu_plan* plan);
/** Executes one run (reentrant: all per-run state is on the stack/heap). */
ptc_status cpu_plan_run(const cpu_plan* plan, const ptc_tensor* inputs, size_t n_in,
                        const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                        size_t n_syms, uint64_t seed);
/** Kernel count and names (tests assert on fusion). */
size_t cpu_plan_num_kernels(const cpu_plan* plan);
const char* cpu_plan_kernel_name(const cpu_plan* plan, size_t i);

#endif /* PTC_BACKENDS_CPU_H */
