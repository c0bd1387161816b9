/* ptc_core.h - libptc core: export macro, versions, status objects, dtypes,
 * contexts with per-context allocator and log hooks.
 *
 * Conventions (apply to every public header):
 *  - Every fallible call returns a ptc_status; NULL (PTC_OK) means success.
 *    The caller owns a non-NULL status and frees it with ptc_status_destroy().
 *  - Out-parameters are written only on success.
 *  - Option structs start with `struct_size` and are filled by their
 *    ptc_*_init() function; fields are only ever appended.
 *  - The library never aborts on bad input or resource exhaustion.
 */
#ifndef PTC_CORE_H
#define PTC_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- export macro ------------------------------------------------------ */
#if defined(_WIN32)
#  if defined(PTC_STATIC)
#    define PTC_API
#  elif defined(PTC_BUILDING)
#    define PTC_API __declspec(dllexport)
#  else
#    define PTC_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define PTC_API __attribute__((visibility("default")))
#else
#  define PTC_API
#endif

#if defined(__GNUC__)
#  define PTC_MUST_USE __attribute__((warn_unused_result))
#else
#  define PTC_MUST_USE
#endif

/* ---- versions ----------------------------------------------------------- */
#define PTC_VERSION_MAJOR 0
#define PTC_VERSION_MINOR 1
#define PTC_VERSION_PATCH 0
/** major*10000 + minor*100 + patch */
#define PTC_VERSION_NUMBER \
  (PTC_VERSION_MAJOR * 10000 + PTC_VERSION_MINOR * 100 + PTC_VERSION_PATCH)
#define PTC_VERSION_STRING "0.1.0"

/** Version of the library actually loaded (compare with PTC_VERSION_NUMBER at
 * startup to detect a header/library mismatch). Never fails; thread-safe. */
PTC_API uint32_t ptc_version_number(void);
/** Same as a static string owned by the library ("0.1.0"). Thread-safe. */
PTC_API const char* ptc_version_string(void);

/* ---- status objects ----------------------------------------------------- */
/** Status codes; numbered as the absl canonical codes. */
typedef enum ptc_code {
  PTC_CODE_OK = 0,
  PTC_CODE_CANCELLED = 1,
  PTC_CODE_UNKNOWN = 2,
  PTC_CODE_INVALID_ARGUMENT = 3,
  PTC_CODE_DEADLINE_EXCEEDED = 4,
  PTC_CODE_NOT_FOUND = 5,
  PTC_CODE_ALREADY_EXISTS = 6,
  PTC_CODE_PERMISSION_DENIED = 7,
  PTC_CODE_RESOURCE_EXHAUSTED = 8,
  PTC_CODE_FAILED_PRECONDITION = 9,
  PTC_CODE_ABORTED = 10,
  PTC_CODE_OUT_OF_RANGE = 11,
  PTC_CODE_UNIMPLEMENTED = 12,
  PTC_CODE_INTERNAL = 13,
  PTC_CODE_UNAVAILABLE = 14,
  PTC_CODE_DATA_LOSS = 15,
  PTC_CODE_UNAUTHENTICATED = 16
} ptc_code;

/** Opaque error object. NULL means success. */
typedef struct ptc_status_s* ptc_status;
#define PTC_OK ((ptc_status)0)

/** Code of `s` (PTC_CODE_OK for NULL). Thread-safe for distinct or
 * unmodified statuses. */
PTC_API int32_t ptc_status_code(ptc_status s);
/** UTF-8 message of `s`, owned by `s` and valid until it is destroyed;
 * "" for NULL. */
PTC_API const char* ptc_status_message(ptc_status s);
/** Optional large payload of `s` (e.g. a compiler log, "compiler_log") or
 * NULL when the status has no detail of that key. Owned by `s`. Pass NULL as
 * key for the first detail of any key. */
PTC_API const char* ptc_status_detail(ptc_status s, const char* key);
/** Frees `s`; accepts NULL. The preallocated out-of-memory status is never
 * freed (destroying it is a no-op). */
PTC_API void ptc_status_destroy(ptc_status s);
/** Static name of a code ("INVALID_ARGUMENT"); "UNKNOWN_CODE" if out of range. */
PTC_API const char* ptc_code_name(int32_t code);

/* ---- dtypes --------------------------------------------------------------- */
/** Element types. Stored in structs as int32_t. */
typedef enum ptc_dtype {
  PTC_F32 = 0,
  PTC_F64 = 1,
  PTC_F16 = 2,
  PTC_BF16 = 3,
  PTC_I8 = 4,
  PTC_I16 = 5,
  PTC_I32 = 6,
  PTC_I64 = 7,
  PTC_U8 = 8,
  PTC_BOOL = 9,
  PTC_DTYPE_COUNT = 10
} ptc_dtype;

/** Short name ("f32", "bf16", "bool"); NULL for an invalid dtype. Thread-safe. */
PTC_API const char* ptc_dtype_name(int32_t dtype);
/** Parses a short name ("f32") or a torch name ("float32", "torch.float32",
 * "half", "long", ...). Returns the dtype, or -1 if unknown. Thread-safe. */
PTC_API int32_t ptc_dtype_from_name(const char* name);
/** Size of one element in bytes; 0 for an invalid dtype. Thread-safe. */
PTC_API size_t ptc_dtype_size(int32_t dtype);

/* ---- context ------------------------------------------------------------- */
/** Allocator hook. `alloc` returns memory aligned to `align` (a power of two)
 * or NULL; `free` receives the same size and alignment. Must be thread-safe
 * if the context is used from several threads. */
typedef struct ptc_allocator {
  size_t struct_size;
  void* user;
  void* (*alloc)(void* user, size_t size, size_t align);
  void (*free)(void* user, void* ptr, size_t size, size_t align);
} ptc_allocator;

/** Log levels. */
enum {
  PTC_LOG_ERROR = 0,
  PTC_LOG_WARN = 1,
  PTC_LOG_INFO = 2,
  PTC_LOG_DEBUG = 3
};
/** Log hook: called with a NUL-terminated line (no trailing newline). May be
 * called from any thread that uses the context. */
typedef void (*ptc_log_fn)(void* user, int32_t level, const char* message);

/** Options for ptc_context_create. Initialise with ptc_context_options_init. */
typedef struct ptc_context_options {
  size_t struct_size;
  /** Allocator; a NULL `alloc` means the C library's aligned allocation. */
  ptc_allocator allocator;
  /** Log hook; NULL means silent. */
  ptc_log_fn log_fn;
  void* log_user;
  /** Messages with level <= log_level are delivered. Default PTC_LOG_WARN. */
  int32_t log_level;
  int32_t reserved0;
} ptc_context_options;

/** A context: allocator, log hook, and (later) backend state. Reference
 * counted; thread-safe (retain/release and all uses are safe from any thread). */
typedef struct ptc_context ptc_context;

/** Fills `opts` with defaults (system allocator, no log hook). Never fails. */
PTC_API void ptc_context_options_init(ptc_context_options* opts);
/** Creates a context with a reference count of 1. `opts` may be NULL for
 * defaults. Errors: INVALID_ARGUMENT (NULL `out`, struct_size too small, an
 * allocator with only one of alloc/free), RESOURCE_EXHAUSTED.
 * The caller owns `*out` and releases it with ptc_context_release(). */
PTC_API PTC_MUST_USE ptc_status ptc_context_create(const ptc_context_options* opts,
                                                   ptc_context** out);
/** Adds a reference; returns `ctx`. Accepts NULL. Thread-safe. */
PTC_API ptc_context* ptc_context_retain(ptc_context* ctx);
/** Drops a reference; the last one frees the context. Accepts NULL. Thread-safe. */
PTC_API void ptc_context_release(ptc_context* ctx);

#ifdef __cplusplus
}
#endif
#endif /* PTC_CORE_H */
