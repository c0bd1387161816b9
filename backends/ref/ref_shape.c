/* ref_shape.c - reference kernels of the shape family.
 *
 * Every output is a fresh contiguous buffer allocated by the executor, so
 * views are copies: a view op builds the strided view its meta function
 * describes (a ref_tensor with a shifted data pointer, shape and strides
 * over the input) and copies it; reshaping ops copy the elements in
 * row-major order. Index-driven ops (gather, scatter, scatter_add,
 * index_select, index) check every index value and return INVALID_ARGUMENT
 * naming the op, the index and the bound.
 */
#include "ref.h"

#include <string.h>

#define MAXR PTC_MAX_RANK

/* ---- element movement ------------------------------------------------------ */

static char* elem(const ref_tensor* t, int64_t off) {
  return (char*)t->data + off * (int64_t)ptc_dtype_size(t->dtype);
}

/* Copies one element, converting between dtypes as ATen's copy does. */
static void copy_elem(ref_tensor* dst, int64_t doff, const ref_tensor* src, int64_t soff) {
  if (dst->dtype == src->dtype)
    memcpy(elem(dst, doff), elem(src, soff), ptc_dtype_size(dst->dtype));
  else if (ptc_dtype_is_float(dst->dtype) || ptc_dtype_is_float(src->dtype))
    ref_store_f(dst, doff, ref_load_f(src, soff));
  else
    ref_store_i(dst, doff, ref_load_i(src, soff));
}

/* dst[i] = src[i] for every multi-index of src's shape (dst has it too). */
static void copy_same_shape(ref_tensor* dst, const ref_tensor* src) {
  int64_t idx[MAXR] = {0};
  if (ref_numel(src) == 0) return;
  do {
    copy_elem(dst, ref_offset(dst, idx), src, ref_offset(src, idx));
  } while (ref_next_index(src->rank, src->shape, idx));
}

/* Copies src's elements in row-major order into dst's row-major order. */
static ptc_status copy_flat(const ref_call* c, ref_tensor* dst, const ref_tensor* src) {
  int64_t n = ref_numel(src), si[MAXR] = {0}, di[MAXR] = {0};
  if (n != ref_numel(dst))
    return PTC_ERR(INTERNAL, "%s: %lld elements cannot fill an output of %lld",
                   c->node->op->name, (long long)n, (long long)ref_numel(dst));
  for (int64_t k = 0; k < n; k++) {
    copy_elem(dst, ref_offset(dst, di), src, ref_offset(src, si));
    ref_next_index(src->rank, src->shape, si);
    ref_next_index(dst->rank, dst->shape, di);
  }
  return PTC_OK;
}

/* ---- views of tensors ------------------------------------------------------------ */

/* t restricted to [start, start + len) along d, stepping by step. */
static ref_tensor narrowed(const ref_tensor* t, int32_t d, int64_t start, int64_t len,
                           int64_t step) {
  ref_tensor v = *t;
  v.data = elem(t, start * t->strides[d]);
  v.shape[d] = len;
  v.strides[d] = t->strides[d] * step;
  return v;
}

/* t with dim d fixed at index i (rank - 1). */
static ref_tensor selected(const ref_tensor* t, int32_t d, int64_t i) {
  ref_tensor v = *t;
  v.data = elem(t, i * t->strides[d]);
  for (int32_t k = d; k + 1 < t->rank; k++) {
    v.shape[k] = t->shape[k + 1];
    v.strides[k] = t->strides[k + 1];
  }
  v.rank = t->rank - 1;
  return v;
}

static int32_t attr_dim(const ref_call* c, const char* name, int64_t dflt, int32_t rank) {
  return ref_norm_dim(ref_attr_int(c, name, dflt), rank);
}

/* Python-style slice bound: negative counts from the end, clamped to [0, size]. */
static int64_t clamp_bound(int64_t i, int64_t size) {
  if (i < 0) return i < -size ? 0 : i + size;
  return i > size ? size : i;
}

static ptc_status out_of_range(const ref_call* c, int64_t v, int32_t dim, int64_t size) {
  return PTC_ERR(INVALID_ARGUMENT, "%s: index %lld is out of bounds for dimension %d with size %lld",
                 c->node->op->name, (long long)v, (int)dim, (long long)size);
}

/* ---- kernels: reshaping copies ------------------------------------------------------ */

/* view, reshape, flatten, unflatten, squeeze, unsqueeze, contiguous, clone:
 * the output holds the input's elements in row-major order. */
static ptc_status k_reshape(ref_call* c) { return copy_flat(c, &c->out[0], c->in[0]); }

/* ---- kernels: strided views ----------------------------------------------------------- */

static ptc_status k_permute(ref_call* c) {
  const ref_tensor* x = c->in[0];
  int64_t dims[MAXR];
  size_t n = ref_attr_ints(c, "dims", dims, MAXR);
  ref_tensor v = *x;
  for (size_t i = 0; i < n; i++) {
    int32_t d = ref_norm_dim(dims[i], x->rank);
    v.shape[i] = x->shape[d];
    v.strides[i] = x->strides[d];
  }
  copy_same_shape(&c->out[0], &v);
  return PTC_OK;
}

static ptc_status k_transpose(ref_call* c) {
  const ref_tensor* x = c->in[0];
  ref_tensor v = *x;
  if (x->rank > 0) {
    int32_t a = attr_dim(c, "dim0", 0, x->rank), b = attr_dim(c, "dim1", 0, x->rank);
    v.shape[a] = x->shape[b];
    v.strides[a] = x->strides[b];
    v.shape[b] = x->shape[a];
    v.strides[b] = x->strides[a];
  }
  copy_same_shape(&c->out[0], &v);
  return PTC_OK;
}

static ptc_status k_expand(ref_call* c) {
  ref_tensor v;
  ref_broadcast_to(c->in[0], c->out[0].rank, c->out[0].shape, &v);
  copy_same_shape(&c->out[0], &v);
  return PTC_OK;
}

static ptc_status k_slice(ref_call* c) {
  const ref_tensor* x = c->in[0];
  int32_t d = attr_dim(c, "dim", 0, x->rank);
  int64_t size = x->shape[d], step = ref_attr_int(c, "step", 1);
  int64_t start = clamp_bound(ref_attr_int(c, "start", 0), size);
  int64_t end = clamp_bound(ref_attr_int(c, "end", INT64_MAX), size);
  int64_t len = end > start ? (end - start + step - 1) / step : 0;
  if (len != c->out[0].shape[d])
    return PTC_ERR(INTERNAL, "slice: run-time length %lld differs from the planned %lld",
                   (long long)len, (long long)c->out[0].shape[d]);
  ref_tensor v = narrowed(x, d, start, len, step);
  copy_same_shape(&c->out[0], &v);
  return PTC_OK;
}

static ptc_status k_narrow(ref_call* c) {
  const ref_tensor* x = c->in[0];
  int32_t d = attr_dim(c, "dim", 0, x->rank);
  int64_t size = x->shape[d], start = ref_attr_int(c, "start", 0);
  int64_t len = ref_attr_int(c, "length", 0);
  if (start < 0) start += size;
  if (start < 0 || len < 0 || start > size - len)
    return PTC_ERR(INVALID_ARGUMENT, "narrow: start %lld + length %lld exceeds dimension size %lld",
                   (long long)start, (long long)len, (long long)size);
  ref_tensor v = narrowed(x, d, start, len, 1);
  copy_same_shape(&c->out[0], &v);
  return PTC_OK;
}

static ptc_status k_select(ref_call* c) {
  const ref_tensor* x = c->in[0];
  int32_t d = attr_dim(c, "dim", 0, x->rank);
  int64_t i = ref_attr_int(c, "index", 0);
  if (i < -x->shape[d] || i >= x->shape[d]) return out_of_range(c, i, d, x->shape[d]);
  ref_tensor v = selected(x, d, i < 0 ? i + x->shape[d] : i);
  copy_same_shape(&c->out[0], &v);
  return PTC_OK;
}

/* as_strided: offsets are relative to the input's first element and must
 * stay within the elements the input spans. */
static ptc_status k_as_strided(ref_call* c) {
  const ref_tensor* x = c->in[0];
  ref_tensor v = c->out[0];
  int64_t st[MAXR] = {0};
  ref_attr_ints(c, "stride", st, MAXR);
  int64_t off = ref_attr_int(c, "storage_offset", 0), reach = off, extent = 1;
  for (int32_t i = 0; i < x->rank; i++) extent += (x->shape[i] - 1) * x->strides[i];
  if (ref_numel(x) == 0) extent = 0;
  for (int32_t i = 0; i < v.rank; i++) {
    v.strides[i] = st[i];
    reach += (v.shape[i] - 1) * st[i];
  }
  if (ref_numel(&v) == 0) return PTC_OK;
  if (off < 0 || reach >= extent)
    return PTC_ERR(INVALID_ARGUMENT, "as_strided: the view reaches element %lld but the input spans "
                   "%lld elements", (long long)reach, (long long)extent);
  v.data = elem(x, off);
  v.dtype = x->dtype;
  copy_same_shape(&c->out[0], &v);
  return PTC_OK;
}

/* ---- kernels: joining and splitting ------------------------------------------------------ */

static ptc_status k_cat(ref_call* c) {
  ref_tensor* out = &c->out[0];
  int32_t d = attr_dim(c, "dim", 0, out->rank);
  int64_t at = 0;
  for (size_t i = 0; i < c->n_in; i++) {
    const ref_tensor* t = c->in[i];
    if (ref_numel(t) == 0) continue; /* adds nothing (legacy empty tensors included) */
    ref_tensor dst = narrowed(out, d, at, t->shape[d], 1);
    copy_same_shape(&dst, t);
    at += t->shape[d];
  }
  return PTC_OK;
}

static ptc_status k_stack(ref_call* c) {
  ref_tensor* out = &c->out[0];
  int32_t d = attr_dim(c, "dim", 0, out->rank);
  for (size_t i = 0; i < c->n_in; i++) {
    ref_tensor dst = selected(out, d, (int64_t)i);
    copy_same_shape(&dst, c->in[i]);
  }
  return PTC_OK;
}

/* split, chunk: output j is the next out[j].shape[d] entries of dim d. */
static ptc_status k_split(ref_call* c) {
  const ref_tensor* x = c->in[0];
  int32_t d = attr_dim(c, "dim", 0, x->rank);
  int64_t at = 0;
  for (size_t j = 0; j < c->n_out; j++) {
    int64_t len = c->out[j].shape[d];
    if (at + len > x->shape[d])
      return PTC_ERR(INTERNAL, "%s: pieces exceed the input", c->node->op->name);
    ref_tensor v = narrowed(x, d, at, len, 1);
    copy_same_shape(&c->out[j], &v);
    at += len;
  }
  return PTC_OK;
}

/* ---- kernels: indexing ------------------------------------------------------------------------- */

/* Reads index element `off` of `idx`, checked against size (negative values
 * wrap when `wrap`). */
static ptc_status read_index(const ref_call* c, const ref_tensor* idx, int64_t off, int32_t dim,
                             int64_t size, bool wrap, int64_t* out) {
  int64_t v = ref_load_i(idx, off);
  int64_t w = wrap && v < 0 ? v + size : v;
  if (w < 0 || w >= size) return out_of_range(c, v, dim, size);
  *out = w;
  return PTC_OK;
}

static int64_t size_or_one(const ref_tensor* t, int32_t d) { return t->rank ? t->shape[d] : 1; }

static ptc_status k_gather(ref_call* c) {
  const ref_tensor *x = c->in[0], *index = c->in[1];
  ref_tensor* out = &c->out[0];
  int32_t d = attr_dim(c, "dim", 0, x->rank);
  int64_t idx[MAXR] = {0}, src[MAXR] = {0};
  if (ref_numel(index) == 0) return PTC_OK;
  do {
    int64_t v = 0;
    PTC_TRY(read_index(c, index, ref_offset(index, idx), d, size_or_one(x, d), false, &v));
    memcpy(src, idx, sizeof src);
    src[d] = v;
    copy_elem(out, ref_offset(out, idx), x, ref_offset(x, src));
  } while (ref_next_index(index->rank, index->shape, idx));
  return PTC_OK;
}

/* Scalar source of scatter(value=) stored into dst at off. */
static void store_value(const ref_call* c, ref_tensor* dst, int64_t off) {
  const gattr* a = gattrs_find(c->attrs, "value");
  if (a && a->type == PTC_ATTR_FLOAT)
    ref_store_f(dst, off, a->f);
  else
    ref_store_i(dst, off, a ? a->i : 0);
}

/* Walks index positions, writing src[idx] (or the value) to acc at the
 * indexed position along d; `add` accumulates (acc is f64 or i64). */
static ptc_status scatter_into(const ref_call* c, ref_tensor* acc, const ref_tensor* index,
                               const ref_tensor* src, int32_t d, bool add) {
  int64_t idx[MAXR] = {0}, dst[MAXR] = {0};
  if (ref_numel(index) == 0) return PTC_OK;
  do {
    int64_t v = 0;
    PTC_TRY(read_index(c, index, ref_offset(index, idx), d, size_or_one(acc, d), false, &v));
    memcpy(dst, idx, sizeof dst);
    dst[d] = v;
    int64_t o = ref_offset(acc, dst);
    if (!src)
      store_value(c, acc, o);
    else if (!add)
      copy_elem(acc, o, src, ref_offset(src, idx));
    else if (acc->dtype == PTC_F64)
      ref_store_f(acc, o, ref_load_f(acc, o) + ref_load_f(src, ref_offset(src, idx)));
    else
      ref_store_i(acc, o, (int64_t)((uint64_t)ref_load_i(acc, o) +
                                    (uint64_t)ref_load_i(src, ref_offset(src, idx))));
  } while (ref_next_index(index->rank, index->shape, idx));
  return PTC_OK;
}

static ptc_status k_scatter(ref_call* c) {
  ref_tensor* out = &c->out[0];
  copy_same_shape(out, c->in[0]);
  const ref_tensor* src = c->n_in > 2 ? c->in[2] : NULL;
  return scatter_into(c, out, c->in[1], src, attr_dim(c, "dim", 0, out->rank), false);
}

/* scatter_add accumulates in f64 / i64 and rounds once into the output. */
static ptc_status k_scatter_add(ref_call* c) {
  ref_tensor* out = &c->out[0];
  ref_tensor acc;
  int32_t dt = ptc_dtype_is_float(out->dtype) ? PTC_F64 : PTC_I64;
  PTC_TRY(ref_tensor_alloc(c->ctx, dt, out->rank, out->shape, &acc));
  copy_same_shape(&acc, c->in[0]);
  ptc_status s = scatter_into(c, &acc, c->in[1], c->in[2], attr_dim(c, "dim", 0, out->rank), true);
  if (!s) copy_same_shape(out, &acc);
  ref_tensor_free(c->ctx, &acc);
  return s;
}

static ptc_status k_index_select(ref_call* c) {
  const ref_tensor *x = c->in[0], *index = c->in[1];
  ref_tensor* out = &c->out[0];
  int32_t d = attr_dim(c, "dim", 0, x->rank);
  int64_t n = ref_numel(index);
  for (int64_t i = 0; i < n; i++) {
    int64_t v = 0, off = index->rank ? i * index->strides[0] : 0;
    PTC_TRY(read_index(c, index, off, d, size_or_one(x, d), false, &v));
    if (x->rank == 0) {
      copy_elem(out, 0, x, 0);
      continue;
    }
    ref_tensor src = selected(x, d, v), dst = selected(out, d, i);
    copy_same_shape(&dst, &src);
  }
  return PTC_OK;
}

/* Layout of advanced indexing: index tensors broadcast to bshape (rank br),
 * placed at output position pos; x dim i (not indexed) lands at out_pos[i]. */
typedef struct adv_plan {
  int32_t br, pos;
  int64_t bshape[MAXR];
  int32_t out_pos[MAXR];
  ref_tensor idx[MAXR]; /* broadcast views; data NULL for a full slice */
} adv_plan;

static void plan_index(const ref_call* c, adv_plan* p) {
  const ref_tensor* x = c->in[0];
  int32_t first = -1, last = -1, o = 0;
  bool gap = false;
  memset(p, 0, sizeof *p);
  for (size_t i = 1; i < c->n_in; i++) {
    const ref_tensor* t = c->in[i];
    if (!t) continue;
    if (last >= 0 && (int32_t)i - 1 != last + 1) gap = true;
    if (first < 0) first = (int32_t)i - 1;
    last = (int32_t)i - 1;
    if (t->rank > p->br) p->br = t->rank;
  }
  for (int32_t k = 0; k < p->br; k++) p->bshape[k] = 1;
  for (size_t i = 1; i < c->n_in; i++) { /* broadcast shape (checked by meta) */
    const ref_tensor* t = c->in[i];
    for (int32_t k = 0; t && k < t->rank; k++)
      if (t->shape[k] != 1) p->bshape[k + p->br - t->rank] = t->shape[k];
  }
  p->pos = gap ? 0 : first;
  for (int32_t i = 0; i < x->rank; i++) {
    if (i == p->pos) o += p->br;
    bool adv = (size_t)i + 1 < c->n_in && c->in[i + 1];
    p->out_pos[i] = adv ? -1 : o++;
  }
  for (size_t i = 1; i < c->n_in; i++)
    if (c->in[i]) ref_broadcast_to(c->in[i], p->br, p->bshape, &p->idx[i - 1]);
}

static ptc_status k_index(ref_call* c) {
  const ref_tensor* x = c->in[0];
  ref_tensor* out = &c->out[0];
  adv_plan p;
  plan_index(c, &p);
  int64_t o[MAXR] = {0}, src[MAXR] = {0};
  if (ref_numel(out) == 0) return PTC_OK;
  do {
    for (int32_t i = 0; i < x->rank; i++) {
      if (p.out_pos[i] >= 0) {
        src[i] = o[p.out_pos[i]];
        continue;
      }
      PTC_TRY(read_index(c, &p.idx[i], ref_offset(&p.idx[i], o + p.pos), i, x->shape[i], true,
                         &src[i]));
    }
    copy_elem(out, ref_offset(out, o), x, ref_offset(x, src));
  } while (ref_next_index(out->rank, out->shape, o));
  return PTC_OK;
}

/* ---- kernels: triangles ------------------------------------------------------------------------- */

static ptc_status tri(ref_call* c, bool lower) {
  ref_tensor* out = &c->out[0];
  int64_t diag = ref_attr_int(c, "diagonal", 0), idx[MAXR] = {0};
  copy_same_shape(out, c->in[0]);
  if (ref_numel(out) == 0) return PTC_OK;
  do {
    int64_t k = idx[out->rank - 1] - idx[out->rank - 2];
    if (lower ? k > diag : k < diag)
      memset(elem(out, ref_offset(out, idx)), 0, ptc_dtype_size(out->dtype));
  } while (ref_next_index(out->rank, out->shape, idx));
  return PTC_OK;
}

static ptc_status k_tril(ref_call* c) { return tri(c, true); }
static ptc_status k_triu(ref_call* c) { return tri(c, false); }

const ref_kernel_entry ref_kernels_shape[] = {
    {"view", k_reshape},
    {"reshape", k_reshape},
    {"flatten", k_reshape},
    {"unflatten", k_reshape},
    {"squeeze", k_reshape},
    {"unsqueeze", k_reshape},
    {"contiguous", k_reshape},
    {"clone", k_reshape},
    {"permute", k_permute},
    {"transpose", k_transpose},
    {"expand", k_expand},
    {"slice", k_slice},
    {"select", k_select},
    {"narrow", k_narrow},
    {"as_strided", k_as_strided},
    {"cat", k_cat},
    {"stack", k_stack},
    {"split", k_split},
    {"chunk", k_split},
    {"gather", k_gather},
    {"scatter", k_scatter},
    {"scatter_add", k_scatter_add},
    {"index_select", k_index_select},
    {"index", k_index},
    {"tril", k_tril},
    {"triu", k_triu},
};
const size_t ref_kernels_shape_count = sizeof ref_kernels_shape / sizeof ref_kernels_shape[0];
