/* decomp_norm.c - layer_norm, rms_norm, group_norm and batch_norm
 * (inference) as moments, rsqrt(var + eps) and an affine step. Half inputs
 * compute in f32 (parameters converted too) and the result is cast back. */
#include "decomp_internal.h"

/* torch.finfo(dtype).eps: rms_norm's default eps. */
static double dtype_eps(int32_t dt) {
  switch (dt) {
    case PTC_F64: return 0x1p-52;
    case PTC_F16: return 0x1p-10;
    case PTC_BF16: return 0x1p-7;
    default: return 0x1p-23;
  }
}

/* Parameter p (shape [C]) converted to cd and viewed as [1, C, 1, ...] with
 * the channel size of x (rank and expressions of x, so that broadcasting
 * keeps x's symbolic sizes). */
static ptc_value channel_param(dctx* d, ptc_value p, ptc_value x, int32_t cd) {
  ptc_value v = dx_cast(d, p, cd);
  if (d->err) return PTC_VALUE_NONE;
  const sym_expr* sh[PTC_MAX_RANK];
  uint32_t r = dx_rank(d, x);
  for (uint32_t i = 0; i < r; i++)
    if (!(sh[i] = i == 1 ? dx_shape(d, x)[1] : sym_const(d->g->env, 1)) && !d->err)
      d->err = ptc_status_oom();
  return dx_reshape(d, v, r, sh);
}

/* Parameter p of shape normalized_shape converted to cd. */
static ptc_value trailing_param(dctx* d, ptc_value p, ptc_value x, int32_t cd) {
  (void)x;
  return dx_cast(d, p, cd);
}

/* y * w + b with optional parameters already shaped (NONE when absent);
 * the parameter goes first so that y's sizes win in broadcasting. */
static ptc_value affine(dctx* d, ptc_value y, ptc_value w, ptc_value b) {
  if (w != PTC_VALUE_NONE) y = dx_binary(d, "mul", w, y);
  if (b != PTC_VALUE_NONE) y = dx_binary(d, "add", b, y);
  return y;
}

/* Optional parameter i of a norm, shaped by `shape` (NONE when absent). */
static ptc_value param(dctx* d, uint32_t i, ptc_value x, int32_t cd,
                       ptc_value (*shape)(dctx*, ptc_value, ptc_value, int32_t)) {
  ptc_value p = dx_in(d, i);
  return p == PTC_VALUE_NONE ? p : shape(d, p, x, cd);
}

/* (x - mean) * rsqrt(var + eps) over mask, biased variance, in x's dtype. */
static ptc_value normalize(dctx* d, ptc_value x, const bool* mask, double eps) {
  ptc_value dev = dx_binary(d, "sub", x, dx_mean(d, x, mask, true));
  ptc_value var = dx_mean(d, dx_binary(d, "mul", dev, dev), mask, true);
  return dx_binary(d, "mul", dev, dx_unary(d, "rsqrt", dx_scalar(d, "add", var, eps)));
}

/* Mask of the last n dims of a rank-r tensor. */
static void last_dims(uint32_t r, size_t n, bool* mask) {
  for (uint32_t i = 0; i < r; i++) mask[i] = (size_t)i + n >= r;
}

ptc_status decomp_layer_norm(dctx* d) {
  ptc_value x = dx_in(d, 0);
  int32_t od = dx_out_dtype(d, 0), cd = dx_acc(od);
  const gattr* ns = dx_attr(d, "normalized_shape");
  bool mask[PTC_MAX_RANK + 1];
  last_dims(dx_rank(d, x), ns ? ns->count : 1, mask);
  ptc_value y = normalize(d, dx_cast(d, x, cd), mask, dx_float(d, "eps", 1e-5));
  y = affine(d, y, param(d, 1, x, cd, trailing_param), param(d, 2, x, cd, trailing_param));
  return dx_finish(d, dx_cast(d, y, od));
}

/* x * rsqrt(mean(x^2) + eps) * w. */
ptc_status decomp_rms_norm(dctx* d) {
  ptc_value x = dx_in(d, 0);
  int32_t od = dx_out_dtype(d, 0), cd = dx_acc(od);
  const gattr* ns = dx_attr(d, "normalized_shape");
  bool mask[PTC_MAX_RANK + 1];
  last_dims(dx_rank(d, x), ns ? ns->count : 1, mask);
  ptc_value xc = dx_cast(d, x, cd);
  ptc_value ms = dx_mean(d, dx_binary(d, "mul", xc, xc), mask, true);
  ptc_value r = dx_unary(d, "rsqrt", dx_scalar(d, "add", ms, dx_float(d, "eps", dtype_eps(od))));
  ptc_value y = affine(d, dx_binary(d, "mul", xc, r), param(d, 1, x, cd, trailing_param),
                       PTC_VALUE_NONE);
  return dx_finish(d, dx_cast(d, y, od));
}

/* [N, C, *] seen as [N, G, C/G, *], normalised over dims 2.., viewed back,
 * then the per-channel affine. */
ptc_status decomp_group_norm(dctx* d) {
  ptc_value x = dx_in(d, 0);
  int32_t od = dx_out_dtype(d, 0), cd = dx_acc(od);
  uint32_t r = dx_rank(d, x);
  int64_t groups = dx_int(d, "num_groups", 1);
  const sym_expr* const* xs = dx_shape(d, x);
  const sym_expr* gs[PTC_MAX_RANK + 1];
  bool mask[PTC_MAX_RANK + 1] = {false};
  gs[0] = xs[0];
  gs[1] = sym_const(d->g->env, groups);
  gs[2] = gs[1] ? sym_floordiv(d->g->env, xs[1], gs[1]) : NULL;
  for (uint32_t i = 2; i < r; i++) gs[i + 1] = xs[i];
  for (uint32_t i = 2; i <= r; i++) mask[i] = true;
  if ((!gs[1] || !gs[2]) && !d->err) d->err = ptc_status_oom();
  ptc_value xg = dx_reshape(d, dx_cast(d, x, cd), r + 1, gs);
  ptc_value y = dx_reshape(d, normalize(d, xg, mask, dx_float(d, "eps", 1e-5)), r, xs);
  y = affine(d, y, param(d, 1, x, cd, channel_param), param(d, 2, x, cd, channel_param));
  return dx_finish(d, dx_cast(d, y, od));
}

/* (x - running_mean) * rsqrt(running_var + eps) * w + b, per channel. */
ptc_status decomp_batch_norm(dctx* d) {
  ptc_value x = dx_in(d, 0);
  int32_t od = dx_out_dtype(d, 0), cd = dx_acc(od);
  ptc_value inv = dx_unary(d, "rsqrt", dx_scalar(d, "add", dx_cast(d, dx_in(d, 4), cd),
                                                  dx_float(d, "eps", 1e-5)));
  ptc_value y = dx_binary(d, "sub", dx_cast(d, x, cd), channel_param(d, dx_in(d, 3), x, cd));
  y = dx_binary(d, "mul", channel_param(d, inv, x, cd), y);
  y = affine(d, y, param(d, 1, x, cd, channel_param), param(d, 2, x, cd, channel_param));
  return dx_finish(d, dx_cast(d, y, od));
}
