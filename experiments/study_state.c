/* study_state.c: what a study's run folder keeps between invocations, so a
 * rerun skips finished runs and resumes checkpointed ones (study_int.h).
 *   runs/DIR/id          the run's id: a hash of its resolved config
 *   runs/DIR/result.txt  the finished run's numbers, floats in %a (exact),
 *                        with its id: a run is done when this file's id is
 *                        the run's
 *   runs/DIR/ckpt.bin    the engine's checkpoint every ckpt_every steps
 *                        (byte-exact resume, docs/training.md); removed once
 *                        the run is done
 * The id hashes the engine config as xp_config_write prints it, without the
 * keys that do not change results (out_dir, threads, progress, ckpt,
 * ckpt_every) and with a value's leading results folder written {dir}: the
 * same run in another folder has the same id. */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void st_run_id(const study *st, const srun *r, char *id, size_t n) {
  int nl;
  char **l = st_config_lines(r->cfg, &nl);
  uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
  const size_t dl = strlen(st->dir);
  for (int i = 0; i < nl; i++) {
    if (st_skip_line(l[i]) || !strncmp(l[i], "ckpt", 4)) continue;
    const char *eq = strstr(l[i], " = "), *p = l[i];
    if (eq && dl && !strncmp(eq + 3, st->dir, dl) && eq[3 + dl] == '/') { /* a path in the results folder */
      for (; p < eq + 3; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
      for (const char *q = "{dir}"; *q; q++) h = (h ^ (unsigned char)*q) * 1099511628211ull;
      p += dl;
    }
    for (; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ '\n') * 1099511628211ull;
  }
  st_free_lines(l, nl);
  snprintf(id, n, "%016llx", (unsigned long long)h);
}

static void path_of(const srun *r, const char *name, char *p, size_t n) {
  snprintf(p, n, "%.*s/%s", (int)(n - strlen(name) - 2), r->cfg->out_dir, name);
}

int st_result_save(const srun *r) {
  char p[XP_PATH + 32];
  path_of(r, "result.txt", p, sizeof p);
  xp_replace out;
  if (xp_replace_open(&out, p, NULL, 0)) return -1;
  FILE *f = out.f;
  const xp_result *s = &r->res;
  fprintf(f, "exmy-study-run 1\nid %s\n", r->id);
  fprintf(f, "steps_done %ld\nspikes %ld\nfirst_spike %ld\ndiverged_at %ld\nfallbacks %ld\nchecks %ld\nnparams %zu\n",
          s->steps_done, s->spikes, s->first_spike, s->diverged_at, s->fallbacks, s->checks, s->nparams);
  fprintf(f, "first_loss %a\nfinal_loss %a\nmin_loss %a\nfinal_loss_avg %a\nval_loss %a\nseconds %a\ntokens_per_s %a\n",
          s->first_loss, s->final_loss, s->min_loss, s->final_loss_avg, s->val_loss, s->seconds, s->tokens_per_s);
  for (long i = 0; i < s->steps_done; i++) fprintf(f, "%a\n", s->loss[i]);
  return xp_replace_close(&out, 0) || xp_replace_rename(&out) ? -1 : 0;
}

static int rd_long(FILE *f, const char *k, long *v) {
  char key[32];
  return fscanf(f, "%31s %ld", key, v) == 2 && !strcmp(key, k) ? 0 : -1;
}
static int rd_dbl(FILE *f, const char *k, double *v) {
  char key[32], t[64];
  if (fscanf(f, "%31s %63s", key, t) != 2 || strcmp(key, k)) return -1;
  *v = strtod(t, NULL); /* %a, nan and inf read back exactly */
  return 0;
}

/* 1: the run's finished result was read into r->res; 0: none (or another id). */
int st_result_load(srun *r) {
  char p[XP_PATH + 32], id[64] = "", magic[32] = "";
  path_of(r, "result.txt", p, sizeof p);
  FILE *f = fopen(p, "r");
  if (!f) return 0;
  xp_result s;
  memset(&s, 0, sizeof s);
  long np = 0;
  int ok = fscanf(f, "%31s 1 id %63s", magic, id) == 2 && !strcmp(magic, "exmy-study-run") && !strcmp(id, r->id) &&
           !rd_long(f, "steps_done", &s.steps_done) && !rd_long(f, "spikes", &s.spikes) &&
           !rd_long(f, "first_spike", &s.first_spike) && !rd_long(f, "diverged_at", &s.diverged_at) &&
           !rd_long(f, "fallbacks", &s.fallbacks) && !rd_long(f, "checks", &s.checks) && !rd_long(f, "nparams", &np) &&
           !rd_dbl(f, "first_loss", &s.first_loss) && !rd_dbl(f, "final_loss", &s.final_loss) &&
           !rd_dbl(f, "min_loss", &s.min_loss) && !rd_dbl(f, "final_loss_avg", &s.final_loss_avg) &&
           !rd_dbl(f, "val_loss", &s.val_loss) && !rd_dbl(f, "seconds", &s.seconds) &&
           !rd_dbl(f, "tokens_per_s", &s.tokens_per_s) && s.steps_done >= 0 && s.steps_done <= 100000000;
  if (ok) {
    s.nparams = (size_t)np;
    s.loss = malloc(((size_t)s.steps_done + 1) * sizeof *s.loss);
    char t[64];
    for (long i = 0; ok && s.loss && i < s.steps_done; i++) {
      if (fscanf(f, "%63s", t) != 1) ok = 0;
      else s.loss[i] = strtod(t, NULL);
    }
    if (!s.loss) ok = 0;
  }
  fclose(f);
  if (!ok) { free(s.loss); return 0; }
  r->res = s;
  return 1;
}

/* Before a run: its id file; a checkpoint of the same id to resume from. */
void st_run_prepare(const srun *r, xp_config *c) {
  char p[XP_PATH + 32], old[64] = "";
  path_of(r, "id", p, sizeof p);
  FILE *f = fopen(p, "r");
  if (f) {
    if (fscanf(f, "%63s", old) != 1) old[0] = 0;
    fclose(f);
  }
  char ck[XP_PATH + 32];
  path_of(r, "ckpt.bin", ck, sizeof ck);
  if (strcmp(old, r->id)) { /* another config's leftovers: start afresh */
    unlink(ck);
    xp_replace out; /* a kill mid-write leaves the old id or the new one, never half of it */
    if (!xp_replace_open(&out, p, NULL, 0)) {
      fprintf(out.f, "%s\n", r->id);
      if (!xp_replace_close(&out, 0)) xp_replace_rename(&out);
    }
    return;
  }
  if (!strcmp(c->ckpt, ck) && !access(ck, R_OK) && strlen(ck) < sizeof c->resume) memcpy(c->resume, ck, strlen(ck) + 1);
}

/* After a run: keep its result, drop its checkpoint. */
void st_run_finish(const srun *r, const xp_config *c) {
  if (r->failed) return;
  st_result_save(r);
  char ck[XP_PATH + 32];
  path_of(r, "ckpt.bin", ck, sizeof ck);
  if (!strcmp(c->ckpt, ck) && !r->keep_ckpt) unlink(ck); /* kept: a later run starts from it */
}
