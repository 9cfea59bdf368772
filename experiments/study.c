/* study.c: exmy's FP8 stability studies (study.h, docs/studies/README.md):
 * finding a study's file, and the driver (the analysis hooks: study_hooks.c).  The
 * machinery is split by concept (study_int.h lists the files); every study
 * is a file (experiments/studies/NAME.study), some with a C analysis in
 * study_NAME.c. */
#include "experiments/study_int.h"
#include "exmy.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ====================================================================== */
/* the study files                                                         */
/* ====================================================================== */

/* Folders that hold the built-in study files, in the order searched: the
 * EXMY_STUDY_DIR environment variable, the source tree (a build tree's
 * command reads the files it was built with), the installed copy. */
#ifndef EXMY_STUDY_SRCDIR
#define EXMY_STUDY_SRCDIR "experiments/studies"
#endif
#ifndef EXMY_STUDY_DATADIR
#define EXMY_STUDY_DATADIR "/usr/local/share/exmy/studies"
#endif
static int study_dirs(const char **d) {
  int n = 0;
  const char *e = getenv("EXMY_STUDY_DIR");
  if (e && *e) d[n++] = e;
  d[n++] = EXMY_STUDY_SRCDIR;
  d[n++] = EXMY_STUDY_DATADIR;
  return n;
}

static int is_plain_name(const char *s) {
  if (!*s) return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-')) return 0;
  return 1;
}

/* A name or a path to a study file: 1 with the file's path, 0 when not found. */
static int study_file_path(const char *name, char *path, size_t n) {
  if (strchr(name, '/') || (strlen(name) > 6 && !strcmp(name + strlen(name) - 6, ".study"))) {
    snprintf(path, n, "%s", name);
    return 1;
  }
  if (!is_plain_name(name)) return 0;
  const char *d[3];
  const int nd = study_dirs(d);
  for (int i = 0; i < nd; i++) {
    snprintf(path, n, "%s/%s.study", d[i], name);
    FILE *f = fopen(path, "r");
    if (f) { fclose(f); return 1; }
  }
  return 0;
}

int study_exists(const char *name) {
  char p[XP_PATH];
  return study_file_path(name, p, sizeof p);
}

/* The built-in studies: default, then the hooks' order, then the other
 * files in the study folders; each with its file's description line. */
void study_list(FILE *out, int names_only) {
  char names[128][64];
  int n = 0;
  snprintf(names[n++], sizeof names[0], "default"); /* the main job first, then the studies with an analysis */
  for (int i = 0; st_report_hook_name(i); i++) snprintf(names[n++], sizeof names[0], "%s", st_report_hook_name(i));
  const char *d[3];
  const int nd = study_dirs(d);
  for (int i = 0; i < nd; i++) {
    char cmd[XP_PATH + 64];
    snprintf(cmd, sizeof cmd, "ls '%s' 2>/dev/null", d[i]);
    FILE *ls = popen(cmd, "r");
    if (!ls) continue;
    char line[256];
    while (fgets(line, sizeof line, ls) && n < 128) {
      line[strcspn(line, "\n")] = 0;
      const size_t l = strlen(line);
      if (l <= 6 || strcmp(line + l - 6, ".study")) continue;
      line[l - 6] = 0;
      int k = 0;
      while (k < n && strcmp(names[k], line)) k++;
      if (k == n && is_plain_name(line)) snprintf(names[n++], sizeof names[0], "%s", line);
    }
    pclose(ls);
  }
  int col = 9, shown = 0; /* names_only: the line's width, names printed */
  for (int k = 0; k < n; k++) {
    char path[XP_PATH], err[EXMY_ERRLEN];
    const char *desc = NULL;
    study_file f;
    int have = 0;
    if (study_file_path(names[k], path, sizeof path) && !st_file_read(&f, path, err, sizeof err)) {
      have = 1;
      desc = st_file_get(&f, STUDY_DEFAULT, "description", NULL);
    }
    if (desc && names_only) { /* "Studies: a, b, ..." wrapped at 90 columns */
      col += (int)strlen(names[k]) + 2;
      if (col > 90) fputs(",\n         ", out), col = 9 + (int)strlen(names[k]) + 2;
      else if (shown) fputs(", ", out);
      fprintf(out, "%s%s", shown++ ? "" : "Studies: ", names[k]);
    } else if (desc) fprintf(out, "%-13s %s\n", names[k], desc);
    if (have) st_file_free(&f);
  }
  if (names_only && shown) fputs("\n", out);
}

void study_opts_init(study_opts *o) {
  memset(o, 0, sizeof *o);
  o->plots = 1;
}

/* ====================================================================== */
/* the driver                                                              */
/* ====================================================================== */

static int parse_lrs(study *st, const char *text, char *err, size_t errlen) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", text);
  st->nlr = 0;
  for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
    char *end;
    errno = 0;
    double v = strtod(tok, &end);
    if (end == tok || *end || errno || !(v > 0) || !isfinite(v)) {
      snprintf(err, errlen, "study: --lrs: bad learning rate '%s' (accepted: positive numbers, comma-separated)", tok);
      return 2;
    }
    if (st->nlr >= MAX_LR) {
      snprintf(err, errlen, "study: --lrs: at most %d learning rates", MAX_LR);
      return 2;
    }
    st->lr[st->nlr++] = v;
  }
  if (!st->nlr) {
    snprintf(err, errlen, "study: --lrs: empty list");
    return 2;
  }
  st->lrs_given = 1;
  return 0;
}

static void free_study(study *st) {
  for (int i = 0; i < st->nrun; i++) xp_result_free(&st->run[i].res);
  free(st->run);
  free(st->cfgs);
  free(st->claim);
  free(st->gemm);
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int study_main(const char *name, const study_opts *o, char *err, size_t errlen) {
  if (!name || !*name) name = "default";
  study *st = calloc(1, sizeof *st);
  study_file *file = calloc(1, sizeof *file);
  study_def *fdef = calloc(1, sizeof *fdef);
  if (!st || !file || !fdef) {
    free(st), free(file), free(fdef);
    snprintf(err, errlen, "study: out of memory");
    return 1;
  }
  int rc = 0, lock = -1;
  char fpath[XP_PATH], sname[64];
  if (study_file_path(name, fpath, sizeof fpath)) {
    if ((rc = st_file_read(file, fpath, err, errlen))) goto out;
    st->file = file;
    const char *nm = st_file_get(file, o->size, "name", NULL);
    if (!nm) { /* the file's base name without .study */
      const char *b = strrchr(fpath, '/');
      snprintf(sname, sizeof sname, "%.63s", b ? b + 1 : fpath);
      char *dot = strstr(sname, ".study");
      if (dot) *dot = 0;
      nm = sname;
    }
    const char *rep = st_file_get(file, o->size, "report", NULL);
    fdef->name = nm;
    fdef->desc = st_file_get(file, o->size, "description", NULL);
    fdef->published = st_file_get(file, o->size, "published", NULL);
    if (!fdef->published) fdef->published = "(none stated)";
    fdef->report = rep ? st_report_hook(rep) : NULL;
    st->def = fdef;
    name = nm;
  } else {
    snprintf(err, errlen, "study: unknown study '%s' (see exmy study --list; a study file's path also works)", name);
    rc = 2;
    goto out;
  }
  st->o = o;
  st->log = o->log ? o->log : stdout;
  st->size = o->size;
  if (o->out_dir) snprintf(st->dir, sizeof st->dir, "%s", o->out_dir);
  else snprintf(st->dir, sizeof st->dir, "results/%s", name);
  while (strlen(st->dir) > 1 && st->dir[strlen(st->dir) - 1] == '/') st->dir[strlen(st->dir) - 1] = 0;
  xp_config def;
  xp_config_default(&def);
  st->lr0 = def.lr;
#ifdef _OPENMP
  st->threads = o->threads > 0 ? o->threads : omp_get_max_threads();
  /* one thread per run: never more runs at once than the cores this process may use
   * (its affinity mask: taskset, a Slurm allocation), or they wait on each other */
  if (st->threads > omp_get_num_procs()) {
    fprintf(o->log ? o->log : stdout, "study: --threads %d is more than the %d cores this process may use: %d runs at a time\n",
            st->threads, omp_get_num_procs(), omp_get_num_procs());
    st->threads = omp_get_num_procs();
  }
#else
  st->threads = 1;
#endif
  if (o->lrs && (rc = parse_lrs(st, o->lrs, err, errlen))) goto out;
  char corpus[XP_PATH + 64];
  if (o->data && strcmp(o->data, "builtin") && !xp_corpus_path(o->data, corpus, sizeof corpus)) { /* a file */
    FILE *df = fopen(o->data, "r");
    if (!df) {
      snprintf(err, errlen, "study: --data %s: cannot open: %s", o->data, strerror(errno));
      rc = 2;
      goto out;
    }
    fclose(df);
  }
  if ((rc = st_file_setup(st, err, errlen))) goto out;
  if ((rc = st_build_configs(st, err, errlen))) goto out;
  if (o->dry_run) {
    xp_config d0;
    xp_config_default(&d0);
    int nd;
    char **dl = st_config_lines(&d0, &nd);
    qsort(dl, (size_t)nd, sizeof *dl, cmp_line); /* looked up once per line of every run */
    fprintf(st->log, "study %s: %d runs (%s size, %ld steps, %d seed%s, %d learning rate%s), results in %s\n", name,
            st->nrun, st->size == STUDY_TINY ? "tiny" : st->size == STUDY_FULL ? "full" : "default", st->steps,
            st->nseeds, st->nseeds > 1 ? "s" : "", st->nlr, st->nlr > 1 ? "s" : "", st->dir);
    for (int i = 0; i < st->nrun; i++) {
      int nl;
      char **l = st_config_lines(st->run[i].cfg, &nl);
      fprintf(st->log, "[%d/%d] %s", i + 1, st->nrun, st->run[i].label);
      if (st->run[i].phase) fprintf(st->log, " (phase %d)", st->run[i].phase + 1);
      fputc(':', st->log);
      for (int j = 0; j < nl; j++)
        if (!bsearch(&l[j], dl, (size_t)nd, sizeof *dl, cmp_line) && !st_skip_line(l[j])) {
          /* "key = value" -> "key=value" */
          const char *eq = strstr(l[j], " = ");
          if (eq) fprintf(st->log, " %.*s=%s", (int)(eq - l[j]), l[j], eq + 3);
          else fprintf(st->log, " %s", l[j]);
        }
      fputc('\n', st->log);
      st_free_lines(l, nl);
    }
    st_free_lines(dl, nd);
    goto out;
  }
  char de[EXMY_ERRLEN];
  if (xp_mkdir_p(st->dir, de, sizeof de)) {
    snprintf(err, errlen, "study: %s", de);
    rc = 1;
    goto out;
  }
  /* one study per results folder: shards share it (each locks its runs' folders), an
   * MPI job's rank 0 holds it for its workers */
  if (!(o->queue && o->queue_role == STUDY_QUEUE_WORKER)) {
    lock = xp_dir_lock(st->dir, o->shard_n > 1 && !o->report_only, de, sizeof de);
    if (lock < 0) {
      snprintf(err, errlen, "study: results %s%s", de, lock == -2 ? "; wait for it to end or give another --out" : "");
      rc = lock == -2 ? 2 : 1;
      goto out;
    }
  }
  char rd[XP_PATH + 16];
  snprintf(rd, sizeof rd, "%s/runs", st->dir);
  xp_mkdir_p(rd, NULL, 0);
  st->gnuplot = o->plots && system("command -v gnuplot >/dev/null 2>&1") == 0;
  fprintf(st->log, "study %s: %s\n%d runs (%ld steps, %d seed%s, %d learning rate%s), %d at a time; results in %s\n", name,
          st->def->desc, st->nrun, st->steps, st->nseeds, st->nseeds > 1 ? "s" : "", st->nlr, st->nlr > 1 ? "s" : "",
          st->threads, st->dir);
  fflush(st->log);
  const double t0 = st_now_s();
  st_run_all(st);
  st->seconds = st_now_s() - t0;
  if (o->queue && o->queue_role == STUDY_QUEUE_WORKER) goto out; /* the server writes the report */
  /* the direct GEMM experiment: run by whoever runs the study (shard 1 of N),
   * read back by --report */
  if (st->gemm) {
    if (o->report_only || (o->shard_n > 1 && o->shard_i != 1)) st_gemm_load(st);
    else st_gemm_run(st);
  }
  if (o->refine) {
    rc = st_refine_propose(st, err, errlen);
    goto out;
  }
  if (o->shard_n > 1 && !o->report_only) {
    int mine = 0, fail = 0, wait = 0;
    for (int i = 0; i < st->nrun; i++)
      if (st_run_mine(st, i)) {
        mine++;
        wait += st->run[i].missing; /* its starting checkpoint is not there */
        fail += st->run[i].failed && !st->run[i].missing;
      }
    fprintf(st->log, "shard %d/%d: %d of the %d runs (%d failed) in %s/runs; when every shard is done: exmy study %s --report%s%s\n",
            o->shard_i, o->shard_n, mine, st->nrun, fail, st->dir, st->file ? st->file->path : name,
            o->out_dir ? " --out " : "", o->out_dir ? o->out_dir : "");
    if (wait)
      fprintf(st->log, "shard %d/%d: %d of its runs start from a checkpoint that is not there (see runs/*/); rerun this shard\n",
              o->shard_i, o->shard_n, wait);
    if (fail || wait) {
      snprintf(err, errlen, "study %s: shard %d/%d: of its %d runs, %d failed and %d could not start (runs.csv comes with --report)",
               name, o->shard_i, o->shard_n, mine, fail, wait);
      rc = 1;
    }
    goto out;
  }
  st_write_runs_csv(st);

  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/report.md", st->dir);
  FILE *md = fopen(path, "w");
  if (!md) {
    snprintf(err, errlen, "study: cannot write '%s': %s", path, strerror(errno));
    rc = 1;
    goto out;
  }
  fprintf(md, "# exmy study %s\n\n%s.\n\n", name, st->def->desc);
  if (o->command) fprintf(md, "Command: `%s` (exmy %s)\n\n", o->command, exmy_version());
  fprintf(md, "**Published result.** %s\n\n", st->def->published);
  st_report_setup(st, md);
  st_report_runs_table(st, md);
  int nok = 0;
  for (int i = 0; i < st->nrun; i++) nok += !st->run[i].failed;
  st_rules_eval(st);
  if (nok && st->def->report) st->def->report(st, md);
  else if (st->gemm) st_report_gemm(st, md, "GEMM error against the reference as k grows");
  const int blocks = nok ? st_blocks_report(st, md) : 0;
  if (nok && !st->def->report && !blocks) { /* no analysis and no blocks: loss curves with seed bands per learning rate */
    fprintf(md, "## Loss curves\n\n");
    for (int li = 0; li < st->nlr && li < 4; li++) {
      char stem[32], title[96], lrs[32];
      st_fmt_lr(st->lr[li], lrs, sizeof lrs);
      snprintf(stem, sizeof stem, st->nlr > 1 ? "loss-lr%d" : "loss", li + 1);
      snprintf(title, sizeof title, "Training loss at lr %s (%d seed%s)", lrs, st->nseeds, st->nseeds > 1 ? "s" : "");
      st_plot_seed_bands(st, md, stem, title, li, st_smooth_for(st));
    }
  }
  st_claims_eval(st);
  st_report_findings(st, md);
  st_report_rules(st, md);
  st_report_conclude(st, md);
  st_plot_claims(st, md);
  if (o->plot_file && st->nplot) { /* the main figure: the claims' when drawn, else the first */
    const char *stem = st->plot[st->nplot - 1];
    if (strcmp(stem, "claims")) stem = st->plot[0];
    char abs[XP_PATH * 2 + 8] = "", cwd[XP_PATH];
    if (o->plot_file[0] != '/' && getcwd(cwd, sizeof cwd)) snprintf(abs, sizeof abs, "%s/", cwd);
    strncat(abs, o->plot_file, sizeof abs - strlen(abs) - 1);
    char cmd[XP_PATH * 3 + 512];
    if (!strchr(abs, '\'') && !strchr(st->dir, '\'') && !strchr(abs, '"') &&
        snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot -e \"exmy_out=1; set terminal %s; set output '%s'\" '%s.gp' >/dev/null 2>&1",
                 st->dir, o->plot_term, abs, stem) < (int)sizeof cmd &&
        system(cmd) == 0)
      fprintf(st->log, "plot: %s (%s)\n", o->plot_file, stem);
    else fprintf(st->log, "exmy: study: --plot %s: gnuplot failed on %s/%s.gp\n", o->plot_file, st->dir, stem);
  }
  {
    int nm = 0;
    for (int i = 0; i < st->nrun; i++) nm += st->run[i].missing;
    if (nm) {
      fprintf(md, "\n**Missing runs** (%d of %d, not run yet; the tables and verdicts above leave them out):", nm, st->nrun);
      for (int i = 0, k = 0; i < st->nrun; i++)
        if (st->run[i].missing) fprintf(md, "%s `%s`", k++ ? "," : "", st->run[i].label);
      fprintf(md, ".\n");
    }
  }
  if (!st->gnuplot) fprintf(md, "\n(gnuplot was not run: plots are only their data and scripts, `*.dat`, `*.gp`.)\n");
  if (!nok) fprintf(md, "\nEvery run failed (see `runs.csv`): no analysis.\n");
  fclose(md);
  st->seconds = st_now_s() - t0;
  st_write_summary_json(st);
  st_report_console_findings(st);
  int nfail = 0, nmiss = 0;
  const srun *ff = NULL;
  for (int i = 0; i < st->nrun; i++)
    if (st->run[i].missing) nmiss++;
    else if (st->run[i].failed) { nfail++; if (!ff) ff = &st->run[i]; }
  if (nmiss) {
    fprintf(st->log, "missing runs (%d of %d, not run yet: the report covers the others):", nmiss, st->nrun);
    int shown = 0; /* the first few: a partial sweep can miss hundreds (report.md lists them all) */
    for (int i = 0; i < st->nrun && shown < 5; i++)
      if (st->run[i].missing) fprintf(st->log, " '%s'", st->run[i].label), shown++;
    if (nmiss > shown) fprintf(st->log, " and %d more (report.md lists them)", nmiss - shown);
    fputc('\n', st->log);
  }
  char tm[32];
  st_fmt_time(st->seconds, tm, sizeof tm);
  fprintf(st->log, "\nreport: %s/report.md  runs: %s/runs.csv  summary: %s/summary.json\n", st->dir, st->dir, st->dir);
  if (st->nplot) {
    fprintf(st->log, "plots (%s):",
            st->gnuplot ? "svg + png" : o->plots ? "data and gnuplot scripts only: gnuplot not found" : "not drawn: data and gnuplot scripts");
    for (int i = 0; i < st->nplot; i++) fprintf(st->log, " %s/%s.%s", st->dir, st->plot[i], st->gnuplot ? "svg" : "gp");
    fputc('\n', st->log);
  }
  fprintf(st->log, "%d runs in %s\n", st->nrun, tm);
  if (nfail) {
    snprintf(err, errlen, "study %s: %d of %d runs failed (first: %s: %s)", name, nfail, st->nrun, ff->label, ff->err);
    rc = 1;
  }
out:
  xp_dir_unlock(lock);
  free_study(st);
  free(st);
  st_file_free(file);
  free(file);
  free(fdef);
  return rc;
}
