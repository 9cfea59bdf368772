/* gemm_epilogue.h: the epilogue (gemm_epilogue.c) that every path but the
 * exact model ends with: z = s * P + beta * (scale_c * C), D = cast(z *
 * scale_d), amax; and C's value, which the exact model reads too. */
#ifndef EXMY_GEMM_EPILOGUE_H
#define EXMY_GEMM_EPILOGUE_H
#include "emulate/gemm_plan.h"

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
