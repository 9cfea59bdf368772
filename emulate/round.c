/* round.c: the library's entry points to the rounding core
 * (emulate/round_core.h): the round-and-pack routine every conversion
 * funnels into, and the scalar conversions from double, float, bf16 and f16
 * (the reference path).  Semantics: docs/formats.md. */
#include "exmy.h"
#include "emulate/round_core.h"

#include <math.h>
#include <string.h>

uint64_t exmy_round_pack(const exmy_format *f, const exmy_rounding *r, int neg,
                         uint64_t sig, int exp2, uint64_t index, unsigned *flags) {
  return exmy__round_pack(f, r, neg, sig, exp2, index, flags);
}

/* ---- scalar conversions ------------------------------------------------ */

uint64_t exmy_from_f64(const exmy_format *f, const exmy_rounding *r, double x, uint64_t index, unsigned *flags) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return exmy__from_f64(f, r, b, index, flags);
}

uint64_t exmy_from_f32(const exmy_format *f, const exmy_rounding *r, float x, uint64_t index, unsigned *flags) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return exmy__from_f32(f, r, b, index, flags);
}

uint64_t exmy_from_bf16(const exmy_format *f, const exmy_rounding *r, uint16_t bits, uint64_t index, unsigned *flags) {
  return exmy__from_bf16(f, r, bits, index, flags);
}

uint64_t exmy_from_f16(const exmy_format *f, const exmy_rounding *r, uint16_t bits, uint64_t index, unsigned *flags) {
  return exmy__from_f16(f, r, bits, index, flags);
}

double exmy_bf16_to_f64(uint16_t bits) {
  uint32_t b = (uint32_t)bits << 16;
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}

double exmy_f16_to_f64(uint16_t bits) {
  const int be = (bits >> 10) & 31, mant = bits & 1023;
  double v;
  if (be == 31) v = mant ? NAN : INFINITY;
  else if (be == 0) v = ldexp(mant, -24);
  else v = ldexp(mant | 1024, be - 25);
  return (bits & 0x8000) ? -v : v;
}
