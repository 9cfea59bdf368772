/* tensor.c: the scaled-tensor commands: quantize-tensor, whatif, stats, gen. */
#include "cli/cli.h"
#include "emulate/recipe_traits.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

const char *quantize_tensor_usage =
  "usage: exmy quantize-tensor --in X.npy --format F --scaling RECIPE [options]\n"
  "Quantize a float32/float64 tensor (2-D; 1-D is 1 x n; N-D: last axis is columns) with a\n"
  "scaling recipe, as Transformer Engine / OCP MX do: q = cast(fp32(x * scale)).\n"
  "  --scaling RECIPE   none, current[:pow2,eps=E,row,col], delayed[:len=L,algo=max|most_recent,\n"
  "                     margin=M], block:1x128, block:128x128[,fp32,deepgemm,eps=E],\n"
  "                     mx[:col], mx:ocp[,col], nvfp4[:16x16]; the option exact\n"
  "                     (current:exact, block:1x128,exact) rounds the exact product once\n"
  "  --round MODE, --saturate[=KIND], --ftz, --daz, --seed N, --stream N, --sr-bits R\n"
  "                     the element cast (default: rne, saturating, as cuda_fp8.h)\n"
  "  --out Q.npy        codes (uint8/16/32/64)\n"
  "  --scales S.npy     per-group scales: float32 scale_inv (srows x scols); uint8 E8M0 codes\n"
  "                     for mx, E4M3 codes for nvfp4 (tensor scale printed)\n"
  "  --dequant D.npy    dequantized values, float32\n"
  "  --stats            print the quantization statistics\n"
  "A delayed recipe on one tensor uses its initial scale 1 (no history yet).\n";

const char *whatif_usage =
  "usage: exmy whatif --in X.npy --formats F1,F2,... [--scaling R1,R2,...] [--csv|--json]\n"
  "                   [--plot out.png] [--round ...]\n"
  "The format-design table: one row per (format, recipe) with the statistics of quantizing\n"
  "X: underflow and overflow %, MSE, cosine similarity, SNR in dB, max relative error.\n"
  "Formats are separated by ';' or by ',' between names (long forms with fields need ';').\n"
  "--scaling defaults to current.  --plot draws SNR and underflow per row with gnuplot, in\n"
  "the format the file's extension names: .png, .svg or .pdf.\n";

const char *stats_usage =
  "usage: exmy stats --in X.npy [--csv]\n"
  "A tensor's range against each named format's range: amin, amax and dynamic range of\n"
  "|x|, and per format the share of nonzero |x| below its smallest subnormal, in its\n"
  "subnormal range, in its normal range, and above its largest finite value (unscaled).\n";

const char *gen_usage =
  "usage: exmy gen --out X.npy [--dist normal|laplace|student|activation] [--shape RxC]\n"
  "                [--df N] [--seed N]\n"
  "Write a deterministic float32 test tensor (default 256x1024 'activation': GELU of a\n"
  "normal with a few outlier channels 30x larger, as LLM activations have).\n";

static int format_head(const char *piece, size_t len) { return memchr(piece, '=', len) == NULL; }

static int recipe_head(const char *piece, size_t len) {
  for (int i = 0; exmy__recipe_traits_of((exmy_recipe_kind)i)->name; i++) {
    const char *name = exmy__recipe_traits_of((exmy_recipe_kind)i)->name;
    size_t k = strlen(name);
    if (len >= k && !strncmp(piece, name, k) && (len == k || piece[k] == ':')) return 1;
  }
  return 0;
}

static void print_stats(FILE *out, const exmy_qstats *s) {
  fprintf(out, "elements       %zu (nonzero %zu)\n", s->n, s->n_nonzero);
  fprintf(out, "amin, amax     %.6g, %.6g (|x| over nonzero finite x)\n", s->amin, s->amax);
  fprintf(out, "underflow      %.4f %%\n", 100 * s->underflow_frac);
  fprintf(out, "overflow       %.4f %%\n", 100 * s->overflow_frac);
  fprintf(out, "mse            %.6g\n", s->mse);
  fprintf(out, "cosine         %.9f\n", s->cosine);
  fprintf(out, "snr            %.3f dB\n", s->snr_db);
  fprintf(out, "max rel error  %.6g\n", s->max_rel_err);
  fprintf(out, "scale ratio    %.6g (this scale / current scaling's)\n", s->scale_ratio);
  fprintf(out, "log2|x| histogram (format range 2^%d .. 2^%d):\n", s->fmt_log2_min, s->fmt_log2_max);
  uint64_t top = 0;
  for (int b = 0; b < EXMY_HIST_BINS; b++) if (s->hist[b] > top) top = s->hist[b];
  for (int b = 0; b < EXMY_HIST_BINS; b++) {
    if (!s->hist[b]) continue;
    int e = EXMY_HIST_LO + b;
    int w = top ? (int)(50.0 * (double)s->hist[b] / (double)top + 0.5) : 0;
    fprintf(out, "  2^%-5d %10llu %c ", e, (unsigned long long)s->hist[b],
            e < s->fmt_log2_min ? '<' : e > s->fmt_log2_max ? '>' : ' ');
    for (int i = 0; i < w; i++) fputc('#', out);
    fputc('\n', out);
  }
}

int cmd_quantize_tensor(int argc, char **argv) {
  const char *in = NULL, *fmt_text = NULL, *recipe = NULL, *out = NULL, *scales = NULL, *dq = NULL;
  int stats = 0;
  exmy_rounding r = exmy_rounding_default();
  r.sat = EXMY_SAT_FINITE;
  cli_opts o;
  cli_opts_init(&o, "quantize-tensor", argc, argv);
  while (cli_next(&o)) {
    if (cli_rounding_option(&o, &r)) continue;
    if (!strcmp(o.key, "--in")) in = cli_value(&o);
    else if (!strcmp(o.key, "--format")) fmt_text = cli_value(&o);
    else if (!strcmp(o.key, "--scaling")) recipe = cli_value(&o);
    else if (!strcmp(o.key, "--out")) out = cli_value(&o);
    else if (!strcmp(o.key, "--scales")) scales = cli_value(&o);
    else if (!strcmp(o.key, "--dequant")) dq = cli_value(&o);
    else if (!strcmp(o.key, "--stats")) { cli_no_value(&o); stats = 1; }
    else if (!o.positional) cli_die("quantize-tensor: unknown option '%s' (see exmy quantize-tensor --help)", argv[o.i]);
    else cli_die("quantize-tensor: unexpected argument '%s'", argv[o.i]);
  }
  if (!in) cli_die("quantize-tensor: --in X.npy is required");
  if (!fmt_text) cli_die("quantize-tensor: --format F is required");
  if (!recipe) cli_die("quantize-tensor: --scaling RECIPE is required");
  exmy_format f;
  cli_parse_format(fmt_text, &f);
  {
    exmy_recipe rc;
    char err[EXMY_ERRLEN];
    if (exmy_recipe_parse(recipe, &rc, err, sizeof err)) cli_die("quantize-tensor: %s", err);
  }
  if (!out && !scales && !dq && !stats) cli_die("quantize-tensor: nothing to write: give --out, --scales, --dequant or --stats");
  size_t rows, cols;
  float *x = cli_read_f32_matrix("quantize-tensor", in, &rows, &cols);
  exmy_qtensor q;
  cli_quantize("quantize-tensor", recipe, &f, &r, x, rows, cols, &q);
  if (out) {
    cli_write_npy("quantize-tensor", out, cli_code_dtype(&f), rows, cols, q.codes);
  }
  if (scales) {
    if (q.scale_codes) cli_write_npy("quantize-tensor", scales, EXMY_DTYPE_U8, q.srows, q.scols, q.scale_codes);
    else cli_write_npy("quantize-tensor", scales, EXMY_DTYPE_F32, q.srows, q.scols, q.scale_inv);
  }
  if (dq) {
    float *d = malloc(rows * cols * sizeof *d + 1);
    if (!d) cli_die("quantize-tensor: out of memory");
    exmy_qtensor_to_f32(&q, d);
    cli_write_npy("quantize-tensor", dq, EXMY_DTYPE_F32, rows, cols, d);
    free(d);
  }
  printf("quantized %zu x %zu to %s with %s: %zu x %zu scale groups", rows, cols, f.name, recipe, q.srows, q.scols);
  if (exmy__recipe_traits_of(q.recipe)->tensor_scale) printf(", tensor scale %a (S_enc)", (double)q.tensor_scale);
  printf("\n");
  if (stats) {
    exmy_qstats st;
    char err[EXMY_ERRLEN];
    if (exmy_qtensor_stats(&q, x, &st, err, sizeof err)) cli_die("quantize-tensor: %s", err);
    print_stats(stdout, &st);
  }
  exmy_qtensor_free(&q);
  free(x);
  return 0;
}

typedef struct whatif_row {
  char format[64], recipe[64];
  exmy_qstats st;
} whatif_row;

/* Text inside a gnuplot single-quoted string ('' is a quote; nothing else is
 * special there). */
static void gp_quoted(FILE *g, const char *s) {
  fputc('\'', g);
  for (; *s; s++) {
    if (*s == '\'') fputc('\'', g);
    fputc(*s, g);
  }
  fputc('\'', g);
}

/* Clustered bars: one cluster per format, one bar per recipe. */
static void plot_rows(const char *path, const char *term, const whatif_row *rows, int nf, int nr) {
  if (system("command -v gnuplot >/dev/null 2>&1") != 0)
    cli_die("whatif: --plot needs gnuplot (Debian: apt-get install gnuplot-nox)");
  char dat[] = "/tmp/exmy-whatif-XXXXXX", log[] = "/tmp/exmy-whatif-log-XXXXXX";
  int fd = mkstemp(dat);
  if (fd < 0) cli_die("whatif: cannot create a temporary file for the plot");
  int lfd = mkstemp(log);
  if (lfd < 0) { unlink(dat); cli_die("whatif: cannot create a temporary file for the plot"); }
  close(lfd);
  FILE *d = fdopen(fd, "w");
  /* block 0: SNR; block 1: underflow + overflow %, formats down, recipes across */
  double lo[2] = {INFINITY, INFINITY}, hi[2] = {-INFINITY, -INFINITY};
  for (int blk = 0; blk < 2; blk++) {
    fprintf(d, "format");
    for (int j = 0; j < nr; j++) fprintf(d, " \"%s\"", rows[j].recipe);
    fputc('\n', d);
    for (int i = 0; i < nf; i++) {
      fprintf(d, "\"%s\"", rows[i * nr].format);
      for (int j = 0; j < nr; j++) {
        const exmy_qstats *s = &rows[i * nr + j].st;
        double v = blk == 0 ? (isinf(s->snr_db) ? 200 : s->snr_db) : 100 * (s->underflow_frac + s->overflow_frac);
        fprintf(d, " %.6g", v);
        if (v < lo[blk]) lo[blk] = v;
        if (v > hi[blk]) hi[blk] = v;
      }
      fputc('\n', d);
    }
    fprintf(d, "\n\n");
  }
  fclose(d);
  /* gnuplot's messages go to a file, shown only when it fails */
  char cmd[128];
  snprintf(cmd, sizeof cmd, "gnuplot 2>'%s' >&2", log);
  FILE *g = popen(cmd, "w");
  if (!g) { unlink(dat); unlink(log); cli_die("whatif: cannot run gnuplot"); }
  fprintf(g, "set terminal %s\nset output ", term);
  gp_quoted(g, path);
  fprintf(g, "\nset multiplot layout 2,1 title 'exmy whatif: quantization error per element format and scaling recipe'\n"
             "set style data histograms\nset style histogram clustered gap 1\n"
             "set style fill solid 0.85 border -1\nset boxwidth 0.9\n"
             "set xtics noenhanced\nset key noenhanced outside right top\nset grid ytics\n");
  /* Bars start at 0 (a histogram's base); a flat block (one row, or equal
   * values) gets an explicit range, which autoscaling would warn about. */
  for (int blk = 0; blk < 2; blk++) {
    const double a = lo[blk] < 0 ? lo[blk] : 0, b = hi[blk] > 0 ? hi[blk] : 0;
    fprintf(g, "set ylabel '%s'\n", blk == 0 ? "SNR (dB), higher is better" : "underflow + overflow (%% of elements)");
    if (b - a > 0) fprintf(g, "set yrange [%.17g:%.17g]\n", a, b + 0.05 * (b - a));
    else fprintf(g, "set yrange [-1:1]\n");
    fprintf(g, "plot for [c=2:%d] '%s' index %d using c:xtic(1) title columnheader(c)\n", nr + 1, dat, blk);
  }
  fprintf(g, "unset multiplot\n");
  int rc = pclose(g);
  unlink(dat);
  char first[200] = "";
  FILE *lf = fopen(log, "r");
  if (lf) {
    char line[200];
    while (fgets(line, sizeof line, lf)) { /* the first line with text that is not gnuplot's echo */
      line[strcspn(line, "\r\n")] = 0;
      const char *t = line + strspn(line, " \t^");
      if (*t && strncmp(t, "gnuplot>", 8)) { snprintf(first, sizeof first, "%s", t); break; }
    }
    fclose(lf);
  }
  unlink(log);
  if (rc != 0) {
    fflush(stdout);
    fprintf(stderr, "exmy: whatif: gnuplot failed writing '%s'%s%s\n", path, *first ? ": " : "", first);
    exit(1);
  }
}

int cmd_whatif(int argc, char **argv) {
  const char *in = NULL, *formats = NULL, *recipes = "current", *plot = NULL;
  int csv = 0, json = 0;
  exmy_rounding r = exmy_rounding_default();
  r.sat = EXMY_SAT_FINITE;
  cli_opts o;
  cli_opts_init(&o, "whatif", argc, argv);
  while (cli_next(&o)) {
    if (cli_rounding_option(&o, &r)) continue;
    if (!strcmp(o.key, "--in")) in = cli_value(&o);
    else if (!strcmp(o.key, "--formats")) formats = cli_value(&o);
    else if (!strcmp(o.key, "--scaling")) recipes = cli_value(&o);
    else if (!strcmp(o.key, "--plot")) plot = cli_value(&o);
    else if (!strcmp(o.key, "--csv")) { cli_no_value(&o); csv = 1; }
    else if (!strcmp(o.key, "--json")) { cli_no_value(&o); json = 1; }
    else if (!o.positional) cli_die("whatif: unknown option '%s' (see exmy whatif --help)", argv[o.i]);
    else cli_die("whatif: unexpected argument '%s'", argv[o.i]);
  }
  if (!in) cli_die("whatif: --in X.npy is required");
  if (!formats) cli_die("whatif: --formats F1,F2,... is required");
  if (csv && json) cli_die("whatif: give --csv or --json, not both");
  const char *plot_term = plot ? cli_plot_terminal("whatif", plot) : NULL;
  char fbuf[1024], rbuf[1024];
  snprintf(fbuf, sizeof fbuf, "%s", formats);
  snprintf(rbuf, sizeof rbuf, "%s", recipes);
  char *fl[64], *rl[64];
  int nf = cli_split_list(fbuf, fl, 64, format_head), nr = cli_split_list(rbuf, rl, 64, recipe_head);
  if (!nf) cli_die("whatif: --formats '%s' names no format", formats);
  exmy_format fmts[64];
  for (int i = 0; i < nf; i++) cli_parse_format(fl[i], &fmts[i]);
  for (int j = 0; j < nr; j++) { /* validate recipes before the work */
    exmy_recipe rc;
    char err[EXMY_ERRLEN];
    if (exmy_recipe_parse(rl[j], &rc, err, sizeof err)) cli_die("whatif: %s", err);
  }
  size_t rows, cols;
  float *x = cli_read_f32_matrix("whatif", in, &rows, &cols);
  whatif_row *out = calloc((size_t)(unsigned)nf * (unsigned)nr + 1, sizeof *out);
  int n = 0;
  for (int i = 0; i < nf; i++)
    for (int j = 0; j < nr; j++) {
      exmy_qtensor q;
      if (isatty(2)) fprintf(stderr, "\rwhatif: %d/%d %s %s ...        ", n + 1, nf * nr, fmts[i].name, rl[j]);
      cli_quantize("whatif", rl[j], &fmts[i], &r, x, rows, cols, &q);
      char err[EXMY_ERRLEN];
      if (exmy_qtensor_stats(&q, x, &out[n].st, err, sizeof err)) cli_die("whatif: %s", err);
      snprintf(out[n].format, sizeof out[n].format, "%s", fmts[i].name);
      snprintf(out[n].recipe, sizeof out[n].recipe, "%s", rl[j]);
      exmy_qtensor_free(&q);
      n++;
    }
  if (isatty(2)) fprintf(stderr, "\r%60s\r", "");
  if (json) {
    printf("[\n");
    for (int k = 0; k < n; k++) {
      const exmy_qstats *s = &out[k].st;
      printf("  {\"format\": \"%s\", \"scaling\": \"%s\", \"underflow_pct\": %.9g, \"overflow_pct\": %.9g, "
             "\"mse\": %.9g, \"cosine\": %.12g, \"snr_db\": %s%.9g%s, \"max_rel_err\": %.9g, \"amin\": %.9g, "
             "\"amax\": %.9g}%s\n",
             out[k].format, out[k].recipe, 100 * s->underflow_frac, 100 * s->overflow_frac, s->mse, s->cosine,
             isinf(s->snr_db) ? "\"" : "", isinf(s->snr_db) ? INFINITY : s->snr_db, isinf(s->snr_db) ? "\"" : "",
             s->max_rel_err, s->amin, s->amax, k + 1 < n ? "," : "");
    }
    printf("]\n");
  } else if (csv) {
    printf("format,scaling,underflow_pct,overflow_pct,mse,cosine,snr_db,max_rel_err\n");
    for (int k = 0; k < n; k++) {
      const exmy_qstats *s = &out[k].st;
      printf("\"%s\",\"%s\",%.9g,%.9g,%.9g,%.12g,%.9g,%.9g\n", out[k].format, out[k].recipe, 100 * s->underflow_frac,
             100 * s->overflow_frac, s->mse, s->cosine, s->snr_db, s->max_rel_err);
    }
  } else {
    printf("%s: %zu x %zu, |x| in [%.4g, %.4g]\n", in, rows, cols, out[0].st.amin, out[0].st.amax);
    int wf = 6, wr = 7;
    for (int k = 0; k < n; k++) {
      if ((int)strlen(out[k].format) > wf) wf = (int)strlen(out[k].format);
      if ((int)strlen(out[k].recipe) > wr) wr = (int)strlen(out[k].recipe);
    }
    printf("%-*s %-*s %10s %10s %12s %12s %9s %12s\n", wf, "format", wr, "scaling", "underflow%", "overflow%", "mse",
           "cosine", "snr_dB", "max_rel_err");
    for (int k = 0; k < n; k++) {
      const exmy_qstats *s = &out[k].st;
      printf("%-*s %-*s %10.4f %10.4f %12.4g %12.9f %9.2f %12.4g\n", wf, out[k].format, wr, out[k].recipe,
             100 * s->underflow_frac, 100 * s->overflow_frac, s->mse, s->cosine, s->snr_db, s->max_rel_err);
    }
  }
  if (plot) {
    fflush(stdout);
    plot_rows(plot, plot_term, out, nf, nr);
    fprintf(stderr, "exmy: wrote %s\n", plot);
  }
  free(out);
  free(x);
  return 0;
}

int cmd_stats(int argc, char **argv) {
  const char *in = NULL;
  int csv = 0;
  cli_opts o;
  cli_opts_init(&o, "stats", argc, argv);
  while (cli_next(&o)) {
    if (!strcmp(o.key, "--in")) in = cli_value(&o);
    else if (!strcmp(o.key, "--csv")) { cli_no_value(&o); csv = 1; }
    else if (!o.positional) cli_die("stats: unknown option '%s' (see exmy stats --help)", argv[o.i]);
    else cli_die("stats: unexpected argument '%s'", argv[o.i]);
  }
  if (!in) cli_die("stats: --in X.npy is required");
  size_t rows, cols;
  float *x = cli_read_f32_matrix("stats", in, &rows, &cols);
  const size_t n = rows * cols;
  size_t nz = 0, nan = 0, inf = 0, zero = 0;
  double amin = INFINITY, amax = 0;
  for (size_t i = 0; i < n; i++) {
    float a = fabsf(x[i]);
    if (isnan(a)) nan++;
    else if (isinf(a)) inf++;
    else if (a == 0) zero++;
    else { nz++; if (a < amin) amin = a; if (a > amax) amax = a; }
  }
  if (!nz) amin = 0;
  if (!csv) {
    printf("%s: %zu x %zu, %zu nonzero finite, %zu zero, %zu inf, %zu nan\n", in, rows, cols, nz, zero, inf, nan);
    printf("|x| in [%.6g, %.6g], dynamic range %.2f binades\n", amin, amax, nz ? log2(amax) - log2(amin) : 0.0);
    printf("%-13s %12s %12s %10s %10s %10s %10s %9s\n", "format", "min_sub", "max", "below%", "subnorm%", "normal%",
           "above%", "headroom");
  } else {
    printf("format,min_subnormal,max_finite,below_pct,subnormal_pct,normal_pct,above_pct,headroom_log2\n");
  }
  for (size_t k = 0; k < exmy_named_format_count(); k++) {
    exmy_format f;
    cli_parse_format(exmy_named_format_get(k)->name, &f);
    exmy_info info;
    exmy_format_info(&f, &info);
    size_t below = 0, sub = 0, normal = 0, above = 0;
    for (size_t i = 0; i < n; i++) {
      double a = fabs((double)x[i]);
      if (!(a > 0) || isinf(a)) continue;
      if (a < info.min_subnormal) below++;
      else if (a < info.min_normal) sub++;
      else if (a <= info.max_finite) normal++;
      else above++;
    }
    double d = nz ? 100.0 / (double)nz : 0;
    double head = nz ? log2(info.max_finite) - log2(amax) : 0;
    if (csv)
      printf("%s,%.9g,%.9g,%.6g,%.6g,%.6g,%.6g,%.4f\n", f.name, info.min_subnormal, info.max_finite, below * d, sub * d,
             normal * d, above * d, head);
    else
      printf("%-13s %12.4g %12.4g %10.4f %10.4f %10.4f %10.4f %9.2f\n", f.name, info.min_subnormal, info.max_finite,
             below * d, sub * d, normal * d, above * d, head);
  }
  free(x);
  return 0;
}

/* gen: deterministic test tensors from exmy_random64 (Box-Muller). */
static double uniform01(uint64_t seed, uint64_t stream, uint64_t i) {
  return ((double)(exmy_random64(seed, stream, i) >> 11) + 0.5) * 0x1p-53;
}
static double normal01(uint64_t seed, uint64_t i) {
  double u1 = uniform01(seed, 1, i), u2 = uniform01(seed, 2, i);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int cmd_gen(int argc, char **argv) {
  const char *out = NULL, *dist = "activation";
  size_t rows = 256, cols = 1024;
  uint64_t seed = 1, df = 3;
  cli_opts o;
  cli_opts_init(&o, "gen", argc, argv);
  while (cli_next(&o)) {
    if (!strcmp(o.key, "--out")) out = cli_value(&o);
    else if (!strcmp(o.key, "--dist")) dist = cli_value(&o);
    else if (!strcmp(o.key, "--seed")) seed = cli_parse_u64("--seed", cli_value(&o), 0, UINT64_MAX);
    else if (!strcmp(o.key, "--df")) df = cli_parse_u64("--df", cli_value(&o), 1, 1000);
    else if (!strcmp(o.key, "--shape")) {
      const char *v = cli_value(&o);
      char tail;
      if (sscanf(v, "%zux%zu%c", &rows, &cols, &tail) != 2 || !rows || !cols || rows > (1u << 16) || cols > (1u << 16))
        cli_die("gen: bad shape '%s' (accepted: RxC, each 1..65536)", v);
    } else if (!o.positional) cli_die("gen: unknown option '%s' (see exmy gen --help)", argv[o.i]);
    else cli_die("gen: unexpected argument '%s'", argv[o.i]);
  }
  if (!out) cli_die("gen: --out X.npy is required");
  int kind = !strcmp(dist, "normal") ? 0 : !strcmp(dist, "laplace") ? 1 : !strcmp(dist, "student") ? 2
           : !strcmp(dist, "activation") ? 3 : -1;
  if (kind < 0) cli_die("gen: unknown distribution '%s' (accepted: normal, laplace, student, activation)", dist);
  size_t n = rows * cols;
  float *x = malloc(n * sizeof *x + 1);
  if (!x) cli_die("gen: out of memory");
  for (size_t i = 0; i < n; i++) {
    double v;
    switch (kind) {
    case 0: v = normal01(seed, i); break;
    case 1: { double u = uniform01(seed, 3, i) - 0.5; v = (u < 0 ? 1 : -1) * log(1 - 2 * fabs(u)); break; }
    case 2: { /* Student t with df degrees of freedom: Z / sqrt(chi2/df) */
      double chi = 0;
      for (uint64_t k = 0; k < df; k++) { double z = normal01(seed + 7 + k, i); chi += z * z; }
      v = normal01(seed, i) / sqrt(chi / (double)df);
      break; }
    default: { /* GELU(normal), with outlier channels (every 97th column) 30x larger */
      double z = normal01(seed, i);
      v = 0.5 * z * (1 + erf(z / sqrt(2.0)));
      if ((i % cols) % 97 == 3) v *= 30;
      break; }
    }
    x[i] = (float)v;
  }
  cli_write_npy("gen", out, EXMY_DTYPE_F32, rows, cols, x);
  free(x);
  printf("wrote %s: %zu x %zu float32, %s, seed %llu\n", out, rows, cols, dist, (unsigned long long)seed);
  return 0;
}
