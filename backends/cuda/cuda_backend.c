/* cuda_backend.c - the cuda backend's vtable (ptc_cuda_backend): available
 * when libcuda.so.1, NVRTC and a device are present; device memory for
 * run_alloc's outputs from the caching allocator. */
#include "cuda_rt.h"

#include <stdlib.h>

static const char* cuda_unavailable(void) { return cuda_unavailable_reason(); }

static ptc_status cuda_prepare(ptc_context* ctx, const ptc_graph* g,
                               const ptc_compile_options* opts, void** out) {
  (void)ctx, (void)g, (void)opts, (void)out;
  return PTC_ERR(UNIMPLEMENTED, "cuda backend: code generation is not implemented yet");
}

static ptc_status cuda_run(void* state, const ptc_graph* g, const ptc_tensor* inputs, size_t n_in,
                           const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                           size_t n_syms, uint64_t seed) {
  (void)state, (void)g, (void)inputs, (void)n_in, (void)outputs, (void)n_out;
  (void)sym_values, (void)n_syms, (void)seed;
  return PTC_ERR(UNIMPLEMENTED, "cuda backend: not implemented yet");
}

static void cuda_destroy(void* state) { free(state); }

static ptc_status cuda_dev_alloc(size_t bytes, void* stream, void** out) {
  const cuda_device* d = cuda_device_get();
  if (!d) return PTC_ERR(UNAVAILABLE, "cuda backend: %s", cuda_unavailable_reason());
  cu_context prev;
  PTC_TRY(cuda_ctx_enter(d, &prev));
  cu_deviceptr p = 0;
  ptc_status s = cuda_alloc(bytes, (cu_stream)stream, &p);
  cuda_ctx_leave(d, prev);
  *out = (void*)(uintptr_t)p;
  return s;
}

static void cuda_dev_free(void* p) { cuda_free((cu_deviceptr)(uintptr_t)p); }

const backend_vtable ptc_cuda_backend = {
    .name = "cuda",
    .unavailable_reason = cuda_unavailable,
    .prepare = cuda_prepare,
    .run = cuda_run,
    .destroy = cuda_destroy,
    .device_type = PTC_DEVICE_CUDA,
    .alloc = cuda_dev_alloc,
    .free = cuda_dev_free,
};
