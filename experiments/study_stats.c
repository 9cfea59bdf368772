/* study_stats.c: statistics over the runs of a study (study_int.h). */
#include "experiments/study_int.h"
#include "exmy.h"

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
  if (n < 3) return NAN;
  double *rx = malloc(2 * (size_t)n * sizeof *rx), *ry = rx + n;
  if (!rx) return NAN;
  ranks(x, n, rx);
  ranks(y, n, ry);
  double mx = st_mean_of(rx, n), my = st_mean_of(ry, n), sxy = 0, sxx = 0, syy = 0;
  for (int i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  free(rx);
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

int st_rho_verdict(int n, double rho, int min_n, double thr) {
  if (n < min_n || !isfinite(rho)) return -1;
  if (rho >= thr) return 1;
  if (rho <= 0) return 0;
  return -1;
}

/* ---- paired claims (docs/studies/README.md, "Statistics") ------------- */

/* Percentile bootstrap of the mean: reps resamples of the n values drawn
 * with exmy_random64(seed, 0x5b, .), so the interval is a pure function of
 * (values, seed).  Non-finite values are the caller's to drop. */
static int cmp_dbl(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
void st_bootstrap(const double *x, int n, uint64_t seed, double conf, double *lo, double *hi) {
  enum { REPS = 2000 };
  if (n < 1) { *lo = *hi = NAN; return; }
  double *m = malloc(REPS * sizeof *m);
  if (!m) { *lo = *hi = NAN; return; }
  for (int r = 0; r < REPS; r++) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[exmy_random64(seed, 0x5b, (uint64_t)r * (uint64_t)n + (uint64_t)i) % (uint64_t)n];
    m[r] = s / n;
  }
  qsort(m, REPS, sizeof *m, cmp_dbl);
  const double a = (1 - conf) / 2;
  int il = (int)floor(a * REPS), ih = (int)ceil((1 - a) * REPS) - 1;
  if (il < 0) il = 0;
  if (ih > REPS - 1) ih = REPS - 1;
  *lo = m[il];
  *hi = m[ih];
  free(m);
}

/* Binomial P(X <= k) for X ~ B(n, p). */
static double binom_cdf(int k, int n, double p) {
  if (k < 0) return 0;
  if (k >= n) return 1;
  if (p <= 0) return 1;
  if (p >= 1) return 0;
  double s = 0;
  for (int i = 0; i <= k; i++)
    s += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) + i * log(p) + (n - i) * log1p(-p));
  return s > 1 ? 1 : s;
}

/* Exact (Clopper-Pearson) interval of a rate k/n at confidence conf, by
 * bisection on the binomial tails. */
void st_clopper_pearson(int k, int n, double conf, double *lo, double *hi) {
  if (n <= 0) { *lo = 0; *hi = 1; return; }
  const double a = (1 - conf) / 2;
  double l = 0, h = 1;
  if (k == 0) *lo = 0;
  else {
    for (int it = 0; it < 200; it++) { /* lower: P(X >= k | p) = a */
      const double p = (l + h) / 2;
      if (1 - binom_cdf(k - 1, n, p) < a) l = p; else h = p;
    }
    *lo = (l + h) / 2;
  }
  l = 0, h = 1;
  if (k == n) *hi = 1;
  else {
    for (int it = 0; it < 200; it++) { /* upper: P(X <= k | p) = a */
      const double p = (l + h) / 2;
      if (binom_cdf(k, n, p) > a) l = p; else h = p;
    }
    *hi = (l + h) / 2;
  }
}

const char *const ST_RULES[ST_NRULE] = {"tracks", "higher", "lower"};

/* A claim on paired values: gaps a[i] - b[i] over the pairs where both are
 * finite; the mean with its 95% bootstrap CI (and the 90% one, for TOST).
 * Verdicts (1 reproduced, 0 not reproduced, -1 inconclusive):
 *   n < 3 pairs                       inconclusive, whatever the numbers
 *   tracks (margin m): TOST at 5%, i.e. the 90% CI inside (-m, m): reproduced;
 *     the 95% CI wholly outside [-m, m]: not reproduced; else inconclusive
 *   higher: the 95% CI above 0: reproduced; below 0, or (with a margin) the
 *     90% CI inside (-m, m), an equivalence: not reproduced; else inconclusive
 *   lower: the mirror of higher */
void st_claim_paired(const double *a, const double *b, int n, int rule, double margin, uint64_t seed, st_claim *c) {
  memset(c, 0, sizeof *c);
  double *g = malloc((size_t)(n > 0 ? n : 1) * sizeof *g);
  int k = 0;
  for (int i = 0; g && i < n; i++)
    if (isfinite(a[i]) && isfinite(b[i])) g[k++] = a[i] - b[i];
  c->n = k;
  c->dropped = n - k;
  c->mean = k ? st_mean_of(g, k) : NAN;
  st_bootstrap(g, k, seed, 0.95, &c->lo, &c->hi);
  st_bootstrap(g, k, seed, 0.90, &c->lo90, &c->hi90);
  free(g);
  c->verdict = -1;
  if (k < 3) return;
  const int eq = margin > 0 && c->lo90 > -margin && c->hi90 < margin;
  if (rule == ST_RULE_TRACKS) {
    if (eq) c->verdict = 1;
    else if (c->lo > margin || c->hi < -margin) c->verdict = 0;
  } else {
    const double s = rule == ST_RULE_HIGHER ? 1 : -1;
    const double lo = s > 0 ? c->lo : -c->hi, hi = s > 0 ? c->hi : -c->lo;
    if (lo > 0) c->verdict = 1;
    else if (hi < 0 || eq) c->verdict = 0;
  }
}

/* A claim on rates (divergence, failure): ka of na runs of A against kb of
 * nb of B with exact 95% intervals.  higher: A's interval wholly above B's:
 * reproduced; wholly below: not reproduced; overlapping: inconclusive (also
 * when either arm has fewer than 3 runs).  tracks: inconclusive unless the
 * intervals are disjoint (not reproduced): an exact equivalence of rates
 * needs more runs than a study here has. */
void st_claim_rates(int ka, int na, int kb, int nb, int rule, st_claim *c) {
  memset(c, 0, sizeof *c);
  c->n = na < nb ? na : nb;
  c->ka = ka, c->na = na, c->kb = kb, c->nb = nb;
  st_clopper_pearson(ka, na, 0.95, &c->lo, &c->hi);
  st_clopper_pearson(kb, nb, 0.95, &c->lo90, &c->hi90); /* B's interval */
  c->mean = (na ? (double)ka / na : NAN) - (nb ? (double)kb / nb : NAN);
  c->verdict = -1;
  if (na < 3 || nb < 3) return;
  const int above = c->lo > c->hi90, below = c->hi < c->lo90;
  if (rule == ST_RULE_HIGHER) c->verdict = above ? 1 : below ? 0 : -1;
  else if (rule == ST_RULE_LOWER) c->verdict = below ? 1 : above ? 0 : -1;
  else c->verdict = above || below ? 0 : -1;
}
