/* cg_harness.h - helpers of the CPU codegen tests: a program over a graph
 * with size symbols, contiguous buffers, nodes from builder bodies, a
 * hand-made one-kernel schedule, and compile + load + run of the generated
 * source with the backend's flags (plus -Wall -Wextra -Werror, under gcc
 * and, when present, clang), independent of the compiler driver. */
#ifndef PTC_TESTS_CG_HARNESS_H
#define PTC_TESTS_CG_HARNESS_H

#include "backends/cpu/cpu.h"
#include "tests/check.h"

#define CGH_MAX_SYMS 8

typedef struct cgh {
  ptc_context* ctx;
  ptc_graph* g;
  ir_program* p;
} cgh;

/** Graph with size symbols names[i] (hints[i], range [lo, 2^62]) and its program. */
bool cgh_init(cgh* h, size_t n_syms, const char* const* names, const int64_t* hints, int64_t lo);
void cgh_free(cgh* h);
const sym_expr* cgh_sym(cgh* h, size_t i);
const sym_expr* cgh_c(cgh* h, int64_t v);
/** Contiguous buffer (computed unless `input`). Returns its id. */
int32_t cgh_buffer(cgh* h, bool input, int32_t dtype, uint32_t rank,
                   const sym_expr* const* shape);
/** Adds a node with `body` (moved in). Returns its index. */
uint32_t cgh_node(cgh* h, int32_t kind, int32_t out_buf, const sym_expr* const* ranges,
                  uint32_t n, const sym_expr* const* rranges, uint32_t nr, ir_body* body);
/** Flat contiguous index sum_k x_k * stride_k of a buffer over loop vars
 * (vars[k] = the symbol for dim k). */
const sym_expr* cgh_index(cgh* h, int32_t buf, const sym_expr* const* vars);

/** One-kernel plan over nodes[0..n): inputs EXTERNAL, computed buffers each
 * in their own slot; cgh_local() makes a buffer kernel-local. */
sched_plan* cgh_plan(cgh* h, const uint32_t* nodes, const uint8_t* inner, uint32_t n,
                     const sym_expr* const* ranges, uint32_t nr, const sym_expr* const* rranges,
                     uint32_t nrr);
void cgh_local(sched_plan* s, int32_t buf);
void cgh_plan_free(sched_plan* s);

typedef struct cgh_kernel {
  cpu_kernel_src src;
  void* dl;
  cpu_kernel_fn fn;
} cgh_kernel;

/** Generates kernel 0 of `s`, checks it compiles cleanly under gcc and clang
 * (-Wall -Wextra -Werror), builds it with the backend flags and loads it.
 * Prints the source and compiler log on failure. */
bool cgh_compile(cgh* h, const sched_plan* s, cgh_kernel* out);
void cgh_kernel_free(cgh_kernel* k);
/** Runs the kernel with mem[buffer id] pointers; returns the context. */
cpu_kernel_ctx cgh_run(const cgh_kernel* k, void* const* mem, const int64_t* syms,
                       uint64_t seed);

/** Runs ir_interpret on the program with the same inputs (mem[id] of every
 * input buffer, contiguous) and compares every buffer written by kernel 0
 * of `s` that is not kernel-local with mem[id] (floats within rtol/atol,
 * others exactly). Returns the number of mismatches (-1 if the interpreter
 * failed); prints the first few. */
int cgh_check_interp(cgh* h, const sched_plan* s, void* const* mem, const int64_t* syms,
                     uint64_t seed, double rtol, double atol);

/** Relative/absolute closeness with NaN == NaN and inf == inf. */
bool cgh_close(double got, double want, double rtol, double atol);

#endif
