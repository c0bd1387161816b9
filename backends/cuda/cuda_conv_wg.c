/* cuda_conv_wg.c - the host side of the wgmma convolution (device code in
 * cuda_conv_wg.cuh): which convolutions it takes, the tile shape from a
 * small cost model, the modules (one per element type and tile shape,
 * built for sm_90a through the kernel cache and loaded on first use), the
 * launches (the weight rearrangement, the convolution). */
#include "cuda_conv_wg.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CWG_STAGES 4 /* PTC_CWG_STAGES */
#define CWG_UPT 8    /* PTC_CWG_UPT */
#define CWG_THREADS 256
#define CWG_CFGS 3
#define CWG_MAX_TAPS 64 /* PTC_CWG_MAX_TAPS */
#define CWG_FUNC_MAX_DYNAMIC_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */

/* Device layout of ptc_cwg_args (cuda_conv_wg.cuh). */
typedef struct cwg_args {
  int64_t xs_n;
  int64_t bias_st;
  int32_t xs_c, xs_h, xs_w;
  int32_t c, h, w, oc, oh, ow;
  int32_t kh, kw, sh, sw, ph, pw;
  int32_t wq, pwn, wl, wlp, units;
  int32_t mtiles, ntiles;
  int32_t nk;
  int32_t win_bytes, b_bytes, stage_bytes;
  int32_t act, has_bias;
  float beta;
  int32_t cp;
  int32_t kch;
  int32_t kk;
  int32_t tab_off;
  int32_t tiles;
} cwg_args;

typedef struct cwg_module {
  cu_module module[CWG_CFGS];
  cu_function conv[CWG_CFGS];
  cu_function wprep;
  cu_function nhwc;
  int64_t smem_max;
  bool persist; /* built with PTC_CWG_PERSIST 1 */
} cwg_module;

static pthread_mutex_t cwg_lock = PTHREAD_MUTEX_INITIALIZER;
static cwg_module cwg_mod[3]; /* f16, bf16, tf32 */
static bool cwg_ready[3], cwg_broken[3];
static const char* const cwg_types[3] = {"f16", "bf16", "tf32"};
static const char* const cwg_cfg_names[CWG_CFGS] = {"m128n64", "m128n128", "m64n128"};

static int type_index(int32_t dtype) {
  return dtype == PTC_F16 ? 0 : dtype == PTC_BF16 ? 1 : dtype == PTC_F32 ? 2 : -1;
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Channels per K stage: 32 bytes (two 16-byte K columns). */
static int64_t k_stage(int32_t dtype) { return 32 / (int64_t)ptc_dtype_size(dtype); }

/* The mode when PTC_CUDA_CONV_WG is unset: off. Correct on an H100
 * (test_cuda_conv, resnet18 through torch.compile with =3), but slower
 * than the default paths on every resnet18 b32 layer, input and weight
 * copies included (bf16 ms wgmma vs default: 56x56 0.074 vs 0.064, 28x28
 * 0.058 vs 0.055, 14x14 0.050 vs 0.046; the selective mode's 20-conv sum
 * 0.946 vs 0.917, TF32 1.473 vs 1.439). */
#define CWG_DEFAULT 0

/* PTC_CUDA_CONV_WG: 0 off, 1 every convolution the kernels take, 2 those
 * the extern's policy gives the implicit GEMM, 3 the selected shapes. */
static int cwg_mode(void) {
  const char* v = getenv("PTC_CUDA_CONV_WG");
  if (v && *v) return *v == '2' ? 2 : *v == '3' ? 3 : *v != '0';
  return CWG_DEFAULT;
}

int cuda_conv_wg_enabled(void) {
  int m = cwg_mode();
  return m == 3 ? 1 : m;
}

/* Output planes of the selected shapes: at least CWG_SEL_MIN pixels (7x7
 * planes: the im2col GEMM is faster), at most PTC_CUDA_CONV_WG_MAXPLANE
 * (default CWG_SEL_MAX: resnet18's 28x28 and 14x14 layers). */
#define CWG_SEL_MIN 100
#define CWG_SEL_MAX 1024

bool cuda_conv_wg_selected(const cuda_conv_desc* d) {
  const char* v = getenv("PTC_CUDA_CONV_WG_MAXPLANE");
  int64_t mx = v && *v ? strtoll(v, NULL, 10) : CWG_SEL_MAX, plane = d->oh * d->ow;
  return d->sh == 1 && d->sw == 1 && d->kh * d->kw > 1 && plane >= CWG_SEL_MIN && plane <= mx;
}

const char* cuda_conv_wg_refusal(int cc_major, int cc_minor, const cuda_conv_desc* d, bool tf32) {
  if (cc_major != 9 || cc_minor != 0) return "the wgmma convolution needs sm_90 (sm_90a code)";
  if (d->dtype != PTC_F16 && d->dtype != PTC_BF16 && !(d->dtype == PTC_F32 && tf32))
    return "dtype (f16, bf16, or f32 with TF32 allowed)";
  if (d->groups != 1) return "groups";
  if (d->kh * d->kw > CWG_MAX_TAPS) return "windows of more than 64 taps";
  if (d->dh != 1 || d->dw != 1) return "dilation";
  if (d->n < 1 || d->c < 1 || d->oc < 1 || d->kh < 1 || d->kw < 1 || d->oh < 1 || d->ow < 1)
    return "empty sizes";
  if (d->sh < 1 || d->sw < 1 || d->ph < 0 || d->pw < 0) return "strides or padding";
  if (2 * d->c < k_stage(d->dtype)) return "fewer channels than half a K stage";
  for (int i = 0; i < 4; i++)
    if (d->xs[i] < 0) return "negative strides";
  if (d->h > 65536 || d->w > 65536 || d->oh > 65536 || d->ow > 65536 || d->kh > 64 || d->kw > 64 ||
      d->sh > 64 || d->sw > 64 || d->ph > 64 || d->pw > 64 || d->oc > (1 << 24))
    return "sizes";
  /* the NHWC copy: an image within 32-bit offsets (channels padded to 8 K
   * chunks at most), the transpose's grid */
  if ((double)d->h * (double)d->w * (double)(d->c + 8 * k_stage(d->dtype)) > 2147483000.0)
    return "in-image offsets beyond 32 bits";
  /* the input read by the NHWC copy: 32-bit offsets inside an image */
  if ((double)(d->c - 1) * (double)d->xs[1] + (double)(d->h - 1) * (double)d->xs[2] +
          (double)(d->w - 1) * (double)d->xs[3] > 2147483000.0)
    return "input offsets inside an image beyond 32 bits";
  if (d->n > 65535) return "more than 65535 images";
  if ((double)d->oh * (double)(d->ow + d->kw) > 1e9) return "planes";
  return NULL;
}

/* The plan of tile shape cfg with kch K chunks per stage; false when its
 * window or shared memory does not fit. */
static bool shape_kch(const cuda_conv_desc* d, int sm_count, int64_t smem_optin, int cfg, int64_t kch,
                      cuda_conv_wg_plan* o) {
  memset(o, 0, sizeof *o);
  o->cfg = cfg;
  o->kch = kch;
  o->bm = cfg == 2 ? 64 : 128;
  o->bn = cfg == 0 ? 64 : 128;
  int64_t kc = k_stage(d->dtype), kk = d->kh * d->kw;
  int64_t ph = d->kh < d->sh ? d->kh : d->sh, pw = d->kw < d->sw ? d->kw : d->sw;
  o->phases = ph * pw;
  o->wq = d->ow + (d->kw - 1) / d->sw;
  o->wl = o->bm + (d->kh - 1) / d->sh * o->wq + (d->kw - 1) / d->sw;
  o->wlp = cdiv(o->wl, 8) * 8;
  o->units = o->phases * 2 * kch * o->wl;
  o->mtiles = cdiv((d->oh - 1) * o->wq + d->ow, o->bm);
  o->ntiles = cdiv(d->oc, o->bn);
  o->nk = cdiv(d->c, kc * kch);
  o->win_bytes = o->phases * 2 * kch * o->wlp * 16;
  o->b_bytes = kk * kch * o->bn * 32;
  o->stage_bytes = cdiv(o->win_bytes + o->b_bytes, 128) * 128;
  int64_t stages = CWG_STAGES * o->stage_bytes, tile = (int64_t)o->bn * (o->bm + 4) * 4;
  o->tab_off = cdiv(stages > tile ? stages : tile, 128) * 128;
  o->smem = o->tab_off + (CWG_MAX_TAPS + o->bm) * 4;
  o->blocks = d->n * o->mtiles * o->ntiles;
  if (o->units > (int64_t)CWG_UPT * CWG_THREADS || o->smem > (smem_optin > 0 ? smem_optin : 48 * 1024) ||
      o->wlp * 2 * kch * o->phases >= 16384 || o->blocks > INT32_MAX)
    return false;
  /* blocks per SM: shared memory (228 KiB an SM, 1 KiB reserved per block)
   * and registers (64 accumulators a thread: one block) */
  int64_t occ = (228 * 1024) / (o->smem + 1024);
  int64_t occ_regs = cfg == 1 ? 1 : 2;
  if (occ > occ_regs) occ = occ_regs;
  if (occ < 1) occ = 1;
  o->occ = (int)occ;
  int sms = sm_count > 0 ? sm_count : 1;
  /* time ~ waves x blocks per SM x a block's MMA work (padded tiles
   * included), the 64x64 wgmmas (tile shapes 0 and 2: more shared-memory
   * bytes per MAC) counted 1.3x: this picks the fastest of the three shapes
   * on 9 of resnet18's 10 distinct layers (H100, test_cuda_conv --bench) */
  double work = (double)o->bm * (double)o->bn * (double)(o->nk * kc * kch * kk);
  double waves = (double)cdiv(o->blocks, (int64_t)sms * occ);
  o->cost = waves * (double)occ * work * (cfg == 1 ? 1.0 : 1.3);
  return true;
}

/* The plan of tile shape cfg: the fewest K chunks per stage that give a
 * stage at least 8 MMAs (windows of few taps take several chunks), else the
 * most that fit. */
static bool shape_of(const cuda_conv_desc* d, int sm_count, int64_t smem_optin, int cfg,
                     cuda_conv_wg_plan* o) {
  int64_t kk = d->kh * d->kw, chunks = cdiv(d->c, k_stage(d->dtype));
  bool found = false;
  for (int64_t kch = 1; kch <= 8 && kch <= chunks; kch *= 2) {
    cuda_conv_wg_plan p;
    if (!shape_kch(d, sm_count, smem_optin, cfg, kch, &p)) break;
    *o = p;
    found = true;
    if (kk * kch >= 8) break;
  }
  return found;
}

bool cuda_conv_wg_shape(const cuda_conv_desc* d, int sm_count, int64_t smem_optin, int force,
                        cuda_conv_wg_plan* out) {
  bool found = false;
  for (int c = 0; c < CWG_CFGS; c++) {
    if (force >= 0 && c != force) continue;
    cuda_conv_wg_plan s;
    if (!shape_of(d, sm_count, smem_optin, c, &s)) continue;
    if (!found || s.cost < out->cost) *out = s;
    found = true;
  }
  return found;
}

/* ---- the modules ------------------------------------------------------------------------ */

/* PTC_CUDA_CONV_WG_PERSIST=0: the kernels of one block per tile (read when
 * the modules are built); default: the persistent kernels. */
static bool persist_mode(void) {
  const char* v = getenv("PTC_CUDA_CONV_WG_PERSIST");
  return !(v && *v == '0');
}

static ptc_status module_source(ptc_strbuf* src, int ti, int v, bool persist) {
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc wgmma convolution, %s (%s)\n", ti >= 0 ? cwg_types[ti] : "all",
                PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_printf(src, "#define PTC_CWG_PERSIST %d\n", persist ? 1 : 0);
  if (ti >= 0) ptc_sb_printf(src, "#define PTC_CWG_TYPE %d\n", ti);
  if (v >= 0) ptc_sb_printf(src, "#define PTC_CWG_VARIANT %d\n", v);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_conv_common_text);
  ptc_sb_append(src, ptc_cuda_conv_wg_text);
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

static ptc_status load_module(ptc_context* ctx, const cuda_device* d, int ti) {
  const cu_api* cu = &cuda_libs_get()->cu;
  cwg_module* m = &cwg_mod[ti];
  ptc_strbuf src[CWG_CFGS];
  ptc_status s = PTC_OK;
  int made = 0;
  bool persist = persist_mode();
  for (; made < CWG_CFGS; made++)
    if ((s = module_source(&src[made], ti, made, persist))) break;
  if (s) {
    for (int v = 0; v < made; v++) ptc_sb_free(&src[v]);
    return s;
  }
  PTC_TRY(cuda_build_modules(ctx, 90 | CUDA_ARCH_SPECIFIC, src, CWG_CFGS, "ptc_conv_wg",
                             "the wgmma convolution kernels", m->module));
  cu_result r = CU_SUCCESS;
  for (int v = 0; v < CWG_CFGS && r == CU_SUCCESS; v++) {
    char name[48];
    snprintf(name, sizeof name, "ptc_cwg_%s_%s", cwg_types[ti], cwg_cfg_names[v]);
    r = cu->ModuleGetFunction(&m->conv[v], m->module[v], name);
  }
  char name[48];
  snprintf(name, sizeof name, "ptc_cwg_%s_wprep", cwg_types[ti]);
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&m->wprep, m->module[0], name);
  snprintf(name, sizeof name, "ptc_cwg_%s_nhwc", cwg_types[ti]);
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&m->nhwc, m->module[0], name);
  m->smem_max = d->max_smem_optin > 48 * 1024 ? d->max_smem_optin : 48 * 1024;
  m->persist = persist;
  for (int v = 0; v < CWG_CFGS && r == CU_SUCCESS; v++)
    r = cu->FuncSetAttribute(m->conv[v], CWG_FUNC_MAX_DYNAMIC_SMEM, (int)m->smem_max);
  if (r != CU_SUCCESS) {
    for (int v = 0; v < CWG_CFGS; v++)
      if (m->module[v]) cu->ModuleUnload(m->module[v]);
    memset(m, 0, sizeof *m);
    return cuda_error(r, "loading the wgmma convolution kernels");
  }
  return PTC_OK;
}

ptc_status cuda_conv_wg_check_compile(bool full) {
  ptc_strbuf src;
  PTC_TRY(module_source(&src, -1, -1, persist_mode()));
  cuda_cubin c;
  memset(&c, 0, sizeof c);
  ptc_status s = cuda_nvrtc_compile_ex(src.data, "ptc_conv_wg", 90 | CUDA_ARCH_SPECIFIC,
                                       full ? NULL : "--Ofast-compile=max", &c);
  cuda_cubin_free(&c);
  ptc_sb_free(&src);
  return s;
}

/* ---- launches ---------------------------------------------------------------------------- */

static int forced_cfg(void) {
  const char* v = getenv("PTC_CUDA_CONV_WG_CFG");
  if (!v || !*v) return -1;
  int c = atoi(v);
  return c >= 0 && c < CWG_CFGS ? c : -1;
}

ptc_status cuda_conv_wg(ptc_context* ctx, const cuda_device* d, cu_stream stream,
                        const cuda_conv_desc* desc, bool tf32, cu_deviceptr x, cu_deviceptr w,
                        cu_deviceptr pbias, cu_deviceptr out, bool* done) {
  *done = false;
  int ti = type_index(desc->dtype);
  if (ti < 0 || cuda_conv_wg_refusal(d->cc_major, d->cc_minor, desc, tf32)) return PTC_OK;
  if (cwg_mode() == 3 && !cuda_conv_wg_selected(desc)) return PTC_OK;
  cuda_conv_wg_plan sh;
  if (!cuda_conv_wg_shape(desc, d->sm_count, d->max_smem_optin, forced_cfg(), &sh)) return PTC_OK;
  pthread_mutex_lock(&cwg_lock);
  ptc_status s = cwg_ready[ti] || cwg_broken[ti] ? PTC_OK : load_module(ctx, d, ti);
  if (!s && !cwg_broken[ti]) cwg_ready[ti] = true;
  if (s) {
    ptc_log(ctx, PTC_LOG_WARN, "cuda backend: wgmma convolution unavailable (%s); using the "
            "implicit GEMM", ptc_status_message(s));
    ptc_status_destroy(s);
    s = PTC_OK;
    cwg_broken[ti] = true;
  }
  bool ready = cwg_ready[ti];
  pthread_mutex_unlock(&cwg_lock);
  if (!ready) return PTC_OK;
  const cwg_module* m = &cwg_mod[ti];
  if (sh.smem > m->smem_max) return PTC_OK;
  const cu_api* cu = &cuda_libs_get()->cu;
  int64_t es = (int64_t)ptc_dtype_size(desc->dtype), kc = k_stage(desc->dtype);
  /* the weights in the kernels' shared-memory image */
  int64_t total = sh.ntiles * sh.bn * sh.nk * kc * sh.kch * desc->kh * desc->kw;
  if (total / (16 / es) > INT32_MAX) return PTC_OK; /* the weight copy's 32-bit unit index */
  cu_deviceptr wsp = 0;
  PTC_TRY(cuda_alloc((size_t)(total * es), stream, &wsp));
  int32_t bn = sh.bn, nk = (int32_t)sh.nk, oc = (int32_t)desc->oc, c = (int32_t)desc->c;
  int32_t kh = (int32_t)desc->kh, kw = (int32_t)desc->kw, kch = (int32_t)sh.kch;
  int64_t w0 = desc->ws[0], w1 = desc->ws[1], w2 = desc->ws[2], w3 = desc->ws[3];
  void* pp[] = {&w, &wsp, &total, &bn, &nk, &oc, &c, &kh, &kw, &w0, &w1, &w2, &w3, &kch};
  /* one thread per 16-byte unit */
  int64_t gb = cdiv(total / (16 / es), 256), cap = (int64_t)d->sm_count * 16;
  if (gb > cap) gb = cap;
  cu_result r = cu->LaunchKernel(m->wprep, (unsigned)(gb < 1 ? 1 : gb), 1, 1, 256, 1, 1, 0, stream, pp, NULL);
  if (r != CU_SUCCESS) {
    cuda_free(wsp);
    return cuda_error(r, "launching the wgmma convolution's weight copy");
  }
  /* the input as NHWC, channels padded to whole stages */
  int64_t cpad = sh.nk * kc * sh.kch, hw = desc->h * desc->w;
  cu_deviceptr xt = 0;
  ptc_status st = cuda_alloc((size_t)(desc->n * hw * cpad * es), stream, &xt);
  if (st) {
    cuda_free(wsp);
    return st;
  }
  {
    int64_t x0 = desc->xs[0], x1 = desc->xs[1], x2 = desc->xs[2], x3 = desc->xs[3];
    int32_t hh = (int32_t)desc->h, ww = (int32_t)desc->w, cp32 = (int32_t)cpad;
    int32_t flat = x2 == desc->w * x3;
    void* tp[] = {&x, &xt, &x0, &x1, &x2, &x3, &c, &hh, &ww, &cp32, &flat};
    r = cu->LaunchKernel(m->nhwc, (unsigned)cdiv(hw, 64), (unsigned)cdiv(cpad, 64), (unsigned)desc->n, 256,
                         1, 1, 0, stream, tp, NULL);
    if (r != CU_SUCCESS) {
      cuda_free(xt);
      cuda_free(wsp);
      return cuda_error(r, "launching the wgmma convolution's input copy");
    }
  }
  cwg_args a;
  memset(&a, 0, sizeof a);
  a.xs_n = hw * cpad;
  a.bias_st = desc->bias_st;
  a.xs_c = (int32_t)desc->xs[1], a.xs_h = (int32_t)desc->xs[2], a.xs_w = (int32_t)desc->xs[3];
  a.c = c, a.h = (int32_t)desc->h, a.w = (int32_t)desc->w, a.oc = oc;
  a.oh = (int32_t)desc->oh, a.ow = (int32_t)desc->ow;
  a.kh = kh, a.kw = kw, a.sh = (int32_t)desc->sh, a.sw = (int32_t)desc->sw;
  a.ph = (int32_t)desc->ph, a.pw = (int32_t)desc->pw;
  a.wq = (int32_t)sh.wq, a.pwn = (int32_t)(desc->kw < desc->sw ? desc->kw : desc->sw);
  a.wl = (int32_t)sh.wl, a.wlp = (int32_t)sh.wlp, a.units = (int32_t)sh.units;
  a.mtiles = (int32_t)sh.mtiles, a.ntiles = (int32_t)sh.ntiles, a.nk = nk;
  a.win_bytes = (int32_t)sh.win_bytes, a.b_bytes = (int32_t)sh.b_bytes;
  a.stage_bytes = (int32_t)sh.stage_bytes;
  a.act = desc->act;
  a.has_bias = pbias != 0;
  a.beta = (float)desc->beta;
  a.cp = (int32_t)cpad;
  a.kch = kch;
  a.kk = kh * kw;
  a.tab_off = (int32_t)sh.tab_off;
  a.tiles = (int32_t)sh.blocks;
  /* the persistent kernels: at most the blocks that fit at once */
  int64_t grid = sh.blocks, fit = (int64_t)(d->sm_count > 0 ? d->sm_count : 1) * sh.occ;
  const char* gv = getenv("PTC_CUDA_CONV_WG_GRID"); /* tests: fewer blocks, more tiles each */
  if (gv && *gv && atoll(gv) > 0 && atoll(gv) < fit) fit = atoll(gv);
  if (m->persist && grid > fit) grid = fit;
  void* params[] = {&xt, &wsp, &pbias, &out, &a};
  r = cu->LaunchKernel(m->conv[sh.cfg], (unsigned)grid, 1, 1, CWG_THREADS, 1, 1, (unsigned)sh.smem,
                       stream, params, NULL);
  cuda_free(xt);
  cuda_free(wsp);
  if (r != CU_SUCCESS) return cuda_error(r, "launching the wgmma convolution");
  *done = true;
  return PTC_OK;
}
