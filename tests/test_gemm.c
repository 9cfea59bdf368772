/* test_gemm.c: an independent reference test of the emulated GEMM
 * (exmy_gemm and exmy_gemm_ref) against docs/gemm.md.
 *
 * Every accumulation model of docs/gemm.md is re-implemented here, slowly
 * and from the text only (no code shared with emulate/gemm*.c or
 * emulate/accum.c).  From the library the reference uses exmy_code_to_f64,
 * exmy_from_f64, exmy_from_f32 and exmy_round_pack (the one rounding
 * routine of the library, already tested against MPFR by test_mpfr), plus
 * the exmy_qtensor fields (codes, block shape, scale_inv, scale_codes,
 * tensor_scale_inv) and exmy_accum_parse for the model parameters (whose
 * preset table is itself checked against docs/gemm.md).  Exactness comes
 * from integers (tc), GMP/MPFR (exact, acc=FORMAT sums) and libm's fmaf.
 *
 * Parts:
 *   1 model parsing: the preset table of docs/gemm.md
 *   2 hand-computed anchors: the Hopper signature (A = B = 1/16, k = 32768:
 *     tc:hopper-fastacc stalls at 64, tc:hopper gives 128), small cases
 *   3 exact against MPFR (random shapes, wide formats, k up to 4096)
 *   4 fp32 against a plain C triple loop
 *   5 the random sweep: every model x shapes x transposes x element formats
 *     x recipes x C/D formats, adversarial inputs (cancellation, whole
 *     exponent range, subnormal and underflowing products, inf/NaN, zero rows)
 *   6 scale layouts that must be rejected
 *   7 determinism: threads = 1 and 2 give identical bits (96 x 80 x 300)
 *   8 the sweep again with medium shapes (m, n up to 48, k up to 700)
 * Every case is compared bit for bit (D codes, amax_d bits, returned flags)
 * against exmy_gemm with threads = 1 and 2 and against exmy_gemm_ref, and
 * the three among themselves; exmy_gemm_check must agree on validity.
 *
 * Readings of docs/gemm.md where the text leaves a choice:
 *  - PROMOTE: an operand whose scale groups span all of k constrains
 *    nothing ("block:1x128" on A with a per-tensor B and k = 200 is valid,
 *    segments [0,128) [128,200)); only extents < k must be multiples of L.
 *  - exact: an exact zero sum is +0, times alpha tA tB keeps IEEE's sign;
 *    the one visible addition (+ beta scale_c c) gives an exact zero IEEE
 *    754's sign under D's rounding (-0 toward -inf).
 *  - acc=FORMAT: an exact zero c + p has IEEE 754's sign under the
 *    accumulator's rounding (-0 toward -inf).
 *  - tc: a nonzero v cut to zero by step 4 gives +0, as MMA-Sim's Python
 *    does (docs/gemm.md now says so).
 *  - tc zero terms: with tc_zero (MMA-Sim v2, the presets' default) a
 *    zero product or zero c has exponent tc_zero; with zero=v1, e = -126
 *    for a zero element and a zero product's e is -126 + e of the other
 *    factor (MMA-Sim v1; docs/gemm.md says so).
 *  - tc:blackwell (its keys exactly) on NVFP4 operands with E2M1 elements
 *    on both sides runs the GST datapath of kind::mxf4nvf4 (docs/gemm.md);
 *    keys changed after the preset, or other elements, keep T/ST.
 *  - k = 0: every sum is +0 and the scales are 1 (docs/gemm.md).
 *
 * Options: --long (a bigger sweep, minutes), --verbose, --part=N (each part
 * draws from its own stream of the seed, so --part=N reproduces it alone).
 * Env: EXMY_TEST_SEED.  Exit 0 pass, 1 fail. */
#include "exmy.h"
#include "testutil.h"
#include "oracle_mpfr.h"

#include <gmp.h>
#include <mpfr.h>
#include <math.h>
#include <float.h>
#include <stdarg.h>
#include <time.h>

static int g_long, g_verbose, g_part = -1;
static uint64_t g_rng;
static long g_cases, g_errcases, g_fail_cases, g_nan_sign;
static long g_model_cases[16];
static double g_t0;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rnd64(void) { return tu_next(&g_rng); }
static uint64_t rndu(uint64_t n) { return n ? rnd64() % n : 0; }
static double rndf(void) { return (double)(rnd64() >> 11) * 0x1p-53; }

/* ======================================================================
 * Operands in op() layout
 * ====================================================================== */

/* One operand seen as op(A) (x = i) or op(B) (x = j): element (x, l). */
typedef struct opnd {
  const exmy_qtensor *q;
  int isB, trans;
  size_t ext, k;      /* extent along m (A) or n (B); k */
  size_t K;           /* extent of its scale groups along k */
  int M, emin;        /* element format: stored mantissa bits and emin (1 - bias) */
  double *v;          /* value of element (x, l) at [x*k + l] */
  size_t *grp;        /* its scale group */
  /* per group, for INNER: scale decomposition s = S * 2^-SM, e */
  uint64_t *gS;
  int *gM, *ge;
} opnd;

static size_t op_index(const opnd *o, size_t x, size_t l) {
  const exmy_qtensor *q = o->q;
  size_t r, c;
  if (!o->isB) { r = o->trans ? l : x; c = o->trans ? x : l; }
  else { r = o->trans ? x : l; c = o->trans ? l : x; }
  return r * q->cols + c;
}
static size_t op_group(const opnd *o, size_t x, size_t l) {
  const exmy_qtensor *q = o->q;
  size_t r, c;
  if (!o->isB) { r = o->trans ? l : x; c = o->trans ? x : l; }
  else { r = o->trans ? x : l; c = o->trans ? l : x; }
  return (r / q->block_rows) * q->scols + c / q->block_cols;
}

static int recipe_inner(exmy_recipe_kind k) {
  return k == EXMY_RECIPE_MX || k == EXMY_RECIPE_MX_OCP || k == EXMY_RECIPE_NVFP4;
}

/* Decompose a finite value of a format with M stored bits and minimum
 * normal exponent emin: |x| = S * 2^(e - M), e = max(floor(log2|x|), emin);
 * zero: S = 0, e = -126 (docs/gemm.md, tc step 2). */
static void decomp(double x, int M, int emin, uint64_t *S, int *e) {
  if (x == 0) { *S = 0; *e = -126; return; }
  int ex;
  (void)frexp(fabs(x), &ex);
  int fl = ex - 1;
  int ee = fl > emin ? fl : emin;
  double s = ldexp(fabs(x), M - ee);
  *S = (uint64_t)s;
  if ((double)*S != s) {
    printf("internal: decomposition of %a with M=%d emin=%d not exact\n", x, M, emin);
    exit(2);
  }
  *e = ee;
}

static void op_init(opnd *o, const exmy_qtensor *q, int isB, int trans, size_t ext, size_t k) {
  memset(o, 0, sizeof *o);
  o->q = q; o->isB = isB; o->trans = trans; o->ext = ext; o->k = k;
  if (!isB) o->K = trans ? q->block_rows : q->block_cols;
  else o->K = trans ? q->block_cols : q->block_rows;
  o->M = q->fmt.mbits;
  o->emin = 1 - q->fmt.bias;
  size_t n = ext * k;
  o->v = malloc((n + 1) * sizeof *o->v);
  o->grp = malloc((n + 1) * sizeof *o->grp);
  for (size_t x = 0; x < ext; x++)
    for (size_t l = 0; l < k; l++) {
      o->v[x * k + l] = exmy_code_to_f64(&q->fmt, exmy_code_get(&q->fmt, q->codes, op_index(o, x, l)));
      o->grp[x * k + l] = op_group(o, x, l);
    }
  size_t ng = q->srows * q->scols;
  o->gS = calloc(ng + 1, sizeof *o->gS);
  o->gM = calloc(ng + 1, sizeof *o->gM);
  o->ge = calloc(ng + 1, sizeof *o->ge);
  if (recipe_inner(q->recipe) && q->scale_codes) {
    exmy_format e4m3 = tu_format("e4m3fn");
    for (size_t g = 0; g < ng; g++) {
      unsigned code = q->scale_codes[g];
      double sv;
      if (q->recipe == EXMY_RECIPE_NVFP4) {
        sv = exmy_code_to_f64(&e4m3, code);
        if (isfinite(sv)) decomp(fabs(sv), 3, -6, &o->gS[g], &o->ge[g]);
        o->gM[g] = 3;
      } else {
        sv = code == 0xFF ? NAN : ldexp(1.0, (int)code - 127);
        o->gS[g] = 1; o->gM[g] = 0; o->ge[g] = (int)code - 127;
      }
      /* the scale the GEMM multiplies by is scale_inv; it must be the code's value */
      CHECK((isnan(sv) && isnan(q->scale_inv[g])) || sv == (double)q->scale_inv[g],
            "scale_inv[%zu] = %a but scale code 0x%02x has value %a", g, (double)q->scale_inv[g], code, sv);
    }
  }
}

static void op_free(opnd *o) {
  free(o->v); free(o->grp); free(o->gS); free(o->gM); free(o->ge);
}

/* ======================================================================
 * Styles and layout validation (docs/gemm.md, "Operand values ...")
 * ====================================================================== */
enum { ST_OUTER = 0, ST_PROMOTE, ST_INNER };

/* Returns the style, or -1 when the layouts must be rejected; *L is the
 * PROMOTE segment length. */
static int classify(const opnd *A, const opnd *B, size_t k, size_t *L) {
  int ia = recipe_inner(A->q->recipe), ib = recipe_inner(B->q->recipe);
  *L = 0;
  if (ia || ib) {
    if (!(ia && ib)) return -1;
    if (A->K != B->K) return -1;
    return ST_INNER;
  }
  if (A->K == k && B->K == k) return ST_OUTER;
  /* k = 0: both extents are resolved to 1 (nothing to split) */
  if (k == 0) return ST_OUTER;
  /* Reading of "a PROMOTE segment length that does not divide the other
   * operand's group extent is an error": an extent that covers all of k has
   * no boundary inside k and constrains nothing (block:1x128 on A with a
   * per-tensor B and k = 200 is accepted, segments [0,128) [128,200)). */
  size_t l = A->K < B->K ? A->K : B->K;
  if ((A->K < k && A->K % l) || (B->K < k && B->K % l)) return -1;
  *L = l;
  return ST_PROMOTE;
}

/* ======================================================================
 * The case
 * ====================================================================== */
typedef struct gcase {
  size_t m, n, k;
  int ta, tb;
  exmy_qtensor A, B;
  char fa[64], fb[64], ra[64], rb[64];
  int has_c;
  exmy_format cf, df;
  void *c;
  float alpha, beta, scale_c, scale_d;
  exmy_rounding drnd;
  exmy_accum acc;
  char model[160];
  int want_amax;
  const char *what;
} gcase;

/* expected results */
typedef struct gres {
  int err;            /* 1: the library must reject the case */
  uint64_t *d;
  float amax;
  unsigned flags;
} gres;

/* ---- MPFR helpers ------------------------------------------------------ */
#define XPREC 6144
static mpfr_t mx_acc, mx_t, mx_u;
static mpz_t mz;
static int mx_inited;
static oracle_ws g_ows;

static void mx_wide_range(void) {
  mpfr_set_emin(mpfr_get_emin_min());
  mpfr_set_emax(mpfr_get_emax_max());
  g_ows.range_set = 0; /* the oracle sets its own range again when it needs it */
}

static void mx_init(void) {
  if (mx_inited) return;
  oracle_ws_init(&g_ows);
  mx_wide_range();
  mpfr_init2(mx_acc, XPREC);
  mpfr_init2(mx_t, 256);
  mpfr_init2(mx_u, XPREC);
  mpz_init(mz);
  mx_inited = 1;
}

static long g_inexact_mpfr;
#define EXACTLY(op) do { if ((op) != 0) g_inexact_mpfr++; } while (0)

/* x (finite, nonzero) as sign, the 64 leading bits of |x| with everything
 * below folded into the last bit (sticky), and the exponent of the last bit. */
static void mx_sig64(mpfr_srcptr x, int *neg, uint64_t *sig, int *exp2) {
  mpfr_exp_t e = mpfr_get_z_2exp(mz, x);
  *neg = mpz_sgn(mz) < 0;
  mpz_abs(mz, mz);
  size_t nb = mpz_sizeinbase(mz, 2);
  if (nb <= 64) {
    *sig = 0;
    mpz_export(sig, NULL, -1, 8, 0, 0, mz);
    *exp2 = (int)e;
    return;
  }
  int sticky = mpz_scan1(mz, 0) < nb - 64;
  mpz_tdiv_q_2exp(mz, mz, nb - 64);
  *sig = 0;
  mpz_export(sig, NULL, -1, 8, 0, 0, mz);
  *sig |= (uint64_t)sticky;
  *exp2 = (int)(e + (mpfr_exp_t)(nb - 64));
}

/* Round-to-odd to 53 bits (exact when x fits): a double from which every
 * rounding to at most 51 bits is the correct rounding of x. */
static double mx_odd_double(mpfr_srcptr x) {
  mpfr_t y;
  mpfr_init2(y, 53);
  int t = mpfr_set(y, x, MPFR_RNDZ);
  double d = mpfr_get_d(y, MPFR_RNDZ);
  mpfr_clear(y);
  if (t != 0 && isfinite(d) && fabs(d) >= DBL_MIN) {
    uint64_t b = tu_bits64(d) | 1;
    memcpy(&d, &b, 8);
  }
  return d;
}

/* ======================================================================
 * The reference
 * ====================================================================== */

/* ---- tc: one fused group (docs/gemm.md, tc steps 1-4) ------------------ */
/* A nonzero v below the grid of step 4 (|v| < 2^(-126-out)) is cut to zero:
 * +0 for either sign of v, as MMA-Sim's math.trunc(s * 2^out) * 2^-out
 * (an integer 0 times a float) and docs/gemm.md. */
typedef struct tcterm { int neg; uint64_t S; int Mt; int e; } tcterm;

/* Step 4: v = sum * 2^lsb normalized to out fraction bits below
 * 2^max(floor(log2|v|), -126), cut toward zero or (rne) to nearest even; a
 * value cut to zero is +0, 2^128 or more inf. */
static float tc_out(__int128 sum, int lsb, int out, int rne) {
  if (sum == 0) return 0.0f;
  int neg = sum < 0;
  unsigned __int128 N = neg ? (unsigned __int128)(-sum) : (unsigned __int128)sum;
  int nb = 0;
  for (unsigned __int128 t2 = N; t2; t2 >>= 1) nb++;
  int E = nb - 1 + lsb;
  if (E < -126) E = -126;
  int qe = E - out;       /* exponent of the kept last bit */
  int drop = qe - lsb;
  if (drop > 0) {
    if (drop >= 127) N = 0; /* cannot happen for valid parameters */
    else {
      unsigned __int128 kept = N >> drop;
      if (rne) {
        unsigned __int128 rem = N & ((((unsigned __int128)1) << drop) - 1);
        unsigned __int128 half = ((unsigned __int128)1) << (drop - 1);
        if (rem > half || (rem == half && (kept & 1))) kept++;
      }
      N = kept;
    }
    lsb = qe;
  }
  if (N == 0) return 0.0f;
  if ((uint64_t)(N >> 64) != 0 || (uint64_t)N >= ((uint64_t)1 << 62)) {
    printf("internal: tc normalized significand too wide\n");
    exit(2);
  }
  double v = ldexp((double)(uint64_t)N, lsb);
  if (v >= 0x1p128) return neg ? -INFINITY : INFINITY;
  float r = (float)v;
  if ((double)r != v) { printf("internal: tc result %a not an fp32 value\n", v); exit(2); }
  return neg ? -r : r;
}

static float tc_fused(const exmy_accum *ac, float c, const tcterm *t, const double *pv, int nt) {
  /* 1: NaN / inf from the double sum */
  double ds = 0;
  for (int i = 0; i < nt; i++) ds += pv[i];
  ds += (double)c;
  if (isnan(ds)) return tu_f32(0x7FFFFFFFu);
  if (isinf(ds)) return (float)ds;
  /* 2: terms; c decomposes as an fp32 value */
  tcterm ct;
  ct.neg = signbit(c) != 0;
  decomp((double)c, 23, -126, &ct.S, &ct.e);
  ct.Mt = 23;
  /* MMA-Sim v2 (tc_zero != 0): a zero term, product or c, has the fixed
   * exponent tc_zero instead of -126 per zero element (v1) */
  if (ac->tc_zero && ct.S == 0) ct.e = ac->tc_zero;
  int Emax = ct.e;
  for (int i = 0; i < nt; i++) {
    const int e = ac->tc_zero && t[i].S == 0 ? ac->tc_zero : t[i].e;
    if (e > Emax) Emax = e;
  }
  const int f = ac->tc_frac;
  /* 3: align and sum exactly */
  __int128 sum = 0;
  for (int i = 0; i <= nt; i++) {
    const tcterm *x = i < nt ? &t[i] : &ct;
    if (x->S == 0) continue;
    long sh = (long)f + x->e - Emax - x->Mt;
    unsigned __int128 S = x->S, tv;
    if (sh >= 0) {
      if (sh > 60) { printf("internal: tc shift %ld\n", sh); exit(2); }
      tv = S << sh;
    } else if (-sh >= 120) {
      tv = 0; /* below half an ulp even when rounding */
    } else {
      int d = (int)-sh;
      tv = S >> d;
      if (ac->tc_align_rne) {
        unsigned __int128 rem = S & ((((unsigned __int128)1) << d) - 1);
        unsigned __int128 half = ((unsigned __int128)1) << (d - 1);
        if (rem > half || (rem == half && (tv & 1))) tv++;
      }
    }
    sum += x->neg ? -(__int128)tv : (__int128)tv;
  }
  /* 4: v = S 2^(Emax - f), normalized to out fraction bits */
  return tc_out(sum, Emax - f, ac->tc_out_frac, ac->tc_norm_rne);
}

/* per-element scratch for one output */
typedef struct piecectx {
  const gcase *g;
  const opnd *A, *B;
  int style;
  size_t i, j;
} piecectx;

static double elem_a(const piecectx *p, size_t l) { return p->A->v[p->i * p->A->k + l]; }
static double elem_b(const piecectx *p, size_t l) { return p->B->v[p->j * p->B->k + l]; }
static float scl_a(const piecectx *p, size_t l) { return p->A->q->scale_inv[p->A->grp[p->i * p->A->k + l]]; }
static float scl_b(const piecectx *p, size_t l) { return p->B->q->scale_inv[p->B->grp[p->j * p->B->k + l]]; }

/* fp32 operand: fp32(a) or, under INNER, fp32(a*sa) */
static float f32_a(const piecectx *p, size_t l) {
  return p->style == ST_INNER ? (float)(elem_a(p, l) * (double)scl_a(p, l)) : (float)elem_a(p, l);
}
static float f32_b(const piecectx *p, size_t l) {
  return p->style == ST_INNER ? (float)(elem_b(p, l) * (double)scl_b(p, l)) : (float)elem_b(p, l);
}

static float pairwise(const float *x, size_t n) {
  if (n == 0) return 0.0f;
  if (n == 1) return x[0];
  size_t h = n / 2;
  float l = pairwise(x, h);
  float r = pairwise(x + h, n - h);
  return l + r;
}

/* the exact product (sign, significand, exponent of its last bit) under the
 * style; returns 0 when the product is zero or not finite */
static void prod_mpfr(const piecectx *p, size_t l, mpfr_ptr out) {
  double a = elem_a(p, l), b = elem_b(p, l);
  if (p->style == ST_INNER) {
    double as = a * (double)scl_a(p, l), bs = b * (double)scl_b(p, l); /* exact: <= 28 bits each */
    EXACTLY(mpfr_set_d(out, as, MPFR_RNDN));
    EXACTLY(mpfr_mul_d(out, out, bs, MPFR_RNDN));
  } else {
    EXACTLY(mpfr_set_d(out, a, MPFR_RNDN));
    EXACTLY(mpfr_mul_d(out, out, b, MPFR_RNDN));
  }
}

static double prod_double(const piecectx *p, size_t l) {
  double a = elem_a(p, l), b = elem_b(p, l);
  if (p->style == ST_INNER) return (a * (double)scl_a(p, l)) * (b * (double)scl_b(p, l));
  return a * b;
}

/* acc=FORMAT: c = round(c + p) */
static uint64_t fmt_add(const exmy_accum *ac, uint64_t ccode, const piecectx *p, size_t l, uint64_t ctr) {
  const exmy_format *F = &ac->acc_fmt;
  double c = exmy_code_to_f64(F, ccode);
  double pd = prod_double(p, l);
  if (!isfinite(c) || !isfinite(pd)) return exmy_from_f64(F, &ac->acc_rnd, c + pd, ctr, NULL);
  /* exact in double? (TwoSum; the product itself must be exact too) */
  double s = c + pd;
  int prod_exact = 1;
  if (p->style == ST_INNER) {
    double a = elem_a(p, l) * (double)scl_a(p, l), b = elem_b(p, l) * (double)scl_b(p, l);
    prod_exact = fma(a, b, -pd) == 0;
  }
  if (prod_exact && isfinite(s)) {
    double bb = s - c;
    double err = (c - (s - bb)) + (pd - bb);
    if (err == 0) {
      /* an exact zero sum has IEEE 754's sign (6.3): -0 when both addends
       * are -0, or, rounding toward -inf, whenever they are not both +0 */
      if (s == 0 && ac->acc_rnd.mode == EXMY_RDN && (signbit(c) || signbit(pd) || c != 0 || pd != 0)) s = -0.0;
      return exmy_from_f64(F, &ac->acc_rnd, s, ctr, NULL);
    }
  }
  prod_mpfr(p, l, mx_t);
  EXACTLY(mpfr_set_d(mx_u, c, MPFR_RNDN));
  EXACTLY(mpfr_add(mx_u, mx_u, mx_t, MPFR_RNDN));
  if (mpfr_zero_p(mx_u)) return exmy_from_f64(F, &ac->acc_rnd, 0.0, ctr, NULL);
  int neg, e2;
  uint64_t sig;
  mx_sig64(mx_u, &neg, &sig, &e2);
  return exmy_round_pack(F, &ac->acc_rnd, neg, sig, e2, ctr, NULL);
}

/* ---- E2M1 x E2M1 block-scaled operands under the GST row (docs/gemm.md, tc)
 * A model whose row for E2M1 x E2M1 block-scaled operands (exmy_accum's
 * tc_path[EXMY_TC_FP4]; an empty slot: the one before) is blackwell-mxf4nvf4
 * (tc:blackwell) runs tcgen05's kind::mxf4nvf4 on NVFP4 operands (E4M3, 16
 * along k) and kind::mxf4 on MXFP4 ones (E8M0, 32 along k), one datapath:
 * fused sums of 64 products from the piece's start; inside one, each run of
 * products between multiples of 16 along k is summed exactly and multiplied
 * by its two scales, a term aligned by the scales' exponents alone (-139
 * when its products are all zero or a scale is zero); these terms and c
 * (zero: -139) are cut toward zero at F = 35 bits below the largest exponent
 * and summed exactly; the sum is cut to fp32 (23 bits below 2^max(E, -126)),
 * a zero is +0.  MMA-Sim's v1 zero rule does not apply to it (zero=v1 keeps
 * the row and its bits). */
static const char *fp4_row(const exmy_accum *ac) {
  for (int o = EXMY_TC_FP4; o >= 0; o--)
    if (ac->tc_path[o][0]) return ac->tc_path[o];
  return "";
}

static int is_e2m1(const exmy_format *f) { return f->ebits == 2 && f->mbits == 1 && f->bias == 1 && f->is_signed; }

static int fp4_recipes(const exmy_qtensor *a, const exmy_qtensor *b) {
  return (a->recipe == EXMY_RECIPE_NVFP4 && b->recipe == EXMY_RECIPE_NVFP4) ||
         ((a->recipe == EXMY_RECIPE_MX || a->recipe == EXMY_RECIPE_MX_OCP) &&
          (b->recipe == EXMY_RECIPE_MX || b->recipe == EXMY_RECIPE_MX_OCP));
}

static int gst_case(const piecectx *p) {
  return p->style == ST_INNER && !strcmp(fp4_row(&p->g->acc), "blackwell-mxf4nvf4") && fp4_recipes(p->A->q, p->B->q) &&
         is_e2m1(&p->A->q->fmt) && is_e2m1(&p->B->q->fmt);
}

static float gst_piece(const piecectx *p, size_t l0, size_t l1) {
  const opnd *A = p->A, *B = p->B;
  float c = 0.0f;
  for (size_t g0 = l0; g0 < l1; g0 += 64) {
    const size_t g1 = g0 + 64 < l1 ? g0 + 64 : l1;
    double ds = c;
    for (size_t l = g0; l < g1; l++) ds += prod_double(p, l);
    if (isnan(ds)) { c = tu_f32(0x7FFFFFFFu); continue; }
    if (isinf(ds)) { c = (float)ds; continue; }
    __int128 tv[8];  /* signed significands: value tv * 2^(te - tm) */
    int te[8], tm[8], nt = 0;
    for (size_t s0 = g0, s1; s0 < g1; s0 = s1, nt++) {
      s1 = (s0 / 16 + 1) * 16 < g1 ? (s0 / 16 + 1) * 16 : g1;
      __int128 P = 0; /* in units 2^-2: E2M1 values are multiples of 1/2 */
      int allzero = 1;
      for (size_t l = s0; l < s1; l++) {
        const long ia = (long)(elem_a(p, l) * 2), ib = (long)(elem_b(p, l) * 2);
        P += (__int128)ia * ib;
        allzero &= ia * ib == 0;
      }
      const size_t ga = A->grp[p->i * A->k + s0], gb = B->grp[p->j * B->k + s0];
      tv[nt] = P * (__int128)A->gS[ga] * (__int128)B->gS[gb];
      tm[nt] = 2 + A->gM[ga] + B->gM[gb];
      te[nt] = allzero || A->gS[ga] == 0 || B->gS[gb] == 0 ? -139 : A->ge[ga] + B->ge[gb];
    }
    uint64_t Sc;
    int ec;
    decomp((double)c, 23, -126, &Sc, &ec);
    tv[nt] = signbit(c) ? -(__int128)Sc : (__int128)Sc;
    tm[nt] = 23;
    te[nt] = Sc == 0 ? -139 : ec;
    nt++;
    int Emax = te[0];
    for (int t = 1; t < nt; t++) if (te[t] > Emax) Emax = te[t];
    __int128 sum = 0;
    for (int t = 0; t < nt; t++) {
      const int sh = 35 + te[t] - Emax - tm[t];
      const unsigned __int128 mag = tv[t] < 0 ? (unsigned __int128)(-tv[t]) : (unsigned __int128)tv[t];
      unsigned __int128 cut;
      if (sh >= 0) {
        if (sh > 60) { printf("internal: gst shift %d\n", sh); exit(2); }
        cut = mag << sh;
      } else {
        cut = -sh >= 120 ? 0 : mag >> -sh;
      }
      sum += tv[t] < 0 ? -(__int128)cut : (__int128)cut;
    }
    c = tc_out(sum, Emax - 35, 23, 0);
  }
  return c;
}

/* one piece [l0, l1) summed from +0 by the model: P */
static float piece_value(const piecectx *p, size_t l0, size_t l1) {
  const exmy_accum *ac = &p->g->acc;
  switch (ac->kind) {
  case EXMY_ACCUM_FP32: {
    float c = 0.0f;
    for (size_t l = l0; l < l1; l++) c = fmaf(f32_a(p, l), f32_b(p, l), c);
    return c;
  }
  case EXMY_ACCUM_FP32_PAIRWISE: {
    size_t n = l1 - l0;
    float *x = malloc((n + 1) * sizeof *x);
    for (size_t l = l0; l < l1; l++) x[l - l0] = fmaf(f32_a(p, l), f32_b(p, l), 0.0f);
    float r = pairwise(x, n);
    free(x);
    return r;
  }
  case EXMY_ACCUM_FORMAT: {
    const exmy_format *F = &ac->acc_fmt;
    uint64_t c = exmy_from_f64(F, &ac->acc_rnd, 0.0, 0, NULL); /* +0 */
    const uint64_t base = ((uint64_t)p->i * p->g->n + p->j) * (uint64_t)p->g->k;
    for (size_t l = l0; l < l1; l++) c = fmt_add(ac, c, p, l, base + l);
    return (float)exmy_code_to_f64(F, c);
  }
  case EXMY_ACCUM_TC: {
    if (gst_case(p)) return gst_piece(p, l0, l1);
    const int G = ac->tc_group;
    tcterm *t = malloc((size_t)(G + 1) * sizeof *t);
    double *pv = malloc((size_t)(G + 1) * sizeof *pv);
    float c = 0.0f;
    const opnd *A = p->A, *B = p->B;
    for (size_t g0 = l0; g0 < l1; g0 += (size_t)G) {
      size_t g1 = g0 + (size_t)G < l1 ? g0 + (size_t)G : l1;
      int nt = 0;
      for (size_t l = g0; l < g1; l++, nt++) {
        double a = elem_a(p, l), b = elem_b(p, l);
        pv[nt] = prod_double(p, l);
        tcterm *x = &t[nt];
        if (!isfinite(a) || !isfinite(b)) { x->S = 0; x->e = -126; x->Mt = 0; x->neg = 0; continue; }
        uint64_t Sa, Sb;
        int ea, eb;
        decomp(a, A->M, A->emin, &Sa, &ea);
        decomp(b, B->M, B->emin, &Sb, &eb);
        x->neg = (signbit(a) != 0) != (signbit(b) != 0);
        x->S = Sa * Sb;
        x->Mt = A->M + B->M;
        x->e = ea + eb;
        if (p->style == ST_INNER) {
          size_t ga = A->grp[p->i * A->k + l], gb = B->grp[p->j * B->k + l];
          if (A->gS[ga] == 0) x->e += -126; else x->e += A->ge[ga];
          if (B->gS[gb] == 0) x->e += -126; else x->e += B->ge[gb];
          unsigned __int128 S = (unsigned __int128)x->S * A->gS[ga] * B->gS[gb];
          if ((uint64_t)(S >> 64)) { printf("internal: tc product too wide\n"); exit(2); }
          x->S = (uint64_t)S;
          x->Mt += A->gM[ga] + B->gM[gb];
          /* MMA-Sim takes |scale| for ue4m3; our scales are positive */
        }
      }
      c = tc_fused(ac, c, t, pv, nt);
    }
    free(t);
    free(pv);
    return c;
  }
  default:
    printf("internal: piece of model kind %d\n", (int)ac->kind);
    exit(2);
  }
}

/* The whole GEMM by the reference.  Returns 0, or -1 when the case must be
 * rejected. */
static int reference(const gcase *g, gres *r) {
  opnd A, B;
  op_init(&A, &g->A, 0, g->ta, g->m, g->k);
  op_init(&B, &g->B, 1, g->tb, g->n, g->k);
  size_t L;
  int style = classify(&A, &B, g->k, &L);
  r->err = style < 0;
  r->flags = 0;
  r->amax = 0.0f;
  r->d = calloc(g->m * g->n + 1, sizeof *r->d);
  if (style < 0) { op_free(&A); op_free(&B); return -1; }
  const exmy_accum *ac = &g->acc;
  const int use_c = g->has_c && g->beta != 0.0f;
  const float tA = g->A.tensor_scale_inv, tB = g->B.tensor_scale_inv;
  piecectx p;
  p.g = g; p.A = &A; p.B = &B; p.style = style;
  mx_init();
  for (size_t i = 0; i < g->m; i++)
    for (size_t j = 0; j < g->n; j++) {
      p.i = i; p.j = j;
      const uint64_t idx = (uint64_t)i * g->n + j;
      double cv = use_c ? exmy_code_to_f64(&g->cf, exmy_code_get(&g->cf, g->c, idx)) : 0.0;
      if (ac->kind == EXMY_ACCUM_EXACT) {
        /* V = alpha tA tB sum (a sa)(b sb) [+ beta scale_c c], exactly */
        int nan = 0, pinf = 0, ninf = 0;
        mpfr_set_zero(mx_acc, 1);
        for (size_t l = 0; l < g->k; l++) {
          double f[4] = {elem_a(&p, l), (double)scl_a(&p, l), elem_b(&p, l), (double)scl_b(&p, l)};
          int anynan = 0, anyinf = 0, anyzero = 0, neg = 0;
          for (int q = 0; q < 4; q++) {
            if (isnan(f[q])) anynan = 1;
            else if (isinf(f[q])) anyinf = 1;
            else if (f[q] == 0) anyzero = 1;
            if (signbit(f[q])) neg ^= 1;
          }
          if (anynan || (anyinf && anyzero)) { nan = 1; continue; }
          if (anyinf) { if (neg) ninf = 1; else pinf = 1; continue; }
          if (anyzero) continue;
          EXACTLY(mpfr_set_d(mx_t, f[0] * f[2], MPFR_RNDN)); /* a*b: <= 48 bits, exact */
          EXACTLY(mpfr_mul_d(mx_t, mx_t, f[1], MPFR_RNDN));
          EXACTLY(mpfr_mul_d(mx_t, mx_t, f[3], MPFR_RNDN));
          EXACTLY(mpfr_add(mx_acc, mx_acc, mx_t, MPFR_RNDN));
        }
        /* the scalar factors alpha tA tB are finite here */
        EXACTLY(mpfr_mul_d(mx_acc, mx_acc, (double)g->alpha, MPFR_RNDN));
        EXACTLY(mpfr_mul_d(mx_acc, mx_acc, (double)tA, MPFR_RNDN));
        EXACTLY(mpfr_mul_d(mx_acc, mx_acc, (double)tB, MPFR_RNDN));
        if (pinf || ninf) {
          double s = (double)g->alpha * (double)tA * (double)tB;
          if (s == 0) nan = 1;
          else if (s < 0) { int t2 = pinf; pinf = ninf; ninf = t2; }
        }
        if (use_c) {
          double sc = (double)g->beta * (double)g->scale_c;
          if (isnan(cv) || (isinf(cv) && sc == 0)) nan = 1;
          else if (isinf(cv)) { if ((cv < 0) != (sc < 0)) ninf = 1; else pinf = 1; }
          else {
            EXACTLY(mpfr_set_d(mx_t, cv, MPFR_RNDN));
            EXACTLY(mpfr_mul_d(mx_t, mx_t, (double)g->beta, MPFR_RNDN));
            EXACTLY(mpfr_mul_d(mx_t, mx_t, (double)g->scale_c, MPFR_RNDN));
            /* The sum of products is +0 when it is zero (MPFR, RNDN); this one
             * visible addition gives an exact zero IEEE 754's sign under D's
             * rounding: -0 toward -inf (MPFR's RNDD does the same) */
            EXACTLY(mpfr_add(mx_acc, mx_acc, mx_t, g->drnd.mode == EXMY_RDN ? MPFR_RNDD : MPFR_RNDN));
          }
        }
        if (pinf && ninf) nan = 1;
        uint64_t code;
        unsigned fl = 0;
        if (nan) {
          code = exmy_from_f64(&g->df, &g->drnd, NAN, idx, &fl);
        } else if (pinf || ninf) {
          r->amax = INFINITY;
          double x = pinf ? INFINITY : -INFINITY;
          if (g->scale_d == 0) x = NAN;
          else if (g->scale_d < 0) x = -x;
          code = exmy_from_f64(&g->df, &g->drnd, x, idx, &fl);
        } else {
          /* amax_d = fp32(|V|) */
          float av = mpfr_get_flt(mx_acc, MPFR_RNDN);
          av = fabsf(av);
          if (av > r->amax) r->amax = av;
          EXACTLY(mpfr_mul_d(mx_acc, mx_acc, (double)g->scale_d, MPFR_RNDN));
          if (mpfr_zero_p(mx_acc)) {
            /* an exact zero: MPFR's signs are IEEE's (RNDN): the sum is +0, then
             * alpha's sign, then + beta*scale_c*c (-0 only when both are -0) */
            code = exmy_round_pack(&g->df, &g->drnd, mpfr_signbit(mx_acc) != 0, 0, 0, idx, &fl);
          } else {
            int neg, e2;
            uint64_t sig;
            mx_sig64(mx_acc, &neg, &sig, &e2);
            code = exmy_round_pack(&g->df, &g->drnd, neg, sig, e2, idx, &fl);
            /* second opinion: the MPFR oracle on a round-to-odd double */
            if (g->drnd.mode != EXMY_SR && !g->drnd.ftz) {
              oracle_fmt of;
              char why[EXMY_ERRLEN];
              double xo = mx_odd_double(mx_acc);
              if (oracle_fmt_init(&of, &g->df, why, sizeof why) == 0 && isfinite(xo) && fabs(xo) >= DBL_MIN) {
                unsigned ofl, omask;
                uint64_t oc = oracle_convert(&of, &g_ows, g->drnd.mode, g->drnd.sat, 0, xo, &ofl, &omask);
                mx_wide_range();
                CHECK(oc == code, "exact: MPFR oracle gives 0x%" PRIx64 ", round_pack 0x%" PRIx64 " for %a (%s)",
                      oc, code, xo, g->df.name);
                CHECK((ofl & omask) == (fl & omask), "exact: oracle flags %x, round_pack flags %x", ofl, fl);
              }
            }
          }
        }
        r->d[idx] = code;
        r->flags |= fl;
        continue;
      }
      /* pieces */
      const size_t N = ac->chunk;
      const int promote = style == ST_PROMOTE;
      const int has_F = N > 0 || promote;
      float P;
      if (!has_F) {
        P = piece_value(&p, 0, g->k);
      } else {
        float F = 0.0f;
        size_t l0 = 0;
        while (l0 < g->k) {
          size_t l1 = g->k;
          if (N) { size_t b = (l0 / N + 1) * N; if (b < l1) l1 = b; }
          if (promote) { size_t b = (l0 / L + 1) * L; if (b < l1) l1 = b; }
          float Pp = piece_value(&p, l0, l1);
          float w = promote ? scl_a(&p, l0) * scl_b(&p, l0) : 1.0f;
          F = fmaf(w, Pp, F);
          l0 = l1;
        }
        P = F;
      }
      /* epilogue */
      float s;
      if (g->k == 0) s = g->alpha; /* no scale groups at all */
      else if (style == ST_OUTER) s = (g->alpha * scl_a(&p, 0)) * scl_b(&p, 0);
      else if (style == ST_PROMOTE) s = g->alpha;
      else s = (g->alpha * tA) * tB;
      float z;
      if (use_c) {
        float cf = (float)cv;
        z = fmaf(s, P, g->beta * (g->scale_c * cf));
      } else {
        z = s * P;
      }
      if (!isnan(z) && fabsf(z) > r->amax) r->amax = fabsf(z);
      /* docs/gemm.md: a NaN z becomes the positive NaN before the cast */
      if (isnan(z)) z = NAN;
      float zd = z * g->scale_d;
      if (isnan(zd)) zd = NAN;
      unsigned fl = 0;
      r->d[idx] = exmy_from_f32(&g->df, &g->drnd, zd, idx, &fl);
      r->flags |= fl;
    }
  op_free(&A);
  op_free(&B);
  return 0;
}

/* ======================================================================
 * Running a case against the library
 * ====================================================================== */
static const char *rmode_name(exmy_round_mode m) { return exmy_round_mode_name(m); }

static void describe(const gcase *g) {
  printf("  case: %s\n", g->what ? g->what : "");
  printf("  model '%s', m=%zu n=%zu k=%zu trans_a=%d trans_b=%d\n", g->model, g->m, g->n, g->k, g->ta, g->tb);
  printf("  A: %s (%s) stored %zux%zu, blocks %zux%zu; B: %s (%s) stored %zux%zu, blocks %zux%zu\n",
         g->fa, g->ra, g->A.rows, g->A.cols, g->A.block_rows, g->A.block_cols,
         g->fb, g->rb, g->B.rows, g->B.cols, g->B.block_rows, g->B.block_cols);
  printf("  alpha=%a beta=%a scale_c=%a scale_d=%a C=%s D=%s round=%s sat=%d seed=%" PRIu64 " tA=%a tB=%a\n",
         (double)g->alpha, (double)g->beta, (double)g->scale_c, (double)g->scale_d,
         g->has_c ? g->cf.name : "none", g->df.name, rmode_name(g->drnd.mode), (int)g->drnd.sat,
         g->drnd.seed, (double)g->A.tensor_scale_inv, (double)g->B.tensor_scale_inv);
}

static void dump_ij(const gcase *g, size_t i, size_t j) {
  opnd A, B;
  op_init(&A, &g->A, 0, g->ta, g->m, g->k);
  op_init(&B, &g->B, 1, g->tb, g->n, g->k);
  size_t lim = g->k < 256 ? g->k : 256;
  printf("  op(A) row %zu codes (%s):", i, g->fa);
  for (size_t l = 0; l < lim; l++) {
    if (l % 32 == 0) printf("\n   ");
    printf(" %0*" PRIx64, exmy_code_hex_digits(&g->A.fmt), exmy_code_get(&g->A.fmt, g->A.codes, op_index(&A, i, l)));
  }
  printf("\n  op(B) column %zu codes (%s):", j, g->fb);
  for (size_t l = 0; l < lim; l++) {
    if (l % 32 == 0) printf("\n   ");
    printf(" %0*" PRIx64, exmy_code_hex_digits(&g->B.fmt), exmy_code_get(&g->B.fmt, g->B.codes, op_index(&B, j, l)));
  }
  if (lim < g->k) printf(" ... (%zu more)", g->k - lim);
  printf("\n  scale_inv along k (A | B):");
  for (size_t l = 0; l < g->k; l += (A.K < B.K ? A.K : B.K)) {
    printf(" [%zu] %a|%a", l, (double)g->A.scale_inv[A.grp[i * g->k + l]], (double)g->B.scale_inv[B.grp[j * g->k + l]]);
    if (l > 2048) { printf(" ..."); break; }
  }
  if (g->has_c) printf("\n  C code 0x%" PRIx64, exmy_code_get(&g->cf, g->c, i * g->n + j));
  printf("\n");
  op_free(&A);
  op_free(&B);
}

static int g_detail_budget = 6, g_cross_detail;
static int g_failcase_lines = 40;

enum { V_GEMM1 = 0, V_GEMM2, V_REF, NVAR };
static const char *var_name[] = {"exmy_gemm(threads=1)", "exmy_gemm(threads=2)", "exmy_gemm_ref"};

/* D and amax_d are exmy_gemm's outputs, passed at the call. */
static void args_of(const gcase *g, exmy_gemm_args *a) {
  exmy_gemm_args_init(a);
  a->trans_a = g->ta;
  a->trans_b = g->tb;
  a->a = &g->A;
  a->b = &g->B;
  a->alpha = g->alpha;
  a->beta = g->beta;
  a->c_fmt = g->has_c ? &g->cf : NULL;
  a->c = g->has_c ? g->c : NULL;
  a->scale_c = g->scale_c;
  a->d_fmt = &g->df;
  a->scale_d = g->scale_d;
  a->d_rnd = g->drnd;
  a->accum = &g->acc;
}

/* Returns the number of mismatching variants. */
static int run_case(gcase *g) {
  gres r;
  g_cases++;
  if ((int)g->acc.kind >= 0 && (int)g->acc.kind < 16) g_model_cases[g->acc.kind]++;
  reference(g, &r);
  if (r.err) g_errcases++;
  int bad = 0;
  const size_t mn = g->m * g->n, cb = (size_t)exmy_code_bytes(&g->df);
  void *d0 = calloc(mn + 1, cb);
  float amax0 = 0;
  int ret0 = 0;
  for (int v = 0; v < NVAR; v++) {
    exmy_gemm_args a;
    void *d = malloc(mn * cb + 8);
    memset(d, 0xA5, mn * cb + 8);
    float amax = tu_f32(0x7fc0dead);
    args_of(g, &a);
    a.threads = v == V_GEMM2 ? 2 : 1;
    char err[EXMY_ERRLEN] = "";
    float *amax_p = g->want_amax ? &amax : NULL;
    unsigned fl = 0;
    int grc = v == V_REF ? exmy_gemm_ref(&a, d, amax_p, &fl, err, sizeof err)
                         : exmy_gemm(&a, d, amax_p, &fl, err, sizeof err);
    /* ret: the flags on success (what exmy_gemm returned before 1.0), else
     * the return code (-1; anything else fails the checks below) */
    int ret = grc == 0 ? (int)fl : grc;
    int vbad = 0;
    if (v == V_GEMM1) {
      size_t cm = 99, cn = 99, ck = 99;
      char cerr[EXMY_ERRLEN] = "";
      int crc = exmy_gemm_check(&a, &cm, &cn, &ck, cerr, sizeof cerr);
      CHECK(r.err ? crc == -1 : (crc == 0 && cm == g->m && cn == g->n && ck == g->k),
            "exmy_gemm_check returned %d (%zu x %zu x %zu, '%s') for a case the spec %s", crc, cm, cn, ck, cerr,
            r.err ? "rejects" : "accepts");
    }
    if (r.err) {
      CHECK(ret == -1, "%s accepted layouts the spec rejects (model %s, A %s %zux%zu blocks %zux%zu, B %s %zux%zu blocks %zux%zu, ta=%d tb=%d)",
            var_name[v], g->model, g->ra, g->A.rows, g->A.cols, g->A.block_rows, g->A.block_cols,
            g->rb, g->B.rows, g->B.cols, g->B.block_rows, g->B.block_cols, g->ta, g->tb);
      CHECK(ret != -1 || strlen(err) > 10, "%s: error message too short: '%s'", var_name[v], err);
      if (g_verbose && v == 0) printf("  rejected as expected: %s\n", err);
      vbad = ret != -1;
    } else if (ret == -1 && g->k == 0) {
      /* k = 0 may be refused cleanly */
      CHECK(strlen(err) > 5, "k = 0 refused without a message");
      if (g_verbose && v == 0) printf("  k = 0 refused: %s\n", err);
    } else {
      CHECK(ret != -1, "%s failed: %s (model %s, m=%zu n=%zu k=%zu, A %s %s, B %s %s)", var_name[v], err, g->model,
            g->m, g->n, g->k, g->fa, g->ra, g->fb, g->rb);
      if (ret == -1) vbad = 1;
      else {
        size_t nbad = 0, first = 0;
        for (size_t t = 0; t < mn; t++) {
          uint64_t got = exmy_code_get(&g->df, d, t);
          if (got == r.d[t]) continue;
          /* NaN results are D's positive NaN (docs/gemm.md), so a NaN of the
           * other sign is a failure; it is counted apart for the summary */
          if (exmy_classify(&g->df, got) == EXMY_CLASS_NAN && exmy_classify(&g->df, r.d[t]) == EXMY_CLASS_NAN &&
              (got ^ r.d[t]) == g->df.sign_mask)
            g_nan_sign++;
          if (!nbad) first = t;
          nbad++;
        }
        if (v == V_GEMM1) { memcpy(d0, d, mn * cb); amax0 = amax; ret0 = ret; }
        else {
          size_t t1 = 0;
          while (t1 < mn && exmy_code_get(&g->df, d, t1) == exmy_code_get(&g->df, d0, t1)) t1++;
          CHECK(t1 == mn && ret == ret0 && (!g->want_amax || tu_bits32(amax) == tu_bits32(amax0)),
                "%s and exmy_gemm(threads=1) differ (model %s, m=%zu n=%zu k=%zu): D[%zu][%zu] 0x%" PRIx64 " vs 0x%" PRIx64
                ", flags 0x%x vs 0x%x", var_name[v], g->model, g->m, g->n, g->k, t1 / (g->n ? g->n : 1), t1 % (g->n ? g->n : 1),
                t1 < mn ? exmy_code_get(&g->df, d, t1) : 0, t1 < mn ? exmy_code_get(&g->df, d0, t1) : 0, (unsigned)ret, (unsigned)ret0);
          if (t1 < mn && g_detail_budget > 0 && !g_cross_detail++) {
            describe(g);
            dump_ij(g, t1 / g->n, t1 % g->n);
          }
        }
        CHECK(nbad == 0, "%s: %zu of %zu D codes differ; first (i=%zu, j=%zu): expected 0x%" PRIx64 " got 0x%" PRIx64
              " (model %s, D %s)", var_name[v], nbad, mn, first / g->n, first % g->n, r.d[first],
              exmy_code_get(&g->df, d, first), g->model, g->df.name);
        CHECK((unsigned)ret == r.flags, "%s: flags 0x%x, expected 0x%x (model %s)", var_name[v], (unsigned)ret, r.flags, g->model);
        int amax_bad = g->want_amax && tu_bits32(amax) != tu_bits32(r.amax);
        CHECK(!amax_bad, "%s: amax_d %a (0x%08x), expected %a (0x%08x) (model %s)", var_name[v], (double)amax,
              tu_bits32(amax), (double)r.amax, tu_bits32(r.amax), g->model);
        CHECK(memcmp((char *)d + mn * cb, "\xA5\xA5\xA5\xA5\xA5\xA5\xA5\xA5", 8) == 0, "%s wrote past D", var_name[v]);
        vbad = nbad || (unsigned)ret != r.flags || amax_bad;
        if (vbad && g_detail_budget > 0) {
          g_detail_budget--;
          describe(g);
          if (nbad) {
            float zf = (float)exmy_code_to_f64(&g->df, r.d[first]);
            printf("  expected D[%zu][%zu] = 0x%" PRIx64 " (%a), got 0x%" PRIx64 " (%a)\n", first / g->n, first % g->n,
                   r.d[first], (double)zf, exmy_code_get(&g->df, d, first),
                   exmy_code_to_f64(&g->df, exmy_code_get(&g->df, d, first)));
            dump_ij(g, first / g->n, first % g->n);
          }
        }
      }
    }
    bad += vbad;
    free(d);
  }
  if (bad) {
    g_fail_cases++;
    if (g_failcase_lines-- > 0)
      printf("FAILCASE model '%s' m=%zu n=%zu k=%zu ta=%d tb=%d A %s %s B %s %s D %s C %s (%s)\n", g->model, g->m, g->n, g->k,
             g->ta, g->tb, g->fa, g->ra, g->fb, g->rb, g->df.name, g->has_c ? g->cf.name : "none", g->what ? g->what : "");
  }
  free(r.d);
  free(d0);
  return bad;
}

/* ======================================================================
 * Building cases
 * ====================================================================== */
static void set_model(gcase *g, const char *text) {
  char err[EXMY_ERRLEN];
  snprintf(g->model, sizeof g->model, "%s", text);
  if (exmy_accum_parse(text, &g->acc, err, sizeof err)) {
    printf("cannot parse model '%s': %s\n", text, err);
    exit(1);
  }
}

static void free_case(gcase *g) {
  exmy_qtensor_free(&g->A);
  exmy_qtensor_free(&g->B);
  free(g->c);
  g->c = NULL;
}

/* float data for an operand, in op layout (ext x k), values drawn by pattern */
enum { P_RANDOM = 0, P_CANCEL, P_ZEROROW, P_ONES, P_NPAT };

static float rand_float_mag(int span, int center) {
  int e = center + (span ? (int)rndu((uint64_t)(2 * span + 1)) - span : 0);
  float v = (float)ldexp(1.0 + rndf(), e);
  return (rnd64() & 1) ? -v : v;
}

/* store an op-layout float into the storage layout */
static void put_op(float *x, int isB, int trans, size_t ext, size_t k, size_t xi, size_t l, float v) {
  size_t r, c, cols;
  if (!isB) { r = trans ? l : xi; c = trans ? xi : l; cols = trans ? ext : k; }
  else { r = trans ? xi : l; c = trans ? l : xi; cols = trans ? k : ext; }
  x[r * cols + c] = v;
}

/* Make operand A (isB = 0, ext = m) or B (isB = 1, ext = n). */
static void make_operand(gcase *g, int isB, const char *fmtname, const exmy_format *fmtp, const char *recipe,
                         int pattern, int span, int center) {
  const size_t ext = isB ? g->n : g->m, k = g->k;
  const int trans = isB ? g->tb : g->ta;
  const size_t rows = !isB ? (trans ? k : ext) : (trans ? ext : k);
  const size_t cols = !isB ? (trans ? ext : k) : (trans ? k : ext);
  float *x = malloc((rows * cols + 1) * sizeof *x);
  for (size_t xi = 0; xi < ext; xi++)
    for (size_t l = 0; l < k; l++) {
      float v;
      switch (pattern) {
      case P_CANCEL: {
        /* A: pairs (u, u); B: pairs (w, -w); a large value and its negative at both ends */
        size_t t = l / 2;
        uint64_t h = tu_next(&(uint64_t){(uint64_t)(xi * 1000003 + t) ^ g_rng});
        float u = (float)ldexp(1.0 + (double)(h >> 11) * 0x1p-53, (int)(h % 13) - 6 + center);
        if (isB) u = (l & 1) ? -u : u;
        if (l == 0 || (k > 1 && l == k - 1 && (k & 1) == 0)) u = (float)ldexp(1.0, center + 8) * (isB && l ? -1.0f : 1.0f);
        if ((k & 1) && l == k - 1) u = (float)ldexp(1.0, center - 10);
        v = u;
        break;
      }
      case P_ZEROROW:
        v = (xi == 0 || xi == ext - 1) ? 0.0f : rand_float_mag(span, center);
        break;
      case P_ONES:
        v = 1.0f;
        break;
      default:
        v = (rndu(20) == 0) ? 0.0f : rand_float_mag(span, center);
      }
      put_op(x, isB, trans, ext, k, xi, l, v);
    }
  exmy_recipe rec;
  exmy_recipe_state rs;
  char err[EXMY_ERRLEN];
  if (exmy_recipe_parse(recipe, &rec, err, sizeof err) || exmy_recipe_state_new(&rec, &rs, err, sizeof err)) {
    printf("cannot parse recipe '%s': %s\n", recipe, err);
    exit(1);
  }
  exmy_format f = fmtp ? *fmtp : tu_format(fmtname);
  exmy_qtensor *q = isB ? &g->B : &g->A;
  /* cuda_fp8.h's cast (rnd NULL before 1.0): rne, EXMY_SAT_FINITE */
  exmy_rounding cuda = exmy_rounding_default();
  cuda.mode = EXMY_RNE;
  cuda.sat = EXMY_SAT_FINITE;
  if (exmy_recipe_quantize(&rec, &f, &cuda, x, rows, cols, &rs, q, NULL, err, sizeof err)) {
    printf("cannot quantize %zux%zu to %s with %s: %s\n", rows, cols, f.name, recipe, err);
    exit(1);
  }
  exmy_recipe_state_free(&rs);
  free(x);
  snprintf(isB ? g->fb : g->fa, 64, "%s", f.name);
  snprintf(isB ? g->rb : g->ra, 64, "%s", recipe);
}

/* Overwrite codes of an operand (op layout) by a code-level pattern. */
enum { CP_NONE = 0, CP_ALLCODES, CP_SPECIAL, CP_TINY, CP_CANCEL, CP_TINYA, CP_N };

static int code_ok(const exmy_format *f, uint64_t c, int allow_special) {
  exmy_class cl = exmy_classify(f, c);
  if (cl == EXMY_CLASS_NAN || cl == EXMY_CLASS_INF) return allow_special;
  return 1;
}

static uint64_t rand_code(const exmy_format *f, int allow_special) {
  const uint64_t mask = f->bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << f->bits) - 1);
  for (int t = 0; t < 1000; t++) {
    uint64_t c = rnd64() & mask;
    if (code_ok(f, c, allow_special)) return c;
  }
  return 0;
}

/* a code of magnitude near the bottom: subnormal or smallest normals */
static uint64_t tiny_code(const exmy_format *f) {
  uint64_t mag = rndu((uint64_t)1 << (f->mbits + 1 < 20 ? f->mbits + 1 : 20)) + (rndu(2) << f->mbits);
  if (mag > f->max_mag) mag = f->max_mag;
  return (f->is_signed && (rnd64() & 1)) ? (mag | f->sign_mask) : mag;
}

static uint64_t special_code(const exmy_format *f) {
  exmy_info inf;
  exmy_format_info(f, &inf);
  int s = f->is_signed ? (int)rndu(2) : 0;
  if (inf.n_inf && rndu(2)) return inf.inf_codes[s < inf.n_inf ? s : 0];
  if (inf.n_nan) return inf.nan_first[s < inf.n_nan_ranges ? s : 0];
  return f->max_mag;
}

static void set_op_code(exmy_qtensor *q, const gcase *g, int isB, size_t xi, size_t l, uint64_t code) {
  opnd o;
  memset(&o, 0, sizeof o);
  o.q = q; o.isB = isB; o.trans = isB ? g->tb : g->ta;
  exmy_code_set(&q->fmt, q->codes, op_index(&o, xi, l), code);
}

static void code_pattern(gcase *g, int isB, int cp) {
  exmy_qtensor *q = isB ? &g->B : &g->A;
  const exmy_format *f = &q->fmt;
  const size_t ext = isB ? g->n : g->m;
  for (size_t xi = 0; xi < ext; xi++)
    for (size_t l = 0; l < g->k; l++) {
      uint64_t c;
      switch (cp) {
      case CP_ALLCODES: c = rand_code(f, 0); break;
      case CP_SPECIAL: c = rndu(12) == 0 ? special_code(f) : rand_code(f, 0); break;
      case CP_TINY: c = rndu(4) ? tiny_code(f) : rand_code(f, 0); break;
      case CP_CANCEL: {
        /* op(A) (x, 2t) = (x, 2t+1); op(B) (2t+1, y) = -(2t, y) */
        uint64_t h = tu_next(&(uint64_t){(uint64_t)(xi * 7919 + l / 2) ^ (g_rng * 3)});
        uint64_t mask = f->bits >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << f->bits) - 1);
        c = h & mask;
        if (!code_ok(f, c, 0)) c = f->max_mag >> 1;
        if (isB && (l & 1) && f->is_signed) c ^= f->sign_mask;
        if (!code_ok(f, c, 0)) c = 0;
        break;
      }
      default: return;
      }
      set_op_code(q, g, isB, xi, l, c);
    }
}

/* e8m5, e8m1, e8m13: binary32's layout cut short (the fp32 kernel shifts their codes) */
static const char *elem_formats[] = {"e4m3fn", "e5m2", "e4m3fnuz", "e3m2fn", "e2m1fn", "bf16", "f16", "f32", "e8m5", "e8m1", "e8m13"};
#define N_ELEM (sizeof elem_formats / sizeof *elem_formats)

/* random element format: a named one, or a random ExMy (E <= 8, M <= 10) */
static exmy_format pick_elem(int allow_random) {
  if (allow_random && rndu(6) == 0) {
    for (;;) {
      exmy_format f = tu_random_format(&g_rng);
      /* the GEMM wants a zero, signed or not; tu_random_format always has one */
      if (f.mbits <= 23 && f.ebits <= 8) return f;
    }
  }
  return tu_format(elem_formats[rndu(N_ELEM)]);
}

static void fill_c(gcase *g, const char *cfmt, int allow_special) {
  g->has_c = 1;
  g->cf = tu_format(cfmt);
  size_t mn = g->m * g->n;
  g->c = calloc(mn + 1, (size_t)exmy_code_bytes(&g->cf));
  exmy_rounding rr = exmy_rounding_default();
  for (size_t t = 0; t < mn; t++) {
    uint64_t code;
    if (rndu(3) == 0) code = rand_code(&g->cf, allow_special && rndu(8) == 0);
    else code = exmy_from_f64(&g->cf, &rr, rand_float_mag(6, 0), 0, NULL);
    exmy_code_set(&g->cf, g->c, t, code);
  }
}

static void base_case(gcase *g, size_t m, size_t n, size_t k, int ta, int tb) {
  memset(g, 0, sizeof *g);
  g->m = m; g->n = n; g->k = k; g->ta = ta; g->tb = tb;
  g->alpha = 1.0f; g->beta = 0.0f; g->scale_c = 1.0f; g->scale_d = 1.0f;
  g->df = tu_format("f32");
  g->drnd = exmy_rounding_default();
  g->want_amax = 1;
  set_model(g, "fp32");
}

/* A hand-built case: m x n x k, no transposes, the model, A and B in formats fa and fb
 * with unit scales (codes set by the caller). */
static void hand_case(gcase *g, size_t m, size_t n, size_t k, const char *fa, const char *fb, const char *model,
                      const char *what) {
  base_case(g, m, n, k, 0, 0);
  set_model(g, model);
  g->what = what;
  make_operand(g, 0, fa, NULL, "none", P_ONES, 0, 0);
  make_operand(g, 1, fb, NULL, "none", P_ONES, 0, 0);
}

/* hand_case with e4m3fn x e4m3fn */
static void e4m3_case(gcase *g, size_t m, size_t n, size_t k, const char *model, const char *what) {
  hand_case(g, m, n, k, "e4m3fn", "e4m3fn", model, what);
}

/* ======================================================================
 * Part 1: model parsing against the preset table of docs/gemm.md
 * ====================================================================== */
/* The datapath rows of a tc model (exmy_accum.tc_path, docs/gemm.md): what
 * each kind of operands runs ("" in a slot: the slot before), set by the
 * presets and path keys, kept by zero=v1, promote and a zero exponent equal
 * to the row's; g, f, align, out, norm and another zero leave the table
 * (no rows: the keys' model).  The canonical text says which and reads back
 * to the same rows and keys; a bad row is rejected naming it, by the parser
 * and, in a hand-made model, by exmy_gemm_check. */
static const char *row_of(const exmy_accum *a, int ops) {
  for (int o = ops; o >= 0; o--)
    if (a->tc_path[o][0]) return a->tc_path[o];
  return "";
}

static void part_parse_rows(void) {
#define BW "blackwell-f8f6f4-f32", "blackwell-mx", "blackwell-mxf4nvf4"
#define HP "hopper-fp8-f32", "hopper-fp8-f32", "hopper-fp8-f32"
#define NOROWS "", "", ""
  static const struct { const char *text, *plain, *block, *fp4, *canon; int zero; } tab[] = {
    {"tc:blackwell", BW, "tc:blackwell", -133},
    {"tc:blackwell,zero=v1", BW, "tc:blackwell,zero=v1", 0},
    {"tc:blackwell,zero=-133,promote=256", BW, "tc:blackwell,promote=256", -133},
    {"tc:blackwell,promote=64,zero=v1", BW, "tc:blackwell,promote=64,zero=v1", 0},
    {"tc:hopper,zero=v1", HP, "tc:hopper,zero=v1", 0},
    {"tc:hopper-fastacc", HP, "tc:hopper-fastacc", -133},
    {"tc:hopper,promote=0", HP, "tc:hopper-fastacc", -133},
    {"tc:ada-fastacc,promote=64,zero=v1", "ada-fp8-f32", "ada-fp8-f32", "ada-fp8-f32", "tc:ada,promote=64,zero=v1", 0},
    {"tc", HP, "tc:hopper", -133},
    {"tc:path=blackwell-f8f6f4-f32,block-path=blackwell-mx,fp4-path=blackwell-mxf4nvf4,promote=0", BW, "tc:blackwell", -133},
    {"tc:path=hopper-fp8-f32,fp4-path=blackwell-mxf4nvf4", "hopper-fp8-f32", "hopper-fp8-f32", "blackwell-mxf4nvf4",
     "tc:path=hopper-fp8-f32,fp4-path=blackwell-mxf4nvf4,promote=128", -133},
    {"tc:ampere-bf16,path=ada-fp8-f32,block-path=blackwell-mx,zero=v1", "ada-fp8-f32", "blackwell-mx", "blackwell-mx",
     "tc:path=ada-fp8-f32,block-path=blackwell-mx,promote=0,zero=v1", 0},
    {"tc:blackwell,g=64", NOROWS, "tc:g=64,f=25,align=trunc,out=23,norm=trunc,promote=0,zero=-133", -133},
    {"tc:blackwell,zero=-140", NOROWS, "tc:g=32,f=25,align=trunc,out=23,norm=trunc,promote=0,zero=-140", -140},
    {"tc:g=32,f=13,out=13,zero=-133", NOROWS, "tc:g=32,f=13,align=trunc,out=13,norm=trunc,promote=128,zero=-133", -133},
  };
#undef BW
#undef HP
#undef NOROWS
  for (size_t t = 0; t < sizeof tab / sizeof *tab; t++) {
    exmy_accum a, b;
    char err[EXMY_ERRLEN] = "", name[256] = "";
    int rc = exmy_accum_parse(tab[t].text, &a, err, sizeof err);
    CHECK(rc == 0, "accum '%s' does not parse: %s", tab[t].text, err);
    if (rc) continue;
    CHECK(!strcmp(row_of(&a, EXMY_TC_PLAIN), tab[t].plain) && !strcmp(row_of(&a, EXMY_TC_BLOCK), tab[t].block) &&
              !strcmp(row_of(&a, EXMY_TC_FP4), tab[t].fp4) && a.tc_zero == tab[t].zero,
          "'%s': rows '%s' '%s' '%s' zero %d; want '%s' '%s' '%s' zero %d", tab[t].text, row_of(&a, 0), row_of(&a, 1),
          row_of(&a, 2), a.tc_zero, tab[t].plain, tab[t].block, tab[t].fp4, tab[t].zero);
    exmy_accum_to_string(&a, name, sizeof name);
    CHECK(!strcmp(name, tab[t].canon), "'%s' prints as '%s', want '%s'", tab[t].text, name, tab[t].canon);
    rc = exmy_accum_parse(name, &b, err, sizeof err);
    CHECK(rc == 0, "'%s' (of '%s') does not parse: %s", name, tab[t].text, err);
    if (rc) continue;
    int same = b.kind == a.kind && b.chunk == a.chunk && b.tc_group == a.tc_group && b.tc_frac == a.tc_frac &&
               b.tc_out_frac == a.tc_out_frac && b.tc_align_rne == a.tc_align_rne && b.tc_norm_rne == a.tc_norm_rne &&
               b.tc_zero == a.tc_zero;
    for (int o = 0; o < EXMY_TC_NOPERANDS; o++) same &= !strcmp(row_of(&a, o), row_of(&b, o));
    CHECK(same, "'%s' (of '%s') reads back to another model", name, tab[t].text);
  }
  /* bad rows: the message names the bad value */
  static const struct { const char *text, *named; } bad[] = {
    {"tc:path=nosuchrow", "nosuchrow"},
    {"tc:blackwell,fp4-path=blackwell-mxf4", "blackwell-mxf4"},
    {"tc:path=blackwell-mxf4nvf4", "blackwell-mxf4nvf4"},      /* GST needs block scales */
    {"tc:path=cdna3-fp8", "cdna3-fp8"},                        /* not a fused sum the GEMM runs */
    {"tc:path=hopper-fp8-f16", "hopper-fp8-f16"},              /* fp16 output */
    {"tc:hopper,block-path=hopper-fp8-f16-mma", "hopper-fp8-f16-mma"}, /* pieces interleaved, C last */
    {"tc:g=16,block-path=blackwell-mx", "blackwell-mx"},       /* a block row without a plain one */
  };
  for (size_t t = 0; t < sizeof bad / sizeof *bad; t++) {
    exmy_accum a;
    char err[EXMY_ERRLEN] = "";
    int rc = exmy_accum_parse(bad[t].text, &a, err, sizeof err);
    CHECK(rc == -1 && strstr(err, bad[t].named), "bad model '%s' accepted (%d) or its message does not name '%s': %s",
          bad[t].text, rc, bad[t].named, err);
    if (g_verbose) printf("  '%s' -> %s\n", bad[t].text, err);
  }
  /* a hand-made model: exmy_gemm_check names the bad row or key */
  static const struct { const char *plain, *block; int frac, zero; const char *named; } hand[] = {
    {"hopper-fp8-f32", "", 13, -133, NULL},
    {"hopper-fp8-f32", "", 13, 0, NULL},
    {"bogus-row", "", 13, -133, "bogus-row"},
    {"hopper-fp8-f32", "", 20, -133, "f 20"},
    {"hopper-fp8-f32", "", 13, -132, "zero -132"},
    {"hopper-fp8-f32", "ada-fp8-f16", 13, -133, "ada-fp8-f16"},
    {"", "blackwell-mx", 13, -133, "blackwell-mx"},
  };
  exmy_format e4 = tu_format("e4m3fn"), f32 = tu_format("f32");
  uint8_t codes[4] = {0x38, 0x38, 0x38, 0x38};
  for (size_t t = 0; t < sizeof hand / sizeof *hand; t++) {
    exmy_accum a;
    char err[EXMY_ERRLEN] = "";
    exmy_accum_parse("tc:hopper", &a, NULL, 0);
    snprintf(a.tc_path[EXMY_TC_PLAIN], sizeof a.tc_path[0], "%s", hand[t].plain);
    snprintf(a.tc_path[EXMY_TC_BLOCK], sizeof a.tc_path[1], "%s", hand[t].block);
    a.tc_path[EXMY_TC_FP4][0] = 0;
    a.tc_frac = hand[t].frac;
    a.tc_zero = hand[t].zero;
    exmy_qtensor qa, qb;
    exmy_qtensor_view(&e4, codes, 2, 2, NULL, &qa);
    exmy_qtensor_view(&e4, codes, 2, 2, NULL, &qb);
    exmy_gemm_args g;
    exmy_gemm_args_init(&g);
    g.a = &qa, g.b = &qb, g.d_fmt = &f32, g.accum = &a;
    size_t m, n, k;
    const int rc = exmy_gemm_check(&g, &m, &n, &k, err, sizeof err);
    if (!hand[t].named) CHECK(rc == 0, "hand-made model %d (row '%s', f %d, zero %d) rejected: %s", (int)t, hand[t].plain, hand[t].frac, hand[t].zero, err);
    else CHECK(rc == -1 && strstr(err, hand[t].named), "hand-made model %d: %d, message does not name '%s': %s", (int)t, rc, hand[t].named, err);
    if (g_verbose) printf("  hand-made %d -> %s\n", (int)t, err);
  }
  /* a name without its terminating 0 */
  exmy_accum a;
  char err[EXMY_ERRLEN] = "";
  exmy_accum_parse("tc:hopper", &a, NULL, 0);
  memset(a.tc_path[EXMY_TC_FP4], 'x', sizeof a.tc_path[0]);
  exmy_qtensor qa;
  exmy_qtensor_view(&e4, codes, 2, 2, NULL, &qa);
  exmy_gemm_args g;
  exmy_gemm_args_init(&g);
  g.a = &qa, g.b = &qa, g.d_fmt = &f32, g.accum = &a;
  size_t m, n, k;
  CHECK(exmy_gemm_check(&g, &m, &n, &k, err, sizeof err) == -1 && strstr(err, "fp4-path"),
        "an unterminated row name is not rejected naming fp4-path: %s", err);
}

static void part_parse(void) {
  static const struct { const char *text; int g, f, out, align_rne, norm_rne; size_t promote; } tab[] = {
    {"tc", 32, 13, 13, 0, 0, 128},
    {"tc:hopper", 32, 13, 13, 0, 0, 128},
    {"tc:hopper-fastacc", 32, 13, 13, 0, 0, 0},
    {"tc:ada", 16, 13, 13, 0, 0, 128},
    {"tc:ada-fastacc", 16, 13, 13, 0, 0, 0},
    {"tc:hopper-bf16", 16, 25, 23, 0, 0, 0},
    {"tc:ampere-bf16", 8, 24, 23, 0, 0, 0},
    {"tc:blackwell", 32, 25, 23, 0, 0, 0},
    {"tc:hopper,promote=0", 32, 13, 13, 0, 0, 0},
    {"tc:g=16,f=24", 16, 24, 13, 0, 0, 128},
    {"tc:hopper,align=rne,norm=rne,out=23", 32, 13, 23, 1, 1, 128},
  };
  for (size_t t = 0; t < sizeof tab / sizeof *tab; t++) {
    exmy_accum a;
    char err[EXMY_ERRLEN];
    int rc = exmy_accum_parse(tab[t].text, &a, err, sizeof err);
    CHECK(rc == 0, "accum '%s' does not parse: %s", tab[t].text, err);
    if (rc) continue;
    CHECK(a.kind == EXMY_ACCUM_TC && a.tc_group == tab[t].g && a.tc_frac == tab[t].f && a.tc_out_frac == tab[t].out &&
          a.tc_align_rne == tab[t].align_rne && a.tc_norm_rne == tab[t].norm_rne && a.chunk == tab[t].promote,
          "'%s' parses to kind %d g=%d f=%d out=%d align_rne=%d norm_rne=%d chunk=%zu; docs/gemm.md: g=%d f=%d out=%d %d %d promote=%zu",
          tab[t].text, (int)a.kind, a.tc_group, a.tc_frac, a.tc_out_frac, a.tc_align_rne, a.tc_norm_rne, a.chunk,
          tab[t].g, tab[t].f, tab[t].out, tab[t].align_rne, tab[t].norm_rne, tab[t].promote);
    /* the canonical name reads back to the same model */
    char name[256];
    exmy_accum_to_string(&a, name, sizeof name);
    exmy_accum b;
    rc = exmy_accum_parse(name, &b, err, sizeof err);
    CHECK(rc == 0 && b.kind == a.kind && b.tc_group == a.tc_group && b.tc_frac == a.tc_frac &&
          b.tc_out_frac == a.tc_out_frac && b.chunk == a.chunk && b.tc_align_rne == a.tc_align_rne &&
          b.tc_norm_rne == a.tc_norm_rne, "name '%s' of '%s' does not read back", name, tab[t].text);
  }
  static const struct { const char *text; exmy_accum_kind kind; size_t chunk; const char *fmt; } tab2[] = {
    {"exact", EXMY_ACCUM_EXACT, 0, NULL},
    {"fp32", EXMY_ACCUM_FP32, 0, NULL},
    {"fp32:pairwise", EXMY_ACCUM_FP32_PAIRWISE, 0, NULL},
    {"acc=f16", EXMY_ACCUM_FORMAT, 0, "f16"},
    {"acc=bf16,round=sr", EXMY_ACCUM_FORMAT, 0, "bf16"},
    {"chunk=7,inner=fp32", EXMY_ACCUM_FP32, 7, NULL},
    {"chunk=32,inner=acc=f16", EXMY_ACCUM_FORMAT, 32, "f16"},
  };
  for (size_t t = 0; t < sizeof tab2 / sizeof *tab2; t++) {
    exmy_accum a;
    char err[EXMY_ERRLEN];
    int rc = exmy_accum_parse(tab2[t].text, &a, err, sizeof err);
    CHECK(rc == 0, "accum '%s' does not parse: %s", tab2[t].text, err);
    if (rc) continue;
    CHECK(a.kind == tab2[t].kind && a.chunk == tab2[t].chunk, "'%s': kind %d chunk %zu", tab2[t].text, (int)a.kind, a.chunk);
    if (tab2[t].fmt) {
      exmy_format f = tu_format(tab2[t].fmt);
      CHECK(a.acc_fmt.ebits == f.ebits && a.acc_fmt.mbits == f.mbits && a.acc_fmt.bias == f.bias,
            "'%s': accumulator format %s", tab2[t].text, a.acc_fmt.name);
    }
  }
  static const char *bad[] = {"", "tc:volta", "acc=", "chunk=0,inner=fp32x", "fp33", "tc:g=0", "acc=e8m0fnu"};
  for (size_t t = 0; t < sizeof bad / sizeof *bad; t++) {
    exmy_accum a;
    char err[EXMY_ERRLEN] = "";
    int rc = exmy_accum_parse(bad[t], &a, err, sizeof err);
    CHECK(rc == -1 && strlen(err) > 5, "bad model '%s' accepted (or no message)", bad[t]);
    if (g_verbose) printf("  '%s' -> %s\n", bad[t], err);
  }
  part_parse_rows();
}

/* ======================================================================
 * Part 2: hand-computed anchors
 * ====================================================================== */
static float ref_value00(gcase *g) {
  gres r;
  reference(g, &r);
  float v = r.err ? NAN : (float)exmy_code_to_f64(&g->df, r.d[0]);
  free(r.d);
  return v;
}

static void set_all_codes(gcase *g, int isB, double value) {
  exmy_qtensor *q = isB ? &g->B : &g->A;
  exmy_rounding rr = exmy_rounding_default();
  uint64_t c = exmy_from_f64(&q->fmt, &rr, value, 0, NULL);
  for (size_t t = 0; t < q->rows * q->cols; t++) exmy_code_set(&q->fmt, q->codes, t, c);
}

/* A 1 x 1 exact GEMM whose sum is the integer sd times 2^-18: one product
 * 2^x 2^y = 2^(j-18) of e4m3fn codes per set bit j of sd; A per-tensor
 * scaled (current), B unscaled. */
static void sum_bits_case(gcase *g, uint64_t sd, const char *what) {
  base_case(g, 1, 1, (size_t)__builtin_popcountll(sd), 0, 0);
  set_model(g, "exact");
  g->what = what;
  make_operand(g, 0, "e4m3fn", NULL, "current", P_ONES, 0, 0);
  make_operand(g, 1, "e4m3fn", NULL, "none", P_ONES, 0, 0);
  exmy_rounding rr = exmy_rounding_default();
  size_t l = 0;
  for (int j = 0; j < 64; j++)
    if (sd >> j & 1) {
      int x = (j - 18) >= 0 ? (j - 18) / 2 : -((18 - j + 1) / 2), y = (j - 18) - x; /* 2^x 2^y = 2^(j-18) */
      set_op_code(&g->A, g, 0, 0, l, exmy_from_f64(&g->A.fmt, &rr, ldexp(1.0, x), 0, NULL));
      set_op_code(&g->B, g, 1, 0, l, exmy_from_f64(&g->B.fmt, &rr, ldexp(1.0, y), 0, NULL));
      l++;
    }
}

static void part_anchor_zero(void);
static void part_anchor_oor(void);
static void part_anchor_tc_edges(void);
static void part_anchor_nanscale(void);
static void part_anchor_nvfp4_tc(void);
static void part_anchors(void) {
  /* the Hopper signature: A = B = 1/16, k = 32768 */
  static const struct { const char *model; float want; } hop[] = {
    {"tc:hopper-fastacc", 64.0f}, {"tc:ada-fastacc", 64.0f}, {"tc:hopper", 128.0f}, {"tc", 128.0f},
    {"tc:ada", 128.0f}, {"tc:hopper-bf16", 128.0f}, {"exact", 128.0f}, {"fp32", 128.0f},
    {"tc:hopper-fastacc,promote=4096", 128.0f}, {"tc:hopper,promote=16384", 64.0f + 64.0f},
    {"chunk=128,inner=tc:hopper-fastacc", 128.0f},
  };
  for (size_t t = 0; t < sizeof hop / sizeof *hop; t++) {
    gcase g;
    base_case(&g, 2, 3, 32768, 0, t & 1);
    exmy_accum tmp;
    char perr[EXMY_ERRLEN];
    if (exmy_accum_parse(hop[t].model, &tmp, perr, sizeof perr)) {
      CHECK(0, "anchor model '%s' does not parse: %s", hop[t].model, perr);
      continue;
    }
    set_model(&g, hop[t].model);
    g.what = "Hopper signature A = B = 1/16";
    make_operand(&g, 0, "e4m3fn", NULL, "none", P_ONES, 0, 0);
    make_operand(&g, 1, "e4m3fn", NULL, "none", P_ONES, 0, 0);
    set_all_codes(&g, 0, 0.0625);
    set_all_codes(&g, 1, 0.0625);
    float v = ref_value00(&g);
    printf("  Hopper signature, %-34s reference D = %g (expected %g)\n", hop[t].model, (double)v, (double)hop[t].want);
    CHECK(v == hop[t].want, "reference: %s gives %g, expected %g", hop[t].model, (double)v, (double)hop[t].want);
    run_case(&g);
    free_case(&g);
  }
  /* Sums that float cannot hold exactly (the float-lanes kernel must take the
   * reference step): c near 2^17.6 in bf16 (ulp 2^10) plus products 90/256,
   * whose last bit 2^-7 lies below float's 2^-6 there, every sum a float tie
   * (22.5 units of 2^-6); stochastic rounding with 64 random bits then
   * decides differently from a float-rounded sum with probability 2^-17 per
   * step: over 4 x 64 x 8191 steps, about 16 outputs. */
  {
    gcase g;
    e4m3_case(&g, 4, 64, 8192, "acc=bf16,round=sr,seed=11", "acc=bf16,round=sr: sums inexact in float");
    set_all_codes(&g, 0, 0.5625);
    set_all_codes(&g, 1, 0.625);
    exmy_rounding rr = exmy_rounding_default();
    for (size_t i = 0; i < g.m; i++) set_op_code(&g.A, &g, 0, i, 0, exmy_from_f64(&g.A.fmt, &rr, 448.0, 0, NULL));
    for (size_t j = 0; j < g.n; j++) set_op_code(&g.B, &g, 1, j, 0, exmy_from_f64(&g.B.fmt, &rr, 448.0, 0, NULL));
    run_case(&g);
    free_case(&g);
  }
  /* The other way round: a small c plus a large product.  Steps of three,
   * q = 0.375 x 0.0625 = 3 2^-7, then P = 448 x 448 = 200704, then -P: c
   * goes 0, q, P + q rounded, back to 0.  P + q needs bits from 2^17 down to
   * 2^-7, so float rounds it (1.5 units of 2^-6 to 2 units): s - c is then not
   * exact (c is the smaller), only s - p shows it.  With 64 random bits the
   * rounded sum decides otherwise with probability about 2^-17 per P step:
   * over 4 x 64 x 2730 of them, about 5 outputs. */
  {
    gcase g;
    e4m3_case(&g, 4, 64, 8190, "acc=bf16,round=sr,seed=5", "acc=bf16,round=sr: a small c plus a large product, inexact in float");
    exmy_rounding rr = exmy_rounding_default();
    const double av[3] = {0.375, 448.0, -448.0}, bv[3] = {0.0625, 448.0, 448.0};
    for (size_t l = 0; l < g.k; l++) {
      for (size_t i = 0; i < g.m; i++) set_op_code(&g.A, &g, 0, i, l, exmy_from_f64(&g.A.fmt, &rr, av[l % 3], 0, NULL));
      for (size_t j = 0; j < g.n; j++) set_op_code(&g.B, &g, 1, j, l, exmy_from_f64(&g.B.fmt, &rr, bv[l % 3], 0, NULL));
    }
    run_case(&g);
    free_case(&g);
  }
  /* Operands outside float's range whose products are inside it (custom
   * biases): 2^130 x 2^-125 = 32 and 2^-150 x 2^110 = 2^-40, through acc=f16,
   * acc=bf16 and acc=bf16 with sr (a float-lanes kernel must decline them) */
  {
    static const struct { const char *fa, *fb, *model; double a, b; } cs[] = {
      {"e4m3,bias=-120", "e4m3,bias=134", "acc=f16", 0x1p130, 0x1p-125},
      {"e4m3,bias=-120", "e4m3,bias=134", "acc=bf16,round=sr,seed=3", 0x1p130, 0x1p-125},
      {"e4m3,bias=160", "e4m3,bias=-100", "acc=bf16", 0x1p-150, 0x1p110},
    };
    for (size_t t = 0; t < sizeof cs / sizeof *cs; t++) {
      gcase g;
      base_case(&g, 2, 3, 5, 0, 0);
      set_model(&g, cs[t].model);
      g.what = "operands outside float's range, products inside";
      exmy_format fa = tu_format(cs[t].fa), fb = tu_format(cs[t].fb);
      make_operand(&g, 0, NULL, &fa, "none", P_ONES, 0, 0);
      make_operand(&g, 1, NULL, &fb, "none", P_ONES, 0, 0);
      set_all_codes(&g, 0, cs[t].a);
      set_all_codes(&g, 1, cs[t].b);
      run_case(&g);
      free_case(&g);
    }
  }
  /* k = 0: every model gives P = +0, so D = fp32(alpha * +0) (+ beta scale_c c) */
  static const char *k0m[] = {"fp32", "fp32:pairwise", "acc=f16", "tc", "tc:hopper-fastacc", "chunk=7,inner=fp32", "exact"};
  for (size_t t = 0; t < 2 * sizeof k0m / sizeof *k0m; t++) {
    gcase g;
    base_case(&g, 3, 4, 0, (int)(t & 1), (int)((t >> 1) & 1));
    set_model(&g, k0m[t / 2]);
    g.what = "k = 0";
    make_operand(&g, 0, "e4m3fn", NULL, t % 3 ? "none" : "current", P_ONES, 0, 0);
    make_operand(&g, 1, "e5m2", NULL, "none", P_ONES, 0, 0);
    g.alpha = (t & 1) ? -1.5f : 2.0f;
    if (t % 4 == 3) { fill_c(&g, "bf16", 0); g.beta = 0.5f; }
    g.df = tu_format(t % 3 ? "f32" : "e4m3fn");
    run_case(&g);
    free_case(&g);
  }
  /* [1, 2^-24, 2^-24, 2^-24] . [1, 1, 1, 1] in f32: order and model matter */
  static const struct { const char *model; double want; } small[] = {
    {"fp32", 1.0}, {"fp32:pairwise", 1.0 + 0x1p-23}, {"exact", 1.0 + 0x1p-22}, {"tc", 1.0},
    {"tc:blackwell", 1.0 + 0x1p-23}, {"acc=bf16", 1.0}, {"chunk=2,inner=fp32", 1.0 + 0x1p-23}, {"chunk=1,inner=fp32", 1.0},
    {"tc:hopper,f=24", 1.0}, {"tc:hopper,f=25,out=23", 1.0 + 0x1p-23},
  };
  for (size_t t = 0; t < sizeof small / sizeof *small; t++) {
    gcase g;
    base_case(&g, 1, 1, 4, 0, 0);
    set_model(&g, small[t].model);
    g.what = "[1, 2^-24, 2^-24, 2^-24] . [1, 1, 1, 1]";
    make_operand(&g, 0, "f32", NULL, "none", P_ONES, 0, 0);
    make_operand(&g, 1, "f32", NULL, "none", P_ONES, 0, 0);
    exmy_rounding rr = exmy_rounding_default();
    for (size_t l = 1; l < 4; l++) set_op_code(&g.A, &g, 0, 0, l, exmy_from_f64(&g.A.fmt, &rr, 0x1p-24, 0, NULL));
    float v = ref_value00(&g);
    CHECK(v == (float)small[t].want, "reference: %s gives %a, hand value %a", small[t].model, (double)v, small[t].want);
    run_case(&g);
    free_case(&g);
  }
  /* a tie at D's precision decided by a bit 76 places down (exact keeps a
   * sticky bit): [1, 2^-24, 2^-100] . [1, 1, 1] -> f32 1 + 2^-23, not 1 */
  {
    static const char *ms[] = {"exact", "acc=f32", "fp32"};
    static const double want[] = {1.0 + 0x1p-23, 1.0, 1.0};
    for (int t = 0; t < 3; t++) {
      gcase g;
      base_case(&g, 1, 1, 3, 0, 0);
      set_model(&g, ms[t]);
      g.what = "tie plus a far sticky bit";
      make_operand(&g, 0, "f32", NULL, "none", P_ONES, 0, 0);
      make_operand(&g, 1, "f32", NULL, "none", P_ONES, 0, 0);
      exmy_rounding rr = exmy_rounding_default();
      set_op_code(&g.A, &g, 0, 0, 1, exmy_from_f64(&g.A.fmt, &rr, 0x1p-24, 0, NULL));
      set_op_code(&g.A, &g, 0, 0, 2, exmy_from_f64(&g.A.fmt, &rr, 0x1p-100, 0, NULL));
      float v = ref_value00(&g);
      CHECK(v == (float)want[t], "reference: %s gives %a, hand value %a", ms[t], (double)v, want[t]);
      run_case(&g);
      free_case(&g);
    }
  }
  /* the same through long products: sum * alpha * scale_inv = ((2^24 + 1) 2^41 + 1)
   * 2^-47 (66 bits: a tie at 24 bits, then 40 zeros, then a one), e4m3fn
   * operands, a per-tensor A scale and no C (what a fast exact kernel may
   * take): f32 D and amax_d round up to 2^18 (1 + 2^-23) */
  {
    const uint64_t sd = 23115908465ULL; /* * 57641 * 27689 = (2^24 + 1) 2^41 + 1 */
    gcase g;
    sum_bits_case(&g, sd, "exact: a tie decided by bit 66 of a product of scales");
    g.A.scale_inv[0] = (float)ldexp(27689.0, -14);
    g.alpha = (float)ldexp(57641.0, -15);
    gres r;
    reference(&g, &r);
    CHECK(r.d[0] == 0x48800001u && tu_bits32(r.amax) == 0x48800001u, "reference: tie with a far sticky bit gives D 0x%08" PRIx64 " amax %a",
          r.d[0], (double)r.amax);
    free(r.d);
    run_case(&g);
    g.df = tu_format("e5m2"); /* and a tie nowhere near: plain rounding */
    run_case(&g);
    /* the same V with alpha = 1 and the factor on B's scale: the double-double
     * epilogue of D f32 (its double rounds to exactly the tie; the low part
     * decides) */
    g.df = tu_format("f32");
    g.alpha = 1.0f;
    g.B.recipe = g.A.recipe;
    g.B.scale_inv[0] = (float)ldexp(57641.0, -15);
    reference(&g, &r);
    CHECK(r.d[0] == 0x48800001u, "reference: the tie through B's scale gives D 0x%08" PRIx64, r.d[0]);
    free(r.d);
    run_case(&g);
    free_case(&g);
  }
  /* just below a tie whose even neighbour is above: sum * scale_inv = ((2^24 + 7)
   * 2^30 - 1) 2^-48 (55 bits; its double is the tie itself, the low part -2^-48
   * decides), alpha = 1, f32 D: down to 2^6 (1 + 3 2^-23), not up to the even
   * 2^6 (1 + 2^-21) */
  {
    const uint64_t sd = 1948036379ULL; /* * 9247469 = (2^24 + 7) 2^30 - 1 */
    gcase g;
    sum_bits_case(&g, sd, "exact: just below a tie, decided by the low part");
    g.A.scale_inv[0] = (float)ldexp(9247469.0, -30);
    gres r;
    reference(&g, &r);
    CHECK(r.d[0] == 0x42800003u, "reference: just below a tie gives D 0x%08" PRIx64 " (want 0x42800003)", r.d[0]);
    free(r.d);
    run_case(&g);
    free_case(&g);
  }
  /* tc below 2^-126: E is clamped to -126, so out bits count from 2^-126:
   * 1.5*2^-127 with out = 1 keeps 2^-127 (2^-128 is below the grid) */
  {
    static const char *ms[] = {"tc:g=32,f=30,out=1", "tc:g=32,f=30,out=0", "tc:g=32,f=30,out=2", "tc:g=32,f=30,out=1,norm=rne",
                               "tc:hopper-fastacc,f=30", "tc:hopper-fastacc,f=30,norm=rne"};
    /* the last two: v = -1.5*2^-140 survives alignment (f = 30) but lies below the
     * grid of 2^-139: truncation cuts it to zero, +0 as in MMA-Sim; rne gives -2^-139 */
    static const double want[] = {0x1p-127, 0.0, 0x1.8p-127, 0x1p-126, 0.0, -0x1p-139};
    static const double aval[] = {0x1.8p-127, 0x1.8p-127, 0x1.8p-127, 0x1.8p-127, -0x1.8p-140, -0x1.8p-140};
    for (int t = 0; t < 6; t++) {
      gcase g;
      base_case(&g, 1, 1, 1, 0, 0);
      exmy_accum tmp;
      char perr[EXMY_ERRLEN];
      if (exmy_accum_parse(ms[t], &tmp, perr, sizeof perr)) {
        CHECK(0, "anchor model '%s' does not parse: %s", ms[t], perr);
        continue;
      }
      set_model(&g, ms[t]);
      g.what = "tc result in the fp32 subnormal range";
      make_operand(&g, 0, "f32", NULL, "none", P_ONES, 0, 0);
      make_operand(&g, 1, "e4m3fn", NULL, "none", P_ONES, 0, 0);
      set_all_codes(&g, 0, aval[t]);
      float v = ref_value00(&g);
      CHECK(tu_bits32(v) == tu_bits32((float)want[t]), "reference: %s gives %a, hand value %a", ms[t], (double)v, want[t]);
      run_case(&g);
      free_case(&g);
    }
  }
  /* the sign of an exact zero in `exact`: x - x is +0, times alpha; with C
   * the last addition follows IEEE 754 under D's rounding (rdn: -0) */
  {
    static const struct { float alpha, beta, c; exmy_round_mode mode; float want; int sum2; } z[] = {
      {1.0f, 0.0f, 0.0f, EXMY_RNE, 0.0f, 0}, {-1.0f, 0.0f, 0.0f, EXMY_RNE, -0.0f, 0}, {1.0f, 0.0f, 0.0f, EXMY_RDN, 0.0f, 0},
      {-2.0f, 1.0f, 0.0f, EXMY_RNE, 0.0f, 0}, {-2.0f, 1.0f, -0.0f, EXMY_RNE, -0.0f, 0}, {-2.0f, 1.0f, 0.0f, EXMY_RDN, -0.0f, 0},
      {1.0f, 1.0f, -0.0f, EXMY_RNE, 0.0f, 0}, {1.0f, 1.0f, -2.0f, EXMY_RNE, 0.0f, 1}, {1.0f, 1.0f, -2.0f, EXMY_RDN, -0.0f, 1},
    };
    for (size_t t = 0; t < sizeof z / sizeof *z; t++) {
      gcase g;
      e4m3_case(&g, 1, 1, 4, "exact", "exact zero signs");
      exmy_rounding rr = exmy_rounding_default();
      /* products 1, -1, 1, -1 (sum 0) or 1, -1, 1, 1 (sum 2) */
      for (size_t l = 0; l < 4; l++)
        set_op_code(&g.B, &g, 1, 0, l, exmy_from_f64(&g.B.fmt, &rr, (l == 1 || (l == 3 && !z[t].sum2)) ? -1.0 : 1.0, 0, NULL));
      g.alpha = z[t].alpha;
      if (z[t].beta != 0.0f) {
        fill_c(&g, "f32", 0);
        g.beta = z[t].beta;
        exmy_code_set(&g.cf, g.c, 0, tu_bits32(z[t].c));
      }
      g.drnd.mode = z[t].mode;
      gres r;
      reference(&g, &r);
      CHECK(r.d[0] == tu_bits32(z[t].want), "reference: exact zero sign case %zu gives 0x%08" PRIx64 ", want 0x%08x", t,
            r.d[0], tu_bits32(z[t].want));
      free(r.d);
      run_case(&g);
      free_case(&g);
    }
  }
  /* `exact` with D f32 rne (the direct epilogue, vectorized by rows): a zero
   * B scale makes every term +-0, so the sum is +0 whatever the sign of the
   * integer sum; row 1's sums -2 and 2 and a zero A scale on row 0 */
  for (int zb = 0; zb < 2; zb++) {
    gcase g;
    e4m3_case(&g, 2, 3, 4, "exact", zb ? "exact, zero B scale, negative sums" : "exact, zero A scale, negative sums");
    exmy_rounding rr = exmy_rounding_default();
    for (size_t j = 0; j < 3; j++) /* column j: products 1, -1, -1, (j ? 1 : -1): sums -2, 0, 0 */
      for (size_t l = 0; l < 4; l++)
        set_op_code(&g.B, &g, 1, j, l, exmy_from_f64(&g.B.fmt, &rr, (l == 1 || l == 2 || (l == 3 && !j)) ? -1.0 : 1.0, 0, NULL));
    if (zb) g.B.scale_inv[0] = 0.0f;
    else g.A.scale_inv[0] = 0.0f;
    run_case(&g);
    free_case(&g);
  }
  /* tc alignment: bf16 products 1 and 2^-13, 2^-14 (f = 13): truncation and rne */
  static const struct { const char *model; double b1; double want; } al[] = {
    {"tc", 0x1p-13, 1.0 + 0x1p-13}, {"tc", 0x1p-14, 1.0}, {"tc:hopper,align=rne", 0x1p-14, 1.0},
    {"tc:hopper,align=rne", 0x1.8p-14, 1.0 + 0x1p-13}, {"tc", 0x1.8p-14, 1.0}, {"exact", 0x1p-14, 1.0 + 0x1p-14},
    {"tc:hopper,out=23,f=30", 0x1p-14, 1.0 + 0x1p-14}, {"tc:hopper,out=10,f=30", 0x1.fp-11, 1.0},
    {"tc:hopper,out=10,f=30,norm=rne", 0x1.fp-11, 1.0 + 0x1p-10},
  };
  for (size_t t = 0; t < sizeof al / sizeof *al; t++) {
    gcase g;
    base_case(&g, 1, 1, 2, 1, 1);
    set_model(&g, al[t].model);
    g.what = "tc alignment anchor [1, x] . [1, 1]";
    make_operand(&g, 0, "f32", NULL, "none", P_ONES, 0, 0);
    make_operand(&g, 1, "bf16", NULL, "none", P_ONES, 0, 0);
    exmy_rounding rr = exmy_rounding_default();
    set_op_code(&g.A, &g, 0, 0, 1, exmy_from_f64(&g.A.fmt, &rr, al[t].b1, 0, NULL));
    float v = ref_value00(&g);
    CHECK(v == (float)al[t].want, "reference: %s with x = %a gives %a, hand value %a", al[t].model, al[t].b1, (double)v, al[t].want);
    run_case(&g);
    free_case(&g);
  }
  part_anchor_zero();
  part_anchor_oor();
  part_anchor_tc_edges();
  part_anchor_nanscale();
  part_anchor_nvfp4_tc();
}

/* tc zero rule (v2): a zero product (from a zero in A's row or in B's column) has
 * exponent tc_zero.  tc:hopper,zero=-1, k = 34: the first group leaves c = 2^-10 (its
 * zeros do not matter: a zero c already has exponent -1 there); in the second, x =
 * 1.5 2^-14 and a zero product make emax = -1, so x is cut at 2^(-1 - 13) to 2^-14 (with
 * no zero term, emax = -10 keeps x whole).  A = [2^-10, 0 x 31, x, z], B = ones but
 * w = B[33][t]: z = 0, or z = 1 and w = 0 (other columns: 1 + 2^-10); t of 3 columns, a
 * partial panel of the fast kernel; e5m2 operands, which the fast kernel takes. */
static void part_anchor_zero(void) {
  for (int zb = 0; zb < 2; zb++)
    for (size_t t = 0; t < 3; t++) {
      gcase g;
      base_case(&g, 1, 3, 34, 0, 0);
      set_model(&g, "tc:hopper,zero=-1");
      g.what = zb ? "tc zero rule anchor: zero in B's column" : "tc zero rule anchor: zero in A's row";
      make_operand(&g, 0, "e5m2", NULL, "none", P_ONES, 0, 0);
      make_operand(&g, 1, "e5m2", NULL, "none", P_ONES, 0, 0);
      exmy_rounding rr = exmy_rounding_default();
      set_op_code(&g.A, &g, 0, 0, 0, exmy_from_f64(&g.A.fmt, &rr, 0x1p-10, 0, NULL));
      for (size_t l = 1; l < 32; l++) set_op_code(&g.A, &g, 0, 0, l, 0);
      set_op_code(&g.A, &g, 0, 0, 32, exmy_from_f64(&g.A.fmt, &rr, 0x1.8p-14, 0, NULL));
      if (zb) set_op_code(&g.B, &g, 1, t, 33, 0);
      else set_op_code(&g.A, &g, 0, 0, 33, 0);
      gres r;
      reference(&g, &r);
      for (size_t j = 0; j < 3; j++) {
        const double v = r.err ? NAN : exmy_code_to_f64(&g.df, r.d[j]);
        const double want = zb && j != t ? 1.0 + 0x1p-10 : 0x1p-10 + 0x1p-14;
        CHECK(v == want, "reference: %s column %zu gives %a, hand value %a", g.what, j, v, want);
      }
      free(r.d);
      run_case(&g);
      free_case(&g);
    }
}

/* A byte with bits above a sub-byte format's (0x12 in e2m1fn) decodes as NaN, in the
 * reference and in the kernels that read codes through a table (fp32, exact, tc). */
static void part_anchor_oor(void) {
  static const char *models[] = {"fp32", "exact", "tc:hopper", "chunk=4,inner=fp32"};
  for (size_t t = 0; t < sizeof models / sizeof *models; t++) {
    gcase g;
    base_case(&g, 4, 4, 8, 0, 0);
    set_model(&g, models[t]);
    g.what = "a code above e2m1fn's 4 bits (0x12) in A[0][3]";
    make_operand(&g, 0, "e2m1fn", NULL, "none", P_ONES, 0, 0);
    make_operand(&g, 1, "e2m1fn", NULL, "none", P_ONES, 0, 0);
    ((uint8_t *)g.A.codes)[3] = 0x12;
    gres r;
    reference(&g, &r);
    const double v = r.err ? 0.0 : exmy_code_to_f64(&g.df, r.d[0]);
    CHECK(isnan(v), "reference: %s with %s gives %a, not NaN", g.what, models[t], v);
    free(r.d);
    run_case(&g);
    free_case(&g);
  }
  /* an infinite operand (e5m2 +inf in A[0][3], -inf in B[5][1]), k = 40: the kernels that
   * pack codes must find it and leave the problem to the reference */
  for (size_t t = 0; t < sizeof models / sizeof *models; t++) {
    gcase g;
    base_case(&g, 4, 4, 40, 0, 0); /* two tc groups: an inf c enters the second */
    set_model(&g, models[t]);
    g.what = "e5m2 +inf in A[0][3] and -inf in B[5][1]";
    make_operand(&g, 0, "e5m2", NULL, "none", P_ONES, 0, 0);
    make_operand(&g, 1, "e5m2", NULL, "none", P_ONES, 0, 0);
    exmy_rounding rr = exmy_rounding_default();
    set_op_code(&g.A, &g, 0, 0, 3, exmy_from_f64(&g.A.fmt, &rr, INFINITY, 0, NULL));
    set_op_code(&g.B, &g, 1, 1, 5, exmy_from_f64(&g.B.fmt, &rr, -INFINITY, 0, NULL));
    run_case(&g);
    free_case(&g);
  }
}

/* A 2 x 3 case whose every output must be NaN: the reference says so, then
 * run_case checks every kernel against it; the case is freed. */
static void nan_everywhere(gcase *g, const char *model) {
  gres r;
  reference(g, &r);
  for (size_t x = 0; x < 6; x++) {
    const double v = r.err ? 0.0 : exmy_code_to_f64(&g->df, r.d[x]);
    CHECK(isnan(v), "reference: %s with %s gives %a at D[%zu][%zu], not NaN", g->what, model, v, x / 3, x % 3);
  }
  free(r.d);
  run_case(g);
  free_case(g);
}

/* A NaN E8M0 scale (code 0xFF) makes every element of its block NaN (OCP MX v1.0), so
 * every product with it is NaN, a zero element's too, and so is the output.  The
 * check-long sweep found acc=exact dropping such terms (D = +0): m = 1, n = 6, k = 548,
 * e5m2 mx:ocp x e3m2fn mx:ocp,col, D bf16, data near 2^118.  Here: e4m3fn mx:ocp x
 * mx:ocp,col, k = 64, A's second block NaN in both rows; row 0 holds ones there, row 1
 * zeros; B's scales stay finite.  Every model must give NaN in every output. */
static void part_anchor_nanscale(void) {
  static const char *models[] = {"exact", "fp32", "fp32:pairwise", "acc=f16", "tc:hopper", "chunk=32,inner=fp32"};
  for (size_t t = 0; t < sizeof models / sizeof *models; t++) {
    gcase g;
    base_case(&g, 2, 3, 64, 0, 0);
    set_model(&g, models[t]);
    g.df = tu_format("bf16");
    g.what = "a NaN E8M0 scale (0xFF) on A's second block, over ones (row 0) and zeros (row 1)";
    make_operand(&g, 0, "e4m3fn", NULL, "mx:ocp", P_ONES, 0, 0);
    make_operand(&g, 1, "e4m3fn", NULL, "mx:ocp,col", P_ONES, 0, 0);
    for (size_t i = 0; i < 2; i++) {
      const size_t s = i * g.A.scols + 1;
      g.A.scale_codes[s] = 0xFF;
      g.A.scale_inv[s] = NAN;
    }
    for (size_t l = 32; l < 64; l++) set_op_code(&g.A, &g, 0, 1, l, 0);
    nan_everywhere(&g, models[t]);
  }
  /* per-tensor scales (OUTER, exact's fast kernel): a NaN scale_inv on A, as a hand-made
   * or view qtensor can hold (the recipes give 1 for a NaN amax) */
  for (size_t t = 0; t < sizeof models / sizeof *models; t++) {
    gcase g;
    base_case(&g, 2, 3, 64, 0, 0);
    set_model(&g, models[t]);
    g.df = tu_format("bf16");
    g.what = "a NaN per-tensor scale_inv on A (recipe current)";
    make_operand(&g, 0, "e4m3fn", NULL, "current", P_ONES, 0, 0);
    make_operand(&g, 1, "e4m3fn", NULL, "current", P_ONES, 0, 0);
    g.A.scale_inv[0] = NAN;
    nan_everywhere(&g, models[t]);
  }
}

/* tc:blackwell on NVFP4 operands (E2M1 x E2M1), data over many binades so that the
 * block scales spread (the GST datapath of kind::mxf4nvf4, gst_piece); and the same with
 * a key changed after the preset (zero=-133 restated is still the preset; f=25,g=64 is
 * not: T with the scales in the products). */
static void part_anchor_nvfp4_tc(void) {
  static const size_t ks[] = {64, 128, 192, 100, 48};
  static const char *models[] = {"tc:blackwell", "tc:blackwell,zero=-133", "tc:blackwell,promote=128", "tc:blackwell,g=64",
                                 "tc:blackwell,zero=v1", "tc:path=hopper-fp8-f32,fp4-path=blackwell-mxf4nvf4"};
  for (int t = 0; t < 36; t++) {
    gcase g;
    base_case(&g, 1 + rndu(6), 1 + rndu(6), ks[t % 5], 0, 1);
    set_model(&g, models[t % 6]);
    g.what = "tc:blackwell on NVFP4 operands, block scales spread over many binades";
    make_operand(&g, 0, "e2m1fn", NULL, "nvfp4", t % 3 ? P_RANDOM : P_CANCEL, 24 + (int)rndu(12), (int)rndu(9) - 4);
    make_operand(&g, 1, "e2m1fn", NULL, "nvfp4", t % 3 ? P_RANDOM : P_CANCEL, 24 + (int)rndu(12), (int)rndu(9) - 4);
    run_case(&g);
    free_case(&g);
  }
  /* MXFP4 (E8M0 scales, 32 along k): kind::mxf4, the same GST row */
  static const size_t mks[] = {64, 128, 96, 192, 32};
  for (int t = 0; t < 60; t++) {
    gcase g;
    base_case(&g, 1 + rndu(8), 1 + rndu(8), mks[t % 5] * (1 + rndu(2)), 0, 1);
    set_model(&g, models[t % 6]);
    g.what = "tc:blackwell on MXFP4 operands (kind::mxf4)";
    make_operand(&g, 0, "e2m1fn", NULL, t % 2 ? "mx" : "mx:ocp", t % 3 ? P_RANDOM : P_CANCEL, 24 + (int)rndu(12), (int)rndu(9) - 4);
    make_operand(&g, 1, "e2m1fn", NULL, t % 2 ? "mx" : "mx:ocp", t % 3 ? P_RANDOM : P_CANCEL, 24 + (int)rndu(12), (int)rndu(9) - 4);
    run_case(&g);
    free_case(&g);
  }
}

/* tc cases at the edges of the fast kernels' conditions (found by a differential review
 * of the 16-bit kernel), m = n = 1, each code given: operands whose values float cannot
 * hold (below 2^-149: the tc kernels' 8-bit tables flushed them to zero; above FLT_MAX:
 * inf; also through the exact, fp32 and acc=FORMAT kernels, which did not), an odd
 * group (two terms a lane need even group starts), a product of significands that needs
 * 16 bits once shifted (f = 14), and the v1 zero rule with wide-range formats (a zero's
 * exponent -126 plus the other factor's sets emax). */
static void part_anchor_tc_edges(void) {
  static const struct {
    const char *fa, *fb, *model, *what;
    size_t k;
    uint8_t a[4], b[4];
  } tab[] = {
      {"e5m2,bias=151", "e5m2,bias=-57", "tc:g=2,f=4,out=4,promote=0", "an operand of 2^-152", 1, {0x01}, {0x3c}},
      {"e5m2,bias=-100", "e5m2,bias=127", "tc", "an operand above FLT_MAX", 1, {0x7b}, {0x3c}},
      {"e5m2,bias=151", "e5m2,bias=-57", "exact", "an operand of 2^-152", 1, {0x01}, {0x3c}},
      {"e5m2,bias=-100", "e5m2,bias=127", "exact", "an operand above FLT_MAX", 1, {0x7b}, {0x3c}},
      {"e5m2,bias=151", "e5m2,bias=-57", "fp32", "an operand of 2^-152", 1, {0x01}, {0x3c}},
      {"e5m2,bias=-100", "e5m2,bias=127", "fp32", "an operand above FLT_MAX", 1, {0x7b}, {0x3c}},
      {"e5m2,bias=151", "e5m2,bias=-57", "acc=bf16", "an operand of 2^-152", 1, {0x01}, {0x3c}},
      {"e5m2,bias=-100", "e5m2,bias=127", "acc=f16", "an operand above FLT_MAX", 1, {0x7b}, {0x3c}},
      {"e4m3fn", "e4m3fn", "tc:ada,g=3,promote=0", "an odd group", 4, {0x38, 0x38, 0x38, 0x30}, {0x38, 0x38, 0x38, 0x7e}},
      {"e4m3fn", "e4m3fn", "tc:g=32,f=14", "f = 14: shifted significand products of 16 bits", 2, {0x7e, 0x7e}, {0x7e, 0x7e}},
      {"e4m3,bias=66", "e6m1,bias=10,nan=ones,inf=none", "tc:g=2,f=4,out=13,promote=0,zero=v1",
       "v1 zeros with wide-range formats", 4, {0x0f, 0x8e, 0x00, 0x00}, {0x03, 0x03, 0x7e, 0x7e}},
  };
  for (size_t t = 0; t < sizeof tab / sizeof *tab; t++) {
    gcase g;
    hand_case(&g, 1, 1, tab[t].k, tab[t].fa, tab[t].fb, tab[t].model, tab[t].what);
    for (size_t l = 0; l < tab[t].k; l++) {
      set_op_code(&g.A, &g, 0, 0, l, tab[t].a[l]);
      set_op_code(&g.B, &g, 1, 0, l, tab[t].b[l]);
    }
    run_case(&g);
    free_case(&g);
  }
}

/* ======================================================================
 * Random cases
 * ====================================================================== */
static const char *d_formats[] = {"f32", "bf16", "f16", "e4m3fn", "e5m2"};
static const char *c_formats[] = {"f32", "bf16", "f16", "e4m3fn"};

enum { NMODEL = 24 };
/* model number t as text (random parameters drawn here) */
static void pick_model(int t, char *buf, size_t len) {
  static const size_t chunks[] = {1, 7, 32, 128};
  size_t N = chunks[rndu(4)];
  switch (t) {
  case 0: snprintf(buf, len, "exact"); break;
  case 1: snprintf(buf, len, "fp32"); break;
  case 2: snprintf(buf, len, "fp32:pairwise"); break;
  case 3: snprintf(buf, len, "acc=f16"); break;
  case 4: snprintf(buf, len, "acc=bf16"); break;
  case 5: /* bf16 and f16 with sr, all random bits or a few (the float-lanes kernel's two increments) */
    snprintf(buf, len, "acc=%s,round=sr,seed=%u%s", rndu(2) ? "bf16" : "f16", (unsigned)rndu(1000),
             (const char *[]){"", "", ",sr-bits=3", ",sr-bits=13", ",sr-bits=20", ",sat=finite"}[rndu(6)]);
    break;
  case 6: snprintf(buf, len, "acc=e5m2"); break;
  case 7: snprintf(buf, len, "chunk=%zu,inner=fp32", N); break;
  case 8: snprintf(buf, len, "chunk=%zu,inner=acc=f16", N); break;
  case 9: snprintf(buf, len, "chunk=%zu,inner=fp32:pairwise", N); break;
  case 10: /* tc, or with a zero term's exponent above small products (v2's zero rule then decides emax) */
    if (rndu(2)) snprintf(buf, len, "tc");
    else snprintf(buf, len, "tc:hopper,zero=-%u", (unsigned)(1 + rndu(30)));
    break;
  case 11: snprintf(buf, len, "tc:hopper-fastacc"); break;
  case 12: snprintf(buf, len, "tc:ada"); break;
  case 13: snprintf(buf, len, "tc:hopper-bf16"); break;
  case 14: snprintf(buf, len, "tc:hopper,align=rne"); break;
  case 15: snprintf(buf, len, "tc:hopper,norm=rne"); break;
  case 16: snprintf(buf, len, "tc:hopper,out=23"); break;
  case 17: {
    static const int gs[] = {1, 2, 4, 8, 16, 32, 64};
    int out = 1 + (int)rndu(23);
    int f = (int)rndu(36);
    size_t prom = rndu(3) ? 0 : (size_t)(1 + rndu(200));
    char zero[24] = "v1";
    if (rndu(3)) snprintf(zero, sizeof zero, "-%u", (unsigned)(1 + rndu(200)));
    snprintf(buf, len, "tc:g=%d,f=%d,out=%d,align=%s,norm=%s,promote=%zu,zero=%s", gs[rndu(7)], f, out,
             rndu(2) ? "rne" : "trunc", rndu(2) ? "rne" : "trunc", prom, zero);
    break;
  }
  case 18: snprintf(buf, len, "%s", (const char *[]){"tc:ampere-bf16", "tc:blackwell", "tc:ada-fastacc"}[rndu(3)]); break;
  case 19: snprintf(buf, len, "acc=e5m2,round=sr,sr-bits=%u,seed=%u", (unsigned)(1 + rndu(20)), (unsigned)rndu(99)); break;
  case 20: snprintf(buf, len, "acc=f16,round=%s", (const char *[]){"rtz", "rup", "rdn", "rna", "rto"}[rndu(5)]); break;
  case 21: snprintf(buf, len, "acc=%s", (const char *[]){"e4m3fn", "e5m2,sat=finite", "e8m7", "e6m14", "f32", "e3m2fn", "f16,sat=finite", "bf16,sat=finite"}[rndu(8)]); break;
  case 22: snprintf(buf, len, "chunk=%zu,inner=acc=bf16,round=sr,seed=%u", N, (unsigned)rndu(99)); break;
  default: snprintf(buf, len, "chunk=%zu,inner=tc:hopper-fastacc", N); break;
  }
}

static int g_model_ok[NMODEL];

static void probe_models(void) {
  for (int t = 0; t < NMODEL; t++) {
    char buf[160], err[EXMY_ERRLEN];
    exmy_accum a;
    pick_model(t, buf, sizeof buf);
    g_model_ok[t] = exmy_accum_parse(buf, &a, err, sizeof err) == 0;
    /* Every model the sweep draws must parse (a model that does not is a
     * failure, then left out of the sweep so the other parts still run). */
    CHECK(g_model_ok[t], "sweep model %d '%s' does not parse: %s (not swept)", t, buf, err);
  }
}

/* recipes along k for an operand: is the k direction the stored columns? */
static void pick_recipes(gcase *g, int kind, const char **ra, const char **rb) {
  const int a_kcols = !g->ta, b_kcols = g->tb;
  switch (kind) {
  case 0: *ra = "none"; *rb = "none"; break;
  case 1: *ra = "current"; *rb = "current"; break;
  case 2: *ra = a_kcols ? "current:row" : "current:col"; *rb = b_kcols ? "current:row" : "current:col"; break;
  case 3: *ra = a_kcols ? "current:col" : "current:row"; *rb = b_kcols ? "current:col" : "current:row"; break;
  case 4: *ra = "delayed"; *rb = rndu(2) ? "delayed" : "none"; break;
  case 5: *ra = a_kcols ? "block:1x128" : "block:128x1"; *rb = "block:128x128"; break;
  case 6: *ra = a_kcols ? "mx" : "mx:col"; *rb = b_kcols ? "mx" : "mx:col"; break;
  case 7: *ra = a_kcols ? "mx:ocp" : "mx:ocp,col"; *rb = b_kcols ? "mx:ocp" : "mx:ocp,col"; break;
  case 8: *ra = a_kcols && rndu(2) ? "nvfp4" : "nvfp4:16x16"; *rb = b_kcols && rndu(2) ? "nvfp4" : "nvfp4:16x16"; break;
  case 9: *ra = a_kcols ? "block:1x128" : "block:128x1"; *rb = rndu(2) ? "current" : "none"; break;
  case 10: *ra = rndu(2) ? "none" : "current:row"; *rb = "block:128x128,fp32"; break;
  default: *ra = "block:32x32"; *rb = "block:64x64"; break;
  }
}
#define NRECIPE 12

static void random_case(gcase *g, int model, size_t kmax, size_t mnmax) {
  static const size_t ks[] = {0, 1, 2, 3, 5, 16, 31, 32, 33, 64, 100, 127, 128, 129, 200, 255, 256, 257, 384, 1000};
  size_t m = rndu(4) == 0 ? 1 : 1 + rndu(mnmax);
  size_t n = rndu(4) == 0 ? 1 : 1 + rndu(mnmax);
  size_t k = rndu(3) ? ks[rndu(sizeof ks / sizeof *ks)] : 1 + rndu(kmax);
  if (k > kmax) k = kmax;
  base_case(g, m, n, k, (int)rndu(2), (int)rndu(2));
  char mt[160];
  pick_model(model, mt, sizeof mt);
  set_model(g, mt);
  int rk = (int)rndu(NRECIPE);
  const char *ra, *rb;
  pick_recipes(g, rk, &ra, &rb);
  exmy_format fa, fb;
  if (rk == 8) {
    fa = tu_format(rndu(5) ? "e2m1fn" : "e4m3fn");
    fb = tu_format(rndu(5) ? "e2m1fn" : "e4m3fn");
  } else if (rk == 6 || rk == 7) {
    static const char *mxf[] = {"e4m3fn", "e5m2", "e2m1fn", "e3m2fn", "e2m3fn"};
    fa = tu_format(mxf[rndu(5)]);
    fb = tu_format(mxf[rndu(5)]);
  } else {
    fa = pick_elem(1);
    fb = rndu(3) ? pick_elem(1) : fa;
  }
  int fp = (int)rndu(10);
  int pattern = fp < 6 ? P_RANDOM : fp < 8 ? P_CANCEL : P_ZEROROW;
  int span = (int)rndu(13), center = (int)rndu(9) - 4;
  /* now and then data far from 1: huge or tiny scales (current, block, ...) */
  if (rndu(12) == 0) center = (rndu(2) ? 1 : -1) * (30 + (int)rndu(90));
  if (rk == 5 || rk == 9 || rk == 10 || rk == 11) span += 6;
  make_operand(g, 0, NULL, &fa, ra, pattern, span, center);
  make_operand(g, 1, NULL, &fb, rb, pattern, span, center);
  int cp = (int)rndu(10);
  cp = cp < 5 ? CP_NONE : cp < 7 ? CP_ALLCODES : cp < 8 ? CP_SPECIAL : cp < 9 ? (rndu(2) ? CP_TINY : CP_TINYA) : CP_CANCEL;
  if (cp == CP_TINYA) { code_pattern(g, 0, CP_TINY); code_pattern(g, 1, CP_ALLCODES); }
  else if (cp != CP_NONE) { code_pattern(g, 0, cp); code_pattern(g, 1, cp); }
  static const char *pname[] = {"random", "cancel", "zero rows", "ones"};
  static const char *cname[] = {"", ", codes: all", ", codes: inf/NaN", ", codes: tiny", ", codes: cancel",
                                 ", codes: tiny A, all B"};
  static char what[128];
  snprintf(what, sizeof what, "random: data %s span %d center %d%s", pname[pattern], span, center, cname[cp]);
  g->what = what;
  /* scalars, C and D */
  if (rndu(2)) g->alpha = (float)(rndu(3) ? (double)rand_float_mag(3, 0) : (rndu(2) ? -1.0 : 0.5));
  g->df = tu_format(d_formats[rndu(5)]);
  if (g->df.bits == 8 || rndu(5) == 0) g->scale_d = rndu(2) ? (float)ldexp(1.0, (int)rndu(9) - 4) : fabsf(rand_float_mag(4, 0));
  if (rndu(5) < 2) {
    fill_c(g, c_formats[rndu(4)], 1);
    int bk = (int)rndu(6);
    g->beta = bk == 0 ? 0.0f : bk == 1 ? 1.0f : bk == 2 ? -0.5f : rand_float_mag(3, 0);
    if (rndu(2)) g->scale_c = fabsf(rand_float_mag(3, 0));
    if (g->beta == 0.0f) {
      /* beta = 0 never reads C: give it NaNs */
      exmy_info inf;
      exmy_format_info(&g->cf, &inf);
      for (size_t t = 0; t < g->m * g->n; t++)
        if (inf.n_nan) exmy_code_set(&g->cf, g->c, t, inf.nan_first[0]);
    }
  }
  int rm = (int)rndu(20);
  if (rm < 3) {
    g->drnd.mode = EXMY_SR;
    g->drnd.seed = rnd64();
    g->drnd.sr_bits = rndu(2) ? 64 : 1 + (int)rndu(64);
  } else if (rm < 5) {
    g->drnd.mode = (exmy_round_mode)(1 + rndu(5));
  }
  if (g->df.bits == 8 && rndu(4) == 0) g->drnd.sat = EXMY_SAT_FINITE;
  g->want_amax = rndu(5) != 0;
}

/* ======================================================================
 * Part 3: exact against MPFR (large k, wide formats)
 * ====================================================================== */
static void part_exact(void) {
  int ncase = g_long ? 120 : 24;
  for (int t = 0; t < ncase; t++) {
    gcase g;
    size_t k = t % 4 == 0 ? 4096 : (size_t)(1 + rndu(600));
    size_t m = 1 + rndu(3), n = 1 + rndu(3);
    base_case(&g, m, n, k, (int)rndu(2), (int)rndu(2));
    set_model(&g, "exact");
    static const char *wide[] = {"f32", "bf16", "f16", "e5m2", "e4m3fn"};
    exmy_format fa = tu_format(wide[rndu(5)]), fb = t % 3 ? tu_format(wide[rndu(5)]) : pick_elem(1);
    int rk = (int)rndu(NRECIPE);
    if (rk == 8) rk = 0; /* nvfp4 is covered by the sweep (e2m1fn) */
    const char *ra, *rb;
    pick_recipes(&g, rk, &ra, &rb);
    make_operand(&g, 0, NULL, &fa, ra, P_RANDOM, 20, 0);
    make_operand(&g, 1, NULL, &fb, rb, P_RANDOM, 20, 0);
    int cp = t % 3 == 0 ? CP_ALLCODES : t % 3 == 1 ? CP_CANCEL : CP_NONE;
    if (cp) { code_pattern(&g, 0, cp); code_pattern(&g, 1, cp); }
    g.what = "exact vs MPFR, whole exponent range";
    g.df = tu_format(d_formats[rndu(5)]);
    if (rndu(2)) g.alpha = rand_float_mag(4, 0);
    if (rndu(2)) { fill_c(&g, c_formats[rndu(4)], 0); g.beta = rand_float_mag(2, 0); g.scale_c = fabsf(rand_float_mag(2, 0)); }
    if (rndu(4) == 0) { g.drnd.mode = EXMY_SR; g.drnd.seed = rnd64(); }
    else if (rndu(4) == 0) g.drnd.mode = (exmy_round_mode)(1 + rndu(5));
    run_case(&g);
    free_case(&g);
  }
  /* D binary32, rne, alpha = scale_d = 1, per-tensor scales: the fast kernel's
   * double-double epilogue; signed data, ties, results that overflow or fall
   * into binary32's subnormals (scales far from 1, tiny codes) */
  for (int t = 0; t < (g_long ? 400 : 80); t++) {
    gcase g;
    base_case(&g, 1 + rndu(16), 1 + rndu(16), 1 + rndu(300), (int)rndu(2), (int)rndu(2));
    set_model(&g, "exact");
    static const char *f8[] = {"e4m3fn", "e5m2", "e2m1fn", "e3m2fn"};
    exmy_format fa = tu_format(f8[rndu(4)]), fb = tu_format(f8[rndu(4)]);
    /* every 4th case: both scales near 2^+-(40..100), so D overflows or is subnormal */
    const int far = t % 4 == 0, center = far ? (t % 8 ? -1 : 1) * (40 + (int)rndu(60)) : (int)rndu(9) - 4;
    make_operand(&g, 0, NULL, &fa, far || rndu(2) ? "current" : "none", t % 5 == 1 ? P_CANCEL : P_RANDOM, (int)rndu(13), center);
    make_operand(&g, 1, NULL, &fb, far || rndu(2) ? "current" : "none", P_RANDOM, (int)rndu(13), center);
    if (t % 3 == 2) { code_pattern(&g, 0, CP_TINY); code_pattern(&g, 1, CP_ALLCODES); }
    g.what = "exact, D f32 rne, alpha = scale_d = 1";
    run_case(&g);
    free_case(&g);
  }
}

/* ======================================================================
 * Part 4: fp32 is a plain C triple loop (recipe none, alpha 1, D f32)
 * ====================================================================== */
static void part_triple_loop(void) {
  int ncase = g_long ? 60 : 16;
  for (int t = 0; t < ncase; t++) {
    gcase g;
    size_t m = 1 + rndu(9), n = 1 + rndu(9), k = (size_t)rndu(400);
    base_case(&g, m, n, k, t & 1, (t >> 1) & 1);
    set_model(&g, "fp32");
    exmy_format fa = pick_elem(0), fb = pick_elem(0);
    make_operand(&g, 0, NULL, &fa, "none", P_RANDOM, 10, 0);
    make_operand(&g, 1, NULL, &fb, "none", P_RANDOM, 10, 0);
    if (t % 3 == 0) { code_pattern(&g, 0, CP_ALLCODES); code_pattern(&g, 1, CP_ALLCODES); }
    /* the loop */
    float *ref = malloc((m * n + 1) * sizeof *ref);
    opnd A, B;
    op_init(&A, &g.A, 0, g.ta, m, k);
    op_init(&B, &g.B, 1, g.tb, n, k);
    for (size_t i = 0; i < m; i++)
      for (size_t j = 0; j < n; j++) {
        float c = 0.0f;
        for (size_t l = 0; l < k; l++) c = fmaf((float)A.v[i * k + l], (float)B.v[j * k + l], c);
        ref[i * n + j] = c;
      }
    op_free(&A);
    op_free(&B);
    uint32_t *d = malloc((m * n + 1) * 4);
    exmy_gemm_args a;
    args_of(&g, &a);
    char err[EXMY_ERRLEN];
    int rc = exmy_gemm(&a, d, NULL, NULL, err, sizeof err);
    CHECK(rc == 0, "triple loop case: exmy_gemm failed: %s", err);
    if (rc == 0)
      for (size_t t2 = 0; t2 < m * n; t2++)
        CHECK(d[t2] == tu_bits32(ref[t2]), "fp32 vs triple loop: D[%zu][%zu] = 0x%08x, loop 0x%08x (A %s, B %s, k=%zu, ta=%d tb=%d)",
              t2 / n, t2 % n, d[t2], tu_bits32(ref[t2]), g.fa, g.fb, k, g.ta, g.tb);
    free(d);
    free(ref);
    run_case(&g);
    free_case(&g);
  }
}

/* ======================================================================
 * Part 5: the sweep
 * ====================================================================== */
static void part_sweep(void) {
  int ncase = g_long ? 200000 : 12000;
  for (int t = 0; t < ncase; t++) {
    int model = t % NMODEL;
    if (!g_model_ok[model]) continue;
    gcase g;
    random_case(&g, model, g_long ? 1100 : 300, 6);
    run_case(&g);
    free_case(&g);
  }
}

/* ======================================================================
 * Part 8: medium shapes (tiles and panels of the fast paths, both threads busy)
 * ====================================================================== */
static void part_medium(void) {
  int ncase = g_long ? 4000 : 360;
  for (int t = 0; t < ncase; t++) {
    int model = t % NMODEL;
    if (!g_model_ok[model]) continue;
    gcase g;
    random_case(&g, model, g_long ? 2000 : 700, 48);
    run_case(&g);
    free_case(&g);
  }
}

/* ======================================================================
 * Part 6: layouts and arguments that must be rejected
 * ====================================================================== */
static void expect_reject(gcase *g, const char *why, const char *const *words) {
  for (int v = 0; v < 2; v++) {
    exmy_gemm_args a;
    void *d = calloc(g->m * g->n + 1, 8);
    args_of(g, &a);
    char err[EXMY_ERRLEN] = "";
    unsigned fl = 0;
    int rc = v ? exmy_gemm_ref(&a, d, NULL, &fl, err, sizeof err) : exmy_gemm(&a, d, NULL, &fl, err, sizeof err);
    CHECK(rc == -1, "%s: %s accepted it (returned %d)", why, v ? "exmy_gemm_ref" : "exmy_gemm", rc);
    int named = words == NULL;
    for (int w = 0; words && words[w]; w++)
      if (strstr(err, words[w])) named = 1;
    CHECK(rc != -1 || named, "%s: the error does not name the problem: '%s'", why, err);
    if (v == 0 && (g_verbose || (rc == -1 && !named))) printf("  %s -> %s\n", why, err);
    size_t m2, n2, k2;
    if (v == 0) {
      int c = exmy_gemm_check(&a, &m2, &n2, &k2, err, sizeof err);
      CHECK(c == -1, "%s: exmy_gemm_check accepted it", why);
    }
    free(d);
  }
}

static void part_reject(void) {
  struct { const char *ra, *rb, *fa, *fb; int ta, tb; size_t k; const char *why; } t[] = {
    {"mx", "mx", "e4m3fn", "e4m3fn", 0, 0, 64, "mx on A (1x32 along k) with mx on B k x n (1x32 along n)"},
    {"mx", "current", "e4m3fn", "e4m3fn", 0, 0, 64, "mx on A only"},
    {"none", "mx:col", "e4m3fn", "e4m3fn", 0, 0, 64, "mx on B only"},
    {"nvfp4", "mx:col", "e2m1fn", "e4m3fn", 0, 0, 64, "nvfp4 (16 along k) with mx:col (32 along k)"},
    {"block:1x128", "block:96x96", "e4m3fn", "e4m3fn", 0, 0, 300, "block:1x128 with block:96x96 (96 does not divide 128)"},
    {"block:1x48", "block:128x128", "e4m3fn", "e4m3fn", 0, 0, 300, "block:1x48 with block:128x128"},
    {"mx:ocp", "nvfp4:16x16", "e4m3fn", "e2m1fn", 0, 0, 64, "mx:ocp with nvfp4:16x16"},
  };
  static const char *layout_words[] = {"layout", "group", "block", "scale", "mx", "nvfp4", NULL};
  for (size_t c = 0; c < sizeof t / sizeof *t; c++) {
    gcase g;
    base_case(&g, 3, 5, t[c].k, t[c].ta, t[c].tb);
    make_operand(&g, 0, t[c].fa, NULL, t[c].ra, P_RANDOM, 4, 0);
    make_operand(&g, 1, t[c].fb, NULL, t[c].rb, P_RANDOM, 4, 0);
    g.what = t[c].why;
    gres r;
    reference(&g, &r);
    CHECK(r.err, "reference accepts '%s'", t[c].why);
    free(r.d);
    expect_reject(&g, t[c].why, layout_words);
    run_case(&g);
    free_case(&g);
  }
  /* shapes that do not match */
  {
    gcase g, h;
    base_case(&g, 3, 4, 10, 0, 0);
    make_operand(&g, 0, "e4m3fn", NULL, "none", P_RANDOM, 4, 0);
    base_case(&h, 3, 4, 11, 0, 0);
    make_operand(&h, 1, "e4m3fn", NULL, "none", P_RANDOM, 4, 0);
    g.B = h.B;
    memset(&h.B, 0, sizeof h.B);
    static const char *w[] = {"k", "shape", "10", "11", NULL};
    expect_reject(&g, "A 3x10 with B 11x4", w);
    free_case(&g);
  }
  /* an element format with more than 23 stored mantissa bits */
  {
    gcase g;
    base_case(&g, 2, 2, 8, 0, 0);
    make_operand(&g, 0, "f64", NULL, "none", P_RANDOM, 4, 0);
    make_operand(&g, 1, "e4m3fn", NULL, "none", P_RANDOM, 4, 0);
    static const char *w[] = {"23", "mantissa", "f64", "e11m52", NULL};
    expect_reject(&g, "f64 elements", w);
    free_case(&g);
  }
}

/* ======================================================================
 * Part 7: threads = 1 and 2 give identical bits
 * ====================================================================== */
static void part_threads(void) {
  static const char *models[] = {"fp32", "tc", "tc:hopper-fastacc", "acc=bf16,round=sr,seed=3", "fp32:pairwise",
                                 "chunk=32,inner=acc=f16", "exact"};
  for (size_t t = 0; t < sizeof models / sizeof *models; t++) {
    gcase g;
    int ex = !strcmp(models[t], "exact");
    base_case(&g, 96, 80, ex ? 40 : 300, (int)(t & 1), (int)((t >> 1) & 1));
    set_model(&g, models[t]);
    g.what = "threads 1 vs 2, 96 x 80";
    const char *ra = t % 3 == 0 ? "none" : t % 3 == 1 ? (g.ta ? "block:128x1" : "block:1x128") : "current";
    const char *rb = t % 3 == 1 ? "block:128x128" : "current";
    make_operand(&g, 0, "e4m3fn", NULL, ra, P_RANDOM, 8, 0);
    make_operand(&g, 1, t & 1 ? "e5m2" : "e4m3fn", NULL, rb, P_RANDOM, 8, 0);
    fill_c(&g, "bf16", 0);
    g.beta = 0.5f;
    g.df = tu_format(t & 1 ? "bf16" : "e4m3fn");
    g.scale_d = 0.25f;
    if (t == 3) { g.drnd.mode = EXMY_SR; g.drnd.seed = 77; }
    /* direct comparison of the thread counts (0 = OpenMP's default too) */
    size_t mn = g.m * g.n, cb = (size_t)exmy_code_bytes(&g.df);
    void *d[3];
    float am[3];
    int rc[3];
    unsigned fl[3];
    for (int v = 0; v < 3; v++) {
      exmy_gemm_args a;
      d[v] = calloc(mn, cb);
      args_of(&g, &a);
      a.threads = v == 0 ? 1 : v == 1 ? 2 : 0;
      char err[EXMY_ERRLEN];
      fl[v] = 0;
      rc[v] = exmy_gemm(&a, d[v], &am[v], &fl[v], err, sizeof err);
      CHECK(rc[v] == 0, "threads case %s: %s", models[t], err);
    }
    for (int v = 1; v < 3; v++)
      CHECK(rc[v] == rc[0] && fl[v] == fl[0] && memcmp(d[v], d[0], mn * cb) == 0 && tu_bits32(am[v]) == tu_bits32(am[0]),
            "model %s: threads=%d differs from threads=1", models[t], v == 1 ? 2 : 0);
    for (int v = 0; v < 3; v++) free(d[v]);
    run_case(&g);
    free_case(&g);
  }
}

/* ======================================================================
 * main
 * ====================================================================== */
static const char *kind_name[] = {"exact", "fp32", "fp32:pairwise", "acc=FORMAT", "tc"};

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--long")) g_long = 1;
    else if (!strcmp(argv[i], "--verbose")) g_verbose = 1;
    else if (!strncmp(argv[i], "--part=", 7)) g_part = atoi(argv[i] + 7);
    else { fprintf(stderr, "usage: %s [--long] [--verbose] [--part=N]\n", argv[0]); return 2; }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const uint64_t seed = tu_seed(0x67656d6d);
  g_t0 = now_s();
  g_rng = seed;
  probe_models();
  static const struct { const char *name; void (*fn)(void); } parts[] = {
    {"model parsing", part_parse}, {"anchors", part_anchors}, {"exact vs MPFR", part_exact},
    {"fp32 vs triple loop", part_triple_loop}, {"random sweep", part_sweep}, {"rejected layouts", part_reject},
    {"threads", part_threads}, {"medium shapes", part_medium},
  };
  for (int p = 0; p < (int)(sizeof parts / sizeof *parts); p++) {
    if (g_part >= 0 && g_part != p + 1) continue;
    long c0 = tu_checks, f0 = tu_fails, k0 = g_cases;
    g_rng = seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(p + 1)); /* --part=N reproduces a part alone */
    double t0 = now_s();
    parts[p].fn();
    printf("part %d %-20s %6ld GEMM cases %9ld checks %5ld failures %6.1f s\n", p + 1, parts[p].name,
           g_cases - k0, tu_checks - c0, tu_fails - f0, now_s() - t0);
  }
  printf("GEMM cases: %ld (%ld to be rejected, %ld with mismatches); of which NaN codes of the other sign: %ld; by model kind:",
         g_cases, g_errcases, g_fail_cases, g_nan_sign);
  for (int k = 0; k < 5; k++) printf(" %s %ld", kind_name[k], g_model_cases[k]);
  printf("\n");
  CHECK(g_inexact_mpfr == 0, "internal: %ld MPFR operations were not exact (raise XPREC)", g_inexact_mpfr);
  printf("time %.1f s\n", now_s() - g_t0);
  if (mx_inited) {
    oracle_ws_clear(&g_ows);
    mpfr_clear(mx_acc); mpfr_clear(mx_t); mpfr_clear(mx_u);
    mpz_clear(mz);
  }
  return tu_finish("test_gemm");
}
