/* ref_tensor.c - element access with dtype conversion, strided indexing,
 * broadcasting views, temporaries, and attribute access for ref kernels. */
#include "ref.h"

#include <math.h>
#include <string.h>

static int64_t wrap_int(int32_t dt, int64_t v) {
  switch (dt) {
    case PTC_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case PTC_I16: return (int16_t)(uint16_t)(uint64_t)v;
    case PTC_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case PTC_U8: return (uint8_t)(uint64_t)v;
    case PTC_BOOL: return v != 0;
    default: return v;
  }
}

double ref_load_f(const ref_tensor* t, int64_t off) {
  const void* p = t->data;
  switch (t->dtype) {
    case PTC_F32: return ((const float*)p)[off];
    case PTC_F64: return ((const double*)p)[off];
    case PTC_F16: return ptc_f16_to_f32(((const uint16_t*)p)[off]);
    case PTC_BF16: return ptc_bf16_to_f32(((const uint16_t*)p)[off]);
    case PTC_I8: return ((const int8_t*)p)[off];
    case PTC_I16: return ((const int16_t*)p)[off];
    case PTC_I32: return ((const int32_t*)p)[off];
    case PTC_I64: return (double)((const int64_t*)p)[off];
    case PTC_U8: return ((const uint8_t*)p)[off];
    case PTC_BOOL: return ((const uint8_t*)p)[off] != 0;
    default: return 0;
  }
}

int64_t ref_load_i(const ref_tensor* t, int64_t off) {
  const void* p = t->data;
  switch (t->dtype) {
    case PTC_I8: return ((const int8_t*)p)[off];
    case PTC_I16: return ((const int16_t*)p)[off];
    case PTC_I32: return ((const int32_t*)p)[off];
    case PTC_I64: return ((const int64_t*)p)[off];
    case PTC_U8: return ((const uint8_t*)p)[off];
    case PTC_BOOL: return ((const uint8_t*)p)[off] != 0;
    default: {
      double d = ref_load_f(t, off);
      if (isnan(d)) return 0;
      if (d >= 9.2233720368547758e18) return INT64_MAX;
      if (d <= -9.2233720368547758e18) return INT64_MIN;
      return (int64_t)d;
    }
  }
}

/* float -> integer storage: truncation toward zero through int64, then wrap
 * (matches ATen on the values ATen defines). */
static int64_t f_to_i(double v) {
  if (isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MIN; /* x86 cvttsd2si result */
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

void ref_store_f(ref_tensor* t, int64_t off, double v) {
  void* p = t->data;
  switch (t->dtype) {
    case PTC_F32: ((float*)p)[off] = (float)v; break;
    case PTC_F64: ((double*)p)[off] = v; break;
    case PTC_F16: ((uint16_t*)p)[off] = ptc_f32_to_f16((float)v); break;
    case PTC_BF16: ((uint16_t*)p)[off] = ptc_f32_to_bf16((float)v); break;
    case PTC_BOOL: ((uint8_t*)p)[off] = v != 0; break;
    default: ref_store_i(t, off, f_to_i(v)); break;
  }
}

void ref_store_i(ref_tensor* t, int64_t off, int64_t v) {
  void* p = t->data;
  switch (t->dtype) {
    case PTC_I8: ((int8_t*)p)[off] = (int8_t)wrap_int(PTC_I8, v); break;
    case PTC_I16: ((int16_t*)p)[off] = (int16_t)wrap_int(PTC_I16, v); break;
    case PTC_I32: ((int32_t*)p)[off] = (int32_t)wrap_int(PTC_I32, v); break;
    case PTC_I64: ((int64_t*)p)[off] = v; break;
    case PTC_U8: ((uint8_t*)p)[off] = (uint8_t)wrap_int(PTC_U8, v); break;
    case PTC_BOOL: ((uint8_t*)p)[off] = v != 0; break;
    default: ref_store_f(t, off, (double)v); break;
  }
}

int64_t ref_numel(const ref_tensor* t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}

int64_t ref_offset(const ref_tensor* t, const int64_t* idx) {
  int64_t o = 0;
  for (int32_t i = 0; i < t->rank; i++) o += idx[i] * t->strides[i];
  return o;
}

void ref_broadcast_to(const ref_tensor* t, int32_t rank, const int64_t* shape, ref_tensor* out) {
  ref_tensor r = *t;
  r.rank = rank;
  for (int32_t i = 0; i < rank; i++) {
    int32_t j = i - (rank - t->rank);
    r.shape[i] = shape[i];
    r.strides[i] = (j < 0 || t->shape[j] == 1) ? 0 : t->strides[j];
  }
  *out = r;
}

bool ref_next_index(int32_t rank, const int64_t* shape, int64_t* idx) {
  for (int32_t i = rank - 1; i >= 0; i--) {
    if (++idx[i] < shape[i]) return true;
    idx[i] = 0;
  }
  return false;
}

void ref_contiguous_strides(int32_t rank, const int64_t* shape, int64_t* strides) {
  int64_t acc = 1;
  for (int32_t i = rank - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= shape[i] > 0 ? shape[i] : 1;
  }
}

ptc_status ref_tensor_alloc(ptc_context* ctx, int32_t dtype, int32_t rank, const int64_t* shape,
                            ref_tensor* out) {
  ref_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.rank = rank;
  int64_t n = 1, bytes;
  for (int32_t i = 0; i < rank; i++) {
    t.shape[i] = shape[i];
    if (!ptc_mul_ok(n, shape[i], &n)) return PTC_ERR(RESOURCE_EXHAUSTED, "tensor too large");
  }
  if (!ptc_mul_ok(n, (int64_t)ptc_dtype_size(dtype), &bytes) || (uint64_t)bytes > SIZE_MAX / 2)
    return PTC_ERR(RESOURCE_EXHAUSTED, "tensor too large");
  ref_contiguous_strides(rank, shape, t.strides);
  t.data = ptc_calloc_ctx(ctx, (size_t)bytes + 16);
  if (!t.data)
    return PTC_ERR(RESOURCE_EXHAUSTED, "out of memory allocating %lld bytes", (long long)bytes);
  *out = t;
  return PTC_OK;
}

void ref_tensor_free(ptc_context* ctx, ref_tensor* t) {
  if (!t->data) return;
  int64_t n = ref_numel(t);
  ptc_free_ctx(ctx, t->data, (size_t)(n * (int64_t)ptc_dtype_size(t->dtype)) + 16, 16);
  t->data = NULL;
}

static const gattr* find(const ref_call* c, const char* name) {
  return c->attrs ? gattrs_find(c->attrs, name) : NULL;
}

bool ref_attr_has(const ref_call* c, const char* name) { return find(c, name) != NULL; }

int64_t ref_attr_int(const ref_call* c, const char* name, int64_t dflt) {
  const gattr* a = find(c, name);
  if (!a) return dflt;
  if (a->type == PTC_ATTR_FLOAT) return (int64_t)a->f;
  if (a->type == PTC_ATTR_SYM && a->sym) {
    int64_t v = dflt;
    ptc_status s = sym_eval(a->sym, c->sym_values, c->n_sym_values, &v);
    ptc_status_destroy(s);
    return v;
  }
  return a->i;
}

double ref_attr_float(const ref_call* c, const char* name, double dflt) {
  const gattr* a = find(c, name);
  if (!a) return dflt;
  return a->type == PTC_ATTR_FLOAT ? a->f : (double)ref_attr_int(c, name, 0);
}

bool ref_attr_bool(const ref_call* c, const char* name, bool dflt) {
  const gattr* a = find(c, name);
  return a ? a->i != 0 : dflt;
}

const char* ref_attr_str(const ref_call* c, const char* name, const char* dflt) {
  const gattr* a = find(c, name);
  return a && a->s ? a->s : dflt;
}

int32_t ref_attr_dtype(const ref_call* c, const char* name, int32_t dflt) {
  const gattr* a = find(c, name);
  return a ? (int32_t)a->i : dflt;
}

size_t ref_attr_ints(const ref_call* c, const char* name, int64_t* out, size_t cap) {
  const gattr* a = find(c, name);
  if (!a || a->type != PTC_ATTR_INTS) return 0;
  size_t n = a->count < cap ? a->count : cap;
  for (size_t i = 0; i < n; i++) {
    out[i] = 0;
    ptc_status s = sym_eval(a->exprs[i], c->sym_values, c->n_sym_values, &out[i]);
    ptc_status_destroy(s);
  }
  return n;
}

int32_t ref_norm_dim(int64_t dim, int32_t rank) {
  int32_t r = rank == 0 ? 1 : rank;
  return (int32_t)(dim < 0 ? dim + r : dim);
}
