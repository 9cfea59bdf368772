/* gemm_tc.h: which datapath a GEMM's tc accumulation runs (docs/gemm.md):
 * the row of the instruction table its preset names for these operands, or
 * a T row (ST with block scales) made from its keys, and the unit of the
 * instruction layer that computes it (mma_fused.c).  The reference sums
 * every group through it; the fast kernels say which rows they implement
 * (gemm_tc_caps). */
#ifndef EXMY_GEMM_TC_H
#define EXMY_GEMM_TC_H
#include "emulate/gemm_plan.h"
#include "emulate/tc_preset.h"

typedef struct gemm_tc {
  mma_datapath own;    /* the row made from the keys (when no preset's) */
  exmy_format sf, f32; /* the block scales' format, D's (P is fp32) */
  mma_unit u;          /* u.dp: the row */
} gemm_tc;

/* What a fast tc kernel implements, stated as data (the kernel's file holds
 * its row): the datapath algorithms and output conversions it computes,
 * whether it takes block scales inside the products and rounding to nearest
 * (align=rne, norm=rne of a model made from its keys).  The dispatcher runs a
 * kernel only on a row it implements (exmy__gemm_tc_takes); the reference
 * runs the rest. */
typedef struct gemm_tc_caps {
  const mma_algo *algos;
  size_t nalgos;
  const mma_rho *rhos;
  size_t nrhos;
  int block_scales;
  int nearest;
} gemm_tc_caps;

/* 1 when the row of p's tc accumulation is one caps implements. */
int exmy__gemm_tc_takes(const gemm_plan *p, const gemm_tc_caps *caps);
/* The row of p's tc accumulation; own holds it when it is made from the keys. */
const mma_datapath *exmy__gemm_tc_path(const gemm_plan *p, mma_datapath *own);
/* The unit for p (t is not copied afterwards): 0, or -1 (a format did not parse). */
int exmy__gemm_tc_init(const gemm_plan *p, gemm_tc *t);
/* The piece [l0, l1) of output (i, j) summed from +0 in groups of the row's
 * L (from l0), each group one fused sum with the running value as c. */
float exmy__gemm_tc_piece(const gemm_plan *p, const gemm_tc *t, size_t i, size_t j, size_t l0, size_t l1);
#endif
