/* oracle_mpfr.c: independent MPFR oracle for exmy conversions (see oracle_mpfr.h). */
#include "oracle_mpfr.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define ORACLE_EMAX (1L << 20)

static uint64_t lowmask(int n) { return n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1); }

double oracle_decode_mag(const oracle_fmt *o, uint64_t mag) {
  uint64_t e = mag >> o->M;
  uint64_t m = mag & lowmask(o->M);
  if (o->has_zero && e == 0)
    return ldexp((double)m, 1 - o->bias - o->M);
  return ldexp((double)(((uint64_t)1 << o->M) + m), (int)e - o->bias - o->M);
}

uint64_t oracle_nan_code(const oracle_fmt *o, int neg) {
  if (o->nan == EXMY_NAN_NEGZERO) return o->sign_mask;
  return o->top_mag | ((neg && o->is_signed) ? o->sign_mask : 0);
}

static int is_nan_mag(const oracle_fmt *o, uint64_t mag) {
  switch (o->nan) {
  case EXMY_NAN_IEEE: return (mag >> o->M) == lowmask(o->E) && (mag & lowmask(o->M)) != 0;
  case EXMY_NAN_ONES: return mag == o->top_mag;
  default: return 0;
  }
}

int oracle_classify(const oracle_fmt *o, uint64_t code, double *value) {
  int neg = o->is_signed && (code & o->sign_mask) != 0;
  uint64_t mag = code & o->top_mag;
  *value = NAN;
  if (o->bits < 64 && (code >> o->bits) != 0) return EXMY_CLASS_NAN;
  if (o->nan == EXMY_NAN_NEGZERO && code == o->sign_mask) return EXMY_CLASS_NAN;
  if (is_nan_mag(o, mag)) return EXMY_CLASS_NAN;
  if (o->has_inf && mag == o->inf_mag) { *value = neg ? -INFINITY : INFINITY; return EXMY_CLASS_INF; }
  if (mag > o->max_mag) return EXMY_CLASS_NAN; /* not reached for supported formats */
  double v = oracle_decode_mag(o, mag);
  *value = neg ? -v : v;
  if (o->has_zero && mag == 0) return EXMY_CLASS_ZERO;
  if (o->has_zero && (mag >> o->M) == 0) return EXMY_CLASS_SUBNORMAL;
  return EXMY_CLASS_NORMAL;
}

int oracle_fmt_init(oracle_fmt *o, const exmy_format *f, char *why, size_t whylen) {
  memset(o, 0, sizeof *o);
  o->E = f->ebits; o->M = f->mbits; o->bias = f->bias;
  o->is_signed = f->is_signed ? 1 : 0; o->has_zero = f->has_zero ? 1 : 0;
  o->inf = f->inf; o->nan = f->nan;
  int E = o->E, M = o->M;
#define NO(...) do { if (why) snprintf(why, whylen, __VA_ARGS__); return -1; } while (0)
  if (E < 0 || E > 11 || M < 0 || M > 52) NO("E or M out of the oracle's range");
  if (E + M + o->is_signed > 64) NO("more than 64 bits");
  if ((o->inf == EXMY_INF_IEEE || o->nan == EXMY_NAN_IEEE) && (E == 0 || M == 0))
    NO("ieee inf/nan with E=0 or M=0 (no such codes)");
  if (o->inf == EXMY_INF_IEEE && o->nan != EXMY_NAN_IEEE)
    NO("inf=ieee with nan!=ieee: codes of the top binade ambiguous");
  if (o->nan == EXMY_NAN_NEGZERO && !o->is_signed) NO("nan=negzero in an unsigned format");
  if (!o->has_zero && (o->is_signed || o->inf != EXMY_INF_NONE || o->nan != EXMY_NAN_ONES))
    NO("zero=none supported only unsigned, inf=none, nan=ones");
  o->bits = E + M + o->is_signed;
  o->top_mag = lowmask(E + M);
  o->sign_mask = o->is_signed ? ((uint64_t)1 << (E + M)) : 0;
  uint64_t expall = lowmask(E) << M;
  o->has_nan = o->nan != EXMY_NAN_NONE;
  o->has_inf = o->inf != EXMY_INF_NONE;
  o->has_negzero = o->has_zero && o->is_signed && o->nan != EXMY_NAN_NEGZERO;
  switch (o->inf) {
  case EXMY_INF_IEEE: o->inf_mag = expall; break;
  case EXMY_INF_TOP:
    o->inf_mag = o->nan == EXMY_NAN_ONES ? o->top_mag - 1
               : o->nan == EXMY_NAN_IEEE ? expall : o->top_mag;
    break;
  default: o->inf_mag = 0; break;
  }
  if (o->has_inf) o->max_mag = o->inf_mag - 1;
  else if (o->nan == EXMY_NAN_ONES) o->max_mag = o->top_mag - 1;
  else if (o->nan == EXMY_NAN_IEEE) o->max_mag = expall;
  else o->max_mag = o->top_mag;
  if ((o->has_zero && o->max_mag < 1) || (o->has_inf && o->inf_mag < 1)) NO("no positive finite value");
  /* value range must be exact in double */
  long emax_unb = (long)(o->max_mag >> M) - o->bias;
  if (o->has_zero && (o->max_mag >> M) == 0) emax_unb = 1 - o->bias - 1; /* all subnormal */
  if (emax_unb > 1023) NO("largest value not a finite double (bias too small)");
  long emin_sub = o->has_zero ? (long)(1 - o->bias - M) : (long)(-o->bias);
  if (emin_sub < -1074) NO("smallest value below 2^-1074 (bias too large)");
  o->maxfinite = oracle_decode_mag(o, o->max_mag);
  o->max_next = oracle_decode_mag(o, o->max_mag + 1);
  /* max_next may be +inf (binary64 itself); it is only compared against */
  if (!isfinite(o->maxfinite) || !(o->maxfinite > 0)) NO("range not in double");
  o->minnormal = o->has_zero ? ldexp(1.0, 1 - o->bias) : ldexp(1.0, -o->bias);
  o->minsub = oracle_decode_mag(o, o->has_zero ? 1 : 0);
  o->mpfr_emin = 2L - o->bias - M;
#undef NO
  return 0;
}

void oracle_ws_init(oracle_ws *ws) {
  ws->emin0 = mpfr_get_emin();
  ws->emax0 = mpfr_get_emax();
  ws->range_set = 0;
  ws->cur_emin = 0;
  mpfr_init2(ws->r, 64);
  mpfr_init2(ws->z, 64);
  mpfr_init2(ws->a, 64);
}

void oracle_ws_clear(oracle_ws *ws) {
  mpfr_set_emin(ws->emin0);
  mpfr_set_emax(ws->emax0);
  mpfr_clear(ws->r); mpfr_clear(ws->z); mpfr_clear(ws->a);
}

oracle_dir oracle_dir_of(exmy_round_mode mode) {
  switch (mode) {
  case EXMY_RNE: return O_RNE;
  case EXMY_RNA: return O_RNA;
  case EXMY_RTZ: return O_RTZ;
  case EXMY_RUP: return O_RUP;
  case EXMY_RDN: return O_RDN;
  case EXMY_RTO: return O_RTO;
  default: return O_RNE;
  }
}

/* Round x into rop at precision M+1 with the format's subnormal range and an
 * unbounded exponent above.  Returns the ternary value. */
static int mpfr_round_fmt(const oracle_fmt *o, oracle_ws *ws, mpfr_ptr rop, double x, mpfr_rnd_t rnd) {
  if (mpfr_get_prec(rop) != o->M + 1) mpfr_set_prec(rop, o->M + 1);
  /* the thread's exponent range is switched only when the format changes
   * (MPFR keeps it in thread-local storage, which is slow to reach) */
  long want = o->has_zero ? o->mpfr_emin : ws->emin0;
  if (!ws->range_set || ws->cur_emin != want) {
    mpfr_set_emax(ORACLE_EMAX);
    mpfr_set_emin(want);
    ws->cur_emin = want;
    ws->range_set = 1;
  }
  if (!o->has_zero) {
    /* no subnormals: every value >= 2^-bias is normal; the caller handles
     * smaller inputs.  The default (wide) emin applies. */
    return mpfr_set_d(rop, x, rnd);
  }
  int t = mpfr_set_d(rop, x, rnd);
  t = mpfr_check_range(rop, t, rnd);
  return mpfr_subnormalize(rop, t, rnd);
}

/* magnitude code of a finite value 0 <= a <= maxfinite of the format */
static uint64_t encode_mag(const oracle_fmt *o, double a) {
  if (a == 0) return 0;
  if (o->has_zero && a < o->minnormal)
    return (uint64_t)ldexp(a, o->bias - 1 + o->M);
  int e2;
  (void)frexp(a, &e2);
  int u = e2 - 1; /* a in [2^u, 2^(u+1)) */
  uint64_t field = (uint64_t)(u + o->bias);
  uint64_t sig = (uint64_t)ldexp(a, o->M - u);
  return (field << o->M) | (sig - ((uint64_t)1 << o->M));
}

void oracle_pre_round(const oracle_fmt *o, oracle_ws *ws, oracle_dir dir,
                      double x, oracle_pre *p) {
  memset(p, 0, sizeof *p);
  p->neg = signbit(x) ? 1 : 0;
  if (isnan(x)) { p->kind = OK_NAN; return; }
  if (!o->is_signed && p->neg && x != 0) { p->kind = OK_NEG_UNSIGNED; return; }
  if (x == 0) { p->kind = o->has_zero ? OK_ZERO : OK_ZERO_NOZERO; return; }
  if (isinf(x)) { p->kind = OK_INF; return; }
  double ax = fabs(x);
  p->tiny = ax < o->minnormal;
  if (!o->has_zero && ax < o->minsub) {
    p->kind = OK_FORCED_MIN; p->mag = 0; p->inexact = 1; return;
  }
  p->kind = OK_FINITE;
  int t;
  mpfr_ptr r = ws->r;
  switch (dir) {
  case O_RNE: t = mpfr_round_fmt(o, ws, r, x, MPFR_RNDN); break;
  case O_RTZ: case O_RTO: t = mpfr_round_fmt(o, ws, r, x, MPFR_RNDZ); break;
  case O_RUP: t = mpfr_round_fmt(o, ws, r, x, MPFR_RNDU); break;
  case O_RDN: t = mpfr_round_fmt(o, ws, r, x, MPFR_RNDD); break;
  case O_AWAY: t = mpfr_round_fmt(o, ws, r, x, MPFR_RNDA); break;
  case O_RNA:
  default:
    t = mpfr_round_fmt(o, ws, r, x, MPFR_RNDN);
    if (t != 0 && (t < 0) == (x > 0)) {
      /* RNDN went toward zero: a tie iff the away neighbour a is as far
       * from x.  Both differences are exact in double: z = RNDN >= x/2 or
       * z = 0 (Sterbenz); a - x is exact when a <= 2x, and when a > 2x
       * x is below a/2, so the rounded a - x still exceeds x - z. */
      int ta = mpfr_round_fmt(o, ws, ws->a, x, MPFR_RNDA);
      double z = fabs(mpfr_get_d(r, MPFR_RNDN)), a = fabs(mpfr_get_d(ws->a, MPFR_RNDN)), ax0 = fabs(x);
      if (a - ax0 == ax0 - z) { mpfr_set(r, ws->a, MPFR_RNDN); t = ta; }
    }
    break;
  }
  p->inexact = t != 0;
  double v = mpfr_get_d(r, MPFR_RNDN); /* exact (or +-inf beyond double) */
  double av = fabs(v);
  if (av > o->maxfinite) { p->ovf = 1; return; }
  p->mag = encode_mag(o, av);
  if (dir == O_RTO && p->inexact) {
    /* round to odd: the truncated value's (M+1)-bit significand gets its last
     * bit set.  For M >= 1 that is the last code bit.  For M = 0 (precision
     * 1) a nonzero significand is 1, already odd, so rto = rtz; a truncated
     * zero (subnormal range) becomes the smallest positive value. */
    int even = o->M > 0 ? (p->mag & 1) == 0 : (o->has_zero && p->mag == 0);
    if (even) {
      if (p->mag == o->max_mag) p->ovf = 1; /* the odd neighbour lies beyond max */
      else p->mag += 1;
    }
  }
}

uint64_t oracle_finish(const oracle_fmt *o, const oracle_pre *p,
                       exmy_round_mode mode, exmy_saturation sat, int ftz,
                       unsigned *flags, unsigned *mask) {
  const unsigned ALL = EXMY_FLAG_INEXACT | EXMY_FLAG_UNDERFLOW | EXMY_FLAG_OVERFLOW | EXMY_FLAG_INVALID;
  const unsigned NOINEX = ALL & ~(unsigned)EXMY_FLAG_INEXACT;
  int neg = p->neg;
  uint64_t sgn = (neg && o->is_signed) ? o->sign_mask : 0;
  uint64_t maxc = o->max_mag | sgn;
  uint64_t infl = o->has_inf ? (o->inf_mag | sgn) : o->has_nan ? oracle_nan_code(o, neg) : maxc;
  *flags = 0; *mask = ALL;
  switch (p->kind) {
  /* invalid cases raise INVALID alone (as IEEE 754's invalid operation) */
  case OK_NAN:
    *flags = EXMY_FLAG_INVALID;
    return o->has_nan ? oracle_nan_code(o, neg) : 0;
  case OK_NEG_UNSIGNED:
    *flags = EXMY_FLAG_INVALID;
    return o->has_nan ? oracle_nan_code(o, 0) : 0;
  case OK_ZERO_NOZERO:
    *flags = EXMY_FLAG_INVALID;
    return o->has_nan ? oracle_nan_code(o, 0) : 0;
  case OK_ZERO:
    return (neg && o->has_negzero) ? o->sign_mask : 0;
  case OK_INF: {
    /* never OVERFLOW for an infinite input; INEXACT when it becomes the
     * largest finite value (the value changed); inf -> NaN leaves INEXACT
     * unspecified by the spec, so it is not compared */
    uint64_t c = sat == EXMY_SAT_FINITE ? maxc : infl;
    if (c == maxc) *flags = EXMY_FLAG_INEXACT;
    else if (!o->has_inf) *mask = NOINEX;
    return c;
  }
  case OK_FORCED_MIN:
    *flags = EXMY_FLAG_INEXACT | EXMY_FLAG_UNDERFLOW;
    return 0;
  default: break;
  }
  if (p->ovf) {
    *flags = EXMY_FLAG_OVERFLOW | EXMY_FLAG_INEXACT;
    /* tiny and overflowing at once only where no normal value is finite (e1mX ieee) */
    if (p->tiny) *flags |= EXMY_FLAG_UNDERFLOW;
    if (sat != EXMY_SAT_NONE) return maxc;
    switch (mode) {
    case EXMY_RTZ: case EXMY_RTO: return maxc;
    case EXMY_RUP: return neg ? maxc : infl;
    case EXMY_RDN: return neg ? infl : maxc;
    default: return infl; /* rne, rna, sr */
    }
  }
  uint64_t mag = p->mag;
  int inexact = p->inexact;
  if (ftz && o->has_zero && mag != 0 && (mag >> o->M) == 0) {
    mag = 0;
    inexact = 1;
    *flags |= EXMY_FLAG_UNDERFLOW;
  }
  if (inexact) *flags |= EXMY_FLAG_INEXACT;
  if (inexact && p->tiny) *flags |= EXMY_FLAG_UNDERFLOW;
  if (mag == 0 && o->has_zero) return (neg && o->has_negzero) ? o->sign_mask : 0;
  return mag | sgn;
}

uint64_t oracle_convert(const oracle_fmt *o, oracle_ws *ws, exmy_round_mode mode,
                        exmy_saturation sat, int ftz, double x,
                        unsigned *flags, unsigned *mask) {
  oracle_pre p;
  oracle_pre_round(o, ws, oracle_dir_of(mode), x, &p);
  return oracle_finish(o, &p, mode, sat, ftz, flags, mask);
}
