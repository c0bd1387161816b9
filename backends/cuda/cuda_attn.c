/* cuda_attn.c - scaled_dot_product_attention on the device: which graphs
 * keep sdpa whole (cuda_attn_graph_ok, asked by the pipeline), the
 * process-wide attention modules (cuda_attn.cuh after the prelude, one per
 * dtype and head dim, built through the kernel cache on first use) and the extern step: broadcast
 * batch dims and strides resolved into ptc_attn_args, one launch of the
 * flash-attention kernel for the dtype and head dim. */
#include "cuda_attn.h"
#include "cuda_attn_f32.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern const char ptc_cuda_attn_text[];

#define ATTN_MAXB 6
#define ATTN_FUNC_MAX_DYN_SMEM 8 /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */

/* Device layout of ptc_attn_args (cuda_attn.cuh). */
typedef struct attn_args {
  int64_t L, S, nbatch;
  int64_t batch[ATTN_MAXB];
  int64_t q_bs[ATTN_MAXB], k_bs[ATTN_MAXB], v_bs[ATTN_MAXB], m_bs[ATTN_MAXB], o_bs[ATTN_MAXB];
  int64_t q_sl, q_se, k_ss, k_se, v_ss, v_se, m_sl, m_ss, o_sl;
  int32_t nb, mask;
  int32_t causal, vec;
  float scale_log2;
  int32_t pad;
} attn_args;

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

/* ---- the module ------------------------------------------------------------------------ */

static pthread_mutex_t attn_lock = PTHREAD_MUTEX_INITIALIZER;
static cu_module attn_module[2][3]; /* [f16, bf16][E 32, 64, 128], built on first use */
static cu_function attn_fn[2][3];
static const int attn_dims[3] = {32, 64, 128};

/* The shape of a kernel instantiation (cuda_attn.cuh): key tile rows, m16
 * tiles per warp (a block of 4 warps owns 64 * mt query rows), q fragments
 * kept in registers. */
typedef struct attn_cfg {
  int bn, mt, qreg;
} attn_cfg;
static attn_cfg attn_used[2][3]; /* the shape each loaded module was built with */

/* The shape for head dim index hi: the defaults below, or
 * PTC_CUDA_ATTN_CFG="bn,mt,qreg" (bn 32/64/128, mt 1/2, qreg 0/1; a tuning
 * knob, read when a module is built). The defaults were the fastest of
 * the shapes measured on an H100 (bf16, b8 h16 s1024; test_cuda_attn
 * --bench-fused): d32/d64 64,2,1 (sm_90 ptxas: 208 / 252 registers, two
 * blocks per SM), d128 64,1,1 (212 registers; 2 m tiles per warp spill). */
static attn_cfg attn_config(int hi) {
  static const attn_cfg def[3] = {{64, 2, 1}, {64, 2, 1}, {64, 1, 1}};
  attn_cfg c = def[hi];
  const char* env = getenv("PTC_CUDA_ATTN_CFG");
  int bn, mt, qreg;
  if (env && sscanf(env, "%d,%d,%d", &bn, &mt, &qreg) == 3 && (bn == 32 || bn == 64 || bn == 128) &&
      (mt == 1 || mt == 2) && (qreg == 0 || qreg == 1))
    c = (attn_cfg){bn, mt, qreg};
  return c;
}

/* Dynamic shared memory of a kernel: [q tile unless qreg][2 k tiles][2 v
 * tiles], rows of E + 8 halves. */
static int attn_smem_bytes(attn_cfg c, int e) {
  return ((c.qreg ? 0 : 64 * c.mt) + 4 * c.bn) * (e + 8) * 2;
}

/* The prelude, the kernel text and the instantiations of (bf, hi) pairs. */
static ptc_status attn_source(ptc_strbuf* src, const int* bf, const int* hi, int n) {
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc attention kernels (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_attn_text);
  for (int i = 0; i < n; i++) {
    attn_cfg c = attn_config(hi[i]);
    ptc_sb_printf(src, "PTC_ATTN_KERNEL(ptc_attn_%s_d%d, %s, %d, %d, %d, %s)\n",
                  bf[i] ? "bf16" : "f16", attn_dims[hi[i]], bf[i] ? "true" : "false",
                  attn_dims[hi[i]], c.bn, c.mt, c.qreg ? "true" : "false");
  }
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

static ptc_status load_attn(ptc_context* ctx, const cuda_device* d, int bf, int hi) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  PTC_TRY(attn_source(&src, &bf, &hi, 1));
  PTC_TRY(cuda_build_module(ctx, d->cc_major * 10 + d->cc_minor, &src, "ptc_attention",
                            "the attention kernel", &attn_module[bf][hi]));
  cu_result r;
  char name[48];
  snprintf(name, sizeof name, "ptc_attn_%s_d%d", bf ? "bf16" : "f16", attn_dims[hi]);
  r = cu->ModuleGetFunction(&attn_fn[bf][hi], attn_module[bf][hi], name);
  attn_cfg c = attn_config(hi);
  int smem = attn_smem_bytes(c, attn_dims[hi]);
  const char* what = "finding the attention kernel";
  if (r == CU_SUCCESS && smem > 48 * 1024 && smem > d->max_smem_optin) {
    cu->ModuleUnload(attn_module[bf][hi]);
    attn_module[bf][hi] = NULL;
    attn_fn[bf][hi] = NULL;
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: the attention kernel needs %d bytes of shared "
                   "memory, the device allows %d", smem, d->max_smem_optin);
  }
  if (r == CU_SUCCESS && smem > 48 * 1024) {
    what = "allowing the attention kernel's shared memory";
    r = cu->FuncSetAttribute(attn_fn[bf][hi], ATTN_FUNC_MAX_DYN_SMEM, smem);
  }
  if (r != CU_SUCCESS) {
    cu->ModuleUnload(attn_module[bf][hi]);
    attn_module[bf][hi] = NULL;
    attn_fn[bf][hi] = NULL;
    return cuda_error(r, what);
  }
  attn_used[bf][hi] = c;
  return PTC_OK;
}

ptc_status cuda_attn_check_compile(ptc_context* ctx, int arch) {
  (void)ctx;
  static const int bf[6] = {0, 0, 0, 1, 1, 1}, hi[6] = {0, 1, 2, 0, 1, 2};
  ptc_strbuf src;
  PTC_TRY(attn_source(&src, bf, hi, 6));
  cuda_cubin c;
  memset(&c, 0, sizeof c);
  ptc_status s = cuda_nvrtc_compile_ex(src.data, "ptc_attention", arch, NULL, &c);
  cuda_cubin_free(&c);
  ptc_sb_free(&src);
  return s;
}

/* ---- the extern step ---------------------------------------------------------------------- */

/* Stride of view t along output dim d of an output of rank r (0 where t
 * broadcasts). */
static int64_t bstride(const runtime_tensor* t, int32_t r, int32_t d) {
  int32_t j = d - (r - t->rank);
  return j >= 0 && t->shape[j] != 1 ? t->strides[j] : 0;
}

static bool aligned16(const void* p) { return ((uintptr_t)p & 15u) == 0; }

ptc_status cuda_attn_run(const cuda_ext_call* c) {
  if (c->node->ext.n_out == 1 && c->out[0].dtype == PTC_F32) return cuda_attn_f32_run(c);
  const ir_extern* e = &c->node->ext;
  const gnode* n = graph_node(c->plan->p->graph, e->graph_node);
  if (e->n_in < 3 || e->n_out != 1)
    return PTC_ERR(INTERNAL, "cuda backend: attention extern with %u inputs", e->n_in);
  const runtime_tensor *q = &c->in[0], *k = &c->in[1], *v = &c->in[2], *o = &c->out[0];
  const runtime_tensor* m = e->n_in > 3 && e->in[3] >= 0 && c->in[3].data ? &c->in[3] : NULL;
  int32_t R = o->rank, nb = R - 2;
  int64_t E = q->shape[q->rank - 1];
  int hi = head_index(E);
  if (!half_type(o->dtype) || q->dtype != o->dtype || k->dtype != o->dtype || v->dtype != o->dtype ||
      hi < 0 || k->shape[k->rank - 1] != E || v->shape[v->rank - 1] != E || nb < 0 ||
      nb > ATTN_MAXB || q->rank < 2 || k->rank < 2 || v->rank < 2 ||
      (m && ((m->dtype != PTC_BOOL && m->dtype != o->dtype) || m->rank > R)) ||
      o->strides[R - 1] != 1)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention of this layout or dtype (%s, head dim "
                   "%lld) has no device kernel", ptc_dtype_name(o->dtype), (long long)E);
  attn_args a;
  memset(&a, 0, sizeof a);
  a.L = q->shape[q->rank - 2];
  a.S = k->shape[k->rank - 2];
  a.nb = nb;
  a.nbatch = 1;
  for (int32_t d = 0; d < nb; d++) {
    a.batch[d] = o->shape[d];
    a.nbatch *= o->shape[d];
    a.o_bs[d] = o->strides[d];
    a.m_bs[d] = m ? bstride(m, R, d) : 0;
  }
  /* batch strides of q/k/v: their batch dims align with the output's */
  for (int32_t d = 0; d < nb; d++) {
    int32_t jq = d - (nb - (q->rank - 2)), jk = d - (nb - (k->rank - 2)), jv = d - (nb - (v->rank - 2));
    a.q_bs[d] = jq >= 0 && q->shape[jq] != 1 ? q->strides[jq] : 0;
    a.k_bs[d] = jk >= 0 && k->shape[jk] != 1 ? k->strides[jk] : 0;
    a.v_bs[d] = jv >= 0 && v->shape[jv] != 1 ? v->strides[jv] : 0;
  }
  a.q_sl = q->strides[q->rank - 2], a.q_se = q->strides[q->rank - 1];
  a.k_ss = k->strides[k->rank - 2], a.k_se = k->strides[k->rank - 1];
  a.v_ss = v->strides[v->rank - 2], a.v_se = v->strides[v->rank - 1];
  a.o_sl = o->strides[R - 2];
  if (m) {
    a.mask = m->dtype == PTC_BOOL ? 2 : 1;
    a.m_sl = bstride(m, R, R - 2);
    a.m_ss = bstride(m, R, R - 1);
  }
  const gattr* ca = gattrs_find(&n->attrs, "is_causal");
  a.causal = ca && ca->i != 0;
  const gattr* sa = gattrs_find(&n->attrs, "scale");
  double scale = sa ? (sa->type == PTC_ATTR_FLOAT ? sa->f : (double)sa->i) : 1.0 / sqrt((double)E);
  a.scale_log2 = (float)(scale * 1.4426950408889634);
  bool vec = a.q_se == 1 && a.k_se == 1 && a.v_se == 1 && aligned16(q->data) &&
             aligned16(k->data) && aligned16(v->data) && a.q_sl % 8 == 0 && a.k_ss % 8 == 0 &&
             a.v_ss % 8 == 0 && (o->strides[R - 2] % 2) == 0 && ((uintptr_t)o->data & 3u) == 0;
  for (int32_t d = 0; d < nb; d++)
    vec = vec && a.q_bs[d] % 8 == 0 && a.k_bs[d] % 8 == 0 && a.v_bs[d] % 8 == 0;
  a.vec = vec;
  if ((o->strides[R - 2] % 2) != 0 || ((uintptr_t)o->data & 3u) != 0)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention output rows not 4-byte aligned");
  if (a.L == 0 || a.nbatch == 0) return PTC_OK;
  int bf = o->dtype == PTC_BF16;
  pthread_mutex_lock(&attn_lock);
  ptc_status s = attn_fn[bf][hi] ? PTC_OK : load_attn(c->plan->ctx, c->plan->dev, bf, hi);
  cu_function fn = attn_fn[bf][hi];
  attn_cfg cfg = attn_used[bf][hi];
  pthread_mutex_unlock(&attn_lock);
  PTC_TRY(s);
  cu_deviceptr pq = (cu_deviceptr)(uintptr_t)q->data, pk = (cu_deviceptr)(uintptr_t)k->data;
  cu_deviceptr pv = (cu_deviceptr)(uintptr_t)v->data, po = (cu_deviceptr)(uintptr_t)o->data;
  cu_deviceptr pm = m ? (cu_deviceptr)(uintptr_t)m->data : 0;
  void* params[] = {&pq, &pk, &pv, &pm, &po, &a};
  int64_t bm = 64 * cfg.mt, gx = (a.L + bm - 1) / bm, gy = a.nbatch < 65535 ? a.nbatch : 65535;
  if (gx > INT32_MAX || a.S > INT32_MAX)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: attention with too many queries or keys");
  CUDA_TRY(cuda_libs_get()->cu.LaunchKernel(fn, (unsigned)gx, (unsigned)gy, 1, 128, 1, 1,
                                            (unsigned)attn_smem_bytes(cfg, (int)E), c->stream,
                                            params, NULL),
           "launching the attention kernel");
  return PTC_OK;
}
