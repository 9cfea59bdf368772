/* train.c: one training run, xp_train, read top to bottom as its phases
 * (docs/training.md, "Runs"):
 *   build      data, model, context, optimizer, ranks, detector
 *   resume     the checkpoint's state and losses
 *   outputs    out_dir's logs (continued after a resume) and config.txt
 *   calibrate  delayed scaling's amax histories, the weights unchanged
 *   steps      each step: begin (scheduled events), batch, check (its
 *              precision: check and fallback), step (forward, backward,
 *              AdamW, delayed scaling), end, log, checkpoint, stop?
 *   finish     the last checkpoint; the logs closed
 *   validate   forward only on the validation batches
 *   summarize  the result and summary.json
 * The events (range shift, LR restart, data switch, check and fallback)
 * are rows of the table in train_events.c, called at the points above
 * (setup in build, resume, begin, check, end); the files a run writes are
 * train_out.c's. */
#include "experiments/train.h"
#include "experiments/precision.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void run_free(xp_run *r) {
  for (int i = 0; i < XP_NLOG; i++)
    if (r->log[i]) fclose(r->log[i]);
  free(r->orow);
  free(r->written);
  if (r->have_bb) xp_batch_free(&r->bb);
  if (r->have_ar) xp_allreduce_free(&r->ar);
  if (r->have_det) xp_detector_free(&r->det);
  if (r->have_opt) xp_optim_free(&r->opt);
  if (r->have_ctx) xp_ctx_free(&r->ctx);
  if (r->have_data) xp_data_free(&r->data);
  if (r->have_model) xp_model_free(&r->model);
}

static int gemm_error(const xp_run *r, char *err, size_t errlen) {
  return xp_errf(err, errlen, "step %ld: %s", r->ctx.step, r->ctx.err[0] ? r->ctx.err : "a GEMM failed");
}

/* forward + backward in a mode; 0 or -1 */
static int step_grad(xp_run *r, int mode, double *loss) {
  r->ctx.mode = mode;
  if (xp_model_forward(&r->model, &r->ctx, &r->bb.b, loss)) return -1;
  return xp_model_backward(&r->model, &r->ctx, &r->bb.b);
}

/* The training step's gradients: with simulated ranks (allreduce.c), each
 * rank's share of the batch in rank order, then the all-reduce; the loss is
 * the mean of the ranks' losses.  Statistics and dumps see rank 0. */
static int step_grad_ranks(xp_run *r, const xp_config *c, int mode, double *loss) {
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

/* Checkpoint before step `next`: the logs flushed first (their rows up to
 * it exist), then the state, the fallback counters and the losses so far. */
static int save_ckpt(xp_run *r, const xp_config *c, long next, char *err, size_t errlen) {
  if (xp_run_logs_check(r, 1, err, errlen)) return -1;
  xp_ckpt_state *cs = &r->cs;
  cs->step = next;
  cs->fallback_left = r->fallback_left;
  cs->fallbacks = r->res->fallbacks;
  cs->checks = r->res->checks;
  cs->loss = r->res->loss;
  cs->nloss = next;
  return xp_ckpt_save(c->ckpt, cs, err, errlen);
}

static int out_of_memory(char *err, size_t errlen) { return xp_errf(err, errlen, "out of memory"); }

/* ---- the phases, in the order xp_train runs them ---------------------------- */

static int phase_build(xp_run *r, const xp_config *c, char *err, size_t errlen) {
  if (xp_data_init(&r->data, c, err, errlen)) return -1;
  r->have_data = 1;
  if (xp_model_init(&r->model, &c->model, r->data.vocab, c->seed, err, errlen)) return -1;
  r->have_model = 1;
  if (xp_model_check_config(&r->model, c, err, errlen)) return -1;
  if (xp_ctx_init(&r->ctx, c, &r->model, err, errlen)) return -1;
  r->have_ctx = 1;
  if (xp_optim_init(&r->opt, r->model.nparams) || xp_batch_alloc(&r->bb, c)) return out_of_memory(err, errlen);
  r->have_opt = r->have_bb = 1;
  xp_optim_setup(&r->opt, &r->model, c);
  r->have_ar = 1; /* xp_allreduce_free undoes a partial init too */
  if (xp_allreduce_init(&r->ar, c, &r->model)) return out_of_memory(err, errlen);
  const long warm = (long)(c->warmup_frac * (double)c->steps);
  if (xp_detector_init(&r->det, c->spike_window, c->spike_factor, warm)) return out_of_memory(err, errlen);
  r->have_det = 1;
  xp_events_setup(r, c);
  if (c->outliers_every) { /* a model with the metrics (xp_model_check_config) */
    r->ocols = xp_model_outliers_header(&r->model, NULL);
    if (!(r->orow = calloc((size_t)r->ocols + 1, sizeof *r->orow))) return out_of_memory(err, errlen);
  }
  r->res->nparams = r->model.nparams;
  if (!(r->res->loss = calloc((size_t)c->steps + 1, sizeof(double)))) return out_of_memory(err, errlen);
  xp_prec_key(c, r->prec_key, sizeof r->prec_key);
  r->cs = (xp_ckpt_state){r->prec_key, 0, &r->model, &r->opt, &r->ctx, &r->det, 0, 0, 0, NULL, 0};
  return 0;
}

/* The checkpoint's weights, moments, recipe states, detector, fallback
 * counters and losses; r->start becomes its step. */
static int phase_resume(xp_run *r, const xp_config *c, char *err, size_t errlen) {
  if (!c->resume[0]) return 0;
  xp_ckpt_state *cs = &r->cs;
  int same = 0;
  const int failed = xp_ckpt_load(c->resume, cs, &same, err, errlen);
  if (!failed) {
    r->start = cs->step;
    for (long i = 0; i < cs->nloss && i < c->steps; i++) r->res->loss[i] = cs->loss[i];
  }
  free(cs->loss);
  cs->loss = NULL;
  if (failed) return -1;
  r->fallback_left = cs->fallback_left;
  r->res->fallbacks = cs->fallbacks;
  r->res->checks = cs->checks;
  if (c->progress)
    fprintf(stderr, "resumed from %s at step %ld%s\n", c->resume, r->start,
            same ? "" : " (other precision: scaling state starts fresh)");
  xp_events_resume(r, c, r->start, same);
  return 0;
}

/* Transformer Engine's calibration: high-precision steps that only fill
 * the delayed-scaling amax histories (weights unchanged). */
static int phase_calibrate(xp_run *r, const xp_config *c, char *err, size_t errlen) {
  for (long i = 0; i < c->calibrate; i++) {
    double loss;
    xp_data_batch(&r->data, c, r->start + i, 0, &r->bb);
    r->ctx.step = r->start + i;
    if (step_grad(r, XP_MODE_CALIBRATE, &loss)) return gemm_error(r, err, errlen);
    xp_ctx_step_end(&r->ctx);
    if (c->progress) fprintf(stderr, "calibration step %ld: loss %.4f (bf16; amax histories filled)\n", i + 1, loss);
  }
  return 0;
}

/* The step in st->mode: forward and backward collecting what this step logs,
 * the outlier metrics of the weights it used, AdamW, the recipes' step end. */
static int phase_step(xp_run *r, const xp_config *c, xp_step *st) {
  const long s = st->s;
  r->ctx.collect_stats = st->mode == XP_MODE_NORMAL && c->stats_every && s % c->stats_every == 0;
  r->ctx.dump = c->dump_layers[0] && s == c->dump_step;
  st->outliers = c->outliers_every && s % c->outliers_every == 0;
  r->ctx.collect_outliers = st->outliers;
  if (step_grad_ranks(r, c, st->mode, &st->loss)) return -1;
  if (st->outliers) { /* before the update: the weights this step used (the last rank's shard) */
    xp_model_outliers(&r->model, r->orow);
    r->ctx.collect_outliers = 0;
  }
  xp_optim_step(&r->opt, &r->model, c, s, st->lr, &st->gnorm);
  r->ctx.mode = st->mode;
  xp_ctx_step_end(&r->ctx);
  return 0;
}

/* Does the run end after this step?  A non-finite loss (diverged) or a
 * signal (SIGTERM/SIGINT: cli/train.c sets *c->stop) ends it. */
static int phase_stop(xp_run *r, const xp_config *c, const xp_step *st) {
  if (!isfinite(st->loss)) {
    if (c->progress)
      fprintf(stderr, "%sstep %ld: loss is %g: the run diverged; stopping\n", r->tty ? "\n" : "", st->s, st->loss);
    return 1;
  }
  if (c->stop && *c->stop) {
    r->res->stopped = *c->stop;
    if (r->tty) fputc('\n', stderr);
    return 1;
  }
  return 0;
}

static int phase_steps(xp_run *r, const xp_config *c, char *err, size_t errlen) {
  r->end = c->stop_after && c->stop_after < c->steps ? c->stop_after : c->steps;
  r->tloop = xp_run_now();
  long s;
  for (s = r->start; s < r->end; s++) {
    xp_step st = {.s = s, .mode = XP_MODE_NORMAL};
    xp_events_begin(r, c, s); /* scheduled events (a range shift) */
    st.lr = xp_lr_at(c, s);
    xp_data_batch(&r->data, c, s, 0, &r->bb); /* a function of seed and step */
    r->ctx.step = s;
    if (xp_events_mode(r, c, &st)) return gemm_error(r, err, errlen); /* check: the step's precision (fallback) */
    if (phase_step(r, c, &st)) return gemm_error(r, err, errlen);
    xp_events_end(r, c, &st);
    st.verdict = xp_detector_feed(&r->det, s, st.loss);
    r->res->loss[s] = st.loss;
    if (xp_run_log_step(r, c, &st, err, errlen)) return -1;
    if (c->ckpt[0] && c->ckpt_every && (s + 1) % c->ckpt_every == 0 && save_ckpt(r, c, s + 1, err, errlen)) return -1;
    if (phase_stop(r, c, &st)) {
      s++;
      break;
    }
  }
  r->res->steps_done = s;
  return 0;
}

/* The checkpoint at the end (unless the last step wrote it); the logs closed. */
static int phase_finish(xp_run *r, const xp_config *c, char *err, size_t errlen) {
  const long s = r->res->steps_done;
  if (c->ckpt[0] && !(c->ckpt_every && s % c->ckpt_every == 0) && save_ckpt(r, c, s, err, errlen)) return -1;
  return xp_run_logs_close(r, err, errlen);
}

/* Validation: forward only in the run's precision (delayed state is not stepped). */
static int phase_validate(xp_run *r, const xp_config *c, char *err, size_t errlen) {
  const long s = r->res->steps_done;
  if (!(c->eval_batches > 0 && s > 0 && isfinite(r->res->loss[s - 1]))) return 0;
  double sum = 0;
  r->ctx.mode = XP_MODE_NORMAL;
  r->ctx.collect_stats = r->ctx.dump = 0;
  for (long i = 0; i < c->eval_batches; i++) {
    double l;
    xp_data_batch(&r->data, c, i, 1, &r->bb);
    if (xp_model_forward(&r->model, &r->ctx, &r->bb.b, &l)) return gemm_error(r, err, errlen);
    sum += l;
  }
  r->res->val_loss = sum / (double)c->eval_batches;
  return 0;
}

double xp_final_loss_avg(const double *loss, long from, long to) {
  if (to <= from) return NAN;
  const long tail = (to - from) / 10 > 0 ? (to - from) / 10 : 1;
  double acc = 0;
  for (long i = to - tail; i < to; i++) acc += loss[i];
  return acc / (double)tail;
}

/* The result from the losses and the detector; summary.json. */
static int phase_summarize(xp_run *r, const xp_config *c, double loop_s, char *err, size_t errlen) {
  xp_result *res = r->res;
  const long s = res->steps_done;
  res->first_loss = s > 0 ? res->loss[0] : NAN;
  res->final_loss = s > 0 ? res->loss[s - 1] : NAN;
  res->min_loss = INFINITY;
  for (long i = 0; i < s; i++)
    if (res->loss[i] < res->min_loss) res->min_loss = res->loss[i];
  res->final_loss_avg = xp_final_loss_avg(res->loss, 0, s);
  res->spikes = r->det.spikes;
  res->first_spike = r->det.first_spike;
  res->diverged_at = r->det.diverged_at;
  res->seconds = xp_run_now() - r->t0;
  const double tok = (double)c->model.batch * (xp_model_caps(c->model.kind) & XP_CAP_TOKENS ? c->model.seq_len : 1);
  res->tokens_per_s = s > r->start && loop_s > 0 ? tok * (double)(s - r->start) / loop_s : 0;
  return c->out_dir[0] ? xp_run_write_summary(r, c, res, err, errlen) : 0;
}

int xp_train(const xp_config *c, xp_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  res->val_loss = NAN;
  res->first_spike = res->diverged_at = -1;
  if ((xp_model_caps(c->model.kind) & XP_CAP_HEADS) && c->model.d_model % c->model.n_head)
    return xp_errf(err, errlen, "d_model %d is not a multiple of n_head %d", c->model.d_model, c->model.n_head);
  const int old_threads = omp_get_max_threads();
  if (c->threads > 0) omp_set_num_threads(c->threads);
  xp_run r;
  memset(&r, 0, sizeof r);
  r.res = res;
  r.t0 = xp_run_now();
  r.tty = c->progress == 1 && isatty(2);
  int rc = -1;
  if (phase_build(&r, c, err, errlen) || phase_resume(&r, c, err, errlen) || xp_run_open_outputs(&r, c, err, errlen) ||
      phase_calibrate(&r, c, err, errlen) || phase_steps(&r, c, err, errlen) || phase_finish(&r, c, err, errlen))
    goto out;
  if (!res->stopped) { /* a signal: the run is not over, so no validation and no summary */
    const double loop_s = xp_run_now() - r.tloop;
    if (phase_validate(&r, c, err, errlen) || phase_summarize(&r, c, loop_s, err, errlen)) goto out;
  }
  rc = 0;
out:
  run_free(&r);
  if (c->threads > 0) omp_set_num_threads(old_threads);
  return rc;
}

void xp_result_free(xp_result *res) {
  free(res->loss);
  res->loss = NULL;
}
