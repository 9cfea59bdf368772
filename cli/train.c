/* train.c: `exmy train`: one training run of the engine (experiments/). */
#include "cli/cli.h"
#include "experiments/xp.h"
#include "experiments/precision.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *train_usage =
  "usage: exmy train [CONFIG] [--KEY VALUE | --KEY=VALUE]... [--print-config]\n"
  "Train the tiny GPT (default: 4 layers, d_model 64, char-level, the built-in text) or a\n"
  "teacher-student MLP, with every GEMM (forward, input gradient, weight gradient) run\n"
  "through exmy's emulated GEMM in the precision you choose.  CONFIG is a file of\n"
  "`key = value` lines; flags given after it override it.  Same config and seed give\n"
  "bit-identical results for any thread count.  Examples:\n"
  "  exmy train --prec hybrid --steps 300\n"
  "  exmy train --prec 'hybrid;recipe=delayed:len=16' --layer.first bf16 --layer.last bf16\n"
  "  exmy train --prec 'e8m3;round=rtz' --lr 3e-2 --out_dir runs/e8m3\n"
  "  exmy train --prec bf16 --ckpt bf16.ckpt && exmy train --resume bf16.ckpt --prec hybrid\n"
  "      --prec 'hybrid;recipe=delayed' --calibrate 1 --steps 400\n"
  "Prints a progress bar (a line every log_every steps when not a terminal) and a summary.\n"
  "Exit status: 0 done (a diverged run is still done: see the summary), 2 bad arguments,\n"
  "1 a failure while running (a write error, a bad checkpoint), 143 / 130 stopped by SIGTERM /\n"
  "SIGINT (after the current step, with a checkpoint when --ckpt is given: --resume it).\n"
  "--print-config prints the resolved config and exits.\n"
  "Keys (docs/training.md):\n";

/* SIGTERM/SIGINT: the signal's number, read by xp_train between steps (the
 * one global: a signal handler has nowhere else to put it).  A second signal
 * ends the process at once, as the default action would. */
static volatile sig_atomic_t stop_signal;
static void on_stop(int sig) {
  if (stop_signal) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  stop_signal = sig;
}

void train_keys_help(FILE *out) { xp_config_help(out); }

static void print_result(const xp_config *c, const xp_result *r) {
  printf("params        %zu\n", r->nparams);
  printf("precision     %s%s\n", c->prec_text, c->n_override ? " (with layer overrides)" : "");
  printf("steps         %ld\n", r->steps_done);
  printf("loss          first %.4f  final %.4f  last-10%% mean %.4f  min %.4f\n", r->first_loss, r->final_loss,
         r->final_loss_avg, r->min_loss);
  if (!isnan(r->val_loss)) printf("val loss      %.4f\n", r->val_loss);
  printf("spikes        %ld", r->spikes);
  if (r->first_spike >= 0) printf(" (first at step %ld)", r->first_spike);
  printf("\ndiverged      %s", r->diverged_at >= 0 ? "yes" : "no");
  if (r->diverged_at >= 0) printf(" (at step %ld)", r->diverged_at);
  printf("\n");
  if (r->checks) printf("checks        %ld, fallbacks to bf16 %ld\n", r->checks, r->fallbacks);
  printf("time          %.1f s, %.0f tokens/s\n", r->seconds, r->tokens_per_s);
  if (c->out_dir[0])
    printf("results       %s/ (loss.csv, summary.json%s%s)\n", c->out_dir, c->stats_every ? ", stats.csv, stats.jsonl" : "",
           c->outliers_every ? ", outliers.csv" : "");
  if (c->ckpt[0]) printf("checkpoint    %s\n", c->ckpt);
}

int cmd_train(int argc, char **argv) {
  xp_config c;
  xp_config_default(&c);
  char err[EXMY_ERRLEN];
  int print_config = 0;
  int i = 1;
  if (i < argc && argv[i][0] != '-') {
    if (xp_config_load(&c, argv[i], err, sizeof err)) cli_die("train: %s", err);
    i++;
  }
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--print-config")) { print_config = 1; continue; }
    if (strncmp(a, "--", 2) || !a[2]) cli_die("train: unexpected argument '%s' (options are --KEY VALUE; see --help)", a);
    char key[128];
    const char *val;
    const char *eq = strchr(a, '=');
    if (eq) {
      snprintf(key, sizeof key, "%.*s", (int)(eq - a - 2), a + 2);
      val = eq + 1;
    } else {
      snprintf(key, sizeof key, "%s", a + 2);
      if (i + 1 >= argc) cli_die("train: --%s needs a value", key);
      val = argv[++i];
    }
    if (strncmp(key, "layer.", 6)) /* --out-dir = --out_dir; layer names keep their spelling */
      for (char *p = key; *p; p++)
        if (*p == '-') *p = '_';
    if (xp_config_set(&c, key, val, err, sizeof err)) cli_die("train: %s", err);
  }
  if (print_config) {
    xp_config_write(&c, stdout);
    return 0;
  }
  /* The output folder first (mkdir -p): the checkpoint usually lives in it. */
  if (c.out_dir[0] && xp_mkdir_p(c.out_dir, err, sizeof err)) cli_die("train: out_dir: %s", err);
  /* one run per folder: a second exmy on it would interleave the files (the lock lasts until exit) */
  if (c.out_dir[0] && xp_dir_lock(c.out_dir, 0, err, sizeof err) == -2)
    cli_die("train: out_dir: %s; wait for it to end or give another --out_dir", err);
  /* Files the run reads must exist, and the checkpoint's folder too (else the
   * run would fail after training): bad arguments, exit 2. */
  char corpus[XP_PATH + 64];
  const int shipped = xp_corpus_path(c.data, corpus, sizeof corpus); /* data = shakespeare */
  if (shipped < 0 && (xp_model_caps(c.model.kind) & XP_CAP_TOKENS))
    cli_die("train: data: corpus '%s': %s not found (EXMY_DATA_DIR, the source tree, the installed data folder)",
            c.data, corpus);
  if (!shipped && strcmp(c.data, "builtin") && (xp_model_caps(c.model.kind) & XP_CAP_TOKENS) && access(c.data, R_OK))
    cli_die("train: data: cannot read '%s': %s", c.data, strerror(errno));
  if (c.resume[0] && access(c.resume, R_OK)) cli_die("train: resume: cannot read '%s': %s", c.resume, strerror(errno));
  if (c.ckpt[0]) {
    char dir[XP_PATH];
    snprintf(dir, sizeof dir, "%s", c.ckpt);
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir] = 0;
    else snprintf(dir, sizeof dir, ".");
    if (access(dir, W_OK | X_OK))
      cli_die("train: ckpt: cannot write '%s': folder '%s': %s", c.ckpt, dir, strerror(errno));
  }
  /* Checks that need the model's layer names (layer.NAME overrides,
   * dump_layers), its outlier metrics and its shape (d_model, n_head, ...): on a model built here,
   * before the data and step 0, so they exit 2 too.  The names do not depend
   * on the vocabulary. */
  xp_model m;
  memset(&m, 0, sizeof m);
  if (xp_model_init(&m, &c.model, xp_model_caps(c.model.kind) & XP_CAP_TOKENS ? 256 : 0, c.seed, err, sizeof err))
    cli_die("train: %s", err);
  int bad = xp_prec_check_overrides(&c, m.nlin, m.lin_name, err, sizeof err) ||
            xp_model_check_config(&m, &c, err, sizeof err);
  if (!bad && c.dump_layers[0]) {
    char list[sizeof c.dump_layers], *save = NULL;
    snprintf(list, sizeof list, "%s", c.dump_layers);
    for (char *s = strtok_r(list, ",", &save); s && !bad; s = strtok_r(NULL, ",", &save)) {
      int hit = 0;
      for (int l = 0; l < m.nlin; l++) hit |= xp_layer_matches(s, l, m.nlin, m.lin_name);
      if (!hit) {
        snprintf(err, sizeof err, "dump_layers: no linear layer matches '%s' (first, last, an index, or a name like %s)",
                 s, m.nlin ? m.lin_name[0] : "h0.qkv");
        bad = 1;
      }
    }
  }
  xp_model_free(&m);
  if (bad) cli_die("train: %s", err);
  struct sigaction sa, old_term, old_int;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGINT, &sa, &old_int);
  /* a signal ignored when we started (nohup, a background job of a script) stays ignored */
  if (old_term.sa_handler == SIG_IGN) sigaction(SIGTERM, &old_term, NULL);
  if (old_int.sa_handler == SIG_IGN) sigaction(SIGINT, &old_int, NULL);
  c.stop = &stop_signal;
  xp_result r;
  const int failed = xp_train(&c, &r, err, sizeof err);
  sigaction(SIGTERM, &old_term, NULL);
  sigaction(SIGINT, &old_int, NULL);
  if (failed) {
    fprintf(stderr, "exmy: train: %s\n", err);
    xp_result_free(&r);
    return 1;
  }
  if (r.stopped) {
    const char *name = r.stopped == SIGTERM ? "SIGTERM" : r.stopped == SIGINT ? "SIGINT" : "a signal";
    if (c.ckpt[0])
      fprintf(stderr, "exmy: train: stopped by %s after %ld steps; checkpoint '%s' written (continue with --resume %s)\n",
              name, r.steps_done, c.ckpt, c.ckpt);
    else
      fprintf(stderr, "exmy: train: stopped by %s after %ld steps; no checkpoint (no --ckpt given)\n", name,
              r.steps_done);
    const int status = 128 + r.stopped;
    xp_result_free(&r);
    return status;
  }
  print_result(&c, &r);
  xp_result_free(&r);
  return 0;
}
