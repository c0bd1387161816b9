/* test_ir_lower.c - the lowering's decisions, checked on the produced IR
 * and by running it (ir_interpret) against the ref backend: pointwise
 * inlining and Inductor's realize rules, view composition into index
 * expressions, reshapes (re-striding vs FloorDiv/Mod), reductions, extern
 * epilogue folding, symbolic shapes, indirect-index bounds errors, graph
 * outputs that are inputs, and the dump. */
#include "ir_test_util.h"

static const int64_t S45[2] = {4, 5};

static ptc_graph* new_graph(ptc_context* ctx) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  return g;
}

/* ---- realize rules ---------------------------------------------------------------------- */

static void test_sin_cos_one_node(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value x = t_input(g, PTC_F32, 2, S45);
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "cos", t_unary(g, "sin", x))));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 1 && t_count_nodes(p, IR_POINTWISE) == 1);
  CHECK(p && t_count_ops(p, 0, IR_SIN) == 1 && t_count_ops(p, 0, IR_COS) == 1);
  CHECK(p && t_count_ops(p, 0, IR_LOAD) == 1 && t_count_ops(p, 0, IR_STORE) == 1);
  CHECK(p && p->n_outputs == 1 && ir_node_at(p, 0)->out_buf == p->output_bufs[0]);
  ir_program_destroy(p);
  /* no fusion: every op realized */
  ir_lower_options o;
  ir_lower_options_init(&o);
  o.inline_pointwise = false;
  p = t_lower(g, &o);
  CHECK(p && p->nodes.len == 2);
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, S45, 1);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
  CHECK(t_matches_ref(ctx, g, &o, &a.t, 1, 1e-6, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* x * x of a lazy x = sin(a): the inlined sin is emitted once (CSE). */
static void test_square_cse(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value x = t_unary(g, "sin", t_input(g, PTC_F32, 2, S45));
  CHECK_OK(ptc_graph_add_output(g, t_binary(g, "mul", x, x)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 1 && t_count_ops(p, 0, IR_SIN) == 1 && t_count_ops(p, 0, IR_LOAD) == 1);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* y = y * y forty times: each loader runs once per body (memoized), not
 * 2^40 times; the body has one op per level. */
static void test_square_chain(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value y = t_unary(g, "neg", t_input(g, PTC_F32, 2, S45));
  for (int k = 0; k < 40; k++) y = t_binary(g, "mul", y, y);
  CHECK_OK(ptc_graph_add_output(g, y));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 1 && t_count_ops(p, 0, IR_MUL) == 40);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* e = exp(x) used twice: realized once (CPU rule: expensive op + reuse);
 * n = neg(x) used twice: cheap, recomputed in each consumer. */
static void test_reuse(ptc_context* ctx, const char* op, size_t want_nodes, uint32_t want_ops) {
  ptc_graph* g = new_graph(ctx);
  ptc_value x = t_input(g, PTC_F32, 2, S45);
  ptc_value e = t_unary(g, op, x);
  CHECK_OK(ptc_graph_add_output(g, t_binary(g, "add", e, x)));
  CHECK_OK(ptc_graph_add_output(g, t_scalar_op(g, "mul", e, 2.0)));
  ir_program* p = t_lower(g, NULL);
  ir_opcode opc = strcmp(op, "exp") == 0 ? IR_EXP : IR_NEG;
  CHECK(p && p->nodes.len == want_nodes);
  uint32_t total = 0;
  for (size_t i = 0; p && i < p->nodes.len; i++) total += t_count_ops(p, i, opc);
  CHECK(total == want_ops);
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, S45, 2);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* A value reading 5 distinct buffers used twice is realized (reads > 4);
 * a value reading 9 is realized even with one user (accumulated reads > 8)
 * unless the threshold is raised. */
static void test_reads(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value in[9], five, nine;
  for (int k = 0; k < 9; k++) in[k] = t_input(g, PTC_F32, 2, S45);
  five = nine = in[0];
  for (int k = 1; k < 9; k++) nine = t_binary(g, "add", nine, in[k]);
  for (int k = 1; k < 5; k++) five = t_binary(g, "add", five, in[k]);
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "relu", nine)));
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "neg", five)));
  CHECK_OK(ptc_graph_add_output(g, t_scalar_op(g, "mul", five, 2.0)));
  ir_program* p = t_lower(g, NULL);
  /* nine realized (9 reads), relu; five realized (2 users, 5 reads), neg, mul */
  CHECK(p && p->nodes.len == 5);
  ir_program_destroy(p);
  ir_lower_options o;
  ir_lower_options_init(&o);
  o.realize_acc_reads_threshold = 100;
  o.realize_reads_threshold = 100;
  p = t_lower(g, &o);
  CHECK(p && p->nodes.len == 3);
  ir_program_destroy(p);
  o.max_inline_ops = 3; /* every value with more than 3 ops is realized */
  p = t_lower(g, &o);
  CHECK(p && p->nodes.len > 5);
  ir_program_destroy(p);
  t_tensor a[9];
  ptc_tensor ts[9];
  for (int k = 0; k < 9; k++) {
    t_tensor_init(&a[k], PTC_F32, 2, S45, (uint32_t)k + 10);
    ts[k] = a[k].t;
  }
  CHECK(t_matches_ref(ctx, g, NULL, ts, 9, 1e-6, 1e-6));
  CHECK(t_matches_ref(ctx, g, &o, ts, 9, 1e-6, 1e-6));
  for (int k = 0; k < 9; k++) t_tensor_free(&a[k]);
  ptc_graph_destroy(g);
}

/* ---- views -------------------------------------------------------------------------------- */

/* sin(x)[4,6] -> transpose -> slice(dim 0, 1:5:2) -> expand [3,2,4]:
 * element (k, i, j) reads x[j, 1 + 2i] = in0[6j + 2i + 1]. */
static void test_view_composition(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  const int64_t s46[2] = {4, 6};
  ptc_value x = t_unary(g, "sin", t_input(g, PTC_F32, 2, s46));
  ptc_attr ta[2] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
  ptc_value t = t_node(g, "transpose", &x, 1, ta, 2);
  ptc_attr sa[4] = {ptc_attr_int("dim", 0), ptc_attr_int("start", 1), ptc_attr_int("end", 5),
                    ptc_attr_int("step", 2)};
  ptc_value s = t_node(g, "slice", &t, 1, sa, 4);
  const int64_t sz[3] = {3, 2, 4};
  ptc_attr ea = {"size", PTC_ATTR_INTS, 0, 0, 0.0, sz, NULL, NULL, 3, NULL};
  ptc_value e = t_node(g, "expand", &s, 1, &ea, 1);
  CHECK_OK(ptc_graph_add_output(g, e));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 1);
  if (p && p->nodes.len == 1) {
    const ir_node* n = ir_node_at(p, 0);
    const ir_op* ld = t_find_op(p, 0, IR_LOAD);
    sym_env* env = p->env;
    const sym_expr* want =
        sym_add_c(env, sym_add(env, sym_mul_c(env, p->xvars[2], 6), sym_mul_c(env, p->xvars[1], 2)),
                  1);
    CHECK(ld && ld->index == want);
    CHECK(n->n_ranges == 3 && t_count_ops(p, 0, IR_SIN) == 1);
  }
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, s46, 3);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

static ptc_value reshape(ptc_graph* g, ptc_value x, size_t n, const int64_t* shape) {
  ptc_attr a = {"shape", PTC_ATTR_INTS, 0, 0, 0.0, shape, NULL, NULL, n, NULL};
  return t_node(g, "reshape", &x, 1, &a, 1);
}

static bool mentions_kind(const sym_expr* e, int kind) {
  if (!e) return false;
  if (e->kind == kind) return true;
  for (uint32_t i = 0; i < e->n; i++)
    if (mentions_kind(e->args[i], kind)) return true;
  return false;
}

/* Reshaping a contiguous buffer re-strides it (plain index); reshaping a
 * transposed lazy value indexes through FloorDiv and Mod. */
static void test_reshape(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  const int64_t s46[2] = {4, 6}, s226[3] = {2, 2, 6}, s24[1] = {24};
  ptc_value x = t_input(g, PTC_F32, 2, s46);
  ptc_value r = reshape(g, reshape(g, x, 3, s226), 1, s24);
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "sin", r)));
  ptc_attr ta[2] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
  ptc_value sx = t_unary(g, "sin", x);
  ptc_value tr = t_node(g, "transpose", &sx, 1, ta, 2);
  CHECK_OK(ptc_graph_add_output(g, reshape(g, tr, 1, s24)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 2);
  if (p && p->nodes.len == 2) {
    const ir_op* l0 = t_find_op(p, 0, IR_LOAD);
    const ir_op* l1 = t_find_op(p, 1, IR_LOAD);
    CHECK(l0 && l0->index == p->xvars[0]);
    CHECK(l1 && mentions_kind(l1->index, SYM_FLOORDIV) &&
          (mentions_kind(l1->index, SYM_MOD) || mentions_kind(l1->index, SYM_MODIDX)));
  }
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, s46, 4);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* 1000 transposes of a lazy value: views add no ops, yet the loaders'
 * nesting stays bounded (realized at depth LOWER_MAX_DEPTH). */
static void test_deep_views(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value x = t_unary(g, "sin", t_input(g, PTC_F32, 2, S45));
  ptc_attr ta[2] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
  for (int k = 0; k < 1001; k++) x = t_node(g, "transpose", &x, 1, ta, 2);
  CHECK_OK(ptc_graph_add_output(g, x));
  ir_program* p = t_lower(g, NULL);
  /* realized at depth 128; the remaining (even number of) transposes view
   * that buffer as it is, which is also the output */
  CHECK(p && p->nodes.len == 1 && strcmp(ir_node_at(p, 0)->origin, "transpose_127") == 0);
  CHECK(p && p->output_bufs[0] == ir_node_at(p, 0)->out_buf);
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, S45, 9);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* ---- reductions -------------------------------------------------------------------------------- */

/* sum over dim 0 of exp(x): one reduction node with the exp inlined in the
 * inner loop; keepdim sizes of 1 leave the ranges. */
static void test_reduction(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value x = t_input(g, PTC_F32, 2, S45);
  ptc_value e = t_unary(g, "exp", x);
  int64_t d0 = 0;
  ptc_attr ra[2] = {{"dim", PTC_ATTR_INTS, 0, 0, 0.0, &d0, NULL, NULL, 1, NULL},
                    ptc_attr_bool("keepdim", 1)};
  ptc_value s = t_node(g, "sum", &e, 1, ra, 2);
  CHECK_OK(ptc_graph_add_output(g, s));
  ptc_attr aa = ptc_attr_int("dim", 1);
  CHECK_OK(ptc_graph_add_output(g, t_node(g, "argmax", &x, 1, &aa, 1)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 2 && t_count_nodes(p, IR_REDUCTION) == 2);
  if (p && p->nodes.len == 2) {
    const ir_node* n = ir_node_at(p, 0);
    CHECK(n->n_ranges == 1 && n->n_rranges == 1);
    CHECK(t_is_const(n->ranges[0], 5) && t_is_const(n->rranges[0], 4));
    const ir_op* ex = t_find_op(p, 0, IR_EXP);
    const ir_op* rd = t_find_op(p, 0, IR_REDUCE);
    CHECK(ex && ex->inner && rd && rd->rtype == IR_R_SUM && !rd->inner);
    const ir_op* am = t_find_op(p, 1, IR_REDUCE);
    CHECK(am && am->rtype == IR_R_ARGMAX && am->dtype == PTC_I64);
  }
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, S45, 5);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-5, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* ---- extern epilogues ------------------------------------------------------------------------------ */

static const ir_extern* only_extern(const ir_program* p) {
  for (size_t i = 0; p && i < p->nodes.len; i++)
    if (ir_node_at(p, i)->kind == IR_EXTERN) return &ir_node_at(p, i)->ext;
  return NULL;
}

/* relu(mm(a, w) + bias) -> one MATMUL extern with bias (beta 1) and relu. */
static void test_epilogue(ptc_context* ctx, bool commuted, bool twice) {
  ptc_graph* g = new_graph(ctx);
  const int64_t sa[2] = {3, 4}, sw[2] = {4, 5}, sb[1] = {5};
  ptc_value a = t_input(g, PTC_F32, 2, sa), w = t_input(g, PTC_F32, 2, sw);
  ptc_value b = t_input(g, PTC_F32, 1, sb);
  ptc_value mm = t_binary(g, "mm", a, w);
  ptc_value y = commuted ? t_binary(g, "add", b, mm) : t_binary(g, "add", mm, b);
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "relu", y)));
  if (twice) CHECK_OK(ptc_graph_add_output(g, mm));
  ir_program* p = t_lower(g, NULL);
  const ir_extern* e = only_extern(p);
  CHECK(e && e->kind == IR_EXT_MATMUL && e->n_in == 3);
  if (e && !twice) {
    CHECK(p->nodes.len == 1);
    CHECK(e->in[2] == p->input_bufs[2] && e->beta == 1.0 && e->activation == IR_ACT_RELU);
    CHECK(p->output_bufs[0] == e->out[0]);
  } else if (e) {
    CHECK(p->nodes.len == 2 && e->in[2] == -1 && e->activation == IR_ACT_NONE);
  }
  t_tensor ta, tw, tb;
  t_tensor_init(&ta, PTC_F32, 2, sa, 6);
  t_tensor_init(&tw, PTC_F32, 2, sw, 7);
  t_tensor_init(&tb, PTC_F32, 1, sb, 8);
  ptc_tensor in[3] = {ta.t, tw.t, tb.t};
  CHECK(t_matches_ref(ctx, g, NULL, in, 3, 1e-5, 1e-6));
  t_tensor_free(&ta);
  t_tensor_free(&tw);
  t_tensor_free(&tb);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* linear(x, W, b) -> sigmoid: the weight is passed transposed through an
 * alias buffer's strides, the bias and the activation are in the extern. */
static void test_linear(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  const int64_t sx[3] = {2, 3, 4}, sw[2] = {5, 4}, sb[1] = {5};
  ptc_value in[3] = {t_input(g, PTC_F32, 3, sx), t_input(g, PTC_F32, 2, sw),
                     t_input(g, PTC_F32, 1, sb)};
  ptc_value l = t_node(g, "linear", in, 3, NULL, 0);
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "sigmoid", l)));
  ir_program* p = t_lower(g, NULL);
  const ir_extern* e = only_extern(p);
  CHECK(p && p->nodes.len == 1 && e && e->activation == IR_ACT_SIGMOID && e->beta == 1.0);
  if (e) {
    const ir_buffer* wt = ir_buf(p, e->in[1]);
    CHECK(wt->kind == IR_BUF_INPUT && wt->graph_input == 1 && e->in[1] != p->input_bufs[1]);
    CHECK(t_is_const(wt->shape[0], 4) && t_is_const(wt->strides[0], 1));
    CHECK(t_is_const(wt->shape[1], 5) && t_is_const(wt->strides[1], 4));
  }
  t_tensor a[3];
  ptc_tensor ts[3];
  const int64_t* shapes[3] = {sx, sw, sb};
  const size_t ranks[3] = {3, 2, 1};
  for (int k = 0; k < 3; k++) {
    t_tensor_init(&a[k], PTC_F32, ranks[k], shapes[k], (uint32_t)k + 20);
    ts[k] = a[k].t;
  }
  CHECK(t_matches_ref(ctx, g, NULL, ts, 3, 1e-5, 1e-6));
  for (int k = 0; k < 3; k++) t_tensor_free(&a[k]);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* linear with constant weights: the transposed weight is a CONSTANT alias
 * buffer of the same graph value; a constant also feeds a pointwise op. */
static void test_constants(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  const int64_t sx[2] = {3, 4}, sw[2] = {2, 4};
  float w[8] = {0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 3};
  ptc_value wc = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_constant(g, "w", PTC_F32, sw, 2, w, PTC_CONSTANT_COPY, &wc));
  ptc_value in[2] = {t_input(g, PTC_F32, 2, sx), wc};
  ptc_value l = t_node(g, "linear", in, 2, NULL, 0);
  CHECK_OK(ptc_graph_add_output(g, l));
  CHECK_OK(ptc_graph_add_output(g, t_scalar_op(g, "mul", wc, 2.0)));
  ir_program* p = t_lower(g, NULL);
  const ir_extern* e = only_extern(p);
  CHECK(p && p->nodes.len == 2 && e);
  if (e) {
    const ir_buffer* wt = ir_buf(p, e->in[1]);
    CHECK(wt->kind == IR_BUF_CONSTANT && wt->graph_value == wc);
    CHECK(t_is_const(wt->strides[0], 1) && t_is_const(wt->strides[1], 4));
  }
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, sx, 70);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-5, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* ---- symbolic shapes ------------------------------------------------------------------------------- */

/* softmax over a [s0, 3] input written out of primitives, run at two sizes. */
static void test_dynamic(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_symbol_options so;
  ptc_symbol_options_init(&so);
  so.hint = 5;
  ptc_sym s0;
  CHECK_OK(ptc_graph_add_symbol(g, "s0", &so, &s0));
  ptc_dim dims[2] = {{5, s0, 0}, {3, 0, 0}};
  ptc_value x = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, dims, 2, NULL, &x));
  int64_t d1 = 1;
  ptc_attr ra[2] = {{"dim", PTC_ATTR_INTS, 0, 0, 0.0, &d1, NULL, NULL, 1, NULL},
                    ptc_attr_bool("keepdim", 1)};
  ptc_value m = t_node(g, "amax", &x, 1, ra, 2);
  ptc_value e = t_unary(g, "exp", t_binary(g, "sub", x, m));
  ptc_value s = t_node(g, "sum", &e, 1, ra, 2);
  CHECK_OK(ptc_graph_add_output(g, t_binary(g, "div", e, s)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->n_size_syms == 1);
  if (p) { /* ranges are symbolic */
    const ir_node* n = ir_node_at(p, 0);
    int64_t v;
    CHECK(n->kind == IR_REDUCTION && n->n_ranges == 1 && !sym_is_const(n->ranges[0], &v));
  }
  for (int64_t rows = 5; rows <= 9; rows += 4) {
    const int64_t shape[2] = {rows, 3};
    t_tensor a;
    t_tensor_init(&a, PTC_F32, 2, shape, (uint32_t)rows);
    CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-5, 1e-6));
    t_tensor_free(&a);
  }
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* ---- indirect indexing ------------------------------------------------------------------------------ */

static void test_gather_bounds(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  const int64_t sx[2] = {4, 3}, si[2] = {2, 3};
  ptc_value in[2] = {t_input(g, PTC_F32, 2, sx), t_input(g, PTC_I64, 2, si)};
  ptc_attr da = ptc_attr_int("dim", 0);
  CHECK_OK(ptc_graph_add_output(g, t_node(g, "gather", in, 2, &da, 1)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 1 && t_count_ops(p, 0, IR_INDIRECT) == 1);
  t_tensor x, ix, out;
  t_tensor_init(&x, PTC_F32, 2, sx, 30);
  t_tensor_init(&ix, PTC_I64, 2, si, 31);
  t_tensor_init(&out, PTC_F32, 2, si, 32);
  ptc_tensor ts[2] = {x.t, ix.t};
  CHECK(t_matches_ref(ctx, g, NULL, ts, 2, 0, 0));
  ((int64_t*)ix.data)[4] = 7;
  if (p)
    CHECK_ERR(ir_interpret(p, ts, 2, &out.t, 1, NULL, 0, 0), PTC_CODE_INVALID_ARGUMENT,
              "index 7 is out of bounds for dimension with size 4");
  t_tensor_free(&x);
  t_tensor_free(&ix);
  t_tensor_free(&out);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* cat of an integer floor division: the division must not run on the
 * masked-off placeholder (0) of its divisor, so it is realized first. */
static void test_cat_masked_division(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  const int64_t s4[1] = {4};
  ptc_value a = t_input(g, PTC_I64, 1, s4), b = t_input(g, PTC_I64, 1, s4);
  ptc_attr fl = ptc_attr_string("rounding_mode", "floor");
  ptc_value ab[2] = {a, b};
  ptc_value q = t_node(g, "div", ab, 2, &fl, 1);
  ptc_value qa[2] = {q, a};
  CHECK_OK(ptc_graph_add_output(g, t_node(g, "cat", qa, 2, NULL, 0)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 2 && t_count_ops(p, 1, IR_FLOORDIV) == 0);
  t_tensor ta, tb;
  t_tensor_init(&ta, PTC_I64, 1, s4, 60);
  t_tensor_init(&tb, PTC_I64, 1, s4, 61);
  for (int i = 0; i < 4; i++) {
    ((int64_t*)ta.data)[i] = 7 * i - 9;
    ((int64_t*)tb.data)[i] = i + 2;
  }
  ptc_tensor in[2] = {ta.t, tb.t};
  CHECK(t_matches_ref(ctx, g, NULL, in, 2, 0, 0));
  t_tensor_free(&ta);
  t_tensor_free(&tb);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* ---- host-registered ops ------------------------------------------------------------------------- */

static void my_scale(const float* x, float* out, int64_t n, double alpha) {
  for (int64_t i = 0; i < n; i++) out[i] = (float)(x[i] * alpha);
}

/* cos(my_scale(sin(x), alpha=3)): the custom op is an IR_EXT_CUSTOM node
 * between two pointwise nodes (its input realized). */
static void test_custom_op(ptc_context* ctx) {
  static const ptc_extern_arg args[] = {{PTC_EXTERN_ARG_INPUT, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_OUTPUT, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_NUMEL, 0, 0, NULL},
                                        {PTC_EXTERN_ARG_ATTR_FLOAT, 0, 0, "alpha"}};
  static const ptc_extern_output same = {0, -1};
  ptc_extern_op_desc d;
  ptc_extern_op_desc_init(&d);
  d.name = "ir_test_scale";
  d.fn = (void (*)(void))my_scale;
  d.n_inputs = 1;
  d.n_outputs = 1;
  d.outputs = &same;
  d.n_args = 4;
  d.args = args;
  CHECK_OK(ptc_register_extern_op(ctx, &d));
  ptc_graph* g = new_graph(ctx);
  ptc_value s = t_unary(g, "sin", t_input(g, PTC_F32, 2, S45));
  ptc_attr alpha = ptc_attr_float("alpha", 3.0);
  ptc_value c = t_node(g, "ir_test_scale", &s, 1, &alpha, 1);
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "cos", c)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 3);
  if (p && p->nodes.len == 3) {
    CHECK(ir_node_at(p, 0)->kind == IR_POINTWISE && ir_node_at(p, 2)->kind == IR_POINTWISE);
    CHECK(ir_node_at(p, 1)->kind == IR_EXTERN && ir_node_at(p, 1)->ext.kind == IR_EXT_CUSTOM);
    CHECK(ir_node_at(p, 1)->ext.in[0] == ir_node_at(p, 0)->out_buf);
  }
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, S45, 50);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 1e-6, 1e-6));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* A graph output that another node also reads is stored where it is
 * computed and loaded by the other node (not recomputed). */
static void test_output_reused(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value n = t_unary(g, "neg", t_input(g, PTC_F32, 2, S45));
  CHECK_OK(ptc_graph_add_output(g, n));
  CHECK_OK(ptc_graph_add_output(g, t_unary(g, "abs", n)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->nodes.len == 2 && t_count_ops(p, 0, IR_NEG) == 1 &&
        t_count_ops(p, 1, IR_NEG) == 0);
  CHECK(p && p->output_bufs[0] == ir_node_at(p, 0)->out_buf);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

/* ---- outputs and the dump ------------------------------------------------------------------------------ */

static void test_outputs_and_dump(ptc_context* ctx) {
  ptc_graph* g = new_graph(ctx);
  ptc_value x = t_input(g, PTC_F32, 2, S45);
  ptc_value c = t_unary(g, "contiguous", x);
  ptc_attr ta[2] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
  CHECK_OK(ptc_graph_add_output(g, x));
  CHECK_OK(ptc_graph_add_output(g, c));
  CHECK_OK(ptc_graph_add_output(g, t_node(g, "transpose", &x, 1, ta, 2)));
  ir_program* p = t_lower(g, NULL);
  CHECK(p && p->n_outputs == 3 && p->nodes.len == 1);
  if (p && p->n_outputs == 3) {
    CHECK(p->output_bufs[0] == p->input_bufs[0] && p->output_bufs[1] == p->input_bufs[0]);
    CHECK(ir_buf(p, p->output_bufs[2])->kind == IR_BUF_COMPUTED);
    ptc_strbuf sb;
    ptc_sb_init(&sb);
    ir_program_dump(p, &sb);
    CHECK(sb.data && strstr(sb.data, "in0: input f32 [4, 5] strides [5, 1]"));
    CHECK(sb.data && strstr(sb.data, "pointwise (transpose_1) ranges [5, 4]"));
    CHECK(sb.data && strstr(sb.data, "load in0[x0 + 5*x1]"));
    CHECK(sb.data && strstr(sb.data, "outputs: in0 in0 buf1"));
    ptc_sb_free(&sb);
  }
  t_tensor a;
  t_tensor_init(&a, PTC_F32, 2, S45, 40);
  CHECK(t_matches_ref(ctx, g, NULL, &a.t, 1, 0, 0));
  t_tensor_free(&a);
  ir_program_destroy(p);
  ptc_graph_destroy(g);
}

int main(void) {
  ptc_context* ctx = NULL;
  CHECK_OK(ptc_context_create(NULL, &ctx));
  test_sin_cos_one_node(ctx);
  test_square_cse(ctx);
  test_square_chain(ctx);
  test_reuse(ctx, "exp", 3, 1);
  test_reuse(ctx, "neg", 2, 2);
  test_reads(ctx);
  test_view_composition(ctx);
  test_reshape(ctx);
  test_deep_views(ctx);
  test_reduction(ctx);
  test_epilogue(ctx, false, false);
  test_epilogue(ctx, true, false);
  test_epilogue(ctx, false, true);
  test_linear(ctx);
  test_constants(ctx);
  test_dynamic(ctx);
  test_gather_bounds(ctx);
  test_cat_masked_division(ctx);
  test_custom_op(ctx);
  test_output_reused(ctx);
  test_outputs_and_dump(ctx);
  ptc_context_release(ctx);
  return check_summary("test_ir_lower");
}
