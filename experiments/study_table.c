/* study_table.c: tables (markdown into the report, aligned text on the
 * console) and gnuplot plots of a study (study_int.h). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ====================================================================== */
/* tables: markdown into the report, aligned text on the console           */
/* ====================================================================== */


tbl *st_tbl_new(int ncol, ...) {
  tbl *t = calloc(1, sizeof *t);
  if (!t) { fprintf(stderr, "exmy: study: out of memory\n"); exit(1); }
  t->ncol = ncol;
  va_list ap;
  va_start(ap, ncol);
  for (int i = 0; i < ncol; i++) snprintf(t->h[i], sizeof t->h[i], "%s", va_arg(ap, const char *));
  va_end(ap);
  return t;
}
void st_tbl_cell(tbl *t, int col, const char *fmt, ...) {
  if (col >= t->ncol) return;
  if (t->nrow >= t->cap) { /* the row being written: grow, zeroing the new rows */
    const int cap = t->cap ? 2 * t->cap : 64;
    void *c = realloc(t->c, (size_t)cap * sizeof *t->c);
    if (!c) { fprintf(stderr, "exmy: study: out of memory\n"); exit(1); }
    t->c = c;
    memset(t->c + t->cap, 0, (size_t)(cap - t->cap) * sizeof *t->c);
    t->cap = cap;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t->c[t->nrow][col], sizeof t->c[0][0], fmt, ap);
  va_end(ap);
}

/* Cells 0-5 of a per-configuration row: name, final, sd, final against the
 * reference configuration (%), val, diverged. */
void st_agg_cells(tbl *t, const char *name, const agg *a, const agg *ref) {
  char c[32];
  st_tbl_cell(t, 0, "%s", name);
  st_fmt_num(a->final_mean, c, sizeof c);
  st_tbl_cell(t, 1, "%s", c);
  st_fmt_num(a->final_sd, c, sizeof c);
  st_tbl_cell(t, 2, "%s", c);
  if (isfinite(a->final_mean) && isfinite(ref->final_mean))
    st_tbl_cell(t, 3, "%+.2f%%", 100 * (a->final_mean - ref->final_mean) / ref->final_mean);
  else st_tbl_cell(t, 3, "-");
  st_fmt_num(a->val_mean, c, sizeof c);
  st_tbl_cell(t, 4, "%s", c);
  st_tbl_cell(t, 5, "%d/%d", a->ndiv, a->n);
}
void st_tbl_end_row(tbl *t) { if (t->nrow < t->cap) t->nrow++; } /* a row with no cell is not a row */
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
void st_tbl_emit(study *st, tbl *t, FILE *md, const char *console_title) {
  tbl_md(t, md);
  if (console_title) {
    fprintf(st->log, "\n%s\n", console_title);
    tbl_text(t, st->log);
  }
  free(t->c);
  free(t);
}

/* ====================================================================== */
/* plots                                                                   */
/* ====================================================================== */


void st_series_free(series *s, int n) {
  for (int i = 0; i < n; i++) { free(s[i].x); free(s[i].y); free(s[i].lo); free(s[i].hi); }
}

/* Give a series (allocated for n points) error bars lo..hi. */
void st_series_bars(series *s, int n) {
  s->lo = calloc((size_t)n + 1, sizeof *s->lo);
  s->hi = calloc((size_t)n + 1, sizeof *s->hi);
}

void st_series_alloc(series *s, int n, const char *title) {
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
  st_series_alloc(s, (int)(span / stride + 2), title);
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

int st_smooth_for(const study *st) {
  int w = (int)(st->steps / 40);
  return w < 1 ? 1 : w > 25 ? 25 : w;
}

/* Text inside a gnuplot single-quoted string ('' is a quote). */
void st_gp_quote(const char *in, char *out, size_t n) {
  size_t j = 0;
  for (const char *p = in; *p && j + 3 < n; p++) {
    if (*p == '\'') out[j++] = '\'';
    out[j++] = *p;
  }
  out[j] = 0;
}

/* Write DIR/stem.dat and DIR/stem.gp; draw DIR/stem.svg and DIR/stem.png. */
/* The Okabe-Ito palette (colour-blind safe), one colour per line type. */
void st_gp_palette(FILE *g) {
  static const char *const OI[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"};
  for (int i = 0; i < 8; i++) fprintf(g, "set linetype %d lc rgb '%s'\n", i + 1, OI[i]);
  fprintf(g, "set linetype cycle 8\n");
}

/* The terminals of a plot script: svg before the plot command, png after it
 * (a replot).  Both are skipped when the script runs with exmy_out set
 * (`--plot FILE`: the caller set the terminal and output). */
void st_gp_terminal(FILE *g, const char *stem, int png) {
  if (!png)
    fprintf(g, "if (!exists('exmy_out')) { set terminal svg size 860,480 dynamic font 'sans,11' background '#ffffff'; "
               "set output '%s.svg' }\n", stem);
  else
    fprintf(g, "if (!exists('exmy_out')) { set terminal pngcairo size 1000,560 font 'sans,10'; set output '%s.png'; "
               "replot }\n", stem);
}

void st_plot_draw(study *st, const char *stem, const char *title, const char *xl, const char *yl, int logx, int logy,
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
        fprintf(d, "%.9g %.9g", s[i].x[j], s[i].y[j]);
        if (s[i].lo && s[i].hi) fprintf(d, " %.9g %.9g", s[i].lo[j], s[i].hi[j]);
        fputc('\n', d);
        if (s[i].y[j] > ymax) ymax = s[i].y[j];
      } else fprintf(d, "%.9g NaN%s\n", s[i].x[j], s[i].lo && s[i].hi ? " NaN NaN" : "");
    }
    if (!s[i].n) fprintf(d, "NaN NaN%s\n", s[i].lo && s[i].hi ? " NaN NaN" : ""); /* gnuplot's index skips a block of comments only */
    fprintf(d, "\n\n");
  }
  fclose(d);
  snprintf(path, sizeof path, "%s/%s.gp", st->dir, stem);
  FILE *g = fopen(path, "w");
  if (!g) return;
  fprintf(g, "# exmy study %s: %s (gnuplot %s.gp, run in the results folder)\n", st->def->name, title, stem);
  char qt[400], qx[200], qy[200];
  st_gp_quote(title, qt, sizeof qt);
  st_gp_quote(xl, qx, sizeof qx);
  st_gp_quote(yl, qy, sizeof qy);
  fprintf(g, "set title '%s' noenhanced\nset xlabel '%s' noenhanced\nset ylabel '%s' noenhanced\n", qt, qx, qy);
  fprintf(g, "set key noenhanced outside right top\nset grid\nset datafile missing 'NaN'\n");
  st_gp_palette(g);
  /* logx: 10 for decades (learning rates), 11 decades labelled 10k, 100k, 1M (parameter counts), else 2 */
  if (logx) fprintf(g, "set logscale x %d\n", logx >= 10 ? 10 : 2);
  if (logx == 11) fprintf(g, "set format x '%%.0s%%c'\n");
  if (logy) fprintf(g, "set logscale y\nset format y '%%.0e'\n");
  if (isfinite(ycap) && ymax > ycap) fprintf(g, "set yrange [*:%.6g]\n", ycap);
  int dots = 0; /* points with bars (a metric against x or lr): padded, so no bar sits on the frame */
  for (int i = 0; i < ns; i++) dots |= s[i].points && s[i].lo && s[i].hi;
  if (dots) fprintf(g, "set offsets graph 0.04, graph 0.04, 0, 0\n");
  st_gp_terminal(g, stem, 0);
  fprintf(g, "plot ");
  int up = 0, down = 0, nel = 0, marks = 0;
  for (int i = 0; i < ns; i++) marks |= s[i].mark != 0;
  for (int i = 0; i < ns; i++) {
    char t[200];
    st_gp_quote(s[i].title, t, sizeof t);
    const int lt = s[i].lt ? s[i].lt : i + 1, pt = s[i].pt ? s[i].pt : 1 + i % 13;
    /* markers on every curve (a few per line, so curves are told apart without colour) */
    int pi = s[i].n / 8;
    if (s[i].mark && !s[i].n) continue; /* no bounds: nothing to draw (its data block stays, empty) */
    if (s[i].mark) { /* bounds: open triangles in the series' colour */
      fprintf(g, "%s'%s.dat' index %d using 1:2 with points pt %d ps 1.3 lw 1.4 lt %d notitle", nel++ ? ", \\\n     " : "", stem,
              i, s[i].mark > 0 ? 8 : 10, lt);
      up |= s[i].mark > 0, down |= s[i].mark < 0;
    } else if (s[i].lo && s[i].hi) /* a seed band as error bars */
      fprintf(g, "%s'%s.dat' index %d using 1:2:3:4 with yerrorlines pt %d ps 0.7 lw 1.6 lt %d %s '%s'",
              nel++ ? ", \\\n     " : "", stem, i, pt, lt, marks ? "notitle" : "title", marks ? "" : t);
    else
      fprintf(g, "%s'%s.dat' index %d using 1:2 with linespoints pt %d ps %s pi %d lw 1.6 lt %d %s '%s'",
              nel++ ? ", \\\n     " : "", stem, i, pt, s[i].points ? "0.7" : "0.5", s[i].points ? 1 : pi > 1 ? pi : 1, lt,
              marks ? "notitle" : "title", marks ? "" : t);
    /* with bounds in the plot a series may have no point at all, and gnuplot drops the key entry
     * of a series without points: the key comes from keyentry instead */
    if (marks && !s[i].mark)
      fprintf(g, ", \\\n     keyentry with linespoints pt %d ps 0.7 lw 1.6 lt %d title '%s'", pt, lt, t);
  }
  if (up) fprintf(g, ", \\\n     keyentry with points pt 8 ps 1.3 lc rgb '#333333' title 'above the triangle (censored)'");
  if (down) fprintf(g, ", \\\n     keyentry with points pt 10 ps 1.3 lc rgb '#333333' title 'below the triangle (censored)'");
  fputc('\n', g);
  st_gp_terminal(g, stem, 1);
  fclose(g);
  if (!ns) {
    if (st->nplot < MAX_PLOTS) snprintf(st->plot[st->nplot++], sizeof st->plot[0], "%s", stem);
    return;
  }
  st_gnuplot_run(st, stem);
}

/* Record the plot STEM and draw it: gnuplot STEM.gp in the results folder. */
void st_gnuplot_run(study *st, const char *stem) {
  if (st->nplot < MAX_PLOTS) snprintf(st->plot[st->nplot++], sizeof st->plot[0], "%s", stem);
  if (!st->gnuplot || strchr(st->dir, '\'')) return;
  char cmd[XP_PATH + 200];
  snprintf(cmd, sizeof cmd, "cd '%s' && gnuplot '%s.gp' >/dev/null 2>&1", st->dir, stem);
  if (system(cmd) != 0) fprintf(st->log, "exmy: study: gnuplot failed on %s/%s.gp\n", st->dir, stem);
}

void st_md_plot(const study *st, FILE *md, const char *stem, const char *caption) {
  char path[XP_PATH + 80];
  snprintf(path, sizeof path, "%s/%s.svg", st->dir, stem);
  struct stat sb;
  if (stat(path, &sb) == 0) fprintf(md, "![%s](%s.svg)\n\n*%s* (PNG: `%s.png`; data: `%s.dat`)\n\n", caption, stem, caption,
                                    stem, stem);
  else fprintf(md, "*%s*: not drawn (gnuplot not found or --no-plots); data in `%s.dat`, script `%s.gp`.\n\n", caption,
               stem, stem);
}

/* Loss curves of the runs matching (lri, seedi) (-1: any), one per run. */
void st_plot_losses(study *st, FILE *md, const char *stem, const char *title, int lri, int seedi,
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
  st_plot_draw(st, stem, title, xl, yl, 0, 0, ns, s, cap);
  st_series_free(s, ns);
  st_md_plot(st, md, stem, title);
}

/* The loss of each picked run minus the reference run's (same lr and seed),
 * trailing means over `smooth` steps: small precision effects show here. */
void st_plot_gap(study *st, FILE *md, const char *stem, const char *title, const char *ref, int lri, int seedi,
                     int (*pick)(const srun *r), int smooth) {
  const srun *rr = st_find_run(st, ref, lri, seedi);
  if (!rr || rr->failed) return;
  series s[64];
  int ns = 0;
  for (int i = 0; i < st->nrun && ns < 64; i++) {
    const srun *r = &st->run[i];
    if (r == rr || r->lri != lri || r->seedi != seedi || r->failed || (pick && !pick(r))) continue;
    series a, b;
    loss_series(r, smooth, 0, 0, r->name, &a);
    loss_series(rr, smooth, 0, 0, ref, &b);
    st_series_alloc(&s[ns], a.n + 1, r->name);
    for (int j = 0; j < a.n && j < b.n; j++) {
      s[ns].x[j] = a.x[j];
      s[ns].y[j] = a.y[j] - b.y[j];
    }
    s[ns].n = a.n < b.n ? a.n : b.n;
    st_series_free(&a, 1);
    st_series_free(&b, 1);
    ns++;
  }
  char yl[128];
  snprintf(yl, sizeof yl, "loss - %s's loss (trailing mean, %d steps)", ref, smooth);
  st_plot_draw(st, stem, title, "step", yl, 0, 0, ns, s, NAN);
  st_series_free(s, ns);
  st_md_plot(st, md, stem, title);
}

/* Seed bands: per configuration name at learning rate lri, the mean over
 * seeds of the smoothed loss with a band from the lowest to the highest seed
 * (runs that failed are left out; a diverged run's non-finite steps too). */
void st_plot_seed_bands(study *st, FILE *md, const char *stem, const char *title, int lri, int smooth) {
  char path[XP_PATH + 80];
  snprintf(path, sizeof path, "%s/%s.dat", st->dir, stem);
  FILE *d = fopen(path, "w");
  if (!d) return;
  char names[64][ST_NAMELEN];
  int nn = 0;
  double cap = -INFINITY;
  for (int i = 0; i < st->nrun && nn < 64; i++) {
    const srun *r = &st->run[i];
    if (r->lri != lri || r->failed) continue;
    int k = 0;
    while (k < nn && strcmp(names[k], r->name)) k++;
    if (k < nn) continue;
    snprintf(names[nn++], sizeof names[0], "%s", r->name);
    series s[64];
    int ns = 0;
    for (int j = 0; j < st->nrun && ns < 64; j++) {
      const srun *q = &st->run[j];
      if (q->lri != lri || q->failed || strcmp(q->name, r->name)) continue;
      loss_series(q, smooth, 0, 0, q->label, &s[ns++]);
      if (q->res.first_loss * 1.15 > cap) cap = q->res.first_loss * 1.15;
    }
    fprintf(d, "# %s: step mean min max over %d seeds\n", r->name, ns);
    for (int p = 0; ns && p < s[0].n; p++) {
      double sum = 0, lo = INFINITY, hi = -INFINITY;
      int c = 0;
      for (int q = 0; q < ns; q++)
        if (p < s[q].n && isfinite(s[q].y[p])) {
          sum += s[q].y[p];
          c++;
          if (s[q].y[p] < lo) lo = s[q].y[p];
          if (s[q].y[p] > hi) hi = s[q].y[p];
        }
      if (c) fprintf(d, "%.9g %.9g %.9g %.9g\n", s[0].x[p], sum / c, lo, hi);
      else fprintf(d, "%.9g NaN NaN NaN\n", s[0].x[p]);
    }
    fprintf(d, "\n\n");
    st_series_free(s, ns);
  }
  fclose(d);
  if (!nn) return;
  snprintf(path, sizeof path, "%s/%s.gp", st->dir, stem);
  FILE *g = fopen(path, "w");
  if (!g) return;
  char qt[400];
  st_gp_quote(title, qt, sizeof qt);
  fprintf(g, "# exmy study %s: %s (gnuplot %s.gp, run in the results folder)\n", st->def->name, title, stem);
  fprintf(g, "set title '%s' noenhanced\nset xlabel 'step'\n", qt);
  if (smooth > 1) fprintf(g, "set ylabel 'training loss (mean of the last %d steps): mean over seeds, band min-max'\n", smooth);
  else fprintf(g, "set ylabel 'training loss: mean over seeds, band min-max'\n");
  fprintf(g, "set key noenhanced outside right top\nset grid\nset datafile missing 'NaN'\n");
  st_gp_palette(g);
  if (isfinite(cap)) fprintf(g, "set yrange [*:%.6g]\n", cap);
  st_gp_terminal(g, stem, 0);
  fprintf(g, "plot ");
  for (int k = 0; k < nn; k++) {
    char t[200];
    st_gp_quote(names[k], t, sizeof t);
    fprintf(g, "%s'%s.dat' index %d using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lc %d notitle, \\\n"
               "     '%s.dat' index %d using 1:2 with linespoints pt %d ps 0.5 pi 40 lw 1.6 lc %d title '%s'",
            k ? ", \\\n     " : "", stem, k, 1 + k % 8, stem, k, 1 + k % 13, 1 + k % 8, t);
  }
  fputc('\n', g);
  st_gp_terminal(g, stem, 1);
  fclose(g);
  st_gnuplot_run(st, stem);
  st_md_plot(st, md, stem, title);
}
