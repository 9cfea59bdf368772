/* testutil.h: the small harness the C tests share: a seed that
 * EXMY_TEST_SEED overrides, a deterministic generator, counted checks that
 * print the first failures, and the closing summary line. */
#ifndef EXMY_TESTUTIL_H
#define EXMY_TESTUTIL_H
#include "exmy.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long tu_checks, tu_fails;

#define TU_MAX_PRINT 20
#define CHECK(cond, ...)                                  \
  do {                                                    \
    tu_checks++;                                          \
    if (!(cond)) {                                        \
      if (tu_fails++ < TU_MAX_PRINT) {                    \
        printf("FAIL %s:%d: ", __FILE__, __LINE__);       \
        printf(__VA_ARGS__);                              \
        printf("\n");                                     \
      }                                                   \
    }                                                     \
  } while (0)

static inline uint64_t tu_seed(uint64_t dflt) {
  const char *s = getenv("EXMY_TEST_SEED");
  uint64_t seed = s && *s ? strtoull(s, NULL, 0) : dflt;
  printf("seed %" PRIu64 " (set EXMY_TEST_SEED to change)\n", seed);
  return seed;
}

/* The tests' one input generator (SplitMix64, sequential), C and C++.  Kept
 * apart from the library's copy (emulate/round_core.h) on purpose: the
 * oracle tests share no code with emulate/, and an edit there must not move
 * the tests' inputs. */
static inline uint64_t tu_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline float tu_f32(uint32_t bits) { float f; memcpy(&f, &bits, 4); return f; }
static inline uint32_t tu_bits32(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }
static inline uint64_t tu_bits64(double d) { uint64_t b; memcpy(&b, &d, 8); return b; }

static inline int tu_finish(const char *name) {
  if (tu_fails > TU_MAX_PRINT) printf("... %ld failures in all\n", tu_fails);
  printf("%s: %ld checks, %ld failures\n", name, tu_checks, tu_fails);
  return tu_fails ? 1 : 0;
}

static inline exmy_format tu_format(const char *name) {
  exmy_format f;
  char err[EXMY_ERRLEN];
  if (exmy_format_parse(name, &f, err, sizeof err)) {
    printf("cannot parse format '%s': %s\n", name, err);
    exit(1);
  }
  return f;
}

/* A random valid format: E 1..8, M 0..10, random bias and conventions. */
static inline exmy_format tu_random_format(uint64_t *st) {
  for (;;) {
    exmy_format f;
    memset(&f, 0, sizeof f);
    f.ebits = 1 + (int)(tu_next(st) % 8);
    f.mbits = (int)(tu_next(st) % 11);
    f.is_signed = (tu_next(st) % 4) != 0;
    f.has_zero = 1;
    f.bias = exmy_default_bias(f.ebits) + (int)(tu_next(st) % 21) - 10;
    f.inf = (exmy_inf)(tu_next(st) % 3);
    f.nan = (exmy_nan)(tu_next(st) % 4);
    if (exmy_format_make(&f, NULL, 0) == 0) return f;
  }
}
#endif
