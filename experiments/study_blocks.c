/* study_blocks.c: a study file's table.* and plot.* blocks over the
 * registered metrics (study_metric.c; docs/studies/README.md, "Tables and
 * plots").  Numbers and figures only: verdicts are the claims' alone.
 *
 *   table.NAME.metrics = M, M, ...   a row per arm (and learning rate and
 *                                    axis point where the study has several):
 *                                    VALUE metrics as mean +- sd over seeds
 *                                    (failed runs counted apart), RATE ones
 *                                    as k/n
 *   table.NAME.title = TEXT
 *   plot.NAME.kind = loss | gap | metric | edge
 *   plot.NAME.title = TEXT
 *   plot.NAME.ref = ARM              gap: the arm subtracted
 *   plot.NAME.metric = M             metric: the y value, mean over seeds with
 *   plot.NAME.x = lr | x             min-max bars, against the learning rate
 *                                    (log axis; a line per arm) or the arms' x
 *                                    numbers (a line per arm.X.group)
 *                                    edge: the stability edge per arm (with
 *                                    ref: the paired shift against ref)
 *                                    against an axis key's value or x =
 *                                    params (the parameter count) */
#include "experiments/study_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *bget(const study *st, const char *kind, const char *name, const char *f) {
  char k[200];
  snprintf(k, sizeof k, "%s.%.63s.%.16s", kind, name, f);
  return st_file_get(st->file, st->size, k, NULL);
}

/* The block names of one kind (table or plot) in the file's order. */
static int block_names(const study *st, const char *kind, char names[][64], int max) {
  const size_t kl = strlen(kind);
  int n = 0;
  for (int i = 0; i < st->file->nline && n < max; i++) {
    const sf_line *L = &st->file->line[i];
    if (strncmp(L->key, kind, kl) || L->key[kl] != '.' || !st_file_effective(st->file, st->size, i)) continue;
    const char *nm = L->key + kl + 1, *dot = strchr(nm, '.');
    if (!dot) continue;
    int k = 0;
    while (k < n && (strncmp(names[k], nm, (size_t)(dot - nm)) || names[k][dot - nm])) k++;
    if (k == n) snprintf(names[n++], sizeof names[0], "%.*s", (int)(dot - nm), nm);
  }
  return n;
}

/* The row groups: distinct (arm, lr index, point) in run order, into *gp
 * (allocated: at most one a run; free it). */
typedef struct grp { const srun *first; } grp;
static int groups(const study *st, grp **gp) {
  grp *g = *gp = malloc((size_t)(st->nrun ? st->nrun : 1) * sizeof *g);
  if (!g) { fprintf(stderr, "exmy: study: out of memory\n"); exit(1); }
  int n = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    int k = 0;
    while (k < n && (strcmp(g[k].first->arm, r->arm) || g[k].first->lri != r->lri || strcmp(g[k].first->point, r->point)))
      k++;
    if (k == n) g[n++].first = r;
  }
  return n;
}

static int same_group(const srun *a, const srun *b) {
  return !strcmp(a->arm, b->arm) && a->lri == b->lri && !strcmp(a->point, b->point);
}

/* only: -1 every run of the group, 0 those that did not fail, 1 those that failed */
static void metric_cell(const study *st, tbl *t, int col, const st_metric *m, const srun *g0, int only) {
  double v[256];
  int n = 0, nf = 0, k = 0, nr = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (!same_group(r, g0) || (only >= 0 && (r->missing || r->failed || st_run_failed(r) != only))) continue;
    const double x = st_metric_run(m, st, r);
    if (isnan(x)) continue;
    nr++;
    if (m->kind == ST_MK_RATE) k += x > 0;
    else if (isinf(x) || (m->fail_worst && st_run_failed(r))) nf++; /* failed (diverged or not converged): apart */
    else if (n < 256) v[n++] = x;
  }
  if (m->kind == ST_MK_RATE) { st_tbl_cell(t, col, "%d/%d", k, nr); return; }
  if (!n) { st_tbl_cell(t, col, nf ? "(%d failed)" : "-", nf); return; }
  const double mean = st_mean_of(v, n), sd = st_sd_of(v, n);
  char f[96];
  if (n > 1) snprintf(f, sizeof f, "%.4f +- %.4f", mean, sd);
  else snprintf(f, sizeof f, "%.4f", mean);
  if (nf) st_cat(f, sizeof f, " (%d failed)", nf);
  st_tbl_cell(t, col, "%s", f);
}

/* The columns of a metrics list, after the table's first ones (m[col]). */
static void metric_columns(tbl *t, const char *ms, const st_metric **m) {
  char buf[ST_VALLEN];
  snprintf(buf, sizeof buf, "%s", ms);
  for (char *sv = NULL, *tok = strtok_r(buf, ", ", &sv); tok && t->ncol < TBL_COLS; tok = strtok_r(NULL, ", ", &sv))
    if ((m[t->ncol] = st_metric_find(tok))) snprintf(t->h[t->ncol++], sizeof t->h[0], "%s", tok);
}

/* A table of edge metrics: a row per arm (and axis point), each cell the
 * arm's statistic over the learning-rate axis. */
static void edge_table(study *st, FILE *md, const char *name, const char *ms, const char *title) {
  grp *g;
  const int ng = groups(st, &g);
  tbl *t = st_tbl_new(1, "arm");
  int haspt = 0;
  for (int i = 0; i < ng; i++) haspt |= g[i].first->point[0] != 0;
  if (haspt) snprintf(t->h[t->ncol++], sizeof t->h[0], "point");
  const int first = t->ncol;
  const st_metric *m[TBL_COLS];
  metric_columns(t, ms, m);
  st_edge_buf *eb = malloc(sizeof *eb);
  for (int i = 0; eb && i < ng; i++) {
    const srun *r = g[i].first;
    int seen = 0; /* one row per (arm, point) */
    for (int j = 0; j < i && !seen; j++) seen = !strcmp(g[j].first->arm, r->arm) && !strcmp(g[j].first->point, r->point);
    st_edge_arm a;
    if (seen || !st_edge_arm_of(st, r->arm, r->point, eb, &a)) continue;
    int c = 0;
    st_tbl_cell(t, c++, "%s", r->arm[0] ? r->arm : "(base)");
    if (haspt) st_tbl_cell(t, c++, "%s", r->point[0] ? r->point + (r->point[0] == ' ') : "-");
    for (int j = first; j < t->ncol; j++) {
      char cell[96];
      if (!strcmp(m[j]->name, "lr_edge")) {
        st_edge_np e;
        st_edge_nonparam(&a, &e);
        st_edge_fmt_np(&e, cell, sizeof cell);
      } else if (!strcmp(m[j]->name, "lr_edge_fit")) {
        st_edge_fit f;
        st_edge_logistic(&a, 0.95, &f);
        st_edge_fmt_fit(&f, cell, sizeof cell);
      } else {
        st_edge_sens s;
        st_edge_sensitivity(&a, NULL, 1, 0.95, &s);
        snprintf(cell, sizeof cell, "%.4f (%d seed%s)", s.a, s.n, s.n == 1 ? "" : "s");
      }
      st_tbl_cell(t, j, "%s", cell);
    }
    st_tbl_end_row(t);
  }
  free(eb);
  free(g);
  fprintf(md, "## %s\n\n", title ? title : name);
  fprintf(md, "Per arm over the learning-rate grid (docs/studies/edge.md): lr_edge is the largest learning rate where "
              "half the seeds train, interpolated in log2 (censored at the grid's ends, never a grid value in its "
              "place); lr_edge_fit the logistic fit's edge with its profile-likelihood 95%% interval; lr_sens Wortsman "
              "et al.'s LR sensitivity (nats).\n\n");
  char ct[160];
  snprintf(ct, sizeof ct, "%.150s:", title ? title : name);
  st_tbl_emit(st, t, md, ct); /* frees t */
}

static void one_table(study *st, FILE *md, const char *name) {
  const char *ms = bget(st, "table", name, "metrics"), *title = bget(st, "table", name, "title");
  const char *split = bget(st, "table", name, "split"); /* outcome: a row for the trained runs, one for the failed */
  if (!ms) return;
  const int byout = split && !strcmp(split, "outcome");
  {
    char first[48] = "";
    sscanf(ms, " %47[^, ]", first);
    const st_metric *m0 = st_metric_find(first);
    if (m0 && m0->kind == ST_MK_EDGE) { edge_table(st, md, name, ms, title); return; }
  }
  grp *g;
  const int ng = groups(st, &g);
  int haslr = st->nlr > 1, haspt = 0;
  for (int i = 0; i < ng; i++) haspt |= g[i].first->point[0] != 0;
  tbl *t = st_tbl_new(1, "arm");
  if (haslr) snprintf(t->h[t->ncol++], sizeof t->h[0], "lr");
  if (haspt) snprintf(t->h[t->ncol++], sizeof t->h[0], "point");
  if (byout) snprintf(t->h[t->ncol++], sizeof t->h[0], "runs that");
  const int first = t->ncol;
  const st_metric *m[TBL_COLS];
  metric_columns(t, ms, m);
  for (int i = 0; i < ng; i++)
    for (int o = byout ? 0 : -1; o <= (byout ? 1 : -1); o++) {
      const srun *r = g[i].first;
      int c = 0;
      st_tbl_cell(t, c++, "%s", r->arm[0] ? r->arm : "(base)");
      if (haslr) {
        char lr[32];
        st_fmt_lr(r->lr, lr, sizeof lr);
        st_tbl_cell(t, c++, "%s", lr);
      }
      if (haspt) st_tbl_cell(t, c++, "%s", r->point[0] ? r->point + (r->point[0] == ' ') : "-");
      if (byout) st_tbl_cell(t, c++, "%s", o ? "failed" : "trained");
      for (int j = first; j < t->ncol; j++) metric_cell(st, t, j, m[j], r, o);
      st_tbl_end_row(t);
    }
  free(g);
  fprintf(md, "## %s\n\n", title ? title : name);
  fprintf(md, "Per arm over seeds: values as mean +- sd (failed runs counted apart, never averaged in), rates as "
              "k/n.%s\n\n",
          byout ? " Split by outcome: a row for the runs that trained, one for those that failed, each over its own "
                  "runs (a mechanism's numbers, read beside the failures they may explain; not a verdict)."
                : "");
  char ct[160];
  snprintf(ct, sizeof ct, "%.150s:", title ? title : name);
  st_tbl_emit(st, t, md, ct); /* frees t */
}

/* A run's line in a metric plot against x: its arm.X.group, or "" (one line) when it has none
 * (the group then is the run's name, study_runner.c) */
static const char *xgroup(const srun *r) { return strcmp(r->group, r->name) ? r->group : ""; }

/* A metric against the learning rate or the arms' x: per arm, the mean over
 * seeds with min-max bars; failed runs are left out of the mean and said. */
static void metric_plot(study *st, FILE *md, const char *name, const char *title) {
  const st_metric *m = st_metric_find(bget(st, "plot", name, "metric") ? bget(st, "plot", name, "metric") : "val_loss");
  const char *xs = bget(st, "plot", name, "x");
  const int bylr = !xs || !strcmp(xs, "lr");
  if (!m) return;
  grp *g;
  const int ng = groups(st, &g);
  series s[64];
  int ns = 0;
  char seen[64][64];
  /* one series per arm against the learning rate; against x, one per arm.X.group (arms of one
   * group share a line over their x values; arms without a group (theirs is the run's name),
   * one line named by the metric) */
  for (int i = 0; i < ng && ns < 64; i++) {
    const char *key = bylr ? g[i].first->arm : xgroup(g[i].first);
    int k = 0;
    while (k < ns && strcmp(seen[k], key)) k++;
    if (k < ns) continue;
    snprintf(seen[ns], sizeof seen[0], "%s", key);
    st_series_alloc(&s[ns], ng, bylr || key[0] ? key : m->name);
    st_series_bars(&s[ns], ng);
    s[ns].points = 1;
    for (int j = 0; j < ng; j++) {
      const srun *f = g[j].first;
      if (strcmp(bylr ? f->arm : xgroup(f), key)) continue;
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      int n = 0;
      for (int q = 0; q < st->nrun; q++) {
        const double x = same_group(&st->run[q], f) ? st_metric_run(m, st, &st->run[q]) : NAN;
        if (!isfinite(x)) continue;
        sum += x, n++;
        lo = fmin(lo, x), hi = fmax(hi, x);
      }
      const int at = s[ns].n++;
      s[ns].x[at] = bylr ? f->lr : f->x;
      s[ns].y[at] = n ? sum / n : NAN;
      s[ns].lo[at] = n ? lo : NAN;
      s[ns].hi[at] = n ? hi : NAN;
    }
    /* in x order (the groups come in run order): a line joins neighbours, never jumps back */
    for (int u = 1; u < s[ns].n; u++)
      for (int j = u; j > 0 && s[ns].x[j] < s[ns].x[j - 1]; j--) {
        double *col[] = {s[ns].x, s[ns].y, s[ns].lo, s[ns].hi};
        for (int q = 0; q < 4; q++) { const double t = col[q][j]; col[q][j] = col[q][j - 1], col[q][j - 1] = t; }
      }
    ns++;
  }
  char yl[160];
  snprintf(yl, sizeof yl, "%s: mean over seeds, bars min-max (failed runs left out)", m->name);
  const char *xl = bget(st, "plot", name, "xlabel");
  st_plot_draw(st, name, title, xl ? xl : bylr ? "learning rate" : "x", yl, bylr ? 10 : 0, 0, ns, s, NAN);
  st_series_free(s, ns);
  free(g);
  st_md_plot(st, md, name, title);
}

/* The x of an axis point for an edge plot: the axis key's value, or (x =
 * params) the parameter count of the arm's first run there. */
static double point_x(const study *st, const char *arm, const char *point, const char *xs) {
  double v = NAN;
  if (strcmp(xs, "params")) return st_point_value(point, xs, &v) ? NAN : v;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    if (!strcmp(r->arm, arm) && !strcmp(r->point, point) && !r->missing && r->res.nparams) return (double)r->res.nparams;
  }
  return v;
}

/* The stability edge across axis points (a size ladder): with ref, each
 * other arm's paired edge shift against ref in octaves with its bootstrap
 * interval (widened to the grid's resolution where the seeds cannot resolve
 * it); without, each arm's edge.  A censored value is drawn as the bound it
 * is (an open triangle pointing the way the value lies), never as a point;
 * undefined ones are counted, and the table beside the figure gives each. */
static void edge_plot(study *st, FILE *md, const char *name, const char *title) {
  const char *xs = bget(st, "plot", name, "x"), *ref = bget(st, "plot", name, "ref");
  if (!xs || !strcmp(xs, "lr") || !strcmp(xs, "x")) xs = "params";
  static const int PT[] = {7, 5, 13, 1, 2, 3, 4, 6, 12}; /* no triangles: they mark bounds */
  char arms[ST_MAXARM][64], pts[64][ST_NAMELEN];
  int na = 0, np = 0;
  for (int i = 0; i < st->nrun; i++) {
    const srun *r = &st->run[i];
    int k = 0;
    while (k < na && strcmp(arms[k], r->arm)) k++;
    if (k == na && na < ST_MAXARM && (!ref || strcmp(r->arm, ref))) snprintf(arms[na++], sizeof arms[0], "%s", r->arm);
    k = 0;
    while (k < np && strcmp(pts[k], r->point)) k++;
    if (k == np && np < 64) snprintf(pts[np++], sizeof pts[0], "%s", r->point);
  }
  st_edge_buf *ba = malloc(sizeof *ba), *bb = malloc(sizeof *bb);
  series *s = calloc(3 * (size_t)na + 1, sizeof *s);
  if (!ba || !bb || !s) { free(ba), free(bb), free(s); return; }
  tbl *t = st_tbl_new(1, "arm");
  snprintf(t->h[t->ncol++], sizeof t->h[0], "point");
  snprintf(t->h[t->ncol++], sizeof t->h[0], "%s", xs);
  snprintf(t->h[t->ncol++], sizeof t->h[0], ref ? "edge" : "edge (logistic fit)");
  if (ref) snprintf(t->h[t->ncol++], sizeof t->h[0], "shift vs %s (octaves)", ref), snprintf(t->h[t->ncol++], sizeof t->h[0], "seeds");
  int ns = 0, nundef = 0, drawable = 0, nbound = 0;
  double xmin = INFINITY, xmax = -INFINITY; /* every axis point's x, drawn or not: the zero line spans them */
  for (int a = 0; a < na; a++) {
    series *q = &s[ns], *u = &s[ns + 1], *d = &s[ns + 2];
    st_series_alloc(q, np, arms[a]);
    st_series_bars(q, np);
    st_series_alloc(u, np, arms[a]);
    st_series_alloc(d, np, arms[a]);
    q->points = 1;
    q->lt = u->lt = d->lt = a % 8 + 1, q->pt = PT[a % 9];
    u->mark = 1, d->mark = -1;
    for (int p = 0; p < np; p++) {
      st_edge_arm A, B;
      if (!st_edge_arm_of(st, arms[a], pts[p], ba, &A)) continue;
      const double x = point_x(st, arms[a], pts[p], xs);
      char cell[96], xc[32];
      snprintf(xc, sizeof xc, "%.6g", x);
      double y = NAN, lo = NAN, hi = NAN, bound = NAN;
      int dir = 0; /* a bound: +1 the value lies above it, -1 below */
      int c = 0;
      st_tbl_cell(t, c++, "%s", arms[a]);
      st_tbl_cell(t, c++, "%s", pts[p] + (pts[p][0] == ' '));
      st_tbl_cell(t, c++, "%s", xc);
      if (ref) {
        st_edge_shift sh;
        char err[160];
        if (!st_edge_arm_of(st, ref, pts[p], bb, &B) || st_edge_shift_paired(&A, &B, 1, 0.95, &sh, err, sizeof err)) {
          st_tbl_end_row(t); /* the row says no pairs: its cells stay empty */
          continue;
        }
        st_edge_fmt_np(&sh.a, cell, sizeof cell);
        st_tbl_cell(t, c++, "%s", cell);
        st_edge_fmt_shift(&sh, cell, sizeof cell);
        st_tbl_cell(t, c++, "%s", cell);
        st_tbl_cell(t, c++, "%d", sh.n);
        if (!sh.cens) y = sh.d, st_edge_shift_ci(&sh, &lo, &hi);
        else if (sh.cens == 2) nundef++;
        else bound = sh.d, dir = sh.cens;
      } else {
        st_edge_fit f;
        st_edge_np e;
        st_edge_logistic(&A, 0.95, &f);
        st_edge_nonparam(&A, &e);
        st_edge_fmt_fit(&f, cell, sizeof cell);
        st_tbl_cell(t, c++, "%s", cell);
        if (f.status == ST_EDGE_POINT && !f.outside) y = f.edge, lo = f.lo, hi = f.hi;
        else if (f.status == ST_EDGE_BRACKET && e.status == ST_EDGE_POINT && isfinite(f.hi)) y = e.lr, lo = f.lo, hi = f.hi;
        else if (e.status == ST_EDGE_ABOVE || e.status == ST_EDGE_BELOW) bound = e.lr, dir = e.status == ST_EDGE_ABOVE ? 1 : -1;
        else if (e.status == ST_EDGE_POINT) y = e.lr; /* no fit to give an interval */
        else nundef++;
      }
      st_tbl_end_row(t);
      if (!isfinite(x)) continue;
      xmin = fmin(xmin, x), xmax = fmax(xmax, x);
      const double xd = x * pow(2, 0.04 * (a - (na - 1) / 2.0)); /* a small dodge so the bars do not overlap */
      if (isfinite(y)) {
        const int at = q->n++;
        q->x[at] = xd, q->y[at] = y, q->lo[at] = isfinite(lo) ? lo : y, q->hi[at] = isfinite(hi) ? hi : y;
        drawable++;
      } else if (dir) {
        series *b = dir > 0 ? u : d;
        b->x[b->n] = xd, b->y[b->n++] = bound;
        drawable++, nbound++;
      }
    }
    ns += 3;
  }
  if (ref) { /* the zero line */
    st_series_alloc(&s[ns], 2, "no shift");
    if (isfinite(xmin)) {
      s[ns].x[0] = xmin, s[ns].x[1] = xmax, s[ns].y[0] = s[ns].y[1] = 0, s[ns].n = 2;
      s[ns].lt = 7; /* black */
      ns++;
    } else st_series_free(&s[ns], 1);
  }
  char xl[96], yl[160];
  snprintf(xl, sizeof xl, "%s%s", !strcmp(xs, "params") ? "parameters" : xs, " (log scale; arms dodged slightly)");
  snprintf(yl, sizeof yl, ref ? "edge shift vs %s (octaves of lr), 95%% CI" : "stability edge (lr), 95%% profile CI", ref);
  if (drawable) st_plot_draw(st, name, title, xl, yl, !strcmp(xs, "params") ? 11 : 2, ref ? 0 : 10, ns, s, NAN);
  st_series_free(s, ns);
  free(s), free(ba), free(bb);
  if (drawable) st_md_plot(st, md, name, title);
  else fprintf(md, "*%s*: not drawn: no arm has an estimate or a bound at any axis point.\n\n", title);
  fprintf(md, "%s Censored values (%d here) are drawn as bounds, open triangles pointing the way the value lies, never as "
              "points; undefined ones (%d here) are not drawn. The table gives each.\n\n",
          ref ? "Shift: log2 of the arm's edge (the largest learning rate where half the seeds train) minus the "
                "reference's, paired by seed; negative means the arm breaks at a lower learning rate. The interval is "
                "the bootstrap over seeds, widened to the grid's resolution where the seeds cannot resolve it."
              : "Edge: the logistic fit's 50% failure learning rate with its profile-likelihood interval; where the runs "
                "separate (no finite fit), the nonparametric edge with the separating bracket as its bar. A bound is the "
                "nonparametric edge's: the last judged learning rate (edge.md: unjudged cells).",
          nbound, nundef);
  char ct[160];
  snprintf(ct, sizeof ct, "%.150s:", title);
  st_tbl_emit(st, t, md, ct); /* frees t */
}

static void one_plot(study *st, FILE *md, const char *name) {
  const char *kind = bget(st, "plot", name, "kind"), *t = bget(st, "plot", name, "title");
  char title[200];
  snprintf(title, sizeof title, "%.190s", t ? t : name);
  if (!kind || !strcmp(kind, "loss")) {
    for (int li = 0; li < st->nlr && li < 4; li++) {
      char stem[96], tt[260], lrs[32];
      st_fmt_lr(st->lr[li], lrs, sizeof lrs);
      snprintf(stem, sizeof stem, st->nlr > 1 ? "%s-lr%d" : "%s", name, li + 1);
      snprintf(tt, sizeof tt, st->nlr > 1 ? "%s (lr %s)" : "%s", title, lrs);
      st_plot_seed_bands(st, md, stem, tt, li, st_smooth_for(st));
    }
  } else if (!strcmp(kind, "gap")) {
    const char *ref = bget(st, "plot", name, "ref");
    if (ref) st_plot_gap(st, md, name, title, ref, 0, 0, NULL, st_smooth_for(st));
  } else if (!strcmp(kind, "edge")) edge_plot(st, md, name, title);
  else metric_plot(st, md, name, title);
}

/* 1 when the file declares any table or plot block (they replace the
 * default loss curves). */
int st_blocks_report(study *st, FILE *md) {
  if (!st->file) return 0;
  char names[32][64];
  int nt = block_names(st, "table", names, 32);
  for (int i = 0; i < nt; i++) one_table(st, md, names[i]);
  int np = block_names(st, "plot", names, 32);
  if (np) fprintf(md, "## Figures\n\n");
  for (int i = 0; i < np; i++) one_plot(st, md, names[i]);
  return nt + np > 0;
}
