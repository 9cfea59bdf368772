/* number.c: a number of the `quantize` stream (decimal or C99 hex-float
 * text) rounded to a format straight from its text, with MPFR: one rounding,
 * exact for every format and mode, whatever the exponent (no detour through
 * double, whose own rounding, overflow and underflow could change the code
 * or lose the flags). */
#include "cli/cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gmp.h>
#include <mpfr.h>

#if ULONG_MAX < UINT64_MAX
#error "cli/number.c reads a 63-bit significand with mpz_get_ui"
#endif

/* Beyond any format's exponent range (|bias| <= 100000, at most 11 exponent
 * bits, at most 52 fraction bits): a clamped exponent rounds the same way. */
#define CLAMP_EXP2 (1L << 20)

int cli_round_text(const char *s, const exmy_format *f, const exmy_rounding *r, uint64_t index, uint64_t *code,
                   unsigned *flags) {
  char *end;
  errno = 0;
  const double d = strtod(s, &end); /* the grammar: strtod's (decimal, hex-float, inf, nan) */
  if (end == s || *end) return -1;
  if (isnan(d) || (isinf(d) && errno != ERANGE)) { /* the texts inf and nan (any sign) */
    *code = exmy_from_f64(f, r, d, index, flags);
    return 0;
  }
  /* Round to odd at 64 bits (63 bits truncated + a sticky bit): at least two
   * bits more than any format's precision (<= 53), so rounding that to the
   * format gives what rounding the exact value would, in every mode, flags
   * included; stochastic rounding sees the value's first 63 bits. */
  const mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
  mpfr_set_emin(mpfr_get_emin_min());
  mpfr_set_emax(mpfr_get_emax_max());
  mpfr_t x;
  mpfr_init2(x, 63);
  char *mend;
  const int t = mpfr_strtofr(x, s, &mend, 0, MPFR_RNDZ);
  int ok = mend == end;
  const int neg = mpfr_signbit(x) != 0;
  uint64_t sig = 0;
  long exp2 = 0;
  if (mpfr_zero_p(x)) {
    if (t) { sig = 1; exp2 = -CLAMP_EXP2; } /* nonzero but below MPFR's range */
  } else {
    mpz_t z;
    mpz_init(z);
    exp2 = (long)mpfr_get_z_2exp(z, x) - 1;
    mpz_abs(z, z);
    sig = ((uint64_t)mpz_get_ui(z) << 1) | (t != 0);
    mpz_clear(z);
  }
  /* --daz: like the double it was read as before, a magnitude below double's
   * smallest normal (2^-1022) is zero. */
  if (r->daz && sig && (mpfr_zero_p(x) || mpfr_get_exp(x) <= -1022)) sig = 0;
  mpfr_clear(x);
  mpfr_set_emin(emin);
  mpfr_set_emax(emax);
  if (!ok) return -1;
  if (exp2 > CLAMP_EXP2) exp2 = CLAMP_EXP2;
  if (exp2 < -CLAMP_EXP2) { sig = 1; exp2 = -CLAMP_EXP2; }
  *code = exmy_round_pack(f, r, neg, sig, (int)exp2, index, flags);
  return 0;
}
