/* exmy.h: the one public header of libexmy, bit-exact ExMy / FP8 numerics.
 *
 * A format is a validated parameter struct (exmy_format); named formats are
 * entries of one table.  Every conversion funnels into one round-and-pack
 * core and takes its rounding mode, saturation, seed and flag output as
 * explicit arguments: there is no global mode, so calls are safe from any
 * OpenMP or CUDA thread.  Semantics: docs/formats.md.
 *
 * One convention for every call (docs/api.md):
 * - a call that can fail returns int: 0 on success, -1 on failure with a
 *   one-line message in the caller's buffer (char *err, size_t errlen; err
 *   may be NULL); a call that cannot fail returns void or its value;
 * - arguments: inputs first, then state the call updates, then outputs, then
 *   unsigned *flags, then err, errlen;
 * - exception flags (EXMY_FLAG_*) are always OR-ed into *flags, like IEEE
 *   sticky flags (flags may be NULL); the caller clears them;
 * - one meaning per suffix: _parse reads text, _to_string writes a caller's
 *   buffer (snprintf semantics) that parses back, _name returns a static
 *   string, _init fills defaults and owns nothing (void), _make validates
 *   what the caller filled in and derives the rest, _new allocates and its
 *   _free releases, _check validates only, _view borrows;
 * - a table is walked one way: exmy_X_count() rows, exmy_X_get(i) row i;
 * - conversions: exmy_from_<type> makes a code from a value, ..._to_<type>
 *   gives values (types spelled as exmy_dtype's: f64, f32, bf16, f16);
 * - rounding is never implied: every conversion takes an exmy_rounding, and
 *   every call that can fail checks it (exmy_rounding_check);
 * - a call that computes codes ORs the exception flags into *flags (exmy_mma
 *   aside: it emulates one instruction, whose hardware raises none);
 * - a GEMM's thread count is its args' threads field.
 * Old names that broke these rules are kept as deprecated wrappers at the end
 * of this header (docs/api.md, "What changed in 1.4"). */
#ifndef EXMY_H
#define EXMY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EXMY_VERSION_MAJOR 1
#define EXMY_VERSION_MINOR 5
#define EXMY_VERSION_PATCH 0
#define EXMY_VERSION "1.5.0"

/* Public symbols; everything else in libexmy is hidden. */
#if defined(__GNUC__)
#define EXMY_API __attribute__((visibility("default")))
#else
#define EXMY_API
#endif

/* The size of error buffer every caller in this project uses: enough for
 * any message the library writes (quoted user text longer than that is cut,
 * never overrun: messages are written snprintf-style). */
#define EXMY_ERRLEN 512

/* The library's version string ("1.5.0"): compare with EXMY_VERSION to catch
 * a header that does not match the library linked. */
EXMY_API const char *exmy_version(void);

/* ---- element types ---------------------------------------------------- */

/* The one element-type enum: inputs of conversions, .npy arrays, GPU
 * operands.  Integer types hold codes. */
typedef enum exmy_dtype {
  EXMY_DTYPE_F32 = 0, EXMY_DTYPE_F64, EXMY_DTYPE_BF16, EXMY_DTYPE_F16,
  EXMY_DTYPE_U8, EXMY_DTYPE_U16, EXMY_DTYPE_U32, EXMY_DTYPE_U64,
  EXMY_DTYPE_E4M3FN,      /* one-byte FP8 codes (GPU operands) */
  EXMY_DTYPE_E5M2
} exmy_dtype;

/* Bytes of one element (1, 2, 4 or 8); 0 for a value outside the enum. */
EXMY_API size_t exmy_dtype_size(exmy_dtype dtype);
/* numpy's name: "float32", "uint8", "bfloat16", "float8_e4m3fn", ...;
 * "?" for a value outside the enum, as every _name function. */
EXMY_API const char *exmy_dtype_name(exmy_dtype dtype);

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

/* Fill the first six fields, then exmy_format_make validates them and
 * derives the rest.  Never modify a format after that. */
typedef struct exmy_format {
  int ebits;        /* exponent bits E, 0..11 */
  int mbits;        /* stored mantissa bits M, 0..52, 1+E+M <= 64 (E+M <= 64 unsigned) */
  int bias;         /* exponent bias */
  int is_signed;    /* 1: sign bit on top; 0: unsigned */
  int has_zero;     /* 1 normally; 0 for scale formats like e8m0fnu whose code 0 is 2^-bias */
  exmy_inf inf;
  exmy_nan nan;
  /* ---- derived by exmy_format_make ---- */
  int bits;                /* total bits */
  int emin;                /* exponent of the smallest normal */
  int emax;                /* exponent of the largest finite value (floor of log2) */
  uint64_t mag_mask;       /* mask of the magnitude bits */
  uint64_t sign_mask;      /* the sign bit (0 when unsigned) */
  uint64_t max_mag;        /* magnitude code of the largest finite value */
  uint64_t inf_mag;        /* magnitude code of +inf (valid when inf != NONE) */
  uint64_t nan_code;       /* canonical positive NaN code (valid when nan != NONE) */
  char name[64];           /* table name if it matches one, else the long form (at most
                              57 characters: every long form fits and parses back) */
} exmy_format;

/* Default bias for E exponent bits: 2^(E-1) - 1 (1 when E = 0). */
EXMY_API int exmy_default_bias(int ebits);

/* Validate the six user fields and derive the rest.  Returns 0, or -1 with a
 * one-line reason in err. */
EXMY_API int exmy_format_make(exmy_format *fmt, char *err, size_t errlen);

/* Parse a name (e4m3fn, e5m2, bf16, e8m3, binary8p4se, ...) or a long form
 * "e4m3,bias=11,inf=none,nan=ones,sign=unsigned,zero=none".  Returns 0, or
 * -1 with a one-line error that names the bad text and says what is accepted. */
EXMY_API int exmy_format_parse(const char *text, exmy_format *fmt, char *err, size_t errlen);

/* The long form of fmt, which exmy_format_parse reads back to the same format.
 * Returns the length it needed (snprintf semantics). */
EXMY_API int exmy_format_to_string(const exmy_format *fmt, char *buf, size_t buflen);

/* One entry of the table of named formats. */
typedef struct exmy_named_format {
  const char *name;
  const char *longform;
  const char *note;
} exmy_named_format;

/* The table's rows (exmy_X_count / exmy_X_get(i), as every table); NULL for
 * an index past the end. */
EXMY_API size_t exmy_named_format_count(void);
EXMY_API const exmy_named_format *exmy_named_format_get(size_t index);

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
EXMY_API exmy_class exmy_classify(const exmy_format *fmt, uint64_t code);
/* "zero", "subnormal", "normal", "inf", "nan"; "?" outside the enum. */
EXMY_API const char *exmy_class_name(exmy_class cls);
/* Sign of a code (1 negative); 0 for unsigned formats. */
EXMY_API int exmy_code_sign(const exmy_format *fmt, uint64_t code);
/* Exact value of a code as a double (every value of a valid format is
 * representable). */
EXMY_API double exmy_code_to_f64(const exmy_format *fmt, uint64_t code);

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
EXMY_API void exmy_format_info(const exmy_format *fmt, exmy_info *info);
/* Print exmy_format_info's properties as `exmy info` does. */
EXMY_API void exmy_format_info_print(const exmy_format *fmt, FILE *out);
/* Hex digits of a code: ceil(bits/4). */
EXMY_API int exmy_code_hex_digits(const exmy_format *fmt);
/* Bytes of the smallest unsigned type holding a code: 1, 2, 4 or 8. */
EXMY_API int exmy_code_bytes(const exmy_format *fmt);

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
  int sr_bits;      /* stochastic rounding: random bits used, 1..64 (other modes: 0..64, unused) */
  uint64_t seed;    /* stochastic rounding key ... */
  uint64_t stream;  /* ... and stream; element index is the counter */
} exmy_rounding;

/* rne, no saturation, no ftz/daz, sr_bits 64, seed 0, stream 0. */
EXMY_API exmy_rounding exmy_rounding_default(void);
/* Is rnd a valid rounding?  mode one of exmy_round_mode, sat one of
 * exmy_saturation, ftz and daz 0 or 1, sr_bits 1..64 with EXMY_SR (0..64
 * otherwise, where it is unused).  0, or -1 with err naming the bad field and
 * its value.  Every call taking a rounding that can fail checks it; the
 * scalar calls (exmy_from_*, exmy_round_pack) cannot report and do not. */
EXMY_API int exmy_rounding_check(const exmy_rounding *rnd, char *err, size_t errlen);

/* "rne", "rna", "rtz", "rup", "rdn", "rto", "sr": 0, or -1 with err naming
 * the bad text and the accepted names (*mode is then left as it was). */
EXMY_API int exmy_round_mode_parse(const char *text, exmy_round_mode *mode, char *err, size_t errlen);
EXMY_API const char *exmy_round_mode_name(exmy_round_mode mode);

/* The counter-based generator of stochastic rounding: 64 uniform bits for
 * (seed, stream, index).  Pure function: the same on any thread or device. */
EXMY_API uint64_t exmy_random64(uint64_t seed, uint64_t stream, uint64_t index);

/* The round-and-pack routine: |x| = sig * 2^exp2 (sig may be 0), sign given
 * separately.  Every conversion below calls this (reference path). index is
 * the element's counter for stochastic rounding.  Flags are OR-ed into *flags
 * when flags is not NULL. */
EXMY_API uint64_t exmy_round_pack(const exmy_format *fmt, const exmy_rounding *rnd,
                         int negative, uint64_t sig, int exp2,
                         uint64_t index, unsigned *flags);

/* Scalar conversions to a code (the reference path); rnd must be valid
 * (exmy_rounding_check). */
EXMY_API uint64_t exmy_from_f64(const exmy_format *fmt, const exmy_rounding *rnd,
                          double x, uint64_t index, unsigned *flags);
EXMY_API uint64_t exmy_from_f32(const exmy_format *fmt, const exmy_rounding *rnd,
                         float x, uint64_t index, unsigned *flags);
EXMY_API uint64_t exmy_from_bf16(const exmy_format *fmt, const exmy_rounding *rnd,
                        uint16_t bits, uint64_t index, unsigned *flags);
EXMY_API uint64_t exmy_from_f16(const exmy_format *fmt, const exmy_rounding *rnd,
                       uint16_t bits, uint64_t index, unsigned *flags);

/* ---- arrays ---------------------------------------------------------- */
/* src holds n values of src_type (F32, F64, BF16 or F16); codes gets n codes
 * of exmy_code_bytes(fmt) bytes each.  Element i uses counter index0 + i.
 * The flags of all elements are OR-ed into *flags.  exmy_quantize runs with
 * OpenMP and a fast path where one applies; exmy_quantize_ref is the serial
 * scalar reference.  Both give identical codes and flags.  0, or -1 with err
 * (a src_type that is not a float type, rnd NULL or invalid). */
EXMY_API int exmy_quantize(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type,
                  const void *src, size_t n, uint64_t index0, void *codes, unsigned *flags,
                  char *err, size_t errlen);
EXMY_API int exmy_quantize_ref(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type,
                      const void *src, size_t n, uint64_t index0, void *codes, unsigned *flags,
                      char *err, size_t errlen);

/* Read code i of an array of codes of fmt's width, and write one. */
EXMY_API uint64_t exmy_code_get(const exmy_format *fmt, const void *codes, size_t i);
EXMY_API void exmy_code_set(const exmy_format *fmt, void *codes, size_t i, uint64_t code);

/* Arrays of n codes to values.  To f64: exact.  To f32: the exact value
 * rounded to nearest even binary32 (exact whenever the format fits in it). */
EXMY_API void exmy_codes_to_f64(const exmy_format *fmt, const void *codes, size_t n, double *out);
EXMY_API void exmy_codes_to_f32(const exmy_format *fmt, const void *codes, size_t n, float *out);

/* 16-bit inputs (bit patterns) widened exactly. */
EXMY_API double exmy_bf16_to_f64(uint16_t bits);
EXMY_API double exmy_f16_to_f64(uint16_t bits);

/* ---- .npy files -------------------------------------------------------- */

/* An array read from or written to .npy: any exmy_dtype.  Codes are
 * U8..U64 (U64 only for formats wider than 32 bits).  descr written and
 * read: F32 '<f4', F64 '<f8', F16 '<f2', U8 '|u1', U16..U64 '<u2' '<u4'
 * '<u8'; ml_dtypes' types, which np.save writes as void: BF16 '<V2',
 * E4M3FN and E5M2 '<V1' (np.load(...).view(ml_dtypes.bfloat16) etc. reads
 * them).  Read also: '<f1' (np.save of ml_dtypes.float8_e5m2) as E5M2. */
typedef struct exmy_array {
  exmy_dtype dtype;
  int ndim;             /* 0..8 */
  size_t shape[8];
  size_t count;         /* product of shape */
  void *data;           /* count elements, little-endian, C order; free with exmy_array_free */
} exmy_array;

/* Read a .npy file.  Returns 0, or -1 with a one-line error naming the file
 * and what is wrong (unsupported dtype, Fortran order, truncated, ...). */
EXMY_API int exmy_npy_read(const char *path, exmy_array *arr, char *err, size_t errlen);
/* Read a .npy file that holds dtype: a void descr ('V1', 'V2', 'V4', 'V8',
 * or '<f1') of dtype's size is taken to be dtype (the header cannot say which
 * float8 type '<V1' is); any other descr must be dtype's own, else -1 with
 * err naming both.  exmy_npy_read gives '<V2' as BF16, '<f1' as E5M2, and
 * fails on 'V1', 'V4', 'V8'. */
EXMY_API int exmy_npy_read_as(const char *path, exmy_dtype dtype, exmy_array *arr, char *err, size_t errlen);
/* Write atomically (temporary file then rename).  Returns 0 or -1 with err. */
EXMY_API int exmy_npy_write(const char *path, const exmy_array *arr, char *err, size_t errlen);
EXMY_API void exmy_array_free(exmy_array *arr);


/* ---- scaled tensors and scaling recipes (docs/scaling.md) -------------- */
/* A tensor is rows x cols, row-major (a vector is 1 x n).  A recipe splits it
 * into groups of block_rows x block_cols elements (0 = the whole extent), each
 * with a scale: q = cast(fp32(x * scale)), x ~ decode(q) * scale_inv.  The
 * formulas follow Transformer Engine, the OCP MX spec and DeepGEMM: see
 * docs/scaling.md and docs/scaling-sources.md. */

typedef enum exmy_recipe_kind {
  EXMY_RECIPE_NONE = 0, /* scale 1 */
  EXMY_RECIPE_CURRENT,  /* TE Float8CurrentScaling: scale from this tensor's amax */
  EXMY_RECIPE_DELAYED,  /* TE DelayedScaling: scale from an amax history */
  EXMY_RECIPE_BLOCK,    /* TE Float8BlockScaling (DeepSeek-V3 1x128 / 128x128) */
  EXMY_RECIPE_MX,       /* TE MXFP8: E8M0 scale from amax/fmax rounded up */
  EXMY_RECIPE_MX_OCP,   /* OCP MX v1.0: E8M0 scale floor(log2(amax)) - emax_elem */
  EXMY_RECIPE_NVFP4     /* TE NVFP4: fp32 tensor scale, E4M3 block scales of 1x16 (16x16) */
} exmy_recipe_kind;

/* A recipe's settings: what the user asked for, parsed once and never
 * changed by quantizing (a running delayed recipe keeps its memory in an
 * exmy_recipe_state). */
typedef struct exmy_recipe {
  exmy_recipe_kind kind;
  size_t block_rows, block_cols; /* group shape; 0 = whole extent */
  float epsilon;                 /* current, block: amax floor */
  int pow2;                      /* current (default off), block (default on): round scale down to 2^k */
  int deepgemm;                  /* block: DeepGEMM's quantizer, scale = max(amax,1e-4)/448 */
  int history_len;               /* delayed: L (default 1024) */
  int most_recent;               /* delayed: amax_compute_algo most_recent (default max) */
  int margin;                    /* delayed: scale = fmax * 2^-margin / amax */
  int interval;                  /* delayed: recompute the scale every interval steps (TE 1.x; 1) */
  int exact_product;             /* round x*scale once (exact product) instead of fp32 then cast */
} exmy_recipe;

/* What a running recipe remembers between steps (delayed scaling: TE's
 * amax history and scale).  Stateless recipes need none: pass NULL. */
typedef struct exmy_recipe_state {
  int history_len;               /* entries of history (the recipe's history_len) */
  float *history;                /* history[0] collects this step's amax */
  float scale, scale_inv;        /* the scale the next quantize uses (initially 1) */
  float fmax;                    /* the element format's largest value, set by quantize */
  long steps;                    /* steps taken */
} exmy_recipe_state;

/* Parse "current[:pow2,eps=E,row,col]", "delayed[:len=L,algo=max|most_recent,margin=M,interval=N]",
 * "block:1x128", "block:128x128[,deepgemm,fp32]", "mx[:col]", "mx:ocp[,col]",
 * "nvfp4[:16x16]" (and "none"); ",exact" rounds the exact product once.  Returns 0
 * or -1 with a one-line error naming the bad text.  Allocates nothing. */
EXMY_API int exmy_recipe_parse(const char *text, exmy_recipe *recipe, char *err, size_t errlen);
/* The recipe's canonical text, which exmy_recipe_parse reads back. */
EXMY_API int exmy_recipe_to_string(const exmy_recipe *recipe, char *buf, size_t buflen);
/* 1 when the recipe keeps state across steps (delayed scaling). */
EXMY_API int exmy_recipe_has_state(const exmy_recipe *recipe);

/* A fresh state for recipe (empty history, scale 1), allocated; for a
 * stateless recipe an empty state that owns nothing.  0, or -1 with err (out
 * of memory).  Free with exmy_recipe_state_free. */
EXMY_API int exmy_recipe_state_new(const exmy_recipe *recipe, exmy_recipe_state *state, char *err, size_t errlen);
EXMY_API void exmy_recipe_state_free(exmy_recipe_state *state);
/* Deep copy into an uninitialised dst (save and restore mid-sequence). */
EXMY_API int exmy_recipe_state_copy(const exmy_recipe_state *src, exmy_recipe_state *dst, char *err, size_t errlen);

typedef struct exmy_qtensor {
  exmy_format fmt;           /* element format */
  size_t rows, cols;
  void *codes;               /* rows*cols codes of exmy_code_bytes(fmt) bytes, row-major */
  size_t block_rows, block_cols; /* group shape, resolved (no zeros) */
  size_t srows, scols;       /* groups down and across: ceil(rows/block_rows), ... */
  float *scale;              /* per group (row-major): multiplier applied before the cast */
  float *scale_inv;          /* per group: dequantization multiplier */
  uint8_t *scale_codes;      /* per group E8M0 codes (mx, mx:ocp) or E4M3 codes (nvfp4), else NULL */
  float *amax;               /* per group amax: NaN-dropping as TE's kernels (mx:ocp: NaN-propagating) */
  float tensor_scale;        /* nvfp4: S_enc; 1 otherwise */
  float tensor_scale_inv;    /* nvfp4: S_dec = fp32(1/S_enc); 1 otherwise */
  exmy_recipe_kind recipe;   /* what made it */
  exmy_rounding rnd;         /* the element cast used */
  int exact_product;         /* 1: x*scale was rounded once (exact product) */
  int is_view;               /* 1: made by exmy_qtensor_view, borrows its codes and scale
                                (read-only); exmy_qtensor_free only clears it */
} exmy_qtensor;

/* TE's amax: max |x| ignoring NaN (fmaxf from 0), inf propagates. */
EXMY_API float exmy_amax_f32(const float *x, size_t n);
/* TE compute_scale_from_amax: max(amax, eps); 0, inf or NaN give 1; else fp32(fmax/a),
 * inf becomes value_for_inf; pow2 clears the mantissa bits. */
EXMY_API float exmy_scale_from_amax(float amax, float fmax, int pow2, float epsilon, float value_for_inf);

/* Quantize x (rows x cols float32) with the recipe into out (allocated here;
 * free with exmy_qtensor_free).  rnd is the element cast (cuda_fp8.h's casts
 * are rne with EXMY_SAT_FINITE).  state: the recipe's state (required for
 * delayed, else may be NULL); delayed quantizes with the state's scale and
 * records this tensor's amax into history[0] (max with what is there); call
 * exmy_recipe_step after the step.  The casts' flags are OR-ed into *flags.
 * *out is overwritten, not freed first.  Returns 0, or -1 with err (rnd NULL
 * or invalid, a delayed recipe without state, out of memory); on -1 *out is zeroed and
 * safe to free. */
EXMY_API int exmy_recipe_quantize(const exmy_recipe *recipe, const exmy_format *fmt, const exmy_rounding *rnd,
                         const float *x, size_t rows, size_t cols, exmy_recipe_state *state,
                         exmy_qtensor *out, unsigned *flags, char *err, size_t errlen);
/* exmy_recipe_quantize into a tensor made before, without allocating the
 * tensor again: *out must be zeroed or made by exmy_recipe_quantize(_into)
 * (not a view); its buffers are reused when their sizes fit the new tensor
 * exactly (same element count and code width, same number of scale groups,
 * scale codes or not), else freed and allocated again.  (Small scratch of
 * about 5 bytes per row and group, and a row of scales per thread, is still
 * allocated per call.)  The result is bit for bit that
 * of exmy_recipe_quantize.  On -1 *out is freed and zeroed. */
EXMY_API int exmy_recipe_quantize_into(const exmy_recipe *recipe, const exmy_format *fmt, const exmy_rounding *rnd,
                              const float *x, size_t rows, size_t cols, exmy_recipe_state *state,
                              exmy_qtensor *out, unsigned *flags, char *err, size_t errlen);
/* Delayed scaling: end of step (TE's fused update): roll the history and
 * compute the next scale.  No-op for other recipes (and a NULL state).  The
 * state is the one exmy_recipe_state_new made for this recipe. */
EXMY_API void exmy_recipe_step(const exmy_recipe *recipe, exmy_recipe_state *state);
/* Delayed scaling calibration step (TE's calibrating autocast): history[0] =
 * amax of x (overwritten); fmt is the element format the scale is for (its
 * largest value sets the next scale at exmy_recipe_step).  No-op for other
 * recipes (and a NULL state). */
EXMY_API void exmy_recipe_calibrate(const exmy_recipe *recipe, const exmy_format *fmt, const float *x, size_t n,
                           exmy_recipe_state *state);

/* The tensor's values: decode(q) * scale_inv[g] * tensor_scale_inv, exact in
 * double (to f32: that rounded to nearest even). */
EXMY_API void exmy_qtensor_to_f32(const exmy_qtensor *q, float *out);
EXMY_API void exmy_qtensor_to_f64(const exmy_qtensor *q, double *out);
/* Free what an owned qtensor holds; on a view, only clear it. */
EXMY_API void exmy_qtensor_free(exmy_qtensor *q);
/* A per-tensor view of existing codes (rows x cols, row-major) with one
 * dequantization multiplier *scale_inv (NULL: 1), as recipe "none" makes: an
 * operand for exmy_gemm without copying.  The view borrows codes and
 * scale_inv (keep them alive and unchanged while it is used); it is marked
 * is_view, and exmy_qtensor_free on it frees nothing. */
EXMY_API void exmy_qtensor_view(const exmy_format *fmt, const void *codes, size_t rows, size_t cols,
                       const float *scale_inv, exmy_qtensor *view);

/* Statistics of a quantization against its float32 source, in one pass (the
 * FP8 debug metrics of TE's debug tools); identical for any thread count. */
#define EXMY_HIST_LO (-150)  /* floor(log2|x|) of hist[0] */
#define EXMY_HIST_BINS 279   /* -150 .. 128 */
typedef struct exmy_qstats {
  size_t n;                  /* elements */
  size_t n_nonzero;          /* x != 0 (NaN counts, as TE's count_nonzero) */
  double amin, amax;         /* min and max of |x| over nonzero finite x (0 if none) */
  double underflow_frac;     /* nonzero x whose code is a zero, over n */
  double overflow_frac;      /* x whose scaled value overflowed the format (the cast's overflow
                                flag: saturated, or became inf/NaN) or was inf, over n */
  double mse;                /* mean (x - dequant)^2 over finite pairs */
  double cosine;             /* cosine similarity of x and dequant (finite pairs) */
  double snr_db;             /* 10 log10(sum x^2 / sum (x - dequant)^2); inf when exact */
  double max_rel_err;        /* max |x - dequant| / |x| over nonzero finite x */
  double scale_ratio;        /* scale of group 0 over the current-scaling scale of the
                                tensor's amax: the delayed/current ratio for delayed */
  uint64_t hist[EXMY_HIST_BINS]; /* floor(log2|x|) counts, nonzero finite x */
  int fmt_log2_min;          /* floor(log2) of the format's smallest positive value */
  int fmt_log2_max;          /* floor(log2) of its largest finite value */
} exmy_qstats;
/* x is the float32 source q was made from by exmy_recipe_quantize (not a
 * view).  0, or -1 with err (a view, out of memory); st is zeroed on -1. */
EXMY_API int exmy_qtensor_stats(const exmy_qtensor *q, const float *x, exmy_qstats *st, char *err, size_t errlen);


/* ---- emulated GEMM (docs/gemm.md) -------------------------------------- */
/* D = scale_d * (alpha * op(A) op(B) + beta * scale_c * C), op(A) m x k, op(B)
 * k x n, A and B scaled tensors (any element formats with M <= 23), C and D
 * m x n row-major codes of any format (f32, bf16, f16, FP8, ...).  How the
 * products are added is an accumulation model; every model gives the same
 * bits for any thread count. */

typedef enum exmy_accum_kind {
  EXMY_ACCUM_EXACT = 0,    /* exact sum, one rounding at the end */
  EXMY_ACCUM_FP32,         /* c = fmaf(a_i, b_i, c) in k order */
  EXMY_ACCUM_FP32_PAIRWISE,/* fp32 products, pairwise tree (left half = floor(n/2)) */
  EXMY_ACCUM_FORMAT,       /* c = round_fmt(c + a_i b_i) in k order */
  EXMY_ACCUM_TC            /* tensor-core block FMA (MMA-Sim's model) */
} exmy_accum_kind;

/* Which operands a tc sum has, which picks the instruction a GPU issues
 * for them and so the datapath row of exmy_accum.tc_path. */
typedef enum exmy_tc_operands {
  EXMY_TC_PLAIN = 0,  /* no block scales (per-tensor scales apply after the sum) */
  EXMY_TC_BLOCK,      /* block scales inside the products (MX; NVFP4 scales on other elements) */
  EXMY_TC_FP4,        /* E2M1 x E2M1 with block scales of 16 or 32 along k: NVFP4 and MXFP4
                         (tcgen05's kind::mxf4nvf4 and kind::mxf4) */
  EXMY_TC_NOPERANDS
} exmy_tc_operands;
#define EXMY_TC_PATH_LEN 32 /* a datapath row's name with its terminating 0 */

typedef struct exmy_accum {
  exmy_accum_kind kind;
  size_t chunk;            /* > 0: k is cut at multiples of chunk; each piece is summed
                              from 0 by the model and added into an fp32 accumulator
                              (fp32 add, rne): chunk-based accumulation / promotion */
  exmy_format acc_fmt;     /* FORMAT: the accumulator's format (precision <= 51 bits) */
  exmy_rounding acc_rnd;   /* FORMAT: its rounding (sr: counter = (i*n + j)*k + step) */
  int tc_group;            /* TC: products fused per group (with the accumulator) */
  int tc_frac;             /* TC: fraction bits kept after alignment to the largest exponent */
  int tc_align_rne;        /* TC: 0 truncate aligned terms toward zero, 1 round nearest-even */
  int tc_out_frac;         /* TC: fraction bits of the normalized fp32 group result (<= 23) */
  int tc_norm_rne;         /* TC: 0 normalize with truncation, 1 with nearest-even */
  int tc_zero;             /* TC: exponent of a zero term (zero product or zero accumulator),
                              MMA-Sim v2's measured value (-133 Hopper/Blackwell, -132
                              Ampere/Ada); 0: MMA-Sim v1's rule (a zero element has -126) */
  char tc_path[EXMY_TC_NOPERANDS][EXMY_TC_PATH_LEN];
                           /* TC: the datapath row (a name of exmy_mma_datapath_get's table,
                              docs/mma.md) each kind of operands runs (since 1.5).  A preset
                              sets all three; [EXMY_TC_BLOCK] "" runs [EXMY_TC_PLAIN]'s row with
                              the scales in the products, [EXMY_TC_FP4] "" runs [EXMY_TC_BLOCK]'s.
                              All "": no row, the sum is made from the keys above (T; ST with
                              block scales).  With a row, the keys above are its L, F, output
                              and zero exponent (tc_zero 0: v1's rule on that row), as the
                              preset or path= sets them: exmy_gemm_check rejects others. */
} exmy_accum;

/* Parse "exact", "fp32", "fp32:pairwise", "acc=FORMAT[,round=MODE][,seed=S][,sat=...]",
 * "chunk=N,inner=MODEL", "tc" (= tc:hopper) or "tc:PRESET[,key=value...]" with presets
 * hopper, hopper-fastacc, ada, ada-fastacc, hopper-bf16, ampere-bf16, blackwell (each
 * names rows of the MMA datapath table, docs/mma.md, per kind of operands: tc_path), and
 * keys path=ROW, block-path=ROW, fp4-path=ROW (tc_path), g, f, align=trunc|rne, out,
 * norm=trunc|rne, promote=N (= chunk), zero=N|v1 (tc_zero).  zero=v1, promote and a
 * zero=N equal to the row's keep the rows; g, f, align, out, norm and another zero=N
 * change the arithmetic and leave the table (the model is then made from its keys).
 * Returns 0, or -1 with a one-line error naming the bad text. */
EXMY_API int exmy_accum_parse(const char *text, exmy_accum *acc, char *err, size_t errlen);
/* The tensor-core presets above: how many, and name i ("hopper", ...: "tc:"
 * + name parses), in table order; NULL past the end. */
EXMY_API size_t exmy_accum_tc_preset_count(void);
EXMY_API const char *exmy_accum_tc_preset_get(size_t index);
/* The model's canonical text, which exmy_accum_parse reads back: tc:PRESET with the
 * keys that differ from it (promote=, zero=v1), tc:path=... for rows of no preset,
 * tc:g=...,zero=... for a model made from its keys. */
EXMY_API int exmy_accum_to_string(const exmy_accum *acc, char *buf, size_t buflen);

/* The inputs of a GEMM: operands, scalars, C, and how D is made (its format,
 * scale and cast).  D itself and its amax are exmy_gemm's outputs. */
typedef struct exmy_gemm_args {
  int trans_a;                  /* 0: A is m x k; 1: A is stored k x m and op(A) = A^T */
  int trans_b;                  /* 0: B is k x n; 1: B is stored n x k and op(B) = B^T */
  const exmy_qtensor *a, *b;    /* operands with their scales (recipe "none": scale 1) */
  float alpha, beta;
  const exmy_format *c_fmt;     /* C: m x n codes, row-major; NULL or beta == 0: no C */
  const void *c;
  float scale_c;                /* C's dequantization multiplier (cuBLASLt scaleC; 1) */
  const exmy_format *d_fmt;     /* D's format: m x n codes, row-major */
  float scale_d;                /* multiplier before D's cast (cuBLASLt scaleD; 1) */
  exmy_rounding d_rnd;          /* D's cast (sr: counter = i*n + j) */
  const exmy_accum *accum;
  int threads;                  /* 0: OpenMP's default */
} exmy_gemm_args;

/* Fill args with: no transposes, alpha 1, beta 0, no C, scales 1, D rne
 * without saturation, model fp32. */
EXMY_API void exmy_gemm_args_init(exmy_gemm_args *args);
/* Check shapes, formats, scale layouts and the roundings (d_rnd, a FORMAT
 * model's acc_rnd): 0 or -1 with err naming what is wrong.
 * On success *m, *n, *k are the problem sizes. */
EXMY_API int exmy_gemm_check(const exmy_gemm_args *args, size_t *m, size_t *n, size_t *k,
                    char *err, size_t errlen);
/* The GEMM (fast paths, OpenMP over tiles of D): writes d (m x n codes of
 * args->d_fmt, row-major) and, when amax_d is not NULL, max |D| before scale_d
 * (NaN ignored); the flags of D's casts are OR-ed into *flags.  0, or -1 with
 * err. */
EXMY_API int exmy_gemm(const exmy_gemm_args *args, void *d, float *amax_d, unsigned *flags, char *err, size_t errlen);
/* The plain-C serial reference of the same semantics: identical bits. */
EXMY_API int exmy_gemm_ref(const exmy_gemm_args *args, void *d, float *amax_d, unsigned *flags, char *err,
                  size_t errlen);

/* ---- GEMM workspace and batches ---- */
/* A caller's workspace for exmy_gemm_ws_run: the packed operands, partial
 * sums and scales stay allocated between calls (grown when a call needs
 * more), so repeated GEMMs of a training step allocate nothing after the
 * first.  Results are exmy_gemm's, bit for bit.  One workspace per thread
 * that calls at the same time.  exmy_gemm_ws_init (or zeroing) makes an
 * empty one; exmy_gemm_ws_free releases it (and leaves it empty). */
typedef struct exmy_gemm_ws {
  void *impl;                   /* NULL until the first call */
} exmy_gemm_ws;
EXMY_API void exmy_gemm_ws_init(exmy_gemm_ws *ws);
EXMY_API void exmy_gemm_ws_free(exmy_gemm_ws *ws);
/* exmy_gemm using ws's buffers (ws NULL: exmy_gemm). */
EXMY_API int exmy_gemm_ws_run(const exmy_gemm_args *args, exmy_gemm_ws *ws, void *d, float *amax_d,
                              unsigned *flags, char *err, size_t errlen);
/* count independent GEMMs, args[b] writing d[b] (amax_d NULL, or amax_d[b]
 * for each), in parallel over the batch on args' threads threads (0:
 * OpenMP's default; every args[b].threads must be the same, the batch's
 * thread count); each problem runs on one thread, so the bits are
 * exmy_gemm's for any thread count.  The flags of all are OR-ed into *flags.
 * 0, or -1 with err naming the first problem that failed (the others are
 * still computed). */
EXMY_API int exmy_gemm_batch(const exmy_gemm_args *args, size_t count, void *const *d, float *amax_d,
                             unsigned *flags, char *err, size_t errlen);

/* ---- GPU (kernels/) ---- */
/* CUDA kernels, cuBLASLt FP8 GEMM and the tensor-core probe
 * (docs/gpu-crosscheck.md).  Every function exists in every build and follows
 * the one convention (0, or -1 with err): built without CUDA, or with no
 * usable device, the device functions fail saying so.  To tell "no GPU"
 * (skip) from a failure, ask exmy_gpu_query first; to tell "this device
 * cannot do it" from bad arguments, make the plan with sm 0 (arguments only)
 * and then with the device's sm.  The plain-C parts (argument checks, layout
 * plan, model choice, probe inference) need no GPU.  Pointers are host memory
 * unless said otherwise; calls are synchronous. */

/* 1 when the library was built with the CUDA kernels. */
EXMY_API int exmy_gpu_built(void);

typedef struct exmy_gpu_info {
  int device;
  char name[256];
  int sm;                   /* compute capability major*10 + minor: 89, 90, 100, 120 */
  int multiprocessors;
  size_t mem_bytes;
  int runtime_version;      /* CUDA runtime, e.g. 13000 */
  int driver_version;
  size_t cublaslt_version;
} exmy_gpu_info;

/* Describe a device.  0, or -1 with err saying why there is none usable (no
 * CUDA build, no driver, no such device). */
EXMY_API int exmy_gpu_query(int device, exmy_gpu_info *info, char *err, size_t errlen);

/* The accumulation model (exmy_accum_parse text) of a GPU's FP8 GEMM:
 * sm 89 "tc:ada" / "tc:ada-fastacc", sm 90 "tc:hopper" / "tc:hopper-fastacc",
 * sm >= 100 "tc:blackwell"; NULL below sm 89 (no FP8 tensor cores). */
EXMY_API const char *exmy_gpu_model_for_sm(int sm, int fast_accum);

/* Can the hardware conversions of cuda_fp8.h (__nv_cvt_*_to_fp8) do this
 * cast?  They do e4m3fn and e5m2 from f32, f64, bf16 and f16, nearest-even,
 * saturation none or finite, no ftz/daz.  0, or -1 with err naming what not. */
EXMY_API int exmy_gpu_hw_quant_check(const exmy_format *fmt, const exmy_rounding *rnd, exmy_dtype src_type,
                            char *err, size_t errlen);

/* Quantize n values on the device, element i with counter index0 + i.
 * hw = 1: the hardware conversions (see exmy_gpu_hw_quant_check); hw = 0:
 * the generic kernel, any format and rounding, the same codes as
 * exmy_quantize.  The flags are OR-ed into *flags (may be NULL; generic
 * only: hw raises none).  exmy_gpu_quantize_dev takes device pointers. */
EXMY_API int exmy_gpu_quantize(const exmy_format *fmt, const exmy_rounding *rnd, int hw, exmy_dtype src_type,
                      const void *src, size_t n, uint64_t index0, void *codes, unsigned *flags,
                      char *err, size_t errlen);
EXMY_API int exmy_gpu_quantize_dev(const exmy_format *fmt, const exmy_rounding *rnd, int hw, exmy_dtype src_type,
                          const void *d_src, size_t n, uint64_t index0, void *d_codes, unsigned *flags,
                          char *err, size_t errlen);
/* Quantize the float32 inputs with bit patterns lo, lo+1, ..., lo+n-1, made on
 * the device (counter = bit pattern), into codes (host): exhaustive sweeps
 * without copying inputs.  Flags as exmy_gpu_quantize. */
EXMY_API int exmy_gpu_quantize_f32_range(const exmy_format *fmt, const exmy_rounding *rnd, int hw, uint32_t lo,
                                         size_t n, void *codes, unsigned *flags, char *err, size_t errlen);

/* ---- cuBLASLt FP8 GEMM ---- */
/* D (m x n, row-major) = scale_d * (alpha * scale_a * scale_b * A B), A m x k
 * row-major, B k x n row-major (or n x k with b_nk).  cuBLASLt is
 * column-major and wants FP8 as "TN"; the wrapper passes B^T as its A
 * (transposed) and A as its B, so the caller never sees that.
 * The one exception to "inputs only" in an args struct: like cuBLASLt's
 * matmul descriptor, this one carries D's pointers (d, amax_d, marked out),
 * because the plan checks them (device alignment, amax only with FP8 D)
 * before any device work. */
typedef struct exmy_gpu_gemm_args {
  size_t m, n, k;
  exmy_dtype a_type, b_type; /* EXMY_DTYPE_E4M3FN or _E5M2, not both E5M2 */
  const void *a;            /* m x k codes, row-major */
  const void *b;            /* k x n codes, row-major; n x k with b_nk */
  int b_nk;                 /* 1: b is stored n x k (cuBLASLt's own layout: no transpose) */
  float alpha;
  float scale_a, scale_b;   /* per-tensor dequantization multipliers (A/B_SCALE_POINTER) */
  int block_scaled;         /* 1: MXFP8, CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 (sm_100+) */
  const uint8_t *a_scales;  /* block_scaled: E8M0 codes, m x k/32 row-major */
  const uint8_t *b_scales;  /* block_scaled: E8M0 codes, n x k/32 row-major */
  exmy_dtype d_type;        /* EXMY_DTYPE_F32, _BF16 or _E4M3FN */
  void *d;                  /* out: m x n, row-major: float, bf16 bits or E4M3 codes */
  float scale_d;            /* E4M3 D only: multiplier before the cast (D_SCALE_POINTER) */
  float *amax_d;            /* out, E4M3 D only, may be NULL: max |D| before scale_d (AMAX_D_POINTER) */
  int fast_accum;           /* CUBLASLT_MATMUL_DESC_FAST_ACCUM */
  int device_ptrs;          /* 1: a, b, d, the scales and amax_d are device pointers */
  int device;
} exmy_gpu_gemm_args;

/* Defaults: alpha and scales 1, F32 D, no fast accumulation, host pointers, device 0. */
EXMY_API void exmy_gpu_gemm_args_init(exmy_gpu_gemm_args *args);

/* The cuBLASLt call computing args (column-major terms). */
typedef struct exmy_gpu_gemm_plan {
  size_t lt_m, lt_n, lt_k;  /* cuBLASLt's m, n, k = our n, m, k */
  exmy_dtype lt_a_type, lt_b_type; /* = our b_type, a_type */
  size_t lda, ldb, ldd;     /* = k, k, n */
  int transpose_b;          /* 1: B is transposed to n x k on the device first */
  size_t d_elem_bytes;
  size_t scale_cols;        /* block_scaled: k/32 */
  size_t a_scale_bytes, b_scale_bytes; /* block_scaled: cuBLASLt's padded scale tensors */
} exmy_gpu_gemm_plan;

/* Validate args and make the plan; sm = 0 checks the arguments only, a
 * device's sm also what that device can do.  0, or -1 with err naming the bad
 * value (a k not a multiple of 16, a misaligned device pointer, MXFP8 before
 * sm_100, ...). */
EXMY_API int exmy_gpu_gemm_plan_make(const exmy_gpu_gemm_args *args, int sm, exmy_gpu_gemm_plan *plan,
                            char *err, size_t errlen);
/* Offset of scale (row, col) of a row-major rows x cols E8M0 scale matrix in
 * cuBLASLt's VEC32_UE8M0 layout (128 x 4 tiles, padded). */
EXMY_API size_t exmy_gpu_mx_scale_offset(size_t row, size_t col, size_t cols);
/* Run it.  cuBLASLt reports no exceptions: the flags are what D shows,
 * OR-ed into *flags (may be NULL): EXMY_FLAG_INVALID for a NaN element,
 * EXMY_FLAG_OVERFLOW for an infinite one (inexact and underflow cannot be
 * seen; with device_ptrs D is read back to look). */
EXMY_API int exmy_gpu_gemm_run(const exmy_gpu_gemm_args *args, unsigned *flags, char *err, size_t errlen);

/* ---- tensor-core probe ---- */
/* A dot-product engine: out[i] = the engine's sum over l < k of
 * a[i*k + l] * b[i*k + l] (codes of fa and fb), accumulated from +0, for
 * i < count.  Returns 0 or -1 with err. */
typedef int (*exmy_probe_dot_fn)(void *ctx, const exmy_format *fa, const exmy_format *fb, size_t k,
                                 size_t count, const uint8_t *a, const uint8_t *b, float *out,
                                 char *err, size_t errlen);
typedef struct exmy_probe_engine {
  const char *name;
  exmy_probe_dot_fn dot;
  void *ctx;
  size_t k_max;             /* longest k the engine takes (the promotion probe uses it) */
} exmy_probe_engine;

typedef struct exmy_probe_result {
  int complete;             /* 1: g, f, align, out, norm all determined */
  long dots;                /* dot products evaluated */
  long pairs, pairs_inexact;/* single products tested, and those not exact */
  int products_exact;       /* 1: every single product came out exact */
  int subnormals_exact;     /* 1: products of subnormal operands exact (not flushed) */
  int g, f, align_rne, out, norm_rne;
  size_t promote;           /* first promotion boundary seen; 0: none up to k_max */
  int promote_seen;         /* 1: promote measured; 0: no promotion up to k_max; -1: not observable */
  int nominal_exp;          /* 1: alignment on ea + eb; 0: on the renormalized product; -1 unknown */
  int neg_toward_zero;      /* 1: negative terms cut toward zero; 0: toward -inf; -1 unknown */
  int nan_seen;             /* 1: a NaN product gave a NaN */
  uint32_t nan_bits;        /* its fp32 bits */
  long confirm_dots;        /* random dot products compared with the inferred model ... */
  long confirm_mismatches;  /* ... and how many differed in any bit */
  char accum[160];          /* the inferred model, "tc:g=32,f=13,align=trunc,out=13,norm=trunc,promote=128" */
  char notes[1024];         /* what could not be determined, and why */
} exmy_probe_result;

/* Infer the tensor-core parameters of an engine (Fasi, Higham, Mikaitis and
 * Pranesh 2021): crafted dot products of fa x fb codes.  log (may be NULL)
 * gets one line per step.  0, or -1 with err when the engine fails. */
EXMY_API int exmy_probe_run(const exmy_probe_engine *eng, const exmy_format *fa, const exmy_format *fb, FILE *log,
                   exmy_probe_result *res, char *err, size_t errlen);
/* Which tensor-core presets (exmy_accum_tc_preset_get) the result is, bit
 * for bit: g, f, align, out and norm equal, the promotion interval too when
 * the probe could see it, every product exact, and no confirming dot
 * product different.  match gets their model texts ("tc:hopper";
 * space-separated when several give the same answers; "" when none);
 * nearest the preset with the fewest differences, and diff where the result
 * differs from it ("f 25, preset 13; promote 0, preset 128"; "" when it
 * matches).  Returns the number of matching presets. */
EXMY_API int exmy_probe_match(const exmy_probe_result *res, char *match, size_t matchlen, char *nearest,
                              size_t nearestlen, char *diff, size_t difflen);
/* The CPU engine: ctx is a const exmy_accum *, each dot product is a 1 x k x 1
 * exmy_gemm with f32 D. */
EXMY_API int exmy_probe_model_dot(void *ctx, const exmy_format *fa, const exmy_format *fb, size_t k, size_t count,
                         const uint8_t *a, const uint8_t *b, float *out, char *err, size_t errlen);

/* Device engines: raw mma.sync m16n8k32 (sm_89+), wgmma m64n8k32 (sm_90a),
 * cuBLASLt FP8 GEMM with and without fast accumulation (each dot product is
 * the diagonal of a 16-aligned GEMM). */
typedef enum exmy_gpu_engine {
  EXMY_GPU_ENGINE_MMA = 0, EXMY_GPU_ENGINE_WGMMA, EXMY_GPU_ENGINE_LT, EXMY_GPU_ENGINE_LT_FASTACC
} exmy_gpu_engine;
typedef struct exmy_gpu_probe_ctx {
  int device;
  exmy_gpu_engine engine;
} exmy_gpu_probe_ctx;
/* Fill eng for ctx's engine: 0, or -1 with err (no device, or the device
 * lacks the instruction: wgmma needs sm_90a, FP8 sm_89). */
EXMY_API int exmy_gpu_probe_engine(exmy_gpu_probe_ctx *ctx, exmy_probe_engine *eng, char *err, size_t errlen);
EXMY_API int exmy_gpu_probe_dot(void *ctx, const exmy_format *fa, const exmy_format *fb, size_t k, size_t count,
                       const uint8_t *a, const uint8_t *b, float *out, char *err, size_t errlen);


/* ---- instruction-level MMA (docs/mma.md) ------------------------------- */
/* One matrix-unit instruction, D = A*B + C for one tile, bit for bit as the
 * datapath of its row in the table (emulate/mma_table.c: products per fused
 * sum, fraction bits kept in alignment, rounding, zero-term exponent, output).
 * Names follow PTX and the CDNA ISA: "sm_90:wgmma.f32.e4m3.e4m3",
 * "sm_89:mma.m16n8k32.f32.e5m2", "sm_100:tcgen05.kind::mxf4nvf4",
 * "cdna3:v_mfma_f32_16x16x32_fp8_fp8"; exmy mma --list prints them all. */
typedef enum exmy_mma_zero {
  EXMY_MMA_ZERO_V2 = 0,  /* a zero term has the datapath's fixed exponent (MMA-Sim v2, measured) */
  EXMY_MMA_ZERO_V1       /* a zero factor has exponent -126 (MMA-Sim v1), C zero -126 */
} exmy_mma_zero;

typedef struct exmy_mma_instr {
  char name[96];            /* canonical name, "sm_90:wgmma.f32.e4m3.e4m3" */
  const char *datapath;     /* the datapath row's name (static) */
  exmy_format a_fmt, b_fmt; /* operand element formats */
  exmy_format c_fmt, d_fmt; /* accumulator input and output formats */
  exmy_format s_fmt;        /* block-scale format (has_scale) */
  int has_scale;            /* 1: block-scaled (sa, sb required) */
  int block;                /* elements of k per scale (has_scale) */
  int k;                    /* the instruction's k */
  exmy_mma_zero zero;       /* zero-term rule (default v2) */
  int path;                 /* internal: row of the datapath table */
} exmy_mma_instr;

/* Parse an instruction name, optionally followed by ",zero=v1" or ",zero=v2".
 * 0, or -1 with err naming the bad text. */
EXMY_API int exmy_mma_parse(const char *text, exmy_mma_instr *instr, char *err, size_t errlen);
/* The instruction names: how many, and name i written to buf (made on
 * demand: snprintf semantics, the length needed; -1 and "" past the end). */
EXMY_API size_t exmy_mma_count(void);
EXMY_API int exmy_mma_get(size_t index, char *buf, size_t buflen);
/* The datapath table: the number of rows, and row i as one line of text
 * (name, algorithm, products per fused sum L, fraction bits F, ..., zero
 * exponent, output conversion, source), as exmy_mma_get. */
EXMY_API size_t exmy_mma_datapath_count(void);
EXMY_API int exmy_mma_datapath_get(size_t index, char *buf, size_t buflen);
/* D = A*B + C: A m x k (row-major), B k x n (row-major), C m x n, as the exact
 * values (double) of their formats; sa m x (k/block) and sb (k/block) x n the
 * scale values when has_scale (else NULL).  d: m x n codes of d_fmt (float
 * bits for f32).  A value that its format cannot hold is an error (tf32 and
 * xf32 operands are truncated to tf32 first, as the hardware does).  0, or -1
 * with err. */
EXMY_API int exmy_mma(const exmy_mma_instr *instr, size_t m, size_t n, const double *a, const double *b,
                      const double *c, const double *sa, const double *sb, void *d, char *err, size_t errlen);

/* ---- deprecated (1.4): the old names, thin wrappers -------------------- */
/* Kept so code written for 1.0 to 1.3 builds and links unchanged; each is
 * the call named after "use" (docs/api.md, "What changed in 1.4"). */
/* deprecated: use exmy_format_make (_init now only fills defaults). */
EXMY_API int exmy_format_init(exmy_format *fmt, char *err, size_t errlen);
/* deprecated: use exmy_recipe_state_new (it allocates: _new/_free). */
EXMY_API int exmy_recipe_state_init(const exmy_recipe *recipe, exmy_recipe_state *state, char *err, size_t errlen);
/* deprecated: use exmy_code_to_f64, exmy_from_f64, exmy_from_f32. */
EXMY_API double exmy_decode(const exmy_format *fmt, uint64_t code);
EXMY_API uint64_t exmy_from_double(const exmy_format *fmt, const exmy_rounding *rnd, double x, uint64_t index,
                                   unsigned *flags);
EXMY_API uint64_t exmy_from_float(const exmy_format *fmt, const exmy_rounding *rnd, float x, uint64_t index,
                                  unsigned *flags);
/* deprecated: use exmy_codes_to_f64, exmy_codes_to_f32. */
EXMY_API void exmy_decode_f64(const exmy_format *fmt, const void *codes, size_t n, double *out);
EXMY_API void exmy_decode_f32(const exmy_format *fmt, const void *codes, size_t n, float *out);
/* deprecated: use exmy_bf16_to_f64, exmy_f16_to_f64. */
EXMY_API double exmy_bf16_to_double(uint16_t bits);
EXMY_API double exmy_f16_to_double(uint16_t bits);
/* deprecated: use exmy_qtensor_to_f32, exmy_qtensor_to_f64. */
EXMY_API void exmy_qtensor_dequant_f32(const exmy_qtensor *q, float *out);
EXMY_API void exmy_qtensor_dequant_f64(const exmy_qtensor *q, double *out);
/* deprecated: use exmy_gemm_batch with args[b].threads = threads (this
 * wrapper copies the args to set it). */
EXMY_API int exmy_gemm_batched(const exmy_gemm_args *args, size_t count, int threads, void *const *d,
                               float *amax_d, unsigned *flags, char *err, size_t errlen);
/* deprecated: use exmy_gpu_gemm_run (flags NULL). */
EXMY_API int exmy_gpu_gemm(const exmy_gpu_gemm_args *args, char *err, size_t errlen);
/* deprecated: use exmy_mma_get and exmy_mma_datapath_get (the same text;
 * these write "?" past the end and return 1). */
EXMY_API int exmy_mma_name(size_t index, char *buf, size_t buflen);
EXMY_API int exmy_mma_datapath_text(size_t index, char *buf, size_t buflen);
/* deprecated: use exmy_accum_tc_preset_count and exmy_accum_tc_preset_get. */
EXMY_API const char *exmy_accum_tc_preset_name(size_t i);

#ifdef __cplusplus
}
#endif
#endif /* EXMY_H */
