/* ops_nn.c - meta functions and op table of the nn family: matrix products
 * (mm, bmm, matmul, addmm, linear, baddbmm), convolutions, pooling,
 * interpolation, scaled dot-product attention, embedding and constant pad.
 * Each meta function validates dtypes, ranks and attributes (errors name the
 * op, the argument and expected vs actual) and computes the output's
 * symbolic shape, following ATen's shape rules. */
#include "op.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { FLOATING = 4 }; /* meta_expect_dtype mask */

/* ---- expression builders that propagate NULL (= out of memory) ------------ */
static const sym_expr* e_add(meta_ctx* m, const sym_expr* a, const sym_expr* b) {
  return a && b ? sym_add(m->env, a, b) : NULL;
}
static const sym_expr* e_addc(meta_ctx* m, const sym_expr* a, int64_t c) {
  return a ? sym_add_c(m->env, a, c) : NULL;
}
static const sym_expr* e_mulc(meta_ctx* m, const sym_expr* a, int64_t c) {
  return a ? sym_mul_c(m->env, a, c) : NULL;
}
static const sym_expr* e_divc(meta_ctx* m, const sym_expr* a, int64_t c) {
  const sym_expr* d = sym_const(m->env, c);
  return a && d ? sym_floordiv(m->env, a, d) : NULL;
}
static const sym_expr* e_ceildivc(meta_ctx* m, const sym_expr* a, int64_t c) {
  const sym_expr* d = sym_const(m->env, c);
  return a && d ? sym_ceildiv(m->env, a, d) : NULL;
}
static const sym_expr* e_min(meta_ctx* m, const sym_expr* a, const sym_expr* b) {
  return a && b ? sym_min(m->env, a, b) : NULL;
}

/* Text of an expression for messages (arena). */
static const char* estr(meta_ctx* m, const sym_expr* e) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  sym_format_sb(m->env, e, &sb);
  const char* r = sb.oom || !sb.data ? NULL : ptc_arena_strdup(m->arena, sb.data);
  ptc_sb_free(&sb);
  return r ? r : "?";
}

/* Decides a >= c (statically, or from hints recording a guard). */
static ptc_status holds_ge(meta_ctx* m, const sym_expr* a, int64_t c, bool* ok) {
  const sym_expr* b = sym_const(m->env, c);
  if (!a || !b) return ptc_status_oom();
  ptc_status s = sym_guard(m->env, SYM_GE, a, b, ok);
  return s ? ptc_status_prefix(s, "%s", m->op->name) : PTC_OK;
}

/* ---- common input checks ---------------------------------------------------- */
/* Input i, or NULL when absent or beyond the inputs given (optional ones). */
static const meta_tensor* input(const meta_ctx* m, size_t i) {
  return i < m->n_in ? m->in[i] : NULL;
}

/* Inputs [0, n_required) must be present; present inputs [0, n_float) must be
 * floating and share the first one's dtype. names[i] is input i's ATen name. */
static ptc_status expect_inputs(const meta_ctx* m, size_t n_required, size_t n_float,
                                const char* const* names) {
  for (size_t i = 0; i < n_required; i++)
    if (!input(m, i)) return meta_fail(m, "argument '%s' is required", names[i]);
  const meta_tensor* first = NULL;
  size_t fi = 0;
  for (size_t i = 0; i < n_float; i++) {
    const meta_tensor* t = input(m, i);
    if (!t) continue;
    PTC_TRY(meta_expect_dtype(m, i, names[i], FLOATING));
    if (!first) {
      first = t;
      fi = i;
    } else if (t->dtype != first->dtype) {
      return meta_fail(m, "argument '%s' has dtype %s, expected %s (the dtype of '%s')", names[i],
                       ptc_dtype_name(t->dtype), ptc_dtype_name(first->dtype), names[fi]);
    }
  }
  return PTC_OK;
}

/* Present input i must have a rank in [lo, hi]. */
static ptc_status expect_rank(const meta_ctx* m, size_t i, const char* name, uint32_t lo,
                              uint32_t hi) {
  const meta_tensor* t = input(m, i);
  if (!t || (t->rank >= lo && t->rank <= hi)) return PTC_OK;
  if (lo == hi) return meta_fail(m, "argument '%s' must be %u-D, got %u-D", name, lo, t->rank);
  if (hi >= PTC_MAX_RANK)
    return meta_fail(m, "argument '%s' must be at least %u-D, got %u-D", name, lo, t->rank);
  return meta_fail(m, "argument '%s' must be %u-D to %u-D, got %u-D", name, lo, hi, t->rank);
}

/* Present input i must broadcast to shape[rank] without changing it. */
static ptc_status expect_broadcasts_to(meta_ctx* m, size_t i, const char* name, uint32_t rank,
                                       const sym_expr* const* shape) {
  const meta_tensor* t = input(m, i);
  if (!t) return PTC_OK;
  if (t->rank > rank)
    return meta_fail(m, "argument '%s' of shape %s does not broadcast to %s", name,
                     meta_shape_str(m, t->rank, t->shape), meta_shape_str(m, rank, shape));
  for (uint32_t d = 0; d < t->rank; d++) {
    int64_t v;
    if (sym_is_const(t->shape[d], &v) && v == 1) continue;
    char what[96];
    snprintf(what, sizeof what, "%s dim %u", name, d);
    PTC_TRY(meta_expect_eq(m, shape[d + rank - t->rank], t->shape[d], what));
  }
  return PTC_OK;
}

/* Requires equal sizes, naming "<name> dim <d>". */
static ptc_status expect_dim(meta_ctx* m, const sym_expr* expected, const char* name, uint32_t d,
                             const sym_expr* got) {
  char what[96];
  if (!expected || !got) return ptc_status_oom();
  snprintf(what, sizeof what, "%s dim %u", name, d);
  return meta_expect_eq(m, expected, got, what);
}

/* INTS attribute with 1 or nsp static elements (one is repeated), each >= lo;
 * absent or empty: dflt. */
static ptc_status read_spatial(const meta_ctx* m, const char* name, uint32_t nsp,
                               const int64_t* dflt, int64_t lo, int64_t* out) {
  int64_t v[3];
  size_t n = 0;
  PTC_TRY(meta_ints(m, name, v, 3, &n));
  if (n > nsp)
    return meta_fail(m, "attribute '%s' must have %s elements, got %zu", name,
                     nsp == 1 ? "1" : "1 or 2", n);
  for (uint32_t i = 0; i < nsp; i++) {
    out[i] = n == 0 ? dflt[i] : v[n == 1 ? 0 : i];
    if (out[i] < lo)
      return meta_fail(m, "attribute '%s' must be %s, got %lld", name,
                       lo > 0 ? "positive" : "non-negative", (long long)out[i]);
  }
  return PTC_OK;
}

static const int64_t k_zeros[2] = {0, 0};
static const int64_t k_ones[2] = {1, 1};

/* ---- matrix products ---------------------------------------------------------- */
/* mm, bmm, addmm, baddbmm: in[first] @ in[first + 1]; `batched` adds a
 * leading batch dim that must match exactly; with first == 1, in[0] (self)
 * must broadcast to the result. */
static ptc_status mm_family(meta_ctx* m, size_t first, bool batched, const char* const* names) {
  PTC_TRY(expect_inputs(m, m->n_in, m->n_in, names));
  uint32_t r = batched ? 3 : 2, b = r - 2;
  PTC_TRY(expect_rank(m, first, names[first], r, r));
  PTC_TRY(expect_rank(m, first + 1, names[first + 1], r, r));
  const meta_tensor *x = m->in[first], *y = m->in[first + 1];
  if (batched) PTC_TRY(expect_dim(m, x->shape[0], names[first + 1], 0, y->shape[0]));
  PTC_TRY(expect_dim(m, x->shape[b + 1], names[first + 1], b, y->shape[b]));
  const sym_expr* shape[3] = {x->shape[0], NULL, NULL};
  shape[b] = x->shape[b];
  shape[b + 1] = y->shape[b + 1];
  if (first == 1) PTC_TRY(expect_broadcasts_to(m, 0, names[0], r, shape));
  return meta_add_out(m, x->dtype, r, shape);
}

static ptc_status mm_meta(meta_ctx* m) {
  static const char* const names[] = {"self", "mat2"};
  return mm_family(m, 0, false, names);
}
static ptc_status bmm_meta(meta_ctx* m) {
  static const char* const names[] = {"self", "mat2"};
  return mm_family(m, 0, true, names);
}
static ptc_status addmm_meta(meta_ctx* m) {
  static const char* const names[] = {"self", "mat1", "mat2"};
  return mm_family(m, 1, false, names);
}
static ptc_status baddbmm_meta(meta_ctx* m) {
  static const char* const names[] = {"self", "batch1", "batch2"};
  return mm_family(m, 1, true, names);
}

/* torch.matmul: 1-D operands get a dim prepended (self) / appended (other)
 * that is removed from the result; batch dims broadcast. */
static ptc_status matmul_meta(meta_ctx* m) {
  static const char* const names[] = {"self", "other"};
  PTC_TRY(expect_inputs(m, 2, 2, names));
  PTC_TRY(expect_rank(m, 0, names[0], 1, PTC_MAX_RANK));
  PTC_TRY(expect_rank(m, 1, names[1], 1, PTC_MAX_RANK));
  const meta_tensor *a = m->in[0], *b = m->in[1];
  uint32_t kb = b->rank == 1 ? 0 : b->rank - 2;
  PTC_TRY(expect_dim(m, a->shape[a->rank - 1], names[1], kb, b->shape[kb]));
  uint32_t ba = a->rank >= 2 ? a->rank - 2 : 0, bb = b->rank >= 2 ? b->rank - 2 : 0, rb;
  const sym_expr** batch;
  PTC_TRY(meta_broadcast(m, ba, a->shape, bb, b->shape, &rb, &batch));
  const sym_expr* shape[PTC_MAX_RANK + 2];
  uint32_t n = 0;
  for (; n < rb; n++) shape[n] = batch[n];
  if (a->rank >= 2) shape[n++] = a->shape[a->rank - 2];
  if (b->rank >= 2) shape[n++] = b->shape[b->rank - 1];
  return meta_add_out(m, a->dtype, n, shape);
}

/* linear: input [..., in] @ weight[out, in]^T (+ bias broadcast). */
static ptc_status linear_meta(meta_ctx* m) {
  static const char* const names[] = {"input", "weight", "bias"};
  PTC_TRY(expect_inputs(m, 2, 3, names));
  PTC_TRY(expect_rank(m, 0, names[0], 1, PTC_MAX_RANK));
  PTC_TRY(expect_rank(m, 1, names[1], 2, 2));
  const meta_tensor *x = m->in[0], *w = m->in[1];
  PTC_TRY(expect_dim(m, x->shape[x->rank - 1], names[1], 1, w->shape[1]));
  const sym_expr* shape[PTC_MAX_RANK];
  for (uint32_t i = 0; i + 1 < x->rank; i++) shape[i] = x->shape[i];
  shape[x->rank - 1] = w->shape[0];
  PTC_TRY(expect_broadcasts_to(m, 2, names[2], x->rank, shape));
  return meta_add_out(m, x->dtype, x->rank, shape);
}

/* ---- convolution ------------------------------------------------------------------- */
/* Output size of one spatial dim: (in + 2*pad - dil*(k-1) - 1) // stride + 1,
 * or `in` for padding 'same'; error when the dilated kernel exceeds the
 * padded input. */
static ptc_status conv_out_size(meta_ctx* m, uint32_t i, const sym_expr* in, const sym_expr* k,
                                int64_t stride, int64_t pad, int64_t dil, bool same,
                                const sym_expr** out) {
  if (same) {
    *out = in;
    return PTC_OK;
  }
  const sym_expr* eff = e_addc(m, e_mulc(m, k, dil), 1 - dil);
  const sym_expr* padded = e_addc(m, in, 2 * pad);
  const sym_expr* room = e_add(m, padded, e_mulc(m, eff, -1));
  bool ok = false;
  PTC_TRY(holds_ge(m, room, 0, &ok));
  if (!ok)
    return meta_fail(m, "kernel size %s (dilated) is larger than the padded input size %s in "
                     "spatial dim %u", estr(m, eff), estr(m, padded), i);
  *out = e_addc(m, e_divc(m, room, stride), 1);
  return *out ? PTC_OK : ptc_status_oom();
}

/* Padding: INTS 'padding' or STRING 'padding_str' ("valid" / "same"). */
static ptc_status conv_padding(const meta_ctx* m, uint32_t nsp, const int64_t* stride,
                               int64_t* pad, bool* same) {
  const char* ps = meta_str(m, "padding_str", NULL);
  *same = false;
  PTC_TRY(read_spatial(m, "padding", nsp, k_zeros, 0, pad));
  if (!ps) return PTC_OK;
  if (meta_has(m, "padding"))
    return meta_fail(m, "give either attribute 'padding' or 'padding_str', not both");
  if (strcmp(ps, "same") == 0) {
    *same = true;
  } else if (strcmp(ps, "valid") != 0) {
    return meta_fail(m, "attribute 'padding_str' must be 'valid' or 'same', got '%s'", ps);
  }
  for (uint32_t i = 0; i < nsp && *same; i++)
    if (stride[i] != 1)
      return meta_fail(m, "padding='same' is not supported for strided convolutions");
  return PTC_OK;
}

/* conv1d / conv2d with nsp spatial dims; input batched [N, C, *] or
 * unbatched [C, *]; weight [C_out, C_in / groups, *k]; bias [C_out]. */
static ptc_status conv_meta(meta_ctx* m, uint32_t nsp) {
  static const char* const names[] = {"input", "weight", "bias"};
  PTC_TRY(expect_inputs(m, 2, 3, names));
  PTC_TRY(expect_rank(m, 0, names[0], nsp + 1, nsp + 2));
  PTC_TRY(expect_rank(m, 1, names[1], nsp + 2, nsp + 2));
  PTC_TRY(expect_rank(m, 2, names[2], 1, 1));
  int64_t stride[2], pad[2], dil[2];
  bool same;
  PTC_TRY(read_spatial(m, "stride", nsp, k_ones, 1, stride));
  PTC_TRY(read_spatial(m, "dilation", nsp, k_ones, 1, dil));
  PTC_TRY(conv_padding(m, nsp, stride, pad, &same));
  int64_t groups = meta_int(m, "groups", 1), cout;
  if (groups < 1) return meta_fail(m, "groups must be positive, got %lld", (long long)groups);
  const meta_tensor *x = m->in[0], *w = m->in[1], *bias = input(m, 2);
  uint32_t c = x->rank - nsp - 1; /* channel dim */
  PTC_TRY(expect_dim(m, e_mulc(m, w->shape[1], groups), names[0], c, x->shape[c]));
  if (sym_is_const(w->shape[0], &cout)) {
    if (cout % groups)
      return meta_fail(m, "weight dim 0 (%lld output channels) must be divisible by groups (%lld)",
                       (long long)cout, (long long)groups);
  } else {
    const sym_expr *zero = sym_const(m->env, 0), *g = sym_const(m->env, groups);
    const sym_expr* rem = zero && g ? sym_mod(m->env, w->shape[0], g) : NULL;
    if (!rem) return ptc_status_oom();
    PTC_TRY(meta_expect_eq(m, zero, rem, "weight dim 0 modulo groups"));
  }
  if (bias) PTC_TRY(expect_dim(m, w->shape[0], names[2], 0, bias->shape[0]));
  const sym_expr* shape[4];
  for (uint32_t i = 0; i < c; i++) shape[i] = x->shape[i];
  shape[c] = w->shape[0];
  for (uint32_t i = 0; i < nsp; i++)
    PTC_TRY(conv_out_size(m, i, x->shape[c + 1 + i], w->shape[2 + i], stride[i], pad[i], dil[i],
                          same, &shape[c + 1 + i]));
  return meta_add_out(m, x->dtype, x->rank, shape);
}

static ptc_status conv1d_meta(meta_ctx* m) { return conv_meta(m, 1); }
static ptc_status conv2d_meta(meta_ctx* m) { return conv_meta(m, 2); }

/* ---- pooling ------------------------------------------------------------------------ */
typedef struct pool_cfg {
  int64_t k[2], s[2], p[2], d[2];
  bool ceil;
} pool_cfg;

static ptc_status pool_read(const meta_ctx* m, pool_cfg* c) {
  size_t nk;
  meta_exprs(m, "kernel_size", &nk);
  if (nk == 0) return meta_fail(m, "attribute 'kernel_size' must have 1 or 2 elements, got 0");
  PTC_TRY(read_spatial(m, "kernel_size", 2, k_ones, 1, c->k));
  PTC_TRY(read_spatial(m, "stride", 2, c->k, 1, c->s));
  PTC_TRY(read_spatial(m, "padding", 2, k_zeros, 0, c->p));
  PTC_TRY(read_spatial(m, "dilation", 2, k_ones, 1, c->d));
  c->ceil = meta_bool(m, "ceil_mode", false);
  for (int i = 0; i < 2; i++)
    if (c->p[i] > c->k[i] / 2)
      return meta_fail(m, "padding should be at most half of the kernel size, got padding %lld "
                       "with kernel size %lld", (long long)c->p[i], (long long)c->k[i]);
  return PTC_OK;
}

/* ATen pooling_output_shape: floor (or ceil) division, and with ceil_mode
 * the last window must start inside the input or left padding, which is
 * min(size, ceildiv(in + pad, stride)) given pad <= kernel / 2. */
static const sym_expr* pool_out_size(meta_ctx* m, const sym_expr* in, const pool_cfg* c, int i) {
  int64_t k = c->k[i], s = c->s[i], p = c->p[i], d = c->d[i];
  const sym_expr* num = e_addc(m, in, 2 * p - d * (k - 1) - 1 + (c->ceil ? s - 1 : 0));
  const sym_expr* o = e_addc(m, e_divc(m, num, s), 1);
  return c->ceil ? e_min(m, o, e_ceildivc(m, e_addc(m, in, p), s)) : o;
}

/* Inputs [C, H, W] or [N, C, H, W] with non-zero non-batch dims. */
static ptc_status pool_input(meta_ctx* m) {
  static const char* const names[] = {"self"};
  PTC_TRY(expect_inputs(m, 1, 1, names));
  PTC_TRY(expect_rank(m, 0, names[0], 3, 4));
  const meta_tensor* x = m->in[0];
  for (uint32_t i = x->rank - 3; i < x->rank; i++) {
    int64_t v;
    if (sym_is_const(x->shape[i], &v) && v == 0)
      return meta_fail(m, "expected input to have non-zero size for non-batch dimensions, got %s",
                       meta_shape_str(m, x->rank, x->shape));
  }
  return PTC_OK;
}

static ptc_status pool_meta(meta_ctx* m) {
  pool_cfg c;
  PTC_TRY(pool_input(m));
  PTC_TRY(pool_read(m, &c));
  const meta_tensor* x = m->in[0];
  const sym_expr* shape[4];
  uint32_t sp = x->rank - 2;
  for (uint32_t i = 0; i < sp; i++) shape[i] = x->shape[i];
  for (int i = 0; i < 2; i++) {
    bool ok = false;
    shape[sp + i] = pool_out_size(m, x->shape[sp + i], &c, i);
    PTC_TRY(holds_ge(m, shape[sp + i], 1, &ok));
    if (!ok)
      return meta_fail(m, "output size is too small: input %s gives %s in spatial dim %d",
                       meta_shape_str(m, x->rank, x->shape), estr(m, shape[sp + i]), i);
  }
  return meta_add_out(m, x->dtype, x->rank, shape);
}

static ptc_status avg_pool2d_meta(meta_ctx* m) {
  if (meta_has(m, "divisor_override") && meta_int(m, "divisor_override", 1) == 0)
    return meta_fail(m, "divisor_override must not be zero");
  return pool_meta(m);
}

static ptc_status adaptive_avg_pool2d_meta(meta_ctx* m) {
  PTC_TRY(pool_input(m));
  size_t n;
  const sym_expr** os = meta_exprs(m, "output_size", &n);
  if (n < 1 || n > 2)
    return meta_fail(m, "attribute 'output_size' must have 1 or 2 elements, got %zu", n);
  const meta_tensor* x = m->in[0];
  const sym_expr* shape[4];
  uint32_t sp = x->rank - 2;
  for (uint32_t i = 0; i < sp; i++) shape[i] = x->shape[i];
  for (uint32_t i = 0; i < 2; i++) {
    int64_t v;
    shape[sp + i] = os[n == 1 ? 0 : i];
    if (sym_is_const(shape[sp + i], &v) && v < 0)
      return meta_fail(m, "attribute 'output_size' must be non-negative, got %lld", (long long)v);
  }
  return meta_add_out(m, x->dtype, x->rank, shape);
}

/* ---- interpolate --------------------------------------------------------------------- */
/* Output size from scale_factor: floor(in * scale) (static input), or in *
 * scale for an integral scale and a symbolic input. */
static ptc_status scaled_size(meta_ctx* m, const sym_expr* in, double scale,
                              const sym_expr** out) {
  int64_t v;
  if (!(scale > 0) || !isfinite(scale))
    return meta_fail(m, "attribute 'scale_factor' must be positive and finite, got %g", scale);
  if (sym_is_const(in, &v)) {
    double o = floor((double)v * scale);
    if (o > 1e15) return meta_fail(m, "scale_factor %g gives a too large output size", scale);
    *out = sym_const(m->env, (int64_t)o);
  } else if (scale == floor(scale) && scale < 1e6) {
    *out = e_mulc(m, in, (int64_t)scale);
  } else {
    return meta_fail(m, "a non-integral scale_factor (%g) needs a static input size, got %s", scale,
                     estr(m, in));
  }
  return *out ? PTC_OK : ptc_status_oom();
}

static ptc_status interpolate_meta(meta_ctx* m) {
  static const char* const names[] = {"input"};
  PTC_TRY(expect_inputs(m, 1, 1, names));
  PTC_TRY(expect_rank(m, 0, names[0], 4, 4));
  const char* mode = meta_str(m, "mode", "nearest");
  bool bilinear = strcmp(mode, "bilinear") == 0;
  if (!bilinear && strcmp(mode, "nearest") != 0)
    return meta_fail(m, "mode '%s' is not supported (expected 'nearest' or 'bilinear')", mode);
  if (!bilinear && meta_has(m, "align_corners"))
    return meta_fail(m, "align_corners can only be set with mode 'bilinear'");
  size_t ns;
  const sym_expr** size = meta_exprs(m, "size", &ns);
  const gattr* sf = meta_has(m, "scale_factor") ? gattrs_find(m->attrs, "scale_factor") : NULL;
  if ((ns > 0) == (sf != NULL))
    return meta_fail(m, "exactly one of 'size' or 'scale_factor' must be given");
  size_t n = sf ? sf->count : ns;
  if (n < 1 || n > 2)
    return meta_fail(m, "attribute '%s' must have 1 or 2 elements, got %zu",
                     sf ? "scale_factor" : "size", n);
  const meta_tensor* x = m->in[0];
  const sym_expr* shape[4] = {x->shape[0], x->shape[1], NULL, NULL};
  for (uint32_t i = 0; i < 2; i++) {
    size_t j = n == 1 ? 0 : i;
    if (sf)
      PTC_TRY(scaled_size(m, x->shape[2 + i], sf->floats[j], &shape[2 + i]));
    else
      shape[2 + i] = size[j];
    bool ok = false;
    PTC_TRY(holds_ge(m, shape[2 + i], 1, &ok));
    if (!ok)
      return meta_fail(m, "output size must be greater than 0, got %s in spatial dim %u",
                       estr(m, shape[2 + i]), i);
  }
  return meta_add_out(m, x->dtype, 4, shape);
}

/* ---- scaled dot-product attention ------------------------------------------------------ */
/* query [..., L, E], key [..., S, E], value [..., S, Ev] (batch dims
 * broadcast) -> [..., L, Ev]; attn_mask (bool or query's dtype) broadcasts
 * to [..., L, S]. */
static ptc_status sdpa_meta(meta_ctx* m) {
  static const char* const names[] = {"query", "key", "value", "attn_mask"};
  PTC_TRY(expect_inputs(m, 3, 3, names));
  for (size_t i = 0; i < 3; i++) PTC_TRY(expect_rank(m, i, names[i], 2, PTC_MAX_RANK));
  const meta_tensor *q = m->in[0], *k = m->in[1], *v = m->in[2];
  const meta_tensor* mask = input(m, 3);
  PTC_TRY(expect_dim(m, q->shape[q->rank - 1], names[1], k->rank - 1, k->shape[k->rank - 1]));
  PTC_TRY(expect_dim(m, k->shape[k->rank - 2], names[2], v->rank - 2, v->shape[v->rank - 2]));
  double p = meta_float(m, "dropout_p", 0.0);
  if (p != 0.0) return meta_fail(m, "dropout_p must be 0 (dropout is not supported), got %g", p);
  if (mask && meta_bool(m, "is_causal", false))
    return meta_fail(m, "argument 'attn_mask' must not be given when is_causal is true");
  if (mask && mask->dtype != PTC_BOOL && mask->dtype != q->dtype)
    return meta_fail(m, "argument 'attn_mask' must be bool or %s (the dtype of 'query'), got %s",
                     ptc_dtype_name(q->dtype), ptc_dtype_name(mask->dtype));
  uint32_t r = q->rank - 2;
  const sym_expr** batch = (const sym_expr**)q->shape;
  PTC_TRY(meta_broadcast(m, r, batch, k->rank - 2, k->shape, &r, &batch));
  PTC_TRY(meta_broadcast(m, r, batch, v->rank - 2, v->shape, &r, &batch));
  const sym_expr* shape[PTC_MAX_RANK + 2];
  for (uint32_t i = 0; i < r; i++) shape[i] = batch[i];
  shape[r] = q->shape[q->rank - 2];
  shape[r + 1] = k->shape[k->rank - 2]; /* scores [..., L, S] for the mask check */
  PTC_TRY(expect_broadcasts_to(m, 3, names[3], r + 2, shape));
  shape[r + 1] = v->shape[v->rank - 1];
  return meta_add_out(m, q->dtype, r + 2, shape);
}

/* ---- embedding and pad ------------------------------------------------------------------ */
static ptc_status embedding_meta(meta_ctx* m) {
  static const char* const names[] = {"weight", "indices"};
  PTC_TRY(expect_inputs(m, 2, 0, names));
  PTC_TRY(expect_rank(m, 0, names[0], 2, 2));
  const meta_tensor *w = m->in[0], *idx = m->in[1];
  if (idx->dtype != PTC_I32 && idx->dtype != PTC_I64)
    return meta_fail(m, "argument 'indices' must be an i32 or i64 tensor, got %s",
                     ptc_dtype_name(idx->dtype));
  const sym_expr* shape[PTC_MAX_RANK + 1];
  for (uint32_t i = 0; i < idx->rank; i++) shape[i] = idx->shape[i];
  shape[idx->rank] = w->shape[1];
  return meta_add_out(m, w->dtype, idx->rank + 1, shape);
}

/* F.pad constant mode: pairs (before, after) from the last dim backwards;
 * negative amounts crop. */
static ptc_status pad_meta(meta_ctx* m) {
  static const char* const names[] = {"input"};
  PTC_TRY(expect_inputs(m, 1, 0, names));
  const char* mode = meta_str(m, "mode", "constant");
  if (strcmp(mode, "constant") != 0) return meta_fail(m, "mode '%s' is not supported", mode);
  size_t n;
  const sym_expr** pad = meta_exprs(m, "pad", &n);
  const meta_tensor* x = m->in[0];
  if (n % 2) return meta_fail(m, "padding length must be divisible by 2, got %zu", n);
  if (n / 2 > x->rank)
    return meta_fail(m, "padding length %zu is too large for a tensor of rank %u", n, x->rank);
  const sym_expr* shape[PTC_MAX_RANK];
  for (uint32_t i = 0; i < x->rank; i++) shape[i] = x->shape[i];
  for (uint32_t j = 0; j < n / 2; j++) {
    uint32_t d = x->rank - 1 - j;
    shape[d] = e_add(m, e_add(m, x->shape[d], pad[2 * j]), pad[2 * j + 1]);
    bool ok = false;
    PTC_TRY(holds_ge(m, shape[d], 0, &ok));
    if (!ok)
      return meta_fail(m, "dim %u: size %s padded by %s and %s gives a negative size %s", d,
                       estr(m, x->shape[d]), estr(m, pad[2 * j]), estr(m, pad[2 * j + 1]),
                       estr(m, shape[d]));
  }
  return meta_add_out(m, x->dtype, x->rank, shape);
}

/* ---- table ----------------------------------------------------------------------------- */
static const op_attr_spec no_attrs[] = {{NULL, 0, false}};
static const op_attr_spec scale_attrs[] = {
    {"beta", PTC_ATTR_FLOAT, false}, {"alpha", PTC_ATTR_FLOAT, false}, {NULL, 0, false}};
static const op_attr_spec conv_attrs[] = {
    {"stride", PTC_ATTR_INTS, false},      {"padding", PTC_ATTR_INTS, false},
    {"padding_str", PTC_ATTR_STRING, false}, {"dilation", PTC_ATTR_INTS, false},
    {"groups", PTC_ATTR_INT, false},       {NULL, 0, false}};
static const op_attr_spec max_pool_attrs[] = {
    {"kernel_size", PTC_ATTR_INTS, true}, {"stride", PTC_ATTR_INTS, false},
    {"padding", PTC_ATTR_INTS, false},    {"dilation", PTC_ATTR_INTS, false},
    {"ceil_mode", PTC_ATTR_BOOL, false},  {NULL, 0, false}};
static const op_attr_spec avg_pool_attrs[] = {
    {"kernel_size", PTC_ATTR_INTS, true},       {"stride", PTC_ATTR_INTS, false},
    {"padding", PTC_ATTR_INTS, false},          {"ceil_mode", PTC_ATTR_BOOL, false},
    {"count_include_pad", PTC_ATTR_BOOL, false}, {"divisor_override", PTC_ATTR_INT, false},
    {NULL, 0, false}};
static const op_attr_spec adaptive_attrs[] = {{"output_size", PTC_ATTR_INTS, true},
                                              {NULL, 0, false}};
static const op_attr_spec interp_attrs[] = {
    {"mode", PTC_ATTR_STRING, false},   {"size", PTC_ATTR_INTS, false},
    {"scale_factor", PTC_ATTR_FLOATS, false}, {"align_corners", PTC_ATTR_BOOL, false},
    {NULL, 0, false}};
static const op_attr_spec sdpa_attrs[] = {{"is_causal", PTC_ATTR_BOOL, false},
                                          {"scale", PTC_ATTR_FLOAT, false},
                                          {"dropout_p", PTC_ATTR_FLOAT, false},
                                          {NULL, 0, false}};
static const op_attr_spec embedding_attrs[] = {{"padding_idx", PTC_ATTR_INT, false},
                                               {NULL, 0, false}};
static const op_attr_spec pad_attrs[] = {{"pad", PTC_ATTR_INTS, true},
                                         {"mode", PTC_ATTR_STRING, false},
                                         {"value", PTC_ATTR_FLOAT, false},
                                         {NULL, 0, false}};

const op_def ptc_ops_nn[] = {
    {"mm", 2, 2, 0, no_attrs, mm_meta},
    {"bmm", 2, 2, 0, no_attrs, bmm_meta},
    {"matmul", 2, 2, 0, no_attrs, matmul_meta},
    {"addmm", 3, 3, 0, scale_attrs, addmm_meta},
    {"linear", 2, 3, 0, no_attrs, linear_meta},
    {"baddbmm", 3, 3, 0, scale_attrs, baddbmm_meta},
    {"conv1d", 2, 3, 0, conv_attrs, conv1d_meta},
    {"conv2d", 2, 3, 0, conv_attrs, conv2d_meta},
    {"max_pool2d", 1, 1, 0, max_pool_attrs, pool_meta},
    {"avg_pool2d", 1, 1, 0, avg_pool_attrs, avg_pool2d_meta},
    {"adaptive_avg_pool2d", 1, 1, 0, adaptive_attrs, adaptive_avg_pool2d_meta},
    {"interpolate", 1, 1, 0, interp_attrs, interpolate_meta},
    {"scaled_dot_product_attention", 3, 4, 0, sdpa_attrs, sdpa_meta},
    {"embedding", 2, 2, 0, embedding_attrs, embedding_meta},
    {"pad", 1, 1, 0, pad_attrs, pad_meta},
};
const size_t ptc_ops_nn_count = sizeof ptc_ops_nn / sizeof ptc_ops_nn[0];
