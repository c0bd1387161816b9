/* test_sched_random.c - random programs through the scheduler: DAGs of
 * pointwise nodes over [s0, C] and [s0], reductions [s0] x r[C] and extern
 * calls, reading earlier buffers at the written index, at a reversed index
 * (never fusable), or through an indirect index; scheduled with fusion
 * (default options and tight ones: window 3, 4 nodes per kernel, 2 rounds)
 * and without. Every plan must satisfy sched_check.h's invariants (no
 * cycles, producers first, index match inside kernels, locals, slots).
 *
 * usage: test_sched_random [N_PROGRAMS [SEED]] */
#include "tests/sched/sched_util.h"

#define F32 PTC_F32

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)((rng_state >> 33) % n);
}

enum { K_PW2 = 0, K_PW1, K_RED, K_EXT, K_COUNT };

typedef struct rp {
  tp t;
  const sym_expr *R, *C, *rev; /* rev: x0*C + (C - 1 - x1) */
  int32_t bufs[256];
  uint8_t rank2[256]; /* buffer is [s0, C] (else [s0]) */
  int n_bufs;
} rp;

/* A load of buffer b by a node of kind `kind` (index by loop structure). */
static ir_val load_for(rp* r, ir_body* b, int kind, int32_t buf, bool rank2) {
  ir_program* p = r->t.p;
  const sym_expr *x0 = tp_x(&r->t, 0), *x1 = tp_x(&r->t, 1), *r0 = tp_r(&r->t, 0);
  if (!rank2) return ir_ops_load(p, b, buf, x0);
  if (kind == K_PW1) return ir_ops_load(p, b, buf, tp_rc(&r->t, x0, r->C, tp_c(&r->t, 0)));
  if (kind == K_RED) return ir_ops_load(p, b, buf, tp_rc(&r->t, x0, r->C, r0));
  if (rnd(5) == 0) return ir_ops_load(p, b, buf, r->rev);
  if (rnd(8) == 0) { /* gather along the row through an index value */
    ir_val i = ir_ops_to_dtype(b, ir_ops_load(p, b, buf, tp_rc(&r->t, x0, r->C, x1)), PTC_I64);
    const sym_expr* s = NULL;
    ir_ops_indirect(p, b, i, r->C, &s);
    return ir_ops_load(p, b, buf, tp_rc(&r->t, x0, r->C, s));
  }
  return ir_ops_load(p, b, buf, tp_rc(&r->t, x0, r->C, x1));
}

static void add_node(rp* r) {
  int kind = (int)rnd(K_COUNT);
  bool out2 = kind == K_PW2 || (kind == K_EXT && rnd(2));
  int32_t out = tp_tmp(&r->t, r->R, out2 ? r->C : NULL);
  int n_in = 1 + (int)rnd(3);
  int32_t picks[3];
  for (int k = 0; k < n_in; k++) {
    int back = 1 + (int)rnd(r->n_bufs < 12 ? (uint32_t)r->n_bufs : 12u);
    picks[k] = r->n_bufs - back;
  }
  if (kind == K_EXT) {
    int32_t in[3];
    for (int k = 0; k < n_in; k++) in[k] = r->bufs[picks[k]];
    tp_extern(&r->t, in, (uint32_t)n_in, out, "ext");
  } else {
    ir_body b = {0};
    ir_val v = ir_ops_const_f(&b, 1, F32);
    for (int k = 0; k < n_in; k++)
      v = ir_ops_binary(&b, IR_ADD, v, load_for(r, &b, kind, r->bufs[picks[k]], r->rank2[picks[k]]),
                        F32);
    const sym_expr* at =
        kind == K_PW2 ? tp_rc(&r->t, tp_x(&r->t, 0), r->C, tp_x(&r->t, 1)) : tp_x(&r->t, 0);
    if (kind == K_RED) v = ir_ops_reduce(&b, rnd(2) ? IR_R_SUM : IR_R_MAX, v, -1, F32);
    ir_ops_store(r->t.p, &b, out, at, v);
    const sym_expr* l2[] = {r->R, r->C, NULL};
    const sym_expr* l1[] = {r->R, NULL};
    const sym_expr* rr[] = {r->C, NULL};
    static const char* const names[] = {"pw2", "pw1", "red"};
    tp_node(&r->t, kind == K_RED ? IR_REDUCTION : IR_POINTWISE, out, kind == K_PW2 ? l2 : l1,
            kind == K_RED ? rr : NULL, &b, names[kind]);
  }
  r->bufs[r->n_bufs] = out;
  r->rank2[r->n_bufs++] = out2;
  if (rnd(6) == 0 && r->t.n_outs < 15) tp_output(&r->t, out);
}

static void schedule(rp* r, const sched_options* o, const char* what, int* kernels) {
  sched_plan* pl = NULL;
  ptc_status s = sched_run(r->t.p, o, &pl);
  CHECK(s == NULL);
  if (s) printf("  %s: %s\n", what, ptc_status_message(s));
  ptc_status_destroy(s);
  if (pl) {
    int errs = sched_check_plan(r->t.p, pl, what);
    CHECK(errs == 0);
    CHECK(!o->fuse || pl->n_kernels + pl->n_fusions == r->t.p->nodes.len);
    *kernels += (int)pl->n_kernels;
    if (errs || getenv("PTC_TEST_DUMP")) {
      ptc_strbuf sb;
      ptc_sb_init(&sb);
      ir_program_dump(r->t.p, &sb);
      sched_plan_dump(r->t.p, pl, &sb);
      printf("---- %s\n%s", what, sb.data ? sb.data : "");
      ptc_sb_free(&sb);
    }
  }
  sched_plan_destroy(pl);
}

int main(int argc, char** argv) {
  int n_programs = argc > 1 ? atoi(argv[1]) : 300;
  rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 12345;
  int nodes = 0, k_default = 0, k_tight = 0, k_none = 0;
  for (int prog = 0; prog < n_programs; prog++) {
    rp r;
    memset(&r, 0, sizeof r);
    tp_init(&r.t, prog % 3 == 0 ? -1 : 50);
    r.R = tp_s0(&r.t);
    r.C = tp_c(&r.t, 8 + (int64_t)rnd(3) * 8);
    r.rev = tp_rc(&r.t, tp_x(&r.t, 0), r.C,
                  sym_sub(r.t.p->env, sym_add_c(r.t.p->env, r.C, -1), tp_x(&r.t, 1)));
    for (int k = 0; k < 3; k++) {
      r.rank2[r.n_bufs] = k != 2;
      r.bufs[r.n_bufs++] = tp_in(&r.t, r.R, k != 2 ? r.C : NULL);
    }
    int n = 5 + (int)rnd(120);
    for (int i = 0; i < n; i++) add_node(&r);
    tp_output(&r.t, r.bufs[r.n_bufs - 1]);
    r.t.p->output_bufs = ptc_arena_alloc(&r.t.p->arena, sizeof(int32_t) * 16);
    memcpy(r.t.p->output_bufs, r.t.outs, sizeof(int32_t) * r.t.n_outs);
    r.t.p->n_outputs = r.t.n_outs;
    nodes += n;
    char what[64];
    sched_options o;
    sched_options_init(&o);
    snprintf(what, sizeof what, "program %d (%d nodes), default", prog, n);
    schedule(&r, &o, what, &k_default);
    o.window = 3;
    o.max_nodes = 4;
    o.max_rounds = 2;
    snprintf(what, sizeof what, "program %d (%d nodes), tight", prog, n);
    schedule(&r, &o, what, &k_tight);
    o.fuse = false;
    snprintf(what, sizeof what, "program %d (%d nodes), no fusion", prog, n);
    schedule(&r, &o, what, &k_none);
    tp_done(&r.t, "random");
  }
  printf("%d programs, %d nodes: %d kernels fused (default), %d (tight), %d unfused\n", n_programs,
         nodes, k_default, k_tight, k_none);
  return check_summary("test_sched_random");
}
