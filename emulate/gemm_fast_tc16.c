/* gemm_fast_tc16.c: acc=tc (docs/gemm.md, the block FMA) for 8-bit operands
 * with short significands (E4M3, E5M2 with f <= 13: the Hopper and Ada FP8
 * presets), in 16-bit integer lanes as the hardware does it.  Each element
 * is packed from its code as an integer significand s (value s 2^(e - m)),
 * its nominal exponent e and its sign; a product's term, truncated at
 * 2^(emax - f), is the integer (sa sb 2^L) >> (emax - ea - eb) with
 * L = f - ma - mb (a logical shift of the magnitude: truncation toward
 * zero; 16 or more gives 0), signed and summed exactly by VNNI's
 * multiply-add of word pairs into int32.  Two terms (l even, l + 1) share a
 * 32-bit lane, so groups must start at even l (g, chunk and PROMOTE segments
 * even).  c's term and the final cut are those of the float kernel
 * (gemm_fast_tc.c): c truncated by an addition rounded toward zero to
 * M = 1.5 2^(emax - f + 23), the sum S read back as (M + S ulps) - M, exact.
 * Two terms of 16 columns take six integer operations (and two in the
 * exponent pass), where the float kernel spends two masked FMAs and three
 * mask operations on each term (and two in its exponent pass); it runs
 * where exmy__gemm_fast_tc's AVX-512 checks pass and the CPU has VNNI, on
 * the blocking frame (gemm_block.h: packing, tasks, the k blocks' order,
 * the epilogue). */
#include "emulate/gemm_fast_tc16.h"
#include "emulate/gemm_block.h"
#include "emulate/gemm_ws.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define T16_MR 8 /* rows of a tile: B's vectors of a pair are loaded once for 8 rows (4: 6-15% slower on Zen 4) */
#define T16_NR 16
#define T16_PR 16   /* rows of an A panel: the frame's micro-tile, of 8-, 4- and 1-row tiles */
#define T16_BAND 64 /* most rows a thread takes at a time (a band: the frame's task) */
/* v2's zero element: every exponent sum with it is below -4096, under every
 * real one (a zero's term is 0: s = 0); also the padding term of an odd k */
#define T16_ZM (-8192)
#define T16 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx512vnni,bmi2")))
#define T16_RZ (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)

/* Every byte as a code: significand (shifted left by shift), nominal
 * exponent, sign (+-1; 0: not finite): 16-bit tables of 512 bytes, eight
 * vectors each for the packs' word permutes. */
typedef struct t16_tab {
  _Alignas(64) int16_t sig[256];
  _Alignas(64) int16_t ex[256];
  _Alignas(64) int16_t sg[256];
} t16_tab;

/* From the reference's decomposition (exmy__gemm_nominal); 0 when a shifted
 * significand exceeds 2^15 - 1 (the caller's bound makes that a guard).
 * ebias is added to every exponent but v2's zero (T16_ZM); the sign is
 * stored xor sgx (A's: sgx = 1, so a product's +-1 is one xor of A's and
 * B's; not finite: sgx). */
static int t16_table(const float *lut, const exmy_format *f, int shift, int v1, int ebias, int sgx, t16_tab *t) {
  for (int c = 0; c < 256; c++) {
    const float v = lut[c];
    t->sg[c] = (int16_t)((!isfinite(v) ? 0 : signbit(v) ? -1 : 1) ^ sgx);
    uint64_t m = 0;
    int e = -126; /* a zero's exponent under v1 (docs/gemm.md, tc step 2) */
    if (isfinite(v)) exmy__gemm_nominal(v, f->emin, f->mbits, &m, &e);
    if (m << shift > 32767) return 0;
    t->sig[c] = (int16_t)(m << shift);
    t->ex[c] = (int16_t)(m == 0 && !v1 ? T16_ZM : e + ebias);
  }
  return 1;
}

/* 32 codes (16-bit lanes) through a 256-entry 16-bit table: four 64-entry
 * word permutes chosen by the codes' bits 6 and 7. */
T16 static inline __attribute__((always_inline)) __m512i t16_lut(__m512i idx, __mmask32 b6, __mmask32 b7,
                                                                 const int16_t *tab) {
  const __m512i *v = (const __m512i *)tab;
  const __m512i lo = _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(v[0], idx, v[1]),
                                             _mm512_permutex2var_epi16(v[2], idx, v[3]));
  const __m512i hi = _mm512_mask_blend_epi16(b6, _mm512_permutex2var_epi16(v[4], idx, v[5]),
                                             _mm512_permutex2var_epi16(v[6], idx, v[7]));
  return _mm512_mask_blend_epi16(b7, lo, hi);
}

/* 32 codes (the lanes of kv; the others padding: s = 0, e = T16_ZM, sign +1
 * xor sgx) stored as three vectors of 32 words at o, o + 32, o + 64.
 * Returns whether a code in kv is not finite (sign word sgx). */
T16 static inline __attribute__((always_inline)) int t16_put32(__m256i codes, __mmask32 kv, const t16_tab *t, int16_t *o,
                                                               int sgx) {
  const __m512i idx = _mm512_cvtepu8_epi16(codes);
  const __mmask32 b6 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(64)),
                  b7 = _mm512_test_epi16_mask(idx, _mm512_set1_epi16(128));
  const __m512i sg = t16_lut(idx, b6, b7, t->sg);
  _mm512_storeu_si512(o, _mm512_maskz_mov_epi16(kv, t16_lut(idx, b6, b7, t->sig)));
  _mm512_storeu_si512(o + 32, _mm512_mask_blend_epi16(kv, _mm512_set1_epi16(T16_ZM), t16_lut(idx, b6, b7, t->ex)));
  _mm512_storeu_si512(o + 64, _mm512_mask_blend_epi16(kv, _mm512_set1_epi16((short)(1 ^ sgx)), sg));
  return _mm512_mask_cmpeq_epi16_mask(kv, sg, _mm512_set1_epi16((short)sgx)) != 0;
}

/* Terms l (codes r0) and l + 1 (codes r1, NULL past k) of nx <= 16 rows or
 * columns stored contiguously, interleaved a pair (lane 2t: r0[t], lane
 * 2t + 1: r1[t]) into three vectors at o (t16_put32).  Returns whether a
 * code is not finite. */
T16 static inline __attribute__((always_inline)) int t16_put_pair(const uint8_t *r0, const uint8_t *r1, size_t nx,
                                                                  const t16_tab *t, int16_t *o, int sgx) {
  const __mmask16 kx = (__mmask16)((1u << nx) - 1);
  const __mmask32 kxx = (__mmask32)(_pdep_u32(kx, 0x55555555u) | _pdep_u32(kx, 0xAAAAAAAAu)); /* lanes 2t, 2t + 1 */
  const __m128i c0 = _mm_maskz_loadu_epi8(kx, r0), c1 = r1 ? _mm_maskz_loadu_epi8(kx, r1) : _mm_setzero_si128();
  const __m256i c = _mm256_set_m128i(_mm_unpackhi_epi8(c0, c1), _mm_unpacklo_epi8(c0, c1));
  return t16_put32(c, r1 ? kxx : kxx & 0x55555555u, t, o, sgx);
}

/* Word offset of row i's pair q in op(A)'s pack (its sig word; ex and sg
 * follow 16 and 32 words on).  A along k (not transposed): per row, kp16 / 16
 * blocks of 16 pairs, each three vectors sig, ex, sg of 16 32-bit words of
 * two 16-bit fields (l even low, l + 1 high).  Transposed (at): per 16 rows,
 * a pair's three vectors of one word a row, as B's panels. */
static inline size_t t16_aw(int at, size_t kp16, size_t i, size_t q) {
  return at ? ((i >> 4) * kp16 + q) * 48 + (i & 15) : i * kp16 * 3 + (q >> 4) * 48 + (q & 15);
}

/* 8-bit exponents (the exponent pass's form, four terms a 32-bit lane):
 * op(A)'s in int32 words of four terms l..l+3 (quad u = l / 4): not
 * transposed, row i's at i kp16 / 2 + u; transposed, per 16 rows as t16_aw,
 * ((i >> 4) kp16 / 2 + u) 16 + (i & 15).  op(B)'s per panel and quad, 64
 * bytes (column t's four at 4t).  A value: its exponent plus a bias
 * (t16_ctx's), so that the sums of two are in [0, 127] and v2's zero (the
 * padding too) saturates to -128: a sum with it is below -63. */
static inline size_t t16_a8w(int at, size_t kp16, size_t i) {
  return at ? (i >> 4) * kp16 / 2 * 16 + (i & 15) : i * kp16 / 2;
}

/* Two vectors of exponent words of 16 lanes (l, l + 1 in e0, l + 2, l + 3
 * in e1), less d, as 16 int32 words of four saturated bytes (l .. l + 3). */
T16 static inline __attribute__((always_inline)) __m512i t16_quad8(__m512i e0, __m512i e1, int d) {
  const __m512i x0 = _mm512_cvtepu16_epi32(_mm512_cvtsepi16_epi8(_mm512_sub_epi16(e0, _mm512_set1_epi16((short)d))));
  const __m512i x1 = _mm512_cvtepu16_epi32(_mm512_cvtsepi16_epi8(_mm512_sub_epi16(e1, _mm512_set1_epi16((short)d))));
  return _mm512_or_si512(x0, _mm512_slli_epi32(x1, 16));
}

/* op(A)'s panel pn, rows [16 pn, 16 pn + 16) (not transposed: each row's
 * codes along k, 32 a load; transposed: along m, two rows of 16
 * interleaved a pair), in t16_aw's layouts from the panel's start a (the
 * rows less 16 pn), and their 8-bit exponents into a8 (not NULL: the
 * stored exponent less d8).  Returns whether an element is not finite. */
T16 static int t16_pack_a1(const gemm_plan *p, const t16_tab *t, int16_t *a, size_t kp16, size_t pn, int8_t *a8, int d8) {
  const size_t k = p->k, cols = p->A->cols, i0 = pn * T16_PR, ni = p->m - i0 < T16_PR ? p->m - i0 : T16_PR;
  const uint8_t *codes = p->A->codes;
  int bad = 0;
  if (p->ta) {
    for (size_t q = 0; q < kp16; q++) {
      const size_t l = 2 * q;
      bad |= t16_put_pair(codes + (l < k ? l : 0) * cols + i0, l + 1 < k ? codes + (l + 1) * cols + i0 : NULL,
                          l < k ? ni : 0, t, a + 2 * t16_aw(1, kp16, 0, q), 1);
    }
    if (a8)
      for (size_t q = 0; q < kp16; q += 2) {
        const int16_t *e0 = a + 2 * t16_aw(1, kp16, 0, q) + 32, *e1 = a + 2 * t16_aw(1, kp16, 0, q + 1) + 32;
        _mm512_storeu_si512((int32_t *)a8 + t16_a8w(1, kp16, 0) + q / 2 * 16,
                            t16_quad8(_mm512_loadu_si512(e0), _mm512_loadu_si512(e1), d8));
      }
    return bad;
  }
  for (size_t il = 0; il < ni; il++)
    for (size_t l0 = 0; l0 < 2 * kp16; l0 += 32) {
      const __mmask32 kv = l0 >= k ? 0 : k - l0 >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (k - l0)) - 1);
      int16_t *o = a + 2 * t16_aw(0, kp16, il, l0 / 2);
      bad |= t16_put32(_mm256_maskz_loadu_epi8(kv, codes + (i0 + il) * cols + (l0 < k ? l0 : 0)), kv, t, o, 1);
      if (a8) /* the block's 32 exponents are terms l0 .. l0 + 31 in order */
        _mm256_storeu_si256((__m256i *)(a8 + 4 * t16_a8w(0, kp16, il) + l0),
                            _mm512_cvtsepi16_epi8(_mm512_sub_epi16(_mm512_loadu_si512(o + 32), _mm512_set1_epi16((short)d8))));
    }
  return bad;
}

/* op(B)^T: panels of 16 columns, [pair][sig, ex, sg][32]: lane 2t is
 * column t's term l = 2 pair, lane 2t + 1 its l + 1 (padding columns and
 * terms: zeros); panel pn here, from its start b.  B along n (not transposed): two rows of 16
 * codes interleaved a pair (t16_put_pair).  Transposed (a column's codes
 * along k): 32 codes of each of the 16 columns through the tables into tmp,
 * then each pair's vectors gathered across the columns.  Then the 8-bit
 * exponents into b8 (not NULL: kq quads, the stored exponent plus d8).
 * Returns whether an element is not finite. */
T16 static int t16_pack_b1(const gemm_plan *p, const t16_tab *t, int16_t *b, size_t kp, size_t pn, int8_t *b8, size_t kq,
                           int d8) {
  const size_t n = p->n, k = p->k, cols = p->B->cols;
  const uint8_t *codes = p->B->codes;
  const size_t x0 = pn * T16_NR, nx = n - x0 < T16_NR ? n - x0 : T16_NR;
  int bad = 0;
  if (!p->tb) {
    for (size_t q = 0; q < kp; q++) {
      const size_t l = 2 * q;
      bad |= t16_put_pair(codes + l * cols + x0, l + 1 < k ? codes + (l + 1) * cols + x0 : NULL, nx, t,
                          b + q * 6 * T16_NR, 0);
    }
  } else {
    _Alignas(64) int16_t tmp[T16_NR][96]; /* column t's 16 pairs as t16_put32 stores them */
    /* word (t, w, pair) of tmp: t 48 + w 16 + pair */
    const __m512i gi = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(48));
    for (size_t l0 = 0; l0 < k; l0 += 32) {
      const __mmask32 kv = k - l0 >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (k - l0)) - 1);
      for (size_t tt = 0; tt < T16_NR; tt++)
        bad |= t16_put32(_mm256_maskz_loadu_epi8(tt < nx ? kv : 0, codes + (x0 + (tt < nx ? tt : 0)) * cols + l0),
                         tt < nx ? kv : 0, t, tmp[tt], 0);
      for (size_t qq = 0; qq < 16 && l0 / 2 + qq < kp; qq++) {
        int16_t *o = b + (l0 / 2 + qq) * 6 * T16_NR;
        for (int w = 0; w < 3; w++)
          _mm512_storeu_si512(o + 32 * w, _mm512_i32gather_epi32(_mm512_add_epi32(gi, _mm512_set1_epi32(16 * w + (int)qq)),
                                                                 (const void *)tmp, 4));
      }
    }
  }
  if (b8)
    for (size_t u = 0; u < kq; u++) {
      const int16_t *e0 = b + 2 * u * 6 * T16_NR + 32;
      const __m512i v0 = _mm512_loadu_si512(e0),
                    v1 = 2 * u + 1 < kp ? _mm512_loadu_si512(e0 + 6 * T16_NR) : _mm512_set1_epi16(T16_ZM);
      _mm512_storeu_si512(b8 + u * 64, t16_quad8(v0, v1, -d8));
    }
  return bad;
}

/* The kernel on the blocking frame (gemm_block.h): A's panels of 16 rows
 * (t16_aw's words, then with e8 the 8-bit exponents, t16_a8w's, a8off
 * bytes on), B's of 16 columns (kp pairs, then with e8 kq quads of 8-bit
 * exponents, b8off bytes on); the micro-kernel 16 rows (8-row tiles, then
 * 4- and 1-row ones), over the blocks of k of t16_block_end, its state the rows'
 * promoted sums and c mid-piece. */
typedef struct t16_ctx {
  const gemm_plan *p;
  t16_tab ta, tb; /* A's and B's code tables */
  size_t kp, kp16, kq; /* pairs of k, padded to 16 in A; kq: quads of a panel in b8 */
  size_t a8off, b8off; /* where a panel's 8-bit exponents start */
  int e8;              /* the exponent pass in 8-bit lanes (else 16-bit) */
  int d8a, d8b;        /* the packs' 8-bit biases */
  int e8up;            /* an 8-bit sum plus e8up is the biased field (e + 127) */
  int at;              /* op(A) packed along m (t16_aw) */
} t16_ctx;

/* The frame's pack hooks: 0 when an element is not finite (the reference runs). */
static int t16_pack_a(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap) {
  const t16_ctx *x = ctx;
  (void)w;
  return !t16_pack_a1(p, &x->ta, Ap, x->kp16, pan, x->e8 ? (int8_t *)Ap + x->a8off : NULL, x->d8a);
}
static int t16_pack_b(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp) {
  const t16_ctx *x = ctx;
  (void)w;
  return !t16_pack_b1(p, &x->tb, Bp, x->kp, pan, x->e8 ? (int8_t *)Bp + x->b8off : NULL, x->kq, x->d8b);
}

/* k is walked in blocks of about T16_KB terms (whole groups), each block over
 * the tiles of a band of rows before the next, so that the block of the B
 * panel is read from L1 by all but the first tile.  Between blocks a tile
 * keeps its state in the frame's: the promoted sums, c inside a piece. */
#define T16_KB 256

/* A block [lb, le) of k: whether lb is inside a piece, and the first chunk
 * and PROMOTE segment ends after lb (SIZE_MAX when there are none), so a
 * tile finds its pieces by additions. */
typedef struct t16_blk {
  size_t lb, le, nc, ns, ch, sg;
  int mid;
} t16_blk;

static void t16_blk_init(const gemm_plan *p, size_t lb, size_t le, t16_blk *b) {
  const size_t ch = p->acc.chunk, sg = p->style == GEMM_PROMOTE ? p->seg : 0;
  b->lb = lb;
  b->le = le;
  b->ch = ch;
  b->sg = sg;
  b->nc = ch ? (lb / ch + 1) * ch : SIZE_MAX;
  b->ns = sg ? (lb / sg + 1) * sg : SIZE_MAX;
  b->mid = lb > 0 && exmy__gemm_piece_end(p, lb - 1) > lb;
}

/* The end of the block that starts at group start lb: whole groups (cut at
 * piece ends) until T16_KB terms or k. */
static size_t t16_block_end(const gemm_plan *p, size_t lb) {
  const size_t g = (size_t)p->acc.tc_group, k = p->k;
  size_t l = lb;
  while (l < k && l - lb < T16_KB) {
    const size_t pe = exmy__gemm_piece_end(p, l);
    l = l + g < pe ? l + g : pe;
  }
  return l;
}

/* One tile of NRW rows x 16 columns over the block [lb, le) of k (the steps of
 * tc_tile_512): rows ib.. of the A panel a (a8: its 8-bit exponents), output
 * rows ig.., columns j0.. (B's panel b, b8); row r's promoted sums at fs + 16 r,
 * its c mid-piece at cs + 16 r; the last block (le = k) leaves the tile's
 * sums in fs.  Exponents are carried
 * as biased fields (e + 127): A's packed exponents hold the 127, so a sum
 * of an A and a B exponent is the product's, and c's is its float field
 * (at least 1, the -126 floor).  E8: the exponent pass in 8-bit lanes. */
T16 static inline __attribute__((always_inline)) void t16_tile(const t16_ctx *x, const int32_t *a, const int32_t *a8p,
                                                               const int16_t *b, const int8_t *b8, size_t ib, size_t ig,
                                                               size_t j0, const int NRW, const t16_blk *bk, float *fs,
                                                               float *cs, const int E8) {
  const gemm_plan *p = x->p;
  const size_t k = p->k, g = (size_t)p->acc.tc_group, kp16 = x->kp16;
  const int F = p->acc.tc_frac, out = p->acc.tc_out_frac, at = x->at;
  const int promoted = p->acc.chunk || p->style == GEMM_PROMOTE;
  const __m512i e8up = _mm512_set1_epi32(x->e8up);
  const size_t qs = at ? 48 : 1, us = at ? 16 : 1; /* A's step from a pair (in a 16-pair block) / a quad to the next */
  size_t ro[T16_MR], r8[T16_MR]; /* the rows' words (t16_aw, t16_a8w; a pair's offset from them depends on q only) */
  _Pragma("GCC unroll 8")
  for (int r = 0; r < NRW; r++) {
    ro[r] = t16_aw(at, kp16, ib + (size_t)r, 0);
    r8[r] = E8 ? t16_a8w(at, kp16, ib + (size_t)r) : 0;
  }
  const __m512i cut = _mm512_set1_epi32((int32_t)(~0u << (23 - out)));
  /* M's bits from the biased emax: (emax + 23 - F) << 23 | 0x400000 */
  const __m512i mk = _mm512_set1_epi32((int32_t)((uint32_t)(23 - F) * (1u << 23) + 0x400000u));
  __m512 c[T16_MR], M[T16_MR];
  __m512i S[T16_MR], em[T16_MR], D[T16_MR];
  const size_t lb = bk->lb, le = bk->le;
  size_t nc = bk->nc, ns = bk->ns; /* the next chunk and segment ends after the piece's start */
  _Pragma("GCC unroll 8")
  for (int r = 0; r < NRW; r++) {
    if (lb == 0) _mm512_storeu_ps(fs + r * T16_NR, _mm512_setzero_ps());
    c[r] = bk->mid ? _mm512_loadu_ps(cs + r * T16_NR) : _mm512_setzero_ps();
  }
  for (size_t l0 = lb, l1, pe; l0 < le; l0 = l1) {
    /* exmy__gemm_piece_end(p, l0) without its divisions */
    pe = nc < ns ? nc : ns;
    pe = pe < k ? pe : k;
    nc += pe == nc ? bk->ch : 0;
    ns += pe == ns ? bk->sg : 0;
    l1 = pe < le ? pe : le;
    if (l0 > lb) {
      _Pragma("GCC unroll 8")
      for (int r = 0; r < NRW; r++) c[r] = _mm512_setzero_ps();
    }
    for (size_t g0 = l0; g0 < l1; g0 += g) {
      const size_t q0 = g0 / 2, q1 = ((g0 + g < l1 ? g0 + g : l1) + 1) / 2; /* g0 even */
      if (E8) {
        /* the products' largest exponent, four terms a lane (g0 a multiple of 4), then the
         * largest of the four: in the top byte, sign-extended */
        const int32_t *a8 = a8p + q0 / 2 * us;
        _Pragma("GCC unroll 8")
        for (int r = 0; r < NRW; r++) em[r] = _mm512_set1_epi8(-128);
        for (size_t u = q0 / 2; u < (q1 + 1) / 2; u++, a8 += us) {
          const __m512i e = _mm512_loadu_si512(b8 + u * 64);
          _Pragma("GCC unroll 8")
          for (int r = 0; r < NRW; r++)
            em[r] = _mm512_max_epi8(_mm512_adds_epi8(_mm512_set1_epi32(a8[r8[r]]), e), em[r]);
        }
        _Pragma("GCC unroll 8")
        for (int r = 0; r < NRW; r++) {
          const __m512i h = _mm512_max_epi8(em[r], _mm512_slli_epi32(em[r], 16));
          em[r] = _mm512_add_epi32(_mm512_srai_epi32(_mm512_max_epi8(h, _mm512_slli_epi32(h, 8)), 24), e8up);
        }
      } else {
        /* the products' largest exponent, two terms a lane, then the larger half; A's
         * pairs a step qs apart within a block of 16 (t16_aw) */
        _Pragma("GCC unroll 8")
        for (int r = 0; r < NRW; r++) em[r] = _mm512_set1_epi16(INT16_MIN);
        for (size_t qa = q0, qe; qa < q1; qa = qe) {
          qe = at || q1 - (qa & ~(size_t)15) <= 16 ? q1 : (qa | 15) + 1;
          const int32_t *ap = a + t16_aw(at, kp16, 0, qa) + 16;
          for (size_t q = qa; q < qe; q++, ap += qs) {
            const __m512i e = _mm512_loadu_si512(b + (q * 3 + 1) * 2 * T16_NR);
            _Pragma("GCC unroll 8")
            for (int r = 0; r < NRW; r++)
              em[r] = _mm512_max_epi16(em[r], _mm512_add_epi16(e, _mm512_set1_epi32(ap[ro[r]])));
          }
        }
        _Pragma("GCC unroll 8")
        for (int r = 0; r < NRW; r++)
          em[r] = _mm512_max_epi32(_mm512_srai_epi32(em[r], 16), _mm512_srai_epi32(_mm512_slli_epi32(em[r], 16), 16));
      }
      _Pragma("GCC unroll 8")
      for (int r = 0; r < NRW; r++) {
        const __m512i cb = _mm512_castps_si512(c[r]);
        /* c's biased exponent: its field, at least 1 (a zero c: the -126 floor, v1's rule;
         * v2's ez < -126 would not change emax (admitted: every product's exponent >= -126,
         * and a group whose terms are all zero gives +0 for any emax) */
        const __m512i ec = _mm512_max_epi32(_mm512_srli_epi32(_mm512_slli_epi32(cb, 1), 24), _mm512_set1_epi32(1));
        const __m512i emax = _mm512_max_epi32(em[r], ec); /* >= 1 */
        /* M = 1.5 2^(emax - F + 23) (normal: checked at dispatch) */
        M[r] = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_slli_epi32(emax, 23), mk));
        /* c's term: |c| truncated at 2^(emax - F) in M's ulps, signed */
        const __m512 ca = _mm512_castsi512_ps(_mm512_and_si512(cb, _mm512_set1_epi32(0x7FFFFFFF)));
        const __m512i tm = _mm512_sub_epi32(_mm512_castps_si512(_mm512_add_round_ps(M[r], ca, T16_RZ)), _mm512_castps_si512(M[r]));
        S[r] = _mm512_mask_sub_epi32(tm, _mm512_movepi32_mask(cb), _mm512_setzero_si512(), tm);
        D[r] = _mm512_or_si512(emax, _mm512_slli_epi32(emax, 16)); /* emax in both words (0 < emax < 2^15) */
      }
      /* the terms: (sa sb 2^L) >> (emax - ea - eb), signed by A's sign word (+-1 xor 1) xor
       * B's (+-1), summed a pair a lane; A's pairs a step qs apart within a block */
      for (size_t qa = q0, qe; qa < q1; qa = qe) {
        qe = at || q1 - (qa & ~(size_t)15) <= 16 ? q1 : (qa | 15) + 1;
        const int32_t *ap = a + t16_aw(at, kp16, 0, qa);
        const int16_t *bq = b + qa * 6 * T16_NR;
        for (size_t q = qa; q < qe; q++, ap += qs, bq += 6 * T16_NR) {
          const __m512i sb = _mm512_loadu_si512(bq), e = _mm512_loadu_si512(bq + 2 * T16_NR),
                        sg = _mm512_loadu_si512(bq + 4 * T16_NR);
          _Pragma("GCC unroll 8")
          for (int r = 0; r < NRW; r++) {
            const int32_t *ao = ap + ro[r];
            const __m512i mag = _mm512_mullo_epi16(_mm512_set1_epi32(ao[0]), sb);
            const __m512i sh = _mm512_sub_epi16(D[r], _mm512_add_epi16(e, _mm512_set1_epi32(ao[16])));
            const __m512i w = _mm512_xor_si512(_mm512_set1_epi32(ao[32]), sg);
            S[r] = _mm512_dpwssd_epi32(S[r], _mm512_srlv_epi16(mag, sh), w);
          }
        }
      }
      _Pragma("GCC unroll 8")
      for (int r = 0; r < NRW; r++) {
        /* |S| < 2^22 ulps: M + S stays in M's binade, the difference is exact */
        const __m512 v = _mm512_sub_ps(_mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(M[r]), S[r])), M[r]);
        c[r] = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(v), cut)); /* truncated to out bits */
      }
    }
    if (l1 < pe) { /* the block ends mid-piece: c waits in st */
      _Pragma("GCC unroll 8")
      for (int r = 0; r < NRW; r++) _mm512_storeu_ps(cs + r * T16_NR, c[r]);
    } else if (p->style == GEMM_PROMOTE) {
      for (int r = 0; r < NRW; r++) {
        float wr[16];
        exmy__gemm_promote_w16(p, ig + (size_t)r, j0, l0, wr);
        _mm512_storeu_ps(fs + r * T16_NR, _mm512_fmadd_ps(_mm512_loadu_ps(wr), c[r], _mm512_loadu_ps(fs + r * T16_NR)));
      }
    } else if (promoted) {
      /* a chunk's weight is 1: fmaf(1, c, fs) is c + fs */
      _Pragma("GCC unroll 8")
      for (int r = 0; r < NRW; r++) _mm512_storeu_ps(fs + r * T16_NR, _mm512_add_ps(c[r], _mm512_loadu_ps(fs + r * T16_NR)));
    }
  }
  if (le < k || promoted) return; /* promoted: the sums are in fs already */
  _Pragma("GCC unroll 8")
  for (int r = 0; r < NRW; r++) _mm512_storeu_ps(fs + r * T16_NR, k ? c[r] : _mm512_setzero_ps());
}

/* The frame's micro-kernel (gemm_block.h, with block_end): rows [i0, i0 +
 * rows) of the A panel Ap x the 16 columns of B's panel Bp over the block
 * [l0, l0 + len) of k, 8-row tiles, then 4-row and 1-row ones; c: the rows'
 * promoted sums (16 floats a row), then their c mid-piece. */
T16 static void t16_micro(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap, const void *Bp,
                          size_t rows, size_t cols, float *c) {
  const t16_ctx *x = ctx;
  t16_blk bk;
  t16_blk_init(x->p, l0, l0 + len, &bk);
  const int32_t *a = Ap, *a8 = x->e8 ? (const int32_t *)((const char *)Ap + x->a8off) : NULL;
  const int16_t *b = Bp;
  const int8_t *b8 = x->e8 ? (const int8_t *)Bp + x->b8off : NULL;
  float *fs = c, *cs = c + T16_PR * T16_NR;
  size_t r = 0;
  (void)cols;
  if (x->e8) {
    for (; r + T16_MR <= rows; r += T16_MR) t16_tile(x, a, a8, b, b8, r, i0 + r, j0, T16_MR, &bk, fs + r * T16_NR, cs + r * T16_NR, 1);
    for (; r + 4 <= rows; r += 4) t16_tile(x, a, a8, b, b8, r, i0 + r, j0, 4, &bk, fs + r * T16_NR, cs + r * T16_NR, 1);
    for (; r < rows; r++) t16_tile(x, a, a8, b, b8, r, i0 + r, j0, 1, &bk, fs + r * T16_NR, cs + r * T16_NR, 1);
  } else {
    for (; r + T16_MR <= rows; r += T16_MR) t16_tile(x, a, a8, b, b8, r, i0 + r, j0, T16_MR, &bk, fs + r * T16_NR, cs + r * T16_NR, 0);
    for (; r + 4 <= rows; r += 4) t16_tile(x, a, a8, b, b8, r, i0 + r, j0, 4, &bk, fs + r * T16_NR, cs + r * T16_NR, 0);
    for (; r < rows; r++) t16_tile(x, a, a8, b, b8, r, i0 + r, j0, 1, &bk, fs + r * T16_NR, cs + r * T16_NR, 0);
  }
}

static size_t t16_bend(const void *ctx, const gemm_plan *p, size_t lb) {
  (void)ctx;
  return t16_block_end(p, lb);
}

int exmy__gemm_fast_tc16(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  const exmy_accum *a = &p->acc;
  const exmy_format *fa = &p->A->fmt, *fb = &p->B->fmt;
  const int F = a->tc_frac, L = F - fa->mbits - fb->mbits;
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("bmi2") || fa->bits > 8 || fb->bits > 8 || L < 0) return 0;
  /* a product's shifted significand fits a signed 16-bit lane */
  if ((long)((2 << fa->mbits) - 1) * (long)((2 << fb->mbits) - 1) << L > 32767) return 0;
  /* groups start at even l (the pair lanes) */
  if (a->tc_group % 2 || (a->chunk && a->chunk % 2) || (p->style == GEMM_PROMOTE && p->seg % 2)) return 0;
  /* every product's exponent is at least -100 (the caller's check), above c's floor
   * (-126); under v2 the zero exponent below that floor: a zero term never sets emax
   * (no zero-column test as in the float kernel) */
  if (a->tc_zero && a->tc_zero >= -126) return 0;
  /* the exponent pass in 8-bit lanes: four terms a lane, so groups start at l a multiple
   * of 4; v2 (a zero is below all: saturated); biases 63 - ha (A) and 64 - hb (B), ha and hb
   * the top nominal exponents, put a sum of two in [127 - spans, 127], the field e + 127
   * less ha + hb; a sum
   * with a zero (<= -64) stays below c's field (>= 1) after adding that back */
  const int ha = fa->emax > fa->emin ? fa->emax : fa->emin, hb = fb->emax > fb->emin ? fb->emax : fb->emin; /* top nominal exponents */
  const int e8 = a->tc_zero && a->tc_group % 4 == 0 && a->chunk % 4 == 0 && (p->style != GEMM_PROMOTE || p->seg % 4 == 0) &&
                 ha - fa->emin <= 120 && hb - fb->emin <= 120 && ha + hb <= 60 && ha + hb >= -60;
  const size_t m = p->m, k = p->k, kp = (k + 1) / 2, kp16 = (kp + 15) / 16 * 16, kq = (kp + 1) / 2;
  t16_ctx x = {.p = p, .kp = kp, .kp16 = kp16, .kq = kq, .e8 = e8, .at = p->ta, .e8up = ha + hb};
  if (!t16_table(exmy__gemm_ws_lut8(p->ws, 0, fa), fa, 0, !a->tc_zero, 127, 1, &x.ta) ||
      !t16_table(exmy__gemm_ws_lut8(p->ws, 1, fb), fb, L, !a->tc_zero, 0, 0, &x.tb))
    return 0;
  /* A's panel: 16 rows of 3 kp16 words, then 2 kp16 bytes a row of 8-bit exponents; B's:
   * kp pairs of 3 vectors of 32 words, then 64 kq bytes; A8 = e + 63 - ha = (e + 127) -
   * (64 + ha); B8 = e + 64 - hb */
  x.a8off = T16_PR * 3 * kp16 * sizeof(int32_t);
  x.b8off = kp * 6 * T16_NR * sizeof(int16_t);
  x.d8a = 64 + ha;
  x.d8b = 64 - hb;
  /* bands of up to 64 rows (the more tiles read a block of B from L1, the better), at
   * least two a thread when m allows (a multiple of the panel's 16 rows) */
  size_t band = (m + 2 * (size_t)nt - 1) / (2 * (size_t)nt);
  band = band > T16_BAND ? T16_BAND : (band + T16_PR - 1) / T16_PR * T16_PR;
  const gemm_frame_kernel kd = {.ctx = &x, .mr = T16_PR, .nr = T16_NR, .mt = band ? band : T16_PR,
                                .pa = x.a8off + (e8 ? T16_PR * 2 * kp16 : 0), .pb = x.b8off + (e8 ? 64 * kq : 0),
                                .pack_a = t16_pack_a, .pack_b = t16_pack_b, .micro = t16_micro,
                                .block_end = t16_bend, .sw = 2};
  return exmy__gemm_frame_run(&kd, p, nt, flags, amax);
}
#endif /* __x86_64__ */
