/* mma.c: the mma command: one matrix-unit instruction D = A*B + C, bit for
 * bit (docs/mma.md), and the replay of recorded GPU outputs. */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *mma_usage =
  "usage: exmy mma INSTR --a A --b B [--c C] [--scale-a SA --scale-b SB] [--out D.npy]\n"
  "       exmy mma INSTR --replay A.txt B.txt C.txt D.txt [--c-zero | --c-round] [--show N]\n"
  "       exmy mma --list | --datapaths\n"
  "D = A*B + C for one tile of a tensor-core / matrix-core instruction, bit for bit as its\n"
  "datapath (docs/mma.md).  INSTR is named as PTX and the CDNA ISA name it, e.g.\n"
  "sm_90:wgmma.f32.e4m3.e4m3, sm_89:mma.m16n8k32.f32.e5m2, sm_100:tcgen05.kind::mxf4nvf4,\n"
  "cdna3:v_mfma_f32_16x16x32_fp8_fp8; append ,zero=v1 for MMA-Sim v1's zero-term rule.\n"
  "  --list            every instruction name with its datapath\n"
  "  --datapaths       the datapath table: algorithm, products per fused sum L, fraction\n"
  "                    bits F, zero-term exponent, output conversion, source\n"
  "  --a A, --b B      A (m x k) and B (k x n): a .npy of float32/float64/float16/bfloat16\n"
  "                    values, or hex codes of the operand format ('0x38,0x40,...' or spaces),\n"
  "                    row-major (A 1 x k, B k x 1 unless --m/--n say otherwise)\n"
  "  --c C             C (m x n), .npy or hex codes of C's format (default zeros)\n"
  "  --scale-a, --scale-b  block scales (m x k/block, k/block x n), .npy values or hex codes\n"
  "  --m M, --n N      the tile's rows of A and columns of B for hex input\n"
  "  --out D.npy       write D's codes (uint32 float bits for f32, uint16 for f16);\n"
  "                    otherwise D is printed, one row per line, as hex code = value\n"
  "  --replay A B C D  recorded dot products (Khattak & Mikaitis's format: one per line; A, B\n"
  "                    as K hex float32 words, C and D as 32-bit binary strings, an fp16 D\n"
  "                    widened to fp32): prints 'N of M agree'; exit 1 on any mismatch\n"
  "  --c-zero          replay with C = 0 (sets recorded without C)\n"
  "  --c-round         replay with the recorded fp32 C rounded to C's format (nearest even)\n"
  "  --show N          print the first N mismatches in hex (default 5)\n";

static void list(void) {
  const size_t n = exmy_mma_count();
  for (size_t i = 0; i < n; i++) {
    char name[160], err[EXMY_ERRLEN];
    exmy_mma_get(i, name, sizeof name);
    exmy_mma_instr in;
    if (exmy_mma_parse(name, &in, err, sizeof err)) cli_die("mma: %s", err);
    printf("%-48s %s%s%s\n", name, in.datapath, in.has_scale ? ", scales " : "", in.has_scale ? in.s_fmt.name : "");
  }
}

/* Values of a .npy (float types), or hex codes of fmt; *rows x *cols. */
static double *read_operand(const char *what, const char *text, const exmy_format *f, size_t rows, size_t cols,
                            size_t *r_out, size_t *c_out) {
  const size_t len = strlen(text);
  if (len > 4 && !strcmp(text + len - 4, ".npy")) {
    exmy_array a;
    char err[EXMY_ERRLEN];
    if (exmy_npy_read(text, &a, err, sizeof err)) cli_die("mma: %s", err);
    double *v = malloc(sizeof(double) * (a.count ? a.count : 1));
    if (!v) cli_die("mma: out of memory");
    for (size_t i = 0; i < a.count; i++) {
      switch (a.dtype) {
      case EXMY_DTYPE_F32: v[i] = ((const float *)a.data)[i]; break;
      case EXMY_DTYPE_F64: v[i] = ((const double *)a.data)[i]; break;
      case EXMY_DTYPE_F16: v[i] = exmy_f16_to_f64(((const uint16_t *)a.data)[i]); break;
      case EXMY_DTYPE_BF16: v[i] = exmy_bf16_to_f64(((const uint16_t *)a.data)[i]); break;
      default: cli_die("mma: %s %s holds %s (accepted: float32, float64, float16, bfloat16 values)", what, text,
                       exmy_dtype_name(a.dtype));
      }
    }
    /* rows: the leading axes' product (not count / columns: a .npy may have 0 columns) */
    size_t rows_n = 1;
    for (int d = 0; d + 1 < (int)a.ndim; d++) rows_n *= a.shape[d];
    *r_out = rows_n;
    *c_out = a.ndim >= 1 ? a.shape[a.ndim - 1] : 1;
    exmy_array_free(&a);
    return v;
  }
  double *v = malloc(sizeof(double) * (rows * cols + 1));
  if (!v) cli_die("mma: out of memory");
  size_t n = 0;
  const char *p = text;
  while (*p) {
    while (*p == ',' || *p == ' ') p++;
    if (!*p) break;
    char *end;
    errno = 0;
    const unsigned long long code = strtoull(p, &end, 16);
    if (end == p || errno || (*end && *end != ',' && *end != ' ') || code > f->mag_mask + f->sign_mask)
      cli_die("mma: bad %s code '%.*s' (hex codes of %s, e.g. 0x3c)", what, (int)strcspn(p, ", "), p, f->name);
    if (n == rows * cols) cli_die("mma: %s has more than %zu codes", what, rows * cols);
    v[n++] = exmy_code_to_f64(f, code);
    p = end;
  }
  if (n != rows * cols) cli_die("mma: %s has %zu codes, expected %zu x %zu", what, n, rows, cols);
  *r_out = rows;
  *c_out = cols;
  return v;
}

static void print_d(const exmy_mma_instr *in, size_t m, size_t n, const void *d) {
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < n; j++) {
      const uint64_t c = exmy_code_get(&in->d_fmt, d, i * n + j);
      printf("%s0x%0*llx = ", j ? "  " : "", exmy_code_hex_digits(&in->d_fmt), (unsigned long long)c);
      cli_print_exact(stdout, exmy_code_to_f64(&in->d_fmt, c));
    }
    printf("\n");
  }
}

/* ---- replay ------------------------------------------------------------------ */

static FILE *open_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) cli_die("mma: cannot open '%s': %s", path, strerror(errno));
  return f;
}

static int read_line(FILE *f, char *buf, size_t len, const char *path, size_t line) {
  if (!fgets(buf, (int)len, f)) return 0;
  if (!strchr(buf, '\n') && !feof(f)) cli_die("mma: %s line %zu is too long", path, line);
  return 1;
}

static double f32_value(uint32_t bits) {
  float x;
  memcpy(&x, &bits, 4);
  return (double)x;
}

static uint32_t parse_bin32(const char *s, const char *path, size_t line) {
  uint32_t v = 0;
  int n = 0;
  for (; *s == '0' || *s == '1'; s++, n++) v = (v << 1) | (uint32_t)(*s - '0');
  if (n != 32) cli_die("mma: %s line %zu: expected a 32-bit binary string", path, line);
  return v;
}

static int replay(const exmy_mma_instr *in, char **files, int c_zero, int c_round, int show) {
  if (in->has_scale) cli_die("mma: --replay has no scale files; %s needs block scales", in->name);
  FILE *fa = open_text(files[0]), *fb = open_text(files[1]), *fc = open_text(files[2]), *fd = open_text(files[3]);
  static char la[65536], lb[65536], lc[256], ld[256];
  const size_t k = (size_t)in->k;
  double *a = malloc(sizeof(double) * k * 2), *b = a + k;
  exmy_format f32;
  char err[EXMY_ERRLEN];
  if (!a || exmy_format_parse("f32", &f32, err, sizeof err)) cli_die("mma: out of memory");
  size_t total = 0, agree = 0;
  for (size_t line = 1;; line++) {
    const int ra = read_line(fa, la, sizeof la, files[0], line), rb = read_line(fb, lb, sizeof lb, files[1], line);
    const int rc = read_line(fc, lc, sizeof lc, files[2], line), rd = read_line(fd, ld, sizeof ld, files[3], line);
    if (!ra && !rb && !rc && !rd) break;
    if (!(ra && rb && rc && rd)) cli_die("mma: the replay files end at different lines (line %zu)", line);
    if (strspn(la, " \t\r\n") == strlen(la)) cli_die("mma: %s line %zu is empty", files[0], line);
    char *pa = la, *pb = lb;
    for (size_t l = 0; l < 2 * k; l++) {
      char **pp = l < k ? &pa : &pb;
      char *end;
      errno = 0;
      const unsigned long w = strtoul(*pp, &end, 16);
      if (end == *pp || errno || w > 0xFFFFFFFFul)
        cli_die("mma: %s line %zu: expected %zu hex float32 words (%s has k = %zu)", files[l < k ? 0 : 1], line, k,
                in->name, k);
      (l < k ? a : b)[l % k] = f32_value((uint32_t)w);
      *pp = end;
    }
    if (strspn(pa, " \t\r\n") != strlen(pa) || strspn(pb, " \t\r\n") != strlen(pb))
      cli_die("mma: line %zu has more than k = %zu words (%s)", line, k, in->name);
    double c = c_zero ? 0.0 : f32_value(parse_bin32(lc, files[2], line));
    if (c_round) { /* the recorded fp32 C converted to C's format (nearest even) first */
      exmy_rounding r = exmy_rounding_default();
      c = exmy_code_to_f64(&in->c_fmt, exmy_from_f64(&in->c_fmt, &r, c, 0, NULL));
    }
    const uint32_t want = parse_bin32(ld, files[3], line);
    uint32_t d32 = 0;
    uint16_t d16 = 0;
    void *d = in->d_fmt.bits == 16 ? (void *)&d16 : (void *)&d32;
    if (exmy_mma(in, 1, 1, a, b, &c, NULL, NULL, d, err, sizeof err)) cli_die("%s (line %zu)", err, line);
    /* an fp16 D is compared widened to fp32, as recorded (any NaN matches any NaN) */
    const double got_v = exmy_code_to_f64(&in->d_fmt, exmy_code_get(&in->d_fmt, d, 0));
    exmy_rounding r = exmy_rounding_default();
    const uint32_t got = in->d_fmt.bits == 16 ? (uint32_t)exmy_from_f64(&f32, &r, got_v, 0, NULL) : d32;
    const int ok = got == want || (in->d_fmt.bits == 16 && isnan(got_v) && isnan(f32_value(want)));
    total++;
    if (ok) agree++;
    else if (show-- > 0)
      printf("line %zu: recorded 0x%08x, %s gives 0x%08x\n", line, (unsigned)want, in->name, (unsigned)got);
  }
  fclose(fa), fclose(fb), fclose(fc), fclose(fd);
  free(a);
  printf("%zu of %zu agree\n", agree, total);
  return agree == total ? 0 : 1;
}

int cmd_mma(int argc, char **argv) {
  const char *name = NULL, *ta = NULL, *tb = NULL, *tc = NULL, *tsa = NULL, *tsb = NULL, *out = NULL;
  char *files[4];
  int nfiles = -1, c_zero = 0, c_round = 0, do_list = 0;
  size_t m = 1, n = 1, show = 5;
  cli_opts o;
  cli_opts_init(&o, "mma", argc, argv);
  while (cli_next(&o)) {
    if (nfiles >= 0 && nfiles < 4 && o.positional) files[nfiles++] = argv[o.i];
    else if (!strcmp(o.key, "--list")) { cli_no_value(&o); do_list = 1; }
    else if (!strcmp(o.key, "--datapaths")) { cli_no_value(&o); do_list = 2; }
    else if (!strcmp(o.key, "--a")) ta = cli_value(&o);
    else if (!strcmp(o.key, "--b")) tb = cli_value(&o);
    else if (!strcmp(o.key, "--c")) tc = cli_value(&o);
    else if (!strcmp(o.key, "--scale-a")) tsa = cli_value(&o);
    else if (!strcmp(o.key, "--scale-b")) tsb = cli_value(&o);
    else if (!strcmp(o.key, "--out")) out = cli_value(&o);
    else if (!strcmp(o.key, "--m")) m = (size_t)cli_parse_u64("--m", cli_value(&o), 1, 1u << 20);
    else if (!strcmp(o.key, "--n")) n = (size_t)cli_parse_u64("--n", cli_value(&o), 1, 1u << 20);
    else if (!strcmp(o.key, "--show")) show = (size_t)cli_parse_u64("--show", cli_value(&o), 0, 1u << 30);
    else if (!strcmp(o.key, "--c-zero")) { cli_no_value(&o); c_zero = 1; }
    else if (!strcmp(o.key, "--c-round")) { cli_no_value(&o); c_round = 1; }
    else if (!strcmp(o.key, "--replay")) {
      if (o.val) files[0] = (char *)o.val, nfiles = 1;
      else nfiles = 0;
    } else if (!o.positional) cli_die("mma: unknown option '%s' (see exmy mma --help)", argv[o.i]);
    else if (!name) name = argv[o.i];
    else cli_die("mma: unexpected argument '%s' (expected one INSTR)", argv[o.i]);
  }
  if (do_list == 1) list();
  for (size_t i = 0; do_list == 2 && i < exmy_mma_datapath_count(); i++) {
    char line[256];
    exmy_mma_datapath_get(i, line, sizeof line);
    printf("%s\n", line);
  }
  if (do_list) return 0;
  if (!name) cli_die("mma: no instruction given (exmy mma --list prints them)");
  exmy_mma_instr in;
  char err[EXMY_ERRLEN];
  if (exmy_mma_parse(name, &in, err, sizeof err)) cli_die("%s", err);
  if (nfiles >= 0) {
    if (nfiles != 4) cli_die("mma: --replay needs four files A B C D (got %d)", nfiles);
    return replay(&in, files, c_zero, c_round, (int)(show > 1000000 ? 1000000 : show));
  }
  if (!ta || !tb) cli_die("mma: --a and --b are required (or --replay, --list)");
  const size_t k = (size_t)in.k;
  size_t ar, ac, br, bc, cr, cc;
  double *a = read_operand("A", ta, &in.a_fmt, m, k, &ar, &ac);
  double *b = read_operand("B", tb, &in.b_fmt, k, n, &br, &bc);
  if (ac != k) cli_die("mma: A has %zu columns, %s has k = %zu", ac, in.name, k);
  if (br != k) cli_die("mma: B has %zu rows, %s has k = %zu", br, in.name, k);
  m = ar, n = bc;
  double *c = tc ? read_operand("C", tc, &in.c_fmt, m, n, &cr, &cc) : calloc(m * n, sizeof(double));
  if (!c) cli_die("mma: out of memory");
  if (tc && (cr != m || cc != n)) cli_die("mma: C is %zu x %zu, expected %zu x %zu", cr, cc, m, n);
  double *sa = NULL, *sb = NULL;
  if (in.has_scale) {
    if (!tsa || !tsb) cli_die("mma: %s needs --scale-a and --scale-b", in.name);
    const size_t nb = k / (size_t)in.block;
    size_t r1, c1, r2, c2;
    sa = read_operand("scale A", tsa, &in.s_fmt, m, nb, &r1, &c1);
    sb = read_operand("scale B", tsb, &in.s_fmt, nb, n, &r2, &c2);
    if (r1 != m || c1 != nb) cli_die("mma: scale A is %zu x %zu, expected %zu x %zu", r1, c1, m, nb);
    if (r2 != nb || c2 != n) cli_die("mma: scale B is %zu x %zu, expected %zu x %zu", r2, c2, nb, n);
  } else if (tsa || tsb) {
    cli_die("mma: %s takes no block scales", in.name);
  }
  void *d = calloc(m * n, 8);
  if (!d) cli_die("mma: out of memory");
  if (exmy_mma(&in, m, n, a, b, c, sa, sb, d, err, sizeof err)) cli_die("%s", err);
  if (out) cli_write_npy("mma", out, cli_code_dtype(&in.d_fmt), m, n, d);
  else print_d(&in, m, n, d);
  free(a), free(b), free(c), free(sa), free(sb), free(d);
  return 0;
}
