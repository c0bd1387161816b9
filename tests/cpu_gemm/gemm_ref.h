/* gemm_ref.h - helpers shared by the GEMM and convolution tests: a
 * deterministic random generator, the activations in double (the formulas
 * of backends/ref), and the error bound of a K-term dot product. */
#ifndef PTC_TESTS_CPU_GEMM_REF_H
#define PTC_TESTS_CPU_GEMM_REF_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "../../lib/ir/ir.h"

/* xorshift64*: uniform in [-1, 1). */
static inline double rnd_next(uint64_t* s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  uint64_t v = *s * 2685821657736338717ull;
  return (double)(v >> 11) / (double)(1ull << 52) - 1.0;
}

static inline double ref_act(double x, int32_t act) {
  switch (act) {
    case IR_ACT_RELU:
      return x < 0 ? 0 : x;
    case IR_ACT_GELU:
      return 0.5 * x * (1.0 + erf(x * 0.70710678118654752440));
    case IR_ACT_GELU_TANH:
      return 0.5 * x * (1.0 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
    case IR_ACT_SILU:
      return x / (1.0 + exp(-x));
    case IR_ACT_SIGMOID:
      return 1.0 / (1.0 + exp(-x));
    case IR_ACT_TANH:
      return tanh(x);
    default:
      return x;
  }
}

static const char* const act_names[] = {"none", "relu", "gelu", "gelu_tanh",
                                        "silu", "sigmoid", "tanh"};
#define N_ACTS 7

/* Allowed |got - ref| for a value computed from k products whose absolute
 * values sum to `mag` (plus the bias term), in a type with epsilon eps: the
 * classic gamma_k bound, times the activations' largest slope (~1.13), plus
 * a few ulps of the result for the activation's own rounding. */
static inline double ref_tol(double mag, double ref, int64_t k, double eps) {
  return 1.25 * (double)(k + 2) * eps * mag + 8 * eps * fabs(ref) + 1e-30;
}

#endif
