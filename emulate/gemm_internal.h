/* gemm_internal.h: the lowest layer of the emulated GEMM, shared by the
 * reference (gemm_ref*.c) and the fast kernels (gemm_fast*.c): the prepared
 * problem (gemm_plan.c) with the inline pieces of the semantics that read
 * it, the rounding of a sum (gemm_round.c) and the epilogue
 * (gemm_epilogue.c).  Calls go one way, never back up:
 *   gemm.c -> gemm_plan.c (build, free), gemm_ws.c (buffers kept across calls)
 *          -> gemm_fast.c -> gemm_fast_{fp32,exact,tc,format}.c -> gemm_block.c
 *          -> gemm_ref.c -> gemm_ref_exact.c, gemm_tc.c -> mma_fused.c (the
 *             instruction layer's fused sums: tc runs a datapath row)
 *   kernels and reference -> gemm_epilogue.c, gemm_round.c
 * Semantics: docs/gemm.md. */
#ifndef EXMY_GEMM_INTERNAL_H
#define EXMY_GEMM_INTERNAL_H
#include "exmy.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef unsigned __int128 u128;
typedef __int128 i128;

enum { GEMM_OUTER = 0, GEMM_PROMOTE, GEMM_INNER };

/* The workspace behind exmy_gemm_ws (gemm_ws.c): buffers kept across calls
 * and grown when a call needs more, and the decode tables of 16-bit operand
 * formats, kept while the format stays the same. */
enum { GEMM_WS_A = 0, GEMM_WS_B, GEMM_WS_P, GEMM_WS_F, GEMM_WS_AS, GEMM_WS_BS, GEMM_WS_NBUF };
typedef struct gemm_ws {
  void *buf[GEMM_WS_NBUF];
  size_t cap[GEMM_WS_NBUF];
  exmy_format lut_fmt[2];
  float *lut16[2];       /* value (float) of every code of lut_fmt[w] (A: 0, B: 1) */
  exmy_format lut8_fmt[2];
  int lut8_ok[2];
  float lut8[2][256];    /* value (float) of every byte as a code of lut8_fmt[w] (NaN above its bits) */
} gemm_ws;

/* Buffer slot of ws with room for bytes (NULL: out of memory). */
void *exmy__gemm_ws_get(gemm_ws *ws, int slot, size_t bytes);
/* The float table of fmt's codes for operand w (NULL: out of memory). */
const float *exmy__gemm_ws_lut16(gemm_ws *ws, int w, const exmy_format *fmt);
/* The float table of every byte as a code of fmt (<= 8 bits) for operand w:
 * a code with bits above fmt's decodes as NaN, as the reference reads it. */
const float *exmy__gemm_ws_lut8(gemm_ws *ws, int w, const exmy_format *fmt);
void exmy__gemm_ws_release(gemm_ws *ws);

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
  gemm_ws *ws;           /* buffers of the kernels and the scales (never NULL once planned) */
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

/* Nominal decomposition: |x| = m * 2^(e - mbits), e = max(floor(log2|x|), emin);
 * zero: m = 0, e = -126 (MMA-Sim v1).  The fast tc kernels' packing; the
 * reference decomposes in mma_fused.c. */
static inline void exmy__gemm_nominal(double x, int emin, int mbits, uint64_t *m, int *e) {
  if (x == 0) {
    *m = 0;
    *e = -126;
    return;
  }
  int ex;
  frexp(fabs(x), &ex);
  ex -= 1;
  if (ex < emin) ex = emin;
  *e = ex;
  *m = (uint64_t)ldexp(fabs(x), mbits - ex);
}

/* |x| of a finite float as m * 2^q, m < 2^24 (0: m = 0, q = 0). */
static inline uint64_t exmy__float_parts(float x, int *q) {
  int e;
  const double f = frexp(fabs((double)x), &e);
  *q = x == 0 ? 0 : e - 24;
  return (uint64_t)ldexp(f, 24);
}

/* |x| = mant * 2^ex with a 53-bit integer mant (x finite, nonzero). */
static inline uint64_t exmy__split_double(double x, int *ex) {
  int e;
  const double f = frexp(fabs(x), &e);
  *ex = e - 53;
  return (uint64_t)ldexp(f, 53);
}

/* Bit length of x (0 for 0). */
static inline int exmy__bitlen128(u128 x) {
  const uint64_t hi = (uint64_t)(x >> 64);
  if (hi) return 128 - __builtin_clzll(hi);
  const uint64_t lo = (uint64_t)x;
  return lo ? 64 - __builtin_clzll(lo) : 0;
}

static inline float exmy__f32_from_bits(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* ---- gemm_plan.c ---- */

/* Build the plan (validates; decode 0: nothing more; 1: the scales and the
 * operands in double (ad, bd); 2: the scales only, the operands stay codes
 * (the kernels that pack from codes; exmy__gemm_plan_decode adds ad, bd)).
 * ws holds the scales (decode >= 1). */
int exmy__gemm_plan(const exmy_gemm_args *args, gemm_plan *p, int decode, gemm_ws *ws, char *err, size_t errlen);
int exmy__gemm_plan_decode(gemm_plan *p, char *err, size_t errlen);
void exmy__gemm_plan_free(gemm_plan *p);

/* ---- gemm_round.c ---- */

/* x + y rounded once into fmt (exact sum; 64 leading bits + sticky for sr). */
uint64_t exmy__round_sum2(const exmy_format *fmt, const exmy_rounding *rnd, double x, double y, uint64_t index,
                          unsigned *flags);

/* ---- gemm_epilogue.c ---- */

/* C[i,j] decoded (the plan must use C). */
double exmy__gemm_c_value(const gemm_plan *p, size_t i, size_t j);
/* Epilogue of a non-exact model for one element: writes D[i,j] and returns
 * |z| for amax (NaN: 0). */
float exmy__gemm_epilogue(const gemm_plan *p, size_t i, size_t j, float P, unsigned *flags);
/* The same for all of D from the m x n matrix P (row-major), rows in
 * parallel on nt threads; returns the flags, amax raised to max |z|. */
unsigned exmy__gemm_epilogue_all(const gemm_plan *p, const float *P, int nt, float *amax);
/* The same from P with row stride ldp. */
unsigned exmy__gemm_epilogue_all_ld(const gemm_plan *p, const float *P, size_t ldp, int nt, float *amax);
#endif
