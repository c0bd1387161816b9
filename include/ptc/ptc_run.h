/* ptc_run.h - tensors at the boundary (DLPack-compatible descriptors),
 * compiling a graph into an executable, running it, and the backend list.
 */
#ifndef PTC_RUN_H
#define PTC_RUN_H

#include "ptc_core.h"
#include "ptc_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- tensors: layout-identical to DLPack's DLDevice / DLDataType / DLTensor */
/** DLPack device type codes used by libptc. */
enum { PTC_DEVICE_CPU = 1, PTC_DEVICE_CUDA = 2 };
/** Layout of DLDevice. */
typedef struct ptc_device {
  int32_t device_type;
  int32_t device_id;
} ptc_device;
/** Layout of DLDataType: code 0 int, 1 uint, 2 float, 4 bfloat, 6 bool. */
typedef struct ptc_dl_dtype {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} ptc_dl_dtype;
/** Layout of DLTensor: a borrowed view of memory. `strides` (in elements) may
 * be NULL for contiguous. A `DLTensor*` can be passed where a
 * `const ptc_tensor*` is expected. `device` says where `data` lives: the
 * "ref" and "cpu" backends take PTC_DEVICE_CPU tensors, the "cuda" backend
 * PTC_DEVICE_CUDA tensors (device memory of the CUDA device the backend
 * uses, device_id 0; `data` is a CUdeviceptr); a tensor on another device
 * is an INVALID_ARGUMENT naming the input or output and both devices. */
typedef struct ptc_tensor {
  void* data;
  ptc_device device;
  int32_t ndim;
  ptc_dl_dtype dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} ptc_tensor;

/** DLPack dtype of a ptc dtype; {0,0,0} for an invalid one. Thread-safe. */
PTC_API ptc_dl_dtype ptc_dtype_to_dl(int32_t dtype);
/** ptc dtype of a DLPack dtype (lanes must be 1), or -1. Thread-safe. */
PTC_API int32_t ptc_dtype_from_dl(ptc_dl_dtype dt);

/* ---- backends ---------------------------------------------------------------- */
/** Number of registered backends ("ref" is always present). Thread-safe. */
PTC_API size_t ptc_backend_count(void);
/** Name of backend `i` or NULL. Static string. Thread-safe. */
PTC_API const char* ptc_backend_name(size_t i);
/** Whether backend `name` can run here; if not, a static reason is stored in
 * `*reason` (may be NULL), e.g. for "cuda": "libcuda.so.1 not found: ...",
 * "NVRTC (libnvrtc.so.13/.12) not found: ..." or "no CUDA device" (the
 * first query of "cuda" opens those libraries and initialises the driver).
 * Returns 0 for unknown names. Thread-safe. */
PTC_API int ptc_backend_available(const char* name, const char** reason);

/* ---- compile ----------------------------------------------------------------- */
/** An executable: an immutable, compiled form of a graph (a snapshot: later
 * changes to the graph do not affect it). Reference counted. Thread-safe:
 * ptc_executable_run may be called from many threads at once. */
typedef struct ptc_executable ptc_executable;

/** An input dimension to compile as dynamic (a size argument). */
typedef struct ptc_dynamic_dim {
  uint32_t input; /**< graph input index */
  uint32_t dim;   /**< dimension of that input */
} ptc_dynamic_dim;

/** Compile options. */
typedef struct ptc_compile_options {
  size_t struct_size;
  /** "ref" (reference interpreter, also called "eager"), "cpu" (fused C +
   * OpenMP kernels) or "cuda" (fused CUDA kernels compiled with NVRTC, for
   * CUDA tensors; see ptc_backend_available); default "ref". */
  const char* backend;
  /** NULL or "default"; "reduce-overhead": the cuda backend records each
   * run plan into a CUDA graph (static buffers; re-recorded per new shape up
   * to a cap, off by itself where a plan cannot be captured) and replays it;
   * "max-autotune": launch configurations of the cuda backend's kernels are
   * timed on first run and the choice cached (plus CUDA graphs, as
   * PyTorch's mode of that name); "max-autotune-no-cudagraphs": the timing
   * alone. Backends without these features accept the modes and ignore them. */
  const char* mode;
  /** Folder for debug dumps, created if missing: the graph, the decomposed
   * graph, the IR, every fusion decision, the generated sources; NULL = none
   * (the environment variable PTC_DEBUG_DIR sets a default). */
  const char* debug_dir;
  /** Input dims that become symbolic although the graph has them static
   * (sizes 0 and 1 stay static). A node whose attributes bake such a size
   * makes ptc_compile fail with a message naming the node. */
  const ptc_dynamic_dim* dynamic_dims;
  size_t n_dynamic_dims;
  /** Non-zero: one kernel per op (no fusion, no inlining); for comparisons. */
  uint32_t disable_fusion;
  uint32_t reserved;
  /** float32 matrix multiplies, as PyTorch's float32_matmul_precision:
   * NULL or "highest" = full fp32 math; "high" or "medium" = TF32 tensor
   * cores allowed (cuda backend). Appended: callers with an older
   * struct_size get NULL. */
  const char* matmul_precision;
  /** float32 convolutions, as PyTorch's torch.backends.cudnn.allow_tf32:
   * NULL or "highest" = full fp32 math; "high" = TF32 allowed (PyTorch's
   * default for cuDNN convolutions). Appended, as matmul_precision. */
  const char* conv_precision;
} ptc_compile_options;
/** Fills defaults. Never fails. */
PTC_API void ptc_compile_options_init(ptc_compile_options* opts);

/** Compiles `g` for a backend. The executable holds a snapshot of the graph
 * (borrowed constants stay borrowed) and retains `ctx`. `opts` may be NULL.
 * Errors: INVALID_ARGUMENT (graph without outputs, NULL args), NOT_FOUND
 * (unknown backend), UNAVAILABLE (backend absent here, with the reason),
 * UNIMPLEMENTED (an op the backend lacks, named), RESOURCE_EXHAUSTED.
 * The caller owns `*out` (ptc_executable_release). */
PTC_API PTC_MUST_USE ptc_status ptc_compile(ptc_context* ctx, const ptc_graph* g,
                                            const ptc_compile_options* opts,
                                            ptc_executable** out);
/** Adds a reference; returns `exe`. Accepts NULL. Thread-safe. */
PTC_API ptc_executable* ptc_executable_retain(ptc_executable* exe);
/** Drops a reference. Accepts NULL. Thread-safe. */
PTC_API void ptc_executable_release(ptc_executable* exe);
/** Text report of what was compiled: backend, kernels with the graph nodes
 * each one fuses, extern calls, memory plan and the generated sources' paths.
 * Two-call convention: `*needed` gets the length without the NUL; OUT_OF_RANGE
 * when cap is too small. Errors: INVALID_ARGUMENT. Thread-safe. */
PTC_API PTC_MUST_USE ptc_status ptc_executable_format(const ptc_executable* exe, char* buf,
                                                      size_t cap, size_t* needed);
/** Number of compiled kernels plus extern calls of the run plan (the ref
 * backend reports one per node). 0 for NULL. Thread-safe. */
PTC_API size_t ptc_executable_num_kernels(const ptc_executable* exe);
/** Number of inputs / outputs the executable expects. */
PTC_API size_t ptc_executable_num_inputs(const ptc_executable* exe);
PTC_API size_t ptc_executable_num_outputs(const ptc_executable* exe);

/** Run options. Fields are only ever appended: a caller compiled against an
 * older header passes its smaller struct_size and the later fields keep
 * their defaults. */
typedef struct ptc_run_options {
  size_t struct_size;
  /** Seed of the counter-based RNG used by rand/randn/bernoulli nodes that
   * have no "seed" attribute. Default 0. */
  uint64_t seed;
  /** Device backends ("cuda"): the stream the run is ordered on, a
   * `CUstream` (or `cudaStream_t`, the same handle) of the device's primary
   * context, such as PyTorch's current stream; NULL (default) = the legacy
   * default stream. The run's kernels, copies and the outputs of
   * ptc_executable_run_alloc are ordered on this stream: the call may
   * return before they finish (synchronise the stream before reading the
   * outputs on the host or from another stream), except that a run whose
   * kernels can report errors (out-of-range indices, integer division by
   * zero) or that executes ops on the host waits for the stream. The
   * library never destroys the stream. Ignored by host backends. */
  void* stream;
  /** Device backends ("cuda"): nonzero = a run whose kernels can report
   * errors does not wait for the stream to read them. Its error word is
   * copied back asynchronously and an error found there is returned by a
   * later run of the same executable (the first that finds the earlier run
   * finished; the message says "an earlier run"), as PyTorch reports
   * device-side asserts asynchronously; that later run does no work. An error
   * of the last run before the executable is released is never reported.
   * Default 0: the run waits and returns its own errors (see `stream`). The
   * environment PTC_CUDA_SYNC_ERRORS=1 turns it off process-wide. The
   * Python binding sets it. */
  uint32_t deferred_errors;
} ptc_run_options;
/** Fills defaults. Never fails. */
PTC_API void ptc_run_options_init(ptc_run_options* opts);

/** Runs with caller-provided outputs: each `outputs[i]` must describe memory
 * of the right dtype and shape (strides may be NULL = contiguous). Inputs are
 * checked against the executable's guards on every run: a mismatch is an
 * INVALID_ARGUMENT status such as "input 0 dim 1: expected 128, got 64".
 * Inputs and outputs must be on the backend's device (see ptc_tensor).
 * Errors: INVALID_ARGUMENT (including a tensor on the wrong device), op
 * errors (e.g. an index out of range in gather), RESOURCE_EXHAUSTED,
 * INTERNAL (a device failure, with the driver's error). Thread-safe. */
PTC_API PTC_MUST_USE ptc_status ptc_executable_run(const ptc_executable* exe,
                                                   const ptc_tensor* inputs, size_t n_inputs,
                                                   const ptc_tensor* outputs, size_t n_outputs,
                                                   const ptc_run_options* opts);

/** Checks `inputs` exactly as ptc_executable_run does (dtypes, ranks,
 * static sizes, symbolic-size guards) without running, and describes the
 * outputs a run with these inputs produces: for each of the `n_outputs`
 * entries (must equal ptc_executable_num_outputs) it sets `ndim`, `dtype`
 * and `device` (the backend's device: cpu, or cuda device 0) and writes the sizes into `outputs[i].shape`, which the caller
 * points at PTC_MAX_RANK int64_t entries beforehand; `data`, `strides` and
 * `byte_offset` are left as they are. Hosts use it to allocate outputs with
 * their own allocator (contiguous) and to test whether an executable accepts
 * inputs (any error means it does not).
 * Errors: INVALID_ARGUMENT (a mismatch, with the message ptc_executable_run
 * would give, e.g. "input 0 dim 1: expected 128, got 64"; or a NULL shape).
 * Thread-safe. */
PTC_API PTC_MUST_USE ptc_status ptc_executable_infer_outputs(const ptc_executable* exe,
                                                             const ptc_tensor* inputs,
                                                             size_t n_inputs,
                                                             ptc_tensor* outputs,
                                                             size_t n_outputs);

/** Outputs allocated by the library for one run. */
typedef struct ptc_results ptc_results;
/** Runs and allocates the outputs (contiguous): with the context's
 * allocator for host backends; for device backends in device memory from
 * the backend's caching allocator, on the run's stream (see
 * ptc_run_options.stream), and ptc_results_destroy returns that memory to
 * the cache, where only work later queued on the same stream reuses it
 * (destroying results while that stream still reads them is safe). The
 * caller owns `*out` and frees it with ptc_results_destroy(). Errors as
 * ptc_executable_run. Thread-safe. */
PTC_API PTC_MUST_USE ptc_status ptc_executable_run_alloc(const ptc_executable* exe,
                                                         const ptc_tensor* inputs,
                                                         size_t n_inputs,
                                                         const ptc_run_options* opts,
                                                         ptc_results** out);
/** Number of tensors in `r` (0 for NULL). */
PTC_API size_t ptc_results_count(const ptc_results* r);
/** Tensor `i` of `r`, owned by `r`; NULL if out of range. Its `device` is
 * the executable's backend's device (device memory for "cuda"). */
PTC_API const ptc_tensor* ptc_results_get(const ptc_results* r, size_t i);
/** Frees `r` and its tensors (device memory goes back to the backend's
 * cache). Accepts NULL. Thread-safe for distinct results. */
PTC_API void ptc_results_destroy(ptc_results* r);

/* ---- host-registered extern ops (custom ops) -------------------------------------
 * A host can add its own C function as an op of a context: graphs of that
 * context then use it by name with ptc_graph_add_node like a built-in op,
 * and every backend calls the function (through libffi) when the graph
 * runs. The function's C signature is described at registration as a list
 * of arguments, each one taken from the node: a data pointer of an input or
 * output, an element count, a dim size, an attribute, or the user pointer.
 * Example - `void my_scale(const float* x, float* out, int64_t n, double a)`:
 *   ptc_extern_arg args[] = {{PTC_EXTERN_ARG_INPUT, 0, 0, NULL},
 *                            {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL},
 *                            {PTC_EXTERN_ARG_NUMEL, 0, 0, NULL},
 *                            {PTC_EXTERN_ARG_ATTR_FLOAT, 0, 0, "alpha"}};
 *   ptc_extern_output out = {0, -1};   (shape and dtype of input 0)
 *   desc.name = "my_scale"; desc.fn = (void (*)(void))my_scale;
 *   desc.n_inputs = 1; desc.n_outputs = 1; desc.outputs = &out;
 *   desc.n_args = 4; desc.args = args;
 * The function must be a pure function of its inputs (graph passes may merge
 * two identical calls or evaluate a call on constant inputs at compile time)
 * and may be called from several threads at once (concurrent runs). */

/** What one argument of a custom op's C function receives. */
typedef enum ptc_extern_arg_kind {
  /** `const void*`: the data of input `index`, contiguous row-major (the
   * library copies a strided input first). */
  PTC_EXTERN_ARG_INPUT = 0,
  /** `void*`: the data of output `index`, contiguous row-major; the
   * function must write every element. */
  PTC_EXTERN_ARG_OUTPUT = 1,
  /** `int64_t`: the number of elements of input `index`. */
  PTC_EXTERN_ARG_NUMEL = 2,
  /** `int64_t`: the size of dim `dim` of input `index` (a negative dim
   * counts from the end; checked against the input's rank when a node is
   * added). */
  PTC_EXTERN_ARG_DIM = 3,
  /** `int64_t`: the node's integer attribute `name` (required on every
   * node of the op). */
  PTC_EXTERN_ARG_ATTR_INT = 4,
  /** `double`: the node's float attribute `name` (required; an integer
   * attribute value is accepted and converted). */
  PTC_EXTERN_ARG_ATTR_FLOAT = 5,
  /** `void*`: the descriptor's `user` pointer. */
  PTC_EXTERN_ARG_USER = 6
} ptc_extern_arg_kind;

/** One argument of the function, in C parameter order. */
typedef struct ptc_extern_arg {
  int32_t kind;     /**< ptc_extern_arg_kind */
  int32_t index;    /**< INPUT, NUMEL, DIM: input index; OUTPUT: output index */
  int32_t dim;      /**< DIM: the dim */
  const char* name; /**< ATTR_INT, ATTR_FLOAT: attribute name (an identifier) */
} ptc_extern_arg;

/** How one output's dtype and shape follow from the inputs. */
typedef struct ptc_extern_output {
  /** The output has the shape of this input. */
  int32_t shape_of_input;
  /** A ptc_dtype, or -1 for the dtype of input `shape_of_input`. */
  int32_t dtype;
} ptc_extern_output;

/** Describes a custom op. Initialise with ptc_extern_op_desc_init. Every
 * pointer is read during ptc_register_extern_op only (the library copies
 * what it keeps), except `fn` and `user`, which must stay valid as long as
 * the context lives. */
typedef struct ptc_extern_op_desc {
  size_t struct_size;
  /** Op name: 1 to 63 characters of [A-Za-z0-9_.:], starting with a letter
   * or '_'; must not be a built-in op (see ptc_op_name) or an op already
   * registered on the context. */
  const char* name;
  /** The C function; its return type must be void. */
  void (*fn)(void);
  /** Number of tensor inputs of every node (0 to 64). */
  uint32_t n_inputs;
  /** NULL = any dtypes; else `n_inputs` entries, each a ptc_dtype the input
   * must have or -1 for any (checked when a node is added). */
  const int32_t* input_dtypes;
  /** Number of outputs (1 to 64) and their rules (`n_outputs` entries). */
  uint32_t n_outputs;
  const ptc_extern_output* outputs;
  /** The function's parameters, in order (0 to 64); every output must be
   * passed at least once. */
  uint32_t n_args;
  const ptc_extern_arg* args;
  /** Passed where an argument is PTC_EXTERN_ARG_USER; never dereferenced
   * by the library. */
  void* user;
} ptc_extern_op_desc;

/** Fills defaults (everything zero/NULL, struct_size set). Never fails. */
PTC_API void ptc_extern_op_desc_init(ptc_extern_op_desc* desc);

/** Registers a custom op on `ctx`; it lives as long as the context. Graphs
 * created in `ctx` (and executables compiled from them, on any backend) can
 * then use it. Errors: INVALID_ARGUMENT (NULL arguments, a bad name, struct
 * size, count, index, dtype or attribute name - the message names the
 * field), ALREADY_EXISTS (a built-in op or an op already registered on ctx
 * has this name), RESOURCE_EXHAUSTED, INTERNAL (libffi refused the
 * signature). Thread-safe: registration and graph building may happen
 * concurrently from several threads. */
PTC_API PTC_MUST_USE ptc_status ptc_register_extern_op(ptc_context* ctx,
                                                       const ptc_extern_op_desc* desc);

#ifdef __cplusplus
}
#endif
#endif /* PTC_RUN_H */
