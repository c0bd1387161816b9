/* cuda_aot.c - the lookup of ahead-of-time cubins (cuda_aot.h) and the list
 * of module sources the table promises, gathered from the module files. */
#include "cuda_aot.h"

#include "../../lib/runtime/kcache.h"
#include "cuda_cg.h"
#include "cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ptc_status cuda_aot_key(const char* source, int arch, char key[65]) {
  char archs[32];
  cuda_arch_option(arch, archs, sizeof archs);
  ptc_strbuf flags;
  ptc_sb_init(&flags);
  for (const char* const* f = cuda_nvrtc_flags; *f; f++) ptc_sb_printf(&flags, "%s ", *f);
  const char* parts[] = {"ptc-cuda-aot", archs, flags.data ? flags.data : "",
                         PTC_CUDA_CODEGEN_VERSION, source};
  ptc_status s = flags.oom ? ptc_status_oom() : kcache_key(parts, sizeof parts / sizeof parts[0], key);
  ptc_sb_free(&flags);
  return s;
}

/* False when the driver is known to be older than the table's CUDA. */
static bool driver_ok(void) {
  const cuda_libs* L = cuda_libs_get();
  int v = 0;
  if (!L->have_cu || !L->cu.DriverGetVersion || L->cu.DriverGetVersion(&v) != CU_SUCCESS) return true;
  return v >= ptc_cuda_aot_cuda_version;
}

const cuda_aot_entry* cuda_aot_lookup(const char* source, int arch) {
  if (ptc_cuda_aot_count == 0 || !source) return NULL;
  const char* env = getenv("PTC_CUDA_AOT");
  if (env && strcmp(env, "0") == 0) return NULL;
  size_t len = strlen(source);
  bool some = false;
  for (size_t i = 0; i < ptc_cuda_aot_count && !some; i++)
    some = ptc_cuda_aot_table[i].arch == arch && ptc_cuda_aot_table[i].source_len == len;
  if (!some) return NULL;
  char key[65];
  ptc_status s = cuda_aot_key(source, arch, key);
  if (s) {
    ptc_status_destroy(s);
    return NULL;
  }
  for (size_t i = 0; i < ptc_cuda_aot_count; i++) {
    const cuda_aot_entry* e = &ptc_cuda_aot_table[i];
    if (e->arch == arch && e->source_len == len && strcmp(e->key, key) == 0)
      return driver_ok() ? e : NULL;
  }
  return NULL;
}

void cuda_aot_sources_free(cuda_aot_src* srcs, size_t n) {
  for (size_t i = 0; i < n; i++) ptc_sb_free(&srcs[i].src);
}

ptc_status cuda_aot_sources(cuda_aot_src* out, size_t cap, size_t* n) {
  *n = 0;
  PTC_TRY(cuda_attn_wg_aot_sources(out, cap, n));
  static const int archs[] = {80, 90};
  for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++) {
    PTC_TRY(cuda_attn_aot_sources(archs[a], out, cap, n));
    PTC_TRY(cuda_attn_f32_aot_sources(archs[a], out, cap, n));
    PTC_TRY(cuda_support_aot_sources(archs[a], out, cap, n));
  }
  /* one entry per distinct (source, arch): shapes that share a kernel
   * (e.g. head dim 128's two grid shapes) give one source */
  size_t m = 0;
  for (size_t i = 0; i < *n; i++) {
    bool dup = false;
    for (size_t k = 0; k < m && !dup; k++)
      dup = out[k].arch == out[i].arch && out[k].src.len == out[i].src.len &&
            strcmp(out[k].src.data, out[i].src.data) == 0;
    if (dup) {
      ptc_sb_free(&out[i].src);
    } else if (m != i) {
      out[m] = out[i];
      memset(&out[i], 0, sizeof out[i]);
    }
    m += !dup;
  }
  *n = m;
  return PTC_OK;
}
