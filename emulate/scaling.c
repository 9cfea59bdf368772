/* scaling.c: scaled tensors and the scaling recipes of Transformer Engine
 * (current, delayed, block, MXFP8), DeepGEMM and the OCP MX spec.  Every
 * formula is cited in docs/scaling-sources.md; fp32 operations are written
 * out one rounding at a time, in the sources' order. */
#include "exmy.h"
#include "formats/internal.h"
#include "emulate/parallel.h"
#include "emulate/recipe_traits.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail exmy__fail

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* TE's amax kernels: fmaxf(|x|, max) from 0, so NaN is ignored, inf kept. */
float exmy_amax_f32(const float *x, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; i++) m = fmaxf(fabsf(x[i]), m);
  return m;
}

/* recipe_common.cuh compute_scale_from_amax. */
float exmy_scale_from_amax(float amax, float fmax, int pow2, float epsilon, float value_for_inf) {
  if (amax < epsilon) amax = epsilon;
  float scale = 1.0f;
  if (isinf(amax) || amax == 0.0f || isnan(amax)) return scale;
  scale = fmax / amax; /* correctly rounded, as __fdiv_rn */
  if (isinf(scale)) scale = value_for_inf;
  if (pow2) scale = u2f(f2u(scale) & 0xFF800000u);
  return scale;
}

/* ---- per-group scales ------------------------------------------------ */

/* TE ptx.cuh float_to_e8m0 (software path), on the bits b of the fp32 v: round
 * v up to a power of two.  Selects, no branches: a row's scales vectorize. */
static inline uint32_t te_float_to_e8m0(uint32_t b) {
  const uint32_t a = b & 0x7fffffffu, e = (b >> 23) & 0xFFu, m = b & 0x7FFFFFu;
  const uint32_t up = (m > 0) & (e != 0xFE) & !(e == 0 && m <= 0x400000);
  return a > 0x7f800000u ? 0xFF : a == 0x7f800000u ? 0xFE : e + up; /* NaN, inf; 0 stays 0 */
}

/* TE exp2f_rcp: the multiplier for an E8M0 code (1.0 for code 0, +0 for 254, -inf for 255). */
static inline float te_exp2f_rcp(uint32_t code) { return code == 0 ? 1.0f : u2f((254 - code) << 23); }

/* 2^(code - 127) from its bits (code 0: the float subnormal 2^-127), as
 * ldexpf(1, code - 127) without the call (a fifth of an mx run was scalbnf). */
static inline float e8m0_value(uint32_t code) { return code == 0xFF ? NAN : code == 0 ? 0x1p-127f : u2f(code << 23); }

/* OCP MX's emax_elem: floor(log2) of the element format's largest finite
 * value, from the double (its float can flush to 0 or clamp to FLT_MAX). */
static int elem_emax(const exmy_format *f) {
  exmy_info in;
  exmy_format_info(f, &in);
  int e = 0;
  (void)frexp(in.max_finite, &e);
  return e - 1;
}

/* The bits of 2^k for -127 <= k <= 127 (2^-127 is subnormal). */
static inline uint32_t pow2_bits(int32_t k) { return k >= -126 ? (uint32_t)(k + 127) << 23 : 0x00400000u; }

/* Largest finite value of the element format, as a float (saturating). */
float exmy__fmax_f32(const exmy_format *f) {
  exmy_info in;
  exmy_format_info(f, &in);
  return in.max_finite > FLT_MAX ? FLT_MAX : (float)in.max_finite;
}

/* Integer max needs SSE4.1 at least: AVX2 and AVX-512 clones, picked at run
 * time (the baseline clone stays scalar). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EXMY_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define EXMY_CLONES
#endif

/* max |x| over a run, on the bits (vectorizes): NaN dropped as TE's fmaxf
 * does, inf kept; *has_nan is set when a NaN was seen.  The magnitudes are
 * below 2^31, so signed compares give the unsigned order.  with_min (a
 * constant; mx:ocp): *mnz = the bits of the smallest nonzero magnitude,
 * minus 1 (zero wraps to the largest; a NaN can be the smallest only when
 * every nonzero element is one). */
static inline __attribute__((always_inline)) float run_amax_body(const float *restrict x, size_t n, int *has_nan,
                                                                 const int with_min, uint32_t *mnz) {
  int32_t m = 0, nan = 0;
  uint32_t mn = UINT32_MAX;
  _Pragma("omp simd reduction(max:m) reduction(|:nan) reduction(min:mn)") for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, x + i, 4);
    const int32_t b = (int32_t)(u & 0x7fffffffu);
    const int32_t isn = b > 0x7f800000;
    nan |= isn;
    const int32_t v = isn ? 0 : b;
    m = v > m ? v : m;
    if (with_min) {
      const uint32_t w = (uint32_t)b - 1u;
      mn = w < mn ? w : mn;
    }
  }
  *has_nan |= (int)nan;
  if (with_min) *mnz = mn;
  return u2f((uint32_t)m);
}
EXMY_CLONES static float run_amax(const float *restrict x, size_t n, int *has_nan) {
  return run_amax_body(x, n, has_nan, 0, NULL);
}

/* The runs of one row, bc columns each: am[cbk] and nan[cbk] (one call per
 * row, so short runs such as MX's 32 do not pay a call each), and mnz[cbk]
 * with_min (row_amax_min). */
#define ROW_AMAX_FIXED(BC)                                                               \
  if (bc == (BC) && cols % (BC) == 0) {                                                  \
    for (size_t cbk = 0, c0 = 0; c0 < cols; cbk++, c0 += (BC)) {                         \
      int has_nan = 0;                                                                   \
      am[cbk] = run_amax_body(x + c0, (BC), &has_nan, with_min, with_min ? mnz + cbk : NULL); \
      nan[cbk] = (uint8_t)has_nan;                                                       \
    }                                                                                    \
    return;                                                                              \
  }
static inline __attribute__((always_inline)) void row_amax_body(const float *restrict x, size_t cols, size_t bc,
                                                                float *restrict am, uint8_t *restrict nan,
                                                                const int with_min, uint32_t *restrict mnz) {
  /* MX's 32 and block:1x128's 128 as constants: the run loop unrolls
   * (no remainder code per run) */
  ROW_AMAX_FIXED(32)
  ROW_AMAX_FIXED(128)
  for (size_t cbk = 0, c0 = 0; c0 < cols; cbk++, c0 += bc) {
    int has_nan = 0;
    am[cbk] = run_amax_body(x + c0, c0 + bc < cols ? bc : cols - c0, &has_nan, with_min, with_min ? mnz + cbk : NULL);
    nan[cbk] = (uint8_t)has_nan;
  }
}
EXMY_CLONES static void row_amax(const float *restrict x, size_t cols, size_t bc, float *restrict am,
                                 uint8_t *restrict nan) {
  row_amax_body(x, cols, bc, am, nan, 0, NULL);
}
EXMY_CLONES static void row_amax_min(const float *restrict x, size_t cols, size_t bc, float *restrict am,
                                     uint8_t *restrict nan, uint32_t *restrict mnz) {
  row_amax_body(x, cols, bc, am, nan, 1, mnz);
}

/* Whether a group of the row loses a nonzero element to zero: fp32(x * s)
 * is +-0 for some finite nonzero x, so (monotone) for the smallest, mnz + 1;
 * a group without one (all ones: a NaN instead) or with only NaNs (mnz + 1
 * a NaN) has a NaN product, never 0. */
EXMY_CLONES static int row_lost(const uint32_t *restrict mnz, const float *restrict scale, size_t n) {
  int lost = 0;
  _Pragma("omp simd reduction(|:lost)") for (size_t c = 0; c < n; c++) {
    const float x = u2f(mnz[c] == UINT32_MAX ? 0x7fc00000u : mnz[c] + 1u);
    lost |= x * scale[c] == 0.0f;
  }
  return lost;
}

typedef struct group_view {
  size_t r0, r1, c0, c1; /* rows [r0,r1), cols [c0,c1) */
} group_view;

static group_view group_of(const exmy_qtensor *q, size_t g) {
  group_view v;
  size_t gr = g / q->scols, gc = g % q->scols;
  v.r0 = gr * q->block_rows;
  v.r1 = v.r0 + q->block_rows < q->rows ? v.r0 + q->block_rows : q->rows;
  v.c0 = gc * q->block_cols;
  v.c1 = v.c0 + q->block_cols < q->cols ? v.c0 + q->block_cols : q->cols;
  return v;
}

/* TE's MX scale: the E8M0 code of amax * rcp rounded up, its multiplier
 * and its value; rcp = mx_rcp(fmax) (utils.cuh max_norm_rcp). */
static inline float mx_rcp(float fmax) { return (float)(1.0 / (double)fmax); }
static inline void mx_scale(float amax, float rcp, float *scale, float *scale_inv, uint8_t *code) {
  const uint32_t c = te_float_to_e8m0(f2u(amax * rcp));
  *code = (uint8_t)c;
  *scale = te_exp2f_rcp(c);
  *scale_inv = e8m0_value(c);
}

/* The OCP MX spec's shared exponent: floor(log2(amax)) - emax_elem (amax 0:
 * -126), clamped below at -127; NaN (code 0xFF) for a NaN or infinite amax
 * or an exponent above 127.  floor(log2) from the bits; selects, as mx_scale. */
static inline void ocp_scale(float amax, int emax_elem, float *scale, float *scale_inv, uint8_t *code) {
  const uint32_t a = f2u(amax) & 0x7fffffffu, E = a >> 23, qnan = 0x7fc00000u; /* NAN's bits */
  const int32_t sub = 31 - __builtin_clz(a | 1u) - 149; /* a subnormal's (| 1: clz(0) is undefined) */
  const int32_t fl = a == 0 ? -126 : E ? (int32_t)E - 127 : sub;
  const int32_t e0 = fl - emax_elem, e = e0 < -127 ? -127 : e0;
  const int bad = (a >= 0x7f800000u) | (e0 > 127);
  *code = bad ? 0xFF : (uint8_t)(e + 127);
  *scale = u2f(bad ? qnan : pow2_bits(-e));
  *scale_inv = u2f(bad ? qnan : pow2_bits(e));
}

/* A row's MX scales (n groups), in loops that vectorize (omp simd: -O2's
 * cost model leaves ocp's loop scalar). */
EXMY_CLONES static void mx_scales(const float *restrict am, float rcp, float *restrict scale, float *restrict scale_inv,
                                  uint8_t *restrict code, size_t n) {
  _Pragma("omp simd") for (size_t g = 0; g < n; g++) mx_scale(am[g], rcp, &scale[g], &scale_inv[g], &code[g]);
}
EXMY_CLONES static void ocp_scales(const float *restrict am, int emax_elem, float *restrict scale,
                                   float *restrict scale_inv, uint8_t *restrict code, size_t n) {
  _Pragma("omp simd") for (size_t g = 0; g < n; g++) ocp_scale(am[g], emax_elem, &scale[g], &scale_inv[g], &code[g]);
}

/* Scale, inverse scale and (for MX) the E8M0 code of group g. */
static void group_scale(const exmy_recipe *r, const exmy_recipe_state *st, const exmy_format *e4m3, float fmax,
                        int emax_elem, float amax, float s_enc, float *scale, float *scale_inv, uint8_t *code) {
  switch (r->kind) {
  case EXMY_RECIPE_NONE:
    *scale = *scale_inv = 1.0f;
    break;
  case EXMY_RECIPE_CURRENT:
  case EXMY_RECIPE_BLOCK:
    if (r->deepgemm) {
      float sf = fmaxf(amax, 1e-4f) / fmax;
      *scale = 1.0f / sf;
      *scale_inv = sf;
    } else {
      *scale = exmy_scale_from_amax(amax, fmax, r->pow2, r->epsilon, FLT_MAX);
      *scale_inv = 1.0f / *scale; /* __frcp_rn / 1.0f/scale: both correctly rounded */
    }
    break;
  case EXMY_RECIPE_DELAYED:
    *scale = st->scale;
    *scale_inv = st->scale_inv;
    break;
  case EXMY_RECIPE_MX:
    mx_scale(amax, mx_rcp(fmax), scale, scale_inv, code);
    break;
  case EXMY_RECIPE_MX_OCP:
    ocp_scale(amax, emax_elem, scale, scale_inv, code);
    break;
  case EXMY_RECIPE_NVFP4: {
    /* core_nvfp4.cuh (newest): S_dec_b = e4m3(min(amax_b * (S_enc * (1/6)), FLT_MAX)),
     * multiplier = min(1 / (S_dec_b * S_dec), FLT_MAX) */
    const float fp4_max_inv = 1.0f / fmax;
    const float s_dec = (float)(1.0 / (double)s_enc);
    float sdb = fminf(amax * (s_enc * fp4_max_inv), FLT_MAX);
    exmy_rounding sat = exmy_rounding_default();
    sat.sat = EXMY_SAT_FINITE;
    *code = (uint8_t)exmy_from_f32(e4m3, &sat, sdb, 0, NULL);
    const float sdb_q = (float)exmy_code_to_f64(e4m3, *code);
    *scale = fminf(1.0f / (sdb_q * s_dec), FLT_MAX);
    *scale_inv = sdb_q;
    break;
  }
  }
}

/* Group g's scale, inverse and code from its amax, stored in q. */
static void set_group_scale(const exmy_recipe *r, const exmy_recipe_state *st, const exmy_format *e4m3, float fmax,
                            int emax_elem, exmy_qtensor *q, size_t g) {
  float scale = 1.0f, scale_inv = 1.0f;
  uint8_t code = 0;
  group_scale(r, st, e4m3, fmax, emax_elem, q->amax[g], q->tensor_scale, &scale, &scale_inv, &code);
  q->scale[g] = scale;
  q->scale_inv[g] = scale_inv;
  if (q->scale_codes) q->scale_codes[g] = code;
}

/* Groups [g0, g0 + count)'s scales: the recipe's switch once, then a loop
 * (MX: a call per 32 elements otherwise). */
static void set_group_scales(const exmy_recipe *r, const exmy_recipe_state *st, const exmy_format *e4m3, float fmax,
                             int emax_elem, exmy_qtensor *q, size_t g0, size_t count) {
  /* MX always has codes (has_scale_codes) */
  if (r->kind == EXMY_RECIPE_MX) {
    mx_scales(q->amax + g0, mx_rcp(fmax), q->scale + g0, q->scale_inv + g0, q->scale_codes + g0, count);
    return;
  }
  if (r->kind == EXMY_RECIPE_MX_OCP) {
    ocp_scales(q->amax + g0, emax_elem, q->scale + g0, q->scale_inv + g0, q->scale_codes + g0, count);
    return;
  }
  for (size_t g = g0; g < g0 + count; g++) set_group_scale(r, st, e4m3, fmax, emax_elem, q, g);
}

/* core_nvfp4.cuh compute_global_encode_scaling_factor_FP4. */
static float nvfp4_s_enc(float amax, float fp4_max) {
  float s = (448.0f * fp4_max) / amax;
  s = fminf(s, FLT_MAX);
  if (amax == 0.0f || s == 0.0f) return 1.0f;
  return s;
}

/* The row's groups (from g0) all have a scale the float kernel multiplies
 * exactly: a normal power of two with amax * scale finite in float
 * (mx:ocp, exact products with power-of-two scales).  am: the amax of each
 * of the row's groups, or of the row when its group's amax is not known yet
 * (none and delayed take it in the same pass). */
EXMY_CLONES static int pow2_row(const float *restrict scale, const float *restrict am, size_t n) {
  int ok = 1;
  /* positive, normal, finite, mantissa bits zero; a bit test, not frexpf: mx:col checks a group per element */
  _Pragma("omp simd reduction(&:ok)") for (size_t c = 0; c < n; c++) {
    const float s = scale[c];
    ok &= (s >= FLT_MIN) & (s <= FLT_MAX) & ((f2u(s) & 0x7fffffu) == 0) & (fabsf(am[c] * s) <= FLT_MAX);
  }
  return ok;
}

/* Row i's elements: the vectorized kernel with the multiply fused in
 * (row_sc: the row's scales expanded, when it has several groups), or one
 * exact rounding of x * scale in double.  mnz: the smallest nonzero
 * magnitude of each of the row's groups (row_amax_min), or NULL. */
static unsigned quantize_row(exmy_qtensor *q, const exmy__f32q *fq, const exmy_format *f, const exmy_rounding *rnd,
                             const float *x, size_t i, int one_rounding, float *row_sc, const float *am,
                             const uint32_t *mnz) {
  const size_t cols = q->cols, bc = q->block_cols, sc = q->scols, cb = (size_t)exmy_code_bytes(f);
  const size_t k0 = i * cols, g0 = (i / q->block_rows) * sc;
  unsigned fl = 0;
  if (row_sc && (one_rounding ? pow2_row(q->scale + g0, am, sc) : sc > 1)) {
    char *codes = (char *)q->codes + k0 * cb;
    const int lg = __builtin_ctzll((unsigned long long)bc);
    if (sc > 1 && bc == (size_t)1 << lg && exmy__f32q_grp_lg_ok(lg)) {
      /* groups 2^lg wide (MX's 32, block:1x128): the kernels read a scale per group */
      unsigned f1 = 0;
      const int lost = mnz ? row_lost(mnz, q->scale + g0, sc) : -1;
      if (one_rounding ? !exmy__f32q_run_pow2_v(fq, x + k0, cols, q->scale + g0, lg, lost, k0, codes, &f1)
                       : !exmy__f32q_run_grp(fq, x + k0, cols, q->scale + g0, lg, k0, codes, &f1))
        return f1;
    }
    for (size_t cbk = 0, c0 = 0; cbk < sc; cbk++, c0 += bc) {
      const size_t len = c0 + bc < cols ? bc : cols - c0;
      const float s1 = q->scale[g0 + cbk];
      for (size_t j = 0; j < len; j++) row_sc[c0 + j] = s1;
    }
    if (!one_rounding) return exmy__f32q_run_v(fq, x + k0, cols, row_sc, k0, codes);
    if (!exmy__f32q_run_pow2_v(fq, x + k0, cols, row_sc, 0, -1, k0, codes, &fl)) return fl;
  }
  for (size_t cbk = 0; cbk < sc; cbk++) {
    const size_t g = g0 + cbk, c0 = cbk * bc, len = c0 + bc < cols ? bc : cols - c0;
    const size_t kk = k0 + c0;
    const float scale = q->scale[g];
    if (!one_rounding) {
      fl |= exmy__f32q_run(fq, x + kk, len, scale, kk, (char *)q->codes + kk * cb);
      continue;
    }
    for (size_t k = kk; k < kk + len; k++) /* x * 2^-e (ocp) or x * scale, exact in double: one rounding */
      exmy_code_set(f, q->codes, k, exmy_from_f64(f, rnd, isnan(scale) ? NAN : (double)x[k] * (double)scale, k, &fl));
  }
  return fl;
}

/* Each group's amax from the amax of its rows' runs (pam, pnan: rows x
 * scols); max is order-independent, so threads do not change it. */
static void reduce_amax(exmy_qtensor *q, const float *pam, const uint8_t *pnan, int ocp) {
  const size_t ng = q->srows * q->scols, sc = q->scols, br = q->block_rows, rows = q->rows;
  for (size_t g = 0; g < ng; g++) {
    const size_t gr = g / sc, cbk = g % sc, r0 = gr * br, r1 = r0 + br < rows ? r0 + br : rows;
    float m = 0.0f;
    int nan = 0;
    for (size_t i = r0; i < r1; i++) {
      m = fmaxf(m, pam[i * sc + cbk]);
      nan |= pnan[i * sc + cbk];
    }
    q->amax[g] = (ocp && nan) ? NAN : m;
  }
}

/* The group layout the recipe gives a rows x cols tensor (no buffers). */
static void set_layout(const exmy_recipe *r, size_t rows, size_t cols, exmy_qtensor *q) {
  q->rows = rows;
  q->cols = cols;
  q->block_rows = r->block_rows && r->block_rows < rows ? r->block_rows : (rows ? rows : 1);
  q->block_cols = r->block_cols && r->block_cols < cols ? r->block_cols : (cols ? cols : 1);
  if (exmy__recipe_traits_of(r->kind)->whole) {
    q->block_rows = rows ? rows : 1;
    q->block_cols = cols ? cols : 1;
  }
  q->srows = rows ? (rows + q->block_rows - 1) / q->block_rows : 0;
  q->scols = cols ? (cols + q->block_cols - 1) / q->block_cols : 0;
}

static int has_scale_codes(const exmy_recipe *r) { return exmy__recipe_traits_of(r->kind)->scale_format != NULL; }

/* q's buffers for the layout in *lay: q's own when they have exactly its
 * sizes (a tensor made before for the same shape, code width and recipe
 * layout), else fresh ones.  On -1 q is freed and zeroed. */
static int take_buffers(const exmy_recipe *r, const exmy_format *f, const exmy_qtensor *lay, exmy_qtensor *q) {
  const size_t cb = (size_t)exmy_code_bytes(f), n = lay->rows * lay->cols, ng = lay->srows * lay->scols;
  const int coded = has_scale_codes(r);
  const int reuse = !q->is_view && q->codes && q->scale && q->scale_inv && q->amax &&
                    q->rows * q->cols * (size_t)exmy_code_bytes(&q->fmt) == n * cb && q->srows * q->scols == ng &&
                    !q->scale_codes == !coded;
  if (!reuse) {
    exmy_qtensor_free(q);
    q->codes = malloc(n * cb + 1);
    q->scale = malloc(ng * sizeof(float) + 1);
    q->scale_inv = malloc(ng * sizeof(float) + 1);
    q->amax = malloc(ng * sizeof(float) + 1);
    if (coded) q->scale_codes = malloc(ng + 1);
    if (!q->codes || !q->scale || !q->scale_inv || !q->amax || (coded && !q->scale_codes)) {
      exmy_qtensor_free(q);
      return -1;
    }
  }
  void *codes = q->codes;
  float *scale = q->scale, *scale_inv = q->scale_inv, *amax = q->amax;
  uint8_t *scale_codes = q->scale_codes;
  *q = *lay;
  q->codes = codes;
  q->scale = scale;
  q->scale_inv = scale_inv;
  q->amax = amax;
  q->scale_codes = scale_codes;
  return 0;
}

int exmy_recipe_quantize(const exmy_recipe *r, const exmy_format *f, const exmy_rounding *rnd_in,
                         const float *x, size_t rows, size_t cols, exmy_recipe_state *st, exmy_qtensor *q,
                         unsigned *flags, char *err, size_t errlen) {
  memset(q, 0, sizeof *q);
  return exmy_recipe_quantize_into(r, f, rnd_in, x, rows, cols, st, q, flags, err, errlen);
}

int exmy_recipe_quantize_into(const exmy_recipe *r, const exmy_format *f, const exmy_rounding *rnd_in,
                              const float *x, size_t rows, size_t cols, exmy_recipe_state *st, exmy_qtensor *q,
                              unsigned *flags, char *err, size_t errlen) {
  if (!rnd_in) {
    exmy_qtensor_free(q);
    return fail(err, errlen, "scaling recipe: no rounding given (rnd is NULL)");
  }
  char re[EXMY_ERRLEN];
  if (exmy_rounding_check(rnd_in, re, sizeof re)) {
    exmy_qtensor_free(q);
    return fail(err, errlen, "scaling recipe: %s", re);
  }
  if (exmy_recipe_has_state(r) && (!st || !st->history)) {
    exmy_qtensor_free(q);
    return fail(err, errlen, "scaling recipe: delayed scaling needs a state (exmy_recipe_state_new)");
  }
  const exmy_rounding rnd = *rnd_in;
  exmy_qtensor lay;
  memset(&lay, 0, sizeof lay);
  lay.fmt = *f;
  set_layout(r, rows, cols, &lay);
  if (take_buffers(r, f, &lay, q)) return fail(err, errlen, "out of memory for a %zu x %zu tensor", rows, cols);
  const size_t ng = q->srows * q->scols, n = rows * cols;
  const float fmax = exmy__fmax_f32(f);
  const exmy__recipe_traits *tr = exmy__recipe_traits_of(r->kind);
  const int ocp = r->kind == EXMY_RECIPE_MX_OCP;
  const int emax_elem = ocp ? elem_emax(f) : 0; /* only mx:ocp reads it */
  exmy_format e4m3;
  exmy_format_parse("e4m3fn", &e4m3, NULL, 0);
  q->recipe = r->kind;
  q->rnd = rnd;
  q->exact_product = r->exact_product || tr->exact_product;
  q->tensor_scale = q->tensor_scale_inv = 1.0f;
  /* Phase 1: amax of every (row, column block) run, in parallel over rows;
   * max is order-independent, so the result does not depend on threads. */
  const size_t bc = q->block_cols, br = q->block_rows, sc = q->scols;
  /* groups of one row (mx, block:1xN) without a tensor-wide scale: phases 1
   * and 2 run inside phase 3's row loop, one pass over x */
  const int fused = br == 1 && !tr->tensor_scale;
  /* none and delayed: one group whose scale does not depend on this
   * tensor's amax, so the amax is taken row by row in phase 3 (one pass) */
  const int amax_in_pass = !fused && sc == 1 && tr->whole;
  /* Phase 3 below, for these (one group, one rounding per element through
   * the float kernel) is, row by row, f32q_run of the row at index i * cols
   * with the group's scale, and the group's amax the max of the rows': the
   * same codes, flags and amax from one call per thread over a contiguous
   * range, without a call per row (rows of 24 floats made the calls' set-up
   * the cost: `exmy train --d_model 24`, issue 34). */
  const int whole = amax_in_pass && n && !(tr->exact_product || r->exact_product);
  float *pam = NULL;
  uint8_t *pnan = NULL;
  if (!fused && !whole) {
    pam = malloc(rows * sc * sizeof *pam + 1);
    pnan = malloc(rows * sc + 1);
    if (!pam || !pnan) {
      free(pam);
      free(pnan);
      exmy_qtensor_free(q);
      return fail(err, errlen, "out of memory for a %zu x %zu tensor", rows, cols);
    }
  }
  if (amax_in_pass) {
    for (size_t g = 0; g < ng; g++) set_group_scale(r, st, &e4m3, fmax, emax_elem, q, g);
  } else if (!fused) {
#pragma omp parallel for schedule(static) if(n > EXMY_OMP_MIN_TENSOR)
    for (size_t i = 0; i < rows; i++)
      for (size_t cbk = 0; cbk < sc; cbk++) {
        const size_t c0 = cbk * bc, len = c0 + bc < cols ? bc : cols - c0;
        int has_nan = 0;
        pam[i * sc + cbk] = run_amax(x + i * cols + c0, len, &has_nan);
        pnan[i * sc + cbk] = (uint8_t)has_nan;
      }
    reduce_amax(q, pam, pnan, ocp);
    /* Phase 2: the scales. */
    if (tr->tensor_scale) {
      float tamax = 0.0f;
      for (size_t g = 0; g < ng; g++) tamax = fmaxf(tamax, q->amax[g]);
      q->tensor_scale = nvfp4_s_enc(tamax, fmax);
      q->tensor_scale_inv = (float)(1.0 / (double)q->tensor_scale);
    }
    for (size_t g = 0; g < ng; g++) set_group_scale(r, st, &e4m3, fmax, emax_elem, q, g);
  }
  /* Phase 3: the elements, row runs in parallel; the float path is the
   * vectorized kernel with the multiply fused in. */
  exmy__f32q fq;
  exmy__f32q_init(&fq, f, &rnd);
  const int one_rounding = tr->exact_product || r->exact_product;
  int nomem = 0;
  unsigned fl = 0;
  if (whole) {
    const float s1 = q->scale[0];
    const size_t cb = (size_t)exmy_code_bytes(f);
    float am = 0.0f;
    int any_nan = 0;
#pragma omp parallel if(n > EXMY_OMP_MIN_TENSOR) reduction(|:fl) reduction(max:am) reduction(|:any_nan)
    {
      const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
      const size_t lo = n / nt * t + (t < n % nt ? t : n % nt), hi = lo + n / nt + (t < n % nt);
      /* pieces that stay in cache between the amax and the cast */
      for (size_t a = lo; a < hi; a += 16384) {
        const size_t len = hi - a < 16384 ? hi - a : 16384;
        am = fmaxf(am, run_amax(x + a, len, &any_nan));
        fl |= exmy__f32q_run(&fq, x + a, len, s1, a, (char *)q->codes + a * cb);
      }
    }
    q->amax[0] = am; /* not ocp: NaN dropped */
    (void)any_nan;
  }
#pragma omp parallel if(n > EXMY_OMP_MIN_TENSOR && !whole) reduction(|:nomem) reduction(|:fl)
  if (!whole) {
    /* several groups per row: expand the row's scales and make one call */
    const int want_sc = cols && (one_rounding ? fq.pow2_ok : sc > 1);
    float *row_sc = want_sc ? malloc(cols * sizeof *row_sc) : NULL;
    nomem |= want_sc && !row_sc;
    uint8_t *row_nan = fused ? malloc(sc + 1) : NULL;
    uint32_t *row_mnz = fused && ocp ? malloc(sc * sizeof *row_mnz + 1) : NULL; /* mx:ocp: lost without a rescan */
    nomem |= (fused && !row_nan) || (fused && ocp && !row_mnz);
#pragma omp for schedule(static)
    for (size_t i = 0; i < rows; i++) {
      if (fused && (!row_nan || (ocp && !row_mnz))) continue; /* out of memory: reported below */
      if (fused) { /* one row group per row: its amax and scales here, while the row is in cache */
        if (ocp) row_amax_min(x + i * cols, cols, bc, q->amax + i * sc, row_nan, row_mnz);
        else row_amax(x + i * cols, cols, bc, q->amax + i * sc, row_nan);
        if (ocp)
          for (size_t cbk = 0; cbk < sc; cbk++)
            if (row_nan[cbk]) q->amax[i * sc + cbk] = NAN;
        set_group_scales(r, st, &e4m3, fmax, emax_elem, q, i * sc, sc);
      }
      if (amax_in_pass) { /* the row's amax while it is in cache */
        int has_nan = 0;
        pam[i] = run_amax(x + i * cols, cols, &has_nan);
        pnan[i] = (uint8_t)has_nan;
      }
      /* the row's amax (amax_in_pass: one group, its amax not reduced yet) or its groups' */
      const float *am = amax_in_pass ? pam + i : q->amax + (i / q->block_rows) * sc;
      fl |= quantize_row(q, &fq, f, &rnd, x, i, one_rounding, row_sc, am, row_mnz);
    }
    free(row_sc);
    free(row_nan);
    free(row_mnz);
  }
  if (amax_in_pass && !whole && !nomem) reduce_amax(q, pam, pnan, ocp);
  free(pam);
  free(pnan);
  if (nomem) {
    exmy_qtensor_free(q);
    return fail(err, errlen, "out of memory for a %zu x %zu tensor", rows, cols);
  }
  if (exmy_recipe_has_state(r)) {
    st->fmax = fmax;
    st->history[0] = fmaxf(st->history[0], ng ? q->amax[0] : 0.0f); /* one group: the tensor's amax */
  }
  if (flags) *flags |= fl;
  return 0;
}

/* TE delayed_scaling.cu kernel_bulk (the default fused update). */
void exmy_recipe_step(const exmy_recipe *r, exmy_recipe_state *st) {
  if (!exmy_recipe_has_state(r) || !st || !st->history) return;
  const int L = st->history_len;
  float *h = st->history;
  const float last = h[0];
  float amax = 0.0f;
  if (last != 0.0f) {
    for (int j = 0; j < L; j++) {
      float a = j < L - 1 ? h[j + 1] : last;
      amax = fmaxf(amax, a);
      h[j] = j > 0 ? a : 0.0f;
    }
  }
  const float amax_h = r->most_recent ? last : amax;
  st->steps++;
  /* TE 1.x's interval: the history rolls every step, the scale is recomputed
   * every interval steps (TE 2.x dropped the field: interval 1) */
  if (st->fmax > 0 && st->steps % (r->interval > 0 ? r->interval : 1) == 0) { /* fmax: set by quantize */
    const float scaled_max = st->fmax * ldexpf(1.0f, -r->margin); /* fmax * std::pow(2.f, -margin) */
    float scale = st->scale;
    if (isfinite(amax_h) && amax_h > 0.0f) scale = scaled_max / amax_h;
    if (isinf(scale)) scale = FLT_MAX;
    st->scale = scale;
    st->scale_inv = 1.0f / scale;
  }
}

void exmy_recipe_calibrate(const exmy_recipe *r, const exmy_format *f, const float *x, size_t n,
                           exmy_recipe_state *st) {
  if (!exmy_recipe_has_state(r) || !st || !st->history) return;
  st->fmax = exmy__fmax_f32(f);
  st->history[0] = exmy_amax_f32(x, n);
}

/* decode(q) * scale_inv * tensor_scale_inv: exact in double. */
#define DEQUANT_LOOP(T)                                                                        \
  do {                                                                                         \
    const size_t ng = q->srows * q->scols;                                                     \
    _Pragma("omp parallel for schedule(static) if(q->rows * q->cols > EXMY_OMP_MIN_TENSOR)")                 \
    for (size_t g = 0; g < ng; g++) {                                                          \
      group_view v = group_of(q, g);                                                           \
      for (size_t i = v.r0; i < v.r1; i++)                                                     \
        for (size_t j = v.c0; j < v.c1; j++) {                                                 \
          size_t k = i * q->cols + j;                                                          \
          out[k] = (T)(exmy_code_to_f64(&q->fmt, exmy_code_get(&q->fmt, q->codes, k)) *              \
                       (double)q->scale_inv[g] * (double)q->tensor_scale_inv);                 \
        }                                                                                      \
    }                                                                                          \
  } while (0)

void exmy_qtensor_to_f64(const exmy_qtensor *q, double *out) { DEQUANT_LOOP(double); }
void exmy_qtensor_to_f32(const exmy_qtensor *q, float *out) { DEQUANT_LOOP(float); }

void exmy_qtensor_free(exmy_qtensor *q) {
  if (q->is_view) { /* borrowed: nothing to free */
    memset(q, 0, sizeof *q);
    return;
  }
  free(q->codes);
  free(q->scale);
  free(q->scale_inv);
  free(q->scale_codes);
  free(q->amax);
  memset(q, 0, sizeof *q);
}

void exmy_qtensor_view(const exmy_format *fmt, const void *codes, size_t rows, size_t cols,
                       const float *scale_inv, exmy_qtensor *q) {
  static const float one = 1.0f, zero = 0.0f;
  memset(q, 0, sizeof *q);
  q->fmt = *fmt;
  q->rows = rows;
  q->cols = cols;
  q->codes = (void *)codes; /* a view: read only, never freed */
  q->block_rows = rows ? rows : 1;
  q->block_cols = cols ? cols : 1;
  q->srows = rows ? 1 : 0;
  q->scols = cols ? 1 : 0;
  q->scale_inv = (float *)(scale_inv ? scale_inv : &one);
  q->scale = (float *)&one; /* not 1/scale_inv: a view only feeds the GEMM, which reads scale_inv */
  q->amax = (float *)&zero;
  q->tensor_scale = q->tensor_scale_inv = 1.0f;
  q->recipe = EXMY_RECIPE_NONE;
  q->rnd = exmy_rounding_default();
  q->is_view = 1;
}
