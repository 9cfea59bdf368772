/* bench/gemm: the emulated GEMM's models beside OpenBLAS SGEMM on the same
 * shapes in the same run (e4m3fn x e4m3fn, per-tensor current scaling,
 * D in f32).  Goals (issue 5, 2 threads): fp32 >= 0.5 of SGEMM, tc >= 0.25,
 * exact >= 0.05.  Prints GFLOP/s (2mnk / s) and the ratio to SGEMM. */
#include "bench/bench.h"
#include "exmy.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* OpenBLAS's own thread count (its pthreads build ignores OMP_NUM_THREADS). */
extern void openblas_set_num_threads(int num_threads);
extern char *openblas_get_corename(void);

static double best_of(int reps, double (*fn)(void *), void *ctx) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    const double t = fn(ctx);
    if (t < best) best = t;
  }
  return best;
}

typedef struct sg_ctx {
  int n;
  const float *a, *b;
  float *c;
} sg_ctx;

static double run_sgemm(void *v) {
  sg_ctx *c = v;
  const double t0 = bench_now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->n, c->n, c->n, 1.0f, c->a, c->n, c->b, c->n, 0.0f, c->c,
              c->n);
  return bench_now() - t0;
}

typedef struct em_ctx {
  exmy_gemm_args *g;
  float *d;
} em_ctx;

static double run_emu(void *v) {
  em_ctx *c = v;
  char err[EXMY_ERRLEN];
  const double t0 = bench_now();
  if (exmy_gemm(c->g, c->d, NULL, NULL, err, sizeof err)) {
    fprintf(stderr, "bench/gemm: %s\n", err);
    exit(1);
  }
  return bench_now() - t0;
}

int main(int argc, char **argv) {
  /* The anchor runs on the CPU's best SGEMM kernel: OPENBLAS_CORETYPE (set on
   * some machines here, forcing Haswell) is read when OpenBLAS loads, so drop
   * it and OPENBLAS_L2_SIZE and start again. */
  if (getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE")) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    execv("/proc/self/exe", argv);
    perror("bench/gemm: re-exec without OPENBLAS_CORETYPE");
    return 1;
  }
  const int threads = argc > 1 ? atoi(argv[1]) : 2;
  static const int sizes[] = {1024, 2048};
  static const char *models[] = {"fp32", "tc", "chunk=128,inner=fp32", "exact"};
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);
  printf("bench/gemm: e4m3fn x e4m3fn, per-tensor current scaling, D f32, %d threads, best of 3\n", threads);
  printf("anchor: OpenBLAS SGEMM, core %s\n", openblas_get_corename());
  printf("%6s %-24s %10s %10s %8s\n", "n", "model", "GFLOP/s", "SGEMM", "ratio");
  exmy_format e4, f32;
  exmy_format_parse("e4m3fn", &e4, NULL, 0);
  exmy_format_parse("f32", &f32, NULL, 0);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const int n = sizes[s];
    const size_t nn = (size_t)n * n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    bench_fill(a, nn);
    bench_fill(b, nn);
    for (size_t i = 0; i < nn; i++) b[i] *= 0.5f;
    exmy_recipe r;
    exmy_qtensor qa, qb;
    char err[EXMY_ERRLEN];
    exmy_recipe_parse("current", &r, err, sizeof err);
    exmy_rounding sat = exmy_rounding_default(); /* cuda_fp8.h's cast: rne, satfinite */
    sat.sat = EXMY_SAT_FINITE;
    exmy_recipe_quantize(&r, &e4, &sat, a, (size_t)n, (size_t)n, NULL, &qa, NULL, err, sizeof err);
    exmy_recipe_quantize(&r, &e4, &sat, b, (size_t)n, (size_t)n, NULL, &qb, NULL, err, sizeof err);
    /* SGEMM on the dequantized operands: the same values the models multiply */
    exmy_qtensor_dequant_f32(&qa, a);
    exmy_qtensor_dequant_f32(&qb, b);
    sg_ctx sc = {n, a, b, c};
    run_sgemm(&sc); /* warm up */
    const double flop = 2.0 * (double)n * n * n;
    const double ts = best_of(3, run_sgemm, &sc);
    printf("%6d %-24s %10.2f %10.2f %8.3f\n", n, "OpenBLAS sgemm", flop / ts * 1e-9, flop / ts * 1e-9, 1.0);
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
      exmy_accum acc;
      exmy_accum_parse(models[m], &acc, NULL, 0);
      exmy_gemm_args g;
      exmy_gemm_args_init(&g);
      g.a = &qa;
      g.b = &qb;
      g.accum = &acc;
      g.d_fmt = &f32;
      g.threads = threads;
      em_ctx ec = {&g, c};
      const double t = best_of(3, run_emu, &ec);
      printf("%6d %-24s %10.2f %10.2f %8.3f\n", n, models[m], flop / t * 1e-9, flop / ts * 1e-9, ts / t);
      fflush(stdout);
    }
    exmy_qtensor_free(&qa);
    exmy_qtensor_free(&qb);
    free(a), free(b), free(c);
  }
  return 0;
}
