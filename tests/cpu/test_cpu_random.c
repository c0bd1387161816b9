/* test_cpu_random.c - differential test of a backend against the oracle on
 * random graphs (tests/randgraph.h): every graph is compiled by backend A
 * (default "cpu") and backend B (default "ref"), run on the same random
 * inputs (dynamic graphs at three sizes) and compared output by output with
 * dtype-aware tolerances. Every tenth graph is also compiled by A with
 * fusion disabled. Any mismatch or error prints the seed, the graph and A's
 * executable description.
 *
 * Usage: test_cpu_random [A [B [COUNT]]]
 * Environment:
 *   PTC_RANDGRAPH_SEED=N   run only seed N, verbosely (to reproduce a failure)
 *   PTC_RANDGRAPH_COUNT=N  number of seeds (default 300)
 *   PTC_RANDGRAPH_FIRST=N  first seed (default 1: seeds FIRST..FIRST+COUNT-1)
 *   PTC_EXPECT_CPU=1       backend A missing is a failure (else: a note, and
 *                          the generator is checked with B against itself)
 * Exit status: 0 when every graph matched, 1 otherwise.
 */
#include "../randgraph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { DEFAULT_COUNT = 300, MAX_VERBOSE_FAILURES = 8 };

typedef struct stats {
  uint32_t graphs, dynamic, runs, passed, mismatched, compile_errors, run_errors;
  uint32_t guard_skips, nofuse_graphs, failures_printed;
  /* sensitivity: perturbed outputs that must be caught; [0] f32/f64/ints, [1] f16/bf16 */
  uint32_t probes[2], probes_missed[2];
  bool verbose;
  size_t kernels, nodes;
  double t_compile, t_run;
} stats;

typedef struct config {
  const char* a;
  const char* b;
  bool verbose;
} config;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_exe(const ptc_executable* exe) {
  size_t need = 0;
  ptc_status s = ptc_executable_format(exe, NULL, 0, &need);
  ptc_status_destroy(s);
  char* buf = malloc(need + 1);
  if (!buf) return;
  s = ptc_executable_format(exe, buf, need + 1, &need);
  if (!s) printf("%s", buf);
  ptc_status_destroy(s);
  free(buf);
}

/* Prints the failure header, the graph and A's executable (bounded count). */
static void report(stats* st, const config* c, const rg_graph* rg, const int64_t* sizes,
                   const ptc_executable* exe, const char* what, const char* detail) {
  printf("FAIL seed %llu: %s\n%s%s", (unsigned long long)rg->seed, what, detail ? detail : "",
         detail && detail[strlen(detail) - 1] != '\n' ? "\n" : "");
  if (!c->verbose && st->failures_printed++ >= MAX_VERBOSE_FAILURES) return;
  rg_print(rg, sizes, stdout);
  if (exe) print_exe(exe);
  printf("  reproduce: PTC_RANDGRAPH_SEED=%llu <this test> %s %s\n\n",
         (unsigned long long)rg->seed, c->a, c->b);
}

/* Position of the element of largest magnitude of a float or int tensor
 * (contiguous, as run_alloc returns them). */
static int64_t largest(const ptc_tensor* t, int32_t dt, int64_t n) {
  const char* p = (const char*)t->data + t->byte_offset;
  int64_t best = 0;
  double bv = -1;
  for (int64_t i = 0; i < n; i++) {
    double v = dt == PTC_F32 ? fabs(((const float*)p)[i]) : dt == PTC_F64 ? fabs(((const double*)p)[i]) : 0;
    if (v > bv) bv = v, best = i;
  }
  return best;
}

/* Sensitivity probe: perturbs the largest element of A's first output
 * (relative 1e-3 for f32/f64, doubled for f16/bf16 whose tolerances are
 * wide, +1 for integers) and requires rg_compare to catch it, so the
 * tolerances cannot silently become vacuous. */
static void probe(stats* st, const rg_graph* rg, const ptc_results* ra, const ptc_results* rb) {
  const ptc_tensor* t = ptc_results_get(ra, 0);
  if (!t || rg->outputs[0].arg_of >= 0 || rg->outputs[0].dtype == PTC_BOOL) return;
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  if (n == 0) return;
  int32_t dt = ptc_dtype_from_dl(t->dtype);
  size_t es = ptc_dtype_size(dt);
  char* p = (char*)t->data + t->byte_offset + (size_t)largest(t, dt, n) * es;
  unsigned char saved[8];
  memcpy(saved, p, es);
  switch (dt) {
    case PTC_F32: { float* f = (float*)p; *f += *f ? 1e-3f * *f : 1e-3f; break; }
    case PTC_F64: { double* f = (double*)p; *f += *f ? 1e-3 * *f : 1e-3; break; }
    case PTC_F16: /* exponent + 1: the value doubles; 0 becomes 1 */
    case PTC_BF16: {
      uint16_t* h = (uint16_t*)p;
      bool zero = (*h & 0x7FFF) == 0;
      *h = zero ? (dt == PTC_F16 ? 0x3C00 : 0x3F80) : *h + (dt == PTC_F16 ? 0x0400 : 0x0080);
      break;
    }
    case PTC_I32: { int32_t* v = (int32_t*)p; *v += 1; break; }
    case PTC_I64: { int64_t* v = (int64_t*)p; *v += 1; break; }
    default: return;
  }
  int lowp = dt == PTC_F16 || dt == PTC_BF16;
  st->probes[lowp]++;
  if (rg_compare(rg, ra, rb, NULL, 0) == 0) {
    st->probes_missed[lowp]++;
    if (st->verbose)
      printf("note: seed %llu: a perturbed output 0 (%s) was not caught\n",
             (unsigned long long)rg->seed, ptc_dtype_name(dt));
  }
  memcpy(p, saved, es);
}

static ptc_status compile(ptc_context* ctx, const rg_graph* rg, const char* backend, bool nofuse,
                          stats* st, ptc_executable** out) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  o.disable_fusion = nofuse;
  double t0 = now();
  ptc_status s = ptc_compile(ctx, rg->g, &o, out);
  st->t_compile += now() - t0;
  return s;
}

static void status_text(ptc_status s, char* buf, size_t cap) {
  const char* log = ptc_status_detail(s, "compiler_log");
  snprintf(buf, cap, "%s: %s%s%.2000s", ptc_code_name(ptc_status_code(s)), ptc_status_message(s),
           log ? "\ncompiler log:\n" : "", log ? log : "");
}

/* Runs one size set on both executables; returns true when it matched
 * (or was legitimately skipped). */
static bool run_sizes(stats* st, const config* c, const rg_graph* rg, uint32_t k,
                      const ptc_executable* ea, const ptc_executable* eb, const char* label) {
  int64_t sizes[RG_MAX_SYMS];
  rg_run_sizes(rg, k, sizes);
  rg_inputs in;
  if (!rg_inputs_make(rg, sizes, rg->seed * 31 + k, &in)) {
    report(st, c, rg, sizes, ea, "out of memory for the inputs", NULL);
    st->run_errors++;
    return false;
  }
  ptc_results *ra = NULL, *rb = NULL;
  char msg[4096];
  bool ok = false;
  double t0 = now();
  ptc_status sb = ptc_executable_run_alloc(eb, in.t, in.n, NULL, &rb);
  ptc_status sa = sb ? NULL : ptc_executable_run_alloc(ea, in.t, in.n, NULL, &ra);
  st->t_run += now() - t0;
  if (sb && k > 0 && ptc_status_code(sb) == PTC_CODE_INVALID_ARGUMENT) {
    st->guard_skips++; /* these sizes break a guard of the graph itself */
    ok = true;
  } else if (sb) {
    status_text(sb, msg, sizeof msg);
    report(st, c, rg, sizes, ea, "the oracle failed to run the graph", msg);
    st->run_errors++;
  } else if (sa) {
    status_text(sa, msg, sizeof msg);
    report(st, c, rg, sizes, ea, label, msg);
    st->run_errors++;
  } else {
    st->runs++;
    if (rg_compare(rg, ra, rb, msg, sizeof msg) == 0) {
      st->passed++;
      ok = true;
      probe(st, rg, ra, rb);
    } else {
      st->mismatched++;
      report(st, c, rg, sizes, ea, "outputs differ", msg);
    }
  }
  ptc_status_destroy(sa);
  ptc_status_destroy(sb);
  ptc_results_destroy(ra);
  ptc_results_destroy(rb);
  rg_inputs_free(&in);
  return ok;
}

/* Compiles rg with A (fused or not) and checks it against eb at every size. */
static bool check_variant(ptc_context* ctx, stats* st, const config* c, const rg_graph* rg,
                          const ptc_executable* eb, bool nofuse) {
  ptc_executable* ea = NULL;
  ptc_status s = compile(ctx, rg, c->a, nofuse, st, &ea);
  if (s) {
    char msg[4096];
    status_text(s, msg, sizeof msg);
    ptc_status_destroy(s);
    st->compile_errors++;
    report(st, c, rg, NULL, NULL, nofuse ? "compile (disable_fusion) failed" : "compile failed",
           msg);
    return false;
  }
  if (!nofuse) st->kernels += ptc_executable_num_kernels(ea);
  if (c->verbose) print_exe(ea);
  bool ok = true;
  for (uint32_t k = 0; k < rg_num_runs(rg); k++)
    ok &= run_sizes(st, c, rg, k, ea, eb, nofuse ? "run (disable_fusion) failed" : "run failed");
  ptc_executable_release(ea);
  return ok;
}

static void check_seed(ptc_context* ctx, stats* st, const config* c, uint64_t seed) {
  rg_options o;
  rg_options_init(&o, seed);
  rg_graph rg;
  ptc_status s = rg_generate(ctx, &o, &rg);
  if (s) {
    printf("FAIL seed %llu: generator: %s\n", (unsigned long long)seed, ptc_status_message(s));
    ptc_status_destroy(s);
    st->compile_errors++;
    return;
  }
  st->graphs++;
  st->dynamic += rg.n_syms > 0;
  st->nodes += ptc_graph_num_nodes(rg.g);
  if (c->verbose) rg_print(&rg, NULL, stdout);
  ptc_executable* eb = NULL;
  s = compile(ctx, &rg, c->b, false, st, &eb);
  if (s) {
    char msg[4096];
    status_text(s, msg, sizeof msg);
    ptc_status_destroy(s);
    st->compile_errors++;
    report(st, c, &rg, NULL, NULL, "the oracle failed to compile the graph", msg);
  } else {
    check_variant(ctx, st, c, &rg, eb, false);
    if (seed % 10 == 0) {
      st->nofuse_graphs++;
      check_variant(ctx, st, c, &rg, eb, true);
    }
  }
  ptc_executable_release(eb);
  rg_graph_free(&rg);
}

/* The generator is deterministic: two graphs of one seed serialise alike. */
static bool deterministic(ptc_context* ctx, uint64_t seed) {
  char* text[2] = {NULL, NULL};
  for (int i = 0; i < 2; i++) {
    rg_options o;
    rg_options_init(&o, seed);
    rg_graph rg;
    ptc_status s = rg_generate(ctx, &o, &rg);
    if (!s) s = ptc_graph_to_json(rg.g, NULL, &text[i]);
    rg_graph_free(&rg);
    ptc_status_destroy(s);
  }
  bool same = text[0] && text[1] && !strcmp(text[0], text[1]);
  ptc_free(text[0]);
  ptc_free(text[1]);
  if (!same) printf("FAIL: seed %llu generated two different graphs\n", (unsigned long long)seed);
  return same;
}

/* Picks backend A; false when it must fail (expected but missing). */
static bool choose_backends(config* c) {
  const char* why = NULL;
  if (ptc_backend_available(c->a, &why)) return true;
  const char* expect = getenv("PTC_EXPECT_CPU");
  if (expect && !strcmp(expect, "1")) {
    printf("FAIL: backend '%s' is not available (%s) but PTC_EXPECT_CPU=1\n", c->a,
           why ? why : "no reason");
    return false;
  }
  printf("note: backend '%s' is not available (%s); checking the generator with '%s' against "
         "itself instead\n", c->a, why ? why : "no reason", c->b);
  c->a = c->b;
  return true;
}

int main(int argc, char** argv) {
  config c = {argc > 1 ? argv[1] : "cpu", argc > 2 ? argv[2] : "ref", false};
  uint32_t count = DEFAULT_COUNT;
  const char* env_count = getenv("PTC_RANDGRAPH_COUNT");
  if (argc > 3) count = (uint32_t)strtoul(argv[3], NULL, 10);
  if (env_count && *env_count) count = (uint32_t)strtoul(env_count, NULL, 10);
  const char* one = getenv("PTC_RANDGRAPH_SEED");
  if (!choose_backends(&c)) return 1;
  ptc_context* ctx = NULL;
  ptc_status s = ptc_context_create(NULL, &ctx);
  if (s) {
    printf("FAIL: context: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
    return 1;
  }
  stats st;
  memset(&st, 0, sizeof st);
  double t0 = now();
  if (!deterministic(ctx, 7)) st.compile_errors++;
  if (one && *one) {
    c.verbose = st.verbose = true;
    check_seed(ctx, &st, &c, strtoull(one, NULL, 10));
  } else {
    const char* env_first = getenv("PTC_RANDGRAPH_FIRST");
    uint64_t first = env_first && *env_first ? strtoull(env_first, NULL, 10) : 1;
    for (uint64_t i = first; i < first + count; i++) check_seed(ctx, &st, &c, i);
  }
  ptc_context_release(ctx);
  /* more than 5% of perturbations passing means the tolerances are too
   * loose (expected misses: values below the dtype's atol, outputs carrying
   * f16/bf16 precision into a wider dtype) */
  bool loose = (st.probes_missed[0] + st.probes_missed[1]) * 20 > st.probes[0] + st.probes[1];
  uint32_t failed = st.mismatched + st.compile_errors + st.run_errors + (loose ? 1 : 0);
  printf("test_cpu_random: %s vs %s: %u graphs (%u dynamic, %u also unfused), %zu nodes, "
         "%zu kernels of %s (%.1f per graph); %u runs: %u passed, %u mismatched, %u compile "
         "errors, %u run errors, %u size sets skipped by guards; compile %.1f s, run %.1f s, "
         "total %.1f s; sensitivity: %u of %u perturbed outputs caught (f16/bf16: %u of %u)%s\n",
         c.a, c.b, st.graphs, st.dynamic, st.nofuse_graphs, st.nodes, st.kernels, c.a,
         st.graphs ? (double)st.kernels / st.graphs : 0.0, st.runs, st.passed, st.mismatched,
         st.compile_errors, st.run_errors, st.guard_skips, st.t_compile, st.t_run, now() - t0,
         st.probes[0] - st.probes_missed[0], st.probes[0], st.probes[1] - st.probes_missed[1],
         st.probes[1], loose ? " (FAIL: tolerances too loose)" : "");
  printf("%u passed, %u failed\n", st.passed, failed);
  return failed ? 1 : 0;
}
