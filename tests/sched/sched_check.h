/* sched_check.h - an independent checker of a schedule's invariants, used
 * by the scheduler tests on every plan they make: each node in exactly one
 * kernel; externs alone; members fit the kernel's loops (reductions equal,
 * inner pointwise = ranges ++ rranges, outer pointwise = ranges); producers
 * run before consumers; a member reading another member's output reads it
 * at the written index (x_{n+k} -> r_k for inner nodes); kernel-local
 * buffers stay inside their kernel; homes match buffer kinds; slots hold
 * buffers of their byte size and two buffers share a slot only when their
 * lifetimes do not overlap or the later one takes the slot over in the
 * earlier one's last kernel element by element (in place, possibly through
 * a chain of in-place nodes). */
#ifndef PTC_TESTS_SCHED_CHECK_H
#define PTC_TESTS_SCHED_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "lib/ir/ir.h"
#include "lib/sched/sched.h"

typedef struct sc_state {
  const ir_program* p;
  const sched_plan* s;
  int* kern;   /* per node */
  int* pos;    /* per node */
  int* writer; /* per buffer */
  int errors;
  const char* what;
} sc_state;

#define SC_FAIL(st, ...)                        \
  do {                                          \
    if ((st)->errors++ < 10) {                  \
      printf("  invariant (%s): ", (st)->what); \
      printf(__VA_ARGS__);                      \
      printf("\n");                             \
    }                                           \
  } while (0)

static inline bool sc_same(uint32_t n, const sym_expr* const* a, const sym_expr* const* b) {
  for (uint32_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

static inline void sc_members(sc_state* st) {
  const ir_program* p = st->p;
  for (size_t i = 0; i < p->nodes.len; i++) st->kern[i] = -1;
  for (uint32_t k = 0; k < st->s->n_kernels; k++) {
    const sched_kernel* kr = &st->s->kernels[k];
    if (kr->is_extern && (kr->n_nodes != 1 || ir_node_at(p, kr->nodes[0])->kind != IR_EXTERN))
      SC_FAIL(st, "extern kernel %u is not one extern node", k);
    for (uint32_t j = 0; j < kr->n_nodes; j++) {
      uint32_t u = kr->nodes[j];
      if (u >= p->nodes.len || st->kern[u] >= 0) {
        SC_FAIL(st, "node %u listed twice or out of range", u);
        continue;
      }
      st->kern[u] = (int)k;
      st->pos[u] = (int)j;
      const ir_node* n = ir_node_at(p, u);
      if (kr->is_extern) continue;
      bool ok;
      if (n->kind == IR_EXTERN) {
        ok = false;
      } else if (n->kind == IR_REDUCTION) {
        ok = !kr->node_inner[j] && n->n_ranges == kr->n_ranges && n->n_rranges == kr->n_rranges &&
             sc_same(n->n_ranges, n->ranges, kr->ranges) &&
             sc_same(n->n_rranges, n->rranges, kr->rranges);
      } else if (kr->node_inner[j]) {
        ok = kr->n_rranges > 0 && n->n_ranges == kr->n_ranges + kr->n_rranges &&
             sc_same(kr->n_ranges, n->ranges, kr->ranges) &&
             sc_same(kr->n_rranges, n->ranges + kr->n_ranges, kr->rranges);
      } else {
        ok = n->n_ranges == kr->n_ranges && sc_same(n->n_ranges, n->ranges, kr->ranges);
      }
      if (!ok) SC_FAIL(st, "node %u does not fit the loops of kernel %u", u, k);
      if (n->kind == IR_REDUCTION && kr->n_rranges == 0)
        SC_FAIL(st, "kernel %u has a reduction but no rranges", k);
    }
  }
  for (size_t i = 0; i < p->nodes.len; i++)
    if (st->kern[i] < 0) SC_FAIL(st, "node %zu is in no kernel", i);
}

/* Index of node u in its kernel's coordinates. */
static inline const sym_expr* sc_kidx(const sc_state* st, uint32_t u, const sym_expr* e) {
  const sched_kernel* kr = &st->s->kernels[st->kern[u]];
  if (!e || !kr->node_inner[st->pos[u]]) return e;
  size_t nv = sym_num_vars(st->p->env);
  const sym_expr** repl = calloc(nv + 1, sizeof *repl);
  if (!repl) return NULL;
  for (uint32_t k = 0; kr->n_ranges + k < PTC_MAX_RANK && k < PTC_MAX_RANK; k++)
    repl[st->p->xvars[kr->n_ranges + k]->value] = st->p->rvars[k];
  const sym_expr* r = sym_subst(st->p->env, e, repl);
  free(repl);
  return r;
}

static inline const sym_expr* sc_write_index(const ir_program* p, uint32_t w, int32_t b) {
  sched_dep *r = NULL, *wr = NULL;
  size_t nr = 0, nw = 0;
  const sym_expr* idx = NULL;
  ptc_status s = sched_node_deps(p, w, &r, &nr, &wr, &nw);
  for (size_t i = 0; !s && i < nw; i++)
    if (wr[i].buf == b) idx = wr[i].index;
  ptc_status_destroy(s);
  free(r);
  free(wr);
  return idx;
}

static inline void sc_deps(sc_state* st) {
  const ir_program* p = st->p;
  for (size_t b = 0; b < p->buffers.len; b++) st->writer[b] = -1;
  for (size_t u = 0; u < p->nodes.len; u++) {
    sched_dep *r = NULL, *w = NULL;
    size_t nr = 0, nw = 0;
    ptc_status s = sched_node_deps(p, u, &r, &nr, &w, &nw);
    if (s) {
      SC_FAIL(st, "sched_node_deps(%zu): %s", u, ptc_status_message(s));
      ptc_status_destroy(s);
      continue;
    }
    for (size_t i = 0; i < nw; i++) st->writer[w[i].buf] = (int)u;
    free(r);
    free(w);
  }
  for (size_t u = 0; u < p->nodes.len; u++) {
    sched_dep *r = NULL, *w = NULL;
    size_t nr = 0, nw = 0;
    ptc_status s = sched_node_deps(p, u, &r, &nr, &w, &nw);
    ptc_status_destroy(s);
    for (size_t i = 0; !s && i < nr; i++) {
      int wn = st->writer[r[i].buf];
      if (wn < 0 || (size_t)wn == u || st->kern[u] < 0 || st->kern[wn] < 0) continue;
      if (st->kern[wn] > st->kern[u] || (st->kern[wn] == st->kern[u] && st->pos[wn] >= st->pos[u]))
        SC_FAIL(st, "node %zu reads buffer %d before its producer node %d runs", u, r[i].buf, wn);
      if (st->kern[wn] != st->kern[u]) continue;
      const sym_expr* wi = sc_write_index(p, (uint32_t)wn, r[i].buf);
      if (!r[i].index || !wi ||
          sc_kidx(st, (uint32_t)u, r[i].index) != sc_kidx(st, (uint32_t)wn, wi))
        SC_FAIL(st, "node %zu reads buffer %d of node %d at another index in one kernel", u,
                r[i].buf, wn);
    }
    free(r);
    free(w);
  }
}

static inline bool sc_is_output(const ir_program* p, int32_t b) {
  for (size_t i = 0; i < p->n_outputs; i++)
    if (p->output_bufs[i] == b) return true;
  return false;
}

/* Does node w (writing b2) read b1? */
static inline bool sc_reads(const ir_program* p, int w, int32_t b1) {
  sched_dep *r = NULL, *wr = NULL;
  size_t nr = 0, nw = 0;
  bool found = false;
  ptc_status s = sched_node_deps(p, (size_t)w, &r, &nr, &wr, &nw);
  for (size_t i = 0; !s && i < nr; i++) found |= r[i].buf == b1;
  ptc_status_destroy(s);
  free(r);
  free(wr);
  return found;
}

/* b2 may take b1's memory in b1's last kernel: every read of b1 there comes
 * no later than b2's writer and reads the element b2's writer writes (so each
 * element is read before it is overwritten, in one iteration). */
static inline bool sc_handover(const sc_state* st, int32_t b1, int32_t b2) {
  const ir_program* p = st->p;
  int w2 = st->writer[b2];
  int k = st->kern[w2];
  if (ir_node_at(p, (size_t)w2)->kind != IR_POINTWISE) return false;
  const sym_expr* at = sc_kidx(st, (uint32_t)w2, sc_write_index(p, (uint32_t)w2, b2));
  if (!at) return false;
  for (size_t u = 0; u < p->nodes.len; u++) {
    if (st->kern[u] != k) continue;
    sched_dep *r = NULL, *wr = NULL;
    size_t nr = 0, nw = 0;
    ptc_status s = sched_node_deps(p, u, &r, &nr, &wr, &nw);
    bool ok = !s;
    for (size_t i = 0; ok && i < nr; i++)
      if (r[i].buf == b1)
        ok = st->pos[u] <= st->pos[w2] && r[i].index && sc_kidx(st, (uint32_t)u, r[i].index) == at;
    ptc_status_destroy(s);
    free(r);
    free(wr);
    if (!ok) return false;
  }
  return true;
}

static inline void sc_homes(sc_state* st) {
  const ir_program* p = st->p;
  const sched_plan* s = st->s;
  for (size_t b = 0; b < p->buffers.len; b++) {
    const ir_buffer* buf = ir_buf(p, (int32_t)b);
    int h = s->buf_home[b];
    int w = st->writer[b];
    if (buf->kind != IR_BUF_COMPUTED) {
      if (h != SCHED_HOME_EXTERNAL) SC_FAIL(st, "%s is not external", buf->name);
      continue;
    }
    if (sc_is_output(p, (int32_t)b) != (h == SCHED_HOME_OUTPUT))
      SC_FAIL(st, "%s: output home mismatch", buf->name);
    if (h == SCHED_HOME_LOCAL && w >= 0) {
      const sched_kernel* kr = &s->kernels[st->kern[w]];
      if (kr->is_extern) SC_FAIL(st, "%s local in an extern kernel", buf->name);
      for (size_t u = 0; u < p->nodes.len; u++)
        if ((int)u != w && sc_reads(p, (int)u, (int32_t)b) && st->kern[u] != st->kern[w])
          SC_FAIL(st, "local %s read outside its kernel by node %zu", buf->name, u);
    }
    if (h == SCHED_HOME_SLOT) {
      int sl = s->buf_slot[b];
      if (sl < 0 || (uint32_t)sl >= s->n_slots) {
        SC_FAIL(st, "%s has no valid slot", buf->name);
        continue;
      }
      const sym_expr* bytes =
          buf->numel ? sym_mul_c(p->env, buf->numel, (int64_t)ptc_dtype_size(buf->dtype)) : NULL;
      if (bytes && s->slots[sl].bytes != bytes)
        SC_FAIL(st, "%s: slot %d has another size", buf->name, sl);
      int last = w >= 0 ? st->kern[w] : 0;
      for (size_t u = 0; u < p->nodes.len; u++)
        if (sc_reads(p, (int)u, (int32_t)b) && st->kern[u] > last) last = st->kern[u];
      if (s->buf_free_after[b] < last) SC_FAIL(st, "%s freed before its last use", buf->name);
    }
  }
}

/* Two slot buffers sharing a slot: lifetimes disjoint, or b2 written in
 * place over b1 in the kernel where b1 dies. */
static inline void sc_slots(sc_state* st) {
  const ir_program* p = st->p;
  const sched_plan* s = st->s;
  for (size_t b1 = 0; b1 < p->buffers.len; b1++) {
    if (s->buf_home[b1] != SCHED_HOME_SLOT || st->writer[b1] < 0) continue;
    for (size_t b2 = 0; b2 < p->buffers.len; b2++) {
      if (b1 == b2 || s->buf_home[b2] != SCHED_HOME_SLOT || st->writer[b2] < 0) continue;
      if (s->buf_slot[b1] != s->buf_slot[b2]) continue;
      int s1 = st->kern[st->writer[b1]], e1 = s->buf_free_after[b1];
      int s2 = st->kern[st->writer[b2]], e2 = s->buf_free_after[b2];
      if (e1 < s2 || e2 < s1) continue;
      bool inplace = e1 == s2 && s1 <= s2 && sc_handover(st, (int32_t)b1, (int32_t)b2);
      bool inplace2 = e2 == s1 && s2 <= s1 && sc_handover(st, (int32_t)b2, (int32_t)b1);
      if (!inplace && !inplace2)
        SC_FAIL(st, "%s and %s share slot %d while both alive", ir_buf(p, (int32_t)b1)->name,
                ir_buf(p, (int32_t)b2)->name, s->buf_slot[b1]);
    }
  }
}

/** Returns the number of violations (printed, up to 10). */
static inline int sched_check_plan(const ir_program* p, const sched_plan* s, const char* what) {
  sc_state st = {p, s, NULL, NULL, NULL, 0, what};
  size_t nn = p->nodes.len + 1, nb = p->buffers.len + 1;
  st.kern = calloc(nn, sizeof(int));
  st.pos = calloc(nn, sizeof(int));
  st.writer = calloc(nb, sizeof(int));
  if (st.kern && st.pos && st.writer) {
    sc_members(&st);
    if (!st.errors) sc_deps(&st);
    if (!st.errors) sc_homes(&st);
    if (!st.errors) sc_slots(&st);
  } else {
    st.errors++;
  }
  free(st.kern);
  free(st.pos);
  free(st.writer);
  return st.errors;
}

#endif /* PTC_TESTS_SCHED_CHECK_H */
