/* test_stats.c: exmy_qtensor_stats against an independent double-precision
 * reference written from the definitions in exmy.h (exmy_qstats), not from
 * the library's code.
 *
 * The reference walks the tensor element by element: it finds each
 * element's group from the qtensor's block shape, recomputes the element
 * cast of the scaled value with the scalar reference conversions
 * (exmy_from_f32 of fp32(x * scale[g]), or exmy_from_f64 of the exact
 * product when q->exact_product is set) to get the overflow flag, decodes
 * the stored code with exmy_code_to_f64 and dequantizes in double.  The format's
 * range (fmt_log2_min/max) comes from scanning every code.
 *
 * Inputs: tensors quantized with exmy_recipe_quantize under the recipes
 * current (also pow2, row, exact), block:1x128, block:128x128, mx, mx:col,
 * mx:ocp, delayed (first step with scale 1, and a second step after
 * calibration on the same tensor), nvfp4 (and 16x16) with e2m1fn, some
 * with exact products; element formats e4m3fn, e5m2, e3m4, e2m1fn; the default (saturating) cast and a non-saturating stochastic
 * cast.  Edge tensors: all zeros, inf/NaN mixed in, all float32
 * subnormals, 1x1 (finite, zero, NaN, inf, subnormal, huge), shapes not a
 * multiple of the block, 1 x 65537 (one past a 65536-element chunk).  A
 * crafted case where rounding to fp32 first hides an overflow that the
 * exact product shows (delayed vs delayed:exact).  Thread count: the
 * statistics with 1 and 2 OpenMP threads must be bitwise identical.
 *
 * Build (from the source root): gcc -std=gnu11 -O2 -fopenmp
 * -ffp-contract=off -I. with the .c files of formats/ and emulate/ and
 * tests/test_stats.c, -lm.
 *
 * Exit 0 pass, 1 fail.  Seed: EXMY_TEST_SEED. */
#include "testutil.h"

#include <float.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---- reference ------------------------------------------------------ */

static int floor_log2_pos(double v) { /* v > 0, finite */
  int e;
  frexp(v, &e);                       /* v = m * 2^e, m in [0.5, 1) */
  return e - 1;
}

/* floor(log2) of the smallest positive and the largest finite value, by a
 * scan of every code (formats here have at most 8 bits). */
static void ref_fmt_range(const exmy_format *f, int *lo, int *hi, double *fmax) {
  double mn = INFINITY, mx = 0;
  uint64_t ncodes = (uint64_t)1 << f->bits;
  for (uint64_t c = 0; c < ncodes; c++) {
    exmy_class k = exmy_classify(f, c);
    if (k != EXMY_CLASS_SUBNORMAL && k != EXMY_CLASS_NORMAL) continue;
    double v = fabs(exmy_code_to_f64(f, c));
    if (v > 0 && v < mn) mn = v;
    if (v > mx) mx = v;
  }
  *lo = floor_log2_pos(mn);
  *hi = floor_log2_pos(mx);
  *fmax = mx;
}

/* TE's amax: max |x| ignoring NaN, starting from 0. */
static float ref_amax(const float *x, size_t n) {
  float a = 0;
  for (size_t i = 0; i < n; i++)
    if (!isnan(x[i]) && fabsf(x[i]) > a) a = fabsf(x[i]);
  return a;
}

static void ref_stats(const exmy_qtensor *q, const float *x, exmy_qstats *st) {
  const exmy_format *f = &q->fmt;
  size_t n = q->rows * q->cols;
  memset(st, 0, sizeof *st);
  st->n = n;
  size_t n_under = 0, n_over = 0, n_pairs = 0;
  double amin = INFINITY, amax = 0;
  double sxx = 0, sdd = 0, sxd = 0, see = 0, maxrel = 0;
  int any_nz_finite = 0;
  for (size_t r = 0; r < q->rows; r++) {
    for (size_t c = 0; c < q->cols; c++) {
      size_t k = r * q->cols + c;
      size_t g = (r / q->block_rows) * q->scols + c / q->block_cols;
      float xv = x[k];
      uint64_t code = exmy_code_get(f, q->codes, k);
      if (xv != 0) st->n_nonzero++;            /* NaN != 0 is true */
      if (xv != 0 && exmy_classify(f, code) == EXMY_CLASS_ZERO) n_under++;
      if (isinf(xv)) {
        n_over++;
      } else if (!isnan(xv)) {
        unsigned fl = 0;
        if (q->exact_product) {
          exmy_from_f64(f, &q->rnd, (double)xv * (double)q->scale[g], k, &fl);
        } else {
          float v = xv * q->scale[g];          /* one fp32 rounding (-ffp-contract=off) */
          exmy_from_f32(f, &q->rnd, v, k, &fl);
        }
        if (fl & EXMY_FLAG_OVERFLOW) n_over++;
      }
      double d = exmy_code_to_f64(f, code) * (double)q->scale_inv[g] * (double)q->tensor_scale_inv;
      double xd = xv;
      if (isfinite(xv) && xv != 0) {
        any_nz_finite = 1;
        double a = fabs(xd);
        if (a < amin) amin = a;
        if (a > amax) amax = a;
        int b = floor_log2_pos(a) - EXMY_HIST_LO;
        if (b < 0) b = 0;
        if (b >= EXMY_HIST_BINS) b = EXMY_HIST_BINS - 1;
        st->hist[b]++;
        double rel = isfinite(d) ? fabs(xd - d) / a : INFINITY;
        if (rel > maxrel) maxrel = rel;
      }
      if (isfinite(xv) && isfinite(d)) {
        n_pairs++;
        double e = xd - d;
        sxx += xd * xd;
        sdd += d * d;
        sxd += xd * d;
        see += e * e;
      }
    }
  }
  st->amin = any_nz_finite ? amin : 0;
  st->amax = any_nz_finite ? amax : 0;
  st->underflow_frac = (double)n_under / (double)n;
  st->overflow_frac = (double)n_over / (double)n;
  st->mse = n_pairs ? see / (double)n_pairs : 0;
  if (sxx == 0 && sdd == 0) st->cosine = 1;
  else if (sxx == 0 || sdd == 0) st->cosine = 0;
  else st->cosine = sxd / sqrt(sxx * sdd);
  st->snr_db = see == 0 ? INFINITY : 10 * log10(sxx / see);
  st->max_rel_err = maxrel;
  double fmax;
  ref_fmt_range(f, &st->fmt_log2_min, &st->fmt_log2_max, &fmax);
  float cur = exmy_scale_from_amax(ref_amax(x, n), (float)fmax, 0, 0, FLT_MAX);
  st->scale_ratio = (double)q->scale[0] / (double)cur;
}

/* ---- comparison ------------------------------------------------------ */

static int same_exact(double a, double b) {
  return a == b || (isnan(a) && isnan(b));
}

/* Relative 1e-12.  The library sums in fixed chunks of 65536 elements and
 * then adds the chunk sums in order, while the reference sums straight
 * through: the float-valued sums (sum x^2, sum d^2, sum x d, sum (x-d)^2)
 * may differ in the last bits from summation order alone, never from the
 * emulation (every code, flag and dequantized value is compared exactly
 * through the counts, fractions and extremes). */
static int same_rel(double a, double b) {
  if (a == b || (isnan(a) && isnan(b))) return 1;
  if (!isfinite(a) || !isfinite(b)) return 0;
  return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/* snr_db = 10 log10(R): a relative 1e-12 in the ratio R (summation order, as
 * above) is an absolute 10/ln(10) * 1e-12 = 4.3e-12 dB, which is large
 * relative to snr_db itself when R is near 1 (snr near 0 dB); so allow that
 * absolute difference besides the relative 1e-12. */
static int same_snr(double a, double b) {
  if (same_rel(a, b)) return 1;
  if (!isfinite(a) || !isfinite(b)) return 0;
  return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b)) + 4.5e-12;
}

static void compare(const char *what, const exmy_qstats *got, const exmy_qstats *want) {
#define CMPZ(field)                                                               \
  CHECK(got->field == want->field, "%s: " #field " expected %zu, got %zu", what, \
        (size_t)want->field, (size_t)got->field)
#define CMPD(field, fn)                                                             \
  CHECK(fn(got->field, want->field), "%s: " #field " expected %a (%.17g), got %a (%.17g)", \
        what, want->field, want->field, got->field, got->field)
  CMPZ(n);
  CMPZ(n_nonzero);
  CMPD(amin, same_exact);
  CMPD(amax, same_exact);
  CMPD(underflow_frac, same_exact);
  CMPD(overflow_frac, same_exact);
  CMPD(scale_ratio, same_exact);
  CMPD(mse, same_rel);
  CMPD(cosine, same_rel);
  CMPD(snr_db, same_snr);
  CMPD(max_rel_err, same_rel);
  CHECK(got->fmt_log2_min == want->fmt_log2_min, "%s: fmt_log2_min expected %d, got %d", what,
        want->fmt_log2_min, got->fmt_log2_min);
  CHECK(got->fmt_log2_max == want->fmt_log2_max, "%s: fmt_log2_max expected %d, got %d", what,
        want->fmt_log2_max, got->fmt_log2_max);
  int hist_bad = -1;
  for (int b = 0; b < EXMY_HIST_BINS; b++)
    if (got->hist[b] != want->hist[b]) { hist_bad = b; break; }
  CHECK(hist_bad < 0, "%s: hist[%d] (floor log2 %d) expected %" PRIu64 ", got %" PRIu64, what,
        hist_bad, hist_bad + EXMY_HIST_LO, hist_bad >= 0 ? want->hist[hist_bad] : 0,
        hist_bad >= 0 ? got->hist[hist_bad] : 0);
#undef CMPZ
#undef CMPD
}

/* Bitwise equality of every field (thread-count independence). */
static void compare_bitwise(const char *what, const exmy_qstats *a, const exmy_qstats *b) {
#define BW(field) \
  CHECK(memcmp(&a->field, &b->field, sizeof a->field) == 0, "%s: " #field " differs: %a vs %a", \
        what, (double)a->field, (double)b->field)
  BW(n); BW(n_nonzero); BW(amin); BW(amax); BW(underflow_frac); BW(overflow_frac);
  BW(mse); BW(cosine); BW(snr_db); BW(max_rel_err); BW(scale_ratio);
  BW(fmt_log2_min); BW(fmt_log2_max);
  CHECK(memcmp(a->hist, b->hist, sizeof a->hist) == 0, "%s: hist differs", what);
#undef BW
}

/* ---- inputs ---------------------------------------------------------- */

typedef struct tensor {
  const char *name;
  size_t rows, cols;
  float *x;
} tensor;

static double unif(uint64_t *st) { return (double)(tu_next(st) >> 11) * 0x1p-53; }
static double gauss(uint64_t *st) { /* Irwin-Hall approximation, enough here */
  double s = 0;
  for (int i = 0; i < 12; i++) s += unif(st);
  return s - 6;
}

static tensor make(const char *name, size_t rows, size_t cols) {
  size_t n = rows * cols;
  tensor t = {name, rows, cols, calloc(n > 0 ? n : 1, sizeof(float))};
  if (!t.x) { printf("out of memory\n"); exit(1); }
  return t;
}

/* Wide dynamic range: |x| = g * 2^e with e in [-30, 12], 1% zeros, a few
 * huge outliers (beyond e5m2's range), outlier columns. */
static tensor gen_wide(const char *name, size_t rows, size_t cols, uint64_t *st) {
  tensor t = make(name, rows, cols);
  for (size_t i = 0; i < rows * cols; i++) {
    uint64_t u = tu_next(st) % 1000;
    double v;
    if (u < 10) v = 0;
    else if (u < 12) v = ldexp(1 + unif(st), 16 + (int)(tu_next(st) % 8));
    else v = gauss(st) * ldexp(1, (int)(tu_next(st) % 43) - 30);
    if ((i % cols) % 97 == 5) v *= 30;
    if (tu_next(st) & 1) v = -v;
    t.x[i] = (float)v;
  }
  return t;
}

/* LLM-activation-like: normal values, outlier channels 30x larger. */
static tensor gen_act(const char *name, size_t rows, size_t cols, uint64_t *st) {
  tensor t = make(name, rows, cols);
  for (size_t i = 0; i < rows * cols; i++) {
    double v = gauss(st);
    if ((i % cols) % 61 == 3) v *= 30;
    t.x[i] = (float)v;
  }
  return t;
}

static tensor gen_zeros(size_t rows, size_t cols) {
  tensor t = make("zeros", rows, cols);
  for (size_t i = 0; i < rows * cols; i++) t.x[i] = (i % 3) ? 0.0f : -0.0f;
  return t;
}

/* Normal values with inf, -inf, NaN and zeros mixed in. */
static tensor gen_special(size_t rows, size_t cols, uint64_t *st) {
  tensor t = make("inf-nan", rows, cols);
  for (size_t i = 0; i < rows * cols; i++) {
    uint64_t u = tu_next(st) % 40;
    float v = (float)(gauss(st) * 4);
    if (u == 0) v = INFINITY;
    else if (u == 1) v = -INFINITY;
    else if (u == 2) v = NAN;
    else if (u == 3) v = -NAN;
    else if (u == 4) v = 0;
    t.x[i] = v;
  }
  return t;
}

/* Only float32 subnormals (and one sign each). */
static tensor gen_subnormal(size_t rows, size_t cols, uint64_t *st) {
  tensor t = make("f32-subnormal", rows, cols);
  for (size_t i = 0; i < rows * cols; i++) {
    uint32_t m = (uint32_t)(tu_next(st) & 0x7fffff);
    if (m == 0) m = 1;
    m >>= (unsigned)(tu_next(st) % 20);
    if (m == 0) m = 1;
    t.x[i] = tu_f32(m | (tu_next(st) & 1 ? 0x80000000u : 0));
  }
  return t;
}

static tensor gen_scalar(const char *name, float v) {
  tensor t = make(name, 1, 1);
  t.x[0] = v;
  return t;
}

/* ---- driver ---------------------------------------------------------- */

typedef struct spec {
  const char *recipe;
  int calibrate; /* delayed: a first FP8 step (which sets the recipe's fmax and
                  * records the amax), then a calibration step on the same
                  * tensor, exmy_recipe_step, and the measured second quantize */
} spec;

static long n_cases;

/* Quantize t with recipe/format/rounding, compare the library's statistics
 * with the reference; optionally also 1 vs 2 threads. */
static void run_case(const tensor *t, const spec *sp, const char *fmtname,
                     const exmy_rounding *rnd, const char *rname, int threads_too) {
  char what[256], err[300];
  snprintf(what, sizeof what, "%s %zux%zu %s %s%s rnd=%s", t->name, t->rows, t->cols,
           sp->recipe, sp->calibrate ? "(calibrated) " : "", fmtname, rname);
  exmy_format f = tu_format(fmtname);
  exmy_recipe rec;
  exmy_recipe_state rs;
  if (exmy_recipe_parse(sp->recipe, &rec, err, sizeof err) || exmy_recipe_state_new(&rec, &rs, err, sizeof err)) {
    CHECK(0, "%s: recipe does not parse: %s", what, err);
    return;
  }
  exmy_qtensor q;
  memset(&q, 0, sizeof q);
  if (sp->calibrate) {
    /* a first FP8 step (as in TE), then a calibration step on the tensor. */
    if (exmy_recipe_quantize(&rec, &f, rnd, t->x, t->rows, t->cols, &rs, &q, NULL, err, sizeof err)) {
      CHECK(0, "%s: first quantize failed: %s", what, err);
      exmy_recipe_state_free(&rs);
      return;
    }
    exmy_qtensor_free(&q);
    memset(&q, 0, sizeof q);
    exmy_recipe_calibrate(&rec, &f, t->x, t->rows * t->cols, &rs);
    exmy_recipe_step(&rec, &rs);
  }
  if (exmy_recipe_quantize(&rec, &f, rnd, t->x, t->rows, t->cols, &rs, &q, NULL, err, sizeof err)) {
    CHECK(0, "%s: quantize failed: %s", what, err);
    exmy_recipe_state_free(&rs);
    return;
  }
  n_cases++;
  /* sanity of the qtensor the reference relies on */
  CHECK(q.rows == t->rows && q.cols == t->cols && q.block_rows > 0 && q.block_cols > 0 &&
            q.srows == (t->rows + q.block_rows - 1) / q.block_rows &&
            q.scols == (t->cols + q.block_cols - 1) / q.block_cols,
        "%s: qtensor shape %zux%zu blocks %zux%zu groups %zux%zu", what, q.rows, q.cols,
        q.block_rows, q.block_cols, q.srows, q.scols);

  exmy_qstats want, got;
  ref_stats(&q, t->x, &want);
  memset(&got, 0xA5, sizeof got);
  char serr[EXMY_ERRLEN] = "";
  CHECK(exmy_qtensor_stats(&q, t->x, &got, serr, sizeof serr) == 0, "%s: stats failed: %s", what, serr);
  compare(what, &got, &want);
  /* After calibration on this very tensor, delayed scaling's scale is the
   * current-scaling scale of its amax (margin 0): the ratio is exactly 1. */
  if (sp->calibrate)
    CHECK(got.scale_ratio == 1, "%s: scale_ratio after calibration %a (scale %a), want 1", what,
          got.scale_ratio, (double)q.scale[0]);

  CHECK(exmy_amax_f32(t->x, t->rows * t->cols) == ref_amax(t->x, t->rows * t->cols),
        "%s: exmy_amax_f32 %a, reference %a", what,
        exmy_amax_f32(t->x, t->rows * t->cols), ref_amax(t->x, t->rows * t->cols));

#ifdef _OPENMP
  if (threads_too) {
    exmy_qstats s1, s2;
    int saved = omp_get_max_threads();
    memset(&s1, 0x5A, sizeof s1);
    memset(&s2, 0xC3, sizeof s2);
    omp_set_num_threads(1);
    CHECK(exmy_qtensor_stats(&q, t->x, &s1, NULL, 0) == 0, "%s: stats (1 thread) failed", what);
    omp_set_num_threads(2);
    CHECK(exmy_qtensor_stats(&q, t->x, &s2, NULL, 0) == 0, "%s: stats (2 threads) failed", what);
    omp_set_num_threads(saved);
    char w2[300];
    snprintf(w2, sizeof w2, "%s threads 1 vs 2", what);
    compare_bitwise(w2, &s1, &s2);
    snprintf(w2, sizeof w2, "%s threads default vs 1", what);
    compare_bitwise(w2, &got, &s1);
  }
#else
  (void)threads_too;
#endif
  exmy_qtensor_free(&q);
  exmy_recipe_state_free(&rs);
}

/* cuda_fp8.h's cast (what rnd = NULL meant before 1.0): rne, EXMY_SAT_FINITE. */
static exmy_rounding cuda_rnd(void) {
  exmy_rounding r = exmy_rounding_default();
  r.mode = EXMY_RNE;
  r.sat = EXMY_SAT_FINITE;
  return r;
}

/* Double rounding at the overflow threshold: delayed scaling with a scale
 * s = fp32(448/3) from a calibration, on values x whose exact product x*s
 * lies just above e4m3fn's overflow threshold 464 (the midpoint of 448 and
 * 480, a tie that rne sends to 448) while fp32(x*s) is exactly 464.  The
 * fp32-then-cast path does not overflow; the exact-product path does.  So
 * overflow_frac (and with a non-saturating cast, the codes) tell the two
 * apart, which the reference must follow through q->exact_product. */
static void double_rounding_case(uint64_t *st) {
  exmy_format f = tu_format("e4m3fn");
  exmy_rounding none = exmy_rounding_default();
  /* find a calibration amax A (near 3) whose scale s = fp32(448/A) admits
   * crafted x: exact product in (464, 464 + 2^-16], fp32 product == 464 */
  float calib[1] = {3.0f}, s = 0;
  float cand[64];
  int nc = 0;
  for (int a = 0; a < 4096 && nc == 0; a++) {
    calib[0] = tu_f32(tu_bits32(3.0f) + (uint32_t)a);
    s = 448.0f / calib[0];
    float x0 = 464.0f / s;
    for (int k = -8; k <= 8 && nc < 64; k++) {
      float xc = tu_f32((uint32_t)((int32_t)tu_bits32(x0) + k));
      double ex = (double)xc * (double)s;
      float fp = xc * s;
      if (ex > 464.0 && fp == 464.0f) cand[nc++] = xc;
    }
  }
  CHECK(nc > 0, "double rounding: no crafted input found");
  if (nc == 0) return;
  size_t rows = 4, cols = 50, n = rows * cols;
  float *x = calloc(n, sizeof *x);
  for (size_t i = 0; i < n; i++) {
    if (i % 3 == 0) x[i] = cand[i % (size_t)nc] * ((i & 1) ? -1.0f : 1.0f);
    else x[i] = (float)(gauss(st));
  }
  double over[2][2];
  for (int ex = 0; ex < 2; ex++) {
    for (int sat = 0; sat < 2; sat++) {
      char err[EXMY_ERRLEN], what[128];
      const char *rt = ex ? "delayed:exact" : "delayed";
      snprintf(what, sizeof what, "double-rounding %s e4m3fn %s", rt, sat ? "rne,satnone" : "default");
      exmy_recipe rec;
      exmy_recipe_state rs;
      exmy_qtensor q;
      memset(&q, 0, sizeof q);
      over[ex][sat] = -1;
      if (exmy_recipe_parse(rt, &rec, err, sizeof err) || exmy_recipe_state_new(&rec, &rs, err, sizeof err)) {
        CHECK(0, "%s: recipe does not parse: %s", what, err);
        continue;
      }
      const exmy_rounding cuda = cuda_rnd();
      const exmy_rounding *rnd = sat ? &none : &cuda;
      if (exmy_recipe_quantize(&rec, &f, rnd, calib, 1, 1, &rs, &q, NULL, err, sizeof err) == 0) {
        exmy_qtensor_free(&q);
        memset(&q, 0, sizeof q);
        exmy_recipe_calibrate(&rec, &f, calib, 1, &rs);
        exmy_recipe_step(&rec, &rs);
        if (exmy_recipe_quantize(&rec, &f, rnd, x, rows, cols, &rs, &q, NULL, err, sizeof err) == 0) {
          n_cases++;
          CHECK(q.scale[0] == s && q.exact_product == ex,
                "%s: scale %a (want %a), exact_product %d (want %d)", what, (double)q.scale[0],
                (double)s, q.exact_product, ex);
          exmy_qstats want, got;
          ref_stats(&q, x, &want);
          CHECK(exmy_qtensor_stats(&q, x, &got, NULL, 0) == 0, "%s: stats failed", what);
          compare(what, &got, &want);
          over[ex][sat] = got.overflow_frac;
          exmy_qtensor_free(&q);
        } else {
          CHECK(0, "%s: quantize failed: %s", what, err);
        }
      } else {
        CHECK(0, "%s: first quantize failed: %s", what, err);
      }
      exmy_recipe_state_free(&rs);
    }
  }
  for (int sat = 0; sat < 2; sat++)
    CHECK(over[0][sat] == 0 && over[1][sat] > 0,
          "double rounding (%s): overflow_frac fp32 path %g (want 0), exact path %g (want > 0)",
          sat ? "rne,satnone" : "default", over[0][sat], over[1][sat]);
  free(x);
}

static const spec SPECS[] = {
  {"current", 0},       {"current:pow2", 0}, {"current:row", 0},  {"current:exact", 0},
  {"block:1x128", 0},   {"block:128x128", 0}, {"block:1x128,exact", 0},
  {"mx", 0},            {"mx:col", 0},       {"mx:ocp", 0},       {"mx:ocp,exact", 0},
  {"delayed", 0},       {"delayed", 1},
};
static const char *FORMATS[] = {"e4m3fn", "e5m2", "e3m4", "e2m1fn"};
static const spec NVFP4[] = {{"nvfp4", 0}, {"nvfp4:16x16", 0}, {"nvfp4:exact", 0}};

/* Every recipe x format (nvfp4: e2m1fn only) on tensor t. */
static void sweep(const tensor *t, const exmy_rounding *rnd, const char *rname, int threads_too) {
  for (size_t i = 0; i < sizeof SPECS / sizeof SPECS[0]; i++)
    for (size_t j = 0; j < sizeof FORMATS / sizeof FORMATS[0]; j++)
      run_case(t, &SPECS[i], FORMATS[j], rnd, rname, threads_too);
  for (size_t i = 0; i < sizeof NVFP4 / sizeof NVFP4[0]; i++)
    run_case(t, &NVFP4[i], "e2m1fn", rnd, rname, threads_too);
}

int main(void) {
  uint64_t st = tu_seed(20240611);
  /* cuda: cuda_fp8.h's saturating rne cast ("default", rnd NULL before 1.0); and a non-saturating
   * stochastic cast, where overflow gives inf/NaN codes and the element
   * index k matters. */
  exmy_rounding sr = exmy_rounding_default();
  sr.mode = EXMY_SR;
  sr.sat = EXMY_SAT_NONE;
  sr.seed = st ^ 0x1234;
  sr.stream = 7;
  exmy_rounding rne_none = exmy_rounding_default();
  const exmy_rounding cuda = cuda_rnd();

  /* 300 x 260: 78000 elements (two 65536-element chunks); rows not a
   * multiple of 128 and cols not a multiple of 128, 32 or 16. */
  tensor wide = gen_wide("wide", 300, 260, &st);
  tensor act = gen_act("act", 256, 512, &st);        /* exactly 2 chunks */
  tensor big = gen_wide("wide-big", 520, 384, &st);  /* 199680: 4 chunks, last partial */
  tensor ragged = gen_act("ragged", 131, 45, &st);   /* smaller than every block width */
  tensor vec = gen_wide("vector", 1, 1000, &st);
  tensor vchunk = gen_wide("vector-65537", 1, 65537, &st); /* one past a chunk */
  tensor zeros = gen_zeros(7, 45);
  tensor special = gen_special(133, 70, &st);
  tensor sub = gen_subnormal(40, 33, &st);
  tensor one = gen_scalar("1x1", -3.7f);
  tensor one0 = gen_scalar("1x1-zero", 0.0f);
  tensor onenan = gen_scalar("1x1-nan", NAN);
  tensor oneinf = gen_scalar("1x1-inf", INFINITY);
  tensor onesub = gen_scalar("1x1-subnormal", tu_f32(0x00000003));
  tensor onebig = gen_scalar("1x1-huge", 3.0e38f);

  sweep(&wide, &cuda, "default", 0);
  sweep(&wide, &sr, "sr,satnone", 0);
  sweep(&wide, &rne_none, "rne,satnone", 0);
  sweep(&act, &cuda, "default", 0);
  sweep(&big, &cuda, "default", 1);
  sweep(&big, &sr, "sr,satnone", 1);
  sweep(&ragged, &cuda, "default", 0);
  sweep(&vec, &cuda, "default", 0);
  sweep(&vchunk, &cuda, "default", 1);
  sweep(&zeros, &cuda, "default", 1);
  sweep(&special, &cuda, "default", 1);
  sweep(&special, &rne_none, "rne,satnone", 0);
  sweep(&sub, &cuda, "default", 0);
  sweep(&sub, &sr, "sr,satnone", 0);
  sweep(&one, &cuda, "default", 0);
  sweep(&one0, &cuda, "default", 0);
  sweep(&onenan, &cuda, "default", 0);
  sweep(&oneinf, &cuda, "default", 0);
  sweep(&onesub, &cuda, "default", 0);
  sweep(&onebig, &cuda, "default", 0);
  sweep(&onebig, &rne_none, "rne,satnone", 0);

  double_rounding_case(&st);

  /* A few direct checks of the definitions on a tiny hand-made tensor, so a
   * reference that drifted with the library would still be caught:
   * x = {0, 1, -2, NaN}, recipe none (scale 1), e4m3fn. */
  {
    float x[4] = {0.0f, 1.0f, -2.0f, NAN};
    exmy_recipe rec;
    char err[EXMY_ERRLEN];
    exmy_format f = tu_format("e4m3fn");
    exmy_qtensor q;
    memset(&q, 0, sizeof q);
    if (exmy_recipe_parse("none", &rec, err, sizeof err) == 0 &&
        exmy_recipe_quantize(&rec, &f, &cuda, x, 1, 4, NULL, &q, NULL, err, sizeof err) == 0) {
      exmy_qstats s;
      CHECK(exmy_qtensor_stats(&q, x, &s, NULL, 0) == 0, "hand: stats failed");
      CHECK(s.n == 4 && s.n_nonzero == 3, "hand: n %zu n_nonzero %zu (want 4, 3)", s.n, s.n_nonzero);
      CHECK(s.amin == 1 && s.amax == 2, "hand: amin %g amax %g (want 1, 2)", s.amin, s.amax);
      CHECK(s.underflow_frac == 0 && s.overflow_frac == 0, "hand: under %g over %g (want 0, 0)",
            s.underflow_frac, s.overflow_frac);
      CHECK(s.mse == 0 && s.cosine == 1 && isinf(s.snr_db) && s.snr_db > 0 && s.max_rel_err == 0,
            "hand: mse %g cosine %g snr %g maxrel %g (want 0, 1, inf, 0)", s.mse, s.cosine,
            s.snr_db, s.max_rel_err);
      CHECK(s.hist[0 - EXMY_HIST_LO] == 1 && s.hist[1 - EXMY_HIST_LO] == 1,
            "hand: hist[log2 0] %" PRIu64 " hist[log2 1] %" PRIu64 " (want 1, 1)",
            s.hist[0 - EXMY_HIST_LO], s.hist[1 - EXMY_HIST_LO]);
      CHECK(s.fmt_log2_min == -9 && s.fmt_log2_max == 8, "hand: fmt_log2 %d..%d (want -9..8)",
            s.fmt_log2_min, s.fmt_log2_max);
      exmy_qtensor_free(&q);
    } else {
      CHECK(0, "hand: recipe none failed: %s", err);
    }
  }

  /* A view has no scale of its own: statistics refuse it (-1, a message, st
   * zeroed) rather than redo its casts with a made-up scale. */
  {
    exmy_format f = tu_format("e4m3fn");
    const uint8_t codes[2] = {0x38, 0x40};
    const float x[2] = {1.0f, 2.0f}, sinv = 4.0f;
    exmy_qtensor v;
    exmy_qtensor_view(&f, codes, 1, 2, &sinv, &v);
    exmy_qstats s;
    memset(&s, 0x5A, sizeof s);
    char err[EXMY_ERRLEN] = "";
    const int rc = exmy_qtensor_stats(&v, x, &s, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "view") && s.n == 0 && s.hist[0] == 0, "view: stats rc %d err '%s' n %zu (want -1, a message naming the view, zeroed)",
          rc, err, s.n);
    exmy_qtensor_free(&v);
  }

  printf("%ld quantized tensors compared\n", n_cases);
  tensor all[] = {wide, act, big, ragged, vec, vchunk, zeros, special, sub, one, one0, onenan, oneinf,
                  onesub, onebig};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i].x);
  return tu_finish("test_stats");
}
