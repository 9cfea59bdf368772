/* fuzz_accum: exmy_accum_parse (accumulation models, nested chunk=,inner=).
 * Property: an accepted model's exmy_accum_to_string parses back to the
 * same model and is a fixed point. */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"

/* The datapath row operands ops run ("" in a slot: the slot before). */
static const char *row_of(const exmy_accum *a, int ops) {
  for (int o = ops; o >= 0; o--)
    if (a->tc_path[o][0]) return a->tc_path[o];
  return "";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = fuzz_str(data, size);
  char err[EXMY_ERRLEN], err2[EXMY_ERRLEN], buf[512], buf2[512];
  exmy_accum a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  if (exmy_accum_parse(s, &a, err, sizeof err) == 0) {
    int n = exmy_accum_to_string(&a, buf, sizeof buf);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof buf, "to_string of '%s' returned %d", s, n);
    FUZZ_CHECK(exmy_accum_parse(buf, &b, err2, sizeof err2) == 0, "'%s' -> '%s' does not parse: %s", s, buf, err2);
    int n2 = exmy_accum_to_string(&b, buf2, sizeof buf2);
    FUZZ_CHECK(n2 == n && !strcmp(buf, buf2), "'%s' -> '%s' -> '%s': not a fixed point", s, buf, buf2);
    FUZZ_CHECK(a.kind == b.kind && a.chunk == b.chunk && a.tc_group == b.tc_group && a.tc_frac == b.tc_frac &&
                   a.tc_align_rne == b.tc_align_rne && a.tc_out_frac == b.tc_out_frac &&
                   a.tc_norm_rne == b.tc_norm_rne && a.tc_zero == b.tc_zero && !strcmp(row_of(&a, 0), row_of(&b, 0)) &&
                   !strcmp(row_of(&a, 1), row_of(&b, 1)) && !strcmp(row_of(&a, 2), row_of(&b, 2)) &&
                   a.acc_fmt.ebits == b.acc_fmt.ebits &&
                   a.acc_fmt.mbits == b.acc_fmt.mbits && a.acc_fmt.bias == b.acc_fmt.bias &&
                   a.acc_rnd.mode == b.acc_rnd.mode && a.acc_rnd.sat == b.acc_rnd.sat &&
                   a.acc_fmt.inf == b.acc_fmt.inf && a.acc_fmt.nan == b.acc_fmt.nan &&
                   a.acc_fmt.is_signed == b.acc_fmt.is_signed && a.acc_rnd.ftz == b.acc_rnd.ftz &&
                   a.acc_rnd.daz == b.acc_rnd.daz &&
                   /* the stochastic-rounding key matters (and is written) only for sr */
                   (a.acc_rnd.mode != EXMY_SR || (a.acc_rnd.seed == b.acc_rnd.seed &&
                                                  a.acc_rnd.stream == b.acc_rnd.stream &&
                                                  a.acc_rnd.sr_bits == b.acc_rnd.sr_bits)),
               "'%s' -> '%s' parses to another model", s, buf);
  } else {
    FUZZ_CHECK(err[0], "refused '%s' without an error", s);
  }
  free(s);
  return 0;
}
