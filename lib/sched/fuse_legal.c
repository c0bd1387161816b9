/* fuse_legal.c - can_fuse and score_fusion. Two groups may become one
 * kernel when: neither is an extern; together they have at most max_nodes
 * nodes; their loop structures merge (sched_merge_shape); every read of a
 * buffer the other group writes is at the written index, compared in kernel
 * coordinates (x_{n+k} -> r_k for inner nodes; indirect reads never match);
 * in a reduction kernel without outer loop no node of the reduction loop
 * needs a value produced once per outer point (such a node waits for the
 * whole reduction, so the two stay kernels that parallelise on their own);
 * no path leads from one to the other through a third group; and, without
 * a dependency (horizontal), they share a read and lie at most `window`
 * nodes apart.
 * Score: (2 vertical / 1 horizontal, bytes of the buffers both touch,
 * -distance in the node order). */
#include <stdlib.h>

#include "sched_internal.h"

/* Merged inner flag of member m of group g (set_inner: all become inner). */
static bool member_inner(const sgroup* g, uint32_t m, uint8_t set_inner) {
  return set_inner || g->inner[m];
}

static uint32_t member_pos(const sgroup* g, uint32_t node) {
  uint32_t lo = 0, hi = g->n;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (g->nodes[mid] < node)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Runs inside the reduction loop of its kernel. */
static bool in_rloop(const sched_ctx* c, uint32_t node, bool inner) {
  return inner || ir_node_at(c->p, node)->kind == IR_REDUCTION;
}

/* Its stored value exists once per outer point (after the reduction loop). */
static bool once_per_point(const sched_ctx* c, uint32_t node, bool inner) {
  return !inner || ir_node_at(c->p, node)->kind == IR_REDUCTION;
}

typedef struct side {
  uint32_t id;
  const sgroup* g;
  uint8_t set_inner;
} side;

/* Checks one read of member u (of x) whose buffer is written by w (of y). */
static bool check_read(sched_ctx* c, const sshape* s, const side* x, uint32_t mu, const side* y,
                       const sdep* rd, ptc_strbuf* why) {
  uint32_t u = x->g->nodes[mu];
  uint32_t w = (uint32_t)c->writer[rd->buf];
  uint32_t mw = member_pos(y->g, w);
  bool fu = member_inner(x->g, mu, x->set_inner);
  bool fw = member_inner(y->g, mw, y->set_inner);
  const char* name = ir_buf(c->p, rd->buf)->name;
  const sym_expr* widx = sched_write_index(c, rd->buf);
  if (!rd->index || !widx) {
    ptc_sb_printf(why, "%s is %s", name,
                  !rd->index ? "read through an indirect index" : "not written at one index");
    return false;
  }
  const sym_expr* ki = sched_kidx(c, fu, s->n, rd->index);
  const sym_expr* kw = sched_kidx(c, fw, s->n, widx);
  if (c->oom) return false;
  if (ki != kw) {
    ptc_sb_printf(why, "index mismatch on %s: read ", name);
    sym_format_sb(c->env, ki, why);
    ptc_sb_append(why, " vs write ");
    sym_format_sb(c->env, kw, why);
    return false;
  }
  if (s->red && sched_shape_trivial_outer(s) && in_rloop(c, u, fu) && once_per_point(c, w, fw)) {
    ptc_sb_printf(why, "node %u would need %s, a full reduction's result, inside the loop", u,
                  name);
    return false;
  }
  return true;
}

/* Every read by x of a buffer written by y; *dep set when there is one. */
static bool check_side(sched_ctx* c, const sshape* s, const side* x, const side* y, bool* dep,
                       ptc_strbuf* why) {
  for (uint32_t m = 0; m < x->g->n; m++) {
    const sdeps* d = &c->deps[x->g->nodes[m]];
    for (uint32_t k = 0; k < d->n_reads; k++) {
      int32_t w = c->writer[d->reads[k].buf];
      if (w < 0 || c->grp_of[w] != y->id) continue;
      *dep = true;
      if (!check_read(c, s, x, m, y, &d->reads[k], why)) return false;
    }
  }
  return true;
}

static void mark_bufs(sched_ctx* c, const sgroup* g, uint32_t e) {
  for (uint32_t m = 0; m < g->n; m++) {
    const sdeps* d = &c->deps[g->nodes[m]];
    for (uint32_t k = 0; k < d->n_reads; k++) c->bmark[d->reads[k].buf] = e;
    for (uint32_t k = 0; k < d->n_writes; k++) c->bmark[d->writes[k].buf] = e;
  }
}

static void count_one(sched_ctx* c, int32_t b, uint32_t e, uint32_t done, int64_t* bytes,
                      uint32_t* n) {
  if (c->bmark[b] != e) return;
  c->bmark[b] = done;
  int64_t h = sched_buf_bytes_hint(c, b);
  *bytes = h > INT64_MAX - *bytes ? INT64_MAX : *bytes + h;
  (*n)++;
}

/* Bytes of the buffers both groups touch; *n_shared their count. */
static int64_t shared_bytes(sched_ctx* c, const sgroup* a, const sgroup* b, uint32_t* n_shared) {
  uint32_t e = sched_next_epoch(c);
  mark_bufs(c, a, e);
  uint32_t done = sched_next_epoch(c);
  int64_t bytes = 0;
  *n_shared = 0;
  for (uint32_t m = 0; m < b->n; m++) {
    const sdeps* d = &c->deps[b->nodes[m]];
    for (uint32_t k = 0; k < d->n_reads; k++)
      count_one(c, d->reads[k].buf, e, done, &bytes, n_shared);
    for (uint32_t k = 0; k < d->n_writes; k++)
      count_one(c, d->writes[k].buf, e, done, &bytes, n_shared);
  }
  return bytes;
}

typedef struct dfs {
  uint32_t from, target, cur, via, epoch, top;
  bool found;
} dfs;

/* Only groups placed before the target in the topological order can lie on
 * a path to it. */
static void push_succ(sched_ctx* c, uint32_t g, void* user) {
  dfs* d = user;
  if (g == d->target) {
    if (d->cur != d->from && !d->found) {
      d->found = true;
      d->via = d->cur;
    }
    return;
  }
  if (c->gmark[g] == d->epoch || c->topo[g] > c->topo[d->target]) return;
  c->gmark[g] = d->epoch;
  c->stack[d->top++] = g;
}

/* True if `to` is reachable from `from` through another group (*via: the
 * group whose edge reaches `to`). */
static bool reach_through(sched_ctx* c, uint32_t from, uint32_t to, uint32_t* via) {
  if (c->topo[from] > c->topo[to]) return false;
  dfs d = {.from = from, .target = to, .cur = from, .epoch = sched_next_epoch(c)};
  c->gmark[from] = d.epoch;
  sched_group_successors(c, from, push_succ, &d);
  while (d.top && !d.found) {
    d.cur = c->stack[--d.top];
    sched_group_successors(c, d.cur, push_succ, &d);
  }
  *via = d.via;
  return d.found;
}

static int64_t absdiff(uint32_t x, uint32_t y) { return x > y ? (int64_t)x - y : (int64_t)y - x; }

static sverdict structure_ok(sched_ctx* c, const sgroup* a, const sgroup* b, uint32_t ia,
                             uint32_t ib, sshape* s, ptc_strbuf* why) {
  if (a->is_extern || b->is_extern) {
    ptc_sb_printf(why, "k%u is an extern kernel", a->is_extern ? ia : ib);
    return SV_REFUSE;
  }
  if (a->n + b->n > c->opt.max_nodes) {
    ptc_sb_printf(why, "too many nodes (%u > %u)", a->n + b->n, c->opt.max_nodes);
    return SV_REFUSE;
  }
  if (!sched_merge_shape(a, b, s)) {
    ptc_sb_append(why, "different loop structure ");
    sched_format_loops(c, a, why);
    ptc_sb_append(why, " vs ");
    sched_format_loops(c, b, why);
    return SV_REFUSE;
  }
  return SV_OK;
}

sverdict sched_can_fuse(sched_ctx* c, uint32_t ia, uint32_t ib, sshape* s, sscore* score,
                        ptc_strbuf* why) {
  const sgroup* a = &c->groups[ia];
  const sgroup* b = &c->groups[ib];
  sverdict v = structure_ok(c, a, b, ia, ib, s, why);
  if (v != SV_OK) return v;
  side sa = {ia, a, s->inner_a}, sb = {ib, b, s->inner_b};
  bool dep = false;
  if (!check_side(c, s, &sb, &sa, &dep, why) || !check_side(c, s, &sa, &sb, &dep, why))
    return SV_REFUSE;
  uint32_t n_shared;
  int64_t bytes = shared_bytes(c, a, b, &n_shared);
  if (!dep && n_shared == 0) {
    ptc_sb_append(why, "no shared data");
    return SV_REFUSE;
  }
  int64_t d1 = absdiff(a->first, b->last), d2 = absdiff(b->first, a->last);
  int64_t dist = d1 > d2 ? d1 : d2;
  if (!dep && dist > (int64_t)c->opt.window) {
    ptc_sb_printf(why, "too far apart for horizontal fusion (%lld > %u)", (long long)dist,
                  c->opt.window);
    return SV_REFUSE;
  }
  uint32_t via;
  if (reach_through(c, ia, ib, &via) || reach_through(c, ib, ia, &via)) {
    ptc_sb_printf(why, "would create a cycle through k%u", via);
    return SV_REFUSE_CYCLE;
  }
  *score = (sscore){dep ? 2 : 1, bytes, -dist};
  return SV_OK;
}
