/* gemm_fast_tc16.h: acc=tc for 8-bit operands in 16-bit integer lanes
 * (gemm_fast_tc16.c); exmy__gemm_fast_tc tries it first. */
#ifndef EXMY_GEMM_FAST_TC16_H
#define EXMY_GEMM_FAST_TC16_H
#include "emulate/gemm_plan.h"

#if defined(__x86_64__)
/* 1 when it handled the problem, 0: the float kernel runs (as gemm_kernels.h). */
int exmy__gemm_fast_tc16(const gemm_plan *p, int nt, unsigned *flags, float *amax);
#endif
#endif
