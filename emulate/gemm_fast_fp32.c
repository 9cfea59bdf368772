/* gemm_fast_fp32.c: the fast kernel of acc=fp32 (and its chunked and
 * promoted forms): operands decoded straight from their codes into packed
 * float panels (a table, or a shift for binary32 and its truncations), on
 * the blocking frame (gemm_block.c) with blocks of k (block_end), a tile's
 * running sums carried across them, so each output element sees c =
 * fmaf(a, b, c) in k order as the reference.  A chunk of at most a block is
 * summed and added inside the micro-kernel (F + s); other pieces
 * (PROMOTE's weights, long chunks) are promoted into the tile's F at each
 * piece's end, F = fmaf(w, S, F).  Then the frame's row epilogue.  Buffers
 * come from the plan's workspace. */
#include "emulate/gemm_kernels.h"
#include "emulate/gemm_block.h"
#include "emulate/gemm_ws.h"
#include "emulate/gemm_epilogue.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)

/* How an operand's codes become floats: fp32(decode(code)), exact for
 * every format that fits binary32, as the reference's fp32(a). */
typedef struct opdec {
  const exmy_format *f;
  const void *codes;
  int sh;             /* >= 0: binary32 or a truncation of it (bf16, E8My), the code shifted left sh bits is the float */
  const float *lut;   /* else the value of every code (formats of <= 16 bits; the workspace's) */
  /* ar8: 8-bit codes decoded with integer operations on AVX-512 (ar8_setup): the code's
   * 7 magnitude bits shifted left ar_s, plus ar_off, and the sign; the codes of the
   * lowest and highest exponent field (subnormals, and inf/NaN/max) from 16-entry
   * tables indexed by sign and mantissa */
  int ar8;
  uint32_t ar_s, ar_off, ar_emask, ar_mmask, ar_m;
  float ar_sub[16], ar_top[16];
} opdec;

/* d->ar8 when every one of the 256 codes decodes to its table value's bits
 * that way (formats of 8 bits with at most 3 mantissa bits: e4m3fn, e5m2,
 * e4m3fnuz, e5m2fnuz, ...; fnuz's NaN 0x80 comes from the low table), on a
 * CPU with AVX-512 BW and VL (dec16_ar8's masked byte loads). */
static void ar8_setup(opdec *d) {
  const exmy_format *f = d->f;
  d->ar8 = 0;
  if (!d->lut || f->bits != 8 || !f->is_signed || f->mbits > 3 || f->ebits < 1 || f->ebits + f->mbits != 7) return;
  if (!__builtin_cpu_supports("avx512bw") || !__builtin_cpu_supports("avx512vl")) return;
  memset(d->ar_sub, 0, sizeof d->ar_sub); /* entries past 2^(M + 1) are never picked */
  memset(d->ar_top, 0, sizeof d->ar_top);
  const uint32_t M = (uint32_t)f->mbits, emask = ((1u << f->ebits) - 1) << M, mmask = (1u << M) - 1;
  d->ar_s = 23 - M;
  d->ar_off = (uint32_t)(127 - f->bias) << 23;
  d->ar_emask = emask;
  d->ar_mmask = mmask;
  d->ar_m = M;
  for (uint32_t c = 0; c < 256; c++) {
    const uint32_t t = (c & mmask) | ((c >> 7) << M), e = c & emask;
    uint32_t want;
    memcpy(&want, &d->lut[c], 4);
    if (e == 0) d->ar_sub[t] = d->lut[c];
    else if (e == emask) d->ar_top[t] = d->lut[c];
    else if (((((c & 0x7F) << d->ar_s) + d->ar_off) | ((c >> 7) << 31)) != want) return;
  }
  d->ar8 = 1;
}

static int opdec_init(opdec *d, gemm_ws *ws, int w, const exmy_qtensor *q) {
  const exmy_format *f = &q->fmt;
  d->f = f;
  d->codes = q->codes;
  d->lut = NULL;
  d->ar8 = 0;
  d->sh = f->ebits == 8 && f->bias == 127 && f->is_signed && f->has_zero && f->inf == EXMY_INF_IEEE &&
                  f->nan == EXMY_NAN_IEEE && f->mbits <= 23 && f->bits > 8
              ? 23 - f->mbits /* sign, 8 exponent bits, mbits: the top bits of binary32's layout */
              : -1;
  if (d->sh >= 0) return 0;
  if (f->bits <= 8) {
    d->lut = exmy__gemm_ws_lut8(ws, w, f); /* every byte: above the format's bits, NaN */
    ar8_setup(d);
  } else if (f->bits <= 16) {
    d->lut = exmy__gemm_ws_lut16(ws, w, f);
    if (!d->lut) return -1;
  }
  return 0;
}

/* 16-bit codes of a cut binary32 (bf16, E8M1..E8M7): the float is the code shifted left sh bits */
static inline int cut16(const opdec *d) { return d->sh > 0 && d->f->bits <= 16; }

static inline float dec_at(const opdec *d, size_t idx) {
  if (d->sh >= 0) {
    const uint32_t b = d->f->bits > 16 ? ((const uint32_t *)d->codes)[idx] << d->sh
                                       : (uint32_t)((const uint16_t *)d->codes)[idx] << d->sh;
    float v;
    memcpy(&v, &b, 4);
    return v;
  }
  return d->lut ? d->lut[exmy_code_get(d->f, d->codes, idx)] : (float)exmy_code_to_f64(d->f, exmy_code_get(d->f, d->codes, idx));
}


/* ---- packing with AVX-512: the same values as the scalar loops ---- */
#include <immintrin.h>

/* 16 x 16 floats transposed in registers: r[t] (row t) becomes column t. */
__attribute__((target("avx512f"))) static inline void tr16x16(__m512 r[16]) {
  __m512 t[16];
  _Pragma("GCC unroll 16") for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  _Pragma("GCC unroll 16") for (int i = 0; i < 4; i++) {
    r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  _Pragma("GCC unroll 16") for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xdd);
    t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xdd);
  }
  _Pragma("GCC unroll 16") for (int i = 0; i < 4; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xdd);
    r[4 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0x88);
    r[12 + i] = _mm512_shuffle_f32x4(t[4 + i], t[12 + i], 0xdd);
  }
}

/* 16 8-bit codes (the lanes of km) decoded as d->ar8 says: the same bits as d->lut. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512 dec16_ar8(const opdec *d, const uint8_t *c8,
                                                                                   __mmask16 km) {
  const __m512i c = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(km, c8));
  const __m512i mag = _mm512_add_epi32(_mm512_sll_epi32(_mm512_and_si512(c, _mm512_set1_epi32(0x7F)),
                                                        _mm_cvtsi32_si128((int)d->ar_s)),
                                       _mm512_set1_epi32((int)d->ar_off));
  __m512 v = _mm512_castsi512_ps(_mm512_or_si512(mag, _mm512_slli_epi32(_mm512_srli_epi32(c, 7), 31)));
  const __m512i t = _mm512_or_si512(_mm512_and_si512(c, _mm512_set1_epi32((int)d->ar_mmask)),
                                    _mm512_sll_epi32(_mm512_srli_epi32(c, 7), _mm_cvtsi32_si128((int)d->ar_m)));
  const __m512i e = _mm512_and_si512(c, _mm512_set1_epi32((int)d->ar_emask));
  v = _mm512_mask_permutexvar_ps(v, _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32((int)d->ar_emask)), t,
                                 _mm512_loadu_ps(d->ar_top));
  return _mm512_mask_permutexvar_ps(v, _mm512_testn_epi32_mask(e, e), t, _mm512_loadu_ps(d->ar_sub));
}

/* 16 values along l of row x as floats: binary32 itself, 16-bit codes of a
 * cut binary32 (bf16, E8My up to 16 bits) shifted left sh bits, or 8-bit
 * codes (d->ar8). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static inline __m512 load16_512(const opdec *d, size_t idx) {
  if (d->ar8) return dec16_ar8(d, (const uint8_t *)d->codes + idx, 0xFFFF);
  if (d->sh == 0) return _mm512_loadu_ps((const float *)d->codes + idx);
  const __m256i c = _mm256_loadu_si256((const __m256i *)((const uint16_t *)d->codes + idx));
  return _mm512_castsi512_ps(_mm512_sll_epi32(_mm512_cvtepu16_epi32(c), _mm_cvtsi32_si128(d->sh)));
}

/* Rows [x0, x0 + nx) of an x-major operand (row x's k values contiguous
 * from x * sx; binary32, 16-bit codes of a cut binary32, or 8-bit codes
 * decoded as d->ar8 says) into the panel
 * Xp ([l][w]) in 16 x 16 blocks: 16 rows loaded along l, transposed in
 * registers, each l's values stored at Xp + l * w.  Returns the k steps
 * done (a multiple of 16); the caller does the rest.  (8-bit codes gathered
 * from their table, this way or per l, were no faster than the scalar
 * loops: the gathers bound them; dec16_ar8 decodes them without a gather.) */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static size_t pack_xmajor_512(const opdec *d, size_t x0, size_t nx, size_t sx,
                                                                 size_t k, size_t w, float *Xp) {
  const size_t kb = k & ~(size_t)15;
  for (size_t xg = 0; xg < nx; xg += 16) {
    const size_t ng = nx - xg < 16 ? nx - xg : 16;
    const __mmask16 sm = (__mmask16)((1u << ng) - 1);
    for (size_t l0 = 0; l0 < kb; l0 += 16) {
      __m512 r[16];
      _Pragma("GCC unroll 16") for (size_t t = 0; t < 16; t++) {
        r[t] = t < ng ? load16_512(d, (x0 + xg + t) * sx + l0) : _mm512_setzero_ps();
      }
      tr16x16(r);
      _Pragma("GCC unroll 16") for (size_t t = 0; t < 16; t++) _mm512_mask_storeu_ps(Xp + (l0 + t) * w + xg, sm, r[t]);
    }
  }
  return kb;
}

/* Rows [x0, x0 + nx) of an operand stored l-major (row x's element l at
 * x + l * sl), 8-bit codes decoded as d->ar8 says, into the panel Xp. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static void pack_xrows_ar8(const opdec *d, size_t x0, size_t nx,
                                                                               size_t sl, size_t k, size_t w, float *Xp) {
  const uint8_t *c = d->codes;
  for (size_t l = 0; l < k; l++)
    for (size_t xg = 0; xg < nx; xg += 16) {
      const __mmask16 km = nx - xg >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (nx - xg)) - 1);
      _mm512_mask_storeu_ps(Xp + l * w + xg, km, dec16_ar8(d, c + x0 + xg + l * sl, km));
    }
}

/* Packed operand: element (x, l) of op(A) (x < rows = m) or op(B)^T (x < n)
 * at stored index x*sx + l*sl, panel pn of w rows ([l][w]) into Xp, zero
 * padded.  Under INNER the value is fp32(a * sa), as the reference. */
static void pack_panel(const gemm_plan *p, const opdec *d, const float *scales, size_t rows, size_t sx, size_t sl,
                       size_t w, float *Xp, size_t pn, int v512) {
  const size_t k = p->k;
  const int inner = p->style == GEMM_INNER;
  {
    const size_t x0 = pn * w, xe = x0 + w < rows ? x0 + w : rows;
    if (xe - x0 < w)
      for (size_t l = 0; l < k; l++)
        for (size_t r = xe - x0; r < w; r++) Xp[l * w + r] = 0.0f;
    if (inner) {
      for (size_t x = x0; x < xe; x++)
        for (size_t l = 0; l < k; l++)
          Xp[l * w + x - x0] = (float)(exmy_code_to_f64(d->f, exmy_code_get(d->f, d->codes, x * sx + l * sl)) *
                                       (double)scales[x * p->nseg + l / p->seg]);
    } else if (v512 && sl == 1 && (d->sh == 0 || cut16(d) || d->ar8)) {
      const size_t kb = pack_xmajor_512(d, x0, xe - x0, sx, k, w, Xp);
      for (size_t x = x0; x < xe; x++)
        for (size_t l = kb; l < k; l++) Xp[l * w + x - x0] = dec_at(d, x * sx + l);
    } else if (v512 && d->ar8 && sx == 1) { /* FP8 along rows, 16 a vector */
      pack_xrows_ar8(d, x0, xe - x0, sl, k, w, Xp);
    } else if (d->lut && d->f->bits <= 8 && sx == 1) { /* FP8 along rows: contiguous codes */
      const uint8_t *c = d->codes;
      for (size_t l = 0; l < k; l++)
        for (size_t x = x0; x < xe; x++) Xp[l * w + x - x0] = d->lut[c[x + l * sl]];
    } else if (d->lut && d->f->bits <= 8) {
      const uint8_t *c = d->codes;
      for (size_t x = x0; x < xe; x++)
        for (size_t l = 0; l < k; l++) Xp[l * w + x - x0] = d->lut[c[x * sx + l]];
    } else if (d->lut && d->f->bits <= 16 && sx == 1) { /* 16-bit codes along rows, the load inline */
      const uint16_t *c = d->codes;
      for (size_t l = 0; l < k; l++)
        for (size_t x = x0; x < xe; x++) Xp[l * w + x - x0] = d->lut[c[x + l * sl]];
    } else if (d->lut && d->f->bits <= 16) {
      const uint16_t *c = d->codes;
      for (size_t x = x0; x < xe; x++)
        for (size_t l = 0; l < k; l++) Xp[l * w + x - x0] = d->lut[c[x * sx + l]];
    } else if (d->sh == 0 && sx == 1) { /* f32 along rows: a copy */
      const float *c = d->codes;
      for (size_t l = 0; l < k; l++) memcpy(Xp + l * w, c + x0 + l * sl, (xe - x0) * sizeof(float));
    } else if (d->sh == 0) {
      const float *c = d->codes;
      for (size_t x = x0; x < xe; x++)
        for (size_t l = 0; l < k; l++) Xp[l * w + x - x0] = c[x * sx + l];
    } else if (cut16(d) && sx == 1) { /* bf16, E8My along rows: a shift, vectorized */
      const uint16_t *c = d->codes;
      const int sh = d->sh;
      for (size_t l = 0; l < k; l++)
        for (size_t x = x0; x < xe; x++) {
          const uint32_t b = (uint32_t)c[x + l * sl] << sh;
          memcpy(Xp + l * w + x - x0, &b, 4);
        }
    } else if (sx == 1) {
      for (size_t l = 0; l < k; l++)
        for (size_t x = x0; x < xe; x++) Xp[l * w + x - x0] = dec_at(d, x + l * sl);
    } else {
      for (size_t x = x0; x < xe; x++)
        for (size_t l = 0; l < k; l++) Xp[l * w + x - x0] = dec_at(d, x * sx + l * sl);
    }
  }
}

/* The blocking frame's pack hooks (gemm_block.h; its packing loop starts a
 * team only with two threads or more: an inactive OpenMP region still
 * starts a team and wakes a futex, per call, and attention's hundreds of
 * small products run one per thread inside exmy_gemm_batch's team).
 * op(A)(i, l): A stored m x k at i*ca + l, or k x m at l*ca + i; op(B)(l,
 * j): k x n at l*cb + j, or n x k at j*cb + l. */
typedef struct fp32_pack {
  opdec da, db;
  size_t ca, cb;
  int v512; /* the AVX-512 packer (with the AVX-512 micro-kernel) */
} fp32_pack;

static int fp32_pack_a(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap) {
  const fp32_pack *x = ctx;
  pack_panel(p, &x->da, p->as, p->m, p->ta ? 1 : x->ca, p->ta ? x->ca : 1, w, Ap, pan, x->v512);
  return 1;
}
static int fp32_pack_b(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp) {
  const fp32_pack *x = ctx;
  pack_panel(p, &x->db, p->bs, p->n, p->tb ? x->cb : 1, p->tb ? 1 : x->cb, w, Bp, pan, x->v512);
  return 1;
}

/* The frame's pack kernel for p's operands in panels of mr rows of A and nr
 * columns of B (x: its context, filled here); 0 when the workspace cannot
 * grow. */
static int fp32_kernel(const gemm_plan *p, size_t mr, size_t nr, int v512, fp32_pack *x, gemm_frame_kernel *kd) {
  *x = (fp32_pack){.ca = p->A->cols, .cb = p->B->cols, .v512 = v512};
  if (opdec_init(&x->da, p->ws, 0, p->A) || opdec_init(&x->db, p->ws, 1, p->B)) return 0;
  *kd = (gemm_frame_kernel){.ctx = x, .mr = mr, .nr = nr, .pa = p->k * mr * sizeof(float),
                            .pb = p->k * nr * sizeof(float), .pack_a = fp32_pack_a, .pack_b = fp32_pack_b};
  return 1;
}

/* The running sums on the frame (block_end): blocks of at most a slab of
 * k; a tile's state is its running sums S (mr x nr), or with promoted
 * pieces F then S, each mr x nr (F = fmaf(w, S, F) at each piece's end, as
 * the reference). */
typedef struct fp32_run {
  fp32_pack pk;
  const gemm_plan *p;
  micro_fn fn;
  size_t mr, nr;
  size_t slab; /* the k steps of a block (a multiple of the fused chunk) */
  size_t pl;   /* fused chunk (micro_fn's pl), else 0 */
} fp32_run;

/* The first step of the piece holding l: the last cut (chunk or PROMOTE
 * segment multiple) at or below l, as exmy__gemm_piece_end cuts. */
static size_t piece_start(const gemm_plan *p, size_t l) {
  size_t s = 0;
  if (p->acc.chunk) s = l / p->acc.chunk * p->acc.chunk;
  if (p->style == GEMM_PROMOTE && l / p->seg * p->seg > s) s = l / p->seg * p->seg;
  return s;
}

static size_t fp32_bend(const void *ctx, const gemm_plan *p, size_t lb) {
  const fp32_run *x = ctx;
  return lb + x->slab < p->k ? lb + x->slab : p->k;
}
static size_t fp32_bend_promoted(const void *ctx, const gemm_plan *p, size_t lb) {
  (void)ctx;
  const size_t pe = exmy__gemm_piece_end(p, piece_start(p, lb));
  return lb + GEMM_KC < pe ? lb + GEMM_KC : pe;
}

static void fp32_micro(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap, const void *Bp,
                       size_t rows, size_t cols, float *c) {
  (void)i0, (void)j0, (void)rows, (void)cols;
  const fp32_run *x = ctx;
  x->fn((const float *)Ap + l0 * x->mr, (const float *)Bp + l0 * x->nr, len, c, x->nr, l0 == 0, x->pl);
}
static void fp32_micro_promoted(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap,
                                const void *Bp, size_t rows, size_t cols, float *c) {
  const fp32_run *x = ctx;
  const gemm_plan *p = x->p;
  const size_t nr = x->nr, ps = piece_start(p, l0);
  float *F = c, *S = c + x->mr * nr;
  x->fn((const float *)Ap + l0 * x->mr, (const float *)Bp + l0 * nr, len, S, nr, l0 == ps, 0);
  if (l0 + len != exmy__gemm_piece_end(p, ps)) return;
  for (size_t r = 0; r < rows; r++)
    for (size_t q = 0; q < cols; q++)
      F[r * nr + q] = fmaf(exmy__gemm_promote_w(p, i0 + r, j0 + q, ps), S[r * nr + q], ps ? F[r * nr + q] : 0.0f);
}

/* The rows of a parallel task: at most GEMM_MC, a multiple of mr, the
 * task's state within the frame's GEMM_FRAME_TILE floats. */
static size_t task_rows(size_t mr, size_t nr, size_t floats) {
  size_t mt = GEMM_FRAME_TILE / (nr * floats);
  if (mt > GEMM_MC) mt = GEMM_MC;
  return mt / mr * mr;
}

int exmy__gemm_fast_fp32(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  gemm_micro mk;
  if (!exmy__gemm_micro(0, &mk)) return 0;
  const size_t mr = mk.mr, nr = mk.nr, ch = p->acc.chunk;
  const int fused = ch && ch <= GEMM_KC && p->style != GEMM_PROMOTE; /* chunks inside the micro-kernel */
  const int promoted = !fused && (ch || p->style == GEMM_PROMOTE);
  fp32_run x = {.p = p, .fn = mk.fn, .mr = mr, .nr = nr, .slab = fused ? ch * (GEMM_KC / ch) : GEMM_KC,
                .pl = fused ? ch : 0};
  gemm_frame_kernel kd;
  if (!fp32_kernel(p, mr, nr, nr == 32, &x.pk, &kd)) return 0;
  kd.ctx = &x; /* fp32_run starts with its fp32_pack */
  kd.micro = promoted ? fp32_micro_promoted : fp32_micro;
  kd.block_end = promoted ? fp32_bend_promoted : fp32_bend;
  kd.sw = promoted ? 2 : 1;
  kd.mt = task_rows(mr, nr, kd.sw);
  return exmy__gemm_frame_run(&kd, p, nt, flags, amax);
}
#endif /* __x86_64__ */

/* ---- fp32:pairwise ---------------------------------------------------------
 * The same packed operands (A one row per panel, B in panels of 32 columns);
 * each piece's products x_l = fmaf(a, b, +0) summed over the reference's
 * tree (halves of floor(n/2)), 32 outputs at once: every node is one IEEE
 * addition per lane, as the reference's; on the frame, one block per piece,
 * the micro-kernel promoting it into the tile's F in its own order (P + F,
 * or fmaf(w, P, F)).  AVX-512 only (else the reference). */
#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f"))) static void pw_sum(const float *a, const float *Bp, size_t n, __m512 *s0,
                                                        __m512 *s1) {
  const __m512 z = _mm512_setzero_ps();
  if (n == 0) {
    *s0 = *s1 = z;
    return;
  }
  if (n <= 3) { /* x0; x0 + x1; x0 + (x1 + x2) */
    const __m512 a0 = _mm512_set1_ps(a[0]);
    __m512 x0 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(Bp), z), x1 = _mm512_fmadd_ps(a0, _mm512_loadu_ps(Bp + 16), z);
    if (n >= 2) {
      const __m512 a1 = _mm512_set1_ps(a[1]);
      __m512 y0 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(Bp + 32), z), y1 = _mm512_fmadd_ps(a1, _mm512_loadu_ps(Bp + 48), z);
      if (n == 3) {
        const __m512 a2 = _mm512_set1_ps(a[2]);
        y0 = _mm512_add_ps(y0, _mm512_fmadd_ps(a2, _mm512_loadu_ps(Bp + 64), z));
        y1 = _mm512_add_ps(y1, _mm512_fmadd_ps(a2, _mm512_loadu_ps(Bp + 80), z));
      }
      x0 = _mm512_add_ps(x0, y0);
      x1 = _mm512_add_ps(x1, y1);
    }
    *s0 = x0;
    *s1 = x1;
    return;
  }
  const size_t h = n / 2;
  __m512 x0, x1, y0, y1;
  pw_sum(a, Bp, h, &x0, &x1);
  pw_sum(a + h, Bp + h * 32, n - h, &y0, &y1);
  *s0 = _mm512_add_ps(x0, y0);
  *s1 = _mm512_add_ps(x1, y1);
}

/* The frame's blocks (block_end): the pieces, or all of k when there are none. */
typedef struct pw_run {
  fp32_pack pk;
  const gemm_plan *p;
  int pieces;
} pw_run;

static size_t pw_bend(const void *ctx, const gemm_plan *p, size_t lb) {
  const pw_run *x = ctx;
  return x->pieces ? exmy__gemm_piece_end(p, lb) : p->k;
}

/* Row i0, columns [j0, j0 + 32): the piece [l0, l0 + len), promoted as the
 * reference into the tile's state c (its F; without pieces, the sum). */
__attribute__((target("avx512f"))) static void pw_micro(const void *ctx, size_t i0, size_t j0, size_t l0,
                                                          size_t len, const void *Ap, const void *Bp, size_t rows,
                                                          size_t cols, float *c) {
  (void)rows, (void)cols;
  const pw_run *x = ctx;
  const gemm_plan *p = x->p;
  const size_t n = p->n;
  __m512 P0, P1;
  pw_sum((const float *)Ap + l0, (const float *)Bp + l0 * 32, len, &P0, &P1);
  if (x->pieces) {
    const __m512 z = _mm512_setzero_ps();
    const __m512 F0 = l0 ? _mm512_loadu_ps(c) : z, F1 = l0 ? _mm512_loadu_ps(c + 16) : z;
    if (p->style == GEMM_PROMOTE) { /* F = fmaf(fp32(sa sb), P, F) */
      float w[32];
      for (size_t t = 0; t < 32; t++) {
        const size_t j = j0 + t < n ? j0 + t : n - 1;
        w[t] = exmy__gemm_promote_w(p, i0, j, l0);
      }
      P0 = _mm512_fmadd_ps(_mm512_loadu_ps(w), P0, F0);
      P1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + 16), P1, F1);
    } else { /* fmaf(1, P, F) = P + F */
      P0 = _mm512_add_ps(P0, F0);
      P1 = _mm512_add_ps(P1, F1);
    }
  }
  _mm512_storeu_ps(c, P0);
  _mm512_storeu_ps(c + 16, P1);
}

int exmy__gemm_fast_pairwise(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512f") || exmy__avx512_disabled()) return 0;
  pw_run x = {.p = p, .pieces = p->acc.chunk || p->style == GEMM_PROMOTE};
  gemm_frame_kernel kd;
  if (!fp32_kernel(p, 1, 32, 1, &x.pk, &kd)) return 0;
  kd.ctx = &x; /* pw_run starts with its fp32_pack */
  kd.micro = pw_micro;
  kd.block_end = pw_bend;
  kd.sw = 1;
  kd.mt = 4; /* the old schedule(dynamic, 4) of rows */
  return exmy__gemm_frame_run(&kd, p, nt, flags, amax);
}
#endif
