/* qstats.c: statistics of a quantization against its float32 source, the
 * FP8 debug metrics of Transformer Engine's debug tools, in one pass whose
 * result does not depend on the thread count. */
#include "exmy.h"
#include "formats/internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Partial sums of one fixed chunk; chunks are combined in order, so the
 * result is the same for any thread count. */
typedef struct stat_part {
  size_t nonzero, under, over;
  double amin, amax, sxx, syy, sxy, see, maxrel;
  size_t finite_pairs;
} stat_part;

#define STAT_CHUNK 65536

int exmy_qtensor_stats(const exmy_qtensor *q, const float *x, exmy_qstats *st, char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  /* the statistics redo each element's cast with its group's scale: a view
   * has no scale of its own (only the GEMM's scale_inv) */
  if (q->is_view) return exmy__fail(err, errlen, "statistics need a tensor made by exmy_recipe_quantize, not a view");
  const size_t n = q->rows * q->cols;
  st->n = n;
  const float fmax = exmy__fmax_f32(&q->fmt);
  exmy_info in;
  exmy_format_info(&q->fmt, &in);
  int e;
  (void)frexp(in.min_subnormal, &e);
  st->fmt_log2_min = e - 1;
  (void)frexp(in.max_finite, &e);
  st->fmt_log2_max = e - 1;
  const size_t nchunks = (n + STAT_CHUNK - 1) / STAT_CHUNK;
  stat_part *parts = calloc(nchunks ? nchunks : 1, sizeof *parts);
  uint64_t *hists = calloc((nchunks ? nchunks : 1) * EXMY_HIST_BINS, sizeof *hists);
  if (!parts || !hists) {
    free(parts);
    free(hists);
    memset(st, 0, sizeof *st);
    return exmy__fail(err, errlen, "statistics: out of memory for %zu chunks", nchunks);
  }
#pragma omp parallel for schedule(static) if(nchunks > 1)
  for (size_t c = 0; c < nchunks; c++) {
    stat_part p = {0};
    p.amin = INFINITY;
    uint64_t *h = hists + c * EXMY_HIST_BINS;
    const size_t lo = c * STAT_CHUNK, hi = lo + STAT_CHUNK < n ? lo + STAT_CHUNK : n;
    for (size_t k = lo; k < hi; k++) {
      const size_t i = k / q->cols, j = k % q->cols;
      const size_t g = (i / q->block_rows) * q->scols + j / q->block_cols;
      const double xv = (double)x[k];
      const uint64_t code = exmy_code_get(&q->fmt, q->codes, k);
      const double d = exmy_code_to_f64(&q->fmt, code) * (double)q->scale_inv[g] * (double)q->tensor_scale_inv;
      if (xv != 0.0) { /* NaN counts as nonzero, as torch.count_nonzero */
        p.nonzero++;
        if (exmy_classify(&q->fmt, code) == EXMY_CLASS_ZERO) p.under++;
      }
      if (!isnan(xv)) { /* the cast's own overflow flag, recomputed (same counter: same SR draw) */
        unsigned fl = 0;
        const float sc = q->scale[g];
        if (q->exact_product) (void)exmy_from_f64(&q->fmt, &q->rnd, xv * (double)sc, k, &fl);
        else (void)exmy_from_f32(&q->fmt, &q->rnd, x[k] * sc, k, &fl);
        if (isinf(xv) || (fl & EXMY_FLAG_OVERFLOW)) p.over++;
      }
      if (isfinite(xv) && xv != 0.0) {
        double a = fabs(xv);
        if (a < p.amin) p.amin = a;
        if (a > p.amax) p.amax = a;
        int b;
        (void)frexp(a, &b);
        b -= 1;
        if (b < EXMY_HIST_LO) b = EXMY_HIST_LO;
        if (b > EXMY_HIST_LO + EXMY_HIST_BINS - 1) b = EXMY_HIST_LO + EXMY_HIST_BINS - 1;
        h[b - EXMY_HIST_LO]++;
        if (isfinite(d)) {
          double rel = fabs(xv - d) / a;
          if (rel > p.maxrel) p.maxrel = rel;
        } else {
          p.maxrel = INFINITY;
        }
      }
      if (isfinite(xv) && isfinite(d)) {
        p.finite_pairs++;
        p.sxx += xv * xv;
        p.syy += d * d;
        p.sxy += xv * d;
        p.see += (xv - d) * (xv - d);
      }
    }
    parts[c] = p;
  }
  double amin = INFINITY, amax = 0, sxx = 0, syy = 0, sxy = 0, see = 0, maxrel = 0;
  size_t nonzero = 0, under = 0, over = 0, pairs = 0;
  for (size_t c = 0; c < nchunks; c++) {
    const stat_part *p = &parts[c];
    nonzero += p->nonzero; under += p->under; over += p->over; pairs += p->finite_pairs;
    if (p->amin < amin) amin = p->amin;
    if (p->amax > amax) amax = p->amax;
    if (p->maxrel > maxrel) maxrel = p->maxrel;
    sxx += p->sxx; syy += p->syy; sxy += p->sxy; see += p->see;
    for (int b = 0; b < EXMY_HIST_BINS; b++) st->hist[b] += hists[c * EXMY_HIST_BINS + b];
  }
  free(parts);
  free(hists);
  st->n_nonzero = nonzero;
  st->amin = isinf(amin) ? 0 : amin;
  st->amax = amax;
  st->underflow_frac = n ? (double)under / (double)n : 0;
  st->overflow_frac = n ? (double)over / (double)n : 0;
  st->mse = pairs ? see / (double)pairs : 0;
  st->cosine = (sxx > 0 && syy > 0) ? sxy / sqrt(sxx * syy) : (sxx == 0 && syy == 0 ? 1.0 : 0.0);
  st->snr_db = see > 0 ? 10.0 * log10(sxx / see) : INFINITY;
  st->max_rel_err = maxrel;
  /* delayed vs current: the group-0 scale over what current scaling would use */
  float tensor_amax = exmy_amax_f32(x, n);
  float cur = exmy_scale_from_amax(tensor_amax, fmax, 0, 0.0f, FLT_MAX);
  st->scale_ratio = (q->srows != 0 && q->scols != 0 ? (double)q->scale[0] : 1.0) / (double)cur;
  return 0;
}
