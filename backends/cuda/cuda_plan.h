/* cuda_plan.h - the cuda backend's run plan (internal): what prepare builds
 * from a scheduled program (loaded kernels with their launch shapes, extern
 * steps, graph constants uploaded to the device) and what a run needs
 * (cuda_plan_run.c), the support kernels (cuda_support.c) and the extern
 * steps (cuda_ext.c). Immutable once built; runs share nothing mutable. */
#ifndef PTC_BACKENDS_CUDA_PLAN_H
#define PTC_BACKENDS_CUDA_PLAN_H

#include "cuda_cg.h"
#include "cuda_nvrtc.h"

/* ---- support kernels (cuda_support.c / cuda_support.cuh) -------------------- */
/** Device layout of ptc_copy_args. */
typedef struct cuda_copy_args {
  int64_t n;
  int32_t rank, pad;
  int64_t shape[PTC_MAX_RANK], src_st[PTC_MAX_RANK], dst_st[PTC_MAX_RANK];
} cuda_copy_args;

/** Device layout of ptc_mm_args. */
typedef struct cuda_mm_args {
  int64_t m, n, k;
  int64_t a_sm, a_sk, b_sk, b_sn, c_sm, c_sn, d_sm, d_sn;
  double alpha, beta;
  int32_t act, has_bias, nb, pad;
  int64_t batch[PTC_MAX_RANK];
  int64_t a_bs[PTC_MAX_RANK], b_bs[PTC_MAX_RANK], c_bs[PTC_MAX_RANK], d_bs[PTC_MAX_RANK];
} cuda_mm_args;

/** Device layout of ptc_epi_args. */
typedef struct cuda_epi_args {
  int64_t n, inner, nbias, bias_st;
  double beta;
  int32_t act, has_bias, exact;
} cuda_epi_args;

/** Device layout of ptc_im2col_args. */
typedef struct cuda_im2col_args {
  int64_t nimg, c, h, w, kh, kw, oh, ow;
  int64_t sh, sw, ph, pw, dh, dw;
  int64_t xs_n, xs_c, xs_h, xs_w;
  int64_t col_img, col_row;
} cuda_im2col_args;

/** Device layout of ptc_pool_args. */
typedef struct cuda_pool_args {
  int64_t total, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  int64_t xs_n, xs_c, xs_h, xs_w, divisor;
  int32_t mode, include_pad;
} cuda_pool_args;

typedef struct cuda_support {
  cu_module module;
  cu_function copy[4];    /* element sizes 1, 2, 4, 8 */
  cu_function gemm[4];    /* f32, f64, f16, bf16 */
  cu_function epi[4];     /* f32, f64, f16, bf16: in-place bias + activation */
  cu_function im2col[4];  /* element sizes -, 2, 4, 8 */
  cu_function pool[4];    /* f32, f64, f16, bf16: max/avg/adaptive avg pool2d */
} cuda_support;

extern const char ptc_cuda_support_text[];

/** The support module, built and loaded on first use (thread-safe; the
 * primary context must be current). */
ptc_status cuda_support_get(ptc_context* ctx, const cuda_device* d, const cuda_support** out);
/** Copies src's elements into dst (same dtype and shape; views of device
 * memory, any strides) on `stream`. */
ptc_status cuda_copy_strided(const cuda_support* su, const cuda_device* d, cu_stream stream,
                             const runtime_tensor* src, const runtime_tensor* dst);

/* ---- plan ------------------------------------------------------------------------ */
typedef struct cuda_step {
  uint32_t sched_kernel;
  bool is_extern;
  uint32_t node;            /* extern: the IR node */
  bool on_host;             /* extern run on the host (copies in and out) */
  cu_module module;         /* generated kernel */
  cu_function fn_i32, fn_i64;
  uint32_t n_bufs;
  int32_t* bufs;
  uint32_t n_syms;
  uint32_t* syms;
  uint8_t layout;           /* cuda_layout */
  uint32_t block_x, block_y, slots;
  bool uses_err, cache_hit;
  char name[64];
  char source_path[600];
  bool tunable;             /* launch config may be autotuned (cuda_tune.c) */
  uint32_t max_threads;     /* most threads per block the kernel accepts (0: block_x*block_y) */
  char tune_key[65];        /* the cubin's cache key ("" for externs) */
  uint32_t split;           /* split reduction: xnumel * split blocks (cuda_cg.h); 0/1 = not split */
  uint32_t grid_per_sm;     /* reduction: grid cap in blocks per SM (cuda_kernel_src); 0 = default */
} cuda_step;

typedef struct cuda_plan {
  ptc_context* ctx;
  const cuda_device* dev;
  const cuda_support* sup;
  ptc_graph* dg;            /* the decomposed graph the program refers to */
  ir_program* p;
  sched_plan* s;
  uint32_t n_steps;
  cuda_step* steps;
  size_t n_bufs;
  bool uses_err;            /* some kernel may report an error */
  cu_deviceptr* const_ptr;  /* per buffer: device copy of a CONSTANT's storage (element 0) */
  cu_deviceptr* uploads;    /* the device copies, one per graph constant used */
  size_t n_uploads;
  uint32_t n_host_steps;
  char host_ops[256];       /* ops run on the host, for the report */
  bool mm_tf32, conv_tf32;  /* TF32 allowed for f32 matmul / convolution GEMMs
                             * (ptc_compile_options matmul_precision / conv_precision
                             * "high" or "medium"); set by prepare */
  bool autotune;            /* modes "max-autotune*": launch configs tuned (cuda_tune.c) */
  /* Split-reduction kernels keep their partials in module memory, so their
   * launches from runs on two streams must not overlap: the stream of the
   * last such launch (mutable, guarded by a lock in cuda_plan_run.c; NULL
   * pointer when no step is split). */
  struct cuda_split_order* split_order;
  /* Deferred kernel-error checks (cuda_plan_run.c; mutable, locked there):
   * set when uses_err. */
  struct cuda_deferred* deferred;
  /* Every buffer's and input's layout, evaluated once when they hold no
   * size symbol (cuda_plan_run.c; NULL otherwise): runs copy them instead of
   * evaluating hundreds of size expressions. Immutable. */
  struct cuda_static_layout* static_layout;
  /* Copies of constant convolution weights in the layout a kernel reads,
   * kept after the first run (cuda_conv_wcache.h; one slot per IR node;
   * mutable, thread-safe). */
  struct cuda_wcache* wcache;
} cuda_plan;

/** Evaluates plan->static_layout when no layout depends on a size symbol
 * (leaves it NULL otherwise). Errors: out of memory. */
ptc_status cuda_plan_static_layout(cuda_plan* plan);
/** Frees what cuda_plan_static_layout made (NULL: nothing). */
void cuda_static_layout_free(struct cuda_static_layout* sl);

/** The deferred error checks of a plan whose kernels can report errors:
 * runs asked for deferred errors copy their error word back into a pinned
 * slot after their work and record an event; the next run of the plan reads
 * the finished slots (cuda_plan_run). Opaque; thread-safe. */
typedef struct cuda_deferred cuda_deferred;
/** A new, empty table (no device resources until the first deferred run). */
ptc_status cuda_deferred_create(cuda_deferred** out);
/** Waits for pending copies and frees everything (the plan's context
 * current). NULL is a no-op. */
void cuda_deferred_destroy(cuda_deferred* d);

/** See cuda_plan.split_order. */
typedef struct cuda_split_order {
  cu_stream last;
  bool used;
} cuda_split_order;

/** Builds the plan: generates and compiles every kernel for the device's
 * architecture (cached, in parallel), loads them, uploads constants.
 * Takes ownership of dg, p and s. The primary context must be current. */
ptc_status cuda_plan_build(ptc_context* ctx, const cuda_device* d, ptc_graph* dg, ir_program* p,
                           sched_plan* s, cuda_plan** out);
void cuda_plan_destroy(cuda_plan* plan);
/** One run on `stream` (the primary context current). Reentrant.
 * deferred_errors: a plan whose kernels can report errors does not wait for
 * its error word (ptc_run_options.deferred_errors; an error found in the
 * word of an earlier run is returned instead, before any work); the
 * environment PTC_CUDA_SYNC_ERRORS=1 turns this off. PTC_CUDA_HOSTPROF=1:
 * host time per phase (bind, kernel launches, extern steps, output copies,
 * error check) summed over runs and printed to stderr at exit. */
ptc_status cuda_plan_run(const cuda_plan* plan, const ptc_tensor* inputs, size_t n_in,
                         const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                         size_t n_syms, uint64_t seed, cu_stream stream, bool deferred_errors);

/* ---- extern steps (cuda_ext.c) ---------------------------------------------------------- */
/** What an extern step sees: its node and device views of its buffers. */
typedef struct cuda_ext_call {
  const cuda_plan* plan;
  const ir_node* node;
  const runtime_tensor* in;   /* one per ext.in entry (absent: data NULL) */
  const runtime_tensor* out;  /* one per ext.out entry */
  const int64_t* syms;
  size_t n_syms;
  uint64_t seed;
  cu_stream stream;
  bool tf32;                  /* f32 GEMMs may use TF32: set by the matmul path
                               * (plan->mm_tf32) and the convolution path
                               * (plan->conv_tf32); false by default */
} cuda_ext_call;
/** Whether extern node n runs on the device (matmul; floating-point
 * convolution, as im2col + GEMM) or on the host. */
bool cuda_ext_on_device(const ir_program* p, const ir_node* n);
/** Runs an extern step: GEMM and convolution on the device; ops without a
 * CUDA lowering, host custom ops and convolutions of layouts the device path
 * does not take on the host (inputs copied out, the reference kernel or the
 * host function run, outputs copied back; the stream is synchronised). */
ptc_status cuda_ext_run(const cuda_ext_call* c);
/** The matmul through cuBLASLt (cuda_blaslt.c): *done false (and PTC_OK)
 * when cuBLASLt is absent or cannot take this layout, dtype or epilogue. */
ptc_status cuda_blaslt_matmul(const cuda_ext_call* c, const cuda_mm_args* g, int64_t count,
                              int32_t dtype, cu_deviceptr pa, cu_deviceptr pb, cu_deviceptr pbias,
                              cu_deviceptr pc, bool* done);

/* ==== launch-config autotuning (cuda_tune.c) ==================================== */
#define CUDA_TUNE_DEFAULT_WAVES 4 /* the heuristic grid cap: sm_count * (2048 / threads) * 4 */

/** One launch configuration of a generated kernel. */
typedef struct cuda_launch_cfg {
  uint32_t block_x, block_y;
  uint32_t waves;  /* grid cap sm_count * (2048 / threads) * waves blocks; 0 = no cap */
} cuda_launch_cfg;

/** Whether compile mode `mode` tunes launch configs ("max-autotune",
 * "max-autotune-no-cudagraphs"). NULL is the default mode (false). */
bool cuda_tune_mode(const char* mode);
/** Writes the launch configs step `st` supports to out[0..cap) and returns
 * their number: the heuristic one first; a step that is not tunable has
 * only that one. Pure. */
size_t cuda_tune_candidates(const cuda_step* st, cuda_launch_cfg* out, size_t cap);
/** Grid size of config `c` for `xn` outer points on `sm_count` SMs (>= 1). */
int64_t cuda_tune_blocks(const cuda_step* st, const cuda_launch_cfg* c, int sm_count, int64_t xn);
/** The launch config for one launch of step `st` (args: its argument array,
 * buffers first): the heuristic unless plan->autotune and the step is
 * tunable; then the cached choice for (kernel key, device, xn, rn, index
 * width) from memory or disk, else every candidate is timed on `stream`
 * with the run's buffers (skipped while the stream is capturing or when two
 * buffers share an address), the fastest is kept, logged (INFO) and stored.
 * Errors: a failed timing launch (the status names the kernel); a cache
 * write failure is only logged. Thread-safe. */
ptc_status cuda_tune_pick(const cuda_plan* plan, const cuda_step* st, cu_function fn, void** args,
                          int64_t xn, int64_t rn, int64_t ext, cu_stream stream,
                          cuda_launch_cfg* out);
/** The cache key of one tuning decision (sha256 hex): kernel_key (the
 * cubin's key), the device name, SM count and arch, the sizes and the index
 * width implied by extent `ext`. Errors: INVALID_ARGUMENT (no kernel key). */
ptc_status cuda_tune_key(const char* kernel_key, const char* device, int sm_count, int arch,
                         int64_t xn, int64_t rn, int64_t ext, char key[65]);
/** A stored choice for `key`: the process table, else the file
 * <cache>/cuda/<key>.tune (then remembered); false when absent or invalid. */
bool cuda_tune_lookup(const char* key, cuda_launch_cfg* c);
/** Remembers `c` for `key` and writes its file (atomically; not when the
 * cache is disabled). Errors: the write's. */
ptc_status cuda_tune_store(const char* key, const cuda_launch_cfg* c);
/** The file text of `c` / its parse (false for anything else). */
void cuda_tune_format(const cuda_launch_cfg* c, char* out, size_t cap);
bool cuda_tune_parse(const char* text, cuda_launch_cfg* c);
/** Empties the process table (tests: the next lookup reads the disk). */
void cuda_tune_forget(void);
/** For describe output: one line under step `st` when the plan autotunes
 * (the candidates' count and the choices made so far in this process, by
 * size, "timed" or "cached"; or that it is not tunable). Thread-safe. */
void cuda_tune_describe(const cuda_plan* plan, const cuda_step* st, ptc_strbuf* sb);

#endif /* PTC_BACKENDS_CUDA_PLAN_H */
