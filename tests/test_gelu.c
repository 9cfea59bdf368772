/* test_gelu: the engine's vector tanh and GELU against their scalar
 * references, bit for bit (experiments/gelu.c), and the reference tanh
 * against the platform's tanhf where that is fdlibm's (glibc through 2.40).
 *
 * Inputs: every float whose bits are = r (mod 4093) for a seeded r (about
 * a million, all exponents), the boundaries of every branch and their
 * neighbours, NaN, infinities, zeros and subnormals; GELU on seeded
 * arrays of odd lengths with those values mixed in, with 1 and 2 threads,
 * tanh's values kept by the forward and recomputed.  --long: all 2^32
 * floats through xp_tanhf_n against xp_tanhf_ref (and libm). */
#include "experiments/layers.h"
#include "testutil.h"

#include <math.h>
#include <omp.h>

#if defined(__GLIBC__) && (__GLIBC__ == 2 && __GLIBC_MINOR__ <= 40)
#define LIBM_IS_FDLIBM 1 /* glibc's tanhf was fdlibm's through 2.40 */
#else
#define LIBM_IS_FDLIBM 0
#endif

static uint32_t fb(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}
static float bf(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

/* Check n inputs: vector vs reference (and libm). */
static void check_tanh(const float *x, size_t n, float *y) {
  xp_tanhf_n(x, y, n);
  for (size_t i = 0; i < n; i++) {
    float r = xp_tanhf_ref(x[i]);
    CHECK(fb(y[i]) == fb(r), "tanh vector(%08x) = %08x, reference %08x", fb(x[i]), fb(y[i]), fb(r));
#if LIBM_IS_FDLIBM
    float l = tanhf(x[i]);
    CHECK(fb(l) == fb(r), "tanh reference(%08x) = %08x, libm tanhf %08x", fb(x[i]), fb(r), fb(l));
#endif
  }
}

static const uint32_t edges[] = {
  0x00000000, 0x00000001, 0x007fffff, 0x00800000, 0x24000000, 0x33000000, 0x32ffffff, 0x3eb17218,
  0x3F851592, 0x3f800000, 0x41b00000, 0x4195b844, 0x3f000000, 0x3e800000, 0x40000000, 0x41100000,
  0x42b17218, 0x7f7fffff, 0x7f800000, 0x7fc00000, 0x7f800001, 0x7fffffff, 0x3e317218, 0x3f317218,
};

int main(int argc, char **argv) {
  uint64_t seed = tu_seed(12), st = seed;
  const int lng = argc > 1 && !strcmp(argv[1], "--long");
  printf("libm tanhf %s\n", LIBM_IS_FDLIBM ? "compared (fdlibm's)" : "not compared (not known to be fdlibm's)");
  enum { N = 1 << 16 };
  float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
  if (!x || !y) return 1;

  /* the edges, their neighbours, both signs, in vector positions 0..15 */
  size_t n = 0;
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    for (int d = -2; d <= 2; d++)
      for (uint32_t s = 0; s < 2; s++) x[n++] = bf((edges[i] + (uint32_t)d) ^ (s << 31));
  check_tanh(x, n, y);
  for (size_t off = 0; off < 16; off++) check_tanh(x + off, n - off, y); /* tails, positions */

  /* a stride through all floats */
  const uint32_t stride = 4093, r = (uint32_t)(tu_next(&st) % stride);
  uint64_t u = r;
  while (u <= 0xffffffffu) {
    for (n = 0; n < N && u <= 0xffffffffu; u += stride) x[n++] = bf((uint32_t)u);
    check_tanh(x, n, y);
  }
  if (lng) {
    for (uint64_t b = 0; b < (1ull << 32); b += N) {
      for (size_t i = 0; i < N; i++) x[i] = bf((uint32_t)(b + i));
      check_tanh(x, N, y);
      if ((b & 0x0fffffff) == 0) printf("  %08x ...\n", (unsigned)b), fflush(stdout);
    }
  }

  /* GELU: fast (tanh kept or recomputed) vs reference, 1 and 2 threads */
  static const size_t lens[] = {1, 15, 16, 17, 1023, 1024, 1025, 5000};
  float *dy = malloc(N * sizeof *dy), *yr = malloc(N * sizeof *yr), *th = malloc(N * sizeof *th);
  float *dx = malloc(N * sizeof *dx), *dxr = malloc(N * sizeof *dxr), *y2 = malloc(N * sizeof *y2);
  if (!dy || !yr || !th || !dx || !dxr || !y2) return 1;
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
      n = lens[li];
      for (size_t i = 0; i < n; i++) {
        uint64_t z = tu_next(&st);
        /* mostly N(0, 3)-ish values, some edges and wild bit patterns */
        if (z % 16 == 0) x[i] = bf((uint32_t)(z >> 32));
        else if (z % 16 == 1) x[i] = bf(edges[(z >> 8) % (sizeof edges / sizeof edges[0])] ^ ((uint32_t)(z >> 20) & 0x80000000u));
        else x[i] = (float)(((double)(z >> 11) / 9007199254740992.0 - 0.5) * 12.0);
        dy[i] = (float)(((double)(tu_next(&st) >> 11) / 9007199254740992.0 - 0.5) * 2.0);
      }
      xp_gelu_forward_ref(x, yr, n);
      xp_gelu_backward_ref(dy, x, dxr, n);
      xp_gelu_forward(x, y, th, n);
      xp_gelu_forward(x, y2, NULL, n);
      for (size_t i = 0; i < n; i++) {
        CHECK(fb(y[i]) == fb(yr[i]), "gelu(%08x) = %08x, reference %08x (n %zu, %d threads)", fb(x[i]), fb(y[i]),
              fb(yr[i]), n, threads);
        CHECK(fb(y2[i]) == fb(yr[i]), "gelu(%08x) without th = %08x, reference %08x", fb(x[i]), fb(y2[i]), fb(yr[i]));
      }
      xp_gelu_backward(dy, x, th, dx, n);
      for (size_t i = 0; i < n; i++)
        CHECK(fb(dx[i]) == fb(dxr[i]), "gelu' dy %08x x %08x: %08x, reference %08x (n %zu, %d threads)", fb(dy[i]),
              fb(x[i]), fb(dx[i]), fb(dxr[i]), n, threads);
      xp_gelu_backward(dy, x, NULL, dx, n);
      for (size_t i = 0; i < n; i++)
        CHECK(fb(dx[i]) == fb(dxr[i]), "gelu' (th recomputed) dy %08x x %08x: %08x, reference %08x", fb(dy[i]),
              fb(x[i]), fb(dx[i]), fb(dxr[i]));
    }
  }
  free(x), free(y), free(dy), free(yr), free(th), free(dx), free(dxr), free(y2);
  printf("%ld checks, %ld failures\n", tu_checks, tu_fails);
  return tu_fails ? 1 : 0;
}
