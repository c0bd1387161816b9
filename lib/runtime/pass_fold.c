/* pass_fold.c - constant folding (ptc_graph_fold_constants).
 *
 * Visits nodes in topological order. A node folds when it has at least one
 * tensor input, every present input is a constant (possibly one folded
 * earlier in this pass, so chains fold), its op is deterministic (not
 * OP_RANDOM), its attributes are static and each output has a static shape
 * of at most max_bytes. It is evaluated through the public API: a small
 * graph holding the node with its inputs as borrowed constants, compiled
 * with the "ref" backend and run with ptc_executable_run_alloc. Its outputs
 * become new (owned) constants; uses are rewritten in one commit step and
 * dead-code elimination drops the folded nodes. On error the graph is left
 * unchanged.
 */
#include "../graph/op.h"

#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_BYTES ((uint64_t)16 << 20)

/* Defined in lib/graph/pass_cse.c (shared use rewriting). */

static ptc_value resolve(const ptc_value* repl, size_t n, ptc_value v) {
  return v != PTC_VALUE_NONE && v < n ? repl[v] : v;
}

static bool static_shape(const gvalue* v, int64_t* dims) {
  for (uint32_t d = 0; d < v->rank; d++)
    if (!sym_is_const(v->shape[d], &dims[d])) return false;
  return true;
}

static bool attrs_static(const gattrs* as) {
  for (size_t i = 0; i < as->n; i++) {
    const gattr* a = &as->a[i];
    int64_t c;
    if (a->type == PTC_ATTR_SYM && a->sym && !sym_is_const(a->sym, &c)) return false;
    for (size_t k = 0; a->type == PTC_ATTR_INTS && k < a->count; k++)
      if (!sym_is_const(a->exprs[k], &c)) return false;
  }
  return true;
}

static bool foldable(const ptc_graph* g, const gnode* n, const ptc_value* repl, size_t n_repl,
                     uint64_t max_bytes) {
  if ((n->op->flags & OP_RANDOM) || !attrs_static(&n->attrs)) return false;
  size_t present = 0;
  for (uint32_t i = 0; i < n->n_in; i++) {
    ptc_value v = resolve(repl, n_repl, n->in[i]);
    if (v == PTC_VALUE_NONE) continue;
    if (graph_value(g, v)->kind != PTC_VALUE_CONSTANT) return false;
    present++;
  }
  if (!present) return false;
  for (uint32_t o = 0; o < n->n_out; o++) {
    const gvalue* v = graph_value(g, n->out[o]);
    int64_t numel, bytes;
    if (!graph_static_numel(v, &numel) ||
        !ptc_mul_ok(numel, (int64_t)ptc_dtype_size(v->dtype), &bytes) ||
        (uint64_t)bytes > max_bytes)
      return false;
  }
  return true;
}

/* Public form of a stored attribute (arrays in scratch). */
static bool public_attr(const gattr* a, ptc_arena* scratch, ptc_attr* out) {
  memset(out, 0, sizeof *out);
  out->name = a->name;
  out->type = a->type;
  out->i = a->i;
  out->f = a->f;
  out->s = a->s;
  out->count = a->count;
  out->floats = a->floats;
  if (a->type == PTC_ATTR_SYM) { /* static (checked): pass as an int */
    out->type = PTC_ATTR_INT;
    sym_is_const(a->sym, &out->i);
  }
  if (a->type == PTC_ATTR_INTS) {
    int64_t* iv = ptc_arena_alloc(scratch, (a->count + 1) * sizeof *iv);
    if (!iv) return false;
    for (size_t k = 0; k < a->count; k++) sym_is_const(a->exprs[k], &iv[k]);
    out->ints = iv;
  }
  return true;
}

/* Builds the one-node graph: inputs as borrowed constants. */
static ptc_status build_small(const ptc_graph* g, const gnode* n, const ptc_value* repl,
                              size_t n_repl, ptc_arena* scratch, ptc_graph* small) {
  ptc_value* ins = ptc_arena_alloc(scratch, (n->n_in + 1) * sizeof *ins);
  ptc_attr* attrs = ptc_arena_alloc(scratch, (n->attrs.n + 1) * sizeof *attrs);
  if (!ins || !attrs) return ptc_status_oom();
  for (uint32_t i = 0; i < n->n_in; i++) {
    ptc_value v = resolve(repl, n_repl, n->in[i]);
    ins[i] = PTC_VALUE_NONE;
    if (v == PTC_VALUE_NONE) continue;
    const gvalue* c = graph_value(g, v);
    int64_t dims[PTC_MAX_RANK + 1];
    static_shape(c, dims); /* constants are static */
    PTC_TRY(ptc_graph_add_constant(small, c->name, c->dtype, dims, c->rank, c->data,
                                   PTC_CONSTANT_BORROW, &ins[i]));
  }
  for (size_t i = 0; i < n->attrs.n; i++)
    if (!public_attr(&n->attrs.a[i], scratch, &attrs[i])) return ptc_status_oom();
  ptc_value outs[64];
  size_t n_out = 0;
  PTC_TRY(ptc_graph_add_node(small, n->op->name, ins, n->n_in, attrs, n->attrs.n, outs, 64,
                             &n_out));
  if (n_out != n->n_out)
    return PTC_ERR(INTERNAL, "%s: rebuilt node has %zu outputs, expected %u", n->op->name, n_out,
                   n->n_out);
  for (size_t o = 0; o < n_out; o++) PTC_TRY(ptc_graph_add_output(small, outs[o]));
  return PTC_OK;
}

/* Adds each result as a new owned constant of g; new ids into repl. */
static ptc_status add_results(ptc_graph* g, const gnode* n, const ptc_results* res,
                              ptc_value* repl) {
  for (uint32_t o = 0; o < n->n_out; o++) {
    const ptc_tensor* t = ptc_results_get(res, o);
    const gvalue* v = graph_value(g, n->out[o]);
    int64_t dims[PTC_MAX_RANK + 1];
    static_shape(v, dims);
    if (!t || t->ndim != (int32_t)v->rank || t->strides)
      return PTC_ERR(INTERNAL, "%s: unexpected result layout for output %u", n->name, o);
    int32_t dtype = v->dtype;
    const char* name = v->name; /* arena string: stays valid while values grow */
    int64_t numel = 1;
    graph_static_numel(v, &numel); /* checked by foldable() */
    const void* data = numel ? t->data : NULL; /* keep no pointer into the results */
    PTC_TRY(ptc_graph_add_constant(g, name, dtype, dims, v->rank, data, PTC_CONSTANT_COPY,
                                   &repl[n->out[o]]));
  }
  return PTC_OK;
}

static ptc_status eval_node(ptc_graph* g, const gnode* n, ptc_value* repl, size_t n_repl) {
  ptc_graph* small = NULL;
  ptc_executable* exe = NULL;
  ptc_results* res = NULL;
  ptc_arena scratch;
  ptc_arena_init(&scratch, 4096);
  ptc_compile_options co;
  ptc_compile_options_init(&co);
  co.backend = "ref";
  ptc_status s = ptc_graph_create(g->ctx, &small);
  if (!s) s = build_small(g, n, repl, n_repl, &scratch, small);
  if (!s) s = ptc_compile(g->ctx, small, &co, &exe);
  if (!s) s = ptc_executable_run_alloc(exe, NULL, 0, NULL, &res);
  if (!s) s = add_results(g, n, res, repl);
  ptc_results_destroy(res);
  ptc_executable_release(exe);
  ptc_graph_destroy(small);
  ptc_arena_free(&scratch);
  return s;
}

/* Drops constants appended after `len` values (error rollback). */
static void truncate_values(ptc_graph* g, size_t len) {
  for (size_t i = len; i < g->values.len; i++) free(graph_value(g, (ptc_value)i)->owned);
  g->values.len = len;
}

ptc_status ptc_graph_fold_constants(ptc_graph* g, uint64_t max_bytes, size_t* folded) {
  if (!g) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_fold_constants: NULL graph");
  if (!max_bytes) max_bytes = DEFAULT_MAX_BYTES;
  size_t n_repl = g->values.len;
  ptc_value* repl = malloc((n_repl + 1) * sizeof *repl);
  if (!repl) return ptc_status_oom();
  for (size_t i = 0; i < n_repl; i++) repl[i] = (ptc_value)i;
  size_t count = 0;
  ptc_status s = PTC_OK;
  for (size_t i = 0; !s && i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    if (!foldable(g, n, repl, n_repl, max_bytes)) continue;
    s = eval_node(g, n, repl, n_repl);
    if (s) s = ptc_status_prefix(s, "ptc_graph_fold_constants: node %s", n->name);
    count++;
  }
  if (!s && count) s = graph_replace_uses(g, repl, n_repl);
  free(repl);
  if (s) {
    truncate_values(g, n_repl);
    return s;
  }
  if (count) PTC_TRY(ptc_graph_eliminate_dead_code(g, NULL));
  if (folded) *folded = count;
  return PTC_OK;
}
