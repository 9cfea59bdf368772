/* test_fastpath.c: the OpenMP / vectorized array path (exmy_quantize) equals
 * the serial scalar reference (exmy_quantize_ref) bit for bit, codes and
 * flags, for every named format, random formats, every rounding mode,
 * saturation, ftz and daz, every input type, with 1 and 2 threads; and the
 * vectorized stochastic rounding against the reference for 2^24 float32
 * patterns spanning every exponent, many sr_bits, random seeds, streams and
 * starting indices (near 2^64 too). */
#include "testutil.h"
#include <math.h>
#include <omp.h>

#define NRAND 100000

static float *make_f32_inputs(const exmy_format *f, uint64_t *st, size_t *n_out) {
  size_t n = 65536 + NRAND + 4096;
  float *x = malloc(n * sizeof *x);
  size_t k = 0;
  for (uint32_t b = 0; b < 65536; b++) x[k++] = tu_f32(b << 16); /* every bf16 */
  /* first finite values near the format's codes (blocks without NaN/inf take
   * the hot loop), then random bit patterns (NaN/inf blocks take the full
   * kernel) */
  for (int i = 0; i < NRAND; i++) {
    uint64_t r = tu_next(st);
    if (i >= NRAND / 2) { x[k++] = tu_f32((uint32_t)r); continue; }
    uint64_t c = (r >> 32) & ((f->bits >= 64) ? ~0ULL : (((uint64_t)1 << f->bits) - 1));
    double v = exmy_code_to_f64(f, c);
    if (isnan(v) || isinf(v)) v = exmy_code_to_f64(f, f->max_mag) * ((r & 1) ? 2 : 1);
    float fv = (float)v;
    uint32_t b = tu_bits32(fv) + (uint32_t)((int)(r % 9) - 4);
    x[k++] = isinf(fv) ? 0x1p127f : tu_f32(b);
  }
  /* midpoints between consecutive values of the format, within float */
  for (int i = 0; i < 4096; i++) {
    const uint64_t all = f->bits >= 64 ? ~0ULL : (((uint64_t)1 << f->bits) - 1);
    uint64_t c = tu_next(st) & all;
    double a = exmy_code_to_f64(f, c), b = exmy_code_to_f64(f, c < all ? c + 1 : c);
    float mid = (float)((a + b) / 2);
    x[k++] = isnan(mid) || isinf(mid) ? 1.0f : mid;
  }
  *n_out = k;
  return x;
}

static void compare(const exmy_format *f, const exmy_rounding *r, exmy_dtype t, const void *src, size_t n,
                    const char *what) {
  size_t cb = (size_t)exmy_code_bytes(f);
  void *a = malloc(n * cb), *b = malloc(n * cb);
  char err[EXMY_ERRLEN] = "";
  unsigned fr = 0;
  int rcr = exmy_quantize_ref(f, r, t, src, n, 7, a, &fr, err, sizeof err);
  unsigned *efl = NULL; /* per-element reference flags, for the slices below */
  if (t == EXMY_DTYPE_F32) {
    efl = malloc(n * sizeof *efl);
    for (size_t i = 0; i < n; i++) {
      efl[i] = 0;
      (void)exmy_from_f32(f, r, ((const float *)src)[i], 7 + i, &efl[i]);
    }
  }
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    memset(b, 0xa5, n * cb);
    unsigned ff = 0;
    int rcf = exmy_quantize(f, r, t, src, n, 7, b, &ff, err, sizeof err);
    CHECK(rcr == 0 && rcf == 0 && ff == fr, "%s %s %s sat=%d ftz=%d daz=%d threads=%d: flags fast %u ref %u (rc %d %d %s)",
          f->name, what, exmy_round_mode_name(r->mode), r->sat, r->ftz, r->daz, threads, ff, fr, rcf, rcr, err);
    if (memcmp(a, b, n * cb)) {
      for (size_t i = 0; i < n; i++) {
        uint64_t ca = exmy_code_get(f, a, i), cbv = exmy_code_get(f, b, i);
        if (ca != cbv) {
          uint64_t in = t == EXMY_DTYPE_F32 ? tu_bits32(((const float *)src)[i])
                      : t == EXMY_DTYPE_F64 ? tu_bits64(((const double *)src)[i])
                      : ((const uint16_t *)src)[i];
          CHECK(0, "%s %s %s sat=%d ftz=%d daz=%d threads=%d: input 0x%" PRIx64 " fast 0x%" PRIx64 " ref 0x%" PRIx64,
                f->name, what, exmy_round_mode_name(r->mode), r->sat, r->ftz, r->daz, threads, in, cbv, ca);
          break;
        }
      }
    } else {
      CHECK(1, "%s", "same");
    }
  }
  /* flags of slices, so a block's flags are not hidden by another block's */
  if (t == EXMY_DTYPE_F32) {
    for (size_t lo = 0; lo < n; lo += 5000) {
      size_t m = n - lo < 5000 ? n - lo : 5000;
      unsigned f1 = 0;
      for (size_t i = lo; i < lo + m; i++) f1 |= efl[i];
      unsigned f2 = 0;
      int rc2 = exmy_quantize(f, r, t, (const float *)src + lo, m, 7 + lo, b, &f2, err, sizeof err);
      CHECK(rc2 == 0 && f1 == f2, "%s %s %s sat=%d ftz=%d daz=%d: slice at %zu: flags fast %u ref %u", f->name, what,
            exmy_round_mode_name(r->mode), r->sat, r->ftz, r->daz, lo, f2, f1);
    }
  }
  free(efl);
  free(a);
  free(b);
}

static void check_format(const exmy_format *f, uint64_t *st, int full) {
  size_t n;
  float *x = make_f32_inputs(f, st, &n);
  double *xd = malloc(n * sizeof *xd);
  uint16_t *h = malloc(65536 * sizeof *h);
  for (size_t i = 0; i < n; i++) xd[i] = (double)x[i] * (1.0 + ldexp((double)(i % 5) - 2, -40));
  for (uint32_t i = 0; i < 65536; i++) h[i] = (uint16_t)i;
  for (int m = EXMY_RNE; m <= EXMY_SR; m++) {
    for (int variant = 0; variant < (full ? 5 : 2); variant++) {
      exmy_rounding r = exmy_rounding_default();
      r.mode = (exmy_round_mode)m;
      r.seed = tu_next(st);
      r.sr_bits = variant == 1 ? 3 : 64;
      r.sat = variant == 1 ? EXMY_SAT_FINITE : variant == 4 ? EXMY_SAT_PROPAGATE : EXMY_SAT_NONE;
      r.ftz = variant == 2;
      r.daz = variant == 3;
      compare(f, &r, EXMY_DTYPE_F32, x, n, "f32");
      if (variant < 2) {
        compare(f, &r, EXMY_DTYPE_F64, xd, n / 4, "f64");
        compare(f, &r, EXMY_DTYPE_BF16, h, 65536, "bf16");
        compare(f, &r, EXMY_DTYPE_F16, h, 65536, "f16");
      }
    }
  }
  free(x);
  free(xd);
  free(h);
}

/* Stochastic rounding: the fast path's counter-based generator in SIMD lanes
 * against the scalar reference, bit for bit, codes and flags. */
static void check_sr(uint64_t *st) {
  const char *names[] = {"e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn", "bf16", "e3m2fn"};
  /* 64 twice (the first was 0, which meant 64 before sr_bits was checked) */
  const int bits[] = {64, 64, 1, 2, 7, 8, 16, 23, 24, 25, 31, 32, 33, 40, 63};
  const size_t n = (size_t)1 << 24;
  float *x = malloc(n * sizeof *x);
  for (size_t i = 0; i < n; i++) /* every exponent and sign, 2^15 mantissas each, random low bits */
    x[i] = tu_f32((uint32_t)(i << 8) | (uint32_t)(tu_next(st) & 0xff));
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    exmy_format f = tu_format(names[k]);
    for (size_t b = 0; b < sizeof bits / sizeof bits[0]; b++) {
      exmy_rounding r = exmy_rounding_default();
      r.mode = EXMY_SR;
      r.seed = tu_next(st);
      r.stream = b & 1 ? tu_next(st) : b;
      r.sr_bits = bits[b];
      r.sat = b & 2 ? EXMY_SAT_FINITE : EXMY_SAT_NONE;
      /* the long sweep for two settings, slices elsewhere; starting index random, near 2^64 once */
      const size_t m = (k == 0 && b < 2) ? n : 65536 + 13 * b;
      const size_t off = (size_t)(tu_next(st) % (n - m + 1));
      const uint64_t index0 = b == 4 ? ~(uint64_t)0 - 5000 : tu_next(st) >> (b % 3) * 20;
      size_t cb = (size_t)exmy_code_bytes(&f);
      void *a = malloc(m * cb), *c = malloc(m * cb);
      char err[EXMY_ERRLEN] = "";
      unsigned fa = 0, fc = 0;
      int rc = exmy_quantize_ref(&f, &r, EXMY_DTYPE_F32, x + off, m, index0, a, &fa, err, sizeof err);
      omp_set_num_threads(1 + (int)(b & 1));
      rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x + off, m, index0, c, &fc, err, sizeof err);
      CHECK(rc == 0 && fa == fc, "sr %s sr_bits=%d seed=0x%" PRIx64 " stream=0x%" PRIx64 " index0=0x%" PRIx64
            ": flags fast %u ref %u (%s)", f.name, r.sr_bits, r.seed, r.stream, index0, fc, fa, err);
      size_t bad = 0;
      for (size_t i = 0; i < m; i++) {
        const uint64_t ca = exmy_code_get(&f, a, i), cc = exmy_code_get(&f, c, i);
        if (ca != cc && bad++ < 3)
          CHECK(0, "sr %s sr_bits=%d seed=0x%" PRIx64 " stream=0x%" PRIx64 " index 0x%" PRIx64
                " input 0x%08" PRIx32 ": fast 0x%" PRIx64 " ref 0x%" PRIx64, f.name, r.sr_bits, r.seed, r.stream,
                index0 + i, tu_bits32(x[off + i]), cc, ca);
      }
      CHECK(bad == 0, "sr %s sr_bits=%d: %zu of %zu codes differ", f.name, r.sr_bits, bad, m);
      free(a);
      free(c);
    }
  }
  omp_set_num_threads(2);
  free(x);
}

/* Arrays of tiny values only (below 2^emin), each between two subnormal
 * codes: inexact, yet with no bit set below the format's precision at the
 * value's own exponent, so only the subnormal test reports them (the rne
 * kernels' two flag sources). */
static void check_tiny(const exmy_format *f) {
  if (!f->is_signed || f->mbits < 1 || f->mbits > 22 || f->emin < -120) return;
  float x[64];
  const size_t sub = (size_t)1 << f->mbits;
  for (size_t i = 0; i < 64; i++) { /* (k + 1/2) 2^(emin - M), both signs */
    const size_t k = i % sub;
    x[i] = (i & 1 ? -1.0f : 1.0f) * ldexpf((float)(2 * k + 1), f->emin - f->mbits - 1);
  }
  for (int sat = 0; sat < 2; sat++) {
    exmy_rounding r = exmy_rounding_default();
    r.sat = sat ? EXMY_SAT_FINITE : EXMY_SAT_NONE;
    compare(f, &r, EXMY_DTYPE_F32, x, 64, "f32 tiny");
    compare(f, &r, EXMY_DTYPE_F32, x, 5, "f32 tiny tail");
  }
}

#if defined(__x86_64__)
#include <immintrin.h>
/* DAZ and FTZ set in MXCSR (as torch.set_flush_denormal(True) does): the
 * float kernels must not change a bit (their sums and differences stay
 * normal; a denormal input rounds to 0 on their grids anyway). */
static void check_mxcsr(uint64_t *st) {
  const char *names[] = {"e4m3fn", "e5m2", "e4m3fnuz", "e2m1fn", "f16", "e3m2fn", "bf16", "e8m3"};
  unsigned saved = _mm_getcsr();
#pragma omp parallel num_threads(2)
  _mm_setcsr(saved | 0x8040); /* FTZ | DAZ, in every thread the tests use */
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    exmy_format f = tu_format(names[k]);
    size_t n;
    float *x = make_f32_inputs(&f, st, &n);
    for (size_t i = 0; i < 4096; i++) x[i] = tu_f32((uint32_t)tu_next(st) & 0x807fffffu); /* float denormals */
    exmy_rounding r = exmy_rounding_default();
    compare(&f, &r, EXMY_DTYPE_F32, x, n, "f32 with DAZ+FTZ");
    check_tiny(&f);
    free(x);
  }
#pragma omp parallel num_threads(2)
  _mm_setcsr(saved);
}
#endif

/* Stochastic rounding of a value whose dropped part reaches below the top
 * 32 bits of F (d > 32): the fast kernels look at the random word's top 32
 * bits only, which decides unless F's low half carries.  At seed 1, stream 0,
 * index 35857487414 the word is 0xffffffffd666a95c (found by search): for
 * 2^-42 in e4m3fn (grid 2^-9) F = 2^31 below the top half, whose carry with
 * 0xd666a95c and then with 0xffffffff rounds up to 2^-9. */
static void check_sr_carry(void) {
  exmy_format f = tu_format("e4m3fn");
  exmy_rounding r = exmy_rounding_default();
  r.mode = EXMY_SR;
  r.seed = 1;
  r.stream = 0;
  CHECK(exmy_random64(1, 0, 35857487414u) == 0xffffffffd666a95cu, "%s", "the searched random word");
  enum { N = 100, AT = 37 };
  float x[N];
  uint8_t a[N], c[N];
  for (int i = 0; i < N; i++) x[i] = i == AT ? 0x1p-42f : (float)(i % 7) * 0.375f; /* zeros and normals beside */
  unsigned fa = 0, fc = 0;
  char err[EXMY_ERRLEN] = "";
  const uint64_t index0 = 35857487414u - AT;
  int rc = exmy_quantize_ref(&f, &r, EXMY_DTYPE_F32, x, N, index0, a, &fa, err, sizeof err);
  rc |= exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, N, index0, c, &fc, err, sizeof err);
  CHECK(rc == 0 && a[AT] == 1, "sr carry: the reference rounds 2^-42 to code 0x%02x (expected 0x01)", a[AT]);
  for (int i = 0; i < N; i++)
    CHECK(a[i] == c[i], "sr carry: input 0x%08" PRIx32 " index 0x%" PRIx64 ": fast 0x%02x ref 0x%02x",
          tu_bits32(x[i]), index0 + (uint64_t)i, c[i], a[i]);
  CHECK(fa == fc, "sr carry: flags fast %u ref %u", fc, fa);
}

int main(void) {
  uint64_t st = tu_seed(7);
#if defined(__x86_64__)
  check_mxcsr(&st);
#endif
  check_sr(&st);
  check_sr_carry();
  for (size_t i = 0; i < exmy_named_format_count(); i++) {
    exmy_format f = tu_format(exmy_named_format_get(i)->name);
    check_format(&f, &st, 1);
    check_tiny(&f);
  }
  /* the plain-C kernels where AVX-512 ones exist (rne_512): the named formats again without them */
  setenv("EXMY_NO_AVX512", "1", 1);
  for (size_t i = 0; i < exmy_named_format_count(); i++) {
    exmy_format f = tu_format(exmy_named_format_get(i)->name);
    check_format(&f, &st, 0);
    check_tiny(&f);
  }
  unsetenv("EXMY_NO_AVX512");
  /* emin >= 129 (bias <= -128): (emin + 127) << 23 does not fit a signed 32-bit compare, so these
   * take the reference path (sr_512 gave wrong codes and the C kernels lost underflow flags) */
  const char *high[] = {"e5m2,bias=-130", "e5m2,bias=-128"};
  for (size_t i = 0; i < sizeof high / sizeof high[0]; i++) {
    exmy_format f = tu_format(high[i]);
    check_format(&f, &st, 0);
  }
  for (int i = 0; i < 40; i++) {
    exmy_format f = tu_random_format(&st);
    check_format(&f, &st, 0);
    check_tiny(&f);
  }
  return tu_finish("test_fastpath");
}
