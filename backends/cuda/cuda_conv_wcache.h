/* cuda_conv_wcache.h - the copied weights of convolutions whose weights are
 * plan constants, kept across runs (internal). The implicit-GEMM
 * convolution copies its weights into the layout its kernel reads (tap-major
 * rows padded to the K step, f32 rounded to TF32) on every call; when the
 * weight tensor is a constant of the plan (immutable device storage), the
 * first run's copy is kept in a slot of the plan's table and later runs
 * read it instead (resnet18 b32: 12 weight copies a call). */
#ifndef PTC_BACKENDS_CUDA_CONV_WCACHE_H
#define PTC_BACKENDS_CUDA_CONV_WCACHE_H

#include "cuda_rt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** A plan's table: one slot per IR node. Opaque; thread-safe. */
typedef struct cuda_wcache cuda_wcache;

/** What a kept copy was made from and for: the source weights' device
 * address and the copy's layout (kernel-specific numbers). */
typedef struct cuda_wcache_key {
  cu_deviceptr src;
  int64_t layout[4];
} cuda_wcache_key;

/** A new table of n empty slots (*out; n 0: NULL, nothing to do).
 * Errors: out of memory. */
ptc_status cuda_wcache_create(size_t n, cuda_wcache** out);

/** Frees every kept copy (cuda_free: the plan's context current) and the
 * table. NULL is a no-op. Not concurrent with other calls on t. */
void cuda_wcache_destroy(cuda_wcache* t);

/** The kept copy of slot `slot` made for exactly `key`, or 0 (none yet, a
 * different key, t NULL or slot out of range). Thread-safe. */
cu_deviceptr cuda_wcache_find(cuda_wcache* t, int64_t slot, const cuda_wcache_key* key);

/** Offers `copy` (cuda_alloc'ed, filled on `stream` by the caller) for slot
 * `slot` under `key`. When the slot is empty and `stream` is not capturing a
 * CUDA graph, waits for `stream` (the copy complete before any other
 * stream can read it), keeps the copy (the table owns it now) and returns
 * true; otherwise returns false and the caller still owns it (frees it
 * after its own use). Thread-safe. */
bool cuda_wcache_offer(cuda_wcache* t, int64_t slot, const cuda_wcache_key* key, cu_stream stream,
                       cu_deviceptr copy);

#endif /* PTC_BACKENDS_CUDA_CONV_WCACHE_H */
