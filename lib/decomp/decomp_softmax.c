/* decomp_softmax.c - softmax, log_softmax and logsumexp as max-shifted
 * exp / sum / log compositions, computed in f32 for half inputs. */
#include "decomp_internal.h"

/* True when a dim reduced by mask is statically empty (amax would fail). */
static bool reduces_empty(const dctx* d, ptc_value x, const bool* mask) {
  for (uint32_t i = 0; i < dx_rank(d, x); i++)
    if (mask[i] && dx_dim_is_zero(d, x, i)) return true;
  return false;
}

/* softmax(x) = exp(x - max) / sum(exp(x - max)); log_softmax(x) =
 * (x - max) - log(sum(exp(x - max))). With `dtype`, x is converted first. */
static ptc_status along_dim(dctx* d, bool log) {
  ptc_value x = dx_in(d, 0);
  int32_t od = dx_out_dtype(d, 0);
  uint32_t r = dx_rank(d, x), dim = dx_norm_dim(dx_int(d, "dim", -1), r);
  bool mask[PTC_MAX_RANK + 1] = {false};
  mask[dim] = r > 0;
  if (reduces_empty(d, x, mask)) return dx_finish(d, dx_cast(d, x, od)); /* no elements */
  ptc_value xc = dx_cast(d, dx_cast(d, x, od), dx_acc(od));
  ptc_value sh = dx_binary(d, "sub", xc, dx_reduce(d, "amax", xc, mask, true));
  ptc_value e = dx_unary(d, "exp", sh);
  ptc_value s = dx_reduce(d, "sum", e, mask, true);
  ptc_value y = log ? dx_binary(d, "sub", sh, dx_unary(d, "log", s)) : dx_binary(d, "div", e, s);
  return dx_finish(d, dx_cast(d, y, od));
}

ptc_status decomp_softmax(dctx* d) { return along_dim(d, false); }
ptc_status decomp_log_softmax(dctx* d) { return along_dim(d, true); }

/* log(sum(exp(x - m))) + m with m = amax(x), or 0 where it is infinite
 * (ATen's shift); an empty reduction has no max and gives log(0) = -inf. */
ptc_status decomp_logsumexp(dctx* d) {
  ptc_value x = dx_in(d, 0);
  int32_t od = dx_out_dtype(d, 0), cd = dx_acc(od);
  bool keep = dx_bool(d, "keepdim", false), mask[PTC_MAX_RANK + 1];
  dx_dims_mask(d, dx_rank(d, x), mask);
  ptc_value xc = dx_cast(d, x, cd);
  if (reduces_empty(d, x, mask))
    return dx_finish(d, dx_cast(d, dx_unary(d, "log", dx_reduce(d, "sum", dx_unary(d, "exp", xc),
                                                                 mask, keep)), od));
  ptc_value m = dx_reduce(d, "amax", xc, mask, true);
  m = dx_where(d, dx_unary(d, "isinf", m), dx_full(d, 0, cd), m);
  ptc_value s = dx_reduce(d, "sum", dx_unary(d, "exp", dx_binary(d, "sub", xc, m)), mask, keep);
  if (!keep) {
    uint32_t r;
    const sym_expr** sh = dx_out_shape(d, 0, &r);
    if (sh) m = dx_reshape(d, m, r, sh);
  }
  return dx_finish(d, dx_cast(d, dx_binary(d, "add", dx_unary(d, "log", s), m), od));
}
