/* ptc_graph.h - building tensor graphs: symbols, inputs, constants, nodes
 * calling ATen-style ops, outputs; printing, JSON save/load, graph passes.
 *
 * Thread-safety: a ptc_graph is externally synchronised - one thread at a
 * time may call functions on it (read-only queries from several threads are
 * safe if nobody mutates it). Distinct graphs are independent.
 */
#ifndef PTC_GRAPH_H
#define PTC_GRAPH_H

#include "ptc_core.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A graph: values (inputs, constants, node outputs), nodes and outputs,
 * plus the shape environment of its symbolic sizes. Single owner. */
typedef struct ptc_graph ptc_graph;

/** Graph-scoped value id (0, 1, 2, ... in creation order). */
typedef uint32_t ptc_value;
/** Marks an absent optional input (e.g. layer_norm without weight). */
#define PTC_VALUE_NONE ((ptc_value)0xFFFFFFFFu)

/** Graph-scoped id of a symbolic size expression; 0 means "not symbolic". */
typedef uint32_t ptc_sym;

/** One dimension: `sym` != 0 names a symbolic size owned by the graph,
 * otherwise `value` is the static size. */
typedef struct ptc_dim {
  int64_t value;
  ptc_sym sym;
  uint32_t reserved;
} ptc_dim;

/** Largest tensor rank the library accepts (a documented limit, reported as
 * INVALID_ARGUMENT when exceeded). */
#define PTC_MAX_RANK 16

/* ---- attributes ------------------------------------------------------------ */
/** Attribute types. */
enum {
  PTC_ATTR_INT = 0,    /**< i */
  PTC_ATTR_FLOAT = 1,  /**< f */
  PTC_ATTR_BOOL = 2,   /**< i (0 or 1) */
  PTC_ATTR_INTS = 3,   /**< ints[count]; syms[count] optional (0 = static) */
  PTC_ATTR_FLOATS = 4, /**< floats[count] */
  PTC_ATTR_STRING = 5, /**< s (UTF-8, NUL-terminated) */
  PTC_ATTR_DTYPE = 6,  /**< i (a ptc_dtype) */
  PTC_ATTR_SYM = 7     /**< sym (a symbolic int); i is its hint, unused */
};

/** A named, typed attribute. Layout frozen in PTC_1.0 (arrays of it are
 * passed, so it has no struct_size); new kinds get new type codes. All
 * pointers are borrowed for the duration of the call only. */
typedef struct ptc_attr {
  const char* name;
  int32_t type;
  ptc_sym sym;
  int64_t i;
  double f;
  const int64_t* ints;
  const ptc_sym* syms;
  const double* floats;
  size_t count;
  const char* s;
} ptc_attr;

/** Convenience constructors (header-only, no ABI cost). */
static inline ptc_attr ptc_attr_int(const char* name, int64_t v) {
  ptc_attr a = {name, PTC_ATTR_INT, 0, v, 0.0, NULL, NULL, NULL, 0, NULL};
  return a;
}
static inline ptc_attr ptc_attr_float(const char* name, double v) {
  ptc_attr a = {name, PTC_ATTR_FLOAT, 0, 0, v, NULL, NULL, NULL, 0, NULL};
  return a;
}
static inline ptc_attr ptc_attr_bool(const char* name, int v) {
  ptc_attr a = {name, PTC_ATTR_BOOL, 0, v ? 1 : 0, 0.0, NULL, NULL, NULL, 0, NULL};
  return a;
}
static inline ptc_attr ptc_attr_ints(const char* name, const int64_t* v, size_t n) {
  ptc_attr a = {name, PTC_ATTR_INTS, 0, 0, 0.0, v, NULL, NULL, n, NULL};
  return a;
}
static inline ptc_attr ptc_attr_floats(const char* name, const double* v, size_t n) {
  ptc_attr a = {name, PTC_ATTR_FLOATS, 0, 0, 0.0, NULL, NULL, v, n, NULL};
  return a;
}
static inline ptc_attr ptc_attr_string(const char* name, const char* s) {
  ptc_attr a = {name, PTC_ATTR_STRING, 0, 0, 0.0, NULL, NULL, NULL, 0, s};
  return a;
}
static inline ptc_attr ptc_attr_dtype(const char* name, int32_t dtype) {
  ptc_attr a = {name, PTC_ATTR_DTYPE, 0, dtype, 0.0, NULL, NULL, NULL, 0, NULL};
  return a;
}

/* ---- creation ----------------------------------------------------------------- */
/** Creates an empty graph that retains `ctx` (allocations and logs go
 * through it). Errors: INVALID_ARGUMENT (NULL argument), RESOURCE_EXHAUSTED.
 * The caller owns `*out` and frees it with ptc_graph_destroy(). */
PTC_API PTC_MUST_USE ptc_status ptc_graph_create(ptc_context* ctx, ptc_graph** out);
/** Frees the graph, its constants' copies and its symbols. Accepts NULL. */
PTC_API void ptc_graph_destroy(ptc_graph* g);

/** Options of a new size symbol. */
typedef struct ptc_symbol_options {
  size_t struct_size;
  /** Example value used to decide guarded questions; -1 means none
   * ("unbacked": guarded questions about it fail). */
  int64_t hint;
  /** Inclusive value range; defaults 2 .. INT64_MAX/2 (sizes 0 and 1 are
   * specialised, so a dynamic size is at least 2). */
  int64_t min_value;
  int64_t max_value;
} ptc_symbol_options;
/** Fills defaults: hint -1, range [2, 2^62]. Never fails. */
PTC_API void ptc_symbol_options_init(ptc_symbol_options* opts);

/** Creates a size symbol named `name` (an identifier, unique in the graph).
 * A hint of 0 or 1 is specialised: the returned id is then 0 and the size is
 * static (callers pass ptc_dim{hint, 0}). `opts` may be NULL (no hint).
 * Errors: INVALID_ARGUMENT (bad/duplicate name, hint outside the range,
 * empty range), RESOURCE_EXHAUSTED. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_add_symbol(ptc_graph* g, const char* name,
                                                     const ptc_symbol_options* opts,
                                                     ptc_sym* out);

/** Adds a graph input. `shape[i].sym` may name a symbol (or any symbolic
 * expression id of this graph). `strides` (in elements, static) may be NULL
 * for contiguous. `name` may be NULL (then "in<N>"); names are copied.
 * Errors: INVALID_ARGUMENT (bad dtype, negative size, rank > PTC_MAX_RANK,
 * unknown sym, size overflow), RESOURCE_EXHAUSTED. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_add_input(ptc_graph* g, const char* name,
                                                    int32_t dtype, const ptc_dim* shape,
                                                    size_t rank, const int64_t* strides,
                                                    ptc_value* out);

/** Constant flags. */
enum {
  PTC_CONSTANT_COPY = 0,  /**< the graph copies the data (default) */
  PTC_CONSTANT_BORROW = 1 /**< the graph keeps the pointer; the caller keeps
                               the memory alive and unchanged while the graph
                               and executables compiled from it live */
};
/** Adds a constant (weights) of static shape, contiguous, `data` holding
 * numel*dtype_size bytes. Errors: INVALID_ARGUMENT (NULL data with numel > 0,
 * bad dtype/shape/flags), RESOURCE_EXHAUSTED. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_add_constant(ptc_graph* g, const char* name,
                                                       int32_t dtype, const int64_t* shape,
                                                       size_t rank, const void* data,
                                                       uint32_t flags, ptc_value* out);

/** Adds a node calling op `op` (an ATen-style name, see ptc_op_name()) on
 * `inputs` (PTC_VALUE_NONE for absent optional inputs) with `attrs`.
 * Writes the ids of the op's outputs to `outputs` (capacity `max_outputs`)
 * and their number to `*n_outputs` (may be NULL when max_outputs is enough).
 * Validation runs the op's meta function: errors name the op, the argument
 * and what was expected, e.g. "add: cannot broadcast [4,3] with [5]".
 * Errors: NOT_FOUND (unknown op), INVALID_ARGUMENT (arity, attributes,
 * dtypes, shapes, ids), OUT_OF_RANGE (capacity too small; the needed count
 * is in *n_outputs), RESOURCE_EXHAUSTED. On error the graph is unchanged. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_add_node(ptc_graph* g, const char* op,
                                                   const ptc_value* inputs, size_t n_inputs,
                                                   const ptc_attr* attrs, size_t n_attrs,
                                                   ptc_value* outputs, size_t max_outputs,
                                                   size_t* n_outputs);

/** Marks `v` as the next graph output (a value may be output several
 * times). Errors: INVALID_ARGUMENT (unknown id), RESOURCE_EXHAUSTED. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_add_output(ptc_graph* g, ptc_value v);

/* ---- queries -------------------------------------------------------------------- */
/** Value kinds. */
enum { PTC_VALUE_INPUT = 0, PTC_VALUE_CONSTANT = 1, PTC_VALUE_NODE = 2 };

/** Metadata of a value. `shape`/`strides` point into the graph and stay valid
 * until the graph is modified or destroyed; `name` likewise. */
typedef struct ptc_value_info {
  size_t struct_size;
  int32_t kind;
  int32_t dtype;
  uint32_t rank;
  uint32_t reserved;
  const ptc_dim* shape;
  const ptc_dim* strides;
  const char* name;
} ptc_value_info;
/** Fills `info` (whose struct_size the caller sets). Errors: INVALID_ARGUMENT
 * (unknown id, NULL, struct_size too small). */
PTC_API PTC_MUST_USE ptc_status ptc_graph_value_info(const ptc_graph* g, ptc_value v,
                                                     ptc_value_info* info);
/** Number of values / nodes / inputs / outputs. NULL graph gives 0. */
PTC_API size_t ptc_graph_num_values(const ptc_graph* g);
PTC_API size_t ptc_graph_num_nodes(const ptc_graph* g);
PTC_API size_t ptc_graph_num_inputs(const ptc_graph* g);
PTC_API size_t ptc_graph_num_outputs(const ptc_graph* g);
/** The i-th input / output value id; PTC_VALUE_NONE if out of range. */
PTC_API ptc_value ptc_graph_input(const ptc_graph* g, size_t i);
PTC_API ptc_value ptc_graph_output(const ptc_graph* g, size_t i);

/** Writes the text of symbolic expression `sym` ("s0*s1 + 4") into `buf`
 * (capacity `cap`, always NUL-terminated when cap > 0) and returns the full
 * length needed excluding the NUL (call with cap 0 to size). Returns 0 for
 * an unknown id. */
PTC_API size_t ptc_graph_sym_format(const ptc_graph* g, ptc_sym sym, char* buf, size_t cap);

/* ---- size arithmetic (for hosts that trace programs) -------------------------- */

/** Operations of ptc_graph_sym_op (floor division and modulo as in Python). */
enum {
  PTC_SYM_ADD = 0,
  PTC_SYM_SUB = 1,
  PTC_SYM_MUL = 2,
  PTC_SYM_FLOORDIV = 3,
  PTC_SYM_MOD = 4,
  PTC_SYM_CEILDIV = 5,
  PTC_SYM_MIN = 6,
  PTC_SYM_MAX = 7
};

/** Computes `a op b` on sizes, each a static value (sym 0) or a symbolic
 * size of this graph, simplified (`(s0*4)//4` is `s0`). `*out` is static
 * (sym 0, value set) when the result folds to a constant; otherwise it names
 * a symbolic expression of the graph and `value` is its value at the
 * symbols' hints (-1 if a symbol has none). Usable anywhere a ptc_dim or a
 * symbolic attribute is accepted (e.g. the sizes of a reshape).
 * Errors: INVALID_ARGUMENT (NULL, unknown op or symbol id, division by zero
 * or by a divisor not known to be positive), RESOURCE_EXHAUSTED.
 * Not thread-safe with other calls on the same graph. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_sym_op(ptc_graph* g, int32_t op, ptc_dim a, ptc_dim b,
                                                 ptc_dim* out);

/** Relations of ptc_graph_sym_decide / ptc_graph_sym_static. */
enum { PTC_SYM_EQ = 0, PTC_SYM_NE = 1, PTC_SYM_LT = 2, PTC_SYM_LE = 3, PTC_SYM_GT = 4,
       PTC_SYM_GE = 5 };

/** Decides `a rel b` the way a traced program branches on sizes: from the
 * symbols' ranges when that settles it (nothing recorded), otherwise from the
 * hints, recording a guard that keeps the answer true (listed by
 * ptc_graph_guard_format and checked on every run of executables compiled
 * from the graph). `*result` is 1 or 0.
 * Errors: INVALID_ARGUMENT (NULL, unknown relation or symbol id),
 * FAILED_PRECONDITION when a symbol has no hint. Not thread-safe with other
 * calls on the same graph. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_sym_decide(ptc_graph* g, int32_t rel, ptc_dim a,
                                                     ptc_dim b, int* result);

/** Whether `a rel b` holds for every value in the symbols' ranges: 1 (always),
 * 0 (never), -1 (depends on the values, or invalid arguments). Records
 * nothing. Not thread-safe with calls that modify the same graph. */
PTC_API int ptc_graph_sym_static(const ptc_graph* g, int32_t rel, ptc_dim a, ptc_dim b);

/** Number of shape guards recorded while building (e.g. "s0 == s1" from
 * broadcasting two symbolic sizes). */
PTC_API size_t ptc_graph_num_guards(const ptc_graph* g);
/** Text of guard `i`, same buffer convention as ptc_graph_sym_format. */
PTC_API size_t ptc_graph_guard_format(const ptc_graph* g, size_t i, char* buf, size_t cap);

/** Prints the graph as a table (one row per node: opcode, name, target,
 * args, attrs, dtype and symbolic shape) to `f`. Errors: INVALID_ARGUMENT,
 * UNKNOWN (write error). */
PTC_API PTC_MUST_USE ptc_status ptc_graph_print(const ptc_graph* g, FILE* f);
/** Same text into `buf` (capacity `cap`); `*needed` gets the length without
 * the NUL. Errors: INVALID_ARGUMENT, OUT_OF_RANGE (buffer too small: `*needed`
 * is set, `buf` holds a truncated, NUL-terminated prefix). */
PTC_API PTC_MUST_USE ptc_status ptc_graph_format(const ptc_graph* g, char* buf, size_t cap,
                                                 size_t* needed);

/* ---- op registry -------------------------------------------------------------- */
/** Number of ops in the registry (op set v1). Thread-safe. */
PTC_API size_t ptc_op_count(void);
/** Name of op `i` (static string) or NULL if out of range. Thread-safe. */
PTC_API const char* ptc_op_name(size_t i);

/* ---- JSON ------------------------------------------------------------------------ */
/** Options for saving. */
typedef struct ptc_json_save_options {
  size_t struct_size;
  /** Constants of at most this many bytes are stored inline (base64);
   * larger ones go to `weights_path`. Default 4096. */
  uint64_t inline_limit;
  /** Side file for large constants, written next to the JSON and referenced
   * by its base name; NULL stores everything inline. */
  const char* weights_path;
} ptc_json_save_options;
/** Fills defaults. Never fails. */
PTC_API void ptc_json_save_options_init(ptc_json_save_options* opts);

/** Options for loading. */
typedef struct ptc_json_load_options {
  size_t struct_size;
  /** Folder where side weight files are looked up; NULL = current folder. */
  const char* base_dir;
  /** Limits (0 = default): bytes of JSON (64 MiB), nodes (1,000,000),
   * nesting depth (64), bytes of one tensor (16 GiB). */
  uint64_t max_bytes;
  uint64_t max_nodes;
  uint32_t max_depth;
  uint32_t reserved;
  uint64_t max_tensor_bytes;
} ptc_json_load_options;
/** Fills defaults. Never fails. */
PTC_API void ptc_json_load_options_init(ptc_json_load_options* opts);

/** Serialises `g` to a JSON text allocated with malloc into `*out` (caller
 * frees with ptc_free) and writes the side weight file if configured.
 * `opts` may be NULL. Errors: INVALID_ARGUMENT, UNKNOWN (I/O, with the path),
 * RESOURCE_EXHAUSTED. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_to_json(const ptc_graph* g,
                                                  const ptc_json_save_options* opts,
                                                  char** out);
/** Parses and fully validates a graph (ops, ids, cycles, attribute types,
 * sizes, weights by size and hash) from `json[0..len)`. `opts` may be NULL.
 * Errors: INVALID_ARGUMENT / DATA_LOSS (truncated or corrupt weights) /
 * NOT_FOUND (unknown op, missing weight file) with a message naming what is
 * wrong and where; RESOURCE_EXHAUSTED. The caller owns `*out`. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_from_json(ptc_context* ctx, const char* json,
                                                    size_t len,
                                                    const ptc_json_load_options* opts,
                                                    ptc_graph** out);
/** File helpers around the two calls above. Load sets base_dir to the file's
 * folder when opts->base_dir is NULL. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_save(const ptc_graph* g, const char* path,
                                               const ptc_json_save_options* opts);
PTC_API PTC_MUST_USE ptc_status ptc_graph_load(ptc_context* ctx, const char* path,
                                               const ptc_json_load_options* opts,
                                               ptc_graph** out);
/** Frees memory the library returned with "caller frees with ptc_free".
 * Accepts NULL. */
PTC_API void ptc_free(void* p);

/* ---- passes ----------------------------------------------------------------------- */
/** Removes nodes, constants and symbols-free values that no output depends
 * on. Value ids of survivors are renumbered densely in their old order; graph
 * inputs are kept. `*removed` (may be NULL) gets the number of nodes removed.
 * Errors: INVALID_ARGUMENT, RESOURCE_EXHAUSTED (graph unchanged). */
PTC_API PTC_MUST_USE ptc_status ptc_graph_eliminate_dead_code(ptc_graph* g, size_t* removed);
/** Merges nodes with the same op, inputs and attributes (random ops are never
 * merged), then removes the dead duplicates. Errors as above. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_eliminate_common_subexpressions(ptc_graph* g,
                                                                          size_t* merged);
/** Evaluates nodes whose inputs are all constants (deterministic ops only,
 * outputs up to `max_bytes` each, 0 = 16 MiB) with the reference backend and
 * replaces them by constants, then removes dead code. Errors as above plus
 * any evaluation error. */
PTC_API PTC_MUST_USE ptc_status ptc_graph_fold_constants(ptc_graph* g, uint64_t max_bytes,
                                                         size_t* folded);

#ifdef __cplusplus
}
#endif
#endif /* PTC_GRAPH_H */
