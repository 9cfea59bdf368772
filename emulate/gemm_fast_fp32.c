/* gemm_fast_fp32.c: the fast kernel of acc=fp32 (and its chunked and
 * promoted forms): operands rounded to float once into packed panels, the
 * block engine (gemm_block.c) over blocks of GEMM_KC along k, cut at every
 * piece boundary, so each output element sees c = fmaf(a, b, c) in k order
 * as the reference; pieces promoted into fp32, then the row epilogue. */
#include "emulate/gemm_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)

/* Promotion at the end of a piece: F = fmaf(w, P, F). */
static void promote_all(const gemm_plan *p, size_t l0, const float *P, float *F, int nt) {
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t i = 0; i < p->m; i++)
    for (size_t j = 0; j < p->n; j++)
      F[i * p->n + j] = fmaf(exmy__gemm_promote_w(p, i, j, l0), P[i * p->n + j], F[i * p->n + j]);
}

/* Packed operands: A in panels of GEMM_MR rows ([panel][l][GEMM_MR]), B in
 * panels of nr columns ([panel][l][nr]), zero padded; on the caller's nt
 * threads, so a small GEMM (one thread, parallel.h) starts no team here. */
static float *pack_f32(const gemm_plan *p, const double *src, const float *scales, size_t rows, size_t w,
                       size_t *np, int nt) {
  const size_t k = p->k, npan = (rows + w - 1) / w;
  float *X = calloc(npan * k * w + 1, sizeof *X);
  if (!X) return NULL;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (size_t i = 0; i < rows; i++)
    for (size_t l = 0; l < k; l++) {
      const double x = src[i * k + l];
      X[(i / w) * k * w + l * w + i % w] =
          (float)(p->style == GEMM_INNER ? x * (double)scales[i * p->nseg + l / p->seg] : x);
    }
  *np = npan;
  return X;
}

int exmy__gemm_fast_fp32(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  micro_fn micro;
  size_t nr;
  if (!exmy__gemm_micro(0, &micro, &nr)) return 0;
  size_t apan = 0, bpan = 0;
  float *A = pack_f32(p, p->ad, p->as, p->m, GEMM_MR, &apan, nt);
  float *B = pack_f32(p, p->bd, p->bs, p->n, nr, &bpan, nt);
  const size_t ldp = bpan * nr, rows = apan * GEMM_MR;
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
    for (size_t k0 = l0; k0 < l1; k0 += GEMM_KC) {
      const size_t k1 = k0 + GEMM_KC < l1 ? k0 + GEMM_KC : l1;
      exmy__gemm_block_run(micro, sizeof(float), nr, A, apan, B, bpan, k, k0, k1, P, ldp, k0 == l0, nt);
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
  *flags |= exmy__gemm_epilogue_all(p, D, nt, amax);
  free(A), free(B), free(P), free(F), free(D);
  return 1;
}
#endif /* __x86_64__ */
