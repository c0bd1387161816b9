/* order.c - kernel order and kernel records: the live groups sorted
 * topologically (among ready kernels the one holding the earliest node goes
 * first, so the order is stable w.r.t. the program order), then copied into
 * sched_kernel entries with their "k3_fused_amax_sum_div" style names. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* ---- min-heap of group ids keyed by their first node ------------------------- */
typedef struct heap {
  uint32_t* v;
  size_t n;
} heap;

static bool heap_less(const sched_ctx* c, uint32_t a, uint32_t b) {
  return c->groups[a].first < c->groups[b].first;
}

static void heap_push(const sched_ctx* c, heap* h, uint32_t g) {
  size_t i = h->n++;
  h->v[i] = g;
  while (i && heap_less(c, h->v[i], h->v[(i - 1) / 2])) {
    uint32_t t = h->v[i];
    h->v[i] = h->v[(i - 1) / 2];
    h->v[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static uint32_t heap_pop(const sched_ctx* c, heap* h) {
  uint32_t top = h->v[0];
  h->v[0] = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < h->n && heap_less(c, h->v[l], h->v[m])) m = l;
    if (r < h->n && heap_less(c, h->v[r], h->v[m])) m = r;
    if (m == i) break;
    uint32_t t = h->v[i];
    h->v[i] = h->v[m];
    h->v[m] = t;
    i = m;
  }
  return top;
}

/* ---- edges (deduplicated per source group through gmark) --------------------- */
typedef struct edge_visit {
  uint32_t epoch;
  uint32_t* indeg; /* count mode: indegree per group */
  heap* ready;     /* release mode: groups that become ready */
} edge_visit;

static void visit_edge(sched_ctx* c, uint32_t g, void* user) {
  edge_visit* e = user;
  if (c->gmark[g] == e->epoch) return;
  c->gmark[g] = e->epoch;
  if (!e->ready) {
    e->indeg[g]++;
  } else if (--e->indeg[g] == 0) {
    heap_push(c, e->ready, g);
  }
}

static ptc_status topo_order(sched_ctx* c, uint32_t* order, uint32_t* n_order) {
  uint32_t* indeg = calloc(c->n_nodes + 1, sizeof *indeg);
  heap h = {calloc(c->n_nodes + 1, sizeof *h.v), 0};
  if (!indeg || !h.v) {
    free(indeg);
    free(h.v);
    return ptc_status_oom();
  }
  edge_visit e = {0, indeg, NULL};
  for (uint32_t g = 0; g < c->n_nodes; g++) {
    if (!c->groups[g].alive) continue;
    e.epoch = sched_next_epoch(c);
    sched_group_successors(c, g, visit_edge, &e);
  }
  uint32_t n_live = 0;
  for (uint32_t g = 0; g < c->n_nodes; g++) {
    if (!c->groups[g].alive) continue;
    n_live++;
    if (!indeg[g]) heap_push(c, &h, g);
  }
  e.ready = &h;
  *n_order = 0;
  while (h.n) {
    uint32_t g = heap_pop(c, &h);
    order[(*n_order)++] = g;
    e.epoch = sched_next_epoch(c);
    sched_group_successors(c, g, visit_edge, &e);
  }
  free(indeg);
  free(h.v);
  if (*n_order != n_live)
    return PTC_ERR(INTERNAL, "scheduler: kernel dependencies form a cycle (%u of %u ordered)",
                   *n_order, n_live);
  return NULL;
}

/* ---- names --------------------------------------------------------------------- */
static const char* const kind_short[] = {"pointwise", "reduction", "extern"};

/* Short op name of a node's origin ("amax_3" -> "amax", "aten.sum" -> "sum"). */
static void short_name(const ir_node* n, char* out, size_t cap) {
  const char* o = n->origin;
  if (!o || !o[0]) o = n->kind >= 0 && n->kind <= IR_EXTERN ? kind_short[n->kind] : "node";
  size_t len = strcspn(o, ", ;+");
  for (size_t i = len; i > 0; i--)
    if (o[i - 1] == '.' || o[i - 1] == '/') {
      o += i;
      len -= i;
      break;
    }
  size_t end = len;
  while (end && isdigit((unsigned char)o[end - 1])) end--;
  if (end && end < len && o[end - 1] == '_') len = end - 1;
  size_t k = 0;
  for (size_t i = 0; i < len && k + 1 < cap; i++)
    out[k++] = isalnum((unsigned char)o[i]) ? o[i] : '_';
  out[k] = 0;
}

static void kernel_name(const sched_ctx* c, const sgroup* g, uint32_t k, char* name, size_t cap) {
  int w = snprintf(name, cap, "k%u_%s", k, g->n > 1 ? "fused" : "");
  size_t len = w > 0 && (size_t)w < cap ? (size_t)w : cap - 1;
  char prev[32] = "", cur[32];
  for (uint32_t m = 0; m < g->n && len + 1 < cap; m++) {
    short_name(ir_node_at(c->p, g->nodes[m]), cur, sizeof cur);
    if (!cur[0] || !strcmp(cur, prev)) continue;
    w = snprintf(name + len, cap - len, "%s%s", g->n > 1 ? "_" : "", cur);
    len = w > 0 && len + (size_t)w < cap ? len + (size_t)w : cap - 1;
    memcpy(prev, cur, sizeof prev);
  }
}

static ptc_status fill_kernel(const sched_ctx* c, const sgroup* g, uint32_t k, sched_kernel* out) {
  out->n_nodes = g->n;
  out->nodes = malloc(g->n * sizeof *out->nodes);
  out->node_inner = malloc(g->n);
  out->n_ranges = g->n_ranges;
  out->n_rranges = g->n_rranges;
  out->ranges = calloc(g->n_ranges + 1, sizeof *out->ranges);
  out->rranges = calloc(g->n_rranges + 1, sizeof *out->rranges);
  if (!out->nodes || !out->node_inner || !out->ranges || !out->rranges) return ptc_status_oom();
  memcpy(out->nodes, g->nodes, g->n * sizeof *out->nodes);
  memcpy(out->node_inner, g->inner, g->n);
  if (g->n_ranges) memcpy(out->ranges, g->ranges, g->n_ranges * sizeof *out->ranges);
  if (g->n_rranges) memcpy(out->rranges, g->rranges, g->n_rranges * sizeof *out->rranges);
  out->is_extern = g->is_extern;
  kernel_name(c, g, k, out->name, sizeof out->name);
  return NULL;
}

ptc_status sched_build_kernels(sched_ctx* c, sched_plan* s) {
  uint32_t* order = calloc(c->n_nodes + 1, sizeof *order);
  if (!order) return ptc_status_oom();
  uint32_t n = 0;
  ptc_status st = topo_order(c, order, &n);
  if (!st) {
    s->kernels = calloc(n + 1, sizeof *s->kernels);
    if (!s->kernels) st = ptc_status_oom();
  }
  for (uint32_t k = 0; !st && k < n; k++) {
    s->n_kernels = k + 1;
    st = fill_kernel(c, &c->groups[order[k]], k, &s->kernels[k]);
  }
  free(order);
  return st;
}
