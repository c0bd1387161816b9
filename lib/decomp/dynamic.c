/* dynamic.c - graph_make_dynamic: replays a graph with chosen input dims
 * turned into new size symbols ("d<input>_<dim>", hint = the static size,
 * range [2, 2^62]; sizes 0 and 1 stay static) and every meta function run
 * again. A node that cannot take the symbolic size fails the replay with a
 * message naming the node, its op and the input dims: either its meta
 * function rejects the shapes, or it records shape guards that fix a
 * dynamic size (an attribute such as reshape's static `shape` bakes it).
 * A size is "fixed" when the guards no longer hold once every dynamic size
 * is scaled by 2 or 3 (sizes that vary together, like two batch dims that
 * must match, pass this test). */
#include "replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dyn_sym {
  size_t var;      /* symbol index in the destination env */
  uint32_t input, dim;
  int64_t hint;
} dyn_sym;

typedef struct dyn_state {
  const ptc_dynamic_dim* dims;
  size_t n_dims;
  dyn_sym* syms;   /* n_dims capacity */
  size_t n_syms;
  size_t checked;  /* guards already known not to fix a dynamic size */
} dyn_state;

/* ---- symbols for the requested dims ------------------------------------------- */

static ptc_status check_dims(const ptc_graph* g, const ptc_dynamic_dim* dims, size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (dims[k].input >= g->inputs.len)
      return PTC_ERR(INVALID_ARGUMENT, "dynamic_dims[%zu]: input %u does not exist (%zu inputs)",
                     k, dims[k].input, g->inputs.len);
    const gvalue* v = graph_value(g, PTC_VEC_AT(&g->inputs, ptc_value, dims[k].input));
    if (dims[k].dim >= v->rank)
      return PTC_ERR(INVALID_ARGUMENT, "dynamic_dims[%zu]: input %u has rank %u, no dim %u", k,
                     dims[k].input, v->rank, dims[k].dim);
  }
  return PTC_OK;
}

/* "d<input>_<dim>", with a suffix if a symbol of that name exists. */
static void sym_name(const sym_env* env, uint32_t input, uint32_t dim, char* buf, size_t cap) {
  snprintf(buf, cap, "d%u_%u", input, dim);
  for (int k = 1; sym_find_var(env, buf) >= 0; k++) snprintf(buf, cap, "d%u_%u_%d", input, dim, k);
}

static ptc_status make_sym(dyn_state* st, ptc_graph* dst, uint32_t input, uint32_t dim,
                           ptc_dim* d) {
  char name[64];
  sym_name(dst->env, input, dim, name, sizeof name);
  ptc_symbol_options o;
  ptc_symbol_options_init(&o);
  o.hint = d->value;
  ptc_sym id = 0;
  PTC_TRY(ptc_graph_add_symbol(dst, name, &o, &id));
  dyn_sym* s = &st->syms[st->n_syms++];
  s->var = sym_num_vars(dst->env) - 1;
  s->input = input;
  s->dim = dim;
  s->hint = d->value;
  d->sym = id;
  return PTC_OK;
}

static ptc_status on_input(void* user, replay* r, size_t input, ptc_dim* dims, uint32_t rank) {
  dyn_state* st = user;
  (void)rank;
  for (size_t k = 0; k < st->n_dims; k++) {
    if (st->dims[k].input != input) continue;
    ptc_dim* d = &dims[st->dims[k].dim];
    if (d->sym || d->value < 2) continue; /* already symbolic, or 0/1 (specialised) */
    PTC_TRY(make_sym(st, replay_dst(r), (uint32_t)input, st->dims[k].dim, d));
  }
  return PTC_OK;
}

/* ---- blame ---------------------------------------------------------------------- */

static bool mentions(const sym_expr* e, size_t var) {
  if (e->kind == SYM_VAR) return (size_t)e->value == var;
  for (uint32_t i = 0; i < e->n; i++)
    if (mentions(e->args[i], var)) return true;
  return false;
}

/* Whether a dynamic symbol appears in the shapes of node's inputs. */
static bool in_node_inputs(replay* r, uint32_t node, size_t var) {
  const gnode* n = graph_node(replay_src(r), node);
  const ptc_graph* dst = replay_dst(r);
  for (uint32_t i = 0; i < n->n_in; i++) {
    ptc_value v = replay_map(r, n->in[i]);
    if (v == PTC_VALUE_NONE) continue;
    const gvalue* gv = graph_value(dst, v);
    for (uint32_t d = 0; d < gv->rank; d++)
      if (mentions(gv->shape[d], var)) return true;
  }
  return false;
}

/* "input 0 dim 0 (d0_0, static size 8), ..." for the blamed symbols. */
static void blame_text(const dyn_state* st, const sym_env* env, const bool* blamed,
                       ptc_strbuf* sb) {
  bool first = true;
  for (size_t j = 0; j < st->n_syms; j++) {
    if (!blamed[j]) continue;
    const dyn_sym* s = &st->syms[j];
    ptc_sb_printf(sb, "%sinput %u dim %u (%s, static size %lld)", first ? "" : ", ", s->input,
                  s->dim, sym_var_name(env, s->var), (long long)s->hint);
    first = false;
  }
}

static ptc_status blame_error(const dyn_state* st, replay* r, uint32_t node, const bool* blamed,
                              const char* verb, ptc_status cause, const char* advice) {
  const gnode* n = graph_node(replay_src(r), node);
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  ptc_sb_printf(&sb, "graph_make_dynamic: node %s (%s) %s ", n->name, n->op->name, verb);
  blame_text(st, replay_dst(r)->env, blamed, &sb);
  ptc_sb_printf(&sb, ": %s%s", ptc_status_message(cause), advice);
  ptc_status_destroy(cause);
  ptc_status e = sb.oom ? ptc_status_oom() : PTC_ERR(INVALID_ARGUMENT, "%s", sb.data);
  ptc_sb_free(&sb);
  return e;
}

/* ---- fixed sizes -------------------------------------------------------------------- */

/* Symbol values: hints (unbacked symbols take their lower bound), with the
 * dynamic symbols selected by `which` (NULL = all) scaled by k. */
static void scaled_values(const dyn_state* st, const sym_env* env, const bool* which, int64_t k,
                          int64_t* vals) {
  for (size_t i = 0; i < sym_num_vars(env); i++) {
    int64_t lo, hi;
    sym_var_range(env, i, &lo, &hi);
    vals[i] = sym_var_hint(env, i) == SYM_NO_HINT ? lo : sym_var_hint(env, i);
  }
  for (size_t j = 0; j < st->n_syms; j++) {
    if (which && !which[j]) continue;
    int64_t lo, hi, v;
    sym_var_range(env, st->syms[j].var, &lo, &hi);
    if (!ptc_mul_ok(st->syms[j].hint, k, &v) || v > hi) v = hi;
    vals[st->syms[j].var] = v;
  }
}

/* First guard failure with the selected symbols scaled by 2 and 3, or OK. */
static ptc_status scaled_check(const dyn_state* st, const sym_env* env, const bool* which,
                               int64_t* vals) {
  for (int64_t k = 2; k <= 3; k++) {
    scaled_values(st, env, which, k, vals);
    PTC_TRY(sym_check_guards(env, vals, sym_num_vars(env)));
  }
  return PTC_OK;
}

/* Runs the scaled check with the dynamic symbols `which` scaled; *fails
 * tells whether it failed (an allocation failure is returned). */
static ptc_status check_subset(const dyn_state* st, const sym_env* env, const bool* which,
                               int64_t* vals, bool* fails) {
  ptc_status s = scaled_check(st, env, which, vals);
  if (s && ptc_status_code(s) == PTC_CODE_RESOURCE_EXHAUSTED) return s;
  *fails = s != NULL;
  ptc_status_destroy(s);
  return PTC_OK;
}

/* Marks the fixed symbols: those whose removal alone lets the others scale
 * (a size fixed to a constant); else those that cannot scale on their own
 * (sizes tied to a static one through others); else the dynamic symbols of
 * the node's inputs; else all. */
static ptc_status blame_fixed(const dyn_state* st, replay* r, uint32_t node, int64_t* vals,
                              bool* blamed) {
  const sym_env* env = replay_dst(r)->env;
  bool* which = calloc(st->n_syms + 1, sizeof *which);
  if (!which) return ptc_status_oom();
  bool any = false, fails = false;
  ptc_status s = PTC_OK;
  for (size_t j = 0; !s && j < st->n_syms; j++) { /* all but j */
    for (size_t i = 0; i < st->n_syms; i++) which[i] = i != j;
    s = check_subset(st, env, which, vals, &fails);
    any |= blamed[j] = !s && !fails;
  }
  bool alone = !any;
  for (size_t j = 0; !s && alone && j < st->n_syms; j++) { /* j alone */
    for (size_t i = 0; i < st->n_syms; i++) which[i] = i == j;
    s = check_subset(st, env, which, vals, &fails);
    any |= blamed[j] = !s && fails;
  }
  free(which);
  bool inputs = !any;
  for (size_t j = 0; !s && inputs && j < st->n_syms; j++)
    any |= blamed[j] = in_node_inputs(r, node, st->syms[j].var);
  for (size_t j = 0; !s && !any && j < st->n_syms; j++) blamed[j] = true;
  return s;
}

static ptc_status fixed_error(dyn_state* st, replay* r, uint32_t node, int64_t* vals,
                              ptc_status cause) {
  bool* blamed = calloc(st->n_syms + 1, sizeof *blamed);
  ptc_status s = blamed ? blame_fixed(st, r, node, vals, blamed) : ptc_status_oom();
  if (s) {
    ptc_status_destroy(cause);
    free(blamed);
    return s;
  }
  s = blame_error(st, r, node, blamed, "fixes the size of", cause,
                  " (an attribute or a constant of this node bakes the static size; keep the "
                  "dim static or make the attribute symbolic)");
  free(blamed);
  return s;
}

static ptc_status after_node(void* user, replay* r, uint32_t node) {
  dyn_state* st = user;
  const sym_env* env = replay_dst(r)->env;
  if (st->n_syms == 0 || sym_num_guards(env) == st->checked) return PTC_OK;
  int64_t* vals = calloc(sym_num_vars(env) + 1, sizeof *vals);
  if (!vals) return ptc_status_oom();
  ptc_status s = scaled_check(st, env, NULL, vals);
  if (s && ptc_status_code(s) != PTC_CODE_RESOURCE_EXHAUSTED) s = fixed_error(st, r, node, vals, s);
  if (!s) st->checked = sym_num_guards(env);
  free(vals);
  return s;
}

/* A meta function rejected the symbolic shapes. */
static ptc_status node_error(void* user, replay* r, uint32_t node, ptc_status s) {
  dyn_state* st = user;
  if (ptc_status_code(s) == PTC_CODE_RESOURCE_EXHAUSTED) return s;
  const gnode* n = graph_node(replay_src(r), node);
  bool* blamed = calloc(st->n_syms + 1, sizeof *blamed);
  if (!blamed) {
    ptc_status_destroy(s);
    return ptc_status_oom();
  }
  bool any = false;
  for (size_t j = 0; j < st->n_syms; j++) any |= blamed[j] = in_node_inputs(r, node, st->syms[j].var);
  if (!any) {
    free(blamed);
    return ptc_status_prefix(s, "graph_make_dynamic: node %s (%s)", n->name, n->op->name);
  }
  ptc_status e = blame_error(st, r, node, blamed, "does not support a dynamic", s,
                             " (keep the dim static)");
  free(blamed);
  return e;
}

ptc_status graph_make_dynamic(const ptc_graph* g, const ptc_dynamic_dim* dims, size_t n,
                              ptc_graph** out) {
  if (!g || !out || (n && !dims))
    return PTC_ERR(INVALID_ARGUMENT, "graph_make_dynamic: NULL argument");
  PTC_TRY(check_dims(g, dims, n));
  dyn_state st;
  memset(&st, 0, sizeof st);
  st.dims = dims;
  st.n_dims = n;
  st.syms = calloc(n + 1, sizeof *st.syms);
  if (!st.syms) return ptc_status_oom();
  replay_hooks h;
  memset(&h, 0, sizeof h);
  h.user = &st;
  h.input_dims = on_input;
  h.after_node = after_node;
  h.node_error = node_error;
  ptc_status s = replay_run(g, &h, out);
  free(st.syms);
  return s;
}
