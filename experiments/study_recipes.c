/* study_recipes.c: the analysis of the recipes study (report = recipes); its runs are
 * experiments/studies/recipes.study (study_int.h, docs/studies/). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== */
/* study: recipes                                                          */
/* ====================================================================== */


void st_report_recipes(study *st, FILE *md) {
  tbl *t = st_tbl_new(9, "recipe", "final", "val", "diverged", "spikes", "overflow %", "underflow %", "ratio grad (geo)",
                   "ratio input (geo)");
  stat_curve *cg = malloc(sizeof *cg), *ci = malloc(sizeof *ci), *ca = malloc(sizeof *ca);
  double dev[16], ovf[16];
  char names[16][ST_NAMELEN];
  int nd = 0;
  double ovf_cur = NAN, unf_cur = NAN;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi) continue;
    agg a = st_aggregate(st, r->name, 0);
    char b[32];
    st_tbl_cell(t, 0, "%s", r->name);
    st_fmt_num(a.final_mean, b, sizeof b);
    st_tbl_cell(t, 1, "%s", b);
    st_fmt_num(a.val_mean, b, sizeof b);
    st_tbl_cell(t, 2, "%s", b);
    st_tbl_cell(t, 3, "%d/%d", a.ndiv, a.n);
    st_tbl_cell(t, 4, "%ld", a.spikes);
    st_read_stats(r, NULL, ca);
    st_read_stats(r, "grad", cg);
    st_read_stats(r, "input", ci);
    if (ca->n) {
      st_tbl_cell(t, 5, "%.4f", st_mean_of(ca->over, ca->n));
      st_tbl_cell(t, 6, "%.3f", st_mean_of(ca->under, ca->n));
    } else {
      st_tbl_cell(t, 5, "-");
      st_tbl_cell(t, 6, "-");
    }
    double lg[1024], li[1024];
    for (int j = 0; j < cg->n; j++) lg[j] = log2(cg->ratio[j]);
    for (int j = 0; j < ci->n; j++) li[j] = log2(ci->ratio[j]);
    const double gg = exp2(st_mean_of(lg, cg->n)), gi = exp2(st_mean_of(li, ci->n));
    if (cg->n && isfinite(gg)) st_tbl_cell(t, 7, "%.3f", gg);
    else st_tbl_cell(t, 7, "-");
    if (ci->n && isfinite(gi)) st_tbl_cell(t, 8, "%.3f", gi);
    else st_tbl_cell(t, 8, "-");
    st_tbl_end_row(t);
    if (!strcmp(r->tag, "baseline") && ca->n) { /* the delayed arms' current-scaling twin (the study file tags it) */
      ovf_cur = st_mean_of(ca->over, ca->n);
      unf_cur = st_mean_of(ca->under, ca->n);
    }
    if (!strcmp(r->tag, "delayed") && nd < 16) {
      double ad[2048];
      int k = 0;
      for (int j = 0; j < cg->n; j++) if (isfinite(lg[j])) ad[k++] = fabs(lg[j]);
      for (int j = 0; j < ci->n; j++) if (isfinite(li[j])) ad[k++] = fabs(li[j]);
      dev[nd] = k ? st_mean_of(ad, k) : NAN;
      ovf[nd] = ca->n ? st_mean_of(ca->over, ca->n) : NAN;
      snprintf(names[nd], sizeof names[nd], "%s", r->name);
      nd++;
    }
  }
  fprintf(md, "## Results per recipe\n\nSeed 1, first learning rate for the statistics (`overflow %%`, `underflow %%`: "
              "means over statistics steps and every tensor of every layer; `ratio`: geometric mean over steps and "
              "layers of the delayed/current scale ratio, 1 for current scaling). Statistics leave out step 0, where "
              "delayed scaling still has its initial scale 1 (no amax recorded yet: an initialization, not a lag; it "
              "is in each run's stats.csv). `final`, `val`: means over seeds.\n\n");
  st_tbl_emit(st, t, md, "per recipe (statistics: seed 1):");

  st_plot_losses(st, md, "loss", "training loss per scaling recipe", 0, 0, NULL, st_smooth_for(st), 0, 0);
  st_plot_gap(st, md, "loss-gap", "loss minus bf16's loss per scaling recipe (seed 1)", "bf16", 0, 0, NULL, st_smooth_for(st));
  /* scale ratio and overflow curves of the delayed runs (and current as the reference) */
  const char *kinds[] = {"grad", "input", "weight"};
  for (int kk = 0; kk < 3; kk++) {
    series s[16];
    int ns = 0;
    for (int i = 0; i < st->nrun && ns < 16; i++) {
      const srun *r = &st->run[i];
      if (r->lri || r->seedi || strcmp(r->tag, "delayed")) continue;
      st_read_stats(r, kinds[kk], cg);
      st_series_alloc(&s[ns], cg->n + 1, r->name + 7); /* drop "hybrid " */
      for (int j = 0; j < cg->n; j++) {
        s[ns].x[j] = cg->step[j];
        s[ns].y[j] = cg->ratio[j];
      }
      s[ns].n = cg->n;
      ns++;
    }
    char stem[32], ttl[160];
    snprintf(stem, sizeof stem, "scale-ratio-%s", kinds[kk]);
    snprintf(ttl, sizeof ttl, "delayed/current scale ratio of the %s tensors (geometric mean over layers)", kinds[kk]);
    st_plot_draw(st, stem, ttl, "step", "delayed scale / current scale", 0, 1, ns, s, NAN);
    st_series_free(s, ns);
    st_md_plot(st, md, stem, ttl);
  }
  for (int w = 0; w < 2; w++) {
    series s[16];
    int ns = 0;
    for (int i = 0; i < st->nrun && ns < 16; i++) {
      const srun *r = &st->run[i];
      if (r->lri || r->seedi || (!strcmp(r->tag, "ref"))) continue;
      st_read_stats(r, NULL, ca);
      if (!ca->n) continue;
      st_series_alloc(&s[ns], ca->n + 1, r->name);
      for (int j = 0; j < ca->n; j++) {
        s[ns].x[j] = ca->step[j];
        s[ns].y[j] = w ? ca->under[j] : ca->over[j];
      }
      s[ns].n = ca->n;
      ns++;
    }
    const char *stem = w ? "underflow" : "overflow";
    const char *ttl = w ? "underflow: % of nonzero elements cast to zero (mean over tensors)"
                        : "overflow: % of elements beyond the format's range (mean over tensors)";
    st_plot_draw(st, stem, ttl, "step", w ? "underflow %" : "overflow %", 0, 0, ns, s, NAN);
    st_series_free(s, ns);
    st_md_plot(st, md, stem, ttl);
  }
  /* findings */
  if (nd) {
    char ev[1200] = "";
    double dlen1 = NAN, dlen1024 = NAN;
    for (int i = 0; i < nd; i++) {
      st_cat(ev, sizeof ev, "%s: mean |log2 ratio| %.3f, overflow %.4f%%; ", names[i] + 15, dev[i], ovf[i]);
      if (strstr(names[i], "len=1 margin=0")) dlen1 = dev[i];
      if (strstr(names[i], "len=1024 margin=0")) dlen1024 = dev[i];
    }
    st_observe(st, "Delayed scales lag a moving distribution: the delayed/current scale ratio departs from 1 (TE delayed "
                "scaling).",
                "%scurrent scaling: overflow %.4f%%, underflow %.3f%%.",
                ev, ovf_cur, unf_cur);
    if (isfinite(dlen1) && isfinite(dlen1024))
      st_observe(st, "A longer amax history (max over it) keeps the scale further below the current one.",
                  "mean |log2 ratio|: history 1 %.3f, history 1024 %.3f binades (margin 0).", dlen1, dlen1024);
    {
      double u = 0;
      int nu = 0;
      for (int i = 0; i < st->nrun; i++) {
        const srun *r = &st->run[i];
        if (r->lri || r->seedi || strcmp(r->tag, "delayed")) continue;
        st_read_stats(r, NULL, ca);
        if (ca->n) { u += st_mean_of(ca->under, ca->n); nu++; }
      }
      if (nu)
        st_observe(st, "Underflow under delayed scaling (scales at or below the current one) and current scaling.",
                    "mean underflow over the delayed runs %.4f%% vs current scaling %.4f%% of elements (step 0 left "
                    "out).",
                    u / nu, unf_cur);
    }
    double o0 = NAN, o1 = NAN;
    for (int i = 0; i < nd; i++) {
      if (strstr(names[i], "len=1 margin=0")) o0 = ovf[i];
      if (strstr(names[i], "len=1 margin=1")) o1 = ovf[i];
    }
    if (isfinite(o0))
      st_observe(st, "The lag makes delayed scaling overflow where current scaling does not; a margin reduces it.",
                  "overflow (history 1): margin 0 %.4f%%, margin 1 %.4f%%; current scaling %.4f%%.",
                  o0, o1, ovf_cur);
  }
  free(cg);
  free(ci);
  free(ca);
}
