/* study_delayedlag.c: the analysis of delayedlag.study (report = delayedlag):
 * a scheduled distribution shift mid-run: a function-preserving range shift
 * (range_shift at range_shift_step: every norm-fed tensor's range moves at
 * once), an LR warm restart (lr_restart) or a data switch (data_switch: the
 * same text under other token ids); how many steps each scaling recipe needs
 * before its scales are back where they were (the lag of delayed scaling,
 * Transformer Engine's history). */
#include "experiments/study_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DL_PRE 10     /* statistics steps before the shift that give the level it returns to */
#define DL_TOL 0.5    /* back: within half a binade (a factor 1.41) of that level */
#define DL_LONG 16    /* "lags": at least this many steps in every seed */
#define DL_MAXEV 8

/* The FP8 arms (tag) in report order, and the tensor kinds measured. */
static const struct {
  const char *tag, *title;
} dl_arms[] = {{"current", "current scaling"}, {"d16", "delayed, history 16"}, {"d1024", "delayed, history 1024 (TE)"}};
#define DL_NA (int)(sizeof dl_arms / sizeof dl_arms[0])
static const char *const dl_kinds[] = {"input", "weight", "grad"};
#define DL_NK 3

/* The kinds of shift: a run's step of it (-1: none), its label, and the tensor kind
 * its plot shows (the one whose range falls, which a history's maximum holds on to). */
static long ev_range(const xp_config *c) { return c->range_shift && c->range_shift_step >= 0 ? c->range_shift_step : -1; }
static long ev_restart(const xp_config *c) { return c->lr_restart > 0 ? c->lr_restart : -1; }
static long ev_switch(const xp_config *c) { return c->data_switch > 0 ? c->data_switch : -1; }
static const struct {
  long (*at)(const xp_config *c);
  const char *label, *what;
} dl_events[] = {
  {ev_range, "range shift s=%+d", "every norm's gain and bias multiplied by 2^s and the weights they feed by 2^-s: the "
                                  "same function, with the inputs of qkv, fc and lm_head 2^s larger and their weights "
                                  "2^s smaller"},
  {ev_restart, "LR warm restart", "the learning rate jumps back to its peak and decays by a second cosine (SGDR)"},
  {ev_switch, "data switch", "the text continues under other token ids (t -> vocab-1-t): the embeddings and lm_head "
                             "rows in use change, the loss jumps"},
};
#define DL_NEV (int)(sizeof dl_events / sizeof dl_events[0])

/* A run's shift: its label (in ev, DL_NEV: none) and step. */
static long dl_event(const srun *r, char *label, size_t n, int *ev) {
  for (int e = 0; e < DL_NEV; e++) {
    const long at = dl_events[e].at(r->cfg);
    if (at < 0) continue;
    snprintf(label, n, dl_events[e].label, r->cfg->range_shift);
    *ev = e;
    return at;
  }
  *ev = DL_NEV;
  return -1;
}

/* The plotted kind: for a range shift the one whose range falls (s > 0: weights, s < 0:
 * inputs); for the others the gradients. */
static const char *dl_plot_kind(const srun *r, int ev) {
  return dl_events[ev].at != ev_range ? "grad" : r->cfg->range_shift > 0 ? "weight" : "input";
}

/* The scale of kind against the current (ideal) one, log2 (binades; mean
 * over layers), at each statistics step of run r: *pre its mean over the
 * DL_PRE steps before `at`, *lag the steps after `at` until it is back
 * within DL_TOL binades of it (-1: never, within the run), *peak its
 * largest distance after, *flow the largest under- plus overflow % after. */
static int dl_curve(const srun *r, const char *kind, long at, stat_curve *c, double *pre, long *lag, double *peak,
                    double *flow) {
  st_read_stats(r, kind, c);
  double acc = 0;
  int npre = 0, i0 = -1;
  for (int i = 0; i < c->n; i++) {
    if (c->step[i] < at && c->step[i] >= at - DL_PRE && isfinite(c->ratio[i])) acc += log2(c->ratio[i]), npre++;
    if (c->step[i] >= at && i0 < 0) i0 = i;
  }
  *pre = npre ? acc / npre : NAN;
  *lag = -1;
  *peak = *flow = NAN;
  if (!npre || i0 < 0) return 0;
  *peak = *flow = 0;
  for (int i = i0; i < c->n; i++) {
    const double d = fabs(log2(c->ratio[i]) - *pre);
    *peak = fmax(*peak, d);
    *flow = fmax(*flow, c->under[i] + c->over[i]);
    if (*lag < 0 && d <= DL_TOL) *lag = (long)(c->step[i] - at);
  }
  return 1;
}

void st_report_delayedlag(study *st, FILE *md) {
  /* the shifts in the study (label, step, kind), in run order; rq[i]: run i's shift (-1: none) */
  char evl[DL_MAXEV][48];
  long evat[DL_MAXEV], last = 0;
  int evk[DL_MAXEV], nev = 0;
  int *rq = malloc(((size_t)st->nrun + 1) * sizeof *rq);
  if (!rq) return;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    char l[48];
    int k;
    const long at = dl_event(r, l, sizeof l, &k);
    last = r->cfg->steps;
    int j = 0;
    while (j < nev && strcmp(evl[j], l)) j++;
    if (at >= 0 && j == nev && nev < DL_MAXEV) snprintf(evl[nev], sizeof evl[0], "%s", l), evat[nev] = at, evk[nev++] = k;
    rq[i] = at >= 0 && j < nev ? j : -1;
  }
  stat_curve *c = nev ? malloc(sizeof *c) : NULL;
  if (!c) {
    free(rq);
    return;
  }
  tbl *t = st_tbl_new(7, "recipe", "shift", "tensor", "scale off before", "largest off after", "lag, steps (per seed)",
                      "lags");
  /* long_all[a]: some (shift, kind) where every seed lags >= DL_LONG; short_all[a]: every seed <= 1 everywhere;
   * long_ev[q]: the TE default lags so after shift q */
  int long_all[DL_NA] = {0}, short_all[DL_NA], long_ev[DL_MAXEV] = {0}, nseed_min = 1 << 30;
  for (int a = 0; a < DL_NA; a++) short_all[a] = 1;
  for (int a = 0; a < DL_NA; a++)
    for (int q = 0; q < nev; q++)
      for (int k = 0; k < DL_NK; k++) {
        char lags[160] = "";
        double pre_acc = 0, peak = 0, flow = 0;
        int n = 0, nlong = 0;
        for (int i = 0; i < st->nrun; i++) {
          const srun *r = &st->run[i];
          if (strcmp(r->tag, dl_arms[a].tag) || r->failed || rq[i] != q) continue;
          double pre, pk, fl;
          long lag;
          if (!dl_curve(r, dl_kinds[k], evat[q], c, &pre, &lag, &pk, &fl)) continue;
          n++;
          pre_acc += pre;
          peak = fmax(peak, pk);
          flow = fmax(flow, fl);
          if (lag < 0) st_cat(lags, sizeof lags, "%s>%ld", n > 1 ? " " : "", last - 1 - evat[q]);
          else st_cat(lags, sizeof lags, "%s%ld", n > 1 ? " " : "", lag);
          nlong += lag < 0 || lag >= DL_LONG;
          if (lag != 0 && lag != 1) short_all[a] = 0;
        }
        if (!n) continue;
        nseed_min = n < nseed_min ? n : nseed_min;
        if (nlong == n) long_all[a] = 1, long_ev[q] |= a == DL_NA - 1;
        st_tbl_cell(t, 0, "%s", dl_arms[a].title);
        st_tbl_cell(t, 1, "%s", evl[q]);
        st_tbl_cell(t, 2, "%s", dl_kinds[k]);
        st_tbl_cell(t, 3, "%+.2f", pre_acc / n);
        st_tbl_cell(t, 4, "%.2f (%.1f%%)", peak, flow);
        st_tbl_cell(t, 5, "%s", lags);
        st_tbl_cell(t, 6, "%d/%d", nlong, n);
        st_tbl_end_row(t);
      }
  fprintf(md, "## The scales around the shift\n\nThe shifts:\n\n");
  int said[DL_NEV] = {0};
  for (int q = 0; q < nev; q++)
    if (!said[evk[q]]++) fprintf(md, "- %s at step %ld: %s.\n", evl[q], evat[q], dl_events[evk[q]].what);
  fprintf(md, "\nPer recipe, shift and tensor kind: the scale the recipe used against the current (ideal) scale, "
              "log2, mean over layers (`scale_ratio` of stats.csv; 0 = the tensor's amax maps to the format's "
              "largest value); before: its mean over the %d steps before the shift (delayed scaling's margin and "
              "history keep it a little off); largest off after: the largest distance from that level after the "
              "shift in binades (in brackets the largest under- plus overflow %%); lag: the steps after the shift "
              "until it is back within %g binade (\">N\": not within the run). `lags`: seeds whose lag is %d "
              "steps or more.\n\n",
          DL_PRE, DL_TOL, DL_LONG);
  st_tbl_emit(st, t, md, "scales around the shift (log2 of used / ideal):");

  /* the time series of seed 1 for each shift */
  for (int q = 0; q < nev; q++) {
    series sr[DL_NA];
    int ns = 0;
    const char *kind = "grad";
    for (int a = 0; a < DL_NA; a++) {
      const srun *r = NULL;
      for (int i = 0; i < st->nrun && !r; i++)
        if (!strcmp(st->run[i].tag, dl_arms[a].tag) && st->run[i].seedi == 0 && !st->run[i].failed && rq[i] == q)
          r = &st->run[i];
      if (!r) continue;
      kind = dl_plot_kind(r, evk[q]);
      st_read_stats(r, kind, c);
      st_series_alloc(&sr[ns], c->n + 1, dl_arms[a].title);
      sr[ns].points = 1;
      int m = 0;
      for (int i = 0; i < c->n; i++)
        if (c->step[i] >= evat[q] - DL_PRE) sr[ns].x[m] = c->step[i] - evat[q], sr[ns].y[m++] = log2(c->ratio[i]);
      sr[ns++].n = m;
    }
    char stem[48], title[256], yl[96];
    st_safe_name(evl[q], stem, sizeof stem);
    snprintf(title, sizeof title, "%s scales around a %.47s at step %ld (seed 1)", kind, evl[q], evat[q]);
    snprintf(yl, sizeof yl, "%s scale / current scale, log2 (mean over layers)", kind);
    st_plot_draw(st, stem, title, "steps after the shift", yl, 0, 0, ns, sr, NAN);
    st_series_free(sr, ns);
    st_md_plot(st, md, stem, title);
  }
  free(c);
  free(rq);

  const int d = DL_NA - 1; /* the TE default history */
  if (nseed_min == 1 << 30) return;
  char which[256] = "";
  for (int q = 0; q < nev; q++)
    if (long_ev[q]) st_cat(which, sizeof which, "%s%s", which[0] ? ", " : "", evl[q]);
  st_observe(st, "The scales' lag after a shift: delayed scaling (amax history) against current scaling (published: "
                 "delayed scales lag a moving distribution).",
                 "%s: every seed lagged %d steps or more for some shift and tensor: %s%s%s%s; current scaling back "
                 "within %g binade in 0-1 steps everywhere: %s; %s, every seed %d steps or more for some shift and "
                 "tensor: %s (over %d seeds).",
                 dl_arms[d].title, DL_LONG, long_all[d] ? "yes" : "no", which[0] ? " (after: " : "", which,
                 which[0] ? ")" : "", DL_TOL, short_all[0] ? "yes" : "no", dl_arms[1].title, DL_LONG,
                 long_all[1] ? "yes" : "no", nseed_min);
}
