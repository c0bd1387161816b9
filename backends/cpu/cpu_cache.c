/* cpu_cache.c - the CPU backend's on-disk kernel cache: where the cache
 * lives (PTC_CACHE_DIR, $XDG_CACHE_HOME/ptc, ~/.cache/ptc; PTC_CACHE=0 for a
 * private temporary folder), cache keys (sha256 over the source, compiler
 * identity, flags, codegen version and kernel ABI), entry paths and atomic
 * writes (unique temp file + rename, so concurrent processes are safe). */
#include "cpu_rt.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRIVATE_PREFIX "ptc-nocache-"

static bool cache_disabled(void) {
  const char* v = getenv("PTC_CACHE");
  return v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0);
}

/* The cache root (without the "/cpu" folder) into out[cap]. */
static bool cache_root(char* out, size_t cap) {
  const char* dir = getenv("PTC_CACHE_DIR");
  if (dir && *dir) return (size_t)snprintf(out, cap, "%s", dir) < cap;
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (size_t)snprintf(out, cap, "%s/ptc", xdg) < cap;
  const char* home = getenv("HOME");
  if (home && *home) return (size_t)snprintf(out, cap, "%s/.cache/ptc", home) < cap;
  return (size_t)snprintf(out, cap, "/tmp/ptc-cache-%ld", (long)getuid()) < cap;
}

const char* cpu_cache_dir(void) {
  static _Thread_local char buf[512];
  if (cache_disabled() || !cache_root(buf, sizeof buf)) buf[0] = 0;
  return buf;
}

/* mkdir -p with mode 0700 for the folders it creates. */
static ptc_status make_dirs(const char* path) {
  char tmp[512];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s", path) >= sizeof tmp)
    return PTC_ERR(INVALID_ARGUMENT, "cpu backend: cache path too long: %s", path);
  for (char* p = tmp + 1;; p++) {
    bool end = *p == 0;
    if (*p == '/' || end) {
      *p = 0;
      if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return PTC_ERR(PERMISSION_DENIED, "cpu backend: cannot create cache folder %s: %s", tmp,
                       strerror(errno));
      if (end) break;
      *p = '/';
    }
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return PTC_ERR(PERMISSION_DENIED, "cpu backend: cache folder %s is not a folder", path);
  return PTC_OK;
}

static ptc_status open_private(cpu_cache_loc* loc) {
  const char* t = getenv("TMPDIR");
  if (!t || !*t) t = "/tmp";
  if ((size_t)snprintf(loc->dir, sizeof loc->dir, "%s/" PRIVATE_PREFIX "XXXXXX", t) >=
      sizeof loc->dir)
    return PTC_ERR(INVALID_ARGUMENT, "cpu backend: TMPDIR too long");
  if (!mkdtemp(loc->dir))
    return PTC_ERR(PERMISSION_DENIED, "cpu backend: cannot create a temporary folder in %s: %s",
                   t, strerror(errno));
  loc->private_dir = true;
  return PTC_OK;
}

ptc_status cpu_cache_open(cpu_cache_loc* loc) {
  memset(loc, 0, sizeof *loc);
  if (cache_disabled()) return open_private(loc);
  char root[448];
  if (!cache_root(root, sizeof root))
    return PTC_ERR(INVALID_ARGUMENT, "cpu backend: cache folder path too long");
  snprintf(loc->dir, sizeof loc->dir, "%s/cpu", root);
  return make_dirs(loc->dir);
}

ptc_status cpu_cache_key(const char* source, const char* ident, char key[65]) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  ptc_sb_printf(&sb, "ptc-cpu-kernel\n%s\n", ident);
  for (const char* const* f = cpu_cc_flags; *f; f++) ptc_sb_printf(&sb, "%s ", *f);
  ptc_sb_printf(&sb, "\n%s\nabi %d\n", PTC_CPU_CODEGEN_VERSION, PTC_CPU_KERNEL_ABI);
  ptc_sb_append(&sb, source);
  if (sb.oom) {
    ptc_sb_free(&sb);
    return ptc_status_oom();
  }
  ptc_sha256_hex(sb.data, sb.len, key);
  ptc_sb_free(&sb);
  return PTC_OK;
}

bool cpu_cache_path(const cpu_cache_loc* loc, const char* key, const char* suffix, char* out,
                    size_t cap) {
  return (size_t)snprintf(out, cap, "%s/%s%s", loc->dir, key, suffix) < cap;
}

bool cpu_cache_temp_name(const char* path, char* out, size_t cap) {
  static _Atomic unsigned long counter;
  unsigned long n = atomic_fetch_add(&counter, 1);
  return (size_t)snprintf(out, cap, "%s.tmp.%ld.%lu", path, (long)getpid(), n) < cap;
}

ptc_status cpu_cache_write_atomic(const char* path, const char* data, size_t len) {
  char tmp[600];
  if (!cpu_cache_temp_name(path, tmp, sizeof tmp))
    return PTC_ERR(INVALID_ARGUMENT, "cpu backend: path too long: %s", path);
  FILE* f = fopen(tmp, "wb");
  if (!f) return PTC_ERR(PERMISSION_DENIED, "cpu backend: cannot write %s: %s", tmp, strerror(errno));
  bool ok = fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) == 0) return PTC_OK;
  int e = errno;
  unlink(tmp);
  return PTC_ERR(PERMISSION_DENIED, "cpu backend: cannot write %s: %s", path, strerror(e));
}

void cpu_cache_release(const char* so_path) {
  const char* slash = strrchr(so_path, '/');
  if (!slash) return;
  char dir[512];
  size_t n = (size_t)(slash - so_path);
  if (n >= sizeof dir) return;
  memcpy(dir, so_path, n);
  dir[n] = 0;
  const char* base = strrchr(dir, '/');
  if (!base || strncmp(base + 1, PRIVATE_PREFIX, strlen(PRIVATE_PREFIX)) != 0) return;
  char src[600];
  size_t len = strlen(so_path);
  unlink(so_path);
  if (len > 3 && len < sizeof src && strcmp(so_path + len - 3, ".so") == 0) {
    memcpy(src, so_path, len - 3);
    memcpy(src + len - 3, ".c", 3);
    unlink(src);
  }
  rmdir(dir); /* succeeds once the last kernel of the batch is released */
}
