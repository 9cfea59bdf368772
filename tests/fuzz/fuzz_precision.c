/* fuzz_precision: the training engine's precision grammar
 * (experiments/precision.c: PRESET[;key=value...] for prec, attn and
 * layer.NAME, with fmt/round/sat/recipe/accum refinements).  Input: the
 * first line is the key (empty: prec), the second the value, further lines
 * more key/value pairs.  Property: accepted settings, written as config lines
 * (xp_config_write_prec), load into a fresh config with the same precision
 * key (xp_prec_key, what checkpoints compare) - for values a config line can
 * hold (no '#', no surrounding blanks). */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"
#include "experiments/xp.h"
#include "experiments/precision.h"

#include <ctype.h>

static fuzz_file w;

static int writable(const char *k, const char *v) {
  size_t n = strlen(v), m = strlen(k);
  if (strchr(v, '#') || strchr(k, '#') || strchr(k, '=') || !n || !m) return 0;
  if (isspace((unsigned char)v[0]) || isspace((unsigned char)v[n - 1])) return 0;
  if (isspace((unsigned char)k[0]) || isspace((unsigned char)k[m - 1])) return 0;
  for (const char *p = k; *p; p++) if (*p == '\r' || *p == '\v' || *p == '\f') return 0;
  for (const char *p = v; *p; p++) if (*p == '\r' || *p == '\v' || *p == '\f') return 0;
  return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static xp_config c, d;
  char err[EXMY_ERRLEN];
  char *s = fuzz_str(data, size), *save = NULL;
  xp_config_default(&c);
  int ok = 1, any = 0, all_writable = 1;
  char *line = s;
  for (int i = 0; i < 8 && line; i++) {
    char *key = line, *value = strchr(key, '\n');
    if (!value) break;
    *value++ = 0;
    line = strchr(value, '\n');
    if (line) *line++ = 0;
    if (!*key) key = "prec";
    if (strcmp(key, "prec") && strcmp(key, "attn") && strncmp(key, "layer.", 6)) key = "prec";
    all_writable &= writable(key, value);
    if (xp_config_set(&c, key, value, err, sizeof err)) { FUZZ_CHECK(err[0], "refused without an error"); ok = 0; break; }
    any = 1;
  }
  (void)save;
  if (ok && any && all_writable) {
    fuzz_file_set(&w, "", 0);
    FILE *f = fdopen(dup(w.fd), "w");
    xp_config_write_prec(&c, f);
    fclose(f);
    xp_config_default(&d);
    FUZZ_CHECK(xp_config_load(&d, w.path, err, sizeof err) == 0, "written precision does not load: %s", err);
    char k1[4096], k2[4096];
    xp_prec_key(&c, k1, sizeof k1);
    xp_prec_key(&d, k2, sizeof k2);
    FUZZ_CHECK(!strcmp(k1, k2), "precision key changed: '%s' vs '%s'", k1, k2);
    for (int t = 0; t < XP_NKIND; t++)
      FUZZ_CHECK(!strcmp(c.prec.t[t].fmt.name, d.prec.t[t].fmt.name) && !strcmp(c.prec.t[t].recipe, d.prec.t[t].recipe) &&
                     c.prec.t[t].rnd.mode == d.prec.t[t].rnd.mode && c.prec.t[t].rnd.sat == d.prec.t[t].rnd.sat,
                 "reloaded precision differs (%s)", k1);
  }
  free(s);
  return 0;
}
