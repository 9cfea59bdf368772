/* gemm_kernels.h: the fast GEMM kernels, bit for bit the reference
 * (gemm_ref*.c), each for one accumulation model; only the dispatcher
 * (gemm_fast.c) calls them.  Each returns 1 when it handled the problem (D,
 * flags and amax written on nt threads), 0 when it does not apply (the
 * reference runs).  What they use below them has its own header: the block
 * engine (gemm_block.h), the 16-bit-lane kernels (gemm_fast_tc16.h,
 * gemm_fast_lanes.h), the workspace, the epilogue, the rounding of a sum. */
#ifndef EXMY_GEMM_KERNELS_H
#define EXMY_GEMM_KERNELS_H
#include "emulate/gemm_plan.h"
#include "emulate/gemm_tc.h"

#if defined(__x86_64__)
int exmy__gemm_fast_fp32(const gemm_plan *p, int nt, unsigned *flags, float *amax);  /* gemm_fast_fp32.c */
int exmy__gemm_fast_exact(const gemm_plan *p, int nt, unsigned *flags, float *amax); /* gemm_fast_exact.c */
int exmy__gemm_fast_tc(const gemm_plan *p, int nt, unsigned *flags, float *amax);    /* gemm_fast_tc.c */
extern const gemm_tc_caps exmy__gemm_fast_tc_caps; /* the datapath rows it implements (gemm_fast_tc.c) */
int exmy__gemm_fast_pairwise(const gemm_plan *p, int nt, unsigned *flags, float *amax); /* gemm_fast_fp32.c */
#endif
int exmy__gemm_fast_format(const gemm_plan *p, int nt, unsigned *flags, float *amax); /* gemm_fast_format.c */
#endif
