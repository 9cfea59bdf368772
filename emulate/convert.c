/* convert.c: array conversions.  The reference path calls the scalar
 * round-and-pack for each element, serially.  The fast path runs with OpenMP
 * and, for float32 input to formats that fit its preconditions, uses a
 * branch-free integer kernel on the float's bits that the compiler
 * vectorizes; tests/test_fastpath.c checks it equals the reference bit for
 * bit.  Stochastic rounding is a pure function of (seed, stream, index), so
 * results never depend on the thread count. */
#include "exmy.h"
#include "formats/internal.h"
#include "emulate/parallel.h"
#include "emulate/round_core.h"
#include "emulate/rng_avx512.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

uint64_t exmy_code_get(const exmy_format *f, const void *codes, size_t i) {
  switch (exmy_code_bytes(f)) {
  case 1: return ((const uint8_t *)codes)[i];
  case 2: return ((const uint16_t *)codes)[i];
  case 4: return ((const uint32_t *)codes)[i];
  default: return ((const uint64_t *)codes)[i];
  }
}

void exmy_code_set(const exmy_format *f, void *codes, size_t i, uint64_t code) {
  switch (exmy_code_bytes(f)) {
  case 1: ((uint8_t *)codes)[i] = (uint8_t)code; break;
  case 2: ((uint16_t *)codes)[i] = (uint16_t)code; break;
  case 4: ((uint32_t *)codes)[i] = (uint32_t)code; break;
  default: ((uint64_t *)codes)[i] = code; break;
  }
}

static uint64_t convert_one(const exmy_format *f, const exmy_rounding *r, exmy_dtype t,
                            const void *src, size_t i, uint64_t index, unsigned *fl) {
  switch (t) {
  case EXMY_DTYPE_F32: return exmy_from_f32(f, r, ((const float *)src)[i], index, fl);
  case EXMY_DTYPE_F64: return exmy_from_f64(f, r, ((const double *)src)[i], index, fl);
  case EXMY_DTYPE_BF16: return exmy_from_bf16(f, r, ((const uint16_t *)src)[i], index, fl);
  default: return exmy_from_f16(f, r, ((const uint16_t *)src)[i], index, fl);
  }
}

unsigned exmy__quantize_ref(const exmy_format *f, const exmy_rounding *r, exmy_dtype t,
                           const void *src, size_t n, uint64_t index0, void *codes) {
  unsigned fl = 0;
  for (size_t i = 0; i < n; i++) exmy_code_set(f, codes, i, convert_one(f, r, t, src, i, index0 + i, &fl));
  return fl;
}

/* ---- the float32 fast path -------------------------------------------- */

typedef struct fast_params {
  uint32_t M, shift0, max_mag, sub_limit, tiny_thr, sign_shift;
  int32_t emin;
  uint32_t keep_neg_zero, is_signed, daz, ftz;
  uint32_t ovf_code[2], inf_code[2], nan_code[2], negu_code;
  uint32_t ovf_fl[2], inf_fl[2], nan_fl[2], negu_fl;
  int32_t emin127;             /* emin + 127: the format's emin as a biased float exponent */
  uint32_t ovf_mag0, ovf_magx; /* overflow magnitude for +, and its xor with the one for - */
  uint32_t lean;               /* signed with -0: the hot loop applies */
  uint64_t sr_key;             /* stochastic rounding: the generator's key, mixed once from (seed, stream) */
  uint64_t sr_mask;            /* and the top sr_bits bits set: the part of the dropped fraction that counts */
  /* rne_hot (rne_ok): */
  uint32_t rne_ok;             /* rne, lean, no ftz/daz, 1 <= M <= 22 (M = 0: a code's lsb is not the float
                                  exponent's), and the grid below emin, 2^(emin - M), >= 2^-125 */
  uint32_t rne_half;           /* 2^(shift0 - 1) - 1: the bias that makes a carry round to nearest even */
  uint32_t rne_off;            /* (emin + 126) << M: float bits >> shift0 minus this is the format's magnitude */
  uint32_t low_mask;           /* 2^shift0 - 1: the bits a value at or above 2^emin drops */
  float sub_magic;             /* 2^(emin - M + 23): |x| + this rounds |x| to the grid 2^(emin - M) */
  uint32_t sub_magic_bits;
  uint32_t v512;               /* rne_ok, one overflow magnitude for both signs, and AVX-512 BW: rne_512 */
  uint32_t sr512;              /* sr, lean, no ftz/daz, codes of at most 16 bits, one overflow magnitude,
                                  AVX-512 BW+DQ: sr_512 (which uses rne_off and low_mask too) */
  uint32_t gshift;             /* SCALED 3: a scale per 2^gshift elements, 4..30 (a group holds whole
                                  16-lane vectors; BLOCK, a power of two too, whole groups or a
                                  part of one) */
  /* e8_hot (e8): */
  uint32_t e8;                 /* emin = -126 (binary32's: 8 exponent bits, bias 127, as bf16 and E8My),
                                  lean, no ftz/daz, 1 <= M <= 22, a deterministic mode: the format's
                                  magnitude is |x|'s bits rounded at bit shift0, subnormals too */
  uint32_t e8v512;             /* e8, one overflow magnitude for both signs, codes of at most 16 bits,
                                  AVX-512 BW: e8_512 */
} fast_params;

/* Preconditions: float's exponent range maps onto the format with one shift
 * per element, and codes fit 32 bits. */
static int fast_applies(const exmy_format *f, const exmy_rounding *r) {
  /* emin <= 128: the kernels compare |x|'s bits with (emin + 127) << 23 as signed 32-bit numbers */
  return f->has_zero && f->mbits <= 23 && f->emin >= -126 && f->emin <= 128 && f->bits <= 32 &&
         (f->max_mag >> f->mbits) != 0; /* not a format whose finite values are all subnormal */
}

static void fast_setup(const exmy_format *f, const exmy_rounding *r, fast_params *p) {
  memset(p, 0, sizeof *p);
  p->M = (uint32_t)f->mbits;
  p->shift0 = 23u - (uint32_t)f->mbits;
  p->max_mag = (uint32_t)f->max_mag;
  p->sub_limit = 1u << f->mbits;
  p->tiny_thr = (uint32_t)(f->emin + 127) << 23;
  p->sign_shift = f->is_signed ? (uint32_t)(f->bits - 1) : 0;
  p->emin = f->emin;
  p->is_signed = (uint32_t)f->is_signed;
  p->keep_neg_zero = exmy__zero_code(f, 1) != 0;
  p->daz = (uint32_t)(r->daz != 0);
  p->ftz = (uint32_t)(r->ftz != 0);
  /* the special results and their flags, from the core's policy */
  for (int s = 0; s < 2; s++) {
    unsigned fl = 0;
    p->ovf_code[s] = (uint32_t)exmy__overflow_result(f, r, s, &fl); p->ovf_fl[s] = fl; fl = 0;
    p->inf_code[s] = (uint32_t)exmy__inf_result(f, r, s, &fl); p->inf_fl[s] = fl; fl = 0;
    p->nan_code[s] = (uint32_t)exmy__nan_result(f, s, &fl); p->nan_fl[s] = fl;
  }
  unsigned fl = 0;
  p->negu_code = (uint32_t)exmy__neg_unsigned_result(f, &fl);
  p->negu_fl = fl;
  p->emin127 = f->emin + 127;
  p->ovf_mag0 = p->ovf_code[0] & (uint32_t)f->mag_mask;
  p->ovf_magx = p->ovf_mag0 ^ (p->ovf_code[1] & (uint32_t)f->mag_mask);
  p->lean = p->keep_neg_zero;
  const int R = (r->sr_bits <= 0 || r->sr_bits > 64) ? 64 : r->sr_bits;
  p->sr_key = exmy__mix64(r->seed ^ exmy__mix64(r->stream + EXMY__GOLDEN_GAMMA)); /* as exmy__random64 */
  p->sr_mask = R == 64 ? ~(uint64_t)0 : ~((((uint64_t)1) << (64 - R)) - 1);
  p->rne_ok = r->mode == EXMY_RNE && p->lean && !p->daz && !p->ftz && f->mbits >= 1 && f->mbits <= 22 &&
              f->emin - f->mbits >= -125 && f->emin - f->mbits + 23 <= 127;
  p->rne_off = (uint32_t)(f->emin + 126) << f->mbits;
  p->low_mask = (1u << p->shift0) - 1u;
#if defined(__x86_64__) && defined(__GNUC__)
  p->sr512 = r->mode == EXMY_SR && p->lean && !p->daz && !p->ftz && p->ovf_magx == 0 && f->bits <= 16 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && !exmy__avx512_disabled();
#endif
  /* emin = -126: a format value's biased exponent is the float's, and its
   * grid below 2^-126 is the float subnormals' grid 2^-149 times 2^shift0, so
   * rounding |x|'s bits at bit shift0 is the core's rounding in every binade,
   * the carry into the exponent (and past the largest finite magnitude)
   * included.  M >= 1: the code's lsb is a mantissa bit (the core's kept lsb);
   * M <= 22: at least one bit is dropped. */
  p->e8 = r->mode != EXMY_SR && r->mode <= EXMY_RTO && p->lean && !p->daz && !p->ftz && f->emin == -126 &&
          f->mbits >= 1 && f->mbits <= 22;
  if (p->e8) {
    p->rne_half = (1u << (p->shift0 - 1)) - 1u;
#if defined(__x86_64__) && defined(__GNUC__)
    p->e8v512 = p->ovf_magx == 0 && f->bits <= 16 && __builtin_cpu_supports("avx512f") &&
                __builtin_cpu_supports("avx512bw") && !exmy__avx512_disabled();
#endif
  }
  if (p->rne_ok) {
    p->rne_half = (1u << (p->shift0 - 1)) - 1u;
    p->sub_magic = ldexpf(1.0f, f->emin - f->mbits + 23);
    memcpy(&p->sub_magic_bits, &p->sub_magic, 4);
#if defined(__x86_64__) && defined(__GNUC__)
    p->v512 = p->ovf_magx == 0 && f->bits <= 16 && __builtin_cpu_supports("avx512f") &&
              __builtin_cpu_supports("avx512bw") && !exmy__avx512_disabled();
#endif
  }
}

/* The stochastic-rounding increment of round_pack, for a significand
 * sig < 2^24 of which d >= 0 low bits are dropped (not capped) and the
 * element's random word u: the carry out of F + u, F the dropped part's top
 * 64 bits, left-aligned, cut to the top sr_bits (sr_mask).  The carry of
 * the cut F plus the whole u is the carry of the two cut words, as the core
 * computes it (the cut-off low bits of F are zero). */
static inline __attribute__((always_inline)) uint32_t sr_inc(uint32_t sig, int32_t d, uint64_t u, uint64_t mask) {
  const uint64_t s = sig;
  const int32_t dr = d - 64 < 63 ? d - 64 : 63;
  uint64_t F = d < 64 ? s << ((64 - d) & 63) : s >> (dr & 63);
  F = d == 0 ? 0 : F;
  F &= mask;
  return (uint32_t)(F + u < F);
}

/* The element's random word: SplitMix64's mixer of key + (index + 1) * gamma
 * (exmy__random64 with the key mixed once); ctr is key + (index + 1) * gamma. */
static inline __attribute__((always_inline)) uint64_t sr_word(uint64_t ctr) { return exmy__mix64(ctr); }

/* Branch-free select: c is 0 or 1. */
static inline __attribute__((always_inline)) uint32_t sel(uint32_t c, uint32_t x, uint32_t y) {
  return y ^ ((x ^ y) & (0u - c));
}

/* One element; MODE is a compile-time constant at each use, so the switch
 * folds away, and every choice is a select, so the loop vectorizes. */
static inline __attribute__((always_inline)) uint32_t fast_one(const fast_params *p, uint32_t u, const int mode,
                                                               uint64_t rnd, unsigned *flp) {
  const uint32_t s = u >> 31;
  uint32_t a = u & 0x7fffffffu;
  const uint32_t ef = a >> 23;
  const uint32_t is_nan = a > 0x7f800000u, is_inf = a == 0x7f800000u;
  const uint32_t normal = ef != 0;
  a = sel(p->daz & (normal ^ 1u), 0, a);
  const uint32_t sig = (a & 0x7fffffu) | (normal << 23);
  const int32_t eu = (int32_t)sel(normal, ef, 1) - 127;
  const int32_t te = (int32_t)sel(eu > p->emin, (uint32_t)eu, (uint32_t)p->emin);
  const uint32_t d = p->shift0 + (uint32_t)(te - eu);
  const uint32_t sh = sel(d > 25, 25, d);
  uint32_t kept = sig >> sh;
  const uint32_t rem = sig & ((1u << sh) - 1u);
  const uint32_t half = (1u << sh) >> 1;
  const uint32_t inexact = rem != 0;
  const uint32_t inc = mode == EXMY_SR ? sr_inc(sig, (int32_t)d, rnd, p->sr_mask)
                                       : exmy__round_inc(mode, rem > half, (rem == half) & inexact, inexact, kept & 1u, s);
  kept |= exmy__round_jam(mode, inexact);
  uint32_t mag = ((uint32_t)(te - p->emin) << p->M) + kept + inc;
  uint32_t fl = inexact * EXMY_FLAG_INEXACT | ((a < p->tiny_thr) & inexact) * EXMY_FLAG_UNDERFLOW;
  const uint32_t flush = p->ftz & (mag != 0) & (mag < p->sub_limit);
  fl |= flush * (EXMY_FLAG_UNDERFLOW | EXMY_FLAG_INEXACT);
  mag = sel(flush, 0, mag);
  const uint32_t sbit = sel((mag != 0) | p->keep_neg_zero, s << p->sign_shift, 0);
  uint32_t code = sel(p->is_signed, sbit | mag, mag);
  const uint32_t ovf = mag > p->max_mag;
  code = sel(ovf, sel(s, p->ovf_code[1], p->ovf_code[0]), code);
  fl = sel(ovf, sel(s, p->ovf_fl[1], p->ovf_fl[0]), fl);
  const uint32_t negu = (p->is_signed ^ 1u) & s & (a != 0);
  code = sel(negu, p->negu_code, code);
  fl = sel(negu, p->negu_fl, fl);
  code = sel(is_inf, sel(s, p->inf_code[1], p->inf_code[0]), code);
  fl = sel(is_inf, sel(s, p->inf_fl[1], p->inf_fl[0]), fl);
  code = sel(is_nan, sel(s, p->nan_code[1], p->nan_code[0]), code);
  fl = sel(is_nan, sel(s, p->nan_fl[1], p->nan_fl[0]), fl);
  *flp = fl;
  return code;
}

/* Integer-only code: an AVX2 clone (variable shifts) gives the same bits as
 * the baseline one; the loader picks one at run time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define EXMY_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define EXMY_CLONES
#endif

/* The hot loop for the common case: a signed format with -0, no ftz/daz,
 * finite inputs.  Overflow is handled inline, flags are accumulated per
 * block, and any NaN/inf input only marks the block, which is then redone
 * with the full kernel.  Values compared are below 2^31, so signed compares
 * (native in AVX2) give the unsigned answer. */
static inline __attribute__((always_inline)) uint32_t fast_hot(const fast_params *p, uint32_t u, const int mode,
                                                               uint32_t rhi, uint32_t *any_far, uint32_t *any_rem, uint32_t *any_tiny_rem,
                                                               uint32_t *any_ovf, uint32_t *max_a) {
  const uint32_t smask = (uint32_t)((int32_t)u >> 31); /* all ones when negative */
  const uint32_t a = u & 0x7fffffffu;
  const int32_t efc = (int32_t)sel((a >> 23) != 0, a >> 23, 1);    /* biased exponent, subnormals as 1 */
  const uint32_t sig = a - ((uint32_t)(efc - 1) << 23);              /* significand with hidden bit */
  const int32_t de = p->emin127 - efc;                               /* bits below the format's emin */
  const int32_t below = de > 0 ? de : 0;
  const int32_t d = (int32_t)p->shift0 + below;                      /* bits dropped */
  const int32_t sh = d > 25 ? 25 : d;
  uint32_t kept = sig >> sh;
  const uint32_t p2 = 1u << sh;
  const uint32_t rem = sig & (p2 - 1u);
  const int32_t half = (int32_t)(p2 >> 1);
  const uint32_t inexact = rem != 0;
  uint32_t inc;
  if (mode == EXMY_SR) {
    /* d <= 32: the dropped part lies in the top 32 bits of F, so only the
     * random word's top 32 bits can carry; a lane with d > 32 and a nonzero
     * dropped part marks the block, which is then redone by fast_one.  A zero
     * (rem = 0: F = 0, fh = 0, no carry) does not: every block with a zero
     * used to be redone (ReLU outputs, sparse gradients). */
    uint32_t fh = rem << ((32 - d) & 31);
    fh = sel(d == 0, 0, fh);
    fh &= (uint32_t)(p->sr_mask >> 32);
    inc = fh + rhi < fh;
    *any_far |= (d > 32) & (rem != 0);
  } else {
    inc = exmy__round_inc(mode, (int32_t)rem > half, ((int32_t)rem == half) & inexact, inexact, kept & 1u,
                          smask & 1u);
  }
  kept |= exmy__round_jam(mode, inexact);
  const int32_t up = efc - p->emin127;                               /* te - emin when above emin */
  uint32_t mag = ((uint32_t)(up > 0 ? up : 0) << p->M) + kept + inc;
  const uint32_t ovf = (int32_t)mag > (int32_t)p->max_mag;
  mag = sel(ovf, p->ovf_mag0 ^ (smask & p->ovf_magx), mag);
  *any_ovf |= ovf;
  *any_rem |= rem;
  *any_tiny_rem |= sel((int32_t)a < (int32_t)p->tiny_thr, rem, 0);
  *max_a = (int32_t)a > (int32_t)*max_a ? a : *max_a;
  return mag | ((smask & 1u) << p->sign_shift);
}

/* fast_hot for rne (p->rne_ok) in fewer operations: at or above 2^emin the
 * float's bits plus 2^(shift0 - 1) - 1 plus the kept lsb, shifted, are the
 * rounded magnitude (a carry moves into the exponent as it should); below,
 * one float addition of 2^(emin - M + 23) rounds |x| to the grid 2^(emin - M)
 * (its ulp), and the sum's bits minus the constant's count grid steps.  The
 * floating-point environment: round to nearest (as all float kernels); DAZ
 * and FTZ change nothing, since |x| < 2^-126 rounds to 0 on a grid >= 2^-125
 * and the sum and its difference with the constant are normal or 0.  Tiny
 * lanes are inexact when the grid value differs from |x|; the others when
 * low_mask bits are set (also set for an inexact tiny lane). */
static inline __attribute__((always_inline)) uint32_t rne_hot(const fast_params *p, uint32_t u, uint32_t *any_rem,
                                                              uint32_t *any_tiny_inx, uint32_t *any_ovf,
                                                              uint32_t *max_a) {
  const uint32_t smask = (uint32_t)((int32_t)u >> 31);
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t cn = ((a + p->rne_half + ((a >> p->shift0) & 1u)) >> p->shift0) - p->rne_off;
  float fa, back;
  memcpy(&fa, &a, 4);
  const float fs = fa + p->sub_magic;
  back = fs - p->sub_magic; /* exact (Sterbenz): the grid value */
  uint32_t fsb, bb;
  memcpy(&fsb, &fs, 4);
  memcpy(&bb, &back, 4);
  const uint32_t tiny = (int32_t)a < (int32_t)p->tiny_thr;
  uint32_t mag = sel(tiny, fsb - p->sub_magic_bits, cn);
  const uint32_t ovf = (int32_t)mag > (int32_t)p->max_mag;
  mag = sel(ovf, p->ovf_mag0 ^ (smask & p->ovf_magx), mag);
  *any_ovf |= ovf;
  *any_rem |= a & p->low_mask;
  *any_tiny_inx |= tiny & (bb != a);
  *max_a = (int32_t)a > (int32_t)*max_a ? a : *max_a;
  return mag | ((smask & 1u) << p->sign_shift);
}

/* fast_hot for the 8-exponent-bit formats (p->e8): the float's bits plus
 * the mode's increment at bit shift0 - 1 (rne: 2^(shift0 - 1) - 1 plus the
 * kept lsb; rna: 2^(shift0 - 1); rup, rdn: low_mask on the side away from
 * zero), shifted right by shift0, are the rounded magnitude (rto: the cut
 * bits with the inexact bit OR-ed in).  Inexact: low_mask bits set; tiny:
 * below 2^-126 (a float subnormal).  Flags and overflow as fast_hot leaves
 * them. */
static inline __attribute__((always_inline)) uint32_t e8_inc(const fast_params *p, uint32_t a, uint32_t smask,
                                                             const int mode) {
  switch (mode) {
  case EXMY_RNE: return p->rne_half + ((a >> p->shift0) & 1u);
  case EXMY_RNA: return p->rne_half + 1u;
  case EXMY_RUP: return p->low_mask & ~smask;
  case EXMY_RDN: return p->low_mask & smask;
  default: return 0; /* rtz, rto */
  }
}
static inline __attribute__((always_inline)) uint32_t e8_hot(const fast_params *p, uint32_t u, const int mode,
                                                             uint32_t *any_rem, uint32_t *any_tiny_rem,
                                                             uint32_t *any_ovf, uint32_t *max_a) {
  const uint32_t smask = (uint32_t)((int32_t)u >> 31);
  const uint32_t a = u & 0x7fffffffu;
  const uint32_t rem = a & p->low_mask;
  uint32_t mag = (a + e8_inc(p, a, smask, mode)) >> p->shift0;
  mag |= exmy__round_jam(mode, rem != 0);
  const uint32_t ovf = (int32_t)mag > (int32_t)p->max_mag;
  mag = sel(ovf, p->ovf_mag0 ^ (smask & p->ovf_magx), mag);
  *any_ovf |= ovf;
  *any_rem |= rem;
  *any_tiny_rem |= sel((int32_t)a < (int32_t)p->tiny_thr, rem, 0);
  *max_a = (int32_t)a > (int32_t)*max_a ? a : *max_a;
  return mag | ((smask & 1u) << p->sign_shift);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The 16-lane kernels' common parts.  load16: elements i.. of x under mask
 * k, times scale (SCALED 1), sc[i] (2) or sc[i >> gs] (3; i a multiple of 16). */
__attribute__((target("avx512f"), always_inline)) static inline __m512 load16(const float *restrict in, float scale,
                                                                              const float *restrict sc, int scaled,
                                                                              uint32_t gs, size_t i, __mmask16 k) {
  __m512 x = _mm512_maskz_loadu_ps(k, in + i);
  if (scaled == 1) x = _mm512_mul_ps(x, _mm512_set1_ps(scale));
  else if (scaled == 2) x = _mm512_mul_ps(x, _mm512_maskz_loadu_ps(k, sc + i));
  else if (scaled == 3) x = _mm512_mul_ps(x, _mm512_set1_ps(sc[i >> gs]));
  return x;
}

/* Magnitudes above max_mag become the overflow magnitude (noted in *ov);
 * then u's sign is added and the 8-bit (W = 1) or 16-bit codes stored. */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void store16(const fast_params *p, __m512i mag,
                                                                                     __m512i u, void *restrict out,
                                                                                     int W, size_t i, __mmask16 k,
                                                                                     __mmask16 *ov) {
  const __mmask16 o = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32((int)p->max_mag));
  *ov |= o;
  mag = _mm512_mask_mov_epi32(mag, o, _mm512_set1_epi32((int)p->ovf_mag0));
  const __m512i sgn = _mm512_srl_epi32(u, _mm_cvtsi32_si128((int)(31 - p->sign_shift)));
  const __m512i code = _mm512_ternarylogic_epi32(mag, sgn, _mm512_set1_epi32((int)(1u << p->sign_shift)),
                                                 0xf8); /* mag | (s & sbit) */
  if (W == 1) _mm512_mask_cvtepi32_storeu_epi8((uint8_t *)out + i, k, code);
  else _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)out + i, k, code);
}

/* The block's ORed dropped bits, tiny-inexact, overflow and max |x| bits
 * into acc, as rne_hot and fast_hot leave them. */
__attribute__((target("avx512f"), always_inline)) static inline void acc16(uint32_t acc[4], __m512i rem, __mmask16 ti,
                                                                          __mmask16 ov, __m512i maxa) {
  acc[0] |= (uint32_t)_mm512_reduce_or_epi32(rem);
  acc[1] |= ti != 0;
  acc[2] |= ov != 0;
  const uint32_t mx = (uint32_t)_mm512_reduce_max_epi32(maxa);
  acc[3] = mx > acc[3] ? mx : acc[3];
}

/* rne_hot on 16 lanes with AVX-512 (p->v512), a block of m elements of
 * x (times scale, or times sc[i] when SCALED is 2) into 8-bit (W = 1) or
 * 16-bit codes; the tail through masked loads (their zero lanes are exact
 * and below every threshold).  The compiler's form of rne_hot spills and
 * packs bytes through word permutes; this is about 24 operations a vector.
 * acc: the block's ORed low bits, tiny-inexact, overflow and max |x| bits,
 * as rne_hot leaves them. */
__attribute__((target("avx512f,avx512bw"))) static void rne_512(const fast_params *p, const float *restrict in,
                                                               float scale, const float *restrict sc, int scaled,
                                                               void *restrict out, int W, size_t m, uint32_t acc[4]) {
  const __m512i absm = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
  const __m512i half = _mm512_set1_epi32((int)p->rne_half), off = _mm512_set1_epi32((int)p->rne_off);
  const __m512i lowm = _mm512_set1_epi32((int)p->low_mask), tiny_thr = _mm512_set1_epi32((int)p->tiny_thr);
  const __m512i magic_b = _mm512_set1_epi32((int)p->sub_magic_bits);
  const __m512 magic = _mm512_set1_ps(p->sub_magic);
  const __m128i sh0 = _mm_cvtsi32_si128((int)p->shift0);
  __m512i rem = _mm512_setzero_si512(), maxa = rem;
  __mmask16 ti = 0, ov = 0;
  for (size_t i = 0; i < m; i += 16) {
    const __mmask16 k = m - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (m - i)) - 1);
    const __m512 x = load16(in, scale, sc, scaled, p->gshift, i, k);
    const __m512i u = _mm512_castps_si512(x), a = _mm512_and_si512(u, absm);
    const __m512i lsb = _mm512_and_si512(_mm512_srl_epi32(a, sh0), one);
    const __m512i cn = _mm512_sub_epi32(_mm512_srl_epi32(_mm512_add_epi32(_mm512_add_epi32(a, half), lsb), sh0), off);
    const __m512 fs = _mm512_add_ps(_mm512_castsi512_ps(a), magic);
    const __m512i back = _mm512_castps_si512(_mm512_sub_ps(fs, magic));
    const __mmask16 tiny = _mm512_cmplt_epi32_mask(a, tiny_thr);
    ti |= _mm512_mask_cmpneq_epi32_mask(tiny, back, a);
    const __m512i mag = _mm512_mask_blend_epi32(tiny, cn, _mm512_sub_epi32(_mm512_castps_si512(fs), magic_b));
    rem = _mm512_ternarylogic_epi32(rem, a, lowm, 0xf8); /* rem | (a & lowm) */
    maxa = _mm512_max_epi32(maxa, a);
    store16(p, mag, u, out, W, i, k, &ov);
  }
  acc16(acc, rem, ti, ov, maxa);
}

/* e8_hot on 16 lanes with AVX-512 (p->e8v512), a block as rne_512 takes
 * it; MODE a constant (one function per mode below).  acc: as rne_512's. */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline void
e8_512_body(const fast_params *p, const float *restrict in, float scale, const float *restrict sc, int scaled,
            void *restrict out, int W, size_t m, uint32_t acc[4], const int mode) {
  const __m512i absm = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1);
  const __m512i half = _mm512_set1_epi32((int)p->rne_half), lowm = _mm512_set1_epi32((int)p->low_mask);
  const __m512i tiny_thr = _mm512_set1_epi32((int)p->tiny_thr);
  const __m128i sh0 = _mm_cvtsi32_si128((int)p->shift0);
  __m512i rem = _mm512_setzero_si512(), maxa = rem;
  __mmask16 ti = 0, ov = 0;
  for (size_t i = 0; i < m; i += 16) {
    const __mmask16 k = m - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (m - i)) - 1);
    const __m512 x = load16(in, scale, sc, scaled, p->gshift, i, k);
    const __m512i u = _mm512_castps_si512(x), a = _mm512_and_si512(u, absm);
    __m512i t;
    switch (mode) {
    case EXMY_RNE: t = _mm512_add_epi32(_mm512_add_epi32(a, half), _mm512_and_si512(_mm512_srl_epi32(a, sh0), one)); break;
    case EXMY_RNA: t = _mm512_add_epi32(a, _mm512_add_epi32(half, one)); break;
    case EXMY_RUP: t = _mm512_add_epi32(a, _mm512_andnot_si512(_mm512_srai_epi32(u, 31), lowm)); break;
    case EXMY_RDN: t = _mm512_add_epi32(a, _mm512_and_si512(_mm512_srai_epi32(u, 31), lowm)); break;
    default: t = a; break;
    }
    __m512i mag = _mm512_srl_epi32(t, sh0);
    if (mode == EXMY_RTO) mag = _mm512_mask_or_epi32(mag, _mm512_test_epi32_mask(a, lowm), mag, one);
    const __mmask16 tiny = _mm512_cmplt_epi32_mask(a, tiny_thr);
    ti |= _mm512_mask_test_epi32_mask(tiny, a, lowm);
    rem = _mm512_ternarylogic_epi32(rem, a, lowm, 0xf8); /* rem | (a & lowm) */
    maxa = _mm512_max_epi32(maxa, a);
    store16(p, mag, u, out, W, i, k, &ov);
  }
  acc16(acc, rem, ti, ov, maxa);
}
#define E8_512_FN(SUF, MODE)                                                                                     \
  __attribute__((target("avx512f,avx512bw"))) static void e8_512_##SUF(                                          \
      const fast_params *p, const float *restrict in, float scale, const float *restrict sc, int scaled,        \
      void *restrict out, int W, size_t m, uint32_t acc[4]) {                                                     \
    e8_512_body(p, in, scale, sc, scaled, out, W, m, acc, MODE);                                                  \
  }
E8_512_FN(rne, EXMY_RNE)
E8_512_FN(rna, EXMY_RNA)
E8_512_FN(rtz, EXMY_RTZ)
E8_512_FN(rup, EXMY_RUP)
E8_512_FN(rdn, EXMY_RDN)
E8_512_FN(rto, EXMY_RTO)
/* MODE a constant at each call: folds to one call */
static inline __attribute__((always_inline)) void e8_512(const fast_params *p, const float *restrict in, float scale,
                                                        const float *restrict sc, int scaled, void *restrict out,
                                                        int W, size_t m, uint32_t acc[4], const int mode) {
  switch (mode) {
  case EXMY_RNE: e8_512_rne(p, in, scale, sc, scaled, out, W, m, acc); break;
  case EXMY_RNA: e8_512_rna(p, in, scale, sc, scaled, out, W, m, acc); break;
  case EXMY_RTZ: e8_512_rtz(p, in, scale, sc, scaled, out, W, m, acc); break;
  case EXMY_RUP: e8_512_rup(p, in, scale, sc, scaled, out, W, m, acc); break;
  case EXMY_RDN: e8_512_rdn(p, in, scale, sc, scaled, out, W, m, acc); break;
  case EXMY_RTO: e8_512_rto(p, in, scale, sc, scaled, out, W, m, acc); break;
  default: break; /* sr: never (p->e8 is 0) */
  }
}

/* fast_hot for sr on 16 lanes with AVX-512 (p->sr512), a block of m
 * elements as rne_512 takes them, element 0's counter ctr.  A vector whose
 * lanes are all zero or at or above 2^emin takes the short form: the
 * magnitude is the bits >> shift0 minus rne_off, plus the carry of the
 * dropped bits, left-aligned, plus the random word's top half.  Otherwise
 * the general one, fast_hot's (variable shifts count 32 or more as all
 * bits out).  acc: as rne_512's, and acc[4] set by a lane with more than 32
 * dropped bits and a nonzero dropped part (fast_hot's any_far: the caller
 * redoes the block). */
__attribute__((target("avx512f,avx512bw,avx512dq"))) static void sr_512(const fast_params *p, const float *restrict in,
                                                                       float scale, const float *restrict sc,
                                                                       int scaled, void *restrict out, int W, size_t m,
                                                                       uint64_t ctr, uint32_t acc[5]) {
  const __m512i absm = _mm512_set1_epi32(0x7fffffff), one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512();
  const __m512i off = _mm512_set1_epi32((int)p->rne_off), lowm = _mm512_set1_epi32((int)p->low_mask);
  const __m512i tiny_thr = _mm512_set1_epi32((int)p->tiny_thr);
  const __m512i mhi = _mm512_set1_epi32((int)(uint32_t)(p->sr_mask >> 32));
  const __m512i emin127 = _mm512_set1_epi32(p->emin127), sh0v = _mm512_set1_epi32((int)p->shift0);
  const __m512i c32 = _mm512_set1_epi32(32);
  const __m128i sh0 = _mm_cvtsi32_si128((int)p->shift0), fsh = _mm_cvtsi32_si128((int)(32 - p->shift0));
  const __m128i msh = _mm_cvtsi32_si128((int)p->M);
  const __m512i g2 = _mm512_set1_epi64((long long)(2 * EXMY__GOLDEN_GAMMA));
  const __m512i g16 = _mm512_set1_epi64((long long)(16 * EXMY__GOLDEN_GAMMA));
  __m512i ev = _mm512_add_epi64(_mm512_set1_epi64((long long)ctr),
                                _mm512_mullo_epi64(_mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7), g2));
  __m512i od = _mm512_add_epi64(ev, _mm512_set1_epi64((long long)EXMY__GOLDEN_GAMMA));
  __m512i rem = zero, maxa = zero;
  __mmask16 ti = 0, ov = 0, far = 0;
  for (size_t i = 0; i < m; i += 16) {
    const __mmask16 k = m - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (m - i)) - 1);
    const __m512 x = load16(in, scale, sc, scaled, p->gshift, i, k);
    const __m512i u = _mm512_castps_si512(x), a = _mm512_and_si512(u, absm);
    const __m512i rhi = exmy__mix64_hi16(ev, od);
    ev = _mm512_add_epi64(ev, g16);
    od = _mm512_add_epi64(od, g16);
    const __mmask16 tiny = _mm512_cmplt_epi32_mask(a, tiny_thr);
    __m512i mag, fh, r;
    if ((tiny & _mm512_test_epi32_mask(a, a)) == 0) {
      /* zeros and lanes at or above 2^emin (zeros: no dropped bits, magnitude 0) */
      r = _mm512_and_si512(a, lowm);
      fh = _mm512_and_si512(_mm512_sll_epi32(a, fsh), mhi);
      mag = _mm512_maskz_sub_epi32((__mmask16)~tiny, _mm512_srl_epi32(a, sh0), off);
    } else {
      const __m512i efc = _mm512_max_epi32(_mm512_srli_epi32(a, 23), one);
      const __m512i sig = _mm512_sub_epi32(a, _mm512_slli_epi32(_mm512_sub_epi32(efc, one), 23));
      const __m512i d = _mm512_add_epi32(sh0v, _mm512_max_epi32(_mm512_sub_epi32(emin127, efc), zero));
      const __m512i kept = _mm512_srlv_epi32(sig, d);
      r = _mm512_sub_epi32(sig, _mm512_sllv_epi32(kept, d));
      fh = _mm512_and_si512(_mm512_sllv_epi32(r, _mm512_sub_epi32(c32, d)), mhi);
      far |= _mm512_mask_cmpgt_epi32_mask(_mm512_test_epi32_mask(r, r), d, c32);
      ti |= _mm512_mask_test_epi32_mask(tiny, r, r);
      const __m512i up = _mm512_max_epi32(_mm512_sub_epi32(efc, emin127), zero);
      mag = _mm512_add_epi32(_mm512_sll_epi32(up, msh), kept);
    }
    const __mmask16 carry = _mm512_cmplt_epu32_mask(_mm512_add_epi32(fh, rhi), fh);
    mag = _mm512_mask_add_epi32(mag, carry, mag, one);
    rem = _mm512_or_si512(rem, r);
    maxa = _mm512_max_epi32(maxa, a);
    store16(p, mag, u, out, W, i, k, &ov);
  }
  acc16(acc, rem, ti, ov, maxa);
  acc[4] |= far != 0;
}
#endif

/* The element the kernels see: x's bits, or fp32(x * scale)'s for the scaled
 * variants the scaling recipes use (one fp32 multiply, then the cast). */
static inline __attribute__((always_inline)) uint32_t load_bits(const float *in, size_t i, float scale,
                                                                const float *sc, int scaled, uint32_t gs) {
  float v = scaled == 3 ? in[i] * sc[i >> gs] : scaled == 2 ? in[i] * sc[i] : scaled ? in[i] * scale : in[i];
  uint32_t u;
  memcpy(&u, &v, 4);
  return u;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define RNE512(MODE, T) ((MODE) == EXMY_RNE && sizeof(T) <= 2 && p.v512)
#define SR512(MODE, T) ((MODE) == EXMY_SR && sizeof(T) <= 2 && p.sr512)
#define E8512(MODE, T) ((MODE) != EXMY_SR && sizeof(T) <= 2 && p.e8v512)
#else /* no AVX-512 kernels: never called */
#define RNE512(MODE, T) 0
#define SR512(MODE, T) 0
#define E8512(MODE, T) 0
#define e8_512(...) ((void)0)
#define rne_512(...) ((void)0)
#define sr_512(...) ((void)0)
#endif
#define BLOCK 2048
/* The random word of element i of a run whose element 0 has counter ctr0
 * (0 outside stochastic rounding: the compiler drops it). */
#define RND(MODE, ctr0, i) ((MODE) == EXMY_SR ? sr_word((ctr0) + (uint64_t)(i) * EXMY__GOLDEN_GAMMA) : 0)
/* The block at element b's scales: per element, or per group (SCALED 3; b a multiple of
 * BLOCK: the block lies in one group, or holds whole ones). */
#define SC_AT(SCALED, sc, b) ((sc) ? (SCALED) == 3 ? (sc) + ((b) >> p.gshift) : (sc) + (b) : (sc))
#define CHUNK_FN(NAME, T, MODE, SCALED)                                                      \
  EXMY_CLONES static unsigned NAME(const fast_params *pp, const float *restrict in, float scale, \
                                   const float *restrict sc, T *restrict out, size_t n, uint64_t index0) { \
    const fast_params p = *pp;                                                               \
    const uint64_t ctr = p.sr_key + (index0 + 1) * EXMY__GOLDEN_GAMMA;                       \
    unsigned fl = 0;                                                                         \
    if (p.daz | p.ftz | !p.lean) {                                                           \
      for (size_t i = 0; i < n; i++) {                                                       \
        unsigned f1;                                                                         \
        out[i] = (T)fast_one(&p, load_bits(in, i, scale, sc, SCALED, p.gshift), MODE, RND(MODE, ctr, i), &f1); \
        fl |= f1;                                                                            \
      }                                                                                      \
      return fl;                                                                             \
    }                                                                                        \
    for (size_t b = 0; b < n; b += BLOCK) {                                                  \
      const size_t m = n - b < BLOCK ? n - b : BLOCK;                                        \
      const float *bin = in + b;                                                             \
      T *bout = out + b;                                                                     \
      const uint64_t bctr = ctr + (uint64_t)b * EXMY__GOLDEN_GAMMA;                          \
      uint32_t inx = 0, tiny = 0, ovf = 0, max_a = 0, far = 0;                               \
      if (RNE512(MODE, T)) {                                                                 \
        uint32_t acc[4] = {0, 0, 0, 0};                                                      \
        rne_512(&p, bin, scale, SC_AT(SCALED, sc, b), SCALED, bout, (int)sizeof(T), m, acc);     \
        inx = acc[0], tiny = acc[1], ovf = acc[2], max_a = acc[3];                           \
      } else if (SR512(MODE, T)) {                                                           \
        uint32_t acc[5] = {0, 0, 0, 0, 0};                                                   \
        sr_512(&p, bin, scale, SC_AT(SCALED, sc, b), SCALED, bout, (int)sizeof(T), m, bctr, acc); \
        inx = acc[0], tiny = acc[1], ovf = acc[2], max_a = acc[3], far = acc[4];             \
      } else if (E8512(MODE, T)) {                                                           \
        uint32_t acc[4] = {0, 0, 0, 0};                                                      \
        e8_512(&p, bin, scale, SC_AT(SCALED, sc, b), SCALED, bout, (int)sizeof(T), m, acc, MODE); \
        inx = acc[0], tiny = acc[1], ovf = acc[2], max_a = acc[3];                           \
      } else if (MODE != EXMY_SR && p.e8)                                                    \
        for (size_t i = 0; i < m; i++)                                                       \
          bout[i] = (T)e8_hot(&p, load_bits(bin, i, scale, SC_AT(SCALED, sc, b), SCALED, p.gshift), MODE, &inx, &tiny, &ovf, &max_a); \
      else if (MODE == EXMY_RNE && p.rne_ok)                                               \
        for (size_t i = 0; i < m; i++)                                                       \
          bout[i] = (T)rne_hot(&p, load_bits(bin, i, scale, SC_AT(SCALED, sc, b), SCALED, p.gshift), &inx, &tiny, &ovf, &max_a); \
      else                                                                                   \
        for (size_t i = 0; i < m; i++)                                                       \
          bout[i] = (T)fast_hot(&p, load_bits(bin, i, scale, SC_AT(SCALED, sc, b), SCALED, p.gshift), MODE, \
                                (uint32_t)(RND(MODE, bctr, i) >> 32), &far, &inx, &tiny, &ovf, &max_a); \
      if ((max_a >= 0x7f800000u) | far) {                                                    \
        for (size_t i = 0; i < m; i++) {                                                     \
          unsigned f1;                                                                       \
          bout[i] = (T)fast_one(&p, load_bits(bin, i, scale, SC_AT(SCALED, sc, b), SCALED, p.gshift), MODE, RND(MODE, bctr, i), &f1); \
          fl |= f1;                                                                          \
        }                                                                                    \
      } else {                                                                               \
        fl |= ((inx | tiny) ? EXMY_FLAG_INEXACT : 0) | (tiny ? EXMY_FLAG_UNDERFLOW : 0) |             \
              (ovf ? (EXMY_FLAG_OVERFLOW | EXMY_FLAG_INEXACT) : 0);                          \
      }                                                                                      \
    }                                                                                        \
    return fl;                                                                               \
  }
#define CHUNK_FNS(MODE, SUF)                          \
  CHUNK_FN(chunk8_##SUF, uint8_t, MODE, 0)            \
  CHUNK_FN(chunk16_##SUF, uint16_t, MODE, 0)          \
  CHUNK_FN(chunk32_##SUF, uint32_t, MODE, 0)          \
  CHUNK_FN(schunk8_##SUF, uint8_t, MODE, 1)           \
  CHUNK_FN(schunk16_##SUF, uint16_t, MODE, 1)         \
  CHUNK_FN(schunk32_##SUF, uint32_t, MODE, 1)          \
  CHUNK_FN(vchunk8_##SUF, uint8_t, MODE, 2)           \
  CHUNK_FN(vchunk16_##SUF, uint16_t, MODE, 2)         \
  CHUNK_FN(vchunk32_##SUF, uint32_t, MODE, 2)
CHUNK_FNS(EXMY_RNE, rne)
/* a scale per 2^p.gshift elements (MX's groups of 32, block:1x128), the round-to-nearest and sr kernels */
CHUNK_FN(gchunk8_rne, uint8_t, EXMY_RNE, 3)
CHUNK_FN(gchunk16_rne, uint16_t, EXMY_RNE, 3)
CHUNK_FN(gchunk32_rne, uint32_t, EXMY_RNE, 3)
CHUNK_FN(gchunk8_sr, uint8_t, EXMY_SR, 3)
CHUNK_FN(gchunk16_sr, uint16_t, EXMY_SR, 3)
CHUNK_FN(gchunk32_sr, uint32_t, EXMY_SR, 3)
CHUNK_FNS(EXMY_RNA, rna)
CHUNK_FNS(EXMY_RTZ, rtz)
CHUNK_FNS(EXMY_RUP, rup)
CHUNK_FNS(EXMY_RDN, rdn)
CHUNK_FNS(EXMY_RTO, rto)
CHUNK_FNS(EXMY_SR, sr)

/* indexed by exmy_round_mode (RNE .. RTO, SR) and code width */
typedef unsigned (*chunk_fn)(const fast_params *, const float *, float, const float *, void *, size_t, uint64_t);
#define ROW(SUF) {(chunk_fn)chunk8_##SUF, (chunk_fn)chunk16_##SUF, (chunk_fn)chunk32_##SUF}
#define SROW(SUF) {(chunk_fn)schunk8_##SUF, (chunk_fn)schunk16_##SUF, (chunk_fn)schunk32_##SUF}
static const chunk_fn chunk_table[7][3] = {ROW(rne), ROW(rna), ROW(rtz), ROW(rup), ROW(rdn), ROW(rto), ROW(sr)};
static const chunk_fn schunk_table[7][3] = {SROW(rne), SROW(rna), SROW(rtz), SROW(rup), SROW(rdn), SROW(rto),
                                            SROW(sr)};
#define VROW(SUF) {(chunk_fn)vchunk8_##SUF, (chunk_fn)vchunk16_##SUF, (chunk_fn)vchunk32_##SUF}
static const chunk_fn vchunk_table[7][3] = {VROW(rne), VROW(rna), VROW(rtz), VROW(rup), VROW(rdn), VROW(rto),
                                            VROW(sr)};
_Static_assert(EXMY_SR == 6, "the chunk tables are indexed by exmy_round_mode");
#define GROW(SUF) {(chunk_fn)gchunk8_##SUF, (chunk_fn)gchunk16_##SUF, (chunk_fn)gchunk32_##SUF}
static const chunk_fn gchunk_table[2][3] = {GROW(rne), GROW(sr)}; /* rne, sr */

static int width_index(const exmy_format *f) {
  const int bytes = exmy_code_bytes(f);
  return bytes == 1 ? 0 : bytes == 2 ? 1 : 2;
}

/* ---- the prepared scaled quantizer of the scaling recipes --------------- */

_Static_assert(sizeof(fast_params) <= sizeof(((exmy__f32q *)0)->params), "exmy__f32q.params too small");

int exmy__is_binary32(const exmy_format *f) {
  return f->ebits == 8 && f->mbits == 23 && f->bias == 127 && f->is_signed && f->has_zero &&
         f->inf == EXMY_INF_IEEE && f->nan == EXMY_NAN_IEEE;
}

void exmy__f32q_init(exmy__f32q *q, const exmy_format *f, const exmy_rounding *r) {
  memset(q, 0, sizeof *q);
  q->f = *f;
  q->r = *r;
  /* a float rounds to binary32 exactly in every mode: no flags, same bits (NaNs go the long way) */
  q->ident = exmy__is_binary32(f) && r->sat == EXMY_SAT_NONE && !r->ftz && !r->daz;
  q->fast = !q->ident && fast_applies(f, r);
  if (q->fast) {
    fast_params p;
    fast_setup(f, r, &p);
    memcpy(q->params, &p, sizeof p);
    q->pow2_ok = (int)p.rne_ok;
  }
}

/* q->ident: codes[i] = the bits of fp32(x[i] * (scales ? scales[i] : scale)); NaNs the long way */
static unsigned ident_run(const exmy__f32q *q, const float *x, size_t n, float scale, const float *scales,
                          uint64_t index0, void *codes) {
  unsigned fl = 0;
  uint32_t *out = codes;
  for (size_t i = 0; i < n; i++) {
    const float v = x[i] * (scales ? scales[i] : scale);
    if (isnan(v)) out[i] = (uint32_t)exmy_from_f32(&q->f, &q->r, v, index0 + i, &fl);
    else memcpy(&out[i], &v, 4);
  }
  return fl;
}

unsigned exmy__f32q_run(const exmy__f32q *q, const float *x, size_t n, float scale, uint64_t index0, void *codes) {
  if (q->ident) return ident_run(q, x, n, scale, NULL, index0, codes);
  if (q->fast) {
    fast_params p;
    memcpy(&p, q->params, sizeof p);
    return schunk_table[q->r.mode][width_index(&q->f)](&p, x, scale, NULL, codes, n, index0);
  }
  unsigned fl = 0;
  for (size_t i = 0; i < n; i++)
    exmy_code_set(&q->f, codes, i, exmy_from_f32(&q->f, &q->r, x[i] * scale, index0 + i, &fl));
  return fl;
}

unsigned exmy__f32q_run_v(const exmy__f32q *q, const float *x, size_t n, const float *scales, uint64_t index0,
                          void *codes) {
  if (q->ident) return ident_run(q, x, n, 1.0f, scales, index0, codes);
  if (q->fast) {
    fast_params p;
    memcpy(&p, q->params, sizeof p);
    return vchunk_table[q->r.mode][width_index(&q->f)](&p, x, 1.0f, scales, codes, n, index0);
  }
  unsigned fl = 0;
  for (size_t i = 0; i < n; i++)
    exmy_code_set(&q->f, codes, i, exmy_from_f32(&q->f, &q->r, x[i] * scales[i], index0 + i, &fl));
  return fl;
}

/* Is some x[i] nonzero while fp32(x[i] * its scale) is zero?  A group of
 * 2^lg at a time with its scale (lg > 0) or the scales beside it, so both
 * loops vectorize.  A group whose scale is a power of two >= 1 is skipped: a
 * nonzero float times it is at least 2^-149 (MX groups with amax below
 * 2^(emax_elem + 1), most of them). */
static inline __attribute__((always_inline)) uint32_t lost_run(const float *restrict x, size_t m,
                                                               const float *restrict sv, float s1) {
  uint32_t lost = 0;
  for (size_t i = 0; i < m; i++) {
    const float v = x[i] * (sv ? sv[i] : s1);
    uint32_t xb, vb;
    memcpy(&xb, &x[i], 4);
    memcpy(&vb, &v, 4);
    lost |= ((xb & 0x7fffffffu) != 0) & ((vb & 0x7fffffffu) == 0);
  }
  return lost;
}
EXMY_CLONES static uint32_t lost_scan(const float *restrict x, size_t n, const float *restrict scales, int lg) {
  uint32_t lost = 0;
  if (!lg) return lost_run(x, n, scales, 1.0f);
  const size_t g = (size_t)1 << lg;
  size_t i0 = 0;
  for (; i0 + g <= n; i0 += g)
    if (!(scales[i0 >> lg] >= 1.0f)) lost |= lost_run(x + i0, g, NULL, scales[i0 >> lg]);
  return lost | lost_run(x + i0, n - i0, NULL, n > i0 ? scales[i0 >> lg] : 0.0f);
}

/* exmy__f32q_run_v with one scale per 2^lg elements (gscales[i >> lg];
 * exmy__f32q_grp_lg_ok(lg); n need not be a multiple of 2^lg), for rne and sr; -1
 * otherwise (the caller expands the scales). */
int exmy__f32q_run_grp(const exmy__f32q *q, const float *x, size_t n, const float *gscales, int lg, uint64_t index0,
                       void *codes, unsigned *flags) {
  if (!q->fast || (q->r.mode != EXMY_RNE && q->r.mode != EXMY_SR) || !exmy__f32q_grp_lg_ok(lg)) return -1;
  fast_params p;
  memcpy(&p, q->params, sizeof p);
  p.gshift = (uint32_t)lg;
  *flags |= gchunk_table[q->r.mode == EXMY_SR][width_index(&q->f)](&p, x, 1.0f, gscales, codes, n, index0);
  return 0;
}

/* The exact-product cast (one rounding of x[i] * scales[i], as
 * exmy_from_f64 of the double product) through the float kernel, where it
 * is the same: q->pow2_ok, every scale a normal power of two and every
 * x[i] * scales[i] finite in float (the caller knows its groups' amax).
 * fp32(x * 2^k) is the product unless it falls below 2^-126; there both round
 * to +-0 on the grid (>= 2^-125) with inexact and underflow, which the kernel
 * reports unless the float product is zero (or FTZ flushed it): an integer
 * look at the inputs then adds them.  (With DAZ set in MXCSR a denormal x
 * reads as 0 here, and in the exact path's conversion to double too; the
 * recipes' semantics are the default environment's.)  -1 when q is not
 * pow2_ok: the caller takes the exact path. */
int exmy__f32q_run_pow2_v(const exmy__f32q *q, const float *x, size_t n, const float *scales, int lg, int lost,
                          uint64_t index0, void *codes, unsigned *flags) {
  if (!q->pow2_ok || (lg && !exmy__f32q_grp_lg_ok(lg))) return -1;
  unsigned fl = 0;
  if (!lg) fl = exmy__f32q_run_v(q, x, n, scales, index0, codes);
  else (void)exmy__f32q_run_grp(q, x, n, scales, lg, index0, codes, &fl); /* pow2_ok: rne */
  const unsigned uf = EXMY_FLAG_UNDERFLOW | EXMY_FLAG_INEXACT;
  if ((fl & uf) != uf) {
    if (lost < 0 ? lost_scan(x, n, scales, lg) != 0 : lost) fl |= uf;
  }
  *flags |= fl;
  return 0;
}

static unsigned fast_f32(const exmy_format *f, const exmy_rounding *r, const float *src, size_t n, uint64_t index0,
                         void *codes) {
  fast_params p;
  fast_setup(f, r, &p);
  const int bytes = exmy_code_bytes(f);
  const chunk_fn fn = chunk_table[r->mode][width_index(f)];
  unsigned fl = 0;
  /* static split: each thread converts one contiguous range */
#pragma omp parallel reduction(|:fl) if(n > EXMY_OMP_MIN_VECTOR)
  {
    size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
    size_t lo = n / nt * t + (t < n % nt ? t : n % nt);
    size_t hi = lo + n / nt + (t < n % nt);
    fl |= fn(&p, src + lo, 1.0f, NULL, (char *)codes + lo * (size_t)bytes, hi - lo, index0 + lo);
  }
  return fl;
}

unsigned exmy__quantize(const exmy_format *f, const exmy_rounding *r, exmy_dtype t,
                       const void *src, size_t n, uint64_t index0, void *codes) {
  if (t == EXMY_DTYPE_F32 && fast_applies(f, r)) return fast_f32(f, r, (const float *)src, n, index0, codes);
  unsigned fl = 0;
#pragma omp parallel for schedule(static) reduction(|:fl) if(n > EXMY_OMP_MIN_SCALAR)
  for (size_t i = 0; i < n; i++) {
    unsigned f1 = 0;
    exmy_code_set(f, codes, i, convert_one(f, r, t, src, i, index0 + i, &f1));
    fl |= f1;
  }
  return fl;
}

/* ---- decode arrays ----------------------------------------------------- */

/* For long arrays of a narrow format, decode every code once.  Codes with
 * bits above the format's width (NaN class, exmy_classify) bypass the table
 * and the bit-prefix path: they must not index past it. */
static double *decode_lut(const exmy_format *f, size_t n) {
  if (f->bits > 16 || n <= ((size_t)4 << f->bits)) return NULL;
  size_t m = (size_t)1 << f->bits;
  double *lut = malloc(m * sizeof *lut);
  if (lut)
    for (size_t c = 0; c < m; c++) lut[c] = exmy_code_to_f64(f, c);
  return lut;
}

/* binary32 and its truncations (bf16, IEEE-like e8mY with bias 127): a code
 * shifted to the top of 32 bits is the float; widen directly (NaNs go the
 * long way). */
static int f32_prefix_shift(const exmy_format *f) {
  if (f->ebits != 8 || f->bias != 127 || !f->is_signed || !f->has_zero || f->inf != EXMY_INF_IEEE ||
      f->nan != EXMY_NAN_IEEE || f->mbits > 23)
    return -1;
  return 23 - f->mbits;
}

#define DECODE_LOOP(T)                                                   \
  do {                                                                   \
    const int sh = f32_prefix_shift(f);                                  \
    if (sh >= 0) {                                                       \
      _Pragma("omp parallel for schedule(static) if(n > EXMY_OMP_MIN_VECTOR)")         \
      for (size_t i = 0; i < n; i++) {                                   \
        const uint64_t c = exmy_code_get(f, codes, i);                   \
        const uint32_t bits = (uint32_t)(c << sh);                       \
        float v;                                                         \
        memcpy(&v, &bits, 4);                                            \
        out[i] = isnan(v) || c >> f->bits ? (T)exmy_code_to_f64(f, c) : (T)v; \
      }                                                                  \
      return;                                                            \
    }                                                                    \
    double *lut = decode_lut(f, n);                                      \
    if (lut && exmy_code_bytes(f) == 1) { /* 8-bit codes: a table look-up, the load inline */ \
      const uint8_t *c8 = codes;                                         \
      _Pragma("omp parallel for schedule(static) if(n > EXMY_OMP_MIN_VECTOR)")         \
      for (size_t i = 0; i < n; i++)                                     \
        out[i] = (T)(c8[i] >> f->bits ? exmy_code_to_f64(f, c8[i]) : lut[c8[i]]); \
      free(lut);                                                         \
      return;                                                            \
    }                                                                    \
    if (lut && exmy_code_bytes(f) == 2) { /* 16-bit codes: the same, 2-byte loads */ \
      const uint16_t *c16 = codes;                                       \
      _Pragma("omp parallel for schedule(static) if(n > EXMY_OMP_MIN_VECTOR)")         \
      for (size_t i = 0; i < n; i++)                                     \
        out[i] = (T)(c16[i] >> f->bits ? exmy_code_to_f64(f, c16[i]) : lut[c16[i]]); \
      free(lut);                                                         \
      return;                                                            \
    }                                                                    \
    _Pragma("omp parallel for schedule(static) if(n > EXMY_OMP_MIN_SCALAR)")            \
    for (size_t i = 0; i < n; i++) {                                     \
      uint64_t c = exmy_code_get(f, codes, i);                           \
      out[i] = (T)(lut && !(c >> f->bits) ? lut[c] : exmy_code_to_f64(f, c)); \
    }                                                                    \
    free(lut);                                                           \
  } while (0)

void exmy_codes_to_f64(const exmy_format *f, const void *codes, size_t n, double *out) { DECODE_LOOP(double); }

/* double to float rounds to nearest even: exact whenever the value is a float */
void exmy_codes_to_f32(const exmy_format *f, const void *codes, size_t n, float *out) { DECODE_LOOP(float); }
