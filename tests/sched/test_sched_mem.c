/* test_sched_mem.c - memory planning: a chain of pointwise nodes without
 * fusion runs in place in one slot; with mismatched read/write indices it
 * ping-pongs between two slots; reuse needs the same byte-size expression
 * (symbolic sizes compare by pointer) and alignment class; in place needs
 * the same dtype and no later reader in the kernel; in-place inside a fused
 * reduction kernel; dead buffers and graph outputs. */
#include "tests/sched/sched_util.h"

#define F32 PTC_F32

/* dst[i] = op(src[at(i)]) over dst's first dim; at NULL = i. */
static size_t pw_at(tp* t, int32_t dst, int32_t src, const sym_expr* at, ir_opcode op) {
  const sym_expr* rn[] = {ir_buf(t->p, dst)->shape[0], NULL};
  ir_body b = {0};
  ir_val v = ir_ops_load(t->p, &b, src, at ? at : tp_x(t, 0));
  if (ir_buf(t->p, dst)->dtype != ir_buf(t->p, src)->dtype)
    v = ir_ops_to_dtype(&b, v, ir_buf(t->p, dst)->dtype);
  ir_ops_store(t->p, &b, dst, tp_x(t, 0), ir_ops_unary(&b, op, v, ir_buf(t->p, dst)->dtype));
  return tp_node(t, IR_POINTWISE, dst, rn, NULL, &b, ir_opcode_name(op));
}

/* in -> t1 -> ... -> t5 -> out (6 nodes); flip: read index N-1-i. */
static void build_chain(tp* t, bool flip, int32_t* tmps) {
  const sym_expr* N = tp_s0(t);
  const sym_expr* rev = sym_sub(t->p->env, sym_add_c(t->p->env, N, -1), tp_x(t, 0));
  int32_t prev = tp_in(t, N, NULL);
  for (int i = 0; i < 6; i++) {
    int32_t nb = tp_tmp(t, N, NULL);
    pw_at(t, nb, prev, flip ? rev : NULL, i % 2 ? IR_SIN : IR_COS);
    if (i < 5) tmps[i] = nb;
    prev = nb;
  }
  tp_output(t, prev);
}

static void test_chain_inplace(void) {
  tp t;
  tp_init(&t, 1000);
  int32_t tmps[5];
  build_chain(&t, false, tmps);
  CHECK_OK(tp_sched(&t, false));
  const sched_plan* pl = t.plan;
  CHECK(pl && pl->n_kernels == 6);
  if (pl) {
    CHECK(pl->n_slots == 1 && pl->n_inplace == 4 && pl->n_reused == 0);
    for (int i = 0; i < 5; i++) {
      CHECK(pl->buf_home[tmps[i]] == SCHED_HOME_SLOT && pl->buf_slot[tmps[i]] == 0);
      CHECK(pl->buf_free_after[tmps[i]] == i + 1);
    }
  }
  tp_done(&t, "chain in place");
}

static void test_chain_pingpong(void) {
  tp t;
  tp_init(&t, 1000);
  int32_t tmps[5];
  build_chain(&t, true, tmps);
  CHECK_OK(tp_sched(&t, false));
  const sched_plan* pl = t.plan;
  CHECK(pl && pl->n_slots == 2 && pl->n_inplace == 0 && pl->n_reused == 3);
  if (pl) {
    for (int i = 0; i < 5; i++) CHECK(pl->buf_slot[tmps[i]] == i % 2);
  }
  /* With fusion the reversed reads cannot fuse: same plan, reasons logged. */
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 6 && t.plan->n_slots == 2);
  CHECK(t.plan && t.plan->log.data && strstr(t.plan->log.data, "index mismatch on buf1: read "));
  tp_done(&t, "chain ping-pong");
}

/* y = x[i] + x[N-1-i]: x is read at two indices, so y may not overwrite it. */
static void test_inplace_hazard(void) {
  tp t;
  tp_init(&t, 1000);
  ir_program* p = t.p;
  const sym_expr* N = tp_s0(&t);
  const sym_expr* rn[] = {N, NULL};
  int32_t in = tp_in(&t, N, NULL), x = tp_tmp(&t, N, NULL), y = tp_tmp(&t, N, NULL);
  int32_t out = tp_tmp(&t, N, NULL);
  pw_at(&t, x, in, NULL, IR_EXP);
  ir_body b = {0};
  const sym_expr* rev = sym_sub(p->env, sym_add_c(p->env, N, -1), tp_x(&t, 0));
  ir_val v = ir_ops_binary(&b, IR_ADD, ir_ops_load(p, &b, x, tp_x(&t, 0)),
                           ir_ops_load(p, &b, x, rev), F32);
  ir_ops_store(p, &b, y, tp_x(&t, 0), v);
  tp_node(&t, IR_POINTWISE, y, rn, NULL, &b, "add");
  pw_at(&t, out, y, NULL, IR_NEG);
  tp_output(&t, out);
  CHECK_OK(tp_sched(&t, false));
  CHECK(t.plan && t.plan->n_inplace == 0 && t.plan->n_slots == 2);
  if (t.plan) CHECK(t.plan->buf_slot[x] != t.plan->buf_slot[y]);
  tp_done(&t, "in-place hazard");
}

/* Reuse keys: [s0] f32 buffers share; [2*s0] f32, [s0] f64 do not; a
 * [s0] i32 buffer (same bytes, same element size) may reuse an f32 slot
 * but not in place (different dtype). */
static void test_reuse_keys(void) {
  tp t;
  tp_init(&t, 1000);
  const sym_expr* N = tp_s0(&t);
  const sym_expr* rev = sym_sub(t.p->env, sym_add_c(t.p->env, N, -1), tp_x(&t, 0));
  int32_t in = tp_in(&t, N, NULL);
  int32_t a = tp_tmp(&t, N, NULL), b = tp_tmp(&t, N, NULL), d = tp_tmp(&t, N, NULL);
  int32_t e = tp_tmp(&t, N, NULL), f = tp_tmp(&t, N, NULL);
  int32_t out = tp_tmp(&t, N, NULL);
  ir_buf(t.p, d)->dtype = PTC_F64; /* 8*s0 bytes */
  ir_buf(t.p, e)->dtype = PTC_I32; /* 4*s0 bytes */
  pw_at(&t, a, in, NULL, IR_EXP);  /* a: slot 0 */
  pw_at(&t, b, a, rev, IR_NEG);    /* b: slot 1 (a alive) */
  pw_at(&t, d, b, rev, IR_NEG);    /* d: f64, new slot 2; a's slot 0 free */
  pw_at(&t, e, d, NULL, IR_ABS);   /* e: i32 4*s0: reuses slot 0 or 1 */
  pw_at(&t, f, e, NULL, IR_ABS);   /* f: f32, in place over e is refused */
  pw_at(&t, out, f, NULL, IR_NEG);
  tp_output(&t, out);
  CHECK_OK(tp_sched(&t, false));
  const sched_plan* pl = t.plan;
  CHECK(pl && pl->n_slots == 3 && pl->n_inplace == 0);
  if (pl && pl->n_slots == 3) {
    CHECK(pl->buf_slot[a] == 0 && pl->buf_slot[b] == 1 && pl->buf_slot[d] == 2);
    CHECK(pl->buf_slot[e] == 0 || pl->buf_slot[e] == 1);
    CHECK(pl->buf_slot[f] != pl->buf_slot[e] && pl->buf_slot[f] != 2);
    CHECK(pl->slots[0].bytes == pl->slots[1].bytes && pl->slots[2].bytes != pl->slots[0].bytes);
    CHECK(pl->n_reused == 2);
  }
  tp_done(&t, "reuse keys");
}

/* e = exp(x) [R, C] (inner), s = sum(e), y = e / s (inner), ext(y): y
 * overwrites e in place inside the fused kernel; with a later member
 * reading e (z = 2e) it may not. */
static void build_fused_inplace(tp* t, bool late_reader, int32_t* e, int32_t* y) {
  ir_program* p = t->p;
  const sym_expr *R = tp_s0(t), *C = tp_c(t, 64);
  const sym_expr *x0 = tp_x(t, 0), *x1 = tp_x(t, 1), *r0 = tp_r(t, 0);
  const sym_expr* rr[] = {C, NULL};
  const sym_expr* ro[] = {R, NULL};
  const sym_expr* rc[] = {R, C, NULL};
  int32_t in = tp_in(t, R, C);
  *e = tp_tmp(t, R, C);
  int32_t s = tp_tmp(t, R, NULL);
  *y = tp_tmp(t, R, C);
  int32_t out = tp_tmp(t, R, C);
  ir_body b = {0};
  const sym_expr* at = tp_rc(t, x0, C, x1);
  ir_ops_store(p, &b, *e, at, ir_ops_unary(&b, IR_EXP, ir_ops_load(p, &b, in, at), F32));
  tp_node(t, IR_POINTWISE, *e, rc, NULL, &b, "exp");
  ir_val v = ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(p, &b, *e, tp_rc(t, x0, C, r0)), -1, F32);
  ir_ops_store(p, &b, s, x0, v);
  tp_node(t, IR_REDUCTION, s, ro, rr, &b, "sum");
  v = ir_ops_binary(&b, IR_DIV, ir_ops_load(p, &b, *e, at), ir_ops_load(p, &b, s, x0), F32);
  ir_ops_store(p, &b, *y, at, v);
  tp_node(t, IR_POINTWISE, *y, rc, NULL, &b, "div");
  if (late_reader) {
    int32_t z = tp_tmp(t, R, C);
    v = ir_ops_binary(&b, IR_MUL, ir_ops_load(p, &b, *e, at), ir_ops_const_f(&b, 2, F32), F32);
    ir_ops_store(p, &b, z, at, v);
    tp_node(t, IR_POINTWISE, z, rc, NULL, &b, "mul");
    tp_output(t, z);
  }
  int32_t ein[] = {*y};
  tp_extern(t, ein, 1, out, "ext");
  tp_output(t, out);
}

static void test_fused_inplace(void) {
  tp t;
  tp_init(&t, 32);
  int32_t e, y;
  build_fused_inplace(&t, false, &e, &y);
  CHECK_OK(tp_sched(&t, true));
  const sched_plan* pl = t.plan;
  CHECK(pl && pl->n_kernels == 2 && pl->n_inplace == 1 && pl->n_slots == 1);
  if (pl) {
    CHECK(pl->kernels[0].n_nodes == 3 && pl->kernels[0].node_inner[0] == 1 &&
          pl->kernels[0].node_inner[2] == 1);
    CHECK(pl->buf_home[e] == SCHED_HOME_SLOT && pl->buf_slot[e] == pl->buf_slot[y]);
    CHECK(pl->buf_free_after[e] == 0 && pl->buf_free_after[y] == 1);
  }
  tp_done(&t, "fused in place");

  tp_init(&t, 32);
  build_fused_inplace(&t, true, &e, &y);
  CHECK_OK(tp_sched(&t, true));
  pl = t.plan;
  CHECK(pl && pl->n_kernels == 2 && pl->kernels[0].n_nodes == 4);
  CHECK(pl && pl->n_inplace == 0 && pl->n_slots == 2);
  tp_done(&t, "fused in place, late reader");
}

/* A computed buffer nobody reads gets a slot dead after its kernel; a
 * graph output read by a later kernel stays the caller's (never freed). */
static void test_dead_and_outputs(void) {
  tp t;
  tp_init(&t, 100);
  const sym_expr* N = tp_s0(&t);
  const sym_expr* rev = sym_sub(t.p->env, sym_add_c(t.p->env, N, -1), tp_x(&t, 0));
  int32_t in = tp_in(&t, N, NULL);
  int32_t dead = tp_tmp(&t, N, NULL), o1 = tp_tmp(&t, N, NULL), o2 = tp_tmp(&t, N, NULL);
  pw_at(&t, dead, in, NULL, IR_EXP);
  pw_at(&t, o1, in, NULL, IR_SIN);
  pw_at(&t, o2, o1, rev, IR_COS);
  tp_output(&t, o1);
  tp_output(&t, o2);
  CHECK_OK(tp_sched(&t, false));
  const sched_plan* pl = t.plan;
  CHECK(pl && pl->buf_home[dead] == SCHED_HOME_SLOT && pl->buf_free_after[dead] == 0);
  CHECK(pl && pl->buf_home[o1] == SCHED_HOME_OUTPUT && pl->buf_free_after[o1] == -1);
  CHECK(pl && pl->buf_slot[o1] == -1 && pl->buf_home[in] == SCHED_HOME_EXTERNAL);
  tp_done(&t, "dead and outputs");
}

int main(void) {
  test_chain_inplace();
  test_chain_pingpong();
  test_inplace_hazard();
  test_reuse_keys();
  test_fused_inplace();
  test_dead_and_outputs();
  return check_summary("test_sched_mem");
}
