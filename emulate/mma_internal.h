/* mma_internal.h: the datapath table of the instruction-level MMA models
 * (docs/mma.md).  One row per datapath; instruction names map to rows. */
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
  MMA_RNE_FP32   /* nearest even to fp32 */
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
} mma_datapath;

extern const mma_datapath exmy__mma_paths[];
extern const size_t exmy__mma_npaths;
/* The datapath row of a tc: GEMM preset's name (NULL if none). */
const mma_datapath *exmy__mma_path_find(const char *name);
#endif
