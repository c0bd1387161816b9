/* test_conv_bn.c - the conv-bn fold (lib/runtime/pass_conv_bn.c): which
 * conv -> batch_norm pairs fold (conv2d + relu, conv1d, grouped, no conv
 * bias, batch_norm without affine, parameters as constants or as graph
 * inputs, bf16) and which do not (conv output used twice or returned), the
 * graph after the pass (no batch_norm, one conv with a bias, constants when
 * the parameters were constants), the switch (PTC_FOLD_CONV_BN=0 / const,
 * disable_fusion, backend "ref"), and differential checks: the unfolded
 * graph on "ref" against the folded graph on "ref" and the original graph
 * compiled for "cpu" (which folds inside ptc_compile). */
#include "lib/graph/op.h"
#include "lib/runtime/pass_conv_bn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

typedef struct spec {
  const char* name;
  uint32_t nsp;     /* 1: conv1d, 2: conv2d */
  int64_t groups;
  bool conv_bias, affine, relu;
  bool params_const; /* weights and bn parameters as constants (else inputs) */
  int32_t dtype;
  int use_twice;     /* 1: conv output also a graph output; 2: also added to bn */
  bool expect_fold;
} spec;

enum { N = 2, C = 4, OC = 6, L = 7, K = 3, MAXP = 8 };

/* A graph input or constant with its data (f32 values, stored as dtype). */
typedef struct tens {
  ptc_value v;
  int64_t shape[4];
  int32_t rank;
  int64_t numel;
  float* f;  /* values */
  void* raw; /* dtype storage */
} tens;

typedef struct built {
  ptc_graph* g;
  tens in[MAXP];
  size_t n_in; /* graph inputs in order */
  tens consts[MAXP];
  size_t n_consts;
} built;

static uint64_t rng = 0x9e3779b97f4a7c15u;
static float urand(float lo, float hi) {
  rng = rng * 6364136223846793005u + 1442695040888963407u;
  return lo + (hi - lo) * (float)((rng >> 40) / 16777216.0);
}

static void fill(tens* t, int32_t dtype, float lo, float hi) {
  t->numel = 1;
  for (int32_t d = 0; d < t->rank; d++) t->numel *= t->shape[d];
  t->f = malloc((size_t)t->numel * sizeof *t->f);
  t->raw = malloc((size_t)t->numel * 4);
  for (int64_t i = 0; i < t->numel; i++) {
    float x = urand(lo, hi);
    if (dtype == PTC_BF16) {
      uint16_t h = ptc_f32_to_bf16(x);
      ((uint16_t*)t->raw)[i] = h;
      x = ptc_bf16_to_f32(h);
    } else {
      ((float*)t->raw)[i] = x;
    }
    t->f[i] = x;
  }
}

/* A parameter (or the activation when force_input) as input or constant. */
static ptc_value param(built* b, const spec* s, const char* name, const int64_t* shape,
                       int32_t rank, float lo, float hi, bool force_input) {
  bool as_input = force_input || !s->params_const;
  tens* t = as_input ? &b->in[b->n_in++] : &b->consts[b->n_consts++];
  memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
  t->rank = rank;
  fill(t, s->dtype, lo, hi);
  t->v = PTC_VALUE_NONE;
  if (as_input) {
    ptc_dim d[4];
    for (int32_t i = 0; i < rank; i++) d[i] = (ptc_dim){shape[i], 0, 0};
    CHECK_OK(ptc_graph_add_input(b->g, name, s->dtype, d, (size_t)rank, NULL, &t->v));
  } else {
    CHECK_OK(ptc_graph_add_constant(b->g, name, s->dtype, shape, (size_t)rank, t->raw,
                                    PTC_CONSTANT_COPY, &t->v));
  }
  return t->v;
}

static ptc_value node1(ptc_graph* g, const char* op, const ptc_value* in, size_t n,
                       const ptc_attr* a, size_t na) {
  ptc_value out = PTC_VALUE_NONE;
  CHECK_OK(ptc_graph_add_node(g, op, in, n, a, na, &out, 1, NULL));
  return out;
}

/* x -> conv -> batch_norm(eval) [-> relu] [+ c], as the spec says. */
static void build(ptc_context* ctx, const spec* s, built* b) {
  memset(b, 0, sizeof *b);
  CHECK_OK(ptc_graph_create(ctx, &b->g));
  int64_t xs[4] = {N, C, L, L}, ws[4] = {OC, C / s->groups, K, K}, cs[1] = {OC};
  int32_t r = (int32_t)s->nsp + 2;
  ptc_value x = param(b, s, "x", xs, r, -1, 1, true);
  ptc_value w = param(b, s, "w", ws, r, -0.5f, 0.5f, false);
  ptc_value cb = s->conv_bias ? param(b, s, "cb", cs, 1, -0.5f, 0.5f, false) : PTC_VALUE_NONE;
  ptc_value gm = s->affine ? param(b, s, "gamma", cs, 1, 0.5f, 1.5f, false) : PTC_VALUE_NONE;
  ptc_value bt = s->affine ? param(b, s, "beta", cs, 1, -0.5f, 0.5f, false) : PTC_VALUE_NONE;
  ptc_value mean = param(b, s, "mean", cs, 1, -0.5f, 0.5f, false);
  ptc_value var = param(b, s, "var", cs, 1, 0.5f, 2.0f, false);
  int64_t one[2] = {1, 1};
  ptc_attr ca[2] = {ptc_attr_ints("padding", one, s->nsp), ptc_attr_int("groups", s->groups)};
  ptc_value y = node1(b->g, s->nsp == 1 ? "conv1d" : "conv2d", (ptc_value[]){x, w, cb}, 3, ca,
                      2);
  ptc_attr ba[2] = {ptc_attr_float("eps", 1e-3), ptc_attr_bool("training", 0)};
  ptc_value z = node1(b->g, "batch_norm", (ptc_value[]){y, gm, bt, mean, var}, 5, ba, 2);
  if (s->relu) z = node1(b->g, "relu", &z, 1, NULL, 0);
  if (s->use_twice == 2) z = node1(b->g, "add", (ptc_value[]){z, y}, 2, NULL, 0);
  if (s->params_const) { /* one more owned constant that must survive the pass */
    int64_t one1[1] = {1};
    ptc_value c = param(b, s, "c", one1, 1, 0.25f, 0.5f, false);
    z = node1(b->g, "add", (ptc_value[]){z, c}, 2, NULL, 0);
  }
  CHECK_OK(ptc_graph_add_output(b->g, z));
  if (s->use_twice == 1) CHECK_OK(ptc_graph_add_output(b->g, y));
}

static void free_built(built* b) {
  for (size_t i = 0; i < b->n_in; i++) free(b->in[i].f), free(b->in[i].raw);
  for (size_t i = 0; i < b->n_consts; i++) free(b->consts[i].f), free(b->consts[i].raw);
  ptc_graph_destroy(b->g);
}

static size_t count_op(const ptc_graph* g, const char* op) {
  size_t k = 0;
  for (size_t i = 0; i < g->nodes.len; i++) k += strcmp(graph_node(g, i)->op->name, op) == 0;
  return k;
}

/* The graph after the pass: no batch_norm, one conv with a bias whose
 * weight and bias are constants when the parameters were. */
static void check_folded_graph(const spec* s, const ptc_graph* fg) {
  CHECK(count_op(fg, "batch_norm") == 0);
  const char* conv = s->nsp == 1 ? "conv1d" : "conv2d";
  CHECK(count_op(fg, conv) == 1);
  for (size_t i = 0; i < fg->nodes.len; i++) {
    const gnode* n = graph_node(fg, i);
    if (strcmp(n->op->name, conv) != 0) continue;
    CHECK(n->n_in == 3 && n->in[2] != PTC_VALUE_NONE);
    if (n->n_in != 3 || n->in[2] == PTC_VALUE_NONE) continue;
    CHECK(graph_value(fg, n->in[1])->dtype == s->dtype);
    CHECK(graph_value(fg, n->in[2])->dtype == s->dtype);
    if (s->params_const) {
      CHECK(graph_value(fg, n->in[1])->kind == PTC_VALUE_CONSTANT);
      CHECK(graph_value(fg, n->in[2])->kind == PTC_VALUE_CONSTANT);
      /* conv, [relu], add c: every fold node was evaluated */
      CHECK(fg->nodes.len == 2u + (s->relu ? 1u : 0u));
    }
  }
}

static ptc_results* run(ptc_context* ctx, const ptc_graph* g, const char* backend,
                        const built* b) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  ptc_executable* e = NULL;
  ptc_results* res = NULL;
  CHECK_OK(ptc_compile(ctx, g, &o, &e));
  if (!e) return NULL;
  ptc_tensor in[MAXP];
  int64_t shapes[MAXP][4];
  for (size_t i = 0; i < b->n_in; i++) {
    memset(&in[i], 0, sizeof in[i]);
    memcpy(shapes[i], b->in[i].shape, sizeof shapes[i]);
    in[i].data = b->in[i].raw;
    in[i].device.device_type = PTC_DEVICE_CPU;
    in[i].ndim = b->in[i].rank;
    in[i].dtype = ptc_dtype_to_dl(graph_value(g, ptc_graph_input(g, i))->dtype);
    in[i].shape = shapes[i];
  }
  CHECK_OK(ptc_executable_run_alloc(e, in, b->n_in, NULL, &res));
  ptc_executable_release(e);
  return res;
}

static float at(const ptc_tensor* t, int64_t i) {
  if (t->dtype.bits == 16) return ptc_bf16_to_f32(((const uint16_t*)t->data)[i]);
  return ((const float*)t->data)[i];
}

/* Largest |a - b| / (1 + |b|) over every output. */
static double max_err(const ptc_results* a, const ptc_results* b) {
  if (!a || !b || ptc_results_count(a) != ptc_results_count(b)) return INFINITY;
  double worst = 0;
  for (size_t k = 0; k < ptc_results_count(a); k++) {
    const ptc_tensor *x = ptc_results_get(a, k), *y = ptc_results_get(b, k);
    int64_t n = 1;
    for (int32_t d = 0; d < x->ndim; d++) n *= x->shape[d];
    for (int64_t i = 0; i < n; i++) {
      double e = fabs((double)at(x, i) - at(y, i)) / (1.0 + fabs((double)at(y, i)));
      if (!(e <= worst)) worst = e; /* NaN propagates */
    }
  }
  return worst;
}

static bool ref_only; /* --ref-only: no "cpu" compiles (valgrind runs: -march=native code) */

static void test_case(ptc_context* ctx, const spec* s) {
  built b;
  build(ctx, s, &b);
  if (!b.g) return;
  size_t nodes0 = b.g->nodes.len;
  ptc_graph* fg = NULL;
  CHECK_OK(graph_clone(b.g, &fg));
  size_t folded = 99;
  CHECK_OK(pass_conv_bn(&fg, CONV_BN_ALL, &folded));
  CHECK(folded == (s->expect_fold ? 1u : 0u));
  if (s->expect_fold) {
    check_folded_graph(s, fg);
  } else {
    CHECK(fg->nodes.len == nodes0 && count_op(fg, "batch_norm") == 1);
  }
  CHECK(ptc_graph_num_inputs(fg) == b.n_in);
  double tol = s->dtype == PTC_BF16 ? 3e-2 : 1e-4;
  ptc_results* want = run(ctx, b.g, "ref", &b); /* ref never folds */
  ptc_results* got_ref = run(ctx, fg, "ref", &b);
  ptc_results* got_cpu = ref_only ? NULL : run(ctx, b.g, "cpu", &b);
  double e1 = max_err(got_ref, want), e2 = ref_only ? 0 : max_err(got_cpu, want);
  printf("%-28s folded %zu, nodes %zu -> %zu, err ref %.2g cpu %.2g\n", s->name, folded, nodes0,
         fg->nodes.len, e1, e2);
  CHECK(e1 <= tol);
  CHECK(e2 <= tol);
  ptc_results_destroy(want);
  ptc_results_destroy(got_ref);
  ptc_results_destroy(got_cpu);
  ptc_graph_destroy(fg);
  free_built(&b);
}

/* The executable's own graph is the folded one (cpu), not for ref. */
static void test_compile_hook(ptc_context* ctx) {
  spec s = {"hook", 2, 1, true, true, true, true, PTC_F32, 0, true};
  built b;
  build(ctx, &s, &b);
  if (!b.g) return;
  char buf[4096];
  const char* backends[] = {"cpu", "ref"};
  size_t want_nodes[] = {3, 4}; /* conv, relu, add c / + batch_norm */
  for (int k = ref_only ? 1 : 0; k < 2; k++) {
    ptc_compile_options o;
    ptc_compile_options_init(&o);
    o.backend = backends[k];
    ptc_executable* e = NULL;
    CHECK_OK(ptc_compile(ctx, b.g, &o, &e));
    if (!e) continue;
    CHECK_OK(ptc_executable_format(e, buf, sizeof buf, NULL));
    char expect[64];
    snprintf(expect, sizeof expect, "%zu graph nodes", want_nodes[k]);
    CHECK(strstr(buf, expect) != NULL);
    ptc_executable_release(e);
  }
  free_built(&b);
}

/* Parameters as graph inputs fold only with PTC_FOLD_CONV_BN=1 (the
 * default folds constant parameters only). */
static void test_inputs_default(ptc_context* ctx) {
  spec s = {"inputs", 2, 1, true, true, true, false, PTC_F32, 0, true};
  built b;
  build(ctx, &s, &b);
  if (!b.g) return;
  const char* env[2] = {NULL, "1"};
  const char* want[2] = {"3 graph nodes", "10 graph nodes"}; /* conv bn relu / fold nodes */
  for (int k = 0; k < 2; k++) {
    if (env[k]) setenv("PTC_FOLD_CONV_BN", env[k], 1);
    else unsetenv("PTC_FOLD_CONV_BN");
    ptc_compile_options o;
    ptc_compile_options_init(&o);
    o.backend = "cpu";
    ptc_executable* e = NULL;
    char buf[4096];
    CHECK_OK(ptc_compile(ctx, b.g, &o, &e));
    if (!e) continue;
    CHECK_OK(ptc_executable_format(e, buf, sizeof buf, NULL));
    CHECK(strstr(buf, want[k]) != NULL);
    ptc_executable_release(e);
  }
  setenv("PTC_FOLD_CONV_BN", "1", 1);
  free_built(&b);
}

static void test_switch(void) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  unsetenv("PTC_FOLD_CONV_BN");
  CHECK(pass_conv_bn_mode("cpu", &o) == CONV_BN_CONSTANTS);
  CHECK(pass_conv_bn_mode("cuda", &o) == CONV_BN_CONSTANTS);
  CHECK(pass_conv_bn_mode("ref", &o) == CONV_BN_OFF);
  o.disable_fusion = 1;
  CHECK(pass_conv_bn_mode("cpu", &o) == CONV_BN_OFF);
  o.disable_fusion = 0;
  setenv("PTC_FOLD_CONV_BN", "0", 1);
  CHECK(pass_conv_bn_mode("cpu", &o) == CONV_BN_OFF);
  setenv("PTC_FOLD_CONV_BN", "const", 1);
  CHECK(pass_conv_bn_mode("cpu", &o) == CONV_BN_CONSTANTS);
  setenv("PTC_FOLD_CONV_BN", "1", 1);
  CHECK(pass_conv_bn_mode("cpu", &o) == CONV_BN_ALL);
  setenv("PTC_FOLD_CONV_BN", "all", 1);
  CHECK(pass_conv_bn_mode("cpu", &o) == CONV_BN_ALL);
  CHECK(pass_conv_bn_mode("ref", &o) == CONV_BN_OFF);
  setenv("PTC_FOLD_CONV_BN", "1", 1); /* the differential cases fold inputs too */
}

/* CONV_BN_CONSTANTS folds constant parameters only; OFF nothing. */
static void test_modes(ptc_context* ctx) {
  static const spec specs[2] = {
      {"const", 2, 1, true, true, true, true, PTC_F32, 0, true},
      {"inputs", 2, 1, true, true, true, false, PTC_F32, 0, true},
  };
  for (int k = 0; k < 2; k++) {
    built b;
    build(ctx, &specs[k], &b);
    if (!b.g) continue;
    size_t folded = 99;
    ptc_graph* g0 = b.g;
    CHECK_OK(pass_conv_bn(&b.g, CONV_BN_OFF, &folded));
    CHECK(folded == 0 && b.g == g0);
    CHECK_OK(pass_conv_bn(&b.g, CONV_BN_CONSTANTS, &folded));
    CHECK(folded == (k == 0 ? 1u : 0u));
    CHECK(count_op(b.g, "batch_norm") == (k == 0 ? 0u : 1u));
    CHECK((b.g == g0) == (k == 1));
    free_built(&b);
  }
}

/* training=true never reaches the pass: the op itself refuses it. */
static void test_training_refused(ptc_context* ctx) {
  ptc_graph* g = NULL;
  CHECK_OK(ptc_graph_create(ctx, &g));
  if (!g) return;
  ptc_dim xd[4] = {{N, 0, 0}, {C, 0, 0}, {L, 0, 0}, {L, 0, 0}}, cd[1] = {{C, 0, 0}};
  ptc_value x, m, v, out;
  CHECK_OK(ptc_graph_add_input(g, "x", PTC_F32, xd, 4, NULL, &x));
  CHECK_OK(ptc_graph_add_input(g, "m", PTC_F32, cd, 1, NULL, &m));
  CHECK_OK(ptc_graph_add_input(g, "v", PTC_F32, cd, 1, NULL, &v));
  ptc_attr ba = ptc_attr_bool("training", 1);
  CHECK_ERR(ptc_graph_add_node(g, "batch_norm", (ptc_value[]){x, PTC_VALUE_NONE, PTC_VALUE_NONE,
                                                             m, v},
                               5, &ba, 1, &out, 1, NULL),
            PTC_CODE_INVALID_ARGUMENT, "training");
  ptc_graph_destroy(g);
}

int main(int argc, char** argv) {
  ref_only = argc > 1 && strcmp(argv[1], "--ref-only") == 0;
  ptc_context* ctx = NULL;
  if (ptc_context_create(NULL, &ctx)) return 1;
  test_switch(); /* leaves PTC_FOLD_CONV_BN=1: the cpu runs fold parameter inputs too */
  /* name, nsp, groups, conv_bias, affine, relu, params_const, dtype, use_twice, fold */
  static const spec cases[] = {
      {"conv2d+bn+relu const", 2, 1, true, true, true, true, PTC_F32, 0, true},
      {"conv2d+bn+relu inputs", 2, 1, true, true, true, false, PTC_F32, 0, true},
      {"conv1d+bn const", 1, 1, true, true, false, true, PTC_F32, 0, true},
      {"conv1d+bn inputs", 1, 1, true, true, false, false, PTC_F32, 0, true},
      {"grouped conv2d inputs", 2, 2, true, true, true, false, PTC_F32, 0, true},
      {"grouped conv2d const", 2, 2, false, true, true, true, PTC_F32, 0, true},
      {"conv no bias const", 2, 1, false, true, true, true, PTC_F32, 0, true},
      {"conv no bias inputs", 2, 1, false, true, true, false, PTC_F32, 0, true},
      {"bn no affine inputs", 2, 1, true, false, true, false, PTC_F32, 0, true},
      {"bn no affine const", 1, 1, false, false, false, true, PTC_F32, 0, true},
      {"bf16 const", 2, 1, true, true, true, true, PTC_BF16, 0, true},
      {"bf16 inputs", 2, 1, false, true, true, false, PTC_BF16, 0, true},
      {"conv output returned", 2, 1, true, true, true, true, PTC_F32, 1, false},
      {"conv output used twice", 2, 1, true, true, true, false, PTC_F32, 2, false},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_case(ctx, &cases[i]);
  test_compile_hook(ctx);
  if (!ref_only) test_inputs_default(ctx);
  test_modes(ctx);
  test_training_refused(ctx);
  ptc_context_release(ctx);
  return check_summary("test_conv_bn");
}
