/* test_cuda_attn_wg_shape.c - which sdpa calls the Hopper wgmma attention
 * kernel takes and with which kernel shape (cuda_attn_wg_shape,
 * backends/cuda/cuda_attn_wg.c). No GPU and no NVRTC needed: the rules read
 * only the device's compute capability, SM count and shared memory, so the
 * calls are checked against a made-up H100 (sm_90, 132 SMs, 227 KB):
 *  - d64 without causal: the four-warpgroup shape 4,64,3 where it has two
 *    items per SM (b8 h16 L1024 / L2048, b300 h1 L130), the wide 3,128,2
 *    where it does not (b8 h16 L512: 256 items) and with
 *    PTC_CUDA_ATTN_WG_FOUR=0; L256 stays on the mma.sync kernel;
 *  - d64 causal 2,128,4, d128 2,128,3, d128 causal 2,128,2;
 *  - PTC_CUDA_ATTN_WG_CFG names a shape for every call (small ones too),
 *    but not four warpgroups for head dim 128; PTC_CUDA_ATTN_WG=0, another
 *    architecture, a mask tensor or element loads: never taken. */
#include "backends/cuda/cuda_attn_wg.h"
#include "backends/cuda/cuda_rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed, passed;

/* Checks one call of geometry g (vec: unit-stride, aligned rows); want =
 * {nwg, bn, ns} or NULL for "not taken". */
static void check_geom(const cuda_device* dev, const char* what, const cuda_attn_geom* g, int hi,
                       bool vec, const int* want) {
  int shape[4] = {0, 0, 0, 0};
  bool took = cuda_attn_wg_shape(dev, g, hi, vec, shape);
  bool ok = want ? took && shape[0] == want[0] && shape[1] == want[1] && shape[2] == want[2] : !took;
  if (ok) {
    passed++;
    return;
  }
  failed++;
  if (took)
    printf("FAIL %s: took shape %d,%d,%d", what, shape[0], shape[1], shape[2]);
  else
    printf("FAIL %s: not taken", what);
  if (want)
    printf(", want %d,%d,%d\n", want[0], want[1], want[2]);
  else
    printf(", want not taken\n");
}

/* Checks one call: b batch entries, length L (= S), head dim index hi,
 * causal, mask kind (0 none, 2 boolean), vec. */
static void check_call(const cuda_device* dev, const char* what, int64_t b, int64_t L, int hi,
                       int causal, int mask, bool vec, const int* want) {
  cuda_attn_geom g;
  memset(&g, 0, sizeof g);
  g.L = g.S = L;
  g.nbatch = b;
  g.causal = causal;
  g.mask = mask;
  check_geom(dev, what, &g, hi, vec, want);
}

/* The common case: no mask tensor, unit-stride rows. */
static void check(const cuda_device* dev, const char* what, int64_t b, int64_t L, int hi,
                  int causal, const int* want) {
  check_call(dev, what, b, L, hi, causal, 0, true, want);
}

int main(void) {
  static const int four[3] = {4, 64, 3}, wide[3] = {3, 128, 2}, d64c[3] = {2, 128, 4};
  static const int d128[3] = {2, 128, 3}, d128c[3] = {2, 128, 2};
  unsetenv("PTC_CUDA_ATTN_WG");
  unsetenv("PTC_CUDA_ATTN_WG_CFG");
  unsetenv("PTC_CUDA_ATTN_WG_FOUR");
  cuda_device h100;
  memset(&h100, 0, sizeof h100);
  h100.cc_major = 9;
  h100.sm_count = 132;
  h100.max_smem_optin = 227 * 1024;

  check(&h100, "b8 h16 L1024 d64", 128, 1024, 1, 0, four);
  check(&h100, "b8 h16 L2048 d64", 128, 2048, 1, 0, four);
  check(&h100, "b300 h1 L130 d64", 300, 130, 1, 0, four);
  /* 256 four-warpgroup items are under two per SM: the wide shape */
  check(&h100, "b8 h16 L512 d64", 128, 512, 1, 0, wide);
  check(&h100, "b8 h16 L256 d64", 128, 256, 1, 0, NULL);
  check(&h100, "b8 h16 L1024 d64 causal", 128, 1024, 1, 1, d64c);
  check(&h100, "b8 h16 L1024 d128", 128, 1024, 2, 0, d128);
  check(&h100, "b8 h16 L1024 d128 causal", 128, 1024, 2, 1, d128c);
  /* an unknown SM count counts as 132 */
  cuda_device nosm = h100;
  nosm.sm_count = 0;
  check(&nosm, "b8 h16 L512 d64, SM count unknown", 128, 512, 1, 0, wide);
  check(&nosm, "b8 h16 L1024 d64, SM count unknown", 128, 1024, 1, 0, four);

  setenv("PTC_CUDA_ATTN_WG_FOUR", "0", 1);
  check(&h100, "b8 h16 L1024 d64, FOUR=0", 128, 1024, 1, 0, wide);
  unsetenv("PTC_CUDA_ATTN_WG_FOUR");

  setenv("PTC_CUDA_ATTN_WG_CFG", "4,64,3", 1);
  check(&h100, "b1 h2 L100 d64, CFG=4,64,3", 2, 100, 1, 0, four);
  check(&h100, "b1 h2 L100 d64 causal, CFG=4,64,3", 2, 100, 1, 1, four);
  /* head dim 128 refuses four warpgroups: the default, where it is taken */
  check(&h100, "b8 h16 L1024 d128, CFG=4,64,3", 128, 1024, 2, 0, d128);
  unsetenv("PTC_CUDA_ATTN_WG_CFG");

  setenv("PTC_CUDA_ATTN_WG", "0", 1);
  check(&h100, "b8 h16 L1024 d64, WG=0", 128, 1024, 1, 0, NULL);
  unsetenv("PTC_CUDA_ATTN_WG");

  cuda_device a100 = h100;
  a100.cc_major = 8;
  check(&a100, "sm_80 b8 h16 L1024 d64", 128, 1024, 1, 0, NULL);
  check_call(&h100, "b8 h16 L1024 d64, a boolean mask tensor", 128, 1024, 1, 0, 2, true, NULL);
  check_call(&h100, "b8 h16 L1024 d64, element loads", 128, 1024, 1, 0, 0, false, NULL);
  printf("test_cuda_attn_wg_shape: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
