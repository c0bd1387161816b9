// bench/pw_layout_probe.cu - which thread layout and float mode a
// compute-heavy fp32 pointwise kernel wants on the GPU: vs_torch's pointwise
// chain sigmoid(cos(relu(sin(x) * 2 + 1))) over 2^26 floats, written the way
// ptc's generated kernel is (a grid-stride loop, one 16-byte chunk a thread
// a step, grid capped at 8 waves of resident blocks) and the way Inductor's
// Triton kernel is (one-shot blocks of 128 threads, two 16-byte chunks a
// thread 2 KiB apart, so a block covers 4 KiB), each with IEEE float
// (denormals kept, as ptc and PyTorch eager) and with flush-to-zero (what
// Triton's code does). Each variant is a kernel in a translation unit built
// twice (-DPROBE_SUFFIX=_ieee, and _ftz with -ftz=true); the driver
// (-DPROBE_MAIN) times them in turn, rounds interleaved, and prints the
// median us a call and GB/s. A probe, not a test: run by hand on the GPU
// machine, e.g.
//   nvcc -O3 -arch=sm_90a -c -DPROBE_SUFFIX=_ieee bench/pw_layout_probe.cu -o k1.o
//   nvcc -O3 -arch=sm_90a -c -DPROBE_SUFFIX=_ftz -ftz=true bench/pw_layout_probe.cu -o k2.o
//   nvcc -O3 -arch=sm_90a -DPROBE_MAIN bench/pw_layout_probe.cu k1.o k2.o -o probe && ./probe
#include <cuda_runtime.h>
#include <stdio.h>

#define PROBE_CAT2(a, b) a##b
#define PROBE_CAT(a, b) PROBE_CAT2(a, b)

#ifndef PROBE_MAIN
__device__ __forceinline__ float chain(float x) {
  float y = sinf(x) * 2.0f + 1.0f;
  y = y > 0.0f ? y : (y != y ? y : 0.0f);
  y = cosf(y);
  float e, r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(e) : "f"(-y * 1.4426950408889634f));
  asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(1.0f), "f"(1.0f + e));
  return r;
}

__device__ __forceinline__ void chunk(const float* in, float* out, int i) {
  float4 v = *reinterpret_cast<const float4*>(in + i);
  v.x = chain(v.x), v.y = chain(v.y), v.z = chain(v.z), v.w = chain(v.w);
  *reinterpret_cast<float4*>(out + i) = v;
}

// ptc's form: grid-stride, one chunk a thread a step
__global__ void __launch_bounds__(256) PROBE_CAT(k_stride, PROBE_SUFFIX)(const float* in, float* out, int n) {
  for (int c = blockIdx.x * blockDim.x + threadIdx.x; c < n / 4; c += gridDim.x * blockDim.x)
    chunk(in, out, c * 4);
}

// Inductor's form: one-shot, a block of 128 threads covers 1024 floats,
// a thread's two chunks 512 floats apart, both loaded before either is used
__global__ void __launch_bounds__(128) PROBE_CAT(k_oneshot, PROBE_SUFFIX)(const float* in, float* out, int n) {
  int i = blockIdx.x * 1024 + threadIdx.x * 4;
  if (i + 512 + 4 > n) return;
  float4 a = *reinterpret_cast<const float4*>(in + i);
  float4 b = *reinterpret_cast<const float4*>(in + i + 512);
  a.x = chain(a.x), a.y = chain(a.y), a.z = chain(a.z), a.w = chain(a.w);
  b.x = chain(b.x), b.y = chain(b.y), b.z = chain(b.z), b.w = chain(b.w);
  *reinterpret_cast<float4*>(out + i) = a;
  *reinterpret_cast<float4*>(out + i + 512) = b;
}

// grid-stride with Inductor's block tile: 256 threads, two chunks a thread
// (a block's 2048 floats contiguous), both loaded first
__global__ void __launch_bounds__(256) PROBE_CAT(k_stride2, PROBE_SUFFIX)(const float* in, float* out, int n) {
  for (int t = blockIdx.x * 2048 + threadIdx.x * 4; t + 1024 + 4 <= n; t += gridDim.x * 2048) {
    float4 a = *reinterpret_cast<const float4*>(in + t);
    float4 b = *reinterpret_cast<const float4*>(in + t + 1024);
    a.x = chain(a.x), a.y = chain(a.y), a.z = chain(a.z), a.w = chain(a.w);
    b.x = chain(b.x), b.y = chain(b.y), b.z = chain(b.z), b.w = chain(b.w);
    *reinterpret_cast<float4*>(out + t) = a;
    *reinterpret_cast<float4*>(out + t + 1024) = b;
  }
}

void PROBE_CAT(launch, PROBE_SUFFIX)(int which, const float* in, float* out, int n, int sms) {
  if (which == 0) PROBE_CAT(k_stride, PROBE_SUFFIX)<<<sms * 8 * 8, 256>>>(in, out, n);
  if (which == 1) PROBE_CAT(k_oneshot, PROBE_SUFFIX)<<<n / 1024, 128>>>(in, out, n);
  if (which == 2) PROBE_CAT(k_stride2, PROBE_SUFFIX)<<<sms * 8 * 8, 256>>>(in, out, n);
  if (which == 3) PROBE_CAT(k_stride2, PROBE_SUFFIX)<<<sms * 8 * 4, 256>>>(in, out, n);
  if (which == 4) PROBE_CAT(k_stride2, PROBE_SUFFIX)<<<n / 2048, 256>>>(in, out, n);
}
#else
#include <math.h>
#include <stdlib.h>
void launch_ieee(int, const float*, float*, int, int);
void launch_ftz(int, const float*, float*, int, int);

static int cmp(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return x < y ? -1 : x > y;
}

int main(void) {
  const int n = 1 << 26, rounds = 15, calls = 20, nv = 10;
  const char* names[nv] = {"stride ieee", "oneshot ieee", "stride2 8w ieee", "stride2 4w ieee",
                           "stride2 nocap ieee", "stride ftz", "oneshot ftz", "stride2 8w ftz",
                           "stride2 4w ftz", "stride2 nocap ftz"};
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float *in, *out, *ref;
  cudaMalloc(&in, n * sizeof(float));
  cudaMalloc(&out, n * sizeof(float));
  float* h = (float*)malloc(n * sizeof(float));
  float* h2 = (float*)malloc(n * sizeof(float));
  for (int i = 0; i < n; i++) h[i] = (float)((rand() / (double)RAND_MAX) * 8.0 - 4.0);
  cudaMemcpy(in, h, n * sizeof(float), cudaMemcpyHostToDevice);
  ref = h;
  launch_ieee(0, in, out, n, sms);
  cudaMemcpy(ref, out, n * sizeof(float), cudaMemcpyDeviceToHost);
  float t[nv][rounds];
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int v = 0; v < nv; v++) {
    cudaMemset(out, 0, n * sizeof(float));
    (v < 5 ? launch_ieee : launch_ftz)(v % 5, in, out, n, sms);
    cudaMemcpy(h2, out, n * sizeof(float), cudaMemcpyDeviceToHost);
    double md = 0;
    for (int i = 0; i < n; i++) md = fmax(md, fabs((double)h2[i] - ref[i]));
    printf("%-20s max diff vs stride ieee %.3g\n", names[v], md);
  }
  for (int r = 0; r < rounds; r++)
    for (int v = 0; v < nv; v++) {
      cudaEventRecord(a);
      for (int c = 0; c < calls; c++) (v < 5 ? launch_ieee : launch_ftz)(v % 5, in, out, n, sms);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms;
      cudaEventElapsedTime(&ms, a, b);
      t[v][r] = ms * 1000.0f / calls;
    }
  for (int v = 0; v < nv; v++) {
    qsort(t[v], rounds, sizeof(float), cmp);
    printf("%-20s median %7.2f us  min %7.2f us  %6.0f GB/s\n", names[v], t[v][rounds / 2], t[v][0],
           2.0 * n * 4 / (t[v][rounds / 2] * 1e3));
  }
  printf("cudaError: %s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
#endif
