/* train.h: what the parts of one training run share (internal to
 * experiments/; the public face is xp_train in xp.h).  One file per concept:
 *   train.c         the run: its phases in order (xp_train) and the step
 *   train_events.c  the event table: range shift, LR restart, data switch,
 *                   check and fallback, each a row of hooks
 *   train_out.c     what a run writes: loss.csv, stats.csv, stats.jsonl,
 *                   outliers.csv, config.txt, summary.json, progress */
#ifndef EXMY_XP_TRAIN_H
#define EXMY_XP_TRAIN_H
#include "experiments/xp.h"

#include <stdio.h>

enum { XP_LOG_LOSS, XP_LOG_STATS, XP_LOG_JSONL, XP_LOG_OUTLIERS, XP_NLOG };

/* One run: what it built (have_*: to free), its logs, its checkpoint state
 * and where its steps are. */
typedef struct xp_run {
  xp_model model;
  xp_data data;
  xp_ctx ctx;
  xp_optim opt;
  xp_detector det;
  xp_batch_buf bb;
  xp_allreduce ar;              /* allreduce_ranks > 1 or MS-AMP's FP8 all-reduce */
  int have_model, have_data, have_ctx, have_opt, have_det, have_bb, have_ar;
  xp_result *res;               /* the caller's result: losses, check and fallback counts */
  FILE *log[XP_NLOG];           /* NULL: not written */
  char log_path[XP_NLOG][XP_PATH + 32];
  double *orow;                 /* one outliers.csv row (ocols values), allocated once */
  int ocols;
  xp_config *written;           /* the config as config.txt and summary.json give it (NULL: no out_dir) */
  char prec_key[2048];
  xp_ckpt_state cs;             /* points into the run; prec_key above */
  long start, end;              /* the steps this call runs: start .. end-1 */
  long fallback_left;           /* steps still to run in bf16 after a failed check */
  double t0, tloop;             /* when the run and its first step began (seconds) */
  int tty;                      /* progress is a bar on a terminal */
} xp_run;

/* One step as its phases hand it on. */
typedef struct xp_step {
  long s;
  double lr;
  int mode;                     /* XP_MODE_NORMAL, or XP_MODE_HIGH for a bf16 step */
  int outliers;                 /* this step collects the outlier metrics */
  double loss, gnorm;
  int verdict;                  /* the detector's (1: a spike) */
} xp_step;

/* ---- the event table (train_events.c) ------------------------------------ */

/* Each hook of every row in table order, at its point of the run:
 * setup once the run is built; resume once a checkpoint is loaded (same:
 * its precision is the run's); begin when step `step` begins, before its
 * batch; mode once the batch is loaded (may make st->mode XP_MODE_HIGH;
 * -1: a GEMM failed, r->ctx.err says why); end after the step's update. */
void xp_events_setup(xp_run *r, const xp_config *c);
void xp_events_resume(xp_run *r, const xp_config *c, long start, int same);
void xp_events_begin(xp_run *r, const xp_config *c, long step);
int xp_events_mode(xp_run *r, const xp_config *c, xp_step *st);
void xp_events_end(xp_run *r, const xp_config *c, const xp_step *st);

/* ---- outputs (train_out.c) ------------------------------------------------ */

/* With out_dir: make it, open the logs (resumed: continued after the rows
 * of steps before r->start, the rest dropped) and write config.txt. */
int xp_run_open_outputs(xp_run *r, const xp_config *c, char *err, size_t errlen);
/* A step's rows: loss.csv, stats.csv and stats.jsonl (when the step
 * collected them), outliers.csv; then the progress line.  -1: a write error. */
int xp_run_log_step(xp_run *r, const xp_config *c, const xp_step *st, char *err, size_t errlen);
/* Any write error in the logs so far (flush: also flush and fsync them,
 * before a checkpoint says their rows exist): -1 naming the file. */
int xp_run_logs_check(xp_run *r, int flush, char *err, size_t errlen);
int xp_run_logs_close(xp_run *r, char *err, size_t errlen);
/* The monotonic clock in seconds (the run's timings). */
double xp_run_now(void);
/* summary.json in out_dir: the result and r->written. */
int xp_run_write_summary(const xp_run *r, const xp_config *c, const xp_result *res, char *err, size_t errlen);

#endif
