/* ir_scalar.c - scalar conversions between dtypes with ATen semantics (used
 * by the lowering to fold Python scalars into constants and by the IR
 * interpreter for IR_TO_DTYPE, loads and stores), and names for dumps. */
#include "ir_internal.h"

#include <math.h>
#include <string.h>

double ir_round_float(double v, int32_t dtype) {
  switch (dtype) {
    case PTC_F32: return (double)(float)v;
    case PTC_F16: return ptc_f16_to_f32(ptc_f32_to_f16((float)v));
    case PTC_BF16: return ptc_bf16_to_f32(ptc_f32_to_bf16((float)v));
    default: return v;
  }
}

int64_t ir_wrap_int(int64_t v, int32_t dtype) {
  uint64_t u = (uint64_t)v;
  switch (dtype) {
    case PTC_I8: return (int8_t)(uint8_t)u;
    case PTC_I16: return (int16_t)(uint16_t)u;
    case PTC_I32: return (int32_t)(uint32_t)u;
    case PTC_U8: return (uint8_t)u;
    case PTC_BOOL: return v != 0;
    default: return v;
  }
}

/* float -> int64 as the x86 conversion ATen relies on (NaN -> 0 here, as
 * the ref backend defines it; out of range -> INT64_MIN). */
static int64_t float_to_i64(double v) {
  if (isnan(v)) return 0;
  if (v >= 9.2233720368547758e18 || v <= -9.2233720368547758e18) return INT64_MIN;
  return (int64_t)v;
}

ir_scalar ir_scalar_convert(ir_scalar v, int32_t from, int32_t to) {
  ir_scalar r = {0.0, 0};
  bool ff = ptc_dtype_is_float(from), tf = ptc_dtype_is_float(to);
  if (ff && tf)
    r.f = ir_round_float(v.f, to);
  else if (ff && to == PTC_BOOL)
    r.i = v.f != 0;
  else if (ff)
    r.i = ir_wrap_int(float_to_i64(v.f), to);
  else if (tf)
    r.f = ir_round_float((double)v.i, to);
  else
    r.i = ir_wrap_int(v.i, to);
  return r;
}

ir_scalar ir_scalar_of_f(double v, int32_t dtype) {
  ir_scalar s = {v, 0};
  return ir_scalar_convert(s, PTC_F64, dtype);
}

ir_scalar ir_scalar_of_i(int64_t v, int32_t dtype) {
  ir_scalar s = {0.0, v};
  return ir_scalar_convert(s, PTC_I64, dtype);
}

ir_scalar ir_scalar_load(const void* p, int32_t dt, int64_t e) {
  ir_scalar s = {0.0, 0};
  switch (dt) {
    case PTC_F32: s.f = ((const float*)p)[e]; break;
    case PTC_F64: s.f = ((const double*)p)[e]; break;
    case PTC_F16: s.f = ptc_f16_to_f32(((const uint16_t*)p)[e]); break;
    case PTC_BF16: s.f = ptc_bf16_to_f32(((const uint16_t*)p)[e]); break;
    case PTC_I8: s.i = ((const int8_t*)p)[e]; break;
    case PTC_I16: s.i = ((const int16_t*)p)[e]; break;
    case PTC_I32: s.i = ((const int32_t*)p)[e]; break;
    case PTC_I64: s.i = ((const int64_t*)p)[e]; break;
    case PTC_U8: s.i = ((const uint8_t*)p)[e]; break;
    case PTC_BOOL: s.i = ((const uint8_t*)p)[e] != 0; break;
    default: break;
  }
  return s;
}

void ir_scalar_store(void* p, int32_t dt, int64_t e, ir_scalar v) {
  switch (dt) {
    case PTC_F32: ((float*)p)[e] = (float)v.f; break;
    case PTC_F64: ((double*)p)[e] = v.f; break;
    case PTC_F16: ((uint16_t*)p)[e] = ptc_f32_to_f16((float)v.f); break;
    case PTC_BF16: ((uint16_t*)p)[e] = ptc_f32_to_bf16((float)v.f); break;
    case PTC_I8: ((int8_t*)p)[e] = (int8_t)ir_wrap_int(v.i, dt); break;
    case PTC_I16: ((int16_t*)p)[e] = (int16_t)ir_wrap_int(v.i, dt); break;
    case PTC_I32: ((int32_t*)p)[e] = (int32_t)ir_wrap_int(v.i, dt); break;
    case PTC_I64: ((int64_t*)p)[e] = v.i; break;
    case PTC_U8: ((uint8_t*)p)[e] = (uint8_t)ir_wrap_int(v.i, dt); break;
    case PTC_BOOL: ((uint8_t*)p)[e] = v.i != 0; break;
    default: break;
  }
}

/* ---- names ---------------------------------------------------------------------------- */

const char* ir_rtype_name(ir_rtype rt) {
  static const char* const n[] = {"sum", "prod", "max", "min", "argmax", "argmin", "any", "all"};
  return (unsigned)rt < sizeof n / sizeof n[0] ? n[rt] : "?";
}

const char* ir_activation_name(ir_activation a) {
  static const char* const n[] = {"none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh"};
  return (unsigned)a < sizeof n / sizeof n[0] ? n[a] : "?";
}

const char* ir_extern_kind_name(ir_extern_kind k) {
  static const char* const n[] = {"matmul", "conv", "fallback", "custom"};
  return (unsigned)k < sizeof n / sizeof n[0] ? n[k] : "?";
}
