// cuda_attn.cuh - the flash-attention forward kernels of the cuda backend
// (embedded as ptc_cuda_attn_text; compiled after cuda_prelude.cuh into a
// module per dtype and head dim on the first run that needs it).
//
// out = softmax(q @ k^T * scale + mask) @ v for half / bfloat16 q, k, v with
// head dims 32, 64, 128 (E == Ev), fp32 accumulation, never materialising
// the score matrix (online softmax, FlashAttention-2 style):
//  - a block of 4 warps owns 64 query rows of one batch entry; each warp
//    holds its 16 rows of q as mma A fragments in registers;
//  - key/value tiles of 64 rows go through shared memory (rows padded by
//    16 bytes; B fragments by ldmatrix, .trans for v, without bank
//    conflicts), double-buffered with cp.async for head dims <= 64 when the
//    views allow 16-byte copies; S = q k^T and O += P v use
//    mma.sync.aligned.m16n8k16 (fp32 accumulate); P is rounded to the
//    input type for the second product, like flash attention;
//  - scores are kept in the log2 domain (scale * log2 e), a row's running
//    max and sum per thread; a row with no finite score gives zeros (the
//    decomposition's safe softmax);
//  - is_causal drops key j > query i (top-left aligned) and skips tiles
//    wholly above the diagonal; an additive (same dtype) or boolean mask is
//    read through its broadcast strides; keys past S are dropped, rows past
//    L neither loaded nor stored.
// Any strides: 16-byte vector loads when the host says the views allow
// them (args.vec), element loads otherwise. The output is written with
// its row stride and a unit last stride.

#define PTC_ATTN_BM 64
#define PTC_ATTN_BN 64
#define PTC_ATTN_MAXB 6

struct ptc_attn_args {
  i64 L, S, nbatch;
  i64 batch[PTC_ATTN_MAXB];
  i64 q_bs[PTC_ATTN_MAXB], k_bs[PTC_ATTN_MAXB], v_bs[PTC_ATTN_MAXB];
  i64 m_bs[PTC_ATTN_MAXB], o_bs[PTC_ATTN_MAXB];
  i64 q_sl, q_se, k_ss, k_se, v_ss, v_se, m_sl, m_ss, o_sl;
  i32 nb, mask;        // mask: 0 none, 1 additive, 2 boolean
  i32 causal, vec;     // vec: q/k/v last stride 1, 16-byte aligned rows
  float scale_log2;    // scale * log2(e)
  i32 pad;
};

template <bool BF>
PTC_D void ptc_attn_mma(float* c, const u32* a, u32 b0, u32 b1) {
  if (BF)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a packed pair (lo in the low half).
template <bool BF>
PTC_D u32 ptc_attn_pack(float lo, float hi) {
  u32 d;
  if (BF)
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

template <bool BF>
PTC_D float ptc_attn_tof(u16 h) {
  return BF ? ptc_bf2f(h) : ptc_h2f(h);
}

// Elements (row, col) and (row, col + 1) of a [rows x E] view as a packed
// pair; zeros for row >= rows.
PTC_D u32 ptc_attn_ld2(const u16* p, i64 row, i64 rows, i64 col, i64 sr, i64 se, i32 vec) {
  if (row >= rows) return 0u;
  const u16* q = p + row * sr + col * se;
  if (vec) return *(const u32*)q;
  return (u32)q[0] | ((u32)q[se] << 16);
}

// Eight elements (row, col..col+7) as a uint4; zeros for row >= rows.
PTC_D uint4 ptc_attn_ld8(const u16* p, i64 row, i64 rows, i64 col, i64 sr, i64 se, i32 vec) {
  uint4 r = make_uint4(0u, 0u, 0u, 0u);
  if (row >= rows) return r;
  const u16* q = p + row * sr + col * se;
  if (vec) return *(const uint4*)q;
  r.x = (u32)q[0] | ((u32)q[se] << 16);
  r.y = (u32)q[2 * se] | ((u32)q[3 * se] << 16);
  r.z = (u32)q[4 * se] | ((u32)q[5 * se] << 16);
  r.w = (u32)q[6 * se] | ((u32)q[7 * se] << 16);
  return r;
}

// The shared-space address of a shared-memory pointer.
PTC_D u32 ptc_attn_smem(const void* p) {
  u32 a;
  asm("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(a) : "l"(p));
  return a;
}

PTC_D float ptc_attn_ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// One k or v tile (rows n..n+BN-1, zeros past rows) into shared memory:
// cp.async 16-byte copies when `async` (vec layouts), else through registers.
template <int D, int BN, int KS>
PTC_D void ptc_attn_tile(u16* dst, const u16* src, i64 n, i64 rows, i64 sr, i64 se, i32 vec,
                         bool async, int tid) {
#pragma unroll
  for (int i = tid; i < BN * D / 8; i += 128) {
    int row = i / (D / 8), col = (i % (D / 8)) * 8;
    if (async) {
      bool in = n + row < rows;
      const u16* g = src + (in ? (n + row) * sr + col : 0);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(
                       ptc_attn_smem(&dst[row * KS + col])),
                   "l"(g), "r"(in ? 16 : 0));
    } else {
      *(uint4*)&dst[row * KS + col] = ptc_attn_ld8(src, n + row, rows, col, sr, se, vec);
    }
  }
}

template <bool BF, int D>
PTC_D void ptc_attn_body(const u16* __restrict__ q, const u16* __restrict__ k,
                         const u16* __restrict__ v, const u16* __restrict__ mask, u16* __restrict__ o,
                         const ptc_attn_args& a) {
  constexpr int BM = PTC_ATTN_BM, BN = PTC_ATTN_BN;
  constexpr int KS = D + 8;   // K tile row stride (halves)
  constexpr int NBUF = D <= 64 ? 2 : 1;  // double-buffered k/v tiles (48 KB static limit)
  __shared__ __align__(16) u16 ksm[NBUF][BN * KS];
  __shared__ __align__(16) u16 vsm[NBUF][BN * KS];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int qr = lane >> 2, qc = (lane & 3) * 2;
  const float NEG_INF = -PTC_INF_F;
  const i64 m0 = (i64)blockIdx.x * BM;
  for (i64 bi = blockIdx.y; bi < a.nbatch; bi += gridDim.y) {
    i64 rest = bi, qo = 0, ko = 0, vo = 0, mo = 0, oo = 0;
    for (int d = a.nb - 1; d >= 0; d--) {
      i64 c = rest % a.batch[d];
      rest /= a.batch[d];
      qo += c * a.q_bs[d];
      ko += c * a.k_bs[d];
      vo += c * a.v_bs[d];
      mo += c * a.m_bs[d];
      oo += c * a.o_bs[d];
    }
    const u16* qb = q + qo;
    const u16* kb = k + ko;
    const u16* vb = v + vo;
    const i64 r0 = m0 + warp * 16 + qr, r1 = r0 + 8;
    u32 qa[D / 16][4];
#pragma unroll
    for (int s = 0; s < D / 16; s++) {
      i64 c = s * 16 + qc;
      qa[s][0] = ptc_attn_ld2(qb, r0, a.L, c, a.q_sl, a.q_se, a.vec);
      qa[s][1] = ptc_attn_ld2(qb, r1, a.L, c, a.q_sl, a.q_se, a.vec);
      qa[s][2] = ptc_attn_ld2(qb, r0, a.L, c + 8, a.q_sl, a.q_se, a.vec);
      qa[s][3] = ptc_attn_ld2(qb, r1, a.L, c + 8, a.q_sl, a.q_se, a.vec);
    }
    float acc[D / 8][4];
#pragma unroll
    for (int t = 0; t < D / 8; t++) acc[t][0] = acc[t][1] = acc[t][2] = acc[t][3] = 0.f;
    float mx0 = NEG_INF, mx1 = NEG_INF, l0 = 0.f, l1 = 0.f;
    i64 nend = a.S;
    if (a.causal && m0 + BM < nend) nend = m0 + BM;
    // vec layouts with two buffers: tile it + 1 is copied (cp.async) while
    // tile it is computed; otherwise each tile is loaded, then computed
    const bool pipe = NBUF == 2 && a.vec;
    if (pipe && nend > 0) {
      ptc_attn_tile<D, BN, KS>(ksm[0], kb, 0, a.S, a.k_ss, a.k_se, a.vec, true, tid);
      ptc_attn_tile<D, BN, KS>(vsm[0], vb, 0, a.S, a.v_ss, a.v_se, a.vec, true, tid);
      asm volatile("cp.async.commit_group;");
    }
    int it = 0;
    for (i64 n0 = 0; n0 < nend; n0 += BN, it++) {
      const int cur = pipe ? (it & 1) : 0;
      if (pipe) {
        if (n0 + BN < nend) {
          ptc_attn_tile<D, BN, KS>(ksm[cur ^ 1], kb, n0 + BN, a.S, a.k_ss, a.k_se, a.vec, true, tid);
          ptc_attn_tile<D, BN, KS>(vsm[cur ^ 1], vb, n0 + BN, a.S, a.v_ss, a.v_se, a.vec, true, tid);
          asm volatile("cp.async.commit_group;");
          asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
          asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
      } else {
        ptc_attn_tile<D, BN, KS>(ksm[0], kb, n0, a.S, a.k_ss, a.k_se, a.vec, false, tid);
        ptc_attn_tile<D, BN, KS>(vsm[0], vb, n0, a.S, a.v_ss, a.v_se, a.vec, false, tid);
      }
      __syncthreads();
      const u16* ks = ksm[cur];
      const u16* vs = vsm[cur];
      // S = q k^T for this warp's 16 rows and the tile's BN keys
      float sc[BN / 8][4];
#pragma unroll
      for (int t = 0; t < BN / 8; t++) sc[t][0] = sc[t][1] = sc[t][2] = sc[t][3] = 0.f;
#pragma unroll
      for (int s = 0; s < D / 16; s++) {
#pragma unroll
        for (int t = 0; t < BN / 8; t += 2) {
          // B fragments of key tiles t and t + 1 (ldmatrix.x4 of the k tile)
          u32 b[4];
          const u16* kp = &ks[((t + (lane >> 4)) * 8 + (lane & 7)) * KS + s * 16 + ((lane >> 3) & 1) * 8];
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                       : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                       : "r"(ptc_attn_smem(kp)));
          ptc_attn_mma<BF>(sc[t], qa[s], b[0], b[1]);
          ptc_attn_mma<BF>(sc[t + 1], qa[s], b[2], b[3]);
        }
      }
      // scale, masks, running max
      float tm0 = NEG_INF, tm1 = NEG_INF;
      // a tile inside S, wholly at or below this warp's diagonal, with no
      // mask needs no per-element test (warp-uniform)
      const bool plain = !a.mask && n0 + BN <= a.S && (!a.causal || n0 + BN - 1 <= m0 + warp * 16);
#pragma unroll
      for (int t = 0; t < BN / 8; t++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          i64 row = e < 2 ? r0 : r1, key = n0 + t * 8 + qc + (e & 1);
          float x = sc[t][e] * a.scale_log2;
          if (plain) {
          } else if (key >= a.S || (a.causal && key > row)) x = NEG_INF;
          else if (a.mask && row < a.L) {
            const u16* mp = mask + mo + row * a.m_sl + key * a.m_ss;
            if (a.mask == 2) {
              if (!*(const u8*)((const u8*)mask + mo + row * a.m_sl + key * a.m_ss)) x = NEG_INF;
            } else {
              x += ptc_attn_tof<BF>(*mp) * 1.4426950408889634f;
            }
          }
          sc[t][e] = x;
          if (e < 2) tm0 = fmaxf(tm0, x);
          else tm1 = fmaxf(tm1, x);
        }
      }
      tm0 = fmaxf(tm0, __shfl_xor_sync(0xffffffffu, tm0, 1));
      tm0 = fmaxf(tm0, __shfl_xor_sync(0xffffffffu, tm0, 2));
      tm1 = fmaxf(tm1, __shfl_xor_sync(0xffffffffu, tm1, 1));
      tm1 = fmaxf(tm1, __shfl_xor_sync(0xffffffffu, tm1, 2));
      float nm0 = fmaxf(mx0, tm0), nm1 = fmaxf(mx1, tm1);
      float u0 = nm0 == NEG_INF ? 0.f : nm0, u1 = nm1 == NEG_INF ? 0.f : nm1;
      float al0 = ptc_attn_ex2(mx0 - u0), al1 = ptc_attn_ex2(mx1 - u1);
      mx0 = nm0;
      mx1 = nm1;
      l0 *= al0;
      l1 *= al1;
#pragma unroll
      for (int t = 0; t < D / 8; t++) {
        acc[t][0] *= al0;
        acc[t][1] *= al0;
        acc[t][2] *= al1;
        acc[t][3] *= al1;
      }
      u32 pa[BN / 16][4];
#pragma unroll
      for (int t = 0; t < BN / 8; t++) {
        float p0 = ptc_attn_ex2(sc[t][0] - u0), p1 = ptc_attn_ex2(sc[t][1] - u0);
        float p2 = ptc_attn_ex2(sc[t][2] - u1), p3 = ptc_attn_ex2(sc[t][3] - u1);
        l0 += p0 + p1;
        l1 += p2 + p3;
        pa[t / 2][(t & 1) * 2 + 0] = ptc_attn_pack<BF>(p0, p1);
        pa[t / 2][(t & 1) * 2 + 1] = ptc_attn_pack<BF>(p2, p3);
      }
      // O += P v
#pragma unroll
      for (int s = 0; s < BN / 16; s++) {
#pragma unroll
        for (int t = 0; t < D / 8; t += 2) {
          // B fragments of d tiles t and t + 1: ldmatrix.x4.trans of the
          // row-major v tile (keys 16s..16s+15, dims 8t..8t+15)
          u32 b[4];
          const u16* vp = &vs[(s * 16 + (lane & 15)) * KS + t * 8 + (lane >> 4) * 8];
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                       : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3])
                       : "r"(ptc_attn_smem(vp)));
          ptc_attn_mma<BF>(acc[t], pa[s], b[0], b[1]);
          ptc_attn_mma<BF>(acc[t + 1], pa[s], b[2], b[3]);
        }
      }
      __syncthreads();  // tile `cur` is no longer read
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
    u16* ob = o + oo;
#pragma unroll
    for (int t = 0; t < D / 8; t++) {
      int c = t * 8 + qc;
      if (r0 < a.L) *(u32*)&ob[r0 * a.o_sl + c] = ptc_attn_pack<BF>(acc[t][0] * i0, acc[t][1] * i0);
      if (r1 < a.L) *(u32*)&ob[r1 * a.o_sl + c] = ptc_attn_pack<BF>(acc[t][2] * i1, acc[t][3] * i1);
    }
  }
}

#define PTC_ATTN_KERNEL(name, BF, D)                                                        \
  extern "C" __global__ void __launch_bounds__(128)                                         \
      name(const u16* q, const u16* k, const u16* v, const u16* m, u16* o, ptc_attn_args a) { \
    ptc_attn_body<BF, D>(q, k, v, m, o, a);                                                 \
  }
// The host appends one instantiation per module (cuda_attn.c), e.g.
// PTC_ATTN_KERNEL(ptc_attn, true, 64) for bfloat16 with head dim 64.
