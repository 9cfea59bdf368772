/* fuzz_format: exmy_format_parse (table names and long forms).  Property: an
 * accepted format's exmy_format_to_string parses back to the same format
 * (every field, derived ones and the name included). */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"

static int same_format(const exmy_format *a, const exmy_format *b) {
  return a->ebits == b->ebits && a->mbits == b->mbits && a->bias == b->bias && a->is_signed == b->is_signed &&
         a->has_zero == b->has_zero && a->inf == b->inf && a->nan == b->nan && a->bits == b->bits &&
         a->emin == b->emin && a->emax == b->emax && a->mag_mask == b->mag_mask && a->sign_mask == b->sign_mask &&
         a->max_mag == b->max_mag && a->inf_mag == b->inf_mag && a->nan_code == b->nan_code &&
         !strcmp(a->name, b->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_str(data, size);
  char err[EXMY_ERRLEN], buf[256], err2[EXMY_ERRLEN];
  exmy_format f, g;
  memset(&f, 0, sizeof f);
  if (exmy_format_parse(s, &f, err, sizeof err) == 0) {
    FUZZ_CHECK(memchr(f.name, 0, sizeof f.name) != NULL, "name not terminated");
    int n = exmy_format_to_string(&f, buf, sizeof buf);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof buf, "to_string of '%s' returned %d", s, n);
    FUZZ_CHECK(exmy_format_parse(buf, &g, err2, sizeof err2) == 0, "'%s' -> '%s' does not parse: %s", s, buf, err2);
    FUZZ_CHECK(same_format(&f, &g), "'%s' -> '%s' parses to another format (%s vs %s)", s, buf, f.name, g.name);
    /* the name parses back to the format */
    FUZZ_CHECK(exmy_format_parse(f.name, &g, err2, sizeof err2) == 0 && same_format(&f, &g),
               "'%s': its name '%s' does not parse back to it", s, f.name);
  } else {
    FUZZ_CHECK(err[0] && memchr(err, 0, sizeof err), "refused '%s' without an error", s);
  }
  free(s);
  return 0;
}
