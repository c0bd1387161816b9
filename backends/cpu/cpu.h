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
#define PTC_CPU_CODEGEN_VERSION "cpu-codegen-2"

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

/* ---- convolution (cpu_conv.c; appended by the GEMM/conv job) --------------------- */
/** Geometry and epilogue of one 2-D convolution; conv1d is the case
 * h = kh = out_h = 1 (stride/pad/dil index 0 unused). Input x is
 * [n, c_in, h, w], weight [c_out, c_in / groups, kh, kw], bias [c_out],
 * output [n, c_out, out_h, out_w]; each with arbitrary element strides
 * (index order as listed; 0 allowed for broadcast input dims). pad is the
 * leading padding of (h, w); the trailing padding is whatever out_h/out_w
 * imply (so padding='same' with an even kernel is expressible); input
 * positions outside [0, h) x [0, w) read as zero. */
typedef struct cpu_conv_geom {
  int64_t n, c_in, h, w;
  int64_t c_out, kh, kw;
  int64_t out_h, out_w;
  int64_t stride[2], pad[2], dil[2]; /* (h, w) */
  int64_t groups;
  int64_t x_strides[4], w_strides[4], out_strides[4], bias_stride;
  double alpha, beta;                /* out = act(alpha*conv + beta*bias) */
  int32_t activation;                /* ir_activation */
} cpu_conv_geom;

/** Output size of one spatial dim: (in + 2*pad - dil*(k-1) - 1) / stride + 1
 * (floor; may be <= 0 when the dilated kernel exceeds the padded input). */
int64_t cpu_conv_out_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil);

/** out[n, co, oh, ow] = act(alpha * sum_{ci, i, j} x[n, gi*cig + ci, oh*stride[0] - pad[0] +
 * i*dil[0], ow*stride[1] - pad[1] + j*dil[1]] * w[co, ci, i, j] + beta * bias[co]) with
 * gi = co / (c_out / groups), cig = c_in / groups; bias may be NULL. Runs as
 * one GEMM per (batch element, group) with im2col fused into the packing of
 * B (no column buffer; 1x1 stride-1 convolutions read x directly),
 * OpenMP-parallel inside the GEMM or across (batch, group) jobs when each
 * is small. Errors: INVALID_ARGUMENT naming the field for a bad geometry
 * (negative sizes, groups not dividing c_in/c_out, stride/dil < 1,
 * pad < 0), RESOURCE_EXHAUSTED when the GEMM's packing buffers cannot be
 * allocated. out must not overlap the inputs. Thread-safe. */
ptc_status cpu_conv2d_f32(const cpu_conv_geom* geom, const float* x, const float* w,
                          const float* bias, float* out);
/** Same for f64. */
ptc_status cpu_conv2d_f64(const cpu_conv_geom* geom, const double* x, const double* w,
                          const double* bias, double* out);

/* ---- kernel context (appended by the codegen, issue 3) -----------------------
 * Every generated kernel takes one pointer more than its buffers:
 *     bufs[n_bufs] = (cpu_kernel_ctx*)ctx
 * The run plan zeroes `error` before each launch, sets `seed` to the run's
 * seed (IR_RAND/IR_RANDN draw Philox(seed, op.i, index) exactly as
 * backends/ref/ref_random.c), and after the kernel returns checks `error`:
 * the first failing element wins (atomic compare-exchange from 0) and fills
 * error_node (ir node index), error_value and error_bound:
 *   CPU_KERR_INDIRECT  an IR_INDIRECT index out of range: error_value is the
 *                      index as computed (before wrapping negatives),
 *                      error_bound the dim size;
 *   CPU_KERR_DIV_ZERO  integer division or remainder by zero: error_value is
 *                      the dividend, error_bound 0;
 *   CPU_KERR_EMPTY     max/min/argmax/argmin over zero elements: error_value
 *                      is the number of outer points, error_bound 0;
 *   CPU_KERR_NOMEM     the kernel could not allocate its per-thread partial
 *                      results (split column reductions): error_value is the
 *                      number of bytes asked for.
 * After an error the outputs are unspecified; the kernel never reads or
 * writes out of bounds because of it (a bad index is replaced by 0).
 * Buffer pointers point at element 0 of each buffer's storage (ir load/store
 * indices are flat storage offsets). They are declared `restrict` unless two
 * of the kernel's buffers share a workspace slot (in-place updates), so the
 * plan must not pass overlapping memory for distinct buffers otherwise. */
typedef struct cpu_kernel_ctx {
  uint64_t seed;
  int32_t error;        /* cpu_kernel_error, 0 = ok */
  int32_t error_node;
  int64_t error_value;
  int64_t error_bound;
} cpu_kernel_ctx;

typedef enum cpu_kernel_error {
  CPU_KERR_NONE = 0,
  CPU_KERR_INDIRECT = 1,
  CPU_KERR_DIV_ZERO = 2,
  CPU_KERR_EMPTY = 3,
  CPU_KERR_NOMEM = 4
} cpu_kernel_error;

/* ---- batched GEMM (cpu_gemm.c; appended by the GEMM/conv job) ----------------------- */
/** `count` GEMMs of one shape and one set of strides (the arguments of
 * cpu_gemm_f32): entry e reads a + a_off[e], b + b_off[e], bias + bias_off[e]
 * and writes c + c_off[e] (element offsets; bias_off may be NULL when bias
 * is). Entries too small to be worth threads each (batched attention,
 * per-head matmuls) run in parallel with each other, bigger ones one after
 * another with threads inside each. Results equal cpu_gemm_f32 per entry.
 * Entries must not write overlapping C. Thread-safe. */
void cpu_gemm_batch_f32(int64_t count, const int64_t* a_off, const int64_t* b_off,
                        const int64_t* bias_off, const int64_t* c_off, int64_t m, int64_t n,
                        int64_t k, float alpha, const float* a, int64_t a_sm, int64_t a_sk,
                        const float* b, int64_t b_sk, int64_t b_sn, float beta, const float* bias,
                        int64_t bias_sn, float* c, int64_t c_sm, int64_t c_sn,
                        int32_t activation);
/** Same for f64. */
void cpu_gemm_batch_f64(int64_t count, const int64_t* a_off, const int64_t* b_off,
                        const int64_t* bias_off, const int64_t* c_off, int64_t m, int64_t n,
                        int64_t k, double alpha, const double* a, int64_t a_sm, int64_t a_sk,
                        const double* b, int64_t b_sk, int64_t b_sn, double beta,
                        const double* bias, int64_t bias_sn, double* c, int64_t c_sm,
                        int64_t c_sn, int32_t activation);

#endif /* PTC_BACKENDS_CPU_H */
