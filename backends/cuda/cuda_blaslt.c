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
 * f64 in f64. The algorithm choice is cached per descriptor and layouts
 * (no cublasLtMatmulAlgoGetHeuristic call per run).
 *
 * Algorithm tuning: on the first call of a key (types, compute, ops,
 * epilogue, layouts, batch) whose GEMM has at least
 * PTC_CUDA_GEMM_TUNE_MIN_MFLOP (default 100) MFLOP, cuBLASLt is asked for
 * PTC_CUDA_GEMM_TUNE (default 8; 0 or 1: off) heuristic candidates, each is
 * timed with CUDA events on the call's stream into a scratch output (the
 * stream is waited for once), and the fastest is kept in the cache and on
 * disk (<cache>/cuda/<key>.lttune, so a later process does not time it
 * again). Never during stream capture (the top heuristic then, timed on a
 * later call outside capture). Besides the heuristic's list: the top
 * heuristic's algorithm with each other tile it supports (split-K 1;
 * PTC_CUDA_GEMM_TUNE_TILES=0: not), and with PTC_CUDA_GEMM_TUNE_SPLITK=1
 * split-K 2..4 variants of the top two (off by default: never faster on
 * the H100 shapes measured). PTC_CUDA_GEMM_TUNE_LOG=1 prints every
 * candidate's time to stderr (debugging); the choice is logged at INFO. */
#include "cuda_blaslt.h"

#include "../../lib/runtime/kcache.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
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
  LT_EPI_DEFAULT = 1, LT_EPI_RELU = 2, LT_EPI_BIAS = 4,
  LT_CFG_ID = 0, LT_CFG_TILE_ID = 1, LT_CFG_SPLITK_NUM = 2, LT_CFG_REDUCTION_SCHEME = 3,
  LT_CFG_CTA_SWIZZLING = 4, LT_CFG_STAGES_ID = 6,
  LT_REDUCE_NONE = 0, LT_REDUCE_COMPUTE_TYPE = 2,
  LT_CAP_TILE_IDS = 6
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

static bool make_desc(const cublaslt_api* lt, int compute, bool f64, int32_t ta, int32_t tb,
                      uint32_t epi, bool has_bias, cu_deviceptr pbias, cublaslt_matmul_desc* out) {
  *out = NULL;
  bool ok = lt->MatmulDescCreate(out, compute, f64 ? LT_R_64F : LT_R_32F) == 0 &&
            lt->MatmulDescSetAttribute(*out, LT_DESC_TRANSA, &ta, sizeof ta) == 0 &&
            lt->MatmulDescSetAttribute(*out, LT_DESC_TRANSB, &tb, sizeof tb) == 0 &&
            lt->MatmulDescSetAttribute(*out, LT_DESC_EPILOGUE, &epi, sizeof epi) == 0;
  if (ok && has_bias) {
    const void* bp = (const void*)(uintptr_t)pbias;
    ok = lt->MatmulDescSetAttribute(*out, LT_DESC_BIAS_POINTER, &bp, sizeof bp) == 0;
  }
  if (!ok && *out) {
    lt->MatmulDescDestroy(*out);
    *out = NULL;
  }
  return ok;
}

/* ---- optional entry points (tuning) ------------------------------------------------
 * Resolved here from the libraries the loader already opened (dlopen with
 * RTLD_NOLOAD, as cuda_tune.c does), so that the loader's tables stay as
 * they are: cuEventElapsedTime, and cuBLASLt's algorithm config set/get,
 * algorithm check (split-K variants) and version (the disk key). Absent
 * ones turn the feature they serve off. */
typedef struct lt_extra {
  cublas_status (*CfgSet)(void* algo, int attr, const void* buf, size_t n);
  cublas_status (*CfgGet)(const void* algo, int attr, void* buf, size_t n, size_t* written);
  cublas_status (*Check)(cublaslt_handle h, cublaslt_matmul_desc d, cublaslt_layout a,
                         cublaslt_layout b, cublaslt_layout c, cublaslt_layout dl,
                         const void* algo, cublaslt_heuristic* res);
  cublas_status (*CapGet)(const void* algo, int attr, void* buf, size_t n, size_t* written);
  size_t (*Version)(void);
  cu_result (*Elapsed)(float* ms, cu_event e0, cu_event e1);
} lt_extra;

static lt_extra X;
static pthread_once_t x_once = PTHREAD_ONCE_INIT;

static void x_load(void) {
  static const char* names[] = {"libcublasLt.so.13", "libcublasLt.so.12",
                                "/usr/local/cuda/lib64/libcublasLt.so.13",
                                "/usr/local/cuda/lib64/libcublasLt.so.12"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void* h = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD);
    if (!h) continue;
    *(void**)&X.CfgSet = dlsym(h, "cublasLtMatmulAlgoConfigSetAttribute");
    *(void**)&X.CfgGet = dlsym(h, "cublasLtMatmulAlgoConfigGetAttribute");
    *(void**)&X.Check = dlsym(h, "cublasLtMatmulAlgoCheck");
    *(void**)&X.CapGet = dlsym(h, "cublasLtMatmulAlgoCapGetAttribute");
    *(void**)&X.Version = dlsym(h, "cublasLtGetVersion");
    break; /* the handles stay open for the process, as the loader's do */
  }
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (cu) *(void**)&X.Elapsed = dlsym(cu, "cuEventElapsedTime");
}

/* ---- knobs -------------------------------------------------------------------------- */

#define LT_TUNE_DEFAULT 8     /* heuristic candidates timed per key */
#define LT_TUNE_MAX 32
#define LT_TUNE_MIN_MFLOP 100.0
#define LT_TUNE_REPS 3        /* timed runs per candidate and round (after one warm-up) */
#define LT_TUNE_ROUNDS 2      /* each candidate's time: the least of its rounds */
#define LT_SPLITK_MAX 3       /* split-K variants (2, 3, 4) of the top heuristics ... */
#define LT_SPLITK_BASES 2     /* ... of this many of them */
#define LT_TILE_MAX 24        /* tile variants of the top heuristic */

int cuda_blaslt_tune_count(void) {
  const char* e = getenv("PTC_CUDA_GEMM_TUNE");
  if (!e || !*e) return LT_TUNE_DEFAULT;
  char* end = NULL;
  long v = strtol(e, &end, 10);
  if (!end || *end) return LT_TUNE_DEFAULT;
  if (v <= 1) return 0;
  return v > LT_TUNE_MAX ? LT_TUNE_MAX : (int)v;
}

static double tune_min_flop(void) {
  const char* e = getenv("PTC_CUDA_GEMM_TUNE_MIN_MFLOP");
  char* end = NULL;
  double v = e && *e ? strtod(e, &end) : -1;
  return (end && !*end && v >= 0 ? v : LT_TUNE_MIN_MFLOP) * 1e6;
}

static bool env_on(const char* name) {
  const char* e = getenv(name);
  return e && *e && strcmp(e, "0") != 0;
}

static bool env_off(const char* name) {
  const char* e = getenv(name);
  return e && !strcmp(e, "0");
}

/* ---- heuristic cache -----------------------------------------------------------
 * cublasLtMatmulAlgoGetHeuristic costs host time on every call (a model
 * runs dozens of GEMMs per step); its answer depends only on the
 * descriptor and layouts, so it is kept per (types, ops, epilogue, layouts,
 * batch) in a small process-wide table (round-robin replacement of entries
 * no call is using). The descriptor and the three layouts are kept with it
 * (about a dozen cuBLASLt create/set/destroy calls less per GEMM). The lock
 * is held for lookup and insert only, never around cublasLtMatmul: a call
 * marks its entry in use (users; an entry in use is never replaced or
 * freed), and a call with a bias whose entry another call is using makes
 * its own descriptor (the bias pointer is set on the descriptor, which
 * cuBLASLt reads during the enqueue only). `tuned`: the algorithm was
 * chosen by timing (or read from the disk record of one); an entry put
 * during stream capture or with tuning off is not, and a later call with
 * tuning on (outside capture) times it then. */
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
  bool tuned;
  int users;
} lt_entry;

#define LT_CACHE 128
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static lt_entry cache[LT_CACHE];
static size_t cache_next;
static cuda_blaslt_stats stats; /* under cache_lock */

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
 * entry replaced (one no call is using) frees its objects. An entry of k
 * already there (another thread's, or an untuned one) only takes a tuned h
 * when nobody uses it; o then stays with the caller. */
static void cache_put(const cublaslt_api* lt, const lt_key* k, const cublaslt_heuristic* h,
                      bool tuned, lt_objs* o) {
  pthread_mutex_lock(&cache_lock);
  lt_entry* e = cache_find_locked(k);
  if (e) {
    if (tuned && !e->tuned && e->users == 0) {
      e->h = *h;
      e->tuned = true;
    }
  } else {
    for (size_t tries = 0; tries < LT_CACHE && !e; tries++) {
      lt_entry* c = &cache[cache_next++ % LT_CACHE];
      if (c->users == 0) e = c;
    }
    if (e) {
      objs_free(lt, &e->o);
      e->key = *k;
      e->h = *h;
      e->o = *o;
      e->o.pref = NULL;
      e->tuned = tuned;
      e->users = 0;
      o->desc = NULL;
      o->lx = o->ly = o->ld = NULL;
    }
  }
  pthread_mutex_unlock(&cache_lock);
}

void cuda_blaslt_get_stats(cuda_blaslt_stats* out) {
  pthread_mutex_lock(&cache_lock);
  *out = stats;
  pthread_mutex_unlock(&cache_lock);
}

void cuda_blaslt_forget(void) {
  const cuda_libs* L = cuda_libs_get();
  pthread_mutex_lock(&cache_lock);
  for (size_t i = 0; i < LT_CACHE; i++)
    if (cache[i].key.used && cache[i].users == 0) {
      if (L->have_lt) objs_free(&L->lt, &cache[i].o);
      memset(&cache[i], 0, sizeof cache[i]);
    }
  memset(&stats, 0, sizeof stats);
  pthread_mutex_unlock(&cache_lock);
}

/* What one GEMM call needs besides the cache. */
typedef struct lt_call {
  const cublaslt_api* lt;
  const cuda_ext_call* c;
  const cuda_mm_args* g;
  lt_plan lp;
  lt_key key;
  int type, compute;
  int32_t dtype;
  bool f64;
  uint32_t epi;
  cu_deviceptr pbias;
  const void* alpha;
  const void* beta;
} lt_call;

static ptc_status matmul_once(const lt_call* k, cublaslt_matmul_desc desc, const lt_objs* o,
                              const cublaslt_heuristic* h, cu_deviceptr pc, cu_deviceptr ws) {
  void* dp = (void*)(uintptr_t)pc;
  int r = k->lt->Matmul(handle, desc, k->alpha, (const void*)(uintptr_t)*k->lp.px, o->lx,
                        (const void*)(uintptr_t)*k->lp.py, o->ly, k->beta, dp, o->ld, dp, o->ld,
                        h->algo, (void*)(uintptr_t)ws, h->workspace_size, k->c->stream);
  return r ? PTC_ERR(INTERNAL, "cuda backend: cublasLtMatmul failed with status %d", r) : PTC_OK;
}

/* The cached entry's descriptor, layouts and algorithm, when there is an
 * entry (and it is tuned, unless allow_untuned); *done false otherwise. */
static ptc_status run_cached(const lt_call* k, cu_deviceptr pc, bool allow_untuned, bool* done) {
  const cublaslt_api* lt = k->lt;
  bool bias = k->g->has_bias;
  pthread_mutex_lock(&cache_lock);
  lt_entry* e = cache_find_locked(&k->key);
  if (!e || (!e->tuned && !allow_untuned)) {
    pthread_mutex_unlock(&cache_lock);
    return PTC_OK;
  }
  cublaslt_heuristic h = e->h;
  lt_objs o = e->o;
  bool own = bias && e->users > 0; /* the shared descriptor is someone else's right now */
  bool set = true;
  if (bias && !own) {
    const void* bp = (const void*)(uintptr_t)k->pbias;
    set = lt->MatmulDescSetAttribute(e->o.desc, LT_DESC_BIAS_POINTER, &bp, sizeof bp) == 0;
  }
  e->users++;
  stats.hits++;
  pthread_mutex_unlock(&cache_lock);
  cublaslt_matmul_desc tmp = NULL;
  if (own)
    set = make_desc(lt, k->compute, k->f64, k->lp.x.op, k->lp.y.op, k->epi, true, k->pbias, &tmp);
  cu_deviceptr ws = 0;
  ptc_status s = set ? PTC_OK
                     : PTC_ERR(INTERNAL, "cuda backend: setting the cuBLASLt bias pointer failed");
  if (!s && h.workspace_size) s = cuda_alloc(h.workspace_size, k->c->stream, &ws);
  if (!s) s = matmul_once(k, own ? tmp : o.desc, &o, &h, pc, ws);
  if (!s) *done = true;
  cuda_free(ws);
  if (tmp) lt->MatmulDescDestroy(tmp);
  pthread_mutex_lock(&cache_lock);
  e->users--;
  pthread_mutex_unlock(&cache_lock);
  return s;
}

/* Whether `v` (an algorithm config changed from a heuristic result) runs
 * for k within the workspace; fills its workspace size. */
static bool variant_ok(const lt_call* k, const lt_objs* o, cublaslt_heuristic* v) {
  cublaslt_heuristic res;
  memset(&res, 0, sizeof res);
  if (X.Check(handle, o->desc, o->lx, o->ly, o->ld, o->ld, v->algo, &res) != 0 ||
      res.workspace_size > LT_WORKSPACE)
    return false;
  v->workspace_size = res.workspace_size;
  v->waves_count = res.waves_count;
  return true;
}

static int32_t cfg_i32(const cublaslt_heuristic* h, int attr) {
  int32_t v = -1;
  size_t w = 0;
  return X.CfgGet && X.CfgGet(h->algo, attr, &v, sizeof v, &w) == 0 ? v : -1;
}

/* Candidates: up to n_req heuristic results (usable ones, cuBLASLt's order);
 * with variants & CUDA_BLASLT_VAR_TILES, the top result's algorithm with
 * each other tile it lists (split-K 1, same stages), and with
 * CUDA_BLASLT_VAR_SPLITK, split-K 2..4 variants of the top LT_SPLITK_BASES;
 * variants only where cublasLtMatmulAlgoCheck accepts them within the
 * workspace and no candidate has the same algorithm, tile and split-K.
 * Returns the number written to out (cap entries). */
static int candidates(const lt_call* k, const lt_objs* o, int n_req, int variants,
                      cublaslt_heuristic* out, int cap) {
  const cublaslt_api* lt = k->lt;
  size_t ws_max = LT_WORKSPACE;
  int n_ret = 0;
  cublaslt_pref pref = NULL;
  if (n_req > cap) n_req = cap;
  bool ok = lt->PreferenceCreate(&pref) == 0 &&
            lt->PreferenceSetAttribute(pref, LT_PREF_MAX_WORKSPACE, &ws_max, sizeof ws_max) == 0 &&
            lt->AlgoGetHeuristic(handle, o->desc, o->lx, o->ly, o->ld, o->ld, pref, n_req, out,
                                 &n_ret) == 0;
  if (pref) lt->PreferenceDestroy(pref);
  if (!ok || n_ret < 0) return 0;
  int n = 0;
  for (int i = 0; i < n_ret; i++)
    if (out[i].state == 0) out[n++] = out[i];
  if (!variants || !n || !X.CfgSet || !X.CfgGet || !X.Check) return n;
  int n_heur = n;
  uint32_t tiles[256];
  size_t w = 0;
  if ((variants & CUDA_BLASLT_VAR_TILES) && X.CapGet &&
      X.CapGet(out[0].algo, LT_CAP_TILE_IDS, tiles, sizeof tiles, &w) == 0) {
    int32_t id0 = cfg_i32(&out[0], LT_CFG_ID), added = 0;
    for (size_t t = 0; t < w / sizeof tiles[0] && n < cap && added < LT_TILE_MAX; t++) {
      bool dup = tiles[t] == 0;
      for (int i = 0; i < n && !dup; i++)
        dup = cfg_i32(&out[i], LT_CFG_ID) == id0 && (uint32_t)cfg_i32(&out[i], LT_CFG_TILE_ID) == tiles[t] &&
              cfg_i32(&out[i], LT_CFG_SPLITK_NUM) <= 1;
      if (dup) continue;
      cublaslt_heuristic v = out[0];
      int32_t one = 1;
      uint32_t none = LT_REDUCE_NONE;
      if (X.CfgSet(v.algo, LT_CFG_TILE_ID, &tiles[t], sizeof tiles[t]) != 0 ||
          X.CfgSet(v.algo, LT_CFG_SPLITK_NUM, &one, sizeof one) != 0 ||
          X.CfgSet(v.algo, LT_CFG_REDUCTION_SCHEME, &none, sizeof none) != 0 || !variant_ok(k, o, &v))
        continue;
      out[n++] = v;
      added++;
    }
  }
  if (!(variants & CUDA_BLASLT_VAR_SPLITK)) return n;
  int bases = n_heur < LT_SPLITK_BASES ? n_heur : LT_SPLITK_BASES;
  for (int b = 0; b < bases; b++)
    for (int32_t sk = 2; sk <= 1 + LT_SPLITK_MAX && n < cap; sk++) {
      cublaslt_heuristic v = out[b];
      uint32_t scheme = LT_REDUCE_COMPUTE_TYPE;
      if (X.CfgSet(v.algo, LT_CFG_SPLITK_NUM, &sk, sizeof sk) != 0 ||
          X.CfgSet(v.algo, LT_CFG_REDUCTION_SCHEME, &scheme, sizeof scheme) != 0 ||
          !variant_ok(k, o, &v))
        continue;
      out[n++] = v;
    }
  return n;
}

/* Bytes of the output's storage range (elements (r, c) of every entry). */
static size_t out_bytes(const lt_plan* lp, int64_t count, size_t es) {
  int64_t last = (int64_t)(lp->d.lcols - 1) * lp->d.ld + (int64_t)lp->d.lrows;
  if (count > 1) last += (count - 1) * lp->sd;
  return (size_t)last * es;
}

static size_t dtype_bytes(int32_t dt) {
  return dt == PTC_F64 ? 8 : dt == PTC_F32 ? 4 : 2;
}

/* Times each candidate on the call's stream (one warm-up, then reps runs
 * between two events; the least of LT_TUNE_ROUNDS rounds) into a scratch
 * output, so the call's own output and inputs are untouched; ms[i] < 0 for
 * a candidate cublasLtMatmul refused. The stream is waited for. */
static ptc_status time_cands(const lt_call* k, const lt_objs* o, const cublaslt_heuristic* cand,
                             int n, int64_t count, int reps, int rounds, float* ms) {
  const cu_api* cu = &cuda_libs_get()->cu;
  size_t ws_max = 0;
  for (int i = 0; i < n; i++)
    if (cand[i].workspace_size > ws_max) ws_max = cand[i].workspace_size;
  cu_deviceptr scratch = 0, ws = 0;
  cu_event e0 = NULL, e1 = NULL;
  cu_stream st = k->c->stream;
  ptc_status s = cuda_alloc(out_bytes(&k->lp, count, dtype_bytes(k->dtype)), st, &scratch);
  if (!s && ws_max) s = cuda_alloc(ws_max, st, &ws);
  if (!s && (cu->EventCreate(&e0, 0) != CU_SUCCESS || cu->EventCreate(&e1, 0) != CU_SUCCESS))
    s = PTC_ERR(INTERNAL, "cuda backend: cannot create CUDA events for GEMM tuning");
  for (int i = 0; i < n; i++) ms[i] = -1;
  for (int r = 0; !s && r < rounds; r++)
    for (int i = 0; !s && i < n; i++) {
      if (r > 0 && ms[i] < 0) continue;
      ptc_status w = matmul_once(k, o->desc, o, &cand[i], scratch, ws);
      if (w) { /* this algorithm does not run here: not a candidate */
        ptc_status_destroy(w);
        continue;
      }
      if (cu->EventRecord(e0, st) != CU_SUCCESS) {
        s = PTC_ERR(INTERNAL, "cuda backend: recording a CUDA event failed (GEMM tuning)");
        break;
      }
      for (int j = 0; !s && j < reps; j++) s = matmul_once(k, o->desc, o, &cand[i], scratch, ws);
      float t = 0;
      if (!s && (cu->EventRecord(e1, st) != CU_SUCCESS || cu->EventSynchronize(e1) != CU_SUCCESS ||
                 X.Elapsed(&t, e0, e1) != CU_SUCCESS))
        s = PTC_ERR(INTERNAL, "cuda backend: timing a cuBLASLt algorithm failed");
      if (!s && (ms[i] < 0 || t / (float)reps < ms[i])) ms[i] = t / (float)reps;
    }
  if (e0) cu->EventDestroy(e0);
  if (e1) cu->EventDestroy(e1);
  cuda_free(ws);
  cuda_free(scratch);
  return s;
}

/* "algo 21 tile 128x128 stages 3 split-K 1 swizzle 0" (config get absent: "algo ?"). */
static void algo_text(const cublaslt_heuristic* h, char* out, size_t cap) {
  int32_t id = -1, sk = 1;
  uint32_t tile = 0, stages = 0, swz = 0;
  if (!X.CfgGet) {
    snprintf(out, cap, "algo ?");
    return;
  }
  size_t w = 0;
  X.CfgGet(h->algo, LT_CFG_ID, &id, sizeof id, &w);
  X.CfgGet(h->algo, LT_CFG_TILE_ID, &tile, sizeof tile, &w);
  X.CfgGet(h->algo, LT_CFG_STAGES_ID, &stages, sizeof stages, &w);
  X.CfgGet(h->algo, LT_CFG_SPLITK_NUM, &sk, sizeof sk, &w);
  X.CfgGet(h->algo, LT_CFG_CTA_SWIZZLING, &swz, sizeof swz, &w);
  /* cublasLtMatmulTile_t 11..35 (the tiles GEMMs of this size use) */
  static const char* tiles[] = {"32x32",   "32x64",   "64x32",   "32x128",  "64x64",
                                "128x32",  "64x128",  "128x64",  "64x256",  "128x128",
                                "256x64",  "64x512",  "128x256", "256x128", "512x64",
                                "64x96",   "96x64",   "96x128",  "128x160", "160x128",
                                "192x128", "128x192", "128x96",  "32x256",  "256x32"};
  char tt[24];
  if (tile >= 11 && tile < 11 + sizeof tiles / sizeof tiles[0])
    snprintf(tt, sizeof tt, "%s", tiles[tile - 11]);
  else
    snprintf(tt, sizeof tt, "#%u", tile);
  snprintf(out, cap, "algo %d tile %s stages %u split-K %d swizzle %u ws %zu", id, tt, stages, sk,
           swz, h->workspace_size);
}

/* ---- disk record of a timed choice ------------------------------------------------
 * <cache>/cuda/<key>.lttune holds "ptc-lt-tune-1 index I of N": the
 * position of the fastest candidate in this call's candidate list, which
 * the same cuBLASLt (its version is in the key) builds the same way on the
 * same device for the same key, so a later process takes it without
 * timing. Not used when the cache is disabled (PTC_CACHE=0). */
static bool disk_path(const lt_call* k, int n, int variants, char* out, size_t cap) {
  if (kcache_disabled()) return false;
  const cuda_device* d = k->c->plan ? k->c->plan->dev : cuda_device_get();
  if (!d) return false;
  char dev[192], ver[48], kt[512], cs[48];
  snprintf(dev, sizeof dev, "%s|sm_%d%d|%d SMs", d->name, d->cc_major, d->cc_minor, d->sm_count);
  snprintf(ver, sizeof ver, "cublasLt %zu", X.Version ? X.Version() : (size_t)0);
  const lt_key* y = &k->key;
  snprintf(kt, sizeof kt,
           "t%d c%d op%d%d e%u x%llux%llu/%lld/%lld y%llux%llu/%lld/%lld d%llux%llu/%lld/%lld n%lld",
           y->type, y->compute, y->ta, y->tb, y->epi, (unsigned long long)y->rows[0],
           (unsigned long long)y->cols[0], (long long)y->ld[0], (long long)y->stride[0],
           (unsigned long long)y->rows[1], (unsigned long long)y->cols[1], (long long)y->ld[1],
           (long long)y->stride[1], (unsigned long long)y->rows[2], (unsigned long long)y->cols[2],
           (long long)y->ld[2], (long long)y->stride[2], (long long)y->count);
  snprintf(cs, sizeof cs, "n=%d variants=%d", n, variants);
  const char* parts[] = {"ptc-cuda-lt-tune-1", dev, ver, kt, cs};
  char key[65];
  ptc_status s = kcache_key(parts, sizeof parts / sizeof parts[0], key);
  kcache_loc loc;
  if (!s) s = kcache_open("cuda", &loc);
  if (s) {
    ptc_status_destroy(s);
    return false;
  }
  return !loc.private_dir && kcache_path(&loc, key, ".lttune", out, cap);
}

static bool disk_get(const char* path, int n, int* idx) {
  char text[64];
  if (!kcache_read_text(path, text, sizeof text)) return false;
  int i = -1, of = -1;
  char tail = 0;
  if (sscanf(text, "ptc-lt-tune-1 index %d of %d%c", &i, &of, &tail) != 3 || tail != '\n' ||
      of != n || i < 0 || i >= n)
    return false;
  *idx = i;
  return true;
}

static void disk_put(const lt_call* k, const char* path, int idx, int n) {
  char text[64];
  snprintf(text, sizeof text, "ptc-lt-tune-1 index %d of %d\n", idx, n);
  ptc_status s = kcache_write_atomic(path, text, strlen(text));
  if (s) {
    if (k->c->plan)
      ptc_log(k->c->plan->ctx, PTC_LOG_WARN, "cuda backend: GEMM tuning choice not saved: %s",
              ptc_status_message(s));
    ptc_status_destroy(s);
  }
}

/* The fastest candidate; the top heuristic (0) unless another is at least
 * 1% faster (timing noise). */
static int pick(const float* ms, int n) {
  int best = ms[0] >= 0 ? 0 : -1;
  for (int i = 1; i < n; i++)
    if (ms[i] >= 0 && (best < 0 || ms[i] < ms[best])) best = i;
  if (best > 0 && ms[0] >= 0 && ms[best] > 0.99f * ms[0]) best = 0;
  return best < 0 ? 0 : best;
}

static bool stream_capturing(cu_stream s) {
  const cu_api* cu = &cuda_libs_get()->cu;
  if (!cu->StreamIsCapturing) return false;
  int st = 0;
  return cu->StreamIsCapturing(s, &st) != CU_SUCCESS || st != 0; /* unknown: as capturing */
}

/* Fills k for one call; false when cuBLASLt cannot take it (*g may be
 * replaced by its folded form: fold is the storage). */
static bool call_of(const cuda_ext_call* c, const cuda_mm_args** g, int64_t* count, int32_t dtype,
                    cu_deviceptr* pa, cu_deviceptr* pb, cu_deviceptr pbias, cuda_mm_args* fold,
                    float* af, double* ad, lt_call* k) {
  static const float zf = 0.0f;
  static const double zd = 0.0;
  const cuda_libs* L = cuda_libs_get();
  memset(k, 0, sizeof *k);
  if (!L->have_lt || (*g)->k < 1 || *count > INT32_MAX) return false;
  if ((*g)->act != IR_ACT_NONE && (*g)->act != IR_ACT_RELU) return false;
  if ((*g)->has_bias && (*g)->beta != 1.0) return false;
  k->type = lt_type(dtype);
  if (*count > 1 && fold_batch(*g, fold)) { /* B shared by all entries: one GEMM of m * count rows */
    *g = fold;
    *count = 1;
  }
  if (k->type < 0 || !plan_of(*g, pa, pb, &k->lp)) return false;
  pthread_once(&handle_once, create_handle);
  if (!handle) return false;
  k->lt = &L->lt;
  k->c = c;
  k->g = *g;
  k->dtype = dtype;
  k->f64 = dtype == PTC_F64;
  k->epi = (uint32_t)k->lp.epilogue;
  k->compute = k->f64 ? LT_COMPUTE_64F
               : dtype == PTC_F32 && c->tf32 ? LT_COMPUTE_32F_FAST_TF32 : LT_COMPUTE_32F;
  k->pbias = pbias;
  *af = (float)(*g)->alpha;
  *ad = (*g)->alpha;
  k->alpha = k->f64 ? (const void*)ad : (const void*)af;
  k->beta = k->f64 ? (const void*)&zd : (const void*)&zf;
  key_of(&k->lp, k->type, k->compute, k->epi, *count, &k->key);
  return true;
}

/* A fresh descriptor and layouts for k; false on a cuBLASLt error. */
static bool objs_make(const lt_call* k, int64_t count, lt_objs* o) {
  memset(o, 0, sizeof *o);
  return make_desc(k->lt, k->compute, k->f64, k->lp.x.op, k->lp.y.op, k->epi, k->g->has_bias,
                   k->pbias, &o->desc) &&
         make_layout(k->lt, &k->lp.x, k->type, count, k->lp.sx, &o->lx) &&
         make_layout(k->lt, &k->lp.y, k->type, count, k->lp.sy, &o->ly) &&
         make_layout(k->lt, &k->lp.d, k->type, count, k->lp.sd, &o->ld);
}

#define LT_CAND_CAP (LT_TUNE_MAX + LT_TILE_MAX + LT_SPLITK_BASES * LT_SPLITK_MAX)

ptc_status cuda_blaslt_matmul(const cuda_ext_call* c, const cuda_mm_args* g, int64_t count,
                              int32_t dtype, cu_deviceptr pa, cu_deviceptr pb, cu_deviceptr pbias,
                              cu_deviceptr pc, bool* done) {
  *done = false;
  cuda_mm_args fold;
  float af;
  double ad;
  lt_call k;
  if (!call_of(c, &g, &count, dtype, &pa, &pb, pbias, &fold, &af, &ad, &k)) return PTC_OK;
  int n_tune = cuda_blaslt_tune_count();
  double flop = 2.0 * (double)g->m * (double)g->n * (double)g->k * (double)count;
  bool want = n_tune > 1 && flop >= tune_min_flop();
  if (want) {
    pthread_once(&x_once, x_load);
    const cu_api* cu = &cuda_libs_get()->cu;
    want = X.Elapsed && cu->EventCreate && cu->EventRecord && cu->EventSynchronize &&
           cu->EventDestroy;
  }
  PTC_TRY(run_cached(&k, pc, !want, done));
  if (*done) return PTC_OK;
  bool capturing = want && stream_capturing(c->stream);
  if (capturing) { /* no timing inside a graph capture: an untuned entry, else the top heuristic */
    PTC_TRY(run_cached(&k, pc, true, done));
    if (*done) return PTC_OK;
  }
  bool tune = want && !capturing;
  int variants = !tune ? 0
                 : (env_on("PTC_CUDA_GEMM_TUNE_SPLITK") ? CUDA_BLASLT_VAR_SPLITK : 0) |
                       (env_off("PTC_CUDA_GEMM_TUNE_TILES") ? 0 : CUDA_BLASLT_VAR_TILES);
  const cublaslt_api* lt = k.lt;
  lt_objs o;
  cublaslt_heuristic cand[LT_CAND_CAP];
  memset(cand, 0, sizeof cand);
  int n = objs_make(&k, count, &o)
              ? candidates(&k, &o, tune ? n_tune : 1, variants, cand, LT_CAND_CAP)
              : 0;
  int best = 0;
  bool tuned = tune && n == 1;
  ptc_status s = PTC_OK;
  if (tune && n > 1) {
    char path[600];
    bool have_path = disk_path(&k, n, variants, path, sizeof path);
    if (have_path && disk_get(path, n, &best)) {
      tuned = true;
      pthread_mutex_lock(&cache_lock);
      stats.disk_hits++;
      pthread_mutex_unlock(&cache_lock);
    } else {
      float ms[LT_CAND_CAP];
      s = time_cands(&k, &o, cand, n, count, LT_TUNE_REPS, LT_TUNE_ROUNDS, ms);
      if (!s) {
        best = pick(ms, n);
        tuned = true;
        pthread_mutex_lock(&cache_lock);
        stats.timed_keys++;
        stats.timed_candidates += (uint64_t)n;
        pthread_mutex_unlock(&cache_lock);
        char t0[128], tb[128];
        algo_text(&cand[0], t0, sizeof t0);
        algo_text(&cand[best], tb, sizeof tb);
        if (c->plan)
          ptc_log(c->plan->ctx, PTC_LOG_INFO,
                  "cuda backend: GEMM %lldx%lldx%lld (x%lld, %s): cuBLASLt candidate %d of %d "
                  "(%s) %.1f us; top heuristic (%s) %.1f us",
                  (long long)g->m, (long long)g->n, (long long)g->k, (long long)count,
                  ptc_dtype_name(dtype), best, n, tb, 1e3 * ms[best], t0, 1e3 * ms[0]);
        if (env_on("PTC_CUDA_GEMM_TUNE_LOG"))
          for (int i = 0; i < n; i++) {
            algo_text(&cand[i], t0, sizeof t0);
            fprintf(stderr, "ptc gemm-tune %lldx%lldx%lld x%lld %s cand %d%s: %.2f us (%s)\n",
                    (long long)g->m, (long long)g->n, (long long)g->k, (long long)count,
                    ptc_dtype_name(dtype), i, i == best ? "*" : "", 1e3 * ms[i], t0);
          }
        if (have_path) disk_put(&k, path, best, n);
      }
    }
  }
  if (!s && n > 0) {
    cu_deviceptr ws = 0;
    if (cand[best].workspace_size) s = cuda_alloc(cand[best].workspace_size, c->stream, &ws);
    if (!s) s = matmul_once(&k, o.desc, &o, &cand[best], pc, ws);
    if (!s) *done = true;
    cuda_free(ws);
  }
  if (*done) cache_put(lt, &k.key, &cand[best], tuned, &o); /* takes the descriptor and layouts */
  objs_free(lt, &o);
  return s;
}

ptc_status cuda_blaslt_time_algos(const cuda_ext_call* c, const cuda_mm_args* g, int64_t count,
                                  int32_t dtype, cu_deviceptr pa, cu_deviceptr pb,
                                  cu_deviceptr pbias, int n_req, int variants, int reps,
                                  cuda_blaslt_algo_time* out, int cap, int* n_out) {
  *n_out = 0;
  cuda_mm_args fold;
  float af;
  double ad;
  lt_call k;
  if (!call_of(c, &g, &count, dtype, &pa, &pb, pbias, &fold, &af, &ad, &k)) return PTC_OK;
  pthread_once(&x_once, x_load);
  const cu_api* cu = &cuda_libs_get()->cu;
  if (!X.Elapsed || !cu->EventCreate || !cu->EventRecord || !cu->EventSynchronize)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: CUDA event timing is not available");
  if (n_req < 1) n_req = 1;
  if (n_req > LT_TUNE_MAX) n_req = LT_TUNE_MAX;
  lt_objs o;
  cublaslt_heuristic cand[LT_CAND_CAP];
  memset(cand, 0, sizeof cand);
  int n = objs_make(&k, count, &o) ? candidates(&k, &o, n_req, variants, cand, LT_CAND_CAP) : 0;
  float ms[LT_CAND_CAP];
  ptc_status s = n ? time_cands(&k, &o, cand, n, count, reps > 0 ? reps : LT_TUNE_REPS,
                                LT_TUNE_ROUNDS, ms)
                   : PTC_OK;
  for (int i = 0; !s && i < n && i < cap; i++) {
    cuda_blaslt_algo_time* t = &out[i];
    memset(t, 0, sizeof *t);
    t->index = i;
    t->ms = ms[i];
    t->workspace = cand[i].workspace_size;
    algo_text(&cand[i], t->text, sizeof t->text);
    if (X.CfgGet) {
      size_t w = 0;
      X.CfgGet(cand[i].algo, LT_CFG_ID, &t->algo_id, sizeof t->algo_id, &w);
      X.CfgGet(cand[i].algo, LT_CFG_TILE_ID, &t->tile, sizeof t->tile, &w);
      X.CfgGet(cand[i].algo, LT_CFG_SPLITK_NUM, &t->splitk, sizeof t->splitk, &w);
    }
    *n_out = i + 1;
  }
  objs_free(k.lt, &o);
  return s;
}
