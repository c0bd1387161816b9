/* sched.c - the scheduler's entry points: options, sched_run (dependencies
 * -> fusion -> kernel order -> memory plan) and freeing a plan. */
#include <stdlib.h>

#include "sched_internal.h"

void sched_options_init(sched_options* o) {
  if (!o) return;
  *o = (sched_options){.fuse = true, .max_rounds = 10, .window = 64, .max_nodes = 64};
}

void sched_plan_destroy(sched_plan* s) {
  if (!s) return;
  for (uint32_t k = 0; k < s->n_kernels; k++) {
    free(s->kernels[k].nodes);
    free(s->kernels[k].node_inner);
    free(s->kernels[k].ranges);
    free(s->kernels[k].rranges);
  }
  free(s->kernels);
  free(s->buf_home);
  free(s->buf_slot);
  free(s->buf_free_after);
  free(s->slots);
  ptc_sb_free(&s->log);
  free(s);
}

static void ctx_free(sched_ctx* c) {
  if (c->deps)
    for (size_t i = 0; i < c->n_nodes; i++) sdeps_free(&c->deps[i]);
  free(c->deps);
  free(c->writer);
  free(c->rd_start);
  free(c->rd_node);
  free(c->is_output);
  free(c->var_class);
  for (int k = 0; k <= PTC_MAX_RANK; k++) free(c->rename[k]);
  sched_groups_free(c);
  free(c->grp_of);
  free(c->gmark);
  free(c->bmark);
  free(c->stack);
  free(c->topo);
  free(c->order);
}

static ptc_status check_args(const ir_program* p, const sched_options* o, sched_plan** out) {
  if (!p || !out) return PTC_ERR(INVALID_ARGUMENT, "sched_run: NULL argument");
  if (!p->env) return PTC_ERR(INVALID_ARGUMENT, "sched_run: program has no symbol env");
  if (p->nodes.len >= UINT32_MAX / 2 || p->buffers.len >= INT32_MAX)
    return PTC_ERR(INVALID_ARGUMENT, "sched_run: program too large (%zu nodes, %zu buffers)",
                   p->nodes.len, p->buffers.len);
  if (o && o->max_nodes < 1)
    return PTC_ERR(INVALID_ARGUMENT, "sched_run: sched_options.max_nodes must be at least 1");
  return NULL;
}

static ptc_status run(sched_ctx* c, sched_plan* s) {
  c->gmark = calloc(c->n_nodes + 1, sizeof *c->gmark);
  c->bmark = calloc(c->n_bufs + 1, sizeof *c->bmark);
  c->stack = calloc(c->n_nodes + 1, sizeof *c->stack);
  c->topo = calloc(c->n_nodes + 1, sizeof *c->topo);
  c->order = calloc(c->n_nodes + 1, sizeof *c->order);
  if (!c->gmark || !c->bmark || !c->stack || !c->topo || !c->order) return ptc_status_oom();
  PTC_TRY(sched_classify_vars(c));
  PTC_TRY(sched_build_deps(c));
  PTC_TRY(sched_groups_init(c));
  if (c->opt.fuse) PTC_TRY(sched_fuse(c, s));
  PTC_TRY(sched_build_kernels(c, s));
  PTC_TRY(sched_plan_memory(c, s));
  return c->oom || s->log.oom ? ptc_status_oom() : NULL;
}

ptc_status sched_run(const ir_program* p, const sched_options* o, sched_plan** out) {
  PTC_TRY(check_args(p, o, out));
  *out = NULL;
  sched_plan* s = calloc(1, sizeof *s);
  if (!s) return ptc_status_oom();
  ptc_sb_init(&s->log);
  sched_ctx c = {
      .p = p, .env = p->env, .n_nodes = p->nodes.len, .n_bufs = p->buffers.len, .log = &s->log};
  if (o)
    c.opt = *o;
  else
    sched_options_init(&c.opt);
  ptc_status st = run(&c, s);
  ctx_free(&c);
  if (st) {
    sched_plan_destroy(s);
    return st;
  }
  *out = s;
  return NULL;
}
