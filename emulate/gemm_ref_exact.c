/* gemm_ref_exact.c: the reference of the exact model (docs/gemm.md): every
 * product a * sa * b * sb summed without error in a fixed-point accumulator,
 * then alpha, C and scale_d applied exactly (GMP) and D rounded once. */
#include "emulate/gemm_ref_exact.h"
#include "emulate/gemm_epilogue.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <gmp.h>
#include <math.h>
#include <string.h>

/* Fixed-point accumulator: W two's-complement limbs, bit 0 worth 2^lsb. */
typedef struct kacc {
  uint64_t *limb;
  int w, lsb;
} kacc;

static void kacc_add(kacc *a, u128 m, int neg, int q) {
  if (!m) return;
  const int o = q - a->lsb, li = o >> 6, sh = o & 63;
  uint64_t part[3];
  part[0] = (uint64_t)m << sh;
  part[1] = sh ? (uint64_t)(m >> (64 - sh)) : (uint64_t)(m >> 64);
  part[2] = sh ? (uint64_t)((m >> 64) >> (64 - sh)) : 0;
  if (!neg) {
    unsigned carry = 0;
    int t;
    for (t = 0; t < 3 && li + t < a->w; t++) {
      const uint64_t x = a->limb[li + t], y = part[t];
      const uint64_t s = x + y + carry;
      carry = (s < x) || (carry && s == x);
      a->limb[li + t] = s;
    }
    for (t = li + 3; carry && t < a->w; t++) carry = ++a->limb[t] == 0;
  } else {
    unsigned borrow = 0;
    int t;
    for (t = 0; t < 3 && li + t < a->w; t++) {
      const uint64_t x = a->limb[li + t], y = part[t];
      const uint64_t d = x - y - borrow;
      borrow = (x < y) || (borrow && x == y);
      a->limb[li + t] = d;
    }
    for (t = li + 3; borrow && t < a->w; t++) borrow = a->limb[t]-- == 0;
  }
}

static void mpz_mul_float(mpz_t z, int *lsb, float x) {
  int q;
  const uint64_t m = exmy__float_parts(x, &q);
  mpz_mul_ui(z, z, (unsigned long)m);
  if (x < 0) mpz_neg(z, z);
  *lsb += q;
}

/* Exact value z * 2^lsb: sign, 64 leading bits with sticky, exponent. */
static uint64_t mpz_top64(const mpz_t z, int lsb, int *e2) {
  const size_t L = mpz_sizeinbase(z, 2);
  mpz_t t;
  mpz_init(t);
  mpz_abs(t, z);
  uint64_t sig;
  if (L <= 64) {
    sig = 0;
    mpz_export(&sig, NULL, -1, 8, 0, 0, t);
    *e2 = lsb;
  } else {
    const size_t sh = L - 64;
    const int sticky = mpz_scan1(t, 0) < sh;
    mpz_tdiv_q_2exp(t, t, sh);
    sig = 0;
    mpz_export(&sig, NULL, -1, 8, 0, 0, t);
    sig |= (uint64_t)sticky;
    *e2 = lsb + (int)sh;
  }
  mpz_clear(t);
  return sig;
}

static float f32_of_exact(const gemm_plan *p, const mpz_t z, int lsb) {
  const exmy_rounding r = exmy_rounding_default();
  if (mpz_sgn(z) == 0) return 0.0f;
  int e2;
  const uint64_t sig = mpz_top64(z, lsb, &e2);
  return exmy__f32_from_bits((uint32_t)exmy_round_pack(&p->f32, &r, 0, sig, e2, 0, NULL));
}

/* Bounds of the accumulator for this plan: every term a*sa*b*sb. */
static void kacc_bounds(const gemm_plan *p, int *lsb, int *w) {
  const exmy_format *fa = &p->A->fmt, *fb = &p->B->fmt;
  const int lo = (fa->emin - fa->mbits) + (fb->emin - fb->mbits) - 2 * 149;
  const int hi = (fa->emax + 1) + (fb->emax + 1) + 2 * 129;
  *lsb = lo;
  *w = (hi - lo + 66 + 63) / 64 + 1;
}

static int exact_sum(const gemm_plan *p, size_t i, size_t j, kacc *K, int *special, double *sval) {
  int nan = 0, pinf = 0, ninf = 0;
  memset(K->limb, 0, (size_t)K->w * sizeof(uint64_t));
  const size_t k = p->k, ns = p->nseg;
  for (size_t l = 0; l < k; l++) {
    const double a = p->ad[i * k + l], b = p->bd[j * k + l];
    const size_t s = p->style == GEMM_OUTER ? 0 : l / p->seg;
    const float sa = p->as[i * ns + s], sb = p->bs[j * ns + s];
    /* a NaN scale (E8M0 0xFF) makes its block NaN, a zero element's product too */
    if (!isfinite(a) || !isfinite(b) || !isfinite(sa) || !isfinite(sb)) {
      const double v = a * b * (double)sa * (double)sb;
      if (isnan(v)) nan = 1;
      else if (v > 0) pinf = 1;
      else ninf = 1;
      continue;
    }
    if (a == 0 || b == 0) continue;
    int qa, qb, q1, q2;
    const uint64_t ma = exmy__split_double(a, &qa), mb = exmy__split_double(b, &qb);
    const uint64_t m1 = exmy__float_parts(sa, &q1), m2 = exmy__float_parts(sb, &q2);
    /* strip trailing zeros so the 4-way product fits 128 bits (<= 24+24+24+24 significant bits) */
    const int za = __builtin_ctzll(ma), zb = __builtin_ctzll(mb);
    if (!m1 || !m2) continue;
    const int z1 = __builtin_ctzll(m1), z2 = __builtin_ctzll(m2);
    const u128 m = ((u128)(ma >> za) * (mb >> zb)) * ((u128)(m1 >> z1) * (m2 >> z2));
    kacc_add(K, m, ((a < 0) ^ (b < 0) ^ (sa < 0) ^ (sb < 0)) != 0, qa + za + qb + zb + q1 + z1 + q2 + z2);
  }
  *special = nan || (pinf && ninf) ? 2 : (pinf || ninf) ? 1 : 0;
  *sval = *special == 2 ? NAN : pinf ? INFINITY : -INFINITY;
  return 0;
}

float exmy__gemm_exact_elem(const gemm_plan *p, size_t i, size_t j, unsigned *flags) {
  int lsb, w;
  kacc_bounds(p, &lsb, &w);
  uint64_t limbs[w];
  kacc K = {limbs, w, lsb};
  int special;
  double sval;
  exact_sum(p, i, j, &K, &special, &sval);
  const double cval = p->use_c ? exmy__gemm_c_value(p, i, j) : 0.0;
  const uint64_t index = (uint64_t)i * p->n + j;
  /* alpha * tA * tB (OUTER and PROMOTE scales are inside the terms) */
  if (special || !isfinite(cval)) {
    const double ab = special ? (double)p->alpha * (double)p->tA * (double)p->tB * sval : 0.0;
    const double v = ab + (p->use_c ? (double)p->beta * (double)p->scale_c * cval : 0.0);
    const double vd = v * (double)p->scale_d;
    exmy_code_set(p->d_fmt, p->d, index, exmy_from_f64(p->d_fmt, &p->d_rnd, isnan(vd) ? (double)NAN : vd, index, flags));
    return isnan(v) ? 0.0f : (float)fabs(v);
  }
  mpz_t z, cz;
  mpz_init(z);
  mpz_init(cz);
  const int negsum = (int)(limbs[w - 1] >> 63);
  if (negsum)
    for (int t = 0; t < w; t++) limbs[t] = ~limbs[t];
  mpz_import(z, (size_t)w, -1, 8, 0, 0, limbs);
  if (negsum) {
    mpz_add_ui(z, z, 1);
    mpz_neg(z, z);
  }
  int zl = lsb;
  const int sum_neg = mpz_sgn(z) < 0;
  mpz_mul_float(z, &zl, p->alpha);
  mpz_mul_float(z, &zl, p->tA);
  mpz_mul_float(z, &zl, p->tB);
  const int ab_zero = mpz_sgn(z) == 0;
  int c_zero = 1, c_neg = 0;
  if (p->use_c && cval != 0 && p->scale_c != 0) {
    int qc;
    const uint64_t mc = exmy__split_double(cval, &qc);
    mpz_set_ui(cz, (unsigned long)mc);
    if (cval < 0) mpz_neg(cz, cz);
    int cl = qc;
    mpz_mul_float(cz, &cl, p->beta);
    mpz_mul_float(cz, &cl, p->scale_c);
    /* align the two and add */
    if (cl < zl) {
      mpz_mul_2exp(z, z, (mp_bitcnt_t)(zl - cl));
      zl = cl;
    } else {
      mpz_mul_2exp(cz, cz, (mp_bitcnt_t)(cl - zl));
    }
    mpz_add(z, z, cz);
    c_zero = 0;
  } else if (p->use_c) {
    c_neg = ((p->beta < 0) ^ (signbit(cval) != 0) ^ (p->scale_c < 0)) != 0;
  }
  float amax;
  if (mpz_sgn(z) == 0) {
    /* IEEE signs of an exact zero: the sum (+0 when zero) times alpha. */
    const int ab_neg = (p->alpha < 0) != sum_neg;
    int neg;
    if (!ab_zero || !c_zero) neg = p->d_rnd.mode == EXMY_RDN;
    else if (!p->use_c) neg = ab_neg;
    else if (ab_neg == c_neg) neg = ab_neg;
    else neg = p->d_rnd.mode == EXMY_RDN;
    if (p->scale_d < 0) neg = !neg;
    exmy_code_set(p->d_fmt, p->d, index, exmy_round_pack(p->d_fmt, &p->d_rnd, neg, 0, 0, index, flags));
    amax = 0.0f;
  } else {
    amax = f32_of_exact(p, z, zl);
    mpz_mul_float(z, &zl, p->scale_d);
    if (mpz_sgn(z) == 0) {
      exmy_code_set(p->d_fmt, p->d, index, exmy_round_pack(p->d_fmt, &p->d_rnd, 0, 0, 0, index, flags));
    } else {
      int e2;
      const uint64_t sig = mpz_top64(z, zl, &e2);
      exmy_code_set(p->d_fmt, p->d, index,
                    exmy_round_pack(p->d_fmt, &p->d_rnd, mpz_sgn(z) < 0, sig, e2, index, flags));
    }
  }
  mpz_clear(z);
  mpz_clear(cz);
  return amax;
}
