/* cuda_conv_wcache.c - a plan's table of kept convolution weight copies
 * (see cuda_conv_wcache.h): one slot per IR node, a mutex around lookups
 * and the one publication per slot. */
#include "cuda_conv_wcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct wslot {
  cuda_wcache_key key;
  cu_deviceptr copy; /* 0: empty */
} wslot;

struct cuda_wcache {
  pthread_mutex_t lock;
  size_t n;
  wslot* slots;
};

ptc_status cuda_wcache_create(size_t n, cuda_wcache** out) {
  *out = NULL;
  if (n == 0) return PTC_OK;
  cuda_wcache* t = calloc(1, sizeof *t);
  if (t) t->slots = calloc(n, sizeof *t->slots);
  if (!t || !t->slots) {
    free(t);
    return ptc_status_oom();
  }
  pthread_mutex_init(&t->lock, NULL);
  t->n = n;
  *out = t;
  return PTC_OK;
}

void cuda_wcache_destroy(cuda_wcache* t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) cuda_free(t->slots[i].copy);
  pthread_mutex_destroy(&t->lock);
  free(t->slots);
  free(t);
}

static bool same_key(const cuda_wcache_key* a, const cuda_wcache_key* b) {
  return a->src == b->src && !memcmp(a->layout, b->layout, sizeof a->layout);
}

cu_deviceptr cuda_wcache_find(cuda_wcache* t, int64_t slot, const cuda_wcache_key* key) {
  if (!t || slot < 0 || (size_t)slot >= t->n) return 0;
  pthread_mutex_lock(&t->lock);
  const wslot* w = &t->slots[slot];
  cu_deviceptr r = w->copy && same_key(&w->key, key) ? w->copy : 0;
  pthread_mutex_unlock(&t->lock);
  return r;
}

bool cuda_wcache_offer(cuda_wcache* t, int64_t slot, const cuda_wcache_key* key, cu_stream stream,
                       cu_deviceptr copy) {
  if (!t || slot < 0 || (size_t)slot >= t->n || !copy) return false;
  const cu_api* cu = &cuda_libs_get()->cu;
  pthread_mutex_lock(&t->lock);
  bool empty = t->slots[slot].copy == 0;
  pthread_mutex_unlock(&t->lock);
  if (!empty) return false;
  /* a copy made while a CUDA graph is captured exists only in the graph */
  int capturing = 0;
  if (cu->StreamIsCapturing && cu->StreamIsCapturing(stream, &capturing) != CU_SUCCESS) return false;
  if (capturing) return false;
  /* other streams read the kept copy without ordering against this one */
  if (cu->StreamSynchronize(stream) != CU_SUCCESS) return false;
  pthread_mutex_lock(&t->lock);
  bool kept = t->slots[slot].copy == 0;
  if (kept) {
    t->slots[slot].key = *key;
    t->slots[slot].copy = copy;
  }
  pthread_mutex_unlock(&t->lock);
  return kept;
}
