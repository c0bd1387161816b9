/* cuda_attn_match.h - written-out attention rewritten into
 * scaled_dot_product_attention for the cuda backend (internal), so that the
 * fused attention kernels (cuda_attn.c) run it instead of a materialised
 * score matrix. */
#ifndef PTC_BACKENDS_CUDA_ATTN_MATCH_H
#define PTC_BACKENDS_CUDA_ATTN_MATCH_H

#include "../../lib/graph/graph.h"

/** Looks for the written-out attention pattern in `g`:
 *
 *   out = matmul(softmax(S, dim=-1)[, dropout in inference], v)
 *   S   = Z | Z * c | Z / c                      (c a scalar attribute)
 *         [then masked_fill(., m, -inf) or + M]  (m bool, M of S's dtype)
 *   Z   = matmul(q, kT)                          (matmul, or bmm of rank 3)
 *
 * where kT is k with its last two dims swapped (a transpose / permute node,
 * else any tensor, transposed back), every intermediate (Z, the scaled and
 * masked scores, the probabilities) has exactly one use and is no graph
 * output, and q, k, v, the scores and out share one floating dtype, with
 * ranks >= 2 and the mask broadcasting to the scores without growing them.
 * Each match becomes scaled_dot_product_attention(q, k, v[, mask], scale=c
 * or 1/c or 1): a bool mask is the negation of m (logical_not(b) gives b
 * itself), an additive mask is M. A bool mask that is a graph constant
 * (through slices starting at 0 with step 1) equal to the causal lower
 * triangle (key j kept iff j <= query i, for every batch entry) becomes
 * is_causal instead. Semantics are those of the pattern up to rounding,
 * except for rows with every score masked by -inf: the pattern gives NaN
 * there, sdpa gives zeros (as Inductor's rewrite into sdpa does).
 *
 * Then every scaled_dot_product_attention node (rewritten or not) whose
 * mask is boolean, of static shape, and computed from no graph input (no
 * random op: aranges, ones, constants, as Hugging Face's masking utilities
 * build the causal mask under torch.compile) has its mask evaluated on the
 * host once (the ref backend; at most 2^24 elements) and, when that is
 * exactly key j kept iff j <= query i for every batch entry, the node
 * becomes sdpa(q, k, v, is_causal) without the mask (the same result: a
 * causal row always keeps key 0). A failed evaluation leaves the node.
 *
 * The rewrite is only made when the result keeps its sdpa nodes whole on
 * this backend (cuda_attn_graph_ok) and `g` itself passes that check;
 * PTC_CUDA_ATTN_MATCH=0 in the environment turns both rewrites off.
 *
 * *out: a new graph (owned by the caller; its constants point at g's data,
 * so g must outlive it) with the matches rewritten and the dead nodes
 * removed, or NULL when nothing was rewritten (use g). *n_rewritten (may be
 * NULL) gets the number of patterns and causal masks rewritten.
 * Errors: RESOURCE_EXHAUSTED and graph-building errors (INTERNAL). Reads g
 * only; thread-safe. */
ptc_status cuda_attn_match(const ptc_graph* g, ptc_graph** out, size_t* n_rewritten);

#endif /* PTC_BACKENDS_CUDA_ATTN_MATCH_H */
