/* bench/scaling: the scaling recipes current, delayed, mx, mx:ocp and block:1x128
 * quantizing a 2-D float32 tensor of 2^26 elements (8192 x 8192) to e4m3fn
 * (rne, saturating) with 1 and 2 threads, as a training step does it
 * (exmy_recipe_quantize_into a tensor made before: no allocation) and, for
 * comparison, with exmy_recipe_quantize allocating a fresh tensor each time, beside a plain parallel copy of the
 * same float32 array, the narrowing copy float32 -> uint8 (the memory limit
 * of an 8-bit quantizer) and the plain exmy_quantize of it (e4m3fn, rne,
 * satfinite), all measured in the same run, interleaved, best of 5.
 * Prints elements/s, GB/s (4 bytes read + 1 written per element for the
 * quantizers, 4 + 4 for the copy; scales, amax passes and re-reads are not
 * counted) and the ratios recipe/narrowing copy and recipe/quantize.
 * Recipe timings include, for delayed, exmy_recipe_step; the "alloc" column
 * also includes exmy_recipe_quantize's allocation of the qtensor and the first
 * touch of its fresh pages (the qtensor is freed outside the timed region).
 * Goal (issue 12): every recipe >= 0.5 of the narrowing copy (/narrow).
 * usage: bench/scaling [log2(elements), 12..30, default 26] */
#include "exmy.h"
#include "bench/bench.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 5


static const char *const recipe_text[] = {"current", "delayed", "mx", "mx:ocp", "block:1x128"};
#define NRECIPES (sizeof recipe_text / sizeof recipe_text[0])

int main(int argc, char **argv) {
  int lg = 26;
  if (argc > 1) {
    char *end;
    long v = strtol(argv[1], &end, 10);
    if (!*argv[1] || *end || v < 12 || v > 30) {
      fprintf(stderr, "bench/scaling: log2(elements) '%s' out of range (accepted: an integer 12..30)\n", argv[1]);
      return 2;
    }
    lg = (int)v;
  }
  /* rows x cols = 2^lg; cols a multiple of 128 (the block width) */
  int lc = (lg + 1) / 2 < 7 ? 7 : (lg + 1) / 2;
  size_t cols = (size_t)1 << lc, rows = (size_t)1 << (lg - lc), n = rows * cols;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  uint8_t *q = malloc(n), *z = malloc(n);
  if (!x || !y || !q || !z) { fprintf(stderr, "bench/scaling: out of memory\n"); return 1; }
  bench_fill(x, n);
  exmy_format f;
  char err[EXMY_ERRLEN];
  if (exmy_format_parse("e4m3fn", &f, err, sizeof err)) { fprintf(stderr, "bench/scaling: %s\n", err); return 1; }
  exmy_rounding r = exmy_rounding_default();
  r.sat = EXMY_SAT_FINITE;
  exmy_recipe rec[NRECIPES];
  exmy_recipe_state st[NRECIPES];
  for (size_t k = 0; k < NRECIPES; k++)
    if (exmy_recipe_parse(recipe_text[k], &rec[k], err, sizeof err) ||
        exmy_recipe_state_new(&rec[k], &st[k], err, sizeof err)) {
      fprintf(stderr, "bench/scaling: %s\n", err);
      return 1;
    }
  memset(y, 0, n * sizeof *y); /* touch pages */
  memset(q, 0, n);
  memset(z, 0, n);
  printf("bench/scaling: %zu x %zu float32 (%zu elements) -> e4m3fn (rne, satfinite), best of %d runs\n", rows, cols,
         n, REPS);
  printf("goal: every recipe >= 0.5 x narrowing copy float32 -> uint8 (elements/s), quantizing into a tensor made "
         "before (exmy_recipe_quantize_into); alloc/narrow: exmy_recipe_quantize allocating a fresh tensor each time\n");
  printf("%-8s %-12s %10s %8s %8s %8s %13s\n", "threads", "", "Gelem/s", "GB/s", "/narrow", "/quant", "alloc/narrow");
  exmy_qtensor kept[NRECIPES];
  memset(kept, 0, sizeof kept);
  unsigned sum = 0;
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    double tc = 1e30, tn = 1e30, tq = 1e30, tr[NRECIPES], ta[NRECIPES];
    for (size_t k = 0; k < NRECIPES; k++) tr[k] = ta[k] = 1e30;
    for (int rep = 0; rep < REPS; rep++) {
      double t0 = bench_now();
      bench_copy_parallel(y, x, n);
      double t1 = bench_now();
      exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, q, NULL, NULL, 0);
      double t2 = bench_now();
      bench_narrow_parallel(z, x, n);
      double t2n = bench_now();
      if (t1 - t0 < tc) tc = t1 - t0;
      if (t2 - t1 < tq) tq = t2 - t1;
      if (t2n - t2 < tn) tn = t2n - t2;
      for (size_t k = 0; k < NRECIPES; k++) {
        exmy_qtensor qt;
        double t3 = bench_now();
        if (exmy_recipe_quantize(&rec[k], &f, &r, x, rows, cols, &st[k], &qt, NULL, err, sizeof err)) {
          fprintf(stderr, "bench/scaling: %s: %s\n", recipe_text[k], err);
          return 1;
        }
        exmy_recipe_step(&rec[k], &st[k]); /* no-op except for delayed */
        double t4 = bench_now();
        if (t4 - t3 < ta[k]) ta[k] = t4 - t3;
        for (size_t i = 0; i < n; i += 4097) sum += ((const uint8_t *)qt.codes)[i];
        exmy_qtensor_free(&qt);
        /* steady state: into the tensor kept from the last call (the first
         * call of all allocates it; rep 0 is never the best after that) */
        double t5 = bench_now();
        if (exmy_recipe_quantize_into(&rec[k], &f, &r, x, rows, cols, &st[k], &kept[k], NULL, err, sizeof err)) {
          fprintf(stderr, "bench/scaling: %s: %s\n", recipe_text[k], err);
          return 1;
        }
        exmy_recipe_step(&rec[k], &st[k]);
        double t6 = bench_now();
        if (rep > 0 || threads > 1) /* rep 0 of 1 thread allocated */
          if (t6 - t5 < tr[k]) tr[k] = t6 - t5;
        for (size_t i = 0; i < n; i += 4097) sum += ((const uint8_t *)kept[k].codes)[i];
      }
    }
    double ec = (double)n / tc, en = (double)n / tn, eq = (double)n / tq;
    printf("%-8d %-12s %10.3f %8.2f %8s %8s\n", threads, "narrow copy", en * 1e-9, en * 5e-9, "1.00", "");
    printf("%-8d %-12s %10.3f %8.2f %8.2f %8s\n", threads, "float copy", ec * 1e-9, ec * 8e-9, ec / en, "");
    printf("%-8d %-12s %10.3f %8.2f %8.2f %8s\n", threads, "quantize", eq * 1e-9, eq * 5e-9, eq / en, "1.00");
    for (size_t k = 0; k < NRECIPES; k++) {
      double e = (double)n / tr[k], ea = (double)n / ta[k];
      printf("%-8d %-12s %10.3f %8.2f %8.2f %8.2f %13.2f%s\n", threads, recipe_text[k], e * 1e-9, e * 5e-9, e / en,
             e / eq, ea / en, e / en >= 0.5 ? "" : "  below goal");
    }
  }
  /* keep the results live */
  for (size_t i = 0; i < n; i += 4097) sum += q[i] + z[i] + (unsigned)y[i];
  printf("(checksum %u)\n", sum);
  for (size_t k = 0; k < NRECIPES; k++) {
    exmy_recipe_state_free(&st[k]);
    exmy_qtensor_free(&kept[k]);
  }
  free(x); free(y); free(q); free(z);
  return 0;
}
