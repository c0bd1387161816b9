/* randgraph_internal.h - the generator's private state shared by
 * randgraph.c (value pool, inputs, node insertion, outputs) and
 * randgraph_ops.c (the op tables and one builder per op family). */
#ifndef PTC_TESTS_RANDGRAPH_INTERNAL_H
#define PTC_TESTS_RANDGRAPH_INTERNAL_H

#include "randgraph.h"

enum { RG_MAX_VALS = 160 };

/** A value the generator may use as an operand. */
typedef struct rg_val {
  ptc_value v;
  int32_t dtype;
  uint32_t rank;
  ptc_dim dims[RG_MAX_RANK];
  double mag;      /* bound of |x| */
  double lo;       /* lower bound of x (>= 0.5 after the positive transform) */
  double err;      /* absolute error vs. an exact computation */
  bool exact;      /* every correct backend computes it bit-exactly */
  bool is_arg;     /* argmax/argmin result: only ever an output */
  int32_t arg_src; /* pool index of the values it reduces */
  int32_t arg_dim;
  bool arg_keepdim, arg_is_max;
  bool is_output;
  bool is_scalar;  /* a Python scalar operand seen as a value (never in the pool) */
  bool is_leaf;    /* a graph input or constant */
  uint32_t uses;   /* nodes reading it */
} rg_val;

typedef struct rg_gen {
  ptc_graph* g;
  rg_graph* rg;
  const rg_options* o;
  uint64_t rng;
  rg_val pool[RG_MAX_VALS];
  uint32_t n_pool;
  int32_t main_dtype;
  ptc_sym sym_ids[RG_MAX_SYMS];
  uint32_t n_const; /* constants added (for names) */
} rg_gen;

/* ---- random numbers (randgraph.c) ---- */
uint64_t rg_next(rg_gen* G);
/** Uniform integer in [lo, hi]. */
int64_t rg_int(rg_gen* G, int64_t lo, int64_t hi);
/** True with probability pct/100. */
bool rg_chance(rg_gen* G, uint32_t pct);
/** Uniform double in [0, 1). */
double rg_unit(rg_gen* G);

/* ---- dtypes ---- */
bool rg_is_float(int32_t dt);
bool rg_is_int(int32_t dt);
/** Unit roundoff of a float dtype, 0 for exact dtypes. */
double rg_unit_roundoff(int32_t dt);
/** Largest magnitude the generator lets a value of dtype reach. */
double rg_mag_limit(int32_t dt);

/* ---- shapes ---- */
/** Size of dim d at the largest run size (symbols at their biggest). */
int64_t rg_dim_max(const rg_gen* G, const ptc_dim* d);
int64_t rg_numel_max(const rg_gen* G, uint32_t rank, const ptc_dim* dims);
/** Symbol index of a bare symbol id, or -1 (static or a compound expression). */
int32_t rg_sym_index(const rg_gen* G, ptc_sym s);
/** Whether two dims are provably equal (same static size or same symbol id). */
bool rg_dim_eq(const ptc_dim* a, const ptc_dim* b);

/* ---- pool ---- */
/** A random pool value accepted by `ok` (NULL = any non-arg value), biased
 * towards recent values; -1 if none. */
typedef bool (*rg_filter)(const rg_val* v);
int32_t rg_pick(rg_gen* G, rg_filter ok);
/** Adds a graph input of `dtype` and dims; -1 when the input budget is
 * spent. Dims must be static or bare symbols. */
int32_t rg_new_input(rg_gen* G, int32_t dtype, uint32_t rank, const ptc_dim* dims);
/** Adds a constant of static shape with values in [-scale, scale) (floats)
 * or [-8, 8] (ints); -1 on failure. */
int32_t rg_new_constant(rg_gen* G, int32_t dtype, uint32_t rank, const int64_t* shape,
                        double scale);
/** Dims of a new operand broadcastable against `v`: compound symbolic dims
 * become 1, some dims become 1, some leading dims are dropped. Returns rank. */
uint32_t rg_broadcast_dims(rg_gen* G, const rg_val* v, ptc_dim* out);

/** Result model of one node: each output's magnitude bound, error and
 * exactness (applied to every output of the node). */
typedef struct rg_model {
  double mag, lo, err;
  bool exact;
} rg_model;

/** Adds node `op`; on success appends its outputs to the pool (ids in
 * out_idx[0..n)) with `model` and returns the number of outputs, else 0
 * (the graph is unchanged; the status is dropped). */
uint32_t rg_add(rg_gen* G, const char* op, const ptc_value* in, size_t n_in,
                const ptc_attr* attrs, size_t n_attrs, const rg_model* model,
                int32_t* out_idx);
/** Same for a single-output node: pool index or -1. */
int32_t rg_add1(rg_gen* G, const char* op, const ptc_value* in, size_t n_in,
                const ptc_attr* attrs, size_t n_attrs, const rg_model* model);

/* ---- conditioning helpers (randgraph_ops.c) ---- */
/** x -> abs(x) + 0.5 (for log, sqrt, reciprocal, divisors); ints -> abs+1. */
int32_t rg_make_positive(rg_gen* G, int32_t x);
/** x -> tanh(x) when |x| may exceed `limit` (exp-like ops); else x. */
int32_t rg_make_small(rg_gen* G, int32_t x, double limit);
/** x -> x * (1/mag) when mag exceeds the dtype's limit; else x. */
int32_t rg_rescale(rg_gen* G, int32_t x);

/** One generator step: picks an op family by weight and tries to add it;
 * returns the number of nodes added (0 = nothing fitted). */
uint32_t rg_step(rg_gen* G);
/** One extern-view block (randgraph_ops.c): GEMM outputs split, sliced,
 * reshaped, expanded or transposed into the operands of further GEMMs and of
 * scaled_dot_product_attention, attention outputs merged back into a GEMM,
 * and other users of the viewed bases; returns the number of nodes added. */
uint32_t rg_view_block(rg_gen* G);

#endif
