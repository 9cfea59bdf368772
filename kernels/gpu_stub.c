/* gpu_stub.c: the device functions of exmy.h in a build without CUDA: each
 * fails saying so, so exmy.h is the same in every build. */
#include "exmy.h"
#include "formats/internal.h"

#define NO_CUDA(err, errlen) exmy__fail(err, errlen, "exmy was built without CUDA (configure found no nvcc)")

int exmy_gpu_built(void) { return 0; }

int exmy_gpu_query(int device, exmy_gpu_info *info, char *err, size_t errlen) { return NO_CUDA(err, errlen); }

int exmy_gpu_quantize(const exmy_format *fmt, const exmy_rounding *rnd, int hw, exmy_dtype src_type,
                      const void *src, size_t n, uint64_t index0, void *codes, unsigned *flags,
                      char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, src_type, err, errlen)) return -1; /* bad arguments first, as with CUDA */
  return NO_CUDA(err, errlen);
}

int exmy_gpu_quantize_dev(const exmy_format *fmt, const exmy_rounding *rnd, int hw, exmy_dtype src_type,
                          const void *d_src, size_t n, uint64_t index0, void *d_codes, unsigned *flags,
                          char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, src_type, err, errlen)) return -1;
  return NO_CUDA(err, errlen);
}

int exmy_gpu_quantize_f32_range(const exmy_format *fmt, const exmy_rounding *rnd, int hw, uint32_t lo,
                                size_t n, void *codes, unsigned *flags, char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, EXMY_DTYPE_F32, err, errlen)) return -1;
  return NO_CUDA(err, errlen);
}

int exmy_gpu_gemm_run(const exmy_gpu_gemm_args *args, unsigned *flags, char *err, size_t errlen) {
  return NO_CUDA(err, errlen);
}

int exmy_gpu_probe_engine(exmy_gpu_probe_ctx *ctx, exmy_probe_engine *eng, char *err, size_t errlen) {
  return NO_CUDA(err, errlen);
}

int exmy_gpu_probe_dot(void *ctx, const exmy_format *fa, const exmy_format *fb, size_t k, size_t count,
                       const uint8_t *a, const uint8_t *b, float *out, char *err, size_t errlen) {
  return NO_CUDA(err, errlen);
}
