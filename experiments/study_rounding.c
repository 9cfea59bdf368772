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

void st_report_rounding(study *st, FILE *md) {
  agg ref = st_aggregate(st, "bf16", 0);
  tbl *t = st_tbl_new(7, "configuration", "final", "sd", "vs bf16", "val", "diverged", "drop in 2nd half");
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
  st_plot_gap(st, md, "loss-master-gap", "pure bf16 weights: loss minus the fp32-master run's loss (seed 1)", "bf16", 0, 0,
           pick_master, st_smooth_for(st));
  st_plot_losses(st, md, "loss-grad-e8m3", "E8M3 gradients: rne vs sr (seed 1)", 0, 0, pick_grad3, st_smooth_for(st), 0, 0);
  st_plot_gap(st, md, "loss-grad-gap", "low-mantissa gradients: loss minus bf16's loss (seed 1)", "bf16", 0, 0, pick_grad,
           st_smooth_for(st));
  /* findings */
  char ev[1024] = "";
  int sr_better = 0, n = 0;
  for (int m = 3; m <= 5; m++) {
    char a1[64], a2[64];
    snprintf(a1, sizeof a1, "grad e8m%d rne", m);
    snprintf(a2, sizeof a2, "grad e8m%d sr", m);
    agg x = st_aggregate(st, a1, 0), y = st_aggregate(st, a2, 0);
    if (!x.n || !y.n) continue;
    n++;
    double vx = x.nfinal ? x.final_mean : x.first_mean, vy = y.nfinal ? y.final_mean : y.first_mean;
    const int b = vy < vx || x.ndiv > y.ndiv;
    sr_better += b;
    st_cat(ev, sizeof ev, "E8M%d: rne %.4f (%d/%d diverged), sr %.4f (%d/%d), difference %+.4f vs seed sd %.4f/%.4f; ",
        m, vx, x.ndiv, x.n, vy, y.ndiv, y.n, vy - vx, x.final_sd, y.final_sd);
  }
  if (n)
    st_observe(st, "Stochastic rounding of low-mantissa gradients trains at least as well as round-to-nearest.",
                "%sbf16 gradients: %.4f. sr's final loss is lower (or it diverges less) at %d of %d widths.",
                ev, ref.final_mean, sr_better, n);
  agg r = st_aggregate(st, "bf16 weights rne", 0), s = st_aggregate(st, "bf16 weights sr", 0);
  if (r.n && s.n && isfinite(ref.final_mean)) {
    const double gr = r.final_mean - ref.final_mean, gs = s.final_mean - ref.final_mean;
    st_observe(st, "With bf16 weights, round-to-nearest updates vanish as the learning rate decays; stochastic rounding "
                "removes the bias.",
                "final loss above fp32 master weights: rne %+.4f, sr %+.4f (fp32 master %.4f).",
                gr, gs, ref.final_mean);
  }
}
