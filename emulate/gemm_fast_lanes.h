/* gemm_fast_lanes.h: acc=f16 and acc=bf16 on float lanes
 * (gemm_fast_lanes.c); exmy__gemm_fast_format tries it first. */
#ifndef EXMY_GEMM_FAST_LANES_H
#define EXMY_GEMM_FAST_LANES_H
#include "emulate/gemm_plan.h"

#if defined(__x86_64__)
/* 1 when it handled the problem, 0: the general kernel runs (as gemm_kernels.h). */
int exmy__gemm_fast_lanes(const gemm_plan *p, int nt, unsigned *flags, float *amax);
#endif
#endif
