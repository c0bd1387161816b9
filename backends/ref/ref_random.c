/* ref_random.c - the counter-based RNG of the reference backend:
 * Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2,
 * 3", SC'11). A (seed, stream, counter) triple maps to four 32-bit words with
 * no state, so element i of a random op is reproducible on any backend.
 *
 * Layout: key = seed (low word first); counter words = element index (low,
 * high), then stream (low, high).
 */
#include "ref.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */
#define PHILOX_ROUNDS 10

static void philox_round(uint32_t c[4], const uint32_t k[2]) {
  uint64_t p0 = (uint64_t)PHILOX_M0 * c[0];
  uint64_t p1 = (uint64_t)PHILOX_M1 * c[2];
  uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
  uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
  uint32_t n0 = hi1 ^ c[1] ^ k[0], n2 = hi0 ^ c[3] ^ k[1];
  c[0] = n0;
  c[1] = lo1;
  c[2] = n2;
  c[3] = lo0;
}

void ref_philox(uint64_t seed, uint64_t stream, uint64_t counter, uint32_t out[4]) {
  uint32_t k[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), (uint32_t)stream,
                   (uint32_t)(stream >> 32)};
  for (int r = 0; r < PHILOX_ROUNDS; r++) {
    if (r > 0) {
      k[0] += PHILOX_W0;
      k[1] += PHILOX_W1;
    }
    philox_round(c, k);
  }
  for (int i = 0; i < 4; i++) out[i] = c[i];
}

/* 53 random bits from two words -> [0, 1). */
static double to_unit(uint32_t a, uint32_t b) {
  uint64_t bits = ((uint64_t)(a >> 5) << 26) | (b >> 6);
  return (double)bits * (1.0 / 9007199254740992.0);
}

double ref_uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  uint32_t w[4];
  ref_philox(seed, stream, i, w);
  return to_unit(w[0], w[1]);
}

double ref_normal(uint64_t seed, uint64_t stream, uint64_t i) {
  uint32_t w[4];
  ref_philox(seed, stream, i, w);
  double u1 = 1.0 - to_unit(w[0], w[1]); /* (0, 1]: log is finite */
  double u2 = to_unit(w[2], w[3]);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}
