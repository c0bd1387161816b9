/* ir_dump.c - readable text of an ir_program: buffers (kind, dtype, shape,
 * layout), nodes (kind, ranges, body ops one per line with their index
 * expressions), externs, and the graph outputs' buffers. */
#include "ir_internal.h"

static void expr(const ir_program* p, const sym_expr* e, ptc_strbuf* sb) {
  if (e)
    sym_format_sb(p->env, e, sb);
  else
    ptc_sb_append(sb, "?");
}

static void exprs(const ir_program* p, uint32_t n, const sym_expr* const* e, ptc_strbuf* sb) {
  ptc_sb_append(sb, "[");
  for (uint32_t i = 0; i < n; i++) {
    if (i) ptc_sb_append(sb, ", ");
    expr(p, e[i], sb);
  }
  ptc_sb_append(sb, "]");
}

static const char* buf_name(const ir_program* p, int32_t id) {
  return id >= 0 && (size_t)id < p->buffers.len ? ir_buf(p, id)->name : "-";
}

static void dump_buffer(const ir_program* p, int32_t id, ptc_strbuf* sb) {
  static const char* const kinds[] = {"input", "constant", "computed", "view"};
  const ir_buffer* b = ir_buf(p, id);
  ptc_sb_printf(sb, "  %s: %s %s ", b->name, kinds[b->kind % 4], ptc_dtype_name(b->dtype));
  exprs(p, b->rank, b->shape, sb);
  ptc_sb_append(sb, " strides ");
  exprs(p, b->rank, b->strides, sb);
  ptc_sb_append(sb, " offset ");
  expr(p, b->offset, sb);
  if (b->kind == IR_BUF_INPUT) ptc_sb_printf(sb, " (graph input %d)", (int)b->graph_input);
  if (b->kind == IR_BUF_VIEW) ptc_sb_printf(sb, " (view of %s)", buf_name(p, b->base));
  if (b->kind == IR_BUF_COMPUTED) {
    ptc_sb_append(sb, " numel ");
    expr(p, b->numel, sb);
    ptc_sb_printf(sb, " (node %d)", (int)b->producer);
  }
  ptc_sb_append(sb, "\n");
}

static void dump_op(const ir_program* p, const ir_op* op, uint32_t i, ptc_strbuf* sb) {
  ptc_sb_printf(sb, "    %%%u = %s", i, ir_opcode_name((ir_opcode)op->opcode));
  if (op->opcode == IR_REDUCE) ptc_sb_printf(sb, " %s", ir_rtype_name((ir_rtype)op->rtype));
  if (op->opcode == IR_LOAD || op->opcode == IR_STORE) {
    ptc_sb_printf(sb, " %s[", buf_name(p, op->buf));
    expr(p, op->index, sb);
    ptc_sb_append(sb, "]");
  } else if (op->opcode == IR_INDEX_EXPR || op->opcode == IR_RAND || op->opcode == IR_RANDN) {
    ptc_sb_append(sb, " ");
    expr(p, op->index, sb);
  } else if (op->opcode == IR_CONST) {
    if (ptc_dtype_is_float(op->dtype))
      ptc_sb_printf(sb, " %.17g", op->f);
    else
      ptc_sb_printf(sb, " %lld", (long long)op->i);
  }
  for (int k = 0; k < 3; k++)
    if (op->args[k] >= 0) ptc_sb_printf(sb, " %%%d", (int)op->args[k]);
  if (op->opcode == IR_LOAD && op->args[0] >= 0) ptc_sb_printf(sb, " (else %g)", op->f);
  if (op->opcode == IR_RAND || op->opcode == IR_RANDN)
    ptc_sb_printf(sb, " stream %lld", (long long)op->i);
  if (op->opcode >= IR_NEG && op->opcode <= IR_BNOT && (op->i & IR_MATH_LOWP))
    ptc_sb_append(sb, " lowp");
  if (op->opcode == IR_INDIRECT) {
    ptc_sb_append(sb, " -> ");
    expr(p, op->sym, sb);
    ptc_sb_append(sb, " bound ");
    if (op->bound_expr)
      expr(p, op->bound_expr, sb);
    else
      ptc_sb_printf(sb, "%lld", (long long)op->bound);
  }
  ptc_sb_printf(sb, " : %s%s\n", ptc_dtype_name(op->dtype), op->inner ? " inner" : "");
}

static void dump_extern(const ir_program* p, const ir_extern* e, ptc_strbuf* sb) {
  ptc_sb_printf(sb, " %s(", ir_extern_kind_name((ir_extern_kind)e->kind));
  for (uint32_t k = 0; k < e->n_in; k++)
    ptc_sb_printf(sb, "%s%s", k ? ", " : "", buf_name(p, e->in[k]));
  ptc_sb_append(sb, ") -> ");
  for (uint32_t k = 0; k < e->n_out; k++)
    ptc_sb_printf(sb, "%s%s", k ? ", " : "", buf_name(p, e->out[k]));
  if (e->kind == IR_EXT_MATMUL || e->kind == IR_EXT_CONV)
    ptc_sb_printf(sb, " alpha %g beta %g act %s", e->alpha, e->beta,
                  ir_activation_name((ir_activation)e->activation));
  if (p->graph && e->graph_node < p->graph->nodes.len)
    ptc_sb_printf(sb, " [graph node %s]", graph_node(p->graph, e->graph_node)->name);
}

static void dump_node(const ir_program* p, size_t i, ptc_strbuf* sb) {
  static const char* const kinds[] = {"pointwise", "reduction", "extern"};
  const ir_node* n = ir_node_at(p, i);
  ptc_sb_printf(sb, "  node %zu %s", i, kinds[n->kind % 3]);
  if (n->origin) ptc_sb_printf(sb, " (%s)", n->origin);
  if (n->kind == IR_EXTERN) {
    dump_extern(p, &n->ext, sb);
    ptc_sb_append(sb, "\n");
    return;
  }
  ptc_sb_append(sb, " ranges ");
  exprs(p, n->n_ranges, n->ranges, sb);
  if (n->kind == IR_REDUCTION) {
    ptc_sb_append(sb, " rranges ");
    exprs(p, n->n_rranges, n->rranges, sb);
  }
  ptc_sb_printf(sb, " -> %s\n", buf_name(p, n->out_buf));
  if (!ir_body_ok(&n->body)) {
    ptc_sb_append(sb, "    <invalid body>\n");
    return;
  }
  for (uint32_t k = 0; k < n->body.n; k++) dump_op(p, &n->body.ops[k], k, sb);
}

void ir_program_dump(const ir_program* p, ptc_strbuf* sb) {
  if (!p || !sb) return;
  ptc_sb_printf(sb, "ir program: %zu buffers, %zu nodes\nbuffers:\n", p->buffers.len,
                p->nodes.len);
  for (size_t i = 0; i < p->buffers.len; i++) dump_buffer(p, (int32_t)i, sb);
  ptc_sb_append(sb, "nodes:\n");
  for (size_t i = 0; i < p->nodes.len; i++) dump_node(p, i, sb);
  ptc_sb_append(sb, "outputs:");
  for (size_t i = 0; i < p->n_outputs; i++)
    ptc_sb_printf(sb, " %s", buf_name(p, p->output_bufs[i]));
  ptc_sb_append(sb, "\n");
}
