/* decomp_moments.c - mean as sum / n, and var, std, var_mean in two passes
 * (the mean, then the sum of squared deviations divided by
 * max(0, n - correction)); half inputs compute in f32. */
#include "decomp_internal.h"

/* x converted to the op's dtype (ATen converts first when `dtype` is
 * given), then to the compute dtype. */
static ptc_value compute_input(dctx* d, int32_t od) {
  return dx_cast(d, dx_cast(d, dx_in(d, 0), od), dx_acc(od));
}

ptc_status decomp_mean(dctx* d) {
  int32_t od = dx_out_dtype(d, 0);
  bool mask[PTC_MAX_RANK + 1];
  dx_dims_mask(d, dx_rank(d, dx_in(d, 0)), mask);
  ptc_value m = dx_mean(d, compute_input(d, od), mask, dx_bool(d, "keepdim", false));
  return dx_finish(d, dx_cast(d, m, od));
}

/* `correction`, else `unbiased` (default true) as 1 or 0. */
static double correction(const dctx* d) {
  if (dx_attr(d, "correction")) return dx_float(d, "correction", 1.0);
  return dx_bool(d, "unbiased", true) ? 1.0 : 0.0;
}

/* Variance of the source node's input over its dims; *mean_k gets the mean
 * with the reduced dims kept. */
static ptc_value variance(dctx* d, ptc_value* mean_k) {
  int32_t od = dx_out_dtype(d, 0);
  bool mask[PTC_MAX_RANK + 1];
  dx_dims_mask(d, dx_rank(d, dx_in(d, 0)), mask);
  ptc_value xc = compute_input(d, od);
  *mean_k = dx_mean(d, xc, mask, true);
  ptc_value dev = dx_binary(d, "sub", xc, *mean_k);
  ptc_value ss = dx_reduce(d, "sum", dx_binary(d, "mul", dev, dev), mask,
                           dx_bool(d, "keepdim", false));
  return dx_div_count(d, ss, xc, mask, correction(d));
}

ptc_status decomp_var(dctx* d) {
  ptc_value m;
  ptc_value v = variance(d, &m);
  return dx_finish(d, dx_cast(d, v, dx_out_dtype(d, 0)));
}

ptc_status decomp_std(dctx* d) {
  ptc_value m;
  ptc_value v = variance(d, &m);
  return dx_finish(d, dx_cast(d, dx_unary(d, "sqrt", v), dx_out_dtype(d, 0)));
}

/* Outputs (var, mean); the mean drops the reduced dims unless keepdim. */
ptc_status decomp_var_mean(dctx* d) {
  ptc_value m;
  ptc_value v = variance(d, &m);
  if (!dx_bool(d, "keepdim", false)) {
    uint32_t r;
    const sym_expr** sh = dx_out_shape(d, 1, &r);
    if (sh) m = dx_reshape(d, m, r, sh);
  }
  d->out[1] = dx_cast(d, m, dx_out_dtype(d, 1));
  return dx_finish(d, dx_cast(d, v, dx_out_dtype(d, 0)));
}
