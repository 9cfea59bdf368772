/* gemm_bits.h: float-bit helpers of the exact GEMM paths (the exact and tc
 * kernels, the reference, MMA): splitting floats and doubles into integer
 * significands, 128-bit sums.  Inline, no state; below every GEMM file. */
#ifndef EXMY_GEMM_BITS_H
#define EXMY_GEMM_BITS_H
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef unsigned __int128 u128;
typedef __int128 i128;

/* Nominal decomposition: |x| = m * 2^(e - mbits), e = max(floor(log2|x|), emin);
 * zero: m = 0, e = -126 (MMA-Sim). */
static inline void exmy__gemm_nominal(double x, int emin, int mbits, uint64_t *m, int *e) {
  if (x == 0) {
    *m = 0;
    *e = -126;
    return;
  }
  int ex;
  frexp(fabs(x), &ex);
  ex -= 1;
  if (ex < emin) ex = emin;
  *e = ex;
  *m = (uint64_t)ldexp(fabs(x), mbits - ex);
}

/* |x| of a finite float as m * 2^q, m < 2^24 (0: m = 0, q = 0). */
static inline uint64_t exmy__float_parts(float x, int *q) {
  int e;
  const double f = frexp(fabs((double)x), &e);
  *q = x == 0 ? 0 : e - 24;
  return (uint64_t)ldexp(f, 24);
}

/* |x| = mant * 2^ex with a 53-bit integer mant (x finite, nonzero). */
static inline uint64_t exmy__split_double(double x, int *ex) {
  int e;
  const double f = frexp(fabs(x), &e);
  *ex = e - 53;
  return (uint64_t)ldexp(f, 53);
}

/* Bit length of x (0 for 0). */
static inline int exmy__bitlen128(u128 x) {
  const uint64_t hi = (uint64_t)(x >> 64);
  if (hi) return 128 - __builtin_clzll(hi);
  const uint64_t lo = (uint64_t)x;
  return lo ? 64 - __builtin_clzll(lo) : 0;
}

static inline float exmy__f32_from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}
#endif
