/* gemm_fast_format.c: the fast kernel of acc=FORMAT with round to nearest
 * even: each step c = round_fmt(c + p) by one double addition of a magic
 * constant where that is exact, else the reference step
 * (exmy__round_sum2); pieces promoted into fp32 as the reference, then the
 * epilogue (with AVX-512: on the blocking frame, gemm_block.h). */
#include "emulate/gemm_kernels.h"
#include "emulate/gemm_fast_lanes.h"
#include "emulate/gemm_block.h"
#include "emulate/gemm_round.h"
#include "emulate/gemm_epilogue.h"
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
  return ff->lut ? ff->lut[code] : exmy_code_to_f64(ff->f, code);
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
            out[t] = ff->lut ? ff->lut[code] : exmy_code_to_f64(ff->f, code);
          }
        nc = _mm512_loadu_pd(out);
      }
      vc[v] = nc;
    }
  }
  for (int v = 0; v < 4; v++) _mm512_storeu_pd(c + 8 * v, vc[v]);
}

/* piece_512 on the blocking frame (gemm_block.h): the plan's doubles, A one
 * row a panel, B in panels of FW columns, tasks of RB rows; the frame
 * promotes the pieces and runs the epilogue. */
enum { RB = 16 };

static void fmt_micro(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap, const void *Bp,
                      size_t rows, size_t cols, float *c) {
  const fmt_vec *fv = ctx;
  double cd[FW] = {0};
  (void)rows; /* mr = 1 */
  piece_512(fv, (const double *)Ap + l0, (const double *)Bp + l0 * FW, len, cd, (unsigned)cols,
            ((uint64_t)i0 * fv->n + j0) * fv->k, l0);
  for (size_t q = 0; q < cols; q++) c[q] = (float)cd[q];
}

/* The whole GEMM with piece_512; 0 when it does not apply. */
static int format_512(const gemm_plan *p, const fmt_fast *ff, int nt, unsigned *flags, float *amax) {
  if (p->style == GEMM_INNER || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) return 0;
  if (exmy__avx512_disabled()) return 0;
  fmt_vec fv = {ff, 0, p->k, p->n};
  const double pinf = exmy_code_to_f64(ff->f, exmy_from_f64(ff->f, ff->r, INFINITY, 0, NULL));
  const double ninf = exmy_code_to_f64(ff->f, exmy_from_f64(ff->f, ff->r, -INFINITY, 0, NULL));
  fv.inf_ok = pinf == INFINITY && ninf == -INFINITY;
  const gemm_frame_kernel kd = {.ctx = &fv, .mr = 1, .nr = FW, .mt = RB, .pa = p->k * sizeof(double),
                                .pb = p->k * FW * sizeof(double), .pack_a = exmy__gemm_pack_a_f64,
                                .pack_b = exmy__gemm_pack_b_f64, .micro = fmt_micro};
  return exmy__gemm_frame_run(&kd, p, nt, flags, amax);
}

#endif

int exmy__gemm_fast_format(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
#if defined(__x86_64__)
  if (exmy__gemm_fast_lanes(p, nt, flags, amax)) return 1; /* f16 and bf16 on float lanes (gemm_fast_lanes.c) */
#endif
  if (!format_fast_applies(p)) return 0;
  const exmy_format *f = &p->acc.acc_fmt;
  const fmt_fast ff = {f, &p->acc.acc_rnd, p->acc_lut, exmy_code_to_f64(f, f->max_mag), f->emin, f->mbits};
#if defined(__x86_64__)
  if (format_512(p, &ff, nt, flags, amax)) return 1;
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
