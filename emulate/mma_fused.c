/* mma_fused.c: the fused sums of the matrix-unit datapaths (docs/mma.md),
 * one piece of L products and C at a time, bit for bit as the row of the
 * datapath table (emulate/mma_table.c) says: MMA-Sim v2's algorithms,
 * written from the paper's description in integers, no floating-point
 * arithmetic in the sums.  The one funnel: exmy_mma (mma.c) chains these
 * over an instruction's k, the GEMM's tc accumulation (gemm_ref.c) over its
 * groups, so a fix here reaches both. */
#include "emulate/mma_internal.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <math.h>
#include <string.h>

/* A term: |value| = m * 2^(e - mt); e is the alignment exponent. */
typedef struct term {
  u128 m;
  int e, mt, neg;
} term;

/* |x| = m * 2^(e - mbits), e = max(floor(log2|x|), emin) (x finite). */
static void nominal(double x, const exmy_format *f, term *t) {
  t->neg = signbit(x) != 0;
  t->mt = f->mbits;
  if (x == 0) {
    t->m = 0;
    t->e = f->emin;
    return;
  }
  int ex;
  frexp(fabs(x), &ex);
  ex -= 1;
  if (ex < f->emin) ex = f->emin;
  t->e = ex;
  t->m = (u128)ldexp(fabs(x), f->mbits - ex);
}

/* The product of two terms (exponents added, not renormalized). */
static term mul(const term *x, const term *y) {
  term t = {x->m * y->m, x->e + y->e, x->mt + y->mt, x->neg != y->neg};
  return t;
}

/* m * 2^sh cut toward zero, or (rne) rounded to nearest even. */
static u128 shift_mag(u128 m, int sh, int rne) {
  if (sh >= 0) return sh > 100 ? 0 : m << sh; /* callers keep m << sh in range */
  const int r = -sh;
  if (r >= 128) return 0; /* m < 2^100: below half a unit too */
  u128 q = m >> r;
  if (rne) {
    const u128 rem = m & (((u128)1 << r) - 1), half = (u128)1 << (r - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
  }
  return q;
}

static i128 shift_floor(i128 v, int sh) {
  if (sh >= 0) return v * ((i128)1 << sh); /* not v << sh: v may be negative */
  if (-sh >= 127) return v < 0 ? -1 : 0;
  return v >> -sh; /* arithmetic shift: floor */
}

/* Round sign * |S| * 2^q into fmt through the rounding core (|S| cut to 62
 * bits with a sticky bit first). */
static uint64_t pack(const exmy_format *fmt, exmy_round_mode mode, int neg, u128 U, int q) {
  const int bl = exmy__bitlen128(U);
  if (bl > 62) {
    const int sh = bl - 62;
    const int sticky = (U & (((u128)1 << sh) - 1)) != 0;
    U = (U >> sh) | (u128)sticky;
    q += sh;
  }
  exmy_rounding r = exmy_rounding_default();
  r.mode = mode;
  return exmy_round_pack(fmt, &r, neg, (uint64_t)U, q, 0, NULL);
}

static uint64_t nan_code(const exmy_format *d) { return d->bits == 16 ? 0x7FFFu : 0x7FFFFFFFu; }

/* The inf code of D's format. */
static uint64_t inf_code(const exmy_format *d, int neg) { return (neg ? d->sign_mask : 0) | d->inf_mag; }

/* |S| * 2^q cut to `out` fraction bits below 2^max(floor(log2), -126) (out_rne:
 * nearest even), as an fp32 code; 2^128 or more is inf, a value cut to zero
 * keeps its sign (MMA-Sim v2's float truncation). */
static uint64_t out_fp32(int neg, u128 U, int q, int out, int out_rne) {
  int E = exmy__bitlen128(U) - 1 + q;
  if (E < -126) E = -126;
  const int Q = E - out;
  const u128 R = shift_mag(U, q - Q, out_rne);
  const uint32_t sign = neg ? 0x80000000u : 0;
  if (R == 0) return sign;
  if (exmy__bitlen128(R) - 1 + Q >= 128) return sign | 0x7F800000u;
  uint32_t bits;
  const float v = (float)ldexp((double)R, Q); /* R < 2^25: exact */
  memcpy(&bits, &v, 4);
  return sign | bits;
}

/* The output conversion rho of S * 2^q (T, ST, GST). */
static uint64_t rho_out(const mma_unit *u, i128 S, int q, int negzero) {
  const exmy_format *d = u->d;
  if (S == 0) return negzero ? d->sign_mask : 0;
  const int neg = S < 0;
  const u128 U = neg ? (u128)(-S) : (u128)S;
  const int top = exmy__bitlen128(U) - 1 + q; /* floor(log2 |v|) */
  switch (u->dp->rho) {
  case MMA_RZ_FP32:
    if (top >= 128) return inf_code(d, neg); /* overflow is inf, even truncating */
    return pack(d, EXMY_RTZ, neg, U, q);
  case MMA_RZ_E8M13: {
    if (top >= 128) return inf_code(d, neg);
    const uint64_t c = pack(&u->e8m13, EXMY_RTZ, neg, U, q);
    exmy_rounding r = exmy_rounding_default();
    return exmy_from_f64(d, &r, exmy_code_to_f64(&u->e8m13, c), 0, NULL); /* exact */
  }
  case MMA_OUT_FP32:
    return out_fp32(neg, U, q, u->dp->out, u->dp->out_rne);
  default:
    return pack(d, EXMY_RNE, neg, U, q); /* RNE_FP16, RNE_FP32: overflow rounds to inf */
  }
}

/* ---- a piece's elements ----------------------------------------------------- */

static double pa(const mma_piece *p, int l) { return p->a[l]; }
static double pb(const mma_piece *p, int l) { return p->b[(size_t)l * p->bstride]; }
static double psa(const mma_unit *u, const mma_piece *p, int l) { return p->sa[(p->s0 + (size_t)l) / (size_t)u->block]; }
static double psb(const mma_unit *u, const mma_piece *p, int l) {
  return p->sb[(p->s0 + (size_t)l) / (size_t)u->block * p->sbstride];
}

/* NaN (1) or inf (2, sign in *neg) of the IEEE sum of the products and c; 0 finite. */
static int special(const mma_unit *u, const mma_piece *p, int *neg) {
  double s = p->c;
  for (int l = 0; l < p->L; l++) {
    double v = pa(p, l) * pb(p, l);
    if (u->sf) v = v * psa(u, p, l) * psb(u, p, l);
    if (u->dp->algo == MMA_TR && isfinite(v) && v != 0) { /* TR: a product of 2^128 or more is inf */
      term ta, tb;
      nominal(pa(p, l), u->af, &ta);
      nominal(pb(p, l), u->bf, &tb);
      const term t = mul(&ta, &tb);
      if (t.e + (t.m >> (t.mt + 1) != 0) >= 128) v = copysign(INFINITY, v);
    }
    s += v;
  }
  if (isnan(s)) return 1;
  if (isinf(s)) {
    *neg = s < 0;
    return 2;
  }
  return 0;
}

/* ---- the algorithms ------------------------------------------------------------ */

/* Product l as a term, its scales inside (ST); a zero product has v2's fixed
 * exponent, or v1's -126 per zero factor (the scales' exponents added, a zero
 * scale -126 too). */
static term prod_term(const mma_unit *u, const mma_piece *p, int l) {
  term ta, tb, t;
  nominal(pa(p, l), u->af, &ta);
  nominal(pb(p, l), u->bf, &tb);
  t = mul(&ta, &tb);
  int ev1 = (ta.m ? ta.e : -126) + (tb.m ? tb.e : -126);
  if (u->sf) {
    term s1, s2;
    nominal(psa(u, p, l), u->sf, &s1);
    nominal(psb(u, p, l), u->sf, &s2);
    s1.neg = s2.neg = 0;
    const term v = mul(&t, &s1);
    t = mul(&v, &s2);
    ev1 += (s1.m ? s1.e : -126) + (s2.m ? s2.e : -126);
  }
  if (t.m == 0) t.e = u->zero_v1 ? ev1 : u->dp->e_zero;
  return t;
}

static term c_term(const mma_unit *u, const mma_piece *p) {
  term c;
  nominal(p->c, p->cf, &c);
  if (c.m == 0) c.e = u->zero_v1 ? -126 : u->dp->e_zero;
  return c;
}

/* One term cut (or rounded) to F fraction bits below 2^emax, added to *S;
 * *nz stays 1 while every cut term is a negative zero (MMA-Sim's float sum is
 * then -0). */
static void add_cut(const term *t, int F, int emax, int rne, i128 *S, int *nz) {
  const u128 v = shift_mag(t->m, F + t->e - emax - t->mt, rne);
  *S += t->neg ? -(i128)v : (i128)v;
  *nz &= v == 0 && t->neg;
}

/* T and ST: products (with their scales) and c in one truncated fused sum.
 * Two passes over the products (largest exponent, then the sum); the terms
 * of up to 64 products are kept between them, longer pieces (the GEMM's g up
 * to 4096) are decomposed again. */
static uint64_t t_fdpa(const mma_unit *u, const mma_piece *p) {
  const mma_datapath *dp = u->dp;
  const term c = c_term(u, p);
  term buf[64];
  const int keep = p->L <= 64;
  int emax = c.e;
  for (int l = 0; l < p->L; l++) {
    const term t = prod_term(u, p, l);
    if (keep) buf[l] = t;
    if (t.e > emax) emax = t.e;
  }
  i128 S = 0;
  int nz = 1;
  for (int l = 0; l < p->L; l++) {
    const term t = keep ? buf[l] : prod_term(u, p, l);
    add_cut(&t, dp->F, emax, dp->align_rne, &S, &nz);
  }
  add_cut(&c, dp->F, emax, dp->align_rne, &S, &nz);
  return rho_out(u, S, emax - dp->F, nz);
}

/* GST: groups of G products summed exactly and scaled; a group is aligned by
 * its scales' exponents alone (e_zero when all its products or its scale are
 * zero).  Groups end at multiples of G along k (s0 + l), so a piece that
 * starts inside a scale block never mixes two blocks' scales. */
static uint64_t gst_fdpa(const mma_unit *u, const mma_piece *p) {
  const mma_datapath *dp = u->dp;
  term t[70];
  int n = 0, emax = INT32_MIN;
  /* elements as integers in units 2^(emin - mbits) */
  const int ua = u->af->emin - u->af->mbits, ub = u->bf->emin - u->bf->mbits;
  for (int g0 = 0, g1; g0 < p->L && n < 69; g0 = g1, n++) {
    g1 = g0 + dp->G - (int)((p->s0 + (size_t)g0) % (size_t)dp->G);
    if (g1 > p->L) g1 = p->L;
    i128 P = 0;
    int allzero = 1, allneg = 1;
    for (int l = g0; l < g1; l++) {
      const double va = pa(p, l), vb = pb(p, l);
      const i128 ia = (i128)ldexp(va, -ua), ib = (i128)ldexp(vb, -ub);
      P += ia * ib;
      allzero &= ia * ib == 0;
      allneg &= (signbit(va) != 0) != (signbit(vb) != 0);
    }
    term s1, s2;
    nominal(psa(u, p, g0), u->sf, &s1);
    nominal(psb(u, p, g0), u->sf, &s2);
    const u128 ms = s1.m * s2.m;
    t[n].m = (P < 0 ? (u128)(-P) : (u128)P) * ms;
    t[n].neg = P < 0 || (P == 0 && allzero && allneg); /* float sum of zeros: -0 only if all are */
    t[n].mt = -(ua + ub) + s1.mt + s2.mt;
    t[n].e = allzero || ms == 0 ? dp->e_zero : s1.e + s2.e;
  }
  term c;
  nominal(p->c, p->cf, &c);
  if (c.m == 0) c.e = dp->e_zero;
  t[n++] = c;
  for (int i = 0; i < n; i++)
    if (t[i].e > emax) emax = t[i].e;
  i128 S = 0;
  int nz = 1;
  for (int i = 0; i < n; i++) add_cut(&t[i], dp->F, emax, 0, &S, &nz);
  return rho_out(u, S, emax - dp->F, nz);
}

/* Truncated sum of the nonzero products of indices l0, l0+step, ... (TR/GTR's
 * first stage): S in units 2^(*e - F); *e = -999 when there are none. */
static i128 tr_sum(const term *t, int n, int step, int start, int F, int *e, int *negzero) {
  int emax = -999, nz = 1;
  for (int i = start; i < n; i += step)
    if (t[i].m && t[i].e > emax) emax = t[i].e;
  i128 S = 0;
  for (int i = start; i < n; i += step) {
    if (!t[i].m) {
      nz &= t[i].neg;
      continue;
    }
    const u128 v = shift_mag(t[i].m, F + t[i].e - emax - t[i].mt, 0);
    S += t[i].neg ? -(i128)v : (i128)v;
    nz &= v == 0 && t[i].neg;
  }
  *e = emax;
  *negzero = S == 0 && nz;
  return S;
}

/* TR (CDNA3 f16/bf16/xf32) and GTR (CDNA3 FP8, even and odd products apart):
 * the product sum floored to F2+1 bits beside c floored to F bits, the total
 * normalized and floored to F2 bits, then rounded to fp32. */
static uint64_t tr_fdpa(const mma_unit *u, const mma_piece *p) {
  const mma_datapath *dp = u->dp;
  const int F = dp->F, F2 = dp->F2;
  term t[64];
  for (int l = 0; l < p->L; l++) {
    term ta, tb;
    nominal(pa(p, l), u->af, &ta);
    nominal(pb(p, l), u->bf, &tb);
    t[l] = mul(&ta, &tb);
  }
  int e_dot, dneg;
  i128 D0;
  if (dp->algo == MMA_GTR) {
    int ee, eo, ne, no;
    const i128 Se = tr_sum(t, p->L, 2, 0, F, &ee, &ne), So = tr_sum(t, p->L, 2, 1, F, &eo, &no);
    e_dot = ee > eo ? ee : eo;
    const i128 fe = shift_floor(Se, ee - e_dot), fo = shift_floor(So, eo - e_dot);
    D0 = fe + fo;
    /* floor(-0) = -0, floor(+tiny) = +0; -0 + -0 = -0 */
    dneg = D0 == 0 && (fe == 0 && (Se == 0 ? ne : 0)) && (fo == 0 && (So == 0 ? no : 0));
  } else {
    D0 = tr_sum(t, p->L, 1, 0, F, &e_dot, &dneg);
  }
  term c;
  nominal(p->c, p->cf, &c);
  const int e_max = e_dot > c.e ? e_dot : c.e;
  const i128 D1 = shift_floor(D0, e_dot - e_max + F2 + 1 - F); /* units 2^(e_max - F2 - 1) */
  const int d1neg = D1 == 0 && D0 == 0 && dneg;
  const i128 cv = c.neg ? -(i128)c.m : (i128)c.m;
  i128 C1 = shift_floor(cv, c.e - e_max + F - c.mt); /* units 2^(e_max - F) */
  int c1neg = C1 == 0 && c.m == 0 && c.neg;
  if (dp->algo == MMA_GTR && c.e < e_max - F - 1) C1 = 0, c1neg = 0; /* c dropped: +0 */
  const i128 T = D1 + C1 * ((i128)1 << (F2 + 1 - F));
  const exmy_format *d = u->d;
  if (T == 0) return d1neg && c1neg ? d->sign_mask : 0;
  const int neg = T < 0;
  const u128 U = neg ? (u128)(-T) : (u128)T;
  int E = exmy__bitlen128(U) - 1 + e_max - F2 - 1;
  if (E < -126) E = -126;
  const i128 R = shift_floor(T, (e_max - F2 - 1) - (E - F2)); /* floor to F2 bits below 2^E */
  if (R == 0) return 0; /* floor of a positive tiny value */
  return pack(d, EXMY_RNE, R < 0, R < 0 ? (u128)(-R) : (u128)R, E - F2);
}

/* E (CDNA1): the exact sum of the products and c, rounded once to fp32.  A
 * wide fixed-point integer: 16-bit operands and fp32 c span < 640 bits. */
#define E_LIMBS 20
#define E_LSB (-288) /* exponent of the accumulator's lowest bit (bf16 products reach 2^-266) */
static uint64_t e_fdpa(const mma_unit *u, const mma_piece *p) {
  int64_t acc[E_LIMBS] = {0}; /* 32-bit digits with signed carries */
  term t[65];
  int n = 0;
  for (int l = 0; l < p->L; l++, n++) {
    term ta, tb;
    nominal(pa(p, l), u->af, &ta);
    nominal(pb(p, l), u->bf, &tb);
    t[n] = mul(&ta, &tb);
  }
  nominal(p->c, p->cf, &t[n++]);
  int allneg = 1, anynz = 0;
  for (int i = 0; i < n; i++) {
    allneg &= t[i].neg;
    if (!t[i].m) continue;
    anynz = 1;
    int pos = t[i].e - t[i].mt - E_LSB; /* bit position of m's lowest bit */
    u128 m = t[i].m;
    const int64_t sg = t[i].neg ? -1 : 1;
    int limb = pos / 32, off = pos % 32;
    m <<= off;
    for (; m && limb < E_LIMBS; limb++, m >>= 32) acc[limb] += sg * (int64_t)(uint32_t)m;
  }
  for (int i = 0; i + 1 < E_LIMBS; i++) { /* normalize digits to 0..2^32-1 */
    const int64_t carry = acc[i] >> 32;
    acc[i] -= carry * ((int64_t)1 << 32);
    acc[i + 1] += carry;
  }
  const int neg = acc[E_LIMBS - 1] < 0;
  if (neg) { /* negate the two's complement digits */
    int64_t carry = 1;
    for (int i = 0; i < E_LIMBS; i++) {
      const int64_t v = (int64_t)(~(uint32_t)acc[i]) + carry;
      acc[i] = v & 0xFFFFFFFF;
      carry = v >> 32;
    }
  }
  int top = E_LIMBS - 1;
  while (top >= 0 && acc[top] == 0) top--;
  const exmy_format *d = u->d;
  if (top < 0) return anynz ? 0 : (allneg ? d->sign_mask : 0); /* exact cancellation: +0 */
  /* the top three digits and a sticky bit */
  u128 U = 0;
  int sticky = 0, lo = top - 2 < 0 ? 0 : top - 2;
  for (int i = top; i >= lo; i--) U = (U << 32) | (uint32_t)acc[i];
  for (int i = lo - 1; i >= 0; i--) sticky |= acc[i] != 0;
  const int q = lo * 32 + E_LSB;
  return pack(d, EXMY_RNE, neg, U | (u128)sticky, q);
}

/* FTZ (CDNA2): subnormal inputs flushed to +0; fp32 products and fp32 adds
 * (nearest even), each result's subnormals flushed to a zero of its sign;
 * products added in pairs (P = 2) or as (p0 + p1) + (p2 + p3) (P = 4), each
 * pair or four then added to c in k order. */
static float ftz(float x, int keep_sign) {
  if (fabsf(x) < 0x1p-126f) return keep_sign ? copysignf(0.0f, x) : 0.0f;
  return x;
}

static float ftz_in(double x, const exmy_format *f) {
  return fabs(x) < ldexp(1, f->emin) ? 0.0f : (float)x; /* 16-bit values are exact in fp32 */
}

static uint64_t ftz_fdpa(const mma_unit *u, const mma_piece *p) {
  const int P = u->dp->G;
  float c = ftz((float)p->c, 0);
  float pr[4];
  for (int l0 = 0; l0 < p->L; l0 += P) {
    for (int q = 0; q < P; q++)
      pr[q] = ftz(ftz_in(pa(p, l0 + q), u->af) * ftz_in(pb(p, l0 + q), u->bf), 1);
    float s = ftz(pr[0] + pr[1], 1);
    if (P == 4) s = ftz(s + ftz(pr[2] + pr[3], 1), 1);
    c = ftz(c + s, 1);
  }
  uint32_t bits;
  memcpy(&bits, &c, 4);
  if (isnan(c)) bits = 0x7FC00000u; /* one quiet NaN (the payload is not modelled) */
  return bits;
}

/* ---- the funnel ----------------------------------------------------------------- */

/* Each algorithm of the table: how it sums, and whether NaN and inf are
 * decided before it (by the IEEE sum of the products and c) or fall out of
 * its own IEEE steps; the NaN it gives. */
static const struct {
  uint64_t (*sum)(const mma_unit *u, const mma_piece *p);
  int own_specials;   /* FTZ: fp32 steps, NaN and inf as they fall */
  int nan_f32_quiet;  /* E: 0x7FC00000 (an fp32 sum), else nan_code */
} algos[] = {
  [MMA_T] = {t_fdpa, 0, 0},   [MMA_ST] = {t_fdpa, 0, 0}, [MMA_GST] = {gst_fdpa, 0, 0}, [MMA_TR] = {tr_fdpa, 0, 0},
  [MMA_GTR] = {tr_fdpa, 0, 0}, [MMA_E] = {e_fdpa, 0, 1}, [MMA_FTZ] = {ftz_fdpa, 1, 0},
};

uint64_t exmy__mma_fused(const mma_unit *u, const mma_piece *p) {
  const mma_algo a = u->dp->algo;
  if (!algos[a].own_specials) {
    int neg = 0;
    const int sp = special(u, p, &neg);
    if (sp == 1) return algos[a].nan_f32_quiet ? 0x7FC00000u : nan_code(u->d);
    if (sp == 2) return inf_code(u->d, neg);
  }
  return algos[a].sum(u, p);
}

/* c_last: D = code + c, one add rounded to D's format (nearest even), the
 * exact sum formed in integers.  An operand more than 64 binades below the
 * other's last bit only decides the rounding, so it becomes a sticky unit. */
uint64_t exmy__mma_add_last(const mma_unit *u, uint64_t code, double c, const exmy_format *cf) {
  const exmy_format *d = u->d;
  const double s = exmy_code_to_f64(d, code), t = s + c; /* t only classifies NaN and inf */
  if (isnan(t)) return nan_code(d);
  if (isinf(t)) return inf_code(d, t < 0);
  term x, y;
  nominal(s, d, &x);
  nominal(c, cf, &y);
  if (!x.m && !y.m) return x.neg && y.neg ? d->sign_mask : 0;
  int qx = x.e - x.mt, qy = y.e - y.mt;
  if (!x.m || (y.m && qy > qx)) { /* x: the nonzero term with the higher last bit */
    const term w = x;
    const int qw = qx;
    x = y, y = w, qx = qy, qy = qw;
  }
  const i128 sx = x.neg ? -1 : 1, sy = y.neg ? -1 : 1;
  i128 S;
  int q;
  if (!y.m) S = sx * (i128)x.m, q = qx;
  else if (qx - qy > 64) S = sx * ((i128)x.m << 4) + sy, q = qx - 4;
  else S = sx * ((i128)x.m << (qx - qy)) + sy * (i128)y.m, q = qy;
  if (S == 0) return 0; /* exact cancellation: +0 */
  return pack(d, EXMY_RNE, S < 0, S < 0 ? (u128)(-S) : (u128)S, q);
}

int exmy__mma_unit_init(mma_unit *u, const mma_datapath *dp, const exmy_format *af, const exmy_format *bf,
                        const exmy_format *sf, int block, const exmy_format *d, int zero_v1, char *err, size_t errlen) {
  memset(u, 0, sizeof *u);
  u->dp = dp;
  u->af = af;
  u->bf = bf;
  u->sf = sf;
  u->block = block > 0 ? block : 1;
  u->d = d;
  u->zero_v1 = zero_v1;
  if (exmy_format_parse("e8m13", &u->e8m13, err, errlen)) return -1;
  if (dp->widen) {
    if (exmy_format_parse(dp->widen, &u->wide, err, errlen)) return -1;
    u->af = u->bf = &u->wide; /* FP8 and f16 values are values of f16: widening is exact */
  }
  return 0;
}
