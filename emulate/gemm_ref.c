/* gemm_ref.c: the plain-C reference of the fp32, pairwise, FORMAT and tc
 * accumulation models (docs/gemm.md), one output element at a time, and the
 * reference driver over rows (tc: the instruction layer's fused sums, through
 * gemm_tc.c).  The fast kernels (gemm_fast*.c) are checked
 * bit for bit against this; the exact model is in gemm_ref_exact.c. */
#include "emulate/gemm_ref.h"
#include "emulate/gemm_ref_exact.h"
#include "emulate/gemm_round.h"
#include "emulate/gemm_epilogue.h"
#include "emulate/gemm_bits.h"
#include "emulate/gemm_tc.h"
#include "formats/internal.h"

#include <math.h>

/* ---- the models on one piece [l0, l1) ------------------------------------ */

static inline float opa(const gemm_plan *p, size_t i, size_t l) {
  const double a = p->ad[i * p->k + l];
  return (float)(p->style == GEMM_INNER ? a * (double)p->as[i * p->nseg + l / p->seg] : a);
}

static inline float opb(const gemm_plan *p, size_t j, size_t l) {
  const double b = p->bd[j * p->k + l];
  return (float)(p->style == GEMM_INNER ? b * (double)p->bs[j * p->nseg + l / p->seg] : b);
}

static float pairwise(const gemm_plan *p, size_t i, size_t j, size_t l0, size_t n) {
  if (n == 0) return 0.0f;
  if (n == 1) return fmaf(opa(p, i, l0), opb(p, j, l0), 0.0f);
  const size_t h = n / 2;
  return pairwise(p, i, j, l0, h) + pairwise(p, i, j, l0 + h, n - h);
}

static float piece(const gemm_plan *p, const gemm_tc *tc, size_t i, size_t j, size_t l0, size_t l1) {
  switch (p->acc.kind) {
  case EXMY_ACCUM_FP32: {
    float c = 0.0f;
    for (size_t l = l0; l < l1; l++) c = fmaf(opa(p, i, l), opb(p, j, l), c);
    return c;
  }
  case EXMY_ACCUM_FP32_PAIRWISE:
    return pairwise(p, i, j, l0, l1 - l0);
  case EXMY_ACCUM_FORMAT: {
    const exmy_format *f = &p->acc.acc_fmt;
    double c = 0.0;
    const uint64_t base = ((uint64_t)i * p->n + j) * p->k;
    for (size_t l = l0; l < l1; l++) {
      const uint64_t code = exmy__round_sum2(f, &p->acc.acc_rnd, c, exmy__gemm_prod(p, i, j, l), base + l, NULL);
      c = p->acc_lut ? p->acc_lut[code] : exmy_code_to_f64(f, code);
    }
    return (float)c;
  }
  case EXMY_ACCUM_TC: /* the instruction layer's fused sums (gemm_tc.c) */
    return exmy__gemm_tc_piece(p, tc, i, j, l0, l1);
  default:
    return NAN; /* exact has no fp32 piece */
  }
}

/* The model's fp32 P of output (i, j): pieces promoted into fp32. */
static float ref_p(const gemm_plan *p, const gemm_tc *tc, size_t i, size_t j) {
  const size_t k = p->k, ch = p->acc.chunk;
  if (!ch && p->style != GEMM_PROMOTE) return piece(p, tc, i, j, 0, k);
  float F = 0.0f;
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = exmy__gemm_piece_end(p, l0);
    F = fmaf(exmy__gemm_promote_w(p, i, j, l0), piece(p, tc, i, j, l0, l1), F);
  }
  return F;
}

/* ---- the driver ------------------------------------------------------------ */

void exmy__gemm_ref_rows(const gemm_plan *p, size_t i0, size_t i1, unsigned *flags, float *amax) {
  unsigned fl = 0;
  float am = 0.0f;
  gemm_tc tc;
  if (p->acc.kind == EXMY_ACCUM_TC && exmy__gemm_tc_init(p, &tc)) return; /* cannot happen: built-in format names */
  for (size_t i = i0; i < i1; i++)
    for (size_t j = 0; j < p->n; j++) {
      const float z = p->acc.kind == EXMY_ACCUM_EXACT ? exmy__gemm_exact_elem(p, i, j, &fl)
                                                      : exmy__gemm_epilogue(p, i, j, ref_p(p, &tc, i, j), &fl);
      am = fmaxf(am, z);
    }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}
