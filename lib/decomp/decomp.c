/* decomp.c - decomp_graph: a replay whose rewrite hook looks every node's op
 * up in the decomposition table, runs the decomposition into the new graph
 * and checks that it reproduced the op's output dtypes and shapes. */
#include "decomp.h"
#include "decomp_internal.h"

#include <string.h>

typedef struct dstate {
  decomp_options o;
  ptc_arena scratch; /* attribute arrays of emitted nodes */
} dstate;

static ptc_status shape_text(const ptc_graph* g, uint32_t rank, const sym_expr* const* shape,
                             int32_t dtype, ptc_strbuf* sb) {
  ptc_sb_printf(sb, "%s ", ptc_dtype_name(dtype));
  graph_format_shape(g->env, rank, shape, sb);
  return sb->oom ? ptc_status_oom() : PTC_OK;
}

static ptc_status mismatch(dctx* d, uint32_t k, const gvalue* want, const gvalue* got) {
  ptc_strbuf a, b;
  ptc_sb_init(&a);
  ptc_sb_init(&b);
  ptc_status s = shape_text(d->src, want->rank, want->shape, want->dtype, &a);
  if (!s) s = shape_text(d->g, got->rank, got->shape, got->dtype, &b);
  if (!s)
    s = PTC_ERR(INTERNAL, "the decomposition produced %s for output %u, expected %s", b.data, k,
                a.data);
  ptc_sb_free(&a);
  ptc_sb_free(&b);
  return s;
}

/* 1 if the replacement of output k has the source output's dtype and
 * shape, 0 if its sizes are only equal under shape guards (broadcasting
 * kept another input's expression), -1 otherwise. */
static int same_meta(dctx* d, uint32_t k, const sym_expr** want_shape) {
  const gvalue* want = graph_value(d->src, d->node->out[k]);
  const gvalue* got = graph_value(d->g, d->out[k]);
  if (want->dtype != got->dtype || want->rank != got->rank) return -1;
  int r = 1;
  for (uint32_t i = 0; i < want->rank; i++) {
    if (want_shape[i] == got->shape[i]) continue;
    bool eq = false;
    ptc_status s = sym_guard(d->g->env, SYM_EQ, want_shape[i], got->shape[i], &eq);
    ptc_status_destroy(s);
    if (s || !eq) return -1;
    r = 0;
  }
  return r;
}

/* Output k must reproduce the source output's dtype and shape; sizes equal
 * under guards are given the source's expressions with a reshape (a view). */
static ptc_status check_output(dctx* d, uint32_t k) {
  if (d->out[k] == PTC_VALUE_NONE)
    return PTC_ERR(INTERNAL, "the decomposition produced no output %u", k);
  uint32_t rank;
  const sym_expr** sh = dx_out_shape(d, k, &rank);
  if (!sh) return dx_finish(d, PTC_VALUE_NONE);
  int same = same_meta(d, k, sh);
  if (same < 0)
    return mismatch(d, k, graph_value(d->src, d->node->out[k]), graph_value(d->g, d->out[k]));
  if (same == 0) d->out[k] = dx_reshape(d, d->out[k], rank, sh);
  return d->err ? dx_finish(d, PTC_VALUE_NONE) : PTC_OK;
}

static ptc_status run_decomp(dstate* st, replay* r, const gnode* n, decomp_fn fn, bool* handled) {
  dctx d;
  memset(&d, 0, sizeof d);
  d.g = replay_dst(r);
  d.src = replay_src(r);
  d.node = n;
  d.n_in = n->n_in;
  d.scratch = &st->scratch;
  ptc_value* in = ptc_arena_alloc(&st->scratch, (n->n_in + 1) * sizeof *in);
  if (!in) return ptc_status_oom();
  for (uint32_t i = 0; i < n->n_in; i++) in[i] = replay_map(r, n->in[i]);
  d.in = in;
  for (uint32_t k = 0; k < DX_MAX_OUT; k++) d.out[k] = PTC_VALUE_NONE;
  ptc_status s = fn(&d);
  if (!s) s = d.err;
  else ptc_status_destroy(d.err);
  if (s || d.declined) return s;
  for (uint32_t k = 0; k < n->n_out; k++) PTC_TRY(check_output(&d, k));
  for (uint32_t k = 0; k < n->n_out; k++) replay_set(r, n->out[k], d.out[k]);
  *handled = true;
  return PTC_OK;
}

static ptc_status rewrite(void* user, replay* r, uint32_t node, bool* handled) {
  dstate* st = user;
  const gnode* n = graph_node(replay_src(r), node);
  decomp_fn fn = decomp_find(n->op->name);
  if (!fn || n->n_out > DX_MAX_OUT || (st->o.want && !st->o.want(st->o.user, n->op->name)) ||
      (st->o.want_node && !st->o.want_node(st->o.user, replay_src(r), n)))
    return PTC_OK;
  return run_decomp(st, r, n, fn, handled);
}

ptc_status decomp_graph_ex(const ptc_graph* g, const decomp_options* o, ptc_graph** out) {
  if (!g || !out) return PTC_ERR(INVALID_ARGUMENT, "decomp_graph: NULL argument");
  dstate st;
  memset(&st, 0, sizeof st);
  if (o) st.o = *o;
  ptc_arena_init(&st.scratch, 0);
  replay_hooks h;
  memset(&h, 0, sizeof h);
  h.user = &st;
  h.rewrite = rewrite;
  h.borrow_constants = st.o.borrow_constants;
  ptc_status s = replay_run(g, &h, out);
  ptc_arena_free(&st.scratch);
  return ptc_status_prefix(s, "decomp");
}

ptc_status decomp_graph(const ptc_graph* g, ptc_graph** out) { return decomp_graph_ex(g, NULL, out); }
