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
#include <stdlib.h>
#include <string.h>

static double m_val(const study *st, const srun *r) { (void)st; return r->res.val_loss; }
static double m_final(const study *st, const srun *r) { (void)st; return r->res.final_loss_avg; }
static double m_min(const study *st, const srun *r) { (void)st; return r->res.min_loss; }
/* The run's own first step: for a continuation (from = ARM) not loss[0]
 * (res.first_loss, the divergence threshold), which is its parent's first
 * step, the same for every continuation of one parent. */
static double m_first(const study *st, const srun *r) {
  if (r->parent < 0) return r->res.first_loss;
  const long at = st_own_start(st, r);
  return at >= 0 && at < r->res.steps_done ? r->res.loss[at] : NAN;
}
/* A tensor kind's under- or overflow (% of values, each statistics step's mean over
 * layers): at the run's first statistics step, the mean over its steps, or their
 * largest; NAN without statistics. */
enum { AT_FIRST, OVER_MEAN, OVER_MAX };
static double stat_of(const srun *r, const char *kind, int under, int how) {
  stat_curve *c = malloc(sizeof *c);
  double v = NAN, sum = 0;
  if (c) {
    st_read_stats(r, kind, c);
    for (int i = 0; i < c->n; i++) {
      const double x = under ? c->under[i] : c->over[i];
      sum += x;
      if (!(x <= v)) v = x;
    }
    if (c->n && how == AT_FIRST) v = under ? c->under[0] : c->over[0];
    if (c->n && how == OVER_MEAN) v = sum / c->n;
    free(c);
  }
  return v;
}
/* the largest overflow of the FP8 tensor kinds (kinds without statistics skipped) */
static double overflow_of_kinds(const srun *r, int how) {
  static const char *const kinds[] = {"input", "weight", "grad"};
  double v = NAN;
  for (int k = 0; k < 3; k++) {
    const double x = stat_of(r, kinds[k], 0, how);
    if (isfinite(x) && !(x <= v)) v = x;
  }
  return v;
}
/* At the run's first statistics step: the condition a published jump after a
 * resume needs. */
static double m_first_overflow(const study *st, const srun *r) { (void)st; return overflow_of_kinds(r, AT_FIRST); }
static double m_max_over(const study *st, const srun *r) { (void)st; return overflow_of_kinds(r, OVER_MAX); }
static double m_grad_under(const study *st, const srun *r) { (void)st; return stat_of(r, "grad", 1, OVER_MEAN); }
static double m_spikes(const study *st, const srun *r) {
  (void)st;
  return r->res.steps_done > 0 ? 1000.0 * (double)r->res.spikes / (double)r->res.steps_done : NAN;
}
static double m_diverged(const study *st, const srun *r) { (void)st; return st_run_diverged(r); }
static double m_failed(const study *st, const srun *r) { (void)st; return st_run_failed(r); }
static double m_under(const study *st, const srun *r) { (void)st; return r->undertrained; }

static const st_metric METRICS[] = {
    {"val_loss", "validation loss at the end (nats; the held-out split)", ST_MK_VALUE, 1, m_val},
    {"final_loss", "mean training loss of the last 10% of steps (nats; a continuation's own steps)", ST_MK_VALUE, 1, m_final},
    {"min_loss", "lowest training loss of any step (nats)", ST_MK_VALUE, 1, m_min},
    {"first_loss", "loss of the run's first step (nats; a continuation's first step after the resume)", ST_MK_VALUE, 0,
     m_first},
    {"spikes", "loss spikes per 1000 steps", ST_MK_VALUE, 0, m_spikes},
    {"first_overflow", "largest overflow of an FP8 tensor kind at the run's first statistics step (% of values, mean "
     "over layers)", ST_MK_VALUE, 0, m_first_overflow},
    {"grad_underflow", "the gradients' underflow at scale 1 or their recipe's scale (% of values, mean over layers), "
     "averaged over the run's statistics steps (needs stats_every)", ST_MK_VALUE, 0, m_grad_under},
    {"max_overflow", "the largest overflow of any tensor kind at any statistics step (% of values, mean over layers; "
     "needs stats_every)", ST_MK_VALUE, 0, m_max_over},
    {"diverged", "diverged: the loss went non-finite, or the final loss ended above the first step's", ST_MK_RATE, 0,
     m_diverged},
    {"failed", "failed: diverged, or did not converge (the reference arm's rule)", ST_MK_RATE, 0, m_failed},
    {"undertrained", "under-trained: not failed, but far above the reference's best over the learning rates",
     ST_MK_RATE, 0, m_under},
    {"lr_edge", "stability edge: the largest learning rate where half the seeds train (interpolated in log2; "
     "paired shifts in octaves)", ST_MK_EDGE, 0, NULL},
    {"lr_edge_fit", "stability edge of a logistic fit of p(fail) against log2 lr, with its profile interval",
     ST_MK_EDGE, 0, NULL},
    {"lr_sens", "Wortsman et al.'s LR sensitivity: mean over the grid of min(val_loss, first loss) minus its minimum",
     ST_MK_EDGE, 0, NULL},
};
#define NMETRIC ((int)(sizeof METRICS / sizeof METRICS[0]))

int st_requires_parse(const char *text, const st_metric **m, int *ge, double *x) {
  char mn[48], op[3];
  int used = 0;
  if (sscanf(text, " %47[a-z_0-9] %2[<>=] %lf %n", mn, op, x, &used) != 3 || text[used] || (strcmp(op, ">") && strcmp(op, ">=")))
    return -1;
  *m = st_metric_find(mn);
  *ge = op[1] == '=';
  return *m && (*m)->kind == ST_MK_VALUE ? 0 : -1;
}

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
  if (r->missing || r->failed || m->kind == ST_MK_EDGE) return NAN; /* not run, or an error: not an outcome */
  if (m->fail_worst && st_run_diverged(r)) return INFINITY;               /* ranked worst by the caller */
  return m->run(st, r);
}

/* The edge statistics' view of an arm: the study's learning rates in
 * ascending order, per (seed, lr) the outcome (failed = diverged or not
 * converged; under-trained apart, not a failure; unjudged where the
 * reference's own run is under-trained), the validation loss and
 * each seed's first-step loss. */
int st_edge_arm_of(const study *st, const char *arm, const char *point, st_edge_buf *b, st_edge_arm *a) {
  int ord[MAX_LR], nlr = st->nlr < MAX_LR ? st->nlr : MAX_LR, ns = st->nseeds < 64 ? st->nseeds : 64, any = 0;
  for (int i = 0; i < nlr; i++) ord[i] = i;
  for (int i = 1; i < nlr; i++) /* insertion sort of the lr indices by value */
    for (int j = i; j > 0 && st->lr[ord[j]] < st->lr[ord[j - 1]]; j--) { const int t = ord[j]; ord[j] = ord[j - 1], ord[j - 1] = t; }
  for (int k = 0; k < nlr; k++) b->lr[k] = st->lr[ord[k]];
  for (int i = 0; i < ns * nlr; i++) b->out[i] = ST_RUN_MISSING, b->loss[i] = NAN;
  for (int s = 0; s < ns; s++) b->init[s] = NAN;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (strcmp(r->arm, arm) || strcmp(r->point, point) || r->missing || r->failed || r->seedi >= ns) continue;
    int k = 0;
    while (k < nlr && ord[k] != r->lri) k++;
    if (k == nlr) continue;
    const int at = r->seedi * nlr + k;
    b->out[at] = r->refweak         ? ST_RUN_UNJUDGED /* even a failure: the window is where the reference trains */
                 : st_run_failed(r) ? ST_RUN_DIVERGED
                 : r->undertrained  ? ST_RUN_UNDERTRAINED
                                    : ST_RUN_TRAINED;
    b->loss[at] = st_run_failed(r) ? NAN : r->res.val_loss; /* NaN: the losses' statistics cap it */
    if (isnan(b->init[r->seedi])) b->init[r->seedi] = r->res.first_loss;
    any = 1;
  }
  memset(a, 0, sizeof *a);
  a->nlr = nlr, a->nseed = ns, a->lr = b->lr, a->out = b->out, a->loss = b->loss, a->init = b->init;
  return any;
}
