/* test_roundtrip.c: every code of every format of at most 16 bits decodes to
 * a value that quantizes back to the same code, exactly (no flags), in every
 * rounding mode and through every input type that holds the value; NaN codes
 * come back as the canonical NaN of their sign.  Named formats, every P3109
 * format of 3..8 bits, and random ExMy formats. */
#include "testutil.h"
#include <math.h>

static const exmy_round_mode modes[] = {EXMY_RNE, EXMY_RNA, EXMY_RTZ, EXMY_RUP, EXMY_RDN, EXMY_RTO, EXMY_SR};

static uint64_t canonical_nan(const exmy_format *f, uint64_t code) {
  if (f->nan == EXMY_NAN_NEGZERO) return f->sign_mask;
  return (code & f->sign_mask) | f->mag_mask;
}

static int fits_float(double v) { return isnan(v) || (double)(float)v == v; }

static void check_format(const exmy_format *f) {
  uint64_t n = (uint64_t)1 << f->bits;
  double *vals = malloc(n * sizeof *vals);
  void *codes = malloc(n * 8);
  for (int mi = 0; mi < 7; mi++) {
    exmy_rounding r = exmy_rounding_default();
    r.mode = modes[mi];
    r.seed = 12345;
    for (uint64_t c = 0; c < n; c++) {
      double v = exmy_code_to_f64(f, c);
      exmy_class cls = exmy_classify(f, c);
      vals[c] = v;
      unsigned fl = 0;
      uint64_t q = exmy_from_f64(f, &r, v, c, &fl);
      if (cls == EXMY_CLASS_NAN) {
        CHECK(q == canonical_nan(f, c) && fl == EXMY_FLAG_INVALID,
              "%s %s: NaN code 0x%" PRIx64 " -> 0x%" PRIx64 " flags %u", f->name, exmy_round_mode_name(r.mode), c, q, fl);
      } else {
        CHECK(q == c && fl == 0, "%s %s: code 0x%" PRIx64 " value %a -> 0x%" PRIx64 " flags %u", f->name,
              exmy_round_mode_name(r.mode), c, v, q, fl);
      }
      if (fits_float(v)) {
        fl = 0;
        uint64_t qf = exmy_from_f32(f, &r, (float)v, c, &fl);
        CHECK(qf == q, "%s %s: float path code 0x%" PRIx64 " value %a -> 0x%" PRIx64 " (double gave 0x%" PRIx64 ")",
              f->name, exmy_round_mode_name(r.mode), c, v, qf, q);
      }
    }
    /* the array paths, fast and reference, on the same values */
    unsigned fl = 0;
    int rc = exmy_quantize(f, &r, EXMY_DTYPE_F64, vals, n, 0, codes, &fl, NULL, 0);
    for (uint64_t c = 0; c < n; c++) {
      uint64_t q = exmy_code_get(f, codes, c);
      uint64_t want = exmy_classify(f, c) == EXMY_CLASS_NAN ? canonical_nan(f, c) : c;
      CHECK(rc == 0 && q == want, "%s %s: array code 0x%" PRIx64 " -> 0x%" PRIx64, f->name, exmy_round_mode_name(r.mode), c, q);
    }
    (void)fl;
    int all_float = 1;
    for (uint64_t c = 0; c < n; c++) all_float &= fits_float(vals[c]);
    if (all_float) {
      float *fv = malloc(n * sizeof *fv);
      for (uint64_t c = 0; c < n; c++) fv[c] = (float)vals[c];
      rc = exmy_quantize(f, &r, EXMY_DTYPE_F32, fv, n, 0, codes, NULL, NULL, 0);
      for (uint64_t c = 0; c < n; c++) {
        uint64_t q = exmy_code_get(f, codes, c);
        uint64_t want = exmy_classify(f, c) == EXMY_CLASS_NAN ? canonical_nan(f, c) : c;
        CHECK(rc == 0 && q == want, "%s %s: f32 array code 0x%" PRIx64 " -> 0x%" PRIx64, f->name, exmy_round_mode_name(r.mode), c, q);
      }
      /* decode arrays agree with scalar decode */
      float *dv = malloc(n * sizeof *dv);
      double *dd = malloc(n * sizeof *dd);
      for (uint64_t c = 0; c < n; c++) exmy_code_set(f, codes, c, c);
      exmy_codes_to_f32(f, codes, n, dv);
      exmy_codes_to_f64(f, codes, n, dd);
      for (uint64_t c = 0; c < n; c++) {
        CHECK((isnan(dv[c]) && isnan(vals[c])) || tu_bits32(dv[c]) == tu_bits32((float)vals[c]),
              "%s: decode_f32 code 0x%" PRIx64, f->name, c);
        CHECK((isnan(dd[c]) && isnan(vals[c])) || tu_bits64(dd[c]) == tu_bits64(vals[c]), "%s: decode_f64 code 0x%" PRIx64, f->name, c);
      }
      /* a long array takes the table-driven decode: same values */
      size_t n5 = 5 * n;
      void *c5 = malloc(n5 * 8);
      float *dv5 = malloc(n5 * sizeof *dv5);
      double *dd5 = malloc(n5 * sizeof *dd5);
      for (size_t i = 0; i < n5; i++) exmy_code_set(f, c5, i, i % n);
      exmy_codes_to_f32(f, c5, n5, dv5);
      exmy_codes_to_f64(f, c5, n5, dd5);
      for (size_t i = 0; i < n5; i++) {
        CHECK(tu_bits32(dv5[i]) == tu_bits32(dv[i % n]), "%s: long decode_f32 code 0x%zx", f->name, i % n);
        CHECK(tu_bits64(dd5[i]) == tu_bits64(dd[i % n]), "%s: long decode_f64 code 0x%zx", f->name, i % n);
      }
      free(c5);
      free(dv5);
      free(dd5);
      free(fv);
      free(dv);
      free(dd);
    }
  }
  free(vals);
  free(codes);
}

int main(void) {
  uint64_t st = tu_seed(20261122);
  int nformats = 0;
  for (size_t i = 0; i < exmy_named_format_count(); i++) {
    exmy_format f = tu_format(exmy_named_format_get(i)->name);
    if (f.bits <= 16) { check_format(&f); nformats++; }
  }
  char name[32];
  for (int k = 3; k <= 8; k++)
    for (int p = 1; p <= k; p++)
      for (int s = 0; s < 2; s++)
        for (int d = 0; d < 2; d++) {
          exmy_format f;
          snprintf(name, sizeof name, "binary%dp%d%c%c", k, p, s ? 's' : 'u', d ? 'e' : 'f');
          if (exmy_format_parse(name, &f, NULL, 0) == 0) { check_format(&f); nformats++; }
        }
  for (int i = 0; i < 60; i++) {
    exmy_format f = tu_random_format(&st);
    check_format(&f);
    nformats++;
  }
  printf("%d formats\n", nformats);
  return tu_finish("test_roundtrip");
}
