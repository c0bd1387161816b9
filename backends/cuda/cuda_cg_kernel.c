/* cuda_cg_kernel.c - one scheduled kernel as a CUDA translation unit: the
 * layout decision (cuda_cg.h), the argument list, uniform up-front checks,
 * the loop over outer points of the layout, the member groups with their
 * reduction loops and cross-lane combines, and the two entry points (i32 /
 * i64 indexing) around a template body.
 */
#include "cuda_cg_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define I32_LIMIT ((int64_t)1 << 30) /* 32-bit indexing below this extent (headroom for steps) */

void cug_fail(cug* g, ptc_status s) {
  if (!g->err)
    g->err = s;
  else
    ptc_status_destroy(s);
}

void cug_line(cug* g, ptc_strbuf* sb, const char* fmt, ...) {
  for (int d = 0; d < g->indent; d++) ptc_sb_append(sb, "  ");
  char small[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    ptc_sb_append(sb, small);
  } else {
    char* big = malloc((size_t)n + 1);
    if (!big) {
      sb->oom = true;
      return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    ptc_sb_append(sb, big);
    free(big);
  }
  ptc_sb_append(sb, "\n");
}

void cug_buf_name(const cug* g, int32_t id, char* out, size_t cap) {
  (void)g;
  snprintf(out, cap, "b%d", (int)id);
}

/* ---- analysis ------------------------------------------------------------------------ */

/* Buffers the kernel passes (every non-local buffer of a live load/store),
 * which it stores, and which outer-level stores are read again. */
static ptc_status collect_buffers(cug* g, cuda_kernel_src* out) {
  size_t nb = g->n_buffers;
  bool* used = calloc(nb ? nb : 1, sizeof *used);
  bool* loaded = calloc(nb ? nb : 1, sizeof *loaded);
  bool* outer_store = calloc(nb ? nb : 1, sizeof *outer_store);
  ptc_status s = used && loaded && outer_store ? PTC_OK : ptc_status_oom();
  for (uint32_t m = 0; !s && m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE)) continue;
      if (op->opcode == IR_LOAD) loaded[op->buf] = true;
      if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) continue;
      used[op->buf] = true;
      if (op->opcode == IR_STORE) {
        g->stored[op->buf] = true;
        if (mb->stage[i] != CU_LOOP) outer_store[op->buf] = true;
      }
    }
  }
  uint32_t n = 0;
  for (size_t b = 0; !s && b < nb; b++) {
    n += used[b];
    g->outer_reread[b] = outer_store[b] && loaded[b];
  }
  if (!s) {
    out->bufs = malloc((n ? n : 1) * sizeof *out->bufs);
    if (!out->bufs) s = ptc_status_oom();
  }
  for (size_t b = 0; !s && b < nb; b++)
    if (used[b]) out->bufs[out->n_bufs++] = (int32_t)b;
  free(used);
  free(loaded);
  free(outer_store);
  return s;
}

/* Two distinct buffers of the kernel share a workspace slot (an in-place
 * update): loads and stores may then touch the same memory. */
static bool shares_slot(const cug* g, const cuda_kernel_src* out, int32_t b) {
  if (g->s->buf_home[b] != SCHED_HOME_SLOT) return false;
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t o = out->bufs[j];
    if (o != b && g->s->buf_home[o] == SCHED_HOME_SLOT && g->s->buf_slot[o] == g->s->buf_slot[b])
      return true;
  }
  return false;
}

static bool has_reduction_loops(const cug* g) {
  if (g->k->n_rranges == 0) return false;
  for (uint32_t m = 0; m < g->k->n_nodes; m++)
    if (g->members[m].kind != CU_MEM_OUTER) return true;
  return false;
}

static int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0) a = 0;
  if (b < 0) b = 0;
  return ptc_mul_ok(a, b, &r) ? r : INT64_MAX;
}

static int64_t hint_product(const cug* g, const sym_expr* const* r, uint32_t n) {
  int64_t p = 1;
  for (uint32_t d = 0; d < n; d++) p = sat_mul(p, cug_hint(g, r[d]));
  return p;
}

/* A reduction that walks memory with a stride while its last outer dim is
 * contiguous (column sums) favours the COL layout. */
static bool col_favoured(const cug* g) {
  const sched_kernel* k = g->k;
  if (k->n_ranges == 0 || cug_hint(g, k->ranges[k->n_ranges - 1]) < 2) return false;
  const sym_expr* xv = g->p->xvars[k->n_ranges - 1];
  const sym_expr* rv = g->p->rvars[k->n_rranges - 1];
  bool contig_x = false;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    if (mb->kind != CU_MEM_REDUCTION) continue;
    const ir_body* b = &mb->node->body;
    for (uint32_t i = 0; i < b->n; i++) {
      const ir_op* op = &b->ops[i];
      if (!mb->live[i] || op->opcode != IR_LOAD || mb->stage[i] != CU_LOOP) continue;
      if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) continue;
      int64_t cx, cr;
      if (cug_coef(op->index, rv, &cr) && cr == 1) return false;
      if (cug_coef(op->index, xv, &cx) && cx == 1) contig_x = true;
    }
  }
  return contig_x;
}

/* COL block shape: outer points per block (x) and reduction lanes per point
 * (y); PTC_CUDA_COL="X,Y" overrides (powers of two, X*Y <= 1024). */
/* A block shape "X,Y" from environment variable name into *x, *y when
 * both are powers of two, Y >= min_y and 32 <= X*Y <= 1024; else unchanged. */
static void env_block_shape(const char* name, long min_y, uint32_t* x, uint32_t* y) {
  const char* e = getenv(name);
  if (!e || !*e) return;
  char* end;
  long a = strtol(e, &end, 10), b = *end == ',' ? strtol(end + 1, NULL, 10) : 0;
  bool pow2 = a > 0 && b >= min_y && b > 0 && !(a & (a - 1)) && !(b & (b - 1));
  if (pow2 && a * b <= 1024 && a * b >= 32) {
    *x = (uint32_t)a;
    *y = (uint32_t)b;
  }
}

static void col_shape(uint32_t* x, uint32_t* y) {
  *x = CUDA_CG_COL_X;
  *y = CUDA_CG_COL_Y;
  env_block_shape("PTC_CUDA_COL", 1, x, y);
}

/* Whether index e of an access in member mb's reduction loop moves along
 * the row (a reduction variable with a non-zero or non-linear coefficient);
 * false for a value the loop reads at one place, like a scalar constant. */
static bool moves_along_row(const cug* g, const cu_member* mb, const sym_expr* e) {
  for (uint32_t d = 0; d < g->k->n_rranges; d++) {
    uint32_t xd = g->k->n_ranges + d;
    if (mb->kind == CU_MEM_INNER && xd >= PTC_MAX_RANK) return true;
    const sym_expr* rv = mb->kind == CU_MEM_INNER ? g->p->xvars[xd] : g->p->rvars[d];
    int64_t c;
    if (!cug_coef(e, rv, &c) || c != 0) return true;
  }
  return false;
}

/* The widest element of the global buffers read or written along the rows
 * in reduction loops (4 when there are none); with any_stage, along the
 * rows anywhere in the kernel (rows held in registers load theirs before
 * the loops), leaving out intermediates that live in registers only. */
static size_t widest_row_elem(const cug* g, bool any_stage) {
  size_t w = 0;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || (!any_stage && mb->stage[i] != CU_LOOP) || mb->kind == CU_MEM_OUTER)
        continue;
      if ((op->opcode != IR_LOAD && op->opcode != IR_STORE) ||
          g->s->buf_home[op->buf] == SCHED_HOME_LOCAL || !moves_along_row(g, mb, op->index))
        continue;
      if (any_stage && g->no_store && g->no_store[op->buf]) continue; /* registers only */
      size_t es = ptc_dtype_size(ir_buf(g->p, op->buf)->dtype);
      if (es > w) w = es;
    }
  }
  return w ? w : 4;
}

/* Threads per block of ROW kernels whose rows take fewer lanes (several
 * rows per block): PTC_CUDA_ROW_BLOCK (64..1024, a power of two); by
 * default 128 for a warp a row (short rows: more, smaller blocks spread
 * over the SMs; H100, bf16 masked softmax of [8,12,256,256]: 11.6 -> 10.8
 * us), else 256. A tuning knob read at code generation. */
static uint32_t row_block_threads(uint32_t lanes) {
  const char* e = getenv("PTC_CUDA_ROW_BLOCK");
  long v = e && *e ? strtol(e, NULL, 10) : 0;
  if (v >= 64 && v <= 1024 && !(v & (v - 1))) return (uint32_t)v;
  return lanes <= 32 ? 128 : 256;
}

/* Whether a pointwise member of the row loops writes a row to memory
 * (layer norm's output; var_mean and sums only read rows). */
static bool stores_rows(const cug* g) {
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    if (mb->kind != CU_MEM_INNER) continue;
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (mb->live[i] && op->opcode == IR_STORE && g->s->buf_home[op->buf] != SCHED_HOME_LOCAL)
        return true;
    }
  }
  return false;
}

/* 2-byte rows above the short-row bound (PTC_CUDA_SHORT_ROW's default)
 * up to this length that are written keep 4-byte rows' lanes */
#define NARROW_FULL_LANES_MIN 2048
#define NARROW_FULL_LANES_MAX 4096

static long env_knob(const char* name, long dflt, long lo, long hi);

/* Pointwise launch heuristic, knobs read at code generation:
 * PTC_CUDA_PW_BLOCK threads per block (128/256/512, default 256) and
 * PTC_CUDA_PW_WAVES the grid cap in waves of resident blocks (1..64; 0 = no
 * cap, every thread one step; -1: CUDA_TUNE_DEFAULT_WAVES; default
 * CUDA_CG_PW_WAVES = 8), passed to the launch as cuda_kernel_src.grid_per_sm
 * (see cuda_cg.h). H100 GPU time, 2^26-element sin/cos/sigmoid chain:
 * 4 waves (the old default) bf16 101.6 us, f32 190.8; 8 waves 99.2 /
 * 185.4; no cap 101.8 / 195.0; no cap with 2 chunks a thread
 * (PTC_CUDA_PW_UNROLL=2) 99.4 / 185.8; 512-thread blocks uncapped 104.9 /
 * 197.0; max-autotune 97.6 / 184.8. The cap only binds above
 * sm_count * 8 blocks * 8 waves * 256 threads * V elements (bf16: 17M). */
static void pw_launch_plan(cuda_kernel_src* out) {
  long b = env_knob("PTC_CUDA_PW_BLOCK", CUDA_CG_BLOCK, 128, CUDA_CG_TUNE_MAX_BLOCK);
  out->block_x = b >= 512 ? 512 : b >= 256 ? 256 : 128;
  long w = env_knob("PTC_CUDA_PW_WAVES", CUDA_CG_PW_WAVES, -1, 64);
  out->grid_per_sm = w < 0 ? 0 : w == 0 ? CUDA_CG_PW_NOCAP : (uint32_t)w;
}

static void choose_layout(cug* g, cuda_kernel_src* out) {
  if (!has_reduction_loops(g)) {
    g->layout = CUDA_LAYOUT_POINTWISE;
    g->lanes = 1;
    pw_launch_plan(out);
    g->slots = out->block_x;
    out->block_y = 1;
    out->slots = out->block_x * CUDA_CG_ILP;
    return;
  }
  int64_t r = hint_product(g, g->k->rranges, g->k->n_rranges);
  if (r <= CUDA_CG_TINY_ROW || col_favoured(g)) {
    g->layout = CUDA_LAYOUT_COL;
    uint32_t cx, cy;
    col_shape(&cx, &cy);
    /* the shared combine buffers (8 bytes a value, 8 more for an arg
     * index, a padded row per slot) must fit the 48 KiB of static shared
     * memory: fewer lanes where a kernel has many reductions */
    uint32_t per = 0;
    for (uint32_t m = 0; m < g->k->n_nodes; m++) {
      const cu_member* mb = &g->members[m];
      for (uint32_t i = 0; i < mb->node->body.n; i++) {
        const ir_op* op = &mb->node->body.ops[i];
        if (mb->live[i] && op->opcode == IR_REDUCE)
          per += op->rtype == IR_R_ARGMAX || op->rtype == IR_R_ARGMIN ? 16 : 8;
      }
    }
    while (cy > 8 && (uint64_t)per * cx * (cy + 1) > 40000) cy /= 2;
    g->lanes = r <= CUDA_CG_TINY_ROW ? 1 : cy;
    g->slots = g->lanes == 1 ? CUDA_CG_BLOCK : cx;
    out->block_x = g->slots;
    out->block_y = g->lanes;
  } else {
    g->layout = CUDA_LAYOUT_ROW;
    /* lanes by row bytes (4-byte elements as the unit): rows of 2-byte
     * elements get half the lanes, so more rows are in flight per SM (H100,
     * bf16 16384x4096: var_mean 0.051 -> 0.050 ms, layer norm 0.056 -> 0.054),
     * except looped rows of 2049..4096 that are also written, which keep
     * the lanes of 4-byte rows (H100 GPU time, bf16 8192x4096: layer norm
     * 51.2 -> 49.5 us, rms norm 52.8 -> 49.0 with 256 lanes; var_mean,
     * which only reads, 48.2 -> 49.0) */
    int64_t rb = r;
    if (widest_row_elem(g, false) < 4 &&
        !(r > NARROW_FULL_LANES_MIN && r <= NARROW_FULL_LANES_MAX && stores_rows(g)))
      rb = (r + 1) / 2;
    g->lanes = rb <= 512 ? 32 : rb <= 2048 ? 128 : rb <= 8192 ? 256 : 512;
    const char* e = getenv("PTC_CUDA_ROW_LANES"); /* tuning: lanes per row (32..512) */
    long lv = e && *e ? strtol(e, NULL, 10) : 0;
    if (lv >= 32 && lv <= 512 && !(lv & (lv - 1))) g->lanes = (uint32_t)lv;
    uint32_t bt = row_block_threads(g->lanes);
    g->slots = g->lanes >= bt ? 1 : bt / g->lanes;
    out->block_x = g->lanes;
    out->block_y = g->slots;
  }
  out->slots = g->slots;
}

/* ---- vectorised pointwise kernels -----------------------------------------------------
 * A pointwise kernel whose stores all write element `lin` (the flat
 * row-major index of its loops, i.e. contiguous outputs of the loop shape)
 * and which reads no buffer it writes is vectorised: each thread takes
 * chunks of V consecutive points, loads every buffer read at `lin` with one
 * 16-byte access (V = 16 / the widest such element), runs the body per
 * point from those registers (loads at any other index - broadcasts, or
 * the same buffer at an offset as in split - stay scalar)
 * and stores each output chunk with one access. Chunks that are not fully
 * in range, or buffers not aligned to the access, take the scalar path. */

/* The flat row-major index of the kernel's outer loops. */
static const sym_expr* flat_index(const cug* g) {
  sym_env* env = g->p->env;
  const sym_expr* e = sym_const(env, 0);
  const sym_expr* stride = sym_const(env, 1);
  for (uint32_t d = g->k->n_ranges; d-- > 0 && e && stride;) {
    e = sym_add(env, e, sym_mul(env, g->p->xvars[d], stride));
    stride = sym_mul(env, stride, g->k->ranges[d]);
  }
  return stride ? e : NULL;
}

static bool rvec_index_ok(const cug* g, const sym_expr* e, const sym_expr* rv, int64_t v);
static bool index_text(cug* g, const sym_expr* index, ptc_strbuf* out);

/* Records the index text of a load/store of buffer b as its row-vector key
 * (g->rvec_key[b]); marks b bad when the text cannot be printed or differs
 * from the key an earlier access recorded. */
static void note_rvec_key(cug* g, const sym_expr* index, int32_t b, bool* bad) {
  ptc_strbuf idx;
  if (!index_text(g, index, &idx)) {
    bad[b] = true;
  } else if (!g->rvec_key[b]) {
    g->rvec_key[b] = idx.data;
    idx.data = NULL;
  } else if (strcmp(g->rvec_key[b], idx.data) != 0) {
    bad[b] = true;
  }
  ptc_sb_free(&idx);
}
static long env_knob(const char* name, long dflt, long lo, long hi);

/* See cug.vec_inner. PTC_CUDA_VEC_INNER=0 turns it off (knob read at code
 * generation). Buffers loaded at one index that moves with the innermost
 * var by 1 and by multiples of V with the others (static coefficients and
 * offset), unmasked, 2..16 bytes a vector, not written by the kernel nor
 * read at the flat index, are read as vectors. */
static void vec_inner_plan(cug* g) {
  const uint32_t V = g->vec_width, n = g->k->n_ranges;
  int64_t S;
  g->vec_inner = false;
  if (!env_knob("PTC_CUDA_VEC_INNER", 1, 0, 1)) return;
  if (!sym_is_const(g->k->ranges[n - 1], &S) || S <= 0 || S % V != 0) return;
  g->vec_inner = true;
  const sym_expr* xv = g->p->xvars[n - 1];
  size_t nb = g->n_buffers;
  bool* bad = calloc(nb ? nb : 1, sizeof *bad);
  if (!bad) {
    g->vec_inner = false;
    return;
  }
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    cug_member_begin(g, m);
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || op->opcode != IR_LOAD) continue;
      int32_t b = op->buf;
      if (g->s->buf_home[b] == SCHED_HOME_LOCAL || bad[b] || op->index == g->flat) continue;
      size_t bytes = ptc_dtype_size(ir_buf(g->p, b)->dtype) * V;
      if (g->vec_buf[b] || g->stored[b] || op->args[0] >= 0 || bytes < 2 || bytes > 16 ||
          (bytes & (bytes - 1)) || !rvec_index_ok(g, op->index, xv, V)) {
        bad[b] = true;
        continue;
      }
      note_rvec_key(g, op->index, b, bad);
    }
  }
  for (size_t b = 0; b < nb; b++) g->rvec_buf[b] = g->rvec_key[b] && !bad[b];
  free(bad);
}

static void vec_plan(cug* g) {
  g->vec_width = 0;
  if (g->layout != CUDA_LAYOUT_POINTWISE || g->k->n_ranges == 0) return;
  const sym_expr* flat = flat_index(g);
  if (!flat) return;
  g->flat = flat;
  size_t max_es = 0;
  bool ok = true;
  memset(g->vec_buf, 0, g->n_buffers * sizeof *g->vec_buf);
  for (uint32_t m = 0; ok && m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; ok && i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE)) continue;
      if (g->s->buf_home[op->buf] == SCHED_HOME_LOCAL) continue;
      bool at_flat = op->index == flat;
      if (op->opcode == IR_STORE && !at_flat) ok = false;
      if (op->opcode == IR_LOAD && g->stored[op->buf]) ok = false; /* reads what it writes */
      if (!at_flat) continue;
      g->vec_buf[op->buf] = true;
      size_t es = ptc_dtype_size(ir_buf(g->p, op->buf)->dtype);
      if (es > max_es) max_es = es;
    }
  }
  if (ok && max_es > 0 && 16 / max_es >= 2) g->vec_width = (uint32_t)(16 / max_es);
  if (g->vec_width) vec_inner_plan(g);
}

/* The vector path's loads (before the points) or stores (after them). */
/* ---- cache hints on 16-byte vector accesses ----------------------------------------------
 * Streaming kernels read each input byte once: their 16-byte vector loads
 * (and stores) may carry a cache hint. io_hints makes the kernel's
 * accesses name ptc_vload_h<M, T, V> / ptc_vstore_h<M, T, V> (defined once
 * a translation unit in the module globals; other widths - the VR = 1
 * entries - and targets before sm_80 take ptc_vload / ptc_vstore). Loads:
 * M 1 ld.global.cs (evict first), 2 ld.global.nc.L1::no_allocate, 3
 * L1::no_allocate with an L2 evict_first policy (createpolicy), 4
 * nc.L1::no_allocate.L2::256B (L2 prefetch of the 256-byte block); stores:
 * M 1 st.global.cs. Only for buffers the kernel does not write (the .nc
 * path). Knobs: PTC_CUDA_COL_VEC_LD (vector columns), PTC_CUDA_PW_LD /
 * PTC_CUDA_PW_ST (vector pointwise), read at code generation; 0 = plain. */
static const char HINT_LOAD[] =
    "#ifndef PTC_HINT_LOAD\n"
    "#define PTC_HINT_LOAD\n"
    "#define PTC_HINT_OUT4(w) \"=r\"(w[0]), \"=r\"(w[1]), \"=r\"(w[2]), \"=r\"(w[3])\n"
    "template <int M, typename T, int V> __device__ __forceinline__ void ptc_vload_h(const T* p, T* out) {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
    "  if constexpr (sizeof(T) * V == 16 && M >= 1 && M <= 4) {\n"
    "    union { ptc_raw<16> r; T e[V]; } u;\n"
    "    u32* w = u.r.w;\n"
    "    if constexpr (M == 1) {\n"
    "      asm(\"ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\" : PTC_HINT_OUT4(w) : \"l\"(p));\n"
    "    } else if constexpr (M == 2) {\n"
    "      asm(\"ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\" : PTC_HINT_OUT4(w) : \"l\"(p));\n"
    "    } else if constexpr (M == 3) {\n"
    "      u64 pol;\n"
    "      asm(\"createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\" : \"=l\"(pol));\n"
    "      asm(\"ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\"\n"
    "          : PTC_HINT_OUT4(w) : \"l\"(p), \"l\"(pol));\n"
    "    } else {\n"
    "      asm(\"ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\" : PTC_HINT_OUT4(w) : \"l\"(p));\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < V; i++) out[i] = u.e[i];\n"
    "    return;\n"
    "  }\n"
    "#endif\n"
    "  ptc_vload<T, V>(p, out);\n"
    "}\n"
    "#endif\n";
static const char HINT_STORE[] =
    "#ifndef PTC_HINT_STORE\n"
    "#define PTC_HINT_STORE\n"
    "template <int M, typename T, int V> __device__ __forceinline__ void ptc_vstore_h(T* p, const T* in) {\n"
    "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800\n"
    "  if constexpr (sizeof(T) * V == 16 && M == 1) {\n"
    "    union { ptc_raw<16> r; T e[V]; } u;\n"
    "#pragma unroll\n"
    "    for (int i = 0; i < V; i++) u.e[i] = in[i];\n"
    "    asm volatile(\"st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};\" :: \"l\"(p), \"r\"(u.r.w[0]),\n"
    "                 \"r\"(u.r.w[1]), \"r\"(u.r.w[2]), \"r\"(u.r.w[3]) : \"memory\");\n"
    "    return;\n"
    "  }\n"
    "#endif\n"
    "  ptc_vstore<T, V>(p, in);\n"
    "}\n"
    "#endif\n";

static void io_hints(cug* g, long ld, long st) {
  if (ld > 0) snprintf(g->vld, sizeof g->vld, "ptc_vload_h<%d, ", (int)(ld & 7));
  if (st > 0) snprintf(g->vst, sizeof g->vst, "ptc_vstore_h<%d, ", (int)(st & 7));
  if (ld > 0) ptc_sb_append(&g->globals, HINT_LOAD);
  if (st > 0) ptc_sb_append(&g->globals, HINT_STORE);
}

static void emit_vec_access(cug* g, const cuda_kernel_src* out, bool stores) {
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    if (!g->vec_buf[b] || g->stored[b] != stores) continue;
    const char* t = cu_storage_type(ir_buf(g->p, b)->dtype);
    if (stores) {
      cug_line(g, &g->body, "%s%s, %u>(b%d + base, vout_b%d);", g->vst, t, g->vec_width, (int)b,
               (int)b);
    } else {
      cug_line(g, &g->body, "%s vin_b%d[%u];", t, (int)b, g->vec_width);
      cug_line(g, &g->body, "%s%s, %u>(b%d + base, vin_b%d);", g->vld, t, g->vec_width, (int)b,
               (int)b);
    }
  }
}

static ptc_status emit_point_body(cug* g);
static bool any_shared_slot(const cug* g, const cuda_kernel_src* out);

/* Pointwise kernels take their block size from blockDim (any of
 * CUDA_CG_TUNE_BLOCKS, the launch-config candidates of cuda_tune.c) and are
 * tunable - repeated launches give the same memory - when no buffer is both
 * read and written and no two of their buffers share a workspace slot. */
static void tune_plan(cug* g, cuda_kernel_src* out) {
  out->max_threads = CUDA_CG_TUNE_MAX_BLOCK;
  bool rw = false;
  for (uint32_t m = 0; !rw && m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; !rw && i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (mb->live[i] && op->opcode == IR_LOAD && g->s->buf_home[op->buf] != SCHED_HOME_LOCAL &&
          g->stored[op->buf])
        rw = true;
    }
  }
  out->tunable = !rw && !any_shared_slot(g, out);
}

static void emit_decompose(cug* g, const char* lin, const char* v, const sym_expr* const* sizes,
                           uint32_t n);

/* Flat vector traffic (bytes) of a vector pointwise kernel by the size
 * hints (0 when unknown), and in *narrow whether every flat vector buffer
 * has elements narrower than 4 bytes. */
static int64_t pw_flat_bytes(const cug* g, bool* narrow) {
  int64_t xh = hint_product(g, g->k->ranges, g->k->n_ranges);
  int64_t per = 0;
  *narrow = true;
  for (size_t b = 0; b < g->n_buffers; b++) {
    if (!g->vec_buf[b]) continue;
    size_t es = ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype);
    *narrow &= es < 4;
    per += (int64_t)es;
  }
  return xh > 0 && per > 0 && xh <= INT64_MAX / per ? xh * per : 0;
}

/* Big vector pointwise kernels: at least PTC_CUDA_PW_STREAM MiB (default
 * CUDA_CG_PW_STREAM_MIB; 0 = never) of flat vector traffic by the size
 * hints, far above the L2. They take 2 chunks a thread (pw_unroll), one
 * pass (pw_grid_plan), and, where every flat buffer has 1- or 2-byte
 * elements, loads ld.global.nc.L1::no_allocate and stores st.global.cs
 * (io_hints), unless PTC_CUDA_PW_UNROLL / _WAVES / _LD / _ST say
 * otherwise. H100, bf16 2^26 sin/cos/sigmoid chain (256 MiB), GPU / wall
 * us a call, one run (model_kernels --calls 100 --wall; session 11, the 2
 * chunks then a grid apart, 8 waves): plain 98.2 / 100.6 and 99.0 / 100.2,
 * streaming 98.0 / 98.8; alone: unroll 2 98.7 / 100.1, ld 2 100.0 / 101.1,
 * st 1 99.1 / 100.5, ld 2 + st 1 99.8 / 100.9, ld 1 + st 1 99.8 / 101.1,
 * ld 3 100.0 / 101.9, ld 4 100.1 / 101.4, unroll 4 99.6 / 101.0; blocks of
 * 128 97.6 / 98.9, 512 101.7 / 103.0; 16 waves 98.9 / 99.7, no cap
 * 101.4 / 100.9. f32 gained nothing from the hints (session 16, 2^26
 * chain, 8 waves: 187.6 with st 1, 187.7 with ld 2 + st 1, 187.8 plain)
 * but gains from the one pass (pw_grid_plan). Smaller kernels (model
 * activations, which the next kernel may find in the L2) keep plain
 * accesses, one chunk and the capped grid: the second chunk doubles the
 * body (NVRTC of the f32 chain 0.115 -> 0.19 s on a 2-core machine). */
static bool pw_big_narrow(const cug* g, bool* narrow) {
  *narrow = false;
  if (g->layout != CUDA_LAYOUT_POINTWISE || !g->vec_width) return false;
  long mib = env_knob("PTC_CUDA_PW_STREAM", CUDA_CG_PW_STREAM_MIB, 0, 1L << 20);
  return mib > 0 && pw_flat_bytes(g, narrow) >= ((int64_t)mib << 20);
}

static bool pw_big(const cug* g) {
  bool narrow;
  return pw_big_narrow(g, &narrow);
}

/* The streaming hints (ld.global.nc.L1::no_allocate loads, st.global.cs
 * stores; io_hints): big kernels whose flat buffers all have 1- or 2-byte
 * elements. */
static bool pw_streaming(const cug* g) {
  bool narrow;
  return pw_big_narrow(g, &narrow) && narrow;
}

/* Chunks (16-byte vectors of every flat buffer) a thread takes a step in
 * vector pointwise kernels, their loads issued together:
 * PTC_CUDA_PW_UNROLL (1, 2 or 4; read at code generation), 1 where a
 * buffer is read as inner vectors (vec_inner's broadcast loads). */
static uint32_t pw_unroll(const cug* g) {
  if (g->layout != CUDA_LAYOUT_POINTWISE || !g->vec_width) return 1;
  for (size_t b = 0; g->vec_inner && b < g->n_buffers; b++)
    if (g->rvec_buf[b]) return 1;
  long u = env_knob("PTC_CUDA_PW_UNROLL", pw_big(g) ? 2 : CUDA_CG_PW_UNROLL, 1, 4);
  return u >= 4 ? 4 : u >= 2 ? 2 : 1;
}

/* Big vector pointwise kernels (pw_big) run in one pass: no grid cap, so
 * every block takes one tile of 2 chunks a thread and no SM is left with a
 * tail of a capped grid's last steps, unless PTC_CUDA_PW_WAVES says
 * otherwise. H100, f32 2^26 sin/cos/sigmoid chain written by hand
 * (bench/pw_layout_probe.cu, median of 15 interleaved rounds): a
 * grid-stride loop of one chunk a thread a step capped at 8 waves 186.8
 * us, 2 block-contiguous chunks capped at 8 waves 185.8, at 4 waves 191.3,
 * one pass 181.6, Inductor's layout (128 threads, 2 chunks 2 KiB apart)
 * 182.0; flush-to-zero changed none of them. Blocks of
 * CUDA_CG_PW_BIG_BLOCK threads unless PTC_CUDA_PW_BLOCK says otherwise.
 * The generated kernels (bench/knob_sweep.py, 11 interleaved rounds, GPU
 * us a call): f32 one chunk capped at 8 waves (before) 188.2, 2 chunks in
 * one pass 185.9 with blocks of 256, 183.7 of 128, 188.8 of 512; 2 chunks
 * capped at 8 waves 188.5; 4 chunks 191.3; Inductor 193.3 (min 183.2).
 * bf16 (2 chunks a grid apart capped at 8 waves before): one pass 98.5
 * with blocks of 256, 97.5 of 128; capped at 8 waves 97.3; one chunk
 * 101.4, no cache hints 99.8; Inductor 170.9. */
static void pw_grid_plan(cug* g, cuda_kernel_src* out) {
  if (!pw_big(g)) return;
  const char* e = getenv("PTC_CUDA_PW_WAVES");
  if (!e || !*e) out->grid_per_sm = CUDA_CG_PW_NOCAP;
  e = getenv("PTC_CUDA_PW_BLOCK");
  if (!e || !*e) out->block_x = g->slots = CUDA_CG_PW_BIG_BLOCK;
}

static ptc_status emit_pointwise_vec(cug* g, cuda_kernel_src* out) {
  const uint32_t V = g->vec_width;
  tune_plan(g, out);
  const bool stream = pw_streaming(g);
  io_hints(g, env_knob("PTC_CUDA_PW_LD", stream ? 2 : CUDA_CG_PW_LD, 0, 4),
           env_knob("PTC_CUDA_PW_ST", stream ? 1 : CUDA_CG_PW_ST, 0, 1));
  ptc_strbuf al;
  ptc_sb_init(&al);
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    if (!g->vec_buf[b]) continue;
    size_t bytes = ptc_dtype_size(ir_buf(g->p, b)->dtype) * V;
    ptc_sb_printf(&al, " && ((u64)b%d & %zu) == 0", (int)b, bytes - 1);
  }
  for (uint32_t j = 0; g->vec_inner && j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    if (!g->rvec_buf[b]) continue;
    size_t bytes = ptc_dtype_size(ir_buf(g->p, b)->dtype) * V;
    ptc_sb_printf(&al, " && ((u64)b%d & %zu) == 0", (int)b, bytes - 1);
  }
  cug_line(g, &g->body, "ptc_kerr* const ke = kerr;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "const bool aligned = true%s;", al.data ? al.data : "");
  ptc_sb_free(&al);
  cug_line(g, &g->body, "const IT chunks = (xn + (IT)%u) / (IT)%u;", V - 1, V);
  const uint32_t U = pw_unroll(g);
  if (U > 1) {
    /* U chunks a thread a step, a block apart (a block's U * blockDim
     * chunks are contiguous): every chunk's vector loads are issued before
     * the first one's points (loads in flight) */
    cug_line(g, &g->body, "const IT cstep = (IT)blockDim.x;");
    cug_line(g, &g->body, "for (IT c0 = (IT)blockIdx.x * cstep * (IT)%u + (IT)threadIdx.x; c0 < chunks; "
             "c0 += (IT)gridDim.x * cstep * (IT)%u) {", U, U);
    g->indent++;
    for (uint32_t j = 0; j < out->n_bufs; j++) {
      int32_t b = out->bufs[j];
      if (!g->vec_buf[b] || g->stored[b]) continue;
      cug_line(g, &g->body, "%s vin_u_b%d[%u][%u];", cu_storage_type(ir_buf(g->p, b)->dtype), (int)b,
               U, V);
    }
    cug_line(g, &g->body, "#pragma unroll");
    cug_line(g, &g->body, "for (int u = 0; u < %u; u++) {", U);
    g->indent++;
    cug_line(g, &g->body, "const IT cu = c0 + (IT)u * cstep;");
    cug_line(g, &g->body, "if (aligned && cu < chunks && cu * (IT)%u + (IT)%u <= xn) {", V, V);
    g->indent++;
    cug_line(g, &g->body, "const IT base = cu * (IT)%u;", V);
    for (uint32_t j = 0; j < out->n_bufs; j++) {
      int32_t b = out->bufs[j];
      if (!g->vec_buf[b] || g->stored[b]) continue;
      cug_line(g, &g->body, "%s%s, %u>(b%d + base, vin_u_b%d[u]);", g->vld,
               cu_storage_type(ir_buf(g->p, b)->dtype), V, (int)b, (int)b);
    }
    g->indent--;
    cug_line(g, &g->body, "}");
    g->indent--;
    cug_line(g, &g->body, "}");
    cug_line(g, &g->body, "#pragma unroll");
    cug_line(g, &g->body, "for (int u = 0; u < %u; u++) {", U);
    g->indent++;
    cug_line(g, &g->body, "const IT c = c0 + (IT)u * cstep;");
    cug_line(g, &g->body, "if (c >= chunks) break;");
  } else {
    cug_line(g, &g->body, "for (IT c = (IT)blockIdx.x * (IT)blockDim.x + (IT)threadIdx.x; c < chunks; "
             "c += (IT)gridDim.x * (IT)blockDim.x) {");
    g->indent++;
  }
  cug_line(g, &g->body, "const IT base = c * (IT)%u;", V);
  g->fast_trig = cug_uses_fast_trig(g);
  if (g->fast_trig) cug_line(g, &g->body, "float th = 0.0f;");
  cug_line(g, &g->body, "if (aligned && base + (IT)%u <= xn) {", V);
  g->indent++;
  if (g->vec_inner) {
    /* the chunk's outer point, once; the inner-vector loads at it */
    emit_decompose(g, "base", "xb", g->k->ranges, g->k->n_ranges);
    for (uint32_t j = 0; j < out->n_bufs; j++) {
      int32_t b = out->bufs[j];
      if (!g->rvec_buf[b]) continue;
      const char* t = cu_storage_type(ir_buf(g->p, b)->dtype);
      cug_line(g, &g->body, "%s vix_b%d[%u];", t, (int)b, V);
      ptc_strbuf xs;
      ptc_sb_init(&xs);
      for (uint32_t d = 0; d < g->k->n_ranges; d++)
        ptc_sb_printf(&xs, "const IT x%u = xb%u; (void)x%u; ", d, d, d);
      cug_line(g, &g->body, "{ %sptc_vload<%s, %u>(b%d + (%s), vix_b%d); }", xs.data ? xs.data : "",
               t, V, (int)b, g->rvec_key[b], (int)b);
      ptc_sb_free(&xs);
    }
  }
  if (U > 1) {
    for (uint32_t j = 0; j < out->n_bufs; j++) {
      int32_t b = out->bufs[j];
      if (g->vec_buf[b] && !g->stored[b])
        cug_line(g, &g->body, "const %s* const vin_b%d = vin_u_b%d[u];",
                 cu_storage_type(ir_buf(g->p, b)->dtype), (int)b, (int)b);
    }
  } else {
    emit_vec_access(g, out, false);
  }
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    if (g->vec_buf[b] && g->stored[b])
      cug_line(g, &g->body, "%s vout_b%d[%u];", cu_storage_type(ir_buf(g->p, b)->dtype), (int)b, V);
  }
  cug_line(g, &g->body, "#pragma unroll");
  cug_line(g, &g->body, "for (int e = 0; e < %u; e++) {", V);
  g->indent++;
  if (g->vec_inner) {
    for (uint32_t d = 0; d + 1 < g->k->n_ranges; d++)
      cug_line(g, &g->body, "const IT x%u = xb%u;", d, d);
    cug_line(g, &g->body, "const IT x%u = xb%u + (IT)e;", g->k->n_ranges - 1,
             g->k->n_ranges - 1);
  } else {
    cug_line(g, &g->body, "const IT lin = base + (IT)e;");
    emit_decompose(g, "lin", "x", g->k->ranges, g->k->n_ranges);
  }
  g->vec_mode = true;
  memset(g->in_reg, 0, g->n_buffers * sizeof *g->in_reg);
  ptc_status s = emit_point_body(g);
  g->vec_mode = false;
  g->indent--;
  cug_line(g, &g->body, "}");
  if (g->fast_trig) { /* ptc_sin_v / ptc_cos_v: stored unless an argument was out of their range */
    cug_line(g, &g->body, "if (th <= PTC_TRIG_V_MAX) {");
    g->indent++;
  }
  emit_vec_access(g, out, true);
  if (g->fast_trig) {
    g->indent--;
    cug_line(g, &g->body, "}");
    g->indent--;
    cug_line(g, &g->body, "}");
    cug_line(g, &g->body, "if (th > PTC_TRIG_V_MAX || !(aligned && base + (IT)%u <= xn)) {", V);
  } else {
    g->indent--;
    cug_line(g, &g->body, "} else {");
  }
  g->indent++;
  /* the ragged / unaligned chunk: rare, kept rolled (code size, compile time) */
  cug_line(g, &g->body, "#pragma unroll 1");
  cug_line(g, &g->body, "for (int e = 0; e < %u; e++) {", V);
  g->indent++;
  cug_line(g, &g->body, "const IT lin = base + (IT)e;");
  cug_line(g, &g->body, "if (lin < xn) {");
  g->indent++;
  emit_decompose(g, "lin", "x", g->k->ranges, g->k->n_ranges);
  memset(g->in_reg, 0, g->n_buffers * sizeof *g->in_reg);
  if (!s) s = emit_point_body(g);
  g->fast_trig = false;
  /* the point's if, the e loop, the else, the chunk loop (U > 1: the u
   * loop, then the chunk loop). The scalar body stays inside the unrolled u
   * loop: a rolled loop of its own after the vector chunks (one copy
   * instead of U, 10% less NVRTC time) made the bf16 chain 4.9% slower
   * (H100, session 17: 102.7 us against 97.9). */
  for (uint32_t k = 0; k < (U > 1 ? 5u : 4u); k++) {
    g->indent--;
    cug_line(g, &g->body, "}");
  }
  return s;
}

/* ---- loops ------------------------------------------------------------------------------- */

/* Decomposes the flat index `lin` into the loop vars <v>0..<v>{n-1} over
 * `sizes` (row-major). */
static void emit_decompose(cug* g, const char* lin, const char* v, const sym_expr* const* sizes,
                           uint32_t n) {
  if (n == 0) return;
  if (n == 1) {
    cug_line(g, &g->body, "const IT %s0 = %s;", v, lin);
    return;
  }
  cug_line(g, &g->body, "IT %s_rest = %s;", v, lin);
  for (uint32_t d = n; d-- > 1;) {
    ptc_strbuf sz;
    ptc_sb_init(&sz);
    cug_index(g, &sz, sizes[d]);
    const char* S = sz.data ? sz.data : "1";
    cug_line(g, &g->body, "const IT %s%u = %s_rest %% %s;", v, d, v, S);
    cug_line(g, &g->body, "%s_rest = %s_rest / %s;", v, v, S);
    ptc_sb_free(&sz);
  }
  cug_line(g, &g->body, "const IT %s0 = %s_rest;", v, v);
}

static void member_comment(cug* g, uint32_t m) {
  const cu_member* mb = &g->members[m];
  static const char* const kinds[] = {"reduction", "inner", "outer"};
  char origin[64];
  snprintf(origin, sizeof origin, "%s", mb->node->origin ? mb->node->origin : "");
  for (char* q = origin; *q; q++)
    if (*q == '*' || *q == '/' || *q == '\\' || (unsigned char)*q < 32) *q = '_';
  cug_line(g, &g->body, "/* node %d (%s) -> b%d%s%s */", mb->node_index, kinds[mb->kind],
           (int)mb->node->out_buf, *origin ? ": " : "", origin);
}

typedef struct group {
  uint32_t n;
  uint32_t* m;
} group;

static uint64_t prefetch_pending(const cug* g);
static void emit_prefetch(cug* g, uint64_t bufs, const char* tile);

/* A tuning knob read at code generation: the integer value of environment
 * variable `name` clamped to [lo, hi], or `dflt` when unset or empty. */
static long env_knob(const char* name, long dflt, long lo, long hi) {
  const char* e = getenv(name);
  if (!e || !*e) return dflt;
  long v = strtol(e, NULL, 10);
  return v < lo ? lo : v > hi ? hi : v;
}

static bool stores_rows(const cug* g);

/* Unroll factor of the (non-persistent) reduction loops: independent loads
 * in flight per thread. PTC_CUDA_ROW_UNROLL / PTC_CUDA_COL_UNROLL per
 * layout, else PTC_CUDA_UNROLL (1 = off). By default 1, except looped
 * vector rows of 2-byte elements that the kernel also writes (bf16 layer /
 * rms norm of 4096: two vector steps a lane, both loads in flight with 2;
 * H100 GPU time, bf16 8192x4096: layer norm 49.3 -> 48.0 us, rms norm
 * 48.9 -> 48.4). */
static int loop_unroll(const cug* g) {
  const char* own = g->layout == CUDA_LAYOUT_COL ? "PTC_CUDA_COL_UNROLL" : "PTC_CUDA_ROW_UNROLL";
  const char* e = getenv(own);
  /* H100: 4 cost 10% on f32 column sums, won nothing on rows */
  long dflt = g->layout == CUDA_LAYOUT_ROW && g->rvec > 1 && !g->persist && !g->split &&
                      widest_row_elem(g, false) < 4 && stores_rows(g)
                  ? 2
                  : 1;
  return (int)env_knob(e && *e ? own : "PTC_CUDA_UNROLL", dflt, 1, 16);
}

/* The vector accesses of one step of a vector row loop: the loads of the
 * group's rvec buffers before the per-element body (stores: false) or the
 * stores after it (stores: true), at r0 = rb. */
static void emit_rvec_access(cug* g, group* gr, bool stores) {
  bool* done = calloc(g->n_buffers ? g->n_buffers : 1, sizeof *done);
  if (!done) {
    cug_fail(g, ptc_status_oom());
    return;
  }
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    const cu_member* mb = g->cur;
    g->in_loop = g->rvec_loop = true;
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || mb->stage[i] != CU_LOOP) continue;
      if (op->opcode != (stores ? IR_STORE : IR_LOAD) || done[op->buf] || !g->rvec_buf[op->buf])
        continue;
      if (!stores && (g->in_reg[op->buf] || (g->cache[op->buf] == 2 && cug_cache_hit(g, op))))
        continue;
      /* a row written and read back in registers: its reads follow its
       * store in the step (rvec_plan), so they hit the registers */
      if (!stores && g->cache[op->buf] && g->stored[op->buf] && cug_cache_hit(g, op)) continue;
      if (stores && g->cache[op->buf] && g->no_store[op->buf]) continue;
      if (!cug_rvec_hit(g, op)) continue;
      done[op->buf] = true;
      const char* T = cu_storage_type(ir_buf(g->p, op->buf)->dtype);
      if (!stores) cug_line(g, &g->body, "%s vin_b%d[VR];", T, (int)op->buf);
      if (!stores && g->prefetch[op->buf]) { /* loaded one tile ahead (prefetch_plan) */
        cug_line(g, &g->body, "#pragma unroll");
        cug_line(g, &g->body, "for (int k = 0; k < VR; k++) vin_b%d[k] = pf_b%d[it][k];",
                 (int)op->buf, (int)op->buf);
        continue;
      }
      ptc_strbuf idx;
      ptc_sb_init(&idx);
      cug_index(g, &idx, op->index);
      if (stores)
        cug_line(g, &g->body, "if (xvalid) { const IT r0 = rb; ptc_vstore<%s, VR>(b%d + (%s), vout_b%d); }",
                 T, (int)op->buf, idx.data ? idx.data : "0", (int)op->buf);
      else
        cug_line(g, &g->body, "{ const IT r0 = rb; %s%s, VR>(b%d + (%s), vin_b%d); }",
                 g->stored[op->buf] ? "ptc_vload<" : g->vld, T, (int)op->buf,
                 idx.data ? idx.data : "0", (int)op->buf);
      ptc_sb_free(&idx);
    }
    g->in_loop = g->rvec_loop = false;
  }
  /* staging arrays of the stores, declared before the body fills them */
  if (!stores) {
    memset(done, 0, g->n_buffers * sizeof *done);
    for (uint32_t j = 0; j < gr->n; j++) {
      cug_member_begin(g, gr->m[j]);
      const cu_member* mb = g->cur;
      g->in_loop = g->rvec_loop = true;
      for (uint32_t i = 0; i < mb->node->body.n; i++) {
        const ir_op* op = &mb->node->body.ops[i];
        if (!mb->live[i] || mb->stage[i] != CU_LOOP || op->opcode != IR_STORE) continue;
        if (done[op->buf] || !g->rvec_buf[op->buf] || !cug_rvec_hit(g, op)) continue;
        if (g->cache[op->buf] && g->no_store[op->buf]) continue;
        done[op->buf] = true;
        cug_line(g, &g->body, "%s vout_b%d[VR];", cu_storage_type(ir_buf(g->p, op->buf)->dtype),
                 (int)op->buf);
      }
      g->in_loop = g->rvec_loop = false;
    }
  }
  free(done);
}

/* Opens the reduction loop over a row: `rb` steps of VR elements (vec) or
 * `rl` steps of one; persistent rows as a fixed, unrolled count per lane
 * plus a bounds test, looped rows from the lane (the chunk start in split
 * kernels) to rlim. Leaves the indent inside the loop body; the caller
 * closes two braces (persistent) or one. */
static void emit_row_loop_open(cug* g, bool vec) {
  const char* v = vec ? "rb" : "rl";
  if (g->persist) {
    cug_line(g, &g->body, "#pragma unroll");
    cug_line(g, &g->body, "for (int it = 0; it < %u%s; it++) {", g->persist, vec ? " / VR" : "");
    g->indent++;
    if (vec)
      cug_line(g, &g->body, "const IT rb = ((IT)lane + (IT)(it * %u)) * (IT)VR;", g->lanes);
    else
      cug_line(g, &g->body, "const IT rl = (IT)lane + (IT)(it * %u);", g->lanes);
    cug_line(g, &g->body, "if (%s < rlim) {", v);
  } else {
    if (loop_unroll(g) > 1) cug_line(g, &g->body, "#pragma unroll %d", loop_unroll(g));
    if (vec)
      cug_line(g, &g->body, "for (IT rb = %s(IT)lane * (IT)VR; rb < rlim; rb += (IT)(%u * VR)) {",
               g->split ? "rbeg + " : "", g->lanes);
    else
      cug_line(g, &g->body, "for (IT rl = %s(IT)lane; rl < rlim; rl += (IT)%u) {",
               g->split ? "rbeg + " : "", g->lanes);
  }
  g->indent++;
}

/* The reduction loop of a group in a vector row kernel: each lane step
 * covers VR consecutive row elements rb .. rb + VR - 1 (the entry point
 * guarantees rn % VR == 0), loaded and stored as vectors. */
static void emit_rvec_loop(cug* g, group* gr) {
  emit_row_loop_open(g, true);
  emit_rvec_access(g, gr, false);
  cug_line(g, &g->body, "#pragma unroll");
  cug_line(g, &g->body, "for (int e = 0; e < VR; e++) {");
  g->indent++;
  cug_line(g, &g->body, "const IT rl = rb + (IT)e;");
  emit_decompose(g, "rl", "r", g->k->rranges, g->k->n_rranges);
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    g->rvec_loop = true;
    cug_emit_stage(g, &g->body, CU_LOOP);
    cug_emit_acc_updates(g, &g->body);
    g->rvec_loop = false;
  }
  g->indent--;
  cug_line(g, &g->body, "}");
  emit_rvec_access(g, gr, true);
  g->indent--;
  cug_line(g, &g->body, "}");
  if (g->persist) {
    g->indent--;
    cug_line(g, &g->body, "}");
  }
}

/* The end of the (one) group of a split kernel: the block combines its
 * chunk's accumulators, publishes them to the workspace at xo * S + cid and
 * counts itself in; the last block of the row (the counter reaches S) folds
 * the S partials in chunk order (deterministic whichever block is last),
 * resets the counter for the next launch and runs the results and the
 * epilogue; the other blocks go on to their next task. */
static void emit_split_merge(cug* g, group* gr) {
  /* ROW: a block per (row, chunk), lane 0 leads; COL: a block per (tile of
   * columns, chunk), every column's lane 0 publishes at its workspace row xw
   * and thread (0, 0) counts the tile in */
  bool col = g->layout == CUDA_LAYOUT_COL;
  const char* leader = col ? "lane == 0 && slot == 0" : "lane == 0";
  const char* counter = col ? "tile" : "xo";
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_combine(g, &g->body);
  }
  cug_line(g, &g->body, "if (S > 1) {");
  g->indent++;
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_split(g, &g->body, true, col ? "xw * S + cid" : "xo * S + cid", "S");
  }
  cug_line(g, &g->body, "__threadfence();");
  cug_line(g, &g->body, "__syncthreads();");
  cug_line(g, &g->body, "if (%s) sp_last = atomicAdd(&%s_cnt[%s], 1u) == (unsigned)(S - 1);", leader,
           g->kname, counter);
  cug_line(g, &g->body, "__syncthreads();");
  cug_line(g, &g->body, "if (!sp_last) continue;");
  cug_line(g, &g->body, "__threadfence();");
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_split(g, &g->body, false, col ? "xw * S" : "xo * S", "S");
    cug_emit_acc_combine(g, &g->body);
  }
  cug_line(g, &g->body, "if (%s) %s_cnt[%s] = 0u;", leader, g->kname, counter);
  g->indent--;
  cug_line(g, &g->body, "}");
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_finalize(g, &g->body);
    cug_emit_stage(g, &g->body, CU_POST);
  }
}

/* One group: hoisted ops, accumulators, the reduction loop over this
 * thread's lanes, the combine, results and the ops after the reductions. */
static void flush_group(cug* g, group* gr) {
  if (!gr->n) return;
  for (uint32_t j = 0; j < gr->n; j++) member_comment(g, gr->m[j]);
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_stage(g, &g->body, CU_PRE);
    cug_emit_acc_decls(g, &g->body);
  }
  if (g->rvec > 1) {
    uint64_t pending = prefetch_pending(g);
    emit_rvec_loop(g, gr);
    /* the prefetched rows this loop consumed: load the next tile's now, so
     * that they are in flight during this tile's combines and epilogue */
    emit_prefetch(g, pending & ~prefetch_pending(g), "tile + (IT)gridDim.x");
  } else {
    emit_row_loop_open(g, false);
    emit_decompose(g, "rl", "r", g->k->rranges, g->k->n_rranges);
    for (uint32_t j = 0; j < gr->n; j++) {
      cug_member_begin(g, gr->m[j]);
      cug_emit_stage(g, &g->body, CU_LOOP);
      cug_emit_acc_updates(g, &g->body);
    }
    g->indent--;
    cug_line(g, &g->body, "}");
    if (g->persist) {
      g->indent--;
      cug_line(g, &g->body, "}");
    }
  }
  if (g->split) {
    emit_split_merge(g, gr);
  } else {
    for (uint32_t j = 0; j < gr->n; j++) {
      cug_member_begin(g, gr->m[j]);
      cug_emit_acc_combine(g, &g->body);
      cug_emit_acc_finalize(g, &g->body);
      cug_emit_stage(g, &g->body, CU_POST);
    }
  }
  gr->n = 0;
}

static bool group_feeds(const cug* g, const group* gr, uint32_t m) {
  for (uint32_t j = 0; j < gr->n; j++) {
    const cu_member* mb = &g->members[gr->m[j]];
    if (mb->kind == CU_MEM_REDUCTION && cug_member_reads(g, m, mb->node->out_buf)) return true;
  }
  return false;
}

static ptc_status emit_point_body(cug* g) {
  group gr = {0, calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof(uint32_t))};
  if (!gr.m) return ptc_status_oom();
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    if (g->members[m].kind == CU_MEM_OUTER) {
      flush_group(g, &gr);
      member_comment(g, m);
      cug_member_begin(g, m);
      cug_emit_stage(g, &g->body, CU_PRE);
      continue;
    }
    if (group_feeds(g, &gr, m)) flush_group(g, &gr);
    gr.m[gr.n++] = m;
  }
  flush_group(g, &gr);
  free(gr.m);
  return PTC_OK;
}

static ptc_status emit_pointwise(cug* g, cuda_kernel_src* out) {
  const uint32_t V = CUDA_CG_ILP;
  tune_plan(g, out);
  cug_line(g, &g->body, "ptc_kerr* const ke = kerr;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "const IT B = (IT)blockDim.x;");
  cug_line(g, &g->body, "for (IT base = (IT)blockIdx.x * B * (IT)%u; base < xn; base += (IT)gridDim.x * B * (IT)%u) {",
           V, V);
  g->indent++;
  cug_line(g, &g->body, "#pragma unroll");
  cug_line(g, &g->body, "for (int v = 0; v < %u; v++) {", V);
  g->indent++;
  cug_line(g, &g->body, "const IT lin = base + (IT)v * B + (IT)threadIdx.x;");
  cug_line(g, &g->body, "if (lin < xn) {");
  g->indent++;
  emit_decompose(g, "lin", "x", g->k->ranges, g->k->n_ranges);
  ptc_status s = emit_point_body(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  g->indent--;
  cug_line(g, &g->body, "}");
  g->indent--;
  cug_line(g, &g->body, "}");
  return s;
}

/* ---- persistent rows -------------------------------------------------------------------
 * A ROW kernel walks each row in several loops (softmax: max, sum of exp,
 * the division; layer norm: mean, variance, the normalisation). When its
 * row length R is static and small (R / lanes <= 16 elements per lane by
 * default, widening the row to 512 lanes to fit) and it pays (an
 * intermediate dies with the kernel, as the exp of a softmax, or the cached
 * rows have 4-byte or wider elements: see persist_plan), its loops are unrolled over the
 * lane's elements and each buffer accessed in two or more of them at one
 * index (unmasked, in the loops only) is kept in registers c_b<id>[it]
 * after its first load or store: the row is read from memory once, and the
 * intermediate is never written back. */

/* cached elements per lane over all buffers: PTC_CUDA_PERSIST_REGS (default 48) */
static int64_t persist_max_regs(void) { return env_knob("PTC_CUDA_PERSIST_REGS", 48, 0, 128); }
#define PERSIST_WIDE_LANES 512

/* Elements per lane up to which rows persist: PTC_CUDA_PERSIST (0 = off;
 * default 16); PTC_CUDA_PERSIST_WIDE=0 keeps the usual lane count instead of
 * widening a row to 512 lanes to fit. Tuning knobs read at code generation
 * (the kernel source, hence the cubin cache key, follows them). */
static int64_t persist_max_per_lane(void) {
  const char* e = getenv("PTC_CUDA_PERSIST");
  if (!e || !*e) return 16;
  long v = strtol(e, NULL, 10);
  return v < 0 ? 0 : v > 32 ? 32 : v;
}

/* Rows of 2-byte elements up to this length persist even when that spares
 * only re-reads, with up to SHORT_ROW_PER_LANE elements a lane (one warp a
 * row of 768): PTC_CUDA_SHORT_ROW=N (0 = off; default 2048). */
#define SHORT_ROW_PER_LANE 32
static int64_t short_row_max(void) { return env_knob("PTC_CUDA_SHORT_ROW", 2048, 0, 1 << 20); }

static bool getenv_set(const char* name) {
  const char* e = getenv(name);
  return e && *e;
}

static bool persist_wide(void) {
  const char* e = getenv("PTC_CUDA_PERSIST_WIDE");
  return !e || !*e || strcmp(e, "0") != 0;
}

/* The group of each member as emit_point_body forms them (-1: outer). */
static ptc_status assign_groups(const cug* g, int32_t* gid) {
  uint32_t* open = calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof *open);
  if (!open) return ptc_status_oom();
  int32_t cur = 0;
  uint32_t n = 0; /* members of the open group */
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    if (g->members[m].kind == CU_MEM_OUTER) {
      if (n) cur++;
      n = 0;
      gid[m] = -1;
      continue;
    }
    bool feeds = false;
    for (uint32_t j = 0; j < n; j++) {
      const cu_member* mb = &g->members[open[j]];
      if (mb->kind == CU_MEM_REDUCTION && cug_member_reads(g, m, mb->node->out_buf)) feeds = true;
    }
    if (feeds) {
      cur++;
      n = 0;
    }
    open[n++] = m;
    gid[m] = cur;
  }
  free(open);
  return PTC_OK;
}

/* The index printed as the loops will print it, into *out (initialised
 * here; freed by the caller); false, with *out holding nothing usable,
 * when it cannot be printed outside the emission (e.g. through an indirect
 * value named only while emitting). Leaves g->err as it was. */
static bool index_text(cug* g, const sym_expr* index, ptc_strbuf* out) {
  ptc_sb_init(out);
  ptc_status saved = g->err;
  g->err = NULL;
  cug_index(g, out, index);
  bool failed = g->err != NULL;
  ptc_status_destroy(g->err);
  g->err = saved;
  return !failed && out->data;
}

static ptc_status persist_plan(cug* g, cuda_kernel_src* out) {
  g->persist = 0;
  if (g->layout != CUDA_LAYOUT_ROW || g->k->n_rranges == 0) return PTC_OK;
  int64_t r = 1, v, max_pl = persist_max_per_lane();
  for (uint32_t d = 0; d < g->k->n_rranges; d++) {
    if (!sym_is_const(g->k->rranges[d], &v)) return PTC_OK;
    r = sat_mul(r, v);
  }
  if (r <= 0 || max_pl <= 0) return PTC_OK;
  /* short rows of 2-byte elements: a looped row walks memory three times
   * (layer norm: mean, variance, output) one dependent load step after
   * another, with few rows in flight (GPT-2/BERT: 2048 rows of 768); in
   * registers the row is loaded once, every load of a lane issued at once */
  const bool short_narrow = r <= short_row_max() && widest_row_elem(g, false) < 4;
  if (short_narrow && !getenv_set("PTC_CUDA_PERSIST") && max_pl < SHORT_ROW_PER_LANE)
    max_pl = SHORT_ROW_PER_LANE;
  uint32_t lanes = g->lanes;
  while ((r + lanes - 1) / lanes > max_pl && persist_wide() && lanes < PERSIST_WIDE_LANES)
    lanes *= 2;
  int64_t per_lane = (r + lanes - 1) / lanes;
  if (g->rvec > 1) per_lane = (per_lane + g->rvec - 1) / g->rvec * g->rvec;
  if (per_lane > max_pl) return PTC_OK;
  size_t nb = g->n_buffers;
  int32_t* gid = calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof *gid);
  int32_t* first_g = malloc((nb ? nb : 1) * sizeof *first_g);
  bool* multi = calloc(nb ? nb : 1, sizeof *multi);
  bool* bad = calloc(nb ? nb : 1, sizeof *bad);
  if (!gid || !first_g || !multi || !bad) {
    free(gid);
    free(first_g);
    free(multi);
    free(bad);
    return ptc_status_oom();
  }
  int32_t* last_g = malloc((nb ? nb : 1) * sizeof *last_g);
  uint32_t* n_groups = calloc(nb ? nb : 1, sizeof *n_groups); /* loops that access b */
  if (!last_g || !n_groups) {
    free(gid);
    free(first_g);
    free(multi);
    free(bad);
    free(last_g);
    free(n_groups);
    return ptc_status_oom();
  }
  for (size_t b = 0; b < nb; b++) first_g[b] = last_g[b] = -1;
  ptc_status st = assign_groups(g, gid);
  for (uint32_t m = 0; !st && m < g->k->n_nodes; m++) {
    cug_member_begin(g, m);
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE)) continue;
      int32_t b = op->buf;
      if (g->s->buf_home[b] == SCHED_HOME_LOCAL) continue;
      if (mb->stage[i] != CU_LOOP || gid[m] < 0 || (op->opcode == IR_LOAD && op->args[0] >= 0)) {
        bad[b] = true;
        continue;
      }
      if (last_g[b] != gid[m]) {
        last_g[b] = gid[m];
        n_groups[b]++;
      }
      ptc_strbuf idx;
      /* printed as the loops will print it; an index through an indirect
       * value (named only while emitting) is not cached */
      if (!index_text(g, op->index, &idx)) {
        bad[b] = true;
      } else if (first_g[b] < 0) {
        first_g[b] = gid[m];
        g->cache_key[b] = idx.data; /* taken over */
        idx.data = NULL;
      } else {
        if (strcmp(g->cache_key[b], idx.data) != 0) bad[b] = true;
        if (first_g[b] != gid[m]) multi[b] = true;
      }
      ptc_sb_free(&idx);
    }
  }
  uint32_t n_cached = 0;
  bool saves_store = false, narrow = false, two_pass = true;
  for (size_t b = 0; st && b < nb; b++) bad[b] = true;
  for (size_t b = 0; b < nb; b++) {
    if (!multi[b] || bad[b]) continue;
    n_cached++;
    if (n_groups[b] != 2) two_pass = false;
    if (ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype) < 4) narrow = true;
    if (g->s->buf_home[b] == SCHED_HOME_SLOT && g->s->buf_free_after &&
        g->s->buf_free_after[b] == (int32_t)g->kidx)
      saves_store = true;
  }
  /* Measured on the H100 with vector rows (8192x4096 / 16384x4096, ms):
   * rows held in registers pay when they remove an intermediate's write and
   * re-read (softmax f32 0.096 -> 0.094, bf16 0.077 -> 0.069) and when
   * they spare re-reads of 4-byte rows (layer norm f32 0.112 -> 0.095,
   * rmsnorm f32 0.122 -> 0.093), not for re-reads of 2-byte rows (var_mean
   * bf16 0.051 -> 0.061), which hit L2 cheaply. PTC_CUDA_PERSIST_ALL=1
   * persists every eligible row, =0 only those that spare a store. */
  const char* all = getenv("PTC_CUDA_PERSIST_ALL");
  /* 2-byte rows read in two loops and written (rms norm: the sum of
   * squares, then the output) do pay in registers with OCC_2PASS resident
   * threads (H100 GPU time, bf16 8192x4096 rms norm, two runs: 48.9 ->
   * 48.1 / 48.2 us; without the bound 53.3; layer norm, read in three
   * loops, 49.3 -> 50.1 and stays looped); PTC_CUDA_PERSIST_2PASS=0 not */
  two_pass = two_pass && n_cached && narrow && !short_narrow && stores_rows(g) &&
             env_knob("PTC_CUDA_PERSIST_2PASS", 1, 0, 1) && !(all && !strcmp(all, "0"));
  bool want = saves_store || ((!narrow || short_narrow) && !(all && !strcmp(all, "0"))) ||
              (all && !strcmp(all, "1")) || two_pass;
  if (!want) n_cached = 0;
  if (n_cached && (int64_t)n_cached * per_lane <= persist_max_regs()) {
    g->persist = (uint32_t)per_lane;
    g->persist_2pass = two_pass && !saves_store;
    if (lanes != g->lanes) { /* a row widened to fit: rows per block to keep 256+ threads */
      g->lanes = lanes;
      uint32_t bt = row_block_threads(lanes);
      g->slots = lanes >= bt ? 1 : bt / lanes;
      out->block_x = lanes;
      out->block_y = g->slots;
      out->slots = g->slots;
    }
    for (size_t b = 0; b < nb; b++) {
      if (!multi[b] || bad[b]) continue;
      g->cache[b] = 1;
      g->no_store[b] = g->s->buf_home[b] == SCHED_HOME_SLOT && g->s->buf_free_after &&
                       g->s->buf_free_after[b] == (int32_t)g->kidx;
    }
  }
  free(gid);
  free(first_g);
  free(multi);
  free(bad);
  free(last_g);
  free(n_groups);
  return st;
}

/* ---- prefetched rows -------------------------------------------------------------------
 * A block of a persistent vector-row kernel walks several tiles (grid
 * stride); between a tile's loads and its stores lie the combines (block
 * barriers) and the epilogue, during which the block has nothing in
 * flight. With prefetch, each persistent row buffer that the kernel only
 * reads is loaded one tile ahead: the next tile's row goes into registers
 * pf_b<id>[it][VR] (storage type) right after the loop that consumed the
 * current one, and the first tile's before the tile loop. Buffer ids below
 * 64 (a bit set per kernel). The grid is then capped at the resident blocks
 * (cuda_kernel_src.grid_per_sm), so that every block walks several tiles.
 * PTC_CUDA_PREFETCH=1 / =0 forces it on / off; =-1 turns it on for rows of
 * at least PREFETCH_MIN_ROW elements whose prefetched buffers all have
 * 2-byte elements (H100, bf16 softmax 8192x4096: 0.0649 -> 0.0623 ms with
 * 3 blocks of 256 per SM; float32 rows lost: 0.0932 -> 0.1007). That was
 * the default until the short-row / reciprocal changes of e5438d3; since
 * then the same softmax takes 55.4 us with prefetch and 48.7 us without
 * (H100 GPU time, 4 blocks of 256 per SM), so the default is off
 * (PREFETCH_DEFAULT). */
#define PREFETCH_MIN_ROW 2048
#define PREFETCH_DEFAULT 0

static void prefetch_plan(cug* g) {
  memset(g->prefetch, 0, g->n_buffers * sizeof *g->prefetch);
  long mode = env_knob("PTC_CUDA_PREFETCH", PREFETCH_DEFAULT, -1, 1);
  if (!g->persist || g->rvec <= 1 || g->split || g->inplace_hazard || mode == 0) return;
  int64_t r = 1, v;
  for (uint32_t d = 0; d < g->k->n_rranges; d++)
    r = sym_is_const(g->k->rranges[d], &v) ? sat_mul(r, v) : 0;
  bool narrow = true, any = false;
  for (size_t b = 0; b < g->n_buffers && b < 64; b++) {
    g->prefetch[b] = g->cache[b] && g->rvec_buf[b] && !g->stored[b] && g->rvec_key[b];
    if (!g->prefetch[b]) continue;
    any = true;
    if (ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype) != 2) narrow = false;
  }
  if (any && mode < 0 && (!narrow || r < PREFETCH_MIN_ROW))
    memset(g->prefetch, 0, g->n_buffers * sizeof *g->prefetch);
}

/* Prefetched buffers whose row registers are not filled yet in this tile. */
static uint64_t prefetch_pending(const cug* g) {
  uint64_t m = 0;
  for (size_t b = 0; b < g->n_buffers && b < 64; b++)
    if (g->prefetch[b] && g->cache[b] == 1) m |= (uint64_t)1 << b;
  return m;
}

/* Loads the rows of buffers `bufs` (bit set) of tile `tile` (an IT
 * expression; past the last tile nothing is read) into pf_b<id>: the
 * tile's outer point and loop variables are redeclared in a scope of their
 * own, so the buffers' in-loop indices print as they do in the loops. */
static void emit_prefetch(cug* g, uint64_t bufs, const char* tile) {
  if (!bufs) return;
  cug_line(g, &g->body, "{ /* prefetch */");
  g->indent++;
  cug_line(g, &g->body, "IT xo = (%s) * (IT)%u + (IT)slot;", tile, g->slots);
  cug_line(g, &g->body, "const IT rlim = xo < xn ? rn : (IT)0;");
  cug_line(g, &g->body, "if (xo >= xn) xo = xn > 0 ? xn - 1 : (IT)0;");
  emit_decompose(g, "xo", "x", g->k->ranges, g->k->n_ranges);
  cug_line(g, &g->body, "#pragma unroll");
  cug_line(g, &g->body, "for (int it = 0; it < %u / VR; it++) {", g->persist);
  g->indent++;
  cug_line(g, &g->body, "const IT rb = ((IT)lane + (IT)(it * %u)) * (IT)VR;", g->lanes);
  cug_line(g, &g->body, "if (rb < rlim) {");
  g->indent++;
  cug_line(g, &g->body, "const IT r0 = rb;");
  cug_line(g, &g->body, "(void)r0;");
  for (size_t b = 0; b < g->n_buffers && b < 64; b++) {
    if (!(bufs >> b & 1)) continue;
    cug_line(g, &g->body, "ptc_vload<%s, VR>(b%d + (%s), pf_b%d[it]);",
             cu_storage_type(ir_buf(g->p, (int32_t)b)->dtype), (int)b, g->rvec_key[b], (int)b);
  }
  g->indent--;
  cug_line(g, &g->body, "}");
  g->indent--;
  cug_line(g, &g->body, "}");
  g->indent--;
  cug_line(g, &g->body, "}");
}

/* ---- occupancy ---------------------------------------------------------------------------
 * A reduction kernel's registers (rows held in registers, the scalar VR = 1
 * body next to the vector one) decide how many blocks an SM holds, and so
 * how many rows are in flight. __launch_bounds__(threads, min_blocks) makes
 * the compiler fit min_blocks blocks: a target of resident threads per SM
 * divided by the block's threads. The bound is a cap, not a floor: a kernel
 * that needs few registers may get more under a low bound (fewer blocks),
 * so by default only persistent rows get one - 1024 threads per SM (H100,
 * softmax 8192x4096: f32 0.1035 -> 0.0932 ms, bf16 0.0991 -> 0.0649; their
 * kernels took 92 registers, 2 blocks of 256), 768 with prefetched rows
 * (their second row's registers) - and looped read-only 2-byte rows read
 * twice (OCC_REREAD); PTC_CUDA_OCC overrides (0 = no bound).
 * The grid of a reduction kernel is capped at grid_per_sm blocks per SM:
 * PTC_CUDA_GRID (1..1024), else with prefetched rows the resident blocks
 * (min_blocks, or 2048 / threads without it), else for rows of 4-byte
 * elements CUDA_CG_ROW_GRID_4B, else the default cap (cuda_tune.c: 4 waves of
 * 2048 / threads, 32 blocks of 256). CUDA_CG_ROW_GRID_4B: H100, GPU us a call
 * (bench/row_gap_gpu.sh, 11 interleaved rounds, session 22), f32 16384x4096
 * row_sum 88.68 -> 87.42 (32 -> 64 blocks an SM; 96, 128 and 1024 the same
 * within 0.2), var_mean 89.39 -> 88.45, layer norm 8192x4096 93.03 ->
 * 92.68, softmax and rms norm level; a 64 cap on 2-byte rows: row_sum,
 * layer and rms norm 0.8-1.6% faster, but var_mean 50.28 -> 53.42 and
 * softmax 48.94 -> 50.39, so they keep the default. Raising occupancy
 * instead (PTC_CUDA_OCC=2048: 32 registers, 95% achieved against 61%)
 * made f32 row_sum slower, 88.43 -> 90.80. */
#define OCC_PERSIST 1024
#define OCC_PREFETCH 768
#define OCC_2PASS 2048 /* persist_2pass rows (rms norm): 8 blocks of 256 */
/* looped 2-byte rows read in two or more loops and not written (var_mean:
 * the mean, then the variance, the second loop reading the row back from
 * the caches): 4 blocks of 256 (H100 GPU time, bf16 16384x4096 var_mean,
 * two runs: 50.21 -> 47.31 and 50.55 -> 47.58 us; 768 and 1280 resident
 * threads the same within 0.3; bf16 layer and rms norm, which write their
 * rows, lost 6-9% under such a bound; row sums, one loop, gained 0.5%) */
#define OCC_REREAD 1024
/* more than OCC_WIDE_REGS row elements a lane in registers (short 2-byte
 * rows, 24-32 a buffer): a bound for OCC_WIDE threads, so 64 registers a
 * thread do not force spills */
#define OCC_WIDE_REGS 32
#define OCC_WIDE 512

/* The kernel's row loops (loop groups of assign_groups: var_mean's mean
 * loop, then its variance loop); 0 when that cannot be worked out. */
static uint32_t row_loops(const cug* g) {
  int32_t* gid = calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof *gid);
  if (!gid) return 0;
  uint32_t n = 0;
  ptc_status st = assign_groups(g, gid);
  int32_t last = -1;
  for (uint32_t m = 0; !st && m < g->k->n_nodes; m++)
    if (gid[m] >= 0 && gid[m] != last) {
      last = gid[m];
      n++;
    }
  ptc_status_destroy(st);
  free(gid);
  return n;
}

static void occupancy_plan(cug* g, cuda_kernel_src* out) {
  g->min_blocks = 0;
  if (g->layout == CUDA_LAYOUT_POINTWISE) return;
  uint32_t threads = out->block_x * out->block_y;
  if (!threads) return;
  bool pf = false;
  for (size_t b = 0; b < g->n_buffers; b++) pf |= g->prefetch[b];
  long occ = env_knob("PTC_CUDA_OCC", -1, 0, 2048);
  uint32_t cached = 0; /* row elements a lane holds in registers */
  for (size_t b = 0; b < g->n_buffers; b++) cached += g->cache[b] ? g->persist : 0;
  if (occ < 0)
    occ = pf                          ? OCC_PREFETCH
          : cached > OCC_WIDE_REGS      ? OCC_WIDE
          : g->persist && g->persist_2pass ? OCC_2PASS
          : g->persist                  ? OCC_PERSIST
          : g->layout == CUDA_LAYOUT_ROW && widest_row_elem(g, false) < 4 && !stores_rows(g) &&
                  row_loops(g) >= 2
              ? OCC_REREAD
              : 0;
  uint32_t mb = (uint32_t)(occ / threads);
  if (mb > 1) g->min_blocks = mb > 32 ? 32 : mb;
  long grid = env_knob("PTC_CUDA_GRID", 0, 0, 1024);
  if (grid > 0)
    out->grid_per_sm = (uint32_t)grid;
  else if (pf)
    out->grid_per_sm = g->min_blocks ? g->min_blocks : 2048 / threads;
  else if (g->layout == CUDA_LAYOUT_ROW && widest_row_elem(g, true) == 4)
    out->grid_per_sm = CUDA_CG_ROW_GRID_4B;
}

/* ---- vector rows ------------------------------------------------------------------------
 * A ROW kernel over one reduction dim whose in-loop accesses of a buffer
 * are all at one index r + base with base a multiple of V for every outer
 * point (contiguous rows, aligned row starts: x * R with R % V == 0, or a
 * weight at r) reads that buffer with one 16-byte vector per lane step
 * (V = 16 / the widest such element) and writes it likewise. Buffers both
 * read and written by the kernel, masked loads, 1-byte elements and
 * accesses outside the loops keep scalar accesses. The entry point takes
 * the vector body only when rn % V == 0 and every such buffer is aligned
 * (checked per launch); else the same body with VR = 1. PTC_CUDA_RVEC=0
 * turns it off. */

/* Whether index e is rv + (a multiple of V for every value of its other
 * variables), each variable with a static coefficient. */
static bool rvec_index_ok(const cug* g, const sym_expr* e, const sym_expr* rv, int64_t v) {
  int64_t c;
  if (!cug_coef(e, rv, &c) || c != 1) return false;
  size_t nv = sym_num_vars(g->p->env);
  int64_t* zero = calloc(nv ? nv : 1, sizeof *zero);
  if (!zero) return false;
  bool ok = true;
  for (size_t i = 0; ok && i < nv; i++) {
    const sym_expr* var = sym_var(g->p->env, i);
    if (!var || var == rv) continue;
    if (!cug_coef(e, var, &c)) ok = false;
    else if (c % v != 0) ok = false;
  }
  int64_t k = 0;
  if (ok) {
    ptc_status st = sym_eval(e, zero, nv, &k);
    if (st) {
      ptc_status_destroy(st);
      ok = false;
    } else {
      ok = k % v == 0;
    }
  }
  free(zero);
  return ok;
}

static bool rvec_enabled(void) {
  const char* e = getenv("PTC_CUDA_RVEC");
  return !e || !*e || strcmp(e, "0") != 0;
}

/* The default load hint of vector rows (PTC_CUDA_ROW_LD): 2
 * (ld.global.nc.L1::no_allocate) for rows of 4-byte elements that the
 * kernel only reads (row sums, var_mean's two passes), else 0 (plain).
 * H100, 16384x4096, GPU us a call (bench/knob_sweep.py, 11 interleaved
 * rounds, session 16): f32 row_sum 90.2 -> 88.3, f32 var_mean 89.3 ->
 * 88.3; but f32 softmax (written rows) 90.7 -> 92.2, bf16 var_mean 50.1 ->
 * 51.3 (bf16 row_sum 47.2 -> 46.2). */
static long row_ld_default(const cug* g) {
  return g->rvec == 4 && !stores_rows(g) ? 2 : 0;
}

static ptc_status rvec_plan(cug* g) {
  g->rvec = 0;
  if (g->layout != CUDA_LAYOUT_ROW || g->k->n_rranges != 1 || g->inplace_hazard || !rvec_enabled())
    return PTC_OK;
  size_t nb = g->n_buffers;
  bool* bad = calloc(nb ? nb : 1, sizeof *bad);
  uint8_t* acc = calloc(nb ? nb : 1, 1); /* 1 loaded, 2 stored, 4 loaded before stored */
  if (!bad || !acc) {
    free(bad);
    free(acc);
    return ptc_status_oom();
  }
  size_t widest = 0;
  for (int pass = 0; pass < 2; pass++) {
    int64_t v = widest ? (int64_t)(16 / widest) : 1;
    for (uint32_t m = 0; m < g->k->n_nodes; m++) {
      cug_member_begin(g, m);
      const cu_member* mb = &g->members[m];
      const sym_expr* rv =
          mb->kind == CU_MEM_INNER ? g->p->xvars[g->k->n_ranges] : g->p->rvars[0];
      for (uint32_t i = 0; i < mb->node->body.n; i++) {
        const ir_op* op = &mb->node->body.ops[i];
        if (!mb->live[i] || (op->opcode != IR_LOAD && op->opcode != IR_STORE)) continue;
        int32_t b = op->buf;
        if (g->s->buf_home[b] == SCHED_HOME_LOCAL || bad[b]) continue;
        size_t es = ptc_dtype_size(ir_buf(g->p, b)->dtype);
        if (pass == 0) {
          if (op->opcode == IR_LOAD && !(acc[b] & 2)) acc[b] |= 4; /* read before written */
          acc[b] |= op->opcode == IR_LOAD ? 1 : 2;
          if (mb->kind == CU_MEM_OUTER || mb->stage[i] != CU_LOOP || es < 2 || es > 8 ||
              (op->opcode == IR_LOAD && op->args[0] >= 0) || !rvec_index_ok(g, op->index, rv, 1)) {
            bad[b] = true;
            continue;
          }
          note_rvec_key(g, op->index, b, bad);
        } else if (!rvec_index_ok(g, op->index, rv, v)) {
          bad[b] = true;
        }
      }
    }
    if (pass == 0) {
      for (size_t b = 0; b < nb; b++) {
        /* written, then read back: each lane reads the elements it wrote
         * (one index, the same lane mapping in every loop); read first,
         * then written: scalar */
        if ((acc[b] & 3) == 3 && (acc[b] & 4)) bad[b] = true;
        if (acc[b] && !bad[b] && ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype) > widest)
          widest = ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype);
      }
      if (!widest) break;
    }
  }
  uint32_t n = 0;
  for (size_t b = 0; b < nb; b++) {
    g->rvec_buf[b] = widest && acc[b] && !bad[b];
    n += g->rvec_buf[b];
  }
  if (n) g->rvec = (uint32_t)(16 / widest);
  if (g->rvec > 1) io_hints(g, env_knob("PTC_CUDA_ROW_LD", row_ld_default(g), 0, 4), 0);
  free(bad);
  free(acc);
  return PTC_OK;
}

/* A buffer the kernel writes and then reads back is a vector row buffer only
 * when its row stays in registers (the reads hit them): a looped row would
 * read it at the start of a step, before that step's vector store. */
static void rvec_rw_fix(cug* g) {
  if (g->rvec <= 1) return;
  for (size_t b = 0; b < g->n_buffers; b++) {
    if (!g->rvec_buf[b] || !g->stored[b] || g->cache[b]) continue;
    for (uint32_t m = 0; m < g->k->n_nodes && g->rvec_buf[b]; m++) {
      const cu_member* mb = &g->members[m];
      for (uint32_t i = 0; i < mb->node->body.n; i++) {
        const ir_op* op = &mb->node->body.ops[i];
        if (mb->live[i] && op->opcode == IR_LOAD && op->buf == (int32_t)b) g->rvec_buf[b] = false;
      }
    }
  }
}

/* ---- split reductions -------------------------------------------------------------------
 * Few huge rows leave most SMs idle with a block per row. A ROW kernel with
 * at most SPLIT_MAX_ROWS rows (hints) of at least SPLIT_MIN_ROW elements
 * whose members are one reduction group followed only by outer members
 * (sums, means, max, argmax, any/all, several reductions of the same row;
 * not softmax / var, whose later loops need the reduced value) is split:
 * about PTC_CUDA_SPLIT (default 1024; 0 = off) blocks over all rows, at
 * least SPLIT_MIN_CHUNK elements each. */
#define SPLIT_MAX_ROWS 256
#define SPLIT_MIN_ROW 16384
#define SPLIT_MIN_CHUNK 2048
#define SPLIT_MAX 512

/* Column reductions (COL layout) over so few columns that their tiles
 * leave most SMs idle (at most COL_SPLIT_MAX_TILES tiles of 32 columns) and
 * many rows: each tile's rows are cut into chunks of at least
 * COL_SPLIT_MIN_CHUNK rows, a block per (tile, chunk), about PTC_CUDA_SPLIT
 * blocks in all; the per-column partials go to the module workspace and the
 * last block of a tile (a per-tile counter) folds them in chunk order.
 * Measured on the H100 with 128 tiles (a [16384, 4096] column sum) the
 * split lost: bf16 0.0546 -> 0.0578 ms with 2 chunks a tile, 0.0695 with 8;
 * f32 0.0924 -> 0.0958 / 0.1054 - hence the tile limit (the many-tile case
 * keeps one block per tile; the few-tile case is not measured). */
#define COL_SPLIT_MIN_CHUNK 256
#define COL_SPLIT_MAX_TILES 16

/* The members are one reduction group followed only by outer members. */
static bool one_group_then_outer(const cug* g) {
  bool in_group = false, closed = false, any_reduce = false;
  group gr = {0, calloc(g->k->n_nodes ? g->k->n_nodes : 1, sizeof(uint32_t))};
  if (!gr.m) return false;
  bool ok = true;
  for (uint32_t m = 0; ok && m < g->k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    if (mb->kind == CU_MEM_OUTER) {
      if (!in_group) ok = false;
      closed = true;
      continue;
    }
    if (closed || group_feeds(g, &gr, m)) ok = false;
    in_group = true;
    gr.m[gr.n++] = m;
    for (uint32_t i = 0; i < mb->node->body.n; i++)
      if (mb->live[i] && mb->node->body.ops[i].opcode == IR_REDUCE) any_reduce = true;
  }
  free(gr.m);
  return ok && any_reduce;
}

static void split_plan(cug* g, cuda_kernel_src* out) {
  if (g->cvec) return; /* vector columns: their own split (cvec_plan) */
  g->split = 0;
  bool col = g->layout == CUDA_LAYOUT_COL && g->lanes > 1;
  if ((g->layout != CUDA_LAYOUT_ROW && !col) || g->persist || g->inplace_hazard) return;
  if (!col && g->slots != 1) return;
  const char* e = getenv("PTC_CUDA_SPLIT");
  long target = e && *e ? strtol(e, NULL, 10) : 1024;
  if (target <= 0) return;
  int64_t xh = hint_product(g, g->k->ranges, g->k->n_ranges);
  int64_t rh = hint_product(g, g->k->rranges, g->k->n_rranges);
  if (col) {
    int64_t tiles = (xh + g->slots - 1) / g->slots;
    if (tiles > COL_SPLIT_MAX_TILES) return;
    int64_t sp = (target + tiles - 1) / (tiles > 0 ? tiles : 1);
    if (sp > rh / COL_SPLIT_MIN_CHUNK) sp = rh / COL_SPLIT_MIN_CHUNK;
    if (sp > SPLIT_MAX) sp = SPLIT_MAX;
    if (sp < 2 || !one_group_then_outer(g)) return;
    g->split = (uint32_t)sp;
    /* columns the workspace holds, plus one scratch row for the idle
     * columns of a tile's last block */
    g->split_rows = (uint32_t)(2 * xh < 16 ? 16 : 2 * xh) + 1;
    out->split = g->split;
    return;
  }
  if (xh > SPLIT_MAX_ROWS || rh < SPLIT_MIN_ROW || !one_group_then_outer(g)) return;
  int64_t sp = (target + xh - 1) / (xh > 0 ? xh : 1);
  if (sp > rh / SPLIT_MIN_CHUNK) sp = rh / SPLIT_MIN_CHUNK;
  if (sp > SPLIT_MAX) sp = SPLIT_MAX;
  if (sp < 2) return;
  g->split = (uint32_t)sp;
  g->split_rows = (uint32_t)(2 * xh < 16 ? 16 : 2 * xh);
  out->split = g->split;
}

/* A split column kernel: tasks (tile of columns, chunk cid); the idle
 * columns of the last tile (xvalid false) fold an empty range and publish
 * at the scratch workspace row. More columns than the workspace holds
 * (dynamic sizes above the hints): unsplit (S = 1). */
static ptc_status emit_split_columns(cug* g) {
  cug_line(g, &g->body, "const int lane = threadIdx.y, slot = threadIdx.x;");
  cug_line(g, &g->body, "const IT S = xn <= (IT)%u ? (IT)%u : (IT)1;", g->split_rows - 1, g->split);
  cug_line(g, &g->body, "const IT rchunk = (IT)((((i64)rn + (i64)S - 1) / (i64)S + %u) / %u * %u);",
           g->lanes - 1, g->lanes, g->lanes);
  cug_line(g, &g->body, "const IT ntiles = (xn + (IT)%u) / (IT)%u;", g->slots - 1, g->slots);
  cug_line(g, &g->body, "for (IT task = (IT)blockIdx.x; task < ntiles * S; task += (IT)gridDim.x) {");
  g->indent++;
  cug_line(g, &g->body, "const IT tile = task / S;");
  cug_line(g, &g->body, "const IT cid = task - tile * S;");
  cug_line(g, &g->body, "IT xo = tile * (IT)%u + (IT)slot;", g->slots);
  cug_line(g, &g->body, "const bool xvalid = xo < xn;");
  cug_line(g, &g->body, "if (!xvalid) xo = xn - 1;");
  cug_line(g, &g->body, "const IT xw = xvalid ? xo : (IT)%u;", g->split_rows - 1);
  cug_line(g, &g->body, "ptc_kerr* const ke = xvalid ? kerr : (ptc_kerr*)0;");
  cug_line(g, &g->body, "const i64 rb64 = (i64)cid * (i64)rchunk;");
  cug_line(g, &g->body, "const IT rbeg = rb64 < (i64)rn ? (IT)rb64 : rn;");
  cug_line(g, &g->body, "const IT rlim = !xvalid ? rbeg : rn - rbeg < rchunk ? rn : rbeg + rchunk;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "(void)xw;");
  emit_decompose(g, "xo", "x", g->k->ranges, g->k->n_ranges);
  ptc_status s = emit_point_body(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  return s;
}

/* A split kernel: tasks (row xo, chunk cid) over the grid; a chunk is a
 * multiple of the lane step, so vector steps stay aligned. Rows beyond the
 * workspace (dynamic sizes above the hints) run unsplit (S = 1). */
static ptc_status emit_split_reduction(cug* g) {
  cug_line(g, &g->shared, "__shared__ int sp_last;");
  if (g->layout == CUDA_LAYOUT_COL) {
    ptc_sb_printf(&g->globals, "__device__ unsigned %s_cnt[%u];\n", g->kname, g->split_rows);
    return emit_split_columns(g);
  }
  ptc_sb_printf(&g->globals, "__device__ unsigned %s_cnt[%u];\n", g->kname, g->split_rows);
  cug_line(g, &g->body, "const int lane = threadIdx.x;");
  cug_line(g, &g->body, "const int slot = 0;");
  cug_line(g, &g->body, "(void)slot;");
  cug_line(g, &g->body, "const IT S = xn <= (IT)%u ? (IT)%u : (IT)1;", g->split_rows, g->split);
  cug_line(g, &g->body, "const IT rstep = (IT)%u * (IT)VR;", g->lanes);
  cug_line(g, &g->body, "const IT rchunk = (IT)((((i64)rn + (i64)S - 1) / (i64)S + (i64)rstep - 1) / (i64)rstep * (i64)rstep);");
  cug_line(g, &g->body, "for (IT task = (IT)blockIdx.x; task < xn * S; task += (IT)gridDim.x) {");
  g->indent++;
  cug_line(g, &g->body, "const IT xo = task / S;");
  cug_line(g, &g->body, "const IT cid = task - xo * S;");
  cug_line(g, &g->body, "const bool xvalid = true;");
  cug_line(g, &g->body, "ptc_kerr* const ke = kerr;");
  cug_line(g, &g->body, "const i64 rb64 = (i64)cid * (i64)rchunk;");
  cug_line(g, &g->body, "const IT rbeg = rb64 < (i64)rn ? (IT)rb64 : rn;");
  cug_line(g, &g->body, "const IT rlim = rn - rbeg < rchunk ? rn : rbeg + rchunk;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "(void)xvalid;");
  emit_decompose(g, "xo", "x", g->k->ranges, g->k->n_ranges);
  ptc_status s = emit_point_body(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  return s;
}

static ptc_status emit_cvec(cug* g);

static ptc_status emit_reduction(cug* g) {
  if (g->cvec) return emit_cvec(g);
  if (g->split) return emit_split_reduction(g);
  bool row = g->layout == CUDA_LAYOUT_ROW;
  cug_line(g, &g->body, "const int lane = %s, slot = %s;", row ? "threadIdx.x" : "threadIdx.y",
           row ? "threadIdx.y" : "threadIdx.x");
  cug_line(g, &g->body, "(void)lane;");
  uint64_t all_pf = 0;
  for (size_t b = 0; b < g->n_buffers && b < 64; b++)
    if (g->prefetch[b]) {
      all_pf |= (uint64_t)1 << b;
      cug_line(g, &g->body, "%s pf_b%d[%u / VR][VR];",
               cu_storage_type(ir_buf(g->p, (int32_t)b)->dtype), (int)b, g->persist);
    }
  emit_prefetch(g, all_pf, "(IT)blockIdx.x");
  cug_line(g, &g->body, "for (IT tile = (IT)blockIdx.x; tile * (IT)%u < xn; tile += (IT)gridDim.x) {",
           g->slots);
  g->indent++;
  cug_line(g, &g->body, "IT xo = tile * (IT)%u + (IT)slot;", g->slots);
  cug_line(g, &g->body, "const bool xvalid = xo < xn;");
  cug_line(g, &g->body, "if (!xvalid) xo = xn - 1;");
  cug_line(g, &g->body, "ptc_kerr* const ke = xvalid ? kerr : (ptc_kerr*)0;");
  cug_line(g, &g->body, "const IT rlim = xvalid ? rn : (IT)0;");
  cug_line(g, &g->body, "(void)ke;");
  cug_line(g, &g->body, "(void)rlim;");
  emit_decompose(g, "xo", "x", g->k->ranges, g->k->n_ranges);
  for (size_t b = 0; g->persist && b < g->n_buffers; b++) {
    if (!g->cache[b]) continue;
    g->cache[b] = 1;
    cug_line(g, &g->body, "%s c_b%d[%u];", cu_ctype(cu_cls_of(ir_buf(g->p, (int32_t)b)->dtype)),
             (int)b, g->persist);
  }
  ptc_status s = emit_point_body(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  return s;
}

/* ---- vector columns ----------------------------------------------------------------------
 * A COL kernel over 2-byte columns reads 64 bytes a warp a row with one
 * scalar load a thread (H100, bf16 [16384, 4096] column sum: 85% of the
 * copy bandwidth). With vector columns each thread takes VR = 16 / (the
 * widest such element) adjacent columns: the buffers read in the
 * reduction loop at an index with coefficient 1 on the innermost outer
 * var (other coefficients and the offset multiples of VR) are loaded with
 * one 16-byte ptc_vload a row step at the group's first column, the
 * per-column statements run in an unrolled loop over the VR columns with
 * the accumulators in arrays, and the lanes' partials are combined in
 * shared memory as in the scalar kernel. Blocks are CVEC_X groups by
 * CVEC_Y row lanes; when the column tiles (CVEC_X * VR columns) fill few
 * blocks, the rows are split as in the scalar column split (a block per
 * (tile, chunk), partials in the module workspace, the last block of a
 * tile folds them in chunk order) to about PTC_CUDA_COL_VEC_SPLIT blocks.
 * H100 GPU time, bf16 [16384, 4096] column sum (scalar kernel 53.0 us in
 * two runs, Inductor 50.4): 32x8 blocks, 512 blocks (32 chunks a tile)
 * 51.4 us in one run, 56.1 in the next (with the fold's loop unrolled,
 * since removed; 528 blocks 57.0, 64x8 with 256 blocks 52.9); 256 blocks
 * 56.4, 1024 56.5 / 58.4, 2048 66.3; 32x16 62.9, 64x4 68.6 / 63.1, 128x2
 * 94.3, 16x16 57.7; unroll 8 55.5. f32 columns: scalar 90.4 us, vector
 * 91.5 (512 blocks), 96.7 (1024). Session 9: the tile's last block folds
 * the partials with __ldcg loads in an unrolled loop of a static trip count
 * (the volatile loads of the old fold waited for each other: 32 chunks by 8
 * lanes, 8 columns a thread = 32 L2 round trips at the end of the kernel),
 * and the workspace is element-major (slot e * NG + group, NG = (WSC - 1) /
 * VR) so that a warp publishes and folds 32 adjacent floats (old layout and
 * fold: PTC_CUDA_COL_VEC_FOLD=0). H100, bf16 [16384, 4096] column sum,
 * GPU time (bench/model_kernels.py, one call, two runs of the default):
 * 49.75 / 50.18 us (89% of the profiler's 3018 GB/s copy), old fold 51.50,
 * scalar kernel 52.96 / 53.00, Inductor 50.61; splits of 256 / 1024 / 2048
 * blocks 67.6 / 59.6 / 70.0, unroll 8 53.9, unroll 2 50.3, blocks 32x16
 * 56.9, 64x4 69.5. On by default for 2-byte columns (CVEC_DEFAULT_MODE 2;
 * tests/cuda/test_cuda_rows.c's CVEC_DEFAULT_ON follows it): test_cuda_gpu
 * (3 random seeds + the op cases) and test_cuda_rows passed with it there.
 * Kernels whose members are one group of reductions followed only by
 * outer members (column sums, means, max/min, argmax), no indirect ops.
 * The entry takes VR = cvec when the innermost outer size is a multiple
 * of it (static, or xnumel checked per launch for one outer dim) and each
 * vector buffer is 16-byte aligned, else the same body with VR = 1.
 * Knobs (read at code generation): PTC_CUDA_COL_VEC=0 off, =1 every dtype,
 * =2 elements narrower than 4 bytes (the default, CVEC_DEFAULT_MODE);
 * PTC_CUDA_COL_VEC_BLOCK="X,Y"; PTC_CUDA_COL_VEC_SPLIT=N (0 = no split;
 * PTC_CUDA_SPLIT=0 also turns it off); PTC_CUDA_COL_UNROLL (default
 * CVEC_UNROLL); PTC_CUDA_COL_VEC_FOLD=0 the old fold (above).
 * Session 11: the vector loads are ld.global.nc.L1::no_allocate
 * (PTC_CUDA_COL_VEC_LD, io_hints; 0 = plain) and the tasks chunk-major
 * (PTC_CUDA_COL_VEC_ORDER=1: blocks b and b + 1 read the same rows' next
 * column tile; 0 = tile-major). H100, same kernel and run, GPU / wall us a
 * call (model_kernels --calls 200 --wall): plain, tile-major 54.1 / 56.2
 * and 53.9 / 56.1 (this run's copy 3015 GB/s; session 9 saw 49.8-50.2 GPU
 * in other runs); ld 1 / 2 / 3 / 4: 49.6 / 51.0, 49.5 / 50.8, 49.5 / 51.1,
 * 49.7 / 51.2; chunk-major 53.1 / 55.4, with ld 2 48.8 / 50.5 (the
 * default); splits of 264 / 396 / 528 / 1056 blocks 52.3 / 53.8 / 53.7 /
 * 67.2, unroll 8 56.7, unroll 2 57.2, blocks 32x4 67.8, 32x16 (256
 * blocks) 54.7. NVRTC time: the fold's chunk bound is the constant split
 * (S is split or 1) and the VR = 1 entry's row loop stays rolled: 0.33 ->
 * 0.24 s cpu on the GPU machine (0.16 s without the fold, 0.10 a row sum);
 * fresh-process first call 0.30-0.35 s (session 10: 0.51). */
#define CVEC_DEFAULT_MODE 2
#define CVEC_X 32
#define CVEC_Y 8
#define CVEC_SPLIT 512
#define CVEC_UNROLL 4
#define CVEC_MIN_ROWS_PER_LANE 16
#define CVEC_FOLD_UNROLL 4
#define CVEC_LD 2    /* PTC_CUDA_COL_VEC_LD: the vector loads' cache hint (io_hints) */
#define CVEC_ORDER 1 /* PTC_CUDA_COL_VEC_ORDER: 0 task = tile * S + chunk, 1 chunk * tiles + tile */

static void cvec_block(uint32_t* x, uint32_t* y) {
  *x = CVEC_X;
  *y = CVEC_Y;
  env_block_shape("PTC_CUDA_COL_VEC_BLOCK", 2, x, y);
}

static ptc_status cvec_plan(cug* g, cuda_kernel_src* out) {
  g->cvec = 0;
  const sched_kernel* k = g->k;
  if (g->layout != CUDA_LAYOUT_COL || g->lanes <= 1 || g->inplace_hazard || k->n_ranges == 0 ||
      k->n_rranges == 0)
    return PTC_OK;
  long mode = env_knob("PTC_CUDA_COL_VEC", CVEC_DEFAULT_MODE, 0, 2);
  if (mode == 0 || !one_group_then_outer(g)) return PTC_OK;
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    if (mb->kind == CU_MEM_INNER) return PTC_OK;
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (!mb->live[i]) continue;
      if (op->opcode == IR_INDIRECT) return PTC_OK;
      if (mb->kind == CU_MEM_REDUCTION && mb->stage[i] == CU_LOOP && op->opcode == IR_STORE)
        return PTC_OK;
    }
  }
  int64_t inner = 0;
  bool dyn = !sym_is_const(k->ranges[k->n_ranges - 1], &inner);
  if (dyn && k->n_ranges > 1) return PTC_OK;
  const sym_expr* xv = g->p->xvars[k->n_ranges - 1];
  size_t nb = g->n_buffers;
  bool* bad = calloc(nb ? nb : 1, sizeof *bad);
  bool* acc = calloc(nb ? nb : 1, sizeof *acc);
  if (!bad || !acc) {
    free(bad);
    free(acc);
    return ptc_status_oom();
  }
  size_t widest = 0;
  for (int pass = 0; pass < 2; pass++) {
    int64_t v = widest ? (int64_t)(16 / widest) : 1;
    for (uint32_t m = 0; m < k->n_nodes; m++) {
      cug_member_begin(g, m);
      const cu_member* mb = &g->members[m];
      if (mb->kind != CU_MEM_REDUCTION) continue;
      for (uint32_t i = 0; i < mb->node->body.n; i++) {
        const ir_op* op = &mb->node->body.ops[i];
        if (!mb->live[i] || op->opcode != IR_LOAD || mb->stage[i] != CU_LOOP) continue;
        int32_t b = op->buf;
        if (g->s->buf_home[b] == SCHED_HOME_LOCAL || bad[b]) continue;
        size_t es = ptc_dtype_size(ir_buf(g->p, b)->dtype);
        if (pass == 0) {
          if (g->stored[b] || op->args[0] >= 0 || es < 2 || es > 8 ||
              !rvec_index_ok(g, op->index, xv, 1)) {
            bad[b] = true;
            continue;
          }
          acc[b] = true;
          note_rvec_key(g, op->index, b, bad);
        } else if (!rvec_index_ok(g, op->index, xv, v)) {
          bad[b] = true;
        }
      }
    }
    if (pass == 0) {
      for (size_t b = 0; b < nb; b++)
        if (acc[b] && !bad[b] && ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype) > widest)
          widest = ptc_dtype_size(ir_buf(g->p, (int32_t)b)->dtype);
      if (!widest) break;
    }
  }
  uint32_t n = 0, V = widest ? (uint32_t)(16 / widest) : 0;
  bool ok = widest && V >= 2 && (mode == 1 || widest < 4) && (dyn || inner % V == 0);
  for (size_t b = 0; b < nb; b++) {
    g->rvec_buf[b] = ok && acc[b] && !bad[b];
    n += g->rvec_buf[b];
  }
  free(bad);
  free(acc);
  if (!n) return PTC_OK;
  g->cvec = V;
  g->cvec_dyn = dyn;
  uint32_t cx, cy;
  cvec_block(&cx, &cy);
  uint32_t per = 0; /* shared combine bytes a column (as choose_layout) */
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    const cu_member* mb = &g->members[m];
    for (uint32_t i = 0; i < mb->node->body.n; i++) {
      const ir_op* op = &mb->node->body.ops[i];
      if (mb->live[i] && op->opcode == IR_REDUCE)
        per += op->rtype == IR_R_ARGMAX || op->rtype == IR_R_ARGMIN ? 16 : 8;
    }
  }
  while (cy > 2 && (uint64_t)per * cx * (cy + 1) * V > 40000) cy /= 2;
  if ((uint64_t)per * cx * (cy + 1) * V > 40000) {
    memset(g->rvec_buf, 0, g->n_buffers * sizeof *g->rvec_buf);
    g->cvec = 0;
    return PTC_OK;
  }
  g->slots = cx;
  g->lanes = cy;
  out->block_x = cx;
  out->block_y = cy;
  out->slots = cx * V;
  /* the split over rows */
  g->split = 0;
  long target = env_knob("PTC_CUDA_COL_VEC_SPLIT", CVEC_SPLIT, 0, 1 << 20);
  const char* se = getenv("PTC_CUDA_SPLIT");
  if (se && *se && strtol(se, NULL, 10) <= 0) target = 0;
  int64_t xh = hint_product(g, k->ranges, k->n_ranges);
  int64_t rh = hint_product(g, k->rranges, k->n_rranges);
  int64_t tiles = (xh + (int64_t)out->slots - 1) / (int64_t)out->slots;
  if (target > 0 && tiles > 0) {
    int64_t sp = (target + tiles - 1) / tiles;
    int64_t by_rows = rh / ((int64_t)CVEC_MIN_ROWS_PER_LANE * cy);
    if (sp > by_rows) sp = by_rows;
    if (sp > SPLIT_MAX) sp = SPLIT_MAX;
    if (sp >= 2) {
      g->split = (uint32_t)sp;
      g->split_rows = (uint32_t)(2 * xh < 16 ? 16 : 2 * xh) + 1;
      out->split = g->split;
    }
  }
  return PTC_OK;
}

/* The per-column block of a vector column kernel: opens the unrolled loop
 * over the VR columns of the thread's group, binds the accumulators and
 * (with_x) decomposes the column's outer point. Leaves the indent inside;
 * the caller closes one brace. */
static void cvec_open_columns(cug* g, const group* gr, bool with_x) {
  cug_line(g, &g->body, "#pragma unroll");
  cug_line(g, &g->body, "for (int e = 0; e < VR; e++) {");
  g->indent++;
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_cvec(g, &g->body, false);
  }
  if (with_x) {
    cug_line(g, &g->body, "const IT xo = xg + (IT)e;");
    emit_decompose(g, "xo", "x", g->k->ranges, g->k->n_ranges);
  }
}

static void cvec_close(cug* g) {
  g->indent--;
  cug_line(g, &g->body, "}");
}

/* The lanes' combine of a vector column kernel: one shared-memory round
 * (two barriers) for all columns and reductions of the group; again (the
 * split's fold) in the buffers of the first round. */
static void cvec_combine(cug* g, const group* gr, bool again) {
  uint32_t base = again ? g->cvec_comb0 : g->n_combines;
  g->cvec_comb0 = base;
  g->cvec_comb = base;
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_cvec_combine(g, &g->body, again ? 2 : 0);
  }
  cug_line(g, &g->body, "__syncthreads();");
  g->cvec_comb = base;
  for (uint32_t j = 0; j < gr->n; j++) {
    cug_member_begin(g, gr->m[j]);
    cug_emit_acc_cvec_combine(g, &g->body, 1);
  }
  cug_line(g, &g->body, "__syncthreads();");
}

/* A vector column kernel (see cvec_plan): tasks (tile of CVEC_X * VR
 * columns[, row chunk]) over the grid. */
static ptc_status emit_cvec(cug* g) {
  const sched_kernel* k = g->k;
  bool sp = g->split > 1;
  group gr = {0, calloc(k->n_nodes ? k->n_nodes : 1, sizeof(uint32_t))};
  if (!gr.m) return ptc_status_oom();
  for (uint32_t m = 0; m < k->n_nodes; m++)
    if (g->members[m].kind != CU_MEM_OUTER) gr.m[gr.n++] = m;
  cug_line(g, &g->body, "const int lane = threadIdx.y, slot = threadIdx.x;");
  cug_line(g, &g->body, "const IT W = (IT)(%u * VR);", g->slots);
  io_hints(g, env_knob("PTC_CUDA_COL_VEC_LD", CVEC_LD, 0, 4), 0);
  if (sp) {
    cug_line(g, &g->shared, "__shared__ int sp_last;");
    ptc_sb_printf(&g->globals, "__device__ unsigned %s_cnt[%u];\n", g->kname, g->split_rows);
    cug_line(g, &g->body, "enum { WSC = %u };", g->split_rows);
    cug_line(g, &g->body, "const IT S = xn <= (IT)%u ? (IT)%u : (IT)1;", g->split_rows - 1, g->split);
    cug_line(g, &g->body, "const IT rchunk = (IT)((((i64)rn + (i64)S - 1) / (i64)S + %u) / %u * %u);",
             g->lanes - 1, g->lanes, g->lanes);
    cug_line(g, &g->body, "const IT ntiles = (xn + W - (IT)1) / W;");
    cug_line(g, &g->body, "for (IT task = (IT)blockIdx.x; task < ntiles * S; task += (IT)gridDim.x) {");
    g->indent++;
    if (env_knob("PTC_CUDA_COL_VEC_ORDER", CVEC_ORDER, 0, 1)) {
      /* chunk-major: neighbouring blocks read the same rows' column tiles */
      cug_line(g, &g->body, "const IT cid = task / ntiles;");
      cug_line(g, &g->body, "const IT tile = task - cid * ntiles;");
    } else {
      cug_line(g, &g->body, "const IT tile = task / S;");
      cug_line(g, &g->body, "const IT cid = task - tile * S;");
    }
  } else {
    cug_line(g, &g->body, "for (IT tile = (IT)blockIdx.x; tile * W < xn; tile += (IT)gridDim.x) {");
    g->indent++;
  }
  /* xn % VR == 0 (the entry's test): a group is all in range or all out */
  cug_line(g, &g->body, "IT xg = tile * W + (IT)slot * (IT)VR;");
  cug_line(g, &g->body, "const bool xvalid = xg < xn;");
  cug_line(g, &g->body, "if (!xvalid) xg = xn - (IT)VR;");
  cug_line(g, &g->body, "ptc_kerr* const ke = xvalid ? kerr : (ptc_kerr*)0;");
  if (sp) {
    cug_line(g, &g->body, "const i64 rb64 = (i64)cid * (i64)rchunk;");
    cug_line(g, &g->body, "const IT rbeg = rb64 < (i64)rn ? (IT)rb64 : rn;");
    cug_line(g, &g->body, "const IT rlim = !xvalid ? rbeg : rn - rbeg < rchunk ? rn : rbeg + rchunk;");
  } else {
    cug_line(g, &g->body, "const IT rbeg = 0;");
    cug_line(g, &g->body, "const IT rlim = xvalid ? rn : (IT)0;");
  }
  cug_line(g, &g->body, "(void)ke;");
  for (uint32_t j = 0; j < gr.n; j++) member_comment(g, gr.m[j]);
  for (uint32_t j = 0; j < gr.n; j++) {
    cug_member_begin(g, gr.m[j]);
    cug_emit_acc_cvec(g, &g->body, true);
  }
  /* the row loop: the vector loads at the group's first column, then the
   * per-column statements */
  int un = getenv_set("PTC_CUDA_COL_UNROLL") || getenv_set("PTC_CUDA_UNROLL") ? loop_unroll(g)
                                                                              : CVEC_UNROLL;
  /* the VR = 1 entry (misaligned or ragged columns: rare) rolled, for
   * NVRTC time */
  if (un > 1) cug_line(g, &g->body, "#pragma unroll (VR > 1 ? %d : 1)", un);
  cug_line(g, &g->body, "for (IT rl = rbeg + (IT)lane; rl < rlim; rl += (IT)%u) {", g->lanes);
  g->indent++;
  emit_decompose(g, "rl", "r", k->rranges, k->n_rranges);
  for (size_t b = 0; b < g->n_buffers; b++)
    if (g->rvec_buf[b])
      cug_line(g, &g->body, "%s vin_b%d[VR];", cu_storage_type(ir_buf(g->p, (int32_t)b)->dtype), (int)b);
  cug_line(g, &g->body, "{");
  g->indent++;
  cug_line(g, &g->body, "const IT xo = xg;");
  emit_decompose(g, "xo", "x", k->ranges, k->n_ranges);
  for (size_t b = 0; b < g->n_buffers; b++)
    if (g->rvec_buf[b])
      cug_line(g, &g->body, "%s%s, VR>(b%d + (%s), vin_b%d);", g->vld,
               cu_storage_type(ir_buf(g->p, (int32_t)b)->dtype), (int)b, g->rvec_key[b], (int)b);
  g->indent--;
  cug_line(g, &g->body, "}");
  cvec_open_columns(g, &gr, true);
  for (uint32_t j = 0; j < gr.n; j++) {
    cug_member_begin(g, gr.m[j]);
    cug_emit_stage(g, &g->body, CU_PRE);
    g->rvec_loop = true;
    cug_emit_stage(g, &g->body, CU_LOOP);
    cug_emit_acc_updates(g, &g->body);
    g->rvec_loop = false;
  }
  cvec_close(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  /* the lanes' combine of every column; split: the chunk's partials, at
   * cid * WSC + column (coalesced), folded by the tile's last block */
  cvec_combine(g, &gr, false);
  /* the workspace slot of column xg + e: column-major (xg + e) with the
   * old fold (PTC_CUDA_COL_VEC_FOLD=0), else element-major (e * NG + the
   * group), so that a warp's slots publish and fold 32 adjacent floats */
  bool fast = env_knob("PTC_CUDA_COL_VEC_FOLD", 1, 0, 1) != 0;
  char xw[160];
  if (fast)
    snprintf(xw, sizeof xw, "const IT xw = xvalid ? (IT)e * (IT)((WSC - 1) / VR) + xg / (IT)VR : (IT)%u;",
             g->split_rows - 1);
  else
    snprintf(xw, sizeof xw, "const IT xw = xvalid ? xg + (IT)e : (IT)%u;", g->split_rows - 1);
  if (sp) {
    cug_line(g, &g->body, "if (S > 1) {");
    g->indent++;
    cvec_open_columns(g, &gr, false);
    cug_line(g, &g->body, "%s", xw);
    for (uint32_t j = 0; j < gr.n; j++) {
      cug_member_begin(g, gr.m[j]);
      cug_emit_acc_split(g, &g->body, true, "cid * (IT)WSC + xw", "S");
    }
    cvec_close(g);
    cug_line(g, &g->body, "__threadfence();");
    cug_line(g, &g->body, "__syncthreads();");
    cug_line(g, &g->body, "if (lane == 0 && slot == 0) sp_last = atomicAdd(&%s_cnt[tile], 1u) == (unsigned)(S - 1);",
             g->kname);
    cug_line(g, &g->body, "__syncthreads();");
    cug_line(g, &g->body, "if (!sp_last) continue;");
    cug_line(g, &g->body, "__threadfence();");
    cvec_open_columns(g, &gr, false);
    cug_line(g, &g->body, "%s", xw);
    g->split_qstride = "(IT)WSC";
    g->split_fold_fast = fast ? CVEC_FOLD_UNROLL : 0;
    /* S == split here (S is split or 1): a constant bound */
    char sn[24];
    snprintf(sn, sizeof sn, "(IT)%u", g->split);
    for (uint32_t j = 0; j < gr.n; j++) {
      cug_member_begin(g, gr.m[j]);
      cug_emit_acc_split(g, &g->body, false, "xw", sn);
    }
    g->split_qstride = NULL;
    g->split_fold_fast = 0;
    cvec_close(g);
    cvec_combine(g, &gr, true);
    cug_line(g, &g->body, "if (lane == 0 && slot == 0) %s_cnt[tile] = 0u;", g->kname);
    g->indent--;
    cug_line(g, &g->body, "}");
  }
  /* results and the epilogue per column */
  cvec_open_columns(g, &gr, true);
  for (uint32_t j = 0; j < gr.n; j++) {
    cug_member_begin(g, gr.m[j]);
    cug_emit_stage(g, &g->body, CU_PRE);
    cug_emit_acc_finalize(g, &g->body);
    cug_emit_stage(g, &g->body, CU_POST);
  }
  for (uint32_t m = 0; m < k->n_nodes; m++) {
    if (g->members[m].kind != CU_MEM_OUTER) continue;
    member_comment(g, m);
    cug_member_begin(g, m);
    cug_emit_stage(g, &g->body, CU_PRE);
  }
  cvec_close(g);
  g->indent--;
  cug_line(g, &g->body, "}");
  free(gr.m);
  return PTC_OK;
}

/* ---- up-front checks ------------------------------------------------------------------------ */

static bool inner_may_be_empty(const cug* g) {
  for (uint32_t d = 0; d < g->k->n_rranges; d++) {
    int64_t lo, hi;
    sym_bounds(g->p->env, g->k->rranges[d], &lo, &hi);
    if (lo <= 0) return true;
  }
  return false;
}

static void emit_checks(cug* g) {
  g->indent = 1;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) cug_member_indirect_checks(g, m);
  if (!has_reduction_loops(g) || !inner_may_be_empty(g)) return;
  for (uint32_t m = 0; m < g->k->n_nodes; m++) {
    if (!cug_member_needs_nonempty(g, m)) continue;
    cug_line(g, &g->checks, "if (rn == 0 && xn > 0) {");
    cug_line(g, &g->checks, "  if (first) ptc_fail(kerr, PTC_KERR_EMPTY, %d, (i64)xn, 0);",
             g->members[m].node_index);
    cug_line(g, &g->checks, "  return;");
    cug_line(g, &g->checks, "}");
    g->uses_err = true;
    return;
  }
}

/* ---- index width ------------------------------------------------------------------------------ */

/* Storage extent of buffer b in elements when every size is static. */
static bool static_extent(const ir_buffer* b, int64_t* out) {
  int64_t v, e = 1;
  if (b->numel && sym_is_const(b->numel, &v)) {
    *out = v;
    return true;
  }
  if (!b->offset || !sym_is_const(b->offset, &e)) return false;
  e += 1;
  for (uint32_t d = 0; d < b->rank; d++) {
    int64_t sh, st;
    if (!sym_is_const(b->shape[d], &sh) || !sym_is_const(b->strides[d], &st)) return false;
    if (sh == 0) {
      *out = 0;
      return true;
    }
    int64_t span = sat_mul(sh - 1, st);
    e = span > INT64_MAX - e ? INT64_MAX : e + span;
  }
  *out = e;
  return true;
}

/* Which entry points to emit: with every size static only the one needed. */
static void choose_widths(const cug* g, cuda_kernel_src* out) {
  int64_t v, ext = 1;
  bool stat = true;
  for (uint32_t d = 0; d < g->k->n_ranges && stat; d++)
    stat = sym_is_const(g->k->ranges[d], &v) && ((ext = sat_mul(ext, v)), true);
  for (uint32_t d = 0; d < g->k->n_rranges && stat; d++)
    stat = sym_is_const(g->k->rranges[d], &v) && ((ext = sat_mul(ext, v)), true);
  for (uint32_t j = 0; j < out->n_bufs && stat; j++) {
    stat = static_extent(ir_buf(g->p, out->bufs[j]), &v);
    if (v > ext) ext = v;
  }
  out->has_i32 = !stat || ext < I32_LIMIT;
  out->has_i64 = !stat || ext >= I32_LIMIT;
}

/* ---- assembly -------------------------------------------------------------------------------- */

static void emit_params(const cug* g, const cuda_kernel_src* out, ptc_strbuf* sb) {
  for (uint32_t j = 0; j < out->n_bufs; j++) {
    int32_t b = out->bufs[j];
    const char* c = g->stored[b] ? "" : "const ";
    const char* r = shares_slot(g, out, b) ? "" : " __restrict__";
    ptc_sb_printf(sb, "%s%s*%s b%d, ", c, cu_storage_type(ir_buf(g->p, b)->dtype), r, (int)b);
  }
  for (uint32_t j = 0; j < out->n_syms; j++)
    ptc_sb_printf(sb, "i64 %s_a, ", g->vars[out->syms[j]].name);
  ptc_sb_append(sb, "i64 xnumel, i64 rnumel, ptc_kerr* kerr, u64 seed");
}

static void emit_args(const cug* g, const cuda_kernel_src* out, ptc_strbuf* sb) {
  for (uint32_t j = 0; j < out->n_bufs; j++) ptc_sb_printf(sb, "b%d, ", (int)out->bufs[j]);
  for (uint32_t j = 0; j < out->n_syms; j++) ptc_sb_printf(sb, "%s_a, ", g->vars[out->syms[j]].name);
  ptc_sb_append(sb, "xnumel, rnumel, kerr, seed");
}

static ptc_status collect_syms(cug* g, cuda_kernel_src* out) {
  uint32_t n = 0;
  for (size_t v = 0; v < g->n_vars; v++) n += g->vars[v].role == CU_VAR_SIZE && g->vars[v].used;
  out->syms = malloc((n ? n : 1) * sizeof *out->syms);
  if (!out->syms) return ptc_status_oom();
  for (size_t v = 0; v < g->n_vars; v++)
    if (g->vars[v].role == CU_VAR_SIZE && g->vars[v].used) out->syms[out->n_syms++] = (uint32_t)v;
  return PTC_OK;
}

/* Which ptc_pdl_enter variant (cuda_prelude.cuh) generated kernels open
 * with: PTC_CUDA_PDL_TRIGGER=after (wait, then trigger the next launch) or
 * first (trigger, then wait); by default only the wait (the trigger is each
 * block's exit). */
static const char* pdl_entry_suffix(void) {
  const char* e = getenv("PTC_CUDA_PDL_TRIGGER");
  if (e && strcmp(e, "first") == 0) return "_first";
  if (e && strcmp(e, "after") == 0) return "_after";
  return "";
}

static ptc_status assemble(cug* g, cuda_kernel_src* out) {
  ptc_strbuf src;
  ptc_sb_init(&src);
  ptc_sb_printf(&src, "// libptc generated kernel (%s)\n", PTC_CUDA_CODEGEN_VERSION);
  ptc_sb_append(&src, ptc_cuda_prelude_text);
  ptc_sb_printf(&src, "\n// kernel %u: %s (%s%s, block %ux%u)\n", g->kidx, g->k->name,
                g->layout == CUDA_LAYOUT_POINTWISE
                    ? (g->vec_width ? "vectorised pointwise" : "pointwise")
                : g->layout == CUDA_LAYOUT_ROW     ? "row reduction"
                                                   : "column reduction",
                g->rvec > 1 ? ", vector rows" : g->cvec > 1 ? ", vector columns" : "",
                out->block_x, out->block_y);
  if (g->split)
    ptc_sb_printf(&src, "// split: %u chunks a %s, workspace for %u %s\n", g->split,
                  g->layout == CUDA_LAYOUT_COL ? "column tile" : "row", g->split_rows,
                  g->layout == CUDA_LAYOUT_COL ? "columns" : "rows");
  ptc_sb_append(&src, g->globals.data ? g->globals.data : "");
  ptc_sb_printf(&src, "template <typename IT, int VR>\n__device__ __forceinline__ void %s_body(",
                out->name);
  emit_params(g, out, &src);
  ptc_sb_append(&src, ") {\n");
  for (uint32_t j = 0; j < out->n_syms; j++) {
    const char* nm = g->vars[out->syms[j]].name;
    ptc_sb_printf(&src, "  const IT %s = (IT)%s_a;\n", nm, nm);
  }
  ptc_sb_append(&src, "  const IT xn = (IT)xnumel, rn = (IT)rnumel;\n"
                      "  const bool first = blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0;\n"
                      "  (void)rn;\n  (void)first;\n  (void)seed;\n");
  ptc_sb_append(&src, g->shared.data ? g->shared.data : "");
  ptc_sb_append(&src, g->checks.data ? g->checks.data : "");
  ptc_sb_append(&src, g->body.data ? g->body.data : "");
  ptc_sb_append(&src, "}\n");
  uint32_t threads = out->max_threads ? out->max_threads : out->block_x * out->block_y;
  for (int w = 0; w < 2; w++) {
    if (!(w ? out->has_i64 : out->has_i32)) continue;
    if (g->min_blocks > 1)
      ptc_sb_printf(&src, "extern \"C\" __global__ void __launch_bounds__(%u, %u) %s_i%d(",
                    threads, g->min_blocks, out->name, w ? 64 : 32);
    else
      ptc_sb_printf(&src, "extern \"C\" __global__ void __launch_bounds__(%u) %s_i%d(", threads,
                    out->name, w ? 64 : 32);
    emit_params(g, out, &src);
    ptc_sb_printf(&src, ") {\n  ptc_pdl_enter%s();\n", pdl_entry_suffix());
    const char* it = w ? "i64" : "i32";
    if (g->rvec > 1 || g->cvec > 1) {
      /* the vector body when the row length (the columns) and the
       * alignments allow */
      if (g->rvec > 1)
        ptc_sb_printf(&src, "  if (rnumel %% %u == 0", g->rvec);
      else
        ptc_sb_printf(&src, "  if (%s", g->cvec_dyn ? "xnumel % " : "true");
      if (g->cvec > 1 && g->cvec_dyn) ptc_sb_printf(&src, "%u == 0", g->cvec);
      for (uint32_t j = 0; j < out->n_bufs; j++) {
        int32_t b = out->bufs[j];
        if (!g->rvec_buf[b]) continue;
        ptc_sb_printf(&src, " && (reinterpret_cast<u64>(b%d) & %zu) == 0", (int)b,
                      ptc_dtype_size(ir_buf(g->p, b)->dtype) * (g->rvec > 1 ? g->rvec : g->cvec) - 1);
      }
      ptc_sb_printf(&src, ") {\n    %s_body<%s, %u>(", out->name, it, g->rvec > 1 ? g->rvec : g->cvec);
      emit_args(g, out, &src);
      ptc_sb_append(&src, ");\n    return;\n  }\n");
    }
    ptc_sb_printf(&src, "  %s_body<%s, 1>(", out->name, it);
    emit_args(g, out, &src);
    ptc_sb_append(&src, ");\n}\n");
  }
  if (src.oom || g->body.oom || g->checks.oom || g->shared.oom || g->globals.oom) {
    ptc_sb_free(&src);
    return ptc_status_oom();
  }
  out->source = ptc_sb_take(&src);
  return out->source ? PTC_OK : ptc_status_oom();
}

/* ---- entry ------------------------------------------------------------------------------------ */

static ptc_status check_args(const ir_program* p, const sched_plan* s, uint32_t k,
                             cuda_kernel_src* out) {
  if (!p || !s || !out) return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: NULL argument");
  if (k >= s->n_kernels)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: kernel %u of %u", k, s->n_kernels);
  if (s->kernels[k].is_extern)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: kernel %u (%s) is an extern call", k,
                   s->kernels[k].name);
  if (s->kernels[k].n_ranges > PTC_MAX_RANK || s->kernels[k].n_rranges > PTC_MAX_RANK)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: kernel %u has too many loops", k);
  return PTC_OK;
}

static ptc_status gen_init(cug* g, const ir_program* p, const sched_plan* s, uint32_t k) {
  memset(g, 0, sizeof *g);
  g->p = p;
  g->s = s;
  g->k = &s->kernels[k];
  g->kidx = k;
  ptc_sb_init(&g->body);
  ptc_sb_init(&g->checks);
  ptc_sb_init(&g->shared);
  ptc_sb_init(&g->globals);
  snprintf(g->vld, sizeof g->vld, "ptc_vload<");
  snprintf(g->vst, sizeof g->vst, "ptc_vstore<");
  g->n_buffers = p->buffers.len;
  size_t nb = g->n_buffers ? g->n_buffers : 1;
  g->stored = calloc(nb, sizeof *g->stored);
  g->in_reg = calloc(nb, sizeof *g->in_reg);
  g->outer_reread = calloc(nb, sizeof *g->outer_reread);
  g->vec_buf = calloc(nb, sizeof *g->vec_buf);
  g->cache = calloc(nb, sizeof *g->cache);
  g->cache_key = calloc(nb, sizeof *g->cache_key);
  g->no_store = calloc(nb, sizeof *g->no_store);
  g->prefetch = calloc(nb, sizeof *g->prefetch);
  g->rvec_buf = calloc(nb, sizeof *g->rvec_buf);
  g->rvec_key = calloc(nb, sizeof *g->rvec_key);
  if (!g->stored || !g->in_reg || !g->outer_reread || !g->vec_buf || !g->cache || !g->cache_key ||
      !g->no_store || !g->prefetch || !g->rvec_buf || !g->rvec_key)
    return ptc_status_oom();
  PTC_TRY(cug_vars_init(g));
  return cug_members_init(g);
}

static void gen_free(cug* g) {
  cug_members_free(g);
  free(g->stored);
  free(g->in_reg);
  free(g->outer_reread);
  free(g->vec_buf);
  free(g->cache);
  for (size_t b = 0; g->cache_key && b < g->n_buffers; b++) free(g->cache_key[b]);
  free(g->cache_key);
  free(g->no_store);
  free(g->prefetch);
  free(g->rvec_buf);
  for (size_t b = 0; g->rvec_key && b < g->n_buffers; b++) free(g->rvec_key[b]);
  free(g->rvec_key);
  free(g->vars);
  ptc_sb_free(&g->body);
  ptc_sb_free(&g->checks);
  ptc_sb_free(&g->shared);
  ptc_sb_free(&g->globals);
}

static bool any_shared_slot(const cug* g, const cuda_kernel_src* out) {
  for (uint32_t j = 0; j < out->n_bufs; j++)
    if (shares_slot(g, out, out->bufs[j])) return true;
  return false;
}

ptc_status cuda_codegen_kernel(const ir_program* p, const sched_plan* s, uint32_t k,
                               cuda_kernel_src* out) {
  char name[32];
  snprintf(name, sizeof name, "ptc_k%u", k);
  return cuda_codegen_kernel_named(p, s, k, name, out);
}

ptc_status cuda_codegen_kernel_named(const ir_program* p, const sched_plan* s, uint32_t k,
                                     const char* name, cuda_kernel_src* out) {
  PTC_TRY(check_args(p, s, k, out));
  memset(out, 0, sizeof *out);
  if (!name || strlen(name) > 40)
    return PTC_ERR(INVALID_ARGUMENT, "cuda_codegen_kernel: bad kernel name");
  snprintf(out->name, sizeof out->name, "%s", name);
  cug g;
  ptc_status st = gen_init(&g, p, s, k);
  snprintf(g.kname, sizeof g.kname, "%s", name);
  if (!st) st = collect_buffers(&g, out);
  if (!st) {
    choose_layout(&g, out);
    vec_plan(&g);
    pw_grid_plan(&g, out);
    if (g.vec_width) out->slots = out->block_x * g.vec_width * pw_unroll(&g);
    g.inplace_hazard = g.layout != CUDA_LAYOUT_POINTWISE && any_shared_slot(&g, out);
    if (!g.inplace_hazard) st = rvec_plan(&g);
    if (!st && !g.inplace_hazard) st = persist_plan(&g, out);
    if (!st) rvec_rw_fix(&g);
    if (!st) st = cvec_plan(&g, out);
    if (!st) split_plan(&g, out);
    if (!st) prefetch_plan(&g);
    if (!st) occupancy_plan(&g, out);
  }
  if (!st) {
    emit_checks(&g);
    g.indent = 1;
    if (g.layout != CUDA_LAYOUT_POINTWISE)
      st = emit_reduction(&g);
    else
      st = g.vec_width ? emit_pointwise_vec(&g, out) : emit_pointwise(&g, out);
  }
  if (!st) st = g.err;
  if (!st) st = collect_syms(&g, out);
  if (!st) {
    out->layout = g.layout;
    out->uses_err = g.uses_err;
    choose_widths(&g, out);
    st = assemble(&g, out);
  }
  if (st != g.err) ptc_status_destroy(g.err);
  gen_free(&g);
  if (st) cuda_kernel_src_free(out);
  return st;
}

void cuda_kernel_src_free(cuda_kernel_src* src) {
  if (!src) return;
  free(src->source);
  free(src->bufs);
  free(src->syms);
  src->source = NULL;
  src->bufs = NULL;
  src->syms = NULL;
  src->n_bufs = src->n_syms = 0;
}
