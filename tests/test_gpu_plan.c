/* test_gpu_plan.c: the plain-C side of the GPU code, on the CPU:
 *  - which tc preset a GPU gets (sm 89/90/100/120, fast accumulation), and
 *    that every preset named parses;
 *  - what the hardware conversions accept;
 *  - the cuBLASLt FP8 GEMM plan: every rejected argument gives an error that
 *    names the bad value, and the TN layout is right: executing the plan as
 *    cuBLASLt would (column-major, op(A) = T, op(B) = N) on small integer
 *    matrices gives the row-major product A B;
 *  - the MXFP8 scale layout maps the scales one-to-one into the padded tensor. */
#include "tests/testutil.h"

#include <math.h>

static void check_model(int sm, int fast, const char *want) {
  const char *got = exmy_gpu_model_for_sm(sm, fast);
  CHECK((!want && !got) || (want && got && !strcmp(want, got)), "sm %d fast %d: got %s, want %s", sm, fast,
        got ? got : "NULL", want ? want : "NULL");
  if (got) {
    exmy_accum acc;
    char err[EXMY_ERRLEN];
    CHECK(exmy_accum_parse(got, &acc, err, sizeof err) == 0 && acc.kind == EXMY_ACCUM_TC, "%s does not parse: %s", got, err);
  }
}

/* Bad arguments (EXMY_GPU_INVALID before 1.0): -1 with an error naming
 * needle, for this sm and, being an argument error rather than a device
 * limit, with sm = 0 too. */
static void expect_error(const exmy_gpu_gemm_args *x, int sm, const char *needle) {
  exmy_gpu_gemm_plan p;
  char err[EXMY_ERRLEN] = "";
  int rc = exmy_gpu_gemm_plan_make(x, sm, &p, err, sizeof err);
  CHECK(rc == -1 && strstr(err, needle), "plan sm %d: status %d (want -1), error '%s' should name '%s'", sm, rc, err,
        needle);
  if (sm != 0) {
    err[0] = 0;
    rc = exmy_gpu_gemm_plan_make(x, 0, &p, err, sizeof err);
    CHECK(rc == -1 && strstr(err, needle), "plan sm 0: status %d (want -1), error '%s' should name '%s'", rc, err,
          needle);
  }
}

/* Valid arguments this device cannot do (EXMY_GPU_UNSUPPORTED before 1.0):
 * the argument check (sm = 0) passes, the plan for sm fails naming needle. */
static void expect_unsupported(const exmy_gpu_gemm_args *x, int sm, const char *needle) {
  exmy_gpu_gemm_plan p;
  char err[EXMY_ERRLEN] = "";
  int rc0 = exmy_gpu_gemm_plan_make(x, 0, &p, err, sizeof err);
  CHECK(rc0 == 0, "plan sm 0: valid arguments rejected: '%s'", err);
  err[0] = 0;
  int rc = exmy_gpu_gemm_plan_make(x, sm, &p, err, sizeof err);
  CHECK(rc == -1 && strstr(err, needle), "plan sm %d: status %d (want -1), error '%s' should name '%s'", sm, rc, err,
        needle);
}

/* Execute the plan as cuBLASLt does, in column-major terms. */
static void run_plan(const exmy_gpu_gemm_plan *p, const double *ltA, const double *ltB, double *D) {
  for (size_t j = 0; j < p->lt_n; j++)
    for (size_t i = 0; i < p->lt_m; i++) {
      double s = 0;
      for (size_t l = 0; l < p->lt_k; l++) s += ltA[i * p->lda + l] * ltB[j * p->ldb + l]; /* op(A)(i,l) = A(l,i) */
      D[j * p->ldd + i] = s;
    }
}

static void check_layout(size_t m, size_t n, size_t k, int b_nk, uint64_t *st) {
  double *A = malloc(m * k * sizeof *A), *B = malloc(k * n * sizeof *B), *Bt = malloc(k * n * sizeof *B);
  double *D = calloc(m * n, sizeof *D);
  for (size_t i = 0; i < m * k; i++) A[i] = (double)(tu_next(st) % 7) - 3;
  for (size_t i = 0; i < k * n; i++) B[i] = (double)(tu_next(st) % 7) - 3;
  static uint8_t dummy[16];
  exmy_gpu_gemm_args x;
  exmy_gpu_gemm_args_init(&x);
  x.m = m; x.n = n; x.k = k; x.b_nk = b_nk;
  x.a = x.b = x.d = dummy;
  exmy_gpu_gemm_plan p;
  char err[EXMY_ERRLEN];
  CHECK(exmy_gpu_gemm_plan_make(&x, 90, &p, err, sizeof err) == 0, "plan %zux%zux%zu: %s", m, n, k, err);
  CHECK(p.transpose_b == !b_nk && p.lt_a_type == x.b_type && p.lt_b_type == x.a_type, "plan operands");
  /* what the wrapper hands cuBLASLt: B as n x k (transposed unless b_nk), A as stored */
  for (size_t l = 0; l < k; l++)
    for (size_t j = 0; j < n; j++) Bt[j * k + l] = B[l * n + j];
  run_plan(&p, Bt, A, D);
  long bad = 0;
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0;
      for (size_t l = 0; l < k; l++) s += A[i * k + l] * B[l * n + j];
      bad += D[i * n + j] != s;
    }
  CHECK(bad == 0, "layout %zux%zux%zu b_nk %d: %ld elements of D differ from row-major A B", m, n, k, b_nk, bad);
  free(A); free(B); free(Bt); free(D);
}

int main(void) {
  uint64_t st = tu_seed(7);
  check_model(80, 0, NULL);
  check_model(86, 1, NULL);
  check_model(89, 0, "tc:ada");
  check_model(89, 1, "tc:ada-fastacc");
  check_model(90, 0, "tc:hopper");
  check_model(90, 1, "tc:hopper-fastacc");
  check_model(100, 0, "tc:blackwell");
  check_model(100, 1, "tc:blackwell");
  check_model(120, 0, "tc:blackwell");

  /* hardware conversions */
  exmy_format e4 = tu_format("e4m3fn"), e5 = tu_format("e5m2"), e3 = tu_format("e3m4"), bf = tu_format("bf16");
  exmy_rounding r = exmy_rounding_default();
  char err[EXMY_ERRLEN];
  CHECK(exmy_gpu_hw_quant_check(&e4, &r, EXMY_DTYPE_F32, err, sizeof err) == 0, "e4m3fn rne: %s", err);
  r.sat = EXMY_SAT_FINITE;
  CHECK(exmy_gpu_hw_quant_check(&e5, &r, EXMY_DTYPE_BF16, err, sizeof err) == 0, "e5m2 satfinite bf16: %s", err);
  CHECK(exmy_gpu_hw_quant_check(&e3, &r, EXMY_DTYPE_F32, err, sizeof err) && strstr(err, "e3m4"), "e3m4: '%s'", err);
  CHECK(exmy_gpu_hw_quant_check(&bf, &r, EXMY_DTYPE_F32, err, sizeof err) && strstr(err, "bf16"), "bf16: '%s'", err);
  r.mode = EXMY_SR;
  CHECK(exmy_gpu_hw_quant_check(&e4, &r, EXMY_DTYPE_F32, err, sizeof err) && strstr(err, "sr"), "sr: '%s'", err);
  r.mode = EXMY_RNE; r.sat = EXMY_SAT_PROPAGATE;
  CHECK(exmy_gpu_hw_quant_check(&e4, &r, EXMY_DTYPE_F32, err, sizeof err) && strstr(err, "propagate"), "propagate: '%s'", err);
  r.sat = EXMY_SAT_NONE; r.ftz = 1;
  CHECK(exmy_gpu_hw_quant_check(&e4, &r, EXMY_DTYPE_F32, err, sizeof err) && strstr(err, "ftz"), "ftz: '%s'", err);
  /* the quantizers' shared argument check: a rounding, a float source */
  r.ftz = 0;
  CHECK(exmy_gpu_hw_quant_check(&e4, NULL, EXMY_DTYPE_F32, err, sizeof err) && strstr(err, "rnd"), "NULL rnd: '%s'", err);
  CHECK(exmy_gpu_hw_quant_check(&e4, &r, EXMY_DTYPE_U8, err, sizeof err) && strstr(err, "uint8"), "uint8 source: '%s'", err);
  CHECK(exmy_gpu_quantize(&e4, NULL, 0, EXMY_DTYPE_F32, NULL, 0, 0, NULL, NULL, err, sizeof err) && strstr(err, "rnd"),
        "gpu_quantize NULL rnd: '%s'", err);
  CHECK(exmy_gpu_quantize_dev(&e4, &r, 0, EXMY_DTYPE_E4M3FN, NULL, 0, 0, NULL, NULL, err, sizeof err) &&
            strstr(err, "float8_e4m3fn"), "gpu_quantize_dev fp8 source: '%s'", err);

  /* argument checks: each names the bad value */
  static uint8_t buf[64];
  exmy_gpu_gemm_args x0, x;
  exmy_gpu_gemm_args_init(&x0);
  x0.m = 32; x0.n = 48; x0.k = 64;
  x0.a = x0.b = x0.d = buf;
  exmy_gpu_gemm_plan p;
  CHECK(exmy_gpu_gemm_plan_make(&x0, 0, &p, err, sizeof err) == 0, "valid args rejected: %s", err);
  CHECK(p.lt_m == 48 && p.lt_n == 32 && p.lt_k == 64 && p.lda == 64 && p.ldb == 64 && p.ldd == 48, "plan sizes");
  x = x0; x.k = 40; expect_error(&x, 0, "k = 40");
  x = x0; x.n = 20; expect_error(&x, 0, "n = 20");
  x = x0; x.m = 0; expect_error(&x, 0, "m = 0");
  x = x0; x.a_type = x.b_type = EXMY_DTYPE_E5M2; expect_error(&x, 0, "both e5m2");
  x = x0; x.a_type = EXMY_DTYPE_E5M2; CHECK(exmy_gpu_gemm_plan_make(&x, 90, &p, err, sizeof err) == 0, "e5m2 x e4m3: %s", err);
  x = x0; x.b_type = EXMY_DTYPE_E5M2; CHECK(exmy_gpu_gemm_plan_make(&x, 90, &p, err, sizeof err) == 0, "e4m3 x e5m2: %s", err);
  x = x0; x.a_type = EXMY_DTYPE_BF16; expect_error(&x, 0, "A type bfloat16");
  x = x0; x.d_type = EXMY_DTYPE_E5M2; expect_error(&x, 0, "D type float8_e5m2");
  x = x0; x.scale_d = 2; expect_error(&x, 0, "scale_d");
  x = x0; float am; x.amax_d = &am; expect_error(&x, 0, "amax_d");
  x = x0; x.d_type = EXMY_DTYPE_E4M3FN; x.scale_d = 2; x.amax_d = &am;
  CHECK(exmy_gpu_gemm_plan_make(&x, 90, &p, err, sizeof err) == 0 && p.d_elem_bytes == 1, "e4m3 D: %s", err);
  x = x0; x.alpha = NAN; expect_error(&x, 0, "alpha nan");
  x = x0; x.device_ptrs = 1; x.a = buf + 1; expect_error(&x, 0, "a = ");
  x = x0; x.device_ptrs = 1; x.d = buf + 8; expect_error(&x, 0, "d = ");
  x = x0; x.a = buf + 1; CHECK(exmy_gpu_gemm_plan_make(&x, 90, &p, err, sizeof err) == 0, "host pointers need no alignment");
  x = x0; expect_unsupported(&x, 80, "sm_80");
  x = x0; x.block_scaled = 1; x.a_scales = x.b_scales = buf; expect_unsupported(&x, 90, "sm_90");
  x = x0; x.block_scaled = 1; x.a_scales = x.b_scales = buf; x.k = 48; expect_error(&x, 100, "k = 48");
  x = x0; x.block_scaled = 1; x.a_scales = buf; expect_error(&x, 100, "b_scales");
  x = x0; x.block_scaled = 1; x.a_scales = x.b_scales = buf; x.scale_a = 2; expect_error(&x, 100, "scale_a = 2");
  x = x0; x.block_scaled = 1; x.a_scales = x.b_scales = buf;
  CHECK(exmy_gpu_gemm_plan_make(&x, 100, &p, err, sizeof err) == 0 && p.scale_cols == 2 && p.a_scale_bytes == 128 * 4 &&
        p.b_scale_bytes == 128 * 4, "MXFP8 plan: %s", err);

  /* the layout, executed */
  check_layout(16, 16, 16, 0, &st);
  check_layout(3, 32, 48, 0, &st);
  check_layout(33, 16, 32, 1, &st);
  check_layout(1, 64, 16, 0, &st);

  /* MXFP8 scale offsets: one-to-one into the padded tensor */
  size_t shapes[][2] = {{1, 1}, {128, 4}, {130, 5}, {300, 9}, {256, 8}};
  for (size_t s = 0; s < 5; s++) {
    size_t rows = shapes[s][0], cols = shapes[s][1];
    size_t bytes = (rows + 127) / 128 * 128 * ((cols + 3) / 4 * 4);
    uint8_t *seen = calloc(bytes, 1);
    long bad = 0;
    for (size_t i = 0; i < rows; i++)
      for (size_t j = 0; j < cols; j++) {
        size_t o = exmy_gpu_mx_scale_offset(i, j, cols);
        if (o >= bytes || seen[o]++) bad++;
      }
    CHECK(bad == 0, "mx scale offsets %zux%zu: %ld out of range or repeated", rows, cols, bad);
    free(seen);
  }
  CHECK(exmy_gpu_mx_scale_offset(0, 1, 4) == 1 && exmy_gpu_mx_scale_offset(1, 0, 4) == 16 &&
        exmy_gpu_mx_scale_offset(32, 0, 4) == 4 && exmy_gpu_mx_scale_offset(128, 0, 4) == 512 &&
        exmy_gpu_mx_scale_offset(0, 4, 8) == 512, "mx scale offsets of the 32x4x4 tile");
  return tu_finish("test_gpu_plan");
}
