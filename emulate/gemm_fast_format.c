/* gemm_fast_format.c: the fast kernel of acc=FORMAT with round to nearest
 * even: each step c = round_fmt(c + p) by one double addition of a magic
 * constant where that is exact, else the reference step
 * (exmy__round_sum2); pieces promoted into fp32 as the reference, then the
 * element epilogue. */
#include "emulate/gemm_kernels.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
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
    /* magic = 1.5 * 2^52 * 2^(e - M), built from its bits (e - M + 52 stays a normal exponent: format_fast_applies) */
    const uint64_t mb = ((uint64_t)(e - ff->mbits + 1075) << 52) | ((uint64_t)1 << 51);
    double magic;
    memcpy(&magic, &mb, 8);
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

#if defined(__x86_64__)
#include <immintrin.h>

/* The AVX-512 form of format_step for 32 outputs of a row at once (4 vectors
 * of 8 doubles), the products from B packed [l][32]: the same test and the
 * same magic-constant rounding lane by lane, plus two cases the IEEE double
 * sum already gets right under rne: an exact zero sum (IEEE's sign is the
 * reference's) and an infinite accumulator that stays infinite (when the
 * format rounds an infinity to itself).  Lanes that fail take the reference
 * step (exmy__round_sum2), one at a time. */
enum { FW = 32 };

typedef struct fmt_vec {
  const fmt_fast *ff;
  int inf_ok;       /* decode(round(+-inf)) is +-inf */
  uint64_t k, n;
} fmt_vec;

__attribute__((target("avx512f,avx512dq"))) static void piece_512(const fmt_vec *fv, const double *a,
                                                                    const double *Bp, size_t len, double *c,
                                                                    unsigned nvalid, uint64_t base0, size_t l0) {
  const fmt_fast *ff = fv->ff;
  const __m512i e_lo = _mm512_set1_epi64(ff->emin + 1023), m52 = _mm512_set1_epi64(52 - ff->mbits);
  const __m512i half = _mm512_set1_epi64((int64_t)1 << 51), x7ff = _mm512_set1_epi64(0x7ff);
  const __m512d vmax = _mm512_set1_pd(ff->vmax), zero = _mm512_setzero_pd();
  __m512d vc[4];
  __mmask8 valid[4];
  for (int v = 0; v < 4; v++) {
    vc[v] = _mm512_loadu_pd(c + 8 * v);
    const unsigned lo = 8 * (unsigned)v;
    valid[v] = nvalid >= lo + 8 ? 0xff : nvalid > lo ? (__mmask8)((1u << (nvalid - lo)) - 1) : 0;
  }
  for (size_t l = 0; l < len; l++) {
    const __m512d va = _mm512_set1_pd(a[l]);
    for (int v = 0; v < 4; v++) {
      const __m512d pv = _mm512_mul_pd(va, _mm512_loadu_pd(Bp + l * FW + 8 * v)), cv = vc[v];
      const __m512d sv = _mm512_add_pd(cv, pv), bp = _mm512_sub_pd(sv, cv);
      const __m512d e2 = _mm512_add_pd(_mm512_sub_pd(cv, _mm512_sub_pd(sv, bp)), _mm512_sub_pd(pv, bp));
      const __m512i ex = _mm512_and_si512(_mm512_srli_epi64(_mm512_castpd_si512(sv), 52), x7ff);
      const __m512i mg = _mm512_or_si512(_mm512_slli_epi64(_mm512_add_epi64(_mm512_max_epi64(ex, e_lo), m52), 52), half);
      const __m512d magic = _mm512_castsi512_pd(mg);
      const __m512d r = _mm512_sub_pd(_mm512_add_pd(sv, magic), magic);
      const __mmask8 exact = _mm512_cmp_pd_mask(e2, zero, _CMP_EQ_OQ);
      const __mmask8 normal = _mm512_cmpneq_epi64_mask(ex, _mm512_setzero_si512()) & _mm512_cmpneq_epi64_mask(ex, x7ff) &
                              _mm512_cmp_pd_mask(r, zero, _CMP_NEQ_OQ) &
                              _mm512_cmp_pd_mask(_mm512_abs_pd(r), vmax, _CMP_LE_OQ);
      const __mmask8 zsum = _mm512_cmp_pd_mask(sv, zero, _CMP_EQ_OQ);
      const __mmask8 infs = fv->inf_ok ? (__mmask8)(_mm512_fpclass_pd_mask(cv, 0x18) & _mm512_cmp_pd_mask(sv, cv, _CMP_EQ_OQ)) : 0;
      const __mmask8 ok = (exact & (normal | zsum)) | infs;
      __m512d nc = _mm512_mask_blend_pd(zsum | infs, r, sv);
      const __mmask8 fail = valid[v] & (__mmask8)~ok;
      if (fail) {
        double cs[8], ps[8], out[8];
        _mm512_storeu_pd(cs, cv);
        _mm512_storeu_pd(ps, pv);
        _mm512_storeu_pd(out, nc);
        for (int t = 0; t < 8; t++)
          if (fail >> t & 1) {
            const uint64_t idx = base0 + (uint64_t)(8 * v + t) * fv->k + l0 + l;
            const uint64_t code = exmy__round_sum2(ff->f, ff->r, cs[t], ps[t], idx, NULL);
            out[t] = ff->lut ? ff->lut[code] : exmy_decode(ff->f, code);
          }
        nc = _mm512_loadu_pd(out);
      }
      vc[v] = nc;
    }
  }
  for (int v = 0; v < 4; v++) _mm512_storeu_pd(c + 8 * v, vc[v]);
}

/* The whole GEMM with piece_512: B packed in blocks of FW columns, tiles of
 * (rows, FW columns) in parallel; P of each piece promoted as the reference;
 * then the element epilogue.  0 when it does not apply. */
static int format_512(const gemm_plan *p, const fmt_fast *ff, int nt, unsigned *flags, float *amax) {
  if (p->style == GEMM_INNER || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) return 0;
  const char *e = getenv("EXMY_NO_AVX512");
  if (e && *e && *e != '0') return 0;
  const size_t m = p->m, n = p->n, k = p->k, nb = (n + FW - 1) / FW;
  double *B = exmy__gemm_ws_get(p->ws, GEMM_WS_B, (nb * k * FW + 1) * sizeof *B);
  if (!B) return 0;
  fmt_vec fv = {ff, 0, k, n};
  const double pinf = exmy_decode(ff->f, exmy_from_double(ff->f, ff->r, INFINITY, 0, NULL));
  const double ninf = exmy_decode(ff->f, exmy_from_double(ff->f, ff->r, -INFINITY, 0, NULL));
  fv.inf_ok = pinf == INFINITY && ninf == -INFINITY;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (size_t jb = 0; jb < nb; jb++)
    for (size_t l = 0; l < k; l++)
      for (size_t t = 0; t < FW; t++) {
        const size_t j = jb * FW + t;
        B[(jb * k + l) * FW + t] = j < n ? p->bd[j * k + l] : 0.0;
      }
  const int pieces = p->acc.chunk || p->style == GEMM_PROMOTE;
  const size_t RB = 16, nrb = (m + RB - 1) / RB;
  unsigned fl = 0;
  float am = 0.0f;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : fl) reduction(max : am) if (nt > 1)
  for (size_t t = 0; t < nrb * nb; t++) {
    const size_t jb = t % nb, i0 = (t / nb) * RB, i1 = i0 + RB < m ? i0 + RB : m;
    const size_t j0 = jb * FW, nv = n - j0 < FW ? n - j0 : FW;
    unsigned f1 = 0;
    for (size_t i = i0; i < i1; i++) {
      float P[FW];
      double c[FW];
      const uint64_t base0 = ((uint64_t)i * n + j0) * k;
      if (!pieces) {
        memset(c, 0, sizeof c);
        piece_512(&fv, p->ad + i * k, B + jb * k * FW, k, c, (unsigned)nv, base0, 0);
        for (size_t q = 0; q < nv; q++) P[q] = (float)c[q];
      } else { /* as the reference: pieces promoted into fp32 */
        for (size_t q = 0; q < nv; q++) P[q] = 0.0f;
        for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
          l1 = exmy__gemm_piece_end(p, l0);
          memset(c, 0, sizeof c);
          piece_512(&fv, p->ad + i * k + l0, B + (jb * k + l0) * FW, l1 - l0, c, (unsigned)nv, base0, l0);
          for (size_t q = 0; q < nv; q++) P[q] = fmaf(exmy__gemm_promote_w(p, i, j0 + q, l0), (float)c[q], P[q]);
        }
      }
      for (size_t q = 0; q < nv; q++) am = fmaxf(am, exmy__gemm_epilogue(p, i, j0 + q, P[q], &f1));
    }
    fl |= f1;
  }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
  return 1;
}

/* acc=f16 and acc=bf16 on float lanes, 16 outputs a vector, for operands
 * whose products carry at most the accumulator's precision q (fp8 x fp8):
 * the product is exact in float, c + p is rounded once to float and then to
 * the accumulator, and since float's 24 bits >= 2q + 2 (q = 11, 8) that
 * double rounding equals the reference's one rounding of the exact sum
 * (Figueroa, "When is double rounding innocuous?", 1995).  No float
 * subnormal or overflow arises before the accumulator overflows: every sum
 * is a multiple of the smallest product, >= 2^-126.  An overflow is IEEE's
 * (+-inf, which then stays) and so the reference's when the format rounds a
 * finite overflow to +-inf (no saturation); a lane that ends NaN, or
 * infinite under saturation, is redone by the reference step.
 * Tiles of FR rows x FC columns: 16 accumulators in registers. */
enum { FR = 4, FC = 64 };

static int f32_lanes_apply(const gemm_plan *p) {
  const exmy_format *f = &p->acc.acc_fmt, *fa = &p->A->fmt, *fb = &p->B->fmt;
  const int f16 = f->ebits == 5 && f->mbits == 10 && f->bias == 15;
  const int bf16 = f->ebits == 8 && f->mbits == 7 && f->bias == 127;
  return p->k > 0 && (f16 || bf16) && f->inf == EXMY_INF_IEEE && f->nan == EXMY_NAN_IEEE && p->style != GEMM_INNER &&
         (fa->mbits + 1) + (fb->mbits + 1) <= f->mbits + 1 &&
         fa->emin - fa->mbits + fb->emin - fb->mbits >= -126 && fa->emax + fb->emax + 2 <= 127;
}

/* Round float lanes to binary16 (the hardware conversion, rne) or to
 * bfloat16 (rne on the bits: add 0x7fff plus the kept lsb, cut). */
__attribute__((target("avx512f"))) static inline __m512 round_f16(__m512 x) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("avx512f"))) static inline __m512 round_bf16(__m512 x) {
  const __m512i b = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
}

/* c[r][0..FC) = the accumulator's sums from +0 of rows A + r*lda (r < FR)
 * against the packed columns Bp ([l][FC]) over len steps. */
#define F32_LANES_KERNEL(NAME, ROUND)                                                                           \
  __attribute__((target("avx512f"))) static void NAME(const float *A, size_t lda, const float *Bp, size_t len,  \
                                                      float c[FR][FC]) {                                        \
    __m512 v00 = _mm512_setzero_ps(), v01 = v00, v02 = v00, v03 = v00, v10 = v00, v11 = v00, v12 = v00,         \
           v13 = v00, v20 = v00, v21 = v00, v22 = v00, v23 = v00, v30 = v00, v31 = v00, v32 = v00, v33 = v00;   \
    for (size_t l = 0; l < len; l++) {                                                                          \
      const float *b = Bp + l * FC;                                                                             \
      const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32),        \
                   b3 = _mm512_loadu_ps(b + 48);                                                                \
      __m512 a = _mm512_set1_ps(A[l]);                                                                          \
      v00 = ROUND(_mm512_fmadd_ps(a, b0, v00)), v01 = ROUND(_mm512_fmadd_ps(a, b1, v01));                       \
      v02 = ROUND(_mm512_fmadd_ps(a, b2, v02)), v03 = ROUND(_mm512_fmadd_ps(a, b3, v03));                       \
      a = _mm512_set1_ps(A[lda + l]);                                                                           \
      v10 = ROUND(_mm512_fmadd_ps(a, b0, v10)), v11 = ROUND(_mm512_fmadd_ps(a, b1, v11));                       \
      v12 = ROUND(_mm512_fmadd_ps(a, b2, v12)), v13 = ROUND(_mm512_fmadd_ps(a, b3, v13));                       \
      a = _mm512_set1_ps(A[2 * lda + l]);                                                                       \
      v20 = ROUND(_mm512_fmadd_ps(a, b0, v20)), v21 = ROUND(_mm512_fmadd_ps(a, b1, v21));                       \
      v22 = ROUND(_mm512_fmadd_ps(a, b2, v22)), v23 = ROUND(_mm512_fmadd_ps(a, b3, v23));                       \
      a = _mm512_set1_ps(A[3 * lda + l]);                                                                       \
      v30 = ROUND(_mm512_fmadd_ps(a, b0, v30)), v31 = ROUND(_mm512_fmadd_ps(a, b1, v31));                       \
      v32 = ROUND(_mm512_fmadd_ps(a, b2, v32)), v33 = ROUND(_mm512_fmadd_ps(a, b3, v33));                       \
    }                                                                                                           \
    _mm512_storeu_ps(c[0], v00), _mm512_storeu_ps(c[0] + 16, v01), _mm512_storeu_ps(c[0] + 32, v02);           \
    _mm512_storeu_ps(c[0] + 48, v03), _mm512_storeu_ps(c[1], v10), _mm512_storeu_ps(c[1] + 16, v11);           \
    _mm512_storeu_ps(c[1] + 32, v12), _mm512_storeu_ps(c[1] + 48, v13), _mm512_storeu_ps(c[2], v20);           \
    _mm512_storeu_ps(c[2] + 16, v21), _mm512_storeu_ps(c[2] + 32, v22), _mm512_storeu_ps(c[2] + 48, v23);      \
    _mm512_storeu_ps(c[3], v30), _mm512_storeu_ps(c[3] + 16, v31), _mm512_storeu_ps(c[3] + 32, v32);           \
    _mm512_storeu_ps(c[3] + 48, v33);                                                                           \
  }
F32_LANES_KERNEL(lanes_f16, round_f16)
F32_LANES_KERNEL(lanes_bf16, round_bf16)
#undef F32_LANES_KERNEL

typedef void (*lanes_fn)(const float *A, size_t lda, const float *Bp, size_t len, float c[FR][FC]);

/* The whole GEMM on float lanes: op(A) as float rows (padded to FR), B packed
 * in blocks of FC columns, tiles of (FR rows, FC columns) in parallel; P of
 * each piece promoted as the reference; then the element epilogue.  0 when it
 * does not apply. */
static int format_f32_lanes(const gemm_plan *p, const fmt_fast *ff, int nt, unsigned *flags, float *amax) {
  if (!f32_lanes_apply(p) || !__builtin_cpu_supports("avx512f")) return 0;
  const char *e = getenv("EXMY_NO_AVX512");
  if (e && *e && *e != '0') return 0;
  const lanes_fn kern = p->acc.acc_fmt.ebits == 5 ? lanes_f16 : lanes_bf16;
  const double big = ldexp(1.0, p->acc.acc_fmt.emax + 1);
  const int ovf_inf = exmy_decode(ff->f, exmy_from_double(ff->f, ff->r, big, 0, NULL)) == INFINITY &&
                      exmy_decode(ff->f, exmy_from_double(ff->f, ff->r, -big, 0, NULL)) == -INFINITY;
  const size_t m = p->m, n = p->n, k = p->k, nb = (n + FC - 1) / FC, nrb = (m + FR - 1) / FR;
  float *B = exmy__gemm_ws_get(p->ws, GEMM_WS_B, (nb * k * FC + 1) * sizeof *B);
  float *A = exmy__gemm_ws_get(p->ws, GEMM_WS_A, (nrb * FR * k + 1) * sizeof *A);
  if (!A || !B) return 0;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
#pragma omp for schedule(static) nowait
    for (size_t i = 0; i < nrb * FR; i++)
      for (size_t l = 0; l < k; l++) A[i * k + l] = i < m ? (float)p->ad[i * k + l] : 0.0f;
#pragma omp for schedule(static)
    for (size_t jb = 0; jb < nb; jb++)
      for (size_t l = 0; l < k; l++)
        for (size_t t = 0; t < FC; t++) {
          const size_t j = jb * FC + t;
          B[(jb * k + l) * FC + t] = j < n ? (float)p->bd[j * k + l] : 0.0f;
        }
  }
  const int pieces = p->acc.chunk || p->style == GEMM_PROMOTE;
  unsigned fl = 0;
  float am = 0.0f;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1) reduction(| : fl) reduction(max : am) if (nt > 1)
  for (size_t t = 0; t < nrb * nb; t++) {
    const size_t jb = t % nb, i0 = (t / nb) * FR, j0 = jb * FC, nv = n - j0 < FC ? n - j0 : FC;
    const size_t nr = m - i0 < FR ? m - i0 : FR;
    float P[FR][FC], c[FR][FC];
    unsigned f1 = 0;
    for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
      l1 = pieces ? exmy__gemm_piece_end(p, l0) : k;
      kern(A + i0 * k + l0, k, B + (jb * k + l0) * FC, l1 - l0, c);
      for (size_t r = 0; r < nr; r++)
        for (size_t q = 0; q < nv; q++) {
          float s = c[r][q];
          if (isnan(s) || (isinf(s) && !ovf_inf)) s = format_piece(p, ff, i0 + r, j0 + q, l0, l1); /* the reference step */
          if (!pieces) P[r][q] = s;
          else P[r][q] = fmaf(exmy__gemm_promote_w(p, i0 + r, j0 + q, l0), s, l0 ? P[r][q] : 0.0f);
        }
    }
    for (size_t r = 0; r < nr; r++)
      for (size_t q = 0; q < nv; q++) am = fmaxf(am, exmy__gemm_epilogue(p, i0 + r, j0 + q, P[r][q], &f1));
    fl |= f1;
  }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
  return 1;
}
#endif

int exmy__gemm_fast_format(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  if (!format_fast_applies(p)) return 0;
  const exmy_format *f = &p->acc.acc_fmt;
  const fmt_fast ff = {f, &p->acc.acc_rnd, p->acc_lut, exmy_decode(f, f->max_mag), f->emin, f->mbits};
#if defined(__x86_64__)
  if (format_f32_lanes(p, &ff, nt, flags, amax) || format_512(p, &ff, nt, flags, amax)) return 1;
#endif
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
