/* backend.h - internal backend interface used by ptc_compile/run. Built-in
 * backends register a const table here; the public plugin ABI
 * (ptc_backend.h) will wrap the same shape later. */
#ifndef PTC_LIB_RUNTIME_BACKEND_H
#define PTC_LIB_RUNTIME_BACKEND_H

#include "../graph/graph.h"

typedef struct backend_vtable {
  const char* name;
  /** NULL if available, else a static reason. */
  const char* (*unavailable_reason)(void);
  /** Prepares `g` (owned by the executable, immutable from now on) and
   * returns backend state in *state. */
  ptc_status (*prepare)(ptc_context* ctx, const ptc_graph* g, const ptc_compile_options* opts,
                        void** state);
  /** Runs with concrete tensors already checked by runtime_bind_inputs
   * (sym_values[i] = value of symbol i this run); `outputs` are
   * preallocated descriptors of the right dtype and shape. Reentrant. */
  ptc_status (*run)(void* state, const ptc_graph* g, const ptc_tensor* inputs,
                    size_t n_in, const ptc_tensor* outputs, size_t n_out,
                    const int64_t* sym_values, size_t n_syms, uint64_t seed);
  void (*destroy)(void* state);
  /** Appends a readable description (kernels, fusion, sources) to sb. */
  void (*describe)(const void* state, const ptc_graph* g, ptc_strbuf* sb);
  /** Kernels + extern calls per run. */
  size_t (*num_kernels)(const void* state, const ptc_graph* g);
  /* ---- device backends (appended; host backends leave these zero) -------
   * A device backend runs on tensors of its own device type: inputs,
   * caller outputs and the outputs of ptc_executable_run_alloc live there. */
  /** DLPack device type of every tensor `run` takes; 0 = PTC_DEVICE_CPU. */
  int32_t device_type;
  /** Like `run`, on the caller's stream (an opaque handle such as a
   * CUstream; NULL = the backend's default stream). The run is ordered on
   * that stream and may still be executing when this returns. When set,
   * ptc_executable_run(_alloc) call it instead of `run`. flags:
   * BACKEND_RUN_* (ptc_run_options). */
  ptc_status (*run_stream)(void* state, const ptc_graph* g, const ptc_tensor* inputs,
                           size_t n_in, const ptc_tensor* outputs, size_t n_out,
                           const int64_t* sym_values, size_t n_syms, uint64_t seed,
                           void* stream, uint32_t flags);
  /** Device memory of `bytes` bytes (> 0) for the outputs of
   * ptc_executable_run_alloc, usable in order on `stream`; freed with
   * `free`. Thread-safe. NULL for host backends (context allocator). */
  ptc_status (*alloc)(size_t bytes, void* stream, void** out);
  void (*free)(void* p);
} backend_vtable;

/** run_stream flags: ptc_run_options.deferred_errors. */
#define BACKEND_RUN_DEFERRED_ERRORS 1u

/** Built-in backends (NULL-terminated lookup). */
const backend_vtable* backend_find(const char* name);
size_t backend_count(void);
const backend_vtable* backend_at(size_t i);

/** The reference backend's table (backends/ref/ref_exec.c). */
extern const backend_vtable ptc_ref_backend;
/** The CPU backend's table (backends/cpu/cpu_backend.c): fused C + OpenMP
 * kernels compiled with the system C compiler. */
extern const backend_vtable ptc_cpu_backend;
/** The CUDA backend's table (backends/cuda/cuda_backend.c): CUDA C kernels
 * compiled with NVRTC, launched through the driver API (libcuda.so.1 and
 * NVRTC are opened at run time; unavailable without them or a device). */
extern const backend_vtable ptc_cuda_backend;

/** The device type a backend's tensors live on (PTC_DEVICE_CPU unless the
 * backend sets device_type). */
int32_t backend_device_type(const backend_vtable* b);
/** "cpu", "cuda" or "device type N" (static or thread-local text). */
const char* runtime_device_name(int32_t device_type);

/** Checks the inputs against the graph (count, device, rank, dtype, static
 * sizes, symbol consistency, guards) and fills sym_values[n_syms] (n_syms =
 * sym_num_vars(g->env)). Error messages name the input and dim:
 * "input 0 dim 1: expected 128, got 64". */
ptc_status runtime_bind_inputs(const ptc_graph* g, const ptc_tensor* inputs, size_t n_in,
                               int64_t* sym_values, size_t n_syms);
/** The same for a backend whose tensors live on `device_type` (named
 * `backend` in messages): an input on another device is INVALID_ARGUMENT
 * "input 0 (x): tensor on cpu, but backend 'cuda' runs on cuda tensors".
 * runtime_bind_inputs is this with PTC_DEVICE_CPU and "this backend". */
ptc_status runtime_bind_inputs_on(const ptc_graph* g, int32_t device_type, const char* backend,
                                  const ptc_tensor* inputs, size_t n_in, int64_t* sym_values,
                                  size_t n_syms);
/** Evaluates value v's shape with the bound symbols into shape[rank]. */
ptc_status runtime_value_shape(const ptc_graph* g, ptc_value v, const int64_t* sym_values,
                               size_t n_syms, int64_t* shape);

/* ---- node calls on concrete memory (fallback.c, custom_op.c) ----------------
 * Backends that run most of a graph their own way call these for single
 * graph nodes: ops without a lowering (IR_EXT_FALLBACK) and host-registered
 * custom ops (IR_EXT_CUSTOM). */

/** A concrete strided view of memory for one run. */
typedef struct runtime_tensor {
  void* data;                    /* element 0 (offset applied); NULL = absent input */
  int32_t dtype;
  int32_t rank;
  int64_t shape[PTC_MAX_RANK];
  int64_t strides[PTC_MAX_RANK]; /* elements (0 for broadcast dims) */
} runtime_tensor;

/** Contiguous row-major strides for t->shape into t->strides. */
void runtime_tensor_contiguous(runtime_tensor* t);
/** True when t's strides are the contiguous ones (size-1 dims ignored). */
bool runtime_tensor_is_contiguous(const runtime_tensor* t);
/** Copies src's elements into dst's memory (same dtype and shape, any
 * strides; dst->data is written). */
void runtime_tensor_copy(const runtime_tensor* src, const runtime_tensor* dst);

/** Convolution geometry shared by the cpu and cuda conv externs (conv_geom.c):
 * INTS attribute `name` of conv node n (1 or nsp values; symbolic entries
 * evaluated with syms) into out[2] in (h, w) order; a 1-D op (nsp 1) keeps h
 * at dflt; a missing attribute gives dflt for both. Errors: sym_eval's. */
ptc_status runtime_conv_spatial_attr(const gnode* n, const char* name, const int64_t* syms,
                                     size_t n_syms, int32_t nsp, int64_t dflt, int64_t* out);
/** View t as [N, C, H, W] into shape/strides (4 entries): a unit batch dim
 * when !batched, a unit H for 1-D (nsp 1). */
void runtime_conv_as_4d(const runtime_tensor* t, int32_t nsp, bool batched, int64_t* shape,
                        int64_t* strides);

/** Runs graph node `node` of `g` on concrete memory: with its ref kernel
 * (backends/ref), or through runtime_custom_run for a host-registered op.
 * `in[k]` describes node input k (data NULL for an absent optional input),
 * `out[k]` output k with the shapes already evaluated; outputs may have any
 * strides (a contiguous temporary is used when needed). `sym_values` are
 * the graph's symbol values, `seed` the run seed. Errors are prefixed with
 * the node name. Reentrant. */
ptc_status runtime_fallback_run(ptc_context* ctx, const ptc_graph* g, uint32_t node,
                                const runtime_tensor* in, size_t n_in,
                                const runtime_tensor* out, size_t n_out,
                                const int64_t* sym_values, size_t n_syms, uint64_t seed);

/** True if `op` is a host-registered op (ptc_register_extern_op). */
bool runtime_is_custom_op(const struct op_def* op);
/** Calls the host function of custom node `n` through libffi with the
 * argument list of its registration. Inputs are made contiguous (copies)
 * when they are not; outputs that are not contiguous are written through a
 * temporary. Reentrant (the call interface is prepared at registration). */
ptc_status runtime_custom_run(ptc_context* ctx, const gnode* n, const runtime_tensor* in,
                              size_t n_in, const runtime_tensor* out, size_t n_out);

#endif /* PTC_LIB_RUNTIME_BACKEND_H */
