/* round_core.h: the one rounding core.  SplitMix64 and the counter-based
 * stochastic-rounding generator, the special-value policy (zero, NaN, inf,
 * overflow and saturation), the rounding increment, round-and-pack and the
 * scalar conversions from IEEE bits.  Header-only so that the library
 * (emulate/round.c, emulate/rng.c, the float32 fast path in convert.c) and
 * nvcc (the CUDA kernels) compile the same source: a policy change is one edit
 * here.  Internal, not installed.  Plain C99 or CUDA: no libc calls, no
 * globals.  Semantics: docs/formats.md. */
#ifndef EXMY_ROUND_CORE_H
#define EXMY_ROUND_CORE_H
#include "exmy.h"

#ifdef __CUDACC__
#define EXMY_HD static inline __host__ __device__
#else
#define EXMY_HD static inline
#endif

/* ---- SplitMix64 -------------------------------------------------------- */

#define EXMY__GOLDEN_GAMMA 0x9e3779b97f4a7c15ULL

/* SplitMix64's output function (Stafford's variant 13). */
EXMY_HD uint64_t exmy__mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* Sequential SplitMix64: advance *state by the golden gamma, return its mix. */
EXMY_HD uint64_t exmy__splitmix64(uint64_t *state) {
  *state += EXMY__GOLDEN_GAMMA;
  return exmy__mix64(*state);
}

/* exmy_random64: the mixer applied to key + (index+1) * gamma, the key
 * mixed from (seed, stream); a pure function of its arguments, so every
 * thread, thread count and the GPU kernels draw the same bits. */
EXMY_HD uint64_t exmy__random64(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t key = exmy__mix64(seed ^ exmy__mix64(stream + EXMY__GOLDEN_GAMMA));
  return exmy__mix64(key + (index + 1) * EXMY__GOLDEN_GAMMA);
}

/* ---- special-value policy ---------------------------------------------- */

EXMY_HD uint64_t exmy__signed_code(const exmy_format *f, int neg, uint64_t mag) {
  return (neg && f->is_signed) ? (f->sign_mask | mag) : mag;
}

/* Code of a zero of the given sign: +0 where the format has no -0, and the
 * smallest value for zero-less formats (callers flag that). */
EXMY_HD uint64_t exmy__zero_code(const exmy_format *f, int neg) {
  if (neg && f->is_signed && f->nan != EXMY_NAN_NEGZERO) return f->sign_mask;
  return 0;
}

/* NaN result (invalid operation); a format without NaN gives +0 (code 0). */
EXMY_HD uint64_t exmy__nan_result(const exmy_format *f, int neg, unsigned *fl) {
  *fl |= EXMY_FLAG_INVALID;
  if (f->nan == EXMY_NAN_NONE) return 0;
  if (f->nan == EXMY_NAN_NEGZERO) return f->nan_code;
  return exmy__signed_code(f, neg, f->nan_code);
}

/* A nonzero negative value into an unsigned format: invalid. */
EXMY_HD uint64_t exmy__neg_unsigned_result(const exmy_format *f, unsigned *fl) {
  return exmy__nan_result(f, 1, fl);
}

/* Infinite value of the given sign: inf where the format has one, else NaN
 * where it has one, else the largest finite value. */
EXMY_HD uint64_t exmy__inf_like(const exmy_format *f, int neg) {
  if (f->inf != EXMY_INF_NONE) return exmy__signed_code(f, neg, f->inf_mag);
  if (f->nan == EXMY_NAN_NEGZERO) return f->nan_code;
  if (f->nan != EXMY_NAN_NONE) return exmy__signed_code(f, neg, f->nan_code);
  return exmy__signed_code(f, neg, f->max_mag);
}

/* Does an overflow in this mode and direction go to the largest finite value
 * rather than to infinity? */
EXMY_HD int exmy__overflow_to_max(const exmy_rounding *r, int neg) {
  if (r->sat != EXMY_SAT_NONE) return 1;
  switch (r->mode) {
  case EXMY_RTZ: case EXMY_RTO: return 1;
  case EXMY_RUP: return neg;
  case EXMY_RDN: return !neg;
  default: return 0;
  }
}

/* Result of a finite value too large for the format. */
EXMY_HD uint64_t exmy__overflow_result(const exmy_format *f, const exmy_rounding *r, int neg, unsigned *fl) {
  *fl |= EXMY_FLAG_OVERFLOW | EXMY_FLAG_INEXACT;
  if (exmy__overflow_to_max(r, neg)) return exmy__signed_code(f, neg, f->max_mag);
  return exmy__inf_like(f, neg);
}

/* Result of an infinite input. */
EXMY_HD uint64_t exmy__inf_result(const exmy_format *f, const exmy_rounding *r, int neg, unsigned *fl) {
  if (neg && !f->is_signed) return exmy__neg_unsigned_result(f, fl);
  if (r->sat == EXMY_SAT_FINITE ||
      (r->sat == EXMY_SAT_PROPAGATE && f->inf == EXMY_INF_NONE && f->nan == EXMY_NAN_NONE)) {
    *fl |= EXMY_FLAG_INEXACT;
    return exmy__signed_code(f, neg, f->max_mag);
  }
  if (f->inf == EXMY_INF_NONE && f->nan == EXMY_NAN_NONE) *fl |= EXMY_FLAG_INEXACT;
  return exmy__inf_like(f, neg); /* inf, else NaN (no flag: the value is not rounded), else max */
}

/* ---- the rounding increment -------------------------------------------- */

/* The increment of the kept bits in a deterministic mode, from 0/1 facts
 * about the dropped part: above (more than half an ulp), tie (exactly half),
 * inexact (anything), and the kept part's last bit and sign.  Branch-free
 * for a constant mode, so the fast path's loops still vectorize.  RTZ and
 * RTO give 0 (RTO jams instead, see below); SR draws (round_pack). */
EXMY_HD uint32_t exmy__round_inc(int mode, uint32_t above, uint32_t tie, uint32_t inexact, uint32_t lsb,
                                 uint32_t neg) {
  switch (mode) {
  case EXMY_RNE: return above | (tie & lsb);
  case EXMY_RNA: return above | tie;
  case EXMY_RUP: return inexact & (neg ^ 1u);
  case EXMY_RDN: return inexact & neg;
  default: return 0;
  }
}

/* Round to odd: the inexact bit OR-ed into the kept bits' last bit. */
EXMY_HD uint32_t exmy__round_jam(int mode, uint32_t inexact) { return mode == EXMY_RTO ? inexact : 0; }

/* ---- round and pack ---------------------------------------------------- */

EXMY_HD int exmy__clz64(uint64_t x) {
#ifdef __CUDA_ARCH__
  return __clzll((long long)x);
#else
  return __builtin_clzll(x);
#endif
}

/* exmy_round_pack: |x| = sig * 2^exp2, sign separate; index is the element's
 * stochastic-rounding counter.  Flags are OR-ed into *flags when not NULL. */
EXMY_HD uint64_t exmy__round_pack(const exmy_format *f, const exmy_rounding *r, int neg, uint64_t sig, int exp2,
                                  uint64_t index, unsigned *flags) {
  unsigned fl = 0;
  uint64_t code;
  const int M = f->mbits;
  if (sig == 0) {
    code = f->has_zero ? exmy__zero_code(f, neg) : exmy__nan_result(f, neg, &fl);
  } else if (neg && !f->is_signed) {
    code = exmy__neg_unsigned_result(f, &fl);
  } else {
    const int e = exp2 + 63 - exmy__clz64(sig); /* exponent of the leading bit */
    const int tiny = e < f->emin;
    int te = (tiny && f->has_zero) ? f->emin : e; /* exponent of result's leading bit position */
    const int d = te - M - exp2;                 /* bits to drop */
    uint64_t kept, F;                            /* kept bits, top 64 bits of the dropped fraction */
    int sticky = 0;                              /* anything below F */
    if (d <= 0) { kept = sig << -d; F = 0; }
    else if (d < 64) { kept = sig >> d; F = sig << (64 - d); }
    else if (d == 64) { kept = 0; F = sig; }
    else if (d < 128) { kept = 0; F = sig >> (d - 64); sticky = (sig & ((((uint64_t)1) << (d - 64)) - 1)) != 0; }
    else { kept = 0; F = 0; sticky = 1; }
    const int inexact = F != 0 || sticky;
    const uint64_t half = (uint64_t)1 << 63;
    uint64_t inc;
    if (r->mode == EXMY_SR) {
      const int R = (r->sr_bits <= 0 || r->sr_bits > 64) ? 64 : r->sr_bits;
      const uint64_t u = exmy__random64(r->seed, r->stream, index);
      if (R == 64) inc = F + u < F; /* carry out of 64 bits */
      else inc = ((F >> (64 - R)) + (u >> (64 - R))) >> R;
    } else {
      const uint32_t tie = F == half && !sticky;
      inc = exmy__round_inc(r->mode, (F > half) | (F == half && sticky), tie, (uint32_t)inexact,
                            (uint32_t)(kept & 1), (uint32_t)(neg != 0));
      kept |= exmy__round_jam(r->mode, (uint32_t)inexact);
    }
    uint64_t rs = kept + inc;
    if (rs >> (M + 1)) { rs >>= 1; te++; } /* carry into the next binade */
    if (inexact) fl |= EXMY_FLAG_INEXACT;
    if (tiny && inexact) fl |= EXMY_FLAG_UNDERFLOW;
    if (!f->has_zero && e < f->emin) {
      /* No zero: everything below the smallest value becomes it. */
      fl |= EXMY_FLAG_INEXACT | EXMY_FLAG_UNDERFLOW;
      code = exmy__signed_code(f, neg, 0);
    } else if (rs == 0) {
      code = exmy__zero_code(f, neg);
    } else if (te - f->emin > (int)(f->max_mag >> M) + 1) {
      /* Encode with unbounded exponent, then compare with the largest finite
       * magnitude (encoding is monotonic); a huge te overflows before shifting. */
      code = exmy__overflow_result(f, r, neg, &fl);
      if (tiny) fl |= EXMY_FLAG_UNDERFLOW;
    } else {
      const uint64_t mag = ((uint64_t)(te - f->emin) << M) + rs - (f->has_zero ? 0 : ((uint64_t)1 << M));
      if (mag > f->max_mag) {
        code = exmy__overflow_result(f, r, neg, &fl);
        if (tiny) fl |= EXMY_FLAG_UNDERFLOW; /* only where every finite value is subnormal */
      } else if (r->ftz && f->has_zero && (mag >> M) == 0) {
        fl |= EXMY_FLAG_UNDERFLOW | EXMY_FLAG_INEXACT;
        code = exmy__zero_code(f, neg);
      } else {
        code = exmy__signed_code(f, neg, mag);
      }
    }
  }
  if (flags) *flags |= fl;
  return code;
}

/* ---- scalar conversions from IEEE bits --------------------------------- */

/* An IEEE binary input of ebits exponent and mbits stored mantissa bits
 * (sign on top). */
EXMY_HD uint64_t exmy__from_ieee(const exmy_format *f, const exmy_rounding *r, uint64_t bits, int ebits, int mbits,
                                 uint64_t index, unsigned *flags) {
  const int bias = (1 << (ebits - 1)) - 1;
  const int neg = (int)((bits >> (ebits + mbits)) & 1);
  const uint64_t emask = (((uint64_t)1) << ebits) - 1;
  const uint64_t be = (bits >> mbits) & emask;
  const uint64_t mant = bits & ((((uint64_t)1) << mbits) - 1);
  if (be == emask) {
    unsigned fl = 0;
    const uint64_t code = mant ? exmy__nan_result(f, neg, &fl) : exmy__inf_result(f, r, neg, &fl);
    if (flags) *flags |= fl;
    return code;
  }
  if (be == 0) {
    if (r->daz || mant == 0) return exmy__round_pack(f, r, neg, 0, 0, index, flags);
    return exmy__round_pack(f, r, neg, mant, 1 - bias - mbits, index, flags);
  }
  return exmy__round_pack(f, r, neg, mant | (((uint64_t)1) << mbits), (int)be - bias - mbits, index, flags);
}

EXMY_HD uint64_t exmy__from_f32(const exmy_format *f, const exmy_rounding *r, uint32_t bits, uint64_t index,
                                unsigned *flags) {
  return exmy__from_ieee(f, r, bits, 8, 23, index, flags);
}
EXMY_HD uint64_t exmy__from_bf16(const exmy_format *f, const exmy_rounding *r, uint16_t bits, uint64_t index,
                                 unsigned *flags) {
  return exmy__from_ieee(f, r, bits, 8, 7, index, flags);
}
EXMY_HD uint64_t exmy__from_f16(const exmy_format *f, const exmy_rounding *r, uint16_t bits, uint64_t index,
                                unsigned *flags) {
  return exmy__from_ieee(f, r, bits, 5, 10, index, flags);
}
EXMY_HD uint64_t exmy__from_f64(const exmy_format *f, const exmy_rounding *r, uint64_t bits, uint64_t index,
                                unsigned *flags) {
  return exmy__from_ieee(f, r, bits, 11, 52, index, flags);
}
#endif
