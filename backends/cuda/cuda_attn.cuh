// cuda_attn.cuh - the flash-attention forward kernels of the cuda backend
// (embedded as ptc_cuda_attn_text; compiled after cuda_prelude.cuh into a
// module per dtype and head dim on the first run that needs it).
//
// out = softmax(q @ k^T * scale + mask) @ v for half / bfloat16 q, k, v with
// head dims 32, 64, 128 (E == Ev), fp32 accumulation, never materialising
// the score matrix (online softmax, FlashAttention-2 style):
//  - a block of 4 warps owns 64 * MT query rows of one batch entry, each
//    warp 16 * MT rows (MT = 2: every k/v fragment read from shared memory
//    feeds two mma); q as mma A fragments in registers (or, for head dim
//    128, a shared q tile read at each step to spare registers);
//  - key/value tiles of BN rows go through shared memory (dynamic; rows
//    padded by 16 bytes: B fragments by ldmatrix, .trans for v, without
//    bank conflicts), double-buffered with cp.async (tile j + 1 copied
//    while tile j is computed, one barrier per tile) when the views allow
//    16-byte copies; S = q k^T and O += P v use mma.sync.aligned.m16n8k16
//    (fp32 accumulate); P goes from the S accumulators straight into A
//    fragments (no shared memory), rounded to the input type like flash
//    attention;
//  - scores are kept in the log2 domain (scale * log2 e, folded into the
//    exponent's fma on unmasked tiles), a row's running max and sum per
//    thread; a row with no finite score gives zeros (the decomposition's
//    safe softmax);
//  - is_causal drops key j > query i (top-left aligned), skips tiles
//    wholly above the diagonal (per block and per warp), tests elements
//    only on diagonal tiles, and starts the row tiles with the most work
//    first; an additive (same dtype) mask is read per element through its
//    broadcast strides; a boolean mask is read per key tile into a bit set
//    per row (16-byte loads when args.mvec), then a warp whose rows drop
//    every key of the tile skips it and one whose rows keep every key runs
//    the unmasked path (a causal mask given as a tensor, as Hugging Face
//    models pass it, costs a load and a vote per dropped tile); with
//    args.mvec bit 1 (PTC_CUDA_ATTN_MRANGE=1) a block first finds the
//    range of key tiles its rows keep and loads only those; keys past S
//    are dropped, rows past L neither loaded nor stored.
// Any strides: 16-byte vector loads and cp.async when the host says the
// views allow them (args.vec: the PIPE instantiation), element loads
// otherwise. The output is written with its row stride and a unit last
// stride. The host compiles only the instantiation a call needs (dtype,
// head dim, tile shape, mask kind, PIPE): each is its own module.

#define PTC_ATTN_MAXB 6

// The first 400 bytes are the geometry shared with the float32 kernels
// (cuda_attn_geom of cuda_attn.h).
struct ptc_attn_args {
  i64 L, S, nbatch;
  i64 batch[PTC_ATTN_MAXB];
  i64 q_bs[PTC_ATTN_MAXB], k_bs[PTC_ATTN_MAXB], v_bs[PTC_ATTN_MAXB];
  i64 m_bs[PTC_ATTN_MAXB], o_bs[PTC_ATTN_MAXB];
  i64 q_sl, q_se, k_ss, k_se, v_ss, v_se, m_sl, m_ss, o_sl;
  i32 nb, mask;        // mask: 0 none, 1 additive, 2 boolean
  i32 causal;
  float scale_log2;    // scale * log2(e)
  i32 vec;             // q/k/v last stride 1, 16-byte aligned rows (== PIPE)
  i32 mvec;            // boolean mask: bit 0 last stride 1, rows and base 16-byte
                       // aligned; bit 1 (with bit 0) find the block's kept key tiles
};

template <bool BF>
PTC_D void ptc_attn_mma(float* c, const u32* a, u32 b0, u32 b1) {
  if (BF)
    asm(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm(
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

// ldmatrix .x4 (four 8x8 b16 matrices; lane i gives the row address of
// matrix i / 8), plain or transposed.
// `p` is a shared-space byte address (ptc_attn_smem).
PTC_D void ptc_attn_ldsm(u32* r, u32 p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p));
}
PTC_D void ptc_attn_ldsm_t(u32* r, u32 p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p));
}

// ROWS rows (n..n+ROWS-1, zeros past `rows`) of a [rows x D] view into
// shared memory at dst (generic pointer) = sdst (shared-space address),
// row stride KS halves, by the block's 128 threads:
// cp.async 16-byte copies when `async` (vec layouts; the caller commits
// and waits), else through registers.
template <int D, int ROWS, int KS>
PTC_D void ptc_attn_tile(u16* dst, u32 sdst, const u16* src, i64 n, i64 rows, i64 sr, i64 se,
                         i32 vec, bool async, int tid) {
  constexpr int CPR = D / 8;                // 16-byte chunks per row
  constexpr int STEP = 128 / CPR;           // rows per pass of the block
  static_assert(ROWS % STEP == 0, "tile rows");
  const int col = (tid % CPR) * 8, row0 = tid / CPR;
#pragma unroll
  for (int j = 0; j < ROWS / STEP; j++) {
    const int r = row0 + j * STEP;
    if (async) {
      const bool in = n + r < rows;
      const u16* g = src + (in ? (n + r) * sr + col : 0);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(sdst + (r * KS + col) * 2),
                   "l"(g), "r"(in ? 16 : 0));
    } else {
      *(uint4*)&dst[r * KS + col] = ptc_attn_ld8(src, n + r, rows, col, sr, se, vec);
    }
  }
}

// ---- the pieces of one key tile, per warp (MT m16 tiles of 16 rows) ----
// Fragment layouts are those of mma.m16n8k16: lane = 4 * qr + qc / 2 holds
// rows qr and qr + 8, columns qc and qc + 1 of each 8-column block.

// Batch entry bi's element offsets of q, k, v, mask and out.
PTC_D void ptc_attn_offsets(const ptc_attn_args& a, i64 bi, i64* off) {
  i64 rest = bi;
  off[0] = off[1] = off[2] = off[3] = off[4] = 0;
  // once per batch entry: not unrolled (NVVM would copy the 64-bit divisions)
#pragma unroll 1
  for (int d = a.nb - 1; d >= 0; d--) {
    i64 c = rest % a.batch[d];
    rest /= a.batch[d];
    off[0] += c * a.q_bs[d];
    off[1] += c * a.k_bs[d];
    off[2] += c * a.v_bs[d];
    off[3] += c * a.m_bs[d];
    off[4] += c * a.o_bs[d];
  }
}

// Bit k of the result = byte k of w is nonzero (k = 0..3).
PTC_D u32 ptc_attn_b4(u32 w) {
  w |= w >> 4;
  w |= w >> 2;
  w |= w >> 1;
  return (((w & 0x01010101u) * 0x01020408u) >> 24) & 15u;
}

// The keep bits of a boolean mask for this lane's rows w0 + mt * 16 + h * 8
// + qr and the BN keys from n0: bit j of ms[mt][h] = key n0 + j kept (0
// past S and for rows past L). Each lane of a quad reads BN / 4 keys of
// the row (one 16- or 8-byte load when mvec and inside S), then the quad
// swaps its parts (warp-uniform: every lane runs the shuffles).
template <int BN, int MT>
PTC_D void ptc_attn_mbits(u64 (&ms)[MT][2], const u8* mb, const ptc_attn_args& a, i64 n0, i64 w0,
                          int lane) {
  static_assert(BN == 32 || BN == 64, "boolean masks: key tiles of 32 or 64");
  constexpr int PB = BN / 4;
  const int qr = lane >> 2, c = lane & 3;
  const i64 k0 = n0 + c * PB;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int h = 0; h < 2; h++) {
      const i64 r = w0 + mt * 16 + h * 8 + qr;
      u32 p = 0;
      if (r < a.L && k0 < a.S) {
        const u8* row = mb + r * a.m_sl + k0 * a.m_ss;
        if ((a.mvec & 1) && k0 + PB <= a.S) {
          if (PB == 16) {
            const uint4 w = *(const uint4*)row;
            p = ptc_attn_b4(w.x) | ptc_attn_b4(w.y) << 4 | ptc_attn_b4(w.z) << 8 | ptc_attn_b4(w.w) << 12;
          } else {
            const uint2 w = *(const uint2*)row;
            p = ptc_attn_b4(w.x) | ptc_attn_b4(w.y) << 4;
          }
        } else {
          const int n = a.S - k0 < PB ? (int)(a.S - k0) : PB;
#pragma unroll 1
          for (int j = 0; j < n; j++) p |= (u32)(row[j * a.m_ss] != 0) << j;
        }
      }
      const u64 x1 = __shfl_xor_sync(0xffffffffu, p, 1), x2 = __shfl_xor_sync(0xffffffffu, p, 2);
      const u64 x3 = __shfl_xor_sync(0xffffffffu, p, 3);
      ms[mt][h] = (u64)p << (PB * c) | x1 << (PB * (c ^ 1)) | x2 << (PB * (c ^ 2)) | x3 << (PB * (c ^ 3));
    }
}

// The key tiles [*lo, *hi) holding every key that some row m0 .. m0 + BM
// - 1 (< L) of a boolean mask keeps (mvec bit 0 layouts: 16-byte loads of
// the block's rows, then a block-wide min / max; a chunk crossing S counts
// as kept): a causal or padding mask then costs the block only the key
// tiles it keeps. Every thread of the block calls it (two barriers). As
// written each thread's loads wait one after another (H100: slower than
// the per-tile votes alone), hence off by default (args.mvec bit 1).
template <int BM, int BN>
PTC_D void ptc_attn_mrange(const u8* mb, const ptc_attn_args& a, i64 m0, int ntiles, int tid,
                           int* lo, int* hi) {
  __shared__ int kr[2];
  if (tid == 0) {
    kr[0] = 0x7fffffff;
    kr[1] = -1;
  }
  __syncthreads();
  const i64 rows = a.L - m0 < BM ? a.L - m0 : BM, nch = (a.S + 15) / 16;
  int klo = 0x7fffffff, khi = -1;
  for (i64 ch = tid; ch < rows * nch; ch += 128) {
    const i64 r = ch / nch, c = ch - r * nch;
    bool any = true;
    if (c * 16 + 16 <= a.S) {
      const uint4 w = *(const uint4*)(mb + (m0 + r) * a.m_sl + c * 16);
      any = (w.x | w.y | w.z | w.w) != 0u;
    }
    if (any) {
      klo = min(klo, (int)(c * 16));
      khi = max(khi, (int)(c * 16 + 15));
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    klo = min(klo, __shfl_xor_sync(0xffffffffu, klo, o));
    khi = max(khi, __shfl_xor_sync(0xffffffffu, khi, o));
  }
  if ((tid & 31) == 0) {
    atomicMin(&kr[0], klo);
    atomicMax(&kr[1], khi);
  }
  __syncthreads();
  *lo = kr[1] < 0 ? 0 : kr[0] / BN;
  *hi = kr[1] < 0 ? 0 : min(ntiles, kr[1] / BN + 1);
}

// q rows w0 .. w0 + 16 * MT - 1 as A fragments (zeros past L); VEC: 32-bit
// loads (args.vec).
template <int D, int MT, bool VEC>
PTC_D void ptc_attn_qfrag(u32 (&qa)[MT][D / 16][4], const u16* qb, const ptc_attn_args& a, i64 w0,
                          int qr, int qc) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    const i64 r0 = w0 + mt * 16 + qr, r1 = r0 + 8;
#pragma unroll
    for (int s = 0; s < D / 16; s++) {
      const i64 c = s * 16 + qc;
      qa[mt][s][0] = ptc_attn_ld2(qb, r0, a.L, c, a.q_sl, a.q_se, VEC);
      qa[mt][s][1] = ptc_attn_ld2(qb, r1, a.L, c, a.q_sl, a.q_se, VEC);
      qa[mt][s][2] = ptc_attn_ld2(qb, r0, a.L, c + 8, a.q_sl, a.q_se, VEC);
      qa[mt][s][3] = ptc_attn_ld2(qb, r1, a.L, c + 8, a.q_sl, a.q_se, VEC);
    }
  }
}

// sc = q k^T for the warp's rows and the BN keys of the k tile at shared
// address ks (this lane's ldmatrix row included); q from registers (QREG)
// or from the shared q tile at lq.
template <bool BF, int D, int BN, int MT, bool QREG, int KS, int QA>
PTC_D void ptc_attn_qk(float (&sc)[MT][BN / 8][4], const u32 (&qa)[QA][QREG ? D / 16 : 1][4], u32 lq,
                       u32 ks) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int t = 0; t < BN / 8; t++) sc[mt][t][0] = sc[mt][t][1] = sc[mt][t][2] = sc[mt][t][3] = 0.f;
#pragma unroll
  for (int s = 0; s < D / 16; s++) {
    u32 qf[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
      if (QREG) {
        qf[mt][0] = qa[QREG ? mt : 0][QREG ? s : 0][0];
        qf[mt][1] = qa[QREG ? mt : 0][QREG ? s : 0][1];
        qf[mt][2] = qa[QREG ? mt : 0][QREG ? s : 0][2];
        qf[mt][3] = qa[QREG ? mt : 0][QREG ? s : 0][3];
      } else {
        ptc_attn_ldsm(qf[mt], lq + (mt * 16 * KS + s * 16) * 2);
      }
    }
#pragma unroll
    for (int t = 0; t < BN / 8; t += 2) {
      // B fragments of key blocks t and t + 1
      u32 b[4];
      ptc_attn_ldsm(b, ks + (t * 8 * KS + s * 16) * 2);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        ptc_attn_mma<BF>(sc[mt][t], qf[mt], b[0], b[1]);
        ptc_attn_mma<BF>(sc[mt][t + 1], qf[mt], b[2], b[3]);
      }
    }
  }
}

// Scores in the log2 domain are sc * f, f returned: a tile inside S,
// wholly at or below the diagonal of the warp's rows (from w0), with no
// mask (or a boolean one keeping every key of the warp's rows: mfull)
// keeps the raw products (f = scale * log2 e, folded into the exponent's
// fma); other tiles are scaled, masked and tested per element here (f =
// 1): keys past S, (causal) after the row or dropped by the boolean mask
// (bits ms of ptc_attn_mbits) give -inf; MASK 1 adds the additive mask.
template <bool BF, int BN, int MT, int MASK>
PTC_D float ptc_attn_scale(float (&sc)[MT][BN / 8][4], const ptc_attn_args& a, const u16* mask,
                           i64 mo, const u64 (&ms)[MT][2], bool mfull, i64 n0, i64 w0, int qr,
                           int qc) {
  const float NEG_INF = -PTC_INF_F;
  if ((MASK == 0 || (MASK == 2 && mfull)) && n0 + BN <= a.S && (!a.causal || n0 + BN - 1 <= w0) &&
      a.scale_log2 > 0.f)
    return a.scale_log2;
  // key n0 + kr is dropped when kr >= kl or (causal) kr - rr > dg for row
  // w0 + rr (32-bit tests; the bounds clamped, |kr - rr| < 2^20)
  const i64 kl64 = a.S - n0, dg64 = a.causal ? w0 - n0 : (i64)1 << 20;
  const int kl = kl64 < BN ? (int)kl64 : BN;
  const int dg = dg64 > (1 << 20) ? 1 << 20 : dg64 < -(1 << 20) ? -(1 << 20) : (int)dg64;
#pragma unroll
  for (int mt = 0; mt < MT; mt++)
#pragma unroll
    for (int t = 0; t < BN / 8; t++)
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int rr = mt * 16 + qr + (e >> 1) * 8, kr = t * 8 + qc + (e & 1);
        float x = sc[mt][t][e] * a.scale_log2;
        if (kr >= kl || kr - rr > dg || (MASK == 2 && !((ms[mt][e >> 1] >> kr) & 1u))) {
          x = NEG_INF;
        } else if (MASK == 1 && w0 + rr < a.L) {
          const i64 mi = mo + (w0 + rr) * a.m_sl + (n0 + kr) * a.m_ss;
          x += ptc_attn_tof<BF>(mask[mi]) * 1.4426950408889634f;
        }
        sc[mt][t][e] = x;
      }
  return 1.f;
}

// Online softmax step: running max mx and sum l per row (mx in the log2
// domain), acc rescaled, P = 2^(sc * f - max) into A fragments pa (the C
// fragments of key blocks 2j, 2j + 1 are the A fragment of keys
// 16j..16j+15; P rounded to the input type like flash attention).
template <bool BF, int D, int BN, int MT>
PTC_D void ptc_attn_softmax(float (&sc)[MT][BN / 8][4], float f, float (&mx)[MT][2],
                            float (&l)[MT][2], float (&acc)[MT][D / 8][4],
                            u32 (&pa)[MT][BN / 16][4]) {
  const float NEG_INF = -PTC_INF_F;
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float tm0 = NEG_INF, tm1 = NEG_INF;
#pragma unroll
    for (int t = 0; t < BN / 8; t++) {
      tm0 = fmaxf(tm0, fmaxf(sc[mt][t][0], sc[mt][t][1]));
      tm1 = fmaxf(tm1, fmaxf(sc[mt][t][2], sc[mt][t][3]));
    }
    tm0 = fmaxf(tm0, __shfl_xor_sync(0xffffffffu, tm0, 1));
    tm0 = fmaxf(tm0, __shfl_xor_sync(0xffffffffu, tm0, 2));
    tm1 = fmaxf(tm1, __shfl_xor_sync(0xffffffffu, tm1, 1));
    tm1 = fmaxf(tm1, __shfl_xor_sync(0xffffffffu, tm1, 2));
    const float nm0 = fmaxf(mx[mt][0], tm0 * f), nm1 = fmaxf(mx[mt][1], tm1 * f);
    // a row with no finite score so far subtracts 0 (its P and sum stay 0)
    const float u0 = nm0 == NEG_INF ? 0.f : nm0, u1 = nm1 == NEG_INF ? 0.f : nm1;
    const float al0 = ptc_attn_ex2(mx[mt][0] - u0), al1 = ptc_attn_ex2(mx[mt][1] - u1);
    mx[mt][0] = nm0;
    mx[mt][1] = nm1;
#pragma unroll
    for (int t = 0; t < D / 8; t++) {
      acc[mt][t][0] *= al0;
      acc[mt][t][1] *= al0;
      acc[mt][t][2] *= al1;
      acc[mt][t][3] *= al1;
    }
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int t = 0; t < BN / 8; t++) {
      const float p0 = ptc_attn_ex2(fmaf(sc[mt][t][0], f, -u0));
      const float p1 = ptc_attn_ex2(fmaf(sc[mt][t][1], f, -u0));
      const float p2 = ptc_attn_ex2(fmaf(sc[mt][t][2], f, -u1));
      const float p3 = ptc_attn_ex2(fmaf(sc[mt][t][3], f, -u1));
      s0 += p0 + p1;
      s1 += p2 + p3;
      pa[mt][t / 2][(t & 1) * 2 + 0] = ptc_attn_pack<BF>(p0, p1);
      pa[mt][t / 2][(t & 1) * 2 + 1] = ptc_attn_pack<BF>(p2, p3);
    }
    l[mt][0] = l[mt][0] * al0 + s0;
    l[mt][1] = l[mt][1] * al1 + s1;
  }
}

// acc += P v for the v tile at shared address vs (this lane's row included).
template <bool BF, int D, int BN, int MT, int KS>
PTC_D void ptc_attn_pv(float (&acc)[MT][D / 8][4], const u32 (&pa)[MT][BN / 16][4], u32 vs) {
#pragma unroll
  for (int s = 0; s < BN / 16; s++) {
#pragma unroll
    for (int t = 0; t < D / 8; t += 2) {
      // B fragments of d blocks t and t + 1 (keys 16s..16s+15)
      u32 b[4];
      ptc_attn_ldsm_t(b, vs + (s * 16 * KS + t * 8) * 2);
#pragma unroll
      for (int mt = 0; mt < MT; mt++) {
        ptc_attn_mma<BF>(acc[mt][t], pa[mt][s], b[0], b[1]);
        ptc_attn_mma<BF>(acc[mt][t + 1], pa[mt][s], b[2], b[3]);
      }
    }
  }
}

// out rows w0.. = acc / l (zeros for a row with no finite score).
template <bool BF, int D, int MT>
PTC_D void ptc_attn_store(u16* ob, const ptc_attn_args& a, float (&acc)[MT][D / 8][4],
                          float (&l)[MT][2], i64 w0, int qr, int qc) {
#pragma unroll
  for (int mt = 0; mt < MT; mt++) {
    float l0 = l[mt][0], l1 = l[mt][1];
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float i0 = l0 > 0.f ? 1.f / l0 : 0.f, i1 = l1 > 0.f ? 1.f / l1 : 0.f;
    const i64 r0 = w0 + mt * 16 + qr, r1 = r0 + 8;
#pragma unroll
    for (int t = 0; t < D / 8; t++) {
      const int c = t * 8 + qc;
      if (r0 < a.L) *(u32*)&ob[r0 * a.o_sl + c] = ptc_attn_pack<BF>(acc[mt][t][0] * i0, acc[mt][t][1] * i0);
      if (r1 < a.L) *(u32*)&ob[r1 * a.o_sl + c] = ptc_attn_pack<BF>(acc[mt][t][2] * i1, acc[mt][t][3] * i1);
    }
  }
}

// The block's shared memory (dynamic, sized by the host as cuda_attn.c's
// attn_smem_bytes): [q tile BM x KS unless QREG][2 k tiles BN x KS][2 v
// tiles], KS = D + 8 halves (a 16-byte pad: ldmatrix rows hit distinct
// banks).
extern __shared__ __align__(16) u16 ptc_attn_sm[];

// The kernel body: a block of 4 warps owns BM = 64 * MT query rows of one
// batch entry, warp w rows w * 16 * MT .. + 16 * MT - 1. Key/value tiles
// of BN rows; PIPE (vec layouts) double-buffers them with cp.async (tile
// it + 1 copied while tile it is computed), else each tile goes through
// registers. MASK: 0 none, 1 additive, 2 boolean (args.mask agrees).
template <bool BF, int D, int BN, int MT, bool QREG, int MASK, bool PIPE>
PTC_D void ptc_attn_body(const u16* __restrict__ q, const u16* __restrict__ k,
                         const u16* __restrict__ v, const u16* __restrict__ mask, u16* __restrict__ o,
                         const ptc_attn_args& a) {
  constexpr int BM = 64 * MT, WR = 16 * MT;  // rows per block, per warp
  constexpr int KS = D + 8;
  u16* const qsm = ptc_attn_sm;
  u16* const ksm = ptc_attn_sm + (QREG ? 0 : BM * KS);
  u16* const vsm = ksm + 2 * BN * KS;
  const u32 sq = ptc_attn_smem(qsm), sk = ptc_attn_smem(ksm), sv = ptc_attn_smem(vsm);
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int qr = lane >> 2, qc = (lane & 3) * 2;
  // this lane's ldmatrix row addresses (bytes) in the q, k and v tiles
  const u32 lq = sq + ((warp * WR + (lane & 15)) * KS + (lane >> 4) * 8) * 2;
  const u32 lk = (((lane >> 4) * 8 + (lane & 7)) * KS + ((lane >> 3) & 1) * 8) * 2;
  const u32 lv = ((lane & 15) * KS + (lane >> 4) * 8) * 2;
  const float NEG_INF = -PTC_INF_F;
  // causal: the row tiles with the most key tiles first
  const i64 m0 = (i64)(a.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x) * BM;
  const i64 w0 = m0 + warp * WR;  // this warp's first row
  constexpr bool pipe = PIPE;
  for (i64 bi = blockIdx.y; bi < a.nbatch; bi += gridDim.y) {
    i64 off[5];
    ptc_attn_offsets(a, bi, off);
    const u16* qb = q + off[0];
    const u16* kb = k + off[1];
    const u16* vb = v + off[2];
    u32 qa[QREG ? MT : 1][QREG ? D / 16 : 1][4];
    if constexpr (QREG) ptc_attn_qfrag<D, MT, PIPE>(qa, qb, a, w0, qr, qc);
    float acc[MT][D / 8][4];
    float mx[MT][2], l[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
      for (int t = 0; t < D / 8; t++) acc[mt][t][0] = acc[mt][t][1] = acc[mt][t][2] = acc[mt][t][3] = 0.f;
      mx[mt][0] = mx[mt][1] = NEG_INF;
      l[mt][0] = l[mt][1] = 0.f;
    }
    i64 nend = a.S;
    if (a.causal && m0 + BM < nend) nend = m0 + BM;
    int ntiles = (int)((nend + BN - 1) / BN);  // the host keeps S < 2^31
    int t0 = 0;  // key tiles t0 .. ntiles - 1
    if constexpr (MASK == 2)
      if (a.mvec & 2) ptc_attn_mrange<BM, BN>((const u8*)mask + off[3], a, m0, ntiles, tid, &t0, &ntiles);
    if (pipe && ntiles > t0) {
      if (!QREG) ptc_attn_tile<D, BM, KS>(qsm, sq, qb, m0, a.L, a.q_sl, a.q_se, PIPE, true, tid);
      ptc_attn_tile<D, BN, KS>(ksm, sk, kb, (i64)t0 * BN, a.S, a.k_ss, a.k_se, PIPE, true, tid);
      ptc_attn_tile<D, BN, KS>(vsm, sv, vb, (i64)t0 * BN, a.S, a.v_ss, a.v_se, PIPE, true, tid);
      asm volatile("cp.async.commit_group;");
    }
    for (int it = t0; it < ntiles; it++) {
      const i64 n0 = (i64)it * BN;
      const int cur = pipe ? ((it - t0) & 1) : 0;
      if (pipe) {
        asm volatile("cp.async.wait_group 0;" ::: "memory");
        __syncthreads();  // tile it landed; tile it - 1 is no longer read
        if (it + 1 < ntiles) {
          const u32 nb = (cur ^ 1) * BN * KS;
          ptc_attn_tile<D, BN, KS>(ksm, sk + nb * 2, kb, n0 + BN, a.S, a.k_ss, a.k_se, PIPE, true, tid);
          ptc_attn_tile<D, BN, KS>(vsm, sv + nb * 2, vb, n0 + BN, a.S, a.v_ss, a.v_se, PIPE, true, tid);
          asm volatile("cp.async.commit_group;");
        }
      } else {
        __syncthreads();  // tile it - 1 is no longer read
        if (!QREG && it == t0)
          ptc_attn_tile<D, BM, KS>(qsm, sq, qb, m0, a.L, a.q_sl, a.q_se, PIPE, false, tid);
        ptc_attn_tile<D, BN, KS>(ksm, sk, kb, n0, a.S, a.k_ss, a.k_se, PIPE, false, tid);
        ptc_attn_tile<D, BN, KS>(vsm, sv, vb, n0, a.S, a.v_ss, a.v_se, PIPE, false, tid);
        __syncthreads();
      }
      // a warp whose rows are all past L, or (causal) all before the tile's
      // first key, has nothing to add (warp-uniform)
      if (w0 >= a.L || (a.causal && n0 > w0 + WR - 1)) continue;
      u64 ms[MT][2];
      bool mfull = false;
      if constexpr (MASK == 2) {
        // skip a tile the mask drops for all the warp's rows; a tile it
        // keeps whole (rows past L aside) needs no per-element test
        ptc_attn_mbits<BN, MT>(ms, (const u8*)mask + off[3], a, n0, w0, lane);
        const u64 all = ~0ull >> (64 - BN);
        bool any = false;
        mfull = true;
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
          for (int h = 0; h < 2; h++)
            if (w0 + mt * 16 + h * 8 + qr < a.L) {
              any = any || ms[mt][h] != 0;
              mfull = mfull && ms[mt][h] == all;
            }
        mfull = __all_sync(0xffffffffu, mfull);
        if (!__any_sync(0xffffffffu, any)) continue;
      }
      float sc[MT][BN / 8][4];
      u32 pa[MT][BN / 16][4];
      ptc_attn_qk<BF, D, BN, MT, QREG, KS>(sc, qa, lq, sk + cur * BN * KS * 2 + lk);
      const float f = ptc_attn_scale<BF, BN, MT, MASK>(sc, a, mask, off[3], ms, mfull, n0, w0, qr, qc);
      ptc_attn_softmax<BF, D, BN, MT>(sc, f, mx, l, acc, pa);
      ptc_attn_pv<BF, D, BN, MT, KS>(acc, pa, sv + cur * BN * KS * 2 + lv);
    }
    ptc_attn_store<BF, D, MT>(o + off[4], a, acc, l, w0, qr, qc);
    __syncthreads();  // the next batch entry's tiles reuse the buffers
  }
}

#define PTC_ATTN_KERNEL(name, BF, D, BN, MT, QREG, MASK, PIPE)                              \
  extern "C" __global__ void __launch_bounds__(128)                                         \
      name(const u16* q, const u16* k, const u16* v, const u16* m, u16* o, ptc_attn_args a) { \
    ptc_pdl_enter();                                                                        \
    ptc_attn_body<BF, D, BN, MT, QREG, MASK, PIPE>(q, k, v, m, o, a);                       \
  }
// The host appends one instantiation per module (cuda_attn.c), e.g.
// PTC_ATTN_KERNEL(ptc_attn_bf16_d64, true, 64, 64, 2, true, 0, true) for
// bfloat16, head dim 64, key tiles of 64 rows, 128 query rows per block, q
// in registers, no mask, cp.async tiles; launched with 128 threads, grid
// (ceil(L / (64 * MT)), min(batch, 65535)) and the shared memory above.
