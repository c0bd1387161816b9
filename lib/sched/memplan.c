/* memplan.c - memory planning over the ordered kernels: buffer homes
 * (inputs/constants external, graph outputs the caller's, kernel-local C
 * values, workspace slots), the kernel after which each buffer is dead,
 * and slot assignment: in place over a dying input of a pointwise node,
 * else a freed slot of the same byte-size expression and alignment class,
 * else a new slot. */
#include <stdlib.h>

#include "sched_internal.h"

typedef struct memctx {
  sched_ctx* c;
  sched_plan* s;
  int32_t* node_kernel;   /* per node */
  uint32_t* node_pos;     /* per node: position in its kernel */
  uint8_t* node_inner;    /* per node */
  const sym_expr** bytes; /* per buffer (SLOT buffers) */
  int32_t* owner;         /* per slot: buffer occupying it, -1 free */
  uint32_t* cls;          /* per slot: alignment class */
  uint32_t cap_slots;
  uint32_t* die_start; /* SLOT buffers dying after kernel k: */
  int32_t* die_buf;    /*   die_buf[die_start[k] .. die_start[k + 1]) */
} memctx;

/* Slots are allocated 64-byte aligned; buffers of one element size share a
 * class (as Inductor keys reuse by dtype), so a reused slot keeps the
 * alignment its vectorised loops assumed. */
static uint32_t align_class(int32_t dtype) { return (uint32_t)ptc_dtype_size(dtype); }

static ptc_status index_nodes(memctx* m) {
  size_t n = m->c->n_nodes;
  m->node_kernel = malloc((n + 1) * sizeof *m->node_kernel);
  m->node_pos = malloc((n + 1) * sizeof *m->node_pos);
  m->node_inner = calloc(n + 1, 1);
  if (!m->node_kernel || !m->node_pos || !m->node_inner) return ptc_status_oom();
  for (uint32_t k = 0; k < m->s->n_kernels; k++) {
    const sched_kernel* kr = &m->s->kernels[k];
    for (uint32_t j = 0; j < kr->n_nodes; j++) {
      m->node_kernel[kr->nodes[j]] = (int32_t)k;
      m->node_pos[kr->nodes[j]] = j;
      m->node_inner[kr->nodes[j]] = kr->node_inner[j];
    }
  }
  return NULL;
}

/* Index e of node u in its kernel's coordinates (r vars for inner nodes). */
static const sym_expr* kidx_of(memctx* m, uint32_t u, const sym_expr* e) {
  const sched_kernel* k = &m->s->kernels[m->node_kernel[u]];
  return sched_kidx(m->c, m->node_inner[u], k->n_ranges, e);
}

/* Every read of b by the nodes of kernel k reads index `at` and comes no
 * later than member position `max_pos`. */
static bool reads_in_kernel_at(memctx* m, int32_t b, int32_t k, uint32_t max_pos,
                               const sym_expr* at, bool other_kernels_ok) {
  const sched_ctx* c = m->c;
  for (uint32_t i = c->rd_start[b]; i < c->rd_start[b + 1]; i++) {
    uint32_t r = c->rd_node[i];
    if (m->node_kernel[r] != k) {
      if (other_kernels_ok) continue;
      return false;
    }
    if (m->node_pos[r] > max_pos) return false;
    const sdeps* d = &c->deps[r];
    for (uint32_t j = 0; j < d->n_reads; j++) {
      if (d->reads[j].buf != b) continue;
      if (!d->reads[j].index || kidx_of(m, r, d->reads[j].index) != at) return false;
    }
  }
  return true;
}

/* Kernel-local: written once per outer point by a reduction or outer
 * pointwise node, read only by later members of the same kernel at the
 * written index, which mentions no reduction or indirect variable. */
static bool is_local(memctx* m, int32_t b) {
  sched_ctx* c = m->c;
  int32_t w = c->writer[b];
  if (w < 0 || c->is_output[b]) return false;
  const ir_node* n = ir_node_at(c->p, (size_t)w);
  if (n->kind == IR_EXTERN || (n->kind == IR_POINTWISE && m->node_inner[w])) return false;
  const sym_expr* widx = sched_write_index(c, b);
  if (!widx || sched_expr_uses(c, widx, SVAR_R) || sched_expr_uses(c, widx, SVAR_INDIRECT))
    return false;
  for (uint32_t i = c->rd_start[b]; i < c->rd_start[b + 1]; i++)
    if (c->rd_node[i] == (uint32_t)w) return false;
  return reads_in_kernel_at(m, b, m->node_kernel[w], UINT32_MAX, widx, false) && !c->oom;
}

static void assign_homes(memctx* m) {
  sched_ctx* c = m->c;
  sched_plan* s = m->s;
  for (size_t b = 0; b < c->n_bufs; b++) {
    const ir_buffer* buf = ir_buf(c->p, (int32_t)b);
    s->buf_slot[b] = -1;
    s->buf_free_after[b] = -1;
    if (buf->kind != IR_BUF_COMPUTED) {
      s->buf_home[b] = SCHED_HOME_EXTERNAL;
    } else if (c->is_output[b]) {
      s->buf_home[b] = SCHED_HOME_OUTPUT;
    } else {
      s->buf_home[b] = c->opt.fuse && is_local(m, (int32_t)b) ? SCHED_HOME_LOCAL : SCHED_HOME_SLOT;
      int32_t last = c->writer[b] >= 0 ? m->node_kernel[c->writer[b]] : 0;
      for (uint32_t i = c->rd_start[b]; i < c->rd_start[b + 1]; i++)
        if (m->node_kernel[c->rd_node[i]] > last) last = m->node_kernel[c->rd_node[i]];
      s->buf_free_after[b] = last;
    }
  }
}

/* ---- slots -------------------------------------------------------------------- */
static int32_t new_slot(memctx* m, const sym_expr* bytes, uint32_t cls) {
  sched_plan* s = m->s;
  if (s->n_slots == m->cap_slots) {
    uint32_t nc = m->cap_slots ? m->cap_slots * 2 : 8;
    sched_slot* ns = realloc(s->slots, nc * sizeof *ns);
    if (!ns) return -1;
    s->slots = ns;
    int32_t* no = realloc(m->owner, nc * sizeof *no);
    if (!no) return -1;
    m->owner = no;
    uint32_t* nk = realloc(m->cls, nc * sizeof *nk);
    if (!nk) return -1;
    m->cls = nk;
    m->cap_slots = nc;
  }
  m->cls[s->n_slots] = cls;
  m->owner[s->n_slots] = -1;
  s->slots[s->n_slots] = (sched_slot){bytes};
  return (int32_t)s->n_slots++;
}

/* A buffer x that y (pointwise, writing b) may overwrite in place, or -1. */
static int32_t inplace_source(memctx* m, uint32_t y, int32_t b, int32_t k) {
  sched_ctx* c = m->c;
  if (ir_node_at(c->p, y)->kind != IR_POINTWISE) return -1;
  const sym_expr* wy = sched_write_index(c, b);
  const sym_expr* at = wy ? kidx_of(m, y, wy) : NULL;
  if (!at) return -1;
  const sdeps* d = &c->deps[y];
  for (uint32_t j = 0; j < d->n_reads; j++) {
    int32_t x = d->reads[j].buf;
    sched_plan* s = m->s;
    if (x == b || s->buf_home[x] != SCHED_HOME_SLOT || s->buf_free_after[x] != k) continue;
    if (s->buf_slot[x] < 0 || m->owner[s->buf_slot[x]] != x) continue;
    if (m->bytes[x] != m->bytes[b] || ir_buf(c->p, x)->dtype != ir_buf(c->p, b)->dtype) continue;
    if (reads_in_kernel_at(m, x, k, m->node_pos[y], at, true)) return x;
  }
  return -1;
}

static int32_t free_slot(memctx* m, int32_t b) {
  uint32_t cls = align_class(ir_buf(m->c->p, b)->dtype);
  for (uint32_t sl = 0; sl < m->s->n_slots; sl++)
    if (m->owner[sl] < 0 && m->s->slots[sl].bytes == m->bytes[b] && m->cls[sl] == cls)
      return (int32_t)sl;
  return -1;
}

/* Gives buffer b (written by node y of kernel k) its slot. */
static ptc_status place(memctx* m, uint32_t y, int32_t b, int32_t k) {
  sched_plan* s = m->s;
  int32_t x = inplace_source(m, y, b, k), sl;
  if (m->c->oom) return ptc_status_oom();
  if (x >= 0) {
    sl = s->buf_slot[x];
    s->n_inplace++;
  } else if ((sl = free_slot(m, b)) >= 0) {
    s->n_reused++;
  } else {
    sl = new_slot(m, m->bytes[b], align_class(ir_buf(m->c->p, b)->dtype));
    if (sl < 0) return ptc_status_oom();
  }
  s->buf_slot[b] = sl;
  m->owner[sl] = b;
  return NULL;
}

static ptc_status place_kernel(memctx* m, int32_t k) {
  const sched_kernel* kr = &m->s->kernels[k];
  for (uint32_t j = 0; j < kr->n_nodes; j++) {
    const sdeps* d = &m->c->deps[kr->nodes[j]];
    for (uint32_t w = 0; w < d->n_writes; w++) {
      int32_t b = d->writes[w].buf;
      if (m->s->buf_home[b] == SCHED_HOME_SLOT && m->s->buf_slot[b] < 0)
        PTC_TRY(place(m, kr->nodes[j], b, k));
    }
  }
  return NULL;
}

/* Buckets the SLOT buffers by the kernel after which they die (counting
 * sort: counts at k + 2, prefix sums, then die_start[k + 1] as the cursor of
 * bucket k, which leaves die_start[k] at the start of bucket k). */
static ptc_status death_lists(memctx* m) {
  const sched_plan* s = m->s;
  m->die_start = calloc(s->n_kernels + 3, sizeof *m->die_start);
  m->die_buf = calloc(m->c->n_bufs + 1, sizeof *m->die_buf);
  if (!m->die_start || !m->die_buf) return ptc_status_oom();
  for (size_t b = 0; b < m->c->n_bufs; b++)
    if (s->buf_home[b] == SCHED_HOME_SLOT && s->buf_free_after[b] >= 0)
      m->die_start[s->buf_free_after[b] + 2]++;
  for (uint32_t k = 0; k + 2 < s->n_kernels + 3; k++) m->die_start[k + 2] += m->die_start[k + 1];
  for (size_t b = 0; b < m->c->n_bufs; b++)
    if (s->buf_home[b] == SCHED_HOME_SLOT && s->buf_free_after[b] >= 0)
      m->die_buf[m->die_start[s->buf_free_after[b] + 1]++] = (int32_t)b;
  return NULL;
}

/* Releases the slots of the buffers that die after kernel k. */
static void release(memctx* m, int32_t k) {
  const sched_plan* s = m->s;
  for (uint32_t i = m->die_start[k]; i < m->die_start[k + 1]; i++) {
    int32_t b = m->die_buf[i], sl = s->buf_slot[b];
    if (sl >= 0 && m->owner[sl] == b) m->owner[sl] = -1;
  }
}

static ptc_status byte_sizes(memctx* m) {
  m->bytes = calloc(m->c->n_bufs + 1, sizeof *m->bytes);
  if (!m->bytes) return ptc_status_oom();
  for (size_t b = 0; b < m->c->n_bufs; b++) {
    if (m->s->buf_home[b] != SCHED_HOME_SLOT) continue;
    m->bytes[b] = sched_buf_bytes(m->c, (int32_t)b);
    if (!m->bytes[b])
      return PTC_ERR(RESOURCE_EXHAUSTED,
                     "scheduler: cannot form the byte size of %s (too large, or out of memory)",
                     ir_buf(m->c->p, (int32_t)b)->name);
  }
  return NULL;
}

static ptc_status plan_slots(memctx* m) {
  PTC_TRY(byte_sizes(m));
  PTC_TRY(death_lists(m));
  for (int32_t k = 0; k < (int32_t)m->s->n_kernels; k++) {
    PTC_TRY(place_kernel(m, k));
    release(m, k);
  }
  /* A computed buffer nobody writes still needs memory. */
  for (size_t b = 0; b < m->c->n_bufs; b++)
    if (m->s->buf_home[b] == SCHED_HOME_SLOT && m->s->buf_slot[b] < 0) {
      int32_t sl = new_slot(m, m->bytes[b], align_class(ir_buf(m->c->p, (int32_t)b)->dtype));
      if (sl < 0) return ptc_status_oom();
      m->s->buf_slot[b] = sl;
      m->owner[sl] = (int32_t)b;
    }
  return NULL;
}

ptc_status sched_plan_memory(sched_ctx* c, sched_plan* s) {
  size_t nb = c->n_bufs + 1;
  s->buf_home = calloc(nb, sizeof *s->buf_home);
  s->buf_slot = calloc(nb, sizeof *s->buf_slot);
  s->buf_free_after = calloc(nb, sizeof *s->buf_free_after);
  if (!s->buf_home || !s->buf_slot || !s->buf_free_after) return ptc_status_oom();
  memctx m = {.c = c, .s = s};
  ptc_status st = index_nodes(&m);
  if (!st) {
    assign_homes(&m);
    st = c->oom ? ptc_status_oom() : plan_slots(&m);
  }
  free(m.node_kernel);
  free(m.node_pos);
  free(m.node_inner);
  free(m.bytes);
  free(m.owner);
  free(m.cls);
  free(m.die_start);
  free(m.die_buf);
  return st;
}

ptc_status sched_slot_offsets(const sched_plan* s, const int64_t* syms, size_t n_syms,
                              size_t align, size_t* off, size_t* total) {
  size_t sum = 0;
  for (uint32_t k = 0; k < s->n_slots; k++) {
    int64_t bytes = 0;
    PTC_TRY(sym_eval(s->slots[k].bytes, syms, n_syms, &bytes));
    off[k] = sum;
    sum += ((size_t)(bytes > 0 ? bytes : 0) + align - 1) / align * align;
  }
  *total = sum;
  return PTC_OK;
}
