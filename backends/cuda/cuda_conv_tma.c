/* cuda_conv_tma.c - the host side of the Hopper convolution of
 * cuda_conv_tma.cuh (f32 as TF32, bf16, f16; see cuda_conv_tma.h): which
 * calls it takes, how each runs (tile, groups, channels a block), its
 * module (the prelude, cuda_attn.cuh, cuda_attn_wg.cuh for the
 * shared mbarrier / wgmma / tensor-copy helpers, and cuda_conv_tma.cuh,
 * compiled for sm_90a through the kernel cache on first use), the tensor
 * maps of its loads and the two launches (weight preparation, then the
 * convolution). */
#include "cuda_conv_tma.h"

#include "cuda_cg.h"
#include "cuda_nvrtc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char ptc_cuda_attn_text[];
extern const char ptc_cuda_attn_wg_text[];
extern const char ptc_cuda_conv_tma_text[];

#define CTMA_FUNC_MAX_DYN_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
#define CTMA_SMEM_MAX 232448 /* an sm_90 block's dynamic shared memory */

/* The kernel's shape (PTC_CUDA_CONV_TMA_CFG="mt,na,nb,irnd,bn,grid", a
 * tuning knob read once; unset fields keep the defaults): 64-row groups per
 * consumer warpgroup (mt 1 or 2; 0: per call, see plan_call), halo and
 * weight ring slots (na, nb), where f32's A is rounded to TF32 (irnd: 0
 * cvt.rna and 1 integer arithmetic in the consumers' registers, 2 once per
 * halo in shared memory by the producer warpgroup's spare warps, 3 by the
 * tensor copy of a TFLOAT32 map; -1: 3),
 * output channels a block (bn 64 or 128; 0: per call), a cap on the
 * persistent grid (grid; 0: one block an SM; tests use it to give blocks
 * several work items). H100, resnet18 b32 ms (test_cuda_conv_tma --bench),
 * layer1 / layer2 / layer2.0: mt 2 0.0490 / 0.0449 / 0.0401, mt 1 0.0526 /
 * 0.0542 / 0.0324 (irnd 1, bn 64); irnd 0 0.0523 / 0.0476 / 0.0427 (mt 2);
 * nb 4 or 12, na 3 no faster. */
typedef struct ctma_cfg {
  int mt, na, nb, irnd, bn, grid;
} ctma_cfg;

static ctma_cfg cfg = {0, 2, 8, -1, 0, 0};
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static void cfg_read(void) {
  const char* v = getenv("PTC_CUDA_CONV_TMA_CFG");
  ctma_cfg c = cfg;
  if (v && sscanf(v, "%d,%d,%d,%d,%d,%d", &c.mt, &c.na, &c.nb, &c.irnd, &c.bn, &c.grid) >= 3 && c.mt >= 0 &&
      c.mt <= 2 && c.na >= 1 && c.na <= 4 && c.nb >= 2 && c.nb <= 16 && c.irnd >= -1 && c.irnd <= 3 &&
      (c.bn == 0 || c.bn == 64 || c.bn == 128) && c.grid >= 0)
    cfg = c;
}

static const ctma_cfg* cfg_get(void) {
  pthread_once(&cfg_once, cfg_read);
  return &cfg;
}

/* Device layout of ptc_ctma_args (cuda_conv_tma.cuh). */
typedef struct ctma_args {
  int32_t n, h, w, c, oh, ow, oc, kh, kw, ph, pw, sh, sw;
  int64_t os_n, os_h, os_w;
  int32_t th, tw, tiles_h, tiles_w, aslot;
} ctma_args;
_Static_assert(sizeof(ctma_args) == 104, "ctma_args must match ptc_ctma_args");

/* A CUtensorMap: 128 bytes, 64-byte aligned. */
typedef struct ctma_tmap {
  _Alignas(64) uint64_t w[16];
} ctma_tmap;

typedef struct ctma_mod {
  cu_module mod;
  cu_function conv, wprep;
} ctma_mod;

static pthread_mutex_t ctma_lock = PTHREAD_MUTEX_INITIALIZER;
static ctma_mod ctma_mods[3][2][2][4][2]; /* [dt][mt - 1][bn / 64 - 1][rounding][relu] */

/* Bytes of an element of d's type; channels in a 128-byte chunk. */
static int elem_bytes(const cuda_conv_tma_desc* d) { return d->dt == 0 ? 4 : 2; }
static int chunk_ch(const cuda_conv_tma_desc* d) { return 128 / elem_bytes(d); }

static int64_t smem_bytes(int64_t aslot, int bn) {
  const ctma_cfg* c = cfg_get();
  return 1024 + c->na * aslot + c->nb * bn * 128 + 24 * c->na + 16 * c->nb;
}

static int stride_h(const cuda_conv_tma_desc* d) { return d->sh > 0 ? d->sh : 1; }
static int stride_w(const cuda_conv_tma_desc* d) { return d->sw > 0 ? d->sw : 1; }

/* The halo of a th x tw output tile: rows x columns of input pixels. */
static int64_t halo_h(int64_t th, const cuda_conv_tma_desc* d) { return (th - 1) * stride_h(d) + d->kh; }
static int64_t halo_w(int64_t tw, const cuda_conv_tma_desc* d) { return (tw - 1) * stride_w(d) + d->kw; }

/* Bytes of a halo slot: its pixels of 128 bytes, rounded up to 1024 (the
 * swizzle's alignment). */
static int64_t halo_slot(int64_t th, int64_t tw, const cuda_conv_tma_desc* d) {
  return (halo_h(th, d) * halo_w(tw, d) * 128 + 1023) / 1024 * 1024;
}

/* The output tile: at most 128 * mt pixels, the fewest tiles over the
 * oh x ow plane, then the smallest halo; its halo fits the tensor copy's
 * box (256 a side) and two halo slots the shared memory. 0 when none does
 * (a window too wide for the box), else the number of tiles. */
static int64_t pick_tile(const cuda_conv_tma_desc* d, int mt, int bn, int64_t oh, int64_t ow, int* th,
                         int* tw) {
  int64_t best = -1, best_halo = 0, rows = 128 * mt;
  for (int64_t w = 1; w <= rows && w <= ow; w++) {
    int64_t h = rows / w < oh ? rows / w : oh;
    if (halo_w(w, d) > 256 || halo_h(h, d) > 256) continue;
    int64_t slot = halo_slot(h, w, d);
    if (smem_bytes(slot, bn) > CTMA_SMEM_MAX) continue;
    int64_t tiles = ((oh + h - 1) / h) * ((ow + w - 1) / w);
    if (best < 0 || tiles < best || (tiles == best && slot < best_halo)) {
      best = tiles, best_halo = slot;
      *th = (int)h, *tw = (int)w;
    }
  }
  return best > 0 ? best : 0;
}

/* How a call runs: 64-row groups per consumer warpgroup, output channels
 * a block, the tile and where A is rounded (cfg's irnd). */
typedef struct ctma_call {
  int mt, bn, th, tw, rnd;
} ctma_call;

/* The call's shape for an oh x ow output: cfg's mt, else two groups (each
 * B tile read serves 256 pixels) unless one group's tiles cover the plane
 * with 1.3 times less waste (strided planes, whose halos cap two groups'
 * tiles: layer2.0 0.0324 vs 0.0401 ms). False when no tile fits. */
static bool plan_call(const cuda_conv_tma_desc* d, int64_t oh, int64_t ow, ctma_call* c) {
  int mt = cfg_get()->mt, bn = cfg_get()->bn;
  /* 128 output channels a block where OC allows, except strided windows,
   * whose halos then get less room (H100 ms, 128 vs 64: layer2 0.0382 vs
   * 0.0479, layer3 0.0368 vs 0.0427, layer3's 1x1 downsample 0.0075 vs
   * 0.0092; layer2.0 3x3 s2 0.0399 vs 0.0339, layer3.0 0.0393 vs 0.0305) */
  if (!bn)
    bn = d->oc % 128 == 0 && mt != 2 && ((stride_h(d) == 1 && stride_w(d) == 1) || d->kh * d->kw == 1)
             ? 128
             : 64;
  if (d->oc % bn) return false;
  /* 128 channels: one group only (two would need more than the 168
   * registers ptxas allots a thread: the wgmmas serialised) */
  if (bn == 128) mt = 1;
  /* f32: A rounded to TF32 by the tensor copy of a TFLOAT32 map (3; to
   * nearest, ties to even). H100, resnet18 b32 fp32, GPU time a call
   * (profile_cuda) and max error against a float64 reference
   * (bench/conv_accuracy.py, eager 2.16e-3): the copy 1.064 ms, 2.06e-3;
   * the producer's spare warps rounding each halo in shared memory (2)
   * 1.091 ms, 2.06e-3; the consumers' registers (1) 1.154 ms, 2.06e-3;
   * Inductor 1.124 ms. (Session 14 saw the copy's form at 2.06e-2 in a
   * model: a consumer's ldmatrix reads raced the next copy into the halo
   * slot before the proxy fence; its single-layer test ran one work item
   * a block.) 16-bit types: nothing to round (3: plain copies). */
  int rnd = d->dt || cfg_get()->irnd < 0 ? 3 : cfg_get()->irnd;
  ctma_call c1 = {1, bn, 0, 0, rnd}, c2 = {2, bn, 0, 0, rnd};
  int64_t t1 = mt == 2 ? 0 : pick_tile(d, 1, bn, oh, ow, &c1.th, &c1.tw);
  int64_t t2 = mt == 1 ? 0 : pick_tile(d, 2, bn, oh, ow, &c2.th, &c2.tw);
  if (!t1 && !t2) return false;
  /* rows computed per output pixel: t * 128 * mt / (oh * ow) */
  *c = !t2 || (t1 && (double)t2 * 256 > 1.3 * (double)t1 * 128) ? c1 : c2;
  return true;
}

bool cuda_conv_tma_enabled(const cuda_device* d) {
  const char* v = getenv("PTC_CUDA_CONV_TMA");
  return d && d->cc_major == 9 && d->cc_minor == 0 && cuda_libs_get()->cu.TensorMapEncodeTiled &&
         !(v && *v == '0');
}

/* cuda_conv_tma_refusal, filling *cc with how the call runs when taken
 * (one tile search a call: run reuses it). */
static const char* check_desc(int cc_major, int cc_minor, const cuda_conv_tma_desc* d, ctma_call* cc) {
  if (cc_major != 9 || cc_minor != 0) return "the TMA convolution is built for sm_90a only";
  if (d->n <= 0 || d->h <= 0 || d->w <= 0 || d->kh <= 0 || d->kw <= 0 || d->ph < 0 || d->pw < 0 ||
      d->sh < 0 || d->sw < 0)
    return "a size is not positive";
  if (stride_h(d) > 4 || stride_w(d) > 4) return "a stride above 4";
  if (d->dt < 0 || d->dt > 2) return "an element type other than f32, bf16 and f16";
  if (d->c % chunk_ch(d) != 0 || d->c <= 0)
    return d->dt ? "input channels are not a multiple of 64" : "input channels are not a multiple of 32";
  if (d->oc % 64 != 0 || d->oc <= 0) return "output channels are not a multiple of 64";
  int64_t eh = (int64_t)d->h + 2 * d->ph - d->kh, ew = (int64_t)d->w + 2 * d->pw - d->kw;
  if (eh < 0 || ew < 0) return "an empty output plane";
  int64_t oh = eh / stride_h(d) + 1, ow = ew / stride_w(d) + 1;
  if (!plan_call(d, oh, ow, cc)) return "the window's halo does not fit a tensor copy (or bn)";
  if ((int64_t)d->n * d->h * d->w * d->c >= ((int64_t)1 << 31) ||
      (int64_t)d->n * oh * ow * d->oc >= ((int64_t)1 << 31) ||
      (int64_t)d->oc * d->c * d->kh * d->kw >= ((int64_t)1 << 31))
    return "a tensor of 2^31 elements or more";
  return NULL;
}

const char* cuda_conv_tma_refusal(int cc_major, int cc_minor, const cuda_conv_tma_desc* d) {
  ctma_call cc;
  return check_desc(cc_major, cc_minor, d, &cc);
}

size_t cuda_conv_tma_scratch(const cuda_conv_tma_desc* d) {
  return (size_t)d->oc * (size_t)d->c * (size_t)d->kh * (size_t)d->kw * (size_t)elem_bytes(d);
}

static ptc_status module_source(ptc_strbuf* src, int dt, int mt, int bn, int rnd, bool relu) {
  ptc_sb_init(src);
  const ctma_cfg* c = cfg_get();
  ptc_sb_printf(src, "// libptc TMA convolution (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_printf(src, "#define PTC_CTMA_NA %d\n#define PTC_CTMA_NB %d\n#define PTC_CTMA_IRND %d\n", c->na, c->nb,
                rnd);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_attn_text);
  ptc_sb_append(src, ptc_cuda_attn_wg_text);
  ptc_sb_append(src, ptc_cuda_conv_tma_text);
  ptc_sb_printf(src, "PTC_CTMA_KERNEL(ptc_ctma, %d, %d, %d, %s)\n", dt, bn, mt, relu ? "true" : "false");
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

ptc_status cuda_conv_tma_check_compile(void) {
  /* f32 (the copy rounding, two 64-row groups, 64 channels; register
   * rounding, one group, 128 channels; rounding warps), bf16, f16 */
  static const int forms[5][4] = {{0, 2, 64, 3}, {0, 1, 128, 1}, {0, 2, 64, 2}, {1, 1, 128, 3}, {2, 2, 64, 3}};
  ptc_status s = PTC_OK;
  for (int i = 0; i < 5 && !s; i++) {
    ptc_strbuf src;
    PTC_TRY(module_source(&src, forms[i][0], forms[i][1], forms[i][2], forms[i][3], true));
    cuda_cubin cb;
    memset(&cb, 0, sizeof cb);
    s = cuda_nvrtc_compile_ex(src.data, "ptc_conv_tma", 90 | CUDA_ARCH_SPECIFIC, NULL, &cb);
    cuda_cubin_free(&cb);
    ptc_sb_free(&src);
  }
  return s;
}

static ptc_status load_mod(ptc_context* ctx, int dt, int mt, int bn, int rnd, bool relu, ctma_mod* m) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  PTC_TRY(module_source(&src, dt, mt, bn, rnd, relu));
  PTC_TRY(cuda_build_module(ctx, 90 | CUDA_ARCH_SPECIFIC, &src, "ptc_conv_tma",
                            "the TMA convolution kernel", &m->mod));
  cu_result r = cu->ModuleGetFunction(&m->conv, m->mod, "ptc_ctma");
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&m->wprep, m->mod, dt ? "ptc_ctma_wprep16" : "ptc_ctma_wprep");
  if (r == CU_SUCCESS) r = cu->FuncSetAttribute(m->conv, CTMA_FUNC_MAX_DYN_SMEM, CTMA_SMEM_MAX);
  if (r != CU_SUCCESS) {
    cu->ModuleUnload(m->mod);
    memset(m, 0, sizeof *m);
    return cuda_error(r, "loading the TMA convolution kernel");
  }
  return PTC_OK;
}

/* A rank-5 tensor map (the kernel's copies are 5-D) of CUtensorMapDataType
 * type over p with dims and byte strides of the dims above the first;
 * 128-byte swizzle, zero fill outside. False when the driver refuses it. */
static bool tmap_make(ctma_tmap* m, int type, cu_deviceptr p, const uint64_t dims[5], const uint64_t strides[4],
                      const unsigned box[5]) {
  const cu_api* cu = &cuda_libs_get()->cu;
  unsigned es[5] = {1, 1, 1, 1, 1};
  for (int i = 0; i < 4; i++)
    if (strides[i] == 0 || strides[i] % 16 != 0 || strides[i] >= ((uint64_t)1 << 40)) return false;
  /* no interleave (0), 128-byte swizzle (3), L2 promotion 128
   * bytes (2), zero fill (0) */
  return cu->TensorMapEncodeTiled(m, (unsigned)type, 5, (void*)(uintptr_t)p, dims, strides, box, es, 0, 3, 2, 0) ==
         CU_SUCCESS;
}

ptc_status cuda_conv_tma_run(ptc_context* ctx, const cuda_device* dev, cu_stream stream,
                             const cuda_conv_tma_desc* d, cu_deviceptr x, cu_deviceptr w,
                             cu_deviceptr bias, cu_deviceptr out, cu_deviceptr scratch, bool prepared) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ctma_call cc;
  const char* why = check_desc(dev->cc_major, dev->cc_minor, d, &cc);
  if (why) return PTC_ERR(UNIMPLEMENTED, "cuda backend: %s", why);
  if (!cu->TensorMapEncodeTiled)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: the driver has no cuTensorMapEncodeTiled");
  if ((x | out | scratch) & 15)
    return PTC_ERR(INVALID_ARGUMENT, "cuda backend: TMA convolution buffers must be 16-byte aligned");
  ctma_args a;
  memset(&a, 0, sizeof a);
  a.n = d->n, a.h = d->h, a.w = d->w, a.c = d->c, a.oc = d->oc;
  a.kh = d->kh, a.kw = d->kw, a.ph = d->ph, a.pw = d->pw;
  a.sh = stride_h(d), a.sw = stride_w(d);
  a.oh = (d->h + 2 * d->ph - d->kh) / a.sh + 1;
  a.ow = (d->w + 2 * d->pw - d->kw) / a.sw + 1;
  a.os_w = d->oc, a.os_h = (int64_t)a.ow * d->oc, a.os_n = (int64_t)a.oh * a.os_h;
  const int th = cc.th, tc = cc.tw; /* the tile's rows and columns */
  a.th = th, a.tw = tc;
  a.tiles_h = (a.oh + th - 1) / th;
  a.tiles_w = (a.ow + tc - 1) / tc;
  a.aslot = (int32_t)halo_slot(th, tc, d);
  ctma_mod* m = &ctma_mods[d->dt][cc.mt - 1][cc.bn / 64 - 1][cc.rnd][d->relu];
  pthread_mutex_lock(&ctma_lock);
  ptc_status s = m->conv ? PTC_OK : load_mod(ctx, d->dt, cc.mt, cc.bn, cc.rnd, d->relu, m);
  cu_function conv = m->conv, wprep = m->wprep;
  pthread_mutex_unlock(&ctma_lock);
  PTC_TRY(s);
  /* the input {C, W, H, N, 1}, boxes the halo {CH, halo_w, halo_h, 1, 1};
   * the prepared weights {CH, OC, taps * C / CH, 1, 1}, boxes {CH, BN, 1,
   * 1, 1}; CH channels of 128 bytes */
  const uint64_t es = (uint64_t)elem_bytes(d), ch = (uint64_t)chunk_ch(d);
  /* FLOAT32 (7; TFLOAT32 (11) where f32's copy rounds, irnd 3), BFLOAT16
   * (9), FLOAT16 (6) */
  const int xtype = d->dt == 1 ? 9 : d->dt == 2 ? 6 : cc.rnd == 3 ? 11 : 7, wtype = d->dt ? xtype : 7;
  ctma_tmap tx, tw;
  uint64_t xd[5] = {(uint64_t)d->c, (uint64_t)d->w, (uint64_t)d->h, (uint64_t)d->n, 1};
  uint64_t xs[4] = {(uint64_t)d->c * es, (uint64_t)d->w * d->c * es, (uint64_t)d->h * d->w * d->c * es, 0};
  xs[3] = xs[2] * (uint64_t)d->n;
  unsigned xb[5] = {(unsigned)ch, (unsigned)halo_w(tc, d), (unsigned)halo_h(th, d), 1, 1};
  uint64_t kt = (uint64_t)d->kh * d->kw * ((uint64_t)d->c / ch);
  uint64_t wd[5] = {ch, (uint64_t)d->oc, kt, 1, 1};
  uint64_t ws[4] = {128, (uint64_t)d->oc * 128, 0, 0};
  ws[2] = ws[1] * kt, ws[3] = ws[2];
  unsigned wb[5] = {(unsigned)ch, (unsigned)cc.bn, 1, 1, 1};
  if (!tmap_make(&tx, xtype, x, xd, xs, xb) || !tmap_make(&tw, wtype, scratch, wd, ws, wb))
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: the driver refused a TMA convolution tensor map");
  /* the weights, then the convolution */
  int32_t oc = d->oc, c = d->c, kh = d->kh, kw = d->kw;
  void* wp[] = {&w, &scratch, &oc, &c, &kh, &kw};
  int64_t wt = (int64_t)d->oc * d->c * d->kh * d->kw;
  unsigned wg = (unsigned)((wt + 255) / 256 < 4096 ? (wt + 255) / 256 : 4096);
  if (!prepared)
    CUDA_TRY(cu->LaunchKernel(wprep, wg, 1, 1, 256, 1, 1, 0, stream, wp, NULL),
             "launching the TMA convolution's weight preparation");
  int64_t items = (int64_t)a.n * a.tiles_h * a.tiles_w * (d->oc / cc.bn);
  int64_t sms = dev->sm_count > 0 ? dev->sm_count : 132, gx = items < sms ? items : sms;
  if (cfg_get()->grid > 0 && gx > cfg_get()->grid) gx = cfg_get()->grid;
  void* cp[] = {&bias, &out, &a, &tx, &tw};
  CUDA_TRY(cu->LaunchKernel(conv, (unsigned)gx, 1, 1, 384, 1, 1, (unsigned)smem_bytes(a.aslot, cc.bn), stream, cp,
                            NULL),
           "launching the TMA convolution");
  return PTC_OK;
}
