/* deps.c - dependency extraction: the buffers each node reads and writes,
 * at which index (walking IR_LOAD / IR_STORE of the body; extern calls read
 * and write whole buffers, a view buffer's reads count as its base's; loads
 * through an IR_INDIRECT symbol read an unknown element), and the buffer ->
 * writer / readers tables. */
#include <stdlib.h>

#include "sched_internal.h"

/* True if e mentions one of the symbols syms[0..n). */
static bool mentions(const sym_expr* e, const sym_expr* const* syms, uint32_t n) {
  if (!e || n == 0) return false;
  if (e->kind == SYM_VAR) {
    for (uint32_t i = 0; i < n; i++)
      if (syms[i] == e) return true;
    return false;
  }
  for (uint32_t i = 0; i < e->n; i++)
    if (mentions(e->args[i], syms, n)) return true;
  return false;
}

/* Appends (buf, index) to a list unless already present. */
static bool dep_add(sdep** list, uint32_t* n, uint32_t* cap, int32_t buf, const sym_expr* index) {
  for (uint32_t i = 0; i < *n; i++)
    if ((*list)[i].buf == buf && (*list)[i].index == index) return true;
  if (*n == *cap) {
    uint32_t nc = *cap ? *cap * 2 : 4;
    sdep* nl = realloc(*list, nc * sizeof *nl);
    if (!nl) return false;
    *list = nl;
    *cap = nc;
  }
  (*list)[(*n)++] = (sdep){buf, index};
  return true;
}

typedef struct dep_lists {
  sdeps* d;
  uint32_t rcap, wcap;
} dep_lists;

static ptc_status check_buf(const ir_program* p, size_t i, int32_t buf, const char* what) {
  if (buf < 0 || (size_t)buf >= p->buffers.len)
    return PTC_ERR(INVALID_ARGUMENT, "scheduler: node %zu %s unknown buffer %d", i, what, buf);
  return NULL;
}

static ptc_status body_deps(const ir_program* p, size_t i, const ir_body* b, dep_lists* l) {
  uint32_t n_ind = 0;
  const sym_expr** ind = NULL;
  for (uint32_t k = 0; k < b->n; k++)
    if (b->ops[k].opcode == IR_INDIRECT && b->ops[k].sym) n_ind++;
  if (n_ind) {
    ind = malloc(n_ind * sizeof *ind);
    if (!ind) return ptc_status_oom();
    n_ind = 0;
    for (uint32_t k = 0; k < b->n; k++)
      if (b->ops[k].opcode == IR_INDIRECT && b->ops[k].sym) ind[n_ind++] = b->ops[k].sym;
  }
  ptc_status st = NULL;
  for (uint32_t k = 0; k < b->n && !st; k++) {
    const ir_op* op = &b->ops[k];
    if (op->opcode == IR_LOAD) {
      st = check_buf(p, i, op->buf, "loads");
      if (!st && ir_buf(p, op->buf)->kind == IR_BUF_VIEW) /* only externs read views */
        st = PTC_ERR(INVALID_ARGUMENT, "scheduler: node %zu loads view buffer %s", i,
                     ir_buf(p, op->buf)->name);
      const sym_expr* idx = mentions(op->index, ind, n_ind) ? NULL : op->index;
      if (!st && !dep_add(&l->d->reads, &l->d->n_reads, &l->rcap, op->buf, idx))
        st = ptc_status_oom();
    } else if (op->opcode == IR_STORE) {
      st = check_buf(p, i, op->buf, "stores to");
      if (!st && !dep_add(&l->d->writes, &l->d->n_writes, &l->wcap, op->buf, op->index))
        st = ptc_status_oom();
    }
  }
  free(ind);
  return st;
}

/* An extern reading a view buffer (IR_BUF_VIEW) reads its base: ordering
 * after the base's writer and the base's lifetime follow from that. */
static ptc_status extern_deps(const ir_program* p, size_t i, const ir_extern* e, dep_lists* l) {
  for (uint32_t k = 0; k < e->n_in; k++) {
    int32_t b = e->in[k];
    if (b < 0) continue;
    PTC_TRY(check_buf(p, i, b, "reads"));
    if (ir_buf(p, b)->kind == IR_BUF_VIEW) {
      b = ir_buf(p, b)->base;
      PTC_TRY(check_buf(p, i, b, "reads (through a view)"));
    }
    if (!dep_add(&l->d->reads, &l->d->n_reads, &l->rcap, b, NULL)) return ptc_status_oom();
  }
  for (uint32_t k = 0; k < e->n_out; k++) {
    PTC_TRY(check_buf(p, i, e->out[k], "writes"));
    if (!dep_add(&l->d->writes, &l->d->n_writes, &l->wcap, e->out[k], NULL))
      return ptc_status_oom();
  }
  return NULL;
}

ptc_status sdeps_extract(const ir_program* p, size_t i, sdeps* out) {
  *out = (sdeps){0};
  const ir_node* n = ir_node_at(p, i);
  dep_lists l = {out, 0, 0};
  ptc_status st;
  if (n->kind == IR_POINTWISE || n->kind == IR_REDUCTION)
    st = body_deps(p, i, &n->body, &l);
  else if (n->kind == IR_EXTERN)
    st = extern_deps(p, i, &n->ext, &l);
  else
    st = PTC_ERR(INVALID_ARGUMENT, "scheduler: node %zu has unknown kind %d", i, (int)n->kind);
  if (st) sdeps_free(out);
  return st;
}

void sdeps_free(sdeps* d) {
  free(d->reads);
  free(d->writes);
  *d = (sdeps){0};
}

ptc_status sched_node_deps(const ir_program* p, size_t i, sched_dep** reads, size_t* n_reads,
                           sched_dep** writes, size_t* n_writes) {
  if (!p || !reads || !n_reads || !writes || !n_writes)
    return PTC_ERR(INVALID_ARGUMENT, "sched_node_deps: NULL argument");
  if (i >= p->nodes.len)
    return PTC_ERR(INVALID_ARGUMENT, "sched_node_deps: node %zu out of range (%zu nodes)", i,
                   p->nodes.len);
  sdeps d;
  PTC_TRY(sdeps_extract(p, i, &d));
  /* sdep and sched_dep have the same members; copy field by field. */
  sched_dep* r = calloc(d.n_reads + 1, sizeof *r);
  sched_dep* w = calloc(d.n_writes + 1, sizeof *w);
  if (!r || !w) {
    free(r);
    free(w);
    sdeps_free(&d);
    return ptc_status_oom();
  }
  for (uint32_t k = 0; k < d.n_reads; k++) r[k] = (sched_dep){d.reads[k].buf, d.reads[k].index};
  for (uint32_t k = 0; k < d.n_writes; k++) w[k] = (sched_dep){d.writes[k].buf, d.writes[k].index};
  *reads = r;
  *n_reads = d.n_reads;
  *writes = w;
  *n_writes = d.n_writes;
  sdeps_free(&d);
  return NULL;
}

/* ---- program-wide tables --------------------------------------------------- */

static ptc_status fill_writers(sched_ctx* c) {
  for (size_t b = 0; b < c->n_bufs; b++) c->writer[b] = -1;
  for (size_t i = 0; i < c->n_nodes; i++) {
    for (uint32_t k = 0; k < c->deps[i].n_writes; k++) {
      int32_t b = c->deps[i].writes[k].buf;
      if (c->writer[b] >= 0 && (size_t)c->writer[b] != i)
        return PTC_ERR(INVALID_ARGUMENT, "scheduler: buffer %s is written by nodes %d and %zu",
                       ir_buf(c->p, b)->name, c->writer[b], i);
      if (ir_buf(c->p, b)->kind != IR_BUF_COMPUTED)
        return PTC_ERR(INVALID_ARGUMENT, "scheduler: node %zu writes %s, which is not computed", i,
                       ir_buf(c->p, b)->name);
      c->writer[b] = (int32_t)i;
    }
  }
  return NULL;
}

/* Readers in CSR form; a node reading a buffer at several indices counts once. */
static ptc_status fill_readers(sched_ctx* c) {
  c->rd_start = calloc(c->n_bufs + 1, sizeof *c->rd_start);
  if (!c->rd_start) return ptc_status_oom();
  for (size_t i = 0; i < c->n_nodes; i++) {
    uint32_t e = sched_next_epoch(c);
    for (uint32_t k = 0; k < c->deps[i].n_reads; k++) {
      int32_t b = c->deps[i].reads[k].buf;
      if (c->bmark[b] == e) continue;
      c->bmark[b] = e;
      c->rd_start[b + 1]++;
      if (c->writer[b] > (int32_t)i)
        return PTC_ERR(INVALID_ARGUMENT, "scheduler: node %zu reads %s before its producer node %d",
                       i, ir_buf(c->p, b)->name, c->writer[b]);
    }
  }
  for (size_t b = 0; b < c->n_bufs; b++) c->rd_start[b + 1] += c->rd_start[b];
  c->rd_node = calloc(c->rd_start[c->n_bufs] + 1, sizeof *c->rd_node);
  uint32_t* fill = calloc(c->n_bufs + 1, sizeof *fill);
  if (!c->rd_node || !fill) {
    free(fill);
    return ptc_status_oom();
  }
  for (size_t i = 0; i < c->n_nodes; i++) {
    uint32_t e = sched_next_epoch(c);
    for (uint32_t k = 0; k < c->deps[i].n_reads; k++) {
      int32_t b = c->deps[i].reads[k].buf;
      if (c->bmark[b] == e) continue;
      c->bmark[b] = e;
      c->rd_node[c->rd_start[b] + fill[b]++] = (uint32_t)i;
    }
  }
  free(fill);
  return NULL;
}

static ptc_status fill_outputs(sched_ctx* c) {
  for (size_t i = 0; i < c->p->n_outputs; i++) {
    int32_t b = c->p->output_bufs[i];
    if (b < 0 || (size_t)b >= c->n_bufs)
      return PTC_ERR(INVALID_ARGUMENT, "scheduler: graph output %zu names unknown buffer %d", i, b);
    c->is_output[b] = 1;
  }
  return NULL;
}

ptc_status sched_build_deps(sched_ctx* c) {
  c->deps = calloc(c->n_nodes + 1, sizeof *c->deps);
  c->writer = calloc(c->n_bufs + 1, sizeof *c->writer);
  c->is_output = calloc(c->n_bufs + 1, 1);
  if (!c->deps || !c->writer || !c->is_output) return ptc_status_oom();
  for (size_t i = 0; i < c->n_nodes; i++) PTC_TRY(sdeps_extract(c->p, i, &c->deps[i]));
  PTC_TRY(fill_writers(c));
  PTC_TRY(fill_readers(c));
  return fill_outputs(c);
}

const sym_expr* sched_write_index(const sched_ctx* c, int32_t b) {
  int32_t w = c->writer[b];
  if (w < 0) return NULL;
  const sdeps* d = &c->deps[w];
  const sym_expr* idx = NULL;
  uint32_t found = 0;
  for (uint32_t k = 0; k < d->n_writes; k++) {
    if (d->writes[k].buf != b) continue;
    idx = d->writes[k].index;
    found++;
  }
  return found == 1 ? idx : NULL; /* several store indices: never matches */
}
