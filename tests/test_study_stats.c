/* test_study_stats.c: the statistics of study claims
 * (experiments/study_stats.c) on synthetic per-seed tables of two arms:
 * paired gaps (one seed, no finite values, ties, a NaN among seeds, a clear
 * gap); the bootstrap is deterministic and its CI holds the mean;
 * Clopper-Pearson intervals against closed forms; exact McNemar tails,
 * Holm, the minimum detectable effects; the lrsweep analysis's LR_max and LR
 * sensitivity (Wortsman et al.) on hand-computed grids.  The verdicts:
 * test_study_verdict.c.  Noise comes from EXMY_TEST_SEED's generator. */
#include "experiments/study_int.h"
#include "tests/testutil.h"

#include <math.h>

static uint64_t rs;
static double noise(double sd) { /* uniform in [-sd, sd] */
  return sd * (2.0 * (double)(tu_next(&rs) >> 11) / 9007199254740992.0 - 1.0);
}

static void paired(const char *what, const double *a, const double *b, int n, int rule, double margin, int want_n,
                   int want_sign) {
  st_claim c;
  (void)rule, (void)margin;
  st_claim_paired(a, b, NULL, n, &c);
  const int sign = !(c.n > 0) ? 9 : c.lo > 0 ? 1 : c.hi < 0 ? -1 : 0; /* where the 95% CI lies (9: no pairs) */
  CHECK(c.n == want_n && sign == want_sign, "%s: n %d CI side %d, want n %d side %d (mean %a, ci [%a, %a])", what,
        c.n, sign, want_n, want_sign, c.mean, c.lo, c.hi);
}

int main(void) {
  rs = tu_seed(20261126);
  enum { T = ST_RULE_TRACKS, H = ST_RULE_HIGHER, L = ST_RULE_LOWER };
  /* numbers only (the verdicts are the claims engine's: test_study_verdict) */
  const double a1[] = {3.5}, b1[] = {2.0};
  paired("one seed", a1, b1, 1, H, 0, 1, 1);
  const double an[] = {NAN, NAN, NAN, NAN, NAN}, bn[] = {2, 2.1, 2.2, 2.3, 2.4};
  paired("no finite A", an, bn, 5, H, 0, 0, 9);
  st_claim c;
  st_claim_paired(an, bn, NULL, 5, &c);
  CHECK(isnan(c.mean) && c.dropped == 5, "no finite A: mean %a dropped %d", c.mean, c.dropped);
  const double at[] = {2.5, 2.6, 2.4, 2.55, 2.45};
  paired("ties", at, at, 5, T, 0.01, 5, 0);
  st_claim_paired(at, at, NULL, 5, &c);
  CHECK(c.mean == 0 && c.sd == 0 && c.lo == 0 && c.hi == 0, "ties: mean %a sd %a [%a, %a]", c.mean, c.sd, c.lo, c.hi);
  const double ah[] = {2.6, NAN, 2.61, 2.62, 2.6}, bh[] = {2.5, 2.5, 2.51, 2.52, 2.5};
  paired("one NaN", ah, bh, 5, H, 0, 4, 1);
  double ag[8], bg[8];
  for (int i = 0; i < 8; i++) { bg[i] = 2.5 + noise(0.05); ag[i] = bg[i] + 0.1 + noise(0.01); }
  paired("gap +0.1", ag, bg, 8, H, 0, 8, 1);
  paired("gap -0.1", bg, ag, 8, H, 0, 8, -1);
  const double sg[6] = {0.0, 0.04, 0.01, 0.03, 0.005, 0.035};
  /* exact McNemar tails, Holm, the minimum detectable effects */
  CHECK(st_binom_tail(5, 5) == 1.0 / 32 && st_binom_tail(0, 7) == 1 && st_binom_tail(6, 5) == 0 &&
        fabs(st_binom_tail(4, 6) - 22.0 / 64) < 1e-12, "binomial tails: %a %a", st_binom_tail(5, 5), st_binom_tail(4, 6));
  const double ph[] = {0.03, 0.2, 0.9}, ph2[] = {0.016, 0.5, 0.5};
  CHECK(!st_holm_any(ph, 3, 0.05) && st_holm_any(ph2, 3, 0.05) && st_holm_any(ph, 1, 0.05) && !st_holm_any(ph, 0, 0.05),
        "Holm's first step (alpha / n)");
  /* Student's t against tables (R's qt): 2.776445 (0.975, 4 df), 2.131847 (0.95, 4), 0.9409646 (0.8, 4),
   * 12.7062 (0.975, 1), 1.959964 as df grows */
  CHECK(fabs(st_t_quantile(0.975, 4) - 2.776445) < 1e-6 && fabs(st_t_quantile(0.95, 4) - 2.131847) < 1e-6 &&
        fabs(st_t_quantile(0.8, 4) - 0.9409646) < 1e-6 && fabs(st_t_quantile(0.975, 1) - 12.7062) < 1e-4 &&
        fabs(st_t_quantile(0.975, 100000) - 1.959964) < 1e-4 && fabs(st_t_quantile(0.025, 4) + 2.776445) < 1e-6,
        "t quantiles: %.7f %.7f %.7f %.5f %.6f", st_t_quantile(0.975, 4), st_t_quantile(0.95, 4), st_t_quantile(0.8, 4),
        st_t_quantile(0.975, 1), st_t_quantile(0.975, 100000));
  CHECK(fabs(st_mde_paired(0.1, 5) - (2.776445 + 0.9409646) * 0.1 / sqrt(5.0)) < 1e-6 && isnan(st_mde_paired(0.1, 1)),
        "paired MDE %a", st_mde_paired(0.1, 5));
  /* the paired CI: Student's t over the clusters' means.  Five seeds at two learning rates each:
   * the seeds' mean gaps 1..5 give mean 3, sd sqrt(2.5), 95% CI 3 -+ 2.776445 sqrt(2.5 / 5) */
  {
    const double pa[10] = {1.5, 2, 3.25, 4.5, 5.5, 0.5, 2, 2.75, 3.5, 4.5}, pb[10] = {0};
    const int seed[10] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
    st_claim_paired(pa, pb, seed, 10, &c);
    const double h = 2.776445 * sqrt(0.5);
    CHECK(c.n == 10 && c.nclust == 5 && fabs(c.mean - 3) < 1e-12 && fabs(c.sd - sqrt(2.5)) < 1e-12 &&
          fabs(c.lo - (3 - h)) < 1e-5 && fabs(c.hi - (3 + h)) < 1e-5 && c.lo90 > c.lo && c.hi90 < c.hi,
          "clustered CI: n %d clusters %d mean %a sd %a [%a, %a]", c.n, c.nclust, c.mean, c.sd, c.lo, c.hi);
    st_claim_paired(pa, pb, NULL, 10, &c); /* unclustered: ten units, a narrower interval */
    CHECK(c.nclust == 10 && c.hi - c.lo < 2 * h, "unclustered: %d clusters, width %a", c.nclust, c.hi - c.lo);
  }
  /* 5 seeds: only 5 of 5 discordant rejects (1/32 <= 0.05): power d^5 = 0.8 -> d = 0.8^(1/5) */
  CHECK(fabs(st_mde_rate(5, 1, 0.05) - pow(0.8, 0.2)) < 1e-9, "rate MDE at 5 seeds %.6f", st_mde_rate(5, 1, 0.05));
  CHECK(isinf(st_mde_rate(4, 1, 0.05)) && isinf(st_mde_rate(5, 2, 0.05)) && st_mde_rate(20, 1, 0.05) < 0.5,
        "rate MDE: 4 seeds %g, 5 seeds over 2 groups %g, 20 seeds %g", st_mde_rate(4, 1, 0.05), st_mde_rate(5, 2, 0.05),
        st_mde_rate(20, 1, 0.05));
  /* the bootstrap: deterministic, holds the mean, narrows with n */
  double l1, h1, l2, h2;
  st_bootstrap(sg, 6, 7, 0.95, &l1, &h1);
  st_bootstrap(sg, 6, 7, 0.95, &l2, &h2);
  CHECK(tu_bits64(l1) == tu_bits64(l2) && tu_bits64(h1) == tu_bits64(h2), "bootstrap not deterministic: %a %a vs %a %a",
        l1, h1, l2, h2);
  const double m = st_mean_of(sg, 6);
  CHECK(l1 <= m && m <= h1 && l1 >= 0 && h1 <= 0.04, "bootstrap CI [%a, %a] vs mean %a", l1, h1, m);
  st_bootstrap(sg, 6, 7, 0.90, &l2, &h2);
  CHECK(l2 >= l1 && h2 <= h1, "90%% CI [%a, %a] not inside the 95%% one [%a, %a]", l2, h2, l1, h1);
  /* Clopper-Pearson against closed forms: k = 0 and k = n, and 5 of 10 */
  double lo, hi;
  st_clopper_pearson(0, 10, 0.95, &lo, &hi);
  CHECK(lo == 0 && fabs(hi - (1 - pow(0.025, 0.1))) < 1e-9, "CP 0/10: [%a, %a]", lo, hi);
  st_clopper_pearson(10, 10, 0.95, &lo, &hi);
  CHECK(hi == 1 && fabs(lo - pow(0.025, 0.1)) < 1e-9, "CP 10/10: [%a, %a]", lo, hi);
  st_clopper_pearson(5, 10, 0.95, &lo, &hi); /* published: 0.1871, 0.8129 */
  CHECK(fabs(lo - 0.187086) < 1e-5 && fabs(hi - 0.812914) < 1e-5 && fabs(lo + hi - 1) < 1e-9, "CP 5/10: [%.6f, %.6f]",
        lo, hi);
  st_clopper_pearson(1, 20, 0.95, &lo, &hi); /* published: 0.00127, 0.2487 */
  CHECK(fabs(lo - 0.0012650) < 1e-6 && fabs(hi - 0.2487) < 1e-4, "CP 1/20: [%.7f, %.5f]", lo, hi);
  /* LR_max: the largest lr (ascending) within delta of best; +inf and NaN never qualify */
  const double g1[] = {2.0, 1.8, 1.75, 1.9, INFINITY};
  CHECK(st_lr_max_index(g1, 5, 1.75, 0.05) == 2, "LR_max of a U-shaped curve: %d, want 2", st_lr_max_index(g1, 5, 1.75, 0.05));
  CHECK(st_lr_max_index(g1, 5, 1.75, 0.15) == 3, "LR_max with delta 0.15: %d, want 3", st_lr_max_index(g1, 5, 1.75, 0.15));
  CHECK(st_lr_max_index(g1, 5, 1.70, 0.05) == 2, "LR_max at best + delta exactly: %d, want 2", st_lr_max_index(g1, 5, 1.70, 0.05));
  const double g2[] = {INFINITY, NAN, INFINITY};
  CHECK(st_lr_max_index(g2, 3, 1.7, 0.05) == -1, "LR_max of an arm that never trained: %d, want -1",
        st_lr_max_index(g2, 3, 1.7, 0.05));
  CHECK(st_lr_max_index(g1, 5, INFINITY, 0.05) == -1, "LR_max without a reference best: %d, want -1",
        st_lr_max_index(g1, 5, INFINITY, 0.05));
  /* LR sensitivity: mean of min(loss, l0) minus its minimum; failures count as l0 */
  const double g3[] = {3.0, 2.0, 2.5, INFINITY}; /* l0 4: min(.)= 3, 2, 2.5, 4 -> mean 2.875 - 2 */
  CHECK(st_lr_sensitivity(g3, 4, 4.0) == 0.875, "LR sensitivity %a, want 0.875", st_lr_sensitivity(g3, 4, 4.0));
  const double g4[] = {5.0, NAN}; /* both count as l0: a flat curve, sensitivity 0 */
  CHECK(st_lr_sensitivity(g4, 2, 4.0) == 0, "LR sensitivity of an arm that never trained: %a", st_lr_sensitivity(g4, 2, 4.0));
  CHECK(isnan(st_lr_sensitivity(g3, 4, NAN)), "LR sensitivity without a first loss is not NaN");
  /* Spearman beyond 64 points (the full outliers study pools up to 96 runs) */
  double sx[100], sy[100];
  for (int i = 0; i < 100; i++) sx[i] = i, sy[i] = (double)(i * i) - (i % 2 ? 0.5 : 0.0);
  CHECK(st_spearman(sx, sy, 100) == 1.0, "Spearman of 100 increasing pairs %a, want 1", st_spearman(sx, sy, 100));
  for (int i = 0; i < 100; i++) sy[i] = -sy[i];
  CHECK(st_spearman(sx, sy, 100) == -1.0, "Spearman of 100 decreasing pairs %a, want -1", st_spearman(sx, sy, 100));
  /* one outliers.csv row summarized: maxima over blocks, amax over the rms beside it */
  char c0[] = "lse_mean", c1[] = "lse_max", c2[] = "head_in_amax", c3[] = "head_in_rms", c4[] = "h0.logit_max",
       c5[] = "h0.kurtosis", c6[] = "h0.fc2_in_amax", c7[] = "h0.fc2_in_rms", c8[] = "h1.logit_max", c9[] = "h1.kurtosis",
       c10[] = "h1.gate_up_cos_max", c11[] = "h1.gate_up_cos_mean";
  char *names[] = {c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11};
  const double vals[] = {3.0, 4.5, 8.0, 2.0, 7.0, 1.5, 30.0, 3.0, 9.0, 1.25, 0.5, 0.25};
  st_outl ol;
  st_outliers_row(names, vals, 12, &ol);
  CHECK(ol.logit == 9.0 && ol.kurt == 1.5 && ol.ratio == 10.0 && ol.lse == 4.5 && ol.cos == 0.5,
        "outliers row: logit %a kurt %a ratio %a lse %a cos %a, want 9 1.5 10 4.5 0.5", ol.logit, ol.kurt, ol.ratio,
        ol.lse, ol.cos);
  st_outliers_row(names, vals, 10, &ol); /* GELU: no cosine columns */
  CHECK(isnan(ol.cos), "outliers row without gate/up columns: cos %a, want NaN", ol.cos);
  return tu_finish("test_study_stats");
}
