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

/* A delayed run's amax history length and margin, read from its input
 * tensors' recipe (the arms' names are the study file's to choose); 0, or -1
 * when the recipe is not delayed scaling. */
static int delayed_of(const srun *r, int *len, int *margin) {
  exmy_recipe rc;
  char err[EXMY_ERRLEN];
  if (exmy_recipe_parse(r->cfg->prec.t[XP_INPUT].recipe, &rc, err, sizeof err) || rc.kind != EXMY_RECIPE_DELAYED)
    return -1;
  *len = rc.history_len;
  *margin = rc.margin;
  return 0;
}

void st_report_recipes(study *st, FILE *md) {
  tbl *t = st_tbl_new(9, "recipe", "final", "val", "diverged", "spikes", "overflow %", "underflow %", "ratio grad (geo)",
                   "ratio input (geo)");
  stat_curve *cg = malloc(sizeof *cg), *ci = malloc(sizeof *ci), *ca = malloc(sizeof *ca);
  double dev[16], ovf[16];
  int hist[16], marg[16]; /* the delayed runs' history length and margin */
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
    if (!strcmp(r->tag, "delayed") && nd < 16 && !delayed_of(r, &hist[nd], &marg[nd])) {
      double ad[2048];
      int k = 0;
      for (int j = 0; j < cg->n; j++) if (isfinite(lg[j])) ad[k++] = fabs(lg[j]);
      for (int j = 0; j < ci->n; j++) if (isfinite(li[j])) ad[k++] = fabs(li[j]);
      dev[nd] = k ? st_mean_of(ad, k) : NAN;
      ovf[nd] = ca->n ? st_mean_of(ca->over, ca->n) : NAN;
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
  const char *ref = st_arm_by(st, NULL, "ref", NAN); /* the study file tags its reference arm */
  if (ref) {
    char ttl[160];
    snprintf(ttl, sizeof ttl, "loss minus %s's loss per scaling recipe (seed 1)", ref);
    st_plot_gap(st, md, "loss-gap", ttl, ref, 0, 0, NULL, st_smooth_for(st));
  }
  /* scale ratio and overflow curves of the delayed runs (and current as the reference) */
  const char *kinds[] = {"grad", "input", "weight"};
  for (int kk = 0; kk < 3; kk++) {
    series s[16];
    int ns = 0;
    for (int i = 0; i < st->nrun && ns < 16; i++) {
      const srun *r = &st->run[i];
      int len, margin;
      if (r->lri || r->seedi || strcmp(r->tag, "delayed") || delayed_of(r, &len, &margin)) continue;
      st_read_stats(r, kinds[kk], cg);
      char lbl[64];
      snprintf(lbl, sizeof lbl, "delayed len=%d margin=%d", len, margin);
      st_series_alloc(&s[ns], cg->n + 1, lbl);
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
    /* the shortest and the longest history without a margin; the shortest history's smallest margin above 0 */
    int lo = -1, hi = -1, lm = -1;
    for (int i = 0; i < nd; i++) {
      st_cat(ev, sizeof ev, "len=%d margin=%d: mean |log2 ratio| %.3f, overflow %.4f%%; ", hist[i], marg[i], dev[i], ovf[i]);
      if (marg[i]) continue;
      if (lo < 0 || hist[i] < hist[lo]) lo = i;
      if (hi < 0 || hist[i] > hist[hi]) hi = i;
    }
    for (int i = 0; lo >= 0 && i < nd; i++)
      if (hist[i] == hist[lo] && marg[i] > 0 && (lm < 0 || marg[i] < marg[lm])) lm = i;
    st_observe(st, "The delayed/current scale ratio of each delayed-scaling run (published: TE's delayed scales lag a "
                "moving distribution).",
                "%scurrent scaling: overflow %.4f%%, underflow %.3f%%.",
                ev, ovf_cur, unf_cur);
    if (lo >= 0 && hist[hi] > hist[lo] && isfinite(dev[lo]) && isfinite(dev[hi]))
      st_observe(st, "The scale ratio's distance from 1 against the amax history's length (the scale from the max over "
                  "the history).",
                  "mean |log2 ratio|: history %d %.3f, history %d %.3f binades (margin 0).", hist[lo], dev[lo], hist[hi],
                  dev[hi]);
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
    if (lo >= 0 && isfinite(ovf[lo]))
      st_observe(st, "Overflow of delayed scaling without and with a margin, and of current scaling.",
                  "overflow (history %d): margin 0 %.4f%%, margin %d %.4f%%; current scaling %.4f%%.", hist[lo],
                  ovf[lo], lm >= 0 ? marg[lm] : 1, lm >= 0 ? ovf[lm] : NAN, ovf_cur);
  }
  free(cg);
  free(ci);
  free(ca);
}
