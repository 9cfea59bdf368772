/* gemm_fast_tc.c: the fast kernel of acc=tc (docs/gemm.md, the block FMA),
 * vectorized across 16 columns, taken only for the datapath rows it
 * implements (tc_fast_takes: T, truncating, no block scales) and where its
 * steps are exact (bounds checked in exmy__gemm_fast_tc), on the
 * blocking frame (gemm_block.h: packing, tasks, the epilogue).  Operands
 * are packed from their 8-bit codes through a table (or from the decoded
 * doubles) into the frame's panels: values as floats and nominal
 * exponents.  Each group's largest exponent
 * emax is a max over exponent sums; then the terms, truncated at 2^(emax - F):
 *  - AVX-512 (tc_tile_512): fused multiply-adds rounded toward zero into two
 *    accumulators that stay in the binade of +-1.5 2^(emax - F + 23), whose
 *    ulp is 2^(emax - F): products with the sign bit clear into +M (floor),
 *    the others into -M (ceiling), so each FMA truncates its term toward zero
 *    exactly;
 *  - elsewhere (tc_tile): exact float products scaled by 2^(F - emax),
 *    converted to int32 (int64 when the sum needs more than 31 bits) by
 *    truncation, summed exactly. */
#include "emulate/gemm_kernels.h"
#include "emulate/gemm_fast_tc16.h"
#include "emulate/gemm_block.h"
#include "emulate/gemm_ws.h"
#include "emulate/gemm_bits.h"
#include "emulate/gemm_tc.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)

typedef float v16sf __attribute__((vector_size(64)));
typedef int32_t v16si __attribute__((vector_size(64)));
typedef double v8df __attribute__((vector_size(64)));
typedef int64_t v8di __attribute__((vector_size(64)));
typedef int64_t v16di __attribute__((vector_size(128)));
typedef int32_t v8si __attribute__((vector_size(32)));
typedef float v8sf __attribute__((vector_size(32)));
#define TC_MR 4  /* rows of a register tile */
#define TC_NR 16 /* columns of a B panel, of a tile */
#define TC_PR 16 /* rows of an A panel: the frame's micro-tile, of 4-row tiles and 1-row ones */

/* The panels on the blocking frame (gemm_block.h), each values then nominal
 * exponents: A's 16 rows as [16][k] floats and [16][k] int32 (a row's steps
 * in order), B's 16 columns as [k][16] and [k][16].  The micro-kernel runs
 * over all of k at once and promotes the pieces itself. */
typedef struct tc_ctx {
  const gemm_plan *p;
  int wide;           /* int64 sums */
  int v2;             /* tc_zero != 0 */
  int pack512;        /* the codes' packs in AVX-512 (cpu512) */
  const float *lut[2]; /* A's, B's decode tables (8-bit codes), or NULL: the decoded doubles */
  float lv[2][256];    /* without pack512, tc_pack's tables from lut: value (0 when not finite), exponent, not finite */
  int32_t le[2][256];
  uint8_t bad[2][256];
} tc_ctx;

/* A zero element's exponent under the v2 zero rule: far below every real
 * one, so a product with a zero factor is found by its sum (< ZERO_E / 2). */
#define ZERO_E (-(1 << 20))

/* Nominal exponent of an element (docs/gemm.md, tc step 2: exmy__gemm_nominal's
 * e, max(floor(log2|x|), emin)); zero: -126 (v1) or ZERO_E (v2).  From the
 * double's exponent field: operands are normal doubles (within 2^-300..2^300,
 * check_operand). */
static int32_t nominal_exp(double x, int emin, int v2) {
  if (x == 0) return v2 ? ZERO_E : -126;
  uint64_t bits;
  memcpy(&bits, &x, 8);
  const int32_t e = (int32_t)((bits >> 52) & 0x7FF) - 1023;
  return e < emin ? emin : e;
}

/* lane-wise max (compare and select) */
#define VMAX(a, b) ({ const v16si va_ = (a), vb_ = (b), vm_ = va_ > vb_; (va_ & vm_) | (vb_ & ~vm_); })

/* S * 2^(emax - f), cut to `out` fraction bits (truncation), as float; S in
 * int32 lanes (Sp) or int64 lanes (Sw, when wide). */
static inline __attribute__((always_inline)) void tc_normalize(v16sf *res, const v16si *Sp, const v16di *Sw, const int wide,
                                                               const v16si *ep, int f, int out) {
  v16sf r;
  const v16si emax = *ep;
  for (int h = 0; h < 2; h++) {
    v8si e8;
    memcpy(&e8, (const char *)&emax + 32 * h, 32);
    v8df d;
    if (wide) { /* exact: |S| < 2^53 (checked in exmy__gemm_fast_tc) */
      v8di s8;
      memcpy(&s8, (const char *)Sw + 64 * h, 64);
      d = __builtin_convertvector(s8, v8df);
    } else {
      v8si s8;
      memcpy(&s8, (const char *)Sp + 32 * h, 32);
      d = __builtin_convertvector(s8, v8df);
    }
    /* 2^(emax - f) as a double: exponent field emax - f + 1023 */
    const v8di pe = (__builtin_convertvector(e8, v8di) - f + 1023) << 52;
    v8df pw;
    memcpy(&pw, &pe, 64);
    v8df v = d * pw; /* exact: S is an integer of at most 53 bits and 2^(emax-f) normal */
    v8di bits;
    memcpy(&bits, &v, 64);
    bits &= ~(v8di){0} << (52 - out); /* truncate toward zero (zero stays zero) */
    memcpy(&v, &bits, 64);
    const v8sf f8 = __builtin_convertvector(v, v8sf); /* exact: <= 24 bits, normal */
    memcpy((char *)&r + 32 * h, &f8, 32);
  }
  *res = r;
}

/* One tile of NRW rows x 16 columns over all of k; NRW, WIDE (int64 sums)
 * and EZ (the v2 zero rule: tc_zero != 0) are constants at each call so the
 * per-row vectors stay in registers and the other variants' code drops out. */
static inline __attribute__((always_inline)) void tc_tile(const tc_ctx *x, const float *av, const int32_t *ae,
                                                          const float *bv, const int32_t *be, size_t ib, size_t j0,
                                                          float *res, const int NRW, const int WIDE, const int EZ) {
  const gemm_plan *p = x->p;
  const size_t k = p->k, n = p->n, g = (size_t)p->acc.tc_group;
  const int F = p->acc.tc_frac, out = p->acc.tc_out_frac, ez = p->acc.tc_zero;
  const int promoted = p->acc.chunk || p->style == GEMM_PROMOTE;
  v16sf Fs[TC_MR], c[TC_MR];
  for (int r = 0; r < NRW; r++) Fs[r] = (v16sf){0};
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = exmy__gemm_piece_end(p, l0);
    for (int r = 0; r < NRW; r++) c[r] = (v16sf){0};
    for (size_t g0 = l0; g0 < l1; g0 += g) {
      const size_t g1 = g0 + g < l1 ? g0 + g : l1;
      /* v2: the group's columns with a zero element (a product with a zero factor has
       * exponent ez), once for the tile's rows */
      v16si colz = {0};
      if (EZ)
        for (size_t l = g0; l < g1; l++) {
          v16si e;
          memcpy(&e, be + l * TC_NR, 64);
          colz |= e < ZERO_E / 2;
        }
      /* row by row, so each row's exponent and sum stay in registers across the group (a
       * row-inner loop kept them in memory); the integer sums are exact, so the order of
       * rows and terms does not matter */
      for (int r = 0; r < NRW; r++) {
        const float *ar = av + (size_t)r * k;
        const int32_t *aer = ae + (size_t)r * k;
        v16si cb;
        memcpy(&cb, &c[r], 64);
        v16si emax = VMAX(((cb >> 23) & 255) - 127, (v16si){0} - 126);
        v16si anyz = (cb & 0x7FFFFFFF) == 0; /* lanes with a zero term (v2: it has exponent ez) */
        if (EZ) {
          emax = (emax & ~anyz) | (((v16si){0} + ZERO_E) & anyz); /* a zero c: below all */
          int rowz = 0;
          for (size_t l = g0; l < g1; l++) rowz |= aer[l] < ZERO_E / 2;
          anyz |= colz | ((v16si){0} - rowz);
        }
        /* the group's largest product exponent: four independent chains in named registers
         * (one chain would wait on its own latency every term; an array of four was kept in
         * memory); a zero product's exponent (< ZERO_E / 2) never wins over c's */
        v16si em0 = emax, em1 = emax, em2 = emax, em3 = emax;
        size_t le = g0;
#define TC_EM(acc, u)                                                                                                  \
  do {                                                                                                                \
    v16si e_;                                                                                                          \
    memcpy(&e_, be + (le + (u)) * TC_NR, 64);                                                                          \
    acc = VMAX(acc, e_ + aer[le + (u)]);                                                                               \
  } while (0)
        for (; le + 4 <= g1; le += 4) {
          TC_EM(em0, 0);
          TC_EM(em1, 1);
          TC_EM(em2, 2);
          TC_EM(em3, 3);
        }
        for (; le < g1; le++) TC_EM(em0, 0);
#undef TC_EM
        const v16si em01 = VMAX(em0, em1), em23 = VMAX(em2, em3);
        emax = VMAX(em01, em23);
        if (EZ) emax = VMAX(emax, (((v16si){0} + ez) & anyz) | (((v16si){0} + ZERO_E) & ~anyz));
        v16si pe = F - emax + 127;
        pe = VMAX(pe, (v16si){0} + 1);
        pe = (pe & (pe < 254)) | (((v16si){0} + 254) & ~(pe < 254));
        pe <<= 23;
        v16sf pw;
        memcpy(&pw, &pe, 64);
        v16si S = {0};
        v16di Sw = {0};
        if (WIDE) Sw = __builtin_convertvector(c[r] * pw, v16di);
        else S = __builtin_convertvector(c[r] * pw, v16si);
        for (size_t l = g0; l < g1; l++) {
          v16sf b;
          memcpy(&b, bv + l * TC_NR, 64);
          const v16sf t = (ar[l] * b) * pw;
          if (WIDE) Sw += __builtin_convertvector(t, v16di);
          else S += __builtin_convertvector(t, v16si);
        }
        tc_normalize(&c[r], &S, &Sw, WIDE, &emax, F, out);
      }
    }
    if (promoted)
      for (int r = 0; r < NRW; r++)
        for (int t = 0; t < TC_NR; t++) {
          const size_t i = ib + (size_t)r, j = j0 + (size_t)t;
          Fs[r][t] = fmaf(j < n ? exmy__gemm_promote_w(p, i, j, l0) : 1.0f, c[r][t], Fs[r][t]);
        }
  }
  for (int r = 0; r < NRW; r++)
    for (int t = 0; t < TC_NR; t++) res[r * TC_NR + t] = promoted ? Fs[r][t] : (k ? c[r][t] : 0.0f);
}

/* A panel's values and exponents (A: TC_PR rows, B: TC_NR columns, k steps each). */
#define TC_PANEL(Xp, V, E)                                                                                            \
  const float *V = (const float *)(Xp);                                                                               \
  const int32_t *E = (const int32_t *)(V + 16 * k)

/* The frame's micro-kernel (gemm_block.h, with block_end: all of k at once):
 * rows [i0, i0 + rows) x the 16 columns of B's panel from j0 into c, 4-row
 * tiles and then 1-row ones. */
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
static void tc_micro(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap, const void *Bp,
                     size_t rows, size_t cols, float *c) {
  const tc_ctx *x = ctx;
  const size_t k = x->p->k;
  const int wide = x->wide, ez = x->v2;
  TC_PANEL(Ap, av, ae);
  TC_PANEL(Bp, bv, be);
  (void)l0, (void)len, (void)cols;
/* the tiles of one variant: TC_MR rows at a time, then the rest one by one */
#define TC_TILES(W, Z)                                                                                                \
  do {                                                                                                                \
    for (; r + TC_MR <= rows; r += TC_MR)                                                                             \
      tc_tile(x, av + r * k, ae + r * k, bv, be, i0 + r, j0, c + r * TC_NR, TC_MR, W, Z);                             \
    for (; r < rows; r++) tc_tile(x, av + r * k, ae + r * k, bv, be, i0 + r, j0, c + r * TC_NR, 1, W, Z);             \
  } while (0)
  size_t r = 0;
  if (wide && ez) TC_TILES(1, 1);
  else if (wide) TC_TILES(1, 0);
  else if (ez) TC_TILES(0, 1);
  else TC_TILES(0, 0);
#undef TC_TILES
}

/* ---- AVX-512: the terms by FMAs rounded toward zero ---- */
#include <immintrin.h>

/* The AVX-512 kernel and pack run here (both need F, DQ, BW; the pack's masked byte
 * loads VL); EXMY_NO_AVX512=1 turns them off. */
static int cpu512(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && !exmy__avx512_disabled();
}

#define TC_RZ (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)

/* Whether the exponents e[g0..g1) have a zero's (v2: ZERO_E), 16 at a time
 * (masked loads: no reads past g1). */
__attribute__((target("avx512f,avx512dq,avx512bw"))) static inline __attribute__((always_inline)) int
row_has_zero(const int32_t *e, size_t g0, size_t g1) {
  __mmask16 z = 0;
  for (size_t l = g0; l < g1; l += 16) {
    const __mmask16 km = g1 - l >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (g1 - l)) - 1);
    z |= _mm512_mask_cmplt_epi32_mask(km, _mm512_maskz_loadu_epi32(km, e + l), _mm512_set1_epi32(ZERO_E / 2));
  }
  return z != 0;
}

/* The tile of tc_tile with the same steps, the terms summed in the binade
 * of M = 1.5 2^(T + 23), T = emax - F (see the file's comment): P = M, N = -M,
 * c split by sign into them, then P += a b where the product's sign bit is
 * clear and N += a b elsewhere (a zero product adds exactly 0 to either); the sum is
 * P + N (exact), cut to `out` fraction bits. */
__attribute__((target("avx512f,avx512dq,avx512bw"))) static inline __attribute__((always_inline)) void
tc_tile_512(const tc_ctx *x, const float *av, const int32_t *ae, const float *bv, const int32_t *be, size_t ib, size_t j0,
            float *res, const int NRW, const int EZ) {
  const gemm_plan *p = x->p;
  const size_t k = p->k, g = (size_t)p->acc.tc_group;
  const int F = p->acc.tc_frac, out = p->acc.tc_out_frac, ez = p->acc.tc_zero;
  const int promoted = p->acc.chunk || p->style == GEMM_PROMOTE;
  const __m512i cut = _mm512_set1_epi32((int32_t)(~0u << (23 - out)));
  /* fs: the promoted sums, in memory (touched once a piece); c is not live while the terms
   * are summed, nor M (P + N is exact without it), so NRW rows fit the registers */
  float fs[TC_MR][TC_NR];
  __m512 c[TC_MR], P[TC_MR], N[TC_MR];
  __m512i em[TC_MR];
  memset(fs, 0, sizeof fs);
  for (size_t l0 = 0, l1; l0 < k; l0 = l1) {
    l1 = exmy__gemm_piece_end(p, l0);
    _Pragma("GCC unroll 4")
    for (int r = 0; r < NRW; r++) c[r] = _mm512_setzero_ps();
    /* The products' largest exponents (and v2's zero columns) do not depend
     * on c, so the next group's are found before this group's sums: the two
     * loops are independent and overlap. */
#define TC_EXP(G0, G1, EMP, LO)                                                                                       \
  do {                                                                                                                \
    _Pragma("GCC unroll 4") for (int r = 0; r < NRW; r++) EMP[r] = _mm512_set1_epi32(INT32_MIN / 2);                 \
    LO = _mm512_setzero_si512();                                                                                      \
    for (size_t l = (G0); l < (G1); l++) {                                                                            \
      const __m512i e = _mm512_loadu_si512(be + l * TC_NR);                                                           \
      if (EZ) LO = _mm512_min_epi32(LO, e);                                                                           \
      _Pragma("GCC unroll 4") for (int r = 0; r < NRW; r++) EMP[r] =                                                  \
          _mm512_max_epi32(EMP[r], _mm512_add_epi32(e, _mm512_set1_epi32(ae[(size_t)r * k + l])));                   \
    }                                                                                                                 \
  } while (0)
    __m512i lo;
    TC_EXP(l0, (l0 + g < l1 ? l0 + g : l1), em, lo);
    for (size_t g0 = l0; g0 < l1; g0 += g) {
      const size_t g1 = g0 + g < l1 ? g0 + g : l1;
      const __mmask16 colz = EZ ? _mm512_cmplt_epi32_mask(lo, _mm512_set1_epi32(ZERO_E / 2)) : 0; /* v2: columns with a zero */
      _Pragma("GCC unroll 4")
      for (int r = 0; r < NRW; r++) {
        const __m512i cb = _mm512_castps_si512(c[r]);
        __m512i ec = _mm512_max_epi32(_mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(cb, 23), _mm512_set1_epi32(255)),
                                                       _mm512_set1_epi32(127)),
                                      _mm512_set1_epi32(-126));
        if (EZ) {
          __mmask16 anyz = _mm512_testn_epi32_mask(cb, _mm512_set1_epi32(0x7FFFFFFF)); /* a zero c */
          ec = _mm512_mask_mov_epi32(ec, anyz, _mm512_set1_epi32(ZERO_E));              /* a zero c: below all */
          anyz |= colz | (__mmask16)(row_has_zero(ae + (size_t)r * k, g0, g1) ? 0xFFFF : 0);
          ec = _mm512_max_epi32(ec, _mm512_mask_mov_epi32(_mm512_set1_epi32(ZERO_E), anyz, _mm512_set1_epi32(ez)));
        }
        const __m512i emax = _mm512_max_epi32(em[r], ec);
        /* M = 1.5 2^(emax - F + 23): exponent field emax - F + 150 (normal: checked at dispatch) */
        const __m512 M = _mm512_castsi512_ps(_mm512_or_si512(
            _mm512_slli_epi32(_mm512_add_epi32(emax, _mm512_set1_epi32(150 - F)), 23), _mm512_set1_epi32(0x400000)));
        /* c is a term too: truncated at 2^T like the products */
        P[r] = _mm512_add_round_ps(M, _mm512_max_ps(c[r], _mm512_setzero_ps()), TC_RZ);
        N[r] = _mm512_add_round_ps(_mm512_sub_ps(_mm512_setzero_ps(), M), _mm512_min_ps(c[r], _mm512_setzero_ps()),
                                   TC_RZ);
      }
      if (g1 < l1) TC_EXP(g1, (g1 + g < l1 ? g1 + g : l1), em, lo);
      for (size_t l = g0; l < g1; l++) {
        const __m512 b = _mm512_loadu_ps(bv + l * TC_NR);
        _Pragma("GCC unroll 4")
        for (int r = 0; r < NRW; r++) {
          const __m512 a = _mm512_set1_ps(av[(size_t)r * k + l]);
          /* lanes whose product's sign bit (a's xor b's) is set into N, the others into P
           * (a zero product adds exactly 0 to either); a vector xor and a move to a mask
           * register: cheaper than mask-register operations on masks kept in memory */
          const __mmask16 kn = _mm512_movepi32_mask(_mm512_xor_si512(_mm512_castps_si512(a), _mm512_castps_si512(b)));
          P[r] = _mm512_mask3_fmadd_round_ps(a, b, P[r], _knot_mask16(kn), TC_RZ);
          N[r] = _mm512_mask3_fmadd_round_ps(a, b, N[r], kn, TC_RZ);
        }
      }
      _Pragma("GCC unroll 4")
      for (int r = 0; r < NRW; r++) {
        /* (M + sp) + (-M + sn), |sp|, |sn| < M / 3: within a factor 2, so exact (Sterbenz) */
        const __m512 S = _mm512_add_ps(P[r], N[r]);
        c[r] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(S), cut)); /* truncated to out bits */
      }
    }
    if (promoted)
      for (int r = 0; r < NRW; r++) {
        /* fs = fmaf(w, c, fs): w = 1 (a chunk; fmaf(1, c, fs) is c + fs) or PROMOTE's fp32(sa sb) */
        float wr[16];
        exmy__gemm_promote_w16(p, ib + (size_t)r, j0, l0, wr);
        _mm512_storeu_ps(fs[r], _mm512_fmadd_ps(_mm512_loadu_ps(wr), c[r], _mm512_loadu_ps(fs[r])));
      }
  }
  _Pragma("GCC unroll 4")
  for (int r = 0; r < NRW; r++)
    _mm512_storeu_ps(res + r * TC_NR, promoted ? _mm512_loadu_ps(fs[r]) : k ? c[r] : _mm512_setzero_ps());
}

#undef TC_EXP

/* tc_micro with tc_tile_512. */
__attribute__((target("avx512f,avx512dq,avx512bw"))) static void tc_micro_512(const void *ctx, size_t i0, size_t j0,
                                                                               size_t l0, size_t len, const void *Ap,
                                                                               const void *Bp, size_t rows, size_t cols,
                                                                               float *c) {
  const tc_ctx *x = ctx;
  const size_t k = x->p->k;
  TC_PANEL(Ap, av, ae);
  TC_PANEL(Bp, bv, be);
  (void)l0, (void)len, (void)cols;
  size_t r = 0;
  if (x->v2) {
    for (; r + TC_MR <= rows; r += TC_MR) tc_tile_512(x, av + r * k, ae + r * k, bv, be, i0 + r, j0, c + r * TC_NR, TC_MR, 1);
    for (; r < rows; r++) tc_tile_512(x, av + r * k, ae + r * k, bv, be, i0 + r, j0, c + r * TC_NR, 1, 1);
  } else {
    for (; r + TC_MR <= rows; r += TC_MR) tc_tile_512(x, av + r * k, ae + r * k, bv, be, i0 + r, j0, c + r * TC_NR, TC_MR, 0);
    for (; r < rows; r++) tc_tile_512(x, av + r * k, ae + r * k, bv, be, i0 + r, j0, c + r * TC_NR, 1, 0);
  }
}

/* ---- operands ---- */

#define TC_512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl")))

/* 16 codes (the lanes of km; the rest are padding zeros with exponent ze)
 * through the table lv (value, inf/NaN kept), the nominal exponents from the
 * values: values and exponents stored at v and e (km's lanes, or all 16 when
 * pad).  Returns whether a value is not finite. */
TC_512 static inline __attribute__((always_inline)) int pack16_512(__m512i idx, __mmask16 km, int pad, const float *lv,
                                                                   int32_t emin, int32_t ze, float *v, int32_t *e) {
  const __m512 val = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), km, idx, lv, 4);
  /* max(floor(log2 |x|), emin) from the value (exact in float; getexp takes float
   * subnormals too), ze for zeros and padding */
  const __mmask16 nz = _mm512_mask_cmp_ps_mask(km, val, _mm512_setzero_ps(), _CMP_NEQ_UQ);
  const __m512i ex = _mm512_mask_max_epi32(_mm512_set1_epi32(ze), nz, _mm512_cvttps_epi32(_mm512_getexp_ps(val)),
                                           _mm512_set1_epi32(emin));
  const __mmask16 ks = pad ? (__mmask16)0xFFFF : km;
  _mm512_mask_storeu_ps(v, ks, val);
  _mm512_mask_storeu_epi32(e, ks, ex);
  return _mm512_fpclass_ps_mask(val, 0x99) != 0; /* QNaN, SNaN, +inf, -inf */
}

/* n <= 16 codes as 32-bit lanes: contiguous (a load, masked for a tail) or
 * with a stride (scalar loads straight into the vector: no store and reload). */
TC_512 static inline __attribute__((always_inline)) __m512i codes16(const uint8_t *c, size_t stride, size_t nl) {
  if (stride == 1)
    return _mm512_cvtepu8_epi32(nl >= 16 ? _mm_loadu_si128((const __m128i *)c)
                                         : _mm_maskz_loadu_epi8((__mmask16)((1u << nl) - 1), c));
  int32_t t[16];
  for (size_t i = 0; i < 16; i++) t[i] = i < nl ? c[i * stride] : 0;
  return _mm512_set_epi32(t[15], t[14], t[13], t[12], t[11], t[10], t[9], t[8], t[7], t[6], t[5], t[4], t[3], t[2],
                          t[1], t[0]);
}

/* tc_pack's AVX-512 form for 8-bit codes, panel pn (16 rows of A or 16
 * columns of B) into v and e: 16 codes a vector through a gather from the
 * table (inf and NaN kept in lv, so a class test finds them).  Returns
 * whether a value is not finite. */
TC_512 static int tc_pack_blk_512(const gemm_plan *p, int which, const float *lv, float *v, int32_t *e, size_t pn) {
  const exmy_qtensor *q = which ? p->B : p->A;
  const size_t k = p->k, rows = which ? p->n : p->m, cols = q->cols;
  const int tr = which ? !p->tb : p->ta; /* 1: element (x, l) stored at l*cols + x, else x*cols + l */
  const int32_t ze = p->acc.tc_zero ? ZERO_E : -126, emin = q->fmt.emin;
  const uint8_t *codes = q->codes;
  const size_t x0 = pn * TC_NR, xe = x0 + TC_NR < rows ? x0 + TC_NR : rows, nx = xe - x0;
  const __mmask16 kx = (__mmask16)((1u << nx) - 1);
  int nf = 0;
  if (which) /* B: a panel, l by l */
    for (size_t l = 0; l < k; l++) {
      const __m512i idx = tr ? codes16(codes + l * cols + x0, 1, nx) : codes16(codes + x0 * cols + l, cols, nx);
      nf |= pack16_512(idx, kx, 1, lv, emin, ze, v + l * TC_NR, e + l * TC_NR);
    }
  else /* A: rows, 16 l at a time */
    for (size_t x = x0; x < xe; x++)
      for (size_t l0 = 0; l0 < k; l0 += TC_NR) {
        const size_t nl = k - l0 < TC_NR ? k - l0 : TC_NR;
        const __m512i idx = tr ? codes16(codes + l0 * cols + x, cols, nl) : codes16(codes + x * cols + l0, 1, nl);
        nf |= pack16_512(idx, (__mmask16)((1u << nl) - 1), 0, lv, emin, ze, v + (x - x0) * k + l0,
                         e + (x - x0) * k + l0);
      }
  return nf;
}

/* Panel pn of op(A) (which 0: rows [16 pn, 16 pn + 16), each along k) or
 * of op(B)^T (which 1: [l][16], zero padded) as floats and nominal
 * exponents (TC_PANEL): from the decoded doubles when the plan has them,
 * else from 8-bit codes through a table.  Returns whether an element is not
 * finite. */
static int tc_pack(const tc_ctx *x, int which, size_t pn, void *Xp) {
  const gemm_plan *p = x->p;
  const exmy_qtensor *q = which ? p->B : p->A;
  const exmy_format *f = &q->fmt;
  const double *src = which ? p->bd : p->ad;
  const size_t k = p->k, rows = which ? p->n : p->m, cols = q->cols;
  const int tr = which ? !p->tb : p->ta; /* 1: element (x, l) stored at l*cols + x, else x*cols + l */
  const int v2 = x->v2;
  float *v = Xp;
  int32_t *e = (int32_t *)(v + 16 * k);
  if (!src && x->pack512) return tc_pack_blk_512(p, which, x->lut[which], v, e, pn);
  const float *lv = x->lv[which];
  const int32_t *le = x->le[which];
  const uint8_t *bad = x->bad[which], *codes = q->codes;
  const size_t x0 = pn * TC_NR, xe = x0 + TC_NR < rows ? x0 + TC_NR : rows;
  int nf = 0;
#define TC_ELEM(X, L, FV, FE)                                                                                         \
  do {                                                                                                                \
    if (src) {                                                                                                        \
      const double d_ = src[(X) * k + (L)];                                                                           \
      nf |= !isfinite(d_);                                                                                            \
      FV = (float)d_;                                                                                                 \
      FE = isfinite(d_) ? nominal_exp(d_, f->emin, v2) : 0;                                                           \
    } else {                                                                                                          \
      const uint8_t cd_ = codes[tr ? (L) * cols + (X) : (X) * cols + (L)];                                            \
      nf |= bad[cd_];                                                                                                 \
      FV = lv[cd_];                                                                                                   \
      FE = le[cd_];                                                                                                   \
    }                                                                                                                 \
  } while (0)
  /* B's panel with l outer (written in order); A's rows in pieces of 64 l each (a row
   * written in order: 16 rows with l outer would store 4 KiB apart when k = 1024, into the
   * same cache set) */
  if (which) {
    for (size_t l = 0; l < k; l++) {
      for (size_t xx = x0; xx < x0 + TC_NR; xx++) {
        float fv = 0.0f;
        int32_t fe = v2 ? ZERO_E : -126; /* padding columns: zeros */
        if (xx < xe) TC_ELEM(xx, l, fv, fe);
        v[l * TC_NR + (xx - x0)] = fv;
        e[l * TC_NR + (xx - x0)] = fe;
      }
    }
  } else {
    for (size_t l0 = 0; l0 < k; l0 += 64)
      for (size_t xx = x0; xx < xe; xx++)
        for (size_t l = l0; l < k && l < l0 + 64; l++) {
          float fv;
          int32_t fe;
          TC_ELEM(xx, l, fv, fe);
          v[(xx - x0) * k + l] = fv;
          e[(xx - x0) * k + l] = fe;
        }
  }
#undef TC_ELEM
  return nf;
}

/* The frame's pack hooks: 0 when an element is not finite (the reference runs). */
static int tc_pack_a(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap) {
  (void)p, (void)w;
  return !tc_pack(ctx, 0, pan, Ap);
}
static int tc_pack_b(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp) {
  (void)p, (void)w;
  return !tc_pack(ctx, 1, pan, Bp);
}

/* All of k is one block: the tiles walk their pieces themselves. */
static size_t tc_whole(const void *ctx, const gemm_plan *p, size_t lb) {
  (void)ctx, (void)lb;
  return p->k;
}

/* The datapath rows these kernels (and gemm_fast_tc16.c) implement, which
 * the dispatcher reads (gemm_tc_caps): T with the output conversions below,
 * every term cut toward zero, no block scales; the row's L, F, out and zero
 * exponent are the accumulation's tc_group, tc_frac, tc_out_frac and tc_zero
 * (0: v1's rule), which the kernels read (a model with rows has its plain
 * row's keys: exmy_gemm_check).  Any other row (ST, GST, rounding to nearest)
 * takes the reference. */
static const mma_algo tc_fast_algos[] = {MMA_T};
static const mma_rho tc_fast_rhos[] = {MMA_RZ_FP32, MMA_RZ_E8M13, MMA_OUT_FP32};
const gemm_tc_caps exmy__gemm_fast_tc_caps = {tc_fast_algos, sizeof tc_fast_algos / sizeof tc_fast_algos[0], tc_fast_rhos,
                                              sizeof tc_fast_rhos / sizeof tc_fast_rhos[0], 0, 0};

int exmy__gemm_fast_tc(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  const exmy_accum *a = &p->acc;
  const exmy_format *fa = &p->A->fmt, *fb = &p->B->fmt;
  const int F = a->tc_frac;
  int lg = 0, lk = 0;
  while (((size_t)1 << lg) < (size_t)a->tc_group + 1) lg++;
  while (((size_t)1 << lk) < p->k + 1) lk++;
  if ((fa->mbits + 1) + (fb->mbits + 1) > 24) return 0;                   /* float products exact */
  if ((fa->emin - fa->mbits) + (fb->emin - fb->mbits) < -149) return 0;
  /* every operand value a float: the packs read the float decode table (or cast the
   * decoded doubles), where 2^-152 was 0 and a value above FLT_MAX inf */
  if (fa->emin - fa->mbits < -149 || fb->emin - fb->mbits < -149 || fa->emax > 127 || fb->emax > 127) return 0;
  if (F + 2 + lg > 52) return 0;                                          /* integer sums exact in double */
  const int wide = F + 2 + lg > 30;                                        /* int64 sums */
  if (fa->emin + fb->emin - 2 * F < -100) return 0;                       /* results stay normal */
  if (fa->emax + fb->emax + lk + 2 > F + 120) return 0;                   /* no overflow, 2^(f-emax) normal */
  /* AVX-512 form: sums of up to 2^(F + 2 + lg) ulps stay in M's binade; M
   * normal for the lowest emax (c's floor -126, the products', a zero's)
   * and finite for the highest */
  const int lo_e = -126 < fa->emin + fb->emin ? -126 : fa->emin + fb->emin;
  const int use512 = cpu512() && F + 2 + lg <= 22 &&
                     a->tc_out_frac <= 23 && (a->tc_zero ? (a->tc_zero < lo_e ? a->tc_zero : lo_e) : lo_e) - F + 23 >= -126 &&
                     fa->emax + fb->emax + lk + 2 - F + 24 <= 127;
  if (use512 && exmy__gemm_fast_tc16(p, nt, flags, amax)) return 1; /* 8-bit operands in 16-bit lanes */
  tc_ctx x = {p, wide, a->tc_zero != 0, cpu512(), {NULL, NULL}, {{0}}, {{0}}, {{0}}};
  for (int w = 0; w < 2; w++) {
    const exmy_format *f = w ? fb : fa;
    if ((w ? p->bd : p->ad) != NULL) continue; /* from the decoded doubles */
    if (f->bits > 8) return 0;
    /* every byte (a code with bits above the format's is NaN), from the workspace's table,
     * kept across calls: decoding 256 codes per call cost more than small GEMMs */
    x.lut[w] = exmy__gemm_ws_lut8(p->ws, w, f);
    for (size_t c = 0; !x.pack512 && c < 256; c++) {
      x.bad[w][c] = !isfinite(x.lut[w][c]);
      x.lv[w][c] = x.bad[w][c] ? 0.0f : x.lut[w][c];
      x.le[w][c] = x.bad[w][c] ? 0 : nominal_exp(x.lut[w][c], f->emin, x.v2);
    }
  }
  const size_t k = p->k;
  const gemm_frame_kernel kd = {.ctx = &x, .mr = TC_PR, .nr = TC_NR, .mt = TC_PR,
                                .pa = TC_PR * k * (sizeof(float) + sizeof(int32_t)),
                                .pb = k * TC_NR * (sizeof(float) + sizeof(int32_t)),
                                .pack_a = tc_pack_a, .pack_b = tc_pack_b,
                                .micro = use512 ? tc_micro_512 : tc_micro, .block_end = tc_whole};
  return exmy__gemm_frame_run(&kd, p, nt, flags, amax);
}
#endif /* __x86_64__ */
