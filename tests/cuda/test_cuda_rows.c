/* test_cuda_rows.c - the cuda backend's row and column reduction kernels
 * under their launch knobs (backends/cuda/cuda_cg_kernel.c: persistent
 * rows, next-tile prefetch, occupancy bounds, loop unrolling, grid caps).
 *
 *  --cpu (no GPU needed): the kernels of softmax / layer norm / rms norm /
 *    var_mean / row and column sums at the benchmark's sizes (f32, bf16) are
 *    generated under the default knobs and under each knob set of the GPU
 *    part; checks which of them hold rows in registers, prefetch the next
 *    tile (pf_b registers, a grid capped at the resident blocks) and carry
 *    an occupancy bound (__launch_bounds__ with a minimum block count) or
 *    split their rows over blocks - by default: persistent rows are
 *    bounded, and so are bf16 var_mean's looped rows (read twice), none
 *    prefetch (PREFETCH=-1: bf16 softmax rows of 4096 do), the other looped
 *    bf16 rows and the sums are neither, rows of 4-byte elements cap their
 *    grid at CUDA_CG_ROW_GRID_4B blocks an SM, a column sum over 256 columns splits and one over
 *    4096 does not, and looped bf16 rows of 4096 take half the lanes of f32
 *    rows when only read (var_mean) and as many when written (layer / rms
 *    norm, with rms norm's eps a scalar the loop loads; those written rows
 *    unrolled by 2). Column sums of 2-byte elements read 16 bytes of
 *    adjacent columns a thread (vector columns, split over rows). The model shapes
 *    (short_row_checks): bf16 add + layer norm over rows of 768 as a warp a
 *    row in registers with vector stores of both outputs, softmax's
 *    x * (1 / sum) for bf16 results only, a broadcast bias read as one
 *    vector a chunk, and the knobs turning each off. With NVRTC every
 *    kernel compiles for sm_80 and sm_90.
 *  default (GPU; exit 77 without one): the same ops at moderate sizes (rows
 *    divisible by the vector width and ragged ones, whose entry takes the
 *    scalar body) run on the device under every knob set - among them a grid
 *    of one or two blocks per SM, so that each block walks many tiles and
 *    the prefetched rows rotate - and are compared with the ref backend;
 *    also add + layer norm, short softmax rows and bias adds (model shapes,
 *    ragged ones taking the scalar paths).
 */
#include "backends/cuda/cuda.h"
#include "backends/cuda/cuda_cg.h"
#include "backends/cuda/cuda_plan.h"
#include "cuda_test_dev.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, passes;
#define CHECK(c)                                                   \
  do {                                                             \
    if (!(c)) {                                                    \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);          \
      failures++;                                                  \
    } else {                                                       \
      passes++;                                                    \
    }                                                              \
  } while (0)

typedef struct work {
  const char* op; /* softmax, layer_norm, rms_norm, rms_chain, var_mean, row_sum, col_sum,
                   * col_mean, col_max, col_argmax (the col_ ones over dim 0), col_slice8
                   * (x[:, 8:].sum(0)), col_sum_mis (col_sum with x one element past
                   * an aligned address, GPU part), add_ln (x + y, then
                   * layer norm; both outputs), bias_add (x + b[n], pointwise), sigmoid
                   * (flat pointwise) */
  int32_t dtype;
  int64_t m, n;
} work;

/* Whether 2-byte column reductions take vector columns by default (as
 * CVEC_DEFAULT_MODE 2 in backends/cuda/cuda_cg_kernel.c; 0 there: 0 here). */
#define CVEC_DEFAULT_ON 1
/* The vector columns' load (as CVEC_LD there: ld.global.nc.L1::no_allocate) */
#define CVEC_LOAD "ptc_vload_h<2, u16, VR>"

/* Knob sets (PTC_CUDA_<name>=<value> pairs, space-separated). */
static const char* const KNOBS[] = {
    "",
    "PREFETCH=0 OCC=0 SPLIT=0",
    "PREFETCH=1 GRID=1",
    "PREFETCH=1 PERSIST_ALL=1 GRID=2 OCC=1024",
    "ROW_UNROLL=4 COL_UNROLL=8 OCC=1536",
    "ROW_BLOCK=128 SHORT_ROW=0 VEC_INNER=0 RCP=0",
    "PW_UNROLL=1 PW_WAVES=1 PW_BLOCK=512",
    "PW_UNROLL=2 PW_WAVES=0",
    "PW_UNROLL=4 PW_WAVES=1 PW_BLOCK=128",
    "COL_VEC=1 COL_VEC_BLOCK=16,16 COL_VEC_SPLIT=64 COL_UNROLL=2",
    "COL_VEC=2 COL_VEC_FOLD=0 PERSIST_2PASS=0",
    "COL_VEC_LD=3 COL_VEC_ORDER=1 PW_LD=2 PW_ST=1 ROW_LD=4",
    "COL_VEC_LD=1 COL_VEC_ORDER=0 PW_LD=1 PW_ST=0 PW_UNROLL=2 ROW_LD=2",
    "COL_VEC_LD=2 PW_LD=4 PW_ST=1 PW_UNROLL=4 ROW_LD=3 COL_VEC_SPLIT=64",
    "COL_VEC_LD=4 COL_VEC_ORDER=1 PW_LD=3 ROW_LD=1 COL_VEC_BLOCK=16,16",
};
#define N_KNOBS (sizeof KNOBS / sizeof KNOBS[0])
static const char* const KNOB_NAMES[] = {"PREFETCH",   "GRID",       "PERSIST_ALL", "OCC",
                                         "ROW_UNROLL", "COL_UNROLL", "SPLIT",       "SHORT_ROW",
                                         "VEC_INNER",  "RCP",        "ROW_BLOCK",
                                         "PW_UNROLL",  "PW_WAVES",   "PW_BLOCK",
                                         "COL_VEC",    "COL_VEC_BLOCK", "COL_VEC_SPLIT",
                                         "PERSIST_2PASS", "COL_VEC_FOLD", "COL_VEC_LD",
                                         "COL_VEC_ORDER", "PW_LD", "PW_ST", "ROW_LD", "PW_STREAM"};

static void set_knobs(const char* set) {
  char name[64];
  for (size_t i = 0; i < sizeof KNOB_NAMES / sizeof KNOB_NAMES[0]; i++) {
    snprintf(name, sizeof name, "PTC_CUDA_%s", KNOB_NAMES[i]);
    unsetenv(name);
  }
  char buf[256];
  snprintf(buf, sizeof buf, "%s", set);
  for (char* tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
    char* eq = strchr(tok, '=');
    if (!eq) continue;
    *eq = 0;
    snprintf(name, sizeof name, "PTC_CUDA_%s", tok);
    setenv(name, eq + 1, 1);
  }
}

/* rms norm written out as the benchmark's module does: x * rsqrt(mean(x * x)
 * + eps) * w, eps a float32 scalar constant converted to x's dtype (a scalar
 * the row loop loads). */
static ptc_status build_rms_chain(ptc_graph* g, const work* w, ptc_value x, ptc_value wt,
                                  ptc_value* y) {
  int64_t last = -1;
  float epsv = 1e-6f;
  ptc_attr am[2] = {ptc_attr_ints("dim", &last, 1), ptc_attr_bool("keepdim", 1)};
  ptc_attr ad = ptc_attr_dtype("dtype", w->dtype);
  ptc_value sq, m, e, me, r, t, in[2];
  in[0] = in[1] = x;
  PTC_TRY(ptc_graph_add_node(g, "mul", in, 2, NULL, 0, &sq, 1, NULL));
  PTC_TRY(ptc_graph_add_node(g, "mean", &sq, 1, am, 2, &m, 1, NULL));
  PTC_TRY(ptc_graph_add_constant(g, "eps", PTC_F32, NULL, 0, &epsv, 0, &e));
  PTC_TRY(ptc_graph_add_node(g, "to_dtype", &e, 1, &ad, 1, &e, 1, NULL));
  in[0] = m;
  in[1] = e;
  PTC_TRY(ptc_graph_add_node(g, "add", in, 2, NULL, 0, &me, 1, NULL));
  PTC_TRY(ptc_graph_add_node(g, "rsqrt", &me, 1, NULL, 0, &r, 1, NULL));
  in[0] = x;
  in[1] = r;
  PTC_TRY(ptc_graph_add_node(g, "mul", in, 2, NULL, 0, &t, 1, NULL));
  in[0] = t;
  in[1] = wt;
  return ptc_graph_add_node(g, "mul", in, 2, NULL, 0, y, 1, NULL);
}

static ptc_status build(ptc_context* ctx, const work* w, ptc_graph** out) {
  ptc_graph* g;
  PTC_TRY(ptc_graph_create(ctx, &g));
  ptc_dim sh[2] = {{w->m, 0, 0}, {w->n, 0, 0}};
  ptc_dim shw[1] = {{w->n, 0, 0}};
  ptc_value in[3], y[2];
  size_t n_in = 1, n_out = 1;
  ptc_attr a[2];
  size_t na = 0;
  int64_t dim = 1, dim0 = 0, ns = w->n;
  const char* op = w->op;
  ptc_status s = ptc_graph_add_input(g, "x", w->dtype, sh, 2, NULL, &in[0]);
  if (!strcmp(op, "softmax")) {
    a[na++] = ptc_attr_int("dim", -1);
  } else if (!strcmp(op, "add_ln")) {
    /* GPT-2's residual add and the next layer norm: h = x + y, ln(h) */
    ptc_value h = 0;
    if (!s) s = ptc_graph_add_input(g, "y", w->dtype, sh, 2, NULL, &in[1]);
    if (!s) s = ptc_graph_add_node(g, "add", in, 2, NULL, 0, &h, 1, NULL);
    if (!s) s = ptc_graph_add_output(g, h);
    in[0] = h;
    a[na++] = ptc_attr_ints("normalized_shape", &ns, 1);
    if (!s) s = ptc_graph_add_input(g, "w", w->dtype, shw, 1, NULL, &in[1]);
    if (!s) s = ptc_graph_add_input(g, "b", w->dtype, shw, 1, NULL, &in[2]);
    n_in = 3;
    op = "layer_norm";
  } else if (!strcmp(op, "bias_add")) {
    if (!s) s = ptc_graph_add_input(g, "b", w->dtype, shw, 1, NULL, &in[n_in++]);
    op = "add";
  } else if (!strcmp(op, "sigmoid")) {
    /* a flat pointwise kernel */
  } else if (!strcmp(op, "rms_chain")) {
    if (!s) s = ptc_graph_add_input(g, "w", w->dtype, shw, 1, NULL, &in[n_in++]);
    if (!s) s = build_rms_chain(g, w, in[0], in[1], &y[0]);
    op = NULL;
  } else if (!strcmp(op, "layer_norm") || !strcmp(op, "rms_norm")) {
    a[na++] = ptc_attr_ints("normalized_shape", &ns, 1);
    if (!s) s = ptc_graph_add_input(g, "w", w->dtype, shw, 1, NULL, &in[n_in++]);
    if (!s && !strcmp(op, "layer_norm")) s = ptc_graph_add_input(g, "b", w->dtype, shw, 1, NULL, &in[n_in++]);
  } else if (!strcmp(op, "var_mean")) {
    a[na++] = ptc_attr_ints("dim", &dim, 1);
    n_out = 2;
  } else if (!strcmp(op, "col_argmax")) {
    a[na++] = ptc_attr_int("dim", 0);
    op = "argmax";
  } else if (!strcmp(op, "col_max")) {
    a[na++] = ptc_attr_ints("dim", &dim0, 1);
    op = "amax";
  } else if (!strcmp(op, "col_slice8")) {
    ptc_attr sa[4] = {ptc_attr_int("dim", 1), ptc_attr_int("start", 8), ptc_attr_int("end", w->n),
                      ptc_attr_int("step", 1)};
    if (!s) s = ptc_graph_add_node(g, "slice", in, 1, sa, 4, &in[0], 1, NULL);
    a[na++] = ptc_attr_ints("dim", &dim0, 1);
    op = "sum";
  } else {
    a[na++] = ptc_attr_ints("dim", !strncmp(op, "col_", 4) ? &dim0 : &dim, 1);
    op = !strcmp(op, "col_mean") ? "mean" : "sum";
  }
  if (!s && op) s = ptc_graph_add_node(g, op, in, n_in, a, na, y, 2, NULL);
  for (size_t i = 0; !s && i < n_out; i++) s = ptc_graph_add_output(g, y[i]);
  if (s) {
    ptc_graph_destroy(g);
    return s;
  }
  *out = g;
  return PTC_OK;
}

/* ---- CPU part: what the generator emits --------------------------------------------------- */

typedef struct kinfo {
  uint32_t kernels, persist, prefetch, bounded, grid_capped, split, cvec;
  uint32_t block_x, grid_per_sm; /* the last kernel's */
} kinfo;

/* --dump-src: the dump keeps each kernel's prelude (a whole NVRTC source) */
static bool dump_full;

static bool generate(ptc_context* ctx, const work* w, const char* knobs, kinfo* ki, ptc_strbuf* tu) {
  set_knobs(knobs);
  ptc_graph* g = NULL;
  ptc_graph* dg = NULL;
  ir_program* p = NULL;
  sched_plan* s = NULL;
  memset(ki, 0, sizeof *ki);
  ptc_status st = build(ctx, w, &g);
  if (!st) st = cuda_pipeline(ctx, NULL, g, true, &dg, &p, &s);
  for (uint32_t k = 0; !st && k < s->n_kernels; k++) {
    if (s->kernels[k].is_extern) continue;
    cuda_kernel_src src;
    char name[40];
    snprintf(name, sizeof name, "t%zu_k%u", tu->len, k);
    st = cuda_codegen_kernel_named(p, s, k, name, &src);
    if (st) break;
    ki->kernels++;
    ki->persist += strstr(src.source, " c_b") != NULL;
    ki->prefetch += strstr(src.source, " pf_b") != NULL;
    ki->bounded += strstr(src.source, "__launch_bounds__(") && strstr(src.source, ", ") &&
                   strstr(strstr(src.source, "__launch_bounds__("), ", ") <
                       strstr(strstr(src.source, "__launch_bounds__("), ")");
    ki->grid_capped += src.grid_per_sm > 0;
    ki->split += src.split > 1;
    ki->cvec += strstr(src.source, "vector columns") != NULL;
    ki->block_x = src.block_x;
    ki->grid_per_sm = src.grid_per_sm;
    const char* body = strstr(src.source, "// libptc generated kernel");
    const char* end = body ? strstr(body, "\n// kernel ") : NULL;
    ptc_sb_append(tu, end && !dump_full ? end : src.source); /* without the prelude */
    cuda_kernel_src_free(&src);
  }
  if (st) printf("FAIL %s %s [%s]: %s\n", w->op, ptc_dtype_name(w->dtype), knobs,
                 ptc_status_message(st));
  ptc_status_destroy(st);
  if (s) sched_plan_destroy(s);
  if (p) ir_program_destroy(p);
  if (dg) ptc_graph_destroy(dg);
  ptc_graph_destroy(g);
  set_knobs("");
  return !st;
}

static size_t count_of(const char* s, const char* what) {
  size_t n = 0;
  for (const char* p = s ? strstr(s, what) : NULL; p; p = strstr(p + 1, what)) n++;
  return n;
}

/* The model-shape kernels (GPT-2 / BERT: 2048 rows of 768) and the
 * per-row reciprocal: what the generator emits by default and with the
 * knobs that turn each part off. */
static void short_row_checks(ptc_context* ctx, ptc_strbuf* tu) {
  kinfo ki;
  size_t at;
  /* bf16 add + layer norm: a warp a row, the row in registers (24 a lane),
   * the sum written with vector stores, an occupancy bound */
  const work add_ln = {"add_ln", PTC_BF16, 2048, 768};
  at = tu->len;
  CHECK(generate(ctx, &add_ln, "", &ki, tu));
  CHECK(ki.kernels == 1 && ki.persist == 1 && ki.bounded == 1 && ki.block_x == 32);
  CHECK(strstr(tu->data + at, "c_b") && strstr(tu->data + at, "[24]"));
  CHECK(count_of(tu->data + at, "ptc_vstore<u16, VR>") == 2); /* h and ln(h) */
  at = tu->len;
  CHECK(generate(ctx, &add_ln, "SHORT_ROW=0", &ki, tu));
  CHECK(ki.kernels == 1 && ki.persist == 0);
  CHECK(count_of(tu->data + at, "ptc_vstore<u16, VR>") == 1); /* h scalar: read back */
  at = tu->len;
  CHECK(generate(ctx, &add_ln, "ROW_BLOCK=128", &ki, tu));
  CHECK(ki.persist == 1 && strstr(tu->data + at, "block 32x4"));
  /* f32 rows of 768 persisted already; unchanged */
  const work add_ln32 = {"add_ln", PTC_F32, 2048, 768};
  CHECK(generate(ctx, &add_ln32, "", &ki, tu));
  CHECK(ki.kernels == 1 && ki.persist == 1);
  /* softmax: x * (1 / sum) where the result is stored as bf16, not f32 */
  const work sm16 = {"softmax", PTC_BF16, 8192, 4096}, sm32 = {"softmax", PTC_F32, 8192, 4096};
  at = tu->len;
  CHECK(generate(ctx, &sm16, "", &ki, tu));
  CHECK(strstr(tu->data + at, "* (1.0f / ") != NULL);
  CHECK(ki.prefetch == 0); /* prefetch: off by default, -1 the old rule (2-byte rows >= 2048) */
  CHECK(generate(ctx, &sm16, "PREFETCH=-1", &ki, tu));
  CHECK(ki.prefetch == 1 && ki.grid_capped == 1);
  CHECK(generate(ctx, &sm32, "PREFETCH=-1", &ki, tu));
  CHECK(ki.prefetch == 0);
  at = tu->len;
  CHECK(generate(ctx, &sm16, "RCP=0", &ki, tu));
  CHECK(strstr(tu->data + at, "* (1.0f / ") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &sm32, "", &ki, tu));
  CHECK(strstr(tu->data + at, "* (1.0f / ") == NULL);
  /* a broadcast bias in a vectorised pointwise kernel: one vector load at
   * the chunk's outer point, decomposed once */
  const work bias = {"bias_add", PTC_BF16, 2048, 3072}, ragged = {"bias_add", PTC_BF16, 64, 772};
  at = tu->len;
  CHECK(generate(ctx, &bias, "", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload<u16, 8>(b1 + (x1), vix_b1)") != NULL);
  CHECK(strstr(tu->data + at, "const IT lin = base + (IT)e;") != NULL); /* the scalar tail only */
  CHECK(count_of(tu->data + at, "const IT lin = base") == 1);
  at = tu->len;
  CHECK(generate(ctx, &bias, "VEC_INNER=0", &ki, tu));
  CHECK(strstr(tu->data + at, "vix_b") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &ragged, "", &ki, tu)); /* 772 % 8 != 0: per-element decomposition */
  CHECK(strstr(tu->data + at, "vix_b") == NULL);
  /* flat vector pointwise kernels: chunks a thread a step (PW_UNROLL), the
   * launch heuristic's block and grid cap (PW_BLOCK, PW_WAVES) */
  const work pw = {"sigmoid", PTC_BF16, 4096, 4096}, pw32 = {"sigmoid", PTC_F32, 999, 1001};
  at = tu->len;
  CHECK(generate(ctx, &pw, "PW_UNROLL=1", &ki, tu));
  CHECK(strstr(tu->data + at, "vin_u_b") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &pw, "PW_UNROLL=2 PW_BLOCK=512 PW_WAVES=0", &ki, tu));
  CHECK(strstr(tu->data + at, "u16 vin_u_b0[2][8];") != NULL);
  CHECK(ki.block_x == 512 && ki.grid_capped == 1);
  at = tu->len;
  CHECK(generate(ctx, &pw32, "PW_UNROLL=4 PW_WAVES=8 PW_BLOCK=128", &ki, tu));
  CHECK(strstr(tu->data + at, "float vin_u_b0[4][4];") != NULL);
  CHECK(ki.block_x == 128 && ki.grid_capped == 1);
  CHECK(generate(ctx, &pw32, "PW_WAVES=", &ki, tu)); /* the default: 8 waves */
  CHECK(ki.grid_capped == (CUDA_CG_PW_WAVES >= 0 ? 1u : 0u));
  CHECK(generate(ctx, &pw, "PW_WAVES=-1", &ki, tu)); /* the tune default (4) */
  CHECK(ki.grid_capped == 0);
  /* vector columns (PTC_CUDA_COL_VEC=2, the default when CVEC_DEFAULT_ON): 2-byte column sums read
   * 16 bytes a thread a row step, the lanes' partials combined in one shared round,
   * the rows split, the tile's last block folding the partials element-major with
   * unrolled __ldcg loads (COL_VEC_FOLD=0: column-major, volatile loads); f32
   * columns keep the scalar kernel unless PTC_CUDA_COL_VEC=1; ragged columns
   * (static sizes not a multiple of the vector) too; COL_VEC=0: the scalar kernel */
  const work cs16 = {"col_sum", PTC_BF16, 16384, 4096}, cs32 = {"col_sum", PTC_F32, 16384, 4096};
  const work cm16 = {"col_max", PTC_BF16, 4096, 1024}, cr16 = {"col_sum", PTC_BF16, 4096, 1020};
  const work csl = {"col_slice8", PTC_BF16, 4096, 1032}, cam = {"col_argmax", PTC_BF16, 2500, 72};
  at = tu->len;
  CHECK(generate(ctx, &cs16, "", &ki, tu)); /* the default */
  CHECK(ki.cvec == CVEC_DEFAULT_ON && ki.split == CVEC_DEFAULT_ON);
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=2", &ki, tu));
  CHECK(ki.cvec == 1 && ki.split == 1 && ki.block_x == 32);
  CHECK(strstr(tu->data + at, "__ldcg(&") != NULL && strstr(tu->data + at, "volatile") == NULL);
  CHECK(strstr(tu->data + at, "(IT)e * (IT)((WSC - 1) / VR) + xg / (IT)VR") != NULL);
  CHECK(strstr(tu->data + at, "for (int k = 0; k < 4; k++)") != NULL); /* 32 chunks, 8 lanes */
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=2 COL_VEC_FOLD=0", &ki, tu));
  CHECK(ki.cvec == 1 && strstr(tu->data + at, "__ldcg(") == NULL);
  CHECK(strstr(tu->data + at, "volatile") != NULL && strstr(tu->data + at, "xg + (IT)e : ") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=2", &ki, tu));
  CHECK(ki.cvec == 1 && ki.split == 1 && ki.block_x == 32);
  CHECK(strstr(tu->data + at, CVEC_LOAD "(b0 + ((x0 + (r0*(IT)4096))), vin_b0)") != NULL);
  CHECK(strstr(tu->data + at, "const IT cid = task / ntiles;") != NULL); /* chunk-major */
  CHECK(strstr(tu->data + at, "_body<i32, 8>(") != NULL);
  CHECK(count_of(tu->data + at, "__syncthreads();") == 6); /* 2 combines, the split's count */
  CHECK(count_of(tu->data + at, "__shared__ float smc") == 1); /* the fold reuses it */
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=0", &ki, tu));
  CHECK(ki.cvec == 0 && strstr(tu->data + at, "vin_b") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=2 COL_VEC_SPLIT=0", &ki, tu));
  CHECK(ki.cvec == 1 && ki.split == 0);
  at = tu->len;
  CHECK(generate(ctx, &cs32, "COL_VEC=2", &ki, tu));
  CHECK(ki.cvec == 0);
  at = tu->len;
  CHECK(generate(ctx, &cs32, "COL_VEC=1", &ki, tu));
  CHECK(ki.cvec == 1 && strstr(tu->data + at, "_body<i32, 4>(") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &cm16, "COL_VEC=2", &ki, tu));
  CHECK(ki.cvec == 1 && strstr(tu->data + at, "ptc_op_max") != NULL);
  CHECK(generate(ctx, &cam, "COL_VEC=2", &ki, tu));
  CHECK(ki.cvec == 1);
  CHECK(generate(ctx, &cr16, "COL_VEC=2", &ki, tu)); /* 1020 % 8 != 0 */
  CHECK(ki.cvec == 0);
  /* looped bf16 rows that are written (layer norm of 4096; rms norm with
   * PERSIST_2PASS=0): loops unrolled by 2 (both vector steps of a lane in flight);
   * ROW_UNROLL=1 not; sums and f32 rows not. rms norm by default: its row in
   * registers, a bound for 8 blocks of 256 */
  const work ln16 = {"layer_norm", PTC_BF16, 8192, 4096}, rs16 = {"row_sum", PTC_BF16, 16384, 4096};
  const work rc16 = {"rms_chain", PTC_BF16, 8192, 4096}, ln32 = {"layer_norm", PTC_F32, 8192, 4096};
  at = tu->len;
  CHECK(generate(ctx, &ln16, "", &ki, tu));
  CHECK(count_of(tu->data + at, "#pragma unroll 2\n") == 3);
  at = tu->len;
  CHECK(generate(ctx, &rc16, "", &ki, tu));
  CHECK(ki.persist == 1 && strstr(tu->data + at, "__launch_bounds__(256, 8)") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &rc16, "PERSIST_2PASS=0", &ki, tu));
  CHECK(ki.persist == 0 && count_of(tu->data + at, "#pragma unroll 2\n") == 2);
  at = tu->len;
  CHECK(generate(ctx, &rc16, "PERSIST_2PASS=0 ROW_UNROLL=1", &ki, tu));
  CHECK(count_of(tu->data + at, "#pragma unroll 2\n") == 0);
  at = tu->len;
  CHECK(generate(ctx, &rs16, "", &ki, tu));
  CHECK(count_of(tu->data + at, "#pragma unroll 2\n") == 0);
  at = tu->len;
  CHECK(generate(ctx, &ln32, "", &ki, tu));
  CHECK(count_of(tu->data + at, "#pragma unroll 2\n") == 0);
  at = tu->len;
  CHECK(generate(ctx, &csl, "COL_VEC=2", &ki, tu)); /* offset 8, rows of 1032: aligned vectors */
  CHECK(ki.cvec == 1 && strstr(tu->data + at, CVEC_LOAD) != NULL);
  /* cache hints on the vector accesses (io_hints): vector columns' loads
   * (COL_VEC_LD), pointwise loads and stores (PW_LD / PW_ST, also the
   * unrolled chunks), vector rows' loads (ROW_LD); each knob at 0 plain
   * ptc_vload / ptc_vstore. Vector columns: the chunk-major task order
   * (COL_VEC_ORDER=1), the fold's constant chunk bound, the VR = 1 entry's
   * row loop rolled */
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=2 COL_VEC_LD=0 COL_VEC_ORDER=0", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<") == NULL && strstr(tu->data + at, "const IT tile = task / S;"));
  CHECK(strstr(tu->data + at, "if (q >= (IT)32) continue;") != NULL);
  CHECK(strstr(tu->data + at, "#pragma unroll (VR > 1 ? 4 : 1)") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=2 COL_VEC_LD=3 COL_VEC_ORDER=1", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<3, u16, VR>(b0 + ") != NULL);
  CHECK(strstr(tu->data + at, "createpolicy.fractional.L2::evict_first") != NULL);
  CHECK(strstr(tu->data + at, "const IT cid = task / ntiles;") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &cs16, "COL_VEC=2 COL_VEC_LD=1", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<1, u16, VR>(b0 + ") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &pw, "PW_LD=0 PW_ST=0", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<") == NULL && strstr(tu->data + at, "ptc_vstore_h<") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &pw, "PW_LD=2 PW_ST=1 PW_UNROLL=1", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<2, u16, 8>(b0 + base, vin_b0)") != NULL);
  CHECK(strstr(tu->data + at, "ptc_vstore_h<1, u16, 8>(b1 + base, vout_b1)") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &pw, "PW_LD=4 PW_UNROLL=2", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<4, u16, 8>(b0 + base, vin_u_b0[u])") != NULL);
  /* streaming pointwise (>= 64 MiB of vector traffic: bf16 4096x4096 in and
   * out) by default: 2 chunks a thread, .nc loads, .cs stores; PW_STREAM=0
   * or a small kernel (f32 999x1001): plain, one chunk */
  at = tu->len;
  CHECK(generate(ctx, &pw, "", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<2, u16, 8>(b0 + base, vin_u_b0[u])") != NULL);
  CHECK(strstr(tu->data + at, "ptc_vstore_h<1, u16, 8>(b1 + base, vout_b1)") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &pw, "PW_STREAM=0", &ki, tu));
  CHECK(strstr(tu->data + at, "_h<") == NULL && strstr(tu->data + at, "vin_u_b0") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &pw, "PW_STREAM=65", &ki, tu)); /* 64 MiB of traffic: below */
  CHECK(strstr(tu->data + at, "_h<") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &pw32, "", &ki, tu));
  CHECK(strstr(tu->data + at, "_h<") == NULL);
  /* big kernels (>= 64 MiB of flat vector traffic) take 2 block-contiguous
   * chunks a thread in one pass (no grid cap); 4-byte elements get no cache
   * hints however large (f32 8192x8192: 512 MiB); small kernels keep one
   * chunk and the 8-wave cap; PW_WAVES still caps a big one */
  const work pw32big = {"sigmoid", PTC_F32, 8192, 8192};
  at = tu->len;
  CHECK(generate(ctx, &pw32big, "", &ki, tu));
  CHECK(strstr(tu->data + at, "_h<") == NULL && strstr(tu->data + at, "float vin_u_b0[2][4];") != NULL);
  CHECK(strstr(tu->data + at, "const IT cstep = (IT)blockDim.x;") != NULL);
  CHECK(ki.grid_per_sm == CUDA_CG_PW_NOCAP && ki.block_x == CUDA_CG_PW_BIG_BLOCK);
  CHECK(generate(ctx, &pw32big, "PW_WAVES=8 PW_BLOCK=256", &ki, tu));
  CHECK(ki.grid_per_sm == 8 && ki.block_x == 256);
  CHECK(generate(ctx, &pw, "", &ki, tu));
  CHECK(ki.grid_per_sm == CUDA_CG_PW_NOCAP);
  CHECK(generate(ctx, &pw32, "", &ki, tu));
  CHECK(ki.grid_per_sm == CUDA_CG_PW_WAVES);
  /* vector rows: .nc loads by default only where the rows are of 4-byte
   * elements and only read (f32 row sums and var_mean, not softmax) */
  const work rs32 = {"row_sum", PTC_F32, 16384, 4096}, vm32 = {"var_mean", PTC_F32, 16384, 4096},
             sx32 = {"softmax", PTC_F32, 8192, 4096}, rsb = {"row_sum", PTC_BF16, 16384, 4096};
  at = tu->len;
  CHECK(generate(ctx, &rs32, "", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<2, float, VR>(b0 + ") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &vm32, "", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<2, float, VR>(b0 + ") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &rs32, "ROW_LD=0", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &sx32, "", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<") == NULL);
  at = tu->len;
  CHECK(generate(ctx, &rsb, "", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<") == NULL);
  const work vm16 = {"var_mean", PTC_BF16, 16384, 4096};
  at = tu->len;
  CHECK(generate(ctx, &vm16, "ROW_LD=2", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<2, u16, VR>(b0 + ") != NULL);
  at = tu->len;
  CHECK(generate(ctx, &vm16, "ROW_LD=0", &ki, tu));
  CHECK(strstr(tu->data + at, "ptc_vload_h<") == NULL);
  printf("short rows, reciprocal, inner vectors, pointwise unroll, vector columns, cache hints: checked\n");
}

static int cpu_tests(void) {
  setenv("PTC_CUDA_WELFORD", "0", 1); /* var_mean as the generated two-pass row kernel */
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  const work big[] = {
      {"softmax", PTC_F32, 8192, 4096},    {"softmax", PTC_BF16, 8192, 4096},
      {"layer_norm", PTC_F32, 8192, 4096}, {"layer_norm", PTC_BF16, 8192, 4096},
      {"rms_norm", PTC_BF16, 8192, 4096},  {"rms_chain", PTC_BF16, 8192, 4096},
      {"var_mean", PTC_BF16, 16384, 4096},
      {"row_sum", PTC_BF16, 16384, 4096},  {"col_sum", PTC_BF16, 16384, 4096},
      {"row_sum", PTC_F32, 16384, 4096},   {"var_mean", PTC_F32, 16384, 4096},
      {"col_sum", PTC_F32, 16384, 256},
  };
  ptc_strbuf tu;
  ptc_sb_init(&tu);
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    const work* w = &big[i];
    for (size_t k = 0; k < N_KNOBS; k++) {
      kinfo ki;
      size_t at = tu.len;
      if (!generate(ctx, w, KNOBS[k], &ki, &tu)) {
        failures++;
        continue;
      }
      printf("%s %s [%lld, %lld] knobs [%s]: %u kernel(s), %u persistent, %u prefetching, "
             "%u bounded, %u grid-capped, %u split, %u vector columns\n",
             w->op, ptc_dtype_name(w->dtype), (long long)w->m, (long long)w->n, KNOBS[k],
             ki.kernels, ki.persist, ki.prefetch, ki.bounded, ki.grid_capped, ki.split, ki.cvec);
      bool sm = !strcmp(w->op, "softmax");
      bool sum = !strcmp(w->op, "row_sum") || !strcmp(w->op, "col_sum");
      CHECK(ki.kernels == 1);
      if (sm) CHECK(ki.persist == 1); /* the exp stays in registers */
      if (sum) CHECK(ki.persist == 0 && ki.prefetch == 0);
      /* prefetch: persistent rows only, and then a grid at the resident blocks */
      CHECK(ki.prefetch <= ki.persist && ki.prefetch <= ki.grid_capped);
      if (strstr(KNOBS[k], "PREFETCH=1") && sm) CHECK(ki.prefetch == 1);
      if (strstr(KNOBS[k], "PERSIST_ALL=1") && !sum) CHECK(ki.prefetch == 1);
      if (strstr(KNOBS[k], "GRID=")) CHECK(ki.grid_capped == ki.kernels);
      if (strstr(KNOBS[k], "PREFETCH=0")) CHECK(ki.prefetch == 0 && ki.bounded == 0);
      /* column sums over few columns (col_sum [16384, 256]: 8 tiles) split their rows
       * over blocks, over many columns (128 tiles) not, unless 2-byte columns are read
       * as vectors (PTC_CUDA_COL_VEC=2, the default when CVEC_DEFAULT_ON; =1: every
       * dtype), whose 16 tiles of 256 columns split; rows do not split here */
      bool cv = !strcmp(w->op, "col_sum") &&
                ((w->dtype == PTC_BF16 && (CVEC_DEFAULT_ON || strstr(KNOBS[k], "COL_VEC="))) ||
                 strstr(KNOBS[k], "COL_VEC=1"));
      CHECK(ki.cvec == (cv ? 1u : 0u));
      if (strstr(KNOBS[k], "SPLIT=0") || strcmp(w->op, "col_sum") || (w->n > 512 && !cv))
        CHECK(ki.split == 0);
      else
        CHECK(ki.split == 1);
      if (!KNOBS[k][0]) { /* the defaults */
        /* bounded: rows in registers, and looped read-only 2-byte rows read
         * twice (bf16 var_mean: OCC_REREAD, 4 blocks of 256) */
        bool reread = w->dtype == PTC_BF16 && !strcmp(w->op, "var_mean");
        CHECK(ki.bounded == ki.persist + (reread ? 1u : 0u));
        if (reread) CHECK(ki.persist == 0 && strstr(tu.data + at, "__launch_bounds__(256, 4)"));
        CHECK(ki.prefetch == 0); /* off by default since e5438d3's rows */
        /* looped bf16 rows of 4096: half the lanes of f32 rows when only
         * read (var_mean), the same when written (layer norm); rms norm's,
         * read in two loops, in registers with a bound for 8 blocks of 256 */
        /* the grid: rows of 4-byte elements capped at CUDA_CG_ROW_GRID_4B
         * blocks an SM, 2-byte rows and columns at the tune default */
        bool col = !strcmp(w->op, "col_sum");
        CHECK(ki.grid_per_sm == (w->dtype == PTC_F32 && !col ? CUDA_CG_ROW_GRID_4B : 0u));
        bool rms = !strncmp(w->op, "rms_", 4);
        if (w->dtype == PTC_BF16 && !sm && !sum)
          CHECK(ki.persist == (rms ? 1u : 0u) &&
                ki.block_x == (strcmp(w->op, "var_mean") ? 256u : 128u));
      }
    }
  }
  short_row_checks(ctx, &tu);
  CHECK(ctd_nvrtc_check(tu.data));
  ptc_sb_free(&tu);
  ptc_context_release(ctx);
  printf("test_cuda_rows --cpu: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

/* ---- GPU part: results against the ref backend ------------------------------------------ */

static const cu_api* cu(void) { return &cuda_libs_get()->cu; }

typedef struct host_in {
  void* data;
  int64_t shape[2];
  int32_t ndim, dtype;
  size_t bytes;
} host_in;

static void fill(host_in* h, int32_t dtype, int64_t m, int64_t n, int ndim, uint32_t seed,
                 float lo, float hi) {
  h->dtype = dtype;
  h->ndim = ndim;
  h->shape[0] = ndim == 2 ? m : n;
  h->shape[1] = n;
  int64_t cnt = ndim == 2 ? m * n : n;
  size_t es = ptc_dtype_size(dtype);
  h->bytes = (size_t)cnt * es;
  h->data = malloc(h->bytes ? h->bytes : 1);
  uint32_t r = seed * 2654435761u + 12345u;
  for (int64_t i = 0; h->data && i < cnt; i++) {
    r = r * 1664525u + 1013904223u;
    float v = lo + (hi - lo) * (float)(r >> 8) / (float)(1u << 24);
    if (dtype == PTC_BF16)
      ((uint16_t*)h->data)[i] = ptc_f32_to_bf16(v);
    else if (dtype == PTC_F16)
      ((uint16_t*)h->data)[i] = ptc_f32_to_f16(v);
    else
      ((float*)h->data)[i] = v;
  }
}

static ptc_tensor view_of(const host_in* h, void* data, bool device) {
  ptc_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = device ? PTC_DEVICE_CUDA : PTC_DEVICE_CPU;
  t.ndim = h->ndim;
  t.dtype = ptc_dtype_to_dl(h->dtype);
  t.shape = (int64_t*)h->shape;
  return t;
}

static double elem(const void* p, int32_t dtype, int64_t i) {
  if (dtype == PTC_BF16) return ptc_bf16_to_f32(((const uint16_t*)p)[i]);
  if (dtype == PTC_F16) return ptc_f16_to_f32(((const uint16_t*)p)[i]);
  if (dtype == PTC_F64) return ((const double*)p)[i];
  if (dtype == PTC_I64) return (double)((const int64_t*)p)[i];
  return ((const float*)p)[i];
}

static int64_t numel(const ptc_tensor* t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* One workload under every knob set: the cuda results against ref's. */
static void run_work(ptc_context* ctx, const work* w) {
  host_in in[4];
  size_t n_in = 1;
  bool ln = !strcmp(w->op, "layer_norm") || !strcmp(w->op, "add_ln");
  fill(&in[0], w->dtype, w->m, w->n, 2, 1, -3.0f, 3.0f);
  if (!strcmp(w->op, "add_ln")) fill(&in[n_in++], w->dtype, w->m, w->n, 2, 4, -1.0f, 1.0f);
  if (ln || !strcmp(w->op, "rms_norm") || !strcmp(w->op, "rms_chain"))
    fill(&in[n_in++], w->dtype, 0, w->n, 1, 2, 0.5f, 1.5f);
  if (ln || !strcmp(w->op, "bias_add")) fill(&in[n_in++], w->dtype, 0, w->n, 1, 3, -0.5f, 0.5f);
  char what[160];
  size_t skew = !strcmp(w->op, "col_sum_mis") ? ptc_dtype_size(w->dtype) : 0; /* x misaligned */
  snprintf(what, sizeof what, "%s %s [%lld, %lld]%s", w->op, ptc_dtype_name(w->dtype),
           (long long)w->m, (long long)w->n, skew ? " misaligned" : "");
  ptc_graph* g = NULL;
  ptc_executable* eref = NULL;
  ptc_results* want = NULL;
  ptc_tensor hin[4];
  for (size_t i = 0; i < n_in; i++) hin[i] = view_of(&in[i], in[i].data, false);
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = "ref";
  ptc_status s = build(ctx, w, &g);
  if (!s) s = ptc_compile(ctx, g, &o, &eref);
  if (!s) s = ptc_executable_run_alloc(eref, hin, n_in, NULL, &want);
  cu_deviceptr dptr[4] = {0, 0, 0, 0};
  for (size_t i = 0; !s && i < n_in; i++) {
    s = cuda_alloc(in[i].bytes + (i ? 0 : skew), NULL, &dptr[i]);
    if (!s && (cu()->MemcpyHtoDAsync(dptr[i] + (i ? 0 : skew), in[i].data, in[i].bytes, NULL) != CU_SUCCESS ||
               cu()->StreamSynchronize(NULL) != CU_SUCCESS))
      s = PTC_ERR(INTERNAL, "upload");
  }
  /* relative, plus an absolute part for the rounding of long sums (whose
   * result may be small after cancellation) */
  double tol = w->dtype == PTC_BF16 ? 1e-2 : w->dtype == PTC_F16 ? 2e-3 : 2e-5;
  double atol = 1e-6 * (double)(!strncmp(w->op, "col_", 4) ? w->m : w->n);
  for (size_t k = 0; !s && k < N_KNOBS; k++) {
    set_knobs(KNOBS[k]);
    ptc_executable* e = NULL;
    ptc_results* got = NULL;
    ptc_tensor din[4];
    for (size_t i = 0; i < n_in; i++)
      din[i] = view_of(&in[i], (void*)(uintptr_t)(dptr[i] + (i ? 0 : skew)), true);
    o.backend = "cuda";
    ptc_status st = ptc_compile(ctx, g, &o, &e);
    set_knobs("");
    for (int rep = 0; !st && rep < 2; rep++) { /* twice: the grid-stride state starts afresh */
      ptc_results_destroy(got);
      got = NULL;
      st = ptc_executable_run_alloc(e, din, n_in, NULL, &got);
    }
    size_t bad = 0;
    for (size_t j = 0; !st && j < ptc_results_count(want); j++) {
      const ptc_tensor* r = ptc_results_get(want, j);
      const ptc_tensor* t = ptc_results_get(got, j);
      int64_t cnt = numel(r);
      int32_t dt = ptc_dtype_from_dl(r->dtype);
      size_t bytes = (size_t)cnt * ptc_dtype_size(dt);
      void* h = malloc(bytes ? bytes : 1);
      if (!h || numel(t) != cnt ||
          cu()->MemcpyDtoHAsync(h, (cu_deviceptr)(uintptr_t)t->data + t->byte_offset, bytes,
                                NULL) != CU_SUCCESS ||
          cu()->StreamSynchronize(NULL) != CU_SUCCESS) {
        st = PTC_ERR(INTERNAL, "download");
        free(h);
        break;
      }
      const void* rv = (const char*)r->data + r->byte_offset;
      for (int64_t i = 0; i < cnt; i++) {
        double a = elem(h, dt, i), b = elem(rv, dt, i);
        if (!(fabs(a - b) <= tol * (1 + fabs(b)) + atol)) {
          if (bad++ < 3)
            printf("  %s [%s] output %zu element %lld: %.9g, ref %.9g\n", what, KNOBS[k], j,
                   (long long)i, a, b);
        }
      }
      free(h);
    }
    if (st) printf("FAIL %s [%s]: %s\n", what, KNOBS[k], ptc_status_message(st));
    CHECK(!st && bad == 0);
    ptc_status_destroy(st);
    ptc_results_destroy(got);
    ptc_executable_release(e);
  }
  if (s) printf("FAIL %s: %s\n", what, ptc_status_message(s));
  CHECK(!s);
  ptc_status_destroy(s);
  for (size_t i = 0; i < n_in; i++) {
    if (dptr[i]) cuda_free(dptr[i]);
    free(in[i].data);
  }
  ptc_results_destroy(want);
  ptc_executable_release(eref);
  ptc_graph_destroy(g);
  printf("%s: checked under %zu knob sets\n", what, N_KNOBS);
}

static int gpu_tests(void) {
  const char* why = NULL;
  if (!ptc_backend_available("cuda", &why)) {
    printf("SKIP: the cuda backend is not available here: %s\n", why ? why : "?");
    return 77;
  }
  setenv("PTC_CUDA_WELFORD", "0", 1);
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  cu_context prev;
  ptc_status_destroy(cuda_ctx_enter(cuda_device_get(), &prev));
  const work ws[] = {
      {"softmax", PTC_F32, 2000, 1000},   {"softmax", PTC_BF16, 2000, 1000},
      {"softmax", PTC_F32, 700, 1030},    {"softmax", PTC_BF16, 600, 4096},
      {"softmax", PTC_BF16, 900, 1030},   {"layer_norm", PTC_F32, 1500, 1024},
      {"layer_norm", PTC_BF16, 1500, 1024}, {"rms_norm", PTC_BF16, 1500, 768},
      {"rms_chain", PTC_BF16, 1500, 2048}, {"rms_chain", PTC_BF16, 600, 4096},
      {"rms_chain", PTC_BF16, 300, 3004}, /* rows of > 2048 in registers (two loops) */
      {"var_mean", PTC_F32, 1500, 1000},  {"var_mean", PTC_BF16, 1500, 1000},
      {"row_sum", PTC_BF16, 1500, 1000},  {"col_sum", PTC_BF16, 1000, 1500},
      {"col_sum", PTC_F32, 3000, 200},    {"col_mean", PTC_F32, 2000, 300},
      {"col_argmax", PTC_F32, 2500, 70},
      /* column sums read as vectors (2-byte; f32 under COL_VEC=1): vector entry, ragged
       * columns (the VR = 1 body), a misaligned input (the same), an offset view,
       * mean / max / argmax, f16 */
      {"col_sum", PTC_BF16, 3000, 1024},  {"col_sum", PTC_BF16, 777, 1000},
      {"col_sum", PTC_BF16, 2000, 37},    {"col_sum_mis", PTC_BF16, 1000, 1024},
      {"col_slice8", PTC_BF16, 1500, 1032}, {"col_mean", PTC_BF16, 1500, 2056},
      {"col_max", PTC_BF16, 1200, 520},   {"col_argmax", PTC_BF16, 900, 264},
      {"col_sum", PTC_F16, 1000, 4104},   {"col_sum", PTC_F32, 1000, 1028},
      {"col_sum", PTC_BF16, 16384, 4096},
      /* a fold of more partials than its unrolled loop takes at once (156 chunks,
       * 8 lanes: 20 steps, unrolled by 4, lanes 4..7 one fewer) over 2 tiles, the
       * second one group wide */
      {"col_sum", PTC_BF16, 20000, 264},
      /* short rows (one warp a row, in registers) and pointwise broadcasts */
      {"add_ln", PTC_BF16, 1500, 768},   {"add_ln", PTC_BF16, 700, 770},
      {"add_ln", PTC_F32, 1500, 768},    {"layer_norm", PTC_BF16, 2048, 768},
      {"softmax", PTC_BF16, 1000, 256},  {"softmax", PTC_BF16, 999, 128},
      {"bias_add", PTC_BF16, 600, 3072}, {"bias_add", PTC_BF16, 50, 772},
      {"bias_add", PTC_F32, 300, 1024},
      /* flat pointwise (vector chunks, unrolled under the PW_ knobs; ragged) */
      {"sigmoid", PTC_BF16, 1000, 1000}, {"sigmoid", PTC_BF16, 999, 1001},
      {"sigmoid", PTC_F32, 777, 1001},   {"sigmoid", PTC_F32, 64, 64},
  };
  for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) run_work(ctx, &ws[i]);
  ptc_context_release(ctx);
  printf("test_cuda_rows: %d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}

/* --dump OP DTYPE M N [KNOBS]: prints the generated kernels (a look at
 * them without a GPU; KNOBS as in KNOBS[], e.g. "COL=0"); --dump-src: with
 * the prelude, as NVRTC compiles them (one kernel: a source to time) */
static int dump(int argc, char** argv) {
  if (argc < 6) return 2;
  dump_full = !strcmp(argv[1], "--dump-src");
  work w = {argv[2], ptc_dtype_from_name(argv[3]), atoll(argv[4]), atoll(argv[5])};
  ptc_context* ctx;
  if (ptc_context_create(NULL, &ctx)) return 1;
  ptc_strbuf tu;
  ptc_sb_init(&tu);
  kinfo ki;
  bool ok = generate(ctx, &w, argc > 6 ? argv[6] : "", &ki, &tu);
  printf("%s\n// %u kernel(s), block_x %u, split %u\n", tu.data ? tu.data : "", ki.kernels,
         ki.block_x, ki.split);
  ptc_sb_free(&tu);
  ptc_context_release(ctx);
  return ok ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--cpu") == 0) return cpu_tests();
  if (argc > 1 && (!strcmp(argv[1], "--dump") || !strcmp(argv[1], "--dump-src"))) return dump(argc, argv);
  return gpu_tests();
}
