/* gemm_fast_lanes.c: acc=f16 and acc=bf16 (round to nearest even and
 * stochastic rounding) on float lanes with AVX-512, 16 outputs a vector, for
 * operands whose products carry at most the accumulator's precision q (fp8 x
 * fp8), bit for bit the reference's step c = round(c + p) (exmy__round_sum2):
 *  - every product is exact in float, and so is every sum c + p that the
 *    checks below find exact; no float subnormal arises, since each sum is a
 *    multiple of the smallest product (>= 2^-126);
 *  - rne: c + p rounded once to float and then to the accumulator; since
 *    float's 24 bits >= 2q + 2 (q = 11, 8) that double rounding is
 *    innocuous (Figueroa, "When is double rounding innocuous?", 1995);
 *  - sr: the exact sum's bits below the accumulator's grid and the top bits
 *    of the lane's SplitMix64 draw (key, index) decide the increment as
 *    exmy_round_pack does; inexact sums, overflow and NaN take the reference
 *    step lane by lane.
 * On the blocking frame (gemm_block.h): tiles of FR rows x FC columns in
 * parallel, pieces promoted into fp32 as the reference, then the row
 * epilogue. */
#include "emulate/gemm_fast_lanes.h"
#include "emulate/gemm_block.h"
#include "emulate/gemm_round.h"
#include "emulate/gemm_bits.h"
#include "emulate/round_core.h"
#include "emulate/rng_avx512.h"
#include "formats/internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

enum { FR = 4, FC = 64 };

typedef struct lanes_ctx {
  const gemm_plan *p;
  const exmy_format *f;
  const exmy_rounding *r;
  uint64_t key; /* sr: the generator's key from (seed, stream) */
  int R;        /* sr: random bits used */
  uint32_t vmax_bits; /* sr: the bits of the accumulator's largest finite value as a float */
} lanes_ctx;

static int lanes_apply(const gemm_plan *p) {
  const exmy_format *f = &p->acc.acc_fmt, *fa = &p->A->fmt, *fb = &p->B->fmt;
  const exmy_rounding *r = &p->acc.acc_rnd;
  const int f16 = f->ebits == 5 && f->mbits == 10 && f->bias == 15;
  const int bf16 = f->ebits == 8 && f->mbits == 7 && f->bias == 127;
  const int lo = fa->emin - fa->mbits + fb->emin - fb->mbits; /* exponent of the smallest product */
  return p->acc.kind == EXMY_ACCUM_FORMAT && p->style != GEMM_INNER && p->k > 0 && (f16 || bf16) && f->is_signed &&
         f->has_zero && f->inf == EXMY_INF_IEEE && f->nan == EXMY_NAN_IEEE && !r->ftz && !r->daz &&
         (fa->mbits + 1) + (fb->mbits + 1) <= f->mbits + 1 && lo >= -126 && fa->emax + fb->emax + 2 <= 127 &&
         /* each operand a normal float too (custom biases can put one outside while the products fit) */
         fa->emax <= 127 && fb->emax <= 127 && fa->emin - fa->mbits >= -126 && fb->emin - fb->mbits >= -126 &&
         /* sr: no sum below the accumulator's smallest subnormal, so at most 23 bits drop */
         (r->mode == EXMY_RNE || (r->mode == EXMY_SR && lo >= f->emin - f->mbits));
}

/* The reference's steps for output (i, j) over [l0, l1): where a lane's fast
 * result cannot stand. */
static float ref_piece(const lanes_ctx *x, size_t i, size_t j, size_t l0, size_t l1) {
  const gemm_plan *p = x->p;
  const uint64_t base = ((uint64_t)i * p->n + j) * p->k;
  double c = 0.0;
  for (size_t l = l0; l < l1; l++) {
    const uint64_t code = exmy__round_sum2(x->f, x->r, c, exmy__gemm_prod(p, i, j, l), base + l, NULL);
    c = p->acc_lut ? p->acc_lut[code] : exmy_code_to_f64(x->f, code);
  }
  return (float)c;
}

/* Round float lanes to binary16 (the hardware conversion, rne) or to
 * bfloat16 (rne on the bits: add 0x7fff plus the kept lsb, cut). */
__attribute__((target("avx512f"))) static inline __m512 round_f16(__m512 x) {
  return _mm512_cvtph_ps(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
__attribute__((target("avx512f"))) static inline __m512 round_bf16(__m512 x) {
  const __m512i b = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
  return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32((int)0xffff0000u)));
}

/* rne: c[r][0..FC) = the accumulator's sums from +0 of the packed rows A
 * ([l][FR], r < FR) against the packed columns Bp ([l][FC]) over len steps. */
#define F32_LANES_KERNEL(NAME, ROUND)                                                                           \
  __attribute__((target("avx512f"))) static void NAME(const lanes_ctx *x, size_t i0, size_t j0, size_t l0,     \
                                                      const float *A, const float *Bp, size_t len,              \
                                                      float c[FR][FC]) {                                        \
    __m512 v00 = _mm512_setzero_ps(), v01 = v00, v02 = v00, v03 = v00, v10 = v00, v11 = v00, v12 = v00,         \
           v13 = v00, v20 = v00, v21 = v00, v22 = v00, v23 = v00, v30 = v00, v31 = v00, v32 = v00, v33 = v00;   \
    for (size_t l = 0; l < len; l++) {                                                                          \
      const float *b = Bp + l * FC;                                                                             \
      const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32),        \
                   b3 = _mm512_loadu_ps(b + 48);                                                                \
      __m512 a = _mm512_set1_ps(A[FR * l]);                                                                      \
      v00 = ROUND(_mm512_fmadd_ps(a, b0, v00)), v01 = ROUND(_mm512_fmadd_ps(a, b1, v01));                       \
      v02 = ROUND(_mm512_fmadd_ps(a, b2, v02)), v03 = ROUND(_mm512_fmadd_ps(a, b3, v03));                       \
      a = _mm512_set1_ps(A[FR * l + 1]);                                                                        \
      v10 = ROUND(_mm512_fmadd_ps(a, b0, v10)), v11 = ROUND(_mm512_fmadd_ps(a, b1, v11));                       \
      v12 = ROUND(_mm512_fmadd_ps(a, b2, v12)), v13 = ROUND(_mm512_fmadd_ps(a, b3, v13));                       \
      a = _mm512_set1_ps(A[FR * l + 2]);                                                                        \
      v20 = ROUND(_mm512_fmadd_ps(a, b0, v20)), v21 = ROUND(_mm512_fmadd_ps(a, b1, v21));                       \
      v22 = ROUND(_mm512_fmadd_ps(a, b2, v22)), v23 = ROUND(_mm512_fmadd_ps(a, b3, v23));                       \
      a = _mm512_set1_ps(A[FR * l + 3]);                                                                        \
      v30 = ROUND(_mm512_fmadd_ps(a, b0, v30)), v31 = ROUND(_mm512_fmadd_ps(a, b1, v31));                       \
      v32 = ROUND(_mm512_fmadd_ps(a, b2, v32)), v33 = ROUND(_mm512_fmadd_ps(a, b3, v33));                       \
    }                                                                                                           \
    _mm512_storeu_ps(c[0], v00), _mm512_storeu_ps(c[0] + 16, v01), _mm512_storeu_ps(c[0] + 32, v02);           \
    _mm512_storeu_ps(c[0] + 48, v03), _mm512_storeu_ps(c[1], v10), _mm512_storeu_ps(c[1] + 16, v11);           \
    _mm512_storeu_ps(c[1] + 32, v12), _mm512_storeu_ps(c[1] + 48, v13), _mm512_storeu_ps(c[2], v20);           \
    _mm512_storeu_ps(c[2] + 16, v21), _mm512_storeu_ps(c[2] + 32, v22), _mm512_storeu_ps(c[2] + 48, v23);      \
    _mm512_storeu_ps(c[3], v30), _mm512_storeu_ps(c[3] + 16, v31), _mm512_storeu_ps(c[3] + 32, v32);           \
    _mm512_storeu_ps(c[3] + 48, v33);                                                                           \
  }
F32_LANES_KERNEL(lanes_f16, round_f16)
F32_LANES_KERNEL(lanes_bf16, round_bf16)
#undef F32_LANES_KERNEL


/* sr, the general step for 16 lanes (sr_row32 takes it where a lane's sum is
 * not exact, or NaN, or rounds above the accumulator's largest finite value):
 * D from s's exponent, then the reference step where it must.  idx: lane 0's
 * index. */
__attribute__((target("avx512f,avx512dq"), noinline)) static __m512 sr_general(const lanes_ctx *x, __m512 cv, __m512 pv,
                                                                              __m512i ut, uint64_t idx) {
  const gemm_plan *p = x->p;
  const uint64_t k = p->k;
  const __m512i one = _mm512_set1_epi32(1), x23 = _mm512_set1_epi32(23), dm = _mm512_set1_epi32(23 - x->f->mbits);
  const __m512i ebmin = _mm512_set1_epi32(x->f->emin + 127), xff = _mm512_set1_epi32(0xff);
  const __m512i mant = _mm512_set1_epi32(0x7fffff), impl = _mm512_set1_epi32(0x800000), v32 = _mm512_set1_epi32(32);
  const __m512i Rv = _mm512_set1_epi32(x->R), absm = _mm512_set1_epi32(0x7fffffff);
  const __m512i vmaxb = _mm512_set1_epi32((int)x->vmax_bits);
  const __m512 zero = _mm512_setzero_ps();
  const __m512 s = _mm512_add_ps(cv, pv), bp = _mm512_sub_ps(s, cv);
  const __m512 e = _mm512_add_ps(_mm512_sub_ps(cv, _mm512_sub_ps(s, bp)), _mm512_sub_ps(pv, bp));
  const __m512i sb = _mm512_castps_si512(s), ex = _mm512_and_si512(_mm512_srli_epi32(sb, 23), xff);
  const __m512i D = _mm512_add_epi32(dm, _mm512_sub_epi32(_mm512_max_epi32(ex, ebmin), ex)); /* bits dropped */
  const __m512i dmask = _mm512_sub_epi32(_mm512_sllv_epi32(one, D), one);
  const __m512i d = _mm512_and_si512(_mm512_or_si512(_mm512_and_si512(sb, mant), impl), dmask);
  const __m512i T = _mm512_min_epu32(Rv, D);
  const __m512i inc = _mm512_srlv_epi32(
      _mm512_add_epi32(_mm512_srlv_epi32(d, _mm512_sub_epi32(D, T)), _mm512_srlv_epi32(ut, _mm512_sub_epi32(v32, T))), T);
  const __m512i rb = _mm512_add_epi32(_mm512_andnot_si512(dmask, sb), _mm512_sllv_epi32(inc, D));
  const __mmask16 exact = _mm512_cmp_ps_mask(e, zero, _CMP_EQ_OQ), zs = _mm512_cmp_ps_mask(s, zero, _CMP_EQ_OQ);
  const __mmask16 nrm = _mm512_cmpneq_epi32_mask(ex, _mm512_setzero_si512()) & _mm512_cmpneq_epi32_mask(ex, xff) &
                        _mm512_cmple_epi32_mask(D, x23) & _mm512_cmple_epi32_mask(_mm512_and_si512(rb, absm), vmaxb);
  /* An infinite accumulator plus a finite product stays infinite, as the
   * reference's: only the reference step makes one, and only where the
   * format rounds an infinity to itself (no saturation). */
  const __mmask16 infs = _mm512_fpclass_ps_mask(cv, 0x18) & _mm512_cmp_ps_mask(s, cv, _CMP_EQ_OQ);
  const __mmask16 ok = (exact & (nrm | zs)) | infs;
  __m512 nc = _mm512_mask_blend_ps(zs | infs, _mm512_castsi512_ps(rb), s);
  if (ok != 0xffff) {
    float cs[16], ps[16], o[16];
    _mm512_storeu_ps(cs, cv);
    _mm512_storeu_ps(ps, pv);
    _mm512_storeu_ps(o, nc);
    for (int t = 0; t < 16; t++)
      if (!(ok >> t & 1)) {
        const uint64_t code = exmy__round_sum2(x->f, x->r, cs[t], ps[t], idx + (uint64_t)t * k, NULL);
        o[t] = (float)(p->acc_lut ? p->acc_lut[code] : exmy_code_to_f64(x->f, code));
      }
    nc = _mm512_loadu_ps(o);
  }
  return nc;
}

/* sr: one row's 32 outputs from +0 over len steps; lane t's index at step
 * l is idx0 + t k + l (the reference's ((i n + j) k + l)).  A lane whose
 * sum is exact drops D = 23 - mbits bits of it, so the increment's shifts are
 * uniform, with T = min(R, D) random bits: s's bits >> (D - T), plus T random
 * bits, >> T, << D is s cut to the grid plus exmy_round_pack's carry (the
 * sign bit goes down and back).  Below the accumulator's 2^emin the grid is
 * 2^(emin - mbits) instead, but every sum is a multiple of it (lanes_apply's
 * bound on the smallest product), so the D bits dropped there are zeros and
 * the carry is 0, as the reference's exact step.  The sum is
 * exact iff s - c = p and s - p = c: the difference of s and the operand of
 * larger magnitude is exact (the Fast2Sum lemma), so it equals the other
 * operand only when s is exact; an exact s makes both hold.  Any other lane
 * sends its vector to sr_general. */
__attribute__((target("avx512f,avx512dq"))) static void sr_row32(const lanes_ctx *x, uint64_t idx0, const float *a,
                                                                    const float *Bp, size_t len, float *out) {
  const uint64_t k = x->p->k;
  /* SplitMix64 counters key + (index + 1) * gamma, 8 lanes each: z[2h] the
   * even outputs of 16h.., z[2h + 1] the odd ones (exmy__mix64_hi16's order) */
  __m512i z[4];
  for (int v = 0; v < 4; v++) {
    uint64_t zz[8];
    for (int t = 0; t < 8; t++)
      zz[t] = x->key + (idx0 + (uint64_t)(16 * (v >> 1) + 2 * t + (v & 1)) * k + 1) * EXMY__GOLDEN_GAMMA;
    z[v] = _mm512_loadu_si512(zz);
  }
  __m512i z0 = z[0], z1 = z[1], z2 = z[2], z3 = z[3];
  const __m512i gam = _mm512_set1_epi64((long long)EXMY__GOLDEN_GAMMA);
  const __m512i absm = _mm512_set1_epi32(0x7fffffff), vmaxb = _mm512_set1_epi32((int)x->vmax_bits);
  const __m512i infb = _mm512_set1_epi32(0x7f800000);
  const int Dn = 23 - x->f->mbits, Tn = x->R < Dn ? x->R : Dn;
  const __m128i sh_dt = _mm_cvtsi32_si128(Dn - Tn), sh_rt = _mm_cvtsi32_si128(32 - Tn);
  const __m128i sh_t = _mm_cvtsi32_si128(Tn), sh_d = _mm_cvtsi32_si128(Dn);
  const __m512i lowd = _mm512_set1_epi32((int)((1u << Dn) - 1));
  __m512 c0 = _mm512_setzero_ps(), c1 = c0;
#define SR_STEP(C, ZE, ZO, H)                                                                                       \
  do {                                                                                                              \
    const __m512i ut = exmy__mix64_hi16(ZE, ZO); /* the draws' top 32 bits */                                       \
    ZE = _mm512_add_epi64(ZE, gam);                                                                                 \
    ZO = _mm512_add_epi64(ZO, gam);                                                                                 \
    const __m512 pv = _mm512_mul_ps(va, _mm512_loadu_ps(Bp + l * FC + 16 * (H)));                                   \
    const __m512 s = _mm512_add_ps(C, pv);                                                                          \
    const __m512i sb = _mm512_castps_si512(s), sa = _mm512_and_si512(sb, absm);                                     \
    const __mmask16 ex1 = _mm512_cmp_ps_mask(_mm512_sub_ps(s, C), pv, _CMP_EQ_OQ);                                  \
    const __mmask16 exact = _mm512_mask_cmp_ps_mask(ex1, _mm512_sub_ps(s, pv), C, _CMP_EQ_OQ);                      \
    const __m512i rb = Tn == Dn ? _mm512_andnot_si512(lowd, _mm512_add_epi32(sb, _mm512_srl_epi32(ut, sh_rt)))      \
                                : _mm512_sll_epi32(_mm512_srl_epi32(_mm512_add_epi32(_mm512_srl_epi32(sb, sh_dt),     \
                                                                                     _mm512_srl_epi32(ut, sh_rt)),    \
                                                                    sh_t), sh_d);                                   \
    __mmask16 ok = _mm512_mask_cmple_epu32_mask(exact, _mm512_and_si512(rb, absm), vmaxb);                          \
    /* an infinite accumulator plus a finite product: inf, as the reference; rb keeps its bits */                   \
    if (ok != 0xffff)                                                                                               \
      ok |= _mm512_mask_cmp_ps_mask(_mm512_cmpeq_epi32_mask(sa, infb), s, C, _CMP_EQ_OQ);                           \
    C = ok == 0xffff ? _mm512_castsi512_ps(rb) : sr_general(x, C, pv, ut, idx0 + (uint64_t)(16 * (H)) * k + l);    \
  } while (0)
  for (size_t l = 0; l < len; l++) {
    const __m512 va = _mm512_set1_ps(a[FR * l]); /* a: one row of an A panel ([l][FR]) */
    SR_STEP(c0, z0, z1, 0);
    SR_STEP(c1, z2, z3, 1);
  }
#undef SR_STEP
  _mm512_storeu_ps(out, c0);
  _mm512_storeu_ps(out + 16, c1);
}

static void lanes_sr(const lanes_ctx *x, size_t i0, size_t j0, size_t l0, const float *A, const float *Bp, size_t len,
                     float c[FR][FC]) {
  const gemm_plan *p = x->p;
  for (size_t r = 0; r < FR; r++)
    for (size_t h = 0; h < FC / 32; h++)
      sr_row32(x, ((uint64_t)(i0 + r) * p->n + j0 + 32 * h) * p->k + l0, A + r, Bp + 32 * h, len, c[r] + 32 * h);
}

typedef void (*lanes_fn)(const lanes_ctx *x, size_t i0, size_t j0, size_t l0, const float *A, const float *Bp,
                         size_t len, float c[FR][FC]);

/* The micro-kernel: the lanes' sums, then the reference for a lane that
 * ends NaN, or infinite where an overflow is not IEEE's (saturation). */
typedef struct lanes_micro_ctx {
  const lanes_ctx *x;
  lanes_fn kern;
  int ovf_inf; /* an overflow of the sum is +-inf, as the reference's */
} lanes_micro_ctx;

static void lanes_micro(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap, const void *Bp,
                        size_t rows, size_t cols, float *c) {
  const lanes_micro_ctx *mc = ctx;
  float (*cc)[FC] = (float (*)[FC])c;
  mc->kern(mc->x, i0, j0, l0, (const float *)Ap + l0 * FR, (const float *)Bp + l0 * FC, len, cc);
  int odd = 0; /* any lane NaN or infinite: one vectorized pass, then the lanes one by one */
  for (size_t t = 0; t < FR * FC; t++) odd |= !(fabsf(c[t]) <= FLT_MAX);
  if (!odd) return;
  for (size_t r = 0; r < rows; r++)
    for (size_t q = 0; q < cols; q++) {
      const float s = cc[r][q];
      if (isnan(s) || (isinf(s) && !mc->ovf_inf)) cc[r][q] = ref_piece(mc->x, i0 + r, j0 + q, l0, l0 + len);
    }
}

/* The whole GEMM on float lanes, on the blocking frame: op(A) in panels of
 * FR rows, B of FC columns, as floats (exact: lanes_apply), tasks of FR rows
 * x FC columns; the frame promotes the pieces and runs the row epilogue.
 * rne: an overflow is IEEE's (+-inf, which then stays), so the reference's
 * when the format rounds a finite overflow to +-inf (no saturation); a lane
 * that ends NaN, or infinite under saturation, is redone by the reference.
 * sr: lanes already took the reference step where needed.  0 when it does
 * not apply. */
int exmy__gemm_fast_lanes(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  if (!lanes_apply(p) || !__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) return 0;
  if (exmy__avx512_disabled()) return 0;
  const exmy_rounding *rnd = &p->acc.acc_rnd;
  const int sr = rnd->mode == EXMY_SR;
  lanes_ctx x = {p, &p->acc.acc_fmt, rnd, exmy__mix64(rnd->seed ^ exmy__mix64(rnd->stream + EXMY__GOLDEN_GAMMA)),
                 rnd->sr_bits <= 0 || rnd->sr_bits > 64 ? 64 : rnd->sr_bits, 0};
  const float vmax = (float)exmy_code_to_f64(x.f, x.f->max_mag);
  memcpy(&x.vmax_bits, &vmax, 4);
  const double big = ldexp(1.0, x.f->emax + 1);
  const lanes_micro_ctx mc = {&x, sr ? lanes_sr : x.f->ebits == 5 ? lanes_f16 : lanes_bf16,
                              sr || (exmy_code_to_f64(x.f, exmy_from_f64(x.f, rnd, big, 0, NULL)) == INFINITY &&
                                     exmy_code_to_f64(x.f, exmy_from_f64(x.f, rnd, -big, 0, NULL)) == -INFINITY)};
  const gemm_frame_kernel kd = {.ctx = &mc, .mr = FR, .nr = FC, .mt = FR, .pa = p->k * FR * sizeof(float),
                                .pb = p->k * FC * sizeof(float), .pack_a = exmy__gemm_pack_a_f32,
                                .pack_b = exmy__gemm_pack_b_f32, .micro = lanes_micro};
  return exmy__gemm_frame_run(&kd, p, nt, flags, amax);
}
#endif /* __x86_64__ */
