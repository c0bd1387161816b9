/* cpu_ext_matmul.c - the IR_EXT_MATMUL extern: C = act(alpha * A @ B +
 * beta * bias) with torch.matmul semantics (1-D operands, broadcast batch
 * dims), any strides. f32/f64 call cpu_gemm_batch_f32/f64 with the element
 * offsets of every batch entry (the bias goes into the GEMM epilogue when it
 * is per column, else a separate pass adds it); f16/bf16 go through f32
 * temporaries. Integer matmul does not exist in the op set (its meta
 * function rejects it). */
#include "cpu_rt.h"

#include <stdlib.h>
#include <string.h>

typedef struct mm_geom {
  int64_t m, n, k;
  int32_t nb;                       /* batch rank (of the output) */
  int64_t batch[PTC_MAX_RANK];
  int64_t a_bs[PTC_MAX_RANK], b_bs[PTC_MAX_RANK], c_bs[PTC_MAX_RANK], d_bs[PTC_MAX_RANK];
  int64_t a_sm, a_sk, b_sk, b_sn, c_sm, c_sn, d_sm, d_sn; /* d = bias */
  bool has_bias;
} mm_geom;

/* Stride of `t` for output dim `d` of an output of rank `rc` (right-aligned
 * broadcasting: missing or size-1 dims get 0). */
static int64_t bcast_stride(const runtime_tensor* t, int32_t rc, int32_t d) {
  int32_t j = d - (rc - t->rank);
  return j >= 0 && t->shape[j] != 1 ? t->strides[j] : 0;
}

/* Batch strides of operand t (its last two dims are the matrix) into bs. */
static void batch_strides(const runtime_tensor* t, int32_t nb, int64_t* bs) {
  int32_t tb = t->rank >= 2 ? t->rank - 2 : 0;
  for (int32_t i = 0; i < nb; i++) {
    int32_t j = i - (nb - tb);
    bs[i] = j >= 0 && t->shape[j] != 1 ? t->strides[j] : 0;
  }
}

static ptc_status mm_geometry(const runtime_tensor* a, const runtime_tensor* b,
                              const runtime_tensor* bias, const runtime_tensor* c, mm_geom* g) {
  memset(g, 0, sizeof *g);
  bool am = a->rank >= 2, bn = b->rank >= 2;
  if (a->rank < 1 || b->rank < 1)
    return PTC_ERR(INTERNAL, "cpu backend: matmul of rank-0 operands");
  g->m = am ? a->shape[a->rank - 2] : 1;
  g->k = a->shape[a->rank - 1];
  g->n = bn ? b->shape[b->rank - 1] : 1;
  int64_t kb = b->shape[bn ? b->rank - 2 : 0];
  g->nb = c->rank - (int32_t)am - (int32_t)bn;
  if (kb != g->k || g->nb < 0)
    return PTC_ERR(INTERNAL, "cpu backend: matmul operand shapes do not match (k %lld vs %lld)",
                   (long long)g->k, (long long)kb);
  g->a_sm = am ? a->strides[a->rank - 2] : 0;
  g->a_sk = a->strides[a->rank - 1];
  g->b_sk = b->strides[bn ? b->rank - 2 : 0];
  g->b_sn = bn ? b->strides[b->rank - 1] : 0;
  g->c_sm = am ? c->strides[g->nb] : 0;
  g->c_sn = bn ? c->strides[c->rank - 1] : 0;
  for (int32_t i = 0; i < g->nb; i++) {
    g->batch[i] = c->shape[i];
    g->c_bs[i] = c->strides[i];
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

typedef struct mm_ptrs {
  const runtime_tensor *a, *b, *bias, *c;
  double alpha, beta;
  int32_t act;
} mm_ptrs;

/* c[i, j] = act(c[i, j] + beta * bias[i, j]) for one batch entry. */
static void epilogue(const mm_geom* g, const mm_ptrs* p, int64_t c_off, int64_t d_off) {
  int32_t dt = p->c->dtype;
  for (int64_t i = 0; i < g->m; i++)
    for (int64_t j = 0; j < g->n; j++) {
      int64_t co = c_off + i * g->c_sm + j * g->c_sn;
      double v = cpu_elem_load(dt, p->c->data, co);
      if (g->has_bias)
        v += p->beta * cpu_elem_load(p->bias->dtype, p->bias->data, d_off + i * g->d_sm + j * g->d_sn);
      cpu_elem_store(dt, p->c->data, co, cpu_activate(p->act, v));
    }
}

static void zero_block(const mm_geom* g, const mm_ptrs* p, int64_t c_off) {
  for (int64_t i = 0; i < g->m; i++)
    for (int64_t j = 0; j < g->n; j++)
      cpu_elem_store(p->c->dtype, p->c->data, c_off + i * g->c_sm + j * g->c_sn, 0.0);
}

/* Element offsets of every batch entry: off[0..4) = a, b, c, bias arrays. */
typedef struct mm_batch {
  int64_t count;
  int64_t* off[4];
} mm_batch;

static ptc_status batch_offsets(const mm_geom* g, mm_batch* bt) {
  bt->count = 1;
  for (int32_t i = 0; i < g->nb; i++) bt->count *= g->batch[i];
  int64_t* mem = malloc((size_t)(bt->count * 4 + 1) * sizeof *mem);
  if (!mem) return ptc_status_oom();
  for (int k = 0; k < 4; k++) bt->off[k] = mem + k * bt->count;
  int64_t idx[PTC_MAX_RANK] = {0};
  for (int64_t e = 0; e < bt->count; e++) {
    int64_t o[4] = {0, 0, 0, 0};
    for (int32_t i = 0; i < g->nb; i++) {
      o[0] += idx[i] * g->a_bs[i];
      o[1] += idx[i] * g->b_bs[i];
      o[2] += idx[i] * g->c_bs[i];
      o[3] += idx[i] * g->d_bs[i];
    }
    for (int k = 0; k < 4; k++) bt->off[k][e] = o[k];
    cpu_next_index(g->nb, g->batch, idx);
  }
  return PTC_OK;
}

/* All entries through the batched GEMM (f32 / f64); the bias and the
 * activation go into its epilogue when the bias is per column. */
static void gemm_batch(const mm_geom* g, const mm_ptrs* p, const mm_batch* bt, bool fused) {
  const void* bias = fused && g->has_bias ? p->bias->data : NULL;
  const int64_t* bias_off = bias ? bt->off[3] : NULL;
  int32_t act = fused ? p->act : IR_ACT_NONE;
  if (p->c->dtype == PTC_F32)
    cpu_gemm_batch_f32(bt->count, bt->off[0], bt->off[1], bias_off, bt->off[2], g->m, g->n, g->k,
                       (float)p->alpha, p->a->data, g->a_sm, g->a_sk, p->b->data, g->b_sk, g->b_sn,
                       (float)p->beta, bias, g->d_sn, p->c->data, g->c_sm, g->c_sn, act);
  else
    cpu_gemm_batch_f64(bt->count, bt->off[0], bt->off[1], bias_off, bt->off[2], g->m, g->n, g->k,
                       p->alpha, p->a->data, g->a_sm, g->a_sk, p->b->data, g->b_sk, g->b_sn,
                       p->beta, bias, g->d_sn, p->c->data, g->c_sm, g->c_sn, act);
}

static ptc_status mm_run(const mm_ptrs* p) {
  mm_geom g;
  PTC_TRY(mm_geometry(p->a, p->b, p->bias, p->c, &g));
  if (g.m == 0 || g.n == 0) return PTC_OK;
  for (int32_t i = 0; i < g.nb; i++)
    if (g.batch[i] == 0) return PTC_OK;
  mm_batch bt = {0, {NULL, NULL, NULL, NULL}};
  PTC_TRY(batch_offsets(&g, &bt));
  bool fused = g.k > 0 && (!g.has_bias || g.d_sm == 0); /* bias per column */
  if (g.k > 0) gemm_batch(&g, p, &bt, fused);
  for (int64_t e = 0; e < bt.count && !fused; e++) {
    if (g.k == 0) zero_block(&g, p, bt.off[2][e]);
    epilogue(&g, p, bt.off[2][e], bt.off[3][e]);
  }
  free(bt.off[0]);
  return PTC_OK;
}

/* f16 / bf16: every operand converted to f32, result converted back. */
static ptc_status mm_half(ptc_context* ctx, const mm_ptrs* p) {
  cpu_temp t[4];
  memset(t, 0, sizeof t);
  ptc_status s = cpu_temp_convert(ctx, p->a, PTC_F32, &t[0]);
  if (!s) s = cpu_temp_convert(ctx, p->b, PTC_F32, &t[1]);
  if (!s && p->bias) s = cpu_temp_convert(ctx, p->bias, PTC_F32, &t[2]);
  if (!s) s = cpu_temp_like(ctx, p->c, PTC_F32, &t[3]);
  if (!s) {
    mm_ptrs q = *p;
    q.a = &t[0].view;
    q.b = &t[1].view;
    q.bias = p->bias ? &t[2].view : NULL;
    q.c = &t[3].view;
    s = mm_run(&q);
    if (!s) cpu_convert(&t[3].view, p->c);
  }
  for (int i = 0; i < 4; i++) cpu_temp_free(&t[i]);
  return s;
}

ptc_status cpu_ext_matmul(const cpu_ext_call* c) {
  const ir_extern* e = c->ext;
  if (e->n_in < 2 || e->n_out != 1)
    return PTC_ERR(INTERNAL, "cpu backend: matmul extern with %u inputs, %u outputs", e->n_in,
                   e->n_out);
  if (!cpu_activation_valid(e->activation))
    return PTC_ERR(INTERNAL, "cpu backend: matmul: unknown activation %d", (int)e->activation);
  mm_ptrs p = {&c->in[0], &c->in[1], e->n_in > 2 && e->in[2] >= 0 ? &c->in[2] : NULL, &c->out[0],
               e->alpha, e->beta, e->activation};
  int32_t dt = p.c->dtype;
  if (p.a->dtype != dt || p.b->dtype != dt)
    return PTC_ERR(INTERNAL, "cpu backend: matmul operands of mixed dtypes");
  if (dt == PTC_F32 || dt == PTC_F64) return mm_run(&p);
  if (dt == PTC_F16 || dt == PTC_BF16) return mm_half(c->ctx, &p);
  return PTC_ERR(UNIMPLEMENTED, "cpu backend: matmul of %s tensors (floating types only)",
                 ptc_dtype_name(dt));
}
