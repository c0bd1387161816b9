// cuda_conv_igemm.cuh - implicit-GEMM convolution on tensor cores (embedded
// as ptc_cuda_conv_igemm_text, compiled after the prelude once per process,
// architecture and element type, sm_80+; host side in cuda_conv_igemm.c).
//
// NCHW input and output (any input strides, contiguous output), or
// channels-last (args.vio: input channels of unit stride read 16 bytes at
// a time by cp.async straight into the B tile, tap-major only; output
// [N][OH][OW][OC]: the layout cuda_ext_conv.c gets when ptc's lowering
// keeps activations channels-last, PTC_CONV_NHWC). Per group
// the GEMM C[m][n] = sum_k W[m][k] * B[k][n], m = output channel, n =
// (image, oh, ow), where B[k][n] = x[img][c][oh*sh - ph + kh*dh][ow*sw - pw
// + kw*dw] (zero outside the image) is never materialised: each K step
// gathers its B tile straight from x. Types: f16 / bf16 (mma.sync
// m16n8k16) and f32 as TF32 (m16n8k8, inputs rounded with cvt.rna), f32
// accumulation. Two K orders:
//  - tap-major (t64 / t128 kernels), k = (kh, kw, c): weights copied first
//    to [OC][KH*KW][channels padded to the K step] (ptc_cig_wcopy; f32
//    weights are always copied, rounded to TF32 on the way); a
//    thread gathers KT/2 consecutive channels of one tap of its column:
//    one bounds test, then loads a channel stride apart;
//  - channel-major (m64 / m128), k = (c, kh, kw): weights as they are
//    (rows 16-byte aligned, else copied); the k -> (offset, kh*dh, kw*dw)
//    decomposition is a table in shared memory built once per block for
//    its K range, so an element costs a table read (a warp-wide
//    broadcast), two bounds tests and a load. For few channels per group
//    (the 3-channel stem), where tap-major would pad most of each step.
//
// Block: 256 threads (8 warps, 2 along M x 4 along N), BM (64 or 128) x 128
// output tile, or for BM 64 128 threads (4 warps, 2 x 2: 32x64 warp tiles,
// fewer fragment loads per MMA; *w4 kernels), K steps of 64 bytes (32
// halves / 16 floats). A (weights)
// comes by cp.async two steps ahead, zero-filled past M and the K range; B
// is gathered through registers: the loads of step k+2 are issued before
// the MMAs of step k and stored to shared memory after those of step k+1
// (three stages); the loaded values stay raw in registers until that store
// (PTC_CIG_DEFER: converting them right after the loads made each step
// wait out its gather's latency). Each thread gathers one column n of B
// (fixed for the block: its image, ih0 = oh*sh - ph, iw0 = ow*sw - pw
// computed once), so warps read x coalesced along n. Tiles are K-major in shared memory
// (80-byte rows: conflict-free ldmatrix and 16-byte stores); fragments
// come by ldmatrix (also for TF32: an 8x8 b16 matrix is 8 rows of 4
// floats).
//
// Split K: blockIdx.z = group * splits + split; with splits > 1 each block
// writes f32 partial sums to a workspace [split][OC][N] (L2-resident for
// the small layers that split) and counts itself done in a per-tile counter
// after it; the last block of a tile adds the partials up in split order
// (deterministic) and runs the epilogue. The
// epilogue: + beta * bias[oc], the activation (ir_activation codes), one
// store per element (pairs of columns as one store when OH*OW is even and
// the output aligned).

struct ptc_cig_args {  // layout = cuda_cig_args (cuda_conv_igemm.c)
  i64 xs_n, xs_c, xs_h, xs_w;  // input strides (elements)
  i64 w_row;                   // weight row stride (elements; 16-byte multiple)
  i64 bias_st;                 // bias stride
  i32 h, w;                    // input plane
  i32 oc, oh, ow, ohw;         // output channels (all groups), output plane
  i32 kh, kw, sh, sw, ph, pw, dh, dw;
  i32 cg, ocg;                 // channels per group (in, out)
  i32 kdim;                    // GEMM K per group: cg * kh * kw
  i32 ncols;                   // GEMM N: images * oh * ow
  i32 kps;                     // K per split (a multiple of the K step)
  i32 splits;
  i32 act, has_bias;
  i32 pair;                    // column pairs stored together
  i32 nchunk;                  // tap-major: channel chunks (of the K step) per tap
  float beta;
  i32 vio;                     // channels-last I/O bits: 1 input (tap-major: B tiles by
                               // cp.async, 16 bytes along C), 2 output ([N][OH][OW][OC])
};


#define PTC_CIG_BN 128
#define PTC_CIG_KROW 80   // bytes per K-major tile row: 64 bytes of K + 16 pad
#define PTC_CIG_BAD 0x7fff7fff  // table entry of a k past the range: never in bounds
#define PTC_CIG_STAGES 3        // shared-memory stages (= CIG_STAGES in cuda_conv_igemm.c)

PTC_D u32 ptc_cig_smem(const void* p) { return (u32)__cvta_generic_to_shared(p); }
PTC_D void ptc_cig_cp16(u32 dst, const void* src, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
// the same through L1 (.ca): the channels-last B tiles, whose neighbouring
// taps re-read what the block's other columns loaded a step before
PTC_D void ptc_cig_cp16ca(u32 dst, const void* src, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes));
}
PTC_D void ptc_cig_commit() { asm volatile("cp.async.commit_group;\n" ::); }
PTC_D void ptc_cig_wait1() { asm volatile("cp.async.wait_group 1;\n" ::); }
PTC_D void ptc_cig_ldm4(u32 addr, u32& r0, u32& r1, u32& r2, u32& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(addr));
}
PTC_D u32 ptc_cig_tf32(float x) {
  u32 r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return r;
}

template <int K> PTC_D void ptc_cig_mma(float* c, const u32* a, u32 b0, u32 b1);
template <> PTC_D void ptc_cig_mma<0>(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> PTC_D void ptc_cig_mma<1>(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> PTC_D void ptc_cig_mma<2>(float* c, const u32* a, u32 b0, u32 b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Shared-memory layout: [stage 0: A (BM rows) | B (128 rows)] [stage 1: ...]
// [table: int2 per k of the block's K range, padded to the K step].
// NT threads: 256 (8 warps, 2 along M x 4 along N: warp tiles BM/2 x 32,
// two threads gather a column) or 128 (4 warps, 2 x 2: warp tiles BM/2 x
// 64, one thread per column: fewer fragment loads per MMA; PTC_CIG_W4).
template <int K, int BM, int NT = 256> struct ptc_cig_cfg {
  enum {
    ES = ptc_conv_kind<K>::ES,
    KT = 64 / ES,                        // K per step
    WN_N = NT / 64,                      // warps along N (2 along M)
    WTN = PTC_CIG_BN / WN_N,             // warp tile N: 32 or 64
    NJ = WTN / 8,                        // n8 tiles per warp
    CPC = NT / PTC_CIG_BN,               // threads per B column
    KPT = KT / CPC,                      // B elements gathered per thread and step
    MI = BM / 32,                        // m16 tiles per warp (warp tile BM/2 x WTN)
    A_BYTES = BM * PTC_CIG_KROW,
    STAGE = (BM + PTC_CIG_BN) * PTC_CIG_KROW,
  };
};

// A float's bits rounded for the TF32 tensor cores, which read only the
// upper 19 bits: cvt.rna.tf32.f32 (three SASS instructions on sm_90), or
// with PTC_CIG_VIN_RADD half a TF32 unit added to the bits (0x1000, one
// integer add: the tensor cores' truncation of the sum is the same
// round-half-away) and a signed max with the input, so that a positive NaN
// whose add carries into the sign bit stays itself (two instructions; a
// negative NaN of bits 0xfffff000 and above then reads as +0).
#ifndef PTC_CIG_VIN_RADD
#define PTC_CIG_VIN_RADD 0
#endif
PTC_D u32 ptc_cig_tf32b(u32 x) {
#if PTC_CIG_VIN_RADD
  return (u32)max((int)x + 0x1000, (int)x);
#else
  return ptc_cig_tf32(__uint_as_float(x));
#endif
}

// The warp's MMAs over one K step. RB (the channels-last TF32 kernels with
// PTC_CIG_VIN_RNA 2): the B fragments rounded in registers after their
// ldmatrix. mid() runs between the first and second halves of the step's
// MMAs (PTC_CIG_VIN_RNA 3: the next stage's rounding).
struct ptc_cig_nomid {
  PTC_D void operator()() const {}
};
template <int K, int BM, int NT, bool RB = false, typename MID = ptc_cig_nomid>
PTC_D void ptc_cig_compute(u32 sa, u32 sb, float (*acc)[ptc_cig_cfg<K, BM, NT>::NJ][4], int wm, int wn,
                           int lane, MID mid = MID()) {
  typedef ptc_cig_cfg<K, BM, NT> C;
  if constexpr (K == 2) {
#pragma unroll
    for (int ks = 0; ks < C::KT; ks += 8) {  // 8 floats = two 16-byte halves of a row
      if (ks == C::KT / 2) mid();
      u32 af[C::MI][4];
#pragma unroll
      for (int i = 0; i < C::MI; i++) {
        const int r = wm * (BM / 2) + i * 16 + (lane & 7) + 8 * ((lane >> 3) & 1);
        const int kw = ks + 4 * (lane >> 4);
        // the weights are TF32-rounded already (ptc_cig_wcopy): no cvt here
        ptc_cig_ldm4(sa + r * PTC_CIG_KROW + kw * 4, af[i][0], af[i][1], af[i][2], af[i][3]);
      }
      u32 bf[C::NJ][2];
#pragma unroll
      for (int jj = 0; jj < C::NJ / 2; jj++) {
        const int n = wn * C::WTN + jj * 16 + (lane & 7) + 8 * (lane >> 4);
        const int kw = ks + 4 * ((lane >> 3) & 1);
        ptc_cig_ldm4(sb + n * PTC_CIG_KROW + kw * 4, bf[2 * jj][0], bf[2 * jj][1], bf[2 * jj + 1][0],
                     bf[2 * jj + 1][1]);
      }
      if constexpr (RB) {
#pragma unroll
        for (int j = 0; j < C::NJ; j++) bf[j][0] = ptc_cig_tf32b(bf[j][0]), bf[j][1] = ptc_cig_tf32b(bf[j][1]);
      }
#pragma unroll
      for (int i = 0; i < C::MI; i++)
#pragma unroll
        for (int j = 0; j < C::NJ; j++) ptc_cig_mma<K>(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  } else {
#pragma unroll
    for (int ks = 0; ks < C::KT; ks += 16) {
      if (ks == C::KT / 2) mid();
      u32 af[C::MI][4];
#pragma unroll
      for (int i = 0; i < C::MI; i++) {
        const int r = wm * (BM / 2) + i * 16 + (lane & 15), k = ks + 8 * (lane >> 4);
        ptc_cig_ldm4(sa + r * PTC_CIG_KROW + k * 2, af[i][0], af[i][1], af[i][2], af[i][3]);
      }
      u32 bf[C::NJ][2];
#pragma unroll
      for (int jj = 0; jj < C::NJ / 2; jj++) {
        const int n = wn * C::WTN + jj * 16 + (lane & 7) + 8 * (lane >> 4), k = ks + 8 * ((lane >> 3) & 1);
        ptc_cig_ldm4(sb + n * PTC_CIG_KROW + k * 2, bf[2 * jj][0], bf[2 * jj][1], bf[2 * jj + 1][0],
                     bf[2 * jj + 1][1]);
      }
#pragma unroll
      for (int i = 0; i < C::MI; i++)
#pragma unroll
        for (int j = 0; j < C::NJ; j++) ptc_cig_mma<K>(acc[i][j], af[i], bf[j][0], bf[j][1]);
    }
  }
}

// cp.async of one A (weights) tile: rows row0.. of the group's weights,
// K [k0, k0 + KT), zero past ocg rows and past kend.
template <int K, int BM, int NT> PTC_D void ptc_cig_load_a(const typename ptc_conv_kind<K>::S* w,
                                                           unsigned char* sa, const ptc_cig_args& g,
                                                           int row0, int k0, int kend) {
  typedef ptc_cig_cfg<K, BM, NT> C;
  const int EPC = 16 / C::ES;
#pragma unroll
  for (int i = 0; i < BM * 4 / NT; i++) {
    const int q = threadIdx.x + NT * i, r = q >> 2, kc = q & 3;
    const int row = row0 + r, kq = k0 + kc * EPC;
    int bytes = 0;
    const void* src = w;
    if (row < g.ocg && kq < kend) {
      const int left = (kend - kq) * C::ES;
      bytes = left < 16 ? left : 16;
      src = w + (i64)row * g.w_row + kq;
    }
    ptc_cig_cp16(ptc_cig_smem(sa + r * PTC_CIG_KROW + kc * 16), src, bytes);
  }
}

// The gathered B elements of one thread for one K step, packed as stored.
template <int K> struct ptc_cig_breg {
  u32 v[8];
};

template <int K, int BM> PTC_D void ptc_cig_gather(const typename ptc_conv_kind<K>::S* __restrict__ xb,
                                                   const int2* tab, int ih0, int iw0, int h, int w,
                                                   ptc_cig_breg<K>& r) {
  typedef ptc_cig_cfg<K, BM> C;
  typedef typename ptc_conv_kind<K>::S S;
  S v[C::KPT];
#pragma unroll
  for (int i = 0; i < C::KPT; i++) {
    const int2 e = tab[i];
    const int ih = ih0 + (e.y >> 16), iw = iw0 + (e.y & 0xffff);
    v[i] = ((unsigned)ih < (unsigned)h && (unsigned)iw < (unsigned)w) ? __ldg(xb + e.x) : (S)0;
  }
  if constexpr (K == 2) {
#pragma unroll
    for (int i = 0; i < 8; i++) r.v[i] = ptc_cig_tf32(v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 8; i++) r.v[i] = (u32)(u16)v[2 * i] | ((u32)(u16)v[2 * i + 1] << 16);
  }
}

// Tap-major K (k = (kh, kw, c)): one thread's KPT consecutive channels of
// one tap: one bounds test, then loads a channel stride apart.
template <int K, int BM> PTC_D void ptc_cig_gather_tap(const typename ptc_conv_kind<K>::S* __restrict__ xb,
                                                       int ih, int iw, int c, const ptc_cig_args& g,
                                                       ptc_cig_breg<K>& r) {
  typedef ptc_cig_cfg<K, BM> C;
  typedef typename ptc_conv_kind<K>::S S;
  S v[C::KPT];
  const bool in = (unsigned)ih < (unsigned)g.h && (unsigned)iw < (unsigned)g.w;
  const S* p = xb + c * g.xs_c + (i64)ih * g.xs_h + (i64)iw * g.xs_w;
  if (in && c + C::KPT <= g.cg) {
#pragma unroll
    for (int i = 0; i < C::KPT; i++) v[i] = __ldg(p + i * g.xs_c);
  } else {
#pragma unroll
    for (int i = 0; i < C::KPT; i++) v[i] = in && c + i < g.cg ? __ldg(p + i * g.xs_c) : (S)0;
  }
  if constexpr (K == 2) {
#pragma unroll
    for (int i = 0; i < 8; i++) r.v[i] = ptc_cig_tf32(v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < 8; i++) r.v[i] = (u32)(u16)v[2 * i] | ((u32)(u16)v[2 * i + 1] << 16);
  }
}

// The tap-major K walk of one thread: the tap (kh, kw) and channel chunk of
// the next K step to gather.
struct ptc_cig_walk {
  int kh, kw, chunk;
  PTC_D void start(int step, const ptc_cig_args& g) {
    const int tap = step / g.nchunk;
    chunk = step - tap * g.nchunk;
    kh = tap / g.kw;
    kw = tap - kh * g.kw;
  }
  PTC_D void next(const ptc_cig_args& g) {
    if (++chunk == g.nchunk) {
      chunk = 0;
      if (++kw == g.kw) {
        kw = 0;
        ++kh;
      }
    }
  }
};

template <int K, int BM> PTC_D void ptc_cig_store_b(unsigned char* sb, const ptc_cig_breg<K>& r) {
  const int lc = threadIdx.x & (PTC_CIG_BN - 1), kg = threadIdx.x >> 7;
  uint4* dst = (uint4*)(sb + lc * PTC_CIG_KROW + kg * 32);
  dst[0] = make_uint4(r.v[0], r.v[1], r.v[2], r.v[3]);
  dst[1] = make_uint4(r.v[4], r.v[5], r.v[6], r.v[7]);
}

// ---- deferred conversion (PTC_CIG_DEFER, the default) -------------------------
// The gathered elements stay raw in registers until they are stored to
// shared memory after the next step's MMAs: converting (TF32 cvt, bf16/f16
// pairing) right after the loads made every step wait for its gather's
// global-memory latency before its MMAs (the conversion sat in the block
// before them, which ptxas does not reorder across). Loads are predicated
// (zero when out of the image or past the channels), branch-free.
PTC_D float ptc_cig_ldp(const float* p, bool ok) {
  u32 r;
  asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %2, 0;\n mov.b32 %0, 0;\n"
               " @q ld.global.nc.b32 %0, [%1];\n}\n"
               : "=r"(r) : "l"(p), "r"((int)ok));
  return __uint_as_float(r);
}
PTC_D u16 ptc_cig_ldp(const u16* p, bool ok) {
  u16 r;
  asm volatile("{\n .reg .pred q;\n setp.ne.b32 q, %2, 0;\n mov.b16 %0, 0;\n"
               " @q ld.global.nc.b16 %0, [%1];\n}\n"
               : "=h"(r) : "l"(p), "r"((int)ok));
  return r;
}

template <int K, int KPT> struct ptc_cig_braw {
  typename ptc_conv_kind<K>::S v[KPT];
};

template <int K, int BM, int NT> PTC_D void ptc_cig_gather_raw(const typename ptc_conv_kind<K>::S* __restrict__ xb,
                                                               const int2* tab, int ih0, int iw0, int h, int w,
                                                               ptc_cig_braw<K, ptc_cig_cfg<K, BM, NT>::KPT>& r) {
  typedef ptc_cig_cfg<K, BM, NT> C;
#pragma unroll
  for (int i = 0; i < C::KPT; i++) {
    const int2 e = tab[i];
    const int ih = ih0 + (e.y >> 16), iw = iw0 + (e.y & 0xffff);
    r.v[i] = ptc_cig_ldp(xb + e.x, (unsigned)ih < (unsigned)h && (unsigned)iw < (unsigned)w);
  }
}

template <int K, int BM, int NT> PTC_D void ptc_cig_gather_tap_raw(const typename ptc_conv_kind<K>::S* __restrict__ xb,
                                                                   int ih, int iw, int c, const ptc_cig_args& g,
                                                                   ptc_cig_braw<K, ptc_cig_cfg<K, BM, NT>::KPT>& r) {
  typedef ptc_cig_cfg<K, BM, NT> C;
  typedef typename ptc_conv_kind<K>::S S;
  const bool in = (unsigned)ih < (unsigned)g.h && (unsigned)iw < (unsigned)g.w;
  const int left = in ? g.cg - c : 0;  // channels of this chunk inside the group
  const S* p = xb + c * g.xs_c + (i64)ih * g.xs_h + (i64)iw * g.xs_w;
#pragma unroll
  for (int i = 0; i < C::KPT; i++) r.v[i] = ptc_cig_ldp(p + i * g.xs_c, i < left);
}

// A thread's KPT elements of its column (CPC threads a column): KPT * ES
// bytes at byte kg * KPT * ES of the column's K-major row.
template <int K, int BM, int NT> PTC_D void ptc_cig_store_raw(unsigned char* sb,
                                                              const ptc_cig_braw<K, ptc_cig_cfg<K, BM, NT>::KPT>& b) {
  typedef ptc_cig_cfg<K, BM, NT> C;
  enum { W = C::KPT * C::ES / 4 };  // 32-bit words per thread: 8 or 16
  u32 r[W];
  if constexpr (K == 2) {
#pragma unroll
    for (int i = 0; i < W; i++) r[i] = ptc_cig_tf32(b.v[i]);
  } else {
#pragma unroll
    for (int i = 0; i < W; i++) r[i] = (u32)b.v[2 * i] | ((u32)b.v[2 * i + 1] << 16);
  }
  const int lc = threadIdx.x & (PTC_CIG_BN - 1), kg = threadIdx.x >> 7;
  uint4* dst = (uint4*)(sb + lc * PTC_CIG_KROW + kg * (W * 4));
#pragma unroll
  for (int i = 0; i < W / 4; i++) dst[i] = make_uint4(r[4 * i], r[4 * i + 1], r[4 * i + 2], r[4 * i + 3]);
}

// Channels-last input (vio & 1, tap-major): the B tile of a K step is 128
// columns x 64 bytes of consecutive channels of one tap: four 16-byte
// chunks per column, copied by cp.async straight to where
// ptc_cig_store_raw would store them, zero-filled outside the image and
// past the group's channels (the host checks cg * ES and the pixel strides
// are multiples of 16 bytes, so a chunk is all in or all out). Chunk q =
// tid + NT * i is column q / 4, chunk q % 4: four neighbouring threads read
// one column's 64 bytes, so a warp's copy covers 8 whole columns (full
// 32-byte sectors) rather than 16 bytes of 32 columns. Each thread keeps
// its NB columns' image base and window origin (ptc_cig_vcols). A TF32
// B operand is rounded after its fragments are loaded (PTC_CIG_VIN_RNA).
template <int K, int NT> struct ptc_cig_vcols {
  enum { NB = PTC_CIG_BN * 4 / NT };
  const typename ptc_conv_kind<K>::S* xb[NB];
  int ih0[NB], iw0[NB];
};
template <int K, int NT> PTC_D void ptc_cig_vcols_init(ptc_cig_vcols<K, NT>& v,
                                                       const typename ptc_conv_kind<K>::S* x,
                                                       int col0, int grp, const ptc_cig_args& g) {
#pragma unroll
  for (int i = 0; i < ptc_cig_vcols<K, NT>::NB; i++) {
    const int nn = col0 + (threadIdx.x >> 2) + (NT / 4) * i;
    v.ih0[i] = -(1 << 30), v.iw0[i] = 0, v.xb[i] = x;
    if (nn < g.ncols) {
      const int img = nn / g.ohw, p = nn - img * g.ohw, oh = p / g.ow, ow = p - oh * g.ow;
      v.ih0[i] = oh * g.sh - g.ph;
      v.iw0[i] = ow * g.sw - g.pw;
      v.xb[i] = x + img * g.xs_n + (i64)grp * g.cg;
    }
  }
}
template <int K, int BM, int NT> PTC_D void ptc_cig_load_b_nhwc(const ptc_cig_vcols<K, NT>& v,
                                                                unsigned char* sb, int dy, int dx,
                                                                int c0, const ptc_cig_args& g) {
  typedef ptc_cig_cfg<K, BM, NT> C;
  enum { EPC = 16 / C::ES };
  const int ch = threadIdx.x & 3, c = c0 + ch * EPC;
  const u32 s0 = ptc_cig_smem(sb + ch * 16);
#pragma unroll
  for (int i = 0; i < ptc_cig_vcols<K, NT>::NB; i++) {
    const int col = (threadIdx.x >> 2) + (NT / 4) * i;
    const int ih = v.ih0[i] + dy, iw = v.iw0[i] + dx;
    const bool ok = (unsigned)ih < (unsigned)g.h && (unsigned)iw < (unsigned)g.w && c < g.cg;
    const void* src = ok ? (const void*)(v.xb[i] + c + (i64)ih * g.xs_h + (i64)iw * g.xs_w)
                         : (const void*)v.xb[i];
    ptc_cig_cp16ca(s0 + col * PTC_CIG_KROW, src, ok ? 16 : 0);
  }
}

// TF32 B tiles that came by cp.async (no register stage to round them in)
// are rounded before the MMAs read them (PTC_CIG_VIN_RNA):
//  2 (default): in registers, each B fragment after its ldmatrix (twice the
//     conversions of 1: both warps along M load every fragment; but off the
//     path from the copies' arrival to the block barrier);
//  1: in shared memory by the threads that copied them, once the copies of
//     their step have landed (each thread's own 16-byte chunks), at the
//     start of the step, before its block barrier;
//  3: as 1, but a step earlier, between the two halves of the previous
//     step's MMAs (the copies of the next stage have had a step to land);
//  0: raw: the tensor cores then read the upper 19 bits, a truncation that
//     biases every product of a non-negative (post-ReLU) activation
//     towards zero (resnet18 b32 fp32 on an H100: max abs error against
//     eager 1.02e-2 with raw tiles, 1.25e-3 before the channels-last
//     kernels; Inductor 8.9e-4).
// H100, resnet18 b32 fp32 through the backend (bench/profile_cuda.py, one
// run, ms per call for t64w4v x4 / t128v x5 / whole model): 0 0.426 /
// 0.300 / 1.510, 1 0.501 / 0.372 / 1.657, 2 0.434 / 0.326 / 1.547, 3 0.514
// / 0.378 / 1.677 (3 with PTC_CIG_VIN_RADD 0.510 / 0.369 / 1.662).
// The conversion itself: ptc_cig_tf32b (PTC_CIG_VIN_RADD).
#ifndef PTC_CIG_VIN_RNA
#define PTC_CIG_VIN_RNA 2
#endif
template <int NT> PTC_D void ptc_cig_round_b_nhwc(unsigned char* sb) {
  unsigned char* s = sb + (threadIdx.x & 3) * 16;
#pragma unroll
  for (int i = 0; i < PTC_CIG_BN * 4 / NT; i++) {
    uint4* p = (uint4*)(s + ((threadIdx.x >> 2) + (NT / 4) * i) * PTC_CIG_KROW);
    uint4 v = *p;
    v.x = ptc_cig_tf32b(v.x);
    v.y = ptc_cig_tf32b(v.y);
    v.z = ptc_cig_tf32b(v.z);
    v.w = ptc_cig_tf32b(v.w);
    *p = v;
  }
}

#ifndef PTC_CIG_DEFER
#define PTC_CIG_DEFER 1
#endif

// TAP: tap-major K over weights transformed to [OC][KH*KW][nchunk * KT]
// (ptc_cig_wcopy; kdim = KH*KW*nchunk*KT); else channel-major K over the
// weights as they are (rows 16-byte aligned) through the offset table.
template <int K, int BM, bool TAP, int NT, bool VIN = false> PTC_D void ptc_cig_body(const typename ptc_conv_kind<K>::S* __restrict__ x,
                                                 const typename ptc_conv_kind<K>::S* __restrict__ w,
                                                 const typename ptc_conv_kind<K>::S* __restrict__ bias,
                                                 typename ptc_conv_kind<K>::S* __restrict__ out,
                                                 float* __restrict__ ws, const ptc_cig_args& g) {
  typedef ptc_conv_kind<K> KD;
  typedef typename KD::S S;
  typedef ptc_cig_cfg<K, BM, NT> C;
  extern __shared__ __align__(128) unsigned char smem[];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, wm = warp & 1, wn = warp >> 1;
  const int grp = blockIdx.z / g.splits, split = blockIdx.z - grp * g.splits;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * PTC_CIG_BN;
  const int kbeg = split * g.kps;
  const int kend = min(g.kdim, kbeg + g.kps);
  const int nk = (kend - kbeg + C::KT - 1) / C::KT;
  int2* tab = (int2*)(smem + PTC_CIG_STAGES * C::STAGE);
  // the k -> (offset, kh*dh << 16 | kw*dw) table of this block's K range
  const int kk = g.kh * g.kw;
  for (int i = tid; !TAP && i < nk * C::KT; i += NT) {
    const int k = kbeg + i;
    int2 e = make_int2(0, PTC_CIG_BAD);
    if (k < kend) {
      const int c = k / kk, rr = k - c * kk, ky = rr / g.kw, kx = rr - ky * g.kw;
      e.x = (int)(c * g.xs_c + (i64)ky * g.dh * g.xs_h + (i64)kx * g.dw * g.xs_w);
      e.y = ((ky * g.dh) << 16) | (kx * g.dw);
    }
    tab[i] = e;
  }
  // this thread's B column
  const int lc = tid & (PTC_CIG_BN - 1), kg = tid >> 7;
  const int nn = col0 + lc;
  int ih0 = -(1 << 30), iw0 = 0;
  const S* xb = x;
  if (nn < g.ncols) {
    const int img = nn / g.ohw, p = nn - img * g.ohw, oh = p / g.ow, ow = p - oh * g.ow;
    ih0 = oh * g.sh - g.ph;
    iw0 = ow * g.sw - g.pw;
    xb = x + img * g.xs_n + (i64)grp * g.cg * g.xs_c;
    if constexpr (!TAP) xb += (i64)ih0 * g.xs_h + (i64)iw0 * g.xs_w;
  }
  ptc_cig_walk wk;
  if constexpr (TAP) wk.start(kbeg / C::KT, g);
  const S* wg = w + (i64)grp * g.ocg * g.w_row;
  float acc[C::MI][C::NJ][4];
#pragma unroll
  for (int i = 0; i < C::MI; i++)
#pragma unroll
    for (int j = 0; j < C::NJ; j++)
#pragma unroll
      for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;
  __syncthreads();  // the table
  const u32 s0 = ptc_cig_smem(smem);
  // Pipeline over K steps: A (weights) by cp.async two steps ahead into
  // three stages; B gathered into registers two steps ahead (two register
  // sets, b0 / b1 alternating: the loop body is unrolled by two so that
  // they stay registers) and stored to its stage one step ahead.
#if PTC_CIG_DEFER
  typedef ptc_cig_braw<K, C::KPT> BR;  // raw elements, converted when stored
  auto gather = [&](int kstep, BR& r) {
    if constexpr (TAP) {
      ptc_cig_gather_tap_raw<K, BM, NT>(xb, ih0 + wk.kh * g.dh, iw0 + wk.kw * g.dw,
                                        wk.chunk * C::KT + kg * C::KPT, g, r);
      wk.next(g);
    } else {
      ptc_cig_gather_raw<K, BM, NT>(xb, tab + kstep * C::KT + kg * C::KPT, ih0, iw0, g.h, g.w, r);
    }
  };
  auto store = [&](unsigned char* sb, const BR& r) { ptc_cig_store_raw<K, BM, NT>(sb, r); };
#else
  typedef ptc_cig_breg<K> BR;  // converted right after the loads (the old pipeline)
  auto gather = [&](int kstep, BR& r) {
    if constexpr (TAP) {
      ptc_cig_gather_tap<K, BM>(xb, ih0 + wk.kh * g.dh, iw0 + wk.kw * g.dw,
                                wk.chunk * C::KT + kg * C::KPT, g, r);
      wk.next(g);
    } else {
      ptc_cig_gather<K, BM>(xb, tab + kstep * C::KT + kg * C::KPT, ih0, iw0, g.h, g.w, r);
    }
  };
  auto store = [&](unsigned char* sb, const BR& r) { ptc_cig_store_b<K, BM>(sb, r); };
#endif
  // channels-last input: B by cp.async in A's groups (no register stage)
  constexpr bool vin = TAP && VIN;  // the t*v kernels (the host sets vio bit 1 for them)
  ptc_cig_vcols<K, NT> vc;
  if (vin) ptc_cig_vcols_init<K, NT>(vc, x, col0, grp, g);
  auto load_b = [&](unsigned char* sb) {
    if constexpr (TAP) {
      ptc_cig_load_b_nhwc<K, BM, NT>(vc, sb, wk.kh * g.dh, wk.kw * g.dw, wk.chunk * C::KT, g);
      wk.next(g);
    }
  };
  // the B tiles' TF32 rounding (PTC_CIG_VIN_RNA) of the channels-last TF32 kernels
  constexpr int rna = vin && K == 2 ? PTC_CIG_VIN_RNA : 0;
  BR b0, b1;
  if (nk > 0) {
    ptc_cig_load_a<K, BM, NT>(wg, smem, g, row0, kbeg, kend);
    if (vin) load_b(smem + C::A_BYTES);
    ptc_cig_commit();
    if (nk > 1) ptc_cig_load_a<K, BM, NT>(wg, smem + C::STAGE, g, row0, kbeg + C::KT, kend);
    if (vin && nk > 1) load_b(smem + C::STAGE + C::A_BYTES);
    ptc_cig_commit();
    if (!vin) {
      gather(0, b0);
      store(smem + C::A_BYTES, b0);
      if (nk > 1) gather(1, b1);
    }
    if constexpr (rna == 3) {  // stage 0 (the later ones: a step ahead, mid-MMA)
      ptc_cig_wait1();
      ptc_cig_round_b_nhwc<NT>(smem + C::A_BYTES);
    }
  }
  // one K step: bnext holds step kt+1 (stored at the end), bnew receives kt+2
  auto step = [&](int kt, BR& bnext, BR& bnew) {
    const int cur = kt % PTC_CIG_STAGES;
    ptc_cig_wait1();  // A of step kt (one group, step kt+1's, may stay in flight)
    if constexpr (rna == 1) ptc_cig_round_b_nhwc<NT>(smem + cur * C::STAGE + C::A_BYTES);
    __syncthreads();  // stage cur complete; stage (kt+2) % 3 free
    if (kt + 2 < nk) {
      const int st2 = cur == 0 ? 2 : cur - 1;
      ptc_cig_load_a<K, BM, NT>(wg, smem + st2 * C::STAGE, g, row0, kbeg + (kt + 2) * C::KT, kend);
      if (vin) load_b(smem + st2 * C::STAGE + C::A_BYTES);
    }
    ptc_cig_commit();  // possibly empty: the group count stays uniform
    if (!vin && kt + 2 < nk) gather(kt + 2, bnew);
    if constexpr (rna == 3) {
      // mid-MMA: step kt+1's copies (the older of the two groups in flight)
      // landed, round this thread's chunks of them
      const int st1 = cur == PTC_CIG_STAGES - 1 ? 0 : cur + 1;
      auto mid = [&]() {
        if (kt + 1 < nk) {
          ptc_cig_wait1();
          ptc_cig_round_b_nhwc<NT>(smem + st1 * C::STAGE + C::A_BYTES);
        }
      };
      ptc_cig_compute<K, BM, NT, false, decltype(mid)>(s0 + cur * C::STAGE, s0 + cur * C::STAGE + C::A_BYTES,
                                                       acc, wm, wn, lane, mid);
    } else {
      ptc_cig_compute<K, BM, NT, rna == 2>(s0 + cur * C::STAGE, s0 + cur * C::STAGE + C::A_BYTES, acc, wm,
                                           wn, lane);
    }
    if (!vin && kt + 1 < nk) {
      const int st1 = cur == PTC_CIG_STAGES - 1 ? 0 : cur + 1;
      store(smem + st1 * C::STAGE + C::A_BYTES, bnext);
    }
  };
  for (int kt = 0; kt < nk; kt += 2) {
    step(kt, b1, b0);
    if (kt + 1 < nk) step(kt + 1, b0, b1);
  }
  // epilogue
  const int gq = lane >> 2, t = lane & 3;
  const int ocb = grp * g.ocg;
  const float beta = g.beta;
  if (g.splits > 1) {
    // split K: every block stores its partial tile; the last one of the
    // tile to finish (a counter per tile, zeroed by the host) adds all
    // partials up in split order (deterministic) and runs the epilogue
    __shared__ int last;
#pragma unroll
    for (int j = 0; j < C::NJ; j++) {
      const int n0 = col0 + wn * C::WTN + j * 8 + 2 * t;
      if (n0 >= g.ncols) continue;
      float* wsp = ws + ((i64)split * g.oc + ocb) * g.ncols + n0;
#pragma unroll
      for (int i = 0; i < C::MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int m = row0 + wm * (BM / 2) + i * 16 + gq + h * 8;
          if (m >= g.ocg) continue;
          wsp[(i64)m * g.ncols] = acc[i][j][2 * h];
          if (n0 + 1 < g.ncols) wsp[(i64)m * g.ncols + 1] = acc[i][j][2 * h + 1];
        }
    }
    __threadfence();
    __syncthreads();
    if (tid == 0) {
      int* cnt = (int*)(ws + (i64)g.splits * g.oc * g.ncols);
      const int tile = (grp * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
      last = atomicAdd(cnt + tile, 1) == g.splits - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
#pragma unroll
    for (int j = 0; j < C::NJ; j++) {
      const int n0 = col0 + wn * C::WTN + j * 8 + 2 * t;
      if (n0 >= g.ncols) continue;
#pragma unroll
      for (int i = 0; i < C::MI; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
          const int m = row0 + wm * (BM / 2) + i * 16 + gq + h * 8;
          if (m >= g.ocg) continue;
          const float* wsp = ws + (i64)(ocb + m) * g.ncols + n0;
          float v0 = 0.f, v1 = 0.f;
          for (int sp = 0; sp < g.splits; sp++, wsp += (i64)g.oc * g.ncols) {
            v0 += __ldcg(wsp);
            if (n0 + 1 < g.ncols) v1 += __ldcg(wsp + 1);
          }
          acc[i][j][2 * h] = v0;
          acc[i][j][2 * h + 1] = v1;
        }
    }
  }
#pragma unroll
  for (int j = 0; j < C::NJ; j++) {
    const int n0 = col0 + wn * C::WTN + j * 8 + 2 * t;
    if (n0 >= g.ncols) continue;
    const bool two = n0 + 1 < g.ncols;
    const int img0 = n0 / g.ohw, p0 = n0 - img0 * g.ohw;
    const i64 ob0 = (i64)img0 * g.oc * g.ohw + p0;
    i64 ob1 = ob0 + 1;
    if (two && p0 + 1 == g.ohw) ob1 = ob0 + 1 + (i64)(g.oc - 1) * g.ohw;  // the next image
#pragma unroll
    for (int i = 0; i < C::MI; i++)
#pragma unroll
      for (int h = 0; h < 2; h++) {
        const int m = row0 + wm * (BM / 2) + i * 16 + gq + h * 8;
        if (m >= g.ocg) continue;
        const int oc = ocb + m;
        const float bv = g.has_bias ? beta * KD::load(bias[(i64)oc * g.bias_st]) : 0.f;
        const float v0 = ptc_conv_act(g.act, acc[i][j][2 * h] + bv);
        const float v1 = ptc_conv_act(g.act, acc[i][j][2 * h + 1] + bv);
        if (g.vio & 2) {  // channels-last output: out[column][oc]
          S* o = out + (i64)n0 * g.oc + oc;
          o[0] = KD::store(v0);
          if (two) o[g.oc] = KD::store(v1);
          continue;
        }
        S* o = out + (i64)oc * g.ohw;
        if (two && g.pair) {
          if constexpr (K == 2) {
            *(float2*)(o + ob0) = make_float2(v0, v1);
          } else {
            *(u32*)(o + ob0) = (u32)KD::store(v0) | ((u32)KD::store(v1) << 16);
          }
        } else {
          o[ob0] = KD::store(v0);
          if (two) o[ob1] = KD::store(v1);
        }
      }
  }
}

// Weights [OC][Cg][KH][KW] (any strides) -> [OC][ld] rows in the GEMM's K
// order: tap-major (k = tap * cpad + c, channels zero-padded to cpad) or
// channel-major (k = c * KH*KW + tap, zero from cg * KH*KW to ld): the A
// operand with 16-byte aligned rows for the cp.async loads; f32 rounded to
// TF32 here (cvt.rna, once per weight instead of once per use in the MMA
// loop). 32-bit index math when the host says the sizes allow (small32),
// else 64-bit.
template <int K> PTC_D typename ptc_conv_kind<K>::S ptc_cig_wval(typename ptc_conv_kind<K>::S v) {
  if constexpr (K == 2) {
    return __uint_as_float(ptc_cig_tf32(v));
  } else {
    return v;
  }
}
template <int K> PTC_D void ptc_cig_wcopy(const typename ptc_conv_kind<K>::S* __restrict__ w,
                                          typename ptc_conv_kind<K>::S* __restrict__ dst, i64 rows,
                                          i64 ld, i64 cg, i64 kw, i64 kk, i64 cpad, i64 ws0, i64 ws1,
                                          i64 ws2, i64 ws3, i32 tap_major, i32 small32) {
  typedef typename ptc_conv_kind<K>::S S;
  const i64 total = rows * ld;
  if (small32) {
    const u32 n = (u32)total, uld = (u32)ld, ucpad = (u32)cpad, ukk = (u32)kk, ukw = (u32)kw;
    const u32 ucg = (u32)cg;
    const int s0 = (int)ws0, s1 = (int)ws1, s2 = (int)ws2, s3 = (int)ws3;
    for (u32 idx = blockIdx.x * blockDim.x + threadIdx.x; idx < n; idx += gridDim.x * blockDim.x) {
      const u32 r = idx / uld, k = idx - r * uld;
      u32 tap, c;
      if (tap_major) {
        tap = k / ucpad;
        c = k - tap * ucpad;
      } else {
        c = k / ukk;
        tap = k - c * ukk;
      }
      const u32 ky = tap / ukw, kx = tap - ky * ukw;
      dst[idx] = c < ucg ? ptc_cig_wval<K>(w[(int)r * s0 + (int)c * s1 + (int)ky * s2 + (int)kx * s3])
                         : (S)0;
    }
    return;
  }
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (i64)gridDim.x * blockDim.x) {
    const i64 r = idx / ld, k = idx - r * ld;
    i64 tap, c;
    if (tap_major) {
      tap = k / cpad;
      c = k - tap * cpad;
    } else {
      c = k / kk;
      tap = k - c * kk;
    }
    const i64 ky = tap / kw, kx = tap - ky * kw;
    dst[idx] = c < cg ? ptc_cig_wval<K>(w[r * ws0 + c * ws1 + ky * ws2 + kx * ws3]) : (S)0;
  }
}

// ---- the wide im2col (cuda_ext_conv.c's small output planes) --------------------
// col[r * ncols + j], r = (ch * kh + ki) * kw + kj, j = img * ohw + oy * ow
// + ox over ncols = nimg * ohw columns: x[img][ch][oy*sh - ph + ki*dh]
// [ox*sw - pw + kj*dw], 0 outside the image (the layout of the support
// module's ptc_im2colw_*, which computes five divisions per 16-byte store).
// Here a block row blockIdx.y = ch * kh + ki fixes the channel and the
// window row; a thread decomposes its V = 16 / sizeof(S) consecutive
// columns once (two divisions) and writes them for every kj (kw 16-byte
// stores). 32-bit index math: the host keeps every input offset below
// 2^31, ncols a multiple of V, col 16-byte aligned.
struct ptc_cig_i2c_args {  // layout = cuda_cig_i2c_args (cuda_conv_igemm.c)
  i32 kh, kw, h, w, oh, ow, ohw;
  i32 sh, sw, ph, pw, dh, dw;
  i32 xs_n, xs_c, xs_h, xs_w;
  i32 ncols, nvec;
};
template <typename S> PTC_D void ptc_cig_i2c(const S* __restrict__ x, S* __restrict__ col,
                                             const ptc_cig_i2c_args& a) {
  enum { V = 16 / sizeof(S) };
  union chunk {
    uint4 v;
    S s[V];
  };
  const int ry = blockIdx.y, ch = ry / a.kh, ki = ry - ch * a.kh;
  const S* xc = x + ch * a.xs_c;
  S* crow = col + (i64)ry * a.kw * a.ncols;
  for (int jv = blockIdx.x * blockDim.x + threadIdx.x; jv < a.nvec; jv += gridDim.x * blockDim.x) {
    const int j0 = jv * V;
    int img = j0 / a.ohw, p = j0 - img * a.ohw, oy = p / a.ow, ox = p - oy * a.ow;
    int off[V], ix0[V];
    bool yok[V];
#pragma unroll
    for (int t = 0; t < V; t++) {
      const int iy = oy * a.sh - a.ph + ki * a.dh;
      ix0[t] = ox * a.sw - a.pw;
      yok[t] = (unsigned)iy < (unsigned)a.h;
      off[t] = img * a.xs_n + iy * a.xs_h + ix0[t] * a.xs_w;
      if (++ox == a.ow) {
        ox = 0;
        if (++oy == a.oh) oy = 0, img++;
      }
    }
    for (int kj = 0; kj < a.kw; kj++) {
      const int dx = kj * a.dw, dxo = dx * a.xs_w;
      chunk u;
#pragma unroll
      for (int t = 0; t < V; t++)
        u.s[t] = yok[t] && (unsigned)(ix0[t] + dx) < (unsigned)a.w ? __ldg(xc + off[t] + dxo) : (S)0;
      reinterpret_cast<uint4*>(crow + (i64)kj * a.ncols)[jv] = u.v;
    }
  }
}

// ---- channels-last max pool (cuda_ext_conv.c, after a channels-last
// convolution) ------------------------------------------------------------
// out [N][OH][OW][C] = max over the window of x [N][H][W][C] (dense), a
// thread per 16 bytes of channels of one output pixel: every load and store
// a coalesced 16-byte vector. NaN propagates; padding is skipped. 32-bit
// index math below the pixel (the host keeps n * h * w * cv below 2^31).
struct ptc_cig_mp_args {  // layout = cuda_cig_mp_args (cuda_conv_igemm.c)
  i32 h, w, oh, ow, cv;     // cv: 16-byte vectors per pixel
  i32 kh, kw, sh, sw, ph, pw, dh, dw;
  i32 total;                // n * oh * ow * cv
};
template <int K> PTC_D void ptc_cig_maxpool(const typename ptc_conv_kind<K>::S* __restrict__ x,
                                            typename ptc_conv_kind<K>::S* __restrict__ out,
                                            const ptc_cig_mp_args& a) {
  typedef ptc_conv_kind<K> KD;
  typedef typename KD::S S;
  enum { V = 16 / sizeof(S) };
  union chunk {
    uint4 v;
    S s[V];
  };
  const uint4* xv = reinterpret_cast<const uint4*>(x);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < a.total; i += gridDim.x * blockDim.x) {
    int p = i / a.cv;
    const int cv = i - p * a.cv;
    const int ox = p % a.ow;
    p /= a.ow;
    const int oy = p % a.oh, img = p / a.oh;
    float m[V];
#pragma unroll
    for (int t = 0; t < V; t++) m[t] = __int_as_float(0xff800000);  // -inf
    for (int ky = 0; ky < a.kh; ky++) {
      const int iy = oy * a.sh - a.ph + ky * a.dh;
      if ((unsigned)iy >= (unsigned)a.h) continue;
      for (int kx = 0; kx < a.kw; kx++) {
        const int ix = ox * a.sw - a.pw + kx * a.dw;
        if ((unsigned)ix >= (unsigned)a.w) continue;
        chunk u;
        u.v = __ldg(xv + ((i64)(img * a.h + iy) * a.w + ix) * a.cv + cv);
#pragma unroll
        for (int t = 0; t < V; t++) {
          const float v = KD::load(u.s[t]);
          m[t] = (v > m[t] || v != v) ? v : m[t];
        }
      }
    }
    chunk o;
#pragma unroll
    for (int t = 0; t < V; t++) o.s[t] = KD::store(m[t]);
    reinterpret_cast<uint4*>(out)[i] = o.v;
  }
}

// ---- the wide im2col of a channels-last input -------------------------------
// The same col[r * ncols + j] as ptc_cig_i2c from x [N][H][W][C] (unit
// channel stride): a block per 32 columns x 32 channels x window position
// (blockIdx.z = ki * kw + kj) reads its 32 pixels' channels along C
// (coalesced), transposes them in shared memory and writes 32 rows of 32
// columns (coalesced along j). 32-bit index math (the host's limits).
template <typename S> PTC_D void ptc_cig_i2cn(const S* __restrict__ x, S* __restrict__ col,
                                              const ptc_cig_i2c_args& a, int c) {
  __shared__ S tile[32][33];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int j0 = blockIdx.x * 32, c0 = blockIdx.y * 32;
  const int ki = blockIdx.z / a.kw, kj = blockIdx.z - ki * a.kw;
  for (int r = ty; r < 32; r += 8) {  // pixel j0 + r, channel c0 + tx
    const int j = j0 + r, ch = c0 + tx;
    S v = (S)0;
    if (j < a.ncols && ch < c) {
      const int img = j / a.ohw, p = j - img * a.ohw, oy = p / a.ow, ox = p - oy * a.ow;
      const int iy = oy * a.sh - a.ph + ki * a.dh, ix = ox * a.sw - a.pw + kj * a.dw;
      if ((unsigned)iy < (unsigned)a.h && (unsigned)ix < (unsigned)a.w)
        v = __ldg(x + img * a.xs_n + iy * a.xs_h + ix * a.xs_w + ch);
    }
    tile[r][tx] = v;
  }
  __syncthreads();
  const int j = j0 + tx;
  if (j >= a.ncols) return;
  for (int r = ty; r < 32; r += 8) {  // channel c0 + r, column j
    const int ch = c0 + r;
    if (ch < c) col[(i64)((ch * a.kh + ki) * a.kw + kj) * a.ncols + j] = tile[tx][r];
  }
}

// PTC_CIG_W4_BLOCKS (defined before this text, else 3): the blocks per SM
// the 4-warp kernels are compiled for (launch bounds). 4 caps them at 128
// registers: TF32 fits without spills (16 warps per SM instead of 12;
// cuda_conv_igemm.c, PTC_CUDA_CONV_OCC: by default only the channel-major
// TF32 kernel); bf16/f16 spill a little.
#ifndef PTC_CIG_W4_BLOCKS
#define PTC_CIG_W4_BLOCKS 3
#endif
#define PTC_CIG_CONV(T, K, S, NAME, BM, TAP, NT)                                                   \
  extern "C" __global__ void __launch_bounds__(NT, NT == 256 ? 2 : PTC_CIG_W4_BLOCKS)              \
      ptc_cig_##T##_##NAME(const S* x, const S* w, const S* bias, S* out, float* ws, ptc_cig_args g) { \
    ptc_cig_body<K, BM, TAP, NT>(x, w, bias, out, ws, g);                                          \
  }
// the channels-last-input kernels (tap-major, B tiles by cp.async)
#define PTC_CIG_CONVV(T, K, S, NAME, BM, NT)                                                       \
  extern "C" __global__ void __launch_bounds__(NT, NT == 256 ? 2 : PTC_CIG_W4_BLOCKS)              \
      ptc_cig_##T##_##NAME(const S* x, const S* w, const S* bias, S* out, float* ws, ptc_cig_args g) { \
    ptc_cig_body<K, BM, true, NT, true>(x, w, bias, out, ws, g);                                   \
  }
// PTC_CIG_VARIANT (defined before this text): only that convolution kernel
// (0 m64, 1 m128, 2 t64, 3 t128, 4 m64w4, 5 t64w4 (the 4-warp blocks, with
// PTC_CIG_DEFER only), 6 t128v, 7 t64w4v (channels-last input, with
// PTC_CIG_DEFER only): the library builds them as separate modules in
// parallel); undefined: all.
#if !defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 0
#define PTC_CIG_V0(T, K, S) PTC_CIG_CONV(T, K, S, m64, 64, false, 256)
#else
#define PTC_CIG_V0(T, K, S)
#endif
#if !defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 1
#define PTC_CIG_V1(T, K, S) PTC_CIG_CONV(T, K, S, m128, 128, false, 256)
#else
#define PTC_CIG_V1(T, K, S)
#endif
#if !defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 2
#define PTC_CIG_V2(T, K, S) PTC_CIG_CONV(T, K, S, t64, 64, true, 256)
#else
#define PTC_CIG_V2(T, K, S)
#endif
#if !defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 3
#define PTC_CIG_V3(T, K, S) PTC_CIG_CONV(T, K, S, t128, 128, true, 256)
#else
#define PTC_CIG_V3(T, K, S)
#endif
#if PTC_CIG_DEFER && (!defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 4)
#define PTC_CIG_V4(T, K, S) PTC_CIG_CONV(T, K, S, m64w4, 64, false, 128)
#else
#define PTC_CIG_V4(T, K, S)
#endif
#if PTC_CIG_DEFER && (!defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 5)
#define PTC_CIG_V5(T, K, S) PTC_CIG_CONV(T, K, S, t64w4, 64, true, 128)
#else
#define PTC_CIG_V5(T, K, S)
#endif
#if PTC_CIG_DEFER && (!defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 6)
#define PTC_CIG_V6(T, K, S) PTC_CIG_CONVV(T, K, S, t128v, 128, 256)
#else
#define PTC_CIG_V6(T, K, S)
#endif
#if PTC_CIG_DEFER && (!defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 7)
#define PTC_CIG_V7(T, K, S) PTC_CIG_CONVV(T, K, S, t64w4v, 64, 128)
#else
#define PTC_CIG_V7(T, K, S)
#endif
// the wide im2col: in the first variant's module only
#if !defined(PTC_CIG_VARIANT) || PTC_CIG_VARIANT == 0
#define PTC_CIG_I2C(T, K, S)                                                                       \
  extern "C" __global__ void __launch_bounds__(128)                                                \
      ptc_cig_##T##_i2c(const S* x, S* col, ptc_cig_i2c_args a) {                                  \
    ptc_cig_i2c<S>(x, col, a);                                                                     \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                \
      ptc_cig_##T##_mpool(const S* x, S* out, ptc_cig_mp_args a) {                                 \
    ptc_cig_maxpool<K>(x, out, a);                                                                 \
  }                                                                                                \
  extern "C" __global__ void __launch_bounds__(256)                                                \
      ptc_cig_##T##_i2cn(const S* x, S* col, ptc_cig_i2c_args a, int c) {                          \
    ptc_cig_i2cn<S>(x, col, a, c);                                                                 \
  }
#else
#define PTC_CIG_I2C(T, K, S)
#endif
#define PTC_CIG_KERNELS(T, K, S)                                                                   \
  PTC_CIG_V0(T, K, S)                                                                              \
  PTC_CIG_V1(T, K, S)                                                                              \
  PTC_CIG_V2(T, K, S)                                                                              \
  PTC_CIG_V3(T, K, S)                                                                              \
  PTC_CIG_V4(T, K, S)                                                                              \
  PTC_CIG_V5(T, K, S)                                                                              \
  PTC_CIG_V6(T, K, S)                                                                              \
  PTC_CIG_V7(T, K, S)                                                                              \
  extern "C" __global__ void __launch_bounds__(256)                                                \
      ptc_cig_##T##_wcopy(const S* w, S* dst, i64 rows, i64 ld, i64 cg, i64 kw, i64 kk, i64 cpad,  \
                          i64 ws0, i64 ws1, i64 ws2, i64 ws3, i32 tap_major, i32 small32) {        \
    ptc_cig_wcopy<K>(w, dst, rows, ld, cg, kw, kk, cpad, ws0, ws1, ws2, ws3, tap_major, small32);  \
  }                                                                                                \
  PTC_CIG_I2C(T, K, S)
// PTC_CIG_TYPE (defined before this text): only that type's kernels; undefined: all.
#if !defined(PTC_CIG_TYPE) || PTC_CIG_TYPE == 0
PTC_CIG_KERNELS(f16, 0, u16)
#endif
#if !defined(PTC_CIG_TYPE) || PTC_CIG_TYPE == 1
PTC_CIG_KERNELS(bf16, 1, u16)
#endif
#if !defined(PTC_CIG_TYPE) || PTC_CIG_TYPE == 2
PTC_CIG_KERNELS(tf32, 2, float)
#endif
