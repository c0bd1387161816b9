// cuda_gemm_tc.cuh - the tensor-core GEMM (embedded as ptc_cuda_gemm_tc_text,
// compiled after the prelude once per process and architecture, sm_80+):
// batched C = act(alpha * A @ B + beta * bias), f32 accumulation, for f16 and
// bf16 (mma.sync m16n8k16) and f32 as TF32 (mma.sync m16n8k8, inputs rounded
// with cvt.rna.tf32). 128x128 output tiles, 256 threads (8 warps, 2 x 4, each
// 64x32 = 4 x 4 mma tiles), K steps of 64 bytes (32 halves / 16 floats).
// Kernels ptc_tcg_<type>_<variant>, type f16 / bf16 / tf32:
//  - kk: A with unit K stride, B with unit K stride (x @ W^T of a linear
//        layer): both tiles K-major in shared memory;
//  - kn: A with unit K stride, B with unit N stride (plain row-major a @ b):
//        B's tile N-major, read with ldmatrix.trans;
//    both: rows and batch strides 16-byte aligned, tiles copied by cp.async
//    (zero-filled past M/N/K) into two shared-memory stages (double
//    buffering);
//  - gen: any strides (transposed A, odd strides, unaligned bases): element
//    loads through registers into K-major tiles, one stage.
// Edges: rows/columns past M/N are zero-filled and not stored; the K tail is
// zero-filled. blockIdx.z walks the batch entries (strides per batch dim, 0 =
// broadcast). The epilogue: alpha, + beta * bias (any strides), the
// activation (ir_activation codes), one store per element (any C strides).

#define PTC_TCG_MAX_RANK 16

struct ptc_tcg_args {  // the layout of ptc_mm_args / cuda_mm_args
  i64 m, n, k;
  i64 a_sm, a_sk, b_sk, b_sn, c_sm, c_sn, d_sm, d_sn;
  double alpha, beta;
  i32 act;  // 0 none, 1 relu, 2 gelu (erf), 3 gelu tanh, 4 silu, 5 sigmoid, 6 tanh
  i32 has_bias;
  i32 nb;
  i32 pad;
  i64 batch[PTC_TCG_MAX_RANK];
  i64 a_bs[PTC_TCG_MAX_RANK], b_bs[PTC_TCG_MAX_RANK], c_bs[PTC_TCG_MAX_RANK], d_bs[PTC_TCG_MAX_RANK];
};

// element kinds: 0 f16, 1 bf16, 2 f32 as tf32
template <int K> struct ptc_tcg_kind;
template <> struct ptc_tcg_kind<0> {
  typedef u16 S;
  enum { ES = 2 };
  static PTC_D float load(S v) { return ptc_h2f(v); }
  static PTC_D S store(float v) { return ptc_f2h(v); }
};
template <> struct ptc_tcg_kind<1> {
  typedef u16 S;
  enum { ES = 2 };
  static PTC_D float load(S v) { return ptc_bf2f(v); }
  static PTC_D S store(float v) { return ptc_f2bf(v); }
};
template <> struct ptc_tcg_kind<2> {
  typedef float S;
  enum { ES = 4 };
  static PTC_D float load(S v) { return v; }
  static PTC_D S store(float v) { return v; }
};

PTC_D float ptc_tcg_act(int act, float x) {
  switch (act) {
    case 1: return x < 0.f ? 0.f : x;
    case 2: return 0.5f * x * (1.f + erff(x * 0.70710678118654752440f));
    case 3: return 0.5f * x * (1.f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x)));
    case 4: return x / (1.f + expf(-x));
    case 5: return 1.f / (1.f + expf(-x));
    case 6: return tanhf(x);
    default: return x;
  }
}

#define PTC_TCG_BM 128
#define PTC_TCG_BN 128
#define PTC_TCG_KROW 80      // bytes per K-major tile row (64 bytes of K + 16 pad)
#define PTC_TCG_STAGE 20480  // bytes per stage: A (128 x 80) + B (<= 128 x 80)

PTC_D u32 ptc_tcg_smem(const void* p) { return (u32)__cvta_generic_to_shared(p); }

PTC_D void ptc_tcg_cp16(u32 dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
PTC_D void ptc_tcg_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> PTC_D void ptc_tcg_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

PTC_D void ptc_tcg_ldm4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
PTC_D void ptc_tcg_ldm4t(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}

template <int K> PTC_D void ptc_tcg_mma(float* c, const u32* a, u32 b0, u32 b1);
template <> PTC_D void ptc_tcg_mma<0>(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> PTC_D void ptc_tcg_mma<1>(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> PTC_D void ptc_tcg_mma<2>(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

PTC_D u32 ptc_tcg_tf32(float x) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

// One stage of tiles in shared memory: A K-major [128][KROW bytes]; B K-major
// [128][KROW bytes] (BK) or N-major [KT][128 + 8 elements] (!BK).
template <int K, bool BK> struct ptc_tcg_tile {
  enum {
    ES = ptc_tcg_kind<K>::ES,
    KT = 64 / ES,              // K per stage
    AKS = PTC_TCG_KROW / ES,   // elements per K-major row
    BNS = PTC_TCG_BN + 8,      // elements per N-major row
  };
};

// Warp-level product of one stage: acc[i][j] (i: 4 m16 tiles, j: 4 n8 tiles).
template <int K, bool BK> PTC_D void ptc_tcg_compute(const unsigned char* sa, const unsigned char* sb,
                                                     float (*acc)[4][4], int wm, int wn, int lane) {
  typedef ptc_tcg_tile<K, BK> T;
  if (K == 2) {  // tf32: m16n8k8, fragments by 32-bit shared loads
    const float* A = (const float*)sa;
    const float* B = (const float*)sb;
    const int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int ks = 0; ks < T::KT; ks += 8) {
      u32 af[4][4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const int r = wm * 64 + i * 16 + g;
        af[i][0] = ptc_tcg_tf32(A[r * T::AKS + ks + t]);
        af[i][1] = ptc_tcg_tf32(A[(r + 8) * T::AKS + ks + t]);
        af[i][2] = ptc_tcg_tf32(A[r * T::AKS + ks + t + 4]);
        af[i][3] = ptc_tcg_tf32(A[(r + 8) * T::AKS + ks + t + 4]);
      }
#pragma unroll
      for (int j = 0; j < 4; j++) {
        const int n = wn * 32 + j * 8 + g;
        u32 b0, b1;
        if (BK) {
          b0 = ptc_tcg_tf32(B[n * T::AKS + ks + t]);
          b1 = ptc_tcg_tf32(B[n * T::AKS + ks + t + 4]);
        } else {
          b0 = ptc_tcg_tf32(B[(ks + t) * T::BNS + n]);
          b1 = ptc_tcg_tf32(B[(ks + t + 4) * T::BNS + n]);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) ptc_tcg_mma<K>(acc[i][j], af[i], b0, b1);
      }
    }
  } else {  // f16 / bf16: m16n8k16, fragments by ldmatrix
    const u32 a0 = ptc_tcg_smem(sa), b0a = ptc_tcg_smem(sb);
#pragma unroll
    for (int ks = 0; ks < T::KT; ks += 16) {
      u32 af[4][4];
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const int r = wm * 64 + i * 16 + (lane & 15), k = ks + 8 * (lane >> 4);
        ptc_tcg_ldm4(a0 + r * PTC_TCG_KROW + k * 2, af[i][0], af[i][1], af[i][2], af[i][3]);
      }
      u32 bf[4][2];
#pragma unroll
      for (int jj = 0; jj < 2; jj++) {
        if (BK) {
          const int n = wn * 32 + jj * 16 + (lane & 7) + 8 * (lane >> 4), k = ks + 8 * ((lane >> 3) & 1);
          ptc_tcg_ldm4(b0a + n * PTC_TCG_KROW + k * 2, bf[2 * jj][0], bf[2 * jj][1], bf[2 * jj + 1][0],
                       bf[2 * jj + 1][1]);
        } else {
          const int k = ks + (lane & 7) + 8 * ((lane >> 3) & 1), n = wn * 32 + jj * 16 + 8 * (lane >> 4);
          ptc_tcg_ldm4t(b0a + (k * T::BNS + n) * 2, bf[2 * jj][0], bf[2 * jj][1], bf[2 * jj + 1][0],
                        bf[2 * jj + 1][1]);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) ptc_tcg_mma<K>(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
}

// cp.async copies of one stage (k0: the stage's first K index).
template <int K, bool BK> PTC_D void ptc_tcg_load_async(const typename ptc_tcg_kind<K>::S* a,
                                                        const typename ptc_tcg_kind<K>::S* b,
                                                        unsigned char* sa, unsigned char* sb,
                                                        const ptc_tcg_args& g, i64 row0, i64 col0,
                                                        i64 k0) {
  typedef ptc_tcg_tile<K, BK> T;
  const int tid = threadIdx.x;
  const int EPC = 16 / T::ES;  // elements per 16-byte chunk
#pragma unroll
  for (int i = 0; i < 2; i++) {  // A: 128 rows x 4 chunks
    const int q = tid + 256 * i, r = q >> 2, kc = q & 3;
    const i64 row = row0 + r, kq = k0 + kc * EPC;
    int bytes = 0;
    const void* src = a;
    if (row < g.m && kq < g.k) {
      const i64 left = (g.k - kq) * T::ES;
      bytes = left < 16 ? (int)left : 16;
      src = a + row * g.a_sm + kq;
    }
    ptc_tcg_cp16(ptc_tcg_smem(sa + r * PTC_TCG_KROW + kc * 16), src, bytes);
  }
  if (BK) {
#pragma unroll
    for (int i = 0; i < 2; i++) {  // B^T: 128 columns x 4 chunks
      const int q = tid + 256 * i, r = q >> 2, kc = q & 3;
      const i64 col = col0 + r, kq = k0 + kc * EPC;
      int bytes = 0;
      const void* src = b;
      if (col < g.n && kq < g.k) {
        const i64 left = (g.k - kq) * T::ES;
        bytes = left < 16 ? (int)left : 16;
        src = b + col * g.b_sn + kq;
      }
      ptc_tcg_cp16(ptc_tcg_smem(sb + r * PTC_TCG_KROW + kc * 16), src, bytes);
    }
  } else {
    const int CPR = PTC_TCG_BN * T::ES / 16;  // chunks per K row: 16 or 32
#pragma unroll
    for (int i = 0; i < 2; i++) {  // B: KT rows x CPR chunks = 512
      const int q = tid + 256 * i, r = q / CPR, nc = q % CPR;
      const i64 kq = k0 + r, col = col0 + nc * EPC;
      int bytes = 0;
      const void* src = b;
      if (kq < g.k && col < g.n) {
        const i64 left = (g.n - col) * T::ES;
        bytes = left < 16 ? (int)left : 16;
        src = b + kq * g.b_sk + col;
      }
      ptc_tcg_cp16(ptc_tcg_smem(sb + (r * T::BNS + nc * EPC) * T::ES), src, bytes);
    }
  }
}

// Element loads of one stage into K-major tiles (any strides).
template <int K> PTC_D void ptc_tcg_load_gen(const typename ptc_tcg_kind<K>::S* a,
                                             const typename ptc_tcg_kind<K>::S* b, unsigned char* sa,
                                             unsigned char* sb, const ptc_tcg_args& g, i64 row0,
                                             i64 col0, i64 k0) {
  typedef typename ptc_tcg_kind<K>::S S;
  typedef ptc_tcg_tile<K, true> T;
  S* A = (S*)sa;
  S* B = (S*)sb;
  const bool ak = (g.a_sk < 0 ? -g.a_sk : g.a_sk) <= (g.a_sm < 0 ? -g.a_sm : g.a_sm);
  const bool bk = (g.b_sk < 0 ? -g.b_sk : g.b_sk) <= (g.b_sn < 0 ? -g.b_sn : g.b_sn);
  for (int e = threadIdx.x; e < PTC_TCG_BM * T::KT; e += 256) {
    const int r = ak ? e / T::KT : e % PTC_TCG_BM, kk = ak ? e % T::KT : e / PTC_TCG_BM;
    const i64 row = row0 + r, kq = k0 + kk;
    A[r * T::AKS + kk] = row < g.m && kq < g.k ? a[row * g.a_sm + kq * g.a_sk] : (S)0;
  }
  for (int e = threadIdx.x; e < PTC_TCG_BN * T::KT; e += 256) {
    const int r = bk ? e / T::KT : e % PTC_TCG_BN, kk = bk ? e % T::KT : e / PTC_TCG_BN;
    const i64 col = col0 + r, kq = k0 + kk;
    B[r * T::AKS + kk] = col < g.n && kq < g.k ? b[kq * g.b_sk + col * g.b_sn] : (S)0;
  }
}

// V: 0 kk, 1 kn, 2 gen.
template <int K, int V> PTC_D void ptc_tcg_body(const typename ptc_tcg_kind<K>::S* __restrict__ a,
                                                const typename ptc_tcg_kind<K>::S* __restrict__ b,
                                                const typename ptc_tcg_kind<K>::S* __restrict__ bias,
                                                typename ptc_tcg_kind<K>::S* __restrict__ c,
                                                const ptc_tcg_args& g) {
  typedef ptc_tcg_kind<K> KD;
  const bool BK = V != 1;
  typedef ptc_tcg_tile<K, V != 1> T;
  __shared__ __align__(128) unsigned char smem[2 * PTC_TCG_STAGE];
  i64 rest = blockIdx.z, ao = 0, bo = 0, co = 0, dof = 0;
  for (int d = g.nb - 1; d >= 0; d--) {
    const i64 i = rest % g.batch[d];
    rest /= g.batch[d];
    ao += i * g.a_bs[d];
    bo += i * g.b_bs[d];
    co += i * g.c_bs[d];
    dof += i * g.d_bs[d];
  }
  a += ao;
  b += bo;
  const i64 row0 = (i64)blockIdx.y * PTC_TCG_BM, col0 = (i64)blockIdx.x * PTC_TCG_BN;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wm = warp & 1, wn = warp >> 1;
  float acc[4][4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
  const i64 nk = (g.k + T::KT - 1) / T::KT;
  if (V == 2) {
    for (i64 kt = 0; kt < nk; kt++) {
      ptc_tcg_load_gen<K>(a, b, smem, smem + PTC_TCG_BM * PTC_TCG_KROW, g, row0, col0, kt * T::KT);
      __syncthreads();
      ptc_tcg_compute<K, true>(smem, smem + PTC_TCG_BM * PTC_TCG_KROW, acc, wm, wn, lane);
      __syncthreads();
    }
  } else if (nk > 0) {
    ptc_tcg_load_async<K, BK>(a, b, smem, smem + PTC_TCG_BM * PTC_TCG_KROW, g, row0, col0, 0);
    ptc_tcg_commit();
    for (i64 kt = 0; kt < nk; kt++) {
      unsigned char* cur = smem + (kt & 1) * PTC_TCG_STAGE;
      if (kt + 1 < nk) {
        unsigned char* nxt = smem + ((kt + 1) & 1) * PTC_TCG_STAGE;
        ptc_tcg_load_async<K, BK>(a, b, nxt, nxt + PTC_TCG_BM * PTC_TCG_KROW, g, row0, col0,
                                  (kt + 1) * T::KT);
        ptc_tcg_commit();
        ptc_tcg_wait<1>();
      } else {
        ptc_tcg_wait<0>();
      }
      __syncthreads();
      ptc_tcg_compute<K, BK>(cur, cur + PTC_TCG_BM * PTC_TCG_KROW, acc, wm, wn, lane);
      __syncthreads();
    }
  }
  const float alpha = (float)g.alpha, beta = (float)g.beta;
  const int gq = lane >> 2, t = lane & 3;
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const i64 r = row0 + wm * 64 + i * 16 + gq + (e >> 1) * 8;
        const i64 col = col0 + wn * 32 + j * 8 + 2 * t + (e & 1);
        if (r >= g.m || col >= g.n) continue;
        float v = alpha * acc[i][j][e];
        if (g.has_bias) v += beta * KD::load(bias[dof + r * g.d_sm + col * g.d_sn]);
        c[co + r * g.c_sm + col * g.c_sn] = KD::store(ptc_tcg_act(g.act, v));
      }
}

#define PTC_TCG_KERNEL(NAME, K, V, S)                                                            \
  extern "C" __global__ void __launch_bounds__(256, 2)                                           \
      NAME(const S* a, const S* b, const S* bias, S* c, ptc_tcg_args g) {                       \
    ptc_tcg_body<K, V>(a, b, bias, c, g);                                                        \
  }
// PTC_TCG_TYPE (defined before this text): only that type's kernels (the
// library builds one module per type on first use); undefined: all.
#if !defined(PTC_TCG_TYPE) || PTC_TCG_TYPE == 0
PTC_TCG_KERNEL(ptc_tcg_f16_kk, 0, 0, u16)
PTC_TCG_KERNEL(ptc_tcg_f16_kn, 0, 1, u16)
PTC_TCG_KERNEL(ptc_tcg_f16_gen, 0, 2, u16)
#endif
#if !defined(PTC_TCG_TYPE) || PTC_TCG_TYPE == 1
PTC_TCG_KERNEL(ptc_tcg_bf16_kk, 1, 0, u16)
PTC_TCG_KERNEL(ptc_tcg_bf16_kn, 1, 1, u16)
PTC_TCG_KERNEL(ptc_tcg_bf16_gen, 1, 2, u16)
#endif
#if !defined(PTC_TCG_TYPE) || PTC_TCG_TYPE == 2
PTC_TCG_KERNEL(ptc_tcg_tf32_kk, 2, 0, float)
PTC_TCG_KERNEL(ptc_tcg_tf32_kn, 2, 1, float)
PTC_TCG_KERNEL(ptc_tcg_tf32_gen, 2, 2, float)
#endif
