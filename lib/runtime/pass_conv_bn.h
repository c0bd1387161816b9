/* pass_conv_bn.h - folding inference batch_norm into the convolution that
 * feeds it (internal; run by ptc_compile before the backend sees the
 * graph). */
#ifndef PTC_LIB_RUNTIME_PASS_CONV_BN_H
#define PTC_LIB_RUNTIME_PASS_CONV_BN_H

#include "../graph/graph.h"

/** What pass_conv_bn folds. */
typedef enum conv_bn_mode {
  CONV_BN_OFF = 0,
  CONV_BN_CONSTANTS = 1, /* only pairs whose weights and parameters are constants */
  CONV_BN_ALL = 2        /* also parameters that are graph inputs (computed per run) */
} conv_bn_mode;

/** The mode ptc_compile runs pass_conv_bn with for backend `backend` and
 * options `o`: OFF for "ref" (the reference interpreter computes each op as
 * written) and with o->disable_fusion (the no-fusion baseline); else from
 * the environment variable PTC_FOLD_CONV_BN: "0" OFF, "1" or "all" ALL,
 * unset or anything else CONSTANTS. Thread-safe. */
conv_bn_mode pass_conv_bn_mode(const char* backend, const ptc_compile_options* o);

/** Rewrites every conv1d/conv2d -> batch_norm(training=false) pair whose
 * convolution output has no other use (and is no graph output) into one
 * convolution with weight W * s and bias (b - running_mean) * s + beta,
 * s = weight_bn * rsqrt(running_var + eps) broadcast over output channels
 * (mode CONV_BN_CONSTANTS: only pairs whose weight, bias and batch_norm
 * parameters are all constants; CONV_BN_OFF: nothing).
 * The fold is written as ordinary nodes before the convolution; when every
 * parameter is a constant they are evaluated now with the "ref" backend
 * and the convolution takes the results as constants.
 *
 * Ownership: on a change *g is replaced by the rewritten graph (same
 * context; inputs and outputs in the same order, names and shapes) and the
 * old graph is destroyed, its owned constant data moving to the new one;
 * otherwise *g is left as it is. *folded (may be NULL) gets the number of
 * pairs folded. Graphs with size symbols are left alone (the replay would
 * not carry their recorded guards).
 * Errors: RESOURCE_EXHAUSTED, and building/evaluation errors prefixed
 * "conv-bn fold"; on error *g is unchanged.
 * Thread-safety: *g must not be used by other threads during the call. */
ptc_status pass_conv_bn(ptc_graph** g, conv_bn_mode mode, size_t* folded);

#endif /* PTC_LIB_RUNTIME_PASS_CONV_BN_H */
