/* gemm_fast_exact.c: the fast kernel of acc=exact (OUTER scaling, no C):
 * the blocking frame (gemm_block.c, esz 8) in double on integer-valued operands
 * (a * 2^-lsb), so every product and partial sum is an integer below 2^53
 * and the double sums are exact; then one exact rescale by alpha and the
 * outer scales and one rounding per output, as the reference. */
#include "emulate/gemm_kernels.h"
#include "emulate/gemm_block.h"
#include "emulate/gemm_ws.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)

/* Integer bits of a format's values scaled by 2^-lsb, lsb = emin - mbits. */
static int int_bits(const exmy_format *f) { return (f->emax + 1) - (f->emin - f->mbits); }

/* 64 leading bits (sticky folded in) of the 192-bit x * y, x < 2^128. */
static uint64_t top64_mul(u128 x, uint64_t y, int *shift) {
  const u128 lo = (u128)(uint64_t)x * y, hi = (u128)(uint64_t)(x >> 64) * y;
  uint64_t w[3];
  w[0] = (uint64_t)lo;
  const u128 mid = (lo >> 64) + (u128)(uint64_t)hi;
  w[1] = (uint64_t)mid;
  w[2] = (uint64_t)((mid >> 64) + (hi >> 64));
  int top = 2;
  while (top > 0 && !w[top]) top--;
  const int L = top * 64 + (w[top] ? 64 - __builtin_clzll(w[top]) : 0);
  if (L <= 64) {
    *shift = 0;
    return w[0];
  }
  const int sh = L - 64, li = sh / 64, bi = sh % 64;
  uint64_t sig = bi ? (w[li] >> bi) | (w[li + 1] << (64 - bi)) : w[li];
  int sticky = bi ? (w[li] & (((uint64_t)1 << bi) - 1)) != 0 : 0;
  for (int t = 0; t < li; t++) sticky |= w[t] != 0;
  *shift = sh;
  return sig | (uint64_t)sticky;
}

/* D binary32 with round to nearest even, alpha = scale_d = 1: V = S 2^lsb
 * |sa sb| is a double-double (sa sb is exact in double, then a two-product);
 * rounded to odd in double and then to float it is V rounded once (53 >=
 * 24 + 2), so no 192-bit product is needed.  The flags as exmy_round_pack's:
 * inexact, underflow (|V| < 2^-126 and inexact), overflow. */
static int exact_f32_direct(const gemm_plan *p) {
  const exmy_format *f = p->d_fmt;
  const exmy_rounding *r = &p->d_rnd;
  return f->ebits == 8 && f->mbits == 23 && f->bias == 127 && f->is_signed && f->inf == EXMY_INF_IEEE &&
         f->nan == EXMY_NAN_IEEE && r->mode == EXMY_RNE && r->sat == EXMY_SAT_NONE && !r->ftz && !r->daz &&
         p->alpha == 1.0f && p->scale_d == 1.0f;
}

/* The direct epilogue of one row (D binary32 rne, alpha = scale_d = 1, a
 * nonzero row scale sa = |as| 2^lsb): V = |sd| sa |bs| as a double-double
 * (hi, lo), rounded to odd in double (the +-1 toward lo when hi is even and
 * lo is not zero), then to float; integer selects, no branches, so the row
 * vectorizes (the scalar loop was 40% of the kernel's time at n = 1024).  A
 * lane whose sum or column scale is zero gives 0 here (as does one whose V
 * underflows to 0) and is counted: the caller then runs the general path for
 * the zero-sum and zero-scale lanes. */
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
static size_t exact_direct_row(const double *restrict S, const float *restrict bs, double sa, size_t n,
                               uint32_t *restrict d, unsigned *fl, float *am) {
  uint32_t inx = 0, unf = 0, ovf = 0, mb = 0; /* mb: the largest f's bits (f >= 0: they order as f) */
  size_t zeros = 0;
  for (size_t j = 0; j < n; j++) {
    const double sd = S[j], a = fabs(sd), sc = sa * fabs((double)bs[j]);
    const double hi = a * sc, lo = fma(a, sc, -hi);
    uint64_t hb, lb; /* unsigned: shifts of a negative lo's bits are defined */
    memcpy(&hb, &hi, 8);
    memcpy(&lb, &lo, 8);
    const uint64_t t = ((lb << 1) != 0) & ~hb & 1; /* lo != 0 and hi even */
    hb += (0 - t) & (1 | (0 - (lb >> 63)));        /* +1 or -1 toward lo */
    double ro;
    memcpy(&ro, &hb, 8);
    const float f = (float)ro;
    const uint32_t x = (lo != 0) | ((double)f != ro);
    inx |= x;
    unf |= x & (ro < 0x1p-126);
    ovf |= x & (f == INFINITY);
    uint32_t b;
    memcpy(&b, &f, 4);
    mb = b > mb ? b : mb;
    zeros += b == 0;
    d[j] = b | (uint32_t)(sd < 0) << 31;
  }
  *fl |= (inx ? EXMY_FLAG_INEXACT : 0u) | (unf ? EXMY_FLAG_UNDERFLOW : 0u) | (ovf ? EXMY_FLAG_OVERFLOW : 0u);
  float m;
  memcpy(&m, &mb, 4);
  *am = fmaxf(*am, m);
  return zeros;
}

static void exact_epilogue_rows(const gemm_plan *p, const double *S, size_t lds, int lsb, size_t i0, size_t i1,
                                const uint64_t *m3s, const int *q3s, unsigned *flags, float *amax) {
  const exmy_rounding rne = exmy_rounding_default();
  unsigned fl = 0;
  float am = 0.0f;
  int q1, q4;
  const uint64_t m1 = exmy__float_parts(p->alpha, &q1), m4 = exmy__float_parts(p->scale_d, &q4);
  const int direct = exact_f32_direct(p);
  for (size_t i = i0; i < i1; i++) {
    int q2;
    const uint64_t m2 = exmy__float_parts(p->as[i], &q2);
    const double sa = ldexp(fabs((double)p->as[i]), lsb);
    /* direct rows: every lane vectorized, then only the zero lanes below */
    const int row_direct = direct && S && m2;
    if (row_direct && !exact_direct_row(S + i * lds, p->bs, sa, p->n, (uint32_t *)p->d + i * p->n, &fl, &am))
      continue;
    for (size_t j = 0; j < p->n; j++) {
      const uint64_t index = (uint64_t)i * p->n + j;
      const double sd = S ? S[i * lds + j] : 0.0;
      const int q3 = q3s[j];
      const uint64_t m3 = m3s[j];
      const int sneg = sd < 0 && m2 && m3; /* the reference's scales sit inside its terms */
      if (row_direct && sd != 0 && m3) continue; /* done in exact_direct_row */
      const u128 mag = (u128)(uint64_t)fabs(sd) * m1 * m2; /* < 2^53 * 2^48 */
      if (mag == 0 || m3 == 0) {
        /* exact zero: the sum (+0 when zero) times alpha, as the reference */
        const int zneg = (p->alpha < 0) != sneg;
        const uint64_t code = exmy_round_pack(p->d_fmt, &p->d_rnd, (p->scale_d < 0) != zneg, 0, 0, index, &fl);
        exmy_code_set(p->d_fmt, p->d, index, code);
        continue;
      }
      const int neg = sneg != (p->alpha < 0);
      int sh;
      uint64_t top = top64_mul(mag, m3, &sh); /* |V| before scale_d: top * 2^(lsb + q1 + q2 + q3 + sh) */
      if (p->amax_d) { /* amax_d = fp32(|V|): a second rounding, only when asked for */
        const uint32_t ab = (uint32_t)exmy_round_pack(&p->f32, &rne, 0, top, lsb + q1 + q2 + q3 + sh, 0, NULL);
        float af;
        memcpy(&af, &ab, sizeof af);
        am = fmaxf(am, af);
      }
      uint64_t code;
      if (m4 == 0) {
        code = exmy_round_pack(p->d_fmt, &p->d_rnd, 0, 0, 0, index, &fl);
      } else {
        top = top64_mul(mag, m3 * m4, &sh); /* one exact product, then 64 bits + sticky */
        code = exmy_round_pack(p->d_fmt, &p->d_rnd, neg != (p->scale_d < 0), top, lsb + q1 + q2 + q3 + q4 + sh, index,
                               &fl);
      }
      exmy_code_set(p->d_fmt, p->d, index, code);
    }
  }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}

/* op(A) (which 0, rows = m) or op(B)^T (which 1, rows = n) as integers
 * x * 2^-lsb in panels of w rows ([l][w], zero padded), panel pn into Xp:
 * from the decoded doubles when the plan has them, else straight from
 * 8-bit codes through lut (the caller declines wider codes).  Returns
 * whether every element is finite (else the reference runs). */
typedef struct exact_pack {
  int lsb[2];
  double lut[2][256]; /* A's, B's codes: every byte (a code with bits above the format's decodes as NaN, as the reference reads it) */
} exact_pack;

static int pack_exact(const exact_pack *x, const gemm_plan *p, int which, size_t pn, size_t w, double *Xp) {
  const exmy_qtensor *q = which ? p->B : p->A;
  const double *src = which ? p->bd : p->ad, *lut = x->lut[which];
  const size_t k = p->k, rows = which ? p->n : p->m, cols = q->cols;
  const int tr = which ? !p->tb : p->ta, lsb = x->lsb[which]; /* tr 1: element (x, l) stored at l*cols + x, else x*cols + l */
  const uint8_t *codes = q->codes;
  const size_t x0 = pn * w, xe = x0 + w < rows ? x0 + w : rows;
  double acc = 0.0; /* 0 * (sum of the values): NaN when one is not finite */
  for (size_t l = 0; l < k; l++)
    for (size_t r = 0; r < w; r++) {
      const size_t xx = x0 + r;
      double v = 0.0;
      if (xx < xe) v = src ? ldexp(src[xx * k + l], -lsb) : lut[codes[tr ? l * cols + xx : xx * cols + l]];
      acc += 0.0 * v;
      Xp[l * w + r] = v;
    }
  return acc == 0.0;
}

/* The blocking frame's pack hooks (gemm_block.h). */
static int exact_pack_a(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Ap) {
  return pack_exact(ctx, p, 0, pan, w, Ap);
}
static int exact_pack_b(const void *ctx, const gemm_plan *p, size_t pan, size_t w, void *Bp) {
  return pack_exact(ctx, p, 1, pan, w, Bp);
}

/* The running sums on the frame (block_end, esz 8): a tile's state is its
 * double sums, carried over blocks of GEMM_KC steps. */
typedef struct exact_run {
  exact_pack pk;
  micro_fn fn;
  size_t mr, nr;
  int lsb;             /* la + lb */
  const uint64_t *m3s; /* the columns' scales as m3s[j] 2^q3s[j] */
  const int *q3s;
} exact_run;

static size_t exact_bend(const void *ctx, const gemm_plan *p, size_t lb) {
  (void)ctx;
  return lb + GEMM_KC < p->k ? lb + GEMM_KC : p->k;
}
static void exact_micro(const void *ctx, size_t i0, size_t j0, size_t l0, size_t len, const void *Ap, const void *Bp,
                        size_t rows, size_t cols, float *c) {
  (void)i0, (void)j0, (void)rows, (void)cols;
  const exact_run *x = ctx;
  x->fn((const double *)Ap + l0 * x->mr, (const double *)Bp + l0 * x->nr, len, c, x->nr, l0 == 0, 0);
}

/* The frame's epilogue: P holds the m x n double sums (ldp n). */
static unsigned exact_epilogue(const void *ctx, const gemm_plan *p, const void *P, size_t ldp, int nt, float *amax) {
  const exact_run *x = ctx;
  unsigned fl = 0;
  float am = 0.0f;
  const double *S = p->k ? P : NULL;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : fl) reduction(max : am)
  for (size_t i = 0; i < p->m; i++) exact_epilogue_rows(p, S, ldp, x->lsb, i, i + 1, x->m3s, x->q3s, &fl, &am);
  *amax = fmaxf(*amax, am);
  return fl;
}

int exmy__gemm_fast_exact(const gemm_plan *p, int nt, unsigned *flags, float *amax) {
  if (p->style != GEMM_OUTER || p->use_c) return 0;
  const exmy_format *fa = &p->A->fmt, *fb = &p->B->fmt;
  int lk = 0;
  while (((size_t)1 << lk) < p->k + 1) lk++;
  if (int_bits(fa) + int_bits(fb) + lk > 53) return 0; /* sums would not stay exact in double */
  /* a NaN or inf scale: the reference's NaN/inf terms (its epilogue takes finite scales) */
  for (size_t i = 0; i < p->m; i++)
    if (!isfinite(p->as[i])) return 0;
  for (size_t j = 0; j < p->n; j++)
    if (!isfinite(p->bs[j])) return 0;
  gemm_micro mk;
  if (!exmy__gemm_micro(1, &mk)) return 0;
  const size_t mr = mk.mr, nr = mk.nr;
  const int la = fa->emin - fa->mbits, lb = fb->emin - fb->mbits;
  const size_t k = p->k;
  exact_run x = {.pk = {{la, lb}, {{0}}}, .fn = mk.fn, .mr = mr, .nr = nr, .lsb = la + lb};
  for (int w = 0; w < 2; w++) {
    const exmy_qtensor *q = w ? p->B : p->A;
    if (w ? p->bd : p->ad) continue; /* from the decoded doubles */
    if (q->fmt.bits > 8) return 0;
    for (size_t c = 0; c < 256; c++) x.pk.lut[w][c] = ldexp(exmy_code_to_f64(&q->fmt, c), -x.pk.lsb[w]);
  }
  /* the columns' scales as m 2^q, once (slot F: the frame uses A, B and P) */
  uint64_t *m3s = exmy__gemm_ws_get(p->ws, GEMM_WS_F, (p->n + 1) * (sizeof(uint64_t) + sizeof(int)));
  if (!m3s) return 0;
  int *q3s = (int *)(m3s + p->n + 1);
  for (size_t j = 0; j < p->n; j++) m3s[j] = exmy__float_parts(p->bs[j], &q3s[j]);
  x.m3s = m3s;
  x.q3s = q3s;
  size_t mt = GEMM_FRAME_TILE * sizeof(float) / (nr * sizeof(double)); /* the task's state in the frame's tile */
  mt = (mt < GEMM_MC ? mt : GEMM_MC) / mr * mr;
  const gemm_frame_kernel kd = {.ctx = &x, .mr = mr, .nr = nr, .mt = mt, .pa = k * mr * sizeof(double),
                                .pb = k * nr * sizeof(double), .pack_a = exact_pack_a, .pack_b = exact_pack_b,
                                .micro = exact_micro, .epilogue = exact_epilogue, .block_end = exact_bend,
                                .sw = 1, .esz = sizeof(double)};
  return exmy__gemm_frame_run(&kd, p, nt, flags, amax);
}
#endif /* __x86_64__ */
