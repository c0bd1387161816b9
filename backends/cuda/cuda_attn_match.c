/* cuda_attn_match.c - the cuda backend's attention pattern rewrite: finds
 * softmax(q @ k^T [* c | / c] [masked_fill(~b, -inf) | + M]) @ v in a graph
 * (the way models write attention out, e.g. GPT-2's causal buffer and
 * BERT's additive mask) and replays the graph with each match replaced by
 * one scaled_dot_product_attention node, so the fused kernels run it
 * (cuda_attn.c). The analysis reads the source graph only; the rewrite is a
 * replay (lib/decomp/replay.h) whose hook emits the sdpa node at the final
 * matmul, followed by dead-code elimination of the old chain. Then sdpa
 * nodes whose boolean mask is computed from no graph input (Hugging Face's
 * arange / le / bitwise_and causal mask under torch.compile) have that
 * mask evaluated once with the ref backend; one that is exactly the causal
 * pattern becomes is_causal (the mask's nodes then die). */
#include "cuda_attn_match.h"

#include "../../lib/decomp/replay.h"
#include "../../lib/graph/op.h"
#include "cuda_attn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { MASK_NONE, MASK_ADD, MASK_KEEP, MASK_DROP, MASK_CAUSAL };

static const char SDPA_OP[] = "scaled_dot_product_attention";
enum { K_SOURCE, K_PERMUTE, K_TRANSPOSE };

/* One match, in source-graph values. */
typedef struct amatch {
  uint32_t node;   /* the final matmul */
  ptc_value q, v;
  ptc_value k;     /* K_SOURCE: k itself; K_PERMUTE: permuted into k; K_TRANSPOSE: k^T */
  int kmode;
  uint32_t krank;
  int64_t perm[PTC_MAX_RANK + 1];
  double scale;
  int mask;
  ptc_value mask_v; /* ADD: M; KEEP: the keep mask; DROP: the drop mask */
} amatch;

typedef struct mstate {
  const ptc_graph* g;
  uint32_t* uses; /* per source value: node inputs + graph outputs using it */
  amatch* m;
  size_t n_m;
  int32_t* at; /* per source node: its match, or -1 */
  size_t rewritten;
} mstate;

/* ---- analysis ------------------------------------------------------------------------------- */

static const gnode* producer(const ptc_graph* g, ptc_value v, const char* op) {
  if (v == PTC_VALUE_NONE) return NULL;
  const gvalue* x = graph_value(g, v);
  if (x->kind != PTC_VALUE_NODE) return NULL;
  const gnode* n = graph_node(g, x->node);
  return !op || strcmp(n->op->name, op) == 0 ? n : NULL;
}

static bool is_op(const gnode* n, const char* op) { return n && strcmp(n->op->name, op) == 0; }

static bool single_use(const mstate* st, ptc_value v) { return st->uses[v] == 1; }

static bool num_attr(const gattr* a, double* out) {
  if (!a) return false;
  if (a->type == PTC_ATTR_FLOAT) *out = a->f;
  else if (a->type == PTC_ATTR_INT || a->type == PTC_ATTR_BOOL) *out = (double)a->i;
  else return false;
  return true;
}

static bool same_shape(const gvalue* a, const gvalue* b) {
  if (a->rank != b->rank) return false;
  for (uint32_t d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d]) return false;
  return true;
}

static int32_t norm_dim(int64_t d, uint32_t rank) {
  return (int32_t)(d < 0 ? d + (int64_t)rank : d);
}

/* Z = matmul(q, kT) behind an optional scalar mul / div: fills q, kT, scale. */
static bool scores_root(const mstate* st, ptc_value y, int32_t dt, ptc_value* q, ptc_value* kt,
                        double* scale) {
  const ptc_graph* g = st->g;
  const gnode* yn = producer(g, y, NULL);
  ptc_value z = y;
  *scale = 1.0;
  double c;
  if ((is_op(yn, "mul") || is_op(yn, "div")) && yn->n_in == 1 &&
      num_attr(gattrs_find(&yn->attrs, "other"), &c) && !gattrs_find(&yn->attrs, "rounding_mode")) {
    if (is_op(yn, "div")) {
      if (c == 0.0 || !isfinite(c)) return false;
      c = 1.0 / c;
    }
    if (!isfinite(c)) return false;
    *scale = c;
    z = yn->in[0];
    if (!single_use(st, z)) return false;
  }
  const gnode* zn = producer(g, z, NULL);
  if (!zn || zn->n_in != 2 || zn->n_out != 1) return false;
  bool bmm = is_op(zn, "bmm");
  if (!bmm && !is_op(zn, "matmul")) return false;
  const gvalue* zv = graph_value(g, z);
  const gvalue* qv = graph_value(g, zn->in[0]);
  const gvalue* kv = graph_value(g, zn->in[1]);
  if (zv->dtype != dt || qv->dtype != dt || kv->dtype != dt || qv->rank < 2 || kv->rank < 2)
    return false;
  if (bmm && (qv->rank != 3 || kv->rank != 3)) return false;
  *q = zn->in[0];
  *kt = zn->in[1];
  return true;
}

/* How k is obtained from kT (a transpose or permute of the last two dims
 * gives back its input, else transpose kT itself). */
static void find_k(const mstate* st, ptc_value kt, amatch* m) {
  const ptc_graph* g = st->g;
  const gnode* n = producer(g, kt, NULL);
  uint32_t r = graph_value(g, kt)->rank;
  m->kmode = K_TRANSPOSE;
  m->k = kt;
  if (is_op(n, "transpose") && n->n_in == 1) {
    double a, b;
    if (num_attr(gattrs_find(&n->attrs, "dim0"), &a) &&
        num_attr(gattrs_find(&n->attrs, "dim1"), &b)) {
      int32_t d0 = norm_dim((int64_t)a, r), d1 = norm_dim((int64_t)b, r);
      if ((d0 == (int32_t)r - 2 && d1 == (int32_t)r - 1) ||
          (d1 == (int32_t)r - 2 && d0 == (int32_t)r - 1)) {
        m->kmode = K_SOURCE;
        m->k = n->in[0];
      }
    }
  } else if (is_op(n, "permute") && n->n_in == 1) {
    const gattr* p = gattrs_find(&n->attrs, "dims");
    if (!p || p->type != PTC_ATTR_INTS || p->count != r || r > PTC_MAX_RANK) return;
    int64_t perm[PTC_MAX_RANK + 1];
    for (uint32_t i = 0; i < r; i++) {
      if (!sym_is_const(p->exprs[i], &perm[i])) return;
      perm[i] = norm_dim(perm[i], r);
    }
    int64_t t = perm[r - 2];
    perm[r - 2] = perm[r - 1];
    perm[r - 1] = t;
    bool ident = true;
    for (uint32_t i = 0; i < r; i++) ident = ident && perm[i] == (int64_t)i;
    m->k = n->in[0];
    m->kmode = ident ? K_SOURCE : K_PERMUTE;
    m->krank = r;
    memcpy(m->perm, perm, r * sizeof *perm);
  }
}

/* True if bool value mv (through slices from 0 with step 1 of a graph
 * constant) keeps exactly key j <= query i on its last two dims [L, S] for
 * every leading index; `drop` reads it as a mask of dropped scores. */
static bool const_causal(const ptc_graph* g, ptc_value mv, bool drop, const gvalue* scores) {
  const gvalue* m = graph_value(g, mv);
  ptc_value base = mv;
  for (;;) {
    const gnode* n = producer(g, base, "slice");
    if (!n) break;
    double start = 0, step = 1;
    const gattr* sa = gattrs_find(&n->attrs, "start");
    if (sa && sa->type == PTC_ATTR_SYM) {
      int64_t s0;
      if (!sym_is_const(sa->sym, &s0)) return false;
      start = (double)s0;
    } else if (sa && !num_attr(sa, &start)) {
      return false;
    }
    const gattr* st = gattrs_find(&n->attrs, "step");
    if (st && !num_attr(st, &step)) return false;
    if (start != 0 || step != 1) return false;
    base = n->in[0];
  }
  const gvalue* b = graph_value(g, base);
  if (b->kind != PTC_VALUE_CONSTANT || !b->data || b->dtype != PTC_BOOL || b->rank != m->rank ||
      m->rank < 2 || scores->rank < 2)
    return false;
  int64_t L, S, ml, ms;
  if (!sym_is_const(scores->shape[scores->rank - 2], &L) ||
      !sym_is_const(scores->shape[scores->rank - 1], &S) ||
      !sym_is_const(m->shape[m->rank - 2], &ml) || !sym_is_const(m->shape[m->rank - 1], &ms) ||
      ml != L || ms != S)
    return false;
  int64_t shape[PTC_MAX_RANK + 1], str[PTC_MAX_RANK + 1], total = 1;
  for (uint32_t d = 0; d < m->rank; d++) {
    if (!sym_is_const(m->shape[d], &shape[d]) || !sym_is_const(b->strides[d], &str[d]) ||
        shape[d] < 0)
      return false;
    total *= shape[d] > 0 ? shape[d] : 1;
    if (total > ((int64_t)1 << 26)) return false;
  }
  int64_t lead = total / (L > 0 ? L : 1) / (S > 0 ? S : 1);
  const uint8_t* data = b->data;
  for (int64_t c = 0; c < lead; c++) {
    int64_t rest = c, off = 0;
    for (int32_t d = (int32_t)m->rank - 3; d >= 0; d--) {
      off += (rest % shape[d]) * str[d];
      rest /= shape[d];
    }
    for (int64_t i = 0; i < L; i++)
      for (int64_t j = 0; j < S; j++) {
        bool keep = data[off + i * str[m->rank - 2] + j * str[m->rank - 1]] != 0;
        if (drop) keep = !keep;
        if (keep != (j <= i)) return false;
      }
  }
  return true;
}

/* The pattern ending at matmul node `ni`. */
static bool match_at(const mstate* st, uint32_t ni, amatch* m) {
  const ptc_graph* g = st->g;
  const gnode* n = graph_node(g, ni);
  if ((!is_op(n, "matmul") && !is_op(n, "bmm")) || n->n_in != 2 || n->n_out != 1) return false;
  const gvalue* ov = graph_value(g, n->out[0]);
  int32_t dt = ov->dtype;
  if (dt != PTC_F32 && dt != PTC_F16 && dt != PTC_BF16) return false;
  memset(m, 0, sizeof *m);
  m->node = ni;
  m->v = n->in[1];
  const gvalue* vv = graph_value(g, m->v);
  if (vv->dtype != dt || vv->rank < 2) return false;
  if (is_op(n, "bmm") && vv->rank != 3) return false;
  /* probabilities, behind an inference-mode dropout */
  ptc_value p = n->in[0];
  if (!single_use(st, p) || graph_value(g, p)->dtype != dt) return false;
  const gnode* pn = producer(g, p, NULL);
  if (is_op(pn, "dropout")) {
    const gattr* tr = gattrs_find(&pn->attrs, "train");
    if ((tr && tr->i != 0) || pn->n_in != 1) return false;
    p = pn->in[0];
    if (!single_use(st, p) || graph_value(g, p)->dtype != dt) return false;
    pn = producer(g, p, NULL);
  }
  if (!is_op(pn, "softmax") || pn->n_in != 1) return false;
  const gattr* da = gattrs_find(&pn->attrs, "dim");
  const gattr* dta = gattrs_find(&pn->attrs, "dtype");
  ptc_value x = pn->in[0];
  const gvalue* xv = graph_value(g, x);
  double dim;
  if (!num_attr(da, &dim) || norm_dim((int64_t)dim, xv->rank) != (int32_t)xv->rank - 1 ||
      (dta && dta->i != dt) || xv->dtype != dt || !single_use(st, x))
    return false;
  /* the mask stage */
  const gnode* xn = producer(g, x, NULL);
  ptc_value y = x, kt = PTC_VALUE_NONE;
  if (is_op(xn, "masked_fill") && xn->n_in == 2) {
    double val;
    if (!num_attr(gattrs_find(&xn->attrs, "value"), &val) || !(isinf(val) && val < 0))
      return false;
    y = xn->in[0];
    if (!same_shape(graph_value(g, y), xv) || !single_use(st, y)) return false;
    ptc_value mk = xn->in[1];
    const gnode* inv = producer(g, mk, "logical_not");
    if (inv && inv->n_in == 1 && graph_value(g, inv->in[0])->dtype == PTC_BOOL) {
      m->mask = MASK_KEEP;
      m->mask_v = inv->in[0];
    } else {
      m->mask = MASK_DROP;
      m->mask_v = mk;
    }
    if (!scores_root(st, y, dt, &m->q, &kt, &m->scale)) return false;
  } else if (is_op(xn, "add") && xn->n_in == 2 && !gattrs_find(&xn->attrs, "other")) {
    double alpha = 1.0;
    const gattr* aa = gattrs_find(&xn->attrs, "alpha");
    if (aa && (!num_attr(aa, &alpha) || alpha != 1.0)) return false;
    int side = -1;
    for (int s = 0; s < 2 && side < 0; s++) {
      ptc_value ys = xn->in[s], ms = xn->in[1 - s];
      if (ys == ms || !single_use(st, ys)) continue;
      if (!same_shape(graph_value(g, ys), xv) || graph_value(g, ms)->dtype != dt) continue;
      if (scores_root(st, ys, dt, &m->q, &kt, &m->scale)) side = s;
    }
    if (side < 0) return false;
    y = xn->in[side];
    m->mask = MASK_ADD;
    m->mask_v = xn->in[1 - side];
  } else if (!scores_root(st, y, dt, &m->q, &kt, &m->scale)) {
    return false;
  }
  if (graph_value(g, y)->dtype != dt) return false;
  if (m->mask == MASK_KEEP || m->mask == MASK_DROP) {
    if (const_causal(g, m->mask_v, m->mask == MASK_DROP, xv)) {
      m->mask = MASK_CAUSAL;
      m->mask_v = PTC_VALUE_NONE;
    }
  }
  find_k(st, kt, m);
  return true;
}

/* ---- the rewrite ----------------------------------------------------------------------------- */

static ptc_status add1(ptc_graph* g, const char* op, const ptc_value* in, size_t n_in,
                       const ptc_attr* a, size_t n_a, ptc_value* out) {
  return ptc_graph_add_node(g, op, in, n_in, a, n_a, out, 1, NULL);
}

/* Emits the sdpa node of match m; *ok false (nothing mapped) when its
 * output differs from the matmul's in dtype or shape. */
static ptc_status emit(mstate* st, replay* r, const amatch* m, bool* ok) {
  ptc_graph* d = replay_dst(r);
  const gnode* n = graph_node(st->g, m->node);
  ptc_value in[4] = {replay_map(r, m->q), PTC_VALUE_NONE, replay_map(r, m->v), PTC_VALUE_NONE};
  ptc_value k = replay_map(r, m->k);
  *ok = false;
  if (m->kmode == K_PERMUTE) {
    ptc_attr a = ptc_attr_ints("dims", m->perm, m->krank);
    PTC_TRY(add1(d, "permute", &k, 1, &a, 1, &in[1]));
  } else if (m->kmode == K_TRANSPOSE) {
    ptc_attr a[2] = {ptc_attr_int("dim0", -2), ptc_attr_int("dim1", -1)};
    PTC_TRY(add1(d, "transpose", &k, 1, a, 2, &in[1]));
  } else {
    in[1] = k;
  }
  size_t n_in = 3;
  if (m->mask == MASK_ADD || m->mask == MASK_KEEP) {
    in[3] = replay_map(r, m->mask_v);
    n_in = 4;
  } else if (m->mask == MASK_DROP) {
    ptc_value mv = replay_map(r, m->mask_v);
    PTC_TRY(add1(d, "logical_not", &mv, 1, NULL, 0, &in[3]));
    n_in = 4;
  }
  ptc_attr a[2] = {ptc_attr_float("scale", m->scale), ptc_attr_bool("is_causal", 1)};
  ptc_value o;
  PTC_TRY(add1(d, "scaled_dot_product_attention", in, n_in, a, m->mask == MASK_CAUSAL ? 2 : 1, &o));
  const gvalue* want = graph_value(st->g, n->out[0]);
  const gvalue* got = graph_value(d, o);
  if (want->dtype != got->dtype || want->rank != got->rank) return PTC_OK;
  for (uint32_t i = 0; i < want->rank; i++) {
    const sym_expr* e = sym_import(d->env, want->shape[i]);
    if (!e) return ptc_status_oom();
    if (e != got->shape[i]) return PTC_OK;
  }
  replay_set(r, n->out[0], o);
  *ok = true;
  return PTC_OK;
}

static ptc_status rewrite_hook(void* user, replay* r, uint32_t node, bool* handled) {
  mstate* st = user;
  if (st->at[node] < 0) return PTC_OK;
  bool ok = false;
  PTC_TRY(emit(st, r, &st->m[st->at[node]], &ok));
  if (ok) st->rewritten++;
  *handled = ok;
  return PTC_OK;
}

static ptc_status count_uses(mstate* st) {
  const ptc_graph* g = st->g;
  st->uses = calloc(g->values.len + 1, sizeof *st->uses);
  if (!st->uses) return ptc_status_oom();
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    for (uint32_t k = 0; k < n->n_in; k++)
      if (n->in[k] != PTC_VALUE_NONE) st->uses[n->in[k]]++;
  }
  for (size_t i = 0; i < g->outputs.len; i++) st->uses[PTC_VEC_AT(&g->outputs, ptc_value, i)]++;
  return PTC_OK;
}

static ptc_status find_matches(mstate* st) {
  const ptc_graph* g = st->g;
  bool any_softmax = false;
  for (size_t i = 0; i < g->nodes.len && !any_softmax; i++)
    any_softmax = is_op(graph_node(g, i), "softmax");
  if (!any_softmax) return PTC_OK;
  PTC_TRY(count_uses(st));
  st->at = malloc((g->nodes.len + 1) * sizeof *st->at);
  st->m = malloc((g->nodes.len + 1) * sizeof *st->m);
  if (!st->at || !st->m) return ptc_status_oom();
  for (size_t i = 0; i < g->nodes.len; i++) {
    st->at[i] = -1;
    if (match_at(st, (uint32_t)i, &st->m[st->n_m])) st->at[i] = (int32_t)st->n_m++;
  }
  return PTC_OK;
}

/* ---- sdpa masks that are the causal pattern ------------------------------------------------ */

#define CM_MAX_NODES 1024               /* nodes computing one mask */
#define CM_MAX_ELEMS ((int64_t)1 << 24) /* elements of one mask */

/* True if t (bool, [..., L, S]) keeps exactly key j <= query i for every
 * leading index. */
static bool tensor_causal(const ptc_tensor* t, int64_t L, int64_t S) {
  if (t->ndim < 2 || t->dtype.code != ptc_dtype_to_dl(PTC_BOOL).code ||
      t->dtype.bits != 8 || t->shape[t->ndim - 2] != L || t->shape[t->ndim - 1] != S)
    return false;
  int64_t str[PTC_MAX_RANK + 1], lead = 1;
  if (t->ndim > PTC_MAX_RANK) return false;
  for (int32_t d = t->ndim - 1, c = 1; d >= 0; d--) {
    str[d] = t->strides ? t->strides[d] : c;
    c *= (int32_t)(t->shape[d] > 0 ? t->shape[d] : 1);
  }
  for (int32_t d = 0; d < t->ndim - 2; d++) lead *= t->shape[d];
  const uint8_t* data = (const uint8_t*)t->data + t->byte_offset;
  for (int64_t b = 0; b < lead; b++) {
    int64_t rest = b, off = 0;
    for (int32_t d = t->ndim - 3; d >= 0; d--) {
      off += (rest % t->shape[d]) * str[d];
      rest /= t->shape[d];
    }
    for (int64_t i = 0; i < L; i++)
      for (int64_t j = 0; j < S; j++)
        if ((data[off + i * str[t->ndim - 2] + j * str[t->ndim - 1]] != 0) != (j <= i)) return false;
  }
  return true;
}

/* The nodes computing value mv (need: per node, filled), false unless
 * none reads a graph input or is random and every value has a static
 * shape (constants contiguous). */
static bool mask_nodes(const ptc_graph* g, ptc_value mv, bool* need_v, bool* need_n) {
  need_v[mv] = true;
  size_t count = 0;
  for (size_t i = g->nodes.len; i-- > 0;) {
    const gnode* n = graph_node(g, i);
    for (uint32_t o = 0; o < n->n_out; o++) need_n[i] = need_n[i] || need_v[n->out[o]];
    if (!need_n[i]) continue;
    if ((n->op->flags & OP_RANDOM) || ++count > CM_MAX_NODES) return false;
    for (size_t a = 0; a < n->attrs.n; a++) { /* static attributes only */
      const gattr* at = &n->attrs.a[a];
      int64_t c;
      if (at->type == PTC_ATTR_SYM && at->sym && !sym_is_const(at->sym, &c)) return false;
      for (size_t e = 0; at->type == PTC_ATTR_INTS && at->exprs && e < at->count; e++)
        if (!sym_is_const(at->exprs[e], &c)) return false;
    }
    for (uint32_t k = 0; k < n->n_in; k++)
      if (n->in[k] != PTC_VALUE_NONE) need_v[n->in[k]] = true;
  }
  for (size_t v = 0; v < g->values.len; v++) {
    if (!need_v[v]) continue;
    const gvalue* x = graph_value(g, (ptc_value)v);
    int64_t numel;
    if (x->kind == PTC_VALUE_INPUT || !graph_static_numel(x, &numel) || numel > CM_MAX_ELEMS)
      return false;
    if (x->kind == PTC_VALUE_CONSTANT) {
      int64_t c = 1, sd, dim;
      for (uint32_t d = x->rank; d-- > 0;) {
        if (!x->data || !sym_is_const(x->strides[d], &sd) || !sym_is_const(x->shape[d], &dim) ||
            (dim > 1 && sd != c))
          return false;
        c *= dim;
      }
    }
  }
  return true;
}

/* Evaluates mask value mv of g on the host (its nodes copied into a graph
 * of their own, run by the ref backend) and tells whether it is the causal
 * pattern of [L, S] scores; any failure says no. */
static bool mask_is_causal(const ptc_graph* g, ptc_value mv, int64_t L, int64_t S) {
  bool* need_v = calloc(g->values.len + 1, sizeof *need_v);
  bool* need_n = calloc(g->nodes.len + 1, sizeof *need_n);
  ptc_value* map = malloc((g->values.len + 1) * sizeof *map);
  ptc_graph* sub = NULL;
  ptc_executable* e = NULL;
  ptc_results* res = NULL;
  ptc_arena scratch;
  ptc_arena_init(&scratch, 0);
  bool ok = need_v && need_n && map && mask_nodes(g, mv, need_v, need_n);
  ptc_status s = ok ? ptc_graph_create(g->ctx, &sub) : PTC_OK;
  ok = ok && !s;
  for (size_t v = 0; ok && v < g->values.len; v++) {
    map[v] = PTC_VALUE_NONE;
    const gvalue* x = graph_value(g, (ptc_value)v);
    if (!need_v[v] || x->kind != PTC_VALUE_CONSTANT) continue;
    int64_t shape[PTC_MAX_RANK + 1];
    for (uint32_t d = 0; d < x->rank && d <= PTC_MAX_RANK; d++) sym_is_const(x->shape[d], &shape[d]);
    s = x->rank > PTC_MAX_RANK ? PTC_ERR(UNIMPLEMENTED, "rank")
                               : ptc_graph_add_constant(sub, NULL, x->dtype, shape, x->rank, x->data,
                                                        PTC_CONSTANT_BORROW, &map[v]);
    ok = !s;
  }
  for (size_t i = 0; ok && i < g->nodes.len; i++) {
    if (!need_n[i]) continue;
    const gnode* n = graph_node(g, i);
    ptc_value* in = ptc_arena_alloc(&scratch, (n->n_in + 1) * sizeof *in);
    ptc_value* out = ptc_arena_alloc(&scratch, (n->n_out + 1) * sizeof *out);
    ptc_attr* at = ptc_arena_alloc(&scratch, (n->attrs.n + 1) * sizeof *at);
    ok = in && out && at;
    for (uint32_t k = 0; ok && k < n->n_in; k++) in[k] = n->in[k] == PTC_VALUE_NONE ? n->in[k] : map[n->in[k]];
    if (ok) s = replay_attrs(sub, &n->attrs, &scratch, at);
    size_t n_out = 0;
    if (ok && !s) s = ptc_graph_add_node(sub, n->op->name, in, n->n_in, at, n->attrs.n, out, n->n_out, &n_out);
    ok = ok && !s && n_out == n->n_out;
    for (uint32_t o = 0; ok && o < n->n_out; o++) map[n->out[o]] = out[o];
  }
  if (ok) ok = !(s = ptc_graph_add_output(sub, map[mv]));
  if (ok) {
    ptc_compile_options o;
    ptc_compile_options_init(&o);
    o.backend = "ref";
    o.debug_dir = ""; /* no PTC_DEBUG_DIR dump of this helper graph */
    s = ptc_compile(g->ctx, sub, &o, &e);
    if (!s) s = ptc_executable_run_alloc(e, NULL, 0, NULL, &res);
    ok = !s && ptc_results_count(res) == 1 && tensor_causal(ptc_results_get(res, 0), L, S);
  }
  ptc_status_destroy(s);
  ptc_results_destroy(res);
  ptc_executable_release(e);
  ptc_graph_destroy(sub);
  ptc_arena_free(&scratch);
  free(need_v);
  free(need_n);
  free(map);
  return ok;
}

typedef struct cstate {
  const ptc_graph* g;
  bool* causal; /* per node: an sdpa node whose mask is the causal pattern */
} cstate;

static ptc_status causal_hook(void* user, replay* r, uint32_t node, bool* handled) {
  cstate* st = user;
  if (!st->causal[node]) return PTC_OK;
  const gnode* n = graph_node(st->g, node);
  ptc_graph* d = replay_dst(r);
  ptc_arena scratch;
  ptc_arena_init(&scratch, 0);
  ptc_attr* at = ptc_arena_alloc(&scratch, (n->attrs.n + 2) * sizeof *at);
  ptc_status s = at ? replay_attrs(d, &n->attrs, &scratch, at) : ptc_status_oom();
  size_t na = 0;
  for (size_t i = 0; !s && i < n->attrs.n; i++)
    if (strcmp(at[i].name, "is_causal") != 0) at[na++] = at[i];
  ptc_value in[3] = {replay_map(r, n->in[0]), replay_map(r, n->in[1]), replay_map(r, n->in[2])}, o;
  if (!s) {
    at[na++] = ptc_attr_bool("is_causal", 1);
    s = add1(d, SDPA_OP, in, 3, at, na, &o);
  }
  ptc_arena_free(&scratch);
  PTC_TRY(s);
  replay_set(r, n->out[0], o);
  *handled = true;
  return PTC_OK;
}

/* sdpa nodes of g with a boolean mask computed from no graph input that is
 * the causal pattern, rewritten to is_causal without it (*out: the new
 * graph, NULL when none was). */
static ptc_status causal_masks(const ptc_graph* g, ptc_graph** out, size_t* n_rewritten) {
  *out = NULL;
  *n_rewritten = 0;
  cstate st = {g, calloc(g->nodes.len + 1, sizeof(bool))};
  ptc_value* seen = malloc((g->nodes.len + 1) * sizeof *seen); /* masks evaluated */
  bool* seen_ok = malloc((g->nodes.len + 1) * sizeof *seen_ok);
  size_t n_seen = 0, n_causal = 0;
  if (!st.causal || !seen || !seen_ok) {
    free(st.causal);
    free(seen);
    free(seen_ok);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    if (strcmp(n->op->name, SDPA_OP) != 0 || n->n_in < 4 || n->in[3] == PTC_VALUE_NONE ||
        n->n_out != 1)
      continue;
    const gattr* ca = gattrs_find(&n->attrs, "is_causal");
    const gvalue* q = graph_value(g, n->in[0]);
    const gvalue* k = graph_value(g, n->in[1]);
    int64_t L, S;
    if ((ca && ca->i != 0) || graph_value(g, n->in[3])->dtype != PTC_BOOL || q->rank < 2 ||
        k->rank < 2 || !sym_is_const(q->shape[q->rank - 2], &L) ||
        !sym_is_const(k->shape[k->rank - 2], &S))
      continue;
    size_t j = 0;
    while (j < n_seen && seen[j] != n->in[3]) j++;
    if (j == n_seen) {
      seen[n_seen] = n->in[3];
      seen_ok[n_seen++] = mask_is_causal(g, n->in[3], L, S);
    }
    st.causal[i] = seen_ok[j];
    n_causal += st.causal[i];
  }
  free(seen);
  free(seen_ok);
  ptc_status s = PTC_OK;
  if (n_causal) {
    replay_hooks h;
    memset(&h, 0, sizeof h);
    h.user = &st;
    h.borrow_constants = true;
    h.rewrite = causal_hook;
    s = replay_run(g, &h, out);
    if (!s) s = ptc_graph_eliminate_dead_code(*out, NULL);
    if (s) {
      ptc_graph_destroy(*out);
      *out = NULL;
    } else {
      *n_rewritten = n_causal;
    }
  }
  free(st.causal);
  return s;
}

ptc_status cuda_attn_match(const ptc_graph* g, ptc_graph** out, size_t* n_rewritten) {
  *out = NULL;
  if (n_rewritten) *n_rewritten = 0;
  const char* env = getenv("PTC_CUDA_ATTN_MATCH");
  if ((env && strcmp(env, "0") == 0) || !cuda_attn_graph_ok(g)) return PTC_OK;
  mstate st;
  memset(&st, 0, sizeof st);
  st.g = g;
  ptc_status s = find_matches(&st);
  ptc_graph* rg = NULL;
  if (!s && st.n_m > 0) {
    replay_hooks h;
    memset(&h, 0, sizeof h);
    h.user = &st;
    h.borrow_constants = true;
    h.rewrite = rewrite_hook;
    s = replay_run(g, &h, &rg);
    if (!s && st.rewritten > 0) s = ptc_graph_eliminate_dead_code(rg, NULL);
    if (!s && (st.rewritten == 0 || !cuda_attn_graph_ok(rg))) {
      ptc_graph_destroy(rg);
      rg = NULL;
      st.rewritten = 0;
    }
  }
  if (s) {
    ptc_graph_destroy(rg);
    rg = NULL;
    st.rewritten = 0;
  }
  free(st.uses);
  free(st.at);
  free(st.m);
  size_t n_causal = 0;
  if (!s) {
    ptc_graph* cg = NULL;
    s = causal_masks(rg ? rg : g, &cg, &n_causal);
    if (!s && cg && !cuda_attn_graph_ok(cg)) {
      ptc_graph_destroy(cg);
      cg = NULL;
      n_causal = 0;
    }
    if (cg) {
      ptc_graph_destroy(rg);
      rg = cg;
    }
  }
  if (s) {
    ptc_graph_destroy(rg);
    rg = NULL;
    st.rewritten = n_causal = 0;
  }
  *out = rg;
  if (n_rewritten) *n_rewritten = st.rewritten + n_causal;
  return s ? ptc_status_prefix(s, "cuda attention rewrite") : PTC_OK;
}
