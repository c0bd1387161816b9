/* cuda_backend.c - the cuda backend's vtable (ptc_cuda_backend): prepare
 * runs the pipeline (cuda_pipeline) and builds the run plan (kernels
 * compiled with NVRTC for the device, loaded into the primary context) and
 * writes the debug dumps; run_stream runs the plan on the caller's stream
 * with the primary context made current for the call; describe lists the
 * steps; device memory for run_alloc's outputs comes from the caching
 * allocator. Available when libcuda.so.1, NVRTC and a device are present.
 * The backend state is a cuda_exec: the plan and, in modes "reduce-overhead"
 * and "max-autotune", the table of recorded CUDA graphs (cuda_graph.h),
 * which run_stream tries before a plain run. */
#include "cuda.h"
#include "cuda_graph.h"
#include "cuda_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char* cuda_unavailable(void) { return cuda_unavailable_reason(); }

/* The backend state: the plan and its CUDA graphs (NULL unless the mode asks). */
typedef struct cuda_exec {
  cuda_plan* plan;
  cuda_graphs* graphs;
} cuda_exec;

static void cuda_destroy(void* state) {
  cuda_exec* x = state;
  if (!x) return;
  cuda_graphs_destroy(x->graphs);
  cuda_plan_destroy(x->plan);
  free(x);
}

/* ---- description ----------------------------------------------------------------- */

static void describe_plan(const cuda_plan* plan, ptc_strbuf* sb) {
  uint32_t n_ext = 0;
  for (uint32_t i = 0; i < plan->n_steps; i++) n_ext += plan->steps[i].is_extern;
  const cuda_device* d = plan->dev;
  ptc_sb_printf(sb, "cuda: %s (sm_%d%d, %d SMs): %u steps (%u generated kernels, %u extern calls, "
                "%u on the host%s%s), %u fusions, %u workspace slots\n", d->name, d->cc_major,
                d->cc_minor, d->sm_count, plan->n_steps, plan->n_steps - n_ext, n_ext,
                plan->n_host_steps, plan->n_host_steps ? ": " : "", plan->host_ops,
                plan->s->n_fusions, plan->s->n_slots);
  static const char* const layouts[] = {"pointwise", "row reduction", "column reduction"};
  for (uint32_t i = 0; i < plan->n_steps; i++) {
    const cuda_step* st = &plan->steps[i];
    const sched_kernel* k = &plan->s->kernels[st->sched_kernel];
    ptc_sb_printf(sb, "  [%u] %s %s: ", i, st->is_extern ? "extern" : "kernel", st->name);
    for (uint32_t j = 0; j < k->n_nodes; j++) {
      const char* o = ir_node_at(plan->p, k->nodes[j])->origin;
      ptc_sb_printf(sb, "%s%s", j ? ", " : "", o ? o : "?");
    }
    if (!st->is_extern)
      ptc_sb_printf(sb, "\n      %s, %s, block %ux%u (%s, %s)\n", k->name, layouts[st->layout],
                    st->block_x, st->block_y, st->source_path[0] ? st->source_path : "no source kept",
                    st->cache_hit ? "cache hit" : "compiled");
    else
      ptc_sb_append(sb, "\n");
    cuda_tune_describe(plan, st, sb); /* autotuned launch configs (cuda_tune.c) */
  }
}

static void cuda_describe(const void* state, const ptc_graph* g, ptc_strbuf* sb) {
  (void)g;
  const cuda_exec* x = state;
  if (!x) return;
  describe_plan(x->plan, sb);
  cuda_graphs_describe(x->graphs, sb);
}

static size_t cuda_num_kernels(const void* state, const ptc_graph* g) {
  (void)g;
  const cuda_exec* x = state;
  return x ? x->plan->n_steps : 0;
}

/* ---- debug dumps ----------------------------------------------------------------------- */

static ptc_status write_sb(const char* dir, const char* name, ptc_strbuf* sb) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  ptc_status s = PTC_OK;
  FILE* f = sb->oom ? NULL : fopen(path, "w");
  if (sb->oom)
    s = ptc_status_oom();
  else if (!f)
    s = PTC_ERR(UNKNOWN, "debug_dir: cannot write %s", path);
  else if (fwrite(sb->data ? sb->data : "", 1, sb->len, f) != sb->len || fclose(f) != 0)
    s = PTC_ERR(UNKNOWN, "debug_dir: error writing %s", path);
  else
    f = NULL;
  if (f) fclose(f);
  ptc_sb_free(sb);
  return s;
}

static ptc_status dump_pre(const char* dir, const ir_program* p, const sched_plan* s) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  ir_program_dump(p, &sb);
  PTC_TRY(write_sb(dir, "cuda_ir.txt", &sb));
  ptc_sb_init(&sb);
  sched_plan_dump(p, s, &sb);
  ptc_sb_append(&sb, "\nfusion decisions:\n");
  if (s->log.data) ptc_sb_append(&sb, s->log.data);
  return write_sb(dir, "cuda_schedule.txt", &sb);
}

static ptc_status dump_post(const char* dir, const cuda_plan* plan) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  describe_plan(plan, &sb);
  PTC_TRY(write_sb(dir, "cuda_kernels.txt", &sb));
  for (uint32_t i = 0; i < plan->n_steps; i++) {
    const cuda_step* st = &plan->steps[i];
    if (st->is_extern) continue;
    cuda_kernel_src src;
    PTC_TRY(cuda_codegen_kernel(plan->p, plan->s, st->sched_kernel, &src));
    ptc_sb_init(&sb);
    ptc_sb_append(&sb, src.source);
    char name[96];
    snprintf(name, sizeof name, "%s.cu", st->name);
    cuda_kernel_src_free(&src);
    PTC_TRY(write_sb(dir, name, &sb));
  }
  return PTC_OK;
}

/* ---- prepare / run ------------------------------------------------------------------------ */

static ptc_status prepare_in_ctx(ptc_context* ctx, const cuda_device* d, const ptc_graph* g,
                                 const ptc_compile_options* opts, cuda_plan** out) {
  const char* dir = opts && opts->debug_dir && *opts->debug_dir ? opts->debug_dir : NULL;
  if (dir) mkdir(dir, 0777); /* may exist; the dumps report real failures */
  bool fuse = !(opts && opts->disable_fusion);
  ptc_graph* dg;
  ir_program* p;
  sched_plan* s;
  PTC_TRY(cuda_pipeline(ctx, d, g, fuse, &dg, &p, &s));
  ptc_status e = dir ? dump_pre(dir, p, s) : PTC_OK;
  if (e) {
    sched_plan_destroy(s);
    ir_program_destroy(p);
    ptc_graph_destroy(dg);
    return e;
  }
  PTC_TRY(cuda_plan_build(ctx, d, dg, p, s, out)); /* owns dg, p, s */
  const char* mp = opts ? opts->matmul_precision : NULL;
  const char* cp = opts ? opts->conv_precision : NULL;
  (*out)->mm_tf32 = mp && strcmp(mp, "highest") != 0; /* "high" / "medium" */
  (*out)->conv_tf32 = cp && strcmp(cp, "highest") != 0;
  (*out)->autotune = cuda_tune_mode(opts ? opts->mode : NULL);
  e = dir ? dump_post(dir, *out) : PTC_OK;
  if (e) {
    cuda_plan_destroy(*out);
    *out = NULL;
  }
  return e;
}

static ptc_status cuda_prepare(ptc_context* ctx, const ptc_graph* g,
                               const ptc_compile_options* opts, void** out) {
  const cuda_device* d = cuda_device_get();
  if (!d) return PTC_ERR(UNAVAILABLE, "cuda backend: %s", cuda_unavailable_reason());
  cu_context prev;
  PTC_TRY(cuda_ctx_enter(d, &prev));
  cuda_plan* plan = NULL;
  ptc_status s = prepare_in_ctx(ctx, d, g, opts, &plan);
  cuda_ctx_leave(d, prev);
  cuda_exec* x = NULL;
  if (!s) {
    x = calloc(1, sizeof *x);
    s = x ? cuda_graphs_create(plan, opts ? opts->mode : NULL, &x->graphs) : ptc_status_oom();
    if (s) {
      free(x);
      x = NULL;
      cuda_plan_destroy(plan);
    } else {
      x->plan = plan;
    }
  }
  *out = x;
  return s;
}

static ptc_status cuda_run_stream(void* state, const ptc_graph* g, const ptc_tensor* inputs,
                                  size_t n_in, const ptc_tensor* outputs, size_t n_out,
                                  const int64_t* sym_values, size_t n_syms, uint64_t seed,
                                  void* stream, uint32_t flags) {
  (void)g;
  const cuda_exec* x = state;
  const cuda_plan* plan = x->plan;
  if (n_syms < plan->p->n_size_syms)
    return PTC_ERR(INTERNAL, "cuda backend: %zu symbol values for %zu size symbols", n_syms,
                   plan->p->n_size_syms);
  cu_context prev;
  PTC_TRY(cuda_ctx_enter(plan->dev, &prev));
  bool done = false;
  ptc_status s = cuda_graphs_run(x->graphs, inputs, n_in, outputs, n_out, sym_values, n_syms, seed,
                                 (cu_stream)stream, &done);
  if (!s && !done)
    s = cuda_plan_run(plan, inputs, n_in, outputs, n_out, sym_values, n_syms, seed,
                      (cu_stream)stream, (flags & BACKEND_RUN_DEFERRED_ERRORS) != 0);
  cuda_ctx_leave(plan->dev, prev);
  return s;
}

static ptc_status cuda_run(void* state, const ptc_graph* g, const ptc_tensor* inputs, size_t n_in,
                           const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                           size_t n_syms, uint64_t seed) {
  return cuda_run_stream(state, g, inputs, n_in, outputs, n_out, sym_values, n_syms, seed, NULL,
                         0);
}

static ptc_status cuda_dev_alloc(size_t bytes, void* stream, void** out) {
  const cuda_device* d = cuda_device_get();
  if (!d) return PTC_ERR(UNAVAILABLE, "cuda backend: %s", cuda_unavailable_reason());
  cu_context prev;
  PTC_TRY(cuda_ctx_enter(d, &prev));
  cu_deviceptr p = 0;
  ptc_status s = cuda_alloc(bytes, (cu_stream)stream, &p);
  cuda_ctx_leave(d, prev);
  *out = (void*)(uintptr_t)p;
  return s;
}

static void cuda_dev_free(void* p) { cuda_free((cu_deviceptr)(uintptr_t)p); }

const backend_vtable ptc_cuda_backend = {
    .name = "cuda",
    .unavailable_reason = cuda_unavailable,
    .prepare = cuda_prepare,
    .run = cuda_run,
    .destroy = cuda_destroy,
    .describe = cuda_describe,
    .num_kernels = cuda_num_kernels,
    .device_type = PTC_DEVICE_CUDA,
    .run_stream = cuda_run_stream,
    .alloc = cuda_dev_alloc,
    .free = cuda_dev_free,
};
