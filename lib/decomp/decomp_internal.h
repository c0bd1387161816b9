/* decomp_internal.h - the decomposition functions of each family file and
 * the table that names them (private to lib/decomp). */
#ifndef PTC_LIB_DECOMP_INTERNAL_H
#define PTC_LIB_DECOMP_INTERNAL_H

#include "decomp_build.h"

typedef struct decomp_entry {
  const char* op;
  decomp_fn fn;
} decomp_entry;

/** The table (decomp_table.c); NULL when `op` has no decomposition. */
decomp_fn decomp_find(const char* op);

/* decomp_softmax.c */
ptc_status decomp_softmax(dctx* d);
ptc_status decomp_log_softmax(dctx* d);
ptc_status decomp_logsumexp(dctx* d);
/* decomp_moments.c */
ptc_status decomp_mean(dctx* d);
ptc_status decomp_var(dctx* d);
ptc_status decomp_std(dctx* d);
ptc_status decomp_var_mean(dctx* d);
/* decomp_norm.c */
ptc_status decomp_layer_norm(dctx* d);
ptc_status decomp_rms_norm(dctx* d);
ptc_status decomp_group_norm(dctx* d);
ptc_status decomp_batch_norm(dctx* d);
/* decomp_pointwise.c */
ptc_status decomp_gelu(dctx* d);
ptc_status decomp_silu(dctx* d);
ptc_status decomp_clamp(dctx* d);
ptc_status decomp_masked_fill(dctx* d);
ptc_status decomp_dropout(dctx* d);
/* decomp_nn.c */
ptc_status decomp_sdpa(dctx* d);
ptc_status decomp_addmm(dctx* d);
ptc_status decomp_baddbmm(dctx* d);
/* decomp_shape.c */
ptc_status decomp_flatten(dctx* d);
ptc_status decomp_unflatten(dctx* d);

#endif /* PTC_LIB_DECOMP_INTERNAL_H */
