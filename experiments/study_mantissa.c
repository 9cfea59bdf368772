/* study_mantissa.c: the analysis of the mantissa study (report = mantissa); its runs are
 * experiments/studies/mantissa.study (study_int.h, docs/studies/). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== */
/* study: mantissa                                                         */
/* ====================================================================== */



static int pick_rtz_ref(const srun *r) { return !strcmp(r->tag, "rtz") || !strcmp(r->tag, "ref"); }

/* mantissa.study's arms: E8My by rounding (tag rtz, rne, sr) and mantissa
 * bits (x); the references are tagged ref.  The name of (mode, bits), "" when
 * the file has no such arm (st_aggregate then finds no run). */
static const char *e8_arm(const study *st, const char *mode, int m) {
  const char *n = st_arm_by(st, NULL, mode, m);
  return n ? n : "";
}

/* The reference arms' names (tag ref) in file order, at most max; their count. */
static int ref_arms(const study *st, const char **refs, int max) {
  int n = 0;
  for (int i = 0; i < st->nrun && n < max; i++) {
    const srun *r = &st->run[i];
    int seen = 0;
    for (int k = 0; k < n; k++) seen |= !strcmp(refs[k], r->name);
    if (!seen && !strcmp(r->tag, "ref")) refs[n++] = r->name;
  }
  return n;
}

void st_report_mantissa(study *st, FILE *md) {
  const char *modes[] = {"rtz", "rne", "sr"};
  char h5[48], h6[48];
  {
    char a[32], b[32];
    st_fmt_lr(st->lr[0], a, sizeof a);
    st_fmt_lr(st->lr[st->nlr - 1], b, sizeof b);
    snprintf(h5, sizeof h5, "final, lr %s", a);
    snprintf(h6, sizeof h6, "final, lr %s", b);
  }
  tbl *t = st_tbl_new(6 + (st->nlr > 1 ? 2 : 0), "format", "rounding", "runs", "diverged", "spikes/1k steps", h5, h6,
                   "diverged per lr");
  double inst[9], bits[9], fin[9];
  int ni = 0;
  char divs[1024] = "", spk[1024] = "";
  for (int mode = 0; mode < 3; mode++)
    for (int m = 1; m <= 7; m++) {
      const char *name = e8_arm(st, modes[mode], m);
      agg a = st_aggregate(st, name, -1);
      if (!a.n) continue;
      char b[32];
      st_tbl_cell(t, 0, "E8M%d", m);
      st_tbl_cell(t, 1, "%s", modes[mode]);
      st_tbl_cell(t, 2, "%d", a.n);
      st_tbl_cell(t, 3, "%d/%d", a.ndiv, a.n);
      const double rate = a.steps ? 1000.0 * (double)a.spikes / (double)a.steps : 0;
      st_tbl_cell(t, 4, "%.2f", rate);
      st_fmt_num(st_aggregate(st, name, 0).final_mean, b, sizeof b);
      st_tbl_cell(t, 5, "%s", b);
      st_fmt_num(st_aggregate(st, name, st->nlr - 1).final_mean, b, sizeof b);
      if (st->nlr > 1) st_tbl_cell(t, 6, "%s", b);
      if (st->nlr > 1) {
        char per[64] = "";
        for (int li = 0; li < st->nlr; li++) {
          agg l = st_aggregate(st, name, li);
          st_cat(per, sizeof per, "%s%d/%d", li ? " " : "", l.ndiv, l.n);
        }
        st_tbl_cell(t, 7, "%s", per);
      }
      st_tbl_end_row(t);
      if (mode == 0) {
        bits[ni] = m;
        inst[ni] = (double)a.ndiv / a.n + rate / 1000.0; /* divergence fraction, spike rate breaks ties */
        /* final loss with diverged runs counted at their first loss (no progress) */
        double v = 0;
        int c = 0;
        for (int i = 0; i < st->nrun; i++) {
          const srun *r = &st->run[i];
          if (strcmp(r->name, name) || r->failed) continue;
          v += st_run_diverged(r) || !isfinite(r->res.final_loss_avg) ? r->res.first_loss : r->res.final_loss_avg;
          c++;
        }
        fin[ni] = c ? v / c : NAN;
        ni++;
        st_cat(divs, sizeof divs, "E8M%d %d/%d, ", m, a.ndiv, a.n);
        st_cat(spk, sizeof spk, "%sE8M%d %.1f", ni > 1 ? ", " : "", m, rate);
      }
    }
  const char *refs[8];
  const int nref = ref_arms(st, refs, 8);
  for (int k = 0; k < nref; k++) {
    agg a = st_aggregate(st, refs[k], -1);
    if (!a.n) continue;
    char b[32];
    st_tbl_cell(t, 0, "%s", refs[k]);
    st_tbl_cell(t, 1, "rne");
    st_tbl_cell(t, 2, "%d", a.n);
    st_tbl_cell(t, 3, "%d/%d", a.ndiv, a.n);
    st_tbl_cell(t, 4, "%.2f", a.steps ? 1000.0 * (double)a.spikes / (double)a.steps : 0);
    st_fmt_num(st_aggregate(st, refs[k], 0).final_mean, b, sizeof b);
    st_tbl_cell(t, 5, "%s", b);
    st_fmt_num(st_aggregate(st, refs[k], st->nlr - 1).final_mean, b, sizeof b);
    if (st->nlr > 1) st_tbl_cell(t, 6, "%s", b);
    if (st->nlr > 1) {
      char per[64] = "";
      for (int li = 0; li < st->nlr; li++) {
        agg l = st_aggregate(st, refs[k], li);
        st_cat(per, sizeof per, "%s%d/%d", li ? " " : "", l.ndiv, l.n);
      }
      st_tbl_cell(t, 7, "%s", per);
    }
    st_tbl_end_row(t);
    st_cat(divs, sizeof divs, "%s%s %d/%d", k ? ", " : "", refs[k], a.ndiv, a.n);
  }
  fprintf(md, "## Results per format\n\n`runs`, `diverged`, `spikes`: all learning rates and seeds together "
              "(`diverged per lr`: in the order of the learning rates above). `final, lr X`: mean over the seeds at "
              "that learning rate that did not diverge.\n\n");
  st_tbl_emit(st, t, md, "per format (all learning rates and seeds):");

  /* plots: divergence fraction and final loss against mantissa bits */
  series s[5];
  int ns = 0;
  for (int mode = 0; mode < 3; mode++) {
    st_series_alloc(&s[ns], 8, modes[mode]);
    s[ns].points = 1;
    for (int m = 1; m <= 7; m++) {
      agg a = st_aggregate(st, e8_arm(st, modes[mode], m), -1);
      if (!a.n) continue;
      s[ns].x[s[ns].n] = m;
      s[ns].y[s[ns].n++] = (double)a.ndiv / a.n;
    }
    if (s[ns].n) ns++;
    else st_series_free(&s[ns], 1);
  }
  st_plot_draw(st, "diverged", "fraction of runs that diverged, by mantissa bits (E8My, every GEMM operand)",
            "mantissa bits", "diverged (fraction of runs)", 0, 0, ns, s, NAN);
  st_series_free(s, ns);
  st_md_plot(st, md, "diverged", "fraction of runs that diverged, per rounding of the GEMM inputs");
  ns = 0;
  for (int mode = 0; mode < 3; mode++) {
    st_series_alloc(&s[ns], 8, modes[mode]);
    s[ns].points = 1;
    for (int m = 1; m <= 7; m++) {
      agg a = st_aggregate(st, e8_arm(st, modes[mode], m), 0);
      if (!a.n) continue;
      s[ns].x[s[ns].n] = m;
      s[ns].y[s[ns].n++] = a.final_mean;
    }
    if (s[ns].n) ns++;
    else st_series_free(&s[ns], 1);
  }
  for (int k = 0; k < nref && ns < 5; k++) {
    agg a = st_aggregate(st, refs[k], 0);
    if (!a.n) continue;
    char lvl[ST_NAMELEN + 16];
    snprintf(lvl, sizeof lvl, "%s (level)", refs[k]);
    st_series_alloc(&s[ns], 2, lvl);
    s[ns].x[0] = 1;
    s[ns].x[1] = 7;
    s[ns].y[0] = s[ns].y[1] = a.final_mean;
    s[ns].n = 2;
    ns++;
  }
  char ttl[160], lrb[32];
  st_fmt_lr(st->lr[0], lrb, sizeof lrb);
  snprintf(ttl, sizeof ttl, "final loss (runs that did not diverge) by mantissa bits, lr %s", lrb);
  st_plot_draw(st, "final", ttl, "mantissa bits", "final loss (mean of last 10% of steps)", 0, 0, ns, s, NAN);
  st_series_free(s, ns);
  st_md_plot(st, md, "final", ttl);
  for (int li = 0; li < st->nlr && li < 4; li++) {
    char stem[32];
    st_fmt_lr(st->lr[li], lrb, sizeof lrb);
    snprintf(stem, sizeof stem, "loss-lr%d", li);
    snprintf(ttl, sizeof ttl, "training loss, lr %s, seed 1: E8My round-toward-zero and references", lrb);
    st_plot_losses(st, md, stem, ttl, li, 0, pick_rtz_ref, st_smooth_for(st), 0, 0);
  }

  /* findings */
  const double rho_i = st_spearman(bits, inst, ni), rho_f = st_spearman(bits, fin, ni);
  int anydiv = 0;
  for (int i = 0; i < ni; i++) anydiv |= inst[i] > 0;
  if (ni >= 3) {
    st_observe(st, "Divergences and spikes against mantissa bits, round-toward-zero (published: instability rises as "
                "mantissa bits fall; Lee et al.: E8M3-E8M5 fail to converge at 120M, only E8M5-E8M6 relatively stable "
                "at 7B).",
                "divergences (rtz, all lrs and seeds): %s; spikes per 1000 steps: %s. Spearman rho(bits, divergence "
                "fraction + spike rate) = %.2f%s.",
                divs, spk, rho_i, anydiv ? "" : " (no E8My run diverged or spiked)");
    st_observe(st, "Final loss against mantissa bits, round-toward-zero.",
                "Spearman rho(bits, final loss with diverged runs counted at their first loss) = %.2f over E8M1..E8M7 "
                "rtz.",
                rho_f);
    int d35 = 0, n35 = 0;
    for (int m = 3; m <= 5; m++) {
      agg a = st_aggregate(st, e8_arm(st, "rtz", m), -1);
      d35 += a.ndiv;
      n35 += a.n;
    }
    st_observe(st, "E8M3, E8M4 and E8M5 with round-toward-zero (published: they fail to converge; Lee et al., 120M "
                "TinyLLaMA).",
                "E8M3-E8M5 rtz runs that diverged: %d/%d (this model has %.0f "
                "parameters and trains %ld steps, far from 120M parameters and their token counts).",
                d35, n35, st->nrun ? (double)st->run[0].res.nparams : 0.0, st->steps);
  }
  /* controls: rne and sr against rtz at the same bits */
  char ev[1024] = "";
  for (int m = 1; m <= 7; m++) {
    agg x = st_aggregate(st, e8_arm(st, "rtz", m), -1), y = st_aggregate(st, e8_arm(st, "rne", m), -1),
        z = st_aggregate(st, e8_arm(st, "sr", m), -1);
    if (!y.n) continue;
    st_cat(ev, sizeof ev, "%sE8M%d: rtz %d/%d diverged, final %.4f; rne %d/%d, %.4f; sr %d/%d, %.4f.", ev[0] ? " " : "",
        m, x.ndiv, x.n, x.final_mean, y.ndiv, y.n, y.final_mean, z.ndiv, z.n, z.final_mean);
  }
  if (ev[0])
    st_observe(st, "Control: round-toward-zero (masking) against round-to-nearest-even and stochastic rounding.", "%s",
               ev);
  if (st->nlr > 1) {
    char e2[1024] = "";
    int dlo = 0, dhi = 0, nlo = 0, nhi = 0;
    for (int i = 0; i < st->nrun; i++) {
      const srun *r = &st->run[i];
      if (strcmp(r->tag, "rtz")) continue;
      if (r->lri == 0) { nlo++; dlo += st_run_diverged(r); }
      if (r->lri == st->nlr - 1) { nhi++; dhi += st_run_diverged(r); }
    }
    char l0[32], l1[32];
    st_fmt_lr(st->lr[0], l0, sizeof l0);
    st_fmt_lr(st->lr[st->nlr - 1], l1, sizeof l1);
    snprintf(e2, sizeof e2, "E8M1..E8M7 rtz runs diverged: %d/%d at lr %s, %d/%d at lr %s.", dlo, nlo, l0, dhi, nhi, l1);
    st_observe(st, "Learning rate: the largest learning rate against the smallest.", "%s", e2);
  }
}
