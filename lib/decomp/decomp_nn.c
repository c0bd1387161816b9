/* decomp_nn.c - scaled_dot_product_attention as matmul, scale, masks and a
 * safe softmax; addmm / baddbmm as mm / bmm plus a scaled add. Half inputs
 * compute in f32 except the plain matrix products. */
#include "decomp_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- attention --------------------------------------------------------------- */

/* scores * scale: the `scale` attribute, else 1/sqrt(E) (E = query's last
 * dim; a 0-dim tensor when E is symbolic). */
static ptc_value scale_scores(dctx* d, ptc_value s, ptc_value q) {
  const gattr* a = dx_attr(d, "scale");
  if (a) return dx_scalar_attr(d, "mul", s, "other", a);
  if (d->err) return PTC_VALUE_NONE;
  const sym_expr* e = dx_shape(d, q)[dx_rank(d, q) - 1];
  int64_t n;
  if (sym_is_const(e, &n)) return dx_scalar(d, "mul", s, 1.0 / sqrt((double)n));
  return dx_binary(d, "mul", dx_unary(d, "rsqrt", dx_numel_tensor(d, 1, &e, dx_dtype(d, s))), s);
}

/* Causal (top-left aligned: key j > query i is dropped, a triu above the
 * diagonal over [L, S]) and attn_mask: dropped scores become -inf; a
 * floating mask is added. The scores go last in where/add so that their
 * sizes win in broadcasting. */
static ptc_value mask_scores(dctx* d, ptc_value s, ptc_value q, ptc_value k, int32_t cd) {
  ptc_value mask = dx_in(d, 3);
  if (dx_bool(d, "is_causal", false) && !d->err) {
    const sym_expr* ls[2] = {dx_shape(d, q)[dx_rank(d, q) - 2], dx_shape(d, k)[dx_rank(d, k) - 2]};
    ptc_attr diag = ptc_attr_int("diagonal", 1);
    ptc_value ones = dx_full_shape(d, 1, PTC_BOOL, 2, ls);
    ptc_value drop = dx_op(d, "triu", &ones, 1, &diag, 1);
    s = dx_where(d, drop, dx_full(d, -INFINITY, cd), s);
  }
  if (mask == PTC_VALUE_NONE || d->err) return s;
  if (dx_dtype(d, mask) == PTC_BOOL)
    return dx_where(d, dx_unary(d, "logical_not", mask), dx_full(d, -INFINITY, cd), s);
  return dx_binary(d, "add", dx_cast(d, mask, cd), s);
}

/* Softmax over the last dim where a row with no finite score gives zeros
 * (the max shift is 0 when the max is -inf; 0/0 rows become 0). */
static ptc_value safe_softmax(dctx* d, ptc_value s, int32_t cd) {
  if (d->err) return PTC_VALUE_NONE;
  bool mask[PTC_MAX_RANK + 1] = {false};
  mask[dx_rank(d, s) - 1] = true;
  ptc_value zero = dx_full(d, 0, cd);
  ptc_value m = dx_reduce(d, "amax", s, mask, true);
  m = dx_where(d, dx_scalar(d, "eq", m, -INFINITY), zero, m);
  ptc_value e = dx_unary(d, "exp", dx_binary(d, "sub", s, m));
  ptc_value sum = dx_reduce(d, "sum", e, mask, true);
  return dx_where(d, dx_scalar(d, "eq", sum, 0.0), zero, dx_binary(d, "div", e, sum));
}

/* softmax(q @ k^T * scale + masks) @ v; no keys (S = 0) gives zeros. */
ptc_status decomp_sdpa(dctx* d) {
  int32_t od = dx_out_dtype(d, 0), cd = dx_acc(od);
  ptc_value q = dx_cast(d, dx_in(d, 0), cd), k = dx_cast(d, dx_in(d, 1), cd);
  ptc_value v = dx_cast(d, dx_in(d, 2), cd);
  if (!d->err && dx_dim_is_zero(d, k, dx_rank(d, k) - 2)) {
    uint32_t r;
    const sym_expr** sh = dx_out_shape(d, 0, &r);
    return dx_finish(d, sh ? dx_full_shape(d, 0, od, r, sh) : PTC_VALUE_NONE);
  }
  ptc_value s = dx_binary(d, "matmul", q, dx_transpose(d, k, -2, -1));
  s = mask_scores(d, scale_scores(d, s, q), q, k, cd);
  ptc_value o = dx_binary(d, "matmul", safe_softmax(d, s, cd), v);
  return dx_finish(d, dx_cast(d, o, od));
}

/* ---- matrix products with a scaled add ------------------------------------------- */

/* alpha * (in1 `mm` in2) + beta * in0; beta == 0 ignores in0 (NaN too).
 * With alpha == 1 the sum is one add(product, in0, alpha=beta) in the output
 * dtype (an f16/bf16 add computes in f32 and rounds once, so the value is
 * the upcast one's), which the lowering folds into the GEMM as its bias
 * epilogue when in0 is a vector along the last dim (GPT-2's Conv1D
 * addmm(bias, x, W)); the casts of the general form would hide it. The
 * environment variable PTC_ADDMM_BIAS_EPILOGUE=0 keeps the general form
 * (the bias then joins the pointwise consumers: for timing both). */
static ptc_status mm_plus(dctx* d, const char* mm) {
  int32_t od = dx_out_dtype(d, 0), cd = dx_acc(od);
  const gattr* alpha = dx_attr(d, "alpha");
  const gattr* beta = dx_attr(d, "beta");
  const char* env = getenv("PTC_ADDMM_BIAS_EPILOGUE");
  bool fold = !(env && strcmp(env, "0") == 0);
  if (fold && dx_float(d, "alpha", 1.0) == 1.0 && dx_float(d, "beta", 1.0) != 0.0 &&
      dx_dtype(d, dx_in(d, 0)) == od) {
    ptc_value in[2] = {dx_binary(d, mm, dx_in(d, 1), dx_in(d, 2)), dx_in(d, 0)};
    ptc_attr a = beta ? dx_number_attr("alpha", beta) : ptc_attr_float("alpha", 1.0);
    return dx_finish(d, dx_op(d, "add", in, 2, &a, 1));
  }
  ptc_value y = dx_cast(d, dx_binary(d, mm, dx_in(d, 1), dx_in(d, 2)), cd);
  if (alpha && dx_float(d, "alpha", 1.0) != 1.0) y = dx_scalar_attr(d, "mul", y, "other", alpha);
  if (dx_float(d, "beta", 1.0) != 0.0) {
    ptc_value in[2] = {y, dx_cast(d, dx_in(d, 0), cd)};
    ptc_attr a = beta ? dx_number_attr("alpha", beta) : ptc_attr_float("alpha", 1.0);
    y = dx_op(d, "add", in, 2, &a, 1);
  }
  return dx_finish(d, dx_cast(d, y, od));
}

ptc_status decomp_addmm(dctx* d) { return mm_plus(d, "mm"); }
ptc_status decomp_baddbmm(dctx* d) { return mm_plus(d, "bmm"); }
