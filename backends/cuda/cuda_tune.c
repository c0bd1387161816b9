/* cuda_tune.c - launch-config autotuning of generated kernels (modes
 * "max-autotune" and "max-autotune-no-cudagraphs"): each kernel lists the
 * launch configurations it supports (cuda_tune_candidates: pointwise kernels
 * take their block size from blockDim, so block 128/256/512 x a grid cap of
 * 1/2/4/8 waves or none); on the first launch of a tunable kernel (one that
 * does not read what it writes, so repeated launches leave the same memory)
 * at a given size, every candidate is timed with CUDA events on the run's
 * own buffers and the fastest is kept - in memory for the process and on
 * disk next to the cubin cache (<cache root>/cuda/<key>.tune, key: the
 * cubin's key (kernel source, NVRTC, options, arch) + the device + the
 * run's sizes), so a later process skips the timing. Kernels that are not
 * tunable, launches during stream capture and plans not in an autotune mode
 * keep the heuristic configuration (the first candidate).
 *
 * The CUDA event functions are resolved here from the already opened
 * libcuda.so.1 (dlsym), so that the loader's table stays as it is.
 * Thread-safety: the in-memory table is guarded by a mutex; every function
 * is thread-safe. */
#include "../../lib/runtime/kcache.h"
#include "cuda_plan.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TUNE_REPS 3
#define TUNE_MAX_CANDIDATES 16

bool cuda_tune_mode(const char* mode) {
  return mode && (strcmp(mode, "max-autotune") == 0 || strcmp(mode, "max-autotune-no-cudagraphs") == 0);
}

/* ---- candidates ------------------------------------------------------------------ */

size_t cuda_tune_candidates(const cuda_step* st, cuda_launch_cfg* out, size_t cap) {
  if (cap == 0) return 0;
  out[0] = (cuda_launch_cfg){st->block_x, st->block_y, CUDA_TUNE_DEFAULT_WAVES};
  if (st->layout == CUDA_LAYOUT_POINTWISE && st->grid_per_sm) /* the codegen's own heuristic */
    out[0].waves = st->grid_per_sm == CUDA_CG_PW_NOCAP ? 0 : st->grid_per_sm;
  size_t n = 1;
  if (!st->tunable || st->layout != CUDA_LAYOUT_POINTWISE || st->block_y != 1) return n;
  static const uint32_t blocks[] = {128, 256, 512};
  static const uint32_t waves[] = {1, 2, 4, 8, 0};
  for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
    if (blocks[b] > st->max_threads) continue;
    for (size_t w = 0; w < sizeof waves / sizeof waves[0] && n < cap; w++) {
      cuda_launch_cfg c = {blocks[b], 1, waves[w]};
      if (c.block_x == out[0].block_x && c.waves == out[0].waves) continue;
      out[n++] = c;
    }
  }
  return n;
}

int64_t cuda_tune_blocks(const cuda_step* st, const cuda_launch_cfg* c, int sm_count, int64_t xn) {
  /* outer points a block covers per step: slots scale with the block's width */
  int64_t per_thread = st->block_x ? (int64_t)st->slots / st->block_x : 1;
  int64_t per_block = st->layout == CUDA_LAYOUT_POINTWISE ? per_thread * c->block_x : (int64_t)st->slots;
  if (per_block < 1) per_block = 1;
  int64_t blocks = (xn + per_block - 1) / per_block;
  int64_t threads = (int64_t)c->block_x * c->block_y;
  if (threads < 1) threads = 1;
  if (c->waves) {
    int64_t per_sm = 2048 / threads > 0 ? 2048 / threads : 1;
    int64_t capb = (int64_t)(sm_count > 0 ? sm_count : 1) * per_sm * c->waves;
    if (st->grid_per_sm && st->layout != CUDA_LAYOUT_POINTWISE) /* the kernel's own cap */
      capb = (int64_t)(sm_count > 0 ? sm_count : 1) * st->grid_per_sm;
    if (blocks > capb) blocks = capb;
  }
  if (blocks > 0x7fffffff) blocks = 0x7fffffff;
  return blocks < 1 ? 1 : blocks;
}

/* ---- the table: memory, then disk ---------------------------------------------------- */

typedef struct tune_entry {
  struct tune_entry* next;
  char key[65];
  cuda_launch_cfg cfg;
  char kernel_key[65];  /* set by cuda_tune_pick (for describe): the step's cubin key ... */
  int64_t xn;           /* ... and the size it was chosen for */
  bool timed;           /* chosen by timing in this process (else read from disk) */
} tune_entry;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static tune_entry* table;

ptc_status cuda_tune_key(const char* kernel_key, const char* device, int sm_count, int arch,
                         int64_t xn, int64_t rn, int64_t ext, char key[65]) {
  if (!kernel_key || !*kernel_key) return PTC_ERR(INVALID_ARGUMENT, "cuda autotune: no kernel key");
  char dev[192], sizes[96];
  snprintf(dev, sizeof dev, "%s|sm_%d|%d SMs", device ? device : "", arch, sm_count);
  /* sizes: the outer and reduction extents and the index width the launch uses */
  snprintf(sizes, sizeof sizes, "xn=%lld rn=%lld i%d", (long long)xn, (long long)rn,
           ext < ((int64_t)1 << 30) ? 32 : 64);
  const char* parts[] = {"ptc-cuda-tune-1", kernel_key, dev, sizes};
  return kcache_key(parts, sizeof parts / sizeof parts[0], key);
}

static bool table_get(const char* key, cuda_launch_cfg* c) {
  pthread_mutex_lock(&table_lock);
  bool found = false;
  for (tune_entry* e = table; e && !found; e = e->next)
    if (strcmp(e->key, key) == 0) {
      *c = e->cfg;
      found = true;
    }
  pthread_mutex_unlock(&table_lock);
  return found;
}

static void table_put(const char* key, const cuda_launch_cfg* c) {
  pthread_mutex_lock(&table_lock);
  tune_entry* e = table;
  while (e && strcmp(e->key, key) != 0) e = e->next;
  if (!e && (e = calloc(1, sizeof *e)) != NULL) {
    snprintf(e->key, sizeof e->key, "%s", key);
    e->next = table;
    table = e;
  }
  if (e) e->cfg = *c;
  pthread_mutex_unlock(&table_lock);
}

/* Marks the entry of `key` as the choice of kernel `kernel_key` at `xn`. */
static void table_note(const char* key, const char* kernel_key, int64_t xn, bool timed) {
  pthread_mutex_lock(&table_lock);
  for (tune_entry* e = table; e; e = e->next)
    if (strcmp(e->key, key) == 0) {
      snprintf(e->kernel_key, sizeof e->kernel_key, "%s", kernel_key);
      e->xn = xn;
      e->timed = e->timed || timed;
      break;
    }
  pthread_mutex_unlock(&table_lock);
}

void cuda_tune_describe(const cuda_plan* plan, const cuda_step* st, ptc_strbuf* sb) {
  if (!plan->autotune || st->is_extern) return;
  cuda_launch_cfg cand[TUNE_MAX_CANDIDATES];
  size_t n = cuda_tune_candidates(st, cand, TUNE_MAX_CANDIDATES);
  if (n < 2) {
    ptc_sb_append(sb, "      autotune: not tunable (heuristic launch)\n");
    return;
  }
  ptc_sb_printf(sb, "      autotune: %zu launch configs;", n);
  size_t shown = 0;
  pthread_mutex_lock(&table_lock);
  for (tune_entry* e = table; e && shown < 8; e = e->next)
    if (st->tune_key[0] && strcmp(e->kernel_key, st->tune_key) == 0) {
      ptc_sb_printf(sb, " xnumel %lld: block %u waves %u (%s);", (long long)e->xn, e->cfg.block_x,
                    e->cfg.waves, e->timed ? "timed" : "cached");
      shown++;
    }
  pthread_mutex_unlock(&table_lock);
  ptc_sb_append(sb, shown ? "\n" : " not tuned yet (the first run times them)\n");
}

void cuda_tune_forget(void) {
  pthread_mutex_lock(&table_lock);
  while (table) {
    tune_entry* n = table->next;
    free(table);
    table = n;
  }
  pthread_mutex_unlock(&table_lock);
}

/* <cache>/cuda/<key>.tune; false when the cache is disabled (PTC_CACHE=0). */
static bool tune_path(const char* key, char* out, size_t cap) {
  if (kcache_disabled()) return false;
  kcache_loc loc;
  ptc_status s = kcache_open("cuda", &loc);
  if (s) {
    ptc_status_destroy(s);
    return false;
  }
  return !loc.private_dir && kcache_path(&loc, key, ".tune", out, cap);
}

bool cuda_tune_parse(const char* text, cuda_launch_cfg* c) {
  unsigned bx, by, w;
  char tail;
  if (!text || sscanf(text, "ptc-tune-1 block %u %u waves %u%c", &bx, &by, &w, &tail) != 4 ||
      tail != '\n')
    return false;
  if (bx == 0 || by == 0 || bx * (uint64_t)by > 1024 || w > 1024) return false;
  *c = (cuda_launch_cfg){bx, by, w};
  return true;
}

void cuda_tune_format(const cuda_launch_cfg* c, char* out, size_t cap) {
  snprintf(out, cap, "ptc-tune-1 block %u %u waves %u\n", c->block_x, c->block_y, c->waves);
}

bool cuda_tune_lookup(const char* key, cuda_launch_cfg* c) {
  if (table_get(key, c)) return true;
  char path[600];
  if (!tune_path(key, path, sizeof path)) return false;
  char text[128];
  if (!kcache_read_text(path, text, sizeof text)) return false;
  bool ok = cuda_tune_parse(text, c);
  if (ok) table_put(key, c);
  return ok;
}

ptc_status cuda_tune_store(const char* key, const cuda_launch_cfg* c) {
  table_put(key, c);
  char path[600], text[96];
  if (!tune_path(key, path, sizeof path)) return PTC_OK;
  cuda_tune_format(c, text, sizeof text);
  return kcache_write_atomic(path, text, strlen(text));
}

/* ---- timing ------------------------------------------------------------------------ */

typedef struct ev_api {
  cu_result (*Create)(cu_event*, unsigned);
  cu_result (*Record)(cu_event, cu_stream);
  cu_result (*Synchronize)(cu_event);
  cu_result (*Elapsed)(float*, cu_event, cu_event);
  cu_result (*Destroy)(cu_event);
  cu_result (*IsCapturing)(cu_stream, int*);
  bool ok;
} ev_api;

static ev_api ev;
static pthread_once_t ev_once = PTHREAD_ONCE_INIT;

static void ev_load(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return;
  *(void**)&ev.Create = dlsym(h, "cuEventCreate");
  *(void**)&ev.Record = dlsym(h, "cuEventRecord");
  *(void**)&ev.Synchronize = dlsym(h, "cuEventSynchronize");
  *(void**)&ev.Elapsed = dlsym(h, "cuEventElapsedTime");
  *(void**)&ev.Destroy = dlsym(h, "cuEventDestroy_v2");
  *(void**)&ev.IsCapturing = dlsym(h, "cuStreamIsCapturing");
  ev.ok = ev.Create && ev.Record && ev.Synchronize && ev.Elapsed && ev.Destroy;
  /* the handle stays open (as the loader's does) for the process */
}

/* Mean time of TUNE_REPS launches of `c` (one warm-up first), in ms. */
static ptc_status time_one(const cuda_plan* plan, const cuda_step* st, cu_function fn, void** args,
                           int64_t xn, const cuda_launch_cfg* c, cu_stream stream, cu_event e0,
                           cu_event e1, float* ms) {
  unsigned blocks = (unsigned)cuda_tune_blocks(st, c, plan->dev->sm_count, xn);
  char what[96];
  snprintf(what, sizeof what, "timing kernel %s", st->name);
  /* launched as runs launch them (cuda_launch.c), so the times compare */
  CUDA_TRY(cuda_launch_pdl(plan->dev, fn, blocks, 1, c->block_x, c->block_y, 0, stream, args),
           what);
  CUDA_TRY(ev.Record(e0, stream), what);
  for (int r = 0; r < TUNE_REPS; r++)
    CUDA_TRY(cuda_launch_pdl(plan->dev, fn, blocks, 1, c->block_x, c->block_y, 0, stream, args),
             what);
  CUDA_TRY(ev.Record(e1, stream), what);
  CUDA_TRY(ev.Synchronize(e1), what);
  float t = 0;
  CUDA_TRY(ev.Elapsed(&t, e0, e1), what);
  *ms = t / TUNE_REPS;
  return PTC_OK;
}

static ptc_status time_all(const cuda_plan* plan, const cuda_step* st, cu_function fn, void** args,
                           int64_t xn, const cuda_launch_cfg* cand, size_t n, cu_stream stream,
                           size_t* best, float* best_ms, float* default_ms) {
  cu_event e0 = NULL, e1 = NULL;
  if (ev.Create(&e0, 0) != CU_SUCCESS || ev.Create(&e1, 0) != CU_SUCCESS) {
    if (e0) ev.Destroy(e0);
    return PTC_ERR(INTERNAL, "cuda autotune: cannot create CUDA events");
  }
  ptc_status s = PTC_OK;
  *best = 0;
  for (size_t i = 0; !s && i < n; i++) {
    float ms = 0;
    s = time_one(plan, st, fn, args, xn, &cand[i], stream, e0, e1, &ms);
    if (s) break;
    if (i == 0) *default_ms = ms;
    if (i == 0 || ms < *best_ms) {
      *best_ms = ms;
      *best = i;
    }
  }
  ev.Destroy(e0);
  ev.Destroy(e1);
  return s;
}

/* Distinct buffer addresses: an output bound to an input's memory would make
 * repeated launches read their own results. */
static bool buffers_distinct(const cuda_step* st, void** args) {
  for (uint32_t i = 0; i < st->n_bufs; i++)
    for (uint32_t j = 0; j < i; j++)
      if (*(const cu_deviceptr*)args[i] == *(const cu_deviceptr*)args[j]) return false;
  return true;
}

ptc_status cuda_tune_pick(const cuda_plan* plan, const cuda_step* st, cu_function fn, void** args,
                          int64_t xn, int64_t rn, int64_t ext, cu_stream stream,
                          cuda_launch_cfg* out) {
  cuda_launch_cfg cand[TUNE_MAX_CANDIDATES];
  size_t n = cuda_tune_candidates(st, cand, TUNE_MAX_CANDIDATES);
  *out = cand[0];
  if (!plan->autotune || n < 2 || !st->tune_key[0]) return PTC_OK;
  char key[65];
  PTC_TRY(cuda_tune_key(st->tune_key, plan->dev->name, plan->dev->sm_count,
                        plan->dev->cc_major * 10 + plan->dev->cc_minor, xn, rn, ext, key));
  cuda_launch_cfg c;
  if (cuda_tune_lookup(key, &c)) {
    for (size_t i = 0; i < n; i++) /* only a configuration this kernel still supports */
      if (cand[i].block_x == c.block_x && cand[i].block_y == c.block_y && cand[i].waves == c.waves) {
        *out = c;
        table_note(key, st->tune_key, xn, false);
        return PTC_OK;
      }
  }
  pthread_once(&ev_once, ev_load);
  if (!ev.ok || !buffers_distinct(st, args)) return PTC_OK;
  int capturing = 0;
  if (ev.IsCapturing && (ev.IsCapturing(stream, &capturing) != CU_SUCCESS || capturing))
    return PTC_OK; /* no timing inside a graph capture: the heuristic this time */
  size_t best = 0;
  float best_ms = 0, default_ms = 0;
  PTC_TRY(time_all(plan, st, fn, args, xn, cand, n, stream, &best, &best_ms, &default_ms));
  *out = cand[best];
  ptc_log(plan->ctx, PTC_LOG_INFO,
          "cuda backend: kernel %s (xnumel %lld): tuned launch block %u waves %u: %.1f us "
          "(default block %u waves %u: %.1f us; %zu candidates)",
          st->name, (long long)xn, out->block_x, out->waves, 1e3 * best_ms, cand[0].block_x,
          cand[0].waves, 1e3 * default_ms, n);
  ptc_status s = cuda_tune_store(key, out);
  table_note(key, st->tune_key, xn, true);
  if (s) {
    ptc_log(plan->ctx, PTC_LOG_WARN, "cuda backend: autotune choice not saved: %s",
            ptc_status_message(s));
    ptc_status_destroy(s);
  }
  return PTC_OK;
}
