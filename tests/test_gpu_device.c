/* test_gpu_device.c: the CUDA kernels on a real device (exit 77 without
 * CUDA or without a device): the generic quantization kernel against
 * exmy_quantize (codes and flags, every mode incl. stochastic rounding), the
 * hardware conversions against exmy (NaN compared as a class: cuda_fp8.h
 * returns one NaN code for both signs), the float32 range sweep, a small
 * cuBLASLt FP8 GEMM against the CPU model of this GPU, and the probe of the
 * raw mma.sync engine against that model's parameters. */
#include "tests/testutil.h"

#include <math.h>

static int same_code(const exmy_format *f, uint64_t a, uint64_t b, int nan_class) {
  if (a == b) return 1;
  return nan_class && exmy_classify(f, a) == EXMY_CLASS_NAN && exmy_classify(f, b) == EXMY_CLASS_NAN;
}

int main(void) {
  exmy_gpu_info info;
  char err[EXMY_ERRLEN];
  /* no usable device (or no CUDA build): exmy_gpu_query fails saying why */
  if (exmy_gpu_query(0, &info, err, sizeof err)) {
    printf("test_gpu_device: skipped: %s\n", err);
    return 77;
  }
  int rc;
  printf("device 0: %s, sm_%d\n", info.name, info.sm);
  uint64_t st = tu_seed(99);
  const size_t n = 1 << 20;
  uint32_t *x = malloc(n * 4);
  uint64_t *c1 = malloc(n * 8), *c2 = malloc(n * 8);
  for (size_t i = 0; i < n; i++) x[i] = (uint32_t)tu_next(&st);
  for (size_t i = 0; i < 65536; i++) x[i] = (uint32_t)i << 16; /* every bf16 value as f32 */

  /* generic kernel */
  const char *fmts[] = {"e4m3fn", "e5m2", "e3m4", "e2m1fn", "e8m0fnu", "bf16", "f16", "binary8p3se", "e4m3fnuz"};
  for (size_t fi = 0; fi < sizeof fmts / sizeof *fmts; fi++) {
    exmy_format f = tu_format(fmts[fi]);
    for (int mode = 0; mode <= EXMY_SR; mode++) {
      exmy_rounding r = exmy_rounding_default();
      r.mode = (exmy_round_mode)mode;
      r.sat = (exmy_saturation)(tu_next(&st) % 3);
      r.ftz = tu_next(&st) % 4 == 0;
      r.daz = tu_next(&st) % 4 == 0;
      r.seed = tu_next(&st);
      unsigned fl1 = 0, fl2 = 0;
      int rc1 = exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 5, c1, &fl1, err, sizeof err);
      CHECK(rc1 == 0, "quantize %s: %s", f.name, err);
      rc = exmy_gpu_quantize(&f, &r, 0, EXMY_DTYPE_F32, x, n, 5, c2, &fl2, err, sizeof err);
      CHECK(rc == 0, "gpu quantize %s: %s", f.name, err);
      long bad = 0;
      for (size_t i = 0; i < n; i++) {
        uint64_t a = exmy_code_get(&f, c1, i), b = exmy_code_get(&f, c2, i);
        if (a != b && bad++ < 3) printf("  %s %s x=0x%08x host 0x%llx device 0x%llx\n", f.name,
                                       exmy_round_mode_name(r.mode), x[i], (unsigned long long)a, (unsigned long long)b);
      }
      CHECK(bad == 0 && fl1 == fl2, "generic kernel %s %s: %ld codes differ, flags %x vs %x", f.name,
            exmy_round_mode_name(r.mode), bad, fl1, fl2);
    }
  }
  /* hardware conversions, f32 and bf16 sources */
  for (int fi = 0; fi < 2; fi++)
    for (int sat = 0; sat < 2; sat++) {
      exmy_format f = tu_format(fi ? "e5m2" : "e4m3fn");
      exmy_rounding r = exmy_rounding_default();
      r.sat = sat ? EXMY_SAT_FINITE : EXMY_SAT_NONE;
      int rc1 = exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, c1, NULL, err, sizeof err);
      rc = exmy_gpu_quantize(&f, &r, 1, EXMY_DTYPE_F32, x, n, 0, c2, NULL, err, sizeof err);
      CHECK(rc1 == 0 && rc == 0, "hw quantize: %s", err);
      long bad = 0;
      for (size_t i = 0; i < n; i++) bad += !same_code(&f, ((uint8_t *)c1)[i], ((uint8_t *)c2)[i], 1);
      CHECK(bad == 0, "hw %s sat %d f32: %ld codes differ", f.name, sat, bad);
      uint16_t *h = malloc(65536 * 2);
      for (size_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
      rc1 = exmy_quantize(&f, &r, EXMY_DTYPE_BF16, h, 65536, 0, c1, NULL, err, sizeof err);
      rc = rc1 ? rc1 : exmy_gpu_quantize(&f, &r, 1, EXMY_DTYPE_BF16, h, 65536, 0, c2, NULL, err, sizeof err);
      bad = 0;
      for (size_t i = 0; i < 65536; i++) bad += !same_code(&f, ((uint8_t *)c1)[i], ((uint8_t *)c2)[i], 1);
      CHECK(rc == 0 && bad == 0, "hw %s sat %d bf16: %ld codes differ (%s)", f.name, sat, bad, rc ? err : "");
      free(h);
      /* the range sweep around 1.0 */
      for (size_t i = 0; i < n; i++) x[i] = 0x3f000000u + (uint32_t)i;
      rc1 = exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0x3f000000u, c1, NULL, err, sizeof err);
      rc = rc1 ? rc1 : exmy_gpu_quantize_f32_range(&f, &r, 1, 0x3f000000u, n, c2, NULL, err, sizeof err);
      CHECK(rc == 0 && !memcmp(c1, c2, n), "range sweep %s: %s", f.name, rc ? err : "codes differ");
      for (size_t i = 0; i < n; i++) x[i] = (uint32_t)tu_next(&st);
    }

  /* cuBLASLt FP8 GEMM against the model of this GPU */
  const char *model = exmy_gpu_model_for_sm(info.sm, 0);
  if (model) {
    const size_t m = 64, nn = 48, k = 256;
    exmy_format e4 = tu_format("e4m3fn"), f32 = tu_format("f32");
    uint8_t *A = malloc(m * k), *B = malloc(k * nn);
    float *D = malloc(m * nn * 4), *W = malloc(m * nn * 4);
    for (size_t i = 0; i < m * k; i++) do A[i] = (uint8_t)tu_next(&st); while ((A[i] & 0x7f) == 0x7f);
    for (size_t i = 0; i < k * nn; i++) do B[i] = (uint8_t)tu_next(&st); while ((B[i] & 0x7f) == 0x7f);
    exmy_gpu_gemm_args g;
    exmy_gpu_gemm_args_init(&g);
    g.m = m; g.n = nn; g.k = k; g.a = A; g.b = B; g.d = D;
    unsigned gfl = 0;
    rc = exmy_gpu_gemm_run(&g, &gfl, err, sizeof err);
    CHECK(rc == 0, "gpu gemm: %s", err);
    CHECK(gfl == 0, "gpu gemm of finite e4m3 into f32: flags %u (no NaN or inf in D)", gfl);
    exmy_accum acc;
    exmy_accum_parse(model, &acc, err, sizeof err);
    exmy_qtensor qa, qb;
    exmy_qtensor_view(&e4, A, m, k, NULL, &qa);
    exmy_qtensor_view(&e4, B, k, nn, NULL, &qb);
    exmy_gemm_args ga;
    exmy_gemm_args_init(&ga);
    ga.a = &qa; ga.b = &qb; ga.d_fmt = &f32; ga.accum = &acc;
    CHECK(exmy_gemm(&ga, W, NULL, NULL, err, sizeof err) == 0, "cpu gemm: %s", err);
    long bad = 0;
    for (size_t i = 0; i < m * nn; i++) bad += memcmp(&D[i], &W[i], 4) != 0;
    CHECK(bad == 0, "cuBLASLt vs %s: %ld of %zu outputs differ", model, bad, m * nn);
    free(A); free(B); free(D); free(W);

    /* the raw mma.sync engine: the model's parameters without promotion */
    exmy_gpu_probe_ctx ctx = {0, EXMY_GPU_ENGINE_MMA};
    exmy_probe_engine eng;
    exmy_probe_result pr;
    if (exmy_gpu_probe_engine(&ctx, &eng, err, sizeof err) == 0) {
      CHECK(exmy_probe_run(&eng, &e4, &e4, stdout, &pr, err, sizeof err) == 0, "probe: %s", err);
      /* the model describes mma.sync only on Ada; elsewhere cuBLASLt uses other instructions */
      if (info.sm == 89)
      CHECK(pr.complete && pr.g == acc.tc_group && pr.f == acc.tc_frac && pr.out == acc.tc_out_frac &&
                pr.align_rne == acc.tc_align_rne && pr.norm_rne == acc.tc_norm_rne && pr.promote == 0,
            "mma probe: %s (model %s): %s", pr.accum, model, pr.notes);
    }
  }
  free(x); free(c1); free(c2);
  return tu_finish("test_gpu_device");
}
