// bench/pdl_probe.cu - what programmatic dependent launch (PDL, sm_90) buys
// back-to-back memory-bound kernels on one stream: a row sum over a
// 16384x4096 float matrix (one block of 256 threads a row, 16-byte loads)
// and a pointwise x*2+1 over 2^26 floats, each launched 300 times in a row
// plain, and with the launch attribute programmaticStreamSerialization plus
// `griddepcontrol.wait` before the first global access and
// `griddepcontrol.launch_dependents` at the start of each block (so the next
// launch's blocks are placed while this one drains and wait for it to end).
// Rounds are interleaved; it prints the median us a call of each. A probe,
// not a test: run by hand on the GPU machine, e.g.
//   nvcc -O3 -arch=sm_90a bench/pdl_probe.cu -o pdl && ./pdl
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define ROWS 16384
#define COLS 4096
#define PW_N (1 << 26)
#define CALLS 300
#define ROUNDS 9

__device__ __forceinline__ void pdl_wait(bool on) {
  if (on) asm volatile("griddepcontrol.wait;" ::: "memory");
}
__device__ __forceinline__ void pdl_trigger(bool on) {
  if (on) asm volatile("griddepcontrol.launch_dependents;");
}

template <bool PDL>
__global__ void __launch_bounds__(256) row_sum(const float* __restrict__ x, float* __restrict__ y) {
  pdl_trigger(PDL);
  pdl_wait(PDL);
  const float4* r = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * COLS);
  float a = 0.f;
#pragma unroll 4
  for (int i = threadIdx.x; i < COLS / 4; i += 256) {
    float4 v = r[i];
    a += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o; o >>= 1) a += __shfl_xor_sync(0xffffffffu, a, o);
  __shared__ float part[8];
  if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = a;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.f;
    for (int w = 0; w < 8; w++) s += part[w];
    y[blockIdx.x] = s;
  }
}

template <bool PDL>
__global__ void __launch_bounds__(256) pointwise(const float* __restrict__ x, float* __restrict__ y, int n4) {
  pdl_trigger(PDL);
  pdl_wait(PDL);
  for (int i = blockIdx.x * 256 + threadIdx.x; i < n4; i += gridDim.x * 256) {
    float4 v = reinterpret_cast<const float4*>(x)[i];
    v.x = v.x * 2.f + 1.f, v.y = v.y * 2.f + 1.f, v.z = v.z * 2.f + 1.f, v.w = v.w * 2.f + 1.f;
    reinterpret_cast<float4*>(y)[i] = v;
  }
}

static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    exit(1);
  }
}

template <typename K, typename... A>
static void launch(K k, bool pdl, unsigned grid, cudaStream_t s, A... a) {
  cudaLaunchConfig_t c = {};
  cudaLaunchAttribute at[1];
  c.gridDim = dim3(grid), c.blockDim = dim3(256), c.stream = s;
  if (pdl) {
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    c.attrs = at, c.numAttrs = 1;
  }
  check(cudaLaunchKernelEx(&c, k, a...), "launch");
}

static int cmp(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  float *x, *y;
  int sms;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "attr");
  check(cudaMalloc(&x, (size_t)ROWS * COLS * 4), "malloc");
  check(cudaMalloc(&y, (size_t)PW_N * 4), "malloc");
  check(cudaMemset(x, 0, (size_t)ROWS * COLS * 4), "memset");
  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0), cudaEventCreate(&e1);
  const char* names[4] = {"row_sum plain", "row_sum pdl", "pointwise plain", "pointwise pdl"};
  float t[4][ROUNDS];
  for (int r = 0; r < ROUNDS; r++)
    for (int v = 0; v < 4; v++) {
      bool pdl = v & 1;
      cudaEventRecord(e0, s);
      for (int c = 0; c < CALLS; c++) {
        if (v < 2)
          launch(pdl ? row_sum<true> : row_sum<false>, pdl, ROWS, s, (const float*)x, y);
        else
          launch(pdl ? pointwise<true> : pointwise<false>, pdl, (unsigned)sms * 8 * 8, s, (const float*)x,
                 y, PW_N / 4);
      }
      cudaEventRecord(e1, s);
      check(cudaEventSynchronize(e1), "sync");
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      t[v][r] = ms * 1000.f / CALLS;
    }
  for (int v = 0; v < 4; v++) {
    qsort(t[v], ROUNDS, sizeof(float), cmp);
    printf("%-16s %8.2f us a call (min %.2f, max %.2f)\n", names[v], t[v][ROUNDS / 2], t[v][0],
           t[v][ROUNDS - 1]);
  }
  return 0;
}
