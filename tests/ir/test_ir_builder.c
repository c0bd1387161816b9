/* test_ir_builder.c - the program and body builder of lib/ir: loop
 * variables, buffers and nodes (names, producers), the `inner` flag (direct
 * reduction-var indices, arguments, indirect indices defined inside the
 * reduction loop), poisoning instead of crashing on bad arguments or failed
 * allocations, op counts and names, and the dump. */
#include "ir_test_util.h"

static ir_program* new_program(ptc_context* ctx, ptc_graph** g) {
  ir_program* p = NULL;
  CHECK_OK(ptc_graph_create(ctx, g));
  CHECK_OK(ir_program_create(ctx, *g, &p));
  return p;
}

static int32_t add_buf(ir_program* p, int32_t dt, int64_t n) {
  const sym_expr* sh[1] = {sym_const(p->env, n)};
  const sym_expr* st[1] = {sym_const(p->env, 1)};
  ir_buffer b;
  memset(&b, 0, sizeof b);
  b.kind = IR_BUF_COMPUTED;
  b.dtype = dt;
  b.rank = 1;
  b.shape = sh;
  b.strides = st;
  b.offset = sym_const(p->env, 0);
  b.numel = sh[0];
  int32_t id = -1;
  CHECK_OK(ir_add_buffer(p, &b, &id));
  return id;
}

static void test_program(ptc_context* ctx) {
  ptc_graph* g = NULL;
  ir_program* p = new_program(ctx, &g);
  CHECK(p && p->xvars[0] && p->rvars[0] && p->xvars[PTC_MAX_RANK - 1]);
  CHECK(strcmp(sym_var_name(p->env, (size_t)p->xvars[0]->value), "x0") == 0);
  CHECK(strcmp(sym_var_name(p->env, (size_t)p->rvars[2]->value), "r2") == 0);
  CHECK(p->n_size_syms == 0);
  CHECK(ir_uses_rvar(p, sym_add(p->env, p->xvars[0], p->rvars[1])));
  CHECK(!ir_uses_rvar(p, sym_mul(p->env, p->xvars[0], p->xvars[1])));
  int32_t b0 = add_buf(p, PTC_F32, 8), b1 = add_buf(p, PTC_F32, 8);
  CHECK(b0 == 0 && b1 == 1 && strcmp(ir_buf(p, b1)->name, "buf1") == 0);
  ir_node n;
  memset(&n, 0, sizeof n);
  n.kind = IR_POINTWISE;
  n.out_buf = b1;
  n.n_ranges = 1;
  n.ranges = (const sym_expr**)&ir_buf(p, b0)->shape[0];
  ir_val x = ir_ops_load(p, &n.body, b0, p->xvars[0]);
  ir_ops_store(p, &n.body, b1, p->xvars[0], ir_ops_unary(&n.body, IR_NEG, x, PTC_F32));
  size_t idx = 99;
  CHECK_OK(ir_add_node(p, &n, &idx));
  CHECK(idx == 0 && ir_buf(p, b1)->producer == 0);
  CHECK(ir_node_at(p, 0)->ranges != n.ranges); /* copied into the program */
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* Graph symbols keep their indices; a symbol named like a loop var pushes
 * the loop var to another name. */
static void test_symbol_names(ptc_context* ctx) {
  ptc_graph* g = NULL;
  ir_program* p = NULL;
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  so.hint = 5;
  ptc_sym s;
  CHECK_OK(ptc_graph_create(ctx, &g));
  CHECK_OK(ptc_graph_add_symbol(g, "x0", &so, &s));
  CHECK_OK(ir_program_create(ctx, g, &p));
  CHECK(p->n_size_syms == 1);
  CHECK(strcmp(sym_var_name(p->env, 0), "x0") == 0);
  CHECK(p->xvars[0]->value != 0);
  CHECK(strcmp(sym_var_name(p->env, (size_t)p->xvars[0]->value), "x0_") == 0);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

static void test_inner(ptc_context* ctx) {
  ptc_graph* g = NULL;
  ir_program* p = new_program(ctx, &g);
  int32_t in = add_buf(p, PTC_F32, 64), ix = add_buf(p, PTC_I64, 8), out = add_buf(p, PTC_F32, 8);
  ir_body b;
  memset(&b, 0, sizeof b);
  const sym_expr* x0 = p->xvars[0];
  const sym_expr* r0 = p->rvars[0];
  ir_val outer = ir_ops_load(p, &b, in, x0);
  ir_val a = ir_ops_load(p, &b, in, sym_add(p->env, sym_mul_c(p->env, x0, 8), r0));
  ir_val m = ir_ops_binary(&b, IR_MUL, a, outer, PTC_F32);
  ir_val c = ir_ops_const_f(&b, 2.0, PTC_F32);
  ir_val oc = ir_ops_binary(&b, IR_MUL, outer, c, PTC_F32);
  CHECK(b.ops[outer].inner == 0 && b.ops[a].inner == 1 && b.ops[m].inner == 1);
  CHECK(b.ops[c].inner == 0 && b.ops[oc].inner == 0);
  /* an index defined inside the loop makes loads through it inner */
  const sym_expr* s = NULL;
  ir_val iv = ir_ops_load(p, &b, ix, r0);
  ir_val ind = ir_ops_indirect(p, &b, iv, sym_const(p->env, 64), &s);
  ir_val g1 = ir_ops_load(p, &b, in, s);
  CHECK(s && b.ops[ind].inner == 1 && b.ops[g1].inner == 1 && b.ops[ind].bound == 64);
  CHECK(b.ops[ind].bound_expr == NULL);
  /* ... but one defined outside does not */
  const sym_expr* s2 = NULL;
  ir_val iv2 = ir_ops_load(p, &b, ix, x0);
  ir_ops_indirect(p, &b, iv2, sym_const(p->env, 64), &s2);
  ir_val g2 = ir_ops_load(p, &b, in, s2);
  CHECK(s2 && s2 != s && b.ops[g2].inner == 0);
  ir_val red = ir_ops_reduce(&b, IR_R_SUM, m, -1, PTC_F32);
  ir_val post = ir_ops_binary(&b, IR_ADD, red, oc, PTC_F32);
  ir_val st = ir_ops_store(p, &b, out, x0, post);
  CHECK(b.ops[red].inner == 0 && b.ops[post].inner == 0 && b.ops[st].inner == 0);
  CHECK(b.ops[st].dtype == PTC_F32 && b.ops[a].dtype == PTC_F32);
  /* masked loads: the mask's inner flag carries over */
  ir_val mk = ir_ops_binary(&b, IR_GT, a, c, PTC_BOOL);
  ir_val ml = ir_ops_load_masked(p, &b, in, x0, mk, -1.0);
  CHECK(b.ops[ml].inner == 1 && b.ops[ml].args[0] == mk && b.ops[ml].f == -1.0);
  CHECK(ir_body_ok(&b));
  CHECK(ir_body_count(&b, IR_LOAD) == 7 && ir_body_count(&b, IR_REDUCE) == 1);
  ir_body_free(&b);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

static void test_poison(ptc_context* ctx) {
  ptc_graph* g = NULL;
  ir_program* p = new_program(ctx, &g);
  int32_t in = add_buf(p, PTC_F32, 8);
  ir_body b;
  memset(&b, 0, sizeof b);
  ir_val x = ir_ops_load(p, &b, in, p->xvars[0]);
  CHECK(x == 0 && ir_body_ok(&b));
  CHECK(ir_ops_unary(&b, IR_NEG, -1, PTC_F32) == -1); /* failed argument */
  CHECK(!ir_body_ok(&b));
  CHECK(ir_ops_unary(&b, IR_NEG, x, PTC_F32) == -1);  /* poisoned: everything fails */
  CHECK(ir_ops_const_f(&b, 1.0, PTC_F32) == -1);
  CHECK(ir_ops_store(p, &b, in, p->xvars[0], x) == -1);
  CHECK(ir_body_count(&b, IR_LOAD) == 0);
  ir_body_free(&b);
  CHECK(b.ops == NULL && b.n == 0);
  /* each kind of bad argument poisons */
  struct {
    int which;
  } cases[] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    memset(&b, 0, sizeof b);
    ir_val v = ir_ops_load(p, &b, in, p->xvars[0]);
    ir_val r = 0;
    switch (cases[k].which) {
      case 0: r = ir_ops_load(p, &b, in, NULL); break;              /* NULL index (OOM) */
      case 1: r = ir_ops_load(p, &b, 99, p->xvars[0]); break;       /* unknown buffer */
      case 2: r = ir_ops_unary(&b, IR_ADD, v, PTC_F32); break;      /* not a unary op */
      case 3: r = ir_ops_binary(&b, IR_ADD, v, 7, PTC_F32); break;  /* arg out of range */
      case 4: r = ir_ops_reduce(&b, IR_R_ARGMAX, v, -1, PTC_I64); break; /* no index */
      case 5: r = ir_ops_indirect(p, &b, v, sym_const(p->env, 4), NULL); break; /* float */
      case 6: r = ir_ops_const_i(&b, 1, 42); break;                 /* bad dtype */
      case 7: r = ir_ops_where(&b, v, v, -1, PTC_F32); break;
    }
    CHECK(r == -1 && !ir_body_ok(&b));
    ir_body_free(&b);
  }
  /* a poisoned body cannot become a node */
  ir_node n;
  memset(&n, 0, sizeof n);
  n.kind = IR_POINTWISE;
  n.out_buf = in;
  ir_ops_unary(&n.body, IR_NEG, -1, PTC_F32);
  CHECK_ERR(ir_add_node(p, &n, NULL), PTC_CODE_RESOURCE_EXHAUSTED, "");
  CHECK(p->nodes.len == 0);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* Equal ops are emitted once; stores and reductions always anew. */
static void test_cse(ptc_context* ctx) {
  ptc_graph* g = NULL;
  ir_program* p = new_program(ctx, &g);
  int32_t in = add_buf(p, PTC_F32, 8), ix = add_buf(p, PTC_I64, 8);
  ir_body b;
  memset(&b, 0, sizeof b);
  ir_val a = ir_ops_load(p, &b, in, p->xvars[0]);
  CHECK(ir_ops_load(p, &b, in, p->xvars[0]) == a);
  CHECK(ir_ops_load(p, &b, in, p->xvars[1]) != a);
  ir_val s1 = ir_ops_unary(&b, IR_SIN, a, PTC_F32);
  CHECK(ir_ops_unary(&b, IR_SIN, a, PTC_F32) == s1);
  CHECK(ir_ops_unary(&b, IR_SIN, a, PTC_F64) != s1);
  ir_val z = ir_ops_const_f(&b, 0.0, PTC_F32);
  CHECK(ir_ops_const_f(&b, -0.0, PTC_F32) != z && ir_ops_const_f(&b, 0.0, PTC_F32) == z);
  ir_val m = ir_ops_binary(&b, IR_GT, a, z, PTC_BOOL);
  ir_val ml = ir_ops_load_masked(p, &b, in, p->xvars[0], m, 0.0);
  CHECK(ml != a && ir_ops_load_masked(p, &b, in, p->xvars[0], m, 0.0) == ml);
  const sym_expr *i1 = NULL, *i2 = NULL;
  ir_val iv = ir_ops_load(p, &b, ix, p->xvars[0]);
  ir_val d1 = ir_ops_indirect(p, &b, iv, sym_const(p->env, 8), &i1);
  ir_val d2 = ir_ops_indirect(p, &b, iv, sym_const(p->env, 8), &i2);
  CHECK(d1 == d2 && i1 && i1 == i2);
  uint32_t n = b.n;
  ir_ops_reduce(&b, IR_R_SUM, s1, -1, PTC_F32);
  ir_ops_reduce(&b, IR_R_SUM, s1, -1, PTC_F32);
  ir_ops_store(p, &b, in, p->xvars[0], s1);
  ir_ops_store(p, &b, in, p->xvars[0], s1);
  CHECK(b.n == n + 4);
  ir_body_free(&b);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

static void test_growth_and_names(ptc_context* ctx) {
  ptc_graph* g = NULL;
  ir_program* p = new_program(ctx, &g);
  int32_t in = add_buf(p, PTC_F32, 8);
  ir_body b;
  memset(&b, 0, sizeof b);
  ir_val v = ir_ops_load(p, &b, in, p->xvars[0]);
  for (int k = 0; k < 1000; k++) v = ir_ops_unary(&b, IR_SIN, v, PTC_F32);
  CHECK(ir_body_ok(&b) && b.n == 1001 && ir_body_count(&b, IR_SIN) == 1000);
  ir_body_free(&b);
  CHECK(strcmp(ir_opcode_name(IR_ADD), "add") == 0);
  CHECK(strcmp(ir_opcode_name(IR_TO_DTYPE), "to_dtype") == 0);
  for (int op = 0; op < IR_OPCODE_COUNT; op++) CHECK(strcmp(ir_opcode_name((ir_opcode)op), "?"));
  CHECK(strcmp(ir_opcode_name(IR_OPCODE_COUNT), "?") == 0);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

int main(void) {
  ptc_context* ctx = NULL;
  CHECK_OK(ptc_context_create(NULL, &ctx));
  test_program(ctx);
  test_symbol_names(ctx);
  test_inner(ctx);
  test_poison(ctx);
  test_cse(ctx);
  test_growth_and_names(ctx);
  ptc_context_release(ctx);
  return check_summary("test_ir_builder");
}
