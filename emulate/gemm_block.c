/* gemm_block.c: the blocking frame (gemm_block.h).  exmy__gemm_frame_run:
 * the one driver (packing, tasks in parallel, promotion or the kernel's
 * blocks of k, epilogue) for any gemm_frame_kernel (acc=FORMAT, acc=tc,
 * acc=fp32 and fp32:pairwise, acc=exact).  And the running-sums micro-kernels of the fp32 and exact
 * kernels, in the GotoBLAS/BLIS shape: mr x nr register tiles of fused
 * multiply-adds (one per lane, so each output element still sees c =
 * fma(a, b, c) in k order), AVX-512 and AVX2, float and double. */
#include "emulate/gemm_block.h"
#include "emulate/gemm_ws.h"
#include "emulate/gemm_epilogue.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Panel pan ([l][w], zero padded) of X (rows x k, the plan's doubles). */
static void pack_decoded(const double *X, size_t rows, size_t k, size_t pan, size_t w, int f32, void *Xp) {
  float *F = Xp;
  double *D = Xp;
  for (size_t l = 0; l < k; l++)
    for (size_t r = 0; r < w; r++) {
      const size_t x = pan * w + r;
      const double v = x < rows ? X[x * k + l] : 0.0;
      if (f32) F[l * w + r] = (float)v;
      else D[l * w + r] = v;
    }
}

int exmy__gemm_pack_a_f32(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap) {
  (void)ctx;
  pack_decoded(p->ad, p->m, p->k, pan, w, 1, Ap);
  return 1;
}
int exmy__gemm_pack_b_f32(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp) {
  (void)ctx;
  pack_decoded(p->bd, p->n, p->k, pan, w, 1, Bp);
  return 1;
}
int exmy__gemm_pack_a_f64(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap) {
  (void)ctx;
  pack_decoded(p->ad, p->m, p->k, pan, w, 0, Ap);
  return 1;
}
int exmy__gemm_pack_b_f64(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp) {
  (void)ctx;
  pack_decoded(p->bd, p->n, p->k, pan, w, 0, Bp);
  return 1;
}

/* Packs every panel of A and of B in one team; 0 when a pack declined. */
static int frame_pack(const gemm_frame_kernel *kd, const gemm_plan *p, size_t apan, size_t bpan, char *A, char *B,
                      int nt) {
  const size_t abytes = kd->pa, bbytes = kd->pb;
  int ok = 1;
  if (nt <= 1 || apan + bpan <= 2) { /* no team (an inactive region still starts one) */
    for (size_t pn = 0; pn < apan; pn++) ok &= kd->pack_a(kd->ctx, p, pn, kd->mr, A + pn * abytes) != 0;
    for (size_t pn = 0; pn < bpan; pn++) ok &= kd->pack_b(kd->ctx, p, pn, kd->nr, B + pn * bbytes) != 0;
    return ok;
  }
#pragma omp parallel num_threads(nt) reduction(& : ok)
  {
#pragma omp for schedule(static) nowait
    for (size_t pn = 0; pn < apan; pn++) ok &= kd->pack_a(kd->ctx, p, pn, kd->mr, A + pn * abytes) != 0;
#pragma omp for schedule(static)
    for (size_t pn = 0; pn < bpan; pn++) ok &= kd->pack_b(kd->ctx, p, pn, kd->nr, B + pn * bbytes) != 0;
  }
  return ok;
}

/* Task (ib, jb) of the pieces driver: rows [ib mt, ib mt + mt) x the
 * columns of B panel jb; each piece of every micro-tile, promoted into P as
 * the reference.  With block_end, the micro-kernel's blocks instead, each
 * over all the tiles, tile t's state at c + t ts; then their sums into P. */
static void frame_task(const gemm_frame_kernel *kd, const gemm_plan *p, const char *A, const char *B, float *P,
                       size_t ib, size_t jb) {
  const size_t m = p->m, n = p->n, k = p->k, mr = kd->mr, nr = kd->nr;
  const size_t j0 = jb * nr, cols = n - j0 < nr ? n - j0 : nr;
  const size_t i00 = ib * kd->mt, ie = (ib + 1) * kd->mt < m ? (ib + 1) * kd->mt : m;
  const int promote = p->style == GEMM_PROMOTE, pieces = p->acc.chunk || promote;
  const char *Bp = B + jb * kd->pb;
  _Alignas(64) float c[GEMM_FRAME_TILE];
  if (kd->block_end) {
    const size_t esz = kd->esz ? kd->esz : sizeof(float);
    const size_t ts = (kd->sw > 1 ? kd->sw : 1) * mr * nr * (esz / sizeof(float)); /* a tile's state, in floats */
    for (size_t lb = 0, le; lb < k; lb = le) {
      le = kd->block_end(kd->ctx, p, lb);
      for (size_t i0 = i00, t = 0; i0 < ie; i0 += mr, t++)
        kd->micro(kd->ctx, i0, j0, lb, le - lb, A + i0 / mr * kd->pa, Bp, ie - i0 < mr ? ie - i0 : mr, cols,
                  c + t * ts);
    }
    for (size_t i0 = i00, t = 0; i0 < ie; i0 += mr, t++)
      for (size_t r = 0; r < mr && i0 + r < ie; r++)
        memcpy((char *)P + ((i0 + r) * n + j0) * esz, (const char *)(c + t * ts) + r * nr * esz, cols * esz);
    return;
  }
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = pieces ? exmy__gemm_piece_end(p, l0) : k;
    for (size_t i0 = i00; i0 < ie; i0 += mr) {
      const size_t rows = ie - i0 < mr ? ie - i0 : mr;
      kd->micro(kd->ctx, i0, j0, l0, l1 - l0, A + i0 / mr * kd->pa, Bp, rows, cols, c);
      for (size_t r = 0; r < rows; r++) {
        float *Pr = P + (i0 + r) * n + j0;
        const float *cr = c + r * nr;
        if (!pieces) memcpy(Pr, cr, cols * sizeof *Pr);
        else if (!promote) /* fmaf(1, s, F) is s + F, one rounding (F = +0 first: -0 + +0 is +0, as fmaf) */
          for (size_t q = 0; q < cols; q++) Pr[q] = (l0 ? Pr[q] : 0.0f) + cr[q];
        else
          for (size_t q = 0; q < cols; q++)
            Pr[q] = fmaf(exmy__gemm_promote_w(p, i0 + r, j0 + q, l0), cr[q], l0 ? Pr[q] : 0.0f);
      }
    }
  }
}

int exmy__gemm_frame_run(const gemm_frame_kernel *kd, const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  const size_t m = p->m, n = p->n, k = p->k, mr = kd->mr, nr = kd->nr;
  const size_t esz = kd->block_end && kd->esz ? kd->esz : sizeof(float);
  const size_t tile = kd->block_end ? kd->mt * nr * (kd->sw > 1 ? kd->sw : 1) * (esz / sizeof(float)) : mr * nr;
  if (tile > GEMM_FRAME_TILE || kd->mt % mr || (esz != sizeof(float) && esz != sizeof(double))) return 0;
  const size_t apan = (m + mr - 1) / mr, bpan = (n + nr - 1) / nr, nrb = (m + kd->mt - 1) / kd->mt;
  /* every panel packed once, into the workspace slots A and B (nothing when k = 0) */
  void *A = exmy__gemm_ws_get(p->ws, GEMM_WS_A, apan * kd->pa + 64);
  void *B = exmy__gemm_ws_get(p->ws, GEMM_WS_B, bpan * kd->pb + 64);
  if (!A || !B || (k && !frame_pack(kd, p, apan, bpan, A, B, nt))) return 0;
  void *P = exmy__gemm_ws_get(p->ws, GEMM_WS_P, (m * n + 1) * esz); /* the model's P, m x n */
  if (!P) return 0;
  if (k == 0) {
    memset(P, 0, m * n * esz); /* every sum from +0 */
  } else {
    /* a team only with two threads or more: an inactive region (an if clause) still costs a
     * team start, per call (attention's hundreds of small products) */
    if (nt > 1) {
#pragma omp parallel for num_threads(nt) schedule(dynamic, 1)
      for (size_t t = 0; t < nrb * bpan; t++) frame_task(kd, p, A, B, P, t / bpan, t % bpan);
    } else {
      for (size_t t = 0; t < nrb * bpan; t++) frame_task(kd, p, A, B, P, t / bpan, t % bpan);
    }
  }
  *flags |= kd->epilogue ? kd->epilogue(kd->ctx, p, P, n, nt, amax) : exmy__gemm_epilogue_all_ld(p, P, n, nt, amax);
  return 1;
}
#if defined(__x86_64__)
#include <immintrin.h>

/* AVX-512 kernels where the CPU has them; EXMY_NO_AVX512=1 forces the AVX2
 * ones, so a test run on an AVX-512 machine can check those too. */
static int use_avx512(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && !exmy__avx512_disabled();
}

/* The micro_fn of gemm_block.h: an MR x 2W tile; one definition for each
 * element type and ISA.  pl = 0: the running sums start from C (or zero)
 * and stay in registers over all kc steps.  pl > 0 (chunked promotion with
 * weight 1): every pl steps start a piece from +0, and the piece is added
 * into C (C starts at +0 when zero): fmaf(1, P, F) is the plain sum P + F. */
#define MICRO_KERNEL(NAME, TARGET, T, V, W, MR, LOAD, STORE, SET1, ZERO, FMA, ADD)                             \
  __attribute__((target(TARGET))) static void NAME(const void *Av, const void *Bv, size_t kc, void *Cv,       \
                                                   size_t ldc, int zero, size_t pl) {                         \
    const T *A = Av, *B = Bv;                                                                                 \
    T *C = Cv;                                                                                                \
    V c0[MR], c1[MR];                                                                                         \
    if (!pl) {                                                                                                \
      _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                                                                          \
        c0[r] = zero ? ZERO() : LOAD(C + r * ldc);                                                            \
        c1[r] = zero ? ZERO() : LOAD(C + r * ldc + W);                                                        \
      }                                                                                                       \
      for (size_t l = 0; l < kc; l++) {                                                                       \
        const V b0 = LOAD(B + l * 2 * W), b1 = LOAD(B + l * 2 * W + W);                                       \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                                                                        \
          const V a = SET1(A[l * MR + r]);                                                                    \
          c0[r] = FMA(a, b0, c0[r]);                                                                          \
          c1[r] = FMA(a, b1, c1[r]);                                                                          \
        }                                                                                                     \
      }                                                                                                       \
      _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                                                                          \
        STORE(C + r * ldc, c0[r]);                                                                            \
        STORE(C + r * ldc + W, c1[r]);                                                                        \
      }                                                                                                       \
      return;                                                                                                 \
    }                                                                                                         \
    for (size_t l0 = 0; l0 < kc; l0 += pl) {                                                                  \
      const size_t l1 = l0 + pl < kc ? l0 + pl : kc;                                                          \
      _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) c0[r] = c1[r] = ZERO();                                                    \
      for (size_t l = l0; l < l1; l++) {                                                                      \
        const V b0 = LOAD(B + l * 2 * W), b1 = LOAD(B + l * 2 * W + W);                                       \
        _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                                                                        \
          const V a = SET1(A[l * MR + r]);                                                                    \
          c0[r] = FMA(a, b0, c0[r]);                                                                          \
          c1[r] = FMA(a, b1, c1[r]);                                                                          \
        }                                                                                                     \
      }                                                                                                       \
      const int z = zero && l0 == 0;                                                                          \
      _Pragma("GCC unroll 16") for (int r = 0; r < MR; r++) {                                                                          \
        STORE(C + r * ldc, ADD(z ? ZERO() : LOAD(C + r * ldc), c0[r]));                                       \
        STORE(C + r * ldc + W, ADD(z ? ZERO() : LOAD(C + r * ldc + W), c1[r]));                               \
      }                                                                                                       \
    }                                                                                                         \
  }
/* 12 x 32 (24 of the 32 zmm registers) with AVX-512, 6 x 16 (12 of 16 ymm) with AVX2 */
MICRO_KERNEL(micro_f32_512, "avx512f", float, __m512, 16, 12, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_set1_ps,
             _mm512_setzero_ps, _mm512_fmadd_ps, _mm512_add_ps)
MICRO_KERNEL(micro_f32_256, "avx2,fma", float, __m256, 8, 6, _mm256_loadu_ps, _mm256_storeu_ps, _mm256_set1_ps,
             _mm256_setzero_ps, _mm256_fmadd_ps, _mm256_add_ps)
/* double kernels of the exact path: integers below 2^53, so the FMAs are exact */
MICRO_KERNEL(micro_f64_512, "avx512f", double, __m512d, 8, 12, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_set1_pd,
             _mm512_setzero_pd, _mm512_fmadd_pd, _mm512_add_pd)
MICRO_KERNEL(micro_f64_256, "avx2,fma", double, __m256d, 4, 6, _mm256_loadu_pd, _mm256_storeu_pd, _mm256_set1_pd,
             _mm256_setzero_pd, _mm256_fmadd_pd, _mm256_add_pd)

int exmy__gemm_micro(int dbl, gemm_micro *mk) {
  __builtin_cpu_init();
  if (use_avx512()) {
    mk->fn = dbl ? micro_f64_512 : micro_f32_512;
    mk->mr = 12;
    mk->nr = dbl ? 16 : 32;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    mk->fn = dbl ? micro_f64_256 : micro_f32_256;
    mk->mr = 6;
    mk->nr = dbl ? 8 : 16;
  } else {
    return 0;
  }
  return 1;
}

#endif /* __x86_64__ */
