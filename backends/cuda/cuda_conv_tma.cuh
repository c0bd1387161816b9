// cuda_conv_tma.cuh - a Hopper (sm_90a) TF32 convolution of channels-last
// activations: TMA tiled loads (no im2col) + wgmma, warp-specialized.
// WORK IN PROGRESS (session 13): compiled by the NVRTC check only, not yet
// run on a GPU and not wired into the backend; docs/cuda.md's "Plan: a
// Hopper convolution" says what it is for. Compiled after cuda_prelude.cuh,
// cuda_attn.cuh and cuda_attn_wg.cuh, whose mbarrier, wgmma-descriptor and
// tensor-copy helpers it uses (embedded as ptc_cuda_conv_tma_text).
//
// out[n][oh][ow][oc] = act(bias[oc] + sum over taps (r, s) and channels c
//   of x[n][oh * SH - ph + r][ow * SW - pw + s][c] * w[oc][c][r][s])
// for stride SH = SW = 1 (stride 2 needs the maps' element strides: not
// done), dilation 1, one group, C a multiple of 32, OC a multiple of BN.
//
// A block: two consumer warpgroups and one producer warpgroup. A work item
// is two output tiles of BH x BW = 64 pixels each (consecutive tiles of
// the flattened (image, tile row, tile column) order: they may lie in two
// images) times BN output channels; consumer warpgroup g owns tile g.
//  - K steps: for each tap (r, s) and each 32-channel chunk c0, the
//    producer's thread 0 copies, by tensor copies (4-D map {C, W, H, N}
//    over the input, box {32, BW, BH, 1}, 128-byte swizzle; coordinates
//    outside the input read as zeros, which is the padding), the A tile of
//    each consumer (64 rows of 128 bytes: pixel-major, channels along the
//    row, the K-major layout wgmma reads) and the B tile (3-D map over the
//    weights prepared as [tap * C / 32][OC][32], already rounded to TF32;
//    box {32, BN, 1}) into stage g % NS of a ring;
//  - the producer's other three warps wait for the stage, round the A
//    tiles to TF32 in place (cvt.rna: the tensor cores would truncate them)
//    and arrive on the stage's ready barrier (96 arrivals) after a
//    generic-to-async proxy fence;
//  - each consumer warpgroup waits for ready, issues wgmma m64nBNk8 (TF32,
//    both operands from shared memory) over the chunk's 4 k-steps, and
//    releases the stage (empty barrier, 256 arrivals) once its group of
//    the previous stage is done (wgmma.wait_group 1);
//  - the epilogue adds the bias, applies ReLU (RELU) and stores the tile's
//    rows inside the output.

#ifndef PTC_CTMA_NS
#define PTC_CTMA_NS 4
#endif

struct ptc_ctma_args {
  int n, h, w, c;       // input dims (NHWC dense as the map says)
  int oh, ow, oc;       // output dims
  int kh, kw, ph, pw;   // window and padding
  i64 os_n, os_h, os_w; // output strides (elements; channels unit stride)
  int tiles_h, tiles_w; // output tiles per image along H and W
};

// D (m64 x nN, f32) += A (descriptor a: 64 rows x 8 TF32, K-major, 128-byte
// swizzle) * B (descriptor b: N rows x 8 TF32, K-major); sc 0: D = A * B.
template <int N>
PTC_D void ptc_ctma_mma(float* d, u64 a, u64 b, int sc);

template <>
PTC_D void ptc_ctma_mma<64>(float* d, u64 a, u64 b, int sc) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "%32, %33, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(sc));
}

// Rounds this thread's share of a landed A stage (nbytes at shared address
// s, 16 bytes at a time by the 96 threads t = 0..95) to TF32 in place.
PTC_D void ptc_ctma_round(u32 s, int nbytes, int t) {
  for (int o = t * 16; o < nbytes; o += 96 * 16) {
    u32 v0, v1, v2, v3;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v0), "=r"(v1), "=r"(v2), "=r"(v3)
                 : "r"(s + o));
    u32 r0, r1, r2, r3;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r0) : "f"(__uint_as_float(v0)));
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r1) : "f"(__uint_as_float(v1)));
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r2) : "f"(__uint_as_float(v2)));
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r3) : "f"(__uint_as_float(v3)));
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(s + o), "r"(r0), "r"(r1), "r"(r2),
                 "r"(r3)
                 : "memory");
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// Tile index q (flattened over images, tile rows, tile columns) -> image
// and the tile's first output row and column.
PTC_D void ptc_ctma_tile(const ptc_ctma_args& g, i64 q, int BH, int BW, int& n, int& oh0, int& ow0) {
  const i64 per = (i64)g.tiles_h * g.tiles_w;
  n = (int)(q / per);
  const int t = (int)(q - (i64)n * per);
  oh0 = t / g.tiles_w * BH;
  ow0 = t % g.tiles_w * BW;
}

template <int BN, int BH, int BW, bool RELU>
PTC_D void ptc_ctma_body(const float* __restrict__ bias, float* __restrict__ out,
                         const ptc_ctma_args& g, const ptc_tmap* tx, const ptc_tmap* tw) {
  constexpr int NS = PTC_CTMA_NS, ABYTES = 64 * 128, BBYTES = BN * 128;
  constexpr int STAGE = 2 * ABYTES + BBYTES;
  static_assert(BH * BW == 64, "64-pixel tiles");
  static_assert(BN == 64, "64 output channels a block (m64n64k8)");
  const u32 base = (ptc_attn_smem(ptc_wg_sm) + 1023u) & ~1023u;
  // mbarriers after the ring: full (1 arrival + bytes), ready (96), empty (256)
  const u32 bf = base + NS * STAGE, br = bf + 8 * NS, be = br + 8 * NS;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  if (tid == 0) {
    for (int i = 0; i < NS; i++) {
      ptc_mb_init(bf + 8 * i, 1);
      ptc_mb_init(br + 8 * i, 96);
      ptc_mb_init(be + 8 * i, 256);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const i64 ntiles = (i64)g.n * g.tiles_h * g.tiles_w, nitems = (ntiles + 1) / 2;
  const int nchunk = g.c / 32, nk = g.kh * g.kw * nchunk, ocb = g.oc / BN;
  // K steps of the block's work items, counted over all of them (the ring
  // position of step k of the current item: kg + k)
  u32 kg = 0;
  if (warp >= 8) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
    const int p = tid - 256;
    for (i64 it = blockIdx.x; it < nitems * ocb; it += gridDim.x) {
      const i64 pair = it / ocb;
      const int ob = (int)(it - pair * ocb);
      int n0, oh0, ow0, n1, oh1, ow1;
      ptc_ctma_tile(g, 2 * pair, BH, BW, n0, oh0, ow0);
      const bool two = 2 * pair + 1 < ntiles;
      ptc_ctma_tile(g, two ? 2 * pair + 1 : 2 * pair, BH, BW, n1, oh1, ow1);
      for (int k = 0; k < nk; k++) {
        const u32 q = kg + (u32)k, b = q % NS, ph = q / NS;
        const int tap = k / nchunk, c0 = (k - tap * nchunk) * 32;
        const int r = tap / g.kw, s = tap - r * g.kw;
        const u32 st = base + b * STAGE;
        if (p == 0) {
          if (q >= NS) ptc_mb_wait(be + 8 * b, (ph - 1) & 1);
          ptc_mb_expect(bf + 8 * b, STAGE);
          ptc_tma_load(st, tx, c0, ow0 - g.pw + s, oh0 - g.ph + r, n0, 0, bf + 8 * b);
          ptc_tma_load(st + ABYTES, tx, c0, ow1 - g.pw + s, oh1 - g.ph + r, n1, 0, bf + 8 * b);
          ptc_tma_load(st + 2 * ABYTES, tw, 0, ob * BN, k, 0, 0, bf + 8 * b);
        } else if (p >= 32) {
          // the rounding warps
          ptc_mb_wait(bf + 8 * b, ph & 1);
          ptc_ctma_round(st, 2 * ABYTES, p - 32);
          ptc_mb_arrive(br + 8 * b);
        }
      }
      kg += (u32)nk;
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
    const int wg = warp >> 2, wr = (warp & 3) * 16 + (lane >> 2), qc = (lane & 3) * 2;
    for (i64 it = blockIdx.x; it < nitems * ocb; it += gridDim.x) {
      const i64 pair = it / ocb;
      const int ob = (int)(it - pair * ocb);
      const i64 tq = 2 * pair + wg;
      float acc[BN / 2];
#pragma unroll
      for (int i = 0; i < BN / 2; i++) acc[i] = 0.f;
      for (int k = 0; k < nk; k++) {
        const u32 q = kg + (u32)k, b = q % NS, ph = q / NS;
        const u32 st = base + b * STAGE;
        ptc_mb_wait(br + 8 * b, ph & 1);
        const u64 da = ptc_wg_desc(st + wg * ABYTES, 16, 1024);
        const u64 db = ptc_wg_desc(st + 2 * ABYTES, 16, 1024);
        ptc_wg_fence();
#pragma unroll
        for (int kk = 0; kk < 4; kk++)
          ptc_ctma_mma<BN>(acc, da + (u64)((kk * 32) >> 4), db + (u64)((kk * 32) >> 4), 1);
        ptc_wg_commit();
        // the previous stage's products are done: release it
        ptc_wg_wait<1>();
        ptc_wg_hold<BN / 2>(acc);
        if (k > 0) ptc_mb_arrive(be + 8 * ((q - 1) % NS));
      }
      ptc_wg_wait<0>();
      ptc_wg_hold<BN / 2>(acc);
      if (nk > 0) ptc_mb_arrive(be + 8 * ((kg + (u32)nk - 1) % NS));
      kg += (u32)nk;
      if (tq >= ntiles) continue;
      int n, oh0, ow0;
      ptc_ctma_tile(g, tq, BH, BW, n, oh0, ow0);
      // accumulator rows wr, wr + 8 (pixels of the tile), columns
      // 8 j + qc, + 1 (output channels ob * BN + ...)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int px = wr + 8 * h, oh = oh0 + px / BW, ow = ow0 + px % BW;
        if (oh >= g.oh || ow >= g.ow) continue;
        float* orow = out + (i64)n * g.os_n + (i64)oh * g.os_h + (i64)ow * g.os_w + ob * BN;
#pragma unroll
        for (int j = 0; j < BN / 8; j++) {
          const int cc = 8 * j + qc;
          float v0 = acc[4 * j + 2 * h], v1 = acc[4 * j + 2 * h + 1];
          if (bias) v0 += bias[ob * BN + cc], v1 += bias[ob * BN + cc + 1];
          if (RELU) v0 = fmaxf(v0, 0.f), v1 = fmaxf(v1, 0.f);
          *(float2*)&orow[cc] = make_float2(v0, v1);
        }
      }
    }
  }
}

// The weights [OC][C][KH][KW] (f32) -> [KH * KW * C / 32][OC][32], rounded
// to TF32 (the B tiles the kernel copies as they are).
extern "C" __global__ void ptc_ctma_wprep(const float* __restrict__ w, float* __restrict__ o, int oc,
                                          int c, int kh, int kw) {
  const i64 total = (i64)oc * c * kh * kw;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < total; i += (i64)gridDim.x * blockDim.x) {
    // i indexes the output: ((tap * (c / 32) + chunk) * oc + m) * 32 + e
    const int e = (int)(i % 32);
    i64 rest = i / 32;
    const int m = (int)(rest % oc);
    rest /= oc;
    const int chunk = (int)(rest % (c / 32)), tap = (int)(rest / (c / 32));
    const int r = tap / kw, s = tap - r * kw, ci = chunk * 32 + e;
    u32 t;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(t) : "f"(w[(((i64)m * c + ci) * kh + r) * kw + s]));
    o[i] = __uint_as_float(t);
  }
}

// One instantiation per module: PTC_CTMA_KERNEL(ptc_ctma, 64, 8, 8, true)
// (64 output channels a block, 8 x 8 pixel tiles, ReLU); launched with 384
// threads, a persistent grid and 1024 + NS * (2 * 8192 + BN * 128) + 24 * NS
// bytes of dynamic shared memory.
#define PTC_CTMA_KERNEL(name, BN, BH, BW, RELU)                                                \
  extern "C" __global__ void __launch_bounds__(384, 1)                                        \
      name(const float* bias, float* out, ptc_ctma_args g, const __grid_constant__ ptc_tmap tx, \
           const __grid_constant__ ptc_tmap tw) {                                             \
    ptc_ctma_body<BN, BH, BW, RELU>(bias, out, g, &tx, &tw);                                  \
  }
