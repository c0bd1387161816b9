/* cuda_ext.c - the cuda backend's extern steps.
 *  - IR_EXT_MATMUL on the device: torch.matmul semantics (1-D operands,
 *    broadcast batch dims, any strides) resolved into GEMM arguments; run by
 *    cuBLASLt when it is present and takes the layout (cuda_blaslt.c), else
 *    by the tensor-core GEMM (cuda_gemm_tc.c: f16/bf16, f32 when TF32 is
 *    allowed, sm_80+), else by the support GEMM: one launch, blockIdx.z
 *    over the batch entries, bias and activation in its epilogue.
 *    Activations cuBLASLt has no epilogue for run as an in-place pass.
 *  - IR_EXT_CONV of floating types and max_pool2d, avg_pool2d,
 *    adaptive_avg_pool2d (fallback nodes: no IR lowering) on the device:
 *    cuda_ext_conv.c (implicit GEMM, or im2col + the GEMM launcher here).
 *  - Everything else (ops without a CUDA lowering, host custom ops,
 *    convolutions of layouts the device path does not take) on the host: the stream is synchronised, each input's
 *    storage range copied to host memory, the node run with its reference
 *    kernel or host function (runtime_fallback_run), an activation folded
 *    into a convolution applied, and the outputs copied back. Slow but
 *    exact; the plan logs which ops take this path.
 */
#include "cuda_attn.h"
#include "cuda_ext_internal.h"
#include "cuda_gemm_tc.h"
#include "cuda_plan.h"
#include "cuda_welford.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The pooling mode of a fallback node the device runs (0 max, 1 avg,
 * 2 adaptive avg), -1 for other ops. */
static int pool_mode(const ptc_graph* g, const ir_extern* e) {
  if (e->kind != IR_EXT_FALLBACK || e->graph_node >= g->nodes.len || e->n_out != 1) return -1;
  const char* op = graph_node(g, e->graph_node)->op->name;
  return !strcmp(op, "max_pool2d") ? 0 : !strcmp(op, "avg_pool2d") ? 1
         : !strcmp(op, "adaptive_avg_pool2d") ? 2 : -1;
}

static bool floating(int32_t dt) {
  return dt == PTC_F32 || dt == PTC_F64 || dt == PTC_F16 || dt == PTC_BF16;
}

bool cuda_ext_on_device(const ir_program* p, const ir_node* n) {
  if (n->ext.kind == IR_EXT_MATMUL || cuda_attn_handles(p, n) || cuda_welford_handles(p, n))
    return true;
  if (pool_mode(p->graph, &n->ext) >= 0) return floating(ir_buf(p, n->ext.out[0])->dtype);
  if (n->ext.kind != IR_EXT_CONV || n->ext.n_out != 1) return false;
  return floating(ir_buf(p, n->ext.out[0])->dtype);
}

/* ---- matmul ------------------------------------------------------------------------ */

static int64_t bcast_stride(const runtime_tensor* t, int32_t rc, int32_t d) {
  int32_t j = d - (rc - t->rank);
  return j >= 0 && t->shape[j] != 1 ? t->strides[j] : 0;
}

static void batch_strides(const runtime_tensor* t, int32_t nb, int64_t* bs) {
  int32_t tb = t->rank >= 2 ? t->rank - 2 : 0;
  for (int32_t i = 0; i < nb; i++) {
    int32_t j = i - (nb - tb);
    bs[i] = j >= 0 && t->shape[j] != 1 ? t->strides[j] : 0;
  }
}

static ptc_status mm_args(const runtime_tensor* a, const runtime_tensor* b,
                          const runtime_tensor* bias, const runtime_tensor* c, cuda_mm_args* g,
                          int64_t* count) {
  memset(g, 0, sizeof *g);
  if (a->rank < 1 || b->rank < 1) return PTC_ERR(INTERNAL, "cuda backend: matmul of rank-0 operands");
  bool am = a->rank >= 2, bn = b->rank >= 2;
  g->m = am ? a->shape[a->rank - 2] : 1;
  g->k = a->shape[a->rank - 1];
  g->n = bn ? b->shape[b->rank - 1] : 1;
  int64_t kb = b->shape[bn ? b->rank - 2 : 0];
  g->nb = c->rank - (int32_t)am - (int32_t)bn;
  if (kb != g->k || g->nb < 0)
    return PTC_ERR(INTERNAL, "cuda backend: matmul operand shapes do not match");
  g->a_sm = am ? a->strides[a->rank - 2] : 0;
  g->a_sk = a->strides[a->rank - 1];
  g->b_sk = b->strides[bn ? b->rank - 2 : 0];
  g->b_sn = bn ? b->strides[b->rank - 1] : 0;
  g->c_sm = am ? c->strides[g->nb] : 0;
  g->c_sn = bn ? c->strides[c->rank - 1] : 0;
  *count = 1;
  for (int32_t i = 0; i < g->nb; i++) {
    g->batch[i] = c->shape[i];
    g->c_bs[i] = c->strides[i];
    *count *= c->shape[i];
  }
  batch_strides(a, g->nb, g->a_bs);
  batch_strides(b, g->nb, g->b_bs);
  g->has_bias = bias != NULL;
  if (bias) {
    for (int32_t i = 0; i < g->nb; i++) g->d_bs[i] = bcast_stride(bias, c->rank, i);
    g->d_sm = am ? bcast_stride(bias, c->rank, g->nb) : 0;
    g->d_sn = bn ? bcast_stride(bias, c->rank, c->rank - 1) : 0;
  }
  return PTC_OK;
}

int cuda_ext_gemm_index(int32_t dt) {
  switch (dt) {
    case PTC_F32: return 0;
    case PTC_F64: return 1;
    case PTC_F16: return 2;
    case PTC_BF16: return 3;
    default: return -1;
  }
}

/* PTC_CUDA_EPI_GELU=precise: the GEMM epilogue pass's GELU of f16 / bf16
 * results in PyTorch's erf form too (read once; for comparisons). */
static int epi_exact;
static pthread_once_t epi_once = PTHREAD_ONCE_INIT;
static void epi_env(void) {
  const char* e = getenv("PTC_CUDA_EPI_GELU");
  epi_exact = e && strcmp(e, "precise") == 0;
}

/* In-place epilogue over the n contiguous elements at pc: + beta * bias
 * (bias[((i / inner) % nbias) * bias_st]) when pd, then the activation. */
ptc_status cuda_ext_run_epilogue(const cuda_ext_call* c, int gi, cu_deviceptr pc, int64_t n,
                                 cu_deviceptr pd, int64_t inner, int64_t nbias, int64_t bias_st,
                                 double beta, int32_t act) {
  if (n <= 0 || (!pd && act == IR_ACT_NONE)) return PTC_OK;
  cuda_epi_args a;
  memset(&a, 0, sizeof a);
  a.n = n;
  a.inner = inner > 0 ? inner : 1;
  a.nbias = nbias > 0 ? nbias : 1;
  a.bias_st = bias_st;
  a.beta = beta;
  a.act = act;
  a.has_bias = pd != 0;
  pthread_once(&epi_once, epi_env);
  a.exact = epi_exact;
  void* params[] = {&pc, &pd, &a};
  int64_t blocks = (n + 255) / 256, cap = (int64_t)c->plan->dev->sm_count * 16;
  if (blocks > cap) blocks = cap;
  CUDA_TRY(cuda_libs_get()->cu.LaunchKernel(c->plan->sup->epi[gi], (unsigned)blocks, 1, 1, 256, 1, 1,
                                            0, c->stream, params, NULL),
           "launching the GEMM epilogue");
  return PTC_OK;
}

/* One (batched) GEMM: cuBLASLt when it takes the layout, else the support
 * GEMM. An activation cuBLASLt has no epilogue for (GELU with erf, SiLU,
 * sigmoid, tanh) runs as an in-place pass over C after it (C is a computed
 * buffer: contiguous). */
ptc_status cuda_ext_mm_launch(const cuda_ext_call* c, cuda_mm_args* g, int64_t count, int32_t dtype,
                              cu_deviceptr pa, cu_deviceptr pb, cu_deviceptr pd, cu_deviceptr pc,
                              bool c_contiguous) {
  int gi = cuda_ext_gemm_index(dtype);
  bool done = false;
  int32_t act = g->act;
  bool split_act = act != IR_ACT_NONE && act != IR_ACT_RELU && c_contiguous;
  if (split_act) g->act = IR_ACT_NONE;
  PTC_TRY(cuda_blaslt_matmul(c, g, count, dtype, pa, pb, pd, pc, &done));
  g->act = act;
  if (done)
    return split_act
               ? cuda_ext_run_epilogue(c, gi, pc, count * g->m * g->n, 0, 1, 1, 0, 0.0, act)
               : PTC_OK;
  /* f16 / bf16 (f32 when TF32 is allowed) on sm_80+: the tensor-core GEMM */
  PTC_TRY(cuda_gemm_tc(c->plan->ctx, c->plan->dev, c->stream, g, count, dtype, c->tf32, pa, pb, pd,
                       pc, &done));
  if (done) return PTC_OK;
  int64_t gx = (g->n + 63) / 64, gy = (g->m + 63) / 64;
  if (gy > 65535 || count > 65535 || gx > INT32_MAX)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: matmul too large for the fallback GEMM "
                   "(%lld x %lld, %lld batch entries)", (long long)g->m, (long long)g->n,
                   (long long)count);
  void* params[] = {&pa, &pb, &pd, &pc, g};
  CUDA_TRY(cuda_libs_get()->cu.LaunchKernel(c->plan->sup->gemm[gi], (unsigned)gx, (unsigned)gy,
                                            (unsigned)count, 256, 1, 1, 0, c->stream, params, NULL),
           "launching the GEMM");
  return PTC_OK;
}

bool cuda_ext_view_contiguous(const runtime_tensor* t) {
  int64_t expect = 1;
  for (int32_t d = t->rank - 1; d >= 0; d--) {
    if (t->shape[d] != 1 && t->strides[d] != expect) return false;
    expect *= t->shape[d];
  }
  return true;
}

static ptc_status ext_matmul(const cuda_ext_call* c) {
  const ir_extern* e = &c->node->ext;
  if (e->n_in < 2 || e->n_out != 1)
    return PTC_ERR(INTERNAL, "cuda backend: matmul extern with %u inputs", e->n_in);
  const runtime_tensor* a = &c->in[0];
  const runtime_tensor* b = &c->in[1];
  const runtime_tensor* bias = e->n_in > 2 && e->in[2] >= 0 ? &c->in[2] : NULL;
  const runtime_tensor* out = &c->out[0];
  int gi = cuda_ext_gemm_index(out->dtype);
  if (gi < 0 || a->dtype != out->dtype || b->dtype != out->dtype || (bias && bias->dtype != out->dtype))
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: matmul of %s tensors (floating types only)",
                   ptc_dtype_name(out->dtype));
  cuda_mm_args g;
  int64_t count = 0;
  PTC_TRY(mm_args(a, b, bias, out, &g, &count));
  if (g.m == 0 || g.n == 0 || count == 0) return PTC_OK;
  g.alpha = e->alpha;
  g.beta = e->beta;
  g.act = e->activation;
  cu_deviceptr pa = (cu_deviceptr)(uintptr_t)a->data, pb = (cu_deviceptr)(uintptr_t)b->data;
  cu_deviceptr pd = bias ? (cu_deviceptr)(uintptr_t)bias->data : 0;
  cu_deviceptr pc = (cu_deviceptr)(uintptr_t)out->data;
  cuda_ext_call mc = *c; /* f32: TF32 as matmul_precision allows */
  mc.tf32 = c->plan->mm_tf32;
  return cuda_ext_mm_launch(&mc, &g, count, out->dtype, pa, pb, pd, pc,
                            cuda_ext_view_contiguous(out));
}

/* ---- host round trip ------------------------------------------------------------------- */

/* A host copy of a device view: its storage range [0, extent) elements. */
typedef struct host_view {
  runtime_tensor t;  /* data points into mem */
  char* mem;
  size_t bytes;
} host_view;

static int64_t view_extent(const runtime_tensor* v) {
  int64_t e = 1;
  for (int32_t d = 0; d < v->rank; d++) {
    if (v->shape[d] == 0) return 0;
    e += (v->shape[d] - 1) * (v->strides[d] < 0 ? 0 : v->strides[d]);
  }
  return e;
}

static ptc_status host_alloc(const runtime_tensor* dev, host_view* h) {
  memset(h, 0, sizeof *h);
  h->t = *dev;
  int64_t bytes;
  if (!ptc_mul_ok(view_extent(dev), (int64_t)ptc_dtype_size(dev->dtype), &bytes))
    return PTC_ERR(RESOURCE_EXHAUSTED, "cuda backend: tensor too large");
  h->bytes = (size_t)bytes;
  h->mem = malloc(h->bytes ? h->bytes : 1);
  if (!h->mem) return PTC_ERR(RESOURCE_EXHAUSTED, "cuda backend: out of host memory (%zu bytes)", h->bytes);
  h->t.data = h->mem;
  return PTC_OK;
}

static void apply_activation(const runtime_tensor* t, int32_t act) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++) n *= t->shape[d];
  for (int64_t i = 0; i < n && act != IR_ACT_NONE; i++) {
    int64_t rest = i, off = 0;
    for (int32_t d = t->rank - 1; d >= 0; d--) {
      off += (rest % t->shape[d]) * t->strides[d];
      rest /= t->shape[d];
    }
    double x;
    switch (t->dtype) {
      case PTC_F32: x = ((float*)t->data)[off]; break;
      case PTC_F64: x = ((double*)t->data)[off]; break;
      case PTC_F16: x = ptc_f16_to_f32(((uint16_t*)t->data)[off]); break;
      case PTC_BF16: x = ptc_bf16_to_f32(((uint16_t*)t->data)[off]); break;
      default: return;
    }
    switch (act) {
      case IR_ACT_RELU: x = x < 0 ? 0 : x; break;
      case IR_ACT_GELU: x = 0.5 * x * (1 + erf(x * 0.70710678118654752440)); break;
      case IR_ACT_GELU_TANH:
        x = 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
        break;
      case IR_ACT_SILU: x = x / (1 + exp(-x)); break;
      case IR_ACT_SIGMOID: x = 1 / (1 + exp(-x)); break;
      case IR_ACT_TANH: x = tanh(x); break;
      default: break;
    }
    switch (t->dtype) {
      case PTC_F32: ((float*)t->data)[off] = (float)x; break;
      case PTC_F64: ((double*)t->data)[off] = x; break;
      case PTC_F16: ((uint16_t*)t->data)[off] = ptc_f32_to_f16((float)x); break;
      default: ((uint16_t*)t->data)[off] = ptc_f32_to_bf16((float)x); break;
    }
  }
}

static ptc_status ext_host(const cuda_ext_call* c) {
  const ir_extern* e = &c->node->ext;
  const cu_api* cu = &cuda_libs_get()->cu;
  uint32_t n = e->n_in + e->n_out;
  host_view* h = calloc(n + 1, sizeof *h);
  runtime_tensor* v = calloc(n + 1, sizeof *v);
  ptc_status s = h && v ? PTC_OK : ptc_status_oom();
  for (uint32_t k = 0; !s && k < n; k++) {
    const runtime_tensor* dv = k < e->n_in ? &c->in[k] : &c->out[k - e->n_in];
    if (k < e->n_in && e->in[k] < 0) continue; /* absent optional input: data NULL */
    s = host_alloc(dv, &h[k]);
    v[k] = h[k].t;
    if (!s && k < e->n_in && h[k].bytes && dv->data)
      s = cu->MemcpyDtoHAsync(h[k].mem, (cu_deviceptr)(uintptr_t)dv->data, h[k].bytes, c->stream) ==
                  CU_SUCCESS
              ? PTC_OK
              : PTC_ERR(INTERNAL, "cuda backend: copying an input to the host failed");
  }
  if (!s && cu->StreamSynchronize(c->stream) != CU_SUCCESS)
    s = PTC_ERR(INTERNAL, "cuda backend: waiting for the stream failed");
  /* a convolution extern always has a bias slot; its graph node may have
   * only (x, w) */
  uint32_t n_node_in = e->n_in;
  if (e->graph_node < c->plan->p->graph->nodes.len) {
    uint32_t gn_in = graph_node(c->plan->p->graph, e->graph_node)->n_in;
    if (gn_in < n_node_in) n_node_in = gn_in;
  }
  if (!s)
    s = runtime_fallback_run(c->plan->ctx, c->plan->p->graph, e->graph_node, v, n_node_in,
                             v + e->n_in, e->n_out, c->syms, c->n_syms, c->seed);
  if (!s && e->kind == IR_EXT_CONV && e->activation != IR_ACT_NONE)
    apply_activation(&v[e->n_in], e->activation);
  for (uint32_t k = e->n_in; !s && k < n; k++)
    if (h[k].bytes &&
        cu->MemcpyHtoDAsync((cu_deviceptr)(uintptr_t)c->out[k - e->n_in].data, h[k].mem,
                            h[k].bytes, c->stream) != CU_SUCCESS)
      s = PTC_ERR(INTERNAL, "cuda backend: copying an output to the device failed");
  if (!s && cu->StreamSynchronize(c->stream) != CU_SUCCESS) /* host memory goes next */
    s = PTC_ERR(INTERNAL, "cuda backend: waiting for the stream failed");
  for (uint32_t k = 0; h && k < n; k++) free(h[k].mem);
  free(h);
  free(v);
  return s;
}

ptc_status cuda_ext_run(const cuda_ext_call* c) {
  if (c->node->ext.kind == IR_EXT_MATMUL) return ext_matmul(c);
  if (cuda_attn_handles(c->plan->p, c->node)) return cuda_attn_run(c);
  if (cuda_welford_handles(c->plan->p, c->node)) return cuda_welford_run(c);
  if (c->node->ext.kind == IR_EXT_CONV && !(c->node->ext.alpha == 1.0))
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: convolution with alpha %g", c->node->ext.alpha);
  if (c->node->ext.kind == IR_EXT_CONV) {
    bool done = false;
    PTC_TRY(cuda_ext_conv_device(c, &done));
    if (done) return PTC_OK;
  }
  int pm = pool_mode(c->plan->p->graph, &c->node->ext);
  if (pm >= 0) {
    bool done = false;
    PTC_TRY(cuda_ext_pool_device(c, pm, &done));
    if (done) return PTC_OK;
  }
  return ext_host(c);
}
