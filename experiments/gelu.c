/* gelu.c: GELU (tanh approximation) and the engine's float tanh, each as a
 * scalar reference and a vector version with the same bits for every input.
 *
 * GELU's forward keeps tanh's values for the backward (which used to call
 * tanh again on the same argument: the same bits, half the work).
 *
 * The reference is fdlibm's tanhf and expm1f (Sun, 1993; the float versions
 * by Ian Lance Taylor, Cygnus), the algorithm glibc's libm used for tanhf
 * through 2.40: on such a libm xp_tanhf_ref(x) == tanhf(x) for all 2^32
 * inputs (checked exhaustively here on glibc 2.36; tests/test_tanh.c checks
 * a sample and `make check-long` all of them).  Owning it keeps the engine's
 * results independent of the platform's libm, and lets the vector version
 * run the same float operations, in the same order, per lane: only IEEE
 * +, -, *, / and exact bit manipulations, no FMA (-ffp-contract=off), so
 * the lanes round exactly as the scalar code does.  NaN and infinity lanes
 * take the scalar code. */
#include "experiments/layers.h"

#include <stdint.h>
#include <string.h>

static uint32_t fbits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
static float bitsf(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

#define GELU_S 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_A 0.044715f

#define LN2_HI 6.9313812256e-01f  /* 0x3f317180 */
#define LN2_LO 9.0580006145e-06f  /* 0x3717f7d1 */
#define INVLN2 1.4426950216e+00f  /* 0x3fb8aa3b */
#define Q1 -3.3333335072e-02f     /* 0xbd088889 */
#define Q2 1.5873016091e-03f      /* 0x3ad00d01 */
#define Q3 -7.9365076090e-05f     /* 0xb8a670cd */
#define Q4 4.0082177293e-06f      /* 0x36867e54 */
#define Q5 -2.0109921195e-07f     /* 0xb457edbb */

/* fdlibm expm1f for the arguments tanhf gives it: finite, |x| < 44
 * (so no overflow and k < 128). */
static float expm1f_ref(float x) {
  float y, hi, lo, c = 0.0f, t, e, hxs, hfx, r1;
  int32_t k;
  uint32_t hx = fbits(x);
  const int neg = (hx & 0x80000000u) != 0;
  hx &= 0x7fffffffu;
  if (hx >= 0x4195b844u && neg) return -1.0f; /* x < -27 ln2 (tiny - one) */
  if (hx > 0x3eb17218u) {                     /* |x| > 0.5 ln2 */
    if (hx < 0x3F851592u) {                   /* and |x| < 1.5 ln2 */
      if (!neg) hi = x - LN2_HI, lo = LN2_LO, k = 1;
      else hi = x + LN2_HI, lo = -LN2_LO, k = -1;
    } else {
      k = (int32_t)(INVLN2 * x + (neg ? -0.5f : 0.5f));
      t = (float)k;
      hi = x - t * LN2_HI; /* exact */
      lo = t * LN2_LO;
    }
    x = hi - lo;
    c = (hi - x) - lo;
  } else if (hx < 0x33000000u) { /* |x| < 2^-25 */
    return x;
  } else {
    k = 0;
  }
  hfx = 0.5f * x;
  hxs = x * hfx;
  r1 = 1.0f + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
  t = 3.0f - r1 * hfx;
  e = hxs * ((r1 - t) / (6.0f - x * t));
  if (k == 0) return x - (x * e - hxs);
  e = (x * (e - c) - c);
  e -= hxs;
  if (k == -1) return 0.5f * (x - e) - 0.5f;
  if (k == 1) {
    if (x < -0.25f) return -2.0f * (e - (x + 0.5f));
    return 1.0f + 2.0f * (x - e);
  }
  if (k <= -2 || k > 56) { /* exp(x) - 1 */
    y = 1.0f - (e - x);
    y = bitsf(fbits(y) + ((uint32_t)k << 23));
    return y - 1.0f;
  }
  if (k < 23) {
    t = bitsf(0x3f800000u - (0x1000000u >> k)); /* 1 - 2^-k */
    y = t - (e - x);
  } else {
    t = bitsf((uint32_t)(0x7f - k) << 23); /* 2^-k */
    y = x - (e + t);
    y += 1.0f;
  }
  return bitsf(fbits(y) + ((uint32_t)k << 23));
}

float xp_tanhf_ref(float x) {
  const uint32_t jx = fbits(x), ix = jx & 0x7fffffffu;
  float t, z;
  if (ix >= 0x7f800000u) return jx >> 31 ? 1.0f / x - 1.0f : 1.0f / x + 1.0f; /* +-1, NaN */
  if (ix < 0x41b00000u) {     /* |x| < 22 */
    if (ix < 0x24000000u) return x * (1.0f + x); /* |x| < 2^-55 (and +-0): x */
    float ax = bitsf(ix);
    if (ix >= 0x3f800000u) {  /* |x| >= 1 */
      t = expm1f_ref(2.0f * ax);
      z = 1.0f - 2.0f / (t + 2.0f);
    } else {
      t = expm1f_ref(-2.0f * ax);
      z = -t / (t + 2.0f);
    }
  } else {
    z = 1.0f; /* 1 - tiny */
  }
  return jx >> 31 ? -z : z;
}

/* ---- the vector version ------------------------------------------------------
 * GCC/Clang vector extensions, 16 lanes: the same operations as above, every
 * path computed and the lane's path selected by masks.  Comparisons give
 * 0 / -1 lanes. */
#if defined(__GNUC__)
/* Nothing vector-typed crosses a call, so GCC's ABI note does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"
#define VL 16
/* load / store m <= VL floats (a full vector: one fixed-size copy, a move) */
#define LOADV(v, p, m) ((m) == VL ? memcpy(&(v), (p), VL * sizeof(float)) : memcpy(&(v), (p), (m) * sizeof(float)))
#define STOREV(p, v, m) ((m) == VL ? memcpy((p), &(v), VL * sizeof(float)) : memcpy((p), &(v), (m) * sizeof(float)))
typedef float vf __attribute__((vector_size(VL * 4)));
typedef int32_t vi __attribute__((vector_size(VL * 4)));
typedef uint32_t vu __attribute__((vector_size(VL * 4)));

#define AS_U(v) ((vu)(v))
#define AS_F(v) ((vf)(v))
/* Inlined into each clone: a 64-byte vector passed between functions built
 * for different ISAs would not survive the call (GCC's -Wpsabi). */
/* m ? a : b for float lanes, m a 0 / -1 mask */
#define XP_INLINE static inline __attribute__((always_inline))
XP_INLINE vf sel(vi m, vf a, vf b) { return AS_F((AS_U(a) & (vu)m) | (AS_U(b) & ~(vu)m)); }
XP_INLINE vi seli(vi m, vi a, vi b) { return (a & m) | (b & ~m); }


/* tanh of 16 finite lanes */
XP_INLINE vf tanh16(vf x) {
  const vu jx = AS_U(x), ix = jx & 0x7fffffffu;
  /* lanes with |x| >= 22 (and NaN, inf) compute on 1 and are replaced at the end */
  const vf ax = sel((vi)(ix < 0x41b00000u), AS_F(ix), (vf){0} + 1.0f);
  const vi big = (vi)(ix >= 0x3f800000u); /* |x| >= 1: expm1f(2|x|), else expm1f(-2|x|) */
  const vf a = sel(big, 2.0f * ax, -2.0f * ax);
  /* expm1f(a): a in [2, 44) when big, else (-2, 0] */
  const vu hx = AS_U(a) & 0x7fffffffu;
  const vi neg = ~big;
  const vi red = (vi)(hx > 0x3eb17218u);          /* argument reduction */
  const vi near = red & (vi)(hx < 0x3F851592u);   /* |a| < 1.5 ln2: k = +-1 */
  const vf kf = INVLN2 * a + sel(neg, (vf){0} - 0.5f, (vf){0} + 0.5f);
  vi kg = __builtin_convertvector(kf, vi);        /* truncation, as (int32_t) */
  const vf tg = __builtin_convertvector(kg, vf);
  const vf hig = a - tg * LN2_HI, log_ = tg * LN2_LO;
  const vf hin = sel(neg, a + LN2_HI, a - LN2_HI);
  const vf lon = sel(neg, (vf){0} - LN2_LO, (vf){0} + LN2_LO);
  const vi kn = seli(neg, (vi){0} - 1, (vi){0} + 1);
  const vf hi = sel(near, hin, hig), lo = sel(near, lon, log_);
  const vi k = seli(red, seli(near, kn, kg), (vi){0});
  const vf xr = sel(red, hi - lo, a);
  const vf c = sel(red, (hi - xr) - lo, (vf){0});
  const vf hfx = 0.5f * xr, hxs = xr * hfx;
  const vf r1 = 1.0f + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))));
  const vf t = 3.0f - r1 * hfx;
  vf e = hxs * ((r1 - t) / (6.0f - xr * t));
  const vf r0 = xr - (xr * e - hxs);              /* k == 0 */
  e = (xr * (e - c) - c);
  e -= hxs;
  const vf rm1 = 0.5f * (xr - e) - 0.5f;          /* k == -1 */
  const vf rp1 = sel((vi)(xr < -0.25f), -2.0f * (e - (xr + 0.5f)), 1.0f + 2.0f * (xr - e)); /* k == 1 */
  const vu ksh = (vu)k << 23;
  const vf yf = 1.0f - (e - xr);                  /* k <= -2 or k > 56 */
  const vf rfar = AS_F(AS_U(yf) + ksh) - 1.0f;
  const vf t2 = AS_F(((vu)((vi){0} + 0x7f - k)) << 23); /* 2^-k */
  /* 1 - 2^-k, exact for 1 <= k <= 24: the bits of 0x3f800000 - (0x1000000 >> k)
   * without a per-lane shift (which GCC would take apart lane by lane) */
  const vf t1 = 1.0f - t2;
  const vf y1 = t1 - (e - xr);                    /* 2 <= k < 23 */
  const vf y2 = (xr - (e + t2)) + 1.0f;           /* 23 <= k <= 56 */
  const vf rmid = AS_F(AS_U(sel((vi)(k < 23), y1, y2)) + ksh);
  /* k <= -2 or k > 56, as one unsigned compare (two signed ones OR-ed
   * were taken apart lane by lane by GCC 12) */
  vf r = sel((vi)((vu)(k + 1) > 57u), rfar, rmid);
  r = sel((vi)(k == 1), rp1, r);
  r = sel((vi)(k == -1), rm1, r);
  r = sel((vi)(k == 0), r0, r);
  r = sel(red | (vi)(hx >= 0x33000000u), r, a);   /* |a| < 2^-25: a */
  r = sel(neg & (vi)(hx >= 0x4195b844u), (vf){0} - 1.0f, r); /* unreachable for |x| < 22; kept as in expm1f */
  /* tanh from t = expm1f(a) */
  /* 1 - 2 / (t + 2) or -t / (t + 2): one division of the lane's numerator */
  const vf q = sel(big, (vf){0} + 2.0f, -r) / (r + 2.0f);
  vf z = sel(big, 1.0f - q, q);
  z = sel((vi)(ix >= 0x41b00000u), (vf){0} + 1.0f, z);
  z = AS_F(AS_U(z) ^ (jx & 0x80000000u));
  return sel((vi)(ix < 0x24000000u), x, z);       /* |x| < 2^-55: x (1 + x) == x */
}

/* tanh16 with NaN and infinity lanes from the scalar code */
XP_INLINE vf tanh16_all(vf x) {
  vf r = tanh16(x);
  const vi special = (vi)((AS_U(x) & 0x7fffffffu) >= 0x7f800000u);
  uint64_t w[VL / 2], any = 0; /* any lane special: 8 ORs, not 16 branches */
  memcpy(w, &special, sizeof w);
  for (int j = 0; j < VL / 2; j++) any |= w[j];
  if (any)
    for (int j = 0; j < VL; j++)
      if (special[j]) r[j] = xp_tanhf_ref(x[j]);
  return r;
}

XP_CLONES void xp_tanhf_n(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i += VL) {
    const size_t m = n - i < VL ? n - i : VL;
    vf v = (vf){0};
    LOADV(v, x + i, m);
    v = tanh16_all(v);
    STOREV(y + i, v, m);
  }
}

/* GELU on one block: the reference's operations in the reference's order */
XP_CLONES static void gelu_fwd_block(const float *x, float *y, float *th, size_t n) {
  for (size_t i = 0; i < n; i += VL) {
    const size_t m = n - i < VL ? n - i : VL;
    vf v = (vf){0}, u, t, r;
    LOADV(v, x + i, m);
    u = GELU_S * (v + GELU_A * v * v * v);
    t = tanh16_all(u);
    STOREV(th + i, t, m);
    r = 0.5f * v * (1.0f + t);
    STOREV(y + i, r, m);
  }
}

XP_CLONES static void gelu_bwd_block(const float *dy, const float *x, const float *th, float *dx, size_t n) {
  for (size_t i = 0; i < n; i += VL) {
    const size_t m = n - i < VL ? n - i : VL;
    vf v = (vf){0}, t = (vf){0}, g = (vf){0}, d;
    LOADV(v, x + i, m);
    LOADV(t, th + i, m);
    LOADV(g, dy + i, m);
    d = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_S * (1.0f + 3.0f * GELU_A * v * v);
    d = g * d;
    STOREV(dx + i, d, m);
  }
}
#else
void xp_tanhf_n(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = xp_tanhf_ref(x[i]);
}
static void gelu_fwd_block(const float *x, float *y, float *th, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    th[i] = xp_tanhf_ref(GELU_S * (v + GELU_A * v * v * v));
    y[i] = 0.5f * v * (1.0f + th[i]);
  }
}
static void gelu_bwd_block(const float *dy, const float *x, const float *th, float *dx, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i], t = th[i];
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_S * (1.0f + 3.0f * GELU_A * v * v));
  }
}
#endif

/* ---- GELU ------------------------------------------------------------------
 * y = 0.5 x (1 + tanh(s (x + a x^3))),
 * gelu'(x) = 0.5 (1 + th) + 0.5 x (1 - th^2) s (1 + 3 a x^2).
 * Parallel over blocks of GELU_BLOCK elements; each element is computed
 * alone, so the bits depend on neither the blocks nor the threads. */
#define GELU_BLOCK 1024

void xp_gelu_forward_ref(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + xp_tanhf_ref(GELU_S * (v + GELU_A * v * v * v)));
  }
}

void xp_gelu_backward_ref(const float *dy, const float *x, float *dx, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i], th = xp_tanhf_ref(GELU_S * (v + GELU_A * v * v * v));
    float d = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * GELU_S * (1.0f + 3.0f * GELU_A * v * v);
    dx[i] = dy[i] * d;
  }
}

void xp_gelu_forward(const float *x, float *y, float *th, size_t n) {
  long nb = (long)((n + GELU_BLOCK - 1) / GELU_BLOCK);
#pragma omp parallel for schedule(static)
  for (long b = 0; b < nb; b++) {
    float local[GELU_BLOCK];
    size_t i = (size_t)b * GELU_BLOCK, len = n - i < GELU_BLOCK ? n - i : GELU_BLOCK;
    gelu_fwd_block(x + i, y + i, th ? th + i : local, len);
  }
}

void xp_bias_gelu_forward(float *x, const float *bias, float *y, float *th, size_t T, size_t H) {
  long rows = (long)T;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    float *xr = x + (size_t)t * H;
    if (bias)
      for (size_t j = 0; j < H; j++) xr[j] += bias[j];
    gelu_fwd_block(xr, y + (size_t)t * H, th + (size_t)t * H, H);
  }
}

void xp_gelu_backward(const float *dy, const float *x, const float *th, float *dx, size_t n) {
  long nb = (long)((n + GELU_BLOCK - 1) / GELU_BLOCK);
#pragma omp parallel for schedule(static)
  for (long b = 0; b < nb; b++) {
    float local[GELU_BLOCK], ydummy[GELU_BLOCK];
    size_t i = (size_t)b * GELU_BLOCK, len = n - i < GELU_BLOCK ? n - i : GELU_BLOCK;
    const float *t = th ? th + i : local;
    if (!th) gelu_fwd_block(x + i, ydummy, local, len); /* tanh's values again */
    gelu_bwd_block(dy + i, x + i, t, dx + i, len);
  }
}
