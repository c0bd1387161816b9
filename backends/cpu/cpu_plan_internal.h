/* cpu_plan_internal.h - the run plan's structure, shared by its builder
 * (cpu_plan.c), its executor (cpu_plan_run.c) and the backend's dumps
 * (cpu_backend.c). Immutable once built, except the kept workspace. */
#ifndef PTC_BACKENDS_CPU_PLAN_INTERNAL_H
#define PTC_BACKENDS_CPU_PLAN_INTERNAL_H

#include "cpu_rt.h"

/** One step of a run: a generated kernel or an extern call. */
typedef struct plan_step {
  uint32_t sched_kernel;  /* index in sched_plan.kernels */
  bool is_extern;
  uint32_t node;          /* extern: the IR node */
  uint32_t n_bufs;        /* generated: argument buffers (ids), in order */
  int32_t* bufs;
  cpu_compiled compiled;  /* generated: the loaded kernel */
  char name[64];          /* entry symbol, or "extern_<kind>_<node>" */
  char source_path[600];  /* generated: the C source beside the .so */
} plan_step;

/** The workspace of a finished run, kept for the next one (first-touch
 * page faults of a fresh multi-GiB allocation cost as much as a
 * memory-bound kernel). Taken and given back with atomic exchanges, so
 * concurrent runs stay independent: one takes it, the others allocate. */
typedef struct plan_ws {
  char* base;
  size_t bytes;
} plan_ws;

typedef struct plan_ws_cache {
  _Atomic(plan_ws*) kept;     /* NULL or the kept workspace */
} plan_ws_cache;

struct cpu_plan {
  plan_ws_cache* ws_cache;    /* mutable through a const plan */
  ptc_context* ctx;
  ir_program* p;
  sched_plan* s;
  uint32_t n_steps;
  plan_step* steps;
  size_t n_bufs;          /* = p->buffers.len */
};

#endif /* PTC_BACKENDS_CPU_PLAN_INTERNAL_H */
