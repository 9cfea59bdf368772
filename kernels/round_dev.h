/* round_dev.h: exmy's round-and-pack and scalar conversions as header-only
 * functions that nvcc compiles for the device kernels and a host C compiler
 * compiles for tests/test_gpu_round.c, which checks them bit for bit against
 * exmy_round_pack / exmy_from_* (emulate/round.c, emulate/rng.c).  Same
 * semantics as those; no libc calls, no globals, nothing format-specific
 * precomputed, so a kernel handles every exmy_format and rounding. */
#ifndef EXMY_ROUND_DEV_H
#define EXMY_ROUND_DEV_H
#include "exmy.h"

#ifdef __CUDACC__
#define EXMY_HD static inline __host__ __device__
#else
#define EXMY_HD static inline
#endif

EXMY_HD int exmy_dev_clz64(uint64_t x) {
#ifdef __CUDA_ARCH__
  return __clzll((long long)x);
#else
  return __builtin_clzll(x);
#endif
}

EXMY_HD uint64_t exmy_dev_mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* exmy_random64: the stochastic-rounding stream, identical on host and device. */
EXMY_HD uint64_t exmy_dev_random64(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t gamma = 0x9e3779b97f4a7c15ULL;
  uint64_t key = exmy_dev_mix64(seed ^ exmy_dev_mix64(stream + gamma));
  return exmy_dev_mix64(key + (index + 1) * gamma);
}

EXMY_HD uint64_t exmy_dev_signed(const exmy_format *f, int neg, uint64_t mag) {
  return (neg && f->is_signed) ? (f->sign_mask | mag) : mag;
}

EXMY_HD uint64_t exmy_dev_zero(const exmy_format *f, int neg) {
  if (neg && f->is_signed && f->nan != EXMY_NAN_NEGZERO) return f->sign_mask;
  return 0;
}

EXMY_HD uint64_t exmy_dev_nan(const exmy_format *f, int neg, unsigned *fl) {
  *fl |= EXMY_FLAG_INVALID;
  if (f->nan == EXMY_NAN_NONE) return 0;
  if (f->nan == EXMY_NAN_NEGZERO) return f->nan_code;
  return exmy_dev_signed(f, neg, f->nan_code);
}

EXMY_HD uint64_t exmy_dev_inf_like(const exmy_format *f, int neg) {
  if (f->inf != EXMY_INF_NONE) return exmy_dev_signed(f, neg, f->inf_mag);
  if (f->nan == EXMY_NAN_NEGZERO) return f->nan_code;
  if (f->nan != EXMY_NAN_NONE) return exmy_dev_signed(f, neg, f->nan_code);
  return exmy_dev_signed(f, neg, f->max_mag);
}

EXMY_HD uint64_t exmy_dev_overflow(const exmy_format *f, const exmy_rounding *r, int neg, unsigned *fl) {
  int to_max;
  *fl |= EXMY_FLAG_OVERFLOW | EXMY_FLAG_INEXACT;
  if (r->sat != EXMY_SAT_NONE) to_max = 1;
  else if (r->mode == EXMY_RTZ || r->mode == EXMY_RTO) to_max = 1;
  else if (r->mode == EXMY_RUP) to_max = neg;
  else if (r->mode == EXMY_RDN) to_max = !neg;
  else to_max = 0;
  return to_max ? exmy_dev_signed(f, neg, f->max_mag) : exmy_dev_inf_like(f, neg);
}

EXMY_HD uint64_t exmy_dev_inf(const exmy_format *f, const exmy_rounding *r, int neg, unsigned *fl) {
  if (neg && !f->is_signed) return exmy_dev_nan(f, neg, fl);
  if (r->sat == EXMY_SAT_FINITE ||
      (r->sat == EXMY_SAT_PROPAGATE && f->inf == EXMY_INF_NONE && f->nan == EXMY_NAN_NONE)) {
    *fl |= EXMY_FLAG_INEXACT;
    return exmy_dev_signed(f, neg, f->max_mag);
  }
  if (f->inf == EXMY_INF_NONE && f->nan == EXMY_NAN_NONE) *fl |= EXMY_FLAG_INEXACT;
  return exmy_dev_inf_like(f, neg);
}

/* exmy_round_pack: |x| = sig * 2^exp2, sign separate; index is the element's
 * stochastic-rounding counter.  Flags are OR-ed into *flags (never NULL here). */
EXMY_HD uint64_t exmy_dev_round_pack(const exmy_format *f, const exmy_rounding *r, int neg,
                                     uint64_t sig, int exp2, uint64_t index, unsigned *flags) {
  unsigned fl = 0;
  uint64_t code;
  const int M = f->mbits;
  if (sig == 0) {
    code = f->has_zero ? exmy_dev_zero(f, neg) : exmy_dev_nan(f, neg, &fl);
  } else if (neg && !f->is_signed) {
    code = exmy_dev_nan(f, neg, &fl);
  } else {
    const int e = exp2 + 63 - exmy_dev_clz64(sig);
    const int tiny = e < f->emin;
    int te = (tiny && f->has_zero) ? f->emin : e;
    const int d = te - M - exp2; /* bits to drop */
    uint64_t kept, F;            /* kept bits; top 64 bits of the dropped fraction */
    int sticky = 0;
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
      uint64_t u = exmy_dev_random64(r->seed, r->stream, index);
      if (R == 64) inc = F + u < F;
      else inc = ((F >> (64 - R)) + (u >> (64 - R))) >> R;
      break;
    }
    }
    uint64_t rs = kept + inc;
    if (rs >> (M + 1)) { rs >>= 1; te++; }
    if (inexact) fl |= EXMY_FLAG_INEXACT;
    if (tiny && inexact) fl |= EXMY_FLAG_UNDERFLOW;
    if (!f->has_zero && e < f->emin) {
      fl |= EXMY_FLAG_INEXACT | EXMY_FLAG_UNDERFLOW;
      code = exmy_dev_signed(f, neg, 0);
    } else if (rs == 0) {
      code = exmy_dev_zero(f, neg);
    } else if (te - f->emin > (int)(f->max_mag >> M) + 1) {
      code = exmy_dev_overflow(f, r, neg, &fl);
      if (tiny) fl |= EXMY_FLAG_UNDERFLOW;
    } else {
      uint64_t mag = ((uint64_t)(te - f->emin) << M) + rs - (f->has_zero ? 0 : ((uint64_t)1 << M));
      if (mag > f->max_mag) {
        code = exmy_dev_overflow(f, r, neg, &fl);
        if (tiny) fl |= EXMY_FLAG_UNDERFLOW;
      } else if (r->ftz && f->has_zero && (mag >> M) == 0) {
        fl |= EXMY_FLAG_UNDERFLOW | EXMY_FLAG_INEXACT;
        code = exmy_dev_zero(f, neg);
      } else {
        code = exmy_dev_signed(f, neg, mag);
      }
    }
  }
  *flags |= fl;
  return code;
}

/* An IEEE binary input of ebits exponent and mbits mantissa bits (sign on
 * top), as exmy_from_float / _bf16 / _f16 / _double decompose it. */
EXMY_HD uint64_t exmy_dev_from_ieee(const exmy_format *f, const exmy_rounding *r, uint64_t bits,
                                    int ebits, int mbits, uint64_t index, unsigned *flags) {
  const int bias = (1 << (ebits - 1)) - 1;
  const int neg = (int)((bits >> (ebits + mbits)) & 1);
  const uint64_t emask = (((uint64_t)1) << ebits) - 1;
  const uint64_t be = (bits >> mbits) & emask;
  const uint64_t mant = bits & ((((uint64_t)1) << mbits) - 1);
  if (be == emask) return mant ? exmy_dev_nan(f, neg, flags) : exmy_dev_inf(f, r, neg, flags);
  if (be == 0) {
    if (r->daz || mant == 0) return exmy_dev_round_pack(f, r, neg, 0, 0, index, flags);
    return exmy_dev_round_pack(f, r, neg, mant, 1 - bias - mbits, index, flags);
  }
  return exmy_dev_round_pack(f, r, neg, mant | (((uint64_t)1) << mbits), (int)be - bias - mbits, index, flags);
}

EXMY_HD uint64_t exmy_dev_from_f32(const exmy_format *f, const exmy_rounding *r, uint32_t bits,
                                   uint64_t index, unsigned *flags) {
  return exmy_dev_from_ieee(f, r, bits, 8, 23, index, flags);
}
EXMY_HD uint64_t exmy_dev_from_bf16(const exmy_format *f, const exmy_rounding *r, uint16_t bits,
                                    uint64_t index, unsigned *flags) {
  return exmy_dev_from_ieee(f, r, bits, 8, 7, index, flags);
}
EXMY_HD uint64_t exmy_dev_from_f16(const exmy_format *f, const exmy_rounding *r, uint16_t bits,
                                   uint64_t index, unsigned *flags) {
  return exmy_dev_from_ieee(f, r, bits, 5, 10, index, flags);
}
EXMY_HD uint64_t exmy_dev_from_f64(const exmy_format *f, const exmy_rounding *r, uint64_t bits,
                                   uint64_t index, unsigned *flags) {
  return exmy_dev_from_ieee(f, r, bits, 11, 52, index, flags);
}
#endif
