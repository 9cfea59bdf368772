/* gemm_epilogue.c: the GEMM's epilogue, common to every model but exact:
 * z = s * P + beta * (scale_c * C) with s = alpha and the outer scales,
 * D = cast(z * scale_d), amax = max |z|.  One element at a time (the
 * reference and acc=FORMAT) or whole rows through the vectorized float32
 * cast (the fp32 and tc kernels); the two give the same bits. */
#include "emulate/gemm_internal.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>

double exmy__gemm_c_value(const gemm_plan *p, size_t i, size_t j) {
  return exmy_decode(p->c_fmt, exmy_code_get(p->c_fmt, p->c, i * p->n + j));
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
  exmy_code_set(p->d_fmt, p->d, i * p->n + j, exmy_from_float(p->d_fmt, &p->d_rnd, isnan(x) ? NAN : x, (uint64_t)i * p->n + j, flags));
  return isnan(z) ? 0.0f : fabsf(z);
}

/* Rows [i0, i1) of D from P: z as exmy__gemm_epilogue, then one vectorized
 * cast of the row (the float32 fast path of the conversions). */
static void epilogue_rows(const gemm_plan *p, const float *P, size_t i0, size_t i1, unsigned *flags, float *amax) {
  const size_t n = p->n;
  const size_t cb = (size_t)exmy_code_bytes(p->d_fmt);
  float *z = malloc((n + 1) * sizeof *z);
  exmy__f32q q;
  exmy__f32q_init(&q, p->d_fmt, &p->d_rnd);
  unsigned fl = 0;
  float am = 0.0f;
  for (size_t i = i0; i < i1; i++) {
    const float *Pr = P + i * n;
    for (size_t j = 0; j < n; j++) {
      const float s = exmy__gemm_out_scale(p, i, j);
      float zz;
      if (p->use_c) {
        const float cf = (float)exmy__gemm_c_value(p, i, j);
        zz = fmaf(s, Pr[j], p->beta * (p->scale_c * cf));
      } else {
        zz = s * Pr[j];
      }
      if (isnan(zz)) zz = NAN; /* as the reference: the positive NaN (z * scale_d stays NaN) */
      z[j] = zz;
      if (!isnan(zz)) am = fmaxf(am, fabsf(zz));
    }
    fl |= exmy__f32q_run(&q, z, n, p->scale_d, (uint64_t)i * n, (char *)p->d + i * n * cb);
  }
  free(z);
  *flags |= fl;
  *amax = fmaxf(*amax, am);
}

unsigned exmy__gemm_epilogue_all(const gemm_plan *p, const float *P, int nt, float *amax) {
  unsigned flags = 0;
  float am = 0.0f;
#pragma omp parallel for num_threads(nt) schedule(static) reduction(| : flags) reduction(max : am)
  for (size_t i = 0; i < p->m; i++) epilogue_rows(p, P, i, i + 1, &flags, &am);
  *amax = fmaxf(*amax, am);
  return flags;
}

