/* study_stats.c: statistics over the runs of a study (study_int.h). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

double st_mean_of(const double *v, int n) {
  double s = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) { s += v[i]; k++; }
  return k ? s / k : NAN;
}

double st_sd_of(const double *v, int n) {
  double m = st_mean_of(v, n), s = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) { s += (v[i] - m) * (v[i] - m); k++; }
  return k > 1 ? sqrt(s / (k - 1)) : NAN;
}

/* Spearman rank correlation (average ranks for ties). */
static void ranks(const double *v, int n, double *r) {
  for (int i = 0; i < n; i++) {
    int less = 0, eq = 0;
    for (int j = 0; j < n; j++) {
      if (v[j] < v[i]) less++;
      else if (v[j] == v[i]) eq++;
    }
    r[i] = less + (eq + 1) / 2.0;
  }
}
double st_spearman(const double *x, const double *y, int n) {
  double rx[64], ry[64];
  if (n < 3 || n > 64) return NAN;
  ranks(x, n, rx);
  ranks(y, n, ry);
  double mx = st_mean_of(rx, n), my = st_mean_of(ry, n), sxy = 0, sxx = 0, syy = 0;
  for (int i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}
