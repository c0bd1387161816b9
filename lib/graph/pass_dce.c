/* pass_dce.c - dead-code elimination (ptc_graph_eliminate_dead_code) and
 * graph_compact, the shared "keep these values and nodes, renumber densely"
 * rebuild used by every pass that removes things.
 *
 * Liveness: graph outputs are live; a node is live when any of its outputs
 * is live, and then its inputs are live. Nodes are stored in topological
 * order (a node only uses values that exist when it is added, or constants
 * that passes substitute), so one backward sweep over the nodes suffices.
 * Graph inputs are always kept; all outputs of a live node are kept.
 */
#include "op.h"

#include <stdlib.h>
#include <string.h>

/* Remaps a list of value ids into the arena; NULL on OOM or a dropped id
 * (reported through *bad). */
static ptc_value* remap_ids(ptc_graph* g, const ptc_value* ids, size_t n, const ptc_value* map,
                            bool* bad) {
  ptc_value* r = ptc_arena_alloc(&g->arena, (n + 1) * sizeof *r);
  if (!r) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] == PTC_VALUE_NONE) {
      r[i] = PTC_VALUE_NONE;
      continue;
    }
    r[i] = map[ids[i]];
    if (r[i] == PTC_VALUE_NONE) *bad = true;
  }
  return r;
}

static ptc_status remap_vec(const ptc_vec* src, const ptc_value* map, ptc_vec* dst,
                            const char* what) {
  ptc_vec_init(dst, sizeof(ptc_value));
  if (!ptc_vec_reserve(dst, src->len + 1)) return ptc_status_oom();
  for (size_t i = 0; i < src->len; i++) {
    ptc_value v = map[PTC_VEC_AT(src, ptc_value, i)];
    if (v == PTC_VALUE_NONE) {
      ptc_vec_free(dst);
      return PTC_ERR(INTERNAL, "graph_compact: %s %zu refers to a removed value", what, i);
    }
    ptc_vec_push(dst, &v);
  }
  return PTC_OK;
}

/* Builds the new value/node vectors; commits nothing. */
static ptc_status compact_build(ptc_graph* g, const bool* keep_value, const bool* keep_node,
                                ptc_value* map, ptc_vec* values, ptc_vec* nodes, ptc_vec* inputs,
                                ptc_vec* outputs) {
  uint32_t* node_map = malloc((g->nodes.len + 1) * sizeof *node_map);
  if (!node_map) return ptc_status_oom();
  uint32_t nn = 0;
  for (size_t i = 0; i < g->nodes.len; i++) node_map[i] = keep_node[i] ? nn++ : UINT32_MAX;
  ptc_value nv = 0;
  for (size_t i = 0; i < g->values.len; i++) {
    const gvalue* v = graph_value(g, (ptc_value)i);
    bool keep = keep_value[i] || v->kind == PTC_VALUE_INPUT;
    if (keep && v->kind == PTC_VALUE_NODE && node_map[v->node] == UINT32_MAX) keep = false;
    map[i] = keep ? nv++ : PTC_VALUE_NONE;
  }
  ptc_status s = PTC_OK;
  bool bad = false;
  if (!ptc_vec_reserve(values, (size_t)nv + 1) || !ptc_vec_reserve(nodes, (size_t)nn + 1))
    s = ptc_status_oom();
  for (size_t i = 0; !s && i < g->values.len; i++) {
    if (map[i] == PTC_VALUE_NONE) continue;
    gvalue* v = ptc_vec_push(values, graph_value(g, (ptc_value)i));
    if (v->kind == PTC_VALUE_NODE) v->node = node_map[v->node];
  }
  for (size_t i = 0; !s && i < g->nodes.len; i++) {
    if (!keep_node[i]) continue;
    gnode* n = ptc_vec_push(nodes, graph_node(g, i));
    ptc_value* in = remap_ids(g, n->in, n->n_in, map, &bad);
    ptc_value* out = remap_ids(g, n->out, n->n_out, map, &bad);
    if (!in || !out) s = ptc_status_oom();
    n->in = in;
    n->out = out;
  }
  if (!s && bad) s = PTC_ERR(INTERNAL, "graph_compact: a kept node uses a removed value");
  if (!s) s = remap_vec(&g->inputs, map, inputs, "input");
  if (!s) {
    s = remap_vec(&g->outputs, map, outputs, "output");
    if (s) ptc_vec_free(inputs);
  }
  free(node_map);
  return s;
}

ptc_status graph_compact(ptc_graph* g, const bool* keep_value, const bool* keep_node) {
  ptc_value* map = malloc((g->values.len + 1) * sizeof *map);
  if (!map) return ptc_status_oom();
  ptc_vec values, nodes, inputs, outputs;
  ptc_vec_init(&values, sizeof(gvalue));
  ptc_vec_init(&nodes, sizeof(gnode));
  ptc_status s = compact_build(g, keep_value, keep_node, map, &values, &nodes, &inputs, &outputs);
  if (s) {
    ptc_vec_free(&values);
    ptc_vec_free(&nodes);
    free(map);
    return s;
  }
  /* commit: free the data of dropped constants, swap the vectors */
  for (size_t i = 0; i < g->values.len; i++)
    if (map[i] == PTC_VALUE_NONE) free(graph_value(g, (ptc_value)i)->owned);
  free(map);
  ptc_vec_free(&g->values);
  ptc_vec_free(&g->nodes);
  ptc_vec_free(&g->inputs);
  ptc_vec_free(&g->outputs);
  g->values = values;
  g->nodes = nodes;
  g->inputs = inputs;
  g->outputs = outputs;
  return PTC_OK;
}

ptc_status ptc_graph_eliminate_dead_code(ptc_graph* g, size_t* removed) {
  if (!g) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_eliminate_dead_code: NULL graph");
  bool* live = calloc(g->values.len + 1, sizeof *live);
  bool* keep_node = calloc(g->nodes.len + 1, sizeof *keep_node);
  if (!live || !keep_node) {
    free(live);
    free(keep_node);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < g->outputs.len; i++) live[PTC_VEC_AT(&g->outputs, ptc_value, i)] = true;
  size_t kept = 0;
  for (size_t i = g->nodes.len; i-- > 0;) {
    const gnode* n = graph_node(g, i);
    for (uint32_t o = 0; o < n->n_out; o++) keep_node[i] |= live[n->out[o]];
    if (!keep_node[i]) continue;
    kept++;
    for (uint32_t o = 0; o < n->n_out; o++) live[n->out[o]] = true;
    for (uint32_t k = 0; k < n->n_in; k++)
      if (n->in[k] != PTC_VALUE_NONE) live[n->in[k]] = true;
  }
  size_t n_removed = g->nodes.len - kept;
  bool any_value = false;
  for (size_t i = 0; i < g->values.len; i++)
    any_value |= !live[i] && graph_value(g, (ptc_value)i)->kind == PTC_VALUE_CONSTANT;
  ptc_status s = n_removed || any_value ? graph_compact(g, live, keep_node) : PTC_OK;
  free(live);
  free(keep_node);
  if (s) return s;
  if (removed) *removed = n_removed;
  return PTC_OK;
}
