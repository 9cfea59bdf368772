/* study_util.c: formatting, JSON text and findings for the studies (study_int.h). */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ====================================================================== */
/* small helpers                                                           */
/* ====================================================================== */

double st_now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void st_safe_name(const char *in, char *out, size_t n) {
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
void st_fmt_lr(double lr, char *buf, size_t n) {
  char t[24];
  snprintf(t, sizeof t, "%.3g", lr);
  char *e = strchr(t, 'e');
  if (e) { /* 0.003 prints as 0.003 with %g; only tiny values reach here */
    int ex = atoi(e + 1);
    *e = 0;
    snprintf(buf, n, "%se%d", t, ex);
  } else snprintf(buf, n, "%s", t);
}

void st_fmt_num(double v, char *buf, size_t n) {
  if (isnan(v)) snprintf(buf, n, "nan");
  else if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "inf");
  else snprintf(buf, n, "%.4f", v);
}

void st_fmt_time(double s, char *buf, size_t n) {
  if (s < 60) snprintf(buf, n, "%.0fs", s);
  else if (s < 3600) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
  else snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void st_json_str(FILE *f, const char *s) {
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

void st_json_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

const char *st_verdict_name(int v) {
  switch (v) {
  case ST_V_REPRODUCED: return "reproduced";
  case ST_V_NOT_REPRODUCED: return "not reproduced";
  case ST_V_OBSERVATION: return "observation";
  case ST_V_NOT_TESTABLE: return "not testable here";
  default: return "inconclusive";
  }
}

static void finding_vadd(study *st, int verdict, const char *claim, const char *fmt, va_list ap) {
  if (st->nfind >= MAX_FIND) return;
  finding *f = &st->find[st->nfind++];
  f->verdict = verdict;
  snprintf(f->claim, sizeof f->claim, "%s", claim);
  vsnprintf(f->evidence, sizeof f->evidence, fmt, ap);
}

void st_verdict_add(study *st, int verdict, const char *claim, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  finding_vadd(st, verdict, claim, fmt, ap);
  va_end(ap);
}

void st_observe(study *st, const char *what, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  finding_vadd(st, ST_V_OBSERVATION, what, fmt, ap);
  va_end(ap);
}

/* Append printf text to a fixed buffer. */
void st_cat(char *buf, size_t n, const char *fmt, ...) {
  size_t l = strlen(buf);
  if (l + 1 >= n) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + l, n - l, fmt, ap);
  va_end(ap);
}

/* Axis points are " KEY=VALUE KEY=VALUE" (study_file.c).  1 when every
 * KEY=VALUE token of SEL (spaces or commas between) is one of POINT's. */
int st_point_match(const char *point, const char *sel) {
  char buf[ST_VALLEN];
  snprintf(buf, sizeof buf, "%s", sel);
  for (char *sv = NULL, *t = strtok_r(buf, ", ", &sv); t; t = strtok_r(NULL, ", ", &sv)) {
    const size_t l = strlen(t);
    const char *p = point;
    int found = 0;
    while (!found && (p = strstr(p, t))) {
      found = (p == point || p[-1] == ' ') && (p[l] == 0 || p[l] == ' ');
      p += l;
    }
    if (!found) return 0;
  }
  return 1;
}

/* The number an axis point gives KEY (0), or -1 when it has none. */
int st_point_value(const char *point, const char *key, double *v) {
  const size_t l = strlen(key);
  for (const char *p = point; (p = strstr(p, key)); p += l)
    if ((p == point || p[-1] == ' ') && p[l] == '=') {
      char *end;
      *v = strtod(p + l + 1, &end);
      if (end != p + l + 1 && (*end == 0 || *end == ' ')) return 0;
    }
  return -1;
}
