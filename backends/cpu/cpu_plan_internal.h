/* cpu_plan_internal.h - the run plan's structure, shared by its builder
 * (cpu_plan.c), its executor (cpu_plan_run.c) and the backend's dumps
 * (cpu_backend.c). Immutable once built. */
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

struct cpu_plan {
  ptc_context* ctx;
  ir_program* p;
  sched_plan* s;
  uint32_t n_steps;
  plan_step* steps;
  size_t n_bufs;          /* = p->buffers.len */
};

#endif /* PTC_BACKENDS_CPU_PLAN_INTERNAL_H */
