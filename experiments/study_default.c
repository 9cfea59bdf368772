/* study_default.c: the analysis of the default study (report = default); its runs are
 * experiments/studies/default.study (study_int.h, docs/studies/). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== */
/* study: default                                                          */
/* ====================================================================== */


/* Fraction of steps in [from, to) where a's trailing mean is above b's. */
static double frac_above(const srun *a, const srun *b, int w, long from) {
  long n = a->res.steps_done < b->res.steps_done ? a->res.steps_done : b->res.steps_done;
  long k = 0, above = 0;
  for (long i = from; i < n; i++) {
    double sa = 0, sb = 0;
    int c = 0;
    for (long j = i; j > i - w && j >= 0; j--) { sa += a->res.loss[j]; sb += b->res.loss[j]; c++; }
    if (!isfinite(sa) || !isfinite(sb) || !c) continue;
    k++;
    above += sa > sb;
  }
  return k ? (double)above / (double)k : NAN;
}

/* "hybrid tracks bf16, a little higher" (Megatron-LM / TE). */
void st_finding_fp8_vs_bf16(study *st, const char *hyb, const char *bf) {
  agg h = st_aggregate(st, hyb, 0), b = st_aggregate(st, bf, 0);
  if (h.n == 0 || b.n == 0) return;
  if (h.nfinal == 0 || b.nfinal == 0) {
    st_finding_add(st, 0, "FP8 (HYBRID) loss tracks BF16, a little higher (Megatron-LM FP8).",
                "%s diverged in %d/%d runs, %s in %d/%d.", hyb, h.ndiv, h.n, bf, b.ndiv, b.n);
    return;
  }
  const double gap = (h.final_mean - b.final_mean) / b.final_mean;
  double fr[64];
  int nf = 0;
  for (int s = 0; s < st->nseeds && nf < 64; s++) {
    const srun *a = st_find_run(st, hyb, 0, s), *c = st_find_run(st, bf, 0, s);
    if (a && c && !a->failed && !c->failed) fr[nf++] = frac_above(a, c, st_smooth_for(st), st->steps / 2);
  }
  const double above = st_mean_of(fr, nf);
  /* tracks: within 5% at the end; higher: above bf16 at the end and for most of the second half */
  const int tracks = fabs(gap) < 0.05, higher = gap > 0 && above > 0.5;
  char noise[160] = "";
  if (st->nseeds > 1 && isfinite(b.final_sd))
    snprintf(noise, sizeof noise, " (seed sd: %s %.4f, %s %.4f)", hyb, h.final_sd, bf, b.final_sd);
  st_finding_add(st, tracks ? 1 : 0, "FP8 (HYBRID, current scaling) loss tracks BF16 (Megatron-LM FP8, 1B, 21K steps).",
              "final %s %.4f vs %s %.4f: gap %+.2f%%; tracks = |gap| < 5%%%s.", hyb, h.final_mean, bf, b.final_mean,
              100 * gap, noise);
  st_finding_add(st, higher ? 1 : 0, "FP8's loss is consistently a little higher than BF16's (Megatron-LM FP8).",
              "gap %+.2f%% at the end; %s's trailing-mean loss is above %s's in %.0f%% of the second half's steps "
              "(consistently higher = gap > 0 and above in more than 50%% of them).",
              100 * gap, hyb, bf, 100 * above);
}

void st_report_default(study *st, FILE *md) {
  agg f = st_aggregate(st, "fp32", 0);
  tbl *t = st_tbl_new(7, "precision", "final", "vs fp32", "val", "min", "spikes", "diverged");
  const char *names[] = {"fp32", "bf16", "hybrid", "e8m2 rtz"};
  for (int i = 0; i < 4; i++) {
    agg a = st_aggregate(st, names[i], 0);
    char b[32];
    st_tbl_cell(t, 0, "%s", names[i]);
    st_fmt_num(a.final_mean, b, sizeof b);
    st_tbl_cell(t, 1, "%s", b);
    if (isfinite(a.final_mean) && isfinite(f.final_mean))
      st_tbl_cell(t, 2, "%+.2f%%", 100 * (a.final_mean - f.final_mean) / f.final_mean);
    else st_tbl_cell(t, 2, "-");
    st_fmt_num(a.val_mean, b, sizeof b);
    st_tbl_cell(t, 3, "%s", b);
    st_fmt_num(a.min_mean, b, sizeof b);
    st_tbl_cell(t, 4, "%s", b);
    st_tbl_cell(t, 5, "%ld", a.spikes);
    st_tbl_cell(t, 6, "%d/%d", a.ndiv, a.n);
    st_tbl_end_row(t);
  }
  fprintf(md, "## Results\n\nMeans over seeds (`final`: mean loss of the last 10%% of steps; `val`: validation loss).\n\n");
  st_tbl_emit(st, t, md, "summary (means over seeds):");
  st_plot_losses(st, md, "loss", "training loss: fp32, bf16, HYBRID FP8, E8M2 round-toward-zero", 0, 0, NULL,
              st_smooth_for(st), 0, 0);
  st_plot_gap(st, md, "loss-gap", "loss minus fp32's loss, step by step (seed 1)", "fp32", 0, 0, NULL, st_smooth_for(st));
  st_finding_fp8_vs_bf16(st, "hybrid", "bf16");
  agg e = st_aggregate(st, "e8m2 rtz", 0), b = st_aggregate(st, "bf16", 0);
  if (e.n && b.n) {
    const double gap = isfinite(e.final_mean) && isfinite(b.final_mean) ? (e.final_mean - b.final_mean) / b.final_mean : NAN;
    const int worse = e.ndiv > b.ndiv || (isfinite(gap) && gap > 0.02);
    st_finding_add(st, worse ? 1 : 0,
                "Cutting every GEMM input to 2 mantissa bits with round-toward-zero (Lee et al.'s simulation) degrades "
                "or destabilizes training.",
                "E8M2 rtz: %d/%d diverged, final %.4f vs bf16 %.4f (%+.2f%%); worse = more divergences or > 2%% higher "
                "final loss.",
                e.ndiv, e.n, e.final_mean, b.final_mean, isfinite(gap) ? 100 * gap : NAN);
  }
}
