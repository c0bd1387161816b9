/* cuda_plan.c - builds the cuda run plan from a scheduled program: CUDA
 * source for every generated kernel, all compiled at once for the device's
 * architecture (cuda_build_all: cache + parallel NVRTC), each cubin loaded
 * as a module with its i32/i64 entry points; extern steps recorded (GEMM on
 * the device, the rest on the host, listed once in the log); graph
 * constants uploaded to device memory once per executable. */
#include "cuda_plan.h"

#include "cuda_conv_wcache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* ext_kind_name(int32_t kind) {
  static const char* const names[] = {"matmul", "conv", "fallback", "custom"};
  return kind >= 0 && kind <= IR_EXT_CUSTOM ? names[kind] : "extern";
}

void cuda_plan_destroy(cuda_plan* plan) {
  if (!plan) return;
  const cu_api* cu = &cuda_libs_get()->cu;
  cu_context prev = NULL;
  bool entered = plan->dev && !cuda_ctx_enter(plan->dev, &prev);
  for (uint32_t i = 0; plan->steps && i < plan->n_steps; i++) {
    if (plan->steps[i].module && entered) cu->ModuleUnload(plan->steps[i].module);
    free(plan->steps[i].bufs);
    free(plan->steps[i].syms);
  }
  for (size_t i = 0; i < plan->n_uploads; i++) cuda_free(plan->uploads[i]);
  cuda_deferred_destroy(plan->deferred);
  cuda_static_layout_free(plan->static_layout);
  cuda_wcache_destroy(plan->wcache);
  if (entered) cuda_ctx_leave(plan->dev, prev);
  free(plan->steps);
  free(plan->const_ptr);
  free(plan->uploads);
  free(plan->split_order);
  sched_plan_destroy(plan->s);
  ir_program_destroy(plan->p);
  ptc_graph_destroy(plan->dg);
  free(plan);
}

/* Appends op name `op` to the host-op list once. */
static void note_host_op(cuda_plan* plan, const char* op) {
  size_t n = strlen(plan->host_ops), len = strlen(op);
  for (const char* q = strstr(plan->host_ops, op); q; q = strstr(q + 1, op))
    if ((q == plan->host_ops || q[-1] == ' ') && (q[len] == ',' || q[len] == 0)) return;
  if (n + len + 3 < sizeof plan->host_ops)
    snprintf(plan->host_ops + n, sizeof plan->host_ops - n, "%s%s", n ? ", " : "", op);
}

static ptc_status record_extern(cuda_plan* plan, const sched_kernel* k, cuda_step* st) {
  if (k->n_nodes != 1) return PTC_ERR(INTERNAL, "cuda backend: extern kernel with %u nodes", k->n_nodes);
  st->is_extern = true;
  st->node = k->nodes[0];
  const ir_node* n = ir_node_at(plan->p, st->node);
  if (n->kind != IR_EXTERN)
    return PTC_ERR(INTERNAL, "cuda backend: kernel %s is marked extern but node %u is not",
                   k->name, st->node);
  st->on_host = !cuda_ext_on_device(plan->p, n);
  if (st->on_host) {
    plan->n_host_steps++;
    const gnode* gn = n->ext.graph_node < plan->dg->nodes.len ? graph_node(plan->dg, n->ext.graph_node) : NULL;
    note_host_op(plan, gn ? gn->op->name : ext_kind_name(n->ext.kind));
  }
  snprintf(st->name, sizeof st->name, "extern_%s_%u%s", ext_kind_name(n->ext.kind), st->node,
           st->on_host ? "_host" : "");
  return PTC_OK;
}

static ptc_status record_kernel(cuda_step* st, cuda_kernel_src* src) {
  st->n_bufs = src->n_bufs;
  st->bufs = src->bufs;
  st->n_syms = src->n_syms;
  st->syms = src->syms;
  src->bufs = NULL;
  src->syms = NULL;
  st->layout = src->layout;
  st->block_x = src->block_x;
  st->block_y = src->block_y;
  st->slots = src->slots;
  st->uses_err = src->uses_err;
  st->tunable = src->tunable;
  st->max_threads = src->max_threads;
  st->split = src->split;
  st->grid_per_sm = src->grid_per_sm;
  snprintf(st->name, sizeof st->name, "%s", src->name);
  return PTC_OK;
}

static ptc_status load_kernel(cuda_step* st, const cuda_kernel_src* src, const cuda_cubin* cubin) {
  const cu_api* cu = &cuda_libs_get()->cu;
  char what[96];
  snprintf(what, sizeof what, "loading kernel %s", st->name);
  CUDA_TRY(cu->ModuleLoadData(&st->module, cubin->data), what);
  char fn[64];
  if (src->has_i32) {
    snprintf(fn, sizeof fn, "%s_i32", src->name);
    CUDA_TRY(cu->ModuleGetFunction(&st->fn_i32, st->module, fn), what);
  }
  if (src->has_i64) {
    snprintf(fn, sizeof fn, "%s_i64", src->name);
    CUDA_TRY(cu->ModuleGetFunction(&st->fn_i64, st->module, fn), what);
  }
  return PTC_OK;
}

static ptc_status compile_steps(cuda_plan* plan) {
  uint32_t n = plan->n_steps;
  cuda_kernel_src* srcs = calloc(n + 1, sizeof *srcs);
  cuda_build_job* jobs = calloc(n + 1, sizeof *jobs);
  uint32_t* map = calloc(n + 1, sizeof *map);
  size_t n_src = 0;
  ptc_status s = srcs && jobs && map ? PTC_OK : ptc_status_oom();
  for (uint32_t i = 0; !s && i < n; i++) {
    cuda_step* st = &plan->steps[i];
    const sched_kernel* k = &plan->s->kernels[i];
    st->sched_kernel = i;
    if (k->is_extern) {
      s = record_extern(plan, k, st);
      continue;
    }
    s = cuda_codegen_kernel(plan->p, plan->s, i, &srcs[n_src]);
    if (!s) s = record_kernel(st, &srcs[n_src]);
    if (!s) {
      jobs[n_src].source = srcs[n_src].source;
      jobs[n_src].name = st->name;
      map[n_src++] = i;
    }
    plan->uses_err |= st->uses_err;
  }
  const cuda_device* d = plan->dev;
  if (!s) s = cuda_build_all(plan->ctx, jobs, n_src, d->cc_major * 10 + d->cc_minor);
  for (size_t j = 0; !s && j < n_src; j++) {
    cuda_step* st = &plan->steps[map[j]];
    st->cache_hit = jobs[j].cache_hit;
    snprintf(st->source_path, sizeof st->source_path, "%s", jobs[j].source_path);
    snprintf(st->tune_key, sizeof st->tune_key, "%s", jobs[j].key);
    s = load_kernel(st, &srcs[j], &jobs[j].cubin);
  }
  for (size_t j = 0; jobs && j < n_src; j++) cuda_cubin_free(&jobs[j].cubin);
  for (size_t j = 0; srcs && j < n_src; j++) cuda_kernel_src_free(&srcs[j]);
  free(srcs);
  free(jobs);
  free(map);
  return s;
}

/* Every graph constant a buffer views is copied to the device once. */
static ptc_status upload_constants(cuda_plan* plan) {
  const ir_program* p = plan->p;
  const cu_api* cu = &cuda_libs_get()->cu;
  plan->const_ptr = calloc(plan->n_bufs + 1, sizeof *plan->const_ptr);
  plan->uploads = calloc(plan->n_bufs + 1, sizeof *plan->uploads);
  if (!plan->const_ptr || !plan->uploads) return ptc_status_oom();
  for (size_t i = 0; i < plan->n_bufs; i++) {
    const ir_buffer* b = ir_buf(p, (int32_t)i);
    if (b->kind != IR_BUF_CONSTANT) continue;
    for (size_t j = 0; j < i && !plan->const_ptr[i]; j++) /* aliases share one copy */
      if (ir_buf(p, (int32_t)j)->kind == IR_BUF_CONSTANT && ir_buf(p, (int32_t)j)->graph_value == b->graph_value)
        plan->const_ptr[i] = plan->const_ptr[j];
    if (plan->const_ptr[i]) continue;
    const gvalue* gv = graph_value(p->graph, b->graph_value);
    if (!gv->data || !gv->nbytes) continue;
    cu_deviceptr dp;
    PTC_TRY(cuda_alloc(gv->nbytes, NULL, &dp));
    plan->uploads[plan->n_uploads++] = dp;
    CUDA_TRY(cu->MemcpyHtoDAsync(dp, gv->data, gv->nbytes, NULL), "uploading a constant");
    plan->const_ptr[i] = dp;
  }
  CUDA_TRY(cu->StreamSynchronize(NULL), "uploading constants");
  return PTC_OK;
}

ptc_status cuda_plan_build(ptc_context* ctx, const cuda_device* d, ptc_graph* dg, ir_program* p,
                           sched_plan* s, cuda_plan** out) {
  cuda_plan* plan = calloc(1, sizeof *plan);
  if (!plan) {
    sched_plan_destroy(s);
    ir_program_destroy(p);
    ptc_graph_destroy(dg);
    return ptc_status_oom();
  }
  plan->ctx = ctx;
  plan->dev = d;
  plan->dg = dg;
  plan->p = p;
  plan->s = s;
  plan->n_bufs = p->buffers.len;
  plan->n_steps = s->n_kernels;
  plan->steps = calloc(s->n_kernels + 1, sizeof *plan->steps);
  ptc_status st = plan->steps ? cuda_support_get(ctx, d, &plan->sup) : ptc_status_oom();
  if (!st) st = compile_steps(plan);
  if (!st) st = upload_constants(plan);
  if (!st && plan->uses_err) st = cuda_deferred_create(&plan->deferred);
  if (!st) st = cuda_plan_static_layout(plan);
  if (!st) st = cuda_wcache_create(p->nodes.len, &plan->wcache);
  for (uint32_t i = 0; !st && i < plan->n_steps && !plan->split_order; i++)
    if (plan->steps[i].split > 1) {
      plan->split_order = calloc(1, sizeof *plan->split_order);
      if (!plan->split_order) st = ptc_status_oom();
    }
  if (st) {
    cuda_plan_destroy(plan);
    return st;
  }
  if (plan->n_host_steps)
    ptc_log(ctx, PTC_LOG_WARN, "cuda backend: %u step(s) run on the host (copies to and from the "
            "device): %s", plan->n_host_steps, plan->host_ops);
  *out = plan;
  return PTC_OK;
}
