/* cuda_blaslt.c - the matmul extern through cuBLASLt (opened at run time,
 * cuda_loader.c; not used when the environment has PTC_CUDA_BLASLT=0) when
 * the operands fit its model, else the caller falls back to the
 * tensor-core or the support GEMM. cuBLASLt is column-major; a C with unit column
 * stride is computed as C^T = B^T A^T, one with unit row stride as C = A B;
 * each operand must then have a unit stride in one of its dims (op N or T)
 * and a leading dimension covering the other; batch dims must collapse into
 * one uniform stride per operand (0 = an input shared by all entries; a
 * shared B whose A and C entries follow each other row after row is folded
 * into one GEMM of m * count rows). Epilogues used: bias (a vector
 * along C's last dim for the C^T form, along its rows for the C form, with
 * beta = 1) and relu; the caller (cuda_ext.c) runs other activations
 * (cuBLASLt's GELU is the tanh approximation) as a pass over C after it. f32 uses CUBLAS_COMPUTE_32F (no
 * TF32, PyTorch's default "highest" precision), or CUBLAS_COMPUTE_32F_FAST_TF32
 * when the call allows TF32 (c->tf32: matmul_precision / conv_precision
 * "high" or "medium"), f16/bf16 accumulate in f32,
 * f64 in f64. The heuristic's algorithm choice is cached per descriptor and
 * layouts (no cublasLtMatmulAlgoGetHeuristic call per run). */
#include "cuda_plan.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* enum values of the public cuBLAS / cuBLASLt ABI */
enum {
  LT_COMPUTE_32F = 68, LT_COMPUTE_64F = 70, LT_COMPUTE_32F_FAST_TF32 = 77,
  LT_R_32F = 0, LT_R_64F = 1, LT_R_16F = 2, LT_R_16BF = 14,
  LT_OP_N = 0, LT_OP_T = 1,
  LT_DESC_TRANSA = 3, LT_DESC_TRANSB = 4, LT_DESC_EPILOGUE = 7, LT_DESC_BIAS_POINTER = 8,
  LT_LAYOUT_BATCH_COUNT = 5, LT_LAYOUT_BATCH_STRIDE = 6,
  LT_PREF_MAX_WORKSPACE = 1,
  LT_EPI_DEFAULT = 1, LT_EPI_RELU = 2, LT_EPI_BIAS = 4
};

#define LT_WORKSPACE ((size_t)32 << 20)

static pthread_once_t handle_once = PTHREAD_ONCE_INIT;
static cublaslt_handle handle;

/* PTC_CUDA_BLASLT=0: cuBLASLt is not used (the generated GEMMs run). */
static void create_handle(void) {
  const cuda_libs* L = cuda_libs_get();
  const char* env = getenv("PTC_CUDA_BLASLT");
  if (env && !strcmp(env, "0")) return;
  if (L->have_lt && L->lt.Create(&handle) != 0) handle = NULL;
}

/* One operand in column-major terms: rows x cols, element (r, c) at r*sr + c*sc. */
typedef struct lt_mat {
  int64_t rows, cols, sr, sc;
  int op;                       /* LT_OP_N / LT_OP_T */
  uint64_t lrows, lcols;        /* the stored layout */
  int64_t ld;
} lt_mat;

static bool fit(lt_mat* m) {
  if (m->rows < 1 || m->cols < 1) return false;
  if (m->sr == 1 || m->rows == 1) {
    m->op = LT_OP_N;
    m->lrows = (uint64_t)m->rows;
    m->lcols = (uint64_t)m->cols;
    m->ld = m->cols == 1 ? m->rows : m->sc;
    return m->ld >= m->rows;
  }
  if (m->sc == 1 || m->cols == 1) {
    m->op = LT_OP_T;
    m->lrows = (uint64_t)m->cols;
    m->lcols = (uint64_t)m->rows;
    m->ld = m->rows == 1 ? m->cols : m->sr;
    return m->ld >= m->cols;
  }
  return false;
}

/* One stride for all batch dims (0 when there is one entry or the operand
 * is broadcast over all of them, which only inputs may be: `bcast_ok`);
 * false when they do not collapse. */
static bool batch_stride(const cuda_mm_args* g, const int64_t* bs, bool bcast_ok, int64_t* out) {
  int64_t stride = 0, expect = 0;
  bool seen = false;
  for (int32_t d = g->nb - 1; d >= 0; d--) {
    if (g->batch[d] == 1) continue;
    if (!seen) {
      stride = bs[d];
      seen = true;
    } else if (bs[d] != expect) {
      return false;
    }
    expect = bs[d] * g->batch[d];
  }
  *out = stride;
  return !seen || stride > 0 || (bcast_ok && stride == 0);
}

typedef struct lt_plan {
  lt_mat x, y, d;
  const cu_deviceptr* px;
  const cu_deviceptr* py;
  int64_t sx, sy, sd;    /* batch strides */
  int epilogue;
} lt_plan;

static bool plan_of(const cuda_mm_args* g, const cu_deviceptr* pa, const cu_deviceptr* pb,
                    lt_plan* lp) {
  memset(lp, 0, sizeof *lp);
  int64_t sa, sb, sc;
  if (!batch_stride(g, g->a_bs, true, &sa) || !batch_stride(g, g->b_bs, true, &sb) ||
      !batch_stride(g, g->c_bs, false, &sc))
    return false;
  for (int32_t d = 0; d < g->nb; d++)
    if (g->has_bias && g->d_bs[d] != 0 && g->batch[d] != 1) return false;
  bool tform = g->c_sn == 1 || g->n == 1;
  if (tform) { /* C^T (n x m) = B^T (n x k) A^T (k x m) */
    lp->x = (lt_mat){g->n, g->k, g->b_sn, g->b_sk, 0, 0, 0, 0};
    lp->y = (lt_mat){g->k, g->m, g->a_sk, g->a_sm, 0, 0, 0, 0};
    lp->d = (lt_mat){g->n, g->m, g->c_sn, g->c_sm, 0, 0, 0, 0};
    lp->px = pb;
    lp->py = pa;
    lp->sx = sb;
    lp->sy = sa;
    if (g->has_bias && !(g->d_sm == 0 && (g->d_sn == 1 || g->n == 1))) return false;
  } else { /* C (m x n) = A (m x k) B (k x n) */
    lp->x = (lt_mat){g->m, g->k, g->a_sm, g->a_sk, 0, 0, 0, 0};
    lp->y = (lt_mat){g->k, g->n, g->b_sk, g->b_sn, 0, 0, 0, 0};
    lp->d = (lt_mat){g->m, g->n, g->c_sm, g->c_sn, 0, 0, 0, 0};
    lp->px = pa;
    lp->py = pb;
    lp->sx = sa;
    lp->sy = sb;
    if (g->has_bias && !(g->d_sn == 0 && (g->d_sm == 1 || g->m == 1))) return false;
  }
  lp->sd = sc;
  if (!fit(&lp->x) || !fit(&lp->y) || !fit(&lp->d) || lp->d.op != LT_OP_N) return false;
  lp->epilogue = (g->act == IR_ACT_RELU ? LT_EPI_RELU : 0) | (g->has_bias ? LT_EPI_BIAS : 0);
  if (!lp->epilogue) lp->epilogue = LT_EPI_DEFAULT;
  return true;
}

/* A batched product whose B is the same matrix for every entry and whose A
 * and C entries follow each other row after row (x[b, s, k] @ w[k, n]) as
 * one GEMM with m * count rows; false when it is not one. */
static bool fold_batch(const cuda_mm_args* g, cuda_mm_args* f) {
  int64_t sa, sb, sc;
  if (!batch_stride(g, g->a_bs, true, &sa) || !batch_stride(g, g->b_bs, true, &sb) ||
      !batch_stride(g, g->c_bs, false, &sc))
    return false;
  if (sb != 0 || g->m < 1 || sa != g->m * g->a_sm || sc != g->m * g->c_sm) return false;
  if (g->has_bias && g->d_sm != 0) return false;
  for (int32_t d = 0; d < g->nb; d++)
    if (g->has_bias && g->d_bs[d] != 0 && g->batch[d] != 1) return false;
  int64_t count = 1;
  for (int32_t d = 0; d < g->nb; d++) count *= g->batch[d];
  *f = *g;
  f->m = g->m * count;
  f->nb = 0;
  return true;
}

static int lt_type(int32_t dt) {
  switch (dt) {
    case PTC_F32: return LT_R_32F;
    case PTC_F64: return LT_R_64F;
    case PTC_F16: return LT_R_16F;
    case PTC_BF16: return LT_R_16BF;
    default: return -1;
  }
}

typedef struct lt_objs {
  cublaslt_matmul_desc desc;
  cublaslt_layout lx, ly, ld;
  cublaslt_pref pref;
} lt_objs;

static void objs_free(const cublaslt_api* lt, lt_objs* o) {
  if (o->pref) lt->PreferenceDestroy(o->pref);
  if (o->lx) lt->MatrixLayoutDestroy(o->lx);
  if (o->ly) lt->MatrixLayoutDestroy(o->ly);
  if (o->ld) lt->MatrixLayoutDestroy(o->ld);
  if (o->desc) lt->MatmulDescDestroy(o->desc);
}

static bool make_layout(const cublaslt_api* lt, const lt_mat* m, int type, int64_t count,
                        int64_t stride, cublaslt_layout* out) {
  if (lt->MatrixLayoutCreate(out, type, m->lrows, m->lcols, m->ld) != 0) return false;
  if (count <= 1) return true;
  int32_t c32 = (int32_t)count;
  return lt->MatrixLayoutSetAttribute(*out, LT_LAYOUT_BATCH_COUNT, &c32, sizeof c32) == 0 &&
         lt->MatrixLayoutSetAttribute(*out, LT_LAYOUT_BATCH_STRIDE, &stride, sizeof stride) == 0;
}

/* ---- heuristic cache -----------------------------------------------------------
 * cublasLtMatmulAlgoGetHeuristic costs host time on every call (a model
 * runs dozens of GEMMs per step); its answer depends only on the
 * descriptor and layouts, so it is kept per (types, ops, epilogue, layouts,
 * batch) in a small process-wide table (round-robin replacement). The
 * descriptor and the three layouts are kept with it (about a dozen
 * cuBLASLt create/set/destroy calls less per GEMM): a call finding its
 * entry sets the bias pointer and calls cublasLtMatmul with the table's
 * lock held (the descriptor is shared). */
typedef struct lt_key {
  int32_t type, compute, ta, tb;
  uint32_t epi, used;
  uint64_t rows[3], cols[3];
  int64_t ld[3], stride[3];
  int64_t count;
} lt_key;

typedef struct lt_entry {
  lt_key key;
  cublaslt_heuristic h;
  lt_objs o; /* descriptor and layouts, owned by the table (pref unused) */
} lt_entry;

#define LT_CACHE 128
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static lt_entry cache[LT_CACHE];
static size_t cache_next;

static void key_of(const lt_plan* lp, int type, int compute, uint32_t epi, int64_t count,
                   lt_key* k) {
  memset(k, 0, sizeof *k);
  k->type = type;
  k->compute = compute;
  k->ta = lp->x.op;
  k->tb = lp->y.op;
  k->epi = epi;
  k->used = 1;
  const lt_mat* m[3] = {&lp->x, &lp->y, &lp->d};
  const int64_t st[3] = {lp->sx, lp->sy, lp->sd};
  for (int i = 0; i < 3; i++) {
    k->rows[i] = m[i]->lrows;
    k->cols[i] = m[i]->lcols;
    k->ld[i] = m[i]->ld;
    k->stride[i] = count > 1 ? st[i] : 0;
  }
  k->count = count;
}

/* The entry of key k or NULL; cache_lock held by the caller. */
static lt_entry* cache_find_locked(const lt_key* k) {
  for (size_t i = 0; i < LT_CACHE; i++)
    if (cache[i].key.used && memcmp(&cache[i].key, k, sizeof *k) == 0) return &cache[i];
  return NULL;
}

/* Keeps (k, h) and takes o's descriptor and layouts (o is emptied); the
 * entry replaced frees its objects. */
static void cache_put(const cublaslt_api* lt, const lt_key* k, const cublaslt_heuristic* h,
                      lt_objs* o) {
  pthread_mutex_lock(&cache_lock);
  if (!cache_find_locked(k)) { /* another thread may have put it meanwhile */
    lt_entry* e = &cache[cache_next++ % LT_CACHE];
    objs_free(lt, &e->o);
    e->key = *k;
    e->h = *h;
    e->o = *o;
    e->o.pref = NULL;
    o->desc = NULL;
    o->lx = o->ly = o->ld = NULL;
  }
  pthread_mutex_unlock(&cache_lock);
}

ptc_status cuda_blaslt_matmul(const cuda_ext_call* c, const cuda_mm_args* g, int64_t count,
                              int32_t dtype, cu_deviceptr pa, cu_deviceptr pb, cu_deviceptr pbias,
                              cu_deviceptr pc, bool* done) {
  *done = false;
  const cuda_libs* L = cuda_libs_get();
  if (!L->have_lt || g->k < 1 || count > INT32_MAX) return PTC_OK;
  if (g->act != IR_ACT_NONE && g->act != IR_ACT_RELU) return PTC_OK;
  if (g->has_bias && g->beta != 1.0) return PTC_OK;
  int type = lt_type(dtype);
  cuda_mm_args fold;
  if (count > 1 && fold_batch(g, &fold)) { /* B shared by all entries: one GEMM of m * count rows */
    g = &fold;
    count = 1;
  }
  lt_plan lp;
  if (type < 0 || !plan_of(g, &pa, &pb, &lp)) return PTC_OK;
  pthread_once(&handle_once, create_handle);
  if (!handle) return PTC_OK;
  const cublaslt_api* lt = &L->lt;
  bool f64 = dtype == PTC_F64;
  lt_objs o;
  memset(&o, 0, sizeof o);
  int32_t ta = lp.x.op, tb = lp.y.op;
  uint32_t epi = (uint32_t)lp.epilogue;
  int compute = f64 ? LT_COMPUTE_64F
                : dtype == PTC_F32 && c->tf32 ? LT_COMPUTE_32F_FAST_TF32 : LT_COMPUTE_32F;
  float af = (float)g->alpha, bf = 0.0f;
  double ad = g->alpha, bd = 0.0;
  const void* alpha = f64 ? (const void*)&ad : (const void*)&af;
  const void* beta = f64 ? (const void*)&bd : (const void*)&bf;
  void* dp = (void*)(uintptr_t)pc;
  lt_key key;
  key_of(&lp, type, compute, epi, count, &key);
  pthread_mutex_lock(&cache_lock);
  const lt_entry* e = cache_find_locked(&key);
  if (e) { /* the kept descriptor, layouts and algorithm: only the bias pointer changes */
    const void* bp = (const void*)(uintptr_t)pbias;
    bool set = !g->has_bias ||
               lt->MatmulDescSetAttribute(e->o.desc, LT_DESC_BIAS_POINTER, &bp, sizeof bp) == 0;
    cu_deviceptr ws = 0;
    ptc_status s = set && e->h.workspace_size ? cuda_alloc(e->h.workspace_size, c->stream, &ws)
                                              : PTC_OK;
    if (set && !s) {
      int r = lt->Matmul(handle, e->o.desc, alpha, (const void*)(uintptr_t)*lp.px, e->o.lx,
                         (const void*)(uintptr_t)*lp.py, e->o.ly, beta, dp, e->o.ld, dp, e->o.ld,
                         e->h.algo, (void*)(uintptr_t)ws, e->h.workspace_size, c->stream);
      if (r != 0)
        s = PTC_ERR(INTERNAL, "cuda backend: cublasLtMatmul failed with status %d", r);
      else
        *done = true;
    }
    pthread_mutex_unlock(&cache_lock);
    cuda_free(ws);
    return s;
  }
  pthread_mutex_unlock(&cache_lock);
  bool ok = lt->MatmulDescCreate(&o.desc, compute, f64 ? LT_R_64F : LT_R_32F) == 0 &&
            lt->MatmulDescSetAttribute(o.desc, LT_DESC_TRANSA, &ta, sizeof ta) == 0 &&
            lt->MatmulDescSetAttribute(o.desc, LT_DESC_TRANSB, &tb, sizeof tb) == 0 &&
            lt->MatmulDescSetAttribute(o.desc, LT_DESC_EPILOGUE, &epi, sizeof epi) == 0;
  if (ok && g->has_bias) {
    const void* bp = (const void*)(uintptr_t)pbias;
    ok = lt->MatmulDescSetAttribute(o.desc, LT_DESC_BIAS_POINTER, &bp, sizeof bp) == 0;
  }
  ok = ok && make_layout(lt, &lp.x, type, count, lp.sx, &o.lx) &&
       make_layout(lt, &lp.y, type, count, lp.sy, &o.ly) &&
       make_layout(lt, &lp.d, type, count, lp.sd, &o.ld);
  cublaslt_heuristic h;
  memset(&h, 0, sizeof h);
  if (ok) {
    size_t ws_max = LT_WORKSPACE;
    int n_ret = 0;
    ok = lt->PreferenceCreate(&o.pref) == 0 &&
         lt->PreferenceSetAttribute(o.pref, LT_PREF_MAX_WORKSPACE, &ws_max, sizeof ws_max) == 0 &&
         lt->AlgoGetHeuristic(handle, o.desc, o.lx, o.ly, o.ld, o.ld, o.pref, 1, &h, &n_ret) == 0 &&
         n_ret > 0;
  }
  cu_deviceptr ws = 0;
  ptc_status s = PTC_OK;
  if (ok && h.workspace_size) s = cuda_alloc(h.workspace_size, c->stream, &ws);
  if (ok && !s) {
    int r = lt->Matmul(handle, o.desc, alpha, (const void*)(uintptr_t)*lp.px, o.lx,
                       (const void*)(uintptr_t)*lp.py, o.ly, beta, dp, o.ld, dp, o.ld, h.algo,
                       (void*)(uintptr_t)ws, h.workspace_size, c->stream);
    if (r != 0)
      s = PTC_ERR(INTERNAL, "cuda backend: cublasLtMatmul failed with status %d", r);
    else
      *done = true;
  }
  cuda_free(ws);
  if (*done) cache_put(lt, &key, &h, &o); /* takes the descriptor and layouts */
  objs_free(lt, &o);
  return s;
}
