/* test_study_edge.c: the stability edge (experiments/study_edge.c) against
 * a known logistic (seeds simulated from p(fail | lr), many replicates: the
 * profile interval's coverage and the estimates' bias), and on hand-made
 * grids: complete and quasi-complete separation, all failed, none failed,
 * one seed, ties at 1/2, NaN losses, censoring below and above the grid,
 * missing runs; exact tests against published or closed-form values
 * (Clopper-Pearson, McNemar, Fisher, Holm), the minimum detectable effect
 * against a binomial tail solved here, the refinement helper, Wortsman's LR
 * sensitivity and the loss offset.  Noise from EXMY_TEST_SEED's generator. */
#include "experiments/study_int.h"
#include "tests/testutil.h"

#include <math.h>

static uint64_t rs;
static double unif(void) { return (double)(tu_next(&rs) >> 11) / 9007199254740992.0; }
static double sigm(double t) { return 1 / (1 + exp(-t)); }

#define NLR 8
#define NS 40
static double grid[NLR];          /* x2.26 apart, as the lrsweep grid */
static signed char oa[NS * NLR], ob[NS * NLR];
static double la[NS * NLR], lb[NS * NLR], ia[NS], ib[NS];

static st_edge_arm arm(signed char *out, double *loss, double *init, int nseed) {
  st_edge_arm a = {NLR, nseed, grid, out, loss, init, 0};
  return a;
}
static char txt[200];
#define FMT_IS(fn, obj, want)                                                                     \
  do {                                                                                            \
    fn(obj, txt, sizeof txt);                                                                     \
    CHECK(strcmp(txt, want) == 0, "%s: '%s', want '%s'", #fn, txt, want);                        \
  } while (0)

/* outcomes from a string per seed: '.' trained, 'x' diverged, 'u' under-trained, '-' missing,
 * 'j' unjudged (the reference's own run under-trained there) */
static void set_out(signed char *out, int seed, const char *s) {
  for (int k = 0; k < NLR; k++)
    out[seed * NLR + k] = s[k] == 'x' ? ST_RUN_DIVERGED : s[k] == 'u' ? ST_RUN_UNDERTRAINED
                        : s[k] == '-' ? ST_RUN_MISSING : s[k] == 'j' ? ST_RUN_UNJUDGED : ST_RUN_TRAINED;
}

/* seeds of one arm from p(fail) = sigm(beta (x - x50)); a shared uniform
 * per (seed, lr) couples two arms as paired seeds do */
static double uu[NS * NLR];
static void simulate(signed char *out, int nseed, double x50, double beta) {
  for (int s = 0; s < nseed; s++)
    for (int k = 0; k < NLR; k++)
      out[s * NLR + k] = uu[s * NLR + k] < sigm(beta * (log2(grid[k]) - x50)) ? ST_RUN_DIVERGED : ST_RUN_TRAINED;
}
static void draw(int nseed) { for (int i = 0; i < nseed * NLR; i++) uu[i] = unif(); }

static double binom_tail(int n, int k, double p) { /* P(X >= k), X ~ B(n, p), by the sum */
  double s = 0;
  for (int i = k; i <= n; i++) s += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0)) * pow(p, i) * pow(1 - p, n - i);
  return s;
}

static void known_logistic(void) {
  /* 10 seeds per lr, slope 1 per octave, the edge between grid points */
  const double x50 = -4.4, beta = 1.0;
  const int R = 1000, ns = 10;
  int npoint = 0, cover = 0, nbr = 0, brcover = 0, npn = 0;
  double bias = 0, npbias = 0;
  for (int r = 0; r < R; r++) {
    draw(ns);
    simulate(oa, ns, x50, beta);
    st_edge_arm a = arm(oa, NULL, NULL, ns);
    st_edge_fit f;
    st_edge_logistic(&a, 0.95, &f);
    if (f.status == ST_EDGE_POINT) {
      npoint++;
      bias += log2(f.edge) - x50;
      cover += f.lo <= exp2(x50) && exp2(x50) <= f.hi;
    } else if (f.status == ST_EDGE_BRACKET) {
      nbr++;
      brcover += f.lo <= exp2(x50) && exp2(x50) <= f.hi;
    }
    st_edge_np e;
    st_edge_nonparam(&a, &e);
    if (e.status == ST_EDGE_POINT) npn++, npbias += e.x - x50;
  }
  const double cov = (double)cover / npoint, se = sqrt(0.95 * 0.05 / npoint);
  printf("known logistic: %d of %d fits a point, coverage %.3f (+-%.3f), bias %+.3f octaves; %d bracketed (%d hold "
         "the edge); nonparametric bias %+.3f over %d\n",
         npoint, R, cov, 3 * se, bias / npoint, nbr, brcover, npbias / npn, npn);
  CHECK(npoint >= 0.9 * R, "known logistic: only %d of %d fits give a point", npoint, R);
  CHECK(fabs(cov - 0.95) <= 3 * se, "known logistic: profile interval coverage %.4f (%d of %d), want 0.95 +- %.4f", cov,
        cover, npoint, 3 * se);
  CHECK(fabs(bias / npoint) < 0.1, "known logistic: mean error of the MLE edge %+.4f octaves", bias / npoint);
  CHECK(fabs(npbias / npn) < 0.25, "known logistic: mean error of the nonparametric edge %+.4f octaves", npbias / npn);
  CHECK(brcover == nbr, "known logistic: %d of %d brackets miss the edge", nbr - brcover, nbr);

  /* a steep edge (slope 4 per octave): separation is common and reported as a bracket */
  npoint = cover = nbr = brcover = 0;
  for (int r = 0; r < 300; r++) {
    draw(ns);
    simulate(oa, ns, x50, 4.0);
    st_edge_arm a = arm(oa, NULL, NULL, ns);
    st_edge_fit f;
    st_edge_logistic(&a, 0.95, &f);
    if (f.status == ST_EDGE_POINT) npoint++, cover += f.lo <= exp2(x50) && exp2(x50) <= f.hi;
    else if (f.status == ST_EDGE_BRACKET) nbr++, brcover += f.lo <= exp2(x50) && exp2(x50) <= f.hi;
    else CHECK(0, "steep edge: status %d", f.status);
  }
  printf("steep logistic: %d points (coverage %.3f), %d brackets (%d hold the edge)\n", npoint,
         (double)cover / npoint, nbr, brcover);
  CHECK(nbr > 0 && brcover >= 0.95 * nbr, "steep: %d of %d brackets hold the edge", brcover, nbr);
  CHECK(npoint > 0 && cover >= 0.85 * npoint, "steep: %d of %d profile intervals hold the edge", cover, npoint);

  /* the paired shift: A's edge one octave below B's, 10 paired seeds */
  const int R2 = 200;
  int scover = 0, rcover = 0, sn = 0;
  double sbias = 0;
  for (int r = 0; r < R2; r++) {
    draw(ns);
    simulate(oa, ns, x50 - 1, beta);
    simulate(ob, ns, x50, beta);
    st_edge_arm a = arm(oa, NULL, NULL, ns), b = arm(ob, NULL, NULL, ns);
    st_edge_shift s;
    char err[200];
    if (st_edge_shift_paired(&a, &b, 0x1234 + (uint64_t)r, 0.95, &s, err, sizeof err)) { CHECK(0, "%s", err); return; }
    if (s.cens) continue;
    sn++;
    sbias += s.d + 1;
    scover += s.lo_g <= -1 && -1 <= s.hi_g;
    rcover += s.lo <= -1 && -1 <= s.hi;
  }
  printf("paired shift -1: %d of %d points, bias %+.3f, coverage %.3f (bootstrap alone %.3f)\n", sn, R2, sbias / sn,
         (double)scover / sn, (double)rcover / sn);
  CHECK(sn >= 0.95 * R2, "paired shift: %d of %d replicates censored", R2 - sn, R2);
  CHECK(fabs(sbias / sn) < 0.15, "paired shift: mean error %+.4f octaves", sbias / sn);
  CHECK(scover >= 0.88 * sn, "paired shift: the interval holds the true shift in %d of %d", scover, sn);
}

/* a symmetric design: counts mirrored about x = 0, so the edge is lr 1 and
 * the profile interval symmetric in log lr */
static void symmetric(void) {
  const double g[4] = {0.25, 0.5, 2, 4};
  signed char out[10 * 4];
  const int fails[4] = {1, 3, 7, 9};
  for (int s = 0; s < 10; s++)
    for (int k = 0; k < 4; k++) out[s * 4 + k] = s < fails[k] ? ST_RUN_DIVERGED : ST_RUN_TRAINED;
  st_edge_arm a = {4, 10, g, out, NULL, NULL, 0};
  st_edge_fit f;
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_POINT && fabs(log2(f.edge)) < 1e-9 && fabs(log2(f.lo) + log2(f.hi)) < 1e-6 && f.lo < 1 &&
            f.hi > 1 && !f.outside,
        "symmetric: status %d edge %a [%a, %a]", f.status, f.edge, f.lo, f.hi);
  /* the score equations hold at the MLE */
  double g0 = 0, g1 = 0;
  for (int k = 0; k < 4; k++) {
    const double x = log2(g[k]), p = sigm(f.b0 + f.b1 * x);
    g0 += fails[k] - 10 * p, g1 += x * (fails[k] - 10 * p);
  }
  CHECK(fabs(g0) < 1e-8 && fabs(g1) < 1e-8, "symmetric: score at the MLE %a %a (b0 %a b1 %a)", g0, g1, f.b0, f.b1);
  /* the deviance at the interval's ends is the chi-square quantile: the
   * slope maximised by a scan here, independently of the module's Newton */
  double lmax = 0;
  for (int k = 0; k < 4; k++) {
    const double p = sigm(f.b0 + f.b1 * log2(g[k]));
    lmax += fails[k] * log(p) + (10 - fails[k]) * log(1 - p);
  }
  const double ends[2] = {log2(f.lo), log2(f.hi)};
  for (int e = 0; e < 2; e++) {
    double best = -INFINITY;
    for (double sl = 0.001; sl < 10; sl += 0.0005) {
      double l = 0;
      for (int k = 0; k < 4; k++) {
        const double p = sigm(sl * (log2(g[k]) - ends[e]));
        l += fails[k] * log(p) + (10 - fails[k]) * log(1 - p);
      }
      if (l > best) best = l;
    }
    CHECK(fabs(2 * (lmax - best) - 3.841458820694124) < 1e-4, "symmetric: deviance %.6f at end %a, want 3.841459",
          2 * (lmax - best), ends[e]);
  }
  /* a 90% interval sits inside the 95% one */
  st_edge_fit f9;
  st_edge_logistic(&a, 0.90, &f9);
  st_edge_fmt_fit(&f, txt, sizeof txt);
  CHECK(strncmp(txt, "1 [0.", 5) == 0 && strstr(txt, "significant") == NULL, "symmetric: '%s'", txt);
  CHECK(f9.lo > f.lo && f9.hi < f.hi, "symmetric: 90%% [%a, %a] not inside 95%% [%a, %a]", f9.lo, f9.hi, f.lo, f.hi);
}

static void hand_grids(void) {
  char err[300];
  st_edge_fit f;
  st_edge_np e;
  /* complete separation: trained up to lr 3, failed from lr 4 */
  for (int s = 0; s < 5; s++) set_out(oa, s, "....xxxx");
  st_edge_arm a = arm(oa, NULL, NULL, 5);
  CHECK(st_edge_check(&a, err, sizeof err) == 0, "check: %s", err);
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_BRACKET && f.lo == grid[3] && f.hi == grid[4] && isnan(f.edge),
        "separation: status %d (%a, %a) edge %a, want bracket (%a, %a)", f.status, f.lo, f.hi, f.edge, grid[3], grid[4]);
  FMT_IS(st_edge_fmt_fit, &f, "in (0.03, 0.0678), separated");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_POINT && fabs(e.x - (log2(grid[3]) + log2(grid[4])) / 2) < 1e-12 && e.lo_i == 3 && e.hi_i == 4,
        "separation: nonparametric %d x %a [%d, %d], want the midpoint", e.status, e.x, e.lo_i, e.hi_i);
  /* quasi-complete: mixed at lr 4 only */
  set_out(oa, 0, "....x.xx");
  set_out(oa, 1, "....x.xx");
  for (int s = 0; s < 5; s++) set_out(oa, s, s < 2 ? "....xxxx" : ".....xxx");
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_BRACKET && f.lo == grid[3] && f.hi == grid[5],
        "quasi-separation: status %d (%a, %a), want bracket (%a, %a)", f.status, f.lo, f.hi, grid[3], grid[5]);
  st_edge_nonparam(&a, &e); /* lr 4: 3 of 5 trained; lr 5: none */
  CHECK(e.status == ST_EDGE_POINT && fabs(e.x - (log2(grid[4]) + 0.1 / 0.6 * (log2(grid[5]) - log2(grid[4])))) < 1e-12,
        "quasi-separation: nonparametric x %a", e.x);
  /* quasi at the top lr: no all-failed lr above it */
  for (int s = 0; s < 5; s++) set_out(oa, s, s < 1 ? ".......x" : "........");
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_BRACKET && f.lo == grid[6] && isinf(f.hi), "quasi at the top: %d (%a, %a)", f.status, f.lo,
        f.hi);
  FMT_IS(st_edge_fmt_fit, &f, "> 0.346, separated");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_ABOVE && e.lr == grid[7] && isinf(e.x) && e.x > 0,
        "1 of 5 failing at the top: nonparametric %d lr %a, want above the grid", e.status, e.lr);
  /* all failed: below the grid */
  for (int s = 0; s < 5; s++) set_out(oa, s, "xxxxxxxx");
  st_edge_logistic(&a, 0.95, &f);
  st_edge_nonparam(&a, &e);
  CHECK(f.status == ST_EDGE_BELOW && f.hi == grid[0] && f.lo == 0, "all failed: logistic %d (%a, %a)", f.status, f.lo, f.hi);
  CHECK(e.status == ST_EDGE_BELOW && e.lr == grid[0] && isinf(e.x) && e.x < 0 && e.hi_i == 0,
        "all failed: nonparametric %d lr %a x %a", e.status, e.lr, e.x);
  FMT_IS(st_edge_fmt_fit, &f, "< 0.0026, all failed");
  FMT_IS(st_edge_fmt_np, &e, "< 0.0026");
  /* none failed: above */
  for (int s = 0; s < 5; s++) set_out(oa, s, "........");
  st_edge_logistic(&a, 0.95, &f);
  st_edge_nonparam(&a, &e);
  CHECK(f.status == ST_EDGE_ABOVE && f.lo == grid[7] && isinf(f.hi), "none failed: logistic %d (%a, %a)", f.status, f.lo,
        f.hi);
  CHECK(e.status == ST_EDGE_ABOVE && e.lr == grid[7] && e.lo_i == 7, "none failed: nonparametric %d lr %a", e.status, e.lr);
  FMT_IS(st_edge_fmt_fit, &f, "> 0.783, none failed");
  FMT_IS(st_edge_fmt_np, &e, "> 0.783");
  /* under-trained is not a failure unless the caller says so */
  for (int s = 0; s < 5; s++) set_out(oa, s, ".....uuu");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_ABOVE, "under-trained counted as failed: %d", e.status);
  a.undertrained_fails = 1;
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_POINT && fabs(e.x - (log2(grid[4]) + 0.5 * (log2(grid[5]) - log2(grid[4])))) < 1e-12,
        "under-trained as failures: %d x %a", e.status, e.x);
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_BRACKET && f.lo == grid[4] && f.hi == grid[5], "under-trained as failures: logistic %d",
        f.status);
  a.undertrained_fails = 0;
  /* failures only below the lrs that train: no edge */
  for (int s = 0; s < 5; s++) set_out(oa, s, "xxx.....");
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_NOSLOPE && isnan(f.edge), "failures only below the trained lrs: status %d", f.status);
  /* failure flat in lr, not separated: the slope is not positive, or not significant */
  for (int s = 0; s < 5; s++) set_out(oa, s, s == 0 ? "x..x..x." : s == 1 ? ".x..x..x" : "........");
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_NOSLOPE || (f.status == ST_EDGE_POINT && f.lo == 0 && isinf(f.hi)),
        "no trend: status %d [%a, %a] lrt %a", f.status, f.lo, f.hi, f.lrt);
  /* one lr run, both outcomes there: no slope, no bracket */
  for (int s = 0; s < 5; s++) set_out(oa, s, s < 2 ? "---x----" : "---.----");
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_NOSLOPE && f.n == 5 && f.k == 2, "one lr, mixed: status %d n %d k %d", f.status, f.n, f.k);
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_ABOVE && e.lr == grid[3], "one lr, 3 of 5 trained: nonparametric %d lr %a", e.status, e.lr);
  /* ties at 1/2: the edge is the largest lr with half the seeds trained */
  for (int s = 0; s < 4; s++) set_out(oa, s, s < 2 ? "..xxxxxx" : ".....xxx");
  a.nseed = 4;
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_POINT && e.x == log2(grid[4]) && e.lo_i == 4, "tie at 1/2: x %a, want log2 lr[4] %a", e.x,
        log2(grid[4]));
  /* non-monotone: the largest crossing counts */
  for (int s = 0; s < 4; s++) set_out(oa, s, s < 3 ? ".xx..xxx" : "........");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_POINT && e.lo_i == 4 && e.hi_i == 5, "non-monotone: interval [%d, %d], want [4, 5]", e.lo_i,
        e.hi_i);
  /* unjudged cells (the reference learns little there) count nowhere: failing at lrs 4-5 and
   * unjudged above, the edge is the crossing at 3-4, not "above the grid" as it would be if
   * the top cells (all arms ending near the unigram loss) counted as trained */
  for (int s = 0; s < 4; s++) set_out(oa, s, "....xxjj");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_POINT && e.lo_i == 3 && e.hi_i == 4, "unjudged top: status %d interval [%d, %d], want [3, 4]",
        e.status, e.lo_i, e.hi_i);
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_BRACKET && f.lo == grid[3] && f.hi == grid[4] && f.n == 24,
        "unjudged top: logistic %d (%a, %a) n %d, want (lr 3, lr 4) over 24 runs", f.status, f.lo, f.hi, f.n);
  /* a learning rate judged in fewer than half its seeds leaves the window: one judged failure
   * at lr 4 (three seeds unjudged) does not place the edge below it */
  for (int s = 0; s < 4; s++) set_out(oa, s, s ? "....jjjj" : "....xjjj");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_ABOVE && e.lr == grid[3], "one judged cell of four: %d lr %a, want above lr 3", e.status,
        e.lr);
  for (int s = 0; s < 4; s++) set_out(oa, s, s < 2 ? "....xjjj" : "....jjjj"); /* half judged: it counts */
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_POINT && e.lo_i == 3 && e.hi_i == 4, "two judged cells of four: %d [%d, %d], want [3, 4]",
        e.status, e.lo_i, e.hi_i);
  for (int s = 0; s < 4; s++) set_out(oa, s, "....jjjj");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_ABOVE && e.lr == grid[3], "trained up to the unjudged cells: %d lr %a, want above lr 3",
        e.status, e.lr);
  /* missing runs are skipped, not failures: the crossing spans the hole */
  for (int s = 0; s < 4; s++) set_out(oa, s, "...--xxx");
  st_edge_nonparam(&a, &e);
  CHECK(e.status == ST_EDGE_POINT && e.lo_i == 2 && e.hi_i == 5 &&
            fabs(e.x - (log2(grid[2]) + 0.5 * (log2(grid[5]) - log2(grid[2])))) < 1e-12,
        "missing lrs: [%d, %d] x %a", e.lo_i, e.hi_i, e.x);
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_BRACKET && f.lo == grid[2] && f.hi == grid[5] && f.n == 24,
        "missing lrs: logistic %d (%a, %a) n %d", f.status, f.lo, f.hi, f.n);
  for (int s = 0; s < 4; s++) set_out(oa, s, "--------");
  st_edge_nonparam(&a, &e);
  st_edge_logistic(&a, 0.95, &f);
  CHECK(e.status == ST_EDGE_NODATA && f.status == ST_EDGE_NODATA, "no runs: %d %d", e.status, f.status);
  /* one seed */
  set_out(oa, 0, "......xx");
  a.nseed = 1;
  st_edge_logistic(&a, 0.95, &f);
  CHECK(f.status == ST_EDGE_BRACKET && f.lo == grid[5] && f.hi == grid[6], "one seed: %d (%a, %a)", f.status, f.lo, f.hi);
  set_out(ob, 0, "....xxxx");
  st_edge_arm b = arm(ob, NULL, NULL, 1);
  st_edge_shift sh;
  CHECK(st_edge_shift_paired(&a, &b, 1, 0.95, &sh, err, sizeof err) == 0, "one seed: %s", err);
  const double dx = (log2(grid[5]) + log2(grid[6])) / 2 - (log2(grid[3]) + log2(grid[4])) / 2;
  CHECK(sh.n == 1 && sh.cens == 0 && fabs(sh.d - dx) < 1e-12 && isnan(sh.lo) && isnan(sh.hi),
        "one seed: n %d cens %d d %a [%a, %a]", sh.n, sh.cens, sh.d, sh.lo, sh.hi);
  FMT_IS(st_edge_fmt_shift, &sh, "+2.35, one seed: no interval");
  /* the checks on a grid */
  double bad[NLR];
  memcpy(bad, grid, sizeof bad);
  bad[3] = bad[2];
  st_edge_arm c = {NLR, 1, bad, oa, NULL, NULL, 0};
  CHECK(st_edge_check(&c, err, sizeof err) == -1 && strstr(err, "learning rate 3"), "a repeated lr passes the check: %s",
        err);
  bad[3] = NAN;
  CHECK(st_edge_check(&c, err, sizeof err) == -1, "a NaN lr passes the check");
  c.lr = grid, c.nlr = 0;
  CHECK(st_edge_check(&c, err, sizeof err) == -1, "an empty grid passes the check");
  c.nlr = NLR;
  oa[5] = 7;
  CHECK(st_edge_check(&c, err, sizeof err) == -1 && strstr(err, "outcome 7"), "outcome 7 passes the check: %s", err);
  st_edge_arm d5 = {NLR - 1, 1, grid, ob, NULL, NULL, 0};
  CHECK(st_edge_shift_paired(&a, &d5, 1, 0.95, &sh, err, sizeof err) == -1, "grids of different sizes paired");
}

static void classify(void) {
  CHECK(st_edge_classify(NAN, 4.2, 0) == ST_RUN_DIVERGED, "NaN final loss not diverged");
  CHECK(st_edge_classify(INFINITY, 4.2, 0) == ST_RUN_DIVERGED, "inf final loss not diverged");
  CHECK(st_edge_classify(4.3, 4.2, 0) == ST_RUN_DIVERGED, "final above the initial loss not diverged");
  CHECK(st_edge_classify(4.2, 4.2, 0) == ST_RUN_TRAINED, "final at the initial loss diverged");
  CHECK(st_edge_classify(1.16, 4.2, 0) == ST_RUN_TRAINED, "a trained run (final 1.16) diverged");
  CHECK(st_edge_classify(3.0, 4.2, 1) == ST_RUN_UNDERTRAINED, "under-trained flag lost");
  CHECK(st_edge_classify(3.0, NAN, 0) == ST_RUN_TRAINED, "no initial loss: a finite final loss diverged");
}

static void shifts(void) {
  char err[300];
  st_edge_shift s, s2;
  /* identical arms: a zero shift whose bootstrap interval is the grid's */
  for (int i = 0; i < 6; i++) set_out(oa, i, "....xxxx"), set_out(ob, i, "....xxxx");
  st_edge_arm a = arm(oa, NULL, NULL, 6), b = arm(ob, NULL, NULL, 6);
  st_edge_shift_paired(&a, &b, 9, 0.95, &s, err, sizeof err);
  const double step = log2(grid[4]) - log2(grid[3]);
  CHECK(s.cens == 0 && s.d == 0 && s.lo == 0 && s.hi == 0 && s.grid_limited && fabs(s.res - step) < 1e-12 &&
            fabs(s.lo_g + step) < 1e-12 && fabs(s.hi_g - step) < 1e-12,
        "ties: d %a [%a, %a] limited %d res %a [%a, %a]", s.d, s.lo, s.hi, s.grid_limited, s.res, s.lo_g, s.hi_g);
  FMT_IS(st_edge_fmt_shift, &s, "+0.00 [-1.18, +1.18] grid step");
  /* deterministic */
  draw(6);
  simulate(oa, 6, -5, 1);
  simulate(ob, 6, -4.5, 1);
  st_edge_shift_paired(&a, &b, 9, 0.95, &s, err, sizeof err);
  st_edge_shift_paired(&a, &b, 9, 0.95, &s2, err, sizeof err);
  CHECK(tu_bits64(s.lo) == tu_bits64(s2.lo) && tu_bits64(s.hi) == tu_bits64(s2.hi), "shift bootstrap not deterministic");
  /* censoring: A fails everywhere, B has an edge: the shift is a bound */
  for (int i = 0; i < 6; i++) set_out(oa, i, "xxxxxxxx"), set_out(ob, i, "....xxxx");
  st_edge_shift_paired(&a, &b, 9, 0.95, &s, err, sizeof err);
  const double xb = (log2(grid[3]) + log2(grid[4])) / 2;
  CHECK(s.cens == -1 && fabs(s.d - (log2(grid[0]) - xb)) < 1e-12 && isinf(s.lo) && s.lo < 0 && !s.grid_limited,
        "A below the grid: cens %d d %a lo %a", s.cens, s.d, s.lo);
  FMT_IS(st_edge_fmt_shift, &s, "< -4.12");
  /* A never fails: above */
  for (int i = 0; i < 6; i++) set_out(oa, i, "........");
  st_edge_shift_paired(&a, &b, 9, 0.95, &s, err, sizeof err);
  CHECK(s.cens == 1 && fabs(s.d - (log2(grid[7]) - xb)) < 1e-12 && isinf(s.hi) && s.hi > 0,
        "A above the grid: cens %d d %a hi %a", s.cens, s.d, s.hi);
  /* both above: undefined */
  for (int i = 0; i < 6; i++) set_out(ob, i, "........");
  st_edge_shift_paired(&a, &b, 9, 0.95, &s, err, sizeof err);
  CHECK(s.cens == 2 && isnan(s.d) && s.undefined == ST_EDGE_REPS && isinf(s.lo) && isinf(s.hi),
        "both above: cens %d d %a undefined %d [%a, %a]", s.cens, s.d, s.undefined, s.lo, s.hi);
  FMT_IS(st_edge_fmt_shift, &s, "undefined: both edges censored on the same side");
  /* A below, B above */
  for (int i = 0; i < 6; i++) set_out(oa, i, "xxxxxxxx");
  st_edge_shift_paired(&a, &b, 9, 0.95, &s, err, sizeof err);
  CHECK(s.cens == -1 && fabs(s.d - (log2(grid[0]) - log2(grid[7]))) < 1e-12, "A below, B above: cens %d d %a", s.cens,
        s.d);
  /* a cell missing in one arm leaves both */
  for (int i = 0; i < 6; i++) set_out(oa, i, "...xxxxx"), set_out(ob, i, "....xxxx");
  for (int i = 0; i < 6; i++) oa[i * NLR + 3] = ST_RUN_MISSING;
  st_edge_shift_paired(&a, &b, 9, 0.95, &s, err, sizeof err);
  CHECK(s.cens == 0 && s.a.lo_i == 2 && s.b.lo_i == 2 && s.b.hi_i == 4 && s.d == 0,
        "a missing lr in A: A [%d, %d] B [%d, %d] d %a", s.a.lo_i, s.a.hi_i, s.b.lo_i, s.b.hi_i, s.d);
}

static void exact_tests(void) {
  char err[300];
  /* Clopper-Pearson through the per-lr rows: 0 of 10, 5 of 10 (published 0.3085; 0.1871, 0.8129) */
  for (int i = 0; i < 10; i++) {
    set_out(oa, i, i < 5 ? "xxxxx..." : "xxxx....");
    set_out(ob, i, i < 1 ? "x.xx...." : "..xx....");
  }
  st_edge_arm a = arm(oa, NULL, NULL, 10), b = arm(ob, NULL, NULL, 10);
  st_edge_lrcmp rows[NLR];
  const int used = st_edge_compare_lr(&a, &b, 0.95, rows, err, sizeof err);
  CHECK(used == NLR, "compared lrs: %d", used);
  CHECK(rows[5].ka == 0 && rows[5].a_lo == 0 && fabs(rows[5].a_hi - 0.30850) < 5e-5, "CP 0/10: [%.5f, %.5f]",
        rows[5].a_lo, rows[5].a_hi);
  CHECK(rows[4].ka == 5 && fabs(rows[4].a_lo - 0.18709) < 5e-5 && fabs(rows[4].a_hi - 0.81291) < 5e-5,
        "CP 5/10: [%.5f, %.5f]", rows[4].a_lo, rows[4].a_hi);
  CHECK(rows[0].ka == 10 && fabs(rows[0].a_lo - 0.69150) < 5e-5 && rows[0].a_hi == 1, "CP 10/10: [%.5f, %.5f]",
        rows[0].a_lo, rows[0].a_hi);
  /* McNemar on the rows: lr 0: A 10 of 10, B 1 of 10 -> 9 discordant one way: p = 2/512 */
  CHECK(rows[0].a_only == 9 && rows[0].b_only == 0 && fabs(rows[0].p - 2.0 / 512) < 1e-15, "McNemar 9-0: %d-%d p %a",
        rows[0].a_only, rows[0].b_only, rows[0].p);
  CHECK(rows[2].p == 1 && rows[5].p == 1, "McNemar without discordant pairs: %a %a", rows[2].p, rows[5].p);
  /* Holm over the 8 lrs: lr 1 (A 10, B 0: 2/1024) x8 = 16/1024, then lr 0 x7 = 28/1024 */
  CHECK(fabs(rows[1].p_holm - 16.0 / 1024) < 1e-15 && fabs(rows[0].p_holm - 28.0 / 1024) < 1e-15 && rows[7].p_holm == 1,
        "Holm over 8 rows: %a %a %a, want 16/1024 28/1024 1", rows[1].p_holm, rows[0].p_holm, rows[7].p_holm);
  CHECK(fabs(st_edge_mcnemar_exact(0, 6) - 0.03125) < 1e-15, "McNemar 0-6: %a", st_edge_mcnemar_exact(0, 6));
  CHECK(fabs(st_edge_mcnemar_exact(9, 1) - 22.0 / 1024) < 1e-15, "McNemar 9-1: %a", st_edge_mcnemar_exact(9, 1));
  CHECK(st_edge_mcnemar_exact(3, 3) == 1 && st_edge_mcnemar_exact(0, 0) == 1, "McNemar 3-3 / 0-0 not 1");
  CHECK(fabs(st_edge_mcnemar_exact(2, 5) - 0.453125) < 1e-15, "McNemar 2-5: %a", st_edge_mcnemar_exact(2, 5));
  /* Fisher: the tea-tasting table (3 of 4 against 1 of 4): 17/35; 0 of 10 against 5 of 10: 2 C(10,5)/C(20,5) */
  CHECK(fabs(st_edge_fisher_exact(3, 4, 1, 4) - 17.0 / 35) < 1e-12, "Fisher 3/4 1/4: %a", st_edge_fisher_exact(3, 4, 1, 4));
  CHECK(fabs(st_edge_fisher_exact(0, 10, 5, 10) - 504.0 / 15504) < 1e-12, "Fisher 0/10 5/10: %a",
        st_edge_fisher_exact(0, 10, 5, 10));
  CHECK(fabs(st_edge_fisher_exact(1, 10, 6, 12) - 0.0743034056) < 1e-9, "Fisher 1/10 6/12: %.10f, want 0.0743034056 (exact sum in rationals)",
        st_edge_fisher_exact(1, 10, 6, 12));
  CHECK(st_edge_fisher_exact(0, 10, 0, 10) == 1, "Fisher 0/10 0/10 not 1");
  /* Holm by hand: p = .01 .04 .03 .005 -> .03 .06 .06 .02; a NaN is skipped */
  const double p[5] = {0.01, 0.04, NAN, 0.03, 0.005}, want[5] = {0.03, 0.06, NAN, 0.06, 0.02};
  double adj[5];
  st_edge_holm(p, 5, adj);
  for (int i = 0; i < 5; i++)
    CHECK(isnan(want[i]) ? isnan(adj[i]) : fabs(adj[i] - want[i]) < 1e-15, "Holm %d: %a, want %a", i, adj[i], want[i]);
  /* the minimum detectable effect: n 10, p0 0, alpha 0.05: Fisher rejects 0/10
   * against >= 5/10 only, so the power is P(B(10, p1) >= 5): solved here */
  double lo = 0, hi = 1;
  for (int i = 0; i < 100; i++) {
    const double m = (lo + hi) / 2;
    if (binom_tail(10, 5, m) >= 0.8) hi = m; else lo = m;
  }
  const double mde10 = st_edge_mde(10, 0, 0.05, 0.8);
  CHECK(fabs(mde10 - hi) < 1e-9, "MDE n 10 p0 0: %.9f, want %.9f", mde10, hi);
  const double mde20 = st_edge_mde(20, 0.1, 0.05, 0.8), mde40 = st_edge_mde(40, 0.1, 0.05, 0.8);
  CHECK(mde20 > mde40 && mde40 > 0 && mde20 < 0.9, "MDE falls with n: %a (20) %a (40)", mde20, mde40);
  CHECK(isinf(st_edge_mde(2, 0, 0.05, 0.8)), "MDE with 2 runs per arm is finite: %a", st_edge_mde(2, 0, 0.05, 0.8));
  printf("MDE at alpha 0.05, power 0.8: n 10, p0 0: %.3f; n 20, p0 0.1: %.3f; n 40: %.3f\n", mde10, mde20, mde40);
}

static void refine(void) {
  double out[4];
  for (int i = 0; i < 3; i++) set_out(oa, i, "...xxxxx");
  st_edge_arm a = arm(oa, NULL, NULL, 3);
  CHECK(st_edge_refine(&a, 1, out) == 1 && fabs(out[0] - sqrt(grid[2] * grid[3])) < 1e-13 * grid[3],
        "refine 1: %a, want the geometric midpoint %a", out[0], sqrt(grid[2] * grid[3]));
  CHECK(st_edge_refine(&a, 3, out) == 3 && fabs(log2(out[1]) - (log2(grid[2]) + log2(grid[3])) / 2) < 1e-12 &&
            out[0] > grid[2] && out[0] < out[1] && out[2] < grid[3] &&
            fabs((log2(out[0]) - log2(grid[2])) - (log2(grid[3]) - log2(out[2]))) < 1e-12,
        "refine 3: %a %a %a", out[0], out[1], out[2]);
  for (int i = 0; i < 3; i++) set_out(oa, i, "xxxxxxxx");
  CHECK(st_edge_refine(&a, 2, out) == 2 && fabs(out[1] / (grid[0] * grid[0] / grid[1]) - 1) < 1e-13 &&
            fabs(out[0] / (out[1] * grid[0] / grid[1]) - 1) < 1e-13,
        "refine below: %a %a", out[0], out[1]);
  for (int i = 0; i < 3; i++) set_out(oa, i, "........");
  CHECK(st_edge_refine(&a, 1, out) == 1 && fabs(out[0] / (grid[7] * grid[7] / grid[6]) - 1) < 1e-13, "refine above: %a",
        out[0]);
  /* above a window that ends early (the reference under-trained from lr 5): not past the grid's top
   * (lr 5-7 exist and cannot be judged) but into the gap between the window's top and lr 5 */
  for (int i = 0; i < 3; i++) set_out(oa, i, ".....jjj");
  CHECK(st_edge_refine(&a, 1, out) == 1 && fabs(out[0] - sqrt(grid[4] * grid[5])) < 1e-13 * grid[5],
        "refine above a window ending at lr 4: %a, want the geometric midpoint of lr 4 and 5 %a", out[0],
        sqrt(grid[4] * grid[5]));
  /* runs not made yet above lr 4 end no window: the grid is extended by its step as usual (the
   * caller drops a learning rate the grid already has) */
  for (int i = 0; i < 3; i++) set_out(oa, i, ".....---");
  CHECK(st_edge_refine(&a, 1, out) == 1 && fabs(out[0] / (grid[4] * grid[7] / grid[6]) - 1) < 1e-13,
        "refine above runs not made yet: %a, want lr 4 times the grid's step %a", out[0], grid[4] * grid[7] / grid[6]);
}

static void losses(void) {
  /* 2 seeds; A: seed 0 diverges (NaN) at lr 2 and is at its cap 4 at lr 3 */
  const double g[4] = {0.01, 0.02, 0.04, 0.08};
  signed char o1[8], o2[8];
  double l1[8] = {3.0, 2.0, NAN, 5.0, 2.5, 2.2, 2.1, 2.4}, l2[8] = {2.8, 2.0, 2.6, 3.0, 2.6, 2.3, 2.2, 2.3};
  const double i1[2] = {4.0, 4.0}, i2[2] = {4.0, 4.0};
  for (int i = 0; i < 8; i++) o1[i] = st_edge_classify(l1[i], i1[i / 4], 0), o2[i] = st_edge_classify(l2[i], i2[i / 4], 0);
  CHECK(o1[2] == ST_RUN_DIVERGED && o1[3] == ST_RUN_DIVERGED && o1[0] == ST_RUN_TRAINED, "classify: %d %d %d", o1[0],
        o1[2], o1[3]);
  st_edge_arm a = {4, 2, g, o1, l1, i1, 0}, b = {4, 2, g, o2, l2, i2, 0};
  st_edge_sens s;
  st_edge_sensitivity(&a, &b, 3, 0.95, &s);
  /* A seed 0: (3 + 2 + 4 + 4)/4 - 2 = 1.25; seed 1: (2.5+2.2+2.1+2.4)/4 - 2.1 = 0.2
   * B seed 0: (2.8+2+2.6+3)/4 - 2 = 0.6; seed 1: (2.6+2.3+2.2+2.3)/4 - 2.2 = 0.15 */
  CHECK(s.n == 2 && fabs(s.a - 0.725) < 1e-12 && fabs(s.b - 0.375) < 1e-12 && fabs(s.d - 0.35) < 1e-12,
        "sensitivity: n %d A %a B %a d %a, want 0.725 0.375 0.35", s.n, s.a, s.b, s.d);
  /* the paired differences 0.65 and 0.05: Student's t over 2 seeds (1 df, t = 12.7062), 0.35 -+ 12.7062 * 0.3 */
  CHECK(s.sign == 0 && fabs(s.lo - (0.35 - 12.7062047 * 0.3)) < 1e-5 && fabs(s.hi - (0.35 + 12.7062047 * 0.3)) < 1e-5,
        "sensitivity CI [%a, %a] sign %d, want 0.35 -+ 3.812 and 0", s.lo, s.hi, s.sign);
  st_edge_sensitivity(&b, &a, 3, 0.95, &s);
  CHECK(s.sign == 0 && fabs(s.d + 0.35) < 1e-12 && fabs(s.hi - (-0.35 + 12.7062047 * 0.3)) < 1e-5,
        "sensitivity B - A: sign %d d %a", s.sign, s.d);
  l2[7] = 3.8; /* B seed 1 now more sensitive (0.525): gaps +0.65, -0.325, a CI holding 0 */
  st_edge_sensitivity(&a, &b, 3, 0.95, &s);
  CHECK(s.sign == 0 && s.lo < 0 && s.hi > 0, "sensitivity CI [%a, %a] holding 0: sign %d, want 0", s.lo, s.hi, s.sign);
  l2[7] = 2.3;
  st_edge_sensitivity(&a, NULL, 3, 0.95, &s);
  CHECK(s.n == 2 && fabs(s.a - 0.725) < 1e-12 && isnan(s.d), "sensitivity of one arm: %a %a", s.a, s.d);
  /* a missing run leaves its seed out */
  o2[5] = ST_RUN_MISSING;
  st_edge_sensitivity(&a, &b, 3, 0.95, &s);
  CHECK(s.n == 1 && fabs(s.a - 1.25) < 1e-12 && isnan(s.lo), "sensitivity with a missing run: n %d A %a", s.n, s.a);
  o2[5] = ST_RUN_TRAINED;
  /* an unjudged run keeps its loss in the losses' statistics (only failure counts skip it) */
  o2[5] = ST_RUN_UNJUDGED;
  st_edge_sensitivity(&a, &b, 3, 0.95, &s);
  CHECK(s.n == 2 && fabs(s.b - 0.375) < 1e-12, "sensitivity with an unjudged run: n %d B %a, want 2 and 0.375", s.n, s.b);
  o2[5] = ST_RUN_TRAINED;
  /* the loss offset: own best A - B per seed: 2 - 2 = 0; 2.1 - 2.2 = -0.1 */
  st_edge_offset o;
  st_edge_loss_offset(&a, &b, 0.05, 3, 0.95, &o);
  CHECK(o.n == 2 && fabs(o.d + 0.05) < 1e-12, "loss offset: n %d d %a, want -0.05", o.n, o.d);
  /* own LR_max (within 0.05 of own best): A seed 0 lr 1, B seed 0 lr 1: 0; A seed 1 lr 2, B seed 1 lr 2: 0 */
  CHECK(o.nlr_max == 2 && o.lr_d == 0, "own LR_max shift: n %d d %a", o.nlr_max, o.lr_d);
  st_edge_loss_offset(&a, &b, 0.25, 3, 0.95, &o); /* seed 0: lr 1 and lr 1; seed 1: A lr 2 (2.4 > 2.35), B lr 3 (2.3 <= 2.45) */
  CHECK(o.nlr_max == 2 && fabs(o.lr_d + 0.5) < 1e-12, "own LR_max shift, delta 0.25: n %d d %a, want -0.5", o.nlr_max,
        o.lr_d);
  /* an arm that never trained at a seed ranks worst (its cap), kept */
  for (int k = 0; k < 4; k++) l1[k] = NAN, o1[k] = ST_RUN_DIVERGED;
  st_edge_loss_offset(&a, &b, 0.05, 3, 0.95, &o);
  CHECK(o.n == 2 && fabs(o.d - (2.0 - 0.1) / 2) < 1e-12 && o.nlr_max == 1, "never trained: n %d d %a (want 0.95) nlr %d",
        o.n, o.d, o.nlr_max);
}

int main(void) {
  rs = tu_seed(20261129);
  for (int k = 0; k < NLR; k++) grid[k] = 0.0026 * pow(2.26, k); /* 0.0026 .. 0.78: log2 -8.6 .. -0.4 */
  (void)la, (void)lb, (void)ia, (void)ib;
  classify();
  hand_grids();
  symmetric();
  shifts();
  exact_tests();
  refine();
  losses();
  known_logistic();
  return tu_finish("test_study_edge");
}
