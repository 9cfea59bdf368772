/* study_claims.c: a study file's claims and the rules applied to every run
 * (study_int.h, docs/studies/README.md "Statistics").
 *
 * A claim names two arms A and B, a metric, a rule and a margin:
 *   metric val_loss, final_loss, min_loss: paired gaps A - B, one per (seed,
 *     learning rate, axis point) that both arms ran; a run that diverged or
 *     failed gives no value (the pair is dropped and counted);
 *   metric diverged, failed: the rates of A and B (failed = diverged or not
 *     converged) with exact binomial intervals.
 * Non-convergence: a run whose final validation loss is more than
 * nonconv_nats above the reference arm's at the same seed, learning rate
 * and axis point (reference = ARM in the file; without it, no run is
 * called non-converged, and the report says so). */
#include "experiments/study_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONCONV_DEFAULT 0.5

double st_nonconv_nats(const study *st) {
  return st_file_num(st->file, st->size, "nonconv_nats", NONCONV_DEFAULT);
}

static const srun *partner(const study *st, const srun *r, const char *arm) {
  for (int i = 0; i < st->nrun; i++) {
    const srun *q = &st->run[i];
    if (!strcmp(q->arm, arm) && !strcmp(q->point, r->point) && q->lri == r->lri && q->seedi == r->seedi) return q;
  }
  return NULL;
}

static int usable(const srun *r) { return !r->failed && !r->missing && r->res.diverged_at < 0; }

static double metric_of(const srun *r, const char *m) {
  if (!usable(r)) return NAN;
  if (!strcmp(m, "val_loss")) return r->res.val_loss;
  if (!strcmp(m, "final_loss")) return r->res.final_loss_avg;
  return r->res.min_loss;
}

static void split2(const char *v, char *a, char *b, size_t n) {
  const char *c = strchr(v, ',');
  snprintf(a, n, "%.*s", c ? (int)(c - v) : (int)strlen(v), v);
  snprintf(b, n, "%s", c ? c + 1 : "");
  for (char *s = a; s; s = s == a ? b : NULL) { /* trim both */
    char *p = s;
    while (*p == ' ') p++;
    memmove(s, p, strlen(p) + 1);
    size_t l = strlen(s);
    while (l && s[l - 1] == ' ') s[--l] = 0;
  }
}

static const char *field(const study *st, const char *claim, const char *f) {
  char k[160];
  snprintf(k, sizeof k, "claim.%.63s.%.16s", claim, f);
  return st_file_get(st->file, st->size, k, NULL);
}

/* The non-convergence rule on every run (before a study's analysis). */
void st_rules_eval(study *st) {
  if (!st->file) return;
  const char *ref = st_file_get(st->file, st->size, "reference", NULL);
  const double nats = st_nonconv_nats(st);
  for (int i = 0; i < st->nrun; i++) {
    srun *r = &st->run[i];
    const srun *q = ref ? partner(st, r, ref) : NULL;
    r->nonconv = q && usable(r) && usable(q) && isfinite(r->res.val_loss) && isfinite(q->res.val_loss) &&
                 r->res.val_loss > q->res.val_loss + nats;
  }
}

void st_claims_eval(study *st) {
  if (!st->file) return;
  /* the claims, in the order their names first appear */
  char names[MAX_FIND][64];
  int nn = 0;
  for (int i = 0; i < st->file->nline && nn < MAX_FIND; i++) {
    const sf_line *L = &st->file->line[i];
    if (strncmp(L->key, "claim.", 6)) continue;
    const char *dot = strchr(L->key + 6, '.');
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)(dot - L->key - 6), L->key + 6);
    int k = 0;
    while (k < nn && strcmp(names[k], nm)) k++;
    if (k == nn) snprintf(names[nn++], sizeof names[0], "%s", nm);
  }
  if (!nn) return;
  st->claim = calloc((size_t)nn, sizeof *st->claim);
  if (!st->claim) return;
  const uint64_t seed = 1; /* the bootstrap's: fixed, so a report is a pure function of its runs */
  for (int k = 0; k < nn; k++) {
    st_claim_row *c = &st->claim[st->nclaim++];
    snprintf(c->name, sizeof c->name, "%.63s", names[k]);
    const char *v;
    split2((v = field(st, names[k], "arms")) ? v : "", c->a, c->b, sizeof c->a);
    snprintf(c->metric, sizeof c->metric, "%s", (v = field(st, names[k], "metric")) ? v : "val_loss");
    snprintf(c->text, sizeof c->text, "%.399s", (v = field(st, names[k], "text")) ? v : names[k]);
    snprintf(c->published, sizeof c->published, "%.399s", (v = field(st, names[k], "published")) ? v : "");
    c->rule = ST_RULE_TRACKS;
    if ((v = field(st, names[k], "rule")))
      for (int j = 0; j < ST_NRULE; j++)
        if (!strcmp(v, ST_RULES[j])) c->rule = j;
    c->margin = (v = field(st, names[k], "margin")) ? strtod(v, NULL) : 0;
    if (!strcmp(c->metric, "diverged") || !strcmp(c->metric, "failed")) {
      const int fl = !strcmp(c->metric, "failed");
      int ka = 0, na = 0, kb = 0, nb = 0;
      for (int i = 0; i < st->nrun; i++) {
        const srun *r = &st->run[i];
        if (r->missing || (r->failed && r->res.diverged_at < 0)) continue; /* not run, or an error */
        const int bad = r->res.diverged_at >= 0 || (fl && r->nonconv);
        if (!strcmp(r->arm, c->a)) { na++; ka += bad; }
        else if (!strcmp(r->arm, c->b)) { nb++; kb += bad; }
      }
      st_claim_rates(ka, na, kb, nb, c->rule, &c->c);
    } else {
      double *a = malloc((size_t)(st->nrun + 1) * sizeof *a), *b = malloc((size_t)(st->nrun + 1) * sizeof *b);
      int n = 0;
      for (int i = 0; a && b && i < st->nrun; i++) {
        const srun *r = &st->run[i];
        const srun *q = strcmp(r->arm, c->a) ? NULL : partner(st, r, c->b);
        if (!q || r->missing || q->missing) continue;
        a[n] = metric_of(r, c->metric);
        b[n] = metric_of(q, c->metric);
        n++;
      }
      st_claim_paired(a, b, n, c->rule, c->margin, seed, &c->c);
      free(a);
      free(b);
    }
    /* the finding: verdict, then the numbers that decide it */
    const st_claim *s = &c->c;
    char ev[1400];
    if (!strcmp(c->metric, "diverged") || !strcmp(c->metric, "failed"))
      snprintf(ev, sizeof ev,
               "%s rate: %s %d/%d [%.2f, %.2f], %s %d/%d [%.2f, %.2f] (exact 95%% intervals); %s = %s", c->metric,
               c->a, s->ka, s->na, s->lo, s->hi, c->b, s->kb, s->nb, s->lo90, s->hi90, ST_RULES[c->rule],
               c->rule == ST_RULE_TRACKS ? "inconclusive unless the intervals are disjoint"
                                         : "the intervals disjoint in that direction");
    else
      snprintf(ev, sizeof ev,
               "%s %s - %s over n = %d paired runs%s: mean %+.4f, 95%% CI [%+.4f, %+.4f] (bootstrap, 2000 resamples); "
               "%s%s",
               c->metric, c->a, c->b, s->n, s->dropped ? " (pairs with a diverged or failed run dropped)" : "",
               s->mean, s->lo, s->hi,
               c->rule == ST_RULE_TRACKS ? "tracks = the 90% CI inside the margin (TOST)"
               : c->rule == ST_RULE_HIGHER ? "higher = the 95% CI above 0" : "lower = the 95% CI below 0",
               c->margin > 0 ? "" : "");
    if (c->margin > 0 && strcmp(c->metric, "diverged") && strcmp(c->metric, "failed"))
      snprintf(ev + strlen(ev), sizeof ev - strlen(ev), ", margin %g nats", c->margin);
    const int rate = !strcmp(c->metric, "diverged") || !strcmp(c->metric, "failed");
    if (s->n < 3)
      snprintf(ev + strlen(ev), sizeof ev - strlen(ev), "; inconclusive: fewer than 3 %s%s", rate ? "runs per arm" : "pairs",
               s->n == 1 ? " (one seed)" : "");
    char claim[820];
    snprintf(claim, sizeof claim, "%s%s%s%s.", c->text, c->published[0] ? " (" : "", c->published,
             c->published[0] ? ")" : "");
    st_finding_add(st, s->verdict, claim, "%s.", ev);
  }
}

void st_report_rules(study *st, FILE *md) {
  if (!st->file) return;
  const char *ref = st_file_get(st->file, st->size, "reference", NULL);
  fprintf(md, "\n## Rules\n\nApplied identically to every run. Divergence: a non-finite loss, or after warmup a "
              "loss above the first step's (the engine). Spike: a loss above %g x the median of the previous %d "
              "losses. ", st->nrun ? st->run[0].cfg->spike_factor : 1.5, st->nrun ? st->run[0].cfg->spike_window : 32);
  if (ref)
    fprintf(md, "Non-convergence: a final validation loss more than %g nats above the `%s` arm's at the same seed, "
                "learning rate and axis point.\n\n", st_nonconv_nats(st), ref);
  else fprintf(md, "Non-convergence: not applied (the study names no `reference` arm).\n\n");
  fprintf(md, "Plots of the loss show a trailing mean (stated on the axis); tables use the mean of the last 10%% of "
              "steps; claims on val_loss use the validation loss at the end (the held-out tail of the corpus).\n\n");
  fprintf(md, "| arm | runs | diverged | not converged | spikes |\n| --- | --- | --- | --- | --- |\n");
  char seen[ST_MAXARM][64];
  int ns = 0;
  for (int i = 0; i < st->nrun; i++) {
    int k = 0;
    while (k < ns && strcmp(seen[k], st->run[i].arm)) k++;
    if (k < ns || ns >= ST_MAXARM) continue;
    snprintf(seen[ns++], sizeof seen[0], "%s", st->run[i].arm);
    int n = 0, dv = 0, nc = 0;
    long sp = 0;
    for (int j = 0; j < st->nrun; j++) {
      const srun *r = &st->run[j];
      if (strcmp(r->arm, st->run[i].arm) || r->missing) continue;
      n++;
      dv += r->res.diverged_at >= 0 && !r->failed;
      nc += r->nonconv;
      sp += r->res.spikes;
    }
    fprintf(md, "| %s | %d | %d | %d | %ld |\n", st->run[i].arm[0] ? st->run[i].arm : "(base)", n, dv, nc, sp);
  }
}

void st_report_conclude(study *st, FILE *md) {
  if (!st->nclaim) return;
  fprintf(md, "\n## What this study can and cannot conclude\n\n");
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    const st_claim *s = &c->c;
    const int rate = !strcmp(c->metric, "diverged") || !strcmp(c->metric, "failed");
    fprintf(md, "- `%s` (%s, %s vs %s): n = %d; ", c->name, c->metric, c->a, c->b, s->n);
    if (s->n < 3)
      fprintf(md, "cannot conclude: fewer than 3 paired %s (run with `--seeds 5` or more).\n", rate ? "runs per arm" : "runs");
    else if (s->verdict == 1) fprintf(md, "supports the claim at this size and horizon (not beyond them).\n");
    else if (s->verdict == 0) fprintf(md, "contradicts the claim at this size and horizon.\n");
    else
      fprintf(md, "cannot conclude: the interval %s (more seeds narrow it).\n",
              rate ? "of one arm overlaps the other's" : c->rule == ST_RULE_TRACKS ? "straddles the margin" : "contains 0");
  }
  fprintf(md, "\nEvery verdict is about this tiny model, its token budget (the runs' steps x batch x seq_len) and "
              "the learning rates run; none transfers to another scale by itself.\n");
}

void st_claims_json(const study *st, FILE *f) {
  fprintf(f, ",\n  \"claims\": [");
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    const st_claim *s = &c->c;
    fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
    st_json_str(f, c->name);
    fprintf(f, ", \"arms\": [");
    st_json_str(f, c->a);
    fputs(", ", f);
    st_json_str(f, c->b);
    fprintf(f, "], \"metric\": \"%s\", \"rule\": \"%s\", \"margin\": ", c->metric, ST_RULES[c->rule]);
    st_json_num(f, c->margin);
    fprintf(f, ", \"n\": %d, \"mean\": ", s->n);
    st_json_num(f, s->mean);
    fprintf(f, ", \"ci95\": [");
    st_json_num(f, s->lo);
    fputs(", ", f);
    st_json_num(f, s->hi);
    fprintf(f, "], \"verdict\": \"%s\"}", st_verdict_name(s->verdict));
  }
  fprintf(f, "%s]", st->nclaim ? "\n  " : "");
}

/* A forest plot of the paired claims: each claim's mean gap with its 95%
 * bootstrap CI as an error bar, 0 dashed, a tracks claim's margin as red
 * ticks; the x range is the data's (0 and the margins included). */
void st_plot_claims(study *st, FILE *md) {
  int np = 0;
  for (int k = 0; k < st->nclaim; k++) np += strcmp(st->claim[k].metric, "diverged") && strcmp(st->claim[k].metric, "failed") && isfinite(st->claim[k].c.mean);
  if (!np) return;
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/claims.dat", st->dir);
  FILE *d = fopen(path, "w");
  if (!d) return;
  snprintf(path, sizeof path, "%s/claims.gp", st->dir);
  FILE *g = fopen(path, "w");
  if (!g) { fclose(d); return; }
  fprintf(d, "# row mean lo95 hi95 label\n");
  fprintf(g, "# exmy study %s: the claims' paired gaps (gnuplot claims.gp, run in the results folder)\n", st->def->name);
  fprintf(g, "set title 'exmy study %s: paired gaps A - B, mean and 95%% bootstrap CI' noenhanced\n", st->def->name);
  fprintf(g, "set xlabel 'gap (nats; A - B at the same seed); red ticks: a tracks claim''s margin' noenhanced\n"
             "set grid x\nset key off\n");
  double xl = 0, xh = 0; /* the x range: 0, every CI and every margin, 8% padding */
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    if (!strcmp(c->metric, "diverged") || !strcmp(c->metric, "failed") || !isfinite(c->c.mean)) continue;
    if (c->c.lo < xl) xl = c->c.lo;
    if (c->c.hi > xh) xh = c->c.hi;
    if (c->rule == ST_RULE_TRACKS && c->margin > 0) {
      if (-c->margin < xl) xl = -c->margin;
      if (c->margin > xh) xh = c->margin;
    }
  }
  const double pad = (xh - xl) * 0.08 + 1e-6;
  fprintf(g, "set xrange [%.6g:%.6g]\n", xl - pad, xh + pad);
  st_gp_palette(g);
  fprintf(g, "set yrange [0.5:%d.5]\n", np);
  fprintf(g, "set arrow from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb '#000000'\n");
  int row = 0;
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    if (!strcmp(c->metric, "diverged") || !strcmp(c->metric, "failed") || !isfinite(c->c.mean)) continue;
    row++;
    fprintf(d, "%d %.9g %.9g %.9g \"%s: %s - %s (n=%d)\"\n", row, c->c.mean, c->c.lo, c->c.hi, c->name, c->a, c->b, c->c.n);
    if (c->rule == ST_RULE_TRACKS && c->margin > 0)
      for (int s = -1; s <= 1; s += 2)
        fprintf(g, "set arrow from %g, %g to %g, %g nohead lw 2 lc rgb '#D55E00'\n", s * c->margin, row - 0.3, s * c->margin,
                row + 0.3);
  }
  fclose(d);
  st_gp_terminal(g, "claims", 0);
  fprintf(g, "plot 'claims.dat' using 2:1:3:4:ytic(5) with xerrorbars pt 7 ps 1.2 lw 1.6 lc 1 notitle\n");
  st_gp_terminal(g, "claims", 1);
  fclose(g);
  if (st->nplot < MAX_PLOTS) snprintf(st->plot[st->nplot++], sizeof st->plot[0], "claims");
  if (st->gnuplot && !strchr(st->dir, '\'')) {
    char cmd[XP_PATH + 64];
    snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot claims.gp >/dev/null 2>&1", st->dir);
    if (system(cmd) != 0) fprintf(st->log, "exmy: study: gnuplot failed on %s/claims.gp\n", st->dir);
  }
  fprintf(md, "\n");
  st_md_plot(st, md, "claims", "The claims' paired gaps: mean and 95% bootstrap CI per claim");
}
