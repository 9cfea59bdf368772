/* study_int.h: what the parts of the study machinery share (not installed;
 * the public face is study.h).  One file per concept:
 *   study.c          finding the study files and the driver (study_main)
 *   study_hooks.c    the table of the C analyses (report = NAME)
 *   study_file.c     reading and checking a study file, its runs set up
 *   study_keys.c     what a read study file holds (keys at a size, value lists)
 *   study_util.c     formatting, JSON text, findings
 *   study_stats.c    statistics over runs (mean, sd, rank correlation)
 *   study_runner.c   runs, their configs, the parallel runner, per-run data
 *   study_state.c    run state between invocations (ids, results saved)
 *   study_cfgtext.c  a config as text lines (what a run's id and state hash)
 *   study_table.c    tables (markdown and console) and gnuplot plots
 *   study_report.c   runs.csv, summary.json, report.md's common sections
 *   study_gemm.c     a study file's direct GEMM experiment (gemm.* keys)
 *   study_NAME.c     one built-in study's analysis (report = NAME) */
#ifndef EXMY_STUDY_INT_H
#define EXMY_STUDY_INT_H
#include "experiments/study.h"
#include "experiments/xp.h"

#include <stdint.h>
#include <stdio.h>


#define MAX_KV 24
#define ST_NAMELEN 160 /* a run's name: its arm's and its axis values */
#define MAX_BASE 32
#define MAX_LR 16
#define MAX_FIND 16
#define MAX_PLOTS 24

typedef struct kv { char k[48]; char v[300]; } kv;

typedef struct srun {
  char name[ST_NAMELEN];        /* the config's name (e8m3 rtz, hybrid delayed ...) and axis values */
  char group[64];               /* plotting group */
  char tag[32];                 /* study-specific tag (rounding, model ...) */
  double x;                     /* study-specific number (mantissa bits, width ...) */
  char label[ST_NAMELEN + 48];  /* name [lr=] [seed=] */
  char dir[ST_NAMELEN + 48];    /* folder under DIR/runs (the label, made safe; unique: check_dirs) */
  double lr;
  unsigned long long seed;
  int lri, seedi, phase;
  int nkv;
  kv kv[MAX_KV];
  xp_config *cfg;               /* the engine config (st->cfgs[i], made by st_build_configs) */
  xp_result res;
  int done, failed;
  int reused;                   /* its result was read from an earlier invocation */
  int resumed;                  /* it continued from its checkpoint */
  int missing;                  /* --report or another shard: not run yet */
  char id[24];                  /* hash of the resolved config (study_state.c) */
  char arm[64], point[ST_NAMELEN]; /* study files: the arm and the axis values (" k=v ...") */
  char ref[64];                 /* its own reference arm (arm.X.reference); "": the file's reference */
  int nonconv;                  /* the non-convergence rule (study_claims.c) */
  int undertrained;             /* far above the reference's best over the learning rates (study_claims.c) */
  int refweak;                  /* the reference's run at the same seed, lr and point is under-trained (study_claims.c) */
  int parent;                   /* from = ARM: the run whose final checkpoint it starts from (-1: none) */
  long more_steps;              /* with a parent: train this many steps past its checkpoint (0: the config's steps) */
  int keep_ckpt;                /* a later run starts from this run's checkpoint: keep it */
  char err[EXMY_ERRLEN];
} srun;

/* Verdict words (study_claims.c decides them; nothing else does). */
enum { ST_V_INCONCLUSIVE = -1, ST_V_NOT_REPRODUCED = 0, ST_V_REPRODUCED = 1, ST_V_OBSERVATION = 2, ST_V_NOT_TESTABLE = 3 };
#define ST_MIN_SEEDS 5          /* paired seeds below which every verdict is inconclusive */
typedef struct finding {
  int verdict;                  /* ST_V_*: observations come from analyses, the rest from claims */
  char claim[400];
  char evidence[1600];
} finding;

/* A study file (study_file.c): its checked lines, each with its size
 * (-1: every size, else STUDY_TINY / STUDY_FULL from a tiny./full. prefix). */
#define ST_VALLEN 600
#define ST_MAXVAL 64
#define ST_MAXAXIS 8
#define ST_MAXARM 64
/* A study's runs at most: each run's record is about 45 KB, so 20,000 runs
 * hold about 1 GB before any training. */
#define ST_MAXRUNS 20000
typedef struct sf_line { int ln, size; char key[128]; char val[ST_VALLEN]; } sf_line;
typedef struct study_file {
  char path[XP_PATH];
  int nline;
  sf_line *line;
  unsigned char *eff; /* eff[size * nline + i]: line i is in effect at size (made once by st_file_read) */
} study_file;


typedef struct study study;

/* The metric registry (study_metric.c): what claims, tables and plots name. */
enum { ST_MK_VALUE, ST_MK_RATE, ST_MK_EDGE };
typedef struct st_metric {
  const char *name, *what;
  int kind;                     /* ST_MK_VALUE: a number per run; ST_MK_RATE: 0 or 1 per run; ST_MK_EDGE: an arm's
                                   number over the learning-rate axis (study_edge.c), run is NULL */
  int fail_worst;               /* VALUE: a failed run ranks worst (st_metric_run gives +inf), never dropped */
  double (*run)(const study *st, const srun *r);
} st_metric;
const st_metric *st_metric_find(const char *name);
/* A claim's precondition "METRIC > X" or "METRIC >= X", METRIC a per-run (VALUE)
 * metric: 0 with *m, *ge (1 for >=) and *x, or -1 when the text is not one */
int st_requires_parse(const char *text, const st_metric **m, int *ge, double *x);
const st_metric *st_metric_at(int i);
void st_metric_names(char *buf, size_t n);
/* A run's value: NAN when it has none (not run, an error), +inf for a failed run of a fail_worst metric. */
double st_metric_run(const st_metric *m, const study *st, const srun *r);
typedef struct study_def {
  const char *name, *desc;
  const char *published;        /* the published result (docs/studies.md), for the report */
  void (*report)(study *st, FILE *md);
} study_def;

struct study {
  const study_def *def;
  const study_file *file;       /* the study file (NULL: a study defined in C) */
  const study_opts *o;
  FILE *log;
  char dir[XP_PATH];
  study_size size;
  long steps;                   /* resolved: --steps or the study's default */
  int nseeds, nlr;
  int first_seed;                /* seeds first_seed .. first_seed + nseeds - 1 (fresh seeds for a confirmation) */
  double lr[MAX_LR];
  double lr0;                   /* the engine's default learning rate */
  int lrs_given;
  int nlr_refined;               /* learning rates added from DIR/refine.lrs (study_refine.c) */
  int nbase;
  kv base[MAX_BASE];
  int nrun, cap;
  srun *run;
  xp_config *cfgs;              /* the runs' configs, one block (st_build_configs) */
  int nfind;
  finding find[MAX_FIND];
  int gnuplot;
  int nplot;
  char plot[MAX_PLOTS][64];
  double seconds;
  int threads;
  char note[2048];              /* extra lines for the report's setup (study-specific) */
  int nclaim;                    /* study files' claims, evaluated (study_claims.c) */
  struct st_claim_row *claim;
  struct st_gemm *gemm;         /* the file's gemm.* experiment (NULL: none; study_gemm.c) */
};


#define TBL_COLS 14
/* A table's rows grow as cells are written (a full ladder's 1,080 runs are
 * one table): no row is ever dropped. */
typedef struct tbl {
  int ncol, nrow, cap;
  char h[TBL_COLS][48];
  char (*c)[TBL_COLS][64];
} tbl;

/* Aggregate over runs with config name `name` (and lr index lri unless -1). */
typedef struct agg {
  int n, ndiv, nfail, nfinal;
  long spikes, steps;
  double final_mean, final_sd, val_mean, min_mean, first_mean;
} agg;

typedef struct stat_curve {     /* per stats step: one tensor kind of one run */
  int n;
  double step[1024], ratio[1024], over[1024], under[1024];
} stat_curve;

typedef struct series {
  char title[96];
  int n;
  double *x, *y;
  double *lo, *hi;              /* error bars (seed bands) when not NULL: st_series_bars */
  int points;                   /* 1: linespoints */
  int mark;                     /* bounds, not points: +1 the value lies above each marker (open triangle up), -1
                                   below (open triangle down); drawn without a line or a key entry of their own */
  int lt, pt;                   /* the line type (colour) and point type (0: by the series' position) */
} series;

double st_now_s(void);
void st_safe_name(const char *in, char *out, size_t n);
void st_fmt_lr(double lr, char *buf, size_t n);
void st_fmt_num(double v, char *buf, size_t n);
void st_fmt_time(double s, char *buf, size_t n);
void st_json_str(FILE *f, const char *s);
void st_json_num(FILE *f, double v);
const char *st_verdict_name(int v);
/* A claim's verdict (study_claims.c only). */
void st_verdict_add(study *st, int verdict, const char *claim, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
/* An analysis's observation: numbers, never a verdict. */
void st_observe(study *st, const char *what, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void st_cat(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* axis points (" KEY=VALUE ..."): SEL's KEY=VALUE tokens all in POINT; KEY's number (0, or -1: none) */
int st_point_match(const char *point, const char *sel);
int st_point_value(const char *point, const char *key, double *v);
double st_mean_of(const double *v, int n);
double st_sd_of(const double *v, int n);
double st_spearman(const double *x, const double *y, int n);
void st_base_kv(study *st, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A config ("key=value" strings) crossed with every learning rate and seed. */
void st_add_cfgv(study *st, const char *name, const char *group, double x, const char *tag, int phase,
                 const char *const *kvs, int nk);
int st_build_configs(study *st, char *err, size_t errlen);
void st_run_all(study *st);
int st_run_mine(const study *st, int i);
int st_run_diverged(const srun *r);
/* The claims' failure rule: diverged, or did not converge (r->nonconv, from st_rules_eval) */
int st_run_failed(const srun *r);
/* The index in r's loss array of its first own training step: 0, or for a
 * continuation (from = ARM) the step after its parent's checkpoint (its loss
 * array keeps the parent's steps before it) */
long st_own_start(const study *st, const srun *r);
/* "yes (from step N)", "no" or "no (excursion at step N)" (st_run_diverged's word) */
void st_fmt_diverged(const srun *r, char *buf, size_t n);
agg st_aggregate(const study *st, const char *name, int lri);
/* The sd over seeds of the paired final-loss difference a - b (same learning rate and
 * seed; failed and diverged runs left out): the noise a paired gap is read against */
double st_paired_sd(const study *st, const char *a, const char *b, int lri);
const srun *st_find_run(const study *st, const char *name, int lri, int seedi);
/* The name of the first run (file order) whose group, tag and x are these
 * (a NULL group or tag, a NaN x: any), NULL when none.  Analyses find arms by
 * what the study file declares of them (arm.ID.group, .tag, .x), never by
 * their names, so renaming an arm changes no number (tests/test_no_arm_names.sh). */
const char *st_arm_by(const study *st, const char *group, const char *tag, double x);
void st_read_stats(const srun *r, const char *kind, stat_curve *c);
/* A small CSV reader for the engine's outputs (quoted fields allowed): line
 * cut in place into at most max fields (the line end dropped); their count. */
int st_csv_split(char *line, char **f, int max);
tbl *st_tbl_new(int ncol, ...);
void st_tbl_cell(tbl *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void st_agg_cells(tbl *t, const char *name, const agg *a, const agg *ref);
void st_tbl_end_row(tbl *t);
void st_tbl_emit(study *st, tbl *t, FILE *md, const char *console_title);
void st_series_free(series *s, int n);
void st_series_alloc(series *s, int n, const char *title);
void st_series_bars(series *s, int n);
int st_smooth_for(const study *st);
void st_gnuplot_run(study *st, const char *stem);
void st_plot_draw(study *st, const char *stem, const char *title, const char *xl, const char *yl, int logx, int logy,
                      int ns, series *s, double ycap);
void st_gp_palette(FILE *g);
/* in quoted for a gnuplot single-quoted string ('' for a quote) into out */
void st_gp_quote(const char *in, char *out, size_t n);
void st_plot_seed_bands(study *st, FILE *md, const char *stem, const char *title, int lri, int smooth);
void st_gp_terminal(FILE *g, const char *stem, int png);
void st_md_plot(const study *st, FILE *md, const char *stem, const char *caption);
void st_plot_losses(study *st, FILE *md, const char *stem, const char *title, int lri, int seedi,
                        int (*pick)(const srun *r), int smooth, long from, long to);
void st_plot_gap(study *st, FILE *md, const char *stem, const char *title, const char *ref, int lri, int seedi,
                     int (*pick)(const srun *r), int smooth);
void st_write_runs_csv(study *st);
void st_write_summary_json(study *st);
void st_report_setup(study *st, FILE *md);
/* The testbed in one paragraph (model, parameters, corpus, tokens, seeds, learning rates), after LEAD. */
void st_report_testbed(const study *st, FILE *md, const char *lead);
void st_report_runs_table(study *st, FILE *md);
void st_report_findings(study *st, FILE *md);
void st_report_console_findings(study *st);
void st_report_mantissa(study *st, FILE *md);
void st_report_recipes(study *st, FILE *md);
void st_report_fallback(study *st, FILE *md);
void st_report_calibration(study *st, FILE *md);
void st_report_accumulation(study *st, FILE *md);
void st_report_rounding(study *st, FILE *md);
void st_report_lrsweep(study *st, FILE *md);
void st_report_rangeshift(study *st, FILE *md);
void st_report_delayedlag(study *st, FILE *md);
void st_report_failsafe(study *st, FILE *md);
void st_report_outliers(study *st, FILE *md);
/* The last row of a run's outliers.csv summarized (study_outliers.c): the
 * largest max |attention logit|, kurtosis, amax/rms of a GEMM input
 * (X_in_amax over the X_in_rms beside it) and gate/up |cos| over the blocks,
 * and lse_max; NaN for what the columns do not have. */
typedef struct st_outl { double logit, kurt, ratio, lse, cos; } st_outl;
void st_outliers_row(char **name, const double *v, int n, st_outl *o);
/* learning-rate sweeps (study_lrsweep.c); loss[i] over learning rates in
 * ascending order, +inf for a failed run */
int st_lr_max_index(const double *loss, int nlr, double best, double delta);
double st_lr_sensitivity(const double *loss, int nlr, double l0);

/* paired claims (study_stats.c) */
#define ST_NRULE 3
enum { ST_RULE_TRACKS = 0, ST_RULE_HIGHER, ST_RULE_LOWER };
extern const char *const ST_RULES[ST_NRULE];
typedef struct st_claim {
  int n, dropped;               /* pairs used; pairs dropped (a value not finite) */
  int nclust;                   /* paired values: the clusters (seeds) the pairs fall in */
  double mean, sd, lo, hi;      /* mean gap over the clusters, their means' sd, the 95% t CI (rates: A's rate interval) */
  double lo90, hi90;            /* the 90% CI for TOST (rates: B's interval) */
  int ka, na, kb, nb;           /* rates: A's and B's counts */
} st_claim;
void st_bootstrap(const double *x, int n, uint64_t seed, double conf, double *lo, double *hi);
/* The percentile interval at conf of v[n] (sorted in place); lo or hi may be NULL */
void st_percentile(double *v, int n, double conf, double *lo, double *hi);
void st_clopper_pearson(int k, int n, double conf, double *lo, double *hi);
void st_claim_paired(const double *a, const double *b, const int *cluster, int n, st_claim *c);
/* Student's t: CDF, quantile (df >= 1), and the interval of the mean of x[n] at conf */
double st_t_cdf(double t, int df);
double st_t_quantile(double p, int df);
void st_t_interval(const double *x, int n, double conf, double *lo, double *hi);
void st_claim_rates(int ka, int na, int kb, int nb, int rule, st_claim *c);
/* P(X >= k) for X ~ B(n, 1/2): the exact one-sided McNemar p-value of k of n discordant pairs */
double st_binom_tail(int k, int n);
/* Holm's step-down over n p-values at level alpha: 1 when at least one is rejected */
int st_holm_any(const double *p, int n, double alpha);
/* The smallest mean gap a paired test of n gaps with this sd detects (80% power, 5% two-sided, normal) */
double st_mde_paired(double sd, int n);
/* The smallest failure-rate difference that n paired seeds per group detect with 80% power by the exact
 * McNemar test at alpha / ngroups (Holm's first step), in the best case (B never fails); +inf: none */
double st_mde_rate(int n, int ngroups, double alpha);
/* study_blocks.c: the file's table.* and plot.* blocks (1: it has some) */
int st_blocks_report(study *st, FILE *md);
/* study_claims.c: the rules on every run, the claims, their report sections */
double st_nonconv_nats(const study *st);
/* The arm run r's rules use: its own (arm.X.reference), else the file's reference (NULL: none). */
const char *st_run_ref(const study *st, const srun *r);
void st_rules_eval(study *st);
void st_claims_eval(study *st);
void st_report_rules(study *st, FILE *md);
void st_report_conclude(study *st, FILE *md);
void st_claims_json(const study *st, FILE *f);
void st_plot_claims(study *st, FILE *md);

/* a config as text lines (study_cfgtext.c): the non-comment lines of
 * xp_config_write; lines that never tell runs apart (out_dir, threads,
 * progress); whether s is among l */
char **st_config_lines(const xp_config *c, int *n);
void st_free_lines(char **l, int n);
int st_skip_line(const char *l);
int st_has_line(char **l, int n, const char *s);

/* run state between invocations (study_state.c) */
void st_run_id(const study *st, const srun *r, char *id, size_t n);
int st_result_save(const srun *r);
int st_result_load(srun *r);
void st_run_prepare(const srun *r, xp_config *c);
void st_run_finish(const srun *r, const xp_config *c);

/* study files: read and checked, their runs set up (study_file.c) */
int st_file_read(study_file *f, const char *path, char *err, size_t errlen);
void st_file_free(study_file *f);
int st_file_setup(study *st, char *err, size_t errlen);
/* what a read file holds, and value lists (study_keys.c) */
const char *st_file_get(const study_file *f, int size, const char *key, int *ln);
double st_file_num(const study_file *f, int size, const char *key, double def);
int st_file_effective(const study_file *f, int size, int i);
int st_axis_values(const char *text, char vals[][ST_VALLEN], int max, char *why, size_t whylen);
char *st_trim(char *s);
int st_parse_num(const char *s, double *v);
/* the C analyses a study file may name (report = NAME, study_hooks.c): by
 * name (NULL: none), the i-th name (NULL past the last), all names listed */
typedef void (*st_report_fn)(study *st, FILE *md);
st_report_fn st_report_hook(const char *name);
const char *st_report_hook_name(int i);
void st_report_hooks(char *buf, size_t n);

/* a study file's direct GEMM experiment (study_gemm.c) */
#define ST_GEMM_MAXMODEL 12
#define ST_GEMM_MAXK 24
#define ST_GEMM_MAXDATA 2
typedef struct st_gemm {
  char format[64], ref[128];
  char model[ST_GEMM_MAXMODEL][128];
  int nmodel, nk, ndata;
  size_t k[ST_GEMM_MAXK], m, n;
  int data[ST_GEMM_MAXDATA];    /* rows of the data table (positive, signed) */
  uint64_t seed;
  double err[ST_GEMM_MAXDATA][ST_GEMM_MAXK][ST_GEMM_MAXMODEL]; /* ||D - D_ref|| / ||D_ref|| */
  int ran, missing;
  char failed[600];
} st_gemm;
int st_gemm_check(const char *field, const char *val, char *why, size_t whylen);
int st_gemm_setup(study *st, char *err, size_t errlen);
void st_gemm_run(study *st);
void st_gemm_load(study *st);
double st_gemm_err(const study *st, const char *data, size_t k, const char *model);
void st_report_gemm(study *st, FILE *md, const char *title);
void st_gemm_json(const study *st, FILE *f);

/* ==== the stability edge (study_edge.c; docs/studies/edge.md) ==========
 * Pure statistics over one arm's (learning rate x seed) outcomes, or two
 * arms paired by seed on the same grid: no I/O, no globals; the bootstraps
 * draw exmy_random64(seed, ., .), so every result is a function of its
 * inputs.  Learning rates enter as log2(lr); shifts are in log2 units. */
#define ST_EDGE_MAXLR 64
#define ST_EDGE_REPS 2000 /* bootstrap resamples */
/* a run's outcome (st_edge_classify) */
enum { ST_RUN_MISSING = -1, ST_RUN_TRAINED = 0, ST_RUN_DIVERGED = 1, ST_RUN_UNDERTRAINED = 2,
       ST_RUN_UNJUDGED = 3 /* the reference's run at the same cell is itself under-trained, so "trained" cannot
                              be told from "not converged": no failure statistic counts the cell, whatever the
                              run did (the losses' statistics do, a failed run at the cap) */ };
/* an edge's status */
enum {
  ST_EDGE_NODATA = 0, /* no run */
  ST_EDGE_POINT,      /* a point estimate (the logistic fit: with a profile interval) */
  ST_EDGE_BELOW,      /* censored: below the lowest learning rate (every run failed there) */
  ST_EDGE_ABOVE,      /* censored: above the highest (nothing failed / >= 50% trained at the top) */
  ST_EDGE_BRACKET,    /* logistic fit, separated data: the MLE is at infinity; the edge lies in (lo, hi) */
  ST_EDGE_NOSLOPE     /* logistic fit: failure does not rise with the learning rate (slope <= 0, or one LR) */
};
/* One arm: a view of the caller's arrays (borrowed, never freed here). */
typedef struct st_edge_arm {
  int nlr, nseed;
  const double *lr;          /* [nlr] strictly ascending, > 0 */
  const signed char *out;    /* [seed * nlr + k]: ST_RUN_* */
  const double *loss;        /* [seed * nlr + k] final/validation loss (NULL: only the edge functions work) */
  const double *init;        /* [seed] the initial loss: the divergence threshold and the cap (NULL with loss) */
  int undertrained_fails;    /* 1: an under-trained run counts as a failure (default 0: it trained) */
} st_edge_arm;
/* diverged: final_loss not finite, or above init_loss (when that is finite);
 * else under-trained when the caller's flag says so; else trained */
int st_edge_classify(double final_loss, double init_loss, int undertrained);
/* 0, or -1 with the bad value named in err (grid size, order, a bad outcome) */
int st_edge_check(const st_edge_arm *a, char *err, size_t errlen);
/* 1 when run (seed, k) counts as failed, 0 trained, -1 missing */
int st_edge_failed(const st_edge_arm *a, int seed, int k);

/* (a) the logistic fit: logit p(fail) = b0 + b1 * log2(lr), by maximum likelihood */
typedef struct st_edge_fit {
  int status;                /* ST_EDGE_*: POINT, BRACKET, BELOW, ABOVE, NOSLOPE, NODATA */
  int n, k;                  /* runs used, failures among them */
  double b0, b1;             /* the MLE (POINT; NOSLOPE when the fit gave b1 <= 0); NaN otherwise */
  double edge;               /* POINT: the lr with p = 0.5, 2^(-b0/b1) */
  double lo, hi;             /* POINT: the profile-likelihood interval (lr; 0 / +inf: open);
                                BRACKET: (last all-trained lr, first all-failed lr; +inf: none);
                                BELOW: (0, lowest lr); ABOVE: (highest lr, +inf) */
  double lrt;                /* POINT, NOSLOPE: likelihood-ratio statistic of b1 = 0 (chi2, 1 df) */
  int outside;               /* POINT: the edge lies outside the grid (an extrapolation) */
  int iters;                 /* Newton iterations of the fit */
} st_edge_fit;
void st_edge_logistic(const st_edge_arm *a, double conf, st_edge_fit *f);

/* (b) the nonparametric edge: the largest lr where >= 50% of the runs train,
 * interpolated linearly in log2 lr to where the trained fraction crosses 1/2 */
typedef struct st_edge_np {
  int status;                /* ST_EDGE_POINT, BELOW, ABOVE, NODATA */
  double lr;                 /* POINT: the edge; BELOW: the lowest lr; ABOVE: the highest (bounds) */
  double x;                  /* log2 of the edge; -inf BELOW, +inf ABOVE, NaN NODATA */
  int lo_i, hi_i;            /* the grid interval holding the crossing (-1: none on that side) */
} st_edge_np;
void st_edge_nonparam(const st_edge_arm *a, st_edge_np *e);

/* Paired shift of the nonparametric edge, A against B (same seeds, same grid;
 * a (seed, lr) cell counts only when both arms ran it) */
typedef struct st_edge_shift {
  int n;                     /* paired seeds */
  st_edge_np a, b;           /* each arm's edge on the paired cells */
  double d;                  /* x_A - x_B (log2) when cens == 0; else the bound */
  int cens;                  /* 0 a point; -1 the shift is < d; +1 it is > d; 2 undefined (both censored alike) */
  double lo, hi;             /* percentile bootstrap CI over seeds (log2); -inf/+inf: open; NaN: n < 2 */
  double a_lo, a_hi, b_lo, b_hi; /* each arm's edge, the same bootstrap (log2) */
  double res;                /* the grid's resolution at the two edges: half of each bracket's width, summed */
  int grid_limited;          /* hi - lo < res: the interval shows the grid, not the seeds */
  double lo_g, hi_g;         /* [lo, hi] widened to hold [d - res, d + res] (report this when grid_limited) */
  int undefined;             /* resamples whose shift was undefined (counted -inf for lo, +inf for hi) */
} st_edge_shift;
/* 0, or -1 (grids differ, nseed differ: err says which) */
int st_edge_shift_paired(const st_edge_arm *a, const st_edge_arm *b, uint64_t seed, double conf, st_edge_shift *s,
                         char *err, size_t errlen);

/* Per learning rate: failures of A and B with exact intervals, McNemar's
 * exact test on the seed pairs, Holm's correction over the LRs compared */
typedef struct st_edge_lrcmp {
  double lr;
  int n;                     /* seeds with both runs at this lr */
  int ka, kb;                /* failures of A, of B among them */
  int a_only, b_only;        /* discordant pairs: A failed and B trained; the reverse */
  double a_lo, a_hi, b_lo, b_hi; /* Clopper-Pearson at conf */
  double p;                  /* McNemar exact, two-sided (1 when no discordant pair; NaN when n == 0) */
  double p_holm;             /* Holm-adjusted over the rows with n > 0 (NaN when n == 0) */
} st_edge_lrcmp;
/* rows[nlr] (one per lr, in grid order); the number of rows compared (n > 0); -1 on a grid mismatch */
int st_edge_compare_lr(const st_edge_arm *a, const st_edge_arm *b, double conf, st_edge_lrcmp *rows, char *err,
                       size_t errlen);
double st_edge_mcnemar_exact(int a_only, int b_only);
/* two-sided Fisher exact test of k1 of n1 against k2 of n2 (tables no more probable than the observed) */
double st_edge_fisher_exact(int k1, int n1, int k2, int n2);
/* adj[i]: Holm's step-down adjusted p[i] over the m values (NaN entries skipped and left NaN;
 * study_stats.c) */
void st_edge_holm(const double *p, int m, double *adj);

/* Wortsman et al.'s LR sensitivity: per seed, the mean over the grid of
 * min(loss, init) minus its minimum, a diverged run counting as init (the
 * cap); a seed needs every lr of the grid (in both arms when paired) */
typedef struct st_edge_sens {
  int n;                     /* seeds used */
  double a, b;               /* mean sensitivity of A, of B (nats; b NaN without B) */
  double d, lo, hi;          /* paired mean A - B, percentile bootstrap CI (NaN without B or n < 2) */
  double sd;                 /* the paired differences' sample sd (NaN without B or n < 2) */
  int sign;                  /* +1 A more sensitive (CI above 0), -1 less (below 0), 0 the CI holds 0 */
} st_edge_sens;
void st_edge_sensitivity(const st_edge_arm *a, const st_edge_arm *b, uint64_t seed, double conf, st_edge_sens *s);

/* The loss offset, kept apart from the edge: per seed, each arm's own best
 * loss over the grid (a diverged run counts as init, so an arm that never
 * trained ranks worst, kept), A - B; and the old "largest lr within delta
 * of the best" taken against each arm's own best, paired in log2 */
typedef struct st_edge_offset {
  int n;                     /* seeds paired (every lr present in both arms) */
  double d, lo, hi;          /* mean own-best loss A - B (nats), bootstrap CI */
  int nlr_max;               /* seeds where both arms have an own LR_max (some run not diverged) */
  double lr_d, lr_lo, lr_hi; /* mean log2 LR_max(A) - log2 LR_max(B) over them, bootstrap CI */
} st_edge_offset;
void st_edge_loss_offset(const st_edge_arm *a, const st_edge_arm *b, double delta, uint64_t seed, double conf,
                         st_edge_offset *o);

/* An adaptive second pass: up to k new learning rates, evenly spaced in
 * log lr inside the grid interval that brackets the nonparametric edge (k = 1:
 * its geometric midpoint); a censored edge extends the grid by its end step
 * (x2 with one lr).  Written to lr_out ascending; their count. */
int st_edge_refine(const st_edge_arm *a, int k, double *lr_out);
/* 1 when the first learning rate above lr has an unjudged cell (the window of judged cells ends there) */
int st_edge_unjudged_above(const st_edge_arm *a, double lr);
/* DIR/refine.lrs: the learning rates `--refine` added (study_refine.c writes it,
 * study_file.c reads it back: appended to the grid; 0, or 2 with err naming the
 * file, line and value) */
#define ST_REFINE_FILE "refine.lrs"
int st_refine_load(study *st, char *err, size_t errlen);
/* 1 when v is one of lr[n] (to a relative 1e-9: refine.lrs holds %.9g) */
int st_lr_on_grid(const double *lr, int n, double v);
/* --refine: from the runs so far, the next learning rate of every lr_edge
 * claim whose edge is censored or bracketed wider than its effect, appended
 * to DIR/refine.lrs (0; 2 no lr_edge claim or too many; 1 I/O) */
int st_refine_propose(study *st, char *err, size_t errlen);

/* The minimum detectable effect of a failure-rate comparison: the smallest
 * p1 - p0 (p1 > p0) that Fisher's exact two-sided test at alpha, n runs per
 * arm, rejects with probability >= power (exact: the rejection region summed
 * under the two binomials).  +inf when no p1 <= 1 reaches the power. */
double st_edge_mde(int n, double p0, double alpha, double power);
/* The estimates as text for tables (censoring shown, never a grid value in
 * its place): "0.041 [0.03, 0.058]", "in (0.026, 0.059), separated",
 * "< 0.0026, all failed", "> 0.78, none failed"; shifts in log2 as
 * "+0.50 [-0.20, +1.10]", "+0.00 [-1.18, +1.18] grid step", "< -2.30",
 * "undefined". */
void st_edge_fmt_fit(const st_edge_fit *f, char *buf, size_t n);
void st_edge_fmt_np(const st_edge_np *e, char *buf, size_t n);
void st_edge_fmt_shift(const st_edge_shift *s, char *buf, size_t n);
/* the shift's interval a report gives: [lo, hi], or [lo_g, hi_g] when grid_limited */
void st_edge_shift_ci(const st_edge_shift *s, double *lo, double *hi);
/* ==== end of the stability edge ======================================== */
/* A claim as the engine evaluates it (study_claims.c). */
typedef struct st_claim_row {
  char name[64], a[64], b[64], metric_name[32], text[400], published[400], control[64];
  char mc[64], md[64];          /* minus = C, D: the gap is (A - B) - (C - D), a difference in differences ("" none) */
  const st_metric *m;
  int rule;
  double margin, effect, lr;    /* lr: NAN for every learning rate */
  char at[ST_VALLEN];           /* axis point selector (KEY=VALUE ...; "" every point) */
  char req[96];                 /* requires = METRIC > X: a precondition on arm A's runs ("" none) */
  const st_metric *req_m;       /* its metric, comparison (>= when req_ge) and bound, parsed once */
  int req_ge;
  double req_x;
  double req_value;             /* that metric's mean over A's runs of the claim */
  st_claim c;
  int nseeds, nfailed, ngroups, holm_up, holm_dn;
  double mde, max_diff;
  int verdict;                  /* ST_V_* */
  char why[400];                /* the rule that produced the verdict, with its numbers */
  st_edge_shift shift;          /* lr_edge claims: the paired shift (has_shift) */
  int has_shift;
  double edge_a, edge_b;        /* lr_sens claims: each arm's sensitivity */
} st_claim_row;
/* The axis point a claim's edges are read at: arm A's first point of those its
 * `at` selects (NULL: A has no run there) */
const char *st_claim_point(const study *st, const st_claim_row *c);
/* An arm's (learning rate x seed) outcomes at one axis point, for
 * study_edge.c: buffers the caller owns (lr[MAX_LR], out and loss
 * [nseeds * MAX_LR], init[nseeds]); 0 when the study has no such runs. */
typedef struct st_edge_buf {
  double lr[MAX_LR];
  signed char out[64 * MAX_LR];
  double loss[64 * MAX_LR], init[64];
} st_edge_buf;
int st_edge_arm_of(const study *st, const char *arm, const char *point, st_edge_buf *b, st_edge_arm *a);

#endif
