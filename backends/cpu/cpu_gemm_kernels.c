/* cpu_gemm_kernels.c - the GEMM kernel tables: one per element type (f32,
 * f64) and instruction set (generic 16-byte vectors; AVX2+FMA and AVX-512F
 * on x86-64, compiled with target attributes so the library itself needs no
 * -march flag), instantiated from cpu_gemm_type.inc (packing),
 * cpu_gemm_ukr.inc (kernels, epilogue) and cpu_gemm_vmath.inc (f32 vector
 * activations); the f64 activations (libm); and the run-time choice of the
 * best set the machine supports. */
#include <math.h>
#include <string.h>

#include "cpu_gemm_internal.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CPU_GEMM_X86 1
#include <immintrin.h>
#else
#define CPU_GEMM_X86 0
#endif

#include "../../lib/ir/ir.h"

/* ---- per-type pieces ------------------------------------------------------------ */
#define GT float
#define GS(x) x##_f32
#include "cpu_gemm_type.inc"
#undef GT
#undef GS

#define GT double
#define GS(x) x##_f64
#include "cpu_gemm_type.inc"
#undef GT
#undef GS

/* f64 activations: libm per element, the formulas of backends/ref (f32
 * ones are vectorised: cpu_gemm_vmath.inc). */
static double act_relu_f64(double x) { return x < 0 ? 0.0 : x; } /* NaN stays NaN */
static double act_gelu_f64(double x) { return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440)); }
static double act_gelu_tanh_f64(double x) {
  return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
static double act_silu_f64(double x) { return x / (1.0 + exp(-x)); }
static double act_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }
/* Indexed by ir_activation; index 0 (none) is never called. */
static double (*const act_table_f64[])(double) = {
    NULL, act_relu_f64, act_gelu_f64, act_gelu_tanh_f64, act_silu_f64, act_sigmoid_f64, tanh};

/* ---- generic ISA: GCC vector extensions, 16 bytes (SSE2 / NEON / scalar) ------- */
typedef float gen_v4f __attribute__((vector_size(16)));
typedef double gen_v2d __attribute__((vector_size(16)));
#define GEN_LOADER(V, T, sfx)                                         \
  static inline V gen_ld_##sfx(const T* p) {                          \
    V v;                                                              \
    memcpy(&v, p, sizeof v);                                          \
    return v;                                                         \
  }                                                                   \
  static inline void gen_st_##sfx(T* p, V v) { memcpy(p, &v, sizeof v); }
GEN_LOADER(gen_v4f, float, f32)
GEN_LOADER(gen_v2d, double, f64)

#define UATTR
#define UZERO() ((UV){0})
#define ULOAD(p) GS(gen_ld)(p)
#define ULOADU(p) GS(gen_ld)(p)
#define USTORE(p, v) GS(gen_st)(p, v)
#define USTOREU(p, v) GS(gen_st)(p, v)
#define UBCAST(p) (UZERO() + *(p))
#define UFMA(a, b, c) ((a) * (b) + (c))

#define GT float
#define GS(x) x##_f32
#define US(x) x##_f32_generic
#define UVACT
#define UNAME "f32-generic"
#define UV gen_v4f
#define UVL 4
#define UMR 6
#define UNB 2
#define UMC 120
#define UKC 512
#define UNC 3072
#include "cpu_gemm_ukr.inc"
#undef UVACT
#undef GT
#undef GS
#undef US
#undef UNAME
#undef UV
#undef UVL
#undef UMR
#undef UNB
#undef UMC
#undef UKC
#undef UNC

#define GT double
#define GS(x) x##_f64
#define US(x) x##_f64_generic
#define UNAME "f64-generic"
#define UV gen_v2d
#define UVL 2
#define UMR 6
#define UNB 2
#define UMC 120
#define UKC 256
#define UNC 2048
#include "cpu_gemm_ukr.inc"
#undef GT
#undef GS
#undef US
#undef UNAME
#undef UV
#undef UVL
#undef UMR
#undef UNB
#undef UMC
#undef UKC
#undef UNC

#undef UATTR
#undef UZERO
#undef ULOAD
#undef ULOADU
#undef USTORE
#undef USTOREU
#undef UBCAST
#undef UFMA

#if CPU_GEMM_X86
/* ---- AVX2 + FMA ------------------------------------------------------------------ */
#define UATTR __attribute__((target("avx2,fma")))

#define GT float
#define GS(x) x##_f32
#define US(x) x##_f32_avx2
#define UVACT
#define UNAME "f32-avx2"
#define UV __m256
#define UVL 8
#define UMR 6
#define UNB 2
#define UMC 120
#define UKC 512
#define UNC 3072
#define UZERO() _mm256_setzero_ps()
#define ULOAD(p) _mm256_load_ps(p)
#define ULOADU(p) _mm256_loadu_ps(p)
#define USTORE(p, v) _mm256_store_ps(p, v)
#define USTOREU(p, v) _mm256_storeu_ps(p, v)
#define UBCAST(p) _mm256_broadcast_ss(p)
#define UFMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#include "cpu_gemm_ukr.inc"
#undef UVACT
#undef GT
#undef GS
#undef US
#undef UNAME
#undef UV
#undef UVL
#undef UMR
#undef UNB
#undef UMC
#undef UKC
#undef UNC
#undef UZERO
#undef ULOAD
#undef ULOADU
#undef USTORE
#undef USTOREU
#undef UBCAST
#undef UFMA

#define GT double
#define GS(x) x##_f64
#define US(x) x##_f64_avx2
#define UNAME "f64-avx2"
#define UV __m256d
#define UVL 4
#define UMR 6
#define UNB 2
#define UMC 120
#define UKC 256
#define UNC 2048
#define UZERO() _mm256_setzero_pd()
#define ULOAD(p) _mm256_load_pd(p)
#define ULOADU(p) _mm256_loadu_pd(p)
#define USTORE(p, v) _mm256_store_pd(p, v)
#define USTOREU(p, v) _mm256_storeu_pd(p, v)
#define UBCAST(p) _mm256_broadcast_sd(p)
#define UFMA(a, b, c) _mm256_fmadd_pd(a, b, c)
#include "cpu_gemm_ukr.inc"
#undef GT
#undef GS
#undef US
#undef UNAME
#undef UV
#undef UVL
#undef UMR
#undef UNB
#undef UMC
#undef UKC
#undef UNC
#undef UZERO
#undef ULOAD
#undef ULOADU
#undef USTORE
#undef USTOREU
#undef UBCAST
#undef UFMA
#undef UATTR

/* ---- AVX-512F ----------------------------------------------------------------------- */
#define UATTR __attribute__((target("avx512f")))

#define GT float
#define GS(x) x##_f32
#define US(x) x##_f32_avx512
#define UVACT
#define UNAME "f32-avx512"
#define UV __m512
#define UVL 16
#define UMR 12
#define UNB 2
#define UMC 240
#define UKC 512
#define UNC 3072
#define UZERO() _mm512_setzero_ps()
#define ULOAD(p) _mm512_load_ps(p)
#define ULOADU(p) _mm512_loadu_ps(p)
#define USTORE(p, v) _mm512_store_ps(p, v)
#define USTOREU(p, v) _mm512_storeu_ps(p, v)
#define UBCAST(p) _mm512_set1_ps(*(p))
#define UFMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#include "cpu_gemm_ukr.inc"
#undef UVACT
#undef GT
#undef GS
#undef US
#undef UNAME
#undef UV
#undef UVL
#undef UMR
#undef UNB
#undef UMC
#undef UKC
#undef UNC
#undef UZERO
#undef ULOAD
#undef ULOADU
#undef USTORE
#undef USTOREU
#undef UBCAST
#undef UFMA

#define GT double
#define GS(x) x##_f64
#define US(x) x##_f64_avx512
#define UNAME "f64-avx512"
#define UV __m512d
#define UVL 8
#define UMR 12
#define UNB 2
#define UMC 240
#define UKC 256
#define UNC 2048
#define UZERO() _mm512_setzero_pd()
#define ULOAD(p) _mm512_load_pd(p)
#define ULOADU(p) _mm512_loadu_pd(p)
#define USTORE(p, v) _mm512_store_pd(p, v)
#define USTOREU(p, v) _mm512_storeu_pd(p, v)
#define UBCAST(p) _mm512_set1_pd(*(p))
#define UFMA(a, b, c) _mm512_fmadd_pd(a, b, c)
#include "cpu_gemm_ukr.inc"
#undef GT
#undef GS
#undef US
#undef UNAME
#undef UV
#undef UVL
#undef UMR
#undef UNB
#undef UMC
#undef UKC
#undef UNC
#undef UZERO
#undef ULOAD
#undef ULOADU
#undef USTORE
#undef USTOREU
#undef UBCAST
#undef UFMA
#undef UATTR
#endif /* CPU_GEMM_X86 */

/* ---- selection ---------------------------------------------------------------------- */
/* [type: 0 f32, 1 f64][isa]; NULL where not compiled in. */
static const cpu_gemm_kernel* const kernel_table[2][CPU_GEMM_ISA_COUNT] = {
#if CPU_GEMM_X86
    {&kernel_f32_generic, &kernel_f32_avx2, &kernel_f32_avx512},
    {&kernel_f64_generic, &kernel_f64_avx2, &kernel_f64_avx512},
#else
    {&kernel_f32_generic, NULL, NULL},
    {&kernel_f64_generic, NULL, NULL},
#endif
};

static bool isa_runs(cpu_gemm_isa isa) {
  switch (isa) {
    case CPU_GEMM_ISA_GENERIC:
      return true;
#if CPU_GEMM_X86
    case CPU_GEMM_ISA_AVX2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case CPU_GEMM_ISA_AVX512:
      return __builtin_cpu_supports("avx512f");
#endif
    default:
      return false;
  }
}

cpu_gemm_isa cpu_gemm_best_isa(void) {
  for (int isa = CPU_GEMM_ISA_COUNT - 1; isa > 0; isa--)
    if (isa_runs((cpu_gemm_isa)isa)) return (cpu_gemm_isa)isa;
  return CPU_GEMM_ISA_GENERIC;
}

const cpu_gemm_kernel* cpu_gemm_kernel_for(size_t esize, cpu_gemm_isa isa) {
  if ((esize != 4 && esize != 8) || isa < 0 || isa >= CPU_GEMM_ISA_COUNT) return NULL;
  if (!isa_runs(isa)) return NULL;
  return kernel_table[esize == 8][isa];
}
