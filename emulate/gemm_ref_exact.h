/* gemm_ref_exact.h: the reference of the exact model (gemm_ref_exact.c),
 * below the reference driver (gemm_ref.c) that calls it per element. */
#ifndef EXMY_GEMM_REF_EXACT_H
#define EXMY_GEMM_REF_EXACT_H
#include "emulate/gemm_plan.h"

/* The exact model for one element, D written; returns |V| as fp32 (NaN: 0). */
float exmy__gemm_exact_elem(const gemm_plan *p, size_t i, size_t j, unsigned *flags);
#endif
