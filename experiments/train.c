/* train.c: one training run.  Order of a step (docs/training.md):
 *   1. the batch of this step (a function of seed and step);
 *   2. every check_every steps, a forward in bf16 on the same state: if its
 *      loss and the run's precision disagree by more than check_tol
 *      (relative), the run falls back to bf16 for fallback_steps steps,
 *      this one included;
 *   3. forward and backward in the step's precision;
 *   4. AdamW (clipping, MS-AMP, master rounding);
 *   5. delayed scaling: roll the amax histories, new scales;
 *   6. detector, logs, statistics, checkpoint. */
#include "experiments/precision.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* fclose, and any write error since fopen: -1 with a message naming the file */
static int close_checked(FILE *f, const char *path, char *err, size_t errlen) {
  const int e0 = errno, bad = ferror(f);
  errno = 0;
  const int fail = fclose(f);
  if (bad || fail) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(fail && errno ? errno : e0 ? e0 : EIO));
  return 0;
}

static void json_double(FILE *f, const char *key, double v, int comma) {
  if (isfinite(v)) fprintf(f, "  \"%s\": %.9g%s\n", key, v, comma ? "," : "");
  else fprintf(f, "  \"%s\": null%s\n", key, comma ? "," : "");
}

static int write_summary(const xp_config *c, const xp_result *r, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "w");
  if (!f) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
  fprintf(f, "{\n");
  fprintf(f, "  \"steps_done\": %ld,\n", r->steps_done);
  json_double(f, "first_loss", r->first_loss, 1);
  json_double(f, "final_loss", r->final_loss, 1);
  json_double(f, "final_loss_avg", r->final_loss_avg, 1);
  json_double(f, "min_loss", r->min_loss, 1);
  json_double(f, "val_loss", r->val_loss, 1);
  fprintf(f, "  \"spikes\": %ld,\n  \"first_spike\": %ld,\n  \"diverged_at\": %ld,\n", r->spikes, r->first_spike,
          r->diverged_at);
  fprintf(f, "  \"checks\": %ld,\n  \"fallbacks\": %ld,\n", r->checks, r->fallbacks);
  json_double(f, "seconds", r->seconds, 1);
  json_double(f, "tokens_per_s", r->tokens_per_s, 1);
  fprintf(f, "  \"nparams\": %zu,\n  \"config\": [\n", r->nparams);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (m) {
    xp_config_write(c, m);
    fclose(m);
    int first = 1;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      fprintf(f, "%s    \"", first ? "" : ",\n");
      for (char *p = line; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
      }
      fputc('"', f);
      first = 0;
    }
    free(buf);
  }
  fprintf(f, "\n  ]\n}\n");
  return close_checked(f, path, err, errlen);
}

static void progress_line(const xp_config *c, long step, double loss, double lr, double sec_per_step, int mode,
                          int tty) {
  const long done = step + 1, total = c->stop_after ? c->stop_after : c->steps;
  const double eta = sec_per_step * (double)(total - done);
  if (tty) {
    char bar[31];
    const int w = (int)(30.0 * (double)done / (double)(total ? total : 1));
    for (int i = 0; i < 30; i++) bar[i] = i < w ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r[%s] step %ld/%ld loss %.4f lr %.2e %.1f ms/step ETA %.0fs%s   ", bar, done, total, loss, lr,
            1e3 * sec_per_step, eta, mode == XP_MODE_HIGH ? " (bf16 fallback)" : "");
    if (done == total) fputc('\n', stderr);
  } else {
    fprintf(stderr, "step %ld/%ld loss %.4f lr %.2e %.1f ms/step%s\n", done, total, loss, lr, 1e3 * sec_per_step,
            mode == XP_MODE_HIGH ? " (bf16 fallback)" : "");
  }
  fflush(stderr);
}

/* Checkpoint before step `next`: the steps so far and the fallback counters. */
static int save_ckpt(const xp_config *c, xp_ckpt_state *cs, long next, long fallback_left, const xp_result *res,
                     char *err, size_t errlen) {
  cs->step = next;
  cs->fallback_left = fallback_left;
  cs->fallbacks = res->fallbacks;
  cs->checks = res->checks;
  cs->loss = res->loss;
  cs->nloss = next;
  return xp_ckpt_save(c->ckpt, cs, err, errlen);
}

typedef struct run {
  xp_model model;
  xp_data data;
  xp_ctx ctx;
  xp_optim opt;
  xp_detector det;
  xp_batch_buf bb;
  xp_allreduce ar;              /* allreduce_ranks > 1 or MS-AMP's FP8 all-reduce */
  int have_model, have_data, have_ctx, have_opt, have_det, have_bb, have_ar;
  FILE *log[4];                 /* loss.csv, stats.csv, stats.jsonl, outliers.csv (NULL: not written) */
  char log_path[4][XP_PATH + 32];
  double *orow;                 /* one outliers.csv row (ocols values), allocated once */
  int ocols;
} run;

/* The range shift (config range_shift): the same function, other tensor ranges. */
static void shift_ranges(run *r, const xp_config *c, long step) {
  r->model.ops->range_shift(&r->model, &r->opt, c->range_shift);
  if (c->progress)
    fprintf(stderr, "step %ld: range_shift %d: norms x 2^%d, the weights after them x 2^%d\n", step, c->range_shift,
            c->range_shift, -c->range_shift);
}

enum { LOG_LOSS, LOG_STATS, LOG_JSONL, LOG_OUTLIERS, NLOG };
static const char *const log_name[NLOG] = {"loss.csv", "stats.csv", "stats.jsonl", "outliers.csv"};

static void run_free(run *r) {
  for (int i = 0; i < NLOG; i++)
    if (r->log[i]) fclose(r->log[i]);
  free(r->orow);
  if (r->have_bb) xp_batch_free(&r->bb);
  if (r->have_ar) xp_allreduce_free(&r->ar);
  if (r->have_det) xp_detector_free(&r->det);
  if (r->have_opt) xp_optim_free(&r->opt);
  if (r->have_ctx) xp_ctx_free(&r->ctx);
  if (r->have_data) xp_data_free(&r->data);
  if (r->have_model) xp_model_free(&r->model);
}

/* forward + backward in a mode; 0 or -1 */
static int step_grad(run *r, int mode, double *loss) {
  r->ctx.mode = mode;
  if (xp_model_forward(&r->model, &r->ctx, &r->bb.b, loss)) return -1;
  return xp_model_backward(&r->model, &r->ctx, &r->bb.b);
}

/* The training step's gradients: with simulated ranks (allreduce.c), each
 * rank's share of the batch in rank order, then the all-reduce; the loss is
 * the mean of the ranks' losses.  Statistics and dumps see rank 0. */
static int step_grad_ranks(run *r, const xp_config *c, int mode, double *loss) {
  if (!r->ar.active) return step_grad(r, mode, loss);
  const int R = r->ar.R, stats = r->ctx.collect_stats, dump = r->ctx.dump;
  double sum = 0;
  r->ctx.mode = mode;
  for (int k = 0; k < R; k++) {
    const xp_batch b = xp_batch_shard(&r->bb.b, c, k, R);
    double l;
    r->ctx.collect_stats = stats && k == 0;
    r->ctx.dump = dump && k == 0;
    if (xp_model_forward(&r->model, &r->ctx, &b, &l) || xp_model_backward(&r->model, &r->ctx, &b)) return -1;
    if (R > 1) memcpy(xp_allreduce_rank(&r->ar, &r->model, k), r->model.grads, r->model.nparams * sizeof(float));
    sum += l;
  }
  r->ctx.collect_stats = stats;
  r->ctx.dump = dump;
  *loss = sum / R;
  xp_allreduce_run(&r->ar, &r->model);
  return 0;
}

/* Open log i.  A resumed run (resume: the checkpoint's step `start`) keeps
 * the header and the complete rows of steps before `start` and drops the
 * rest (rows a run wrote after its last checkpoint before it died), so the
 * file continues exactly as an uninterrupted run's; *rows: the rows kept. */
static int open_log(const xp_config *c, run *r, int i, int resume, long start, long *rows, char *err, size_t errlen) {
  char *path = r->log_path[i];
  snprintf(path, sizeof r->log_path[i], "%s/%s", c->out_dir, log_name[i]);
  FILE *f = resume ? fopen(path, "r+") : NULL;
  if (!f && resume && errno != ENOENT) return xp_errf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
  long keep = 0;
  *rows = 0;
  if (f) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0 && line[n - 1] == '\n') {
      const char *p = line;
      if (i == LOG_JSONL) {
        if (strncmp(p, "{\"step\":", 8)) break;
        p += 8;
      }
      if (*p >= '0' && *p <= '9') {
        if (strtol(p, NULL, 10) >= start) break;
        ++*rows;
      } else if (i == LOG_JSONL || keep) break; /* a csv's header is its first line */
      keep += (long)n;
    }
    free(line);
    if (ferror(f) || fflush(f) || ftruncate(fileno(f), keep) || fseek(f, keep, SEEK_SET)) {
      const int e = errno;
      fclose(f);
      return xp_errf(err, errlen, "cannot rewrite '%s': %s", path, strerror(e));
    }
  } else if (!(f = fopen(path, "w"))) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
  r->log[i] = f;
  if (keep == 0) {
    if (i == LOG_LOSS) fprintf(f, "step,loss,lr,grad_norm,mode,spike\n");
    if (i == LOG_STATS) xp_ctx_stats_header(f);
    if (i == LOG_OUTLIERS) {
      fputs("step", f);
      xp_model_outliers_header(&r->model, f);
      fputc('\n', f);
    }
  }
  return 0;
}

/* Any write error in the logs so far (flush: also flush and fsync them,
 * before a checkpoint says their rows exist): -1 naming the file. */
static int logs_check(run *r, int flush, char *err, size_t errlen) {
  const int e0 = errno;
  for (int i = 0; i < NLOG; i++) {
    FILE *f = r->log[i];
    if (!f) continue;
    if (ferror(f)) return xp_errf(err, errlen, "cannot write '%s': %s", r->log_path[i], strerror(e0 ? e0 : EIO));
    errno = 0;
    if (flush && (fflush(f) || fsync(fileno(f))))
      return xp_errf(err, errlen, "cannot write '%s': %s", r->log_path[i], strerror(errno ? errno : EIO));
  }
  return 0;
}

static int logs_close(run *r, char *err, size_t errlen) {
  int rc = 0;
  for (int i = 0; i < NLOG; i++) {
    if (!r->log[i]) continue;
    if (close_checked(r->log[i], r->log_path[i], rc ? NULL : err, rc ? 0 : errlen)) rc = -1;
    r->log[i] = NULL;
  }
  return rc;
}

/* config.txt (and summary.json's config): the run's settings without
 * `resume`, so a resumed run's files equal an uninterrupted run's */
static int write_config(const xp_config *c, char *err, size_t errlen) {
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/config.txt", c->out_dir);
  FILE *f = fopen(path, "w");
  if (!f) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
  xp_config_write(c, f);
  return close_checked(f, path, err, errlen);
}

int xp_train(const xp_config *c, xp_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  res->val_loss = NAN;
  res->first_spike = res->diverged_at = -1;
  if ((xp_model_caps(c->model.kind) & XP_CAP_HEADS) && c->model.d_model % c->model.n_head)
    return xp_errf(err, errlen, "d_model %d is not a multiple of n_head %d", c->model.d_model, c->model.n_head);
  const int old_threads = omp_get_max_threads();
  if (c->threads > 0) omp_set_num_threads(c->threads);
  run r;
  memset(&r, 0, sizeof r);
  xp_config *written = NULL; /* the config as config.txt and summary.json give it */
  int rc = -1;
  const double t0 = now();
  if (xp_data_init(&r.data, c, err, errlen)) goto out;
  r.have_data = 1;
  if (xp_model_init(&r.model, &c->model, r.data.vocab, c->seed, err, errlen)) goto out;
  r.have_model = 1;
  if (xp_model_check_config(&r.model, c, err, errlen)) goto out;
  if (xp_ctx_init(&r.ctx, c, &r.model, err, errlen)) goto out;
  r.have_ctx = 1;
  if (xp_optim_init(&r.opt, r.model.nparams) || xp_batch_alloc(&r.bb, c)) {
    xp_errf(err, errlen, "out of memory");
    goto out;
  }
  r.have_opt = r.have_bb = 1;
  xp_optim_setup(&r.opt, &r.model, c);
  if (xp_allreduce_init(&r.ar, c, &r.model)) {
    xp_errf(err, errlen, "out of memory");
    r.have_ar = 1;
    goto out;
  }
  r.have_ar = 1;
  const long warm = (long)(c->warmup_frac * (double)c->steps);
  if (xp_detector_init(&r.det, c->spike_window, c->spike_factor, warm)) {
    xp_errf(err, errlen, "out of memory");
    goto out;
  }
  r.have_det = 1;
  xp_detector_data_switch(&r.det, c->data_switch);
  if (c->outliers_every) { /* a model with the metrics (xp_model_check_config) */
    r.ocols = xp_model_outliers_header(&r.model, NULL);
    if (!(r.orow = calloc((size_t)r.ocols + 1, sizeof *r.orow))) {
      xp_errf(err, errlen, "out of memory");
      goto out;
    }
  }
  res->nparams = r.model.nparams;
  res->loss = calloc((size_t)c->steps + 1, sizeof(double));
  if (!res->loss) {
    xp_errf(err, errlen, "out of memory");
    goto out;
  }

  char key[2048];
  xp_prec_key(c, key, sizeof key);
  xp_ckpt_state cs = {key, 0, &r.model, &r.opt, &r.ctx, &r.det, 0, 0, 0, NULL, 0};
  long start = 0;
  if (c->resume[0]) {
    int same = 0;
    if (xp_ckpt_load(c->resume, &cs, &same, err, errlen)) {
      free(cs.loss);
      goto out;
    }
    start = cs.step;
    for (long i = 0; i < cs.nloss && i < c->steps; i++) res->loss[i] = cs.loss[i];
    free(cs.loss);
    cs.loss = NULL;
    if (c->progress)
      fprintf(stderr, "resumed from %s at step %ld%s\n", c->resume, start,
              same ? "" : " (other precision: scaling state starts fresh)");
    /* the calibration stress test: only into another precision, so a run
     * restarted from its own (already shifted) checkpoint is not shifted twice */
    if (c->range_shift && c->range_shift_step < 0 && !same) shift_ranges(&r, c, start);
  }
  const int tty = c->progress == 1 && isatty(2);
  if (c->out_dir[0]) {
    mkdir(c->out_dir, 0777);
    /* a resumed run continues its files from the checkpoint's step; a new file gets its header */
    const int resumed = c->resume[0] != 0;
    long rows = 0;
    if (open_log(c, &r, LOG_LOSS, resumed, start, &rows, err, errlen)) goto out;
    if (resumed && rows != start && c->progress)
      fprintf(stderr, "note: %s holds %ld of the %ld rows before step %ld (the missing ones are not rewritten)\n",
              r.log_path[LOG_LOSS], rows, start, start);
    if (c->stats_every) {
      if (open_log(c, &r, LOG_STATS, resumed, start, &rows, err, errlen)) goto out;
      if (open_log(c, &r, LOG_JSONL, resumed, start, &rows, err, errlen)) goto out;
    }
    if (c->outliers_every && open_log(c, &r, LOG_OUTLIERS, resumed, start, &rows, err, errlen)) goto out;
    if (!(written = malloc(sizeof *written))) {
      xp_errf(err, errlen, "out of memory");
      goto out;
    }
    *written = *c;
    written->resume[0] = 0;
    written->stop = NULL;
    if (write_config(written, err, errlen)) goto out;
  }

  /* Transformer Engine's calibration: high-precision steps that only fill
   * the delayed-scaling amax histories (weights unchanged). */
  for (long i = 0; i < c->calibrate; i++) {
    double loss;
    xp_data_batch(&r.data, c, start + i, 0, &r.bb);
    r.ctx.step = start + i;
    if (step_grad(&r, XP_MODE_CALIBRATE, &loss)) goto gemm_fail;
    xp_ctx_step_end(&r.ctx);
    if (c->progress) fprintf(stderr, "calibration step %ld: loss %.4f (bf16; amax histories filled)\n", i + 1, loss);
  }

  const long end = c->stop_after && c->stop_after < c->steps ? c->stop_after : c->steps;
  const double tloop = now();
  long fallback_left = cs.fallback_left;
  res->fallbacks = cs.fallbacks;
  res->checks = cs.checks;
  long s;
  for (s = start; s < end; s++) {
    /* a scheduled shift; a resume past it finds it in the checkpoint's weights */
    if (c->range_shift && c->range_shift_step == s) shift_ranges(&r, c, s);
    const double lr = xp_lr_at(c, s);
    xp_data_batch(&r.data, c, s, 0, &r.bb);
    r.ctx.step = s;
    int mode = fallback_left > 0 ? XP_MODE_HIGH : XP_MODE_NORMAL;
    if (mode == XP_MODE_NORMAL && c->check_every && s % c->check_every == 0) {
      double hi;
      r.ctx.mode = XP_MODE_HIGH;
      if (xp_model_forward(&r.model, &r.ctx, &r.bb.b, &hi)) goto gemm_fail;
      double lo;
      r.ctx.mode = XP_MODE_NORMAL;
      if (xp_model_forward(&r.model, &r.ctx, &r.bb.b, &lo)) goto gemm_fail;
      res->checks++;
      if (!(fabs(lo - hi) <= c->check_tol * fabs(hi))) {
        res->fallbacks++;
        fallback_left = c->fallback_steps;
        mode = XP_MODE_HIGH;
        if (c->progress == 2 || (c->progress && !tty))
          fprintf(stderr, "step %ld: check failed (loss %.5g vs bf16 %.5g): bf16 for %ld steps\n", s, lo, hi,
                  c->fallback_steps);
      }
    }
    r.ctx.collect_stats = mode == XP_MODE_NORMAL && c->stats_every && s % c->stats_every == 0;
    r.ctx.dump = c->dump_layers[0] && s == c->dump_step;
    const int outl = c->outliers_every && s % c->outliers_every == 0;
    r.ctx.collect_outliers = outl;
    double loss, gnorm;
    if (step_grad_ranks(&r, c, mode, &loss)) goto gemm_fail;
    if (outl) { /* before the update: the weights this step used (the last rank's shard) */
      xp_model_outliers(&r.model, r.orow);
      r.ctx.collect_outliers = 0;
    }
    xp_optim_step(&r.opt, &r.model, c, s, lr, &gnorm);
    r.ctx.mode = mode;
    xp_ctx_step_end(&r.ctx);
    if (mode == XP_MODE_HIGH && fallback_left > 0) fallback_left--;
    const int verdict = xp_detector_feed(&r.det, s, loss);
    res->loss[s] = loss;
    if (r.log[LOG_LOSS])
      fprintf(r.log[LOG_LOSS], "%ld,%.9g,%.9g,%.9g,%s,%d\n", s, loss, lr, gnorm, mode == XP_MODE_HIGH ? "high" : "fp8",
              verdict == 1);
    if (r.ctx.collect_stats && r.log[LOG_STATS]) xp_ctx_stats_write(&r.ctx, s, r.log[LOG_STATS], r.log[LOG_JSONL]);
    if (outl && r.log[LOG_OUTLIERS]) {
      fprintf(r.log[LOG_OUTLIERS], "%ld", s);
      for (int i = 0; i < r.ocols; i++) fprintf(r.log[LOG_OUTLIERS], ",%.9g", r.orow[i]);
      fputc('\n', r.log[LOG_OUTLIERS]);
    }
    if (logs_check(&r, 0, err, errlen)) goto out;
    if (c->progress && (tty || (s + 1) % c->log_every == 0 || s + 1 == end))
      progress_line(c, s, loss, lr, (now() - tloop) / (double)(s - start + 1), mode, tty);
    if (c->ckpt[0] && c->ckpt_every && (s + 1) % c->ckpt_every == 0) {
      if (logs_check(&r, 1, err, errlen) || save_ckpt(c, &cs, s + 1, fallback_left, res, err, errlen)) goto out;
    }
    if (!isfinite(loss)) {
      s++;
      if (c->progress) fprintf(stderr, "%sstep %ld: loss is %g: the run diverged; stopping\n", tty ? "\n" : "", s - 1, loss);
      break;
    }
    if (c->stop && *c->stop) { /* SIGTERM/SIGINT (cli/train.c): checkpoint below, then return */
      res->stopped = *c->stop;
      s++;
      if (tty) fputc('\n', stderr);
      break;
    }
  }
  res->steps_done = s;
  if (c->ckpt[0] && !(c->ckpt_every && s % c->ckpt_every == 0)) {
    if (logs_check(&r, 1, err, errlen) || save_ckpt(c, &cs, s, fallback_left, res, err, errlen)) goto out;
  }
  if (logs_close(&r, err, errlen)) goto out;
  if (res->stopped) { /* interrupted: the run is not over, so no validation and no summary */
    rc = 0;
    goto out;
  }
  const double loop_s = now() - tloop;
  /* validation: forward only in the run's precision (delayed state is not stepped) */
  if (c->eval_batches > 0 && s > 0 && isfinite(res->loss[s - 1])) {
    double sum = 0;
    r.ctx.mode = XP_MODE_NORMAL;
    r.ctx.collect_stats = r.ctx.dump = 0;
    for (long i = 0; i < c->eval_batches; i++) {
      double l;
      xp_data_batch(&r.data, c, i, 1, &r.bb);
      if (xp_model_forward(&r.model, &r.ctx, &r.bb.b, &l)) goto gemm_fail;
      sum += l;
    }
    res->val_loss = sum / (double)c->eval_batches;
  }
  res->first_loss = s > 0 ? res->loss[0] : NAN;
  res->final_loss = s > 0 ? res->loss[s - 1] : NAN;
  res->min_loss = INFINITY;
  for (long i = 0; i < s; i++)
    if (res->loss[i] < res->min_loss) res->min_loss = res->loss[i];
  res->final_loss_avg = NAN;
  if (s > 0) { /* the mean of the last 10% of steps (at least one) */
    const long tail = s / 10 > 0 ? s / 10 : 1;
    double acc = 0;
    for (long i = s - tail; i < s; i++) acc += res->loss[i];
    res->final_loss_avg = acc / (double)tail;
  }
  res->spikes = r.det.spikes;
  res->first_spike = r.det.first_spike;
  res->diverged_at = r.det.diverged_at;
  res->seconds = now() - t0;
  const double tok = (double)c->model.batch * (xp_model_caps(c->model.kind) & XP_CAP_TOKENS ? c->model.seq_len : 1);
  res->tokens_per_s = s > start && loop_s > 0 ? tok * (double)(s - start) / loop_s : 0;
  if (c->out_dir[0]) {
    char path[XP_PATH + 32];
    snprintf(path, sizeof path, "%s/summary.json", c->out_dir);
    if (write_summary(written, res, path, err, errlen)) goto out;
  }
  rc = 0;
  goto out;
gemm_fail:
  xp_errf(err, errlen, "step %ld: %s", r.ctx.step, r.ctx.err[0] ? r.ctx.err : "a GEMM failed");
out:
  free(written);
  run_free(&r);
  if (c->threads > 0) omp_set_num_threads(old_threads);
  return rc;
}

void xp_result_free(xp_result *res) {
  free(res->loss);
  res->loss = NULL;
}
