/* gemm_block.h: the packed block engine (gemm_block.c) under the fp32 and
 * exact kernels; knows the packed panels, not the plan. */
#ifndef EXMY_GEMM_BLOCK_H
#define EXMY_GEMM_BLOCK_H
#include <stddef.h>

#if defined(__x86_64__)
/* The k step of a slab, the rows and columns of a parallel tile of D. */
enum { GEMM_KC = 256, GEMM_MC = 240, GEMM_NC = 512 };

/* One mr x nr tile over kc steps; C (ldc) holds the running sums (zero:
 * start from +0); pl > 0: chunked, pieces of pl steps each summed from +0
 * and added into C. */
typedef void (*micro_fn)(const void *A, const void *B, size_t kc, void *C, size_t ldc, int zero, size_t pl);

typedef struct gemm_micro {
  micro_fn fn;
  size_t mr, nr; /* tile rows (a panel of A) and columns (a panel of B) */
} gemm_micro;

/* The micro-kernel for float (dbl 0) or double (dbl 1) elements on this CPU;
 * 0 when the CPU has neither AVX-512 nor AVX2+FMA. */
int exmy__gemm_micro(int dbl, gemm_micro *mk);

/* P (padded: rows multiple of mr, ldp multiple of nr) += A B over [k0, k1)
 * on nt threads; A and B packed in panels ([panel][l][width], k steps
 * each).  esz: 4 (float kernels) or 8 (double).  pl as micro_fn. */
void exmy__gemm_block_run(const gemm_micro *mk, size_t esz, const void *A, size_t apan, const void *B, size_t bpan,
                          size_t k, size_t k0, size_t k1, void *P, size_t ldp, int zero, size_t pl, int nt);
#endif
#endif
