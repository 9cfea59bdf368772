/* gemm.c: the emulated GEMM: argument checking, the prepared problem, and
 * the plain-C reference of every accumulation model (docs/gemm.md).  The
 * fast kernels (gemm_fast.c) are checked bit for bit against this. */
#include "emulate/gemm_internal.h"
#include "formats/internal.h"
#include "emulate/parallel.h"

#include <gmp.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef unsigned __int128 u128;
typedef __int128 i128;

void exmy_gemm_args_init(exmy_gemm_args *a) {
  memset(a, 0, sizeof *a);
  a->alpha = 1.0f;
  a->scale_c = 1.0f;
  a->scale_d = 1.0f;
  a->d_rnd = exmy_rounding_default();
}

static int is_inner_kind(exmy_recipe_kind k) {
  return k == EXMY_RECIPE_MX || k == EXMY_RECIPE_MX_OCP || k == EXMY_RECIPE_NVFP4;
}

/* Group index of stored element (r, c). */
static size_t group_of(const exmy_qtensor *q, size_t r, size_t c) {
  return (r / q->block_rows) * q->scols + c / q->block_cols;
}

static int check_operand(const char *name, const exmy_qtensor *q, char *err, size_t errlen) {
  if (!q || !q->codes) return exmy__fail(err, errlen, "GEMM: operand %s is missing", name);
  const exmy_format *f = &q->fmt;
  if (f->mbits > 23 || f->emax > 300 || f->emin - f->mbits < -300)
    return exmy__fail(err, errlen,
                      "GEMM: operand %s's format %s is too wide (the GEMM needs at most 23 mantissa bits and "
                      "values within 2^-300..2^300 so products are exact in double)", name, f->name);
  return 0;
}

int exmy__gemm_plan(const exmy_gemm_args *a, gemm_plan *p, int decode, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  if (!a) return exmy__fail(err, errlen, "GEMM: no arguments");
  if (check_operand("A", a->a, err, errlen) || check_operand("B", a->b, err, errlen)) return -1;
  if (!a->accum) return exmy__fail(err, errlen, "GEMM: no accumulation model");
  if (!a->d_fmt) return exmy__fail(err, errlen, "GEMM: no format for D (d_fmt)");
  if (!isfinite(a->alpha) || !isfinite(a->beta) || !isfinite(a->scale_c) || !isfinite(a->scale_d))
    return exmy__fail(err, errlen, "GEMM: alpha %g, beta %g, scale_c %g, scale_d %g: all must be finite",
                      (double)a->alpha, (double)a->beta, (double)a->scale_c, (double)a->scale_d);
  const exmy_qtensor *A = a->a, *B = a->b;
  p->A = A;
  p->B = B;
  p->ta = a->trans_a != 0;
  p->tb = a->trans_b != 0;
  p->m = p->ta ? A->cols : A->rows;
  p->k = p->ta ? A->rows : A->cols;
  size_t kb = p->tb ? B->cols : B->rows;
  p->n = p->tb ? B->rows : B->cols;
  if (kb != p->k)
    return exmy__fail(err, errlen, "GEMM: op(A) is %zu x %zu but op(B) is %zu x %zu (inner dimensions differ)", p->m,
                      p->k, kb, p->n);
  p->acc = *a->accum;
  if (p->acc.kind == EXMY_ACCUM_TC && (p->acc.tc_group < 1 || p->acc.tc_frac < 0 || p->acc.tc_frac > 40 ||
                                       p->acc.tc_out_frac < 0 || p->acc.tc_out_frac > 23))
    return exmy__fail(err, errlen, "GEMM: tensor-core model with g=%d f=%d out=%d out of range", p->acc.tc_group,
                      p->acc.tc_frac, p->acc.tc_out_frac);

  /* Where the scales apply (docs/gemm.md, table). */
  const size_t k = p->k;
  const size_t KA = p->ta ? A->block_rows : A->block_cols;
  const size_t KB = p->tb ? B->block_cols : B->block_rows;
  const int ia = is_inner_kind(A->recipe), ib = is_inner_kind(B->recipe);
  char ra[48], rb[48];
  snprintf(ra, sizeof ra, "%zux%zu", A->block_rows, A->block_cols);
  snprintf(rb, sizeof rb, "%zux%zu", B->block_rows, B->block_cols);
  if (k == 0) {
    p->style = GEMM_OUTER;
    p->seg = 0;
    p->nseg = 1;
  } else if (ia || ib) {
    if (!(ia && ib))
      return exmy__fail(err, errlen,
                        "GEMM: block-scaled (mx, nvfp4) operands must both be block-scaled: A's groups are %s, B's %s", ra,
                        rb);
    if (A->recipe != B->recipe && (A->recipe == EXMY_RECIPE_NVFP4 || B->recipe == EXMY_RECIPE_NVFP4))
      return exmy__fail(err, errlen, "GEMM: nvfp4 operands must both be nvfp4");
    if (KA != KB)
      return exmy__fail(err, errlen,
                        "GEMM: block scales must tile k alike: A's groups (%s) span %zu of k, B's (%s) span %zu "
                        "(for a k x n B use mx:col, or store B as n x k with trans_b)", ra, KA, rb, KB);
    p->style = GEMM_INNER;
    p->seg = KA;
  } else if (KA >= k && KB >= k) {
    p->style = GEMM_OUTER;
    p->seg = k;
  } else {
    size_t L = KA < k ? KA : KB;
    if (KB < k && KB < L) L = KB;
    if ((KA < k && KA % L) || (KB < k && KB % L))
      return exmy__fail(err, errlen,
                        "GEMM: A's scale groups (%s) span %zu of k and B's (%s) span %zu: one must divide the other", ra,
                        KA, rb, KB);
    p->style = GEMM_PROMOTE;
    p->seg = L;
  }
  if (k) p->nseg = (k + p->seg - 1) / p->seg;
  if (p->style == GEMM_INNER) {
    const int nv = A->recipe == EXMY_RECIPE_NVFP4;
    p->s_emin = nv ? -6 : -127;
    p->s_mbits = nv ? 3 : 0;
    if ((A->fmt.mbits + 1) + (B->fmt.mbits + 1) + 2 * (p->s_mbits + 1) > 53)
      return exmy__fail(err, errlen, "GEMM: %s x %s with E4M3 block scales: products would not be exact in double",
                        A->fmt.name, B->fmt.name);
  }
  p->tA = p->style == GEMM_INNER ? A->tensor_scale_inv : 1.0f;
  p->tB = p->style == GEMM_INNER ? B->tensor_scale_inv : 1.0f;
  p->a_emin = A->fmt.emin;
  p->a_mbits = A->fmt.mbits;
  p->b_emin = B->fmt.emin;
  p->b_mbits = B->fmt.mbits;
  p->alpha = a->alpha;
  p->beta = a->beta;
  p->scale_c = a->scale_c;
  p->scale_d = a->scale_d;
  p->use_c = a->c_fmt && a->c && a->beta != 0.0f;
  p->c_fmt = a->c_fmt;
  p->c = a->c;
  p->d_fmt = a->d_fmt;
  p->d_rnd = a->d_rnd;
  if (!decode) return 0;
  if (p->acc.kind == EXMY_ACCUM_EXACT) exmy_format_parse("f32", &p->f32, NULL, 0); /* amax_d's rounding */

  const size_t m = p->m, n = p->n, ns = p->nseg;
  p->ad = malloc((m * k + 1) * sizeof(double));
  p->bd = malloc((n * k + 1) * sizeof(double));
  p->as = malloc((m * ns + 1) * sizeof(float));
  p->bs = malloc((n * ns + 1) * sizeof(float));
  double *tmp = malloc(((A->rows * A->cols) > (B->rows * B->cols) ? A->rows * A->cols : B->rows * B->cols) *
                           sizeof(double) + sizeof(double));
  if (!p->ad || !p->bd || !p->as || !p->bs || !tmp) {
    free(tmp);
    exmy__gemm_plan_free(p);
    return exmy__fail(err, errlen, "GEMM: out of memory for %zu x %zu x %zu", m, n, k);
  }
  exmy_decode_f64(&A->fmt, A->codes, A->rows * A->cols, tmp);
#pragma omp parallel for schedule(static) if (m * k > EXMY_OMP_MIN_TENSOR)
  for (size_t i = 0; i < m; i++)
    for (size_t l = 0; l < k; l++) p->ad[i * k + l] = p->ta ? tmp[l * A->cols + i] : tmp[i * A->cols + l];
  exmy_decode_f64(&B->fmt, B->codes, B->rows * B->cols, tmp);
#pragma omp parallel for schedule(static) if (n * k > EXMY_OMP_MIN_TENSOR)
  for (size_t j = 0; j < n; j++)
    for (size_t l = 0; l < k; l++) p->bd[j * k + l] = p->tb ? tmp[j * B->cols + l] : tmp[l * B->cols + j];
  free(tmp);
  /* A decode table for the accumulator when the GEMM decodes more values than it holds. */
  if (p->acc.kind == EXMY_ACCUM_FORMAT && p->acc.acc_fmt.bits <= 16 &&
      (double)m * (double)n * (double)k > (double)((size_t)1 << p->acc.acc_fmt.bits)) {
    const size_t nc = (size_t)1 << p->acc.acc_fmt.bits;
    p->acc_lut = malloc(nc * sizeof(double));
    if (p->acc_lut)
      for (size_t c = 0; c < nc; c++) p->acc_lut[c] = exmy_decode(&p->acc.acc_fmt, c);
  }
  /* k = 0: no elements, no scale groups along k; the sum is +0 and the scales are 1. */
  for (size_t s = 0; s < ns; s++) {
    const size_t l = s * p->seg;
    for (size_t i = 0; i < m; i++) p->as[i * ns + s] = k ? A->scale_inv[p->ta ? group_of(A, l, i) : group_of(A, i, l)] : 1.0f;
    for (size_t j = 0; j < n; j++) p->bs[j * ns + s] = k ? B->scale_inv[p->tb ? group_of(B, j, l) : group_of(B, l, j)] : 1.0f;
  }
  return 0;
}

void exmy__gemm_plan_free(gemm_plan *p) {
  free(p->ad);
  free(p->bd);
  free(p->as);
  free(p->bs);
  free(p->acc_lut);
  p->acc_lut = NULL;
  p->ad = p->bd = NULL;
  p->as = p->bs = NULL;
}

int exmy_gemm_check(const exmy_gemm_args *args, size_t *m, size_t *n, size_t *k, char *err, size_t errlen) {
  gemm_plan p;
  if (exmy__gemm_plan(args, &p, 0, err, errlen)) return -1;
  if (m) *m = p.m;
  if (n) *n = p.n;
  if (k) *k = p.k;
  return 0;
}

/* ---- one sum of two doubles, rounded once ------------------------------- */

static int bitlen128(u128 x) {
  const uint64_t hi = (uint64_t)(x >> 64);
  if (hi) return 128 - __builtin_clzll(hi);
  const uint64_t lo = (uint64_t)x;
  return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* |x| = mant * 2^ex with a 53-bit integer mant (x finite, nonzero). */
static uint64_t split_double(double x, int *ex) {
  int e;
  const double f = frexp(fabs(x), &e);
  *ex = e - 53;
  return (uint64_t)ldexp(f, 53);
}

uint64_t exmy__round_sum2(const exmy_format *fmt, const exmy_rounding *rnd, double x, double y, uint64_t index,
                          unsigned *flags) {
  if (!isfinite(x) || !isfinite(y)) return exmy_from_double(fmt, rnd, x + y, index, flags);
  if (x == 0 || y == 0) {
    if (x == 0 && y == 0) {
      const int nx = signbit(x) != 0, ny = signbit(y) != 0;
      const int neg = (nx && ny) || (rnd->mode == EXMY_RDN && (nx || ny));
      return exmy_round_pack(fmt, rnd, neg, 0, 0, index, flags);
    }
    return exmy_from_double(fmt, rnd, x == 0 ? y : x, index, flags);
  }
  int ex, ey;
  uint64_t mx = split_double(x, &ex), my = split_double(y, &ey);
  int nx = x < 0, ny = y < 0;
  if (ey > ex || (ey == ex && my > mx)) { /* x is the larger magnitude */
    uint64_t tm = mx; mx = my; my = tm;
    int te = ex; ex = ey; ey = te;
    int tn = nx; nx = ny; ny = tn;
  }
  /* 128-bit window: x's 53 bits at the top, y aligned below with a sticky bit. */
  const int d = ex - ey;
  u128 X = (u128)mx << 74, Y;
  if (d <= 74) {
    Y = (u128)my << (74 - d);
  } else if (d - 74 >= 64) {
    Y = 1; /* wholly below the window: a sticky bit */
  } else {
    const int r = d - 74;
    Y = (u128)(my >> r) | ((my & (((uint64_t)1 << r) - 1)) != 0);
  }
  const int base = ex - 74; /* value of bit 0 of the window */
  u128 S = nx == ny ? X + Y : X - Y; /* X > Y: no borrow out */
  if (S == 0) return exmy_round_pack(fmt, rnd, rnd->mode == EXMY_RDN, 0, 0, index, flags);
  const int L = bitlen128(S);
  uint64_t sig;
  int e2;
  if (L <= 64) {
    sig = (uint64_t)S;
    e2 = base;
  } else {
    const int sh = L - 64;
    sig = (uint64_t)(S >> sh);
    if (S & (((u128)1 << sh) - 1)) sig |= 1;
    e2 = base + sh;
  }
  return exmy_round_pack(fmt, rnd, nx, sig, e2, index, flags);
}

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

static float f32_from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
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
  if (isnan(chk)) return f32_from_bits(0x7FFFFFFFu);
  if (isinf(chk)) return (float)chk;
  const int F = p->acc.tc_frac, rne = p->acc.tc_align_rne;
  const int mt = p->a_mbits + p->b_mbits + (p->style == GEMM_INNER ? 2 * p->s_mbits : 0);
  uint64_t mc;
  int ec;
  exmy__gemm_nominal(c, -126, 23, &mc, &ec);
  int emax = ec;
  for (size_t l = l0; l < l1; l++) {
    int e;
    tc_term(p, i, j, l, &e);
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
    const u128 t = align_term(m, F + e - emax - mt, rne);
    S += (signbit(p->ad[i * p->k + l]) != 0) != (signbit(p->bd[j * p->k + l]) != 0) ? -(i128)t : (i128)t;
  }
  if (S == 0) return 0.0f;
  const int neg = S < 0;
  const u128 U = neg ? (u128)(-S) : (u128)S;
  const int E = bitlen128(U) - 1 + emax - F;
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
      c = p->acc_lut ? p->acc_lut[code] : exmy_decode(f, code);
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

float exmy__gemm_ref_p(const gemm_plan *p, size_t i, size_t j) {
  const size_t k = p->k, ch = p->acc.chunk;
  if (!ch && p->style != GEMM_PROMOTE) return piece(p, i, j, 0, k);
  float F = 0.0f;
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = exmy__gemm_piece_end(p, l0);
    F = fmaf(exmy__gemm_promote_w(p, i, j, l0), piece(p, i, j, l0, l1), F);
  }
  return F;
}

static double c_value(const gemm_plan *p, size_t i, size_t j) {
  return exmy_decode(p->c_fmt, exmy_code_get(p->c_fmt, p->c, i * p->n + j));
}

float exmy__gemm_epilogue(const gemm_plan *p, size_t i, size_t j, float P, unsigned *flags) {
  const float s = exmy__gemm_out_scale(p, i, j);
  float z;
  if (p->use_c) {
    const float cf = (float)c_value(p, i, j);
    z = fmaf(s, P, p->beta * (p->scale_c * cf));
  } else {
    z = s * P;
  }
  if (isnan(z)) z = NAN; /* NaN signs are not portable: D gets the positive NaN */
  const float x = z * p->scale_d;
  exmy_code_set(p->d_fmt, p->d, i * p->n + j, exmy_from_float(p->d_fmt, &p->d_rnd, isnan(x) ? NAN : x, (uint64_t)i * p->n + j, flags));
  return isnan(z) ? 0.0f : fabsf(z);
}

/* ---- exact --------------------------------------------------------------- */

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
  return f32_from_bits((uint32_t)exmy_round_pack(&p->f32, &r, 0, sig, e2, 0, NULL));
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
    if (!isfinite(a) || !isfinite(b)) {
      const double v = a * b * (double)sa * (double)sb;
      if (isnan(v)) nan = 1;
      else if (v > 0) pinf = 1;
      else ninf = 1;
      continue;
    }
    if (a == 0 || b == 0) continue;
    int qa, qb, q1, q2;
    const uint64_t ma = split_double(a, &qa), mb = split_double(b, &qb);
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
  const double cval = p->use_c ? c_value(p, i, j) : 0.0;
  const uint64_t index = (uint64_t)i * p->n + j;
  /* alpha * tA * tB (OUTER and PROMOTE scales are inside the terms) */
  if (special || !isfinite(cval)) {
    const double ab = special ? (double)p->alpha * (double)p->tA * (double)p->tB * sval : 0.0;
    const double v = ab + (p->use_c ? (double)p->beta * (double)p->scale_c * cval : 0.0);
    const double vd = v * (double)p->scale_d;
    exmy_code_set(p->d_fmt, p->d, index, exmy_from_double(p->d_fmt, &p->d_rnd, isnan(vd) ? (double)NAN : vd, index, flags));
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
    const uint64_t mc = split_double(cval, &qc);
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

/* ---- drivers ------------------------------------------------------------- */

static void generic_rows(const gemm_plan *p, size_t i0, size_t i1, unsigned *flags, float *amax) {
  unsigned fl = 0;
  float am = 0.0f;
  for (size_t i = i0; i < i1; i++)
    for (size_t j = 0; j < p->n; j++) {
      const float z = p->acc.kind == EXMY_ACCUM_EXACT ? exmy__gemm_exact_elem(p, i, j, &fl)
                                                      : exmy__gemm_epilogue(p, i, j, exmy__gemm_ref_p(p, i, j), &fl);
      am = fmaxf(am, z);
    }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}

int exmy_gemm_ref(const exmy_gemm_args *args, void *d, float *amax_d, unsigned *flags_out, char *err,
                  size_t errlen) {
  gemm_plan p;
  if (!d) return exmy__fail(err, errlen, "GEMM: no output D");
  if (exmy__gemm_plan(args, &p, 1, err, errlen)) return -1;
  p.d = d;
  p.amax_d = amax_d;
  unsigned flags = 0;
  float amax = 0.0f;
  generic_rows(&p, 0, p.m, &flags, &amax);
  if (p.amax_d) *p.amax_d = amax;
  exmy__gemm_plan_free(&p);
  if (flags_out) *flags_out |= flags;
  return 0;
}

int exmy_gemm(const exmy_gemm_args *args, void *d, float *amax_d, unsigned *flags_out, char *err, size_t errlen) {
  gemm_plan p;
  if (!d) return exmy__fail(err, errlen, "GEMM: no output D");
  if (exmy__gemm_plan(args, &p, 1, err, errlen)) return -1;
  p.d = d;
  p.amax_d = amax_d;
  unsigned flags = 0;
  float amax = 0.0f;
  /* Small problems run on one thread: a parallel region costs more than they
   * do (and results never depend on the thread count). */
  const int threads = (double)p.m * (double)p.n * (double)(p.k ? p.k : 1) < (double)EXMY_OMP_MIN_TENSOR ? 1 : args->threads;
  if (!exmy__gemm_fast(&p, threads, &flags, &amax)) {
    /* Rows in parallel: every element's k order is fixed, so any split gives the same bits. */
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) reduction(| : flags) reduction(max : amax)
    {
      unsigned fl = 0;
      float am = 0.0f;
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < p.m; i++) generic_rows(&p, i, i + 1, &fl, &am);
      flags |= fl;
      amax = fmaxf(amax, am);
    }
  }
  if (p.amax_d) *p.amax_d = amax;
  exmy__gemm_plan_free(&p);
  if (flags_out) *flags_out |= flags;
  return 0;
}
