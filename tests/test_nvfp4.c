/* test_nvfp4.c: the NVFP4 scaling recipe ("nvfp4" = 1x16 groups along rows,
 * "nvfp4:16x16" = 16x16 tiles, ",exact" = exact product) against an
 * independent slow scalar reference written from exmy.h and
 * docs/scaling-sources.md section 6 (TE NVFP4BlockScaling, newest
 * core_nvfp4.cuh).  fp32(...) is one binary32 operation, in the written order:
 *
 *   amax      = max |x| over the tensor, NaN ignored (fmaxf from 0), inf kept
 *   S_enc     = fp32(fp32(448 * fp4_max) / amax); S_enc = fminf(S_enc, FLT_MAX);
 *               amax == 0 or S_enc == 0 (amax inf): S_enc = 1
 *   S_dec     = (float)(1.0 / (double)S_enc)
 *   sdb       = fminf(fp32(amax_b * fp32(S_enc * fp32(1 / fp4_max))), FLT_MAX)
 *   code_b    = e4m3fn(sdb), round to nearest even, saturating (always, whatever
 *               the element rounding), sdb_q = its value
 *   mult_b    = fminf(fp32(1 / fp32(sdb_q * S_dec)), FLT_MAX)
 *   q         = cast(fp32(x * mult_b)) with the element rounding (NULL: rne,
 *               saturating); ",exact": the exact product rounded once
 *   dequant   = decode(q) * sdb_q * S_dec in double (float: rounded once)
 *
 * fp4_max is the element format's largest finite value (6 for e2m1fn; the
 * generalisation to e2m3fn / e3m2fn / e4m3fn elements is tested too).
 * The element casts and the e4m3fn scale cast go through exmy_from_f32 /
 * exmy_from_f64 (tested elsewhere against MPFR); every scale computation
 * here is this file's own fp32 code.  Compared bit for bit: codes, scale,
 * scale_inv, scale_codes, amax, tensor_scale, tensor_scale_inv, both
 * dequants, for partial groups, 1xn / nx1 / 1x1 shapes, random and edge data,
 * several roundings, and 1 vs 2 threads.  Hand-computed cases at the end of
 * the file check the reference itself.
 *
 * Assumption beyond the spec (a failure names it): the stochastic-rounding
 * counter of element (r, c) is its row-major index r * cols + c.
 *
 * Build (-ffp-contract=off so that fp32(...) is one operation):
 *   gcc -std=gnu11 -O2 -fopenmp -ffp-contract=off -I. formats/[*].c emulate/[*].c \
 *       tests/test_nvfp4.c -lm
 * (brackets only to keep the glob out of this comment). */
#include "testutil.h"
#include <float.h>
#include <math.h>
#include <omp.h>

/* ---- float helpers -------------------------------------------------------- */

static int same_f(float a, float b) { return tu_bits32(a) == tu_bits32(b) || (isnan(a) && isnan(b)); }
static int same_d(double a, double b) { return tu_bits64(a) == tu_bits64(b) || (isnan(a) && isnan(b)); }

/* one fp32 operation each, through memory: nothing kept wider or contracted */
static float mulf(float a, float b) {
  volatile float p = a * b;
  return p;
}
static float divf(float a, float b) {
  volatile float q = a / b;
  return q;
}
static float absf_bits(float v) { return tu_f32(tu_bits32(v) & 0x7FFFFFFFu); }

static double fmax_of(const exmy_format *f) {
  exmy_info in;
  exmy_format_info(f, &in);
  return in.max_finite;
}

static exmy_format E4M3; /* the block scale format */

/* ---- reference ------------------------------------------------------------ */

typedef struct nref {
  size_t rows, cols, br, bc, srows, scols;
  float gamax, S_enc, S_dec;
  uint64_t *codes;
  float *scale, *scale_inv, *amax, *sdb;
  unsigned *scode;
} nref;

static void nref_free(nref *o) {
  free(o->codes);
  free(o->scale);
  free(o->scale_inv);
  free(o->amax);
  free(o->sdb);
  free(o->scode);
  memset(o, 0, sizeof *o);
}

/* max |x| over a region, NaN skipped, from +0 (fmaxf semantics) */
static float ref_amax(const float *x, size_t cols, size_t r0, size_t nr, size_t c0, size_t nc) {
  float m = 0.0f;
  for (size_t r = r0; r < r0 + nr; r++)
    for (size_t c = c0; c < c0 + nc; c++) {
      float v = x[r * cols + c];
      if (isnan(v)) continue;
      float a = absf_bits(v);
      if (a > m) m = a;
    }
  return m;
}

/* The tensor scale of a global amax. */
static float ref_s_enc(float gamax, float fp4max) {
  float s = divf(mulf(448.0f, fp4max), gamax);
  s = fminf(s, FLT_MAX);
  if (gamax == 0.0f || s == 0.0f) s = 1.0f;
  return s;
}

/* The e4m3fn code of a block's decode scale: rne, saturating. */
static unsigned ref_scale_code(float sdb) {
  exmy_rounding r = exmy_rounding_default();
  r.mode = EXMY_RNE;
  r.sat = EXMY_SAT_FINITE;
  return (unsigned)exmy_from_f32(&E4M3, &r, sdb, 0, NULL);
}

/* What the reference saw, to check that the inputs reach every case. */
static struct {
  long s_enc_one_zero, s_enc_one_inf, s_enc_clamped, groups, sdb_zero_nonzero_amax, sdb_subnormal, sdb_saturated,
      sdb_inexact_tie_area, mult_clamped_nonzero_amax, other_order_differs;
} cov;

static void nv_ref(const exmy_format *f, const exmy_rounding *rnd, int exact, size_t br, size_t bc, const float *x,
                   size_t rows, size_t cols, nref *o) {
  memset(o, 0, sizeof *o);
  o->rows = rows;
  o->cols = cols;
  o->br = br;
  o->bc = bc;
  o->srows = (rows + br - 1) / br;
  o->scols = (cols + bc - 1) / bc;
  size_t ng = o->srows * o->scols;
  o->codes = calloc(rows * cols + 1, sizeof *o->codes);
  o->scale = calloc(ng + 1, sizeof(float));
  o->scale_inv = calloc(ng + 1, sizeof(float));
  o->amax = calloc(ng + 1, sizeof(float));
  o->sdb = calloc(ng + 1, sizeof(float));
  o->scode = calloc(ng + 1, sizeof(unsigned));
  float fp4max = (float)fmax_of(f);
  o->gamax = ref_amax(x, cols, 0, rows, 0, cols);
  float S = ref_s_enc(o->gamax, fp4max);
  float Sd = (float)(1.0 / (double)S);
  o->S_enc = S;
  o->S_dec = Sd;
  float k = mulf(S, divf(1.0f, fp4max)); /* fp32(S_enc * fp32(1/fp4_max)) */
  if (o->gamax == 0.0f) cov.s_enc_one_zero++;
  else if (isinf(o->gamax)) cov.s_enc_one_inf++;
  else if (S == FLT_MAX) cov.s_enc_clamped++;
  for (size_t gr = 0; gr < o->srows; gr++)
    for (size_t gc = 0; gc < o->scols; gc++) {
      size_t g = gr * o->scols + gc;
      size_t r0 = gr * br, c0 = gc * bc;
      size_t nr = rows - r0 < br ? rows - r0 : br, nc = cols - c0 < bc ? cols - c0 : bc;
      float a = ref_amax(x, cols, r0, nr, c0, nc);
      float sdb = fminf(mulf(a, k), FLT_MAX);
      unsigned code = ref_scale_code(sdb);
      float sq = (float)exmy_code_to_f64(&E4M3, code);
      float mult = fminf(divf(1.0f, mulf(sq, Sd)), FLT_MAX);
      cov.groups++;
      if (a > 0.0f && sq == 0.0f) cov.sdb_zero_nonzero_amax++;
      if (sq > 0.0f && sq < 0x1p-6f) cov.sdb_subnormal++;
      if (sdb > 464.0f) cov.sdb_saturated++;
      if (a > 0.0f && sq != sdb && sq != 0.0f) cov.sdb_inexact_tie_area++;
      if (a > 0.0f && mult == FLT_MAX) cov.mult_clamped_nonzero_amax++;
      { /* the older TE association orders (scaling-sources.md 6): would they give another code? */
        float s2 = fminf(mulf(divf(a, fp4max), S), FLT_MAX), s3 = fminf(mulf(mulf(a, divf(1.0f, fp4max)), S), FLT_MAX);
        if (ref_scale_code(s2) != code || ref_scale_code(s3) != code) cov.other_order_differs++;
      }
      o->amax[g] = a;
      o->sdb[g] = sdb;
      o->scode[g] = code;
      o->scale_inv[g] = sq;
      o->scale[g] = mult;
      for (size_t r = r0; r < r0 + nr; r++)
        for (size_t c = c0; c < c0 + nc; c++) {
          size_t i = r * cols + c;
          o->codes[i] = exact ? exmy_from_f64(f, rnd, (double)x[i] * (double)mult, i, NULL)
                              : exmy_from_f32(f, rnd, mulf(x[i], mult), i, NULL);
        }
    }
}

/* ---- comparison ------------------------------------------------------------ */

static void compare(const char *what, const nref *e, const exmy_qtensor *g, const float *x, const exmy_format *f,
                    const exmy_rounding *rr, int exact) {
  CHECK(g->rows == e->rows && g->cols == e->cols, "%s: qtensor shape %zux%zu, expected %zux%zu", what, g->rows,
        g->cols, e->rows, e->cols);
  CHECK(g->srows == e->srows && g->scols == e->scols, "%s: groups %zux%zu, expected %zux%zu", what, g->srows, g->scols,
        e->srows, e->scols);
  if (g->srows != e->srows || g->scols != e->scols || g->rows != e->rows || g->cols != e->cols) return;
  /* the resolved group shape: the recipe's, or clipped to the tensor */
  size_t brmin = e->br < e->rows ? e->br : e->rows, bcmin = e->bc < e->cols ? e->bc : e->cols;
  CHECK((g->block_rows == e->br || g->block_rows == brmin) && (g->block_cols == e->bc || g->block_cols == bcmin),
        "%s: block %zux%zu, expected %zux%zu", what, g->block_rows, g->block_cols, e->br, e->bc);
  CHECK(g->fmt.bits == f->bits && g->fmt.ebits == f->ebits && g->fmt.mbits == f->mbits && g->fmt.bias == f->bias,
        "%s: qtensor format %s, expected %s", what, g->fmt.name, f->name);
  CHECK(g->recipe == EXMY_RECIPE_NVFP4, "%s: qtensor recipe %d, expected %d (nvfp4)", what, g->recipe,
        EXMY_RECIPE_NVFP4);
  CHECK(!!g->exact_product == !!exact, "%s: qtensor exact_product %d, expected %d", what, g->exact_product, exact);
  CHECK(g->rnd.mode == rr->mode && g->rnd.sat == rr->sat, "%s: qtensor rnd mode %d sat %d, expected %d %d", what,
        g->rnd.mode, g->rnd.sat, rr->mode, rr->sat);
  CHECK(same_f(g->tensor_scale, e->S_enc), "%s (global amax 0x%08x %a): tensor_scale 0x%08x (%a), expected 0x%08x (%a)",
        what, tu_bits32(e->gamax), e->gamax, tu_bits32(g->tensor_scale), g->tensor_scale, tu_bits32(e->S_enc), e->S_enc);
  CHECK(same_f(g->tensor_scale_inv, e->S_dec),
        "%s (global amax 0x%08x %a): tensor_scale_inv 0x%08x (%a), expected 0x%08x (%a)", what, tu_bits32(e->gamax),
        e->gamax, tu_bits32(g->tensor_scale_inv), g->tensor_scale_inv, tu_bits32(e->S_dec), e->S_dec);
  CHECK(g->scale_codes != NULL, "%s: scale_codes NULL, expected E4M3 codes", what);
  size_t ng = e->srows * e->scols;
  for (size_t k = 0; k < ng; k++) {
    CHECK(same_f(g->amax[k], e->amax[k]), "%s group %zu: amax 0x%08x (%a), expected 0x%08x (%a)", what, k,
          tu_bits32(g->amax[k]), g->amax[k], tu_bits32(e->amax[k]), e->amax[k]);
    if (g->scale_codes)
      CHECK(g->scale_codes[k] == e->scode[k],
            "%s group %zu (amax 0x%08x %a, S_enc %a, sdb 0x%08x %a): E4M3 code 0x%02x, expected 0x%02x", what, k,
            tu_bits32(e->amax[k]), e->amax[k], e->S_enc, tu_bits32(e->sdb[k]), e->sdb[k], g->scale_codes[k],
            e->scode[k]);
    CHECK(same_f(g->scale_inv[k], e->scale_inv[k]),
          "%s group %zu (amax 0x%08x %a, sdb %a): scale_inv 0x%08x (%a), expected 0x%08x (%a)", what, k,
          tu_bits32(e->amax[k]), e->amax[k], e->sdb[k], tu_bits32(g->scale_inv[k]), g->scale_inv[k],
          tu_bits32(e->scale_inv[k]), e->scale_inv[k]);
    CHECK(same_f(g->scale[k], e->scale[k]),
          "%s group %zu (amax 0x%08x %a, sdb_q %a, S_dec %a): scale 0x%08x (%a), expected 0x%08x (%a)", what, k,
          tu_bits32(e->amax[k]), e->amax[k], e->scale_inv[k], e->S_dec, tu_bits32(g->scale[k]), g->scale[k],
          tu_bits32(e->scale[k]), e->scale[k]);
  }
  size_t n = e->rows * e->cols;
  double *d64 = malloc((n + 1) * sizeof *d64);
  float *d32 = malloc((n + 1) * sizeof *d32);
  exmy_qtensor_to_f64(g, d64);
  exmy_qtensor_to_f32(g, d32);
  for (size_t i = 0; i < n; i++) {
    size_t r = i / e->cols, c = i % e->cols;
    size_t k = (r / e->br) * e->scols + c / e->bc;
    uint64_t got = exmy_code_get(f, g->codes, i);
    CHECK(got == e->codes[i],
          "%s group %zu elem %zu (%zu,%zu) x=0x%08x (%a) mult 0x%08x (%a): code 0x%" PRIx64 ", expected 0x%" PRIx64
          "%s",
          what, k, i, r, c, tu_bits32(x[i]), x[i], tu_bits32(e->scale[k]), e->scale[k], got, e->codes[i],
          rr->mode == EXMY_SR ? " (ASSUMPTION: sr counter = row-major index)" : "");
    double want = exmy_code_to_f64(f, e->codes[i]) * (double)e->scale_inv[k] * (double)e->S_dec;
    CHECK(same_d(d64[i], want), "%s group %zu elem %zu x=0x%08x: dequant_f64 %a, expected %a", what, k, i,
          tu_bits32(x[i]), d64[i], want);
    CHECK(same_f(d32[i], (float)want), "%s group %zu elem %zu x=0x%08x: dequant_f32 %a, expected %a", what, k, i,
          tu_bits32(x[i]), d32[i], (float)want);
  }
  free(d64);
  free(d32);
}

/* ---- rounding modes ------------------------------------------------------- */

typedef struct rmode {
  const char *name;
  int null_rnd;
  exmy_rounding r;
} rmode;

static rmode make_mode(const char *name, int null_rnd, exmy_round_mode m, exmy_saturation sat, uint64_t seed,
                       int sr_bits) {
  rmode md;
  md.name = name;
  md.null_rnd = null_rnd;
  md.r = exmy_rounding_default();
  md.r.mode = m;
  md.r.sat = sat;
  md.r.seed = seed;
  md.r.stream = seed ? 5 : 0;
  md.r.sr_bits = sr_bits;
  /* null_rnd: the mode that passed rnd = NULL, which meant cuda_fp8.h's rne
   * with EXMY_SAT_FINITE; NULL is now an error (run_one checks that), and
   * the mode passes that rounding explicitly. */
  if (null_rnd) md.r.sat = EXMY_SAT_FINITE;
  return md;
}

static int nmodes;
static rmode modes[8];

/* Quantize with the library and the reference, compare. */
static void run_one(const char *text, size_t br, size_t bc, int exact, const exmy_format *f, const rmode *md,
                    const float *x, size_t rows, size_t cols, const char *data) {
  exmy_recipe rec;
  char err[EXMY_ERRLEN];
  if (exmy_recipe_parse(text, &rec, err, sizeof err)) {
    CHECK(0, "cannot parse recipe '%s': %s", text, err);
    return;
  }
  rec.exact_product = exact;
  char what[256];
  snprintf(what, sizeof what, "'%s'%s fmt %s rnd %s shape %zux%zu data %s", text, exact ? " exact_product" : "",
           f->name, md->name, rows, cols, data);
  exmy_qtensor q;
  memset(&q, 0, sizeof q);
  if (md->null_rnd) {
    err[0] = 0;
    int rn = exmy_recipe_quantize(&rec, f, NULL, x, rows, cols, NULL, &q, NULL, err, sizeof err);
    CHECK(rn == -1 && err[0], "%s: NULL rnd not rejected (rc %d, err '%s')", what, rn, err);
    if (rn == 0) exmy_qtensor_free(&q);
  }
  int rc = exmy_recipe_quantize(&rec, f, &md->r, x, rows, cols, NULL, &q, NULL, err, sizeof err);
  CHECK(rc == 0, "%s: quantize failed: %s", what, err);
  if (rc == 0) {
    nref e;
    nv_ref(f, &md->r, exact, br, bc, x, rows, cols, &e);
    compare(what, &e, &q, x, f, &md->r, exact);
    nref_free(&e);
    exmy_qtensor_free(&q);
  }
}

/* ---- inputs ----------------------------------------------------------------- */

static float rand_unit(uint64_t *st) { return (float)(tu_next(st) >> 40) * 0x1p-24f; } /* [0,1), 24 bits */
static float rand_sign(uint64_t *st, float v) { return (tu_next(st) & 1) ? -v : v; }

/* approximately normal: Irwin-Hall of 4 uniforms, centred */
static float rand_normal(uint64_t *st) {
  float s = 0;
  for (int i = 0; i < 4; i++) s += rand_unit(st);
  return (s - 2.0f) * 1.7320508f;
}

enum { D_NORMAL, D_HEAVY, D_WIDE, D_SPECIAL, D_TIES, D_NKINDS };
static const char *dnames[D_NKINDS] = {"normal", "heavy", "wide", "special", "e4m3-ties"};

/* D_TIES: block amaxes a few ulps around gamax * m / 448 for an e4m3fn midpoint m, so that sdb lands
 * next to an e4m3 rounding tie, where the association order of sdb matters (scaling-sources.md 6). */
static void gen_ties(uint64_t *st, float *x, size_t rows, size_t cols) {
  float gamax = ldexpf(1.0f + rand_unit(st), (int)(tu_next(st) % 41) - 20);
  if (tu_next(st) % 4 == 0) gamax = ldexpf(6.0f, (int)(tu_next(st) % 21) - 10); /* S_enc exact */
  for (size_t r = 0; r < rows; r++)
    for (size_t c0 = 0; c0 < cols; c0 += 16) {
      size_t nc = cols - c0 < 16 ? cols - c0 : 16;
      int e = (int)(tu_next(st) % 15) - 6;  /* e4m3fn normal binades 2^-6 .. 2^8 */
      int j = 8 + (int)(tu_next(st) % 8); /* midpoint (j + 0.5) * 2^(e-3) */
      double m = (j + 0.5) * ldexp(1.0, e - 3);
      if (tu_next(st) % 5 == 0) m = ((int)(tu_next(st) % 8) + 0.5) * 0x1p-9; /* subnormal midpoints */
      if (m > 440.0) m = 432.0;
      float t = (float)(m * (double)gamax / 448.0);
      int nudge = (int)(tu_next(st) % 7) - 3;
      for (; nudge > 0; nudge--) t = nextafterf(t, INFINITY);
      for (; nudge < 0; nudge++) t = nextafterf(t, 0.0f);
      for (size_t c = c0; c < c0 + nc; c++) x[r * cols + c] = rand_sign(st, mulf(t, rand_unit(st)));
      x[r * cols + c0 + tu_next(st) % nc] = rand_sign(st, t);
    }
  x[0] = rand_sign(st, gamax);
}

/* Fill x by kind.  Levels are per group of 16 columns (and per row), so that
 * groups see very different amaxes. */
static void gen(uint64_t *st, int kind, float *x, size_t rows, size_t cols) {
  int base = (int)(tu_next(st) % 60) - 30;
  size_t n = rows * cols;
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      size_t i = r * cols + c;
      float v;
      switch (kind) {
      case D_NORMAL:
      default:
        v = ldexpf(rand_normal(st), base);
        break;
      case D_HEAVY: { /* Cauchy-like: normal / uniform, power-law tail */
        float u = rand_unit(st) + 0x1p-20f;
        v = ldexpf(rand_normal(st) / u, base);
        break;
      }
      case D_WIDE: { /* group levels over 2^-45 .. 2^0 relative: sdb in e4m3 normals, subnormals, zero */
        uint64_t h = (r * 0x9E3779B97F4A7C15ULL) ^ ((c / 16) * 0xC2B2AE3D27D4EB4FULL) ^ (uint64_t)(base + 100);
        int lvl = base - (int)(tu_next(&h) % 46);
        uint64_t k = tu_next(st) % 100;
        if (k < 3) v = 0.0f;
        else if (k < 5) v = -0.0f;
        else if (k < 7) v = tu_f32((uint32_t)(tu_next(st) & 0x7FFFFF) | 1u); /* float subnormal */
        else if (k < 12) v = ldexpf(1.0f, lvl - (int)(tu_next(st) % 4));     /* exact powers of two */
        else v = ldexpf(1.0f + rand_unit(st), lvl - (int)(tu_next(st) % 8));
        v = rand_sign(st, v);
        break;
      }
      case D_TIES:    /* gen_ties below */
      case D_SPECIAL: /* normal-ish, then specials sprinkled below */
        v = ldexpf(rand_normal(st), base);
        break;
      }
      x[i] = v;
    }
  if (kind == D_TIES) gen_ties(st, x, rows, cols);
  if (kind == D_SPECIAL && n) {
    /* zero a few whole groups (1x16 and 16x16 alike: zero 16x16 tiles' first rows too) */
    size_t nz = 1 + tu_next(st) % 3;
    for (size_t t = 0; t < nz; t++) {
      size_t r = tu_next(st) % rows, c0 = (tu_next(st) % ((cols + 15) / 16)) * 16;
      for (size_t c = c0; c < c0 + 16 && c < cols; c++) x[r * cols + c] = (c & 1) ? -0.0f : 0.0f;
    }
    /* NaNs, and sometimes infs with huge finite values (S_enc 1, sdb saturates) */
    size_t nn = 1 + tu_next(st) % 4;
    for (size_t t = 0; t < nn; t++) x[tu_next(st) % n] = (t & 1) ? -NAN : NAN;
    if (tu_next(st) % 2) {
      x[tu_next(st) % n] = rand_sign(st, INFINITY);
      for (size_t t = 0; t < 4; t++) x[tu_next(st) % n] = rand_sign(st, ldexpf(1.0f + rand_unit(st), 20 + (int)(tu_next(st) % 80)));
    }
  }
}

/* ---- test 1: random tensors --------------------------------------------------- */

typedef struct rcase {
  const char *text;
  size_t br, bc;
  int exact;
} rcase;
static const rcase rcases[] = {
    {"nvfp4", 1, 16, 0},
    {"nvfp4:16x16", 16, 16, 0},
    {"nvfp4:exact", 1, 16, 1},
    {"nvfp4:16x16,exact", 16, 16, 1},
};
#define NRCASES (sizeof rcases / sizeof rcases[0])

static void test_random(uint64_t *st) {
  static const size_t shapes[][2] = {{1, 1},   {1, 5},   {1, 16},  {1, 17},  {5, 1},   {37, 1},  {16, 16},
                                     {17, 33}, {3, 70},  {33, 47}, {40, 160}, {1, 1000}, {129, 257}};
  size_t nsh = sizeof shapes / sizeof shapes[0];
  const char *fmts[] = {"e2m1fn", "e2m3fn", "e3m2fn", "e4m3fn"};
  for (size_t si = 0; si < nsh; si++) {
    size_t rows = shapes[si][0], cols = shapes[si][1];
    float *x = malloc(rows * cols * sizeof *x);
    for (int kind = 0; kind < D_NKINDS; kind++) {
      gen(st, kind, x, rows, cols);
      for (int fi = 0; fi < 4; fi++) {
        if (fi > 0 && (si % 3 != (size_t)fi - 1 && rows * cols > 100)) continue; /* other formats: a subset */
        exmy_format f = tu_format(fmts[fi]);
        for (size_t ci = 0; ci < NRCASES; ci++)
          for (int mi = 0; mi < nmodes; mi++) {
            if (rows * cols > 10000 && (size_t)mi % NRCASES != ci) continue; /* big shape: a subset */
            run_one(rcases[ci].text, rcases[ci].br, rcases[ci].bc, rcases[ci].exact, &f, &modes[mi], x, rows, cols,
                    dnames[kind]);
          }
      }
    }
    free(x);
  }
}

/* ---- test 2: edge tensors --------------------------------------------------- */

static void test_edges(uint64_t *st) {
  const size_t rows = 18, cols = 35;
  float x[18 * 35];
  exmy_format f = tu_format("e2m1fn");
  for (int p = 0; p < 14; p++) {
    for (size_t i = 0; i < rows * cols; i++) x[i] = rand_normal(st);
    const char *name = "";
    size_t j = tu_next(st) % (rows * cols);
    switch (p) {
    case 0: name = "all +0"; for (size_t i = 0; i < rows * cols; i++) x[i] = 0.0f; break;
    case 1: name = "signed zeros"; for (size_t i = 0; i < rows * cols; i++) x[i] = (i & 1) ? -0.0f : 0.0f; break;
    case 2: name = "one +inf"; x[j] = INFINITY; break;
    case 3: name = "one -inf, huge values"; x[j] = -INFINITY; x[(j + 40) % (rows * cols)] = 3e38f; x[(j + 100) % (rows * cols)] = -1e7f; break;
    case 4: name = "one NaN"; x[j] = NAN; break;
    case 5: name = "all NaN"; for (size_t i = 0; i < rows * cols; i++) x[i] = (i & 1) ? -NAN : NAN; break;
    case 6: name = "NaN and zeros"; for (size_t i = 0; i < rows * cols; i++) x[i] = (i % 3) ? 0.0f : NAN; break;
    case 7: name = "float subnormals (S_enc clamps to FLT_MAX)"; for (size_t i = 0; i < rows * cols; i++) x[i] = tu_f32((uint32_t)(tu_next(st) & 0x807FFFFFu)); break;
    case 8: name = "min subnormal only"; for (size_t i = 0; i < rows * cols; i++) x[i] = 0.0f; x[j] = tu_f32(1); break;
    case 9: name = "amax FLT_MAX"; x[j] = -FLT_MAX; break;
    case 10: name = "amax 6, values on the e2m1 grid"; for (size_t i = 0; i < rows * cols; i++) x[i] = (float)(int)(tu_next(st) % 13) * 0.5f - 3.0f; x[j] = 6.0f; break;
    case 11: name = "zero groups in a nonzero tensor"; for (size_t i = 0; i < rows * cols; i++) if ((i % cols) / 16 == 1 || (i / cols) < 16) x[i] = 0.0f; break;
    case 12: name = "tiny groups (sdb rounds to e4m3 0 or subnormal)"; for (size_t i = 0; i < rows * cols; i++) x[i] = ldexpf(x[i], -(int)((i / cols) % 18) - 8); x[j] = 1000.0f; break;
    case 13: name = "inf in a group of zeros"; for (size_t i = 0; i < rows * cols; i++) x[i] = 0.0f; x[j] = INFINITY; x[(j + 17) % (rows * cols)] = 1.0f; break;
    }
    /* whole tensor, and sub-shapes of the same data (1xn, nx1, 1x1) */
    const size_t shp[][2] = {{rows, cols}, {1, rows * cols}, {rows * cols, 1}, {1, 1}, {2, 16}};
    for (size_t s = 0; s < 5; s++)
      for (size_t ci = 0; ci < NRCASES; ci++)
        for (int mi = 0; mi < nmodes; mi++) {
          size_t rr = shp[s][0], cc = shp[s][1];
          const float *xp = x;
          if (rr * cc == 1) xp = x + j;
          run_one(rcases[ci].text, rcases[ci].br, rcases[ci].bc, rcases[ci].exact, &f, &modes[mi], xp, rr, cc, name);
        }
  }
}

/* ---- test 3: hand-computed values ------------------------------------------- */

/* Quantize x (1 x n or rows x cols) with cuda_fp8.h's rounding (rne,
 * satfinite: what NULL meant before 1.0) into q; 0 on success. */
static int hand_q(const char *text, const float *x, size_t rows, size_t cols, exmy_qtensor *q) {
  exmy_format f = tu_format("e2m1fn");
  exmy_recipe rec;
  char err[EXMY_ERRLEN];
  if (exmy_recipe_parse(text, &rec, err, sizeof err)) {
    CHECK(0, "cannot parse '%s': %s", text, err);
    return -1;
  }
  exmy_rounding cuda = exmy_rounding_default();
  cuda.mode = EXMY_RNE;
  cuda.sat = EXMY_SAT_FINITE;
  int rc = exmy_recipe_quantize(&rec, &f, &cuda, x, rows, cols, NULL, q, NULL, err, sizeof err);
  CHECK(rc == 0, "hand '%s' %zux%zu: quantize failed: %s", text, rows, cols, err);
  return rc;
}

typedef struct hgroup {
  float amax;
  unsigned code;
  float scale_inv, scale;
} hgroup;
typedef struct helem {
  size_t i;
  uint64_t code;
  double d64;
  float d32;
} helem;

/* Check the library against the hand values, then the reference against them. */
static void hand_check(const char *name, const char *text, const float *x, size_t rows, size_t cols, float S_enc,
                       float S_dec, const hgroup *hg, size_t ng, const helem *he, size_t ne) {
  exmy_qtensor q;
  if (hand_q(text, x, rows, cols, &q)) return;
  exmy_format f = tu_format("e2m1fn");
  CHECK(same_f(q.tensor_scale, S_enc) && same_f(q.tensor_scale_inv, S_dec),
        "hand %s: tensor_scale %a tensor_scale_inv %a, expected %a %a", name, q.tensor_scale, q.tensor_scale_inv, S_enc,
        S_dec);
  CHECK(q.srows * q.scols == ng, "hand %s: %zu groups, expected %zu", name, q.srows * q.scols, ng);
  double *d64 = malloc(rows * cols * sizeof *d64);
  float *d32 = malloc(rows * cols * sizeof *d32);
  exmy_qtensor_to_f64(&q, d64);
  exmy_qtensor_to_f32(&q, d32);
  if (q.srows * q.scols == ng) {
    for (size_t g = 0; g < ng; g++) {
      CHECK(same_f(q.amax[g], hg[g].amax), "hand %s group %zu: amax %a, expected %a", name, g, q.amax[g], hg[g].amax);
      CHECK(q.scale_codes && q.scale_codes[g] == hg[g].code, "hand %s group %zu: E4M3 code 0x%02x, expected 0x%02x",
            name, g, q.scale_codes ? q.scale_codes[g] : 0xFFFFu, hg[g].code);
      CHECK(same_f(q.scale_inv[g], hg[g].scale_inv), "hand %s group %zu: scale_inv %a, expected %a", name, g,
            q.scale_inv[g], hg[g].scale_inv);
      CHECK(same_f(q.scale[g], hg[g].scale), "hand %s group %zu: scale %a, expected %a", name, g, q.scale[g],
            hg[g].scale);
    }
    for (size_t k = 0; k < ne; k++) {
      size_t i = he[k].i;
      uint64_t got = exmy_code_get(&f, q.codes, i);
      CHECK(got == he[k].code, "hand %s elem %zu x=%a: code 0x%" PRIx64 ", expected 0x%" PRIx64, name, i, x[i], got,
            he[k].code);
      CHECK(same_d(d64[i], he[k].d64) && same_f(d32[i], he[k].d32),
            "hand %s elem %zu x=%a: dequant %a / %a, expected %a / %a", name, i, x[i], d64[i], d32[i], he[k].d64,
            he[k].d32);
    }
  }
  free(d64);
  free(d32);
  exmy_qtensor_free(&q);
  /* the reference must agree with the hand values too */
  exmy_rounding rr = exmy_rounding_default();
  rr.sat = EXMY_SAT_FINITE;
  nref e;
  size_t bc = 16, br = strstr(text, "16x16") ? 16 : 1;
  nv_ref(&f, &rr, 0, br, bc, x, rows, cols, &e);
  int ok = same_f(e.S_enc, S_enc) && same_f(e.S_dec, S_dec) && e.srows * e.scols == ng;
  for (size_t g = 0; ok && g < ng; g++)
    ok = same_f(e.amax[g], hg[g].amax) && e.scode[g] == hg[g].code && same_f(e.scale_inv[g], hg[g].scale_inv) &&
         same_f(e.scale[g], hg[g].scale);
  for (size_t k = 0; ok && k < ne; k++) ok = e.codes[he[k].i] == he[k].code;
  CHECK(ok, "hand %s: the reference disagrees with the hand values", name);
  nref_free(&e);
}

static void test_hand(void) {
  /* A. amax 6: S_enc = fp32(2688 / 6) = 448, S_dec = (float)(1/448.0) = 0x1.24924ap-9
   * (1/7 = 0x1.249249249..p-3 rounds up at the 24th bit).
   * fp32(1/6) = 0x1.555556p-3 (rounded up); k = fp32(448 * 0x1.555556p-3): the exact product is
   * 0x955555a * 2^-21, rounded up to 0x955556 * 2^-17 = 0x1.2aaaacp+6 = 74.66667.
   *   group 0, amax 6: sdb = 6 * 0x1.2aaaacp+6 = 0x3800004 * 2^-17 = 0x1.c00002p+8 = 448.00003 (exact);
   *     e4m3 RNE -> 448 (0x7E, neighbours 416 and saturation).  mult = 1 / fp32(448 * 0x1.24924ap-9):
   *     7 * 0x124924a = 0x8000006, so the product is 1 + 3*2^-26 -> 1.0; mult = 1.
   *     elements: 6 -> 6 (0x7); 2.5 -> tie 2|3 -> even 2 (0x4); -1.25 -> tie 1|1.5 -> -1 (0xA);
   *     0.3 -> 0.5 (0x1).  dequant of 6: 6 * 448 * 0x1.24924ap-9 = 6 * (1 + 3*2^-26) =
   *     0x1.8000012p+2 in double; as float 18*2^-26 = 0.5625 ulp(6) rounds up: 0x1.800002p+2.
   *   group 1, amax 3: sdb = 3 * 0x1.2aaaacp+6 = 224.00002 -> e4m3 224 (0x76); mult = 1 /
   *     fp32(0.5 * (1 + 3*2^-26)) = 1/0.5 = 2.  elements: 3 -> 6 (0x7); 1.1 -> 2.2 -> 2 (0x4);
   *     -0.7 -> -1.4 -> -1.5 (0xB), dequant -1.5 * 224 * S_dec.  dequant of 6 (code 7): 6 * 224 * S_dec = 3 * (1 + 3*2^-26) =
   *     0x1.8000012p+1, float 0x1.800002p+1.
   *   group 2, amax 1: sdb = 74.66667 -> e4m3 step 8 in [64,128): 72 (0x69); mult =
   *     1 / fp32(72 * 0x1.24924ap-9) = 1 / 0x1.492494p-3 = 0x1.8e38e2p+2 (6.2222).  elements:
   *     1 -> 6.22 -> 6 (0x7; 6.22 < 7, saturating anyway); 0.4 -> 2.4889 -> 2 (0x4);
   *     -0.2 -> -1.2444 -> -1 (0xA).  dequant of 2 (code 4): 144 * 0x1.24924ap-9 = 0x124924a * 9 *
   *     2^-25 = 0xa49249a * 2^-25 = 0x1.4924934p-2 exactly (double); as float the low bits 0x34
   *     of 0x1.4924934 round up (0x34 > 0x20, half of the last place 0x40): 0x1.492494p-2. */
  {
    float x[48];
    for (int i = 0; i < 48; i++) x[i] = 0.0f;
    x[0] = 6.0f; x[1] = 2.5f; x[2] = -1.25f; x[3] = 0.3f;
    x[16] = 3.0f; x[17] = 1.1f; x[18] = -0.7f;
    x[32] = 1.0f; x[33] = 0.4f; x[34] = -0.2f;
    const hgroup hg[3] = {{6.0f, 0x7E, 448.0f, 1.0f}, {3.0f, 0x76, 224.0f, 2.0f}, {1.0f, 0x69, 72.0f, 0x1.8e38e2p+2f}};
    const double S_dec = 0x1.24924ap-9;
    const helem he[] = {
        {0, 0x7, 0x1.8000012p+2, 0x1.800002p+2},
        {1, 0x4, 2 * 448 * S_dec, (float)(2 * 448 * S_dec)},
        {2, 0xA, -1 * 448 * S_dec, (float)(-448 * S_dec)},
        {3, 0x1, 0.5 * 448 * S_dec, (float)(0.5 * 448 * S_dec)},
        {16, 0x7, 0x1.8000012p+1, 0x1.800002p+1},
        {17, 0x4, 2 * 224 * S_dec, (float)(2 * 224 * S_dec)},
        {18, 0xB, -1.5 * 224 * S_dec, (float)(-1.5 * 224 * S_dec)},
        {32, 0x7, 6 * 72 * S_dec, (float)(6 * 72 * S_dec)},
        {33, 0x4, 0x1.4924934p-2, 0x1.492494p-2f},
        {34, 0xA, -1 * 72 * S_dec, (float)(-72 * S_dec)},
        {40, 0x0, 0.0, 0.0f},
    };
    hand_check("A (amax 6)", "nvfp4", x, 1, 48, 448.0f, 0x1.24924ap-9f, hg, 3, he, sizeof he / sizeof he[0]);
  }
  /* B. all zeros (2x20, groups 1x16: 2x2 groups; x[i] = -0 when i % 3 == 0): amax 0 -> S_enc = 1,
   * S_dec = 1; every sdb = 0 -> code 0x00, scale_inv 0, mult = fminf(1/0 = inf, FLT_MAX) = FLT_MAX;
   * +0 -> 0x0, -0 * FLT_MAX = -0 -> 0x8 (e2m1fn has -0); dequant +-0 * 0 * 1 = +-0. */
  {
    float x[40];
    for (int i = 0; i < 40; i++) x[i] = (i % 3) ? 0.0f : -0.0f;
    const hgroup hg[4] = {{0, 0, 0, FLT_MAX}, {0, 0, 0, FLT_MAX}, {0, 0, 0, FLT_MAX}, {0, 0, 0, FLT_MAX}};
    const helem he[] = {{1, 0x0, 0.0, 0.0f}, {3, 0x8, -0.0, -0.0f}, {38, 0x0, 0.0, 0.0f}, {39, 0x8, -0.0, -0.0f}};
    hand_check("B (all zeros)", "nvfp4", x, 2, 20, 1.0f, 1.0f, hg, 4, he, sizeof he / sizeof he[0]);
  }
  /* C. an inf: amax inf -> S_enc = fp32(2688/inf) = 0 -> 1; S_dec 1; k = fp32(1 * fp32(1/6)) =
   * 0x1.555556p-3.
   *   group 0 (inf at 3): sdb = fminf(inf, FLT_MAX) = FLT_MAX -> e4m3 saturates to 448 (0x7E);
   *     mult = fp32(1/448) = 0x1.24924ap-9; inf * mult = inf -> saturates to 6 (0x7); dequant
   *     6 * 448 * 1 = 2688.  The element 1 -> 1/448 -> 0.
   *   group 1 (amax 1000): sdb = fp32(1000 * 0x1.555556p-3) = 166.66667 -> e4m3 step 16 in
   *     [128,256): 160 (0x72); mult = fp32(1/160) = 0x1.99999ap-8; 1000 * mult = 6.25 -> 6 (0x7);
   *     dequant 960.
   *   group 2 (amax 1e6): sdb = 166666.67 -> e4m3 saturates to 448 (0x7E); mult 0x1.24924ap-9;
   *     -1e6 -> -2232 -> -6 (0xF); dequant -2688. */
  {
    float x[48];
    for (int i = 0; i < 48; i++) x[i] = 0.0f;
    x[3] = INFINITY; x[4] = 1.0f; x[20] = 1000.0f; x[40] = -1e6f;
    const hgroup hg[3] = {{INFINITY, 0x7E, 448.0f, 0x1.24924ap-9f}, {1000.0f, 0x72, 160.0f, 0x1.99999ap-8f},
                          {1e6f, 0x7E, 448.0f, 0x1.24924ap-9f}};
    const helem he[] = {{3, 0x7, 2688.0, 2688.0f}, {4, 0x0, 0.0, 0.0f}, {20, 0x7, 960.0, 960.0f},
                        {40, 0xF, -2688.0, -2688.0f}};
    hand_check("C (inf, saturating sdb)", "nvfp4", x, 1, 48, 1.0f, 1.0f, hg, 3, he, sizeof he / sizeof he[0]);
  }
  /* D. NaNs: group 0 all NaN, group 1 amax 2.  Global amax 2 (NaN ignored): S_enc = 1344, S_dec =
   * (float)(1/1344.0) = 0x1.861862p-11; k = fp32(1344 * 0x1.555556p-3) = 224 (exact product
   * 224 + 1344*2^-26*..., rounds to 224).
   *   group 0: amax 0 -> sdb 0 -> code 0, scale_inv 0, mult FLT_MAX; NaN elements -> e2m1fn has
   *     no NaN -> +0 (0x0); dequant 0.
   *   group 1: sdb = fp32(2 * 224) = 448 (0x7E); mult = 1 / fp32(448 * 0x1.861862p-11) =
   *     1 / 0x1.555556p-2 = 3; elements: 2 -> 6 (0x7), -1 -> -3 (0xD), 0.7 -> 2.1 -> 2 (0x4);
   *     dequant of 6: 6 * 448 * 0x1.861862p-11 = 0x1.0000005p+1, float 2. */
  {
    float x[32];
    for (int i = 0; i < 16; i++) x[i] = (i & 1) ? -NAN : NAN;
    for (int i = 16; i < 32; i++) x[i] = 0.0f;
    x[16] = 2.0f; x[17] = -1.0f; x[18] = 0.7f;
    const hgroup hg[2] = {{0.0f, 0x00, 0.0f, FLT_MAX}, {2.0f, 0x7E, 448.0f, 3.0f}};
    const double S_dec = 0x1.861862p-11;
    const helem he[] = {{0, 0x0, 0.0, 0.0f},
                        {5, 0x0, 0.0, 0.0f},
                        {16, 0x7, 0x1.0000005p+1, 2.0f},
                        {17, 0xD, -3 * 448 * S_dec, (float)(-3 * 448 * S_dec)},
                        {18, 0x4, 2 * 448 * S_dec, (float)(2 * 448 * S_dec)}};
    hand_check("D (NaN group)", "nvfp4", x, 1, 32, 1344.0f, 0x1.861862p-11f, hg, 2, he, sizeof he / sizeof he[0]);
  }
  /* E. amax 448: S_enc = 2688/448 = 6, S_dec = fp32(1/6) = 0x1.555556p-3; k = fp32(6 *
   * 0x1.555556p-3) = fp32(1 + 2^-25) = 1, so sdb = amax_b exactly.  e4m3fn subnormals are
   * j * 2^-9 (min normal 2^-6).
   *   group 0, amax 448: sdb 448 (0x7E); mult = 1 / fp32(448 * 0x1.555556p-3) = 1 / 0x1.2aaaacp+6 =
   *     0x1.b6db6cp-7; 448 * mult = 5.9999995 -> 6 (0x7); dequant 6 * 448 * 0x1.555556p-3 =
   *     0x1.c00000ep+8, float 448.
   *   group 1, amax 2^-8: sdb 2^-8 = 2 * 2^-9, subnormal code 0x02; mult = 1 / 0x1.555556p-11 =
   *     1536 (rounded); 2^-8 -> 6 (0x7); dequant 6 * 2^-8 * 0x1.555556p-3: 6 * 0x1555556 =
   *     0x8000004, i.e. 2^-8 * (1 + 2^-25) = 0x1.0000008p-8, float 2^-8.
   *   group 2, amax 3*2^-10 = 1.5 * 2^-9: tie between codes 1 and 2 -> even 0x02; mult 1536;
   *     3*2^-10 -> 4.5 -> tie 4|6 -> 4 (0x6).
   *   group 3, amax 2^-10 = 0.5 * 2^-9: tie between 0 and 2^-9 -> even 0x00; mult FLT_MAX;
   *     2^-10 * FLT_MAX -> saturates to 6 (0x7) but dequant 6 * 0 = 0.
   *   group 4, all zero: code 0, mult FLT_MAX.
   *   group 5, amax 0x1.000002p-10: just above the tie -> 0x01 (2^-9); mult = 1 / fp32(2^-9 *
   *     0x1.555556p-3) = 1 / 0x1.555556p-12 = 3072 (rounded); 0x1.000002p-10 * 3072 = 3.0000005
   *     -> 3 (0x5); dequant 3 * 2^-9 * 0x1.555556p-3 = 2^-10 * (1 + 2^-25) = 0x1.0000008p-10,
   *     float 2^-10. */
  {
    float x[96];
    for (int i = 0; i < 96; i++) x[i] = 0.0f;
    x[0] = 448.0f;
    x[16] = 0x1p-8f;
    x[32] = 0x3p-10f;
    x[48] = 0x1p-10f;
    x[80] = 0x1.000002p-10f;
    const float mz = FLT_MAX;
    const hgroup hg[6] = {{448.0f, 0x7E, 448.0f, 0x1.b6db6cp-7f}, {0x1p-8f, 0x02, 0x1p-8f, 1536.0f},
                          {0x3p-10f, 0x02, 0x1p-8f, 1536.0f},     {0x1p-10f, 0x00, 0.0f, mz},
                          {0.0f, 0x00, 0.0f, mz},                 {0x1.000002p-10f, 0x01, 0x1p-9f, 3072.0f}};
    const helem he[] = {{0, 0x7, 0x1.c00000ep+8, 448.0f},  {16, 0x7, 0x1.0000008p-8, 0x1p-8f},
                        {32, 0x6, 0x1.555556p-9, 0x1.555556p-9f}, /* 4 * 2^-8 * 0x1.555556p-3, exact */
                        {48, 0x7, 0.0, 0.0f},              {64, 0x0, 0.0, 0.0f},
                        {80, 0x5, 0x1.0000008p-10, 0x1p-10f}};
    hand_check("E (amax 448, e4m3 subnormal scales)", "nvfp4", x, 1, 96, 6.0f, 0x1.555556p-3f, hg, 6, he,
               sizeof he / sizeof he[0]);
  }
  /* G. the association order of S_dec_b (scaling-sources.md section 6 and "Differences found" 7:
   * version-dependent in TE).  Same tensor scale as A (amax 6, S_enc 448, k = 0x1.2aaaacp+6, which is
   * above 448/6).  exmy follows the newest core_nvfp4.cuh, fp32(amax_b * k); the transpose / tuned-1D
   * kernels and the PyTorch reference compute fp32(fp32(amax_b / 6) * S_enc), the non-transpose
   * kernel fp32(fp32(amax_b * fp32(1/6)) * S_enc).  These groups round differently in e4m3:
   *   group 1, amax 0.5625 = 0x1.2p-1: newest 0x1.2p-1 * 0x1.2aaaacp+6: 0x12 * 0x12aaaac = 0x15000018,
   *     29 bits; rounding to 24 drops 0x18 of 0x20 (above half, up): 0x1.500002p+5 = 42.000004, just
   *     above the e4m3 midpoint 42 of 40 | 44 -> 44 (0x63).  Both older orders give exactly 42
   *     (0.5625 / 6 = 0x1.8p-4 exact; 0.5625 * 0x1.555556p-3 = 0x1.8p-4 * (1 + 2^-25) rounds to
   *     0x1.8p-4; times 448 = 42) -> tie -> even 40 (0x62).
   *     mult = 1 / fp32(44 * 0x1.24924ap-9) = 1 / 0x1.924926p-4 = 0x1.45d174p+3 (10.18);
   *     0.5625 * mult = 5.73 -> 6 (0x7); dequant 6 * 44 * S_dec = 0x1.2db6dc5p-1, float 0x1.2db6dcp-1.
   *   group 2, amax 0x1.a92492p-2: newest and non-transpose give 0x1.f00002p+4, above the midpoint 31
   *     of 30 | 32 -> 32 (0x60); the transpose order gives 0x1.effffep+4 -> 30 (0x5F).
   *     mult = 1 / fp32(32 * 0x1.24924ap-9) = 1 / 0x1.24924ap-4 = 0x1.bffffep+3; x * mult = 5.81 ->
   *     6 (0x7); dequant 6 * 32 * S_dec = 0x1.b6db6fp-2, float 0x1.b6db7p-2. */
  {
    float x[48];
    for (int i = 0; i < 48; i++) x[i] = 0.0f;
    x[0] = 6.0f;
    x[16] = 0x1.2p-1f;
    x[32] = -0x1.a92492p-2f;
    const hgroup hg[3] = {{6.0f, 0x7E, 448.0f, 1.0f}, {0x1.2p-1f, 0x63, 44.0f, 0x1.45d174p+3f},
                          {0x1.a92492p-2f, 0x60, 32.0f, 0x1.bffffep+3f}};
    const helem he[] = {{16, 0x7, 0x1.2db6dc5p-1, 0x1.2db6dcp-1f}, {32, 0xF, -0x1.b6db6fp-2, -0x1.b6db7p-2f}};
    hand_check("G (S_dec_b association: newest core_nvfp4.cuh)", "nvfp4", x, 1, 48, 448.0f, 0x1.24924ap-9f, hg, 3,
               he, sizeof he / sizeof he[0]);
  }
  /* F. 16x16 tiles, 17x20 tensor: tile (0,0) all zero, tile (0,1) (cols 16..19) amax 6 at (3,17),
   * tile (1,0) (row 16) amax 3, tile (1,1) zero except 1 at (16,19).  Same S_enc 448 as A:
   * codes 0x00, 0x7E, 0x76, 0x69 and multipliers FLT_MAX, 1, 2, 0x1.8e38e2p+2. */
  {
    float x[17 * 20];
    for (int i = 0; i < 17 * 20; i++) x[i] = 0.0f;
    x[3 * 20 + 17] = -6.0f;
    x[5 * 20 + 16] = 2.5f;
    x[16 * 20 + 2] = 3.0f;
    x[16 * 20 + 19] = 1.0f;
    const hgroup hg[4] = {{0.0f, 0x00, 0.0f, FLT_MAX}, {6.0f, 0x7E, 448.0f, 1.0f}, {3.0f, 0x76, 224.0f, 2.0f},
                          {1.0f, 0x69, 72.0f, 0x1.8e38e2p+2f}};
    const double S_dec = 0x1.24924ap-9;
    const helem he[] = {{3 * 20 + 17, 0xF, -0x1.8000012p+2, -0x1.800002p+2f},
                        {5 * 20 + 16, 0x4, 2 * 448 * S_dec, (float)(2 * 448 * S_dec)},
                        {16 * 20 + 2, 0x7, 0x1.8000012p+1, 0x1.800002p+1f},
                        {16 * 20 + 19, 0x7, 6 * 72 * S_dec, (float)(6 * 72 * S_dec)},
                        {0, 0x0, 0.0, 0.0f}};
    hand_check("F (16x16 tiles)", "nvfp4:16x16", x, 17, 20, 448.0f, 0x1.24924ap-9f, hg, 4, he,
               sizeof he / sizeof he[0]);
  }
}

/* ---- test 4: thread determinism ---------------------------------------------- */

static void test_threads(uint64_t *st) {
  const size_t rows = 300, cols = 520;
  float *x = malloc(rows * cols * sizeof *x);
  exmy_format f = tu_format("e2m1fn");
  for (int kind = D_WIDE; kind <= D_TIES; kind++) {
    gen(st, kind, x, rows, cols);
    for (size_t ci = 0; ci < NRCASES; ci++)
      for (int mi = 0; mi < nmodes; mi++) {
        exmy_qtensor q[2];
        int ok[2];
        for (int th = 0; th < 2; th++) {
          omp_set_num_threads(th + 1);
          exmy_recipe rec;
          char err[EXMY_ERRLEN];
          ok[th] = 0;
          if (exmy_recipe_parse(rcases[ci].text, &rec, err, sizeof err)) continue;
          ok[th] = exmy_recipe_quantize(&rec, &f, &modes[mi].r, x, rows, cols, NULL, &q[th], NULL, err,
                                        sizeof err) == 0;
        }
        omp_set_num_threads(2);
        CHECK(ok[0] && ok[1], "threads '%s' %s: quantize failed", rcases[ci].text, modes[mi].name);
        if (!ok[0] || !ok[1]) {
          if (ok[0]) exmy_qtensor_free(&q[0]);
          if (ok[1]) exmy_qtensor_free(&q[1]);
          continue;
        }
        size_t ng = q[0].srows * q[0].scols;
        size_t n = rows * cols;
        int same = q[0].srows == q[1].srows && q[0].scols == q[1].scols &&
                   !memcmp(q[0].codes, q[1].codes, n * (size_t)exmy_code_bytes(&f)) &&
                   !memcmp(q[0].scale, q[1].scale, ng * 4) && !memcmp(q[0].scale_inv, q[1].scale_inv, ng * 4) &&
                   !memcmp(q[0].amax, q[1].amax, ng * 4) && q[0].scale_codes && q[1].scale_codes &&
                   !memcmp(q[0].scale_codes, q[1].scale_codes, ng) &&
                   tu_bits32(q[0].tensor_scale) == tu_bits32(q[1].tensor_scale) &&
                   tu_bits32(q[0].tensor_scale_inv) == tu_bits32(q[1].tensor_scale_inv);
        CHECK(same, "threads '%s' %s data %s: 1 thread and 2 threads differ", rcases[ci].text, modes[mi].name,
              dnames[kind]);
        /* and the dequants */
        if (same) {
          double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
          omp_set_num_threads(1);
          exmy_qtensor_to_f64(&q[0], a);
          omp_set_num_threads(2);
          exmy_qtensor_to_f64(&q[0], b);
          CHECK(!memcmp(a, b, n * sizeof *a), "threads '%s' %s: dequant_f64 differs with 1 and 2 threads",
                rcases[ci].text, modes[mi].name);
          float *af = (float *)a, *bf = (float *)b;
          omp_set_num_threads(1);
          exmy_qtensor_to_f32(&q[0], af);
          omp_set_num_threads(2);
          exmy_qtensor_to_f32(&q[0], bf);
          CHECK(!memcmp(af, bf, n * sizeof *af), "threads '%s' %s: dequant_f32 differs with 1 and 2 threads",
                rcases[ci].text, modes[mi].name);
          free(a);
          free(b);
        }
        /* 2-thread result against the reference, once per recipe */
        if (mi == 0 || mi == nmodes - 1) {
          nref e;
          nv_ref(&f, &modes[mi].r, rcases[ci].exact, rcases[ci].br, rcases[ci].bc, x, rows, cols, &e);
          char what[200];
          snprintf(what, sizeof what, "threads '%s' rnd %s data %s 300x520", rcases[ci].text, modes[mi].name,
                   dnames[kind]);
          compare(what, &e, &q[1], x, &f, &modes[mi].r, rcases[ci].exact);
          nref_free(&e);
        }
        exmy_qtensor_free(&q[0]);
        exmy_qtensor_free(&q[1]);
      }
  }
  free(x);
}

/* ---- test 5: recipe text ------------------------------------------------------ */

static void test_parse(void) {
  for (size_t ci = 0; ci < NRCASES; ci++) {
    exmy_recipe a, b;
    char err[EXMY_ERRLEN], n1[256], n2[256];
    if (exmy_recipe_parse(rcases[ci].text, &a, err, sizeof err)) {
      CHECK(0, "cannot parse '%s': %s", rcases[ci].text, err);
      continue;
    }
    CHECK(a.kind == EXMY_RECIPE_NVFP4, "'%s': kind %d, expected %d", rcases[ci].text, a.kind, EXMY_RECIPE_NVFP4);
    CHECK(a.block_rows == rcases[ci].br && a.block_cols == rcases[ci].bc, "'%s': block %zux%zu, expected %zux%zu",
          rcases[ci].text, a.block_rows, a.block_cols, rcases[ci].br, rcases[ci].bc);
    CHECK(!!a.exact_product == rcases[ci].exact, "'%s': exact_product %d, expected %d", rcases[ci].text,
          a.exact_product, rcases[ci].exact);
    exmy_recipe_to_string(&a, n1, sizeof n1);
    if (exmy_recipe_parse(n1, &b, err, sizeof err)) {
      CHECK(0, "'%s' names itself '%s', which does not parse: %s", rcases[ci].text, n1, err);
    } else {
      exmy_recipe_to_string(&b, n2, sizeof n2);
      CHECK(b.kind == a.kind && b.block_rows == a.block_rows && b.block_cols == a.block_cols &&
                b.exact_product == a.exact_product && !strcmp(n1, n2),
            "recipe '%s' -> name '%s' -> '%s' is not the same recipe", rcases[ci].text, n1, n2);
    }
  }
}

int main(void) {
  uint64_t st = tu_seed(20250612);
  E4M3 = tu_format("e4m3fn");
  nmodes = 0;
  modes[nmodes++] = make_mode("NULL(rne,satfinite)", 1, EXMY_RNE, EXMY_SAT_FINITE, 0, 0);
  modes[nmodes++] = make_mode("rtz,satfinite", 0, EXMY_RTZ, EXMY_SAT_FINITE, 0, 0);
  modes[nmodes++] = make_mode("sr(seed),satfinite", 0, EXMY_SR, EXMY_SAT_FINITE, tu_next(&st) | 1, 64);
  modes[nmodes++] = make_mode("rne,sat=none", 0, EXMY_RNE, EXMY_SAT_NONE, 0, 0);
  modes[nmodes++] = make_mode("sr(seed,8 bits),sat=propagate", 0, EXMY_SR, EXMY_SAT_PROPAGATE, tu_next(&st) | 1, 8);
  omp_set_num_threads(2);
  test_parse();
  test_hand();
  test_edges(&st);
  test_random(&st);
  test_threads(&st);
  printf("coverage: %ld groups; S_enc 1 from amax 0: %ld tensors, from amax inf: %ld; S_enc clamped to "
         "FLT_MAX: %ld; sdb e4m3 0 with amax > 0: %ld; e4m3 subnormal sdb: %ld; saturated sdb: %ld; "
         "inexact sdb: %ld; multiplier FLT_MAX with amax > 0: %ld; older TE association orders give "
         "another e4m3 code: %ld\n",
         cov.groups, cov.s_enc_one_zero, cov.s_enc_one_inf, cov.s_enc_clamped, cov.sdb_zero_nonzero_amax,
         cov.sdb_subnormal, cov.sdb_saturated, cov.sdb_inexact_tie_area, cov.mult_clamped_nonzero_amax,
         cov.other_order_differs);
  CHECK(cov.s_enc_one_zero && cov.s_enc_one_inf && cov.s_enc_clamped && cov.sdb_zero_nonzero_amax &&
            cov.sdb_subnormal && cov.sdb_saturated && cov.sdb_inexact_tie_area && cov.mult_clamped_nonzero_amax &&
            cov.other_order_differs,
        "the inputs missed a case (see the coverage line)");
  return tu_finish("test_nvfp4");
}
