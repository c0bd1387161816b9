/* cuda_welford.c - one-pass var / std / var_mean on the device: which nodes
 * the pipeline keeps whole (cuda_welford_node_ok: long rows of an input
 * that is realized anyway), the process-wide modules of cuda_welford.cuh
 * (one per input dtype, built through the kernel cache on first use) and
 * the extern step: the input's kept and reduced dims resolved into
 * ptc_wf_args (reduced dims sorted by stride and coalesced, so a
 * contiguous row is one unit-stride dim read with 16-byte loads), the
 * split into chunks when the rows are too few to fill the SMs, one launch
 * of the rows kernel and, when split, one of the fold kernel over the
 * partial states. */
#include "cuda_welford.h"

#include "../../lib/graph/op.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern const char ptc_cuda_welford_text[];

#define WF_MAXD 16
#define WF_THREADS 256
#define WF_UNROLL 4
#define WF_BLOCKS_PER_SM 16 /* split target: sm_count * this many blocks (about 4 waves) */
#define WF_MAX_CHUNKS 1024

/* Device layout of ptc_wf_args (cuda_welford.cuh). */
typedef struct wf_args {
  int64_t rows, n, chunk, nchunks;
  int64_t kshape[WF_MAXD], kst[WF_MAXD], o0st[WF_MAXD], o1st[WF_MAXD];
  int64_t rshape[WF_MAXD], rst[WF_MAXD];
  int32_t nk, nr, vec, mode;
  double dof;
} wf_args;

/* 0 var, 1 std, 2 var_mean, -1 another op. */
static int op_mode(const char* name) {
  return !strcmp(name, "var") ? 0 : !strcmp(name, "std") ? 1 : !strcmp(name, "var_mean") ? 2 : -1;
}

/* Module index of an input dtype (-1: none). */
static int dtype_index(int32_t dt) {
  return dt == PTC_F32 ? 0 : dt == PTC_F64 ? 1 : dt == PTC_F16 ? 2 : dt == PTC_BF16 ? 3 : -1;
}

static const char* const wf_names[4] = {"f32", "f64", "f16", "bf16"};

/* Reduced-dim mask of a rank-`rank` input from the node's "dim" (absent or
 * empty: every dim); false for a symbolic entry. */
static bool dims_mask(const gnode* n, uint32_t rank, bool* mask) {
  const gattr* a = gattrs_find(&n->attrs, "dim");
  size_t cnt = a ? (a->type == PTC_ATTR_INTS ? a->count : 1) : 0;
  for (uint32_t i = 0; i < rank; i++) mask[i] = cnt == 0;
  for (size_t k = 0; k < cnt; k++) {
    int64_t v = a->i;
    if (a->type == PTC_ATTR_INTS && !sym_is_const(a->exprs[k], &v)) return false;
    if (rank == 0) continue;
    if (v < 0) v += rank;
    if (v < 0 || v >= (int64_t)rank) return false;
    mask[v] = true;
  }
  return true;
}

static double attr_number(const gattr* a) {
  return a->type == PTC_ATTR_FLOAT ? a->f : (double)a->i;
}

/* `correction`, else `unbiased` (default true) as 1 or 0. */
static double correction(const gnode* n) {
  const gattr* c = gattrs_find(&n->attrs, "correction");
  if (c) return attr_number(c);
  const gattr* u = gattrs_find(&n->attrs, "unbiased");
  return !u || u->i ? 1.0 : 0.0;
}

/* ---- which nodes stay whole ------------------------------------------------------------- */

static int64_t min_row(void) {
  const char* e = getenv("PTC_CUDA_WELFORD_MIN");
  if (!e || !*e) return CUDA_WELFORD_MIN_ROW;
  long long v = strtoll(e, NULL, 10);
  return v < 0 ? 0 : (int64_t)v;
}

/* Normalised dim `v` of a rank-`rank` value (-1 if out of range). */
static int64_t norm_dim(int64_t v, uint32_t rank) {
  if (v < 0) v += rank;
  return v >= 0 && v < (int64_t)rank ? v : -1;
}

/* True if permute / transpose node p leaves the last dim last. */
static bool keeps_last(const ptc_graph* g, const gnode* p) {
  uint32_t r = graph_value(g, p->in[0])->rank;
  if (!strcmp(p->op->name, "transpose")) {
    const gattr* d0 = gattrs_find(&p->attrs, "dim0");
    const gattr* d1 = gattrs_find(&p->attrs, "dim1");
    int64_t a = d0 ? norm_dim(d0->i, r) : -1, b = d1 ? norm_dim(d1->i, r) : -1;
    return a >= 0 && b >= 0 && (a == b || (a != (int64_t)r - 1 && b != (int64_t)r - 1));
  }
  const gattr* d = gattrs_find(&p->attrs, "dims");
  int64_t last;
  return d && d->type == PTC_ATTR_INTS && d->count == r && r > 0 &&
         sym_is_const(d->exprs[r - 1], &last) && norm_dim(last, r) == (int64_t)r - 1;
}

/* True if graph input / constant gv has contiguous strides (at the hints). */
static bool contiguous_value(const ptc_graph* g, const gvalue* gv) {
  if (!gv->strides) return true;
  int64_t want = 1;
  for (uint32_t i = gv->rank; i-- > 0;) {
    int64_t size, st;
    if (!sym_hint(g->env, gv->shape[i], &size) || !sym_hint(g->env, gv->strides[i], &st))
      return false;
    if (size != 1 && st != want) return false;
    want *= size;
  }
  return true;
}

/* True if v is in memory anyway with unit-stride rows: a contiguous graph
 * input or constant, maybe through views that keep the last dim (view,
 * reshape, flatten, unflatten, squeeze, unsqueeze; permute / transpose
 * that leave the last dim last), or a matmul / convolution output. */
static bool realized(const ptc_graph* g, ptc_value v) {
  static const char* const ext[] = {"mm", "bmm", "matmul", "addmm", "baddbmm", "linear",
                                    "conv1d", "conv2d"};
  static const char* const views[] = {"view", "reshape", "flatten", "unflatten", "squeeze",
                                      "unsqueeze"};
  for (int hops = 0; hops < 64; hops++) {
    const gvalue* gv = graph_value(g, v);
    if (gv->kind != PTC_VALUE_NODE) return contiguous_value(g, gv);
    const gnode* p = graph_node(g, gv->node);
    const char* op = p->op->name;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
      if (!strcmp(op, ext[i])) return true;
    bool view = !strcmp(op, "permute") || !strcmp(op, "transpose");
    for (size_t i = 0; !view && i < sizeof views / sizeof views[0]; i++) view = !strcmp(op, views[i]);
    if (!view || p->n_in < 1 || p->in[0] == PTC_VALUE_NONE) return false;
    if ((!strcmp(op, "permute") || !strcmp(op, "transpose")) && !keeps_last(g, p)) return false;
    v = p->in[0];
  }
  return false;
}

bool cuda_welford_node_ok(const ptc_graph* g, const gnode* n) {
  int mode = op_mode(n->op->name);
  if (mode < 0) return false;
  const char* env = getenv("PTC_CUDA_WELFORD");
  if (env && strcmp(env, "0") == 0) return false;
  if (n->n_in < 1 || n->in[0] == PTC_VALUE_NONE || n->n_out != (mode == 2 ? 2u : 1u)) return false;
  const gvalue* x = graph_value(g, n->in[0]);
  if (dtype_index(x->dtype) < 0 || x->rank < 1 || x->rank > WF_MAXD) return false;
  for (uint32_t k = 0; k < n->n_out; k++)
    if (graph_value(g, n->out[k])->dtype != x->dtype) return false;
  bool mask[PTC_MAX_RANK];
  if (!dims_mask(n, x->rank, mask) || !mask[x->rank - 1]) return false;
  /* the reduced dims trailing (size-1 dims aside): rows of one unit-stride run */
  int64_t r = 1;
  bool kept_seen = false;
  for (uint32_t d = x->rank; d-- > 0;) {
    int64_t v;
    if (!sym_hint(g->env, x->shape[d], &v)) return false;
    if (!mask[d]) {
      kept_seen = kept_seen || v != 1;
      continue;
    }
    if (kept_seen && v != 1) return false;
    r = v > 0 && r > INT64_MAX / v ? INT64_MAX : r * v;
  }
  return r >= min_row() && realized(g, n->in[0]);
}

bool cuda_welford_handles(const ir_program* p, const ir_node* n) {
  const ir_extern* e = &n->ext;
  if (e->kind != IR_EXT_FALLBACK || e->graph_node >= p->graph->nodes.len || e->n_in < 1 ||
      e->in[0] < 0)
    return false;
  int mode = op_mode(graph_node(p->graph, e->graph_node)->op->name);
  if (mode < 0 || e->n_out != (mode == 2 ? 2u : 1u)) return false;
  return dtype_index(ir_buf(p, e->out[0])->dtype) >= 0;
}

/* ---- the modules -------------------------------------------------------------------------- */

static pthread_mutex_t wf_lock = PTHREAD_MUTEX_INITIALIZER;
static cu_module wf_module[4]; /* by dtype_index, built on first use */
static cu_function wf_rows[4], wf_fold[4];

/* The prelude, the kernel text and the kernels of dtypes ti[0..n). */
static ptc_status wf_source(ptc_strbuf* src, const int* ti, int n) {
  static const char* const inst[4] = {"float, float, 4, 0", "double, double, 2, 0",
                                      "u16, float, 8, 0", "u16, float, 8, 1"};
  ptc_sb_init(src);
  ptc_sb_printf(src, "// libptc welford kernels (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(src, ptc_cuda_prelude_text);
  ptc_sb_append(src, ptc_cuda_welford_text);
  for (int i = 0; i < n; i++)
    ptc_sb_printf(src, "PTC_WF_KERNELS(ptc_wf_%s, %s)\n", wf_names[ti[i]], inst[ti[i]]);
  if (src->oom) {
    ptc_sb_free(src);
    return ptc_status_oom();
  }
  return PTC_OK;
}

static ptc_status load_wf(ptc_context* ctx, const cuda_device* d, int ti) {
  const cu_api* cu = &cuda_libs_get()->cu;
  ptc_strbuf src;
  PTC_TRY(wf_source(&src, &ti, 1));
  PTC_TRY(cuda_build_module(ctx, d->cc_major * 10 + d->cc_minor, &src, "ptc_welford",
                            "the welford kernels", &wf_module[ti]));
  char rows[40], fold[40];
  snprintf(rows, sizeof rows, "ptc_wf_%s_rows", wf_names[ti]);
  snprintf(fold, sizeof fold, "ptc_wf_%s_fold", wf_names[ti]);
  cu_result r = cu->ModuleGetFunction(&wf_rows[ti], wf_module[ti], rows);
  if (r == CU_SUCCESS) r = cu->ModuleGetFunction(&wf_fold[ti], wf_module[ti], fold);
  if (r != CU_SUCCESS) {
    cu->ModuleUnload(wf_module[ti]);
    wf_module[ti] = NULL;
    wf_rows[ti] = wf_fold[ti] = NULL;
    return cuda_error(r, "finding the welford kernels");
  }
  return PTC_OK;
}

ptc_status cuda_welford_check_compile(ptc_context* ctx, int arch) {
  (void)ctx;
  static const int all[4] = {0, 1, 2, 3};
  ptc_strbuf src;
  PTC_TRY(wf_source(&src, all, 4));
  cuda_cubin c;
  memset(&c, 0, sizeof c);
  ptc_status s = cuda_nvrtc_compile_ex(src.data, "ptc_welford", arch, NULL, &c);
  cuda_cubin_free(&c);
  ptc_sb_free(&src);
  return s;
}

/* ---- the extern step ------------------------------------------------------------------------ */

static int64_t abs64(int64_t v) { return v < 0 ? -v : v; }

/* Reduced dims sorted by |stride| (largest first) and merged where one
 * steps over the next exactly; size-1 dims dropped. */
static void coalesce(wf_args* a) {
  for (int32_t i = 1; i < a->nr; i++)
    for (int32_t j = i; j > 0 && abs64(a->rst[j]) > abs64(a->rst[j - 1]); j--) {
      int64_t s = a->rshape[j], t = a->rst[j];
      a->rshape[j] = a->rshape[j - 1], a->rst[j] = a->rst[j - 1];
      a->rshape[j - 1] = s, a->rst[j - 1] = t;
    }
  int32_t m = 0;
  for (int32_t i = 0; i < a->nr; i++) {
    if (m > 0 && a->rst[m - 1] == a->rst[i] * a->rshape[i]) {
      a->rshape[m - 1] *= a->rshape[i];
      a->rst[m - 1] = a->rst[i];
      continue;
    }
    a->rshape[m] = a->rshape[i];
    a->rst[m] = a->rst[i];
    m++;
  }
  a->nr = m;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Chunks a row: enough (row, chunk) blocks to fill the SMs when the rows
 * are few, each at least two full steps; a chunk a multiple of the step. */
static void plan_chunks(wf_args* a, int sm_count, int64_t step) {
  int64_t want = (int64_t)(sm_count > 0 ? sm_count : 1) * WF_BLOCKS_PER_SM;
  int64_t nch = 1;
  if (a->rows < want) {
    nch = ceil_div(want, a->rows);
    int64_t most = a->n / (2 * step);
    if (nch > most) nch = most;
    if (nch > WF_MAX_CHUNKS) nch = WF_MAX_CHUNKS;
    if (nch < 1) nch = 1;
  }
  const char* e = getenv("PTC_CUDA_WELFORD_SPLIT");
  if (e && !strcmp(e, "0")) nch = 1;
  int64_t n = a->n > 0 ? a->n : 1;
  a->chunk = ceil_div(ceil_div(n, nch), step) * step;
  a->nchunks = ceil_div(n, a->chunk);
}

ptc_status cuda_welford_run(const cuda_ext_call* c) {
  const ir_extern* e = &c->node->ext;
  const gnode* gn = graph_node(c->plan->p->graph, e->graph_node);
  int mode = op_mode(gn->op->name);
  if (mode < 0 || e->n_in < 1 || e->n_out != (mode == 2 ? 2u : 1u))
    return PTC_ERR(INTERNAL, "cuda backend: welford extern on %s", gn->op->name);
  const runtime_tensor *x = &c->in[0], *o0 = &c->out[0], *o1 = mode == 2 ? &c->out[1] : NULL;
  int ti = dtype_index(x->dtype);
  if (ti < 0 || o0->dtype != x->dtype || (o1 && o1->dtype != x->dtype) || x->rank > WF_MAXD)
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: %s of %s (rank %d) has no device kernel",
                   gn->op->name, ptc_dtype_name(x->dtype), (int)x->rank);
  bool mask[PTC_MAX_RANK];
  if (!dims_mask(gn, (uint32_t)x->rank, mask))
    return PTC_ERR(UNIMPLEMENTED, "cuda backend: %s over symbolic dims", gn->op->name);
  const gattr* kd = gattrs_find(&gn->attrs, "keepdim");
  bool keep = kd && kd->i;
  wf_args a;
  memset(&a, 0, sizeof a);
  a.mode = mode;
  a.rows = 1;
  a.n = 1;
  int32_t od = 0;
  for (int32_t d = 0; d < x->rank; d++) {
    if (mask[d]) {
      a.n *= x->shape[d];
      if (x->shape[d] != 1) {
        a.rshape[a.nr] = x->shape[d];
        a.rst[a.nr++] = x->strides[d];
      }
      if (keep) od++;
      continue;
    }
    a.rows *= x->shape[d];
    if (od >= o0->rank || (o1 && od >= o1->rank))
      return PTC_ERR(INTERNAL, "cuda backend: %s output rank %d", gn->op->name, (int)o0->rank);
    if (x->shape[d] != 1) {
      a.kshape[a.nk] = x->shape[d];
      a.kst[a.nk] = x->strides[d];
      a.o0st[a.nk] = o0->strides[od];
      a.o1st[a.nk] = o1 ? o1->strides[od] : 0;
      a.nk++;
    }
    od++;
  }
  if (a.rows == 0) return PTC_OK;
  if (a.n == 0) a.nr = 0;
  coalesce(&a);
  a.vec = a.nr == 0 || (a.nr == 1 && a.rst[0] == 1);
  double dof = (double)a.n - correction(gn);
  a.dof = dof > 0 ? dof : 0.0;
  size_t es = ptc_dtype_size(x->dtype);
  size_t part = ti == 1 ? 32 : 24; /* ptc_wf_part<A>: 3 A, an i64 (8-aligned) */
  int64_t step = (int64_t)WF_THREADS * (int64_t)(16 / es) * WF_UNROLL;
  plan_chunks(&a, c->plan->dev->sm_count, step);

  pthread_mutex_lock(&wf_lock);
  ptc_status s = wf_rows[ti] ? PTC_OK : load_wf(c->plan->ctx, c->plan->dev, ti);
  cu_function frows = wf_rows[ti], ffold = wf_fold[ti];
  pthread_mutex_unlock(&wf_lock);
  PTC_TRY(s);
  const cu_api* cu = &cuda_libs_get()->cu;
  cu_deviceptr px = (cu_deviceptr)(uintptr_t)x->data, p0 = (cu_deviceptr)(uintptr_t)o0->data;
  cu_deviceptr p1 = o1 ? (cu_deviceptr)(uintptr_t)o1->data : p0, ws = 0;
  if (a.nchunks > 1)
    PTC_TRY(cuda_alloc((size_t)(a.rows * a.nchunks) * part, c->stream, &ws));
  int64_t cap = (int64_t)(c->plan->dev->sm_count > 0 ? c->plan->dev->sm_count : 1) * 32;
  int64_t tasks = a.rows * a.nchunks;
  unsigned grid = (unsigned)(tasks < cap ? tasks : cap);
  void* params[] = {&px, &p0, &p1, &ws, &a};
  cu_result r = cu->LaunchKernel(frows, grid, 1, 1, WF_THREADS, 1, 1, 0, c->stream, params, NULL);
  if (r == CU_SUCCESS && a.nchunks > 1) {
    void* fparams[] = {&p0, &p1, &ws, &a};
    unsigned fg = (unsigned)(a.rows < cap ? a.rows : cap);
    r = cu->LaunchKernel(ffold, fg, 1, 1, 32, 1, 1, 0, c->stream, fparams, NULL);
  }
  if (ws) cuda_free(ws);
  if (r != CU_SUCCESS) return cuda_error(r, "launching the welford kernels");
  return PTC_OK;
}
