/* test_cg_reduce.c - every reduction type (sum, prod, max, min, argmax,
 * argmin, any, all) in f32, f64, f16, i32, i64 and bool, horizontally
 * fused into one kernel per dtype and loop shape, for the three shapes the
 * generator emits differently: rows (outer parallel loop, simd inner
 * loop), columns (tiled: reduction loop outside, lanes inside) and a full
 * reduction large enough to be split over threads. Inputs hold NaN, +-inf,
 * signed zeros, ties and zeros; outputs are compared with the IR
 * interpreter and a few with hand-computed values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg_harness.h"
#include "lib/ir/ir_internal.h"

enum { SHAPE_ROWS = 0, SHAPE_COLS, SHAPE_FULL };

static const ir_rtype rtypes[8] = {IR_R_SUM,    IR_R_PROD,   IR_R_MAX, IR_R_MIN,
                                   IR_R_ARGMAX, IR_R_ARGMIN, IR_R_ANY, IR_R_ALL};

/* Result dtype of a reduction of dtype dt (ATen: integer sums in i64). */
static int32_t result_dtype(ir_rtype rt, int32_t dt) {
  switch (rt) {
    case IR_R_SUM:
    case IR_R_PROD: return ptc_dtype_is_float(dt) ? dt : PTC_I64;
    case IR_R_ARGMAX:
    case IR_R_ARGMIN: return PTC_I64;
    case IR_R_ANY:
    case IR_R_ALL: return PTC_BOOL;
    default: return dt;
  }
}

/* Input value i: small magnitudes (products stay finite), specials sprinkled. */
static double input_value(int64_t i, int32_t dt, int64_t n) {
  if (dt == PTC_BOOL) return (i % 7) != 3;
  double v = (double)((i * 37) % 11) - 5.0; /* -5 .. 5, ties and zeros */
  if (!ptc_dtype_is_float(dt)) return v;
  v = v * 0.25 + 1.0;
  if (i == n / 3) v = NAN;
  if (i == n / 2) v = -INFINITY;
  if (i == n / 2 + 1) v = -0.0;
  if (n > 1000 && i % 101 != 5) v = 1.0 + (double)(i % 3) * 1e-3; /* keep prod finite */
  return v;
}

typedef struct shape_desc {
  int64_t outer, inner;  /* points and reduced elements per point */
  const char* name;
} shape_desc;

static void run_case(int32_t dt, int shape) {
  static const shape_desc shapes[3] = {{6, 37, "rows"}, {37, 6, "columns"}, {0, 40000, "full"}};
  const shape_desc* sd = &shapes[shape];
  int64_t outer = sd->outer ? sd->outer : 1, inner = sd->inner, n = outer * inner;
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* in_shape[1] = {cgh_c(&h, n)};
  const sym_expr* o_shape[1] = {cgh_c(&h, outer)};
  const sym_expr* r_shape[1] = {cgh_c(&h, inner)};
  const sym_expr *x0 = h.p->xvars[0], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, dt, 1, in_shape);
  /* rows: x0*inner + r0; columns: r0*outer + x0 (strided); full: r0 */
  const sym_expr* ix = shape == SHAPE_ROWS ? sym_add(env, sym_mul_c(env, x0, inner), r0)
                       : shape == SHAPE_COLS ? sym_add(env, sym_mul_c(env, r0, outer), x0)
                                             : r0;
  const sym_expr* io = shape == SHAPE_FULL ? cgh_c(&h, 0) : x0;
  uint32_t nodes[8];
  int32_t outs[8];
  for (int j = 0; j < 8; j++) {
    int32_t rdt = result_dtype(rtypes[j], dt);
    outs[j] = cgh_buffer(&h, false, rdt, 1, o_shape);
    ir_body b = {0};
    ir_val v = ir_ops_load(h.p, &b, X, ix);
    bool arg = rtypes[j] == IR_R_ARGMAX || rtypes[j] == IR_R_ARGMIN;
    ir_val idx = arg ? ir_ops_index_expr(h.p, &b, r0, PTC_I64) : -1;
    if (rtypes[j] <= IR_R_PROD && rdt != dt) v = ir_ops_to_dtype(&b, v, rdt);
    ir_ops_store(h.p, &b, outs[j], io, ir_ops_reduce(&b, rtypes[j], v, idx, rdt));
    CHECK(ir_body_ok(&b));
    nodes[j] = shape == SHAPE_FULL ? cgh_node(&h, IR_REDUCTION, outs[j], NULL, 0, r_shape, 1, &b)
                                   : cgh_node(&h, IR_REDUCTION, outs[j], o_shape, 1, r_shape, 1, &b);
  }
  sched_plan* s = shape == SHAPE_FULL ? cgh_plan(&h, nodes, NULL, 8, NULL, 0, r_shape, 1)
                                      : cgh_plan(&h, nodes, NULL, 8, o_shape, 1, r_shape, 1);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    const char* src = k.src.source;
    if (shape == SHAPE_COLS) CHECK(strstr(src, "xt += 64") != NULL);
    if (shape == SHAPE_FULL) CHECK(strstr(src, "num_threads(ptc_nthreads())") != NULL);
    if (shape == SHAPE_ROWS) CHECK(strstr(src, "xt +=") == NULL);
    void* mem[16] = {0};
    mem[X] = calloc((size_t)n, 8);
    for (int j = 0; j < 8; j++) mem[outs[j]] = calloc((size_t)outer, 8);
    bool fl = ptc_dtype_is_float(dt);
    for (int64_t i = 0; i < n; i++) {
      double v = input_value(i, dt, n);
      ir_scalar_store(mem[X], dt, i, fl ? ir_scalar_of_f(v, dt) : ir_scalar_of_i((int64_t)v, dt));
    }
    cpu_kernel_ctx kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == 0);
    double rtol = dt == PTC_F16 ? 2e-3 : dt == PTC_F32 ? 1e-5 : 1e-12;
    int bad = cgh_check_interp(&h, s, mem, NULL, 0, rtol, rtol);
    if (bad) printf("  (%s, %s)\n", ptc_dtype_name(dt), sd->name);
    CHECK(bad == 0);
    /* hand checks on point 0: all/any of bools, argmax of ties is the first */
    if (dt == PTC_BOOL && shape == SHAPE_ROWS) {
      CHECK(((uint8_t*)mem[outs[6]])[0] == 1 && ((uint8_t*)mem[outs[7]])[0] == 0);
    }
    if (dt == PTC_I32 && shape == SHAPE_ROWS) {
      int64_t want = -1, best = 0;
      for (int64_t r = 0; r < inner; r++) {
        int64_t v = (int64_t)input_value(r, dt, n);
        if (want < 0 || v > best) best = v, want = r;
      }
      CHECK(((int64_t*)mem[outs[4]])[0] == want);
    }
    for (int j = 0; j < 16; j++) free(mem[j]);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

int main(void) {
  static const int32_t dts[] = {PTC_F32, PTC_F64, PTC_F16, PTC_I32, PTC_I64, PTC_BOOL};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++)
    for (int shape = 0; shape < 3; shape++) run_case(dts[d], shape);
  return check_summary("cpu_codegen_reduce");
}
