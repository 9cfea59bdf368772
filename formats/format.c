/* format.c: the format struct's validator, the named-format table, the
 * name / long-form parser and printer.  Semantics: docs/formats.md. */
#include "exmy.h"
#include "formats/internal.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one table of named formats (LLVM / MLIR / ml_dtypes names, and the
 * P3109 conformance formats). */
static const exmy_named_format named_formats[] = {
  {"e4m3fn", "e4m3,inf=none,nan=ones", "OCP FP8 E4M3 (NVIDIA E4M3): max 448, no inf"},
  {"e5m2", "e5m2", "OCP FP8 E5M2 (IEEE-like): max 57344, has inf"},
  {"e4m3fnuz", "e4m3,bias=8,inf=none,nan=negzero", "AMD/Graphcore FP8: NaN is 0x80, no -0"},
  {"e5m2fnuz", "e5m2,bias=16,inf=none,nan=negzero", "AMD/Graphcore FP8: NaN is 0x80, no -0"},
  {"e4m3b11fnuz", "e4m3,bias=11,inf=none,nan=negzero", "Graphcore/TPU FP8 with bias 11"},
  {"e4m3", "e4m3", "IEEE-like E4M3: max 240, has inf"},
  {"e3m4", "e3m4", "IEEE-like E3M4"},
  {"e8m0fnu", "e8m0,sign=unsigned,inf=none,nan=ones,zero=none", "OCP MX scale: 2^(code-127), 0xff NaN, no zero"},
  {"e3m2fn", "e3m2,inf=none,nan=none", "OCP MX FP6 E3M2: max 28"},
  {"e2m3fn", "e2m3,inf=none,nan=none", "OCP MX FP6 E2M3: max 7.5"},
  {"e2m1fn", "e2m1,inf=none,nan=none", "OCP MX / NVFP4 FP4 E2M1: max 6"},
  {"bf16", "e8m7", "bfloat16"},
  {"f16", "e5m10", "IEEE binary16"},
  {"tf32", "e8m10", "NVIDIA TensorFloat-32 (19 bits)"},
  {"f32", "e8m23", "IEEE binary32"},
  {"f64", "e11m52", "IEEE binary64"},
  {"binary8p4se", "e4m3,bias=8,inf=top,nan=negzero", "IEEE P3109 8-bit, precision 4, signed extended: max 224"},
  {"binary8p3se", "e5m2,bias=16,inf=top,nan=negzero", "IEEE P3109 8-bit, precision 3, signed extended: max 49152"},
  {"binary4p2sf", "e2m1,bias=2,inf=none,nan=negzero", "IEEE P3109 4-bit, precision 2, signed finite"},
};

size_t exmy_named_format_count(void) {
  return sizeof named_formats / sizeof named_formats[0];
}

const exmy_named_format *exmy_named_format_get(size_t index) {
  return index < exmy_named_format_count() ? &named_formats[index] : NULL;
}

static int parse_text(const char *text, exmy_format *f, char *err, size_t errlen, int use_table);

static const char *const inf_names[] = {"ieee", "top", "none"};
static const char *const nan_names[] = {"ieee", "ones", "negzero", "none"};

/* One-line error into err (when given); returns -1.  Shared by the library's
 * parsers (declared in internal.h). */
int exmy__fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}
#define fail exmy__fail

int exmy_default_bias(int ebits) {
  if (ebits <= 0) return 1;
  return (1 << (ebits - 1)) - 1;
}

int exmy_format_make(exmy_format *f, char *err, size_t errlen) {
  if (f->ebits < 0 || f->ebits > 11)
    return fail(err, errlen, "exponent bits %d out of range (accepted: 0..11)", f->ebits);
  if (f->mbits < 0 || f->mbits > 52)
    return fail(err, errlen, "mantissa bits %d out of range (accepted: 0..52)", f->mbits);
  if (f->is_signed != 0 && f->is_signed != 1)
    return fail(err, errlen, "sign must be signed or unsigned");
  if (f->has_zero != 0 && f->has_zero != 1)
    return fail(err, errlen, "zero must be yes or none");
  if ((unsigned)f->inf > EXMY_INF_NONE) return fail(err, errlen, "bad inf convention");
  if ((unsigned)f->nan > EXMY_NAN_NONE) return fail(err, errlen, "bad nan convention");
  if (f->ebits + f->mbits < 1)
    return fail(err, errlen, "e%dm%d has no exponent or mantissa bits", f->ebits, f->mbits);
  f->bits = f->is_signed + f->ebits + f->mbits;
  if (f->ebits == 0 && (f->inf == EXMY_INF_IEEE || f->nan == EXMY_NAN_IEEE))
    return fail(err, errlen, "e0m%d has no exponent field: inf=ieee and nan=ieee need E >= 1 (use inf=none/top, nan=none/ones/negzero)", f->mbits);
  if (f->nan == EXMY_NAN_IEEE && f->mbits == 0)
    return fail(err, errlen, "nan=ieee needs at least one mantissa bit (use nan=ones or nan=none)");
  if (f->nan == EXMY_NAN_NEGZERO && !f->is_signed)
    return fail(err, errlen, "nan=negzero needs a signed format");
  if (!f->has_zero && (f->mbits != 0 || f->ebits == 0))
    return fail(err, errlen, "zero=none is for exponent-only formats (M = 0, E >= 1), not e%dm%d", f->ebits, f->mbits);

  f->mag_mask = (f->ebits + f->mbits >= 64) ? ~(uint64_t)0 : (((uint64_t)1 << (f->ebits + f->mbits)) - 1);
  f->sign_mask = f->is_signed ? (uint64_t)1 << (f->bits - 1) : 0;

  /* Special magnitudes must sit contiguously at the top: everything above
   * the largest finite code is inf or NaN. */
  uint64_t ones = f->mag_mask;
  uint64_t topexp = f->ebits ? ((((uint64_t)1 << f->ebits) - 1) << f->mbits) : 0;
  uint64_t nan_lo = ones + 1; /* lowest NaN magnitude (ones+1: none) */
  int has_nan_mag = 0;
  if (f->nan == EXMY_NAN_IEEE) { nan_lo = topexp + 1; has_nan_mag = 1; }
  else if (f->nan == EXMY_NAN_ONES) { nan_lo = ones; has_nan_mag = 1; }
  uint64_t special_lo = has_nan_mag ? nan_lo : ones + 1;
  if (f->inf == EXMY_INF_IEEE) {
    f->inf_mag = topexp;
    if (has_nan_mag && nan_lo <= topexp)
      return fail(err, errlen, "inf=ieee and nan=ones share the code 0x%llx: use inf=top or nan=ieee", (unsigned long long)topexp);
    if (has_nan_mag ? topexp + 1 != nan_lo : topexp != ones)
      return fail(err, errlen, "inf=ieee leaves codes above infinity with no meaning: use nan=ieee, or inf=none / inf=top");
    special_lo = topexp;
  } else if (f->inf == EXMY_INF_TOP) {
    f->inf_mag = has_nan_mag ? nan_lo - 1 : ones;
    special_lo = f->inf_mag;
  } else {
    f->inf_mag = 0;
  }
  if (special_lo == 0)
    return fail(err, errlen, "no finite values left after inf and NaN codes");
  f->max_mag = special_lo - 1;
  if (f->max_mag == 0 && f->has_zero)
    return fail(err, errlen, "no nonzero finite values left after inf and NaN codes");

  /* NaN code. */
  if (f->nan == EXMY_NAN_NEGZERO) f->nan_code = f->sign_mask;
  else if (f->nan != EXMY_NAN_NONE) f->nan_code = ones;
  else f->nan_code = 0;

  /* Exponents: emin is the smallest normal's exponent. */
  if (f->has_zero) f->emin = 1 - f->bias;
  else f->emin = -f->bias;
  uint64_t maxbiased = f->max_mag >> f->mbits;
  uint64_t maxmant = f->max_mag & ((((uint64_t)1) << f->mbits) - 1);
  if (f->has_zero && maxbiased == 0) /* every finite value is subnormal */
    f->emax = f->emin - f->mbits + (63 - __builtin_clzll(maxmant));
  else
    f->emax = (int)maxbiased - f->bias;
  /* Every value must be exactly a double: exponents within binary64's. */
  long lo_exp = (long)f->emin - (f->has_zero ? f->mbits : 0);
  long hi_exp = (long)f->emax;
  if (lo_exp < -1074 || hi_exp > 1023) {
    long bias_hi = (long)f->bias + (lo_exp + 1074);
    long bias_lo = (long)f->bias + (hi_exp - 1023);
    return fail(err, errlen, "bias %d out of range for e%dm%d (accepted: %ld..%ld, so that every value is a double)",
                f->bias, f->ebits, f->mbits, bias_lo > -100000 ? bias_lo : -100000, bias_hi);
  }
  /* Name: the table entry that describes the same format, else the long form.
   * The table's long forms are canonical (what exmy_format_to_string writes;
   * test_formats checks it), so one string compare per row finds the entry
   * without parsing the table on every call. */
  char lf[160];
  exmy_format_to_string(f, lf, sizeof lf);
  const char *name = lf;
  for (size_t i = 0; i < exmy_named_format_count(); i++)
    if (!strcmp(lf, named_formats[i].longform)) {
      name = named_formats[i].name;
      break;
    }
  snprintf(f->name, sizeof f->name, "%.63s", name); /* every long form fits (exmy.h: at most 57) */
  return 0;
}

int exmy_format_to_string(const exmy_format *f, char *buf, size_t buflen) {
  char tmp[160];
  int n = snprintf(tmp, sizeof tmp, "e%dm%d", f->ebits, f->mbits);
  if (f->bias != exmy_default_bias(f->ebits)) n += snprintf(tmp + n, sizeof tmp - n, ",bias=%d", f->bias);
  if (!f->is_signed) n += snprintf(tmp + n, sizeof tmp - n, ",sign=unsigned");
  if (f->inf != EXMY_INF_IEEE) n += snprintf(tmp + n, sizeof tmp - n, ",inf=%s", inf_names[f->inf]);
  if (f->nan != EXMY_NAN_IEEE) n += snprintf(tmp + n, sizeof tmp - n, ",nan=%s", nan_names[f->nan]);
  if (!f->has_zero) n += snprintf(tmp + n, sizeof tmp - n, ",zero=none");
  return snprintf(buf, buflen, "%s", tmp);
}

/* Parse a decimal integer that fills the whole of [s, end). */
static int parse_int(const char *s, size_t len, long lo, long hi, long *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (*end || errno || v < lo || v > hi) return -1;
  if (!isdigit((unsigned char)buf[0]) && !(buf[0] == '-' && isdigit((unsigned char)buf[1])) &&
      !(buf[0] == '+' && isdigit((unsigned char)buf[1])))
    return -1;
  *out = v;
  return 0;
}

/* "eXmY" with optional suffix: "" (IEEE), "fn" (no inf, NaN all-ones),
 * "fnuz" (no inf, NaN 0x80.., bias 2^(E-1)).  Returns 0 or -1. */
static int parse_exmy_token(const char *s, size_t len, exmy_format *f) {
  if (len < 4 || s[0] != 'e') return -1;
  size_t i = 1;
  long e = 0, m = 0;
  size_t st = i;
  while (i < len && isdigit((unsigned char)s[i])) i++;
  if (i == st || i - st > 3 || i >= len || s[i] != 'm') return -1;
  if (parse_int(s + st, i - st, 0, 999, &e)) return -1;
  st = ++i;
  while (i < len && isdigit((unsigned char)s[i])) i++;
  if (i == st || i - st > 3) return -1;
  if (parse_int(s + st, i - st, 0, 999, &m)) return -1;
  const char *suf = s + i;
  size_t suflen = len - i;
  f->ebits = (int)e;
  f->mbits = (int)m;
  f->is_signed = 1;
  f->has_zero = 1;
  f->inf = EXMY_INF_IEEE;
  f->nan = EXMY_NAN_IEEE;
  f->bias = (e >= 1 && e <= 30) ? exmy_default_bias((int)e) : (e == 0 ? 1 : 0);
  if (suflen == 0) return 0;
  if (suflen == 2 && !memcmp(suf, "fn", 2)) {
    f->inf = EXMY_INF_NONE;
    f->nan = EXMY_NAN_ONES;
    return 0;
  }
  if (suflen == 4 && !memcmp(suf, "fnuz", 4)) {
    f->inf = EXMY_INF_NONE;
    f->nan = EXMY_NAN_NEGZERO;
    f->bias = (e >= 1 && e <= 30) ? (1 << (e - 1)) : 0;
    return 0;
  }
  return -1;
}

/* P3109 names binaryKpP{s,u}{e,f}. */
static int parse_p3109(const char *s, size_t len, exmy_format *f) {
  if (len < 10 || strncmp(s, "binary", 6)) return -1;
  size_t i = 6, st = i;
  long k, p;
  while (i < len && isdigit((unsigned char)s[i])) i++;
  if (i == st || i >= len || s[i] != 'p' || parse_int(s + st, i - st, 1, 64, &k)) return -1;
  st = ++i;
  while (i < len && isdigit((unsigned char)s[i])) i++;
  if (i == st || parse_int(s + st, i - st, 1, 64, &p)) return -1;
  if (len - i != 2) return -1;
  char sg = s[i], dom = s[i + 1];
  if ((sg != 's' && sg != 'u') || (dom != 'e' && dom != 'f')) return -1;
  f->is_signed = sg == 's';
  f->has_zero = 1;
  f->mbits = (int)p - 1;
  f->ebits = f->is_signed ? (int)(k - p) : (int)(k - p + 1);
  if (f->ebits < 1 || f->ebits > 11) return -2;
  f->bias = f->is_signed ? (1 << (k - p - 1)) : (1 << (k - p));
  f->nan = f->is_signed ? EXMY_NAN_NEGZERO : EXMY_NAN_ONES;
  f->inf = dom == 'e' ? EXMY_INF_TOP : EXMY_INF_NONE;
  return 0;
}

static int lookup_enum(const char *v, size_t vlen, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (strlen(names[i]) == vlen && !memcmp(v, names[i], vlen)) return i;
  return -1;
}

/* Parse without validating.  Table long forms are parsed with the table off
 * (they start with a plain eXmY), which ends the recursion. */
static int parse_text(const char *text, exmy_format *f, char *err, size_t errlen, int use_table) {
  char low[256];
  size_t tl = strlen(text);
  if (tl == 0) return fail(err, errlen, "empty format name");
  if (tl >= sizeof low) return fail(err, errlen, "format text too long (%zu characters)", tl);
  for (size_t i = 0; i <= tl; i++) low[i] = (char)tolower((unsigned char)text[i]);
  for (size_t i = 0; i < tl; i++)
    if (isspace((unsigned char)low[i]))
      return fail(err, errlen, "format '%s': no spaces allowed", text);
  const char *comma = strchr(low, ',');
  size_t headlen = comma ? (size_t)(comma - low) : tl;
  memset(f, 0, sizeof *f);
  int found = 0;
  for (size_t i = 0; use_table && i < exmy_named_format_count() && !found; i++) {
    const char *nm = named_formats[i].name;
    if (strlen(nm) == headlen && !memcmp(low, nm, headlen)) {
      if (parse_text(named_formats[i].longform, f, err, errlen, 0)) return -1;
      found = 1;
    }
  }
  if (!found) {
    int r = parse_p3109(low, headlen, f);
    if (r == -2)
      return fail(err, errlen, "format '%.*s': P3109 K and P give %d exponent bits (accepted: 1..11)", (int)headlen, text, f->ebits);
    if (r == 0) found = 1;
  }
  if (!found && parse_exmy_token(low, headlen, f) == 0) found = 1;
  if (!found)
    return fail(err, errlen, "unknown format '%.*s' (accepted: a name from `exmy formats`, eXmY[fn|fnuz], binaryKpP{s,u}{e,f}, or a long form like e4m3,bias=11,inf=none,nan=ones)",
                (int)headlen, text);
  const char *p = comma;
  while (p) {
    const char *field = p + 1;
    const char *next = strchr(field, ',');
    size_t flen = next ? (size_t)(next - field) : strlen(field);
    const char *eq = memchr(field, '=', flen);
    if (!eq)
      return fail(err, errlen, "format '%s': field '%.*s' is not key=value (keys: bias, sign, inf, nan, zero)", text, (int)flen, text + (field - low));
    size_t klen = (size_t)(eq - field), vlen = flen - klen - 1;
    const char *v = eq + 1;
    const char *vorig = text + (v - low);
    int idx;
    if (klen == 4 && !memcmp(field, "bias", 4)) {
      long b;
      if (parse_int(v, vlen, -100000, 100000, &b))
        return fail(err, errlen, "format '%s': bad bias '%.*s' (accepted: an integer)", text, (int)vlen, vorig);
      f->bias = (int)b;
    } else if (klen == 4 && !memcmp(field, "sign", 4)) {
      if (vlen == 6 && !memcmp(v, "signed", 6)) f->is_signed = 1;
      else if (vlen == 8 && !memcmp(v, "unsigned", 8)) f->is_signed = 0;
      else return fail(err, errlen, "format '%s': bad sign '%.*s' (accepted: signed, unsigned)", text, (int)vlen, vorig);
    } else if (klen == 3 && !memcmp(field, "inf", 3)) {
      if ((idx = lookup_enum(v, vlen, inf_names, 3)) < 0)
        return fail(err, errlen, "format '%s': bad inf '%.*s' (accepted: ieee, top, none)", text, (int)vlen, vorig);
      f->inf = (exmy_inf)idx;
    } else if (klen == 3 && !memcmp(field, "nan", 3)) {
      if ((idx = lookup_enum(v, vlen, nan_names, 4)) < 0)
        return fail(err, errlen, "format '%s': bad nan '%.*s' (accepted: ieee, ones, negzero, none)", text, (int)vlen, vorig);
      f->nan = (exmy_nan)idx;
    } else if (klen == 4 && !memcmp(field, "zero", 4)) {
      if (vlen == 3 && !memcmp(v, "yes", 3)) f->has_zero = 1;
      else if (vlen == 4 && !memcmp(v, "none", 4)) f->has_zero = 0;
      else return fail(err, errlen, "format '%s': bad zero '%.*s' (accepted: yes, none)", text, (int)vlen, vorig);
    } else {
      return fail(err, errlen, "format '%s': unknown field '%.*s' (accepted: bias, sign, inf, nan, zero)", text, (int)klen, text + (field - low));
    }
    p = next;
  }
  return 0;
}

int exmy__parse_longform(const char *text, exmy_format *f, char *err, size_t errlen) {
  return parse_text(text, f, err, errlen, 1);
}

int exmy_format_parse(const char *text, exmy_format *f, char *err, size_t errlen) {
  char why[EXMY_ERRLEN];
  if (!text) return fail(err, errlen, "no format given");
  if (exmy__parse_longform(text, f, err, errlen)) return -1;
  if (exmy_format_make(f, why, sizeof why)) return fail(err, errlen, "format '%s': %s", text, why);
  return 0;
}

int exmy_code_hex_digits(const exmy_format *f) { return (f->bits + 3) / 4; }

int exmy_code_bytes(const exmy_format *f) {
  return f->bits <= 8 ? 1 : f->bits <= 16 ? 2 : f->bits <= 32 ? 4 : 8;
}

const char *exmy_round_mode_name(exmy_round_mode mode) {
  static const char *const names[] = {"rne", "rna", "rtz", "rup", "rdn", "rto", "sr"};
  return (unsigned)mode <= EXMY_SR ? names[mode] : "?";
}

int exmy_round_mode_parse(const char *text, exmy_round_mode *mode, char *err, size_t errlen) {
  for (int m = EXMY_RNE; m <= EXMY_SR; m++)
    if (text && !strcmp(text, exmy_round_mode_name((exmy_round_mode)m))) {
      *mode = (exmy_round_mode)m;
      return 0;
    }
  return exmy__fail(err, errlen, "bad rounding mode '%s' (accepted: rne, rna, rtz, rup, rdn, rto, sr)", text ? text : "");
}

exmy_rounding exmy_rounding_default(void) {
  exmy_rounding r;
  memset(&r, 0, sizeof r);
  r.mode = EXMY_RNE;
  r.sat = EXMY_SAT_NONE;
  r.sr_bits = 64; /* valid when the caller switches the mode to sr */
  return r;
}

int exmy_rounding_check(const exmy_rounding *r, char *err, size_t errlen) {
  if (!r) return fail(err, errlen, "rounding: none given (rnd is NULL)");
  if ((unsigned)r->mode > EXMY_SR)
    return fail(err, errlen, "rounding: mode %d is not a rounding mode (accepted: 0..6, rne rna rtz rup rdn rto sr)",
                (int)r->mode);
  if ((unsigned)r->sat > EXMY_SAT_PROPAGATE)
    return fail(err, errlen, "rounding: sat %d is not a saturation (accepted: 0..2, none finite propagate)", (int)r->sat);
  if (r->ftz != 0 && r->ftz != 1) return fail(err, errlen, "rounding: ftz %d is not 0 or 1", r->ftz);
  if (r->daz != 0 && r->daz != 1) return fail(err, errlen, "rounding: daz %d is not 0 or 1", r->daz);
  /* 0 used to mean 64 silently: with sr it is now an error, not a guess */
  if (r->mode == EXMY_SR && (r->sr_bits < 1 || r->sr_bits > 64))
    return fail(err, errlen, "rounding: sr_bits %d out of range for sr (accepted: 1..64)", r->sr_bits);
  if (r->sr_bits < 0 || r->sr_bits > 64)
    return fail(err, errlen, "rounding: sr_bits %d out of range (accepted: 0..64; 1..64 for sr)", r->sr_bits);
  return 0;
}
