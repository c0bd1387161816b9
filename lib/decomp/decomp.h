/* decomp.h - decompositions: rewriting a graph so that composite ops become
 * compositions of primitive ops (internal; used by ptc_compile for the
 * compiling backends, reusable by every later backend).
 *
 * A decomposition table maps an op name to a function that emits the
 * replacement nodes through the public graph-building calls, so every
 * emitted node is validated by its meta function. Decompositions keep the
 * exact output dtype and shape of the op they replace (checked after each
 * one) and its semantics, including ATen's dtype rules: floating work on
 * f16/bf16 tensors is done in f32 (to_dtype up, compute, to_dtype down),
 * like Inductor's upcasts; reductions that need a mean use two passes.
 *
 * Decomposed ops (the table):
 *   softmax, log_softmax      max-shifted: x - amax, exp, sum, div / log
 *   logsumexp                 amax shift (0 when the max is infinite), exp,
 *                             sum, log, add back
 *   mean                      sum / n (n static, or a count tensor when
 *                             the reduced sizes are symbolic)
 *   var, std, var_mean        two passes: mean, then the sum of squared
 *                             deviations / max(0, n - correction); sqrt
 *   layer_norm, rms_norm,     moments as above, rsqrt(var + eps), affine
 *   group_norm, batch_norm    (batch_norm: inference, running statistics)
 *   gelu (erf and tanh), silu erf/tanh/sigmoid formulas
 *   scaled_dot_product_attention
 *                             matmul with transpose, scale, causal tril
 *                             mask via where, bool mask via where or float
 *                             mask add, safe softmax (fully masked rows
 *                             give 0), matmul
 *   addmm, baddbmm            mm / bmm, then alpha * product + beta * self
 *                             (beta == 0 ignores self)
 *   clamp                     maximum then minimum with the tensor or scalar
 *                             bounds (a NaN scalar bound is ignored, as in
 *                             ATen's scalar kernel)
 *   masked_fill               where(mask, full(value), self)
 *   dropout                   identity (only inference mode exists)
 *   flatten, unflatten        reshape
 *
 * The primitive set the lowering can rely on after decomp_graph: every
 * registered op except the decomposed ones above, i.e.
 *   pointwise     the unary and binary math ops (sigmoid, rsqrt, erf,
 *                 tanh, maximum, minimum included), where, to_dtype, fill,
 *                 full, zeros, ones, arange, eye, rand, randn, bernoulli
 *   reductions    sum, prod, amax, amin, argmax, argmin, any, all
 *   scans/sorts   cumsum, topk, sort
 *   externs       mm, bmm, matmul, linear (GEMM with bias epilogue),
 *                 conv1d, conv2d
 *   windowed      max_pool2d, avg_pool2d, adaptive_avg_pool2d,
 *                 interpolate, embedding, pad
 *   shape         view, reshape, permute, transpose, expand, squeeze,
 *                 unsqueeze, slice, select, narrow, as_strided, contiguous,
 *                 clone, cat, stack, split, chunk, gather, scatter,
 *                 scatter_add, index_select, index, tril, triu
 * Decompositions only emit ops of this set (a decomposed graph never
 * contains a decomposed op name).
 *
 * Thread-safety: the table is immutable; decomp_graph reads its input graph
 * and returns a new one, so distinct calls are independent.
 */
#ifndef PTC_LIB_DECOMP_H
#define PTC_LIB_DECOMP_H

#include "../graph/graph.h"

/** Replaces every op that has a decomposition by primitive ops, in a new
 * graph of the same context (*out, owned by the caller; `g` is unchanged).
 * Inputs keep their order, names and shapes; outputs their order.
 * Errors: RESOURCE_EXHAUSTED, INTERNAL (a decomposition that does not
 * reproduce its op's dtype or shape, naming both), and any building error
 * prefixed with "decomp: node <name> (<op>)". */
ptc_status decomp_graph(const ptc_graph* g, ptc_graph** out);

/** Options of decomp_graph_ex (zero-initialise, then set fields). */
typedef struct decomp_options {
  /** Only ops for which want(user, op) returns true are decomposed (a
   * backend with its own kernel for an op keeps it); NULL = all. */
  bool (*want)(void* user, const char* op);
  /** Optional, asked after want: false keeps node n of g (the source
   * graph) whole, e.g. by its shapes; NULL = every node want accepts. */
  bool (*want_node)(void* user, const ptc_graph* g, const gnode* n);
  void* user;
  /** Constants of the result point at g's data instead of being copied:
   * g must then outlive the result (e.g. a backend decomposing the
   * executable's own snapshot), which saves a copy of the weights. */
  bool borrow_constants;
} decomp_options;

/** decomp_graph with options (`o` may be NULL for the defaults). */
ptc_status decomp_graph_ex(const ptc_graph* g, const decomp_options* o, ptc_graph** out);

/** True if `op` has a decomposition in the table. Thread-safe. */
bool decomp_has(const char* op);
/** Number of table entries and the op name of entry i (NULL out of range). */
size_t decomp_count(void);
const char* decomp_op_at(size_t i);

#endif /* PTC_LIB_DECOMP_H */
