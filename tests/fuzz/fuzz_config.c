/* fuzz_config: the training engine's config reader (experiments/config.c:
 * xp_config_load on a key = value file, with the prec/attn/layer.NAME,
 * recipe and accum grammars behind it).  The input is written to an
 * in-memory file that xp_config_load opens by name.  Property: an accepted
 * config, written with xp_config_write, loads again, and writing that gives
 * the same text (config.txt of a run reproduces the run). */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"
#include "experiments/xp.h"

static fuzz_file in, w1;

static char *write_config(const xp_config *c, size_t *len) {
  fuzz_file_set(&w1, "", 0);
  FILE *f = fdopen(dup(w1.fd), "w");
  if (!f) abort();
  xp_config_write(c, f);
  fclose(f);
  return fuzz_file_get(&w1, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static xp_config c, d;
  char err[EXMY_ERRLEN];
  xp_config_default(&c);
  fuzz_file_set(&in, data, size);
  if (xp_config_load(&c, in.path, err, sizeof err) == 0) {
    size_t n1, n2;
    char *t1 = write_config(&c, &n1);
    xp_config_default(&d);
    fuzz_file_set(&in, t1, n1);
    FUZZ_CHECK(xp_config_load(&d, in.path, err, sizeof err) == 0, "written config does not load: %s\n%s", err, t1);
    char *t2 = write_config(&d, &n2);
    FUZZ_CHECK(n1 == n2 && !memcmp(t1, t2, n1), "written config loads to another one:\n%s\n----\n%s", t1, t2);
    free(t1);
    free(t2);
  } else {
    FUZZ_CHECK(err[0], "refused without an error");
  }
  return 0;
}
