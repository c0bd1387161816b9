/* cpu_prelude.c - the text every generated CPU kernel starts with: includes,
 * the kernel context (seed + error channel, mirroring cpu_kernel_ctx of
 * cpu.h), half/bfloat16 conversions (round to nearest even, bit-exact with
 * lib/core/half.c), integer helpers with Python floor semantics and
 * wrap-around, NaN-propagating float helpers, float->int conversion as
 * ATen/ref, and Philox4x32-10 addressed exactly as backends/ref/ref_random.c
 * so random ops draw the same values on every backend.
 *
 * Every helper is `static inline __attribute__((unused))` (PTC_INLINE) so
 * unused ones cost nothing and raise no warnings under -Wall -Wextra with
 * gcc or clang. `omp simd` on a loop that cannot be vectorised (libm calls)
 * is only a missed optimisation: clang's -Wpass-failed is silenced. Kernels
 * never read floating-point exception flags, so GCC compiles them with
 * no-trapping-math: it may then if-convert (speculate) float operations in
 * selects, which lets loops with masked values vectorise; results are
 * unchanged (no reassociation, no finite-math assumptions).
 */
#include "cpu_codegen_internal.h"

#include <stdio.h>

static const char* const prelude_head =
    "#define PTC_INLINE static inline __attribute__((unused))\n"
    "#ifdef __clang__\n"
    "#pragma clang diagnostic ignored \"-Wpass-failed\"\n"
    "#elif defined(__GNUC__)\n"
    "#pragma GCC optimize(\"no-trapping-math\")\n"
    "#endif\n"
    "#include <math.h>\n"
    "#include <stdint.h>\n"
    "#include <stdlib.h>\n"
    "#include <string.h>\n"
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#else\n"
    "PTC_INLINE int omp_get_thread_num(void) { return 0; }\n"
    "PTC_INLINE int omp_get_num_threads(void) { return 1; }\n"
    "PTC_INLINE int omp_get_max_threads(void) { return 1; }\n"
    "#endif\n"
    "#if defined(__FMA__) || defined(__aarch64__)\n"
    "#define PTC_HAVE_FMA 1\n"
    "#define PTC_FMA(a, b, c) __builtin_fma(a, b, c)\n"
    "#define PTC_FMAF(a, b, c) __builtin_fmaf(a, b, c)\n"
    "#else\n"
    "#define PTC_FMA(a, b, c) ((a) * (b) + (c))\n"
    "#define PTC_FMAF(a, b, c) ((a) * (b) + (c))\n"
    "#endif\n";

/* Kernel context and error reporting (layout = cpu_kernel_ctx in cpu.h). */
static const char* const prelude_ctx =
    "typedef struct ptc_kctx {\n"
    "  uint64_t seed;\n"
    "  int32_t error;\n"
    "  int32_t error_node;\n"
    "  int64_t error_value;\n"
    "  int64_t error_bound;\n"
    "} ptc_kctx;\n"
    "PTC_INLINE void ptc_fail(ptc_kctx* c, int32_t code, int32_t node, int64_t v, int64_t b) {\n"
    "  int32_t zero = 0;\n"
    "  if (__atomic_compare_exchange_n(&c->error, &zero, code, 0, __ATOMIC_ACQ_REL,\n"
    "                                  __ATOMIC_RELAXED)) {\n"
    "    c->error_node = node;\n"
    "    c->error_value = v;\n"
    "    c->error_bound = b;\n"
    "  }\n"
    "}\n"
    "PTC_INLINE int ptc_nthreads(void) {\n"
    "  int n = omp_get_max_threads();\n"
    "  return n < PTC_MAX_THREADS ? n : PTC_MAX_THREADS;\n"
    "}\n";

/* binary16 / bfloat16 storage <-> float. */
static const char* const prelude_half =
    "PTC_INLINE uint32_t ptc_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }\n"
    "PTC_INLINE float ptc_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }\n"
    "PTC_INLINE float ptc_f16_to_f32(uint16_t h) {\n"
    "  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;\n"
    "  if (e == 0x1f) return ptc_u2f(sign | 0x7f800000u | (m << 13));\n"
    "  if (e == 0) {\n"
    "    float v = (float)m * 5.9604644775390625e-8f;\n"
    "    return sign ? -v : v;\n"
    "  }\n"
    "  return ptc_u2f(sign | ((e + 112) << 23) | (m << 13));\n"
    "}\n"
    "PTC_INLINE uint16_t ptc_f32_to_f16(float f) {\n"
    "  uint32_t u = ptc_f2u(f), a = u & 0x7fffffffu;\n"
    "  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);\n"
    "  if (a >= 0x7f800000u)\n"
    "    return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0));\n"
    "  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);\n"
    "  if (a < 0x38800000u) {\n"
    "    float s = ptc_u2f(a) * 16777216.0f;\n"
    "    uint32_t m = (uint32_t)s;\n"
    "    float fr = s - (float)m;\n"
    "    if (fr > 0.5f || (fr == 0.5f && (m & 1))) m++;\n"
    "    return (uint16_t)(sign | m);\n"
    "  }\n"
    "  uint32_t r = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3ff), rest = a & 0x1fff;\n"
    "  if (rest > 0x1000 || (rest == 0x1000 && (r & 1))) r++;\n"
    "  return (uint16_t)(sign | r);\n"
    "}\n"
    "PTC_INLINE float ptc_bf16_to_f32(uint16_t h) { return ptc_u2f((uint32_t)h << 16); }\n"
    "PTC_INLINE uint16_t ptc_f32_to_bf16(float f) {\n"
    "  uint32_t u = ptc_f2u(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);\n"
    "  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);\n"
    "}\n"
    "PTC_INLINE float ptc_round_f16(float f) { return ptc_f16_to_f32(ptc_f32_to_f16(f)); }\n"
    "PTC_INLINE float ptc_round_bf16(float f) { return ptc_bf16_to_f32(ptc_f32_to_bf16(f)); }\n";

/* Integers: index helpers (floor semantics, never trap), value helpers
 * (wrap-around; division by zero reported through the context). */
static const char* const prelude_int =
    "PTC_INLINE int64_t ptc_ineg(int64_t a) { return (int64_t)(0u - (uint64_t)a); }\n"
    "PTC_INLINE int64_t ptc_iadd(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }\n"
    "PTC_INLINE int64_t ptc_isub(int64_t a, int64_t b) { return (int64_t)((uint64_t)a - (uint64_t)b); }\n"
    "PTC_INLINE int64_t ptc_imul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }\n"
    "PTC_INLINE int64_t ptc_iabs(int64_t a) { return a < 0 ? ptc_ineg(a) : a; }\n"
    "PTC_INLINE int64_t ptc_floordiv(int64_t a, int64_t b) {\n"
    "  if (b == 0) return 0;\n"
    "  if (b == -1) return ptc_ineg(a);\n"
    "  int64_t q = a / b;\n"
    "  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
    "}\n"
    "PTC_INLINE int64_t ptc_mod(int64_t a, int64_t b) {\n"
    "  if (b == 0 || b == -1) return 0;\n"
    "  int64_t m = a % b;\n"
    "  return (m != 0 && ((b < 0) != (m < 0))) ? m + b : m;\n"
    "}\n"
    "PTC_INLINE int64_t ptc_ceildiv(int64_t a, int64_t b) { return ptc_ineg(ptc_floordiv(ptc_ineg(a), b)); }\n"
    "PTC_INLINE int64_t ptc_imin(int64_t a, int64_t b) { return a < b ? a : b; }\n"
    "PTC_INLINE int64_t ptc_imax(int64_t a, int64_t b) { return a > b ? a : b; }\n"
    "PTC_INLINE int64_t ptc_idiv_chk(ptc_kctx* c, int32_t node, int64_t a, int64_t b) {\n"
    "  if (b == 0) { ptc_fail(c, PTC_KERR_DIV_ZERO, node, a, 0); return 0; }\n"
    "  return b == -1 ? ptc_ineg(a) : a / b;\n"
    "}\n"
    "PTC_INLINE int64_t ptc_floordiv_chk(ptc_kctx* c, int32_t node, int64_t a, int64_t b) {\n"
    "  if (b == 0) { ptc_fail(c, PTC_KERR_DIV_ZERO, node, a, 0); return 0; }\n"
    "  return ptc_floordiv(a, b);\n"
    "}\n"
    "PTC_INLINE int64_t ptc_mod_chk(ptc_kctx* c, int32_t node, int64_t a, int64_t b) {\n"
    "  if (b == 0) { ptc_fail(c, PTC_KERR_DIV_ZERO, node, a, 0); return 0; }\n"
    "  return ptc_mod(a, b);\n"
    "}\n"
    "PTC_INLINE int64_t ptc_ipow(int64_t a, int64_t b) {\n"
    "  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
    "  uint64_t r = 1, base = (uint64_t)a;\n"
    "  for (uint64_t e = (uint64_t)b; e; e >>= 1) {\n"
    "    if (e & 1) r *= base;\n"
    "    base *= base;\n"
    "  }\n"
    "  return (int64_t)r;\n"
    "}\n"
    "PTC_INLINE int64_t ptc_f2i(double v) {\n"
    "  if (v != v) return 0;\n"
    "  if (v >= 9.2233720368547758e18 || v <= -9.2233720368547758e18) return INT64_MIN;\n"
    "  return (int64_t)v;\n"
    "}\n";

/* exp, log and tanh for float written branch-free so `omp simd` loops
 * vectorise them (no libmvec without -ffast-math). exp: Cody-Waite
 * reduction x = n ln2 + r, degree-6 polynomial (Cephes expf), 2^n applied
 * in two halves so subnormal results and n = 128 stay exact; x is clamped
 * to [-104, 89], where the scaling underflows to 0 or overflows to inf by
 * itself, and NaN passes through the clamps and the arithmetic (n is read
 * from the bits of the rounding sum, never converted from a NaN).
 * Checked over every float of their domains against the double result
 * (max error: exp 1.03 ulp, log 0.83 ulp, tanh 1.33 ulp; tests/cpu_codegen
 * samples 2^20 inputs of each). Polynomials use FMA where the target has it
 * (PTC_FMAF). The double versions are libm's. */
static const char* const prelude_exp =
    "PTC_INLINE float ptc_exp_f32(float x) {\n"
    "  float xc = x > 89.0f ? 89.0f : x;\n"
    "  xc = xc < -104.0f ? -104.0f : xc;\n"
    "  float t = PTC_FMAF(xc, 1.44269504088896341f, 12582912.0f), n = t - 12582912.0f;\n"
    "  float r = PTC_FMAF(n, -0.693359375f, xc);\n"
    "  r = PTC_FMAF(n, 2.12194440e-4f, r);\n"
    "  float q = 1.9875691500e-4f;\n"
    "  q = PTC_FMAF(q, r, 1.3981999507e-3f);\n"
    "  q = PTC_FMAF(q, r, 8.3334519073e-3f);\n"
    "  q = PTC_FMAF(q, r, 4.1665795894e-2f);\n"
    "  q = PTC_FMAF(q, r, 1.6666665459e-1f);\n"
    "  q = PTC_FMAF(q, r, 5.0000001201e-1f);\n"
    "  q = PTC_FMAF(q * r, r, r) + 1.0f;\n"
    "  int32_t ni = (int32_t)(ptc_f2u(t) - 0x4b400000u), n1 = ni >> 1, n2 = ni - n1;\n"
    "  return q * ptc_u2f((uint32_t)(n1 + 127) << 23) * ptc_u2f((uint32_t)(n2 + 127) << 23);\n"
    "}\n"
    "PTC_INLINE double ptc_exp_f64(double x) { return exp(x); }\n"
    /* log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log(m) by the Cephes
     * logf polynomial in m - 1; subnormals are scaled first; x < 0 and NaN
     * give NaN, +-0 gives -inf, +inf gives +inf. Scale factors and special
     * cases use integer bit operations: GCC (-ftrapping-math) does not
     * if-convert float operations it has sunk into branches, which would
     * keep the loop from vectorising. */
    "PTC_INLINE float ptc_log_f32(float x) {\n"
    "  uint32_t xu = ptc_f2u(x), sub = xu < 0x00800000u;\n"
    "  uint32_t u = ptc_f2u(x * ptc_u2f(0x3f800000u + sub * (23u << 23)));\n"
    "  int32_t e = (int32_t)((u >> 23) & 0xff) - 126 - (int32_t)sub * 23;\n"
    "  float m = ptc_u2f((u & 0x007fffffu) | 0x3f000000u);\n"
    "  uint32_t lo = m < 0.707106781186547524f;\n"
    "  e -= (int32_t)lo;\n"
    "  m = m * ptc_u2f(0x3f800000u + lo * (1u << 23)) - 1.0f;\n"
    "  float z = m * m, fe = (float)e;\n"
    "  float y = 7.0376836292e-2f;\n"
    "  y = PTC_FMAF(y, m, -1.1514610310e-1f);\n"
    "  y = PTC_FMAF(y, m, 1.1676998740e-1f);\n"
    "  y = PTC_FMAF(y, m, -1.2420140846e-1f);\n"
    "  y = PTC_FMAF(y, m, 1.4249322787e-1f);\n"
    "  y = PTC_FMAF(y, m, -1.6668057665e-1f);\n"
    "  y = PTC_FMAF(y, m, 2.0000714765e-1f);\n"
    "  y = PTC_FMAF(y, m, -2.4999993993e-1f);\n"
    "  y = PTC_FMAF(y, m, 3.3333331174e-1f);\n"
    "  y = y * m * z;\n"
    "  y += -2.12194440e-4f * fe;\n"
    "  y += -0.5f * z;\n"
    "  uint32_t r = ptc_f2u((m + y) + 0.693359375f * fe), a = xu & 0x7fffffffu;\n"
    "  r = a == 0 ? 0xff800000u : r;\n"
    "  r = xu == 0x7f800000u ? xu : r;\n"
    "  r = ((xu > 0x80000000u) | (a > 0x7f800000u)) ? 0x7fc00000u : r;\n"
    "  return ptc_u2f(r);\n"
    "}\n"
    "PTC_INLINE double ptc_log_f64(double x) { return log(x); }\n"
    /* tanh: an odd polynomial below 0.625 (Cephes tanhf), else
     * 1 - 2 / (exp(2|x|) + 1) with the sign of x (+-1 beyond 9). */
    "PTC_INLINE float ptc_tanh_f32(float x) {\n"
    "  float a = x < 0.0f ? -x : x, z = x * x;\n"
    "  float p = -5.70498872745e-3f;\n"
    "  p = PTC_FMAF(p, z, 2.06390887954e-2f);\n"
    "  p = PTC_FMAF(p, z, -5.37397155531e-2f);\n"
    "  p = PTC_FMAF(p, z, 1.33314422036e-1f);\n"
    "  p = PTC_FMAF(p, z, -3.33332819422e-1f);\n"
    "  float small = PTC_FMAF(p * z, x, x);\n"
    "  float big = 1.0f - 2.0f / (ptc_exp_f32(a + a) + 1.0f);\n"
    "  big = a > 9.0f ? 1.0f : big;\n"
    "  big = x < 0.0f ? -big : big;\n"
    "  return a < 0.625f ? small : (x != x ? x : big);\n"
    "}\n"
    "PTC_INLINE double ptc_tanh_f64(double x) { return tanh(x); }\n";

/* sin and cos for float, branch-free so `omp simd` loops vectorise them,
 * valid for |x| <= PTC_TRIG_MAX: x = j pi/2 + r with pi/2 in three float
 * parts (Cody-Waite; with FMA the first step is exact for every j, and the
 * three parts hold pi/2 to 72 bits), then r in [-pi/4, pi/4] goes through
 * minimax polynomials (relative error <= 2^-28 over the interval; fitted by
 * Lawson's iteration on Chebyshev nodes) and the quadrant picks +-sin r or
 * +-cos r. Max error 1.5 ulp against the exact result (libm: 0.56; sampled
 * over every 101st float up to 1e6); +-0 and subnormals exact. Beyond
 * PTC_TRIG_MAX (and for inf/NaN) the result is meaningless: the kernel
 * tests ptc_trig_big on every argument of a block and recomputes the block
 * with libm when one is set (cpu_codegen.c, "fast trig"). Without FMA the
 * reduction runs in double (pi/2 in two parts, the first of 33 bits, so
 * j * part is exact for |j| < 2^20): same accuracy, slower. */
static const char* const prelude_trig =
    "#define PTC_TRIG_MAX 1.0e6f\n"
    "PTC_INLINE uint8_t ptc_trig_big(float x) { return (uint8_t)!(fabsf(x) <= PTC_TRIG_MAX); }\n"
    "PTC_INLINE float ptc_sincos_f32(float x, uint32_t quadrant) {\n"
    "#ifdef PTC_HAVE_FMA\n"
    "  float t = PTC_FMAF(x, 0.636619772f, 12582912.0f);\n"
    "  float j = t - 12582912.0f;\n"
    "  uint32_t q = ptc_f2u(t) + quadrant;\n"
    "  float r = PTC_FMAF(-j, 0x1.921fb6p+0f, x);\n"
    "  r = PTC_FMAF(-j, -0x1.777a5cp-25f, r);\n"
    "  r = PTC_FMAF(-j, -0x1.ee59dap-50f, r);\n"
    "#else\n"
    "  double xd = (double)x, t = xd * 0.63661977236758134308 + 6755399441055744.0;\n"
    "  double j = t - 6755399441055744.0;\n"
    "  uint64_t tu;\n"
    "  memcpy(&tu, &t, 8);\n"
    "  uint32_t q = (uint32_t)tu + quadrant;\n"
    "  float r = (float)((xd - j * 0x1.921fb544p0) - j * 0x1.0b4611a626331p-34);\n"
    "#endif\n"
    "  float z = r * r;\n"
    "  float s = PTC_FMAF(z, PTC_FMAF(z, -0x1.9909p-13f, 0x1.110694p-7f), -0x1.555544p-3f);\n"
    "  s = PTC_FMAF(r * z, s, r);\n"
    "  float c = PTC_FMAF(z, PTC_FMAF(z, 0x1.98ed6ap-16f, -0x1.6c0754p-10f), 0x1.55553cp-5f);\n"
    "  c = PTC_FMAF(z, PTC_FMAF(z, c, -0.5f), 1.0f);\n"
    "  float v = (q & 1) ? c : s;\n"
    "  return (q & 2) ? -v : v;\n"
    "}\n"
    "PTC_INLINE float ptc_sin_f32(float x) {\n"
    "  float v = ptc_sincos_f32(x, 0);\n"
    "  return x == 0.0f ? x : v;\n"
    "}\n"
    "PTC_INLINE float ptc_cos_f32(float x) { return ptc_sincos_f32(x, 1); }\n";

/* Floating helpers, instantiated for float (f32) and double (f64); sigmoid
 * uses exp(-|x|) on both sides so no intermediate overflows. */
static const char* const prelude_float =
    "#define PTC_FLOAT_HELPERS(T, S, F) \\\n"
    "  PTC_INLINE T ptc_max_##S(T a, T b) { return (a != a || b != b) ? a + b : a > b ? a : b; } \\\n"
    "  PTC_INLINE T ptc_min_##S(T a, T b) { return (a != a || b != b) ? a + b : a < b ? a : b; } \\\n"
    "  PTC_INLINE int ptc_beats_max_##S(T x, T best) { return best == best && (x != x || x > best); } \\\n"
    "  PTC_INLINE int ptc_beats_min_##S(T x, T best) { return best == best && (x != x || x < best); } \\\n"
    "  PTC_INLINE T ptc_sign_##S(T a) { return (T)((a > 0) - (a < 0)); } \\\n"
    "  PTC_INLINE T ptc_relu_##S(T a) { return a < 0 ? (T)0 : a; } \\\n"
    "  PTC_INLINE T ptc_sigmoid_##S(T a) { \\\n"
    "    T e = ptc_exp_##S(a < 0 ? a : -a); \\\n"
    "    return a >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e); \\\n"
    "  } \\\n"
    "  PTC_INLINE T ptc_mod_##S(T a, T b) { \\\n"
    "    T m = fmod##F(a, b); \\\n"
    "    if (m != 0 && ((b < 0) != (m < 0))) m += b; \\\n"
    "    return m; \\\n"
    "  } \\\n"
    "  PTC_INLINE T ptc_floordiv_##S(T a, T b) { \\\n"
    "    if (b == 0) return a / b; \\\n"
    "    T m = fmod##F(a, b), d = (a - m) / b; \\\n"
    "    if (m != 0 && ((b < 0) != (m < 0))) d -= 1; \\\n"
    "    if (d == 0) return copysign##F((T)0, a / b); \\\n"
    "    T fl = floor##F(d); \\\n"
    "    if (d - fl > (T)0.5) fl += 1; \\\n"
    "    return fl; \\\n"
    "  }\n"
    "PTC_FLOAT_HELPERS(float, f32, f)\n"
    "PTC_FLOAT_HELPERS(double, f64, )\n";

/* Philox4x32-10: key = seed, counter = (index lo, index hi, stream lo, stream hi). */
static const char* const prelude_rng =
    "PTC_INLINE void ptc_philox(uint64_t seed, uint64_t stream, uint64_t ctr, uint32_t o[4]) {\n"
    "  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);\n"
    "  uint32_t c0 = (uint32_t)ctr, c1 = (uint32_t)(ctr >> 32);\n"
    "  uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);\n"
    "  for (int r = 0; r < 10; r++) {\n"
    "    if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }\n"
    "    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;\n"
    "    uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;\n"
    "    c1 = (uint32_t)p1;\n"
    "    c3 = (uint32_t)p0;\n"
    "    c0 = n0;\n"
    "    c2 = n2;\n"
    "  }\n"
    "  o[0] = c0; o[1] = c1; o[2] = c2; o[3] = c3;\n"
    "}\n"
    "PTC_INLINE double ptc_unit(uint32_t a, uint32_t b) {\n"
    "  uint64_t bits = ((uint64_t)(a >> 5) << 26) | (b >> 6);\n"
    "  return (double)bits * (1.0 / 9007199254740992.0);\n"
    "}\n"
    "/* uniform [0,1) truncated to `scale` = 2^mantissa bits of the dtype */\n"
    "PTC_INLINE double ptc_rand(uint64_t seed, int64_t stream, int64_t i, double scale) {\n"
    "  uint32_t w[4];\n"
    "  ptc_philox(seed, (uint64_t)stream, (uint64_t)i, w);\n"
    "  return floor(ptc_unit(w[0], w[1]) * scale) / scale;\n"
    "}\n"
    "PTC_INLINE double ptc_randn(uint64_t seed, int64_t stream, int64_t i) {\n"
    "  uint32_t w[4];\n"
    "  ptc_philox(seed, (uint64_t)stream, (uint64_t)i, w);\n"
    "  double u1 = 1.0 - ptc_unit(w[0], w[1]), u2 = ptc_unit(w[2], w[3]);\n"
    "  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);\n"
    "}\n";

/* Non-temporal copies of a finished block or row to its buffer: the
 * destination is aligned to 64 bytes with plain stores, then every 64
 * bytes go out with streaming stores (no read-for-ownership of the
 * destination, no cache pollution), the tail plainly. Streaming stores
 * are weakly ordered: every thread issues ptc_sfence when done. */
static const char* const prelude_stream =
    "#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)\n"
    "#include <immintrin.h>\n"
    "#endif\n"
    "PTC_INLINE void ptc_stream_store(void* dst, const void* src, size_t bytes) {\n"
    "  char* d = (char*)dst;\n"
    "  const char* s = (const char*)src;\n"
    "#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)\n"
    "  size_t head = (64 - ((uintptr_t)d & 63)) & 63;\n"
    "  if (head > bytes) head = bytes;\n"
    "  memcpy(d, s, head);\n"
    "  d += head, s += head, bytes -= head;\n"
    "  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {\n"
    "#if defined(__AVX512F__)\n"
    "    _mm512_stream_si512((void*)d, _mm512_loadu_si512((const void*)s));\n"
    "#elif defined(__AVX__)\n"
    "    _mm256_stream_si256((__m256i*)d, _mm256_loadu_si256((const __m256i*)s));\n"
    "    _mm256_stream_si256((__m256i*)(d + 32), _mm256_loadu_si256((const __m256i*)(s + 32)));\n"
    "#else\n"
    "    for (int k = 0; k < 64; k += 16)\n"
    "      _mm_stream_si128((__m128i*)(d + k), _mm_loadu_si128((const __m128i*)(s + k)));\n"
    "#endif\n"
    "  }\n"
    "#endif\n"
    "  memcpy(d, s, bytes);\n"
    "}\n"
    "PTC_INLINE void ptc_sfence(void) {\n"
    "#if defined(__AVX512F__) || defined(__AVX__) || defined(__SSE2__)\n"
    "  _mm_sfence();\n"
    "#endif\n"
    "}\n";

void cg_prelude_stream(ptc_strbuf* sb) { ptc_sb_append(sb, prelude_stream); }

void cg_prelude(ptc_strbuf* sb) {
  ptc_sb_printf(sb, "/* libptc generated kernel (%s, ABI %d) */\n", PTC_CPU_CODEGEN_VERSION,
                PTC_CPU_KERNEL_ABI);
  ptc_sb_append(sb, prelude_head);
  ptc_sb_printf(sb, "#define PTC_PAR_MIN_WORK %d\n#define PTC_MAX_THREADS %d\n",
                CPU_CG_PAR_MIN_WORK, CPU_CG_MAX_THREADS);
  ptc_sb_printf(sb, "#define PTC_KERR_INDIRECT %d\n#define PTC_KERR_DIV_ZERO %d\n#define PTC_KERR_EMPTY %d\n"
                "#define PTC_KERR_NOMEM %d\n",
                CPU_KERR_INDIRECT, CPU_KERR_DIV_ZERO, CPU_KERR_EMPTY, CPU_KERR_NOMEM);
  ptc_sb_append(sb, prelude_ctx);
  ptc_sb_append(sb, prelude_half);
  ptc_sb_append(sb, prelude_int);
  ptc_sb_append(sb, prelude_exp);
  ptc_sb_append(sb, prelude_trig);
  ptc_sb_append(sb, prelude_float);
  ptc_sb_append(sb, prelude_rng);
}
