/* gemm_plan.h: the prepared GEMM problem (gemm_plan.c builds it; only the
 * dispatcher, gemm.c, does) and the inline pieces of the semantics that read
 * it, which the reference and every kernel share (docs/gemm.md).  The plan
 * holds the workspace (gemm_ws.h) by pointer only. */
#ifndef EXMY_GEMM_PLAN_H
#define EXMY_GEMM_PLAN_H
#include "exmy.h"

#include <stddef.h>

struct gemm_ws;

enum { GEMM_OUTER = 0, GEMM_PROMOTE, GEMM_INNER };

typedef struct gemm_plan {
  size_t m, n, k;
  int style;             /* GEMM_OUTER, GEMM_PROMOTE, GEMM_INNER */
  size_t seg, nseg;      /* scale segment along k and their count (OUTER: k, 1) */
  exmy_accum acc;
  const exmy_qtensor *A, *B;
  int ta, tb;
  /* operands decoded exactly: op(A) m x k and op(B)^T n x k, row-major */
  double *ad, *bd;
  float *as, *bs;        /* scale_inv per (i, seg): m x nseg; per (j, seg): n x nseg */
  float tA, tB;          /* NVFP4 tensor scales (1 otherwise) */
  int a_emin, a_mbits, b_emin, b_mbits;  /* nominal decomposition of elements (tc) */
  int s_emin, s_mbits;   /* ... and of INNER scales (E8M0: -127, 0; E4M3: -6, 3) */
  float alpha, beta, scale_c, scale_d;
  int use_c;
  const exmy_format *c_fmt, *d_fmt;
  const void *c;
  void *d;
  exmy_rounding d_rnd;
  float *amax_d;
  exmy_format f32;       /* for amax of the exact model */
  double *acc_lut;       /* acc=FORMAT of <= 16 bits: value of every code */
  struct gemm_ws *ws;    /* buffers of the kernels and the scales (never NULL once planned) */
} gemm_plan;

/* ---- pieces of the semantics every path shares (docs/gemm.md) ---- */

/* End of the piece of k that starts at l0: cut at chunk multiples and at
 * PROMOTE segment boundaries. */
static inline size_t exmy__gemm_piece_end(const gemm_plan *p, size_t l0) {
  size_t l1 = p->k;
  const size_t ch = p->acc.chunk;
  if (ch && (l0 / ch + 1) * ch < l1) l1 = (l0 / ch + 1) * ch;
  if (p->style == GEMM_PROMOTE && (l0 / p->seg + 1) * p->seg < l1) l1 = (l0 / p->seg + 1) * p->seg;
  return l1;
}

/* Weight of piece [l0, ...) of output (i, j) in the fp32 promotion:
 * fp32(sa * sb) under PROMOTE, else 1. */
static inline float exmy__gemm_promote_w(const gemm_plan *p, size_t i, size_t j, size_t l0) {
  if (p->style != GEMM_PROMOTE) return 1.0f;
  const size_t s = l0 / p->seg;
  return p->as[i * p->nseg + s] * p->bs[j * p->nseg + s];
}

/* The weights of row i's columns [j0, j0 + 16) for the piece at l0: exmy__gemm_promote_w,
 * 1 past n (the 16-column vector kernels' promotion). */
static inline void exmy__gemm_promote_w16(const gemm_plan *p, size_t i, size_t j0, size_t l0, float w[16]) {
  for (size_t t = 0; t < 16; t++) w[t] = j0 + t < p->n ? exmy__gemm_promote_w(p, i, j0 + t, l0) : 1.0f;
}

/* The product a_il b_jl in double (exact for M <= 23 operands; INNER scales inside). */
static inline double exmy__gemm_prod(const gemm_plan *p, size_t i, size_t j, size_t l) {
  const double ab = p->ad[i * p->k + l] * p->bd[j * p->k + l];
  if (p->style != GEMM_INNER) return ab;
  const size_t s = l / p->seg;
  return ab * ((double)p->as[i * p->nseg + s] * (double)p->bs[j * p->nseg + s]);
}

/* The epilogue's multiplier s of output (i, j). */
static inline float exmy__gemm_out_scale(const gemm_plan *p, size_t i, size_t j) {
  if (p->style == GEMM_OUTER) return (p->alpha * p->as[i]) * p->bs[j];
  if (p->style == GEMM_INNER) return (p->alpha * p->tA) * p->tB;
  return p->alpha;
}

/* ---- gemm_plan.c: for the dispatcher ---- */

/* Build the plan (validates; decode 0: nothing more; 1: the scales and the
 * operands in double (ad, bd); 2: the scales only, the operands stay codes
 * (the kernels that pack from codes; exmy__gemm_plan_decode adds ad, bd)).
 * ws holds the scales (decode >= 1). */
int exmy__gemm_plan(const exmy_gemm_args *args, gemm_plan *p, int decode, struct gemm_ws *ws, char *err,
                    size_t errlen);
int exmy__gemm_plan_decode(gemm_plan *p, char *err, size_t errlen);
void exmy__gemm_plan_free(gemm_plan *p);
#endif
