// cuda_attn_wg.cuh - the Hopper (sm_90a) attention forward kernel of the
// cuda backend: wgmma, warp-specialized (embedded as ptc_cuda_attn_wg_text;
// compiled after cuda_prelude.cuh and cuda_attn.cuh, whose ptc_attn_args
// and helpers it uses, into one module per instantiation by
// cuda_attn_wg.c).
//
// out = softmax(q @ k^T * scale) @ v for f16 / bf16, head dim 64 or 128,
// no mask or is_causal, q/k/v rows 16-byte aligned with unit last stride
// (the cp.async layouts); everything else runs cuda_attn.cuh's mma.sync
// kernel. A block has NWG consumer warpgroups (128 threads each, warpgroup
// g owning query rows m0 + 64 g .. + 63) and one producer warpgroup:
//  - the producer copies every key / value tile of BN rows into shared
//    memory in the layout the wgmma descriptors read with 128-byte swizzle
//    ([D / 64 column halves][BN rows][64 halves], 16-byte chunk c of row r
//    at chunk c ^ (r & 7); tiles 1024-aligned), rings of NS buffers per k
//    and v whose fill and release go through mbarriers (empty: the NWG *
//    128 consumer threads done reading), so the consumers issue no copy and
//    meet at no block barrier. TMA: one producer thread issues a tensor copy
//    (cp.async.bulk.tensor, the host's tensor maps, the swizzle done by the
//    copy engine) per 64 columns of a tile, its full barrier armed with the
//    tile's bytes; else the producer's 128 threads copy with cp.async (full:
//    their 128 arrivals) and the consumers fence the generic-proxy writes
//    before wgmma reads them. setmaxnreg gives the producer 24 registers
//    and the consumers the rest (240 with two consumer warpgroups, 160 with
//    three, 112 with four: head dim 64 and 64-key tiles only);
//  - q as wgmma A fragments in registers (the mma.sync A layout; the next
//    work item's q is loaded while the last P v of the current one runs);
//  - S = q k^T: wgmma m64nBNk16, A from registers, B = the k tile (K-major);
//    O += P v: wgmma m64nDk16, A = P from registers (rounded to the input
//    type like flash attention), B = the v tile (MN-major: the transpose
//    bit);
//  - per work item the consumers run S(0) and its softmax, then for j = 0
//    .. nt - 2 issue S(j + 1) and O += P(j) v(j) together and compute the
//    online softmax of S(j + 1) (max, exp2 in the log2 domain, P written
//    over S) while P v is in flight, rescale O after it lands (only when a
//    row of the warp has a new max) and pack P(j + 1); then O += P(nt - 1)
//    v(nt - 1) (FlashAttention-3's intra-warpgroup overlap);
//  - FL & 1: ping-pong turns of the consumer warpgroups' wgmma issues
//    (named barriers, FlashAttention-3's inter-warpgroup schedule; not
//    faster on the H100, off by default);
//  - FL & 8: q read by the S wgmmas from shared memory (each consumer
//    warpgroup's 64 x D tile, loaded by cp.async while the last P v of
//    the previous item runs) instead of registers;
//  - FL & 16 (with FL & 8, without FL & 1): work items back to back, the
//    next item's S(0) issued with the current one's last P v and its
//    softmax run under it, q double-buffered (ptc_ws_consume_flat);
//  - FL & 4: the row sums of P by the tensor cores (an m64n8k16 wgmma of
//    P and a block of ones beside each P v step) instead of FADDs in the
//    softmax (the default for d64 causal only);
//  - the grid is persistent: block x takes work items x, x + gridDim.x, ...
//    (item i: row tile ntm - 1 - i / nbatch of batch entry i % nbatch, so
//    the row tiles with the most key tiles come first when causal; FL & 2:
//    row tile ntm - 1 - i % ntm of batch entry i / ntm, so the blocks at
//    work at once share k / v tiles in L2), and the producer runs ahead
//    into the next item while the consumers end one;
//  - keys past S and (causal) after the row are -inf; a row with no
//    finite score gives zeros; rows past L are neither loaded nor stored.

// The accumulator operands of an m64n64 (32 f32 registers a thread) or
// m64n128 (64) wgmma on d, and their PTX register lists.
#define PTC_WG_ACC32                                                                                   \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define PTC_WG_ACC64                                                                                   \
  PTC_WG_ACC32, "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define PTC_WG_REGS32 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}"
#define PTC_WG_REGS64 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"

// D (m64 x n64, f32) += A (4 registers per thread, the mma.sync A
// fragment of the warp's 16 rows) * B (shared-memory descriptor b); sc 0:
// D = A * B. TB: B is MN-major (the transpose bit, 16-bit types only).
template <bool BF, int TB>
PTC_D void ptc_wg_mma_n64(float* d, const u32* a, u64 b, int sc) {
  if (BF) asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      PTC_WG_REGS32 ", "
      "{%32,%33,%34,%35}, %36, p, 1, 1, %38;\n}\n"
      : PTC_WG_ACC32
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(sc), "n"(TB));
  else asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      PTC_WG_REGS32 ", "
      "{%32,%33,%34,%35}, %36, p, 1, 1, %38;\n}\n"
      : PTC_WG_ACC32
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(sc), "n"(TB));
}

// D (m64 x n128, f32) += A (4 registers per thread, the mma.sync A
// fragment of the warp's 16 rows) * B (shared-memory descriptor b); sc 0:
// D = A * B. TB: B is MN-major (the transpose bit, 16-bit types only).
template <bool BF, int TB>
PTC_D void ptc_wg_mma_n128(float* d, const u32* a, u64 b, int sc) {
  if (BF) asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      PTC_WG_REGS64 ", "
      "{%64,%65,%66,%67}, %68, p, 1, 1, %70;\n}\n"
      : PTC_WG_ACC64
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(sc), "n"(TB));
  else asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      PTC_WG_REGS64 ", "
      "{%64,%65,%66,%67}, %68, p, 1, 1, %70;\n}\n"
      : PTC_WG_ACC64
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(sc), "n"(TB));
}

// D (m64 x n8, f32: the row sums of FL & 4) += A (the mma.sync A fragment
// of the warp's 16 rows) * B (descriptor b: here a block of ones, so each
// of the 8 columns of D sums its row of A).
template <bool BF>
PTC_D void ptc_wg_mma_n8(float* d, const u32* a, u64 b) {
  if (BF) asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
  else asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, {%4,%5,%6,%7}, %8, p, 1, 1, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

// One SS wgmma: shape SH (e.g. "m64n128k16"), input type TY, accumulator
// register list REGS / operands ACC, operand numbers of a, b and sc.
#define PTC_WG_SS(SH, TY, REGS, ACC, IA, IB, ISC)                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" ISC ", 0;\n"                                   \
               "wgmma.mma_async.sync.aligned." SH ".f32." TY "." TY " " REGS ", %" IA ", %" IB          \
               ", p, 1, 1, 0, 0;\n}\n"                                                               \
               : ACC                                                                             \
               : "l"(a), "l"(b), "r"(sc))
// D (m64 x nN, f32) += A * B with both operands in shared memory
// (descriptors a, b; both K-major, no transpose); sc 0: D = A * B. The
// q-in-shared-memory form of S = q k^T (FL & 8).
template <bool BF, int N>
PTC_D void ptc_wg_mma_ss(float* d, u64 a, u64 b, int sc) {
  if constexpr (N == 128) {
    if (BF)
      PTC_WG_SS("m64n128k16", "bf16", PTC_WG_REGS64, PTC_WG_ACC64, "64", "65", "66");
    else
      PTC_WG_SS("m64n128k16", "f16", PTC_WG_REGS64, PTC_WG_ACC64, "64", "65", "66");
  } else {
    if (BF)
      PTC_WG_SS("m64n64k16", "bf16", PTC_WG_REGS32, PTC_WG_ACC32, "32", "33", "34");
    else
      PTC_WG_SS("m64n64k16", "f16", PTC_WG_REGS32, PTC_WG_ACC32, "32", "33", "34");
  }
}

PTC_D void ptc_wg_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
PTC_D void ptc_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
PTC_D void ptc_wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Registers an in-flight wgmma writes: no read moves above the wait.
template <int N>
PTC_D void ptc_wg_hold(float* d) {
#pragma unroll
  for (int i = 0; i < N; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// A fragments an in-flight wgmma reads: kept live (their registers not
// reused) until after the wait.
template <int N>
PTC_D void ptc_wg_hold_a(u32 (&a)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; i++)
#pragma unroll
    for (int e = 0; e < 4; e++) asm volatile("" : "+r"(a[i][e])::"memory");
}

// A shared-memory matrix descriptor: 128-byte swizzle, start address saddr
// (bytes), leading / stride byte offsets lbo, sbo.
PTC_D u64 ptc_wg_desc(u32 saddr, u32 lbo, u32 sbo) {
  return (u64)((saddr & 0x3FFFFu) >> 4) | (u64)((lbo >> 4) & 0x3FFFu) << 16 |
         (u64)((sbo >> 4) & 0x3FFFu) << 32 | (u64)1 << 62;
}

// The same without swizzle (the row-sum ones block: 8 x 16-byte core
// matrices, every element 1, so only the span read matters).
PTC_D u64 ptc_wg_desc_plain(u32 saddr, u32 lbo, u32 sbo) {
  return (u64)((saddr & 0x3FFFFu) >> 4) | (u64)((lbo >> 4) & 0x3FFFu) << 16 |
         (u64)((sbo >> 4) & 0x3FFFu) << 32;
}

template <bool BF, int N, int TB>
PTC_D void ptc_wg_mma(float* d, const u32* a, u64 b, int sc) {
  if constexpr (N == 64)
    ptc_wg_mma_n64<BF, TB>(d, a, b, sc);
  else
    ptc_wg_mma_n128<BF, TB>(d, a, b, sc);
}

// The block's shared memory (dynamic; cuda_attn_wg.c sizes it as 1024 +
// 2 * NS * BN * D * 2 + 32 * NS bytes): from the first 1024-aligned
// address, NS k tiles, NS v tiles (each BN * D halves; the block's g-th key
// tile in buffer g % NS), then the mbarriers.
extern __shared__ __align__(1024) u16 ptc_wg_sm[];

// mbarriers (shared addresses)
PTC_D void ptc_mb_init(u32 bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
PTC_D void ptc_mb_arrive(u32 bar) {
  u64 st;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];" : "=l"(st) : "r"(bar) : "memory");
  (void)st;
}
// Arrives on bar once this thread's cp.async copies so far have landed.
PTC_D void ptc_mb_cp_arrive(u32 bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(bar) : "memory");
}
// Waits for the completion of bar's phase of parity `par`.
PTC_D void ptc_mb_wait(u32 bar, u32 par) {
  asm volatile(
      "{\n.reg .pred P1;\nLAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n"
      "@P1 bra DONE;\nbra LAB_WAIT;\nDONE:\n}\n" ::"r"(bar),
      "r"(par)
      : "memory");
}

// Rows n .. n + BN - 1 of a [rows x D] view (unit last stride, row stride
// sr, 16-byte aligned) into the swizzled tile at shared address sdst by the
// producer's 128 threads (p = 0 .. 127) with cp.async (zeros past rows).
template <int D, int BN>
PTC_D void ptc_ws_tile(u32 sdst, const u16* src, i64 n, i64 rows, i64 sr, int p) {
  constexpr int CH = D / 8, RP = 128 / CH, NI = BN / RP;
  const int c = p % CH, r0 = p / CH, h = c >> 3, cc = c & 7;
  const u32 d0 = sdst + (u32)(h * BN * 128 + r0 * 128 + ((cc ^ (r0 & 7)) << 4));
  const u16* g = src + (n + r0) * sr + c * 8;
  const i64 rem = rows - n - r0;  // rows left from this thread's first row
  const int rm = rem > BN ? BN : rem < 0 ? 0 : (int)rem;
#pragma unroll
  for (int i = 0; i < NI; i++) {
    const bool in = i * RP < rm;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d0 + (u32)(i * RP * 128)),
                 "l"(in ? g + (i64)i * RP * sr : src), "r"(in ? 16 : 0)
                 : "memory");
  }
}

// 2^x for finite x <= 0 on the FMA pipe instead of the MUFU (whose 16
// results per clock per SM match the tensor cores' pace at head dim 64):
// x = n + f, n = round(x) (the 1.5 * 2^23 trick, x clamped at -126), 2^f
// by a degree-3 polynomial on [-0.5, 0.5] (relative error 7.5e-5, below
// the f16 / bf16 rounding of P), n added to the exponent field.
PTC_D float ptc_ws_ex2p(float x) {
  x = fmaxf(x, -126.f);
  const float t = x + 12582912.f;
  const float f = x - (t - 12582912.f);
  const float p = fmaf(fmaf(fmaf(0.05517167f, f, 0.24261114f), f, 0.69326097f), f, 0.99992806f);
  return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

// Online softmax of the score tile s (keys n0 .. n0 + BN - 1, this
// thread's rows w0 + qr, w0 + qr + 8), P = 2^(x - max) written over s (f32;
// packed into A fragments by ptc_ws_pack once P v landed); mx / l the
// running max (log2 domain) and this thread's part of the row sums, al the
// factor the accumulator rows take. x = s * scale * log2 e; MASKED: keys
// kr >= kl or (causal) kr - rr > dg give -inf (tiles crossing S or the
// diagonal). EX > 0 (unmasked tiles): every EX-th group of 8 keys takes
// its exponentials from ptc_ws_ex2p. LS: l is not kept here (the row sums
// come from the tensor cores, FL & 4).
template <int BN, bool MASKED, int EX, bool LS>
PTC_D void ptc_ws_softmax_t(float* s, float sl, int kl, int dg, int qr, int qc, float (&mx)[2],
                            float (&l)[2], float (&al)[2]) {
  const float NEG_INF = -PTC_INF_F;
  const float f = MASKED ? 1.f : sl;
#define PTC_WS_X(t, e)                                                                       \
  (MASKED ? ((t) * 8 + qc + ((e) & 1) >= kl || (t) * 8 + qc + ((e) & 1) - qr - ((e) >> 1) * 8 > dg \
                 ? NEG_INF                                                                   \
                 : s[4 * (t) + (e)] * sl)                                                    \
          : s[4 * (t) + (e)])
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float tm = NEG_INF;
#pragma unroll
    for (int t = 0; t < BN / 8; t++) tm = fmaxf(tm, fmaxf(PTC_WS_X(t, 2 * h), PTC_WS_X(t, 2 * h + 1)));
    tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 1));
    tm = fmaxf(tm, __shfl_xor_sync(0xffffffffu, tm, 2));
    const float nm = fmaxf(mx[h], tm * f);
    const float u = nm == NEG_INF ? 0.f : nm;
    al[h] = ptc_attn_ex2(mx[h] - u);
    mx[h] = nm;
    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int t = 0; t < BN / 8; t++) {
      const float x0 = fmaf(PTC_WS_X(t, 2 * h), f, -u), x1 = fmaf(PTC_WS_X(t, 2 * h + 1), f, -u);
      const bool poly = !MASKED && EX > 0 && t % (EX > 0 ? EX : 1) == (EX > 0 ? EX : 1) - 1;
      const float p0 = poly ? ptc_ws_ex2p(x0) : ptc_attn_ex2(x0);
      const float p1 = poly ? ptc_ws_ex2p(x1) : ptc_attn_ex2(x1);
      s[4 * t + 2 * h] = p0;
      s[4 * t + 2 * h + 1] = p1;
      if (LS) continue;
      if (t & 1)
        sum1 += p0 + p1;
      else
        sum0 += p0 + p1;
    }
    if (!LS) l[h] = l[h] * al[h] + (sum0 + sum1);
  }
#undef PTC_WS_X
}

// The softmax step of key tile n0 for the warp's rows from w0: unmasked
// when the tile is inside S and (causal) wholly at or below the diagonal
// (and the scale is positive), else masked (32-bit tests; the bounds
// clamped, |kr - rr| < 2^20).
template <int BN, bool CAUSAL, int EX, bool LS>
PTC_D void ptc_ws_softmax(float* s, const ptc_attn_args& a, i64 n0, i64 w0, int qr, int qc,
                          float (&mx)[2], float (&l)[2], float (&al)[2]) {
  if (n0 + BN <= a.S && (!CAUSAL || n0 + BN - 1 <= w0) && a.scale_log2 > 0.f) {
    ptc_ws_softmax_t<BN, false, EX, LS>(s, a.scale_log2, BN, 1 << 20, qr, qc, mx, l, al);
    return;
  }
  const i64 kl64 = a.S - n0, dg64 = CAUSAL ? w0 - n0 : (i64)1 << 20;
  const int kl = kl64 < BN ? (int)kl64 : BN;
  const int dg = dg64 > (1 << 20) ? 1 << 20 : dg64 < -(1 << 20) ? -(1 << 20) : (int)dg64;
  ptc_ws_softmax_t<BN, true, 0, LS>(s, a.scale_log2, kl, dg, qr, qc, mx, l, al);
}

// P (f32 in s) into the A fragments of P v (key blocks 2i, 2i + 1: k-step i).
template <bool BF, int BN>
PTC_D void ptc_ws_pack(const float* s, u32 (&pa)[BN / 16][4]) {
#pragma unroll
  for (int t = 0; t < BN / 8; t++)
#pragma unroll
    for (int h = 0; h < 2; h++) pa[t / 2][(t & 1) * 2 + h] = ptc_attn_pack<BF>(s[4 * t + 2 * h], s[4 * t + 2 * h + 1]);
}

// s = q k^T / o += P v with precomputed descriptors (dk, dv: buffer 0 of
// the k / v ring; bo: the buffer's byte offset).
template <bool BF, int D, int BN>
PTC_D void ptc_ws_qk(float* s, const u32 (&qa)[1][D / 16][4], u64 dk, u32 bo) {
  const u64 d = dk + (bo >> 4);
#pragma unroll
  for (int k = 0; k < D / 16; k++)
    ptc_wg_mma<BF, BN, 0>(s, qa[0][k], d + (u64)(((k >> 2) * BN * 128 + (k & 3) * 32) >> 4), k > 0);
}
// The same with q from the warpgroup's shared tile (descriptor dq: 64 rows
// of [D / 64][64][64] halves, 128-byte swizzle; FL & 8).
template <bool BF, int D, int BN>
PTC_D void ptc_ws_qk_ss(float* s, u64 dq, u64 dk, u32 bo) {
  const u64 d = dk + (bo >> 4);
#pragma unroll
  for (int k = 0; k < D / 16; k++)
    ptc_wg_mma_ss<BF, BN>(s, dq + (u64)(((k >> 2) * 64 * 128 + (k & 3) * 32) >> 4),
                          d + (u64)(((k >> 2) * BN * 128 + (k & 3) * 32) >> 4), k > 0);
}
// S = q k^T with q from the warpgroup's shared tile (QS, descriptor dq)
// or from registers (qa).
template <bool BF, int D, int BN, bool QS>
PTC_D void ptc_ws_qk_q(float* s, u64 dq, const u32 (&qa)[1][D / 16][4], u64 dk, u32 bo) {
  if constexpr (QS)
    ptc_ws_qk_ss<BF, D, BN>(s, dq, dk, bo);
  else
    ptc_ws_qk<BF, D, BN>(s, qa, dk, bo);
}
// LS: ls (m64 x n8) += P times the ones block (descriptor d1), the row
// sums of P as the P v product takes them (rounded to the input type).
template <bool BF, int D, int BN, bool LS>
PTC_D void ptc_ws_pv(float* o, float* ls, const u32 (&pa)[BN / 16][4], u64 dv, u32 bo, u64 d1) {
  const u64 d = dv + (bo >> 4);
#pragma unroll
  for (int k = 0; k < BN / 16; k++) ptc_wg_mma<BF, D, 1>(o, pa[k], d + (u64)((k * 2048) >> 4), 1);
#pragma unroll
  for (int k = 0; k < BN / 16 && LS; k++) ptc_wg_mma_n8<BF>(ls, pa[k], d1);
}

// The warp's output rows w0 + qr, w0 + qr + 8 of a work item: acc / l
// (zeros for a row with no finite score); l from this thread's partial
// sums l (summed over the row's 4 threads) or, LS, from the row-sum tile
// ls, every column of which holds the whole sum.
template <bool BF, int D, bool LS>
PTC_D void ptc_ws_store(u16* ob, const ptc_attn_args& a, i64 w0, int qr, int qc, const float* acc,
                        const float (&l)[2], const float (&ls)[4]) {
#pragma unroll
  for (int h = 0; h < 2; h++) {
    float lh = l[h];
    if (LS) {
      lh = ls[2 * h];
    } else {
      lh += __shfl_xor_sync(0xffffffffu, lh, 1);
      lh += __shfl_xor_sync(0xffffffffu, lh, 2);
    }
    const float inv = lh > 0.f ? 1.f / lh : 0.f;
    const i64 r = w0 + qr + 8 * h;
    if (r < a.L) {
#pragma unroll
      for (int t = 0; t < D / 8; t++)
        *(u32*)&ob[r * a.o_sl + t * 8 + qc] =
            ptc_attn_pack<BF>(acc[4 * t + 2 * h] * inv, acc[4 * t + 2 * h + 1] * inv);
    }
  }
}

// Rows whose max rose take the factor al (warp-uniform test): the output
// accumulator and, LS, the row-sum tile.
template <int D, bool LS>
PTC_D void ptc_ws_rescale(float* acc, float (&ls)[4], const float (&al)[2]) {
  if (!__any_sync(0xffffffffu, al[0] != 1.f || al[1] != 1.f)) return;
#pragma unroll
  for (int t = 0; t < D / 8; t++) {
    acc[4 * t] *= al[0];
    acc[4 * t + 1] *= al[0];
    acc[4 * t + 2] *= al[1];
    acc[4 * t + 3] *= al[1];
  }
  if (LS) {
    ls[0] *= al[0];
    ls[1] *= al[0];
    ls[2] *= al[1];
    ls[3] *= al[1];
  }
}

// The consumers' wait for a full buffer: the tile landed (mbarrier), the
// warp converged, the copies visible to wgmma (async proxy).
template <bool TMA = false>
PTC_D void ptc_ws_full(u32 bar, u32 par) {
  ptc_mb_wait(bar, par);
  if (TMA) return;  // tensor copies write through the async proxy already
  __syncwarp();
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// A CUtensorMap (the driver's 128-byte descriptor of a global tensor: here
// 5-D, dims {D, S, batch dims innermost first, padded with 1}, 128-byte
// swizzle, box {64, BN, 1, 1, 1}), passed by value as a __grid_constant__
// kernel parameter.
struct __align__(64) ptc_tmap {
  u64 w[16];
};

// Arms full barrier bar for `bytes` of tensor copies (the producer's one
// arrival of the phase).
PTC_D void ptc_mb_expect(u32 bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

// The box at element coordinates (c0, c1, c2, c3, c4) of tensor map tm into
// shared address sdst; its bytes complete on mbarrier bar.
PTC_D void ptc_tma_load(u32 sdst, const ptc_tmap* tm, int c0, int c1, int c2, int c3, int c4, u32 bar) {
  asm volatile(
      "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, "
      "%4, %5, %6}], [%7];" ::"r"(sdst),
      "l"((u64)tm), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(bar)
      : "memory");
}

// Batch entry bi's coordinates in the tensor maps' batch dims (dim 2 the
// innermost batch dim a.batch[nb - 1]; the host builds maps only for nb <= 3).
PTC_D void ptc_tma_bcoord(const ptc_attn_args& a, i64 bi, int& c0, int& c1, int& c2) {
  const i64 n0 = a.nb >= 1 ? a.batch[a.nb - 1] : 1, n1 = a.nb >= 2 ? a.batch[a.nb - 2] : 1;
  c0 = (int)(bi % n0);
  c1 = (int)(bi / n0 % n1);
  c2 = (int)(bi / n0 / n1);
}

// Named barrier ids: 1 .. NWG the ping-pong turns (FL & 1), PTC_WS_QBAR(NWG)
// + g warpgroup g's q tile landed (QS), past the turns' ids; 0 is
// __syncthreads. (Session 19: the q barriers were 4 + g for every NWG,
// which with four consumer warpgroups is also the last turn barrier: one
// id used with 256 and with 128 threads. 4 is kept for two and three.)
#define PTC_WS_QBAR(NWG) ((NWG) < 4 ? 4 : (NWG) + 1)

// Ping-pong turns of the consumer warpgroups (FL & 1): warpgroup w issues
// its wgmma groups after named barrier 1 + w (its 128 threads plus the
// previous warpgroup's 128 arrivals) and then lets the next one go, so the
// tensor cores run one warpgroup's products while the others do softmax.
template <int FL, int NWG>
PTC_D void ptc_ws_turn_wait(int wg) {
  if (FL & 1) asm volatile("bar.sync %0, 256;" ::"r"(1 + wg) : "memory");
}
template <int FL, int NWG>
PTC_D void ptc_ws_turn_pass(int wg) {
  if (FL & 1) asm volatile("bar.arrive %0, 256;" ::"r"(1 + (wg + 1) % NWG) : "memory");
}

// The last P v issued has landed: the accumulator (and LS row sums)
// readable, P's registers free, the v buffer released (empty barrier ve).
template <int D, int BN, bool LS>
PTC_D void ptc_ws_pv_landed(float* acc, float (&ls)[4], u32 (&pa)[BN / 16][4], u32 ve) {
  ptc_wg_wait<0>();
  ptc_wg_hold<D / 2>(acc);
  if (LS) ptc_wg_hold<4>(ls);
  ptc_wg_hold_a<BN / 16>(pa);
  ptc_mb_arrive(ve);
}

// One key step of a consumer warpgroup (the loop body of both consumer
// forms): S of key tile gk (its k buffer, full barrier kf / empty ke) and
// P v of tile gv (vf / ve) issued together, S's softmax (keys from n0)
// while P v is in flight, then the rescale of the landed accumulator and
// P packed for the next step. q from shared memory (QS, descriptor dq) or
// registers (qa); turns when FL & 1.
template <bool BF, int D, int BN, int NWG, int NS, bool CAUSAL, int EX, bool TMA, int FL>
PTC_D void ptc_ws_step(u32 gk, u32 gv, u32 kf, u32 ke, u32 vf, u32 ve, u64 dq,
                       u32 (&qa)[1][D / 16][4], u64 dk, u64 dv, u64 d1, float* s, float* acc,
                       float (&ls)[4], u32 (&pa)[BN / 16][4], const ptc_attn_args& a, i64 n0, i64 w0,
                       int qr, int qc, float (&mx)[2], float (&l)[2], float (&al)[2], int wg) {
  constexpr int TILE = BN * D * 2;
  constexpr bool LS = (FL & 4) != 0, QS = (FL & 8) != 0;
  const u32 bk = gk % NS, bv = gv % NS;
  ptc_ws_full<TMA>(kf + 8 * bk, (gk / NS) & 1);
  ptc_ws_full<TMA>(vf + 8 * bv, (gv / NS) & 1);
  ptc_ws_turn_wait<FL, NWG>(wg);
  ptc_wg_fence();
  ptc_ws_qk_q<BF, D, BN, QS>(s, dq, qa, dk, bk * TILE);
  ptc_wg_commit();
  ptc_ws_pv<BF, D, BN, LS>(acc, ls, pa, dv, bv * TILE, d1);
  ptc_wg_commit();
  ptc_ws_turn_pass<FL, NWG>(wg);
  ptc_wg_wait<1>();
  ptc_wg_hold<BN / 2>(s);
  if constexpr (!QS) ptc_wg_hold_a<D / 16>(qa[0]);
  ptc_mb_arrive(ke + 8 * bk);
  ptc_ws_softmax<BN, CAUSAL, EX, LS>(s, a, n0, w0, qr, qc, mx, l, al);
  ptc_ws_pv_landed<D, BN, LS>(acc, ls, pa, ve + 8 * bv);
  ptc_ws_rescale<D, LS>(acc, ls, al);
  ptc_ws_pack<BF, BN>(s, pa);
}

// The consumer warpgroups' loop with work items back to back (FL & 16,
// q in shared memory, a.S > 0): S(0) of the next item is issued with the
// last P v of the current one and its softmax runs while that P v is in
// flight, so the tensor cores see no gap at an item's end; the output
// store follows. q is double-buffered (tiles sqw and sqw + 64 * D * 2),
// the next item's tile loaded by cp.async while the current item runs.
template <bool BF, int D, int BN, int NWG, int NS, bool CAUSAL, int EX, bool TMA, int FL, class FB,
          class FM>
PTC_D void ptc_ws_consume_flat(const u16* __restrict__ q, u16* __restrict__ o, const ptc_attn_args& a,
                               i64 nitems, u32 tg, u32 sqw, u64 dk, u64 dv, u64 d1, FB item_bi,
                               FM item_m0) {
  constexpr int BM = 64 * NWG, TILE = BN * D * 2, QT = 64 * D * 2;
  constexpr bool LS = (FL & 4) != 0;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int qr = lane >> 2, qc = (lane & 3) * 2, wg = warp >> 2;
  u32 qa[1][D / 16][4];  // unused: q is read from shared memory
  i64 it = blockIdx.x, off[5];
  if (it >= nitems) return;
  const u32 base = (ptc_attn_smem(ptc_wg_sm) + 1023u) & ~1023u;
  const u32 bkf = base + 2 * NS * TILE, bke = bkf + 8 * NS, bvf = bke + 8 * NS, bve = bvf + 8 * NS;
  auto q_load = [&](i64 nx, u32 qb) {
    ptc_attn_offsets(a, item_bi(nx), off);
    ptc_ws_tile<D, 64>(sqw + qb * QT, q + off[0], item_m0(nx) + 64 * wg, a.L, a.q_sl, tid & 127);
  };
  auto q_ready = [&]() {
    asm volatile("cp.async.wait_all;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("bar.sync %0, 128;" ::"r"(PTC_WS_QBAR(NWG) + wg) : "memory");
  };
  u32 qb = 0;
  q_load(it, 0);
  q_ready();
  float acc[D / 2], s[BN / 2], mx[2] = {-PTC_INF_F, -PTC_INF_F}, l[2] = {0.f, 0.f}, al[2];
  float ls[4] = {0.f, 0.f, 0.f, 0.f};
  u32 pa[BN / 16][4];
#pragma unroll
  for (int i = 0; i < D / 2; i++) acc[i] = 0.f;
  {
    // S(0) of the block's first item and its softmax
    const u32 b0 = tg % NS;
    ptc_ws_full<TMA>(bkf + 8 * b0, (tg / NS) & 1);
    ptc_wg_fence();
    ptc_ws_qk_ss<BF, D, BN>(s, ptc_wg_desc(sqw, 16, 1024), dk, b0 * TILE);
    ptc_wg_commit();
    ptc_wg_wait<0>();
    ptc_wg_hold<BN / 2>(s);
    ptc_mb_arrive(bke + 8 * b0);
    ptc_ws_softmax<BN, CAUSAL, EX, LS>(s, a, 0, item_m0(it) + warp * 16, qr, qc, mx, l, al);
    ptc_ws_pack<BF, BN>(s, pa);
  }
  for (;;) {
    const i64 m0 = item_m0(it), w0 = m0 + warp * 16;
    u16* ob = o + off[4];
    i64 nend = a.S;
    if (CAUSAL && m0 + BM < nend) nend = m0 + BM;
    const int nt = (int)((nend + BN - 1) / BN);
    const i64 nx = it + gridDim.x;
    if (nx < nitems) q_load(nx, qb ^ 1u);
    const u64 dq = ptc_wg_desc(sqw + qb * QT, 16, 1024);
    for (int j = 0; j < nt - 1; j++)
      ptc_ws_step<BF, D, BN, NWG, NS, CAUSAL, EX, TMA, FL>(
          tg + (u32)(j + 1), tg + (u32)j, bkf, bke, bvf, bve, dq, qa, dk, dv, d1, s, acc, ls, pa, a,
          (i64)(j + 1) * BN, w0, qr, qc, mx, l, al, wg);
    const u32 gv = tg + (u32)(nt - 1), bv = gv % NS;
    tg += (u32)nt;
    if (nx >= nitems) {
      // the block's last item: its last P v, then the store
      ptc_ws_full<TMA>(bvf + 8 * bv, (gv / NS) & 1);
      ptc_wg_fence();
      ptc_ws_pv<BF, D, BN, LS>(acc, ls, pa, dv, bv * TILE, d1);
      ptc_wg_commit();
      ptc_ws_pv_landed<D, BN, LS>(acc, ls, pa, bve + 8 * bv);
      ptc_ws_store<BF, D, LS>(ob, a, w0, qr, qc, acc, l, ls);
      return;
    }
    // S(0) of the next item with the last P v of this one
    q_ready();
    const u32 bk = tg % NS;
    ptc_ws_full<TMA>(bkf + 8 * bk, (tg / NS) & 1);
    ptc_ws_full<TMA>(bvf + 8 * bv, (gv / NS) & 1);
    ptc_wg_fence();
    ptc_ws_qk_ss<BF, D, BN>(s, ptc_wg_desc(sqw + (qb ^ 1u) * QT, 16, 1024), dk, bk * TILE);
    ptc_wg_commit();
    ptc_ws_pv<BF, D, BN, LS>(acc, ls, pa, dv, bv * TILE, d1);
    ptc_wg_commit();
    ptc_wg_wait<1>();
    ptc_wg_hold<BN / 2>(s);
    ptc_mb_arrive(bke + 8 * bk);
    const float lo[2] = {l[0], l[1]};
    mx[0] = mx[1] = -PTC_INF_F;
    l[0] = l[1] = 0.f;
    ptc_ws_softmax<BN, CAUSAL, EX, LS>(s, a, 0, item_m0(nx) + warp * 16, qr, qc, mx, l, al);
    ptc_ws_pv_landed<D, BN, LS>(acc, ls, pa, bve + 8 * bv);
    ptc_ws_store<BF, D, LS>(ob, a, w0, qr, qc, acc, lo, ls);
#pragma unroll
    for (int i = 0; i < D / 2; i++) acc[i] = 0.f;
#pragma unroll
    for (int i = 0; i < 4; i++) ls[i] = 0.f;
    ptc_ws_pack<BF, BN>(s, pa);
    it = nx;
    qb ^= 1u;
  }
}

// The kernel body (see the top of the file): NWG consumer warpgroups, then
// the producer warpgroup; work items of BM = 64 * NWG query rows; the
// block's g-th key tile (counted over its items: tg) in buffer g % NS of
// each ring, its full / empty phase g / NS.
template <bool BF, int D, int BN, int NWG, int NS, bool CAUSAL, int EX, bool TMA, int FL>
PTC_D void ptc_attn_ws_body(const u16* __restrict__ q, const u16* __restrict__ k,
                            const u16* __restrict__ v, u16* __restrict__ o, const ptc_attn_args& a,
                            const ptc_tmap* tk, const ptc_tmap* tv) {
  constexpr int BM = 64 * NWG, NC = 128 * NWG, TILE = BN * D * 2;
  constexpr bool LS = (FL & 4) != 0;  // row sums by the tensor cores
  constexpr bool QS = (FL & 8) != 0;  // q read by wgmma from shared memory
  constexpr bool FLAT = (FL & 16) != 0;  // work items back to back (QS)
  static_assert(!FLAT || (QS && !(FL & 1)), "FL & 16 needs q in shared memory, no turns");
  static_assert(D == 64 || D == 128, "head dim 64 or 128");
  static_assert(BN == 64 || BN == 128, "key tiles of 64 or 128");
  static_assert(NS >= 2 && NS <= 4, "2 to 4 buffers");
  static_assert(NWG >= 2 && NWG <= 4, "2 to 4 consumer warpgroups");
  static_assert(NWG < 4 || (D == 64 && BN == 64), "four consumer warpgroups: head dim 64, 64-key tiles");
  const u32 base = (ptc_attn_smem(ptc_wg_sm) + 1023u) & ~1023u;
  const u32 sk = base, sv = base + NS * TILE;
  // mbarriers: k full, k empty, v full, v empty (NS each, 8 bytes)
  const u32 kf = base + 2 * NS * TILE, ke = kf + 8 * NS, vf = ke + 8 * NS, ve = vf + 8 * NS;
  // LS: 512 bytes of ones after the mbarriers (the row-sum B operand)
  const u32 s1 = ve + 8 * NS;
  // QS: each consumer warpgroup's q tile (64 x D halves, the k tiles'
  // layout), 1024-aligned after the ones
  const u32 sq = (s1 + 512 + 1023u) & ~1023u;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  if (LS && tid < 128) {
    const u32 one = BF ? 0x3F803F80u : 0x3C003C00u;
    asm volatile("st.shared.u32 [%0], %1;" ::"r"(s1 + 4 * tid), "r"(one) : "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  }
  if (tid == 0) {
    for (int i = 0; i < NS; i++) {
      ptc_mb_init(kf + 8 * i, TMA ? 1 : 128);
      ptc_mb_init(vf + 8 * i, TMA ? 1 : 128);
      ptc_mb_init(ke + 8 * i, NC);
      ptc_mb_init(ve + 8 * i, NC);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const i64 ntm = (a.L + BM - 1) / BM, nitems = ntm * a.nbatch;
  // item it: its batch entry and first row (FL & 2: the row tiles of a
  // batch entry one after another, so that blocks working at the same time
  // share k / v in L2; else the row tiles with the most key tiles first)
  auto item_bi = [&](i64 it) -> i64 { return (FL & 2) ? it / ntm : it % a.nbatch; };
  auto item_m0 = [&](i64 it) -> i64 {
    return ((FL & 2) ? ntm - 1 - it % ntm : ntm - 1 - it / a.nbatch) * BM;
  };
  u32 tg = 0;  // tiles of the block's earlier work items
  if (warp >= 4 * NWG) {
    // producer warpgroup
    asm volatile("setmaxnreg.dec.sync.aligned.u32 24;");
    const int p = tid - NC;
    if (TMA) {
      // one thread issues every tile: a box per 64 columns
      if (p == 0) {
        for (i64 it = blockIdx.x; it < nitems; it += gridDim.x) {
          int c2, c3, c4;
          ptc_tma_bcoord(a, item_bi(it), c2, c3, c4);
          const i64 m0 = item_m0(it);
          i64 nend = a.S;
          if (CAUSAL && m0 + BM < nend) nend = m0 + BM;
          const int nt = (int)((nend + BN - 1) / BN);
          for (int i = 0; i < nt; i++) {
            const u32 g = tg + (u32)i, b = g % NS, ph = g / NS;
            if (g >= NS) ptc_mb_wait(ke + 8 * b, (ph - 1) & 1);
            ptc_mb_expect(kf + 8 * b, TILE);
#pragma unroll
            for (int h = 0; h < D / 64; h++)
              ptc_tma_load(sk + b * TILE + h * BN * 128, tk, h * 64, i * BN, c2, c3, c4, kf + 8 * b);
            if (g >= NS) ptc_mb_wait(ve + 8 * b, (ph - 1) & 1);
            ptc_mb_expect(vf + 8 * b, TILE);
#pragma unroll
            for (int h = 0; h < D / 64; h++)
              ptc_tma_load(sv + b * TILE + h * BN * 128, tv, h * 64, i * BN, c2, c3, c4, vf + 8 * b);
          }
          tg += (u32)nt;
        }
      }
    } else {
    for (i64 it = blockIdx.x; it < nitems; it += gridDim.x) {
      const i64 bi = item_bi(it), m0 = item_m0(it);
      i64 off[5];
      ptc_attn_offsets(a, bi, off);
      i64 nend = a.S;
      if (CAUSAL && m0 + BM < nend) nend = m0 + BM;
      const int nt = (int)((nend + BN - 1) / BN);  // the host keeps S < 2^31
      for (int i = 0; i < nt; i++) {
        const u32 g = tg + (u32)i, b = g % NS, ph = g / NS;
        if (g >= NS) ptc_mb_wait(ke + 8 * b, (ph - 1) & 1);
        ptc_ws_tile<D, BN>(sk + b * TILE, k + off[1], (i64)i * BN, a.S, a.k_ss, p);
        ptc_mb_cp_arrive(kf + 8 * b);
        if (g >= NS) ptc_mb_wait(ve + 8 * b, (ph - 1) & 1);
        ptc_ws_tile<D, BN>(sv + b * TILE, v + off[2], (i64)i * BN, a.S, a.v_ss, p);
        ptc_mb_cp_arrive(vf + 8 * b);
      }
      tg += (u32)nt;
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    }
  } else {
    // the registers the producer gave back (launched at 65536 / (128 *
    // (NWG + 1)) a thread, rounded down to 8: 168, 128, 96)
    if (NWG == 2)
      asm volatile("setmaxnreg.inc.sync.aligned.u32 240;");
    else if (NWG == 3)
      asm volatile("setmaxnreg.inc.sync.aligned.u32 160;");
    else
      asm volatile("setmaxnreg.inc.sync.aligned.u32 112;");
    const int qr = lane >> 2, qc = (lane & 3) * 2, wg = warp >> 2;
    if (wg == NWG - 1) ptc_ws_turn_pass<FL, NWG>(wg);  // warpgroup 0 goes first
    const u64 dk = ptc_wg_desc(sk, 16, 1024), dv = ptc_wg_desc(sv, D == 64 ? 1024 : BN * 128, 1024);
    const u64 d1 = ptc_wg_desc_plain(s1, 128, 256);
    // QS: the warpgroup's q tile (FLAT: two, the next item's loaded into
    // the other while the current one runs)
    const u32 sqw = sq + (u32)(wg * (FLAT ? 2 : 1) * 64 * D * 2);
    const u64 dq = ptc_wg_desc(sqw, 16, 1024);
    if constexpr (FLAT) {
      ptc_ws_consume_flat<BF, D, BN, NWG, NS, CAUSAL, EX, TMA, FL>(q, o, a, nitems, tg, sqw, dk, dv, d1,
                                                               item_bi, item_m0);
      return;
    }
    // q of the block's next item is loaded while the current one ends:
    // into registers, or (QS) by cp.async into the warpgroup's tile
    i64 it = blockIdx.x, off[5];
    u32 qa[1][D / 16][4];  // unused with QS
    auto q_load = [&](i64 nx) {
      ptc_attn_offsets(a, item_bi(nx), off);
      if constexpr (QS)
        ptc_ws_tile<D, 64>(sqw, q + off[0], item_m0(nx) + 64 * wg, a.L, a.q_sl, tid & 127);
      else
        ptc_attn_qfrag<D, 1, true>(qa, q + off[0], a, item_m0(nx) + warp * 16, qr, qc);
    };
    if (it < nitems) q_load(it);
    for (; it < nitems; it += gridDim.x) {
      const i64 m0 = item_m0(it);
      const i64 w0 = m0 + warp * 16;  // this warp's first row
      u16* ob = o + off[4];
      i64 nend = a.S;
      if (CAUSAL && m0 + BM < nend) nend = m0 + BM;
      const int nt = (int)((nend + BN - 1) / BN);
      float acc[D / 2], s[BN / 2], mx[2] = {-PTC_INF_F, -PTC_INF_F}, l[2] = {0.f, 0.f}, al[2];
      float ls[4] = {0.f, 0.f, 0.f, 0.f};
      u32 pa[BN / 16][4];
#pragma unroll
      for (int i = 0; i < D / 2; i++) acc[i] = 0.f;
      if (QS) {
        // the warpgroup's q copies landed and visible to wgmma
        asm volatile("cp.async.wait_all;" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
        asm volatile("bar.sync %0, 128;" ::"r"(PTC_WS_QBAR(NWG) + wg) : "memory");
      }
      if (nt > 0) {
        // S(0) and its softmax
        const u32 b0 = tg % NS;
        ptc_ws_full<TMA>(kf + 8 * b0, (tg / NS) & 1);
        ptc_ws_turn_wait<FL, NWG>(wg);
        ptc_wg_fence();
        ptc_ws_qk_q<BF, D, BN, QS>(s, dq, qa, dk, b0 * TILE);
        ptc_wg_commit();
        ptc_ws_turn_pass<FL, NWG>(wg);
        ptc_wg_wait<0>();
        ptc_wg_hold<BN / 2>(s);
        if constexpr (!QS) ptc_wg_hold_a<D / 16>(qa[0]);
        ptc_mb_arrive(ke + 8 * b0);
        ptc_ws_softmax<BN, CAUSAL, EX, LS>(s, a, 0, w0, qr, qc, mx, l, al);
        ptc_ws_pack<BF, BN>(s, pa);
        for (int j = 0; j < nt - 1; j++)
          ptc_ws_step<BF, D, BN, NWG, NS, CAUSAL, EX, TMA, FL>(
              tg + (u32)(j + 1), tg + (u32)j, kf, ke, vf, ve, dq, qa, dk, dv, d1, s, acc, ls, pa, a,
              (i64)(j + 1) * BN, w0, qr, qc, mx, l, al, wg);
        // the last P v, in flight while the next q loads
        const u32 gv = tg + (u32)(nt - 1), bv = gv % NS;
        ptc_ws_full<TMA>(vf + 8 * bv, (gv / NS) & 1);
        ptc_ws_turn_wait<FL, NWG>(wg);
        ptc_wg_fence();
        ptc_ws_pv<BF, D, BN, LS>(acc, ls, pa, dv, bv * TILE, d1);
        ptc_wg_commit();
        ptc_ws_turn_pass<FL, NWG>(wg);
      }
      tg += (u32)nt;
      const i64 nx = it + gridDim.x;
      if (nx < nitems) q_load(nx);
      // (unconditional: a wait on no group returns at once, and ptxas then
      // sees every path to the reads below pass a wait)
      ptc_wg_wait<0>();
      ptc_wg_hold<D / 2>(acc);
      if (LS) ptc_wg_hold<4>(ls);
      ptc_wg_hold_a<BN / 16>(pa);
      if (nt > 0) ptc_mb_arrive(ve + 8 * ((tg - 1) % NS));
      ptc_ws_store<BF, D, LS>(ob, a, w0, qr, qc, acc, l, ls);
    }
  }
}


#define PTC_ATTN_WS_KERNEL(name, BF, D, BN, NWG, EX, NS, CAUSAL, FL)                          \
  extern "C" __global__ void __launch_bounds__(128 * (NWG + 1), 1)                           \
      name(const u16* q, const u16* k, const u16* v, const u16* m, u16* o, ptc_attn_args a) { \
    (void)m;                                                                                  \
    ptc_pdl_enter();                                                                          \
    ptc_attn_ws_body<BF, D, BN, NWG, NS, CAUSAL, EX, false, FL>(q, k, v, o, a, nullptr, nullptr); \
  }

// The same with k / v tiles by the tensor memory accelerator (tensor maps
// tk, tv built by the host for the call).
#define PTC_ATTN_WS_TMA_KERNEL(name, BF, D, BN, NWG, EX, NS, CAUSAL, FL)                      \
  extern "C" __global__ void __launch_bounds__(128 * (NWG + 1), 1)                           \
      name(const u16* q, const u16* k, const u16* v, const u16* m, u16* o, ptc_attn_args a,  \
           const __grid_constant__ ptc_tmap tk, const __grid_constant__ ptc_tmap tv) {        \
    (void)m;                                                                                  \
    ptc_pdl_enter();                                                                          \
    ptc_attn_ws_body<BF, D, BN, NWG, NS, CAUSAL, EX, true, FL>(q, k, v, o, a, &tk, &tv);      \
  }

// The host appends one instantiation per module (cuda_attn_wg.c), e.g.
// PTC_ATTN_WS_TMA_KERNEL(ptc_attn_wg, true, 64, 128, 2, 0, 4, false, 2):
// bfloat16, head dim 64, key tiles of 128 rows, 2 consumer warpgroups (128
// query rows per work item), every exponential on the MUFU, 4 buffers per
// k and v, no causal mask, head-major items, k / v by tensor copies;
// launched with 128 * (NWG + 1) threads, a grid of min(work items, SMs)
// blocks and the shared memory above.
