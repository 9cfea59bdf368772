/* study_rounding.c: the analysis of the rounding study (report = rounding); its runs are
 * experiments/studies/rounding.study (study_int.h, docs/studies/). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== */
/* study: rounding                                                         */
/* ====================================================================== */


static int pick_master(const srun *r) { return !strcmp(r->group, "master") || !strcmp(r->tag, "ref"); }
static int pick_grad(const srun *r) { return !strcmp(r->group, "grad"); }
static int pick_grad3(const srun *r) { return (!strcmp(r->group, "grad") && r->x == 3) || !strcmp(r->tag, "ref"); }

/* rounding.study's arms by group and tag: the reference (tag ref), the
 * low-mantissa gradients (group grad, x mantissa bits, tag rne or sr) and
 * the pure bf16 weights (group master, tag rne or sr). */
void st_report_rounding(study *st, FILE *md) {
  const char *rn = st_arm_by(st, NULL, "ref", NAN);
  agg ref = rn ? st_aggregate(st, rn, 0) : (agg){.final_mean = NAN};
  char vs[48], ttl[160];
  snprintf(vs, sizeof vs, "vs %s", rn ? rn : "reference");
  tbl *t = st_tbl_new(7, "configuration", "final", "sd", vs, "val", "diverged", "drop in 2nd half");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi) continue;
    agg a = st_aggregate(st, r->name, 0);
    st_agg_cells(t, r->name, &a, &ref);
    /* loss decrease over the second half (mean of the 10% around the middle minus final) */
    double drop[64];
    int nd = 0;
    for (int j = 0; j < st->nrun && nd < 64; j++) {
      const srun *q = &st->run[j];
      if (strcmp(q->name, r->name) || q->failed || q->res.steps_done < 20) continue;
      long n = q->res.steps_done, w = n / 10;
      double mid = 0;
      for (long s = n / 2 - w / 2; s < n / 2 - w / 2 + w; s++) mid += q->res.loss[s];
      drop[nd++] = mid / w - q->res.final_loss_avg;
    }
    st_tbl_cell(t, 6, "%.4f", st_mean_of(drop, nd));
    st_tbl_end_row(t);
  }
  fprintf(md, "## Results\n\nMeans over seeds. `drop in 2nd half`: mean loss of the 10%% of steps around the middle "
              "minus the final loss: how much the run still learned while the learning rate decayed.\n\n");
  st_tbl_emit(st, t, md, "summary (means over seeds):");
  st_plot_losses(st, md, "loss-master", "pure bf16 weights: rne vs sr rounding of the updates (seed 1)", 0, 0, pick_master,
              st_smooth_for(st), 0, 0);
  st_plot_losses(st, md, "loss-master-late", "the second half (learning rate decaying to 0), seed 1", 0, 0, pick_master,
              st_smooth_for(st), st->steps / 2, 0);
  if (rn)
    st_plot_gap(st, md, "loss-master-gap", "pure bf16 weights: loss minus the fp32-master run's loss (seed 1)", rn, 0, 0,
             pick_master, st_smooth_for(st));
  st_plot_losses(st, md, "loss-grad-e8m3", "E8M3 gradients: rne vs sr (seed 1)", 0, 0, pick_grad3, st_smooth_for(st), 0, 0);
  if (rn) {
    snprintf(ttl, sizeof ttl, "low-mantissa gradients: loss minus %s's loss (seed 1)", rn);
    st_plot_gap(st, md, "loss-grad-gap", ttl, rn, 0, 0, pick_grad, st_smooth_for(st));
  }
  /* observations: per mantissa width (the rne arms of group grad in file order), rne against sr */
  char ev[1024] = "";
  for (int i = 0; i < st->nrun; i++) {
    const srun *q = &st->run[i];
    if (q->lri || q->seedi || strcmp(q->group, "grad") || strcmp(q->tag, "rne")) continue;
    const char *sr = st_arm_by(st, "grad", "sr", q->x);
    if (!sr) continue;
    agg x = st_aggregate(st, q->name, 0), y = st_aggregate(st, sr, 0);
    if (!x.n || !y.n) continue;
    double vx = x.nfinal ? x.final_mean : x.first_mean, vy = y.nfinal ? y.final_mean : y.first_mean;
    st_cat(ev, sizeof ev, "E8M%g: rne %.4f (%d/%d diverged), sr %.4f (%d/%d), difference %+.4f (sd over seeds of the "
        "paired difference %.4f); ", q->x, vx, x.ndiv, x.n, vy, y.ndiv, y.n, vy - vx, st_paired_sd(st, sr, q->name, 0));
  }
  if (ev[0])
    st_observe(st, "Low-mantissa gradients: stochastic rounding against round-to-nearest-even.", "%s%s gradients: %.4f.",
                ev, rn ? rn : "reference", ref.final_mean);
  const char *wr = st_arm_by(st, "master", "rne", NAN), *ws = st_arm_by(st, "master", "sr", NAN);
  agg r = wr ? st_aggregate(st, wr, 0) : (agg){0}, s = ws ? st_aggregate(st, ws, 0) : (agg){0};
  if (r.n && s.n && isfinite(ref.final_mean)) {
    const double gr = r.final_mean - ref.final_mean, gs = s.final_mean - ref.final_mean;
    st_observe(st, "Pure bf16 weights: round-to-nearest-even against stochastic rounding of the updates as the learning "
                "rate decays (published: round-to-nearest updates vanish, stochastic rounding removes the bias; the "
                "claims decide).",
                "final loss above fp32 master weights: rne %+.4f, sr %+.4f (fp32 master %.4f).",
                gr, gs, ref.final_mean);
  }
}
