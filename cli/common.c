/* common.c: error reporting, option scanning and the rounding options the
 * `exmy` subcommands share. */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

const char *cli_command;

void cli_die(const char *fmt, ...) {
  char msg[2 * EXMY_ERRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fflush(stdout);
  /* Every message names its command once: "exmy: CMD: ..." */
  const size_t cl = cli_command ? strlen(cli_command) : 0;
  if (cli_command && !(strncmp(msg, cli_command, cl) == 0 && msg[cl] == ':'))
    fprintf(stderr, "exmy: %s: %s\n", cli_command, msg);
  else
    fprintf(stderr, "exmy: %s\n", msg);
  exit(EXIT_USAGE);
}

void cli_parse_format(const char *text, exmy_format *f) {
  char err[EXMY_ERRLEN];
  if (exmy_format_parse(text, f, err, sizeof err)) cli_die("%s", err);
}

uint64_t cli_parse_u64(const char *opt, const char *v, uint64_t lo, uint64_t hi) {
  char *end;
  errno = 0;
  if (!v || !*v || *v == '-' || *v == ' ')
    cli_die("%s: bad value '%s' (accepted: an integer %llu..%llu)", opt, v ? v : "", (unsigned long long)lo, (unsigned long long)hi);
  unsigned long long x = strtoull(v, &end, 0);
  if (*end || errno || x < lo || x > hi)
    cli_die("%s: bad value '%s' (accepted: an integer %llu..%llu)", opt, v, (unsigned long long)lo, (unsigned long long)hi);
  return x;
}

void cli_print_exact(FILE *out, double v) {
  if (isnan(v)) fputs(signbit(v) ? "-nan" : "nan", out);
  else if (isinf(v)) fputs(v < 0 ? "-inf" : "inf", out);
  else fprintf(out, "%.800g", v); /* glibc prints exact digits; %g drops trailing zeros */
}

float *cli_read_f32_matrix(const char *cmd, const char *path, size_t *rows, size_t *cols) {
  exmy_array a;
  char err[EXMY_ERRLEN];
  if (exmy_npy_read(path, &a, err, sizeof err)) cli_die("%s: %s", cmd, err);
  if (a.dtype != EXMY_DTYPE_F32 && a.dtype != EXMY_DTYPE_F64) {
    const char *dt = exmy_dtype_name(a.dtype);
    exmy_array_free(&a);
    cli_die("%s: %s: dtype %s is not a float tensor (accepted: float32, float64)", cmd, path, dt);
  }
  *cols = a.ndim ? a.shape[a.ndim - 1] : 1;
  *rows = *cols ? a.count / *cols : 0;
  if (a.ndim == 1) *rows = 1;
  float *x = malloc(a.count * sizeof *x + 1);
  if (!x) cli_die("%s: out of memory for %zu elements", cmd, a.count);
  if (a.dtype == EXMY_DTYPE_F32) memcpy(x, a.data, a.count * sizeof *x);
  else
    for (size_t i = 0; i < a.count; i++) x[i] = (float)((double *)a.data)[i];
  exmy_array_free(&a);
  return x;
}

void cli_opts_init(cli_opts *o, const char *cmd, int argc, char **argv) {
  memset(o, 0, sizeof *o);
  o->cmd = cmd;
  o->argc = argc;
  o->argv = argv;
  o->i = 0;
}

int cli_next(cli_opts *o) {
  if (++o->i >= o->argc) return 0;
  const char *a = o->argv[o->i];
  const char *eq = strchr(a, '=');
  o->val = NULL;
  o->positional = !(a[0] == '-' && a[1] == '-');
  if (!o->positional && eq && (size_t)(eq - a) < sizeof o->key) {
    memcpy(o->key, a, (size_t)(eq - a));
    o->key[eq - a] = 0;
    o->val = eq + 1;
  } else {
    snprintf(o->key, sizeof o->key, "%s", a);
  }
  if (o->positional && a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9'))
    cli_die("%s: unknown option '%s' (see exmy %s --help)", o->cmd, a, o->cmd);
  return 1;
}

const char *cli_value(cli_opts *o) {
  if (o->val) return o->val;
  if (o->i + 1 >= o->argc) cli_die("%s: option '%s' needs a value", o->cmd, o->key);
  return o->argv[++o->i];
}

void cli_no_value(cli_opts *o) {
  if (o->val) cli_die("%s: option '%s' takes no value (got '%s')", o->cmd, o->key, o->val);
}

int cli_rounding_option(cli_opts *o, exmy_rounding *r) {
  const char *k = o->key;
  if (!strcmp(k, "--round")) {
    const char *v = cli_value(o);
    char e[EXMY_ERRLEN];
    if (exmy_round_mode_parse(v, &r->mode, e, sizeof e)) cli_die("%s: %s", o->cmd, e);
  } else if (!strcmp(k, "--saturate")) {
    const char *v = o->val;
    if (!v || !strcmp(v, "finite")) r->sat = EXMY_SAT_FINITE;
    else if (!strcmp(v, "propagate")) r->sat = EXMY_SAT_PROPAGATE;
    else if (!strcmp(v, "none")) r->sat = EXMY_SAT_NONE;
    else cli_die("%s: bad saturation '%s' (accepted: finite, propagate, none)", o->cmd, v);
  } else if (!strcmp(k, "--ftz")) {
    cli_no_value(o);
    r->ftz = 1;
  } else if (!strcmp(k, "--daz")) {
    cli_no_value(o);
    r->daz = 1;
  } else if (!strcmp(k, "--seed")) {
    r->seed = cli_parse_u64("--seed", cli_value(o), 0, UINT64_MAX);
  } else if (!strcmp(k, "--stream")) {
    r->stream = cli_parse_u64("--stream", cli_value(o), 0, UINT64_MAX);
  } else if (!strcmp(k, "--sr-bits")) {
    r->sr_bits = (int)cli_parse_u64("--sr-bits", cli_value(o), 1, 64);
  } else {
    return 0;
  }
  return 1;
}

void cli_write_npy(const char *cmd, const char *path, exmy_dtype dt, size_t rows, size_t cols, void *data) {
  exmy_array a;
  char err[EXMY_ERRLEN];
  memset(&a, 0, sizeof a);
  a.dtype = dt;
  a.ndim = 2;
  a.shape[0] = rows;
  a.shape[1] = cols;
  a.count = rows * cols;
  a.data = data;
  if (exmy_npy_write(path, &a, err, sizeof err)) cli_die("%s: %s", cmd, err);
}

exmy_dtype cli_code_dtype(const exmy_format *f) {
  const int cb = exmy_code_bytes(f);
  return cb == 1 ? EXMY_DTYPE_U8 : cb == 2 ? EXMY_DTYPE_U16 : cb == 4 ? EXMY_DTYPE_U32 : EXMY_DTYPE_U64;
}

void cli_quantize(const char *cmd, const char *recipe_text, const exmy_format *f, const exmy_rounding *r,
                  const float *x, size_t rows, size_t cols, exmy_qtensor *q) {
  exmy_recipe rc;
  char err[EXMY_ERRLEN];
  if (exmy_recipe_parse(recipe_text, &rc, err, sizeof err)) cli_die("%s: %s", cmd, err);
  exmy_recipe_state st; /* one tensor: a delayed recipe starts from scale 1 */
  if (exmy_recipe_state_new(&rc, &st, err, sizeof err) ||
      exmy_recipe_quantize(&rc, f, r, x, rows, cols, &st, q, NULL, err, sizeof err))
    cli_die("%s: %s", cmd, err);
  exmy_recipe_state_free(&st);
}

/* Split a list on ';', and on ',' where the next piece starts a new item
 * (is_head) rather than continuing one ("e4m3,bias=11", "block:1x128,fp32"). */
int cli_split_list(char *s, char **out, int max, int (*is_head)(const char *piece, size_t len)) {
  int n = 0;
  char *start = s;
  for (char *p = s;; p++) {
    int end = *p == 0, sep = *p == ';';
    if (*p == ',') sep = is_head(p + 1, strcspn(p + 1, ",;"));
    if (end || sep) {
      if (n >= max) cli_die("too many list items (at most %d)", max);
      *p = 0;
      if (*start) out[n++] = start;
      start = p + 1;
      if (end) break;
    }
  }
  return n;
}

/* The gnuplot terminal a --plot file's extension names (dies on any other),
 * and the file checked writable before any work: a folder, a missing folder
 * or a read-only place is an error before gnuplot runs. */
const char *cli_plot_terminal(const char *cmd, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  const char *ext = dot ? dot + 1 : "";
  if (strchr(path, '\n') || strchr(path, '\r')) cli_die("%s: --plot: a line break in the file name '%s'", cmd, path);
  struct stat st;
  if (!*base || (stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
    cli_die("%s: --plot '%s' is a folder (give a file: out.png, out.svg or out.pdf)", cmd, path);
  const char *term = !strcasecmp(ext, "png") ? "pngcairo size 1200,760 font 'sans,10'"
                     : !strcasecmp(ext, "svg") ? "svg size 1200,760 font 'sans,10' background rgb 'white'"
                     : !strcasecmp(ext, "pdf") ? "pdfcairo size 12in,7.6in font 'sans,10'"
                     : NULL;
  if (!term && dot) cli_die("%s: --plot '%s': unsupported extension '.%s' (accepted: .png, .svg, .pdf)", cmd, path, ext);
  if (!term) cli_die("%s: --plot '%s' has no extension (accepted: .png, .svg, .pdf)", cmd, path);
  const int existed = access(path, F_OK) == 0;
  const int fd = open(path, O_WRONLY | O_CREAT, 0666);
  if (fd < 0) cli_die("%s: --plot: cannot write '%s': %s", cmd, path, strerror(errno));
  close(fd);
  if (!existed) unlink(path); /* gnuplot creates it */
  return term;
}
