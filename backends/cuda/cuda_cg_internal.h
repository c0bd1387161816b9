/* cuda_cg_internal.h - private interfaces of the CUDA code generator
 * (cuda_cg_*.c): the generator state shared by the kernel emitter, the body
 * emitter and the index printer, value classes, the member analysis.
 *
 * Structure of a generated kernel body (cuda_cg_kernel.c): declarations
 * (size symbols as IT), uniform up-front checks, then the layout's loop over
 * outer points. Per outer point the member nodes run in "groups" as in the
 * cpu backend: a group is a run of reduction / inner pointwise members
 * sharing one loop over the reduction index; a member that needs a reduced
 * value of the current group, or an outer pointwise member, closes it.
 * Names: op values t<m>_<i>, accumulators a<m>_<i> (+ ai.. for the index of
 * argmax/argmin), register copies of buffers v_<buf> (kernel-local buffers,
 * and outer-level stores that later members of the kernel read), vector
 * staging arrays vin_<buf> / vout_<buf> (vectorised pointwise kernels).
 */
#ifndef PTC_BACKENDS_CUDA_CG_INTERNAL_H
#define PTC_BACKENDS_CUDA_CG_INTERNAL_H

#include "cuda_cg.h"

/* ---- value classes: the CUDA type a dtype is computed in ------------------ */
typedef enum cu_cls {
  CU_F32 = 0, /* f16, bf16, f32: float */
  CU_F64,     /* f64: double */
  CU_INT,     /* i8..i64, u8: i64, wrapped to the dtype after each op */
  CU_BOOL     /* bool: u8 holding 0/1 */
} cu_cls;

typedef enum cu_var_role { CU_VAR_NONE = 0, CU_VAR_SIZE, CU_VAR_X, CU_VAR_R, CU_VAR_INDIRECT } cu_var_role;
typedef enum cu_stage { CU_PRE = 0, CU_LOOP, CU_POST } cu_stage;
typedef enum cu_member_kind { CU_MEM_REDUCTION = 0, CU_MEM_INNER, CU_MEM_OUTER } cu_member_kind;

typedef struct cu_var {
  uint8_t role;     /* cu_var_role */
  bool used;        /* size symbol referenced (passed as an argument) */
  uint32_t k;       /* X/R: loop dim; SIZE: env index */
  char name[48];    /* SIZE: "s0"; INDIRECT: the checked index variable */
} cu_var;

typedef struct cu_member {
  const ir_node* node;
  int32_t node_index;
  uint8_t kind;     /* cu_member_kind */
  uint8_t* stage;   /* per op: cu_stage */
  uint8_t* live;    /* per op: emitted */
} cu_member;

typedef struct cug {
  const ir_program* p;
  const sched_plan* s;
  const sched_kernel* k;
  uint32_t kidx;
  ptc_strbuf body;
  ptc_strbuf checks;
  ptc_strbuf shared;        /* __shared__ declarations of the combine buffers */
  int indent;
  ptc_status err;
  size_t n_buffers;
  bool* stored;             /* buffer id -> stored by this kernel (global memory) */
  bool* in_reg;             /* buffer id -> its value is in v_<buf> now */
  bool* outer_reread;       /* buffer id -> stored at outer level and read again here */
  size_t n_vars;
  cu_var* vars;
  cu_member* members;
  cu_member* cur;
  uint32_t member;
  int32_t node_index;
  bool rename_x;            /* inner pointwise member: x_{n+k} prints as r_k */
  uint8_t layout;           /* cuda_layout */
  uint32_t lanes, slots;    /* reduction layouts: lanes per outer point, points per block */
  bool in_loop;             /* emitting the reduction loop's statements */
  bool uses_err, inplace_hazard;
  uint32_t n_combines;      /* shared combine buffers declared */
  /* vectorised pointwise kernels (cuda_cg_kernel.c, vec_plan) */
  uint32_t vec_width;       /* elements per vector access; 0 = not vectorised */
  bool* vec_buf;            /* buffer id -> accessed at the flat index (vin_/vout_ arrays) */
  bool vec_mode;            /* emitting the body of the vector path */
  bool fast_trig;           /* the vector path's f32 sin / cos: ptc_*_v (th: recompute) */
  const sym_expr* flat;     /* the flat index of the outer loops (vectorised kernels) */
  /* vec_inner: the innermost loop's size is a static multiple of
   * vec_width, so a chunk lies in one innermost row: its outer point is
   * decomposed once (xb<d>) and a buffer read at another index with
   * coefficient 1 on the innermost var (a broadcast bias, a transposed
   * input) is read with one vector access into vix_b<id>[vec_width]; such
   * buffers are marked in rvec_buf with their index in rvec_key (the ROW
   * layouts' arrays, unused by pointwise kernels) */
  bool vec_inner;
  /* persistent rows (ROW layout, static row length: cuda_cg_kernel.c,
   * persist_plan): each lane's elements of a row stay in registers
   * c_b<id>[it] between the reduction loops, which are unrolled */
  uint32_t persist;         /* elements per lane (loop trip count); 0 = off */
  uint8_t* cache;           /* buffer id -> 0 not cached, 1 cached (empty), 2 filled */
  char** cache_key;         /* buffer id -> the one index it is accessed at, as printed */
  bool* no_store;           /* buffer id -> dead after this kernel: the registers suffice */
  bool* prefetch;           /* buffer id -> a persistent row loaded one tile ahead into
                             * pf_b<id> (cuda_cg_kernel.c, prefetch_plan) */
  bool persist_2pass;       /* persistent 2-byte rows read in exactly two loops (rms
                             * norm): the occupancy target OCC_2PASS (cuda_cg_kernel.c) */
  uint32_t min_blocks;      /* reduction layouts: __launch_bounds__ minimum blocks per SM
                             * (register cap for occupancy); 0 = none */
  /* vector row access (ROW layout, cuda_cg_kernel.c, rvec_plan): the body
   * is a template over VR (elements per lane step); the entry runs VR =
   * rvec when the row length and every rvec buffer's alignment allow, else
   * VR = 1. Each lane step covers VR consecutive elements of the row: a
   * buffer of rvec_buf is read with one ptc_vload into vin_b<id>[VR] (or
   * written through vout_b<id>[VR]) at its one in-loop index rvec_key */
  uint32_t rvec;            /* vector width in elements; 0/1 = scalar rows */
  bool* rvec_buf;           /* buffer id -> accessed as a vector in the row loops */
  char** rvec_key;          /* buffer id -> its in-loop index, as printed (pointwise: the
                             * vec_inner index) */
  bool rvec_loop;           /* emitting the per-element body of a vector row loop */
  /* split reductions (ROW layout, cuda_cg_kernel.c, split_plan): a row is
   * cut into `split` chunks of one block each; rows up to split_rows use
   * the module workspace (globals: its __device__ declarations) */
  uint32_t split;           /* chunks per row; 0 = off */
  uint32_t split_rows;      /* rows the workspace holds (more: one chunk a row) */
  ptc_strbuf globals;       /* module-scope declarations (split workspace) */
  /* vector columns (COL layout: cuda_cg_kernel.c, cvec_plan): each thread
   * takes VR adjacent outer points (columns) of a group; the body is a
   * template over VR like vector rows (the entry runs VR = cvec when the
   * innermost outer size and the buffers' alignment allow, else VR = 1). A
   * buffer of rvec_buf is read in the reduction loop with one ptc_vload at
   * the group's first column (its index text rvec_key) into vin_b<id>[VR];
   * the per-column statements run in an unrolled loop over e with the
   * accumulators in arrays (references a<m>_<i> to element e) */
  uint32_t cvec;            /* columns per thread of the vector entry; 0 = off */
  bool cvec_dyn;            /* the entry checks xnumel % cvec (innermost size dynamic) */
  uint32_t cvec_comb;       /* cug_emit_acc_cvec_combine: the next combine buffer's id */
  int cvec_phase;           /* cug_emit_acc_cvec_combine: the phase being emitted */
  uint32_t cvec_comb0;      /* the first combine buffer id of the kernel's first round */
  const char* split_qstride; /* cug_emit_acc_split fold: partial q at at + q * this (NULL: 1) */
  uint32_t split_fold_fast;  /* fold: partials read with __ldcg in a loop of ceil(split /
                             * lanes) steps unrolled (vector columns); 0: volatile loads */
  char kname[48];           /* the kernel's name: prefix of its module globals */
  /* 16-byte vector loads / stores with cache hints (cuda_cg_kernel.c,
   * io_hints): the template each access names, "ptc_vload<" / "ptc_vstore<"
   * or "ptc_vload_h<M, " / "ptc_vstore_h<M, " (M the hint; helpers in globals) */
  char vld[40];
  char vst[40];
  const char* split_at;     /* cug_emit_acc_split: partial index, count (C expressions) */
  const char* split_n;
} cug;

/* ---- helpers (cuda_cg_kernel.c) -------------------------------------------- */
void cug_fail(cug* g, ptc_status s);
void cug_line(cug* g, ptc_strbuf* sb, const char* fmt, ...) PTC_PRINTF(3, 4);
/** C name of buffer `id`'s pointer ("in0", "buf3", or "b<id>"). */
void cug_buf_name(const cug* g, int32_t id, char* out, size_t cap);

/* ---- index expressions (cuda_cg_index.c) ----------------------------------- */
ptc_status cug_vars_init(cug* g);
/** Prints `e` as an IT expression (floor semantics where needed). */
void cug_index(cug* g, ptc_strbuf* sb, const sym_expr* e);
/** Hint of a size expression (CUDA_CG_UNBACKED_HINT per unbacked symbol). */
int64_t cug_hint(const cug* g, const sym_expr* e);
/** Coefficient of `var` in `e` (false when non-linear). */
bool cug_coef(const sym_expr* e, const sym_expr* var, int64_t* c);
void cug_index_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u);

/* ---- values (cuda_cg_ops.c) ----------------------------------------------------- */
cu_cls cu_cls_of(int32_t dtype);
const char* cu_ctype(cu_cls c);
const char* cu_storage_type(int32_t dtype);
void cu_conv(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr);
void cu_load(ptc_strbuf* sb, int32_t dt, const char* ptr, const char* idx);
void cu_encode(ptc_strbuf* sb, int32_t dt, const char* val);
void cu_float_lit(ptc_strbuf* sb, double v, cu_cls c);
void cu_int_lit(ptc_strbuf* sb, int64_t v);
void cu_const(ptc_strbuf* sb, const ir_op* op);
/** Right-hand side of a table op; false when the opcode/dtype has no row. */
bool cu_math(ptc_strbuf* sb, const ir_op* op, const char* const* args, const int32_t* arg_dt,
             const char* ctx_arg, bool* uses_err);

/* ---- bodies (cuda_cg_body.c) ------------------------------------------------------- */
ptc_status cug_members_init(cug* g);
void cug_members_free(cug* g);
void cug_member_begin(cug* g, uint32_t m);
/** Whether `op` (a load or store of the current member, in the loop) reads
 * or writes a persistent row's registers (cug.cache). */
bool cug_cache_hit(cug* g, const ir_op* op);
/** Whether `op` (a load or store of the current member, in a vector row
 * loop) reads vin_b<id>[e] / writes vout_b<id>[e] (cug.rvec_buf). */
bool cug_rvec_hit(cug* g, const ir_op* op);
/** Emits the current member's live ops of `stage`. */
void cug_emit_stage(cug* g, ptc_strbuf* sb, cu_stage stage);
/** Accumulator declarations (per thread), in-loop updates, the cross-lane
 * combine of the layout, and the finalisation into the IR_REDUCE temporary. */
void cug_emit_acc_decls(cug* g, ptc_strbuf* sb);
void cug_emit_acc_updates(cug* g, ptc_strbuf* sb);
void cug_emit_acc_combine(cug* g, ptc_strbuf* sb);
void cug_emit_acc_finalize(cug* g, ptc_strbuf* sb);
/** Split reductions: publish this block's combined accumulators to the
 * workspace at partial index `at` (publish: true), or reset them and fold
 * the row's `n` partials starting at `at` in order, lane-strided (publish:
 * false; cug_emit_acc_combine then finishes the fold across lanes). */
void cug_emit_acc_split(cug* g, ptc_strbuf* sb, bool publish, const char* at, const char* n);
/** Vector columns (cug.cvec): declares the accumulator arrays
 * a<m>_<i>_c[VR] initialised (decl: true), or binds the references
 * a<m>_<i> to element e of them (decl: false) for the scalar emitters. */
void cug_emit_acc_cvec(cug* g, ptc_strbuf* sb, bool decl);
/** Vector columns: the lanes' combine of every column of the thread's
 * group in one shared-memory round. Phase 0 stores the accumulators of the
 * current member into fresh buffers (ids from g->n_combines), phase 2 into
 * the buffers of an earlier round (ids from g->cvec_comb); phase 1, after
 * the caller's barrier, folds them in lane order into every lane (ids from
 * g->cvec_comb, which the caller sets to the first id of phase 0 and which
 * advances in the same member order). */
void cug_emit_acc_cvec_combine(cug* g, ptc_strbuf* sb, int phase);
bool cug_member_reads(const cug* g, uint32_t m, int32_t buf);
bool cug_member_needs_nonempty(const cug* g, uint32_t m);
/* Whether the vector path of a pointwise kernel takes the prelude's
 * ptc_sin_v / ptc_cos_v for float32 sin / cos (not an f16/bf16 op's,
 * IR_MATH_LOWP): a member computes one, unless PTC_CUDA_F32_TRIG=libm (read
 * at code generation: sinf / cosf there too). */
bool cug_uses_fast_trig(const cug* g);
/** Up-front checks of member m's indirect ops whose bound may be <= 0. */
void cug_member_indirect_checks(cug* g, uint32_t m);
/** "((IT)1*X0*...)" product of the outer and/or inner ranges. */
void cug_numel(cug* g, ptc_strbuf* sb, bool outer, bool inner);

#endif /* PTC_BACKENDS_CUDA_CG_INTERNAL_H */
