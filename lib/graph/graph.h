/* graph.h - internal representation of ptc_graph: values, nodes, stored
 * attributes, and the graph's shape environment. Not public API. */
#ifndef PTC_LIB_GRAPH_H
#define PTC_LIB_GRAPH_H

#include "../core/core.h"
#include "../sym/sym.h"

struct op_def;

/** An attribute as stored in the graph (deep-copied into the graph arena). */
typedef struct gattr {
  const char* name;
  int32_t type;              /* PTC_ATTR_* */
  int64_t i;                 /* INT, BOOL, DTYPE */
  double f;                  /* FLOAT */
  size_t count;              /* INTS, FLOATS */
  const sym_expr** exprs;    /* INTS: each element as an expression (const or symbolic) */
  const double* floats;      /* FLOATS */
  const char* s;             /* STRING */
  const sym_expr* sym;       /* SYM */
} gattr;

/** Attribute set of a node (sorted by name). */
typedef struct gattrs {
  size_t n;
  const gattr* a;
} gattrs;

/** A value: a graph input, a constant, or output `out_index` of node `node`. */
typedef struct gvalue {
  int32_t kind;                /* PTC_VALUE_INPUT / CONSTANT / NODE */
  int32_t dtype;
  uint32_t rank;
  const sym_expr** shape;      /* rank expressions (arena) */
  const sym_expr** strides;    /* rank expressions (arena), in elements */
  ptc_dim* pub_shape;          /* public mirrors for ptc_graph_value_info */
  ptc_dim* pub_strides;
  const char* name;            /* arena */
  uint32_t node;               /* producing node index (kind NODE) */
  uint32_t out_index;
  /* constants */
  const void* data;            /* borrowed or owned (see owned) */
  void* owned;                 /* malloc'ed copy or NULL */
  size_t nbytes;
} gvalue;

typedef struct gnode {
  const struct op_def* op;
  uint32_t n_in;
  const ptc_value* in;         /* arena; PTC_VALUE_NONE for absent inputs */
  gattrs attrs;
  uint32_t n_out;
  const ptc_value* out;        /* arena */
  const char* name;            /* arena, e.g. "add_3" */
} gnode;

struct ptc_graph {
  ptc_context* ctx;
  ptc_arena arena;
  sym_env* env;
  ptc_vec values;   /* gvalue */
  ptc_vec nodes;    /* gnode */
  ptc_vec inputs;   /* ptc_value */
  ptc_vec outputs;  /* ptc_value */
  ptc_vec syms;     /* const sym_expr*: public ptc_sym id k -> syms[k-1] */
};

static inline gvalue* graph_value(const ptc_graph* g, ptc_value v) {
  return &PTC_VEC_AT(&g->values, gvalue, v);
}
static inline gnode* graph_node(const ptc_graph* g, size_t i) {
  return &PTC_VEC_AT(&g->nodes, gnode, i);
}

/** Public id of expression `e` (registering it if new); 0 for constants, or
 * on OOM (reported via *oom). */
ptc_sym graph_sym_id(ptc_graph* g, const sym_expr* e, bool* oom);
/** Expression of public id `s`, or NULL if unknown. */
const sym_expr* graph_sym_expr(const ptc_graph* g, ptc_sym s);

/** Adds a value with the given metadata (shape/strides copied); used by
 * inputs, constants, node outputs, the JSON loader and passes. */
ptc_status graph_push_value(ptc_graph* g, int32_t kind, int32_t dtype, uint32_t rank,
                            const sym_expr* const* shape, const sym_expr* const* strides,
                            const char* name, ptc_value* out);
/** Contiguous strides of a shape (row-major) into out[rank]. NULL on OOM. */
bool graph_contiguous_strides(sym_env* env, uint32_t rank, const sym_expr* const* shape,
                              const sym_expr** out);
/** Deep copy (constants: copied if owned, borrowed if borrowed). */
ptc_status graph_clone(const ptc_graph* g, ptc_graph** out);
/** Replays `g` into a new graph in which the listed input dims are symbolic
 * (new symbols with the static size as hint; sizes 0 and 1 stay static),
 * re-running every meta function. Errors name the node whose attributes do
 * not allow the dim to vary. (lib/decomp/replay.c) */
ptc_status graph_make_dynamic(const ptc_graph* g, const ptc_dynamic_dim* dims, size_t n,
                              ptc_graph** out);
/** Builds a graph from a table of kept node indices / values (used by DCE):
 * keep_value[v] true keeps value v. Renumbers ids densely. */
ptc_status graph_compact(ptc_graph* g, const bool* keep_value, const bool* keep_node);

/** Rewrites every use (node inputs, graph outputs) of value v < n_repl to
 * repl[v] (pass_cse.c); an allocation failure leaves the graph unchanged.
 * Shared by CSE and constant folding. */
ptc_status graph_replace_uses(ptc_graph* g, const ptc_value* repl, size_t n_repl);

/** Stored-attribute lookup by name (NULL if absent). */
const gattr* gattrs_find(const gattrs* a, const char* name);

/** Formats a symbolic shape "[s0, 4]" into sb. */
void graph_format_shape(const sym_env* env, uint32_t rank, const sym_expr* const* shape,
                        ptc_strbuf* sb);

/** Byte size of a constant-shaped value; false on overflow or symbolic. */
bool graph_static_numel(const gvalue* v, int64_t* numel);

#endif /* PTC_LIB_GRAPH_H */
