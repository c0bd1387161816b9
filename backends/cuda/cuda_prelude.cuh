// cuda_prelude.cuh - the text every generated CUDA kernel starts with
// (embedded into the library at build time as ptc_cuda_prelude_text).
// It needs no header: NVRTC compiles it with no include path, so the fixed
// width types, half/bfloat16 conversions, NaN/inf constants and helpers are
// written here. Semantics are those of backends/ref and the cpu backend:
// ATen conversions (float->int truncates, NaN->0, out of range->INT64_MIN),
// Python floor division/remainder, wrap-around integer arithmetic,
// NaN-propagating max/min, and Philox4x32-10 random numbers addressed as
// backends/ref/ref_random.c so every backend draws the same values.
// Half/bfloat16 are stored as 16-bit integers and computed in float;
// conversions use the PTX cvt instructions (round to nearest even).
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

#define PTC_D __device__ __forceinline__
#define PTC_INF_F __int_as_float(0x7f800000)
#define PTC_NAN_F __int_as_float(0x7fc00000)
#define PTC_INF_D __longlong_as_double(0x7ff0000000000000LL)
#define PTC_NAN_D __longlong_as_double(0x7ff8000000000000LL)
#define PTC_I64_MIN (-9223372036854775807LL - 1)
#define PTC_I64_MAX 9223372036854775807LL

// ---- error channel (layout = cuda_kerr on the host) ----------------------
struct ptc_kerr {
  i32 error;
  i32 node;
  i64 value;
  i64 bound;
};
enum { PTC_KERR_INDIRECT = 1, PTC_KERR_DIV_ZERO = 2, PTC_KERR_EMPTY = 3 };
// The first failing thread wins; k == 0 disables reporting (threads that
// only pad a tile).
PTC_D void ptc_fail(ptc_kerr* k, i32 code, i32 node, i64 v, i64 b) {
  if (!k) return;
  if (atomicCAS(&k->error, 0, code) == 0) {
    k->node = node;
    k->value = v;
    k->bound = b;
  }
}

// ---- programmatic dependent launch (sm_90+) ------------------------------
// Every generated kernel starts with one of these (cuda_cg_kernel.c picks
// it). The host launches generated kernels with programmatic stream
// serialization (cuda_launch.c), so a kernel may be placed on the GPU
// before the previous one on the stream has ended: griddepcontrol.wait
// holds it until the kernels before it have ended and their writes are
// visible, before any global memory is touched. The default leaves the
// trigger (launch_dependents) to each block's exit; _after triggers right
// after the wait and _first before it, which place the next kernel earlier
// but let its blocks sit waiting on the SMs (H100: bf16 column sums 18%
// slower with _after, f32 ones 8% with _first; nothing else faster).
// Without that launch attribute, or on older GPUs, they do nothing.
PTC_D void ptc_pdl_enter() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
PTC_D void ptc_pdl_enter_after() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
PTC_D void ptc_pdl_enter_first() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// ---- half / bfloat16 storage ---------------------------------------------
PTC_D float ptc_h2f(u16 h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
PTC_D u16 ptc_f2h(float f) {
  u16 h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
PTC_D float ptc_bf2f(u16 h) { return __uint_as_float((u32)h << 16); }
PTC_D u16 ptc_f2bf(float f) {
#if __CUDA_ARCH__ >= 800
  u16 h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  u32 u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40);
  return (u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
}
PTC_D float ptc_round_f16(float f) { return ptc_h2f(ptc_f2h(f)); }
PTC_D float ptc_round_bf16(float f) { return ptc_bf2f(ptc_f2bf(f)); }

// ---- integers: index helpers (floor semantics, never trap) ---------------
template <typename T> PTC_D T ptc_floordiv(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return (T)(0 - a);
  T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> PTC_D T ptc_mod(T a, T b) {
  if (b == 0 || b == -1) return 0;
  T m = a % b;
  return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;
}
template <typename T> PTC_D T ptc_ceildiv(T a, T b) { return (T)(0 - ptc_floordiv((T)(0 - a), b)); }
template <typename T> PTC_D T ptc_imin(T a, T b) { return a < b ? a : b; }
template <typename T> PTC_D T ptc_imax(T a, T b) { return a > b ? a : b; }

// ---- integers: values (wrap-around; division by zero reported) ------------
PTC_D i64 ptc_ineg(i64 a) { return (i64)(0ull - (u64)a); }
PTC_D i64 ptc_iadd(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
PTC_D i64 ptc_isub(i64 a, i64 b) { return (i64)((u64)a - (u64)b); }
PTC_D i64 ptc_imul(i64 a, i64 b) { return (i64)((u64)a * (u64)b); }
PTC_D i64 ptc_iabs(i64 a) { return a < 0 ? ptc_ineg(a) : a; }
PTC_D i64 ptc_idiv_chk(ptc_kerr* k, i32 node, i64 a, i64 b) {
  if (b == 0) {
    ptc_fail(k, PTC_KERR_DIV_ZERO, node, a, 0);
    return 0;
  }
  return b == -1 ? ptc_ineg(a) : a / b;
}
PTC_D i64 ptc_floordiv_chk(ptc_kerr* k, i32 node, i64 a, i64 b) {
  if (b == 0) {
    ptc_fail(k, PTC_KERR_DIV_ZERO, node, a, 0);
    return 0;
  }
  return ptc_floordiv<i64>(a, b);
}
PTC_D i64 ptc_mod_chk(ptc_kerr* k, i32 node, i64 a, i64 b) {
  if (b == 0) {
    ptc_fail(k, PTC_KERR_DIV_ZERO, node, a, 0);
    return 0;
  }
  return ptc_mod<i64>(a, b);
}
PTC_D i64 ptc_ipow(i64 a, i64 b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  u64 r = 1, base = (u64)a;
  for (u64 e = (u64)b; e; e >>= 1) {
    if (e & 1) r *= base;
    base *= base;
  }
  return (i64)r;
}
PTC_D i64 ptc_f2i(double v) {
  if (v != v) return 0;
  if (v >= 9.2233720368547758e18 || v <= -9.2233720368547758e18) return PTC_I64_MIN;
  return (i64)v;
}

// ---- floating helpers (float and double overloads) -------------------------
PTC_D bool ptc_isnan(float a) { return a != a; }
PTC_D bool ptc_isnan(double a) { return a != a; }
PTC_D bool ptc_isinf(float a) { return fabsf(a) == PTC_INF_F; }
PTC_D bool ptc_isinf(double a) { return fabs(a) == PTC_INF_D; }
template <typename T> PTC_D T ptc_fmax(T a, T b) { return (a != a || b != b) ? a + b : a > b ? a : b; }
template <typename T> PTC_D T ptc_fmin(T a, T b) { return (a != a || b != b) ? a + b : a < b ? a : b; }
template <typename T> PTC_D T ptc_sign(T a) { return (T)((a > 0) - (a < 0)); }
template <typename T> PTC_D T ptc_relu(T a) { return a < 0 ? (T)0 : a; }
PTC_D float ptc_sigmoid(float a) {
  float e = expf(a < 0 ? a : -a);
  return a >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
}
PTC_D double ptc_sigmoid(double a) {
  double e = exp(a < 0 ? a : -a);
  return a >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}
PTC_D float ptc_fmod_py(float a, float b) {
  float m = fmodf(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}
PTC_D double ptc_fmod_py(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && ((b < 0) != (m < 0))) m += b;
  return m;
}
PTC_D float ptc_ffloordiv(float a, float b) {
  if (b == 0) return a / b;
  float m = fmodf(a, b), d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
  if (d == 0) return copysignf(0.0f, a / b);
  float fl = floorf(d);
  if (d - fl > 0.5f) fl += 1;
  return fl;
}
PTC_D double ptc_ffloordiv(double a, double b) {
  if (b == 0) return a / b;
  double m = fmod(a, b), d = (a - m) / b;
  if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
  if (d == 0) return copysign(0.0, a / b);
  double fl = floor(d);
  if (d - fl > 0.5) fl += 1;
  return fl;
}

// ---- Philox4x32-10 (key = seed; counter = index lo/hi, stream lo/hi) --------
PTC_D void ptc_philox(u64 seed, u64 stream, u64 ctr, u32 o[4]) {
  u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
  u32 c0 = (u32)ctr, c1 = (u32)(ctr >> 32), c2 = (u32)stream, c3 = (u32)(stream >> 32);
#pragma unroll
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    u64 p0 = (u64)0xD2511F53u * c0, p1 = (u64)0xCD9E8D57u * c2;
    u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0, n2 = (u32)(p0 >> 32) ^ c3 ^ k1;
    c1 = (u32)p1;
    c3 = (u32)p0;
    c0 = n0;
    c2 = n2;
  }
  o[0] = c0;
  o[1] = c1;
  o[2] = c2;
  o[3] = c3;
}
PTC_D double ptc_unit(u32 a, u32 b) {
  u64 bits = ((u64)(a >> 5) << 26) | (b >> 6);
  return (double)bits * (1.0 / 9007199254740992.0);
}
// uniform [0,1) truncated to `scale` = 2^(mantissa bits) of the dtype
PTC_D double ptc_rand(u64 seed, i64 stream, i64 i, double scale) {
  u32 w[4];
  ptc_philox(seed, (u64)stream, (u64)i, w);
  return floor(ptc_unit(w[0], w[1]) * scale) / scale;
}
PTC_D double ptc_randn(u64 seed, i64 stream, i64 i) {
  u32 w[4];
  ptc_philox(seed, (u64)stream, (u64)i, w);
  double u1 = 1.0 - ptc_unit(w[0], w[1]), u2 = ptc_unit(w[2], w[3]);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

// ---- reductions: combine operators (associative and commutative, so a
// butterfly gives every lane the same bits) ---------------------------------
struct ptc_op_sum {
  template <typename T> PTC_D T operator()(T a, T b) const { return a + b; }
};
struct ptc_op_prod {
  template <typename T> PTC_D T operator()(T a, T b) const { return a * b; }
};
struct ptc_op_max {  // NaN wins (sm_80+: one max.NaN instruction)
  PTC_D float operator()(float a, float b) const {
#if __CUDA_ARCH__ >= 800
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return a != a ? a : b != b ? b : (a > b ? a : b);
#endif
  }
  PTC_D double operator()(double a, double b) const { return a != a ? a : b != b ? b : (a > b ? a : b); }
  PTC_D i64 operator()(i64 a, i64 b) const { return a > b ? a : b; }
};
struct ptc_op_min {
  PTC_D float operator()(float a, float b) const {
#if __CUDA_ARCH__ >= 800
    float r;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
#else
    return a != a ? a : b != b ? b : (a < b ? a : b);
#endif
  }
  PTC_D double operator()(double a, double b) const { return a != a ? a : b != b ? b : (a < b ? a : b); }
  PTC_D i64 operator()(i64 a, i64 b) const { return a < b ? a : b; }
};
struct ptc_op_or {
  PTC_D u8 operator()(u8 a, u8 b) const { return (u8)(a | b); }
};
struct ptc_op_and {
  PTC_D u8 operator()(u8 a, u8 b) const { return (u8)(a & b); }
};

// Whether candidate (v, i) replaces best (bv, bi) for argmax (mx) / argmin:
// an index < 0 is "empty"; NaN beats numbers; equal values keep the lower
// index. A total order, so combining is associative and commutative.
template <typename T> PTC_D bool ptc_arg_better(T v, i64 i, T bv, i64 bi, bool mx) {
  if (i < 0) return false;
  if (bi < 0) return true;
  bool n = v != v, bn = bv != bv;
  if (n || bn) return n && (!bn || i < bi);
  if (v == bv) return i < bi;
  return mx ? v > bv : v < bv;
}

PTC_D float ptc_shfl(float v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
PTC_D double ptc_shfl(double v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
PTC_D i64 ptc_shfl(i64 v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
PTC_D u64 ptc_shfl(u64 v, int o) { return __shfl_xor_sync(0xffffffffu, v, o); }
PTC_D u8 ptc_shfl(u8 v, int o) { return (u8)__shfl_xor_sync(0xffffffffu, (int)v, o); }

// Butterfly over the 32 lanes of a warp: every lane ends with the result.
template <typename F, typename T> PTC_D T ptc_warp_all(T v) {
  F f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = f(v, ptc_shfl(v, o));
  return v;
}
template <typename T> PTC_D void ptc_warp_arg(T& v, i64& i, bool mx) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    T ov = ptc_shfl(v, o);
    i64 oi = ptc_shfl(i, o);
    if (ptc_arg_better(ov, oi, v, i, mx)) {
      v = ov;
      i = oi;
    }
  }
}

// ---- 16-byte (or narrower) vector access to V consecutive elements -----------
// Loads and stores of contiguous pointwise kernels: one ld/st.global.v4 per
// thread and buffer instead of V scalar accesses (the pointer must be
// aligned to sizeof(T) * V, which the kernel checks before taking the path).
template <int B> struct ptc_raw;
template <> struct alignas(16) ptc_raw<16> { u32 w[4]; };
template <> struct alignas(8) ptc_raw<8> { u32 w[2]; };
template <> struct alignas(4) ptc_raw<4> { u32 w[1]; };
template <> struct alignas(2) ptc_raw<2> { u16 w[1]; };
template <typename T, int V> PTC_D void ptc_vload(const T* p, T* out) {
  union {
    ptc_raw<sizeof(T) * V> r;
    T e[V];
  } u;
  u.r = *reinterpret_cast<const ptc_raw<sizeof(T) * V>*>(p);
#pragma unroll
  for (int i = 0; i < V; i++) out[i] = u.e[i];
}
template <typename T, int V> PTC_D void ptc_vstore(T* p, const T* in) {
  union {
    ptc_raw<sizeof(T) * V> r;
    T e[V];
  } u;
#pragma unroll
  for (int i = 0; i < V; i++) u.e[i] = in[i];
  *reinterpret_cast<ptc_raw<sizeof(T) * V>*>(p) = u.r;
}

// ---- fast math (owned by the pointwise kernels; see cuda_cg_ops.c) ----------
// Only where PyTorch's Inductor makes the same choice for float32 (Triton:
// tl.exp on fp32 is ex2.approx.f32 of x * log2(e); `/` on fp32 is
// div.full.f32; tl.sigmoid(x) = 1 / (1 + exp(-x))). float16/bfloat16 are
// computed in float and take the same path. double keeps the precise
// library functions; sin/cos (sinf / cosf; in vector paths ptc_sin_v /
// ptc_cos_v below, as accurate), tan/tanh/log/erf and plain division stay
// precise (libdevice in Inductor too).
PTC_D float ptc_exp(float a) {
  float r;
  asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(a * 1.4426950408889634f));
  return r;
}
PTC_D double ptc_exp(double a) { return exp(a); }
PTC_D float ptc_sigmoid_fast(float a) {
  float r;
  asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(1.0f), "f"(1.0f + ptc_exp(-a)));
  return r;
}
PTC_D double ptc_sigmoid_fast(double a) { return ptc_sigmoid(a); }

// ---- float32 sin / cos of vector pointwise kernels ---------------------------
// CUDA's sinf / cosf inline their long argument reduction for huge
// arguments (Payne-Hanek, a loop over a table in local memory) at every
// use: the 2-chunk fp32 chain (8 sin + 8 cos inlined) takes 180 ms of NVRTC
// time on this project's CI machine, most of it for those cold paths. The
// vector path of pointwise kernels (cuda_cg_body.c) takes these instead
// (99 ms; PTC_CUDA_F32_TRIG=libm: sinf / cosf there too): short, no branch
// and no call. th flags an argument beyond their range (PTC_TRIG_V_MAX):
// the chunk is then computed again by the scalar path with sinf / cosf;
// NaN gives NaN here. H100, the f32 chain over 2^26 (session 17): 183.5 us
// against 185.0 with sinf / cosf; ncu: 139.5M instructions against 160.2M,
// as many on the ALU pipe (43.8M).
//  - a = k * pi/2 + r, k = rint(a * 2/pi), r by a three-part pi/2 (parts
//    rounded down, so k * -part + (-0) keeps -0; the first FMA is exact for
//    |a| <= 105615, |k| < 2^17), |r| <= pi/4 + 2e-3;
//  - sin r = r + r u P(u), cos r = 1 + u Q(u), u = r^2, P = s1 + u (s2 +
//    u s3), Q = -1/2 + u (c1 + u (c2 + u c3)) (minimax relative errors
//    7.9e-9 and 2.2e-10 with these float coefficients), both evaluated and
//    one picked per lane by k mod 4 (a select: lanes of a warp in different
//    quadrants do not diverge), negated for k mod 4 in {2, 3}.
// Every float32 0 <= a <= 105615 and every 61st negative one, emulated on a
// host with IEEE fmaf / rintf (no fast-math flags): at most 1.55 ulp from
// the true value for both (CUDA documents 2 ulp for sinf / cosf);
// test_cuda_trig checks them on the GPU. sin(-0) = -0; denormal arguments
// keep their value (sin) or give 1 (cos).
// sin r (q even) or cos r (q odd) of a = k * pi/2 + r, q = k + j.
PTC_D float ptc_trig_v(float a, int j, float& th) {
  const int ki = __float2int_rn(a * 0x1.45f306p-1f);  // inf: INT_MAX / MIN; NaN: 0
  const float k = (float)ki;
  th = fmaf(k, k, th);  // on the FMA pipe (the ALU pipe is this kernel's busiest)
  float r = fmaf(k, -0x1.921fb4p+0f, a);
  r = fmaf(k, -0x1.4442d0p-24f, r);
  r = fmaf(k, -0x1.84698ap-48f, r);
  const int q = ki + j;
  const float u = r * r;
  // both polynomials on the FMA pipe, one select (selects and predicates
  // run on the ALU pipe, this kernel's busiest)
  float ps = fmaf(u, -0x1.993af8p-13f, 0x1.110722p-7f);
  ps = fmaf(u, ps, -0x1.555544p-3f);
  const float vs = fmaf(fmaf(u, r, 0.0f), ps, r);  // u r + 0: +0 where r = -0, so sin(-0) = -0
  float pc = fmaf(u, 0x1.99e376p-16f, -0x1.6c0c18p-10f);
  pc = fmaf(u, pc, 0x1.55554ap-5f);
  pc = fmaf(u, pc, -0.5f);
  const float vc = fmaf(u, pc, 1.0f);
  const float v = (q & 1) ? vc : vs;
  return __uint_as_float(__float_as_uint(v) ^ (((unsigned)q << 30) & 0x80000000u));  // - for q mod 4 in {2, 3}
}
PTC_D float ptc_sin_v(float a, float& th) { return ptc_trig_v(a, 0, th); }
PTC_D float ptc_cos_v(float a, float& th) { return ptc_trig_v(a, 1, th); }
// th sums k^2 over a chunk's calls: past 67200^2 (one |k| > 67200, i.e. an
// |argument| beyond about 105558, or inf) the chunk is recomputed with
// sinf / cosf (also, harmlessly, when many moderate arguments add up).
#define PTC_TRIG_V_MAX 4515840000.0f

// ---- float16/bfloat16 graph ops computed in float (IR_MATH_LOWP) ------------
// sin, cos and sigmoid whose graph dtype is float16/bfloat16: the value is
// stored rounded to 11 or 8 significant bits, so an approximation whose
// error is far below that rounding may replace the precise function (never
// for float32/float64 ops). See docs/cuda.md ("Precision") for the bounds.
//
// The precise functions for the rare huge arguments (|a| > 105615, inf,
// NaN), out of line: one copy of their long argument reduction per kernel
// instead of one per use (smaller code, faster NVRTC compiles).
__device__ __noinline__ float ptc_sin_huge(float a) { return sinf(a); }
__device__ __noinline__ float ptc_cos_huge(float a) { return cosf(a); }
#define PTC_MAGIC 12582912.0f  // 1.5 * 2^23: x + PTC_MAGIC rounds x to an integer
#define PTC_SIGN(a) (__float_as_int(a) & (int)0x80000000)

// Default: r = |a| - 2*pi*rint(|a| / (2*pi)) with a two-part 2*pi (the first
// product is exact; the reduction error is below 1.2e-10), then the
// hardware sin.approx / cos.approx (__sinf / __cosf: absolute error at most
// 2^-21.41 on [-pi, pi], CUDA programming guide); sin(r) = r where |r| <
// 1/64 (relative error < r^2/6 = 4.1e-5), so small arguments keep their
// value; sin's sign from a (odd). Absolute error <= 4e-7 everywhere. On an
// H100 over every bf16 input: sin and cos round as the precise sinf/cosf;
// over every f16 input: 4 sin and 6 cos results are more than one f16 ulp
// from the true value (results next to a zero of sin/cos, within 4e-7).
PTC_D float ptc_sin_lowp(float a) {
  if (!(fabsf(a) <= 105615.0f)) return ptc_sin_huge(a);
  const float k = fmaf(fabsf(a), 0x1.45f306p-3f, PTC_MAGIC) - PTC_MAGIC;
  float r = fmaf(-k, 0x1.921fb6p+2f, fabsf(a));
  r = fmaf(-k, -0x1.777a5cp-23f, r);
  const float s = fabsf(r) < 0.015625f ? r : __sinf(r);
  return __int_as_float(__float_as_int(s) ^ PTC_SIGN(a));
}
PTC_D float ptc_cos_lowp(float a) {
  if (!(fabsf(a) <= 105615.0f)) return ptc_cos_huge(a);
  const float k = fmaf(fabsf(a), 0x1.45f306p-3f, PTC_MAGIC) - PTC_MAGIC;
  float r = fmaf(-k, 0x1.921fb6p+2f, fabsf(a));
  r = fmaf(-k, -0x1.777a5cp-23f, r);
  return __cosf(r);
}

// PTC_CUDA_LOWP_TRIG=poly: relative accuracy also next to the zeros. |a| =
// k*pi + r with a three-part pi (r accurate where sin is near 0), sin r =
// r * (1 + u*P(u)), u = r^2, P of degree 3 (relative error 8.4e-9 on
// [-pi/2 - 0.05, pi/2 + 0.05]); cos a = (-1)^(q+1) sin(|a| - (q+1/2)pi).
// Host emulation of these float operations on 186 million float32 inputs
// (every 13th bit pattern with |a| <= 2e5): at most 2.9 float32 ulp; every
// bf16 input rounds as the precise sinf/cosf, every f16 input too except
// sin(+-47.65625), whose true value lies 3e-11 from an f16 rounding midpoint.
// About 8 more instructions per call than the default (H100, the bf16
// chain sin-*2-+1-relu-cos-sigmoid over 2^26: 0.1345 ms against 0.1024).
PTC_D float ptc_sin_poly(float r) {
  const float u = r * r;
  float p = fmaf(u, 0x1.5c71c2p-19f, -0x1.9f5912p-13f);
  p = fmaf(u, p, 0x1.110e5ap-7f);
  p = fmaf(u, p, -0x1.555548p-3f);
  return r * fmaf(u, p, 1.0f);
}
PTC_D float ptc_sin_lowp_poly(float a) {
  if (!(fabsf(a) <= 105615.0f)) return ptc_sin_huge(a);
  const float kk = fmaf(fabsf(a), 0x1.45f306p-2f, PTC_MAGIC);  // PTC_MAGIC + rint(|a|/pi)
  const float k = kk - PTC_MAGIC;
  float r = fmaf(-k, 0x1.921fb6p+1f, fabsf(a));  // exact
  r = fmaf(-k, -0x1.777a5cp-24f, r);
  r = fmaf(-k, -0x1.ee59dap-49f, r);
  return __int_as_float(__float_as_int(ptc_sin_poly(r)) ^ (__float_as_int(kk) << 31) ^ PTC_SIGN(a));
}
PTC_D float ptc_cos_lowp_poly(float a) {
  if (!(fabsf(a) <= 105615.0f)) return ptc_cos_huge(a);
  const float kk = fmaf(fabsf(a), 0x1.45f306p-2f, -0.5f) + PTC_MAGIC;  // PTC_MAGIC + q
  const float j = fmaf(2.0f, kk - PTC_MAGIC, 1.0f);                     // 2q + 1
  float r = fmaf(-j, 0x1.921fb6p+0f, fabsf(a));  // exact where |a| >= 1
  r = fmaf(-j, -0x1.777a5cp-25f, r);
  r = fmaf(-j, -0x1.ee59dap-50f, r);
  return __int_as_float(__float_as_int(ptc_sin_poly(r)) ^ (~__float_as_int(kk) << 31));
}

// sigmoid = 1 / (1 + 2^(-a*log2(e))) as Inductor's float32 form, with
// ex2.approx.ftz and rcp.approx.ftz (relative errors 2^-22 and 1 ulp: as
// accurate as ex2.approx + div.full) and 2^-64 scalings around the
// reciprocal so results below 2^-126 are still exact subnormals; 1 + e
// overflowing (a < -88.7) gives 0 as Inductor's form does.
PTC_D float ptc_sigmoid_lowp(float a) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(a * -1.4426950408889634f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((1.0f + e) * 0x1p-64f));
  return r * 0x1p-64f;
}
