/* gemm_fast_tc.c: the fast kernel of acc=tc (docs/gemm.md, the block FMA),
 * vectorized across 16 columns: exact float products, truncation by a float
 * multiply with 2^(f - Emax) and a truncating conversion to int32 (int64 when
 * the sum needs more than 31 bits, e.g. 25 fraction bits over 32 products),
 * an exact integer sum; taken only where those steps are exact (truncation, no INNER
 * scales, bounds checked in exmy__gemm_fast_tc), then the row epilogue. */
#include "emulate/gemm_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)

typedef float v16sf __attribute__((vector_size(64)));
typedef int32_t v16si __attribute__((vector_size(64)));
typedef double v8df __attribute__((vector_size(64)));
typedef int64_t v8di __attribute__((vector_size(64)));
typedef int64_t v16di __attribute__((vector_size(128)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef float v8sf __attribute__((vector_size(32)));
#define TC_MR 4
#define TC_NR 16

typedef struct tc_ctx {
  const gemm_plan *p;
  const float *av; const int32_t *ae;   /* op(A): m x k values and nominal exponents */
  const float *bv; const int32_t *be;   /* op(B) panels: [panel][l][16] */
  float *out;                           /* m x n: the model's P (promoted F) */
  int wide;                             /* int64 sums */
} tc_ctx;

/* A zero element's exponent under the v2 zero rule: far below every real
 * one, so a product with a zero factor is found by its sum (< ZERO_E / 2). */
#define ZERO_E (-(1 << 20))

/* Nominal exponent of an element (docs/gemm.md, tc step 2: exmy__gemm_nominal's
 * e, max(floor(log2|x|), emin)); zero: -126 (v1) or ZERO_E (v2).  From the
 * double's exponent field: operands are normal doubles (within 2^-300..2^300,
 * check_operand). */
static int32_t nominal_exp(double x, int emin, int v2) {
  if (x == 0) return v2 ? ZERO_E : -126;
  uint64_t bits;
  memcpy(&bits, &x, 8);
  const int32_t e = (int32_t)((bits >> 52) & 0x7FF) - 1023;
  return e < emin ? emin : e;
}

/* lane-wise max (compare and select) */
#define VMAX(a, b) ({ const v16si a_ = (a), b_ = (b), m_ = a_ > b_; (a_ & m_) | (b_ & ~m_); })

/* S * 2^(emax - f), cut to `out` fraction bits (truncation), as float; S in
 * int32 lanes (Sp) or int64 lanes (Sw, when wide). */
static inline __attribute__((always_inline)) void tc_normalize(v16sf *res, const v16si *Sp, const v16di *Sw, const int wide,
                                                               const v16si *ep, int f, int out) {
  v16sf r;
  const v16si emax = *ep;
  for (int h = 0; h < 2; h++) {
    v8si e8;
    memcpy(&e8, (const char *)&emax + 32 * h, 32);
    v8df d;
    if (wide) { /* exact: |S| < 2^53 (checked in exmy__gemm_fast_tc) */
      v8di s8;
      memcpy(&s8, (const char *)Sw + 64 * h, 64);
      d = __builtin_convertvector(s8, v8df);
    } else {
      v8si s8;
      memcpy(&s8, (const char *)Sp + 32 * h, 32);
      d = __builtin_convertvector(s8, v8df);
    }
    /* 2^(emax - f) as a double: exponent field emax - f + 1023 */
    const v8di pe = (__builtin_convertvector(e8, v8di) - f + 1023) << 52;
    v8df pw;
    memcpy(&pw, &pe, 64);
    v8df v = d * pw; /* exact: S is an integer of at most 53 bits and 2^(emax-f) normal */
    v8di bits;
    memcpy(&bits, &v, 64);
    bits &= ~(v8di){0} << (52 - out); /* truncate toward zero (zero stays zero) */
    memcpy(&v, &bits, 64);
    const v8sf f8 = __builtin_convertvector(v, v8sf); /* exact: <= 24 bits, normal */
    memcpy((char *)&r + 32 * h, &f8, 32);
  }
  *res = r;
}

/* One tile of NRW rows x 16 columns over all of k; NRW, WIDE (int64 sums)
 * and EZ (the v2 zero rule: tc_zero != 0) are constants at each call so the
 * per-row vectors stay in registers and the other variants' code drops out. */
static inline __attribute__((always_inline)) void tc_tile(const tc_ctx *x, size_t ib, size_t jp, const int NRW,
                                                          const int WIDE, const int EZ) {
  const gemm_plan *p = x->p;
  const size_t k = p->k, n = p->n, g = (size_t)p->acc.tc_group;
  const int F = p->acc.tc_frac, out = p->acc.tc_out_frac, ez = p->acc.tc_zero;
  const int promoted = p->acc.chunk || p->style == GEMM_PROMOTE;
  const float *bv = x->bv + jp * k * TC_NR;
  const int32_t *be = x->be + jp * k * TC_NR;
  const float *av = x->av + ib * k;
  const int32_t *ae = x->ae + ib * k;
  v16sf Fs[TC_MR], c[TC_MR];
  for (int r = 0; r < NRW; r++) Fs[r] = (v16sf){0};
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = exmy__gemm_piece_end(p, l0);
    for (int r = 0; r < NRW; r++) c[r] = (v16sf){0};
    for (size_t g0 = l0; g0 < l1; g0 += g) {
      const size_t g1 = g0 + g < l1 ? g0 + g : l1;
      /* row by row, so each row's exponent and sum stay in registers across the group (a
       * row-inner loop kept them in memory); the integer sums are exact, so the order of
       * rows and terms does not matter */
      for (int r = 0; r < NRW; r++) {
        const float *ar = av + (size_t)r * k;
        const int32_t *aer = ae + (size_t)r * k;
        v16si cb;
        memcpy(&cb, &c[r], 64);
        v16si emax = VMAX(((cb >> 23) & 255) - 127, (v16si){0} - 126);
        v16si anyz = (cb & 0x7FFFFFFF) == 0; /* lanes with a zero term (v2: it has exponent ez) */
        if (EZ) emax = (emax & ~anyz) | (((v16si){0} + ZERO_E) & anyz); /* a zero c: below all */
        /* the group's largest product exponent: four independent chains (a compare and a
         * select each: one chain would wait on its own latency every term) */
        v16si em[4] = {emax, emax, emax, emax};
        size_t le = g0;
        for (; le + 4 <= g1; le += 4)
          for (int u = 0; u < 4; u++) {
            v16si e;
            memcpy(&e, be + (le + (size_t)u) * TC_NR, 64);
            const v16si pe = e + aer[le + (size_t)u];
            em[u] = VMAX(em[u], pe);
            if (EZ) anyz |= pe < ZERO_E / 2;
          }
        for (; le < g1; le++) {
          v16si e;
          memcpy(&e, be + le * TC_NR, 64);
          const v16si pe = e + aer[le];
          em[0] = VMAX(em[0], pe);
          if (EZ) anyz |= pe < ZERO_E / 2;
        }
        const v16si em01 = VMAX(em[0], em[1]), em23 = VMAX(em[2], em[3]);
        emax = VMAX(em01, em23);
        if (EZ) emax = VMAX(emax, (((v16si){0} + ez) & anyz) | (((v16si){0} + ZERO_E) & ~anyz));
        v16si pe = F - emax + 127;
        pe = VMAX(pe, (v16si){0} + 1);
        pe = (pe & (pe < 254)) | (((v16si){0} + 254) & ~(pe < 254));
        pe <<= 23;
        v16sf pw;
        memcpy(&pw, &pe, 64);
        v16si S = {0};
        v16di Sw = {0};
        if (WIDE) Sw = __builtin_convertvector(c[r] * pw, v16di);
        else S = __builtin_convertvector(c[r] * pw, v16si);
        for (size_t l = g0; l < g1; l++) {
          v16sf b;
          memcpy(&b, bv + l * TC_NR, 64);
          const v16sf t = (ar[l] * b) * pw;
          if (WIDE) Sw += __builtin_convertvector(t, v16di);
          else S += __builtin_convertvector(t, v16si);
        }
        tc_normalize(&c[r], &S, &Sw, WIDE, &emax, F, out);
      }
    }
    if (promoted)
      for (int r = 0; r < NRW; r++)
        for (int t = 0; t < TC_NR; t++) {
          const size_t i = ib + (size_t)r, j = jp * TC_NR + (size_t)t;
          Fs[r][t] = fmaf(j < n ? exmy__gemm_promote_w(p, i, j, l0) : 1.0f, c[r][t], Fs[r][t]);
        }
  }
  for (int r = 0; r < NRW; r++)
    for (int t = 0; t < TC_NR && jp * TC_NR + (size_t)t < n; t++)
      x->out[(ib + (size_t)r) * n + jp * TC_NR + (size_t)t] = promoted ? Fs[r][t] : (k ? c[r][t] : 0.0f);
}

__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
static void tc_rows(const tc_ctx *x, size_t i0, size_t i1) {
  const size_t npan = (x->p->n + TC_NR - 1) / TC_NR;
  const int wide = x->wide, ez = x->p->acc.tc_zero != 0;
/* the tiles of one variant: TC_MR rows at a time, then the rest one by one */
#define TC_TILES(W, Z)                                                                                                \
  do {                                                                                                                \
    for (; ib + TC_MR <= i1; ib += TC_MR) tc_tile(x, ib, jp, TC_MR, W, Z);                                            \
    for (; ib < i1; ib++) tc_tile(x, ib, jp, 1, W, Z);                                                                \
  } while (0)
  for (size_t jp = 0; jp < npan; jp++) {
    size_t ib = i0;
    if (wide && ez) TC_TILES(1, 1);
    else if (wide) TC_TILES(1, 0);
    else if (ez) TC_TILES(0, 1);
    else TC_TILES(0, 0);
  }
#undef TC_TILES
}

int exmy__gemm_fast_tc(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  const exmy_accum *a = &p->acc;
  if (a->tc_align_rne || a->tc_norm_rne || p->style == GEMM_INNER) return 0;
  const exmy_format *fa = &p->A->fmt, *fb = &p->B->fmt;
  const int F = a->tc_frac;
  int lg = 0, lk = 0;
  while (((size_t)1 << lg) < (size_t)a->tc_group + 1) lg++;
  while (((size_t)1 << lk) < p->k + 1) lk++;
  if ((fa->mbits + 1) + (fb->mbits + 1) > 24) return 0;                   /* float products exact */
  if ((fa->emin - fa->mbits) + (fb->emin - fb->mbits) < -149) return 0;
  if (F + 2 + lg > 52) return 0;                                          /* integer sums exact in double */
  const int wide = F + 2 + lg > 30;                                        /* int64 sums */
  if (fa->emin + fb->emin - 2 * F < -100) return 0;                       /* results stay normal */
  if (fa->emax + fb->emax + lk + 2 > F + 120) return 0;                   /* no overflow, 2^(f-emax) normal */
  const size_t m = p->m, n = p->n, k = p->k, npan = (n + TC_NR - 1) / TC_NR;
  float *av = malloc((m * k + 1) * sizeof *av), *bv = calloc(npan * k * TC_NR + 1, sizeof *bv);
  int32_t *ae = malloc((m * k + 1) * sizeof *ae), *be = malloc((npan * k * TC_NR + 1) * sizeof *be);
  float *P = malloc((m * n + 1) * sizeof *P);
  if (!av || !bv || !ae || !be || !P) {
    free(av), free(bv), free(ae), free(be), free(P);
    return 0;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t t = 0; t < m * k; t++) {
    av[t] = (float)p->ad[t];
    ae[t] = nominal_exp(p->ad[t], fa->emin, a->tc_zero != 0);
  }
  for (size_t t = 0; t < npan * k * TC_NR; t++) be[t] = a->tc_zero ? ZERO_E : -126; /* padding columns: zeros */
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t j = 0; j < n; j++)
    for (size_t l = 0; l < k; l++) {
      const size_t o = (j / TC_NR) * k * TC_NR + l * TC_NR + j % TC_NR;
      bv[o] = (float)p->bd[j * k + l];
      be[o] = nominal_exp(p->bd[j * k + l], fb->emin, a->tc_zero != 0);
    }
  tc_ctx x = {p, av, ae, bv, be, P, wide};
  const size_t blk = 16, nblk = (m + blk - 1) / blk;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (size_t b = 0; b < nblk; b++) tc_rows(&x, b * blk, (b + 1) * blk < m ? (b + 1) * blk : m);
  free(av), free(bv), free(ae), free(be);
  *flags |= exmy__gemm_epilogue_all(p, P, nt, amax);
  free(P);
  return 1;
}
#endif /* __x86_64__ */
