/* deprecated.c: the names exmy 1.4 replaced (docs/api.md, "What changed in
 * 1.4"), kept as thin wrappers so code written for 1.0 to 1.3 keeps building
 * and linking.  Nothing inside the project calls them except test_api's
 * check that each still gives what its replacement gives. */
#include "exmy.h"
#include "formats/internal.h"

#include <stdio.h>
#include <string.h>

int exmy_format_init(exmy_format *fmt, char *err, size_t errlen) { return exmy_format_make(fmt, err, errlen); }

int exmy_recipe_state_init(const exmy_recipe *recipe, exmy_recipe_state *state, char *err, size_t errlen) {
  return exmy_recipe_state_new(recipe, state, err, errlen);
}

double exmy_decode(const exmy_format *fmt, uint64_t code) { return exmy_code_to_f64(fmt, code); }

uint64_t exmy_from_double(const exmy_format *fmt, const exmy_rounding *rnd, double x, uint64_t index,
                          unsigned *flags) {
  return exmy_from_f64(fmt, rnd, x, index, flags);
}

uint64_t exmy_from_float(const exmy_format *fmt, const exmy_rounding *rnd, float x, uint64_t index, unsigned *flags) {
  return exmy_from_f32(fmt, rnd, x, index, flags);
}

void exmy_decode_f64(const exmy_format *fmt, const void *codes, size_t n, double *out) {
  exmy_codes_to_f64(fmt, codes, n, out);
}

void exmy_decode_f32(const exmy_format *fmt, const void *codes, size_t n, float *out) {
  exmy_codes_to_f32(fmt, codes, n, out);
}

double exmy_bf16_to_double(uint16_t bits) { return exmy_bf16_to_f64(bits); }

double exmy_f16_to_double(uint16_t bits) { return exmy_f16_to_f64(bits); }

void exmy_qtensor_dequant_f32(const exmy_qtensor *q, float *out) { exmy_qtensor_to_f32(q, out); }

void exmy_qtensor_dequant_f64(const exmy_qtensor *q, double *out) { exmy_qtensor_to_f64(q, out); }

int exmy_gemm_batched(const exmy_gemm_args *args, size_t count, int threads, void *const *d, float *amax_d,
                      unsigned *flags, char *err, size_t errlen) {
  if (!count || !args) return exmy_gemm_batch(args, count, d, amax_d, flags, err, errlen);
  /* the old call took the batch's threads as an argument: copy the args to carry it */
  exmy_gemm_args *a = malloc(count * sizeof *a);
  if (!a) return exmy__fail(err, errlen, "GEMM batch: out of memory for %zu problems", count);
  memcpy(a, args, count * sizeof *a);
  for (size_t b = 0; b < count; b++) a[b].threads = threads;
  const int rc = exmy_gemm_batch(a, count, d, amax_d, flags, err, errlen);
  free(a);
  return rc;
}

int exmy_gpu_gemm(const exmy_gpu_gemm_args *args, char *err, size_t errlen) {
  return exmy_gpu_gemm_run(args, NULL, err, errlen);
}

/* The old ones wrote "?" past the end (returning 1); the new ones -1 and "". */
int exmy_mma_name(size_t index, char *buf, size_t buflen) {
  return index < exmy_mma_count() ? exmy_mma_get(index, buf, buflen) : snprintf(buf, buflen, "?");
}

int exmy_mma_datapath_text(size_t index, char *buf, size_t buflen) {
  return index < exmy_mma_datapath_count() ? exmy_mma_datapath_get(index, buf, buflen) : snprintf(buf, buflen, "?");
}

const char *exmy_accum_tc_preset_name(size_t i) { return exmy_accum_tc_preset_get(i); }
