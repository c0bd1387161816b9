/* cpu_codegen_body.c - C statements for the body of one member node.
 *
 * A body is a DAG in execution order; each live op becomes one statement
 * assigning a const temporary `t<member>_<op>` (so common subexpressions
 * are computed once). Reduction members are split into stages: ops that do
 * not depend on a reduction var run before the inner loop (hoisted), ops
 * that do run inside it, IR_REDUCE folds into an accumulator there, and
 * ops using a reduced value run after the loop. Kernel-local buffers
 * (SCHED_HOME_LOCAL) are C variables named after the buffer: the store
 * defines them, loads read them.
 *
 * Accumulators: `a<m>_<i>` (+ `ai<m>_<i>`, the index of argmax/argmin, or
 * `an<m>_<i>`, the NaN flag of float max/min); split reductions also use
 * per-thread partial arrays `p..` and combined values `c..`, merged in
 * thread order so results do not depend on timing.
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- member analysis ------------------------------------------------------------------- */

static ptc_status member_shape_ok(const cg* g, const cg_member* mb) {
  const ir_node* n = mb->node;
  const sched_kernel* k = g->k;
  uint32_t want_outer = mb->kind == CG_MEM_INNER ? k->n_ranges + k->n_rranges : k->n_ranges;
  bool ok = n->n_ranges == want_outer &&
            (mb->kind != CG_MEM_REDUCTION || n->n_rranges == k->n_rranges);
  if (ok && ir_body_ok(&n->body)) return PTC_OK;
  return PTC_ERR(INTERNAL, "cpu codegen: node %d does not fit the loops of kernel %s",
                 mb->node_index, k->name);
}

/* Number of value arguments an opcode needs (IR_LOAD: its mask is optional). */
static int required_args(const ir_op* op) {
  switch (op->opcode) {
    case IR_LOAD:
    case IR_CONST:
    case IR_INDEX_EXPR:
    case IR_RAND:
    case IR_RANDN: return 0;
    case IR_WHERE: return 3;
    case IR_REDUCE: return op->rtype == IR_R_ARGMAX || op->rtype == IR_R_ARGMIN ? 2 : 1;
    default: return op->opcode >= IR_ADD && op->opcode <= IR_BXOR ? 2 : 1;
  }
}

/* Every op well formed: opcode, dtype, arguments before it, buffers and
 * expressions present. Bodies come from the builder, which guarantees
 * this; the check keeps a bad program from reaching the emitter. */
static bool op_ok(const cg* g, const ir_body* b, uint32_t i) {
  const ir_op* op = &b->ops[i];
  if (op->opcode >= IR_OPCODE_COUNT || !ptc_dtype_valid(op->dtype)) return false;
  int need = required_args(op);
  for (int a = 0; a < 3; a++) {
    if (op->args[a] < -1 || op->args[a] >= (ir_val)i) return false;
    if (a < need && op->args[a] < 0) return false;
  }
  bool mem = op->opcode == IR_LOAD || op->opcode == IR_STORE;
  if (mem && (op->buf < 0 || (size_t)op->buf >= g->n_buffers)) return false;
  bool indexed = mem || op->opcode == IR_INDEX_EXPR || op->opcode == IR_RAND ||
                 op->opcode == IR_RANDN;
  if (indexed && !op->index) return false;
  if (op->opcode == IR_INDIRECT && !op->sym) return false;
  return op->opcode != IR_REDUCE || op->rtype <= IR_R_ALL;
}

static ptc_status body_ok(const cg* g, const cg_member* mb) {
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (!op_ok(g, b, i))
      return PTC_ERR(INTERNAL, "cpu codegen: node %d: op %u (%s) is malformed", mb->node_index, i,
                     ir_opcode_name((ir_opcode)b->ops[i].opcode));
  return PTC_OK;
}

/* Liveness: stores and indirect checks are roots; args of live ops are live. */
static void mark_live(const ir_body* b, uint8_t* live) {
  for (uint32_t i = b->n; i-- > 0;) {
    const ir_op* op = &b->ops[i];
    if (op->opcode == IR_STORE || op->opcode == IR_INDIRECT) live[i] = 1;
    if (!live[i]) continue;
    for (int a = 0; a < 3; a++)
      if (op->args[a] >= 0 && (uint32_t)op->args[a] < i) live[op->args[a]] = 1;
  }
}

typedef struct stage_walk {
  const cg* g;
  const ir_body* b;
  const uint8_t* val_stage; /* stage of each op's value (REDUCE: POST) */
  uint32_t upto;
  uint8_t st;
} stage_walk;

/* Raises the stage to that of the indirect op defining symbol `var`. */
static void stage_of_var(void* u, size_t var) {
  stage_walk* w = u;
  for (uint32_t j = 0; j < w->upto; j++) {
    const ir_op* d = &w->b->ops[j];
    if (d->opcode == IR_INDIRECT && d->sym && (size_t)d->sym->value == var &&
        w->val_stage[j] > w->st)
      w->st = w->val_stage[j];
  }
}

/* Stages of a reduction member's ops; fails on an inner op that needs a
 * reduced value (it would need a second loop). */
static ptc_status reduction_stages(const cg* g, cg_member* mb) {
  const ir_body* b = &mb->node->body;
  uint8_t* val = calloc(b->n ? b->n : 1, 1);
  if (!val) return ptc_status_oom();
  ptc_status s = PTC_OK;
  for (uint32_t i = 0; i < b->n && !s; i++) {
    const ir_op* op = &b->ops[i];
    stage_walk w = {g, b, val, i, op->inner ? CG_LOOP : CG_PRE};
    for (int a = 0; a < 3; a++)
      if (op->args[a] >= 0 && val[op->args[a]] > w.st) w.st = val[op->args[a]];
    cg_index_vars(op->index, stage_of_var, &w);
    cg_index_vars(op->bound_expr, stage_of_var, &w);
    if (op->opcode == IR_REDUCE) {
      mb->stage[i] = CG_LOOP;
      val[i] = CG_POST;
      if (w.st == CG_POST)
        s = PTC_ERR(INTERNAL, "cpu codegen: node %d reduces a reduced value", mb->node_index);
      continue;
    }
    if (op->inner && w.st == CG_POST && mb->live[i])
      s = PTC_ERR(INTERNAL, "cpu codegen: node %d uses a reduced value inside its reduction loop",
                  mb->node_index);
    mb->stage[i] = val[i] = w.st;
  }
  free(val);
  return s;
}

/* ---- loop invariance ----------------------------------------------------------------------
 * Whether each op's value changes along the member's innermost loop: the
 * inner loop of a reduction (ops of stage CG_LOOP, except those that only
 * read kernel locals and constants) and of an inner pointwise member (its x
 * vars beyond the kernel's outer rank), the last outer var of an outer
 * member. Used to turn a division by an invariant into a multiplication by
 * its reciprocal, which the C compiler hoists out of the loop. */
typedef struct vary_walk {
  const cg* g;
  const cg_member* mb;
  bool hit;
} vary_walk;

static void note_loop_var(void* u, size_t var) {
  vary_walk* w = u;
  const cg* g = w->g;
  if (var >= g->n_vars) {
    w->hit = true;
    return;
  }
  const cg_var* v = &g->vars[var];
  uint32_t n = g->k->n_ranges;
  switch (v->role) {
    case CG_VAR_SIZE: return;
    case CG_VAR_R: w->hit = true; return;
    case CG_VAR_X:
      if (w->mb->kind == CG_MEM_INNER ? v->k >= n : (w->mb->kind == CG_MEM_OUTER && v->k + 1 == n))
        w->hit = true;
      return;
    default: w->hit = true; return; /* indirect symbols */
  }
}

static void mark_varies(const cg* g, cg_member* mb) {
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++) {
    const ir_op* op = &b->ops[i];
    bool v = false;
    for (int a = 0; a < 3; a++)
      if (op->args[a] >= 0 && mb->varies[op->args[a]]) v = true;
    switch (op->opcode) {
      case IR_CONST: break;
      case IR_RAND:
      case IR_RANDN:
      case IR_INDIRECT:
      case IR_REDUCE: v = true; break;
      case IR_LOAD:
        if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) break;
        /* fall through */
      case IR_INDEX_EXPR: {
        vary_walk w = {g, mb, false};
        cg_index_vars(op->index, note_loop_var, &w);
        v = v || w.hit;
        break;
      }
      default: break;
    }
    if (mb->kind == CG_MEM_REDUCTION && mb->stage[i] != CG_LOOP) v = false;
    if (mb->kind == CG_MEM_OUTER && g->k->n_rranges > 0) v = false; /* once per point */
    mb->varies[i] = v;
  }
}

static ptc_status member_init(cg* g, uint32_t m, cg_member* mb) {
  const sched_kernel* k = g->k;
  if (k->nodes[m] >= g->p->nodes.len)
    return PTC_ERR(INTERNAL, "cpu codegen: kernel %s names node %u of %zu", k->name, k->nodes[m],
                   g->p->nodes.len);
  mb->node = ir_node_at(g->p, k->nodes[m]);
  mb->node_index = (int32_t)k->nodes[m];
  if (mb->node->kind == IR_REDUCTION)
    mb->kind = CG_MEM_REDUCTION;
  else if (mb->node->kind == IR_POINTWISE)
    mb->kind = k->node_inner && k->node_inner[m] && k->n_rranges ? CG_MEM_INNER : CG_MEM_OUTER;
  else
    return PTC_ERR(INTERNAL, "cpu codegen: extern node %d inside kernel %s", mb->node_index,
                   k->name);
  PTC_TRY(member_shape_ok(g, mb));
  PTC_TRY(body_ok(g, mb));
  uint32_t n = mb->node->body.n;
  mb->stage = calloc(n ? n : 1, 1);
  mb->live = calloc(n ? n : 1, 1);
  if (!mb->stage || !mb->live) return ptc_status_oom();
  mark_live(&mb->node->body, mb->live);
  mb->varies = calloc(n ? n : 1, 1);
  if (!mb->varies) return ptc_status_oom();
  if (mb->kind == CG_MEM_REDUCTION) PTC_TRY(reduction_stages(g, mb));
  else memset(mb->stage, mb->kind == CG_MEM_INNER ? CG_LOOP : CG_PRE, n);
  mark_varies(g, mb);
  return PTC_OK;
}

ptc_status cg_members_init(cg* g) {
  g->members = calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof *g->members);
  if (!g->members) return ptc_status_oom();
  for (uint32_t m = 0; m < g->k->n_nodes; m++) PTC_TRY(member_init(g, m, &g->members[m]));
  return PTC_OK;
}

void cg_members_free(cg* g) {
  if (!g->members) return;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    free(g->members[m].stage);
    free(g->members[m].live);
    free(g->members[m].varies);
  }
  free(g->members);
  g->members = NULL;
}

void cg_member_begin(cg* g, uint32_t m) {
  g->member = m;
  g->cur = &g->members[m];
  g->node_index = g->cur->node_index;
  g->rename_x = g->cur->kind == CG_MEM_INNER;
}

/* ---- statements ------------------------------------------------------------------------ */

static const ir_op* op_at(const cg* g, ir_val v) { return &g->cur->node->body.ops[v]; }

static void tname(const cg* g, ir_val v, char* out, size_t cap) {
  snprintf(out, cap, "t%u_%d", g->member, (int)v);
}

/* Starts "const <ctype> t<m>_<i> = " for op i. */
static void decl_begin(cg* g, ptc_strbuf* sb, ir_val i, int32_t dtype) {
  char t[32];
  tname(g, i, t, sizeof t);
  for (int d = 0; d < g->indent; d++) ptc_sb_append(sb, "  ");
  ptc_sb_printf(sb, "const %s %s = ", cg_ctype(cg_cls_of(dtype)), t);
}

static bool is_local(const cg* g, int32_t buf) {
  return g->s->buf_home[buf] == SCHED_HOME_LOCAL;
}

/* The value of a load (unmasked part). */
static void load_value(cg* g, ptc_strbuf* sb, const ir_op* op) {
  const ir_buffer* b = ir_buf(g->p, op->buf);
  char name[32];
  cg_buf_name(g, op->buf, name, sizeof name);
  ptc_strbuf raw;
  ptc_sb_init(&raw);
  if (g->scratch && g->scratch[op->buf]) {
    char sname[48];
    snprintf(sname, sizeof sname, "%s_s", name);
    cg_load(&raw, b->dtype, sname, g->row_index.data ? g->row_index.data : "0");
  } else if (is_local(g, op->buf)) {
    if (!g->local_defined[op->buf])
      cg_fail(g, PTC_ERR(INTERNAL, "cpu codegen: kernel-local %s is read before it is written",
                         b->name));
    ptc_sb_append(&raw, name);
  } else {
    ptc_strbuf idx;
    ptc_sb_init(&idx);
    cg_index(g, &idx, op->index);
    cg_load(&raw, b->dtype, name, idx.data ? idx.data : "0");
    ptc_sb_free(&idx);
  }
  cg_conv(sb, b->dtype, op->dtype, raw.data ? raw.data : "0");
  ptc_sb_free(&raw);
}

static void literal_of(ptc_strbuf* sb, int32_t dtype, double f, int64_t i) {
  cg_cls c = cg_cls_of(dtype);
  if (c == CG_F32 || c == CG_F64) {
    ir_op k;
    memset(&k, 0, sizeof k);
    k.dtype = dtype;
    k.f = f;
    cg_const(sb, &k);
  } else {
    cg_int_lit(sb, c == CG_BOOL ? (f != 0 || i != 0) : i);
  }
}

static void emit_load(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  decl_begin(g, sb, i, op->dtype);
  if (op->args[0] >= 0) {
    char m[32];
    tname(g, op->args[0], m, sizeof m);
    ptc_sb_printf(sb, "%s ? ", m);
    load_value(g, sb, op);
    ptc_sb_append(sb, " : ");
    literal_of(sb, op->dtype, op->f, op->i);
  } else {
    load_value(g, sb, op);
  }
  ptc_sb_append(sb, ";\n");
}

/* Mantissa scale of rand for a dtype (ref_elementwise.c mantissa_scale). */
static const char* rand_scale(int32_t dt) {
  switch (dt) {
    case PTC_F64: return "9007199254740992.0";
    case PTC_F16: return "2048.0";
    case PTC_BF16: return "256.0";
    default: return "16777216.0";
  }
}

static void emit_rand(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  ptc_strbuf e;
  ptc_sb_init(&e);
  if (op->opcode == IR_RAND)
    ptc_sb_printf(&e, "ptc_rand(kctx->seed, INT64_C(%lld), ", (long long)op->i);
  else
    ptc_sb_printf(&e, "ptc_randn(kctx->seed, INT64_C(%lld), ", (long long)op->i);
  cg_index(g, &e, op->index);
  if (op->opcode == IR_RAND) ptc_sb_printf(&e, ", %s", rand_scale(op->dtype));
  ptc_sb_append(&e, ")");
  decl_begin(g, sb, i, op->dtype);
  cg_conv(sb, PTC_F64, op->dtype, e.data ? e.data : "0");
  ptc_sb_append(sb, ";\n");
  ptc_sb_free(&e);
  g->uses_ctx = true;
}

static void emit_index_expr(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  ptc_strbuf e;
  ptc_sb_init(&e);
  cg_index(g, &e, op->index);
  decl_begin(g, sb, i, op->dtype);
  cg_conv(sb, PTC_I64, op->dtype, e.data ? e.data : "0");
  ptc_sb_append(sb, ";\n");
  ptc_sb_free(&e);
}

/* Bound of an indirect op as C text. */
static void indirect_bound(cg* g, ptc_strbuf* sb, const ir_op* op) {
  if (op->bound_expr)
    cg_index(g, sb, op->bound_expr);
  else
    cg_int_lit(sb, op->bound);
}

static void emit_indirect(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char t[32], a[32];
  tname(g, i, t, sizeof t);
  tname(g, op->args[0], a, sizeof a);
  ptc_strbuf bnd;
  ptc_sb_init(&bnd);
  indirect_bound(g, &bnd, op);
  const char* B = bnd.data ? bnd.data : "0";
  cg_line(g, sb, "const int64_t %sr = (int64_t)%s;", t, a);
  cg_line(g, sb, "int64_t %s = %sr < 0 ? ptc_iadd(%sr, %s) : %sr;", t, t, t, B, t);
  cg_line(g, sb, "if ((uint64_t)%s >= (uint64_t)%s) {", t, B);
  cg_line(g, sb, "  ptc_fail(kctx, PTC_KERR_INDIRECT, %d, %sr, %s);", g->node_index, t, B);
  cg_line(g, sb, "  %s = 0;", t);
  cg_line(g, sb, "}");
  cg_line(g, sb, "(void)%s;", t);
  ptc_sb_free(&bnd);
  g->uses_ctx = true;
  if (op->sym && (size_t)op->sym->value < g->n_vars) {
    cg_var* v = &g->vars[op->sym->value];
    v->role = CG_VAR_INDIRECT;
    snprintf(v->name, sizeof v->name, "%s", t);
  }
}

static void emit_store(cg* g, ptc_strbuf* sb, const ir_op* op) {
  const ir_buffer* b = ir_buf(g->p, op->buf);
  const ir_op* v = op_at(g, op->args[0]);
  char val[32], name[32];
  tname(g, op->args[0], val, sizeof val);
  cg_buf_name(g, op->buf, name, sizeof name);
  for (int d = 0; d < g->indent; d++) ptc_sb_append(sb, "  ");
  if (is_local(g, op->buf)) {
    ptc_sb_printf(sb, "const %s %s = ", cg_ctype(cg_cls_of(b->dtype)), name);
    cg_conv(sb, v->dtype, b->dtype, val);
    ptc_sb_append(sb, ";\n");
    g->local_defined[op->buf] = true;
    return;
  }
  /* f16/bf16: convert to float, then one rounding by the storage encoder */
  int32_t via = (b->dtype == PTC_F16 || b->dtype == PTC_BF16) ? PTC_F32 : b->dtype;
  ptc_strbuf conv;
  ptc_sb_init(&conv);
  cg_conv(&conv, v->dtype, via, val);
  ptc_sb_append(sb, name);
  if (g->scratch && g->scratch[op->buf]) {
    ptc_sb_append(sb, "_s[");
    ptc_sb_append(sb, g->row_index.data ? g->row_index.data : "0");
  } else if (g->streamed && g->streamed[op->buf] && g->stream_index) {
    ptc_sb_append(sb, "_t[");
    ptc_sb_append(sb, g->stream_index);
  } else {
    ptc_sb_append(sb, "[");
    cg_index(g, sb, op->index);
  }
  ptc_sb_append(sb, "] = ");
  cg_encode(sb, b->dtype, conv.data ? conv.data : "0");
  ptc_sb_append(sb, ";\n");
  ptc_sb_free(&conv);
}

/* f32 sin/cos by the prelude's polynomials; the argument's range check
 * folds into the block's flag `ptc_big` (see cpu_codegen.c, fast trig). */
static void emit_fast_trig(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, const char* arg,
                           int32_t arg_dt) {
  char t[32];
  tname(g, i, t, sizeof t);
  ptc_strbuf a;
  ptc_sb_init(&a);
  cg_conv(&a, arg_dt, op->dtype, arg);
  cg_line(g, sb, "const float %sa = %s;", t, a.data ? a.data : "0");
  cg_line(g, sb, "const float %s = ptc_%s_f32(%sa);", t, op->opcode == IR_SIN ? "sin" : "cos", t);
  cg_line(g, sb, "ptc_big |= ptc_trig_big(%sa);", t);
  if (a.oom) sb->oom = true;
  ptc_sb_free(&a);
}

static void emit_math(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char names[3][32];
  const char* args[3] = {"", "", ""};
  int32_t dts[3] = {op->dtype, op->dtype, op->dtype};
  for (int a = 0; a < 3; a++) {
    if (op->args[a] < 0) continue;
    tname(g, op->args[a], names[a], sizeof names[a]);
    args[a] = names[a];
    dts[a] = op_at(g, op->args[a])->dtype;
  }
  char ctx_arg[48];
  snprintf(ctx_arg, sizeof ctx_arg, "kctx, %d", g->node_index);
  ptc_strbuf e;
  ptc_sb_init(&e);
  bool ok;
  if (op->opcode == IR_TO_DTYPE) {
    cg_conv(&e, dts[0], op->dtype, args[0]);
    ok = true;
  } else if (op->opcode == IR_DIV && cg_cls_of(op->dtype) == CG_F32 && op->args[1] >= 0 &&
             g->cur->varies[i] && !g->cur->varies[op->args[1]]) {
    /* x / invariant: x * (1 / invariant), the reciprocal hoisted by the
     * compiler (division is the slowest vector op; <= 1 ulp more error) */
    ptc_strbuf a0, a1;
    ptc_sb_init(&a0);
    ptc_sb_init(&a1);
    cg_conv(&a0, dts[0], op->dtype, args[0]);
    cg_conv(&a1, dts[1], op->dtype, args[1]);
    ptc_sb_printf(&e, "(%s * (1.0f / %s))", a0.data ? a0.data : "0", a1.data ? a1.data : "0");
    if (a0.oom || a1.oom) e.oom = true;
    ptc_sb_free(&a0);
    ptc_sb_free(&a1);
    ok = true;
  } else if (g->fast_trig && !g->trig_exact && cg_op_fast_trig(op)) {
    emit_fast_trig(g, sb, i, op, args[0], dts[0]);
    ptc_sb_free(&e);
    return;
  } else {
    ok = cg_math(&e, op, args, dts, ctx_arg, &g->uses_ctx);
  }
  if (!ok)
    cg_fail(g, PTC_ERR(UNIMPLEMENTED, "cpu codegen: node %d: %s is not supported for %s",
                       g->node_index, ir_opcode_name((ir_opcode)op->opcode),
                       ptc_dtype_name(dts[0])));
  decl_begin(g, sb, i, op->dtype);
  ptc_sb_append(sb, e.data ? e.data : "0");
  ptc_sb_append(sb, ";\n");
  ptc_sb_free(&e);
}

static void emit_op(cg* g, ptc_strbuf* sb, ir_val i) {
  const ir_op* op = op_at(g, i);
  switch (op->opcode) {
    case IR_LOAD: emit_load(g, sb, i, op); return;
    case IR_CONST:
      decl_begin(g, sb, i, op->dtype);
      cg_const(sb, op);
      ptc_sb_append(sb, ";\n");
      return;
    case IR_INDEX_EXPR: emit_index_expr(g, sb, i, op); return;
    case IR_RAND:
    case IR_RANDN: emit_rand(g, sb, i, op); return;
    case IR_INDIRECT: emit_indirect(g, sb, i, op); return;
    case IR_STORE: emit_store(g, sb, op); return;
    case IR_REDUCE: return; /* accumulators: see below */
    default: emit_math(g, sb, i, op); return;
  }
}

void cg_emit_stage(cg* g, ptc_strbuf* sb, cg_stage stage) {
  const ir_body* b = &g->cur->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (g->cur->live[i] && g->cur->stage[i] == stage) emit_op(g, sb, (ir_val)i);
}

void cg_emit_pre_for(cg* g, ptc_strbuf* sb, cg_stage user) {
  const ir_body* b = &g->cur->node->body;
  uint8_t* need = calloc(b->n ? b->n : 1, 1);
  if (!need) {
    cg_fail(g, ptc_status_oom());
    return;
  }
  for (uint32_t i = b->n; i-- > 0;) {
    const ir_op* op = &b->ops[i];
    if (!g->cur->live[i]) continue;
    if (g->cur->stage[i] == user) need[i] = 1;
    if (!need[i]) continue;
    for (int a = 0; a < 3; a++)
      if (op->args[a] >= 0 && g->cur->stage[op->args[a]] == CG_PRE) need[op->args[a]] = 1;
  }
  for (uint32_t i = 0; i < b->n; i++)
    if (need[i] && g->cur->stage[i] == CG_PRE) emit_op(g, sb, (ir_val)i);
  free(need);
}

bool cg_kernel_has_fast_trig(cg* g) {
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    const cg_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++)
      if (mb->live[i] && cg_op_fast_trig(&mb->node->body.ops[i])) return true;
  }
  return false;
}

bool cg_stage_simd_ok(const cg* g, cg_stage stage) {
  const ir_body* b = &g->cur->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (g->cur->live[i] && g->cur->stage[i] == stage && cg_op_blocks_simd(&b->ops[i]))
      return false;
  return true;
}

/* ---- reductions ------------------------------------------------------------------------ */

/* A reduction folds into a value accumulator and, for argmax/argmin, the
 * index of the best value, or, for float max/min, a NaN flag (the value
 * then folds with a plain compare-select, which vectorises; any NaN seen
 * makes the result NaN). */
typedef enum second_kind { SECOND_NONE = 0, SECOND_INDEX, SECOND_NAN } second_kind;

static bool is_arg(const ir_op* op) {
  return op->rtype == IR_R_ARGMAX || op->rtype == IR_R_ARGMIN;
}

static bool is_float_type(const char* type) { return type[0] == 'f' || type[0] == 'd'; }

/* Accumulator C type of a reduction op. Sums and products of f32/f16/bf16
 * accumulate in double: a float accumulator drifts over long reductions
 * (rounding is biased when the addends are alike), and reductions are
 * memory-bound, so the wider adds cost nothing measurable. */
static const char* acc_type(const cg* g, const ir_op* op) {
  cg_cls rc = cg_cls_of(op->dtype);
  switch (op->rtype) {
    case IR_R_SUM:
    case IR_R_PROD: return rc == CG_F32 || rc == CG_F64 ? "double" : "uint64_t";
    case IR_R_MAX:
    case IR_R_MIN: return rc == CG_F32 ? "float" : rc == CG_F64 ? "double" : "int64_t";
    case IR_R_ARGMAX:
    case IR_R_ARGMIN: {
      cg_cls vc = cg_cls_of(op_at(g, op->args[0])->dtype);
      return vc == CG_F32 ? "float" : vc == CG_F64 ? "double" : "int64_t";
    }
    default: return "uint8_t";
  }
}

static second_kind second_of(const cg* g, const ir_op* op) {
  if (is_arg(op)) return SECOND_INDEX;
  bool mm = op->rtype == IR_R_MAX || op->rtype == IR_R_MIN;
  return mm && is_float_type(acc_type(g, op)) ? SECOND_NAN : SECOND_NONE;
}

static const char* acc_init(const ir_op* op, const char* type) {
  bool fl = is_float_type(type);
  switch (op->rtype) {
    case IR_R_SUM: return "0";
    case IR_R_PROD: return "1";
    case IR_R_MAX: return fl ? "-INFINITY" : "INT64_MIN";
    case IR_R_MIN: return fl ? "INFINITY" : "INT64_MAX";
    case IR_R_ALL: return "1";
    default: return "0";
  }
}

/* Accumulator names: prefix 'a' (in-loop), 'c' (combined), 'p' (per-thread
 * partials); second accumulators get an 'i' (index) or 'n' (NaN flag). */
static void acc_name(const cg* g, char prefix, second_kind second, ir_val i, char* out,
                     size_t cap) {
  static const char* const tag[] = {"", "i", "n"};
  snprintf(out, cap, "%c%s%u_%d", prefix, tag[second], g->member, (int)i);
}

/* The in-loop accumulator as an lvalue: in tiled loops an array element
 * (one lane per point of the tile). */
static void acc_ref(const cg* g, second_kind second, ir_val i, char* out, size_t cap) {
  acc_name(g, 'a', second, i, out, cap);
  if (g->tile) {
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "%s", g->lane);
  }
}

typedef void (*reduce_fn)(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u);

static void for_each_reduce(cg* g, ptc_strbuf* sb, reduce_fn fn, void* u) {
  const ir_body* b = &g->cur->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (g->cur->live[i] && b->ops[i].opcode == IR_REDUCE) fn(g, sb, (ir_val)i, &b->ops[i], u);
}

/* "<type> <prefix>..." declarations of a reduction's accumulators; `array`
 * declares per-thread partial arrays instead (no initialiser). */
static void decl_acc(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, char prefix, bool array) {
  second_kind sk = second_of(g, op);
  for (int k = 0; k < 2; k++) {
    second_kind which = k ? sk : SECOND_NONE;
    if (k && sk == SECOND_NONE) break;
    const char* type = k ? (sk == SECOND_INDEX ? "int64_t" : "uint8_t") : acc_type(g, op);
    const char* init = k ? (sk == SECOND_INDEX ? "-1" : "0") : acc_init(op, type);
    char a[32];
    acc_name(g, prefix, which, i, a, sizeof a);
    if (array) {
      cg_line(g, sb, "%s %s[PTC_MAX_THREADS];", type, a);
    } else if (g->tile) {
      cg_line(g, sb, "%s %s[%u];", type, a, g->tile);
      cg_line(g, sb, "for (int j = 0; j < %u; j++) %s[j] = %s;", g->tile, a, init);
    } else {
      cg_line(g, sb, "%s %s = %s;", type, a, init);
    }
  }
}

static void decl_combined(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  bool split = *(const bool*)u;
  decl_acc(g, sb, i, op, split ? 'c' : 'a', false);
  if (split) decl_acc(g, sb, i, op, 'p', true);
}

void cg_emit_acc_decls(cg* g, ptc_strbuf* sb, bool split) {
  for_each_reduce(g, sb, decl_combined, &split);
}

static void decl_thread(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  (void)u;
  decl_acc(g, sb, i, op, 'a', false);
}

void cg_emit_acc_thread_decls(cg* g, ptc_strbuf* sb) { for_each_reduce(g, sb, decl_thread, NULL); }

static void save_thread(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  (void)u;
  char a[32], p[32];
  second_kind sk = second_of(g, op);
  for (int k = 0; k < 2; k++) {
    second_kind which = k ? sk : SECOND_NONE;
    if (k && sk == SECOND_NONE) break;
    acc_name(g, 'a', which, i, a, sizeof a);
    acc_name(g, 'p', which, i, p, sizeof p);
    cg_line(g, sb, "%s[tid] = %s;", p, a);
  }
}

void cg_emit_acc_thread_save(cg* g, ptc_strbuf* sb) { for_each_reduce(g, sb, save_thread, NULL); }

/* The folded value: arg0 converted for the accumulator. */
static void reduce_input(cg* g, ptc_strbuf* sb, const ir_op* op) {
  const ir_op* x = op_at(g, op->args[0]);
  char t[32];
  tname(g, op->args[0], t, sizeof t);
  switch (op->rtype) {
    case IR_R_ANY:
    case IR_R_ALL: ptc_sb_printf(sb, "(uint8_t)(%s != 0)", t); return;
    case IR_R_ARGMAX:
    case IR_R_ARGMIN: ptc_sb_append(sb, t); return;
    default: {
      cg_cls rc = cg_cls_of(op->dtype);
      int32_t to = rc == CG_BOOL ? PTC_I64 : op->dtype;
      if (op->rtype <= IR_R_PROD && (rc == CG_INT || rc == CG_BOOL)) {
        ptc_sb_append(sb, "(uint64_t)");
        to = PTC_I64;
      }
      cg_conv(sb, x->dtype, to, t);
      return;
    }
  }
}

/* One folding step "acc = fold(acc, v)". acc2/v2 are the second
 * accumulator and its input (argmax/argmin: index; float max/min: NaN
 * flag); `guard` prefixes the arg condition (combine: partial non-empty). */
static void fold(cg* g, ptc_strbuf* sb, const ir_op* op, const char* acc, const char* acc2,
                 const char* v, const char* v2, const char* guard) {
  const char* type = acc_type(g, op);
  bool fl = is_float_type(type);
  const char* S = type[0] == 'f' ? "f32" : "f64";
  bool mx = op->rtype == IR_R_MAX || op->rtype == IR_R_ARGMAX;
  switch (op->rtype) {
    case IR_R_SUM: cg_line(g, sb, "%s += %s;", acc, v); return;
    case IR_R_PROD: cg_line(g, sb, "%s *= %s;", acc, v); return;
    case IR_R_ANY: cg_line(g, sb, "%s |= %s;", acc, v); return;
    case IR_R_ALL: cg_line(g, sb, "%s &= %s;", acc, v); return;
    case IR_R_MAX:
    case IR_R_MIN:
      cg_line(g, sb, "%s = %s %s %s ? %s : %s;", acc, v, mx ? ">" : "<", acc, v, acc);
      if (fl) cg_line(g, sb, "%s |= %s;", acc2, v2);
      return;
    default:
      if (fl)
        cg_line(g, sb, "if (%s(%s < 0 || ptc_beats_%s_%s(%s, %s))) {", guard, acc2,
                mx ? "max" : "min", S, v, acc);
      else
        cg_line(g, sb, "if (%s(%s < 0 || %s %s %s)) {", guard, acc2, v, mx ? ">" : "<", acc);
      cg_line(g, sb, "  %s = %s;", acc, v);
      cg_line(g, sb, "  %s = %s;", acc2, v2);
      cg_line(g, sb, "}");
      return;
  }
}

static void update_one(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  (void)u;
  second_kind sk = second_of(g, op);
  char a[48], a2[48];
  acc_ref(g, SECOND_NONE, i, a, sizeof a);
  acc_ref(g, sk, i, a2, sizeof a2);
  ptc_strbuf v, v2;
  ptc_sb_init(&v);
  ptc_sb_init(&v2);
  reduce_input(g, &v, op);
  const char* vt = v.data ? v.data : "0";
  if (sk == SECOND_INDEX) {
    char t[32];
    tname(g, op->args[1], t, sizeof t);
    cg_conv(&v2, op_at(g, op->args[1])->dtype, PTC_I64, t);
  } else if (sk == SECOND_NAN) {
    ptc_sb_printf(&v2, "(uint8_t)(%s != %s)", vt, vt);
  }
  fold(g, sb, op, a, a2, vt, v2.data ? v2.data : "0", "");
  ptc_sb_free(&v);
  ptc_sb_free(&v2);
}

void cg_emit_acc_updates(cg* g, ptc_strbuf* sb) { for_each_reduce(g, sb, update_one, NULL); }

static void combine_one(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  const char* t = u;
  second_kind sk = second_of(g, op);
  char c[32], c2[32], p[64], p2[64], guard[96];
  acc_name(g, 'c', SECOND_NONE, i, c, sizeof c);
  acc_name(g, 'c', sk, i, c2, sizeof c2);
  acc_name(g, 'p', SECOND_NONE, i, p, sizeof p);
  acc_name(g, 'p', sk, i, p2, sizeof p2);
  size_t n = strlen(p);
  snprintf(p + n, sizeof p - n, "[%s]", t);
  n = strlen(p2);
  snprintf(p2 + n, sizeof p2 - n, "[%s]", t);
  snprintf(guard, sizeof guard, "%s >= 0 && ", p2);
  fold(g, sb, op, c, c2, p, p2, guard);
}

void cg_emit_acc_combine(cg* g, ptc_strbuf* sb, const char* t) {
  for_each_reduce(g, sb, combine_one, (void*)t);
}

static void finalize_one(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  char a[48], a2[48], t[32], w[96];
  bool split = *(const bool*)u;
  second_kind sk = second_of(g, op);
  if (split) {
    acc_name(g, 'c', SECOND_NONE, i, a, sizeof a);
    acc_name(g, 'c', sk, i, a2, sizeof a2);
  } else {
    acc_ref(g, SECOND_NONE, i, a, sizeof a);
    acc_ref(g, sk, i, a2, sizeof a2);
  }
  tname(g, i, t, sizeof t);
  ptc_strbuf v;
  ptc_sb_init(&v);
  cg_cls rc = cg_cls_of(op->dtype);
  if (sk == SECOND_INDEX) {
    cg_conv(&v, PTC_I64, op->dtype, a2);
  } else if (sk == SECOND_NAN) {
    ptc_sb_printf(&v, "%s ? (%s)NAN : %s", a2, acc_type(g, op), a);
  } else if (op->rtype == IR_R_ANY || op->rtype == IR_R_ALL) {
    cg_conv(&v, PTC_BOOL, op->dtype, a);
  } else if (rc == CG_INT || rc == CG_BOOL) {
    snprintf(w, sizeof w, "(int64_t)%s", a);
    cg_conv(&v, PTC_I64, op->dtype, w);
  } else if (acc_type(g, op)[0] == 'd') {
    cg_conv(&v, PTC_F64, op->dtype, a);
  } else {
    ptc_sb_append(&v, a);
  }
  cg_line(g, sb, "const %s %s = %s;", cg_ctype(rc), t, v.data ? v.data : "0");
  ptc_sb_free(&v);
}

void cg_emit_acc_finalize(cg* g, ptc_strbuf* sb, bool split) {
  for_each_reduce(g, sb, finalize_one, &split);
}

/* ---- accumulators in heap slices (split column reductions) ----------------------------------
 * Partial results `p..` are malloc'ed arrays of (threads x outer points);
 * each thread's in-loop accumulators `a..` point at its slice and are
 * indexed by the lane text (g->lane); the combine folds the slices of every
 * point into `c..` in thread order. */
typedef void (*acc_fn)(cg* g, ptc_strbuf* sb, const char* type, const char* init, char* a,
                       char* p, void* u);

static void for_each_acc_of(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, acc_fn fn,
                            void* u) {
  second_kind sk = second_of(g, op);
  for (int k = 0; k < 2; k++) {
    second_kind which = k ? sk : SECOND_NONE;
    if (k && sk == SECOND_NONE) break;
    const char* type = k ? (sk == SECOND_INDEX ? "int64_t" : "uint8_t") : acc_type(g, op);
    const char* init = k ? (sk == SECOND_INDEX ? "-1" : "0") : acc_init(op, type);
    char a[32], p[32];
    acc_name(g, 'a', which, i, a, sizeof a);
    acc_name(g, 'p', which, i, p, sizeof p);
    fn(g, sb, type, init, a, p, u);
  }
}

typedef struct acc_visit {
  acc_fn fn;
  void* u;
} acc_visit;

static void visit_reduce(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  const acc_visit* v = u;
  for_each_acc_of(g, sb, i, op, v->fn, v->u);
}

static void for_each_acc(cg* g, ptc_strbuf* sb, acc_fn fn, void* u) {
  acc_visit v = {fn, u};
  for_each_reduce(g, sb, visit_reduce, &v);
}

static void heap_decl(cg* g, ptc_strbuf* sb, const char* type, const char* init, char* a, char* p,
                      void* u) {
  (void)init, (void)a;
  cg_line(g, sb, "%s* const %s = (%s*)malloc(sizeof(%s) * (size_t)(%s));", type, p, type, type,
          (const char*)u);
}

void cg_emit_acc_heap_decls(cg* g, ptc_strbuf* sb, const char* count) {
  for_each_acc(g, sb, heap_decl, (void*)count);
}

static void heap_test(cg* g, ptc_strbuf* sb, const char* type, const char* init, char* a, char* p,
                      void* u) {
  (void)g, (void)init, (void)a;
  ptc_sb_printf(sb, " || !%s", p);
  ptc_sb_printf((ptc_strbuf*)u, " + sizeof(%s)", type);
}

void cg_acc_heap_null_test(cg* g, ptc_strbuf* test, ptc_strbuf* bytes) {
  for_each_acc(g, test, heap_test, bytes);
}

static void heap_free(cg* g, ptc_strbuf* sb, const char* type, const char* init, char* a, char* p,
                      void* u) {
  (void)type, (void)init, (void)a, (void)u;
  cg_line(g, sb, "free(%s);", p);
}

void cg_emit_acc_heap_free(cg* g, ptc_strbuf* sb) { for_each_acc(g, sb, heap_free, NULL); }

static void slice_decl(cg* g, ptc_strbuf* sb, const char* type, const char* init, char* a, char* p,
                       void* u) {
  const char* const* t = u;
  cg_line(g, sb, "%s* const %s = %s + %s;", type, a, p, t[0]);
  cg_line(g, sb, "for (int64_t j = 0; j < %s; j++) %s[j] = %s;", t[1], a, init);
}

void cg_emit_acc_slices(cg* g, ptc_strbuf* sb, const char* offset, const char* count) {
  const char* t[2] = {offset, count};
  for_each_acc(g, sb, slice_decl, (void*)t);
}

static void decl_c(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  (void)u;
  decl_acc(g, sb, i, op, 'c', false);
}

void cg_emit_acc_combined_decls(cg* g, ptc_strbuf* sb) { for_each_reduce(g, sb, decl_c, NULL); }

/* OpenMP reduction operators per rtype (NULL: no simd). */
static const char* const simd_ops[] = {[IR_R_SUM] = "+",  [IR_R_PROD] = "*",
                                       [IR_R_MAX] = "max", [IR_R_MIN] = "min",
                                       [IR_R_ARGMAX] = NULL, [IR_R_ARGMIN] = NULL,
                                       [IR_R_ANY] = "|",  [IR_R_ALL] = "&"};

static void simd_clause(cg* g, ptc_strbuf* sb, ir_val i, const ir_op* op, void* u) {
  bool* ok = u;
  const char* o = op->rtype < sizeof simd_ops / sizeof simd_ops[0] ? simd_ops[op->rtype] : NULL;
  if (!o) {
    *ok = false;
    return;
  }
  char a[32];
  acc_name(g, 'a', SECOND_NONE, i, a, sizeof a);
  ptc_sb_printf(sb, " reduction(%s:%s)", o, a);
  if (second_of(g, op) == SECOND_NAN) {
    acc_name(g, 'a', SECOND_NAN, i, a, sizeof a);
    ptc_sb_printf(sb, " reduction(|:%s)", a);
  }
}

bool cg_simd_clauses(cg* g, ptc_strbuf* sb) {
  bool ok = true;
  for_each_reduce(g, sb, simd_clause, &ok);
  return ok;
}

/* ---- member queries ------------------------------------------------------------------------ */

bool cg_member_reads(const cg* g, uint32_t m, int32_t buf) {
  const cg_member* mb = &g->members[m];
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (mb->live[i] && b->ops[i].opcode == IR_LOAD && b->ops[i].buf == buf) return true;
  return false;
}

bool cg_member_op_in_loop(const cg* g, uint32_t m, uint32_t i) {
  const cg_member* mb = &g->members[m];
  return mb->kind == CG_MEM_INNER || (mb->kind == CG_MEM_REDUCTION && mb->stage[i] == CG_LOOP);
}

bool cg_member_needs_nonempty(const cg* g, uint32_t m) {
  const cg_member* mb = &g->members[m];
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++) {
    const ir_op* op = &b->ops[i];
    if (mb->live[i] && op->opcode == IR_REDUCE && op->rtype >= IR_R_MAX && op->rtype <= IR_R_ARGMIN)
      return true;
  }
  return false;
}

/* Product of the kernel's outer ranges (and inner ones if `inner`) as C text. */
void cg_numel(cg* g, ptc_strbuf* sb, bool outer, bool inner) {
  ptc_sb_append(sb, "(INT64_C(1)");
  for (uint32_t d = 0; outer && d < g->k->n_ranges; d++) {
    ptc_sb_append(sb, "*");
    cg_index(g, sb, g->k->ranges[d]);
  }
  for (uint32_t d = 0; inner && d < g->k->n_rranges; d++) {
    ptc_sb_append(sb, "*");
    cg_index(g, sb, g->k->rranges[d]);
  }
  ptc_sb_append(sb, ")");
}

/* An indirect op whose bound may be <= 0 can never index in range: fail
 * before the loops if it would run at all. */
static void indirect_check(cg* g, const ir_op* op, cg_stage stage) {
  int64_t lo, hi;
  if (op->bound_expr) {
    sym_bounds(g->p->env, op->bound_expr, &lo, &hi);
    if (lo > 0) return;
  } else if (op->bound > 0) {
    return;
  }
  ptc_strbuf b, n;
  ptc_sb_init(&b);
  ptc_sb_init(&n);
  indirect_bound(g, &b, op);
  cg_numel(g, &n, true, stage == CG_LOOP);
  cg_line(g, &g->checks, "if (%s <= 0 && %s > 0) {", b.data, n.data);
  cg_line(g, &g->checks, "  ptc_fail(kctx, PTC_KERR_INDIRECT, %d, 0, %s);", g->node_index, b.data);
  cg_line(g, &g->checks, "  return;");
  cg_line(g, &g->checks, "}");
  ptc_sb_free(&b);
  ptc_sb_free(&n);
  g->uses_ctx = true;
}

void cg_member_indirect_checks(cg* g, uint32_t m) {
  cg_member_begin(g, m);
  const ir_body* b = &g->cur->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (g->cur->live[i] && b->ops[i].opcode == IR_INDIRECT)
      indirect_check(g, &b->ops[i], (cg_stage)g->cur->stage[i]);
}
