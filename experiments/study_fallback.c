/* study_fallback.c: the analysis of the fallback study (report = fallback); its runs are
 * experiments/studies/fallback.study (study_int.h, docs/studies/). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== */
/* study: fallback (first/last layers in bf16)                             */
/* ====================================================================== */


void st_report_fallback(study *st, FILE *md) {
  agg b = st_aggregate(st, "bf16", 0);
  tbl *t = st_tbl_new(7, "configuration", "final", "sd", "vs bf16", "val", "diverged", "fallbacks");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi) continue;
    agg a = st_aggregate(st, r->name, 0);
    long fb = 0;
    for (int j = 0; j < st->nrun; j++)
      if (!strcmp(st->run[j].name, r->name)) fb += st->run[j].res.fallbacks;
    st_agg_cells(t, r->name, &a, &b);
    st_tbl_cell(t, 6, "%ld", fb);
    st_tbl_end_row(t);
  }
  fprintf(md, "## Results\n\nMeans over seeds; `sd`: standard deviation over seeds.\n\n");
  st_tbl_emit(st, t, md, "summary (means over seeds):");
  st_plot_losses(st, md, "loss", "training loss: all layers FP8 vs first/last layers in bf16 (seed 1)", 0, 0, NULL,
              st_smooth_for(st), 0, 0);
  st_plot_gap(st, md, "loss-gap", "loss minus bf16's loss: all layers FP8 vs first/last in bf16 (seed 1)", "bf16", 0, 0,
           NULL, st_smooth_for(st));
  const char *f[] = {"e4m3fn", "e5m2"};
  char ev[1024] = "";
  int helped = 0, beyond = 0;
  for (int i = 0; i < 2; i++) {
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s all", f[i]);
    snprintf(n2, sizeof n2, "%s first/last bf16", f[i]);
    agg a = st_aggregate(st, n1, 0), c = st_aggregate(st, n2, 0);
    double va = a.nfinal ? a.final_mean : a.first_mean, vc = c.nfinal ? c.final_mean : c.first_mean;
    const double gain = va - vc;
    double noise = NAN;
    if (isfinite(a.final_sd) && isfinite(c.final_sd)) noise = sqrt(a.final_sd * a.final_sd + c.final_sd * c.final_sd);
    const int h = gain > 0 || a.ndiv > c.ndiv;
    helped += h;
    beyond += h && (a.ndiv > c.ndiv || (isfinite(noise) && gain > noise));
    const double gap = va - b.final_mean;
    char rec[64] = "";
    if (isfinite(gap) && gap > 0) snprintf(rec, sizeof rec, ", %.0f%% of the gap to bf16 recovered", 100 * gain / gap);
    st_cat(ev, sizeof ev, "%s: all %.4f (%d/%d diverged) -> first/last bf16 %.4f (%d/%d): gain %+.4f%s%s; ", f[i], va,
        a.ndiv, a.n, vc, c.ndiv, c.n, gain, rec,
        isfinite(noise) ? (gain > noise ? " (beyond seed noise)" : " (within seed noise)") : " (one seed: no noise estimate)");
  }
  st_observe(st, "Keeping the first and last layers in BF16 lowers the loss (published: helps noticeably).",
              "%sbeyond the seed-to-seed spread (sd of the difference) for %d of 2 formats.",
              ev, beyond);
  agg k = st_aggregate(st, "e5m2 all + check", 0), a = st_aggregate(st, "e5m2 all", 0);
  long fb = 0, ch = 0;
  for (int j = 0; j < st->nrun; j++)
    if (!strcmp(st->run[j].name, "e5m2 all + check")) { fb += st->run[j].res.fallbacks; ch += st->run[j].res.checks; }
  if (k.n)
    st_observe(st, "Check-and-fallback (periodic bf16 check, fall back on disagreement).",
                "e5m2 all + check: %ld checks, %ld fallbacks over %d runs; final %.4f vs %.4f without the check.", ch, fb,
                k.n, k.final_mean, a.final_mean);
}
