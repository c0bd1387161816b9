/* cuda_support.c - the process-wide module of fixed device kernels
 * (cuda_support.cuh: strided copies, the fallback GEMM, the GEMM
 * epilogue, im2col), built on first use
 * for the device's architecture through the kernel cache and loaded into
 * the primary context; and the host side of those kernels: argument
 * structs with the device layout and launch helpers. */
#include "cuda_plan.h"

#include "cuda_aot.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t sup_lock = PTHREAD_MUTEX_INITIALIZER;
static cuda_support sup;
static bool sup_ready;

/* The module's source (also promised to the ahead-of-time table). */
static void support_source(ptc_strbuf* src) {
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc support kernels (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_support_text);
}

ptc_status cuda_support_aot_sources(int arch, cuda_aot_src* out, size_t cap, size_t* n) {
  if (*n >= cap) return PTC_ERR(INTERNAL, "cuda backend: too many ahead-of-time sources");
  cuda_aot_src* o = &out[*n];
  support_source(&o->src);
  if (o->src.oom) {
    ptc_sb_free(&o->src);
    return ptc_status_oom();
  }
  o->arch = arch;
  snprintf(o->label, sizeof o->label, "support kernels sm_%d", arch);
  (*n)++;
  return PTC_OK;
}

static ptc_status load_support(ptc_context* ctx, const cuda_device* d) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  support_source(&src);
  PTC_TRY(cuda_build_module(ctx, d->cc_major * 10 + d->cc_minor, &src, "ptc_support",
                            "the support kernels", &sup.module));
  cu_result r = CU_SUCCESS;
  static const char* const copies[4] = {"ptc_copy_e1", "ptc_copy_e2", "ptc_copy_e4", "ptc_copy_e8"};
  static const char* const gemms[4] = {"ptc_gemm_f32", "ptc_gemm_f64", "ptc_gemm_f16", "ptc_gemm_bf16"};
  for (int i = 0; i < 4 && r == CU_SUCCESS; i++) r = cu->ModuleGetFunction(&sup.copy[i], sup.module, copies[i]);
  for (int i = 0; i < 4 && r == CU_SUCCESS; i++) r = cu->ModuleGetFunction(&sup.gemm[i], sup.module, gemms[i]);
  static const char* const epis[4] = {"ptc_epi_f32", "ptc_epi_f64", "ptc_epi_f16", "ptc_epi_bf16"};
  static const char* const cols[4] = {NULL, "ptc_im2col_e2", "ptc_im2col_e4", "ptc_im2col_e8"};
  for (int i = 0; i < 4 && r == CU_SUCCESS; i++) r = cu->ModuleGetFunction(&sup.epi[i], sup.module, epis[i]);
  for (int i = 1; i < 4 && r == CU_SUCCESS; i++) r = cu->ModuleGetFunction(&sup.im2col[i], sup.module, cols[i]);
  static const char* const pools[4] = {"ptc_pool_f32", "ptc_pool_f64", "ptc_pool_f16", "ptc_pool_bf16"};
  for (int i = 0; i < 4 && r == CU_SUCCESS; i++) r = cu->ModuleGetFunction(&sup.pool[i], sup.module, pools[i]);
  if (r != CU_SUCCESS) {
    cu->ModuleUnload(sup.module);
    return cuda_error(r, "finding the support kernels");
  }
  return PTC_OK;
}

ptc_status cuda_support_get(ptc_context* ctx, const cuda_device* d, const cuda_support** out) {
  pthread_mutex_lock(&sup_lock);
  ptc_status s = sup_ready ? PTC_OK : load_support(ctx, d);
  if (!s) sup_ready = true;
  pthread_mutex_unlock(&sup_lock);
  *out = s ? NULL : &sup;
  return s;
}

static int esize_index(size_t es) { return es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : es == 8 ? 3 : -1; }

ptc_status cuda_copy_strided(const cuda_support* su, const cuda_device* d, cu_stream stream,
                             const runtime_tensor* src, const runtime_tensor* dst) {
  int64_t n = 1;
  for (int32_t k = 0; k < src->rank; k++) n *= src->shape[k];
  if (n <= 0) return PTC_OK;
  int e = esize_index(ptc_dtype_size(src->dtype));
  if (e < 0 || src->rank > PTC_MAX_RANK)
    return PTC_ERR(INTERNAL, "cuda backend: cannot copy %s elements", ptc_dtype_name(src->dtype));
  cuda_copy_args a;
  memset(&a, 0, sizeof a);
  a.n = n;
  a.rank = src->rank;
  for (int32_t k = 0; k < src->rank; k++) {
    a.shape[k] = src->shape[k];
    a.src_st[k] = src->strides[k];
    a.dst_st[k] = dst->strides[k];
  }
  cu_deviceptr sp = (cu_deviceptr)(uintptr_t)src->data, dp = (cu_deviceptr)(uintptr_t)dst->data;
  void* params[] = {&sp, &dp, &a};
  int64_t blocks = (n + 255) / 256, cap = (int64_t)d->sm_count * 16;
  if (blocks > cap) blocks = cap;
  CUDA_TRY(cuda_libs_get()->cu.LaunchKernel(su->copy[e], (unsigned)blocks, 1, 1, 256, 1, 1, 0,
                                            stream, params, NULL),
           "launching a strided copy");
  return PTC_OK;
}
