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


/* The arms by their tags in fallback.study: `ref` the reference (bf16),
 * `all` every layer in one format and `firstlast` the same with the first
 * and last layers in bf16 (one pair per group: the format), `check` the
 * check-and-fallback run (its group's `all` arm without the check). */
void st_report_fallback(study *st, FILE *md) {
  const char *ref = st_arm_by(st, NULL, "ref", NAN);
  agg b = ref ? st_aggregate(st, ref, 0) : (agg){.final_mean = NAN};
  char vs[48], ttl[160];
  snprintf(vs, sizeof vs, "vs %s", ref ? ref : "reference");
  tbl *t = st_tbl_new(7, "configuration", "final", "sd", vs, "val", "diverged", "fallbacks");
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
  if (ref) {
    snprintf(ttl, sizeof ttl, "loss minus %s's loss: all layers FP8 vs first/last in bf16 (seed 1)", ref);
    st_plot_gap(st, md, "loss-gap", ttl, ref, 0, 0, NULL, st_smooth_for(st));
  }
  /* per format (group, in file order): all layers FP8 against first/last in bf16 */
  char ev[1024] = "";
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi || strcmp(r->tag, "all")) continue;
    const char *n2 = st_arm_by(st, r->group, "firstlast", NAN);
    if (!n2) continue;
    agg a = st_aggregate(st, r->name, 0), c = st_aggregate(st, n2, 0);
    double va = a.nfinal ? a.final_mean : a.first_mean, vc = c.nfinal ? c.final_mean : c.first_mean;
    const double gain = va - vc;
    const double noise = st_paired_sd(st, r->name, n2, 0);
    const double gap = va - b.final_mean;
    char rec[96] = "", sd[64] = " (one seed: no seed-to-seed spread)";
    if (isfinite(gap) && gap > 0)
      snprintf(rec, sizeof rec, ", %.0f%% of the gap to %s recovered", 100 * gain / gap, ref ? ref : "the reference");
    if (isfinite(noise)) snprintf(sd, sizeof sd, ", sd over seeds of the paired difference %.4f", noise);
    st_cat(ev, sizeof ev, "%s%s: all %.4f (%d/%d diverged) -> first/last bf16 %.4f (%d/%d): gain %+.4f%s%s", ev[0] ? "; " : "",
        r->group, va, a.ndiv, a.n, vc, c.ndiv, c.n, gain, rec, sd);
  }
  if (ev[0])
    st_observe(st, "All layers FP8 against the first and last layers in BF16 (published: keeping them in BF16 helps "
                   "noticeably; the claims decide).", "%s.", ev);
  const char *chk = st_arm_by(st, NULL, "check", NAN);
  const srun *c0 = NULL;
  for (int i = 0; chk && i < st->nrun && !c0; i++)
    if (!strcmp(st->run[i].name, chk)) c0 = &st->run[i];
  const char *plain = c0 ? st_arm_by(st, c0->group, "all", NAN) : NULL;
  agg k = chk ? st_aggregate(st, chk, 0) : (agg){0}, a = plain ? st_aggregate(st, plain, 0) : (agg){.final_mean = NAN};
  long fb = 0, ch = 0;
  for (int j = 0; chk && j < st->nrun; j++)
    if (!strcmp(st->run[j].name, chk)) { fb += st->run[j].res.fallbacks; ch += st->run[j].res.checks; }
  if (k.n)
    st_observe(st, "Check-and-fallback (periodic bf16 check, fall back on disagreement).",
                "%s: %ld checks, %ld fallbacks over %d runs; final %.4f vs %.4f without the check.", chk, ch, fb,
                k.n, k.final_mean, a.final_mean);
}
