/* decomp_pointwise.c - pointwise composites: gelu (erf and tanh forms) and
 * silu through erf/tanh/sigmoid (f32 for half inputs), clamp as maximum
 * then minimum, masked_fill as where, dropout (inference) as identity. */
#include "decomp_internal.h"

#include <math.h>
#include <string.h>

#define SQRT1_2 0.70710678118654752440    /* 1/sqrt(2) */
#define SQRT_2_PI 0.79788456080286535588  /* sqrt(2/pi) */

/* gelu(x) = x/2 * (1 + erf(x/sqrt(2))), or with approximate="tanh"
 * x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))). */
ptc_status decomp_gelu(dctx* d) {
  int32_t od = dx_out_dtype(d, 0);
  ptc_value x = dx_cast(d, dx_in(d, 0), dx_acc(od));
  const gattr* a = dx_attr(d, "approximate");
  ptc_value t;
  if (a && a->s && strcmp(a->s, "tanh") == 0) {
    ptc_value x3 = dx_binary(d, "mul", dx_binary(d, "mul", x, x), x);
    ptc_value in = dx_binary(d, "add", x, dx_scalar(d, "mul", x3, 0.044715));
    t = dx_unary(d, "tanh", dx_scalar(d, "mul", in, SQRT_2_PI));
  } else {
    t = dx_unary(d, "erf", dx_scalar(d, "mul", x, SQRT1_2));
  }
  ptc_value y = dx_binary(d, "mul", dx_scalar(d, "mul", x, 0.5), dx_scalar(d, "add", t, 1.0));
  return dx_finish(d, dx_cast(d, y, od));
}

/* silu(x) = x * sigmoid(x). */
ptc_status decomp_silu(dctx* d) {
  int32_t od = dx_out_dtype(d, 0);
  ptc_value x = dx_cast(d, dx_in(d, 0), dx_acc(od));
  return dx_finish(d, dx_cast(d, dx_binary(d, "mul", x, dx_unary(d, "sigmoid", x)), od));
}

/* clamp = minimum(maximum(x, min), max) with every operand converted to the
 * result dtype first (as ATen does); a NaN scalar bound is ignored. */
ptc_status decomp_clamp(dctx* d) {
  static const char* const names[2] = {"min", "max"};
  static const char* const ops[2] = {"maximum", "minimum"};
  int32_t od = dx_out_dtype(d, 0);
  ptc_value y = dx_cast(d, dx_in(d, 0), od);
  for (uint32_t k = 0; k < 2; k++) {
    ptc_value t = dx_in(d, k + 1);
    const gattr* a = dx_attr(d, names[k]);
    if (t != PTC_VALUE_NONE)
      y = dx_binary(d, ops[k], y, dx_cast(d, t, od));
    else if (a && !(a->type == PTC_ATTR_FLOAT && isnan(a->f)))
      y = dx_scalar_attr(d, ops[k], y, "other", a);
  }
  return dx_finish(d, dx_cast(d, y, od));
}

/* where(mask, value, self), the value converted to self's dtype. */
ptc_status decomp_masked_fill(dctx* d) {
  int32_t od = dx_out_dtype(d, 0);
  ptc_value v = dx_in(d, 2);
  const gattr* a = dx_attr(d, "value");
  if (v != PTC_VALUE_NONE)
    v = dx_cast(d, v, od);
  else if (a)
    v = dx_full_attr(d, a, od);
  else
    return PTC_ERR(INTERNAL, "masked_fill without a value");
  return dx_finish(d, dx_where(d, dx_in(d, 1), v, dx_in(d, 0)));
}

/* Inference-mode dropout is the identity (training mode is refused by the
 * op's meta function). */
ptc_status decomp_dropout(dctx* d) { return dx_finish(d, dx_in(d, 0)); }
