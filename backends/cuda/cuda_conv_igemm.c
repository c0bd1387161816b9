/* cuda_conv_igemm.c - the host side of the implicit-GEMM convolution
 * (device code in cuda_conv_igemm.cuh): one module per element type (the
 * prelude and the kernel text with PTC_CIG_TYPE defined), built through the
 * kernel cache and loaded on first use; which convolutions it takes; the
 * launch shape (block rows, K splits) from a small cost model; the
 * launches (the weight copy when needed, the counters of split K, the
 * convolution). */
#include "cuda_conv_igemm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CIG_BN 128
#define CIG_KROW 80
#define CIG_STAGES 3 /* PTC_CIG_STAGES */
#define CIG_FUNC_MAX_DYNAMIC_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
#define CIG_TABLE_MAX_K 8192        /* most K entries of one block's table */
#define CIG_MAX_SPLITS 16

/* Device layout of ptc_cig_args (cuda_conv_igemm.cuh). */
typedef struct cuda_cig_args {
  int64_t xs_n, xs_c, xs_h, xs_w;
  int64_t w_row;
  int64_t bias_st;
  int32_t h, w;
  int32_t oc, oh, ow, ohw;
  int32_t kh, kw, sh, sw, ph, pw, dh, dw;
  int32_t cg, ocg;
  int32_t kdim;
  int32_t ncols;
  int32_t kps;
  int32_t splits;
  int32_t act, has_bias;
  int32_t pair;
  int32_t nchunk;
  float beta;
  int32_t vio; /* 1 channels-last input by cp.async, 2 channels-last output */
} cuda_cig_args;

/* Device layout of ptc_cig_mp_args (cuda_conv_igemm.cuh). */
typedef struct cuda_cig_mp_args {
  int32_t h, w, oh, ow, cv;
  int32_t kh, kw, sh, sw, ph, pw, dh, dw;
  int32_t total;
} cuda_cig_mp_args;

/* Device layout of ptc_cig_i2c_args (cuda_conv_igemm.cuh). */
typedef struct cuda_cig_i2c_args {
  int32_t kh, kw, h, w, oh, ow, ohw;
  int32_t sh, sw, ph, pw, dh, dw;
  int32_t xs_n, xs_c, xs_h, xs_w;
  int32_t ncols, nvec;
} cuda_cig_i2c_args;

#define CIG_VARIANTS 8
typedef struct cig_module {
  cu_module module[CIG_VARIANTS]; /* one per convolution kernel (PTC_CIG_VARIANT) */
  cu_function conv[2][2]; /* [channel-major, tap-major][BM 64, 128] */
  cu_function conv_w4[2]; /* [channel-major, tap-major], BM 64, 4-warp blocks (when built) */
  cu_function conv_v[2];  /* channels-last input, tap-major: [BM 64 4-warp, BM 128 8-warp] */
  cu_function wcopy;
  cu_function i2c;     /* the wide im2col (cuda_conv_igemm_im2col) */
  cu_function mpool;   /* the channels-last max pool (cuda_conv_igemm_maxpool) */
  cu_function i2cn;    /* the wide im2col of a channels-last input */
  int64_t smem_max;    /* dynamic shared memory the conv kernels may use */
} cig_module;

static pthread_mutex_t cig_lock = PTHREAD_MUTEX_INITIALIZER;
static cig_module cig_mod[3]; /* f16, bf16, tf32 */
static bool cig_ready[3];
static bool cig_broken[3];    /* the module failed to build or load: not tried again */

static int type_index(int32_t dtype) {
  return dtype == PTC_F16 ? 0 : dtype == PTC_BF16 ? 1 : dtype == PTC_F32 ? 2 : -1;
}

static const char* const cig_types[3] = {"f16", "bf16", "tf32"};

static int64_t k_step(int32_t dtype) { return 64 / (int64_t)ptc_dtype_size(dtype); }

static int64_t stage_bytes(int bm) { return CIG_STAGES * (int64_t)(bm + CIG_BN) * CIG_KROW; }

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* PTC_CUDA_CONV_DEFER=0: the kernels of the old pipeline, which convert
 * the gathered input (TF32 rounding, 16-bit pairing) right after its loads
 * instead of when it is stored to shared memory (PTC_CIG_DEFER in the
 * .cuh; for comparisons). Read when a type's modules are built (once per
 * process). */
static bool conv_defer(void) {
  const char* v = getenv("PTC_CUDA_CONV_DEFER");
  return !(v && *v == '0');
}

/* PTC_CUDA_CONV_OCC: the blocks per SM the 4-warp kernels are built for
 * (their launch bounds). Unset or 1: 4 for the channel-major TF32 kernel
 * (128 registers, no spills: 16 warps per SM instead of 12; H100 resnet18
 * b32 stem, in the model: 0.187 -> 0.173 ms), 3 for the rest (tap-major
 * TF32 at 4: layer1 0.410 -> 0.440 ms for its 4 convolutions, its 784
 * blocks then fill 1.48 waves of 528 (ncu: SMs active 78% of the time);
 * f16/bf16 at 4 spill); 2: 4 for every 4-warp kernel; 0: 3 for all (the
 * kernels before). Read when a type's modules are built (once per
 * process). */
int cuda_conv_igemm_w4_blocks(int32_t dtype, bool tap) {
  const char* v = getenv("PTC_CUDA_CONV_OCC");
  int p = v && *v ? atoi(v) : 1;
  if (p == 0) return 3;
  return p == 2 || (dtype == PTC_F32 && !tap) ? 4 : 3;
}

/* Whether a BM-64 convolution (at most 64 output channels per group) runs
 * on the 4-warp blocks (128 threads, 32x64 warp tiles: fewer shared-memory
 * fragment loads per MMA, 3 blocks per SM) instead of 8-warp ones.
 * PTC_CUDA_CONV_W4=0 never, 1 always; unset: tap-major ones, and
 * channel-major ones in TF32 (H100, test_cuda_conv --bench, resnet18 b32:
 * TF32 layer1 3x3 0.102 vs 0.113 ms, stem 7x7 0.157 vs 0.168; bf16 layer1
 * 0.064 vs 0.068, but the bf16 stem 0.137 vs 0.122). Needs the deferred
 * conversion (the modules are built only with it). Read per call (tests
 * and benchmarks switch it). */
static bool conv_w4(bool tap, int32_t dtype) {
  if (!conv_defer()) return false;
  const char* v = getenv("PTC_CUDA_CONV_W4");
  if (v && *v) return *v != '0';
  return tap || dtype == PTC_F32;
}

/* ---- which convolutions ----------------------------------------------------------------- */

/* The strides of a channels-last input the t*v kernels read by cp.async
 * (16 bytes along C); the pointer's alignment aside. */
static bool vec_strides(const cuda_conv_desc* d) {
  const char* v = getenv("PTC_CUDA_CONV_NHWC_IN");
  if (v && *v == '0') return false;
  int64_t es = (int64_t)ptc_dtype_size(d->dtype);
  int64_t cg = d->groups > 0 ? d->c / d->groups : 0;
  return es > 0 && (d->xs[1] == 1 || d->c == 1) && cg > 0 && (cg * es) % 16 == 0 &&
         (d->xs[0] * es) % 16 == 0 && (d->xs[2] * es) % 16 == 0 && (d->xs[3] * es) % 16 == 0;
}

bool cuda_conv_igemm_vec_input(const cuda_conv_desc* d, cu_deviceptr x) {
  return vec_strides(d) && x % 16 == 0;
}

/* PTC_CUDA_CONV_NHWC_BM64=0: a TF32 convolution of a channels-last input
 * with 65-128 output channels per group on 128-row tiles (t128v, 8 warps)
 * instead of 64-row ones on 4-warp blocks (t64w4v). H100, resnet18 b32
 * fp32 through the backend, layer2's 5 convolutions with t64w4v at 3
 * blocks per SM: 0.302 ms vs 0.321 on t128v. Read per call. */
static bool nhwc_bm64(void) {
  const char* v = getenv("PTC_CUDA_CONV_NHWC_BM64");
  return !(v && *v == '0');
}

const char* cuda_conv_igemm_refusal(int cc_major, const cuda_conv_desc* d, bool tf32) {
  if (cc_major < 8) return "the implicit-GEMM convolution needs sm_80";
  if (d->dtype != PTC_F16 && d->dtype != PTC_BF16 && !(d->dtype == PTC_F32 && tf32))
    return "dtype (f16, bf16, or f32 with TF32 allowed)";
  if (d->groups < 1 || d->c % d->groups || d->oc % d->groups) return "groups";
  int64_t cg = d->c / d->groups, ocg = d->oc / d->groups, kdim = cg * d->kh * d->kw;
  if (d->n < 1 || cg < 1 || ocg < 1 || d->kh < 1 || d->kw < 1 || d->oh < 1 || d->ow < 1)
    return "empty sizes";
  if (d->sh < 1 || d->sw < 1 || d->dh < 1 || d->dw < 1 || d->ph < 0 || d->pw < 0)
    return "strides, dilation or padding";
  for (int i = 0; i < 4; i++)
    if (d->xs[i] < 0 || d->ws[i] < 0) return "negative strides";
  if (d->n * d->oh * d->ow > INT32_MAX - 4096 || kdim > INT32_MAX / 2 || d->oc > INT32_MAX / 2)
    return "sizes beyond 32-bit indices";
  if (d->h + d->ph > 32000 || d->w + d->pw > 32000 || (d->kh - 1) * d->dh > 32000 ||
      (d->kw - 1) * d->dw > 32000 || (d->oh - 1) * d->sh > 32000 || (d->ow - 1) * d->sw > 32000)
    return "planes or windows beyond the packed 16-bit offsets";
  /* the largest window offset of one column: 32-bit */
  double span = (double)(cg - 1) * (double)d->xs[1] + (double)((d->kh - 1) * d->dh) * (double)d->xs[2] +
                (double)((d->kw - 1) * d->dw) * (double)d->xs[3];
  if (span > 2147483000.0) return "window offsets beyond 32 bits";
  return NULL;
}

/* The table limit on a device opting into smem_optin bytes per block. */
static int64_t table_max_k(int bm, int64_t kt, int64_t smem_optin) {
  int64_t room = (smem_optin > 0 ? smem_optin : 48 * 1024) - stage_bytes(bm);
  int64_t k = room / 8;
  if (k > CIG_TABLE_MAX_K) k = CIG_TABLE_MAX_K;
  return k / kt * kt;
}

void cuda_conv_igemm_shape(const cuda_conv_desc* d, int sm_count, int64_t smem_optin,
                           cuda_conv_shape* o) {
  memset(o, 0, sizeof *o);
  int64_t cg = d->c / d->groups, ocg = d->oc / d->groups, kk = d->kh * d->kw;
  int64_t kt = k_step(d->dtype);
  int64_t ncols = d->n * d->oh * d->ow;
  const char* tv = getenv("PTC_CUDA_CONV_TAP"); /* read per call: tests switch it */
  o->tap = tv && *tv ? atoi(tv) != 0 : 2 * cg >= kt;
  /* K steps: tap-major kk taps x channel chunks, else the K range in steps */
  int64_t nk = o->tap ? kk * cdiv(cg, kt) : cdiv(cg * kk, kt);
  o->bm = ocg <= 64 || (o->tap && d->dtype == PTC_F32 && ocg <= 128 && vec_strides(d) && nhwc_bm64()) ? 64 : 128;
  const char* bv = getenv("PTC_CUDA_CONV_BM"); /* read per call: benchmarks force 64 or 128 */
  if (bv && (atoi(bv) == 64 || atoi(bv) == 128)) o->bm = atoi(bv);
  o->threads = o->bm == 64 && conv_w4(o->tap, d->dtype) ? 128 : 256;
  o->gx = cdiv(ncols, CIG_BN);
  o->gy = cdiv(ocg, o->bm);
  int64_t blocks = o->gx * o->gy * d->groups;
  int64_t tmax = o->tap ? nk * kt : table_max_k(o->bm, kt, smem_optin);
  int64_t smin = tmax > 0 ? cdiv(nk * kt, tmax) : nk;
  int64_t best = 1;
  const char* force = getenv("PTC_CUDA_CONV_SPLIT"); /* read per call: benchmarks set it */
  if (force && atoi(force) > 0) {
    best = atoi(force);
  } else {
    /* time ~ K steps per split x blocks per SM (a lone block runs below the
     * SM's throughput) + the partial sums written and read again and the
     * counters' memset */
    double flops_step = 2.0 * (double)o->bm * CIG_BN * (double)kt;
    double rate = d->dtype == PTC_F32 ? 1.0e12 : 2.0e12; /* per SM and s, mma.sync */
    /* bw: the partial sums' effective rate; set from H100 timings (test_cuda_conv
     * --bench, resnet18 b32: TF32 28x28 3x3 split 2 0.136 ms vs 0.102 unsplit) */
    double t_step = flops_step / rate, bw = 0.8e12;
    double best_t = 0;
    int sms = sm_count > 0 ? sm_count : 1;
    for (int64_t s = 1; s <= CIG_MAX_SPLITS && s <= nk; s++) {
      int64_t steps = cdiv(nk, s), load = cdiv(blocks * s, sms);
      double t = (double)steps * t_step * (load == 1 ? 1.2 : (double)load);
      if (s > 1) t += (double)(s + 1) * (double)d->oc * (double)ncols * 4.0 / bw + 4e-6;
      if (s == 1 || t < best_t) best_t = t, best = s;
    }
  }
  if (best < smin) best = smin;
  if (best > nk) best = nk;
  if (best < 1) best = 1;
  o->kps = cdiv(nk, best) * kt;
  o->splits = (int)cdiv(nk * kt, o->kps); /* no empty split */
  o->gz = d->groups * o->splits;
  o->smem = stage_bytes(o->bm) + (o->tap ? 0 : 8 * (o->kps < nk * kt ? o->kps : nk * kt));
}

/* ---- the module ------------------------------------------------------------------------- */

/* The module text: type ti (-1 all), convolution variant v (-1 all),
 * deferred conversion or not. */
static ptc_status module_source(ptc_strbuf* src, int ti, int v, bool defer) {
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc implicit-GEMM convolution, %s (%s)\n", ti >= 0 ? cig_types[ti] : "all",
                PTC_CUDA_CODEGEN_VERSION);
  if (ti >= 0) ptc_sb_printf(src, "#define PTC_CIG_TYPE %d\n", ti);
  if (v >= 0) ptc_sb_printf(src, "#define PTC_CIG_VARIANT %d\n", v);
  if (!defer) ptc_sb_printf(src, "#define PTC_CIG_DEFER 0\n");
  /* the 4-warp kernels' launch bounds (variants 4, channel-major, and 5,
   * tap-major, of one type; the compile-only check of every type keeps
   * the kernel text's 3) */
  static const int32_t dts[3] = {PTC_F16, PTC_BF16, PTC_F32};
  int wb = ti >= 0 && v >= 4 && v <= 5 ? cuda_conv_igemm_w4_blocks(dts[ti], v == 5) : 3;
  /* the channels-last 4-warp kernel: 3 blocks per SM (PTC_CUDA_CONV_OCC=2
   * or PTC_CUDA_CONV_OCC_V=4: 4, as in session 12; H100, resnet18 b32 fp32
   * through the backend, layer1's 4 convolutions 0.433 ms at 4, 0.368 at
   * 3: 784 blocks fill 1.98 waves of 396 instead of 1.48 of 528) */
  if (ti >= 0 && v == 7) {
    const char* occ = getenv("PTC_CUDA_CONV_OCC");
    const char* ov = getenv("PTC_CUDA_CONV_OCC_V");
    wb = occ && *occ == '2' ? 4 : 3;
    if (ov && *ov >= '2' && *ov <= '4' && !ov[1]) wb = *ov - '0';
  }
  if (wb != 3) ptc_sb_printf(src, "#define PTC_CIG_W4_BLOCKS %d\n", wb);
  /* PTC_CUDA_CONV_NHWC_RNA=0/1/2/3: how the channels-last-input TF32
   * kernels round their B tiles (PTC_CIG_VIN_RNA: 0 not at all, truncated;
   * 1 in shared memory before the step's barrier; 2, the default, in
   * registers after ldmatrix; 3 in shared memory a step ahead, mid-MMA);
   * PTC_CUDA_CONV_NHWC_RADD=1: by an integer add instead of cvt.rna */
  const char* rna = getenv("PTC_CUDA_CONV_NHWC_RNA");
  if (rna && *rna >= '0' && *rna <= '3' && !rna[1]) ptc_sb_printf(src, "#define PTC_CIG_VIN_RNA %c\n", *rna);
  const char* radd = getenv("PTC_CUDA_CONV_NHWC_RADD");
  if (radd && *radd == '1') ptc_sb_printf(src, "#define PTC_CIG_VIN_RADD 1\n");
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_conv_common_text);
  ptc_sb_append(src, ptc_cuda_conv_igemm_text);
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

/* Builds the variant modules of type ti (eight; four with
 * PTC_CUDA_CONV_DEFER=0: no 4-warp or channels-last kernels) in parallel,
 * through the cache, and loads them. */
static ptc_status load_module(ptc_context* ctx, const cuda_device* d, int ti) {
  const cu_api* cu = &cuda_libs_get()->cu;
  cig_module* m = &cig_mod[ti];
  ptc_strbuf src[CIG_VARIANTS];
  ptc_status s = PTC_OK;
  int made = 0;
  bool defer = conv_defer();
  int nvar = defer ? 8 : 4; /* the 4-warp and t*v kernels need the deferred conversion */
  for (; made < nvar; made++)
    if ((s = module_source(&src[made], ti, made, defer))) break;
  if (s) {
    for (int v = 0; v < made; v++) ptc_sb_free(&src[v]);
    return s;
  }
  PTC_TRY(cuda_build_modules(ctx, d->cc_major * 10 + d->cc_minor, src, (size_t)nvar,
                             "ptc_conv_igemm", "the implicit-GEMM convolution kernels",
                             m->module));
  static const char* const conv[CIG_VARIANTS] = {"m64",   "m128",  "t64",   "t128",
                                                  "m64w4", "t64w4", "t128v", "t64w4v"};
  cu_result r = CU_SUCCESS;
  for (int v = 0; v < nvar && r == CU_SUCCESS; v++) {
    char name[48];
    snprintf(name, sizeof name, "ptc_cig_%s_%s", cig_types[ti], conv[v]);
    cu_function* f = v < 4 ? &m->conv[v / 2][v % 2] : v < 6 ? &m->conv_w4[v - 4] : &m->conv_v[7 - v];
    r = cu->ModuleGetFunction(f, m->module[v], name);
  }
  char name[48];
  snprintf(name, sizeof name, "ptc_cig_%s_wcopy", cig_types[ti]);
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&m->wcopy, m->module[0], name);
  snprintf(name, sizeof name, "ptc_cig_%s_i2c", cig_types[ti]);
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&m->i2c, m->module[0], name);
  snprintf(name, sizeof name, "ptc_cig_%s_i2cn", cig_types[ti]);
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&m->i2cn, m->module[0], name);
  snprintf(name, sizeof name, "ptc_cig_%s_mpool", cig_types[ti]);
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&m->mpool, m->module[0], name);
  /* the largest dynamic shared memory a launch may ask for: the opt-in
   * limit less the kernels' static shared memory (the split-K flag) */
  m->smem_max = (d->max_smem_optin > 48 * 1024 ? d->max_smem_optin : 48 * 1024) - 1024;
  for (int i = 0; i < nvar && r == CU_SUCCESS; i++)
    r = cu->FuncSetAttribute(i < 4 ? m->conv[i / 2][i % 2] : i < 6 ? m->conv_w4[i - 4] : m->conv_v[7 - i],
                             CIG_FUNC_MAX_DYNAMIC_SMEM, (int)m->smem_max);
  if (r != CU_SUCCESS) {
    for (int v = 0; v < CIG_VARIANTS; v++)
      if (m->module[v]) cu->ModuleUnload(m->module[v]);
    memset(m, 0, sizeof *m);
    return cuda_error(r, "loading the implicit-GEMM convolution kernels");
  }
  return PTC_OK;
}

ptc_status cuda_conv_igemm_check_compile(int arch) {
  ptc_status s = PTC_OK;
  /* both pipelines: the deferred conversion (default) and PTC_CUDA_CONV_DEFER=0's */
  for (int defer = 1; defer >= 0 && !s; defer--) {
    ptc_strbuf src;
    PTC_TRY(module_source(&src, -1, -1, defer != 0));
    cuda_cubin c;
    memset(&c, 0, sizeof c);
    /* --Ofast-compile=max: the same front end and code generation with fewer
     * optimisation passes (the check is about compiling, and CI is slow) */
    s = cuda_nvrtc_compile_ex(src.data, "ptc_conv_igemm", arch, "--Ofast-compile=max", &c);
    cuda_cubin_free(&c);
    ptc_sb_free(&src);
  }
  /* the TF32 channel-major 4-warp kernel as the library builds it by
   * default (launch bounds at 4 blocks per SM, PTC_CUDA_CONV_OCC) */
  if (!s) {
    ptc_strbuf src;
    PTC_TRY(module_source(&src, 2, 4, true));
    cuda_cubin c;
    memset(&c, 0, sizeof c);
    s = cuda_nvrtc_compile_ex(src.data, "ptc_conv_igemm", arch, "--Ofast-compile=max", &c);
    cuda_cubin_free(&c);
    ptc_sb_free(&src);
  }
  return s;
}

/* ---- launches ---------------------------------------------------------------------------- */

static unsigned grid_1d(int64_t total, int64_t cap) {
  int64_t b = cdiv(total, 256);
  if (b > cap) b = cap;
  return (unsigned)(b < 1 ? 1 : b);
}

/* Loads type ti's modules on first use (thread-safe); false when they are
 * not available (failed to build or load: logged once, not tried again). */
static bool module_ready(ptc_context* ctx, const cuda_device* d, int ti) {
  pthread_mutex_lock(&cig_lock);
  ptc_status s = cig_ready[ti] || cig_broken[ti] ? PTC_OK : load_module(ctx, d, ti);
  if (!s && !cig_broken[ti]) cig_ready[ti] = true;
  if (s) {
    /* a module that does not build or load leaves convolutions to the
     * im2col + GEMM path (the caller's fallback), with a warning */
    ptc_log(ctx, PTC_LOG_WARN, "cuda backend: implicit-GEMM convolution unavailable (%s); "
            "using im2col + GEMM", ptc_status_message(s));
    ptc_status_destroy(s);
    cig_broken[ti] = true;
  }
  bool ready = cig_ready[ti];
  pthread_mutex_unlock(&cig_lock);
  return ready;
}

ptc_status cuda_conv_igemm(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                           const cuda_conv_desc* desc, bool tf32, cu_deviceptr x, cu_deviceptr w,
                           cu_deviceptr pbias, cu_deviceptr out, bool* done) {
  *done = false;
  int ti = type_index(desc->dtype);
  if (ti < 0 || cuda_conv_igemm_refusal(d->cc_major, desc, tf32)) return PTC_OK;
  if (!module_ready(ctx, d, ti)) return PTC_OK;
  const cig_module* m = &cig_mod[ti];
  const cu_api* cu = &cuda_libs_get()->cu;
  cuda_conv_shape sh;
  cuda_conv_igemm_shape(desc, d->sm_count, m->smem_max, &sh);
  if (sh.smem > m->smem_max || sh.gy > 65535 || sh.gz > 65535 || sh.gx > INT32_MAX) return PTC_OK;
  int64_t es = (int64_t)ptc_dtype_size(desc->dtype);
  int64_t cg = desc->c / desc->groups, ocg = desc->oc / desc->groups, kdim = cg * desc->kh * desc->kw;
  int64_t ncols = desc->n * desc->oh * desc->ow;
  cuda_cig_args a;
  memset(&a, 0, sizeof a);
  a.xs_n = desc->xs[0], a.xs_c = desc->xs[1], a.xs_h = desc->xs[2], a.xs_w = desc->xs[3];
  a.w_row = desc->ws[0];
  a.bias_st = desc->bias_st;
  a.h = (int32_t)desc->h, a.w = (int32_t)desc->w;
  a.oc = (int32_t)desc->oc, a.oh = (int32_t)desc->oh, a.ow = (int32_t)desc->ow;
  a.ohw = (int32_t)(desc->oh * desc->ow);
  a.kh = (int32_t)desc->kh, a.kw = (int32_t)desc->kw, a.sh = (int32_t)desc->sh, a.sw = (int32_t)desc->sw;
  a.ph = (int32_t)desc->ph, a.pw = (int32_t)desc->pw, a.dh = (int32_t)desc->dh, a.dw = (int32_t)desc->dw;
  a.cg = (int32_t)cg, a.ocg = (int32_t)ocg, a.kdim = (int32_t)kdim, a.ncols = (int32_t)ncols;
  a.kps = (int32_t)sh.kps, a.splits = sh.splits;
  a.act = desc->act;
  a.has_bias = pbias != 0;
  a.beta = (float)desc->beta;
  a.pair = (a.ohw % 2) == 0 && out % (cu_deviceptr)(2 * es) == 0;
  a.vio = (sh.tap && cuda_conv_igemm_vec_input(desc, x) ? 1 : 0) | (desc->out_nhwc ? 2 : 0);
  cu_deviceptr wsp = 0, part = 0;
  int64_t kt = k_step(desc->dtype), kk = desc->kh * desc->kw;
  bool w_plain = (desc->ws[3] == 1 || desc->kw == 1) && (desc->ws[2] == desc->kw || desc->kh == 1) &&
                 (desc->ws[1] == kk || cg == 1) && (desc->ws[0] * es) % 16 == 0 && w % 16 == 0;
  /* f32: always copied (the copy rounds to TF32: the MMA loop has no cvt on A) */
  bool wsp_kept = false; /* wsp belongs to desc->wcache now */
  if (sh.tap || !w_plain || desc->dtype == PTC_F32) {
    /* the A operand: tap-major [OC][KH*KW][cpad], or channel-major rows
     * [Cg*KH*KW] 16-byte aligned */
    int64_t nchunk = cdiv(cg, kt), cpad = nchunk * kt;
    int64_t ld = sh.tap ? kk * cpad : cdiv(kdim, 8) * 8;
    int32_t tap_major = sh.tap;
    if (sh.tap) {
      a.nchunk = (int32_t)nchunk;
      a.kdim = (int32_t)ld;
    }
    /* the kept copy of constant weights in this layout, when there is one */
    cuda_wcache_key wkey = {w, {ld, tap_major, cpad, desc->dtype}};
    cu_deviceptr kept = cuda_wcache_find(desc->wcache, desc->wcache_slot, &wkey);
    if (!kept) PTC_TRY(cuda_alloc((size_t)(desc->oc * ld * es), stream, &wsp));
    int64_t rows = desc->oc, kw = desc->kw;
    int64_t w0 = desc->ws[0], w1 = desc->ws[1], w2 = desc->ws[2], w3 = desc->ws[3];
    /* 32-bit index math in the copy when the copy and the weight view fit */
    int32_t small32 = rows * ld < INT32_MAX && w0 >= 0 && w1 >= 0 && w2 >= 0 && w3 >= 0 &&
                      (rows - 1) * w0 + (cg - 1) * w1 + (desc->kh - 1) * w2 + (kw - 1) * w3 <
                          INT32_MAX;
    void* pp[] = {&w, &wsp, &rows, &ld, &cg, &kw, &kk, &cpad, &w0, &w1, &w2, &w3, &tap_major,
                  &small32};
    cu_result r = kept ? CU_SUCCESS
                       : cu->LaunchKernel(m->wcopy, grid_1d(rows * ld, (int64_t)d->sm_count * 16),
                                          1, 1, 256, 1, 1, 0, stream, pp, NULL);
    if (r != CU_SUCCESS) {
      cuda_free(wsp);
      return cuda_error(r, "launching the convolution's weight copy");
    }
    if (!kept) wsp_kept = cuda_wcache_offer(desc->wcache, desc->wcache_slot, &wkey, stream, wsp);
    w = kept ? kept : wsp;
    a.w_row = ld;
  }
  cu_result r = CU_SUCCESS;
  if (sh.splits > 1) {
    /* partial sums [splits][OC][N] f32, then one zeroed counter per tile */
    int64_t pbytes = (int64_t)sh.splits * desc->oc * ncols * 4, tiles = sh.gx * sh.gy * desc->groups;
    ptc_status s = cuda_alloc((size_t)(pbytes + tiles * 4), stream, &part);
    if (s) {
      if (!wsp_kept) cuda_free(wsp);
      return s;
    }
    r = cu->MemsetD8Async(part + (cu_deviceptr)pbytes, 0, (size_t)tiles * 4, stream);
  }
  void* params[] = {&x, &w, &pbias, &out, &part, &a};
  /* the 4-warp kernels when chosen and built (else the 8-warp ones) */
  cu_function fn = m->conv[sh.tap][sh.bm == 128];
  unsigned threads = 256;
  if (sh.threads == 128 && m->conv_w4[sh.tap]) fn = m->conv_w4[sh.tap], threads = 128;
  /* a channels-last input: the t*v kernels (cp.async B tiles) where there
   * is one for the shape; else the gathers through the strides */
  if (a.vio & 1) {
    if (threads == 128 && m->conv_v[0])
      fn = m->conv_v[0];
    else if (threads == 256 && sh.bm == 128 && m->conv_v[1])
      fn = m->conv_v[1];
    else
      a.vio &= ~1;
  }
  if (r == CU_SUCCESS)
    r = cu->LaunchKernel(fn, (unsigned)sh.gx, (unsigned)sh.gy, (unsigned)sh.gz, threads, 1, 1,
                         (unsigned)sh.smem, stream, params, NULL);
  cuda_free(part);
  if (!wsp_kept) cuda_free(wsp);
  if (r != CU_SUCCESS) return cuda_error(r, "launching the implicit-GEMM convolution");
  *done = true;
  return PTC_OK;
}

/* ---- the wide im2col ----------------------------------------------------------------------- */

/* PTC_CUDA_CONV_I2C=0: cuda_conv_igemm_im2col declines every call (the
 * support module's ptc_im2colw_* then runs). Read per call. */
static bool conv_i2c(void) {
  const char* v = getenv("PTC_CUDA_CONV_I2C");
  return !(v && *v == '0');
}

ptc_status cuda_conv_igemm_im2col(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                                  int32_t dtype, const cuda_conv_i2c* a, cu_deviceptr x,
                                  cu_deviceptr col, bool* done) {
  *done = false;
  int ti = type_index(dtype);
  int64_t es = ti < 0 ? 0 : (int64_t)ptc_dtype_size(dtype), v = es ? 16 / es : 0;
  if (ti < 0 || d->cc_major < 8 || !conv_i2c()) return PTC_OK;
  int64_t ohw = a->oh * a->ow, ncols = a->nimg * ohw;
  if (a->nimg < 1 || a->c < 1 || a->kh < 1 || a->kw < 1 || ohw < 1 || ncols % v || col % 16 ||
      a->c * a->kh > 65535)
    return PTC_OK;
  /* 32-bit index math: every input offset the kernel forms (those of
   * window positions outside the image too) below 2^31 */
  int64_t lim = INT32_MAX / 4;
  if (a->xs[0] < 0 || a->xs[1] < 0 || a->xs[2] < 0 || a->xs[3] < 0 || ncols > lim || a->h > lim ||
      a->w > lim || a->oh * a->sh > lim || a->ow * a->sw > lim || a->kh * a->dh + a->ph > lim ||
      a->kw * a->dw + a->pw > lim ||
      (a->nimg - 1) * a->xs[0] + (a->c - 1) * a->xs[1] + (a->oh * a->sh + a->kh * a->dh + a->ph) * a->xs[2] +
              (a->ow * a->sw + a->kw * a->dw + a->pw) * a->xs[3] > INT32_MAX)
    return PTC_OK;
  if (!module_ready(ctx, d, ti)) return PTC_OK;
  cuda_cig_i2c_args g;
  memset(&g, 0, sizeof g);
  g.kh = (int32_t)a->kh, g.kw = (int32_t)a->kw, g.h = (int32_t)a->h, g.w = (int32_t)a->w;
  g.oh = (int32_t)a->oh, g.ow = (int32_t)a->ow, g.ohw = (int32_t)ohw;
  g.sh = (int32_t)a->sh, g.sw = (int32_t)a->sw, g.ph = (int32_t)a->ph, g.pw = (int32_t)a->pw;
  g.dh = (int32_t)a->dh, g.dw = (int32_t)a->dw;
  g.xs_n = (int32_t)a->xs[0], g.xs_c = (int32_t)a->xs[1], g.xs_h = (int32_t)a->xs[2],
  g.xs_w = (int32_t)a->xs[3];
  g.ncols = (int32_t)ncols, g.nvec = (int32_t)(ncols / v);
  /* a channels-last input: 32 x 32 transposing tiles per window position */
  const char* nv = getenv("PTC_CUDA_CONV_NHWC_IN");
  if (a->xs[1] == 1 && a->c > 1 && !(nv && *nv == '0') && a->kh * a->kw <= 65535 &&
      cdiv(a->c, 32) <= 65535 && cdiv(ncols, 32) <= INT32_MAX) {
    int32_t cc = (int32_t)a->c;
    void* pn[] = {&x, &col, &g, &cc};
    cu_result r = cuda_libs_get()->cu.LaunchKernel(cig_mod[ti].i2cn, (unsigned)cdiv(ncols, 32),
                                                   (unsigned)cdiv(a->c, 32), (unsigned)(a->kh * a->kw),
                                                   256, 1, 1, 0, stream, pn, NULL);
    if (r != CU_SUCCESS) return cuda_error(r, "launching the convolution's channels-last im2col");
    *done = true;
    return PTC_OK;
  }
  /* block rows: one (channel, window row) each; columns: 128 vectors a block */
  int64_t gx = cdiv(g.nvec, 128);
  if (gx > 1024) gx = 1024;
  void* params[] = {&x, &col, &g};
  cu_result r = cuda_libs_get()->cu.LaunchKernel(cig_mod[ti].i2c, (unsigned)gx, (unsigned)(a->c * a->kh),
                                                 1, 128, 1, 1, 0, stream, params, NULL);
  if (r != CU_SUCCESS) return cuda_error(r, "launching the convolution's wide im2col");
  *done = true;
  return PTC_OK;
}

/* ---- the channels-last max pool ----------------------------------------------------------- */

ptc_status cuda_conv_igemm_maxpool(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                                   int32_t dtype, const cuda_conv_mp* a, cu_deviceptr x,
                                   cu_deviceptr out, bool* done) {
  *done = false;
  int ti = type_index(dtype);
  int64_t es = ti < 0 ? 0 : (int64_t)ptc_dtype_size(dtype);
  if (ti < 0 || d->cc_major < 8 || a->c < 1 || (a->c * es) % 16 || x % 16 || out % 16) return PTC_OK;
  int64_t cv = a->c * es / 16, total = a->n * a->oh * a->ow * cv;
  int64_t lim = INT32_MAX / 4;
  if (a->n < 1 || a->oh < 1 || a->ow < 1 || total > lim || a->n * a->h * a->w * cv > lim ||
      a->kh < 1 || a->kw < 1 || a->sh < 1 || a->sw < 1 || a->dh < 1 || a->dw < 1 || a->ph < 0 ||
      a->pw < 0 || a->oh * a->sh + a->kh * a->dh > lim || a->ow * a->sw + a->kw * a->dw > lim)
    return PTC_OK;
  if (!module_ready(ctx, d, ti)) return PTC_OK;
  cuda_cig_mp_args g = {(int32_t)a->h, (int32_t)a->w, (int32_t)a->oh, (int32_t)a->ow, (int32_t)cv,
                        (int32_t)a->kh, (int32_t)a->kw, (int32_t)a->sh, (int32_t)a->sw,
                        (int32_t)a->ph, (int32_t)a->pw, (int32_t)a->dh, (int32_t)a->dw,
                        (int32_t)total};
  int64_t blocks = cdiv(total, 256), cap = (int64_t)d->sm_count * 16;
  if (blocks > cap) blocks = cap;
  void* params[] = {&x, &out, &g};
  cu_result r = cuda_libs_get()->cu.LaunchKernel(cig_mod[ti].mpool, (unsigned)blocks, 1, 1, 256, 1,
                                                 1, 0, stream, params, NULL);
  if (r != CU_SUCCESS) return cuda_error(r, "launching the channels-last max pool");
  *done = true;
  return PTC_OK;
}
