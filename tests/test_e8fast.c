/* test_e8fast.c: the 8-exponent-bit fast path (emulate/convert.c e8_hot,
 * e8_512: bf16, E8My, tf32 and their variants) equals the reference path
 * (exmy_from_f32, the rounding core) bit for bit, codes and flags, for
 * every deterministic rounding mode and saturation variant, with and without
 * the AVX-512 kernels (EXMY_NO_AVX512), through exmy_quantize (the chunk
 * kernels) and the prepared quantizer the scaling recipes and `exmy train`
 * use (exmy__f32q_run: the scaled kernels).  Flags are compared per run of
 * 16 inputs of one stratum (a whole-array OR would hide a missing flag), and
 * over the whole array with 1 and 2 threads.
 *
 * make check: a 2^24-input stratified sweep: every sign and biased exponent
 * (zeros, subnormals, infinities and NaNs included), and within each, every
 * cut position of E8M1..E8M7 and tf32 with its kept bits (all of them where
 * there are at most 6, else the boundary patterns and random ones) crossed
 * with the dropped bits' boundary patterns (0, 1, half - 1, half, half + 1,
 * all ones, ...) and random ones; EXMY_TEST_SEED moves the random parts.
 * --long (make check-long): every one of the 2^32 float32 bit patterns for
 * each format, mode and saturation (EXMY_E8_LONG_FORMATS, a comma list, and
 * EXMY_E8_LONG_MODES, e.g. "rne,rtz", restrict it).  A failure prints the
 * input in hex.  EXMY_E8_FORMATS (a comma list of the names below) restricts
 * the sample sweep. */
#include "testutil.h"
#include "formats/internal.h"
#include <omp.h>

#define RUN 16 /* inputs per flag comparison */

static const exmy_round_mode modes[] = {EXMY_RNE, EXMY_RNA, EXMY_RTZ, EXMY_RUP, EXMY_RDN, EXMY_RTO};
static const exmy_saturation sats[] = {EXMY_SAT_NONE, EXMY_SAT_FINITE, EXMY_SAT_PROPAGATE};
#define NMODES (int)(sizeof modes / sizeof modes[0])
#define NSATS (int)(sizeof sats / sizeof sats[0])

/* the proven formats (the fast path takes them) and variants it must
 * either get right or decline */
static const char *const e8_names[] = {"e8m1", "e8m2", "e8m3", "e8m4", "e8m5", "e8m6", "bf16", "tf32"};
static const char *const variant_names[] = {
    "e8m3,inf=none,nan=ones", "e8m3,inf=none,nan=none", "bf16,inf=top",     "e8m5,inf=none,nan=negzero",
    "e8m3,sign=unsigned",     "e8m3,bias=126",          "e8m2,bias=128",     "e8m22",
    "e8m0,inf=none,nan=ones",                   "e9m4,bias=127"};

/* The stratified inputs of one cut position c (the dropped bits of the
 * format: 16..22 for E8M7..E8M1, 13 for tf32): 512 strata (sign, biased
 * exponent) of 4096 mantissas, 64 kept-bit patterns x 64 dropped-bit
 * patterns: 2^21 inputs, 2^24 over the eight formats. */
static uint32_t low_pattern(int c, int j, uint64_t *st) {
  const uint32_t lm = (1u << c) - 1u, h = 1u << (c - 1);
  const uint32_t fixed[] = {0, 1, 2, 3, h - 2, h - 1, h, h + 1, h + 2, lm, lm - 1, lm - 2, h | 1u, h >> 1, lm >> 1, lm ^ 1u};
  const int nf = (int)(sizeof fixed / sizeof fixed[0]);
  if (j < nf) return fixed[j] & lm;
  if (j < nf + c) return 1u << (j - nf); /* one bit */
  return (uint32_t)tu_next(st) & lm;
}
static uint32_t kept_pattern(int k, int j, uint64_t *st) { /* k = 23 - c kept mantissa bits */
  const uint32_t km = (1u << k) - 1u;
  if (k <= 6) return (uint32_t)j & km; /* every pattern (64 / 2^k times) */
  const uint32_t fixed[] = {0, 1, 2, 3, km, km - 1, km - 2, 1u << (k - 1), (1u << (k - 1)) - 1u};
  if (j < 9) return fixed[j] & km;
  return (uint32_t)tu_next(st) & km;
}
#define NSAMPLE ((size_t)1 << 21)
static size_t make_sample(uint64_t seed, int c, int nk, uint32_t *x) { /* nk kept-bit patterns (64: all) */
  uint64_t st = seed ^ (uint64_t)c;
  size_t k = 0;
  for (uint32_t s = 0; s < 2; s++)
    for (uint32_t e = 0; e < 256; e++)
      for (int kj = 0; kj < nk; kj++) {
        const uint32_t kept = c < 23 ? kept_pattern(23 - c, kj, &st) << c : 0;
        for (int lj = 0; lj < 64; lj++) x[k++] = (s << 31) | (e << 23) | kept | low_pattern(c, lj, &st);
      }
  return k;
}

/* Count a bad run; print the first two of a configuration (the caller's
 * CHECK sums them up). */
static int bad_printed(long *bad) { return (*bad)++ < 2; }

/* One (format, rounding) over x[0..n): the reference per element (flags
 * per run of RUN), the chunk kernels and the scaled ones per run and over
 * the whole array.  Returns 1 if the fast path took it (fast_applies). */
static void check_config(const exmy_format *f, const exmy_rounding *r, const uint32_t *x, size_t n, uint64_t *ref,
                         unsigned *rfl, void *codes, const char *tag) {
  const size_t cb = (size_t)exmy_code_bytes(f);
  const float *xf = (const float *)x;
  unsigned all = 0;
#pragma omp parallel for schedule(static) reduction(|:all)
  for (size_t g = 0; g < n / RUN; g++) {
    unsigned fl = 0;
    for (size_t i = g * RUN; i < (g + 1) * RUN; i++) ref[i] = exmy_from_f32(f, r, xf[i], i, &fl);
    rfl[g] = fl;
    all |= fl;
  }
  char err[EXMY_ERRLEN];
  exmy__f32q q;
  exmy__f32q_init(&q, f, r);
  for (int way = 0; way < 2; way++) { /* 0: exmy_quantize per run; 1: exmy__f32q_run per run */
    long bad = 0;
    const char *how = way ? "f32q_run" : "quantize";
#pragma omp parallel for schedule(static) reduction(+:bad)
    for (size_t g = 0; g < n / RUN; g++) {
      unsigned fl = 0;
      char *c = (char *)codes + g * RUN * cb;
      if (way == 0) {
        char e[EXMY_ERRLEN];
        (void)exmy_quantize(f, r, EXMY_DTYPE_F32, xf + g * RUN, RUN, g * RUN, c, &fl, e, sizeof e);
      } else {
        fl = exmy__f32q_run(&q, xf + g * RUN, RUN, 1.0f, g * RUN, c);
      }
      for (size_t i = 0; i < RUN; i++) {
        const uint64_t got = exmy_code_get(f, c, i), want = ref[g * RUN + i];
        if (got != want) {
#pragma omp critical
          if (bad_printed(&bad))
            printf("FAIL %s %s %s sat=%d %s: input 0x%08" PRIx32 " code 0x%" PRIx64 " want 0x%" PRIx64 "\n", tag,
                   f->name, exmy_round_mode_name(r->mode), (int)r->sat, how, x[g * RUN + i], got, want);
          break;
        }
      }
      if (fl != rfl[g]) {
#pragma omp critical
        if (bad_printed(&bad))
          printf("FAIL %s %s %s sat=%d %s: inputs 0x%08" PRIx32 "..0x%08" PRIx32 " flags 0x%x want 0x%x\n", tag,
                 f->name, exmy_round_mode_name(r->mode), (int)r->sat, how, x[g * RUN], x[g * RUN + RUN - 1], fl,
                 rfl[g]);
      }
    }
    CHECK(bad == 0, "%s %s %s sat=%d %s: %ld of %zu runs of %d differ", tag, f->name, exmy_round_mode_name(r->mode),
          (int)r->sat, how, bad, n / RUN, RUN);
  }
  /* the whole array: 2048-element blocks, the threads' split */
  for (int t = 1; t <= 2; t++) {
    omp_set_num_threads(t);
    unsigned fl = 0;
    memset(codes, 0xa5, n * cb);
    int rc = exmy_quantize(f, r, EXMY_DTYPE_F32, xf, n, 0, codes, &fl, err, sizeof err);
    size_t i = 0;
    while (i < n && exmy_code_get(f, codes, i) == ref[i]) i++;
    CHECK(rc == 0 && fl == all && i == n, "%s %s %s sat=%d whole, threads %d: flags 0x%x want 0x%x, first diff %s0x%08" PRIx32,
          tag, f->name, exmy_round_mode_name(r->mode), (int)r->sat, t, fl, all, i < n ? "at input " : "none ",
          i < n ? x[i] : 0);
  }
  omp_set_num_threads(2);
}

static int listed(const char *list, const char *name) {
  if (!list || !*list) return 1;
  const size_t L = strlen(name);
  for (const char *p = list; (p = strstr(p, name)) != NULL; p += L)
    if ((p == list || p[-1] == ',') && (p[L] == ',' || p[L] == 0)) return 1;
  return 0;
}

int main(int argc, char **argv) {
  const int long_run = argc > 1 && !strcmp(argv[1], "--long");
  const uint64_t seed = tu_seed(0xe8e8);
  omp_set_num_threads(2);
  if (!long_run) {
    const size_t n = NSAMPLE;
    uint32_t *x = malloc(n * sizeof *x);
    uint64_t *ref = malloc(n * sizeof *ref);
    unsigned *rfl = malloc(n / RUN * sizeof *rfl);
    void *codes = malloc(n * 4);
    for (int avx = 1; avx >= 0; avx--) {
      if (avx) unsetenv("EXMY_NO_AVX512");
      else setenv("EXMY_NO_AVX512", "1", 1);
      const char *tag = avx ? "avx512" : "no-avx512";
      for (size_t fi = 0; fi < sizeof e8_names / sizeof e8_names[0]; fi++) {
        if (!listed(getenv("EXMY_E8_FORMATS"), e8_names[fi])) continue;
        const exmy_format f = tu_format(e8_names[fi]);
        const size_t m = make_sample(seed, 23 - f.mbits, 64, x);
        for (int mi = 0; mi < NMODES; mi++)
          for (int si = 0; si < (avx ? NSATS : 2); si++) { /* no-avx512: the scalar kernel, whose constants
                                                               the avx512 pass's sign-dependent overflows test too */
            exmy_rounding r = {0};
            r.mode = modes[mi];
            r.sat = sats[si];
            check_config(&f, &r, x, m, ref, rfl, codes, tag);
          }
      }
      /* variants (declined ones take the older paths), every mode; stochastic rounding on two proven formats
       * (the sr kernels, whose random words must not move) */
      for (size_t fi = 0; fi < sizeof variant_names / sizeof variant_names[0]; fi++) {
        if (!listed(getenv("EXMY_E8_FORMATS"), variant_names[fi])) continue;
        const exmy_format f = tu_format(variant_names[fi]);
        const size_t m = make_sample(seed, 23 - f.mbits, 16, x);
        for (int mi = 0; mi < NMODES; mi++) {
          exmy_rounding r = {0};
          r.mode = modes[mi];
          r.sat = sats[(fi + (size_t)mi) % NSATS];
          check_config(&f, &r, x, m, ref, rfl, codes, tag);
        }
      }
      for (int k = 0; k < 2; k++) {
        exmy_rounding r = {0};
        r.mode = EXMY_SR;
        r.seed = seed + (uint64_t)k;
        r.stream = 77;
        r.sr_bits = k ? 9 : 64;
        const exmy_format f = tu_format(k ? "e8m3" : "bf16");
        const size_t m = make_sample(seed, 23 - f.mbits, 64, x);
        check_config(&f, &r, x, m, ref, rfl, codes, tag);
      }
    }
    free(x);
    free(ref);
    free(rfl);
    free(codes);
    return tu_finish("test_e8fast");
  }
  /* --long: every float32 bit pattern, 2^24 at a time */
  const char *fl_env = getenv("EXMY_E8_LONG_FORMATS"), *md_env = getenv("EXMY_E8_LONG_MODES");
  const size_t n = (size_t)1 << 24;
  uint32_t *x = malloc(n * sizeof *x);
  uint64_t *ref = malloc(n * sizeof *ref);
  unsigned *rfl = malloc(n / RUN * sizeof *rfl);
  void *codes = malloc(n * 4);
  static const char *const long_names[] = {"e8m1", "e8m2", "e8m3", "e8m4", "e8m5", "e8m6", "bf16"};
  for (size_t fi = 0; fi < sizeof long_names / sizeof long_names[0]; fi++) {
    if (!listed(fl_env, long_names[fi])) continue;
    const exmy_format f = tu_format(long_names[fi]);
    for (int mi = 0; mi < NMODES; mi++) {
      if (!listed(md_env, exmy_round_mode_name(modes[mi]))) continue;
      for (int si = 0; si < NSATS; si++) {
        exmy_rounding r = {0};
        r.mode = modes[mi];
        r.sat = sats[si];
        const long before = tu_fails;
        for (uint64_t hi = 0; hi < 256; hi++) {
          for (size_t i = 0; i < n; i++) x[i] = (uint32_t)(hi << 24 | i);
          check_config(&f, &r, x, n, ref, rfl, codes, "long");
        }
        printf("%s %s sat=%d: all 2^32 inputs %s\n", f.name, exmy_round_mode_name(r.mode), (int)r.sat,
               tu_fails == before ? "agree" : "DIFFER");
        fflush(stdout);
      }
    }
  }
  free(x);
  free(ref);
  free(rfl);
  free(codes);
  return tu_finish("test_e8fast --long");
}
