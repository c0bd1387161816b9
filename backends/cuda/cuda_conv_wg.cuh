// cuda_conv_wg.cuh - convolution on Hopper's warpgroup MMA (wgmma, sm_90a
// only; embedded as ptc_cuda_conv_wg_text, compiled after the prelude once
// per process, element type and tile shape; host side in cuda_conv_wg.c).
//
// NCHW input and output (any input strides, contiguous output), one group,
// no dilation. GEMM per image: D[m][n] = sum_k A[m][k] * B[k][n], m = an
// output pixel, n = an output channel, k = (channel chunk, tap). The M index
// is "flat": m = oy * WQ + ox with WQ = OW + (KW-1)/SW, so that the input
// pixel of tap (kh, kw) is, in the stride phase (kh % SH, kw % SW) of the
// padded input, the flat entry m + (kh/SH) * WQ + kw/SW: every tap's A tile
// is the same shared-memory window of the input shifted by a constant. Rows
// with ox >= OW (the WQ - OW extra columns) are computed and discarded.
// The input is first copied to NHWC (ptc_cwg_*_nhwc: channels zero-padded
// to whole stages, TF32-rounded with cvt.rna), so that 16 bytes of K (8
// f16/bf16 or 4 f32 channels of one pixel) are contiguous. Per K stage
// (kch chunks of KC channels: 16 for f16/bf16, 8 for TF32; one wgmma K
// step each) the block copies by cp.async the window of its BM rows once
// (phases x 2*kch K columns x (BM + (KH-1)/SH * WQ + (KW-1)/SW) entries of
// 16 bytes: the no-swizzle K-major "core matrix" image wgmma reads: 8
// consecutive rows of 16 bytes, SBO 128 between 8-row groups, LBO one K
// column apart; zero-filled outside the image) and then runs KH*KW*kch
// wgmmas over it, the A descriptor of a tap moved by its offset (a table
// in shared memory). A tap-shifted start is only 16-byte aligned, which
// the no-swizzle layout allows. B (weights) is copied once per call by
// ptc_cwg_*_wprep into the exact shared-memory image of each (N tile, K
// stage): [tap][chunk][2 K columns][BN rows][16 bytes], so a stage's B is
// one linear cp.async copy. Window and B of stage k+2 are issued after
// stage k's wgmmas; four stages of shared memory; wgmma.fence /
// commit_group / wait_group 1 keep one stage's MMAs in flight.
//
// Block: 256 threads = two warpgroups, each a 64 x WN wgmma tile: stacked
// along M (WGM 2: BM 128, BN WN) or side by side along N (WGM 1: BM 64,
// BN 2 * WN). Grid: one block per (image, M tile, N tile), N tiles
// fastest (blocks sharing a window run together). Epilogue: + beta *
// bias[oc], the activation (ir_activation codes), through a float tile in
// shared memory, stored along the pixels of each output channel.

struct ptc_cwg_args {  // layout = cwg_args (cuda_conv_wg.c)
  i64 xs_n;                   // image stride (elements)
  i64 bias_st;
  i32 xs_c, xs_h, xs_w;       // input strides inside an image (32-bit: checked by the host)
  i32 c, h, w, oc, oh, ow;
  i32 kh, kw, sh, sw, ph, pw;
  i32 wq;                     // flat row width: ow + (kw - 1) / sw
  i32 pwn;                    // stride phases along w used: min(kw, sw)
  i32 wl;                     // window entries per phase and K column: bm + (kh-1)/sh*wq + (kw-1)/sw
  i32 wlp;                    // wl rounded up to 8
  i32 units;                  // 16-byte window units per stage: phases * 2 * wl
  i32 mtiles, ntiles;         // M tiles per image, N tiles
  i32 nk;                     // K stages: ceil(c / (KC * kch))
  i32 win_bytes, b_bytes, stage_bytes;
  i32 act, has_bias;
  float beta;
  i32 cp;                     // channels of the NHWC copy: nk * KC * kch (zero past c)
  i32 kch;                    // K chunks (of KC channels) per stage
  i32 kk;                     // taps: kh * kw (<= PTC_CWG_MAX_TAPS)
  i32 tab_off;                // bytes: the tap and row tables after the stages / epilogue tile
  i32 tiles;                  // (image, M tile, N tile) tiles: n * mtiles * ntiles
};


#define PTC_CWG_STAGES 4  // = CWG_STAGES in cuda_conv_wg.c
#define PTC_CWG_UPT 8     // window units per thread and stage (= CWG_UPT)
#define PTC_CWG_MAX_TAPS 64  // = CWG_MAX_TAPS

PTC_D u32 ptc_cwg_smem(const void* p) { return (u32)__cvta_generic_to_shared(p); }
PTC_D void ptc_cwg_cp16(u32 dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
// 16 bytes, or zeros when bytes is 0 (nothing read)
PTC_D void ptc_cwg_cp16z(u32 dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
PTC_D void ptc_cwg_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> PTC_D void ptc_cwg_cp_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }
PTC_D void ptc_cwg_fence_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
PTC_D void ptc_cwg_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
PTC_D void ptc_cwg_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> PTC_D void ptc_cwg_wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
PTC_D u32 ptc_cwg_tf32(float x) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}
// A no-swizzle K-major shared-memory matrix descriptor: start (16-byte
// aligned), LBO (bytes between K-adjacent core matrices), SBO (bytes
// between M/N-adjacent ones).
PTC_D u64 ptc_cwg_desc(u32 addr, u32 lbo, u32 sbo) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(lbo >> 4) << 16) | ((u64)(sbo >> 4) << 32);
}

// One wgmma m64 x N x (16 halves | 8 tf32), A and B from shared memory.
template <int K, int N> struct ptc_cwg_mma;
template <> struct ptc_cwg_mma<0, 64> {
  static PTC_D void run(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct ptc_cwg_mma<0, 128> {
  static PTC_D void run(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct ptc_cwg_mma<1, 64> {
  static PTC_D void run(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct ptc_cwg_mma<1, 128> {
  static PTC_D void run(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct ptc_cwg_mma<2, 64> {
  static PTC_D void run(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(1));
  }
};
template <> struct ptc_cwg_mma<2, 128> {
  static PTC_D void run(float* d, u64 da, u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(1));
  }
};

// The block's pinned accumulators: the compiler must not move reads or
// writes of them across the asynchronous wgmma.
template <int R> PTC_D void ptc_cwg_pin(float* d) {
#pragma unroll
  for (int i = 0; i < R; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// The tap table (both kernel forms): tap t's start in the stage's window,
// in 16-byte units (its stride phase's block of columns, then its row and
// column offset in the phase's downsampled grid), one thread per tap.
PTC_D void ptc_cwg_tap_table(int* tap_tab, int tid, int cols, const ptc_cwg_args& g) {
  if (tid < g.kk) {
    const int kh = tid / g.kw, kw = tid - kh * g.kw;
    const int p = (kh % g.sh) * g.pwn + (kw % g.sw);
    tap_tab[tid] = p * cols * g.wlp + (kh / g.sh) * g.wq + kw / g.sw;
  }
}

// Window unit u's source offset in the NHWC copy (elements, channel chunk
// 0) for the tile whose first output pixel is m0, or -1 where the unit's
// input pixel is padding (both kernel forms; E channels per unit).
PTC_D int ptc_cwg_unit_off(int u, int m0, int cols, int E, const ptc_cwg_args& g) {
  const int pc = u / g.wl, j = u - pc * g.wl, p = pc / cols, col = pc - p * cols;
  const int py = p / g.pwn, px = p - py * g.pwn;
  const int q = m0 + j, iyq = q / g.wq, ixq = q - iyq * g.wq;
  const int iy = iyq * g.sh + py - g.ph, ix = ixq * g.sw + px - g.pw;
  return (unsigned)iy < (unsigned)g.h && (unsigned)ix < (unsigned)g.w ? (iy * g.w + ix) * g.cp + col * E : -1;
}

// One K stage of the pipeline, for both kernel forms (stage gs of `total`
// in the block's stream): waits for this stage's copies (this thread's, then
// the block's), issues its wgmma chain over every tap and K chunk, then the
// copies of stage gs + ST - 2 into the buffer whose MMAs (gs - 2) are done
// everywhere, and leaves one wgmma group in flight.
template <int K, int WN, int R, int ST, class Load>
PTC_D void ptc_cwg_stage(float* acc, int gs, int total, u32 s0, const ptc_cwg_args& g, int wgm, int wgn,
                         const int* tap_tab, u32 a_lbo, u32 b_lbo, u64 a_chunk, u64 b_tile, Load& load) {
  ptc_cwg_cp_wait<ST - 3>();  // stage gs's copies (this thread's)
  ptc_cwg_fence_async();      // -> the async proxy
  __syncthreads();            // stage gs complete; every warpgroup's MMAs of gs-2 done
  const u32 sb = s0 + (u32)((gs % ST) * g.stage_bytes);
  const u64 da0 = ptc_cwg_desc(sb + (u32)(wgm * 64) * 16u, a_lbo, 128);
  u64 db = ptc_cwg_desc(sb + (u32)(g.win_bytes + wgn * (WN / 8) * 128), b_lbo, 128);
  ptc_cwg_pin<R>(acc);
  ptc_cwg_wg_fence();
  for (int t = 0; t < g.kk; t++) {
    u64 da = da0 + (u64)tap_tab[t];
    for (int ch = 0; ch < g.kch; ch++, da += a_chunk, db += b_tile) ptc_cwg_mma<K, WN>::run(acc, da, db);
  }
  ptc_cwg_wg_commit();
  if (gs + ST - 2 < total) load(gs + ST - 2);
  ptc_cwg_cp_commit();  // possibly empty: the group count stays uniform
  ptc_cwg_wg_wait<1>();
  ptc_cwg_pin<R>(acc);
}

template <int K, int WGM, int WN> PTC_D void ptc_cwg_body(const typename ptc_conv_kind<K>::S* __restrict__ x,
                                                          const typename ptc_conv_kind<K>::S* __restrict__ wp,
                                                          const typename ptc_conv_kind<K>::S* __restrict__ bias,
                                                          typename ptc_conv_kind<K>::S* __restrict__ out,
                                                          const ptc_cwg_args& g) {
  typedef ptc_conv_kind<K> KD;
  typedef typename KD::S S;
  enum {
    BM = 64 * WGM,
    BN = WN * (2 / WGM),
    E = 16 / KD::ES,  // elements per 16-byte K column entry
    KC = 2 * E,       // channels per K chunk (one wgmma K step)
    R = WN / 2,       // accumulators per thread
    ST = PTC_CWG_STAGES,
    UPT = PTC_CWG_UPT,
    BMP = BM + 4,     // epilogue tile row (floats): conflict-free stores of the fragments
  };
  extern __shared__ __align__(128) unsigned char smem[];
  int* tap_tab = (int*)(smem + g.tab_off);            // A start of each tap (16-byte units)
  int* row_tab = tap_tab + PTC_CWG_MAX_TAPS;          // output offset of each tile row (-1: none)
  const int tid = threadIdx.x, wg = tid >> 7;
  const int wgm = WGM == 2 ? wg : 0, wgn = WGM == 2 ? 0 : wg;
  const int nt = (int)(blockIdx.x % (unsigned)g.ntiles), mtall = (int)(blockIdx.x / (unsigned)g.ntiles);
  const int img = mtall / g.mtiles, m0 = (mtall - img * g.mtiles) * BM;
  const S* xb = x + (i64)img * g.xs_n;
  const int cols = 2 * g.kch;  // 16-byte K columns per phase and stage
  ptc_cwg_tap_table(tap_tab, tid, cols, g);
  if (tid >= 128 && tid - 128 < BM) {
    const int q = m0 + tid - 128, oy = q / g.wq, ox = q - oy * g.wq;
    row_tab[tid - 128] = oy < g.oh && ox < g.ow ? oy * g.ow + ox : -1;
  }
  // this thread's window units (fixed for the block; the stage adds its
  // channels): 16 bytes of the NHWC copy (E channels of one pixel) each
  int uoff[UPT];
  u32 udst[UPT];
#pragma unroll
  for (int i = 0; i < UPT; i++) {
    const int u = tid + 256 * i;
    uoff[i] = -1;
    udst[i] = 0;
    if (u < g.units) {
      const int pc = u / g.wl, j = u - pc * g.wl;
      uoff[i] = ptc_cwg_unit_off(u, m0, cols, E, g);
      udst[i] = (u32)(pc * g.wlp + j) * 16u;
    }
  }
  const int cps = KC * g.kch;  // channels per stage
  const unsigned char* wsrc = (const unsigned char*)wp + (i64)nt * g.nk * g.b_bytes;
  const u32 s0 = ptc_cwg_smem(smem);
  // stage kt's window and B tile, by cp.async into buffer kt % ST
  auto load = [&](int kt) {
    const u32 sw = s0 + (u32)((kt % ST) * g.stage_bytes);
    const S* xc = xb + kt * cps;
#pragma unroll
    for (int i = 0; i < UPT; i++)
      if (tid + 256 * i < g.units) ptc_cwg_cp16z(sw + udst[i], uoff[i] >= 0 ? xc + uoff[i] : xb, uoff[i] >= 0 ? 16 : 0);
    const u32 dst = sw + (u32)g.win_bytes;
    const unsigned char* src = wsrc + (i64)kt * g.b_bytes;
    for (int c = tid * 16; c < g.b_bytes; c += 256 * 16) ptc_cwg_cp16(dst + (u32)c, src + c);
  };
  float acc[R];
#pragma unroll
  for (int i = 0; i < R; i++) acc[i] = 0.f;
  const int nk = g.nk;
  const u32 a_lbo = (u32)g.wlp * 16u, b_lbo = (u32)BN * 16u;
  // descriptor steps (16-byte units in the start field): a K chunk of A
  // (two columns), a (tap, chunk) B tile
  const u64 a_chunk = (u64)(2 * g.wlp), b_tile = (u64)(BN * 2);
#pragma unroll
  for (int s = 0; s < ST - 2; s++) {
    if (s < nk) load(s);
    ptc_cwg_cp_commit();
  }
  for (int kt = 0; kt < nk; kt++)
    ptc_cwg_stage<K, WN, R, ST>(acc, kt, nk, s0, g, wgm, wgn, tap_tab, a_lbo, b_lbo, a_chunk, b_tile, load);
  ptc_cwg_wg_wait<0>();
  ptc_cwg_pin<R>(acc);
  __syncthreads();  // every warpgroup done with the stages: the epilogue tile reuses them
  // epilogue: acc[4j + 2h + e] = D[row 16*warp + lane/4 + 8h][col 8j + 2*(lane%4) + e],
  // + bias, activation, into a [BN][BMP] float tile; then each output
  // channel's rows stored along the pixels (coalesced)
  const int warp = (tid >> 5) & 3, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  float* tile = (float*)smem;
  const float beta = g.beta;
#pragma unroll
  for (int j = 0; j < WN / 8; j++)
#pragma unroll
    for (int e = 0; e < 2; e++) {
      const int nl = wgn * WN + 8 * j + 2 * tq + e, n = nt * BN + nl;
      const float bv = g.has_bias && n < g.oc ? beta * KD::load(bias[(i64)n * g.bias_st]) : 0.f;
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int m = wgm * 64 + warp * 16 + gq + 8 * h;
        tile[nl * BMP + m] = ptc_conv_act(g.act, acc[4 * j + 2 * h + e] + bv);
      }
    }
  __syncthreads();
  const i64 ohw = (i64)g.oh * g.ow;
  S* ob = out + ((i64)img * g.oc + (i64)nt * BN) * ohw;
  const int nmax = min(BN, g.oc - nt * BN);
  for (int idx = tid; idx < nmax * BM; idx += 256) {
    const int nl = idx / BM, m = idx - nl * BM, ro = row_tab[m];
    if (ro >= 0) ob[(i64)nl * ohw + ro] = KD::store(tile[nl * BMP + m]);
  }
}

// The persistent form (PTC_CWG_PERSIST 1, the default): the grid is at
// most the blocks that fit on the device at once, and block b runs tiles
// b, b + grid, b + 2 grid, ... as one stream of K stages, so the copies
// of the next tile's first stages are in flight while the last stages of
// the current one are multiplied (no pipeline drain and refill per tile,
// the tap table and the per-thread copy units set up once per block or
// tile). A finished tile's accumulators go straight from registers to the
// output (+ bias, activation; no shared-memory tile and no barrier): a
// thread's two rows are two output pixels, its 2 * WN / 8 columns output
// channels.
template <int K, int WGM, int WN> PTC_D void ptc_cwg_body_p(const typename ptc_conv_kind<K>::S* __restrict__ x,
                                                            const typename ptc_conv_kind<K>::S* __restrict__ wp,
                                                            const typename ptc_conv_kind<K>::S* __restrict__ bias,
                                                            typename ptc_conv_kind<K>::S* __restrict__ out,
                                                            const ptc_cwg_args& g) {
  typedef ptc_conv_kind<K> KD;
  typedef typename KD::S S;
  enum {
    BM = 64 * WGM,
    BN = WN * (2 / WGM),
    E = 16 / KD::ES,  // elements per 16-byte K column entry
    KC = 2 * E,       // channels per K chunk (one wgmma K step)
    R = WN / 2,       // accumulators per thread
    ST = PTC_CWG_STAGES,
    UPT = PTC_CWG_UPT,
  };
  extern __shared__ __align__(128) unsigned char smem[];
  int* tap_tab = (int*)(smem + g.tab_off);  // A start of each tap (16-byte units)
  const int tid = threadIdx.x, wg = tid >> 7;
  const int wgm = WGM == 2 ? wg : 0, wgn = WGM == 2 ? 0 : wg;
  const int cols = 2 * g.kch;  // 16-byte K columns per phase and stage
  ptc_cwg_tap_table(tap_tab, tid, cols, g);
  const int grid = (int)gridDim.x, b0 = (int)blockIdx.x;
  const int mine = (g.tiles - b0 + grid - 1) / grid;  // tiles of this block
  const int nk = g.nk, total = mine * nk;             // K stages of this block
  // this thread's window units: the destination is the same for every tile
  // (the unit's phase, K column and row), the source offset per tile
  int uoff[UPT];
  u32 udst[UPT];
#pragma unroll
  for (int i = 0; i < UPT; i++) {
    const int u = tid + 256 * i;
    uoff[i] = -1;
    udst[i] = 0;
    if (u < g.units) {
      const int pc = u / g.wl, j = u - pc * g.wl;
      udst[i] = (u32)(pc * g.wlp + j) * 16u;
    }
  }
  const int cps = KC * g.kch;  // channels per stage
  const u32 s0 = ptc_cwg_smem(smem);
  int ld_tile = -1;            // the tile whose units uoff holds
  const S* ld_xb = x;
  const unsigned char* ld_w = (const unsigned char*)wp;
  // stage gs (tile gs / nk, K stage gs % nk) by cp.async into buffer gs % ST
  auto load = [&](int gs) {
    const int ti = gs / nk, kt = gs - ti * nk;
    if (ti != ld_tile) {
      ld_tile = ti;
      const int u = b0 + ti * grid, nt = u % g.ntiles, mtall = u / g.ntiles;
      const int img = mtall / g.mtiles, m0 = (mtall - img * g.mtiles) * BM;
      ld_xb = x + (i64)img * g.xs_n;
      ld_w = (const unsigned char*)wp + (i64)nt * g.nk * g.b_bytes;
#pragma unroll
      for (int i = 0; i < UPT; i++) {
        const int uu = tid + 256 * i;
        uoff[i] = -1;
        if (uu < g.units) uoff[i] = ptc_cwg_unit_off(uu, m0, cols, E, g);
      }
    }
    const u32 sw = s0 + (u32)((gs % ST) * g.stage_bytes);
    const S* xc = ld_xb + kt * cps;
#pragma unroll
    for (int i = 0; i < UPT; i++)
      if (tid + 256 * i < g.units) ptc_cwg_cp16z(sw + udst[i], uoff[i] >= 0 ? xc + uoff[i] : ld_xb, uoff[i] >= 0 ? 16 : 0);
    const u32 dst = sw + (u32)g.win_bytes;
    const unsigned char* src = ld_w + (i64)kt * g.b_bytes;
    for (int c = tid * 16; c < g.b_bytes; c += 256 * 16) ptc_cwg_cp16(dst + (u32)c, src + c);
  };
  float acc[R];
#pragma unroll
  for (int i = 0; i < R; i++) acc[i] = 0.f;
  const u32 a_lbo = (u32)g.wlp * 16u, b_lbo = (u32)BN * 16u;
  const u64 a_chunk = (u64)(2 * g.wlp), b_tile = (u64)(BN * 2);
#pragma unroll
  for (int s = 0; s < ST - 2; s++) {
    if (s < total) load(s);
    ptc_cwg_cp_commit();
  }
  const int warp = (tid >> 5) & 3, lane = tid & 31, gq = lane >> 2, tq = lane & 3;
  const i64 ohw = (i64)g.oh * g.ow;
  const float beta = g.beta;
  int ct = 0, ckt = 0;  // the tile and K stage being multiplied
  for (int gs = 0; gs < total; gs++) {
    ptc_cwg_stage<K, WN, R, ST>(acc, gs, total, s0, g, wgm, wgn, tap_tab, a_lbo, b_lbo, a_chunk, b_tile, load);
    if (++ckt < nk) continue;
    // the tile is done: acc[4j + 2h + e] = D[row 16*warp + lane/4 + 8h][col 8j + 2*(lane%4) + e]
    ptc_cwg_wg_wait<0>();
    ptc_cwg_pin<R>(acc);
    {
      const int u = b0 + ct * grid, nt = u % g.ntiles, mtall = u / g.ntiles;
      const int img = mtall / g.mtiles, m0 = (mtall - img * g.mtiles) * BM;
      int ro[2];
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int q = m0 + wgm * 64 + warp * 16 + gq + 8 * h, oy = q / g.wq, ox = q - oy * g.wq;
        ro[h] = oy < g.oh && ox < g.ow ? oy * g.ow + ox : -1;
      }
      S* ob = out + (i64)img * g.oc * ohw;
#pragma unroll
      for (int j = 0; j < WN / 8; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
          const int n = nt * BN + wgn * WN + 8 * j + 2 * tq + e;
          if (n >= g.oc) continue;
          const float bv = g.has_bias ? beta * KD::load(bias[(i64)n * g.bias_st]) : 0.f;
#pragma unroll
          for (int h = 0; h < 2; h++)
            if (ro[h] >= 0) ob[(i64)n * ohw + ro[h]] = KD::store(ptc_conv_act(g.act, acc[4 * j + 2 * h + e] + bv));
        }
    }
#pragma unroll
    for (int i = 0; i < R; i++) acc[i] = 0.f;
    ckt = 0;
    ct++;
  }
  ptc_cwg_wg_wait<0>();
}

// The input [N][C][H][W] (any strides) -> an NHWC copy [N][H][W][cp],
// channels zero past c (f32 rounded to TF32, cvt.rna): the window's 16-byte
// units become contiguous (cp.async). A block transposes 64 channels x 64
// pixels of one image through shared memory: 16 loads a thread along the
// pixels (coalesced, all issued before the first use), then one 16-byte
// store per (pixel, E channels) (E = 16 bytes of elements), coalesced along
// the channels. `flat`: the plane is dense in pixel order (xs_h == w *
// xs_w), so a pixel's offset is p * xs_w (no division). 32-bit offsets
// inside an image (checked by the host: cuda_conv_wg_refusal).
template <int K> PTC_D void ptc_cwg_nhwc(const typename ptc_conv_kind<K>::S* __restrict__ x,
                                         typename ptc_conv_kind<K>::S* __restrict__ y, i64 xs_n, i64 xs_c,
                                         i64 xs_h, i64 xs_w, i32 c, i32 h, i32 w, i32 cp, i32 flat) {
  typedef ptc_conv_kind<K> KD;
  typedef typename KD::S S;
  enum { E = 16 / KD::ES, TC = 64, TP = 64, PER = TC * TP / 256 };
  __shared__ float t[TC][TP + 1];
  const int hw = h * w, p0 = blockIdx.x * TP, c0 = blockIdx.y * TC, img = blockIdx.z;
  const S* xi = x + (i64)img * xs_n;
  const int sc = (int)xs_c, sh = (int)xs_h, sw = (int)xs_w;
  S v[PER];
#pragma unroll
  for (int i = 0; i < PER; i++) {
    const int idx = threadIdx.x + 256 * i, cl = idx >> 6, pl = idx & 63, ch = c0 + cl, p = p0 + pl;
    v[i] = (S)0;
    if (ch < c && p < hw) {
      int off;
      if (flat) {
        off = p * sw;
      } else {
        const int iy = p / w, ix = p - iy * w;
        off = iy * sh + ix * sw;
      }
      v[i] = xi[ch * sc + off];
    }
  }
#pragma unroll
  for (int i = 0; i < PER; i++) {
    const int idx = threadIdx.x + 256 * i;
    t[idx >> 6][idx & 63] = KD::load(v[i]);
  }
  __syncthreads();
  S* yi = y + (i64)img * hw * cp;
  enum { G = TC / E };  // E-channel groups per tile row
  for (int idx = threadIdx.x; idx < TP * G; idx += 256) {
    const int pl = idx / G, g = idx - pl * G, ch = c0 + g * E, p = p0 + pl;
    if (ch >= cp || p >= hw) continue;
    uint4 pk;
    u32* pw = (u32*)&pk;
    if constexpr (K == 2) {
#pragma unroll
      for (int e = 0; e < 4; e++) pw[e] = ptc_cwg_tf32(t[g * E + e][pl]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; e++)
        pw[e] = (u32)KD::store(t[g * E + 2 * e][pl]) | ((u32)KD::store(t[g * E + 2 * e + 1][pl]) << 16);
    }
    *(uint4*)(yi + (i64)p * cp + ch) = pk;
  }
}

// Weights [OC][C][KH][KW] (any strides) -> the shared-memory image of every
// (N tile, K stage): [ntile][stage][tap][chunk][2 K columns][BN rows][E elements],
// zero past OC and C; f32 rounded to TF32 (cvt.rna). One 16-byte unit (E
// consecutive channels of one (row, tap)) a thread, 32-bit index math
// (units < 2^31: checked by the host).
template <int K> PTC_D void ptc_cwg_wprep(const typename ptc_conv_kind<K>::S* __restrict__ w,
                                          typename ptc_conv_kind<K>::S* __restrict__ dst, i64 total, i32 bn,
                                          i32 nk, i32 oc, i32 c, i32 kh, i32 kw, i64 ws0, i64 ws1, i64 ws2,
                                          i64 ws3, i32 kch) {
  typedef ptc_conv_kind<K> KD;
  typedef typename KD::S S;
  enum { E = 16 / KD::ES };
  const int kk = kh * kw, units = (int)(total / E);
  for (int u = blockIdx.x * blockDim.x + threadIdx.x; u < units; u += gridDim.x * blockDim.x) {
    int r = u;
    const int n = r % bn;
    r /= bn;
    const int c2 = r & 1;
    r >>= 1;
    const int chunk = r % kch;
    r /= kch;
    const int tap = r % kk;
    r /= kk;
    const int cc = r % nk;
    const int ntile = r / nk;
    const int o = ntile * bn + n, ch0 = (cc * kch + chunk) * 2 * E + c2 * E, ky = tap / kw, kx = tap - ky * kw;
    S val[E];
    const S* wr = w + (i64)o * ws0 + (i64)ky * ws2 + (i64)kx * ws3;
#pragma unroll
    for (int e = 0; e < E; e++) {
      S vv = (S)0;
      if (o < oc && ch0 + e < c) {
        vv = wr[(i64)(ch0 + e) * ws1];
        if constexpr (K == 2) vv = __uint_as_float(ptc_cwg_tf32(vv));
      }
      val[e] = vv;
    }
    uint4 pk;
    u32* pw = (u32*)&pk;
    if constexpr (K == 2) {
#pragma unroll
      for (int e = 0; e < 4; e++) pw[e] = __float_as_uint((float)val[e]);
    } else {
#pragma unroll
      for (int e = 0; e < 4; e++) pw[e] = (u32)(u16)val[2 * e] | ((u32)(u16)val[2 * e + 1] << 16);
    }
    *(uint4*)(dst + (i64)u * E) = pk;
  }
}

#ifndef PTC_CWG_PERSIST
#define PTC_CWG_PERSIST 1
#endif
#if PTC_CWG_PERSIST
#define PTC_CWG_BODY ptc_cwg_body_p
#else
#define PTC_CWG_BODY ptc_cwg_body
#endif
#define PTC_CWG_CONV(T, K, S, NAME, WGM, WN)                                                       \
  extern "C" __global__ void __launch_bounds__(256, WN == 64 ? 2 : 1)                              \
      ptc_cwg_##T##_##NAME(const S* x, const S* w, const S* bias, S* out, ptc_cwg_args g) {        \
    PTC_CWG_BODY<K, WGM, WN>(x, w, bias, out, g);                                                  \
  }
// PTC_CWG_VARIANT (defined before this text): only that tile shape (0 m128n64:
// WGM 2, WN 64; 1 m128n128: WGM 2, WN 128; 2 m64n128: WGM 1, WN 64; the
// weight copy with variant 0); undefined: all.
#if !defined(PTC_CWG_VARIANT) || PTC_CWG_VARIANT == 0
#define PTC_CWG_V0(T, K, S)                                                                        \
  PTC_CWG_CONV(T, K, S, m128n64, 2, 64)                                                            \
  extern "C" __global__ void __launch_bounds__(256)                                                \
      ptc_cwg_##T##_wprep(const S* w, S* dst, i64 total, i32 bn, i32 nk, i32 oc, i32 c, i32 kh,    \
                          i32 kw, i64 ws0, i64 ws1, i64 ws2, i64 ws3, i32 kch) {                   \
    ptc_cwg_wprep<K>(w, dst, total, bn, nk, oc, c, kh, kw, ws0, ws1, ws2, ws3, kch);               \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                \
      ptc_cwg_##T##_nhwc(const S* x, S* y, i64 xs_n, i64 xs_c, i64 xs_h, i64 xs_w, i32 c, i32 h,   \
                         i32 w, i32 cp, i32 flat) {                                                \
    ptc_cwg_nhwc<K>(x, y, xs_n, xs_c, xs_h, xs_w, c, h, w, cp, flat);                              \
  }
#else
#define PTC_CWG_V0(T, K, S)
#endif
#if !defined(PTC_CWG_VARIANT) || PTC_CWG_VARIANT == 1
#define PTC_CWG_V1(T, K, S) PTC_CWG_CONV(T, K, S, m128n128, 2, 128)
#else
#define PTC_CWG_V1(T, K, S)
#endif
#if !defined(PTC_CWG_VARIANT) || PTC_CWG_VARIANT == 2
#define PTC_CWG_V2(T, K, S) PTC_CWG_CONV(T, K, S, m64n128, 1, 64)
#else
#define PTC_CWG_V2(T, K, S)
#endif
#define PTC_CWG_KERNELS(T, K, S) PTC_CWG_V0(T, K, S) PTC_CWG_V1(T, K, S) PTC_CWG_V2(T, K, S)
// PTC_CWG_TYPE (defined before this text): only that type's kernels; undefined: all.
#if !defined(PTC_CWG_TYPE) || PTC_CWG_TYPE == 0
PTC_CWG_KERNELS(f16, 0, u16)
#endif
#if !defined(PTC_CWG_TYPE) || PTC_CWG_TYPE == 1
PTC_CWG_KERNELS(bf16, 1, u16)
#endif
#if !defined(PTC_CWG_TYPE) || PTC_CWG_TYPE == 2
PTC_CWG_KERNELS(tf32, 2, float)
#endif
