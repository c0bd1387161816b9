/* cpu_codegen.c - C + OpenMP source for one scheduled kernel: the argument
 * list (buffers, then the kernel context), declarations, up-front checks,
 * and the loop nest.
 *
 * Loops. Outer loops run over the kernel's ranges (x vars). Per outer point
 * the members run in groups (see cpu_codegen_internal.h): hoisted ops,
 * accumulators, one inner loop nest over the rranges (r vars) holding the
 * in-loop ops of every member of the group, then finalisation and the ops
 * after the reductions. Parallelisation is chosen from the size hints:
 *  - CG_MODE_OUTER: `omp parallel for collapse(d)` over the leading outer
 *    dims (pointwise kernels keep the innermost dim for `omp simd`);
 *  - CG_MODE_SPLIT: full reductions and reductions with few outer points
 *    split the first inner dim over threads; each thread folds into its own
 *    accumulators, saved into per-thread slots and combined in thread order
 *    (deterministic for a given thread count);
 *  - below CPU_CG_PAR_MIN_WORK elements of work everything is serial; with
 *    symbolic sizes that test is an OpenMP `if` clause evaluated at run time.
 * Inner loops get `omp simd` (reduction clauses for sum/prod/max/min/any/
 * all; float max/min carry a NaN flag so they vectorise) when no op in them
 * reports errors or draws random numbers and no argmax/argmin is involved.
 * Reductions that walk memory with a stride while the last outer dim is
 * contiguous (column sums) are tiled instead (see "tiled reductions").
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cg_fail(cg* g, ptc_status s) {
  if (!g->err)
    g->err = s;
  else
    ptc_status_destroy(s);
}

void cg_line(cg* g, ptc_strbuf* sb, const char* fmt, ...) {
  for (int d = 0; d < g->indent; d++) ptc_sb_append(sb, "  ");
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < sizeof small) {
    ptc_sb_append(sb, small);
  } else if (n >= 0) {
    char* big = malloc((size_t)n + 1);
    if (!big) {
      sb->oom = true;
      return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ptc_sb_append(sb, big);
    free(big);
  }
  ptc_sb_append(sb, "\n");
}

/* ---- buffers ---------------------------------------------------------------------------- */

static void note_buffer(cg* g, const ir_op* op, bool* used) {
  if (op->opcode != IR_LOAD && op->opcode != IR_STORE) return;
  if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) return;
  used[op->buf] = true;
  if (op->opcode == IR_STORE) g->stored[op->buf] = true;
}

/* Argument list: every non-local buffer a live load/store touches, by id. */
static ptc_status collect_buffers(cg* g, cpu_kernel_src* out) {
  size_t nb = g->n_buffers;
  bool* used = calloc(nb ? nb : 1, sizeof *used);
  if (!used) return ptc_status_oom();
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    const cg_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++)
      if (mb->live[i]) note_buffer(g, &mb->node->body.ops[i], used);
  }
  uint32_t n = 0;
  for (size_t b = 0; b < nb; b++) n += used[b];
  out->bufs = malloc((n ? n : 1) * sizeof *out->bufs);
  if (!out->bufs) {
    free(used);
    return ptc_status_oom();
  }
  for (size_t b = 0; b < nb; b++)
    if (used[b]) out->bufs[out->n_bufs++] = (int32_t)b;
  free(used);
  return PTC_OK;
}

/* restrict is wrong when two of the kernel's buffers share a slot (in place). */
static bool shares_slot(const cg* g, const cpu_kernel_src* out, int32_t b) {
  if (g->s->buf_home[b] != SCHED_HOME_SLOT) return false;
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t o = out->bufs[j];
    if (o != b && g->s->buf_home[o] == SCHED_HOME_SLOT && g->s->buf_slot[o] == g->s->buf_slot[b])
      return true;
  }
  return false;
}

static void emit_decls(cg* g, const cpu_kernel_src* out, ptc_strbuf* sb) {
  ptc_sb_append(sb, "  (void)bufs;\n  (void)syms;\n");
  if (g->uses_ctx)
    ptc_sb_printf(sb, "  ptc_kctx* const kctx = (ptc_kctx*)bufs[%u];\n", out->n_bufs);
  for (size_t v = 0; v < g->n_vars; v++)
    if (g->vars[v].role == CG_VAR_SIZE && g->vars[v].used)
      ptc_sb_printf(sb, "  const int64_t %s = syms[%u];\n", g->vars[v].name, g->vars[v].k);
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    char name[40];
    cg_buf_name(g, b, name, sizeof name);
    const char* c = g->stored[b] ? "" : "const ";
    const char* t = cg_storage_type(ir_buf(g->p, b)->dtype);
    const char* r = shares_slot(g, out, b) ? "" : " restrict";
    ptc_sb_printf(sb, "  %s%s*%s %s = (%s%s*)bufs[%u];\n", c, t, r, name, c, t, j);
  }
}

/* ---- schedule ------------------------------------------------------------------------------ */

static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  return ptc_mul_ok(a, b, &r) ? r : INT64_MAX;
}

static int64_t hint_product(const cg* g, const sym_expr* const* r, uint32_t n) {
  int64_t p = 1;
  for (uint32_t d = 0; d < n; d++) p = sat_mul(p, cg_hint(g, r[d]));
  return p;
}

static bool all_static(const sym_expr* const* r, uint32_t n) {
  int64_t v;
  for (uint32_t d = 0; d < n; d++)
    if (!sym_is_const(r[d], &v)) return false;
  return true;
}

static bool has_reduction(const cg* g) {
  for (uint32_t m = 0; m < g->k->n_nodes; m++)
    if (g->members[m].kind != CG_MEM_OUTER) return true;
  return false;
}

/* ---- tiled reductions ------------------------------------------------------------------------
 * A reduction that walks memory with a stride (e.g. summing the columns of
 * a row-major matrix) while its last outer dim is contiguous is emitted
 * with that dim tiled: per tile, the reduction loops run outside and the
 * CPU_CG_TILE points of the tile inside (vectorised, one accumulator lane
 * per point), then a loop over the tile finishes every point. Kept to the
 * simple shape: one group of reduction members followed by outer
 * pointwise members, no indirect or random ops. */

/* Whether the loads of a reduction member's loop favour tiling: some load
 * is contiguous in the last outer var and none in the last reduction var.
 * *any_contig_x is set when a load has stride 1 in the last outer var. */
static bool loads_favour_tiling(const cg* g, const cg_member* mb, bool* any_contig_x) {
  const sym_expr* xv = g->p->xvars[g->k->n_ranges - 1];
  const sym_expr* rv = g->p->rvars[g->k->n_rranges - 1];
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++) {
    const ir_op* op = &b->ops[i];
    if (!mb->live[i] || op->opcode != IR_LOAD || mb->stage[i] != CG_LOOP) continue;
    if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) continue;
    int64_t cx, cr;
    if (cg_coef(op->index, rv, &cr) && cr == 1) return false;
    if (cg_coef(op->index, xv, &cx) && cx == 1) *any_contig_x = true;
  }
  return true;
}

static bool member_tileable(const cg* g, uint32_t m) {
  const cg_member* mb = &g->members[m];
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++) {
    uint16_t op = b->ops[i].opcode;
    if (mb->live[i] && (op == IR_INDIRECT || op == IR_RAND || op == IR_RANDN)) return false;
  }
  for (uint32_t j = 0; j < m; j++)
    if (cg_member_reads(g, m, g->members[j].node->out_buf)) return false;
  return true;
}

static bool tiled_eligible(const cg* g) {
  const sched_kernel* k = g->k;
  if (k->n_ranges == 0 || k->n_rranges == 0 || cg_hint(g, k->ranges[k->n_ranges - 1]) < 2)
    return false;
  bool seen_outer = false, contig_x = false;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    const cg_member* mb = &g->members[m];
    if (mb->kind == CG_MEM_INNER) return false;
    if (mb->kind == CG_MEM_OUTER) {
      seen_outer = true;
      continue;
    }
    if (seen_outer || !member_tileable(g, m) || !loads_favour_tiling(g, mb, &contig_x))
      return false;
  }
  return contig_x;
}

static void choose_schedule(cg* g) {
  const sched_kernel* k = g->k;
  int64_t outer = hint_product(g, k->ranges, k->n_ranges);
  int64_t inner = hint_product(g, k->rranges, k->n_rranges);
  int64_t work = sat_mul(outer, inner);
  bool stat = all_static(k->ranges, k->n_ranges) && all_static(k->rranges, k->n_rranges);
  g->par = stat ? (work >= CPU_CG_PAR_MIN_WORK ? CG_PAR_YES : CG_PAR_NO) : CG_PAR_IF;
  bool red = has_reduction(g) && k->n_rranges > 0;
  if (red && g->par != CG_PAR_NO &&
      (k->n_ranges == 0 || (outer < CPU_CG_MIN_OUTER_PAR && inner >= CPU_CG_PAR_MIN_WORK)))
    g->mode = CG_MODE_SPLIT;
  else
    g->mode = k->n_ranges && g->par != CG_PAR_NO ? CG_MODE_OUTER : CG_MODE_SERIAL;
  g->tiled = g->mode != CG_MODE_SPLIT && tiled_eligible(g);
  /* pointwise nests keep the innermost dim for simd unless the others give
   * too few iterations; then the whole nest is one parallel simd loop */
  uint32_t limit = !red && k->n_ranges > 1 ? k->n_ranges - 1 : k->n_ranges;
  int64_t iters = 1;
  g->collapse = 0;
  while (g->mode == CG_MODE_OUTER && g->collapse < limit && iters < CPU_CG_PAR_MIN_ITERS) {
    int64_t h = cg_hint(g, k->ranges[g->collapse]);
    if (g->tiled && g->collapse + 1 == k->n_ranges) h = (h + CPU_CG_TILE - 1) / CPU_CG_TILE;
    iters = sat_mul(iters, h);
    g->collapse++;
  }
  if (g->mode == CG_MODE_OUTER && !red && iters < CPU_CG_PAR_MIN_ITERS)
    g->collapse = k->n_ranges;
}

/* " if(<work> >= PTC_PAR_MIN_WORK)" for run-time decisions, else "". */
static void if_clause(cg* g, ptc_strbuf* sb, const char* modifier) {
  if (g->par != CG_PAR_IF) return;
  ptc_sb_printf(sb, " if(%s", modifier);
  cg_numel(g, sb, true, true);
  ptc_sb_append(sb, " >= PTC_PAR_MIN_WORK)");
}

/* ---- groups and inner loops ------------------------------------------------------------------ */

typedef struct group {
  uint32_t n;
  uint32_t* m;  /* member indices */
} group;

static bool group_has_acc(const cg* g, const group* gr) {
  for (uint32_t j = 0; j < gr->n; j++)
    if (g->members[gr->m[j]].kind == CG_MEM_REDUCTION) return true;
  return false;
}

/* Whether the group's inner loop may carry `omp simd`; appends the clauses. */
static bool group_simd(cg* g, const group* gr, ptc_strbuf* clauses) {
  bool ok = true;
  for (uint32_t j = 0; j < gr->n && ok; j++) {
    cg_member_begin(g, gr->m[j]);
    ok = cg_stage_simd_ok(g, CG_LOOP) && cg_simd_clauses(g, clauses);
  }
  return ok;
}

static void emit_loop_body(cg* g, const group* gr) {
  for (uint32_t j = 0; j < gr->n; j++) {
    cg_member_begin(g, gr->m[j]);
    cg_emit_stage(g, &g->body, CG_LOOP);
    cg_emit_acc_updates(g, &g->body);
  }
}

/* for r<d> loops from dim `from`; the first one may start at `lo`/`hi`. */
static void open_rloops(cg* g, uint32_t from, const char* lo, const char* hi, bool simd,
                        const char* clauses) {
  for (uint32_t d = from; d < g->k->n_rranges; d++) {
    if (simd && d + 1 == g->k->n_rranges) cg_line(g, &g->body, "#pragma omp simd%s", clauses);
    ptc_strbuf bound;
    ptc_sb_init(&bound);
    if (d == from && hi)
      ptc_sb_append(&bound, hi);
    else
      cg_index(g, &bound, g->k->rranges[d]);
    cg_line(g, &g->body, "for (int64_t r%u = %s; r%u < %s; r%u++) {", d,
            d == from && lo ? lo : "0", d, bound.data ? bound.data : "0", d);
    ptc_sb_free(&bound);
    g->indent++;
  }
  if (g->k->n_rranges == from) {
    cg_line(g, &g->body, "{");
    g->indent++;
  }
}

static void close_rloops(cg* g, uint32_t from) {
  uint32_t n = g->k->n_rranges > from ? g->k->n_rranges - from : 1;
  for (uint32_t d = 0; d < n; d++) {
    g->indent--;
    cg_line(g, &g->body, "}");
  }
}

static void emit_inner_loop(cg* g, const group* gr) {
  ptc_strbuf clauses;
  ptc_sb_init(&clauses);
  bool simd = group_simd(g, gr, &clauses);
  open_rloops(g, 0, NULL, NULL, simd, clauses.data ? clauses.data : "");
  emit_loop_body(g, gr);
  close_rloops(g, 0);
  ptc_sb_free(&clauses);
}

/* The first inner dim split evenly over the threads of a parallel region. */
static void emit_split_loop(cg* g, const group* gr) {
  uint32_t id = g->n_groups++;
  bool acc = group_has_acc(g, gr);
  if (acc) cg_line(g, &g->body, "int nth%u = 1;", id);
  ptc_strbuf pr, r0;
  ptc_sb_init(&pr);
  ptc_sb_init(&r0);
  if_clause(g, &pr, "");
  cg_index(g, &r0, g->k->rranges[0]);
  const char* R0 = r0.data ? r0.data : "0";
  cg_line(g, &g->body, "#pragma omp parallel num_threads(ptc_nthreads())%s",
          pr.data ? pr.data : "");
  cg_line(g, &g->body, "{");
  g->indent++;
  cg_line(g, &g->body, "const int tid = omp_get_thread_num(), nth = omp_get_num_threads();");
  if (acc) cg_line(g, &g->body, "if (tid == 0) nth%u = nth;", id);
  cg_line(g, &g->body, "const int64_t lo = %s * tid / nth, hi = %s * (tid + 1) / nth;", R0, R0);
  for (uint32_t j = 0; j < gr->n; j++) {
    cg_member_begin(g, gr->m[j]);
    cg_emit_acc_thread_decls(g, &g->body);
  }
  ptc_strbuf clauses;
  ptc_sb_init(&clauses);
  bool simd = group_simd(g, gr, &clauses);
  open_rloops(g, 0, "lo", "hi", simd, clauses.data ? clauses.data : "");
  emit_loop_body(g, gr);
  close_rloops(g, 0);
  for (uint32_t j = 0; j < gr->n; j++) {
    cg_member_begin(g, gr->m[j]);
    cg_emit_acc_thread_save(g, &g->body);
  }
  g->indent--;
  cg_line(g, &g->body, "}");
  if (acc) {
    cg_line(g, &g->body, "for (int t = 0; t < nth%u; t++) {", id);
    g->indent++;
    for (uint32_t j = 0; j < gr->n; j++) {
      cg_member_begin(g, gr->m[j]);
      cg_emit_acc_combine(g, &g->body, "t");
    }
    g->indent--;
    cg_line(g, &g->body, "}");
  }
  ptc_sb_free(&clauses);
  ptc_sb_free(&pr);
  ptc_sb_free(&r0);
}

/* A comment line naming member m (node, kind, output, origin). */
static void member_comment(cg* g, uint32_t m) {
  const cg_member* mb = &g->members[m];
  static const char* const kinds[] = {"reduction", "inner", "outer"};
  char name[40], origin[64];
  cg_buf_name(g, mb->node->out_buf, name, sizeof name);
  /* the origin is graph text: keep it from closing the comment */
  snprintf(origin, sizeof origin, "%s", mb->node->origin ? mb->node->origin : "");
  for (char* q = origin; *q; q++)
    if (*q == '*' || *q == '/' || *q == '\\' || (unsigned char)*q < 32) *q = '_';
  cg_line(g, &g->body, "/* node %d (%s) -> %s%s%s */", mb->node_index, kinds[mb->kind], name,
          *origin ? ": " : "", origin);
}

/* Emits one group: hoisted ops, accumulators, the inner loop, results. */
static void flush_group(cg* g, group* gr) {
  if (!gr->n) return;
  bool split = g->mode == CG_MODE_SPLIT && g->k->n_rranges > 0;
  for (uint32_t j = 0; j < gr->n; j++) member_comment(g, gr->m[j]);
  for (uint32_t j = 0; j < gr->n; j++) {
    cg_member_begin(g, gr->m[j]);
    cg_emit_stage(g, &g->body, CG_PRE);
    cg_emit_acc_decls(g, &g->body, split);
  }
  if (split)
    emit_split_loop(g, gr);
  else
    emit_inner_loop(g, gr);
  for (uint32_t j = 0; j < gr->n; j++) {
    cg_member_begin(g, gr->m[j]);
    cg_emit_acc_finalize(g, &g->body, split);
    cg_emit_stage(g, &g->body, CG_POST);
  }
  gr->n = 0;
}

/* Whether member m needs a reduction result of the current group. */
static bool group_feeds(const cg* g, const group* gr, uint32_t m) {
  for (uint32_t j = 0; j < gr->n; j++) {
    const cg_member* mb = &g->members[gr->m[j]];
    if (mb->kind == CG_MEM_REDUCTION && cg_member_reads(g, m, mb->node->out_buf)) return true;
  }
  return false;
}

static ptc_status emit_outer_body(cg* g) {
  group gr = {0, calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof(uint32_t))};
  if (!gr.m) return ptc_status_oom();
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    const cg_member* mb = &g->members[m];
    if (mb->kind == CG_MEM_OUTER) {
      flush_group(g, &gr);
      member_comment(g, m);
      cg_member_begin(g, m);
      cg_emit_stage(g, &g->body, CG_PRE);
      continue;
    }
    if (group_feeds(g, &gr, m)) flush_group(g, &gr);
    gr.m[gr.n++] = m;
  }
  flush_group(g, &gr);
  free(gr.m);
  return PTC_OK;
}

/* Inside the tile loop (xt .. xe): accumulators per lane, the reduction
 * loops around the vectorised lane loop, then the per-point epilogue. */
static void emit_tiled_body(cg* g) {
  const sched_kernel* k = g->k;
  uint32_t xl = k->n_ranges - 1;
  g->tile = CPU_CG_TILE;
  snprintf(g->lane, sizeof g->lane, "[x%u - xt]", xl);
  bool simd = true;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CG_MEM_REDUCTION) continue;
    member_comment(g, m);
    cg_member_begin(g, m);
    cg_emit_acc_decls(g, &g->body, false);
    simd = simd && cg_stage_simd_ok(g, CG_PRE) && cg_stage_simd_ok(g, CG_LOOP);
  }
  open_rloops(g, 0, NULL, NULL, false, "");
  if (simd) cg_line(g, &g->body, "#pragma omp simd");
  cg_line(g, &g->body, "for (int64_t x%u = xt; x%u < xe; x%u++) {", xl, xl, xl);
  g->indent++;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CG_MEM_REDUCTION) continue;
    cg_member_begin(g, m);
    cg_emit_pre_for(g, &g->body, CG_LOOP);
    cg_emit_stage(g, &g->body, CG_LOOP);
    cg_emit_acc_updates(g, &g->body);
  }
  g->indent--;
  cg_line(g, &g->body, "}");
  close_rloops(g, 0);
  cg_line(g, &g->body, "for (int64_t x%u = xt; x%u < xe; x%u++) {", xl, xl, xl);
  g->indent++;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    cg_member_begin(g, m);
    if (g->members[m].kind == CG_MEM_OUTER) {
      member_comment(g, m);
      cg_emit_stage(g, &g->body, CG_PRE);
      continue;
    }
    cg_emit_pre_for(g, &g->body, CG_POST);
    cg_emit_acc_finalize(g, &g->body, false);
    cg_emit_stage(g, &g->body, CG_POST);
  }
  g->indent--;
  cg_line(g, &g->body, "}");
  g->tile = 0;
}

/* ---- outer loops ----------------------------------------------------------------------------- */

static bool pointwise_simd_ok(cg* g) {
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    cg_member_begin(g, m);
    if (!cg_stage_simd_ok(g, CG_PRE)) return false;
  }
  return true;
}

/* The pragma before outer loop d (may be empty). */
/* The pragma before outer loop d (may be empty). A pointwise nest whose
 * parallel loop covers the innermost dim is one `parallel for simd`. */
static void outer_pragma(cg* g, uint32_t d, bool pointwise, bool simd) {
  bool par = g->mode == CG_MODE_OUTER && d == 0;
  bool par_covers_innermost = g->mode == CG_MODE_OUTER && g->collapse == g->k->n_ranges;
  bool vec = pointwise && simd && (par ? par_covers_innermost : d + 1 == g->k->n_ranges);
  ptc_strbuf clause;
  ptc_sb_init(&clause);
  if (par) {
    if (g->collapse > 1) ptc_sb_printf(&clause, " collapse(%u)", g->collapse);
    if_clause(g, &clause, vec ? "parallel: " : "");
    cg_line(g, &g->body, "#pragma omp parallel for%s%s", vec ? " simd" : "",
            clause.data ? clause.data : "");
  } else if (vec && !par_covers_innermost) {
    cg_line(g, &g->body, "#pragma omp simd");
  }
  ptc_sb_free(&clause);
}

static ptc_status emit_loops(cg* g) {
  const sched_kernel* k = g->k;
  bool pointwise = !has_reduction(g) || k->n_rranges == 0;
  bool simd = pointwise && pointwise_simd_ok(g);
  g->indent = 1;
  for (uint32_t d = 0; d < k->n_ranges; d++) {
    outer_pragma(g, d, pointwise, simd);
    ptc_strbuf bound;
    ptc_sb_init(&bound);
    cg_index(g, &bound, k->ranges[d]);
    const char* b = bound.data ? bound.data : "0";
    if (g->tiled && d + 1 == k->n_ranges) {
      cg_line(g, &g->body, "for (int64_t xt = 0; xt < %s; xt += %d) {", b, CPU_CG_TILE);
      cg_line(g, &g->body, "  const int64_t xe = ptc_imin(xt + %d, %s);", CPU_CG_TILE, b);
    } else {
      cg_line(g, &g->body, "for (int64_t x%u = 0; x%u < %s; x%u++) {", d, d, b, d);
    }
    ptc_sb_free(&bound);
    g->indent++;
  }
  if (g->tiled)
    emit_tiled_body(g);
  else
    PTC_TRY(emit_outer_body(g));
  for (uint32_t d = 0; d < k->n_ranges; d++) {
    g->indent--;
    cg_line(g, &g->body, "}");
  }
  return PTC_OK;
}

/* ---- up-front checks ------------------------------------------------------------------------- */

static bool inner_may_be_empty(const cg* g) {
  for (uint32_t d = 0; d < g->k->n_rranges; d++) {
    int64_t lo, hi;
    sym_bounds(g->p->env, g->k->rranges[d], &lo, &hi);
    if (lo <= 0) return true;
  }
  return false;
}

static void emit_checks(cg* g) {
  g->indent = 1;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) cg_member_indirect_checks(g, m);
  if (!inner_may_be_empty(g)) return;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    if (!cg_member_needs_nonempty(g, m)) continue;
    cg_member_begin(g, m);
    ptc_strbuf o, in;
    ptc_sb_init(&o);
    ptc_sb_init(&in);
    cg_numel(g, &o, true, false);
    cg_numel(g, &in, false, true);
    cg_line(g, &g->checks, "if (%s == 0 && %s > 0) {", in.data ? in.data : "0",
            o.data ? o.data : "0");
    cg_line(g, &g->checks, "  ptc_fail(kctx, PTC_KERR_EMPTY, %d, %s, 0);", g->node_index,
            o.data ? o.data : "0");
    cg_line(g, &g->checks, "  return;");
    cg_line(g, &g->checks, "}");
    g->uses_ctx = true;
    ptc_sb_free(&o);
    ptc_sb_free(&in);
    return; /* one check covers every member (same loops) */
  }
}

/* ---- entry ----------------------------------------------------------------------------------- */

static ptc_status check_args(const ir_program* p, const sched_plan* s, uint32_t k,
                             cpu_kernel_src* out) {
  if (!p || !s || !out) return PTC_ERR(INVALID_ARGUMENT, "cpu_codegen_kernel: NULL argument");
  if (k >= s->n_kernels)
    return PTC_ERR(INVALID_ARGUMENT, "cpu_codegen_kernel: kernel %u of %u", k, s->n_kernels);
  if (s->kernels[k].is_extern)
    return PTC_ERR(INVALID_ARGUMENT, "cpu_codegen_kernel: kernel %u (%s) is an extern call", k,
                   s->kernels[k].name);
  if (s->kernels[k].n_ranges > PTC_MAX_RANK || s->kernels[k].n_rranges > PTC_MAX_RANK)
    return PTC_ERR(INVALID_ARGUMENT, "cpu_codegen_kernel: kernel %u has too many loops", k);
  return PTC_OK;
}

static ptc_status gen_init(cg* g, const ir_program* p, const sched_plan* s, uint32_t k) {
  memset(g, 0, sizeof *g);
  g->p = p;
  g->s = s;
  g->k = &s->kernels[k];
  g->kidx = k;
  ptc_sb_init(&g->body);
  ptc_sb_init(&g->checks);
  g->n_buffers = p->buffers.len;
  size_t nb = g->n_buffers ? g->n_buffers : 1;
  g->stored = calloc(nb, sizeof *g->stored);
  g->local_defined = calloc(nb, sizeof *g->local_defined);
  if (!g->stored || !g->local_defined) return ptc_status_oom();
  PTC_TRY(cg_vars_init(g));
  return cg_members_init(g);
}

static void gen_free(cg* g) {
  cg_members_free(g);
  free(g->stored);
  free(g->local_defined);
  free(g->vars);
  ptc_sb_free(&g->body);
  ptc_sb_free(&g->checks);
}

static ptc_status assemble(cg* g, cpu_kernel_src* out) {
  ptc_strbuf src;
  ptc_sb_init(&src);
  cg_prelude(&src);
  ptc_sb_printf(&src, "\n/* kernel %u: %s */\n", g->kidx, g->k->name);
  ptc_sb_printf(&src, "void %s(void* const* bufs, const int64_t* syms) {\n", out->symbol);
  emit_decls(g, out, &src);
  ptc_sb_append(&src, g->checks.data ? g->checks.data : "");
  ptc_sb_append(&src, g->body.data ? g->body.data : "");
  ptc_sb_append(&src, "}\n");
  if (src.oom || g->body.oom || g->checks.oom) {
    ptc_sb_free(&src);
    return ptc_status_oom();
  }
  out->source = ptc_sb_take(&src);
  return out->source ? PTC_OK : ptc_status_oom();
}

ptc_status cpu_codegen_kernel(const ir_program* p, const sched_plan* s, uint32_t k,
                              cpu_kernel_src* out) {
  PTC_TRY(check_args(p, s, k, out));
  memset(out, 0, sizeof *out);
  snprintf(out->symbol, sizeof out->symbol, "ptc_k%u", k);
  cg g;
  ptc_status st = gen_init(&g, p, s, k);
  if (!st) st = collect_buffers(&g, out);
  if (!st) {
    choose_schedule(&g);
    emit_checks(&g);
    st = emit_loops(&g);
  }
  if (!st) st = g.err;
  if (!st) st = assemble(&g, out);
  if (st != g.err) ptc_status_destroy(g.err);
  gen_free(&g);
  if (st) cpu_kernel_src_free(out);
  return st;
}

void cpu_kernel_src_free(cpu_kernel_src* src) {
  if (!src) return;
  free(src->source);
  free(src->bufs);
  src->source = NULL;
  src->bufs = NULL;
  src->n_bufs = 0;
}
