/* decomp_build.h - the emitter used by decomposition functions (private to
 * lib/decomp).
 *
 * A decomposition reads its source node (inputs already mapped into the
 * destination graph, attributes as stored) and emits replacement nodes
 * with the dx_* calls, which add nodes through ptc_graph_add_node. Errors
 * are sticky: the first failure is kept in d->err and every later dx_* call
 * returns PTC_VALUE_NONE without doing anything, so a decomposition reads
 * top to bottom like the formula it implements and checks once at the end
 * (dx_finish).
 */
#ifndef PTC_LIB_DECOMP_BUILD_H
#define PTC_LIB_DECOMP_BUILD_H

#include "replay.h"

#define DX_MAX_OUT 4

typedef struct dctx {
  ptc_graph* g;              /* destination graph */
  const ptc_graph* src;      /* source graph */
  const gnode* node;         /* source node being decomposed */
  const ptc_value* in;       /* node inputs in g (PTC_VALUE_NONE when absent) */
  uint32_t n_in;
  ptc_value out[DX_MAX_OUT]; /* replacement of each source output */
  ptc_arena* scratch;        /* attribute arrays */
  ptc_status err;            /* first error (sticky) */
  bool declined;             /* the function left the node as it is */
} dctx;

/* A decomposition: fills d->out[0..node->n_out) or sets d->declined. */
typedef ptc_status (*decomp_fn)(dctx* d);

/* ---- source node ----------------------------------------------------------- */
const gattr* dx_attr(const dctx* d, const char* name);
int64_t dx_int(const dctx* d, const char* name, int64_t dflt);
double dx_float(const dctx* d, const char* name, double dflt);
bool dx_bool(const dctx* d, const char* name, bool dflt);
int32_t dx_dtype_attr(const dctx* d, const char* name, int32_t dflt);
/** Input i in g, PTC_VALUE_NONE when absent. */
ptc_value dx_in(const dctx* d, uint32_t i);
/** dtype of source output k. */
int32_t dx_out_dtype(const dctx* d, uint32_t k);
/** Shape of source output k, expressed in g's env (NULL on OOM: sets err). */
const sym_expr** dx_out_shape(dctx* d, uint32_t k, uint32_t* rank);
/** Reduced dims of a rank-`rank` input from attribute "dim" (INT or INTS;
 * absent or empty = all), as ATen's reductions read it. */
void dx_dims_mask(const dctx* d, uint32_t rank, bool* mask);
/** Dim `dim` (may be negative) normalised against rank (0 for rank 0). */
uint32_t dx_norm_dim(int64_t dim, uint32_t rank);

/* ---- values of g -------------------------------------------------------------- */
int32_t dx_dtype(const dctx* d, ptc_value v);
uint32_t dx_rank(const dctx* d, ptc_value v);
const sym_expr* const* dx_shape(const dctx* d, ptc_value v);
/** True when dim `dim` of v is statically 0. */
bool dx_dim_is_zero(const dctx* d, ptc_value v, uint32_t dim);
/** Compute dtype of floating work on dtype dt: f32 for f16/bf16, else dt. */
int32_t dx_acc(int32_t dt);

/* ---- emitters (sticky errors) ----------------------------------------------------- */
/** One node with one output. */
ptc_value dx_op(dctx* d, const char* op, const ptc_value* in, size_t n_in, const ptc_attr* a,
                size_t n_attrs);
ptc_value dx_unary(dctx* d, const char* op, ptc_value x);
ptc_value dx_binary(dctx* d, const char* op, ptc_value x, ptc_value y);
/** where(c, x, y). */
ptc_value dx_where(dctx* d, ptc_value c, ptc_value x, ptc_value y);
/** op(x, other = c) with a Python-float scalar. */
ptc_value dx_scalar(dctx* d, const char* op, ptc_value x, double c);
/** A stored int/bool/float attribute as a public one named `name` (its
 * type kept: it decides type promotion). */
ptc_attr dx_number_attr(const char* name, const gattr* a);
/** op(x, <name> = attr) keeping the stored attribute's type (int, bool or
 * float decide type promotion); `name` renames it (e.g. min -> other). */
ptc_value dx_scalar_attr(dctx* d, const char* op, ptc_value x, const char* name, const gattr* a);
/** x converted to dtype (x itself when it has that dtype already). */
ptc_value dx_cast(dctx* d, ptc_value x, int32_t dtype);
/** A 0-dim tensor of dtype filled with v. */
ptc_value dx_full(dctx* d, double v, int32_t dtype);
/** A 0-dim tensor filled with a stored scalar attribute (its type kept). */
ptc_value dx_full_attr(dctx* d, const gattr* a, int32_t dtype);
/** Reduction op over the dims set in mask[rank of x] (none set: all). */
ptc_value dx_reduce(dctx* d, const char* op, ptc_value x, const bool* mask, bool keepdim);
/** reshape(x, shape) with a possibly symbolic shape of g's env. */
ptc_value dx_reshape(dctx* d, ptc_value x, uint32_t rank, const sym_expr* const* shape);
/** v expanded to shape (a view), or v itself when its shape is that one
 * already (pointer-equal expressions). Sizes that are equal under a guard
 * keep v's expressions. */
ptc_value dx_expand_to(dctx* d, ptc_value v, uint32_t rank, const sym_expr* const* shape);
/** transpose(x, dim0, dim1). */
ptc_value dx_transpose(dctx* d, ptc_value x, int64_t dim0, int64_t dim1);
/** A tensor of `dtype` filled with `v` of a possibly symbolic shape. */
ptc_value dx_full_shape(dctx* d, double v, int32_t dtype, uint32_t rank,
                        const sym_expr* const* shape);

/** 0-dim tensor of dtype holding the product of sizes[n] (symbolic sizes
 * become a sum over a tensor of ones). */
ptc_value dx_numel_tensor(dctx* d, uint32_t n, const sym_expr* const* sizes, int32_t dtype);

/* ---- means ------------------------------------------------------------------------ */
/** s / max(0, n - correction), n = number of elements of x reduced by mask:
 * a scalar division when n is static, else a division by a 0-dim count
 * tensor of s's dtype. */
ptc_value dx_div_count(dctx* d, ptc_value s, ptc_value x, const bool* mask, double correction);
/** mean of x (floating) over mask: sum / n. */
ptc_value dx_mean(dctx* d, ptc_value x, const bool* mask, bool keepdim);

/** Ends a single-output decomposition: out[0] = y; returns d->err (owned
 * by the caller) and clears it. */
ptc_status dx_finish(dctx* d, ptc_value y);

#endif /* PTC_LIB_DECOMP_BUILD_H */
