/* backend_registry.c - the built-in backends and the public backend queries;
 * device types of backends; DLPack dtype mapping. */
#include "backend.h"

#include <stdio.h>
#include <string.h>

static const backend_vtable* const builtin[] = {&ptc_ref_backend, &ptc_cpu_backend,
                                                &ptc_cuda_backend};
#define N_BUILTIN (sizeof builtin / sizeof builtin[0])

/* Aliases: "eager" is the reference interpreter (as torch.compile's eager). */
static const struct {
  const char* alias;
  const char* name;
} aliases[] = {{"eager", "ref"}};

size_t backend_count(void) { return N_BUILTIN; }
const backend_vtable* backend_at(size_t i) { return i < N_BUILTIN ? builtin[i] : NULL; }

const backend_vtable* backend_find(const char* name) {
  if (!name) return NULL;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(name, aliases[i].alias) == 0) name = aliases[i].name;
  for (size_t i = 0; i < N_BUILTIN; i++)
    if (strcmp(builtin[i]->name, name) == 0) return builtin[i];
  return NULL;
}

int32_t backend_device_type(const backend_vtable* b) {
  return b && b->device_type ? b->device_type : PTC_DEVICE_CPU;
}

const char* runtime_device_name(int32_t device_type) {
  static _Thread_local char buf[32];
  if (device_type == PTC_DEVICE_CPU) return "cpu";
  if (device_type == PTC_DEVICE_CUDA) return "cuda";
  snprintf(buf, sizeof buf, "device type %d", (int)device_type);
  return buf;
}

size_t ptc_backend_count(void) { return backend_count(); }

const char* ptc_backend_name(size_t i) {
  const backend_vtable* b = backend_at(i);
  return b ? b->name : NULL;
}

int ptc_backend_available(const char* name, const char** reason) {
  const backend_vtable* b = backend_find(name);
  if (!b) {
    if (reason) *reason = "unknown backend";
    return 0;
  }
  const char* r = b->unavailable_reason ? b->unavailable_reason() : NULL;
  if (reason) *reason = r;
  return r == NULL;
}

static const ptc_dl_dtype dl_of[PTC_DTYPE_COUNT] = {
    [PTC_F32] = {2, 32, 1}, [PTC_F64] = {2, 64, 1}, [PTC_F16] = {2, 16, 1},
    [PTC_BF16] = {4, 16, 1}, [PTC_I8] = {0, 8, 1},  [PTC_I16] = {0, 16, 1},
    [PTC_I32] = {0, 32, 1}, [PTC_I64] = {0, 64, 1}, [PTC_U8] = {1, 8, 1},
    [PTC_BOOL] = {6, 8, 1},
};

ptc_dl_dtype ptc_dtype_to_dl(int32_t dtype) {
  ptc_dl_dtype none = {0, 0, 0};
  return ptc_dtype_valid(dtype) ? dl_of[dtype] : none;
}

int32_t ptc_dtype_from_dl(ptc_dl_dtype dt) {
  if (dt.lanes != 1) return -1;
  /* PyTorch before DLPack 0.8 exports bool as uint8 code 1 bits 8 with no way
   * to tell them apart; we accept code 6 (kDLBool) for bool. */
  for (int32_t i = 0; i < PTC_DTYPE_COUNT; i++)
    if (dl_of[i].code == dt.code && dl_of[i].bits == dt.bits) return i;
  return -1;
}
