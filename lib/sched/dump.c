/* dump.c - readable text of a schedule: kernels with their member nodes
 * (inner/outer roles) and loop sizes, buffer homes and slots, statistics,
 * then the fusion decision log. */
#include "sched_internal.h"

static const char* const home_names[] = {"external", "output", "slot", "local"};
static const char* const node_kinds[] = {"pointwise", "reduction", "extern"};

static void dump_list(const ir_program* p, uint32_t n, const sym_expr* const* e, ptc_strbuf* sb) {
  ptc_sb_append(sb, "[");
  for (uint32_t i = 0; i < n; i++) {
    if (i) ptc_sb_append(sb, ", ");
    sym_format_sb(p->env, e[i], sb);
  }
  ptc_sb_append(sb, "]");
}

static const char* role(const ir_node* n, const sched_kernel* k, uint32_t j) {
  if (n->kind != IR_POINTWISE || k->n_rranges == 0) return "";
  return k->node_inner[j] ? " inner" : " outer";
}

static void dump_outputs(const ir_program* p, const ir_node* n, ptc_strbuf* sb) {
  uint32_t count = n->kind == IR_EXTERN ? n->ext.n_out : 1;
  for (uint32_t i = 0; i < count; i++) {
    int32_t b = n->kind == IR_EXTERN ? n->ext.out[i] : n->out_buf;
    if (b >= 0 && (size_t)b < p->buffers.len)
      ptc_sb_printf(sb, "%s%s", i ? ", " : " -> ", ir_buf(p, b)->name);
  }
}

static void dump_kernel(const ir_program* p, const sched_kernel* k, uint32_t i, ptc_strbuf* sb) {
  ptc_sb_printf(sb, "kernel %u %s:", i, k->name);
  if (k->is_extern) {
    ptc_sb_append(sb, " extern");
  } else {
    ptc_sb_append(sb, " ranges ");
    dump_list(p, k->n_ranges, k->ranges, sb);
    if (k->n_rranges) {
      ptc_sb_append(sb, " rranges ");
      dump_list(p, k->n_rranges, k->rranges, sb);
    }
  }
  ptc_sb_append(sb, "\n");
  for (uint32_t j = 0; j < k->n_nodes; j++) {
    const ir_node* n = ir_node_at(p, k->nodes[j]);
    const char* kind = n->kind >= 0 && n->kind <= IR_EXTERN ? node_kinds[n->kind] : "?";
    ptc_sb_printf(sb, "  node %u %s%s", k->nodes[j], kind, role(n, k, j));
    dump_outputs(p, n, sb);
    if (n->origin) ptc_sb_printf(sb, " (%s)", n->origin);
    ptc_sb_append(sb, "\n");
  }
}

static void dump_buffer(const ir_program* p, const sched_plan* s, size_t b, ptc_strbuf* sb) {
  int32_t h = s->buf_home[b];
  ptc_sb_printf(sb, "  %s: %s", ir_buf(p, (int32_t)b)->name,
                h >= 0 && h <= SCHED_HOME_LOCAL ? home_names[h] : "?");
  if (h == SCHED_HOME_SLOT) ptc_sb_printf(sb, " %d", s->buf_slot[b]);
  const ir_buffer* buf = ir_buf(p, (int32_t)b);
  if (buf->kind == IR_BUF_VIEW) ptc_sb_printf(sb, " (view of %s)", ir_buf(p, buf->base)->name);
  if (s->buf_free_after[b] >= 0) ptc_sb_printf(sb, ", dead after kernel %d", s->buf_free_after[b]);
  ptc_sb_append(sb, "\n");
}

void sched_plan_dump(const ir_program* p, const sched_plan* s, ptc_strbuf* sb) {
  if (!p || !s || !sb) return;
  ptc_sb_printf(sb, "schedule: %u kernels, %u slots, %u fusions, %u in place, %u reused\n",
                s->n_kernels, s->n_slots, s->n_fusions, s->n_inplace, s->n_reused);
  for (uint32_t k = 0; k < s->n_kernels; k++) dump_kernel(p, &s->kernels[k], k, sb);
  ptc_sb_append(sb, "buffers:\n");
  for (size_t b = 0; b < p->buffers.len; b++) dump_buffer(p, s, b, sb);
  ptc_sb_append(sb, "slots:\n");
  for (uint32_t i = 0; i < s->n_slots; i++) {
    ptc_sb_printf(sb, "  slot %u: ", i);
    sym_format_sb(p->env, s->slots[i].bytes, sb);
    ptc_sb_append(sb, " bytes\n");
  }
  ptc_sb_append(sb, "decisions:\n");
  if (s->log.len) ptc_sb_append(sb, s->log.data);
}
