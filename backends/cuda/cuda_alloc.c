/* cuda_alloc.c - the caching device allocator of the cuda backend. Sizes are
 * rounded up to a class (at least 512 bytes; above that, 8 classes per
 * power of two, so a block is at most 1/8 larger than asked); a freed block
 * goes to the cache under its (class, stream) and the next request of that
 * class on that stream takes it without a driver call. Reuse is only on the
 * stream that freed the block, so work still queued there (a kernel reading
 * a result that was just freed) runs before the new owner's work: the
 * stream orders them, no synchronisation is needed (PyTorch's rule). When
 * cuMemAlloc fails, every cached block is released and the call retried,
 * except blocks of held streams: a CUDA graph's capture stream is held
 * while the graph lives, since its recorded kernels keep using the
 * scratch blocks freed on that stream during the capture.
 *
 * Book-keeping: live blocks in an open-addressing hash table keyed by the
 * device pointer; cached blocks in a list per class. One mutex guards all;
 * the caller has made the primary context current (cuda_ctx_enter). */
#include "cuda_rt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MIN_BLOCK 512u
#define N_CLASSES 512

typedef struct block {
  cu_deviceptr ptr;
  size_t size;      /* class size */
  cu_stream stream;
  struct block* next;
} block;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block* cached[N_CLASSES];     /* free blocks by class */
static block** live;                 /* hash table of blocks in use (NULL = empty) */
static size_t live_cap, live_n;
static size_t bytes_in_use, bytes_cached;
static cu_stream* held;              /* streams whose cached blocks are never released */
static size_t held_n, held_cap;

static bool is_held(cu_stream s) {
  for (size_t i = 0; i < held_n; i++)
    if (held[i] == s) return true;
  return false;
}

/* Class index and size of a request: classes below 4096 step by 512, then
 * 8 per power of two. */
static unsigned class_of(size_t bytes, size_t* size) {
  if (bytes <= 4096) {
    size_t c = (bytes + MIN_BLOCK - 1) / MIN_BLOCK;
    if (c == 0) c = 1;
    *size = c * MIN_BLOCK;
    return (unsigned)c; /* 1..8 */
  }
  unsigned lg = 63u - (unsigned)__builtin_clzll((unsigned long long)bytes); /* 2^lg <= bytes */
  size_t step = (size_t)1 << (lg - 3);
  size_t s = (bytes + step - 1) / step * step;
  if (s >> lg == 2) {
    lg++;
    step <<= 1;
  }
  *size = s;
  unsigned idx = 8 + (lg - 12) * 8 + (unsigned)((s >> (lg - 3)) & 7);
  return idx < N_CLASSES ? idx : N_CLASSES - 1;
}

static size_t slot_of(cu_deviceptr p, size_t cap) {
  uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 20) & (cap - 1);
}

static bool live_grow(void) {
  size_t cap = live_cap ? live_cap * 2 : 256;
  block** t = calloc(cap, sizeof *t);
  if (!t) return false;
  for (size_t i = 0; i < live_cap; i++) {
    if (!live[i]) continue;
    size_t j = slot_of(live[i]->ptr, cap);
    while (t[j]) j = (j + 1) & (cap - 1);
    t[j] = live[i];
  }
  free(live);
  live = t;
  live_cap = cap;
  return true;
}

static bool live_put(block* b) {
  if ((live_n + 1) * 2 > live_cap && !live_grow()) return false;
  size_t j = slot_of(b->ptr, live_cap);
  while (live[j]) j = (j + 1) & (live_cap - 1);
  live[j] = b;
  live_n++;
  return true;
}

/* Removes and returns the live block of p (NULL if unknown). Backward-shift
 * deletion keeps probe chains intact. */
static block* live_take(cu_deviceptr p) {
  if (!live_cap) return NULL;
  size_t j = slot_of(p, live_cap);
  while (live[j] && live[j]->ptr != p) j = (j + 1) & (live_cap - 1);
  block* b = live[j];
  if (!b) return NULL;
  live[j] = NULL;
  live_n--;
  for (size_t k = (j + 1) & (live_cap - 1); live[k]; k = (k + 1) & (live_cap - 1)) {
    block* m = live[k];
    live[k] = NULL;
    size_t h = slot_of(m->ptr, live_cap);
    while (live[h]) h = (h + 1) & (live_cap - 1);
    live[h] = m;
  }
  return b;
}

static block* take_cached(unsigned cls, cu_stream s) {
  for (block** pp = &cached[cls]; *pp; pp = &(*pp)->next)
    if ((*pp)->stream == s) {
      block* b = *pp;
      *pp = b->next;
      bytes_cached -= b->size;
      return b;
    }
  return NULL;
}

/* Releases the cached blocks of stream `only` (with all = false), or of
 * every stream that is not held (all = true). */
static size_t release_locked(bool all, cu_stream only) {
  const cu_api* cu = &cuda_libs_get()->cu;
  size_t n = 0;
  for (unsigned c = 0; c < N_CLASSES; c++)
    for (block** pp = &cached[c]; *pp;) {
      block* b = *pp;
      if (all ? is_held(b->stream) : b->stream != only) {
        pp = &b->next;
        continue;
      }
      *pp = b->next;
      cu->MemFree(b->ptr);
      n += b->size;
      bytes_cached -= b->size;
      free(b);
    }
  return n;
}

static size_t empty_locked(void) { return release_locked(true, NULL); }

ptc_status cuda_alloc(size_t bytes, cu_stream stream, cu_deviceptr* out) {
  *out = 0;
  if (bytes == 0) return PTC_OK;
  size_t size;
  unsigned cls = class_of(bytes, &size);
  const cu_api* cu = &cuda_libs_get()->cu;
  pthread_mutex_lock(&lock);
  block* b = take_cached(cls, stream);
  cu_result r = CU_SUCCESS;
  if (!b) {
    b = calloc(1, sizeof *b);
    if (b) {
      r = cu->MemAlloc(&b->ptr, size);
      if (r == CU_ERROR_OUT_OF_MEMORY && empty_locked() > 0) r = cu->MemAlloc(&b->ptr, size);
      b->size = size;
    }
  }
  if (b && r == CU_SUCCESS) {
    b->stream = stream;
    if (live_put(b)) {
      bytes_in_use += b->size;
      *out = b->ptr;
      pthread_mutex_unlock(&lock);
      return PTC_OK;
    }
    cu->MemFree(b->ptr);
  }
  pthread_mutex_unlock(&lock);
  free(b);
  if (r != CU_SUCCESS) return cuda_error(r, "cuMemAlloc");
  return ptc_status_oom();
}

void cuda_free(cu_deviceptr p) {
  if (!p) return;
  pthread_mutex_lock(&lock);
  block* b = live_take(p);
  if (b) {
    size_t size;
    unsigned cls = class_of(b->size, &size);
    b->next = cached[cls];
    cached[cls] = b;
    bytes_in_use -= b->size;
    bytes_cached += b->size;
  }
  pthread_mutex_unlock(&lock);
}

ptc_status cuda_alloc_hold_stream(cu_stream s, bool hold) {
  pthread_mutex_lock(&lock);
  ptc_status st = PTC_OK;
  if (hold && !is_held(s)) {
    if (held_n == held_cap) {
      size_t cap = held_cap ? held_cap * 2 : 8;
      cu_stream* t = realloc(held, cap * sizeof *t);
      if (t) {
        held = t;
        held_cap = cap;
      }
    }
    if (held_n < held_cap)
      held[held_n++] = s;
    else
      st = ptc_status_oom();
  } else if (!hold) {
    for (size_t i = 0; i < held_n; i++)
      if (held[i] == s) held[i--] = held[--held_n];
    release_locked(false, s);
  }
  pthread_mutex_unlock(&lock);
  return st;
}

size_t cuda_alloc_empty_cache(void) {
  pthread_mutex_lock(&lock);
  size_t n = empty_locked();
  pthread_mutex_unlock(&lock);
  return n;
}

void cuda_alloc_stats(size_t* in_use, size_t* cached_bytes) {
  pthread_mutex_lock(&lock);
  if (in_use) *in_use = bytes_in_use;
  if (cached_bytes) *cached_bytes = bytes_cached;
  pthread_mutex_unlock(&lock);
}
