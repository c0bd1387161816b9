/* kcache.h - the on-disk cache of compiled kernels shared by the compiling
 * backends (internal): where it lives, how keys are made, atomic writes.
 *
 *  - Root: $PTC_CACHE_DIR, else $XDG_CACHE_HOME/ptc, else ~/.cache/ptc, else
 *    /tmp/ptc-cache-<uid>; each backend has its own folder <root>/<backend>
 *    (created 0700).
 *  - PTC_CACHE=0 (or off/false): nothing is reused; each batch compiles
 *    into a private temporary folder ($TMPDIR/ptc-nocache-XXXXXX) whose
 *    files are removed as their users release them (kcache_release).
 *  - Keys: sha256 (hex) over the parts a backend lists (source, compiler
 *    identity and version, flags, target, codegen version), each part
 *    followed by a separator so that part boundaries matter.
 *  - Writes go to a unique temporary file in the same folder and are
 *    renamed into place, so concurrent processes never see half an entry;
 *    an entry that cannot be read or loaded is deleted and rebuilt by its
 *    backend, never trusted.
 * Thread-safety: every function is thread-safe (no shared mutable state
 * except an atomic counter for temporary names).
 */
#ifndef PTC_LIB_RUNTIME_KCACHE_H
#define PTC_LIB_RUNTIME_KCACHE_H

#include "../core/core.h"

/** Where one batch of compilations goes. */
typedef struct kcache_loc {
  char dir[512];
  bool private_dir;  /* PTC_CACHE=0: a private temporary folder */
} kcache_loc;

/** True when PTC_CACHE disables reuse. */
bool kcache_disabled(void);
/** The cache root in use ("" when disabled); thread-local storage. */
const char* kcache_root(void);
/** Opens <root>/<backend> (created as needed) or a private temporary
 * folder. Errors: PERMISSION_DENIED / INVALID_ARGUMENT naming the folder
 * ("<backend> backend: cannot create cache folder ..."). */
ptc_status kcache_open(const char* backend, kcache_loc* loc);
/** sha256 hex of the `n` parts (each followed by a 0x1e separator). */
ptc_status kcache_key(const char* const* parts, size_t n, char key[65]);
/** "<dir>/<key><suffix>" into out[cap]; false if it does not fit. */
bool kcache_path(const kcache_loc* loc, const char* key, const char* suffix, char* out, size_t cap);
/** A unique temporary name beside `path` into out[cap]. */
bool kcache_temp_name(const char* path, char* out, size_t cap);
/** Writes `len` bytes to `path` atomically (temporary file + rename). */
ptc_status kcache_write_atomic(const char* path, const void* data, size_t len);
/** Reads a whole file (malloc'ed into *data, *len bytes). Errors:
 * NOT_FOUND when it does not exist, PERMISSION_DENIED when it cannot be
 * read, RESOURCE_EXHAUSTED. */
ptc_status kcache_read(const char* path, char** data, size_t* len);
/** Reads a small text record (a tuning choice): at most cap - 1 bytes of
 * `path` into out[cap], NUL-terminated (a longer file is cut there, so its
 * record's own end check fails). False when it cannot be read. */
bool kcache_read_text(const char* path, char* out, size_t cap);
/** For an entry in a private folder: removes `path` and its siblings with
 * the same stem and the given suffixes (NULL-terminated list), then the
 * folder once it is empty. No-op for shared cache entries. */
void kcache_release(const char* path, const char* const* sibling_suffixes);

#endif /* PTC_LIB_RUNTIME_KCACHE_H */
