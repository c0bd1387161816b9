/* sched_util.h - helpers of the scheduler tests: a small program builder on
 * top of the ir.h builder API (f32 buffers with contiguous layouts, nodes
 * with given loops and a body built by the test), running the scheduler,
 * plan queries (kernel of a node, kernel count) and printing the plan dump
 * when a test's checks failed. */
#ifndef PTC_TESTS_SCHED_UTIL_H
#define PTC_TESTS_SCHED_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "lib/ir/ir.h"
#include "lib/sched/sched.h"
#include "tests/check.h"
#include "tests/sched/sched_check.h"

typedef struct tp {
  ptc_context* ctx;
  ptc_graph* g;
  ir_program* p;
  sched_plan* plan;
  int32_t outs[16];
  size_t n_outs;
  int32_t n_inputs;
  int failures_before;
} tp;

/* hint > 1: symbol "s0" with that hint; hint == -1: unbacked "s0"; 0: none. */
static inline void tp_init(tp* t, int64_t hint) {
  memset(t, 0, sizeof *t);
  t->failures_before = check_failures;
  CHECK_OK(ptc_context_create(NULL, &t->ctx));
  CHECK_OK(ptc_graph_create(t->ctx, &t->g));
  if (hint) {
    ptc_symbol_options o;
    ptc_symbol_options_init(&o);
    o.hint = hint;
    ptc_sym s;
    CHECK_OK(ptc_graph_add_symbol(t->g, "s0", &o, &s));
  }
  CHECK_OK(ir_program_create(t->ctx, t->g, &t->p));
}

static inline const sym_expr* tp_c(tp* t, int64_t v) { return sym_const(t->p->env, v); }
static inline const sym_expr* tp_s0(tp* t) {
  return sym_var(t->p->env, (size_t)sym_find_var(t->p->env, "s0"));
}
static inline const sym_expr* tp_x(tp* t, int k) { return t->p->xvars[k]; }
static inline const sym_expr* tp_r(tp* t, int k) { return t->p->rvars[k]; }
/* a * cols + b */
static inline const sym_expr* tp_rc(tp* t, const sym_expr* a, const sym_expr* cols,
                                    const sym_expr* b) {
  return sym_add(t->p->env, sym_mul(t->p->env, a, cols), b);
}

/* Buffer of rank 0..2 (d0/d1 NULL for absent dims), contiguous f32. */
static inline int32_t tp_buf(tp* t, int32_t kind, const sym_expr* d0, const sym_expr* d1) {
  const sym_expr* shape[2] = {d0, d1};
  const sym_expr* strides[2] = {d1 ? d1 : tp_c(t, 1), tp_c(t, 1)};
  uint32_t rank = d1 ? 2 : d0 ? 1 : 0;
  if (rank == 1) strides[0] = tp_c(t, 1);
  const sym_expr* numel = tp_c(t, 1);
  for (uint32_t i = 0; i < rank; i++) numel = sym_mul(t->p->env, numel, shape[i]);
  ir_buffer b = {.kind = kind,
                 .dtype = PTC_F32,
                 .rank = rank,
                 .shape = shape,
                 .strides = strides,
                 .offset = tp_c(t, 0),
                 .numel = numel,
                 .graph_input = kind == IR_BUF_INPUT ? t->n_inputs++ : -1,
                 .producer = -1};
  int32_t id = -1;
  CHECK_OK(ir_add_buffer(t->p, &b, &id));
  return id;
}
static inline int32_t tp_in(tp* t, const sym_expr* d0, const sym_expr* d1) {
  return tp_buf(t, IR_BUF_INPUT, d0, d1);
}
static inline int32_t tp_tmp(tp* t, const sym_expr* d0, const sym_expr* d1) {
  return tp_buf(t, IR_BUF_COMPUTED, d0, d1);
}

/* Adds a node; ranges/rranges are NULL-terminated lists (max 4). */
static inline size_t tp_node(tp* t, int32_t kind, int32_t out, const sym_expr* const* ranges,
                             const sym_expr* const* rranges, ir_body* body, const char* origin) {
  ir_node n = {.kind = kind, .out_buf = out, .body = *body, .origin = origin};
  while (ranges && ranges[n.n_ranges]) n.n_ranges++;
  while (rranges && rranges[n.n_rranges]) n.n_rranges++;
  n.ranges = (const sym_expr**)ranges;
  n.rranges = (const sym_expr**)rranges;
  size_t idx = 0;
  CHECK_OK(ir_add_node(t->p, &n, &idx));
  memset(body, 0, sizeof *body);
  return idx;
}

/* Extern node reading in[0..n_in) and writing out. */
static inline size_t tp_extern(tp* t, const int32_t* in, uint32_t n_in, int32_t out,
                               const char* origin) {
  int32_t outs[1] = {out};
  ir_node n = {.kind = IR_EXTERN, .out_buf = out, .origin = origin};
  n.ext.kind = IR_EXT_FALLBACK;
  n.ext.n_in = n_in;
  n.ext.in = (int32_t*)in;
  n.ext.n_out = 1;
  n.ext.out = outs;
  size_t idx = 0;
  CHECK_OK(ir_add_node(t->p, &n, &idx));
  return idx;
}

static inline void tp_output(tp* t, int32_t buf) { t->outs[t->n_outs++] = buf; }

/* Schedules with default options except `fuse`; checks the invariants. */
static inline ptc_status tp_sched(tp* t, bool fuse) {
  t->p->output_bufs = ptc_arena_alloc(&t->p->arena, sizeof(int32_t) * (t->n_outs + 1));
  if (t->n_outs) memcpy(t->p->output_bufs, t->outs, sizeof(int32_t) * t->n_outs);
  t->p->n_outputs = t->n_outs;
  sched_options o;
  sched_options_init(&o);
  o.fuse = fuse;
  sched_plan_destroy(t->plan);
  t->plan = NULL;
  ptc_status s = sched_run(t->p, &o, &t->plan);
  if (!s) CHECK(sched_check_plan(t->p, t->plan, fuse ? "fused" : "unfused") == 0);
  return s;
}

static inline int tp_kernel_of(const tp* t, size_t node) {
  for (uint32_t k = 0; t->plan && k < t->plan->n_kernels; k++)
    for (uint32_t j = 0; j < t->plan->kernels[k].n_nodes; j++)
      if (t->plan->kernels[k].nodes[j] == node) return (int)k;
  return -1;
}

static inline int tp_inner_of(const tp* t, size_t node) {
  int k = tp_kernel_of(t, node);
  if (k < 0) return -1;
  const sched_kernel* kr = &t->plan->kernels[k];
  for (uint32_t j = 0; j < kr->n_nodes; j++)
    if (kr->nodes[j] == node) return kr->node_inner[j];
  return -1;
}

static inline void tp_print(const tp* t, const char* name) {
  if (!t->plan) return;
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  sched_plan_dump(t->p, t->plan, &sb);
  printf("---- %s: plan ----\n%s", name, sb.data ? sb.data : "");
  ptc_sb_free(&sb);
}

/* Prints the dump if a check of this test failed (or PTC_TEST_DUMP is set),
 * then frees everything. */
static inline void tp_done(tp* t, const char* name) {
  if (check_failures != t->failures_before || getenv("PTC_TEST_DUMP")) tp_print(t, name);
  sched_plan_destroy(t->plan);
  ir_program_destroy(t->p);
  ptc_graph_destroy(t->g);
  ptc_context_release(t->ctx);
}

#endif /* PTC_TESTS_SCHED_UTIL_H */
