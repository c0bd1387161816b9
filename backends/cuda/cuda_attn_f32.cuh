// cuda_attn_f32.cuh - the float32 flash-attention forward kernels of the
// cuda backend (embedded as ptc_cuda_attn_f32_text; compiled after
// cuda_prelude.cuh into one module per instantiation -- head dim, key
// tile, mask kind MASK and load path PIPE (-1: read from args), loop form
// ROLL -- on the first run that needs it; host side in cuda_attn_f32.c).
//
// out = softmax(q @ k^T * scale + mask) @ v for float32 q, k, v with head
// dims 32, 64, 128 (E == Ev), never materialising the score matrix (online
// softmax, FlashAttention-2 style), at float32 accuracy on tensor cores:
// every product is 3xTF32 (x = big + small with big = tf32(x), small =
// tf32(x - big); a*b ~ a_big*b_big + a_big*b_small + a_small*b_big, the
// dropped small*small term is below 2^-22 relative), accumulated in fp32
// by mma.sync.aligned.m16n8k8 tf32 -- what PyTorch's memory-efficient
// attention does for float32 on sm_80+ (CUTLASS OpMultiplyAddFastF32).
//  - a block of 4 warps owns 64 query rows of one batch entry; each warp
//    holds its 16 rows of q as mma A fragments (split per use): in
//    registers (ROLL 0), or (ROLL >= 1) in shared-memory slots that only
//    their own thread reads (a float4 per 8-dim step and lane), so that the
//    8-dim steps of q k^T and the 8-key steps of P v (P through slots of
//    its own) are loops of ROLL unrolled trips instead of one straight run
//    of 3 x 2 x (D / 8) x (BN / 8) mma: the same products in the same
//    order, a third of the NVRTC time (0.26 s vs 0.73 s for d64 on 2
//    cores; the q load and the output store are loops there too, the
//    output staged through the q slots);
//  - key/value tiles of BN rows (chosen by the host per head dim) go through
//    dynamic shared memory (2 buffers of k and v: 16 * BN * (D + 4) bytes;
//    ROLL: then 4 warps x 32 lanes x (D / 8 + BN / 8) float4 slots), rows
//    padded by 4 floats so that the B fragment
//    loads of k (row = key) and of v (row = key, read down a column) hit 32
//    distinct banks; double-buffered with cp.async when the views allow
//    16-byte copies, else loaded through registers;
//  - P (the exponentials) is the A operand of the second product straight
//    from the score accumulators: the keys of each 8-key step are taken in
//    the order 0,2,4,6,1,3,5,7 (a thread's C pair (2t, 2t+1) is its A pair
//    (t, t+4)), and the v B fragments read the same permuted keys;
//  - scores in the log2 domain (scale * log2 e), a row's running max and
//    sum per thread; a row with no finite score gives zeros (the safe
//    softmax of the decomposition);
//  - is_causal drops key j > query i (top-left aligned) and stops at the
//    block's diagonal; a boolean mask is read per tile into a bit set per
//    thread first, and a warp whose 16 x BN scores are all masked skips the
//    tile's products (a causal mask given as a tensor costs about what
//    is_causal does); an additive float32 mask is added per element; keys
//    past S are dropped, rows past L neither loaded nor stored.
// Any strides: q and masks element by element, k / v by cp.async 16-byte
// copies when the host says they allow them (args.vec: the PIPE
// instantiation), else element by element. The output is written with its row stride and a unit last
// stride (float2 stores when args.ovec).

#define PTC_A32_BM 64
#define PTC_A32_MAXB 6

struct ptc_attn32_args {
  i64 L, S, nbatch;
  i64 batch[PTC_A32_MAXB];
  i64 q_bs[PTC_A32_MAXB], k_bs[PTC_A32_MAXB], v_bs[PTC_A32_MAXB];
  i64 m_bs[PTC_A32_MAXB], o_bs[PTC_A32_MAXB];
  i64 q_sl, q_se, k_ss, k_se, v_ss, v_se, m_sl, m_ss, o_sl;
  i32 nb, mask;       // mask: 0 none, 1 additive (f32), 2 boolean
  i32 causal;
  float scale_log2;   // scale * log2(e)
  // (the 400 bytes above: cuda_attn_geom of cuda_attn.h, shared with the
  // f16/bf16 kernels)
  i32 vec;            // k/v last stride 1, rows and batches 16-byte aligned
  i32 ovec;           // output rows 8-byte aligned (float2 stores)
};

PTC_D u32 ptc_a32_tf32(float x) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x as big + small tf32 parts.
PTC_D void ptc_a32_split(float x, u32& big, u32& small) {
  big = ptc_a32_tf32(x);
  small = ptc_a32_tf32(x - __uint_as_float(big));
}

PTC_D void ptc_a32_mma(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// c += a * b in 3xTF32: the two small cross terms first, then big * big.
PTC_D void ptc_a32_mma3(float* c, const u32* ab, const u32* as, float b0, float b1) {
  u32 bb0, bs0, bb1, bs1;
  ptc_a32_split(b0, bb0, bs0);
  ptc_a32_split(b1, bb1, bs1);
  ptc_a32_mma(c, as, bb0, bb1);
  ptc_a32_mma(c, ab, bs0, bs1);
  ptc_a32_mma(c, ab, bb0, bb1);
}

PTC_D float ptc_a32_ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

PTC_D u32 ptc_a32_smem(const void* p) {
  u32 a;
  asm("{ .reg .u64 g; cvta.to.shared.u64 g, %1; cvt.u32.u64 %0, g; }" : "=r"(a) : "l"(p));
  return a;
}

// One k or v tile (rows n..n+BN-1 of a [rows x D] view; zeros past rows)
// into shared memory rows of KS floats: cp.async 16-byte copies when
// `async`, else element loads through registers.
template <int D, int BN, int KS>
PTC_D void ptc_a32_tile(float* dst, const float* src, i64 n, i64 rows, i64 sr, i64 se,
                        bool async, int tid) {
  if (async) {
    static_assert(BN * D / 4 % 128 == 0, "whole 16-byte copies per thread");
#pragma unroll
    for (int c = 0; c < BN * D / 4 / 128; c++) {
      const int i = tid + c * 128;
      int row = i / (D / 4), col = (i % (D / 4)) * 4;
      bool in = n + row < rows;
      const float* g = src + (in ? (n + row) * sr + col : 0);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(
                       ptc_a32_smem(&dst[row * KS + col])),
                   "l"(g), "r"(in ? 16 : 0));
    }
  } else {
    for (int i = tid; i < BN * D; i += 128) {
      int row = i / D, col = i % D;
      dst[row * KS + col] = n + row < rows ? src[(n + row) * sr + col * se] : 0.f;
    }
  }
}

// Output columns c, c + 1 of rows r0 (w.x, w.y) and r1 (w.z, w.w).
PTC_D void ptc_a32_store(float* ob, i64 r0, i64 r1, int c, float4 w, const ptc_attn32_args& a) {
  if (a.ovec) {
    if (r0 < a.L) *(float2*)&ob[r0 * a.o_sl + c] = make_float2(w.x, w.y);
    if (r1 < a.L) *(float2*)&ob[r1 * a.o_sl + c] = make_float2(w.z, w.w);
  } else {
    if (r0 < a.L) {
      ob[r0 * a.o_sl + c] = w.x;
      ob[r0 * a.o_sl + c + 1] = w.y;
    }
    if (r1 < a.L) {
      ob[r1 * a.o_sl + c] = w.z;
      ob[r1 * a.o_sl + c + 1] = w.w;
    }
  }
}

template <int D, int BN, int MASK_, int PIPE_, int ROLL>
PTC_D void ptc_attn32_body(const float* __restrict__ q, const float* __restrict__ k,
                           const float* __restrict__ v, const void* __restrict__ mask,
                           float* __restrict__ o, const ptc_attn32_args& a) {
  constexpr int BM = PTC_A32_BM, KS = D + 4;
  // MASK_ / PIPE_ -1: the mask kind / load path read from args at run time
  const int MASK = MASK_ >= 0 ? MASK_ : a.mask;
  const bool PIPE = PIPE_ >= 0 ? PIPE_ != 0 : a.vec != 0;
  extern __shared__ __align__(16) float ptc_a32_sm[];
  float* ksm = ptc_a32_sm;               // [2][BN * KS]
  float* vsm = ptc_a32_sm + 2 * BN * KS; // [2][BN * KS]
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // ROLL: this thread's q fragments ([D / 8][32 lanes] per warp) and P
  // fragments ([BN / 8][32 lanes] per warp) as float4 slots in shared
  // memory (each thread reads back only its own slots: no barrier)
  float4* qsm = (float4*)(ptc_a32_sm + 4 * BN * KS) + warp * (D / 8) * 32 + lane;
  float4* psm = (float4*)(ptc_a32_sm + 4 * BN * KS) + 4 * (D / 8) * 32 + warp * (BN / 8) * 32 + lane;
  const int g = lane >> 2, t = lane & 3;
  const float NEG_INF = -PTC_INF_F;
  const i64 m0 = (i64)blockIdx.x * BM;
  const i64 wrow = m0 + warp * 16;  // this warp's first row
  for (i64 bi = blockIdx.y; bi < a.nbatch; bi += gridDim.y) {
    i64 rest = bi, qo = 0, ko = 0, vo = 0, mo = 0, oo = 0;
#pragma unroll 1
    for (int d = a.nb - 1; d >= 0; d--) {
      i64 c = rest % a.batch[d];
      rest /= a.batch[d];
      qo += c * a.q_bs[d];
      ko += c * a.k_bs[d];
      vo += c * a.v_bs[d];
      mo += c * a.m_bs[d];
      oo += c * a.o_bs[d];
    }
    const float* qb = q + qo;
    const float* kb = k + ko;
    const float* vb = v + vo;
    const i64 r0 = wrow + g, r1 = r0 + 8;
    // q as A fragments: a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
    // (ROLL: a loop of D / 8 trips into the shared-memory slots)
    float qf[ROLL ? 1 : D / 8][4];
#pragma unroll(ROLL ? 1 : D / 8)
    for (int s = 0; s < D / 8; s++) {
      i64 c0 = (i64)(s * 8 + t) * a.q_se, c1 = (i64)(s * 8 + t + 4) * a.q_se;
      float x0 = r0 < a.L ? qb[r0 * a.q_sl + c0] : 0.f;
      float x1 = r1 < a.L ? qb[r1 * a.q_sl + c0] : 0.f;
      float x2 = r0 < a.L ? qb[r0 * a.q_sl + c1] : 0.f;
      float x3 = r1 < a.L ? qb[r1 * a.q_sl + c1] : 0.f;
      if constexpr (ROLL) {
        qsm[s * 32] = make_float4(x0, x1, x2, x3);
      } else {
        qf[s][0] = x0;
        qf[s][1] = x1;
        qf[s][2] = x2;
        qf[s][3] = x3;
      }
    }
    float acc[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
    float mx0 = NEG_INF, mx1 = NEG_INF, l0 = 0.f, l1 = 0.f;
    i64 nend = a.S;
    if (a.causal && m0 + BM < nend) nend = m0 + BM;
    const bool pipe = PIPE;
    if (pipe && nend > 0) {
      ptc_a32_tile<D, BN, KS>(ksm, kb, 0, a.S, a.k_ss, a.k_se, true, tid);
      ptc_a32_tile<D, BN, KS>(vsm, vb, 0, a.S, a.v_ss, a.v_se, true, tid);
      asm volatile("cp.async.commit_group;");
    }
    int it = 0;
    for (i64 n0 = 0; n0 < nend; n0 += BN, it++) {
      const int cur = pipe ? (it & 1) : 0;
      if (pipe) {
        if (n0 + BN < nend) {
          ptc_a32_tile<D, BN, KS>(ksm + (cur ^ 1) * BN * KS, kb, n0 + BN, a.S, a.k_ss, a.k_se,
                                  true, tid);
          ptc_a32_tile<D, BN, KS>(vsm + (cur ^ 1) * BN * KS, vb, n0 + BN, a.S, a.v_ss, a.v_se,
                                  true, tid);
          asm volatile("cp.async.commit_group;");
          asm volatile("cp.async.wait_group 1;" ::: "memory");
        } else {
          asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
      } else {
        ptc_a32_tile<D, BN, KS>(ksm, kb, n0, a.S, a.k_ss, a.k_se, false, tid);
        ptc_a32_tile<D, BN, KS>(vsm, vb, n0, a.S, a.v_ss, a.v_se, false, tid);
      }
      __syncthreads();
      const float* ks = ksm + cur * BN * KS;
      const float* vs = vsm + cur * BN * KS;
      // boolean mask bits of this thread's scores: bit 4j + 2h + e for row
      // r0 (h = 0) / r1 (h = 1), key n0 + 8j + 2t + e; 0 = dropped
      u32 mbits = 0xffffffffu;
      bool skip = a.causal && n0 > wrow + 15;  // tile wholly above this warp's diagonal
      if (MASK == 2 && !skip) {
        mbits = 0u;
        const u8* mb = (const u8*)mask + mo;
#pragma unroll
        for (int j = 0; j < BN / 8; j++)
#pragma unroll
          for (int e = 0; e < 4; e++) {
            i64 row = e < 2 ? r0 : r1, key = n0 + j * 8 + 2 * t + (e & 1);
            if (row < a.L && key < a.S && mb[row * a.m_sl + key * a.m_ss])
              mbits |= 1u << (4 * j + e);
          }
        skip = !__any_sync(0xffffffffu, mbits != 0u);
      }
      if (!skip) {
        // S = q k^T for this warp's 16 rows and the tile's BN keys
        float sc[BN / 8][4];
#pragma unroll
        for (int j = 0; j < BN / 8; j++) sc[j][0] = sc[j][1] = sc[j][2] = sc[j][3] = 0.f;
        if constexpr (ROLL) {
          // one 8-dim step a trip (ROLL trips unrolled), q from its
          // shared-memory slots (the same products in the same order as the
          // unrolled loop below)
#pragma unroll(ROLL)
          for (int s = 0; s < D / 8; s++) {
            const float4 qv = qsm[s * 32];
            u32 qbig[4], qsmall[4];
            ptc_a32_split(qv.x, qbig[0], qsmall[0]);
            ptc_a32_split(qv.y, qbig[1], qsmall[1]);
            ptc_a32_split(qv.z, qbig[2], qsmall[2]);
            ptc_a32_split(qv.w, qbig[3], qsmall[3]);
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
              const float* kp = &ks[(j * 8 + g) * KS + s * 8 + t];
              ptc_a32_mma3(sc[j], qbig, qsmall, kp[0], kp[4]);
            }
          }
        } else {
#pragma unroll
          for (int s = 0; s < D / 8; s++) {
            u32 qbig[4], qsmall[4];
#pragma unroll
            for (int i = 0; i < 4; i++) ptc_a32_split(qf[s][i], qbig[i], qsmall[i]);
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
              // B (k = dim, n = key): b0 (t, g), b1 (t + 4, g)
              const float* kp = &ks[(j * 8 + g) * KS + s * 8 + t];
              ptc_a32_mma3(sc[j], qbig, qsmall, kp[0], kp[4]);
            }
          }
        }
        // scale, masks, running max
        float tm0 = NEG_INF, tm1 = NEG_INF;
        const bool plain = MASK == 0 && n0 + BN <= a.S && (!a.causal || n0 + BN - 1 <= wrow);
        // keys past S or (causal) past the row dropped: tile-relative key kk
        // < lim0 (row r0) / lim1 (row r1), 32-bit
        i64 e0 = a.S - n0, e1 = e0;
        if (a.causal) {
          e0 = min(e0, r0 - n0 + 1);
          e1 = min(e1, r1 - n0 + 1);
        }
        const int lim0 = (int)max((i64)0, min(e0, (i64)BN));
        const int lim1 = (int)max((i64)0, min(e1, (i64)BN));
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
#pragma unroll
          for (int e = 0; e < 4; e++) {
            const int kk = j * 8 + 2 * t + (e & 1);
            float x = sc[j][e] * a.scale_log2;
            if (plain) {
            } else if (kk >= (e < 2 ? lim0 : lim1)) {
              x = NEG_INF;
            } else if (MASK == 2) {
              if (!((mbits >> (4 * j + e)) & 1u)) x = NEG_INF;
            } else if (MASK == 1 && (e < 2 ? r0 : r1) < a.L) {
              const i64 row = e < 2 ? r0 : r1, key = n0 + kk;
              x += ((const float*)mask)[mo + row * a.m_sl + key * a.m_ss] * 1.4426950408889634f;
            }
            sc[j][e] = x;
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
        float al0 = ptc_a32_ex2(mx0 - u0), al1 = ptc_a32_ex2(mx1 - u1);
        mx0 = nm0;
        mx1 = nm1;
        l0 *= al0;
        l1 *= al1;
#pragma unroll
        for (int n = 0; n < D / 8; n++) {
          acc[n][0] *= al0;
          acc[n][1] *= al0;
          acc[n][2] *= al1;
          acc[n][3] *= al1;
        }
        // O += P v, 8 keys a step; P's A fragment is the score tile's C
        // fragment with the keys permuted (a0 = c0, a1 = c2, a2 = c1, a3 = c3)
        if constexpr (ROLL) {
          // P into this thread's slots (A fragment order), then one 8-key
          // step a trip, ROLL trips unrolled (the same products in the same
          // order as below)
#pragma unroll
          for (int j = 0; j < BN / 8; j++) {
            float p0 = ptc_a32_ex2(sc[j][0] - u0), p1 = ptc_a32_ex2(sc[j][1] - u0);
            float p2 = ptc_a32_ex2(sc[j][2] - u1), p3 = ptc_a32_ex2(sc[j][3] - u1);
            l0 += p0 + p1;
            l1 += p2 + p3;
            psm[j * 32] = make_float4(p0, p2, p1, p3);
          }
#pragma unroll(ROLL)
          for (int j = 0; j < BN / 8; j++) {
            const float4 pv = psm[j * 32];
            u32 pbig[4], psmall[4];
            ptc_a32_split(pv.x, pbig[0], psmall[0]);
            ptc_a32_split(pv.y, pbig[1], psmall[1]);
            ptc_a32_split(pv.z, pbig[2], psmall[2]);
            ptc_a32_split(pv.w, pbig[3], psmall[3]);
#pragma unroll
            for (int n = 0; n < D / 8; n++) {
              const float* vp = &vs[(j * 8 + 2 * t) * KS + n * 8 + g];
              ptc_a32_mma3(acc[n], pbig, psmall, vp[0], vp[KS]);
            }
          }
        } else {
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
          float p0 = ptc_a32_ex2(sc[j][0] - u0), p1 = ptc_a32_ex2(sc[j][1] - u0);
          float p2 = ptc_a32_ex2(sc[j][2] - u1), p3 = ptc_a32_ex2(sc[j][3] - u1);
          l0 += p0 + p1;
          l1 += p2 + p3;
          u32 pbig[4], psmall[4];
          ptc_a32_split(p0, pbig[0], psmall[0]);
          ptc_a32_split(p2, pbig[1], psmall[1]);
          ptc_a32_split(p1, pbig[2], psmall[2]);
          ptc_a32_split(p3, pbig[3], psmall[3]);
#pragma unroll
          for (int n = 0; n < D / 8; n++) {
            // B (k = key, n = dim): b0 = v[key 2t][g], b1 = v[key 2t + 1][g]
            const float* vp = &vs[(j * 8 + 2 * t) * KS + n * 8 + g];
            ptc_a32_mma3(acc[n], pbig, psmall, vp[0], vp[KS]);
          }
        }
        }
      }
      __syncthreads();  // tile `cur` is no longer read
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
    float* ob = o + oo;
    if constexpr (ROLL) {
      // through the q slots (q is no longer read), then a loop of D / 8 trips
#pragma unroll
      for (int n = 0; n < D / 8; n++)
        qsm[n * 32] = make_float4(acc[n][0] * i0, acc[n][1] * i0, acc[n][2] * i1, acc[n][3] * i1);
#pragma unroll 1
      for (int n = 0; n < D / 8; n++) ptc_a32_store(ob, r0, r1, n * 8 + 2 * t, qsm[n * 32], a);
    } else {
#pragma unroll
      for (int n = 0; n < D / 8; n++)
        ptc_a32_store(ob, r0, r1, n * 8 + 2 * t,
                      make_float4(acc[n][0] * i0, acc[n][1] * i0, acc[n][2] * i1, acc[n][3] * i1), a);
    }
  }
}

#define PTC_ATTN32_KERNEL(name, D, BN, MINB, MASK, PIPE, ROLL)                                \
  extern "C" __global__ void __launch_bounds__(128, MINB)                                     \
      name(const float* q, const float* k, const float* v, const void* m, float* o,           \
           ptc_attn32_args a) {                                                               \
    ptc_pdl_enter();                                                                          \
    ptc_attn32_body<D, BN, MASK, PIPE, ROLL>(q, k, v, m, o, a);                               \
  }
// The host appends one instantiation per module (cuda_attn_f32.c): name,
// head dim, key tile rows, minimum blocks per SM (bounds the registers),
// mask kind (args.mask; -1: any, read at run time), cp.async k/v tiles
// (args.vec: 1 / 0, -1: read at run time), loop form (0: straight-line
// products, q in registers; n >= 1: loops of n unrolled trips, q and P in
// shared-memory slots), e.g.
// PTC_ATTN32_KERNEL(ptc_attn_f32_d64, 64, 32, 3, 0, 1, 1).
