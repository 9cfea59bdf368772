/* oracle_mpfr.h: an independent MPFR-based oracle for exmy conversions.
 *
 * Written from the project's design notes (shared/design/formats.md, outside
 * this repository) and the lead's decisions only; it
 * shares no code with the library's emulate/ sources.  From the library it
 * uses nothing but the exmy_format fields ebits, mbits, bias, is_signed,
 * has_zero, inf and nan (everything else is derived here), and the enums of
 * exmy.h.
 *
 * The rounding itself is MPFR: precision M+1, emin = 2 - bias - M, an emax
 * large enough to be unbounded above, mpfr_set_d, mpfr_check_range and
 * mpfr_subnormalize.  rna is RNDN with an exact tie test (when RNDN went
 * toward zero and the RNDA neighbour is exactly as far, the RNDA result); rto is RNDZ and then, when inexact, the last bit of the (M+1)-bit
 * significand set (for M >= 1 the last code bit; for M = 0 rto equals rtz
 * except that a truncated zero becomes the smallest positive value).  Overflow, saturation, NaN, sign, unsigned and ftz
 * rules are applied afterwards, and the code is packed here from the value.
 *
 * Readings of the spec where it is silent (see the test's report):
 *  - rto with M = 0: the 1-bit significand of a nonzero value is already odd,
 *    so rto = rtz there; only a truncated zero moves up to the smallest value.
 *  - UNDERFLOW is "0 < |x| < 2^(1-bias) and inexact" literally, so in formats
 *    without finite normals (e1mY ieee, E = 0) an overflowing x can be tiny.
 *  - NaN input, negative into unsigned, zero into a zero-less format raise
 *    INVALID alone; an infinite input raises nothing, except INEXACT when it
 *    becomes the largest finite value; inf -> NaN leaves INEXACT unchecked.
 *  - Formats the oracle calls ambiguous (inf=ieee with nan!=ieee, ieee codes
 *    with M = 0, nan=negzero unsigned, zero=none other than unsigned
 *    inf=none nan=ones) are refused by oracle_fmt_init.
 *
 * Use: oracle_fmt_init once per format, one oracle_ws per thread, then
 * oracle_pre (the MPFR part, independent of saturation and ftz) and
 * oracle_finish (overflow, saturation, ftz, packing, flags). */
#ifndef ORACLE_MPFR_H
#define ORACLE_MPFR_H

#include <stdint.h>
#include <stddef.h>
#include <mpfr.h>
#include "exmy.h"

typedef struct oracle_fmt {
  int E, M, bias, is_signed, has_zero;
  exmy_inf inf;
  exmy_nan nan;
  int bits;
  uint64_t sign_mask;
  uint64_t top_mag;   /* all-ones magnitude */
  uint64_t max_mag;   /* magnitude code of the largest finite value */
  uint64_t inf_mag;   /* when has_inf */
  int has_inf, has_nan, has_negzero;
  double maxfinite;   /* largest finite value */
  double minnormal;   /* smallest normal (smallest value when !has_zero) */
  double minsub;      /* smallest positive value */
  double max_next;    /* next value above maxfinite on the unbounded grid */
  long mpfr_emin;     /* 2 - bias - M */
} oracle_fmt;

/* 0, or -1 with a reason when the oracle does not support (or considers
 * ambiguous) the combination of fields. */
int oracle_fmt_init(oracle_fmt *o, const exmy_format *f, char *why, size_t whylen);

/* Value of a finite magnitude code (0..max_mag); on the unbounded grid the
 * function also works for magnitudes above max_mag (value as if finite). */
double oracle_decode_mag(const oracle_fmt *o, uint64_t mag);
/* Class and value of any code of the format (EXMY_CLASS_*), sign applied. */
int oracle_classify(const oracle_fmt *o, uint64_t code, double *value);
/* Canonical NaN code for a given sign. */
uint64_t oracle_nan_code(const oracle_fmt *o, int neg);

/* Per-thread workspace.  Between oracle_ws_init and oracle_ws_clear it owns
 * the calling thread's MPFR exponent range (emin/emax are changed on demand
 * and restored by oracle_ws_clear). */
typedef struct oracle_ws {
  mpfr_t r, z, a;
  long emin0, emax0, cur_emin;
  int range_set;
} oracle_ws;
void oracle_ws_init(oracle_ws *ws);
void oracle_ws_clear(oracle_ws *ws);

/* Internal rounding directions for oracle_pre. */
typedef enum oracle_dir {
  O_RNE = 0, O_RNA, O_RTZ, O_RUP, O_RDN, O_RTO,
  O_AWAY /* magnitude rounded up (for checking stochastic rounding) */
} oracle_dir;

enum {
  OK_FINITE = 0,   /* finite nonzero input, rounded */
  OK_ZERO,         /* zero input */
  OK_NAN,          /* NaN input */
  OK_INF,          /* infinite input */
  OK_NEG_UNSIGNED, /* negative nonzero input into an unsigned format */
  OK_ZERO_NOZERO,  /* zero input into a format without zero */
  OK_FORCED_MIN    /* has_zero = 0 and 0 < x < smallest value: code 0 */
};

typedef struct oracle_pre {
  int kind;
  int neg;
  int ovf;       /* rounded (unbounded exponent) value beyond the largest finite */
  uint64_t mag;  /* rounded magnitude code when !ovf */
  int inexact;   /* rounded value != input */
  int tiny;      /* 0 < |x| < smallest normal */
} oracle_pre;

void oracle_pre_round(const oracle_fmt *o, oracle_ws *ws, oracle_dir dir,
                      double x, oracle_pre *p);

/* Final code.  mode selects the overflow rule (EXMY_SR: as rne).  *flags gets
 * the expected flags, *mask the flags that the spec pins down for this case
 * (all four, except INEXACT when an infinite input becomes NaN). */
uint64_t oracle_finish(const oracle_fmt *o, const oracle_pre *p,
                       exmy_round_mode mode, exmy_saturation sat, int ftz,
                       unsigned *flags, unsigned *mask);

/* Convenience: whole conversion of an input already passed through daz. */
uint64_t oracle_convert(const oracle_fmt *o, oracle_ws *ws, exmy_round_mode mode,
                        exmy_saturation sat, int ftz, double x,
                        unsigned *flags, unsigned *mask);

oracle_dir oracle_dir_of(exmy_round_mode mode);

#endif
