/* round.c: the one round-and-pack routine every conversion funnels into,
 * and the scalar conversions from double, float, bf16 and f16 (the
 * reference path).  Semantics: docs/formats.md. */
#include "exmy.h"
#include "formats/internal.h"

#include <math.h>
#include <string.h>

/* Code of a zero of the given sign: +0 where the format has no -0, and the
 * smallest value for zero-less formats (callers flag that). */
static uint64_t zero_code(const exmy_format *f, int neg) {
  if (neg && f->is_signed && f->nan != EXMY_NAN_NEGZERO) return f->sign_mask;
  return 0;
}

static uint64_t signed_code(const exmy_format *f, int neg, uint64_t mag) {
  return (neg && f->is_signed) ? (f->sign_mask | mag) : mag;
}

/* NaN result (invalid operation); a format without NaN gives +0 (code 0). */
static uint64_t nan_result(const exmy_format *f, int neg, unsigned *fl) {
  *fl |= EXMY_FLAG_INVALID;
  if (f->nan == EXMY_NAN_NONE) return 0;
  if (f->nan == EXMY_NAN_NEGZERO) return f->nan_code;
  return signed_code(f, neg, f->nan_code);
}

/* Infinite value of the given sign: inf where the format has one, else NaN
 * where it has one, else the largest finite value. */
static uint64_t inf_like(const exmy_format *f, int neg) {
  if (f->inf != EXMY_INF_NONE) return signed_code(f, neg, f->inf_mag);
  if (f->nan == EXMY_NAN_NEGZERO) return f->nan_code;
  if (f->nan != EXMY_NAN_NONE) return signed_code(f, neg, f->nan_code);
  return signed_code(f, neg, f->max_mag);
}

/* Does an overflow in this mode and direction go to the largest finite value
 * rather than to infinity? */
static int overflow_to_max(const exmy_rounding *r, int neg) {
  if (r->sat != EXMY_SAT_NONE) return 1;
  switch (r->mode) {
  case EXMY_RTZ: case EXMY_RTO: return 1;
  case EXMY_RUP: return neg;
  case EXMY_RDN: return !neg;
  default: return 0;
  }
}

uint64_t exmy_round_overflow(const exmy_format *f, const exmy_rounding *r, int neg, unsigned *fl) {
  *fl |= EXMY_FLAG_OVERFLOW | EXMY_FLAG_INEXACT;
  if (overflow_to_max(r, neg)) return signed_code(f, neg, f->max_mag);
  return inf_like(f, neg);
}

uint64_t exmy_round_inf(const exmy_format *f, const exmy_rounding *r, int neg, unsigned *fl) {
  if (neg && !f->is_signed) return nan_result(f, neg, fl);
  if (r->sat == EXMY_SAT_FINITE || (r->sat == EXMY_SAT_PROPAGATE && f->inf == EXMY_INF_NONE && f->nan == EXMY_NAN_NONE)) {
    *fl |= EXMY_FLAG_INEXACT;
    return signed_code(f, neg, f->max_mag);
  }
  if (f->inf == EXMY_INF_NONE && f->nan == EXMY_NAN_NONE) *fl |= EXMY_FLAG_INEXACT;
  return inf_like(f, neg); /* inf, else NaN (no flag: the value is not rounded), else max */
}

uint64_t exmy_round_nan(const exmy_format *f, int neg, unsigned *fl) {
  return nan_result(f, neg, fl);
}

static inline int clz64(uint64_t x) { return __builtin_clzll(x); }

uint64_t exmy_round_pack(const exmy_format *f, const exmy_rounding *r, int neg,
                         uint64_t sig, int exp2, uint64_t index, unsigned *flags) {
  unsigned fl = 0;
  uint64_t code;
  const int M = f->mbits;
  if (sig == 0) {
    if (!f->has_zero) code = nan_result(f, neg, &fl);
    else code = zero_code(f, neg);
    goto done;
  }
  if (neg && !f->is_signed) { code = nan_result(f, neg, &fl); goto done; }
  {
    const int e = exp2 + 63 - clz64(sig); /* exponent of the leading bit */
    const int tiny = e < f->emin;
    int te = (tiny && f->has_zero) ? f->emin : e; /* exponent of result's leading bit position */
    const int q = te - M;                        /* exponent of the result's last bit */
    const int d = q - exp2;                      /* bits to drop */
    uint64_t kept, F;                            /* kept bits, top 64 bits of the dropped fraction */
    int sticky = 0;                              /* anything below F */
    if (d <= 0) { kept = sig << -d; F = 0; }
    else if (d < 64) { kept = sig >> d; F = sig << (64 - d); }
    else if (d == 64) { kept = 0; F = sig; }
    else if (d < 128) { kept = 0; F = sig >> (d - 64); sticky = (sig & ((((uint64_t)1) << (d - 64)) - 1)) != 0; }
    else { kept = 0; F = 0; sticky = 1; }
    const int inexact = F != 0 || sticky;
    const uint64_t half = (uint64_t)1 << 63;
    uint64_t inc = 0;
    switch (r->mode) {
    case EXMY_RNE: inc = F > half || (F == half && (sticky || (kept & 1))); break;
    case EXMY_RNA: inc = F >= half; break;
    case EXMY_RTZ: break;
    case EXMY_RUP: inc = inexact && !neg; break;
    case EXMY_RDN: inc = inexact && neg; break;
    case EXMY_RTO: kept |= (uint64_t)inexact; break;
    case EXMY_SR: {
      int R = (r->sr_bits <= 0 || r->sr_bits > 64) ? 64 : r->sr_bits;
      uint64_t u = exmy_random64(r->seed, r->stream, index);
      if (R == 64) inc = F + u < F; /* carry out of 64 bits */
      else inc = ((F >> (64 - R)) + (u >> (64 - R))) >> R;
      break;
    }
    }
    uint64_t rs = kept + inc;
    if (rs >> (M + 1)) { rs >>= 1; te++; } /* carry into the next binade */
    if (inexact) fl |= EXMY_FLAG_INEXACT;
    if (tiny && inexact) fl |= EXMY_FLAG_UNDERFLOW;
    if (!f->has_zero && e < f->emin) {
      /* No zero: everything below the smallest value becomes it. */
      fl |= EXMY_FLAG_INEXACT | EXMY_FLAG_UNDERFLOW;
      code = signed_code(f, neg, 0);
      goto done;
    }
    if (rs == 0) { code = zero_code(f, neg); goto done; }
    /* Encode with unbounded exponent, then compare with the largest finite
     * magnitude (encoding is monotonic); a huge te overflows before shifting. */
    if (te - f->emin > (int)(f->max_mag >> M) + 1) {
      code = exmy_round_overflow(f, r, neg, &fl);
      if (tiny) fl |= EXMY_FLAG_UNDERFLOW;
      goto done;
    }
    uint64_t mag = ((uint64_t)(te - f->emin) << M) + rs - (f->has_zero ? 0 : ((uint64_t)1 << M));
    if (mag > f->max_mag) {
      code = exmy_round_overflow(f, r, neg, &fl);
      if (tiny) fl |= EXMY_FLAG_UNDERFLOW; /* only where every finite value is subnormal */
      goto done;
    }
    if (r->ftz && f->has_zero && (mag >> M) == 0) {
      fl |= EXMY_FLAG_UNDERFLOW | EXMY_FLAG_INEXACT;
      code = zero_code(f, neg);
      goto done;
    }
    code = signed_code(f, neg, mag);
  }
done:
  if (flags) *flags |= fl;
  return code;
}

/* ---- scalar conversions ------------------------------------------------ */

/* Generic IEEE binary decomposition: bits with ebits exponent and mbits
 * stored mantissa bits (sign on top). */
static uint64_t from_ieee_bits(const exmy_format *f, const exmy_rounding *r, uint64_t bits,
                               int ebits, int mbits, uint64_t index, unsigned *flags) {
  const int bias = (1 << (ebits - 1)) - 1;
  const int neg = (int)((bits >> (ebits + mbits)) & 1);
  const uint64_t emask = (((uint64_t)1) << ebits) - 1;
  const uint64_t be = (bits >> mbits) & emask;
  const uint64_t mant = bits & ((((uint64_t)1) << mbits) - 1);
  unsigned fl = 0;
  uint64_t code;
  if (be == emask) {
    code = mant ? exmy_round_nan(f, neg, &fl) : exmy_round_inf(f, r, neg, &fl);
    if (flags) *flags |= fl;
    return code;
  }
  if (be == 0) {
    if (r->daz || mant == 0) return exmy_round_pack(f, r, neg, 0, 0, index, flags);
    return exmy_round_pack(f, r, neg, mant, 1 - bias - mbits, index, flags);
  }
  return exmy_round_pack(f, r, neg, mant | (((uint64_t)1) << mbits), (int)be - bias - mbits, index, flags);
}

uint64_t exmy_from_double(const exmy_format *f, const exmy_rounding *r, double x, uint64_t index, unsigned *flags) {
  uint64_t b;
  memcpy(&b, &x, sizeof b);
  return from_ieee_bits(f, r, b, 11, 52, index, flags);
}

uint64_t exmy_from_float(const exmy_format *f, const exmy_rounding *r, float x, uint64_t index, unsigned *flags) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  return from_ieee_bits(f, r, b, 8, 23, index, flags);
}

uint64_t exmy_from_bf16(const exmy_format *f, const exmy_rounding *r, uint16_t bits, uint64_t index, unsigned *flags) {
  return from_ieee_bits(f, r, bits, 8, 7, index, flags);
}

uint64_t exmy_from_f16(const exmy_format *f, const exmy_rounding *r, uint16_t bits, uint64_t index, unsigned *flags) {
  return from_ieee_bits(f, r, bits, 5, 10, index, flags);
}

double exmy_bf16_to_double(uint16_t bits) {
  uint32_t b = (uint32_t)bits << 16;
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}

double exmy_f16_to_double(uint16_t bits) {
  const int be = (bits >> 10) & 31, mant = bits & 1023;
  double v;
  if (be == 31) v = mant ? NAN : INFINITY;
  else if (be == 0) v = ldexp(mant, -24);
  else v = ldexp(mant | 1024, be - 25);
  return (bits & 0x8000) ? -v : v;
}
