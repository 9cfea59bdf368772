/* study_calibration.c: the calibration study (study_int.h, docs/studies/). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== */
/* study: calibration                                                      */
/* ====================================================================== */

/* The analysis of calibration.study (report = calibration): its runs are
 * the file's (bf16 pretrain, then four continuations from its checkpoint). */
#define CALIB_AFTER 20

/* The losses of the first `max` training steps after the resume (the
 * engine keeps absolute step indices; calibration steps are not training
 * steps and leave no loss). */
static int after_resume(const study *st, const srun *r, double *out, int max) {
  int k = 0;
  for (long i = st_own_start(st, r); i < r->res.steps_done && k < max; i++) out[k++] = r->res.loss[i];
  return k;
}

/* The four continuations' roles, by the tags the study file gives them: the
 * bf16 reference, FP8 current scaling, FP8 delayed without and with a
 * calibration step.  Each role's run name is its first run's (NULL: absent). */
static const char *const ROLE_TAGS[4] = {"ref", "current", "nocal", "cal"};

void st_report_calibration(study *st, FILE *md) {
  const char *names[4];
  for (int k = 0; k < 4; k++) names[k] = st_arm_by(st, NULL, ROLE_TAGS[k], NAN);
  double first[4][64];
  int nfirst[4] = {0};
  tbl *t = st_tbl_new(8, "continuation", "step 1", "step 2", "step 3", "step 5", "mean 1-20", "calib steps", "diverged");
  series s[4];
  int ns = 0;
  for (int k = 0; k < 4; k++) {
    double acc[CALIB_AFTER] = {0};
    int cnt[CALIB_AFTER] = {0}, ndiv = 0, nr = 0;
    long calsteps = 0;
    if (!names[k]) continue; /* the file has no run with this role */
    for (int i = 0; i < st->nrun; i++) {
      const srun *r = &st->run[i];
      if (strcmp(r->name, names[k]) || r->failed) continue;
      double v[CALIB_AFTER];
      int n = after_resume(st, r, v, CALIB_AFTER);
      calsteps += r->cfg->calibrate;
      nr++;
      ndiv += st_run_diverged(r);
      for (int j = 0; j < n; j++) { acc[j] += v[j]; cnt[j]++; }
      if (n && nfirst[k] < 64) first[k][nfirst[k]++] = v[0];
    }
    double m[CALIB_AFTER];
    int nm = 0;
    for (int j = 0; j < CALIB_AFTER; j++)
      if (cnt[j]) m[nm++] = acc[j] / cnt[j];
    st_tbl_cell(t, 0, "%s", names[k]);
    const int idx[] = {0, 1, 2, 4};
    for (int q = 0; q < 4; q++) {
      if (idx[q] < nm) st_tbl_cell(t, 1 + q, "%.4f", m[idx[q]]);
      else st_tbl_cell(t, 1 + q, "-");
    }
    st_tbl_cell(t, 5, "%.4f", st_mean_of(m, nm));
    st_tbl_cell(t, 6, "%ld", nr ? calsteps / nr : 0);
    st_tbl_cell(t, 7, "%d/%d", ndiv, nr);
    st_tbl_end_row(t);
    st_series_alloc(&s[ns], nm + 1, names[k]);
    s[ns].points = 1;
    for (int j = 0; j < nm; j++) { s[ns].x[j] = j + 1; s[ns].y[j] = m[j]; }
    s[ns].n = nm;
    ns++;
  }
  fprintf(md, "## The steps after the resume\n\nMean over seeds of the training loss at each step after the resume "
              "(step 1 = the first training step after the checkpoint; calibration steps are not counted).\n\n");
  st_tbl_emit(st, t, md, "loss after resuming from the bf16 checkpoint (mean over seeds):");
  st_plot_draw(st, "resume", "training loss in the first steps after resuming from a bf16 checkpoint",
            "step after the resume", "training loss (mean over seeds)", 0, 0, ns, s, NAN);
  st_series_free(s, ns);
  st_md_plot(st, md, "resume", "training loss in the first steps after resuming from a bf16 checkpoint");
  st_plot_losses(st, md, "pretrain", "bf16 pretraining (seed 1)", 0, 0, NULL, st_smooth_for(st), 0, 0);
  /* what the first FP8 step saw: under/overflow per tensor kind (seed 1) */
  {
    char ev[1200] = "";
    stat_curve *c = malloc(sizeof *c);
    const char *kinds[] = {"input", "weight", "grad"};
    for (int k = 1; k < 4; k++) {
      const srun *r = names[k] ? st_find_run(st, names[k], 0, 0) : NULL;
      if (!r || r->failed) continue;
      st_cat(ev, sizeof ev, "%s%s:", k > 1 ? "; " : "", names[k]);
      for (int q = 0; q < 3; q++) {
        st_read_stats(r, kinds[q], c);
        if (c->n) st_cat(ev, sizeof ev, " %s underflow %.2f%% overflow %.3f%%%s", kinds[q], c->under[0], c->over[0],
                      q < 2 ? "," : "");
      }
    }
    free(c);
    if (ev[0])
      st_observe(st, "What the first FP8 step after the resume saw (seed 1, mean over layers).", "%s.", ev);
  }
  const double ref = st_mean_of(first[0], nfirst[0]), nocal = st_mean_of(first[2], nfirst[2]), cal = st_mean_of(first[3], nfirst[3]),
               cur = st_mean_of(first[1], nfirst[1]);
  if (isfinite(ref) && isfinite(nocal)) {
    const double j0 = nocal / ref - 1, j1 = isfinite(cal) ? cal / ref - 1 : NAN;
    st_observe(st, "The first FP8 (delayed scaling) step after resuming from a BF16 checkpoint without an amax history "
                "(published: its loss is abnormal).",
                "first step after the resume: bf16 %.4f, delayed without calibration %.4f (%+.1f%%); abnormal = more "
                "than 5%% above bf16.",
                ref, nocal, 100 * j0);
    if (isfinite(j1))
      st_observe(st, "The first FP8 step after a calibration step (high precision, fills the histories; published: it "
                  "removes the abnormal loss).",
                  "first FP8 step after one calibration step: %.4f (%+.1f%% vs bf16). Current scaling, which needs no "
                  "history: %.4f (%+.1f%%).",
                  cal, 100 * j1, cur, isfinite(cur) ? 100 * (cur / ref - 1) : NAN);
  }
}
