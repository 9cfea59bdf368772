/* detect.c: the loss-spike and divergence rules, applied identically to every
 * run (docs/training.md):
 *   spike:      loss > factor * median of the previous `window` losses
 *               (only once a full window exists; non-finite losses are not
 *               spikes but divergence);
 *   divergence: a non-finite loss, or, after warmup, a loss above the
 *               first step's loss; after a data_switch the rule starts again:
 *               its reference is the largest loss of the warmup's length of
 *               steps on the new data.  The first divergence step is kept. */
#include "experiments/xp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int xp_detector_init(xp_detector *d, int window, double factor, long warmup_steps) {
  memset(d, 0, sizeof *d);
  d->window = window < 2 ? 2 : window;
  d->factor = factor;
  d->warmup_steps = warmup_steps;
  d->ring = calloc((size_t)d->window, sizeof(double));
  d->first_spike = d->diverged_at = -1;
  return d->ring ? 0 : -1;
}

void xp_detector_free(xp_detector *d) {
  free(d->ring);
  d->ring = NULL;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int xp_detector_feed(xp_detector *d, long step, double loss) {
  int verdict = 0;
  if (d->seen == 0) d->first = loss;
  const long sw_len = d->warmup_steps > 1 ? d->warmup_steps : 1;
  const int rewarm = d->switch_at > 0 && step >= d->switch_at && step < d->switch_at + sw_len;
  if (rewarm) d->first = step == d->switch_at ? loss : fmax(d->first, loss);
  if (!isfinite(loss) || (!rewarm && step >= d->warmup_steps && d->seen > 0 && loss > d->first)) {
    if (d->diverged_at < 0) d->diverged_at = step;
    verdict = 2;
  } else if (d->seen >= d->window) {
    double w[d->window];
    memcpy(w, d->ring, sizeof w);
    qsort(w, (size_t)d->window, sizeof(double), cmp_double);
    const int h = d->window / 2;
    const double median = d->window % 2 ? w[h] : 0.5 * (w[h - 1] + w[h]);
    if (loss > d->factor * median) {
      d->spikes++;
      if (d->first_spike < 0) d->first_spike = step;
      verdict = 1;
    }
  }
  d->ring[d->seen % d->window] = loss;
  d->seen++;
  return verdict;
}

void xp_detector_data_switch(xp_detector *d, long step) { d->switch_at = step; }
