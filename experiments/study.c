/* study.c: exmy's FP8 stability studies (study.h, docs/studies/README.md).
 *
 * Common machinery first (runs, configs, parallel runner, tables, plots,
 * report, summary), then one section per study: its runs (setup) and its
 * analysis (report), which computes every verdict from the numbers. */
#include "experiments/study.h"
#include "experiments/xp.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

/* ====================================================================== */
/* data structures                                                         */
/* ====================================================================== */

#define MAX_KV 24
#define MAX_BASE 32
#define MAX_LR 16
#define MAX_FIND 16
#define MAX_PLOTS 24

typedef struct kv { char k[48]; char v[300]; } kv;

typedef struct srun {
  char name[64];                /* the config's name (e8m3 rtz, hybrid delayed ...) */
  char group[64];               /* plotting group */
  char tag[32];                 /* study-specific tag (rounding, model ...) */
  double x;                     /* study-specific number (mantissa bits, width ...) */
  char label[160];              /* name [lr=] [seed=] */
  char dir[200];                /* folder under DIR/runs */
  double lr;
  unsigned long long seed;
  int lri, seedi, phase;
  int nkv;
  kv kv[MAX_KV];
  xp_config cfg;
  xp_result res;
  int done, failed;
  char err[EXMY_ERRLEN];
} srun;

typedef struct finding {
  int verdict;                  /* 1 reproduced, 0 not reproduced, -1 inconclusive, 2 observation */
  char claim[400];
  char evidence[1600];
} finding;

typedef struct study study;
typedef struct study_def {
  const char *name, *desc;
  const char *published;        /* the published result (docs/studies.md), for the report */
  void (*setup)(study *st);
  void (*report)(study *st, FILE *md);
} study_def;

struct study {
  const study_def *def;
  const study_opts *o;
  FILE *log;
  char dir[XP_PATH];
  study_size size;
  long steps;                   /* resolved: --steps or the study's default */
  int nseeds, nlr;
  double lr[MAX_LR];
  double lr0;                   /* the engine's default learning rate */
  int lrs_given;
  int nbase;
  kv base[MAX_BASE];
  int nrun, cap;
  srun *run;
  int nfind;
  finding find[MAX_FIND];
  int gnuplot;
  int nplot;
  char plot[MAX_PLOTS][64];
  double seconds;
  int threads;
  char note[2048];              /* extra lines for the report's setup (study-specific) */
  void *extra;                  /* study-specific results (accumulation GEMM table) */
};

/* ====================================================================== */
/* small helpers                                                           */
/* ====================================================================== */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void safe_name(const char *in, char *out, size_t n) {
  size_t j = 0;
  for (size_t i = 0; in[i] && j + 1 < n; i++) {
    char c = in[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
        c == '_' || c == '+')
      out[j++] = c;
    else if (j && out[j - 1] != '_')
      out[j++] = '_';
  }
  while (j && out[j - 1] == '_') j--;
  out[j] = 0;
}

/* %g without a trailing exponent "e-03" style noise: 3e-3 */
static void fmt_lr(double lr, char *buf, size_t n) {
  char t[24];
  snprintf(t, sizeof t, "%.3g", lr);
  char *e = strchr(t, 'e');
  if (e) { /* 0.003 prints as 0.003 with %g; only tiny values reach here */
    int ex = atoi(e + 1);
    *e = 0;
    snprintf(buf, n, "%se%d", t, ex);
  } else snprintf(buf, n, "%s", t);
}

static void fmt_num(double v, char *buf, size_t n) {
  if (isnan(v)) snprintf(buf, n, "nan");
  else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
  else snprintf(buf, n, "%.4f", v);
}

static void fmt_time(double s, char *buf, size_t n) {
  if (s < 60) snprintf(buf, n, "%.0fs", s);
  else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
  else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c == '\n') fputs("\\n", f);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void json_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

static const char *verdict_name(int v) {
  switch (v) {
  case 1: return "reproduced";
  case 0: return "not reproduced";
  case 2: return "observation";
  default: return "inconclusive";
  }
}

static void finding_add(study *st, int verdict, const char *claim, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));
static void finding_add(study *st, int verdict, const char *claim, const char *fmt, ...) {
  if (st->nfind >= MAX_FIND) return;
  finding *f = &st->find[st->nfind++];
  f->verdict = verdict;
  snprintf(f->claim, sizeof f->claim, "%s", claim);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->evidence, sizeof f->evidence, fmt, ap);
  va_end(ap);
}

/* Append printf text to a fixed buffer. */
static void cat(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t n, const char *fmt, ...) {
  size_t l = strlen(buf);
  if (l + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + l, n - l, fmt, ap);
  va_end(ap);
}

static double mean_of(const double *v, int n) {
  double s = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) { s += v[i]; k++; }
  return k ? s / k : NAN;
}

static double sd_of(const double *v, int n) {
  double m = mean_of(v, n), s = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(v[i])) { s += (v[i] - m) * (v[i] - m); k++; }
  return k > 1 ? sqrt(s / (k - 1)) : NAN;
}

/* Spearman rank correlation (average ranks for ties). */
static void ranks(const double *v, int n, double *r) {
  for (int i = 0; i < n; i++) {
    int less = 0, eq = 0;
    for (int j = 0; j < n; j++) {
      if (v[j] < v[i]) less++;
      else if (v[j] == v[i]) eq++;
    }
    r[i] = less + (eq + 1) / 2.0;
  }
}
static double spearman(const double *x, const double *y, int n) {
  double rx[64], ry[64];
  if (n < 3 || n > 64) return NAN;
  ranks(x, n, rx);
  ranks(y, n, ry);
  double mx = mean_of(rx, n), my = mean_of(ry, n), sxy = 0, sxx = 0, syy = 0;
  for (int i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* ====================================================================== */
/* runs                                                                    */
/* ====================================================================== */

static void base_kv(study *st, const char *k, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void base_kv(study *st, const char *k, const char *fmt, ...) {
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
  fmt_lr(r->lr, lrs, sizeof lrs);
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

/* Add a config (name, group, x, tag, phase, then "key=value" strings, NULL)
 * crossed with every learning rate and seed. */
static void add_cfg(study *st, const char *name, const char *group, double x, const char *tag, int phase, ...) {
  const char *kvs[MAX_KV];
  int nk = 0;
  va_list ap;
  va_start(ap, phase);
  for (const char *s; (s = va_arg(ap, const char *)) != NULL;)
    if (nk < MAX_KV - 2) kvs[nk++] = s;
  va_end(ap);
  for (int li = 0; li < st->nlr; li++)
    for (int si = 0; si < st->nseeds; si++) {
      srun *r = new_run(st);
      snprintf(r->name, sizeof r->name, "%s", name);
      snprintf(r->group, sizeof r->group, "%s", group ? group : name);
      snprintf(r->tag, sizeof r->tag, "%s", tag ? tag : "");
      r->x = x;
      r->lr = st->lr[li];
      r->seed = (unsigned long long)(si + 1);
      r->lri = li;
      r->seedi = si;
      r->phase = phase;
      char lrs[32];
      fmt_lr(r->lr, lrs, sizeof lrs);
      snprintf(r->label, sizeof r->label, "%s", name);
      if (st->nlr > 1) cat(r->label, sizeof r->label, " lr=%s", lrs);
      if (st->nseeds > 1) cat(r->label, sizeof r->label, " seed=%llu", r->seed);
      safe_name(r->label, r->dir, sizeof r->dir);
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

/* Build every run's config; 2 with err on a rejected key or value. */
static int build_configs(study *st, char *err, size_t errlen) {
  char e[EXMY_ERRLEN];
  for (int i = 0; i < st->nrun; i++) {
    srun *r = &st->run[i];
    xp_config *c = &r->cfg;
    xp_config_default(c);
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
    if (st->o->data && c->model.kind == XP_MODEL_GPT && xp_config_set(c, "data", st->o->data, e, sizeof e)) {
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
    char od[XP_PATH];
    snprintf(od, sizeof od, "%s/runs/%s", st->dir, r->dir);
    if (xp_config_set(c, "out_dir", od, e, sizeof e)) {
      snprintf(err, errlen, "study: out_dir %s: %s", od, e);
      return 2;
    }
    xp_config_set(c, "threads", "1", e, sizeof e);
  }
  return 0;
}

/* Lines of xp_config_write(c) that are not in the default config (out_dir,
 * threads and progress left out), joined with "; " (or newlines). */
static char **config_lines(const xp_config *c, int *n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) { *n = 0; return NULL; }
  xp_config_write(c, m);
  fclose(m);
  int cnt = 0, capn = 16;
  char **out = malloc((size_t)capn * sizeof *out);
  for (char *p = buf, *nl; p && *p; p = nl ? nl + 1 : NULL) {
    nl = strchr(p, '\n');
    if (nl) *nl = 0;
    if (!*p || *p == '#') { if (!nl) break; continue; }
    if (cnt == capn) out = realloc(out, (size_t)(capn *= 2) * sizeof *out);
    out[cnt++] = strdup(p);
    if (!nl) break;
  }
  free(buf);
  *n = cnt;
  return out;
}
static void free_lines(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
  free(l);
}
static int skip_line(const char *l) {
  return !strncmp(l, "out_dir", 7) || !strncmp(l, "threads", 7) || !strncmp(l, "progress", 8);
}
static int has_line(char **l, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (!strcmp(l[i], s)) return 1;
  return 0;
}

/* ====================================================================== */
/* the runner                                                              */
/* ====================================================================== */

static void progress_line(study *st, int done, int total, const srun *r, double t0) {
  char lrs[32], fin[32], mn[32], eta[48] = "";
  fmt_lr(r->lr, lrs, sizeof lrs);
  if (r->failed) {
    fprintf(st->log, "[%d/%d] %s lr=%s seed=%llu: FAILED: %s\n", done, total, r->name, lrs, r->seed, r->err);
  } else {
    fmt_num(r->res.final_loss_avg, fin, sizeof fin);
    fmt_num(r->res.min_loss, mn, sizeof mn);
    char dv[32];
    if (r->res.diverged_at >= 0) snprintf(dv, sizeof dv, "at %ld", r->res.diverged_at);
    else snprintf(dv, sizeof dv, "no");
    const double el = now_s() - t0;
    if (done < total) {
      char t[32];
      fmt_time(el / done * (total - done), t, sizeof t);
      snprintf(eta, sizeof eta, "  ETA %s", t);
    }
    fprintf(st->log, "[%d/%d] %s lr=%s seed=%llu: final %s min %s spikes %ld diverged %s  (%.1f s)%s\n", done, total,
            r->name, lrs, r->seed, fin, mn, r->res.spikes, dv, r->res.seconds, eta);
  }
  fflush(st->log);
}

static void run_all(study *st) {
  int total = st->nrun, done = 0;
  const double t0 = now_s();
  int maxphase = 0;
  for (int i = 0; i < st->nrun; i++)
    if (st->run[i].phase > maxphase) maxphase = st->run[i].phase;
  for (int ph = 0; ph <= maxphase; ph++) {
    int idx[4096], n = 0;
    for (int i = 0; i < st->nrun && n < 4096; i++)
      if (st->run[i].phase == ph) idx[n++] = i;
#pragma omp parallel for schedule(dynamic, 1) num_threads(st->threads)
    for (int j = 0; j < n; j++) {
      srun *r = &st->run[idx[j]];
      char e[EXMY_ERRLEN] = "";
      xp_mkdir_p(r->cfg.out_dir, NULL, 0); /* a failure shows when the run writes */
      memset(&r->res, 0, sizeof r->res);
      if (xp_train(&r->cfg, &r->res, e, sizeof e)) {
        r->failed = 1;
        snprintf(r->err, sizeof r->err, "%s", e[0] ? e : "xp_train failed");
        r->res.final_loss = r->res.final_loss_avg = r->res.min_loss = r->res.val_loss = NAN;
        r->res.diverged_at = -1;
      }
      r->done = 1;
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

static int run_diverged(const srun *r) { return !r->failed && r->res.diverged_at >= 0; }

/* Aggregate over runs with config name `name` (and lr index lri unless -1). */
typedef struct agg {
  int n, ndiv, nfail, nfinal;
  long spikes, steps;
  double final_mean, final_sd, val_mean, min_mean, first_mean;
} agg;

static agg aggregate(const study *st, const char *name, int lri) {
  agg a;
  memset(&a, 0, sizeof a);
  double fin[256], val[256], mn[256], fst[256];
  int nf = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (strcmp(r->name, name) || (lri >= 0 && r->lri != lri)) continue;
    a.n++;
    if (r->failed) { a.nfail++; continue; }
    if (run_diverged(r)) a.ndiv++;
    a.spikes += r->res.spikes;
    a.steps += r->res.steps_done;
    if (nf < 256) {
      fin[nf] = run_diverged(r) ? NAN : r->res.final_loss_avg;
      val[nf] = run_diverged(r) ? NAN : r->res.val_loss;
      mn[nf] = r->res.min_loss;
      fst[nf] = r->res.first_loss;
      nf++;
    }
  }
  a.final_mean = mean_of(fin, nf);
  a.final_sd = sd_of(fin, nf);
  a.val_mean = mean_of(val, nf);
  a.min_mean = mean_of(mn, nf);
  a.first_mean = mean_of(fst, nf);
  for (int i = 0; i < nf; i++) a.nfinal += isfinite(fin[i]);
  return a;
}

static const srun *find_run(const study *st, const char *name, int lri, int seedi) {
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (!strcmp(r->name, name) && r->lri == lri && r->seedi == seedi) return r;
  }
  return NULL;
}

/* A small CSV reader for the engine's outputs (quoted fields allowed). */
static int csv_split(char *line, char **f, int max) {
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

/* ====================================================================== */
/* tables: markdown into the report, aligned text on the console           */
/* ====================================================================== */

#define TBL_ROWS 160
#define TBL_COLS 14
typedef struct tbl {
  int ncol, nrow;
  char h[TBL_COLS][48];
  char c[TBL_ROWS][TBL_COLS][64];
} tbl;

static tbl *tbl_new(int ncol, ...) {
  tbl *t = calloc(1, sizeof *t);
  if (!t) { fprintf(stderr, "exmy: study: out of memory\n"); exit(1); }
  t->ncol = ncol;
  va_list ap;
  va_start(ap, ncol);
  for (int i = 0; i < ncol; i++) snprintf(t->h[i], sizeof t->h[i], "%s", va_arg(ap, const char *));
  va_end(ap);
  return t;
}
static void tbl_cell(tbl *t, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void tbl_cell(tbl *t, int col, const char *fmt, ...) {
  if (t->nrow >= TBL_ROWS || col >= t->ncol) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->c[t->nrow][col], sizeof t->c[0][0], fmt, ap);
  va_end(ap);
}

/* Cells 0-5 of a per-configuration row: name, final, sd, final against the
 * reference configuration (%), val, diverged. */
static void agg_cells(tbl *t, const char *name, const agg *a, const agg *ref) {
  char c[32];
  tbl_cell(t, 0, "%s", name);
  fmt_num(a->final_mean, c, sizeof c);
  tbl_cell(t, 1, "%s", c);
  fmt_num(a->final_sd, c, sizeof c);
  tbl_cell(t, 2, "%s", c);
  if (isfinite(a->final_mean) && isfinite(ref->final_mean))
    tbl_cell(t, 3, "%+.2f%%", 100 * (a->final_mean - ref->final_mean) / ref->final_mean);
  else tbl_cell(t, 3, "-");
  fmt_num(a->val_mean, c, sizeof c);
  tbl_cell(t, 4, "%s", c);
  tbl_cell(t, 5, "%d/%d", a->ndiv, a->n);
}
static void tbl_end_row(tbl *t) { if (t->nrow < TBL_ROWS) t->nrow++; }
static void tbl_md(const tbl *t, FILE *md) {
  fputc('|', md);
  for (int i = 0; i < t->ncol; i++) fprintf(md, " %s |", t->h[i]);
  fputs("\n|", md);
  for (int i = 0; i < t->ncol; i++) fputs(i ? " ---: |" : " --- |", md);
  fputc('\n', md);
  for (int r = 0; r < t->nrow; r++) {
    fputc('|', md);
    for (int i = 0; i < t->ncol; i++) fprintf(md, " %s |", t->c[r][i]);
    fputc('\n', md);
  }
  fputc('\n', md);
}
static void tbl_text(const tbl *t, FILE *out) {
  int w[TBL_COLS];
  for (int i = 0; i < t->ncol; i++) {
    w[i] = (int)strlen(t->h[i]);
    for (int r = 0; r < t->nrow; r++)
      if ((int)strlen(t->c[r][i]) > w[i]) w[i] = (int)strlen(t->c[r][i]);
  }
  for (int i = 0; i < t->ncol; i++) fprintf(out, i ? "  %*s" : "%-*s", w[i], t->h[i]);
  fputc('\n', out);
  for (int r = 0; r < t->nrow; r++) {
    for (int i = 0; i < t->ncol; i++) fprintf(out, i ? "  %*s" : "%-*s", w[i], t->c[r][i]);
    fputc('\n', out);
  }
}
/* Into the report, and onto the console under a title. */
static void tbl_emit(study *st, tbl *t, FILE *md, const char *console_title) {
  tbl_md(t, md);
  if (console_title) {
    fprintf(st->log, "\n%s\n", console_title);
    tbl_text(t, st->log);
  }
  free(t);
}

/* ====================================================================== */
/* plots                                                                   */
/* ====================================================================== */

typedef struct series {
  char title[96];
  int n;
  double *x, *y;
  int points;                   /* 1: linespoints */
} series;

static void series_free(series *s, int n) {
  for (int i = 0; i < n; i++) { free(s[i].x); free(s[i].y); }
}

static void series_alloc(series *s, int n, const char *title) {
  memset(s, 0, sizeof *s);
  snprintf(s->title, sizeof s->title, "%s", title);
  s->x = calloc((size_t)n + 1, sizeof *s->x);
  s->y = calloc((size_t)n + 1, sizeof *s->y);
}

/* The loss curve of a run: trailing mean over `smooth` steps, steps
 * [from, to), at most ~400 points. */
static void loss_series(const srun *r, int smooth, long from, long to, const char *title, series *s) {
  long n = r->failed ? 0 : r->res.steps_done;
  if (to > n || to <= 0) to = n;
  if (from < 0) from = 0;
  if (from > to) from = to;
  long span = to - from, stride = span > 400 ? (span + 399) / 400 : 1;
  series_alloc(s, (int)(span / stride + 2), title);
  for (long i = from; i < to; i += stride) {
    double sum = 0;
    int k = 0;
    for (long j = i; j > i - smooth && j >= 0; j--)
      if (isfinite(r->res.loss[j])) { sum += r->res.loss[j]; k++; }
    s->x[s->n] = (double)i;
    s->y[s->n] = isfinite(r->res.loss[i]) && k ? sum / k : NAN;
    s->n++;
  }
}

static int smooth_for(const study *st) {
  int w = (int)(st->steps / 40);
  return w < 1 ? 1 : w > 25 ? 25 : w;
}

/* Text inside a gnuplot single-quoted string ('' is a quote). */
static void gp_quote(const char *in, char *out, size_t n) {
  size_t j = 0;
  for (const char *p = in; *p && j + 3 < n; p++) {
    if (*p == '\'') out[j++] = '\'';
    out[j++] = *p;
  }
  out[j] = 0;
}

/* Write DIR/stem.dat and DIR/stem.gp; draw DIR/stem.svg and DIR/stem.png. */
static void plot_draw(study *st, const char *stem, const char *title, const char *xl, const char *yl, int logx, int logy,
                      int ns, series *s, double ycap) {
  char path[XP_PATH + 80];
  snprintf(path, sizeof path, "%s/%s.dat", st->dir, stem);
  FILE *d = fopen(path, "w");
  if (!d) return;
  double ymax = -INFINITY;
  for (int i = 0; i < ns; i++) {
    fprintf(d, "# %s\n", s[i].title);
    for (int j = 0; j < s[i].n; j++) {
      if (isfinite(s[i].y[j])) {
        fprintf(d, "%.9g %.9g\n", s[i].x[j], s[i].y[j]);
        if (s[i].y[j] > ymax) ymax = s[i].y[j];
      } else fprintf(d, "%.9g NaN\n", s[i].x[j]);
    }
    fprintf(d, "\n\n");
  }
  fclose(d);
  snprintf(path, sizeof path, "%s/%s.gp", st->dir, stem);
  FILE *g = fopen(path, "w");
  if (!g) return;
  fprintf(g, "# exmy study %s: %s (gnuplot %s.gp, run in the results folder)\n", st->def->name, title, stem);
  char qt[400], qx[200], qy[200];
  gp_quote(title, qt, sizeof qt);
  gp_quote(xl, qx, sizeof qx);
  gp_quote(yl, qy, sizeof qy);
  fprintf(g, "set title '%s' noenhanced\nset xlabel '%s' noenhanced\nset ylabel '%s' noenhanced\n", qt, qx, qy);
  fprintf(g, "set key noenhanced outside right top\nset grid\nset datafile missing 'NaN'\n");
  if (logx) fprintf(g, "set logscale x 2\n");
  if (logy) fprintf(g, "set logscale y\nset format y '%%.0e'\n");
  if (isfinite(ycap) && ymax > ycap) fprintf(g, "set yrange [*:%.6g]\n", ycap);
  fprintf(g, "set terminal svg size 860,480 dynamic font 'sans,11' background '#ffffff'\nset output '%s.svg'\n", stem);
  fprintf(g, "plot ");
  for (int i = 0; i < ns; i++) {
    char t[200];
    gp_quote(s[i].title, t, sizeof t);
    fprintf(g, "%s'%s.dat' index %d using 1:2 with %s lw 1.6 title '%s'", i ? ", \\\n     " : "", stem, i,
            s[i].points ? "linespoints pt 7 ps 0.6" : "lines", t);
  }
  fprintf(g, "\nset terminal pngcairo size 1000,560 font 'sans,10'\nset output '%s.png'\nreplot\n", stem);
  fclose(g);
  if (st->nplot < MAX_PLOTS) snprintf(st->plot[st->nplot++], sizeof st->plot[0], "%s", stem);
  if (!st->gnuplot || !ns) return;
  if (strchr(st->dir, '\'')) return;
  char cmd[XP_PATH + 200];
  snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp' >/dev/null 2>&1", st->dir, stem);
  if (system(cmd) != 0) fprintf(st->log, "exmy: study: gnuplot failed on %s/%s.gp\n", st->dir, stem);
}

static void md_plot(const study *st, FILE *md, const char *stem, const char *caption) {
  char path[XP_PATH + 80];
  snprintf(path, sizeof path, "%s/%s.svg", st->dir, stem);
  struct stat sb;
  if (stat(path, &sb) == 0) fprintf(md, "![%s](%s.svg)\n\n*%s* (PNG: `%s.png`; data: `%s.dat`)\n\n", caption, stem, caption,
                                    stem, stem);
  else fprintf(md, "*%s*: not drawn (gnuplot not found or --no-plots); data in `%s.dat`, script `%s.gp`.\n\n", caption,
               stem, stem);
}

/* Loss curves of the runs matching (lri, seedi) (-1: any), one per run. */
static void plot_losses(study *st, FILE *md, const char *stem, const char *title, int lri, int seedi,
                        int (*pick)(const srun *r), int smooth, long from, long to) {
  series s[64];
  int ns = 0;
  double cap = -INFINITY;
  for (int i = 0; i < st->nrun && ns < 64; i++) {
    const srun *r = &st->run[i];
    if ((lri >= 0 && r->lri != lri) || (seedi >= 0 && r->seedi != seedi) || r->failed) continue;
    if (pick && !pick(r)) continue;
    loss_series(r, smooth, from, to, (lri >= 0 && seedi >= 0) ? r->name : r->label, &s[ns]);
    if (r->res.first_loss * 1.15 > cap) cap = r->res.first_loss * 1.15;
    ns++;
  }
  char xl[64], yl[96];
  snprintf(xl, sizeof xl, "step");
  if (smooth > 1) snprintf(yl, sizeof yl, "training loss (mean of the last %d steps)", smooth);
  else snprintf(yl, sizeof yl, "training loss");
  plot_draw(st, stem, title, xl, yl, 0, 0, ns, s, cap);
  series_free(s, ns);
  md_plot(st, md, stem, title);
}

/* The loss of each picked run minus the reference run's (same lr and seed),
 * trailing means over `smooth` steps: small precision effects show here. */
static void plot_gap(study *st, FILE *md, const char *stem, const char *title, const char *ref, int lri, int seedi,
                     int (*pick)(const srun *r), int smooth) {
  const srun *rr = find_run(st, ref, lri, seedi);
  if (!rr || rr->failed) return;
  series s[64];
  int ns = 0;
  for (int i = 0; i < st->nrun && ns < 64; i++) {
    const srun *r = &st->run[i];
    if (r == rr || r->lri != lri || r->seedi != seedi || r->failed || (pick && !pick(r))) continue;
    series a, b;
    loss_series(r, smooth, 0, 0, r->name, &a);
    loss_series(rr, smooth, 0, 0, ref, &b);
    series_alloc(&s[ns], a.n + 1, r->name);
    for (int j = 0; j < a.n && j < b.n; j++) {
      s[ns].x[j] = a.x[j];
      s[ns].y[j] = a.y[j] - b.y[j];
    }
    s[ns].n = a.n < b.n ? a.n : b.n;
    series_free(&a, 1);
    series_free(&b, 1);
    ns++;
  }
  char yl[128];
  snprintf(yl, sizeof yl, "loss - %s's loss (trailing mean, %d steps)", ref, smooth);
  plot_draw(st, stem, title, "step", yl, 0, 0, ns, s, NAN);
  series_free(s, ns);
  md_plot(st, md, stem, title);
}

/* ====================================================================== */
/* outputs: runs.csv, summary.json, report.md                              */
/* ====================================================================== */

static void write_runs_csv(study *st) {
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

static void write_summary_json(study *st) {
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/summary.json", st->dir);
  FILE *f = fopen(path, "w");
  if (!f) return;
  fprintf(f, "{\n  \"study\": ");
  json_str(f, st->def->name);
  fprintf(f, ",\n  \"description\": ");
  json_str(f, st->def->desc);
  fprintf(f, ",\n  \"size\": \"%s\",\n  \"steps\": %ld,\n  \"seeds\": %d,\n  \"lrs\": [",
          st->size == STUDY_TINY ? "tiny" : st->size == STUDY_FULL ? "full" : "default", st->steps, st->nseeds);
  for (int i = 0; i < st->nlr; i++) fprintf(f, "%s%.9g", i ? ", " : "", st->lr[i]);
  fprintf(f, "],\n  \"threads\": %d,\n  \"seconds\": %.3f,\n  \"runs\": [\n", st->threads, st->seconds);
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    const xp_result *s = &r->res;
    fprintf(f, "    {\"label\": ");
    json_str(f, r->label);
    fprintf(f, ", \"name\": ");
    json_str(f, r->name);
    fprintf(f, ", \"group\": ");
    json_str(f, r->group);
    fprintf(f, ", \"dir\": ");
    json_str(f, r->dir);
    fprintf(f, ", \"lr\": %.9g, \"seed\": %llu, \"final_loss\": ", r->lr, r->seed);
    json_num(f, s->final_loss);
    fprintf(f, ", \"final_loss_avg\": ");
    json_num(f, s->final_loss_avg);
    fprintf(f, ", \"min_loss\": ");
    json_num(f, s->min_loss);
    fprintf(f, ", \"val_loss\": ");
    json_num(f, s->val_loss);
    fprintf(f, ", \"first_loss\": ");
    json_num(f, s->first_loss);
    fprintf(f, ", \"spikes\": %ld, \"diverged_at\": %ld, \"fallbacks\": %ld, \"steps_done\": %ld, \"seconds\": %.3f",
            s->spikes, s->diverged_at, s->fallbacks, s->steps_done, s->seconds);
    fprintf(f, ", \"config\": {");
    for (int k = 0; k < r->nkv; k++) {
      fprintf(f, "%s", k ? ", " : "");
      json_str(f, r->kv[k].k);
      fputs(": ", f);
      json_str(f, r->kv[k].v);
    }
    fprintf(f, "}");
    if (r->failed) {
      fprintf(f, ", \"error\": ");
      json_str(f, r->err);
    }
    fprintf(f, "}%s\n", i + 1 < st->nrun ? "," : "");
  }
  fprintf(f, "  ],\n  \"findings\": [\n");
  for (int i = 0; i < st->nfind; i++) {
    fprintf(f, "    {\"verdict\": \"%s\", \"claim\": ", verdict_name(st->find[i].verdict));
    json_str(f, st->find[i].claim);
    fprintf(f, ", \"evidence\": ");
    json_str(f, st->find[i].evidence);
    fprintf(f, "}%s\n", i + 1 < st->nfind ? "," : "");
  }
  fprintf(f, "  ]\n}\n");
  fclose(f);
}

/* The setup section: keys common to every run, then each config's own. */
static void report_setup(study *st, FILE *md) {
  xp_config def;
  xp_config_default(&def);
  int nd;
  char **dl = config_lines(&def, &nd);
  int n0;
  char **l0 = st->nrun ? config_lines(&st->run[0].cfg, &n0) : NULL;
  if (!st->nrun) n0 = 0;
  /* common = lines of run 0 not in default, present in every run */
  char **lines[4096];
  int nl[4096];
  int nr = st->nrun < 4096 ? st->nrun : 4096;
  for (int i = 0; i < nr; i++) lines[i] = config_lines(&st->run[i].cfg, &nl[i]);
  fprintf(md, "## Setup\n\n");
  fprintf(md, "Engine defaults (`xp_config_default`) except, in every run:\n\n```\n");
  for (int j = 0; j < n0; j++) {
    if (has_line(dl, nd, l0[j]) || skip_line(l0[j])) continue;
    if (!strncmp(l0[j], "lr ", 3) || !strncmp(l0[j], "seed ", 5)) continue;
    int all = 1;
    for (int i = 1; i < nr && all; i++) all = has_line(lines[i], nl[i], l0[j]);
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
      if (has_line(dl, nd, s) || skip_line(s) || !strncmp(s, "lr ", 3) || !strncmp(s, "seed ", 5)) continue;
      int all = 1;
      for (int q = 0; q < nr && all; q++) all = has_line(lines[q], nl[q], s);
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
    fmt_lr(st->lr[i], b, sizeof b);
    fprintf(md, "%s%s", i ? ", " : "", b);
  }
  fprintf(md, " (engine default %g); seeds: %d (1..%d); steps: %ld. %d runs, %d at a time (one thread each), %.0f s in all.\n\n",
          st->lr0, st->nseeds, st->nseeds, st->steps, st->nrun, st->threads, st->seconds);
  if (st->note[0]) fprintf(md, "%s\n\n", st->note);
  for (int i = 0; i < nr; i++) free_lines(lines[i], nl[i]);
  if (l0) free_lines(l0, n0);
  free_lines(dl, nd);
}

static void report_runs_table(study *st, FILE *md) {
  tbl *t = tbl_new(10, "run", "lr", "seed", "final", "min", "val", "spikes", "diverged", "fallbacks", "s");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    char b[32];
    tbl_cell(t, 0, "%s", r->name);
    fmt_lr(r->lr, b, sizeof b);
    tbl_cell(t, 1, "%s", b);
    tbl_cell(t, 2, "%llu", r->seed);
    if (r->failed) {
      tbl_cell(t, 3, "failed");
      tbl_end_row(t);
      continue;
    }
    fmt_num(r->res.final_loss_avg, b, sizeof b);
    tbl_cell(t, 3, "%s", b);
    fmt_num(r->res.min_loss, b, sizeof b);
    tbl_cell(t, 4, "%s", b);
    fmt_num(r->res.val_loss, b, sizeof b);
    tbl_cell(t, 5, "%s", b);
    tbl_cell(t, 6, "%ld", r->res.spikes);
    if (r->res.diverged_at >= 0) tbl_cell(t, 7, "at %ld", r->res.diverged_at);
    else tbl_cell(t, 7, "no");
    tbl_cell(t, 8, "%ld", r->res.fallbacks);
    tbl_cell(t, 9, "%.1f", r->res.seconds);
    tbl_end_row(t);
  }
  fprintf(md, "## Runs\n\n`final` is the mean loss of the last 10%% of steps, `min` the lowest step loss, `val` the "
              "validation loss at the end (nan: not evaluated or diverged). Every run: `runs.csv`, `runs/LABEL/`.\n\n");
  tbl_emit(st, t, md, st->nrun <= 40 ? "runs (final = mean loss of the last 10% of steps):" : NULL);
  if (st->nrun > 40) fprintf(st->log, "\n(%d runs: see %s/runs.csv)\n", st->nrun, st->dir);
}

static void report_findings(study *st, FILE *md) {
  fprintf(md, "## Reproduced / not reproduced\n\n");
  fprintf(md, "Computed from the numbers above by the study's code (experiments/study.c); thresholds are fixed in "
              "the code and the docs, not tuned to the outcome.\n\n");
  for (int i = 0; i < st->nfind; i++)
    fprintf(md, "- **%s**: %s %s\n", verdict_name(st->find[i].verdict), st->find[i].claim, st->find[i].evidence);
  if (!st->nfind) fprintf(md, "- (no finding: the study produced no usable runs)\n");
  fprintf(md, "\n## Rules\n\nSpike: a loss above %g x the median of the previous %d losses (the engine's detector, "
              "applied identically to every run). Divergence: a non-finite loss, or after warmup a loss above the "
              "first step's loss. Plots of the loss show a trailing mean (stated on the axis); tables use the mean "
              "of the last 10%% of steps.\n",
          st->nrun ? st->run[0].cfg.spike_factor : 1.5, st->nrun ? st->run[0].cfg.spike_window : 32);
}

static void report_console_findings(study *st) {
  fprintf(st->log, "\nfindings:\n");
  for (int i = 0; i < st->nfind; i++)
    fprintf(st->log, "  [%s] %s %s\n", verdict_name(st->find[i].verdict), st->find[i].claim, st->find[i].evidence);
}

/* ====================================================================== */
/* sizes                                                                   */
/* ====================================================================== */

/* The tiny model of make check: a GPT of one layer, 16 wide. */
static void tiny_gpt(study *st) {
  base_kv(st, "n_layer", "1");
  base_kv(st, "d_model", "16");
  base_kv(st, "n_head", "2");
  base_kv(st, "seq_len", "16");
  base_kv(st, "batch", "2");
  base_kv(st, "eval_batches", "1");
}

/* A smaller GPT for the sweeps (two layers, 32 wide): ~5x cheaper per step. */
static void small_gpt(study *st) {
  if (st->size == STUDY_TINY) return;
  base_kv(st, "n_layer", "2");
  base_kv(st, "d_model", "32");
  base_kv(st, "n_head", "2");
}

/* Resolve steps, seeds and learning rates (multiples of the engine's lr). */
static void resolve(study *st, long steps_def, long steps_tiny, long steps_full, int seeds_def, int seeds_full,
                    const double *lr_mult, int nmult, const double *lr_mult_full, int nmult_full) {
  st->steps = st->o->steps > 0 ? st->o->steps
              : st->size == STUDY_TINY ? steps_tiny
              : st->size == STUDY_FULL ? steps_full : steps_def;
  st->nseeds = st->o->seeds > 0 ? st->o->seeds : st->size == STUDY_TINY ? 1 : st->size == STUDY_FULL ? seeds_full : seeds_def;
  if (!st->lrs_given) {
    const double *m = st->size == STUDY_FULL ? lr_mult_full : lr_mult;
    int n = st->size == STUDY_FULL ? nmult_full : nmult;
    if (st->size == STUDY_TINY && n > 2) n = 2;
    st->nlr = n;
    for (int i = 0; i < n; i++) {
      char b[32];
      snprintf(b, sizeof b, "%.6g", st->lr0 * m[i]);
      st->lr[i] = strtod(b, NULL);
    }
  }
  base_kv(st, "steps", "%ld", st->steps);
  if (st->size == STUDY_TINY) tiny_gpt(st);
}

static const double LR1[] = {1};

/* ====================================================================== */
/* study: default                                                          */
/* ====================================================================== */

static void setup_default(study *st) {
  resolve(st, 300, 12, 1000, 1, 3, LR1, 1, LR1, 1);
  add_cfg(st, "fp32", "reference", 32, "ref", 0, "prec=fp32", NULL);
  add_cfg(st, "bf16", "reference", 16, "ref", 0, "prec=bf16", NULL);
  add_cfg(st, "hybrid", "fp8", 8, "fp8", 0, "prec=hybrid", NULL);
  add_cfg(st, "e8m2 rtz", "fp8", 2, "lee", 0, "prec=e8m2;round=rtz", NULL);
}

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
static void finding_fp8_vs_bf16(study *st, const char *hyb, const char *bf) {
  agg h = aggregate(st, hyb, 0), b = aggregate(st, bf, 0);
  if (h.n == 0 || b.n == 0) return;
  if (h.nfinal == 0 || b.nfinal == 0) {
    finding_add(st, 0, "FP8 (HYBRID) loss tracks BF16, a little higher (Megatron-LM FP8).",
                "%s diverged in %d/%d runs, %s in %d/%d.", hyb, h.ndiv, h.n, bf, b.ndiv, b.n);
    return;
  }
  const double gap = (h.final_mean - b.final_mean) / b.final_mean;
  double fr[64];
  int nf = 0;
  for (int s = 0; s < st->nseeds && nf < 64; s++) {
    const srun *a = find_run(st, hyb, 0, s), *c = find_run(st, bf, 0, s);
    if (a && c && !a->failed && !c->failed) fr[nf++] = frac_above(a, c, smooth_for(st), st->steps / 2);
  }
  const double above = mean_of(fr, nf);
  /* tracks: within 5% at the end; higher: above bf16 at the end and for most of the second half */
  const int tracks = fabs(gap) < 0.05, higher = gap > 0 && above > 0.5;
  char noise[160] = "";
  if (st->nseeds > 1 && isfinite(b.final_sd))
    snprintf(noise, sizeof noise, " (seed sd: %s %.4f, %s %.4f)", hyb, h.final_sd, bf, b.final_sd);
  finding_add(st, tracks ? 1 : 0, "FP8 (HYBRID, current scaling) loss tracks BF16 (Megatron-LM FP8, 1B, 21K steps).",
              "final %s %.4f vs %s %.4f: gap %+.2f%%; tracks = |gap| < 5%%%s.", hyb, h.final_mean, bf, b.final_mean,
              100 * gap, noise);
  finding_add(st, higher ? 1 : 0, "FP8's loss is consistently a little higher than BF16's (Megatron-LM FP8).",
              "gap %+.2f%% at the end; %s's trailing-mean loss is above %s's in %.0f%% of the second half's steps "
              "(consistently higher = gap > 0 and above in more than 50%% of them).",
              100 * gap, hyb, bf, 100 * above);
}

static void report_default(study *st, FILE *md) {
  agg f = aggregate(st, "fp32", 0);
  tbl *t = tbl_new(7, "precision", "final", "vs fp32", "val", "min", "spikes", "diverged");
  const char *names[] = {"fp32", "bf16", "hybrid", "e8m2 rtz"};
  for (int i = 0; i < 4; i++) {
    agg a = aggregate(st, names[i], 0);
    char b[32];
    tbl_cell(t, 0, "%s", names[i]);
    fmt_num(a.final_mean, b, sizeof b);
    tbl_cell(t, 1, "%s", b);
    if (isfinite(a.final_mean) && isfinite(f.final_mean))
      tbl_cell(t, 2, "%+.2f%%", 100 * (a.final_mean - f.final_mean) / f.final_mean);
    else tbl_cell(t, 2, "-");
    fmt_num(a.val_mean, b, sizeof b);
    tbl_cell(t, 3, "%s", b);
    fmt_num(a.min_mean, b, sizeof b);
    tbl_cell(t, 4, "%s", b);
    tbl_cell(t, 5, "%ld", a.spikes);
    tbl_cell(t, 6, "%d/%d", a.ndiv, a.n);
    tbl_end_row(t);
  }
  fprintf(md, "## Results\n\nMeans over seeds (`final`: mean loss of the last 10%% of steps; `val`: validation loss).\n\n");
  tbl_emit(st, t, md, "summary (means over seeds):");
  plot_losses(st, md, "loss", "training loss: fp32, bf16, HYBRID FP8, E8M2 round-toward-zero", 0, 0, NULL,
              smooth_for(st), 0, 0);
  plot_gap(st, md, "loss-gap", "loss minus fp32's loss, step by step (seed 1)", "fp32", 0, 0, NULL, smooth_for(st));
  finding_fp8_vs_bf16(st, "hybrid", "bf16");
  agg e = aggregate(st, "e8m2 rtz", 0), b = aggregate(st, "bf16", 0);
  if (e.n && b.n) {
    const double gap = isfinite(e.final_mean) && isfinite(b.final_mean) ? (e.final_mean - b.final_mean) / b.final_mean : NAN;
    const int worse = e.ndiv > b.ndiv || (isfinite(gap) && gap > 0.02);
    finding_add(st, worse ? 1 : 0,
                "Cutting every GEMM input to 2 mantissa bits with round-toward-zero (Lee et al.'s simulation) degrades "
                "or destabilizes training.",
                "E8M2 rtz: %d/%d diverged, final %.4f vs bf16 %.4f (%+.2f%%); worse = more divergences or > 2%% higher "
                "final loss.",
                e.ndiv, e.n, e.final_mean, b.final_mean, isfinite(gap) ? 100 * gap : NAN);
  }
}

/* ====================================================================== */
/* study: mantissa                                                         */
/* ====================================================================== */

static const double LR_MANT[] = {1, 10};
static const double LR_MANT_FULL[] = {0.3, 1, 3, 10};

static void setup_mantissa(study *st) {
  resolve(st, 200, 10, 600, 2, 4, LR_MANT, 2, LR_MANT_FULL, 4);
  small_gpt(st);
  char name[32], prec[64];
  for (int m = 1; m <= 7; m++) {
    snprintf(name, sizeof name, "e8m%d rtz", m);
    snprintf(prec, sizeof prec, "prec=e8m%d;round=rtz", m);
    char attn[64];
    snprintf(attn, sizeof attn, "attn=e8m%d;round=rtz", m);
    add_cfg(st, name, "rtz", m, "rtz", 0, prec, attn, NULL);
  }
  const int mc = st->size == STUDY_FULL ? 7 : st->size == STUDY_TINY ? 1 : 3;
  const char *modes[] = {"rne", "sr"};
  for (int k = 0; k < 2; k++)
    for (int m = 1; m <= mc; m++) {
      snprintf(name, sizeof name, "e8m%d %s", m, modes[k]);
      char p[64], a[64];
      snprintf(p, sizeof p, "prec=e8m%d;round=%s", m, modes[k]);
      snprintf(a, sizeof a, "attn=e8m%d;round=%s", m, modes[k]);
      add_cfg(st, name, modes[k], m, modes[k], 0, p, a, NULL);
    }
  add_cfg(st, "bf16", "reference", 7, "ref", 0, "prec=bf16", "attn=bf16", NULL);
  add_cfg(st, "fp32", "reference", 23, "ref", 0, "prec=fp32", NULL);
  snprintf(st->note, sizeof st->note,
           "Every GEMM operand (linear layers and attention's two batched GEMMs) is cast to E8My, as Lee et al. "
           "simulate it: the mantissa cut by round-toward-zero (masking), 8 exponent bits (no scaling needed), "
           "accumulation in fp32. rne and sr are controls on the lowest mantissa widths. Learning rates are "
           "multiples of the engine's default; the largest is the \"10x\" variant.");
}

static int pick_rtz_ref(const srun *r) { return !strcmp(r->tag, "rtz") || !strcmp(r->tag, "ref"); }

static void report_mantissa(study *st, FILE *md) {
  const char *modes[] = {"rtz", "rne", "sr"};
  char h5[48], h6[48];
  {
    char a[32], b[32];
    fmt_lr(st->lr[0], a, sizeof a);
    fmt_lr(st->lr[st->nlr - 1], b, sizeof b);
    snprintf(h5, sizeof h5, "final, lr %s", a);
    snprintf(h6, sizeof h6, "final, lr %s", b);
  }
  tbl *t = tbl_new(6 + (st->nlr > 1 ? 2 : 0), "format", "rounding", "runs", "diverged", "spikes/1k steps", h5, h6,
                   "diverged per lr");
  double inst[9], bits[9], fin[9];
  int ni = 0;
  char divs[1024] = "", spk[1024] = "";
  for (int mode = 0; mode < 3; mode++)
    for (int m = 1; m <= 7; m++) {
      char name[32];
      snprintf(name, sizeof name, "e8m%d %s", m, modes[mode]);
      agg a = aggregate(st, name, -1);
      if (!a.n) continue;
      char b[32];
      tbl_cell(t, 0, "E8M%d", m);
      tbl_cell(t, 1, "%s", modes[mode]);
      tbl_cell(t, 2, "%d", a.n);
      tbl_cell(t, 3, "%d/%d", a.ndiv, a.n);
      const double rate = a.steps ? 1000.0 * (double)a.spikes / (double)a.steps : 0;
      tbl_cell(t, 4, "%.2f", rate);
      fmt_num(aggregate(st, name, 0).final_mean, b, sizeof b);
      tbl_cell(t, 5, "%s", b);
      fmt_num(aggregate(st, name, st->nlr - 1).final_mean, b, sizeof b);
      if (st->nlr > 1) tbl_cell(t, 6, "%s", b);
      if (st->nlr > 1) {
        char per[64] = "";
        for (int li = 0; li < st->nlr; li++) {
          agg l = aggregate(st, name, li);
          cat(per, sizeof per, "%s%d/%d", li ? " " : "", l.ndiv, l.n);
        }
        tbl_cell(t, 7, "%s", per);
      }
      tbl_end_row(t);
      if (mode == 0) {
        bits[ni] = m;
        inst[ni] = (double)a.ndiv / a.n + rate / 1000.0; /* divergence fraction, spike rate breaks ties */
        /* final loss with diverged runs counted at their first loss (no progress) */
        double v = 0;
        int c = 0;
        for (int i = 0; i < st->nrun; i++) {
          const srun *r = &st->run[i];
          if (strcmp(r->name, name) || r->failed) continue;
          v += run_diverged(r) || !isfinite(r->res.final_loss_avg) ? r->res.first_loss : r->res.final_loss_avg;
          c++;
        }
        fin[ni] = c ? v / c : NAN;
        ni++;
        cat(divs, sizeof divs, "E8M%d %d/%d, ", m, a.ndiv, a.n);
        cat(spk, sizeof spk, "%sE8M%d %.1f", ni > 1 ? ", " : "", m, rate);
      }
    }
  const char *refs[] = {"bf16", "fp32"};
  agg ra[2];
  for (int k = 0; k < 2; k++) {
    ra[k] = aggregate(st, refs[k], -1);
    agg a = ra[k];
    if (!a.n) continue;
    char b[32];
    tbl_cell(t, 0, "%s", refs[k]);
    tbl_cell(t, 1, "rne");
    tbl_cell(t, 2, "%d", a.n);
    tbl_cell(t, 3, "%d/%d", a.ndiv, a.n);
    tbl_cell(t, 4, "%.2f", a.steps ? 1000.0 * (double)a.spikes / (double)a.steps : 0);
    fmt_num(aggregate(st, refs[k], 0).final_mean, b, sizeof b);
    tbl_cell(t, 5, "%s", b);
    fmt_num(aggregate(st, refs[k], st->nlr - 1).final_mean, b, sizeof b);
    if (st->nlr > 1) tbl_cell(t, 6, "%s", b);
    if (st->nlr > 1) {
      char per[64] = "";
      for (int li = 0; li < st->nlr; li++) {
        agg l = aggregate(st, refs[k], li);
        cat(per, sizeof per, "%s%d/%d", li ? " " : "", l.ndiv, l.n);
      }
      tbl_cell(t, 7, "%s", per);
    }
    tbl_end_row(t);
    cat(divs, sizeof divs, "%s %d/%d%s", refs[k], a.ndiv, a.n, k ? "" : ", ");
  }
  fprintf(md, "## Results per format\n\n`runs`, `diverged`, `spikes`: all learning rates and seeds together "
              "(`diverged per lr`: in the order of the learning rates above). `final, lr X`: mean over the seeds at "
              "that learning rate that did not diverge.\n\n");
  tbl_emit(st, t, md, "per format (all learning rates and seeds):");

  /* plots: divergence fraction and final loss against mantissa bits */
  series s[5];
  int ns = 0;
  for (int mode = 0; mode < 3; mode++) {
    series_alloc(&s[ns], 8, modes[mode]);
    s[ns].points = 1;
    for (int m = 1; m <= 7; m++) {
      char name[32];
      snprintf(name, sizeof name, "e8m%d %s", m, modes[mode]);
      agg a = aggregate(st, name, -1);
      if (!a.n) continue;
      s[ns].x[s[ns].n] = m;
      s[ns].y[s[ns].n++] = (double)a.ndiv / a.n;
    }
    if (s[ns].n) ns++;
    else series_free(&s[ns], 1);
  }
  plot_draw(st, "diverged", "fraction of runs that diverged, by mantissa bits (E8My, every GEMM operand)",
            "mantissa bits", "diverged (fraction of runs)", 0, 0, ns, s, NAN);
  series_free(s, ns);
  md_plot(st, md, "diverged", "fraction of runs that diverged, per rounding of the GEMM inputs");
  ns = 0;
  for (int mode = 0; mode < 3; mode++) {
    series_alloc(&s[ns], 8, modes[mode]);
    s[ns].points = 1;
    for (int m = 1; m <= 7; m++) {
      char name[32];
      snprintf(name, sizeof name, "e8m%d %s", m, modes[mode]);
      agg a = aggregate(st, name, 0);
      if (!a.n) continue;
      s[ns].x[s[ns].n] = m;
      s[ns].y[s[ns].n++] = a.final_mean;
    }
    if (s[ns].n) ns++;
    else series_free(&s[ns], 1);
  }
  for (int k = 0; k < 2; k++) {
    agg a = aggregate(st, refs[k], 0);
    if (!a.n) continue;
    series_alloc(&s[ns], 2, k ? "fp32 (level)" : "bf16 (level)");
    s[ns].x[0] = 1;
    s[ns].x[1] = 7;
    s[ns].y[0] = s[ns].y[1] = a.final_mean;
    s[ns].n = 2;
    ns++;
  }
  char ttl[160], lrb[32];
  fmt_lr(st->lr[0], lrb, sizeof lrb);
  snprintf(ttl, sizeof ttl, "final loss (runs that did not diverge) by mantissa bits, lr %s", lrb);
  plot_draw(st, "final", ttl, "mantissa bits", "final loss (mean of last 10% of steps)", 0, 0, ns, s, NAN);
  series_free(s, ns);
  md_plot(st, md, "final", ttl);
  for (int li = 0; li < st->nlr && li < 4; li++) {
    char stem[32];
    fmt_lr(st->lr[li], lrb, sizeof lrb);
    snprintf(stem, sizeof stem, "loss-lr%d", li);
    snprintf(ttl, sizeof ttl, "training loss, lr %s, seed 1: E8My round-toward-zero and references", lrb);
    plot_losses(st, md, stem, ttl, li, 0, pick_rtz_ref, smooth_for(st), 0, 0);
  }

  /* findings */
  const double rho_i = spearman(bits, inst, ni), rho_f = spearman(bits, fin, ni);
  int anydiv = 0;
  for (int i = 0; i < ni; i++) anydiv |= inst[i] > 0;
  const double ref_inst = ra[1].n ? (double)ra[1].ndiv / ra[1].n + (ra[1].steps ? (double)ra[1].spikes / ra[1].steps : 0)
                                  : 0;
  if (ni >= 3) {
    const int ok = anydiv && isfinite(rho_i) && rho_i <= -0.5 && inst[0] > ref_inst;
    finding_add(st, ok ? 1 : 0,
                "Instability rises as mantissa bits fall (Lee et al.: E8M3-E8M5 fail to converge at 120M; only "
                "E8M5-E8M6 relatively stable at 7B).",
                "divergences (rtz, all lrs and seeds): %s; spikes per 1000 steps: %s. Spearman rho(bits, divergence "
                "fraction + spike rate) = %.2f%s; reproduced when rho <= -0.5, some run is unstable and E8M1 is less "
                "stable than fp32.",
                divs, spk, rho_i, anydiv ? "" : " (no E8My run diverged or spiked)");
    finding_add(st, isfinite(rho_f) && rho_f <= -0.5 ? 1 : 0,
                "Loss rises as mantissa bits fall (fewer bits, worse final loss).",
                "Spearman rho(bits, final loss with diverged runs counted at their first loss) = %.2f over E8M1..E8M7 "
                "rtz (reproduced when <= -0.5).",
                rho_f);
    int d35 = 0, n35 = 0;
    for (int m = 3; m <= 5; m++) {
      char name[32];
      snprintf(name, sizeof name, "e8m%d rtz", m);
      agg a = aggregate(st, name, -1);
      d35 += a.ndiv;
      n35 += a.n;
    }
    finding_add(st, n35 && 2 * d35 > n35 ? 1 : 0,
                "E8M3, E8M4 and E8M5 fail to converge (Lee et al., 120M TinyLLaMA).",
                "E8M3-E8M5 rtz runs that diverged: %d/%d (reproduced when more than half; this model has %.0f "
                "parameters and trains %ld steps, far from 120M parameters and their token counts).",
                d35, n35, st->nrun ? (double)st->run[0].res.nparams : 0.0, st->steps);
  }
  /* controls: rne and sr against rtz at the same bits */
  char ev[1024] = "";
  int rtz_worse = 0, cmp = 0;
  for (int m = 1; m <= 7; m++) {
    char a1[32], a2[32], a3[32];
    snprintf(a1, sizeof a1, "e8m%d rtz", m);
    snprintf(a2, sizeof a2, "e8m%d rne", m);
    snprintf(a3, sizeof a3, "e8m%d sr", m);
    agg x = aggregate(st, a1, -1), y = aggregate(st, a2, -1), z = aggregate(st, a3, -1);
    if (!y.n) continue;
    cat(ev, sizeof ev, "E8M%d: rtz %d/%d diverged, final %.4f; rne %d/%d, %.4f; sr %d/%d, %.4f. ", m, x.ndiv, x.n,
        x.final_mean, y.ndiv, y.n, y.final_mean, z.ndiv, z.n, z.final_mean);
    cmp++;
    rtz_worse += x.ndiv > y.ndiv || (x.ndiv == y.ndiv && isfinite(x.final_mean) && isfinite(y.final_mean) &&
                                     x.final_mean > y.final_mean);
  }
  if (cmp)
    finding_add(st, 2, "Control: round-toward-zero (masking) against round-to-nearest-even and stochastic rounding.",
                "%srtz is worse than rne at %d of %d widths.", ev, rtz_worse, cmp);
  if (st->nlr > 1) {
    char e2[1024] = "";
    int dlo = 0, dhi = 0, nlo = 0, nhi = 0;
    for (int i = 0; i < st->nrun; i++) {
      const srun *r = &st->run[i];
      if (strcmp(r->tag, "rtz")) continue;
      if (r->lri == 0) { nlo++; dlo += run_diverged(r); }
      if (r->lri == st->nlr - 1) { nhi++; dhi += run_diverged(r); }
    }
    char l0[32], l1[32];
    fmt_lr(st->lr[0], l0, sizeof l0);
    fmt_lr(st->lr[st->nlr - 1], l1, sizeof l1);
    snprintf(e2, sizeof e2, "E8M1..E8M7 rtz runs diverged: %d/%d at lr %s, %d/%d at lr %s.", dlo, nlo, l0, dhi, nhi, l1);
    finding_add(st, 2, "Learning rate: the largest learning rate against the smallest.", "%s", e2);
  }
}

/* ====================================================================== */
/* study: recipes                                                          */
/* ====================================================================== */

typedef struct stat_curve {     /* per stats step: one tensor kind of one run */
  int n;
  double step[1024], ratio[1024], over[1024], under[1024];
} stat_curve;

/* Read stats.csv of a run: per step, for tensor kind `kind` (input, weight,
 * grad; NULL: all), the geometric mean of scale_ratio over rows and the mean
 * overflow and underflow %.  Step 0 is left out: delayed scaling starts from
 * scale 1 before any amax is recorded, an initialization, not a lag (the
 * calibration study is about that step). */
static void read_stats(const srun *r, const char *kind, stat_curve *c) {
  memset(c, 0, sizeof *c);
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/stats.csv", r->cfg.out_dir);
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[2048], hl[2048];
  char *h[32];
  if (!fgets(hl, sizeof hl, f)) { fclose(f); return; }
  int nh = csv_split(hl, h, 32);
  if (csv_col(h, nh, "step") < 0) {
    /* a resumed run appends to files it did not start: no header line */
    static char known[] = "step,layer,gemm,tensor,format,recipe,underflow_pct,overflow_pct,mse,cosine,snr_db,amax,"
                          "scale,scale_ratio";
    static char hdr[sizeof known];
    memcpy(hdr, known, sizeof known);
    nh = csv_split(hdr, h, 32);
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
      k = csv_split(line, fl, 32);
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

static const int HIST[] = {1, 16, 1024};

static void setup_recipes(study *st) {
  resolve(st, 200, 10, 600, 1, 3, LR1, 1, LR1, 1);
  long se = st->steps / 50;
  base_kv(st, "stats_every", "%ld", se < 1 ? 1 : se);
  add_cfg(st, "bf16", "reference", 0, "ref", 0, "prec=bf16", NULL);
  add_cfg(st, "e4m3fn current", "current", 0, "current", 0, "prec=e4m3fn", NULL);
  add_cfg(st, "e5m2 current", "current", 0, "current", 0, "prec=e5m2", NULL);
  add_cfg(st, "hybrid current", "current", 0, "current", 0, "prec=hybrid", NULL);
  for (int m = 0; m <= 1; m++)
    for (int h = 0; h < 3; h++) {
      char name[64], prec[96];
      snprintf(name, sizeof name, "hybrid delayed len=%d margin=%d", HIST[h], m);
      snprintf(prec, sizeof prec, "prec=hybrid;recipe=delayed:len=%d,margin=%d", HIST[h], m);
      add_cfg(st, name, "delayed", HIST[h] + 0.1 * m, "delayed", 0, prec, NULL);
    }
  snprintf(st->note, sizeof st->note,
           "Per-layer FP8 statistics (`stats.csv`) every %ld steps: the delayed/current scale ratio of each tensor "
           "(the delayed scale over the scale current scaling would use for the same tensor), overflow and "
           "underflow %%. Delayed scaling follows TE (amax_compute_algo max over the history, initial scale 1).",
           se < 1 ? 1 : se);
}

static void report_recipes(study *st, FILE *md) {
  tbl *t = tbl_new(9, "recipe", "final", "val", "diverged", "spikes", "overflow %", "underflow %", "ratio grad (geo)",
                   "ratio input (geo)");
  stat_curve *cg = malloc(sizeof *cg), *ci = malloc(sizeof *ci), *ca = malloc(sizeof *ca);
  double dev[16], ovf[16];
  char names[16][64];
  int nd = 0;
  double ovf_cur = NAN, unf_cur = NAN;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi) continue;
    agg a = aggregate(st, r->name, 0);
    char b[32];
    tbl_cell(t, 0, "%s", r->name);
    fmt_num(a.final_mean, b, sizeof b);
    tbl_cell(t, 1, "%s", b);
    fmt_num(a.val_mean, b, sizeof b);
    tbl_cell(t, 2, "%s", b);
    tbl_cell(t, 3, "%d/%d", a.ndiv, a.n);
    tbl_cell(t, 4, "%ld", a.spikes);
    read_stats(r, NULL, ca);
    read_stats(r, "grad", cg);
    read_stats(r, "input", ci);
    if (ca->n) {
      tbl_cell(t, 5, "%.4f", mean_of(ca->over, ca->n));
      tbl_cell(t, 6, "%.3f", mean_of(ca->under, ca->n));
    } else {
      tbl_cell(t, 5, "-");
      tbl_cell(t, 6, "-");
    }
    double lg[1024], li[1024];
    for (int j = 0; j < cg->n; j++) lg[j] = log2(cg->ratio[j]);
    for (int j = 0; j < ci->n; j++) li[j] = log2(ci->ratio[j]);
    const double gg = exp2(mean_of(lg, cg->n)), gi = exp2(mean_of(li, ci->n));
    if (cg->n && isfinite(gg)) tbl_cell(t, 7, "%.3f", gg);
    else tbl_cell(t, 7, "-");
    if (ci->n && isfinite(gi)) tbl_cell(t, 8, "%.3f", gi);
    else tbl_cell(t, 8, "-");
    tbl_end_row(t);
    if (!strcmp(r->name, "hybrid current") && ca->n) {
      ovf_cur = mean_of(ca->over, ca->n);
      unf_cur = mean_of(ca->under, ca->n);
    }
    if (!strcmp(r->tag, "delayed") && nd < 16) {
      double ad[2048];
      int k = 0;
      for (int j = 0; j < cg->n; j++) if (isfinite(lg[j])) ad[k++] = fabs(lg[j]);
      for (int j = 0; j < ci->n; j++) if (isfinite(li[j])) ad[k++] = fabs(li[j]);
      dev[nd] = k ? mean_of(ad, k) : NAN;
      ovf[nd] = ca->n ? mean_of(ca->over, ca->n) : NAN;
      snprintf(names[nd], sizeof names[nd], "%s", r->name);
      nd++;
    }
  }
  fprintf(md, "## Results per recipe\n\nSeed 1, first learning rate for the statistics (`overflow %%`, `underflow %%`: "
              "means over statistics steps and every tensor of every layer; `ratio`: geometric mean over steps and "
              "layers of the delayed/current scale ratio, 1 for current scaling). Statistics leave out step 0, where "
              "delayed scaling still has its initial scale 1 (no amax recorded yet: an initialization, not a lag; it "
              "is in each run's stats.csv). `final`, `val`: means over seeds.\n\n");
  tbl_emit(st, t, md, "per recipe (statistics: seed 1):");

  plot_losses(st, md, "loss", "training loss per scaling recipe", 0, 0, NULL, smooth_for(st), 0, 0);
  plot_gap(st, md, "loss-gap", "loss minus bf16's loss per scaling recipe (seed 1)", "bf16", 0, 0, NULL, smooth_for(st));
  /* scale ratio and overflow curves of the delayed runs (and current as the reference) */
  const char *kinds[] = {"grad", "input", "weight"};
  for (int kk = 0; kk < 3; kk++) {
    series s[16];
    int ns = 0;
    for (int i = 0; i < st->nrun && ns < 16; i++) {
      const srun *r = &st->run[i];
      if (r->lri || r->seedi || strcmp(r->tag, "delayed")) continue;
      read_stats(r, kinds[kk], cg);
      series_alloc(&s[ns], cg->n + 1, r->name + 7); /* drop "hybrid " */
      for (int j = 0; j < cg->n; j++) {
        s[ns].x[j] = cg->step[j];
        s[ns].y[j] = cg->ratio[j];
      }
      s[ns].n = cg->n;
      ns++;
    }
    char stem[32], ttl[160];
    snprintf(stem, sizeof stem, "scale-ratio-%s", kinds[kk]);
    snprintf(ttl, sizeof ttl, "delayed/current scale ratio of the %s tensors (geometric mean over layers)", kinds[kk]);
    plot_draw(st, stem, ttl, "step", "delayed scale / current scale", 0, 1, ns, s, NAN);
    series_free(s, ns);
    md_plot(st, md, stem, ttl);
  }
  for (int w = 0; w < 2; w++) {
    series s[16];
    int ns = 0;
    for (int i = 0; i < st->nrun && ns < 16; i++) {
      const srun *r = &st->run[i];
      if (r->lri || r->seedi || (!strcmp(r->tag, "ref"))) continue;
      read_stats(r, NULL, ca);
      if (!ca->n) continue;
      series_alloc(&s[ns], ca->n + 1, r->name);
      for (int j = 0; j < ca->n; j++) {
        s[ns].x[j] = ca->step[j];
        s[ns].y[j] = w ? ca->under[j] : ca->over[j];
      }
      s[ns].n = ca->n;
      ns++;
    }
    const char *stem = w ? "underflow" : "overflow";
    const char *ttl = w ? "underflow: % of nonzero elements cast to zero (mean over tensors)"
                        : "overflow: % of elements beyond the format's range (mean over tensors)";
    plot_draw(st, stem, ttl, "step", w ? "underflow %" : "overflow %", 0, 0, ns, s, NAN);
    series_free(s, ns);
    md_plot(st, md, stem, ttl);
  }
  /* findings */
  if (nd) {
    char ev[1200] = "";
    double dlen1 = NAN, dlen1024 = NAN;
    for (int i = 0; i < nd; i++) {
      cat(ev, sizeof ev, "%s: mean |log2 ratio| %.3f, overflow %.4f%%; ", names[i] + 15, dev[i], ovf[i]);
      if (strstr(names[i], "len=1 margin=0")) dlen1 = dev[i];
      if (strstr(names[i], "len=1024 margin=0")) dlen1024 = dev[i];
    }
    const int lag = isfinite(dlen1) && dlen1 > 0.05;
    finding_add(st, lag ? 1 : 0,
                "Delayed scales lag a moving distribution: the delayed/current scale ratio departs from 1 (TE delayed "
                "scaling).",
                "%scurrent scaling: overflow %.4f%%, underflow %.3f%%. Reproduced when history 1 (the pure one-step "
                "lag) departs from 1 by more than 0.05 binades on average.",
                ev, ovf_cur, unf_cur);
    if (isfinite(dlen1) && isfinite(dlen1024))
      finding_add(st, 2, "A longer amax history (max over it) keeps the scale further below the current one.",
                  "mean |log2 ratio|: history 1 %.3f, history 1024 %.3f binades (margin 0).", dlen1, dlen1024);
    {
      double u = 0;
      int nu = 0;
      for (int i = 0; i < st->nrun; i++) {
        const srun *r = &st->run[i];
        if (r->lri || r->seedi || strcmp(r->tag, "delayed")) continue;
        read_stats(r, NULL, ca);
        if (ca->n) { u += mean_of(ca->under, ca->n); nu++; }
      }
      if (nu)
        finding_add(st, 2, "Underflow under delayed scaling (scales at or below the current one) and current scaling.",
                    "mean underflow over the delayed runs %.4f%% vs current scaling %.4f%% of elements (step 0 left "
                    "out).",
                    u / nu, unf_cur);
    }
    double o0 = NAN, o1 = NAN;
    for (int i = 0; i < nd; i++) {
      if (strstr(names[i], "len=1 margin=0")) o0 = ovf[i];
      if (strstr(names[i], "len=1 margin=1")) o1 = ovf[i];
    }
    if (isfinite(o0))
      finding_add(st, o0 > (isfinite(ovf_cur) ? ovf_cur : 0) ? 1 : 0,
                  "The lag makes delayed scaling overflow where current scaling does not; a margin reduces it.",
                  "overflow (history 1): margin 0 %.4f%%, margin 1 %.4f%%; current scaling %.4f%%. Reproduced when "
                  "margin 0's overflow exceeds current scaling's.",
                  o0, o1, ovf_cur);
  }
  finding_fp8_vs_bf16(st, "hybrid current", "bf16");
  free(cg);
  free(ci);
  free(ca);
}

/* ====================================================================== */
/* study: fallback (first/last layers in bf16)                             */
/* ====================================================================== */

static void setup_fallback(study *st) {
  resolve(st, 200, 10, 600, 2, 4, LR1, 1, LR1, 1);
  add_cfg(st, "bf16", "reference", 0, "ref", 0, "prec=bf16", NULL);
  const char *f[] = {"e4m3fn", "e5m2"};
  for (int i = 0; i < 2; i++) {
    char n1[64], n2[64], p[64];
    snprintf(n1, sizeof n1, "%s all", f[i]);
    snprintf(n2, sizeof n2, "%s first/last bf16", f[i]);
    snprintf(p, sizeof p, "prec=%s", f[i]);
    add_cfg(st, n1, f[i], 0, "all", 0, p, NULL);
    add_cfg(st, n2, f[i], 1, "firstlast", 0, p, "layer.first=bf16", "layer.last=bf16", NULL);
  }
  char ce[64];
  long every = st->steps / 10;
  snprintf(ce, sizeof ce, "check_every=%ld", every < 2 ? 2 : every);
  add_cfg(st, "e5m2 all + check", "e5m2", 2, "check", 0, "prec=e5m2", ce, NULL);
  snprintf(st->note, sizeof st->note,
           "Every tensor of every linear layer in one FP8 format with per-tensor current scaling (e4m3fn: the "
           "forward format used for everything; e5m2: the gradient format used for everything), against the same "
           "with the first and the last linear layers (`layer.first`, `layer.last`) in bf16. The last run adds the "
           "engine's check-and-fallback loop (a bf16 check every `check_every` steps; a disagreement beyond "
           "`check_tol` switches to bf16 for `fallback_steps`).");
}

static void report_fallback(study *st, FILE *md) {
  agg b = aggregate(st, "bf16", 0);
  tbl *t = tbl_new(7, "configuration", "final", "sd", "vs bf16", "val", "diverged", "fallbacks");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi) continue;
    agg a = aggregate(st, r->name, 0);
    long fb = 0;
    for (int j = 0; j < st->nrun; j++)
      if (!strcmp(st->run[j].name, r->name)) fb += st->run[j].res.fallbacks;
    agg_cells(t, r->name, &a, &b);
    tbl_cell(t, 6, "%ld", fb);
    tbl_end_row(t);
  }
  fprintf(md, "## Results\n\nMeans over seeds; `sd`: standard deviation over seeds.\n\n");
  tbl_emit(st, t, md, "summary (means over seeds):");
  plot_losses(st, md, "loss", "training loss: all layers FP8 vs first/last layers in bf16 (seed 1)", 0, 0, NULL,
              smooth_for(st), 0, 0);
  plot_gap(st, md, "loss-gap", "loss minus bf16's loss: all layers FP8 vs first/last in bf16 (seed 1)", "bf16", 0, 0,
           NULL, smooth_for(st));
  const char *f[] = {"e4m3fn", "e5m2"};
  char ev[1024] = "";
  int helped = 0, beyond = 0;
  for (int i = 0; i < 2; i++) {
    char n1[64], n2[64];
    snprintf(n1, sizeof n1, "%s all", f[i]);
    snprintf(n2, sizeof n2, "%s first/last bf16", f[i]);
    agg a = aggregate(st, n1, 0), c = aggregate(st, n2, 0);
    double va = a.nfinal ? a.final_mean : a.first_mean, vc = c.nfinal ? c.final_mean : c.first_mean;
    const double gain = va - vc;
    double noise = NAN;
    if (isfinite(a.final_sd) && isfinite(c.final_sd)) noise = sqrt(a.final_sd * a.final_sd + c.final_sd * c.final_sd);
    const int h = gain > 0 || a.ndiv > c.ndiv;
    helped += h;
    beyond += h && (a.ndiv > c.ndiv || (isfinite(noise) && gain > noise));
    const double gap = va - b.final_mean;
    char rec[64] = "";
    if (isfinite(gap) && gap > 0) snprintf(rec, sizeof rec, ", %.0f%% of the gap to bf16 recovered", 100 * gain / gap);
    cat(ev, sizeof ev, "%s: all %.4f (%d/%d diverged) -> first/last bf16 %.4f (%d/%d): gain %+.4f%s%s; ", f[i], va,
        a.ndiv, a.n, vc, c.ndiv, c.n, gain, rec,
        isfinite(noise) ? (gain > noise ? " (beyond seed noise)" : " (within seed noise)") : " (one seed: no noise estimate)");
  }
  /* "noticeably": the direction for both formats, and beyond the seed spread for both;
   * the right direction inside the noise is inconclusive */
  finding_add(st, helped < 2 ? 0 : beyond == 2 ? 1 : 3,
              "Keeping the first and last layers in BF16 lowers the loss (published: helps noticeably).",
              "%sreproduced when it lowers the final loss (or prevents a divergence) for both formats by more than the "
              "seed-to-seed spread (sd of the difference); inconclusive when the direction holds but not beyond the "
              "spread. Beyond the spread: %d of 2.",
              ev, beyond);
  agg k = aggregate(st, "e5m2 all + check", 0), a = aggregate(st, "e5m2 all", 0);
  long fb = 0, ch = 0;
  for (int j = 0; j < st->nrun; j++)
    if (!strcmp(st->run[j].name, "e5m2 all + check")) { fb += st->run[j].res.fallbacks; ch += st->run[j].res.checks; }
  if (k.n)
    finding_add(st, 2, "Check-and-fallback (periodic bf16 check, fall back on disagreement).",
                "e5m2 all + check: %ld checks, %ld fallbacks over %d runs; final %.4f vs %.4f without the check.", ch, fb,
                k.n, k.final_mean, a.final_mean);
}

/* ====================================================================== */
/* study: calibration                                                      */
/* ====================================================================== */

#define CALIB_AFTER 20

static void setup_calibration(study *st) {
  resolve(st, 150, 8, 400, 2, 4, LR1, 1, LR1, 1);
  /* --steps is the bf16 pretraining; the continuation is CALIB_AFTER steps more */
  const long pre = st->steps, after = st->size == STUDY_TINY ? 4 : CALIB_AFTER;
  char s1[64];
  snprintf(s1, sizeof s1, "steps=%ld", pre + after);
  add_cfg(st, "bf16 pretrain", "pretrain", 0, "pre", 0, "prec=bf16", "ckpt={dir}/ckpt-{run}.bin", NULL);
  add_cfg(st, "bf16 continue", "continue", 0, "ref", 1, "prec=bf16", "resume={dir}/ckpt-{run}.bin", s1, "stats_every=1", NULL);
  add_cfg(st, "hybrid current", "continue", 0, "current", 1, "prec=hybrid", "resume={dir}/ckpt-{run}.bin", s1,
          "stats_every=1", NULL);
  add_cfg(st, "hybrid delayed, no calibration", "continue", 0, "nocal", 1, "prec=hybrid;recipe=delayed",
          "resume={dir}/ckpt-{run}.bin", "calibrate=0", s1, "stats_every=1", NULL);
  add_cfg(st, "hybrid delayed, calibrate=1", "continue", 1, "cal", 1, "prec=hybrid;recipe=delayed",
          "resume={dir}/ckpt-{run}.bin", "calibrate=1", s1, "stats_every=1", NULL);
  snprintf(st->note, sizeof st->note,
           "Phase 1: bf16 training for %ld steps, checkpointed. Phase 2: resume from that checkpoint for %ld more "
           "steps in bf16 (reference), HYBRID with current scaling (needs no history), and HYBRID with TE delayed "
           "scaling (history 1024, initial scale 1: a bf16 checkpoint has no amax history) without and with one "
           "calibration step (a high-precision step that only fills the histories). The first FP8 step is called "
           "abnormal when its loss is more than 5%% above the bf16 continuation's loss at the same step. The "
           "continuations record FP8 statistics every step (`stats_every = 1`).",
           pre, after);
}

/* The losses of the first `max` training steps after the resume (the
 * engine keeps absolute step indices; calibration steps are not training
 * steps and leave no loss). */
static int after_resume(const study *st, const srun *r, double *out, int max) {
  int k = 0;
  for (long i = st->steps; i < r->res.steps_done && k < max; i++) out[k++] = r->res.loss[i];
  return k;
}

static void report_calibration(study *st, FILE *md) {
  const char *names[] = {"bf16 continue", "hybrid current", "hybrid delayed, no calibration",
                         "hybrid delayed, calibrate=1"};
  double first[4][64];
  int nfirst[4] = {0};
  tbl *t = tbl_new(8, "continuation", "step 1", "step 2", "step 3", "step 5", "mean 1-20", "calib steps", "diverged");
  series s[4];
  int ns = 0;
  for (int k = 0; k < 4; k++) {
    double acc[CALIB_AFTER] = {0};
    int cnt[CALIB_AFTER] = {0}, ndiv = 0, nr = 0;
    long calsteps = 0;
    for (int i = 0; i < st->nrun; i++) {
      const srun *r = &st->run[i];
      if (strcmp(r->name, names[k]) || r->failed) continue;
      double v[CALIB_AFTER];
      int n = after_resume(st, r, v, CALIB_AFTER);
      calsteps += r->cfg.calibrate;
      nr++;
      ndiv += run_diverged(r);
      for (int j = 0; j < n; j++) { acc[j] += v[j]; cnt[j]++; }
      if (n && nfirst[k] < 64) first[k][nfirst[k]++] = v[0];
    }
    double m[CALIB_AFTER];
    int nm = 0;
    for (int j = 0; j < CALIB_AFTER; j++)
      if (cnt[j]) m[nm++] = acc[j] / cnt[j];
    tbl_cell(t, 0, "%s", names[k]);
    const int idx[] = {0, 1, 2, 4};
    for (int q = 0; q < 4; q++) {
      if (idx[q] < nm) tbl_cell(t, 1 + q, "%.4f", m[idx[q]]);
      else tbl_cell(t, 1 + q, "-");
    }
    tbl_cell(t, 5, "%.4f", mean_of(m, nm));
    tbl_cell(t, 6, "%ld", nr ? calsteps / nr : 0);
    tbl_cell(t, 7, "%d/%d", ndiv, nr);
    tbl_end_row(t);
    series_alloc(&s[ns], nm + 1, names[k]);
    s[ns].points = 1;
    for (int j = 0; j < nm; j++) { s[ns].x[j] = j + 1; s[ns].y[j] = m[j]; }
    s[ns].n = nm;
    ns++;
  }
  fprintf(md, "## The steps after the resume\n\nMean over seeds of the training loss at each step after the resume "
              "(step 1 = the first training step after the checkpoint; calibration steps are not counted).\n\n");
  tbl_emit(st, t, md, "loss after resuming from the bf16 checkpoint (mean over seeds):");
  plot_draw(st, "resume", "training loss in the first steps after resuming from a bf16 checkpoint",
            "step after the resume", "training loss (mean over seeds)", 0, 0, ns, s, NAN);
  series_free(s, ns);
  md_plot(st, md, "resume", "training loss in the first steps after resuming from a bf16 checkpoint");
  plot_losses(st, md, "pretrain", "bf16 pretraining (seed 1)", 0, 0, NULL, smooth_for(st), 0, 0);
  /* what the first FP8 step saw: under/overflow per tensor kind (seed 1) */
  {
    char ev[1200] = "";
    stat_curve *c = malloc(sizeof *c);
    const char *kinds[] = {"input", "weight", "grad"};
    for (int k = 1; k < 4; k++) {
      const srun *r = find_run(st, names[k], 0, 0);
      if (!r || r->failed) continue;
      cat(ev, sizeof ev, "%s%s:", k > 1 ? "; " : "", names[k]);
      for (int q = 0; q < 3; q++) {
        read_stats(r, kinds[q], c);
        if (c->n) cat(ev, sizeof ev, " %s underflow %.2f%% overflow %.3f%%%s", kinds[q], c->under[0], c->over[0],
                      q < 2 ? "," : "");
      }
    }
    free(c);
    if (ev[0])
      finding_add(st, 2, "What the first FP8 step after the resume saw (seed 1, mean over layers).", "%s.", ev);
  }
  const double ref = mean_of(first[0], nfirst[0]), nocal = mean_of(first[2], nfirst[2]), cal = mean_of(first[3], nfirst[3]),
               cur = mean_of(first[1], nfirst[1]);
  if (isfinite(ref) && isfinite(nocal)) {
    const double j0 = nocal / ref - 1, j1 = isfinite(cal) ? cal / ref - 1 : NAN;
    finding_add(st, j0 > 0.05 ? 1 : 0,
                "Resuming FP8 (delayed scaling) from a BF16 checkpoint without an amax history gives an abnormal "
                "first-step loss.",
                "first step after the resume: bf16 %.4f, delayed without calibration %.4f (%+.1f%%); abnormal = more "
                "than 5%% above bf16.",
                ref, nocal, 100 * j0);
    if (isfinite(j1))
      finding_add(st, j0 <= 0.05 ? -1 : fabs(j1) <= 0.05 && j1 < j0 ? 1 : 0,
                  "A calibration step (high precision, fills the histories) fixes it.",
                  "first FP8 step after one calibration step: %.4f (%+.1f%% vs bf16; fixed = within 5%% and below the "
                  "uncalibrated jump%s). Current scaling, which needs no history: %.4f (%+.1f%%).",
                  cal, 100 * j1, j0 <= 0.05 ? "; inconclusive here: the uncalibrated step was not abnormal" : "", cur,
                  isfinite(cur) ? 100 * (cur / ref - 1) : NAN);
  }
}

/* ====================================================================== */
/* study: accumulation                                                     */
/* ====================================================================== */

#define ACC_NMODEL 6
static const char *const ACC_MODELS[ACC_NMODEL] = {"fp32", "tc:hopper-fastacc", "tc:hopper", "chunk=64,inner=acc=f16",
                                                   "chunk=128,inner=acc=f16", "acc=f16"};
typedef struct acc_result {
  int nk;
  size_t k[16], m, n;
  double err[2][16][ACC_NMODEL];       /* [positive/signed][k][model]: ||D - exact|| / ||exact|| */
  char failed[600];
} acc_result;

static double unif(uint64_t seed, uint64_t stream, uint64_t i) {
  return ((double)(exmy_random64(seed, stream, i) >> 11) + 0.5) * 0x1p-53;
}

/* The direct GEMM experiment: e4m3fn operands (no scaling), D in f32. */
static void gemm_experiment(study *st, acc_result *ar) {
  memset(ar, 0, sizeof *ar);
  const size_t kmax = st->size == STUDY_TINY ? 1024 : 16384;
  ar->m = ar->n = st->size == STUDY_TINY ? 4 : st->size == STUDY_FULL ? 64 : 16;
  for (size_t k = 256; k <= kmax && ar->nk < 16; k *= 2) ar->k[ar->nk++] = k;
  exmy_format e4, f32;
  char err[EXMY_ERRLEN];
  exmy_format_parse("e4m3fn", &e4, err, sizeof err);
  exmy_format_parse("f32", &f32, err, sizeof err);
  exmy_accum models[ACC_NMODEL], ex;
  for (int i = 0; i < ACC_NMODEL; i++)
    if (exmy_accum_parse(ACC_MODELS[i], &models[i], err, sizeof err)) {
      snprintf(ar->failed, sizeof ar->failed, "%s: %s", ACC_MODELS[i], err);
      return;
    }
  exmy_accum_parse("exact", &ex, err, sizeof err);
  exmy_rounding rnd = exmy_rounding_default();
  rnd.sat = EXMY_SAT_FINITE;
  const size_t m = ar->m, n = ar->n;
  for (int data = 0; data < 2; data++)
    for (int ki = 0; ki < ar->nk; ki++) {
      const size_t k = ar->k[ki];
      float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
      float *dex = malloc(m * n * sizeof *dex), *d = malloc(m * n * sizeof *d);
      for (size_t i = 0; i < m * k; i++) {
        double u = unif(7 + data, 1, i);
        a[i] = (float)(data ? sqrt(-2 * log(u)) * cos(6.283185307179586 * unif(7 + data, 2, i)) : u);
      }
      for (size_t i = 0; i < k * n; i++) {
        double u = unif(9 + data, 1, i);
        b[i] = (float)(data ? sqrt(-2 * log(u)) * cos(6.283185307179586 * unif(9 + data, 2, i)) : u);
      }
      exmy_recipe rc;
      exmy_qtensor qa, qb;
      exmy_recipe_parse("none", &rc, err, sizeof err);
      exmy_recipe_quantize(&rc, &e4, &rnd, a, m, k, NULL, &qa, NULL, err, sizeof err);
      exmy_recipe_quantize(&rc, &e4, &rnd, b, k, n, NULL, &qb, NULL, err, sizeof err);
      exmy_gemm_args g;
      exmy_gemm_args_init(&g);
      g.a = &qa;
      g.b = &qb;
      g.d_fmt = &f32;
      g.threads = st->threads;
      g.accum = &ex;
      if (exmy_gemm(&g, dex, NULL, NULL, err, sizeof err)) snprintf(ar->failed, sizeof ar->failed, "exact: %s", err);
      for (int mi = 0; mi < ACC_NMODEL; mi++) {
        g.accum = &models[mi];
        if (exmy_gemm(&g, d, NULL, NULL, err, sizeof err)) {
          snprintf(ar->failed, sizeof ar->failed, "%s: %s", ACC_MODELS[mi], err);
          ar->err[data][ki][mi] = NAN;
          continue;
        }
        double num = 0, den = 0;
        for (size_t i = 0; i < m * n; i++) {
          const double e = (double)d[i] - (double)dex[i];
          num += e * e;
          den += (double)dex[i] * (double)dex[i];
        }
        ar->err[data][ki][mi] = den > 0 ? sqrt(num / den) : NAN;
      }
      exmy_qtensor_free(&qa);
      exmy_qtensor_free(&qb);
      free(a);
      free(b);
      free(d);
      free(dex);
    }
}

static void setup_accumulation(study *st) {
  resolve(st, 150, 8, 500, 2, 3, LR1, 1, LR1, 1);
  small_gpt(st);
  const int w0 = st->size == STUDY_TINY ? 16 : 32, w1 = 4 * w0;
  const char *accs[] = {"fp32", "tc:hopper-fastacc", "tc:hopper", "chunk=128,inner=acc=f16", "acc=f16"};
  for (int w = 0; w < 2; w++)
    for (int a = 0; a < 5; a++) {
      char name[96], prec[128], dm[32], grp[32];
      const int width = w ? w1 : w0;
      snprintf(name, sizeof name, "d=%d %s", width, accs[a]);
      snprintf(prec, sizeof prec, "prec=hybrid;accum=%s", accs[a]);
      snprintf(dm, sizeof dm, "d_model=%d", width);
      snprintf(grp, sizeof grp, "d=%d", width);
      add_cfg(st, name, grp, width, accs[a], 0, prec, dm, NULL);
    }
  snprintf(st->note, sizeof st->note,
           "(a) Direct GEMMs through exmy_gemm: A (m x k) and B (k x n) e4m3fn without scaling, m = n = %d, D in "
           "fp32; positive data (uniform [0,1), every product positive, as Wang et al.) and signed data (normal); the "
           "error is ||D - exact|| / ||exact|| over all outputs. (b) Training: HYBRID FP8 with each accumulation model "
           "for all three GEMMs of every linear layer, at d_model %d and %d (the reductions over d_model and 4 "
           "d_model grow 4x; the weight-gradient reductions run over batch x seq_len tokens in both).",
           st->size == STUDY_TINY ? 4 : st->size == STUDY_FULL ? 64 : 16, w0, w1);
}

static void report_accumulation(study *st, FILE *md) {
  acc_result *ar = calloc(1, sizeof *ar);
  fprintf(st->log, "accumulation: direct GEMM experiment (exmy_gemm) ...\n");
  fflush(st->log);
  const double t0 = now_s();
  gemm_experiment(st, ar);
  fprintf(st->log, "accumulation: GEMM experiment done (%.1f s)\n", now_s() - t0);
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/gemm.csv", st->dir);
  FILE *f = fopen(path, "w");
  if (f) {
    fprintf(f, "data,k,model,rel_err\n");
    for (int d = 0; d < 2; d++)
      for (int ki = 0; ki < ar->nk; ki++)
        for (int mi = 0; mi < ACC_NMODEL; mi++)
          fprintf(f, "%s,%zu,\"%s\",%.9g\n", d ? "signed" : "positive", ar->k[ki], ACC_MODELS[mi], ar->err[d][ki][mi]);
    fclose(f);
  }
  fprintf(md, "## (a) GEMM error against exact as k grows\n\n");
  if (ar->failed[0]) fprintf(md, "GEMM failure: %s\n\n", ar->failed);
  for (int d = 0; d < 2; d++) {
    tbl *t = tbl_new(1 + ACC_NMODEL, "k", ACC_MODELS[0], ACC_MODELS[1], ACC_MODELS[2], ACC_MODELS[3], ACC_MODELS[4],
                     ACC_MODELS[5]);
    for (int ki = 0; ki < ar->nk; ki++) {
      tbl_cell(t, 0, "%zu", ar->k[ki]);
      for (int mi = 0; mi < ACC_NMODEL; mi++) tbl_cell(t, 1 + mi, "%.2e", ar->err[d][ki][mi]);
      tbl_end_row(t);
    }
    fprintf(md, "%s data: relative error ||D - exact|| / ||exact||\n\n", d ? "Signed (normal)" : "Positive (uniform [0,1))");
    tbl_emit(st, t, md, d ? "GEMM relative error, signed data:" : "GEMM relative error, positive data:");
    series s[ACC_NMODEL];
    for (int mi = 0; mi < ACC_NMODEL; mi++) {
      series_alloc(&s[mi], ar->nk + 1, ACC_MODELS[mi]);
      s[mi].points = 1;
      for (int ki = 0; ki < ar->nk; ki++) {
        s[mi].x[ki] = (double)ar->k[ki];
        /* exact-equal results cannot sit on a log axis: floor at 1e-9 */
        s[mi].y[ki] = ar->err[d][ki][mi] > 1e-9 ? ar->err[d][ki][mi] : 1e-9;
      }
      s[mi].n = ar->nk;
    }
    char stem[32], ttl[160];
    snprintf(stem, sizeof stem, "gemm-%s", d ? "signed" : "positive");
    snprintf(ttl, sizeof ttl, "GEMM relative error vs k, e4m3fn operands, %s data (floor 1e-9 = exact)",
             d ? "signed" : "positive");
    plot_draw(st, stem, ttl, "k (reduction length)", "||D - exact|| / ||exact||", 1, 1, ACC_NMODEL, s, NAN);
    series_free(s, ACC_NMODEL);
    md_plot(st, md, stem, ttl);
  }
  /* (b) training */
  fprintf(md, "## (b) Training with each accumulation model\n\n");
  tbl *t = tbl_new(6, "width", "accumulation", "final", "vs fp32", "val", "diverged");
  char ev[1200] = "";
  double gapfast[2] = {NAN, NAN};
  for (int w = 0; w < 2; w++) {
    const char *grp = NULL;
    double base = NAN;
    for (int i = 0; i < st->nrun; i++) {
      const srun *r = &st->run[i];
      if (r->lri || r->seedi) continue;
      if ((w == 0) != (r->x == st->run[0].x)) continue;
      grp = r->group;
      agg a = aggregate(st, r->name, 0);
      if (!strcmp(r->tag, "fp32")) base = a.final_mean;
      char c[32];
      tbl_cell(t, 0, "%s", r->group);
      tbl_cell(t, 1, "%s", r->tag);
      fmt_num(a.final_mean, c, sizeof c);
      tbl_cell(t, 2, "%s", c);
      if (isfinite(base) && isfinite(a.final_mean)) tbl_cell(t, 3, "%+.2f%%", 100 * (a.final_mean - base) / base);
      else tbl_cell(t, 3, "-");
      fmt_num(a.val_mean, c, sizeof c);
      tbl_cell(t, 4, "%s", c);
      tbl_cell(t, 5, "%d/%d", a.ndiv, a.n);
      tbl_end_row(t);
      if (!strcmp(r->tag, "tc:hopper-fastacc") && isfinite(base)) gapfast[w] = (a.final_mean - base) / base;
      char fb[32];
      fmt_num(a.final_mean, fb, sizeof fb);
      cat(ev, sizeof ev, "%s %s %s%s; ", r->group, r->tag, fb, a.ndiv ? " (diverged)" : "");
    }
    (void)grp;
  }
  tbl_emit(st, t, md, "training (means over seeds):");
  plot_losses(st, md, "loss", "training loss per accumulation model and width (seed 1)", 0, 0, NULL, smooth_for(st), 0,
              0);
  /* findings */
  const int K = ar->nk - 1;
  if (K >= 0 && !ar->failed[0]) {
    const double f16 = ar->err[0][K][5], c64 = ar->err[0][K][3], c128 = ar->err[0][K][4];
    finding_add(st, f16 >= 0.25 && f16 <= 0.75 ? 1 : 0,
                "An FP16 accumulator loses about half of a long positive sum (Wang et al. 2018, k = 16384).",
                "k = %zu, positive e4m3fn products, acc=f16: relative error %.1f%% (reproduced when 25%%-75%%).",
                ar->k[K], 100 * f16);
    finding_add(st, c64 <= 0.01 ? 1 : 0, "Chunk-based accumulation (chunks of 64) brings the error to about 0.15%.",
                "k = %zu: chunk=64 %.3f%%, chunk=128 %.3f%% (fp16 inside each chunk, fp32 across chunks); reproduced "
                "when chunk=64 is at most 1%%.",
                ar->k[K], 100 * c64, 100 * c128);
    const double fa0 = ar->err[0][0][1], fa1 = ar->err[0][K][1], pr = ar->err[0][K][2], fp = ar->err[0][K][0];
    finding_add(st, fa1 > 2 * fa0 && fa1 > 4 * pr ? 1 : 0,
                "Limited tensor-core accumulation (fast accumulation) hurts at large k; promoting to fp32 every 128 "
                "products fixes it (DeepSeek-V3).",
                "positive data: tc:hopper-fastacc %.2e at k = %zu -> %.2e at k = %zu; tc:hopper (promotion every 128) "
                "%.2e; fp32 %.2e. Signed data at k = %zu: fastacc %.2e, promoted %.2e. Reproduced when fastacc's error "
                "grows more than 2x over the k range and ends more than 4x above the promoted one.",
                fa0, ar->k[0], fa1, ar->k[K], pr, fp, ar->k[K], ar->err[1][K][1], ar->err[1][K][2]);
  }
  double sdw = NAN;
  for (int i = 0; i < st->nrun; i++)
    if (st->run[i].x != st->run[0].x && !strcmp(st->run[i].tag, "fp32")) {
      sdw = aggregate(st, st->run[i].name, 0).final_sd;
      break;
    }
  if (isfinite(gapfast[0]) && isfinite(gapfast[1]))
    finding_add(st, gapfast[1] > gapfast[0] && gapfast[1] > 0.005 ? 1 : 0,
                "In training, fast accumulation costs more at the larger width (larger k).",
                "final loss vs fp32 accumulation, tc:hopper-fastacc: %+.2f%% (narrow), %+.2f%% (wide); reproduced "
                "when the wide gap is larger and above 0.5%%. Final losses (means over seeds): %sseed-to-seed sd of "
                "the wide fp32 run: %.4f.",
                100 * gapfast[0], 100 * gapfast[1], ev, sdw);
  else finding_add(st, -1, "In training, fast accumulation costs more at the larger width (larger k).", "Runs: %s", ev);
  {
    int nd16 = 0, n16 = 0;
    for (int i = 0; i < st->nrun; i++) {
      const srun *r = &st->run[i];
      if (!strstr(r->tag, "acc=f16")) continue;
      n16++;
      nd16 += run_diverged(r) || r->res.steps_done < r->cfg.steps;
    }
    if (n16)
      finding_add(st, 2, "FP16 accumulation of per-tensor-scaled FP8 operands in training.",
                  "%d of %d training runs with an fp16 accumulator (plain or inside 128-chunks) diverged. With current "
                  "scaling the largest inputs sit near 448 (e4m3fn) and 57344 (e5m2), so single products exceed "
                  "fp16's largest finite value 65504 before the scale is applied in the epilogue: the accumulator "
                  "overflows, unlike Wang et al.'s unscaled FP8 products.",
                  nd16, n16);
  }
  free(ar);
}

/* ====================================================================== */
/* study: rounding                                                         */
/* ====================================================================== */

static void setup_rounding(study *st) {
  resolve(st, 300, 12, 1000, 2, 4, LR1, 1, LR1, 1);
  small_gpt(st);
  base_kv(st, "min_lr_frac", "0");
  add_cfg(st, "bf16", "reference", 0, "ref", 0, "prec=bf16", NULL);
  for (int m = 3; m <= 5; m++)
    for (int k = 0; k < 2; k++) {
      char name[64], p[96];
      snprintf(name, sizeof name, "grad e8m%d %s", m, k ? "sr" : "rne");
      snprintf(p, sizeof p, "prec=bf16;fmt.grad=e8m%d;round.grad=%s", m, k ? "sr" : "rne");
      add_cfg(st, name, "grad", m, k ? "sr" : "rne", 0, p, NULL);
    }
  add_cfg(st, "bf16 weights rne", "master", 0, "rne", 0, "prec=bf16", "master=bf16", "master_round=rne", NULL);
  add_cfg(st, "bf16 weights sr", "master", 0, "sr", 0, "prec=bf16", "master=bf16", "master_round=sr", NULL);
  snprintf(st->note, sizeof st->note,
           "Learning rate decays to 0 (`min_lr_frac = 0`). (1) bf16 GEMMs with the gradient operands (dgrad, wgrad) "
           "cast to E8M3..E8M5 with round-to-nearest-even or stochastic rounding. (2) \"Pure bf16 weights\": after "
           "every optimizer update the fp32 master weights are rounded to bf16 with rne or sr (`master`, "
           "`master_round`); `bf16` (fp32 master weights) is the reference.");
}

static int pick_master(const srun *r) { return !strcmp(r->group, "master") || !strcmp(r->tag, "ref"); }
static int pick_grad(const srun *r) { return !strcmp(r->group, "grad"); }
static int pick_grad3(const srun *r) { return (!strcmp(r->group, "grad") && r->x == 3) || !strcmp(r->tag, "ref"); }

static void report_rounding(study *st, FILE *md) {
  agg ref = aggregate(st, "bf16", 0);
  tbl *t = tbl_new(7, "configuration", "final", "sd", "vs bf16", "val", "diverged", "drop in 2nd half");
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (r->lri || r->seedi) continue;
    agg a = aggregate(st, r->name, 0);
    agg_cells(t, r->name, &a, &ref);
    /* loss decrease over the second half (mean of the 10% around the middle minus final) */
    double drop[64];
    int nd = 0;
    for (int j = 0; j < st->nrun && nd < 64; j++) {
      const srun *q = &st->run[j];
      if (strcmp(q->name, r->name) || q->failed || q->res.steps_done < 20) continue;
      long n = q->res.steps_done, w = n / 10;
      double mid = 0;
      for (long s = n / 2 - w / 2; s < n / 2 - w / 2 + w; s++) mid += q->res.loss[s];
      drop[nd++] = mid / w - q->res.final_loss_avg;
    }
    tbl_cell(t, 6, "%.4f", mean_of(drop, nd));
    tbl_end_row(t);
  }
  fprintf(md, "## Results\n\nMeans over seeds. `drop in 2nd half`: mean loss of the 10%% of steps around the middle "
              "minus the final loss: how much the run still learned while the learning rate decayed.\n\n");
  tbl_emit(st, t, md, "summary (means over seeds):");
  plot_losses(st, md, "loss-master", "pure bf16 weights: rne vs sr rounding of the updates (seed 1)", 0, 0, pick_master,
              smooth_for(st), 0, 0);
  plot_losses(st, md, "loss-master-late", "the second half (learning rate decaying to 0), seed 1", 0, 0, pick_master,
              smooth_for(st), st->steps / 2, 0);
  plot_gap(st, md, "loss-master-gap", "pure bf16 weights: loss minus the fp32-master run's loss (seed 1)", "bf16", 0, 0,
           pick_master, smooth_for(st));
  plot_losses(st, md, "loss-grad-e8m3", "E8M3 gradients: rne vs sr (seed 1)", 0, 0, pick_grad3, smooth_for(st), 0, 0);
  plot_gap(st, md, "loss-grad-gap", "low-mantissa gradients: loss minus bf16's loss (seed 1)", "bf16", 0, 0, pick_grad,
           smooth_for(st));
  /* findings */
  char ev[1024] = "";
  int sr_better = 0, n = 0;
  for (int m = 3; m <= 5; m++) {
    char a1[64], a2[64];
    snprintf(a1, sizeof a1, "grad e8m%d rne", m);
    snprintf(a2, sizeof a2, "grad e8m%d sr", m);
    agg x = aggregate(st, a1, 0), y = aggregate(st, a2, 0);
    if (!x.n || !y.n) continue;
    n++;
    double vx = x.nfinal ? x.final_mean : x.first_mean, vy = y.nfinal ? y.final_mean : y.first_mean;
    const int b = vy < vx || x.ndiv > y.ndiv;
    sr_better += b;
    cat(ev, sizeof ev, "E8M%d: rne %.4f (%d/%d diverged), sr %.4f (%d/%d), difference %+.4f vs seed sd %.4f/%.4f; ",
        m, vx, x.ndiv, x.n, vy, y.ndiv, y.n, vy - vx, x.final_sd, y.final_sd);
  }
  if (n)
    finding_add(st, sr_better == n ? 1 : 0,
                "Stochastic rounding of low-mantissa gradients trains at least as well as round-to-nearest.",
                "%sbf16 gradients: %.4f. Reproduced when sr's final loss is lower (or it diverges less) at every "
                "width; here at %d of %d.",
                ev, ref.final_mean, sr_better, n);
  agg r = aggregate(st, "bf16 weights rne", 0), s = aggregate(st, "bf16 weights sr", 0);
  if (r.n && s.n && isfinite(ref.final_mean)) {
    const double gr = r.final_mean - ref.final_mean, gs = s.final_mean - ref.final_mean;
    finding_add(st, gr > 0 && gr > gs ? 1 : 0,
                "With bf16 weights, round-to-nearest updates vanish as the learning rate decays; stochastic rounding "
                "removes the bias.",
                "final loss above fp32 master weights: rne %+.4f, sr %+.4f (fp32 master %.4f). Reproduced when rne's "
                "gap is positive and larger than sr's.",
                gr, gs, ref.final_mean);
  }
}

/* ====================================================================== */
/* the table of studies                                                    */
/* ====================================================================== */

static const study_def STUDIES[] = {
  {"default", "fp32 vs bf16 vs HYBRID FP8 (current scaling) vs E8M2 round-toward-zero on the tiny GPT (~1-2 min)",
   "Megatron-LM FP8 (Transformer Engine): loss tracks BF16, consistently a little higher. Lee et al. (2024): "
   "low-mantissa E8My training with round-toward-zero fails to converge.",
   setup_default, report_default},
  {"mantissa", "E8M1..E8M7 (rtz; rne and sr controls) vs fp32/bf16 over learning rates and seeds: divergences, spikes",
   "\"To FP8 and Back Again\" (Lee et al., 2024, arXiv 2405.18710): E8M3, E8M4, E8M5 training of a 120M TinyLLaMA "
   "fails to converge; at 7B only E8M5 and E8M6 are relatively stable; instability rises as mantissa bits fall.",
   setup_mantissa, report_mantissa},
  {"recipes", "bf16, e4m3fn, e5m2, HYBRID current vs delayed scaling (history 1/16/1024, margin 0/1): loss, scale ratio",
   "Transformer Engine per-tensor delayed scaling (amax history) vs current scaling: delayed scales lag when the "
   "distribution moves. Megatron-LM FP8: loss tracks BF16, a little higher.",
   setup_recipes, report_recipes},
  {"fallback", "every layer FP8 (e4m3fn, e5m2) vs the first and last layers in bf16; a check-and-fallback run",
   "Keeping the first and last layers in BF16 helps noticeably; periodic BF16 checks with fallback on disagreement.",
   setup_fallback, report_fallback},
  {"calibration", "resume a bf16 checkpoint in FP8 delayed scaling with and without a calibration step: first steps",
   "Resuming FP8 training from a BF16 checkpoint without amax history gives an abnormal first-step loss; a "
   "calibration step (high-precision forward/backward that only fills the histories) fixes it.",
   setup_calibration, report_calibration},
  {"accumulation", "fp32 vs tc (fast / promoted every 128) vs chunked and plain fp16 accumulation as k grows; training",
   "DeepSeek-V3: limited FP8 tensor-core accumulation (~14 bits) hurts at large k; promoting every 128 products "
   "fixes it. Wang et al. 2018: 16384 positive FP8 products in an FP16 accumulator lose about half the sum; chunks "
   "of 64 bring the error to about 0.15%.",
   setup_accumulation, report_accumulation},
  {"rounding", "rne vs stochastic rounding for E8M3..E8M5 gradients and for bf16 weight updates as the LR decays",
   "Stochastic rounding removes the bias that makes small updates vanish (pure bf16 weights: round-to-nearest "
   "stalls as the learning rate decays).",
   setup_rounding, report_rounding},
};
#define NSTUDY ((int)(sizeof STUDIES / sizeof STUDIES[0]))

int study_count(void) { return NSTUDY; }
const char *study_name(int i) { return i >= 0 && i < NSTUDY ? STUDIES[i].name : NULL; }
const char *study_description(int i) { return i >= 0 && i < NSTUDY ? STUDIES[i].desc : NULL; }
int study_find(const char *name) {
  for (int i = 0; i < NSTUDY; i++)
    if (!strcmp(STUDIES[i].name, name)) return i;
  return -1;
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
}

int study_main(const char *name, const study_opts *o, char *err, size_t errlen) {
  if (!name || !*name) name = "default";
  const int idx = study_find(name);
  if (idx < 0) {
    char list[512] = "";
    for (int i = 0; i < NSTUDY; i++) cat(list, sizeof list, "%s%s", i ? ", " : "", STUDIES[i].name);
    snprintf(err, errlen, "study: unknown study '%s' (accepted: %s)", name, list);
    return 2;
  }
  study *st = calloc(1, sizeof *st);
  if (!st) { snprintf(err, errlen, "study: out of memory"); return 1; }
  st->def = &STUDIES[idx];
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
#else
  st->threads = 1;
#endif
  int rc = 0;
  if (o->lrs && (rc = parse_lrs(st, o->lrs, err, errlen))) goto out;
  if (o->data && strcmp(o->data, "builtin")) {
    FILE *df = fopen(o->data, "r");
    if (!df) {
      snprintf(err, errlen, "study: --data %s: cannot open: %s", o->data, strerror(errno));
      rc = 2;
      goto out;
    }
    fclose(df);
  }
  st->def->setup(st);
  if ((rc = build_configs(st, err, errlen))) goto out;
  if (o->dry_run) {
    xp_config d0;
    xp_config_default(&d0);
    int nd;
    char **dl = config_lines(&d0, &nd);
    fprintf(st->log, "study %s: %d runs (%s size, %ld steps, %d seed%s, %d learning rate%s), results in %s\n", name,
            st->nrun, st->size == STUDY_TINY ? "tiny" : st->size == STUDY_FULL ? "full" : "default", st->steps,
            st->nseeds, st->nseeds > 1 ? "s" : "", st->nlr, st->nlr > 1 ? "s" : "", st->dir);
    for (int i = 0; i < st->nrun; i++) {
      int nl;
      char **l = config_lines(&st->run[i].cfg, &nl);
      fprintf(st->log, "[%d/%d] %s%s:", i + 1, st->nrun, st->run[i].label, st->run[i].phase ? " (phase 2)" : "");
      for (int j = 0; j < nl; j++)
        if (!has_line(dl, nd, l[j]) && !skip_line(l[j])) {
          /* "key = value" -> "key=value" */
          const char *eq = strstr(l[j], " = ");
          if (eq) fprintf(st->log, " %.*s=%s", (int)(eq - l[j]), l[j], eq + 3);
          else fprintf(st->log, " %s", l[j]);
        }
      fputc('\n', st->log);
      free_lines(l, nl);
    }
    free_lines(dl, nd);
    goto out;
  }
  char de[EXMY_ERRLEN];
  if (xp_mkdir_p(st->dir, de, sizeof de)) {
    snprintf(err, errlen, "study: %s", de);
    rc = 1;
    goto out;
  }
  char rd[XP_PATH + 16];
  snprintf(rd, sizeof rd, "%s/runs", st->dir);
  xp_mkdir_p(rd, NULL, 0);
  st->gnuplot = o->plots && system("command -v gnuplot >/dev/null 2>&1") == 0;
  fprintf(st->log, "study %s: %s\n%d runs (%ld steps, %d seed%s, %d learning rate%s), %d at a time; results in %s\n", name,
          st->def->desc, st->nrun, st->steps, st->nseeds, st->nseeds > 1 ? "s" : "", st->nlr, st->nlr > 1 ? "s" : "",
          st->threads, st->dir);
  fflush(st->log);
  const double t0 = now_s();
  run_all(st);
  st->seconds = now_s() - t0;
  write_runs_csv(st);

  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/report.md", st->dir);
  FILE *md = fopen(path, "w");
  if (!md) {
    snprintf(err, errlen, "study: cannot write '%s': %s", path, strerror(errno));
    rc = 1;
    goto out;
  }
  fprintf(md, "# exmy study %s\n\n%s.\n\n", name, st->def->desc);
  if (o->command) fprintf(md, "Command: `%s`\n\n", o->command);
  fprintf(md, "**Published result.** %s\n\n", st->def->published);
  report_setup(st, md);
  report_runs_table(st, md);
  int nok = 0;
  for (int i = 0; i < st->nrun; i++) nok += !st->run[i].failed;
  if (nok) st->def->report(st, md);
  report_findings(st, md);
  if (!st->gnuplot) fprintf(md, "\n(gnuplot was not run: plots are only their data and scripts, `*.dat`, `*.gp`.)\n");
  if (!nok) fprintf(md, "\nEvery run failed (see `runs.csv`): no analysis.\n");
  fclose(md);
  st->seconds = now_s() - t0;
  write_summary_json(st);
  report_console_findings(st);
  int nfail = 0;
  const srun *ff = NULL;
  for (int i = 0; i < st->nrun; i++)
    if (st->run[i].failed) { nfail++; if (!ff) ff = &st->run[i]; }
  char tm[32];
  fmt_time(st->seconds, tm, sizeof tm);
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
  free_study(st);
  free(st);
  return rc;
}
