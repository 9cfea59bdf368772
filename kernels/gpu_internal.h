/* gpu_internal.h: helpers the CUDA sources of kernels/ share (C++ only). */
#ifndef EXMY_GPU_INTERNAL_H
#define EXMY_GPU_INTERNAL_H
#include "exmy.h"

#include <cuda_runtime.h>
#include <cstdarg>
#include <cstdio>

/* The library's one-line error (formats/format.c; formats/internal.h is C
 * only): writes err, returns -1. */
extern "C" int exmy__fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The quantizers' argument check (emulate/quantize.c): rnd given, a float source. */
extern "C" int exmy__quantize_check(const exmy_rounding *rnd, exmy_dtype src_type, char *err, size_t errlen);
/* The flags a cuBLASLt D shows (kernels/gpu_plan.c): INVALID for NaN, OVERFLOW for inf. */
extern "C" unsigned exmy__gpu_d_flags(exmy_dtype d_type, const void *d, size_t count);

#define CUDA_TRY(call)                                                                              \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      rc = exmy__fail(err, errlen, "%s: %s", #call, cudaGetErrorString(e_));    \
      goto done;                                                                                    \
    }                                                                                               \
  } while (0)

/* Make device current (-1: the current one) and report its sm (major*10 +
 * minor).  0, or -1 with err when there is no driver or device. */
int exmy__gpu_select(int device, int *sm, char *err, size_t errlen);

/* The FP8 type of an operand format: EXMY_DTYPE_E4M3FN / _E5M2, or -1. */
static inline int exmy__gpu_fp8_type(const exmy_format *f) {
  if (f->bits == 8 && f->ebits == 4 && f->mbits == 3 && f->bias == 7 && f->inf == EXMY_INF_NONE &&
      f->nan == EXMY_NAN_ONES && f->is_signed && f->has_zero)
    return EXMY_DTYPE_E4M3FN;
  if (f->bits == 8 && f->ebits == 5 && f->mbits == 2 && f->bias == 15 && f->inf == EXMY_INF_IEEE &&
      f->nan == EXMY_NAN_IEEE && f->is_signed && f->has_zero)
    return EXMY_DTYPE_E5M2;
  return -1;
}
#endif
