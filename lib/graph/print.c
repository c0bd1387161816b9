/* print.c - human-readable graph dump (ptc_graph_print / ptc_graph_format).
 *
 * A header lists the graph's size symbols (hint and value range) and the
 * shape guards recorded while building, then a table in the style of
 * torch.fx's print_tabular: one row per input (placeholder), constant
 * (get_attr), node (call_function) and the output list (output), with the
 * columns opcode, name, target, args, attrs, dtype and symbolic shape.
 * Column widths are computed from the content.
 */
#include "op.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { COL_OPCODE, COL_NAME, COL_TARGET, COL_ARGS, COL_ATTRS, COL_DTYPE, COL_SHAPE, N_COLS };

static const char* const col_titles[N_COLS] = {"opcode", "name",  "target", "args",
                                               "attrs",  "dtype", "shape"};

/* Rows of N_COLS malloc'ed cells. */
typedef struct table {
  ptc_vec cells; /* char* */
  bool oom;
} table;

static void table_free(table* t) {
  for (size_t i = 0; i < t->cells.len; i++) free(PTC_VEC_AT(&t->cells, char*, i));
  ptc_vec_free(&t->cells);
}

/* Appends one row; takes the strings out of row[] (which are reset). */
static void table_add(table* t, ptc_strbuf row[N_COLS]) {
  for (int c = 0; c < N_COLS; c++) {
    t->oom |= row[c].oom;
    char* s = ptc_sb_take(&row[c]);
    if (!s || !ptc_vec_push(&t->cells, &s)) {
      free(s);
      t->oom = true;
    }
  }
}

static void put_padded(ptc_strbuf* sb, const char* s, size_t width, bool last) {
  ptc_sb_append(sb, s);
  if (last) return;
  for (size_t n = strlen(s); n < width + 2; n++) ptc_sb_append(sb, " ");
}

/* Index of the last non-empty cell of row r (that cell is not padded). */
static int last_cell(const table* t, size_t r) {
  int last = N_COLS - 1;
  while (last > 0 && !PTC_VEC_AT(&t->cells, char*, r * N_COLS + (size_t)last)[0]) last--;
  return last;
}

static void table_render(const table* t, ptc_strbuf* sb) {
  size_t width[N_COLS];
  size_t rows = t->cells.len / N_COLS;
  /* widths from the content; a row's last cell does not widen its column
   * (the output row's long argument list would otherwise stretch "args") */
  for (int c = 0; c < N_COLS; c++) {
    width[c] = strlen(col_titles[c]);
    for (size_t r = 0; r < rows; r++) {
      size_t n = strlen(PTC_VEC_AT(&t->cells, char*, r * N_COLS + (size_t)c));
      if (n > width[c] && (c < last_cell(t, r) || c == N_COLS - 1)) width[c] = n;
    }
  }
  for (int c = 0; c < N_COLS; c++) put_padded(sb, col_titles[c], width[c], c == N_COLS - 1);
  ptc_sb_append(sb, "\n");
  for (int c = 0; c < N_COLS; c++) {
    for (size_t k = 0; k < width[c]; k++) ptc_sb_append(sb, "-");
    if (c != N_COLS - 1) ptc_sb_append(sb, "  ");
  }
  ptc_sb_append(sb, "\n");
  for (size_t r = 0; r < rows; r++) {
    int last = last_cell(t, r);
    for (int c = 0; c <= last; c++)
      put_padded(sb, PTC_VEC_AT(&t->cells, char*, r * N_COLS + (size_t)c), width[c], c == last);
    ptc_sb_append(sb, "\n");
  }
}

static void fmt_double(ptc_strbuf* sb, double d) { ptc_sb_printf(sb, "%.9g", d); }

static void fmt_attr_value(const ptc_graph* g, const gattr* a, ptc_strbuf* sb) {
  switch (a->type) {
    case PTC_ATTR_INT: ptc_sb_printf(sb, "%" PRId64, a->i); break;
    case PTC_ATTR_FLOAT: fmt_double(sb, a->f); break;
    case PTC_ATTR_BOOL: ptc_sb_append(sb, a->i ? "True" : "False"); break;
    case PTC_ATTR_STRING: ptc_sb_printf(sb, "'%s'", a->s ? a->s : ""); break;
    case PTC_ATTR_DTYPE: {
      const char* n = ptc_dtype_name((int32_t)a->i);
      ptc_sb_append(sb, n ? n : "?");
      break;
    }
    case PTC_ATTR_SYM: sym_format_sb(g->env, a->sym, sb); break;
    case PTC_ATTR_INTS: graph_format_shape(g->env, (uint32_t)a->count, a->exprs, sb); break;
    case PTC_ATTR_FLOATS:
      ptc_sb_append(sb, "[");
      for (size_t i = 0; i < a->count; i++) {
        if (i) ptc_sb_append(sb, ", ");
        fmt_double(sb, a->floats[i]);
      }
      ptc_sb_append(sb, "]");
      break;
    default: ptc_sb_append(sb, "?"); break;
  }
}

static void fmt_attrs(const ptc_graph* g, const gattrs* as, ptc_strbuf* sb) {
  if (!as->n) return;
  ptc_sb_append(sb, "{");
  for (size_t i = 0; i < as->n; i++) {
    ptc_sb_printf(sb, "%s%s=", i ? ", " : "", as->a[i].name);
    fmt_attr_value(g, &as->a[i], sb);
  }
  ptc_sb_append(sb, "}");
}

static void fmt_value_ref(const ptc_graph* g, ptc_value v, ptc_strbuf* sb) {
  if (v == PTC_VALUE_NONE)
    ptc_sb_append(sb, "None");
  else if (v < g->values.len)
    ptc_sb_append(sb, graph_value(g, v)->name);
  else
    ptc_sb_printf(sb, "<bad id %u>", v);
}

static void fmt_value_list(const ptc_graph* g, const ptc_value* v, size_t n, ptc_strbuf* sb) {
  ptc_sb_append(sb, "(");
  for (size_t i = 0; i < n; i++) {
    if (i) ptc_sb_append(sb, ", ");
    fmt_value_ref(g, v[i], sb);
  }
  ptc_sb_append(sb, ")");
}

static void fmt_dtype(int32_t dt, ptc_strbuf* sb) {
  const char* n = ptc_dtype_name(dt);
  ptc_sb_append(sb, n ? n : "?");
}

static void row_init(ptc_strbuf row[N_COLS]) {
  for (int c = 0; c < N_COLS; c++) ptc_sb_init(&row[c]);
}

static void add_value_rows(const ptc_graph* g, int32_t kind, table* t) {
  for (size_t i = 0; i < g->values.len; i++) {
    const gvalue* v = graph_value(g, (ptc_value)i);
    if (v->kind != kind) continue;
    ptc_strbuf row[N_COLS];
    row_init(row);
    ptc_sb_append(&row[COL_OPCODE], kind == PTC_VALUE_INPUT ? "placeholder" : "get_attr");
    ptc_sb_append(&row[COL_NAME], v->name);
    ptc_sb_append(&row[COL_TARGET], v->name);
    fmt_dtype(v->dtype, &row[COL_DTYPE]);
    graph_format_shape(g->env, v->rank, v->shape, &row[COL_SHAPE]);
    table_add(t, row);
  }
}

static void add_node_row(const ptc_graph* g, const gnode* n, table* t) {
  ptc_strbuf row[N_COLS];
  row_init(row);
  ptc_sb_append(&row[COL_OPCODE], "call_function");
  ptc_sb_append(&row[COL_NAME], n->name);
  ptc_sb_append(&row[COL_TARGET], n->op->name);
  fmt_value_list(g, n->in, n->n_in, &row[COL_ARGS]);
  fmt_attrs(g, &n->attrs, &row[COL_ATTRS]);
  for (uint32_t o = 0; o < n->n_out; o++) {
    const gvalue* v = graph_value(g, n->out[o]);
    if (o) {
      ptc_sb_append(&row[COL_DTYPE], ", ");
      ptc_sb_append(&row[COL_SHAPE], ", ");
    }
    fmt_dtype(v->dtype, &row[COL_DTYPE]);
    graph_format_shape(g->env, v->rank, v->shape, &row[COL_SHAPE]);
  }
  table_add(t, row);
}

static void add_output_row(const ptc_graph* g, table* t) {
  ptc_strbuf row[N_COLS];
  row_init(row);
  ptc_sb_append(&row[COL_OPCODE], "output");
  ptc_sb_append(&row[COL_NAME], "output");
  ptc_sb_append(&row[COL_TARGET], "output");
  fmt_value_list(g, (const ptc_value*)g->outputs.data, g->outputs.len, &row[COL_ARGS]);
  table_add(t, row);
}

static void fmt_symbols(const ptc_graph* g, ptc_strbuf* sb) {
  size_t n = sym_num_vars(g->env);
  ptc_sb_append(sb, n ? "symbols:\n" : "symbols: none\n");
  for (size_t i = 0; i < n; i++) {
    int64_t lo, hi, hint = sym_var_hint(g->env, i);
    sym_var_range(g->env, i, &lo, &hi);
    ptc_sb_printf(sb, "  %s: ", sym_var_name(g->env, i));
    if (hint == SYM_NO_HINT)
      ptc_sb_append(sb, "no hint (unbacked)");
    else
      ptc_sb_printf(sb, "hint %" PRId64, hint);
    ptc_sb_printf(sb, ", range [%" PRId64 ", %" PRId64 "]\n", lo, hi);
  }
}

static void fmt_guards(const ptc_graph* g, ptc_strbuf* sb) {
  size_t n = sym_num_guards(g->env);
  ptc_sb_append(sb, n ? "guards:\n" : "guards: none\n");
  for (size_t i = 0; i < n; i++) {
    char small[256];
    size_t len = sym_guard_format(g->env, i, small, sizeof small);
    char* text = small;
    if (len >= sizeof small) {
      text = malloc(len + 1);
      if (!text) {
        sb->oom = true;
        return;
      }
      sym_guard_format(g->env, i, text, len + 1);
    }
    ptc_sb_printf(sb, "  %s\n", text);
    if (text != small) free(text);
  }
}

static size_t count_kind(const ptc_graph* g, int32_t kind) {
  size_t n = 0;
  for (size_t i = 0; i < g->values.len; i++) n += graph_value(g, (ptc_value)i)->kind == kind;
  return n;
}

/* Renders the whole dump into sb (sb->oom set on allocation failure). */
static void render(const ptc_graph* g, ptc_strbuf* sb) {
  ptc_sb_printf(sb, "graph: %zu inputs, %zu constants, %zu nodes, %zu outputs\n", g->inputs.len,
                count_kind(g, PTC_VALUE_CONSTANT), g->nodes.len, g->outputs.len);
  fmt_symbols(g, sb);
  fmt_guards(g, sb);
  table t = {{0}, false};
  ptc_vec_init(&t.cells, sizeof(char*));
  add_value_rows(g, PTC_VALUE_INPUT, &t);
  add_value_rows(g, PTC_VALUE_CONSTANT, &t);
  for (size_t i = 0; i < g->nodes.len; i++) add_node_row(g, graph_node(g, i), &t);
  add_output_row(g, &t);
  if (t.oom)
    sb->oom = true;
  else
    table_render(&t, sb);
  table_free(&t);
}

ptc_status ptc_graph_format(const ptc_graph* g, char* buf, size_t cap, size_t* needed) {
  if (!g) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_format: NULL graph");
  if (cap && !buf) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_format: NULL buffer with cap %zu", cap);
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  render(g, &sb);
  if (sb.oom) {
    ptc_sb_free(&sb);
    return ptc_status_oom();
  }
  const char* text = sb.data ? sb.data : "";
  size_t len = ptc_copy_out(text, buf, cap);
  ptc_sb_free(&sb);
  if (needed) *needed = len;
  if (len >= cap)
    return PTC_ERR(OUT_OF_RANGE, "ptc_graph_format: the text needs %zu bytes plus the NUL, the "
                   "buffer holds %zu", len, cap);
  return PTC_OK;
}

ptc_status ptc_graph_print(const ptc_graph* g, FILE* f) {
  if (!g || !f) return PTC_ERR(INVALID_ARGUMENT, "ptc_graph_print: NULL argument");
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  render(g, &sb);
  if (sb.oom) {
    ptc_sb_free(&sb);
    return ptc_status_oom();
  }
  size_t wrote = sb.len ? fwrite(sb.data, 1, sb.len, f) : 0;
  bool bad = wrote != sb.len || fflush(f) != 0 || ferror(f);
  ptc_sb_free(&sb);
  if (bad) return PTC_ERR(UNKNOWN, "ptc_graph_print: write error");
  return PTC_OK;
}
