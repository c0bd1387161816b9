/* cuda_test_dev.c - device tensors for the cuda kernel tests (see
 * cuda_test_dev.h). */
#include "cuda_test_dev.h"

#include "backends/cuda/cuda.h"
#include "lib/core/core.h"
#include "lib/ir/ir.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

bool ctd_make_input(const ptc_graph* g, size_t i, ctd_fill_fn fill, void* user, ctd_tensor* h) {
  memset(h, 0, sizeof *h);
  ptc_value_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  ptc_status st = ptc_graph_value_info(g, ptc_graph_input(g, i), &info);
  if (st) {
    ptc_status_destroy(st);
    return false;
  }
  if (info.rank > 8) return false;
  int64_t n = 1;
  for (uint32_t d = 0; d < info.rank; d++) {
    h->shape[d] = info.shape[d].value;
    n *= h->shape[d];
  }
  h->bytes = (size_t)n * ptc_dtype_size(info.dtype);
  h->host = malloc(h->bytes ? h->bytes : 1);
  if (!h->host) return false;
  for (int64_t k = 0; k < n; k++) {
    double x = fill(user, &info);
    switch (info.dtype) {
      case PTC_F32: ((float*)h->host)[k] = (float)x; break;
      case PTC_F64: ((double*)h->host)[k] = x; break;
      case PTC_F16: ((uint16_t*)h->host)[k] = ptc_f32_to_f16((float)x); break;
      case PTC_BF16: ((uint16_t*)h->host)[k] = ptc_f32_to_bf16((float)x); break;
      case PTC_BOOL: ((uint8_t*)h->host)[k] = x != 0; break;
      default: return false;
    }
  }
  h->t.data = h->host;
  h->t.device.device_type = PTC_DEVICE_CPU;
  h->t.ndim = (int32_t)info.rank;
  h->t.dtype = ptc_dtype_to_dl(info.dtype);
  h->t.shape = h->shape;
  ptc_status st2 = cuda_alloc(h->bytes ? h->bytes : 16, NULL, &h->dev);
  if (st2) {
    ptc_status_destroy(st2);
    return false;
  }
  return !h->bytes || (cu()->MemcpyHtoDAsync(h->dev, h->host, h->bytes, NULL) == CU_SUCCESS &&
                       cu()->StreamSynchronize(NULL) == CU_SUCCESS);
}

void ctd_free(ctd_tensor* h) {
  free(h->host);
  if (h->dev) cuda_free(h->dev);
  h->host = NULL;
  h->dev = 0;
}

ptc_tensor ctd_on_device(const ctd_tensor* h) {
  ptc_tensor t = h->t;
  t.data = (void*)(uintptr_t)h->dev;
  t.device.device_type = PTC_DEVICE_CUDA;
  t.device.device_id = 0;
  return t;
}

double ctd_store(void* p, int32_t dt, int64_t k, double x) {
  switch (dt) {
    case PTC_F64: return ((double*)p)[k] = x;
    case PTC_F32: return ((float*)p)[k] = (float)x;
    case PTC_F16: {
      uint16_t v = ((uint16_t*)p)[k] = ptc_f32_to_f16((float)x);
      return ptc_f16_to_f32(v);
    }
    default: {
      uint16_t v = ((uint16_t*)p)[k] = ptc_f32_to_bf16((float)x);
      return ptc_bf16_to_f32(v);
    }
  }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

double ctd_urand(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

double ctd_act_ref(int act, double x) {
  switch (act) {
    case IR_ACT_RELU: return x < 0 ? 0 : x;
    case IR_ACT_GELU: return 0.5 * x * (1 + erf(x * 0.70710678118654752440));
    case IR_ACT_GELU_TANH: return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case IR_ACT_SILU: return x / (1 + exp(-x));
    case IR_ACT_SIGMOID: return 1 / (1 + exp(-x));
    case IR_ACT_TANH: return tanh(x);
    default: return x;
  }
}

double ctd_load(const void* p, int32_t dt, int64_t k) {
  switch (dt) {
    case PTC_F32: return ((const float*)p)[k];
    case PTC_F64: return ((const double*)p)[k];
    case PTC_F16: return ptc_f16_to_f32(((const uint16_t*)p)[k]);
    default: return ptc_bf16_to_f32(((const uint16_t*)p)[k]);
  }
}

float ctd_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

uint32_t ctd_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

ptc_status ctd_download(const ptc_tensor* t, void* host, size_t bytes) {
  if (cu()->MemcpyDtoHAsync(host, (cu_deviceptr)(uintptr_t)t->data + t->byte_offset, bytes, NULL) !=
          CU_SUCCESS ||
      cu()->StreamSynchronize(NULL) != CU_SUCCESS)
    return PTC_ERR(INTERNAL, "copying a result to the host");
  return PTC_OK;
}

ptc_status ctd_compile(ptc_context* ctx, const ptc_graph* g, const char* backend, ptc_executable** e) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  return ptc_compile(ctx, g, &o, e);
}

bool ctd_gpu_enter(void) {
  const char* why = NULL;
  if (!ptc_backend_available("cuda", &why)) {
    printf("SKIP: the cuda backend is not available here: %s\n", why ? why : "?");
    return false;
  }
  const cuda_device* dev = cuda_device_get();
  cu_context prev;
  ptc_status_destroy(cuda_ctx_enter(dev, &prev));
  printf("device: %s (sm_%d%d, %d SMs)\n", dev->name, dev->cc_major, dev->cc_minor, dev->sm_count);
  return true;
}

bool ctd_nvrtc_check(const char* tu) {
  const char* why = cuda_nvrtc_unavailable();
  if (why) {
    printf("NVRTC not available (%s): kernels not compiled\n", why);
    return true;
  }
  const int archs[2] = {80, 90};
  cuda_check_stats stats;
  memset(&stats, 0, sizeof stats);
  ptc_status s = cuda_check_compile(tu ? tu : "", archs, 2, &stats);
  if (s) {
    const char* log = ptc_status_detail(s, "compiler_log");
    printf("NVRTC: %s\n%.4000s\n", ptc_status_message(s), log ? log : "");
  }
  bool ok = !s;
  ptc_status_destroy(s);
  return ok;
}
