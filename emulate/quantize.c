/* quantize.c: the public array quantizers.  They check what the caller
 * passed (the same check as the GPU quantizers') and hand the work to
 * convert.c's fast path (exmy_quantize) or its serial reference
 * (exmy_quantize_ref). */
#include "exmy.h"
#include "formats/internal.h"

int exmy__quantize_check(const exmy_rounding *rnd, exmy_dtype src_type, char *err, size_t errlen) {
  if (!rnd) return exmy__fail(err, errlen, "quantize: no rounding given (rnd is NULL)");
  char e[EXMY_ERRLEN];
  if (exmy_rounding_check(rnd, e, sizeof e)) return exmy__fail(err, errlen, "quantize: %s", e);
  switch (src_type) {
  case EXMY_DTYPE_F32: case EXMY_DTYPE_F64: case EXMY_DTYPE_BF16: case EXMY_DTYPE_F16: return 0;
  default:
    return exmy__fail(err, errlen, "quantize: source type %s is not a float type (float32, float64, bfloat16, float16)",
                      exmy_dtype_name(src_type));
  }
}

int exmy_quantize(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type, const void *src,
                  size_t n, uint64_t index0, void *codes, unsigned *flags, char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, src_type, err, errlen)) return -1;
  const unsigned fl = exmy__quantize(fmt, rnd, src_type, src, n, index0, codes);
  if (flags) *flags |= fl;
  return 0;
}

int exmy_quantize_ref(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type, const void *src,
                      size_t n, uint64_t index0, void *codes, unsigned *flags, char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, src_type, err, errlen)) return -1;
  const unsigned fl = exmy__quantize_ref(fmt, rnd, src_type, src, n, index0, codes);
  if (flags) *flags |= fl;
  return 0;
}
