/* groups.c - the kernels being formed during fusion: one group per node at
 * first, merging two groups (members kept in program order, inner flags
 * set), the group-level dependency edges, and readable labels. */
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"

/* Longest group label in the decision log before it is shortened. */
#define SCHED_LABEL_MAX 48

uint32_t sched_next_epoch(sched_ctx* c) {
  if (++c->epoch == 0) {
    memset(c->gmark, 0, (c->n_nodes + 1) * sizeof *c->gmark);
    memset(c->bmark, 0, (c->n_bufs + 1) * sizeof *c->bmark);
    c->epoch = 1;
  }
  return c->epoch;
}

static void group_of_node(sched_ctx* c, uint32_t i, sgroup* g) {
  const ir_node* n = ir_node_at(c->p, i);
  g->nodes[0] = i;
  g->inner[0] = 0;
  g->n = 1;
  g->cap = 1;
  g->alive = true;
  g->is_extern = n->kind == IR_EXTERN;
  g->is_red = n->kind == IR_REDUCTION;
  g->n_ranges = n->n_ranges;
  g->ranges = n->ranges;
  g->n_rranges = g->is_red ? n->n_rranges : 0;
  g->rranges = g->is_red ? n->rranges : NULL;
  g->first = g->last = i;
  g->stamp = ++c->next_stamp;
}

ptc_status sched_groups_init(sched_ctx* c) {
  c->groups = calloc(c->n_nodes + 1, sizeof *c->groups);
  c->grp_of = calloc(c->n_nodes + 1, sizeof *c->grp_of);
  if (!c->groups || !c->grp_of) return ptc_status_oom();
  for (uint32_t i = 0; i < c->n_nodes; i++) {
    sgroup* g = &c->groups[i];
    g->nodes = malloc(sizeof *g->nodes);
    g->inner = malloc(1);
    if (!g->nodes || !g->inner) return ptc_status_oom();
    group_of_node(c, i, g);
    c->grp_of[i] = i;
    c->topo[i] = c->order[i] = i; /* program order is topological */
  }
  return NULL;
}

void sched_groups_free(sched_ctx* c) {
  if (!c->groups) return;
  for (size_t i = 0; i < c->n_nodes; i++) {
    free(c->groups[i].nodes);
    free(c->groups[i].inner);
  }
  free(c->groups);
  c->groups = NULL;
}

/* ---- topological order across merges -------------------------------------------
 * Merging x (position lo) with y (position hi > lo): the groups between them
 * that descend from x move after the merged group, the others before it.
 * Valid because no group between them both descends from x and leads to y
 * (that would be a cycle, which legality excludes). */
typedef struct desc_visit {
  uint32_t epoch, lo, hi, top;
} desc_visit;

static void mark_desc(sched_ctx* c, uint32_t g, void* user) {
  desc_visit* v = user;
  if (c->topo[g] <= v->lo || c->topo[g] >= v->hi || c->gmark[g] == v->epoch) return;
  c->gmark[g] = v->epoch;
  c->stack[v->top++] = g;
}

static void topo_merge(sched_ctx* c, uint32_t ia, uint32_t ib) {
  uint32_t x = c->topo[ia] < c->topo[ib] ? ia : ib, y = x == ia ? ib : ia;
  desc_visit v = {sched_next_epoch(c), c->topo[x], c->topo[y], 0};
  sched_group_successors(c, x, mark_desc, &v);
  while (v.top) sched_group_successors(c, c->stack[--v.top], mark_desc, &v);
  uint32_t n = 0; /* window copy in c->stack */
  for (uint32_t p = v.lo + 1; p < v.hi; p++)
    if (c->order[p] != UINT32_MAX) c->stack[n++] = c->order[p];
  uint32_t k = v.lo;
  for (int pass = 0; pass < 3; pass++) {
    if (pass == 1) {
      c->order[k] = ia;
      c->topo[ia] = k++;
      continue;
    }
    for (uint32_t i = 0; i < n; i++) {
      uint32_t g = c->stack[i];
      if ((c->gmark[g] == v.epoch) != (pass == 2)) continue;
      c->order[k] = g;
      c->topo[g] = k++;
    }
  }
  while (k <= v.hi) c->order[k++] = UINT32_MAX;
}

ptc_status sched_group_merge(sched_ctx* c, uint32_t ia, uint32_t ib, const sshape* s) {
  sgroup* a = &c->groups[ia];
  sgroup* b = &c->groups[ib];
  uint32_t n = a->n + b->n;
  uint32_t* nodes = malloc(n * sizeof *nodes);
  uint8_t* inner = malloc(n);
  if (!nodes || !inner) {
    free(nodes);
    free(inner);
    return ptc_status_oom();
  }
  topo_merge(c, ia, ib); /* before the members move: uses the old edges */
  uint32_t i = 0, j = 0, k = 0;
  while (i < a->n || j < b->n) {
    bool take_a = j == b->n || (i < a->n && a->nodes[i] < b->nodes[j]);
    if (take_a) {
      nodes[k] = a->nodes[i];
      inner[k++] = s->inner_a ? 1 : a->inner[i];
      i++;
    } else {
      nodes[k] = b->nodes[j];
      inner[k++] = s->inner_b ? 1 : b->inner[j];
      c->grp_of[b->nodes[j]] = ia;
      j++;
    }
  }
  free(a->nodes);
  free(a->inner);
  a->nodes = nodes;
  a->inner = inner;
  a->n = a->cap = n;
  a->n_ranges = s->n;
  a->ranges = s->ranges;
  a->n_rranges = s->m;
  a->rranges = s->rranges;
  a->is_red = s->red;
  a->first = a->first < b->first ? a->first : b->first;
  a->last = a->last > b->last ? a->last : b->last;
  a->stamp = ++c->next_stamp;
  free(b->nodes);
  free(b->inner);
  b->nodes = NULL;
  b->inner = NULL;
  b->n = 0;
  b->alive = false;
  return NULL;
}

void sched_group_successors(sched_ctx* c, uint32_t g, sched_group_fn fn, void* user) {
  const sgroup* gr = &c->groups[g];
  for (uint32_t m = 0; m < gr->n; m++) {
    const sdeps* d = &c->deps[gr->nodes[m]];
    for (uint32_t k = 0; k < d->n_writes; k++) {
      int32_t b = d->writes[k].buf;
      for (uint32_t r = c->rd_start[b]; r < c->rd_start[b + 1]; r++) {
        uint32_t s = c->grp_of[c->rd_node[r]];
        if (s != g) fn(c, s, user);
      }
    }
  }
}

static const char* kind_name(int32_t kind) {
  static const char* const names[] = {"pointwise", "reduction", "extern"};
  return kind >= 0 && kind <= IR_EXTERN ? names[kind] : "node";
}

void sched_group_label(const sched_ctx* c, const sgroup* g, ptc_strbuf* sb) {
  size_t start = sb->len;
  for (uint32_t m = 0; m < g->n; m++) {
    const ir_node* n = ir_node_at(c->p, g->nodes[m]);
    if (m) ptc_sb_append(sb, "+");
    if (sb->len - start > SCHED_LABEL_MAX) {
      ptc_sb_printf(sb, "...(%u nodes)", g->n);
      return;
    }
    if (n->origin && n->origin[0])
      ptc_sb_append(sb, n->origin);
    else
      ptc_sb_printf(sb, "%s%u", kind_name(n->kind), g->nodes[m]);
  }
}
