/* study_file.c: study files, a study as data (docs/studies/README.md).
 *
 * A study file is the engine's config grammar (xp_config_line: key = value,
 * '#' comments) with sweep keys beside the engine's keys:
 *   name, description, published, note      text for the report
 *   report = NAME                            a C analysis hook (study_hooks.c's table)
 *   seeds = N                                paired seeds 1..N for every arm
 *   reference = ARM, nonconv_nats = X        the non-convergence rule's reference
 *   lr_delta = X                             the lrsweep analysis's LR_max tolerance (nats)
 *   arm.NAME.KEY = VALUE                     an arm: engine keys (and group, tag,
 *                                            x, phase for the analysis; name, the
 *                                            runs' name when not NAME)
 *   axis.KEY = a, b, c | logspace(a, b, n) | linspace(a, b, n)
 *                                            crossed with the arms (axis.lr is the
 *                                            learning-rate axis)
 *   zip = KEY, KEY                           these axes step together
 *   arm.NAME.reference = ARM                 this arm's rules against ARM (arms of another
 *                                            model, length or width), not the file's
 *   arm.NAME.from = ARM, arm.NAME.more_steps = N
 *                                            start from ARM's final checkpoint
 *                                            (same point, lr, seed), N steps more
 *   gemm.FIELD = VALUE                       a direct GEMM experiment (study_gemm.c)
 *   claim.NAME.FIELD = VALUE                 text, published, arms (A, B), minus (C, D), metric,
 *                                            rule (tracks, higher, lower), margin
 *   tiny.KEY, default.KEY, full.KEY = VALUE  any line, only at that size
 *                                            (--tiny, no size option, --full)
 *   anything else                            an engine key for every run
 * Every line is checked when the file is read (engine keys by xp_config_set
 * on a scratch config), so a bad file fails before any run, naming
 * FILE:LINE and the bad text. */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char *const ARM_META[] = {"group", "tag", "x", "phase", "name", "from", "more_steps", "reference"};
static const char *const CLAIM_FIELDS[] = {"text", "published", "arms", "metric", "rule", "margin", "effect", "control", "lr", "at", "minus",
                                           "requires"};
static const char *const TABLE_FIELDS[] = {"metrics", "title", "split"};
static const char *const PLOT_FIELDS[] = {"kind", "title", "ref", "metric", "x", "xlabel"};
static const char *const PLOT_KINDS[] = {"loss", "gap", "metric", "edge"};
static const char *const RULES[] = {"tracks", "higher", "lower"};

static int in_list(const char *s, const char *const *l, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, l[i])) return i;
  return -1;
}
#define IN(s, l) in_list((s), (l), (int)(sizeof(l) / sizeof(l)[0]))

static int ferr(char *err, size_t errlen, const study_file *f, int ln, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));
static int ferr(char *err, size_t errlen, const study_file *f, int ln, const char *fmt, ...) {
  char m[EXMY_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  snprintf(err, errlen, "study: %s:%d: %s", f->path, ln, m);
  return 2;
}

static int bad_metric(const study_file *f, int ln, const char *m, char *err, size_t errlen) {
  char names[400];
  st_metric_names(names, sizeof names);
  return ferr(err, errlen, f, ln, "unknown metric '%s' (accepted: %s)", m, names);
}

/* {dir} and {run} stand for paths known only when the study runs. */
static void placeholder(const char *in, char *out, size_t n) {
  size_t j = 0;
  for (const char *p = in; *p && j + 1 < n;) {
    if (!strncmp(p, "{dir}", 5) || !strncmp(p, "{run}", 5)) { out[j++] = 'x'; p += 5; }
    else out[j++] = *p++;
  }
  out[j] = 0;
}

/* base: the engine's defaults, made once per file (making them parses the
 * preset's formats) and copied per check. */
static int check_engine(const study_file *f, const xp_config *base, int ln, const char *key, const char *val, char *err,
                        size_t errlen) {
  xp_config c = *base;
  char v[ST_VALLEN], e[EXMY_ERRLEN];
  placeholder(val, v, sizeof v);
  if (xp_config_set(&c, key, v, e, sizeof e)) return ferr(err, errlen, f, ln, "%s", e);
  return 0;
}

/* An engine key's spelling (a plot's x: the axis key is checked when the
 * figure is drawn, as the axis lines may come later in the file). */
static int is_key(const char *v) {
  if (!*v) return 0;
  for (; *v; v++)
    if (!((*v >= 'a' && *v <= 'z') || (*v >= '0' && *v <= '9') || *v == '_' || *v == '.')) return 0;
  return 1;
}

/* Check one line (key already without its size prefix). */
static int check_line(const study_file *f, const xp_config *base, int ln, const char *key, const char *val, char *err, size_t errlen) {
  char why[EXMY_ERRLEN];
  static const char *const TEXT[] = {"name", "description", "published", "note", "zip", "reference"};
  if (IN(key, TEXT) >= 0) return 0;
  if (!strcmp(key, "report")) {
    if (!st_report_hook(val)) {
      char hooks[400];
      st_report_hooks(hooks, sizeof hooks);
      return ferr(err, errlen, f, ln, "report = %s: no such analysis (accepted: %s)", val, hooks);
    }
    return 0;
  }
  if (!strcmp(key, "first_seed")) {
    double v;
    if (!st_parse_num(val, &v) || v != floor(v) || v < 1 || v > 1e9)
      return ferr(err, errlen, f, ln, "first_seed = %s: expected a whole number 1..1e9", val);
    return 0;
  }
  if (!strcmp(key, "seeds")) {
    double v;
    if (!st_parse_num(val, &v) || v != floor(v) || v < 1 || v > 64)
      return ferr(err, errlen, f, ln, "seeds = %s: expected a whole number 1..64", val);
    return 0;
  }
  if (!strcmp(key, "nonconv_nats") || !strcmp(key, "lr_delta")) {
    double v;
    if (!st_parse_num(val, &v) || !(v > 0)) return ferr(err, errlen, f, ln, "%s = %s: expected a positive number", key, val);
    return 0;
  }
  if (!strncmp(key, "gemm.", 5)) {
    if (st_gemm_check(key + 5, val, why, sizeof why)) return ferr(err, errlen, f, ln, "%s", why);
    return 0;
  }
  if (!strncmp(key, "axis.", 5)) {
    char vals[ST_MAXVAL][ST_VALLEN];
    const int n = st_axis_values(val, vals, ST_MAXVAL, why, sizeof why);
    if (n < 0) return ferr(err, errlen, f, ln, "%s: %s", key, why);
    for (int i = 0; i < n; i++)
      if (check_engine(f, base, ln, key + 5, vals[i], err, errlen)) return 2;
    return 0;
  }
  if (!strncmp(key, "arm.", 4)) {
    const char *dot = strchr(key + 4, '.');
    if (!dot || dot == key + 4 || !dot[1]) return ferr(err, errlen, f, ln, "'%s': expected arm.NAME.KEY", key);
    if (IN(dot + 1, ARM_META) >= 0) {
      double v;
      if ((!strcmp(dot + 1, "x") || !strcmp(dot + 1, "phase")) && !st_parse_num(val, &v))
        return ferr(err, errlen, f, ln, "%s = %s: expected a number", key, val);
      if (!strcmp(dot + 1, "more_steps") && (!st_parse_num(val, &v) || v != floor(v) || v < 1 || v > 1e9))
        return ferr(err, errlen, f, ln, "%s = %s: expected a whole number of steps 1..1e9", key, val);
      if ((!strcmp(dot + 1, "from") || !strcmp(dot + 1, "reference")) && !*val)
        return ferr(err, errlen, f, ln, "%s: expected an arm's name", key);
      return 0;
    }
    return check_engine(f, base, ln, dot + 1, val, err, errlen);
  }
  if (!strncmp(key, "claim.", 6)) {
    const char *dot = strchr(key + 6, '.');
    if (!dot || dot == key + 6 || IN(dot + 1, CLAIM_FIELDS) < 0)
      return ferr(err, errlen, f, ln, "'%s': expected claim.NAME.FIELD with FIELD one of text, published, arms, metric, "
                  "rule, margin, effect, control, lr, at, minus", key);
    const char *fl = dot + 1;
    if (!strcmp(fl, "metric") && !st_metric_find(val)) return bad_metric(f, ln, val, err, errlen);
    if (!strcmp(fl, "metric") && !strcmp(val, "lr_edge_fit"))
      return ferr(err, errlen, f, ln, "metric lr_edge_fit is for tables; a claim on the edge uses lr_edge (its paired "
                  "shift)");
    if (!strcmp(fl, "rule") && IN(val, RULES) < 0)
      return ferr(err, errlen, f, ln, "unknown rule '%s' (accepted: tracks, higher, lower)", val);
    double v;
    if ((!strcmp(fl, "margin") || !strcmp(fl, "effect") || !strcmp(fl, "lr")) && (!st_parse_num(val, &v) || !(v > 0)))
      return ferr(err, errlen, f, ln, "%s = %s: expected a positive number", fl, val);
    const st_metric *rm;
    int ge;
    if (!strcmp(fl, "requires") && st_requires_parse(val, &rm, &ge, &v)) /* a precondition on arm A's runs */
      return ferr(err, errlen, f, ln, "requires = %s: expected METRIC > X or METRIC >= X, METRIC a per-run metric "
                  "(e.g. first_overflow > 0)", val);
    if (!strcmp(fl, "at") && (!strchr(val, '=') || strchr(val, '=') == val))
      return ferr(err, errlen, f, ln, "at = %s: expected an axis point, KEY=VALUE (e.g. d_model=64)", val);
    if (!strcmp(fl, "arms") || !strcmp(fl, "minus")) {
      const char *c = strchr(val, ',');
      if (!c || strchr(c + 1, ','))
        return ferr(err, errlen, f, ln, "%s = %s: expected two arms, %s", fl, val,
                    fl[0] == 'a' ? "A, B (A minus B)" : "C, D (the gap is (A - B) - (C - D))");
    }
    return 0;
  }
  if (!strncmp(key, "table.", 6) || !strncmp(key, "plot.", 5)) {
    const int tb = key[0] == 't';
    const char *dot = strchr(key + (tb ? 6 : 5), '.');
    if (!dot || dot == key + (tb ? 6 : 5) || (tb ? IN(dot + 1, TABLE_FIELDS) : IN(dot + 1, PLOT_FIELDS)) < 0)
      return ferr(err, errlen, f, ln, "'%s': expected %s", key,
                  tb ? "table.NAME.FIELD with FIELD one of metrics, title, split"
                     : "plot.NAME.FIELD with FIELD one of kind, title, ref, metric, x");
    const char *fl = dot + 1;
    if (!strcmp(fl, "metrics")) {
      char buf[ST_VALLEN];
      snprintf(buf, sizeof buf, "%s", val);
      int n = 0, nedge = 0;
      for (char *sv = NULL, *t = strtok_r(buf, ", ", &sv); t; t = strtok_r(NULL, ", ", &sv), n++) {
        const st_metric *m = st_metric_find(t);
        if (!m) return bad_metric(f, ln, t, err, errlen);
        nedge += m->kind == ST_MK_EDGE;
      }
      if (!n) return ferr(err, errlen, f, ln, "%s: expected one or more metrics", key);
      if (nedge && nedge < n)
        return ferr(err, errlen, f, ln, "%s: the edge metrics (a row per arm) and the per-run ones (a row per arm and "
                    "learning rate) go in separate tables", key);
    }
    if (tb && !strcmp(fl, "split") && strcmp(val, "outcome"))
      return ferr(err, errlen, f, ln, "%s = %s: expected outcome (a row for the trained runs, one for the failed)", key, val);
    if (!strcmp(fl, "metric") && !st_metric_find(val)) return bad_metric(f, ln, val, err, errlen);
    if (!strcmp(fl, "metric") && st_metric_find(val)->kind == ST_MK_EDGE)
      return ferr(err, errlen, f, ln, "plot metric %s: an arm's statistic over the learning rates goes in a table", val);
    if (!strcmp(fl, "kind") && IN(val, PLOT_KINDS) < 0)
      return ferr(err, errlen, f, ln, "unknown plot kind '%s' (accepted: loss, gap, metric, edge)", val);
    if (!strcmp(fl, "x") && strcmp(val, "lr") && strcmp(val, "x") && strcmp(val, "params") && !is_key(val))
      return ferr(err, errlen, f, ln, "plot x = %s: expected lr, x, params or an axis key of the file", val);
    return 0;
  }
  if (!strncmp(key, "tiny.", 5) || !strncmp(key, "full.", 5) || !strncmp(key, "default.", 8))
    return ferr(err, errlen, f, ln, "'%s': one size prefix at most", key);
  return check_engine(f, base, ln, key, val, err, errlen);
}

void st_file_free(study_file *f) {
  free(f->line);
  free(f->eff);
  memset(f, 0, sizeof *f);
}

int st_file_read(study_file *f, const char *path, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  snprintf(f->path, sizeof f->path, "%s", path);
  FILE *in = fopen(path, "r");
  if (!in) { snprintf(err, errlen, "study: cannot open '%s': %s", path, strerror(errno)); return 2; }
  xp_config *base = malloc(sizeof *base);
  if (!base) { fclose(in); snprintf(err, errlen, "study: out of memory"); return 1; }
  xp_config_default(base);
  char buf[4096];
  int ln = 0, cap = 0, rc = 0;
  while (fgets(buf, sizeof buf, in)) {
    ln++;
    if (!strchr(buf, '\n') && !feof(in)) { rc = ferr(err, errlen, f, ln, "line longer than %d characters", (int)sizeof buf - 2); break; }
    char *k, *v;
    const int t = xp_config_line(buf, &k, &v);
    if (!t) continue;
    if (t < 0) { rc = ferr(err, errlen, f, ln, "expected key = value, got '%s'", k); break; }
    int size = -1;
    if (!strncmp(k, "tiny.", 5)) { size = STUDY_TINY; k += 5; }
    else if (!strncmp(k, "default.", 8)) { size = STUDY_DEFAULT; k += 8; }
    else if (!strncmp(k, "full.", 5)) { size = STUDY_FULL; k += 5; }
    if (strlen(k) >= sizeof f->line[0].key || strlen(v) >= sizeof f->line[0].val) {
      rc = ferr(err, errlen, f, ln, "'%.40s...': key or value too long", k);
      break;
    }
    if ((rc = check_line(f, base, ln, k, v, err, errlen))) break;
    if (f->nline == cap) {
      cap = cap ? 2 * cap : 64;
      sf_line *nl = realloc(f->line, (size_t)cap * sizeof *nl);
      if (!nl) { snprintf(err, errlen, "study: out of memory"); rc = 1; break; }
      f->line = nl;
    }
    sf_line *L = &f->line[f->nline++];
    L->ln = ln;
    L->size = size;
    snprintf(L->key, sizeof L->key, "%s", k);
    snprintf(L->val, sizeof L->val, "%s", v);
  }
  fclose(in);
  free(base);
  if (!rc && !st_file_get(f, STUDY_DEFAULT, "description", NULL))
    rc = ferr(err, errlen, f, ln, "no 'description = ...' line (every study says what it is)");
  /* which line is in effect per size, once: the setup asks for every line */
  if (!rc && !(f->eff = malloc(3 * (size_t)f->nline + 1))) {
    snprintf(err, errlen, "study: out of memory");
    rc = 1;
  }
  for (int size = 0; !rc && size < 3; size++)
    for (int i = 0; i < f->nline; i++) {
      const sf_line *L = &f->line[i];
      int eln = -1;
      if (L->size < 0 || L->size == size) st_file_get(f, size, L->key, &eln);
      f->eff[size * f->nline + i] = eln == L->ln;
    }
  if (rc) st_file_free(f);
  return rc;
}

static int file_setup(study *st, const study_file *f, int sz, char (*avals)[ST_MAXVAL][ST_VALLEN], char *err,
                      size_t errlen);

/* Run names and keys from the file: arms crossed with the axes (zip groups
 * step together), each crossed with the learning rates and seeds. */
int st_lr_on_grid(const double *lr, int n, double v) {
  for (int i = 0; i < n; i++)
    if (fabs(lr[i] - v) <= 1e-9 * v) return 1;
  return 0;
}

/* DIR/refine.lrs (written by --refine, study_refine.c): its learning rates after
 * the declared ones */
int st_refine_load(study *st, char *err, size_t errlen) {
  char path[XP_PATH + 32], line[512];
  snprintf(path, sizeof path, "%s/" ST_REFINE_FILE, st->dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0; /* no refinement yet */
  int ln = 0, rc = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || !*p) continue;
    p[strcspn(p, "\n")] = 0;
    char *end;
    errno = 0;
    const double v = strtod(p, &end);
    if (end == p || errno || !(isfinite(v) && v > 0) || (*end && !strchr(" \t#", *end))) {
      snprintf(err, errlen, "study: %s:%d: bad learning rate '%.40s' (a positive number, then an optional # comment)",
               path, ln, p);
      rc = 2;
      break;
    }
    if (st_lr_on_grid(st->lr, st->nlr, v)) continue;
    if (st->nlr >= MAX_LR) {
      snprintf(err, errlen, "study: %s:%d: more than %d learning rates with the refined ones", path, ln, MAX_LR);
      rc = 2;
      break;
    }
    st->lr[st->nlr++] = v;
    st->nlr_refined++;
  }
  fclose(f);
  return rc;
}

int st_file_setup(study *st, char *err, size_t errlen) {
  const study_file *f = st->file;
  const int sz = st->size;
  int ln = 0;
  const char *v;
  /* steps, seeds, learning rates */
  xp_config d;
  xp_config_default(&d);
  long steps = d.steps;
  if ((v = st_file_get(f, sz, "steps", NULL))) steps = strtol(v, NULL, 10);
  st->steps = st->o->steps > 0 ? st->o->steps : steps;
  st->nseeds = 1;
  if ((v = st_file_get(f, sz, "seeds", NULL))) st->nseeds = atoi(v);
  st->first_seed = (v = st_file_get(f, sz, "first_seed", NULL)) ? atoi(v) : 1;
  if (st->o->seeds > 0) st->nseeds = st->o->seeds;
  if (!st->lrs_given) {
    char vals[ST_MAXVAL][ST_VALLEN], why[EXMY_ERRLEN];
    st->nlr = 1;
    st->lr[0] = st->lr0;
    if ((v = st_file_get(f, sz, "lr", NULL))) st->lr[0] = strtod(v, NULL);
    if ((v = st_file_get(f, sz, "axis.lr", &ln))) {
      const int n = st_axis_values(v, vals, MAX_LR, why, sizeof why);
      if (n < 0) return ferr(err, errlen, f, ln, "axis.lr: %s", why);
      for (int i = 0; i < n; i++) st->lr[i] = strtod(vals[i], NULL);
      st->nlr = n;
    }
  }
  int rrc = st_refine_load(st, err, errlen); /* a refined grid (--refine): after the declared learning rates */
  if (rrc) return rrc;
  st_base_kv(st, "steps", "%ld", st->steps);
  /* base keys: every effective engine line */
  for (int i = 0; i < f->nline; i++) {
    const sf_line *L = &f->line[i];
    if (!st_file_effective(f, sz, i) || !strncmp(L->key, "axis.", 5) || !strncmp(L->key, "arm.", 4) ||
        !strncmp(L->key, "claim.", 6) || !strncmp(L->key, "gemm.", 5) || !strncmp(L->key, "table.", 6) ||
        !strncmp(L->key, "plot.", 5))
      continue;
    static const char *const SWEEP[] = {"name", "description", "published", "note", "report", "seeds", "first_seed", "zip",
                                        "reference", "nonconv_nats", "lr_delta", "steps", "lr"};
    if (IN(L->key, SWEEP) >= 0) continue;
    if (st->nbase >= MAX_BASE) return ferr(err, errlen, f, L->ln, "more than %d engine keys", MAX_BASE);
    st_base_kv(st, L->key, "%s", L->val);
  }
  /* the studies' corpus: Tiny Shakespeare unless the file names one (data = builtin: the generated text) */
  if (!st_file_get(f, sz, "data", NULL)) {
    if (st->nbase >= MAX_BASE) return ferr(err, errlen, f, 0, "more than %d engine keys", MAX_BASE);
    st_base_kv(st, "data", "%s", "shakespeare");
  }
  if ((v = st_file_get(f, sz, "note", NULL))) snprintf(st->note, sizeof st->note, "%s", v);
  char(*avals)[ST_MAXVAL][ST_VALLEN] = calloc(ST_MAXAXIS, sizeof *avals);
  if (!avals) { snprintf(err, errlen, "study: out of memory"); return 1; }
  int rc = file_setup(st, f, sz, avals, err, errlen);
  free(avals);
  if (!rc) rc = st_gemm_setup(st, err, errlen);
  return rc;
}

/* The index of the arm called name among the narm arms, or -1. */
static int arm_find(char (*arm)[64], int narm, const char *name) {
  int k = 0;
  while (k < narm && strcmp(arm[k], name)) k++;
  return k < narm ? k : -1;
}

static int file_setup(study *st, const study_file *f, int sz, char (*avals)[ST_MAXVAL][ST_VALLEN], char *err,
                      size_t errlen) {
  const char *v;
  /* the axes other than lr, grouped: a zip group is one dimension */
  char ak[ST_MAXAXIS][64];
  int an[ST_MAXAXIS], agrp[ST_MAXAXIS], na = 0;
  char zipbuf[ST_VALLEN] = "";
  int zln = 0;
  if ((v = st_file_get(f, sz, "zip", &zln))) snprintf(zipbuf, sizeof zipbuf, "%s", v);
  for (int i = 0; i < f->nline; i++) {
    const sf_line *L = &f->line[i];
    if (strncmp(L->key, "axis.", 5) || !strcmp(L->key, "axis.lr") || !st_file_effective(f, sz, i)) continue;
    if (na >= ST_MAXAXIS) return ferr(err, errlen, f, L->ln, "more than %d axes", ST_MAXAXIS);
    char why[EXMY_ERRLEN];
    snprintf(ak[na], sizeof ak[na], "%s", L->key + 5);
    an[na] = st_axis_values(L->val, avals[na], ST_MAXVAL, why, sizeof why);
    if (an[na] < 0) return ferr(err, errlen, f, L->ln, "%s: %s", L->key, why);
    agrp[na] = na;
    na++;
  }
  if (zipbuf[0]) {
    int first = -1;
    for (char *tok = strtok(zipbuf, ","); tok; tok = strtok(NULL, ",")) {
      const char *k = st_trim(tok);
      int a = -1;
      for (int j = 0; j < na; j++)
        if (!strcmp(ak[j], k)) a = j;
      if (a < 0) return ferr(err, errlen, f, zln, "zip: '%s' is not an axis (axis.%s = ...)", k, k);
      if (first < 0) first = a;
      else if (an[a] != an[first])
        return ferr(err, errlen, f, zln, "zip: axes %s (%d values) and %s (%d values) differ in length", ak[first], an[first], k, an[a]);
      agrp[a] = first;
    }
  }
  /* arms, in the order they first appear */
  char arm[ST_MAXARM][64];
  int narm = 0, body[ST_MAXARM]; /* body: the arm has a line besides its reference */
  for (int i = 0; i < f->nline; i++) {
    const sf_line *L = &f->line[i];
    if (strncmp(L->key, "arm.", 4) || (L->size >= 0 && L->size != sz)) continue;
    const char *dot = strchr(L->key + 4, '.');
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)(dot - L->key - 4), L->key + 4);
    int k = arm_find(arm, narm, nm);
    if (k < 0) {
      if (narm >= ST_MAXARM) return ferr(err, errlen, f, L->ln, "more than %d arms", ST_MAXARM);
      snprintf(arm[narm], sizeof arm[0], "%s", nm);
      body[k = narm++] = 0;
    }
    body[k] |= strcmp(dot + 1, "reference") != 0;
  }
  /* every claim names two arms of this study */
  for (int i = 0; i < f->nline; i++) {
    const sf_line *L = &f->line[i];
    const size_t kl = strlen(L->key);
    const int minus = kl >= 6 && !strcmp(L->key + kl - 6, ".minus");
    if (strncmp(L->key, "claim.", 6) || kl < 5 || (strcmp(L->key + kl - 5, ".arms") && !minus) || !st_file_effective(f, sz, i))
      continue;
    if (minus) { /* a difference in differences: VALUE metrics only */
      char mk[ST_NAMELEN + 16];
      snprintf(mk, sizeof mk, "%.*smetric", (int)(kl - 5), L->key);
      const char *mv = st_file_get(f, sz, mk, NULL);
      if (!mv) mv = "val_loss";
      const st_metric *m = st_metric_find(mv);
      if (m && m->kind != ST_MK_VALUE)
        return ferr(err, errlen, f, L->ln, "%s: a difference in differences needs a per-run metric, not %s", L->key, mv);
    }
    char two[ST_VALLEN];
    snprintf(two, sizeof two, "%s", L->val);
    for (char *tok = strtok(two, ","); tok; tok = strtok(NULL, ",")) {
      const char *a = st_trim(tok);
      if (arm_find(arm, narm, a) < 0) return ferr(err, errlen, f, L->ln, "%s: no arm '%s' in this study (arm.%s.KEY = ...)", L->key, a, a);
    }
  }
  /* the rules' reference arms: the file's (reference = ARM) and any arm's own (arm.X.reference = ARM) name arms
   * of this study (a misspelt one would leave the non-convergence rule unapplied, silently), and an arm is
   * more than its reference line (arm.typo.reference = B would make a new arm of the base config) */
  int rln = 0;
  const char *rv = st_file_get(f, sz, "reference", &rln);
  if (rv && !narm) return ferr(err, errlen, f, rln, "reference = %s: the study has no arms (arm.NAME.KEY = ...)", rv);
  if (rv && arm_find(arm, narm, rv) < 0)
    return ferr(err, errlen, f, rln, "reference = %s: no arm '%s' in this study (arm.%s.KEY = ...)", rv, rv, rv);
  int refk[ST_MAXARM];
  for (int k = 0; k < narm; k++) {
    char key[128];
    snprintf(key, sizeof key, "arm.%.63s.reference", arm[k]);
    rv = st_file_get(f, sz, key, &rln);
    refk[k] = rv ? arm_find(arm, narm, rv) : -1;
    if (rv && refk[k] < 0)
      return ferr(err, errlen, f, rln, "%s = %s: no arm '%s' in this study (arm.%s.KEY = ...)", key, rv, rv, rv);
    if (rv && !body[k])
      return ferr(err, errlen, f, rln, "%s = %s: no arm '%s' in this study besides this line (arm.%s.KEY = ...)", key, rv,
                  arm[k], arm[k]);
  }
  /* an arm that is another arm's reference is judged against itself (its flags are the ones the others read),
   * unless it names its own */
  for (int k = 0; k < narm; k++)
    if (refk[k] >= 0 && refk[refk[k]] < 0) refk[refk[k]] = refk[k];
  const int implicit = narm == 0;
  if (implicit) narm = 1;
  /* points of the non-lr axes: mixed radix over the groups; counted in
   * double first, since 8 axes of 64 values overflow an int */
  int grp[ST_MAXAXIS], ng = 0, last_ln = 0;
  double npt_d = 1;
  for (int a = 0; a < na; a++)
    if (agrp[a] == a) { grp[ng++] = a; npt_d *= an[a]; }
  for (int i = 0; i < f->nline; i++)
    if (st_file_effective(f, sz, i)) last_ln = f->line[i].ln;
  const double nruns = st->nrun + npt_d * narm * st->nlr * st->nseeds;
  if (nruns > ST_MAXRUNS)
    return ferr(err, errlen, f, last_ln, "%.0f runs (%d arm%s x %.0f axis point%s x %d learning rate%s x %d seed%s): at most %d",
                nruns, narm, narm > 1 ? "s" : "", npt_d, npt_d > 1 ? "s" : "", st->nlr, st->nlr > 1 ? "s" : "",
                st->nseeds, st->nseeds > 1 ? "s" : "", ST_MAXRUNS);
  const int npt = (int)npt_d;
  /* from = ARM: an arm of this study, not itself, no cycle; more_steps only with from */
  int from[ST_MAXARM];
  for (int k = 0; k < narm; k++) {
    from[k] = -1;
    int fln = 0, mln = 0;
    char key[128];
    snprintf(key, sizeof key, "arm.%s.from", arm[k]);
    const char *fv = implicit ? NULL : st_file_get(f, sz, key, &fln);
    snprintf(key, sizeof key, "arm.%s.more_steps", arm[k]);
    if (!implicit && st_file_get(f, sz, key, &mln) && !fv)
      return ferr(err, errlen, f, mln, "%s: more_steps needs arm.%s.from = ARM (the run it continues)", key, arm[k]);
    if (!fv) continue;
    const int p = arm_find(arm, narm, fv);
    if (p < 0) return ferr(err, errlen, f, fln, "arm.%s.from = %s: no arm '%s' in this study (arm.%s.KEY = ...)", arm[k], fv, fv, fv);
    if (p == k) return ferr(err, errlen, f, fln, "arm.%s.from = %s: an arm cannot start from itself", arm[k], fv);
    from[k] = p;
  }
  for (int k = 0; k < narm; k++) { /* a chain longer than the arms is a cycle */
    int p = from[k], len = 0;
    while (p >= 0 && len <= narm) { p = from[p]; len++; }
    if (p >= 0) {
      int fln = 0;
      char key[128];
      snprintf(key, sizeof key, "arm.%s.from", arm[k]);
      st_file_get(f, sz, key, &fln);
      return ferr(err, errlen, f, fln, "arm.%s.from = %s: the arms' from keys form a cycle", arm[k], arm[from[k]]);
    }
  }
  const int run0 = st->nrun;
  for (int k = 0; k < narm; k++) {
    char group[64] = "", tag[32] = "", shown[64] = "";
    double x = 0;
    int phase = 0;
    long more = 0;
    const char *kvs[MAX_KV];
    char kvbuf[MAX_KV][ST_VALLEN + 64];
    int nk = 0;
    for (int i = 0; !implicit && i < f->nline; i++) {
      const sf_line *L = &f->line[i];
      if (strncmp(L->key, "arm.", 4) || !st_file_effective(f, sz, i)) continue;
      const char *dot = strchr(L->key + 4, '.');
      if ((size_t)(dot - L->key - 4) != strlen(arm[k]) || strncmp(L->key + 4, arm[k], strlen(arm[k]))) continue;
      const char *key = dot + 1;
      if (!strcmp(key, "group")) snprintf(group, sizeof group, "%.63s", L->val);
      else if (!strcmp(key, "tag")) snprintf(tag, sizeof tag, "%.31s", L->val);
      else if (!strcmp(key, "x")) x = strtod(L->val, NULL);
      else if (!strcmp(key, "phase")) phase = atoi(L->val);
      else if (!strcmp(key, "name")) snprintf(shown, sizeof shown, "%.63s", L->val);
      else if (!strcmp(key, "more_steps")) more = strtol(L->val, NULL, 10);
      else if (!strcmp(key, "from") || !strcmp(key, "reference")) continue;
      else {
        if (nk >= MAX_KV - 2 - na) return ferr(err, errlen, f, L->ln, "arm %s: more than %d keys", arm[k], MAX_KV - 2 - na);
        snprintf(kvbuf[nk], sizeof kvbuf[nk], "%s=%s", key, L->val);
        kvs[nk] = kvbuf[nk];
        nk++;
      }
    }
    for (int p = 0; p < npt; p++) {
      char name[ST_NAMELEN], point[ST_NAMELEN] = "";
      int nk2 = nk, rest = p;
      char pbuf[ST_MAXAXIS][ST_VALLEN + 64];
      for (int g = ng - 1; g >= 0; g--) { /* last axis fastest */
        const int a0 = grp[g], idx = rest % an[a0];
        rest /= an[a0];
        for (int a = 0; a < na; a++) {
          if (agrp[a] != a0) continue;
          snprintf(pbuf[a], sizeof pbuf[a], "%s=%s", ak[a], avals[a][idx]);
          kvs[nk2++] = pbuf[a];
        }
      }
      for (int a = 0; a < na; a++) st_cat(point, sizeof point, " %s", pbuf[a]); /* each axis value in file order */
      /* name: the arm, then the point (a name cut short is caught by check_dirs) */
      const char *pt = implicit ? point + !!point[0] : point; /* without an arm: no leading space */
      if (snprintf(name, sizeof name, "%s%s", implicit ? "" : shown[0] ? shown : arm[k], pt) >= (int)sizeof name)
        name[sizeof name - 2] = '~'; /* cut: marked (a collision is caught by check_dirs) */
      if (!name[0]) snprintf(name, sizeof name, "base");
      const int first = st->nrun;
      st_add_cfgv(st, name, group[0] ? group : NULL, x, tag, phase, kvs, nk2);
      for (int i = first; i < st->nrun; i++) { /* claims pair runs by arm and axis point */
        snprintf(st->run[i].arm, sizeof st->run[i].arm, "%.63s", implicit ? "" : arm[k]);
        snprintf(st->run[i].ref, sizeof st->run[i].ref, "%.63s", implicit || refk[k] < 0 ? "" : arm[refk[k]]);
        snprintf(st->run[i].point, sizeof st->run[i].point, "%s", pt);
        st->run[i].more_steps = more;
      }
    }
  }
  /* from: each run's parent is the from arm's run at the same axis point,
   * learning rate and seed; it runs a phase after its parent */
  for (int i = run0; i < st->nrun; i++) {
    srun *r = &st->run[i];
    int k = 0;
    while (k < narm && strcmp(arm[k], r->arm)) k++;
    if (implicit || k == narm || from[k] < 0) continue;
    for (int j = run0; j < st->nrun; j++) {
      const srun *q = &st->run[j];
      if (!strcmp(q->arm, arm[from[k]]) && !strcmp(q->point, r->point) && q->lri == r->lri && q->seedi == r->seedi) {
        r->parent = j;
        st->run[j].keep_ckpt = 1;
        break;
      }
    }
  }
  for (int pass = 0; pass <= narm; pass++) /* phases along the chains (no cycles: checked above) */
    for (int i = run0; i < st->nrun; i++) {
      srun *r = &st->run[i];
      if (r->parent >= 0 && r->phase <= st->run[r->parent].phase) r->phase = st->run[r->parent].phase + 1;
    }
  return 0;
}
