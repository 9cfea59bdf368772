/* gemm_round.h: the rounding of a sum (gemm_round.c), for the reference and
 * the kernels of acc=FORMAT; needs no plan. */
#ifndef EXMY_GEMM_ROUND_H
#define EXMY_GEMM_ROUND_H
#include "exmy.h"

#include <stdint.h>

/* x + y rounded once into fmt (exact sum; 64 leading bits + sticky for sr). */
uint64_t exmy__round_sum2(const exmy_format *fmt, const exmy_rounding *rnd, double x, double y, uint64_t index,
                          unsigned *flags);
#endif
