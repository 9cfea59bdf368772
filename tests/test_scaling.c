/* test_scaling.c: the scaling recipes (current, delayed, block, mx, mx:ocp,
 * none) against an independent slow scalar reference written from the
 * semantics in exmy.h, shared/design/recipes.md and docs/scaling-sources.md.
 *
 * The reference computes every group's amax, scale, scale_inv and E8M0 code
 * with its own fp32 code; element casts go through exmy_from_f32 /
 * exmy_from_f64 (tested elsewhere against MPFR).  Everything is compared
 * bit for bit: codes, scale, scale_inv, scale_codes, amax, both dequants, the
 * delayed-scaling state (history, scale, scale_inv) after every operation.
 *
 * Assumptions of the reference that the spec leaves implicit (a failure in
 * one of these is reported with the word ASSUMPTION):
 *  - the stochastic-rounding counter of element (r, c) is its row-major index
 *    r * cols + c (seed and stream from rnd);
 *  - exmy_recipe_step uses the fmax of the element format of the last
 *    exmy_recipe_quantize call on that recipe;
 *  - exmy_qtensor.amax of an mx:ocp group is the NaN-propagating amax the OCP
 *    rule uses (NaN for a group holding a NaN); every other recipe stores the
 *    NaN-dropping TE amax;
 *  - exmy_recipe_calibrate stores the NaN-dropping amax (TE's torch-side
 *    calibrate() would propagate a NaN; the spec given to this test says
 *    amax(x), which is NaN-dropping everywhere but mx:ocp).
 *
 * Build (must be compiled with -ffp-contract=off so fp32(...) means one float
 * operation):
 *   gcc -std=gnu11 -O2 -fopenmp -ffp-contract=off -I. formats/[*].c emulate/[*].c \
 *       tests/test_scaling.c -lm
 * (brackets only to keep the glob out of this comment).  nvfp4 is not covered here. */
#include "testutil.h"
#include "emulate/recipe_traits.h"
#include <float.h>
#include <math.h>
#include <omp.h>

/* ---- small float helpers ------------------------------------------------ */

/* 2^k as a float, from its bits (k in -149..127). */
static float pow2f_bits(int k) {
  if (k >= -126) return tu_f32((uint32_t)(k + 127) << 23);
  return tu_f32(1u << (k + 149));
}

/* Same float: identical bits, or both NaN (NaN payloads are not specified). */
static int same_f(float a, float b) { return tu_bits32(a) == tu_bits32(b) || (isnan(a) && isnan(b)); }
static int same_d(double a, double b) { return tu_bits64(a) == tu_bits64(b) || (isnan(a) && isnan(b)); }

static double fmax_of(const exmy_format *f) {
  exmy_info in;
  exmy_format_info(f, &in);
  return in.max_finite;
}

/* fp32 product and quotient, forced through memory so that nothing is kept
 * in a wider register or contracted. */
static float mulf(float a, float b) {
  volatile float p = a * b;
  return p;
}
static float divf(float a, float b) {
  volatile float q = a / b;
  return q;
}

/* cuda_fp8.h's casts (what rnd = NULL meant before 1.0): rne, EXMY_SAT_FINITE. */
static exmy_rounding cuda_rnd(void) {
  exmy_rounding r = exmy_rounding_default();
  r.mode = EXMY_RNE;
  r.sat = EXMY_SAT_FINITE;
  return r;
}

/* ---- reference ---------------------------------------------------------- */

typedef struct rspec {
  exmy_recipe_kind kind;
  size_t br, bc; /* 0 = whole extent */
  float eps;
  int pow2, deepgemm;
  int L, most_recent, margin; /* delayed */
} rspec;

/* TE amax: max |x| ignoring NaN, starting from +0; inf propagates. */
static float ref_amax(const float *x, size_t cols, size_t r0, size_t nr, size_t c0, size_t nc, int *has_nan) {
  float m = 0.0f;
  int nan = 0;
  for (size_t r = r0; r < r0 + nr; r++)
    for (size_t c = c0; c < c0 + nc; c++) {
      float v = x[r * cols + c];
      if (isnan(v)) {
        nan = 1;
        continue;
      }
      float a = tu_f32(tu_bits32(v) & 0x7FFFFFFFu);
      if (a > m) m = a;
    }
  if (has_nan) *has_nan = nan;
  return m;
}

/* TE compute_scale_from_amax. */
static float ref_sfa(float amax, float fmax, int pow2, float eps, float vinf) {
  float a = amax < eps ? eps : amax;
  if (isinf(a) || a == 0.0f || isnan(a)) return 1.0f;
  float s = divf(fmax, a);
  if (isinf(s)) s = vinf;
  if (pow2) s = tu_f32(tu_bits32(s) & 0xFF800000u);
  return s;
}

/* TE float_to_e8m0 of v = fp32(amax * (float)(1/fmax)). */
static unsigned ref_mx_code(float amax, double fmax) {
  float rcp = (float)(1.0 / fmax);
  float v = mulf(amax, rcp);
  if (isnan(v)) return 0xFF;
  if (isinf(v)) return 0xFE;
  if (v == 0.0f) return 0x00;
  uint32_t b = tu_bits32(v);
  uint32_t e = b >> 23, m = b & 0x7FFFFFu;
  if (m > 0 && e != 0xFE && !(e == 0 && m <= 0x400000u)) e++;
  return e;
}
/* TE exp2f_rcp (bit-shift version). */
static float ref_mx_mult(unsigned code) {
  if (code == 0) return 1.0f;
  return tu_f32((uint32_t)(254 - (int)code) << 23);
}
/* E8M0 value 2^(code-127) as a float; NaN for 0xFF. */
static float ref_e8m0_value(unsigned code) {
  if (code == 0xFF) return NAN;
  if (code == 0) return tu_f32(0x00400000u); /* 2^-127 */
  return tu_f32((uint32_t)code << 23);
}

/* floor(log2(v)) exactly, v > 0 finite. */
static int ilog2d(double v) {
  int e;
  frexp(v, &e);
  return e - 1;
}

typedef struct rq {
  size_t rows, cols, br, bc, srows, scols;
  uint64_t *codes;
  float *scale, *scale_inv, *amax;
  int *scode;     /* E8M0 code per group, or NULL */
  int *group_nan; /* the group holds a NaN */
  unsigned flags; /* the elements' conversion flags, ORed */
} rq;

static void rq_free(rq *q) {
  free(q->codes);
  free(q->scale);
  free(q->scale_inv);
  free(q->amax);
  free(q->scode);
  free(q->group_nan);
  memset(q, 0, sizeof *q);
}

static uint64_t ref_cast(const exmy_format *f, const exmy_rounding *r, float x, float s, int exact, uint64_t idx,
                         unsigned *fl) {
  if (exact) return exmy_from_f64(f, r, (double)x * (double)s, idx, fl);
  return exmy_from_f32(f, r, mulf(x, s), idx, fl);
}

/* The reference quantizer.  dscale/dscale_inv: the delayed recipe's state. */
static void ref_quantize(const rspec *s, float dscale, float dscale_inv, const exmy_format *f, const exmy_rounding *r,
                         int exact, const float *x, size_t rows, size_t cols, rq *o) {
  memset(o, 0, sizeof *o);
  o->rows = rows;
  o->cols = cols;
  size_t br = rows, bc = cols;
  if (s->kind == EXMY_RECIPE_CURRENT || s->kind == EXMY_RECIPE_BLOCK || s->kind == EXMY_RECIPE_MX ||
      s->kind == EXMY_RECIPE_MX_OCP) {
    br = s->br ? s->br : rows;
    bc = s->bc ? s->bc : cols;
  }
  o->br = br;
  o->bc = bc;
  o->srows = br ? (rows + br - 1) / br : 0;
  o->scols = bc ? (cols + bc - 1) / bc : 0;
  size_t ng = o->srows * o->scols;
  o->codes = calloc(rows * cols + 1, sizeof *o->codes);
  o->scale = calloc(ng + 1, sizeof(float));
  o->scale_inv = calloc(ng + 1, sizeof(float));
  o->amax = calloc(ng + 1, sizeof(float));
  o->group_nan = calloc(ng + 1, sizeof(int));
  if (s->kind == EXMY_RECIPE_MX || s->kind == EXMY_RECIPE_MX_OCP) o->scode = calloc(ng + 1, sizeof(int));
  float fmax = (float)fmax_of(f);
  for (size_t gr = 0; gr < o->srows; gr++)
    for (size_t gc = 0; gc < o->scols; gc++) {
      size_t g = gr * o->scols + gc;
      size_t r0 = gr * br, c0 = gc * bc;
      size_t nr = rows - r0 < br ? rows - r0 : br, nc = cols - c0 < bc ? cols - c0 : bc;
      int has_nan;
      float amax = ref_amax(x, cols, r0, nr, c0, nc, &has_nan);
      o->amax[g] = (s->kind == EXMY_RECIPE_MX_OCP && has_nan) ? NAN : amax;
      o->group_nan[g] = has_nan;
      float sc = 1.0f, si = 1.0f;
      int ocp_e = 0, ocp_nan = 0;
      switch (s->kind) {
      case EXMY_RECIPE_NONE:
      default:
        break;
      case EXMY_RECIPE_CURRENT:
        sc = ref_sfa(amax, fmax, s->pow2, s->eps, FLT_MAX);
        si = divf(1.0f, sc);
        break;
      case EXMY_RECIPE_DELAYED:
        sc = dscale;
        si = dscale_inv;
        break;
      case EXMY_RECIPE_BLOCK:
        if (s->deepgemm) {
          float a = amax > 1e-4f ? amax : 1e-4f;
          float sf = divf(a, fmax);
          sc = divf(1.0f, sf);
          si = sf;
        } else {
          sc = ref_sfa(amax, fmax, s->pow2, s->eps, FLT_MAX);
          si = divf(1.0f, sc);
        }
        break;
      case EXMY_RECIPE_MX: {
        unsigned code = ref_mx_code(amax, fmax);
        o->scode[g] = (int)code;
        sc = ref_mx_mult(code);
        si = ref_e8m0_value(code);
        break;
      }
      case EXMY_RECIPE_MX_OCP: {
        float pa = has_nan ? NAN : amax; /* NaN-propagating amax */
        if (isnan(pa) || isinf(pa)) {
          ocp_nan = 1;
        } else {
          int e = (pa == 0.0f ? -126 : ilog2d((double)pa)) - ilog2d(fmax);
          if (e > 127) ocp_nan = 1;
          else {
            if (e < -127) e = -127;
            ocp_e = e;
          }
        }
        if (ocp_nan) {
          o->scode[g] = 0xFF;
          sc = si = NAN;
        } else {
          o->scode[g] = ocp_e + 127;
          sc = pow2f_bits(-ocp_e);
          si = pow2f_bits(ocp_e);
        }
        break;
      }
      }
      o->scale[g] = sc;
      o->scale_inv[g] = si;
      for (size_t rr = r0; rr < r0 + nr; rr++)
        for (size_t cc = c0; cc < c0 + nc; cc++) {
          size_t i = rr * cols + cc;
          uint64_t q;
          if (s->kind == EXMY_RECIPE_MX_OCP)
            q = ocp_nan ? exmy_from_f64(f, r, NAN, i, &o->flags)
                        : exmy_from_f64(f, r, ldexp((double)x[i], -ocp_e), i, &o->flags);
          else
            q = ref_cast(f, r, x[i], sc, exact, i, &o->flags);
          o->codes[i] = q;
        }
    }
}

/* ---- comparison --------------------------------------------------------- */

static void compare(const char *what, const rspec *s, const rq *e, const exmy_qtensor *g, const float *x,
                    const exmy_format *f) {
  CHECK(g->rows == e->rows && g->cols == e->cols, "%s: qtensor shape %zux%zu, expected %zux%zu", what, g->rows,
        g->cols, e->rows, e->cols);
  CHECK(g->srows == e->srows && g->scols == e->scols, "%s: groups %zux%zu, expected %zux%zu", what, g->srows, g->scols,
        e->srows, e->scols);
  if (g->srows != e->srows || g->scols != e->scols || g->rows != e->rows || g->cols != e->cols) return;
  size_t brmin = e->br < e->rows ? e->br : e->rows, bcmin = e->bc < e->cols ? e->bc : e->cols;
  if (e->rows && e->cols)
    CHECK((g->block_rows == e->br || g->block_rows == brmin) && (g->block_cols == e->bc || g->block_cols == bcmin),
          "%s: block %zux%zu, expected %zux%zu", what, g->block_rows, g->block_cols, e->br, e->bc);
  CHECK(g->fmt.bits == f->bits && g->fmt.ebits == f->ebits && g->fmt.mbits == f->mbits,
        "%s: qtensor format %s, expected %s", what, g->fmt.name, f->name);
  CHECK(g->recipe == s->kind, "%s: qtensor recipe %d, expected %d", what, g->recipe, s->kind);
  CHECK(g->tensor_scale == 1.0f && g->tensor_scale_inv == 1.0f, "%s: tensor_scale %a tensor_scale_inv %a, expected 1 1",
        what, g->tensor_scale, g->tensor_scale_inv);
  CHECK((g->scale_codes != NULL) == (e->scode != NULL), "%s: scale_codes %s, expected %s", what,
        g->scale_codes ? "present" : "NULL", e->scode ? "present" : "NULL");
  size_t ng = e->srows * e->scols;
  for (size_t k = 0; k < ng; k++) {
    CHECK(same_f(g->scale[k], e->scale[k]), "%s group %zu (amax 0x%08x %a): scale 0x%08x (%a), expected 0x%08x (%a)",
          what, k, tu_bits32(e->amax[k]), e->amax[k], tu_bits32(g->scale[k]), g->scale[k], tu_bits32(e->scale[k]),
          e->scale[k]);
    CHECK(same_f(g->scale_inv[k], e->scale_inv[k]),
          "%s group %zu (amax 0x%08x %a): scale_inv 0x%08x (%a), expected 0x%08x (%a)", what, k, tu_bits32(e->amax[k]),
          e->amax[k], tu_bits32(g->scale_inv[k]), g->scale_inv[k], tu_bits32(e->scale_inv[k]), e->scale_inv[k]);
    CHECK(same_f(g->amax[k], e->amax[k]), "%s group %zu%s: amax 0x%08x (%a), expected 0x%08x (%a)", what, k,
          e->group_nan[k] ? " (holds a NaN)" : "", tu_bits32(g->amax[k]), g->amax[k], tu_bits32(e->amax[k]), e->amax[k]);
    if (e->scode && g->scale_codes)
      CHECK(g->scale_codes[k] == (unsigned)e->scode[k], "%s group %zu (amax 0x%08x %a): E8M0 code 0x%02x, expected 0x%02x",
            what, k, tu_bits32(e->amax[k]), e->amax[k], g->scale_codes[k], e->scode[k]);
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
    CHECK(got == e->codes[i], "%s group %zu elem %zu (%zu,%zu) x=0x%08x (%a) scale 0x%08x: code 0x%" PRIx64
          ", expected 0x%" PRIx64, what, k, i, r, c, tu_bits32(x[i]), x[i], tu_bits32(e->scale[k]), got, e->codes[i]);
    double want = exmy_code_to_f64(f, e->codes[i]) * (double)e->scale_inv[k];
    CHECK(same_d(d64[i], want), "%s group %zu elem %zu x=0x%08x: dequant_f64 %a, expected %a", what, k, i,
          tu_bits32(x[i]), d64[i], want);
    CHECK(same_f(d32[i], (float)want), "%s group %zu elem %zu x=0x%08x: dequant_f32 %a, expected %a", what, k, i,
          tu_bits32(x[i]), d32[i], (float)want);
  }
  free(d64);
  free(d32);
}

/* ---- the recipes under test --------------------------------------------- */

typedef struct rcase {
  const char *text;
  rspec s;
  size_t set_br, set_bc; /* nonzero: override the parsed group shape through the struct */
} rcase;

#define SP(k, br, bc, eps, p2, dg) {k, br, bc, eps, p2, dg, 1024, 0, 0}
static const rcase cases[] = {
    {"none", SP(EXMY_RECIPE_NONE, 0, 0, 0.0f, 0, 0), 0, 0},
    {"current", SP(EXMY_RECIPE_CURRENT, 0, 0, 0.0f, 0, 0), 0, 0},
    {"current:pow2", SP(EXMY_RECIPE_CURRENT, 0, 0, 0.0f, 1, 0), 0, 0},
    {"current:eps=0.5", SP(EXMY_RECIPE_CURRENT, 0, 0, 0.5f, 0, 0), 0, 0},
    {"current:row", SP(EXMY_RECIPE_CURRENT, 1, 0, 0.0f, 0, 0), 0, 0},
    {"current:col", SP(EXMY_RECIPE_CURRENT, 0, 1, 0.0f, 0, 0), 0, 0},
    {"current:row,pow2", SP(EXMY_RECIPE_CURRENT, 1, 0, 0.0f, 1, 0), 0, 0},
    {"delayed", SP(EXMY_RECIPE_DELAYED, 0, 0, 0.0f, 0, 0), 0, 0},
    {"block:1x128", SP(EXMY_RECIPE_BLOCK, 1, 128, 0.0f, 1, 0), 0, 0},
    {"block:128x128", SP(EXMY_RECIPE_BLOCK, 128, 128, 0.0f, 1, 0), 0, 0},
    {"block:1x128,fp32", SP(EXMY_RECIPE_BLOCK, 1, 128, 0.0f, 0, 0), 0, 0},
    {"block:128x128,fp32", SP(EXMY_RECIPE_BLOCK, 128, 128, 0.0f, 0, 0), 0, 0},
    {"block:1x128,eps=0.5", SP(EXMY_RECIPE_BLOCK, 1, 128, 0.5f, 1, 0), 0, 0},
    {"block:1x128,deepgemm", SP(EXMY_RECIPE_BLOCK, 1, 128, 0.0f, 0, 1), 0, 0},
    {"block:128x128,deepgemm", SP(EXMY_RECIPE_BLOCK, 128, 128, 0.0f, 0, 1), 0, 0},
    {"block:1x128", SP(EXMY_RECIPE_BLOCK, 3, 5, 0.0f, 1, 0), 3, 5},
    {"block:1x128,fp32", SP(EXMY_RECIPE_BLOCK, 4, 1, 0.0f, 0, 0), 4, 1},
    {"mx", SP(EXMY_RECIPE_MX, 1, 32, 0.0f, 0, 0), 0, 0},
    {"mx:ocp", SP(EXMY_RECIPE_MX_OCP, 1, 32, 0.0f, 0, 0), 0, 0},
    {"mx:col", SP(EXMY_RECIPE_MX, 32, 1, 0.0f, 0, 0), 0, 0},
    {"mx:ocp,col", SP(EXMY_RECIPE_MX_OCP, 32, 1, 0.0f, 0, 0), 0, 0},
};
#define NCASES (sizeof cases / sizeof cases[0])

static int parse_case(const rcase *rc, exmy_recipe *rec) {
  char err[EXMY_ERRLEN];
  memset(rec, 0, sizeof *rec);
  if (exmy_recipe_parse(rc->text, rec, err, sizeof err)) {
    CHECK(0, "cannot parse recipe '%s': %s", rc->text, err);
    return -1;
  }
  if (rc->set_br) {
    rec->block_rows = rc->set_br;
    rec->block_cols = rc->set_bc;
  }
  return 0;
}

/* The parsed fields are what the reference assumes; st is a fresh
 * exmy_recipe_state_new state of rec (a delayed recipe's state starts with
 * an empty history of history_len entries and scale 1). */
static void check_fields(const char *text, const exmy_recipe *rec, const exmy_recipe_state *st, const rspec *s) {
  CHECK(rec->kind == s->kind, "'%s': kind %d, expected %d", text, rec->kind, s->kind);
  CHECK(rec->exact_product == 0, "'%s': exact_product %d by default", text, rec->exact_product);
  if (s->kind == EXMY_RECIPE_DELAYED) {
    CHECK(rec->history_len == s->L && rec->most_recent == s->most_recent && rec->margin == s->margin,
          "'%s': len %d algo %d margin %d, expected %d %d %d", text, rec->history_len, rec->most_recent, rec->margin,
          s->L, s->most_recent, s->margin);
    CHECK(st->history != NULL && st->history_len == rec->history_len, "'%s': no history (state len %d)", text,
          st->history_len);
    CHECK(st->scale == 1.0f && st->scale_inv == 1.0f, "'%s': initial scale %a scale_inv %a, expected 1 1", text,
          st->scale, st->scale_inv);
    int nz = 0;
    for (int j = 0; st->history && j < st->history_len; j++) nz += st->history[j] != 0.0f;
    CHECK(nz == 0, "'%s': %d nonzero history entries after parse", text, nz);
    return;
  }
  if (s->kind == EXMY_RECIPE_NONE) return;
  CHECK(rec->block_rows == s->br && rec->block_cols == s->bc, "'%s': block %zux%zu, expected %zux%zu", text,
        rec->block_rows, rec->block_cols, s->br, s->bc);
  if (s->kind == EXMY_RECIPE_CURRENT || s->kind == EXMY_RECIPE_BLOCK) {
    CHECK(same_f(rec->epsilon, s->eps), "'%s': epsilon %a, expected %a", text, rec->epsilon, s->eps);
    CHECK(rec->deepgemm == s->deepgemm, "'%s': deepgemm %d, expected %d", text, rec->deepgemm, s->deepgemm);
    if (!s->deepgemm) CHECK(!!rec->pow2 == s->pow2, "'%s': pow2 %d, expected %d", text, rec->pow2, s->pow2);
  }
}

/* ---- inputs -------------------------------------------------------------- */

static float rand_unit(uint64_t *st) { /* uniform in [0, 1) with 24 bits */
  return (float)(tu_next(st) >> 40) * 0x1p-24f;
}

/* Random tensor: per-row/per-32-column magnitude levels, values spread over
 * 2^-14..2^2 around the level, zeros, signed zeros, float subnormals, exact
 * powers of two. */
static void rand_tensor(uint64_t *st, float *x, size_t rows, size_t cols) {
  int base = (int)(tu_next(st) % 40) - 20;
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) {
      int lvl = base + (int)((r * 7 + (c / 32) * 3) % 13) - 6;
      uint64_t k = tu_next(st) % 100;
      float v;
      if (k < 4) v = 0.0f;
      else if (k < 6) v = -0.0f;
      else if (k < 8) v = tu_f32((uint32_t)(tu_next(st) & 0x7FFFFF) | 1u); /* float subnormal */
      else if (k < 12) v = ldexpf(1.0f, lvl + (int)(tu_next(st) % 6) - 3);
      else v = ldexpf(1.0f + rand_unit(st), lvl - (int)(tu_next(st) % 15) + 2);
      if (tu_next(st) & 1) v = -v;
      x[r * cols + c] = v;
    }
}

/* ---- test 1: random tensors, every recipe ---------------------------------- */

typedef struct rmode {
  const char *name;
  int null_rnd;
  exmy_rounding r;
} rmode;

static rmode make_mode(const char *name, int null_rnd, exmy_round_mode m, exmy_saturation sat, uint64_t seed) {
  rmode md;
  md.name = name;
  md.null_rnd = null_rnd;
  md.r = exmy_rounding_default();
  md.r.mode = m;
  md.r.sat = sat;
  md.r.seed = seed;
  md.r.stream = seed ? 3 : 0;
  /* null_rnd: the mode that used to pass rnd = NULL (cuda_fp8.h's default,
   * rne with EXMY_SAT_FINITE); md.r is that rounding, passed explicitly, and
   * run_one checks that NULL itself is now rejected. */
  return md;
}

static int nmodes;
static rmode modes[8];

/* Run one recipe on one tensor with the library and the reference and
 * compare.  For delayed, the recipe's state scale is dscale. */
/* exmy_recipe_quantize_into on one tensor kept across all calls (other
 * shapes, formats and recipes before it: both the reuse and the
 * reallocation path), its old contents poisoned first: the result must be
 * the reference's too. */
static exmy_qtensor into_q;
static size_t into_reused, into_calls;

static void into_check(const char *what, const exmy_recipe *rec, const exmy_format *f, const exmy_rounding *r,
                       const float *x, size_t rows, size_t cols, exmy_recipe_state *rst, const rspec *s,
                       const rq *e) {
  if (into_q.codes) { /* poison what a reuse would keep */
    size_t ng = into_q.srows * into_q.scols;
    memset(into_q.codes, 0xa5, into_q.rows * into_q.cols * (size_t)exmy_code_bytes(&into_q.fmt));
    memset(into_q.scale, 0xff, ng * sizeof(float));
    memset(into_q.scale_inv, 0xff, ng * sizeof(float));
    memset(into_q.amax, 0xff, ng * sizeof(float));
    if (into_q.scale_codes) memset(into_q.scale_codes, 0x5a, ng);
  }
  const void *before = into_q.codes;
  char err[EXMY_ERRLEN], w[300];
  snprintf(w, sizeof w, "%s (quantize_into)", what);
  int rc = exmy_recipe_quantize_into(rec, f, r, x, rows, cols, rst, &into_q, NULL, err, sizeof err);
  CHECK(rc == 0, "%s: failed: %s", w, err);
  if (rc) return;
  into_calls++;
  into_reused += before && into_q.codes == before;
  compare(w, s, e, &into_q, x, f);
}

static void run_one(const rcase *rc, const exmy_format *f, const rmode *md, int exact, const float *x, size_t rows,
                    size_t cols, float dscale) {
  exmy_recipe rec;
  exmy_recipe_state rst;
  char err[EXMY_ERRLEN];
  if (parse_case(rc, &rec)) return;
  rec.exact_product = exact;
  if (exmy_recipe_state_new(&rec, &rst, err, sizeof err)) {
    CHECK(0, "recipe '%s': state init failed: %s", rc->text, err);
    return;
  }
  float dsi = divf(1.0f, dscale);
  if (rc->s.kind == EXMY_RECIPE_DELAYED) {
    rst.scale = dscale;
    rst.scale_inv = dsi;
  }
  char what[256];
  snprintf(what, sizeof what, "recipe '%s'%s%s fmt %s rnd %s shape %zux%zu", rc->text,
           rc->set_br ? " (group shape set)" : "", exact ? " exact_product" : "", f->name, md->name, rows, cols);
  if (rc->set_br) {
    size_t l = strlen(what);
    snprintf(what + l, sizeof what - l, " block %zux%zu", rc->set_br, rc->set_bc);
  }
  exmy_qtensor q;
  memset(&q, 0, sizeof q);
  if (md->null_rnd) {
    /* rnd NULL used to mean cuda_fp8.h's rne,satfinite; now it is an error.  The
     * mode passes that rounding explicitly (md->r) below. */
    err[0] = 0;
    int rn = exmy_recipe_quantize(&rec, f, NULL, x, rows, cols, &rst, &q, NULL, err, sizeof err);
    CHECK(rn == -1 && err[0], "%s: NULL rnd not rejected (rc %d, err '%s')", what, rn, err);
    if (rn == 0) exmy_qtensor_free(&q);
  }
  unsigned qfl = 0;
  int rcode = exmy_recipe_quantize(&rec, f, &md->r, x, rows, cols, &rst, &q, &qfl, err, sizeof err);
  CHECK(rcode == 0, "%s: quantize failed: %s", what, err);
  if (rcode == 0) {
    exmy_rounding rr = md->r;
    if (md->null_rnd) {
      rr = exmy_rounding_default();
      rr.sat = EXMY_SAT_FINITE;
    }
    rq e;
    ref_quantize(&rc->s, dscale, dsi, f, &rr, exact, x, rows, cols, &e);
    compare(what, &rc->s, &e, &q, x, f);
    CHECK(qfl == e.flags, "%s: flags %u, expected %u (the elements' conversion flags)", what, qfl, e.flags);
    into_check(what, &rec, f, &md->r, x, rows, cols, &rst, &rc->s, &e);
    if (rc->s.kind == EXMY_RECIPE_DELAYED) {
      CHECK(rst.history && same_f(rst.history[0], e.amax[0]), "%s: history[0] %a after quantize, expected %a", what,
            rst.history ? rst.history[0] : NAN, e.amax[0]);
      CHECK(same_f(rst.scale, dscale), "%s: quantize changed the delayed scale", what);
    }
    rq_free(&e);
    exmy_qtensor_free(&q);
  }
  exmy_recipe_state_free(&rst);
}

static void test_random(uint64_t *st) {
  static const size_t shapes[][2] = {{1, 1},  {1, 37},  {37, 1},  {1, 32},   {3, 70},  {5, 129},
                                     {4, 64}, {2, 300}, {130, 3}, {129, 257}, {7, 96}, {1, 1000},
                                     {3, 256}, {40, 0}, {0, 40},  /* 256: whole 1x128 runs; empty: no group */
                                     {2, 4160}};                  /* rows over two 2048-element kernel blocks */
  /* e8m3 and bf16: 16-bit codes with binary32's emin, the cut kernels */
  const char *fmts[] = {"e4m3fn", "e5m2", "e2m1fn", "e8m3", "bf16"};
  const int nfmt = (int)(sizeof fmts / sizeof fmts[0]);
  size_t nsh = sizeof shapes / sizeof shapes[0];
  for (size_t si = 0; si < nsh; si++) {
    size_t rows = shapes[si][0], cols = shapes[si][1];
    float *x = malloc(rows * cols * sizeof *x);
    rand_tensor(st, x, rows, cols);
    float amax = ref_amax(x, cols, 0, rows, 0, cols, NULL);
    for (int fi = 0; fi < nfmt; fi++) {
      exmy_format f = tu_format(fmts[fi]);
      float fmax = (float)fmax_of(&f);
      for (size_t ci = 0; ci < NCASES; ci++) {
        /* the big shape only for a subset of combinations, to keep the runtime down */
        for (int mi = 0; mi < nmodes; mi++)
          for (int exact = 0; exact < 2; exact++) {
            if (rows * cols > 10000 && (mi % 2 != exact)) continue;
            /* delayed: an arbitrary state scale, near fmax/amax */
            float ds = amax > 0 ? divf(fmax, amax) : 1.0f;
            if (!(ds < FLT_MAX)) ds = 1.0f;
            ds = mulf(ds, 0.75f + 0.5f * rand_unit(st));
            run_one(&cases[ci], &f, &modes[mi], exact, x, rows, cols, ds);
          }
      }
    }
    free(x);
  }
}

/* ---- test 2: edge cases ---------------------------------------------------- */

#define PL 32
static int make_pattern(int p, uint64_t *st, float *v) {
  for (int i = 0; i < PL; i++) v[i] = (rand_unit(st) * 2 - 1) * 3.0f; /* |v| < 3 */
  int j = (int)(tu_next(st) % PL);
  switch (p) {
  case 0: for (int i = 0; i < PL; i++) v[i] = 0.0f; break;
  case 1: for (int i = 0; i < PL; i++) v[i] = (i & 1) ? -0.0f : 0.0f; break;
  case 2: v[j] = INFINITY; break;
  case 3: v[j] = -INFINITY; break;
  case 4: v[j] = NAN; break;
  case 5: for (int i = 0; i < PL; i++) v[i] = (i & 1) ? -NAN : NAN; break;
  case 6: v[j] = NAN; v[(j + 5) % PL] = -INFINITY; break;
  case 7: for (int i = 0; i < PL; i++) v[i] = tu_f32((uint32_t)(tu_next(st) & 0x807FFFFFu)); break; /* float subnormals */
  case 8: for (int i = 0; i < PL; i++) v[i] = 0.0f; v[j] = tu_f32(1); break; /* min subnormal only */
  case 9: v[j] = -32.0f; break;                                             /* amax exact 2^5 */
  case 10: for (int i = 0; i < PL; i++) v[i] = ldexpf(v[i], -130); v[j] = FLT_MIN; break;
  case 11: v[j] = 448.0f; break;
  case 12: v[j] = -449.0f; break;
  case 13: v[j] = FLT_MAX; v[(j + 1) % PL] = -1e30f; break;
  case 14: v[j] = 0x1.fffffep+7f; break;
  case 15: for (int i = 0; i < PL; i++) v[i] = ldexpf(v[i], -128); break; /* ~1e-38, some subnormal */
  case 16: /* amax 1, the rest land in the element format's subnormal range after scaling */
    for (int i = 0; i < PL; i++) v[i] = ldexpf(v[i], -10 - (int)(tu_next(st) % 8));
    v[j] = 1.0f;
    break;
  case 17: for (int i = 0; i < PL; i++) v[i] *= 1e30f; break;
  case 18: for (int i = 0; i < PL; i++) v[i] = (i & 1) ? -FLT_MAX : FLT_MAX; break;
  case 19: for (int i = 0; i < PL; i++) v[i] *= 3e-6f; break;          /* amax < 1e-4 (deepgemm clamp) */
  case 20: for (int i = 0; i < PL; i++) v[i] *= 1e-4f / 3; v[j] = 1e-4f; break;
  case 21: for (int i = 0; i < PL; i++) v[i] = -fabsf(v[i]); break;
  case 22: for (int i = 0; i < PL; i++) v[i] = ldexpf(v[i], -148); break; /* tiny: fmax/amax overflows */
  case 23: for (int i = 0; i < PL; i++) v[i] *= 0.25f; v[j] = 0x1p-2f; break; /* amax < eps = 0.5 */
  case 24: v[j] = 0x1.000002p+0f; break;
  case 25: for (int i = 0; i < PL; i++) v[i] = ldexpf(v[i], -118); v[j] = 0x1p-118f; break; /* mx subnormal v */
  case 26: for (int i = 0; i < PL; i++) v[i] = ldexpf(v[i], -119); v[j] = 0x1p-117f; break;
  case 27: v[j] = 6.0f; v[(j + 1) % PL] = -7.0f; break;
  default: return 0;
  }
  return 1;
}

static void test_edges(uint64_t *st) {
  float pat[64][PL];
  int np = 0;
  while (np < 64 && make_pattern(np, st, pat[np])) np++;
  const char *fmts[] = {"e4m3fn", "e5m2", "e2m1fn"};
  /* A: one pattern per row, repeated 4 times across 128 columns (the
   * repetitions scaled by 1, 1, 2^-3, 1 so mx groups differ) */
  size_t rows = (size_t)np, cols = 128;
  float *x = malloc(rows * cols * sizeof *x);
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) x[r * cols + c] = (c / 32 == 2) ? pat[r][c % 32] * 0.125f : pat[r][c % 32];
  for (int fi = 0; fi < 3; fi++) {
    exmy_format f = tu_format(fmts[fi]);
    for (size_t ci = 0; ci < NCASES; ci++)
      for (int mi = 0; mi < nmodes; mi++)
        for (int exact = 0; exact < 2; exact++) {
          const rcase *rc = &cases[ci];
          run_one(rc, &f, &modes[mi], exact, x, rows, cols, 3.0f);
          /* a power-of-two delayed scale > 1: fp32(x * s) overflows where x * s is finite (FLT_MAX rows) */
          run_one(rc, &f, &modes[mi], exact, x, rows, cols, 0x1p+4f);
          /* every pattern row as its own tensor (1 x 128 and 128 x 1) */
          for (size_t r = 0; r < rows; r++) {
            run_one(rc, &f, &modes[mi], exact, x + r * cols, 1, cols, 0x1.8p+5f);
            if (mi == 0) run_one(rc, &f, &modes[mi], exact, x + r * cols, cols, 1, 0x1p-3f);
          }
        }
  }
  free(x);

  /* B: every run's largest magnitude at its last element (runs of 32 and
   * 128 must be read to their end); one run ends in NaN, one in -inf */
  {
    size_t br = 4, bcn = 256;
    float *y = malloc(br * bcn * sizeof *y);
    rand_tensor(st, y, br, bcn);
    for (size_t r = 0; r < br; r++)
      for (size_t c = 31; c < bcn; c += 32) y[r * bcn + c] = ((c / 32) % 2 ? -1.0f : 1.0f) * (float)(1000 + 37 * r + c);
    y[1 * bcn + 63] = NAN;
    y[2 * bcn + 127] = -INFINITY;
    exmy_format f = tu_format("e4m3fn");
    for (size_t ci = 0; ci < NCASES; ci++)
      for (int mi = 0; mi < nmodes; mi += 2) {
        run_one(&cases[ci], &f, &modes[mi], 0, y, br, bcn, 0.25f);
        run_one(&cases[ci], &f, &modes[mi], 0, y, 1, bcn, 0.25f); /* the finite first row alone */
      }
    free(y);
  }

  /* exmy_scale_from_amax directly */
  struct {
    float amax, fmax;
    int pow2;
    float eps, vinf, want;
  } sv[] = {
      {0.0f, 448, 0, 0, FLT_MAX, 1.0f},
      {INFINITY, 448, 0, 0, FLT_MAX, 1.0f},
      {NAN, 448, 1, 0, FLT_MAX, 1.0f},
      {448.0f, 448, 0, 0, FLT_MAX, 1.0f},
      {3.0f, 448, 0, 0, FLT_MAX, 0x1.2aaaaap+7f},   /* 448/3 = 149.333.. RNE */
      {3.0f, 448, 1, 0, FLT_MAX, 128.0f},           /* pow2 rounds down */
      {tu_f32(1), 448, 0, 0, FLT_MAX, FLT_MAX},     /* 448/2^-149 overflows */
      {tu_f32(1), 448, 1, 0, FLT_MAX, 0x1p127f},    /* FLT_MAX then mask */
      {tu_f32(1), 448, 0, 0, 65504.0f, 65504.0f},   /* value_for_inf */
      {tu_f32(1), 448, 1, 0, 65504.0f, 32768.0f},
      {0.001f, 448, 0, 0.5f, FLT_MAX, 896.0f},      /* eps > amax */
      {0.0f, 448, 0, 0.5f, FLT_MAX, 896.0f},        /* amax 0 but eps > 0: fmax/eps */
      {1.0f, 448, 0, 0.5f, FLT_MAX, 448.0f},
      {0x1p-10f, 57344, 1, 0, FLT_MAX, 0x1p25f},    /* 57344 * 2^10 = 1.75 * 2^25 -> 2^25 */
      {0x1p-10f, 57344, 0, 0, FLT_MAX, 0x1.cp25f},
      {6.0f, 6, 0, 0, FLT_MAX, 1.0f},
      {0x1p-127f, 448, 0, 0, FLT_MAX, FLT_MAX}, /* 448 * 2^127 overflows */
  };
  for (size_t i = 0; i < sizeof sv / sizeof sv[0]; i++) {
    float got = exmy_scale_from_amax(sv[i].amax, sv[i].fmax, sv[i].pow2, sv[i].eps, sv[i].vinf);
    float ref = ref_sfa(sv[i].amax, sv[i].fmax, sv[i].pow2, sv[i].eps, sv[i].vinf);
    CHECK(same_f(ref, sv[i].want), "reference scale_from_amax(%a, %g, pow2 %d, eps %a): %a, hand value %a", sv[i].amax,
          sv[i].fmax, sv[i].pow2, sv[i].eps, ref, sv[i].want);
    CHECK(same_f(got, sv[i].want), "exmy_scale_from_amax(amax 0x%08x %a, fmax %g, pow2 %d, eps %a, vinf %a) = %a, expected %a",
          tu_bits32(sv[i].amax), sv[i].amax, sv[i].fmax, sv[i].pow2, sv[i].eps, sv[i].vinf, got, sv[i].want);
  }
  /* random amaxes over the whole float range */
  for (int i = 0; i < 200000; i++) {
    float a = tu_f32((uint32_t)tu_next(st) & 0x7FFFFFFFu);
    float fm = (i & 1) ? 448.0f : 57344.0f;
    int p2 = (i >> 1) & 1;
    float eps = (i % 7 == 0) ? tu_f32((uint32_t)tu_next(st) & 0x7FFFFFFFu) : 0.0f;
    float vinf = (i % 3 == 0) ? 65504.0f : FLT_MAX;
    float got = exmy_scale_from_amax(a, fm, p2, eps, vinf), want = ref_sfa(a, fm, p2, eps, vinf);
    CHECK(same_f(got, want), "exmy_scale_from_amax(0x%08x, %g, %d, 0x%08x, %a) = 0x%08x, expected 0x%08x",
          tu_bits32(a), fm, p2, tu_bits32(eps), vinf, tu_bits32(got), tu_bits32(want));
  }
  /* exmy_amax_f32 */
  {
    float v[8];
    for (int t = 0; t < 4000; t++) {
      size_t n = (size_t)(tu_next(st) % 9);
      for (size_t i = 0; i < n; i++) {
        uint64_t k = tu_next(st) % 10;
        v[i] = k == 0 ? NAN : k == 1 ? -INFINITY : k == 2 ? -0.0f : tu_f32((uint32_t)tu_next(st) & 0xFF7FFFFFu);
      }
      float got = exmy_amax_f32(v, n), want = ref_amax(v, n ? n : 1, 0, n ? 1 : 0, 0, n, NULL);
      CHECK(same_f(got, want) && !isnan(got), "exmy_amax_f32 of %zu values (first 0x%08x) = 0x%08x, expected 0x%08x", n,
            n ? tu_bits32(v[0]) : 0, tu_bits32(got), tu_bits32(want));
    }
    float allnan[3] = {NAN, -NAN, NAN};
    CHECK(tu_bits32(exmy_amax_f32(allnan, 3)) == 0, "exmy_amax_f32 of NaNs = %a, expected +0", exmy_amax_f32(allnan, 3));
  }
}

/* ---- test 3: delayed scaling ----------------------------------------------- */

typedef struct dstate {
  int L, most_recent, margin;
  float h[1024];
  float scale, scale_inv, fmax;
} dstate;

static void ref_step(dstate *d) {
  float last = d->h[0], amax = 0.0f;
  if (last != 0.0f) { /* NaN != 0: rolls */
    float a[1024];
    for (int j = 0; j < d->L; j++) {
      a[j] = j < d->L - 1 ? d->h[j + 1] : last;
      if (a[j] > amax) amax = a[j]; /* fmaxf: NaN dropped */
    }
    for (int j = 0; j < d->L; j++) d->h[j] = j > 0 ? a[j] : 0.0f;
  }
  float amax_h = d->most_recent ? last : amax;
  float scaled_max = mulf(d->fmax, pow2f_bits(-d->margin));
  if (isfinite(amax_h) && amax_h > 0.0f) d->scale = divf(scaled_max, amax_h);
  if (isinf(d->scale)) d->scale = FLT_MAX;
  d->scale_inv = divf(1.0f, d->scale);
}

static void check_state(const char *what, const exmy_recipe_state *rec, const dstate *d) {
  CHECK(same_f(rec->scale, d->scale) && same_f(rec->scale_inv, d->scale_inv),
        "%s: scale 0x%08x (%a) scale_inv 0x%08x, expected 0x%08x (%a) 0x%08x", what, tu_bits32(rec->scale), rec->scale,
        tu_bits32(rec->scale_inv), tu_bits32(d->scale), d->scale, tu_bits32(d->scale_inv));
  int bad = -1;
  for (int j = 0; j < d->L && rec->history; j++)
    if (!same_f(rec->history[j], d->h[j])) {
      bad = j;
      break;
    }
  CHECK(rec->history && bad < 0, "%s: history[%d] = 0x%08x (%a), expected 0x%08x (%a)", what, bad,
        bad >= 0 ? tu_bits32(rec->history[bad]) : 0, bad >= 0 ? rec->history[bad] : 0.0f,
        bad >= 0 ? tu_bits32(d->h[bad]) : 0, bad >= 0 ? d->h[bad] : 0.0f);
}

/* Tensor of n elements whose NaN-dropping amax is exactly A (A >= 0 or inf);
 * extra: 1 adds a NaN element. */
static void tensor_with_amax(uint64_t *st, float *x, size_t n, float A, int extra_nan) {
  for (size_t i = 0; i < n; i++) {
    float u = rand_unit(st);
    x[i] = isinf(A) ? u * 100.0f : mulf(A, u);
    if (tu_next(st) & 1) x[i] = -x[i];
  }
  size_t j = (size_t)(tu_next(st) % n);
  x[j] = (tu_next(st) & 1) ? -A : A;
  if (extra_nan && n > 1) x[(j + 1) % n] = NAN;
}

enum { OP_Q, OP_Q_NAN, OP_STEP, OP_CAL, OP_SET_NAN, OP_COPY, OP_CAL_NAN };
typedef struct dop {
  int op;
  float a;
} dop;

static void test_delayed(uint64_t *st) {
  dop script[200];
  int ns = 0;
#define OP(o, v) script[ns++] = (dop){o, v}
  OP(OP_Q, 3.5f); OP(OP_STEP, 0);
  OP(OP_Q, 100.0f); OP(OP_Q, 20.0f); OP(OP_STEP, 0);     /* two tensors in one step: max */
  OP(OP_Q, 0.25f); OP(OP_STEP, 0);
  OP(OP_Q, 0.0f); OP(OP_STEP, 0);                         /* zero amax: no roll, scale kept */
  OP(OP_STEP, 0);                                         /* a step with no tensor at all */
  OP(OP_Q, 7.0f); OP(OP_STEP, 0);
  OP(OP_COPY, 0);                                         /* save mid-sequence */
  OP(OP_Q, INFINITY); OP(OP_STEP, 0);                     /* inf enters the history */
  OP(OP_Q, 1.5f); OP(OP_STEP, 0);
  OP(OP_Q, 1.5f); OP(OP_STEP, 0);
  OP(OP_Q_NAN, 2.5f); OP(OP_STEP, 0);                     /* a NaN element is ignored */
  OP(OP_Q, 1.5f); OP(OP_STEP, 0);                         /* inf has rolled out for L = 3 */
  OP(OP_SET_NAN, 0); OP(OP_STEP, 0);                      /* NaN in history[0]: rolls, max drops it */
  OP(OP_Q, 0x1p-140f); OP(OP_STEP, 0);                    /* fmax/amax overflows: FLT_MAX */
  OP(OP_Q, 0x1p-3f); OP(OP_STEP, 0);
  OP(OP_Q, 0x1p-3f); OP(OP_CAL, 64.0f); OP(OP_STEP, 0);   /* calibration overwrites slot 0 */
  OP(OP_CAL, 0.0f); OP(OP_STEP, 0);                       /* calibrated zero: no roll */
  OP(OP_Q, 9.0f); OP(OP_CAL_NAN, 0.75f); OP(OP_STEP, 0);  /* calibration amax drops NaN too */
  OP(OP_Q, 5.0f); OP(OP_STEP, 0);
  OP(OP_Q, 0x1.fffffep+127f); OP(OP_STEP, 0);             /* FLT_MAX amax */
  while (ns < 190) { /* a random run that wraps L = 16 several times */
    uint64_t k = tu_next(st) % 10;
    float a = k == 0 ? 0.0f : ldexpf(1.0f + rand_unit(st), (int)(tu_next(st) % 60) - 30);
    OP(OP_Q, a);
    if (k == 1) OP(OP_Q, mulf(a, 0.5f + rand_unit(st)));
    OP(OP_STEP, 0);
  }
#undef OP
  static const struct {
    const char *text;
    int L, mr, margin;
  } dc[] = {{"delayed:len=1", 1, 0, 0},
            {"delayed:len=3", 3, 0, 0},
            {"delayed:len=3,algo=most_recent", 3, 1, 0},
            {"delayed:len=16", 16, 0, 0},
            {"delayed:len=16,margin=1", 16, 0, 1},
            {"delayed:len=16,algo=most_recent,margin=1", 16, 1, 1},
            {"delayed:len=1,algo=most_recent,margin=1", 1, 1, 1},
            {"delayed", 1024, 0, 0}};
  const char *fmts[] = {"e4m3fn", "e5m2"};
  for (size_t ci = 0; ci < sizeof dc / sizeof dc[0]; ci++)
    for (int fi = 0; fi < 2; fi++)
      for (int variant = 0; variant < 2; variant++) {
        exmy_format f = tu_format(fmts[fi]);
        const rmode *md = variant ? &modes[3] : &modes[0];
        int exact = variant;
        rcase rc = {dc[ci].text, {EXMY_RECIPE_DELAYED, 0, 0, 0, 0, 0, dc[ci].L, dc[ci].mr, dc[ci].margin}, 0, 0};
        exmy_recipe rec0;
        exmy_recipe_state rst[2];
        char ierr[EXMY_ERRLEN];
        if (parse_case(&rc, &rec0)) continue;
        if (exmy_recipe_state_new(&rec0, &rst[0], ierr, sizeof ierr)) {
          CHECK(0, "'%s': state init failed: %s", rc.text, ierr);
          continue;
        }
        check_fields(rc.text, &rec0, &rst[0], &rc.s);
        if (!rst[0].history || rst[0].history_len != dc[ci].L) {
          exmy_recipe_state_free(&rst[0]);
          continue;
        }
        rec0.exact_product = exact;
        int nrec = 1;
        dstate d;
        memset(&d, 0, sizeof d);
        d.L = dc[ci].L;
        d.most_recent = dc[ci].mr;
        d.margin = dc[ci].margin;
        d.scale = d.scale_inv = 1.0f;
        d.fmax = (float)fmax_of(&f);
        exmy_rounding rr = md->r;
        if (md->null_rnd) {
          rr = exmy_rounding_default();
          rr.sat = EXMY_SAT_FINITE;
        }
        for (int k = 0; k < ns; k++) {
          char what[200];
          snprintf(what, sizeof what, "recipe '%s' fmt %s rnd %s%s op %d (%s %a)", dc[ci].text, f.name, md->name,
                   exact ? " exact_product" : "", k,
                   (const char *[]){"quantize", "quantize+NaN", "step", "calibrate", "set NaN", "copy", "calibrate+NaN"}[script[k].op],
                   script[k].a);
          size_t rows = 1 + (size_t)(tu_next(st) % 5), cols = 1 + (size_t)(tu_next(st) % 40);
          float *x = malloc((rows * cols + 1) * sizeof *x);
          switch (script[k].op) {
          case OP_Q:
          case OP_Q_NAN: {
            tensor_with_amax(st, x, rows * cols, script[k].a, script[k].op == OP_Q_NAN);
            rq e;
            ref_quantize(&rc.s, d.scale, d.scale_inv, &f, &rr, exact, x, rows, cols, &e);
            CHECK(same_f(e.amax[0], script[k].a), "self-check: tensor amax %a, wanted %a", e.amax[0], script[k].a);
            for (int ri = 0; ri < nrec; ri++) {
              exmy_qtensor q;
              char err[EXMY_ERRLEN];
              memset(&q, 0, sizeof q);
              int rcode = exmy_recipe_quantize(&rec0, &f, &md->r, x, rows, cols, &rst[ri], &q, NULL, err,
                                               sizeof err);
              CHECK(rcode == 0, "%s: quantize failed: %s", what, err);
              if (rcode == 0) {
                compare(what, &rc.s, &e, &q, x, &f);
                exmy_qtensor_free(&q);
              }
              CHECK(same_f(rst[ri].fmax, d.fmax), "%s: recipe fmax %a after quantize, expected %a", what, rst[ri].fmax,
                    d.fmax);
            }
            if (isnan(d.h[0]) || e.amax[0] > d.h[0]) d.h[0] = e.amax[0];
            rq_free(&e);
            break;
          }
          case OP_STEP:
            for (int ri = 0; ri < nrec; ri++) exmy_recipe_step(&rec0, &rst[ri]);
            ref_step(&d);
            break;
          case OP_CAL:
          case OP_CAL_NAN:
            tensor_with_amax(st, x, rows * cols + 1, script[k].a, script[k].op == OP_CAL_NAN);
            for (int ri = 0; ri < nrec; ri++) exmy_recipe_calibrate(&rec0, &f, x, rows * cols + 1, &rst[ri]);
            d.h[0] = script[k].a;
            break;
          case OP_SET_NAN:
            for (int ri = 0; ri < nrec; ri++) rst[ri].history[0] = NAN;
            d.h[0] = NAN;
            break;
          case OP_COPY:
            memset(&rst[1], 0, sizeof rst[1]);
            CHECK(exmy_recipe_state_copy(&rst[0], &rst[1], ierr, sizeof ierr) == 0, "%s: exmy_recipe_state_copy failed: %s",
                  what, ierr);
            CHECK(rst[1].history && rst[1].history != rst[0].history, "%s: copy shares the history array", what);
            if (rst[1].history && rst[1].history != rst[0].history) nrec = 2;
            break;
          }
          free(x);
          for (int ri = 0; ri < nrec; ri++) {
            char w2[240];
            snprintf(w2, sizeof w2, "%s%s", what, ri ? " [copy]" : "");
            check_state(w2, &rst[ri], &d);
          }
        }
        CHECK(nrec == 2, "recipe '%s': the copy was not made", dc[ci].text);
        for (int ri = 0; ri < nrec; ri++) exmy_recipe_state_free(&rst[ri]);
      }
  /* hand-computed sequence, independent of ref_step: L = 3, max, margin 0, e4m3fn, amaxes
   * 2, 8, 0, 1, 4, 0.5.  Each step: a_0 = h[1], a_1 = h[2], a_2 = last; max over all three;
   * then h = [0, a_1, a_2].
   *   amax 2:   a = [0, 0, 2]     max 2  scale 448/2 = 224   h = [0, 0, 2]
   *   amax 8:   a = [0, 2, 8]     max 8  scale 56            h = [0, 2, 8]
   *   amax 0:   no roll, scale kept 56                       h = [0, 2, 8]
   *   amax 1:   a = [2, 8, 1]     max 8  scale 56            h = [0, 8, 1]
   *   amax 4:   a = [8, 1, 4]     max 8  scale 56            h = [0, 1, 4]
   *   amax 0.5: a = [1, 4, 0.5]   max 4  scale 112           h = [0, 4, 0.5] */
  {
    exmy_format f = tu_format("e4m3fn");
    exmy_recipe rec;
    exmy_recipe_state rs;
    memset(&rs, 0, sizeof rs);
    rcase rc = {"delayed:len=3", {EXMY_RECIPE_DELAYED, 0, 0, 0, 0, 0, 3, 0, 0}, 0, 0};
    if (parse_case(&rc, &rec) == 0 && exmy_recipe_state_new(&rec, &rs, NULL, 0) == 0 && rs.history &&
        rs.history_len == 3) {
      const exmy_rounding cuda = cuda_rnd();
      const float am[6] = {2, 8, 0, 1, 4, 0.5f};
      const float want[6] = {224, 56, 56, 56, 56, 112};
      const float wh[6][3] = {{0, 0, 2}, {0, 2, 8}, {0, 2, 8}, {0, 8, 1}, {0, 1, 4}, {0, 4, 0.5f}};
      float x[4];
      for (int t = 0; t < 6; t++) {
        x[0] = am[t]; x[1] = -am[t] / 2; x[2] = 0; x[3] = am[t] / 4;
        exmy_qtensor q;
        char err[EXMY_ERRLEN];
        if (exmy_recipe_quantize(&rec, &f, &cuda, x, 1, 4, &rs, &q, NULL, err, sizeof err) == 0) {
          float s_before = t == 0 ? 1.0f : want[t - 1];
          CHECK(q.scale[0] == s_before, "hand delayed step %d: quantized with scale %a, expected %a", t, q.scale[0],
                s_before);
          exmy_qtensor_free(&q);
        }
        exmy_recipe_step(&rec, &rs);
        CHECK(rs.scale == want[t] && rs.scale_inv == 1.0f / want[t], "hand delayed step %d: scale %a inv %a, expected %a",
              t, rs.scale, rs.scale_inv, want[t]);
        CHECK(rs.history[0] == wh[t][0] && rs.history[1] == wh[t][1] && rs.history[2] == wh[t][2],
              "hand delayed step %d: history [%g %g %g], expected [%g %g %g]", t, rs.history[0], rs.history[1],
              rs.history[2], wh[t][0], wh[t][1], wh[t][2]);
      }
    }
    exmy_recipe_state_free(&rs);
  }
}

/* ---- test 4: MX hand checks ------------------------------------------------ */

static void mx_hand(const char *recipe, const char *fmt, float amax, unsigned code, float scale, float scale_inv,
                    float elem, uint64_t elem_code, const char *why) {
  exmy_format f = tu_format(fmt);
  exmy_recipe rec;
  char err[EXMY_ERRLEN];
  if (exmy_recipe_parse(recipe, &rec, err, sizeof err)) {
    CHECK(0, "cannot parse '%s': %s", recipe, err);
    return;
  }
  float x[32];
  for (int i = 0; i < 32; i++) x[i] = 0.0f;
  x[5] = amax;
  x[7] = elem;
  exmy_qtensor q;
  const exmy_rounding cuda = cuda_rnd();
  if (exmy_recipe_quantize(&rec, &f, &cuda, x, 1, 32, NULL, &q, NULL, err, sizeof err)) {
    CHECK(0, "'%s' %s: quantize failed: %s", recipe, fmt, err);
    return;
  }
  CHECK(q.scale_codes && q.scale_codes[0] == code, "'%s' %s amax %a (%s): E8M0 code 0x%02x, expected 0x%02x", recipe, fmt,
        amax, why, q.scale_codes ? q.scale_codes[0] : 0xFFFF, code);
  CHECK(same_f(q.scale[0], scale) && same_f(q.scale_inv[0], scale_inv),
        "'%s' %s amax %a (%s): scale %a scale_inv %a, expected %a %a", recipe, fmt, amax, why, q.scale[0],
        q.scale_inv[0], scale, scale_inv);
  uint64_t got = exmy_code_get(&f, q.codes, 7);
  CHECK(got == elem_code, "'%s' %s amax %a (%s): element %a -> 0x%" PRIx64 ", expected 0x%" PRIx64, recipe, fmt, amax,
        why, elem, got, elem_code);
  /* and the reference agrees with the hand value */
  if (!strcmp(recipe, "mx")) {
    float ra = ref_amax(x, 32, 0, 1, 0, 32, NULL);
    unsigned rcode = ref_mx_code(ra, fmax_of(&f));
    float rscale = ref_mx_mult(rcode);
    CHECK(rcode == code && same_f(rscale, scale) && same_f(ref_e8m0_value(rcode), scale_inv),
          "reference mx %s amax %a: code 0x%02x scale %a, hand 0x%02x %a", fmt, amax, rcode, rscale, code, scale);
  }
  exmy_qtensor_free(&q);
}

static void test_mx_hand(void) {
  /* TE rule, e4m3fn: rcp = (float)(1/448) = 0x1.24924ap-9 (1/7 = 0x1.249249...p-3, rounded up at
   * bit 24).  v = fp32(448 * rcp): 7 * 0x124924a = 0x8000006, so the exact product is
   * 1 + 3*2^-26 = 1 + 0.375 ulp(1), which rounds to 1.0: m = 0, exponent 127 -> code 127,
   * multiplier 2^0, scale_inv 1.  The element 448 stays 448 (0x7E). */
  mx_hand("mx", "e4m3fn", 448.0f, 127, 1.0f, 1.0f, 448.0f, 0x7E, "v rounds to exactly 1.0");
  /* 449: v = 1.0022.. > 1 -> m > 0 -> code 128, multiplier 2^-1, scale_inv 2; 449/2 = 224.5 ->
   * e4m3fn 224 (0x76; neighbours 224 and 240). */
  mx_hand("mx", "e4m3fn", 449.0f, 128, 0.5f, 2.0f, 449.0f, 0x76, "v just above 1 rounds up");
  /* amax 1: v = 0x1.24924ap-9, exponent field 118, m > 0 -> 119, multiplier 2^8 (bits 135<<23),
   * scale_inv 2^-8; element 1 -> 256 = 0x78. */
  mx_hand("mx", "e4m3fn", 1.0f, 119, 256.0f, 0x1p-8f, 1.0f, 0x78, "amax 1");
  /* amax 0: code 0, multiplier 1.0 (exp2f_rcp(0) = 1, not 2^127), scale_inv 2^-127. */
  mx_hand("mx", "e4m3fn", 0.0f, 0, 1.0f, 0x1p-127f, 0.0f, 0x00, "amax 0");
  /* amax inf: v = inf -> 0xFE, multiplier +0.0 ((254-254)<<23), scale_inv 2^127; a finite element
   * becomes +0 (x * +0); for 1.0 the code is 0x00. */
  mx_hand("mx", "e4m3fn", INFINITY, 0xFE, 0.0f, 0x1p127f, 1.0f, 0x00, "inf amax");
  /* amax 2^-118: v = 0x1.24924ap-127 is a float subnormal with mantissa field 0x1.24924a*2^22 =
   * 0x492492.8, a tie rounded to even 0x492492 > 0x400000 -> exponent 0 -> 1: code 1,
   * multiplier 2^126, scale_inv 2^-126; the element 2^-118 * 2^126 = 256 -> 0x78. */
  mx_hand("mx", "e4m3fn", 0x1p-118f, 1, 0x1p126f, 0x1p-126f, 0x1p-118f, 0x78, "subnormal v above 2^-127");
  /* amax 2^-120: v = 0x1.24924ap-129, mantissa field 0x124924.a -> 0x124925 <= 0x400000 -> code 0,
   * multiplier 1, scale_inv 2^-127: the element 2^-120 becomes 0. */
  mx_hand("mx", "e4m3fn", 0x1p-120f, 0, 1.0f, 0x1p-127f, 0x1p-120f, 0x00, "subnormal v at most 2^-127");
  /* amax 0x1.cp-119: v = 0x1.cp-119 * 0x1.24924ap-9 = 2^-127 exactly, mantissa field 0x400000: not
   * above it, so code 0 (the boundary of TE's rule) */
  mx_hand("mx", "e4m3fn", 0x1.cp-119f, 0, 1.0f, 0x1p-127f, 0x1.cp-119f, 0x00, "v exactly 2^-127");
  /* amax 2^-117: v = 0x1.24924ap-126 (exponent field 1, m > 0) -> code 2, multiplier 2^125. */
  mx_hand("mx", "e4m3fn", 0x1p-117f, 2, 0x1p125f, 0x1p-125f, 0x1p-117f, 0x78, "smallest normal v");
  /* e5m2: rcp = (float)(1/57344) = 0x1.24924ap-16; 57344 * rcp = 1 + 3*2^-26 -> 1.0 -> code 127. */
  mx_hand("mx", "e5m2", 57344.0f, 127, 1.0f, 1.0f, 57344.0f, 0x7B, "e5m2 fmax");
  /* e2m1fn: rcp = (float)(1/6) = 0x1.555556p-3 (rounded up); 0x1555556 * 6 = 0x8000004, so the
   * exact product 6 * rcp = 1 + 2^-25, which rounds to 1.0 -> code 127.  The element 6 stays 6 (0x7). */
  mx_hand("mx", "e2m1fn", 6.0f, 127, 1.0f, 1.0f, 6.0f, 0x7, "e2m1fn fmax");
  /* e2m1fn amax 7: v = 7/6 > 1 -> code 128, multiplier 0.5, scale_inv 2; element 7 -> 3.5 ->
   * e2m1fn 4 (0x6; tie between 3 and 4 goes to the even code 0x6). */
  mx_hand("mx", "e2m1fn", 7.0f, 128, 0.5f, 2.0f, 7.0f, 0x6, "e2m1fn 7");

  /* OCP rule, e4m3fn (emax_elem 8): amax 448: floor(log2 448) = 8 -> e = 0 -> code 127. */
  mx_hand("mx:ocp", "e4m3fn", 448.0f, 127, 1.0f, 1.0f, 448.0f, 0x7E, "ocp 448");
  /* amax 1 -> e = -8 -> code 119, scale 2^8, element 1 -> 256 (0x78). */
  mx_hand("mx:ocp", "e4m3fn", 1.0f, 119, 256.0f, 0x1p-8f, 1.0f, 0x78, "ocp 1");
  /* amax 0x1.fffffep+7 (just below 256): exact floor(log2) = 7 -> e = -1 -> code 126, scale 2;
   * the element 0x1.fffffep+7 * 2 = 511.99.. saturates to 448 (0x7E).  (microxcaling's fp32
   * log2 would give 8 here; the spec asks for the exact floor.) */
  mx_hand("mx:ocp", "e4m3fn", 0x1.fffffep+7f, 126, 2.0f, 0.5f, 0x1.fffffep+7f, 0x7E, "ocp just below 2^8");
  /* amax 449: e = 0, element 449 -> 448 (RNE: 449 is between 448 and 480) with saturation. */
  mx_hand("mx:ocp", "e4m3fn", 449.0f, 127, 1.0f, 1.0f, 449.0f, 0x7E, "ocp 449");
  /* amax 0: e = -126 - 8 = -134 -> clamped to -127: code 0, scale 2^127, scale_inv 2^-127. */
  mx_hand("mx:ocp", "e4m3fn", 0.0f, 0, 0x1p127f, 0x1p-127f, 0.0f, 0x00, "ocp zero");
  /* amax 2^-140: e = -148 -> -127; element 2^-140 * 2^127 = 2^-13 < half of 2^-9 -> 0. */
  mx_hand("mx:ocp", "e4m3fn", 0x1p-140f, 0, 0x1p127f, 0x1p-127f, 0x1p-140f, 0x00, "ocp tiny");
  /* a NaN or an inf in the group: code 0xFF, scale and scale_inv NaN, elements NaN (0x7F). */
  mx_hand("mx:ocp", "e4m3fn", NAN, 0xFF, NAN, NAN, 1.0f, 0x7F, "ocp NaN");
  mx_hand("mx:ocp", "e4m3fn", -INFINITY, 0xFF, NAN, NAN, 1.0f, 0x7F, "ocp inf");
  /* e2m1fn (emax_elem 2): amax 6 -> e 0; element 7 is not the amax here... amax 8 -> e = 1, code
   * 128, scale 0.5; element 7 * 0.5 = 3.5 -> tie -> 4 (0x6). */
  mx_hand("mx:ocp", "e2m1fn", 8.0f, 128, 0.5f, 2.0f, 7.0f, 0x6, "ocp e2m1fn 8");
  /* e2m1fn amax 7.9: floor(log2) 2 -> e = 0; 7.9 saturates to 6 (0x7). */
  mx_hand("mx:ocp", "e2m1fn", 7.9f, 127, 1.0f, 1.0f, 7.9f, 0x7, "ocp e2m1fn saturate");
  /* e2m1fn has no NaN: a NaN group gives the format's NaN conversion, i.e. +0 (0x0). */
  mx_hand("mx:ocp", "e2m1fn", NAN, 0xFF, NAN, NAN, 1.0f, 0x0, "ocp e2m1fn NaN");
  /* A format whose largest value is below 1 (e4m3 with bias 20: 0x1.cp-5, emax_elem -5) and a
   * float-subnormal amax 2^-130: e = -130 + 5 = -125 (not clamped), code 2, scale 2^125; the
   * element 2^-130 -> 2^-5 (0x78). */
  mx_hand("mx:ocp", "e4m3,bias=20,inf=none,nan=ones", 0x1p-130f, 2, 0x1p125f, 0x1p-125f, 0x1p-130f, 0x78,
          "ocp subnormal amax, fmax < 1");
  /* emax_elem from the format's largest value, not from its float: e4m3 with bias 200 has
   * 0x1.cp-185 (0 as a float; emax_elem -185): amax 2^-140 -> e = 45, code 172, scale 2^-45; the
   * element 2^-140 -> 2^-185 (0x78).  e5m2 with bias -120 has 0x1.cp+150 (FLT_MAX as a float;
   * emax_elem 150): amax 2^100 -> e = -50, code 77, scale 2^50; 2^100 -> 2^150 (0x78). */
  mx_hand("mx:ocp", "e4m3,bias=200,inf=none,nan=ones", 0x1p-140f, 172, 0x1p-45f, 0x1p45f, 0x1p-140f, 0x78,
          "ocp fmax below float's range");
  mx_hand("mx:ocp", "e5m2,bias=-120", 0x1p100f, 77, 0x1p50f, 0x1p-50f, 0x1p100f, 0x78, "ocp fmax above float's range");
  /* e5m2 (emax 15): amax 2^20 -> e = 5, code 132, scale 2^-5; element 2^20 -> 2^15 (0x78). */
  mx_hand("mx:ocp", "e5m2", 0x1p20f, 132, 0x1p-5f, 0x1p5f, 0x1p20f, 0x78, "ocp e5m2");
}

/* ---- test 5: thread determinism --------------------------------------------- */

static void test_threads(uint64_t *st) {
  size_t rows = 300, cols = 520;
  float *x = malloc(rows * cols * sizeof *x);
  rand_tensor(st, x, rows, cols);
  x[1234] = NAN;
  x[99999] = INFINITY;
  const char *texts[] = {"current", "current:row", "block:1x128", "block:128x128,fp32", "mx", "mx:ocp",
                         "block:1x128,deepgemm", "delayed:len=4"};
  const char *fmts[] = {"e4m3fn", "e2m1fn"};
  for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++)
    for (int fi = 0; fi < 2; fi++)
      for (int mi = 0; mi < nmodes; mi += 3) {
        exmy_format f = tu_format(fmts[fi]);
        exmy_qtensor q[2];
        int ok[2];
        for (int th = 0; th < 2; th++) {
          omp_set_num_threads(th + 1);
          exmy_recipe rec;
          char err[EXMY_ERRLEN];
          ok[th] = 0;
          if (exmy_recipe_parse(texts[t], &rec, err, sizeof err)) {
            CHECK(0, "cannot parse '%s': %s", texts[t], err);
            continue;
          }
          exmy_recipe_state rs;
          if (exmy_recipe_state_new(&rec, &rs, err, sizeof err)) {
            CHECK(0, "'%s': state init failed: %s", texts[t], err);
            continue;
          }
          rs.scale = 3.0f;
          rs.scale_inv = divf(1.0f, 3.0f);
          rec.exact_product = mi == 3;
          ok[th] = exmy_recipe_quantize(&rec, &f, &modes[mi].r, x, rows, cols, &rs, &q[th], NULL, err,
                                        sizeof err) == 0;
          exmy_recipe_state_free(&rs);
        }
        omp_set_num_threads(2);
        CHECK(ok[0] && ok[1], "'%s' %s: quantize failed", texts[t], f.name);
        if (!ok[0] || !ok[1]) continue;
        size_t ng = q[0].srows * q[0].scols;
        int same = q[0].srows == q[1].srows && q[0].scols == q[1].scols &&
                   !memcmp(q[0].codes, q[1].codes, rows * cols * (size_t)exmy_code_bytes(&f)) &&
                   !memcmp(q[0].scale, q[1].scale, ng * 4) && !memcmp(q[0].scale_inv, q[1].scale_inv, ng * 4) &&
                   !memcmp(q[0].amax, q[1].amax, ng * 4) &&
                   (!q[0].scale_codes || !memcmp(q[0].scale_codes, q[1].scale_codes, ng));
        CHECK(same, "'%s' %s rnd %s: 1 thread and 2 threads differ", texts[t], f.name, modes[mi].name);
        exmy_qtensor_free(&q[0]);
        exmy_qtensor_free(&q[1]);
      }
  free(x);
}

/* ---- recipe text round trip -------------------------------------------------- */

static void test_names(void) {
  const char *texts[] = {"none",  "current", "current:pow2", "current:eps=0.5", "current:row", "current:col",
                         "current:row,pow2", "current:pow2,eps=0.001", "delayed", "delayed:len=16",
                         "delayed:len=3,algo=most_recent,margin=2", "block:1x128", "block:128x128",
                         "block:1x128,fp32", "block:128x128,deepgemm", "block:1x128,eps=0.5", "mx", "mx:ocp",
                         "mx:col", "mx:ocp,col", "current:exact", "block:1x128,exact", "delayed:len=3,exact",
                         "mx:ocp,exact", "block:128x128,fp32,eps=0.25",
                         /* found by tests/fuzz/fuzz_recipe: eps=-0 kept a -0 the name dropped, a
                          * pow2 after deepgemm stayed set though the name dropped it */
                         "current:eps=-0", "block:1x128,deepgemm,pow2", "block:1x128,pow2,deepgemm"};
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    exmy_recipe a, b;
    char err[EXMY_ERRLEN], n1[256], n2[256];
    if (exmy_recipe_parse(texts[i], &a, err, sizeof err)) {
      CHECK(0, "cannot parse '%s': %s", texts[i], err);
      continue;
    }
    exmy_recipe_to_string(&a, n1, sizeof n1);
    if (exmy_recipe_parse(n1, &b, err, sizeof err)) {
      CHECK(0, "'%s' names itself '%s', which does not parse: %s", texts[i], n1, err);
      continue;
    }
    exmy_recipe_to_string(&b, n2, sizeof n2);
    int eq = a.kind == b.kind && a.block_rows == b.block_rows && a.block_cols == b.block_cols &&
             same_f(a.epsilon, b.epsilon) && a.pow2 == b.pow2 && a.deepgemm == b.deepgemm &&
             a.history_len == b.history_len && a.most_recent == b.most_recent && a.margin == b.margin &&
             a.exact_product == b.exact_product && !strcmp(n1, n2);
    CHECK(eq, "recipe '%s' -> name '%s' -> '%s' is not the same recipe", texts[i], n1, n2);
  }
  /* the fields of each recipe the reference relies on */
  for (size_t ci = 0; ci < NCASES; ci++) {
    if (cases[ci].set_br) continue;
    exmy_recipe rec;
    exmy_recipe_state rs;
    char serr[EXMY_ERRLEN];
    if (parse_case(&cases[ci], &rec)) continue;
    if (exmy_recipe_state_new(&rec, &rs, serr, sizeof serr)) {
      CHECK(0, "'%s': state init failed: %s", cases[ci].text, serr);
      continue;
    }
    check_fields(cases[ci].text, &rec, &rs, &cases[ci].s);
    exmy_recipe_state_free(&rs);
  }
  {
    exmy_recipe r;
    char err[EXMY_ERRLEN];
    if (exmy_recipe_parse("current:exact", &r, err, sizeof err) == 0) {
      CHECK(r.exact_product == 1, "'current:exact': exact_product %d", r.exact_product);
    }
  }
  exmy_recipe r;
  char err[EXMY_ERRLEN] = "";
  CHECK(exmy_recipe_parse("bogus:1x2", &r, err, sizeof err) != 0 && err[0], "'bogus:1x2' parsed");
}

/* interval=N (TE 1.x): the history rolls every step, the scale changes only
 * on every N-th step.  Amaxes 100, 50, 200, 25 with L = 1, e4m3fn: a plain
 * update would give 448/100, 448/50, 448/200, 448/25; with interval 2 only
 * steps 2 and 4 update, to 448/50 and 448/25. */
static void test_interval(void) {
  exmy_format f = tu_format("e4m3fn");
  exmy_recipe r;
  exmy_recipe_state rs;
  const exmy_rounding cuda = cuda_rnd();
  char err[EXMY_ERRLEN];
  CHECK(exmy_recipe_parse("delayed:len=1,interval=2", &r, err, sizeof err) == 0 &&
            exmy_recipe_state_new(&r, &rs, err, sizeof err) == 0,
        "interval parse: %s", err);
  const float amax[4] = {100, 50, 200, 25};
  const float want[4] = {1.0f, 448.0f / 50.0f, 448.0f / 50.0f, 448.0f / 25.0f};
  for (int t = 0; t < 4; t++) {
    float x[2] = {amax[t], -amax[t] / 3};
    exmy_qtensor q;
    CHECK(exmy_recipe_quantize(&r, &f, &cuda, x, 1, 2, &rs, &q, NULL, err, sizeof err) == 0, "interval quantize: %s", err);
    exmy_qtensor_free(&q);
    exmy_recipe_step(&r, &rs);
    CHECK(rs.scale == want[t], "interval=2 step %d: scale %a, expected %a", t + 1, (double)rs.scale, (double)want[t]);
  }
  char name[100];
  exmy_recipe_to_string(&r, name, sizeof name);
  CHECK(strstr(name, "interval=2") != NULL, "interval missing from the name '%s'", name);
  exmy_recipe_state_free(&rs);
  /* TE's flow: a calibration step before any FP8 step sets the first scale */
  CHECK(exmy_recipe_parse("delayed", &r, err, sizeof err) == 0 && exmy_recipe_state_new(&r, &rs, err, sizeof err) == 0,
        "delayed parse: %s", err);
  const float xc[4] = {1, -100, 3, 0.5f};
  exmy_recipe_calibrate(&r, &f, xc, 4, &rs);
  exmy_recipe_step(&r, &rs);
  CHECK(rs.scale == 448.0f / 100.0f, "calibrate then step: scale %a, expected %a", (double)rs.scale, (double)(448.0f / 100.0f));
  exmy_recipe_state_free(&rs);
}

/* mx:ocp, a row whose second group (amax 2^100, scale 2^-92) holds 2^-149: its fp32 product with
 * the group's scale is 0, which the float kernel does not flag; the flags must still say
 * underflow and inexact, as the exact product's rounding does.  The first group (amax 2^-100,
 * scale 2^108) would not flush it, so the scan must use each element's own group scale. */
static void test_ocp_lost(void) {
  float x[64];
  for (int i = 0; i < 64; i++) x[i] = i < 32 ? 0x1p-100f : 0.0f;
  x[32] = 0x1p100f;
  x[40] = 0x1p-149f;
  exmy_format f = tu_format("e4m3fn");
  for (size_t ci = 0; ci < NCASES; ci++)
    if (!strcmp(cases[ci].text, "mx:ocp"))
      for (int mi = 0; mi < nmodes; mi++) {
        run_one(&cases[ci], &f, &modes[mi], 1, x, 1, 64, 3.0f);
        run_one(&cases[ci], &f, &modes[mi], 1, x, 1, 41, 3.0f); /* the second group a partial one */
      }
  /* Groups {1024, 0, 2, 2, ...} (scale 2^-2): the zero loses nothing, so no underflow flag (the
   * smallest nonzero magnitude, not the zero, decides) */
  float z[64];
  for (int i = 0; i < 64; i++) z[i] = i % 32 == 0 ? 1024.0f : i % 32 == 1 ? 0.0f : 2.0f;
  for (size_t ci = 0; ci < NCASES; ci++)
    if (!strcmp(cases[ci].text, "mx:ocp"))
      for (int mi = 0; mi < nmodes; mi++) run_one(&cases[ci], &f, &modes[mi], 1, z, 1, 64, 3.0f);
}

/* A power-of-two delayed scale > 1 with an exact product: fp32(x * s)
 * overflows where x * s does not, so the float kernel must not take these
 * rows.  The buffers are reused from a tensor of small values first, so a
 * stale group amax would let the kernel in (it did, in review). */
static void test_pow2_overflow(void) {
  const char *fmts[] = {"e4m3fn", "e5m2"};
  const exmy_saturation sats[] = {EXMY_SAT_NONE, EXMY_SAT_FINITE, EXMY_SAT_PROPAGATE};
  const float big[4] = {0x1.c3634cp+127f, 1.0f, -0x1.2cedc6p+127f, 0.5f}, small[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  for (int fi = 0; fi < 2; fi++)
    for (int si = 0; si < 3; si++) {
      exmy_format f = tu_format(fmts[fi]);
      exmy_recipe rec;
      exmy_recipe_state rst;
      char err[EXMY_ERRLEN];
      if (exmy_recipe_parse("delayed", &rec, err, sizeof err)) {
        CHECK(0, "pow2 overflow: recipe: %s", err);
        return;
      }
      rec.exact_product = 1;
      if (exmy_recipe_state_new(&rec, &rst, err, sizeof err)) {
        CHECK(0, "pow2 overflow: state: %s", err);
        return;
      }
      rst.scale = 2.0f;
      rst.scale_inv = 0.5f;
      exmy_rounding r = exmy_rounding_default();
      r.sat = sats[si];
      exmy_qtensor q;
      memset(&q, 0, sizeof q);
      unsigned fl = 0, rf = 0;
      int rc = exmy_recipe_quantize_into(&rec, &f, &r, small, 2, 2, &rst, &q, &fl, err, sizeof err);
      fl = 0;
      rc |= exmy_recipe_quantize_into(&rec, &f, &r, big, 2, 2, &rst, &q, &fl, err, sizeof err);
      CHECK(rc == 0, "pow2 overflow: quantize failed: %s", err);
      for (size_t i = 0; rc == 0 && i < 4; i++) {
        const uint64_t want = exmy_from_f64(&f, &r, (double)big[i] * 2.0, i, &rf);
        CHECK(exmy_code_get(&f, q.codes, i) == want, "pow2 overflow %s sat %d x=0x%08x: code 0x%" PRIx64
              ", expected 0x%" PRIx64, f.name, (int)r.sat, tu_bits32(big[i]), exmy_code_get(&f, q.codes, i), want);
      }
      CHECK(rc || fl == rf, "pow2 overflow %s sat %d: flags %u, expected %u", f.name, (int)r.sat, fl, rf);
      exmy_qtensor_free(&q);
      exmy_recipe_state_free(&rst);
    }
}

/* The recipe traits row (recipe.c) agrees with what it names: each name
 * parses to its kind with the row's group shape and state, and the block
 * scales' nominal decomposition (the GEMM's INNER scales) is their format's. */
static void test_traits(void) {
  int k = 0;
  for (; exmy__recipe_traits_of((exmy_recipe_kind)k)->name; k++) {
    const exmy__recipe_traits *t = exmy__recipe_traits_of((exmy_recipe_kind)k);
    char text[32], err[EXMY_ERRLEN];
    snprintf(text, sizeof text, "%s%s", t->name, k == EXMY_RECIPE_MX_OCP ? ":ocp" : "");
    exmy_recipe r;
    CHECK(!exmy_recipe_parse(text, &r, err, sizeof err) && (int)r.kind == k && r.block_rows == t->block_rows &&
              r.block_cols == t->block_cols && exmy_recipe_has_state(&r) == t->has_state,
          "traits row %d: '%s' parses to kind %d, %zux%zu, state %d", k, text, (int)r.kind, r.block_rows, r.block_cols,
          exmy_recipe_has_state(&r));
    if (t->scale_format) {
      exmy_format f;
      CHECK(!exmy_format_parse(t->scale_format, &f, err, sizeof err) && f.emin == t->scale_emin &&
                f.mbits == t->scale_mbits,
            "traits row %d: scale format %s: emin %d mbits %d, the row says %d %d", k, t->scale_format, f.emin,
            f.mbits, t->scale_emin, t->scale_mbits);
    }
  }
  CHECK(k == EXMY_RECIPE_NVFP4 + 1, "traits rows: %d, expected one per kind", k);
}

int main(void) {
  uint64_t st = tu_seed(20250611);
  nmodes = 0;
  modes[nmodes++] = make_mode("NULL(rne,satfinite)", 1, EXMY_RNE, EXMY_SAT_FINITE, 0);
  modes[nmodes++] = make_mode("rne,sat=none", 0, EXMY_RNE, EXMY_SAT_NONE, 0);
  modes[nmodes++] = make_mode("rtz,satfinite", 0, EXMY_RTZ, EXMY_SAT_FINITE, 0);
  modes[nmodes++] = make_mode("sr(seed),satfinite", 0, EXMY_SR, EXMY_SAT_FINITE, tu_next(&st) | 1);
  modes[nmodes++] = make_mode("rup,sat=propagate", 0, EXMY_RUP, EXMY_SAT_PROPAGATE, 0);
  modes[nmodes++] = make_mode("sr(seed),sat=none", 0, EXMY_SR, EXMY_SAT_NONE, tu_next(&st) | 1);
  omp_set_num_threads(2);
  test_traits();
  test_names();
  test_mx_hand();
  test_edges(&st);
  test_pow2_overflow();
  test_ocp_lost();
  test_random(&st);
  /* the reuse path must have been taken, and reallocation too */
  CHECK(into_reused > 100 && into_reused < into_calls, "quantize_into reused buffers %zu times in %zu calls", into_reused,
        into_calls);
  printf("test_scaling: exmy_recipe_quantize_into: %zu calls, %zu reused the buffers\n", into_calls, into_reused);
  exmy_qtensor_free(&into_q);
  test_delayed(&st);
  test_threads(&st);
  test_interval();
  return tu_finish("test_scaling");
}
