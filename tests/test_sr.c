/* test_sr.c: stochastic rounding.  Every result is one of the two
 * neighbours (rdn / rup results); the frequency of rounding away from zero
 * matches the distance to the lower-magnitude neighbour over the gap within
 * 5 standard deviations (with R random bits, floor(frac*2^R)/2^R exactly);
 * the same seed gives the same output, other seeds or streams give other
 * output; 1 and 2 threads give identical arrays. */
#include "testutil.h"
#include <math.h>
#include <omp.h>

/* Count how often x rounds away from zero over n indices. */
static double freq_up(const exmy_format *f, exmy_rounding *r, double x, long n) {
  exmy_rounding lo = *r, hi = *r;
  lo.mode = EXMY_RTZ;
  hi.mode = x > 0 ? EXMY_RUP : EXMY_RDN;
  uint64_t clo = exmy_from_f64(f, &lo, x, 0, NULL), chi = exmy_from_f64(f, &hi, x, 0, NULL);
  long up = 0, bad = 0;
  for (long i = 0; i < n; i++) {
    uint64_t c = exmy_from_f64(f, r, x, (uint64_t)i, NULL);
    if (c == chi) up++;
    else if (c != clo) bad++;
  }
  CHECK(bad == 0, "%s x=%a: %ld results are neither neighbour (0x%" PRIx64 ", 0x%" PRIx64 ")", f->name, x, bad, clo, chi);
  return (double)up / (double)n;
}

static void check_freq(const exmy_format *f, exmy_rounding *r, double x, double p, long n) {
  double got = freq_up(f, r, x, n);
  double sd = sqrt(p * (1 - p) / (double)n);
  double tol = 5 * sd + 1e-12;
  CHECK(fabs(got - p) <= tol, "%s sr_bits=%d x=%a (%.17g): P(away) %.6f, expected %.6f +- %.6f", f->name, r->sr_bits, x, x,
        got, p, tol);
}

int main(void) {
  uint64_t st = tu_seed(99);
  const long N = 200000;
  const char *names[] = {"e4m3fn", "e5m2", "e2m1fn", "bf16", "e8m3", "e3m2fn"};
  for (int fi = 0; fi < 6; fi++) {
    exmy_format f = tu_format(names[fi]);
    exmy_rounding r = exmy_rounding_default();
    r.mode = EXMY_SR;
    r.seed = tu_next(&st);
    const double fracs[] = {0.5, 0.25, 0.1, 0.9, 0.01, 1.0 / 3.0};
    for (int k = 0; k < 6; k++) {
      /* a normal number: 1 + frac * ulp(1); a subnormal: (1 + frac) * min subnormal; negative too */
      exmy_info in;
      exmy_format_info(&f, &in);
      double ulp1 = in.epsilon;
      double xs[3] = {1 + fracs[k] * ulp1, -(1 + fracs[k] * ulp1) * 2, (1 + fracs[k]) * in.min_subnormal};
      for (int j = 0; j < 3; j++) {
        r.sr_bits = 0;
        check_freq(&f, &r, xs[j], fracs[k], N);
        /* R random bits: the probability is the fraction truncated to R bits */
        for (int R = 1; R <= 6; R += 2) {
          r.sr_bits = R;
          double p = floor(fracs[k] * ldexp(1, R)) / ldexp(1, R);
          check_freq(&f, &r, xs[j], p, N);
        }
      }
    }
    /* random inputs over the whole range: always one of the two neighbours */
    r.sr_bits = 0;
    exmy_info in;
    exmy_format_info(&f, &in);
    for (int i = 0; i < 20000; i++) {
      double x = ldexp(1.0 + ldexp((double)(tu_next(&st) >> 11), -53),
                       (int)(tu_next(&st) % 80) - 40) * ((i & 1) ? 1 : -1);
      if (fabs(x) > in.max_finite) continue;
      exmy_rounding lo = r, hi = r;
      lo.mode = EXMY_RDN;
      hi.mode = EXMY_RUP;
      uint64_t c = exmy_from_f64(&f, &r, x, (uint64_t)i, NULL);
      uint64_t a = exmy_from_f64(&f, &lo, x, 0, NULL), b = exmy_from_f64(&f, &hi, x, 0, NULL);
      CHECK(c == a || c == b, "%s sr x=%a: 0x%" PRIx64 " is neither 0x%" PRIx64 " nor 0x%" PRIx64, f.name, x, c, a, b);
    }
  }
  /* determinism: same seed same codes; other seed / stream differ; threads */
  {
    exmy_format f = tu_format("e4m3fn");
    size_t n = 1 << 20;
    float *x = malloc(n * sizeof *x);
    uint8_t *a = malloc(n), *b = malloc(n), *c = malloc(n);
    for (size_t i = 0; i < n; i++) x[i] = (float)(ldexp((double)(tu_next(&st) >> 11), -53) * 400.0 - 200.0);
    exmy_rounding r = exmy_rounding_default();
    r.mode = EXMY_SR;
    r.seed = 42;
    int rc = 0; /* OR of the return codes: every call must succeed */
    omp_set_num_threads(1);
    rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, a, NULL, NULL, 0);
    omp_set_num_threads(2);
    rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, b, NULL, NULL, 0);
    CHECK(!memcmp(a, b, n), "%s", "sr: 1 thread and 2 threads differ");
    rc |= exmy_quantize_ref(&f, &r, EXMY_DTYPE_F32, x, n, 0, c, NULL, NULL, 0);
    CHECK(!memcmp(a, c, n), "%s", "sr: array and reference differ");
    rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, c, NULL, NULL, 0);
    CHECK(!memcmp(a, c, n), "%s", "sr: same seed twice differs");
    r.seed = 43;
    rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, c, NULL, NULL, 0);
    CHECK(memcmp(a, c, n) != 0, "%s", "sr: seeds 42 and 43 give identical output");
    r.seed = 42;
    r.stream = 1;
    rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, n, 0, c, NULL, NULL, 0);
    CHECK(memcmp(a, c, n) != 0, "%s", "sr: streams 0 and 1 give identical output");
    /* an offset index0 continues the same stream: element i of a sub-array */
    r.stream = 0;
    rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x + 1000, n - 1000, 1000, c, NULL, NULL, 0);
    CHECK(rc == 0 && !memcmp(a + 1000, c, n - 1000), "%s", "sr: index0 offset does not reproduce the same elements (or a call failed)");
    free(x); free(a); free(b); free(c);
  }
  /* the generator: each output bit is set about half the time */
  {
    long ones[64] = {0};
    const long n = 1 << 20;
    for (long i = 0; i < n; i++) {
      uint64_t v = exmy_random64(5, 0, (uint64_t)i);
      for (int b = 0; b < 64; b++) ones[b] += (v >> b) & 1;
    }
    for (int b = 0; b < 64; b++)
      CHECK(fabs((double)ones[b] / n - 0.5) < 5 * 0.5 / sqrt((double)n), "exmy_random64 bit %d set %ld of %ld", b, ones[b], n);
  }
  return tu_finish("test_sr");
}
