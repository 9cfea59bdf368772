/* study_keys.c: what a read study file holds (study_file.c reads and
 * checks it): the value of a key in effect at a size, as text or a number,
 * whether a line is the one in effect, and the grammar of a value list (an
 * axis).  Below the reader, the GEMM experiment (study_gemm.c) and the
 * analyses, which all read keys here: calls go one way. */
#include "experiments/study_int.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s without its leading and trailing white space (cut in place). */
char *st_trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
  return s;
}

/* 1 when s is a finite number with nothing but white space after it (in *v). */
int st_parse_num(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  while (isspace((unsigned char)*end)) end++;
  return end != s && !*end && !errno && isfinite(*v);
}

/* The values of an axis: a comma list, logspace(a, b, n) or linspace(a, b, n).
 * Numbers from the ranges are printed %.6g (what a person would type). */
int st_axis_values(const char *text, char vals[][ST_VALLEN], int max, char *why, size_t whylen) {
  char buf[ST_VALLEN * 4];
  snprintf(buf, sizeof buf, "%s", text);
  char *t = st_trim(buf);
  const int logs = !strncmp(t, "logspace(", 9), lins = !strncmp(t, "linspace(", 9);
  if (logs || lins) {
    char *close = strrchr(t, ')');
    if (!close || close[1]) { snprintf(why, whylen, "'%s': expected %s(a, b, n)", text, logs ? "logspace" : "linspace"); return -1; }
    *close = 0;
    char *a[3];
    int na = 0;
    for (char *tok = strtok(t + 9, ","); tok && na < 4; tok = strtok(NULL, ",")) { if (na < 3) a[na] = tok; na++; }
    double x0, x1, n;
    if (na != 3 || !st_parse_num(a[0], &x0) || !st_parse_num(a[1], &x1) || !st_parse_num(a[2], &n) || n != floor(n) || n < 1 ||
        n > max || (logs && (x0 <= 0 || x1 <= 0))) {
      snprintf(why, whylen, "'%s': expected %s(a, b, n) with numbers a, b%s and a count n in 1..%d", text,
               logs ? "logspace" : "linspace", logs ? " > 0" : "", max);
      return -1;
    }
    for (int i = 0; i < (int)n; i++) {
      const double f = n > 1 ? (double)i / (n - 1) : 0;
      const double v = logs ? exp(log(x0) + f * (log(x1) - log(x0))) : x0 + f * (x1 - x0);
      snprintf(vals[i], ST_VALLEN, "%.6g", v);
    }
    return (int)n;
  }
  int n = 0;
  for (char *tok = strtok(t, ","); tok; tok = strtok(NULL, ",")) {
    char *v = st_trim(tok);
    if (!*v) { snprintf(why, whylen, "'%s': an empty value in the list", text); return -1; }
    if (n >= max) { snprintf(why, whylen, "'%s': more than %d values", text, max); return -1; }
    snprintf(vals[n++], ST_VALLEN, "%s", v);
  }
  if (!n) { snprintf(why, whylen, "empty list"); return -1; }
  return n;
}

/* The value of `key` at size `size` (a size line beats a plain one; the last
 * line wins), and its line number; NULL when absent. */
const char *st_file_get(const study_file *f, int size, const char *key, int *ln) {
  const sf_line *best = NULL;
  for (int i = 0; i < f->nline; i++) {
    const sf_line *L = &f->line[i];
    if (strcmp(L->key, key) || (L->size >= 0 && L->size != size)) continue;
    if (!best || L->size >= 0 || best->size < 0) best = L;
  }
  if (best && ln) *ln = best->ln;
  return best ? best->val : NULL;
}

/* A numeric key's value at `size` (strtod), or def when the file has none. */
double st_file_num(const study_file *f, int size, const char *key, double def) {
  const char *v = st_file_get(f, size, key, NULL);
  return v ? strtod(v, NULL) : def;
}

/* Whether line i is the one in effect for its key at this size. */
int st_file_effective(const study_file *f, int size, int i) {
  return f->eff[size * f->nline + i];
}
