/* fuzz_recipe: exmy_recipe_parse.  Property: an accepted recipe's
 * exmy_recipe_to_string parses back to equal settings, and that text is a
 * fixed point. */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"

static int same_recipe(const exmy_recipe *a, const exmy_recipe *b) {
  return a->kind == b->kind && a->block_rows == b->block_rows && a->block_cols == b->block_cols &&
         !memcmp(&a->epsilon, &b->epsilon, sizeof a->epsilon) && a->pow2 == b->pow2 && a->deepgemm == b->deepgemm &&
         a->history_len == b->history_len && a->most_recent == b->most_recent && a->margin == b->margin &&
         a->interval == b->interval && a->exact_product == b->exact_product;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_str(data, size);
  char err[EXMY_ERRLEN], err2[EXMY_ERRLEN], buf[512], buf2[512];
  exmy_recipe r, q;
  if (exmy_recipe_parse(s, &r, err, sizeof err) == 0) {
    int n = exmy_recipe_to_string(&r, buf, sizeof buf);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof buf, "to_string of '%s' returned %d", s, n);
    FUZZ_CHECK(exmy_recipe_parse(buf, &q, err2, sizeof err2) == 0, "'%s' -> '%s' does not parse: %s", s, buf, err2);
    FUZZ_CHECK(same_recipe(&r, &q), "'%s' -> '%s' parses to other settings", s, buf);
    exmy_recipe_to_string(&q, buf2, sizeof buf2);
    FUZZ_CHECK(!strcmp(buf, buf2), "'%s': canonical text '%s' is not a fixed point ('%s')", s, buf, buf2);
    if (exmy_recipe_has_state(&r)) { /* the state of an accepted recipe can be made */
      exmy_recipe_state st;
      if (r.history_len <= 100000 && exmy_recipe_state_new(&r, &st, err2, sizeof err2) == 0) exmy_recipe_state_free(&st);
    }
  } else {
    FUZZ_CHECK(err[0], "refused '%s' without an error", s);
  }
  free(s);
  return 0;
}
