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
  st_percentile(m, REPS, conf, lo, hi);
  free(m);
}

void st_percentile(double *v, int n, double conf, double *lo, double *hi) {
  qsort(v, (size_t)n, sizeof *v, cmp_dbl);
  const double a = (1 - conf) / 2;
  int il = (int)floor(a * n), ih = (int)ceil((1 - a) * n) - 1;
  if (il < 0) il = 0;
  if (ih > n - 1) ih = n - 1;
  if (lo) *lo = v[il];
  if (hi) *hi = v[ih];
}

/* Student's t: the regularized incomplete beta I_x(a, b) by its continued
 * fraction (modified Lentz), the CDF from it, the quantile by bisection. */
static double betacf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (fabs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; m++) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d, c = 1 + aa / c;
    d = 1 / (fabs(d) < tiny ? tiny : d), c = fabs(c) < tiny ? tiny : c;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d, c = 1 + aa / c;
    d = 1 / (fabs(d) < tiny ? tiny : d), c = fabs(c) < tiny ? tiny : c;
    const double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-15) break;
  }
  return h;
}
static double betai(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double f = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
  return x < (a + 1) / (a + b + 2) ? f * betacf(a, b, x) / a : 1 - f * betacf(b, a, 1 - x) / b;
}
double st_t_cdf(double t, int df) {
  const double tail = 0.5 * betai(df / 2.0, 0.5, df / (df + t * t)); /* P(T > |t|) */
  return t >= 0 ? 1 - tail : tail;
}
double st_t_quantile(double p, int df) {
  if (df < 1 || !(p > 0 && p < 1)) return NAN;
  if (p < 0.5) return -st_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (st_t_cdf(hi, df) < p) hi *= 2;
  for (int it = 0; it < 200 && hi - lo > 1e-13 * hi; it++) {
    const double mid = (lo + hi) / 2;
    if (st_t_cdf(mid, df) < p) lo = mid; else hi = mid;
  }
  return (lo + hi) / 2;
}
void st_t_interval(const double *x, int n, double conf, double *lo, double *hi) {
  const double m = st_mean_of(x, n), sd = st_sd_of(x, n);
  if (n < 2) { *lo = *hi = n == 1 ? m : NAN; return; }
  const double h = st_t_quantile((1 + conf) / 2, n - 1) * sd / sqrt((double)n);
  *lo = m - h, *hi = m + h;
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
 * finite (the claims engine has already put failed runs at the worst value),
 * averaged per cluster (cluster[i]: the pair's seed, so that the pairs of one
 * seed at several learning rates or axis points count as one unit; NULL:
 * each pair its own); the mean of the clusters' means, their sd, and
 * Student's t intervals over the clusters at 95% and 90% (for TOST).
 * Numbers only: study_claims.c decides the verdict. */
void st_claim_paired(const double *a, const double *b, const int *cluster, int n, st_claim *c) {
  memset(c, 0, sizeof *c);
  double *g = malloc(2 * (size_t)(n > 0 ? n : 1) * sizeof *g), *cm = g + (n > 0 ? n : 1);
  int *id = malloc((size_t)(n > 0 ? n : 1) * sizeof *id);
  int k = 0, nc = 0;
  for (int i = 0; g && id && i < n; i++)
    if (isfinite(a[i]) && isfinite(b[i])) g[k] = a[i] - b[i], id[k++] = cluster ? cluster[i] : i;
  for (int i = 0; g && id && i < k; i++) { /* each cluster's mean, in first-seen order */
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = id[j] == id[i];
    if (seen) continue;
    double s = 0;
    int m = 0;
    for (int j = i; j < k; j++)
      if (id[j] == id[i]) s += g[j], m++;
    cm[nc++] = s / m;
  }
  c->n = k;
  c->nclust = nc;
  c->dropped = n - k;
  c->mean = nc ? st_mean_of(cm, nc) : NAN;
  c->sd = st_sd_of(cm, nc);
  if (!nc) c->lo = c->hi = c->lo90 = c->hi90 = NAN;
  else {
    st_t_interval(cm, nc, 0.95, &c->lo, &c->hi);
    st_t_interval(cm, nc, 0.90, &c->lo90, &c->hi90);
  }
  free(g);
  free(id);
}

/* A claim on rates (divergence, failure): ka of na runs of A against kb of
 * nb of B, each with its exact 95% interval (lo, hi: A's; lo90, hi90: B's). */
void st_claim_rates(int ka, int na, int kb, int nb, int rule, st_claim *c) {
  (void)rule;
  memset(c, 0, sizeof *c);
  c->n = na < nb ? na : nb;
  c->ka = ka, c->na = na, c->kb = kb, c->nb = nb;
  st_clopper_pearson(ka, na, 0.95, &c->lo, &c->hi);
  st_clopper_pearson(kb, nb, 0.95, &c->lo90, &c->hi90); /* B's interval */
  c->mean = (na ? (double)ka / na : NAN) - (nb ? (double)kb / nb : NAN);
}

double st_binom_tail(int k, int n) {
  if (k <= 0) return 1;
  if (k > n) return 0;
  return 1 - binom_cdf(k - 1, n, 0.5);
}

/* Holm's adjusted p-values (here, below the edge statistics that use them too). */
void st_edge_holm(const double *p, int m, double *adj) {
  int *ord = malloc((size_t)(m > 0 ? m : 1) * sizeof *ord), nt = 0;
  for (int i = 0; i < m; i++) adj[i] = NAN;
  if (!ord) return;
  for (int i = 0; i < m; i++)
    if (!isnan(p[i])) ord[nt++] = i;
  for (int i = 1; i < nt; i++) /* insertion sort by p, stable */
    for (int j = i; j > 0 && p[ord[j]] < p[ord[j - 1]]; j--) { const int t = ord[j]; ord[j] = ord[j - 1]; ord[j - 1] = t; }
  double run = 0;
  for (int j = 0; j < nt; j++) {
    double v = (nt - j) * p[ord[j]];
    if (v > 1) v = 1;
    if (v > run) run = v; /* step-down: adjusted p-values never decrease */
    adj[ord[j]] = run;
  }
  free(ord);
}

int st_holm_any(const double *p, int n, double alpha) {
  double adj[MAX_LR * 8];
  if (n < 1 || n > MAX_LR * 8) return 0;
  st_edge_holm(p, n, adj);
  for (int i = 0; i < n; i++)
    if (adj[i] <= alpha) return 1;
  return 0;
}

double st_mde_paired(double sd, int n) {
  if (n < 2 || !isfinite(sd)) return NAN;
  return (st_t_quantile(0.975, n - 1) + st_t_quantile(0.8, n - 1)) * sd / sqrt((double)n);
}

double st_mde_rate(int n, int ngroups, double alpha) {
  if (n < 1 || ngroups < 1) return INFINITY;
  int k = 1; /* the fewest discordant pairs, all one way, that reject */
  while (k <= n && st_binom_tail(k, k) > alpha / ngroups) k++;
  if (k > n) return INFINITY;
  double lo = 0, hi = 1; /* power P(Binom(n, d) >= k) rises with d: bisect for 0.8 */
  for (int it = 0; it < 60; it++) {
    const double d = (lo + hi) / 2;
    if (1 - binom_cdf(k - 1, n, d) >= 0.8) hi = d; else lo = d;
  }
  return hi;
}
