/* gpu_plan.c: the plain-C side of the GPU code, built with or without CUDA
 * and tested on the CPU: which accumulation model a GPU gets, what the
 * hardware conversions can do, and the checks and layout of the cuBLASLt
 * FP8 GEMM (which operand goes where, which sizes must be aligned). */
#include "exmy.h"
#include "formats/internal.h"

#include <math.h>
#include <string.h>

const char *exmy_gpu_model_for_sm(int sm, int fast_accum) {
  if (sm >= 100) return "tc:blackwell";
  if (sm >= 90) return fast_accum ? "tc:hopper-fastacc" : "tc:hopper";
  if (sm == 89) return fast_accum ? "tc:ada-fastacc" : "tc:ada";
  return NULL;
}

int exmy_gpu_hw_quant_check(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type,
                            char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, src_type, err, errlen)) return -1;
  if (strcmp(fmt->name, "e4m3fn") && strcmp(fmt->name, "e5m2"))
    return exmy__fail(err, errlen, "format %s has no hardware conversion (accepted: e4m3fn, e5m2)", fmt->name);
  if (rnd->mode != EXMY_RNE)
    return exmy__fail(err, errlen, "rounding %s has no hardware conversion (accepted: rne)",
                      exmy_round_mode_name(rnd->mode));
  if (rnd->sat == EXMY_SAT_PROPAGATE)
    return exmy__fail(err, errlen, "saturation propagate has no hardware conversion (accepted: none, finite)");
  if (rnd->ftz || rnd->daz)
    return exmy__fail(err, errlen, "%s has no hardware conversion", rnd->ftz ? "ftz" : "daz");
  return 0;
}

unsigned exmy__gpu_d_flags(exmy_dtype d_type, const void *d, size_t count) {
  unsigned fl = 0;
  for (size_t i = 0; i < count; i++) {
    uint32_t u; /* the element as float32 bits (bf16: the top half) */
    if (d_type == EXMY_DTYPE_F32) memcpy(&u, (const char *)d + 4 * i, 4);
    else if (d_type == EXMY_DTYPE_BF16) {
      uint16_t h;
      memcpy(&h, (const char *)d + 2 * i, 2);
      u = (uint32_t)h << 16;
    } else { /* E4M3FN: no inf; NaN is S.1111.111 */
      if ((((const uint8_t *)d)[i] & 0x7F) == 0x7F) fl |= EXMY_FLAG_INVALID;
      continue;
    }
    if ((u & 0x7F800000u) == 0x7F800000u) fl |= (u & 0x007FFFFFu) ? EXMY_FLAG_INVALID : EXMY_FLAG_OVERFLOW;
  }
  return fl;
}

void exmy_gpu_gemm_args_init(exmy_gpu_gemm_args *args) {
  memset(args, 0, sizeof *args);
  args->alpha = 1.0f;
  args->scale_a = args->scale_b = args->scale_d = 1.0f;
  args->a_type = args->b_type = EXMY_DTYPE_E4M3FN;
  args->d_type = EXMY_DTYPE_F32;
}

static size_t round_up(size_t x, size_t m) { return (x + m - 1) / m * m; }

size_t exmy_gpu_mx_scale_offset(size_t row, size_t col, size_t cols) {
  /* 128 x 4 tiles, row-major over tiles; inside a tile the 32-row quarters
   * interleave: (row % 32) * 16 + (row % 128 / 32) * 4 + col % 4. */
  size_t tiles_across = round_up(cols, 4) / 4;
  return ((row / 128) * tiles_across + col / 4) * 512 + (row % 32) * 16 + (row % 128 / 32) * 4 + col % 4;
}

static int misaligned(const void *p) { return ((uintptr_t)p & 15) != 0; }

int exmy_gpu_gemm_plan_make(const exmy_gpu_gemm_args *x, int sm, exmy_gpu_gemm_plan *p, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
#define BAD(...) return exmy__fail(err, errlen, __VA_ARGS__)
  if (!x->m || !x->n || !x->k) BAD("empty problem m = %zu, n = %zu, k = %zu (all must be positive)", x->m, x->n, x->k);
  if (x->a_type != EXMY_DTYPE_E4M3FN && x->a_type != EXMY_DTYPE_E5M2)
    BAD("A type %s is not an FP8 type (accepted: float8_e4m3fn, float8_e5m2)", exmy_dtype_name(x->a_type));
  if (x->b_type != EXMY_DTYPE_E4M3FN && x->b_type != EXMY_DTYPE_E5M2)
    BAD("B type %s is not an FP8 type (accepted: float8_e4m3fn, float8_e5m2)", exmy_dtype_name(x->b_type));
  if (x->a_type == EXMY_DTYPE_E5M2 && x->b_type == EXMY_DTYPE_E5M2)
    BAD("A and B are both e5m2: cuBLASLt has no e5m2 x e5m2 FP8 GEMM (make one operand e4m3)");
  if (x->d_type != EXMY_DTYPE_F32 && x->d_type != EXMY_DTYPE_BF16 && x->d_type != EXMY_DTYPE_E4M3FN)
    BAD("D type %s is not supported (accepted: float32, bfloat16, float8_e4m3fn)", exmy_dtype_name(x->d_type));
  if (x->d_type != EXMY_DTYPE_E4M3FN && (x->scale_d != 1.0f || x->amax_d))
    BAD("%s with a %s D: cuBLASLt applies the D scale and amax only to FP8 outputs",
        x->amax_d ? "amax_d" : "scale_d", exmy_dtype_name(x->d_type));
  if (!isfinite(x->alpha) || !isfinite(x->scale_a) || !isfinite(x->scale_b) || !isfinite(x->scale_d))
    BAD("non-finite alpha or scale (alpha %g, scale_a %g, scale_b %g, scale_d %g)", x->alpha, x->scale_a,
        x->scale_b, x->scale_d);
  if (!x->a || !x->b || !x->d) BAD("%s is NULL", !x->a ? "a" : !x->b ? "b" : "d");
  /* cuBLASLt FP8: A and B rows (k bytes) and D rows 16-byte aligned; n is
   * both D's row length and the outer size of the transposed B. */
  if (x->k % 16) BAD("k = %zu is not a multiple of 16 (cuBLASLt FP8 needs 16-byte aligned rows of A and B)", x->k);
  if (x->n % 16) BAD("n = %zu is not a multiple of 16 (cuBLASLt FP8 needs 16-byte aligned B and D)", x->n);
  if (x->block_scaled) {
    if (x->k % 32) BAD("k = %zu is not a multiple of 32 (an MXFP8 scale covers 32 elements of k)", x->k);
    if (!x->a_scales || !x->b_scales) BAD("block_scaled without %s", !x->a_scales ? "a_scales" : "b_scales");
    if (x->scale_a != 1.0f || x->scale_b != 1.0f)
      BAD("scale_a = %g, scale_b = %g with block_scaled (MXFP8 takes its scales from a_scales/b_scales)",
          x->scale_a, x->scale_b);
  }
  if (x->device_ptrs) {
    if (misaligned(x->a)) BAD("a = %p is not 16-byte aligned (cuBLASLt FP8)", x->a);
    if (misaligned(x->b)) BAD("b = %p is not 16-byte aligned (cuBLASLt FP8)", x->b);
    if (misaligned(x->d)) BAD("d = %p is not 16-byte aligned (cuBLASLt FP8)", x->d);
    if (x->block_scaled && (misaligned(x->a_scales) || misaligned(x->b_scales)))
      BAD("%s = %p is not 16-byte aligned (cuBLASLt)", misaligned(x->a_scales) ? "a_scales" : "b_scales",
          misaligned(x->a_scales) ? (const void *)x->a_scales : (const void *)x->b_scales);
  }
#undef BAD
  if (sm && sm < 89) {
    return exmy__fail(err, errlen, "FP8 GEMM needs sm_89 or newer; this device is sm_%d", sm);
  }
  if (sm && x->block_scaled && sm < 100) {
    return exmy__fail(err, errlen, "MXFP8 block scaling (VEC32_UE8M0) needs sm_100 or newer; this device is sm_%d", sm);
  }
  /* Row-major D (m x n) is column-major D^T (n x m) = B^T A^T: cuBLASLt's A
   * is B^T stored n x k (column-major k x n, lda = k, op T) and its B is our
   * A as stored (column-major k x m, ldb = k, op N): the TN layout. */
  p->lt_m = x->n;
  p->lt_n = x->m;
  p->lt_k = x->k;
  p->lt_a_type = x->b_type;
  p->lt_b_type = x->a_type;
  p->lda = x->k;
  p->ldb = x->k;
  p->ldd = x->n;
  p->transpose_b = !x->b_nk;
  p->d_elem_bytes = x->d_type == EXMY_DTYPE_F32 ? 4 : x->d_type == EXMY_DTYPE_BF16 ? 2 : 1;
  if (x->block_scaled) {
    p->scale_cols = x->k / 32;
    p->a_scale_bytes = round_up(x->m, 128) * round_up(p->scale_cols, 4);
    p->b_scale_bytes = round_up(x->n, 128) * round_up(p->scale_cols, 4);
  }
  return 0;
}
