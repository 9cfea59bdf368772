/* gemm_fast_format.c: the fast kernel of acc=FORMAT with round to nearest
 * even: each step c = round_fmt(c + p) by one double addition of a magic
 * constant where that is exact, else the reference step
 * (exmy__round_sum2); pieces promoted into fp32 as the reference, then the
 * element epilogue. */
#include "emulate/gemm_kernels.h"
#include "formats/internal.h"

#include <math.h>
#include <string.h>

/* c = round_fmt(c + p) as exmy__round_sum2 does it, faster where it is easy:
 * when c + p is exact in double (the 2Sum error is zero) and rounds to a
 * nonzero finite value of the format, that value is c + p rounded to nearest
 * even on the grid 2^(max(e, emin) - M) (e = floor(log2|c + p|)), which one
 * double addition of a magic constant does.  Zeros, overflow, inexact sums
 * and non-finite values take the reference step. */
typedef struct fmt_fast {
  const exmy_format *f;
  const exmy_rounding *r;
  const double *lut;
  double vmax;
  int emin, mbits;
} fmt_fast;

static int format_fast_applies(const gemm_plan *p) {
  const exmy_format *f = &p->acc.acc_fmt;
  const exmy_rounding *r = &p->acc.acc_rnd;
  return p->acc.kind == EXMY_ACCUM_FORMAT && r->mode == EXMY_RNE && !r->ftz && !r->daz && f->is_signed &&
         f->has_zero && f->ebits >= 1 && f->mbits <= 50 && f->emin - f->mbits >= -1000 && f->emax - f->mbits <= 900;
}

static inline double format_step(const fmt_fast *ff, double c, double pr, uint64_t index) {
  const double s = c + pr, bp = s - c, e2 = (c - (s - bp)) + (pr - bp);
  uint64_t bits;
  memcpy(&bits, &s, 8);
  const int ex = (int)((bits >> 52) & 0x7ff);
  if (e2 == 0 && ex != 0 && ex != 0x7ff) {
    int e = ex - 1023;
    if (e < ff->emin) e = ff->emin;
    const double q = ldexp(1.0, e - ff->mbits), magic = 1.5 * 0x1p52 * q;
    const double r = (s + magic) - magic;
    if (r != 0 && fabs(r) <= ff->vmax) return r;
  }
  const uint64_t code = exmy__round_sum2(ff->f, ff->r, c, pr, index, NULL);
  return ff->lut ? ff->lut[code] : exmy_decode(ff->f, code);
}

static float format_piece(const gemm_plan *p, const fmt_fast *ff, size_t i, size_t j, size_t l0, size_t l1) {
  const uint64_t base = ((uint64_t)i * p->n + j) * p->k;
  double c = 0.0;
  for (size_t l = l0; l < l1; l++) c = format_step(ff, c, exmy__gemm_prod(p, i, j, l), base + l);
  return (float)c;
}

int exmy__gemm_fast_format(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  if (!format_fast_applies(p)) return 0;
  const exmy_format *f = &p->acc.acc_fmt;
  const fmt_fast ff = {f, &p->acc.acc_rnd, p->acc_lut, exmy_decode(f, f->max_mag), f->emin, f->mbits};
  const size_t k = p->k;
  const int pieces = p->acc.chunk || p->style == GEMM_PROMOTE;
  unsigned fl = 0;
  float am = 0.0f;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : fl) reduction(max : am)
  for (size_t i = 0; i < p->m; i++) {
    unsigned f1 = 0;
    for (size_t j = 0; j < p->n; j++) {
      float P;
      if (!pieces) {
        P = format_piece(p, &ff, i, j, 0, k);
      } else { /* as the reference: pieces promoted into fp32 */
        P = 0.0f;
        for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
          l1 = exmy__gemm_piece_end(p, l0);
          P = fmaf(exmy__gemm_promote_w(p, i, j, l0), format_piece(p, &ff, i, j, l0, l1), P);
        }
      }
      am = fmaxf(am, exmy__gemm_epilogue(p, i, j, P, &f1));
    }
    fl |= f1;
  }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
  return 1;
}
