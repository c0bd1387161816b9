/* cpu_bench.c - the CPU micro-benchmark: times, in one run and on the same
 * inputs, backend "ref" (the op-by-op interpreter, i.e. eager), "cpu" with
 * disable_fusion=1 and "cpu" fused, on memory-bound workloads (pointwise
 * chain, softmax, layer/rms norm, row/column sums, var_mean), compute-bound
 * ones (matmul + bias + gelu, attention) and a per-call overhead workload
 * (ten pointwise ops on 16 floats). Reports medians of N runs, ratios
 * (ref/fused, nofuse/fused), achieved GB/s (minimum bytes moved) and that as
 * a percentage of this machine's measured copy bandwidth (median memcpy by
 * one thread and split over every core; the larger is the ceiling) or
 * GFLOP/s, kernel counts, and cold (empty PTC_CACHE_DIR) and warm (same
 * folder again) compile times. Output: one Markdown table. Public API only.
 *
 * Sizes. By default the main tensor of every memory-bound workload is the
 * larger of the issue's size (2^23 or 2^24 floats) and the smallest power
 * of two of at least twice the last-level cache (read from sysconf or
 * /sys), so inputs plus outputs are >= 4x the cache and the kernels stream
 * from DRAM like the copy does (the copy buffers get the same size).
 * `--scale F` multiplies those sizes; `--issue-sizes` uses the issue's
 * sizes (cache-resident on server parts with a few hundred MiB of L3);
 * `--small` is the issue's sizes / 8 with smaller matmul/attention (a smoke
 * run). Matmul and attention keep the issue's shapes otherwise.
 *
 * Usage: cpu_bench [--runs N] [--only NAME] [--scale F] [--issue-sizes] [--small]
 *                  [--no-ref] [--skip-slow-ref] [--fused-only] [--align B]
 *   --runs N         timed runs per variant (median; default 10). A variant
 *                    stops early after its time budget (ref 3 s, cpu 20 s;
 *                    at least 1 run, the count is printed when short)
 *   --only NAME      one workload (substring of its name)
 *   --scale F        multiply the memory-bound sizes by F (e.g. 0.25, 4)
 *   --issue-sizes    the issue's sizes instead of >= 2x the last-level cache
 *   --small          the issue's sizes / 8, smaller matmul/attention
 *   --no-ref         do not run ref at all; --skip-slow-ref: not on matmul/attention
 *   --fused-only     time only the fused executable (development)
 *   --align B        alignment of the tensors' data in bytes (default 64; 0 = malloc)
 */
#include <ptc/ptc.h>

#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- options and timing ------------------------------------------------------------ */
typedef struct options {
  int runs;
  const char* only;
  bool no_ref, skip_slow_ref, fused_only;
  bool issue_sizes;
  double scale;   /* multiplies the memory-bound sizes */
  int64_t shrink; /* --small: divides matmul/attention dims */
  size_t align;   /* tensor data alignment; 0 = plain malloc */
} options;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char* what, ptc_status s) {
  fprintf(stderr, "cpu_bench: %s: %s\n", what, s ? ptc_status_message(s) : "out of memory");
  exit(2);
}

/* ---- graph building (errors are fatal: the workloads are fixed) --------------------- */
static ptc_value input(ptc_graph* g, const char* name, const int64_t* shape, size_t rank) {
  ptc_dim d[4];
  for (size_t i = 0; i < rank; i++) d[i] = (ptc_dim){shape[i], 0, 0};
  ptc_value v;
  ptc_status s = ptc_graph_add_input(g, name, PTC_F32, d, rank, NULL, &v);
  if (s) die(name, s);
  return v;
}

static ptc_value op(ptc_graph* g, const char* name, const ptc_value* in, size_t n_in,
                    const ptc_attr* a, size_t n_a) {
  ptc_value v;
  ptc_status s = ptc_graph_add_node(g, name, in, n_in, a, n_a, &v, 1, NULL);
  if (s) die(name, s);
  return v;
}

static ptc_value op1(ptc_graph* g, const char* name, ptc_value x) {
  return op(g, name, &x, 1, NULL, 0);
}

static ptc_value scal(ptc_graph* g, const char* name, ptc_value x, double v) {
  ptc_attr a = ptc_attr_float("other", v);
  return op(g, name, &x, 1, &a, 1);
}

static void output(ptc_graph* g, ptc_value v) {
  ptc_status s = ptc_graph_add_output(g, v);
  if (s) die("output", s);
}

/* ---- workloads ----------------------------------------------------------------------- */
typedef struct dims {
  int64_t rows, cols;
} dims;

/* sin, *2, +1, relu, cos, neg, *0.5 on a flat vector */
static void w_chain(ptc_graph* g, int64_t n, double* bytes) {
  ptc_value y = op1(g, "sin", input(g, "x", &n, 1));
  y = op1(g, "relu", scal(g, "add", scal(g, "mul", y, 2.0), 1.0));
  y = scal(g, "mul", op1(g, "neg", op1(g, "cos", y)), 0.5);
  output(g, y);
  *bytes = 2.0 * 4 * (double)n;
}

static void w_softmax(ptc_graph* g, dims d, double* bytes) {
  int64_t s[2] = {d.rows, d.cols};
  ptc_value x = input(g, "x", s, 2);
  ptc_attr a = ptc_attr_int("dim", -1);
  output(g, op(g, "softmax", &x, 1, &a, 1));
  *bytes = 2.0 * 4 * (double)(d.rows * d.cols);
}

static void w_norm(ptc_graph* g, dims d, bool rms, double* bytes) {
  int64_t s[2] = {d.rows, d.cols};
  ptc_value in[3] = {input(g, "x", s, 2), input(g, "w", &d.cols, 1), PTC_VALUE_NONE};
  if (!rms) in[2] = input(g, "b", &d.cols, 1);
  ptc_attr a = ptc_attr_ints("normalized_shape", &d.cols, 1);
  output(g, op(g, rms ? "rms_norm" : "layer_norm", in, rms ? 2 : 3, &a, 1));
  *bytes = 4.0 * (2.0 * (double)(d.rows * d.cols) + (rms ? 1 : 2) * (double)d.cols);
}

static void w_sum(ptc_graph* g, dims d, int64_t dim, double* bytes) {
  int64_t s[2] = {d.rows, d.cols};
  ptc_value x = input(g, "x", s, 2);
  ptc_attr a = ptc_attr_ints("dim", &dim, 1);
  output(g, op(g, "sum", &x, 1, &a, 1));
  *bytes = 4.0 * ((double)(d.rows * d.cols) + (double)(dim ? d.rows : d.cols));
}

static void w_var_mean(ptc_graph* g, dims d, double* bytes) {
  int64_t s[2] = {d.rows, d.cols}, dim = 1;
  ptc_value x = input(g, "x", s, 2), outs[2];
  ptc_attr a = ptc_attr_ints("dim", &dim, 1);
  ptc_status st = ptc_graph_add_node(g, "var_mean", &x, 1, &a, 1, outs, 2, NULL);
  if (st) die("var_mean", st);
  output(g, outs[0]);
  output(g, outs[1]);
  *bytes = 4.0 * ((double)(d.rows * d.cols) + 2.0 * (double)d.rows);
}

/* gelu(x[M, K] @ w[K, N] + b[N]) */
static void w_mm(ptc_graph* g, int64_t m, int64_t n, int64_t k, double* flops) {
  int64_t xs[2] = {m, k}, ws[2] = {k, n};
  ptc_value in[2] = {input(g, "x", xs, 2), input(g, "w", ws, 2)};
  ptc_value add_in[2] = {op(g, "matmul", in, 2, NULL, 0), input(g, "b", &n, 1)};
  output(g, op1(g, "gelu", op(g, "add", add_in, 2, NULL, 0)));
  *flops = 2.0 * (double)m * (double)n * (double)k;
}

static void w_attention(ptc_graph* g, int64_t b, int64_t h, int64_t s, int64_t d, double* flops) {
  int64_t sh[4] = {b, h, s, d};
  ptc_value in[3] = {input(g, "q", sh, 4), input(g, "k", sh, 4), input(g, "v", sh, 4)};
  output(g, op(g, "scaled_dot_product_attention", in, 3, NULL, 0));
  *flops = 4.0 * (double)(b * h) * (double)s * (double)s * (double)d;
}

/* ten pointwise ops on 16 floats (per-call overhead) */
static void w_tiny(ptc_graph* g) {
  int64_t n = 16;
  ptc_value y = op1(g, "sqrt", scal(g, "add", op1(g, "abs", op1(g, "neg", input(g, "x", &n, 1))), 0.5));
  y = op1(g, "sigmoid", op1(g, "tanh", scal(g, "mul", y, 0.1)));
  y = scal(g, "mul", scal(g, "sub", op1(g, "relu", y), 0.25), 3.0);
  output(g, y);
}

enum { W_CHAIN, W_SOFTMAX, W_LN, W_RMS, W_ROWSUM, W_COLSUM, W_VARMEAN, W_MM, W_ATTN, W_TINY };

typedef struct workload {
  int kind;
  const char* name;
  int64_t base;  /* memory-bound: elements of the main tensor at the issue's size */
  bool slow_ref; /* ref runs once (or is skipped) */
} workload;

enum { COLS = 4096 }; /* the row length of every 2-D memory-bound workload */

static const workload workloads[] = {
    {W_CHAIN, "pointwise chain x7", (int64_t)1 << 24, false},
    {W_SOFTMAX, "softmax rows", (int64_t)2048 * COLS, false},
    {W_LN, "layer_norm", (int64_t)2048 * COLS, false},
    {W_RMS, "rms_norm", (int64_t)2048 * COLS, false},
    {W_ROWSUM, "row sum", (int64_t)4096 * COLS, false},
    {W_COLSUM, "column sum", (int64_t)4096 * COLS, false},
    {W_VARMEAN, "var_mean rows", (int64_t)2048 * COLS, false},
    {W_MM, "mm + bias + gelu", 0, true},
    {W_ATTN, "attention", 0, true},
    {W_TINY, "10 pointwise ops on 16 floats", 0, false},
};

/* Elements of workload w's main tensor: see "Sizes" at the top. */
static int64_t main_elems(const workload* w, const options* o, int64_t llc_elems) {
  int64_t n = w->base;
  if (n <= 0) return 0;
  if (!o->issue_sizes)
    while (n < llc_elems) n *= 2;
  double v = (double)n * o->scale;
  int64_t rows = (int64_t)(v / COLS);
  if (w->kind == W_CHAIN) return v < 1 ? 1 : (int64_t)v;
  return (rows < 1 ? 1 : rows) * COLS;
}

/* Builds workload w; *bytes or *flops get the traffic or arithmetic for
 * throughput figures, `label` the workload's name with its sizes. */
static void build(ptc_graph* g, const workload* w, const options* o, int64_t llc_elems,
                  double* bytes, double* flops, char* label, size_t cap) {
  int64_t n = main_elems(w, o, llc_elems), sh = o->shrink;
  dims d = {n / COLS, COLS};
  *bytes = *flops = 0;
  switch (w->kind) {
    case W_CHAIN:
      w_chain(g, n, bytes);
      snprintf(label, cap, "%s, %lld f32", w->name, (long long)n);
      return;
    case W_SOFTMAX: w_softmax(g, d, bytes); break;
    case W_LN: w_norm(g, d, false, bytes); break;
    case W_RMS: w_norm(g, d, true, bytes); break;
    case W_ROWSUM: w_sum(g, d, 1, bytes); break;
    case W_COLSUM: w_sum(g, d, 0, bytes); break;
    case W_VARMEAN: w_var_mean(g, d, bytes); break;
    case W_MM:
      w_mm(g, 1024 / sh, 1024, 4096, flops);
      snprintf(label, cap, "%s %lldx1024x4096", w->name, (long long)(1024 / sh));
      return;
    case W_ATTN: {
      int64_t b = 8 / (sh > 8 ? 8 : sh);
      w_attention(g, b, 16, 1024, 64, flops);
      snprintf(label, cap, "%s b%lld h16 s1024 d64", w->name, (long long)b);
      return;
    }
    default: w_tiny(g); snprintf(label, cap, "%s", w->name); return;
  }
  snprintf(label, cap, "%s %lldx%lld", w->name, (long long)d.rows, (long long)d.cols);
}

/* ---- tensors ------------------------------------------------------------------------ */
typedef struct tensors {
  size_t n;
  ptc_tensor t[4];
  int64_t shape[4][4];
  float* data[4];
} tensors;

/* Contiguous f32 tensors shaped like the graph's inputs (or outputs), filled
 * with values in [-1, 1) when `fill`. */
static float* alloc_data(size_t numel, size_t align) {
  void* p = NULL;
  size_t bytes = (numel ? numel : 1) * sizeof(float);
  if (!align) return malloc(bytes);
  return posix_memalign(&p, align < sizeof(void*) ? sizeof(void*) : align, bytes) ? NULL : p;
}

static void alloc_tensors(const ptc_graph* g, bool outputs, bool fill, size_t align, tensors* ts) {
  memset(ts, 0, sizeof *ts);
  ts->n = outputs ? ptc_graph_num_outputs(g) : ptc_graph_num_inputs(g);
  uint32_t rng = 12345;
  for (size_t i = 0; i < ts->n && i < 4; i++) {
    ptc_value v = outputs ? ptc_graph_output(g, i) : ptc_graph_input(g, i);
    ptc_value_info info = {.struct_size = sizeof info};
    ptc_status s = ptc_graph_value_info(g, v, &info);
    if (s) die("value info", s);
    size_t numel = 1;
    for (uint32_t d = 0; d < info.rank; d++) numel *= (size_t)(ts->shape[i][d] = info.shape[d].value);
    ts->data[i] = alloc_data(numel, align);
    if (!ts->data[i]) die("tensors", NULL);
    for (size_t k = 0; k < numel; k++) {
      rng = rng * 1103515245u + 12345u;
      ts->data[i][k] = fill ? (float)((rng >> 8) & 0xFFFF) / 32768.0f - 1.0f : 0.0f;
    }
    ts->t[i] = (ptc_tensor){ts->data[i], {PTC_DEVICE_CPU, 0}, (int32_t)info.rank,
                            ptc_dtype_to_dl(info.dtype), ts->shape[i], NULL, 0};
  }
}

static void free_tensors(tensors* ts) {
  for (size_t i = 0; i < 4; i++) free(ts->data[i]);
}

/* ---- cache folders ------------------------------------------------------------------- */
static int rm_entry(const char* path, const struct stat* sb, int flag, struct FTW* ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

static void remove_tree(const char* dir) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* ---- one variant --------------------------------------------------------------------- */
typedef struct result {
  bool ok, ran;
  double cold_s, warm_s, run_s; /* run_s: median seconds per run (per call for tiny) */
  size_t kernels;
  int runs;
} result;

static ptc_executable* compile(ptc_context* ctx, const ptc_graph* g, const char* backend,
                               bool nofuse, double* secs) {
  ptc_compile_options o;
  ptc_compile_options_init(&o);
  o.backend = backend;
  o.disable_fusion = nofuse;
  ptc_executable* exe = NULL;
  double t0 = now_s();
  ptc_status s = ptc_compile(ctx, g, &o, &exe);
  *secs = now_s() - t0;
  if (s) {
    fprintf(stderr, "cpu_bench: compile (%s%s): %s\n", backend, nofuse ? ", nofuse" : "",
            ptc_status_message(s));
    ptc_status_destroy(s);
  }
  return exe;
}

static bool run_once(const ptc_executable* exe, const tensors* in, const tensors* out) {
  ptc_status s = ptc_executable_run(exe, in->t, in->n, out->t, out->n, NULL);
  if (s) {
    fprintf(stderr, "cpu_bench: run: %s\n", ptc_status_message(s));
    ptc_status_destroy(s);
  }
  return s == NULL;
}

/* Median time of up to `runs` samples, fewer when they exceed `budget_s`
 * seconds in all (at least one; *done gets the count); a sample of a tiny
 * workload is the mean of a batch of calls sized to take about 10 ms. A
 * warm-up run comes first unless it alone exceeds the budget (it is then
 * the one sample). */
static bool time_runs(const ptc_executable* exe, const tensors* in, const tensors* out, int runs,
                      double budget_s, bool per_call, double* median_s, int* done) {
  double* t = malloc((size_t)(runs + 1) * sizeof *t);
  if (!t) die("timing", NULL);
  double t0 = now_s(), spent;
  bool ok = run_once(exe, in, out);
  spent = now_s() - t0;
  int n = 0, batch = 1;
  if (ok && spent > budget_s) t[n++] = spent;
  if (ok && per_call && !n) {
    t0 = now_s();
    for (int i = 0; i < 100; i++) run_once(exe, in, out);
    double per = (now_s() - t0) / 100;
    batch = per > 0 ? (int)fmin(100000, fmax(1, 0.01 / per)) : 1000;
  }
  spent = 0;
  while (ok && n < runs && (n == 0 || spent < budget_s)) {
    t0 = now_s();
    for (int i = 0; i < batch && ok; i++) ok = run_once(exe, in, out);
    double dt = now_s() - t0;
    spent += dt;
    t[n++] = dt / batch;
  }
  if (ok) *median_s = median(t, n);
  *done = n;
  free(t);
  return ok;
}

static result bench_variant(ptc_context* ctx, const ptc_graph* g, const char* backend, bool nofuse,
                            int runs, double budget_s, bool per_call, const tensors* in,
                            const tensors* out) {
  result r = {0};
  char dir[] = "/tmp/ptc-bench-cache-XXXXXX";
  if (!mkdtemp(dir)) die("mkdtemp", NULL);
  setenv("PTC_CACHE_DIR", dir, 1);
  ptc_executable* cold = compile(ctx, g, backend, nofuse, &r.cold_s);
  ptc_executable* warm = cold ? compile(ctx, g, backend, nofuse, &r.warm_s) : NULL;
  if (warm) {
    r.kernels = ptc_executable_num_kernels(warm);
    r.ran = true;
    r.ok = time_runs(warm, in, out, runs, budget_s, per_call, &r.run_s, &r.runs);
  }
  ptc_executable_release(cold);
  ptc_executable_release(warm);
  remove_tree(dir);
  return r;
}

/* ---- the machine's copy bandwidth ------------------------------------------------------ */
typedef struct copy_job {
  char* dst;
  const char* src;
  size_t n;
} copy_job;

static void* copy_worker(void* p) {
  copy_job* j = p;
  memcpy(j->dst, j->src, j->n);
  return NULL;
}

/* Seconds to memcpy n bytes split over `threads` threads (page-aligned parts;
 * a part whose thread cannot start is copied by the caller). */
static double copy_once(char* dst, const char* src, size_t n, int threads) {
  enum { MAX_THREADS = 256 };
  pthread_t tid[MAX_THREADS];
  copy_job jobs[MAX_THREADS];
  bool running[MAX_THREADS] = {false};
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  size_t part = (n / (size_t)threads + 4095) & ~(size_t)4095;
  for (int i = 0; i < threads; i++) {
    size_t off = (size_t)i * part;
    jobs[i] = (copy_job){dst + off, src + off, off >= n ? 0 : (n - off < part ? n - off : part)};
  }
  double t0 = now_s();
  for (int i = 1; i < threads; i++) {
    running[i] = pthread_create(&tid[i], NULL, copy_worker, &jobs[i]) == 0;
    if (!running[i]) copy_worker(&jobs[i]);
  }
  copy_worker(&jobs[0]);
  for (int i = 1; i < threads; i++)
    if (running[i]) pthread_join(tid[i], NULL);
  return now_s() - t0;
}

/* Median GB/s (bytes read + bytes written) of copying an n-byte buffer
 * with `threads` threads. */
static double copy_bandwidth(size_t n, int runs, int threads) {
  char* a = malloc(n);
  char* b = malloc(n);
  double* t = malloc((size_t)runs * sizeof *t);
  if (!a || !b || !t) die("copy buffers", NULL);
  memset(a, 1, n);
  memset(b, 2, n);
  for (int r = 0; r < runs; r++) {
    t[r] = copy_once(b, a, n, threads);
    a[(size_t)r % n] = b[((size_t)r * 7) % n]; /* keep the copies observable */
  }
  double gbs = 2.0 * (double)n / median(t, runs) / 1e9;
  free(t);
  free(a);
  free(b);
  return gbs;
}

/* Last-level cache size in bytes: sysconf, else the highest-level entry of
 * /sys/devices/system/cpu/cpu0/cache; 0 when unknown. */
static long llc_bytes(void) {
  long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (v > 0) return v;
  long best = 0;
  int best_level = 0;
  for (int i = 0; i < 16; i++) {
    char path[96], buf[64];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE* f = fopen(path, "r");
    if (!f) break;
    int level = fgets(buf, sizeof buf, f) ? atoi(buf) : 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    f = fopen(path, "r");
    if (!f) continue;
    long size = 0;
    if (fgets(buf, sizeof buf, f)) {
      char* end = NULL;
      size = strtol(buf, &end, 10);
      if (end && (*end == 'K' || *end == 'k')) size <<= 10;
      if (end && (*end == 'M' || *end == 'm')) size <<= 20;
    }
    fclose(f);
    if (level >= best_level && size > 0) best_level = level, best = size;
  }
  return best;
}

/* ---- reporting ------------------------------------------------------------------------ */
static void fmt_time(char* buf, size_t cap, const result* r, bool per_call, int want) {
  char note[24] = "";
  if (r->runs < want) snprintf(note, sizeof note, r->runs == 1 ? " (1 run)" : " (%d runs)", r->runs);
  if (!r->ran) snprintf(buf, cap, "n/a");
  else if (!r->ok) snprintf(buf, cap, "error");
  else if (per_call) snprintf(buf, cap, "%.2f us%s", r->run_s * 1e6, note);
  else snprintf(buf, cap, "%.2f ms%s", r->run_s * 1e3, note);
}

static void fmt_ratio(char* buf, size_t cap, const result* a, const result* b) {
  if (a->ok && b->ok && b->run_s > 0) snprintf(buf, cap, "%.2fx", a->run_s / b->run_s);
  else snprintf(buf, cap, "-");
}

static void print_header(void) {
  printf("| workload | MiB moved | ref | nofuse | fused | ref/fused | nofuse/fused | fused GB/s "
         "| %% of copy | GFLOP/s | kernels nofuse / fused | compile cold / warm |\n");
  printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
}

static void print_row(const workload* w, const char* label, double bytes, double flops,
                      const result* ref, const result* nof, const result* fus, double copy_gbs,
                      int want) {
  bool per_call = w->kind == W_TINY;
  char tr[40], tn[40], tf[40], r1[16], r2[16], gbs[24], pct[16], gfl[24], comp[64], kern[24],
      mib[24];
  fmt_time(tr, sizeof tr, ref, per_call, want);
  fmt_time(tn, sizeof tn, nof, per_call, want);
  fmt_time(tf, sizeof tf, fus, per_call, want);
  fmt_ratio(r1, sizeof r1, ref, fus);
  fmt_ratio(r2, sizeof r2, nof, fus);
  snprintf(mib, sizeof mib, "-");
  snprintf(gbs, sizeof gbs, "-");
  snprintf(pct, sizeof pct, "-");
  snprintf(gfl, sizeof gfl, "-");
  if (bytes > 0) snprintf(mib, sizeof mib, "%.0f", bytes / (1 << 20));
  if (fus->ok && bytes > 0) {
    snprintf(gbs, sizeof gbs, "%.1f", bytes / fus->run_s / 1e9);
    snprintf(pct, sizeof pct, "%.0f%%", 100.0 * bytes / fus->run_s / 1e9 / copy_gbs);
  }
  if (fus->ok && flops > 0) snprintf(gfl, sizeof gfl, "%.1f", flops / fus->run_s / 1e9);
  snprintf(kern, sizeof kern, "-");
  if (nof->ran && fus->ran) snprintf(kern, sizeof kern, "%zu / %zu", nof->kernels, fus->kernels);
  else if (fus->ran) snprintf(kern, sizeof kern, "- / %zu", fus->kernels);
  snprintf(comp, sizeof comp, "-");
  if (fus->ran) snprintf(comp, sizeof comp, "%.2f s / %.1f ms", fus->cold_s, fus->warm_s * 1e3);
  printf("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label, mib, tr, tn,
         tf, r1, r2, gbs, pct, gfl, kern, comp);
  fflush(stdout);
}

static void usage(void) {
  fprintf(stderr, "usage: cpu_bench [--runs N] [--only NAME] [--scale F] [--issue-sizes] "
          "[--small] [--no-ref] [--skip-slow-ref] [--fused-only] [--align B]\n");
  exit(2);
}

static void parse(int argc, char** argv, options* o) {
  *o = (options){.runs = 10, .scale = 1.0, .shrink = 1, .align = 64};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--runs") && i + 1 < argc) o->runs = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--only") && i + 1 < argc) o->only = argv[++i];
    else if (!strcmp(argv[i], "--scale") && i + 1 < argc) o->scale = atof(argv[++i]);
    else if (!strcmp(argv[i], "--issue-sizes")) o->issue_sizes = true;
    else if (!strcmp(argv[i], "--small")) o->issue_sizes = true, o->shrink = 8;
    else if (!strcmp(argv[i], "--no-ref")) o->no_ref = true;
    else if (!strcmp(argv[i], "--skip-slow-ref")) o->skip_slow_ref = true;
    else if (!strcmp(argv[i], "--fused-only")) o->fused_only = true;
    else if (!strcmp(argv[i], "--align") && i + 1 < argc) o->align = (size_t)atol(argv[++i]);
    else usage();
  }
  if (o->shrink > 1) o->scale /= (double)o->shrink;
  if (o->runs < 1 || !(o->scale > 0) || (o->align & (o->align - 1))) usage();
}

static void bench_workload(ptc_context* ctx, const options* o, const workload* w, bool have_cpu,
                           double copy_gbs, int64_t llc_elems) {
  ptc_graph* g = NULL;
  ptc_status s = ptc_graph_create(ctx, &g);
  if (s) die("graph", s);
  double bytes, flops;
  char label[96];
  build(g, w, o, llc_elems, &bytes, &flops, label, sizeof label);
  tensors in, out;
  alloc_tensors(g, false, true, o->align, &in);
  alloc_tensors(g, true, false, o->align, &out);
  bool per_call = w->kind == W_TINY;
  result none = {0}, ref = none, nof = none, fus = none;
  if (have_cpu) {
    fus = bench_variant(ctx, g, "cpu", false, o->runs, 20.0, per_call, &in, &out);
    if (!o->fused_only)
      nof = bench_variant(ctx, g, "cpu", true, w->slow_ref ? (o->runs + 1) / 2 : o->runs, 20.0,
                          per_call, &in, &out);
  }
  if (!o->fused_only && !o->no_ref && !(w->slow_ref && o->skip_slow_ref))
    ref = bench_variant(ctx, g, "ref", false, w->slow_ref ? 1 : o->runs, 3.0, per_call, &in, &out);
  print_row(w, label, bytes, flops, &ref, &nof, &fus, copy_gbs, o->runs);
  free_tensors(&in);
  free_tensors(&out);
  ptc_graph_destroy(g);
}

int main(int argc, char** argv) {
  options o;
  parse(argc, argv, &o);
  const char* why = NULL;
  bool have_cpu = ptc_backend_available("cpu", &why);
  ptc_context* ctx = NULL;
  ptc_status s = ptc_context_create(NULL, &ctx);
  if (s) die("context", s);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  long llc = llc_bytes();
  bool llc_known = llc > 0;
  if (!llc_known) llc = 32L << 20; /* assume a desktop part */
  int64_t llc_elems = (int64_t)(2 * (double)llc / sizeof(float));
  /* the copy moves a buffer as large as the memory-bound workloads' main
   * tensor, at least 256 MiB */
  workload ref_w = {W_SOFTMAX, "", (int64_t)2048 * COLS, false};
  size_t copy_n = (size_t)main_elems(&ref_w, &o, llc_elems) * sizeof(float);
  if (copy_n < ((size_t)256 << 20)) copy_n = (size_t)256 << 20; /* the issue's table used 256 MiB */
  int copy_runs = o.runs < 5 ? 5 : o.runs;
  double copy1 = copy_bandwidth(copy_n, copy_runs, 1);
  double copyn = cores > 1 ? copy_bandwidth(copy_n, copy_runs, (int)cores) : copy1;
  double copy_gbs = copyn > copy1 ? copyn : copy1;
  printf("# cpu_bench: libptc %s, %ld cores, median of %d runs, tensors %s, %s sizes%s\n\n",
         ptc_version_string(), cores, o.runs, o.align ? "aligned" : "from malloc",
         o.issue_sizes ? "the issue's" : ">= 2x last-level cache",
         o.scale != 1.0 ? (o.shrink > 1 ? " / 8 (--small)" : " x --scale") : "");
  printf("Last-level cache: %ld MiB%s. Copy of %zu MiB (memcpy; bytes read + written, median): "
         "%.1f GB/s with 1 thread, %.1f GB/s with %ld threads; the ceiling for the %% column is "
         "%.1f GB/s.%s\n\n",
         llc >> 20, llc_known ? "" : " (unknown: assumed)", copy_n >> 20, copy1, copyn, cores,
         copy_gbs,
         (double)copy_n < 2.0 * (double)llc
             ? " Working sets below ~2x the cache are served from it and can beat the ceiling."
             : "");
  if (!have_cpu)
    printf("backend cpu is not available (%s): only ref is timed\n\n", why ? why : "?");
  printf("ref = op-by-op interpreter (eager); nofuse = cpu with disable_fusion=1; fused = cpu. "
         "MiB moved = the minimum traffic (inputs read once, outputs written once) that GB/s is "
         "computed from. Compile = cold (empty cache) / warm (cache hit) for the fused "
         "executable. ref runs once on matmul and attention%s.\n\n",
         o.no_ref ? " (ref not run: --no-ref)"
                  : o.skip_slow_ref ? " (skipped: --skip-slow-ref)" : "");
  print_header();
  for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++)
    if (!o.only || strstr(workloads[i].name, o.only))
      bench_workload(ctx, &o, &workloads[i], have_cpu, copy_gbs, llc_elems);
  ptc_context_release(ctx);
  return 0;
}
