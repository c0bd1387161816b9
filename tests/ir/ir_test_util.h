/* ir_test_util.h - helpers of the lib/ir unit tests: building small graphs
 * through the public API, lowering them, inspecting the program, and
 * running them both with ir_interpret and with the ref backend. */
#ifndef PTC_TESTS_IR_TEST_UTIL_H
#define PTC_TESTS_IR_TEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/ir/ir.h"
#include "lib/runtime/backend.h"
#include "tests/check.h"

static inline bool t_is_const(const sym_expr* e, int64_t v) {
  int64_t c;
  return e && sym_is_const(e, &c) && c == v;
}

/* Graph input of a static shape (contiguous). */
static inline ptc_value t_input(ptc_graph* g, int32_t dt, size_t rank, const int64_t* shape) {
  ptc_dim dims[PTC_MAX_RANK];
  ptc_value v = PTC_VALUE_NONE;
  for (size_t d = 0; d < rank; d++) dims[d] = (ptc_dim){shape[d], 0, 0};
  CHECK_OK(ptc_graph_add_input(g, NULL, dt, dims, rank, NULL, &v));
  return v;
}

/* One-output node. */
static inline ptc_value t_node(ptc_graph* g, const char* op, const ptc_value* in, size_t n_in,
                               const ptc_attr* attrs, size_t n_attrs) {
  ptc_value out[8] = {PTC_VALUE_NONE};
  size_t n = 0;
  CHECK_OK(ptc_graph_add_node(g, op, in, n_in, attrs, n_attrs, out, 8, &n));
  return out[0];
}

static inline ptc_value t_unary(ptc_graph* g, const char* op, ptc_value a) {
  return t_node(g, op, &a, 1, NULL, 0);
}

static inline ptc_value t_binary(ptc_graph* g, const char* op, ptc_value a, ptc_value b) {
  ptc_value in[2] = {a, b};
  return t_node(g, op, in, 2, NULL, 0);
}

static inline ptc_value t_scalar_op(ptc_graph* g, const char* op, ptc_value a, double other) {
  ptc_attr at = ptc_attr_float("other", other);
  return t_node(g, op, &a, 1, &at, 1);
}

static inline ir_program* t_lower(ptc_graph* g, const ir_lower_options* o) {
  ir_program* p = NULL;
  CHECK_OK(ir_lower(g->ctx, g, o, &p));
  return p;
}

static inline size_t t_count_nodes(const ir_program* p, int32_t kind) {
  size_t c = 0;
  for (size_t i = 0; p && i < p->nodes.len; i++) c += ir_node_at(p, i)->kind == kind;
  return c;
}

/* Number of ops `op` in the body of node i. */
static inline uint32_t t_count_ops(const ir_program* p, size_t i, ir_opcode op) {
  return ir_body_count(&ir_node_at(p, i)->body, op);
}

/* First op `op` of node i's body (NULL if none). */
static inline const ir_op* t_find_op(const ir_program* p, size_t i, ir_opcode op) {
  const ir_body* b = &ir_node_at(p, i)->body;
  for (uint32_t k = 0; k < b->n; k++)
    if (b->ops[k].opcode == op) return &b->ops[k];
  return NULL;
}

/* A contiguous f32/any-dtype tensor with deterministic values. */
typedef struct t_tensor {
  ptc_tensor t;
  int64_t shape[PTC_MAX_RANK];
  void* data;
} t_tensor;

static inline void t_tensor_init(t_tensor* x, int32_t dt, size_t rank, const int64_t* shape,
                                 uint32_t seed) {
  memset(x, 0, sizeof *x);
  size_t n = 1;
  for (size_t d = 0; d < rank; d++) {
    x->shape[d] = shape[d];
    n *= (size_t)shape[d];
  }
  x->data = calloc(n + 1, 8);
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 1103515245u + 12345u;
    double v = ((double)((s >> 8) % 2001) - 1000.0) / 500.0;
    switch (dt) {
      case PTC_F32: ((float*)x->data)[i] = (float)v; break;
      case PTC_F64: ((double*)x->data)[i] = v; break;
      case PTC_I64: ((int64_t*)x->data)[i] = (int64_t)((s >> 8) % 4); break;
      case PTC_I32: ((int32_t*)x->data)[i] = (int32_t)((s >> 8) % 4); break;
      default: break;
    }
  }
  x->t.data = x->data;
  x->t.device.device_type = PTC_DEVICE_CPU;
  x->t.ndim = (int32_t)rank;
  x->t.dtype = ptc_dtype_to_dl(dt);
  x->t.shape = x->shape;
}

static inline void t_tensor_free(t_tensor* x) { free(x->data); }

/* Runs g with the ref backend and with lower + ir_interpret; true if every
 * output matches within rtol/atol. */
static inline bool t_matches_ref(ptc_context* ctx, ptc_graph* g, const ir_lower_options* o,
                                 const ptc_tensor* in, size_t n_in, double rtol, double atol) {
  ptc_executable* exe = NULL;
  ptc_results* want = NULL;
  ir_program* p = NULL;
  bool ok = true;
  size_t n_syms = sym_num_vars(g->env);
  int64_t syms[64] = {0};
  CHECK_OK(ptc_compile(ctx, g, NULL, &exe));
  CHECK_OK(ptc_executable_run_alloc(exe, in, n_in, NULL, &want));
  CHECK_OK(runtime_bind_inputs(g, in, n_in, syms, n_syms));
  CHECK_OK(ir_lower(ctx, g, o, &p));
  if (!exe || !want || !p) {
    ptc_executable_release(exe);
    ptc_results_destroy(want);
    ir_program_destroy(p);
    return false;
  }
  size_t n_out = ptc_results_count(want);
  ptc_tensor outs[8];
  void* bufs[8] = {NULL};
  for (size_t k = 0; k < n_out && k < 8; k++) {
    outs[k] = *ptc_results_get(want, k);
    size_t bytes = ptc_dtype_size(ptc_dtype_from_dl(outs[k].dtype));
    for (int32_t d = 0; d < outs[k].ndim; d++) bytes *= (size_t)outs[k].shape[d];
    bufs[k] = calloc(bytes + 8, 1);
    outs[k].data = bufs[k];
    outs[k].strides = NULL;
    outs[k].byte_offset = 0;
  }
  ptc_status s = ir_interpret(p, in, n_in, outs, n_out, syms, n_syms, 0);
  if (s) {
    printf("  ir_interpret: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    ok = false;
  }
  for (size_t k = 0; ok && k < n_out; k++) {
    const ptc_tensor* w = ptc_results_get(want, k);
    int32_t dt = ptc_dtype_from_dl(w->dtype);
    size_t n = 1;
    for (int32_t d = 0; d < w->ndim; d++) n *= (size_t)w->shape[d];
    for (size_t i = 0; i < n && ok; i++) {
      double a, b;
      if (dt == PTC_F32) {
        a = ((float*)outs[k].data)[i];
        b = ((float*)w->data)[i];
      } else if (dt == PTC_F64) {
        a = ((double*)outs[k].data)[i];
        b = ((double*)w->data)[i];
      } else if (dt == PTC_I64) {
        a = (double)((int64_t*)outs[k].data)[i];
        b = (double)((int64_t*)w->data)[i];
      } else {
        a = b = 0;
        ok = memcmp(outs[k].data, w->data, n * ptc_dtype_size(dt)) == 0;
      }
      if (!(fabs(a - b) <= atol + rtol * fabs(b)) && !(isnan(a) && isnan(b))) {
        printf("  output %zu element %zu: ir %.9g, ref %.9g\n", k, i, a, b);
        ok = false;
      }
    }
  }
  for (size_t k = 0; k < n_out && k < 8; k++) free(bufs[k]);
  ptc_executable_release(exe);
  ptc_results_destroy(want);
  ir_program_destroy(p);
  return ok;
}

#endif /* PTC_TESTS_IR_TEST_UTIL_H */
