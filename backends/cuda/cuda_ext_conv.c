/* cuda_ext_conv.c - convolution and pooling on the device, the extern
 * steps cuda_ext.c hands over (IR_EXT_CONV of floating types; max_pool2d,
 * avg_pool2d, adaptive_avg_pool2d fallback nodes).
 *  - Convolution: on sm_90 the wgmma kernels first when enabled
 *    (cuda_conv_wg.c, PTC_CUDA_CONV_WG); on sm_80+ in f16/bf16 (f32 as TF32
 *    when conv_precision allows) the implicit-GEMM tensor-core kernel (cuda_conv_igemm.c: no
 *    patch matrix, bias + activation in its epilogue); else (and for 1x1
 *    stride-1 ones cuBLASLt runs on the input as it is) im2col into a
 *    workspace (chunks of images up to 1 GiB), one batched GEMM per group
 *    with the weight broadcast over the images (cuda_ext_mm_launch), then
 *    bias + activation in place. A channels-last output (the lowering's
 *    ir_lower_options.conv_nhwc, PTC_CUDA_CONV_NHWC) by the implicit GEMM's
 *    channels-last epilogue, else through a contiguous workspace and a
 *    transposing copy.
 *  - Pooling: a support kernel (cuda_support.cuh); a max pool from and to
 *    channels-last tensors by the convolution module's vector kernel.
 * A layout neither path takes comes back with *done false and cuda_ext.c
 * runs the node on the host.
 */
#include "cuda_conv_igemm.h"
#include "cuda_conv_tma.h"
#include "cuda_conv_wg.h"
#include "cuda_ext_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- convolution on the device: im2col + GEMM ------------------------------------------ */

/* Spatial attribute `name` of node n as (h, w) (runtime_conv_spatial_attr). */
/* PTC_CUDA_POOL_FAST=0 turns the pooling kernel's fast paths off (the
 * general per-output loop for every pooling): tests compare the two. Read
 * per call. */
static bool pool_fast(void) {
  const char* v = getenv("PTC_CUDA_POOL_FAST");
  return !(v && *v == '0');
}

/* PTC_CUDA_POOL_VEC=0: 3x3 stride-2 max pools on the scalar 32-bit path
 * (mode 8) instead of its vector form (mode 9). */
static bool pool_vec(void) {
  const char* v = getenv("PTC_CUDA_POOL_VEC");
  return !(v && *v == '0');
}

static ptc_status spatial_attr(const cuda_ext_call* c, const gnode* n, const char* name,
                               int32_t nsp, int64_t dflt, int64_t* out) {
  return runtime_conv_spatial_attr(n, name, c->syms, c->n_syms, nsp, dflt, out);
}


#define CONV_COL_BYTES ((int64_t)1 << 30) /* im2col workspace per chunk of images */

static pthread_once_t wide_once = PTHREAD_ONCE_INIT;
static int64_t wide_below = 256;

static void read_wide(void) {
  const char* v = getenv("PTC_CUDA_CONV_WIDE");
  if (v && *v) wide_below = strtoll(v, NULL, 10);
}

/* Which convolutions take the implicit GEMM (cuda_conv_igemm.c):
 * PTC_CUDA_CONV_IGEMM=0 none (im2col / 1x1 GEMMs as before), 1 (default)
 * all it takes except, when cuBLASLt is present, 1x1 stride-1 ones and
 * ungrouped ones with windows above 1x1 on output planes of at most 196
 * pixels (1x1 windows: in f32 only; the wide im2col GEMM wins there),
 * 2 all it
 * takes, 3 as 1 but also not those whose output tiles (before any K split)
 * are fewer than the SMs when cuBLASLt is present (small late layers:
 * im2col + cuBLASLt's split-K GEMM). Read per call (cheap next to a
 * convolution; benchmarks switch it). */
static int conv_igemm_policy(void) {
  const char* v = getenv("PTC_CUDA_CONV_IGEMM");
  if (!v || !*v) return 1;
  int p = atoi(v);
  return p < 0 ? 0 : p > 3 ? 3 : p;
}

/* Output planes of fewer pixels than this (PTC_CUDA_CONV_WIDE, default
 * 256; 0 = never) run the images of a batch side by side as one wide GEMM:
 * the per-image batched GEMM of a 7x7 plane leaves most of each tile idle. */
static int64_t conv_wide_below(void) {
  pthread_once(&wide_once, read_wide);
  return wide_below;
}

/* PTC_CUDA_CONV_VEC=0 turns off the vectorised kernels of the wide im2col
 * path (ptc_im2colw_*: 16-byte stores, 32-bit index math; ptc_w2n_*: the
 * product back into NCHW with the bias and activation in the same pass)
 * and runs the general im2col, a copy and the epilogue pass instead. Read
 * per call (tests and benchmarks switch it). */
static bool conv_vec(void) {
  const char* v = getenv("PTC_CUDA_CONV_VEC");
  return !(v && *v == '0');
}

/* The convolution d (channels-last) on the TMA kernel when it takes it:
 * one group, dilation 1, input and output dense channels-last, weights
 * contiguous [OC][C][KH][KW], a bias of unit stride and factor 1, no
 * activation or ReLU. *ok false (nothing run) otherwise; errors from the
 * run. The prepared weights are kept in d->wcache when the weights are a
 * plan constant (the first run prepares them), else they live in a block
 * of the caching allocator for the call (stream-ordered: freed after the
 * launch). */
static ptc_status conv_tma_try(const cuda_ext_call* c, const cuda_conv_desc* d, cu_deviceptr px,
                               cu_deviceptr pw, const runtime_tensor* bias, cu_deviceptr pc,
                               bool* ok) {
  *ok = false;
  int64_t C = d->c, H = d->h, W = d->w, KK = d->kh * d->kw;
  if (d->groups != 1 || d->sh > INT32_MAX || d->sw > INT32_MAX || d->dh != 1 || d->dw != 1 || !d->out_nhwc ||
      d->xs[1] != 1 || d->xs[3] != C || d->xs[2] != W * C || (d->n > 1 && d->xs[0] != H * W * C) ||
      d->ws[3] != 1 || d->ws[2] != d->kw || d->ws[1] != KK || d->ws[0] != C * KK ||
      (d->act != IR_ACT_NONE && d->act != IR_ACT_RELU) || (bias && (d->bias_st != 1 || !(d->beta == 1.0))))
    return PTC_OK;
  if (d->n > INT32_MAX || C > INT32_MAX || H > INT32_MAX || W > INT32_MAX || d->oc > INT32_MAX ||
      d->kh > INT32_MAX || d->kw > INT32_MAX || d->ph > INT32_MAX || d->pw > INT32_MAX)
    return PTC_OK;
  cuda_conv_tma_desc t = {(int)d->n,  (int)H,      (int)W,      (int)C,  (int)d->oc,
                          (int)d->kh, (int)d->kw, (int)d->ph, (int)d->pw, d->act == IR_ACT_RELU,
                          (int)d->sh, (int)d->sw, d->dtype == PTC_BF16 ? 1 : d->dtype == PTC_F16 ? 2 : 0};
  const cuda_device* dev = c->plan->dev;
  if (!cuda_conv_tma_enabled(dev) || cuda_conv_tma_refusal(dev->cc_major, dev->cc_minor, &t) ||
      ((px | pc) & 15))
    return PTC_OK;
  /* the kept prepared weights: layout [taps * C / CH][OC][CH] (-90 marks
   * this kernel's layout apart from the implicit GEMM's) */
  cuda_wcache_key key = {pw, {-90, C, d->oc, KK * 4 + t.dt}};
  cu_deviceptr kept = cuda_wcache_find(d->wcache, d->wcache_slot, &key), scratch = kept;
  if (!kept) PTC_TRY(cuda_alloc(cuda_conv_tma_scratch(&t), c->stream, &scratch));
  ptc_status s = cuda_conv_tma_run(c->plan->ctx, dev, c->stream, &t, px, pw,
                                   bias ? (cu_deviceptr)(uintptr_t)bias->data : 0, pc, scratch, kept != 0);
  if (!kept && (s || !cuda_wcache_offer(d->wcache, d->wcache_slot, &key, c->stream, scratch)))
    cuda_free(scratch);
  *ok = !s;
  return s;
}

/* Device layout of ptc_w2n_args (cuda_support.cuh). */
typedef struct conv_w2n_args {
  int32_t nimg, oc, ohw, act;
  int32_t has_bias, pad_;
  int64_t bias_st;
  float beta, pad2_;
} conv_w2n_args;

/* The vectorised kernels, looked up once in the process-wide support module
 * (it is loaded once and never unloaded while the process runs). */
static pthread_mutex_t vec_lock = PTHREAD_MUTEX_INITIALIZER;
static bool vec_ready;
static cu_function vec_im2col[2]; /* element sizes 2, 4 */
static cu_function vec_w2n[4];    /* f32, -, f16, bf16 (cuda_ext_gemm_index) */

static ptc_status vec_kernels(const cuda_ext_call* c) {
  pthread_mutex_lock(&vec_lock);
  cu_result r = CU_SUCCESS;
  if (!vec_ready) {
    const cu_api* cu = &cuda_libs_get()->cu;
    cu_module m = c->plan->sup->module;
    r = cu->ModuleGetFunction(&vec_im2col[0], m, "ptc_im2colw_e2");
    if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&vec_im2col[1], m, "ptc_im2colw_e4");
    if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&vec_w2n[0], m, "ptc_w2n_f32");
    if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&vec_w2n[2], m, "ptc_w2n_f16");
    if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&vec_w2n[3], m, "ptc_w2n_bf16");
    vec_ready = r == CU_SUCCESS;
  }
  pthread_mutex_unlock(&vec_lock);
  if (r != CU_SUCCESS) return cuda_error(r, "finding the vectorised im2col kernels");
  return PTC_OK;
}

static unsigned vec_grid(const cuda_ext_call* c, int64_t items) {
  int64_t b = (items + 255) / 256, cap = (int64_t)c->plan->dev->sm_count * 32;
  if (b > cap) b = cap;
  return (unsigned)(b < 1 ? 1 : b);
}

static ptc_status launch_im2col(const cuda_ext_call* c, int gi, cu_deviceptr xi, cu_deviceptr col,
                                cuda_im2col_args* a) {
  void* params[] = {&xi, &col, a};
  int64_t per = a->c * a->oh * a->ow;
  int64_t bx = (per + 255) / 256, cap = (int64_t)c->plan->dev->sm_count * 32;
  if (bx > cap) bx = cap;
  int64_t by = a->nimg < 65535 ? a->nimg : 65535;
  CUDA_TRY(cuda_libs_get()->cu.LaunchKernel(c->plan->sup->im2col[gi == 0 ? 2 : gi == 1 ? 3 : 1],
                                            (unsigned)bx, (unsigned)by, 1, 256, 1, 1, 0, c->stream,
                                            params, NULL),
           "launching im2col");
  return PTC_OK;
}

/* The convolution: the implicit GEMM when it takes it (conv_igemm_policy),
 * else as GEMMs, one per group (W[oc][ck] @ B), B being:
 *  - for 1x1 kernels of stride 1 without padding, the input itself: x[n]
 *    seen as [C, H*W] (any channel stride; the pixels one uniform stride),
 *    one GEMM batched over the images, no workspace;
 *  - else an im2col matrix in a workspace (chunks of images up to 1 GiB):
 *    one [CK, OHW] matrix per image and a batched GEMM, or, for small
 *    output planes (conv_wide_below), the images side by side in one
 *    [CK, N*OHW] matrix, one wide GEMM into a [OC, N, OHW] buffer and a
 *    copy into the NCHW output (conv_vec: the im2col with 16-byte stores,
 *    the copy applying the bias and activation, no epilogue pass).
 * f32 products use TF32 when the plan allows it (conv_precision). Without
 * a bias the activation runs in the GEMM (cuBLASLt's relu epilogue, or
 * mm_launch's pass); a bias (per output channel: along the GEMM's rows,
 * which cuBLASLt's bias epilogue does not take in this layout) and its
 * activation run as one pass at the end. *done false when the layout is
 * not one it takes (the caller runs it on the host). */
static ptc_status conv_device(const cuda_ext_call* c0, bool nhwc, bool* done) {
  *done = false;
  const ir_extern* e = &c0->node->ext;
  const ptc_graph* gr = c0->plan->p->graph;
  if (e->n_in < 2 || e->n_out != 1 || e->graph_node >= gr->nodes.len || !(e->alpha == 1.0))
    return PTC_OK;
  cuda_ext_call cc = *c0; /* f32: TF32 as conv_precision allows */
  cc.tf32 = c0->plan->conv_tf32;
  const cuda_ext_call* c = &cc;
  const gnode* n = graph_node(gr, e->graph_node);
  const runtime_tensor* x = &c->in[0];
  const runtime_tensor* w = &c->in[1];
  const runtime_tensor* bias = e->n_in > 2 && e->in[2] >= 0 ? &c->in[2] : NULL;
  const runtime_tensor* out = &c->out[0];
  int gi = cuda_ext_gemm_index(out->dtype);
  int64_t es = (int64_t)ptc_dtype_size(out->dtype);
  int32_t nsp = w->rank - 2;
  if (gi < 0 || x->dtype != out->dtype || w->dtype != out->dtype ||
      (bias && (bias->dtype != out->dtype || bias->rank != 1)) || nsp < 1 || nsp > 2 ||
      (x->rank != nsp + 1 && x->rank != nsp + 2) || out->rank != x->rank)
    return PTC_OK;
  bool batched = x->rank == nsp + 2;
  int64_t xs[4], xst[4], ws[4], wst[4], os[4], ost[4];
  runtime_conv_as_4d(x, nsp, batched, xs, xst);
  runtime_conv_as_4d(w, nsp, true, ws, wst);
  runtime_conv_as_4d(out, nsp, batched, os, ost);
  int64_t st[2], dil[2], pad[2];
  PTC_TRY(spatial_attr(c, n, "stride", nsp, 1, st));
  PTC_TRY(spatial_attr(c, n, "dilation", nsp, 1, dil));
  PTC_TRY(spatial_attr(c, n, "padding", nsp, 0, pad));
  const gattr* ps = gattrs_find(&n->attrs, "padding_str");
  if (ps && ps->s && strcmp(ps->s, "same") == 0) {
    pad[0] = dil[0] * (ws[2] - 1) / 2;
    pad[1] = dil[1] * (ws[3] - 1) / 2;
  }
  const gattr* gp = gattrs_find(&n->attrs, "groups");
  int64_t groups = gp ? gp->i : 1;
  int64_t N = xs[0], C = xs[1], OC = ws[0], KH = ws[2], KW = ws[3], OH = os[2], OW = os[3];
  int64_t OHW = OH * OW;
  if (groups < 1 || C % groups || OC % groups || ws[1] * groups != C || os[1] != OC) return PTC_OK;
  int64_t Cg = C / groups, OCg = OC / groups, KK = KH * KW, CK = C * KK, CKg = Cg * KK;
  /* the GEMM paths: weight rows [OC][Cg*KH*KW] with unit stride inside a
   * row (the implicit GEMM copies weights of any strides); out NCHW-contiguous */
  bool w_rows = !(OCg > 1 && wst[0] < CKg);
  for (int32_t d = 3, expect = 1; d >= 1; expect *= (int32_t)ws[d], d--)
    if (ws[d] != 1 && wst[d] != expect) w_rows = false;
  if (!nhwc && !cuda_ext_view_contiguous(out)) return PTC_OK;
  if (N == 0 || OC == 0 || OHW == 0) {
    *done = true;
    return PTC_OK;
  }
  /* 1x1, stride 1, no padding: the pixels of a channel one uniform stride */
  bool direct = KH == 1 && KW == 1 && st[0] == 1 && st[1] == 1 && pad[0] == 0 && pad[1] == 0 &&
                OH == xs[2] && OW == xs[3];
  int64_t sp = 1;
  if (direct) {
    if (OW == 1)
      sp = OH == 1 ? 1 : xst[2];
    else if (OH == 1 || xst[2] == OW * xst[3])
      sp = xst[3];
    else
      direct = false;
  }
  int32_t act = e->activation;
  cu_deviceptr px = (cu_deviceptr)(uintptr_t)x->data, pw = (cu_deviceptr)(uintptr_t)w->data;
  cu_deviceptr pc = (cu_deviceptr)(uintptr_t)out->data;
  /* tensor cores (f16/bf16, f32 as TF32 when conv_precision allows, sm_80+):
   * the implicit GEMM, except (policy "auto") 1x1 stride-1 convolutions
   * cuBLASLt runs on the input as it is */
  int policy = conv_igemm_policy();
  bool have_lt = cuda_libs_get()->have_lt;
  if (nhwc && policy == 0) return PTC_OK; /* the caller's contiguous copy */
  if (nhwc || policy == 2 || (policy != 0 && !(direct && have_lt && w_rows))) {
    cuda_conv_desc d;
    memset(&d, 0, sizeof d);
    d.dtype = out->dtype;
    d.act = act;
    d.n = N, d.c = C, d.h = xs[2], d.w = xs[3], d.oc = OC, d.oh = OH, d.ow = OW;
    d.kh = KH, d.kw = KW, d.sh = st[0], d.sw = st[1], d.ph = pad[0], d.pw = pad[1];
    d.dh = dil[0], d.dw = dil[1], d.groups = groups;
    memcpy(d.xs, xst, sizeof d.xs);
    memcpy(d.ws, wst, sizeof d.ws);
    d.bias_st = bias ? bias->strides[0] : 0;
    d.beta = e->beta;
    d.out_nhwc = nhwc;
    /* weights that are a plan constant (immutable device storage): the
     * kernels' copies of them are kept across runs */
    if (e->n_in > 1 && e->in[1] >= 0 && ir_buf(c->plan->p, e->in[1])->kind == IR_BUF_CONSTANT) {
      d.wcache = c->plan->wcache;
      d.wcache_slot = (int64_t)(c->node - ir_node_at(c->plan->p, 0));
    }
    bool ok = false, small = false;
    /* Hopper: the wgmma kernels (cuda_conv_wg.c) take what they can before
     * the implicit GEMM and the im2col GEMMs (cuda_conv_wg_enabled 1), or
     * only what the policy below gives the implicit GEMM (2) */
    int wgp = policy != 0 && !nhwc ? cuda_conv_wg_enabled() : 0;
    if (wgp == 1) {
      PTC_TRY(cuda_conv_wg(c->plan->ctx, c->plan->dev, c->stream, &d, c->tf32, px, pw,
                           bias ? (cu_deviceptr)(uintptr_t)bias->data : 0, pc, &ok));
      if (ok) {
        *done = true;
        return PTC_OK;
      }
    }
    /* default policy: convolutions of one group with windows larger than
     * 1x1 on output planes of at most 196 pixels (1x1 ones: f32 only) run
     * faster as one wide im2col GEMM through cuBLASLt (H100, resnet18 b32,
     * test_cuda_conv --bench, ms im2col vs implicit GEMM: bf16 14x14 s1
     * 0.064 vs 0.127, 28->14 s2 0.046 vs 0.049, 14->7 s2 0.030 vs 0.094,
     * 7x7 s1 0.042 vs 0.116; TF32 0.087 vs 0.164, 0.058 vs 0.133, 0.044 vs
     * 0.117, 0.068 vs 0.151, 1x1 14->7 s2 0.021 vs 0.026; 28x28 planes and
     * larger stay on the implicit GEMM: bf16 3x3 s1 0.093 vs 0.066; after
     * the kernel's deferred input conversion, same bench: TF32 1x1 28->14
     * s2 0.0186 vs 0.0219, 14->7 s2 0.0163 vs 0.0235, 56->28 s2 0.0243 vs
     * 0.0216; bf16 1x1 28->14 s2 0.0180 vs 0.0155: igemm) */
    int64_t ohw = OH * OW;
    if (!nhwc && policy == 1 && have_lt && groups == 1 && ohw < conv_wide_below() &&
        (KK > 1 || out->dtype == PTC_F32) && ohw <= 196)
      small = true;
    if (!nhwc && policy == 3 && have_lt) {
      cuda_conv_shape sh;
      cuda_conv_igemm_shape(&d, c->plan->dev->sm_count, c->plan->dev->max_smem_optin, &sh);
      small = sh.gx * sh.gy * groups < c->plan->dev->sm_count;
    }
    if (nhwc && !ok && (out->dtype != PTC_F32 || c->tf32))
      PTC_TRY(conv_tma_try(c, &d, px, pw, bias, pc, &ok));
    if (!small && !ok && wgp == 2)
      PTC_TRY(cuda_conv_wg(c->plan->ctx, c->plan->dev, c->stream, &d, c->tf32, px, pw,
                           bias ? (cu_deviceptr)(uintptr_t)bias->data : 0, pc, &ok));
    if (!small && !ok)
      PTC_TRY(cuda_conv_igemm(c->plan->ctx, c->plan->dev, c->stream, &d, c->tf32, px, pw,
                              bias ? (cu_deviceptr)(uintptr_t)bias->data : 0, pc, &ok));
    if (ok || nhwc) {
      *done = ok;
      return PTC_OK;
    }
  }
  if (!w_rows || (!direct && C * OHW > INT32_MAX)) return PTC_OK; /* im2col's 32-bit index math */
  bool wide = !direct && N > 1 && OHW < conv_wide_below() && OC * OHW <= INT32_MAX;
  int64_t col_img = CK * OHW * es, per_img = col_img + (wide ? OC * OHW * es : 0);
  int64_t chunk = CONV_COL_BYTES / per_img;
  if (chunk < 1) chunk = 1;
  if (chunk > N) chunk = N;
  /* the vectorised wide path (conv_vec): the product back into NCHW with
   * the bias and activation in one pass (ptc_w2n_*), when every chunk's
   * output is whole 16-byte vectors; the wide im2col kernel per chunk below */
  int64_t vw = es == 2 || es == 4 ? 16 / es : 0, last = N % chunk ? N % chunk : chunk;
  bool fuse = wide && vw && conv_vec() && (chunk * OC * OHW) % vw == 0 &&
              (last * OC * OHW) % vw == 0 && chunk * OC * OHW <= INT32_MAX && pc % 16 == 0;
  if (fuse) PTC_TRY(vec_kernels(c));
  bool act_in_gemm = !fuse && !bias && act != IR_ACT_NONE && (act == IR_ACT_RELU || groups == 1);
  int32_t gemm_act = act_in_gemm ? act : IR_ACT_NONE;
  ptc_status s = PTC_OK;
  cu_deviceptr wsp = 0;
  if (direct) {
    for (int64_t gidx = 0; !s && gidx < groups; gidx++) {
      /* out[img][g*OCg + r][p] = sum_q W[g*OCg + r][q] * x[img][g*Cg + q][p] */
      cuda_mm_args g;
      memset(&g, 0, sizeof g);
      g.m = OCg, g.n = OHW, g.k = Cg;
      g.a_sm = wst[0], g.a_sk = 1;
      g.b_sk = xst[1], g.b_sn = sp;
      g.c_sm = OHW, g.c_sn = 1;
      g.nb = 1;
      g.batch[0] = N;
      g.a_bs[0] = 0;
      g.b_bs[0] = xst[0];
      g.c_bs[0] = OC * OHW;
      g.alpha = 1.0;
      g.act = gemm_act;
      cu_deviceptr pa = pw + (cu_deviceptr)(gidx * OCg * wst[0] * es);
      cu_deviceptr pb = px + (cu_deviceptr)(gidx * Cg * xst[1] * es);
      cu_deviceptr pcg = pc + (cu_deviceptr)(gidx * OCg * OHW * es);
      s = cuda_ext_mm_launch(c, &g, N, out->dtype, pa, pb, 0, pcg, groups == 1);
    }
  } else {
    PTC_TRY(cuda_alloc((size_t)(chunk * per_img), c->stream, &wsp));
    cu_deviceptr col = wsp, tmp = wsp + (cu_deviceptr)(chunk * col_img);
    for (int64_t n0 = 0; !s && n0 < N; n0 += chunk) {
      int64_t nimg = N - n0 < chunk ? N - n0 : chunk;
      bool wd = wide && (nimg > 1 || fuse);
      int64_t ldc = wd ? nimg * OHW : OHW; /* columns of one col / product row */
      cuda_im2col_args a;
      memset(&a, 0, sizeof a);
      a.nimg = nimg;
      a.c = C, a.h = xs[2], a.w = xs[3], a.kh = KH, a.kw = KW, a.oh = OH, a.ow = OW;
      a.sh = st[0], a.sw = st[1], a.ph = pad[0], a.pw = pad[1], a.dh = dil[0], a.dw = dil[1];
      a.xs_n = xst[0], a.xs_c = xst[1], a.xs_h = xst[2], a.xs_w = xst[3];
      a.col_img = wd ? OHW : CK * OHW;
      a.col_row = ldc;
      cu_deviceptr xc = px + (cu_deviceptr)(n0 * xst[0] * es);
      /* the wide im2col kernel: 16-byte stores, 32-bit index math */
      bool vcol = fuse && ldc % vw == 0 && CK * ldc <= INT32_MAX && col % 16 == 0 && xst[0] >= 0 &&
                  xst[1] >= 0 && xst[2] >= 0 && xst[3] >= 0 && xs[2] < INT32_MAX / 4 &&
                  xs[3] < INT32_MAX / 4 && OH * st[0] < INT32_MAX / 4 && OW * st[1] < INT32_MAX / 4 &&
                  KH * dil[0] + pad[0] < INT32_MAX / 4 && KW * dil[1] + pad[1] < INT32_MAX / 4 &&
                  (nimg - 1) * xst[0] + (C - 1) * xst[1] + (xs[2] - 1) * xst[2] +
                          (xs[3] - 1) * xst[3] <= INT32_MAX;
      /* the wide im2col: the convolution module's kernel (a block row per
       * channel and window row) when it takes it, else the support module's */
      bool i2c = false;
      if (vcol) {
        cuda_conv_i2c ia = {nimg, C, xs[2], xs[3], KH, KW, OH, OW, st[0], st[1],
                            pad[0], pad[1], dil[0], dil[1], {xst[0], xst[1], xst[2], xst[3]}};
        s = cuda_conv_igemm_im2col(c->plan->ctx, c->plan->dev, c->stream, out->dtype, &ia, xc, col,
                                   &i2c);
      }
      if (s || i2c) {
        /* launched (or failed) */
      } else if (vcol) {
        void* params[] = {&xc, &col, &a};
        cu_result r = cuda_libs_get()->cu.LaunchKernel(vec_im2col[es == 2 ? 0 : 1],
                                                       vec_grid(c, CK * ldc / vw), 1, 1, 256, 1, 1,
                                                       0, c->stream, params, NULL);
        if (r != CU_SUCCESS) s = cuda_error(r, "launching the wide im2col");
      } else {
        s = launch_im2col(c, gi, xc, col, &a);
      }
      for (int64_t gidx = 0; !s && gidx < groups; gidx++) {
        cuda_mm_args g;
        memset(&g, 0, sizeof g);
        g.m = OCg, g.n = ldc, g.k = CKg;
        g.a_sm = wst[0], g.a_sk = 1;
        g.b_sk = ldc, g.b_sn = 1;
        g.c_sm = ldc, g.c_sn = 1;
        g.alpha = 1.0;
        g.act = gemm_act;
        cu_deviceptr pa = pw + (cu_deviceptr)(gidx * OCg * wst[0] * es);
        cu_deviceptr pb = col + (cu_deviceptr)(gidx * CKg * ldc * es);
        if (wd) {
          /* tmp[g*OCg + r][img*OHW + p] = sum_q W[g*OCg + r][q] * col[g*CKg + q][img*OHW + p] */
          s = cuda_ext_mm_launch(c, &g, 1, out->dtype, pa, pb, 0,
                                 tmp + (cu_deviceptr)(gidx * OCg * ldc * es), true);
        } else {
          /* out[img][g*OCg + r][p] = sum_q W[g*OCg + r][q] * col[img][g*CKg + q][p] */
          g.nb = 1;
          g.batch[0] = nimg;
          g.a_bs[0] = 0;
          g.b_bs[0] = CK * OHW;
          g.c_bs[0] = OC * OHW;
          cu_deviceptr pcg = pc + (cu_deviceptr)((n0 * OC + gidx * OCg) * OHW * es);
          s = cuda_ext_mm_launch(c, &g, nimg, out->dtype, pa, pb, 0, pcg, groups == 1);
        }
      }
      if (!s && wd && fuse) {
        /* out[n0 + img][oc][p] = act(tmp[oc][img*OHW + p] + beta * bias[oc]) */
        conv_w2n_args t;
        memset(&t, 0, sizeof t);
        t.nimg = (int32_t)nimg, t.oc = (int32_t)OC, t.ohw = (int32_t)OHW, t.act = act;
        t.has_bias = bias != NULL;
        t.bias_st = bias ? bias->strides[0] : 0;
        t.beta = (float)e->beta;
        cu_deviceptr po = pc + (cu_deviceptr)(n0 * OC * OHW * es);
        cu_deviceptr pbias = bias ? (cu_deviceptr)(uintptr_t)bias->data : 0;
        void* params[] = {&tmp, &po, &pbias, &t};
        cu_result r = cuda_libs_get()->cu.LaunchKernel(vec_w2n[gi], vec_grid(c, nimg * OC * OHW / vw),
                                                       1, 1, 256, 1, 1, 0, c->stream, params, NULL);
        if (r != CU_SUCCESS) s = cuda_error(r, "launching the wide product's copy into NCHW");
      } else if (!s && wd) {
        /* tmp [OC][nimg][OHW] -> out[n0 + img][OC][OHW]: the im2col kernel as a
         * copy (a 1x1 window over OC planes of 1 x OHW pixels) */
        cuda_im2col_args t;
        memset(&t, 0, sizeof t);
        t.nimg = nimg, t.c = OC, t.h = 1, t.w = OHW, t.kh = 1, t.kw = 1, t.oh = 1, t.ow = OHW;
        t.sh = 1, t.sw = 1, t.dh = 1, t.dw = 1;
        t.xs_n = OHW, t.xs_c = ldc, t.xs_h = 0, t.xs_w = 1;
        t.col_img = OC * OHW, t.col_row = OHW;
        s = launch_im2col(c, gi, tmp, pc + (cu_deviceptr)(n0 * OC * OHW * es), &t);
      }
    }
  }
  cuda_free(wsp);
  if (!s && !act_in_gemm && !fuse)
    s = cuda_ext_run_epilogue(c, gi, pc, N * OC * OHW,
                              bias ? (cu_deviceptr)(uintptr_t)bias->data : 0, OHW, OC,
                              bias ? bias->strides[0] : 0, e->beta, act);
  if (!s) *done = true;
  return s;
}

/* out [N, C, H, W] laid out channels-last, [N][H][W][C] densely (dims of
 * size 1 any stride): what the lowering gives convolutions when it keeps
 * activations channels-last (ir_lower_options.conv_nhwc). */
static bool nhwc_dense(const runtime_tensor* t) {
  if (t->rank != 4) return false;
  const int64_t* sh = t->shape;
  int64_t want[4] = {sh[1] * sh[2] * sh[3], 1, sh[3] * sh[1], sh[1]};
  for (int d = 0; d < 4; d++)
    if (sh[d] != 1 && t->strides[d] != want[d]) return false;
  return true;
}

/* The convolution; a channels-last output (nhwc_dense, not also
 * contiguous) by the implicit GEMM's channels-last epilogue, else into a
 * contiguous workspace by the other paths and copied over (the im2col
 * kernel as a transposing copy: [N][OC][OHW] -> [N][OHW][OC]). */
ptc_status cuda_ext_conv_device(const cuda_ext_call* c0, bool* done) {
  *done = false;
  const runtime_tensor* out = &c0->out[0];
  if (c0->node->ext.n_out != 1 || cuda_ext_view_contiguous(out) || !nhwc_dense(out))
    return conv_device(c0, false, done);
  PTC_TRY(conv_device(c0, true, done));
  if (*done) return PTC_OK;
  int gi = cuda_ext_gemm_index(out->dtype);
  int64_t es = (int64_t)ptc_dtype_size(out->dtype);
  int64_t N = out->shape[0], OC = out->shape[1], OHW = out->shape[2] * out->shape[3];
  if (gi < 0 || N * OC * OHW == 0) return PTC_OK;
  runtime_tensor t = *out;
  t.strides[3] = 1, t.strides[2] = out->shape[3], t.strides[1] = OHW, t.strides[0] = OC * OHW;
  cu_deviceptr tmp = 0;
  PTC_TRY(cuda_alloc((size_t)(N * OC * OHW * es), c0->stream, &tmp));
  t.data = (void*)(uintptr_t)tmp;
  cuda_ext_call cc = *c0;
  cc.out = &t;
  ptc_status s = conv_device(&cc, false, done);
  if (!s && *done) {
    cuda_im2col_args a;
    memset(&a, 0, sizeof a);
    a.nimg = N, a.c = OHW, a.h = 1, a.w = OC, a.kh = 1, a.kw = 1, a.oh = 1, a.ow = OC;
    a.sh = 1, a.sw = 1, a.dh = 1, a.dw = 1;
    a.xs_n = OC * OHW, a.xs_c = 1, a.xs_h = 0, a.xs_w = OHW;
    a.col_img = OHW * OC, a.col_row = OC;
    s = launch_im2col(c0, gi, tmp, (cu_deviceptr)(uintptr_t)out->data, &a);
  }
  cuda_free(tmp);
  return s;
}

/* ---- pooling on the device ------------------------------------------------------------- */

/* kernel_size / stride: 1 or 2 values; stride defaults to the kernel. */
static ptc_status pair_attr(const cuda_ext_call* c, const gnode* n, const char* name,
                            const int64_t* dflt, int64_t* out) {
  out[0] = dflt[0], out[1] = dflt[1];
  const gattr* at = gattrs_find(&n->attrs, name);
  if (!at || at->count == 0 || !at->exprs) return PTC_OK;
  for (size_t i = 0; i < 2; i++)
    PTC_TRY(sym_eval(at->exprs[at->count == 1 ? 0 : i], c->syms, c->n_syms, &out[i]));
  return PTC_OK;
}

/* A pooling node's window as w[8] = kernel (h, w), stride (h, w; default
 * the kernel), padding (h, w; default 0), dilation (h, w; default 1). */
static ptc_status pool_window(const cuda_ext_call* c, const gnode* n, int64_t w[8]) {
  int64_t one[2] = {1, 1};
  PTC_TRY(pair_attr(c, n, "kernel_size", one, w));
  PTC_TRY(pair_attr(c, n, "stride", w, w + 2));
  PTC_TRY(spatial_attr(c, n, "padding", 2, 0, w + 4));
  return spatial_attr(c, n, "dilation", 2, 1, w + 6);
}

/* A max pool of a channels-last x into a channels-last out (the lowering
 * gives max_pool2d that layout after a channels-last convolution): the
 * convolution module's vector kernel. */
static ptc_status pool_nhwc(const cuda_ext_call* c, const gnode* n, bool* done) {
  const runtime_tensor* x = &c->in[0];
  const runtime_tensor* out = &c->out[0];
  cuda_conv_mp a;
  memset(&a, 0, sizeof a);
  a.n = x->shape[0], a.c = x->shape[1], a.h = x->shape[2], a.w = x->shape[3];
  a.oh = out->shape[2], a.ow = out->shape[3];
  if (out->shape[0] != a.n || out->shape[1] != a.c) return PTC_OK;
  int64_t w[8];
  PTC_TRY(pool_window(c, n, w));
  a.kh = w[0], a.kw = w[1], a.sh = w[2], a.sw = w[3], a.ph = w[4], a.pw = w[5], a.dh = w[6], a.dw = w[7];
  return cuda_conv_igemm_maxpool(c->plan->ctx, c->plan->dev, c->stream, out->dtype, &a,
                                 (cu_deviceptr)(uintptr_t)x->data,
                                 (cu_deviceptr)(uintptr_t)out->data, done);
}

ptc_status cuda_ext_pool_device(const cuda_ext_call* c, int mode, bool* done) {
  *done = false;
  const ir_extern* e = &c->node->ext;
  const gnode* n = graph_node(c->plan->p->graph, e->graph_node);
  const runtime_tensor* x = &c->in[0];
  const runtime_tensor* out = &c->out[0];
  int gi = cuda_ext_gemm_index(out->dtype);
  if (e->n_in < 1 || gi < 0 || x->dtype != out->dtype || (x->rank != 3 && x->rank != 4) ||
      out->rank != x->rank)
    return PTC_OK;
  if (mode == 0 && x->rank == 4 && pool_fast() && nhwc_dense(x) && nhwc_dense(out) &&
      !cuda_ext_view_contiguous(out)) {
    PTC_TRY(pool_nhwc(c, n, done));
    if (*done) return PTC_OK;
  }
  if (!cuda_ext_view_contiguous(out)) return PTC_OK;
  int64_t xs[4], xst[4], os[4], ost[4];
  runtime_conv_as_4d(x, 2, x->rank == 4, xs, xst);
  runtime_conv_as_4d(out, 2, out->rank == 4, os, ost);
  cuda_pool_args a;
  memset(&a, 0, sizeof a);
  a.total = os[0] * os[1] * os[2] * os[3];
  if (a.total == 0) {
    *done = true;
    return PTC_OK;
  }
  a.c = xs[1], a.h = xs[2], a.w = xs[3], a.oh = os[2], a.ow = os[3];
  a.xs_n = xst[0], a.xs_c = xst[1], a.xs_h = xst[2], a.xs_w = xst[3];
  a.mode = mode;
  if (mode != 2) {
    int64_t w[8];
    PTC_TRY(pool_window(c, n, w));
    a.kh = w[0], a.kw = w[1], a.sh = w[2], a.sw = w[3], a.ph = w[4], a.pw = w[5], a.dh = w[6], a.dw = w[7];
    const gattr* cip = gattrs_find(&n->attrs, "count_include_pad");
    a.include_pad = cip ? cip->i != 0 : 1;
    const gattr* dv = gattrs_find(&n->attrs, "divisor_override");
    if (dv) {
      a.divisor = dv->i;
      if (a.divisor <= 0) return PTC_OK; /* the host path reports it */
    }
  }
  /* the fast paths of the kernel: a whole-plane average (mode 4, a warp
   * per plane), a max pool with 32-bit index math (mode 8) */
  int64_t per_block = 256;
  bool whole = mode == 2 ? a.oh == 1 && a.ow == 1
                         : mode == 1 && a.kh == a.h && a.kw == a.w && a.ph == 0 && a.pw == 0 &&
                               a.oh == 1 && a.ow == 1;
  bool nonneg = a.xs_n >= 0 && a.xs_c >= 0 && a.xs_h >= 0 && a.xs_w >= 0;
  if (whole && a.h * a.w > 0 && nonneg && pool_fast()) {
    a.divisor = mode == 1 && a.divisor > 0 ? a.divisor : a.h * a.w;
    a.mode = 4;
    per_block = 8;
  } else if (mode == 0 && nonneg && pool_fast() && a.total <= INT32_MAX &&
             (xs[0] - 1) * a.xs_n + (a.c - 1) * a.xs_c + (a.h - 1) * a.xs_h + (a.w - 1) * a.xs_w <=
                 INT32_MAX &&
             a.oh * a.sh + a.kh * a.dh + a.ph < INT32_MAX / 2 &&
             a.ow * a.sw + a.kw * a.dw + a.pw < INT32_MAX / 2) {
    a.mode = 8;
    /* its vector form: 3x3 windows, stride 2 and padding 1 along x, unit x
     * stride, 16-byte aligned planes and rows (mode 9; a.total counts runs
     * of 4 outputs) */
    int64_t es = (int64_t)ptc_dtype_size(x->dtype);
    bool al16 = ((uintptr_t)x->data % 16) == 0 && (a.xs_h * es) % 16 == 0 &&
                (a.c == 1 || (a.xs_c * es) % 16 == 0) && (xs[0] == 1 || (a.xs_n * es) % 16 == 0);
    if (pool_vec() && es >= 2 && a.kh == 3 && a.kw == 3 && a.sw == 2 && a.pw == 1 && a.dh == 1 &&
        a.dw == 1 && a.xs_w == 1 && al16) {
      a.mode = 9;
      a.total = os[0] * os[1] * os[2] * ((a.ow + 3) / 4);
    }
  }
  cu_deviceptr px = (cu_deviceptr)(uintptr_t)x->data, po = (cu_deviceptr)(uintptr_t)out->data;
  void* params[] = {&px, &po, &a};
  int64_t blocks = (a.total + per_block - 1) / per_block, cap = (int64_t)c->plan->dev->sm_count * 64;
  if (blocks > cap) blocks = cap;
  CUDA_TRY(cuda_libs_get()->cu.LaunchKernel(c->plan->sup->pool[gi], (unsigned)blocks, 1, 1, 256, 1, 1,
                                            0, c->stream, params, NULL),
           "launching a pooling kernel");
  *done = true;
  return PTC_OK;
}
