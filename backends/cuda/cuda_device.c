/* cuda_device.c - the device the cuda backend runs on (device 0, as the
 * process sees it after CUDA_VISIBLE_DEVICES), initialised once: cuInit,
 * its primary context (retained for the life of the process), compute
 * capability, multiprocessor count, shared-memory limit and whether
 * generated and attention kernels use programmatic dependent launch; the
 * availability reason; making the primary context current for a call
 * (and restoring the caller's afterwards); driver errors as statuses. */
#include "cuda_rt.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cuda_device device;
static bool device_ok;
static char reason[320];
static pthread_once_t device_once = PTHREAD_ONCE_INIT;

static void driver_text(const cuda_libs* L, cu_result r, char* out, size_t cap) {
  const char* name = NULL;
  const char* text = NULL;
  if (L->have_cu) {
    L->cu.GetErrorName(r, &name);
    L->cu.GetErrorString(r, &text);
  }
  snprintf(out, cap, "%s (%s)", name ? name : "CUDA error", text ? text : "no description");
}

static void init_device(void) {
  const cuda_libs* L = cuda_libs_get();
  if (!L->have_cu) {
    snprintf(reason, sizeof reason, "%s", L->cu_error);
    return;
  }
  if (!L->have_nvrtc) {
    snprintf(reason, sizeof reason, "%s", L->nvrtc_error);
    return;
  }
  char txt[200];
  cu_result r = L->cu.Init(0);
  int n = 0;
  if (r == CU_SUCCESS) r = L->cu.DeviceGetCount(&n);
  if (r == CU_ERROR_NO_DEVICE || (r == CU_SUCCESS && n == 0)) {
    snprintf(reason, sizeof reason, "no CUDA device");
    return;
  }
  if (r != CU_SUCCESS) {
    driver_text(L, r, txt, sizeof txt);
    snprintf(reason, sizeof reason, "CUDA driver initialisation failed: %s", txt);
    return;
  }
  cuda_device* d = &device;
  r = L->cu.DeviceGet(&d->dev, 0);
  if (r == CU_SUCCESS) r = L->cu.DeviceGetAttribute(&d->cc_major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR, d->dev);
  if (r == CU_SUCCESS) r = L->cu.DeviceGetAttribute(&d->cc_minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR, d->dev);
  if (r == CU_SUCCESS) r = L->cu.DeviceGetAttribute(&d->sm_count, CU_ATTR_MULTIPROCESSOR_COUNT, d->dev);
  if (r == CU_SUCCESS)
    r = L->cu.DeviceGetAttribute(&d->max_smem_optin, CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, d->dev);
  if (r == CU_SUCCESS) r = L->cu.DeviceGetName(d->name, (int)sizeof d->name - 1, d->dev);
  if (r == CU_SUCCESS) r = L->cu.DevicePrimaryCtxRetain(&d->ctx, d->dev);
  if (r != CU_SUCCESS) {
    driver_text(L, r, txt, sizeof txt);
    snprintf(reason, sizeof reason, "CUDA device 0 is unusable: %s", txt);
    return;
  }
  if (d->sm_count < 1) d->sm_count = 1;
  d->pdl = cuda_pdl_wanted(d->cc_major, L->cu.LaunchKernelEx != NULL, getenv("PTC_CUDA_PDL"));
  int drv = 0;
  d->pdl_capture = d->pdl && L->cu.DriverGetVersion(&drv) == CU_SUCCESS && cuda_pdl_capture_ok(drv);
  device_ok = true;
}

const cuda_device* cuda_device_get(void) {
  pthread_once(&device_once, init_device);
  return device_ok ? &device : NULL;
}

const char* cuda_unavailable_reason(void) {
  return cuda_device_get() ? NULL : reason;
}

ptc_status cuda_error(cu_result r, const char* what) {
  char txt[200];
  driver_text(cuda_libs_get(), r, txt, sizeof txt);
  if (r == CU_ERROR_OUT_OF_MEMORY)
    return PTC_ERR(RESOURCE_EXHAUSTED, "cuda backend: %s: %s", what, txt);
  return PTC_ERR(INTERNAL, "cuda backend: %s: %s", what, txt);
}

ptc_status cuda_ctx_enter(const cuda_device* d, cu_context* prev) {
  const cu_api* cu = &cuda_libs_get()->cu;
  *prev = NULL;
  CUDA_TRY(cu->CtxGetCurrent(prev), "cuCtxGetCurrent");
  if (*prev != d->ctx) CUDA_TRY(cu->CtxSetCurrent(d->ctx), "cuCtxSetCurrent");
  return PTC_OK;
}

void cuda_ctx_leave(const cuda_device* d, cu_context prev) {
  if (prev != d->ctx) cuda_libs_get()->cu.CtxSetCurrent(prev);
}
