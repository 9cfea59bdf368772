/* study_gemm.c: a study file's direct GEMM experiment, the gemm.* keys
 * (docs/studies/README.md): the error of accumulation models against a
 * reference model as the reduction length k grows, through exmy_gemm.
 *   gemm.accum = M1; M2; ...     the models compared (';' between them: a
 *                                model's own text has commas); turns it on
 *   gemm.k = 256, 512, ...       reduction lengths (a list or a range)
 *   gemm.format = e4m3fn         A's and B's format (no scaling, saturating
 *                                rne cast of the float32 data)
 *   gemm.reference = exact       the model the error is measured against
 *   gemm.data = positive, signed positive: uniform [0,1) (every product
 *                                positive); signed: standard normal
 *   gemm.m, gemm.n = 16          D's shape (D in fp32)
 *   gemm.seed = 7                A's data from seed + row, B's from seed + 2
 *                                + row (row: the data kind's row below), so a
 *                                data kind's numbers do not depend on the list
 * Error: ||D - D_ref|| / ||D_ref|| over all of D.  Results: DIR/gemm.csv
 * (data,k,model,rel_err); the process that runs the study runs it (shard 1 of
 * N, rank 0 under MPI), --report reads gemm.csv back. */
#include "experiments/study_int.h"
#include "exmy.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct gemm_data { const char *name, *desc; int normal; } gemm_data;
static const gemm_data DATA[] = {
  {"positive", "Positive (uniform [0,1))", 0},
  {"signed", "Signed (normal)", 1},
};
#define NDATA ((int)(sizeof DATA / sizeof DATA[0]))
static const char *const FIELDS[] = {"accum", "k", "format", "reference", "data", "m", "n", "seed"};
#define NFIELD ((int)(sizeof FIELDS / sizeof FIELDS[0]))

static int data_row(const char *name) {
  for (int i = 0; i < NDATA; i++)
    if (!strcmp(DATA[i].name, name)) return i;
  return -1;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
  return s;
}

/* A whole number lo..hi. */
static int whole(const char *s, double lo, double hi, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  while (*end == ' ') end++;
  return end != s && !*end && !errno && *v == floor(*v) && *v >= lo && *v <= hi;
}

/* The models of gemm.accum: split on ';', each parsed.  n, or -1 with why. */
static int split_models(const char *text, char out[][128], int max, char *why, size_t whylen) {
  char buf[ST_VALLEN];
  snprintf(buf, sizeof buf, "%s", text);
  int n = 0;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
    const char *t = trim(tok);
    char e[EXMY_ERRLEN];
    exmy_accum a;
    if (!*t) { snprintf(why, whylen, "an empty model in the list"); return -1; }
    if (n >= max) { snprintf(why, whylen, "more than %d models", max); return -1; }
    if (strlen(t) >= 128) { snprintf(why, whylen, "model '%.40s...' too long", t); return -1; }
    if (exmy_accum_parse(t, &a, e, sizeof e)) { snprintf(why, whylen, "%s", e); return -1; }
    snprintf(out[n++], 128, "%s", t);
  }
  if (!n) { snprintf(why, whylen, "empty model list"); return -1; }
  return n;
}

int st_gemm_check(const char *field, const char *val, char *why, size_t whylen) {
  int f = 0;
  while (f < NFIELD && strcmp(FIELDS[f], field)) f++;
  if (f == NFIELD) {
    snprintf(why, whylen, "gemm.%s: unknown (accepted: gemm.accum, k, format, reference, data, m, n, seed)", field);
    return -1;
  }
  char e[EXMY_ERRLEN], (*vals)[ST_VALLEN] = NULL;
  double v;
  int rc = 0;
  if (!strcmp(field, "accum")) {
    char (*m)[128] = malloc(ST_GEMM_MAXMODEL * sizeof *m);
    if (!m || split_models(val, m, ST_GEMM_MAXMODEL, e, sizeof e) < 0) {
      snprintf(why, whylen, "gemm.accum = %s: %s", val, m ? e : "out of memory");
      rc = -1;
    }
    free(m);
  } else if (!strcmp(field, "reference")) {
    exmy_accum a;
    if (exmy_accum_parse(val, &a, e, sizeof e)) { snprintf(why, whylen, "gemm.reference = %s: %s", val, e); rc = -1; }
  } else if (!strcmp(field, "format")) {
    exmy_format fm;
    if (exmy_format_parse(val, &fm, e, sizeof e)) { snprintf(why, whylen, "gemm.format = %s: %s", val, e); rc = -1; }
  } else if (!strcmp(field, "m") || !strcmp(field, "n")) {
    if (!whole(val, 1, 4096, &v)) { snprintf(why, whylen, "gemm.%s = %s: expected a whole number 1..4096", field, val); rc = -1; }
  } else if (!strcmp(field, "seed")) {
    if (!whole(val, 0, 1e15, &v)) { snprintf(why, whylen, "gemm.seed = %s: expected a whole number >= 0", val); rc = -1; }
  } else if (!strcmp(field, "k") || !strcmp(field, "data")) {
    vals = malloc(ST_GEMM_MAXK * sizeof *vals);
    const int n = vals ? st_axis_values(val, vals, ST_GEMM_MAXK, e, sizeof e) : -1;
    if (n < 0) { snprintf(why, whylen, "gemm.%s: %s", field, vals ? e : "out of memory"); rc = -1; }
    for (int i = 0; !rc && i < n; i++) {
      if (!strcmp(field, "k") && !whole(vals[i], 1, 1 << 24, &v)) {
        snprintf(why, whylen, "gemm.k: '%s': expected whole numbers 1..16777216", vals[i]);
        rc = -1;
      }
      if (!strcmp(field, "data") && (n > ST_GEMM_MAXDATA || (i && !strcmp(vals[i], vals[0])))) {
        snprintf(why, whylen, "gemm.data = %s: expected positive, signed or both", val);
        rc = -1;
      }
      if (!rc && !strcmp(field, "data") && data_row(vals[i]) < 0) {
        snprintf(why, whylen, "gemm.data: unknown data '%s' (accepted: positive, signed)", vals[i]);
        rc = -1;
      }
    }
  }
  free(vals);
  return rc;
}

/* The experiment's setup from the file at the study's size (every value was
 * checked when the file was read).  0 (no gemm.* lines: st->gemm stays NULL),
 * or 2 with err (gemm.* lines without gemm.accum or gemm.k). */
int st_gemm_setup(study *st, char *err, size_t errlen) {
  const study_file *f = st->file;
  int any = 0, ln = 0;
  for (int i = 0; f && i < f->nline; i++)
    if (!strncmp(f->line[i].key, "gemm.", 5) && st_file_effective(f, st->size, i)) { any = 1; ln = f->line[i].ln; }
  if (!any) return 0;
  const char *acc = st_file_get(f, st->size, "gemm.accum", NULL), *k = st_file_get(f, st->size, "gemm.k", NULL);
  if (!acc || !k) {
    snprintf(err, errlen, "study: %s:%d: a gemm experiment needs gemm.accum = M1; M2 and gemm.k = K1, K2 (%s missing)",
             f->path, ln, !acc ? "gemm.accum" : "gemm.k");
    return 2;
  }
  st_gemm *g = calloc(1, sizeof *g);
  if (!g) { snprintf(err, errlen, "study: out of memory"); return 1; }
  char why[EXMY_ERRLEN], (*vals)[ST_VALLEN] = malloc(ST_GEMM_MAXK * sizeof *vals);
  if (!vals) { free(g); snprintf(err, errlen, "study: out of memory"); return 1; }
  g->nmodel = split_models(acc, g->model, ST_GEMM_MAXMODEL, why, sizeof why);
  g->nk = st_axis_values(k, vals, ST_GEMM_MAXK, why, sizeof why);
  for (int i = 0; i < g->nk; i++) g->k[i] = (size_t)strtod(vals[i], NULL);
  const char *v = st_file_get(f, st->size, "gemm.data", NULL);
  g->ndata = st_axis_values(v ? v : "positive", vals, ST_GEMM_MAXK, why, sizeof why);
  for (int i = 0; i < g->ndata && i < ST_GEMM_MAXDATA; i++) g->data[i] = data_row(vals[i]);
  if (g->ndata > ST_GEMM_MAXDATA) g->ndata = ST_GEMM_MAXDATA;
  free(vals);
  v = st_file_get(f, st->size, "gemm.format", NULL);
  snprintf(g->format, sizeof g->format, "%s", v ? v : "e4m3fn");
  v = st_file_get(f, st->size, "gemm.reference", NULL);
  snprintf(g->ref, sizeof g->ref, "%s", v ? v : "exact");
  v = st_file_get(f, st->size, "gemm.m", NULL);
  g->m = v ? (size_t)strtod(v, NULL) : 16;
  v = st_file_get(f, st->size, "gemm.n", NULL);
  g->n = v ? (size_t)strtod(v, NULL) : 16;
  v = st_file_get(f, st->size, "gemm.seed", NULL);
  g->seed = v ? (uint64_t)strtod(v, NULL) : 7;
  for (int d = 0; d < ST_GEMM_MAXDATA; d++)
    for (int i = 0; i < ST_GEMM_MAXK; i++)
      for (int j = 0; j < ST_GEMM_MAXMODEL; j++) g->err[d][i][j] = NAN;
  st->gemm = g;
  return 0;
}

static double unif(uint64_t seed, uint64_t stream, uint64_t i) {
  return ((double)(exmy_random64(seed, stream, i) >> 11) + 0.5) * 0x1p-53;
}
static void fill(float *x, size_t n, uint64_t seed, int normal) {
  for (size_t i = 0; i < n; i++) {
    const double u = unif(seed, 1, i);
    x[i] = (float)(normal ? sqrt(-2 * log(u)) * cos(6.283185307179586 * unif(seed, 2, i)) : u);
  }
}

/* One data kind at one k: every model's error (NaN and g->failed on an error). */
static void one_point(study *st, st_gemm *g, int di, int ki, const exmy_format *fm, const exmy_accum *ref,
                      const exmy_accum *models) {
  const size_t m = g->m, n = g->n, k = g->k[ki];
  const int row = g->data[di];
  char err[EXMY_ERRLEN];
  float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
  float *dref = malloc(m * n * sizeof *dref), *d = malloc(m * n * sizeof *d);
  exmy_qtensor qa, qb;
  memset(&qa, 0, sizeof qa);
  memset(&qb, 0, sizeof qb);
  if (!a || !b || !dref || !d) { snprintf(g->failed, sizeof g->failed, "out of memory at k = %zu", k); goto out; }
  fill(a, m * k, g->seed + (uint64_t)row, DATA[row].normal);
  fill(b, k * n, g->seed + 2 + (uint64_t)row, DATA[row].normal);
  exmy_rounding rnd = exmy_rounding_default();
  rnd.sat = EXMY_SAT_FINITE;
  exmy_recipe rc;
  exmy_format f32;
  exmy_recipe_parse("none", &rc, err, sizeof err);
  exmy_format_parse("f32", &f32, err, sizeof err);
  if (exmy_recipe_quantize(&rc, fm, &rnd, a, m, k, NULL, &qa, NULL, err, sizeof err) ||
      exmy_recipe_quantize(&rc, fm, &rnd, b, k, n, NULL, &qb, NULL, err, sizeof err)) {
    snprintf(g->failed, sizeof g->failed, "quantize: %s", err);
    goto out;
  }
  exmy_gemm_args ga;
  exmy_gemm_args_init(&ga);
  ga.a = &qa;
  ga.b = &qb;
  ga.d_fmt = &f32;
  ga.threads = st->threads;
  ga.accum = ref;
  if (exmy_gemm(&ga, dref, NULL, NULL, err, sizeof err)) {
    snprintf(g->failed, sizeof g->failed, "%.80s: %.500s", g->ref, err);
    goto out;
  }
  for (int mi = 0; mi < g->nmodel; mi++) {
    ga.accum = &models[mi];
    if (exmy_gemm(&ga, d, NULL, NULL, err, sizeof err)) {
      snprintf(g->failed, sizeof g->failed, "%s: %s", g->model[mi], err);
      continue;
    }
    double num = 0, den = 0;
    for (size_t i = 0; i < m * n; i++) {
      const double e = (double)d[i] - (double)dref[i];
      num += e * e;
      den += (double)dref[i] * (double)dref[i];
    }
    g->err[di][ki][mi] = den > 0 ? sqrt(num / den) : NAN;
  }
out:
  exmy_qtensor_free(&qa);
  exmy_qtensor_free(&qb);
  free(a), free(b), free(d), free(dref);
}

static void write_csv(const study *st, const st_gemm *g) {
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/gemm.csv", st->dir);
  FILE *f = fopen(path, "w");
  if (!f) { fprintf(st->log, "exmy: study: cannot write %s: %s\n", path, strerror(errno)); return; }
  fprintf(f, "data,k,model,rel_err\n");
  for (int d = 0; d < g->ndata; d++)
    for (int ki = 0; ki < g->nk; ki++)
      for (int mi = 0; mi < g->nmodel; mi++)
        fprintf(f, "%s,%zu,\"%s\",%.9g\n", DATA[g->data[d]].name, g->k[ki], g->model[mi], g->err[d][ki][mi]);
  fclose(f);
}

void st_gemm_run(study *st) {
  st_gemm *g = st->gemm;
  if (!g) return;
  char err[EXMY_ERRLEN];
  exmy_format fm;
  exmy_accum ref, *models = calloc(ST_GEMM_MAXMODEL, sizeof *models);
  if (!models) { snprintf(g->failed, sizeof g->failed, "out of memory"); return; }
  exmy_format_parse(g->format, &fm, err, sizeof err); /* checked when the file was read */
  exmy_accum_parse(g->ref, &ref, err, sizeof err);
  for (int i = 0; i < g->nmodel; i++) exmy_accum_parse(g->model[i], &models[i], err, sizeof err);
  fprintf(st->log, "%s: direct GEMM experiment (exmy_gemm: %d model%s, %d k, %d data) ...\n", st->def->name, g->nmodel,
          g->nmodel > 1 ? "s" : "", g->nk, g->ndata);
  fflush(st->log);
  const double t0 = st_now_s();
  for (int d = 0; d < g->ndata; d++)
    for (int ki = 0; ki < g->nk; ki++) one_point(st, g, d, ki, &fm, &ref, models);
  free(models);
  g->ran = 1;
  fprintf(st->log, "%s: GEMM experiment done (%.1f s)\n", st->def->name, st_now_s() - t0);
  write_csv(st, g);
}

/* --report: the numbers from gemm.csv (g->missing when it is not there). */
void st_gemm_load(study *st) {
  st_gemm *g = st->gemm;
  if (!g) return;
  char path[XP_PATH + 32], line[512];
  snprintf(path, sizeof path, "%s/gemm.csv", st->dir);
  FILE *f = fopen(path, "r");
  if (!f) { g->missing = 1; return; }
  int n = 0;
  while (fgets(line, sizeof line, f)) {
    char *q1 = strchr(line, '"'), *q2 = q1 ? strchr(q1 + 1, '"') : NULL, *c1 = strchr(line, ',');
    if (!q1 || !q2 || !c1 || q2[1] != ',') continue;
    *c1 = 0;
    *q2 = 0;
    const size_t k = (size_t)strtod(c1 + 1, NULL);
    const double v = strtod(q2 + 2, NULL);
    for (int d = 0; d < g->ndata; d++)
      for (int ki = 0; ki < g->nk; ki++)
        for (int mi = 0; mi < g->nmodel; mi++)
          if (!strcmp(DATA[g->data[d]].name, line) && g->k[ki] == k && !strcmp(g->model[mi], q1 + 1)) {
            g->err[d][ki][mi] = v;
            n++;
          }
  }
  fclose(f);
  g->missing = n < g->ndata * g->nk * g->nmodel;
  g->ran = !g->missing;
}

double st_gemm_err(const study *st, const char *data, size_t k, const char *model) {
  const st_gemm *g = st->gemm;
  if (!g) return NAN;
  for (int d = 0; d < g->ndata; d++)
    for (int ki = 0; ki < g->nk; ki++)
      for (int mi = 0; mi < g->nmodel; mi++)
        if (!strcmp(DATA[g->data[d]].name, data) && g->k[ki] == k && !strcmp(g->model[mi], model)) return g->err[d][ki][mi];
  return NAN;
}

/* report.md's section: per data kind a table (k by model) and a log-log plot. */
void st_report_gemm(study *st, FILE *md, const char *title) {
  st_gemm *g = st->gemm;
  if (!g) return;
  fprintf(md, "## %s\n\n", title);
  fprintf(md, "A (m x k) and B (k x n) cast to %s without scaling (rne, saturating), m = %zu, n = %zu, D in fp32 through "
              "`exmy_gemm`; the error is ||D - %s|| / ||%s|| over all of D (`gemm.csv`).\n\n",
          g->format, g->m, g->n, g->ref, g->ref);
  if (g->missing) {
    fprintf(md, "The GEMM experiment has not run yet (no complete `gemm.csv`: it runs with the study, or with shard 1).\n\n");
    return;
  }
  if (g->failed[0]) fprintf(md, "GEMM failure: %s\n\n", g->failed);
  for (int d = 0; d < g->ndata; d++) {
    const gemm_data *dd = &DATA[g->data[d]];
    tbl *t = st_tbl_new(1, "k");
    t->ncol = 1 + (g->nmodel < TBL_COLS - 1 ? g->nmodel : TBL_COLS - 1);
    for (int mi = 0; mi + 1 < t->ncol; mi++) snprintf(t->h[1 + mi], sizeof t->h[0], "%s", g->model[mi]);
    for (int ki = 0; ki < g->nk; ki++) {
      st_tbl_cell(t, 0, "%zu", g->k[ki]);
      for (int mi = 0; mi + 1 < t->ncol; mi++) st_tbl_cell(t, 1 + mi, "%.2e", g->err[d][ki][mi]);
      st_tbl_end_row(t);
    }
    char ct[96];
    fprintf(md, "%s data: relative error ||D - %s|| / ||%s||\n\n", dd->desc, g->ref, g->ref);
    snprintf(ct, sizeof ct, "GEMM relative error, %s data:", dd->name);
    st_tbl_emit(st, t, md, ct);
    series *s = calloc((size_t)g->nmodel, sizeof *s);
    if (!s) continue;
    for (int mi = 0; mi < g->nmodel; mi++) {
      st_series_alloc(&s[mi], g->nk + 1, g->model[mi]);
      s[mi].points = 1;
      for (int ki = 0; ki < g->nk; ki++) {
        s[mi].x[ki] = (double)g->k[ki];
        /* results equal to the reference cannot sit on a log axis: floor at 1e-9 */
        s[mi].y[ki] = g->err[d][ki][mi] > 1e-9 ? g->err[d][ki][mi] : 1e-9;
      }
      s[mi].n = g->nk;
    }
    char stem[48], ttl[400], yl[300];
    snprintf(stem, sizeof stem, "gemm-%s", dd->name);
    snprintf(ttl, sizeof ttl, "GEMM relative error vs k, %s operands, %s data (floor 1e-9 = %s)", g->format, dd->name, g->ref);
    snprintf(yl, sizeof yl, "||D - %s|| / ||%s||", g->ref, g->ref);
    st_plot_draw(st, stem, ttl, "k (reduction length)", yl, 1, 1, g->nmodel, s, NAN);
    st_series_free(s, g->nmodel);
    free(s);
    st_md_plot(st, md, stem, ttl);
  }
}

void st_gemm_json(const study *st, FILE *f) {
  const st_gemm *g = st->gemm;
  if (!g) return;
  fprintf(f, "  \"gemm\": {\"format\": ");
  st_json_str(f, g->format);
  fprintf(f, ", \"reference\": ");
  st_json_str(f, g->ref);
  fprintf(f, ", \"m\": %zu, \"n\": %zu, \"seed\": %llu, \"missing\": %s, \"errors\": [", g->m, g->n,
          (unsigned long long)g->seed, g->missing ? "true" : "false");
  int first = 1;
  for (int d = 0; d < g->ndata; d++)
    for (int ki = 0; ki < g->nk; ki++)
      for (int mi = 0; mi < g->nmodel; mi++) {
        fprintf(f, "%s\n    {\"data\": \"%s\", \"k\": %zu, \"model\": ", first ? "" : ",", DATA[g->data[d]].name, g->k[ki]);
        st_json_str(f, g->model[mi]);
        fprintf(f, ", \"rel_err\": ");
        st_json_num(f, g->err[d][ki][mi]);
        fputc('}', f);
        first = 0;
      }
  fprintf(f, "]},\n");
}
