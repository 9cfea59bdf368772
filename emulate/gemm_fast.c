/* gemm_fast.c: the fast kernels' dispatcher: picks the kernel of the
 * accumulation model (gemm_kernels.h), or none (0: gemm.c runs the
 * reference per element).  Inputs a kernel cannot take exactly, such as
 * inf/NaN operands for exact and tc, go to the reference too. */
#include "emulate/gemm_fast.h"
#include "emulate/gemm_kernels.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int nthreads_of(int threads) {
#ifdef _OPENMP
  return threads > 0 ? threads : omp_get_max_threads();
#else
  (void)threads;
  return 1;
#endif
}

static int operands_finite(const gemm_plan *p) {
  if (!p->ad) return 0;
  for (size_t t = 0; t < p->m * p->k; t++)
    if (!isfinite(p->ad[t])) return 0;
  for (size_t t = 0; t < p->n * p->k; t++)
    if (!isfinite(p->bd[t])) return 0;
  return 1;
}

int exmy__gemm_fast(const gemm_plan *p, int threads, unsigned *flags, float *amax) {
#if defined(__x86_64__)
  const int nt = nthreads_of(threads);
  if (p->m == 0 || p->n == 0) return 0;
  if (p->acc.kind == EXMY_ACCUM_FP32) return exmy__gemm_fast_fp32(p, nt, flags, amax);
  if (p->acc.kind == EXMY_ACCUM_FP32_PAIRWISE) return exmy__gemm_fast_pairwise(p, nt, flags, amax);
  /* exact and tc pack from 8-bit codes before the operands are decoded (and check them themselves) */
  if (p->acc.kind == EXMY_ACCUM_EXACT && (!p->ad || operands_finite(p))) return exmy__gemm_fast_exact(p, nt, flags, amax);
  /* tc: only the datapath rows the kernel states it implements */
  if (p->acc.kind == EXMY_ACCUM_TC && (!p->ad || operands_finite(p)) && exmy__gemm_tc_takes(p, &exmy__gemm_fast_tc_caps))
    return exmy__gemm_fast_tc(p, nt, flags, amax);
  if (p->acc.kind == EXMY_ACCUM_FORMAT) return exmy__gemm_fast_format(p, nt, flags, amax);
  return 0;
#else
  (void)p, (void)threads, (void)flags, (void)amax;
  return 0;
#endif
}
