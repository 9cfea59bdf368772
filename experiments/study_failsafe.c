/* study_failsafe.c: the analysis of failsafe.study (report = failsafe):
 * the engine's check-and-fallback (check_every, check_tol, fallback_steps)
 * on runs at learning rates where training is known to fail: when it
 * fires against when the same run without checks spikes or diverges, what
 * it rescues, and the bf16 compute it costs. */
#include "experiments/study_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Steps run in bf16 (loss.csv's mode column "high") and the first of them
 * (-1: none) of run r. */
static long high_steps(const srun *r, long *first) {
  char path[XP_PATH + 32], line[512];
  snprintf(path, sizeof path, "%s/loss.csv", r->cfg->out_dir);
  *first = -1;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  long n = 0;
  while (fgets(line, sizeof line, f)) { /* step,loss,lr,grad_norm,mode,spike */
    char *c[6];
    if (st_csv_split(line, c, 6) < 5 || strcmp(c[4], "high")) continue;
    const long s = strtol(c[0], NULL, 10);
    if (*first < 0) *first = s;
    n++;
  }
  fclose(f);
  return n;
}

/* The run of the same lr and seed whose tag is `tag` (NULL: none). */
static const srun *twin(const study *st, const srun *r, const char *tag) {
  for (int i = 0; i < st->nrun; i++) {
    const srun *q = &st->run[i];
    if (!strcmp(q->tag, tag) && q->lri == r->lri && q->seedi == r->seedi) return q;
  }
  return NULL;
}

/* When a run goes wrong: its first spike or divergence, whichever is first (-1: neither). */
static long onset(const srun *r) {
  long a = r->res.first_spike, b = r->res.diverged_at;
  return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

void st_report_failsafe(study *st, FILE *md) {
  const char *ref = st->file ? st_file_get(st->file, st->size, "reference", NULL) : NULL;
  tbl *t = st_tbl_new(10, "arm", "lr", "failed", "under-trained", "checks", "fallbacks", "first fallback - onset (per seed)",
                      "steps in bf16", "check overhead", "val");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r0 = &st->run[i];
    if (r0->seedi) continue; /* one row per arm and lr: the seeds are gathered below */
    int n = 0, nfail = 0, nunder = 0;
    long checks = 0, fallbacks = 0, high = 0, steps = 0;
    double val = 0;
    int nval = 0;
    char lat[200] = "";
    const int has_check = r0->cfg->check_every > 0;
    for (int j = 0; j < st->nrun; j++) {
      const srun *r = &st->run[j];
      if (strcmp(r->arm, r0->arm) || r->lri != r0->lri) continue;
      n++;
      nfail += !r->missing && (r->failed || st_run_failed(r)); /* the claims' rule; an error counts as a failure */
      nunder += r->undertrained;             /* never set on a run that failed or errored */
      checks += r->res.checks;
      fallbacks += r->res.fallbacks;
      steps += r->res.steps_done;
      long first;
      high += high_steps(r, &first);
      if (isfinite(r->res.val_loss)) val += r->res.val_loss, nval++;
      if (!has_check) continue;
      /* the same arm without checks: its tag is this one's minus "+check" */
      char base[32];
      snprintf(base, sizeof base, "%s", r->tag);
      char *plus = strstr(base, "+check");
      if (plus) *plus = 0;
      const srun *q = twin(st, r, base);
      const long on = q ? onset(q) : -1;
      if (first < 0) st_cat(lat, sizeof lat, "%snone", lat[0] ? " " : "");
      else if (on < 0) st_cat(lat, sizeof lat, "%s%ld (no onset)", lat[0] ? " " : "", first);
      else st_cat(lat, sizeof lat, "%s%+ld", lat[0] ? " " : "", first - on);
    }
    if (!n) continue;
    char lr[32];
    st_fmt_lr(r0->lr, lr, sizeof lr);
    st_tbl_cell(t, 0, "%s", r0->name);
    st_tbl_cell(t, 1, "%s", lr);
    st_tbl_cell(t, 2, "%d/%d", nfail, n);
    st_tbl_cell(t, 3, "%d/%d", nunder, n);
    st_tbl_cell(t, 4, "%ld", checks);
    st_tbl_cell(t, 5, "%ld", fallbacks);
    st_tbl_cell(t, 6, "%s", has_check ? lat : "-");
    st_tbl_cell(t, 7, "%.1f%%", steps ? 100.0 * (double)high / (double)steps : 0.0);
    /* a check is two extra forwards (bf16 and the run's precision), about two thirds of a step */
    st_tbl_cell(t, 8, "%.1f%%", steps ? 100.0 * (2.0 / 3) * (double)checks / (double)steps : 0.0);
    st_tbl_cell(t, 9, nval ? "%.4f" : "-", nval ? val / nval : NAN);
    st_tbl_end_row(t);
  }
  fprintf(md, "## Check and fallback on failing runs\n\n"
              "Per arm and learning rate, over the seeds, by the rules the claims use: runs that failed (diverged: "
              "a final loss above the first or not finite; or did not converge: a validation loss more than "
              "nonconv_nats = %g above the reference arm %s's at the same seed and learning rate; or an error), "
              "runs under-trained (not failed, but that far above the reference's best over the learning rates "
              "at the same seed: a flag, not a failure), the checks made and the fallbacks they triggered; for the arms "
              "with checks, the step of the first fallback minus the onset of trouble in the same run without "
              "checks (its first spike or divergence, same seed and learning rate; negative: the check fired "
              "first; `none`: it never fired); the share of steps run in bf16 (fallbacks); the checks' overhead: "
              "two extra forwards each (bf16 and the run's precision), counted as two thirds of a step, as a share "
              "of the steps.\n\n",
          st_nonconv_nats(st), ref ? ref : "(none)");
  st_tbl_emit(st, t, md, "check and fallback on failing runs:");
}
