/* op.h - the op registry and the meta-function interface (internal).
 *
 * Each op family file (ops_elementwise.c, ops_reduce.c, ops_nn.c,
 * ops_shape.c) defines a table `const op_def ptc_ops_<family>[]` and its
 * length `ptc_ops_<family>_count`; registry.c joins the tables. An op_def
 * names the op, its arity, its attribute schema (validated generically
 * before the meta function runs) and its meta function, which computes the
 * outputs' dtype, symbolic shape and strides or returns an error naming the
 * op, the argument and the expectation.
 */
#ifndef PTC_LIB_GRAPH_OP_H
#define PTC_LIB_GRAPH_OP_H

#include "graph.h"

/** Op flags. */
enum {
  OP_POINTWISE = 1u << 0,
  OP_REDUCTION = 1u << 1,
  OP_VIEW = 1u << 2,          /* outputs alias input 0's storage (strided view) */
  OP_RANDOM = 1u << 3,        /* nondeterministic given inputs: never CSE'd/folded */
  OP_MULTI_OUT = 1u << 4,     /* number of outputs decided by the meta function */
  OP_CREATION = 1u << 5,      /* no tensor inputs needed (full, arange, rand...) */
  OP_CUSTOM = 1u << 6         /* host-registered on a context (ptc_register_extern_op);
                                 run by lib/runtime/custom_op.c, never lowered */
};

/** Attribute schema entry. `type` is PTC_ATTR_*; an INTS attribute also
 * accepts a single INT (stored as a 1-element list); a FLOAT accepts an INT;
 * a SYM-or-int field uses type PTC_ATTR_SYM and accepts INT too. */
typedef struct op_attr_spec {
  const char* name;
  int32_t type;
  bool required;
} op_attr_spec;

/** Meta-function context: validated inputs and attributes in, outputs out. */
typedef struct meta_tensor {
  int32_t dtype;
  uint32_t rank;
  const sym_expr* const* shape;
  const sym_expr* const* strides;
  bool is_constant;          /* graph constant (data available below) */
  const void* const_data;    /* for constants, else NULL */
} meta_tensor;

typedef struct meta_out {
  int32_t dtype;
  uint32_t rank;
  const sym_expr** shape;    /* allocated with meta_alloc */
  const sym_expr** strides;  /* NULL = contiguous (filled by the graph) */
} meta_out;

typedef struct meta_ctx {
  const struct op_def* op;
  sym_env* env;
  ptc_arena* arena;          /* scratch + output arrays; owned by the graph */
  size_t n_in;
  const meta_tensor* const* in;   /* in[i] NULL for an absent optional input */
  const gattrs* attrs;
  size_t n_out;
  meta_out out[64];          /* meta functions fill out[0..n_out) */
} meta_ctx;

typedef ptc_status (*meta_fn)(meta_ctx* m);

typedef struct op_def {
  const char* name;
  int16_t min_in;            /* tensor inputs */
  int16_t max_in;            /* -1 = variadic */
  uint32_t flags;
  const op_attr_spec* attrs; /* terminated by {NULL} */
  meta_fn meta;
} op_def;

/** Registry lookup by name; NULL if unknown. Thread-safe. */
const op_def* op_find(const char* name);
size_t op_registry_count(void);
const op_def* op_registry_at(size_t i);

/* ---- per-context ops (op_lookup.c) ---------------------------------------------
 * Ops registered on a context (host custom ops) are found by graphs of that
 * context after the built-in registry. The op_def (and what its fields point
 * to) must stay valid until the context is destroyed: `owner` is released
 * then with `free_owner`. */
/** Built-in op `name`, else one registered on g's context; NULL if neither.
 * Thread-safe. */
const op_def* graph_find_op(const ptc_graph* g, const char* name);
/** Registers `def` on ctx. Errors: ALREADY_EXISTS when the name is a
 * built-in op or already registered on ctx; RESOURCE_EXHAUSTED. On error
 * the caller keeps `owner`. Thread-safe. */
ptc_status graph_register_op(ptc_context* ctx, const op_def* def, void* owner,
                             void (*free_owner)(void* owner));

/* Family tables (each defined in its ops_<family>.c). */
extern const op_def ptc_ops_elementwise[];
extern const size_t ptc_ops_elementwise_count;
extern const op_def ptc_ops_reduce[];
extern const size_t ptc_ops_reduce_count;
extern const op_def ptc_ops_nn[];
extern const size_t ptc_ops_nn_count;
extern const op_def ptc_ops_shape[];
extern const size_t ptc_ops_shape_count;

/* ---- meta helpers (meta.c) ------------------------------------------------- */
/** Error "op: <message>" with INVALID_ARGUMENT. */
ptc_status meta_fail(const meta_ctx* m, const char* fmt, ...) PTC_PRINTF(2, 3);
/** Scratch memory in the graph arena (zeroed); NULL on OOM. */
void* meta_alloc(meta_ctx* m, size_t size);
/** Appends an output with contiguous strides (shape copied). */
ptc_status meta_add_out(meta_ctx* m, int32_t dtype, uint32_t rank,
                        const sym_expr* const* shape);
/** Appends an output with explicit strides (views). */
ptc_status meta_add_view(meta_ctx* m, int32_t dtype, uint32_t rank,
                         const sym_expr* const* shape, const sym_expr* const* strides);

/* attributes: absent -> default. Types are already validated. */
int64_t meta_int(const meta_ctx* m, const char* name, int64_t dflt);
double meta_float(const meta_ctx* m, const char* name, double dflt);
bool meta_bool(const meta_ctx* m, const char* name, bool dflt);
const char* meta_str(const meta_ctx* m, const char* name, const char* dflt);
int32_t meta_dtype(const meta_ctx* m, const char* name, int32_t dflt);
bool meta_has(const meta_ctx* m, const char* name);
/** INTS attribute as expressions (count in *n); NULL with *n = 0 if absent. */
const sym_expr** meta_exprs(const meta_ctx* m, const char* name, size_t* n);
/** INTS attribute as static ints into out[cap]; error naming the attribute if
 * an element is symbolic or there are more than cap. Absent: *n = 0. */
ptc_status meta_ints(const meta_ctx* m, const char* name, int64_t* out, size_t cap,
                     size_t* n);

/** Normalises a possibly negative dim against rank (rank 0 accepts -1 and 0
 * when allow_scalar); error "op: dim 3 is out of range for a tensor of rank 2". */
ptc_status meta_dim(const meta_ctx* m, int64_t dim, uint32_t rank, uint32_t* out);

/** Broadcasts two shapes (ATen rules). Size-1 dims broadcast; two symbolic
 * sizes that may differ are decided with a guard (sym_guard). Error:
 * "op: cannot broadcast [4, 3] with [5]". Output in arena. */
ptc_status meta_broadcast(meta_ctx* m, uint32_t ra, const sym_expr* const* a, uint32_t rb,
                          const sym_expr* const* b, uint32_t* rout, const sym_expr*** out);
/** Broadcasts all present inputs in[first..n_in). */
ptc_status meta_broadcast_inputs(meta_ctx* m, size_t first, uint32_t* rout,
                                 const sym_expr*** out);

/** ATen result_type over the present tensor inputs in[first..n_in), treating
 * rank-0 tensors with lower priority than dimensioned ones, plus an optional
 * Python scalar of category `scalar_cat` (-1 none, 0 bool, 1 int, 2 float). */
int32_t meta_result_type(const meta_ctx* m, size_t first, int scalar_cat);

/** numel of a shape as an expression. */
const sym_expr* meta_numel(meta_ctx* m, uint32_t rank, const sym_expr* const* shape);
/** "[s0, 4]" rendered into a scratch string (arena) for messages. */
const char* meta_shape_str(meta_ctx* m, uint32_t rank, const sym_expr* const* shape);
/** Requires two sizes to be equal (statically or with a guard); error
 * "op: <what>: expected A, got B". */
ptc_status meta_expect_eq(meta_ctx* m, const sym_expr* expected, const sym_expr* got,
                          const char* what);
/** Requires dtype to be one of a category: error "op: argument 'x' must be a
 * floating tensor, got i64". mask bits: 1 bool, 2 int, 4 float. */
ptc_status meta_expect_dtype(const meta_ctx* m, size_t input, const char* argname,
                             unsigned mask);

#endif /* PTC_LIB_GRAPH_OP_H */
