/* cli.h: helpers shared by the `exmy` command's source files. */
#ifndef EXMY_CLI_H
#define EXMY_CLI_H
#include "exmy.h"
#include <stdio.h>

#define EXIT_USAGE 2

/* The running command (set by main): cli_die's messages start with it. */
extern const char *cli_command;
/* One-line error on stderr ("exmy: CMD: ..."), exit status 2. */
void cli_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Start the command again with a short OpenMP spin (GOMP_SPINCOUNT) unless the user set
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT: idle threads sleep instead of taking busy cores. */
void cli_bounded_waits(char **argv);
/* The gnuplot terminal for a --plot FILE's extension (.png, .svg, .pdf), the
 * file checked writable first; dies naming `cmd` and the bad text otherwise. */
const char *cli_plot_terminal(const char *cmd, const char *path);
/* study_mpi.c (configure --with-mpi): under mpirun with 2+ ranks, MPI on and
 * so's queue set (rank 0 serves runs and writes the report), 1; else 0. */
struct study_opts;
int study_mpi_begin(struct study_opts *so);
void study_mpi_end(void);
void cli_parse_format(const char *text, exmy_format *f);
uint64_t cli_parse_u64(const char *opt, const char *v, uint64_t lo, uint64_t hi);
/* Round a number's text (strtod's grammar: decimal, hex-float, inf, nan) to
 * f exactly (number.c, MPFR), flags OR-ed into *flags.  -1: not a number. */
int cli_round_text(const char *text, const exmy_format *f, const exmy_rounding *r, uint64_t index, uint64_t *code,
                   unsigned *flags);
/* Exact decimal of a double; nan, -nan, inf, -inf. */
void cli_print_exact(FILE *out, double v);
/* Read a .npy tensor as float32 rows x cols (1-D: 1 x n; N-D: the last axis is
 * cols).  float64 is rounded to float32 (rne). */
float *cli_read_f32_matrix(const char *cmd, const char *path, size_t *rows, size_t *cols);

/* Option scanning: --key, --key=value, --key value, and positionals. */
typedef struct cli_opts {
  const char *cmd;
  int argc;
  char **argv;
  int i;
  char key[64];     /* the option name (with --), or the positional text */
  const char *val;  /* value after '=', or NULL */
  int positional;
} cli_opts;
void cli_opts_init(cli_opts *o, const char *cmd, int argc, char **argv);
int cli_next(cli_opts *o);              /* 0 at the end */
const char *cli_value(cli_opts *o);     /* the option's value (after '=' or the next argument) */
void cli_no_value(cli_opts *o);         /* die if a flag was given a value */
/* Rounding options shared by quantize commands: --round --saturate --ftz
 * --daz --seed --stream --sr-bits.  Returns 1 when o->key was one. */
int cli_rounding_option(cli_opts *o, exmy_rounding *r);
/* Write a rows x cols .npy (dies with the error). */
void cli_write_npy(const char *cmd, const char *path, exmy_dtype dt, size_t rows, size_t cols, void *data);
/* mkdir -p: 0, or -1 with err naming the part that could not be made. */
/* The unsigned dtype that holds a format's codes. */
exmy_dtype cli_code_dtype(const exmy_format *f);
/* Parse the recipe and quantize x into q (dies with the error). */
void cli_quantize(const char *cmd, const char *recipe_text, const exmy_format *f, const exmy_rounding *r,
                  const float *x, size_t rows, size_t cols, exmy_qtensor *q);
/* Split a list in place on ';', and on ',' where the next piece starts a new
 * item (is_head); returns the count (dies beyond max). */
int cli_split_list(char *s, char **out, int max, int (*is_head)(const char *piece, size_t len));
/* the scaled-tensor commands (tensor.c) */
extern const char *quantize_tensor_usage, *whatif_usage, *stats_usage, *gen_usage;
int cmd_quantize_tensor(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_gen(int argc, char **argv);
/* decoding codes (decode.c) */
extern const char *decode_usage;
int cmd_decode(int argc, char **argv);
/* the emulated GEMM (gemm.c) */
extern const char *gemm_usage;
int cmd_gemm(int argc, char **argv);
/* one matrix-unit instruction (mma.c) */
extern const char *mma_usage;
int cmd_mma(int argc, char **argv);
/* the GPU commands (gpu.c) */
extern const char *gpu_check_usage, *gpu_probe_usage;
int cmd_gpu_check(int argc, char **argv);
int cmd_gpu_probe(int argc, char **argv);
/* training (train.c) and the studies (study.c) */
extern const char *train_usage, *study_usage;
void study_names_help(FILE *out);
void train_keys_help(FILE *out);
int cmd_train(int argc, char **argv);
int cmd_study(int argc, char **argv);
#endif
