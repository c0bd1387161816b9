/* context.c - ptc_context: reference-counted holder of the allocator and log
 * hooks; allocation and logging helpers that go through them. */
#include "core.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* sys_alloc(void* user, size_t size, size_t align) {
  (void)user;
  if (align < sizeof(void*)) align = sizeof(void*);
  size = (size + align - 1) / align * align;
  return aligned_alloc(align, size ? size : align);
}
static void sys_free(void* user, void* p, size_t size, size_t align) {
  (void)user;
  (void)size;
  (void)align;
  free(p);
}

void ptc_context_options_init(ptc_context_options* opts) {
  if (!opts) return;
  memset(opts, 0, sizeof *opts);
  opts->struct_size = sizeof *opts;
  opts->allocator.struct_size = sizeof opts->allocator;
  opts->log_level = PTC_LOG_WARN;
}

ptc_status ptc_context_create(const ptc_context_options* opts, ptc_context** out) {
  if (!out) return PTC_ERR(INVALID_ARGUMENT, "ptc_context_create: out is NULL");
  ptc_context_options o;
  ptc_context_options_init(&o);
  if (opts) {
    if (opts->struct_size < offsetof(ptc_context_options, reserved0))
      return PTC_ERR(INVALID_ARGUMENT,
                     "ptc_context_create: options struct_size %zu is smaller than the "
                     "1.0 minimum %zu (call ptc_context_options_init)",
                     opts->struct_size, offsetof(ptc_context_options, reserved0));
    size_t n = opts->struct_size < sizeof o ? opts->struct_size : sizeof o;
    memcpy(&o, opts, n);
    o.struct_size = sizeof o;
  }
  if ((o.allocator.alloc == NULL) != (o.allocator.free == NULL))
    return PTC_ERR(INVALID_ARGUMENT,
                   "ptc_context_create: allocator needs both alloc and free (or neither)");
  if (o.log_level < PTC_LOG_ERROR || o.log_level > PTC_LOG_DEBUG)
    return PTC_ERR(INVALID_ARGUMENT, "ptc_context_create: log_level %d is not 0..3",
                   (int)o.log_level);
  if (!o.allocator.alloc) {
    o.allocator.alloc = sys_alloc;
    o.allocator.free = sys_free;
    o.allocator.user = NULL;
  }
  ptc_context* c = o.allocator.alloc(o.allocator.user, sizeof *c, 16);
  if (!c) return ptc_status_oom();
  memset(c, 0, sizeof *c);
  atomic_init(&c->refs, 1);
  atomic_init(&c->ext_ops, NULL);
  c->alloc = o.allocator;
  c->log_fn = o.log_fn;
  c->log_user = o.log_user;
  c->log_level = o.log_level;
  *out = c;
  return PTC_OK;
}

ptc_context* ptc_context_retain(ptc_context* ctx) {
  if (ctx) atomic_fetch_add(&ctx->refs, 1);
  return ctx;
}

void ptc_context_release(ptc_context* ctx) {
  if (!ctx) return;
  if (atomic_fetch_sub(&ctx->refs, 1) == 1) {
    ptc_ctx_ext* ext = atomic_load(&ctx->ext_ops);
    if (ext) ext->destroy(ext);
    ptc_allocator a = ctx->alloc;
    a.free(a.user, ctx, sizeof *ctx, 16);
  }
}

void* ptc_alloc_ctx(ptc_context* ctx, size_t size, size_t align) {
  if (!ctx) return sys_alloc(NULL, size, align);
  return ctx->alloc.alloc(ctx->alloc.user, size, align);
}

void* ptc_calloc_ctx(ptc_context* ctx, size_t size) {
  void* p = ptc_alloc_ctx(ctx, size, 16);
  if (p) memset(p, 0, size);
  return p;
}

void ptc_free_ctx(ptc_context* ctx, void* p, size_t size, size_t align) {
  if (!p) return;
  if (!ctx) {
    free(p);
    return;
  }
  ctx->alloc.free(ctx->alloc.user, p, size, align);
}

void ptc_log(ptc_context* ctx, int32_t level, const char* fmt, ...) {
  if (!ctx || !ctx->log_fn || level > ctx->log_level) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  ctx->log_fn(ctx->log_user, level, buf);
}
