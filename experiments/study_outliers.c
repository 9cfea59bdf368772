/* study_outliers.c: the analysis of the outliers study (report = outliers;
 * the runs are experiments/studies/outliers.study's arms crossed with
 * axis.weight_decay and paired seeds).  Each arm names its architecture and
 * controls in `group` (gelu, gelu ctl, swiglu, swiglu ctl) and its precision
 * in `tag` (fp32, hybrid, unscaled).  Per run, from its files:
 *   outlier magnitude  the last row of outliers.csv (st_outliers_row; the
 *                      first row for the attention logit's growth): max
 *                      |attention logit|, kurtosis, amax/rms of the GEMM
 *                      inputs, lse_max, SwiGLU gate/up |cos|;
 *   FP8 failure        the mean forward-input underflow and overflow % over
 *                      stats.csv's steps, and the validation-loss gap to the
 *                      fp32 run of the same group, weight decay and seed.
 * Numbers only (observations): paired differences by st_claim_paired (95%
 * Student's t CI of the mean), trends by Spearman's rho; verdicts are the
 * study file's claims. */
#include "experiments/study_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RHO_MIN_N 8

void st_outliers_row(char **name, const double *v, int n, st_outl *o) {
  o->logit = o->kurt = o->ratio = o->lse = o->cos = NAN;
  for (int i = 0; i < n; i++) {
    const char *c = name[i];
    const size_t len = strlen(c);
#define ENDS(s) (len >= sizeof(s) - 1 && !strcmp(c + len - (sizeof(s) - 1), s))
#define TAKE_MAX(f) (f = isnan(f) || v[i] > f ? v[i] : f)
    if (ENDS("logit_max")) TAKE_MAX(o->logit);
    else if (ENDS("kurtosis")) TAKE_MAX(o->kurt);
    else if (ENDS("gate_up_cos_max")) TAKE_MAX(o->cos);
    else if (!strcmp(c, "lse_max")) o->lse = v[i];
    else if (ENDS("_in_amax") && i + 1 < n && v[i + 1] > 0) {
      const double r = v[i] / v[i + 1];
      o->ratio = isnan(o->ratio) || r > o->ratio ? r : o->ratio;
    }
#undef TAKE_MAX
#undef ENDS
  }
}

/* what the analysis keeps of a run */
typedef struct orun {
  const srun *r;
  double wd;
  st_outl o, o0;                /* the last and the first outliers.csv rows */
  double under, over;           /* mean forward-input underflow / overflow %, NaN without stats */
  double val;                   /* validation loss; NaN when the run failed or diverged */
  int fp32;                     /* its tag is fp32 */
} orun;

/* One row of outliers.csv summarized (head: the header, cut in place). */
static void summarize(char *head, char *row, st_outl *o) {
  char *name[1024];
  double v[1024];
  const int n = st_csv_split(head, name, 1024);
  char *p = row;
  for (int i = 0; i < n; i++) {
    v[i] = strtod(p, &p);
    if (*p == ',') p++;
  }
  st_outliers_row(name + 1, v + 1, n - 1, o); /* column 0 is the step */
}

/* The first and last rows of DIR/outliers.csv.  0, or -1 when there are none. */
static int read_rows(const srun *r, st_outl *first, st_outl *o) {
  char path[XP_PATH + 32], head[8192], head2[8192], line[8192], row0[8192] = "", last[8192] = "";
  snprintf(path, sizeof path, "%s/outliers.csv", r->cfg->out_dir);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  if (!fgets(head, sizeof head, f)) {
    fclose(f);
    return -1;
  }
  while (fgets(line, sizeof line, f)) {
    if (!row0[0]) memcpy(row0, line, sizeof row0);
    memcpy(last, line, sizeof last);
  }
  fclose(f);
  if (!last[0]) return -1;
  memcpy(head2, head, sizeof head2);
  summarize(head, row0, first);
  summarize(head2, last, o);
  return 0;
}

static const orun *partner(const orun *o, int n, const orun *of, const char *group, int fp32) {
  for (int i = 0; i < n; i++)
    if (o[i].fp32 == fp32 && !strcmp(o[i].r->group, group) && !strcmp(o[i].r->point, of->r->point) &&
        o[i].r->seedi == of->r->seedi)
      return &o[i];
  return NULL;
}

static double gap_of(const orun *o, int n, const orun *x) {
  const orun *p = partner(o, n, x, x->r->group, 1);
  return p ? x->val - p->val : NAN;
}

/* Spearman over the pairs whose values are both finite: an observation */
static void trend(study *st, double *x, double *y, int n, const char *title, const char *what) {
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i]) && isfinite(y[i])) x[k] = x[i], y[k] = y[i], k++;
  const double rho = st_spearman(x, y, k);
  st_observe(st, title, "Spearman rho(%s) = %.2f over n = %d runs%s.", what, rho, k,
             k < RHO_MIN_N ? " (fewer runs than a trend needs)" : "");
}

/* control (group "G ctl") minus base (group G), fp32 runs, paired by weight
 * decay and seed: the paired gap of a metric with its CI (an observation) */
static void control_gap(study *st, const orun *o, int n, int field, const char *metric, const char *title) {
  double *a = malloc((size_t)(n ? n : 1) * sizeof *a), *b = malloc((size_t)(n ? n : 1) * sizeof *b);
  int *seed = malloc((size_t)(n ? n : 1) * sizeof *seed), k = 0;
  for (int i = 0; a && b && seed && i < n; i++) {
    const size_t gl = strlen(o[i].r->group);
    if (!o[i].fp32 || gl < 4 || strcmp(o[i].r->group + gl - 4, " ctl")) continue;
    char base[64];
    snprintf(base, sizeof base, "%.*s", (int)(gl - 4), o[i].r->group);
    const orun *p = partner(o, n, &o[i], base, 1);
    if (!p) continue;
    a[k] = field ? o[i].o.lse : o[i].o.logit - o[i].o0.logit;
    b[k] = field ? p->o.lse : p->o.logit - p->o0.logit;
    seed[k++] = o[i].r->seedi; /* a seed's pairs (architectures, weight decays) are one unit */
  }
  st_claim c;
  st_claim_paired(a, b, seed, k, &c);
  st_observe(st, title,
                 "%s, controls minus base (fp32 runs, paired by architecture, weight decay and seed) over n = %d "
                 "pairs: mean %+.3f, 95%% CI [%+.3f, %+.3f] (Student's t over the %d seeds' mean gaps).",
                 metric, c.n, c.mean, c.lo, c.hi, c.nclust);
  free(a);
  free(b);
  free(seed);
}

/* The trends: which runs enter (1) with their x and y. */
static int pick_align(const orun *o, int n, const orun *r, double *x, double *y) {
  (void)o, (void)n;
  if (!r->fp32 || strcmp(r->r->group, "swiglu")) return 0;
  *x = r->wd, *y = r->o.cos;
  return 1;
}
static int pick_logit(const orun *o, int n, const orun *r, double *x, double *y) {
  (void)o, (void)n;
  if (!r->fp32 || strstr(r->r->group, "ctl")) return 0;
  *x = r->wd, *y = r->o.logit;
  return 1;
}
static int pick_gap(const orun *o, int n, const orun *r, double *x, double *y) {
  if (strcmp(r->r->tag, "unscaled")) return 0;
  const orun *p = partner(o, n, r, r->r->group, 1);
  *x = p ? p->o.ratio : NAN, *y = gap_of(o, n, r);
  return 1;
}
static int pick_flow(const orun *o, int n, const orun *r, double *x, double *y) {
  (void)o, (void)n;
  if (r->fp32) return 0;
  *x = r->o.ratio, *y = r->under + r->over;
  return 1;
}
static const struct {
  int (*pick)(const orun *o, int n, const orun *r, double *x, double *y);
  const char *title, *what;
} TRENDS[] = {
  {pick_align,
   "SwiGLU's gate/up weight alignment against weight decay (Fishman et al. 2024: weight decay drives SwiGLU "
   "weight alignment, which grows outliers under FP8).",
   "weight decay, max gate/up |cos|; swiglu fp32"},
  {pick_logit, "Dose-response: the max attention logit against weight decay (fp32, no controls).",
   "weight decay, max attention logit; gelu and swiglu fp32"},
  {pick_gap,
   "Unscaled e4m3fn forward operands: the validation-loss gap against the fp32 run's outlier magnitude "
   "(published: FP8 failure tracks outlier magnitude; He et al. 2024; Fishman et al. 2024).",
   "the fp32 run's max amax/rms, the FP8 run's val gap; unscaled arms"},
  {pick_flow,
   "FP8 forward inputs: underflow plus overflow against their amax/rms.",
   "the run's max amax/rms, its input underflow + overflow %; FP8 arms"},
};

static void cell_num(tbl *t, int col, double v) {
  char b[32];
  st_fmt_num(v, b, sizeof b);
  st_tbl_cell(t, col, "%s", b);
}

/* The dose-response figure: each fp32 arm's max attention logit against
 * weight decay, mean over seeds with min..max bars. */
static void plot_dose(study *st, FILE *md, const orun *o, int n) {
  enum { MAXS = 8, MAXP = 16 };
  series sr[MAXS];
  int cnt[MAXS][MAXP], ns = 0;
  for (int i = 0; i < n && ns < MAXS; i++) {
    int seen = !o[i].fp32;
    for (int c = 0; c < ns; c++) seen |= !strcmp(sr[c].title, o[i].r->arm);
    if (seen) continue;
    series *s = &sr[ns];
    int *m = cnt[ns++];
    st_series_alloc(s, MAXP, o[i].r->arm);
    st_series_bars(s, MAXP);
    s->points = 1;
    for (int j = i; j < n; j++) {
      if (strcmp(o[j].r->arm, o[i].r->arm) || !isfinite(o[j].o.logit)) continue;
      int k = 0;
      while (k < s->n && s->x[k] != o[j].wd) k++;
      if (k == MAXP) continue;
      if (k == s->n) s->n++, s->x[k] = o[j].wd, s->y[k] = 0, s->lo[k] = INFINITY, s->hi[k] = -INFINITY, m[k] = 0;
      const double v = o[j].o.logit;
      s->y[k] += v, m[k]++;
      s->lo[k] = v < s->lo[k] ? v : s->lo[k];
      s->hi[k] = v > s->hi[k] ? v : s->hi[k];
    }
    for (int k = 0; k < s->n; k++) s->y[k] /= m[k];
  }
  const char *ttl = "max attention logit at the end vs weight decay (fp32 arms): mean over seeds, bars min..max";
  st_plot_draw(st, "logit-vs-wd", ttl, "weight decay", "max |attention logit|", 0, 0, ns, sr, NAN);
  st_series_free(sr, ns);
  st_md_plot(st, md, "logit-vs-wd", ttl);
}

void st_report_outliers(study *st, FILE *md) {
  orun *o = calloc((size_t)(st->nrun ? st->nrun : 1), sizeof *o);
  if (!o) return;
  int n = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (!r->done || r->missing) continue;
    orun *x = &o[n++];
    x->r = r;
    x->wd = r->cfg->weight_decay;
    x->fp32 = !strcmp(r->tag, "fp32");
    if (read_rows(r, &x->o0, &x->o)) x->o.logit = x->o.kurt = x->o.ratio = x->o.lse = x->o.cos = x->o0.logit = NAN;
    stat_curve sc;
    st_read_stats(r, "input", &sc);
    x->under = sc.n ? st_mean_of(sc.under, sc.n) : NAN;
    x->over = sc.n ? st_mean_of(sc.over, sc.n) : NAN;
    x->val = r->failed || st_run_diverged(r) ? NAN : r->res.val_loss;
  }

  /* the dose-response table: means over seeds per arm and weight decay */
  fprintf(md, "## Outlier magnitude and FP8 failure per arm and weight decay\n\n"
              "Means over seeds of each run's last outliers.csv row (the largest value over blocks and GEMM "
              "inputs) and, for FP8 arms, forward-input underflow/overflow %% (mean over stats.csv's steps) and "
              "the validation-loss gap to the fp32 run of the same architecture, weight decay and seed.\n\n");
  tbl *t = st_tbl_new(11, "arm", "wd", "n", "logit max", "amax/rms", "kurtosis", "lse max", "gate/up cos",
                      "under %", "over %", "val gap");
  for (int i = 0; t && i < n; i++) {
    int seen = 0;
    for (int j = 0; j < i; j++) seen |= !strcmp(o[j].r->arm, o[i].r->arm) && o[j].wd == o[i].wd;
    if (seen) continue;
    double v[8][64];
    int k = 0;
    for (int j = i; j < n && k < 64; j++) {
      if (strcmp(o[j].r->arm, o[i].r->arm) || o[j].wd != o[i].wd) continue;
      v[0][k] = o[j].o.logit, v[1][k] = o[j].o.ratio, v[2][k] = o[j].o.kurt, v[3][k] = o[j].o.lse;
      v[4][k] = o[j].o.cos, v[5][k] = o[j].under, v[6][k] = o[j].over;
      v[7][k] = o[j].fp32 ? NAN : gap_of(o, n, &o[j]);
      k++;
    }
    st_tbl_cell(t, 0, "%s", o[i].r->arm);
    st_tbl_cell(t, 1, "%g", o[i].wd);
    st_tbl_cell(t, 2, "%d", k);
    for (int c = 0; c < 8; c++) cell_num(t, 3 + c, st_mean_of(v[c], k));
    st_tbl_end_row(t);
  }
  if (t) st_tbl_emit(st, t, md, "outlier magnitude and FP8 failure (means over seeds):");
  plot_dose(st, md, o, n);

  /* trends, then the controls */
  double *x = malloc((size_t)(n ? n : 1) * sizeof *x), *y = malloc((size_t)(n ? n : 1) * sizeof *y);
  for (size_t d = 0; x && y && d < sizeof TRENDS / sizeof TRENDS[0]; d++) {
    int k = 0;
    for (int i = 0; i < n; i++) k += TRENDS[d].pick(o, n, &o[i], &x[k], &y[k]);
    trend(st, x, y, k, TRENDS[d].title, TRENDS[d].what);
  }
  control_gap(st, o, n, 0, "growth of the max attention logit (last outliers.csv row minus the first)",
              "qk-layernorm (with z-loss) against none: the growth of the max attention logit (Wortsman et al. 2023: "
              "qk-layernorm prevents attention-logit growth).");
  control_gap(st, o, n, 1, "lse max",
              "z-loss (with qk-layernorm) against none: the output logits' logsumexp (Wortsman et al. 2023: z-loss "
              "prevents output-logit divergence).");
  free(x);
  free(y);
  free(o);
}
