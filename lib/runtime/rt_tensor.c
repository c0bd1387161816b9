/* rt_tensor.c - helpers on runtime_tensor, the concrete strided views that
 * backends hand to single-node calls (fallback.c, custom_op.c): contiguous
 * strides, contiguity test, and a strided element copy. */
#include "backend.h"

#include <string.h>

void runtime_tensor_contiguous(runtime_tensor* t) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    t->strides[d] = s;
    s *= t->shape[d] > 0 ? t->shape[d] : 1;
  }
}

bool runtime_tensor_is_contiguous(const runtime_tensor* t) {
  int64_t s = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    if (t->shape[d] == 0) return true;
    if (t->shape[d] != 1 && t->strides[d] != s) return false;
    s *= t->shape[d];
  }
  return true;
}

static int64_t numel_of(const runtime_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
  return n;
}

/* Copies along the innermost dim for every outer index (row-major). */
void runtime_tensor_copy(const runtime_tensor* src, const runtime_tensor* dst) {
  size_t es = ptc_dtype_size(src->dtype);
  int64_t n = numel_of(src);
  if (n <= 0) return;
  if (runtime_tensor_is_contiguous(src) && runtime_tensor_is_contiguous(dst)) {
    memmove(dst->data, src->data, (size_t)n * es);
    return;
  }
  int32_t r = src->rank;
  int64_t inner = r ? src->shape[r - 1] : 1;
  int64_t ss = r ? src->strides[r - 1] : 1, ds = r ? dst->strides[r - 1] : 1;
  int64_t idx[PTC_MAX_RANK] = {0};
  for (int64_t row = 0; row < n / inner; row++) {
    int64_t so = 0, dof = 0;
    for (int32_t d = 0; d + 1 < r; d++) {
      so += idx[d] * src->strides[d];
      dof += idx[d] * dst->strides[d];
    }
    const char* sp = (const char*)src->data + so * (int64_t)es;
    char* dp = (char*)dst->data + dof * (int64_t)es;
    for (int64_t i = 0; i < inner; i++) memcpy(dp + i * ds * (int64_t)es, sp + i * ss * (int64_t)es, es);
    for (int32_t d = r - 2; d >= 0; d--) { /* advance the outer index */
      if (++idx[d] < src->shape[d]) break;
      idx[d] = 0;
    }
  }
}
