/* cuda_attn_f32.c - the host side of the float32 attention kernels
 * (cuda_attn_f32.cuh): the process-wide modules (one per instantiation a
 * call needs: head dim, mask kind, cp.async tiles; built through the kernel
 * cache on first use, dynamic shared memory opted in)
 * and the extern step: the call geometry of cuda_attn_geometry (shared
 * with the f16/bf16 kernels) plus the float32 load paths in
 * ptc_attn32_args, one launch. cuda_attn_run dispatches float32 here. */
#include "cuda_attn_f32.h"
#include "cuda_aot.h"
#include "cuda_attn.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char ptc_cuda_attn_f32_text[];

#define A32_BM 64
#define A32_FUNC_MAX_DYNAMIC_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */

/* Device layout of ptc_attn32_args (cuda_attn_f32.cuh): the shared
 * geometry, then the load paths. */
typedef struct attn32_args {
  cuda_attn_geom g;
  int32_t vec, ovec;
} attn32_args;
_Static_assert(sizeof(attn32_args) == 408, "attn32_args must match ptc_attn32_args");

/* The shape of a kernel instantiation: key tile rows, the minimum blocks
 * per SM its registers are bounded for, and the loop form (ROLL of
 * cuda_attn_f32.cuh: 0 straight-line products with q in registers, n >= 1
 * loops of n unrolled trips with q and P in shared-memory slots). */
typedef struct a32_cfg {
  int bn, minb, roll;
} a32_cfg;

static const int a32_dims[3] = {32, 64, 128};

/* Dynamic shared memory: two buffers of k and v tiles, rows of E + 4
 * floats; with roll, the q and P slots (a float4 per lane and 8-dim /
 * 8-key step, 4 warps). */
static int a32_smem(a32_cfg c, int e) {
  return 2 * 2 * c.bn * (e + 4) * 4 + (c.roll ? 4 * 32 * (e / 8 + c.bn / 8) * 16 : 0);
}

/* The shape for head dim index hi: the defaults (sm_90 ptxas, no register
 * spills; straight-line: d32 64 keys 3 blocks 161 registers, d64 32 keys 3
 * blocks 168, d128 32 keys 2 blocks 255; rolled: d64 136, d128 206; d64
 * rolled by default: H100 b8 h16 s1024, module build 0.24 s vs 0.61 s,
 * 0.97 ms vs 0.90 per call; d32 / d128 rolled pass the GPU tests but are
 * not timed yet, so they stay straight-line), or
 * PTC_CUDA_ATTN_F32_CFG="bn,minb" for every head dim (bn 16/32/64, minb
 * 1-4) and PTC_CUDA_ATTN_F32_ROLL=n (0-8) for the loop form (tuning knobs
 * read when a module is built). A rolled shape whose shared memory exceeds
 * max_smem (the device's opt-in limit, 0 = unknown) falls back to roll 0. */
static a32_cfg a32_config(int hi, int max_smem) {
  static const a32_cfg def[3] = {{64, 3, 0}, {32, 3, 1}, {32, 2, 0}};
  a32_cfg c = def[hi];
  const char* env = getenv("PTC_CUDA_ATTN_F32_CFG");
  int bn, minb, roll;
  if (env && sscanf(env, "%d,%d", &bn, &minb) == 2 && (bn == 16 || bn == 32 || bn == 64) &&
      minb >= 1 && minb <= 4)
    c.bn = bn, c.minb = minb;
  env = getenv("PTC_CUDA_ATTN_F32_ROLL");
  if (env && sscanf(env, "%d", &roll) == 1 && roll >= 0 && roll <= 8) c.roll = roll;
  if (c.roll && max_smem > 0 && a32_smem(c, a32_dims[hi]) > max_smem) c.roll = 0;
  return c;
}

/* One instantiation: head dim index, and for calls without a mask the load
 * path (pipe: cp.async k/v tiles, args.vec), the mask code left out; calls
 * with a mask (additive or boolean, either load path) share one kernel that
 * reads both from args (mask = pipe = -1: specialised, those spilled
 * registers under the bound of 3 blocks per SM). Each is its own module:
 * the compile of a call's module holds only the code that call can run
 * (NVRTC time grows with every path kept in one kernel). */
typedef struct a32_variant {
  int hi, mask, pipe;
  int roll; /* -1: the shape's (a32_config); else this loop form (compile check) */
} a32_variant;

static a32_variant a32_pick(int hi, int mask, bool vec) {
  return mask ? (a32_variant){hi, -1, -1, -1} : (a32_variant){hi, 0, vec, -1};
}

typedef struct a32_mod {
  cu_module mod;
  cu_function fn;
  a32_cfg cfg; /* the shape it was built with */
} a32_mod;

static pthread_mutex_t a32_lock = PTHREAD_MUTEX_INITIALIZER;
static a32_mod a32_mods[3][3]; /* [hi][no mask: pipe; masked: 2], built on first use */

static void a32_name(a32_variant v, const char* suffix, char* out, size_t cap) {
  snprintf(out, cap, "ptc_attn_f32_d%d%s", a32_dims[v.hi], suffix);
}

/* The prelude, the kernel text and the instantiations of variants v[0..n)
 * (one per module; the compile check puts several in one program, named
 * apart by a suffix). */
static ptc_status a32_source(ptc_strbuf* src, const a32_variant* v, int n, int max_smem) {
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc float32 attention kernel (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_attn_f32_text);
  for (int i = 0; i < n; i++) {
    a32_cfg c = a32_config(v[i].hi, max_smem);
    if (v[i].roll >= 0) c.roll = v[i].roll;
    char name[48], suffix[16] = "";
    if (n > 1) snprintf(suffix, sizeof suffix, "_%d", i);
    a32_name(v[i], suffix, name, sizeof name);
    ptc_sb_printf(src, "PTC_ATTN32_KERNEL(%s, %d, %d, %d, %d, %d, %d)\n", name,
                  a32_dims[v[i].hi], c.bn, c.minb, v[i].mask, v[i].pipe, c.roll);
  }
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

static ptc_status a32_load(ptc_context* ctx, const cuda_device* d, a32_variant v, a32_mod* m) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  PTC_TRY(a32_source(&src, &v, 1, d->max_smem_optin));
  PTC_TRY(cuda_build_module(ctx, d->cc_major * 10 + d->cc_minor, &src, "ptc_attention_f32",
                            "the float32 attention kernel", &m->mod));
  char name[48];
  a32_name(v, "", name, sizeof name);
  cu_result r = cu->ModuleGetFunction(&m->fn, m->mod, name);
  a32_cfg c = a32_config(v.hi, d->max_smem_optin);
  int smem = a32_smem(c, a32_dims[v.hi]);
  ptc_status s = PTC_OK;
  if (r == CU_SUCCESS && smem > 48 * 1024) {
    if (d->max_smem_optin > 0 && d->max_smem_optin < smem)
      s = PTC_ERR(UNIMPLEMENTED, "cuda backend: the float32 attention kernel for head dim %d "
                  "needs %d bytes of shared memory, the device allows %d", a32_dims[v.hi], smem,
                  d->max_smem_optin);
    else
      r = cu->FuncSetAttribute(m->fn, A32_FUNC_MAX_DYNAMIC_SMEM, smem);
  }
  if (!s && r != CU_SUCCESS) s = cuda_error(r, "loading the float32 attention kernel");
  if (s) {
    cu->ModuleUnload(m->mod);
    memset(m, 0, sizeof *m);
    return s;
  }
  m->cfg = c;
  return PTC_OK;
}

ptc_status cuda_attn_f32_aot_sources(int arch, cuda_aot_src* out, size_t cap, size_t* n) {
  /* no mask tensor, cp.async tiles (aligned rows, the common call): head
   * dims 64 and 128 in their default shapes, built as a32_load builds them
   * on a device whose shared memory holds the shape (max_smem 0: no
   * fallback; the defaults fit sm_80's and sm_90's limits) */
  for (int hi = 1; hi <= 2; hi++) {
    if (*n >= cap) return PTC_ERR(INTERNAL, "cuda backend: too many ahead-of-time sources");
    cuda_aot_src* o = &out[*n];
    a32_variant v = {hi, 0, 1, -1};
    PTC_TRY(a32_source(&o->src, &v, 1, 0));
    o->arch = arch;
    snprintf(o->label, sizeof o->label, "attention f32 d%d sm_%d", a32_dims[hi], arch);
    (*n)++;
  }
  return PTC_OK;
}

ptc_status cuda_attn_f32_check_compile(int arch) {
  /* every head dim, mask kind, load path and loop form at least once */
  static const a32_variant v[] = {{1, 0, 1, -1}, {1, 0, 0, -1}, {1, -1, -1, -1}, {0, 0, 1, -1},
                                  {2, 0, 1, -1},  {2, -1, -1, -1}, {1, 0, 1, 0},  {1, -1, -1, 0},
                                  {0, 0, 1, 0},   {2, 0, 1, 0},    {1, 0, 1, 2}};
  ptc_strbuf src;
  PTC_TRY(a32_source(&src, v, (int)(sizeof v / sizeof v[0]), 0));
  cuda_cubin c;
  memset(&c, 0, sizeof c);
  ptc_status s = cuda_nvrtc_compile_ex(src.data, "ptc_attention_f32", arch, NULL, &c);
  cuda_cubin_free(&c);
  ptc_sb_free(&src);
  return s;
}

static bool a32_aligned(const void* p, uintptr_t n) { return ((uintptr_t)p & (n - 1)) == 0; }

ptc_status cuda_attn_f32_run(const cuda_ext_call* c) {
  const runtime_tensor *k = &c->in[1], *v = &c->in[2], *o = &c->out[0];
  attn32_args a;
  memset(&a, 0, sizeof a);
  const runtime_tensor* m = NULL;
  int hi;
  PTC_TRY(cuda_attn_geometry(c, PTC_F32, "float32", &a.g, &hi, &m));
  const cuda_attn_geom* g = &a.g;
  int32_t nb = g->nb;
  /* k / v tiles by 16-byte cp.async: unit last stride, rows and batches
   * multiples of 4 floats, 16-byte aligned bases */
  bool vec = g->k_se == 1 && g->v_se == 1 && a32_aligned(k->data, 16) && a32_aligned(v->data, 16) &&
             g->k_ss % 4 == 0 && g->v_ss % 4 == 0;
  for (int32_t d = 0; d < nb; d++) vec = vec && g->k_bs[d] % 4 == 0 && g->v_bs[d] % 4 == 0;
  a.vec = vec;
  bool ovec = a32_aligned(o->data, 8) && g->o_sl % 2 == 0;
  for (int32_t d = 0; d < nb; d++) ovec = ovec && g->o_bs[d] % 2 == 0;
  a.ovec = ovec;
  if (g->L == 0 || g->nbatch == 0) return PTC_OK;
  a32_variant var = a32_pick(hi, g->mask, vec);
  a32_mod* mod = &a32_mods[hi][var.mask ? 2 : var.pipe];
  pthread_mutex_lock(&a32_lock);
  ptc_status s = mod->fn ? PTC_OK : a32_load(c->plan->ctx, c->plan->dev, var, mod);
  cu_function fn = mod->fn;
  a32_cfg cfg = mod->cfg;
  pthread_mutex_unlock(&a32_lock);
  PTC_TRY(s);
  cu_deviceptr pq = (cu_deviceptr)(uintptr_t)c->in[0].data, pk = (cu_deviceptr)(uintptr_t)k->data;
  cu_deviceptr pv = (cu_deviceptr)(uintptr_t)v->data, po = (cu_deviceptr)(uintptr_t)o->data;
  cu_deviceptr pm = m ? (cu_deviceptr)(uintptr_t)m->data : 0;
  void* params[] = {&pq, &pk, &pv, &pm, &po, &a};
  int64_t gx = (g->L + A32_BM - 1) / A32_BM, gy = g->nbatch < 65535 ? g->nbatch : 65535;
  if (gx > INT32_MAX)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention with too many queries");
  CUDA_TRY(cuda_launch_pdl(cuda_device_get(), fn, (unsigned)gx, (unsigned)gy, 128, 1,
                           (unsigned)a32_smem(cfg, a32_dims[hi]), c->stream, params),
           "launching the float32 attention kernel");
  return PTC_OK;
}
