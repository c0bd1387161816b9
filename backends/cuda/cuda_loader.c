/* cuda_loader.c - opens libcuda.so.1, NVRTC (libnvrtc.so.13, then .12, then
 * the same under /usr/local/cuda/lib64, then the unversioned name) and
 * cuBLASLt (libcublasLt.so.13 / .12) with dlopen, once per process, and
 * fills the function tables of cuda_api.h with dlsym. A library with a
 * missing entry point counts as absent (its table is not used). Nothing is
 * ever dlclosed: the driver keeps threads and state for the process. */
#include "cuda_rt.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cuda_libs libs;
static pthread_once_t libs_once = PTHREAD_ONCE_INIT;

typedef struct sym_row {
  const char* name;
  size_t offset; /* of the function pointer in its table */
} sym_row;

#define CU_ROW(field, name) {name, offsetof(cu_api, field)}
static const sym_row cu_rows[] = {
    CU_ROW(Init, "cuInit"),
    CU_ROW(DriverGetVersion, "cuDriverGetVersion"),
    CU_ROW(DeviceGetCount, "cuDeviceGetCount"),
    CU_ROW(DeviceGet, "cuDeviceGet"),
    CU_ROW(DeviceGetName, "cuDeviceGetName"),
    CU_ROW(DeviceGetAttribute, "cuDeviceGetAttribute"),
    CU_ROW(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    CU_ROW(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
    CU_ROW(CtxGetCurrent, "cuCtxGetCurrent"),
    CU_ROW(CtxSetCurrent, "cuCtxSetCurrent"),
    CU_ROW(CtxGetDevice, "cuCtxGetDevice"),
    CU_ROW(CtxSynchronize, "cuCtxSynchronize"),
    CU_ROW(ModuleLoadData, "cuModuleLoadData"),
    CU_ROW(ModuleUnload, "cuModuleUnload"),
    CU_ROW(ModuleGetFunction, "cuModuleGetFunction"),
    CU_ROW(FuncSetAttribute, "cuFuncSetAttribute"),
    CU_ROW(LaunchKernel, "cuLaunchKernel"),
    CU_ROW(MemAlloc, "cuMemAlloc_v2"),
    CU_ROW(MemFree, "cuMemFree_v2"),
    CU_ROW(MemGetInfo, "cuMemGetInfo_v2"),
    CU_ROW(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    CU_ROW(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    CU_ROW(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    CU_ROW(MemsetD8Async, "cuMemsetD8Async"),
    CU_ROW(StreamSynchronize, "cuStreamSynchronize"),
    CU_ROW(StreamCreate, "cuStreamCreate"),
    CU_ROW(StreamDestroy, "cuStreamDestroy_v2"),
    CU_ROW(PointerGetAttribute, "cuPointerGetAttribute"),
    CU_ROW(GetErrorString, "cuGetErrorString"),
    CU_ROW(GetErrorName, "cuGetErrorName"),
};

/* Optional Driver API entries (CUDA graphs): absent ones stay NULL and the
 * library still counts as present; cuda_graph.c checks them. */
static const sym_row cu_optional_rows[] = {
    CU_ROW(StreamBeginCapture, "cuStreamBeginCapture_v2"),
    CU_ROW(StreamEndCapture, "cuStreamEndCapture"),
    CU_ROW(StreamIsCapturing, "cuStreamIsCapturing"),
    CU_ROW(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags"),
    CU_ROW(GraphLaunch, "cuGraphLaunch"),
    CU_ROW(GraphExecDestroy, "cuGraphExecDestroy"),
    CU_ROW(GraphDestroy, "cuGraphDestroy"),
    CU_ROW(EventCreate, "cuEventCreate"),
    CU_ROW(EventRecord, "cuEventRecord"),
    CU_ROW(EventQuery, "cuEventQuery"),
    CU_ROW(EventSynchronize, "cuEventSynchronize"),
    CU_ROW(EventDestroy, "cuEventDestroy_v2"),
    CU_ROW(MemAllocHost, "cuMemAllocHost_v2"),
    CU_ROW(MemFreeHost, "cuMemFreeHost"),
    CU_ROW(TensorMapEncodeTiled, "cuTensorMapEncodeTiled"),
    CU_ROW(LaunchKernelEx, "cuLaunchKernelEx"),
};

#define NV_ROW(field, name) {name, offsetof(nvrtc_api, field)}
static const sym_row nvrtc_rows[] = {
    NV_ROW(Version, "nvrtcVersion"),
    NV_ROW(CreateProgram, "nvrtcCreateProgram"),
    NV_ROW(DestroyProgram, "nvrtcDestroyProgram"),
    NV_ROW(CompileProgram, "nvrtcCompileProgram"),
    NV_ROW(GetProgramLogSize, "nvrtcGetProgramLogSize"),
    NV_ROW(GetProgramLog, "nvrtcGetProgramLog"),
    NV_ROW(GetCUBINSize, "nvrtcGetCUBINSize"),
    NV_ROW(GetCUBIN, "nvrtcGetCUBIN"),
    NV_ROW(GetErrorString, "nvrtcGetErrorString"),
};

#define LT_ROW(field, name) {name, offsetof(cublaslt_api, field)}
static const sym_row lt_rows[] = {
    LT_ROW(Create, "cublasLtCreate"),
    LT_ROW(Destroy, "cublasLtDestroy"),
    LT_ROW(MatmulDescCreate, "cublasLtMatmulDescCreate"),
    LT_ROW(MatmulDescDestroy, "cublasLtMatmulDescDestroy"),
    LT_ROW(MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute"),
    LT_ROW(MatrixLayoutCreate, "cublasLtMatrixLayoutCreate"),
    LT_ROW(MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy"),
    LT_ROW(MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute"),
    LT_ROW(PreferenceCreate, "cublasLtMatmulPreferenceCreate"),
    LT_ROW(PreferenceDestroy, "cublasLtMatmulPreferenceDestroy"),
    LT_ROW(PreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute"),
    LT_ROW(AlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic"),
    LT_ROW(Matmul, "cublasLtMatmul"),
};

/* Fills `table` from `h`; false (with the missing name in why) if one is absent. */
static bool fill_table(void* h, const sym_row* rows, size_t n, void* table, char* why,
                       size_t cap) {
  for (size_t i = 0; i < n; i++) {
    void* f = dlsym(h, rows[i].name);
    if (!f) {
      snprintf(why, cap, "symbol %s not found", rows[i].name);
      return false;
    }
    memcpy((char*)table + rows[i].offset, &f, sizeof f); /* object -> function pointer (POSIX) */
  }
  return true;
}

/* dlopen of the first name that opens; the last error in why. */
static void* open_first(const char* const* names, size_t n, char* opened, size_t ocap, char* why,
                        size_t cap) {
  for (size_t i = 0; i < n; i++) {
    if (!names[i] || !*names[i]) continue;
    void* h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) {
      if (opened) snprintf(opened, ocap, "%s", names[i]);
      return h;
    }
    const char* e = dlerror();
    snprintf(why, cap, "%s", e ? e : names[i]);
  }
  return NULL;
}

static bool env_off(const char* name) {
  const char* v = getenv(name);
  return v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0);
}

static void load_cuda(void) {
  const char* dis = getenv("PTC_CUDA_DISABLE");
  if (dis && *dis && strcmp(dis, "0") != 0) {
    snprintf(libs.cu_error, sizeof libs.cu_error, "libcuda.so.1 not loaded: PTC_CUDA_DISABLE is set");
    return;
  }
  char why[200] = "not found";
  const char* names[] = {"libcuda.so.1"};
  void* h = open_first(names, 1, NULL, 0, why, sizeof why);
  if (!h) {
    snprintf(libs.cu_error, sizeof libs.cu_error, "libcuda.so.1 not found: %.200s", why);
    return;
  }
  if (!fill_table(h, cu_rows, sizeof cu_rows / sizeof cu_rows[0], &libs.cu, why, sizeof why)) {
    snprintf(libs.cu_error, sizeof libs.cu_error, "libcuda.so.1 is too old: %.200s", why);
    return;
  }
  for (size_t i = 0; i < sizeof cu_optional_rows / sizeof cu_optional_rows[0]; i++) {
    void* f = dlsym(h, cu_optional_rows[i].name); /* NULL when absent */
    memcpy((char*)&libs.cu + cu_optional_rows[i].offset, &f, sizeof f);
  }
  libs.have_cu = true;
}

static void load_nvrtc(void) {
  const char* names[] = {getenv("PTC_NVRTC_PATH"),
                         "libnvrtc.so.13",
                         "libnvrtc.so.12",
                         "/usr/local/cuda/lib64/libnvrtc.so.13",
                         "/usr/local/cuda/lib64/libnvrtc.so.12",
                         "/usr/local/cuda/lib/libnvrtc.so.13",
                         "/usr/local/cuda/lib/libnvrtc.so.12",
                         "libnvrtc.so"};
  char why[200] = "not found";
  void* h = open_first(names, sizeof names / sizeof names[0], libs.nvrtc_path,
                       sizeof libs.nvrtc_path, why, sizeof why);
  if (!h) {
    snprintf(libs.nvrtc_error, sizeof libs.nvrtc_error, "NVRTC (libnvrtc.so.13/.12) not found: %.200s",
             why);
    return;
  }
  if (!fill_table(h, nvrtc_rows, sizeof nvrtc_rows / sizeof nvrtc_rows[0], &libs.nvrtc, why,
                  sizeof why) ||
      libs.nvrtc.Version(&libs.nvrtc_major, &libs.nvrtc_minor) != NVRTC_OK) {
    snprintf(libs.nvrtc_error, sizeof libs.nvrtc_error, "%.100s is unusable: %.140s", libs.nvrtc_path, why);
    return;
  }
  libs.have_nvrtc = true;
}

static void load_cublaslt(void) {
  if (env_off("PTC_CUBLASLT")) return;
  const char* names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                         "/usr/local/cuda/lib64/libcublasLt.so.13",
                         "/usr/local/cuda/lib64/libcublasLt.so.12"};
  char why[200];
  void* h = open_first(names, sizeof names / sizeof names[0], NULL, 0, why, sizeof why);
  if (h && fill_table(h, lt_rows, sizeof lt_rows / sizeof lt_rows[0], &libs.lt, why, sizeof why))
    libs.have_lt = true;
}

static void load_all(void) {
  load_cuda();
  load_nvrtc();
  if (libs.have_cu) load_cublaslt();
}

const cuda_libs* cuda_libs_get(void) {
  pthread_once(&libs_once, load_all);
  return &libs;
}
