/* outliers.c: the statistics behind the outlier metrics (outliers_every,
 * docs/training.md), on tensors a step has already computed.  Everything
 * in double and in index order on one thread: the same bits for any thread
 * count.  It calls nothing above it (gpt.c calls it). */
#include "experiments/layers.h"
#include <math.h>

/* max |x| and sqrt(mean x^2) over n values (NaN when n is 0) */
void xp_amax_rms(const float *x, size_t n, double *amax, double *rms) {
  double mx = 0.0, ss = 0.0;
  for (size_t i = 0; i < n; i++) {
    const double v = x[i], a = fabs(v);
    if (a > mx || isnan(a)) mx = isnan(mx) ? mx : a; /* a NaN stays */
    ss += v * v;
  }
  *amax = n ? mx : NAN;
  *rms = n ? sqrt(ss / (double)n) : NAN;
}

/* He et al. 2024's kurtosis of x (T x C): s_c = mean_t x[t,c]^2 per channel,
 * kurtosis = mean_c s_c^2 / (mean_c s_c)^2: 1 when every channel carries the
 * same energy, up to C when one channel carries it all.  s: C doubles. */
double xp_channel_kurtosis(const float *x, size_t T, size_t C, double *s) {
  if (!T || !C) return NAN;
  for (size_t c = 0; c < C; c++) s[c] = 0.0;
  for (size_t t = 0; t < T; t++)
    for (size_t c = 0; c < C; c++) s[c] += (double)x[t * C + c] * x[t * C + c];
  double m1 = 0.0, m2 = 0.0;
  for (size_t c = 0; c < C; c++) {
    const double v = s[c] / (double)T;
    m1 += v;
    m2 += v * v;
  }
  m1 /= (double)C;
  m2 /= (double)C;
  return m2 / (m1 * m1);
}

/* w (2H x C): |cos| between rows j and H + j (SwiGLU's gate and up rows of
 * hidden channel j), the largest and the mean over j; a zero row gives 0. */
void xp_pair_cosine(const float *w, size_t H, size_t C, double *cmax, double *cmean) {
  double mx = 0.0, sum = 0.0;
  for (size_t j = 0; j < H; j++) {
    const float *a = w + j * C, *b = w + (H + j) * C;
    double ab = 0.0, aa = 0.0, bb = 0.0;
    for (size_t c = 0; c < C; c++) {
      ab += (double)a[c] * b[c];
      aa += (double)a[c] * a[c];
      bb += (double)b[c] * b[c];
    }
    const double cs = aa > 0 && bb > 0 ? fabs(ab) / sqrt(aa * bb) : 0.0;
    mx = cs > mx || isnan(cs) ? cs : mx;
    sum += cs;
  }
  *cmax = H ? mx : NAN;
  *cmean = H ? sum / (double)H : NAN;
}

/* mean and max of n values */
void xp_mean_max(const float *v, size_t n, double *mean, double *max) {
  double s = 0.0, mx = n ? v[0] : NAN;
  for (size_t i = 0; i < n; i++) {
    s += v[i];
    mx = v[i] > mx || isnan(v[i]) ? v[i] : mx;
  }
  *mean = n ? s / (double)n : NAN;
  *max = mx;
}
