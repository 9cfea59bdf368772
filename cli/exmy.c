/* exmy.c: the `exmy` command.  Subcommands: formats, info, table, quantize.
 * Errors: one line on stderr naming the bad text, exit status 2. */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *main_usage =
  "usage: exmy COMMAND [ARGS]\n"
  "\n"
  "Bit-exact FP8 / ExMy numerics.  Commands:\n"
  "  formats            side-by-side table of the named formats\n"
  "  info FORMAT        properties of a format (range, epsilon, special codes)\n"
  "  table FORMAT       every code of a format of at most 16 bits with its exact value\n"
  "  quantize FORMAT    round numbers (stdin, one per line) or a .npy tensor to FORMAT\n"
  "  quantize-tensor    quantize a .npy tensor with a scaling recipe (current, delayed,\n"
  "                     block, mx, nvfp4), write codes, scales, dequantized values, stats\n"
  "  decode FORMAT      codes (.npy) back to float32/float64, with quantize-tensor's scales\n"
  "  whatif             format-design table: error statistics per (format, recipe), plot\n"
  "  stats              a tensor's range against every named format's range\n"
  "  gen                write a deterministic test tensor (.npy)\n"
  "  gemm               emulated GEMM with an accumulation model (exact, fp32, chunked,\n"
  "                     low-precision, tensor-core); --compare models against exact\n"
  "  mma INSTR          one tensor-core / matrix-core instruction D = A*B + C, bit for\n"
  "                     bit (sm_90:wgmma.f32.e4m3.e4m3, ...); --replay recorded outputs\n"
  "  gpu-check          the GPU (cuBLASLt FP8 GEMM, tensor-core probe, quantization)\n"
  "                     against the CPU models; exit 77 without CUDA or a GPU\n"
  "  gpu-probe          infer an engine's tensor-core accumulation model\n"
  "  train [CONFIG]     train a tiny GPT or MLP with every GEMM emulated in the chosen\n"
  "                     formats, rounding, scaling recipe and accumulation model\n"
  "  study [NAME]       the FP8 stability studies (mantissa, recipes, fallback,\n"
  "                     calibration, accumulation, rounding); no NAME: a short default\n"
  "\n"
  "FORMAT is a name (e4m3fn, e5m2, e4m3fnuz, e8m0fnu, e2m1fn, bf16, binary8p4se, ...),\n"
  "eXmY for an IEEE-like format (e8m3), eXmYfn / eXmYfnuz, binaryKpP{s,u}{e,f}, or a long\n"
  "form like e4m3,bias=11,inf=none,nan=ones (fields: bias, sign, inf, nan, zero).\n"
  "`exmy COMMAND --help` shows a command's options.  Version " EXMY_VERSION ".\n";

static const char *formats_usage =
  "usage: exmy formats [--csv]\n"
  "Print the named formats side by side: bits, bias, largest finite, smallest normal and\n"
  "subnormal, epsilon, infinities, NaNs, and the long form.  --csv prints comma-separated.\n";

static const char *info_usage =
  "usage: exmy info FORMAT\n"
  "Print a format's properties: total bits, bias, largest finite, smallest normal and\n"
  "subnormal, machine epsilon, number of finite values, codes of zeros, infinities, NaNs.\n";

static const char *table_usage =
  "usage: exmy table FORMAT\n"
  "Print every code of a format of at most 16 bits, one per line: code, class, exact value\n"
  "as a C99 hex-float, exact value in decimal.\n";

static const char *quantize_usage =
  "usage: exmy quantize FORMAT [options]\n"
  "Read numbers one per line from stdin (decimal, C99 hex-float, inf, -inf, nan; rounded\n"
  "once, exactly, from the text; blank lines and # comments are skipped) and print per\n"
  "number: the code (0x + ceil(bits/4) hex digits), then its exact decoded value.\n"
  "  --round MODE          rne (default), rna, rtz, rup, rdn, rto, sr\n"
  "  --saturate[=KIND]     finite (the default KIND): overflow and inf go to +-max;\n"
  "                        propagate: finite overflow to +-max, inf stays inf\n"
  "  --ftz                 flush subnormal results to zero\n"
  "  --daz                 treat subnormal inputs (of the input type) as zero\n"
  "  --seed N              stochastic rounding seed (default 0)\n"
  "  --stream N            stochastic rounding stream (default 0)\n"
  "  --sr-bits R           random bits per stochastic rounding, 1..64 (default 64)\n"
  "  --flags               append the exception flags (inexact, underflow, overflow, invalid)\n"
  "  --in X.npy            quantize a float32/float64/float16/bfloat16 tensor instead of\n"
  "                        stdin (bfloat16: ml_dtypes' '<V2') ...\n"
  "  --out Q.npy           ... writing codes as uint8/16/32/64, whichever first holds them\n"
  "  --dequant D.npy       also write the decoded values (float64 for float64 input, else\n"
  "                        float32)\n"
  "Element i of a stream (the i-th number, skipped lines not counted) or tensor uses\n"
  "counter i for stochastic rounding.  --daz: a text below 2^-1022 in magnitude is zero.\n";

static int wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
  return 0;
}

static void print_code(FILE *out, const exmy_format *f, uint64_t code) {
  fprintf(out, "0x%0*llx", exmy_code_hex_digits(f), (unsigned long long)code);
}

/* ---- formats --------------------------------------------------------- */

static int cmd_formats(int argc, char **argv) {
  int csv = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--csv")) csv = 1;
    else cli_die("formats: unknown option '%s' (see exmy formats --help)", argv[i]);
  }
  const char *hdr[] = {"name", "bits", "bias", "max finite", "min normal", "min subnormal", "epsilon", "inf", "nan", "long form"};
  if (csv) printf("name,bits,bias,max_finite,min_normal,min_subnormal,epsilon,inf,nan,long_form\n");
  else printf("%-12s %4s %5s  %-13s %-13s %-13s %-9s %-5s %-8s %s\n", hdr[0], hdr[1], hdr[2], hdr[3], hdr[4], hdr[5], hdr[6], hdr[7], hdr[8], hdr[9]);
  for (size_t i = 0; i < exmy_named_format_count(); i++) {
    const exmy_named_format *nf = exmy_named_format_get(i);
    exmy_format f;
    exmy_info in;
    char lf[160], sub[32], nrm[32];
    cli_parse_format(nf->name, &f);
    exmy_format_info(&f, &in);
    exmy_format_to_string(&f, lf, sizeof lf);
    const char *inf = f.inf == EXMY_INF_NONE ? "none" : f.inf == EXMY_INF_IEEE ? "ieee" : "top";
    const char *nan = f.nan == EXMY_NAN_NONE ? "none" : f.nan == EXMY_NAN_IEEE ? "ieee" : f.nan == EXMY_NAN_ONES ? "ones" : "negzero";
    const char *g = csv ? "%.17g" : "%.6g";
    if (f.has_zero && f.mbits) snprintf(sub, sizeof sub, g, in.min_subnormal); else snprintf(sub, sizeof sub, "none");
    snprintf(nrm, sizeof nrm, g, in.min_normal);
    if (csv)
      printf("%s,%d,%d,%.17g,%s,%s,%.17g,%s,%s,\"%s\"\n", nf->name, f.bits, f.bias, in.max_finite, nrm, sub, in.epsilon, inf, nan, lf);
    else
      printf("%-12s %4d %5d  %-13.6g %-13s %-13s %-9.3g %-5s %-8s %s\n", nf->name, f.bits, f.bias, in.max_finite, nrm, sub, in.epsilon, inf, nan, lf);
  }
  return 0;
}

/* ---- info, table ------------------------------------------------------ */

static int cmd_info(int argc, char **argv) {
  if (argc < 2) cli_die("info: no FORMAT given (see exmy info --help)");
  if (argc > 2) cli_die("info: unexpected argument '%s' (expected one FORMAT)", argv[2]);
  exmy_format f;
  cli_parse_format(argv[1], &f);
  exmy_format_info_print(&f, stdout);
  return 0;
}

static int cmd_table(int argc, char **argv) {
  if (argc < 2) cli_die("table: no FORMAT given (see exmy table --help)");
  if (argc > 2) cli_die("table: unexpected argument '%s' (expected one FORMAT)", argv[2]);
  exmy_format f;
  cli_parse_format(argv[1], &f);
  if (f.bits > 16) cli_die("table: format '%s' has %d bits (table prints formats of at most 16 bits)", argv[1], f.bits);
  for (uint64_t c = 0; c < ((uint64_t)1 << f.bits); c++) {
    double v = exmy_code_to_f64(&f, c);
    exmy_class cls = exmy_classify(&f, c);
    print_code(stdout, &f, c);
    printf(" %-9s ", exmy_class_name(cls));
    if (cls == EXMY_CLASS_NAN || cls == EXMY_CLASS_INF) {
      cli_print_exact(stdout, v);
      putchar(' ');
      cli_print_exact(stdout, v);
    } else {
      printf("%a ", v);
      cli_print_exact(stdout, v);
    }
    putchar('\n');
  }
  return 0;
}

/* ---- quantize ------------------------------------------------------------ */

static void print_flags(FILE *out, unsigned fl) {
  fputs(" flags=", out);
  if (!fl) fputs("none", out);
  const char *names[] = {"inexact", "underflow", "overflow", "invalid"};
  int first = 1;
  for (int b = 0; b < 4; b++)
    if (fl & (1u << b)) { fprintf(out, "%s%s", first ? "" : ",", names[b]); first = 0; }
}

/* One stdin line: NULL for a blank line or a comment (# to the end of the
 * line), else the number's text, trimmed, in place. */
static char *stream_text(char *s) {
  s[strcspn(s, "#")] = 0;
  while (*s == ' ' || *s == '\t') s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n')) *--e = 0;
  return *s ? s : NULL;
}

static int quantize_stream(const exmy_format *f, const exmy_rounding *r, int show_flags) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  uint64_t lineno = 0, index = 0; /* index: numbers so far (the SR counter), not lines */
  while ((len = getline(&line, &cap, stdin)) >= 0) {
    lineno++;
    char *text = stream_text(line);
    if (!text) continue;
    char shown[64];
    unsigned fl = 0;
    uint64_t code;
    if (cli_round_text(text, f, r, index, &code, &fl)) {
      snprintf(shown, sizeof shown, "%s", text);
      free(line);
      cli_die("quantize: line %llu: malformed number '%s' (accepted: decimal, C99 hex-float, inf, -inf, nan)",
          (unsigned long long)lineno, shown);
    }
    index++;
    print_code(stdout, f, code);
    putchar(' ');
    cli_print_exact(stdout, exmy_code_to_f64(f, code));
    if (show_flags) print_flags(stdout, fl);
    putchar('\n');
  }
  free(line);
  return 0;
}

static int quantize_npy(const exmy_format *f, const exmy_rounding *r, const char *in, const char *out,
                        const char *dq) {
  exmy_array x, q, d;
  char err[EXMY_ERRLEN];
  if (exmy_npy_read(in, &x, err, sizeof err)) cli_die("quantize: %s", err);
  if (x.dtype != EXMY_DTYPE_F32 && x.dtype != EXMY_DTYPE_F64 && x.dtype != EXMY_DTYPE_F16 &&
      x.dtype != EXMY_DTYPE_BF16) {
    const char *dt = exmy_dtype_name(x.dtype);
    exmy_array_free(&x);
    cli_die("quantize: %s: dtype %s is not a float tensor (accepted: float32, float64, float16, bfloat16)", in, dt);
  }
  q = x;
  int cb = exmy_code_bytes(f);
  q.dtype = cb == 1 ? EXMY_DTYPE_U8 : cb == 2 ? EXMY_DTYPE_U16 : cb == 4 ? EXMY_DTYPE_U32 : EXMY_DTYPE_U64;
  q.data = malloc(x.count * (size_t)cb + 1);
  if (!q.data) cli_die("quantize: out of memory for %zu elements", x.count);
  unsigned fl = 0;
  if (exmy_quantize(f, r, x.dtype, x.data, x.count, 0, q.data, &fl, err, sizeof err)) cli_die("quantize: %s", err);
  if (out && exmy_npy_write(out, &q, err, sizeof err)) cli_die("quantize: %s", err);
  if (dq) {
    d = x;
    if (x.dtype != EXMY_DTYPE_F64) d.dtype = EXMY_DTYPE_F32; /* float16/bfloat16 input: float32 */
    d.data = malloc(x.count * exmy_dtype_size(d.dtype) + 1);
    if (!d.data) cli_die("quantize: out of memory for %zu elements", x.count);
    if (d.dtype == EXMY_DTYPE_F32) exmy_codes_to_f32(f, q.data, x.count, d.data);
    else exmy_codes_to_f64(f, q.data, x.count, d.data);
    if (exmy_npy_write(dq, &d, err, sizeof err)) cli_die("quantize: %s", err);
    free(d.data);
  }
  fprintf(stderr, "exmy: quantized %zu elements of %s to %s", x.count, in, f->name);
  print_flags(stderr, fl);
  fputc('\n', stderr);
  free(q.data);
  exmy_array_free(&x);
  return 0;
}

static int cmd_quantize(int argc, char **argv) {
  const char *fmt_text = NULL, *in = NULL, *out = NULL, *dq = NULL;
  exmy_rounding r = exmy_rounding_default();
  int show_flags = 0;
  cli_opts o;
  cli_opts_init(&o, "quantize", argc, argv);
  while (cli_next(&o)) {
    if (cli_rounding_option(&o, &r)) continue;
    if (!strcmp(o.key, "--flags")) { cli_no_value(&o); show_flags = 1; }
    else if (!strcmp(o.key, "--in")) in = cli_value(&o);
    else if (!strcmp(o.key, "--out")) out = cli_value(&o);
    else if (!strcmp(o.key, "--dequant")) dq = cli_value(&o);
    else if (!o.positional) cli_die("quantize: unknown option '%s' (see exmy quantize --help)", argv[o.i]);
    else if (!fmt_text) fmt_text = argv[o.i];
    else cli_die("quantize: unexpected argument '%s' (numbers go on standard input)", argv[o.i]);
  }
  if (!fmt_text) cli_die("quantize: no FORMAT given (see exmy quantize --help)");
  exmy_format f;
  cli_parse_format(fmt_text, &f);
  if ((out || dq) && !in) cli_die("quantize: --out/--dequant need --in X.npy");
  if (in) {
    if (!out && !dq) cli_die("quantize: --in needs --out Q.npy and/or --dequant D.npy");
    return quantize_npy(&f, &r, in, out, dq);
  }
  return quantize_stream(&f, &r, show_flags);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(main_usage, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(main_usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("exmy %s\n", exmy_version()); /* the library's, not only the header's */
    return 0;
  }
  /* waits: runs OpenMP parallel regions, step after step (bounded spinning: waits.c) */
  struct { const char *name; int (*fn)(int, char **); const char *usage; void (*more)(FILE *); int waits; } cmds[] = {
    {"formats", cmd_formats, formats_usage, NULL, 0},
    {"info", cmd_info, info_usage, NULL, 0},
    {"table", cmd_table, table_usage, NULL, 0},
    {"quantize", cmd_quantize, quantize_usage, NULL, 0},
    {"quantize-tensor", cmd_quantize_tensor, quantize_tensor_usage, NULL, 0},
    {"decode", cmd_decode, decode_usage, NULL, 0},
    {"whatif", cmd_whatif, whatif_usage, NULL, 0},
    {"stats", cmd_stats, stats_usage, NULL, 0},
    {"gen", cmd_gen, gen_usage, NULL, 0},
    {"gemm", cmd_gemm, gemm_usage, NULL, 1},
    {"mma", cmd_mma, mma_usage, NULL, 0},
    {"gpu-check", cmd_gpu_check, gpu_check_usage, NULL, 0},
    {"gpu-probe", cmd_gpu_probe, gpu_probe_usage, NULL, 0},
    {"train", cmd_train, train_usage, train_keys_help, 1},
    {"study", cmd_study, study_usage, study_names_help, 1},
  };
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    if (strcmp(cmd, cmds[i].name)) continue;
    cli_command = cmds[i].name;
    if (wants_help(argc - 1, argv + 1)) {
      fputs(cmds[i].usage, stdout);
      if (cmds[i].more) cmds[i].more(stdout);
      return 0;
    }
    if (cmds[i].waits) cli_bounded_waits(argv);
    return cmds[i].fn(argc - 1, argv + 1);
  }
  cli_die("unknown command '%s' (accepted: formats, info, table, quantize, quantize-tensor, decode, whatif, stats, gen, gemm, mma, gpu-check, gpu-probe, train, study; see exmy --help)", cmd);
  return EXIT_USAGE;
}
