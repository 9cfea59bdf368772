/* bench/quantize: float32 -> e4m3fn codes (satfinite) over 2^26 elements
 * with 1 and 2 threads, in rne and in sr (64 random bits), on activation-like
 * values and on the same values with the negatives zeroed (ReLU-like: half
 * zeros, as activations and sparse gradients have them), beside the
 * narrowing copy float32 -> uint8 of the same array (the memory limit of a
 * quantizer to 8 bits: 4 bytes read, 1 written per element) and a plain
 * float32 copy, all measured in the same run, interleaved, best of 5.
 * Prints elements/s and the ratio to the narrowing copy.
 * Goal (issue 12): rne and sr >= 0.5 of the narrowing copy.
 * usage: bench/quantize [log2(elements), default 26] */
#include "exmy.h"
#include "bench/bench.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 5

int main(int argc, char **argv) {
  int lg = argc > 1 ? atoi(argv[1]) : 26;
  if (lg < 10 || lg > 30) {
    fprintf(stderr, "bench/quantize: log2(elements) %s out of range (10..30)\n", argv[1]);
    return 2;
  }
  size_t n = (size_t)1 << lg;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *xr = malloc(n * sizeof *xr);
  uint8_t *q = malloc(n), *z = malloc(n);
  if (!x || !y || !xr || !q || !z) { fprintf(stderr, "bench/quantize: out of memory\n"); return 1; }
  bench_fill(x, n);
  for (size_t i = 0; i < n; i++) xr[i] = x[i] > 0.0f ? x[i] : 0.0f;
  exmy_format f;
  exmy_format_parse("e4m3fn", &f, NULL, 0);
  exmy_rounding rr = exmy_rounding_default(), rs;
  rr.sat = EXMY_SAT_FINITE;
  rs = rr;
  rs.mode = EXMY_SR;
  rs.seed = 42;
  memset(y, 0, n * sizeof *y); /* touch pages */
  memset(q, 0, n);
  memset(z, 0, n);
  printf("bench/quantize: %zu float32 -> e4m3fn (satfinite), best of %d runs\n", n, REPS);
  printf("anchor: narrowing copy float32 -> uint8 (4 bytes read + 1 written per element), same run\n");
  printf("%-8s %-12s %10s %8s\n", "threads", "", "Gelem/s", "/narrow");
  unsigned sum = 0;
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    /* rows 2..5: rne, sr, then the same on the ReLU-like input */
    const float *qin[] = {x, x, xr, xr};
    const exmy_rounding *qr[] = {&rr, &rs, &rr, &rs};
    double t[6] = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30};
    for (int rep = 0; rep < REPS; rep++) {
      double t0 = bench_now();
      bench_narrow_parallel(z, x, n);
      double t1 = bench_now();
      bench_copy_parallel(y, x, n);
      double t2 = bench_now();
      if (t1 - t0 < t[0]) t[0] = t1 - t0;
      if (t2 - t1 < t[1]) t[1] = t2 - t1;
      for (int k = 0; k < 4; k++) {
        const double a = bench_now();
        exmy_quantize(&f, qr[k], EXMY_DTYPE_F32, qin[k], n, 0, q, NULL, NULL, 0);
        const double b = bench_now();
        if (b - a < t[2 + k]) t[2 + k] = b - a;
        for (size_t i = 0; i < n; i += 4097) sum += q[i];
      }
    }
    const double en = (double)n / t[0];
    const char *name[] = {"narrow copy", "float copy", "rne", "sr", "rne relu", "sr relu"};
    for (int k = 0; k < 6; k++) {
      const double e = (double)n / t[k];
      printf("%-8d %-12s %10.3f %8.3f%s\n", threads, name[k], e * 1e-9, e / en,
             k >= 2 && e / en < 0.5 ? "  below goal (0.5)" : "");
    }
  }
  /* keep the results live */
  for (size_t i = 0; i < n; i += 4097) sum += q[i] + z[i] + (unsigned)y[i];
  printf("(checksum %u)\n", sum);
  free(x); free(y); free(xr); free(q); free(z);
  return 0;
}
