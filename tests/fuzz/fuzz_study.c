/* fuzz_study: study files (experiments/study_file.c: the key = value lines,
 * arm./axis./claim./size-prefixed keys, logspace/linspace axes, zip groups)
 * through study_main's --dry-run at one size (the input's length mod 3 picks
 * tiny, default or full, so mutations reach all three), which reads the file, checks
 * every line, crosses arms, axes, learning rates and seeds into runs and
 * builds every run's engine config, then prints the runs and stops.  The input
 * is an in-memory file opened by name.  Properties: a refused file gives an
 * error line and status 2 (a usage error, never 1: nothing was run or
 * written); an accepted one prints a runs line. */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"
#include "experiments/study.h"

static fuzz_file in, log_;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const study_size sizes[] = {STUDY_TINY, STUDY_DEFAULT, STUDY_FULL};
  fuzz_file_set(&in, data, size);
  /* one size per input (its length mod 3): three would cost three times as much */
  const study_size sz = sizes[size % 3];
  char err[EXMY_ERRLEN] = "";
  fuzz_file_set(&log_, "", 0);
  FILE *lf = fdopen(dup(log_.fd), "w");
  if (!lf) abort();
  study_opts o;
  study_opts_init(&o);
  o.size = sz;
  o.dry_run = 1;
  o.plots = 0;
  o.threads = 1;
  o.log = lf;
  const int rc = study_main(in.path, &o, err, sizeof err);
  fclose(lf);
  if (rc == 0) {
    size_t n;
    char *out = fuzz_file_get(&log_, &n);
    FUZZ_CHECK(strstr(out, " runs (") != NULL, "accepted study printed no runs line:\n%s", out);
    free(out);
  } else {
    FUZZ_CHECK(rc == 2 && err[0] && memchr(err, 0, sizeof err), "refused with status %d, error '%s'", rc, err);
  }
  return 0;
}
