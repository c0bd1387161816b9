/* cuda_cg_body.c - CUDA statements for the body of one member node, and the
 * reductions' accumulators.
 *
 * A body is a DAG in execution order; each live op becomes one statement
 * assigning a const temporary t<m>_<i>. Reduction members are split into
 * stages: ops that do not depend on a reduction var run before the
 * reduction loop (hoisted), ops that do run inside it, IR_REDUCE folds into
 * a per-thread accumulator there, the layout's cross-lane combine leaves
 * the reduced value in every lane, and ops using it run after the loop.
 *
 * Stores. In the reduction layouts several threads (the lanes of one outer
 * point, and padding slots past the last point, which compute a clamped
 * copy of the last point) run the same outer-level code: only lane 0 of a
 * valid slot writes an outer-level value, valid slots write in-loop values,
 * and an outer-level value that a later member of the kernel reads again
 * is kept in a register (v_<buf>) instead of being re-read from memory
 * another lane may not have written yet. Kernel-local buffers are always
 * registers. When the kernel writes in place over memory it also reads
 * (scheduler slots shared by two of its buffers), a barrier precedes each
 * outer-level store so that no lane still reads what lane 0 overwrites.
 */
#include "cuda_cg_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- member analysis ------------------------------------------------------------ */

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

static bool op_ok(const cug* g, const ir_body* b, uint32_t i) {
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
  const ir_body* b;
  const uint8_t* val;  /* stage of each op's value (IR_REDUCE: POST) */
  uint32_t upto;
  uint8_t st;
} stage_walk;

/* Raises the stage to that of the indirect op defining symbol `var`. */
static void stage_of_var(void* u, size_t var) {
  stage_walk* w = u;
  for (uint32_t j = 0; j < w->upto; j++) {
    const ir_op* d = &w->b->ops[j];
    if (d->opcode == IR_INDIRECT && d->sym && (size_t)d->sym->value == var && w->val[j] > w->st)
      w->st = w->val[j];
  }
}

static ptc_status reduction_stages(cu_member* mb) {
  const ir_body* b = &mb->node->body;
  uint8_t* val = calloc(b->n ? b->n : 1, 1);
  if (!val) return ptc_status_oom();
  ptc_status s = PTC_OK;
  for (uint32_t i = 0; i < b->n && !s; i++) {
    const ir_op* op = &b->ops[i];
    stage_walk w = {b, val, i, op->inner ? CU_LOOP : CU_PRE};
    for (int a = 0; a < 3; a++)
      if (op->args[a] >= 0 && val[op->args[a]] > w.st) w.st = val[op->args[a]];
    cug_index_vars(op->index, stage_of_var, &w);
    cug_index_vars(op->bound_expr, stage_of_var, &w);
    if (op->opcode == IR_REDUCE) {
      mb->stage[i] = CU_LOOP;
      val[i] = CU_POST;
      if (w.st == CU_POST)
        s = PTC_ERR(INTERNAL, "cuda codegen: node %d reduces a reduced value", mb->node_index);
      continue;
    }
    if (op->inner && w.st == CU_POST && mb->live[i])
      s = PTC_ERR(INTERNAL, "cuda codegen: node %d uses a reduced value inside its reduction loop",
                  mb->node_index);
    mb->stage[i] = val[i] = w.st;
  }
  free(val);
  return s;
}

static ptc_status member_init(cug* g, uint32_t m, cu_member* mb) {
  const sched_kernel* k = g->k;
  if (k->nodes[m] >= g->p->nodes.len)
    return PTC_ERR(INTERNAL, "cuda codegen: kernel %s names node %u of %zu", k->name, k->nodes[m],
                   g->p->nodes.len);
  mb->node = ir_node_at(g->p, k->nodes[m]);
  mb->node_index = (int32_t)k->nodes[m];
  const ir_node* n = mb->node;
  if (n->kind == IR_REDUCTION)
    mb->kind = CU_MEM_REDUCTION;
  else if (n->kind == IR_POINTWISE)
    mb->kind = k->node_inner && k->node_inner[m] && k->n_rranges ? CU_MEM_INNER : CU_MEM_OUTER;
  else
    return PTC_ERR(INTERNAL, "cuda codegen: extern node %d inside kernel %s", mb->node_index,
                   k->name);
  uint32_t want = mb->kind == CU_MEM_INNER ? k->n_ranges + k->n_rranges : k->n_ranges;
  if (n->n_ranges != want || (mb->kind == CU_MEM_REDUCTION && n->n_rranges != k->n_rranges) ||
      !ir_body_ok(&n->body))
    return PTC_ERR(INTERNAL, "cuda codegen: node %d does not fit the loops of kernel %s",
                   mb->node_index, k->name);
  for (uint32_t i = 0; i < n->body.n; i++)
    if (!op_ok(g, &n->body, i))
      return PTC_ERR(INTERNAL, "cuda codegen: node %d: op %u (%s) is malformed", mb->node_index, i,
                     ir_opcode_name((ir_opcode)n->body.ops[i].opcode));
  uint32_t cnt = n->body.n ? n->body.n : 1;
  mb->stage = calloc(cnt, 1);
  mb->live = calloc(cnt, 1);
  if (!mb->stage || !mb->live) return ptc_status_oom();
  mark_live(&n->body, mb->live);
  if (mb->kind == CU_MEM_REDUCTION) return reduction_stages(mb);
  memset(mb->stage, mb->kind == CU_MEM_INNER ? CU_LOOP : CU_PRE, n->body.n);
  return PTC_OK;
}

ptc_status cug_members_init(cug* g) {
  g->members = calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof *g->members);
  if (!g->members) return ptc_status_oom();
  for (uint32_t m = 0; m < g->k->n_nodes; m++) PTC_TRY(member_init(g, m, &g->members[m]));
  return PTC_OK;
}

void cug_members_free(cug* g) {
  if (!g->members) return;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    free(g->members[m].stage);
    free(g->members[m].live);
  }
  free(g->members);
  g->members = NULL;
}

void cug_member_begin(cug* g, uint32_t m) {
  g->member = m;
  g->cur = &g->members[m];
  g->node_index = g->cur->node_index;
  g->rename_x = g->cur->kind == CU_MEM_INNER;
}

/* ---- statements ---------------------------------------------------------------------- */

/* A float32 sin / cos (not an f16/bf16 op's, IR_MATH_LOWP). */
static bool fast_trig_op(const ir_op* op) {
  return (op->opcode == IR_SIN || op->opcode == IR_COS) && op->dtype == PTC_F32 &&
         !(op->i & IR_MATH_LOWP);
}

static const ir_op* op_at(const cug* g, ir_val v) { return &g->cur->node->body.ops[v]; }

static void tname(const cug* g, ir_val v, char* out, size_t cap) {
  snprintf(out, cap, "t%u_%d", g->member, (int)v);
}

static void decl_begin(cug* g, ptc_strbuf* sb, ir_val i, int32_t dtype) {
  char t[32];
  tname(g, i, t, sizeof t);
  for (int d = 0; d < g->indent; d++) ptc_sb_append(sb, "  ");
  ptc_sb_printf(sb, "const %s %s = ", cu_ctype(cu_cls_of(dtype)), t);
}

static bool is_local(const cug* g, int32_t buf) { return g->s->buf_home[buf] == SCHED_HOME_LOCAL; }
static bool reduction_layout(const cug* g) { return g->layout != CUDA_LAYOUT_POINTWISE; }

/* Whether op's index prints as `key` (the index text a plan recorded). */
static bool index_is(cug* g, const ir_op* op, const char* key) {
  ptc_strbuf idx;
  ptc_sb_init(&idx);
  cug_index(g, &idx, op->index);
  bool hit = idx.data && strcmp(idx.data, key) == 0;
  ptc_sb_free(&idx);
  return hit;
}

bool cug_cache_hit(cug* g, const ir_op* op) {
  if (!g->in_loop || !g->cache[op->buf] || !g->cache_key[op->buf]) return false;
  return index_is(g, op, g->cache_key[op->buf]);
}

bool cug_rvec_hit(cug* g, const ir_op* op) {
  if (!g->rvec_loop || !g->in_loop || !g->rvec_buf[op->buf] || !g->rvec_key[op->buf]) return false;
  return index_is(g, op, g->rvec_key[op->buf]);
}

/* A load of a vectorised pointwise kernel's body that reads vix_b<id>[e]
 * (cug.vec_inner). */
static bool vec_inner_hit(cug* g, const ir_op* op) {
  if (!g->rvec_buf[op->buf] || !g->rvec_key[op->buf] || op->args[0] >= 0) return false;
  return index_is(g, op, g->rvec_key[op->buf]);
}

/* The register of a persistent row's element in the current loop step. */
static const char* cache_slot(const cug* g) { return g->rvec > 1 ? "it * VR + e" : "it"; }

/* The raw (storage-typed) value of a global load in the loop: the vector
 * staging register when the buffer is read as a vector, else memory. */
static void global_raw(cug* g, ptc_strbuf* raw, const ir_op* op, const char* name) {
  const ir_buffer* b = ir_buf(g->p, op->buf);
  if (cug_rvec_hit(g, op)) {
    char arr[40];
    snprintf(arr, sizeof arr, "vin_%s", name);
    cu_load(raw, b->dtype, arr, "e");
    return;
  }
  ptc_strbuf idx;
  ptc_sb_init(&idx);
  cug_index(g, &idx, op->index);
  cu_load(raw, b->dtype, name, idx.data ? idx.data : "0");
  ptc_sb_free(&idx);
}

static void load_value(cug* g, ptc_strbuf* sb, const ir_op* op) {
  const ir_buffer* b = ir_buf(g->p, op->buf);
  char name[32];
  cug_buf_name(g, op->buf, name, sizeof name);
  ptc_strbuf raw;
  ptc_sb_init(&raw);
  if (g->in_reg[op->buf]) {
    ptc_sb_printf(&raw, "v_%s", name);
  } else if (g->cache[op->buf] == 2 && cug_cache_hit(g, op)) {
    ptc_sb_printf(&raw, "c_%s[%s]", name, cache_slot(g));
  } else if (g->vec_mode && g->vec_buf[op->buf] && op->index == g->flat) {
    char arr[40];
    snprintf(arr, sizeof arr, "vin_%s", name);
    cu_load(&raw, b->dtype, arr, "e");
  } else if (g->vec_mode && g->vec_inner && vec_inner_hit(g, op)) {
    char arr[40];
    snprintf(arr, sizeof arr, "vix_%s", name);
    cu_load(&raw, b->dtype, arr, "e");
  } else if (is_local(g, op->buf)) {
    cug_fail(g, PTC_ERR(INTERNAL, "cuda codegen: kernel-local %s is read before it is written",
                        b->name));
    ptc_sb_append(&raw, "0");
  } else {
    if (reduction_layout(g) && g->outer_reread[op->buf] && !g->in_loop)
      cug_fail(g, PTC_ERR(INTERNAL, "cuda codegen: kernel %s reads %s before storing it",
                          g->k->name, b->name));
    global_raw(g, &raw, op, name);
  }
  /* register copies hold the buffer's storage value in its class */
  cu_conv(sb, b->dtype, op->dtype, raw.data ? raw.data : "0");
  ptc_sb_free(&raw);
}

static void literal_of(ptc_strbuf* sb, int32_t dtype, double f, int64_t i) {
  ir_op k;
  memset(&k, 0, sizeof k);
  k.dtype = dtype;
  k.f = f;
  cu_cls c = cu_cls_of(dtype);
  k.i = c == CU_BOOL ? (f != 0 || i != 0) : i;
  cu_const(sb, &k);
}

static void emit_load(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  if (g->cache[op->buf] == 1 && op->args[0] < 0 && !g->in_reg[op->buf] && cug_cache_hit(g, op)) {
    /* first read of a persistent row: fill this lane's registers */
    char name[32];
    cug_buf_name(g, op->buf, name, sizeof name);
    ptc_strbuf raw;
    ptc_sb_init(&raw);
    global_raw(g, &raw, op, name);
    cug_line(g, sb, "c_%s[%s] = %s;", name, cache_slot(g), raw.data ? raw.data : "0");
    ptc_sb_free(&raw);
    g->cache[op->buf] = 2;
  }
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

static const char* rand_scale(int32_t dt) {
  switch (dt) {
    case PTC_F64: return "9007199254740992.0";
    case PTC_F16: return "2048.0";
    case PTC_BF16: return "256.0";
    default: return "16777216.0";
  }
}

static void emit_rand(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  ptc_strbuf e;
  ptc_sb_init(&e);
  ptc_sb_printf(&e, "%s(seed, (i64)%lld, (i64)(", op->opcode == IR_RAND ? "ptc_rand" : "ptc_randn",
                (long long)op->i);
  cug_index(g, &e, op->index);
  ptc_sb_append(&e, ")");
  if (op->opcode == IR_RAND) ptc_sb_printf(&e, ", %s", rand_scale(op->dtype));
  ptc_sb_append(&e, ")");
  decl_begin(g, sb, i, op->dtype);
  cu_conv(sb, PTC_F64, op->dtype, e.data ? e.data : "0");
  ptc_sb_append(sb, ";\n");
  ptc_sb_free(&e);
}

static void emit_index_expr(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  ptc_strbuf e;
  ptc_sb_init(&e);
  ptc_sb_append(&e, "(i64)(");
  cug_index(g, &e, op->index);
  ptc_sb_append(&e, ")");
  decl_begin(g, sb, i, op->dtype);
  cu_conv(sb, PTC_I64, op->dtype, e.data ? e.data : "0");
  ptc_sb_append(sb, ";\n");
  ptc_sb_free(&e);
}

/* The bound of an indirect op as an i64 expression. */
static void indirect_bound(cug* g, ptc_strbuf* sb, const ir_op* op) {
  if (op->bound_expr) {
    ptc_sb_append(sb, "(i64)(");
    cug_index(g, sb, op->bound_expr);
    ptc_sb_append(sb, ")");
  } else {
    cu_int_lit(sb, op->bound);
  }
}

static void emit_indirect(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char t[32], a[32];
  tname(g, i, t, sizeof t);
  tname(g, op->args[0], a, sizeof a);
  ptc_strbuf bnd;
  ptc_sb_init(&bnd);
  indirect_bound(g, &bnd, op);
  const char* B = bnd.data ? bnd.data : "0";
  cug_line(g, sb, "const i64 %sr = (i64)%s;", t, a);
  cug_line(g, sb, "i64 %s = %sr < 0 ? ptc_iadd(%sr, %s) : %sr;", t, t, t, B, t);
  cug_line(g, sb, "if ((u64)%s >= (u64)%s) {", t, B);
  cug_line(g, sb, "  ptc_fail(ke, PTC_KERR_INDIRECT, %d, %sr, %s);", g->node_index, t, B);
  cug_line(g, sb, "  %s = 0;", t);
  cug_line(g, sb, "}");
  ptc_sb_free(&bnd);
  g->uses_err = true;
  if (op->sym && (size_t)op->sym->value < g->n_vars) {
    cu_var* v = &g->vars[op->sym->value];
    v->role = CU_VAR_INDIRECT;
    snprintf(v->name, sizeof v->name, "%s", t);
  }
}

/* The guard of a global store in the reduction layouts. */
static const char* store_guard(const cug* g) {
  if (!reduction_layout(g)) return NULL;
  return g->in_loop ? "xvalid" : "xvalid && lane == 0";
}

static void emit_store(cug* g, ptc_strbuf* sb, const ir_op* op) {
  const ir_buffer* b = ir_buf(g->p, op->buf);
  const ir_op* v = op_at(g, op->args[0]);
  char val[32], name[32];
  tname(g, op->args[0], val, sizeof val);
  cug_buf_name(g, op->buf, name, sizeof name);
  if (g->cache[op->buf] && cug_cache_hit(g, op)) {
    /* a persistent row: the registers hold the value as stored */
    ptc_strbuf conv;
    ptc_sb_init(&conv);
    cu_conv(&conv, v->dtype, b->dtype, val);
    cug_line(g, sb, "c_%s[%s] = %s;", name, cache_slot(g), conv.data ? conv.data : "0");
    ptc_sb_free(&conv);
    g->cache[op->buf] = 2;
    if (g->no_store[op->buf]) return;
  }
  bool reg = is_local(g, op->buf) || (reduction_layout(g) && !g->in_loop && g->outer_reread[op->buf]);
  if (reg) {
    /* the register copy holds the value as stored (rounded to the dtype) */
    ptc_strbuf conv;
    ptc_sb_init(&conv);
    cu_conv(&conv, v->dtype, b->dtype, val);
    cug_line(g, sb, "const %s v_%s = %s;", cu_ctype(cu_cls_of(b->dtype)), name,
             conv.data ? conv.data : "0");
    ptc_sb_free(&conv);
    g->in_reg[op->buf] = true;
    if (is_local(g, op->buf)) return;
  }
  int32_t via = (b->dtype == PTC_F16 || b->dtype == PTC_BF16) ? PTC_F32 : b->dtype;
  int32_t from = v->dtype;
  if (via == PTC_F32 && via != b->dtype && v->opcode == IR_TO_DTYPE && v->dtype == b->dtype &&
      v->args[0] >= 0 && op_at(g, v->args[0])->dtype == PTC_F32 &&
      g->cur->stage[v->args[0]] == g->cur->stage[op->args[0]]) {
    /* an f32 value rounded to the stored f16/bf16 right before the store:
     * encode the f32 value (one rounding instead of round, widen, round) */
    tname(g, v->args[0], val, sizeof val);
    from = PTC_F32;
  }
  ptc_strbuf conv, line;
  ptc_sb_init(&conv);
  ptc_sb_init(&line);
  cu_conv(&conv, from, via, val);
  const char* guard = store_guard(g);
  if (g->inplace_hazard && reduction_layout(g) && !g->in_loop) cug_line(g, sb, "__syncthreads();");
  if (guard) ptc_sb_printf(&line, "if (%s) ", guard);
  if (g->in_loop && cug_rvec_hit(g, op)) {
    /* a vector row store: staged per element, written after the step */
    ptc_sb_free(&line);
    ptc_sb_init(&line);
    ptc_sb_printf(&line, "vout_%s[e] = ", name);
  } else if (g->vec_mode && g->vec_buf[op->buf] && op->index == g->flat) {
    ptc_sb_printf(&line, "vout_%s[e] = ", name);
  } else {
    ptc_sb_printf(&line, "%s[", name);
    cug_index(g, &line, op->index);
    ptc_sb_append(&line, "] = ");
  }
  cu_encode(&line, b->dtype, conv.data ? conv.data : "0");
  cug_line(g, sb, "%s;", line.data ? line.data : "");
  ptc_sb_free(&conv);
  ptc_sb_free(&line);
}

/* Whether value v of the current member is the same for every element of
 * the row (constants, values held in v_<buf> registers, math of those). */
static bool row_invariant(cug* g, ir_val v, int depth) {
  if (v < 0 || depth > 8) return false;
  const ir_op* op = op_at(g, v);
  if (op->opcode == IR_CONST) return true;
  if (op->opcode == IR_LOAD) return op->args[0] < 0 && g->in_reg[op->buf];
  if (op->opcode < IR_NEG || op->opcode > IR_TO_DTYPE) return false;
  for (int a = 0; a < 3; a++)
    if (op->args[a] >= 0 && !row_invariant(g, op->args[a], depth + 1)) return false;
  return true;
}

static bool is_lowp(int32_t dt) { return dt == PTC_F16 || dt == PTC_BF16; }

/* An f32 division x / d inside a row loop whose divisor is row-invariant
 * and whose every use rounds it to f16/bf16 (a conversion, or a store into
 * an f16/bf16 buffer) is emitted as x * (1 / d): the reciprocal is hoisted
 * out of the loop, one multiply an element instead of a division (softmax's
 * normalisation). The product is within 1.5 float ulp of the quotient, far
 * below the 2^-9 / 2^-12 relative rounding of the stored value (results
 * differ from the rounded quotient by one f16/bf16 ulp for a few elements
 * in 10^4). PTC_CUDA_RCP=0 keeps the division (knob read at code
 * generation). */
static bool div_as_rcp(cug* g, ir_val i, const ir_op* op, const int32_t* dts) {
  if (op->opcode != IR_DIV || op->dtype != PTC_F32 || dts[0] != PTC_F32 || dts[1] != PTC_F32)
    return false;
  if (!g->in_loop || !row_invariant(g, op->args[1], 0)) return false;
  const char* e = getenv("PTC_CUDA_RCP");
  if (e && !strcmp(e, "0")) return false;
  const ir_body* b = &g->cur->node->body;
  bool used = false;
  for (uint32_t j = (uint32_t)i + 1; j < b->n; j++) {
    const ir_op* u = &b->ops[j];
    if (!g->cur->live[j] || (u->args[0] != i && u->args[1] != i && u->args[2] != i)) continue;
    used = true;
    if (u->opcode == IR_TO_DTYPE && is_lowp(u->dtype)) continue;
    if (u->opcode == IR_STORE && u->args[0] == i && is_lowp(ir_buf(g->p, u->buf)->dtype)) continue;
    return false;
  }
  return used;
}

static void emit_math(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
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
  snprintf(ctx_arg, sizeof ctx_arg, "ke, %d", g->node_index);
  ptc_strbuf e;
  ptc_sb_init(&e);
  bool ok = true;
  /* the exponent of a pow, through conversions (2 is exact in every dtype) */
  const ir_op* ex = op->opcode == IR_POW && op->args[1] >= 0 ? op_at(g, op->args[1]) : NULL;
  while (ex && ex->opcode == IR_TO_DTYPE && ex->args[0] >= 0) ex = op_at(g, ex->args[0]);
  bool square = ex && ex->opcode == IR_CONST &&
                (cu_cls_of(ex->dtype) == CU_F32 || cu_cls_of(ex->dtype) == CU_F64
                     ? ex->f == 2.0
                     : cu_cls_of(ex->dtype) == CU_INT && ex->i == 2);
  if (op->opcode == IR_TO_DTYPE)
    cu_conv(&e, dts[0], op->dtype, args[0]);
  else if (div_as_rcp(g, i, op, dts))
    ptc_sb_printf(&e, "(%s * (1.0f / %s))", args[0], args[1]);
  else if (square && cu_cls_of(op->dtype) == CU_F32 && dts[0] == op->dtype)
    /* x ** 2 as x * x (PyTorch squares too; powf costs ~20 instructions) */
    ptc_sb_printf(&e, "(%s * %s)", args[0], args[0]);
  else if (g->fast_trig && fast_trig_op(op) && dts[0] == PTC_F32)
    /* vector path: the prelude's short form; th: its range flag (beyond
     * PTC_TRIG_V_MAX the chunk is recomputed by the scalar path, whose sinf /
     * cosf are out of line: one copy, it is the cold path) */
    ptc_sb_printf(&e, g->vec_mode ? "ptc_%s_v(%s, th)" : "ptc_%s_huge(%s)",
                  op->opcode == IR_SIN ? "sin" : "cos", args[0]);
  else
    ok = cu_math(&e, op, args, dts, ctx_arg, &g->uses_err);
  if (!ok)
    cug_fail(g, PTC_ERR(UNIMPLEMENTED, "cuda codegen: node %d: %s is not supported for %s",
                        g->node_index, ir_opcode_name((ir_opcode)op->opcode),
                        ptc_dtype_name(dts[0])));
  decl_begin(g, sb, i, op->dtype);
  ptc_sb_append(sb, e.data ? e.data : "0");
  ptc_sb_append(sb, ";\n");
  ptc_sb_free(&e);
}

static void emit_op(cug* g, ptc_strbuf* sb, ir_val i) {
  const ir_op* op = op_at(g, i);
  switch (op->opcode) {
    case IR_LOAD: emit_load(g, sb, i, op); return;
    case IR_CONST:
      decl_begin(g, sb, i, op->dtype);
      cu_const(sb, op);
      ptc_sb_append(sb, ";\n");
      return;
    case IR_INDEX_EXPR: emit_index_expr(g, sb, i, op); return;
    case IR_RAND:
    case IR_RANDN: emit_rand(g, sb, i, op); return;
    case IR_INDIRECT: emit_indirect(g, sb, i, op); return;
    case IR_STORE: emit_store(g, sb, op); return;
    case IR_REDUCE: return; /* accumulators: below */
    default: emit_math(g, sb, i, op); return;
  }
}

void cug_emit_stage(cug* g, ptc_strbuf* sb, cu_stage stage) {
  const ir_body* b = &g->cur->node->body;
  g->in_loop = stage == CU_LOOP;
  for (uint32_t i = 0; i < b->n; i++)
    if (g->cur->live[i] && g->cur->stage[i] == stage) emit_op(g, sb, (ir_val)i);
  g->in_loop = false;
}

/* ---- reductions -------------------------------------------------------------------------- */

static bool is_arg(const ir_op* op) { return op->rtype == IR_R_ARGMAX || op->rtype == IR_R_ARGMIN; }

/* Accumulator type: float sums for f32/f16/bf16 (lanes and a tree keep the
 * error small), double for f64, wrapping u64 for integers. */
static const char* acc_type(const cug* g, const ir_op* op) {
  cu_cls rc = cu_cls_of(op->dtype);
  switch (op->rtype) {
    case IR_R_SUM:
    case IR_R_PROD: return rc == CU_F32 ? "float" : rc == CU_F64 ? "double" : "u64";
    case IR_R_MAX:
    case IR_R_MIN: return rc == CU_F32 ? "float" : rc == CU_F64 ? "double" : "i64";
    case IR_R_ARGMAX:
    case IR_R_ARGMIN: {
      cu_cls vc = cu_cls_of(op_at(g, op->args[0])->dtype);
      return vc == CU_F32 ? "float" : vc == CU_F64 ? "double" : "i64";
    }
    default: return "u8";
  }
}

static const char* acc_init(const ir_op* op, const char* type) {
  bool fl = type[0] == 'f' || type[0] == 'd';
  bool dbl = type[0] == 'd';
  switch (op->rtype) {
    case IR_R_SUM: return fl ? (dbl ? "0.0" : "0.0f") : "0";
    case IR_R_PROD: return fl ? (dbl ? "1.0" : "1.0f") : "1";
    case IR_R_MAX: return fl ? (dbl ? "(-PTC_INF_D)" : "(-PTC_INF_F)") : "PTC_I64_MIN";
    case IR_R_MIN: return fl ? (dbl ? "PTC_INF_D" : "PTC_INF_F") : "PTC_I64_MAX";
    case IR_R_ALL: return "(u8)1";
    case IR_R_ANY: return "(u8)0";
    default: return fl ? (dbl ? "0.0" : "0.0f") : "0";
  }
}

static const char* combine_op(const ir_op* op) {
  switch (op->rtype) {
    case IR_R_SUM: return "ptc_op_sum";
    case IR_R_PROD: return "ptc_op_prod";
    case IR_R_MAX: return "ptc_op_max";
    case IR_R_MIN: return "ptc_op_min";
    case IR_R_ANY: return "ptc_op_or";
    case IR_R_ALL: return "ptc_op_and";
    default: return NULL;
  }
}

static void acc_name(const cug* g, bool index, ir_val i, char* out, size_t cap) {
  snprintf(out, cap, "a%s%u_%d", index ? "i" : "", g->member, (int)i);
}

typedef void (*reduce_fn)(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op);

static void for_each_reduce(cug* g, ptc_strbuf* sb, reduce_fn fn) {
  const ir_body* b = &g->cur->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (g->cur->live[i] && b->ops[i].opcode == IR_REDUCE) fn(g, sb, (ir_val)i, &b->ops[i]);
}

static void decl_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32];
  const char* type = acc_type(g, op);
  acc_name(g, false, i, a, sizeof a);
  cug_line(g, sb, "%s %s = %s;", type, a, acc_init(op, type));
  if (is_arg(op)) {
    acc_name(g, true, i, a, sizeof a);
    cug_line(g, sb, "i64 %s = -1;", a);
  }
}

void cug_emit_acc_decls(cug* g, ptc_strbuf* sb) { for_each_reduce(g, sb, decl_one); }

/* The folded value: arg0 converted for the accumulator. */
static void reduce_input(cug* g, ptc_strbuf* sb, const ir_op* op) {
  const ir_op* x = op_at(g, op->args[0]);
  char t[32];
  tname(g, op->args[0], t, sizeof t);
  switch (op->rtype) {
    case IR_R_ANY:
    case IR_R_ALL: ptc_sb_printf(sb, "(u8)(%s != 0)", t); return;
    case IR_R_ARGMAX:
    case IR_R_ARGMIN: ptc_sb_append(sb, t); return;
    default: {
      cu_cls rc = cu_cls_of(op->dtype);
      int32_t to = rc == CU_BOOL ? PTC_I64 : op->dtype;
      if (op->rtype <= IR_R_PROD && (rc == CU_INT || rc == CU_BOOL)) {
        ptc_sb_append(sb, "(u64)");
        to = PTC_I64;
      }
      cu_conv(sb, x->dtype, to, t);
      return;
    }
  }
}

static void update_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32], ai[32];
  acc_name(g, false, i, a, sizeof a);
  acc_name(g, true, i, ai, sizeof ai);
  ptc_strbuf v;
  ptc_sb_init(&v);
  reduce_input(g, &v, op);
  const char* vt = v.data ? v.data : "0";
  const char* type = acc_type(g, op);
  if (is_arg(op)) {
    char t[32];
    tname(g, op->args[1], t, sizeof t);
    ptc_strbuf idx;
    ptc_sb_init(&idx);
    cu_conv(&idx, op_at(g, op->args[1])->dtype, PTC_I64, t);
    cug_line(g, sb, "if (ptc_arg_better((%s)%s, %s, %s, %s, %s)) {", type, vt,
             idx.data ? idx.data : "0", a, ai, op->rtype == IR_R_ARGMAX ? "true" : "false");
    cug_line(g, sb, "  %s = (%s)%s;", a, type, vt);
    cug_line(g, sb, "  %s = %s;", ai, idx.data ? idx.data : "0");
    cug_line(g, sb, "}");
    ptc_sb_free(&idx);
  } else {
    cug_line(g, sb, "%s = %s()(%s, (%s)(%s));", a, combine_op(op), a, type, vt);
  }
  ptc_sb_free(&v);
}

void cug_emit_acc_updates(cug* g, ptc_strbuf* sb) { for_each_reduce(g, sb, update_one); }

/* Shared-memory stage of a combine: every lane of a point publishes its
 * value at sm[slot][pos]; after a barrier each lane folds the npos values
 * of its point in order (identical results in every lane). */
static void combine_shared(cug* g, ptc_strbuf* sb, const ir_op* op, const char* a, const char* ai,
                           uint32_t npos, const char* pos) {
  const char* type = acc_type(g, op);
  uint32_t id = g->n_combines++;
  /* COL: the slots of a warp differ, so a padded row keeps their reads of
   * the same q in distinct banks */
  uint32_t stride = g->layout == CUDA_LAYOUT_COL ? npos + 1 : npos;
  uint32_t cells = g->slots * stride;
  ptc_sb_printf(&g->shared, "  __shared__ %s smc%u[%u];\n", type, id, cells);
  if (is_arg(op)) ptc_sb_printf(&g->shared, "  __shared__ i64 smi%u[%u];\n", id, cells);
  cug_line(g, sb, "smc%u[slot * %u + %s] = %s;", id, stride, pos, a);
  if (is_arg(op)) cug_line(g, sb, "smi%u[slot * %u + %s] = %s;", id, stride, pos, ai);
  cug_line(g, sb, "__syncthreads();");
  cug_line(g, sb, "%s = smc%u[slot * %u];", a, id, stride);
  if (is_arg(op)) cug_line(g, sb, "%s = smi%u[slot * %u];", ai, id, stride);
  cug_line(g, sb, "for (int q = 1; q < %u; q++) {", npos);
  if (is_arg(op)) {
    cug_line(g, sb, "  const %s ov = smc%u[slot * %u + q];", type, id, stride);
    cug_line(g, sb, "  const i64 oi = smi%u[slot * %u + q];", id, stride);
    cug_line(g, sb, "  if (ptc_arg_better(ov, oi, %s, %s, %s)) { %s = ov; %s = oi; }", a, ai,
             op->rtype == IR_R_ARGMAX ? "true" : "false", a, ai);
  } else {
    cug_line(g, sb, "  %s = %s()(%s, smc%u[slot * %u + q]);", a, combine_op(op), a, id, stride);
  }
  cug_line(g, sb, "}");
  cug_line(g, sb, "__syncthreads();");
}

static void combine_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  if (g->lanes <= 1) return;
  char a[32], ai[32];
  acc_name(g, false, i, a, sizeof a);
  acc_name(g, true, i, ai, sizeof ai);
  if (g->layout == CUDA_LAYOUT_COL) {
    combine_shared(g, sb, op, a, ai, g->lanes, "lane");
    return;
  }
  if (is_arg(op))
    cug_line(g, sb, "ptc_warp_arg(%s, %s, %s);", a, ai, op->rtype == IR_R_ARGMAX ? "true" : "false");
  else
    cug_line(g, sb, "%s = ptc_warp_all<%s>(%s);", a, combine_op(op), a);
  if (g->lanes > 32) combine_shared(g, sb, op, a, ai, g->lanes / 32, "(lane >> 5)");
}

void cug_emit_acc_combine(cug* g, ptc_strbuf* sb) { for_each_reduce(g, sb, combine_one); }

static void finalize_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32], ai[32], t[32], w[64];
  acc_name(g, false, i, a, sizeof a);
  acc_name(g, true, i, ai, sizeof ai);
  tname(g, i, t, sizeof t);
  ptc_strbuf v;
  ptc_sb_init(&v);
  cu_cls rc = cu_cls_of(op->dtype);
  const char* type = acc_type(g, op);
  if (is_arg(op)) {
    cu_conv(&v, PTC_I64, op->dtype, ai);
  } else if (op->rtype == IR_R_ANY || op->rtype == IR_R_ALL) {
    cu_conv(&v, PTC_BOOL, op->dtype, a);
  } else if (rc == CU_INT || rc == CU_BOOL) {
    snprintf(w, sizeof w, "(i64)%s", a);
    cu_conv(&v, PTC_I64, op->dtype, w);
  } else if (type[0] == 'd') {
    cu_conv(&v, PTC_F64, op->dtype, a);
  } else {
    ptc_sb_append(&v, a);
  }
  cug_line(g, sb, "const %s %s = %s;", cu_ctype(rc), t, v.data ? v.data : "0");
  ptc_sb_free(&v);
}

void cug_emit_acc_finalize(cug* g, ptc_strbuf* sb) { for_each_reduce(g, sb, finalize_one); }

/* ---- split reductions: the partials of a row's chunks ---------------------------------- */

static void publish_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32], ai[32];
  acc_name(g, false, i, a, sizeof a);
  acc_name(g, true, i, ai, sizeof ai);
  uint32_t cap = g->split_rows * g->split;
  /* the workspace: module globals, one slot per (row, chunk) */
  ptc_sb_printf(&g->globals, "__device__ %s %s_ws%s[%u];\n", acc_type(g, op), g->kname, a, cap);
  if (is_arg(op)) ptc_sb_printf(&g->globals, "__device__ i64 %s_ws%s[%u];\n", g->kname, ai, cap);
  cug_line(g, sb, "if (lane == 0) %s_ws%s[%s] = %s;", g->kname, a, g->split_at, a);
  if (is_arg(op)) cug_line(g, sb, "if (lane == 0) %s_ws%s[%s] = %s;", g->kname, ai, g->split_at, ai);
}

static void fold_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32], ai[32];
  acc_name(g, false, i, a, sizeof a);
  acc_name(g, true, i, ai, sizeof ai);
  const char* type = acc_type(g, op);
  cug_line(g, sb, "%s = %s;", a, acc_init(op, type));
  if (is_arg(op)) cug_line(g, sb, "%s = -1;", ai);
  char qs[48];
  snprintf(qs, sizeof qs, "%s%s", g->split_qstride ? " * " : "",
           g->split_qstride ? g->split_qstride : "");
  char pv[160], pi[160];
  if (g->split_fold_fast) {
    /* __ldcg (L2, not a stale L1 line) in a loop of a static trip count,
     * unrolled: the loads of several partials in flight at once (the
     * volatile loads of a dynamic loop wait for each other) */
    uint32_t kq = (g->split + g->lanes - 1) / g->lanes;
    cug_line(g, sb, "#pragma unroll %u", kq <= 8 ? kq : g->split_fold_fast);
    cug_line(g, sb, "for (int k = 0; k < %u; k++) {", kq);
    cug_line(g, sb, "  const IT q = (IT)lane + (IT)k * (IT)%u;", g->lanes);
    cug_line(g, sb, "  if (q >= %s) continue;", g->split_n);
    snprintf(pv, sizeof pv, "__ldcg(&%s_ws%s[%s + q%s])", g->kname, a, g->split_at, qs);
    snprintf(pi, sizeof pi, "__ldcg(&%s_ws%s[%s + q%s])", g->kname, ai, g->split_at, qs);
  } else {
    /* volatile: the other blocks' partials, not a stale L1 line */
    cug_line(g, sb, "for (IT q = (IT)lane; q < %s; q += (IT)%u) {", g->split_n, g->lanes);
    snprintf(pv, sizeof pv, "*(volatile %s*)&%s_ws%s[%s + q%s]", type, g->kname, a, g->split_at, qs);
    snprintf(pi, sizeof pi, "*(volatile i64*)&%s_ws%s[%s + q%s]", g->kname, ai, g->split_at, qs);
  }
  cug_line(g, sb, "  const %s pv = %s;", type, pv);
  if (is_arg(op)) {
    cug_line(g, sb, "  const i64 pi = %s;", pi);
    cug_line(g, sb, "  if (ptc_arg_better(pv, pi, %s, %s, %s)) { %s = pv; %s = pi; }", a, ai,
             op->rtype == IR_R_ARGMAX ? "true" : "false", a, ai);
  } else {
    cug_line(g, sb, "  %s = %s()(%s, pv);", a, combine_op(op), a);
  }
  cug_line(g, sb, "}");
}

void cug_emit_acc_split(cug* g, ptc_strbuf* sb, bool publish, const char* at, const char* n) {
  g->split_at = at;
  g->split_n = n;
  for_each_reduce(g, sb, publish ? publish_one : fold_one);
  g->split_at = g->split_n = NULL;
}

/* ---- vector columns: accumulator arrays ------------------------------------------------ */

static void cvec_decl_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32];
  const char* type = acc_type(g, op);
  acc_name(g, false, i, a, sizeof a);
  cug_line(g, sb, "%s %s_c[VR];", type, a);
  cug_line(g, sb, "#pragma unroll");
  cug_line(g, sb, "for (int e = 0; e < VR; e++) %s_c[e] = %s;", a, acc_init(op, type));
  if (is_arg(op)) {
    acc_name(g, true, i, a, sizeof a);
    cug_line(g, sb, "i64 %s_c[VR];", a);
    cug_line(g, sb, "#pragma unroll");
    cug_line(g, sb, "for (int e = 0; e < VR; e++) %s_c[e] = -1;", a);
  }
}

static void cvec_bind_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32];
  acc_name(g, false, i, a, sizeof a);
  cug_line(g, sb, "%s& %s = %s_c[e];", acc_type(g, op), a, a);
  if (is_arg(op)) {
    acc_name(g, true, i, a, sizeof a);
    cug_line(g, sb, "i64& %s = %s_c[e];", a, a);
  }
}

void cug_emit_acc_cvec(cug* g, ptc_strbuf* sb, bool decl) {
  for_each_reduce(g, sb, decl ? cvec_decl_one : cvec_bind_one);
}

static void cvec_comb_one(cug* g, ptc_strbuf* sb, ir_val i, const ir_op* op) {
  char a[32], ai[32];
  acc_name(g, false, i, a, sizeof a);
  acc_name(g, true, i, ai, sizeof ai);
  const char* type = acc_type(g, op);
  uint32_t stride = g->lanes + 1; /* padded: a warp's slots read distinct banks */
  if (g->cvec_phase != 1) {
    uint32_t id = g->cvec_phase == 2 ? g->cvec_comb++ : g->n_combines++;
    if (g->cvec_phase == 0) {
      ptc_sb_printf(&g->shared, "  __shared__ %s smc%u[VR * %u];\n", type, id, g->slots * stride);
      if (is_arg(op))
        ptc_sb_printf(&g->shared, "  __shared__ i64 smi%u[VR * %u];\n", id, g->slots * stride);
    }
    cug_line(g, sb, "#pragma unroll");
    cug_line(g, sb, "for (int e = 0; e < VR; e++) {");
    cug_line(g, sb, "  smc%u[(e * %u + slot) * %u + lane] = %s_c[e];", id, g->slots, stride, a);
    if (is_arg(op)) cug_line(g, sb, "  smi%u[(e * %u + slot) * %u + lane] = %s_c[e];", id, g->slots, stride, ai);
    cug_line(g, sb, "}");
    return;
  }
  uint32_t id = g->cvec_comb++;
  cug_line(g, sb, "#pragma unroll");
  cug_line(g, sb, "for (int e = 0; e < VR; e++) {");
  cug_line(g, sb, "  const int c0 = (e * %u + slot) * %u;", g->slots, stride);
  cug_line(g, sb, "  %s v = smc%u[c0];", type, id);
  if (is_arg(op)) {
    cug_line(g, sb, "  i64 vi = smi%u[c0];", id);
    cug_line(g, sb, "  for (int q = 1; q < %u; q++) {", g->lanes);
    cug_line(g, sb, "    const %s ov = smc%u[c0 + q];", type, id);
    cug_line(g, sb, "    const i64 oi = smi%u[c0 + q];", id);
    cug_line(g, sb, "    if (ptc_arg_better(ov, oi, v, vi, %s)) { v = ov; vi = oi; }",
             op->rtype == IR_R_ARGMAX ? "true" : "false");
    cug_line(g, sb, "  }");
    cug_line(g, sb, "  %s_c[e] = vi;", ai);
  } else {
    cug_line(g, sb, "  for (int q = 1; q < %u; q++) v = %s()(v, smc%u[c0 + q]);", g->lanes,
             combine_op(op), id);
  }
  cug_line(g, sb, "  %s_c[e] = v;", a);
  cug_line(g, sb, "}");
}

void cug_emit_acc_cvec_combine(cug* g, ptc_strbuf* sb, int phase) {
  g->cvec_phase = phase;
  for_each_reduce(g, sb, cvec_comb_one);
}

/* ---- member queries -------------------------------------------------------------------- */

bool cug_member_reads(const cug* g, uint32_t m, int32_t buf) {
  const cu_member* mb = &g->members[m];
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (mb->live[i] && b->ops[i].opcode == IR_LOAD && b->ops[i].buf == buf) return true;
  return false;
}

bool cug_uses_fast_trig(const cug* g) {
  const char* e = getenv("PTC_CUDA_F32_TRIG");
  if (e && strcmp(e, "libm") == 0) return false;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++)
      if (mb->live[i] && fast_trig_op(&mb->node->body.ops[i])) return true;
  }
  return false;
}

bool cug_member_needs_nonempty(const cug* g, uint32_t m) {
  const cu_member* mb = &g->members[m];
  const ir_body* b = &mb->node->body;
  for (uint32_t i = 0; i < b->n; i++) {
    const ir_op* op = &b->ops[i];
    if (mb->live[i] && op->opcode == IR_REDUCE && op->rtype >= IR_R_MAX && op->rtype <= IR_R_ARGMIN)
      return true;
  }
  return false;
}

void cug_numel(cug* g, ptc_strbuf* sb, bool outer, bool inner) {
  ptc_sb_append(sb, "((IT)1");
  for (uint32_t d = 0; outer && d < g->k->n_ranges; d++) {
    ptc_sb_append(sb, "*");
    cug_index(g, sb, g->k->ranges[d]);
  }
  for (uint32_t d = 0; inner && d < g->k->n_rranges; d++) {
    ptc_sb_append(sb, "*");
    cug_index(g, sb, g->k->rranges[d]);
  }
  ptc_sb_append(sb, ")");
}

/* An indirect op whose bound may be <= 0 can never index in range: fail up
 * front (uniformly, before any thread diverges) if it would run at all. */
static void indirect_check(cug* g, const ir_op* op, cu_stage stage) {
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
  cug_numel(g, &n, true, stage == CU_LOOP);
  cug_line(g, &g->checks, "if (%s <= 0 && %s > 0) {", b.data, n.data);
  cug_line(g, &g->checks, "  if (first) ptc_fail(kerr, PTC_KERR_INDIRECT, %d, 0, %s);",
           g->node_index, b.data);
  cug_line(g, &g->checks, "  return;");
  cug_line(g, &g->checks, "}");
  ptc_sb_free(&b);
  ptc_sb_free(&n);
  g->uses_err = true;
}

void cug_member_indirect_checks(cug* g, uint32_t m) {
  cug_member_begin(g, m);
  const ir_body* b = &g->cur->node->body;
  for (uint32_t i = 0; i < b->n; i++)
    if (g->cur->live[i] && b->ops[i].opcode == IR_INDIRECT)
      indirect_check(g, &b->ops[i], (cu_stage)g->cur->stage[i]);
}
