/* gemm.c: `exmy gemm`, the emulated GEMM with a chosen accumulation model,
 * and --compare, the error of several models against exact. */
#include "cli/cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *gemm_usage =
  "usage: exmy gemm --a A.npy --b B.npy [--c C.npy] [options] (--out D.npy | --compare M1,M2,...)\n"
  "D = scale_d * (alpha * op(A) op(B) + beta * scale_c * C), A and B float32/float64 tensors\n"
  "quantized with a scaling recipe, products accumulated with a model (docs/gemm.md).\n"
  "  --format-a F, --format-b F   element formats (default e4m3fn; --format F sets both)\n"
  "  --scaling R                  recipe of both (default current); --scaling-a, --scaling-b\n"
  "                               none, current[:row|:col], delayed, block:1x128, block:128x128,\n"
  "                               mx (A) with mx:col (B), nvfp4 (see exmy quantize-tensor --help)\n"
  "  --trans-a, --trans-b         A is stored k x m / B is stored n x k\n"
  "  --accum MODEL                exact, fp32 (default), fp32:pairwise, acc=FORMAT[,round=MODE],\n"
  "                               chunk=N,inner=MODEL, tc (= tc:hopper), tc:PRESET[,g=,f=,align=,\n"
  "                               out=,norm=,promote=,zero=]; presets hopper, hopper-fastacc, ada,\n"
  "                               ada-fastacc, hopper-bf16, ampere-bf16, blackwell; path=,\n"
  "                               block-path=, fp4-path= name datapath rows (exmy mma --datapaths)\n"
  "  --out D.npy                  D: float32 for f32, else codes (uint8/16/32/64)\n"
  "  --out-format F               D's format (default f32)\n"
  "  --out-round MODE, --out-saturate[=finite|propagate|none]   D's cast (default rne, none)\n"
  "  --alpha X, --beta X          (beta defaults to 1 with --c, else 0)\n"
  "  --scale-c X, --scale-d X     cuBLASLt's scaleC and scaleD (default 1)\n"
  "  --round MODE, --saturate, --ftz, --daz, --seed, --stream, --sr-bits\n"
  "                               the element casts of A and B (default rne, saturating)\n"
  "  --compare M1,M2,...          per model: error of D against exact (max ulp in D's format:\n"
  "                               codes apart, mean relative error, max |D - exact| over\n"
  "                               max |exact|, % of outputs that differ)\n"
  "  --threads N                  OpenMP threads (default all); results do not depend on it\n";

static int model_head(const char *piece, size_t len) {
  static const char *const heads[] = {"exact", "fp32", "acc=", "chunk=", "tc"};
  for (size_t i = 0; i < sizeof heads / sizeof heads[0]; i++) {
    const size_t k = strlen(heads[i]);
    if (len >= k && !strncmp(piece, heads[i], k)) return 1;
  }
  return 0;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float parse_float(const char *opt, const char *v) {
  char *end;
  const float x = strtof(v, &end);
  if (!*v || *end || !isfinite(x)) cli_die("gemm: %s: bad number '%s'", opt, v);
  return x;
}

/* Position of a code in value order (finite codes: sign-magnitude order). */
static double code_ordinal(const exmy_format *f, uint64_t code) {
  const uint64_t mag = code & f->mag_mask;
  return (f->is_signed && (code & f->sign_mask)) ? -(double)mag : (double)mag;
}

static void run_model(exmy_gemm_args *g, const exmy_accum *acc, const char *text, void *d, float *amax_d,
                      double *secs) {
  char err[EXMY_ERRLEN];
  g->accum = acc;
  const double t0 = now();
  if (exmy_gemm(g, d, amax_d, NULL, err, sizeof err)) cli_die("gemm: %s: %s", text, err);
  *secs = now() - t0;
}

int cmd_gemm(int argc, char **argv) {
  const char *pa = NULL, *pb = NULL, *pc = NULL, *out = NULL, *compare = NULL;
  const char *fa_text = "e4m3fn", *fb_text = "e4m3fn", *ra = "current", *rb = "current";
  const char *accum_text = "fp32", *dfmt_text = "f32";
  int beta_given = 0;
  exmy_gemm_args g;
  exmy_gemm_args_init(&g);
  exmy_rounding r = exmy_rounding_default();
  r.sat = EXMY_SAT_FINITE;
  cli_opts o;
  cli_opts_init(&o, "gemm", argc, argv);
  while (cli_next(&o)) {
    if (cli_rounding_option(&o, &r)) continue;
    const char *k = o.key;
    if (!strcmp(k, "--a")) pa = cli_value(&o);
    else if (!strcmp(k, "--b")) pb = cli_value(&o);
    else if (!strcmp(k, "--c")) pc = cli_value(&o);
    else if (!strcmp(k, "--out")) out = cli_value(&o);
    else if (!strcmp(k, "--format")) fa_text = fb_text = cli_value(&o);
    else if (!strcmp(k, "--format-a")) fa_text = cli_value(&o);
    else if (!strcmp(k, "--format-b")) fb_text = cli_value(&o);
    else if (!strcmp(k, "--scaling")) ra = rb = cli_value(&o);
    else if (!strcmp(k, "--scaling-a")) ra = cli_value(&o);
    else if (!strcmp(k, "--scaling-b")) rb = cli_value(&o);
    else if (!strcmp(k, "--accum")) accum_text = cli_value(&o);
    else if (!strcmp(k, "--out-format")) dfmt_text = cli_value(&o);
    else if (!strcmp(k, "--compare")) compare = cli_value(&o);
    else if (!strcmp(k, "--trans-a")) { cli_no_value(&o); g.trans_a = 1; }
    else if (!strcmp(k, "--trans-b")) { cli_no_value(&o); g.trans_b = 1; }
    else if (!strcmp(k, "--alpha")) g.alpha = parse_float("--alpha", cli_value(&o));
    else if (!strcmp(k, "--beta")) { g.beta = parse_float("--beta", cli_value(&o)); beta_given = 1; }
    else if (!strcmp(k, "--scale-c")) g.scale_c = parse_float("--scale-c", cli_value(&o));
    else if (!strcmp(k, "--scale-d")) g.scale_d = parse_float("--scale-d", cli_value(&o));
    else if (!strcmp(k, "--threads")) g.threads = (int)cli_parse_u64("--threads", cli_value(&o), 1, 1024);
    else if (!strcmp(k, "--out-round")) {
      const char *v = cli_value(&o);
      char e[EXMY_ERRLEN];
      if (exmy_round_mode_parse(v, &g.d_rnd.mode, e, sizeof e)) cli_die("gemm: %s", e);
    } else if (!strcmp(k, "--out-saturate")) {
      const char *v = o.val;
      if (!v || !strcmp(v, "finite")) g.d_rnd.sat = EXMY_SAT_FINITE;
      else if (!strcmp(v, "propagate")) g.d_rnd.sat = EXMY_SAT_PROPAGATE;
      else if (!strcmp(v, "none")) g.d_rnd.sat = EXMY_SAT_NONE;
      else cli_die("gemm: bad saturation '%s' (accepted: finite, propagate, none)", v);
    } else if (!o.positional) cli_die("gemm: unknown option '%s' (see exmy gemm --help)", argv[o.i]);
    else cli_die("gemm: unexpected argument '%s'", argv[o.i]);
  }
  if (!pa || !pb) cli_die("gemm: --a A.npy and --b B.npy are required");
  if (!out && !compare) cli_die("gemm: nothing to do: give --out D.npy or --compare MODELS");
  exmy_format fa, fb, fd, f32;
  cli_parse_format(fa_text, &fa);
  cli_parse_format(fb_text, &fb);
  cli_parse_format(dfmt_text, &fd);
  cli_parse_format("f32", &f32);
  char err[EXMY_ERRLEN];
  exmy_accum acc;
  if (exmy_accum_parse(accum_text, &acc, err, sizeof err)) cli_die("gemm: %s", err);
  /* Parse the compare list before the (possibly long) run. */
  char *list = NULL, *models[32];
  exmy_accum accs[32];
  int nm = 0;
  if (compare) {
    list = strdup(compare);
    nm = cli_split_list(list, models, 32, model_head);
    if (!nm) cli_die("gemm: --compare: empty model list");
    for (int i = 0; i < nm; i++)
      if (exmy_accum_parse(models[i], &accs[i], err, sizeof err)) cli_die("gemm: --compare: %s", err);
  }

  size_t ar, ac, br, bc;
  float *xa = cli_read_f32_matrix("gemm", pa, &ar, &ac);
  float *xb = cli_read_f32_matrix("gemm", pb, &br, &bc);
  exmy_qtensor qa, qb;
  cli_quantize("gemm", ra, &fa, &r, xa, ar, ac, &qa);
  cli_quantize("gemm", rb, &fb, &r, xb, br, bc, &qb);
  g.a = &qa;
  g.b = &qb;
  g.accum = &acc;
  size_t m, n, k;
  g.d_fmt = &fd;
  if (exmy_gemm_check(&g, &m, &n, &k, err, sizeof err)) cli_die("gemm: %s", err);
  float *xc = NULL;
  if (pc) {
    size_t cr, cc;
    xc = cli_read_f32_matrix("gemm", pc, &cr, &cc);
    if (cr != m || cc != n) cli_die("gemm: C is %zu x %zu but D is %zu x %zu", cr, cc, m, n);
    g.c_fmt = &f32;
    g.c = xc;
    if (!beta_given) g.beta = 1.0f;
  }
  const size_t cb = (size_t)exmy_code_bytes(&fd);
  void *d = calloc(m * n + 1, cb);
  if (!d) cli_die("gemm: out of memory for D (%zu x %zu)", m, n);
  float amax = 0.0f;
  const double gflop = 2.0 * (double)m * (double)n * (double)k * 1e-9;

  if (out) {
    double secs;
    char name[320];
    exmy_accum_to_string(&acc, name, sizeof name);
    run_model(&g, &acc, accum_text, d, &amax, &secs);
    cli_write_npy("gemm", out, fd.bits == 32 && fd.ebits == 8 ? EXMY_DTYPE_F32 : cli_code_dtype(&fd), m, n, d);
    printf("D %zu x %zu (k %zu) in %s: %s x %s, scaling %s x %s, accumulation %s\n", m, n, k, fd.name, fa.name,
           fb.name, ra, rb, name);
    printf("amax_d %.9g; %.3f s, %.2f GFLOP/s\n", (double)amax, secs, secs > 0 ? gflop / secs : 0.0);
  }
  if (compare) {
    exmy_accum ex;
    exmy_accum_parse("exact", &ex, NULL, 0);
    void *dex = calloc(m * n + 1, cb);
    if (!dex) cli_die("gemm: out of memory");
    double secs;
    run_model(&g, &ex, "exact", dex, NULL, &secs);
    printf("%zu x %zu x %zu, %s x %s, scaling %s x %s, D in %s; error against exact:\n", m, n, k, fa.name, fb.name,
           ra, rb, fd.name);
    double emax = 0;
    for (size_t t = 0; t < m * n; t++) {
      const double v = fabs(exmy_code_to_f64(&fd, exmy_code_get(&fd, dex, t)));
      if (isfinite(v) && v > emax) emax = v;
    }
    printf("%-36s %12s %14s %14s %10s %9s\n", "model", "max ulp", "mean rel err", "max err/max|D|", "differ %",
           "seconds");
    for (int i = 0; i < nm; i++) {
      run_model(&g, &accs[i], models[i], d, NULL, &secs);
      double maxulp = 0, relsum = 0, maxerr = 0;
      size_t nrel = 0, ndiff = 0, nanmis = 0;
      for (size_t t = 0; t < m * n; t++) {
        const uint64_t cx = exmy_code_get(&fd, dex, t), cy = exmy_code_get(&fd, d, t);
        if (cx == cy) continue;
        ndiff++;
        const double vx = exmy_code_to_f64(&fd, cx), vy = exmy_code_to_f64(&fd, cy);
        if (isnan(vx) != isnan(vy)) { nanmis++; continue; }
        if (isnan(vx)) continue;
        const double u = fabs(code_ordinal(&fd, cx) - code_ordinal(&fd, cy));
        if (u > maxulp) maxulp = u;
        if (isfinite(vx) && isfinite(vy) && fabs(vy - vx) > maxerr) maxerr = fabs(vy - vx);
        if (isfinite(vx) && vx != 0 && isfinite(vy)) {
          relsum += fabs(vy - vx) / fabs(vx);
          nrel++;
        }
      }
      char name[320];
      exmy_accum_to_string(&accs[i], name, sizeof name);
      char ulp[32];
      if (nanmis) snprintf(ulp, sizeof ulp, "NaN (%zu)", nanmis);
      else snprintf(ulp, sizeof ulp, "%.0f", maxulp);
      const double cnt = (double)m * (double)n;
      printf("%-36s %12s %14.3e %14.3e %10.4f %9.3f\n", name, ulp, nrel ? relsum / cnt : 0.0,
             emax > 0 ? maxerr / emax : 0.0, cnt > 0 ? 100.0 * (double)ndiff / cnt : 0.0, secs);
    }
    free(dex);
  }
  free(list);
  free(d);
  free(xc);
  free(xa);
  free(xb);
  exmy_qtensor_free(&qa);
  exmy_qtensor_free(&qb);
  return 0;
}
