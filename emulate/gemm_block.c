/* gemm_block.c: the packed block engine under the fp32 and exact kernels, in
 * the GotoBLAS/BLIS shape: GEMM_MR x nr register tiles of fused multiply-adds
 * (one per lane, so each output element still sees c = fma(a, b, c) in k
 * order), row blocks of GEMM_MC in parallel, blocks of k chosen by the
 * caller.  AVX-512 and AVX2 micro-kernels for float and double. */
#include "emulate/gemm_kernels.h"

#include <stdlib.h>
#if defined(__x86_64__)
#include <immintrin.h>

/* AVX-512 kernels where the CPU has them; EXMY_NO_AVX512=1 forces the AVX2
 * ones, so a test run on an AVX-512 machine can check those too. */
static int use_avx512(void) {
  __builtin_cpu_init();
  const char *e = getenv("EXMY_NO_AVX512");
  return __builtin_cpu_supports("avx512f") && !(e && *e && *e != '0');
}

/* The micro_fn of gemm_kernels.h; NR is two vectors; one definition for
 * each element type and ISA. */
#define MICRO_KERNEL(NAME, TARGET, T, V, W, LOAD, STORE, SET1, ZERO, FMA)                                      \
  __attribute__((target(TARGET))) static void NAME(const void *Av, const void *Bv, size_t kc, void *Cv,       \
                                                   size_t ldc, int zero) {                                    \
    const T *A = Av, *B = Bv;                                                                                 \
    T *C = Cv;                                                                                                \
    V c0[GEMM_MR], c1[GEMM_MR];                                                                               \
    for (int r = 0; r < GEMM_MR; r++) {                                                                       \
      c0[r] = zero ? ZERO() : LOAD(C + r * ldc);                                                              \
      c1[r] = zero ? ZERO() : LOAD(C + r * ldc + W);                                                          \
    }                                                                                                         \
    for (size_t l = 0; l < kc; l++) {                                                                         \
      const V b0 = LOAD(B + l * 2 * W), b1 = LOAD(B + l * 2 * W + W);                                         \
      for (int r = 0; r < GEMM_MR; r++) {                                                                     \
        const V a = SET1(A[l * GEMM_MR + r]);                                                                 \
        c0[r] = FMA(a, b0, c0[r]);                                                                            \
        c1[r] = FMA(a, b1, c1[r]);                                                                            \
      }                                                                                                       \
    }                                                                                                         \
    for (int r = 0; r < GEMM_MR; r++) {                                                                       \
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

int exmy__gemm_micro(int dbl, micro_fn *micro, size_t *nr) {
  __builtin_cpu_init();
  if (use_avx512()) *micro = dbl ? micro_f64_512 : micro_f32_512, *nr = dbl ? 16 : 32;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    *micro = dbl ? micro_f64_256 : micro_f32_256, *nr = dbl ? 8 : 16;
  else return 0;
  return 1;
}

/* Each GEMM_MR-row panel of A is reused across all nr-column panels of B. */
void exmy__gemm_block_run(micro_fn micro, size_t esz, size_t nr, const void *A, size_t apan, const void *B,
                          size_t bpan, size_t k, size_t k0, size_t k1, void *P, size_t ldp, int zero, int nt) {
  const size_t per = GEMM_MC / GEMM_MR, nblk = (apan + per - 1) / per;
  const char *a = A, *b = B;
  char *pp = P;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t blk = 0; blk < nblk; blk++) {
    const size_t ip1 = (blk + 1) * per < apan ? (blk + 1) * per : apan;
    for (size_t jp = 0; jp < bpan; jp++)
      for (size_t ip = blk * per; ip < ip1; ip++)
        micro(a + (ip * k * GEMM_MR + k0 * GEMM_MR) * esz, b + (jp * k * nr + k0 * nr) * esz, k1 - k0,
              pp + (ip * GEMM_MR * ldp + jp * nr) * esz, ldp, zero);
  }
}
#endif /* __x86_64__ */
