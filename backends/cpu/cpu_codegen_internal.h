/* cpu_codegen_internal.h - private interfaces of the CPU C code generator
 * (cpu_codegen*.c, cpu_prelude.c): tunables, the generator state shared by
 * the loop emitter, the body emitter and the index printer, the dtype and
 * opcode tables.
 *
 * Structure of a generated kernel (see cpu_codegen.c):
 *   prelude (cpu_prelude.c) | entry signature | declarations (context, size
 *   symbols, typed buffer pointers) | up-front checks | loop nest.
 * Per outer point the member nodes run in "groups": a group is a run of
 * reduction / inner pointwise members sharing one inner loop; a member that
 * reads the result of a reduction of the current group, or an outer
 * pointwise member, closes the group (cpu_codegen.c, emit_outer_body).
 */
#ifndef PTC_BACKENDS_CPU_CODEGEN_INTERNAL_H
#define PTC_BACKENDS_CPU_CODEGEN_INTERNAL_H

#include "cpu.h"

/* ---- tunables ------------------------------------------------------------- */
/** Parallelise (OpenMP) when outer numel x inner numel reaches this. With
 * symbolic sizes the test is emitted as an OpenMP `if` clause. */
#define CPU_CG_PAR_MIN_WORK 32768
/** Size hint of an unbacked symbol (no hint). */
#define CPU_CG_UNBACKED_HINT 8192
/** Outer dims are collapsed into the parallel loop until their product
 * reaches this many iterations. */
#define CPU_CG_PAR_MIN_ITERS 64
/** Tiled reductions (a strided reduction whose last outer dim is
 * contiguous): points of the last outer dim per tile, one accumulator lane
 * each, walked by the innermost vectorised loop. */
#define CPU_CG_TILE 64
/** Column reductions (tiled-eligible) with at least this many reduction
 * points and at most CPU_CG_COLSPLIT_MAX_POINTS outer points split the
 * reduction over threads, each accumulating a partial row of every outer
 * point while streaming its rows contiguously, then combine. */
#define CPU_CG_COLSPLIT_MIN_ROWS 64
#define CPU_CG_COLSPLIT_MAX_POINTS 65536
/** Reductions with fewer outer points than this (and enough inner work)
 * split the inner loop over threads instead (per-thread partials). */
#define CPU_CG_MIN_OUTER_PAR 16
/** Fast trig: elements per block of the innermost loop (one range check
 * flag per block; a flagged block is recomputed with libm). */
#define CPU_CG_TRIG_BLOCK 256
/** Row scratch: a buffer written and read only inside one row of a
 * reduction kernel becomes a stack array of at most this many bytes. */
#define CPU_CG_SCRATCH_MAX_BYTES 65536
/** Streaming stores: elements per block of a pointwise kernel's innermost
 * loop (rows of reduction kernels: up to CPU_CG_SCRATCH_MAX_BYTES). Used
 * when the kernel's streamable outputs add up to at least the last-level
 * cache (sysconf; PTC_CPU_STREAM_BYTES overrides the threshold). */
#define CPU_CG_STREAM_BLOCK 1024
/** Row blocks: elements per block of a reduction kernel's (single,
 * static) inner loop where it is blocked - the pass that prefetches the
 * next row spreads one block's share of the prefetches before each block,
 * and streamed rows are copied out block by block (cpu_codegen.c). */
#define CPU_CG_ROW_BLOCK 256
/** Row prefetch: at most this many input buffers per kernel. */
#define CPU_CG_MAX_PREFETCH 16
/** Per-thread partial slots of split reductions (threads beyond are not used). */
#define CPU_CG_MAX_THREADS 64

/* ---- value classes: the C type a value of a dtype is computed in ---------- */
typedef enum cg_cls {
  CG_F32 = 0, /* f16, bf16, f32: float */
  CG_F64,     /* f64: double */
  CG_INT,     /* i8..i64, u8: int64_t, wrapped to the dtype after each op */
  CG_BOOL     /* bool: uint8_t holding 0/1 */
} cg_cls;

/* ---- generator state -------------------------------------------------------- */
typedef enum cg_var_role { CG_VAR_NONE = 0, CG_VAR_SIZE, CG_VAR_X, CG_VAR_R, CG_VAR_INDIRECT } cg_var_role;

/* Placement of a body op of a reduction member relative to its inner loop. */
typedef enum cg_stage { CG_PRE = 0, CG_LOOP, CG_POST } cg_stage;

typedef struct cg_var {
  uint8_t role;       /* cg_var_role */
  bool used;          /* size symbol referenced (declared in the prologue) */
  uint32_t k;         /* X/R: loop dim; SIZE: index into syms[] */
  char name[48];      /* C name (SIZE, INDIRECT once defined) */
} cg_var;

typedef enum cg_mode {
  CG_MODE_SERIAL = 0,   /* no parallel region */
  CG_MODE_OUTER,        /* parallel for over (leading) outer dims */
  CG_MODE_SPLIT         /* outer loops serial, inner loops split over threads */
} cg_mode;

typedef enum cg_par { CG_PAR_NO = 0, CG_PAR_YES, CG_PAR_IF } cg_par;

typedef enum cg_member_kind {
  CG_MEM_REDUCTION = 0, /* IR_REDUCTION with the kernel's ranges and rranges */
  CG_MEM_INNER,         /* pointwise over ranges ++ rranges: runs in the inner loop */
  CG_MEM_OUTER          /* pointwise over the kernel's ranges: once per outer point */
} cg_member_kind;

/* One member node of the kernel, analysed once. */
typedef struct cg_member {
  const ir_node* node;
  int32_t node_index;
  uint8_t kind;             /* cg_member_kind */
  uint8_t* stage;           /* per op: cg_stage */
  uint8_t* live;            /* per op: 1 if emitted (reaches a store or a check) */
  uint8_t* varies;          /* per op: 1 if its value changes along the member's
                               innermost (vectorised) loop */
} cg_member;

typedef struct cg {
  const ir_program* p;
  const sched_plan* s;
  const sched_kernel* k;
  uint32_t kidx;
  ptc_strbuf body;          /* statements after the declarations */
  ptc_strbuf checks;        /* up-front checks (empty reductions, indirect bounds) */
  int indent;
  ptc_status err;           /* first error; emission continues harmlessly */
  /* buffers */
  size_t n_buffers;
  bool* stored;             /* buffer id -> stored by this kernel */
  bool* local_defined;      /* LOCAL buffer id -> its C variable exists */
  /* symbols */
  size_t n_vars;
  cg_var* vars;             /* env symbol index -> role and name */
  /* members */
  cg_member* members;
  cg_member* cur;           /* member being emitted */
  uint32_t member;
  int32_t node_index;
  bool rename_x;            /* inner pointwise: x_{n+k} prints as r_k */
  /* schedule */
  cg_mode mode;
  cg_par par;
  uint32_t collapse;        /* CG_MODE_OUTER: dims in the parallel loop */
  uint32_t n_groups;        /* groups emitted so far (unique names) */
  bool tiled;               /* reduction with the contiguous last outer dim tiled */
  bool colsplit;            /* tiled-eligible reduction split over the reduction
                               dim instead (per-thread partial rows) */
  uint32_t tile;            /* while emitting a tiled group: lanes per tile, else 0 */
  char lane[40];            /* "[x1 - xt]": the lane of a tiled accumulator */
  bool uses_ctx;            /* the kernel context pointer is referenced */
  /* fast trig (cpu_codegen.c): f32 sin/cos through the prelude's
   * polynomials in blocks, a block recomputed with libm when an argument is
   * out of their range */
  bool fast_trig;           /* this kernel's loops are blocked for it */
  /* row scratch (cpu_codegen.c): per buffer, whether it lives in a stack
   * array `<name>_s` of one row, indexed by `row_index` */
  bool* scratch;
  ptc_strbuf row_index;     /* "(r0*R1 + r1)" when the inner ranges are static */
  int64_t row;              /* their product (0: not static) */
  /* streaming stores (cpu_codegen.c): per buffer, whether its stores go to
   * a stack array `<name>_t` (indexed by `stream_index`) that is then
   * copied out with non-temporal stores */
  bool* streamed;
  const char* stream_index;
  bool stream_blocks;       /* pointwise: the innermost loop is blocked for it */
  /* row prefetch (cpu_codegen.c): before the second pass over a row, the
   * next row of every large contiguous input is prefetched */
  ptc_strbuf prefetch;      /* the statements, emitted at that point */
  uint32_t groups_done;     /* groups flushed for the current outer point */
  /* row blocks (cpu_codegen.c): with one static inner range, the prefetch
   * is spread over the blocks of the second pass (`prefetch_spread`: one
   * `ptc_pf<i>` base address per buffer, declared by `prefetch_bases`, with
   * element size `prefetch_es[i]`) and/or streamed rows leave block by block
   * (`stream_rblocks`: the stream arrays hold one block, indexed r0 - rb) */
  int64_t rblock;           /* elements per block (0: no blocking) */
  bool prefetch_spread;
  int prefetch_hint;        /* __builtin_prefetch locality of the row prefetch */
  ptc_strbuf prefetch_bases;
  uint32_t n_prefetch;
  int64_t prefetch_es[CPU_CG_MAX_PREFETCH];
  bool stream_rblocks;
  bool trig_exact;          /* emitting the libm recomputation of a block */
} cg;

/** C name of buffer `id` (its pointer, or its variable when kernel-local):
 * the IR name ("in0", "c3", "buf5") when it is a plain identifier of that
 * shape, else "b<id>". */
void cg_buf_name(const cg* g, int32_t id, char* out, size_t cap);
/** Records the first error (later ones are dropped). */
void cg_fail(cg* g, ptc_status s);
/** Appends indentation then a printf-formatted line (newline added). */
void cg_line(cg* g, ptc_strbuf* sb, const char* fmt, ...) PTC_PRINTF(3, 4);

/* ---- prelude (cpu_prelude.c) ------------------------------------------------ */
/** Appends the shared prelude: includes, kernel context, conversion and
 * math helpers, Philox, error reporting. */
void cg_prelude(ptc_strbuf* sb);
/** Appends the non-temporal copy helpers (ptc_stream_store, ptc_sfence;
 * <immintrin.h> on x86) for kernels with streaming stores. */
void cg_prelude_stream(ptc_strbuf* sb);

/* ---- index expressions (cpu_codegen_index.c) --------------------------------- */
/** Builds g->vars (roles and names of the env symbols). */
ptc_status cg_vars_init(cg* g);
/** Prints `e` as a C int64 expression (floor semantics for FloorDiv/Mod/
 * ModularIndexing/CeilDiv; plain C ops where operands are provably
 * non-negative). Marks size symbols used; unknown symbols fail. */
void cg_index(cg* g, ptc_strbuf* sb, const sym_expr* e);
/** Hint of a size expression (CPU_CG_UNBACKED_HINT per unbacked symbol). */
int64_t cg_hint(const cg* g, const sym_expr* e);
/** Coefficient of symbol `var` in `e` when e = c*var + (terms without
 * var); c = 0 if var does not occur. False when var occurs non-linearly. */
bool cg_coef(const sym_expr* e, const sym_expr* var, int64_t* c);
/** Calls fn(u, var) for every symbol occurrence in `e` (NULL: none). */
void cg_index_vars(const sym_expr* e, void (*fn)(void* u, size_t var), void* u);

/* ---- dtypes and the opcode table (cpu_codegen_ops.c) -------------------------- */
cg_cls cg_cls_of(int32_t dtype);
/** C type of a class ("float", "double", "int64_t", "uint8_t"). */
const char* cg_ctype(cg_cls c);
/** C type of a dtype's storage ("uint16_t" for f16/bf16). */
const char* cg_storage_type(int32_t dtype);
/** Appends `expr` (a value of dtype `from`) converted to dtype `to` with
 * ATen semantics (float->int truncates, ->bool is != 0, narrow ints wrap,
 * f16/bf16 round to nearest even); the result has class cg_cls_of(to). */
void cg_conv(ptc_strbuf* sb, int32_t from, int32_t to, const char* expr);
/** Appends the value of storage element `ptr[idx]` of dtype dt. */
void cg_load(ptc_strbuf* sb, int32_t dt, const char* ptr, const char* idx);
/** Appends the storage encoding of `val` (class of dt) for dtype dt. */
void cg_encode(ptc_strbuf* sb, int32_t dt, const char* val);
/** Appends a literal of class c for double v / int64 v. */
void cg_float_lit(ptc_strbuf* sb, double v, cg_cls c);
void cg_int_lit(ptc_strbuf* sb, int64_t v);
/** Appends the constant of an IR_CONST op (value rounded to its dtype). */
void cg_const(ptc_strbuf* sb, const ir_op* op);

/** Appends the right-hand side of a table op (math, comparisons, logic,
 * where). `args` are the C names of the arguments, `arg_dt` their dtypes,
 * `ctx_arg` the text passed to error-reporting helpers ("kctx, 3").
 * Returns false (and appends nothing) when the opcode/dtype pair has no row. */
bool cg_math(ptc_strbuf* sb, const ir_op* op, const char* const* args, const int32_t* arg_dt,
             const char* ctx_arg, bool* uses_ctx);
/** Whether op is an f32-class sin/cos that the prelude's vectorised
 * ptc_sin_f32/ptc_cos_f32 can compute (valid for |x| <= PTC_TRIG_MAX). */
bool cg_op_fast_trig(const ir_op* op);
/** Whether an op of this opcode/dtype blocks `omp simd` (error-reporting
 * helpers, RNG, indirect checks). */
bool cg_op_blocks_simd(const ir_op* op);

/* ---- bodies (cpu_codegen_body.c) ---------------------------------------------- */
/** Analyses every member (kind, fit to the kernel's loops, liveness, stages). */
ptc_status cg_members_init(cg* g);
void cg_members_free(cg* g);
/** Makes member m current (names, renaming of x vars for inner pointwise). */
void cg_member_begin(cg* g, uint32_t m);
/** Emits the live ops of the current member whose stage is `stage` into sb
 * (inner pointwise members: every op is CG_LOOP; outer ones: CG_PRE). */
void cg_emit_stage(cg* g, ptc_strbuf* sb, cg_stage stage);
/** Emits the current member's hoisted (CG_PRE) ops that ops of stage
 * `user` need (tiled loops emit them once inside the loop and once after). */
void cg_emit_pre_for(cg* g, ptc_strbuf* sb, cg_stage user);
/** Whether some member has a live op for which cg_op_fast_trig holds. */
bool cg_kernel_has_fast_trig(cg* g);
/** Whether the current member's live ops in `stage` allow `omp simd`. */
bool cg_stage_simd_ok(const cg* g, cg_stage stage);
/** Reductions of the current member. Declarations of the accumulators
 * (split: combined values and per-thread partial arrays), per-thread
 * declarations and saves inside a split region, in-loop updates, the
 * in-order combine of partials (index text `t`), and the finalisation into
 * the IR_REDUCE op's temporary. */
void cg_emit_acc_decls(cg* g, ptc_strbuf* sb, bool split);
void cg_emit_acc_thread_decls(cg* g, ptc_strbuf* sb);
void cg_emit_acc_thread_save(cg* g, ptc_strbuf* sb);
void cg_emit_acc_updates(cg* g, ptc_strbuf* sb);
void cg_emit_acc_combine(cg* g, ptc_strbuf* sb, const char* t);
void cg_emit_acc_finalize(cg* g, ptc_strbuf* sb, bool split);
/** Split column reductions: `p..` partial arrays of `count` elements
 * malloc'ed per accumulator; the test "|| !p.." of each into `test` and
 * " + sizeof(type)" of each into `bytes`; their frees; per-thread slices
 * `a.. = p.. + offset` set to the identity over `count` points; the
 * combined `c..` accumulators (identity) for cg_emit_acc_combine. */
void cg_emit_acc_heap_decls(cg* g, ptc_strbuf* sb, const char* count);
void cg_acc_heap_null_test(cg* g, ptc_strbuf* test, ptc_strbuf* bytes);
void cg_emit_acc_heap_free(cg* g, ptc_strbuf* sb);
void cg_emit_acc_slices(cg* g, ptc_strbuf* sb, const char* offset, const char* count);
void cg_emit_acc_combined_decls(cg* g, ptc_strbuf* sb);
/** Appends " reduction(+:a0_3)" clauses for the current member's
 * reductions; returns false if one of them cannot use simd. */
bool cg_simd_clauses(cg* g, ptc_strbuf* sb);
/** Whether member m reads buffer `buf` (live loads). */
bool cg_member_reads(const cg* g, uint32_t m, int32_t buf);
/** Whether member m has a max/min/argmax/argmin reduction (no identity:
 * an empty inner loop is an error). */
bool cg_member_needs_nonempty(const cg* g, uint32_t m);
/** Whether live op `i` of member m is in its inner loop (CG_LOOP stage, or
 * any op of an inner pointwise member). */
bool cg_member_op_in_loop(const cg* g, uint32_t m, uint32_t i);
/** Appends "(INT64_C(1)*X0*...)": the product of the outer and/or inner ranges. */
void cg_numel(cg* g, ptc_strbuf* sb, bool outer, bool inner);
/** Up-front checks (into g->checks) for member m's indirect ops whose bound
 * may be <= 0. */
void cg_member_indirect_checks(cg* g, uint32_t m);

#endif /* PTC_BACKENDS_CPU_CODEGEN_INTERNAL_H */
