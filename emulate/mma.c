/* mma.c: one matrix-unit instruction, D = A*B + C, bit for bit as its
 * datapath row (emulate/mma_table.c, docs/mma.md).  Each output is a chain of
 * fused sums over pieces of L products (MMA-Sim v2's algorithms, written from
 * the paper's description: integers, no floating-point arithmetic in the sums). */
#include "emulate/mma_internal.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
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

/* trunc(m * 2^sh), or floor of the signed value when floor_neg (negative
 * values move away from zero when bits are lost). */
static u128 shift_trunc(u128 m, int sh) {
  if (sh >= 0) return sh > 100 ? 0 : m << sh; /* callers keep m << sh in range */
  return -sh >= 128 ? 0 : m >> -sh;
}

static i128 shift_floor(i128 v, int sh) {
  if (sh >= 0) return v * ((i128)1 << sh); /* not v << sh: v may be negative */
  if (-sh >= 127) return v < 0 ? -1 : 0;
  return v >> -sh; /* arithmetic shift: floor */
}

/* Truncated fused sum: each term cut toward zero to F fraction bits below
 * 2^emax; the exact sum S (units 2^(emax - F)).  *negzero: every cut term is a
 * negative zero (the float sum of MMA-Sim is then -0). */
static i128 fused(const term *t, int n, int F, int emax, int *negzero) {
  i128 S = 0;
  int nz = 1;
  for (int i = 0; i < n; i++) {
    const u128 v = shift_trunc(t[i].m, F + t[i].e - emax - t[i].mt);
    S += t[i].neg ? -(i128)v : (i128)v;
    nz &= v == 0 && t[i].neg;
  }
  *negzero = nz;
  return S;
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

typedef struct mma_ctx {
  const exmy_mma_instr *in;
  const mma_datapath *dp;
  exmy_format e8m13, f32, wide;
  const exmy_format *af, *bf; /* the operands' formats in the products (the row's widen, or A's and B's) */
} mma_ctx;

static uint64_t nan_code(const exmy_format *d) { return d->bits == 16 ? 0x7FFFu : 0x7FFFFFFFu; }

/* A finite or infinite double in D's format (inf: the format's inf code). */
static uint64_t inf_code(const exmy_format *d, int neg) { return (neg ? d->sign_mask : 0) | d->inf_mag; }

/* The output conversion rho of S * 2^q (T, ST, GST). */
static uint64_t rho_out(const mma_ctx *x, i128 S, int q, int negzero) {
  const exmy_format *d = &x->in->d_fmt;
  if (S == 0) return negzero ? d->sign_mask : 0;
  const int neg = S < 0;
  const u128 U = neg ? (u128)(-S) : (u128)S;
  const int top = exmy__bitlen128(U) - 1 + q; /* floor(log2 |v|) */
  switch (x->dp->rho) {
  case MMA_RZ_FP32:
    if (top >= 128) return inf_code(d, neg); /* overflow is inf, even truncating */
    return pack(d, EXMY_RTZ, neg, U, q);
  case MMA_RZ_E8M13: {
    if (top >= 128) return inf_code(d, neg);
    const uint64_t c = pack(&x->e8m13, EXMY_RTZ, neg, U, q);
    exmy_rounding r = exmy_rounding_default();
    return exmy_from_f64(d, &r, exmy_code_to_f64(&x->e8m13, c), 0, NULL); /* exact */
  }
  default:
    return pack(d, EXMY_RNE, neg, U, q); /* RNE_FP16, RNE_FP32: overflow rounds to inf */
  }
}

/* ---- the algorithms on one piece [l0, l0 + L) of output (i, j) ------------- */

typedef struct piece {
  const double *a, *b; /* a[l], b[l * bstride] */
  size_t bstride;
  const double *sa, *sb; /* scales of element l: sa[l / block], sb[(l / block) * sbstride] */
  size_t sbstride;
  int L;
  double c; /* the accumulator value, in c_fmt (first piece) or d_fmt */
  const exmy_format *cf;
} piece;

static double pa(const piece *p, int l) { return p->a[l]; }
static double pb(const piece *p, int l) { return p->b[(size_t)l * p->bstride]; }

/* NaN (1) or inf (2, sign in *neg) of the IEEE sum of the products and c; 0 finite. */
static int special(const mma_ctx *x, const piece *p, int *neg) {
  double s = p->c;
  const int blk = x->in->block;
  for (int l = 0; l < p->L; l++) {
    double v = pa(p, l) * pb(p, l);
    if (x->in->has_scale) v = v * p->sa[l / blk] * p->sb[(size_t)(l / blk) * p->sbstride];
    if (x->dp->algo == MMA_TR && isfinite(v) && v != 0) { /* TR: a product of 2^128 or more is inf */
      term ta, tb;
      nominal(pa(p, l), x->af, &ta);
      nominal(pb(p, l), x->bf, &tb);
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

/* T and ST: products (with their scales) and c in one truncated fused sum. */
static uint64_t t_fdpa(const mma_ctx *x, const piece *p) {
  const exmy_mma_instr *in = x->in;
  const mma_datapath *dp = x->dp;
  term t[65];
  int n = 0, emax = INT32_MIN;
  for (int l = 0; l < p->L; l++, n++) {
    term ta, tb;
    nominal(pa(p, l), x->af, &ta);
    nominal(pb(p, l), x->bf, &tb);
    t[n] = mul(&ta, &tb);
    if (in->has_scale) {
      term s1, s2;
      nominal(p->sa[l / in->block], &in->s_fmt, &s1);
      nominal(p->sb[(size_t)(l / in->block) * p->sbstride], &in->s_fmt, &s2);
      s1.neg = s2.neg = 0;
      const term u = mul(&t[n], &s1);
      t[n] = mul(&u, &s2);
    }
    if (t[n].m == 0) /* a zero product: v2's fixed exponent, v1's -126 per zero factor */
      t[n].e = in->zero == EXMY_MMA_ZERO_V1 ? (ta.m ? ta.e : -126) + (tb.m ? tb.e : -126) : dp->e_zero;
  }
  nominal(p->c, p->cf, &t[n]);
  if (t[n].m == 0) t[n].e = in->zero == EXMY_MMA_ZERO_V1 ? -126 : dp->e_zero;
  n++;
  for (int i = 0; i < n; i++)
    if (t[i].e > emax) emax = t[i].e;
  int nz;
  const i128 S = fused(t, n, dp->F, emax, &nz);
  return rho_out(x, S, emax - dp->F, nz);
}

/* GST: groups of G products summed exactly and scaled; a group is aligned by
 * its scales' exponents alone (e_zero when all its products or its scale are zero). */
static uint64_t gst_fdpa(const mma_ctx *x, const piece *p) {
  const exmy_mma_instr *in = x->in;
  const mma_datapath *dp = x->dp;
  term t[17];
  int n = 0, emax = INT32_MIN;
  /* elements as integers in units 2^(emin - mbits) */
  const int ua = x->af->emin - x->af->mbits, ub = x->bf->emin - x->bf->mbits;
  for (int g0 = 0; g0 < p->L; g0 += dp->G, n++) {
    i128 P = 0;
    int allzero = 1, allneg = 1;
    for (int l = g0; l < g0 + dp->G; l++) {
      const double va = pa(p, l), vb = pb(p, l);
      const i128 ia = (i128)ldexp(va, -ua), ib = (i128)ldexp(vb, -ub);
      P += ia * ib;
      allzero &= ia * ib == 0;
      allneg &= (signbit(va) != 0) != (signbit(vb) != 0);
    }
    term s1, s2;
    nominal(p->sa[g0 / in->block], &in->s_fmt, &s1);
    nominal(p->sb[(size_t)(g0 / in->block) * p->sbstride], &in->s_fmt, &s2);
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
  int nz;
  const i128 S = fused(t, n, dp->F, emax, &nz);
  return rho_out(x, S, emax - dp->F, nz);
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
    const u128 v = shift_trunc(t[i].m, F + t[i].e - emax - t[i].mt);
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
static uint64_t tr_fdpa(const mma_ctx *x, const piece *p) {
  const exmy_mma_instr *in = x->in;
  const mma_datapath *dp = x->dp;
  const int F = dp->F, F2 = dp->F2;
  term t[64];
  for (int l = 0; l < p->L; l++) {
    term ta, tb;
    nominal(pa(p, l), x->af, &ta);
    nominal(pb(p, l), x->bf, &tb);
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
  const exmy_format *d = &in->d_fmt;
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
static uint64_t e_fdpa(const mma_ctx *x, const piece *p) {
  const exmy_mma_instr *in = x->in;
  int64_t acc[E_LIMBS] = {0}; /* 32-bit digits with signed carries */
  term t[65];
  int n = 0;
  for (int l = 0; l < p->L; l++, n++) {
    term ta, tb;
    nominal(pa(p, l), x->af, &ta);
    nominal(pb(p, l), x->bf, &tb);
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
  const exmy_format *d = &in->d_fmt;
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

static uint64_t ftz_fdpa(const mma_ctx *x, const piece *p) {
  const int P = x->dp->G;
  float c = ftz((float)p->c, 0);
  float pr[4];
  for (int l0 = 0; l0 < p->L; l0 += P) {
    for (int q = 0; q < P; q++)
      pr[q] = ftz(ftz_in(pa(p, l0 + q), x->af) * ftz_in(pb(p, l0 + q), x->bf), 1);
    float s = ftz(pr[0] + pr[1], 1);
    if (P == 4) s = ftz(s + ftz(pr[2] + pr[3], 1), 1);
    c = ftz(c + s, 1);
  }
  uint32_t bits;
  memcpy(&bits, &c, 4);
  if (isnan(c)) bits = 0x7FC00000u; /* one quiet NaN (the payload is not modelled) */
  return bits;
}

/* c_last: D = code + c, one add rounded to D's format (nearest even), the
 * exact sum formed in integers.  An operand more than 64 binades below the
 * other's last bit only decides the rounding, so it becomes a sticky unit. */
static uint64_t add_last(const mma_ctx *x, uint64_t code, double c) {
  const exmy_format *d = &x->in->d_fmt;
  const double s = exmy_code_to_f64(d, code), t = s + c; /* t only classifies NaN and inf */
  if (isnan(t)) return nan_code(d);
  if (isinf(t)) return inf_code(d, t < 0);
  term u, v;
  nominal(s, d, &u);
  nominal(c, &x->in->c_fmt, &v);
  if (!u.m && !v.m) return u.neg && v.neg ? d->sign_mask : 0;
  int qu = u.e - u.mt, qv = v.e - v.mt;
  if (!u.m || (v.m && qv > qu)) { /* u: the nonzero term with the higher last bit */
    const term w = u;
    const int qw = qu;
    u = v, v = w, qu = qv, qv = qw;
  }
  const i128 su = u.neg ? -1 : 1, sv = v.neg ? -1 : 1;
  i128 S;
  int q;
  if (!v.m) S = su * (i128)u.m, q = qu;
  else if (qu - qv > 64) S = su * ((i128)u.m << 4) + sv, q = qu - 4;
  else S = su * ((i128)u.m << (qu - qv)) + sv * (i128)v.m, q = qv;
  if (S == 0) return 0; /* exact cancellation: +0 */
  return pack(d, EXMY_RNE, S < 0, S < 0 ? (u128)(-S) : (u128)S, q);
}

/* ---- the instruction --------------------------------------------------------- */

/* x as its operand format holds it: tf32 truncates (as the hardware reads an
 * fp32 register); anything else must be a value of the format. */
static int take(const exmy_format *f, double x, double *out, const char *what, size_t i, char *err, size_t errlen) {
  exmy_rounding r = exmy_rounding_default();
  const int tf32 = f->ebits == 8 && f->mbits == 10;
  if (tf32) r.mode = EXMY_RTZ;
  if (isnan(x)) {
    *out = x;
    return f->nan == EXMY_NAN_NONE ? exmy__fail(err, errlen, "mma: %s[%zu] is NaN, which %s cannot hold", what, i, f->name) : 0;
  }
  const uint64_t code = exmy_from_f64(f, &r, x, 0, NULL);
  const double v = exmy_code_to_f64(f, code);
  if (!tf32 && (v != x || signbit(v) != signbit(x)))
    return exmy__fail(err, errlen, "mma: %s[%zu] = %a is not a value of %s", what, i, x, f->name);
  *out = v;
  return 0;
}

int exmy_mma(const exmy_mma_instr *in, size_t m, size_t n, const double *a, const double *b, const double *c,
             const double *sa, const double *sb, void *d, char *err, size_t errlen) {
  if (!in || !a || !b || !c || !d) return exmy__fail(err, errlen, "mma: NULL argument");
  if (in->path < 0 || (size_t)in->path >= exmy__mma_npaths) return exmy__fail(err, errlen, "mma: instruction not parsed");
  if (in->has_scale && (!sa || !sb)) return exmy__fail(err, errlen, "mma: %s needs block scales", in->name);
  mma_ctx x = {in, &exmy__mma_paths[in->path], {0}, {0}, {0}, &in->a_fmt, &in->b_fmt};
  if (exmy_format_parse("e8m13", &x.e8m13, err, errlen) || exmy_format_parse("f32", &x.f32, err, errlen)) return -1;
  if (x.dp->widen) {
    if (exmy_format_parse(x.dp->widen, &x.wide, err, errlen)) return -1;
    x.af = x.bf = &x.wide; /* FP8 and f16 values are values of f16: widening is exact */
  }
  const size_t k = (size_t)in->k, nb = in->has_scale ? k / (size_t)in->block : 0;
  double *av = malloc(sizeof(double) * (m * k + k * n + nb * (m + n) + 1));
  if (!av) return exmy__fail(err, errlen, "mma: out of memory");
  double *bv = av + m * k, *sav = bv + k * n, *sbv = sav + nb * m;
  int rc = 0;
  for (size_t i = 0; i < m * k && !rc; i++) rc = take(&in->a_fmt, a[i], &av[i], "A", i, err, errlen);
  for (size_t i = 0; i < k * n && !rc; i++) rc = take(&in->b_fmt, b[i], &bv[i], "B", i, err, errlen);
  for (size_t i = 0; i < nb * m && !rc; i++) rc = take(&in->s_fmt, fabs(sa[i]), &sav[i], "scale A", i, err, errlen);
  for (size_t i = 0; i < nb * n && !rc; i++) rc = take(&in->s_fmt, fabs(sb[i]), &sbv[i], "scale B", i, err, errlen);
  for (size_t i = 0; i < m * n && !rc; i++) {
    double cv;
    rc = take(&in->c_fmt, c[i], &cv, "C", i, err, errlen);
  }
  const mma_datapath *dp = x.dp;
  const int L = (int)(k < (size_t)dp->L ? k : (size_t)dp->L);
  const size_t np = (k + (size_t)L - 1) / (size_t)L;
  if (dp->W && (k % (np * (size_t)dp->W) || in->has_scale || k > 64)) {
    free(av);
    return exmy__fail(err, errlen, "mma: %s: k = %zu does not interleave in runs of %d", in->name, k, dp->W);
  }
  double ga[64], gb[64]; /* one interleaved piece's elements */
  for (size_t i = 0; i < m && !rc; i++)
    for (size_t j = 0; j < n; j++) {
      piece p = {NULL, NULL, n, NULL, NULL, n, L, c[i * n + j], &in->c_fmt};
      if (dp->c_last) p.c = 0, p.cf = &in->d_fmt; /* the pieces start from +0 */
      uint64_t code = 0;
      for (size_t pi = 0, l0 = 0; pi < np; pi++, l0 += (size_t)L) {
        p.a = av + i * k + l0;
        p.b = bv + l0 * n + j;
        if (dp->W) { /* element l is in piece (l / W) mod np */
          int g = 0;
          for (size_t l = 0; l < k; l++)
            if ((l / (size_t)dp->W) % np == pi) ga[g] = av[i * k + l], gb[g++] = bv[l * n + j];
          p.a = ga, p.b = gb, p.bstride = 1;
        }
        if (in->has_scale) {
          p.sa = sav + i * nb + l0 / (size_t)in->block;
          p.sb = sbv + (l0 / (size_t)in->block) * n + j;
        }
        int neg = 0;
        const int sp = special(&x, &p, &neg);
        if (dp->algo == MMA_FTZ) code = ftz_fdpa(&x, &p); /* IEEE fp32 steps: NaN and inf as they fall */
        else if (sp == 1) code = dp->algo == MMA_E ? 0x7FC00000u : nan_code(&in->d_fmt);
        else if (sp == 2) code = inf_code(&in->d_fmt, neg);
        else if (dp->algo == MMA_T || dp->algo == MMA_ST) code = t_fdpa(&x, &p);
        else if (dp->algo == MMA_GST) code = gst_fdpa(&x, &p);
        else if (dp->algo == MMA_E) code = e_fdpa(&x, &p);
        else if (dp->algo == MMA_FTZ) code = ftz_fdpa(&x, &p);
        else code = tr_fdpa(&x, &p);
        p.c = exmy_code_to_f64(&in->d_fmt, code);
        p.cf = &in->d_fmt;
      }
      if (dp->c_last) code = add_last(&x, code, c[i * n + j]);
      exmy_code_set(&in->d_fmt, d, i * n + j, code);
    }
  free(av);
  return rc;
}
