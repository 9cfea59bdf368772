/* study_cfgtext.c: an engine config as text lines (xp_config_write's), for
 * a run's id (study_state.c), the report's setup (study_report.c) and the
 * dry run (study.c).  Below them all, and below the runner that calls the
 * state: it reads only the engine's config. */
#include "experiments/study_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The non-comment lines of xp_config_write(c), each allocated (st_free_lines). */
char **st_config_lines(const xp_config *c, int *n) {
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
void st_free_lines(char **l, int n) {
  for (int i = 0; i < n; i++) free(l[i]);
  free(l);
}
int st_skip_line(const char *l) {
  return !strncmp(l, "out_dir", 7) || !strncmp(l, "threads", 7) || !strncmp(l, "progress", 8);
}
int st_has_line(char **l, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (!strcmp(l[i], s)) return 1;
  return 0;
}
