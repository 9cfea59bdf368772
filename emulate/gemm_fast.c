/* gemm_fast.c: fast kernels of the emulated GEMM, bit for bit the reference
 * of gemm.c (tests/test_gemm.c checks both against an independent one).
 *
 * fp32:  a GotoBLAS-style blocked kernel: operands decoded once into packed
 *        panels, blocks of KC along k (cut at every piece boundary), an
 *        MR x NR register tile of fused multiply-adds per lane, so each
 *        output element still sees c = fmaf(a, b, c) in k order.
 * exact: the same blocking in double on integer-valued operands (a * 2^-lsb):
 *        every product and partial sum is an integer below 2^53, so the
 *        double sums are exact; one exact rescale and rounding per output.
 * tc:    the block FMA of docs/gemm.md vectorized across 16 columns: exact
 *        float products, truncation by a float multiply with 2^(f - Emax)
 *        and a truncating conversion to int32, an exact int32 sum.
 * Anything else (and any input these kernels cannot take exactly, such as
 * inf/NaN operands) runs the reference per element (the caller's fallback). */
#include "emulate/gemm_internal.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef unsigned __int128 u128;

#define MR 8
#define KC 256
#define MC 64 /* rows per parallel block: MC / MR panels */

/* AVX-512 kernels where the CPU has them; EXMY_NO_AVX512=1 forces the AVX2
 * ones, so a test run on an AVX-512 machine can check those too. */
static int use_avx512(void) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  const char *e = getenv("EXMY_NO_AVX512");
  return __builtin_cpu_supports("avx512f") && !(e && *e && *e != '0');
#else
  return 0;
#endif
}

static int nthreads_of(int threads) {
#ifdef _OPENMP
  return threads > 0 ? threads : omp_get_max_threads();
#else
  (void)threads;
  return 1;
#endif
}

static int operands_finite(const gemm_plan *p) {
  for (size_t t = 0; t < p->m * p->k; t++)
    if (!isfinite(p->ad[t])) return 0;
  for (size_t t = 0; t < p->n * p->k; t++)
    if (!isfinite(p->bd[t])) return 0;
  return 1;
}

/* ---- epilogue shared by the fp32 and tc kernels -------------------------- */

static void epilogue_rows(const gemm_plan *p, const float *P, size_t i0, size_t i1, unsigned *flags, float *amax) {
  const size_t n = p->n;
  const size_t cb = (size_t)exmy_code_bytes(p->d_fmt);
  float *z = malloc((n + 1) * sizeof *z);
  exmy__f32q q;
  exmy__f32q_init(&q, p->d_fmt, &p->d_rnd);
  unsigned fl = 0;
  float am = 0.0f;
  for (size_t i = i0; i < i1; i++) {
    const float *Pr = P + i * n;
    for (size_t j = 0; j < n; j++) {
      const float s = exmy__gemm_out_scale(p, i, j);
      float zz;
      if (p->use_c) {
        const float cf = (float)exmy_decode(p->c_fmt, exmy_code_get(p->c_fmt, p->c, i * n + j));
        zz = fmaf(s, Pr[j], p->beta * (p->scale_c * cf));
      } else {
        zz = s * Pr[j];
      }
      if (isnan(zz)) zz = NAN; /* as the reference: the positive NaN (z * scale_d stays NaN) */
      z[j] = zz;
      if (!isnan(zz)) am = fmaxf(am, fabsf(zz));
    }
    fl |= exmy__f32q_run(&q, z, n, p->scale_d, (uint64_t)i * n, (char *)p->d + i * n * cb);
  }
  free(z);
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}

static unsigned epilogue_all(const gemm_plan *p, const float *P, int nt, float *amax) {
  unsigned flags = 0;
  float am = 0.0f;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : flags) reduction(max : am)
  for (size_t i = 0; i < p->m; i++) epilogue_rows(p, P, i, i + 1, &flags, &am);
  *amax = fmaxf(*amax, am);
  return flags;
}

/* Promotion at the end of a piece: F = fmaf(w, P, F). */
static void promote_all(const gemm_plan *p, size_t l0, const float *P, float *F, int nt) {
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t i = 0; i < p->m; i++)
    for (size_t j = 0; j < p->n; j++)
      F[i * p->n + j] = fmaf(exmy__gemm_promote_w(p, i, j, l0), P[i * p->n + j], F[i * p->n + j]);
}

#if defined(__x86_64__)

/* ---- fp32 ---------------------------------------------------------------- */

/* Packed operands: A in panels of MR rows ([panel][l][MR]), B in panels of
 * NR columns ([panel][l][NR]), zero padded. */
static float *pack_f32(const gemm_plan *p, const double *src, const float *scales, size_t rows, size_t w,
                       size_t *np) {
  const size_t k = p->k, npan = (rows + w - 1) / w;
  float *X = calloc(npan * k * w + 1, sizeof *X);
  if (!X) return NULL;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < rows; i++)
    for (size_t l = 0; l < k; l++) {
      const double x = src[i * k + l];
      X[(i / w) * k * w + l * w + i % w] =
          (float)(p->style == GEMM_INNER ? x * (double)scales[i * p->nseg + l / p->seg] : x);
    }
  *np = npan;
  return X;
}

/* One MR x NR tile over kc steps; C (ldc) holds the running sums (zero =
 * start).  NR is two vectors; one definition for each element type and ISA. */
#define MICRO_KERNEL(NAME, TARGET, T, V, W, LOAD, STORE, SET1, ZERO, FMA)                                      \
  __attribute__((target(TARGET))) static void NAME(const void *Av, const void *Bv, size_t kc, void *Cv,       \
                                                   size_t ldc, int zero) {                                    \
    const T *A = Av, *B = Bv;                                                                                 \
    T *C = Cv;                                                                                                \
    V c0[MR], c1[MR];                                                                                         \
    for (int r = 0; r < MR; r++) {                                                                            \
      c0[r] = zero ? ZERO() : LOAD(C + r * ldc);                                                              \
      c1[r] = zero ? ZERO() : LOAD(C + r * ldc + W);                                                          \
    }                                                                                                         \
    for (size_t l = 0; l < kc; l++) {                                                                         \
      const V b0 = LOAD(B + l * 2 * W), b1 = LOAD(B + l * 2 * W + W);                                         \
      for (int r = 0; r < MR; r++) {                                                                          \
        const V a = SET1(A[l * MR + r]);                                                                      \
        c0[r] = FMA(a, b0, c0[r]);                                                                            \
        c1[r] = FMA(a, b1, c1[r]);                                                                            \
      }                                                                                                       \
    }                                                                                                         \
    for (int r = 0; r < MR; r++) {                                                                            \
      STORE(C + r * ldc, c0[r]);                                                                              \
      STORE(C + r * ldc + W, c1[r]);                                                                          \
    }                                                                                                         \
  }
MICRO_KERNEL(micro_f32_512, "avx512f", float, __m512, 16, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps,
             _mm512_setzero_ps, _mm512_fmadd_ps)
MICRO_KERNEL(micro_f32_256, "avx2,fma", float, __m256, 8, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
             _mm256_setzero_ps, _mm256_fmadd_ps)
/* double kernels of the exact path: integers below 2^53, so the FMAs are exact */
MICRO_KERNEL(micro_f64_512, "avx512f", double, __m512d, 8, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd,
             _mm512_setzero_pd, _mm512_fmadd_pd)
MICRO_KERNEL(micro_f64_256, "avx2,fma", double, __m256d, 4, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
             _mm256_setzero_pd, _mm256_fmadd_pd)



/* P (padded: rows multiple of MR, ldp multiple of NR) += A B over [k0, k1):
 * row blocks of MC in parallel, each MR-row panel of A reused across all
 * NR-column panels of B.  esz: 4 (float kernels) or 8 (double). */
typedef void (*micro_fn)(const void *A, const void *B, size_t kc, void *C, size_t ldc, int zero);
static void block_run(micro_fn micro, size_t esz, size_t nr, const void *A, size_t apan, const void *B, size_t bpan,
                      size_t k, size_t k0, size_t k1, void *P, size_t ldp, int zero, int nt) {
  const size_t per = MC / MR, nblk = (apan + per - 1) / per;
  const char *a = A, *b = B;
  char *pp = P;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t blk = 0; blk < nblk; blk++) {
    const size_t ip1 = (blk + 1) * per < apan ? (blk + 1) * per : apan;
    for (size_t jp = 0; jp < bpan; jp++)
      for (size_t ip = blk * per; ip < ip1; ip++)
        micro(a + (ip * k * MR + k0 * MR) * esz, b + (jp * k * nr + k0 * nr) * esz, k1 - k0,
              pp + (ip * MR * ldp + jp * nr) * esz, ldp, zero);
  }
}

static int fast_fp32(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  micro_fn micro;
  size_t nr;
  __builtin_cpu_init();
  if (use_avx512()) micro = micro_f32_512, nr = 32;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) micro = micro_f32_256, nr = 16;
  else return 0;
  size_t apan = 0, bpan = 0;
  float *A = pack_f32(p, p->ad, p->as, p->m, MR, &apan), *B = pack_f32(p, p->bd, p->bs, p->n, nr, &bpan);
  const size_t ldp = bpan * nr, rows = apan * MR;
  const int promoted = p->acc.chunk || p->style == GEMM_PROMOTE;
  float *P = calloc(rows * ldp + 1, sizeof *P);
  float *F = promoted ? calloc(p->m * p->n + 1, sizeof *F) : NULL;
  float *D = malloc(p->m * p->n * sizeof *D + 1);
  if (!A || !B || !P || (promoted && !F) || !D) {
    free(A), free(B), free(P), free(F), free(D);
    return 0;
  }
  const size_t k = p->k;
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = exmy__gemm_piece_end(p, l0);
    for (size_t k0 = l0; k0 < l1; k0 += KC) {
      const size_t k1 = k0 + KC < l1 ? k0 + KC : l1;
      block_run(micro, sizeof(float), nr, A, apan, B, bpan, k, k0, k1, P, ldp, k0 == l0, nt);
    }
    if (promoted) {
      for (size_t i = 0; i < p->m; i++) memcpy(D + i * p->n, P + i * ldp, p->n * sizeof *D);
      promote_all(p, l0, D, F, nt);
    }
  }
  if (promoted) {
    memcpy(D, F, p->m * p->n * sizeof *D);
  } else if (k == 0) {
    memset(D, 0, p->m * p->n * sizeof *D);
  } else {
    for (size_t i = 0; i < p->m; i++) memcpy(D + i * p->n, P + i * ldp, p->n * sizeof *D);
  }
  *flags |= epilogue_all(p, D, nt, amax);
  free(A), free(B), free(P), free(F), free(D);
  return 1;
}

/* ---- exact: integer-valued double GEMM ----------------------------------- */

/* Integer bits of a format's values scaled by 2^-lsb, lsb = emin - mbits. */
static int int_bits(const exmy_format *f) { return (f->emax + 1) - (f->emin - f->mbits); }



/* 64 leading bits (sticky folded in) of the 192-bit x * y, x < 2^128. */
static uint64_t top64_mul(u128 x, uint64_t y, int *shift) {
  const u128 lo = (u128)(uint64_t)x * y, hi = (u128)(uint64_t)(x >> 64) * y;
  uint64_t w[3];
  w[0] = (uint64_t)lo;
  const u128 mid = (lo >> 64) + (u128)(uint64_t)hi;
  w[1] = (uint64_t)mid;
  w[2] = (uint64_t)((mid >> 64) + (hi >> 64));
  int top = 2;
  while (top > 0 && !w[top]) top--;
  const int L = top * 64 + (w[top] ? 64 - __builtin_clzll(w[top]) : 0);
  if (L <= 64) {
    *shift = 0;
    return w[0];
  }
  const int sh = L - 64, li = sh / 64, bi = sh % 64;
  uint64_t sig = bi ? (w[li] >> bi) | (w[li + 1] << (64 - bi)) : w[li];
  int sticky = bi ? (w[li] & (((uint64_t)1 << bi) - 1)) != 0 : 0;
  for (int t = 0; t < li; t++) sticky |= w[t] != 0;
  *shift = sh;
  return sig | (uint64_t)sticky;
}

static void exact_epilogue_rows(const gemm_plan *p, const double *S, size_t lds, int lsb, size_t i0, size_t i1,
                                unsigned *flags, float *amax) {
  const exmy_rounding rne = exmy_rounding_default();
  unsigned fl = 0;
  float am = 0.0f;
  int q1, q4;
  const uint64_t m1 = exmy__float_parts(p->alpha, &q1), m4 = exmy__float_parts(p->scale_d, &q4);
  for (size_t i = i0; i < i1; i++) {
    int q2;
    const uint64_t m2 = exmy__float_parts(p->as[i], &q2);
    for (size_t j = 0; j < p->n; j++) {
      const uint64_t index = (uint64_t)i * p->n + j;
      const double sd = S ? S[i * lds + j] : 0.0;
      int q3;
      const uint64_t m3 = exmy__float_parts(p->bs[j], &q3);
      const int sneg = sd < 0 && m2 && m3; /* the reference's scales sit inside its terms */
      const u128 mag = (u128)(uint64_t)fabs(sd) * m1 * m2; /* < 2^53 * 2^48 */
      if (mag == 0 || m3 == 0) {
        /* exact zero: the sum (+0 when zero) times alpha, as the reference */
        const int zneg = (p->alpha < 0) != sneg;
        const uint64_t code = exmy_round_pack(p->d_fmt, &p->d_rnd, (p->scale_d < 0) != zneg, 0, 0, index, &fl);
        exmy_code_set(p->d_fmt, p->d, index, code);
        continue;
      }
      const int neg = sneg != (p->alpha < 0);
      int sh;
      uint64_t top = top64_mul(mag, m3, &sh); /* |V| before scale_d: top * 2^(lsb + q1 + q2 + q3 + sh) */
      const uint32_t ab = (uint32_t)exmy_round_pack(&p->f32, &rne, 0, top, lsb + q1 + q2 + q3 + sh, 0, NULL);
      float af;
      memcpy(&af, &ab, sizeof af);
      am = fmaxf(am, af);
      uint64_t code;
      if (m4 == 0) {
        code = exmy_round_pack(p->d_fmt, &p->d_rnd, 0, 0, 0, index, &fl);
      } else {
        top = top64_mul(mag, m3 * m4, &sh); /* one exact product, then 64 bits + sticky */
        code = exmy_round_pack(p->d_fmt, &p->d_rnd, neg != (p->scale_d < 0), top, lsb + q1 + q2 + q3 + q4 + sh, index,
                               &fl);
      }
      exmy_code_set(p->d_fmt, p->d, index, code);
    }
  }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}

static int fast_exact(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  if (p->style != GEMM_OUTER || p->use_c) return 0;
  const exmy_format *fa = &p->A->fmt, *fb = &p->B->fmt;
  int lk = 0;
  while (((size_t)1 << lk) < p->k + 1) lk++;
  if (int_bits(fa) + int_bits(fb) + lk > 53) return 0; /* sums would not stay exact in double */
  micro_fn micro;
  size_t nr;
  __builtin_cpu_init();
  if (use_avx512()) micro = micro_f64_512, nr = 16;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) micro = micro_f64_256, nr = 8;
  else return 0;
  const int la = fa->emin - fa->mbits, lb = fb->emin - fb->mbits;
  const size_t k = p->k, apan = (p->m + MR - 1) / MR, bpan = (p->n + nr - 1) / nr;
  double *A = calloc(apan * k * MR + 1, sizeof *A), *B = calloc(bpan * k * nr + 1, sizeof *B);
  const size_t ldp = bpan * nr;
  double *P = calloc(apan * MR * ldp + 1, sizeof *P);
  if (!A || !B || !P) {
    free(A), free(B), free(P);
    return 0;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t i = 0; i < p->m; i++)
    for (size_t l = 0; l < k; l++) A[(i / MR) * k * MR + l * MR + i % MR] = ldexp(p->ad[i * k + l], -la);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t j = 0; j < p->n; j++)
    for (size_t l = 0; l < k; l++) B[(j / nr) * k * nr + l * nr + j % nr] = ldexp(p->bd[j * k + l], -lb);
  for (size_t k0 = 0; k0 < k; k0 += KC)
    block_run(micro, sizeof(double), nr, A, apan, B, bpan, k, k0, k0 + KC < k ? k0 + KC : k, P, ldp, k0 == 0, nt);
  free(A), free(B);
  unsigned fl = 0;
  float am = 0.0f;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : fl) reduction(max : am)
  for (size_t i = 0; i < p->m; i++) exact_epilogue_rows(p, k ? P : NULL, ldp, la + lb, i, i + 1, &fl, &am);
  free(P);
  *flags |= fl;
  *amax = fmaxf(*amax, am);
  return 1;
}

/* ---- tc: the block FMA across 16 columns --------------------------------- */

typedef float v16sf __attribute__((vector_size(64)));
typedef int32_t v16si __attribute__((vector_size(64)));
typedef double v8df __attribute__((vector_size(64)));
typedef int64_t v8di __attribute__((vector_size(64)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef float v8sf __attribute__((vector_size(32)));
#define TC_MR 4
#define TC_NR 16

typedef struct tc_ctx {
  const gemm_plan *p;
  const float *av; const int32_t *ae;   /* op(A): m x k values and nominal exponents */
  const float *bv; const int32_t *be;   /* op(B) panels: [panel][l][16] */
  float *out;                           /* m x n: the model's P (promoted F) */
} tc_ctx;

/* Nominal exponent of an element (docs/gemm.md, tc step 2). */
static int32_t nominal_exp(double x, int emin) {
  uint64_t m;
  int e;
  exmy__gemm_nominal(x, emin, 0, &m, &e);
  return e;
}

/* lane-wise max (compare and select) */
#define VMAX(a, b) ({ const v16si a_ = (a), b_ = (b), m_ = a_ > b_; (a_ & m_) | (b_ & ~m_); })

/* S * 2^(emax - f), cut to `out` fraction bits (truncation), as float. */
static inline __attribute__((always_inline)) void tc_normalize(v16sf *res, const v16si *Sp, const v16si *ep, int f, int out) {
  v16sf r;
  const v16si S = *Sp, emax = *ep;
  for (int h = 0; h < 2; h++) {
    v8si s8, e8;
    memcpy(&s8, (const char *)&S + 32 * h, 32);
    memcpy(&e8, (const char *)&emax + 32 * h, 32);
    const v8df d = __builtin_convertvector(s8, v8df);
    /* 2^(emax - f) as a double: exponent field emax - f + 1023 */
    const v8di pe = (__builtin_convertvector(e8, v8di) - f + 1023) << 52;
    v8df pw;
    memcpy(&pw, &pe, 64);
    v8df v = d * pw; /* exact: |S| < 2^31 and 2^(emax-f) normal */
    v8di bits;
    memcpy(&bits, &v, 64);
    bits &= ~(v8di){0} << (52 - out); /* truncate toward zero (zero stays zero) */
    memcpy(&v, &bits, 64);
    const v8sf f8 = __builtin_convertvector(v, v8sf); /* exact: <= 24 bits, normal */
    memcpy((char *)&r + 32 * h, &f8, 32);
  }
  *res = r;
}

/* One tile of NRW rows x 16 columns over all of k; NRW is a constant at
 * each call so the per-row vectors stay in registers. */
static inline __attribute__((always_inline)) void tc_tile(const tc_ctx *x, size_t ib, size_t jp, const int NRW) {
  const gemm_plan *p = x->p;
  const size_t k = p->k, n = p->n, g = (size_t)p->acc.tc_group;
  const int F = p->acc.tc_frac, out = p->acc.tc_out_frac;
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
      v16si emax[TC_MR], S[TC_MR];
      v16sf pw[TC_MR];
      for (int r = 0; r < NRW; r++) {
        v16si cb;
        memcpy(&cb, &c[r], 64);
        emax[r] = VMAX(((cb >> 23) & 255) - 127, (v16si){0} - 126);
      }
      for (size_t l = g0; l < g1; l++) {
        v16si e;
        memcpy(&e, be + l * TC_NR, 64);
        for (int r = 0; r < NRW; r++) emax[r] = VMAX(emax[r], e + ae[(size_t)r * k + l]);
      }
      for (int r = 0; r < NRW; r++) {
        v16si pe = F - emax[r] + 127;
        pe = VMAX(pe, (v16si){0} + 1);
        pe = (pe & (pe < 254)) | (((v16si){0} + 254) & ~(pe < 254));
        pe <<= 23;
        memcpy(&pw[r], &pe, 64);
        S[r] = __builtin_convertvector(c[r] * pw[r], v16si);
      }
      for (size_t l = g0; l < g1; l++) {
        v16sf b;
        memcpy(&b, bv + l * TC_NR, 64);
        for (int r = 0; r < NRW; r++) S[r] += __builtin_convertvector((av[(size_t)r * k + l] * b) * pw[r], v16si);
      }
      for (int r = 0; r < NRW; r++) tc_normalize(&c[r], &S[r], &emax[r], F, out);
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
  for (size_t jp = 0; jp < npan; jp++) {
    size_t ib = i0;
    for (; ib + TC_MR <= i1; ib += TC_MR) tc_tile(x, ib, jp, TC_MR);
    for (; ib < i1; ib++) tc_tile(x, ib, jp, 1);
  }
}

static int fast_tc(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  const exmy_accum *a = &p->acc;
  if (a->tc_align_rne || a->tc_norm_rne || p->style == GEMM_INNER) return 0;
  const exmy_format *fa = &p->A->fmt, *fb = &p->B->fmt;
  const int F = a->tc_frac;
  int lg = 0, lk = 0;
  while (((size_t)1 << lg) < (size_t)a->tc_group + 1) lg++;
  while (((size_t)1 << lk) < p->k + 1) lk++;
  if ((fa->mbits + 1) + (fb->mbits + 1) > 24) return 0;                   /* float products exact */
  if ((fa->emin - fa->mbits) + (fb->emin - fb->mbits) < -149) return 0;
  if (F + 2 + lg > 30) return 0;                                          /* int32 sums */
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
    ae[t] = nominal_exp(p->ad[t], fa->emin);
  }
  for (size_t t = 0; t < npan * k * TC_NR; t++) be[t] = -126; /* padding columns: zeros */
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t j = 0; j < n; j++)
    for (size_t l = 0; l < k; l++) {
      const size_t o = (j / TC_NR) * k * TC_NR + l * TC_NR + j % TC_NR;
      bv[o] = (float)p->bd[j * k + l];
      be[o] = nominal_exp(p->bd[j * k + l], fb->emin);
    }
  tc_ctx x = {p, av, ae, bv, be, P};
  const size_t blk = 16, nblk = (m + blk - 1) / blk;
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
  for (size_t b = 0; b < nblk; b++) tc_rows(&x, b * blk, (b + 1) * blk < m ? (b + 1) * blk : m);
  free(av), free(bv), free(ae), free(be);
  *flags |= epilogue_all(p, P, nt, amax);
  free(P);
  return 1;
}
#endif /* __x86_64__ */

/* ---- acc=FORMAT, round to nearest even ------------------------------------ */

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
    const double q = ldexp(1.0, e - ff->mbits), magic = 1.5 * 0x1p52 * q;
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

static int fast_format(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  if (!format_fast_applies(p)) return 0;
  const exmy_format *f = &p->acc.acc_fmt;
  const fmt_fast ff = {f, &p->acc.acc_rnd, p->acc_lut, exmy_decode(f, f->max_mag), f->emin, f->mbits};
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
      } else { /* as exmy__gemm_ref_p: pieces promoted into fp32 */
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

int exmy__gemm_fast(const gemm_plan *p, int threads, unsigned *flags, float *amax) {
#if defined(__x86_64__)
  const int nt = nthreads_of(threads);
  if (p->m == 0 || p->n == 0) return 0;
  if (p->acc.kind == EXMY_ACCUM_FP32) return fast_fp32(p, nt, flags, amax);
  if (p->acc.kind == EXMY_ACCUM_EXACT && operands_finite(p)) return fast_exact(p, nt, flags, amax);
  if (p->acc.kind == EXMY_ACCUM_TC && operands_finite(p)) return fast_tc(p, nt, flags, amax);
  if (p->acc.kind == EXMY_ACCUM_FORMAT) return fast_format(p, nt, flags, amax);
  return 0;
#else
  (void)p, (void)threads, (void)flags, (void)amax;
  return 0;
#endif
}
