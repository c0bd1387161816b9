/* sched.h - the scheduler (internal): dependencies, fusion into kernels,
 * kernel order, and memory planning over an ir_program.
 *
 * Model (Inductor's, simplified for a CPU-first C backend):
 *  - Every IR node reads buffers at index expressions and writes its output
 *    buffer (deps are extracted by walking bodies: IR_LOAD/IR_STORE).
 *  - A kernel is a group of nodes sharing one outer loop nest (`ranges`,
 *    x vars) and, if any node reduces, one inner loop nest (`rranges`, r
 *    vars). Member nodes are:
 *      reduction nodes with (ranges, rranges) equal to the kernel's;
 *      "inner" pointwise nodes whose ranges == kernel ranges ++ rranges
 *        (they run inside the inner loop; their x vars beyond the kernel's
 *        outer rank are renamed to r vars: x_{n+k} -> r_k);
 *      "outer" pointwise nodes whose ranges == kernel ranges (they run once
 *        per outer point, after the nodes before them).
 *    Extern nodes are always kernels of their own.
 *  - can_fuse(A, B): same loop structure (above), no cycle through other
 *    kernels, and for every buffer of A read by B the read index equals the
 *    write index (after renaming) or the buffer is a kernel-local value
 *    read after its reduction completes. Horizontal fusion (no dependency)
 *    needs shared reads. score = (kind, bytes saved, -distance). Greedy
 *    rounds until no progress (at most 10 rounds; window 64; max 64 nodes).
 *  - Kernel-local buffers: written and read only inside one kernel, never a
 *    graph output, indexed by outer vars only -> kept in a C local, never
 *    allocated (e.g. the row max and row sum of a fused softmax).
 *  - Memory plan: each remaining computed buffer gets a workspace slot;
 *    slots are freed after the last kernel reading the buffer and reused by a
 *    later buffer of the same byte-size expression (pointer-equal) ; a
 *    pointwise node whose input buffer dies there with the same size, dtype
 *    and identical read/write index writes in place (same slot).
 *    Graph outputs are not pooled (they may be the caller's memory).
 */
#ifndef PTC_LIB_SCHED_H
#define PTC_LIB_SCHED_H

#include "../ir/ir.h"

typedef struct sched_kernel {
  uint32_t n_nodes;
  uint32_t* nodes;            /* ir node indices, in execution order */
  uint8_t* node_inner;        /* per member: 1 if an inner pointwise node */
  bool is_extern;             /* a single IR_EXTERN node */
  uint32_t n_ranges, n_rranges;
  const sym_expr** ranges;    /* shared outer loop sizes (x0..) */
  const sym_expr** rranges;   /* shared reduction loop sizes (r0..) */
  char name[32];              /* "k3_fused_amax_sum_div" style, for dumps */
} sched_kernel;

typedef enum sched_buf_home {
  SCHED_HOME_EXTERNAL = 0,  /* input / constant: memory given at run time */
  SCHED_HOME_OUTPUT,        /* graph output: caller's memory if layouts match */
  SCHED_HOME_SLOT,          /* workspace slot `slot` */
  SCHED_HOME_LOCAL          /* kernel-local C value, never allocated */
} sched_buf_home;

typedef struct sched_slot {
  const sym_expr* bytes;    /* size expression */
} sched_slot;

typedef struct sched_plan {
  uint32_t n_kernels;
  sched_kernel* kernels;    /* in execution order */
  int32_t* buf_home;        /* per buffer: sched_buf_home */
  int32_t* buf_slot;        /* per buffer: slot index for SLOT, else -1 */
  int32_t* buf_free_after;  /* per buffer: kernel index after which it is dead, -1 never */
  uint32_t n_slots;
  sched_slot* slots;
  uint32_t n_fusions, n_inplace, n_reused; /* statistics */
  ptc_strbuf log;           /* every fusion decision with score or refusal reason */
} sched_plan;

typedef struct sched_options {
  bool fuse;                /* false: one kernel per node (benchmark baseline) */
  uint32_t max_rounds;      /* 10 */
  uint32_t window;          /* 64 */
  uint32_t max_nodes;       /* 64 */
} sched_options;
void sched_options_init(sched_options* o);

ptc_status sched_run(const ir_program* p, const sched_options* o, sched_plan** out);
void sched_plan_destroy(sched_plan* s);
/** Workspace layout of one run: evaluates every slot's size with the run's
 * symbol values and gives slot k the byte offset off[k] (n_slots entries,
 * caller-allocated), each slot rounded up to a multiple of `align`; *total is
 * the workspace size. Errors: those of sym_eval. */
ptc_status sched_slot_offsets(const sched_plan* s, const int64_t* syms, size_t n_syms,
                              size_t align, size_t* off, size_t* total);
/** Readable dump: kernels with member nodes, buffer homes and slots. */
void sched_plan_dump(const ir_program* p, const sched_plan* s, ptc_strbuf* sb);

/** Dependencies of one node (for tests and dumps). */
typedef struct sched_dep {
  int32_t buf;
  const sym_expr* index;    /* NULL = whole buffer (extern) */
} sched_dep;
/** Reads and writes of node i; arrays malloc'ed, caller frees. */
ptc_status sched_node_deps(const ir_program* p, size_t i, sched_dep** reads, size_t* n_reads,
                           sched_dep** writes, size_t* n_writes);

#endif /* PTC_LIB_SCHED_H */
