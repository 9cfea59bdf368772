/* allreduce.c: a simulated data-parallel gradient all-reduce over R ranks
 * (`allreduce_ranks = R`; train.c gives each rank B/R of the step's
 * sequences and stores its gradients here).  One process, so the result is a
 * pure function of the ranks' gradients; every loop owns its elements, so
 * the bits do not depend on the thread count.
 *
 * Tensors without MS-AMP's FP8 all-reduce, as PyTorch DDP: each rank's
 * gradient divided by R, then summed in fp32 in rank order 0, 1, ..., R-1
 * (a real ring's order differs per chunk; a fixed order makes it
 * reproducible).
 *
 * Linear layers' weights under MS-AMP O1 as published (msamp = 3), as
 * msamp/nn/distributed.py's _ScalingTensorReducer does it:
 *   1. each rank's amax; their MAX (an all-reduce of the amaxes), so every
 *      rank uses the same scale;
 *   2. s = 2^floor(log2(448 / amax)) (ScalingMeta.compute_scaling_factor,
 *      margin 0; computed exactly here), times 1/sqrt(R) (MS-AMP's pre-scale:
 *      headroom for the sum); amax 0 or not finite: s = 1 (MS-AMP keeps the
 *      previous scale; here no scale is kept across steps);
 *   3. each rank casts g_r * s (fp32 product) to e4m3fn, rne, saturating;
 *   4. the SUM all-reduce in e4m3 (NCCL with the fp8 type): partial sums in
 *      rank order, each rounded back to e4m3fn (rne, saturating) as a
 *      reduction of e4m3 buffers stores every hop;
 *   5. the result dequantized with scale_inv = (1/s) / R (the gradient's
 *      div_(world_size)).
 * Every conversion goes through exmy_quantize / exmy_codes_to_f32. */
#include "experiments/xp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int xp_allreduce_init(xp_allreduce *a, const xp_config *c, const xp_model *m) {
  memset(a, 0, sizeof *a);
  a->R = c->allreduce_ranks > 1 ? c->allreduce_ranks : 1;
  a->n = m->nparams;
  a->fp8 = xp_msamp_level_of(c->msamp)->fp8_allreduce;
  if (a->R == 1 && !a->fp8) return 0; /* nothing to do: train.c's plain step */
  a->tmp = malloc((a->n + 1) * sizeof(float));
  a->acc = malloc((a->n + 1) * sizeof(float));
  a->codes = malloc(a->n + 1);
  if (a->R > 1) a->rank_grads = malloc((size_t)a->R * (a->n + 1) * sizeof(float));
  if (!a->tmp || !a->acc || !a->codes || (a->R > 1 && !a->rank_grads)) return -1;
  a->active = 1;
  return 0;
}

void xp_allreduce_free(xp_allreduce *a) {
  void *owned[] = {a->rank_grads, a->tmp, a->acc, a->codes};
  for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++) free(owned[i]);
  memset(a, 0, sizeof *a);
}

float *xp_allreduce_rank(xp_allreduce *a, xp_model *m, int r) {
  return a->R == 1 ? m->grads : a->rank_grads + (size_t)r * (a->n + 1);
}

/* The largest e with amax * 2^e <= 448 (floor(log2(448 / amax)), exactly). */
static int pow2_exponent(float amax) {
  int e = (int)floor(log2(448.0 / (double)amax));
  while (ldexp((double)amax, e + 1) <= 448.0) e++;
  while (ldexp((double)amax, e) > 448.0) e--;
  return e;
}

static void fp8_tensor(xp_allreduce *a, xp_model *m, const xp_param *t) {
  const int R = a->R;
  const size_t n = t->n;
  exmy_format f;
  exmy_format_parse("e4m3fn", &f, NULL, 0);
  exmy_rounding rnd = exmy_rounding_default();
  rnd.sat = EXMY_SAT_FINITE;
  float amax = 0;
  for (int r = 0; r < R; r++) { /* the MAX all-reduce of the ranks' amaxes (NaN counts as inf) */
    const float *g = xp_allreduce_rank(a, m, r) + t->off;
    for (size_t i = 0; i < n; i++) {
      const float v = isnan(g[i]) ? INFINITY : fabsf(g[i]);
      if (v > amax) amax = v;
    }
  }
  float s = amax > 0 && isfinite(amax) ? (float)ldexp(1.0, pow2_exponent(amax)) : 1.0f;
  s *= (float)(1.0 / sqrt((double)R));
  float *acc = a->acc + t->off, *q = a->tmp + t->off;
  for (int r = 0; r < R; r++) {
    const float *g = xp_allreduce_rank(a, m, r) + t->off;
    float *dst = r == 0 ? acc : q;
    for (size_t i = 0; i < n; i++) dst[i] = g[i] * s;
    xp_round_f32(&f, &rnd, dst, n, a->codes);
    if (r == 0) continue;
    for (size_t i = 0; i < n; i++) acc[i] += q[i]; /* two e4m3 values: exact in fp32 */
    xp_round_f32(&f, &rnd, acc, n, a->codes);
  }
  const float inv = (1.0f / s) / (float)R;
  float *out = m->grads + t->off;
  for (size_t i = 0; i < n; i++) out[i] = acc[i] * inv;
}

void xp_allreduce_run(xp_allreduce *a, xp_model *m) {
  if (!a->active) return;
  const int R = a->R;
  for (int ti = 0; ti < m->ntensors; ti++) {
    const xp_param *t = &m->tensors[ti];
    if (a->fp8 && t->is_linear_w) {
      fp8_tensor(a, m, t);
      continue;
    }
    if (R == 1) continue; /* one rank: the gradient as it is */
    float *out = m->grads + t->off;
    const long n = (long)t->n;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
      float sum = xp_allreduce_rank(a, m, 0)[t->off + (size_t)i] / (float)R;
      for (int r = 1; r < R; r++) sum += xp_allreduce_rank(a, m, r)[t->off + (size_t)i] / (float)R;
      out[i] = sum;
    }
  }
}
