/* cpu_cache.c - the CPU backend's view of the shared kernel cache
 * (lib/runtime/kcache.h: location, PTC_CACHE=0 private folders, atomic
 * writes): its folder <root>/cpu and its cache keys (sha256 over the
 * source, compiler identity, flags, codegen version and kernel ABI). */
#include "../../lib/runtime/kcache.h"
#include "cpu_rt.h"

#include <stdio.h>
#include <string.h>

const char* cpu_cache_dir(void) { return kcache_root(); }

ptc_status cpu_cache_open(cpu_cache_loc* loc) {
  kcache_loc k;
  ptc_status s = kcache_open("cpu", &k);
  memset(loc, 0, sizeof *loc);
  snprintf(loc->dir, sizeof loc->dir, "%s", k.dir);
  loc->private_dir = k.private_dir;
  return s;
}

ptc_status cpu_cache_key(const char* source, const char* ident, char key[65]) {
  ptc_strbuf flags;
  ptc_sb_init(&flags);
  for (const char* const* f = cpu_cc_flags; *f; f++) ptc_sb_printf(&flags, "%s ", *f);
  char abi[32];
  snprintf(abi, sizeof abi, "abi %d", PTC_CPU_KERNEL_ABI);
  const char* parts[] = {"ptc-cpu-kernel", ident, flags.data ? flags.data : "",
                         PTC_CPU_CODEGEN_VERSION, abi, source};
  ptc_status s = flags.oom ? ptc_status_oom() : kcache_key(parts, sizeof parts / sizeof parts[0], key);
  ptc_sb_free(&flags);
  return s;
}

bool cpu_cache_path(const cpu_cache_loc* loc, const char* key, const char* suffix, char* out,
                    size_t cap) {
  return (size_t)snprintf(out, cap, "%s/%s%s", loc->dir, key, suffix) < cap;
}

bool cpu_cache_temp_name(const char* path, char* out, size_t cap) {
  return kcache_temp_name(path, out, cap);
}

ptc_status cpu_cache_write_atomic(const char* path, const char* data, size_t len) {
  return kcache_write_atomic(path, data, len);
}

void cpu_cache_release(const char* so_path) {
  static const char* const siblings[] = {".c", NULL};
  kcache_release(so_path, siblings);
}
