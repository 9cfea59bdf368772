/* test_study_verdict.c: the one verdict engine (experiments/study_claims.c)
 * on synthetic runs tables: a study file's claims over hand-made runs, every
 * verdict word and its edges: one seed, four seeds (below ST_MIN_SEEDS),
 * every run of an arm failed (ranked worst, never dropped), an errored run
 * (dropped), ties, NaN, a null with too little power (not testable here), a
 * failed positive control, arms equal in every pair (not testable), rates never pooled over learning rates (exact
 * McNemar per lr, Holm), divergence judged on the final loss (a transient
 * spike is not one), under-training flagged apart.  Noise from
 * EXMY_TEST_SEED's generator; the verdicts do not depend on it. */
#include "experiments/study_int.h"
#include "tests/testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rs;
static double noise(double sd) { return sd * (2.0 * (double)(tu_next(&rs) >> 11) / 9007199254740992.0 - 1.0); }

static study_file sf;
static study st;
static srun runs[256];

/* A study of the claims in TEXT (the arms A and B are implied by the runs). */
static void setup(const char *text) {
  char path[] = "/tmp/exmy-verdict-XXXXXX";
  const int fd = mkstemp(path);
  FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!f) { fprintf(stderr, "cannot write %s\n", path); exit(99); }
  fprintf(f, "description = synthetic\n%s", text);
  fclose(f);
  char err[EXMY_ERRLEN];
  st_file_free(&sf);
  if (st_file_read(&sf, path, err, sizeof err)) { fprintf(stderr, "%s\n", err); exit(99); }
  unlink(path);
  free(st.claim);
  memset(&st, 0, sizeof st);
  memset(runs, 0, sizeof runs);
  st.file = &sf;
  st.size = STUDY_DEFAULT;
  st.run = runs;
  st.log = stderr;
}

/* A run of ARM at learning-rate index LRI and seed S that trained to VAL. */
static srun *add(const char *arm, int lri, int s, double val) {
  srun *r = &runs[st.nrun++];
  snprintf(r->arm, sizeof r->arm, "%s", arm);
  snprintf(r->name, sizeof r->name, "%s", arm);
  r->lri = lri, r->seedi = s, r->lr = 0.001 * (1 << lri);
  r->parent = -1; /* not a continuation */
  r->res.first_loss = 4.17;
  r->res.val_loss = val;
  r->res.final_loss = r->res.final_loss_avg = r->res.min_loss = val;
  r->res.diverged_at = -1;
  r->res.steps_done = 100;
  return r;
}

/* A run that diverged: the loss went non-finite (the engine stopped). */
static srun *add_div(const char *arm, int lri, int s) {
  srun *r = add(arm, lri, s, NAN);
  r->res.final_loss = r->res.final_loss_avg = NAN;
  r->res.diverged_at = 40;
  return r;
}

/* The study's table and plot blocks as the report writes them (the console's copy
 * discarded); the caller frees the text. */
static char *blocks_md(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *md = open_memstream(&buf, &len), *log = st.log;
  st.log = fopen("/dev/null", "w");
  if (md && st.log) st_blocks_report(&st, md);
  if (md) fclose(md);
  if (st.log) fclose(st.log);
  st.log = log;
  return buf;
}

static int verdict_of(const char *claim) {
  st_rules_eval(&st);
  st_claims_eval(&st);
  for (int i = 0; i < st.nclaim; i++)
    if (!strcmp(st.claim[i].name, claim)) return st.claim[i].verdict;
  return 99;
}

#define EXPECT(cname, want)                                                                                                   \
  do {                                                                                                                   \
    const int v_ = verdict_of(cname);                                                                                    \
    const st_claim_row *c_ = st.nclaim ? &st.claim[0] : NULL;                                                          \
    CHECK(v_ == (want), "%s: verdict '%s', want '%s' (seeds %d, mean %a, ci [%a, %a], mde %a: %s)", what,              \
          st_verdict_name(v_), st_verdict_name(want), c_ ? c_->nseeds : -1, c_ ? c_->c.mean : NAN,                      \
          c_ ? c_->c.lo : NAN, c_ ? c_->c.hi : NAN, c_ ? c_->mde : NAN, c_ ? c_->why : "");                              \
  } while (0)

/* An lr_edge claim "a lower than b" over 4 learning rates an octave apart:
 * every seed of a diverges from grid index fa up, of b from fb up (4: never). */
static void edge_grid_rule(int nseeds, int fa, int fb, const char *rule) {
  char text[200];
  snprintf(text, sizeof text, "claim.c.arms = a, b\nclaim.c.metric = lr_edge\nclaim.c.rule = %s\n", rule);
  setup(text);
  st.nlr = 4;
  for (int k = 0; k < 4; k++) st.lr[k] = 0.001 * (1 << k);
  st.nseeds = nseeds;
  for (int s = 0; s < nseeds; s++)
    for (int k = 0; k < 4; k++) {
      if (k >= fa) add_div("a", k, s); else add("a", k, s, 2);
      if (k >= fb) add_div("b", k, s); else add("b", k, s, 2);
    }
}

static void edge_grid(int nseeds, int fa, int fb) { edge_grid_rule(nseeds, fa, fb, "lower"); }

static const char *HIGHER = "claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = higher\n";

int main(void) {
  rs = tu_seed(20261129);
  const char *what;
  char buf[1024];

  /* paired values, rule higher: the seeds' count */
  what = "one seed, a large gap";
  setup(HIGHER);
  add("a", 0, 0, 2.5), add("b", 0, 0, 2.0);
  EXPECT("c", ST_V_INCONCLUSIVE);
  what = "four seeds, a clear gap (below the minimum of 5)";
  setup(HIGHER);
  for (int s = 0; s < 4; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1 + noise(0.01)), add("b", 0, s, b); }
  EXPECT("c", ST_V_INCONCLUSIVE);
  what = "five seeds, a clear gap";
  setup(HIGHER);
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1 + noise(0.01)), add("b", 0, s, b); }
  EXPECT("c", ST_V_REPRODUCED);
  what = "five seeds, a clear gap the other way";
  setup(HIGHER);
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b - 0.1 + noise(0.01)), add("b", 0, s, b); }
  EXPECT("c", ST_V_NOT_REPRODUCED);

  /* ties: identical arms, none failed: what tells them apart never acted here */
  what = "ties, no effect stated";
  setup(HIGHER);
  for (int s = 0; s < 5; s++) add("a", 0, s, 2 + 0.1 * s), add("b", 0, s, 2 + 0.1 * s);
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "ties, a published effect of 0.01";
  snprintf(buf, sizeof buf, "%sclaim.c.effect = 0.01\n", HIGHER);
  setup(buf);
  for (int s = 0; s < 5; s++) add("a", 0, s, 2 + 0.1 * s), add("b", 0, s, 2 + 0.1 * s);
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "ties, tracks within 0.02";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = tracks\nclaim.c.margin = 0.02\n");
  for (int s = 0; s < 5; s++) add("a", 0, s, 2 + 0.1 * s), add("b", 0, s, 2 + 0.1 * s);
  EXPECT("c", ST_V_REPRODUCED);
  what = "tracks: a gap of 0.1 against a margin of 0.02";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = tracks\nclaim.c.margin = 0.02\n");
  for (int s = 0; s < 5; s++) add("a", 0, s, 2.1 + 0.1 * s + noise(0.002)), add("b", 0, s, 2 + 0.1 * s);
  EXPECT("c", ST_V_NOT_REPRODUCED);
  what = "tracks: seed noise wider than the margin";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = tracks\nclaim.c.margin = 0.02\n");
  {
    const double g[5] = {0.2, -0.2, 0.15, -0.1, 0.0};
    for (int s = 0; s < 5; s++) add("a", 0, s, 2 + g[s]), add("b", 0, s, 2);
  }
  EXPECT("c", ST_V_NOT_TESTABLE);

  /* power: a null whose minimum detectable effect exceeds the published one */
  what = "a noisy null against a small published effect";
  snprintf(buf, sizeof buf, "%sclaim.c.effect = 0.05\n", HIGHER);
  setup(buf);
  {
    const double g[5] = {0.2, -0.2, 0.1, -0.15, 0.05}; /* sd ~0.16: MDE ~0.2 > 0.05 */
    for (int s = 0; s < 5; s++) add("a", 0, s, 2 + g[s]), add("b", 0, s, 2);
  }
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "the same null against a large published effect (excluded)";
  snprintf(buf, sizeof buf, "%sclaim.c.effect = 0.5\n", HIGHER);
  setup(buf);
  {
    const double g[5] = {0.2, -0.2, 0.1, -0.15, 0.05};
    for (int s = 0; s < 5; s++) add("a", 0, s, 2 + g[s]), add("b", 0, s, 2);
  }
  EXPECT("c", ST_V_NOT_REPRODUCED);

  /* failed runs are ranked worst, never dropped */
  what = "every run of A diverged";
  setup(HIGHER);
  for (int s = 0; s < 5; s++) add_div("a", 0, s), add("b", 0, s, 2 + noise(0.05));
  EXPECT("c", ST_V_REPRODUCED);
  CHECK(st.claim[0].c.n == 5 && st.claim[0].nfailed == 5 && st.claim[0].c.mean > 2,
        "%s: n %d failed %d mean %a (failed runs must count at the worst value)", what, st.claim[0].c.n,
        st.claim[0].nfailed, st.claim[0].c.mean);
  what = "every run of both arms diverged: ties at the first-step loss";
  snprintf(buf, sizeof buf, "%sclaim.c.effect = 0.01\n", HIGHER);
  setup(buf);
  for (int s = 0; s < 5; s++) add_div("a", 0, s), add_div("b", 0, s);
  EXPECT("c", ST_V_NOT_REPRODUCED);
  what = "an errored run (no value) drops its pair: four seeds left";
  setup(HIGHER);
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1), add("b", 0, s, b); }
  runs[1].failed = 1;
  EXPECT("c", ST_V_INCONCLUSIVE);
  CHECK(st.claim[0].nseeds == 4 && st.claim[0].nfailed == 0, "%s: %d seeds, %d counted failed (want 4, 0)", what,
        st.claim[0].nseeds, st.claim[0].nfailed);
  what = "a NaN validation loss of a trained run drops its pair";
  setup(HIGHER);
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1), add("b", 0, s, b); }
  runs[0].res.val_loss = NAN;
  EXPECT("c", ST_V_INCONCLUSIVE);

  /* divergence is judged on the final loss: a transient spike is not one */
  what = "a transient excursion above the first loss";
  setup("claim.c.arms = a, b\nclaim.c.metric = diverged\nclaim.c.rule = higher\n");
  for (int s = 0; s < 6; s++) add("a", 0, s, 2)->res.diverged_at = 30, add("b", 0, s, 2);
  EXPECT("c", ST_V_INCONCLUSIVE);
  CHECK(!st_run_diverged(&runs[0]), "%s: counted as diverged", what);
  {
    char w[48]; /* the progress line's and the runs table's word follow the rule */
    st_fmt_diverged(&runs[0], w, sizeof w);
    CHECK(!strcmp(w, "no (excursion at step 30)"), "%s: shown as '%s'", what, w);
    st_fmt_diverged(&runs[1], w, sizeof w);
    CHECK(!strcmp(w, "no"), "a run that never rose: shown as '%s'", w);
    runs[0].res.final_loss_avg = 4.5;
    st_fmt_diverged(&runs[0], w, sizeof w);
    CHECK(!strcmp(w, "yes (from step 30)"), "a final loss above the first: shown as '%s'", w);
    runs[0].res.final_loss_avg = 2;
  }
  what = "a final loss above the first step's";
  setup("claim.c.arms = a, b\nclaim.c.metric = diverged\nclaim.c.rule = higher\n");
  for (int s = 0; s < 6; s++) add("a", 0, s, 5)->res.final_loss_avg = 4.5, add("b", 0, s, 2);
  EXPECT("c", ST_V_REPRODUCED);

  /* rates: per learning rate, never pooled; Holm over the learning rates */
  what = "5 of 5 failures at one of two learning rates (1/32 > 0.05 / 2)";
  setup("claim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\n");
  for (int s = 0; s < 5; s++) add_div("a", 0, s), add("b", 0, s, 2), add("a", 1, s, 2), add("b", 1, s, 2);
  EXPECT("c", ST_V_NOT_TESTABLE); /* 5 seeds over 2 learning rates: Holm needs 6 */
  what = "6 of 6 failures at one of two learning rates (1/64 <= 0.05 / 2)";
  setup("claim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\n");
  for (int s = 0; s < 6; s++) add_div("a", 0, s), add("b", 0, s, 2), add("a", 1, s, 2), add("b", 1, s, 2);
  EXPECT("c", ST_V_REPRODUCED);
  what = "failures spread over learning rates (pooled they would be 5 of 10)";
  setup("claim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\n");
  for (int s = 0; s < 10; s++) {
    const int l = s % 2;
    (s < 5 ? add_div("a", l, s / 2 + 5 * l) : add("a", l, s / 2 + 5 * l, 2)), add("b", l, s / 2 + 5 * l, 2);
  }
  EXPECT("c", ST_V_NOT_TESTABLE); /* 5 seeds over 2 learning rates: Holm needs 6 */
  what = "the other arm fails";
  setup("claim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\n");
  for (int s = 0; s < 6; s++) add("a", 0, s, 2), add_div("b", 0, s);
  EXPECT("c", ST_V_NOT_REPRODUCED);
  what = "no failures, 5 seeds, a published effect of 0.5";
  setup("claim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\nclaim.c.effect = 0.5\n");
  for (int s = 0; s < 5; s++) add("a", 0, s, 2), add("b", 0, s, 2);
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "no failures, 40 seeds, a published effect of 0.5";
  setup("claim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\nclaim.c.effect = 0.5\n");
  for (int s = 0; s < 40; s++) add("a", 0, s, 2), add("b", 0, s, 2);
  EXPECT("c", ST_V_NOT_REPRODUCED);

  what = "no failures, 5 seeds over 2 learning rates, no stated effect: no power at all";
  setup("claim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\n");
  for (int s = 0; s < 5; s++)
    for (int l = 0; l < 2; l++) add("a", l, s, 2), add("b", l, s, 2);
  EXPECT("c", ST_V_NOT_TESTABLE);

  /* two arms equal in every pair: what tells them apart never acted (a fallback that never fired) */
  what = "identical arms in all 5 pairs";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = lower\n");
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b), add("b", 0, s, b); }
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "a constant nonzero gap in all 5 pairs";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = lower\n");
  for (int s = 0; s < 5; s++) add("a", 0, s, 1.5), add("b", 0, s, 2);
  EXPECT("c", ST_V_REPRODUCED);

  /* minus = C, D: a difference in differences.  A's cost over B is larger than C's over D (+0.15), though A
   * ends below C: A - C alone (outliers' old swigluxs) would say the opposite */
  what = "a difference in differences";
  setup("claim.c.arms = a, b\nclaim.c.minus = c, d\nclaim.c.metric = val_loss\nclaim.c.rule = higher\n");
  for (int s = 0; s < 5; s++) {
    const double base = 2 + noise(0.05);
    add("a", 0, s, base + 0.2 + noise(0.01)), add("b", 0, s, base), add("c", 0, s, base + 0.55 + noise(0.01)),
        add("d", 0, s, base + 0.5);
  }
  EXPECT("c", ST_V_REPRODUCED);
  CHECK(fabs(st.claim[0].c.mean - 0.15) < 0.03, "%s: mean %a, want about 0.15", what, st.claim[0].c.mean);
  what = "a difference in differences: a run of C missing drops its pair";
  setup("claim.c.arms = a, b\nclaim.c.minus = c, d\nclaim.c.metric = val_loss\nclaim.c.rule = higher\n");
  for (int s = 0; s < 5; s++)
    add("a", 0, s, 2.2), add("b", 0, s, 2), add("c", 0, s, 2.55), add("d", 0, s, 2.5)->missing = s == 0;
  EXPECT("c", ST_V_INCONCLUSIVE);
  CHECK(st.claim[0].c.n == 4, "%s: %d pairs, want 4", what, st.claim[0].c.n);

  /* a positive control that fails makes the claim not testable */
  what = "a claim whose positive control was not reproduced";
  setup("claim.ctl.arms = a, b\nclaim.ctl.metric = val_loss\nclaim.ctl.rule = lower\n"
        "claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = higher\nclaim.c.control = ctl\n");
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1 + noise(0.01)), add("b", 0, s, b); }
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "the same claim with its control reproduced";
  setup("claim.ctl.arms = a, b\nclaim.ctl.metric = val_loss\nclaim.ctl.rule = higher\n"
        "claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = higher\nclaim.c.control = ctl\n");
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1 + noise(0.01)), add("b", 0, s, b); }
  EXPECT("c", ST_V_REPRODUCED);

  /* one learning rate picked by claim.lr */
  what = "claim.lr keeps one learning rate's pairs";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = higher\nclaim.c.lr = 0.002\n");
  for (int s = 0; s < 5; s++) add("a", 0, s, 2 - 0.5), add("b", 0, s, 2), add("a", 1, s, 2.2 + noise(0.01)), add("b", 1, s, 2);
  EXPECT("c", ST_V_REPRODUCED);

  /* the stability edge (lr_edge): a paired shift over the learning-rate grid */
  what = "an edge two grid steps lower";
  edge_grid(5, 1, 3);
  EXPECT("c", ST_V_REPRODUCED);
  what = "an edge one grid step lower: inside the grid's resolution";
  edge_grid(5, 2, 3);
  EXPECT("c", ST_V_INCONCLUSIVE);
  what = "no arm fails anywhere on the grid";
  edge_grid(5, 4, 4);
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "the edge claim with four seeds";
  edge_grid(4, 1, 3);
  EXPECT("c", ST_V_INCONCLUSIVE);

  /* LR sensitivity (lr_sens): its smallest detectable gap comes from the paired sensitivities' noise */
  what = "a noisy null in LR sensitivity against a small stated effect";
  setup("claim.c.arms = a, b\nclaim.c.metric = lr_sens\nclaim.c.rule = higher\nclaim.c.effect = 0.01\n");
  st.nlr = 4;
  for (int k = 0; k < 4; k++) st.lr[k] = 0.001 * (1 << k);
  st.nseeds = 5;
  {
    const double g[5] = {0.4, -0.4, 0.2, -0.3, 0.1}; /* a bump at one lr: sensitivity |g| / 4 in a (g > 0) or b */
    for (int sd = 0; sd < 5; sd++)
      for (int k = 0; k < 4; k++)
        add("a", k, sd, 2 + (k == 1 && g[sd] > 0 ? g[sd] : 0)), add("b", k, sd, 2 + (k == 1 && g[sd] < 0 ? -g[sd] : 0));
  }
  EXPECT("c", ST_V_NOT_TESTABLE);
  CHECK(st.claim[0].mde > 0.05 && st.claim[0].mde < 0.2, "%s: smallest detectable gap %a (want about 0.1)", what,
        st.claim[0].mde);

  /* lrsweep's analysis counts a run that did not converge at its first loss in the LR sensitivity, as lr_sens
   * does: a's losses 2, 2, 3 (0.5+ above b: failed), 2 give (2 + 2 + 4.17 + 2) / 4 - 2 = 0.54, not 0.25 */
  what = "lrsweep's LR sensitivity column counts a failed run as lr_sens does";
  setup("reference = b\n");
  st.nlr = 4;
  for (int k = 0; k < 4; k++) st.lr[k] = 0.001 * (1 << k);
  st.nseeds = 1;
  for (int k = 0; k < 4; k++) add("a", k, 0, k == 2 ? 3.0 : 2.0), add("b", k, 0, 2.0);
  st_rules_eval(&st);
  {
    static const study_def def = {"lrsweep", "synthetic", "", NULL};
    char dir[] = "/tmp/exmy-verdict-lrsweep-XXXXXX"; /* the analysis writes its plots' data and scripts there */
    st.def = &def;
    snprintf(st.dir, sizeof st.dir, "%s", mkdtemp(dir) ? dir : "/tmp");
    FILE *md = tmpfile();
    FILE *log = st.log;
    st.log = fopen("/dev/null", "w");
    if (md && st.log) st_report_lrsweep(&st, md);
    char line[512] = "", row[512] = "";
    if (md) rewind(md);
    while (md && fgets(line, sizeof line, md))
      if (!strncmp(line, "| a |", 5)) snprintf(row, sizeof row, "%s", line);
    CHECK(runs[4].nonconv && strstr(row, "| +0.54 |"), "%s: nonconv %d, row '%s'", what, runs[4].nonconv, row);
    if (md) fclose(md);
    if (st.log) fclose(st.log);
    st.log = log;
    static const char *const left[] = {"loss-vs-lr.dat", "loss-vs-lr.gp", "failed-vs-lr.dat", "failed-vs-lr.gp"};
    for (int i = 0; i < 4; i++) {
      char p[sizeof dir + 32];
      snprintf(p, sizeof p, "%s/%s", dir, left[i]);
      unlink(p);
    }
    rmdir(dir);
  }

  /* an edge that tracks within a margin (octaves): the 90% interval, widened to the grid */
  what = "equal edges track within 1.5 octaves";
  edge_grid_rule(5, 2, 2, "tracks\nclaim.c.margin = 1.5");
  EXPECT("c", ST_V_REPRODUCED);
  what = "an edge two grid steps lower does not show tracking within 1.5 octaves";
  edge_grid_rule(5, 1, 3, "tracks\nclaim.c.margin = 1.5");
  EXPECT("c", ST_V_INCONCLUSIVE);
  what = "a censored edge cannot show tracking";
  edge_grid_rule(5, 4, 3, "tracks\nclaim.c.margin = 1.5");
  EXPECT("c", ST_V_INCONCLUSIVE);

  /* at = KEY=VALUE: a claim at one axis point (a size ladder's width) */
  for (int pass = 0; pass < 3; pass++) {
    static const char *const at[] = {"", "claim.c.at = w=1\n", "claim.c.at = w=2\n"};
    /* pooled: each seed's gap is its mean over the two points (+0.5 and -0.5: about 0), so the pooled claim is
     * about that average and excludes +0.1; the points apart show the two effects */
    static const int want[] = {ST_V_NOT_REPRODUCED, ST_V_REPRODUCED, ST_V_NOT_REPRODUCED};
    char text[300];
    snprintf(text, sizeof text, "%sclaim.c.effect = 0.1\n%s", HIGHER, at[pass]);
    setup(text);
    for (int s = 0; s < 5; s++)
      for (int w = 1; w <= 2; w++) {
        srun *ra = add("a", 0, s, 2.0 + (w == 1 ? 0.5 : -0.5) + noise(0.01)), *rb = add("b", 0, s, 2.0 + noise(0.01));
        snprintf(ra->point, sizeof ra->point, " w=%d", w);
        snprintf(rb->point, sizeof rb->point, " w=%d", w);
      }
    what = pass == 0 ? "both points pooled (+0.5 and -0.5)" : pass == 1 ? "at w=1 (+0.5)" : "at w=2 (-0.5)";
    EXPECT("c", want[pass]);
    if (pass) CHECK(st.claim[0].c.n == 5, "%s: %d pairs, want the point's 5", what, st.claim[0].c.n);
  }

  /* under-training: a flag apart from failure */
  what = "under-trained";
  setup("reference = b\nclaim.c.arms = a, b\nclaim.c.metric = failed\nclaim.c.rule = higher\n");
  for (int s = 0; s < 5; s++) add("a", 0, s, 3.0), add("b", 0, s, 2.9), add("a", 1, s, 2.0), add("b", 1, s, 2.0);
  EXPECT("c", ST_V_NOT_TESTABLE); /* 5 seeds over 2 learning rates: Holm needs 6 */
  CHECK(runs[0].undertrained && !runs[0].nonconv && !runs[2].undertrained, "%s: flags %d %d %d", what,
        runs[0].undertrained, runs[0].nonconv, runs[2].undertrained);

  /* an arm's own reference (arm.X.reference): a's runs are judged against c's, d's against the file's b */
  what = "an arm judged against its own reference";
  setup("reference = b\n");
  for (int s = 0; s < 5; s++) {
    snprintf(add("a", 0, s, 2.8)->ref, sizeof runs[0].ref, "c");
    add("b", 0, s, 2.0), add("c", 0, s, 2.4), add("d", 0, s, 2.8);
  }
  st_rules_eval(&st);
  CHECK(!runs[0].nonconv && !runs[0].undertrained && runs[3].nonconv && !runs[2].nonconv,
        "%s: a nonconv %d undertrained %d (against c: want 0 0), d nonconv %d (against b: want 1), c %d", what,
        runs[0].nonconv, runs[0].undertrained, runs[3].nonconv, runs[2].nonconv);

  /* an arm of another width than its reference: the Rules section says so, and names the key; with its own
   * reference of the same width it says nothing */
  for (int pass = 0; pass < 2; pass++) {
    static xp_config narrow, wide;
    xp_config_default(&narrow);
    xp_config_default(&wide);
    wide.model.d_model = 2 * narrow.model.d_model;
    wide.model.no_bias = 1, wide.vocab_words = 50; /* printed as the file writes them: bias 0, vocab word:50 */
    what = pass ? "an arm with its own reference of its width" : "an arm judged against a narrower reference";
    setup("reference = b\n");
    for (int s = 0; s < 5; s++) {
      add("b", 0, s, 2.0)->cfg = &narrow;
      add("w", 0, s, 2.0)->cfg = &wide;
      srun *x = add("x", 0, s, 2.0); /* the wide arm's own fp32 */
      x->cfg = &wide;
      if (pass) /* w and x (the wide model's reference itself) judged against x */
        snprintf(runs[st.nrun - 2].ref, sizeof runs[0].ref, "x"), snprintf(x->ref, sizeof x->ref, "x");
    }
    st_rules_eval(&st);
    char *buf = NULL;
    size_t len = 0;
    FILE *md = open_memstream(&buf, &len), *log = st.log;
    st.log = NULL;
    if (md) st_report_rules(&st, md), fclose(md);
    st.log = log;
    char want[160];
    snprintf(want, sizeof want, "`w` against `b` (d_model %d vs %d, bias 0 vs 1, vocab word:50 vs char)",
             wide.model.d_model, narrow.model.d_model);
    const int noted = buf && strstr(buf, want) != NULL, xnoted = buf && strstr(buf, "`x` against") != NULL;
    CHECK(pass ? !noted && strstr(buf, "Note on the rules") == NULL : noted && xnoted, "%s: note %d (x %d) in '%.300s'",
          what, noted, xnoted, buf && strstr(buf, "Non-convergence") ? strstr(buf, "Non-convergence") : "");
    free(buf);
  }

  /* where the reference itself is under-trained, a run within nonconv_nats of it is not "trained":
   * the edge statistics leave those cells unjudged (a's runs end near b's poor losses at the top two
   * learning rates, and fail at the third: the window where b trains ends at the second) */
  what = "an edge beyond the reference's trained learning rates";
  setup("reference = b\nclaim.c.arms = a, b\nclaim.c.metric = lr_edge\nclaim.c.rule = lower\n");
  st.nlr = 4;
  for (int k = 0; k < 4; k++) st.lr[k] = 0.001 * (1 << k);
  st.nseeds = 5;
  for (int s = 0; s < 5; s++) {
    const double la[4] = {2.0, 2.0, 3.9, 3.4}, lb[4] = {2.0, 2.0, 3.3, 3.3};
    for (int k = 0; k < 4; k++) add("a", k, s, la[k]), add("b", k, s, lb[k]);
  }
  EXPECT("c", ST_V_NOT_TESTABLE);
  CHECK(strstr(st.claim[0].why, "above 0.002"), "%s: '%s', want the window's top, above 0.002", what, st.claim[0].why);
  CHECK(!runs[2].refweak && runs[4].refweak && runs[5].refweak && runs[6].refweak && runs[4].nonconv,
        "%s: flags refweak %d %d %d %d nonconv %d", what, runs[2].refweak, runs[4].refweak, runs[5].refweak,
        runs[6].refweak, runs[4].nonconv);

  /* the edge figure draws a censored edge as the bound it is (an open triangle), with a key entry per arm
   * (gnuplot drops the key of a series without points), and never as a point */
  what = "an edge figure with censored edges";
  setup("reference = b\nplot.e.kind = edge\nplot.e.x = w\n");
  st.nlr = 4;
  for (int k = 0; k < 4; k++) st.lr[k] = 0.001 * (1 << k);
  st.nseeds = 5;
  for (int s = 0; s < 5; s++)
    for (int k = 0; k < 4; k++) {
      srun *ra = add("a", k, s, 2.0), *rb = add("b", k, s, 2.0);
      snprintf(ra->point, sizeof ra->point, " w=1");
      snprintf(rb->point, sizeof rb->point, " w=1");
    }
  st_rules_eval(&st);
  {
    char dir[] = "/tmp/exmy-verdict-edgeplot-XXXXXX";
    snprintf(st.dir, sizeof st.dir, "%s", mkdtemp(dir) ? dir : "/tmp");
    static const study_def def = {"synthetic", "synthetic", "", NULL};
    st.def = &def;
    char *mdbuf = blocks_md(), gp[4096] = "", dat[4096] = "", p[sizeof dir + 16];
    snprintf(p, sizeof p, "%s/e.gp", dir);
    FILE *f = fopen(p, "r");
    size_t n = f ? fread(gp, 1, sizeof gp - 1, f) : 0;
    gp[n] = 0;
    if (f) fclose(f);
    unlink(p);
    snprintf(p, sizeof p, "%s/e.dat", dir);
    f = fopen(p, "r");
    n = f ? fread(dat, 1, sizeof dat - 1, f) : 0;
    dat[n] = 0;
    if (f) fclose(f);
    unlink(p);
    rmdir(dir);
    CHECK(strstr(gp, "with points pt 8") && strstr(gp, "keyentry with linespoints") && strstr(gp, "title 'a'") &&
              strstr(gp, "above the triangle (censored)"),
          "%s: the script has no bound markers or key entries:\n%s", what, gp);
    CHECK(strstr(dat, "# a\nNaN NaN NaN NaN\n") && strstr(dat, " 0.008\n"),
          "%s: the data has no empty block for a's points or no bound at lr 0.008:\n%s", what, dat);
    CHECK(mdbuf && strstr(mdbuf, "Censored values (2 here)"), "%s: the caption does not count 2 bounds", what);
    free(mdbuf);
    st.def = NULL;
  }

  /* a table with more rows than the old fixed 160 (the full ladder's runs table has 1,080):
   * every row group is written, none dropped */
  what = "a table of 200 row groups";
  setup("table.t.metrics = val_loss\n");
  st.nlr = 8;
  for (int a = 0; a < 25; a++)
    for (int l = 0; l < 8; l++) {
      char arm[16];
      snprintf(arm, sizeof arm, "a%02d", a);
      add(arm, l, 0, 2.0 + 0.01 * a);
    }
  {
    char *mdbuf = blocks_md();
    int rows = 0;
    for (const char *q = mdbuf; q && (q = strstr(q, "\n| a")); q++) rows += q[4] >= '0' && q[4] <= '9'; /* not the header's "| arm" */
    CHECK(rows == 200, "%s: %d rows written, want 200", what, rows);
    CHECK(mdbuf && strstr(mdbuf, "| a24 | 0.128 |"), "%s: the last arm's last row is missing", what);
    free(mdbuf);
  }

  /* a precondition (requires = METRIC > X on arm A's runs): unmet, "not testable here" whatever the gap */
  what = "a precondition unmet";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = higher\nclaim.c.requires = first_loss > 5\n");
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1 + noise(0.01)), add("b", 0, s, b); }
  EXPECT("c", ST_V_NOT_TESTABLE);
  what = "a precondition met";
  setup("claim.c.arms = a, b\nclaim.c.metric = val_loss\nclaim.c.rule = higher\nclaim.c.requires = first_loss >= 4.17\n");
  for (int s = 0; s < 5; s++) { const double b = 2 + noise(0.05); add("a", 0, s, b + 0.1 + noise(0.01)), add("b", 0, s, b); }
  EXPECT("c", ST_V_REPRODUCED);

  /* a table's value cells leave failed runs out of the mean and count them apart, the runs that did not
   * converge (finite, 0.5 nats above the reference) as well as the diverged */
  what = "a table cell with a run that did not converge";
  setup("reference = b\ntable.t.metrics = val_loss\n");
  for (int s = 0; s < 5; s++) add("a", 0, s, s ? 2.1 : 3.5), add("b", 0, s, 2.0);
  st_rules_eval(&st);
  {
    char *mdbuf = blocks_md();
    CHECK(mdbuf && strstr(mdbuf, "| a | 2.1000 +- 0.0000 (1 failed) |"), "%s: %s", what, mdbuf ? mdbuf : "(none)");
    free(mdbuf);
  }

  st_file_free(&sf);
  free(st.claim);
  return tu_finish("test_study_verdict");
}
