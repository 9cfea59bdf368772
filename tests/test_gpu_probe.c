/* test_gpu_probe.c: the tensor-core probe's inference (kernels/probe.c) run
 * against the CPU `tc` model (exmy_gemm through exmy_probe_model_dot) with
 * known parameters: every FP8 preset and random parameter sets, with
 * e4m3 x e4m3 and mixed operands.  The probe must recover g, f, the
 * alignment and normalization rounding, the output fraction bits and the
 * promotion interval exactly (or say the interval cannot be seen, when
 * f > 22), find products exact, NaN propagated, the nominal alignment
 * exponent, and then agree with the model on random dot products.  An fp32
 * engine must not pass for a tensor core.  This is the CPU evidence that the
 * probe reads hardware right. */
#include "tests/testutil.h"

static int lg(int g) { int r = 0; while ((2 << r) <= g - 1) r++; return r; } /* floor(log2(g-1)) */

/* want_match: the presets exmy_probe_match must name ("" for none). */
static void run_one(const char *text, const exmy_format *fa, const exmy_format *fb, const char *want_match,
                    char *nearest_out, char *diff_out) {
  exmy_accum acc;
  char err[EXMY_ERRLEN];
  if (exmy_accum_parse(text, &acc, err, sizeof err)) {
    CHECK(0, "model '%s' does not parse: %s", text, err);
    return;
  }
  exmy_probe_engine eng = {"cpu-model", exmy_probe_model_dot, &acc, 16384};
  exmy_probe_result r;
  FILE *log = getenv("EXMY_PROBE_LOG") ? stdout : NULL;
  if (exmy_probe_run(&eng, fa, fb, log, &r, err, sizeof err)) {
    CHECK(0, "%s: probe failed: %s", text, err);
    return;
  }
  int promote_visible = acc.tc_frac <= 22;
  size_t want_promote = promote_visible ? acc.chunk : 0;
  /* a promotion interval below g cuts every group short: g = promote then
   * gives the same bits, and that is what the probe sees */
  int want_g = acc.chunk && acc.chunk < (size_t)acc.tc_group ? (int)acc.chunk : acc.tc_group;
  CHECK(r.complete, "%s (%s x %s): incomplete: %s", text, fa->name, fb->name, r.notes);
  CHECK(r.g == want_g && r.f == acc.tc_frac && r.align_rne == acc.tc_align_rne && r.out == acc.tc_out_frac &&
            r.norm_rne == acc.tc_norm_rne && r.promote == want_promote,
        "%s (%s x %s): inferred g=%d f=%d align=%d out=%d norm=%d promote=%zu, want g=%d f=%d align=%d out=%d norm=%d "
        "promote=%zu (%s)",
        text, fa->name, fb->name, r.g, r.f, r.align_rne, r.out, r.norm_rne, r.promote, want_g, acc.tc_frac,
        acc.tc_align_rne, acc.tc_out_frac, acc.tc_norm_rne, want_promote, r.notes);
  CHECK(r.promote_seen == (promote_visible ? (acc.chunk ? 1 : 0) : -1), "%s: promote_seen %d", text, r.promote_seen);
  CHECK(r.products_exact && r.subnormals_exact && r.pairs > 1000, "%s: products %ld, %ld inexact", text, r.pairs,
        r.pairs_inexact);
  CHECK(r.nan_seen && r.nominal_exp == 1 && r.neg_toward_zero == 1, "%s: nan %d nominal %d toward zero %d", text,
        r.nan_seen, r.nominal_exp, r.neg_toward_zero);
  CHECK(r.confirm_dots == 64 && r.confirm_mismatches == 0, "%s: confirm %ld/%ld differ", text, r.confirm_mismatches,
        r.confirm_dots);
  /* the text it prints reads back as the same model */
  exmy_accum back;
  CHECK(r.complete && exmy_accum_parse(r.accum, &back, err, sizeof err) == 0 && back.tc_group == want_g &&
            back.tc_frac == acc.tc_frac && back.chunk == want_promote,
        "%s: printed '%s'", text, r.accum);
  char match[256], nearest[64], diff[256];
  int n = exmy_probe_match(&r, match, sizeof match, nearest, sizeof nearest, diff, sizeof diff);
  CHECK(!strcmp(match, want_match) && n == (want_match[0] != 0) && (n ? !diff[0] : diff[0] != 0),
        "%s (%s x %s): matched %d '%s' (nearest %s: %s), want '%s'", text, fa->name, fb->name, n, match, nearest,
        diff, want_match);
  if (nearest_out) snprintf(nearest_out, 64, "%s", nearest);
  if (diff_out) snprintf(diff_out, 256, "%s", diff);
  /* the same result with one confirming dot product different is no preset */
  exmy_probe_result bad = r;
  bad.confirm_mismatches = 1;
  CHECK(exmy_probe_match(&bad, match, sizeof match, nearest, sizeof nearest, diff, sizeof diff) == 0 && !match[0] &&
            (!want_match[0] || strstr(diff, "confirm mismatches 1, preset 0")),
        "%s: a confirmation mismatch still matched '%s' (%s)", text, match, diff);
}

int main(void) {
  uint64_t st = tu_seed(31);
  exmy_format e4 = tu_format("e4m3fn"), e5 = tu_format("e5m2");
  const char *presets[] = {"tc:hopper", "tc:hopper-fastacc", "tc:ada", "tc:ada-fastacc", "tc:blackwell",
                           "tc:hopper-bf16", "tc:ampere-bf16"};
  for (int i = 0; i < 7; i++) run_one(presets[i], &e4, &e4, presets[i], NULL, NULL);
  run_one("tc:hopper", &e4, &e5, "tc:hopper", NULL, NULL);
  run_one("tc:ada-fastacc", &e5, &e4, "tc:ada-fastacc", NULL, NULL);
  run_one("tc:hopper", &e5, &e5, "tc:hopper", NULL, NULL);
  /* every preset is in the list above, and the list has no other names */
  const size_t np = exmy_accum_tc_preset_count();
  CHECK(np == 7 && exmy_accum_tc_preset_get(6) && !exmy_accum_tc_preset_get(7), "%zu tensor-core presets, the test knows 7", np);
  /* one parameter off a preset: no preset, the nearest named with the difference */
  char nearest[64], diff[256];
  run_one("tc:hopper,f=14", &e4, &e4, "", nearest, diff);
  CHECK(!strcmp(nearest, "tc:hopper") && !strcmp(diff, "f 14, preset 13"), "tc:hopper,f=14: nearest %s: %s", nearest,
        diff);
  for (int i = 0; i < 24; i++) {
    int gs[] = {4, 8, 16, 32, 64};
    int g = gs[tu_next(&st) % 5];
    int f = 10 + (int)(tu_next(&st) % 18); /* 10..27 */
    int omax = f - 2 + lg(g);
    if (omax > 23) omax = 23;
    int out = 8 + (int)(tu_next(&st) % (unsigned)(omax - 7));
    size_t promote = 0;
    if (f <= 22 && tu_next(&st) % 3) {
      size_t ps[] = {32, 64, 96, 128, 256};
      promote = ps[tu_next(&st) % 5];
    }
    char text[160];
    snprintf(text, sizeof text, "tc:g=%d,f=%d,align=%s,out=%d,norm=%s,promote=%zu", g, f,
             tu_next(&st) % 2 ? "rne" : "trunc", out, tu_next(&st) % 2 ? "rne" : "trunc", promote);
    run_one(text, i % 4 == 3 ? &e5 : &e4, &e4, "", NULL, NULL);
  }
  /* fp32 and exact accumulation are no tensor core */
  const char *plain[] = {"fp32", "exact"};
  for (int i = 0; i < 2; i++) {
    exmy_accum acc;
    char err[EXMY_ERRLEN];
    exmy_probe_result r;
    if (exmy_accum_parse(plain[i], &acc, err, sizeof err)) { CHECK(0, "%s: %s", plain[i], err); continue; }
    exmy_probe_engine eng = {plain[i], exmy_probe_model_dot, &acc, 16384};
    CHECK(exmy_probe_run(&eng, &e4, &e4, NULL, &r, err, sizeof err) == 0, "%s: %s", plain[i], err);
    CHECK(!r.complete && r.notes[0], "%s passed for a tensor core: %s", plain[i], r.accum);
    char match[256];
    CHECK(exmy_probe_match(&r, match, sizeof match, nearest, sizeof nearest, diff, sizeof diff) == 0 && !match[0] &&
              nearest[0] && diff[0], "%s matched preset '%s'", plain[i], match);
  }
  return tu_finish("test_gpu_probe");
}
