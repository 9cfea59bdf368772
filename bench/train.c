/* bench/train: tokens/s of GPT training with every GEMM emulated, for the
 * engine's default GPT (4 layers, d_model 64, 4 heads, seq 32, batch 8,
 * char-level) and a wider one (6 layers, d_model 256, 8 heads, seq 128,
 * batch 8), in fp32, bf16, e4m3 HYBRID, HYBRID with the Hopper tensor-core
 * accumulation model and HYBRID with stochastically rounded gradients; beside
 * PyTorch CPU fp32 training of the same model (bench/torch_gpt.py, same
 * shapes, same thread count) in the same run when torch imports (skipped with
 * a note otherwise).  Ratios: tokens/s over PyTorch's, and step time over
 * the HYBRID step.  Goals (issue 12): HYBRID >= 1.0x PyTorch on the default
 * GPT, >= 0.7x on the wider; tc:hopper <= 1.5x the HYBRID step.
 * usage: bench/train [steps, default 20 (wide: steps/4, at least 2)] [threads, default 2] */
#include "bench/bench.h"
#include "experiments/xp.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef BENCH_SRCDIR
#define BENCH_SRCDIR "."
#endif

typedef struct bench_model {
  const char *name;
  int n_layer, d_model, n_head, seq_len, batch;
} bench_model;

static const bench_model models[] = {
  {"default GPT", 4, 64, 4, 32, 8},
  {"wide GPT", 6, 256, 8, 128, 8},
};
static const char *const precs[] = {"fp32", "bf16", "hybrid", "hybrid;accum=tc:hopper", "hybrid;round.grad=sr"};
#define NPREC (int)(sizeof precs / sizeof precs[0])

/* PyTorch's tokens/s for the same model, or 0 (note printed) */
static double torch_tokens_per_s(const bench_model *m, long vocab, long steps, int threads) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "python3 %s/bench/torch_gpt.py %d %d %d %d %d %ld %ld %d 2>&1", BENCH_SRCDIR, m->n_layer,
           m->d_model, m->n_head, m->seq_len, m->batch, vocab, steps, threads);
  FILE *p = popen(cmd, "r");
  char line[512] = "";
  double tps = 0;
  if (p) {
    while (fgets(line, sizeof line, p))
      if (sscanf(line, "tokens/s %lf", &tps) == 1) break;
    pclose(p);
  }
  if (tps <= 0) printf("  (PyTorch skipped: %s)\n", line[0] ? line : "python3 did not run");
  return tps;
}

int main(int argc, char **argv) {
  const long steps = argc > 1 ? atol(argv[1]) : 20;
  const int threads = argc > 2 ? atoi(argv[2]) : 2;
  if (steps < 1 || threads < 1) return fprintf(stderr, "bench/train: usage: bench/train [steps >= 1] [threads >= 1]\n"), 2;
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    const bench_model *bm = &models[k];
    const long st = k == 0 ? steps : (steps / 4 > 2 ? steps / 4 : 2);
    double tps[NPREC];
    size_t nparams = 0;
    for (int p = 0; p < NPREC; p++) {
      tps[p] = 0;
      for (int rep = 0; rep < 2; rep++) {
        xp_config c;
        xp_config_default(&c);
        char err[EXMY_ERRLEN];
        c.steps = st;
        c.progress = 0;
        c.eval_batches = 0;
        c.threads = threads;
        c.model.n_layer = bm->n_layer;
        c.model.d_model = bm->d_model;
        c.model.n_head = bm->n_head;
        c.model.seq_len = bm->seq_len;
        c.model.batch = bm->batch;
        if (xp_config_set(&c, "prec", precs[p], err, sizeof err)) return fprintf(stderr, "bench/train: %s\n", err), 2;
        xp_result r;
        if (xp_train(&c, &r, err, sizeof err)) return fprintf(stderr, "bench/train: %s\n", err), 1;
        if (r.tokens_per_s > tps[p]) tps[p] = r.tokens_per_s;
        nparams = r.nparams;
        xp_result_free(&r);
      }
    }
    /* vocab from the parameter count: L (12 C^2 + 13 C) + T C + 2 C + V (2 C + 1) */
    const long C = bm->d_model, L = bm->n_layer, T = bm->seq_len;
    const long vocab = ((long)nparams - L * (12 * C * C + 13 * C) - T * C - 2 * C) / (2 * C + 1);
    const double tt = torch_tokens_per_s(bm, vocab, st, threads);
    printf("bench/train: %s (%d layers, d_model %d, %d heads, seq %d, batch %d, vocab %ld): %zu parameters, "
           "%ld steps, %d threads, best of 2\n", bm->name, bm->n_layer, bm->d_model, bm->n_head, bm->seq_len,
           bm->batch, vocab, nparams, st, threads);
    printf("%-26s %12s %10s %10s\n", "precision", "tokens/s", "x PyTorch", "x hybrid");
    if (tt > 0) printf("%-26s %12.0f %10.2f %10s\n", "PyTorch fp32", tt, 1.0, "");
    for (int p = 0; p < NPREC; p++) {
      char ratio[32] = "-";
      if (tt > 0) snprintf(ratio, sizeof ratio, "%.2f", tps[p] / tt);
      printf("%-26s %12.0f %10s %10.2f\n", precs[p], tps[p], ratio, tps[2] / tps[p]); /* step time / hybrid's */
    }
    if (tt > 0)
      printf("goal: hybrid >= %.1fx PyTorch: %s (%.2f)\n", k == 0 ? 1.0 : 0.7,
             tps[2] / tt >= (k == 0 ? 1.0 : 0.7) ? "met" : "not met", tps[2] / tt);
    printf("goal: tc:hopper step <= 1.5x hybrid: %s (%.2f)\n\n", tps[2] / tps[3] <= 1.5 ? "met" : "not met",
           tps[2] / tps[3]);
    fflush(stdout);
  }
  return 0;
}
