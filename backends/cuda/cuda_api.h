/* cuda_api.h - the small subset of the CUDA Driver API, NVRTC and cuBLASLt
 * that the cuda backend calls, declared here (not taken from cuda.h) so the
 * library builds without a CUDA toolkit: opaque handle types, the handful
 * of enum values used, and one function table per library. The tables are
 * filled by cuda_loader.c with dlsym on libraries opened at run time; a
 * NULL table entry means "not available". Values follow the public CUDA
 * ABI (stable across driver versions; versioned entry points such as
 * cuMemAlloc_v2 are looked up under their versioned names).
 */
#ifndef PTC_BACKENDS_CUDA_API_H
#define PTC_BACKENDS_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

/* ---- Driver API types ------------------------------------------------------ */
typedef int cu_result;                     /* CUresult: 0 = CUDA_SUCCESS */
typedef int cu_device;                     /* CUdevice */
typedef struct cu_ctx_st* cu_context;      /* CUcontext */
typedef struct cu_mod_st* cu_module;       /* CUmodule */
typedef struct cu_func_st* cu_function;    /* CUfunction */
typedef struct cu_stream_st* cu_stream;    /* CUstream (NULL = legacy default stream) */
typedef struct cu_event_st* cu_event;      /* CUevent */
typedef unsigned long long cu_deviceptr;   /* CUdeviceptr */
typedef struct cu_graph_st* cu_graph;      /* CUgraph */
typedef struct cu_graph_exec_st* cu_graph_exec; /* CUgraphExec */

enum {
  CU_SUCCESS = 0,
  CU_ERROR_OUT_OF_MEMORY = 2,
  CU_ERROR_NOT_INITIALIZED = 3,
  CU_ERROR_NO_DEVICE = 100,
  CU_ERROR_INVALID_DEVICE = 101,
  CU_ERROR_NOT_READY = 600,
  CU_ERROR_NOT_SUPPORTED = 801
};

/* CUdevice_attribute values used */
enum {
  CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
  CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
};

/* CUstreamCaptureMode / CUstreamCaptureStatus values used (CUDA graphs) */
enum { CU_CAPTURE_MODE_RELAXED = 2 };
enum { CU_CAPTURE_STATUS_NONE = 0, CU_CAPTURE_STATUS_ACTIVE = 1 };
/* cuStreamCreate flags */
enum { CU_STREAM_NON_BLOCKING = 1 };
/** cuEventCreate flag: no timing (cheaper record / query). */
enum { CU_EVENT_DISABLE_TIMING = 2 };

/* CUpointer_attribute values used */
enum { CU_POINTER_ATTR_MEMORY_TYPE = 2, CU_POINTER_ATTR_DEVICE_ORDINAL = 9 };
/* CUmemorytype */
enum { CU_MEMTYPE_HOST = 1, CU_MEMTYPE_DEVICE = 2, CU_MEMTYPE_UNIFIED = 4 };

/* cuLaunchKernelEx's CUlaunchAttribute (an id, padding to 8, a 64-byte
 * value union) and CUlaunchConfig, as the Driver API lays them out. */
enum { CU_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6 };
typedef struct cu_launch_attr {
  int id;
  char pad[4];
  union {
    char raw[64];
    long long align;
    int programmatic_serialization; /* non-0: may overlap the previous kernel */
  } value;
} cu_launch_attr;
typedef struct cu_launch_config {
  unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
  cu_stream stream;
  cu_launch_attr* attrs;
  unsigned n_attrs;
} cu_launch_config;

/* ---- NVRTC types ------------------------------------------------------------- */
typedef int nvrtc_result;                  /* nvrtcResult: 0 = NVRTC_SUCCESS */
typedef struct nvrtc_prog_st* nvrtc_program;
enum { NVRTC_OK = 0 };

/* ---- cuBLASLt types (only what the GEMM extern needs) ------------------------ */
typedef int cublas_status;                 /* cublasStatus_t: 0 = success */
typedef struct cublaslt_ctx_st* cublaslt_handle;
typedef struct cublaslt_desc_st* cublaslt_matmul_desc;
typedef struct cublaslt_layout_st* cublaslt_layout;
typedef struct cublaslt_pref_st* cublaslt_pref;
/** cublasLtMatmulHeuristicResult_t: an algo blob (8 x uint64) + fields. */
typedef struct cublaslt_heuristic {
  uint64_t algo[8];
  size_t workspace_size;
  int state;
  float waves_count;
  int reserved[4];
} cublaslt_heuristic;

/* ---- function tables ------------------------------------------------------------ */
/** The Driver API entry points (versioned names noted). */
typedef struct cu_api {
  cu_result (*Init)(unsigned flags);
  cu_result (*DriverGetVersion)(int* v);
  cu_result (*DeviceGetCount)(int* n);
  cu_result (*DeviceGet)(cu_device* d, int ordinal);
  cu_result (*DeviceGetName)(char* name, int len, cu_device d);
  cu_result (*DeviceGetAttribute)(int* v, int attr, cu_device d);
  cu_result (*DevicePrimaryCtxRetain)(cu_context* c, cu_device d);
  cu_result (*DevicePrimaryCtxRelease)(cu_device d);            /* _v2 */
  cu_result (*CtxGetCurrent)(cu_context* c);
  cu_result (*CtxSetCurrent)(cu_context c);
  cu_result (*CtxGetDevice)(cu_device* d);
  cu_result (*CtxSynchronize)(void);
  cu_result (*ModuleLoadData)(cu_module* m, const void* image);
  cu_result (*ModuleUnload)(cu_module m);
  cu_result (*ModuleGetFunction)(cu_function* f, cu_module m, const char* name);
  cu_result (*FuncSetAttribute)(cu_function f, int attr, int value);
  cu_result (*LaunchKernel)(cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shmem, cu_stream s, void** params,
                            void** extra);
  cu_result (*MemAlloc)(cu_deviceptr* p, size_t bytes);          /* _v2 */
  cu_result (*MemFree)(cu_deviceptr p);                          /* _v2 */
  cu_result (*MemGetInfo)(size_t* free_b, size_t* total_b);      /* _v2 */
  cu_result (*MemcpyHtoDAsync)(cu_deviceptr d, const void* h, size_t n, cu_stream s); /* _v2 */
  cu_result (*MemcpyDtoHAsync)(void* h, cu_deviceptr d, size_t n, cu_stream s);       /* _v2 */
  cu_result (*MemcpyDtoDAsync)(cu_deviceptr d, cu_deviceptr s_, size_t n, cu_stream s); /* _v2 */
  cu_result (*MemsetD8Async)(cu_deviceptr d, unsigned char v, size_t n, cu_stream s);
  cu_result (*StreamSynchronize)(cu_stream s);
  cu_result (*StreamCreate)(cu_stream* s, unsigned flags);
  cu_result (*StreamDestroy)(cu_stream s);                      /* _v2 */
  cu_result (*PointerGetAttribute)(void* data, int attr, cu_deviceptr p);
  cu_result (*GetErrorString)(cu_result r, const char** s);
  cu_result (*GetErrorName)(cu_result r, const char** s);
  /* ---- optional entries (CUDA graphs, cuda_graph.c): filled when present,
   * NULL otherwise; a missing one turns graph mode off, never fails the
   * library. Loaded from the separate optional rows of cuda_loader.c. */
  cu_result (*StreamBeginCapture)(cu_stream s, int mode);                /* _v2 */
  cu_result (*StreamEndCapture)(cu_stream s, cu_graph* g);
  cu_result (*StreamIsCapturing)(cu_stream s, int* status);
  cu_result (*GraphInstantiateWithFlags)(cu_graph_exec* x, cu_graph g, unsigned long long flags);
  cu_result (*GraphLaunch)(cu_graph_exec x, cu_stream s);
  cu_result (*GraphExecDestroy)(cu_graph_exec x);
  cu_result (*GraphDestroy)(cu_graph g);
  /* ---- optional entries (deferred kernel-error checks, cuda_plan_run.c):
   * NULL when absent; runs then wait for their error word as before. */
  cu_result (*EventCreate)(cu_event* e, unsigned flags);
  cu_result (*EventRecord)(cu_event e, cu_stream s);
  cu_result (*EventQuery)(cu_event e);                           /* CU_ERROR_NOT_READY: pending */
  cu_result (*EventSynchronize)(cu_event e);
  cu_result (*EventDestroy)(cu_event e);                         /* _v2 */
  cu_result (*MemAllocHost)(void** p, size_t bytes);             /* _v2: pinned host memory */
  cu_result (*MemFreeHost)(void* p);
  /* ---- optional entry (the Hopper attention kernel's TMA loads,
   * cuda_attn_wg.c): cuTensorMapEncodeTiled; NULL when absent (the kernel
   * then copies with cp.async). map: a 64-byte aligned 128-byte CUtensorMap;
   * the enums as ints. */
  cu_result (*TensorMapEncodeTiled)(void* map, int dtype, unsigned rank, void* gaddr,
                                    const uint64_t* dims, const uint64_t* strides,
                                    const unsigned* box, const unsigned* estrides, int interleave,
                                    int swizzle, int l2promo, int oobfill);
  /* ---- optional entry (programmatic dependent launch of generated kernels,
   * cuda_launch.c): cuLaunchKernelEx (CUDA 12.0+); NULL when absent, and
   * kernels are then launched with cuLaunchKernel. */
  cu_result (*LaunchKernelEx)(const cu_launch_config* cfg, cu_function f, void** params,
                              void** extra);
} cu_api;

/** The NVRTC entry points. */
typedef struct nvrtc_api {
  nvrtc_result (*Version)(int* major, int* minor);
  nvrtc_result (*CreateProgram)(nvrtc_program* p, const char* src, const char* name, int n_headers,
                                const char* const* headers, const char* const* include_names);
  nvrtc_result (*DestroyProgram)(nvrtc_program* p);
  nvrtc_result (*CompileProgram)(nvrtc_program p, int n_opts, const char* const* opts);
  nvrtc_result (*GetProgramLogSize)(nvrtc_program p, size_t* n);
  nvrtc_result (*GetProgramLog)(nvrtc_program p, char* log);
  nvrtc_result (*GetCUBINSize)(nvrtc_program p, size_t* n);
  nvrtc_result (*GetCUBIN)(nvrtc_program p, char* cubin);
  const char* (*GetErrorString)(nvrtc_result r);
} nvrtc_api;

/** The cuBLASLt entry points (all present or the table is unusable). */
typedef struct cublaslt_api {
  cublas_status (*Create)(cublaslt_handle* h);
  cublas_status (*Destroy)(cublaslt_handle h);
  cublas_status (*MatmulDescCreate)(cublaslt_matmul_desc* d, int compute_type, int scale_type);
  cublas_status (*MatmulDescDestroy)(cublaslt_matmul_desc d);
  cublas_status (*MatmulDescSetAttribute)(cublaslt_matmul_desc d, int attr, const void* buf,
                                          size_t size);
  cublas_status (*MatrixLayoutCreate)(cublaslt_layout* l, int type, uint64_t rows, uint64_t cols,
                                      int64_t ld);
  cublas_status (*MatrixLayoutDestroy)(cublaslt_layout l);
  cublas_status (*MatrixLayoutSetAttribute)(cublaslt_layout l, int attr, const void* buf,
                                            size_t size);
  cublas_status (*PreferenceCreate)(cublaslt_pref* p);
  cublas_status (*PreferenceDestroy)(cublaslt_pref p);
  cublas_status (*PreferenceSetAttribute)(cublaslt_pref p, int attr, const void* buf, size_t size);
  cublas_status (*AlgoGetHeuristic)(cublaslt_handle h, cublaslt_matmul_desc d, cublaslt_layout a,
                                    cublaslt_layout b, cublaslt_layout c, cublaslt_layout dl,
                                    cublaslt_pref p, int n_req, cublaslt_heuristic* res,
                                    int* n_ret);
  cublas_status (*Matmul)(cublaslt_handle h, cublaslt_matmul_desc d, const void* alpha,
                          const void* a, cublaslt_layout al, const void* b, cublaslt_layout bl,
                          const void* beta, const void* c, cublaslt_layout cl, void* dst,
                          cublaslt_layout dl, const void* algo, void* ws, size_t ws_size,
                          cu_stream s);
} cublaslt_api;

#endif /* PTC_BACKENDS_CUDA_API_H */
