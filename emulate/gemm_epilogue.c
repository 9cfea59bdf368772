/* gemm_epilogue.c: the GEMM's epilogue, common to every model but exact:
 * z = s * P + beta * (scale_c * C) with s = alpha and the outer scales,
 * D = cast(z * scale_d), amax = max |z|.  One element at a time (the
 * reference and acc=FORMAT) or whole rows through the vectorized float32
 * cast (the fp32 and tc kernels); the two give the same bits. */
#include "emulate/gemm_epilogue.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double exmy__gemm_c_value(const gemm_plan *p, size_t i, size_t j) {
  return exmy_code_to_f64(p->c_fmt, exmy_code_get(p->c_fmt, p->c, i * p->n + j));
}

float exmy__gemm_epilogue(const gemm_plan *p, size_t i, size_t j, float P, unsigned *flags) {
  const float s = exmy__gemm_out_scale(p, i, j);
  float z;
  if (p->use_c) {
    const float cf = (float)exmy__gemm_c_value(p, i, j);
    z = fmaf(s, P, p->beta * (p->scale_c * cf));
  } else {
    z = s * P;
  }
  if (isnan(z)) z = NAN; /* NaN signs are not portable: D gets the positive NaN */
  const float x = z * p->scale_d;
  exmy_code_set(p->d_fmt, p->d, i * p->n + j, exmy_from_f32(p->d_fmt, &p->d_rnd, isnan(x) ? NAN : x, (uint64_t)i * p->n + j, flags));
  return isnan(z) ? 0.0f : fabsf(z);
}

/* Rows [i0, i1) of D from P (row stride ldp): z as exmy__gemm_epilogue,
 * then one vectorized cast of the row (the float32 fast path of the
 * conversions); z is the caller's n floats of scratch. */
static void epilogue_rows(const gemm_plan *p, const float *P, size_t ldp, size_t i0, size_t i1, float *z,
                          unsigned *flags, float *amax) {
  const size_t n = p->n;
  const size_t cb = (size_t)exmy_code_bytes(p->d_fmt);
  exmy__f32q q;
  exmy__f32q_init(&q, p->d_fmt, &p->d_rnd);
  unsigned fl = 0;
  float am = 0.0f;
  for (size_t i = i0; i < i1; i++) {
    const float *Pr = P + i * ldp;
    for (size_t j = 0; j < n; j++) {
      const float s = exmy__gemm_out_scale(p, i, j);
      float zz;
      if (p->use_c) {
        const float cf = (float)exmy__gemm_c_value(p, i, j);
        zz = fmaf(s, Pr[j], p->beta * (p->scale_c * cf));
      } else {
        zz = s * Pr[j];
      }
      if (isnan(zz)) zz = NAN; /* as the reference: the positive NaN */
      if (!isnan(zz)) am = fmaxf(am, fabsf(zz));
      /* x = z * scale_d here, so inf * 0 gives the reference's positive NaN too
       * (the cast below multiplies by 1: exact) */
      const float x = zz * p->scale_d;
      z[j] = isnan(x) ? NAN : x;
    }
    fl |= exmy__f32q_run(&q, z, n, 1.0f, (uint64_t)i * n, (char *)p->d + i * n * cb);
  }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}

/* One row of the direct f32 epilogue: Dr[j] = fp32(fp32(r * bs[j]) * P[j]) * sd,
 * r * bs[j] skipped when bs is NULL (s = r for every j); returns max |z| (NaN
 * ignored, as fmaxf) and sets *nan when a D value is NaN.  Vectorized with
 * AVX-512 where the CPU has it: the same IEEE operations lane by lane. */
#if defined(__x86_64__)
#include <immintrin.h>
__attribute__((target("avx512f"))) static float row_f32_512(const float *P, const float *bs, float r, float sd,
                                                             size_t n, float *Dr, int *nan) {
  __m512 vam = _mm512_setzero_ps();
  const __m512 vr = _mm512_set1_ps(r), vsd = _mm512_set1_ps(sd);
  __mmask16 bad = 0;
  size_t j = 0;
  for (; j + 16 <= n; j += 16) {
    const __m512 s = bs ? _mm512_mul_ps(vr, _mm512_loadu_ps(bs + j)) : vr;
    const __m512 z = _mm512_mul_ps(s, _mm512_loadu_ps(P + j)), x = _mm512_mul_ps(z, vsd);
    const __m512 az = _mm512_abs_ps(z);
    vam = _mm512_mask_max_ps(vam, _mm512_cmp_ps_mask(az, vam, _CMP_GT_OQ), az, vam);
    bad |= _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    _mm512_storeu_ps(Dr + j, x);
  }
  float am = _mm512_reduce_max_ps(vam);
  for (; j < n; j++) {
    const float z = (bs ? r * bs[j] : r) * P[j], x = z * sd;
    if (fabsf(z) > am) am = fabsf(z);
    *nan |= x != x;
    Dr[j] = x;
  }
  *nan |= bad != 0;
  return am;
}
#endif

static float row_f32(const float *P, const float *bs, float r, float sd, size_t n, float *Dr, int *nan) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return row_f32_512(P, bs, r, sd, n, Dr, nan);
#endif
  float am = 0.0f;
  for (size_t j = 0; j < n; j++) {
    const float z = (bs ? r * bs[j] : r) * P[j], x = z * sd;
    if (fabsf(z) > am) am = fabsf(z); /* a NaN compares false: ignored, as fmaxf */
    *nan |= x != x;
    Dr[j] = x;
  }
  return am;
}

/* The same for D in binary32 cast exactly (exmy__f32q's ident: no
 * saturation, ftz or daz) without C: D = the bits of fp32(z * scale_d),
 * z = s * P (OUTER: s = fp32(fp32(alpha * sa_i) * sb_j), else the same s for
 * every j), written straight from P; NaNs the long way, as the reference. */
static void epilogue_rows_f32(const gemm_plan *p, const float *P, size_t ldp, size_t i0, size_t i1, unsigned *flags,
                              float *amax) {
  const size_t n = p->n;
  unsigned fl = 0;
  float am = 0.0f;
  for (size_t i = i0; i < i1; i++) {
    float *Dr = (float *)p->d + i * n;
    int nan = 0;
    const int outer = p->style == GEMM_OUTER;
    const float r = outer ? p->alpha * p->as[i] : exmy__gemm_out_scale(p, i, 0);
    am = fmaxf(am, row_f32(P + i * ldp, outer ? p->bs : NULL, r, p->scale_d, n, Dr, &nan));
    if (nan)
      for (size_t j = 0; j < n; j++)
        if (isnan(Dr[j])) {
          const uint32_t c = (uint32_t)exmy_from_f32(p->d_fmt, &p->d_rnd, NAN, (uint64_t)i * n + j, &fl);
          memcpy(&Dr[j], &c, 4);
        }
  }
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}

unsigned exmy__gemm_epilogue_all_ld(const gemm_plan *p, const float *P, size_t ldp, int nt, float *amax) {
  unsigned flags = 0;
  float am = 0.0f;
  exmy__f32q q;
  exmy__f32q_init(&q, p->d_fmt, &p->d_rnd);
  const int direct = q.ident && !p->use_c;
  const size_t m = p->m;
  if (nt > 1 && (double)m * (double)p->n < 16384.0) nt = 1; /* a team costs more than a small D */
  if (nt <= 1 && direct) { /* no team at all: an inactive region still starts one */
    unsigned fl = 0;
    epilogue_rows_f32(p, P, ldp, 0, m, &fl, &am);
    *amax = fmaxf(*amax, am);
    return fl;
  }
#pragma omp parallel num_threads(nt) reduction(| : flags) reduction(max : am) if (nt > 1)
  {
    float *z = direct ? NULL : malloc((p->n + 1) * sizeof *z);
    unsigned fl = 0;
    float a1 = 0.0f;
#pragma omp for schedule(static)
    for (size_t i = 0; i < m; i++) {
      if (direct) epilogue_rows_f32(p, P, ldp, i, i + 1, &fl, &a1);
      else if (z) epilogue_rows(p, P, ldp, i, i + 1, z, &fl, &a1);
      else /* out of memory for the scratch row: one element at a time */
        for (size_t j = 0; j < p->n; j++) a1 = fmaxf(a1, exmy__gemm_epilogue(p, i, j, P[i * ldp + j], &fl));
    }
    free(z);
    flags |= fl;
    am = fmaxf(am, a1);
  }
  *amax = fmaxf(*amax, am);
  return flags;
}

unsigned exmy__gemm_epilogue_all(const gemm_plan *p, const float *P, int nt, float *amax) {
  return exmy__gemm_epilogue_all_ld(p, P, p->n, nt, amax);
}
