/* mma_internal.h: the datapath table of the instruction-level MMA models
 * (docs/mma.md) and the one fused sum that computes a row (mma_fused.c),
 * shared by exmy_mma and the GEMM's tc accumulation.  One row per
 * datapath; instruction names and the GEMM's tc: presets map to rows. */
#ifndef EXMY_MMA_INTERNAL_H
#define EXMY_MMA_INTERNAL_H
#include "exmy.h"

/* How a fused sum is formed (MMA-Sim v2's algorithm names). */
typedef enum mma_algo {
  MMA_T,    /* truncated fused dot-product-add: L products and C aligned to the
               largest exponent, each truncated to F fraction bits, summed exactly */
  MMA_ST,   /* T with block scales inside the products (MXFP8/6/4) */
  MMA_GST,  /* groups of G products summed exactly, scaled, then T over the groups */
  MMA_TR,   /* CDNA3: products truncated at F, then floor to F2+1 bits beside C */
  MMA_GTR,  /* CDNA3 FP8: TR with even and odd products summed apart */
  MMA_E,    /* CDNA1: exact sum, one rounding */
  MMA_FTZ   /* CDNA2: fp32 products and adds in pairs (P = G = 2) or fours (4), subnormals flushed */
} mma_algo;

/* The output conversion of a fused sum. */
typedef enum mma_rho {
  MMA_RZ_FP32,   /* truncate to fp32 (overflow: inf) */
  MMA_RZ_E8M13,  /* truncate to 13 fraction bits, fp32 exponent range (FP8 on Hopper, Ada) */
  MMA_RNE_FP16,  /* nearest even to fp16 */
  MMA_RNE_FP32,  /* nearest even to fp32 */
  MMA_OUT_FP32   /* `out` fraction bits in fp32's exponent range, cut toward zero or
                    (out_rne) to nearest even: the GEMM's tc keys out= and norm= */
} mma_rho;

typedef struct mma_datapath {
  const char *name;  /* "hopper-fp8-f32" */
  mma_algo algo;
  int L;             /* products per fused sum (k is chained in pieces of L) */
  int F;             /* fraction bits kept after alignment */
  int F2;            /* TR/GTR: bits of the second stage */
  int G;             /* GST: products summed exactly per group; FTZ: products per add tree (2, 4) */
  int e_zero;        /* exponent of a zero term (T/ST/GST, MMA-Sim v2) */
  mma_rho rho;
  int W;             /* pieces interleaved in runs of W elements: element l is in
                        piece (l / W) mod (k / L); 0: consecutive pieces of L */
  int c_last;        /* C added after the pieces (which start from +0) by one
                        add rounded to D's format, nearest even */
  const char *widen; /* operands converted to this format before the products
                        (alignment exponents as its values); NULL: as given */
  const char *source;
  /* only in rows made from a GEMM's tc keys (never in the table): */
  int out, out_rne;  /* MMA_OUT_FP32: fraction bits kept, nearest even (1) or cut (0) */
  int align_rne;     /* T/ST: terms rounded to nearest even at F instead of cut (align=rne) */
} mma_datapath;

extern const mma_datapath exmy__mma_paths[];
extern const size_t exmy__mma_npaths;
/* The datapath row of a tc: GEMM preset's name (NULL if none). */
const mma_datapath *exmy__mma_path_find(const char *name);

/* ---- the fused sum (mma_fused.c) ---------------------------------------- */

/* One unit computing a row: the row and the formats it reads.  Made by
 * exmy__mma_unit_init and not copied afterwards (af, bf may point at wide). */
typedef struct mma_unit {
  const mma_datapath *dp;
  const exmy_format *af, *bf; /* the operands' formats in the products (alignment exponents) */
  const exmy_format *sf;      /* the block scales' format; NULL: no scales */
  const exmy_format *d;       /* D's format (the code returned) */
  int block;                  /* elements of k per scale */
  int zero_v1;                /* MMA-Sim v1's zero rule instead of the row's e_zero */
  exmy_format wide, e8m13;
} mma_unit;

/* 0, or -1 with err (a format that does not parse). */
int exmy__mma_unit_init(mma_unit *u, const mma_datapath *dp, const exmy_format *af, const exmy_format *bf,
                        const exmy_format *sf, int block, const exmy_format *d, int zero_v1, char *err, size_t errlen);

/* One fused sum: L products a[l] * b[l * bstride] (times the scales of
 * element l, sa[(s0 + l) / block] and sb[((s0 + l) / block) * sbstride]) and
 * c, a value of cf.  L <= 64 except for T and ST. */
typedef struct mma_piece {
  const double *a, *b;
  size_t bstride;
  const float *sa, *sb;
  size_t sbstride, s0;
  int L;
  double c;
  const exmy_format *cf;
} mma_piece;

/* D's code of the fused sum of piece p by u's row (NaN and inf as the row
 * gives them): the one place every datapath's arithmetic lives. */
uint64_t exmy__mma_fused(const mma_unit *u, const mma_piece *p);
/* The row's c_last step: D = code + c (c a value of cf), one add rounded to
 * D's format, nearest even. */
uint64_t exmy__mma_add_last(const mma_unit *u, uint64_t code, double c, const exmy_format *cf);

#endif
