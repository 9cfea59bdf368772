/* study_rangeshift.c: the analysis of rangeshift.study (report = rangeshift):
 * the first FP8 step after a bf16 resume whose norms were shifted by 2^s
 * (the engine's range_shift), with and without calibration, against s. */
#include "experiments/study_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RS_MAXS 32   /* shift values */
#define RS_MAXSEED 64
#define RS_ABNORMAL 0.05 /* the calibration study's rule: > 5% above bf16 */

/* The continuation groups of the file (arm.X.group), in report order. */
static const struct {
  const char *group, *title;
} rs_groups[] = {
    {"nocal", "delayed, no calibration"},
    {"cal", "delayed, calibrate=1"},
    {"current", "current scaling"},
};
#define RS_NG (int)(sizeof rs_groups / sizeof rs_groups[0])

/* The loss of the first training step after the resume (NaN: none). */
static double first_after(const study *st, const srun *r) {
  const long at = st_own_start(st, r);
  if (r->failed || r->res.steps_done <= at || !r->res.loss) return NAN;
  return r->res.loss[at];
}

typedef struct rs_cell {
  int n, abnormal;
  double rel[RS_MAXSEED]; /* first-step loss / the bf16 continuation's - 1, per seed */
  double in_over, w_under; /* first step: input overflow %, weight underflow % (mean over seeds and layers) */
} rs_cell;

/* The relative excesses of group g at each shift, paired by seed with the
 * reference (tag ref).  Returns the number of shift values (sorted). */
static int rs_collect(study *st, double *shift, rs_cell (*cell)[RS_MAXS]) {
  double ref[RS_MAXSEED];
  for (int k = 0; k < RS_MAXSEED; k++) ref[k] = NAN;
  int ns = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (!strcmp(r->tag, "ref") && r->seedi < RS_MAXSEED) ref[r->seedi] = first_after(st, r);
    int known = 0;
    for (int g = 0; g < RS_NG; g++) known |= !strcmp(r->group, rs_groups[g].group);
    if (!known) continue;
    int j = 0;
    while (j < ns && shift[j] != r->x) j++;
    if (j == ns && ns < RS_MAXS) shift[ns++] = r->x;
  }
  for (int a = 1; a < ns; a++) /* insertion sort: a handful of values */
    for (int b = a; b > 0 && shift[b] < shift[b - 1]; b--) {
      const double t = shift[b];
      shift[b] = shift[b - 1], shift[b - 1] = t;
    }
  memset(cell, 0, sizeof(rs_cell) * RS_NG * RS_MAXS);
  stat_curve *c = malloc(sizeof *c);
  for (int i = 0; i < st->nrun && c; i++) {
    const srun *r = &st->run[i];
    int g = 0, j = 0;
    while (g < RS_NG && strcmp(r->group, rs_groups[g].group)) g++;
    while (j < ns && shift[j] != r->x) j++;
    if (g == RS_NG || j == ns || r->seedi >= RS_MAXSEED) continue;
    const double v = first_after(st, r), b = ref[r->seedi];
    if (!isfinite(b)) continue;
    rs_cell *x = &cell[g][j];
    const double rel = isfinite(v) ? v / b - 1 : INFINITY; /* a non-finite loss is abnormal */
    x->rel[x->n++] = rel;
    x->abnormal += rel > RS_ABNORMAL;
    st_read_stats(r, "input", c);
    if (c->n) x->in_over += c->over[0];
    st_read_stats(r, "weight", c);
    if (c->n) x->w_under += c->under[0];
  }
  free(c);
  for (int g = 0; g < RS_NG; g++)
    for (int j = 0; j < ns; j++)
      if (cell[g][j].n) cell[g][j].in_over /= cell[g][j].n, cell[g][j].w_under /= cell[g][j].n;
  return ns;
}

void st_report_rangeshift(study *st, FILE *md) {
  double shift[RS_MAXS];
  rs_cell(*cell)[RS_MAXS] = malloc(sizeof(rs_cell) * RS_NG * RS_MAXS);
  if (!cell) return;
  const int ns = rs_collect(st, shift, cell);
  tbl *t = st_tbl_new(1 + 2 * RS_NG + 2, "s", "no cal: excess", "no cal: abnormal", "cal: excess", "cal: abnormal",
                      "current: excess", "current: abnormal", "no cal: input over%", "no cal: weight under%");
  series sr[RS_NG];
  for (int g = 0; g < RS_NG; g++) {
    st_series_alloc(&sr[g], ns, rs_groups[g].title);
    st_series_bars(&sr[g], ns);
    sr[g].points = 1;
    sr[g].n = ns;
  }
  for (int j = 0; j < ns; j++) {
    st_tbl_cell(t, 0, "%g", shift[j]);
    for (int g = 0; g < RS_NG; g++) {
      const rs_cell *x = &cell[g][j];
      double lo = INFINITY, hi = -INFINITY;
      for (int k = 0; k < x->n; k++) lo = fmin(lo, x->rel[k]), hi = fmax(hi, x->rel[k]);
      const double m = x->n ? st_mean_of(x->rel, x->n) : NAN;
      st_tbl_cell(t, 1 + 2 * g, x->n ? "%+.2f%%" : "-", 100 * m);
      st_tbl_cell(t, 2 + 2 * g, "%d/%d", x->abnormal, x->n);
      sr[g].x[j] = shift[j];
      sr[g].y[j] = 100 * m;
      sr[g].lo[j] = x->n ? 100 * lo : NAN;
      sr[g].hi[j] = x->n ? 100 * hi : NAN;
    }
    st_tbl_cell(t, 1 + 2 * RS_NG, cell[0][j].n ? "%.3f" : "-", cell[0][j].in_over);
    st_tbl_cell(t, 2 + 2 * RS_NG, cell[0][j].n ? "%.2f" : "-", cell[0][j].w_under);
    st_tbl_end_row(t);
  }
  fprintf(md, "## The first FP8 step against the shift s\n\n"
              "Excess: the first training step's loss after the resume over the bf16 continuation's at the same "
              "seed, minus 1 (mean over seeds); abnormal: seeds more than %g%% above it (the calibration study's "
              "rule). The shift is function-preserving, so at s = 0 and in fp32 the first step's loss does not "
              "move; the last two columns are the first step's FP8 statistics without calibration (mean over "
              "layers and seeds).\n\n",
          100 * RS_ABNORMAL);
  st_tbl_emit(st, t, md, "first FP8 step after the resume, against the range shift s:");
  st_plot_draw(st, "rangeshift", "first FP8 step after a bf16 resume with norms x 2^s",
               "range shift s (norm gains x 2^s, next weights x 2^-s)",
               "first-step loss over bf16's, % (mean; bars: seed range)", 0, 0, RS_NG, sr, NAN);
  st_series_free(sr, RS_NG);
  st_md_plot(st, md, "rangeshift", "first FP8 step after a bf16 resume with norms x 2^s");

  /* the observations: abnormal seeds per shift (the claims decide) */
  int s_all = -1, any_nocal = 0, k_cal = 0, n_cal = 0;
  char ev[1200] = "";
  for (int j = 0; j < ns; j++) {
    const rs_cell *x = &cell[0][j], *y = &cell[1][j];
    any_nocal += x->abnormal;
    if (s_all < 0 && x->n && x->abnormal == x->n) s_all = j;
    st_cat(ev, sizeof ev, "%ss=%g: %d/%d", j ? ", " : "", shift[j], x->abnormal, x->n);
    if (x->abnormal) k_cal += y->abnormal, n_cal += y->n;
  }
  if (ns) {
    char where[48] = "at no s here";
    if (s_all >= 0) snprintf(where, sizeof where, "here from s = %g", shift[s_all]);
    st_observe(st, "The first FP8 step after a BF16 resume without an amax history, against the range shift "
                   "(published: abnormal once the activations leave e4m3's range at scale 1).",
                   "abnormal seeds without calibration (> %g%% above bf16 at the same seed): %s (every seed abnormal: %s).",
                   100 * RS_ABNORMAL, ev, where);
    double lo, hi;
    st_clopper_pearson(k_cal, n_cal, 0.95, &lo, &hi);
    st_observe(st, "The first FP8 step after a calibration step (high precision, fills the histories).",
                   "with calibrate=1, abnormal first steps at the shifts where the uncalibrated run had any: %d of %d "
                   "(95%% Clopper-Pearson [%.2f, %.2f])%s.",
                   k_cal, n_cal, lo, hi, n_cal ? "" : " (no uncalibrated run was abnormal)");
  }
  free(cell);
}
