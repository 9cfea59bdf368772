/* test_formats.c: names, long forms, validation errors, format properties,
 * and the handful of reference points every FP8 user knows by heart. */
#include "testutil.h"
#include <math.h>

static void expect_info(const char *name, double maxf, double minn, double mins, uint64_t finite) {
  exmy_format f = tu_format(name);
  exmy_info in;
  exmy_format_info(&f, &in);
  CHECK(in.max_finite == maxf, "%s max finite %a, expected %a", name, in.max_finite, maxf);
  CHECK(in.min_normal == minn, "%s min normal %a, expected %a", name, in.min_normal, minn);
  CHECK(in.min_subnormal == mins, "%s min subnormal %a, expected %a", name, in.min_subnormal, mins);
  CHECK(in.finite_count == finite, "%s finite values %" PRIu64 ", expected %" PRIu64, name, in.finite_count, finite);
}

static void expect_code(const char *name, double x, exmy_round_mode mode, exmy_saturation sat, uint64_t want, unsigned want_fl) {
  exmy_format f = tu_format(name);
  exmy_rounding r = exmy_rounding_default();
  r.mode = mode;
  r.sat = sat;
  unsigned fl = 0;
  uint64_t c = exmy_from_f64(&f, &r, x, 0, &fl);
  CHECK(c == want, "%s %s sat=%d: %a (%.17g) -> 0x%" PRIx64 ", expected 0x%" PRIx64, name, exmy_round_mode_name(mode), sat, x, x, c, want);
  CHECK(fl == want_fl, "%s %s sat=%d: %a flags %u, expected %u", name, exmy_round_mode_name(mode), sat, x, fl, want_fl);
}

static void expect_error(const char *text, const char *must_contain) {
  exmy_format f;
  char err[EXMY_ERRLEN] = "";
  int rc = exmy_format_parse(text, &f, err, sizeof err);
  CHECK(rc == -1, "'%s' parsed but should be rejected", text);
  CHECK(strstr(err, must_contain) != NULL, "'%s': error '%s' does not mention '%s'", text, err, must_contain);
}

int main(void) {
  (void)tu_seed(1);
  enum { I = EXMY_FLAG_INEXACT, U = EXMY_FLAG_UNDERFLOW, O = EXMY_FLAG_OVERFLOW, V = EXMY_FLAG_INVALID };
  /* every table entry: parses, its long form parses to the same format and
   * is printed back, the name is recovered from the long form */
  for (size_t i = 0; i < exmy_named_format_count(); i++) {
    const exmy_named_format *nf = exmy_named_format_get(i);
    exmy_format a = tu_format(nf->name), b = tu_format(nf->longform);
    char lf[160];
    exmy_format_to_string(&a, lf, sizeof lf);
    CHECK(!memcmp(&a, &b, sizeof a), "%s and its long form %s differ", nf->name, nf->longform);
    CHECK(!strcmp(lf, nf->longform), "%s prints long form %s, table says %s", nf->name, lf, nf->longform);
    CHECK(!strcmp(b.name, nf->name), "long form %s names itself %s, expected %s", nf->longform, b.name, nf->name);
  }
  /* the longest long forms (57 characters, found by enumerating every valid
   * format) are whole names that parse back: the name field holds them */
  {
    static const char *const longest[] = {
        "e1m0,bias=-1023,sign=unsigned,inf=none,nan=ones,zero=none",
        "e8m0fnu,bias=3", /* e8m0,bias=3,sign=unsigned,inf=none,nan=ones,zero=none */
    };
    for (size_t i = 0; i < sizeof longest / sizeof longest[0]; i++) {
      exmy_format f = tu_format(longest[i]), g;
      char lf[160], err[EXMY_ERRLEN];
      exmy_format_to_string(&f, lf, sizeof lf);
      CHECK(!strcmp(f.name, lf), "'%s' is named '%s', its long form is '%s'", longest[i], f.name, lf);
      CHECK(exmy_format_parse(f.name, &g, err, sizeof err) == 0 && !memcmp(&f, &g, sizeof f),
            "'%s': its name '%s' does not parse back to it", longest[i], f.name);
    }
  }
  /* case-insensitive names, generic eXmY, fn and fnuz suffixes, P3109 */
  exmy_format a = tu_format("E4M3FN"), b = tu_format("e4m3fn");
  CHECK(!memcmp(&a, &b, sizeof a), "%s", "E4M3FN differs from e4m3fn");
  a = tu_format("e8m3");
  CHECK(a.ebits == 8 && a.mbits == 3 && a.bias == 127 && a.inf == EXMY_INF_IEEE, "%s", "e8m3 fields");
  a = tu_format("e3m4fn");
  CHECK(a.inf == EXMY_INF_NONE && a.nan == EXMY_NAN_ONES && a.bias == 3, "%s", "e3m4fn fields");
  a = tu_format("e5m2fnuz");
  b = tu_format("e5m2,bias=16,inf=none,nan=negzero");
  CHECK(!memcmp(&a, &b, sizeof a), "%s", "e5m2fnuz vs long form");
  a = tu_format("e4m3fn,bias=11");
  CHECK(a.bias == 11 && a.nan == EXMY_NAN_ONES, "%s", "name plus field override");
  a = tu_format("binary8p4se");
  CHECK(a.ebits == 4 && a.mbits == 3 && a.bias == 8 && a.inf == EXMY_INF_TOP && a.nan == EXMY_NAN_NEGZERO, "%s", "binary8p4se fields");
  a = tu_format("binary8p3ue");
  CHECK(a.ebits == 6 && a.mbits == 2 && a.bias == 32 && !a.is_signed && a.nan_code == 0xff && a.inf_mag == 0xfe, "%s", "binary8p3ue fields");

  /* properties */
  expect_info("e4m3fn", 448, 0x1p-6, 0x1p-9, 254);
  expect_info("e5m2", 57344, 0x1p-14, 0x1p-16, 248);
  expect_info("e4m3fnuz", 240, 0x1p-7, 0x1p-10, 255);
  expect_info("e5m2fnuz", 57344, 0x1p-15, 0x1p-17, 255);
  expect_info("e4m3b11fnuz", 30, 0x1p-10, 0x1p-13, 255);
  expect_info("e4m3", 240, 0x1p-6, 0x1p-9, 240);
  expect_info("e8m0fnu", 0x1p127, 0x1p-127, 0x1p-127, 255);
  expect_info("e2m1fn", 6, 1, 0.5, 16);
  expect_info("e3m2fn", 28, 0.25, 0.0625, 64);
  expect_info("e2m3fn", 7.5, 1, 0.125, 64);
  expect_info("binary8p4se", 224, 0x1p-7, 0x1p-10, 253);
  expect_info("binary8p3se", 49152, 0x1p-15, 0x1p-17, 253);
  expect_info("bf16", 0x1.fep127, 0x1p-126, 0x1p-133, 65536 - 2 - 254);
  expect_info("f16", 65504, 0x1p-14, 0x1p-24, 65536 - 2048);

  /* e4m3fn: 1.0 is 0x38; 464 (a tie) rounds to 448, anything above is an
   * overflow to NaN; saturation clamps */
  expect_code("e4m3fn", 1.0, EXMY_RNE, EXMY_SAT_NONE, 0x38, 0);
  expect_code("e4m3fn", 464, EXMY_RNE, EXMY_SAT_NONE, 0x7e, I);
  expect_code("e4m3fn", nextafter(464, 1000), EXMY_RNE, EXMY_SAT_NONE, 0x7f, I | O);
  expect_code("e4m3fn", 1e6, EXMY_RNE, EXMY_SAT_FINITE, 0x7e, I | O);
  expect_code("e4m3fn", -1e6, EXMY_RNE, EXMY_SAT_FINITE, 0xfe, I | O);
  expect_code("e4m3fn", INFINITY, EXMY_RNE, EXMY_SAT_FINITE, 0x7e, I);
  expect_code("e4m3fn", INFINITY, EXMY_RNE, EXMY_SAT_NONE, 0x7f, 0);
  expect_code("e4m3fn", 1e6, EXMY_RTZ, EXMY_SAT_NONE, 0x7e, I | O);
  expect_code("e4m3fn", -NAN, EXMY_RNE, EXMY_SAT_NONE, 0xff, V);
  /* the double-rounding example: ml_dtypes gives -448, one rounding gives -416 */
  expect_code("e4m3fn", -431.99999999999994, EXMY_RNE, EXMY_SAT_NONE, 0xfd, I);
  expect_code("e4m3fn", -432, EXMY_RNE, EXMY_SAT_NONE, 0xfe, I);
  expect_code("e4m3fn", -432, EXMY_RNA, EXMY_SAT_NONE, 0xfe, I);
  expect_code("e4m3fn", -400, EXMY_RNA, EXMY_SAT_NONE, 0xfd, I);
  expect_code("e4m3fn", -400, EXMY_RNE, EXMY_SAT_NONE, 0xfc, I);
  /* subnormals and underflow */
  expect_code("e4m3fn", 0x1p-9, EXMY_RNE, EXMY_SAT_NONE, 0x01, 0);
  expect_code("e4m3fn", 0x1p-10, EXMY_RNE, EXMY_SAT_NONE, 0x00, I | U);
  expect_code("e4m3fn", 0x1.8p-10, EXMY_RNE, EXMY_SAT_NONE, 0x01, I | U);
  expect_code("e4m3fn", -0x1p-11, EXMY_RNE, EXMY_SAT_NONE, 0x80, I | U);
  expect_code("e4m3fn", 0x1p-11, EXMY_RUP, EXMY_SAT_NONE, 0x01, I | U);
  expect_code("e4m3fn", 0x1p-11, EXMY_RTO, EXMY_SAT_NONE, 0x01, I | U);
  expect_code("e4m3fn", 1.0625, EXMY_RTO, EXMY_SAT_NONE, 0x39, I);
  expect_code("e4m3fn", 1.125 + 0.0625, EXMY_RTO, EXMY_SAT_NONE, 0x39, I);
  /* e5m2: overflow to inf, rtz to max */
  expect_code("e5m2", 61440, EXMY_RNE, EXMY_SAT_NONE, 0x7c, I | O);
  expect_code("e5m2", 61439, EXMY_RNE, EXMY_SAT_NONE, 0x7b, I);
  expect_code("e5m2", 1e9, EXMY_RTZ, EXMY_SAT_NONE, 0x7b, I | O);
  expect_code("e5m2", -1e9, EXMY_RUP, EXMY_SAT_NONE, 0xfb, I | O);
  expect_code("e5m2", -1e9, EXMY_RDN, EXMY_SAT_NONE, 0xfc, I | O);
  expect_code("e5m2", -INFINITY, EXMY_RNE, EXMY_SAT_PROPAGATE, 0xfc, 0);
  expect_code("e5m2", -1e9, EXMY_RNE, EXMY_SAT_PROPAGATE, 0xfb, I | O);
  /* fnuz: no -0, NaN is 0x80 */
  expect_code("e4m3fnuz", -0.0, EXMY_RNE, EXMY_SAT_NONE, 0x00, 0);
  expect_code("e4m3fnuz", -1e-9, EXMY_RNE, EXMY_SAT_NONE, 0x00, I | U);
  expect_code("e4m3fnuz", NAN, EXMY_RNE, EXMY_SAT_NONE, 0x80, V);
  expect_code("e4m3fnuz", 1e6, EXMY_RNE, EXMY_SAT_NONE, 0x80, I | O);
  /* FP4: no inf, no NaN: overflow saturates; NaN gives +0 and invalid */
  expect_code("e2m1fn", 100, EXMY_RNE, EXMY_SAT_NONE, 0x7, I | O);
  expect_code("e2m1fn", NAN, EXMY_RNE, EXMY_SAT_NONE, 0x0, V);
  expect_code("e2m1fn", 5, EXMY_RNE, EXMY_SAT_NONE, 0x6, I);
  expect_code("e2m1fn", 0.25, EXMY_RNE, EXMY_SAT_NONE, 0x0, I | U);
  expect_code("e2m1fn", 0.75, EXMY_RNE, EXMY_SAT_NONE, 0x2, I | U);
  /* e8m0fnu: powers of two, no zero, ties away (MPFR precision 1) */
  expect_code("e8m0fnu", 1.0, EXMY_RNE, EXMY_SAT_NONE, 0x7f, 0);
  expect_code("e8m0fnu", 3.0, EXMY_RNE, EXMY_SAT_NONE, 0x81, I);
  expect_code("e8m0fnu", 2.9, EXMY_RNE, EXMY_SAT_NONE, 0x80, I);
  expect_code("e8m0fnu", 3.0, EXMY_RTZ, EXMY_SAT_NONE, 0x80, I);
  expect_code("e8m0fnu", 0.0, EXMY_RNE, EXMY_SAT_NONE, 0xff, V);
  expect_code("e8m0fnu", -2.0, EXMY_RNE, EXMY_SAT_NONE, 0xff, V);
  expect_code("e8m0fnu", 1e-45, EXMY_RNE, EXMY_SAT_NONE, 0x00, I | U);
  expect_code("e8m0fnu", 0x1p128, EXMY_RNE, EXMY_SAT_NONE, 0xff, I | O);
  /* P3109 extended: overflow to inf at 0x7f, NaN 0x80 */
  expect_code("binary8p4se", 1000, EXMY_RNE, EXMY_SAT_NONE, 0x7f, I | O);
  expect_code("binary8p4se", -1000, EXMY_RNE, EXMY_SAT_NONE, 0xff, I | O);
  expect_code("binary8p4se", NAN, EXMY_RNE, EXMY_SAT_NONE, 0x80, V);
  /* e8m3 codes are 12 bits */
  a = tu_format("e8m3");
  CHECK(exmy_code_hex_digits(&a) == 3 && exmy_code_bytes(&a) == 2, "%s", "e8m3 width");

  /* errors name the bad text and say what is accepted */
  expect_error("e4m3fnx", "e4m3fnx");
  expect_error("e4m9x", "e4m9x");
  expect_error("e12m3", "12");
  expect_error("e4m60", "60");
  expect_error("e4m3,bias=abc", "abc");
  expect_error("e4m3,bias=", "bias");
  expect_error("e4m3,inf=bogus", "bogus");
  expect_error("e4m3,nan=maybe", "maybe");
  expect_error("e4m3,sign=both", "both");
  expect_error("e4m3,color=red", "color");
  expect_error("e4m3,bias", "bias");
  expect_error("e4m3,nan=negzero", "inf=ieee");
  expect_error("e4m3,sign=unsigned,nan=negzero", "negzero");
  expect_error("e8m0,zero=none", "zero");
  expect_error("e8m3,bias=5000", "bias");
  expect_error("e11m52,bias=0", "bias");
  expect_error("", "empty");
  expect_error("binary8p9se", "binary8p9se");
  expect_error("e0m3", "E >= 1");
  expect_error("e4m3 fn", "spaces");
  /* the validator itself */
  exmy_format g;
  memset(&g, 0, sizeof g);
  g.ebits = 4; g.mbits = 3; g.bias = 7; g.is_signed = 1; g.has_zero = 1; g.inf = EXMY_INF_NONE; g.nan = (exmy_nan)9;
  CHECK(exmy_format_make(&g, NULL, 0) == -1, "%s", "nan=9 accepted");
  g.nan = EXMY_NAN_ONES; g.mbits = 53;
  CHECK(exmy_format_make(&g, NULL, 0) == -1, "%s", "m=53 accepted");
  /* classification of a few codes */
  a = tu_format("e5m2");
  CHECK(exmy_classify(&a, 0x7c) == EXMY_CLASS_INF && exmy_classify(&a, 0x7d) == EXMY_CLASS_NAN &&
        exmy_classify(&a, 0x01) == EXMY_CLASS_SUBNORMAL && exmy_classify(&a, 0x80) == EXMY_CLASS_ZERO &&
        exmy_classify(&a, 0x100) == EXMY_CLASS_NAN, "%s", "e5m2 classes");
  return tu_finish("test_formats");
}
