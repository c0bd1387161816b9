/* decomp_shape.c - flatten and unflatten as reshape to the shape their meta
 * function computed (reshape views when it can, as they do). */
#include "decomp_internal.h"

static ptc_status as_reshape(dctx* d) {
  uint32_t r;
  const sym_expr** sh = dx_out_shape(d, 0, &r);
  if (!sh) return dx_finish(d, PTC_VALUE_NONE);
  return dx_finish(d, dx_reshape(d, dx_in(d, 0), r, sh));
}

ptc_status decomp_flatten(dctx* d) { return as_reshape(d); }
ptc_status decomp_unflatten(dctx* d) { return as_reshape(d); }
