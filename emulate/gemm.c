/* gemm.c: the public entry points of the emulated GEMM (docs/gemm.md): build
 * the plan, run a fast kernel where one applies (gemm_fast.c), else the
 * plain-C reference (gemm_ref.c), and report amax and the flags.  Only this
 * file knows both paths.  Calls go one way, each file including the headers
 * of what it uses (tests/layers.py checks it):
 *   gemm.c -> gemm_plan.c (build, free), gemm_ws.c (buffers kept across calls)
 *          -> gemm_fast.c -> gemm_fast_{fp32,exact,tc,format}.c
 *               fp32, exact -> gemm_block.c; tc -> gemm_fast_tc16.c; format -> gemm_fast_lanes.c
 *          -> gemm_ref.c -> gemm_ref_exact.c, gemm_tc.c -> mma_fused.c (the
 *             instruction layer's fused sums: tc runs a datapath row)
 *   kernels and reference -> gemm_epilogue.c, gemm_round.c, gemm_ws.c, and
 *   the inline pieces of gemm_plan.h and gemm_bits.h */
#include "emulate/gemm_plan.h"
#include "emulate/gemm_ws.h"
#include "emulate/gemm_fast.h"
#include "emulate/gemm_ref.h"
#include "emulate/parallel.h"
#include "formats/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void exmy_gemm_args_init(exmy_gemm_args *a) {
  memset(a, 0, sizeof *a);
  a->alpha = 1.0f;
  a->scale_c = 1.0f;
  a->scale_d = 1.0f;
  a->d_rnd = exmy_rounding_default();
}

int exmy_gemm_check(const exmy_gemm_args *args, size_t *m, size_t *n, size_t *k, char *err, size_t errlen) {
  gemm_plan p;
  if (exmy__gemm_plan(args, &p, 0, NULL, err, errlen)) return -1;
  if (m) *m = p.m;
  if (n) *n = p.n;
  if (k) *k = p.k;
  return 0;
}

/* The plan for args writing D into d (the plan holds every input and output). */
static int plan_with_d(const exmy_gemm_args *args, void *d, float *amax_d, gemm_plan *p, int decode, gemm_ws *ws,
                       char *err, size_t errlen) {
  if (!d) return exmy__fail(err, errlen, "GEMM: no output D");
  if (exmy__gemm_plan(args, p, decode, ws, err, errlen)) {
    exmy__gemm_plan_free(p);
    return -1;
  }
  p->d = d;
  p->amax_d = amax_d;
  return 0;
}

int exmy_gemm_ref(const exmy_gemm_args *args, void *d, float *amax_d, unsigned *flags_out, char *err,
                  size_t errlen) {
  gemm_plan p;
  gemm_ws ws = {0};
  if (plan_with_d(args, d, amax_d, &p, 1, &ws, err, errlen)) return exmy__gemm_ws_release(&ws), -1;
  unsigned flags = 0;
  float amax = 0.0f;
  exmy__gemm_ref_rows(&p, 0, p.m, &flags, &amax);
  if (p.amax_d) *p.amax_d = amax;
  exmy__gemm_plan_free(&p);
  exmy__gemm_ws_release(&ws);
  if (flags_out) *flags_out |= flags;
  return 0;
}

/* One GEMM on threads threads with ws's buffers.  fp32, pairwise, exact and tc first try
 * packing their operands straight from the codes; every other path (and
 * those two when they decline) reads them decoded in double. */
static int gemm_run(const exmy_gemm_args *args, int threads_arg, gemm_ws *ws, void *d, float *amax_d,
                    unsigned *flags_out, char *err, size_t errlen) {
  gemm_plan p;
  if (plan_with_d(args, d, amax_d, &p, 2, ws, err, errlen)) return -1;
  unsigned flags = 0;
  float amax = 0.0f;
  /* Small problems run on one thread: a parallel region costs more than they
   * do (and results never depend on the thread count). */
  const int threads = (double)p.m * (double)p.n * (double)(p.k ? p.k : 1) < (double)EXMY_OMP_MIN_TENSOR ? 1 : threads_arg;
  const int from_codes = p.acc.kind == EXMY_ACCUM_FP32 || p.acc.kind == EXMY_ACCUM_FP32_PAIRWISE ||
                         p.acc.kind == EXMY_ACCUM_EXACT || p.acc.kind == EXMY_ACCUM_TC;
  int done = from_codes && exmy__gemm_fast(&p, threads, &flags, &amax);
  if (!done) {
    if (exmy__gemm_plan_decode(&p, err, errlen)) {
      exmy__gemm_plan_free(&p);
      return -1;
    }
    done = exmy__gemm_fast(&p, threads, &flags, &amax);
  }
  if (!done) {
    /* Rows in parallel: every element's k order is fixed, so any split gives the same bits. */
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) reduction(| : flags) reduction(max : amax)
    {
      unsigned fl = 0;
      float am = 0.0f;
#pragma omp for schedule(dynamic, 1)
      for (size_t i = 0; i < p.m; i++) exmy__gemm_ref_rows(&p, i, i + 1, &fl, &am);
      flags |= fl;
      amax = fmaxf(amax, am);
    }
  }
  if (p.amax_d) *p.amax_d = amax;
  exmy__gemm_plan_free(&p);
  if (flags_out) *flags_out |= flags;
  return 0;
}

int exmy_gemm(const exmy_gemm_args *args, void *d, float *amax_d, unsigned *flags_out, char *err, size_t errlen) {
  gemm_ws ws = {0};
  const int rc = gemm_run(args, args ? args->threads : 0, &ws, d, amax_d, flags_out, err, errlen);
  exmy__gemm_ws_release(&ws);
  return rc;
}

int exmy_gemm_ws_run(const exmy_gemm_args *args, exmy_gemm_ws *ws, void *d, float *amax_d, unsigned *flags,
                     char *err, size_t errlen) {
  if (!ws) return exmy_gemm(args, d, amax_d, flags, err, errlen);
  if (!ws->impl && !(ws->impl = calloc(1, sizeof(gemm_ws))))
    return exmy__fail(err, errlen, "GEMM: out of memory for the workspace");
  return gemm_run(args, args ? args->threads : 0, ws->impl, d, amax_d, flags, err, errlen);
}

int exmy_gemm_batch(const exmy_gemm_args *args, size_t count, void *const *d, float *amax_d, unsigned *flags,
                    char *err, size_t errlen) {
  if (count && (!args || !d)) return exmy__fail(err, errlen, "GEMM batch: no arguments or no outputs");
  const int threads = count ? args[0].threads : 0;
  for (size_t b = 1; b < count; b++) /* one thread count for the batch, not a guess among several */
    if (args[b].threads != threads)
      return exmy__fail(err, errlen, "GEMM batch, problem %zu: threads %d, but problem 0 has %d (the batch's thread "
                        "count: every problem must say the same)", b, args[b].threads, threads);
  unsigned fl = 0;
  long bad = -1;
  char e1[EXMY_ERRLEN] = "";
  /* each thread keeps one workspace over its share of the batch */
#pragma omp parallel num_threads(threads > 0 ? threads : omp_get_max_threads()) if (count > 1) reduction(| : fl)
  {
    gemm_ws ws = {0};
    unsigned f1 = 0;
#pragma omp for schedule(dynamic, 1)
    for (size_t b = 0; b < count; b++) {
      char e[EXMY_ERRLEN];
      if (gemm_run(&args[b], 1, &ws, d[b], amax_d ? &amax_d[b] : NULL, &f1, e, sizeof e)) {
#pragma omp critical /* unnamed: a named one would export a symbol */
        if (bad < 0 || (long)b < bad) {
          bad = (long)b;
          snprintf(e1, sizeof e1, "%s", e);
        }
      }
    }
    exmy__gemm_ws_release(&ws);
    fl |= f1;
  }
  if (flags) *flags |= fl;
  if (bad >= 0) return exmy__fail(err, errlen, "GEMM batch, problem %ld: %s", bad, e1);
  return 0;
}
