/* bench/quantize: float32 -> e4m3fn codes (rne, saturating) over 2^26
 * elements with 1 and 2 threads, beside a plain parallel copy of the same
 * float32 array measured in the same run.  Prints elements/s, GB/s (bytes
 * read + written) and the ratio quantize/copy in elements per second.
 * Goal (issue 3): ratio >= 0.8 with 2 threads.
 * usage: bench/quantize [log2(elements), default 26] */
#include "exmy.h"
#include "bench/bench.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


int main(int argc, char **argv) {
  int lg = argc > 1 ? atoi(argv[1]) : 26;
  if (lg < 10 || lg > 30) {
    fprintf(stderr, "bench/quantize: log2(elements) %s out of range (10..30)\n", argv[1]);
    return 2;
  }
  size_t n = (size_t)1 << lg;
  float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  uint8_t *q = malloc(n);
  if (!x || !y || !q) { fprintf(stderr, "bench/quantize: out of memory\n"); return 1; }
  bench_fill(x, n);
  exmy_format f;
  exmy_format_parse("e4m3fn", &f, NULL, 0);
  exmy_rounding r = exmy_rounding_default();
  r.sat = EXMY_SAT_FINITE;
  memset(y, 0, n * sizeof *y); /* touch pages */
  memset(q, 0, n);
  printf("bench/quantize: %zu float32 -> e4m3fn (rne, satfinite), best of 5 runs\n", n);
  printf("%-8s %-10s %12s %9s %12s %9s %7s\n", "threads", "", "Gelem/s", "GB/s", "copy Gel/s", "copy GB/s", "ratio");
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    double tq = 1e30, tc = 1e30;
    for (int rep = 0; rep < 5; rep++) {
      double t0 = bench_now();
      exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, q, NULL, NULL, 0);
      double t1 = bench_now();
      bench_copy_parallel(y, x, n);
      double t2 = bench_now();
      if (t1 - t0 < tq) tq = t1 - t0;
      if (t2 - t1 < tc) tc = t2 - t1;
    }
    double eq = (double)n / tq, ec = (double)n / tc;
    printf("%-8d %-10s %12.3f %9.2f %12.3f %9.2f %7.2f\n", threads, "quantize", eq * 1e-9, eq * 5e-9, ec * 1e-9,
           ec * 8e-9, eq / ec);
  }
  /* keep the results live */
  unsigned sum = 0;
  for (size_t i = 0; i < n; i += 4097) sum += q[i] + (unsigned)y[i];
  printf("(checksum %u)\n", sum);
  free(x); free(y); free(q);
  return 0;
}
