/* study_hooks.c: the table of the C analyses a study file may name
 * (report = NAME).  Below the study file reader (study_file.c checks the
 * name) and the driver (study.c lists the studies and binds the analysis);
 * above the analyses it points to, which read the file through
 * study_keys.c, not through the reader: calls go one way. */
#include "experiments/study_int.h"

#include <string.h>

/* In the order `exmy study --list` shows the built-in studies (default first). */
typedef struct st_hook { const char *name; st_report_fn report; } st_hook;
static const st_hook HOOKS[] = {
  {"mantissa", st_report_mantissa},
  {"recipes", st_report_recipes},         {"fallback", st_report_fallback},
  {"calibration", st_report_calibration}, {"accumulation", st_report_accumulation},
  {"rounding", st_report_rounding},       {"lrsweep", st_report_lrsweep},
  {"rangeshift", st_report_rangeshift},   {"delayedlag", st_report_delayedlag},
  {"failsafe", st_report_failsafe},
  {"outliers", st_report_outliers},
};
#define NHOOK ((int)(sizeof HOOKS / sizeof HOOKS[0]))

st_report_fn st_report_hook(const char *name) {
  for (int i = 0; i < NHOOK; i++)
    if (!strcmp(HOOKS[i].name, name)) return HOOKS[i].report;
  return NULL;
}

const char *st_report_hook_name(int i) { return i >= 0 && i < NHOOK ? HOOKS[i].name : NULL; }

void st_report_hooks(char *buf, size_t n) {
  buf[0] = 0;
  for (int i = 0; i < NHOOK; i++) st_cat(buf, n, "%s%s", i ? ", " : "", HOOKS[i].name);
}
