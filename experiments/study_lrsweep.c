/* study_lrsweep.c: the analysis of learning-rate sweeps (report = lrsweep; the
 * runs are a study file's arms crossed with axis.lr and seeds, e.g.
 * experiments/studies/lrsweep.study).  Definitions (docs/studies/README.md,
 * "The lrsweep analysis"), per arm a (and axis point), seed s, learning rate lr:
 *   loss(a, lr, s)  the run's validation loss; +inf when it failed (diverged,
 *                   did not converge, errored) or is not finite; unknown (NaN) when it has not run yet:
 *                   a seed with an unknown loss in the arm or the reference
 *                   is left out of LR_max, the shifts and the sensitivity, and
 *                   a run not yet run counts in no failure rate;
 *   best(s)         the reference arm's lowest loss over the learning rates;
 *   LR_max(a, s)    the largest lr with loss <= best(s) + lr_delta;
 *   shift(a, s)     log2 LR_max(a, s) - log2 LR_max(ref, s), paired by seed; an
 *                   arm with no such lr sits one grid step below the grid
 *                   (censored, counted);
 *   own shift       the same with each arm's LR_max taken against its own best
 *                   loss at the seed (the stability edge apart from a loss
 *                   offset; shown beside the verdict, not deciding it);
 *   sensitivity     Wortsman et al. 2023: the mean over the grid of
 *                   min(loss, l0) minus its minimum (l0: the first loss);
 *   failed, under-trained   the claims' own rules per run (st_run_failed, or
 *                   an error; r->undertrained, study_claims.c), counted per
 *                   learning rate, never pooled over learning rates. */
#include "experiments/study_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LR_DELTA_DEFAULT 0.05

int st_lr_max_index(const double *loss, int nlr, double best, double delta) {
  if (!isfinite(best)) return -1;
  for (int i = nlr - 1; i >= 0; i--)
    if (loss[i] <= best + delta) return i; /* false for NaN and +inf */
  return -1;
}

double st_lr_sensitivity(const double *loss, int nlr, double l0) {
  if (nlr < 1 || !isfinite(l0)) return NAN;
  double sum = 0, lo = INFINITY;
  for (int i = 0; i < nlr; i++) {
    const double v = loss[i] < l0 ? loss[i] : l0; /* NaN and +inf count as l0 */
    sum += v;
    if (v < lo) lo = v;
  }
  return sum / nlr - lo;
}

/* One curve: an arm at one axis point, every seed and learning rate (in
 * ascending lr order). */
typedef struct curve {
  char arm[64], point[ST_NAMELEN];
  double *loss;   /* [seed * nlr + k] */
  double *l0;     /* per seed */
  double *best;   /* per seed: the reference curve's lowest loss (+inf: no reference, or it never trained) */
  int *nfail;     /* per learning rate: seeds whose run failed (the claims' rule) */
  int *nunder;    /* per learning rate: seeds whose run is under-trained (a flag, not a failure) */
  int *ran;       /* per learning rate: seeds whose run is there (not missing) */
  int ref;        /* index of the reference curve at the same point, -1 none */
  int unstable;   /* arm.NAME.tag = unstable: the published claim predicts a lower LR_max */
} curve;

static int cmp_dbl(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double min_of(const double *v, int n) {
  double m = INFINITY;
  for (int i = 0; i < n; i++) m = v[i] < m ? v[i] : m;
  return m;
}

/* every learning rate's loss known (no run missing) */
static int complete(const double *v, int n) {
  for (int i = 0; i < n; i++)
    if (isnan(v[i])) return 0;
  return 1;
}

static double run_loss(const srun *r) {
  if (r->missing) return NAN; /* not run yet: unknown, not a failure */
  /* failed by the claims' rule (diverged or did not converge): its first loss in the sensitivity, as lr_sens counts it */
  if (r->failed || st_run_failed(r) || !isfinite(r->res.val_loss)) return INFINITY;
  return r->res.val_loss;
}

static void fmt_ci(char *buf, size_t n, double m, double lo, double hi) {
  if (!isfinite(m)) snprintf(buf, n, "-");
  else if (!isfinite(lo)) snprintf(buf, n, "%+.2f", m);
  else snprintf(buf, n, "%+.2f [%+.2f, %+.2f]", m, lo, hi);
}

void st_report_lrsweep(study *st, FILE *md) {
  const int nlr = st->nlr, ns = st->nseeds;
  if (!st->file || nlr < 1) return;
  const char *refarm = st_file_get(st->file, st->size, "reference", NULL);
  const double delta = st_file_num(st->file, st->size, "lr_delta", LR_DELTA_DEFAULT), nats = st_nonconv_nats(st);
  int ord[MAX_LR], pos[MAX_LR]; /* the learning rates in ascending order (insertion sort: at most MAX_LR) */
  for (int k = 0; k < nlr; k++) {
    int j = k;
    for (; j > 0 && st->lr[ord[j - 1]] > st->lr[k]; j--) ord[j] = ord[j - 1];
    ord[j] = k;
  }
  for (int k = 0; k < nlr; k++) pos[ord[k]] = k;
  const double step = nlr > 1 ? log2(st->lr[ord[1]] / st->lr[ord[0]]) : 1;

  /* curves in the order their runs appear */
  curve *cv = calloc((size_t)st->nrun + 1, sizeof *cv);
  int nc = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    int c = 0;
    while (c < nc && (strcmp(cv[c].arm, r->arm) || strcmp(cv[c].point, r->point))) c++;
    if (c == nc) {
      snprintf(cv[c].arm, sizeof cv[c].arm, "%s", r->arm);
      snprintf(cv[c].point, sizeof cv[c].point, "%s", r->point);
      cv[c].loss = malloc((size_t)ns * nlr * sizeof *cv[c].loss);
      cv[c].l0 = malloc((size_t)ns * sizeof *cv[c].l0);
      cv[c].best = malloc((size_t)ns * sizeof *cv[c].best);
      cv[c].nfail = calloc((size_t)nlr, sizeof *cv[c].nfail);
      cv[c].nunder = calloc((size_t)nlr, sizeof *cv[c].nunder);
      cv[c].ran = calloc((size_t)nlr, sizeof *cv[c].ran);
      for (int j = 0; j < ns * nlr; j++) cv[c].loss[j] = NAN;
      for (int j = 0; j < ns; j++) cv[c].l0[j] = NAN;
      cv[c].unstable = !strcmp(r->tag, "unstable");
      nc++;
    }
    if (r->seedi >= ns || r->lri >= nlr) continue;
    cv[c].loss[r->seedi * nlr + pos[r->lri]] = run_loss(r);
    if (!r->missing) { /* an errored run counts as failed */
      cv[c].ran[pos[r->lri]]++;
      cv[c].nfail[pos[r->lri]] += r->failed || st_run_failed(r);
      cv[c].nunder[pos[r->lri]] += r->undertrained; /* never set on a run that failed or errored */
    }
    if (!r->failed && !r->missing && isfinite(r->res.first_loss) && !isfinite(cv[c].l0[r->seedi]))
      cv[c].l0[r->seedi] = r->res.first_loss;
  }
  for (int c = 0; c < nc; c++) {
    cv[c].ref = -1;
    for (int q = 0; refarm && q < nc; q++)
      if (!strcmp(cv[q].arm, refarm) && !strcmp(cv[q].point, cv[c].point)) cv[c].ref = q;
  }
  /* the reference's best per seed (LR_max's yardstick) */
  for (int c = 0; c < nc; c++)
    for (int sd = 0; sd < ns; sd++)
      cv[c].best[sd] = cv[c].ref < 0 ? INFINITY
                       : complete(cv[cv[c].ref].loss + (size_t)sd * nlr, nlr) ? min_of(cv[cv[c].ref].loss + (size_t)sd * nlr, nlr)
                                                                               : NAN; /* a reference run missing */

  fprintf(md, "## LR_max and LR sensitivity\n\n"
              "Per arm and seed: `LR_max` is the largest learning rate whose validation loss is within "
              "lr_delta = %g nats of the reference arm's (%s) best loss over the learning rates at the same seed; "
              "the shift is log2 LR_max(arm) - log2 LR_max(%s), paired by seed (grid step %.2f in log2), with a "
              "95%% CI over the seeds (Student's t). An arm that never comes within lr_delta "
              "at a seed is placed one grid step below the smallest learning rate (censored: the true shift is "
              "at least that large). A format whose loss sits more than lr_delta above fp32's at every learning rate has no LR_max by this definition even when it is stable, so `shift vs own best` repeats the measure with each arm's LR_max taken within lr_delta of *its own* best loss at the seed: the stability edge apart from a loss offset (shown, not deciding the verdict). `LR sensitivity` (Wortsman et al. 2023): the mean over the grid of "
              "min(loss, first loss) minus its minimum, per seed. Failures and under-training per learning rate "
              "by the claims' own rules (never pooled over learning rates): a run *failed* when it diverged (a "
              "final loss above the first, or not finite), errored, or ended more than nonconv_nats = %g nats above "
              "the reference's validation loss at the same seed and learning rate; it is *under-trained* (a flag, "
              "not a failure) when it did not fail but ended that far above the reference's best over the "
              "learning rates at its seed.\n\n",
          delta, refarm ? refarm : "none", refarm ? refarm : "none", step, nats);
  if (!refarm) fprintf(md, "No `reference = ARM` line: LR_max and failures cannot be measured.\n\n");

  char h_fail[96], h_under[96];
  snprintf(h_fail, sizeof h_fail, "failed, per lr (of %d)", ns);
  snprintf(h_under, sizeof h_under, "under-trained, per lr (of %d)", ns);
  tbl *t = st_tbl_new(8, "arm", "seeds", "LR_max (median)", "shift, log2 [95% CI]", "shift vs own best", "LR sensitivity [95% CI]", h_fail,
                      h_under);
  double *gap = malloc((size_t)ns * sizeof *gap), *sens = malloc((size_t)ns * sizeof *sens);
  double *own = malloc((size_t)ns * sizeof *own);
  for (int c = 0; c < nc; c++) {
    const curve *a = &cv[c];
    const curve *rf = a->ref >= 0 ? &cv[a->ref] : NULL;
    int ng = 0, ncens = 0, nsens = 0, nmax = 0, nown = 0, ncomplete = 0;
    double lrmax[64];
    for (int s = 0; s < ns; s++) {
      const double *la = a->loss + (size_t)s * nlr;
      if (!complete(la, nlr) || (rf && isnan(a->best[s]))) continue; /* a run of this seed not run yet */
      ncomplete++;
      const double sv = st_lr_sensitivity(la, nlr, a->l0[s]);
      if (isfinite(sv)) sens[nsens++] = sv;
      if (!rf) continue;
      const double best = a->best[s];
      const int ir = st_lr_max_index(rf->loss + (size_t)s * nlr, nlr, best, delta), ia = st_lr_max_index(la, nlr, best, delta);
      if (ia >= 0 && nmax < 64) lrmax[nmax++] = st->lr[ord[ia]];
      if (ir < 0) continue; /* the reference itself never trained at this seed */
      const double xa = ia >= 0 ? log2(st->lr[ord[ia]]) : log2(st->lr[ord[0]]) - step;
      ncens += ia < 0;
      gap[ng++] = xa - log2(st->lr[ord[ir]]);
      /* the same against each arm's own best: the stability edge apart from a loss offset */
      const int io = st_lr_max_index(la, nlr, min_of(la, nlr), delta);
      if (io >= 0) own[nown++] = log2(st->lr[ord[io]]) - log2(st->lr[ord[ir]]);
    }
    double m = ng ? st_mean_of(gap, ng) : NAN, lo = NAN, hi = NAN;
    if (ng) st_t_interval(gap, ng, 0.95, &lo, &hi);
    double sm = nsens ? st_mean_of(sens, nsens) : NAN, slo = NAN, shi = NAN;
    if (nsens) st_t_interval(sens, nsens, 0.95, &slo, &shi);
    double om = nown ? st_mean_of(own, nown) : NAN, olo = NAN, ohi = NAN;
    if (nown) st_t_interval(own, nown, 0.95, &olo, &ohi);
    char b[96], shift[96], oshift[96], name[170];
    fmt_ci(shift, sizeof shift, m, ng > 1 ? lo : NAN, hi);
    fmt_ci(oshift, sizeof oshift, om, nown > 1 ? olo : NAN, ohi);
    snprintf(name, sizeof name, "%s%s", a->arm[0] ? a->arm : "base", a->point);
    st_tbl_cell(t, 0, "%s", name);
    if (ncomplete < ns) st_tbl_cell(t, 1, "%d of %d", ncomplete, ns); /* the others wait for runs */
    else st_tbl_cell(t, 1, "%d", ns);
    if (nmax) {
      qsort(lrmax, (size_t)nmax, sizeof *lrmax, cmp_dbl);
      st_fmt_lr(nmax % 2 ? lrmax[nmax / 2] : sqrt(lrmax[nmax / 2 - 1] * lrmax[nmax / 2]), b, sizeof b);
      st_tbl_cell(t, 2, "%s%s", b, nmax < ncomplete ? " (some seeds: none)" : "");
    } else st_tbl_cell(t, 2, "none");
    if (rf && a != rf) {
      st_tbl_cell(t, 3, "%s%s", shift, ncens ? " (censored)" : "");
      st_tbl_cell(t, 4, "%s", oshift);
    } else {
      st_tbl_cell(t, 3, a == rf ? "reference" : "-");
      st_tbl_cell(t, 4, a == rf ? "reference" : "-");
    }
    fmt_ci(b, sizeof b, sm, nsens > 1 ? slo : NAN, shi);
    st_tbl_cell(t, 5, "%s", b);
    for (int col = 6; col <= 7; col++) {
      const int *cnt = col == 6 ? a->nfail : a->nunder;
      char per[160] = "";
      for (int k = 0; k < nlr; k++)
        if (a->ran[k] < ns) st_cat(per, sizeof per, "%s%d/%d", k ? " " : "", cnt[k], a->ran[k]); /* runs missing */
        else st_cat(per, sizeof per, "%s%d", k ? " " : "", cnt[k]);
      st_tbl_cell(t, col, "%s", per);
    }
    st_tbl_end_row(t);
    if (!rf || a == rf || st->nfind >= MAX_FIND) continue;
    /* the observation: LR_max against the reference's, paired by seed (the claims decide) */
    char title[400];
    if (a->unstable)
      snprintf(title, sizeof title, "%s: LR_max against %s's (paired by seed; published: lower, Lee et al. 2024: "
               "E8M3-E8M5 unstable).", name, refarm);
    else snprintf(title, sizeof title, "%s: LR_max against %s's (paired by seed).", name, refarm);
    st_observe(st, title,
                   "shift log2 LR_max = %s over n = %d seeds (%d censored; grid step %.2f). Against the arm's own best "
                   "loss (its stability edge apart from a loss offset): %s over n = %d", shift, ng, ncens, step,
                   oshift, nown);
  }
  fprintf(md, "## Results per arm\n\n");
  st_tbl_emit(st, t, md, "LR_max and LR sensitivity per arm:");

  /* the classic figure: validation loss against the learning rate, seed bands */
  series *sr = calloc((size_t)nc + 1, sizeof *sr);
  for (int c = 0; c < nc; c++) {
    char name[170];
    snprintf(name, sizeof name, "%s%s", cv[c].arm[0] ? cv[c].arm : "base", cv[c].point);
    st_series_alloc(&sr[c], nlr, name);
    st_series_bars(&sr[c], nlr);
    sr[c].points = 1;
    for (int k = 0; k < nlr; k++) {
      double sum = 0, lo = INFINITY, hi = -INFINITY;
      int n = 0;
      for (int s = 0; s < ns; s++) {
        const double v = cv[c].loss[(size_t)s * nlr + k];
        if (!isfinite(v)) continue;
        sum += v, n++;
        lo = v < lo ? v : lo, hi = v > hi ? v : hi;
      }
      sr[c].x[k] = st->lr[ord[k]];
      sr[c].y[k] = n ? sum / n : NAN;
      sr[c].lo[k] = n ? lo : NAN;
      sr[c].hi[k] = n ? hi : NAN;
    }
    sr[c].n = nlr;
  }
  char ttl[200];
  snprintf(ttl, sizeof ttl, "validation loss vs learning rate: mean of the runs that trained, bars min..max over %d seed%s",
           ns, ns > 1 ? "s" : "");
  st_plot_draw(st, "loss-vs-lr", ttl, "learning rate (log axis)", "validation loss (nats)", 10, 0, nc, sr, NAN);
  st_series_free(sr, nc);
  st_md_plot(st, md, "loss-vs-lr", ttl);
  /* the rate of failed runs against the learning rate */
  for (int c = 0; c < nc; c++) {
    char name[170];
    snprintf(name, sizeof name, "%s%s", cv[c].arm[0] ? cv[c].arm : "base", cv[c].point);
    st_series_alloc(&sr[c], nlr, name);
    sr[c].points = 1;
    for (int k = 0; k < nlr; k++) {
      const int nf = cv[c].nfail[k];
      sr[c].x[k] = st->lr[ord[k]];
      sr[c].y[k] = cv[c].ran[k] ? (double)nf / cv[c].ran[k] : NAN;
    }
    sr[c].n = nlr;
  }
  snprintf(ttl, sizeof ttl, "failed runs (diverged, or ended > %g nats above the reference at the same lr) per learning rate", nats);
  st_plot_draw(st, "failed-vs-lr", ttl, "learning rate (log axis)", "failed (fraction of seeds)", 10, 0, nc, sr, NAN);
  st_series_free(sr, nc);
  st_md_plot(st, md, "failed-vs-lr", ttl);
  if (ns < 5)
    fprintf(md, "With %d seed%s per point, the failure rates carry wide exact intervals (a rate of 0/%d has a 95%% upper "
                "bound of %.0f%%).\n\n", ns, ns > 1 ? "s" : "", ns, 100 * (1 - pow(0.025, 1.0 / ns)));
  free(sr);
  free(gap);
  free(own);
  free(sens);
  for (int c = 0; c < nc; c++) {
    free(cv[c].loss);
    free(cv[c].l0);
    free(cv[c].best);
    free(cv[c].nfail);
    free(cv[c].nunder);
    free(cv[c].ran);
  }
  free(cv);
}
