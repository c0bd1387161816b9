/* half.c - IEEE binary16 and bfloat16 conversions with round-to-nearest-even. */
#include "core.h"

#include <string.h>

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

float ptc_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) return u2f(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return u2f(sign);
    /* subnormal: value = man * 2^-24 */
    float v = (float)man * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t ptc_f32_to_f16(float f) {
  uint32_t u = f2u(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) /* inf or nan */
    return (uint16_t)(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 | ((abs >> 13) & 0x3ff) : 0));
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
  if (abs < 0x38800000u) {                                  /* below 2^-14: subnormal/zero */
    /* value / 2^-24, rounded to nearest even */
    float a = u2f(abs);
    float scaled = a * 16777216.0f; /* exact: power of two */
    uint32_t m = (uint32_t)scaled;
    float frac = scaled - (float)m;
    if (frac > 0.5f || (frac == 0.5f && (m & 1))) m++;
    return (uint16_t)(sign | m);
  }
  uint32_t exp = ((abs >> 23) - 112) << 10;
  uint32_t man = (abs >> 13) & 0x3ff;
  uint32_t rest = abs & 0x1fff;
  uint32_t r = exp | man;
  if (rest > 0x1000 || (rest == 0x1000 && (man & 1))) r++;
  return (uint16_t)(sign | r);
}

float ptc_bf16_to_f32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t ptc_f32_to_bf16(float f) {
  uint32_t u = f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((u >> 16) & 1);
  return (uint16_t)((u + rounding) >> 16);
}
