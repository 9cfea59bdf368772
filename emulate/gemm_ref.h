/* gemm_ref.h: the plain-C reference of every accumulation model, element by
 * element (docs/gemm.md); gemm.c runs it wherever no fast kernel applies and
 * for exmy_gemm_ref.  The fast kernels never call it. */
#ifndef EXMY_GEMM_REF_H
#define EXMY_GEMM_REF_H
#include "emulate/gemm_plan.h"

/* Rows [i0, i1) of D by the reference: flags or-ed in, amax raised. */
void exmy__gemm_ref_rows(const gemm_plan *p, size_t i0, size_t i1, unsigned *flags, float *amax);
#endif
