/* kcache.c - the kernel cache folder, keys, atomic writes and reads shared
 * by the compiling backends (see kcache.h for the rules). */
#include "kcache.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PRIVATE_PREFIX "ptc-nocache-"

bool kcache_disabled(void) {
  const char* v = getenv("PTC_CACHE");
  return v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0 || strcmp(v, "false") == 0);
}

static bool root_of(char* out, size_t cap) {
  const char* dir = getenv("PTC_CACHE_DIR");
  if (dir && *dir) return (size_t)snprintf(out, cap, "%s", dir) < cap;
  const char* xdg = getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (size_t)snprintf(out, cap, "%s/ptc", xdg) < cap;
  const char* home = getenv("HOME");
  if (home && *home) return (size_t)snprintf(out, cap, "%s/.cache/ptc", home) < cap;
  return (size_t)snprintf(out, cap, "/tmp/ptc-cache-%ld", (long)getuid()) < cap;
}

const char* kcache_root(void) {
  static _Thread_local char buf[512];
  if (kcache_disabled() || !root_of(buf, sizeof buf)) buf[0] = 0;
  return buf;
}

/* mkdir -p with mode 0700 for the folders it creates. */
static ptc_status make_dirs(const char* backend, const char* path) {
  char tmp[512];
  if ((size_t)snprintf(tmp, sizeof tmp, "%s", path) >= sizeof tmp)
    return PTC_ERR(INVALID_ARGUMENT, "%s backend: cache path too long: %s", backend, path);
  for (char* p = tmp + 1;; p++) {
    bool end = *p == 0;
    if (*p == '/' || end) {
      *p = 0;
      if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return PTC_ERR(PERMISSION_DENIED, "%s backend: cannot create cache folder %s: %s",
                       backend, tmp, strerror(errno));
      if (end) break;
      *p = '/';
    }
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return PTC_ERR(PERMISSION_DENIED, "%s backend: cache folder %s is not a folder", backend, path);
  return PTC_OK;
}

static ptc_status open_private(const char* backend, kcache_loc* loc) {
  const char* t = getenv("TMPDIR");
  if (!t || !*t) t = "/tmp";
  if ((size_t)snprintf(loc->dir, sizeof loc->dir, "%s/" PRIVATE_PREFIX "XXXXXX", t) >=
      sizeof loc->dir)
    return PTC_ERR(INVALID_ARGUMENT, "%s backend: TMPDIR too long", backend);
  if (!mkdtemp(loc->dir))
    return PTC_ERR(PERMISSION_DENIED, "%s backend: cannot create a temporary folder in %s: %s",
                   backend, t, strerror(errno));
  loc->private_dir = true;
  return PTC_OK;
}

ptc_status kcache_open(const char* backend, kcache_loc* loc) {
  memset(loc, 0, sizeof *loc);
  if (kcache_disabled()) return open_private(backend, loc);
  char root[448];
  if (!root_of(root, sizeof root))
    return PTC_ERR(INVALID_ARGUMENT, "%s backend: cache folder path too long", backend);
  snprintf(loc->dir, sizeof loc->dir, "%s/%s", root, backend);
  return make_dirs(backend, loc->dir);
}

ptc_status kcache_key(const char* const* parts, size_t n, char key[65]) {
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  for (size_t i = 0; i < n; i++) {
    ptc_sb_append(&sb, parts[i] ? parts[i] : "");
    ptc_sb_append(&sb, "\x1e");
  }
  if (sb.oom) {
    ptc_sb_free(&sb);
    return ptc_status_oom();
  }
  ptc_sha256_hex(sb.data ? sb.data : "", sb.len, key);
  ptc_sb_free(&sb);
  return PTC_OK;
}

bool kcache_path(const kcache_loc* loc, const char* key, const char* suffix, char* out,
                 size_t cap) {
  return (size_t)snprintf(out, cap, "%s/%s%s", loc->dir, key, suffix) < cap;
}

bool kcache_temp_name(const char* path, char* out, size_t cap) {
  static _Atomic unsigned long counter;
  unsigned long n = atomic_fetch_add(&counter, 1);
  return (size_t)snprintf(out, cap, "%s.tmp.%ld.%lu", path, (long)getpid(), n) < cap;
}

ptc_status kcache_write_atomic(const char* path, const void* data, size_t len) {
  char tmp[600];
  if (!kcache_temp_name(path, tmp, sizeof tmp))
    return PTC_ERR(INVALID_ARGUMENT, "kernel cache: path too long: %s", path);
  FILE* f = fopen(tmp, "wb");
  if (!f) return PTC_ERR(PERMISSION_DENIED, "kernel cache: cannot write %s: %s", tmp, strerror(errno));
  bool ok = fwrite(data, 1, len, f) == len;
  ok = (fclose(f) == 0) && ok;
  if (ok && rename(tmp, path) == 0) return PTC_OK;
  int e = errno;
  unlink(tmp);
  return PTC_ERR(PERMISSION_DENIED, "kernel cache: cannot write %s: %s", path, strerror(e));
}

ptc_status kcache_read(const char* path, char** data, size_t* len) {
  *data = NULL;
  *len = 0;
  FILE* f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT) return PTC_ERR(NOT_FOUND, "kernel cache: %s does not exist", path);
    return PTC_ERR(PERMISSION_DENIED, "kernel cache: cannot read %s: %s", path, strerror(errno));
  }
  ptc_strbuf sb;
  ptc_sb_init(&sb);
  char buf[16384];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) ptc_sb_appendn(&sb, buf, n);
  bool err = ferror(f) != 0;
  fclose(f);
  if (sb.oom || err) {
    ptc_sb_free(&sb);
    return err ? PTC_ERR(PERMISSION_DENIED, "kernel cache: error reading %s", path)
               : ptc_status_oom();
  }
  *len = sb.len;
  *data = sb.data ? ptc_sb_take(&sb) : calloc(1, 1);
  return *data ? PTC_OK : ptc_status_oom();
}

bool kcache_read_text(const char* path, char* out, size_t cap) {
  char* data = NULL;
  size_t len = 0;
  ptc_status s = kcache_read(path, &data, &len);
  if (s) {
    ptc_status_destroy(s);
    return false;
  }
  size_t m = len < cap - 1 ? len : cap - 1;
  memcpy(out, data, m);
  out[m] = 0;
  free(data);
  return true;
}

void kcache_release(const char* path, const char* const* sibling_suffixes) {
  const char* slash = strrchr(path, '/');
  if (!slash) return;
  char dir[512];
  size_t n = (size_t)(slash - path);
  if (n >= sizeof dir) return;
  memcpy(dir, path, n);
  dir[n] = 0;
  const char* base = strrchr(dir, '/');
  if (!base || strncmp(base + 1, PRIVATE_PREFIX, strlen(PRIVATE_PREFIX)) != 0) return;
  unlink(path);
  const char* dot = strrchr(slash, '.');
  size_t stem = dot ? (size_t)(dot - path) : strlen(path);
  for (const char* const* s = sibling_suffixes; s && *s; s++) {
    char sib[600];
    if ((size_t)snprintf(sib, sizeof sib, "%.*s%s", (int)stem, path, *s) < sizeof sib) unlink(sib);
  }
  rmdir(dir); /* succeeds once the last entry of the batch is released */
}
