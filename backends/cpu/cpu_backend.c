/* cpu_backend.c - the CPU backend's vtable (ptc_cpu_backend): prepare runs
 * the compiler pipeline (decomp_graph -> ir_lower -> sched_run ->
 * cpu_plan_build) and writes the debug dumps; run hands the tensors to the
 * plan; describe lists kernels with the graph nodes they fuse, externs,
 * workspace slots and source paths. Available when a C compiler runs. */
#include "../../lib/decomp/decomp.h"
#include "cpu_plan_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct cpu_state {
  ptc_graph* dg;   /* the decomposed graph (the program lowered from it refers to it) */
  cpu_plan* plan;
} cpu_state;

static const char* cpu_unavailable(void) {
  return cpu_cc_identity() ? NULL : "no C compiler found (set PTC_CC)";
}

static void cpu_destroy(void* p) {
  cpu_state* st = p;
  if (!st) return;
  cpu_plan_destroy(st->plan);
  ptc_graph_destroy(st->dg);
  free(st);
}

/* ---- description ------------------------------------------------------------------ */

/* "name1, name2" of the graph nodes a step came from. */
static void step_origins(const cpu_plan* plan, const plan_step* st, ptc_strbuf* sb) {
  const sched_kernel* k = &plan->s->kernels[st->sched_kernel];
  for (uint32_t i = 0; i < k->n_nodes; i++) {
    const char* o = ir_node_at(plan->p, k->nodes[i])->origin;
    ptc_sb_printf(sb, "%s%s", i ? ", " : "", o ? o : "?");
  }
}

static void describe_plan(const cpu_plan* plan, ptc_strbuf* sb) {
  uint32_t n_ext = 0;
  for (uint32_t i = 0; i < plan->n_steps; i++) n_ext += plan->steps[i].is_extern;
  ptc_sb_printf(sb, "cpu: %u steps (%u generated kernels, %u extern calls), %u fusions, "
                "%u workspace slots, %u in-place, %u reused\n",
                plan->n_steps, plan->n_steps - n_ext, n_ext, plan->s->n_fusions, plan->s->n_slots,
                plan->s->n_inplace, plan->s->n_reused);
  for (uint32_t i = 0; i < plan->n_steps; i++) {
    const plan_step* st = &plan->steps[i];
    const sched_kernel* k = &plan->s->kernels[st->sched_kernel];
    ptc_sb_printf(sb, "  [%u] %s %s: ", i, st->is_extern ? "extern" : "kernel", st->name);
    step_origins(plan, st, sb);
    if (!st->is_extern)
      ptc_sb_printf(sb, "\n      %s (%s, %s)\n", k->name, st->source_path,
                    st->compiled.cache_hit ? "cache hit" : "compiled");
    else
      ptc_sb_append(sb, "\n");
  }
  for (uint32_t k = 0; k < plan->s->n_slots; k++) {
    ptc_sb_printf(sb, "  slot %u: ", k);
    sym_format_sb(plan->p->env, plan->s->slots[k].bytes, sb);
    ptc_sb_append(sb, " bytes\n");
  }
}

static void cpu_describe(const void* state, const ptc_graph* g, ptc_strbuf* sb) {
  (void)g;
  const cpu_state* st = state;
  if (st && st->plan) describe_plan(st->plan, sb);
}

static size_t cpu_num_kernels(const void* state, const ptc_graph* g) {
  (void)g;
  const cpu_state* st = state;
  return st ? cpu_plan_num_kernels(st->plan) : 0;
}

/* ---- debug dumps ------------------------------------------------------------------- */

static ptc_status write_text(const char* dir, const char* name, const char* text, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE* f = fopen(path, "w");
  if (!f) return PTC_ERR(UNKNOWN, "debug_dir: cannot write %s", path);
  bool ok = fwrite(text, 1, len, f) == len;
  if (fclose(f) != 0 || !ok) return PTC_ERR(UNKNOWN, "debug_dir: error writing %s", path);
  return PTC_OK;
}

static ptc_status write_sb(const char* dir, const char* name, ptc_strbuf* sb) {
  ptc_status s = sb->oom ? ptc_status_oom()
                         : write_text(dir, name, sb->data ? sb->data : "", sb->len);
  ptc_sb_free(sb);
  return s;
}

static ptc_status dump_pre(const char* dir, const ptc_graph* dg, const ir_program* p,
                           const sched_plan* s) {
  char path[4096];
  snprintf(path, sizeof path, "%s/decomposed_graph.txt", dir);
  FILE* f = fopen(path, "w");
  if (!f) return PTC_ERR(UNKNOWN, "debug_dir: cannot write %s", path);
  ptc_status st = ptc_graph_print(dg, f);
  if (fclose(f) != 0 && !st) st = PTC_ERR(UNKNOWN, "debug_dir: error writing %s", path);
  PTC_TRY(st);
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  ir_program_dump(p, &sb);
  PTC_TRY(write_sb(dir, "ir.txt", &sb));
  ptc_sb_init(&sb);
  sched_plan_dump(p, s, &sb);
  ptc_sb_append(&sb, "\nfusion decisions:\n");
  if (s->log.data) ptc_sb_append(&sb, s->log.data);
  return write_sb(dir, "schedule.txt", &sb);
}

/* Copies file `src` into dir/name. */
static ptc_status copy_file(const char* src, const char* dir, const char* name) {
  FILE* f = fopen(src, "rb");
  if (!f) return PTC_ERR(UNKNOWN, "debug_dir: cannot read %s", src);
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  char buf[8192];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) ptc_sb_appendn(&sb, buf, n);
  fclose(f);
  return write_sb(dir, name, &sb);
}

static ptc_status dump_post(const char* dir, const cpu_plan* plan) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  describe_plan(plan, &sb);
  PTC_TRY(write_sb(dir, "kernels.txt", &sb));
  for (uint32_t i = 0; i < plan->n_steps; i++) {
    const plan_step* st = &plan->steps[i];
    if (st->is_extern || !st->source_path[0]) continue;
    char name[96];
    snprintf(name, sizeof name, "%s.c", st->name);
    PTC_TRY(copy_file(st->source_path, dir, name));
  }
  return PTC_OK;
}

/* ---- prepare / run -------------------------------------------------------------------- */

static ptc_status lower_and_schedule(ptc_context* ctx, const ptc_graph* dg, bool fuse,
                                     ir_program** p, sched_plan** s) {
  ir_lower_options lo;
  ir_lower_options_init(&lo);
  lo.inline_pointwise = fuse;
  lo.lowp_f32_math = true; /* f16/bf16: f32 between fused ops, as Inductor */
  PTC_TRY(ir_lower(ctx, dg, &lo, p));
  sched_options so;
  sched_options_init(&so);
  so.fuse = fuse;
  ptc_status st = sched_run(*p, &so, s);
  if (st) {
    ir_program_destroy(*p);
    *p = NULL;
  }
  return st;
}

/* Activations the lowering emits itself (and folds into GEMM epilogues)
 * stay whole; every other composite op is decomposed. */
static bool want_decomposed(void* user, const char* op) {
  (void)user;
  static const char* const kept[] = {"gelu", "silu"};
  for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
    if (strcmp(op, kept[i]) == 0) return false;
  return true;
}

static ptc_status cpu_prepare(ptc_context* ctx, const ptc_graph* g, const ptc_compile_options* opts,
                              void** out) {
  cpu_state* st = calloc(1, sizeof *st);
  if (!st) return ptc_status_oom();
  const char* dir = opts && opts->debug_dir && *opts->debug_dir ? opts->debug_dir : NULL;
  if (dir) mkdir(dir, 0777); /* may exist; the dumps report real failures */
  bool fuse = !(opts && opts->disable_fusion);
  ir_program* p = NULL;
  sched_plan* s = NULL;
  decomp_options dopt;
  memset(&dopt, 0, sizeof dopt);
  dopt.borrow_constants = true; /* g (the executable's snapshot) outlives the state */
  dopt.want = want_decomposed;
  ptc_status e = decomp_graph_ex(g, &dopt, &st->dg);
  if (!e) e = lower_and_schedule(ctx, st->dg, fuse, &p, &s);
  if (!e && dir) e = dump_pre(dir, st->dg, p, s);
  if (e) {
    sched_plan_destroy(s);
    ir_program_destroy(p);
  } else {
    e = cpu_plan_build(ctx, p, s, &st->plan); /* owns p and s from here */
  }
  if (!e && dir) e = dump_post(dir, st->plan);
  if (e) {
    cpu_destroy(st);
    return e;
  }
  *out = st;
  return PTC_OK;
}

static ptc_status cpu_run(void* state, const ptc_graph* g, const ptc_tensor* inputs, size_t n_in,
                          const ptc_tensor* outputs, size_t n_out, const int64_t* sym_values,
                          size_t n_syms, uint64_t seed) {
  (void)g;
  const cpu_state* st = state;
  if (n_syms < st->plan->p->n_size_syms)
    return PTC_ERR(INTERNAL, "cpu backend: %zu symbol values for %zu size symbols", n_syms,
                   st->plan->p->n_size_syms);
  return cpu_plan_run(st->plan, inputs, n_in, outputs, n_out, sym_values, n_syms, seed);
}

const backend_vtable ptc_cpu_backend = {
    .name = "cpu",
    .unavailable_reason = cpu_unavailable,
    .prepare = cpu_prepare,
    .run = cpu_run,
    .destroy = cpu_destroy,
    .describe = cpu_describe,
    .num_kernels = cpu_num_kernels,
};
