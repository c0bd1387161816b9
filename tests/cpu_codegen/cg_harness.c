/* cg_harness.c - program building, one-kernel plans, and compile/load/run of
 * generated kernels for the codegen tests (see cg_harness.h). */
#include "cg_harness.h"

#include "lib/ir/ir_internal.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool cgh_init(cgh* h, size_t n_syms, const char* const* names, const int64_t* hints, int64_t lo) {
  memset(h, 0, sizeof *h);
  ptc_status s = ptc_context_create(NULL, &h->ctx);
  if (!s) s = ptc_graph_create(h->ctx, &h->g);
  for (size_t i = 0; i < n_syms && !s; i++) {
    ptc_symbol_options o;
    ptc_symbol_options_init(&o);
    o.hint = hints[i];
    o.min_value = lo;
    ptc_sym id;
    s = ptc_graph_add_symbol(h->g, names[i], &o, &id);
  }
  if (!s) s = ir_program_create(h->ctx, h->g, &h->p);
  if (s) {
    printf("cgh_init: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    return false;
  }
  return true;
}

void cgh_free(cgh* h) {
  ir_program_destroy(h->p);
  ptc_graph_destroy(h->g);
  ptc_context_release(h->ctx);
}

const sym_expr* cgh_sym(cgh* h, size_t i) { return sym_var(h->p->env, i); }
const sym_expr* cgh_c(cgh* h, int64_t v) { return sym_const(h->p->env, v); }

int32_t cgh_buffer(cgh* h, bool input, int32_t dtype, uint32_t rank,
                   const sym_expr* const* shape) {
  ir_buffer b;
  memset(&b, 0, sizeof b);
  const sym_expr* strides[PTC_MAX_RANK];
  const sym_expr* st = cgh_c(h, 1);
  for (uint32_t d = rank; d-- > 0;) {
    strides[d] = st;
    st = sym_mul(h->p->env, st, shape[d]);
  }
  b.kind = input ? IR_BUF_INPUT : IR_BUF_COMPUTED;
  b.dtype = dtype;
  b.rank = rank;
  b.shape = (const sym_expr**)shape;
  b.strides = strides;
  b.offset = cgh_c(h, 0);
  b.numel = st;
  b.graph_input = input ? (int32_t)h->p->buffers.len : -1;
  b.graph_value = (ptc_value)h->p->buffers.len; /* distinct: no aliasing in the interpreter */
  b.producer = -1;
  int32_t id = -1;
  ptc_status s = ir_add_buffer(h->p, &b, &id);
  if (s) {
    printf("cgh_buffer: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
  }
  return id;
}

uint32_t cgh_node(cgh* h, int32_t kind, int32_t out_buf, const sym_expr* const* ranges,
                  uint32_t n, const sym_expr* const* rranges, uint32_t nr, ir_body* body) {
  ir_node node;
  memset(&node, 0, sizeof node);
  node.kind = kind;
  node.out_buf = out_buf;
  node.n_ranges = n;
  node.n_rranges = nr;
  node.ranges = (const sym_expr**)ranges;
  node.rranges = (const sym_expr**)rranges;
  node.body = *body;
  memset(body, 0, sizeof *body);
  size_t idx = 0;
  ptc_status s = ir_add_node(h->p, &node, &idx);
  if (s) {
    printf("cgh_node: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
  }
  return (uint32_t)idx;
}

const sym_expr* cgh_index(cgh* h, int32_t buf, const sym_expr* const* vars) {
  const ir_buffer* b = ir_buf(h->p, buf);
  const sym_expr* e = cgh_c(h, 0);
  for (uint32_t d = 0; d < b->rank; d++)
    e = sym_add(h->p->env, e, sym_mul(h->p->env, vars[d], b->strides[d]));
  return e;
}

/* ---- plans ------------------------------------------------------------------------------ */

sched_plan* cgh_plan(cgh* h, const uint32_t* nodes, const uint8_t* inner, uint32_t n,
                     const sym_expr* const* ranges, uint32_t nr, const sym_expr* const* rranges,
                     uint32_t nrr) {
  size_t nb = h->p->buffers.len;
  sched_plan* s = calloc(1, sizeof *s);
  s->n_kernels = 1;
  s->kernels = calloc(1, sizeof *s->kernels);
  sched_kernel* k = &s->kernels[0];
  k->n_nodes = n;
  k->nodes = calloc(n, sizeof *k->nodes);
  k->node_inner = calloc(n, 1);
  memcpy(k->nodes, nodes, n * sizeof *nodes);
  if (inner) memcpy(k->node_inner, inner, n);
  k->n_ranges = nr;
  k->n_rranges = nrr;
  k->ranges = calloc(nr + 1, sizeof *k->ranges);
  k->rranges = calloc(nrr + 1, sizeof *k->rranges);
  if (nr) memcpy(k->ranges, ranges, nr * sizeof *ranges);
  if (nrr) memcpy(k->rranges, rranges, nrr * sizeof *rranges);
  snprintf(k->name, sizeof k->name, "k0_test");
  s->buf_home = calloc(nb + 1, sizeof *s->buf_home);
  s->buf_slot = calloc(nb + 1, sizeof *s->buf_slot);
  s->buf_free_after = calloc(nb + 1, sizeof *s->buf_free_after);
  for (size_t b = 0; b < nb; b++) {
    bool computed = ir_buf(h->p, (int32_t)b)->kind == IR_BUF_COMPUTED;
    s->buf_home[b] = computed ? SCHED_HOME_SLOT : SCHED_HOME_EXTERNAL;
    s->buf_slot[b] = computed ? (int32_t)b : -1;
    s->buf_free_after[b] = -1;
  }
  ptc_sb_init(&s->log);
  return s;
}

void cgh_local(sched_plan* s, int32_t buf) {
  s->buf_home[buf] = SCHED_HOME_LOCAL;
  s->buf_slot[buf] = -1;
}

void cgh_plan_free(sched_plan* s) {
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
  ptc_sb_free(&s->log);
  free(s);
}

/* ---- compile and run ---------------------------------------------------------------------- */

#define BACKEND_FLAGS "-O3 -march=native -fopenmp -fPIC -fno-math-errno -ffp-contract=off"
#define STRICT_FLAGS "-std=c11 -Wall -Wextra -Werror"

static void print_file(const char* path) {
  FILE* f = fopen(path, "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) fputs(line, stdout);
  fclose(f);
}

static bool run_cc(const char* cmd, const char* log) {
  if (system(cmd) == 0) return true;
  printf("command failed: %s\n", cmd);
  print_file(log);
  return false;
}

static bool have_clang(void) {
  static int have = -1;
  if (have < 0) have = system("clang --version > /dev/null 2>&1") == 0;
  return have == 1;
}

static void print_numbered(const char* src) {
  int line = 1;
  printf("%4d  ", line);
  for (const char* q = src; *q; q++) {
    putchar(*q);
    if (*q == '\n' && q[1]) printf("%4d  ", ++line);
  }
}

/* Kernels load the OpenMP runtime; unloading it with the last kernel while
 * its idle worker threads live would crash them, so it is pinned. */
static void pin_openmp(void) {
  static bool done = false;
  if (!done) dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
  done = true;
}

bool cgh_compile(cgh* h, const sched_plan* s, cgh_kernel* out) {
  memset(out, 0, sizeof *out);
  pin_openmp();
  ptc_status st = cpu_codegen_kernel(h->p, s, 0, &out->src);
  if (st) {
    printf("codegen: %s\n", ptc_status_message(st));
    ptc_status_destroy(st);
    return false;
  }
  if (getenv("CG_DUMP")) print_numbered(out->src.source);
  char dir[] = "/tmp/ptc_cg_XXXXXX";
  if (!mkdtemp(dir)) return false;
  char c[256], so[256], obj[256], log[256], cmd[1280];
  snprintf(c, sizeof c, "%s/k.c", dir);
  snprintf(so, sizeof so, "%s/k.so", dir);
  snprintf(obj, sizeof obj, "%s/k_clang.o", dir);
  snprintf(log, sizeof log, "%s/log.txt", dir);
  FILE* f = fopen(c, "w");
  if (!f) return false;
  fputs(out->src.source, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "gcc %s %s -shared -o %s %s > %s 2>&1", BACKEND_FLAGS, STRICT_FLAGS,
           so, c, log);
  bool ok = run_cc(cmd, log);
  if (ok && have_clang()) {
    snprintf(cmd, sizeof cmd, "clang %s %s -c -o %s %s > %s 2>&1", BACKEND_FLAGS, STRICT_FLAGS,
             obj, c, log);
    ok = run_cc(cmd, log);
  }
  if (ok) {
    out->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    if (out->dl) *(void**)&out->fn = dlsym(out->dl, out->src.symbol);
    ok = out->fn != NULL;
    if (!ok) printf("dlopen/dlsym failed: %s\n", dlerror());
  }
  if (!ok) print_numbered(out->src.source);
  unlink(c);
  if (!getenv("CG_KEEP")) unlink(so);
  unlink(obj);
  unlink(log);
  rmdir(dir);
  return ok;
}

void cgh_kernel_free(cgh_kernel* k) {
  if (k->dl) dlclose(k->dl);
  cpu_kernel_src_free(&k->src);
  memset(k, 0, sizeof *k);
}

cpu_kernel_ctx cgh_run(const cgh_kernel* k, void* const* mem, const int64_t* syms,
                       uint64_t seed) {
  cpu_kernel_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.seed = seed;
  ctx.error_node = -1;
  void* args[64];
  for (uint32_t i = 0; i < k->src.n_bufs && i < 63; i++) args[i] = mem[k->src.bufs[i]];
  args[k->src.n_bufs < 63 ? k->src.n_bufs : 63] = &ctx;
  static const int64_t none[1] = {0};
  k->fn(args, syms ? syms : none);
  return ctx;
}

bool cgh_close(double got, double want, double rtol, double atol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

/* ---- the IR interpreter as oracle --------------------------------------------------------- */

typedef struct interp_io {
  ptc_tensor* t;
  int64_t (*shapes)[PTC_MAX_RANK];
  void** data;
  int32_t* out_ids;
  size_t n_out;
} interp_io;

static void io_free(interp_io* io, size_t nb) {
  for (size_t i = 0; io->data && i < nb; i++) free(io->data[i]);
  free(io->t);
  free(io->shapes);
  free(io->data);
  free(io->out_ids);
}

static int64_t buf_numel(cgh* h, int32_t id, const int64_t* syms, int64_t* shape) {
  const ir_buffer* b = ir_buf(h->p, id);
  int64_t n = 1;
  for (uint32_t d = 0; d < b->rank; d++) {
    ptc_status st = sym_eval(b->shape[d], syms, h->p->n_size_syms, &shape[d]);
    ptc_status_destroy(st);
    n *= shape[d];
  }
  return n;
}

static bool kernel_writes(cgh* h, const sched_plan* s, int32_t buf) {
  for (uint32_t m = 0; m < s->kernels[0].n_nodes; m++)
    if (ir_node_at(h->p, s->kernels[0].nodes[m])->out_buf == buf) return true;
  return false;
}

/* Tensors for every buffer id: inputs point at mem, the kernel's outputs at
 * fresh memory (other computed buffers are the interpreter's business). */
static bool io_init(cgh* h, const sched_plan* s, void* const* mem, const int64_t* syms,
                    interp_io* io) {
  size_t nb = h->p->buffers.len;
  io->t = calloc(nb + 1, sizeof *io->t);
  io->shapes = calloc(nb + 1, sizeof *io->shapes);
  io->data = calloc(nb + 1, sizeof *io->data);
  io->out_ids = calloc(nb + 1, sizeof *io->out_ids);
  if (!io->t || !io->shapes || !io->data || !io->out_ids) return false;
  for (size_t i = 0; i < nb; i++) {
    const ir_buffer* b = ir_buf(h->p, (int32_t)i);
    int64_t n = buf_numel(h, (int32_t)i, syms, io->shapes[i]);
    ptc_tensor* t = &io->t[i];
    t->device.device_type = PTC_DEVICE_CPU;
    t->ndim = (int32_t)b->rank;
    t->dtype = ptc_dtype_to_dl(b->dtype);
    t->shape = io->shapes[i];
    if (b->kind == IR_BUF_INPUT) {
      t->data = mem[i];
    } else if (s->buf_home[i] != SCHED_HOME_LOCAL && s->buf_free_after[i] != 0 &&
               kernel_writes(h, s, (int32_t)i)) { /* (dead after kernel 0: not observable) */
      io->data[i] = calloc((size_t)(n > 0 ? n : 1), 8);
      t->data = io->data[i];
      io->out_ids[io->n_out++] = (int32_t)i;
    }
  }
  return true;
}

static bool same_value(int32_t dt, ir_scalar got, ir_scalar want, double rtol, double atol) {
  if (ptc_dtype_is_float(dt)) return cgh_close(got.f, want.f, rtol, atol);
  return got.i == want.i;
}

static int compare_outputs(cgh* h, void* const* mem, const int64_t* syms, const interp_io* io,
                           double rtol, double atol) {
  int bad = 0;
  for (size_t k = 0; k < io->n_out; k++) {
    int32_t id = io->out_ids[k];
    const ir_buffer* b = ir_buf(h->p, id);
    int64_t shape[PTC_MAX_RANK];
    int64_t n = buf_numel(h, id, syms, shape);
    for (int64_t e = 0; e < n; e++) {
      ir_scalar got = ir_scalar_load(mem[id], b->dtype, e);
      ir_scalar want = ir_scalar_load(io->data[id], b->dtype, e);
      if (same_value(b->dtype, got, want, rtol, atol)) continue;
      if (bad++ < 5)
        printf("interp mismatch %s[%lld]: got %.9g/%lld, interpreter %.9g/%lld\n", b->name,
               (long long)e, got.f, (long long)got.i, want.f, (long long)want.i);
    }
  }
  return bad;
}

int cgh_check_interp(cgh* h, const sched_plan* s, void* const* mem, const int64_t* syms,
                     uint64_t seed, double rtol, double atol) {
  static const int64_t none[1] = {0};
  if (!syms) syms = none;
  size_t nb = h->p->buffers.len;
  interp_io io;
  memset(&io, 0, sizeof io);
  int result = -1;
  if (io_init(h, s, mem, syms, &io)) {
    ir_program* p = h->p;
    size_t saved_in = p->n_inputs, saved_out = p->n_outputs;
    int32_t* saved_ids = p->output_bufs;
    ptc_tensor* outs = calloc(io.n_out + 1, sizeof *outs);
    for (size_t k = 0; outs && k < io.n_out; k++) outs[k] = io.t[io.out_ids[k]];
    p->n_inputs = nb;
    p->n_outputs = io.n_out;
    p->output_bufs = io.out_ids;
    ptc_status st = outs ? ir_interpret(p, io.t, nb, outs, io.n_out, syms, p->n_size_syms, seed)
                         : ptc_status_oom();
    p->n_inputs = saved_in;
    p->n_outputs = saved_out;
    p->output_bufs = saved_ids;
    free(outs);
    if (st) {
      printf("ir_interpret: %s\n", ptc_status_message(st));
      ptc_status_destroy(st);
    } else {
      result = compare_outputs(h, mem, syms, &io, rtol, atol);
    }
  }
  io_free(&io, nb);
  return result;
}
