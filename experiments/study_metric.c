/* study_metric.c: the metric registry: every number a study file's claim.*,
 * table.* and plot.* blocks may name (docs/studies/README.md, "Metrics").
 *
 * A metric is a row: a per-run function and a kind.  A new analysis is a
 * study file plus, at most, one row here.  The rows compute numbers only;
 * verdicts come from the claims engine (study_claims.c) alone.
 *
 * Failed runs are never dropped: a VALUE metric with fail_worst set counts a
 * run that diverged (or errored in training) at the worst value of its claim
 * or table (study_claims.c: st_metric_values). */
#include "experiments/study_int.h"

#include <math.h>
#include <string.h>

static double m_val(const study *st, const srun *r) { (void)st; return r->res.val_loss; }
static double m_final(const study *st, const srun *r) { (void)st; return r->res.final_loss_avg; }
static double m_min(const study *st, const srun *r) { (void)st; return r->res.min_loss; }
static double m_first(const study *st, const srun *r) { (void)st; return r->res.first_loss; }
static double m_spikes(const study *st, const srun *r) {
  (void)st;
  return r->res.steps_done > 0 ? 1000.0 * (double)r->res.spikes / (double)r->res.steps_done : NAN;
}
static double m_diverged(const study *st, const srun *r) { (void)st; return st_run_diverged(r); }
static double m_failed(const study *st, const srun *r) { (void)st; return st_run_diverged(r) || r->nonconv; }
static double m_under(const study *st, const srun *r) { (void)st; return r->undertrained; }

static const st_metric METRICS[] = {
    {"val_loss", "validation loss at the end (nats; the held-out split)", ST_MK_VALUE, 1, m_val},
    {"final_loss", "mean training loss of the last 10% of steps (nats)", ST_MK_VALUE, 1, m_final},
    {"min_loss", "lowest training loss of any step (nats)", ST_MK_VALUE, 1, m_min},
    {"first_loss", "loss of the run's first step (nats)", ST_MK_VALUE, 0, m_first},
    {"spikes", "loss spikes per 1000 steps", ST_MK_VALUE, 0, m_spikes},
    {"diverged", "diverged: the loss went non-finite, or the final loss ended above the first step's", ST_MK_RATE, 0,
     m_diverged},
    {"failed", "failed: diverged, or did not converge (the reference arm's rule)", ST_MK_RATE, 0, m_failed},
    {"undertrained", "under-trained: not failed, but far above the reference's best over the learning rates",
     ST_MK_RATE, 0, m_under},
};
#define NMETRIC ((int)(sizeof METRICS / sizeof METRICS[0]))

const st_metric *st_metric_find(const char *name) {
  for (int i = 0; i < NMETRIC; i++)
    if (!strcmp(METRICS[i].name, name)) return &METRICS[i];
  return NULL;
}

const st_metric *st_metric_at(int i) { return i >= 0 && i < NMETRIC ? &METRICS[i] : NULL; }

void st_metric_names(char *buf, size_t n) {
  buf[0] = 0;
  for (int i = 0; i < NMETRIC; i++) st_cat(buf, n, "%s%s", i ? ", " : "", METRICS[i].name);
}

double st_metric_run(const st_metric *m, const study *st, const srun *r) {
  if (r->missing) return NAN;
  if (m->kind == ST_MK_RATE) return r->failed && !st_run_diverged(r) ? NAN : m->run(st, r);
  if (m->fail_worst && (r->failed || st_run_diverged(r))) return INFINITY; /* ranked worst by the caller */
  return r->failed ? NAN : m->run(st, r);
}
