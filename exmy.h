/* exmy.h: the one public header of libexmy, bit-exact ExMy / FP8 numerics.
 *
 * A format is a validated parameter struct (exmy_format); named formats are
 * entries of one table.  Every conversion funnels into one round-and-pack
 * routine and takes its rounding mode, saturation, seed and flag output as
 * explicit arguments: there is no global mode, so calls are safe from any
 * OpenMP or CUDA thread.  Semantics: ../shared/design/formats.md and
 * docs/formats.md. */
#ifndef EXMY_H
#define EXMY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EXMY_VERSION "0.1.0"

/* ---- formats ---------------------------------------------------------- */

typedef enum exmy_inf {
  EXMY_INF_IEEE = 0, /* all-ones exponent, zero mantissa */
  EXMY_INF_TOP,      /* largest-magnitude non-NaN code of each sign (P3109 extended) */
  EXMY_INF_NONE
} exmy_inf;

typedef enum exmy_nan {
  EXMY_NAN_IEEE = 0, /* all-ones exponent, nonzero mantissa */
  EXMY_NAN_ONES,     /* only the all-ones magnitude code of each sign */
  EXMY_NAN_NEGZERO,  /* only the code 100...0; the format has no -0 */
  EXMY_NAN_NONE
} exmy_nan;

/* Fill the first six fields (or call exmy_format_set), then exmy_format_init
 * validates them and derives the rest.  Never modify a format after init. */
typedef struct exmy_format {
  int ebits;        /* exponent bits E, 0..11 */
  int mbits;        /* stored mantissa bits M, 0..52, 1+E+M <= 64 (E+M <= 64 unsigned) */
  int bias;         /* exponent bias */
  int is_signed;    /* 1: sign bit on top; 0: unsigned */
  int has_zero;     /* 1 normally; 0 for scale formats like e8m0fnu whose code 0 is 2^-bias */
  exmy_inf inf;
  exmy_nan nan;
  /* ---- derived by exmy_format_init ---- */
  int bits;                /* total bits */
  int emin;                /* exponent of the smallest normal */
  int emax;                /* exponent of the largest finite value (floor of log2) */
  uint64_t mag_mask;       /* mask of the magnitude bits */
  uint64_t sign_mask;      /* the sign bit (0 when unsigned) */
  uint64_t max_mag;        /* magnitude code of the largest finite value */
  uint64_t inf_mag;        /* magnitude code of +inf (valid when inf != NONE) */
  uint64_t nan_code;       /* canonical positive NaN code (valid when nan != NONE) */
  char name[48];           /* table name if it matches one, else the long form */
} exmy_format;

/* Default bias for E exponent bits: 2^(E-1) - 1 (1 when E = 0). */
int exmy_default_bias(int ebits);

/* Validate and derive.  Returns 0, or -1 with a one-line reason in err. */
int exmy_format_init(exmy_format *fmt, char *err, size_t errlen);

/* Parse a name (e4m3fn, e5m2, bf16, e8m3, binary8p4se, ...) or a long form
 * "e4m3,bias=11,inf=none,nan=ones,sign=unsigned,zero=none".  Returns 0, or
 * -1 with a one-line error that names the bad text and says what is accepted. */
int exmy_format_parse(const char *text, exmy_format *fmt, char *err, size_t errlen);

/* The long form of fmt, which exmy_format_parse reads back to the same format.
 * Returns the length it needed (snprintf semantics). */
int exmy_format_longform(const exmy_format *fmt, char *buf, size_t buflen);

/* One entry of the table of named formats. */
typedef struct exmy_named_format {
  const char *name;
  const char *longform;
  const char *note;
} exmy_named_format;

size_t exmy_named_format_count(void);
const exmy_named_format *exmy_named_format_get(size_t index);

/* ---- decode and classify --------------------------------------------- */

typedef enum exmy_class {
  EXMY_CLASS_ZERO = 0,
  EXMY_CLASS_SUBNORMAL,
  EXMY_CLASS_NORMAL,
  EXMY_CLASS_INF,
  EXMY_CLASS_NAN
} exmy_class;

/* Class of a code; bits above fmt->bits must be zero (else NAN class and
 * never a crash). */
exmy_class exmy_classify(const exmy_format *fmt, uint64_t code);
const char *exmy_class_name(exmy_class cls);
/* Sign of a code (1 negative); 0 for unsigned formats. */
int exmy_code_sign(const exmy_format *fmt, uint64_t code);
/* Exact value as a double (every value of a valid format is representable). */
double exmy_decode(const exmy_format *fmt, uint64_t code);

/* Format properties, as `exmy info` prints them. */
typedef struct exmy_info {
  double max_finite, min_normal, min_subnormal, epsilon;
  uint64_t finite_count;   /* number of codes with a finite value (both zeros counted) */
  int n_zero, n_inf;
  uint64_t n_nan;           /* number of NaN codes */
  uint64_t zero_codes[2], inf_codes[2];
  uint64_t nan_first[2], nan_last[2]; /* NaN code ranges (per sign) */
  int n_nan_ranges;
} exmy_info;
void exmy_format_info(const exmy_format *fmt, exmy_info *info);
/* Print `exmy info` output. */
void exmy_info_print(const exmy_format *fmt, FILE *out);
/* Hex digits of a code: ceil(bits/4). */
int exmy_code_hex_digits(const exmy_format *fmt);
/* Bytes of the smallest unsigned type holding a code: 1, 2, 4 or 8. */
int exmy_code_bytes(const exmy_format *fmt);

/* ---- rounding -------------------------------------------------------- */

typedef enum exmy_round_mode {
  EXMY_RNE = 0, /* nearest, ties to even (default) */
  EXMY_RNA,     /* nearest, ties away from zero */
  EXMY_RTZ,     /* toward zero */
  EXMY_RUP,     /* toward +inf */
  EXMY_RDN,     /* toward -inf */
  EXMY_RTO,     /* round to odd */
  EXMY_SR       /* stochastic */
} exmy_round_mode;

typedef enum exmy_saturation {
  EXMY_SAT_NONE = 0,   /* overflow to inf, else NaN, else max (P3109 SatNone) */
  EXMY_SAT_FINITE,     /* clamp to max finite, inf input too (__NV_SATFINITE) */
  EXMY_SAT_PROPAGATE   /* clamp finite overflow, keep inf input as inf */
} exmy_saturation;

enum {
  EXMY_FLAG_INEXACT = 1,
  EXMY_FLAG_UNDERFLOW = 2, /* tiny (|x| < min normal, before rounding) and inexact */
  EXMY_FLAG_OVERFLOW = 4,  /* rounded finite result beyond the largest finite value */
  EXMY_FLAG_INVALID = 8    /* NaN input, negative into unsigned, zero into a zero-less format */
};

/* Everything a conversion needs besides the format and the input. */
typedef struct exmy_rounding {
  exmy_round_mode mode;
  exmy_saturation sat;
  int ftz;          /* flush subnormal results to zero after rounding */
  int daz;          /* treat subnormal inputs (of the input's own type) as zero */
  int sr_bits;      /* stochastic rounding: random bits used, 1..64 (0 = 64) */
  uint64_t seed;    /* stochastic rounding key ... */
  uint64_t stream;  /* ... and stream; element index is the counter */
} exmy_rounding;

/* rne, no saturation, no ftz/daz, seed 0, stream 0. */
exmy_rounding exmy_rounding_default(void);

int exmy_round_mode_parse(const char *text, exmy_round_mode *mode);
const char *exmy_round_mode_name(exmy_round_mode mode);

/* The counter-based generator of stochastic rounding: 64 uniform bits for
 * (seed, stream, index).  Pure function: the same on any thread or device. */
uint64_t exmy_random64(uint64_t seed, uint64_t stream, uint64_t index);

/* The round-and-pack routine: |x| = sig * 2^exp2 (sig may be 0), sign given
 * separately.  Every conversion below calls this (reference path). index is
 * the element's counter for stochastic rounding.  Flags are OR-ed into *flags
 * when flags is not NULL. */
uint64_t exmy_round_pack(const exmy_format *fmt, const exmy_rounding *rnd,
                         int negative, uint64_t sig, int exp2,
                         uint64_t index, unsigned *flags);

/* Scalar conversions (the reference path). */
uint64_t exmy_from_double(const exmy_format *fmt, const exmy_rounding *rnd,
                          double x, uint64_t index, unsigned *flags);
uint64_t exmy_from_float(const exmy_format *fmt, const exmy_rounding *rnd,
                         float x, uint64_t index, unsigned *flags);
uint64_t exmy_from_bf16(const exmy_format *fmt, const exmy_rounding *rnd,
                        uint16_t bits, uint64_t index, unsigned *flags);
uint64_t exmy_from_f16(const exmy_format *fmt, const exmy_rounding *rnd,
                       uint16_t bits, uint64_t index, unsigned *flags);

/* ---- arrays ---------------------------------------------------------- */
/* codes points to n codes of exmy_code_bytes(fmt) bytes each.  Element i
 * uses counter index0 + i.  The result is the OR of all flags.  The plain
 * functions run with OpenMP and a fast path where one applies; the _ref
 * functions are the serial scalar reference.  Both give identical codes. */
typedef enum exmy_src_type {
  EXMY_SRC_F32 = 0, EXMY_SRC_F64, EXMY_SRC_BF16, EXMY_SRC_F16
} exmy_src_type;

unsigned exmy_quantize(const exmy_format *fmt, const exmy_rounding *rnd,
                       exmy_src_type src_type, const void *src, size_t n,
                       uint64_t index0, void *codes);
unsigned exmy_quantize_ref(const exmy_format *fmt, const exmy_rounding *rnd,
                           exmy_src_type src_type, const void *src, size_t n,
                           uint64_t index0, void *codes);

/* Read code i of an array of codes of fmt's width, and write one. */
uint64_t exmy_code_get(const exmy_format *fmt, const void *codes, size_t i);
void exmy_code_set(const exmy_format *fmt, void *codes, size_t i, uint64_t code);

/* Decode arrays.  To double: exact.  To float: the exact value rounded to
 * nearest even binary32 (exact whenever the format fits in binary32). */
void exmy_decode_f64(const exmy_format *fmt, const void *codes, size_t n, double *out);
void exmy_decode_f32(const exmy_format *fmt, const void *codes, size_t n, float *out);

/* Helpers for 16-bit inputs. */
double exmy_bf16_to_double(uint16_t bits);
double exmy_f16_to_double(uint16_t bits);

/* ---- .npy files -------------------------------------------------------- */

typedef enum exmy_dtype {
  EXMY_DT_F32 = 0, EXMY_DT_F64, EXMY_DT_U8, EXMY_DT_U16, EXMY_DT_U32,
  EXMY_DT_U64 /* only for codes of formats wider than 32 bits */
} exmy_dtype;

typedef struct exmy_array {
  exmy_dtype dtype;
  int ndim;             /* 0..8 */
  size_t shape[8];
  size_t count;         /* product of shape */
  void *data;           /* count elements, little-endian, C order; free with exmy_array_free */
} exmy_array;

size_t exmy_dtype_size(exmy_dtype dtype);
const char *exmy_dtype_name(exmy_dtype dtype);
/* Read a .npy file.  Returns 0, or -1 with a one-line error naming the file
 * and what is wrong (unsupported dtype, Fortran order, truncated, ...). */
int exmy_npy_read(const char *path, exmy_array *arr, char *err, size_t errlen);
/* Write atomically (temporary file then rename).  Returns 0 or -1 with err. */
int exmy_npy_write(const char *path, const exmy_array *arr, char *err, size_t errlen);
void exmy_array_free(exmy_array *arr);

#ifdef __cplusplus
}
#endif
#endif /* EXMY_H */
