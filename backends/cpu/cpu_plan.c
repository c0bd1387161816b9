/* cpu_plan.c - builds the CPU run plan from a scheduled program: C source
 * for every generated kernel (cpu_codegen_kernel), all of them compiled and
 * loaded at once through the cache (cpu_compile_all), and per step the
 * buffer argument list; externs are recorded with their IR node. Running
 * the plan is cpu_plan_run.c's job. */
#include "cpu_plan_internal.h"

#include <stdatomic.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cpu_plan_destroy(cpu_plan* plan) {
  if (!plan) return;
  plan_ws* ws = plan->ws_cache ? atomic_exchange(&plan->ws_cache->kept, NULL) : NULL;
  if (ws) {
    ptc_free_ctx(plan->ctx, ws->base, ws->bytes, CPU_WS_ALIGN);
    free(ws);
  }
  free(plan->ws_cache);
  for (uint32_t i = 0; plan->steps && i < plan->n_steps; i++) {
    cpu_compiled_unload(&plan->steps[i].compiled);
    free(plan->steps[i].bufs);
  }
  free(plan->steps);
  sched_plan_destroy(plan->s);
  ir_program_destroy(plan->p);
  free(plan);
}

size_t cpu_plan_num_kernels(const cpu_plan* plan) { return plan ? plan->n_steps : 0; }

const char* cpu_plan_kernel_name(const cpu_plan* plan, size_t i) {
  return plan && i < plan->n_steps ? plan->steps[i].name : NULL;
}

static ptc_status record_extern(const cpu_plan* plan, const sched_kernel* k, plan_step* st) {
  if (k->n_nodes != 1)
    return PTC_ERR(INTERNAL, "cpu backend: extern kernel with %u nodes", k->n_nodes);
  st->is_extern = true;
  st->node = k->nodes[0];
  const ir_node* n = ir_node_at(plan->p, st->node);
  if (n->kind != IR_EXTERN)
    return PTC_ERR(INTERNAL, "cpu backend: kernel %s is marked extern but node %u is not",
                   k->name, st->node);
  snprintf(st->name, sizeof st->name, "extern_%s_%u", cpu_extern_kind_name(n->ext.kind), st->node);
  return PTC_OK;
}

/* Keeps the buffer list of a generated kernel (the source itself goes). */
static ptc_status record_kernel(plan_step* st, const cpu_kernel_src* src) {
  st->n_bufs = src->n_bufs;
  st->bufs = malloc((src->n_bufs + 1) * sizeof *st->bufs);
  if (!st->bufs) return ptc_status_oom();
  if (src->n_bufs) memcpy(st->bufs, src->bufs, src->n_bufs * sizeof *src->bufs);
  snprintf(st->name, sizeof st->name, "%s", src->symbol);
  return PTC_OK;
}

/* Generates every non-extern kernel's source into srcs (step index in map). */
static ptc_status generate(cpu_plan* plan, cpu_kernel_src* srcs, uint32_t* map, size_t* n_src) {
  for (uint32_t i = 0; i < plan->n_steps; i++) {
    plan_step* st = &plan->steps[i];
    const sched_kernel* k = &plan->s->kernels[i];
    st->sched_kernel = i;
    if (k->is_extern) {
      PTC_TRY(record_extern(plan, k, st));
      continue;
    }
    cpu_kernel_src* src = &srcs[*n_src];
    PTC_TRY(cpu_codegen_kernel(plan->p, plan->s, i, src));
    map[(*n_src)++] = i;
    PTC_TRY(record_kernel(st, src));
  }
  return PTC_OK;
}

static void source_path_of(plan_step* st) {
  size_t n = strlen(st->compiled.path);
  if (n > 3 && strcmp(st->compiled.path + n - 3, ".so") == 0)
    snprintf(st->source_path, sizeof st->source_path, "%.*s.c", (int)(n - 3), st->compiled.path);
}

static ptc_status compile_steps(cpu_plan* plan) {
  uint32_t n = plan->n_steps;
  cpu_kernel_src* srcs = calloc(n + 1, sizeof *srcs);
  cpu_compiled* done = calloc(n + 1, sizeof *done);
  uint32_t* map = calloc(n + 1, sizeof *map);
  size_t n_src = 0;
  ptc_status s = srcs && done && map ? PTC_OK : ptc_status_oom();
  if (!s) s = generate(plan, srcs, map, &n_src);
  if (!s) s = cpu_compile_all(plan->ctx, srcs, n_src, done);
  for (size_t i = 0; !s && i < n_src; i++) {
    plan_step* st = &plan->steps[map[i]];
    st->compiled = done[i];
    source_path_of(st);
  }
  for (size_t i = 0; srcs && i < n_src; i++) cpu_kernel_src_free(&srcs[i]);
  free(srcs);
  free(done);
  free(map);
  return s;
}

ptc_status cpu_plan_build(ptc_context* ctx, ir_program* p, sched_plan* s, cpu_plan** out) {
  cpu_plan* plan = calloc(1, sizeof *plan);
  if (!plan) {
    sched_plan_destroy(s);
    ir_program_destroy(p);
    return ptc_status_oom();
  }
  plan->ctx = ctx;
  plan->p = p;
  plan->s = s;
  plan->n_bufs = p->buffers.len;
  plan->n_steps = s->n_kernels;
  plan->steps = calloc(s->n_kernels + 1, sizeof *plan->steps);
  plan->ws_cache = calloc(1, sizeof *plan->ws_cache);
  ptc_status st = plan->steps && plan->ws_cache ? compile_steps(plan) : ptc_status_oom();
  if (st) {
    cpu_plan_destroy(plan);
    return st;
  }
  *out = plan;
  return PTC_OK;
}
