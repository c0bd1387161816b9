// wg_overlap_probe.cu - can one warpgroup's MUFU (ex2) or FMA work run
// while another warpgroup's wgmmas keep the tensor cores busy, on an sm_90a
// GPU? A hardware probe for the attention kernel's schedule (docs/cuda.md,
// session 15), not part of the library: 132 blocks of two warpgroups, each
// warpgroup given a role (wgmma m64n128k16 with A from shared memory or
// from registers, ex2, FFMA, or nothing); prints the kernel time and each
// warpgroup's clock64 cycles (block 0). If the pipes overlap, a pair takes
// about as long as its slower member alone; if they serialise, the sum.
// H100, session 15: wgmma alone 1.15M cycles, ex2 alone 1.07M, together
// 1.15M / 1.36M; A from registers 1.15M / 1.41M.
//
// Build and run on the GPU machine (bench/attn_wg_gpu.sh --probe does):
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o /tmp/wg_overlap_probe bench/wg_overlap_probe.cu
//   /tmp/wg_overlap_probe
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

typedef uint32_t u32;
typedef uint64_t u64;

__device__ __forceinline__ u64 desc(u32 saddr, u32 lbo, u32 sbo) {
  return (u64)((saddr & 0x3FFFFu) >> 4) | (u64)((lbo >> 4) & 0x3FFFu) << 16 | (u64)((sbo >> 4) & 0x3FFFu) << 32;
}

__device__ __forceinline__ void mma(float* d, u64 a, u64 b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b));
}

__device__ __forceinline__ void mma_rs(float* d, const u32* a, u64 b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "{%64,%65,%66,%67}, %68, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// A warpgroup's wgmma work: iters x 8 m64n128k16, A from shared memory
// (RS false) or from registers (RS true), B from shared memory.
template <bool RS>
__device__ void wgmma_loop(int iters, float* out, u32 sa, u32 sb) {
  float d[64];
  for (int i = 0; i < 64; i++) d[i] = 0.f;
  u32 ar[8][4];
  for (int i = 0; i < 8; i++)
    for (int e = 0; e < 4; e++) ar[i][e] = 0x3F803F80u + threadIdx.x;
  u64 da = desc(sa, 128, 256), db = desc(sb, 128, 256);
  for (int it = 0; it < iters; it++) {
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#pragma unroll
    for (int k = 0; k < 8; k++) {
      if (RS)
        mma_rs(d, ar[k], db);
      else
        mma(d, da, db);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  }
  float s = 0.f;
  for (int i = 0; i < 64; i++) s += d[i];
  if (s == 12345.f) out[0] = s;  // keeps the work live
}

// A warpgroup's scalar work: iters x 32 independent chains a thread of
// ex2 (MUFU, EX2 true) or FFMA.
template <bool EX2>
__device__ void alu_loop(int iters, float* out) {
  float x[32];
  for (int i = 0; i < 32; i++) x[i] = (EX2 ? -0.001f : 0.001f) * (threadIdx.x + i);
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int i = 0; i < 32; i++) {
      if (EX2) {
        float y;
        asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x[i]));
        x[i] = y - 1.0f;
      } else {
        x[i] = fmaf(x[i], 0.999f, 0.0001f);
      }
    }
  }
  float s = 0.f;
  for (int i = 0; i < 32; i++) s += x[i];
  if (s == 12345.f) out[0] = s;
}

// role: 0 idle, 1 wgmma (A in shared memory), 2 ex2 (MUFU), 3 FFMA
// chains, 4 wgmma (A in registers)
__device__ void work(int role, int iters, float* out, u32 sa, u32 sb) {
  if (role == 1) wgmma_loop<false>(iters, out, sa, sb);
  if (role == 4) wgmma_loop<true>(iters, out, sa, sb);
  if (role == 2) alu_loop<true>(iters, out);
  if (role == 3) alu_loop<false>(iters, out);
}

__global__ void __launch_bounds__(256, 1) k(int r0, int r1, int it0, int it1, float* out, long long* cyc) {
  extern __shared__ __align__(1024) unsigned char sm[];
  u32 base = (u32)__cvta_generic_to_shared(sm);
  for (int i = threadIdx.x; i < 32768 / 4; i += blockDim.x) ((u32*)sm)[i] = 0x3F803F80u;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  int wg = threadIdx.x / 128;
  long long t0 = clock64();
  work(wg == 0 ? r0 : r1, wg == 0 ? it0 : it1, out, base, base + 16384);
  long long t1 = clock64();
  if (threadIdx.x % 128 == 0 && blockIdx.x == 0) cyc[wg] = t1 - t0;
}

int main() {
  float* out;
  long long* cyc;
  cudaMalloc(&out, 4);
  cudaMalloc(&cyc, 16);
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 65536);
  // iterations: wgmma 8 x m64n128k16 per iteration (= 512 tensor cycles
  // alone if a warpgroup gets the SM's full rate); ex2 32 per thread per
  // iteration (= 256 MUFU cycles per warpgroup at 16 per clock per SM)
  struct {
    const char* name;
    int r0, r1, i0, i1;
  } runs[] = {
      {"wgmma alone", 1, 0, 2000, 0},           {"ex2 alone", 0, 2, 0, 4000},
      {"wgmma + ex2", 1, 2, 2000, 4000},        {"ffma alone", 0, 3, 0, 4000},
      {"wgmma + ffma", 1, 3, 2000, 4000},       {"wgmma + wgmma", 1, 1, 2000, 2000},
      {"ex2 + ex2", 2, 2, 4000, 4000},
      {"rs alone", 4, 0, 2000, 0},              {"rs + ex2", 4, 2, 2000, 4000},
      {"rs + ffma", 4, 3, 2000, 4000},
  };
  for (auto& r : runs) {
    for (int rep = 0; rep < 2; rep++) {
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      cudaEventRecord(e0);
      k<<<132, 256, 65536>>>(r.r0, r.r1, r.i0, r.i1, out, cyc);
      cudaEventRecord(e1);
      cudaEventSynchronize(e1);
      float ms;
      cudaEventElapsedTime(&ms, e0, e1);
      long long c[2];
      cudaMemcpy(c, cyc, 16, cudaMemcpyDeviceToHost);
      cudaError_t err = cudaGetLastError();
      if (rep) printf("%-16s %.4f ms  wg0 %lld cycles  wg1 %lld cycles %s\n", r.name, ms, c[0], c[1],
                      err ? cudaGetErrorString(err) : "");
    }
  }
  return 0;
}
