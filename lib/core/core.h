/* core.h - internal core services shared by every layer: status creation,
 * context allocation and logging, arenas, growable strings and arrays,
 * hashing, half-precision conversion, dtype properties. Not public API. */
#ifndef PTC_LIB_CORE_H
#define PTC_LIB_CORE_H

#include <ptc/ptc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define PTC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PTC_PRINTF(a, b)
#endif

/* ---- status ------------------------------------------------------------- */
/** New status with a printf-formatted message. Never returns NULL: on
 * allocation failure it returns the static out-of-memory status. */
ptc_status ptc_status_new(int32_t code, const char* fmt, ...) PTC_PRINTF(2, 3);
ptc_status ptc_status_newv(int32_t code, const char* fmt, va_list ap);
/** The static RESOURCE_EXHAUSTED status (destroy is a no-op). */
ptc_status ptc_status_oom(void);
/** Attaches a copy of `text` under `key` (e.g. "compiler_log"); returns `s`
 * (unchanged if s is NULL or allocation fails). */
ptc_status ptc_status_add_detail(ptc_status s, const char* key, const char* text);
/** Returns a new status "prefix: <old message>" with the old code and
 * details, destroying `s`. NULL stays NULL. */
ptc_status ptc_status_prefix(ptc_status s, const char* fmt, ...) PTC_PRINTF(2, 3);

#define PTC_TRY(expr)                  \
  do {                                 \
    ptc_status ptc_try_s_ = (expr);    \
    if (ptc_try_s_) return ptc_try_s_; \
  } while (0)

#define PTC_ERR(code, ...) ptc_status_new(PTC_CODE_##code, __VA_ARGS__)

/* ---- context ------------------------------------------------------------ */
/** An object hung on a context by a higher layer and destroyed with it (the
 * core layer only calls `destroy`). */
typedef struct ptc_ctx_ext {
  void (*destroy)(struct ptc_ctx_ext* self);
} ptc_ctx_ext;

struct ptc_context {
  _Atomic long refs;
  ptc_allocator alloc;
  ptc_log_fn log_fn;
  void* log_user;
  int32_t log_level;
  /** Ops registered on this context (ptc_register_extern_op; the table is
   * lib/graph/op_lookup.c's): NULL until the first registration, set once
   * with a compare-and-swap, destroyed when the context is. */
  ptc_ctx_ext* _Atomic ext_ops;
};
/** Allocation through the context's hook (16-byte aligned); NULL on failure.
 * `ctx` may be NULL (system allocator). ptc_cfree needs the same size. */
void* ptc_calloc_ctx(ptc_context* ctx, size_t size); /* zeroed */
void* ptc_alloc_ctx(ptc_context* ctx, size_t size, size_t align);
void ptc_free_ctx(ptc_context* ctx, void* p, size_t size, size_t align);
/** Log through the context's hook (no-op when filtered out or ctx NULL). */
void ptc_log(ptc_context* ctx, int32_t level, const char* fmt, ...) PTC_PRINTF(3, 4);

/* ---- arena: bump allocator, freed all at once --------------------------- */
typedef struct ptc_arena_block ptc_arena_block;
typedef struct ptc_arena {
  ptc_arena_block* head;
  size_t block_size;
} ptc_arena;
void ptc_arena_init(ptc_arena* a, size_t block_size); /* 0 = 64 KiB */
/** Zeroed, 16-byte aligned memory or NULL. */
void* ptc_arena_alloc(ptc_arena* a, size_t size);
char* ptc_arena_strdup(ptc_arena* a, const char* s);
void* ptc_arena_memdup(ptc_arena* a, const void* p, size_t size);
void ptc_arena_free(ptc_arena* a);

/* ---- growable string buffer ------------------------------------------------ */
typedef struct ptc_strbuf {
  char* data; /* NUL-terminated when len > 0 or after any append */
  size_t len, cap;
  bool oom;   /* sticky: an append failed */
} ptc_strbuf;
void ptc_sb_init(ptc_strbuf* sb);
void ptc_sb_append(ptc_strbuf* sb, const char* s);
void ptc_sb_appendn(ptc_strbuf* sb, const char* s, size_t n);
void ptc_sb_printf(ptc_strbuf* sb, const char* fmt, ...) PTC_PRINTF(2, 3);
void ptc_sb_free(ptc_strbuf* sb);
/** Returns data (caller frees with free()) and resets sb; NULL if oom. */
char* ptc_sb_take(ptc_strbuf* sb);
/** Two-call buffer convention: copies `s` into buf/cap (NUL-terminated,
 * truncated) and returns strlen(s). */
size_t ptc_copy_out(const char* s, char* buf, size_t cap);

/* ---- growable array of fixed-size items ---------------------------------- */
typedef struct ptc_vec {
  void* data;
  size_t len, cap, item;
} ptc_vec;
void ptc_vec_init(ptc_vec* v, size_t item_size);
/** Appends one item (copied from `x`, or zeroed if NULL); returns pointer to it or NULL on OOM. */
void* ptc_vec_push(ptc_vec* v, const void* x);
bool ptc_vec_reserve(ptc_vec* v, size_t n);
void ptc_vec_free(ptc_vec* v);
#define PTC_VEC_AT(v, T, i) (((T*)(v)->data)[i])

/* ---- hashing --------------------------------------------------------------- */
uint64_t ptc_hash_bytes(const void* p, size_t n, uint64_t seed); /* FNV-1a 64 + mix */
uint64_t ptc_hash_mix(uint64_t a, uint64_t b);
/** SHA-256 of p[0..n) as 64 lowercase hex chars + NUL into out[65]. */
void ptc_sha256_hex(const void* p, size_t n, char out[65]);

/* ---- safe integer arithmetic ------------------------------------------------ */
/** Return false on signed 64-bit overflow. */
bool ptc_mul_ok(int64_t a, int64_t b, int64_t* out);
bool ptc_add_ok(int64_t a, int64_t b, int64_t* out);

/* ---- dtypes ------------------------------------------------------------------ */
bool ptc_dtype_valid(int32_t dt);
bool ptc_dtype_is_float(int32_t dt);   /* f16 bf16 f32 f64 */
bool ptc_dtype_is_int(int32_t dt);     /* i8..i64, u8 (not bool) */
bool ptc_dtype_is_signed(int32_t dt);
/** Category for type promotion: 0 bool, 1 integer, 2 floating. */
int ptc_dtype_category(int32_t dt);
/** ATen promote_types for two dtypes (e.g. u8+i8 -> i16, f16+bf16 -> f32). */
int32_t ptc_promote_types(int32_t a, int32_t b);

/* ---- half precision --------------------------------------------------------- */
float ptc_f16_to_f32(uint16_t h);
uint16_t ptc_f32_to_f16(float f); /* round to nearest even, inf/nan kept */
float ptc_bf16_to_f32(uint16_t h);
uint16_t ptc_f32_to_bf16(float f); /* round to nearest even, nan kept */

/* ---- base64 (for inline JSON weights) ---------------------------------------- */
/** Encodes into a malloc'ed NUL-terminated string (NULL on OOM). */
char* ptc_base64_encode(const void* p, size_t n);
/** Decodes; returns false on bad input. *out is malloc'ed (caller frees). */
bool ptc_base64_decode(const char* s, size_t len, void** out, size_t* out_len);

#endif /* PTC_LIB_CORE_H */
