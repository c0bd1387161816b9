// cuda_support.cuh - the cuda backend's fixed device kernels (embedded into
// the library as ptc_cuda_support_text and compiled after the prelude, once
// per process and architecture, through the kernel cache):
//  - ptc_copy_e{1,2,4,8}: strided copy of elements of 1/2/4/8 bytes between
//    two views of one shape (input relayout, non-contiguous outputs);
//  - ptc_gemm_{f32,f64,f16,bf16}: batched C = act(alpha * A @ B + beta *
//    bias) with arbitrary element strides, the fallback GEMM used when
//    cuBLASLt is absent or cannot take the layout. 64x64 output tiles, 16-deep
//    K steps through shared memory, 256 threads with a 4x4 register block
//    each (rows ty + 16i, columns tx + 16j so stores stay coalesced); f16 and
//    bf16 accumulate in float.
#define PTC_SUP_MAX_RANK 16

struct ptc_copy_args {
  i64 n;
  i32 rank;
  i32 pad;
  i64 shape[PTC_SUP_MAX_RANK];
  i64 src_st[PTC_SUP_MAX_RANK];
  i64 dst_st[PTC_SUP_MAX_RANK];
};

template <typename T> PTC_D void ptc_copy_body(const T* __restrict__ src, T* __restrict__ dst,
                                               const ptc_copy_args& a) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < a.n; i += (i64)gridDim.x * blockDim.x) {
    i64 rest = i, so = 0, dof = 0;
    for (int d = a.rank - 1; d >= 0; d--) {
      i64 c = rest % a.shape[d];
      rest /= a.shape[d];
      so += c * a.src_st[d];
      dof += c * a.dst_st[d];
    }
    dst[dof] = src[so];
  }
}
extern "C" __global__ void ptc_copy_e1(const u8* s, u8* d, ptc_copy_args a) { ptc_copy_body(s, d, a); }
extern "C" __global__ void ptc_copy_e2(const u16* s, u16* d, ptc_copy_args a) { ptc_copy_body(s, d, a); }
extern "C" __global__ void ptc_copy_e4(const u32* s, u32* d, ptc_copy_args a) { ptc_copy_body(s, d, a); }
extern "C" __global__ void ptc_copy_e8(const u64* s, u64* d, ptc_copy_args a) { ptc_copy_body(s, d, a); }

// ---- GEMM -------------------------------------------------------------------
struct ptc_mm_args {
  i64 m, n, k;
  i64 a_sm, a_sk, b_sk, b_sn, c_sm, c_sn, d_sm, d_sn;
  double alpha, beta;
  i32 act;       // ir_activation: 0 none, 1 relu, 2 gelu, 3 gelu tanh, 4 silu, 5 sigmoid, 6 tanh
  i32 has_bias;
  i32 nb;        // batch rank; blockIdx.z walks the batch entries
  i32 pad;
  i64 batch[PTC_SUP_MAX_RANK];
  i64 a_bs[PTC_SUP_MAX_RANK], b_bs[PTC_SUP_MAX_RANK], c_bs[PTC_SUP_MAX_RANK], d_bs[PTC_SUP_MAX_RANK];
};

// storage <-> accumulator per kind: 0 f32, 1 f64, 2 f16, 3 bf16
template <int K> struct ptc_mm_kind;
template <> struct ptc_mm_kind<0> {
  typedef float S;
  typedef float A;
  static PTC_D A load(S v) { return v; }
  static PTC_D S store(A v) { return v; }
};
template <> struct ptc_mm_kind<1> {
  typedef double S;
  typedef double A;
  static PTC_D A load(S v) { return v; }
  static PTC_D S store(A v) { return v; }
};
template <> struct ptc_mm_kind<2> {
  typedef u16 S;
  typedef float A;
  static PTC_D A load(S v) { return ptc_h2f(v); }
  static PTC_D S store(A v) { return ptc_f2h(v); }
};
template <> struct ptc_mm_kind<3> {
  typedef u16 S;
  typedef float A;
  static PTC_D A load(S v) { return ptc_bf2f(v); }
  static PTC_D S store(A v) { return ptc_f2bf(v); }
};

PTC_D float ptc_erf_t(float x) { return erff(x); }
PTC_D double ptc_erf_t(double x) { return erf(x); }
PTC_D float ptc_tanh_t(float x) { return tanhf(x); }
PTC_D double ptc_tanh_t(double x) { return tanh(x); }
PTC_D float ptc_exp_t(float x) { return expf(x); }
PTC_D double ptc_exp_t(double x) { return exp(x); }

// The activations of the ref backend's formulas.
template <typename A> PTC_D A ptc_activate(int act, A x) {
  switch (act) {
    case 1: return x < (A)0 ? (A)0 : x;
    case 2: return (A)0.5 * x * ((A)1 + ptc_erf_t(x * (A)0.70710678118654752440));
    case 3: return (A)0.5 * x * ((A)1 + ptc_tanh_t((A)0.79788456080286535588 * (x + (A)0.044715 * x * x * x)));
    case 4: return x / ((A)1 + ptc_exp_t(-x));
    case 5: return (A)1 / ((A)1 + ptc_exp_t(-x));
    case 6: return ptc_tanh_t(x);
    default: return x;
  }
}

// GELU (erf form) of a value whose result is stored as f16 / bf16 (11 or 8
// significant bits): x * Phi(x) with Phi(x) = 1 - h (x >= 0) or h (x < 0),
// h = erfc(|x| / sqrt2) / 2 = t * 2^(Q(t) - x^2 * log2(e) / 2), t = 1 / (1 +
// |x| / (2 sqrt2)), Q of degree 7 (minimax fit of the exponent on |x| <=
// 14.2: relative error of h 8.1e-7 with float coefficients and Horner) and
// the hardware rcp.approx / ex2.approx (relative errors 2^-23 and 2^-22):
// 17 instructions against about 30 for the erff form, and no cancellation
// in 1 + erf for x < -3 (the erff form loses the relative accuracy there:
// -4.5 ... -5.6 round to results tens of bf16 ulp off, and x < -5.6 gives
// -0). test_cuda_lowp runs every finite normal f16 and bf16 value through
// the pass: within one ulp of the true value, but for 7 bf16 inputs near -13
// whose true results lie below 2^-126 (ex2.approx.ftz flushes them to 0, as
// PyTorch's formula gives 0). For f32 / f64 results ptc_activate's erf form
// stays (PyTorch's formula).
PTC_D float ptc_gelu_lowp(float x) {
  float t, e;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(fabsf(x), 0x1.6a09e6p-2f, 1.0f)));
  float q = fmaf(-0x1.0ef0dcp-2f, t, 0x1.0ea4fcp+0f);
  q = fmaf(q, t, -0x1.65735ep+0f);
  q = fmaf(q, t, 0x1.d69192p-2f);
  q = fmaf(q, t, -0x1.0c8096p-5f);
  q = fmaf(q, t, 0x1.1f2278p-1f);
  q = fmaf(q, t, 0x1.711f26p+0f);
  q = fmaf(q, t, -0x1.69b31cp+1f);
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(fmaf(x * x, -0x1.715476p-1f, q)));
  const float h = t * e;
  if (x < 0.0f) return x * h;        // -inf: NaN, as x * 0.5 * (1 + erf(x))
  return h > 0.0f ? fmaf(-x, h, x) : x;  // +inf and NaN: themselves
}

#define PTC_MM_TM 64
#define PTC_MM_TN 64
#define PTC_MM_TK 16

template <int K> PTC_D void ptc_gemm_body(const typename ptc_mm_kind<K>::S* __restrict__ a,
                                          const typename ptc_mm_kind<K>::S* __restrict__ b,
                                          const typename ptc_mm_kind<K>::S* __restrict__ bias,
                                          typename ptc_mm_kind<K>::S* __restrict__ c,
                                          const ptc_mm_args& g) {
  typedef ptc_mm_kind<K> KD;
  typedef typename KD::A A;
  __shared__ A As[PTC_MM_TK][PTC_MM_TM + 1];
  __shared__ A Bs[PTC_MM_TK][PTC_MM_TN + 1];
  i64 rest = blockIdx.z, ao = 0, bo = 0, co = 0, dof = 0;
  for (int d = g.nb - 1; d >= 0; d--) {
    i64 i = rest % g.batch[d];
    rest /= g.batch[d];
    ao += i * g.a_bs[d];
    bo += i * g.b_bs[d];
    co += i * g.c_bs[d];
    dof += i * g.d_bs[d];
  }
  const i64 row0 = (i64)blockIdx.y * PTC_MM_TM, col0 = (i64)blockIdx.x * PTC_MM_TN;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  A acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) acc[i][j] = (A)0;
  for (i64 k0 = 0; k0 < g.k; k0 += PTC_MM_TK) {
    for (int e = threadIdx.x; e < PTC_MM_TM * PTC_MM_TK; e += 256) {
      const int i = e / PTC_MM_TK, kk = e % PTC_MM_TK;
      const i64 r = row0 + i, kq = k0 + kk;
      As[kk][i] = (r < g.m && kq < g.k) ? KD::load(a[ao + r * g.a_sm + kq * g.a_sk]) : (A)0;
    }
    for (int e = threadIdx.x; e < PTC_MM_TK * PTC_MM_TN; e += 256) {
      const int kk = e / PTC_MM_TN, j = e % PTC_MM_TN;
      const i64 col = col0 + j, kq = k0 + kk;
      Bs[kk][j] = (col < g.n && kq < g.k) ? KD::load(b[bo + kq * g.b_sk + col * g.b_sn]) : (A)0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < PTC_MM_TK; kk++) {
      A av[4], bv[4];
#pragma unroll
      for (int i = 0; i < 4; i++) av[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; j++) bv[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; i++)
#pragma unroll
    for (int j = 0; j < 4; j++) {
      const i64 r = row0 + ty + 16 * i, col = col0 + tx + 16 * j;
      if (r >= g.m || col >= g.n) continue;
      A v = (A)g.alpha * acc[i][j];
      if (g.has_bias) v += (A)g.beta * KD::load(bias[dof + r * g.d_sm + col * g.d_sn]);
      c[co + r * g.c_sm + col * g.c_sn] = KD::store(ptc_activate<A>(g.act, v));
    }
}

extern "C" __global__ void __launch_bounds__(256)
    ptc_gemm_f32(const float* a, const float* b, const float* bias, float* c, ptc_mm_args g) {
  ptc_gemm_body<0>(a, b, bias, c, g);
}
extern "C" __global__ void __launch_bounds__(256)
    ptc_gemm_f64(const double* a, const double* b, const double* bias, double* c, ptc_mm_args g) {
  ptc_gemm_body<1>(a, b, bias, c, g);
}
extern "C" __global__ void __launch_bounds__(256)
    ptc_gemm_f16(const u16* a, const u16* b, const u16* bias, u16* c, ptc_mm_args g) {
  ptc_gemm_body<2>(a, b, bias, c, g);
}
extern "C" __global__ void __launch_bounds__(256)
    ptc_gemm_bf16(const u16* a, const u16* b, const u16* bias, u16* c, ptc_mm_args g) {
  ptc_gemm_body<3>(a, b, bias, c, g);
}

// ---- GEMM / convolution epilogue ---------------------------------------------
// c[i] = act(c[i] + beta * bias[((i / inner) % nbias) * bias_st]) over n
// contiguous elements, in place: the activation (and for convolutions the
// per-channel bias) of a product cuBLASLt computed without them. GELU of
// f16 / bf16 results: ptc_gelu_lowp unless exact.
struct ptc_epi_args {
  i64 n, inner, nbias, bias_st;
  double beta;
  i32 act, has_bias, exact;
};

// The activation of the epilogue pass: ptc_gelu_lowp where ACT is 2 (GELU;
// ptc_epi_body picks it for f16 / bf16 results, K 2 and 3, unless exact),
// else g.act by ptc_activate.
template <int K, int ACT> PTC_D typename ptc_mm_kind<K>::A ptc_epi_act(const ptc_epi_args& g,
                                                                     typename ptc_mm_kind<K>::A v) {
  if (ACT == 2 && K >= 2) return ptc_gelu_lowp(v);
  return ptc_activate<typename ptc_mm_kind<K>::A>(g.act, v);
}

// 16-byte chunks (8 f16/bf16, 4 f32, 2 f64 per load and store) when c is
// 16-byte aligned and a chunk's bias is one value (inner a multiple of the
// chunk) or none, or consecutive bias values (inner 1, bias_st 1, nbias a
// multiple of the chunk, bias aligned): the GEMM activation pass runs at
// memory speed (the scalar u16 loop below reached ~1/3 of it on an H100).
// H100, GELU over a 4096x4096 bf16 product in this form (one chunk a thread
// a step, grid capped at 16 blocks an SM): 33-34 us with the erf form, 22.0
// with ptc_gelu_lowp (session 17; Inductor's pass 38.8-40.5); two chunks a
// thread in one pass took 39.8 with the erf form (session 16).
template <int K, int ACT> PTC_D void ptc_epi_run(typename ptc_mm_kind<K>::S* __restrict__ c,
                                                 const typename ptc_mm_kind<K>::S* __restrict__ bias,
                                                 const ptc_epi_args& g) {
  typedef ptc_mm_kind<K> KD;
  typedef typename KD::A A;
  typedef typename KD::S S;
  const int V = 16 / (int)sizeof(S);
  const bool c_al = ((unsigned long long)c & 15) == 0;
  const bool one_bias = !g.has_bias || g.inner % V == 0;
  const bool vec_bias = g.has_bias && g.inner == 1 && g.bias_st == 1 && g.nbias % V == 0 &&
                        ((unsigned long long)bias & 15) == 0;
  i64 done = 0;
  if (c_al && (one_bias || vec_bias)) {
    union chunk { uint4 v; S s[16 / sizeof(S)]; };
    const i64 nv = g.n / V;
    uint4* cv = reinterpret_cast<uint4*>(c);
    for (i64 j = blockIdx.x * (i64)blockDim.x + threadIdx.x; j < nv; j += (i64)gridDim.x * blockDim.x) {
      chunk u, bu;
      u.v = cv[j];
      const i64 i0 = j * V;
      A bv = (A)0;
      if (g.has_bias && one_bias) bv = (A)g.beta * KD::load(bias[((i0 / g.inner) % g.nbias) * g.bias_st]);
      if (vec_bias) bu.v = *reinterpret_cast<const uint4*>(bias + (i0 % g.nbias));
#pragma unroll
      for (int t = 0; t < V; t++) {
        A v = KD::load(u.s[t]);
        if (vec_bias) v += (A)g.beta * KD::load(bu.s[t]);
        else if (g.has_bias) v += bv;
        u.s[t] = KD::store(ptc_epi_act<K, ACT>(g, v));
      }
      cv[j] = u.v;
    }
    done = nv * V;
  }
  for (i64 i = done + blockIdx.x * (i64)blockDim.x + threadIdx.x; i < g.n; i += (i64)gridDim.x * blockDim.x) {
    A v = KD::load(c[i]);
    if (g.has_bias) v += (A)g.beta * KD::load(bias[((i / g.inner) % g.nbias) * g.bias_st]);
    c[i] = KD::store(ptc_epi_act<K, ACT>(g, v));
  }
}
template <int K> PTC_D void ptc_epi_body(typename ptc_mm_kind<K>::S* __restrict__ c,
                                         const typename ptc_mm_kind<K>::S* __restrict__ bias,
                                         const ptc_epi_args& g) {
  if (K >= 2 && g.act == 2 && !g.exact) ptc_epi_run<K, 2>(c, bias, g);
  else ptc_epi_run<K, -1>(c, bias, g);
}
extern "C" __global__ void ptc_epi_f32(float* c, const float* b, ptc_epi_args g) { ptc_epi_body<0>(c, b, g); }
extern "C" __global__ void ptc_epi_f64(double* c, const double* b, ptc_epi_args g) { ptc_epi_body<1>(c, b, g); }
extern "C" __global__ void ptc_epi_f16(u16* c, const u16* b, ptc_epi_args g) { ptc_epi_body<2>(c, b, g); }
extern "C" __global__ void ptc_epi_bf16(u16* c, const u16* b, ptc_epi_args g) { ptc_epi_body<3>(c, b, g); }

// ---- im2col -------------------------------------------------------------------
// col[img * col_img + ck * col_row + p] (ck = (ch * kh + i) * kw + j, p =
// oy * ow + ox) for images [0, nimg) of x (NCHW view, any strides), zero
// where the window reads padding: the B operand of a convolution as a GEMM
// W[oc][ck] @ col (one per group). col_img = CK * OHW, col_row = OHW: one
// [CK, OHW] matrix per image (a batched GEMM); col_img = OHW, col_row =
// nimg * OHW: the images side by side in one [CK, nimg * OHW] matrix (one
// wide GEMM). One thread per (channel, output pixel) of an image writes its
// kh * kw entries (consecutive threads: consecutive p, coalesced); blockIdx.y
// walks the images. The host keeps c * oh * ow below 2^31 (32-bit index math).
struct ptc_im2col_args {
  i64 nimg, c, h, w, kh, kw, oh, ow;
  i64 sh, sw, ph, pw, dh, dw;
  i64 xs_n, xs_c, xs_h, xs_w;
  i64 col_img, col_row;
};

template <typename T> PTC_D void ptc_im2col_body(const T* __restrict__ x, T* __restrict__ col,
                                                 const ptc_im2col_args& a) {
  const u32 ow = (u32)a.ow, ohw = (u32)(a.oh * a.ow), kh = (u32)a.kh, kw = (u32)a.kw, kk = kh * kw;
  const u32 total = (u32)(a.c * (i64)ohw);
  for (i64 img = blockIdx.y; img < a.nimg; img += gridDim.y) {
    const T* xi = x + img * a.xs_n;
    T* ci = col + img * a.col_img;
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
      const u32 ch = i / ohw, p = i - ch * ohw;
      const u32 oy = p / ow, ox = p - oy * ow;
      const i64 iy0 = (i64)oy * a.sh - a.ph, ix0 = (i64)ox * a.sw - a.pw;
      const T* xc = xi + (i64)ch * a.xs_c;
      T* cc = ci + (i64)ch * kk * a.col_row + p;
      u32 q = 0;
      for (u32 ii = 0; ii < kh; ii++) {
        const i64 iy = iy0 + (i64)ii * a.dh;
        const bool row_in = iy >= 0 && iy < a.h;
        for (u32 j = 0; j < kw; j++, q++) {
          const i64 ix = ix0 + (i64)j * a.dw;
          T v = (T)0;
          if (row_in && ix >= 0 && ix < a.w) v = xc[iy * a.xs_h + ix * a.xs_w];
          cc[(i64)q * a.col_row] = v;
        }
      }
    }
  }
}
extern "C" __global__ void __launch_bounds__(256) ptc_im2col_e2(const u16* x, u16* col, ptc_im2col_args a) {
  ptc_im2col_body(x, col, a);
}
extern "C" __global__ void __launch_bounds__(256) ptc_im2col_e4(const u32* x, u32* col, ptc_im2col_args a) {
  ptc_im2col_body(x, col, a);
}
extern "C" __global__ void __launch_bounds__(256) ptc_im2col_e8(const u64* x, u64* col, ptc_im2col_args a) {
  ptc_im2col_body(x, col, a);
}

// ---- wide im2col and its product back to NCHW (small output planes) ------------
// The wide layout: col[r * col_row + j], r = (ch * kh + i) * kw + jw over
// C * KH * KW rows, j = img * OHW + p over col_row = nimg * OHW columns
// (the images side by side: one wide GEMM). ptc_im2colw_e{2,4}: a thread
// writes V = 16 / sizeof(T) consecutive columns of one row as one 16-byte
// store (the pixels decomposed once, then stepped), loads one element each
// (the taps of a row overlap: they come from L1/L2). 32-bit index math: the
// host keeps C*KH*KW * col_row and every input offset of the chunk below
// 2^31, col_row a multiple of V and col 16-byte aligned (else the general
// kernel above).
template <typename T> PTC_D void ptc_im2colw_body(const T* __restrict__ x, T* __restrict__ col,
                                                  const ptc_im2col_args& a) {
  const int V = 16 / (int)sizeof(T);
  const i32 ow = (i32)a.ow, oh = (i32)a.oh, ohw = ow * oh, kw = (i32)a.kw, kk = (i32)a.kh * kw;
  const i32 sh = (i32)a.sh, sw = (i32)a.sw, ph = (i32)a.ph, pw = (i32)a.pw, dh = (i32)a.dh, dw = (i32)a.dw;
  const i32 h = (i32)a.h, w = (i32)a.w, xn = (i32)a.xs_n, xc = (i32)a.xs_c, xh = (i32)a.xs_h, xw = (i32)a.xs_w;
  const u32 nvec = (u32)(a.col_row / V), total = (u32)(a.c * kk) * nvec;
  union chunk { uint4 v; T s[16 / sizeof(T)]; };
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const u32 r = i / nvec, jv = i - r * nvec;
    const i32 ch = (i32)(r / (u32)kk), q = (i32)r - ch * kk, ki = q / kw, kj = q - ki * kw;
    const i32 j0 = (i32)jv * V;
    i32 img = j0 / ohw, p = j0 - img * ohw, oy = p / ow, ox = p - oy * ow;
    const i32 yoff = ki * dh - ph, xoff = kj * dw - pw;
    const T* xb = x + ch * xc;
    chunk u;
#pragma unroll
    for (int t = 0; t < V; t++) {
      const i32 iy = oy * sh + yoff, ix = ox * sw + xoff;
      T v = (T)0;
      if ((unsigned)iy < (unsigned)h && (unsigned)ix < (unsigned)w) v = xb[img * xn + iy * xh + ix * xw];
      u.s[t] = v;
      if (++ox == ow) {
        ox = 0;
        if (++oy == oh) oy = 0, img++;
      }
    }
    reinterpret_cast<uint4*>(col)[i] = u.v;
  }
}
extern "C" __global__ void __launch_bounds__(256) ptc_im2colw_e2(const u16* x, u16* col, ptc_im2col_args a) {
  ptc_im2colw_body(x, col, a);
}
extern "C" __global__ void __launch_bounds__(256) ptc_im2colw_e4(const u32* x, u32* col, ptc_im2col_args a) {
  ptc_im2colw_body(x, col, a);
}

// out[img][oc][p] = act(tmp[oc][img * ohw + p] + beta * bias[oc * bias_st])
// for the nimg * oc * ohw elements of out: the wide GEMM's product [OC,
// nimg * OHW] back into NCHW with the convolution's bias and activation
// (one pass instead of a copy and an epilogue). A thread writes V = 16 /
// sizeof(S) consecutive outputs as one 16-byte store (the host keeps the
// count a multiple of V, out 16-byte aligned, the count below 2^31).
struct ptc_w2n_args {
  i32 nimg, oc, ohw, act;
  i32 has_bias, pad_;
  i64 bias_st;
  float beta, pad2_;
};
template <int K> PTC_D void ptc_w2n_body(const typename ptc_mm_kind<K>::S* __restrict__ tmp,
                                         typename ptc_mm_kind<K>::S* __restrict__ out,
                                         const typename ptc_mm_kind<K>::S* __restrict__ bias,
                                         const ptc_w2n_args& g) {
  typedef ptc_mm_kind<K> KD;
  typedef typename KD::S S;
  const int V = 16 / (int)sizeof(S);
  union chunk { uint4 v; S s[16 / sizeof(S)]; };
  const i32 ohw = g.ohw, oc = g.oc, ldc = g.nimg * ohw, plane = oc * ohw;
  const u32 nv = (u32)(g.nimg * plane) / V;
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < nv; i += gridDim.x * blockDim.x) {
    const i32 o0 = (i32)i * V;
    i32 img = o0 / plane, rem = o0 - img * plane, c = rem / ohw, p = rem - c * ohw;
    chunk u;
    float bv = g.has_bias ? g.beta * (float)KD::load(bias[c * g.bias_st]) : 0.f;
#pragma unroll
    for (int t = 0; t < V; t++) {
      float v = (float)KD::load(tmp[c * ldc + img * ohw + p]) + bv;
      u.s[t] = KD::store(ptc_activate<float>(g.act, v));
      if (++p == ohw) {
        p = 0;
        if (++c == oc) c = 0, img++;
        if (g.has_bias && t + 1 < V) bv = g.beta * (float)KD::load(bias[c * g.bias_st]);
      }
    }
    reinterpret_cast<uint4*>(out)[i] = u.v;
  }
}
extern "C" __global__ void __launch_bounds__(256) ptc_w2n_f32(const float* t, float* o, const float* b,
                                                              ptc_w2n_args g) {
  ptc_w2n_body<0>(t, o, b, g);
}
extern "C" __global__ void __launch_bounds__(256) ptc_w2n_f16(const u16* t, u16* o, const u16* b,
                                                              ptc_w2n_args g) {
  ptc_w2n_body<2>(t, o, b, g);
}
extern "C" __global__ void __launch_bounds__(256) ptc_w2n_bf16(const u16* t, u16* o, const u16* b,
                                                               ptc_w2n_args g) {
  ptc_w2n_body<3>(t, o, b, g);
}

// ---- pooling --------------------------------------------------------------------
// max_pool2d (mode 0), avg_pool2d (1), adaptive_avg_pool2d (2) over [N, C]
// planes of x (any strides) into a contiguous [N, C, OH, OW] output, with
// the ref backend's window rules (NaN propagates through max; avg clips the
// window to the padded input for the count_include_pad divisor).
struct ptc_pool_args {
  i64 total, c, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  i64 xs_n, xs_c, xs_h, xs_w, divisor;
  i32 mode, include_pad;
};

template <int K> PTC_D void ptc_pool_body(const typename ptc_mm_kind<K>::S* __restrict__ x,
                                          typename ptc_mm_kind<K>::S* __restrict__ out,
                                          const ptc_pool_args& a) {
  typedef ptc_mm_kind<K> KD;
  typedef typename KD::A A;
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < a.total; i += (i64)gridDim.x * blockDim.x) {
    i64 ox, oy, ch, img;
    if (a.total <= 0x7fffffff) { // 32-bit index math (64-bit division is slow)
      const u32 iu = (u32)i, ow = (u32)a.ow, oh = (u32)a.oh, c = (u32)a.c;
      const u32 r = iu / ow, plane = r / oh;
      ox = iu - r * ow, oy = r - plane * oh, img = plane / c, ch = plane - (u32)img * c;
    } else {
      const i64 r = i / a.ow, plane = r / a.oh;
      ox = i % a.ow, oy = r % a.oh, ch = plane % a.c, img = plane / a.c;
    }
    const typename KD::S* xp = x + img * a.xs_n + ch * a.xs_c;
    A res;
    if (a.mode == 0) {
      A mx = -(A)__longlong_as_double(0x7ff0000000000000LL);
      for (i64 ki = 0; ki < a.kh; ki++) {
        const i64 iy = oy * a.sh - a.ph + ki * a.dh;
        if (iy < 0 || iy >= a.h) continue;
        for (i64 kj = 0; kj < a.kw; kj++) {
          const i64 ix = ox * a.sw - a.pw + kj * a.dw;
          if (ix < 0 || ix >= a.w) continue;
          const A v = KD::load(xp[iy * a.xs_h + ix * a.xs_w]);
          if (v > mx || v != v) mx = v;
        }
      }
      res = mx;
    } else {
      i64 lo0, hi0, lo1, hi1, pool = 1;
      if (a.mode == 2) {
        lo0 = oy * a.h / a.oh, hi0 = ((oy + 1) * a.h + a.oh - 1) / a.oh;
        lo1 = ox * a.w / a.ow, hi1 = ((ox + 1) * a.w + a.ow - 1) / a.ow;
      } else {
        lo0 = oy * a.sh - a.ph, hi0 = lo0 + a.kh;
        lo1 = ox * a.sw - a.pw, hi1 = lo1 + a.kw;
        if (hi0 > a.h + a.ph) hi0 = a.h + a.ph;
        if (hi1 > a.w + a.pw) hi1 = a.w + a.pw;
        pool = (hi0 - lo0) * (hi1 - lo1);
        if (lo0 < 0) lo0 = 0;
        if (lo1 < 0) lo1 = 0;
        if (hi0 > a.h) hi0 = a.h;
        if (hi1 > a.w) hi1 = a.w;
      }
      A sum = (A)0;
      for (i64 iy = lo0; iy < hi0; iy++)
        for (i64 ix = lo1; ix < hi1; ix++) sum += KD::load(xp[iy * a.xs_h + ix * a.xs_w]);
      const i64 cnt = (hi0 > lo0 && hi1 > lo1) ? (hi0 - lo0) * (hi1 - lo1) : 0;
      if (a.mode == 1 && cnt == 0)
        res = (A)0;
      else if (a.mode == 1 && a.divisor > 0)
        res = sum / (A)a.divisor;
      else
        res = sum / (A)(a.mode == 1 && a.include_pad ? pool : cnt);
    }
    out[i] = KD::store(res);
  }
}
// max_pool2d (mode 8: the host checked that the output count and every
// input offset fit 32 bits): a thread per output, 32-bit index math, the
// window's loops unrolled (KH, KW > 0: that window, 0: a.kh x a.kw),
// bounds as unsigned compares; same NaN rule as ptc_pool_body.
template <int K, int KH, int KW> PTC_D void ptc_pool_max32(const typename ptc_mm_kind<K>::S* __restrict__ x,
                                                           typename ptc_mm_kind<K>::S* __restrict__ out,
                                                           const ptc_pool_args& a) {
  typedef ptc_mm_kind<K> KD;
  typedef typename KD::A A;
  const int kh = KH > 0 ? KH : (int)a.kh, kw = KW > 0 ? KW : (int)a.kw;
  const u32 total = (u32)a.total, ow = (u32)a.ow, oh = (u32)a.oh, c = (u32)a.c;
  const int h = (int)a.h, w = (int)a.w, sh = (int)a.sh, sw = (int)a.sw, ph = (int)a.ph, pw = (int)a.pw;
  const int dh = (int)a.dh, dw = (int)a.dw, xs_h = (int)a.xs_h, xs_w = (int)a.xs_w;
  const int xs_n = (int)a.xs_n, xs_c = (int)a.xs_c;
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const u32 r = i / ow, plane = r / oh, img = plane / c;
    const int ox = (int)(i - r * ow), oy = (int)(r - plane * oh), ch = (int)(plane - img * c);
    const typename KD::S* xp = x + ((int)img * xs_n + ch * xs_c);
    const int iy0 = oy * sh - ph, ix0 = ox * sw - pw;
    A mx = -(A)__longlong_as_double(0x7ff0000000000000LL);
#pragma unroll
    for (int ki = 0; ki < kh; ki++) {
      const int iy = iy0 + ki * dh;
      if ((unsigned)iy >= (unsigned)h) continue;
      const typename KD::S* xr = xp + iy * xs_h;
#pragma unroll
      for (int kj = 0; kj < kw; kj++) {
        const int ix = ix0 + kj * dw;
        if ((unsigned)ix >= (unsigned)w) continue;
        const A v = KD::load(xr[ix * xs_w]);
        if (v > mx || v != v) mx = v;
      }
    }
    out[i] = KD::store(mx);
  }
}

// max_pool2d 3x3, stride 2 along x, padding 1 along x, no dilation, unit x
// stride, rows and planes 16-byte aligned (mode 9: the host checked these
// and that the run count and offsets fit 32 bits): a thread per run of 4
// outputs of one output row. The run's 9 input columns per window row
// (8q-1 .. 8q+7) come as one 16-byte vector per 16 bytes of the 8 columns
// 8q .. 8q+7 plus one scalar, instead of 36 scalar loads; columns past the
// row end are read one by one. a.total is the run count (N*C*OH*runs).
// Same NaN rule as ptc_pool_body.
template <typename A> PTC_D A ptc_pool_max_upd(A m, A v) { return (v > m || v != v) ? v : m; }
template <int K> PTC_D void ptc_pool_max3s2(const typename ptc_mm_kind<K>::S* __restrict__ x,
                                            typename ptc_mm_kind<K>::S* __restrict__ out,
                                            const ptc_pool_args& a) {
  typedef ptc_mm_kind<K> KD;
  typedef typename KD::S S;
  typedef typename KD::A A;
  constexpr int NV = (int)(8 * sizeof(S) / 16); // 16-byte vectors per 8 columns
  const u32 total = (u32)a.total, ow = (u32)a.ow, oh = (u32)a.oh, c = (u32)a.c;
  const u32 runs = (ow + 3) / 4;
  const int h = (int)a.h, w = (int)a.w, sh = (int)a.sh, ph = (int)a.ph, xs_h = (int)a.xs_h;
  const int xs_n = (int)a.xs_n, xs_c = (int)a.xs_c;
  const A ninf = -(A)__longlong_as_double(0x7ff0000000000000LL);
  for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
    const u32 r = i / runs, plane = r / oh, img = plane / c;
    const int q = (int)(i - r * runs), oy = (int)(r - plane * oh), ch = (int)(plane - img * c);
    const S* xp = x + ((int)img * xs_n + ch * xs_c);
    const int x0 = 8 * q;
    A m[4] = {ninf, ninf, ninf, ninf};
#pragma unroll
    for (int ki = 0; ki < 3; ki++) {
      const int iy = oy * sh - ph + ki;
      if ((unsigned)iy >= (unsigned)h) continue;
      const S* xr = xp + iy * xs_h;
      A v[9];
      v[0] = x0 > 0 ? KD::load(xr[x0 - 1]) : ninf;
      if (x0 + 7 < w) {
        union {
          uint4 u[NV];
          S e[8];
        } t;
#pragma unroll
        for (int k = 0; k < NV; k++) t.u[k] = reinterpret_cast<const uint4*>(xr + x0)[k];
#pragma unroll
        for (int j = 0; j < 8; j++) v[1 + j] = KD::load(t.e[j]);
      } else {
#pragma unroll
        for (int j = 0; j < 8; j++) v[1 + j] = x0 + j < w ? KD::load(xr[x0 + j]) : ninf;
      }
#pragma unroll
      for (int o = 0; o < 4; o++)
        m[o] = ptc_pool_max_upd(ptc_pool_max_upd(ptc_pool_max_upd(m[o], v[2 * o]), v[2 * o + 1]),
                                v[2 * o + 2]);
    }
    S* op = out + r * ow + 4 * q;
#pragma unroll
    for (int o = 0; o < 4; o++)
      if (4 * q + o < (int)ow) op[o] = KD::store(m[o]);
  }
}

// A whole-plane average (mode 4: adaptive_avg_pool2d to 1x1, or an
// avg_pool2d whose one window is the unpadded plane): a warp per [n, c]
// plane (total planes), its lanes over the plane's pixels (coalesced for
// contiguous planes), a shuffle sum, / a.divisor (the host's pixel count or
// divisor_override).
template <int K> PTC_D void ptc_pool_gavg(const typename ptc_mm_kind<K>::S* __restrict__ x,
                                          typename ptc_mm_kind<K>::S* __restrict__ out,
                                          const ptc_pool_args& a) {
  typedef ptc_mm_kind<K> KD;
  typedef typename KD::A A;
  const int lane = threadIdx.x & 31, wpb = blockDim.x >> 5;
  const i64 hw = a.h * a.w;
  for (i64 pl = (i64)blockIdx.x * wpb + (threadIdx.x >> 5); pl < a.total; pl += (i64)gridDim.x * wpb) {
    const i64 img = pl / a.c, ch = pl - img * a.c;
    const typename KD::S* xp = x + img * a.xs_n + ch * a.xs_c;
    A sum = (A)0;
    if (a.xs_w == 1 && (a.xs_h == a.w || a.h == 1)) {
      for (i64 p = lane; p < hw; p += 32) sum += KD::load(xp[p]);
    } else {
      for (i64 p = lane; p < hw; p += 32) {
        const i64 iy = p / a.w, ix = p - iy * a.w;
        sum += KD::load(xp[iy * a.xs_h + ix * a.xs_w]);
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) out[pl] = KD::store(sum / (A)a.divisor);
  }
}

// The entry: mode 0..2 the general body; 8 the 32-bit max pool (3x3
// windows unrolled); 9 its vector form for 3x3 stride-2 windows; 4 the
// whole-plane average.
template <int K> PTC_D void ptc_pool_entry(const typename ptc_mm_kind<K>::S* __restrict__ x,
                                           typename ptc_mm_kind<K>::S* __restrict__ out,
                                           const ptc_pool_args& a) {
  if (a.mode == 9) {
    ptc_pool_max3s2<K>(x, out, a);
  } else if (a.mode == 8) {
    if (a.kh == 3 && a.kw == 3)
      ptc_pool_max32<K, 3, 3>(x, out, a);
    else
      ptc_pool_max32<K, 0, 0>(x, out, a);
  } else if (a.mode == 4) {
    ptc_pool_gavg<K>(x, out, a);
  } else {
    ptc_pool_body<K>(x, out, a);
  }
}
extern "C" __global__ void ptc_pool_f32(const float* x, float* o, ptc_pool_args a) { ptc_pool_entry<0>(x, o, a); }
extern "C" __global__ void ptc_pool_f64(const double* x, double* o, ptc_pool_args a) { ptc_pool_entry<1>(x, o, a); }
extern "C" __global__ void ptc_pool_f16(const u16* x, u16* o, ptc_pool_args a) { ptc_pool_entry<2>(x, o, a); }
extern "C" __global__ void ptc_pool_bf16(const u16* x, u16* o, ptc_pool_args a) { ptc_pool_entry<3>(x, o, a); }
