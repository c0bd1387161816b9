/* cuda_nvrtc.c - compiles one CUDA translation unit to a cubin with NVRTC
 * for one architecture (sm_XX). The options are fixed here (one place for
 * the fact, also hashed into cache keys): C++17, the architecture, no fast
 * math (PyTorch semantics for NaN, denormals and division), fused
 * multiply-add allowed as in nvcc's default. A failed compilation returns
 * INTERNAL with the program log ("compiler_log") in the status detail. */
#include "cuda_nvrtc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* const cuda_nvrtc_flags[] = {"--std=c++17", "--fmad=true", NULL};

void cuda_arch_option(int arch, char* out, size_t cap) {
  snprintf(out, cap, "--gpu-architecture=sm_%d%s", arch & ~CUDA_ARCH_SPECIFIC,
           (arch & CUDA_ARCH_SPECIFIC) ? "a" : "");
}

static char* program_log(const nvrtc_api* nv, nvrtc_program prog) {
  size_t n = 0;
  if (nv->GetProgramLogSize(prog, &n) != NVRTC_OK) return NULL;
  char* log = malloc(n + 1);
  if (!log) return NULL;
  if (nv->GetProgramLog(prog, log) != NVRTC_OK) n = 0;
  log[n] = 0;
  return log;
}

static ptc_status nv_error(const nvrtc_api* nv, nvrtc_result r, const char* what, const char* name) {
  return PTC_ERR(INTERNAL, "cuda backend: %s of kernel %s failed: %s", what, name,
                 nv->GetErrorString ? nv->GetErrorString(r) : "NVRTC error");
}

ptc_status cuda_nvrtc_compile(const char* source, const char* name, int arch, cuda_cubin* out) {
  return cuda_nvrtc_compile_ex(source, name, arch, NULL, out);
}

ptc_status cuda_nvrtc_compile_ex(const char* source, const char* name, int arch,
                                 const char* extra, cuda_cubin* out) {
  memset(out, 0, sizeof *out);
  const cuda_libs* L = cuda_libs_get();
  if (!L->have_nvrtc) return PTC_ERR(UNAVAILABLE, "cuda backend: %s", L->nvrtc_error);
  const nvrtc_api* nv = &L->nvrtc;
  char file[80], archopt[48];
  snprintf(file, sizeof file, "%s.cu", name);
  cuda_arch_option(arch, archopt, sizeof archopt);
  const char* opts[8];
  int n_opts = 0;
  opts[n_opts++] = archopt;
  for (const char* const* f = cuda_nvrtc_flags; *f; f++) opts[n_opts++] = *f;
  if (extra) opts[n_opts++] = extra;
  nvrtc_program prog = NULL;
  nvrtc_result r = nv->CreateProgram(&prog, source, file, 0, NULL, NULL);
  if (r != NVRTC_OK) return nv_error(nv, r, "nvrtcCreateProgram", name);
  r = nv->CompileProgram(prog, n_opts, opts);
  ptc_status s = PTC_OK;
  if (r != NVRTC_OK) {
    char* log = program_log(nv, prog);
    s = PTC_ERR(INTERNAL, "cuda backend: NVRTC could not compile kernel %s for %s (see "
                "compiler_log)", name, archopt + strlen("--gpu-architecture="));
    s = ptc_status_add_detail(s, "compiler_log", log ? log : "");
    free(log);
  }
  size_t size = 0;
  if (!s && (r = nv->GetCUBINSize(prog, &size)) != NVRTC_OK)
    s = nv_error(nv, r, "nvrtcGetCUBINSize", name);
  if (!s) {
    out->data = malloc(size ? size : 1);
    if (!out->data) s = ptc_status_oom();
  }
  if (!s && (r = nv->GetCUBIN(prog, out->data)) != NVRTC_OK)
    s = nv_error(nv, r, "nvrtcGetCUBIN", name);
  if (!s) out->size = size;
  nv->DestroyProgram(&prog);
  if (s) cuda_cubin_free(out);
  return s;
}

void cuda_cubin_free(cuda_cubin* c) {
  if (!c) return;
  free(c->data);
  c->data = NULL;
  c->size = 0;
}
