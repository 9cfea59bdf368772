/* gemm_block.h: the blocking frame (gemm_block.c): operands packed in
 * panels, D cut into tiles run in parallel, micro-kernels plugged in.  One
 * driver, exmy__gemm_frame_run, serves every fast kernel:
 *  - pieces: the micro-kernel returns each piece's sums from +0 as floats;
 *    the frame promotes them into fp32 and ends with the epilogue
 *    (acc=FORMAT: gemm_fast_format.c, gemm_fast_lanes.c);
 *  - with block_end, the micro-kernel carries a tile's state over blocks of
 *    k the frame hands it in order: running sums in float (acc=fp32, its
 *    chunk= and promote forms, fp32:pairwise: gemm_fast_fp32.c; each with
 *    its own order of operations) or in double (esz 8: acc=exact,
 *    gemm_fast_exact.c, with its own epilogue), or its pieces and their
 *    promotion (acc=tc: gemm_fast_tc.c, gemm_fast_tc16.c).
 *
 * A new accumulation model on the pieces frame fills a gemm_frame_kernel:
 *  - ctx: its constants (read only: the hooks run on many threads at once);
 *  - mr x nr: the micro-tile; mt: the rows of a parallel task (a multiple of
 *    mr); pa, pb: the bytes of one packed panel of A (mr rows) and of B (nr
 *    columns): k mr esz and k nr esz for the stock [l][w] layout of esz-byte
 *    elements, any size for a model's own layout;
 *  - pack_a (pack_b): panel pan of op(A) (of op(B)^T), rows [pan w, pan w
 *    + w) (w = mr; for B columns, w = nr), all k steps, into pa (pb) bytes:
 *    the stock layout is [l][w], zero beyond m (n); a model may lay out
 *    its panel as it likes (values beside exponents, steps in pairs,
 *    sidecars), only its micro reads it; panels are packed in parallel;
 *    return 0 when the model cannot take these operands (a value not
 *    finite, say: the frame then returns 0 and the next kernel or the
 *    reference runs).  exmy__gemm_pack_{a,b}_{f32,f64} pack the plan's
 *    decoded operands (ad, bd) as [l][w];
 *  - micro: Ap and Bp are the panels of rows [i0, i0 + mr) and columns
 *    [j0, j0 + nr), from their start (step 0; the steps begin at l0);
 *    without block_end, c[r nr + q] (r < rows, q < cols; the rest is
 *    ignored) = the model's sum from +0 over steps [l0, l0 + len) of output
 *    (i0 + r, j0 + q), bit for bit the reference's piece (its fallbacks
 *    included), as a float;
 *  - block_end (optional): the micro owns the pieces and their promotion.
 *    The frame calls it on blocks [lb, block_end(ctx, p, lb)) of k, in
 *    order from 0 to k, each block over every micro-tile of the task
 *    before the next (so a block of B's panel stays in L1); c is then the
 *    tile's state, sw mr nr elements of esz bytes (0 or 4: floats; 8:
 *    doubles, c cast), 64-byte aligned, kept by the frame across the
 *    blocks of a task (uninitialized at lb = 0), and after the last block
 *    element r nr + q of c must hold output (i0 + r, j0 + q)'s promoted
 *    sum (the model's P, m x n elements of esz bytes);
 *  - epilogue: NULL for exmy__gemm_epilogue_all_ld (P floats), else its own
 *    (it reads P as the model's elements, ldp = n).
 * The frame owns the rest, written once: the workspace (slots A, B, P), the
 * packing and tiling loops, the OpenMP teams (none for one thread), the
 * pieces (exmy__gemm_piece_end) and their promotion P = fmaf(w, piece, P) as
 * the reference's (without block_end), and k = 0 (P = +0).  Any split of
 * the tasks gives the same bits: each output's pieces are summed in k
 * order. */
#ifndef EXMY_GEMM_BLOCK_H
#define EXMY_GEMM_BLOCK_H
#include "emulate/gemm_plan.h"

#include <stddef.h>

#if defined(__x86_64__)
/* The k steps of a block of the running-sums kernels; the most rows of a
 * parallel task. */
enum { GEMM_KC = 256, GEMM_MC = 240 };

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

#endif

/* The pieces frame's kernel descriptor (the contract above). */
typedef struct gemm_frame_kernel {
  const void *ctx;
  size_t mr, nr, mt;
  size_t pa, pb; /* bytes of a packed panel of A, of B */
  int (*pack_a)(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap);
  int (*pack_b)(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp);
  void (*micro)(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap, const void *Bp,
                size_t rows, size_t cols, float *c);
  unsigned (*epilogue)(const void *ctx, const gemm_plan *p, const void *P, size_t ldp, int nt, float *amax);
  size_t (*block_end)(const void *ctx, const gemm_plan *p, size_t lb); /* NULL: the frame's pieces */
  size_t sw;  /* with block_end: a tile's state in mr nr elements (0 or 1: one) */
  size_t esz; /* with block_end: the bytes of an element of the state and of P: 0 or 4 float, 8 double */
} gemm_frame_kernel;

/* Stock pack hooks: the plan's decoded operands (ad, bd) as floats (the
 * model must know each value is exact in float) or as doubles. */
int exmy__gemm_pack_a_f32(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap);
int exmy__gemm_pack_b_f32(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp);
int exmy__gemm_pack_a_f64(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap);
int exmy__gemm_pack_b_f64(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp);

/* The most floats the frame keeps on a thread's stack for a task: a
 * micro-tile (mr nr), or with block_end every tile's state (mt nr sw, in
 * floats: twice that for esz 8). */
enum { GEMM_FRAME_TILE = 4096 };

/* The whole GEMM of p with kd on nt threads: D written, flags ORed in, amax
 * raised; 0 (nothing written) when a pack declines or the workspace cannot
 * grow. */
int exmy__gemm_frame_run(const gemm_frame_kernel *kd, const gemm_plan *p, int nt, unsigned *flags, float *amax);

#endif
