/* randgraph.h - seeded random-graph generator for differential tests and
 * benchmarks, built on the public C API only.
 *
 * rg_generate() builds a valid graph from a seed: inputs of random dtypes
 * and shapes (1-4 dims, sizes 1-17, sometimes bigger, some dims symbolic),
 * then a random mix of pointwise unary/binary ops (broadcasting, scalar
 * `other`), views, reductions, softmax/log_softmax/layer_norm/rms_norm,
 * matmul/linear, cat, where and to_dtype, then outputs. Some graphs
 * (view_percent) also get one extern-view block: GEMM outputs split,
 * sliced, reshaped, expanded or transposed into further GEMMs and
 * scaled_dot_product_attention, whose output is merged back into a GEMM
 * (lowering passes such views to externs in place, IR_BUF_VIEW); the other
 * graphs are the same as without blocks. Values stay well
 * conditioned: the generator tracks a bound on every value's magnitude and
 * inserts abs/+0.5 before log-like ops, tanh before exp-like ops and a
 * rescale when values grow. Discontinuous ops (comparisons, floor, casts to
 * integers...) only see values that every backend computes bit-exactly, so
 * two correct backends agree.
 *
 * For every output it also records an error model (the absolute error two
 * correct backends may differ by, from magnitudes, rounding of each op and
 * reduction lengths) used by rg_compare(), and for argmax/argmin outputs
 * the output holding the values they index, so near-ties compare the values
 * at the indices instead of the indices.
 *
 * The same seed always gives the same graph (the generator never reads the
 * clock or global state). Not thread-safe per rg_graph; distinct ones are
 * independent.
 */
#ifndef PTC_TESTS_RANDGRAPH_H
#define PTC_TESTS_RANDGRAPH_H

#include <ptc/ptc.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum {
  RG_MAX_RANK = 6,    /* generated tensors never exceed this rank */
  RG_MAX_SYMS = 2,    /* size symbols per graph */
  RG_MAX_INPUTS = 24, /* graph inputs per graph */
  RG_MAX_OUTPUTS = 8, /* graph outputs per graph */
  RG_MAX_RUNS = 3     /* size sets a dynamic graph runs at */
};

/** Generator options; fill with rg_options_init. */
typedef struct rg_options {
  uint64_t seed;
  uint32_t min_ops, max_ops;   /* generator steps (each adds 1-4 nodes); default 2..8 */
  uint32_t dynamic_percent;    /* graphs with symbolic dims; default 25 */
  uint32_t lowp_percent;       /* graphs whose main dtype is f16/bf16; default 10 */
  uint32_t int_percent;        /* graphs whose main dtype is i32/i64; default 10 */
  uint32_t strided_percent;    /* run-time inputs given with a permuted layout; default 10 */
  uint32_t view_percent;       /* graphs with one extern-view block added; default 18 */
  int64_t max_numel;           /* elements per tensor (at the largest run size); default 6000 */
} rg_options;
void rg_options_init(rg_options* o, uint64_t seed);

/** One graph input: dtype and dims (sym[d] >= 0 names a symbol index). */
typedef struct rg_input {
  int32_t dtype;
  uint32_t rank;
  int64_t size[RG_MAX_RANK];
  int32_t sym[RG_MAX_RANK];
  uint32_t value_kind; /* RG_VALUES_* */
  bool strided;        /* run-time tensor given with a permuted memory layout */
} rg_input;
enum { RG_VALUES_SIGNED = 0 }; /* floats in [-1, 1), ints in [-8, 8], bools 0/1 */

/** What rg_compare needs to know about one output. */
typedef struct rg_output {
  int32_t dtype;
  double mag;        /* bound of |value| */
  double err;        /* absolute error two correct backends may differ by */
  int32_t arg_of;    /* argmax/argmin: output index of the values reduced, else -1 */
  int32_t arg_dim;   /* the reduced dim of those values, -1 = all */
  bool arg_keepdim;
  bool arg_is_max;
} rg_output;

/** A generated graph and what is needed to feed and check it. */
typedef struct rg_graph {
  ptc_graph* g;
  uint64_t seed;
  uint32_t n_syms;
  int64_t hints[RG_MAX_SYMS];
  uint32_t n_inputs;
  rg_input inputs[RG_MAX_INPUTS];
  uint32_t n_outputs;
  rg_output outputs[RG_MAX_OUTPUTS];
  uint32_t n_ops;    /* nodes added */
  char ops[512];     /* op names in order, for summaries */
} rg_graph;

/** Generates the graph of `o->seed` in `ctx`. Never fails on a valid seed:
 * an op the meta functions reject is replaced by another. Errors:
 * RESOURCE_EXHAUSTED, or INTERNAL when no output could be made. */
ptc_status rg_generate(ptc_context* ctx, const rg_options* o, rg_graph* out);
void rg_graph_free(rg_graph* rg);

/** Number of size sets the graph runs at (1 static, RG_MAX_RUNS dynamic)
 * and the symbol values of set `k` (k = 0: the hints). */
uint32_t rg_num_runs(const rg_graph* rg);
void rg_run_sizes(const rg_graph* rg, uint32_t k, int64_t* sym_values);

/** Host input tensors for one run. */
typedef struct rg_inputs {
  uint32_t n;
  ptc_tensor t[RG_MAX_INPUTS];
  int64_t shape[RG_MAX_INPUTS][RG_MAX_RANK];
  int64_t strides[RG_MAX_INPUTS][RG_MAX_RANK];
  void* data[RG_MAX_INPUTS];
} rg_inputs;
/** Allocates and fills random inputs for the symbol values `sym_values`
 * (rg->n_syms entries) from `seed`. Returns false on out of memory. */
bool rg_inputs_make(const rg_graph* rg, const int64_t* sym_values, uint64_t seed,
                    rg_inputs* out);
void rg_inputs_free(rg_inputs* in);

/** Compares `got` (backend under test) with `want` (the oracle) output by
 * output: dtypes and shapes exactly, integers and bools exactly, floats
 * within max(dtype atol, 2 * modelled error) + dtype rtol * |want|, NaNs
 * equal NaNs; argmax/argmin by the values at the indices. Returns the number
 * of mismatching outputs and writes the first mismatches into msg[cap]. */
int rg_compare(const rg_graph* rg, const ptc_results* got, const ptc_results* want, char* msg,
               size_t cap);

/** Prints the seed, the symbol values, the op list and the graph table. */
void rg_print(const rg_graph* rg, const int64_t* sym_values, FILE* f);

#endif
