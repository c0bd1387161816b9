/* ref.h - the reference interpreter's kernel interface (internal).
 *
 * The ref backend runs a graph node by node on the CPU. Every op has a
 * kernel in one of the family tables (ref_kernels_<family>[] in
 * ref_<family>.c). Before a kernel runs, the executor has evaluated the
 * node's output shapes from the meta shapes with the run's concrete symbol
 * values and allocated every output contiguous - view ops included: graphs
 * are functional (no op mutates its inputs), so a view kernel writes a copy.
 * The executor frees each buffer after its last use.
 *
 * Kernels read elements through the typed load/store helpers, which convert
 * between storage dtypes and the compute types: floating values are computed
 * in double and rounded once to the output dtype (f16/bf16 round to nearest
 * even); integers and bools in int64 with wrap-around on store.
 */
#ifndef PTC_REF_H
#define PTC_REF_H

#include "../../lib/core/core.h"
#include "../../lib/graph/graph.h"
#include "../../lib/graph/op.h"

typedef struct ref_tensor {
  void* data;                 /* points at element 0 (offset applied) */
  int32_t dtype;
  int32_t rank;
  int64_t shape[PTC_MAX_RANK];
  int64_t strides[PTC_MAX_RANK]; /* elements; 0 for broadcast dims */
} ref_tensor;

typedef struct ref_call {
  ptc_context* ctx;
  const gnode* node;
  const gattrs* attrs;
  size_t n_in;
  const ref_tensor* const* in;  /* in[i] NULL for an absent optional input */
  size_t n_out;
  ref_tensor* out;              /* out[0..n_out): allocated, contiguous */
  uint64_t seed;                /* run seed (rand ops without a seed attr) */
  uint64_t node_index;          /* node position: RNG stream offset */
  const int64_t* sym_values;    /* concrete value of each symbol this run */
  size_t n_sym_values;
  const sym_env* env;
} ref_call;

typedef ptc_status (*ref_kernel_fn)(ref_call* c);

typedef struct ref_kernel_entry {
  const char* op;
  ref_kernel_fn fn;
} ref_kernel_entry;

/* Family tables, one per file. */
extern const ref_kernel_entry ref_kernels_elementwise[];
extern const size_t ref_kernels_elementwise_count;
extern const ref_kernel_entry ref_kernels_reduce[];
extern const size_t ref_kernels_reduce_count;
extern const ref_kernel_entry ref_kernels_nn[];
extern const size_t ref_kernels_nn_count;
extern const ref_kernel_entry ref_kernels_shape[];
extern const size_t ref_kernels_shape_count;

/** Kernel for an op name, or NULL. */
ref_kernel_fn ref_find_kernel(const char* op);

/* ---- element access (ref_tensor.c) --------------------------------------------- */
double ref_load_f(const ref_tensor* t, int64_t elem_offset);
int64_t ref_load_i(const ref_tensor* t, int64_t elem_offset);
void ref_store_f(ref_tensor* t, int64_t elem_offset, double v);
void ref_store_i(ref_tensor* t, int64_t elem_offset, int64_t v);
/** Stores a double into any dtype with ATen's conversion (float->int truncates
 * toward zero, ->bool is v != 0). ref_store_i likewise for ints. */

int64_t ref_numel(const ref_tensor* t);
/** Element offset of a multi-index. */
int64_t ref_offset(const ref_tensor* t, const int64_t* idx);
/** Broadcast view of `t` to rank/shape (leading dims added with stride 0,
 * size-1 dims get stride 0). Assumes compatibility (checked by meta). */
void ref_broadcast_to(const ref_tensor* t, int32_t rank, const int64_t* shape,
                      ref_tensor* out);
/** Advances a multi-index over shape (row-major); returns false at the end. */
bool ref_next_index(int32_t rank, const int64_t* shape, int64_t* idx);
/** Allocates a contiguous tensor through the context (zeroed); caller frees with
 * ref_tensor_free. Used for temporaries inside kernels. */
ptc_status ref_tensor_alloc(ptc_context* ctx, int32_t dtype, int32_t rank,
                            const int64_t* shape, ref_tensor* out);
void ref_tensor_free(ptc_context* ctx, ref_tensor* t);
void ref_contiguous_strides(int32_t rank, const int64_t* shape, int64_t* strides);

/* attributes (already validated at graph build time) */
int64_t ref_attr_int(const ref_call* c, const char* name, int64_t dflt);
double ref_attr_float(const ref_call* c, const char* name, double dflt);
bool ref_attr_bool(const ref_call* c, const char* name, bool dflt);
const char* ref_attr_str(const ref_call* c, const char* name, const char* dflt);
int32_t ref_attr_dtype(const ref_call* c, const char* name, int32_t dflt);
bool ref_attr_has(const ref_call* c, const char* name);
/** INTS attribute evaluated to concrete values (symbolic entries resolved
 * with the run's symbol values); *n = 0 if absent. cap-limited. */
size_t ref_attr_ints(const ref_call* c, const char* name, int64_t* out, size_t cap);
/** Normalised dim (meta already validated the range). */
int32_t ref_norm_dim(int64_t dim, int32_t rank);

/* ---- counter-based RNG (ref_random.c): Philox4x32-10 ------------------------- */
/** Four 32-bit random words for (seed, stream, counter). */
void ref_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]);
/** Uniform [0,1) float from element index i of stream. */
double ref_uniform(uint64_t seed, uint64_t stream, uint64_t i);
/** Standard normal (Box-Muller on two uniforms) for element i. */
double ref_normal(uint64_t seed, uint64_t stream, uint64_t i);

#endif /* PTC_REF_H */
