/* study.c: `exmy study [NAME]`, the FP8 stability studies
 * (experiments/study.h, docs/studies/README.md). */
#include "config.h"
#include "cli/cli.h"
#include "experiments/study.h"
#include "experiments/xp.h"

#include <stdlib.h>
#include <string.h>

const char *study_usage =
  "usage: exmy study [NAME | FILE] [options]\n"
  "Run an FP8 stability study: a set of tiny training runs (the xp engine), then a results\n"
  "folder with runs.csv, summary.json, per-run folders (runs/LABEL/), gnuplot plots (SVG and\n"
  "PNG) and report.md, whose \"Claims and verdicts\" section judges each published claim the\n"
  "study file states (reproduced / not reproduced / inconclusive / not testable here, with n,\n"
  "the paired CI and the rule).  Without NAME: the default study (fp32 vs bf16 vs HYBRID FP8\n"
  "vs E8M2 round-toward-zero on Tiny Shakespeare, 5 seeds, about 3 minutes on 2 cores).\n"
  "NAME: a built-in study (listed at the end; --list describes them; docs/studies/ has a real\n"
  "run of each).  FILE: a study file (a path with a '/' or ending .study; the grammar:\n"
  "docs/studies/README.md).\n"
  "  --out DIR          results folder (default results/NAME)\n"
  "  --steps N          training steps of every run (calibration: the bf16 pretraining)\n"
  "  --seeds N          seeds 1..N of every configuration\n"
  "  --lrs LIST         learning rates, comma-separated (default: the study's)\n"
  "  --threads N        runs in parallel, one thread each (default: all cores); the results\n"
  "                     do not depend on it\n"
  "  --tiny             the make-check size: a 1-layer 16-wide GPT, a few steps (seconds)\n"
  "  --full             the bigger sweep: more steps, seeds and learning rates\n"
  "  --data NAME|FILE   the corpus: shakespeare (shipped, the default), builtin (generated text)\n"
  "                     or a text file\n"
  "  --set KEY=VALUE    an engine config key for every run (repeatable; docs/training.md)\n"
  "  --no-plots         do not run gnuplot (the plot data and scripts are still written)\n"
  "  --plot FILE        the main figure (the claims' gaps with CIs, else the first plot) also as\n"
  "                     FILE: .png, .svg or .pdf\n"
  "  --list             the studies with one-line descriptions\n"
  "  --dry-run          print every run's config (keys that differ from the defaults)\n"
  "  --shard I/N        run only runs I, I+N, I+2N ... (of the --dry-run list), no report; default\n"
  "                     from SLURM_ARRAY_TASK_ID (minus SLURM_ARRAY_TASK_MIN) + 1 / SLURM_ARRAY_TASK_COUNT\n"
  "  --report           run nothing: the report from the runs done so far, naming the missing ones\n"
  "  --refine           run nothing: from the runs done so far, add the next learning rate of each\n"
  "                     lr_edge claim whose edge is censored or wider than its effect to\n"
  "                     DIR/refine.lrs (docs/studies/edge.md); rerun (or reshard) to run them\n"
  "A rerun skips finished runs (runs/LABEL/result.txt with the run's config hash) and resumes\n"
  "interrupted ones from their checkpoint (runs/LABEL/ckpt.bin, every steps/10 steps).\n"
#ifdef HAVE_MPI
  "MPI: built; `mpirun -n N exmy study ...` (N >= 2) spreads the runs over ranks 1..N-1 (a dynamic\n"
  "queue) and rank 0 writes the report: the same results as one process.\n"
#else
  "MPI: not built (./configure --with-mpi; Debian: openmpi-bin libopenmpi-dev).\n"
#endif
  "Progress: one line per finished run with an ETA; at the end a table, the verdicts, and\n"
  "where the report and plots are.  Rules (docs/studies/README.md): a spike is a loss above\n"
  "spike_factor x the median of the previous spike_window losses; divergence is a non-finite\n"
  "loss or a final loss (the mean of the last 10% of steps) above the first step's.\n";

int cmd_study(int argc, char **argv) {
  study_opts so;
  study_opts_init(&so);
  const char *name = NULL;
  int list = 0, tiny = 0, full = 0;
  const char *shard = NULL;
  cli_opts o;
  cli_opts_init(&o, "study", argc, argv);
  while (cli_next(&o)) {
    const char *k = o.key;
    if (o.positional) {
      if (name) cli_die("study: unexpected argument '%s' (one study name at most)", argv[o.i]);
      name = argv[o.i];
    } else if (!strcmp(k, "--out")) so.out_dir = cli_value(&o);
    else if (!strcmp(k, "--steps")) so.steps = (long)cli_parse_u64("--steps", cli_value(&o), 1, 100000000);
    else if (!strcmp(k, "--seeds")) so.seeds = (int)cli_parse_u64("--seeds", cli_value(&o), 1, 64);
    else if (!strcmp(k, "--lrs")) so.lrs = cli_value(&o);
    else if (!strcmp(k, "--threads")) so.threads = (int)cli_parse_u64("--threads", cli_value(&o), 1, 1024);
    else if (!strcmp(k, "--tiny")) { cli_no_value(&o); tiny = 1; }
    else if (!strcmp(k, "--full")) { cli_no_value(&o); full = 1; }
    else if (!strcmp(k, "--data")) so.data = cli_value(&o);
    else if (!strcmp(k, "--set")) {
      const char *v = cli_value(&o);
      if (!strchr(v, '=') || v[0] == '=') cli_die("study: --set '%s': expected KEY=VALUE", v);
      if (so.nset >= STUDY_MAX_SET) cli_die("study: --set: at most %d", STUDY_MAX_SET);
      so.set[so.nset++] = v;
    } else if (!strcmp(k, "--no-plots")) { cli_no_value(&o); so.plots = 0; }
    else if (!strcmp(k, "--list")) { cli_no_value(&o); list = 1; }
    else if (!strcmp(k, "--dry-run")) { cli_no_value(&o); so.dry_run = 1; }
    else if (!strcmp(k, "--report")) { cli_no_value(&o); so.report_only = 1; }
    else if (!strcmp(k, "--refine")) { cli_no_value(&o); so.report_only = so.refine = 1; }
    else if (!strcmp(k, "--plot")) so.plot_file = cli_value(&o);
    else if (!strcmp(k, "--shard")) shard = cli_value(&o);
    else cli_die("study: unknown option '%s' (see exmy study --help)", argv[o.i]);
  }
  if (tiny && full) cli_die("study: --tiny and --full exclude each other");
  if (so.plot_file) {
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) cli_die("study: --plot needs gnuplot (Debian: apt-get install gnuplot-nox)");
    so.plot_term = cli_plot_terminal("study", so.plot_file);
  }
  /* --shard I/N, else a Slurm array task's place in its array */
  char sb[64];
  const char *tid = getenv("SLURM_ARRAY_TASK_ID"), *tcnt = getenv("SLURM_ARRAY_TASK_COUNT");
  const char *tmin = getenv("SLURM_ARRAY_TASK_MIN");
  if (!shard && !so.report_only && tid && tcnt && *tid && *tcnt) {
    snprintf(sb, sizeof sb, "%ld/%s", strtol(tid, NULL, 10) - (tmin ? strtol(tmin, NULL, 10) : 0) + 1, tcnt);
    shard = sb;
  }
  if (shard) {
    char *end;
    const long i = strtol(shard, &end, 10);
    const long n = *end == '/' ? strtol(end + 1, &end, 10) : 0;
    if (*end || n < 1 || n > 100000 || i < 1 || i > n)
      cli_die("study: --shard '%s': expected I/N with 1 <= I <= N (from SLURM_ARRAY_TASK_ID/COUNT when not given)", shard);
    so.shard_i = (int)i;
    so.shard_n = (int)n;
  }
  so.size = tiny ? STUDY_TINY : full ? STUDY_FULL : STUDY_DEFAULT;
  if (list) {
    study_list(stdout, 0);
    return 0;
  }
  if (name && !study_exists(name)) cli_die("study: unknown study '%s' (see exmy study --list; or a study file's path)", name);
  if (so.out_dir && !so.dry_run) { /* mkdir -p here: a path that cannot be made is a bad argument */
    char e[EXMY_ERRLEN];
    if (xp_mkdir_p(so.out_dir, e, sizeof e)) cli_die("study: --out: %s", e);
  }
  /* the command line, for the report */
  char cmd[1024] = "exmy study";
  for (int i = 1; i < argc; i++) {
    const int q = strpbrk(argv[i], " ;|&*?$'\"") != NULL;
    strncat(cmd, q ? " '" : " ", sizeof cmd - strlen(cmd) - 1);
    strncat(cmd, argv[i], sizeof cmd - strlen(cmd) - 1);
    if (q) strncat(cmd, "'", sizeof cmd - strlen(cmd) - 1);
  }
  so.command = cmd;
  so.log = stdout;
  char err[EXMY_ERRLEN];
#ifdef HAVE_MPI
  const int mpi = !so.dry_run && !so.report_only && so.shard_n <= 1 && study_mpi_begin(&so);
#endif
  const int rc = study_main(name, &so, err, sizeof err);
#ifdef HAVE_MPI
  if (mpi) {
    fflush(stdout);
    study_mpi_end();
  }
#endif
  if (rc == 2) cli_die("%s", err);
  if (rc) {
    fflush(stdout);
    fprintf(stderr, "exmy: %s\n", err);
    return 1;
  }
  return 0;
}

/* --help's last line: the built-in studies, from the table and the study files */
void study_names_help(FILE *out) { study_list(out, 1); }
