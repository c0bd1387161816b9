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
} backend_vtable;

/** Built-in backends (NULL-terminated lookup). */
const backend_vtable* backend_find(const char* name);
size_t backend_count(void);
const backend_vtable* backend_at(size_t i);

/** The reference backend's table (backends/ref/ref_exec.c). */
extern const backend_vtable ptc_ref_backend;

/** Checks the inputs against the graph (count, device, rank, dtype, static
 * sizes, symbol consistency, guards) and fills sym_values[n_syms] (n_syms =
 * sym_num_vars(g->env)). Error messages name the input and dim:
 * "input 0 dim 1: expected 128, got 64". */
ptc_status runtime_bind_inputs(const ptc_graph* g, const ptc_tensor* inputs, size_t n_in,
                               int64_t* sym_values, size_t n_syms);
/** Evaluates value v's shape with the bound symbols into shape[rank]. */
ptc_status runtime_value_shape(const ptc_graph* g, ptc_value v, const int64_t* sym_values,
                               size_t n_syms, int64_t* shape);

#endif /* PTC_LIB_RUNTIME_BACKEND_H */
