/* cuda_gemm_tc.c - the host side of the tensor-core GEMM: one module per
 * element type (the prelude and cuda_gemm_tc.cuh with PTC_TCG_TYPE defined),
 * built through the kernel cache and loaded into the primary context on
 * first use; the variant chosen from the operands' strides and alignment;
 * the launch (128x128 tiles on grid x/y, batch entries on z, 256 threads).
 */
#include "cuda_gemm_tc.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t tcg_lock = PTHREAD_MUTEX_INITIALIZER;
static cu_module tcg_module[3];
static cu_function tcg_fn[3][3]; /* [type: f16, bf16, tf32][variant] */
static bool tcg_ready[3];

static int type_index(int32_t dtype) {
  return dtype == PTC_F16 ? 0 : dtype == PTC_BF16 ? 1 : dtype == PTC_F32 ? 2 : -1;
}

bool cuda_gemm_tc_supports(const cuda_device* d, int32_t dtype, bool tf32) {
  if (!d || d->cc_major < 8) return false;
  return dtype == PTC_F16 || dtype == PTC_BF16 || (dtype == PTC_F32 && tf32);
}

static ptc_status load_module(ptc_context* ctx, const cuda_device* d, int ti) {
  static const char* const types[3] = {"f16", "bf16", "tf32"};
  static const char* const variants[3] = {"kk", "kn", "gen"};
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  ptc_sb_init(&src);
  ptc_sb_printf(&src, "// libptc tensor-core GEMM, %s (%s)\n#define PTC_TCG_TYPE %d\n", types[ti],
                PTC_CUDA_CODEGEN_VERSION, ti);
  ptc_sb_append(&src, ptc_cuda_prelude_text);
  ptc_sb_append(&src, ptc_cuda_gemm_tc_text);
  PTC_TRY(cuda_build_module(ctx, d->cc_major * 10 + d->cc_minor, &src, "ptc_gemm_tc",
                            "the tensor-core GEMM", &tcg_module[ti]));
  cu_result r = CU_SUCCESS;
  for (int v = 0; v < 3 && r == CU_SUCCESS; v++) {
    char name[64];
    snprintf(name, sizeof name, "ptc_tcg_%s_%s", types[ti], variants[v]);
    r = cu->ModuleGetFunction(&tcg_fn[ti][v], tcg_module[ti], name);
  }
  if (r != CU_SUCCESS) {
    cu->ModuleUnload(tcg_module[ti]);
    return cuda_error(r, "finding the tensor-core GEMM kernels");
  }
  return PTC_OK;
}

static bool al16(int64_t elems, size_t es) { return (elems * (int64_t)es) % 16 == 0; }

static bool batch_aligned(const cuda_mm_args* g, const int64_t* bs, size_t es) {
  for (int32_t d = 0; d < g->nb; d++)
    if (g->batch[d] > 1 && !al16(bs[d], es)) return false;
  return true;
}

int cuda_gemm_tc_variant(const cuda_mm_args* g, int32_t dtype, cu_deviceptr pa, cu_deviceptr pb) {
  size_t es = ptc_dtype_size(dtype);
  bool a_ok = g->a_sk == 1 && al16(g->a_sm, es) && pa % 16 == 0 && batch_aligned(g, g->a_bs, es);
  bool b_al = pb % 16 == 0 && batch_aligned(g, g->b_bs, es);
  if (a_ok && b_al && g->b_sk == 1 && al16(g->b_sn, es)) return CUDA_TCG_KK;
  if (a_ok && b_al && g->b_sn == 1 && al16(g->b_sk, es)) return CUDA_TCG_KN;
  return CUDA_TCG_GEN;
}

ptc_status cuda_gemm_tc(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                        const cuda_mm_args* g, int64_t count, int32_t dtype, bool tf32,
                        cu_deviceptr pa, cu_deviceptr pb, cu_deviceptr pbias, cu_deviceptr pc,
                        bool* done) {
  *done = false;
  int ti = type_index(dtype);
  if (ti < 0 || !cuda_gemm_tc_supports(d, dtype, tf32)) return PTC_OK;
  int64_t gx = (g->n + 127) / 128, gy = (g->m + 127) / 128;
  if (g->m <= 0 || g->n <= 0 || count <= 0) {
    *done = true;
    return PTC_OK;
  }
  if (gy > 65535 || count > 65535 || gx > INT32_MAX) return PTC_OK;
  pthread_mutex_lock(&tcg_lock);
  ptc_status s = tcg_ready[ti] ? PTC_OK : load_module(ctx, d, ti);
  if (!s) tcg_ready[ti] = true;
  pthread_mutex_unlock(&tcg_lock);
  PTC_TRY(s);
  int v = cuda_gemm_tc_variant(g, dtype, pa, pb);
  cuda_mm_args ga = *g;
  void* params[] = {&pa, &pb, &pbias, &pc, &ga};
  CUDA_TRY(cuda_libs_get()->cu.LaunchKernel(tcg_fn[ti][v], (unsigned)gx, (unsigned)gy,
                                            (unsigned)count, 256, 1, 1, 0, stream, params, NULL),
           "launching the tensor-core GEMM");
  *done = true;
  return PTC_OK;
}
