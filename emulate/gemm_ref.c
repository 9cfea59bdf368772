/* gemm_ref.c: the plain-C reference of the fp32, pairwise, FORMAT and tc
 * accumulation models (docs/gemm.md), one output element at a time, and the
 * reference driver over rows.  The fast kernels (gemm_fast*.c) are checked
 * bit for bit against this; the exact model is in gemm_ref_exact.c. */
#include "emulate/gemm_ref.h"
#include "emulate/gemm_ref_exact.h"
#include "emulate/gemm_round.h"
#include "emulate/gemm_epilogue.h"
#include "emulate/gemm_bits.h"
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

/* trunc or round-nearest-even of m * 2^sh. */
static inline u128 align_term(u128 m, int sh, int rne) {
  if (sh >= 0) return m << sh;
  const int r = -sh;
  if (r > 120) return 0; /* m < 2^100: below half an ulp */
  u128 q = m >> r;
  if (rne) {
    const u128 rem = m & (((u128)1 << r) - 1), half = (u128)1 << (r - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
  }
  return q;
}

/* Product l of element (i, j) as significand m (scaled by 2^-mt) and nominal exponent e. */
static u128 tc_term(const gemm_plan *p, size_t i, size_t j, size_t l, int *e) {
  uint64_t ma, mb;
  int ea, eb;
  exmy__gemm_nominal(p->ad[i * p->k + l], p->a_emin, p->a_mbits, &ma, &ea);
  exmy__gemm_nominal(p->bd[j * p->k + l], p->b_emin, p->b_mbits, &mb, &eb);
  u128 m = (u128)ma * mb;
  *e = ea + eb;
  if (p->style == GEMM_INNER) {
    const size_t s = l / p->seg;
    uint64_t m1, m2;
    int e1, e2;
    exmy__gemm_nominal(p->as[i * p->nseg + s], p->s_emin, p->s_mbits, &m1, &e1);
    exmy__gemm_nominal(p->bs[j * p->nseg + s], p->s_emin, p->s_mbits, &m2, &e2);
    m *= (u128)m1 * m2;
    *e += e1 + e2;
  }
  return m;
}

/* One fused group: c + sum of products l0..l1-1 (docs/gemm.md, tc steps 1-4). */
static float tc_group(const gemm_plan *p, float c, size_t i, size_t j, size_t l0, size_t l1) {
  double chk = 0;
  for (size_t l = l0; l < l1; l++) chk += exmy__gemm_prod(p, i, j, l);
  chk += (double)c;
  if (isnan(chk)) return exmy__f32_from_bits(0x7FFFFFFFu);
  if (isinf(chk)) return (float)chk;
  const int F = p->acc.tc_frac, rne = p->acc.tc_align_rne;
  const int mt = p->a_mbits + p->b_mbits + (p->style == GEMM_INNER ? 2 * p->s_mbits : 0);
  uint64_t mc;
  int ec;
  exmy__gemm_nominal(c, -126, 23, &mc, &ec);
  const int ez = p->acc.tc_zero; /* v2: a zero term's exponent; 0: v1 (-126 per zero element) */
  if (ez && mc == 0) ec = ez;
  int emax = ec;
  for (size_t l = l0; l < l1; l++) {
    int e;
    if (tc_term(p, i, j, l, &e) == 0 && ez) e = ez;
    if (e > emax) emax = e;
  }
  i128 S = 0;
  {
    const u128 t = align_term(mc, F + ec - emax - 23, rne);
    S += c < 0 ? -(i128)t : (i128)t;
  }
  for (size_t l = l0; l < l1; l++) {
    int e;
    const u128 m = tc_term(p, i, j, l, &e);
    if (m == 0) continue; /* a zero term adds nothing (its v1 e may lie above a v2 emax) */
    const u128 t = align_term(m, F + e - emax - mt, rne);
    S += (signbit(p->ad[i * p->k + l]) != 0) != (signbit(p->bd[j * p->k + l]) != 0) ? -(i128)t : (i128)t;
  }
  if (S == 0) return 0.0f;
  const int neg = S < 0;
  const u128 U = neg ? (u128)(-S) : (u128)S;
  const int E = exmy__bitlen128(U) - 1 + emax - F;
  const int Ep = E < -126 ? -126 : E;
  const int Q = Ep - p->acc.tc_out_frac;
  const int sh = (emax - F) - Q;
  const u128 R = align_term(U, sh, p->acc.tc_norm_rne);
  if (R == 0) return 0.0f; /* cut to zero: +0, as MMA-Sim's integer truncation */
  const double v = ldexp((double)R, Q);
  if (v >= 0x1p128) return neg ? -INFINITY : INFINITY;
  return (float)(neg ? -v : v);
}

static float piece(const gemm_plan *p, size_t i, size_t j, size_t l0, size_t l1) {
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
  case EXMY_ACCUM_TC: {
    float c = 0.0f;
    const size_t g = (size_t)p->acc.tc_group;
    for (size_t g0 = l0; g0 < l1; g0 += g) c = tc_group(p, c, i, j, g0, g0 + g < l1 ? g0 + g : l1);
    return c;
  }
  default:
    return NAN; /* exact has no fp32 piece */
  }
}

/* The model's fp32 P of output (i, j): pieces promoted into fp32. */
static float ref_p(const gemm_plan *p, size_t i, size_t j) {
  const size_t k = p->k, ch = p->acc.chunk;
  if (!ch && p->style != GEMM_PROMOTE) return piece(p, i, j, 0, k);
  float F = 0.0f;
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = exmy__gemm_piece_end(p, l0);
    F = fmaf(exmy__gemm_promote_w(p, i, j, l0), piece(p, i, j, l0, l1), F);
  }
  return F;
}

/* ---- the driver ------------------------------------------------------------ */

void exmy__gemm_ref_rows(const gemm_plan *p, size_t i0, size_t i1, unsigned *flags, float *amax) {
  unsigned fl = 0;
  float am = 0.0f;
  for (size_t i = i0; i < i1; i++)
    for (size_t j = 0; j < p->n; j++) {
      const float z = p->acc.kind == EXMY_ACCUM_EXACT ? exmy__gemm_exact_elem(p, i, j, &fl)
                                                      : exmy__gemm_epilogue(p, i, j, ref_p(p, i, j), &fl);
      am = fmaxf(am, z);
    }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}
