/* cuda_attn.c - scaled_dot_product_attention on the device: which graphs
 * keep sdpa whole (cuda_attn_graph_ok, asked by the pipeline), the call
 * geometry shared with the float32 kernels (cuda_attn_geometry: broadcast
 * batch dims and strides), the process-wide attention modules (cuda_attn.cuh
 * after the prelude, one instantiation per module: dtype, head dim, tile
 * shape, mask kind, load path; built through the kernel cache on first
 * use) and the extern step: one launch of the flash-attention kernel. */
#include "cuda_attn.h"

#include "cuda_aot.h"
#include "cuda_attn_f32.h"
#include "cuda_attn_wg.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern const char ptc_cuda_attn_text[];

#define ATTN_MAXB CUDA_ATTN_MAXB
#define ATTN_FUNC_MAX_DYN_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */

_Static_assert(sizeof(cuda_attn_geom) == 400, "cuda_attn_geom must match the device structs");

/* Device layout of ptc_attn_args (cuda_attn.cuh). */
typedef struct attn_args {
  cuda_attn_geom g;
  int32_t vec, mvec; /* mvec: bit 0 16-byte mask rows, bit 1 kept-tile range */
} attn_args;
_Static_assert(sizeof(attn_args) == 408, "attn_args must match ptc_attn_args");

static const char SDPA[] = "scaled_dot_product_attention";

/* ---- which graphs keep sdpa -------------------------------------------------------- */

static bool half_type(int32_t dt) { return dt == PTC_F16 || dt == PTC_BF16; }

/* dtypes with device kernels: f16/bf16 here, f32 in cuda_attn_f32.c */
static bool kernel_type(int32_t dt) { return half_type(dt) || dt == PTC_F32; }

static int head_index(int64_t e) { return e == 32 ? 0 : e == 64 ? 1 : e == 128 ? 2 : -1; }

static bool node_ok(const ptc_graph* g, const gnode* n) {
  if (n->n_in < 3 || n->n_out != 1) return false;
  const gvalue* q = graph_value(g, n->in[0]);
  const gvalue* k = graph_value(g, n->in[1]);
  const gvalue* v = graph_value(g, n->in[2]);
  const gvalue* o = graph_value(g, n->out[0]);
  if (!kernel_type(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype || o->dtype != q->dtype)
    return false;
  if (o->rank < 2 || o->rank > ATTN_MAXB + 2) return false;
  int64_t e, ek, ev;
  if (!sym_is_const(q->shape[q->rank - 1], &e) || !sym_is_const(k->shape[k->rank - 1], &ek) ||
      !sym_is_const(v->shape[v->rank - 1], &ev) || e != ek || e != ev || head_index(e) < 0)
    return false;
  if (n->n_in > 3 && n->in[3] != PTC_VALUE_NONE) {
    const gvalue* m = graph_value(g, n->in[3]);
    if (m->dtype != PTC_BOOL && m->dtype != q->dtype) return false;
    if (m->rank > o->rank) return false;
  }
  const gattr* dp = gattrs_find(&n->attrs, "dropout_p");
  return !dp || dp->f == 0.0;
}

bool cuda_attn_graph_ok(const ptc_graph* g) {
  const char* env = getenv("PTC_CUDA_ATTN");
  if (env && strcmp(env, "0") == 0) return false;
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    if (strcmp(n->op->name, SDPA) == 0 && !node_ok(g, n)) return false;
  }
  return true;
}

bool cuda_attn_handles(const ir_program* p, const ir_node* n) {
  const ir_extern* e = &n->ext;
  if (e->kind != IR_EXT_FALLBACK || e->graph_node >= p->graph->nodes.len || e->n_out != 1)
    return false;
  if (strcmp(graph_node(p->graph, e->graph_node)->op->name, SDPA) != 0) return false;
  return kernel_type(ir_buf(p, e->out[0])->dtype);
}

/* ---- the modules ----------------------------------------------------------------------- */

/* The shape of a kernel instantiation (cuda_attn.cuh): key tile rows, m16
 * tiles per warp (a block of 4 warps owns 64 * mt query rows), q fragments
 * kept in registers. */
typedef struct attn_cfg {
  int bn, mt, qreg;
} attn_cfg;

/* One instantiation: dtype, head dim index, mask kind, cp.async tiles,
 * small-grid shape. */
typedef struct attn_variant {
  int bf, hi, mask, pipe, small;
} attn_variant;

typedef struct attn_mod {
  cu_module mod;
  cu_function fn;
  attn_cfg cfg; /* the shape it was built with */
} attn_mod;

static pthread_mutex_t attn_lock = PTHREAD_MUTEX_INITIALIZER;
static attn_mod attn_mods[2][3][3][2][2]; /* [bf][hi][mask][pipe][small], built on first use */
static const int attn_dims[3] = {32, 64, 128};

static bool parse_cfg(const char* env, attn_cfg* c) {
  int bn, mt, qreg;
  if (!env || sscanf(env, "%d,%d,%d", &bn, &mt, &qreg) != 3 || (bn != 32 && bn != 64 && bn != 128) ||
      (mt != 1 && mt != 2) || (qreg != 0 && qreg != 1))
    return false;
  *c = (attn_cfg){bn, mt, qreg};
  return true;
}

/* The shape of variant v: the defaults below, or PTC_CUDA_ATTN_CFG=
 * "bn,mt,qreg" for every call (bn 32/64/128, mt 1/2, qreg 0/1), or
 * PTC_CUDA_ATTN_CFG_SMALL for the small-grid and boolean-mask calls only
 * (tuning knobs, read when a module is built). The defaults were the
 * fastest of the shapes measured on an H100 (bf16 d64, test_cuda_attn
 * --bench-fused / --bench-small): large grids (b8 h16 s1024) d32/d64
 * 64,2,1 (sm_90 ptxas: ~170 / 240 registers, two blocks per SM; 0.137 ms
 * against 0.155 for 64,1,0), d128 64,1,1 (2 m tiles per warp spill);
 * small grids (attn_small: GPT-2's b8 h12 s256, 0.013 ms against 0.014
 * for 64,2,1) and boolean masks (s1024 causal mask 0.198 ms against
 * 0.234) 64,1,0: one m16 tile per warp, q from shared memory, twice the
 * blocks. Boolean masks take key tiles of at most 64 (a 64-bit keep set
 * per row). */
static attn_cfg attn_config(attn_variant v) {
  static const attn_cfg def[3] = {{64, 2, 1}, {64, 2, 1}, {64, 1, 1}};
  static const attn_cfg small[3] = {{64, 1, 0}, {64, 1, 0}, {64, 1, 1}};
  bool sm = v.small || v.mask == 2;
  attn_cfg c = sm ? small[v.hi] : def[v.hi];
  if (!parse_cfg(getenv("PTC_CUDA_ATTN_CFG"), &c) && sm)
    parse_cfg(getenv("PTC_CUDA_ATTN_CFG_SMALL"), &c);
  if (v.mask == 2 && c.bn > 64) c.bn = 64;
  return c;
}

/* True when a call's grid at the large-grid shape of head dim index hi
 * fills less than one wave of two blocks per SM. */
static bool attn_small(int hi, int64_t L, int64_t nbatch, int sm_count) {
  static const int def_mt[3] = {2, 2, 1};
  if (def_mt[hi] == 1) return false;
  int64_t bm = 64 * def_mt[hi], blocks = (L + bm - 1) / bm * nbatch;
  return blocks < 2 * (int64_t)(sm_count > 0 ? sm_count : 132);
}

/* Dynamic shared memory of a kernel: [q tile unless qreg][2 k tiles][2 v
 * tiles], rows of E + 8 halves. */
static int attn_smem_bytes(attn_cfg c, int e) {
  return ((c.qreg ? 0 : 64 * c.mt) + 4 * c.bn) * (e + 8) * 2;
}

static void attn_kernel_name(attn_variant v, char* out, size_t cap) {
  snprintf(out, cap, "ptc_attn_%s_d%d", v.bf ? "bf16" : "f16", attn_dims[v.hi]);
}

/* The prelude, the kernel text and the instantiations of variants v[0..n)
 * (one per module; the compile check puts several in one program, named
 * apart by a suffix). */
static ptc_status attn_source(ptc_strbuf* src, const attn_variant* v, int n) {
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc attention kernel (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_attn_text);
  for (int i = 0; i < n; i++) {
    attn_cfg c = attn_config(v[i]);
    char name[48], suffix[16] = "";
    attn_kernel_name(v[i], name, sizeof name);
    if (n > 1) snprintf(suffix, sizeof suffix, "_%d", i);
    ptc_sb_printf(src, "PTC_ATTN_KERNEL(%s%s, %s, %d, %d, %d, %s, %d, %s)\n", name, suffix,
                  v[i].bf ? "true" : "false",
                  attn_dims[v[i].hi], c.bn, c.mt, c.qreg ? "true" : "false", v[i].mask,
                  v[i].pipe ? "true" : "false");
  }
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

static ptc_status load_attn(ptc_context* ctx, const cuda_device* d, attn_variant v, attn_mod* m) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  PTC_TRY(attn_source(&src, &v, 1));
  PTC_TRY(cuda_build_module(ctx, d->cc_major * 10 + d->cc_minor, &src, "ptc_attention",
                            "the attention kernel", &m->mod));
  char name[48];
  attn_kernel_name(v, name, sizeof name);
  cu_result r = cu->ModuleGetFunction(&m->fn, m->mod, name);
  attn_cfg c = attn_config(v);
  int smem = attn_smem_bytes(c, attn_dims[v.hi]);
  const char* what = "finding the attention kernel";
  ptc_status s = PTC_OK;
  if (r == CU_SUCCESS && smem > 48 * 1024 && smem > d->max_smem_optin) {
    s = PTC_ERR(UNIMPLEMENTED, "cuda backend: the attention kernel needs %d bytes of shared "
                "memory, the device allows %d", smem, d->max_smem_optin);
  } else if (r == CU_SUCCESS && smem > 48 * 1024) {
    what = "allowing the attention kernel's shared memory";
    r = cu->FuncSetAttribute(m->fn, ATTN_FUNC_MAX_DYN_SMEM, smem);
  }
  if (!s && r != CU_SUCCESS) s = cuda_error(r, what);
  if (s) {
    cu->ModuleUnload(m->mod);
    memset(m, 0, sizeof *m);
    return s;
  }
  m->cfg = c;
  return PTC_OK;
}

ptc_status cuda_attn_aot_sources(int arch, cuda_aot_src* out, size_t cap, size_t* n) {
  /* no mask tensor, cp.async loads: both dtypes, head dims 64 and 128,
   * both grid shapes (the causal flag is a kernel argument) */
  for (int bf = 0; bf < 2; bf++)
    for (int hi = 1; hi <= 2; hi++)
      for (int small = 0; small < 2; small++) {
        if (*n >= cap) return PTC_ERR(INTERNAL, "cuda backend: too many ahead-of-time sources");
        cuda_aot_src* o = &out[*n];
        attn_variant v = {bf, hi, 0, 1, small};
        PTC_TRY(attn_source(&o->src, &v, 1));
        o->arch = arch;
        snprintf(o->label, sizeof o->label, "attention mma.sync %s d%d%s sm_%d", bf ? "bf16" : "f16",
                 attn_dims[hi], small ? " small" : "", arch);
        (*n)++;
      }
  return PTC_OK;
}

ptc_status cuda_attn_check_compile(ptc_context* ctx, int arch) {
  (void)ctx;
  /* every mask kind, load path, dtype, head dim and grid shape at least once */
  static const attn_variant v[] = {
      {1, 1, 0, 1, 0}, {0, 0, 0, 1, 0}, {1, 2, 0, 1, 0}, {1, 1, 0, 1, 1},
      {0, 1, 1, 1, 0}, {1, 0, 1, 0, 1}, {1, 1, 2, 1, 1}, {0, 2, 2, 0, 0},
      {0, 1, 2, 1, 0}, {1, 1, 0, 0, 0},
  };
  ptc_strbuf src;
  PTC_TRY(attn_source(&src, v, (int)(sizeof v / sizeof v[0])));
  cuda_cubin c;
  memset(&c, 0, sizeof c);
  ptc_status s = cuda_nvrtc_compile_ex(src.data, "ptc_attention", arch, NULL, &c);
  cuda_cubin_free(&c);
  ptc_sb_free(&src);
  return s;
}

/* ---- the call geometry (shared with cuda_attn_f32.c) -------------------------------------- */

/* Stride of view t along output dim d of an output of rank r (0 where t
 * broadcasts). */
static int64_t bstride(const runtime_tensor* t, int32_t r, int32_t d) {
  int32_t j = d - (r - t->rank);
  return j >= 0 && t->shape[j] != 1 ? t->strides[j] : 0;
}

ptc_status cuda_attn_geometry(const cuda_ext_call* c, int32_t dt, const char* what,
                              cuda_attn_geom* g, int* hi, const runtime_tensor** mp) {
  const ir_extern* e = &c->node->ext;
  if (e->n_in < 3 || e->n_out != 1)
    return PTC_ERR(INTERNAL, "cuda backend: attention extern with %u inputs", e->n_in);
  const gnode* n = graph_node(c->plan->p->graph, e->graph_node);
  const runtime_tensor *q = &c->in[0], *k = &c->in[1], *v = &c->in[2], *o = &c->out[0];
  const runtime_tensor* m = e->n_in > 3 && e->in[3] >= 0 && c->in[3].data ? &c->in[3] : NULL;
  int32_t R = o->rank, nb = R - 2;
  int64_t E = q->rank > 0 ? q->shape[q->rank - 1] : 0;
  *hi = head_index(E);
  if (o->dtype != dt || q->dtype != dt || k->dtype != dt || v->dtype != dt || *hi < 0 ||
      q->rank < 2 || k->rank < 2 || v->rank < 2 || k->shape[k->rank - 1] != E ||
      v->shape[v->rank - 1] != E || nb < 0 || nb > ATTN_MAXB ||
      (m && ((m->dtype != PTC_BOOL && m->dtype != dt) || m->rank > R)) || o->strides[R - 1] != 1)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: %s attention of this layout or dtype (%s, head "
                   "dim %lld) has no device kernel", what, ptc_dtype_name(o->dtype), (long long)E);
  memset(g, 0, sizeof *g);
  g->L = q->shape[q->rank - 2];
  g->S = k->shape[k->rank - 2];
  g->nb = nb;
  g->nbatch = 1;
  for (int32_t d = 0; d < nb; d++) {
    g->batch[d] = o->shape[d];
    g->nbatch *= o->shape[d];
    g->o_bs[d] = o->strides[d];
    g->m_bs[d] = m ? bstride(m, R, d) : 0;
    /* q/k/v batch dims align with the output's from the right */
    int32_t jq = d - (nb - (q->rank - 2)), jk = d - (nb - (k->rank - 2)), jv = d - (nb - (v->rank - 2));
    g->q_bs[d] = jq >= 0 && q->shape[jq] != 1 ? q->strides[jq] : 0;
    g->k_bs[d] = jk >= 0 && k->shape[jk] != 1 ? k->strides[jk] : 0;
    g->v_bs[d] = jv >= 0 && v->shape[jv] != 1 ? v->strides[jv] : 0;
  }
  g->q_sl = q->strides[q->rank - 2], g->q_se = q->strides[q->rank - 1];
  g->k_ss = k->strides[k->rank - 2], g->k_se = k->strides[k->rank - 1];
  g->v_ss = v->strides[v->rank - 2], g->v_se = v->strides[v->rank - 1];
  g->o_sl = o->strides[R - 2];
  if (m) {
    g->mask = m->dtype == PTC_BOOL ? 2 : 1;
    g->m_sl = bstride(m, R, R - 2);
    g->m_ss = bstride(m, R, R - 1);
  }
  const gattr* ca = gattrs_find(&n->attrs, "is_causal");
  g->causal = ca && ca->i != 0;
  const gattr* sa = gattrs_find(&n->attrs, "scale");
  double scale = sa ? (sa->type == PTC_ATTR_FLOAT ? sa->f : (double)sa->i) : 1.0 / sqrt((double)E);
  g->scale_log2 = (float)(scale * 1.4426950408889634);
  *mp = m;
  return PTC_OK;
}

/* ---- the extern step ---------------------------------------------------------------------- */

static bool aligned16(const void* p) { return ((uintptr_t)p & 15u) == 0; }

ptc_status cuda_attn_run(const cuda_ext_call* c) {
  if (c->node->ext.n_out == 1 && c->out[0].dtype == PTC_F32) return cuda_attn_f32_run(c);
  const runtime_tensor *q = &c->in[0], *k = &c->in[1], *v = &c->in[2], *o = &c->out[0];
  if (c->node->ext.n_out != 1 || !half_type(o->dtype))
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention of dtype %s has no device kernel",
                   ptc_dtype_name(c->node->ext.n_out ? o->dtype : PTC_F32));
  attn_args a;
  memset(&a, 0, sizeof a);
  const runtime_tensor* m = NULL;
  int hi;
  PTC_TRY(cuda_attn_geometry(c, o->dtype, "half-precision", &a.g, &hi, &m));
  const cuda_attn_geom* g = &a.g;
  int32_t nb = g->nb;
  bool vec = g->q_se == 1 && g->k_se == 1 && g->v_se == 1 && aligned16(q->data) &&
             aligned16(k->data) && aligned16(v->data) && g->q_sl % 8 == 0 && g->k_ss % 8 == 0 &&
             g->v_ss % 8 == 0;
  for (int32_t d = 0; d < nb; d++)
    vec = vec && g->q_bs[d] % 8 == 0 && g->k_bs[d] % 8 == 0 && g->v_bs[d] % 8 == 0;
  a.vec = vec;
  /* boolean mask rows by 16-byte loads: unit key stride, 16-byte aligned rows */
  bool mvec = g->mask == 2 && g->m_ss == 1 && g->m_sl % 16 == 0 && aligned16(m->data);
  for (int32_t d = 0; mvec && d < nb; d++) mvec = g->m_bs[d] % 16 == 0;
  /* PTC_CUDA_ATTN_MRANGE=1: each block first finds the key tiles its rows
   * keep (off by default: its sweep of the block's mask rows is latency
   * bound as written, H100 b8 h16 s1024 causal mask 0.214 ms with it,
   * 0.198 without; b8 h12 s256 0.0184 / 0.0174) */
  const char* mr = getenv("PTC_CUDA_ATTN_MRANGE");
  a.mvec = mvec ? 1 | (mr && strcmp(mr, "1") == 0 ? 2 : 0) : 0;
  if ((g->o_sl % 2) != 0 || ((uintptr_t)o->data & 3u) != 0)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention output rows not 4-byte aligned");
  if (g->L == 0 || g->nbatch == 0) return PTC_OK;
  const cuda_device* dev = c->plan->dev;
  if (cuda_attn_wg_takes(dev, g, hi, vec))
    return cuda_attn_wg_run(c, g, o->dtype == PTC_BF16, hi, (cu_deviceptr)(uintptr_t)q->data,
                            (cu_deviceptr)(uintptr_t)k->data, (cu_deviceptr)(uintptr_t)v->data,
                            (cu_deviceptr)(uintptr_t)o->data);
  /* pipe == args.vec: the kernel takes its load path from PIPE alone */
  attn_variant var = {o->dtype == PTC_BF16, hi, g->mask, vec,
                      attn_small(hi, g->L, g->nbatch, dev->sm_count)};
  attn_mod* mod = &attn_mods[var.bf][var.hi][var.mask][var.pipe][var.small];
  pthread_mutex_lock(&attn_lock);
  ptc_status s = mod->fn ? PTC_OK : load_attn(c->plan->ctx, dev, var, mod);
  cu_function fn = mod->fn;
  attn_cfg cfg = mod->cfg;
  pthread_mutex_unlock(&attn_lock);
  PTC_TRY(s);
  cu_deviceptr pq = (cu_deviceptr)(uintptr_t)q->data, pk = (cu_deviceptr)(uintptr_t)k->data;
  cu_deviceptr pv = (cu_deviceptr)(uintptr_t)v->data, po = (cu_deviceptr)(uintptr_t)o->data;
  cu_deviceptr pm = m ? (cu_deviceptr)(uintptr_t)m->data : 0;
  void* params[] = {&pq, &pk, &pv, &pm, &po, &a};
  int64_t bm = 64 * cfg.mt, gx = (g->L + bm - 1) / bm, gy = g->nbatch < 65535 ? g->nbatch : 65535;
  if (gx > INT32_MAX || g->S > INT32_MAX)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention with too many queries or keys");
  CUDA_TRY(cuda_launch_pdl(cuda_device_get(), fn, (unsigned)gx, (unsigned)gy, 128, 1,
                           (unsigned)attn_smem_bytes(cfg, attn_dims[hi]), c->stream, params),
           "launching the attention kernel");
  return PTC_OK;
}
