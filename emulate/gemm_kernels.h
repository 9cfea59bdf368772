/* gemm_kernels.h: the fast GEMM kernels, bit for bit the reference
 * (gemm_ref*.c), each for one accumulation model; only the dispatcher
 * (gemm_fast.c) calls them.  Each returns 1 when it handled the problem (D,
 * flags and amax written on nt threads), 0 when it does not apply (the
 * reference runs).  Below them, the packed block engine (gemm_block.c) that
 * the fp32 and exact kernels share. */
#ifndef EXMY_GEMM_KERNELS_H
#define EXMY_GEMM_KERNELS_H
#include "emulate/gemm_internal.h"

#if defined(__x86_64__)
int exmy__gemm_fast_fp32(const gemm_plan *p, int nt, unsigned *flags, float *amax);  /* gemm_fast_fp32.c */
int exmy__gemm_fast_exact(const gemm_plan *p, int nt, unsigned *flags, float *amax); /* gemm_fast_exact.c */
int exmy__gemm_fast_tc(const gemm_plan *p, int nt, unsigned *flags, float *amax);    /* gemm_fast_tc.c */
#endif
int exmy__gemm_fast_format(const gemm_plan *p, int nt, unsigned *flags, float *amax); /* gemm_fast_format.c */

/* ---- the packed block engine (gemm_block.c) ---- */

#if defined(__x86_64__)
/* Rows of a panel of A, the k step of a block, rows per parallel block. */
enum { GEMM_MR = 8, GEMM_KC = 256, GEMM_MC = 64 };

/* One GEMM_MR x nr tile over kc steps; C (ldc) holds the running sums
 * (zero = start). */
typedef void (*micro_fn)(const void *A, const void *B, size_t kc, void *C, size_t ldc, int zero);

/* The micro-kernel for float (dbl 0) or double (dbl 1) elements on this CPU
 * and its tile width nr; 0 when the CPU has neither AVX-512 nor AVX2+FMA. */
int exmy__gemm_micro(int dbl, micro_fn *micro, size_t *nr);

/* P (padded: rows multiple of GEMM_MR, ldp multiple of nr) += A B over
 * [k0, k1) on nt threads; A and B packed in panels ([panel][l][width]).
 * esz: 4 (float kernels) or 8 (double). */
void exmy__gemm_block_run(micro_fn micro, size_t esz, size_t nr, const void *A, size_t apan, const void *B,
                          size_t bpan, size_t k, size_t k0, size_t k1, void *P, size_t ldp, int zero, int nt);
#endif
#endif
