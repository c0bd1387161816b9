/* conv_geom.c - the convolution geometry the cpu and cuda convolution
 * externs share: spatial attributes (stride, padding, dilation) of a conv
 * node evaluated to (h, w) pairs, and a tensor view seen as [N, C, H, W]
 * (batch dim added when unbatched, unit H for 1-D convolutions). */
#include "backend.h"

#include <string.h>

ptc_status runtime_conv_spatial_attr(const gnode* n, const char* name, const int64_t* syms,
                                     size_t n_syms, int32_t nsp, int64_t dflt, int64_t* out) {
  out[0] = out[1] = dflt;
  const gattr* a = gattrs_find(&n->attrs, name);
  if (!a || a->count == 0 || !a->exprs) return PTC_OK;
  int64_t v[2] = {dflt, dflt};
  for (size_t i = 0; i < a->count && i < 2; i++) PTC_TRY(sym_eval(a->exprs[i], syms, n_syms, &v[i]));
  if (a->count == 1) v[1] = v[0];
  if (nsp == 1)
    out[1] = v[0];
  else
    memcpy(out, v, sizeof v);
  return PTC_OK;
}

void runtime_conv_as_4d(const runtime_tensor* t, int32_t nsp, bool batched, int64_t* shape,
                        int64_t* strides) {
  int32_t j = 0;
  if (!batched) {
    shape[j] = 1;
    strides[j++] = 0;
  }
  for (int32_t d = 0; d < t->rank; d++) {
    if (nsp == 1 && j == 2) {
      shape[j] = 1;
      strides[j++] = 0;
    }
    shape[j] = t->shape[d];
    strides[j++] = t->strides[d];
  }
}
