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
#include <unistd.h>

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
  if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL || (g->scratch && g->scratch[op->buf])) return;
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
  if (g->tiled && g->par != CG_PAR_NO && inner >= CPU_CG_COLSPLIT_MIN_ROWS &&
      outer <= CPU_CG_COLSPLIT_MAX_POINTS) {
    g->tiled = false;
    g->colsplit = true;
    g->mode = CG_MODE_SERIAL;
    return;
  }
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

static bool pointwise_simd_ok(cg* g);

/* ---- row scratch ------------------------------------------------------------------------------
 * A buffer that one reduction kernel writes and reads only inside its inner
 * loops, one row (outer point) at a time, and that is dead after the kernel
 * (softmax's exp, before the sum and the division) does not need to go to
 * memory: it becomes a stack array of one row, `<name>_s[flat r index]`,
 * that stays in L1. Requirements: static inner sizes (the row fits in
 * CPU_CG_SCRATCH_MAX_BYTES), every live access in an inner loop with one
 * and the same index text, affine in the r vars with the row-major strides
 * of the inner ranges (so the row's elements map one to one onto the
 * array), and a store among them. Not for split or tiled reductions. The
 * workspace slot stays allocated but is never touched. */
static void note_index_var(void* u, size_t var) {
  const cg* g = ((const void* const*)u)[0];
  bool* bad = ((void* const*)u)[1];
  if (var >= g->n_vars || (g->vars[var].role != CG_VAR_SIZE && g->vars[var].role != CG_VAR_X &&
                           g->vars[var].role != CG_VAR_R))
    *bad = true;
}

/* Whether index `e` of member m is base(x) + sum_d stride[d] * r_d. */
static bool row_affine(cg* g, uint32_t m, const sym_expr* e, const int64_t* stride) {
  const cg_member* mb = &g->members[m];
  bool bad = false;
  const void* u[2] = {g, &bad};
  cg_index_vars(e, note_index_var, (void*)u);
  for (uint32_t d = 0; d < g->k->n_rranges && !bad; d++) {
    const sym_expr* v = mb->kind == CG_MEM_INNER ? g->p->xvars[g->k->n_ranges + d] : g->p->rvars[d];
    int64_t c;
    bad = !v || !cg_coef(e, v, &c) || c != stride[d];
  }
  return !bad;
}

/* Whether buffer b qualifies (see above). Printing indexes marks size
 * symbols used: the marks are restored (a scratch buffer's index is never
 * printed in the kernel). */
static bool scratch_ok(cg* g, int32_t b, const int64_t* stride) {
  bool stored = false, ok = true;
  bool* used = malloc((g->n_vars ? g->n_vars : 1) * sizeof *used);
  if (!used) return false;
  for (size_t v = 0; v < g->n_vars; v++) used[v] = g->vars[v].used;
  ptc_strbuf first, cur;
  ptc_sb_init(&first);
  ptc_sb_init(&cur);
  for (uint32_t m = 0; m < g->k->n_nodes && ok; m++) {
    cg_member_begin(g, m);
    const ir_body* body = &g->members[m].node->body;
    for (uint32_t i = 0; i < body->n && ok; i++) {
      const ir_op* op = &body->ops[i];
      if (!g->members[m].live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE) ||
          op->buf != b)
        continue;
      stored |= op->opcode == IR_STORE;
      ok = cg_member_op_in_loop(g, m, i) && row_affine(g, m, op->index, stride);
      ptc_strbuf* dst = first.len ? &cur : &first;
      dst->len = 0;
      cg_index(g, dst, op->index);
      ok = ok && !dst->oom && (dst == &first || strcmp(first.data, cur.data) == 0);
    }
  }
  ptc_sb_free(&first);
  ptc_sb_free(&cur);
  for (size_t v = 0; v < g->n_vars; v++) g->vars[v].used = used[v];
  free(used);
  return ok && stored;
}

static ptc_status choose_scratch(cg* g) {
  const sched_kernel* k = g->k;
  if (g->mode == CG_MODE_SPLIT || g->tiled || g->colsplit || k->n_rranges == 0 ||
      !has_reduction(g))
    return PTC_OK;
  int64_t stride[PTC_MAX_RANK], row = 1;
  for (uint32_t d = k->n_rranges; d-- > 0;) {
    int64_t v;
    if (!sym_is_const(k->rranges[d], &v) || v <= 0) return PTC_OK;
    stride[d] = row;
    row = sat_mul(row, v);
  }
  int64_t total = 0;
  for (size_t b = 0; b < g->n_buffers; b++) {
    if (g->s->buf_home[b] != SCHED_HOME_SLOT || g->s->buf_free_after[b] != (int32_t)g->kidx)
      continue;
    int64_t bytes = sat_mul(row, (int64_t)ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype));
    if (bytes > CPU_CG_SCRATCH_MAX_BYTES || total + bytes > 2 * CPU_CG_SCRATCH_MAX_BYTES ||
        !scratch_ok(g, (int32_t)b, stride))
      continue;
    if (!g->scratch && !(g->scratch = calloc(g->n_buffers, sizeof *g->scratch)))
      return ptc_status_oom();
    g->scratch[b] = true;
    total += bytes;
  }
  for (uint32_t d = 0; d < k->n_rranges; d++)
    ptc_sb_printf(&g->row_index, "%s%s%u*%lld", d ? " + " : "(", "r", d, (long long)stride[d]);
  ptc_sb_append(&g->row_index, ")");
  g->row = row;
  return g->row_index.oom ? ptc_status_oom() : PTC_OK;
}

/* Declarations of the row scratch arrays (inside the outer loops). */
static void emit_scratch_decls(cg* g) {
  if (!g->scratch) return;
  int64_t row = g->row;
  for (size_t b = 0; b < g->n_buffers; b++) {
    if (!g->scratch[b]) continue;
    char name[40];
    cg_buf_name(g, (int32_t)b, name, sizeof name);
    cg_line(g, &g->body, "_Alignas(64) %s %s_s[%lld]; /* row scratch */",
            cg_storage_type(ir_buf(g->p, (int32_t)b)->dtype), name, (long long)row);
  }
}

/* ---- streaming stores ----------------------------------------------------------------------------
 * A kernel whose outputs are too big to stay in the last-level cache writes
 * them with non-temporal stores: no read-for-ownership of the destination
 * (a plain store reads every line before writing it: 3 bytes of traffic
 * per byte written instead of 2) and no eviction of the inputs. Stores go
 * to a stack array first (`<name>_t`, L1) and a finished piece is copied
 * out by ptc_stream_store: in pointwise kernels a block of
 * CPU_CG_STREAM_BLOCK elements of the innermost loop (the store must be
 * contiguous in it), in reduction kernels a row written by an inner member
 * (the same affine layout as row scratch), after that member's inner loop.
 * A streamed buffer must not be read by the kernel itself (the values are
 * in the array until the copy). Every thread ends with ptc_sfence, so the
 * parallel loop becomes `omp parallel` + `omp for`. */
static int64_t stream_threshold(void) {
  const char* v = getenv("PTC_CPU_STREAM_BYTES");
  if (v && *v) return strtoll(v, NULL, 10);
  long llc = sysconf(_SC_LEVEL3_CACHE_SIZE);
  return llc > 0 ? (int64_t)llc : (int64_t)32 << 20;
}

static bool member_loads(const cg* g, int32_t b) {
  for (uint32_t m = 0; m < g->k->n_nodes; m++)
    if (cg_member_reads(g, m, b)) return true;
  return false;
}

/* Whether store op of member m can stream (see above); `stride` = the
 * row-major strides of the inner ranges (reduction kernels). */
static bool store_streamable(cg* g, uint32_t m, const ir_op* op, const int64_t* stride,
                             bool blocks) {
  int32_t b = op->buf;
  if (g->s->buf_home[b] == SCHED_HOME_LOCAL || (g->scratch && g->scratch[b]) || member_loads(g, b))
    return false;
  if (!blocks) return g->members[m].kind == CG_MEM_INNER && row_affine(g, m, op->index, stride);
  bool bad = false;
  const void* u[2] = {g, &bad};
  cg_index_vars(op->index, note_index_var, (void*)u);
  int64_t c;
  return !bad && cg_coef(op->index, g->p->xvars[g->k->n_ranges - 1], &c) && c == 1;
}

static ptc_status choose_stream(cg* g) {
  const sched_kernel* k = g->k;
  bool red = has_reduction(g) && k->n_rranges > 0;
  int64_t stride[PTC_MAX_RANK], row = 1;
  if (k->n_ranges == 0) return PTC_OK;
  if (red) {
    if (g->mode == CG_MODE_SPLIT || g->tiled || g->colsplit || g->row <= 0) return PTC_OK;
    for (uint32_t d = k->n_rranges; d-- > 0;) {
      int64_t v;
      if (!sym_is_const(k->rranges[d], &v) || v <= 0) return PTC_OK;
      stride[d] = row;
      row = sat_mul(row, v);
    }
  } else if (!pointwise_simd_ok(g)) {
    return PTC_OK;
  }
  bool* cand = calloc(g->n_buffers ? g->n_buffers : 1, sizeof *cand);
  if (!cand) return ptc_status_oom();
  int64_t bytes = 0, row_bytes = 0;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    cg_member_begin(g, m);
    const ir_body* body = &g->members[m].node->body;
    for (uint32_t i = 0; i < body->n; i++) {
      const ir_op* op = &body->ops[i];
      if (!g->members[m].live[i] || op->opcode != IR_STORE ||
          !store_streamable(g, m, op, stride, !red))
        continue;
      const ir_buffer* b = ir_buf(g->p, op->buf);
      int64_t es = (int64_t)ptc_dtype_size(b->dtype), n = 1;
      for (uint32_t d = 0; d < b->rank; d++) n = sat_mul(n, cg_hint(g, b->shape[d]));
      cand[op->buf] = true;
      bytes = sat_mul(n, es) > INT64_MAX - bytes ? INT64_MAX : bytes + sat_mul(n, es);
      row_bytes += sat_mul(row, es);
    }
  }
  if (bytes > 0 && bytes >= stream_threshold() && (!red || row_bytes <= 2 * CPU_CG_SCRATCH_MAX_BYTES)) {
    g->streamed = cand;
    g->stream_blocks = !red;
    return PTC_OK;
  }
  free(cand);
  return PTC_OK;
}

/* Declarations of the stream arrays: `n` elements each. */
static void emit_stream_decls(cg* g, int64_t n) {
  for (size_t b = 0; g->streamed && b < g->n_buffers; b++) {
    if (!g->streamed[b]) continue;
    char name[40];
    cg_buf_name(g, (int32_t)b, name, sizeof name);
    cg_line(g, &g->body, "_Alignas(64) %s %s_t[%lld]; /* streamed out */",
            cg_storage_type(ir_buf(g->p, (int32_t)b)->dtype), name, (long long)n);
  }
}

/* Copies the stream array of every buffer that member m stores out:
 * `count` elements to the address of the store's index with the loop
 * vars named in `at` (declared with value `at_value`) at their start. */
static void emit_stream_out(cg* g, uint32_t m, const char* at, const char* count) {
  const ir_body* body = &g->members[m].node->body;
  cg_member_begin(g, m);
  for (uint32_t i = 0; i < body->n; i++) {
    const ir_op* op = &body->ops[i];
    if (!g->members[m].live[i] || op->opcode != IR_STORE || !g->streamed[op->buf]) continue;
    char name[40];
    cg_buf_name(g, op->buf, name, sizeof name);
    const char* st = cg_storage_type(ir_buf(g->p, op->buf)->dtype);
    ptc_strbuf idx;
    ptc_sb_init(&idx);
    cg_index(g, &idx, op->index);
    cg_line(g, &g->body, "{");
    g->indent++;
    cg_line(g, &g->body, "%s", at);
    cg_line(g, &g->body, "ptc_stream_store(&%s[%s], %s_t, sizeof(%s) * (size_t)(%s));", name,
            idx.data ? idx.data : "0", name, st, count);
    g->indent--;
    cg_line(g, &g->body, "}");
    ptc_sb_free(&idx);
  }
}

/* ---- row prefetch --------------------------------------------------------------------------------
 * A reduction kernel that makes several passes over each row (softmax: max,
 * exp and sum, scale; layer norm; var_mean) streams memory only in its
 * first pass; the later ones compute on the row in L1. When the inputs are
 * larger than the last-level cache, the start of the second pass asks for
 * the next row of every contiguous input (one prefetch per 64-byte line),
 * so that its first pass finds it in cache and the memory keeps streaming
 * while the core computes (measured on the 16-core Xeon: softmax over
 * 65536x4096 31.6 -> 25.8 ms). "Next" is the next value of the innermost
 * outer var, which is what a thread's next iteration is (static schedule);
 * past a dim's end the prefetch is of some other row, which is harmless
 * (prefetches never fault; the address is computed as an integer).
 *
 * Spread (the default where the kernel has one static inner range of at
 * least two row blocks): instead of one burst of a row's prefetches, the
 * second pass runs in blocks of CPU_CG_ROW_BLOCK elements and each block
 * starts with the prefetches of its own share of the next row. A burst
 * fills the core's line-fill buffers at once and stalls it until most of
 * the row has arrived; spread, the requests stay in flight while the pass
 * computes. PTC_CPU_ROW_PREFETCH=burst|spread|spread-l2|off overrides
 * (spread-l2: prefetcht1, into L2 only). Measured on the 16-core Xeon
 * (softmax 65536x4096, cpu_bench, one build, copy ceiling 65-74 GB/s in
 * those runs): burst 36.2-36.5 ms, spread 29.6-29.9 ms, spread-l2 28.1 ms
 * (one run; a hand-written copy of the kernel agreed: 30.5-31.7 vs
 * 26.0-29.9 ms), off 39.2 ms; layer_norm, rms_norm and var_mean got faster
 * too (30.5 -> 26.9, 27.0 -> 24.3, 16.9 -> 12.0 ms). */
typedef enum row_pf_mode { ROW_PF_SPREAD = 0, ROW_PF_BURST, ROW_PF_SPREAD_L2, ROW_PF_OFF } row_pf_mode;

static row_pf_mode row_prefetch_mode(void) {
  const char* v = getenv("PTC_CPU_ROW_PREFETCH");
  if (!v || !*v) return ROW_PF_SPREAD;
  if (!strcmp(v, "burst")) return ROW_PF_BURST;
  if (!strcmp(v, "spread-l2")) return ROW_PF_SPREAD_L2;
  if (!strcmp(v, "off")) return ROW_PF_OFF;
  return ROW_PF_SPREAD;
}

static ptc_status choose_prefetch(cg* g) {
  const sched_kernel* k = g->k;
  if (!has_reduction(g) || g->mode == CG_MODE_SPLIT || g->tiled || g->colsplit || g->row <= 0 ||
      k->n_ranges == 0 || k->n_rranges == 0)
    return PTC_OK;
  int64_t stride[PTC_MAX_RANK], row = 1, v;
  for (uint32_t d = k->n_rranges; d-- > 0;) {
    if (!sym_is_const(k->rranges[d], &v) || v <= 0) return PTC_OK;
    stride[d] = row;
    row = sat_mul(row, v);
  }
  const sym_expr* xl = g->p->xvars[k->n_ranges - 1];
  ptc_strbuf seen;
  ptc_sb_init(&seen);
  int64_t bytes = 0;
  ptc_strbuf idx;
  ptc_sb_init(&idx);
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind == CG_MEM_OUTER) continue;
    cg_member_begin(g, m);
    const ir_body* body = &g->members[m].node->body;
    for (uint32_t i = 0; i < body->n; i++) {
      const ir_op* op = &body->ops[i];
      int64_t c;
      if (!g->members[m].live[i] || op->opcode != IR_LOAD || !cg_member_op_in_loop(g, m, i) ||
          g->s->buf_home[op->buf] == SCHED_HOME_LOCAL || (g->scratch && g->scratch[op->buf]) ||
          (g->streamed && g->streamed[op->buf]) || !row_affine(g, m, op->index, stride) ||
          !cg_coef(op->index, xl, &c) || c < row)
        continue;
      char name[40], key[64];
      cg_buf_name(g, op->buf, name, sizeof name);
      snprintf(key, sizeof key, "|%s|", name);
      if (seen.data && strstr(seen.data, key)) continue; /* one row per buffer */
      ptc_sb_append(&seen, key);
      idx.len = 0;
      cg_index(g, &idx, op->index);
      int64_t es = (int64_t)ptc_dtype_size(ir_buf(g->p, op->buf)->dtype), n = 1;
      const ir_buffer* b = ir_buf(g->p, op->buf);
      for (uint32_t d = 0; d < b->rank; d++) n = sat_mul(n, cg_hint(g, b->shape[d]));
      bytes = sat_mul(n, es) > INT64_MAX - bytes ? INT64_MAX : bytes + sat_mul(n, es);
      ptc_sb_printf(&g->prefetch, "{ /* the next row of %s */\n", name);
      ptc_sb_append(&g->prefetch, "  const int64_t");
      for (uint32_t d = 0; d < k->n_rranges; d++)
        ptc_sb_printf(&g->prefetch, "%s r%u = 0", d ? "," : "", d);
      ptc_sb_append(&g->prefetch, ";");
      for (uint32_t d = 0; d < k->n_rranges; d++) ptc_sb_printf(&g->prefetch, " (void)r%u;", d);
      ptc_sb_printf(&g->prefetch, "\n  const uintptr_t pf = (uintptr_t)&%s[%s] + (uintptr_t)%lld;\n",
                    name, idx.data ? idx.data : "0", (long long)sat_mul(c, es));
      ptc_sb_printf(&g->prefetch,
                    "  for (int64_t q = 0; q < %lld; q += 64)\n"
                    "    __builtin_prefetch((const void*)(pf + (uintptr_t)q), 0, 3);\n}\n",
                    (long long)sat_mul(row, es));
      if (g->n_prefetch < CPU_CG_MAX_PREFETCH) { /* the spread form's base address */
        uint32_t j = g->n_prefetch++;
        g->prefetch_es[j] = es;
        ptc_sb_printf(&g->prefetch_bases, "uintptr_t ptc_pf%u; /* the next row of %s */\n", j, name);
        ptc_sb_append(&g->prefetch_bases, "{\n  const int64_t");
        for (uint32_t d = 0; d < k->n_rranges; d++)
          ptc_sb_printf(&g->prefetch_bases, "%s r%u = 0", d ? "," : "", d);
        ptc_sb_append(&g->prefetch_bases, ";");
        for (uint32_t d = 0; d < k->n_rranges; d++)
          ptc_sb_printf(&g->prefetch_bases, " (void)r%u;", d);
        ptc_sb_printf(&g->prefetch_bases,
                      "\n  ptc_pf%u = (uintptr_t)&%s[%s] + (uintptr_t)%lld;\n}\n", j, name,
                      idx.data ? idx.data : "0", (long long)sat_mul(c, es));
      } else {
        g->n_prefetch = CPU_CG_MAX_PREFETCH + 1; /* too many: no spread form */
      }
    }
  }
  ptc_sb_free(&seen);
  ptc_sb_free(&idx);
  row_pf_mode mode = row_prefetch_mode();
  if (bytes < stream_threshold() || mode == ROW_PF_OFF) {
    ptc_sb_free(&g->prefetch);
    ptc_sb_free(&g->prefetch_bases);
    g->n_prefetch = 0;
  }
  if (g->prefetch.oom || g->prefetch_bases.oom) return ptc_status_oom();
  /* the spread form: one static inner range of at least two blocks */
  if (g->prefetch.len && mode != ROW_PF_BURST && g->n_prefetch <= CPU_CG_MAX_PREFETCH &&
      k->n_rranges == 1 && row >= 2 * CPU_CG_ROW_BLOCK) {
    g->prefetch_spread = true;
    g->prefetch_hint = mode == ROW_PF_SPREAD_L2 ? 2 : 3;
    g->rblock = CPU_CG_ROW_BLOCK;
  }
  return PTC_OK;
}

/* Streamed rows of a reduction kernel with one static inner range of at
 * least two blocks leave block by block, after each block of the storing
 * pass (stream arrays of one block: no row-sized staging array in L1 next
 * to the row scratch). PTC_CPU_ROW_STREAM=row: the whole row is staged and
 * copied out after its pass. (Measured on the 16-core Xeon, softmax
 * 65536x4096 with the spread prefetch: block 29.6-29.9 ms, row 30.5 ms; a
 * third form that kept each row staged and copied it out during the next
 * row's second pass took 32.1 ms and was dropped.) */
static void choose_stream_rblocks(cg* g) {
  const char* v = getenv("PTC_CPU_ROW_STREAM");
  if (v && !strcmp(v, "row")) return;
  if (!g->streamed || g->stream_blocks || g->k->n_rranges != 1 || g->row < 2 * CPU_CG_ROW_BLOCK)
    return;
  g->rblock = CPU_CG_ROW_BLOCK;
  g->stream_rblocks = true;
}

/* The prefetch statements, indented. */
static void emit_prefetch(cg* g) {
  if (!g->prefetch.data || !g->prefetch.len) return;
  const char* q = g->prefetch.data;
  while (*q) {
    const char* e = strchr(q, '\n');
    size_t n = e ? (size_t)(e - q) : strlen(q);
    cg_line(g, &g->body, "%.*s", (int)n, q);
    q += n + (e ? 1 : 0);
  }
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

/* Whether member m stores a streamed buffer (in its inner loop). */
static bool member_streams(const cg* g, uint32_t m) {
  if (!g->streamed || g->members[m].kind != CG_MEM_INNER) return false;
  const ir_body* body = &g->members[m].node->body;
  for (uint32_t i = 0; i < body->n; i++)
    if (g->members[m].live[i] && body->ops[i].opcode == IR_STORE && g->streamed[body->ops[i].buf])
      return true;
  return false;
}

/* Whether a member of the group stores a streamed buffer. */
static bool group_streams(cg* g, const group* gr) {
  for (uint32_t j = 0; j < gr->n; j++)
    if (member_streams(g, gr->m[j])) return true;
  return false;
}

/* The group's inner loop (one static range of g->row elements) in blocks
 * of g->rblock: before each block, with `prefetch`, the prefetches of its
 * share of the next row; after it, with stream_rblocks, the copy-out of
 * its streamed elements. */
static void emit_inner_loop_blocked(cg* g, const group* gr, bool prefetch) {
  ptc_strbuf clauses;
  ptc_sb_init(&clauses);
  bool simd = group_simd(g, gr, &clauses);
  long long n = (long long)g->row, b = (long long)g->rblock;
  bool exact = n % b == 0;
  char hi[96], count[96];
  snprintf(hi, sizeof hi, exact ? "rb + %lld" : "ptc_imin(rb + %lld, %lld)", b, n);
  snprintf(count, sizeof count, exact ? "%lld" : "ptc_imin(rb + %lld, %lld) - rb", b, n);
  if (prefetch) {
    const char* q = g->prefetch_bases.data ? g->prefetch_bases.data : "";
    while (*q) {
      const char* e = strchr(q, '\n');
      size_t len = e ? (size_t)(e - q) : strlen(q);
      cg_line(g, &g->body, "%.*s", (int)len, q);
      q += len + (e ? 1 : 0);
    }
  }
  cg_line(g, &g->body, "for (int64_t rb = 0; rb < %lld; rb += %lld) {", n, b);
  g->indent++;
  for (uint32_t j = 0; prefetch && j < g->n_prefetch; j++)
    cg_line(g, &g->body,
            "for (int64_t q = 0; q < %lld; q += 64) __builtin_prefetch((const void*)(ptc_pf%u + "
            "(uintptr_t)(rb * %lld) + (uintptr_t)q), 0, %d);",
            (long long)(b * g->prefetch_es[j]), j, (long long)g->prefetch_es[j], g->prefetch_hint);
  open_rloops(g, 0, "rb", hi, simd, clauses.data ? clauses.data : "");
  emit_loop_body(g, gr);
  close_rloops(g, 0);
  for (uint32_t j = 0; j < gr->n && g->stream_rblocks; j++)
    if (g->members[gr->m[j]].kind == CG_MEM_INNER)
      emit_stream_out(g, gr->m[j], "const int64_t r0 = rb; (void)r0;", count);
  g->indent--;
  cg_line(g, &g->body, "}");
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
  bool second = g->groups_done++ == 1; /* the pass that prefetches the next row */
  bool blocked = !split && g->rblock > 0 &&
                 ((second && g->prefetch_spread) || (g->stream_rblocks && group_streams(g, gr)));
  if (second && !g->prefetch_spread) emit_prefetch(g);
  for (uint32_t j = 0; j < gr->n; j++) member_comment(g, gr->m[j]);
  for (uint32_t j = 0; j < gr->n; j++) {
    cg_member_begin(g, gr->m[j]);
    cg_emit_stage(g, &g->body, CG_PRE);
    cg_emit_acc_decls(g, &g->body, split);
  }
  if (split)
    emit_split_loop(g, gr);
  else if (blocked)
    emit_inner_loop_blocked(g, gr, second && g->prefetch_spread);
  else
    emit_inner_loop(g, gr);
  for (uint32_t j = 0; j < gr->n && g->streamed && !g->stream_blocks && !g->stream_rblocks; j++) {
    ptc_strbuf at, n;
    ptc_sb_init(&at);
    ptc_sb_init(&n);
    ptc_sb_append(&at, "const int64_t");
    for (uint32_t d = 0; d < g->k->n_rranges; d++) ptc_sb_printf(&at, "%s r%u = 0", d ? "," : "", d);
    ptc_sb_append(&at, ";");
    for (uint32_t d = 0; d < g->k->n_rranges; d++) ptc_sb_printf(&at, " (void)r%u;", d);
    ptc_sb_printf(&n, "%lld", (long long)g->row);
    if (g->members[gr->m[j]].kind == CG_MEM_INNER)
      emit_stream_out(g, gr->m[j], at.data ? at.data : "", n.data ? n.data : "0");
    ptc_sb_free(&at);
    ptc_sb_free(&n);
  }
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
  g->groups_done = 0;
  emit_scratch_decls(g);
  if (g->streamed && !g->stream_blocks && g->stream_rblocks) {
    emit_stream_decls(g, g->rblock);
    g->stream_index = "(r0 - rb)";
  } else if (g->streamed && !g->stream_blocks) {
    emit_stream_decls(g, g->row);
    g->stream_index = g->row_index.data;
  }
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

/* ---- split column reductions -------------------------------------------------------------------
 * A tiled-eligible reduction (strided reduction loads, contiguous last
 * outer dim) with many reduction points: the first reduction dim is split
 * over the threads; each thread streams its rows contiguously and folds
 * them into its own partial row of every outer point (a malloc'ed slice,
 * indexed by the flat outer index), then a parallel loop over the outer
 * points combines the slices in thread order (deterministic for a thread
 * count) and runs the epilogue. */

/* "((x0*X1) + x1)...": the flat outer index as C text. */
static void flat_outer(cg* g, ptc_strbuf* sb) {
  ptc_strbuf t;
  ptc_sb_init(&t);
  ptc_sb_append(sb, "x0");
  for (uint32_t d = 1; d < g->k->n_ranges; d++) {
    t.len = 0;
    cg_index(g, &t, g->k->ranges[d]);
    char* prev = ptc_sb_take(sb);
    ptc_sb_printf(sb, "((%s)*%s + x%u)", prev ? prev : "0", t.data ? t.data : "0", d);
    free(prev);
  }
  ptc_sb_free(&t);
}

static void open_xloops(cg* g, bool simd_last) {
  for (uint32_t d = 0; d < g->k->n_ranges; d++) {
    ptc_strbuf b;
    ptc_sb_init(&b);
    cg_index(g, &b, g->k->ranges[d]);
    if (simd_last && d + 1 == g->k->n_ranges) cg_line(g, &g->body, "#pragma omp simd");
    cg_line(g, &g->body, "for (int64_t x%u = 0; x%u < %s; x%u++) {", d, d, b.data ? b.data : "0", d);
    ptc_sb_free(&b);
    g->indent++;
  }
}

static void close_loops(cg* g, uint32_t n) {
  for (uint32_t d = 0; d < n; d++) {
    g->indent--;
    cg_line(g, &g->body, "}");
  }
}

/* Per thread: its rows of the first reduction dim into its slices. */
static void emit_colsplit_partials(cg* g, const char* lane) {
  const sched_kernel* k = g->k;
  ptc_strbuf pr, r0;
  ptc_sb_init(&pr);
  ptc_sb_init(&r0);
  if_clause(g, &pr, "");
  cg_index(g, &r0, k->rranges[0]);
  const char* R0 = r0.data ? r0.data : "0";
  cg_line(g, &g->body, "#pragma omp parallel num_threads(ptc_nthr)%s", pr.data ? pr.data : "");
  cg_line(g, &g->body, "{");
  g->indent++;
  cg_line(g, &g->body, "const int tid = omp_get_thread_num(), nth = omp_get_num_threads();");
  cg_line(g, &g->body, "if (tid == 0) ptc_nth = nth;");
  cg_line(g, &g->body, "const int64_t lo = %s * tid / nth, hi = %s * (tid + 1) / nth;", R0, R0);
  bool simd = true;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CG_MEM_REDUCTION) continue;
    member_comment(g, m);
    cg_member_begin(g, m);
    cg_emit_acc_slices(g, &g->body, "(size_t)tid * (size_t)ptc_np", "ptc_np");
    simd = simd && cg_stage_simd_ok(g, CG_PRE) && cg_stage_simd_ok(g, CG_LOOP);
  }
  open_rloops(g, 0, "lo", "hi", false, "");
  open_xloops(g, simd);
  g->tile = 1;
  snprintf(g->lane, sizeof g->lane, "[%s]", lane);
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CG_MEM_REDUCTION) continue;
    cg_member_begin(g, m);
    cg_emit_pre_for(g, &g->body, CG_LOOP);
    cg_emit_stage(g, &g->body, CG_LOOP);
    cg_emit_acc_updates(g, &g->body);
  }
  g->tile = 0;
  close_loops(g, k->n_ranges);
  close_rloops(g, 0);
  g->indent--;
  cg_line(g, &g->body, "}");
  ptc_sb_free(&pr);
  ptc_sb_free(&r0);
}

/* Per outer point: combine the slices, finish, run the epilogue. */
static void emit_colsplit_combine(cg* g, const char* lane) {
  const sched_kernel* k = g->k;
  ptc_strbuf clause;
  ptc_sb_init(&clause);
  if (k->n_ranges > 1) ptc_sb_printf(&clause, " collapse(%u)", k->n_ranges);
  cg_line(g, &g->body, "#pragma omp parallel for%s if(ptc_np * ptc_nth >= PTC_PAR_MIN_WORK)",
          clause.data ? clause.data : "");
  ptc_sb_free(&clause);
  open_xloops(g, false);
  cg_line(g, &g->body, "const int64_t xf = %s;", lane);
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    cg_member_begin(g, m);
    if (g->members[m].kind == CG_MEM_OUTER) {
      member_comment(g, m);
      cg_emit_stage(g, &g->body, CG_PRE);
      continue;
    }
    cg_emit_acc_combined_decls(g, &g->body);
    cg_line(g, &g->body, "for (int t = 0; t < ptc_nth; t++) {");
    g->indent++;
    cg_emit_acc_combine(g, &g->body, "(size_t)t * (size_t)ptc_np + (size_t)xf");
    g->indent--;
    cg_line(g, &g->body, "}");
    cg_emit_pre_for(g, &g->body, CG_POST);
    cg_emit_acc_finalize(g, &g->body, true);
    cg_emit_stage(g, &g->body, CG_POST);
  }
  close_loops(g, k->n_ranges);
}

static void emit_colsplit(cg* g) {
  const sched_kernel* k = g->k;
  g->indent = 1;
  ptc_strbuf np, lane, test, bytes;
  ptc_sb_init(&np);
  ptc_sb_init(&lane);
  ptc_sb_init(&test);
  ptc_sb_init(&bytes);
  cg_numel(g, &np, true, false);
  flat_outer(g, &lane);
  cg_line(g, &g->body, "{");
  g->indent++;
  cg_line(g, &g->body, "const int64_t ptc_np = %s;", np.data ? np.data : "0");
  cg_line(g, &g->body, "const int ptc_nthr = ptc_nthreads();");
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CG_MEM_REDUCTION) continue;
    cg_member_begin(g, m);
    cg_emit_acc_heap_decls(g, &g->body, "(size_t)ptc_nthr * (size_t)(ptc_np ? ptc_np : 1)");
    cg_acc_heap_null_test(g, &test, &bytes);
  }
  cg_line(g, &g->body, "if (0%s) {", test.data ? test.data : "");
  g->indent++;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CG_MEM_REDUCTION) continue;
    cg_member_begin(g, m);
    cg_emit_acc_heap_free(g, &g->body);
  }
  cg_line(g, &g->body, "ptc_fail(kctx, PTC_KERR_NOMEM, %d, (int64_t)((size_t)ptc_nthr * (size_t)ptc_np * (0%s)), 0);",
          g->members[0].node_index, bytes.data ? bytes.data : "");
  cg_line(g, &g->body, "return;");
  g->indent--;
  cg_line(g, &g->body, "}");
  g->uses_ctx = true;
  cg_line(g, &g->body, "int ptc_nth = 1;");
  emit_colsplit_partials(g, lane.data ? lane.data : "0");
  emit_colsplit_combine(g, lane.data ? lane.data : "0");
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CG_MEM_REDUCTION) continue;
    cg_member_begin(g, m);
    cg_emit_acc_heap_free(g, &g->body);
  }
  g->indent--;
  cg_line(g, &g->body, "}");
  ptc_sb_free(&np);
  ptc_sb_free(&lane);
  ptc_sb_free(&test);
  ptc_sb_free(&bytes);
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
  if (par && g->streamed) {
    ptc_strbuf pif;
    ptc_sb_init(&pif);
    if_clause(g, &pif, "");
    cg_line(g, &g->body, "#pragma omp parallel%s", pif.data ? pif.data : "");
    cg_line(g, &g->body, "{");
    g->indent++;
    if (g->collapse > 1) ptc_sb_printf(&clause, " collapse(%u)", g->collapse);
    cg_line(g, &g->body, "#pragma omp for%s", clause.data ? clause.data : "");
    ptc_sb_free(&pif);
  } else if (par) {
    if (g->collapse > 1) ptc_sb_printf(&clause, " collapse(%u)", g->collapse);
    if_clause(g, &clause, vec ? "parallel: " : "");
    cg_line(g, &g->body, "#pragma omp parallel for%s%s", vec ? " simd" : "",
            clause.data ? clause.data : "");
  } else if (vec && !par_covers_innermost) {
    cg_line(g, &g->body, "#pragma omp simd");
  }
  ptc_sb_free(&clause);
}

/* ---- fast trig -------------------------------------------------------------------------------
 * A pointwise kernel with f32 sin/cos computes them with the prelude's
 * vectorised polynomials (valid for |x| <= PTC_TRIG_MAX). The innermost
 * loop runs in blocks of CPU_CG_TRIG_BLOCK elements; the vectorised pass
 * ORs a range flag over every sin/cos argument, and a block whose flag is
 * set (large, infinite or NaN arguments) is computed again by a scalar loop
 * calling libm, overwriting the first pass's stores. Recomputing a block is
 * only correct when no store can clobber a value the block reads: every
 * buffer of the kernel must be distinct memory (no in-place slot), which
 * the eligibility test requires. */
static bool fast_trig_eligible(cg* g, const cpu_kernel_src* out) {
  if (g->k->n_ranges == 0 || has_reduction(g) || !cg_kernel_has_fast_trig(g) ||
      !pointwise_simd_ok(g))
    return false;
  for (uint32_t j = 0; j < out->n_bufs; j++)
    if (shares_slot(g, out, out->bufs[j])) return false;
  return true;
}

/* The innermost loop (dim d, bound text b) of a kernel with fast trig
 * and/or streamed pointwise stores, in blocks. */
static ptc_status emit_blocks(cg* g, uint32_t d, const char* b) {
  int block = g->streamed ? CPU_CG_STREAM_BLOCK : CPU_CG_TRIG_BLOCK;
  char sidx[32];
  snprintf(sidx, sizeof sidx, "x%u - xb", d);
  cg_line(g, &g->body, "for (int64_t xb = 0; xb < %s; xb += %d) {", b, block);
  g->indent++;
  cg_line(g, &g->body, "const int64_t xbe = ptc_imin(xb + %d, %s);", block, b);
  if (g->streamed) {
    emit_stream_decls(g, block);
    g->stream_index = sidx;
  }
  if (g->fast_trig) {
    cg_line(g, &g->body, "uint8_t ptc_big = 0;");
    cg_line(g, &g->body, "#pragma omp simd reduction(|:ptc_big)");
  } else {
    cg_line(g, &g->body, "#pragma omp simd");
  }
  for (int pass = 0; pass < (g->fast_trig ? 2 : 1); pass++) {
    g->trig_exact = pass == 1;
    cg_line(g, &g->body, "for (int64_t x%u = xb; x%u < xbe; x%u++) {", d, d, d);
    g->indent++;
    PTC_TRY(emit_outer_body(g));
    g->indent--;
    cg_line(g, &g->body, "}");
    if (pass == 0 && g->fast_trig) {
      cg_line(g, &g->body, "if (ptc_big) {");
      g->indent++;
    }
  }
  if (g->fast_trig) {
    g->indent--;
    cg_line(g, &g->body, "}");
  }
  g->trig_exact = false;
  if (g->streamed) {
    char at[64];
    snprintf(at, sizeof at, "const int64_t x%u = xb; (void)x%u;", d, d);
    for (uint32_t m = 0; m < g->k->n_nodes; m++) emit_stream_out(g, m, at, "xbe - xb");
  }
  g->stream_index = NULL;
  g->indent--;
  cg_line(g, &g->body, "}");
  return PTC_OK;
}

static ptc_status emit_loops(cg* g) {
  const sched_kernel* k = g->k;
  if (g->colsplit) {
    emit_colsplit(g);
    return PTC_OK;
  }
  bool pointwise = !has_reduction(g) || k->n_rranges == 0;
  bool blocks = g->fast_trig || (g->streamed && g->stream_blocks);
  bool simd = pointwise && pointwise_simd_ok(g) && !blocks;
  bool region = g->streamed && g->mode == CG_MODE_OUTER; /* parallel + for, then sfence */
  g->indent = 1;
  for (uint32_t d = 0; d < k->n_ranges; d++) {
    outer_pragma(g, d, pointwise, simd);
    if (blocks && d + 1 == k->n_ranges) {
      ptc_strbuf bound;
      ptc_sb_init(&bound);
      cg_index(g, &bound, k->ranges[d]);
      ptc_status st = emit_blocks(g, d, bound.data ? bound.data : "0");
      ptc_sb_free(&bound);
      PTC_TRY(st);
      break;
    }
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
  else if (!blocks)
    PTC_TRY(emit_outer_body(g));
  for (uint32_t d = 0; d + (blocks ? 1 : 0) < k->n_ranges; d++) {
    g->indent--;
    cg_line(g, &g->body, "}");
  }
  if (g->streamed) cg_line(g, &g->body, "ptc_sfence();");
  if (region) {
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
  ptc_sb_init(&g->row_index);
  ptc_sb_init(&g->prefetch);
  ptc_sb_init(&g->prefetch_bases);
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
  free(g->scratch);
  free(g->streamed);
  ptc_sb_free(&g->prefetch);
  ptc_sb_free(&g->prefetch_bases);
  ptc_sb_free(&g->row_index);
  ptc_sb_free(&g->body);
  ptc_sb_free(&g->checks);
}

static ptc_status assemble(cg* g, cpu_kernel_src* out) {
  ptc_strbuf src;
  ptc_sb_init(&src);
  cg_prelude(&src);
  if (g->streamed) cg_prelude_stream(&src);
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
  if (!st) {
    choose_schedule(&g);
    st = choose_scratch(&g);
    if (!st) st = choose_stream(&g);
    if (!st) st = choose_prefetch(&g);
    if (!st) choose_stream_rblocks(&g);
  }
  if (!st) st = collect_buffers(&g, out);
  if (!st) {
    g.fast_trig = fast_trig_eligible(&g, out);
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
