/* ir.h - the loop-level IR (internal), as in Inductor.
 *
 * A program is a list of buffers and a list of nodes in execution order.
 *  - Buffers: graph inputs, graph constants, and computed buffers (each
 *    written by exactly one node). A buffer has a dtype, a symbolic shape
 *    and a layout (strides + offset, in elements).
 *  - Nodes:
 *    IR_POINTWISE  loops over outer vars (x0..x{n-1}, sizes `ranges`) and
 *                  runs its body once per point; the body ends in stores.
 *    IR_REDUCTION  loops over outer vars and, inside, over reduction vars
 *                  (r0..r{m-1}, sizes `rranges`); body ops that depend on
 *                  a reduction var run in the inner loop, IR_REDUCE folds
 *                  them, and ops after it (IR_STORE of the reduced value)
 *                  run once per outer point.
 *    IR_EXTERN     a call the backend provides whole: GEMM, convolution,
 *                  a ref-kernel fallback for ops without a lowering, or a
 *                  host-registered custom op.
 *  - Bodies are built define-by-run through the ir_ops_* builder calls
 *    below (lowering code calls them; nothing else constructs bodies) and
 *    are walked by visitors: dependency extraction (sched), op counting,
 *    the IR interpreter (ir_interp.c, tests), C emission (backends/cpu).
 *
 * Index expressions are sym_exprs in the program's env (a clone of the
 * graph's env plus the loop variables). The loop variables are shared by all
 * nodes: x_k = ir_program.xvars[k], r_k = ir_program.rvars[k]; a node uses
 * the first n of each. Because the same symbols are used everywhere, a read
 * of node B at index e and a write of node A at index e are pointer-equal
 * when the loops line up - which is what vertical fusion checks.
 * Load/store indices are flat element offsets into the buffer's storage
 * (layouts already applied by lowering).
 */
#ifndef PTC_LIB_IR_H
#define PTC_LIB_IR_H

#include "../graph/graph.h"
#include "../graph/op.h"

/* ---- body ops ------------------------------------------------------------ */
typedef enum ir_opcode {
  /* leaves */
  IR_LOAD = 0,   /* buf, index[, mask arg0]: mask false -> const value f/i */
  IR_CONST,      /* f (floating dtypes) or i (others) */
  IR_INDEX_EXPR, /* value of `index` as dtype (i64) */
  IR_RAND,       /* uniform [0,1) f32/f64 at element `index` of stream i (seed: run) */
  IR_RANDN,      /* standard normal, same addressing */
  /* unary math (arg0) */
  IR_NEG, IR_ABS, IR_EXP, IR_EXP2, IR_EXPM1, IR_LOG, IR_LOG2, IR_LOG1P, IR_SQRT, IR_RSQRT,
  IR_SIN, IR_COS, IR_TAN, IR_TANH, IR_SIGMOID, IR_RELU, IR_ERF, IR_FLOOR, IR_CEIL,
  IR_ROUND, /* half to even */
  IR_TRUNC, IR_RECIPROCAL, IR_SIGN, IR_NOT /* logical */, IR_ISNAN, IR_ISINF,
  IR_BNOT, /* bitwise not (ints) */
  /* binary math (arg0, arg1) */
  IR_ADD, IR_SUB, IR_MUL,
  IR_DIV,      /* true division (floats); C division for ints (trunc) */
  IR_FLOORDIV, /* floor division (ints and floats, Python semantics) */
  IR_MOD,      /* Python remainder (sign of divisor), ints and floats */
  IR_POW, IR_MAX, IR_MIN, /* max/min propagate NaN like torch.maximum */
  IR_ATAN2,
  IR_EQ, IR_NE, IR_LT, IR_LE, IR_GT, IR_GE, /* -> bool */
  IR_AND, IR_OR, IR_XOR,                    /* logical -> bool */
  IR_BAND, IR_BOR, IR_BXOR,                 /* bitwise (ints/bool) */
  /* ternary */
  IR_WHERE,      /* arg0 ? arg1 : arg2 */
  /* conversion */
  IR_TO_DTYPE,   /* arg0 converted to `dtype` with ATen semantics */
  /* indirect indexing: arg0 (an integer value) becomes the index symbol
   * `sym` usable in later index expressions; negative values wrap by
   * `bound` (i = arg0 < 0 ? arg0 + bound : arg0) and out-of-range values
   * make the run fail with an error naming `bound`. */
  IR_INDIRECT,
  /* reductions */
  IR_REDUCE,     /* rtype, arg0 (value), arg1 (for argmax/argmin: the index
                    value, an IR_INDEX_EXPR of the flat reduction index) */
  /* side effects */
  IR_STORE,      /* buf, index, arg0 */
  IR_OPCODE_COUNT
} ir_opcode;

typedef enum ir_rtype {
  IR_R_SUM = 0, IR_R_PROD, IR_R_MAX, IR_R_MIN, IR_R_ARGMAX, IR_R_ARGMIN,
  IR_R_ANY, IR_R_ALL
} ir_rtype;

typedef int32_t ir_val; /* index into ir_body.ops; -1 = none */

/* Flags of math ops (ir_op.i). IR_MATH_LOWP: the graph op's dtype is
 * f16/bf16 (the op computes in f32); a backend may use an approximation
 * whose error is far below that dtype's rounding (the cuda backend's sin,
 * cos and sigmoid; see docs/cuda.md). Interpreters and the cpu backend
 * ignore it. */
enum { IR_MATH_LOWP = 1 };

typedef struct ir_op {
  uint16_t opcode;   /* ir_opcode */
  uint8_t rtype;     /* IR_REDUCE */
  uint8_t inner;     /* 1 if it depends on a reduction var (set by the builder) */
  int32_t dtype;     /* result dtype (IR_STORE: the buffer's) */
  ir_val args[3];
  int32_t buf;       /* IR_LOAD / IR_STORE */
  const sym_expr* index;  /* IR_LOAD / IR_STORE / IR_INDEX_EXPR / IR_RAND(N) */
  const sym_expr* sym;    /* IR_INDIRECT: the symbol it defines */
  int64_t bound;     /* IR_INDIRECT: size of the indexed dim (static) ... */
  const sym_expr* bound_expr; /* ... or symbolic (one of the two is set) */
  double f;          /* IR_CONST (floats), IR_LOAD masked "other" */
  int64_t i;         /* IR_CONST (ints/bool), IR_RAND stream; math ops: IR_MATH_* flags */
} ir_op;

typedef struct ir_body {
  ir_op* ops;
  uint32_t n, cap;
} ir_body;

/* ---- buffers ---------------------------------------------------------------- */
/* IR_BUF_VIEW: a view (shape, strides, offset in elements) of the storage of
 * COMPUTED buffer `base` - no storage, producer or writer of its own; only
 * extern nodes read it (lowering passes an extern a view of a computed
 * buffer this way instead of copying it, where the extern takes the
 * layout). Backends bind it to base's memory; the scheduler counts its
 * reads as reads of base (lib/sched/deps.c), so base lives as long as the
 * view is read. */
typedef enum ir_buf_kind { IR_BUF_INPUT = 0, IR_BUF_CONSTANT, IR_BUF_COMPUTED, IR_BUF_VIEW } ir_buf_kind;

typedef struct ir_buffer {
  int32_t kind;              /* ir_buf_kind */
  int32_t dtype;
  uint32_t rank;
  const sym_expr** shape;
  const sym_expr** strides;  /* layout, elements */
  const sym_expr* offset;    /* elements */
  const sym_expr* numel;     /* storage elements to allocate (computed) */
  int32_t graph_input;       /* INPUT: index among graph inputs */
  ptc_value graph_value;     /* INPUT/CONSTANT: the graph value */
  int32_t producer;          /* COMPUTED: node index */
  int32_t base;              /* VIEW: the COMPUTED buffer whose storage it views */
  char name[24];             /* "buf3", "in0", "c2" */
} ir_buffer;

/* ---- extern calls ------------------------------------------------------------ */
typedef enum ir_extern_kind {
  IR_EXT_MATMUL = 0,  /* C = act(alpha*A@B + beta*bias), batched with broadcast */
  IR_EXT_CONV,        /* conv1d/conv2d (+bias, +act) */
  IR_EXT_FALLBACK,    /* run the ref kernel of graph node `node` */
  IR_EXT_CUSTOM       /* host-registered op (ptc_register_extern_op) */
} ir_extern_kind;

typedef enum ir_activation { IR_ACT_NONE = 0, IR_ACT_RELU, IR_ACT_GELU, IR_ACT_GELU_TANH,
                             IR_ACT_SILU, IR_ACT_SIGMOID, IR_ACT_TANH } ir_activation;

typedef struct ir_extern {
  int32_t kind;              /* ir_extern_kind */
  uint32_t n_in, n_out;
  int32_t* in;               /* buffer ids (-1 = absent optional input) */
  int32_t* out;              /* buffer ids */
  uint32_t graph_node;       /* FALLBACK/CUSTOM: the graph node it runs */
  /* MATMUL / CONV epilogue */
  double alpha, beta;        /* beta applies to the bias input (in[2]) */
  int32_t activation;        /* ir_activation */
} ir_extern;

/* ---- nodes -------------------------------------------------------------------- */
typedef enum ir_node_kind { IR_POINTWISE = 0, IR_REDUCTION, IR_EXTERN } ir_node_kind;

typedef struct ir_node {
  int32_t kind;              /* ir_node_kind */
  int32_t out_buf;           /* POINTWISE/REDUCTION: the buffer it writes */
  uint32_t n_ranges, n_rranges;
  const sym_expr** ranges;   /* outer loop sizes (x vars) */
  const sym_expr** rranges;  /* reduction loop sizes (r vars) */
  ir_body body;
  ir_extern ext;             /* IR_EXTERN */
  const char* origin;        /* graph node names it came from, for dumps */
} ir_node;

/* ---- program -------------------------------------------------------------------- */
typedef struct ir_program {
  ptc_context* ctx;
  const ptc_graph* graph;    /* the (decomposed) graph it was lowered from */
  sym_env* env;              /* clone of graph env + loop vars + indirect syms */
  size_t n_size_syms;        /* env symbols [0, n_size_syms) are graph sizes */
  const sym_expr* xvars[PTC_MAX_RANK];
  const sym_expr* rvars[PTC_MAX_RANK];
  ptc_arena arena;
  ptc_vec buffers;           /* ir_buffer */
  ptc_vec nodes;             /* ir_node */
  int32_t* input_bufs;       /* graph input i -> buffer */
  size_t n_inputs;
  int32_t* output_bufs;      /* graph output i -> buffer (any kind) */
  size_t n_outputs;
} ir_program;

static inline ir_buffer* ir_buf(const ir_program* p, int32_t id) {
  return &PTC_VEC_AT(&p->buffers, ir_buffer, id);
}
static inline ir_node* ir_node_at(const ir_program* p, size_t i) {
  return &PTC_VEC_AT(&p->nodes, ir_node, i);
}

/** Creates an empty program for graph `g` (env cloned, loop vars made). */
ptc_status ir_program_create(ptc_context* ctx, const ptc_graph* g, ir_program** out);
void ir_program_destroy(ir_program* p);
/** Adds a buffer (fields copied; name generated); returns its id. */
ptc_status ir_add_buffer(ir_program* p, const ir_buffer* b, int32_t* id);
/** Adds a node (body moved in); returns its index. */
ptc_status ir_add_node(ir_program* p, const ir_node* n, size_t* index);

/* ---- body builder (define-by-run ops interface) ------------------------------ */
/* Each returns the new op's value, or -1 on OOM (then b is poisoned and
 * ir_body_ok returns false). `p` is needed to know which symbols are
 * reduction vars (to set `inner`). */
ir_val ir_ops_load(ir_program* p, ir_body* b, int32_t buf, const sym_expr* index);
ir_val ir_ops_load_masked(ir_program* p, ir_body* b, int32_t buf, const sym_expr* index,
                          ir_val mask, double other);
ir_val ir_ops_const_f(ir_body* b, double v, int32_t dtype);
ir_val ir_ops_const_i(ir_body* b, int64_t v, int32_t dtype);
ir_val ir_ops_index_expr(ir_program* p, ir_body* b, const sym_expr* e, int32_t dtype);
ir_val ir_ops_rand(ir_program* p, ir_body* b, int normal, const sym_expr* index, int64_t stream,
                   int32_t dtype);
ir_val ir_ops_unary(ir_body* b, ir_opcode op, ir_val x, int32_t dtype);
/** ir_ops_unary with IR_MATH_* flags in the op's `i` (ops differing in
 * flags are distinct values). */
ir_val ir_ops_unary_flags(ir_body* b, ir_opcode op, ir_val x, int32_t dtype, int64_t flags);
ir_val ir_ops_binary(ir_body* b, ir_opcode op, ir_val x, ir_val y, int32_t dtype);
ir_val ir_ops_where(ir_body* b, ir_val c, ir_val x, ir_val y, int32_t dtype);
ir_val ir_ops_to_dtype(ir_body* b, ir_val x, int32_t dtype);
/** Defines a fresh index symbol from integer value x; *sym receives it. */
ir_val ir_ops_indirect(ir_program* p, ir_body* b, ir_val x, const sym_expr* bound,
                       const sym_expr** sym);
ir_val ir_ops_reduce(ir_body* b, ir_rtype rt, ir_val x, ir_val index, int32_t dtype);
ir_val ir_ops_store(ir_program* p, ir_body* b, int32_t buf, const sym_expr* index, ir_val v);
bool ir_body_ok(const ir_body* b);
void ir_body_free(ir_body* b);

/* ---- utilities ------------------------------------------------------------------- */
/** True if expression e mentions a reduction var of p. */
bool ir_uses_rvar(const ir_program* p, const sym_expr* e);
/** Readable dump of the whole program (buffers, nodes, bodies). */
void ir_program_dump(const ir_program* p, ptc_strbuf* sb);
/** Number of ops of a body by kind, for realize heuristics and dumps. */
uint32_t ir_body_count(const ir_body* b, ir_opcode op);
const char* ir_opcode_name(ir_opcode op);

/* ---- lowering (lib/ir/lower*.c) ------------------------------------------------------ */
/** Lowering tunables (Inductor's realize thresholds). */
typedef struct ir_lower_options {
  uint32_t realize_reads_threshold;     /* 4 */
  uint32_t realize_opcount_threshold;   /* 30 */
  uint32_t realize_acc_reads_threshold; /* 8 */
  uint32_t max_inline_ops;              /* 100 */
  bool inline_pointwise;                /* false = realize every op (no fusion) */
  /* f16/bf16 values computed by pointwise ops and inlined into their
   * readers (same loop body) are passed on in f32, unrounded, as Inductor
   * does (no downcast-upcast pair between fused ops; rounding where a value
   * is stored); sin/cos/sigmoid ops of f16/bf16 dtype are marked
   * IR_MATH_LOWP. false
   * (default) = round after every op, as eager. Explicit casts (to_dtype)
   * still round. */
  bool lowp_f32_math;
  /* Externs that take a strided operand (GEMM operands of a layout a GEMM
   * takes, attention q/k/v/mask) read views of computed buffers in place
   * (IR_BUF_VIEW) instead of copies, and attention writes [B, L, H, Ev]
   * for a transposing user. Default true; PTC_EXTERN_VIEWS=0 in the
   * environment makes the default false. */
  bool extern_views;
  /* Channels-last activations around 2-D convolutions (default false; the
   * CUDA backend sets it unless PTC_CUDA_CONV_NHWC=0): a conv2d of one
   * group and a floating dtype whose output plane has statically more than
   * conv_nhwc_plane (default 196) pixels writes its output [N][H][W][C]
   * (the value keeps its [N, C, H, W] shape; its strides say the layout),
   * and a lazy input of such a convolution is stored [N][H][W][C] (a loop
   * in that order) when its channels fill 16-byte vectors, as is that of a
   * conv2d of one group whose input plane is that large (its output NCHW);
   * a value stored once for several users (the first realization decides)
   * likewise; a max_pool2d of a channels-last input writes channels-last.
   * Graph outputs stay contiguous. Pointwise readers follow the strides;
   * nothing else changes. conv_nhwc_plane_f32 (default 196) is the bound
   * for float32 convolutions, conv_nhwc_plane for the others (the CUDA
   * backend lowers both to 49 where its Hopper TMA convolution runs them). */
  bool conv_nhwc;
  int64_t conv_nhwc_plane;
  int64_t conv_nhwc_plane_f32;
} ir_lower_options;
void ir_lower_options_init(ir_lower_options* o);
/** Lowers a graph (already decomposed) into a program. Ops without a
 * lowering become IR_EXT_FALLBACK nodes. */
ptc_status ir_lower(ptc_context* ctx, const ptc_graph* g, const ir_lower_options* o,
                    ir_program** out);

/* ---- interpreter (lib/ir/ir_interp.c) --------------------------------------------------
 * Executes a program point by point (slow; for tests of lowering and as the
 * oracle for codegen). Buffers: inputs from `inputs`, constants from the
 * graph, computed ones allocated; outputs copied into `outputs` (contiguous,
 * preallocated by the caller with the right shapes). */
ptc_status ir_interpret(const ir_program* p, const ptc_tensor* inputs, size_t n_in,
                        const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                        size_t n_syms, uint64_t seed);

/* ---- conventions of programs made by ir_lower (documentation only) -----------
 * (Appended by the lib/ir owner; no declaration changed.)
 *  - Ranges omit dims of static size 1 (their index is the constant 0), so a
 *    [N, 1] value and an [N] value loop alike; a rank-0 value has no range.
 *  - IR_REDUCTION: ranges = the output's dims, rranges = the reduced dims
 *    (both without static size-1 dims); the body is the inlined input (ops
 *    marked inner), one IR_REDUCE (inner = 0), ops on its result, the store.
 *    A reduction with nothing to reduce is lowered as a pointwise value.
 *  - Computed buffers are written by one node and have offset 0; they are
 *    contiguous except the output of a scaled_dot_product_attention
 *    fallback of rank >= 4 whose only users swap its dims
 *    (transpose(1, 2) of [B, H, L, Ev]): that one is laid out [B, L, H, Ev],
 *    as eager's fused attention returns it, so the transposed value is
 *    contiguous and a reshape of it for the next GEMM needs no copy.
 *  - IR_BUF_VIEW buffers (views of a computed buffer's storage) are inputs of
 *    MATMUL externs whose layout a GEMM takes as it is (a unit stride in one
 *    matrix dim, the other at least the matrix extent, batch dims that
 *    collapse into one stride, a constant offset of a multiple of 256 bytes)
 *    and inputs of scaled_dot_product_attention fallbacks (any strides);
 *    other extern inputs that view a computed buffer are copies.
 *  - Several INPUT (or CONSTANT) buffers may view the same graph input
 *    (same graph_input / graph_value) with other shape, strides and offset:
 *    views passed to externs without a copy, e.g. linear's transposed weight.
 *  - IR_EXT_MATMUL: n_in = 3 (A, B, bias or -1) with torch.matmul semantics
 *    on the buffers' shapes (1-D operands, broadcast batch dims); the bias is
 *    a 1-D vector along the output's last dim, scaled by beta (beta = 0 when
 *    absent); activation last. IR_EXT_CONV: in = {x, w, bias or -1}, the
 *    convolution's attributes are those of graph node graph_node; the
 *    activation may be set. FALLBACK / CUSTOM: in[k] is node input k (-1 when
 *    absent), out[k] node output k (contiguous). graph_node is set on every
 *    extern (the node it came from).
 *  - Masked loads give f (floating) or i (others) where the mask is false;
 *    ops may run on that placeholder, so values with integer division or
 *    indirect indexing are realized before being read under a mask.
 *  - Bodies have no duplicate ops (common subexpressions are shared), except
 *    stores and reductions.
 *  - IR_RAND of dtype f32 (f64) is floor(u * 2^24) / 2^24 (2^53) with u =
 *    ref_uniform(seed, stream, index); IR_RANDN is ref_normal(...) rounded;
 *    stream = the graph node index, index = the row-major element index.
 *  - Loop vars x_k, r_k range over [0, 2^62]; an indirect symbol i<k> over
 *    [0, bound - 1] (static bound) or [0, 2^62].
 */

#endif /* PTC_LIB_IR_H */
