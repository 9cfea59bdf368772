/* internal.h: declarations shared by the library's own files (not public). */
#ifndef EXMY_INTERNAL_H
#define EXMY_INTERNAL_H
#include "exmy.h"

#include <stdlib.h>

/* Write a one-line error into err (when not NULL); returns -1. */
int exmy__fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Parse a name or long form into fmt without validating it. */
int exmy__parse_longform(const char *text, exmy_format *fmt, char *err, size_t errlen);

/* EXMY_NO_AVX512 set to anything but "" or "0": the AVX-512 kernels step
 * aside for the AVX2/plain ones (tests and benchmarks compare them). */
static inline int exmy__avx512_disabled(void) {
  const char *e = getenv("EXMY_NO_AVX512");
  return e && *e && *e != '0';
}

/* Magnitude and sign of a code. */
static inline uint64_t exmy__mag(const exmy_format *fmt, uint64_t code) { return code & fmt->mag_mask; }

/* Is the magnitude a NaN / inf code (ignoring negzero NaN, see classify)? */
static inline int exmy__mag_is_inf(const exmy_format *fmt, uint64_t mag) {
  return fmt->inf != EXMY_INF_NONE && mag == fmt->inf_mag;
}
static inline int exmy__mag_is_nan(const exmy_format *fmt, uint64_t mag) {
  return fmt->nan != EXMY_NAN_NONE && fmt->nan != EXMY_NAN_NEGZERO && mag > fmt->max_mag &&
         !exmy__mag_is_inf(fmt, mag);
}

/* A float32 quantizer prepared once and run on many segments: codes[i] =
 * cast(fp32(x[i] * scale)), the vectorized fast path where it applies, else
 * the reference; element i uses counter index0 + i.  Serial: callers split
 * the work.  Used by the scaling recipes. */
typedef struct exmy__f32q {
  exmy_format f;
  exmy_rounding r;
  int fast;
  int ident;        /* binary32 without saturation, ftz or daz: a finite or infinite x is its own code */
  int pow2_ok;      /* the rne kernel on a grid >= 2^-125: cast(fp32(x * 2^k)) is cast(x * 2^k), flags aside
                       when fp32(x * 2^k) underflows to zero (exmy__f32q_run_pow2) */
  _Alignas(16) unsigned char params[256];
} exmy__f32q;
/* The format is IEEE binary32 (f32): its codes are float bit patterns. */
int exmy__is_binary32(const exmy_format *f);
void exmy__f32q_init(exmy__f32q *q, const exmy_format *f, const exmy_rounding *r);
unsigned exmy__f32q_run(const exmy__f32q *q, const float *x, size_t n, float scale, uint64_t index0, void *codes);
/* The same with a scale per element (codes[i] = cast(fp32(x[i] * scales[i]))). */
unsigned exmy__f32q_run_v(const exmy__f32q *q, const float *x, size_t n, const float *scales, uint64_t index0,
                          void *codes);
/* Whether the group kernels take a scale per 2^lg elements: 4 <= lg <= 30 (a group holds whole
 * 16-lane vectors; a 2048-element block lies inside one). */
static inline int exmy__f32q_grp_lg_ok(int lg) { return lg >= 4 && lg <= 30; }
/* exmy__f32q_run_v with a scale per 2^lg elements, gscales[i >> lg] (exmy__f32q_grp_lg_ok): rne and sr, else -1 */
int exmy__f32q_run_grp(const exmy__f32q *q, const float *x, size_t n, const float *gscales, int lg, uint64_t index0,
                       void *codes, unsigned *flags);
/* The exact-product cast of the recipes (codes[i] = cast(x[i] * scales[i])
 * rounded once) through the float kernel where it is the same (q->pow2_ok,
 * scales normal powers of two, products finite in float); a scale per
 * element (lg 0), or per 2^lg (exmy__f32q_grp_lg_ok: scales[i >> lg]); lost:
 * whether some nonzero x[i] * scales[i] is 0 in float, when the caller
 * knows it (0 or 1; -1: scan); -1 when q is not pow2_ok or lg is out of
 * range: take the exact path. */
int exmy__f32q_run_pow2_v(const exmy__f32q *q, const float *x, size_t n, const float *scales, int lg, int lost,
                          uint64_t index0, void *codes, unsigned *flags);
/* Largest finite value of a format as a float (FLT_MAX when larger): the
 * fmax of the scaling recipes and statistics (emulate/scaling.c). */
float exmy__fmax_f32(const exmy_format *fmt);

/* The argument check of every array quantizer, host and device: rnd given,
 * src_type a float type.  0, or -1 with err. */
int exmy__quantize_check(const exmy_rounding *rnd, exmy_dtype src_type, char *err, size_t errlen);

/* The exception flags a GPU GEMM's D (count host elements of d_type: F32,
 * BF16 or E4M3FN) shows, since cuBLASLt reports none: EXMY_FLAG_INVALID for a
 * NaN element, EXMY_FLAG_OVERFLOW for an infinite one (kernels/gpu_plan.c). */
unsigned exmy__gpu_d_flags(exmy_dtype d_type, const void *d, size_t count);

/* The array quantizers behind exmy_quantize / exmy_quantize_ref (arguments
 * already checked: src_type is a float type): the OR of the flags. */
unsigned exmy__quantize(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type, const void *src,
                        size_t n, uint64_t index0, void *codes);
unsigned exmy__quantize_ref(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type,
                            const void *src, size_t n, uint64_t index0, void *codes);
#endif
