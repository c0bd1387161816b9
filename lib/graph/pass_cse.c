/* pass_cse.c - common-subexpression elimination
 * (ptc_graph_eliminate_common_subexpressions).
 *
 * Nodes are visited in topological order. A node's key is its op, its
 * inputs (after earlier merges) and its attribute values; keys are hashed
 * into an open-addressing table and compared in full on a hash match. A
 * duplicate's outputs are redirected to the first node's outputs; random ops
 * (OP_RANDOM) are never merged. Uses are rewritten in one commit step, then
 * dead-code elimination removes the duplicates.
 */
#include "op.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_double(double d, uint64_t h) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  return ptc_hash_mix(h, bits);
}

static uint64_t hash_attr(const gattr* a, uint64_t h) {
  h = ptc_hash_mix(h, ptc_hash_bytes(a->name, strlen(a->name), (uint64_t)a->type));
  h = ptc_hash_mix(h, (uint64_t)a->i);
  h = hash_double(a->f, h);
  h = ptc_hash_mix(h, a->count);
  for (size_t i = 0; a->exprs && i < a->count; i++) h = ptc_hash_mix(h, a->exprs[i]->hash);
  for (size_t i = 0; a->floats && i < a->count; i++) h = hash_double(a->floats[i], h);
  if (a->s) h = ptc_hash_mix(h, ptc_hash_bytes(a->s, strlen(a->s), 0));
  if (a->sym) h = ptc_hash_mix(h, a->sym->hash);
  return h;
}

static ptc_value resolve_n(const ptc_value* repl, size_t n_repl, ptc_value v) {
  return v != PTC_VALUE_NONE && v < n_repl ? repl[v] : v;
}

/* During CSE every value id has an entry. */
static ptc_value resolve(const ptc_value* repl, ptc_value v) {
  return resolve_n(repl, SIZE_MAX, v);
}

static uint64_t node_hash(const gnode* n, const ptc_value* repl) {
  uint64_t h = ptc_hash_bytes(n->op->name, strlen(n->op->name), n->n_in);
  for (uint32_t i = 0; i < n->n_in; i++) h = ptc_hash_mix(h, resolve(repl, n->in[i]));
  for (size_t i = 0; i < n->attrs.n; i++) h = hash_attr(&n->attrs.a[i], h);
  return h;
}

static bool same_str(const char* a, const char* b) {
  return a == b || (a && b && strcmp(a, b) == 0);
}

/* Exact equality (floats bitwise: -0.0 and 0.0 differ, NaN equals itself). */
static bool attr_equal(const gattr* a, const gattr* b) {
  if (!same_str(a->name, b->name) || a->type != b->type || a->i != b->i ||
      memcmp(&a->f, &b->f, sizeof a->f) != 0 || a->count != b->count || !same_str(a->s, b->s) ||
      a->sym != b->sym || (a->exprs == NULL) != (b->exprs == NULL) ||
      (a->floats == NULL) != (b->floats == NULL))
    return false;
  for (size_t i = 0; a->exprs && i < a->count; i++)
    if (a->exprs[i] != b->exprs[i]) return false;
  return !a->floats || a->count == 0 || memcmp(a->floats, b->floats, a->count * sizeof(double)) == 0;
}

static bool node_equal(const gnode* a, const gnode* b, const ptc_value* repl) {
  if (a->op != b->op || a->n_in != b->n_in || a->n_out != b->n_out || a->attrs.n != b->attrs.n)
    return false;
  for (uint32_t i = 0; i < a->n_in; i++)
    if (resolve(repl, a->in[i]) != resolve(repl, b->in[i])) return false;
  for (size_t i = 0; i < a->attrs.n; i++)
    if (!attr_equal(&a->attrs.a[i], &b->attrs.a[i])) return false;
  return true;
}

typedef struct slot {
  uint64_t hash;
  size_t node; /* SIZE_MAX = empty */
} slot;

/* Fills repl (value -> canonical value); returns the number of merges. */
static size_t find_duplicates(const ptc_graph* g, ptc_value* repl, slot* table, size_t cap) {
  size_t merged = 0;
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    if (n->op->flags & OP_RANDOM) continue;
    uint64_t h = node_hash(n, repl);
    size_t k = (size_t)h & (cap - 1);
    while (table[k].node != SIZE_MAX &&
           !(table[k].hash == h && node_equal(graph_node(g, table[k].node), n, repl)))
      k = (k + 1) & (cap - 1);
    if (table[k].node == SIZE_MAX) {
      table[k].hash = h;
      table[k].node = i;
      continue;
    }
    const gnode* canon = graph_node(g, table[k].node);
    for (uint32_t o = 0; o < n->n_out; o++) repl[n->out[o]] = canon->out[o];
    merged++;
  }
  return merged;
}

/* graph_replace_uses (graph.h): new input arrays first, then pointer swaps,
 * so an allocation failure leaves the graph unchanged. */
ptc_status graph_replace_uses(ptc_graph* g, const ptc_value* repl, size_t n_repl) {
  const ptc_value** fresh = calloc(g->nodes.len + 1, sizeof *fresh);
  if (!fresh) return ptc_status_oom();
  for (size_t i = 0; i < g->nodes.len; i++) {
    const gnode* n = graph_node(g, i);
    bool changed = false;
    for (uint32_t k = 0; k < n->n_in; k++) changed |= resolve_n(repl, n_repl, n->in[k]) != n->in[k];
    if (!changed) continue;
    ptc_value* in = ptc_arena_alloc(&g->arena, (n->n_in + 1) * sizeof *in);
    if (!in) {
      free(fresh);
      return ptc_status_oom();
    }
    for (uint32_t k = 0; k < n->n_in; k++) in[k] = resolve_n(repl, n_repl, n->in[k]);
    fresh[i] = in;
  }
  for (size_t i = 0; i < g->nodes.len; i++)
    if (fresh[i]) graph_node(g, i)->in = fresh[i];
  for (size_t i = 0; i < g->outputs.len; i++) {
    ptc_value* v = &PTC_VEC_AT(&g->outputs, ptc_value, i);
    *v = resolve_n(repl, n_repl, *v);
  }
  free(fresh);
  return PTC_OK;
}

ptc_status ptc_graph_eliminate_common_subexpressions(ptc_graph* g, size_t* merged) {
  if (!g) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_eliminate_common_subexpressions: NULL graph");
  size_t cap = 16;
  while (cap < 2 * g->nodes.len + 2) cap *= 2;
  ptc_value* repl = malloc((g->values.len + 1) * sizeof *repl);
  slot* table = malloc(cap * sizeof *table);
  if (!repl || !table) {
    free(repl);
    free(table);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < g->values.len; i++) repl[i] = (ptc_value)i;
  for (size_t i = 0; i < cap; i++) table[i].node = SIZE_MAX;
  size_t n = find_duplicates(g, repl, table, cap);
  ptc_status s = n ? graph_replace_uses(g, repl, g->values.len) : PTC_OK;
  free(repl);
  free(table);
  if (!s && n) s = ptc_graph_eliminate_dead_code(g, NULL);
  if (s) return s;
  if (merged) *merged = n;
  return PTC_OK;
}
