/* test_cg_kernels.c - generated kernels with loops, reductions and fusion:
 * a fused softmax (kernel-local row max and sum, three inner loops), the
 * same with symbolic sizes run at two shapes, a layer-norm-like kernel with
 * outer pointwise members between reductions, horizontally fused
 * reductions sharing one loop, a column reduction, full reductions split
 * over threads (sum, max, argmax/argmin with NaN and ties; deterministic),
 * a reduction with few rows and long rows (split per row), row argmax/argmin,
 * indirect loads (wrap of negatives, out-of-range error with value, bound
 * and node; inside a reduction loop), floor-semantics index arithmetic,
 * masked loads, integer division by zero and empty max reductions reporting
 * through the kernel context, the parallel/simd decisions visible in the
 * source, and argument errors of cpu_codegen_kernel. Besides hand-computed
 * values, outputs are compared with the IR interpreter (ir_interpret). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cg_harness.h"

static int count_substr(const char* s, const char* sub) {
  int n = 0;
  for (const char* q = strstr(s, sub); q; q = strstr(q + 1, sub)) n++;
  return n;
}

static float frand(uint32_t* st) {
  *st = *st * 1664525u + 1013904223u;
  return (float)((*st >> 8) & 0xffff) / 65536.0f * 4.0f - 2.0f;
}

/* ---- softmax -------------------------------------------------------------------------- */

typedef struct softmax_prog {
  int32_t X, M, S, Y;
  uint32_t nodes[3];
} softmax_prog;

/* rows x cols softmax over the last dim (sizes may be symbolic). */
static void build_softmax(cgh* h, const sym_expr* R, const sym_expr* C, softmax_prog* sp) {
  sym_env* env = h->p->env;
  const sym_expr* shape[2] = {R, C};
  const sym_expr *x0 = h->p->xvars[0], *x1 = h->p->xvars[1], *r0 = h->p->rvars[0];
  sp->X = cgh_buffer(h, true, PTC_F32, 2, shape);
  sp->M = cgh_buffer(h, false, PTC_F32, 1, shape);
  sp->S = cgh_buffer(h, false, PTC_F32, 1, shape);
  sp->Y = cgh_buffer(h, false, PTC_F32, 2, shape);
  const sym_expr* in_r = sym_add(env, sym_mul(env, x0, C), r0);
  const sym_expr* in_x = sym_add(env, sym_mul(env, x0, C), x1);
  ir_body b = {0};
  ir_val v = ir_ops_load(h->p, &b, sp->X, in_r);
  ir_ops_store(h->p, &b, sp->M, x0, ir_ops_reduce(&b, IR_R_MAX, v, -1, PTC_F32));
  sp->nodes[0] = cgh_node(h, IR_REDUCTION, sp->M, shape, 1, shape + 1, 1, &b);
  v = ir_ops_load(h->p, &b, sp->X, in_r);
  ir_val m = ir_ops_load(h->p, &b, sp->M, x0);
  ir_val e = ir_ops_unary(&b, IR_EXP, ir_ops_binary(&b, IR_SUB, v, m, PTC_F32), PTC_F32);
  ir_ops_store(h->p, &b, sp->S, x0, ir_ops_reduce(&b, IR_R_SUM, e, -1, PTC_F32));
  sp->nodes[1] = cgh_node(h, IR_REDUCTION, sp->S, shape, 1, shape + 1, 1, &b);
  v = ir_ops_load(h->p, &b, sp->X, in_x);
  m = ir_ops_load(h->p, &b, sp->M, x0);
  ir_val s = ir_ops_load(h->p, &b, sp->S, x0);
  e = ir_ops_unary(&b, IR_EXP, ir_ops_binary(&b, IR_SUB, v, m, PTC_F32), PTC_F32);
  ir_ops_store(h->p, &b, sp->Y, in_x, ir_ops_binary(&b, IR_DIV, e, s, PTC_F32));
  sp->nodes[2] = cgh_node(h, IR_POINTWISE, sp->Y, shape, 2, NULL, 0, &b);
}

static void check_softmax(const float* x, const float* y, int64_t R, int64_t C) {
  int bad = 0;
  for (int64_t r = 0; r < R; r++) {
    double mx = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; c++) mx = fmax(mx, x[r * C + c]);
    for (int64_t c = 0; c < C; c++) s += exp(x[r * C + c] - mx);
    for (int64_t c = 0; c < C; c++) {
      double w = exp(x[r * C + c] - mx) / s;
      bool ok = cgh_close(y[r * C + c], w, 1e-5, 1e-7);
      if (!ok && bad++ < 3) printf("softmax[%lld,%lld] %g vs %g\n", (long long)r, (long long)c, y[r * C + c], w);
      CHECK(ok);
    }
  }
}

static void run_softmax(cgh* h, const sched_plan* s, const cgh_kernel* k, const softmax_prog* sp,
                        int64_t R, int64_t C, const int64_t* syms) {
  float* x = malloc((size_t)(R * C) * sizeof *x);
  float* y = calloc((size_t)(R * C), sizeof *y);
  uint32_t st = 7;
  for (int64_t i = 0; i < R * C; i++) x[i] = frand(&st) * 3;
  void* mem[8] = {0};
  mem[sp->X] = x;
  mem[sp->Y] = y;
  cpu_kernel_ctx kc = cgh_run(k, mem, syms, 0);
  CHECK(kc.error == 0);
  check_softmax(x, y, R, C);
  CHECK(cgh_check_interp(h, s, mem, syms, 0, 1e-5, 1e-7) == 0);
  free(x);
  free(y);
}

static void test_softmax_static(void) {
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  softmax_prog sp;
  build_softmax(&h, cgh_c(&h, 37), cgh_c(&h, 1000), &sp);
  const sym_expr* ranges[1] = {cgh_c(&h, 37)};
  const sym_expr* rranges[1] = {cgh_c(&h, 1000)};
  uint8_t inner[3] = {0, 0, 1};
  sched_plan* s = cgh_plan(&h, sp.nodes, inner, 3, ranges, 1, rranges, 1);
  cgh_local(s, sp.M);
  cgh_local(s, sp.S);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    const char* src = k.src.source;
    CHECK(k.src.n_bufs == 2); /* X and Y: the row max and sum are C locals */
    CHECK(count_substr(src, "for (int64_t r0") == 3);
    CHECK(strstr(src, "#pragma omp parallel for") != NULL);  /* 37*1000 >= 32768 */
    CHECK(strstr(src, "reduction(+:") != NULL);
    CHECK(strstr(src, "const float buf1 = ") != NULL);       /* the row max as a C local */
    run_softmax(&h, s, &k, &sp, 37, 1000, NULL);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

static void test_softmax_symbolic(void) {
  static const char* const names[2] = {"s0", "cols"};
  static const int64_t hints[2] = {64, 128};
  cgh h;
  CHECK(cgh_init(&h, 2, names, hints, 2));
  softmax_prog sp;
  build_softmax(&h, cgh_sym(&h, 0), cgh_sym(&h, 1), &sp);
  const sym_expr* ranges[1] = {cgh_sym(&h, 0)};
  const sym_expr* rranges[1] = {cgh_sym(&h, 1)};
  uint8_t inner[3] = {0, 0, 1};
  sched_plan* s = cgh_plan(&h, sp.nodes, inner, 3, ranges, 1, rranges, 1);
  cgh_local(s, sp.M);
  cgh_local(s, sp.S);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    const char* src = k.src.source;
    CHECK(strstr(src, "const int64_t s0 = syms[0];") != NULL);
    CHECK(strstr(src, "const int64_t sym_cols = syms[1];") != NULL);
    CHECK(strstr(src, " >= PTC_PAR_MIN_WORK)") != NULL); /* run-time parallel decision */
    int64_t sy1[2] = {5, 3}, sy2[2] = {300, 257};
    run_softmax(&h, s, &k, &sp, 5, 3, sy1);
    run_softmax(&h, s, &k, &sp, 300, 257, sy2);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- layer norm: outer pointwise members between reductions ----------------------------- */
static void test_layernorm(void) {
  enum { R = 9, C = 100 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[2] = {cgh_c(&h, R), cgh_c(&h, C)};
  const sym_expr *x0 = h.p->xvars[0], *x1 = h.p->xvars[1], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_F64, 2, shape);
  int32_t S = cgh_buffer(&h, false, PTC_F64, 1, shape), MEAN = cgh_buffer(&h, false, PTC_F64, 1, shape);
  int32_t V = cgh_buffer(&h, false, PTC_F64, 1, shape), RSTD = cgh_buffer(&h, false, PTC_F32, 1, shape);
  int32_t Y = cgh_buffer(&h, false, PTC_F64, 2, shape);
  const sym_expr* ir = sym_add(env, sym_mul_c(env, x0, C), r0);
  const sym_expr* ix = sym_add(env, sym_mul_c(env, x0, C), x1);
  uint32_t nodes[5];
  ir_body b = {0};
  ir_ops_store(h.p, &b, S, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, X, ir), -1, PTC_F64));
  nodes[0] = cgh_node(&h, IR_REDUCTION, S, shape, 1, shape + 1, 1, &b);
  ir_ops_store(h.p, &b, MEAN, x0,
               ir_ops_binary(&b, IR_DIV, ir_ops_load(h.p, &b, S, x0), ir_ops_const_f(&b, C, PTC_F64), PTC_F64));
  nodes[1] = cgh_node(&h, IR_POINTWISE, MEAN, shape, 1, NULL, 0, &b);
  ir_val d = ir_ops_binary(&b, IR_SUB, ir_ops_load(h.p, &b, X, ir), ir_ops_load(h.p, &b, MEAN, x0), PTC_F64);
  ir_ops_store(h.p, &b, V, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_binary(&b, IR_MUL, d, d, PTC_F64), -1, PTC_F64));
  nodes[2] = cgh_node(&h, IR_REDUCTION, V, shape, 1, shape + 1, 1, &b);
  ir_val var = ir_ops_binary(&b, IR_DIV, ir_ops_load(h.p, &b, V, x0), ir_ops_const_f(&b, C, PTC_F64), PTC_F64);
  var = ir_ops_binary(&b, IR_ADD, var, ir_ops_const_f(&b, 1e-5, PTC_F64), PTC_F64);
  ir_ops_store(h.p, &b, RSTD, x0, ir_ops_to_dtype(&b, ir_ops_unary(&b, IR_RSQRT, var, PTC_F64), PTC_F32));
  nodes[3] = cgh_node(&h, IR_POINTWISE, RSTD, shape, 1, NULL, 0, &b);
  d = ir_ops_binary(&b, IR_SUB, ir_ops_load(h.p, &b, X, ix), ir_ops_load(h.p, &b, MEAN, x0), PTC_F64);
  ir_val rs = ir_ops_to_dtype(&b, ir_ops_load(h.p, &b, RSTD, x0), PTC_F64);
  ir_ops_store(h.p, &b, Y, ix, ir_ops_binary(&b, IR_MUL, d, rs, PTC_F64));
  nodes[4] = cgh_node(&h, IR_POINTWISE, Y, shape, 2, NULL, 0, &b);
  uint8_t inner[5] = {0, 0, 0, 0, 1};
  sched_plan* s = cgh_plan(&h, nodes, inner, 5, shape, 1, shape + 1, 1);
  cgh_local(s, S);
  cgh_local(s, MEAN);
  cgh_local(s, V);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    CHECK(count_substr(k.src.source, "for (int64_t r0") == 3);
    CHECK(k.src.n_bufs == 3); /* X, RSTD, Y */
    double x[R * C], y[R * C];
    float rstd[R];
    uint32_t st = 3;
    for (int i = 0; i < R * C; i++) x[i] = frand(&st) + (i / C);
    void* mem[8] = {0};
    mem[X] = x;
    mem[Y] = y;
    mem[RSTD] = rstd;
    cgh_run(&k, mem, NULL, 0);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 1e-6, 1e-9) == 0);
    for (int r = 0; r < R; r++) {
      double mu = 0, vv = 0;
      for (int c = 0; c < C; c++) mu += x[r * C + c] / C;
      for (int c = 0; c < C; c++) vv += (x[r * C + c] - mu) * (x[r * C + c] - mu) / C;
      float w = (float)(1.0 / sqrt(vv + 1e-5));
      CHECK(cgh_close(rstd[r], w, 1e-6, 0));
      for (int c = 0; c < C; c++) CHECK(cgh_close(y[r * C + c], (x[r * C + c] - mu) * (double)w, 1e-9, 1e-12));
    }
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- horizontal fusion: two reductions in one loop; column reduction ------------------------- */
static void test_column_and_horizontal(void) {
  enum { NR = 301, C = 7 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[2] = {cgh_c(&h, NR), cgh_c(&h, C)};
  const sym_expr *x0 = h.p->xvars[0], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_F32, 2, shape);
  int32_t SUM = cgh_buffer(&h, false, PTC_F32, 1, shape + 1);
  int32_t SQ = cgh_buffer(&h, false, PTC_F64, 1, shape + 1);
  const sym_expr* idx = sym_add(env, sym_mul_c(env, r0, C), x0); /* column walk */
  uint32_t nodes[2];
  ir_body b = {0};
  ir_ops_store(h.p, &b, SUM, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, X, idx), -1, PTC_F32));
  nodes[0] = cgh_node(&h, IR_REDUCTION, SUM, shape + 1, 1, shape, 1, &b);
  ir_val v = ir_ops_to_dtype(&b, ir_ops_load(h.p, &b, X, idx), PTC_F64);
  ir_ops_store(h.p, &b, SQ, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_binary(&b, IR_MUL, v, v, PTC_F64), -1, PTC_F64));
  nodes[1] = cgh_node(&h, IR_REDUCTION, SQ, shape + 1, 1, shape, 1, &b);
  sched_plan* s = cgh_plan(&h, nodes, NULL, 2, shape + 1, 1, shape, 1);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    CHECK(count_substr(k.src.source, "for (int64_t r0") == 1);
    CHECK(strstr(k.src.source, "xt += 64") != NULL); /* strided: tiled */
    float x[NR * C], sum[C];
    double sq[C];
    uint32_t st = 11;
    for (int i = 0; i < NR * C; i++) x[i] = frand(&st);
    void* mem[4] = {0};
    mem[X] = x;
    mem[SUM] = sum;
    mem[SQ] = sq;
    cgh_run(&k, mem, NULL, 0);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 1e-5, 1e-5) == 0);
    for (int c = 0; c < C; c++) {
      double ws = 0, wq = 0;
      for (int r = 0; r < NR; r++) {
        ws += x[r * C + c];
        wq += (double)x[r * C + c] * x[r * C + c];
      }
      CHECK(cgh_close(sum[c], ws, 1e-4, 1e-4));
      CHECK(cgh_close(sq[c], wq, 1e-12, 0));
    }
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* Row sum and row sum of squares fused horizontally: one loop, two simd
 * reduction clauses. */
static void test_horizontal_rows(void) {
  enum { R = 5, C = 203 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[2] = {cgh_c(&h, R), cgh_c(&h, C)};
  const sym_expr *x0 = h.p->xvars[0], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_F32, 2, shape);
  int32_t SUM = cgh_buffer(&h, false, PTC_F32, 1, shape), SQ = cgh_buffer(&h, false, PTC_F32, 1, shape);
  const sym_expr* idx = sym_add(env, sym_mul_c(env, x0, C), r0);
  uint32_t nodes[2];
  ir_body b = {0};
  ir_ops_store(h.p, &b, SUM, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, X, idx), -1, PTC_F32));
  nodes[0] = cgh_node(&h, IR_REDUCTION, SUM, shape, 1, shape + 1, 1, &b);
  ir_val v = ir_ops_load(h.p, &b, X, idx);
  ir_ops_store(h.p, &b, SQ, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_binary(&b, IR_MUL, v, v, PTC_F32), -1, PTC_F32));
  nodes[1] = cgh_node(&h, IR_REDUCTION, SQ, shape, 1, shape + 1, 1, &b);
  sched_plan* s = cgh_plan(&h, nodes, NULL, 2, shape, 1, shape + 1, 1);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    CHECK(count_substr(k.src.source, "for (int64_t r0") == 1);
    CHECK(strstr(k.src.source, "reduction(+:a0_1) reduction(+:a1_2)") != NULL);
    CHECK(strstr(k.src.source, "xt +=") == NULL); /* contiguous rows: not tiled */
    float x[R * C], sum[R], sq[R];
    uint32_t st = 13;
    for (int i = 0; i < R * C; i++) x[i] = frand(&st);
    void* mem[3] = {x, sum, sq};
    cgh_run(&k, mem, NULL, 0);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 1e-5, 1e-5) == 0);
    for (int r = 0; r < R; r++) {
      double ws = 0, wq = 0;
      for (int c = 0; c < C; c++) {
        ws += x[r * C + c];
        wq += (double)x[r * C + c] * x[r * C + c];
      }
      CHECK(cgh_close(sum[r], ws, 1e-5, 1e-5) && cgh_close(sq[r], wq, 1e-5, 1e-5));
    }
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* Tiled reductions over the middle dim of [B, N, C] (C symbolic, not a
 * multiple of the tile): max with NaN, argmin, a sum whose value is
 * shifted by a hoisted per-column load inside the loop and scaled by
 * another one after it, and an outer pointwise member using the results. */
static void test_tiled_n(int64_t NN) {
  enum { B = 3 };
  static const char* const names[1] = {"s0"};
  static const int64_t hints[1] = {100};
  cgh h;
  CHECK(cgh_init(&h, 1, names, hints, 2));
  sym_env* env = h.p->env;
  const sym_expr* C = cgh_sym(&h, 0);
  const sym_expr* shape[3] = {cgh_c(&h, B), cgh_c(&h, NN), C};
  const sym_expr* oshape[2] = {cgh_c(&h, B), C};
  const sym_expr* cshape[1] = {C};
  const sym_expr *x0 = h.p->xvars[0], *x1 = h.p->xvars[1], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_F32, 3, shape), SH = cgh_buffer(&h, true, PTC_F32, 1, cshape);
  int32_t MX = cgh_buffer(&h, false, PTC_F32, 2, oshape), AN = cgh_buffer(&h, false, PTC_I64, 2, oshape);
  int32_t SM = cgh_buffer(&h, false, PTC_F32, 2, oshape), OUT = cgh_buffer(&h, false, PTC_F32, 2, oshape);
  const sym_expr* ix = sym_add(env, sym_add(env, sym_mul(env, x0, sym_mul_c(env, C, NN)), sym_mul(env, r0, C)), x1);
  const sym_expr* io = sym_add(env, sym_mul(env, x0, C), x1);
  uint32_t nodes[4];
  ir_body b = {0};
  ir_ops_store(h.p, &b, MX, io, ir_ops_reduce(&b, IR_R_MAX, ir_ops_load(h.p, &b, X, ix), -1, PTC_F32));
  nodes[0] = cgh_node(&h, IR_REDUCTION, MX, oshape, 2, shape + 1, 1, &b);
  ir_val v = ir_ops_load(h.p, &b, X, ix), ri = ir_ops_index_expr(h.p, &b, r0, PTC_I64);
  ir_ops_store(h.p, &b, AN, io, ir_ops_reduce(&b, IR_R_ARGMIN, v, ri, PTC_I64));
  nodes[1] = cgh_node(&h, IR_REDUCTION, AN, oshape, 2, shape + 1, 1, &b);
  ir_val sh = ir_ops_load(h.p, &b, SH, x1); /* hoisted: used in the loop and after it */
  v = ir_ops_binary(&b, IR_SUB, ir_ops_load(h.p, &b, X, ix), sh, PTC_F32);
  ir_val red = ir_ops_reduce(&b, IR_R_SUM, v, -1, PTC_F32);
  ir_ops_store(h.p, &b, SM, io, ir_ops_binary(&b, IR_MUL, red, sh, PTC_F32));
  nodes[2] = cgh_node(&h, IR_REDUCTION, SM, oshape, 2, shape + 1, 1, &b);
  ir_val o = ir_ops_binary(&b, IR_ADD, ir_ops_load(h.p, &b, SM, io), ir_ops_load(h.p, &b, MX, io), PTC_F32);
  ir_ops_store(h.p, &b, OUT, io, o);
  nodes[3] = cgh_node(&h, IR_POINTWISE, OUT, oshape, 2, NULL, 0, &b);
  sched_plan* s = cgh_plan(&h, nodes, NULL, 4, oshape, 2, shape + 1, 1);
  cgh_local(s, SM);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    /* 50 reduction points: tiled; 200: split over threads (partial rows) */
    CHECK(strstr(k.src.source, NN < 64 ? "xt += 64" : "ptc_np") != NULL);
    int64_t sizes[2] = {7, 130};
    for (int j = 0; j < 2; j++) {
      int64_t c = sizes[j];
      float* x = malloc((size_t)(B * NN * c) * sizeof *x);
      float* shf = malloc((size_t)c * sizeof *shf);
      float* mx = malloc((size_t)(B * c) * sizeof *mx);
      float* out = malloc((size_t)(B * c) * sizeof *out);
      int64_t* an = malloc((size_t)(B * c) * sizeof *an);
      uint32_t st = 17;
      for (int64_t i = 0; i < B * NN * c; i++) x[i] = (float)(int)(frand(&st) * 4);
      for (int64_t i = 0; i < c; i++) shf[i] = (float)i * 0.5f;
      x[1 * NN * c + 7 * c + 2] = NAN; /* b=1, n=7, column 2 */
      void* mem[6] = {x, shf, mx, an, NULL, out};
      cpu_kernel_ctx kc = cgh_run(&k, mem, &c, 0);
      CHECK(kc.error == 0);
      CHECK(cgh_check_interp(&h, s, mem, &c, 0, 1e-5, 1e-4) == 0);
      for (int64_t bb = 0; bb < B; bb++) {
        for (int64_t cc = 0; cc < c; cc++) {
          float wm = -INFINITY;
          int64_t wa = -1;
          double ws = 0;
          bool nan = false;
          for (int64_t n = 0; n < NN; n++) {
            float xv = x[bb * NN * c + n * c + cc];
            nan |= isnan(xv);
            if (xv > wm) wm = xv;
            if (wa < 0 || (!isnan(x[bb * NN * c + wa * c + cc]) && (isnan(xv) || xv < x[bb * NN * c + wa * c + cc]))) wa = n;
            ws += xv - shf[cc];
          }
          if (nan) wm = NAN;
          float wo = (float)(ws * shf[cc]) + wm;
          CHECK(isnan(wm) ? isnan(mx[bb * c + cc]) : mx[bb * c + cc] == wm);
          CHECK(an[bb * c + cc] == wa);
          CHECK(cgh_close(out[bb * c + cc], wo, 1e-5, 1e-4));
        }
      }
      free(x);
      free(shf);
      free(mx);
      free(out);
      free(an);
    }
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

static void test_tiled(void) {
  test_tiled_n(50);
  test_tiled_n(200);
}

/* ---- row scratch and streaming stores --------------------------------------------------------- */

/* Softmax as the decomposition gives it: max, E = exp(x - max) (inner),
 * sum of E, E / sum (inner). E dies in the kernel: a row scratch array, not
 * an argument. With PTC_CPU_STREAM_BYTES=1 the output rows are streamed. */
static void test_scratch_stream_n(bool stream, int64_t C, const char* row_stream,
                                  const char* row_prefetch) {
  enum { R = 37 };
  if (stream) setenv("PTC_CPU_STREAM_BYTES", "1", 1);
  if (row_stream) setenv("PTC_CPU_ROW_STREAM", row_stream, 1);
  if (row_prefetch) setenv("PTC_CPU_ROW_PREFETCH", row_prefetch, 1);
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[2] = {cgh_c(&h, R), cgh_c(&h, C)};
  const sym_expr *x0 = h.p->xvars[0], *x1 = h.p->xvars[1], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_F32, 2, shape), M = cgh_buffer(&h, false, PTC_F32, 1, shape);
  int32_t E = cgh_buffer(&h, false, PTC_F32, 2, shape), S = cgh_buffer(&h, false, PTC_F32, 1, shape);
  int32_t Y = cgh_buffer(&h, false, PTC_F32, 2, shape);
  const sym_expr* in_r = sym_add(env, sym_mul_c(env, x0, C), r0);
  const sym_expr* in_x = sym_add(env, sym_mul_c(env, x0, C), x1);
  uint32_t nodes[4];
  ir_body b = {0};
  ir_ops_store(h.p, &b, M, x0, ir_ops_reduce(&b, IR_R_MAX, ir_ops_load(h.p, &b, X, in_r), -1, PTC_F32));
  nodes[0] = cgh_node(&h, IR_REDUCTION, M, shape, 1, shape + 1, 1, &b);
  ir_val d = ir_ops_binary(&b, IR_SUB, ir_ops_load(h.p, &b, X, in_x), ir_ops_load(h.p, &b, M, x0), PTC_F32);
  ir_ops_store(h.p, &b, E, in_x, ir_ops_unary(&b, IR_EXP, d, PTC_F32));
  nodes[1] = cgh_node(&h, IR_POINTWISE, E, shape, 2, NULL, 0, &b);
  ir_ops_store(h.p, &b, S, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, E, in_r), -1, PTC_F32));
  nodes[2] = cgh_node(&h, IR_REDUCTION, S, shape, 1, shape + 1, 1, &b);
  ir_val q = ir_ops_binary(&b, IR_DIV, ir_ops_load(h.p, &b, E, in_x), ir_ops_load(h.p, &b, S, x0), PTC_F32);
  ir_ops_store(h.p, &b, Y, in_x, q);
  nodes[3] = cgh_node(&h, IR_POINTWISE, Y, shape, 2, NULL, 0, &b);
  uint8_t inner[4] = {0, 1, 0, 1};
  sched_plan* s = cgh_plan(&h, nodes, inner, 4, shape, 1, shape + 1, 1);
  cgh_local(s, M);
  cgh_local(s, S);
  s->buf_free_after[E] = 0; /* dead after the kernel */
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    const char* src = k.src.source;
    CHECK(k.src.n_bufs == 2); /* X and Y */
    char decl[64];
    snprintf(decl, sizeof decl, "_s[%lld]; /* row scratch */", (long long)C);
    CHECK(strstr(src, decl) != NULL);
    CHECK((strstr(src, "ptc_stream_store(") != NULL) == stream);
    CHECK((strstr(src, "ptc_sfence();") != NULL) == stream);
    /* row blocks (CPU_CG_ROW_BLOCK = 256): rows of >= 512 elements */
    bool blocks = stream && C >= 512;
    const char* rs = row_stream ? row_stream : "block";
    const char* rp = row_prefetch ? row_prefetch : "spread";
    CHECK((strstr(src, "(r0 - rb)") != NULL) == (blocks && !strcmp(rs, "block")));
    CHECK((strstr(src, "ptc_pf0") != NULL) == (blocks && strncmp(rp, "spread", 6) == 0));
    CHECK((strstr(src, "pf + (uintptr_t)q") != NULL) == (stream && (C < 512 || !strcmp(rp, "burst"))));
    bool any_blocked = blocks && (strcmp(rs, "row") != 0 || strncmp(rp, "spread", 6) == 0);
    CHECK((strstr(src, "ptc_imin(rb + 256") != NULL) == (any_blocked && C % 256 != 0));
    float* x = malloc((size_t)(R * C) * sizeof *x);
    float* y = calloc((size_t)(R * C), sizeof *y);
    uint32_t st = 7;
    for (int64_t i = 0; i < R * C; i++) x[i] = frand(&st) * 3;
    void* mem[5] = {0};
    mem[X] = x;
    mem[Y] = y;
    cpu_kernel_ctx kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == 0);
    check_softmax(x, y, R, C);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 1e-5, 1e-7) == 0);
    free(x);
    free(y);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
  if (stream) unsetenv("PTC_CPU_STREAM_BYTES");
  if (row_stream) unsetenv("PTC_CPU_ROW_STREAM");
  if (row_prefetch) unsetenv("PTC_CPU_ROW_PREFETCH");
}

static void test_scratch_stream(bool stream) {
  test_scratch_stream_n(stream, 1000, NULL, NULL);
  if (!stream) return;
  test_scratch_stream_n(true, 300, NULL, NULL); /* too short for row blocks */
  test_scratch_stream_n(true, 1024, NULL, NULL);
  static const char* const rs[] = {"row", "block"};
  static const char* const rp[] = {"burst", "spread", "spread-l2"};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      test_scratch_stream_n(true, 1000, rs[i], rp[j]);
      test_scratch_stream_n(true, 1536, rs[i], rp[j]);
    }
}

/* Pointwise kernels with streamed stores (blocks of the innermost loop,
 * tails, a misaligned destination), alone and with fast sin/cos (large
 * arguments recomputed by libm), over [rows, cols]. */
static void test_stream_pointwise(int64_t rows, int64_t cols, bool trig) {
  setenv("PTC_CPU_STREAM_BYTES", "1", 1);
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[2] = {cgh_c(&h, rows), cgh_c(&h, cols)};
  const sym_expr *x0 = h.p->xvars[0], *x1 = h.p->xvars[1];
  int32_t X = cgh_buffer(&h, true, PTC_F32, 2, shape), Y = cgh_buffer(&h, false, PTC_F32, 2, shape);
  int32_t Z = cgh_buffer(&h, false, PTC_F64, 2, shape);
  const sym_expr* idx = sym_add(env, sym_mul_c(env, x0, cols), x1);
  uint32_t nodes[2];
  ir_body b = {0};
  ir_val v = ir_ops_load(h.p, &b, X, idx);
  if (trig) v = ir_ops_unary(&b, IR_SIN, v, PTC_F32);
  ir_ops_store(h.p, &b, Y, idx, ir_ops_binary(&b, IR_MUL, v, ir_ops_const_f(&b, 2.0, PTC_F32), PTC_F32));
  nodes[0] = cgh_node(&h, IR_POINTWISE, Y, shape, 2, NULL, 0, &b);
  v = ir_ops_to_dtype(&b, ir_ops_load(h.p, &b, X, idx), PTC_F64);
  if (trig) v = ir_ops_to_dtype(&b, ir_ops_unary(&b, IR_COS, ir_ops_load(h.p, &b, X, idx), PTC_F32), PTC_F64);
  ir_ops_store(h.p, &b, Z, idx, ir_ops_binary(&b, IR_ADD, v, ir_ops_const_f(&b, 1.0, PTC_F64), PTC_F64));
  nodes[1] = cgh_node(&h, IR_POINTWISE, Z, shape, 2, NULL, 0, &b);
  sched_plan* s = cgh_plan(&h, nodes, NULL, 2, shape, 2, NULL, 0);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    const char* src = k.src.source;
    CHECK(count_substr(src, "ptc_stream_store(&") == 2);
    CHECK((strstr(src, "= ptc_sin_f32(") != NULL) == trig);
    int64_t n = rows * cols;
    float* x = malloc((size_t)n * sizeof *x);
    float* y = calloc((size_t)n + 1, sizeof *y);
    double* z = calloc((size_t)n + 1, sizeof *z);
    uint32_t st = 5;
    for (int64_t i = 0; i < n; i++) x[i] = frand(&st) * (i % 997 == 3 ? 1e7f : 3.0f);
    if (n > 10) x[9] = INFINITY;
    void* mem[3] = {0};
    mem[X] = x;
    mem[Y] = y + 1; /* 4 bytes off the allocation's alignment */
    mem[Z] = z + 1;
    cpu_kernel_ctx kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == 0);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 2e-7, 2e-7) == 0);
    free(x);
    free(y);
    free(z);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
  unsetenv("PTC_CPU_STREAM_BYTES");
}

/* ---- full reductions split over threads ---------------------------------------------------- */
static void test_full_reductions(void) {
  enum { NE = 1 << 20 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  const sym_expr* shape[1] = {cgh_c(&h, NE)};
  const sym_expr* one[1] = {cgh_c(&h, 1)};
  const sym_expr *r0 = h.p->rvars[0], *z = cgh_c(&h, 0);
  int32_t X = cgh_buffer(&h, true, PTC_F32, 1, shape);
  int32_t SUM = cgh_buffer(&h, false, PTC_F32, 1, one), MAX = cgh_buffer(&h, false, PTC_F32, 1, one);
  int32_t AMAX = cgh_buffer(&h, false, PTC_I64, 1, one), AMIN = cgh_buffer(&h, false, PTC_I64, 1, one);
  int32_t ANY = cgh_buffer(&h, false, PTC_BOOL, 1, one);
  uint32_t nodes[5];
  ir_body b = {0};
  ir_ops_store(h.p, &b, SUM, z, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, X, r0), -1, PTC_F32));
  nodes[0] = cgh_node(&h, IR_REDUCTION, SUM, NULL, 0, shape, 1, &b);
  ir_ops_store(h.p, &b, MAX, z, ir_ops_reduce(&b, IR_R_MAX, ir_ops_load(h.p, &b, X, r0), -1, PTC_F32));
  nodes[1] = cgh_node(&h, IR_REDUCTION, MAX, NULL, 0, shape, 1, &b);
  for (int j = 0; j < 2; j++) {
    ir_val v = ir_ops_load(h.p, &b, X, r0), ix = ir_ops_index_expr(h.p, &b, r0, PTC_I64);
    int32_t out = j ? AMIN : AMAX;
    ir_ops_store(h.p, &b, out, z, ir_ops_reduce(&b, j ? IR_R_ARGMIN : IR_R_ARGMAX, v, ix, PTC_I64));
    nodes[2 + j] = cgh_node(&h, IR_REDUCTION, out, NULL, 0, shape, 1, &b);
  }
  ir_val gt = ir_ops_binary(&b, IR_GT, ir_ops_load(h.p, &b, X, r0), ir_ops_const_f(&b, 1.99, PTC_F32), PTC_BOOL);
  ir_ops_store(h.p, &b, ANY, z, ir_ops_reduce(&b, IR_R_ANY, gt, -1, PTC_BOOL));
  nodes[4] = cgh_node(&h, IR_REDUCTION, ANY, NULL, 0, shape, 1, &b);
  /* kernel A: the sum alone (simd); kernel B: max, argmax, argmin, any */
  sched_plan* sa = cgh_plan(&h, nodes, NULL, 1, NULL, 0, shape, 1);
  sched_plan* sb = cgh_plan(&h, nodes + 1, NULL, 4, NULL, 0, shape, 1);
  cgh_kernel ka, kb;
  bool ok = cgh_compile(&h, sa, &ka) && cgh_compile(&h, sb, &kb);
  CHECK(ok);
  if (ok) {
    CHECK(strstr(ka.src.source, "num_threads(ptc_nthreads())") != NULL);
    CHECK(strstr(ka.src.source, "#pragma omp simd reduction(+:a0_1)") != NULL);
    CHECK(strstr(kb.src.source, "#pragma omp simd") == NULL);
    float* x = malloc(NE * sizeof *x);
    uint32_t st = 5;
    for (int i = 0; i < NE; i++) x[i] = frand(&st);
    x[700000] = 9.0f; /* max, tied later */
    x[900000] = 9.0f;
    x[123] = -9.0f; /* min, tied later */
    x[1000000] = -9.0f;
    float sum = 0, sum2 = 0, mx = 0;
    int64_t am = -1, an = -1;
    uint8_t any = 0;
    void* mem[8] = {0};
    mem[X] = x;
    mem[SUM] = &sum;
    mem[MAX] = &mx;
    mem[AMAX] = &am;
    mem[AMIN] = &an;
    mem[ANY] = &any;
    cgh_run(&ka, mem, NULL, 0);
    cgh_run(&kb, mem, NULL, 0);
    double w = 0;
    for (int i = 0; i < NE; i++) w += x[i];
    CHECK(cgh_close(sum, w, 1e-4, 1e-2));
    CHECK(mx == 9.0f && am == 700000 && an == 123 && any == 1);
    mem[SUM] = &sum2;
    cgh_run(&ka, mem, NULL, 0);
    CHECK(memcmp(&sum, &sum2, sizeof sum) == 0); /* deterministic */
    x[800000] = NAN;                             /* NaN wins max and argmax */
    x[850000] = NAN;
    cgh_run(&kb, mem, NULL, 0);
    CHECK(isnan(mx) && am == 800000 && an == 800000);
    free(x);
  }
  cgh_kernel_free(&ka);
  cgh_kernel_free(&kb);
  cgh_plan_free(sa);
  cgh_plan_free(sb);
  cgh_free(&h);
}

/* Two long rows: the inner loop is split over threads per row. */
static void test_split_rows(void) {
  enum { R = 2, C = 1 << 18 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[2] = {cgh_c(&h, R), cgh_c(&h, C)};
  const sym_expr *x0 = h.p->xvars[0], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_F64, 2, shape), S = cgh_buffer(&h, false, PTC_F64, 1, shape);
  ir_body b = {0};
  const sym_expr* ix = sym_add(env, sym_mul_c(env, x0, C), r0);
  ir_ops_store(h.p, &b, S, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, X, ix), -1, PTC_F64));
  uint32_t n = cgh_node(&h, IR_REDUCTION, S, shape, 1, shape + 1, 1, &b);
  sched_plan* s = cgh_plan(&h, &n, NULL, 1, shape, 1, shape + 1, 1);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    CHECK(strstr(k.src.source, "num_threads(ptc_nthreads())") != NULL);
    CHECK(strstr(k.src.source, "#pragma omp parallel for") == NULL);
    double* x = malloc(R * C * sizeof *x);
    double out[R];
    for (int i = 0; i < R * C; i++) x[i] = (i % 1000) * 0.25 + (i >= C ? 1 : 0);
    void* mem[2] = {x, out};
    cgh_run(&k, mem, NULL, 0);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 1e-12, 0) == 0);
    for (int r = 0; r < R; r++) {
      double w = 0;
      for (int c = 0; c < C; c++) w += x[r * C + c];
      CHECK(cgh_close(out[r], w, 1e-12, 0));
    }
    free(x);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* Row argmax/argmin (f16 input) with ties, NaN and all -inf rows. */
static void test_row_argmax(void) {
  enum { R = 4, C = 4 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[2] = {cgh_c(&h, R), cgh_c(&h, C)};
  const sym_expr *x0 = h.p->xvars[0], *r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_F16, 2, shape);
  int32_t AM = cgh_buffer(&h, false, PTC_I64, 1, shape), AN = cgh_buffer(&h, false, PTC_I64, 1, shape);
  const sym_expr* ix = sym_add(env, sym_mul_c(env, x0, C), r0);
  uint32_t nodes[2];
  for (int j = 0; j < 2; j++) {
    ir_body b = {0};
    ir_val v = ir_ops_load(h.p, &b, X, ix), i = ir_ops_index_expr(h.p, &b, r0, PTC_I64);
    ir_ops_store(h.p, &b, j ? AN : AM, x0, ir_ops_reduce(&b, j ? IR_R_ARGMIN : IR_R_ARGMAX, v, i, PTC_I64));
    nodes[j] = cgh_node(&h, IR_REDUCTION, j ? AN : AM, shape, 1, shape + 1, 1, &b);
  }
  sched_plan* s = cgh_plan(&h, nodes, NULL, 2, shape, 1, shape + 1, 1);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    const float vals[R * C] = {1, 5, 5, 2, 1, NAN, 7, NAN, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 3, 2, 1, 0};
    uint16_t x[R * C];
    for (int i = 0; i < R * C; i++) x[i] = ptc_f32_to_f16(vals[i]);
    int64_t am[R], an[R];
    void* mem[3] = {x, am, an};
    cgh_run(&k, mem, NULL, 0);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 0, 0) == 0);
    CHECK(am[0] == 1 && am[1] == 1 && am[2] == 0 && am[3] == 0);
    CHECK(an[0] == 0 && an[1] == 1 && an[2] == 0 && an[3] == 3);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- indirect indexing ------------------------------------------------------------------- */
static void test_indirect(void) {
  enum { V = 4, D = 3, NI = 5 };
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* tshape[2] = {cgh_c(&h, V), cgh_c(&h, D)};
  const sym_expr* oshape[2] = {cgh_c(&h, NI), cgh_c(&h, D)};
  const sym_expr *x0 = h.p->xvars[0], *x1 = h.p->xvars[1];
  int32_t T = cgh_buffer(&h, true, PTC_F32, 2, tshape), I = cgh_buffer(&h, true, PTC_I32, 1, oshape);
  int32_t O = cgh_buffer(&h, false, PTC_F32, 2, oshape);
  ir_body b = {0};
  const sym_expr* sym = NULL;
  ir_ops_indirect(h.p, &b, ir_ops_load(h.p, &b, I, x0), tshape[0], &sym);
  ir_val v = ir_ops_load(h.p, &b, T, sym_add(env, sym_mul_c(env, sym, D), x1));
  ir_ops_store(h.p, &b, O, sym_add(env, sym_mul_c(env, x0, D), x1), v);
  uint32_t n = cgh_node(&h, IR_POINTWISE, O, oshape, 2, NULL, 0, &b);
  sched_plan* s = cgh_plan(&h, &n, NULL, 1, oshape, 2, NULL, 0);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    float t[V * D], o[NI * D];
    for (int i = 0; i < V * D; i++) t[i] = (float)i;
    int32_t idx[NI] = {0, 2, -1, 3, -4};
    void* mem[3] = {t, idx, o};
    cpu_kernel_ctx kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == 0);
    CHECK(cgh_check_interp(&h, s, mem, NULL, 0, 0, 0) == 0);
    static const int want_row[NI] = {0, 2, 3, 3, 0};
    for (int i = 0; i < NI; i++)
      for (int d = 0; d < D; d++) CHECK(o[i * D + d] == t[want_row[i] * D + d]);
    idx[3] = 4; /* out of range */
    kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == CPU_KERR_INDIRECT && kc.error_value == 4 && kc.error_bound == V &&
          kc.error_node == (int32_t)n);
    idx[3] = -5;
    kc = cgh_run(&k, mem, NULL, 0);
    CHECK(kc.error == CPU_KERR_INDIRECT && kc.error_value == -5);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* Embedding-bag sum: the indirect index lives in the reduction loop; the
 * table size is symbolic (bound_expr). */
static void test_indirect_in_reduction(void) {
  static const char* const names[1] = {"s0"};
  static const int64_t hints[1] = {10};
  enum { NB = 3, K = 4 };
  cgh h;
  CHECK(cgh_init(&h, 1, names, hints, 2));
  sym_env* env = h.p->env;
  const sym_expr* V = cgh_sym(&h, 0);
  const sym_expr* tshape[1] = {V};
  const sym_expr* ishape[2] = {cgh_c(&h, NB), cgh_c(&h, K)};
  const sym_expr *x0 = h.p->xvars[0], *r0 = h.p->rvars[0];
  int32_t T = cgh_buffer(&h, true, PTC_F64, 1, tshape), I = cgh_buffer(&h, true, PTC_I64, 2, ishape);
  int32_t O = cgh_buffer(&h, false, PTC_F64, 1, ishape);
  ir_body b = {0};
  const sym_expr* sym = NULL;
  ir_ops_indirect(h.p, &b, ir_ops_load(h.p, &b, I, sym_add(env, sym_mul_c(env, x0, K), r0)), V, &sym);
  ir_ops_store(h.p, &b, O, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, T, sym), -1, PTC_F64));
  uint32_t n = cgh_node(&h, IR_REDUCTION, O, ishape, 1, ishape + 1, 1, &b);
  sched_plan* s = cgh_plan(&h, &n, NULL, 1, ishape, 1, ishape + 1, 1);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    double t[10], o[NB];
    for (int i = 0; i < 10; i++) t[i] = i * 10.0;
    int64_t idx[NB * K] = {0, 1, 2, 3, 9, 9, -1, -10, 5, 5, 5, 5};
    int64_t sy[1] = {10};
    void* mem[3] = {t, idx, o};
    cpu_kernel_ctx kc = cgh_run(&k, mem, sy, 0);
    CHECK(kc.error == 0 && o[0] == 60 && o[1] == 270 && o[2] == 200);
    CHECK(cgh_check_interp(&h, s, mem, sy, 0, 0, 0) == 0);
    sy[0] = 6; /* now 9 is out of range */
    kc = cgh_run(&k, mem, sy, 0);
    CHECK(kc.error == CPU_KERR_INDIRECT && kc.error_bound == 6 && kc.error_value == 9);
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- index arithmetic with floor semantics, masked loads ----------------------------------- */
static void test_index_math(void) {
  enum { NX = 12 };
  static const char* const names[1] = {"s0"};
  static const int64_t hints[1] = {4};
  cgh h;
  CHECK(cgh_init(&h, 1, names, hints, 2));
  sym_env* env = h.p->env;
  const sym_expr* s0 = cgh_sym(&h, 0);
  const sym_expr* x0 = h.p->xvars[0];
  const sym_expr* in_shape[2] = {cgh_c(&h, 3), s0};            /* [3, s0] */
  const sym_expr* out_shape[1] = {sym_mul_c(env, s0, 3)};      /* flattened transpose */
  const sym_expr* n12[1] = {cgh_c(&h, NX)};
  int32_t A = cgh_buffer(&h, true, PTC_I64, 2, in_shape);
  int32_t T = cgh_buffer(&h, false, PTC_I64, 1, out_shape);
  int32_t F = cgh_buffer(&h, false, PTC_I64, 1, n12);
  int32_t M = cgh_buffer(&h, false, PTC_F32, 1, n12);
  uint32_t nodes[3];
  /* T[x0] = A[(x0 % 3) * s0 + x0 // 3] */
  ir_body b = {0};
  const sym_expr* ti = sym_add(env, sym_mul(env, sym_mod(env, x0, cgh_c(&h, 3)), s0),
                               sym_floordiv(env, x0, cgh_c(&h, 3)));
  ir_ops_store(h.p, &b, T, x0, ir_ops_load(h.p, &b, A, ti));
  nodes[0] = cgh_node(&h, IR_POINTWISE, T, out_shape, 1, NULL, 0, &b);
  /* F[x0] = (x0 - 5) // s0 * 100 + (x0 - 5) % s0 + modidx(x0, 2, 3) * 1000 +
   * ceildiv(x0 - 5, s0) * 10000: negative dividends need Python semantics */
  const sym_expr* xm5 = sym_add_c(env, x0, -5);
  const sym_expr* e = sym_add(env, sym_mul_c(env, sym_floordiv(env, xm5, s0), 100),
                              sym_mod(env, xm5, s0));
  e = sym_add(env, e, sym_mul_c(env, sym_modidx(env, x0, cgh_c(&h, 2), cgh_c(&h, 3)), 1000));
  e = sym_add(env, e, sym_mul_c(env, sym_ceildiv(env, xm5, s0), 10000));
  ir_ops_store(h.p, &b, F, x0, ir_ops_index_expr(h.p, &b, e, PTC_I64));
  nodes[1] = cgh_node(&h, IR_POINTWISE, F, n12, 1, NULL, 0, &b);
  /* M[x0] = x0 < 5 ? float(A[x0]) : -1.5 (masked load) */
  ir_val lt = ir_ops_binary(&b, IR_LT, ir_ops_index_expr(h.p, &b, x0, PTC_I64),
                            ir_ops_const_i(&b, 5, PTC_I64), PTC_BOOL);
  ir_val v = ir_ops_load_masked(h.p, &b, A, x0, lt, -1.5);
  ir_val sel = ir_ops_where(&b, lt, ir_ops_to_dtype(&b, v, PTC_F32), ir_ops_const_f(&b, -1.5, PTC_F32), PTC_F32);
  ir_ops_store(h.p, &b, M, x0, sel);
  nodes[2] = cgh_node(&h, IR_POINTWISE, M, n12, 1, NULL, 0, &b);
  /* the three nodes have different ranges: one kernel each */
  for (int j = 0; j < 3; j++) {
    const sym_expr* const* rg = j == 0 ? out_shape : n12;
    sched_plan* s = cgh_plan(&h, &nodes[j], NULL, 1, rg, 1, NULL, 0);
    cgh_kernel k;
    bool ok = cgh_compile(&h, s, &k);
    CHECK(ok);
    if (ok) {
      int64_t a[15], t[15], f[NX];
      float m[NX];
      int64_t sy[1] = {j == 1 ? 4 : 5};
      for (int i = 0; i < 15; i++) a[i] = i * 11;
      void* mem[4] = {a, t, f, m};
      cgh_run(&k, mem, sy, 0);
      CHECK(cgh_check_interp(&h, s, mem, sy, 0, 0, 0) == 0);
      for (int i = 0; j == 0 && i < 15; i++) CHECK(t[i] == a[(i % 3) * 5 + i / 3]);
      for (int i = 0; j == 1 && i < NX; i++) {
        int64_t d = i - 5, fd = d >= 0 ? d / 4 : -((-d + 3) / 4), md = ((d % 4) + 4) % 4;
        int64_t cd = d >= 0 ? (d + 3) / 4 : -((-d) / 4);
        CHECK(f[i] == fd * 100 + md + ((i / 2) % 3) * 1000 + cd * 10000);
      }
      for (int i = 0; j == 2 && i < NX; i++) CHECK(m[i] == (i < 5 ? (float)a[i] : -1.5f));
      const char* body = strstr(k.src.source, "void ptc_k0(");
      if (j == 1) CHECK(strstr(body, "ptc_floordiv(") != NULL);
      if (j == 0) CHECK(strstr(body, "ptc_floordiv(") == NULL); /* x0 >= 0: plain C */
    }
    cgh_kernel_free(&k);
    cgh_plan_free(s);
  }
  cgh_free(&h);
}

/* ---- errors reported by kernels ----------------------------------------------------------- */
static void test_kernel_errors(void) {
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  const sym_expr* n4[1] = {cgh_c(&h, 4)};
  const sym_expr* n0[1] = {cgh_c(&h, 0)};
  const sym_expr* x0 = h.p->xvars[0];
  int32_t A = cgh_buffer(&h, true, PTC_I32, 1, n4), B = cgh_buffer(&h, true, PTC_I32, 1, n4);
  int32_t Q = cgh_buffer(&h, false, PTC_I32, 1, n4);
  int32_t E = cgh_buffer(&h, true, PTC_F32, 1, n0), AM = cgh_buffer(&h, false, PTC_I64, 1, n4);
  int32_t SM = cgh_buffer(&h, false, PTC_F32, 1, n4);
  ir_body b = {0};
  ir_ops_store(h.p, &b, Q, x0,
               ir_ops_binary(&b, IR_MOD, ir_ops_load(h.p, &b, A, x0), ir_ops_load(h.p, &b, B, x0), PTC_I32));
  uint32_t nq = cgh_node(&h, IR_POINTWISE, Q, n4, 1, NULL, 0, &b);
  const sym_expr* r0 = h.p->rvars[0];
  ir_val v = ir_ops_load(h.p, &b, E, r0);
  ir_ops_store(h.p, &b, AM, x0, ir_ops_reduce(&b, IR_R_ARGMAX, v, ir_ops_index_expr(h.p, &b, r0, PTC_I64), PTC_I64));
  uint32_t na = cgh_node(&h, IR_REDUCTION, AM, n4, 1, n0, 1, &b);
  ir_ops_store(h.p, &b, SM, x0, ir_ops_reduce(&b, IR_R_SUM, ir_ops_load(h.p, &b, E, r0), -1, PTC_F32));
  uint32_t ns = cgh_node(&h, IR_REDUCTION, SM, n4, 1, n0, 1, &b);
  sched_plan* sq = cgh_plan(&h, &nq, NULL, 1, n4, 1, NULL, 0);
  sched_plan* sa = cgh_plan(&h, &na, NULL, 1, n4, 1, n0, 1);
  sched_plan* ss = cgh_plan(&h, &ns, NULL, 1, n4, 1, n0, 1);
  cgh_kernel kq, ka, ks;
  bool ok = cgh_compile(&h, sq, &kq) && cgh_compile(&h, sa, &ka) && cgh_compile(&h, ss, &ks);
  CHECK(ok);
  if (ok) {
    int32_t a[4] = {7, -7, 9, 1}, bb[4] = {2, 3, 0, 5}, q[4];
    int64_t am[4];
    float sm[4] = {1, 1, 1, 1};
    void* mem[6] = {a, bb, q, NULL, am, sm};
    cpu_kernel_ctx kc = cgh_run(&kq, mem, NULL, 0);
    CHECK(kc.error == CPU_KERR_DIV_ZERO && kc.error_value == 9 && kc.error_node == (int32_t)nq);
    CHECK(q[0] == 1 && q[1] == 2 && q[3] == 1);
    kc = cgh_run(&ka, mem, NULL, 0);
    CHECK(kc.error == CPU_KERR_EMPTY && kc.error_value == 4 && kc.error_node == (int32_t)na);
    kc = cgh_run(&ks, mem, NULL, 0);
    CHECK(kc.error == 0 && sm[0] == 0 && sm[3] == 0); /* an empty sum is 0 */
  }
  cgh_kernel_free(&kq);
  cgh_kernel_free(&ka);
  cgh_kernel_free(&ks);
  cgh_plan_free(sq);
  cgh_plan_free(sa);
  cgh_plan_free(ss);
  cgh_free(&h);
}

/* ---- parallel / simd decisions ------------------------------------------------------------ */
static void check_pointwise_schedule(int64_t d0, int64_t d1, int64_t d2, bool par, int collapse,
                                     bool par_simd) {
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  sym_env* env = h.p->env;
  const sym_expr* shape[3] = {cgh_c(&h, d0), cgh_c(&h, d1), cgh_c(&h, d2)};
  int32_t A = cgh_buffer(&h, true, PTC_F32, 3, shape), O = cgh_buffer(&h, false, PTC_F32, 3, shape);
  const sym_expr* ix = cgh_index(&h, A, h.p->xvars);
  ir_body b = {0};
  ir_val v = ir_ops_load(h.p, &b, A, ix);
  ir_ops_store(h.p, &b, O, ix, ir_ops_binary(&b, IR_MUL, v, v, PTC_F32));
  uint32_t n = cgh_node(&h, IR_POINTWISE, O, shape, 3, NULL, 0, &b);
  sched_plan* s = cgh_plan(&h, &n, NULL, 1, shape, 3, NULL, 0);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    const char* src = k.src.source;
    CHECK((strstr(src, "#pragma omp parallel for") != NULL) == par);
    char want[32];
    snprintf(want, sizeof want, "collapse(%d)", collapse);
    CHECK(collapse > 1 ? strstr(src, want) != NULL : strstr(src, "collapse(") == NULL);
    CHECK((strstr(src, "#pragma omp parallel for simd") != NULL) == par_simd);
    CHECK(par_simd || strstr(src, "#pragma omp simd") != NULL);
    int64_t total = d0 * d1 * d2;
    float* a = malloc((size_t)total * sizeof *a);
    float* o = malloc((size_t)total * sizeof *o);
    for (int64_t i = 0; i < total; i++) a[i] = (float)(i % 97) - 40;
    void* mem[2] = {a, o};
    cgh_run(&k, mem, NULL, 0);
    bool same = true;
    for (int64_t i = 0; i < total; i++) same &= o[i] == a[i] * a[i];
    CHECK(same);
    free(a);
    free(o);
  }
  (void)env;
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

static void test_schedules(void) {
  check_pointwise_schedule(2, 3, 5, false, 1, false);    /* small: serial, simd */
  check_pointwise_schedule(512, 4, 64, true, 1, false);  /* x0 alone gives 512 iterations */
  check_pointwise_schedule(8, 16, 8192, true, 2, false); /* collapse x0, x1; simd x2 */
  check_pointwise_schedule(2, 2, 40000, true, 3, true);  /* 4 < 64: one parallel simd nest */
}

/* Unbacked sizes: hint 8192 decides the mode; the kernel runs at any size. */
static void test_unbacked(void) {
  static const char* const names[1] = {"u0"};
  static const int64_t hints[1] = {-1};
  cgh h;
  CHECK(cgh_init(&h, 1, names, hints, 0));
  const sym_expr* shape[1] = {cgh_sym(&h, 0)};
  const sym_expr* one[1] = {cgh_c(&h, 1)};
  const sym_expr* r0 = h.p->rvars[0];
  int32_t X = cgh_buffer(&h, true, PTC_I32, 1, shape), S = cgh_buffer(&h, false, PTC_I64, 1, one);
  ir_body b = {0};
  ir_val v = ir_ops_to_dtype(&b, ir_ops_load(h.p, &b, X, r0), PTC_I64);
  ir_ops_store(h.p, &b, S, cgh_c(&h, 0), ir_ops_reduce(&b, IR_R_SUM, v, -1, PTC_I64));
  uint32_t n = cgh_node(&h, IR_REDUCTION, S, NULL, 0, shape, 1, &b);
  sched_plan* s = cgh_plan(&h, &n, NULL, 1, NULL, 0, shape, 1);
  cgh_kernel k;
  bool ok = cgh_compile(&h, s, &k);
  CHECK(ok);
  if (ok) {
    CHECK(strstr(k.src.source, "const int64_t u0 = syms[0];") != NULL);
    int32_t x[100000];
    for (int i = 0; i < 100000; i++) x[i] = i - 3;
    int64_t sum = -1;
    void* mem[2] = {x, &sum};
    int64_t sizes[3] = {0, 7, 100000};
    for (int j = 0; j < 3; j++) {
      int64_t want = 0;
      for (int64_t i = 0; i < sizes[j]; i++) want += x[i];
      cgh_run(&k, mem, &sizes[j], 0);
      CHECK(sum == want);
    }
  }
  cgh_kernel_free(&k);
  cgh_plan_free(s);
  cgh_free(&h);
}

/* ---- argument errors --------------------------------------------------------------------- */
static void test_codegen_errors(void) {
  cgh h;
  CHECK(cgh_init(&h, 0, NULL, NULL, 2));
  const sym_expr* n4[1] = {cgh_c(&h, 4)};
  int32_t A = cgh_buffer(&h, true, PTC_F32, 1, n4), O = cgh_buffer(&h, false, PTC_F32, 1, n4);
  ir_body b = {0};
  ir_ops_store(h.p, &b, O, h.p->xvars[0], ir_ops_load(h.p, &b, A, h.p->xvars[0]));
  uint32_t n = cgh_node(&h, IR_POINTWISE, O, n4, 1, NULL, 0, &b);
  sched_plan* s = cgh_plan(&h, &n, NULL, 1, n4, 1, NULL, 0);
  cpu_kernel_src src;
  CHECK_ERR(cpu_codegen_kernel(h.p, s, 1, &src), PTC_CODE_INVALID_ARGUMENT, "kernel 1 of 1");
  CHECK_ERR(cpu_codegen_kernel(NULL, s, 0, &src), PTC_CODE_INVALID_ARGUMENT, "NULL");
  s->kernels[0].is_extern = true;
  CHECK_ERR(cpu_codegen_kernel(h.p, s, 0, &src), PTC_CODE_INVALID_ARGUMENT, "extern");
  s->kernels[0].is_extern = false;
  s->kernels[0].n_ranges = 2; /* node does not fit the kernel's loops */
  CHECK_ERR(cpu_codegen_kernel(h.p, s, 0, &src), PTC_CODE_INTERNAL, "does not fit");
  s->kernels[0].n_ranges = 1;
  cgh_local(s, A); /* a local read before any store */
  CHECK_ERR(cpu_codegen_kernel(h.p, s, 0, &src), PTC_CODE_INTERNAL, "read before it is written");
  s->buf_home[A] = SCHED_HOME_EXTERNAL;
  ir_body* body = &ir_node_at(h.p, n)->body;
  body->ops[1].args[0] = 5; /* the store's value: not an earlier op */
  CHECK_ERR(cpu_codegen_kernel(h.p, s, 0, &src), PTC_CODE_INTERNAL, "op 1 (store) is malformed");
  body->ops[1].args[0] = 0;
  CHECK_OK(cpu_codegen_kernel(h.p, s, 0, &src));
  cpu_kernel_src_free(&src);
  cgh_plan_free(s);
  cgh_free(&h);
}

int main(void) {
  test_softmax_static();
  test_softmax_symbolic();
  test_layernorm();
  test_column_and_horizontal();
  test_horizontal_rows();
  test_tiled();
  test_scratch_stream(false);
  test_scratch_stream(true);
  test_stream_pointwise(1, 3000, false);
  test_stream_pointwise(7, 1001, true);
  test_stream_pointwise(300, 257, true);
  test_full_reductions();
  test_split_rows();
  test_row_argmax();
  test_indirect();
  test_indirect_in_reduction();
  test_index_math();
  test_kernel_errors();
  test_schedules();
  test_unbacked();
  test_codegen_errors();
  return check_summary("cpu_codegen_kernels");
}
