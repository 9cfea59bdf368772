/* fuzz_number: cli_round_text (cli/number.c), the command's text-to-format
 * rounding with MPFR.  Input: byte 0 picks the format, byte 1 the rounding
 * (mode, saturation, ftz, daz), the rest is the number's text.  Property:
 * when the text is exactly a double (MPFR reads it at 53 bits without
 * rounding, and equal to strtod's double), the code and flags equal exmy_from_f64's
 * (deterministic modes; stochastic rounding sees 63 bits, not 53). */
#include "tests/fuzz/fuzz.h"
#include "cli/cli.h"
#include "exmy.h"

#include <math.h>
#include <mpfr.h>

static const char *const formats[] = {"e4m3fn", "e5m2", "bf16", "f16", "f32", "e2m1", "e8m0fnu", "e3m2",
                                      "e5m2fnuz", "f64", "e11m52", "e0m3", "p3109_k8p4se", "e4m3", "e6m9", "ue4m3"};
#define NF (sizeof formats / sizeof formats[0])
static exmy_format fmt[NF];
static int fmt_ok[NF];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  static int init;
  if (!init) {
    char e[EXMY_ERRLEN];
    for (size_t i = 0; i < NF; i++) fmt_ok[i] = exmy_format_parse(formats[i], &fmt[i], e, sizeof e) == 0;
    init = 1;
  }
  const exmy_format *f = &fmt[data[0] % NF];
  if (!fmt_ok[data[0] % NF]) f = &fmt[0];
  exmy_rounding r;
  memset(&r, 0, sizeof r);
  r.mode = (exmy_round_mode)((data[1] & 7) % 7);
  r.sat = (exmy_saturation)(((data[1] >> 3) & 3) % 3);
  r.ftz = (data[1] >> 5) & 1;
  r.daz = (data[1] >> 6) & 1;
  r.seed = 0x1234;
  char *s = fuzz_str(data + 2, size - 2);
  uint64_t code = 0;
  unsigned flags = 0;
  if (cli_round_text(s, f, &r, 7, &code, &flags) == 0) {
    FUZZ_CHECK(f->bits == 64 || code >> f->bits == 0, "'%s' in %s: code %llx wider than the format", s, f->name,
               (unsigned long long)code);
    char *end;
    const double d = strtod(s, &end);
    mpfr_t x;
    mpfr_init2(x, 53);
    char *mend;
    const int t = mpfr_strtofr(x, s, &mend, 0, MPFR_RNDN);
    /* Exact means the text's value is the double itself: a 53-bit MPFR value
     * below double's normal range may need more bits than a subnormal has. */
    const int exact = t == 0 && !mpfr_nan_p(x) && mpfr_cmp_d(x, d) == 0 && !mpfr_signbit(x) == !signbit(d);
    mpfr_clear(x);
    if (exact && r.mode != EXMY_SR) {
      unsigned dflags = 0;
      const uint64_t dcode = exmy_from_f64(f, &r, d, 7, &dflags);
      FUZZ_CHECK(dcode == code && dflags == flags, "'%s' in %s (mode %d sat %d ftz %d daz %d): text %llx/%x, double %a %llx/%x",
                 s, f->name, r.mode, r.sat, r.ftz, r.daz, (unsigned long long)code, flags, d,
                 (unsigned long long)dcode, dflags);
    }
  }
  free(s);
  return 0;
}
