/* cuda_attn_wg.c - the Hopper attention path: which sdpa calls take the
 * wgmma kernel of cuda_attn_wg.cuh (sm_90, f16/bf16, head dim 64 or 128, no
 * mask tensor, cp.async layouts), its modules (the prelude, cuda_attn.cuh
 * and cuda_attn_wg.cuh plus one instantiation, compiled for sm_90a through
 * the kernel cache on first use, process-wide), the tensor maps of its TMA
 * loads (cuTensorMapEncodeTiled, per call) and the launch. */
#include "cuda_attn_wg.h"

#include "cuda_aot.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char ptc_cuda_attn_text[];
extern const char ptc_cuda_attn_wg_text[];

#define WG_FUNC_MAX_DYN_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */

/* Device layout of ptc_attn_args (cuda_attn.cuh). */
typedef struct wg_args {
  cuda_attn_geom g;
  int32_t vec, mvec;
} wg_args;
_Static_assert(sizeof(wg_args) == 408, "wg_args must match ptc_attn_args");

/* A kernel shape: consumer warpgroups per block (64 query rows each; the
 * block has one more, the producer), key tile rows, buffers per k and v
 * ring (2 to 4), ex: every ex-th group of 8 keys takes its exponentials
 * from a polynomial on the FMA pipe (0: all from the MUFU; measured slower
 * on the H100 so far: d64 0.107 ms with 0, 0.110 with 4, 0.115 with 2). */
typedef struct wg_cfg {
  int nwg, bn, ns, ex;
} wg_cfg;

static const wg_cfg wg_cfgs[] = {
    {2, 128, 2, 0}, {2, 128, 3, 0}, {2, 64, 4, 0}, {3, 64, 4, 0},
    {3, 64, 4, 4},  {2, 128, 2, 4}, {2, 128, 2, 2}, {2, 128, 4, 0},
    {2, 128, 4, 4}, {2, 128, 4, 8}, {3, 128, 2, 0}, {3, 128, 3, 0}, {3, 128, 4, 0},
    {3, 128, 2, 8}, {3, 128, 2, 16}, {4, 64, 2, 0}, {4, 64, 3, 0}, {4, 64, 4, 0},
};
#define WG_NCFG ((int)(sizeof wg_cfgs / sizeof wg_cfgs[0]))
/* The default shape per head dim index (1: 64, 2: 128) and causal flag,
 * the fastest of those timed on an H100 (b8 h16 s1024 bf16, ms; torch
 * flash sdpa d64 0.082, causal 0.059, d128 0.115, causal 0.086; the
 * earlier block-barrier wgmma kernel 0.121 / 0.092 / 0.226 / 0.171):
 * d64 2,128,3: 0.103, causal 0.080 (2,128,2: 0.107 / 0.081; 3,64,4: 0.111
 * / 0.089; 2,64,4: 0.121 / 0.089); d128 3,64,4: 0.204 (2,64,4: 0.216,
 * 2,128,2: 0.218), causal 2,128,2: 0.136 (2,128,3: 0.143, 2,64,4: 0.141,
 * 3,64,4: 0.157). Session 11 (test_cuda_attn --bench-wg, 8 chained calls,
 * best of 3, one run): d64 2,128,4 (4 buffers of 128 keys, 132 KB)
 * 0.0990, causal 0.0774 against 2,128,3's 0.0995 / 0.1000 and 0.0784 /
 * 0.0787 (two runs around it): now the d64 default. Session 13 (same
 * bench, tensor-copy loads): d128 2,128,3 0.1290 ms against 3,64,4's
 * 0.1808-0.1819 (causal 0.1407 vs 0.1353: kept), now the d128 default. */
static const int wg_default[3][2] = {{0, 0}, {7, 7}, {1, 0}}; /* [hi][causal] */

/* The wide d64 shape: three consumer warpgroups (192 query rows a work
 * item, q from shared memory; FlashAttention-3's d64 tile), 128-key tiles,
 * 2 buffers. Session 18 (H100 bf16 b8 h16 s1024 d64, --bench-wg, ms, in
 * the same runs): 0.0856-0.0869 against 2,128,4's 0.0902-0.0912 (3,128,3
 * 0.0868, 3,128,4 0.0867, ping-pong turns 0.0865, tensor-core row sums
 * 0.0888-0.0894, polynomial exponentials every 8th / 16th key group 0.0886
 * / 0.0902; causal 0.087-0.089 against 0.0714, so causal keeps 2,128,4). */
#define WG_WIDE 10

/* Four consumer warpgroups (256 query rows a work item, 112 registers a
 * consumer thread, so 64-key tiles; head dim 64 only), 3 buffers. Session
 * 19 (H100 bf16 b8 h16 s1024 d64, --bench-wg, two rounds of one run, ms):
 * 4,64,3 0.0798-0.0803, 4,64,4 0.0810-0.0811 (with items back to back
 * 0.0806-0.0807), 4,64,2 0.0847-0.0854, against the wide 3,128,2's
 * 0.0856-0.0863 and cuDNN's 0.080-0.085. Session 20: its GPU cases passed
 * (29 of 29 named for every call, 29 of 29 as the d64 default; the q-tile
 * barriers from PTC_WS_QBAR, head dim 128 refused) and it timed 0.0800 /
 * 0.0808 against the wide shape's 0.0861 in the same run (causal d64
 * 0.0727 against 2,128,4's 0.0715: causal keeps 2,128,4). So it is the
 * d64 default without causal where L rounded up to 256 is under 1.12
 * times L rounded up to 128 (L = 256, 512, 768, 1024, ...), before the
 * wide shape's rule; PTC_CUDA_ATTN_WG_FOUR=0 turns it off. */
#define WG_FOUR_CFG 4, 64, 3, 0

/* The row of the shape table (nwg, bn, ns, ex), or -1. */
static int wg_find(int nwg, int bn, int ns, int ex) {
  for (int i = 0; i < WG_NCFG; i++)
    if (wg_cfgs[i].nwg == nwg && wg_cfgs[i].bn == bn && wg_cfgs[i].ns == ns && wg_cfgs[i].ex == ex)
      return i;
  return -1;
}

/* false when PTC_CUDA_ATTN_WG_FOUR=0 turns the four-warpgroup default off */
static bool wg_four_wanted(void) {
  const char* env = getenv("PTC_CUDA_ATTN_WG_FOUR");
  return !(env && strcmp(env, "0") == 0);
}

/* The SM count of a device (132 where unknown) */
static int64_t wg_sms(const cuda_device* dev) { return dev->sm_count > 0 ? dev->sm_count : 132; }

/* The default shape of a call: for d64 without causal the four-warpgroup
 * shape by its rule above where its grid has two items per SM or more
 * (session 20, H100 bf16 b8 h16 d64, ms, default against
 * PTC_CUDA_ATTN_WG_FOUR=0: L = 2048 0.2858 / 0.2877; at L = 512 its 256
 * items fell below cuda_attn_wg_takes's two row tiles per SM, so the call
 * left the wgmma kernel: 0.0416 against the wide shape's 0.0283), else
 * the wide shape when its padded rows (L rounded up to 192) are under
 * 1.18 times the 2,128,4 shape's (L rounded up to 128; 1.18: its measured
 * speed per row at L = 1024, so short sequences such as 128 or 256 stay
 * on 128-row items), else the table above. */
static int wg_default_shape(int hi, const cuda_attn_geom* g, const cuda_device* dev) {
  const int64_t L = g->L;
  int64_t r4 = (L + 255) / 256 * 256, r3 = (L + 191) / 192 * 192, r2 = (L + 127) / 128 * 128;
  if (hi == 1 && !g->causal && wg_four_wanted() && r4 * 100 < r2 * 112 &&
      r4 / 256 * g->nbatch >= 2 * wg_sms(dev))
    return wg_find(WG_FOUR_CFG);
  if (hi == 1 && !g->causal && r3 * 100 < r2 * 118) return WG_WIDE;
  return wg_default[hi][g->causal != 0];
}

typedef struct wg_mod {
  cu_module mod;
  cu_function fn;
} wg_mod;

static pthread_mutex_t wg_lock = PTHREAD_MUTEX_INITIALIZER;
static wg_mod wg_mods[2][32][2][2][2][WG_NCFG]; /* [tma][fl][bf][d128][causal][shape] */

/* 1024-byte alignment slack, the k and v rings, 4 mbarriers per buffer,
 * the 512-byte ones block of the tensor-core row sums (FL & 4), and with
 * q in shared memory (FL & 8) the consumer warpgroups' 64 x d tiles (two
 * each with FL & 16) after 1024 bytes of alignment slack. */
static int wg_smem_bytes(wg_cfg c, int d, int fl) {
  return 1024 + 2 * c.ns * c.bn * d * 2 + 32 * c.ns + 512 +
         (fl & 8 ? 1024 + (fl & 16 ? 2 : 1) * c.nwg * 64 * d * 2 : 0);
}

static int wg_flags(int hi, bool causal, int nwg);

/* The shape index PTC_CUDA_ATTN_WG_CFG="nwg,bn,ns[,ex]" names (a row of
 * the table whose shared memory fits head dim d on the device), or -1. */
static int wg_env_shape(int d, const cuda_device* dev) {
  const char* env = getenv("PTC_CUDA_ATTN_WG_CFG");
  int nwg, bn, ns, ex = 0;
  if (!env || sscanf(env, "%d,%d,%d,%d", &nwg, &bn, &ns, &ex) < 3) return -1;
  int i = wg_find(nwg, bn, ns, ex);
  if (i < 0 || (nwg == 4 && d != 64)) return -1; /* four: 112 registers a thread, head dim 64 only */
  /* causal does not change the q tiles; back-to-back items are dropped
   * where their second q tiles do not fit */
  int fl = wg_flags(d == 128 ? 2 : 1, false, nwg) & ~16;
  return wg_smem_bytes(wg_cfgs[i], d, fl) <= dev->max_smem_optin ? i : -1;
}

/* The shape index a call runs: PTC_CUDA_ATTN_WG_CFG's or the default. */
static int wg_call_shape(const cuda_device* dev, const cuda_attn_geom* g, int hi) {
  int sh = wg_env_shape(hi == 2 ? 128 : 64, dev);
  return sh >= 0 ? sh : wg_default_shape(hi, g, dev);
}

bool cuda_attn_wg_shape(const cuda_device* d, const cuda_attn_geom* g, int hi, bool vec, int shape[4]) {
  if (!cuda_attn_wg_takes(d, g, hi, vec)) return false;
  wg_cfg c = wg_cfgs[wg_call_shape(d, g, hi)];
  shape[0] = c.nwg, shape[1] = c.bn, shape[2] = c.ns, shape[3] = c.ex;
  return true;
}

bool cuda_attn_wg_takes(const cuda_device* d, const cuda_attn_geom* g, int hi, bool vec) {
  const char* env = getenv("PTC_CUDA_ATTN_WG");
  if (env && strcmp(env, "0") == 0) return false;
  if (d->cc_major != 9 || d->cc_minor != 0 || !vec || g->mask != 0 || (hi != 1 && hi != 2))
    return false;
  if (wg_env_shape(hi == 2 ? 128 : 64, d) >= 0) return true;
  /* grids of fewer than two row tiles per SM at the default shape stay on
   * the mma.sync kernel (H100: b2 h3 L1000 S777 d64 0.019 ms there, 0.021
   * here; GPT-2's b8 h12 s256 causal 0.020 both) */
  int64_t bm = 64 * wg_cfgs[wg_default_shape(hi, g, d)].nwg;
  int64_t blocks = (g->L + bm - 1) / bm * g->nbatch;
  return blocks >= 2 * wg_sms(d);
}

/* Appends the instantiation `name` of (bf, d, shape c, causal; tma: k / v
 * tiles by tensor copies; fl: the kernel's FL flags, bit 0 ping-pong turns,
 * bit 1 head-major work items, bit 2 row sums by the tensor cores, bit 3 q
 * from shared memory, bit 4 work items back to back). */
static void wg_instance(ptc_strbuf* src, const char* name, bool bf, int d, wg_cfg c, bool causal,
                        bool tma, int fl) {
  ptc_sb_printf(src, "PTC_ATTN_WS%s_KERNEL(%s, %s, %d, %d, %d, %d, %d, %s, %d)\n",
                tma ? "_TMA" : "", name, bf ? "true" : "false", d, c.bn, c.nwg, c.ex, c.ns,
                causal ? "true" : "false", fl);
}

/* The default FL flags: head-major items without causal (H100 bf16 b8 h16
 * s1024, test_cuda_attn --bench-wg, one run, tensor-copy loads: d64 0.0903
 * vs 0.0926-0.0929 ms, d128 0.1818 vs 0.2091-0.2096); causal keeps the
 * most-key-tiles-first order (head-major: d64 causal 0.0850 vs 0.0734, d128
 * causal 0.1378 vs 0.1352-0.1355). Ping-pong turns are off except d128
 * causal with q in shared memory: d64 0.0939, d128 0.2298, causal 0.0747 /
 * 0.1346 against the same defaults. The tensor-core row sums only for d64
 * causal (session 13, two runs: 0.0713 vs 0.0730 ms and, at 2,128,3,
 * 0.0722 vs 0.0734; slower elsewhere: d64 0.0953-0.0956 vs 0.0904-0.0906,
 * d128 0.1937 vs 0.1808, d128 causal 0.1359 vs 0.1350). q in shared memory
 * for head dim 128 (session 15, two runs, ms, registers -> shared memory:
 * d128 0.1314-0.1318 -> 0.1253-0.1258, causal 0.1355-0.1358 -> 0.1313-0.1316,
 * with ping-pong turns 0.1296-0.1297; d64 0.0908 -> 0.0941-0.0946, causal
 * 0.0714 -> 0.0753). hi: head dim index (1: 64, 2: 128). */
static int wg_flags_default(int hi, bool causal, int nwg) {
  if (hi == 2) return causal ? 8 | 1 : 8 | 2;
  return (causal ? 4 : 2) | (nwg >= 3 ? 8 : 0);
}

/* The FL flags of a call: the default, PTC_CUDA_ATTN_WG_PP=1 adds ping-pong
 * turns, PTC_CUDA_ATTN_WG_ORDER=0/1 turns head-major items off / on,
 * PTC_CUDA_ATTN_WG_LS=0/1 the tensor-core row sums (an m64n8k16 wgmma of
 * P and a block of ones beside each P v step, in place of two FADDs an
 * element of P in the softmax), PTC_CUDA_ATTN_WG_QS=0/1 q read by the S
 * wgmmas from shared memory (FL & 8), PTC_CUDA_ATTN_WG_FLAT=0/1 work items
 * back to back (FL & 16: the next item's first S issued with the current
 * one's last P v; only with q in shared memory and without turns). */
static int wg_flags(int hi, bool causal, int nwg) {
  const char* pp = getenv("PTC_CUDA_ATTN_WG_PP");
  const char* od = getenv("PTC_CUDA_ATTN_WG_ORDER");
  const char* ls = getenv("PTC_CUDA_ATTN_WG_LS");
  const char* qs = getenv("PTC_CUDA_ATTN_WG_QS");
  const char* fl_env = getenv("PTC_CUDA_ATTN_WG_FLAT");
  int fl = wg_flags_default(hi, causal, nwg);
  if (pp && strcmp(pp, "1") == 0) fl |= 1;
  if (od && strcmp(od, "0") == 0) fl &= ~2;
  if (od && strcmp(od, "1") == 0) fl |= 2;
  if (ls && strcmp(ls, "0") == 0) fl &= ~4;
  if (ls && strcmp(ls, "1") == 0) fl |= 4;
  if (qs && strcmp(qs, "0") == 0) fl &= ~8;
  if (qs && strcmp(qs, "1") == 0) fl |= 8;
  if (fl_env && strcmp(fl_env, "0") == 0) fl &= ~16;
  if (fl_env && strcmp(fl_env, "1") == 0) fl |= 16;
  /* back-to-back items need q in shared memory and no turns */
  if ((fl & 16) && (!(fl & 8) || (fl & 1))) fl &= ~16;
  return fl;
}

/* Tensor-copy (TMA) loads by default except for d128 causal (H100, two
 * runs, most-key-tiles-first order; cp.async -> TMA, ms: d64 0.0995-0.0996
 * -> 0.0926-0.0930, causal 0.0794-0.0797 -> 0.0732-0.0734, d128
 * 0.2098-0.2105 -> 0.2091-0.2096, d128 causal 0.1355-0.1359 ->
 * 0.1412-0.1417). */
static bool wg_tma_default(int hi, bool causal) { return !(hi == 2 && causal); }

/* Whether a call of head dim index hi takes the tensor-copy loads when its
 * maps can be built (PTC_CUDA_ATTN_WG_TMA=0: never; 1: always). */
static bool wg_tma_wanted(int hi, bool causal) {
  const char* env = getenv("PTC_CUDA_ATTN_WG_TMA");
  if (env && strcmp(env, "0") == 0) return false;
  if (env && strcmp(env, "1") == 0) return true;
  return wg_tma_default(hi, causal);
}

static void wg_source(ptc_strbuf* src) {
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc attention kernel, wgmma (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_attn_text);
  ptc_sb_append(src, ptc_cuda_attn_wg_text);
}

/* The module of one instantiation, as load_wg builds it (and the table of
 * ahead-of-time cubins promises it, cuda_attn_wg_aot_sources). */
static ptc_status wg_module_source(ptc_strbuf* src, bool bf, int d, bool causal, wg_cfg c,
                                   bool tma, int fl) {
  wg_source(src);
  wg_instance(src, "ptc_attn_wg", bf, d, c, causal, tma, fl);
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

static ptc_status load_wg(ptc_context* ctx, const cuda_device* dev, bool bf, int d, bool causal,
                          wg_cfg c, bool tma, int fl, wg_mod* m) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  PTC_TRY(wg_module_source(&src, bf, d, causal, c, tma, fl));
  int arch = (dev->cc_major * 10 + dev->cc_minor) | CUDA_ARCH_SPECIFIC;
  PTC_TRY(cuda_build_module(ctx, arch, &src, "ptc_attention_wg", "the wgmma attention kernel",
                            &m->mod));
  cu_result r = cu->ModuleGetFunction(&m->fn, m->mod, "ptc_attn_wg");
  int smem = wg_smem_bytes(c, d, fl);
  const char* what = "finding the wgmma attention kernel";
  ptc_status s = PTC_OK;
  if (r == CU_SUCCESS && smem > dev->max_smem_optin) {
    s = PTC_ERR(UNIMPLEMENTED, "cuda backend: the wgmma attention kernel needs %d bytes of shared "
                "memory, the device allows %d", smem, dev->max_smem_optin);
  } else if (r == CU_SUCCESS) {
    what = "allowing the wgmma attention kernel's shared memory";
    r = cu->FuncSetAttribute(m->fn, WG_FUNC_MAX_DYN_SMEM, smem);
  }
  if (!s && r != CU_SUCCESS) s = cuda_error(r, what);
  if (s) {
    cu->ModuleUnload(m->mod);
    memset(m, 0, sizeof *m);
  }
  return s;
}

/* A CUtensorMap: 128 bytes, 64-byte aligned. */
typedef struct wg_tmap {
  _Alignas(64) uint64_t w[16];
} wg_tmap;

/* The tensor map of k or v (base p, row stride ss, batch strides bs, in
 * elements) for the kernel's tensor copies: 5-D {D, S, the batch dims
 * innermost first, padded with 1s}, 16-bit elements, boxes of 64 columns x
 * bn rows, 128-byte swizzle (the layout the wgmma descriptors read), rows
 * past S zero-filled. False where the call does not fit a map (more than 3
 * batch dims, strides that are not positive multiples of 16 bytes, an
 * unaligned base) or the driver refuses it. */
static bool wg_tmap_make(wg_tmap* m, const cuda_attn_geom* g, cu_deviceptr p, int64_t ss,
                         const int64_t* bs, int d, int bn) {
  const cu_api* cu = &cuda_libs_get()->cu;
  if (!cu->TensorMapEncodeTiled || g->nb > 3 || (p & 15) != 0 || g->S >= ((int64_t)1 << 31))
    return false;
  uint64_t dims[5] = {(uint64_t)d, (uint64_t)g->S, 1, 1, 1}, strides[4];
  strides[0] = (uint64_t)ss * 2;
  for (int i = 0; i < 3; i++) {
    int bd = g->nb - 1 - i;
    if (bd >= 0) {
      dims[2 + i] = (uint64_t)g->batch[bd];
      strides[1 + i] = (uint64_t)bs[bd] * 2;
    } else {
      strides[1 + i] = strides[i] * dims[1 + i]; /* a padding dim of size 1 */
    }
  }
  for (int i = 0; i < 4; i++)
    if (strides[i] == 0 || strides[i] % 16 != 0 || strides[i] >= ((uint64_t)1 << 40)) return false;
  unsigned box[5] = {64, (unsigned)bn, 1, 1, 1}, es[5] = {1, 1, 1, 1, 1};
  /* UINT16 (1), no interleave (0), 128-byte swizzle (3), L2 promotion 128
   * bytes (2), zero fill (0) */
  return cu->TensorMapEncodeTiled(m, 1, 5, (void*)(uintptr_t)p, dims, strides, box, es, 0, 3, 2,
                                  0) == CU_SUCCESS;
}

ptc_status cuda_attn_wg_run(const cuda_ext_call* c, const cuda_attn_geom* g, bool bf, int hi,
                            cu_deviceptr q, cu_deviceptr k, cu_deviceptr v, cu_deviceptr o) {
  const cuda_device* dev = c->plan->dev;
  int d = hi == 2 ? 128 : 64, sh = wg_call_shape(dev, g, hi);
  bool causal = g->causal != 0;
  wg_cfg cfg = wg_cfgs[sh];
  /* k / v tiles by tensor copies where both maps can be built */
  wg_tmap tk, tv;
  bool tma = wg_tma_wanted(hi, causal) && wg_tmap_make(&tk, g, k, g->k_ss, g->k_bs, d, cfg.bn) &&
             wg_tmap_make(&tv, g, v, g->v_ss, g->v_bs, d, cfg.bn);
  int fl = wg_flags(hi, causal, cfg.nwg);
  /* back-to-back items need a key tile each, and their second q tiles
   * must fit the shared memory (d128 with 3 buffers does not) */
  if (g->S == 0 || wg_smem_bytes(cfg, d, fl) > dev->max_smem_optin) fl &= ~16;
  wg_mod* mod = &wg_mods[tma][fl][bf][hi == 2][causal][sh];
  pthread_mutex_lock(&wg_lock);
  ptc_status s = mod->fn ? PTC_OK : load_wg(c->plan->ctx, dev, bf, d, causal, cfg, tma, fl, mod);
  cu_function fn = mod->fn;
  pthread_mutex_unlock(&wg_lock);
  PTC_TRY(s);
  wg_args a;
  memset(&a, 0, sizeof a);
  a.g = *g;
  a.vec = 1;
  cu_deviceptr pm = 0;
  void* params[] = {&q, &k, &v, &pm, &o, &a, &tk, &tv}; /* the maps only for tma */
  /* persistent: one block per SM over the (row tile, batch entry) items */
  int64_t bm = 64 * cfg.nwg, items = (g->L + bm - 1) / bm * g->nbatch;
  int64_t sms = wg_sms(dev), gx = items < sms ? items : sms;
  if (g->S > INT32_MAX)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention with too many keys");
  if (gx == 0) return PTC_OK;
  CUDA_TRY(cuda_launch_pdl(cuda_device_get(), fn, (unsigned)gx, 1, 128u * (unsigned)(cfg.nwg + 1), 1,
                           (unsigned)wg_smem_bytes(cfg, d, fl), c->stream, params),
           "launching the wgmma attention kernel");
  return PTC_OK;
}

ptc_status cuda_attn_wg_check_compile(int arch) {
  ptc_strbuf src;
  wg_source(&src);
  int n = 0;
  char name[32];
  for (int i = 0; i < WG_NCFG; i++) {
    snprintf(name, sizeof name, "ptc_attn_wg_%d", n++);
    wg_instance(&src, name, true, 64, wg_cfgs[i], false, false, 0);
  }
  /* every head dim / causal default (f16 without causal, bf16 with), with
   * the tensor-core row sums, cp.async and tensor-copy loads, q in
   * registers and in shared memory */
  for (int hi = 1; hi <= 2; hi++)
    for (int causal = 0; causal < 2; causal++) {
      snprintf(name, sizeof name, "ptc_attn_wg_%d", n++);
      wg_instance(&src, name, causal, hi == 2 ? 128 : 64, wg_cfgs[wg_default[hi][causal]], causal,
                  false, 4 | 8);
      snprintf(name, sizeof name, "ptc_attn_wg_%d", n++);
      wg_instance(&src, name, !causal, hi == 2 ? 128 : 64, wg_cfgs[wg_default[hi][causal]], causal,
                  true, 7);
    }
  /* back-to-back items (cp.async and tensor copies, row sums by FADDs
   * and by the tensor cores) */
  snprintf(name, sizeof name, "ptc_attn_wg_%d", n++);
  wg_instance(&src, name, true, 64, wg_cfgs[WG_WIDE], false, true, 2 | 8 | 16);
  snprintf(name, sizeof name, "ptc_attn_wg_%d", n++);
  wg_instance(&src, name, false, 128, wg_cfgs[wg_default[2][1]], true, false, 4 | 8 | 16);
  /* the wide d64 shape and the four-warpgroup one with their default flags */
  snprintf(name, sizeof name, "ptc_attn_wg_%d", n++);
  wg_instance(&src, name, true, 64, wg_cfgs[WG_WIDE], false, true, wg_flags_default(1, false, 3));
  int four = wg_find(WG_FOUR_CFG);
  if (four < 0) {
    ptc_sb_free(&src);
    return PTC_ERR(INTERNAL, "cuda backend: the four-warpgroup attention shape is not in the table");
  }
  snprintf(name, sizeof name, "ptc_attn_wg_%d", n++);
  wg_instance(&src, name, false, 64, wg_cfgs[four], false, true, wg_flags_default(1, false, 4));
  if (src.oom) {
    ptc_sb_free(&src);
    return ptc_status_oom();
  }
  cuda_cubin cb;
  memset(&cb, 0, sizeof cb);
  ptc_status s = cuda_nvrtc_compile_ex(src.data, "ptc_attention_wg", arch | CUDA_ARCH_SPECIFIC, NULL, &cb);
  cuda_cubin_free(&cb);
  ptc_sb_free(&src);
  return s;
}

ptc_status cuda_attn_wg_aot_sources(cuda_aot_src* out, size_t cap, size_t* n) {
  /* the default shapes of each dtype, head dim and causal flag (d64
   * without causal: the 2,128,4 shape, the wide one and the four-warpgroup
   * one, each the default of some lengths) */
  static const char* const kind[3] = {"", " wide", " four"};
  const int four = wg_find(WG_FOUR_CFG);
  if (four < 0) return PTC_ERR(INTERNAL, "cuda backend: the four-warpgroup attention shape is not in the table");
  for (int bf = 0; bf < 2; bf++)
    for (int hi = 1; hi <= 2; hi++)
      for (int causal = 0; causal < 2; causal++)
        for (int k = 0; k < (hi == 1 && !causal ? 3 : 1); k++) {
          if (*n >= cap) return PTC_ERR(INTERNAL, "cuda backend: too many ahead-of-time sources");
          cuda_aot_src* o = &out[*n];
          int d = hi == 2 ? 128 : 64, sh = k == 2 ? four : k == 1 ? WG_WIDE : wg_default[hi][causal];
          PTC_TRY(wg_module_source(&o->src, bf, d, causal, wg_cfgs[sh], wg_tma_default(hi, causal),
                                   wg_flags_default(hi, causal, wg_cfgs[sh].nwg)));
          o->arch = 90 | CUDA_ARCH_SPECIFIC;
          snprintf(o->label, sizeof o->label, "attention wgmma %s d%d%s%s sm_90a", bf ? "bf16" : "f16",
                   d, causal ? " causal" : "", kind[k]);
          (*n)++;
        }
  return PTC_OK;
}
