/* cuda_test_dev.h - device tensors for the cuda kernel tests (attention,
 * the attention rewrite, welford, GEMM, convolution): a graph input filled on the host by the
 * test's own value generator, copied to the device and seen as a CUDA
 * ptc_tensor; the element reader, the compile call and the NVRTC check of
 * generated kernels those tests share.
 * Test code only: not thread-safe (uses the NULL stream synchronously). */
#ifndef PTC_TESTS_CUDA_TEST_DEV_H
#define PTC_TESTS_CUDA_TEST_DEV_H

#include "ptc/ptc.h"
#include "backends/cuda/cuda_rt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ctd_tensor {
  ptc_tensor t;      /* the host tensor (t.data = host) */
  int64_t shape[8];
  void* host;        /* owned; freed by ctd_free */
  size_t bytes;
  cu_deviceptr dev;  /* owned device copy (cuda_alloc); freed by ctd_free */
} ctd_tensor;

/* One element's value for input `info` (a bool input stores value != 0);
 * called once per element in order, so a test's random stream is its own. */
typedef double (*ctd_fill_fn)(void* user, const ptc_value_info* info);

/* Graph input i of g as a ctd_tensor: shape from the graph, values from
 * fill (f32, f64, f16, bf16, bool), copied to the device. False on any
 * failure (h is then safe to ctd_free). */
bool ctd_make_input(const ptc_graph* g, size_t i, ctd_fill_fn fill, void* user, ctd_tensor* h);

/* Frees what ctd_make_input allocated. */
void ctd_free(ctd_tensor* h);

/* h's device copy as a CUDA tensor (device 0); h keeps ownership. */
ptc_tensor ctd_on_device(const ctd_tensor* h);

/* Element k of a host array of dtype dt (f32, f64, f16, else bf16) as a double. */
double ctd_load(const void* p, int32_t dt, int64_t k);

/* Element k of a host array of dtype dt (f32, f64, f16, else bf16) set to x
 * rounded to dt; returns the stored value as a double. */
double ctd_store(void* p, int32_t dt, int64_t k, double x);

/* The next value in [-1, 1) of the test's xorshift stream (one stream per
 * process, same seed in every test). */
double ctd_urand(void);

/* x through GEMM/conv epilogue activation act (an ir_activation) in double. */
double ctd_act_ref(int act, double x);

/* The GPU half's start: without a usable cuda backend prints a SKIP line
 * and returns false; else makes the primary context current, prints the
 * device ("device: name (sm_XY, N SMs)") and returns true. */
bool ctd_gpu_enter(void);

/* Compiles translation unit tu (kernel sources, NULL = none) with NVRTC for
 * sm_80 and sm_90 (cuda_check_compile). Without NVRTC prints why and
 * returns true (nothing to check here); on a failure prints the status and
 * the start of the compiler log and returns false. */
bool ctd_nvrtc_check(const char* tu);

/* The float32 whose bits are u, and the bits of f. */
float ctd_f32_from_bits(uint32_t u);
uint32_t ctd_f32_bits(float f);

/* The first `bytes` of device tensor t (data + byte_offset) into host,
 * waiting for the NULL stream; an INTERNAL status if the copy fails. */
ptc_status ctd_download(const ptc_tensor* t, void* host, size_t bytes);

/* ptc_compile of g with default options on `backend`. */
ptc_status ctd_compile(ptc_context* ctx, const ptc_graph* g, const char* backend, ptc_executable** e);

#endif
