/* study_report.c: a study's runs.csv, summary.json and the common sections
 * of report.md (study_int.h). */
#include "experiments/study_int.h"
#include "exmy.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================== */
/* outputs: runs.csv, summary.json, report.md                              */
/* ====================================================================== */

void st_write_runs_csv(study *st) {
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/runs.csv", st->dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "label,group,lr,seed,final_loss,final_loss_avg,min_loss,val_loss,first_loss,spikes,first_spike,"
             "diverged_at,fallbacks,steps_done,seconds,error\n");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    const xp_result *s = &r->res;
    fprintf(f, "\"%s\",\"%s\",%.9g,%llu,%.9g,%.9g,%.9g,%.9g,%.9g,%ld,%ld,%ld,%ld,%ld,%.3f,\"%s\"\n", r->label, r->group,
            r->lr, r->seed, s->final_loss, s->final_loss_avg, s->min_loss, s->val_loss, s->first_loss, s->spikes,
            s->first_spike, s->diverged_at, s->fallbacks, s->steps_done, s->seconds, r->failed ? r->err : "");
  }
  fclose(f);
}

void st_write_summary_json(study *st) {
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/summary.json", st->dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "{\n  \"study\": ");
  st_json_str(f, st->def->name);
  fprintf(f, ",\n  \"description\": ");
  st_json_str(f, st->def->desc);
  fprintf(f, ",\n  \"exmy_version\": ");
  st_json_str(f, exmy_version());
  fprintf(f, ",\n  \"command\": ");
  st_json_str(f, st->o->command ? st->o->command : "");
  fprintf(f, ",\n  \"study_file\": ");
  st_json_str(f, st->file ? st->file->path : "");
  fprintf(f, ",\n  \"base\": {"); /* the keys every run shares, before each run's own */
  for (int i = 0; i < st->nbase; i++) {
    fprintf(f, "%s", i ? ", " : "");
    st_json_str(f, st->base[i].k);
    fprintf(f, ": ");
    st_json_str(f, st->base[i].v);
  }
  fprintf(f, "}");
  fprintf(f, ",\n  \"size\": \"%s\",\n  \"steps\": %ld,\n  \"seeds\": %d,\n  \"lrs\": [",
          st->size == STUDY_TINY ? "tiny" : st->size == STUDY_FULL ? "full" : "default", st->steps, st->nseeds);
  for (int i = 0; i < st->nlr; i++) fprintf(f, "%s%.9g", i ? ", " : "", st->lr[i]);
  /* seconds: this invocation's wall time (about 0 for --report); run_seconds: the
   * finished runs' own training times summed, whoever ran them (shards, reruns) */
  double run_s = 0;
  int ndone = 0;
  for (int i = 0; i < st->nrun; i++)
    if (!st->run[i].failed && !st->run[i].missing) run_s += st->run[i].res.seconds, ndone++;
  fprintf(f, "],\n  \"threads\": %d,\n  \"seconds\": %.3f,\n  \"report_only\": %s,\n  \"runs_done\": %d,\n"
             "  \"run_seconds\": %.1f,\n  \"testbed\": ",
          st->threads, st->seconds, st->o->report_only ? "true" : "false", ndone, run_s);
  char *tb = NULL; /* the testbed sentence, as the report's Setup opens */
  size_t tbn = 0;
  FILE *mf = open_memstream(&tb, &tbn);
  if (mf) {
    st_report_testbed(st, mf, "");
    fclose(mf);
  }
  while (tb && tbn && tb[tbn - 1] == '\n') tb[--tbn] = 0;
  st_json_str(f, tb ? tb : "");
  free(tb);
  fprintf(f, ",\n  \"runs\": [\n");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    const xp_result *s = &r->res;
    fprintf(f, "    {\"label\": ");
    st_json_str(f, r->label);
    fprintf(f, ", \"name\": ");
    st_json_str(f, r->name);
    fprintf(f, ", \"group\": ");
    st_json_str(f, r->group);
    fprintf(f, ", \"dir\": ");
    st_json_str(f, r->dir);
    fprintf(f, ", \"id\": ");
    st_json_str(f, r->id);
    fprintf(f, ", \"missing\": %s", r->missing ? "true" : "false");
    fprintf(f, ", \"lr\": %.9g, \"seed\": %llu, \"final_loss\": ", r->lr, r->seed);
    st_json_num(f, s->final_loss);
    fprintf(f, ", \"final_loss_avg\": ");
    st_json_num(f, s->final_loss_avg);
    fprintf(f, ", \"min_loss\": ");
    st_json_num(f, s->min_loss);
    fprintf(f, ", \"val_loss\": ");
    st_json_num(f, s->val_loss);
    fprintf(f, ", \"first_loss\": ");
    st_json_num(f, s->first_loss);
    fprintf(f, ", \"spikes\": %ld, \"diverged_at\": %ld, \"fallbacks\": %ld, \"steps_done\": %ld, \"seconds\": %.3f",
            s->spikes, s->diverged_at, s->fallbacks, s->steps_done, s->seconds);
    fprintf(f, ", \"config\": {");
    for (int k = 0; k < r->nkv; k++) {
      fprintf(f, "%s", k ? ", " : "");
      st_json_str(f, r->kv[k].k);
      fputs(": ", f);
      st_json_str(f, r->kv[k].v);
    }
    fprintf(f, "}");
    if (r->failed) {
      fprintf(f, ", \"error\": ");
      st_json_str(f, r->err);
    }
    fprintf(f, "}%s\n", i + 1 < st->nrun ? "," : "");
  }
  fprintf(f, "  ],\n");
  st_gemm_json(st, f);
  fprintf(f, "  \"findings\": [\n");
  for (int i = 0; i < st->nfind; i++) {
    fprintf(f, "    {\"verdict\": \"%s\", \"claim\": ", st_verdict_name(st->find[i].verdict));
    st_json_str(f, st->find[i].claim);
    fprintf(f, ", \"evidence\": ");
    st_json_str(f, st->find[i].evidence);
    fprintf(f, "}%s\n", i + 1 < st->nfind ? "," : "");
  }
  fprintf(f, "  ]");
  if (st->file) st_claims_json(st, f);
  fprintf(f, "\n}\n");
  fclose(f);
}

/* A model shape of the testbed: the runs (first lr and seed) that share it. */
typedef struct tb_shape {
  const xp_model_config *m;
  size_t nparams;
  char arms[600], points[600]; /* the arms and the axis points with this shape */
  int narm, npt;
} tb_shape;

static int same_shape(const xp_model_config *a, const xp_model_config *b) {
  return a->kind == b->kind && a->n_layer == b->n_layer && a->d_model == b->d_model && a->n_head == b->n_head &&
         a->seq_len == b->seq_len && a->rmsnorm == b->rmsnorm && a->swiglu == b->swiglu && a->hidden == b->hidden &&
         a->depth == b->depth;
}

static void shape_text(const xp_model_config *q, size_t np, char *buf, size_t n) {
  if (q->kind == XP_MODEL_GPT)
    snprintf(buf, n, "%d layer%s, d_model %d, %d heads, context %d, %s, %s MLP", q->n_layer, q->n_layer == 1 ? "" : "s",
             q->d_model, q->n_head, q->seq_len, q->rmsnorm ? "RMSNorm" : "LayerNorm", q->swiglu ? "SwiGLU" : "GELU");
  else snprintf(buf, n, "teacher-student MLP, width %d, depth %d", q->hidden, q->depth);
  if (np) st_cat(buf, n, ", %zu parameters", np);
}

/* What a referee checks first: the model shapes with their sizes and the arms
 * (or axis points) on each, the corpus, the tokens each run sees, the seeds and
 * the learning rates. */
void st_report_testbed(const study *st, FILE *md, const char *lead) {
  const srun *r0 = NULL;
  for (int i = 0; i < st->nrun && !r0; i++)
    if (!st->run[i].failed && !st->run[i].missing && st->run[i].res.nparams) r0 = &st->run[i];
  if (!st->nrun) return;
  const xp_config *c = (r0 ? r0 : &st->run[0])->cfg;
  const xp_model_config *m = &c->model;
  /* every model shape the runs use (a size ladder's axis points, an arm of another
   * architecture or width), each with its parameter count and the arms or points on it */
  tb_shape sh[16];
  int ns = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi) continue;
    int k = 0;
    while (k < ns && !same_shape(sh[k].m, &r->cfg->model)) k++;
    if (k == ns) {
      if (ns == 16) continue;
      sh[ns++] = (tb_shape){.m = &r->cfg->model};
    }
    if (!sh[k].nparams)
      for (int j = 0; j < st->nrun; j++)
        if (!st->run[j].missing && !st->run[j].failed && st->run[j].res.nparams && same_shape(&st->run[j].cfg->model, sh[k].m)) {
          sh[k].nparams = st->run[j].res.nparams;
          break;
        }
    const char *arm = r->arm[0] ? r->arm : "(base)", *pt = r->point + (r->point[0] == ' ');
    if (!strstr(sh[k].arms, arm)) st_cat(sh[k].arms, sizeof sh[k].arms, "%s%s", sh[k].narm++ ? ", " : "", arm);
    if (pt[0] && !strstr(sh[k].points, pt)) st_cat(sh[k].points, sizeof sh[k].points, "%s%s", sh[k].npt++ ? ", " : "", pt);
  }
  int byarm = 0; /* name each shape by its arms, unless every shape has the same arms (a ladder: by its points) */
  for (int k = 1; k < ns; k++) byarm |= strcmp(sh[k].arms, sh[0].arms) != 0;
  fputs(lead, md);
  char b[200];
  if (ns <= 1) {
    shape_text(m, r0 ? r0->res.nparams : 0, b, sizeof b);
    fprintf(md, "%s%s", m->kind == XP_MODEL_GPT ? "GPT, " : "", b);
  } else {
    fprintf(md, "%s in %d shapes: ", m->kind == XP_MODEL_GPT ? "GPT" : "models", ns);
    for (int k = 0; k < ns; k++) {
      shape_text(sh[k].m, sh[k].nparams, b, sizeof b);
      fprintf(md, "%s%s (%s)", k ? "; " : "", b, byarm || !sh[k].npt ? sh[k].arms : sh[k].points);
    }
  }
  const int text = (xp_model_caps(m->kind) & XP_CAP_TOKENS) != 0; /* examples are token sequences */
  if (text)
    fprintf(md, "; corpus `%s` (%s tokens; the last tenth held out for validation)", c->data,
            c->vocab_words ? "word" : "character");
  long smin = LONG_MAX, smax = 0; /* arms of their own lengths (a horizon study): the range */
  for (int i = 0; i < st->nrun; i++)
    if (st->run[i].cfg && st->run[i].parent < 0) {
      if (st->run[i].cfg->steps < smin) smin = st->run[i].cfg->steps;
      if (st->run[i].cfg->steps > smax) smax = st->run[i].cfg->steps;
    }
  if (smax == 0) smin = smax = st->steps;
  const double per = (double)m->batch * (text ? m->seq_len : 1), tokens = (double)smax * per;
  char fresh[64] = ""; /* fresh seeds (a confirmation) are named */
  if (st->first_seed > 1) snprintf(fresh, sizeof fresh, " (seeds %d-%d)", st->first_seed, st->first_seed + st->nseeds - 1);
  char refined[48] = ""; /* a second pass's learning rates are named as such */
  if (st->nlr_refined) snprintf(refined, sizeof refined, " (%d added by --refine: refine.lrs)", st->nlr_refined);
  char span[48] = "", len[64];
  if (smin != smax) snprintf(span, sizeof span, "%.3g to ", (double)smin * per);
  if (smin != smax) snprintf(len, sizeof len, "%ld to %ld steps (per arm)", smin, smax);
  else snprintf(len, sizeof len, "%ld steps", smax);
  fprintf(md, "; %s x batch %d%s = %s%.3g %s per run; %d paired seed%s%s; %d learning rate%s%s.\n\n", len, m->batch,
          text ? " x context" : "", span, tokens, text ? "tokens" : "examples",
          st->nseeds, st->nseeds == 1 ? "" : "s", fresh, st->nlr, st->nlr == 1 ? "" : "s", refined);
}

/* The setup section: keys common to every run, then each config's own. */
void st_report_setup(study *st, FILE *md) {
  xp_config def;
  xp_config_default(&def);
  int nd;
  char **dl = st_config_lines(&def, &nd);
  int n0;
  char **l0 = st->nrun ? st_config_lines(st->run[0].cfg, &n0) : NULL;
  if (!st->nrun) n0 = 0;
  /* common = lines of run 0 not in default, present in every run */
  char **lines[4096];
  int nl[4096];
  int nr = st->nrun < 4096 ? st->nrun : 4096;
  for (int i = 0; i < nr; i++) lines[i] = st_config_lines(st->run[i].cfg, &nl[i]);
  fprintf(md, "## Setup\n\n");
  st_report_testbed(st, md, "**Testbed.** ");
  fprintf(md, "Engine defaults (`xp_config_default`) except, in every run:\n\n```\n");
  for (int j = 0; j < n0; j++) {
    if (st_has_line(dl, nd, l0[j]) || st_skip_line(l0[j])) continue;
    if (!strncmp(l0[j], "lr ", 3) || !strncmp(l0[j], "seed ", 5)) continue;
    int all = 1;
    for (int i = 1; i < nr && all; i++) all = st_has_line(lines[i], nl[i], l0[j]);
    if (all) fprintf(md, "%s\n", l0[j]);
  }
  fprintf(md, "```\n\nand per configuration (crossed with the learning rates and seeds below):\n\n");
  fprintf(md, "| configuration | keys that differ |\n| --- | --- |\n");
  for (int i = 0; i < nr; i++) {
    const srun *r = &st->run[i];
    if (r->lri != 0 || r->seedi != 0) continue;
    fprintf(md, "| %s | ", r->name);
    int first = 1;
    for (int j = 0; j < nl[i]; j++) {
      const char *s = lines[i][j];
      if (st_has_line(dl, nd, s) || st_skip_line(s) || !strncmp(s, "lr ", 3) || !strncmp(s, "seed ", 5)) continue;
      int all = 1;
      for (int q = 0; q < nr && all; q++) all = st_has_line(lines[q], nl[q], s);
      if (all) continue;
      fprintf(md, "%s`", first ? "" : " ");
      for (const char *p = s; *p; p++) fputc(*p == '|' ? '/' : *p, md);
      fputc('`', md);
      first = 0;
    }
    fprintf(md, "%s |\n", first ? "(none)" : "");
  }
  fprintf(md, "\nLearning rates: ");
  for (int i = 0; i < st->nlr; i++) {
    char b[32];
    st_fmt_lr(st->lr[i], b, sizeof b);
    fprintf(md, "%s%s", i ? ", " : "", b);
  }
  const int s1 = st->first_seed > 0 ? st->first_seed : 1; /* a confirmation's fresh seeds start later */
  fprintf(md, " (engine default %g); seeds: %d (%d..%d); steps: %ld. %d runs, %d at a time (one thread each), %.0f s in all.\n\n",
          st->lr0, st->nseeds, s1, s1 + st->nseeds - 1, st->steps, st->nrun, st->threads, st->seconds);
  if (st->note[0]) fprintf(md, "%s\n\n", st->note);
  for (int i = 0; i < nr; i++) st_free_lines(lines[i], nl[i]);
  if (l0) st_free_lines(l0, n0);
  st_free_lines(dl, nd);
}

void st_report_runs_table(study *st, FILE *md) {
  tbl *t = st_tbl_new(10, "run", "lr", "seed", "final", "min", "val", "spikes", "diverged", "fallbacks", "s");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    char b[48];
    st_tbl_cell(t, 0, "%s", r->name);
    st_fmt_lr(r->lr, b, sizeof b);
    st_tbl_cell(t, 1, "%s", b);
    st_tbl_cell(t, 2, "%llu", r->seed);
    if (r->failed) {
      st_tbl_cell(t, 3, r->missing ? "not run yet" : "failed");
      st_tbl_end_row(t);
      continue;
    }
    st_fmt_num(r->res.final_loss_avg, b, sizeof b);
    st_tbl_cell(t, 3, "%s", b);
    st_fmt_num(r->res.min_loss, b, sizeof b);
    st_tbl_cell(t, 4, "%s", b);
    st_fmt_num(r->res.val_loss, b, sizeof b);
    st_tbl_cell(t, 5, "%s", b);
    st_tbl_cell(t, 6, "%ld", r->res.spikes);
    st_fmt_diverged(r, b, sizeof b);
    st_tbl_cell(t, 7, "%s", b);
    st_tbl_cell(t, 8, "%ld", r->res.fallbacks);
    st_tbl_cell(t, 9, "%.1f", r->res.seconds);
    st_tbl_end_row(t);
  }
  fprintf(md, "## Runs\n\n`final` is the mean loss of the last 10%% of steps, `min` the lowest step loss, `val` the "
              "validation loss at the end (nan: not evaluated or diverged), `diverged` the rule's word (final above the first "
              "step's loss, or not finite) with the first step above the first loss (an excursion when the run came back; "
              "runs.csv's `diverged_at` is that step). Every run: `runs.csv`, `runs/LABEL/`.\n\n");
  st_tbl_emit(st, t, md, st->nrun <= 40 ? "runs (final = mean loss of the last 10% of steps):" : NULL);
  if (st->nrun > 40) fprintf(st->log, "\n(%d runs: see %s/runs.csv)\n", st->nrun, st->dir);
}

void st_report_findings(study *st, FILE *md) {
  int nv = 0, no = 0;
  for (int i = 0; i < st->nfind; i++) {
    if (st->find[i].verdict == ST_V_OBSERVATION) no++;
    else nv++;
  }
  fprintf(md, "## Claims and verdicts\n\n");
  fprintf(md, "Each verdict comes from the study file's claim and the one rule system of the claims engine "
              "(experiments/study_claims.c, docs/studies/README.md): reproduced / not reproduced / inconclusive / "
              "not testable here, with at least %d paired seeds for any verdict.\n\n", ST_MIN_SEEDS);
  for (int i = 0; i < st->nfind; i++)
    if (st->find[i].verdict != ST_V_OBSERVATION)
      fprintf(md, "- **%s**: %s %s\n", st_verdict_name(st->find[i].verdict), st->find[i].claim, st->find[i].evidence);
  if (!nv) fprintf(md, "- (no claim: the study file states none, or no run was usable)\n");
  if (no) {
    fprintf(md, "\n## Observations\n\nNumbers from the study's analysis, not verdicts.\n\n");
    for (int i = 0; i < st->nfind; i++)
      if (st->find[i].verdict == ST_V_OBSERVATION) fprintf(md, "- %s %s\n", st->find[i].claim, st->find[i].evidence);
  }
  if (st->file) return; /* a study file's rules: st_report_rules */
  fprintf(md, "\n## Rules\n\nSpike: a loss above %g x the median of the previous %d losses (the engine's detector, "
              "applied identically to every run). Divergence: a non-finite loss, or after warmup a loss above the "
              "first step's loss. Plots of the loss show a trailing mean (stated on the axis); tables use the mean "
              "of the last 10%% of steps.\n",
          st->nrun ? st->run[0].cfg->spike_factor : 1.5, st->nrun ? st->run[0].cfg->spike_window : 32);
}

void st_report_console_findings(study *st) {
  fputc('\n', st->log);
  st_report_testbed(st, st->log, "testbed: ");
  fprintf(st->log, "verdicts (the study file's claims):\n");
  int nv = 0;
  for (int i = 0; i < st->nfind; i++)
    if (st->find[i].verdict != ST_V_OBSERVATION)
      fprintf(st->log, "  [%s] %s %s\n", st_verdict_name(st->find[i].verdict), st->find[i].claim, st->find[i].evidence), nv++;
  if (!nv) fprintf(st->log, "  none: the file states no claim (an exploratory study: its tables are observations)\n");
  int no = 0;
  for (int i = 0; i < st->nfind; i++) no += st->find[i].verdict == ST_V_OBSERVATION;
  if (no) fprintf(st->log, "(%d observation%s of the analysis in the report)\n", no, no == 1 ? "" : "s");
}
