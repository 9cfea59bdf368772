/* study_runner.c: a study's runs, their engine configs, the parallel runner
 * and per-run data (study_int.h). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ====================================================================== */
/* runs                                                                    */
/* ====================================================================== */

void st_base_kv(study *st, const char *k, const char *fmt, ...) {
  for (int i = 0; i < st->nbase; i++)
    if (!strcmp(st->base[i].k, k)) { /* replace */
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(st->base[i].v, sizeof st->base[i].v, fmt, ap);
      va_end(ap);
      return;
    }
  if (st->nbase >= MAX_BASE) return;
  kv *b = &st->base[st->nbase++];
  snprintf(b->k, sizeof b->k, "%s", k);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->v, sizeof b->v, fmt, ap);
  va_end(ap);
}

static srun *new_run(study *st) {
  if (st->nrun == st->cap) {
    st->cap = st->cap ? 2 * st->cap : 32;
    st->run = realloc(st->run, (size_t)st->cap * sizeof *st->run);
    if (!st->run) { fprintf(stderr, "exmy: study: out of memory\n"); exit(1); }
  }
  srun *r = &st->run[st->nrun++];
  memset(r, 0, sizeof *r);
  return r;
}

/* Replace {dir} and {run} in a value. */
static void subst(const study *st, const srun *r, const char *in, char *out, size_t n) {
  char lrs[32], tagb[96];
  st_fmt_lr(r->lr, lrs, sizeof lrs);
  snprintf(tagb, sizeof tagb, "lr%s-seed%llu", lrs, r->seed);
  size_t j = 0;
  for (const char *p = in; *p && j + 1 < n;) {
    const char *rep = NULL;
    size_t skip = 0;
    if (!strncmp(p, "{dir}", 5)) { rep = st->dir; skip = 5; }
    else if (!strncmp(p, "{run}", 5)) { rep = tagb; skip = 5; }
    if (rep) {
      for (const char *q = rep; *q && j + 1 < n; q++) out[j++] = *q;
      p += skip;
    } else out[j++] = *p++;
  }
  out[j] = 0;
}

/* Add a config (name, group, x, tag, phase, then "key=value" strings)
 * crossed with every learning rate and seed. */
void st_add_cfgv(study *st, const char *name, const char *group, double x, const char *tag, int phase,
                 const char *const *kvs, int nk) {
  if (nk > MAX_KV - 2) nk = MAX_KV - 2;
  for (int li = 0; li < st->nlr; li++)
    for (int si = 0; si < st->nseeds; si++) {
      srun *r = new_run(st);
      snprintf(r->name, sizeof r->name, "%s", name);
      snprintf(r->group, sizeof r->group, "%s", group ? group : name);
      snprintf(r->tag, sizeof r->tag, "%s", tag ? tag : "");
      r->x = x;
      r->lr = st->lr[li];
      r->seed = (unsigned long long)(si + (st->first_seed > 0 ? st->first_seed : 1));
      r->lri = li;
      r->seedi = si;
      r->phase = phase;
      r->parent = -1;
      char lrs[32];
      st_fmt_lr(r->lr, lrs, sizeof lrs);
      snprintf(r->label, sizeof r->label, "%s", name);
      if (st->nlr > 1) st_cat(r->label, sizeof r->label, " lr=%s", lrs);
      if (st->nseeds > 1) st_cat(r->label, sizeof r->label, " seed=%llu", r->seed);
      st_safe_name(r->label, r->dir, sizeof r->dir);
      snprintf(r->kv[r->nkv].k, sizeof r->kv[0].k, "lr");
      snprintf(r->kv[r->nkv++].v, sizeof r->kv[0].v, "%.9g", r->lr);
      snprintf(r->kv[r->nkv].k, sizeof r->kv[0].k, "seed");
      snprintf(r->kv[r->nkv++].v, sizeof r->kv[0].v, "%llu", r->seed);
      for (int i = 0; i < nk; i++) {
        const char *eq = strchr(kvs[i], '=');
        if (!eq) continue;
        kv *p = &r->kv[r->nkv++];
        snprintf(p->k, sizeof p->k, "%.*s", (int)(eq - kvs[i]), kvs[i]);
        subst(st, r, eq + 1, p->v, sizeof p->v);
      }
    }
}

/* A key the runner resolved (from, more_steps), in the run's listed config. */
static void run_kv(srun *r, const char *k, const char *v) {
  int i = 0;
  while (i < r->nkv && strcmp(r->kv[i].k, k)) i++;
  if (i == r->nkv && r->nkv < MAX_KV) r->nkv++;
  if (i == MAX_KV) return;
  snprintf(r->kv[i].k, sizeof r->kv[i].k, "%s", k);
  snprintf(r->kv[i].v, sizeof r->kv[i].v, "%s", v);
}

/* Build every run's config; 2 with err on a rejected key or value. */
static int build_configs(study *st, const xp_config *def, char *err, size_t errlen);
static int cmp_dir(const void *a, const void *b) {
  return strcmp((*(const srun *const *)a)->dir, (*(const srun *const *)b)->dir);
}

/* Two runs in one folder would overwrite each other's results: refuse (a
 * name longer than ST_NAMELEN is cut, so long arm names and axis values can
 * collide). */
static int check_dirs(const study *st, char *err, size_t errlen) {
  const srun **ix = malloc((size_t)(st->nrun ? st->nrun : 1) * sizeof *ix);
  if (!ix) {
    snprintf(err, errlen, "study: out of memory");
    return 1;
  }
  for (int i = 0; i < st->nrun; i++) ix[i] = &st->run[i];
  qsort(ix, (size_t)st->nrun, sizeof *ix, cmp_dir);
  int rc = 0;
  for (int i = 1; i < st->nrun && !rc; i++) {
    if (strcmp(ix[i - 1]->dir, ix[i]->dir)) continue;
    snprintf(err, errlen, "study %s: runs '%s' and '%s' would share the folder runs/%s (names are cut at %d "
             "characters: shorten an arm's name or axis values)", st->def->name, ix[i - 1]->label, ix[i]->label,
             ix[i]->dir, ST_NAMELEN - 1);
    rc = 2;
  }
  free(ix);
  return rc;
}

int st_build_configs(study *st, char *err, size_t errlen) {
  const int drc = check_dirs(st, err, errlen);
  if (drc) return drc;
  /* the defaults once (making them parses the preset's formats), copied per run; the
   * configs in one block beside the runs (an srun stays small while the file is read) */
  xp_config *def = malloc(sizeof *def);
  free(st->cfgs);
  st->cfgs = malloc((size_t)(st->nrun ? st->nrun : 1) * sizeof *st->cfgs);
  if (!def || !st->cfgs) {
    free(def);
    snprintf(err, errlen, "study: out of memory");
    return 1;
  }
  for (int i = 0; i < st->nrun; i++) st->run[i].cfg = &st->cfgs[i];
  xp_config_default(def);
  const int rc = build_configs(st, def, err, errlen);
  free(def);
  return rc;
}

static int build_configs(study *st, const xp_config *def, char *err, size_t errlen) {
  char e[EXMY_ERRLEN];
  for (int i = 0; i < st->nrun; i++) {
    srun *r = &st->run[i];
    xp_config *c = r->cfg;
    *c = *def;
    for (int b = 0; b < st->nbase; b++) {
      char v[XP_PATH];
      subst(st, r, st->base[b].v, v, sizeof v);
      if (xp_config_set(c, st->base[b].k, v, e, sizeof e)) {
        snprintf(err, errlen, "study %s: %s=%s: %s", st->def->name, st->base[b].k, v, e);
        return 2;
      }
    }
    for (int k = 0; k < r->nkv; k++)
      if (xp_config_set(c, r->kv[k].k, r->kv[k].v, e, sizeof e)) {
        snprintf(err, errlen, "study %s: run '%s': %s=%s: %s", st->def->name, r->label, r->kv[k].k, r->kv[k].v, e);
        return 2;
      }
    if (st->o->data && (xp_model_caps(c->model.kind) & XP_CAP_TOKENS) && xp_config_set(c, "data", st->o->data, e, sizeof e)) {
      snprintf(err, errlen, "study: --data %s: %s", st->o->data, e);
      return 2;
    }
    xp_config_set(c, "progress", "0", e, sizeof e);
    for (int s = 0; s < st->o->nset; s++) {
      char key[64];
      const char *kvs = st->o->set[s], *eq = strchr(kvs, '=');
      if (!eq || eq == kvs || (size_t)(eq - kvs) >= sizeof key) {
        snprintf(err, errlen, "study: --set '%s': expected KEY=VALUE", kvs);
        return 2;
      }
      snprintf(key, sizeof key, "%.*s", (int)(eq - kvs), kvs);
      if (xp_config_set(c, key, eq + 1, e, sizeof e)) {
        snprintf(err, errlen, "study: --set %s: %s", kvs, e);
        return 2;
      }
    }
    char od[XP_PATH + 224]; /* dir + runs/ + the run folder; xp_config_set rejects a path too long */
    snprintf(od, sizeof od, "%s/runs/%s", st->dir, r->dir);
    if (xp_config_set(c, "out_dir", od, e, sizeof e)) {
      snprintf(err, errlen, "study: out_dir %s: %s", od, e);
      return 2;
    }
    xp_config_set(c, "threads", "1", e, sizeof e);
  }
  /* from = ARM: a parent keeps its checkpoint (written every steps/10 and at
   * the end, so it also resumes after an interruption); its children resume
   * from it and train more_steps past it.  Phase order: a parent's steps are
   * final before its children read them. */
  int maxph = 0;
  for (int i = 0; i < st->nrun; i++)
    if (st->run[i].phase > maxph) maxph = st->run[i].phase;
  for (int ph = 0; ph <= maxph; ph++)
    for (int i = 0; i < st->nrun; i++) {
      srun *r = &st->run[i];
      if (r->phase != ph) continue;
      xp_config *c = r->cfg;
      char v[XP_PATH + 32];
      if (r->keep_ckpt) {
        snprintf(v, sizeof v, "%.*s/ckpt.bin", (int)sizeof v - 10, c->out_dir);
        if (xp_config_set(c, "ckpt", v, e, sizeof e)) {
          snprintf(err, errlen, "study %s: run '%s': ckpt=%s: %s", st->def->name, r->label, v, e);
          return 2;
        }
        c->ckpt_every = c->steps / 10 > 0 ? c->steps / 10 : 1;
        run_kv(r, "ckpt", v);
      }
      if (r->parent < 0) continue;
      const xp_config *pc = st->run[r->parent].cfg;
      if (xp_config_set(c, "resume", pc->ckpt, e, sizeof e)) {
        snprintf(err, errlen, "study %s: run '%s': resume=%s: %s", st->def->name, r->label, pc->ckpt, e);
        return 2;
      }
      run_kv(r, "resume", pc->ckpt);
      if (r->more_steps > 0) {
        c->steps = pc->steps + r->more_steps;
        snprintf(v, sizeof v, "%ld", c->steps);
        run_kv(r, "steps", v);
      }
    }
  return 0;
}

/* ====================================================================== */
/* the runner                                                              */
/* ====================================================================== */

static void progress_line(study *st, int done, int total, const srun *r, double t0) {
  char lrs[32], fin[32], mn[32], eta[48] = "";
  st_fmt_lr(r->lr, lrs, sizeof lrs);
  if (r->failed) {
    fprintf(st->log, "[%d/%d] %s lr=%s seed=%llu: FAILED: %s\n", done, total, r->name, lrs, r->seed, r->err);
  } else {
    st_fmt_num(r->res.final_loss_avg, fin, sizeof fin);
    st_fmt_num(r->res.min_loss, mn, sizeof mn);
    char dv[48];
    st_fmt_diverged(r, dv, sizeof dv);
    const double el = st_now_s() - t0;
    if (done < total) {
      char t[32];
      st_fmt_time(el / done * (total - done), t, sizeof t);
      snprintf(eta, sizeof eta, "  ETA %s", t);
    }
    fprintf(st->log, "[%d/%d] %s lr=%s seed=%llu: final %s min %s spikes %ld diverged %s  (%.1f s%s)%s\n", done, total,
            r->name, lrs, r->seed, fin, mn, r->res.spikes, dv, r->res.seconds, r->reused ? ", done before" : r->resumed ? ", resumed from its checkpoint" : "", eta);
  }
  fflush(st->log);
}

/* A continuation's (from = ARM) final loss is the mean of the last 10% of its
 * own steps: its loss array keeps its parent's, and the engine's mean of the
 * array's last 10% mixed them in (a 3-step continuation of a 150-step parent
 * was judged on 12 of the parent's steps, so runs ending at 11-25 nats read
 * "diverged no"). */
static void own_final(const study *st, srun *r) {
  if (r->parent < 0 || r->failed || !r->res.loss) return;
  const long at = st_own_start(st, r);
  if (at >= 0 && at < r->res.steps_done) r->res.final_loss_avg = xp_final_loss_avg(r->res.loss, at, r->res.steps_done);
}

/* One run: its numbers from an earlier invocation, or (mine) trained now
 * (resumed from its checkpoint when there is one), or (not mine) missing. */
static void run_one(study *st, int i, int mine) {
  srun *r = &st->run[i];
  char e[EXMY_ERRLEN] = "";
  memset(&r->res, 0, sizeof r->res);
  st_run_id(st, r, r->id, sizeof r->id);
  int have = st_result_load(r);
  if (have && r->keep_ckpt && mine && !st->o->report_only && access(r->cfg->ckpt, R_OK)) {
    /* finished, but a later run starts from its checkpoint and it is gone
     * (deleted, or made by an older exmy): train it again, same numbers */
    xp_result_free(&r->res);
    memset(&r->res, 0, sizeof r->res);
    have = 0;
  }
  if (have) r->reused = 1; /* finished before: its numbers, exactly */
  else if (st->o->report_only || !mine) {
    r->missing = r->failed = 1;
    snprintf(r->err, sizeof r->err, "missing: not run yet");
    r->res.final_loss = r->res.final_loss_avg = r->res.min_loss = r->res.val_loss = r->res.first_loss = NAN;
    r->res.diverged_at = -1;
  } else if (r->parent >= 0 && access(r->cfg->resume, R_OK)) { /* its starting point is not there */
    const srun *p = &st->run[r->parent];
    r->failed = 1;
    r->missing = !p->done || p->missing;
    snprintf(r->err, sizeof r->err, "%s: no checkpoint %.300s from run '%.150s'", r->missing ? "missing" : "failed",
             r->cfg->resume, p->label);
    r->res.final_loss = r->res.final_loss_avg = r->res.min_loss = r->res.val_loss = r->res.first_loss = NAN;
    r->res.diverged_at = -1;
  } else {
    xp_mkdir_p(r->cfg->out_dir, NULL, 0); /* a failure shows when the run writes */
    /* one writer per run folder (shards or MPI ranks given one run twice by mistake) */
    const int lk = xp_dir_lock(r->cfg->out_dir, 0, e, sizeof e);
    if (lk < 0) {
      r->failed = 1;
      snprintf(r->err, sizeof r->err, "run %s", e);
      r->res.final_loss = r->res.final_loss_avg = r->res.min_loss = r->res.val_loss = r->res.first_loss = NAN;
      r->res.diverged_at = -1;
      r->done = 1;
      return;
    }
    xp_config c = *r->cfg;
    if (!c.ckpt[0] && (!c.resume[0] || r->parent >= 0)) { /* checkpoints to resume from after an interruption */
      snprintf(c.ckpt, sizeof c.ckpt, "%.*s/ckpt.bin", (int)sizeof c.ckpt - 10, c.out_dir);
      c.ckpt_every = c.steps / 10 > 0 ? c.steps / 10 : 1;
    }
    st_run_prepare(r, &c);
    r->resumed = c.resume[0] && strcmp(c.resume, r->cfg->resume);
    if (xp_train(&c, &r->res, e, sizeof e)) {
      r->failed = 1;
      snprintf(r->err, sizeof r->err, "%s", e[0] ? e : "xp_train failed");
      r->res.final_loss = r->res.final_loss_avg = r->res.min_loss = r->res.val_loss = NAN;
      r->res.diverged_at = -1;
    } else st_run_finish(r, &c);
    xp_dir_unlock(lk);
  }
  own_final(st, r);
  r->done = 1;
}

/* Whether run i is this process's under --shard I/N: every Nth run, a run
 * with from = ARM going with the first run of its chain, so that a shard
 * never waits for another's checkpoint. */
int st_run_mine(const study *st, int i) {
  if (st->o->shard_n <= 1) return 1;
  for (int hop = 0; st->run[i].parent >= 0 && hop < st->nrun; hop++) i = st->run[i].parent;
  return i % st->o->shard_n == st->o->shard_i - 1;
}

void st_run_all(study *st) {
  const study_queue *q = st->o->queue;
  const double t0 = st_now_s();
  int total = 0, done = 0;
  if (q && st->o->queue_role == STUDY_QUEUE_WORKER) { /* the runs the queue hands out, one at a time */
    for (int i = q->next(q->ctx, -1); i >= 0 && i < st->nrun; i = q->next(q->ctx, i)) {
      run_one(st, i, 1);
      progress_line(st, ++done, st->nrun, &st->run[i], t0);
    }
    return;
  }
  if (q && st->o->queue_role == STUDY_QUEUE_SERVER) { /* hand the runs out, then read their results */
    int *ph = malloc((size_t)(st->nrun + 1) * sizeof *ph);
    if (ph) {
      for (int i = 0; i < st->nrun; i++) ph[i] = st->run[i].phase;
      q->serve(q->ctx, st->nrun, ph);
      free(ph);
    }
    for (int i = 0; i < st->nrun; i++) run_one(st, i, 0);
    return;
  }
  for (int i = 0; i < st->nrun; i++)
    total += st_run_mine(st, i);
  int maxphase = 0;
  for (int i = 0; i < st->nrun; i++)
    if (st->run[i].phase > maxphase) maxphase = st->run[i].phase;
  for (int ph = 0; ph <= maxphase; ph++) {
    int idx[4096], n = 0;
    for (int i = 0; i < st->nrun && n < 4096; i++)
      if (st->run[i].phase == ph) idx[n++] = i;
    /* a report pass only reads results: in order, on one thread, so its console is the same every time */
    const int nth = st->o->report_only ? 1 : st->threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth)
    for (int j = 0; j < n; j++) {
      const int mine = st_run_mine(st, idx[j]);
      run_one(st, idx[j], mine);
      srun *r = &st->run[idx[j]];
      if (r->missing || !mine) continue;
#pragma omp critical(study_progress)
      {
        done++;
        progress_line(st, done, total, r, t0);
      }
    }
  }
}

/* ====================================================================== */
/* per-run data                                                            */
/* ====================================================================== */

/* Divergence, judged on the end of the run: a non-finite loss (the engine
 * stops there), or a final loss (the mean of the last 10% of steps) above
 * the first step's.  A transient excursion above the first loss that the
 * run recovers from is a spike, not a divergence (the engine's diverged_at
 * still records the first such step). */
int st_run_diverged(const srun *r) {
  if (r->failed || r->missing || r->res.steps_done <= 0) return 0;
  return !isfinite(r->res.final_loss) || !isfinite(r->res.final_loss_avg) || r->res.final_loss_avg > r->res.first_loss;
}

int st_run_failed(const srun *r) { return st_run_diverged(r) || r->nonconv; }

long st_own_start(const study *st, const srun *r) {
  return r->parent < 0 ? 0 : st->run[r->parent].res.steps_done;
}

/* The rule's word for a run, with the step where its loss first rose above
 * the first step's: "yes (from step N)", "no", or "no (excursion at step N)"
 * for a run that came back (the progress line and the runs table said
 * "diverged at N" for those, against the rule). */
void st_fmt_diverged(const srun *r, char *buf, size_t n) {
  const long at = r->res.diverged_at;
  if (st_run_diverged(r)) {
    if (at >= 0) snprintf(buf, n, "yes (from step %ld)", at);
    else snprintf(buf, n, "yes");
  } else if (at >= 0) snprintf(buf, n, "no (excursion at step %ld)", at);
  else snprintf(buf, n, "no");
}


agg st_aggregate(const study *st, const char *name, int lri) {
  agg a;
  memset(&a, 0, sizeof a);
  double fin[256] = {0}, val[256] = {0}, mn[256] = {0}, fst[256] = {0};
  int nf = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (strcmp(r->name, name) || (lri >= 0 && r->lri != lri)) continue;
    a.n++;
    if (r->failed) { a.nfail++; continue; }
    if (st_run_diverged(r)) a.ndiv++;
    a.spikes += r->res.spikes;
    a.steps += r->res.steps_done;
    if (nf < 256) {
      fin[nf] = st_run_diverged(r) ? NAN : r->res.final_loss_avg;
      val[nf] = st_run_diverged(r) ? NAN : r->res.val_loss;
      mn[nf] = r->res.min_loss;
      fst[nf] = r->res.first_loss;
      nf++;
    }
  }
  a.final_mean = st_mean_of(fin, nf);
  a.final_sd = st_sd_of(fin, nf);
  a.val_mean = st_mean_of(val, nf);
  a.min_mean = st_mean_of(mn, nf);
  a.first_mean = st_mean_of(fst, nf);
  for (int i = 0; i < nf; i++) a.nfinal += isfinite(fin[i]);
  return a;
}

double st_paired_sd(const study *st, const char *a, const char *b, int lri) {
  double d[256];
  int n = 0;
  for (int i = 0; i < st->nrun && n < 256; i++) {
    const srun *r = &st->run[i];
    if (strcmp(r->name, a) || (lri >= 0 && r->lri != lri) || r->failed || st_run_diverged(r)) continue;
    for (int j = 0; j < st->nrun; j++) {
      const srun *q = &st->run[j];
      if (strcmp(q->name, b) || q->lri != r->lri || q->seedi != r->seedi || q->failed || st_run_diverged(q)) continue;
      d[n++] = r->res.final_loss_avg - q->res.final_loss_avg;
      break;
    }
  }
  return st_sd_of(d, n);
}

const char *st_arm_by(const study *st, const char *group, const char *tag, double x) {
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if ((!group || !strcmp(r->group, group)) && (!tag || !strcmp(r->tag, tag)) && (isnan(x) || r->x == x))
      return r->name;
  }
  return NULL;
}

const srun *st_find_run(const study *st, const char *name, int lri, int seedi) {
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (!strcmp(r->name, name) && r->lri == lri && r->seedi == seedi) return r;
  }
  return NULL;
}

int st_csv_split(char *line, char **f, int max) {
  int n = 0;
  char *p = line;
  while (n < max) {
    if (*p == '"') {
      p++;
      f[n++] = p;
      char *w = p;
      while (*p && !(*p == '"' && p[1] != '"')) {
        if (*p == '"') p++;
        *w++ = *p++;
      }
      if (*p == '"') p++;
      *w = 0;
      /* w may point at the quote we just passed: fine, the field is ended */
      if (*p == ',') p++;
      else break;
    } else {
      f[n++] = p;
      char *c = strchr(p, ',');
      if (!c) { p[strcspn(p, "\r\n")] = 0; break; }
      *c = 0;
      p = c + 1;
    }
  }
  return n;
}
static int csv_col(char **hdr, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(hdr[i], name)) return i;
  return -1;
}

/* stats.csv of a run */


/* Read stats.csv of a run: per step, for tensor kind `kind` (input, weight,
 * grad; NULL: all), the geometric mean of scale_ratio over rows and the mean
 * overflow and underflow %.  Step 0 is left out: delayed scaling starts from
 * scale 1 before any amax is recorded, an initialization, not a lag (the
 * calibration study is about that step). */
void st_read_stats(const srun *r, const char *kind, stat_curve *c) {
  memset(c, 0, sizeof *c);
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/stats.csv", r->cfg->out_dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[2048], hl[2048];
  char *h[32];
  if (!fgets(hl, sizeof hl, f)) { fclose(f); return; }
  int nh = st_csv_split(hl, h, 32);
  if (csv_col(h, nh, "step") < 0) {
    /* a resumed run appends to files it did not start: no header line */
    static char known[] = "step,layer,gemm,tensor,format,recipe,underflow_pct,overflow_pct,mse,cosine,snr_db,amax,"
                          "scale,scale_ratio";
    static char hdr[sizeof known];
    memcpy(hdr, known, sizeof known);
    nh = st_csv_split(hdr, h, 32);
    rewind(f);
  }
  int cs = csv_col(h, nh, "step"), ct = csv_col(h, nh, "tensor"), cr = csv_col(h, nh, "scale_ratio"),
      co = csv_col(h, nh, "overflow_pct"), cu = csv_col(h, nh, "underflow_pct"), crec = csv_col(h, nh, "recipe");
  if (cs < 0 || ct < 0) { fclose(f); return; }
  double lsum = 0, osum = 0, usum = 0;
  int nl = 0, nr = 0;
  double cur = NAN;
  while (1) {
    char *fl[32];
    int k = 0;
    int eof = !fgets(line, sizeof line, f);
    double step = NAN;
    if (!eof) {
      k = st_csv_split(line, fl, 32);
      if (k <= cs) continue;
      step = strtod(fl[cs], NULL);
      /* an unquoted recipe text with commas (delayed:len=16,margin=1) adds
       * fields: the columns after it are counted from the end */
      if (k > nh && crec >= 0) {
        const int sh = k - nh;
        for (int q = crec + 1; q < nh; q++) fl[q] = fl[q + sh];
        k = nh;
      }
    }
    if ((eof || step != cur) && nr && c->n < 1024) {
      c->step[c->n] = cur;
      c->ratio[c->n] = nl ? exp2(lsum / nl) : NAN;
      c->over[c->n] = osum / nr;
      c->under[c->n] = usum / nr;
      c->n++;
      lsum = osum = usum = 0;
      nl = nr = 0;
    }
    if (eof) break;
    cur = step;
    if (step == 0) continue; /* the initial scale (1, no amax yet): not a lag */
    if (kind && (k <= ct || strcmp(fl[ct], kind))) continue;
    nr++;
    if (cr >= 0 && cr < k && crec >= 0 && (!strncmp(fl[crec], "delayed", 7) || !strncmp(fl[crec], "current", 7))) {
      double v = strtod(fl[cr], NULL);
      if (isfinite(v) && v > 0) { lsum += log2(v); nl++; }
    }
    if (co >= 0 && co < k) osum += strtod(fl[co], NULL);
    if (cu >= 0 && cu < k) usum += strtod(fl[cu], NULL);
  }
  fclose(f);
}
