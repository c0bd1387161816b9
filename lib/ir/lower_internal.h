/* lower_internal.h - private interface of the lowering (lower*.c).
 *
 * Every graph value becomes an `lval` (Inductor's TensorBox): either a
 * strided view of a buffer (LV_BUF: element idx lives at offset +
 * sum(idx[d] * strides[d]) of the buffer's storage) or an unrealized value
 * (LV_LAZY: a loader that, given one index expression per dim, emits the ops
 * computing that element into the body being built, L->body). Views compose
 * index transforms, pointwise ops compose loaders, and `lower_realize`
 * turns a lazy value into a buffer written by one IR_POINTWISE node.
 *
 * Each op family file has a table of lowerings (name -> function); ops
 * without one become IR_EXT_FALLBACK nodes (lower_extern.c).
 */
#ifndef PTC_LIB_IR_LOWER_INTERNAL_H
#define PTC_LIB_IR_LOWER_INTERNAL_H

#include "ir_internal.h"

typedef struct lower_ctx lower_ctx;
typedef struct lval lval;

/* Emits element idx[0..rank) of v into L->body; returns a value of v->dtype
 * (-1 if the body is poisoned). */
typedef ir_val (*lval_load_fn)(lower_ctx* L, const lval* v, const sym_expr* const* idx);

enum { LV_NONE = 0, LV_BUF, LV_LAZY };

struct lval {
  int32_t kind;
  int32_t dtype;
  uint32_t rank;
  const sym_expr** shape;      /* program env */
  int32_t buf;                 /* LV_BUF: the buffer viewed */
  const sym_expr** strides;    /* LV_BUF: element strides of the view */
  const sym_expr* offset;      /* LV_BUF: element offset of the view */
  lval_load_fn load;           /* LV_LAZY */
  const void* data;            /* LV_LAZY: loader data (lowering arena) */
  int32_t ext_node;            /* LV_BUF written whole by a MATMUL/CONV extern node, else -1 */
  uint32_t depth;              /* LV_LAZY: loaders nested below this one (bounded) */
};

/* Lazy values nest at most this deep (a chain of views adds no ops, so the
 * op-count rule would not bound the loaders' recursion). */
#define LOWER_MAX_DEPTH 128

/* Memo of lazy loads within one body: a loader called again with the same
 * value, index and mask returns the first call's result (without it, x * x
 * chains call loaders exponentially often). */
typedef struct load_memo {
  uint64_t gen;                /* body emission it belongs to (0 = empty) */
  const lval* v;
  ir_val mask;
  const sym_expr* const* idx;  /* v->rank entries (lowering arena) */
  ir_val val;
} load_memo;

struct lower_ctx {
  ir_program* p;
  sym_env* env;                /* p->env */
  const ptc_graph* g;
  ir_lower_options o;
  ptc_arena arena;             /* loader data and temporary lvals */
  lval* vals;                  /* per graph value */
  uint32_t* users;             /* per graph value: user nodes (+1 if a graph output) */
  bool* is_output;             /* per graph value */
  bool* feeds_reduction;       /* per graph value: an input of a reduction op */
  ir_body* body;               /* body being emitted */
  ir_val mask;                 /* current load mask (-1: none) */
  uint64_t gen;                /* emission generation of `body` (memo tag) */
  uint64_t next_gen;
  load_memo* memo;             /* open addressing, memo_cap a power of 2 */
  size_t memo_cap, memo_len;
  uint8_t* rounding;           /* per op of the body of generation rounding_gen: 1 = an
                                * implicit f32 -> f16/bf16 rounding (lower_note_rounding) */
  uint32_t rounding_cap;
  uint64_t rounding_gen;
  uint32_t node_index;         /* graph node being lowered */
  const gnode* node;
};

typedef ptc_status (*lower_fn)(lower_ctx* L, const gnode* n, lval* out);

typedef struct lower_entry {
  const char* op;
  lower_fn fn;
} lower_entry;

/* Family tables (one per file). */
extern const lower_entry lower_pointwise_table[];
extern const size_t lower_pointwise_count;
extern const lower_entry lower_create_table[];
extern const size_t lower_create_count;
extern const lower_entry lower_view_table[];
extern const size_t lower_view_count;
extern const lower_entry lower_index_table[];
extern const size_t lower_index_count;
extern const lower_entry lower_reduce_table[];
extern const size_t lower_reduce_count;
extern const lower_entry lower_extern_table[];
extern const size_t lower_extern_count;

/* ---- values and emission (lower_util.c) ------------------------------------------------- */
/** Graph expression imported into the program env (NULL on OOM). */
const sym_expr* lower_imp(lower_ctx* L, const sym_expr* e);
const sym_expr* lower_const(lower_ctx* L, int64_t v);
/** Arena memory (zeroed); NULL on OOM. */
void* lower_alloc(lower_ctx* L, size_t bytes);
const sym_expr** lower_exprs(lower_ctx* L, uint32_t n);
/** True if e is the constant c. */
bool lower_is(const sym_expr* e, int64_t c);
/** Contiguous strides of shape into out[rank]; false on OOM. */
bool lower_contig(lower_ctx* L, uint32_t rank, const sym_expr* const* shape,
                  const sym_expr** out);
/** Product of shape[0..rank) (NULL on OOM). */
const sym_expr* lower_numel(lower_ctx* L, uint32_t rank, const sym_expr* const* shape);
/** sum(idx[d] * strides[d]) + offset (NULL on OOM). */
const sym_expr* lower_dot(lower_ctx* L, uint32_t rank, const sym_expr* const* idx,
                          const sym_expr* const* strides, const sym_expr* offset);
/** Decides a rel b statically or from hints (guard recorded in the program
 * env, mirroring the one the meta function recorded). */
ptc_status lower_decide(lower_ctx* L, sym_rel rel, const sym_expr* a, const sym_expr* b,
                        bool* r);

/** Starts emitting into body b (a fresh memo generation, no mask); the
 * previous target is saved in *saved and restored by lower_end_body. */
typedef struct lower_target {
  ir_body* body;
  ir_val mask;
  uint64_t gen;
} lower_target;
void lower_begin_body(lower_ctx* L, ir_body* b, lower_target* saved);
void lower_end_body(lower_ctx* L, const lower_target* saved);
/** Element idx of v (a load of its buffer, masked by L->mask, or its loader). */
ir_val lval_load(lower_ctx* L, const lval* v, const sym_expr* const* idx);
/** Index of a value of shape `in` broadcast to rank/shape `out`: leading dims
 * dropped, size-1 dims read at 0. */
void lower_bcast_index(lower_ctx* L, const lval* in, uint32_t out_rank,
                       const sym_expr* const* out_shape, const sym_expr* const* idx,
                       const sym_expr** in_idx);
/** Records that op `x` of the current body is (implicit) or is not (an
 * explicit cast, which the ops CSE may have merged with an implicit one) the
 * implicit rounding of a pointwise op's f32 result to its f16/bf16 dtype,
 * which lower_load_math may skip when o.lowp_f32_math is set. */
void lower_note_rounding(lower_ctx* L, ir_val x, bool implicit);
/** Element idx of v converted to dtype tdt and then to the math dtype mdt
 * (what an op computing in mdt reads). With o.lowp_f32_math, when v is read
 * as its own dtype (tdt == v->dtype) in f32 and its element is an implicit
 * rounding (lower_note_rounding), the unrounded f32 value instead. */
ir_val lower_load_math(lower_ctx* L, const lval* v, const sym_expr* const* idx, int32_t tdt,
                       int32_t mdt);
/** x (of dtype `from`) converted to `to` (no op when equal). */
ir_val lower_convert(lower_ctx* L, ir_val x, int32_t from, int32_t to);
/** A constant of dtype dt holding s (already of dtype dt). */
ir_val lower_emit_const(lower_ctx* L, ir_scalar s, int32_t dt);
/** Loads under an extra mask m (ANDed with the current one). */
ir_val lower_load_masked(lower_ctx* L, const lval* v, const sym_expr* const* idx, ir_val m);
/** Compares two index expressions: bool value of a rel b. */
ir_val lower_index_cmp(lower_ctx* L, ir_opcode cmp, const sym_expr* a, const sym_expr* b);
/** f16/bf16 -> f32, bool -> i64, else dt: the dtype ops compute in. */
int32_t lower_opmath(int32_t dt);

/** A lazy lval of shape (rank, shape) and dtype with a loader. */
void lval_lazy(lval* out, int32_t dtype, uint32_t rank, const sym_expr** shape, lval_load_fn fn,
               const void* data);
/** True if v is LV_BUF with exactly its buffer's own layout. */
bool lval_is_whole_buffer(const lower_ctx* L, const lval* v);

/* ---- realization (lower_realize.c) -------------------------------------------------------- */
/** Makes v a buffer: a lazy value (or, when `copy`, a strided view that is not
 * a whole buffer) is stored contiguously by a new IR_POINTWISE node. */
ptc_status lower_realize(lower_ctx* L, lval* v, bool copy, const char* origin);
/** The buffer holding exactly v's elements in v's layout (for extern inputs):
 * the buffer itself, an alias INPUT/CONSTANT buffer with v's view layout,
 * or a realized copy. */
ptc_status lower_as_buffer(lower_ctx* L, lval* v, const char* origin, int32_t* buf);
/** Decides whether an extern takes strided view v (LV_BUF of a computed
 * buffer, not the whole buffer) as it is. */
typedef bool (*lower_view_ok_fn)(lower_ctx* L, const lval* v);
/** lower_as_buffer, but a value it stores is stored channels-last: [N, C,
 * H, W] laid out [N][H][W][C] by a loop in that order (rank 4 only; a
 * whole buffer is passed as it is, whatever its layout). */
ptc_status lower_as_buffer_nhwc(lower_ctx* L, lval* v, const char* origin, int32_t* buf);
/** A computed whole buffer that is not laid out contiguously is copied into
 * a contiguous one (graph outputs under o.conv_nhwc). */
ptc_status lower_realize_contig(lower_ctx* L, lval* v, const char* origin);
/** lower_as_buffer, except that a strided view of a computed buffer that
 * `ok` accepts becomes an IR_BUF_VIEW of that buffer (no copy) when
 * L->o.extern_views is set. */
ptc_status lower_as_view_buffer(lower_ctx* L, lval* v, lower_view_ok_fn ok, const char* origin,
                                int32_t* buf);
/** Realizes v if it is lazy and has ops that may fail when run on masked
 * placeholder values (integer division, indirect indexing): a value read
 * under a mask (cat, pad) only runs where the mask holds. */
ptc_status lower_realize_for_mask(lower_ctx* L, lval* v, const char* origin);
/** Applies the realize rules to a freshly lowered value (graph value gv):
 * graph outputs; no fusion; more than one user and (reads, op count or an
 * expensive op over the thresholds); accumulated reads or op count over
 * the limits. */
ptc_status lower_maybe_realize(lower_ctx* L, lval* v, ptc_value gv, const char* origin);

/* ---- attributes (lower_util.c) ------------------------------------------------------------- */
const gattr* lower_attr(const gnode* n, const char* name);
int64_t lower_attr_int(const gnode* n, const char* name, int64_t dflt);
double lower_attr_float(const gnode* n, const char* name, double dflt);
bool lower_attr_bool(const gnode* n, const char* name, bool dflt);
const char* lower_attr_str(const gnode* n, const char* name, const char* dflt);
/** INT/SYM attribute as a program-env expression (dflt if absent). */
const sym_expr* lower_attr_expr(lower_ctx* L, const gnode* n, const char* name, int64_t dflt);
/** Scalar attribute as an operand: category -1 absent, 0 bool, 1 int, 2 float. */
int lower_attr_cat(const gnode* n, const char* name);
/** Normalises a possibly negative dim against rank (rank 0 -> 0). */
uint32_t lower_norm_dim(int64_t d, uint32_t rank);
/** The lval of node input k (NULL when absent). */
lval* lower_in(lower_ctx* L, const gnode* n, uint32_t k);

/* ---- cross-family helpers ---------------------------------------------------------------- */
/** ATen result_type of node inputs [first, n_in) plus a scalar category. */
int32_t lower_result_type(const lower_ctx* L, const gnode* n, size_t first, int scalar_cat);
/** Affine view: src_idx[j] = base[j] + sum_i coef[j*ro + i] * idx[i]. */
typedef struct lower_affine {
  const lval* src;
  uint32_t rs, ro;
  const sym_expr** base;       /* rs */
  const sym_expr** coef;       /* rs * ro, NULL = 0 */
} lower_affine;
lower_affine* lower_affine_new(lower_ctx* L, const lval* src, uint32_t ro);
/** Output lval of an affine view (a strided view for LV_BUF sources). */
ptc_status lower_affine_apply(lower_ctx* L, lower_affine* a, int32_t dtype,
                              const sym_expr** shape, lval* out);
/** out = src reshaped to (rank, shape) in row-major order. */
ptc_status lower_reshape(lower_ctx* L, const lval* src, uint32_t rank, const sym_expr** shape,
                         lval* out);
/** The value a lazy reshape (lower_reshape of a value whose layout could not
 * be re-strided) reads, or NULL when v is not one. Its elements in
 * row-major order are v's elements in row-major order. */
const lval* lower_reshape_source(const lval* v);
/** out = a + beta * b (broadcast) as a lazy value of dtype dt and out's shape. */
ptc_status lower_add_scaled(lower_ctx* L, const lval* a, const lval* b, double beta,
                            lval* out);
/** Epilogue folding into a MATMUL/CONV extern; *done when folded. */
ptc_status lower_try_epilogue(lower_ctx* L, const gnode* n, lval* out, bool* done);
/** Generic fallback: the node runs as its ref kernel on realized inputs. */
ptc_status lower_fallback(lower_ctx* L, const gnode* n, lval* out);
/** A host-registered op (OP_CUSTOM): an IR_EXT_CUSTOM node. */
ptc_status lower_custom(lower_ctx* L, const gnode* n, lval* out);

#endif /* PTC_LIB_IR_LOWER_INTERNAL_H */
