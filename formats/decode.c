/* decode.c: classify and decode codes exactly, and the format properties
 * that `exmy info` prints. */
#include "exmy.h"
#include "formats/internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

exmy_class exmy_classify(const exmy_format *f, uint64_t code) {
  if (f->bits < 64 && (code >> f->bits)) return EXMY_CLASS_NAN;
  uint64_t mag = code & f->mag_mask;
  if (f->nan == EXMY_NAN_NEGZERO && code == f->sign_mask) return EXMY_CLASS_NAN;
  if (exmy__mag_is_inf(f, mag)) return EXMY_CLASS_INF;
  if (exmy__mag_is_nan(f, mag)) return EXMY_CLASS_NAN;
  if (!f->has_zero) return EXMY_CLASS_NORMAL;
  if (mag == 0) return EXMY_CLASS_ZERO;
  return (mag >> f->mbits) == 0 ? EXMY_CLASS_SUBNORMAL : EXMY_CLASS_NORMAL;
}

const char *exmy_class_name(exmy_class cls) {
  static const char *const names[] = {"zero", "subnormal", "normal", "inf", "nan"};
  return (unsigned)cls <= EXMY_CLASS_NAN ? names[cls] : "?";
}

int exmy_code_sign(const exmy_format *f, uint64_t code) {
  return (code & f->sign_mask) != 0;
}

double exmy_code_to_f64(const exmy_format *f, uint64_t code) {
  exmy_class cls = exmy_classify(f, code);
  int neg = exmy_code_sign(f, code);
  if (cls == EXMY_CLASS_NAN) return neg ? -NAN : NAN;
  if (cls == EXMY_CLASS_INF) return neg ? -INFINITY : INFINITY;
  uint64_t mag = code & f->mag_mask;
  uint64_t biased = mag >> f->mbits;
  uint64_t mant = mag & ((((uint64_t)1) << f->mbits) - 1);
  uint64_t sig;
  int e;
  if (f->has_zero && biased == 0) { /* zero or subnormal */
    sig = mant;
    e = f->emin - f->mbits;
  } else {
    sig = (((uint64_t)1) << f->mbits) | mant;
    e = (int)biased + f->emin - (f->has_zero ? 1 : 0) - f->mbits;
  }
  double v;
  if (e >= -1022 && e <= 1023 - 53) { /* sig * 2^e, the power of two from its bits: exact, no libm call */
    const uint64_t pb = (uint64_t)(e + 1023) << 52;
    double p2;
    memcpy(&p2, &pb, 8);
    v = (double)sig * p2;
  } else {
    v = ldexp((double)sig, e);
  }
  return neg ? -v : v;
}

void exmy_format_info(const exmy_format *f, exmy_info *in) {
  memset(in, 0, sizeof *in);
  in->max_finite = exmy_code_to_f64(f, f->max_mag);
  if (f->has_zero) {
    in->min_normal = ldexp(1.0, f->emin);
    in->min_subnormal = f->mbits ? ldexp(1.0, f->emin - f->mbits) : in->min_normal;
    if (f->ebits == 0) in->min_normal = 0; /* no normals at all */
  } else {
    in->min_normal = in->min_subnormal = ldexp(1.0, f->emin);
  }
  in->epsilon = ldexp(1.0, -f->mbits);
  if (f->has_zero) {
    in->zero_codes[in->n_zero++] = 0;
    if (f->is_signed && f->nan != EXMY_NAN_NEGZERO) in->zero_codes[in->n_zero++] = f->sign_mask;
  }
  if (f->inf != EXMY_INF_NONE) {
    in->inf_codes[in->n_inf++] = f->inf_mag;
    if (f->is_signed) in->inf_codes[in->n_inf++] = f->sign_mask | f->inf_mag;
  }
  uint64_t nan_per_sign = 0;
  if (f->nan == EXMY_NAN_NEGZERO) {
    in->n_nan = 1;
    in->nan_first[0] = in->nan_last[0] = f->sign_mask;
    in->n_nan_ranges = 1;
  } else if (f->nan != EXMY_NAN_NONE) {
    uint64_t lo = f->max_mag + 1 + (f->inf != EXMY_INF_NONE && f->inf_mag == f->max_mag + 1);
    nan_per_sign = f->mag_mask - lo + 1;
    in->nan_first[0] = lo;
    in->nan_last[0] = f->mag_mask;
    in->n_nan_ranges = 1;
    if (f->is_signed) {
      in->nan_first[1] = f->sign_mask | lo;
      in->nan_last[1] = f->sign_mask | f->mag_mask;
      in->n_nan_ranges = 2;
    }
    in->n_nan = nan_per_sign * (f->is_signed ? 2 : 1);
  }
  /* finite codes: all codes minus inf and NaN codes (saturating at 2^64-1) */
  uint64_t per_sign = f->max_mag + 1;
  if (f->is_signed) {
    uint64_t fc = per_sign * 2;
    if (per_sign > (UINT64_MAX >> 1)) fc = UINT64_MAX;
    if (f->nan == EXMY_NAN_NEGZERO) fc -= 1;
    in->finite_count = fc;
  } else {
    in->finite_count = per_sign;
  }
}

/* Print a code as 0x + zero-padded lowercase hex. */
static void print_code(const exmy_format *f, FILE *out, uint64_t code) {
  fprintf(out, "0x%0*llx", exmy_code_hex_digits(f), (unsigned long long)code);
}

static void print_value(FILE *out, double v) {
  fprintf(out, "%.17g (%a)", v, v);
}

void exmy_format_info_print(const exmy_format *f, FILE *out) {
  exmy_info in;
  char lf[160];
  exmy_format_info(f, &in);
  exmy_format_to_string(f, lf, sizeof lf);
  fprintf(out, "format         %s\n", f->name);
  fprintf(out, "long form      %s\n", lf);
  fprintf(out, "bits           %d (sign %d, exponent %d, mantissa %d)\n", f->bits, f->is_signed, f->ebits, f->mbits);
  fprintf(out, "bias           %d\n", f->bias);
  fprintf(out, "max finite     "); print_value(out, in.max_finite); fputc('\n', out);
  fprintf(out, "min normal     ");
  if (f->ebits == 0) fprintf(out, "none (no exponent field)"); else print_value(out, in.min_normal);
  fputc('\n', out);
  fprintf(out, "min subnormal  ");
  if (!f->has_zero || f->mbits == 0) fprintf(out, "none");
  else print_value(out, in.min_subnormal);
  fputc('\n', out);
  fprintf(out, "epsilon        "); print_value(out, in.epsilon); fputc('\n', out);
  fprintf(out, "finite values  %llu\n", (unsigned long long)in.finite_count);
  fprintf(out, "zero           ");
  if (!in.n_zero) fprintf(out, "none");
  for (int i = 0; i < in.n_zero; i++) { if (i) fprintf(out, ", "); print_code(f, out, in.zero_codes[i]); }
  fprintf(out, "\ninf            ");
  if (!in.n_inf) fprintf(out, "none");
  for (int i = 0; i < in.n_inf; i++) { if (i) fprintf(out, ", "); print_code(f, out, in.inf_codes[i]); }
  fprintf(out, "\nnan            ");
  if (!in.n_nan_ranges) fprintf(out, "none");
  for (int i = 0; i < in.n_nan_ranges; i++) {
    if (i) fprintf(out, ", ");
    print_code(f, out, in.nan_first[i]);
    if (in.nan_last[i] != in.nan_first[i]) { fprintf(out, "..");  print_code(f, out, in.nan_last[i]); }
  }
  fputc('\n', out);
}
