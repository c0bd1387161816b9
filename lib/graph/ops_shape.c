/* ops_shape.c - meta functions and op table of the shape family: views
 * (view, permute, transpose, expand, squeeze, unsqueeze, unflatten, slice,
 * select, narrow, as_strided), reshapes that view when they can (reshape,
 * flatten), copies (contiguous, clone), joining and splitting (cat, stack,
 * split, chunk), indexing (gather, scatter, scatter_add, index_select, index)
 * and triangles (tril, triu).
 *
 * View ops report ATen's output strides, computed symbolically from the
 * input's strides. Every decision that depends on a symbolic size is taken
 * statically when the symbols' ranges allow it, else from the hints under a
 * recorded shape guard (sym_guard), as torch's symbolic shapes do.
 */
#include "op.h"

#include <stdio.h>
#include <string.h>

typedef const sym_expr* expr;

/* Constant indices beyond +-INDEX_LIMIT are clamped to it before symbolic
 * arithmetic (above the default symbol range, 2^62), so that e.g. slice
 * end = INT64_MAX cannot overflow. */
#define INDEX_LIMIT (INT64_MAX / 4 * 3)

/* ---- small helpers ---------------------------------------------------------- */

static expr K(meta_ctx* m, int64_t v) { return sym_const(m->env, v); }

static expr* new_exprs(meta_ctx* m, size_t n) { return meta_alloc(m, (n + 1) * sizeof(expr)); }

/* Decides `a rel b`, statically or under a guard; errors name the op. */
static ptc_status decide(meta_ctx* m, sym_rel rel, expr a, expr b, bool* r) {
  if (!a || !b) return ptc_status_oom();
  ptc_status s = sym_guard(m->env, rel, a, b, r);
  return s ? ptc_status_prefix(s, "%s", m->op->name) : PTC_OK;
}

static ptc_status decide_c(meta_ctx* m, sym_rel rel, expr a, int64_t b, bool* r) {
  return decide(m, rel, a, K(m, b), r);
}

/* Text of one expression (arena) for messages. */
static const char* etext(meta_ctx* m, expr e) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  if (e) sym_format_sb(m->env, e, &sb);
  const char* r = sb.oom || !sb.data ? "?" : ptc_arena_strdup(m->arena, sb.data);
  ptc_sb_free(&sb);
  return r ? r : "?";
}

static const char* shape_text(meta_ctx* m, uint32_t rank, const expr* shape) {
  return meta_shape_str(m, rank, shape);
}

/* Tensor input i, which must be present. */
static ptc_status need(const meta_ctx* m, size_t i, const char* argname,
                       const meta_tensor** out) {
  if (i >= m->n_in || !m->in[i]) return meta_fail(m, "argument '%s' is required", argname);
  *out = m->in[i];
  return PTC_OK;
}

/* An INT-or-SYM attribute as an expression (dflt when absent). */
static expr attr_expr(meta_ctx* m, const char* name, int64_t dflt) {
  const gattr* a = gattrs_find(m->attrs, name);
  int64_t v = dflt;
  if (a && a->type == PTC_ATTR_SYM && a->sym) return a->sym;
  if (a) v = a->i;
  if (v > INDEX_LIMIT) v = INDEX_LIMIT;
  if (v < -INDEX_LIMIT) v = -INDEX_LIMIT;
  return K(m, v);
}

static ptc_status norm_dim(meta_ctx* m, const char* name, int64_t dflt, uint32_t rank,
                           uint32_t* out) {
  return meta_dim(m, meta_int(m, name, dflt), rank, out);
}

/* Copies shape/strides with dim `d` removed (remove) or with `v`/`st`
 * inserted at `d` (insert). */
static void drop_dim(uint32_t r, const expr* in, uint32_t d, expr* out) {
  for (uint32_t i = 0, k = 0; i < r; i++)
    if (i != d) out[k++] = in[i];
}

static void insert_dim(uint32_t r, const expr* in, uint32_t d, expr v, expr* out) {
  for (uint32_t i = 0, k = 0; i <= r; i++) out[i] = i == d ? v : in[k++];
}

static ptc_status add_like(meta_ctx* m, const meta_tensor* x) {
  return meta_add_out(m, x->dtype, x->rank, x->shape);
}

/* ---- views through reshaping --------------------------------------------------- */

/* True when x's strides are the contiguous strides of its shape (size-1
 * dims excepted). Pointer comparison: expressions are hash-consed. */
static ptc_status is_contiguous(meta_ctx* m, const meta_tensor* x, bool* r) {
  expr st[PTC_MAX_RANK + 1];
  if (!graph_contiguous_strides(m->env, x->rank, x->shape, st)) return ptc_status_oom();
  *r = true;
  for (uint32_t i = 0; i < x->rank; i++) {
    int64_t c;
    if (sym_is_const(x->shape[i], &c) && c == 1) continue;
    if (st[i] != x->strides[i]) *r = false;
  }
  return PTC_OK;
}

/* Strides for viewing a tensor with (sh, st) of empty numel as nsh. */
static ptc_status empty_view_strides(meta_ctx* m, uint32_t r, const expr* sh, const expr* st,
                                     uint32_t nr, const expr* nsh, expr* nst) {
  bool same = r == nr;
  for (uint32_t i = 0; same && i < r; i++) same = sh[i] == nsh[i];
  expr acc = K(m, 1);
  for (uint32_t i = nr; i-- > 0;) {
    nst[i] = same ? st[i] : acc;
    acc = sym_mul(m->env, acc, sym_max(m->env, nsh[i], K(m, 1)));
    if (!acc || !nst[i]) return ptc_status_oom();
  }
  return PTC_OK;
}

/* ATen's computeStride: strides viewing (sh, st) as nsh without copying;
 * *ok = false when none exist. Each chunk of input dims that are laid out
 * contiguously relative to each other must be covered by whole view dims. */
static ptc_status view_strides(meta_ctx* m, uint32_t r, const expr* sh, const expr* st,
                               uint32_t nr, const expr* nsh, expr* nst, bool* ok) {
  sym_env* env = m->env;
  *ok = true;
  if (r == 0) {
    for (uint32_t i = 0; i < nr; i++) nst[i] = K(m, 1);
    return PTC_OK;
  }
  bool empty = false;
  PTC_TRY(decide_c(m, SYM_EQ, meta_numel(m, r, sh), 0, &empty));
  if (empty) return empty_view_strides(m, r, sh, st, nr, nsh, nst);
  int64_t vd = (int64_t)nr - 1;
  expr base = st[r - 1], tn = K(m, 1), vn = K(m, 1);
  for (int64_t td = (int64_t)r - 1; td >= 0; td--) {
    tn = sym_mul(env, tn, sh[td]);
    bool boundary = td == 0, b = false;
    if (!boundary) {
      PTC_TRY(decide_c(m, SYM_EQ, sh[td - 1], 1, &b));
      if (!b) PTC_TRY(decide(m, SYM_NE, st[td - 1], sym_mul(env, tn, base), &boundary));
    }
    if (!boundary) continue;
    for (; vd >= 0; vd--) {
      PTC_TRY(decide(m, SYM_LT, vn, tn, &b));
      if (!b) PTC_TRY(decide_c(m, SYM_EQ, nsh[vd], 1, &b));
      if (!b) break;
      nst[vd] = sym_mul(env, vn, base);
      vn = sym_mul(env, vn, nsh[vd]);
      if (!nst[vd]) return ptc_status_oom();
    }
    PTC_TRY(decide(m, SYM_EQ, vn, tn, &b));
    if (!b) {
      *ok = false;
      return PTC_OK;
    }
    if (td > 0) {
      base = st[td - 1];
      tn = K(m, 1);
      vn = K(m, 1);
    }
  }
  if (vd != -1) *ok = false;
  return PTC_OK;
}

/* Output of viewing input 0 as nsh: a strided view when possible; else an
 * error (must_view: the `view` op) or a contiguous copy (reshape). */
static ptc_status reshape_to(meta_ctx* m, uint32_t nr, const expr* nsh, bool must_view) {
  const meta_tensor* x = m->in[0];
  if (nr > PTC_MAX_RANK)
    return meta_fail(m, "output rank %u exceeds the limit %d", nr, PTC_MAX_RANK);
  expr* nst = new_exprs(m, nr);
  if (!nst) return ptc_status_oom();
  bool contig = false, ok = true;
  PTC_TRY(is_contiguous(m, x, &contig));
  if (contig) {
    if (!graph_contiguous_strides(m->env, nr, nsh, nst)) return ptc_status_oom();
  } else {
    PTC_TRY(view_strides(m, x->rank, x->shape, x->strides, nr, nsh, nst, &ok));
  }
  if (ok) return meta_add_view(m, x->dtype, nr, nsh, nst);
  if (must_view)
    return meta_fail(m,
                     "view size is not compatible with input tensor's size and stride (at "
                     "least one dimension spans across two contiguous subspaces): viewing %s "
                     "with strides %s as %s; use reshape instead",
                     shape_text(m, x->rank, x->shape), shape_text(m, x->rank, x->strides),
                     shape_text(m, nr, nsh));
  return meta_add_out(m, x->dtype, nr, nsh);
}

/* Resolves a requested shape with at most one -1 against `numel` elements
 * (ATen infer_size). The inferred size is numel // product(others), with the
 * divisibility decided statically or under a guard. */
static ptc_status infer_size(meta_ctx* m, const expr* req, size_t n, expr numel,
                             const char* what, expr* out) {
  int64_t infer = -1;
  expr prod = K(m, 1);
  for (size_t i = 0; i < n; i++) {
    int64_t c;
    out[i] = req[i];
    if (sym_is_const(req[i], &c) && c < 0) {
      if (c != -1) return meta_fail(m, "invalid shape dimension %lld", (long long)c);
      if (infer >= 0) return meta_fail(m, "only one dimension can be inferred");
      infer = (int64_t)i;
      continue;
    }
    prod = sym_mul(m->env, prod, req[i]);
  }
  bool ok = false;
  if (infer >= 0) {
    PTC_TRY(decide_c(m, SYM_EQ, prod, 0, &ok));
    if (ok)
      return meta_fail(m,
                       "cannot reshape tensor of %s elements into shape %s because the "
                       "unspecified dimension size -1 can be any value and is ambiguous",
                       etext(m, numel), shape_text(m, (uint32_t)n, req));
    PTC_TRY(decide_c(m, SYM_EQ, sym_mod(m->env, numel, prod), 0, &ok));
    out[infer] = sym_floordiv(m->env, numel, prod);
    if (!out[infer]) return ptc_status_oom();
  } else {
    PTC_TRY(decide(m, SYM_EQ, numel, prod, &ok));
  }
  if (!ok)
    return meta_fail(m, "%s '%s' is invalid for input of size %s", what,
                     shape_text(m, (uint32_t)n, req), etext(m, numel));
  return PTC_OK;
}

static ptc_status reshape_attr(meta_ctx* m, const char* attr, bool must_view) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  size_t n;
  const sym_expr** req = meta_exprs(m, attr, &n);
  if (n > PTC_MAX_RANK) return meta_fail(m, "rank %zu exceeds the limit %d", n, PTC_MAX_RANK);
  expr* ns = new_exprs(m, n);
  if (!ns) return ptc_status_oom();
  PTC_TRY(infer_size(m, req, n, meta_numel(m, x->rank, x->shape), "shape", ns));
  return reshape_to(m, (uint32_t)n, ns, must_view);
}

static ptc_status meta_view(meta_ctx* m) { return reshape_attr(m, "size", true); }

/* reshape takes ATen's `shape` (also accepted under view's name `size`). */
static ptc_status meta_reshape(meta_ctx* m) {
  bool s = meta_has(m, "shape"), z = meta_has(m, "size");
  if (s == z)
    return meta_fail(m, s ? "give only one of 'shape' and 'size'"
                          : "missing required attribute 'shape' (ints)");
  return reshape_attr(m, s ? "shape" : "size", false);
}

static ptc_status meta_flatten(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t s = 0, e = 0, r = x->rank;
  PTC_TRY(norm_dim(m, "start_dim", 0, r, &s));
  PTC_TRY(norm_dim(m, "end_dim", -1, r, &e));
  if (s > e) return meta_fail(m, "start_dim (%u) cannot come after end_dim (%u)", s, e);
  expr one = K(m, 1);
  if (r == 0) return reshape_to(m, 1, &one, false);
  if (s == e) return meta_add_view(m, x->dtype, r, x->shape, x->strides);
  expr* ns = new_exprs(m, r);
  if (!ns) return ptc_status_oom();
  uint32_t k = 0;
  for (uint32_t i = 0; i < s; i++) ns[k++] = x->shape[i];
  ns[k++] = meta_numel(m, e - s + 1, x->shape + s);
  for (uint32_t i = e + 1; i < r; i++) ns[k++] = x->shape[i];
  return reshape_to(m, k, ns, false);
}

/* unflatten splits one dim, which is always a view: the new dims get
 * strides nested inside the old dim's stride. */
static ptc_status meta_unflatten(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  if (x->rank == 0) return meta_fail(m, "cannot unflatten a 0-dim tensor");
  uint32_t d = 0;
  PTC_TRY(norm_dim(m, "dim", 0, x->rank, &d));
  size_t k;
  const sym_expr** req = meta_exprs(m, "sizes", &k);
  if (k == 0) return meta_fail(m, "sizes must be non-empty");
  if (k + x->rank - 1 > PTC_MAX_RANK)
    return meta_fail(m, "output rank exceeds the limit %d", PTC_MAX_RANK);
  uint32_t nr = (uint32_t)(x->rank - 1 + k);
  expr* sz = new_exprs(m, k);
  expr* ns = new_exprs(m, nr);
  expr* nst = new_exprs(m, nr);
  if (!sz || !ns || !nst) return ptc_status_oom();
  PTC_TRY(infer_size(m, req, k, x->shape[d], "sizes", sz));
  for (uint32_t i = 0; i < d; i++) {
    ns[i] = x->shape[i];
    nst[i] = x->strides[i];
  }
  expr acc = x->strides[d];
  for (size_t j = k; j-- > 0;) {
    ns[d + j] = sz[j];
    nst[d + j] = acc;
    acc = sym_mul(m->env, acc, sz[j]);
  }
  for (uint32_t i = d + 1; i < x->rank; i++) {
    ns[i + k - 1] = x->shape[i];
    nst[i + k - 1] = x->strides[i];
  }
  return meta_add_view(m, x->dtype, nr, ns, nst);
}

/* ---- views through strides -------------------------------------------------------- */

static ptc_status meta_permute(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  int64_t dims[PTC_MAX_RANK];
  size_t n;
  PTC_TRY(meta_ints(m, "dims", dims, PTC_MAX_RANK, &n));
  if (n != x->rank)
    return meta_fail(m, "the number of dims (%zu) does not match the tensor's rank (%u)", n,
                     x->rank);
  expr* ns = new_exprs(m, n);
  expr* nst = new_exprs(m, n);
  if (!ns || !nst) return ptc_status_oom();
  bool seen[PTC_MAX_RANK] = {false};
  for (size_t i = 0; i < n; i++) {
    uint32_t d = 0;
    PTC_TRY(meta_dim(m, dims[i], x->rank, &d));
    if (seen[d]) return meta_fail(m, "repeated dim %u in dims", d);
    seen[d] = true;
    ns[i] = x->shape[d];
    nst[i] = x->strides[d];
  }
  return meta_add_view(m, x->dtype, x->rank, ns, nst);
}

static ptc_status meta_transpose(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t a = 0, b = 0, r = x->rank;
  PTC_TRY(norm_dim(m, "dim0", 0, r, &a));
  PTC_TRY(norm_dim(m, "dim1", 0, r, &b));
  expr* ns = new_exprs(m, r);
  expr* nst = new_exprs(m, r);
  if (!ns || !nst) return ptc_status_oom();
  for (uint32_t i = 0; i < r; i++) {
    uint32_t j = i == a ? b : i == b ? a : i;
    ns[i] = x->shape[j];
    nst[i] = x->strides[j];
  }
  return meta_add_view(m, x->dtype, r, ns, nst);
}

/* One target dim of expand: keep the input dim (same size or -1), or
 * broadcast a size-1 dim with stride 0. */
static ptc_status expand_dim(meta_ctx* m, const meta_tensor* x, const expr* req, size_t n,
                             size_t i, expr* size, expr* stride) {
  int64_t c, tc;
  bool neg = sym_is_const(req[i], &tc) && tc < 0;
  if (i < n - x->rank) {
    if (neg)
      return meta_fail(m, "the expanded size %lld is not allowed in a leading, non-existing "
                       "dimension %zu", (long long)tc, i);
    *size = req[i];
    *stride = K(m, 0);
    return PTC_OK;
  }
  uint32_t j = (uint32_t)(i - (n - x->rank));
  *size = x->shape[j];
  *stride = x->strides[j];
  if (neg && tc == -1) return PTC_OK;
  if (neg) return meta_fail(m, "invalid expanded size %lld at dim %zu", (long long)tc, i);
  if (req[i] == x->shape[j]) return PTC_OK;
  bool b = false, one = sym_is_const(x->shape[j], &c) && c == 1;
  if (!one) {
    PTC_TRY(decide(m, SYM_EQ, x->shape[j], req[i], &b));
    if (b) return PTC_OK;
    PTC_TRY(decide_c(m, SYM_EQ, x->shape[j], 1, &one));
  }
  if (!one)
    return meta_fail(m,
                     "the expanded size of the tensor (%s) must match the existing size (%s) "
                     "at non-singleton dimension %zu. Target sizes: %s. Tensor sizes: %s",
                     etext(m, req[i]), etext(m, x->shape[j]), i,
                     shape_text(m, (uint32_t)n, req), shape_text(m, x->rank, x->shape));
  *size = req[i];
  *stride = K(m, 0);
  return PTC_OK;
}

static ptc_status meta_expand(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  size_t n;
  const sym_expr** req = meta_exprs(m, "size", &n);
  if (n < x->rank)
    return meta_fail(m, "the number of sizes provided (%zu) must be greater or equal to the "
                     "number of dimensions in the tensor (%u)", n, x->rank);
  if (n > PTC_MAX_RANK) return meta_fail(m, "rank %zu exceeds the limit %d", n, PTC_MAX_RANK);
  expr* ns = new_exprs(m, n);
  expr* nst = new_exprs(m, n);
  if (!ns || !nst) return ptc_status_oom();
  for (size_t i = 0; i < n; i++) PTC_TRY(expand_dim(m, x, req, n, i, &ns[i], &nst[i]));
  return meta_add_view(m, x->dtype, (uint32_t)n, ns, nst);
}

static ptc_status meta_squeeze(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  bool pick[PTC_MAX_RANK];
  bool all = !meta_has(m, "dim");
  for (uint32_t i = 0; i < PTC_MAX_RANK; i++) pick[i] = all;
  int64_t dims[PTC_MAX_RANK];
  size_t n = 0;
  PTC_TRY(meta_ints(m, "dim", dims, PTC_MAX_RANK, &n));
  for (size_t i = 0; i < n; i++) {
    uint32_t d = 0;
    PTC_TRY(meta_dim(m, dims[i], x->rank, &d));
    if (d < x->rank) pick[d] = true;
  }
  expr* ns = new_exprs(m, x->rank);
  expr* nst = new_exprs(m, x->rank);
  if (!ns || !nst) return ptc_status_oom();
  uint32_t k = 0;
  for (uint32_t i = 0; i < x->rank; i++) {
    bool one = false;
    if (pick[i]) PTC_TRY(decide_c(m, SYM_EQ, x->shape[i], 1, &one));
    if (one) continue;
    ns[k] = x->shape[i];
    nst[k++] = x->strides[i];
  }
  return meta_add_view(m, x->dtype, k, ns, nst);
}

static ptc_status meta_unsqueeze(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t d = 0, r = x->rank;
  PTC_TRY(meta_dim(m, meta_int(m, "dim", 0), r + 1, &d));
  expr* ns = new_exprs(m, r + 1);
  expr* nst = new_exprs(m, r + 1);
  if (!ns || !nst) return ptc_status_oom();
  expr st = d >= r ? K(m, 1) : sym_mul(m->env, x->shape[d], x->strides[d]);
  insert_dim(r, x->shape, d, K(m, 1), ns);
  insert_dim(r, x->strides, d, st, nst);
  return meta_add_view(m, x->dtype, r + 1, ns, nst);
}

/* Clamps a slice bound like Python: negative counts from the end, then
 * into [0, size]. */
static ptc_status clamp_bound(meta_ctx* m, expr i, expr size, expr* out) {
  bool b = false;
  PTC_TRY(decide_c(m, SYM_LT, i, 0, &b));
  if (b) {
    i = sym_add(m->env, i, size);
    PTC_TRY(decide_c(m, SYM_LT, i, 0, &b));
    if (b) i = K(m, 0);
  } else {
    PTC_TRY(decide(m, SYM_GT, i, size, &b));
    if (b) i = size;
  }
  *out = i;
  return PTC_OK;
}

/* Output = input with dim d resized to `len` and strided by `step`. */
static ptc_status add_restrided(meta_ctx* m, const meta_tensor* x, uint32_t d, expr len,
                                int64_t step) {
  expr* ns = new_exprs(m, x->rank);
  expr* nst = new_exprs(m, x->rank);
  if (!ns || !nst) return ptc_status_oom();
  memcpy(ns, x->shape, x->rank * sizeof *ns);
  memcpy(nst, x->strides, x->rank * sizeof *nst);
  ns[d] = len;
  nst[d] = sym_mul_c(m->env, x->strides[d], step);
  return meta_add_view(m, x->dtype, x->rank, ns, nst);
}

static ptc_status dim_of_nonscalar(meta_ctx* m, const meta_tensor* x, uint32_t* d) {
  if (x->rank == 0) return meta_fail(m, "cannot be applied to a 0-dim tensor");
  return norm_dim(m, "dim", 0, x->rank, d);
}

static ptc_status meta_slice(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t d = 0;
  PTC_TRY(dim_of_nonscalar(m, x, &d));
  int64_t step = meta_int(m, "step", 1);
  if (step <= 0) return meta_fail(m, "slice step must be positive, got %lld", (long long)step);
  expr size = x->shape[d], start = NULL, end = NULL, len = NULL;
  PTC_TRY(clamp_bound(m, attr_expr(m, "start", 0), size, &start));
  if (meta_has(m, "end"))
    PTC_TRY(clamp_bound(m, attr_expr(m, "end", 0), size, &end));
  else
    end = size;
  bool empty = false;
  PTC_TRY(decide(m, SYM_LE, end, start, &empty));
  len = empty ? K(m, 0) : sym_ceildiv(m->env, sym_sub(m->env, end, start), K(m, step));
  return add_restrided(m, x, d, len, step);
}

static ptc_status meta_select(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t d = 0;
  PTC_TRY(dim_of_nonscalar(m, x, &d));
  if (!meta_has(m, "index")) return meta_fail(m, "missing required attribute 'index' (int)");
  expr idx = attr_expr(m, "index", 0), size = x->shape[d];
  bool neg = false, bad = false;
  PTC_TRY(decide_c(m, SYM_LT, idx, 0, &neg));
  expr w = neg ? sym_add(m->env, idx, size) : idx;
  PTC_TRY(decide_c(m, SYM_LT, w, 0, &bad));
  if (!bad) PTC_TRY(decide(m, SYM_GE, w, size, &bad));
  if (bad)
    return meta_fail(m, "index %s out of range for tensor of size %s at dimension %u",
                     etext(m, idx), shape_text(m, x->rank, x->shape), d);
  expr* ns = new_exprs(m, x->rank);
  expr* nst = new_exprs(m, x->rank);
  if (!ns || !nst) return ptc_status_oom();
  drop_dim(x->rank, x->shape, d, ns);
  drop_dim(x->rank, x->strides, d, nst);
  return meta_add_view(m, x->dtype, x->rank - 1, ns, nst);
}

static ptc_status meta_narrow(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t d = 0;
  PTC_TRY(dim_of_nonscalar(m, x, &d));
  expr start = attr_expr(m, "start", 0), len = attr_expr(m, "length", 0), size = x->shape[d];
  bool b = false;
  PTC_TRY(decide_c(m, SYM_LT, len, 0, &b));
  if (b) return meta_fail(m, "length must be non-negative, got %s", etext(m, len));
  PTC_TRY(decide_c(m, SYM_LT, start, 0, &b));
  if (b) {
    expr w = sym_add(m->env, start, size);
    bool bad = false;
    PTC_TRY(decide_c(m, SYM_LT, w, 0, &bad));
    if (bad)
      return meta_fail(m, "start out of range (expected to be in range of [-%s, %s], but got %s)",
                       etext(m, size), etext(m, size), etext(m, start));
    start = w;
  }
  PTC_TRY(decide(m, SYM_GT, sym_add(m->env, start, len), size, &b));
  if (b)
    return meta_fail(m, "start (%s) + length (%s) exceeds dimension size (%s)", etext(m, start),
                     etext(m, len), etext(m, size));
  return add_restrided(m, x, d, len, 1);
}

/* as_strided(size, stride, storage_offset): element offsets are relative to
 * the input's first element, and the view must stay inside the elements the
 * input itself spans (1 + sum((size-1)*stride)); checked here when decidable
 * and again by the reference kernel at run time. */
static ptc_status meta_as_strided(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  size_t n, ns_;
  const sym_expr** sz = meta_exprs(m, "size", &n);
  const sym_expr** st = meta_exprs(m, "stride", &ns_);
  if (n != ns_)
    return meta_fail(m, "mismatch in length of strides and shape (%zu vs %zu)", ns_, n);
  if (n > PTC_MAX_RANK) return meta_fail(m, "rank %zu exceeds the limit %d", n, PTC_MAX_RANK);
  expr off = attr_expr(m, "storage_offset", 0);
  bool b = false;
  PTC_TRY(decide_c(m, SYM_LT, off, 0, &b));
  if (b) return meta_fail(m, "negative storage offset %s", etext(m, off));
  expr reach = off, numel = K(m, 1), extent = K(m, 1);
  for (size_t i = 0; i < n; i++) {
    PTC_TRY(decide_c(m, SYM_LT, st[i], 0, &b));
    if (b)
      return meta_fail(m, "negative strides are not supported, got %s",
                       shape_text(m, (uint32_t)n, st));
    PTC_TRY(decide_c(m, SYM_LT, sz[i], 0, &b));
    if (b) return meta_fail(m, "negative size in %s", shape_text(m, (uint32_t)n, sz));
    reach = sym_add(m->env, reach, sym_mul(m->env, sym_add_c(m->env, sz[i], -1), st[i]));
    numel = sym_mul(m->env, numel, sz[i]);
  }
  bool x_empty = false, empty = false;
  PTC_TRY(decide_c(m, SYM_EQ, meta_numel(m, x->rank, x->shape), 0, &x_empty));
  for (uint32_t i = 0; i < x->rank && !x_empty; i++)
    extent = sym_add(m->env, extent,
                     sym_mul(m->env, sym_add_c(m->env, x->shape[i], -1), x->strides[i]));
  if (x_empty) extent = K(m, 0);
  PTC_TRY(decide_c(m, SYM_EQ, numel, 0, &empty));
  b = false;
  if (!empty) PTC_TRY(decide(m, SYM_GE, reach, extent, &b));
  if (b)
    return meta_fail(m, "the view reaches element %s but the input spans %s elements from its "
                     "first element", etext(m, reach), etext(m, extent));
  return meta_add_view(m, x->dtype, (uint32_t)n, sz, st);
}

static ptc_status meta_contiguous(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  return add_like(m, x);
}

/* ---- clone: ATen's preserve_format ------------------------------------------------- */

static bool static_layout(const meta_tensor* x, int64_t* sh, int64_t* st) {
  for (uint32_t i = 0; i < x->rank; i++)
    if (!sym_is_const(x->shape[i], &sh[i]) || !sym_is_const(x->strides[i], &st[i])) return false;
  return true;
}

/* is_non_overlapping_and_dense: the dims of size >= 2, ordered by stride,
 * are nested exactly. */
static bool dense(uint32_t r, const int64_t* sh, const int64_t* st) {
  uint32_t perm[PTC_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) perm[i] = i;
  for (uint32_t i = 1; i < r; i++)
    for (uint32_t j = i; j > 0; j--) {
      uint32_t a = perm[j - 1], b = perm[j];
      bool swap = sh[a] < 2 ? sh[b] >= 2 : sh[b] >= 2 && st[b] < st[a];
      if (!swap) break;
      perm[j - 1] = b;
      perm[j] = a;
    }
  int64_t want = 1;
  for (uint32_t i = 0; i < r; i++) {
    int64_t s = sh[perm[i]];
    if (s < 2) return true;
    if (st[perm[i]] != want) return false;
    want *= s;
  }
  return true;
}

/* ATen infer_dense_strides: contiguous strides in the order of the input's
 * strides (stride-0 dims keep their place). */
static void infer_dense(uint32_t r, const int64_t* sh, const int64_t* st, int64_t* out) {
  uint32_t perm[PTC_MAX_RANK];
  for (uint32_t i = 0; i < r; i++) perm[i] = r - 1 - i;
  for (uint32_t i = 1; i < r; i++) {
    uint32_t d1 = i;
    for (uint32_t j = 1; j <= i; j++) {
      uint32_t d0 = i - j, a = perm[d0], b = perm[d1];
      int cmp = 0;
      if (st[a] == 0 || st[b] == 0) cmp = 0;
      else if (st[a] != st[b]) cmp = st[a] < st[b] ? -1 : 1;
      else cmp = sh[a] > sh[b] ? 1 : 0;
      if (cmp > 0) {
        perm[d0] = b;
        perm[d1] = a;
        d1 = d0;
      } else if (cmp < 0) {
        break;
      }
    }
  }
  int64_t cur = 1;
  for (uint32_t i = 0; i < r; i++) {
    out[perm[i]] = cur;
    if (sh[perm[i]] > 1) cur *= sh[perm[i]];
  }
}

static ptc_status meta_clone(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  int64_t sh[PTC_MAX_RANK], st[PTC_MAX_RANK], out[PTC_MAX_RANK];
  if (x->rank < 2 || !static_layout(x, sh, st)) return add_like(m, x);
  if (dense(x->rank, sh, st)) return meta_add_view(m, x->dtype, x->rank, x->shape, x->strides);
  infer_dense(x->rank, sh, st, out);
  expr* nst = new_exprs(m, x->rank);
  if (!nst) return ptc_status_oom();
  for (uint32_t i = 0; i < x->rank; i++) nst[i] = K(m, out[i]);
  return meta_add_view(m, x->dtype, x->rank, x->shape, nst);
}

/* ---- joining and splitting ------------------------------------------------------------ */

static ptc_status all_present(const meta_ctx* m) {
  for (size_t i = 0; i < m->n_in; i++)
    if (!m->in[i]) return meta_fail(m, "input %zu is absent", i);
  return PTC_OK;
}

static int32_t promoted(const meta_ctx* m) {
  int32_t dt = m->in[0]->dtype;
  for (size_t i = 1; i < m->n_in; i++) dt = ptc_promote_types(dt, m->in[i]->dtype);
  return dt;
}

/* ATen skips legacy empty 1-D tensors (shape [0]) in cat. */
static bool legacy_empty(const meta_tensor* t) {
  int64_t c;
  return t->rank == 1 && sym_is_const(t->shape[0], &c) && c == 0;
}

static ptc_status meta_cat(meta_ctx* m) {
  PTC_TRY(all_present(m));
  int32_t dt = promoted(m);
  const meta_tensor* ref = NULL;
  for (size_t i = 0; i < m->n_in && !ref; i++)
    if (!legacy_empty(m->in[i])) ref = m->in[i];
  if (!ref) return meta_add_out(m, dt, 1, m->in[0]->shape);
  uint32_t r = ref->rank, d = 0;
  for (size_t i = 0; i < m->n_in; i++)
    if (m->in[i]->rank == 0)
      return meta_fail(m, "zero-dimensional tensor (at position %zu) cannot be concatenated", i);
  PTC_TRY(norm_dim(m, "dim", 0, r, &d));
  expr* ns = new_exprs(m, r);
  if (!ns) return ptc_status_oom();
  memcpy(ns, ref->shape, r * sizeof *ns);
  ns[d] = K(m, 0);
  for (size_t i = 0; i < m->n_in; i++) {
    const meta_tensor* t = m->in[i];
    if (legacy_empty(t)) continue;
    if (t->rank != r)
      return meta_fail(m, "tensors must have same number of dimensions: got %u and %u", r,
                       t->rank);
    for (uint32_t k = 0; k < r; k++) {
      char what[160];
      snprintf(what, sizeof what,
               "sizes of tensors must match except in dimension %u (input %zu, dimension %u)", d,
               i, k);
      if (k != d) PTC_TRY(meta_expect_eq(m, ref->shape[k], t->shape[k], what));
    }
    ns[d] = sym_add(m->env, ns[d], t->shape[d]);
  }
  return meta_add_out(m, dt, r, ns);
}

static ptc_status meta_stack(meta_ctx* m) {
  PTC_TRY(all_present(m));
  const meta_tensor* x = m->in[0];
  uint32_t r = x->rank, d = 0;
  PTC_TRY(norm_dim(m, "dim", 0, r + 1, &d));
  for (size_t i = 1; i < m->n_in; i++) {
    const meta_tensor* t = m->in[i];
    bool same = t->rank == r;
    for (uint32_t k = 0; same && k < r; k++) {
      if (t->shape[k] == x->shape[k]) continue;
      PTC_TRY(decide(m, SYM_EQ, x->shape[k], t->shape[k], &same));
    }
    if (!same)
      return meta_fail(m, "stack expects each tensor to be equal size, but got %s at entry 0 "
                       "and %s at entry %zu", shape_text(m, r, x->shape),
                       shape_text(m, t->rank, t->shape), i);
  }
  expr* ns = new_exprs(m, r + 1);
  if (!ns) return ptc_status_oom();
  insert_dim(r, x->shape, d, K(m, (int64_t)m->n_in), ns);
  return meta_add_out(m, promoted(m), r + 1, ns);
}

/* Adds one contiguous output per piece of dim d of input 0. */
static ptc_status add_pieces(meta_ctx* m, uint32_t d, size_t n, const expr* sizes) {
  const meta_tensor* x = m->in[0];
  expr* ns = new_exprs(m, x->rank);
  if (!ns) return ptc_status_oom();
  memcpy(ns, x->shape, x->rank * sizeof *ns);
  for (size_t j = 0; j < n; j++) {
    ns[d] = sizes[j];
    PTC_TRY(meta_add_out(m, x->dtype, x->rank, ns));
  }
  return PTC_OK;
}

/* Pieces of `split` (the last one shorter), as ATen's split; a size-0 dim
 * split by 0 gives n_if_empty empty pieces. The number of pieces must be
 * static: decided under a guard when symbolic. */
static ptc_status split_even(meta_ctx* m, uint32_t d, expr split, int64_t n_if_empty) {
  expr size = m->in[0]->shape[d];
  bool zero = false;
  int64_t n = n_if_empty;
  PTC_TRY(decide_c(m, SYM_EQ, split, 0, &zero));
  if (zero) {
    PTC_TRY(decide_c(m, SYM_EQ, size, 0, &zero));
    if (!zero)
      return meta_fail(m, "split_size can only be 0 if dimension size is 0, but got dimension "
                       "size of %s", etext(m, size));
  } else {
    expr cnt = sym_ceildiv(m->env, size, split);
    if (!cnt) return ptc_status_oom();
    if (!sym_is_const(cnt, &n)) {
      bool eq = false;
      if (!sym_hint(m->env, cnt, &n))
        return meta_fail(m, "the number of outputs (%s) depends on a size without a hint; it "
                         "must be static", etext(m, cnt));
      PTC_TRY(decide_c(m, SYM_EQ, cnt, n, &eq));
    }
    if (n < 1) n = 1;
  }
  if (n > 64) return meta_fail(m, "%lld outputs exceed the limit of 64", (long long)n);
  expr sizes[64];
  for (int64_t j = 0; j < n; j++)
    sizes[j] = j + 1 < n ? split : sym_sub(m->env, size, sym_mul_c(m->env, split, n - 1));
  return add_pieces(m, d, (size_t)n, sizes);
}

static ptc_status meta_split(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t d = 0;
  PTC_TRY(dim_of_nonscalar(m, x, &d));
  bool one = meta_has(m, "split_size"), many = meta_has(m, "split_sizes");
  if (one == many)
    return meta_fail(m, "give exactly one of 'split_size' (int) and 'split_sizes' (ints)");
  if (one) {
    int64_t s = meta_int(m, "split_size", 0);
    if (s < 0) return meta_fail(m, "split_size must be non-negative, got %lld", (long long)s);
    return split_even(m, d, K(m, s), 1);
  }
  size_t n;
  const sym_expr** sz = meta_exprs(m, "split_sizes", &n);
  if (n == 0 || n > 64) return meta_fail(m, "split_sizes must have 1 to 64 elements, got %zu", n);
  expr sum = K(m, 0);
  for (size_t j = 0; j < n; j++) {
    bool neg = false;
    PTC_TRY(decide_c(m, SYM_LT, sz[j], 0, &neg));
    if (neg) return meta_fail(m, "split_sizes has a negative entry %s", etext(m, sz[j]));
    sum = sym_add(m->env, sum, sz[j]);
  }
  bool eq = false;
  PTC_TRY(decide(m, SYM_EQ, sum, x->shape[d], &eq));
  if (!eq)
    return meta_fail(m, "split_sizes %s must sum exactly to %s (the input's size at dimension "
                     "%u)", shape_text(m, (uint32_t)n, sz), etext(m, x->shape[d]), d);
  return add_pieces(m, d, n, sz);
}

static ptc_status meta_chunk(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  uint32_t d = 0;
  PTC_TRY(dim_of_nonscalar(m, x, &d));
  int64_t chunks = meta_int(m, "chunks", 0);
  if (chunks <= 0)
    return meta_fail(m, "chunks must be greater than 0, got %lld", (long long)chunks);
  return split_even(m, d, sym_ceildiv(m->env, x->shape[d], K(m, chunks)), chunks);
}

/* ---- indexing ---------------------------------------------------------------------------- */

static ptc_status index_dtype(const meta_ctx* m, size_t i, bool allow_i32) {
  int32_t dt = m->in[i]->dtype;
  if (dt == PTC_I64 || (allow_i32 && dt == PTC_I32)) return PTC_OK;
  return meta_fail(m, "index tensor (input %zu) must be %s, got %s", i,
                   allow_i32 ? "i64 or i32" : "i64", ptc_dtype_name(dt));
}

/* index.size(k) <= t.size(k) for every k (except `skip`). */
static ptc_status index_fits(meta_ctx* m, const meta_tensor* idx, const meta_tensor* t,
                             int64_t skip, const char* tname) {
  for (uint32_t k = 0; k < idx->rank && k < t->rank; k++) {
    bool ok = false;
    if ((int64_t)k == skip) continue;
    PTC_TRY(decide(m, SYM_LE, idx->shape[k], t->shape[k], &ok));
    if (!ok)
      return meta_fail(m, "size does not match at dimension %u: expected index %s to be smaller "
                       "than %s %s apart from dimension %lld", k,
                       shape_text(m, idx->rank, idx->shape), tname,
                       shape_text(m, t->rank, t->shape), (long long)skip);
  }
  return PTC_OK;
}

static ptc_status same_rank(const meta_ctx* m, const meta_tensor* idx, const meta_tensor* t,
                            const char* tname) {
  uint32_t a = idx->rank ? idx->rank : 1, b = t->rank ? t->rank : 1;
  if (a != b)
    return meta_fail(m, "index tensor must have the same number of dimensions as %s tensor "
                     "(%u vs %u)", tname, idx->rank, t->rank);
  return PTC_OK;
}

static ptc_status meta_gather(meta_ctx* m) {
  const meta_tensor *x = NULL, *idx = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  PTC_TRY(need(m, 1, "index", &idx));
  uint32_t d = 0;
  PTC_TRY(norm_dim(m, "dim", 0, x->rank, &d));
  PTC_TRY(index_dtype(m, 1, false));
  PTC_TRY(same_rank(m, idx, x, "input"));
  PTC_TRY(index_fits(m, idx, x, d, "self"));
  return meta_add_out(m, x->dtype, idx->rank, idx->shape);
}

/* scatter(x, index, src) / scatter(x, index, value=) / scatter_add. */
static ptc_status scatter_common(meta_ctx* m, bool add) {
  const meta_tensor *x = NULL, *idx = NULL, *src = m->n_in > 2 ? m->in[2] : NULL;
  PTC_TRY(need(m, 0, "self", &x));
  PTC_TRY(need(m, 1, "index", &idx));
  uint32_t d = 0;
  PTC_TRY(norm_dim(m, "dim", 0, x->rank, &d));
  PTC_TRY(index_dtype(m, 1, false));
  if (add && !src) return meta_fail(m, "argument 'src' is required");
  if (!add && !src == !meta_has(m, "value"))
    return meta_fail(m, "give exactly one of the 'src' input and the 'value' attribute");
  PTC_TRY(same_rank(m, idx, x, "self"));
  PTC_TRY(index_fits(m, idx, x, d, "self"));
  if (src) {
    if (src->dtype != x->dtype)
      return meta_fail(m, "expected self.dtype to be equal to src.dtype (%s vs %s)",
                       ptc_dtype_name(x->dtype), ptc_dtype_name(src->dtype));
    PTC_TRY(same_rank(m, idx, src, "src"));
    PTC_TRY(index_fits(m, idx, src, -1, "src"));
  }
  return add_like(m, x);
}

static ptc_status meta_scatter(meta_ctx* m) { return scatter_common(m, false); }
static ptc_status meta_scatter_add(meta_ctx* m) { return scatter_common(m, true); }

static ptc_status meta_index_select(meta_ctx* m) {
  const meta_tensor *x = NULL, *idx = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  PTC_TRY(need(m, 1, "index", &idx));
  uint32_t d = 0;
  PTC_TRY(norm_dim(m, "dim", 0, x->rank, &d));
  PTC_TRY(index_dtype(m, 1, true));
  if (idx->rank > 1) return meta_fail(m, "index is supposed to be a vector, got rank %u", idx->rank);
  expr cnt = idx->rank ? idx->shape[0] : K(m, 1);
  if (x->rank == 0) {
    PTC_TRY(meta_expect_eq(m, K(m, 1), cnt, "index of a 0-dim tensor must have one element"));
    return add_like(m, x);
  }
  expr* ns = new_exprs(m, x->rank);
  if (!ns) return ptc_status_oom();
  memcpy(ns, x->shape, x->rank * sizeof *ns);
  ns[d] = cnt;
  return meta_add_out(m, x->dtype, x->rank, ns);
}

/* Advanced indexing x[i0, i1, ...] (absent = full slice). The broadcast
 * index shape replaces the indexed dims in place when they are adjacent,
 * else it goes first (ATen / NumPy rule). */
static ptc_status meta_index(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  size_t k = m->n_in - 1;
  if (k > x->rank)
    return meta_fail(m, "too many indices for tensor of dimension %u (got %zu)", x->rank, k);
  int64_t first = -1, last = -1;
  uint32_t n_adv = 0;
  bool gap = false;
  for (size_t i = 0; i < k; i++) {
    const meta_tensor* t = m->in[i + 1];
    if (!t) continue;
    if (t->dtype == PTC_BOOL || t->dtype == PTC_U8)
      return meta_fail(m, "boolean mask indices (input %zu) are not supported: the output "
                       "shape would depend on the data", i + 1);
    PTC_TRY(index_dtype(m, i + 1, true));
    if (last >= 0 && (int64_t)i != last + 1) gap = true;
    if (first < 0) first = (int64_t)i;
    last = (int64_t)i;
    n_adv++;
  }
  if (first < 0) return meta_add_out(m, x->dtype, x->rank, x->shape);
  uint32_t br = 0;
  const sym_expr** bs = NULL;
  PTC_TRY(meta_broadcast_inputs(m, 1, &br, &bs));
  uint32_t nr = x->rank - n_adv + br;
  if (nr > PTC_MAX_RANK) return meta_fail(m, "output rank %u exceeds the limit %d", nr, PTC_MAX_RANK);
  expr* ns = new_exprs(m, nr);
  if (!ns) return ptc_status_oom();
  uint32_t pos = gap ? 0 : (uint32_t)first, o = 0;
  for (uint32_t i = 0; i < x->rank; i++) {
    if (i == pos)
      for (uint32_t j = 0; j < br; j++) ns[o++] = bs[j];
    if (i < k && m->in[i + 1]) continue;
    ns[o++] = x->shape[i];
  }
  return meta_add_out(m, x->dtype, nr, ns);
}

/* ---- triangles ------------------------------------------------------------------------------ */

static ptc_status meta_tri(meta_ctx* m) {
  const meta_tensor* x = NULL;
  PTC_TRY(need(m, 0, "self", &x));
  if (x->rank < 2)
    return meta_fail(m, "input tensor must have at least 2 dimensions, got %u", x->rank);
  return add_like(m, x);
}

/* ---- table ------------------------------------------------------------------------------------ */

#define END {NULL, 0, false}
static const op_attr_spec A_none[] = {END};
static const op_attr_spec A_size[] = {{"size", PTC_ATTR_INTS, true}, END};
static const op_attr_spec A_reshape[] = {{"shape", PTC_ATTR_INTS, false},
                                         {"size", PTC_ATTR_INTS, false}, END};
static const op_attr_spec A_permute[] = {{"dims", PTC_ATTR_INTS, true}, END};
static const op_attr_spec A_transpose[] = {{"dim0", PTC_ATTR_INT, true},
                                           {"dim1", PTC_ATTR_INT, true}, END};
static const op_attr_spec A_squeeze[] = {{"dim", PTC_ATTR_INTS, false}, END};
static const op_attr_spec A_dim[] = {{"dim", PTC_ATTR_INT, false}, END};
static const op_attr_spec A_dim_req[] = {{"dim", PTC_ATTR_INT, true}, END};
static const op_attr_spec A_flatten[] = {{"start_dim", PTC_ATTR_INT, false},
                                         {"end_dim", PTC_ATTR_INT, false}, END};
static const op_attr_spec A_unflatten[] = {{"dim", PTC_ATTR_INT, true},
                                           {"sizes", PTC_ATTR_INTS, true}, END};
static const op_attr_spec A_slice[] = {{"dim", PTC_ATTR_INT, false},
                                       {"start", PTC_ATTR_SYM, false},
                                       {"end", PTC_ATTR_SYM, false},
                                       {"step", PTC_ATTR_INT, false}, END};
static const op_attr_spec A_select[] = {{"dim", PTC_ATTR_INT, true},
                                        {"index", PTC_ATTR_SYM, true}, END};
static const op_attr_spec A_narrow[] = {{"dim", PTC_ATTR_INT, true},
                                        {"start", PTC_ATTR_SYM, true},
                                        {"length", PTC_ATTR_SYM, true}, END};
static const op_attr_spec A_as_strided[] = {{"size", PTC_ATTR_INTS, true},
                                            {"stride", PTC_ATTR_INTS, true},
                                            {"storage_offset", PTC_ATTR_SYM, false}, END};
static const op_attr_spec A_split[] = {{"split_size", PTC_ATTR_INT, false},
                                       {"split_sizes", PTC_ATTR_INTS, false},
                                       {"dim", PTC_ATTR_INT, false}, END};
static const op_attr_spec A_chunk[] = {{"chunks", PTC_ATTR_INT, true},
                                       {"dim", PTC_ATTR_INT, false}, END};
static const op_attr_spec A_scatter[] = {{"dim", PTC_ATTR_INT, true},
                                         {"value", PTC_ATTR_FLOAT, false}, END};
static const op_attr_spec A_tri[] = {{"diagonal", PTC_ATTR_INT, false}, END};

const op_def ptc_ops_shape[] = {
    {"view", 1, 1, OP_VIEW, A_size, meta_view},
    {"reshape", 1, 1, 0, A_reshape, meta_reshape},
    {"flatten", 1, 1, 0, A_flatten, meta_flatten},
    {"unflatten", 1, 1, OP_VIEW, A_unflatten, meta_unflatten},
    {"permute", 1, 1, OP_VIEW, A_permute, meta_permute},
    {"transpose", 1, 1, OP_VIEW, A_transpose, meta_transpose},
    {"expand", 1, 1, OP_VIEW, A_size, meta_expand},
    {"squeeze", 1, 1, OP_VIEW, A_squeeze, meta_squeeze},
    {"unsqueeze", 1, 1, OP_VIEW, A_dim_req, meta_unsqueeze},
    {"slice", 1, 1, OP_VIEW, A_slice, meta_slice},
    {"select", 1, 1, OP_VIEW, A_select, meta_select},
    {"narrow", 1, 1, OP_VIEW, A_narrow, meta_narrow},
    {"as_strided", 1, 1, OP_VIEW, A_as_strided, meta_as_strided},
    {"contiguous", 1, 1, 0, A_none, meta_contiguous},
    {"clone", 1, 1, 0, A_none, meta_clone},
    {"cat", 1, -1, 0, A_dim, meta_cat},
    {"stack", 1, -1, 0, A_dim, meta_stack},
    {"split", 1, 1, OP_MULTI_OUT, A_split, meta_split},
    {"chunk", 1, 1, OP_MULTI_OUT, A_chunk, meta_chunk},
    {"gather", 2, 2, 0, A_dim_req, meta_gather},
    {"scatter", 2, 3, 0, A_scatter, meta_scatter},
    {"scatter_add", 3, 3, 0, A_dim_req, meta_scatter_add},
    {"index_select", 2, 2, 0, A_dim_req, meta_index_select},
    {"index", 2, -1, 0, A_none, meta_index},
    {"tril", 1, 1, 0, A_tri, meta_tri},
    {"triu", 1, 1, 0, A_tri, meta_tri},
};
const size_t ptc_ops_shape_count = sizeof ptc_ops_shape / sizeof ptc_ops_shape[0];
