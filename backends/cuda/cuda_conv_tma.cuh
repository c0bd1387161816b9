// cuda_conv_tma.cuh - a Hopper (sm_90a) convolution of channels-last
// activations (f32 as TF32, bf16, f16): TMA tiled loads of halo tiles (no
// im2col) + wgmma, warp-specialized. docs/cuda.md's "A Hopper
// convolution" says why and what was measured. Compiled after
// cuda_prelude.cuh, cuda_attn.cuh and cuda_attn_wg.cuh, whose ldmatrix,
// mbarrier, wgmma and tensor-copy helpers it uses (embedded as
// ptc_cuda_conv_tma_text). bf16 / f16 (DT 1 / 2): the same kernel with
// 64-channel chunks and wgmma m64nBNk16, nothing rounded.
//
// out[n][oh][ow][oc] = act(bias[oc] + sum over taps (r, s) and channels c
//   of x[n][oh sh - ph + r][ow sw - pw + s][c] * w[oc][c][r][s])
// for strides sh, sw, dilation 1, one group, C a multiple of the chunk CH
// (32 f32 or 64 16-bit channels: 128 bytes), OC of BN.
//
// A block: two consumer warpgroups and one producer warp (in a producer
// warpgroup). A work item is one output tile of TH x TW pixels (at most
// 64 * MT * 2; the host picks the shape) of one image times BN output
// channels; the tile's pixels are the rows of the GEMM (row R: tile pixel
// (R / TW, R % TW)), consumer warpgroup g owning rows 64 MT g .. + 64 MT - 1.
//  - per CH-channel chunk the producer's thread 0 copies the chunk's halo
//    tile, ((TH - 1) SH + KH) x ((TW - 1) SW + KW) input pixels of 128
//    bytes (a 4-D tensor copy, 128-byte swizzle; coordinates outside the
//    input read as zeros, which is the padding), into a ring of NA slots
//    (released after the chunk's last ldmatrix and a proxy fence), and per tap
//    (r, s) the B tile (BN rows of 128 bytes of the weights prepared as
//    [tap * C / CH + chunk][OC][CH], f32 rounded to TF32) into a ring of NB;
//  - f32: A is rounded to TF32 (the tensor cores would truncate it) by
//    the tensor copy of a TFLOAT32 map (PTC_CTMA_IRND 3, the default), in
//    the consumers' registers after each ldmatrix (0 / 1), or (2) by the
//    producer's other three warps, which round each landed halo in place
//    and arrive on its ready barrier;
//  - the consumers read their A fragments of tap (r, s) straight from the
//    halo tile by ldmatrix (each lane's row address is pixel (R / TW SH + r,
//    R % TW SW + s) of the halo: every tap reuses the one copy) and
//    issue wgmma m64nBNk8 (k16 for 16-bit types) with A from registers and
//    B from the ring; the A fragments alternate between two register sets
//    so the next tap's loads overlap the current products; a B slot is
//    released once the group after it has been waited for;
//  - the epilogue adds the bias, applies ReLU (RELU) and stores the rows
//    inside the output plane.

#ifndef PTC_CTMA_NA
#define PTC_CTMA_NA 2
#endif
#ifndef PTC_CTMA_NB
#define PTC_CTMA_NB 8
#endif
// How A is rounded to TF32: 0 in registers by cvt.rna after each
// ldmatrix, 1 in registers by integer arithmetic, 2 once per halo in shared
// memory by the producer warpgroup's three spare warps (integer
// arithmetic), the consumers waiting on the halo's ready barrier instead;
// 3 not here: the host's TFLOAT32 map has the tensor copy round f32 (to
// nearest even), and 16-bit types have nothing to round
#ifndef PTC_CTMA_IRND
#define PTC_CTMA_IRND 1
#endif

// u (f32 bits) rounded to TF32, to nearest with ties away from zero
// (cvt.rna's result) by (u + 2^12) & ~(2^13 - 1); NaNs kept as they are
// (the sum could carry a NaN with a low payload into infinity).
PTC_D u32 ptc_ctma_rna(u32 u) {
  return (u & 0x7fffffffu) > 0x7f800000u ? u : (u + 0x1000u) & ~0x1fffu;
}

// Rounds this thread's share of a landed halo (nbytes at shared address s,
// 16 bytes at a time by the 96 threads t = 0..95) to TF32 in place, then
// orders the writes before later tensor copies into the slot.
PTC_D void ptc_ctma_round(u32 s, u32 nbytes, int t) {
  for (u32 o = (u32)t * 16u; o < nbytes; o += 96u * 16u) {
    u32 v0, v1, v2, v3;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                 : "r"(s + o));
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(s + o), "r"(ptc_ctma_rna(v0)),
                 "r"(ptc_ctma_rna(v1)), "r"(ptc_ctma_rna(v2)), "r"(ptc_ctma_rna(v3))
                 : "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

struct ptc_ctma_args {
  int n, h, w, c;       // input dims (NHWC dense as the map says)
  int oh, ow, oc;       // output dims
  int kh, kw, ph, pw;   // window and padding
  int sh, sw;           // strides
  i64 os_n, os_h, os_w; // output strides (elements; channels unit stride)
  int th, tw;           // output tile rows x columns
  int tiles_h, tiles_w; // output tiles per image along H and W
  int aslot;            // bytes of a halo slot (a multiple of 1024)
};

// D (m64 x nN, f32) += A (4 registers: the mma.sync m16n8k8 TF32 A fragment
// of the warp's 16 rows) * B (descriptor b: N rows x 8 TF32, K-major,
// 128-byte swizzle).
template <int N>
PTC_D void ptc_ctma_mma(float* d, const u32* a, u64 b);

template <>
PTC_D void ptc_ctma_mma<64>(float* d, const u32* a, u64 b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "{%32,%33,%34,%35}, %36, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

template <>
PTC_D void ptc_ctma_mma<128>(float* d, const u32* a, u64 b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "{%64,%65,%66,%67}, %68, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// Tile index q (flattened over images, tile rows, tile columns) -> image
// and the tile's first output row and column.
PTC_D void ptc_ctma_tile(const ptc_ctma_args& g, i64 q, int& n, int& oh0, int& ow0) {
  const i64 per = (i64)g.tiles_h * g.tiles_w;
  n = (int)(q / per);
  const int t = (int)(q - (i64)n * per);
  oh0 = t / g.tiles_w * g.th;
  ow0 = t % g.tiles_w * g.tw;
}

// The A fragments of one tap: for each of the MT 64-row groups and each of
// the chunk's 4 k-steps, ldmatrix .x4 from the halo slot at hs (lane rows
// at halo pixels hp[m] + tap offset to), rounded to TF32.
template <int MT>
PTC_D void ptc_ctma_lda(u32 (&a)[MT * 4][4], u32 hs, const int (&hp)[MT], int to, int half) {
#pragma unroll
  for (int m = 0; m < MT; m++) {
    const int p = hp[m] + to;
    const u32 row = hs + (u32)p * 128u;
#pragma unroll
    for (int kk = 0; kk < 4; kk++) {
      u32* f = a[m * 4 + kk];
      ptc_attn_ldsm(f, row + (u32)(((kk * 2 + half) ^ (p & 7)) << 4));
#pragma unroll
      for (int e = 0; e < 4; e++) {
        if (PTC_CTMA_IRND == 1)
          f[e] = ptc_ctma_rna(f[e]);
        else if (PTC_CTMA_IRND == 0)
          asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(f[e]) : "f"(__uint_as_float(f[e])));
      }
    }
  }
}

// An output pair (columns cc, cc + 1) of element type DT (0 f32, 1 bf16,
// 2 f16) at element offset o of out; a bias element.
template <int DT>
PTC_D void ptc_ctma_store2(void* out, i64 o, float v0, float v1) {
  if (DT == 0)
    *(float2*)((float*)out + o) = make_float2(v0, v1);
  else
    *(u32*)((u16*)out + o) = ptc_attn_pack<DT == 1>(v0, v1);
}
template <int DT>
PTC_D float ptc_ctma_ld(const void* p, int i) {
  return DT == 0 ? ((const float*)p)[i] : DT == 1 ? ptc_bf2f(((const u16*)p)[i]) : ptc_h2f(((const u16*)p)[i]);
}

// The MMA of one k-step: TF32 m64nBNk8 (DT 0) or bf16 / f16 m64nBNk16.
template <int DT, int BN>
PTC_D void ptc_ctma_mma_dt(float* d, const u32* a, u64 b) {
  if constexpr (DT == 0)
    ptc_ctma_mma<BN>(d, a, b);
  else
    ptc_wg_mma<DT == 1, BN, 0>(d, a, b, 1);
}

template <int DT, int BN, int MT, bool RELU>
PTC_D void ptc_ctma_body(const void* __restrict__ bias, void* __restrict__ out,
                         const ptc_ctma_args& g, const ptc_tmap* tx, const ptc_tmap* tw) {
  constexpr int NA = PTC_CTMA_NA, NB = PTC_CTMA_NB, BBYTES = BN * 128;
  constexpr int CH = DT == 0 ? 32 : 64; // channels a chunk (128 bytes)
  static_assert(DT == 0 || PTC_CTMA_IRND == 3, "16-bit types are not rounded");
  static_assert(BN == 64 || BN == 128, "64 or 128 output channels a block (m64nBNk8)");
  static_assert(MT >= 1 && MT <= 2, "one or two 64-row groups a consumer warpgroup");
  const u32 base = (ptc_attn_smem(ptc_wg_sm) + 1023u) & ~1023u;
  const u32 sa = base, sb = sa + NA * (u32)g.aslot;
  // mbarriers after the rings: halo full / empty / ready (rounded), B full
  // / empty
  const u32 af = sb + NB * BBYTES, ae = af + 8 * NA, ar = ae + 8 * NA, bf = ar + 8 * NA, be = bf + 8 * NB;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  if (tid == 0) {
    for (int i = 0; i < NA; i++)
      ptc_mb_init(af + 8 * i, 1), ptc_mb_init(ae + 8 * i, 256), ptc_mb_init(ar + 8 * i, 96);
    for (int i = 0; i < NB; i++) ptc_mb_init(bf + 8 * i, 1), ptc_mb_init(be + 8 * i, 256);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const i64 ntiles = (i64)g.n * g.tiles_h * g.tiles_w;
  const int nchunk = g.c / CH, ntap = g.kh * g.kw, nk = nchunk * ntap, ocb = g.oc / BN;
  const int hw = (g.tw - 1) * g.sw + g.kw; // halo width
  const u32 abytes = (u32)((g.th - 1) * g.sh + g.kh) * (u32)hw * 128u;
  if (warp >= 8) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 56;");
    if (PTC_CTMA_IRND == 2 && warp >= 9) {
      // the rounding warps: each halo once, in the producer's order
      u32 qa = 0;
      for (i64 it = blockIdx.x; it < ntiles * ocb; it += gridDim.x)
        for (int ch = 0; ch < nchunk; ch++, qa++) {
          const u32 a = qa % NA;
          ptc_mb_wait(af + 8 * a, (qa / NA) & 1);
          ptc_ctma_round(sa + a * (u32)g.aslot, abytes, tid - 288);
          ptc_mb_arrive(ar + 8 * a);
        }
      return;
    }
    if (tid != 256) return;
    u32 qa = 0, qb = 0;
    for (i64 it = blockIdx.x; it < ntiles * ocb; it += gridDim.x) {
      const i64 tq = it / ocb;
      const int ob = (int)(it - tq * ocb);
      int n, oh0, ow0;
      ptc_ctma_tile(g, tq, n, oh0, ow0);
      for (int ch = 0; ch < nchunk; ch++, qa++) {
        const u32 a = qa % NA;
        if (qa >= NA) ptc_mb_wait(ae + 8 * a, ((qa / NA) - 1) & 1);
        ptc_mb_expect(af + 8 * a, abytes);
        ptc_tma_load(sa + a * (u32)g.aslot, tx, ch * CH, ow0 * g.sw - g.pw, oh0 * g.sh - g.ph, n, 0,
                     af + 8 * a);
        for (int t = 0; t < ntap; t++, qb++) {
          const u32 b = qb % NB;
          if (qb >= NB) ptc_mb_wait(be + 8 * b, ((qb / NB) - 1) & 1);
          ptc_mb_expect(bf + 8 * b, BBYTES);
          ptc_tma_load(sb + b * BBYTES, tw, 0, ob * BN, t * nchunk + ch, 0, 0, bf + 8 * b);
        }
      }
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 224;");
    const int wg = warp >> 2, wr = (warp & 3) * 16 + (lane >> 2), qc = (lane & 3) * 2;
    // this lane's ldmatrix row in each 64-row group: row (lane & 7) + 8
    // ((lane >> 3) & 1) of the warp's 16, k half lane >> 4
    const int lrow = (warp & 3) * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, half = lane >> 4;
    int hp[MT];
#pragma unroll
    for (int m = 0; m < MT; m++) {
      const int r = wg * 64 * MT + m * 64 + lrow;
      // rows past the tile read halo pixel 0 (their products are dropped)
      hp[m] = r < g.th * g.tw ? r / g.tw * g.sh * hw + r % g.tw * g.sw : 0;
    }
    u32 qa = 0, qb = 0;
    u32 A0[MT * 4][4], A1[MT * 4][4];
    for (i64 it = blockIdx.x; it < ntiles * ocb; it += gridDim.x) {
      const i64 tq = it / ocb;
      const int ob = (int)(it - tq * ocb);
      float acc[MT][BN / 2];
#pragma unroll
      for (int m = 0; m < MT; m++)
#pragma unroll
        for (int i = 0; i < BN / 2; i++) acc[m][i] = 0.f;
      // one step: tap t of chunk ch, A fragments in set A
      auto step = [&](u32(&A)[MT * 4][4], int k) {
        const int ch = k / ntap, t = k - ch * ntap, r = t / g.kw, s = t - r * g.kw;
        const u32 a = qa % NA, b = qb % NB;
        if (t == 0) ptc_mb_wait((PTC_CTMA_IRND == 2 ? ar : af) + 8 * a, (qa / NA) & 1);
        ptc_mb_wait(bf + 8 * b, (qb / NB) & 1);
        ptc_ctma_lda<MT>(A, sa + a * (u32)g.aslot, hp, r * hw + s, half);
        if (t == ntap - 1) {
          // the halo's generic-proxy reads (ldmatrix) ordered before the
          // next tensor copy (async proxy) into the slot
          asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
          ptc_mb_arrive(ae + 8 * a), qa++;
        }
        const u64 db = ptc_wg_desc(sb + b * BBYTES, 16, 1024);
        ptc_wg_fence();
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
          for (int kk = 0; kk < 4; kk++)
            ptc_ctma_mma_dt<DT, BN>(acc[m], A[m * 4 + kk], db + (u64)((kk * 32) >> 4));
        ptc_wg_commit();
        ptc_wg_wait<1>();
#pragma unroll
        for (int m = 0; m < MT; m++) ptc_wg_hold<BN / 2>(acc[m]);
        ptc_wg_hold_a<MT * 4>(A);
        // the previous step's products are done: release its B slot
        if (k > 0) ptc_mb_arrive(be + 8 * ((qb - 1) % NB));
        qb++;
      };
      int k = 0;
      for (; k + 1 < nk; k += 2) step(A0, k), step(A1, k + 1);
      if (k < nk) step(A0, k);
      ptc_wg_wait<0>();
#pragma unroll
      for (int m = 0; m < MT; m++) ptc_wg_hold<BN / 2>(acc[m]);
      ptc_wg_hold_a<MT * 4>(A0);
      ptc_wg_hold_a<MT * 4>(A1);
      ptc_mb_arrive(be + 8 * ((qb - 1) % NB));
      int n, oh0, ow0;
      ptc_ctma_tile(g, tq, n, oh0, ow0);
      // accumulator rows wr, wr + 8 of each 64-row group, columns 8 j + qc, + 1
#pragma unroll
      for (int m = 0; m < MT; m++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int R = wg * 64 * MT + m * 64 + wr + 8 * h;
          if (R >= g.th * g.tw) continue;
          const int oh = oh0 + R / g.tw, ow = ow0 + R % g.tw;
          if (oh >= g.oh || ow >= g.ow) continue;
          const i64 orow = (i64)n * g.os_n + (i64)oh * g.os_h + (i64)ow * g.os_w + ob * BN;
#pragma unroll
          for (int j = 0; j < BN / 8; j++) {
            const int cc = 8 * j + qc;
            float v0 = acc[m][4 * j + 2 * h], v1 = acc[m][4 * j + 2 * h + 1];
            if (bias) v0 += ptc_ctma_ld<DT>(bias, ob * BN + cc), v1 += ptc_ctma_ld<DT>(bias, ob * BN + cc + 1);
            if (RELU) v0 = fmaxf(v0, 0.f), v1 = fmaxf(v1, 0.f);
            ptc_ctma_store2<DT>(out, orow + cc, v0, v1);
          }
        }
    }
  }
}

// The weights [OC][C][KH][KW] -> [KH * KW * C / CH][OC][CH] (the B tiles
// the kernel copies as they are): f32 (CH 32) rounded to TF32, 16-bit
// types (CH 64) copied.
template <typename T, int CH>
PTC_D void ptc_ctma_wprep_t(const T* __restrict__ w, T* __restrict__ o, int oc, int c, int kh, int kw) {
  const i64 total = (i64)oc * c * kh * kw;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    // i indexes the output: ((tap * (c / CH) + chunk) * oc + m) * CH + e
    const int e = (int)(i % CH);
    i64 rest = i / CH;
    const int m = (int)(rest % oc);
    rest /= oc;
    const int chunk = (int)(rest % (c / CH)), tap = (int)(rest / (c / CH));
    const int r = tap / kw, s = tap - r * kw, ci = chunk * CH + e;
    const T v = w[(((i64)m * c + ci) * kh + r) * kw + s];
    if constexpr (CH == 32) {
      u32 t;
      asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t) : "f"(v));
      o[i] = __uint_as_float(t);
    } else {
      o[i] = v;
    }
  }
}
extern "C" __global__ void ptc_ctma_wprep(const float* __restrict__ w, float* __restrict__ o, int oc,
                                          int c, int kh, int kw) {
  ptc_ctma_wprep_t<float, 32>(w, o, oc, c, kh, kw);
}
extern "C" __global__ void ptc_ctma_wprep16(const u16* __restrict__ w, u16* __restrict__ o, int oc, int c,
                                            int kh, int kw) {
  ptc_ctma_wprep_t<u16, 64>(w, o, oc, c, kh, kw);
}

// One instantiation per module: PTC_CTMA_KERNEL(ptc_ctma, 0, 64, 2, true)
// (f32 as TF32 (0), bf16 (1) or f16 (2), 64 or 128 output channels a
// block, 1 or 2 64-row groups per consumer warpgroup, ReLU); launched with 384 threads, a persistent grid and 1024 + NA * aslot
// + NB * BN * 128 + 24 * NA + 16 * NB bytes of dynamic shared memory.
#define PTC_CTMA_KERNEL(name, DT, BN, MT, RELU)                                                \
  extern "C" __global__ void __launch_bounds__(384, 1)                                        \
      name(const void* bias, void* out, ptc_ctma_args g, const __grid_constant__ ptc_tmap tx,   \
           const __grid_constant__ ptc_tmap tw) {                                             \
    ptc_ctma_body<DT, BN, MT, RELU>(bias, out, g, &tx, &tw);                                  \
  }
