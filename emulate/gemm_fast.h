/* gemm_fast.h: the fast kernels' dispatcher (gemm_fast.c), for gemm.c. */
#ifndef EXMY_GEMM_FAST_H
#define EXMY_GEMM_FAST_H
#include "emulate/gemm_plan.h"

/* Run the fast kernel for this plan: returns 1 when one handled the problem
 * (D, flags and amax written), 0 when the reference must run. */
int exmy__gemm_fast(const gemm_plan *p, int threads, unsigned *flags, float *amax);
#endif
