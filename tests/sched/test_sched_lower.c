/* test_sched_lower.c - schedules of real graphs (built through the public
 * graph API, decomposed by lib/decomp, lowered by ir_lower): softmax (the
 * op and its amax/sub/exp/sum/div decomposition) and layer norm become one
 * kernel with kernel-local row statistics, static and dynamic; realized
 * sin -> cos fuses; a pointwise node after a full reduction is not fused
 * into the reduction's loop; a realized diamond fuses without cycles; a
 * matmul stays an extern kernel of its own; a layer norm viewed as a
 * matmul's 2-D input is one kernel with its statistics; a residual stream
 * is stored by each layer norm's kernel, not re-added; a realized chain of 6 pointwise
 * nodes without fusion needs at most 2 slots; views of computed buffers
 * passed to externs in place (GPT-2's q/k/v split of a GEMM output into
 * attention, the attention output stored [B, L, H, E] and read by the next
 * GEMM, GEMM operands sliced from a GEMM output) with no copy node, layouts
 * a GEMM does not take still copied, results against the ref backend (IR
 * interpreter, cpu backend). Every plan is checked against the invariants of
 * sched_check.h. */
#include "lib/decomp/decomp.h"

#include <math.h>
#include "tests/sched/sched_util.h"

typedef struct lg {
  ptc_context* ctx;
  ptc_graph* g;
  ptc_sym s0;
  ir_program* p;
  sched_plan* plan;
  int failures_before;
} lg;

/* hint > 1: rows are symbol s0 with that hint; 0: static rows. */
static void lg_init(lg* t, int64_t hint) {
  memset(t, 0, sizeof *t);
  t->failures_before = check_failures;
  CHECK_OK(ptc_context_create(NULL, &t->ctx));
  CHECK_OK(ptc_graph_create(t->ctx, &t->g));
  if (hint) {
    ptc_symbol_options o;
    ptc_symbol_options_init(&o);
    o.hint = hint;
    CHECK_OK(ptc_graph_add_symbol(t->g, "s0", &o, &t->s0));
  }
}

/* Input [rows, cols] (rows symbolic when the graph has s0 and `dyn`; cols
 * 0: rank 1). */
static ptc_value lg_input_dyn(lg* t, int64_t rows, int64_t cols, bool dyn) {
  ptc_dim d[2] = {{rows, dyn ? t->s0 : 0, 0}, {cols, 0, 0}};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(t->g, NULL, PTC_F32, d, cols ? 2 : 1, NULL, &v));
  return v;
}
static ptc_value lg_input(lg* t, int64_t rows, int64_t cols) {
  return lg_input_dyn(t, rows, cols, true);
}

static ptc_value lg_op(lg* t, const char* op, const ptc_value* in, size_t n, const ptc_attr* a,
                       size_t na) {
  ptc_value out = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_node(t->g, op, in, n, a, na, &out, 1, NULL));
  return out;
}
static ptc_value lg_un(lg* t, const char* op, ptc_value x) { return lg_op(t, op, &x, 1, NULL, 0); }
static ptc_value lg_bin(lg* t, const char* op, ptc_value x, ptc_value y) {
  ptc_value in[2] = {x, y};
  return lg_op(t, op, in, 2, NULL, 0);
}
/* Reduction over the last dim with keepdim. */
static ptc_value lg_red_last(lg* t, const char* op, ptc_value x) {
  int64_t dim = -1;
  ptc_attr a[2] = {ptc_attr_ints("dim", &dim, 1), ptc_attr_bool("keepdim", 1)};
  return lg_op(t, op, &x, 1, a, 2);
}

/* decompose -> lower -> schedule, then the invariants. */
static void lg_run(lg* t, bool inline_pointwise, bool fuse) {
  ptc_graph* d = NULL;
  CHECK_OK(decomp_graph(t->g, &d));
  if (!d) return;
  ptc_graph_destroy(t->g);
  t->g = d;
  ir_lower_options lo;
  ir_lower_options_init(&lo);
  lo.inline_pointwise = inline_pointwise;
  CHECK_OK(ir_lower(t->ctx, t->g, &lo, &t->p));
  if (!t->p) return;
  sched_options so;
  sched_options_init(&so);
  so.fuse = fuse;
  CHECK_OK(sched_run(t->p, &so, &t->plan));
  if (t->plan) CHECK(sched_check_plan(t->p, t->plan, "lowered") == 0);
}

static int lg_count_home(const lg* t, int home) {
  int n = 0;
  for (size_t b = 0; t->plan && b < t->p->buffers.len; b++) n += t->plan->buf_home[b] == home;
  return n;
}

/* Every buffer written by a reduction node is kernel-local. */
static bool lg_reductions_local(const lg* t) {
  for (size_t i = 0; t->plan && i < t->p->nodes.len; i++) {
    const ir_node* n = ir_node_at(t->p, i);
    if (n->kind == IR_REDUCTION && t->plan->buf_home[n->out_buf] != SCHED_HOME_LOCAL) return false;
  }
  return t->plan != NULL;
}

static int lg_count_nodes(const lg* t, int kind) {
  int n = 0;
  for (size_t i = 0; t->p && i < t->p->nodes.len; i++) n += ir_node_at(t->p, i)->kind == kind;
  return n;
}

static void lg_done(lg* t, const char* name) {
  if (check_failures != t->failures_before || getenv("PTC_TEST_DUMP")) {
    ptc_strbuf sb;
    ptc_sb_init(&sb);
    if (t->p) ir_program_dump(t->p, &sb);
    if (t->plan) sched_plan_dump(t->p, t->plan, &sb);
    printf("---- %s ----\n%s", name, sb.data ? sb.data : "");
    ptc_sb_free(&sb);
  }
  sched_plan_destroy(t->plan);
  ir_program_destroy(t->p);
  ptc_graph_destroy(t->g);
  ptc_context_release(t->ctx);
}

static void test_softmax(bool op, int64_t hint) {
  lg t;
  lg_init(&t, hint);
  ptc_value x = lg_input(&t, 32, 128), y;
  if (op) {
    ptc_attr a = ptc_attr_int("dim", -1);
    y = lg_op(&t, "softmax", &x, 1, &a, 1);
  } else {
    ptc_value e = lg_un(&t, "exp", lg_bin(&t, "sub", x, lg_red_last(&t, "amax", x)));
    y = lg_bin(&t, "div", e, lg_red_last(&t, "sum", e));
  }
  CHECK_OK(ptc_graph_add_output(t.g, y));
  lg_run(&t, true, true);
  CHECK(lg_count_nodes(&t, IR_REDUCTION) == 2);
  CHECK(t.plan && t.plan->n_kernels == 1);
  CHECK(lg_reductions_local(&t));
  CHECK(lg_count_home(&t, SCHED_HOME_LOCAL) >= 2);
  lg_done(&t, op ? "softmax op" : "softmax decomposed");
}

static void test_layernorm(bool op, int64_t hint) {
  lg t;
  lg_init(&t, hint);
  ptc_value x = lg_input(&t, 16, 64), y;
  if (op) {
    ptc_value w = lg_input_dyn(&t, 64, 0, false), b = lg_input_dyn(&t, 64, 0, false);
    int64_t ns = 64;
    ptc_attr a[2] = {ptc_attr_ints("normalized_shape", &ns, 1), ptc_attr_float("eps", 1e-5)};
    ptc_value in[3] = {x, w, b};
    y = lg_op(&t, "layer_norm", in, 3, a, 2);
  } else {
    ptc_value mean = lg_red_last(&t, "mean", x);
    ptc_value d = lg_bin(&t, "sub", x, mean);
    ptc_value var = lg_red_last(&t, "mean", lg_bin(&t, "mul", d, d));
    y = lg_bin(&t, "mul", d, lg_un(&t, "rsqrt", var));
  }
  CHECK_OK(ptc_graph_add_output(t.g, y));
  lg_run(&t, true, true);
  CHECK(lg_count_nodes(&t, IR_REDUCTION) == 2);
  CHECK(t.plan && t.plan->n_kernels == 1);
  CHECK(lg_reductions_local(&t));
  lg_done(&t, op ? "layer_norm op" : "layernorm decomposed");
}

static void test_sin_cos(void) {
  lg t;
  lg_init(&t, 1000);
  ptc_value x = lg_input(&t, 0, 0);
  CHECK_OK(ptc_graph_add_output(t.g, lg_un(&t, "cos", lg_un(&t, "sin", x))));
  lg_run(&t, false, true);
  CHECK(lg_count_nodes(&t, IR_POINTWISE) == 2);
  CHECK(t.plan && t.plan->n_kernels == 1 && t.plan->n_fusions == 1);
  CHECK(lg_count_home(&t, SCHED_HOME_LOCAL) == 1 && t.plan && t.plan->n_slots == 0);
  lg_done(&t, "sin cos");
}

/* y = x - sum(x) (full reduction, broadcast back). */
static void test_full_reduction(void) {
  lg t;
  lg_init(&t, 0);
  ptc_value x = lg_input(&t, 64, 32);
  ptc_value s = lg_un(&t, "sum", x);
  CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "sub", x, s)));
  lg_run(&t, true, true);
  CHECK(lg_count_nodes(&t, IR_REDUCTION) == 1);
  CHECK(t.plan && t.plan->n_kernels == 2);
  lg_done(&t, "full reduction");
}

/* a = sin(x); b = cos(a); c = exp(a); d = b + c, every value realized. */
static void test_diamond(void) {
  lg t;
  lg_init(&t, 100);
  ptc_value x = lg_input(&t, 0, 0);
  ptc_value a = lg_un(&t, "sin", x);
  ptc_value d = lg_bin(&t, "add", lg_un(&t, "cos", a), lg_un(&t, "exp", a));
  CHECK_OK(ptc_graph_add_output(t.g, d));
  lg_run(&t, false, true);
  CHECK(lg_count_nodes(&t, IR_POINTWISE) == 4);
  CHECK(t.plan && t.plan->n_kernels == 1 && t.plan->n_fusions == 3);
  lg_done(&t, "diamond");
}

/* sin(x) @ w, then cos: the matmul is an extern kernel of its own. */
static void test_matmul(void) {
  lg t;
  lg_init(&t, 8);
  ptc_value x = lg_input(&t, 8, 16);
  ptc_dim wd[2] = {{16, 0, 0}, {4, 0, 0}};
  ptc_value w = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(t.g, "w", PTC_F32, wd, 2, NULL, &w));
  ptc_value m = lg_bin(&t, "matmul", lg_un(&t, "sin", x), w);
  CHECK_OK(ptc_graph_add_output(t.g, lg_un(&t, "cos", m)));
  lg_run(&t, true, true);
  CHECK(lg_count_nodes(&t, IR_EXTERN) == 1);
  int ext = 0;
  for (uint32_t k = 0; t.plan && k < t.plan->n_kernels; k++)
    if (t.plan->kernels[k].is_extern) {
      ext++;
      CHECK(t.plan->kernels[k].n_nodes == 1);
    }
  CHECK(ext == 1);
  lg_done(&t, "matmul");
}

/* layer_norm of a [B, S, H] value, viewed as [B*S, H] for a matmul (a
 * transformer's pre-norm GEMM input; `permuted`: the value is a transpose of
 * a [S, B, H] input, so the view cannot re-stride it): the normalized rows
 * are stored by a node looping over [B, S, H] (the view's source), which
 * fuses into the statistics kernel, instead of a [B*S, H] node reading the
 * statistics through FloorDiv/ModularIndexing in a kernel of its own. */
static void test_layernorm_view_matmul(bool permuted) {
  lg t;
  lg_init(&t, 0);
  ptc_dim xd[3] = {{permuted ? 6 : 4, 0, 0}, {permuted ? 4 : 6, 0, 0}, {32, 0, 0}};
  ptc_dim wd[2] = {{32, 0, 0}, {8, 0, 0}};
  ptc_value x = PTC_VALUE_NONE, w = PTC_VALUE_NONE, lw = lg_input_dyn(&t, 32, 0, false),
            lb = lg_input_dyn(&t, 32, 0, false);
  CHECK_OK(ptc_graph_add_input(t.g, "x", PTC_F32, xd, 3, NULL, &x));
  CHECK_OK(ptc_graph_add_input(t.g, "w", PTC_F32, wd, 2, NULL, &w));
  if (permuted) {
    ptc_attr ta[2] = {ptc_attr_int("dim0", 0), ptc_attr_int("dim1", 1)};
    x = lg_op(&t, "transpose", &x, 1, ta, 2);
  }
  int64_t ns = 32, flat[2] = {-1, 32};
  ptc_attr a[2] = {ptc_attr_ints("normalized_shape", &ns, 1), ptc_attr_float("eps", 1e-5)};
  ptc_value in[3] = {x, lw, lb};
  ptc_value y = lg_op(&t, "layer_norm", in, 3, a, 2);
  ptc_attr va = ptc_attr_ints("size", flat, 2);
  y = lg_op(&t, "view", &y, 1, &va, 1);
  CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "matmul", y, w)));
  lg_run(&t, true, true);
  CHECK(lg_count_nodes(&t, IR_EXTERN) == 1);
  CHECK(t.plan && t.plan->n_kernels == 2);
  CHECK(lg_reductions_local(&t));
  for (size_t i = 0; t.p && i < t.p->nodes.len; i++) {
    const ir_node* n = ir_node_at(t.p, i);
    if (n->kind == IR_POINTWISE) CHECK(n->n_ranges == 3);
  }
  lg_done(&t, permuted ? "layer norm, transpose, view, matmul" : "layer norm, view, matmul");
}

/* Distinct buffers node i loads. */
static uint32_t lg_node_reads(const lg* t, size_t i) {
  const ir_body* b = &ir_node_at(t->p, i)->body;
  uint32_t n = 0;
  for (uint32_t k = 0; k < b->n; k++) {
    if (b->ops[k].opcode != IR_LOAD) continue;
    bool seen = false;
    for (uint32_t j = 0; j < k && !seen; j++)
      seen = b->ops[j].opcode == IR_LOAD && b->ops[j].buf == b->ops[k].buf;
    n += !seen;
  }
  return n;
}

/* A residual stream r_k = r_{k-1} + a_k, each r_k layer-normed (a pre-norm
 * transformer's): every r_k is stored once, by its layer norm's kernel, so
 * no node re-reads the chain x, a_1, .., a_k (before: r_3's layer norm
 * loaded x, a_1, a_2, a_3); at most one kernel per layer norm. */
static void test_residual_stream(void) {
  lg t;
  lg_init(&t, 0);
  ptc_value r = lg_input_dyn(&t, 16, 64, false);
  for (int k = 0; k < 3; k++) {
    r = lg_bin(&t, "add", r, lg_input_dyn(&t, 16, 64, false));
    ptc_value mean = lg_red_last(&t, "mean", r);
    ptc_value d = lg_bin(&t, "sub", r, mean);
    ptc_value var = lg_red_last(&t, "mean", lg_bin(&t, "mul", d, d));
    CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "mul", d, lg_un(&t, "rsqrt", var))));
  }
  CHECK_OK(ptc_graph_add_output(t.g, r));
  lg_run(&t, true, true);
  CHECK(t.plan && t.plan->n_kernels <= 3);
  for (size_t i = 0; t.p && i < t.p->nodes.len; i++) CHECK(lg_node_reads(&t, i) <= 3);
  lg_done(&t, "residual stream");
}

/* 6 realized pointwise nodes, no fusion: in place or ping-pong. */
static void test_chain(void) {
  lg t;
  lg_init(&t, 4096);
  ptc_value v = lg_input(&t, 0, 0);
  static const char* const ops[] = {"sin", "cos", "exp", "neg", "abs", "tanh"};
  for (int i = 0; i < 6; i++) v = lg_un(&t, ops[i], v);
  CHECK_OK(ptc_graph_add_output(t.g, v));
  lg_run(&t, false, false);
  CHECK(lg_count_nodes(&t, IR_POINTWISE) == 6);
  CHECK(t.plan && t.plan->n_kernels == 6 && t.plan->n_slots <= 2);
  CHECK(t.plan && t.plan->n_inplace + t.plan->n_reused >= 3);
  lg_done(&t, "chain");
}

/* ---- views of computed buffers passed to externs ------------------------------------- */

/* Static f32 input [d0, d1(, d2)] named nm. */
static ptc_value lg_input3(lg* t, const char* nm, int64_t d0, int64_t d1, int64_t d2) {
  ptc_dim d[3] = {{d0, 0, 0}, {d1, 0, 0}, {d2, 0, 0}};
  ptc_value v = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_input(t->g, nm, PTC_F32, d, d2 ? 3 : d1 ? 2 : 1, NULL, &v));
  return v;
}

static ptc_value lg_view(lg* t, ptc_value x, const int64_t* size, size_t n) {
  ptc_attr a = ptc_attr_ints("size", size, n);
  return lg_op(t, "view", &x, 1, &a, 1);
}

static ptc_value lg_transpose(lg* t, ptc_value x, int64_t d0, int64_t d1) {
  ptc_attr a[2] = {ptc_attr_int("dim0", d0), ptc_attr_int("dim1", d1)};
  return lg_op(t, "transpose", &x, 1, a, 2);
}

/* split(x, size, dim) into n outputs. */
static void lg_split(lg* t, ptc_value x, int64_t size, int64_t dim, ptc_value* out, size_t n) {
  ptc_attr a[2] = {ptc_attr_int("split_size", size), ptc_attr_int("dim", dim)};
  size_t got = 0;
  CHECK_OK(ptc_graph_add_node(t->g, "split", &x, 1, a, 2, out, n, &got));
  CHECK(got == n);
}

/* Inputs of t->g filled with a fixed pseudo-random stream in [-1, 1). */
typedef struct lg_data {
  size_t n;
  ptc_tensor t[8];
  int64_t shape[8][PTC_MAX_RANK];
  float* mem[8];
} lg_data;

static void lg_data_make(const lg* t, lg_data* d) {
  memset(d, 0, sizeof *d);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  d->n = ptc_graph_num_inputs(t->g);
  CHECK(d->n <= 8);
  for (size_t i = 0; i < d->n && i < 8; i++) {
    const gvalue* gv = graph_value(t->g, ptc_graph_input(t->g, i));
    int64_t n = 1;
    for (uint32_t k = 0; k < gv->rank; k++) {
      CHECK(sym_is_const(gv->shape[k], &d->shape[i][k]));
      n *= d->shape[i][k];
    }
    d->mem[i] = malloc((size_t)(n + 1) * sizeof(float));
    for (int64_t e = 0; d->mem[i] && e < n; e++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      d->mem[i][e] = (float)((double)(x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    }
    d->t[i].data = d->mem[i];
    d->t[i].device.device_type = PTC_DEVICE_CPU;
    d->t[i].ndim = (int32_t)gv->rank;
    d->t[i].dtype = ptc_dtype_to_dl(PTC_F32);
    d->t[i].shape = d->shape[i];
  }
}

static void lg_data_free(lg_data* d) {
  for (size_t i = 0; i < d->n && i < 8; i++) free(d->mem[i]);
}

/* t->g (before lowering) compiled for `backend` and run on d. */
static ptc_results* lg_backend_run(const lg* t, const char* backend, const lg_data* d) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  ptc_executable* e = NULL;
  ptc_results* r = NULL;
  CHECK_OK(ptc_compile(t->ctx, t->g, &o, &e));
  if (e) CHECK_OK(ptc_executable_run_alloc(e, d->t, d->n, NULL, &r));
  ptc_executable_release(e);
  return r;
}

/* Largest |a - b| / (1 + |b|) of f32 tensors a (n elements) and b. */
static double lg_err(const float* a, const ptc_tensor* b, int64_t n) {
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double y = ((const float*)b->data)[i];
    double e = fabs((double)a[i] - y) / (1.0 + fabs(y));
    if (!(e <= worst)) worst = e;
  }
  return worst;
}

/* The lowered program t->p interpreted on d against the ref results. */
static void lg_check_interp(const lg* t, const lg_data* d, const ptc_results* ref) {
  if (!t->p || !ref) return;
  size_t n_out = ptc_results_count(ref);
  CHECK(n_out == t->p->n_outputs && n_out <= 8);
  ptc_tensor out[8];
  float* mem[8] = {0};
  for (size_t k = 0; k < n_out && k < 8; k++) {
    out[k] = *ptc_results_get(ref, k);
    out[k].strides = NULL;
    out[k].byte_offset = 0;
    int64_t n = 1;
    for (int32_t i = 0; i < out[k].ndim; i++) n *= out[k].shape[i];
    mem[k] = calloc((size_t)n + 1, sizeof(float));
    out[k].data = mem[k];
  }
  CHECK_OK(ir_interpret(t->p, d->t, d->n, out, n_out, NULL, 0, 1));
  for (size_t k = 0; k < n_out && k < 8; k++) {
    int64_t n = 1;
    for (int32_t i = 0; i < out[k].ndim; i++) n *= out[k].shape[i];
    double e = lg_err(mem[k], ptc_results_get(ref, k), n);
    if (!(e < 1e-4)) printf("  output %zu: interpreted program off by %g\n", k, e);
    CHECK(e < 1e-4);
    free(mem[k]);
  }
}

static int lg_count_bufs(const lg* t, int kind) {
  int n = 0;
  for (size_t b = 0; t->p && b < t->p->buffers.len; b++) n += ir_buf(t->p, (int32_t)b)->kind == kind;
  return n;
}

/* lower (no decomposition: sdpa stays one fallback extern, as on the cuda
 * backend) -> schedule, then the invariants. */
static void lg_run_raw(lg* t, bool views) {
  ir_lower_options lo;
  ir_lower_options_init(&lo);
  lo.extern_views = views;
  CHECK_OK(ir_lower(t->ctx, t->g, &lo, &t->p));
  if (!t->p) return;
  sched_options so;
  sched_options_init(&so);
  CHECK_OK(sched_run(t->p, &so, &t->plan));
  if (t->plan) CHECK(sched_check_plan(t->p, t->plan, "lowered raw") == 0);
}

/* GPT-2's attention block: qkv = x @ w + b ([B*S, 3C], one GEMM), viewed
 * [B, S, 3C], split into q, k, v, each viewed [B, S, H, D] and transposed
 * to [B, H, S, D]; causal sdpa; its output transposed back, reshaped to
 * [B*S, C] and multiplied by wo. With extern views: the attention reads q,
 * k, v in place (three views of the GEMM output), writes [B, S, H, D], and
 * the output GEMM reads that as [B*S, C] in place: no copy node at all
 * (before: a copy of q, k, v and one of the attention output). Results of
 * the program (IR interpreter) against the ref backend. */
static void test_attention_views(bool views) {
  enum { B = 2, S = 16, H = 2, D = 32, C = H * D };
  lg t;
  lg_init(&t, 0);
  ptc_value x = lg_input3(&t, "x", B * S, C, 0), w = lg_input3(&t, "w", C, 3 * C, 0);
  ptc_value bias = lg_input3(&t, "b", 3 * C, 0, 0), wo = lg_input3(&t, "wo", C, C, 0);
  ptc_value in3[3] = {bias, x, w};
  ptc_value qkv = lg_op(&t, "addmm", in3, 3, NULL, 0);
  int64_t s3[3] = {B, S, 3 * C}, s4[4] = {B, S, H, D}, s2[2] = {B * S, C};
  qkv = lg_view(&t, qkv, s3, 3);
  ptc_value qs[3];
  lg_split(&t, qkv, C, 2, qs, 3);
  for (int k = 0; k < 3; k++) qs[k] = lg_transpose(&t, lg_view(&t, qs[k], s4, 4), 1, 2);
  ptc_attr ca = ptc_attr_bool("is_causal", 1);
  ptc_value o = lg_op(&t, "scaled_dot_product_attention", qs, 3, &ca, 1);
  o = lg_view(&t, lg_op(&t, "contiguous", (ptc_value[]){lg_transpose(&t, o, 1, 2)}, 1, NULL, 0),
              s2, 2);
  CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "mm", o, wo)));
  lg_data d;
  lg_data_make(&t, &d);
  ptc_results* ref = lg_backend_run(&t, "ref", &d);
  lg_run_raw(&t, views);
  CHECK(lg_count_nodes(&t, IR_EXTERN) == 3);
  if (views) {
    CHECK(lg_count_nodes(&t, IR_POINTWISE) == 0);
    CHECK(t.plan && t.plan->n_kernels == 3);
    CHECK(lg_count_bufs(&t, IR_BUF_VIEW) == 4);
    /* the attention output is stored [B, S, H, D] */
    for (size_t i = 0; t.p && i < t.p->nodes.len; i++) {
      const ir_node* n = ir_node_at(t.p, i);
      if (n->kind != IR_EXTERN || n->ext.kind != IR_EXT_FALLBACK) continue;
      const ir_buffer* ob = ir_buf(t.p, n->ext.out[0]);
      int64_t s1 = 0, s2v = 0;
      CHECK(sym_is_const(ob->strides[1], &s1) && s1 == D);
      CHECK(sym_is_const(ob->strides[2], &s2v) && s2v == H * D);
      for (uint32_t k = 0; k < 3; k++) CHECK(ir_buf(t.p, n->ext.in[k])->kind == IR_BUF_VIEW);
    }
  } else {
    CHECK(lg_count_nodes(&t, IR_POINTWISE) >= 2); /* the copies */
    CHECK(lg_count_bufs(&t, IR_BUF_VIEW) == 0);
  }
  lg_check_interp(&t, &d, ref);
  ptc_results_destroy(ref);
  lg_data_free(&d);
  lg_done(&t, views ? "attention views" : "attention copies");
}

/* A GEMM's [N, 3C] output split along its columns into GEMM operands: q
 * ([N, C], row stride 3C) as a 2-D A, k viewed [B, S, C] as a batched A
 * (batch dims collapse), v transposed as a B operand, all in place; a
 * column slice at an offset of 32 bytes (not the 256-byte alignment
 * cuBLASLt assumes) and a [B, H, S, D] head view (batch dims that do not
 * collapse) are still copied. Decomposed and lowered as the cpu backend
 * does; the interpreted program and the cpu backend against ref. */
static void test_gemm_views(void) {
  enum { B = 2, S = 8, C = 64, N = B * S, H = 2, D = C / H };
  lg t;
  lg_init(&t, 0);
  ptc_value x = lg_input3(&t, "x", N, C, 0), w = lg_input3(&t, "w", C, 3 * C, 0);
  ptc_value w2 = lg_input3(&t, "w2", C, 16, 0), w3 = lg_input3(&t, "w3", N, 16, 0);
  ptc_value qkv = lg_bin(&t, "mm", x, w);
  ptc_value qs[3];
  lg_split(&t, qkv, C, 1, qs, 3);
  CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "mm", qs[0], w2)));          /* A view */
  int64_t s3[3] = {B, S, C};
  CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "matmul", lg_view(&t, qs[1], s3, 3), w2)));
  CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "mm", lg_transpose(&t, qs[2], 0, 1), w3)));
  /* copies: a misaligned slice, heads [B, H, S, D] @ [B, H, D, S] */
  ptc_attr sa[4] = {ptc_attr_int("dim", 1), ptc_attr_int("start", 8), ptc_attr_int("end", 8 + C),
                    ptc_attr_int("step", 1)};
  ptc_value mis = lg_op(&t, "slice", &qkv, 1, sa, 4);
  ptc_value s4[1];
  int64_t hs[4] = {B, S, H, D};
  s4[0] = lg_transpose(&t, lg_view(&t, qs[0], hs, 4), 1, 2);
  ptc_value kt = lg_transpose(&t, lg_transpose(&t, lg_view(&t, qs[1], hs, 4), 1, 2), 2, 3);
  ptc_value sum = lg_bin(&t, "add", lg_bin(&t, "mm", mis, w2),
                         lg_bin(&t, "mm", lg_bin(&t, "mm", x, w2), lg_input3(&t, "w4", 16, 16, 0)));
  CHECK_OK(ptc_graph_add_output(t.g, sum));
  CHECK_OK(ptc_graph_add_output(t.g, lg_bin(&t, "matmul", s4[0], kt)));
  lg_data d;
  lg_data_make(&t, &d);
  ptc_results* ref = lg_backend_run(&t, "ref", &d);
  ptc_results* cpu = ptc_backend_available("cpu", NULL) ? lg_backend_run(&t, "cpu", &d) : NULL;
  lg_run(&t, true, true);
  /* q, k, v^T in place; the misaligned slice and both head views copied */
  CHECK(lg_count_bufs(&t, IR_BUF_VIEW) == 3);
  CHECK(lg_count_nodes(&t, IR_POINTWISE) == 4); /* the 3 copies and the add */
  int copies_of_qkv = 0;
  for (size_t i = 0; t.p && i < t.p->nodes.len; i++) {
    const ir_node* n = ir_node_at(t.p, i);
    if (n->kind != IR_POINTWISE) continue;
    for (uint32_t k = 0; k < n->body.n; k++)
      copies_of_qkv += n->body.ops[k].opcode == IR_LOAD && n->body.ops[k].buf == ir_node_at(t.p, 0)->ext.out[0];
  }
  CHECK(copies_of_qkv == 3);
  lg_check_interp(&t, &d, ref);
  for (size_t k = 0; cpu && ref && k < ptc_results_count(ref); k++) {
    const ptc_tensor* a = ptc_results_get(cpu, k);
    int64_t n = 1;
    for (int32_t i = 0; i < a->ndim; i++) n *= a->shape[i];
    double e = lg_err((const float*)a->data, ptc_results_get(ref, k), n);
    if (!(e < 1e-4)) printf("  output %zu: cpu backend off by %g\n", k, e);
    CHECK(e < 1e-4);
  }
  ptc_results_destroy(cpu);
  ptc_results_destroy(ref);
  lg_data_free(&d);
  lg_done(&t, "gemm views");
}

int main(void) {
  test_softmax(true, 0);
  test_softmax(true, 64);
  test_softmax(false, 0);
  test_softmax(false, 64);
  test_layernorm(true, 0);
  test_layernorm(true, 16);
  test_layernorm(false, 0);
  test_layernorm(false, 16);
  test_sin_cos();
  test_full_reduction();
  test_diamond();
  test_matmul();
  test_layernorm_view_matmul(false);
  test_layernorm_view_matmul(true);
  test_residual_stream();
  test_chain();
  test_attention_views(true);
  test_attention_views(false);
  test_gemm_views();
  return check_summary("test_sched_lower");
}
