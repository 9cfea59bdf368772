/* study.h: exmy's FP8 stability studies (`exmy study NAME`, docs/studies/).
 *
 * A study is a list of training runs of the engine (xp_train), each a set of
 * key=value overrides on a base config, crossed with learning rates and
 * seeds, plus code that turns the numbers into a results folder:
 *   DIR/runs.csv       one row per run (label, group, lr, seed, losses, spikes, ...)
 *   DIR/summary.json   the options, every run's numbers and the findings
 *   DIR/runs/LABEL/    each run's engine outputs (loss.csv, stats.csv, summary.json)
 *   DIR/NAME.svg, .png  gnuplot plots (skipped, and said so, without gnuplot)
 *   DIR/report.md      setup, tables, plots and "Reproduced / not reproduced",
 *                      every verdict computed from the numbers.
 * Runs are independent: they run in parallel (OpenMP over runs, one thread
 * each); every result is a pure function of its config, so the folder is the
 * same whatever the thread count (timings aside). */
#ifndef EXMY_STUDY_H
#define EXMY_STUDY_H
#include <stddef.h>
#include <stdio.h>

#define STUDY_MAX_SET 64

typedef enum study_size { STUDY_DEFAULT = 0, STUDY_TINY, STUDY_FULL } study_size;

/* A queue of runs shared by processes (the MPI launcher, cli/study_mpi.c):
 * the server hands run indices out (a phase's runs only once every earlier
 * phase's are done) and reads their results; each worker trains the runs
 * it is given. */
enum { STUDY_QUEUE_NONE = 0, STUDY_QUEUE_SERVER, STUDY_QUEUE_WORKER };
typedef struct study_queue {
  int (*serve)(void *ctx, int nrun, const int *phase); /* returns when every run is done */
  int (*next)(void *ctx, int done);                    /* the next run index (-1: none); done: the last one or -1 */
  void *ctx;
} study_queue;

typedef struct study_opts {
  const char *out_dir;          /* NULL: results/NAME */
  long steps;                   /* 0: the study's default for the size */
  int seeds;                    /* 0: the study's default */
  const char *lrs;              /* comma-separated learning rates, NULL: the study's */
  int threads;                  /* runs in parallel (0: OpenMP's default) */
  study_size size;
  const char *data;             /* data=FILE for every GPT run (NULL: builtin) */
  int nset;                     /* KEY=VALUE applied to every run, after the study's keys */
  const char *set[STUDY_MAX_SET];
  int dry_run;                  /* print every run's config and stop */
  int plots;                    /* 1: draw with gnuplot when it is installed */
  int shard_i, shard_n;          /* run only runs i-1, i-1+n, ... (1-based i; 0: all) and no report */
  const char *plot_file;        /* --plot FILE: the main figure (claims, else the first) there too */
  const char *plot_term;        /* its gnuplot terminal (from the extension, cli_plot_terminal) */
  int report_only;              /* run nothing: the report from the runs done so far */
  int refine;                   /* with report_only: add the edge's next learning rates to DIR/refine.lrs, no report */
  const study_queue *queue;     /* NULL: this process runs the study alone */
  int queue_role;               /* STUDY_QUEUE_SERVER (no runs; the report) or _WORKER (runs; no report) */
  const char *command;          /* the command line, for the report (may be NULL) */
  FILE *log;                    /* progress lines and the final table (NULL: stdout) */
} study_opts;

void study_opts_init(study_opts *o);

/* The built-in studies, one "NAME  description" line each ("default" first);
 * names_only: one "Studies: NAME, NAME, ..." paragraph (--help). */
void study_list(FILE *out, int names_only);
/* 1 when `name` is a built-in study or a path to a study file (a name with
 * a '/' or ending .study), else 0. */
int study_exists(const char *name);

/* Run study `name` (NULL or "": "default"), a built-in or a study file.  Returns 0; 2 with err (one line
 * naming the bad value) for a usage error (unknown study, bad --lrs, a
 * --set key or value the engine rejects); 1 with err when a run could not be
 * done or a file could not be written. */
int study_main(const char *name, const study_opts *o, char *err, size_t errlen);

#endif
