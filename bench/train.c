/* bench/train: step time and tokens/s of the tiny GPT (the engine's default:
 * 4 layers, d_model 64, 4 heads, seq 32, batch 8, char-level) with every
 * GEMM emulated in fp32, bf16, e4m3 HYBRID (current and delayed scaling) and
 * HYBRID with the Hopper tensor-core accumulation model, as ratios to the
 * fp32 step time of the same run.  Goal: HYBRID <= 1.5x fp32.
 * usage: bench/train [steps] [threads] */
#include "bench/bench.h"
#include "experiments/xp.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  const long steps = argc > 1 ? atol(argv[1]) : 30;
  const int threads = argc > 2 ? atoi(argv[2]) : 0;
  const char *precs[] = {"fp32", "bf16", "hybrid", "hybrid;recipe=delayed", "hybrid;accum=tc:hopper"};
  const int np = sizeof precs / sizeof precs[0];
  double best[8];
  double tok = 0;
  size_t nparams = 0;
  for (int p = 0; p < np; p++) {
    best[p] = 1e30;
    for (int rep = 0; rep < 2; rep++) {
      xp_config c;
      xp_config_default(&c);
      char err[EXMY_ERRLEN];
      c.steps = steps;
      c.progress = 0;
      c.eval_batches = 0;
      c.threads = threads;
      if (xp_config_set(&c, "prec", precs[p], err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
      xp_result r;
      if (xp_train(&c, &r, err, sizeof err)) return fprintf(stderr, "bench/train: %s\n", err), 1;
      const double per_step = (double)c.model.batch * c.model.seq_len / r.tokens_per_s;
      if (per_step < best[p]) best[p] = per_step;
      tok = (double)c.model.batch * c.model.seq_len;
      nparams = r.nparams;
      xp_result_free(&r);
    }
  }
  printf("bench/train: tiny GPT, %zu parameters, %.0f tokens/step, %ld steps, %d threads, best of 2\n", nparams, tok,
         steps, threads ? threads : omp_get_max_threads());
  printf("%-26s %10s %12s %10s\n", "precision", "ms/step", "tokens/s", "x fp32");
  for (int p = 0; p < np; p++)
    printf("%-26s %10.1f %12.0f %10.2f\n", precs[p], 1e3 * best[p], tok / best[p], best[p] / best[0]);
  printf("goal: hybrid <= 1.5x fp32: %s (%.2f)\n", best[2] <= 1.5 * best[0] ? "met" : "not met", best[2] / best[0]);
  return 0;
}
