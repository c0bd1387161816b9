/* cuda_cg_kernel.c - one scheduled kernel as a CUDA translation unit: the
 * layout decision (cuda_cg.h), the argument list, uniform up-front checks,
 * the loop over outer points of the layout, the member groups with their
 * reduction loops and cross-lane combines, and the two entry points (i32 /
 * i64 indexing) around a template body.
 */
#include "cuda_cg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define I32_LIMIT ((int64_t)1 << 30) /* 32-bit indexing below this extent (headroom for steps) */

void cug_fail(cug* g, ptc_status s) {
  if (!g->err)
    g->err = s;
  else
    ptc_status_destroy(s);
}

void cug_line(cug* g, ptc_strbuf* sb, const char* fmt, ...) {
  for (int d = 0; d < g->indent; d++) ptc_sb_append(sb, "  ");
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    ptc_sb_append(sb, small);
  } else {
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

void cug_buf_name(const cug* g, int32_t id, char* out, size_t cap) {
  (void)g;
  snprintf(out, cap, "b%d", (int)id);
}

/* ---- analysis ------------------------------------------------------------------------ */

/* Buffers the kernel passes (every non-local buffer of a live load/store),
 * which it stores, and which outer-level stores are read again. */
static ptc_status collect_buffers(cug* g, cuda_kernel_src* out) {
  size_t nb = g->n_buffers;
  bool* used = calloc(nb ? nb : 1, sizeof *used);
  bool* loaded = calloc(nb ? nb : 1, sizeof *loaded);
  bool* outer_store = calloc(nb ? nb : 1, sizeof *outer_store);
  ptc_status s = used && loaded && outer_store ? PTC_OK : ptc_status_oom();
  for (uint32_t m = 0; !s && m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE)) continue;
      if (op->opcode == IR_LOAD) loaded[op->buf] = true;
      if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) continue;
      used[op->buf] = true;
      if (op->opcode == IR_STORE) {
        g->stored[op->buf] = true;
        if (mb->stage[i] != CU_LOOP) outer_store[op->buf] = true;
      }
    }
  }
  uint32_t n = 0;
  for (size_t b = 0; !s && b < nb; b++) {
    n += used[b];
    g->outer_reread[b] = outer_store[b] && loaded[b];
  }
  if (!s) {
    out->bufs = malloc((n ? n : 1) * sizeof *out->bufs);
    if (!out->bufs) s = ptc_status_oom();
  }
  for (size_t b = 0; !s && b < nb; b++)
    if (used[b]) out->bufs[out->n_bufs++] = (int32_t)b;
  free(used);
  free(loaded);
  free(outer_store);
  return s;
}

/* Two distinct buffers of the kernel share a workspace slot (an in-place
 * update): loads and stores may then touch the same memory. */
static bool shares_slot(const cug* g, const cuda_kernel_src* out, int32_t b) {
  if (g->s->buf_home[b] != SCHED_HOME_SLOT) return false;
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t o = out->bufs[j];
    if (o != b && g->s->buf_home[o] == SCHED_HOME_SLOT && g->s->buf_slot[o] == g->s->buf_slot[b])
      return true;
  }
  return false;
}

static bool has_reduction_loops(const cug* g) {
  if (g->k->n_rranges == 0) return false;
  for (uint32_t m = 0; m < g->k->n_nodes; m++)
    if (g->members[m].kind != CU_MEM_OUTER) return true;
  return false;
}

static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  return ptc_mul_ok(a, b, &r) ? r : INT64_MAX;
}

static int64_t hint_product(const cug* g, const sym_expr* const* r, uint32_t n) {
  int64_t p = 1;
  for (uint32_t d = 0; d < n; d++) p = sat_mul(p, cug_hint(g, r[d]));
  return p;
}

/* A reduction that walks memory with a stride while its last outer dim is
 * contiguous (column sums) favours the COL layout. */
static bool col_favoured(const cug* g) {
  const sched_kernel* k = g->k;
  if (k->n_ranges == 0 || cug_hint(g, k->ranges[k->n_ranges - 1]) < 2) return false;
  const sym_expr* xv = g->p->xvars[k->n_ranges - 1];
  const sym_expr* rv = g->p->rvars[k->n_rranges - 1];
  bool contig_x = false;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    if (mb->kind != CU_MEM_REDUCTION) continue;
    const ir_body* b = &mb->node->body;
    for (uint32_t i = 0; i < b->n; i++) {
      const ir_op* op = &b->ops[i];
      if (!mb->live[i] || op->opcode != IR_LOAD || mb->stage[i] != CU_LOOP) continue;
      if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) continue;
      int64_t cx, cr;
      if (cug_coef(op->index, rv, &cr) && cr == 1) return false;
      if (cug_coef(op->index, xv, &cx) && cx == 1) contig_x = true;
    }
  }
  return contig_x;
}

static void choose_layout(cug* g, cuda_kernel_src* out) {
  if (!has_reduction_loops(g)) {
    g->layout = CUDA_LAYOUT_POINTWISE;
    g->lanes = 1;
    g->slots = CUDA_CG_BLOCK;
    out->block_x = CUDA_CG_BLOCK;
    out->block_y = 1;
    out->slots = CUDA_CG_BLOCK * CUDA_CG_ILP;
    return;
  }
  int64_t r = hint_product(g, g->k->rranges, g->k->n_rranges);
  if (r <= CUDA_CG_TINY_ROW || col_favoured(g)) {
    g->layout = CUDA_LAYOUT_COL;
    g->lanes = r <= CUDA_CG_TINY_ROW ? 1 : CUDA_CG_COL_Y;
    g->slots = g->lanes == 1 ? CUDA_CG_BLOCK : CUDA_CG_COL_X;
    out->block_x = g->slots;
    out->block_y = g->lanes;
  } else {
    g->layout = CUDA_LAYOUT_ROW;
    g->lanes = r <= 512 ? 32 : r <= 2048 ? 128 : r <= 8192 ? 256 : 512;
    g->slots = g->lanes >= 256 ? 1 : 256 / g->lanes;
    out->block_x = g->lanes;
    out->block_y = g->slots;
  }
  out->slots = g->slots;
}

/* ---- vectorised pointwise kernels -----------------------------------------------------
 * A pointwise kernel whose stores all write element `lin` (the flat
 * row-major index of its loops, i.e. contiguous outputs of the loop shape)
 * and which reads no buffer it writes is vectorised: each thread takes
 * chunks of V consecutive points, loads every buffer read at `lin` with one
 * 16-byte access (V = 16 / the widest such element), runs the body per
 * point from those registers (loads at any other index - broadcasts, or
 * the same buffer at an offset as in split - stay scalar)
 * and stores each output chunk with one access. Chunks that are not fully
 * in range, or buffers not aligned to the access, take the scalar path. */

/* The flat row-major index of the kernel's outer loops. */
static const sym_expr* flat_index(const cug* g) {
  sym_env* env = g->p->env;
  const sym_expr* e = sym_const(env, 0);
  const sym_expr* stride = sym_const(env, 1);
  for (uint32_t d = g->k->n_ranges; d-- > 0 && e && stride;) {
    e = sym_add(env, e, sym_mul(env, g->p->xvars[d], stride));
    stride = sym_mul(env, stride, g->k->ranges[d]);
  }
  return stride ? e : NULL;
}

static void vec_plan(cug* g) {
  g->vec_width = 0;
  if (g->layout != CUDA_LAYOUT_POINTWISE || g->k->n_ranges == 0) return;
  const sym_expr* flat = flat_index(g);
  if (!flat) return;
  g->flat = flat;
  size_t max_es = 0;
  bool ok = true;
  memset(g->vec_buf, 0, g->n_buffers * sizeof *g->vec_buf);
  for (uint32_t m = 0; ok && m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; ok && i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE)) continue;
      if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) continue;
      bool at_flat = op->index == flat;
      if (op->opcode == IR_STORE && !at_flat) ok = false;
      if (op->opcode == IR_LOAD && g->stored[op->buf]) ok = false; /* reads what it writes */
      if (!at_flat) continue;
      g->vec_buf[op->buf] = true;
      size_t es = ptc_dtype_size(ir_buf(g->p, op->buf)->dtype);
      if (es > max_es) max_es = es;
    }
  }
  if (ok && max_es > 0 && 16 / max_es >= 2) g->vec_width = (uint32_t)(16 / max_es);
}

/* The vector path's loads (before the points) or stores (after them). */
static void emit_vec_access(cug* g, const cuda_kernel_src* out, bool stores) {
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    if (!g->vec_buf[b] || g->stored[b] != stores) continue;
    const char* t = cu_storage_type(ir_buf(g->p, b)->dtype);
    if (stores) {
      cug_line(g, &g->body, "ptc_vstore<%s, %u>(b%d + base, vout_b%d);", t, g->vec_width, (int)b,
               (int)b);
    } else {
      cug_line(g, &g->body, "%s vin_b%d[%u];", t, (int)b, g->vec_width);
      cug_line(g, &g->body, "ptc_vload<%s, %u>(b%d + base, vin_b%d);", t, g->vec_width, (int)b,
               (int)b);
    }
  }
}

static ptc_status emit_point_body(cug* g);
static void emit_decompose(cug* g, const char* lin, const char* v, const sym_expr* const* sizes,
                           uint32_t n);

static ptc_status emit_pointwise_vec(cug* g, const cuda_kernel_src* out) {
  const uint32_t B = CUDA_CG_BLOCK, V = g->vec_width;
  ptc_strbuf al;
  ptc_sb_init(&al);
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    if (!g->vec_buf[b]) continue;
    size_t bytes = ptc_dtype_size(ir_buf(g->p, b)->dtype) * V;
    ptc_sb_printf(&al, " && ((u64)b%d & %zu) == 0", (int)b, bytes - 1);
  }
  cug_line(g, &g->body, "ptc_kerr* const ke = kerr;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "const bool aligned = true%s;", al.data ? al.data : "");
  ptc_sb_free(&al);
  cug_line(g, &g->body, "const IT chunks = (xn + (IT)%u) / (IT)%u;", V - 1, V);
  cug_line(g, &g->body, "for (IT c = (IT)blockIdx.x * (IT)%u + (IT)threadIdx.x; c < chunks; "
           "c += (IT)gridDim.x * (IT)%u) {", B, B);
  g->indent++;
  cug_line(g, &g->body, "const IT base = c * (IT)%u;", V);
  cug_line(g, &g->body, "if (aligned && base + (IT)%u <= xn) {", V);
  g->indent++;
  emit_vec_access(g, out, false);
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    if (g->vec_buf[b] && g->stored[b])
      cug_line(g, &g->body, "%s vout_b%d[%u];", cu_storage_type(ir_buf(g->p, b)->dtype), (int)b, V);
  }
  cug_line(g, &g->body, "#pragma unroll");
  cug_line(g, &g->body, "for (int e = 0; e < %u; e++) {", V);
  g->indent++;
  cug_line(g, &g->body, "const IT lin = base + (IT)e;");
  emit_decompose(g, "lin", "x", g->k->ranges, g->k->n_ranges);
  g->vec_mode = true;
  memset(g->in_reg, 0, g->n_buffers * sizeof *g->in_reg);
  ptc_status s = emit_point_body(g);
  g->vec_mode = false;
  g->indent--;
  cug_line(g, &g->body, "}");
  emit_vec_access(g, out, true);
  g->indent--;
  cug_line(g, &g->body, "} else {");
  g->indent++;
  cug_line(g, &g->body, "for (int e = 0; e < %u; e++) {", V);
  g->indent++;
  cug_line(g, &g->body, "const IT lin = base + (IT)e;");
  cug_line(g, &g->body, "if (lin < xn) {");
  g->indent++;
  emit_decompose(g, "lin", "x", g->k->ranges, g->k->n_ranges);
  memset(g->in_reg, 0, g->n_buffers * sizeof *g->in_reg);
  if (!s) s = emit_point_body(g);
  for (int k = 0; k < 3; k++) {
    g->indent--;
    cug_line(g, &g->body, "}");
  }
  g->indent--;
  cug_line(g, &g->body, "}");
  return s;
}

/* ---- loops ------------------------------------------------------------------------------- */

/* Decomposes the flat index `lin` into the loop vars <v>0..<v>{n-1} over
 * `sizes` (row-major). */
static void emit_decompose(cug* g, const char* lin, const char* v, const sym_expr* const* sizes,
                           uint32_t n) {
  if (n == 0) return;
  if (n == 1) {
    cug_line(g, &g->body, "const IT %s0 = %s;", v, lin);
    return;
  }
  cug_line(g, &g->body, "IT %s_rest = %s;", v, lin);
  for (uint32_t d = n; d-- > 1;) {
    ptc_strbuf sz;
    ptc_sb_init(&sz);
    cug_index(g, &sz, sizes[d]);
    const char* S = sz.data ? sz.data : "1";
    cug_line(g, &g->body, "const IT %s%u = %s_rest %% %s;", v, d, v, S);
    cug_line(g, &g->body, "%s_rest = %s_rest / %s;", v, v, S);
    ptc_sb_free(&sz);
  }
  cug_line(g, &g->body, "const IT %s0 = %s_rest;", v, v);
}

static void member_comment(cug* g, uint32_t m) {
  const cu_member* mb = &g->members[m];
  static const char* const kinds[] = {"reduction", "inner", "outer"};
  char origin[64];
  snprintf(origin, sizeof origin, "%s", mb->node->origin ? mb->node->origin : "");
  for (char* q = origin; *q; q++)
    if (*q == '*' || *q == '/' || *q == '\\' || (unsigned char)*q < 32) *q = '_';
  cug_line(g, &g->body, "/* node %d (%s) -> b%d%s%s */", mb->node_index, kinds[mb->kind],
           (int)mb->node->out_buf, *origin ? ": " : "", origin);
}

typedef struct group {
  uint32_t n;
  uint32_t* m;
} group;

/* One group: hoisted ops, accumulators, the reduction loop over this
 * thread's lanes, the combine, results and the ops after the reductions. */
static void flush_group(cug* g, group* gr) {
  if (!gr->n) return;
  for (uint32_t j = 0; j < gr->n; j++) member_comment(g, gr->m[j]);
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_stage(g, &g->body, CU_PRE);
    cug_emit_acc_decls(g, &g->body);
  }
  if (g->persist) {
    cug_line(g, &g->body, "#pragma unroll");
    cug_line(g, &g->body, "for (int it = 0; it < %u; it++) {", g->persist);
    g->indent++;
    cug_line(g, &g->body, "const IT rl = (IT)lane + (IT)(it * %u);", g->lanes);
    cug_line(g, &g->body, "if (rl < rlim) {");
  } else {
    cug_line(g, &g->body, "for (IT rl = (IT)lane; rl < rlim; rl += (IT)%u) {", g->lanes);
  }
  g->indent++;
  emit_decompose(g, "rl", "r", g->k->rranges, g->k->n_rranges);
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_stage(g, &g->body, CU_LOOP);
    cug_emit_acc_updates(g, &g->body);
  }
  g->indent--;
  cug_line(g, &g->body, "}");
  if (g->persist) {
    g->indent--;
    cug_line(g, &g->body, "}");
  }
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_combine(g, &g->body);
    cug_emit_acc_finalize(g, &g->body);
    cug_emit_stage(g, &g->body, CU_POST);
  }
  gr->n = 0;
}

static bool group_feeds(const cug* g, const group* gr, uint32_t m) {
  for (uint32_t j = 0; j < gr->n; j++) {
    const cu_member* mb = &g->members[gr->m[j]];
    if (mb->kind == CU_MEM_REDUCTION && cug_member_reads(g, m, mb->node->out_buf)) return true;
  }
  return false;
}

static ptc_status emit_point_body(cug* g) {
  group gr = {0, calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof(uint32_t))};
  if (!gr.m) return ptc_status_oom();
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    if (g->members[m].kind == CU_MEM_OUTER) {
      flush_group(g, &gr);
      member_comment(g, m);
      cug_member_begin(g, m);
      cug_emit_stage(g, &g->body, CU_PRE);
      continue;
    }
    if (group_feeds(g, &gr, m)) flush_group(g, &gr);
    gr.m[gr.n++] = m;
  }
  flush_group(g, &gr);
  free(gr.m);
  return PTC_OK;
}

static ptc_status emit_pointwise(cug* g) {
  const uint32_t B = CUDA_CG_BLOCK, V = CUDA_CG_ILP;
  cug_line(g, &g->body, "ptc_kerr* const ke = kerr;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "for (IT base = (IT)blockIdx.x * (IT)%u; base < xn; base += (IT)gridDim.x * (IT)%u) {",
           B * V, B * V);
  g->indent++;
  cug_line(g, &g->body, "#pragma unroll");
  cug_line(g, &g->body, "for (int v = 0; v < %u; v++) {", V);
  g->indent++;
  cug_line(g, &g->body, "const IT lin = base + (IT)(v * %u) + (IT)threadIdx.x;", B);
  cug_line(g, &g->body, "if (lin < xn) {");
  g->indent++;
  emit_decompose(g, "lin", "x", g->k->ranges, g->k->n_ranges);
  ptc_status s = emit_point_body(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  g->indent--;
  cug_line(g, &g->body, "}");
  g->indent--;
  cug_line(g, &g->body, "}");
  return s;
}

/* ---- persistent rows -------------------------------------------------------------------
 * A ROW kernel walks each row in several loops (softmax: max, sum of exp,
 * the division; layer norm: mean, variance, the normalisation). When its
 * row length R is static and small (R / lanes <= 8 elements per lane by
 * default, widening the row to 512 lanes to fit) and an intermediate dies
 * with the kernel (the exp of a softmax), its loops are unrolled over the
 * lane's elements and each buffer accessed in two or more of them at one
 * index (unmasked, in the loops only) is kept in registers c_b<id>[it]
 * after its first load or store: the row is read from memory once, and the
 * intermediate is never written back. */

#define PERSIST_MAX_REGS 48  /* cached elements per lane over all buffers */
#define PERSIST_WIDE_LANES 512

/* Elements per lane up to which rows persist: PTC_CUDA_PERSIST (0 = off;
 * default 8); PTC_CUDA_PERSIST_WIDE=0 keeps the usual lane count instead of
 * widening a row to 512 lanes to fit. Tuning knobs read at code generation
 * (the kernel source, hence the cubin cache key, follows them). */
static int64_t persist_max_per_lane(void) {
  const char* e = getenv("PTC_CUDA_PERSIST");
  if (!e || !*e) return 8;
  long v = strtol(e, NULL, 10);
  return v < 0 ? 0 : v > 32 ? 32 : v;
}

static bool persist_wide(void) {
  const char* e = getenv("PTC_CUDA_PERSIST_WIDE");
  return !e || !*e || strcmp(e, "0") != 0;
}

/* The group of each member as emit_point_body forms them (-1: outer). */
static ptc_status assign_groups(const cug* g, int32_t* gid) {
  uint32_t* open = calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof *open);
  if (!open) return ptc_status_oom();
  int32_t cur = 0;
  uint32_t n = 0; /* members of the open group */
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    if (g->members[m].kind == CU_MEM_OUTER) {
      if (n) cur++;
      n = 0;
      gid[m] = -1;
      continue;
    }
    bool feeds = false;
    for (uint32_t j = 0; j < n; j++) {
      const cu_member* mb = &g->members[open[j]];
      if (mb->kind == CU_MEM_REDUCTION && cug_member_reads(g, m, mb->node->out_buf)) feeds = true;
    }
    if (feeds) {
      cur++;
      n = 0;
    }
    open[n++] = m;
    gid[m] = cur;
  }
  free(open);
  return PTC_OK;
}

static ptc_status persist_plan(cug* g, cuda_kernel_src* out) {
  g->persist = 0;
  if (g->layout != CUDA_LAYOUT_ROW || g->k->n_rranges == 0) return PTC_OK;
  int64_t r = 1, v, max_pl = persist_max_per_lane();
  for (uint32_t d = 0; d < g->k->n_rranges; d++) {
    if (!sym_is_const(g->k->rranges[d], &v)) return PTC_OK;
    r = sat_mul(r, v);
  }
  if (r <= 0 || max_pl <= 0) return PTC_OK;
  uint32_t lanes = g->lanes;
  if ((r + lanes - 1) / lanes > max_pl && persist_wide() && lanes < PERSIST_WIDE_LANES)
    lanes = PERSIST_WIDE_LANES;
  int64_t per_lane = (r + lanes - 1) / lanes;
  if (per_lane > max_pl) return PTC_OK;
  size_t nb = g->n_buffers;
  int32_t* gid = calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof *gid);
  int32_t* first_g = malloc((nb ? nb : 1) * sizeof *first_g);
  bool* multi = calloc(nb ? nb : 1, sizeof *multi);
  bool* bad = calloc(nb ? nb : 1, sizeof *bad);
  if (!gid || !first_g || !multi || !bad) {
    free(gid);
    free(first_g);
    free(multi);
    free(bad);
    return ptc_status_oom();
  }
  for (size_t b = 0; b < nb; b++) first_g[b] = -1;
  ptc_status st = assign_groups(g, gid);
  for (uint32_t m = 0; !st && m < g->k->n_nodes; m++) {
    cug_member_begin(g, m);
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE)) continue;
      int32_t b = op->buf;
      if (g->s->buf_home[b] == SCHED_HOME_LOCAL) continue;
      if (mb->stage[i] != CU_LOOP || gid[m] < 0 || (op->opcode == IR_LOAD && op->args[0] >= 0)) {
        bad[b] = true;
        continue;
      }
      ptc_strbuf idx;
      ptc_sb_init(&idx);
      /* printed as the loops will print it; an index through an indirect
       * value (named only while emitting) is not cached */
      ptc_status saved = g->err;
      g->err = NULL;
      cug_index(g, &idx, op->index);
      bool failed = g->err != NULL;
      ptc_status_destroy(g->err);
      g->err = saved;
      if (failed || !idx.data) {
        bad[b] = true;
      } else if (first_g[b] < 0) {
        first_g[b] = gid[m];
        g->cache_key[b] = idx.data; /* taken over */
        idx.data = NULL;
      } else {
        if (strcmp(g->cache_key[b], idx.data) != 0) bad[b] = true;
        if (first_g[b] != gid[m]) multi[b] = true;
      }
      ptc_sb_free(&idx);
    }
  }
  uint32_t n_cached = 0;
  bool saves_store = false;
  for (size_t b = 0; st && b < nb; b++) bad[b] = true;
  for (size_t b = 0; b < nb; b++) {
    if (!multi[b] || bad[b]) continue;
    n_cached++;
    if (g->s->buf_home[b] == SCHED_HOME_SLOT && g->s->buf_free_after &&
        g->s->buf_free_after[b] == (int32_t)g->kidx)
      saves_store = true;
  }
  /* Measured on the H200 (docs/benchmarks.md): rows held in registers
   * lower the rows in flight per SM; that pays when it also removes an
   * intermediate's write and re-read (softmax f32: 0.142 -> 0.107 ms), not
   * when it only spares re-reads that hit L2 (rmsnorm f32 0.123 -> 0.164,
   * the bf16 norms 10-25% slower). PTC_CUDA_PERSIST_ALL=1 persists both. */
  const char* all = getenv("PTC_CUDA_PERSIST_ALL");
  if (!saves_store && !(all && !strcmp(all, "1"))) n_cached = 0;
  if (n_cached && n_cached * (uint32_t)per_lane <= PERSIST_MAX_REGS) {
    g->persist = (uint32_t)per_lane;
    if (lanes != g->lanes) { /* one row per block of PERSIST_WIDE_LANES threads */
      g->lanes = lanes;
      g->slots = 1;
      out->block_x = lanes;
      out->block_y = 1;
      out->slots = 1;
    }
    for (size_t b = 0; b < nb; b++) {
      if (!multi[b] || bad[b]) continue;
      g->cache[b] = 1;
      g->no_store[b] = g->s->buf_home[b] == SCHED_HOME_SLOT && g->s->buf_free_after &&
                       g->s->buf_free_after[b] == (int32_t)g->kidx;
    }
  }
  free(gid);
  free(first_g);
  free(multi);
  free(bad);
  return st;
}

static ptc_status emit_reduction(cug* g) {
  bool row = g->layout == CUDA_LAYOUT_ROW;
  cug_line(g, &g->body, "const int lane = %s, slot = %s;", row ? "threadIdx.x" : "threadIdx.y",
           row ? "threadIdx.y" : "threadIdx.x");
  cug_line(g, &g->body, "(void)lane;");
  cug_line(g, &g->body, "for (IT tile = (IT)blockIdx.x; tile * (IT)%u < xn; tile += (IT)gridDim.x) {",
           g->slots);
  g->indent++;
  cug_line(g, &g->body, "IT xo = tile * (IT)%u + (IT)slot;", g->slots);
  cug_line(g, &g->body, "const bool xvalid = xo < xn;");
  cug_line(g, &g->body, "if (!xvalid) xo = xn - 1;");
  cug_line(g, &g->body, "ptc_kerr* const ke = xvalid ? kerr : (ptc_kerr*)0;");
  cug_line(g, &g->body, "const IT rlim = xvalid ? rn : (IT)0;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "(void)rlim;");
  emit_decompose(g, "xo", "x", g->k->ranges, g->k->n_ranges);
  for (size_t b = 0; g->persist && b < g->n_buffers; b++) {
    if (!g->cache[b]) continue;
    g->cache[b] = 1;
    cug_line(g, &g->body, "%s c_b%d[%u];", cu_ctype(cu_cls_of(ir_buf(g->p, (int32_t)b)->dtype)),
             (int)b, g->persist);
  }
  ptc_status s = emit_point_body(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  return s;
}

/* ---- up-front checks ------------------------------------------------------------------------ */

static bool inner_may_be_empty(const cug* g) {
  for (uint32_t d = 0; d < g->k->n_rranges; d++) {
    int64_t lo, hi;
    sym_bounds(g->p->env, g->k->rranges[d], &lo, &hi);
    if (lo <= 0) return true;
  }
  return false;
}

static void emit_checks(cug* g) {
  g->indent = 1;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) cug_member_indirect_checks(g, m);
  if (!has_reduction_loops(g) || !inner_may_be_empty(g)) return;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    if (!cug_member_needs_nonempty(g, m)) continue;
    cug_line(g, &g->checks, "if (rn == 0 && xn > 0) {");
    cug_line(g, &g->checks, "  if (first) ptc_fail(kerr, PTC_KERR_EMPTY, %d, (i64)xn, 0);",
             g->members[m].node_index);
    cug_line(g, &g->checks, "  return;");
    cug_line(g, &g->checks, "}");
    g->uses_err = true;
    return;
  }
}

/* ---- index width ------------------------------------------------------------------------------ */

/* Storage extent of buffer b in elements when every size is static. */
static bool static_extent(const ir_buffer* b, int64_t* out) {
  int64_t v, e = 1;
  if (b->numel && sym_is_const(b->numel, &v)) {
    *out = v;
    return true;
  }
  if (!b->offset || !sym_is_const(b->offset, &e)) return false;
  e += 1;
  for (uint32_t d = 0; d < b->rank; d++) {
    int64_t sh, st;
    if (!sym_is_const(b->shape[d], &sh) || !sym_is_const(b->strides[d], &st)) return false;
    if (sh == 0) {
      *out = 0;
      return true;
    }
    int64_t span = sat_mul(sh - 1, st);
    e = span > INT64_MAX - e ? INT64_MAX : e + span;
  }
  *out = e;
  return true;
}

/* Which entry points to emit: with every size static only the one needed. */
static void choose_widths(const cug* g, cuda_kernel_src* out) {
  int64_t v, ext = 1;
  bool stat = true;
  for (uint32_t d = 0; d < g->k->n_ranges && stat; d++)
    stat = sym_is_const(g->k->ranges[d], &v) && ((ext = sat_mul(ext, v)), true);
  for (uint32_t d = 0; d < g->k->n_rranges && stat; d++)
    stat = sym_is_const(g->k->rranges[d], &v) && ((ext = sat_mul(ext, v)), true);
  for (uint32_t j = 0; j < out->n_bufs && stat; j++) {
    stat = static_extent(ir_buf(g->p, out->bufs[j]), &v);
    if (v > ext) ext = v;
  }
  out->has_i32 = !stat || ext < I32_LIMIT;
  out->has_i64 = !stat || ext >= I32_LIMIT;
}

/* ---- assembly -------------------------------------------------------------------------------- */

static void emit_params(const cug* g, const cuda_kernel_src* out, ptc_strbuf* sb) {
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    const char* c = g->stored[b] ? "" : "const ";
    const char* r = shares_slot(g, out, b) ? "" : " __restrict__";
    ptc_sb_printf(sb, "%s%s*%s b%d, ", c, cu_storage_type(ir_buf(g->p, b)->dtype), r, (int)b);
  }
  for (uint32_t j = 0; j < out->n_syms; j++)
    ptc_sb_printf(sb, "i64 %s_a, ", g->vars[out->syms[j]].name);
  ptc_sb_append(sb, "i64 xnumel, i64 rnumel, ptc_kerr* kerr, u64 seed");
}

static void emit_args(const cug* g, const cuda_kernel_src* out, ptc_strbuf* sb) {
  for (uint32_t j = 0; j < out->n_bufs; j++) ptc_sb_printf(sb, "b%d, ", (int)out->bufs[j]);
  for (uint32_t j = 0; j < out->n_syms; j++) ptc_sb_printf(sb, "%s_a, ", g->vars[out->syms[j]].name);
  ptc_sb_append(sb, "xnumel, rnumel, kerr, seed");
}

static ptc_status collect_syms(cug* g, cuda_kernel_src* out) {
  uint32_t n = 0;
  for (size_t v = 0; v < g->n_vars; v++) n += g->vars[v].role == CU_VAR_SIZE && g->vars[v].used;
  out->syms = malloc((n ? n : 1) * sizeof *out->syms);
  if (!out->syms) return ptc_status_oom();
  for (size_t v = 0; v < g->n_vars; v++)
    if (g->vars[v].role == CU_VAR_SIZE && g->vars[v].used) out->syms[out->n_syms++] = (uint32_t)v;
  return PTC_OK;
}

static ptc_status assemble(cug* g, cuda_kernel_src* out) {
  ptc_strbuf src;
  ptc_sb_init(&src);
  ptc_sb_printf(&src, "// libptc generated kernel (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(&src, ptc_cuda_prelude_text);
  ptc_sb_printf(&src, "\n// kernel %u: %s (%s, block %ux%u)\n", g->kidx, g->k->name,
                g->layout == CUDA_LAYOUT_POINTWISE
                    ? (g->vec_width ? "vectorised pointwise" : "pointwise")
                : g->layout == CUDA_LAYOUT_ROW     ? "row reduction"
                                                   : "column reduction",
                out->block_x, out->block_y);
  ptc_sb_printf(&src, "template <typename IT>\n__device__ __forceinline__ void %s_body(", out->name);
  emit_params(g, out, &src);
  ptc_sb_append(&src, ") {\n");
  for (uint32_t j = 0; j < out->n_syms; j++) {
    const char* nm = g->vars[out->syms[j]].name;
    ptc_sb_printf(&src, "  const IT %s = (IT)%s_a;\n", nm, nm);
  }
  ptc_sb_append(&src, "  const IT xn = (IT)xnumel, rn = (IT)rnumel;\n"
                      "  const bool first = blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0;\n"
                      "  (void)rn;\n  (void)first;\n  (void)seed;\n");
  ptc_sb_append(&src, g->shared.data ? g->shared.data : "");
  ptc_sb_append(&src, g->checks.data ? g->checks.data : "");
  ptc_sb_append(&src, g->body.data ? g->body.data : "");
  ptc_sb_append(&src, "}\n");
  uint32_t threads = out->block_x * out->block_y;
  for (int w = 0; w < 2; w++) {
    if (!(w ? out->has_i64 : out->has_i32)) continue;
    ptc_sb_printf(&src, "extern \"C\" __global__ void __launch_bounds__(%u) %s_i%d(", threads,
                  out->name, w ? 64 : 32);
    emit_params(g, out, &src);
    ptc_sb_printf(&src, ") {\n  %s_body<%s>(", out->name, w ? "i64" : "i32");
    emit_args(g, out, &src);
    ptc_sb_append(&src, ");\n}\n");
  }
  if (src.oom || g->body.oom || g->checks.oom || g->shared.oom) {
    ptc_sb_free(&src);
    return ptc_status_oom();
  }
  out->source = ptc_sb_take(&src);
  return out->source ? PTC_OK : ptc_status_oom();
}

/* ---- entry ------------------------------------------------------------------------------------ */

static ptc_status check_args(const ir_program* p, const sched_plan* s, uint32_t k,
                             cuda_kernel_src* out) {
  if (!p || !s || !out) return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: NULL argument");
  if (k >= s->n_kernels)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: kernel %u of %u", k, s->n_kernels);
  if (s->kernels[k].is_extern)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: kernel %u (%s) is an extern call", k,
                   s->kernels[k].name);
  if (s->kernels[k].n_ranges > PTC_MAX_RANK || s->kernels[k].n_rranges > PTC_MAX_RANK)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: kernel %u has too many loops", k);
  return PTC_OK;
}

static ptc_status gen_init(cug* g, const ir_program* p, const sched_plan* s, uint32_t k) {
  memset(g, 0, sizeof *g);
  g->p = p;
  g->s = s;
  g->k = &s->kernels[k];
  g->kidx = k;
  ptc_sb_init(&g->body);
  ptc_sb_init(&g->checks);
  ptc_sb_init(&g->shared);
  g->n_buffers = p->buffers.len;
  size_t nb = g->n_buffers ? g->n_buffers : 1;
  g->stored = calloc(nb, sizeof *g->stored);
  g->in_reg = calloc(nb, sizeof *g->in_reg);
  g->outer_reread = calloc(nb, sizeof *g->outer_reread);
  g->vec_buf = calloc(nb, sizeof *g->vec_buf);
  g->cache = calloc(nb, sizeof *g->cache);
  g->cache_key = calloc(nb, sizeof *g->cache_key);
  g->no_store = calloc(nb, sizeof *g->no_store);
  if (!g->stored || !g->in_reg || !g->outer_reread || !g->vec_buf || !g->cache || !g->cache_key ||
      !g->no_store)
    return ptc_status_oom();
  PTC_TRY(cug_vars_init(g));
  return cug_members_init(g);
}

static void gen_free(cug* g) {
  cug_members_free(g);
  free(g->stored);
  free(g->in_reg);
  free(g->outer_reread);
  free(g->vec_buf);
  free(g->cache);
  for (size_t b = 0; g->cache_key && b < g->n_buffers; b++) free(g->cache_key[b]);
  free(g->cache_key);
  free(g->no_store);
  free(g->vars);
  ptc_sb_free(&g->body);
  ptc_sb_free(&g->checks);
  ptc_sb_free(&g->shared);
}

static bool any_shared_slot(const cug* g, const cuda_kernel_src* out) {
  for (uint32_t j = 0; j < out->n_bufs; j++)
    if (shares_slot(g, out, out->bufs[j])) return true;
  return false;
}

ptc_status cuda_codegen_kernel(const ir_program* p, const sched_plan* s, uint32_t k,
                               cuda_kernel_src* out) {
  char name[32];
  snprintf(name, sizeof name, "ptc_k%u", k);
  return cuda_codegen_kernel_named(p, s, k, name, out);
}

ptc_status cuda_codegen_kernel_named(const ir_program* p, const sched_plan* s, uint32_t k,
                                     const char* name, cuda_kernel_src* out) {
  PTC_TRY(check_args(p, s, k, out));
  memset(out, 0, sizeof *out);
  if (!name || strlen(name) > 40)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: bad kernel name");
  snprintf(out->name, sizeof out->name, "%s", name);
  cug g;
  ptc_status st = gen_init(&g, p, s, k);
  if (!st) st = collect_buffers(&g, out);
  if (!st) {
    choose_layout(&g, out);
    vec_plan(&g);
    if (g.vec_width) out->slots = CUDA_CG_BLOCK * g.vec_width;
    g.inplace_hazard = g.layout != CUDA_LAYOUT_POINTWISE && any_shared_slot(&g, out);
    if (!g.inplace_hazard) st = persist_plan(&g, out);
  }
  if (!st) {
    emit_checks(&g);
    g.indent = 1;
    if (g.layout != CUDA_LAYOUT_POINTWISE)
      st = emit_reduction(&g);
    else
      st = g.vec_width ? emit_pointwise_vec(&g, out) : emit_pointwise(&g);
  }
  if (!st) st = g.err;
  if (!st) st = collect_syms(&g, out);
  if (!st) {
    out->layout = g.layout;
    out->uses_err = g.uses_err;
    choose_widths(&g, out);
    st = assemble(&g, out);
  }
  if (st != g.err) ptc_status_destroy(g.err);
  gen_free(&g);
  if (st) cuda_kernel_src_free(out);
  return st;
}

void cuda_kernel_src_free(cuda_kernel_src* src) {
  if (!src) return;
  free(src->source);
  free(src->bufs);
  free(src->syms);
  src->source = NULL;
  src->bufs = NULL;
  src->syms = NULL;
  src->n_bufs = src->n_syms = 0;
}
