/* test_sched_fuse.c - fusion decisions on hand-built programs: softmax
 * (amax/sum reductions + inner div) and layernorm-like (mean, var, outer
 * rstd, inner normalize) become one kernel with kernel-local row values;
 * two realized pointwise nodes fuse; a pointwise needing a full reduction's
 * result is not fused into its loop; horizontal fusion needs shared reads;
 * different loop structures are refused with the reason logged; diamonds
 * fuse without cycles and a path through an extern blocks fusion; externs
 * stay alone; indirect reads never match; the 64-node limit; dynamic and
 * unbacked sizes; sched_options.fuse = false. */
#include "tests/sched/sched_util.h"

#define F32 PTC_F32

static bool log_has(const tp* t, const char* s) {
  return t->plan && t->plan->log.data && strstr(t->plan->log.data, s);
}

/* Softmax over [s0, 128] as lowering produces it: amax, sum(exp(x - m)),
 * div(exp(x - m), s). Returns the output buffer; m/s through pointers. */
static int32_t build_softmax(tp* t, const sym_expr* R, const sym_expr* C, int32_t* m_out,
                             int32_t* s_out) {
  ir_program* p = t->p;
  const sym_expr *x0 = tp_x(t, 0), *x1 = tp_x(t, 1), *r0 = tp_r(t, 0);
  int32_t in = tp_in(t, R, C), m = tp_tmp(t, R, NULL), s = tp_tmp(t, R, NULL);
  int32_t out = tp_tmp(t, R, C);
  const sym_expr* rr[] = {C, NULL};
  const sym_expr* ro[] = {R, NULL};
  const sym_expr* rc[] = {R, C, NULL};
  ir_body b = {0};
  ir_val v = ir_ops_load(p, &b, in, tp_rc(t, x0, C, r0));
  ir_ops_store(p, &b, m, x0, ir_ops_reduce(&b, IR_R_MAX, v, -1, F32));
  tp_node(t, IR_REDUCTION, m, ro, rr, &b, "amax");
  v = ir_ops_load(p, &b, in, tp_rc(t, x0, C, r0));
  v = ir_ops_binary(&b, IR_SUB, v, ir_ops_load(p, &b, m, x0), F32);
  v = ir_ops_unary(&b, IR_EXP, v, F32);
  ir_ops_store(p, &b, s, x0, ir_ops_reduce(&b, IR_R_SUM, v, -1, F32));
  tp_node(t, IR_REDUCTION, s, ro, rr, &b, "sum");
  v = ir_ops_load(p, &b, in, tp_rc(t, x0, C, x1));
  v = ir_ops_binary(&b, IR_SUB, v, ir_ops_load(p, &b, m, x0), F32);
  v = ir_ops_unary(&b, IR_EXP, v, F32);
  v = ir_ops_binary(&b, IR_DIV, v, ir_ops_load(p, &b, s, x0), F32);
  ir_ops_store(p, &b, out, tp_rc(t, x0, C, x1), v);
  tp_node(t, IR_POINTWISE, out, rc, NULL, &b, "div");
  tp_output(t, out);
  *m_out = m;
  *s_out = s;
  return out;
}

static void check_softmax_plan(tp* t, int32_t m, int32_t s, int32_t out) {
  const sched_plan* pl = t->plan;
  CHECK(pl && pl->n_kernels == 1);
  if (!pl || pl->n_kernels != 1) return;
  const sched_kernel* k = &pl->kernels[0];
  CHECK(k->n_nodes == 3 && k->nodes[0] == 0 && k->nodes[1] == 1 && k->nodes[2] == 2);
  CHECK(k->node_inner[0] == 0 && k->node_inner[1] == 0 && k->node_inner[2] == 1);
  CHECK(k->n_ranges == 1 && k->n_rranges == 1 && !k->is_extern);
  CHECK(pl->buf_home[m] == SCHED_HOME_LOCAL && pl->buf_home[s] == SCHED_HOME_LOCAL);
  CHECK(pl->buf_home[out] == SCHED_HOME_OUTPUT && pl->buf_home[0] == SCHED_HOME_EXTERNAL);
  CHECK(pl->n_slots == 0 && pl->n_fusions == 2);
  CHECK(strstr(k->name, "fused") != NULL);
  CHECK(log_has(t, "refuse k0 + k2: would create a cycle through k1"));
  CHECK(log_has(t, "fuse k1 (sum) + k2 (div): vertical, score (2, "));
  CHECK(log_has(t, "fuse k0 (amax) + k1 (sum+div): vertical, score (2, "));
}

static void test_softmax(int64_t hint) {
  tp t;
  tp_init(&t, hint);
  int32_t m, s;
  int32_t out = build_softmax(&t, tp_s0(&t), tp_c(&t, 128), &m, &s);
  CHECK_OK(tp_sched(&t, true));
  check_softmax_plan(&t, m, s, out);
  /* Unbacked size: bytes fall back to 8192 elements (score uses it). */
  if (hint == -1) CHECK(log_has(&t, "(sum+div): vertical, score (2, 65536, -2)"));
  tp_done(&t, hint == -1 ? "softmax unbacked" : "softmax");
}

static void test_softmax_static(void) {
  tp t;
  tp_init(&t, 0);
  int32_t m, s;
  int32_t out = build_softmax(&t, tp_c(&t, 32), tp_c(&t, 100), &m, &s);
  CHECK_OK(tp_sched(&t, true));
  check_softmax_plan(&t, m, s, out);
  /* amax + (sum+div) share `in` (32*100*4 bytes) and m (32*4). */
  CHECK(log_has(&t, "(sum+div): vertical, score (2, 12928, -2)"));
  tp_done(&t, "softmax static");
}

/* Without fusion: one kernel per node, no locals, row values in slots. */
static void test_softmax_nofuse(void) {
  tp t;
  tp_init(&t, 64);
  int32_t m, s;
  int32_t out = build_softmax(&t, tp_s0(&t), tp_c(&t, 128), &m, &s);
  CHECK_OK(tp_sched(&t, false));
  const sched_plan* pl = t.plan;
  CHECK(pl && pl->n_kernels == 3 && pl->n_fusions == 0);
  if (pl) {
    CHECK(pl->buf_home[m] == SCHED_HOME_SLOT && pl->buf_home[s] == SCHED_HOME_SLOT);
    CHECK(pl->buf_slot[m] != pl->buf_slot[s]); /* both live in kernel 2 */
    CHECK(pl->buf_free_after[m] == 2 && pl->buf_free_after[s] == 2);
    CHECK(pl->buf_home[out] == SCHED_HOME_OUTPUT && pl->buf_free_after[out] == -1);
    CHECK(!strcmp(pl->kernels[0].name, "k0_amax") && !strcmp(pl->kernels[2].name, "k2_div"));
  }
  tp_done(&t, "softmax nofuse");
}

/* Layernorm-like: mean, var (reads mean), rstd = rsqrt(var + eps) [R]
 * (outer), y = (x - mean) * rstd [R, C] (inner). */
static void test_layernorm(void) {
  tp t;
  tp_init(&t, 16);
  ir_program* p = t.p;
  const sym_expr *R = tp_s0(&t), *C = tp_c(&t, 64);
  const sym_expr *x0 = tp_x(&t, 0), *x1 = tp_x(&t, 1), *r0 = tp_r(&t, 0);
  int32_t in = tp_in(&t, R, C), mu = tp_tmp(&t, R, NULL), var = tp_tmp(&t, R, NULL);
  int32_t rstd = tp_tmp(&t, R, NULL), out = tp_tmp(&t, R, C);
  const sym_expr* rr[] = {C, NULL};
  const sym_expr* ro[] = {R, NULL};
  const sym_expr* rc[] = {R, C, NULL};
  ir_body b = {0};
  ir_val v = ir_ops_load(p, &b, in, tp_rc(&t, x0, C, r0));
  v = ir_ops_reduce(&b, IR_R_SUM, v, -1, F32);
  ir_ops_store(p, &b, mu, x0, ir_ops_binary(&b, IR_DIV, v, ir_ops_const_f(&b, 64, F32), F32));
  tp_node(&t, IR_REDUCTION, mu, ro, rr, &b, "mean");
  v = ir_ops_binary(&b, IR_SUB, ir_ops_load(p, &b, in, tp_rc(&t, x0, C, r0)),
                    ir_ops_load(p, &b, mu, x0), F32);
  v = ir_ops_reduce(&b, IR_R_SUM, ir_ops_binary(&b, IR_MUL, v, v, F32), -1, F32);
  ir_ops_store(p, &b, var, x0, v);
  tp_node(&t, IR_REDUCTION, var, ro, rr, &b, "var");
  v = ir_ops_binary(&b, IR_ADD, ir_ops_load(p, &b, var, x0), ir_ops_const_f(&b, 1e-5, F32), F32);
  ir_ops_store(p, &b, rstd, x0, ir_ops_unary(&b, IR_RSQRT, v, F32));
  tp_node(&t, IR_POINTWISE, rstd, ro, NULL, &b, "rsqrt");
  v = ir_ops_binary(&b, IR_SUB, ir_ops_load(p, &b, in, tp_rc(&t, x0, C, x1)),
                    ir_ops_load(p, &b, mu, x0), F32);
  v = ir_ops_binary(&b, IR_MUL, v, ir_ops_load(p, &b, rstd, x0), F32);
  ir_ops_store(p, &b, out, tp_rc(&t, x0, C, x1), v);
  tp_node(&t, IR_POINTWISE, out, rc, NULL, &b, "mul");
  tp_output(&t, out);
  CHECK_OK(tp_sched(&t, true));
  const sched_plan* pl = t.plan;
  CHECK(pl && pl->n_kernels == 1);
  if (pl && pl->n_kernels == 1) {
    const sched_kernel* k = &pl->kernels[0];
    CHECK(k->n_nodes == 4);
    CHECK(k->node_inner[0] == 0 && k->node_inner[1] == 0 && k->node_inner[2] == 0 &&
          k->node_inner[3] == 1);
    CHECK(pl->buf_home[mu] == SCHED_HOME_LOCAL && pl->buf_home[var] == SCHED_HOME_LOCAL &&
          pl->buf_home[rstd] == SCHED_HOME_LOCAL);
    CHECK(pl->n_slots == 0);
  }
  tp_done(&t, "layernorm");
}

/* out = cos(t), t = sin(x): two realized pointwise nodes. */
static void build_sin_cos(tp* t, int32_t* tmp, int32_t* out) {
  ir_program* p = t->p;
  const sym_expr* N = tp_s0(t);
  const sym_expr* rn[] = {N, NULL};
  int32_t in = tp_in(t, N, NULL);
  *tmp = tp_tmp(t, N, NULL);
  *out = tp_tmp(t, N, NULL);
  ir_body b = {0};
  ir_ops_store(p, &b, *tmp, tp_x(t, 0),
               ir_ops_unary(&b, IR_SIN, ir_ops_load(p, &b, in, tp_x(t, 0)), F32));
  tp_node(t, IR_POINTWISE, *tmp, rn, NULL, &b, "sin");
  ir_ops_store(p, &b, *out, tp_x(t, 0),
               ir_ops_unary(&b, IR_COS, ir_ops_load(p, &b, *tmp, tp_x(t, 0)), F32));
  tp_node(t, IR_POINTWISE, *out, rn, NULL, &b, "cos");
  tp_output(t, *out);
}

static void test_sin_cos(void) {
  tp t;
  tp_init(&t, 1000);
  int32_t tmp, out;
  build_sin_cos(&t, &tmp, &out);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 1);
  if (t.plan) {
    CHECK(t.plan->buf_home[tmp] == SCHED_HOME_LOCAL);
    CHECK(!strcmp(t.plan->kernels[0].name, "k0_fused_sin_cos"));
    CHECK(log_has(&t, "fuse k0 (sin) + k1 (cos): vertical, score (2, 4000, -1)"));
  }
  CHECK_OK(tp_sched(&t, false));
  CHECK(t.plan && t.plan->n_kernels == 2);
  if (t.plan) CHECK(t.plan->buf_home[tmp] == SCHED_HOME_SLOT);
  tp_done(&t, "sin cos");
}

/* y = x - sum(x) over [s0]: the pointwise node needs the full reduction's
 * result in every iteration of what would be the reduction loop. */
static void test_full_reduction(void) {
  tp t;
  tp_init(&t, 4096);
  ir_program* p = t.p;
  const sym_expr* N = tp_s0(&t);
  const sym_expr* rn[] = {N, NULL};
  const sym_expr* none[] = {NULL};
  int32_t in = tp_in(&t, N, NULL), s = tp_tmp(&t, NULL, NULL), out = tp_tmp(&t, N, NULL);
  ir_body b = {0};
  ir_val v = ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(p, &b, in, tp_r(&t, 0)), -1, F32);
  ir_ops_store(p, &b, s, tp_c(&t, 0), v);
  tp_node(&t, IR_REDUCTION, s, none, rn, &b, "sum");
  v = ir_ops_binary(&b, IR_SUB, ir_ops_load(p, &b, in, tp_x(&t, 0)),
                    ir_ops_load(p, &b, s, tp_c(&t, 0)), F32);
  ir_ops_store(p, &b, out, tp_x(&t, 0), v);
  tp_node(&t, IR_POINTWISE, out, rn, NULL, &b, "sub");
  tp_output(&t, out);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 2);
  CHECK(tp_kernel_of(&t, 0) == 0 && tp_kernel_of(&t, 1) == 1);
  CHECK(log_has(&t, "refuse k0 + k1: node 1 would need buf1, a full reduction's result"));
  if (t.plan) CHECK(t.plan->buf_home[s] == SCHED_HOME_SLOT);
  tp_done(&t, "full reduction");
}

/* sum(x) over [s0] and y = 2x: no dependency, shared read of x -> the
 * pointwise node joins the reduction loop as an inner node. */
static void test_horizontal(void) {
  tp t;
  tp_init(&t, 4096);
  ir_program* p = t.p;
  const sym_expr* N = tp_s0(&t);
  const sym_expr* rn[] = {N, NULL};
  const sym_expr* none[] = {NULL};
  int32_t in = tp_in(&t, N, NULL), in2 = tp_in(&t, N, NULL);
  int32_t s = tp_tmp(&t, NULL, NULL), y = tp_tmp(&t, N, NULL), z = tp_tmp(&t, N, NULL);
  ir_body b = {0};
  ir_val v = ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(p, &b, in, tp_r(&t, 0)), -1, F32);
  ir_ops_store(p, &b, s, tp_c(&t, 0), v);
  tp_node(&t, IR_REDUCTION, s, none, rn, &b, "sum");
  v = ir_ops_binary(&b, IR_MUL, ir_ops_load(p, &b, in, tp_x(&t, 0)), ir_ops_const_f(&b, 2, F32),
                    F32);
  ir_ops_store(p, &b, y, tp_x(&t, 0), v);
  tp_node(&t, IR_POINTWISE, y, rn, NULL, &b, "mul");
  /* z = -in2 shares nothing with the others: stays alone. */
  ir_ops_store(p, &b, z, tp_x(&t, 0),
               ir_ops_unary(&b, IR_NEG, ir_ops_load(p, &b, in2, tp_x(&t, 0)), F32));
  tp_node(&t, IR_POINTWISE, z, rn, NULL, &b, "neg");
  tp_output(&t, s);
  tp_output(&t, y);
  tp_output(&t, z);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 2);
  CHECK(tp_kernel_of(&t, 0) == 0 && tp_kernel_of(&t, 1) == 0 && tp_kernel_of(&t, 2) == 1);
  CHECK(tp_inner_of(&t, 1) == 1);
  CHECK(log_has(&t, "fuse k0 (sum) + k1 (mul): horizontal, score (1, 16384, -1)"));
  CHECK(!log_has(&t, "k2")); /* never considered: no shared buffer */
  tp_done(&t, "horizontal");
}

/* [s0, 128] pointwise reading a [s0] pointwise result: refused, logged. */
static void test_loop_structure(void) {
  tp t;
  tp_init(&t, 8);
  ir_program* p = t.p;
  const sym_expr *R = tp_s0(&t), *C = tp_c(&t, 128);
  const sym_expr* ro[] = {R, NULL};
  const sym_expr* rc[] = {R, C, NULL};
  int32_t a = tp_in(&t, R, NULL), u = tp_tmp(&t, R, NULL), out = tp_tmp(&t, R, C);
  ir_body b = {0};
  ir_ops_store(p, &b, u, tp_x(&t, 0),
               ir_ops_unary(&b, IR_EXP, ir_ops_load(p, &b, a, tp_x(&t, 0)), F32));
  tp_node(&t, IR_POINTWISE, u, ro, NULL, &b, "exp");
  ir_ops_store(p, &b, out, tp_rc(&t, tp_x(&t, 0), C, tp_x(&t, 1)),
               ir_ops_unary(&b, IR_NEG, ir_ops_load(p, &b, u, tp_x(&t, 0)), F32));
  tp_node(&t, IR_POINTWISE, out, rc, NULL, &b, "neg");
  tp_output(&t, out);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 2);
  CHECK(log_has(&t, "refuse k0 + k1: different loop structure [s0] vs [s0, 128]"));
  tp_done(&t, "loop structure");
}

/* Unary pointwise node over [s0]: dst = op(src). */
static size_t pw1(tp* t, int32_t dst, int32_t src, ir_opcode op, const char* origin) {
  const sym_expr* rn[] = {ir_buf(t->p, dst)->shape[0], NULL};
  ir_body b = {0};
  ir_ops_store(t->p, &b, dst, tp_x(t, 0),
               ir_ops_unary(&b, op, ir_ops_load(t->p, &b, src, tp_x(t, 0)), F32));
  return tp_node(t, IR_POINTWISE, dst, rn, NULL, &b, origin);
}

/* dst = a + b over [s0]. */
static size_t pw2(tp* t, int32_t dst, int32_t a, int32_t b2, const char* origin) {
  const sym_expr* rn[] = {ir_buf(t->p, dst)->shape[0], NULL};
  ir_body b = {0};
  ir_val v = ir_ops_binary(&b, IR_ADD, ir_ops_load(t->p, &b, a, tp_x(t, 0)),
                           ir_ops_load(t->p, &b, b2, tp_x(t, 0)), F32);
  ir_ops_store(t->p, &b, dst, tp_x(t, 0), v);
  return tp_node(t, IR_POINTWISE, dst, rn, NULL, &b, origin);
}

/* A -> B, A -> C, B + C -> D, all pointwise: one kernel, A first. */
static void test_diamond(void) {
  tp t;
  tp_init(&t, 100);
  const sym_expr* N = tp_s0(&t);
  int32_t in = tp_in(&t, N, NULL);
  int32_t a = tp_tmp(&t, N, NULL), bb = tp_tmp(&t, N, NULL), c = tp_tmp(&t, N, NULL);
  int32_t d = tp_tmp(&t, N, NULL);
  pw1(&t, a, in, IR_SIN, "A");
  pw1(&t, bb, a, IR_COS, "B");
  pw1(&t, c, a, IR_EXP, "C");
  pw2(&t, d, bb, c, "D");
  tp_output(&t, d);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 1);
  if (t.plan && t.plan->n_kernels == 1) {
    const sched_kernel* k = &t.plan->kernels[0];
    CHECK(k->n_nodes == 4 && k->nodes[0] == 0 && k->nodes[3] == 3);
    CHECK(t.plan->buf_home[a] == SCHED_HOME_LOCAL && t.plan->buf_home[bb] == SCHED_HOME_LOCAL &&
          t.plan->buf_home[c] == SCHED_HOME_LOCAL);
  }
  tp_done(&t, "diamond");
}

/* A -> E (extern) -> D and A -> D: fusing A with D would put the extern
 * both before and after the fused kernel. */
static void test_diamond_extern(void) {
  tp t;
  tp_init(&t, 100);
  const sym_expr* N = tp_s0(&t);
  int32_t in = tp_in(&t, N, NULL);
  int32_t a = tp_tmp(&t, N, NULL), e = tp_tmp(&t, N, NULL), d = tp_tmp(&t, N, NULL);
  pw1(&t, a, in, IR_SIN, "A");
  int32_t ein[] = {a};
  tp_extern(&t, ein, 1, e, "E");
  pw2(&t, d, a, e, "D");
  tp_output(&t, d);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 3);
  CHECK(tp_kernel_of(&t, 0) == 0 && tp_kernel_of(&t, 1) == 1 && tp_kernel_of(&t, 2) == 2);
  CHECK(log_has(&t, "refuse k0 + k2: would create a cycle through k1"));
  CHECK(log_has(&t, "refuse k0 + k1: k1 is an extern kernel"));
  if (t.plan && t.plan->n_kernels == 3) {
    CHECK(t.plan->kernels[1].is_extern && t.plan->kernels[1].n_nodes == 1);
    CHECK(t.plan->buf_home[a] == SCHED_HOME_SLOT && t.plan->buf_free_after[a] == 2);
  }
  tp_done(&t, "diamond extern");
}

/* Externs stay alone even between fusable neighbours. */
static void test_extern_alone(void) {
  tp t;
  tp_init(&t, 100);
  const sym_expr* N = tp_s0(&t);
  int32_t in = tp_in(&t, N, NULL);
  int32_t a = tp_tmp(&t, N, NULL), e = tp_tmp(&t, N, NULL), d = tp_tmp(&t, N, NULL);
  int32_t f = tp_tmp(&t, N, NULL);
  pw1(&t, a, in, IR_SIN, "sin");
  int32_t ein[] = {a, in};
  tp_extern(&t, ein, 2, e, "ext");
  pw1(&t, d, e, IR_COS, "cos");
  pw1(&t, f, d, IR_EXP, "exp");
  tp_output(&t, f);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 3);
  if (t.plan && t.plan->n_kernels == 3) {
    CHECK(t.plan->kernels[1].is_extern && t.plan->kernels[1].n_nodes == 1 &&
          t.plan->kernels[1].nodes[0] == 1);
    CHECK(t.plan->kernels[2].n_nodes == 2);
    CHECK(t.plan->buf_home[d] == SCHED_HOME_LOCAL);
    CHECK(t.plan->buf_home[e] == SCHED_HOME_SLOT);
  }
  tp_done(&t, "extern alone");
}

/* out[i] = tab[idx[i]] where tab is computed: the indirect load never
 * matches tab's write; idx (direct) still fuses. */
static void test_indirect(void) {
  tp t;
  tp_init(&t, 0);
  ir_program* p = t.p;
  const sym_expr* N = tp_c(&t, 50);
  const sym_expr* rn[] = {N, NULL};
  int32_t src = tp_in(&t, N, NULL), ii = tp_in(&t, N, NULL);
  int32_t tab = tp_tmp(&t, N, NULL), idx = tp_tmp(&t, N, NULL), out = tp_tmp(&t, N, NULL);
  ir_buf(p, ii)->dtype = PTC_I64;
  ir_buf(p, idx)->dtype = PTC_I64;
  pw1(&t, tab, src, IR_EXP, "exp");
  pw1(&t, idx, ii, IR_ABS, "abs");
  ir_body b = {0};
  const sym_expr* sym = NULL;
  ir_ops_indirect(p, &b, ir_ops_load(p, &b, idx, tp_x(&t, 0)), N, &sym);
  ir_ops_store(p, &b, out, tp_x(&t, 0), ir_ops_load(p, &b, tab, sym));
  size_t g = tp_node(&t, IR_POINTWISE, out, rn, NULL, &b, "gather");
  tp_output(&t, out);
  CHECK_OK(tp_sched(&t, true));
  CHECK(tp_kernel_of(&t, 0) != tp_kernel_of(&t, 2));
  CHECK(tp_kernel_of(&t, 1) == tp_kernel_of(&t, 2));
  CHECK(log_has(&t, "buf2 is read through an indirect index"));
  if (t.plan) CHECK(t.plan->buf_home[idx] == SCHED_HOME_LOCAL);
  /* sched_node_deps reports the indirect read as whole-buffer (NULL). */
  sched_dep *r = NULL, *w = NULL;
  size_t nr = 0, nw = 0;
  CHECK_OK(sched_node_deps(p, g, &r, &nr, &w, &nw));
  CHECK(nr == 2 && nw == 1);
  if (nr == 2 && nw == 1) {
    CHECK(r[0].buf == idx && r[0].index == tp_x(&t, 0));
    CHECK(r[1].buf == tab && r[1].index == NULL);
    CHECK(w[0].buf == out && w[0].index == tp_x(&t, 0));
  }
  free(r);
  free(w);
  tp_done(&t, "indirect");
}

/* A chain of 70 pointwise nodes: kernels hold at most 64 nodes. */
static void test_max_nodes(void) {
  tp t;
  tp_init(&t, 256);
  const sym_expr* N = tp_s0(&t);
  int32_t prev = tp_in(&t, N, NULL);
  for (int i = 0; i < 70; i++) {
    int32_t nb = tp_tmp(&t, N, NULL);
    pw1(&t, nb, prev, i % 2 ? IR_SIN : IR_COS, i % 2 ? "sin" : "cos");
    prev = nb;
  }
  tp_output(&t, prev);
  CHECK_OK(tp_sched(&t, true));
  CHECK(t.plan && t.plan->n_kernels == 2);
  if (t.plan && t.plan->n_kernels == 2) {
    CHECK(t.plan->kernels[0].n_nodes + t.plan->kernels[1].n_nodes == 70);
    CHECK(t.plan->kernels[0].n_nodes <= 64 && t.plan->kernels[1].n_nodes <= 64);
    CHECK(t.plan->n_fusions == 68);
  }
  CHECK(log_has(&t, "too many nodes"));
  tp_done(&t, "max nodes");
}

/* a = sin(x) and b = exp(x) at node 0, 70 unrelated nodes over another
 * size, then cos(a) and cos(x): the vertical pair fuses across the distance,
 * the horizontal pair (shared read of x only) is too far apart. */
static void test_window(void) {
  tp t;
  tp_init(&t, 100);
  const sym_expr* N = tp_s0(&t);
  const sym_expr* M = tp_c(&t, 7);
  int32_t in = tp_in(&t, N, NULL), other = tp_in(&t, M, NULL);
  int32_t a = tp_tmp(&t, N, NULL);
  pw1(&t, a, in, IR_SIN, "sin");
  int32_t prev = other;
  for (int i = 0; i < 70; i++) {
    int32_t nb = tp_tmp(&t, M, NULL);
    pw1(&t, nb, prev, IR_NEG, "neg");
    prev = nb;
    if (i % 8 == 7) tp_output(&t, nb); /* several short kernels */
  }
  int32_t ca = tp_tmp(&t, N, NULL), cx = tp_tmp(&t, N, NULL);
  size_t n_ca = pw1(&t, ca, a, IR_COS, "cos");
  size_t n_cx = pw1(&t, cx, in, IR_COS, "cos");
  tp_output(&t, ca);
  tp_output(&t, cx);
  tp_output(&t, prev);
  CHECK_OK(tp_sched(&t, true));
  CHECK(tp_kernel_of(&t, 0) == tp_kernel_of(&t, n_ca));
  CHECK(tp_kernel_of(&t, n_cx) != tp_kernel_of(&t, 0));
  CHECK(log_has(&t, "too far apart for horizontal fusion (72 > 64)"));
  if (t.plan) CHECK(t.plan->buf_home[a] == SCHED_HOME_LOCAL);
  tp_done(&t, "window");
}

/* Contract violations are reported, never crash: unknown buffers, a read
 * before the producer, two writers, bad options; extern deps are whole. */
static void test_errors(void) {
  tp t;
  tp_init(&t, 100);
  ir_program* p = t.p;
  const sym_expr* N = tp_s0(&t);
  int32_t in = tp_in(&t, N, NULL), a = tp_tmp(&t, N, NULL), b = tp_tmp(&t, N, NULL);
  pw1(&t, a, in, IR_SIN, "sin");
  int32_t ein[] = {a, -1};
  size_t e = tp_extern(&t, ein, 2, b, "ext");
  tp_output(&t, b);
  sched_dep *r = NULL, *w = NULL;
  size_t nr = 0, nw = 0;
  CHECK_OK(sched_node_deps(p, e, &r, &nr, &w, &nw));
  CHECK(nr == 1 && r[0].buf == a && r[0].index == NULL);
  CHECK(nw == 1 && w[0].buf == b && w[0].index == NULL);
  free(r);
  free(w);
  CHECK_ERR(sched_node_deps(p, 99, &r, &nr, &w, &nw), PTC_CODE_INVALID_ARGUMENT, "out of range");
  sched_options o;
  sched_options_init(&o);
  o.max_nodes = 0;
  sched_plan* pl = NULL;
  CHECK_ERR(sched_run(p, &o, &pl), PTC_CODE_INVALID_ARGUMENT, "max_nodes");
  CHECK_ERR(sched_run(NULL, NULL, &pl), PTC_CODE_INVALID_ARGUMENT, "NULL");
  CHECK(pl == NULL);
  /* A second writer of buffer a. */
  pw1(&t, a, in, IR_COS, "cos");
  CHECK_ERR(tp_sched(&t, true), PTC_CODE_INVALID_ARGUMENT, "is written by nodes 0 and 2");
  tp_done(&t, "errors");

  tp_init(&t, 100);
  p = t.p;
  N = tp_s0(&t);
  in = tp_in(&t, N, NULL);
  a = tp_tmp(&t, N, NULL);
  b = tp_tmp(&t, N, NULL);
  pw1(&t, b, a, IR_SIN, "early"); /* reads a before its producer */
  pw1(&t, a, in, IR_COS, "late");
  tp_output(&t, b);
  CHECK_ERR(tp_sched(&t, true), PTC_CODE_INVALID_ARGUMENT, "node 0 reads buf1 before its producer");
  tp_done(&t, "errors 2");

  tp_init(&t, 100);
  p = t.p;
  N = tp_s0(&t);
  in = tp_in(&t, N, NULL);
  a = tp_tmp(&t, N, NULL);
  pw1(&t, a, in, IR_SIN, "sin");
  ir_node_at(p, 0)->body.ops[0].buf = 42; /* the load */
  tp_output(&t, a);
  CHECK_ERR(tp_sched(&t, true), PTC_CODE_INVALID_ARGUMENT, "node 0 loads unknown buffer 42");
  t.outs[0] = 77;
  ir_node_at(p, 0)->body.ops[0].buf = in;
  CHECK_ERR(tp_sched(&t, true), PTC_CODE_INVALID_ARGUMENT, "graph output 0 names unknown buffer");
  tp_done(&t, "errors 3");
}

/* Without fusion the kernel order is the node order. */
static void test_nofuse_order(void) {
  tp t;
  tp_init(&t, 100);
  const sym_expr* N = tp_s0(&t);
  int32_t in = tp_in(&t, N, NULL);
  int32_t a = tp_tmp(&t, N, NULL), bb = tp_tmp(&t, N, NULL), c = tp_tmp(&t, N, NULL);
  pw1(&t, a, in, IR_SIN, "sin");
  pw1(&t, bb, in, IR_COS, "cos");
  pw2(&t, c, a, bb, "add");
  tp_output(&t, c);
  CHECK_OK(tp_sched(&t, false));
  CHECK(t.plan && t.plan->n_kernels == 3 && t.plan->log.len == 0);
  for (int i = 0; i < 3; i++) CHECK(tp_kernel_of(&t, (size_t)i) == i);
  tp_done(&t, "nofuse order");
}

int main(void) {
  test_softmax(64);
  test_softmax(-1);
  test_softmax_static();
  test_softmax_nofuse();
  test_layernorm();
  test_sin_cos();
  test_full_reduction();
  test_horizontal();
  test_loop_structure();
  test_diamond();
  test_diamond_extern();
  test_extern_alone();
  test_indirect();
  test_max_nodes();
  test_window();
  test_nofuse_order();
  test_errors();
  return check_summary("test_sched_fuse");
}
