/* bench/train: tokens/s of GPT training with every GEMM emulated, for
 * nanoGPT's published CPU configuration (4 layers, n_embd 128, 4 heads,
 * block 64, batch 12, char-level: the speed anchor), the engine's default
 * GPT (4 layers, d_model 64, 4 heads, seq 32, batch 8) and a wider one (6
 * layers, d_model 256, 8 heads, seq 128, batch 8), in fp32, bf16, e4m3
 * HYBRID, HYBRID with the Hopper tensor-core accumulation model, HYBRID with
 * stochastically rounded gradients and E8M3 round-toward-zero; beside
 * PyTorch CPU fp32 training of the same model (bench/torch_gpt.py, same
 * shapes, same thread count) in the same run when torch imports (skipped with
 * a note otherwise).  The Python: $EXMY_TORCH_PYTHON, else the first of
 * python3 and python that imports torch; the run names it and its torch.
 * Ratios: tokens/s over PyTorch's, and step time over the HYBRID step.
 * Goals (issue 34), each a row field below.
 * usage: bench/train [steps, default 20 (wide: steps/4, at least 2)] [threads, default 2]
 *        [rounds, default 1: each precision best of 2; R > 1: R interleaved rounds, every
 *        precision and PyTorch once a round, medians of the rates and of the per-round ratios:
 *        a VM whose speed drifts moves both sides of a ratio alike within a round] */
#include "bench/bench.h"
#include "experiments/xp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef BENCH_SRCDIR
#define BENCH_SRCDIR "."
#endif

typedef struct bench_model {
  const char *name;
  int n_layer, d_model, n_head, seq_len, batch;
  double goal_hybrid, goal_fp32; /* tokens/s over PyTorch's at least (0: no goal) */
} bench_model;

static const bench_model models[] = {
  {"nanoGPT CPU", 4, 128, 4, 64, 12, 1.0, 1.0},
  {"default GPT", 4, 64, 4, 32, 8, 1.0, 0},
  {"wide GPT", 6, 256, 8, 128, 8, 0.8, 0},
};
/* the precisions, and the most each step may cost over HYBRID's (0: no goal) */
typedef struct bench_prec { const char *prec; double goal_vs_hybrid; } bench_prec;
static const bench_prec precs[] = {
  {"fp32", 0}, {"bf16", 0}, {"hybrid", 0}, {"hybrid;accum=tc:hopper", 1.5}, {"hybrid;round.grad=sr", 0},
  {"e8m3;round=rtz", 1.2},
};
#define NPREC (int)(sizeof precs / sizeof precs[0])
#define HYBRID 2 /* precs[HYBRID] is the step the others are compared with */
#define FP32 0

/* The Python that runs bench/torch_gpt.py: $EXMY_TORCH_PYTHON, else the
 * first of python3 and python whose torch imports ("" when none does). */
static void torch_python(char *py, size_t n, char *ver, size_t vn) {
  const char *env = getenv("EXMY_TORCH_PYTHON");
  const char *cand[] = {env && *env ? env : NULL, "python3", "python"};
  py[0] = ver[0] = 0;
  for (int i = 0; i < 3 && !py[0]; i++) {
    if (!cand[i] || strchr(cand[i], '\'')) continue;
    char cmd[600], line[256] = "";
    snprintf(cmd, sizeof cmd, "'%s' -c 'import sys, torch; print(torch.__version__, sys.executable)' 2>/dev/null", cand[i]);
    FILE *p = popen(cmd, "r");
    if (!p) continue;
    if (fgets(line, sizeof line, p) && line[0]) {
      line[strcspn(line, "\n")] = 0;
      snprintf(py, n, "%s", cand[i]);
      snprintf(ver, vn, "%s", line);
    }
    pclose(p);
  }
}

/* PyTorch's tokens/s for the same model, or 0 (note printed) */
static double torch_tokens_per_s(const char *py, const bench_model *m, long vocab, long steps, int threads) {
  if (!py[0]) { printf("  (PyTorch skipped: no Python here imports torch; set EXMY_TORCH_PYTHON)\n"); return 0; }
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "'%s' %s/bench/torch_gpt.py %d %d %d %d %d %ld %ld %d 2>&1", py, BENCH_SRCDIR, m->n_layer,
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

/* One exmy training run of precision p: its tokens/s (0 and a message on an error). */
static double exmy_tokens_per_s(const bench_model *bm, int p, long st, int threads, size_t *nparams) {
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
  xp_result r;
  if (xp_config_set(&c, "prec", precs[p].prec, err, sizeof err) || xp_train(&c, &r, err, sizeof err)) {
    fprintf(stderr, "bench/train: %s\n", err);
    return 0;
  }
  const double t = r.tokens_per_s;
  *nparams = r.nparams;
  xp_result_free(&r);
  return t;
}

/* The vocabulary from the parameter count: L (12 C^2 + 13 C) + T C + 2 C + V (2 C + 1). */
static long vocab_of(const bench_model *bm, size_t nparams) {
  const long C = bm->d_model, L = bm->n_layer, T = bm->seq_len;
  return ((long)nparams - L * (12 * C * C + 13 * C) - T * C - 2 * C) / (2 * C + 1);
}

static int cmp_d(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_ROUNDS 15

int main(int argc, char **argv) {
  const long steps = argc > 1 ? atol(argv[1]) : 20;
  const int threads = argc > 2 ? atoi(argv[2]) : 2;
  const int rounds = argc > 3 ? atoi(argv[3]) : 1;
  if (steps < 1 || threads < 1 || rounds < 1 || rounds > MAX_ROUNDS)
    return fprintf(stderr, "bench/train: usage: bench/train [steps >= 1] [threads >= 1] [rounds 1..%d]\n", MAX_ROUNDS), 2;
  char py[512], tver[256];
  torch_python(py, sizeof py, tver, sizeof tver);
  if (py[0]) printf("bench/train: PyTorch from %s (torch %s)\n", py, tver);
  for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
    const bench_model *bm = &models[k];
    const long st = bm->d_model < 256 ? steps : (steps / 4 > 2 ? steps / 4 : 2);
    double tps[NPREC], xtorch[NPREC], xhyb[NPREC], tt = 0;
    size_t nparams = 0;
    long vocab = 0;
    if (rounds == 1) { /* each precision best of 2, PyTorch once */
      for (int p = 0; p < NPREC; p++) {
        tps[p] = 0;
        for (int rep = 0; rep < 2; rep++) {
          const double t = exmy_tokens_per_s(bm, p, st, threads, &nparams);
          if (t <= 0) return 1;
          if (t > tps[p]) tps[p] = t;
        }
      }
      vocab = vocab_of(bm, nparams);
      tt = torch_tokens_per_s(py, bm, vocab, st, threads);
      for (int p = 0; p < NPREC; p++) xtorch[p] = tt > 0 ? tps[p] / tt : 0, xhyb[p] = tps[HYBRID] / tps[p];
    } else { /* interleaved rounds (every precision once, then PyTorch): medians, ratios per round */
      static double r_tps[MAX_ROUNDS][NPREC], r_tt[MAX_ROUNDS], col[MAX_ROUNDS];
      for (int r = 0; r < rounds; r++) {
        for (int p = 0; p < NPREC; p++)
          if ((r_tps[r][p] = exmy_tokens_per_s(bm, p, st, threads, &nparams)) <= 0) return 1;
        vocab = vocab_of(bm, nparams);
        r_tt[r] = torch_tokens_per_s(py, bm, vocab, st, threads);
      }
      for (int r = 0; r < rounds; r++) col[r] = r_tt[r];
      tt = median(col, rounds);
      for (int p = 0; p < NPREC; p++) {
        for (int r = 0; r < rounds; r++) col[r] = r_tps[r][p];
        tps[p] = median(col, rounds);
        for (int r = 0; r < rounds; r++) col[r] = r_tt[r] > 0 ? r_tps[r][p] / r_tt[r] : 0;
        xtorch[p] = tt > 0 ? median(col, rounds) : 0;
        for (int r = 0; r < rounds; r++) col[r] = r_tps[r][HYBRID] / r_tps[r][p];
        xhyb[p] = median(col, rounds);
      }
    }
    char how[64];
    if (rounds == 1) snprintf(how, sizeof how, "best of 2");
    else snprintf(how, sizeof how, "medians of %d interleaved rounds (ratios per round)", rounds);
    printf("bench/train: %s (%d layers, d_model %d, %d heads, seq %d, batch %d, vocab %ld): %zu parameters, "
           "%ld steps, %d threads, %s\n", bm->name, bm->n_layer, bm->d_model, bm->n_head, bm->seq_len,
           bm->batch, vocab, nparams, st, threads, how);
    printf("%-26s %12s %10s %10s\n", "precision", "tokens/s", "x PyTorch", "x hybrid");
    if (tt > 0) printf("%-26s %12.0f %10.2f %10s\n", "PyTorch fp32", tt, 1.0, "");
    for (int p = 0; p < NPREC; p++) {
      char ratio[32] = "-";
      if (tt > 0) snprintf(ratio, sizeof ratio, "%.2f", xtorch[p]);
      printf("%-26s %12.0f %10s %10.2f\n", precs[p].prec, tps[p], ratio, xhyb[p]); /* step / hybrid's */
    }
    const struct { const char *what; double goal; int p; } vs_torch[] = {{"hybrid", bm->goal_hybrid, HYBRID},
                                                                         {"fp32", bm->goal_fp32, FP32}};
    for (int g = 0; g < 2 && tt > 0; g++)
      if (vs_torch[g].goal > 0)
        printf("goal: %s >= %.1fx PyTorch: %s (%.2f)\n", vs_torch[g].what, vs_torch[g].goal,
               xtorch[vs_torch[g].p] >= vs_torch[g].goal ? "met" : "not met", xtorch[vs_torch[g].p]);
    for (int p = 0; p < NPREC; p++)
      if (precs[p].goal_vs_hybrid > 0)
        printf("goal: %s step <= %.1fx hybrid: %s (%.2f)\n", precs[p].prec, precs[p].goal_vs_hybrid,
               xhyb[p] <= precs[p].goal_vs_hybrid ? "met" : "not met", xhyb[p]);
    putchar('\n');
    fflush(stdout);
  }
  return 0;
}
