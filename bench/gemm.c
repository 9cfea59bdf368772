/* bench/gemm: the emulated GEMM's models beside OpenBLAS SGEMM on the same
 * shapes in the same run (e4m3fn x e4m3fn, per-tensor current scaling,
 * D in f32), then one training step's GEMM list (the default tiny GPT's
 * shapes, f32 operands) through exmy_gemm fp32 and through SGEMM.  Goals
 * (issue 12, 2 threads): fp32 >= 0.6 of SGEMM, chunk=128 >= 0.45, tc >= 0.3,
 * exact >= 0.2, acc=f16/bf16 >= 0.1, the step list >= 0.4.  Prints GFLOP/s
 * (2mnk / s) and the ratio to SGEMM.  With a round=sr model it also prints
 * that model's ceiling, measured in the same run: SplitMix64 alone (the
 * AVX-512 lanes the kernel uses), one draw per multiply-add, as GFLOP/s.
 * bench/gemm [threads [n ...]];
 * BENCH_GEMM_MODELS="fp32;exact" runs those models instead (any model: "tc:ada;tc:blackwell"). */
#include "bench/bench.h"
#include "exmy.h"
#include "emulate/rng_avx512.h"
#include "emulate/round_core.h"
#include "formats/internal.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* OpenBLAS's own thread count (its pthreads build ignores OMP_NUM_THREADS). */
extern void openblas_set_num_threads(int num_threads);
extern char *openblas_get_corename(void);

/* Best of reps runs; a run over 5 s is not repeated (the slow models). */
static double best_of(int reps, double (*fn)(void *), void *ctx) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    const double t = fn(ctx);
    if (t < best) best = t;
    if (t > 5.0) break;
  }
  return best;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The sr ceiling: seconds for each of `threads` threads to draw 2^26 words'
 * top halves, 16 at a time, with the counters stepped as the acc=FORMAT sr
 * kernel steps them (two 8-lane vectors per 16 draws). */
__attribute__((target("avx512f,avx512dq"))) static double rng_draws(void *v) {
  const int threads = *(const int *)v;
  const long reps = 1L << 22; /* x 16 draws */
  unsigned sink = 0;
  const double t0 = bench_now();
#pragma omp parallel num_threads(threads) reduction(^ : sink)
  {
    __m512i ev = _mm512_set1_epi64(omp_get_thread_num() + 1), od = _mm512_set1_epi64(7);
    __m512i acc = _mm512_setzero_si512();
    const __m512i gam = _mm512_set1_epi64((long long)EXMY__GOLDEN_GAMMA);
    for (long r = 0; r < reps; r++) {
      acc = _mm512_xor_si512(acc, exmy__mix64_hi16(ev, od));
      ev = _mm512_add_epi64(ev, gam);
      od = _mm512_add_epi64(od, gam);
    }
    sink ^= (unsigned)_mm512_reduce_add_epi32(acc);
  }
  const double t = bench_now() - t0;
  return sink == 0x12345678u ? t * 1.0000001 : t; /* keeps the draws */
}
#endif

typedef struct sg_ctx {
  int n;
  const float *a, *b;
  float *c;
} sg_ctx;

static double run_sgemm(void *v) {
  sg_ctx *c = v;
  const double t0 = bench_now();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c->n, c->n, c->n, 1.0f, c->a, c->n, c->b, c->n, 0.0f, c->c,
              c->n);
  return bench_now() - t0;
}

typedef struct em_ctx {
  exmy_gemm_args *g;
  float *d;
} em_ctx;

static double run_emu(void *v) {
  em_ctx *c = v;
  char err[EXMY_ERRLEN];
  const double t0 = bench_now();
  if (exmy_gemm(c->g, c->d, NULL, NULL, err, sizeof err)) {
    fprintf(stderr, "bench/gemm: %s\n", err);
    exit(1);
  }
  return bench_now() - t0;
}

/* One training step's GEMMs: the default tiny GPT (4 layers, d_model 64,
 * 4 heads, seq 32, batch 8 -> 256 tokens, MLP 256, vocab 45). Each linear
 * layer in -> out: fprop (T x out x in, W stored out x in: B transposed),
 * dgrad (T x in x out), wgrad (out x in x T, dy transposed); attention per
 * (sequence, head): 6 products of 32 x 32 x 16 or 32 x 16 x 32. */
typedef struct step_gemm {
  int m, n, k, ta, tb, count;
} step_gemm;

static size_t step_list(step_gemm *L) {
  static const int lin[5][3] = {{64, 192, 4}, {64, 64, 4}, {64, 256, 4}, {256, 64, 4}, {64, 45, 1}};
  const int T = 256, S = 32, hd = 16, nbh = 32 * 4;
  size_t c = 0;
  for (int i = 0; i < 5; i++) {
    const int in = lin[i][0], out = lin[i][1], cnt = lin[i][2];
    L[c++] = (step_gemm){T, out, in, 0, 1, cnt};
    L[c++] = (step_gemm){T, in, out, 0, 0, cnt};
    L[c++] = (step_gemm){out, in, T, 1, 0, cnt};
  }
  L[c++] = (step_gemm){S, S, hd, 0, 1, 2 * nbh}; /* S = q k^T, dP = dO v^T */
  L[c++] = (step_gemm){S, hd, S, 0, 0, 2 * nbh}; /* o = P v, dq = dS k */
  L[c++] = (step_gemm){S, hd, S, 1, 0, 2 * nbh}; /* dv = P^T dO, dk = dS^T q */
  return c;
}

typedef struct step_ctx {
  const step_gemm *L;
  size_t nl;
  const float *a, *b;
  float *c;
  int emu, threads;
} step_ctx;

static double run_step(void *v) {
  step_ctx *s = v;
  exmy_format f32;
  exmy_format_parse("f32", &f32, NULL, 0);
  exmy_accum acc;
  exmy_accum_parse("fp32", &acc, NULL, 0);
  char err[EXMY_ERRLEN];
  exmy_gemm_ws ws; /* as the training engine: one workspace over the step */
  exmy_gemm_ws_init(&ws);
  const double t0 = bench_now();
  for (size_t i = 0; i < s->nl; i++) {
    const step_gemm *g = &s->L[i];
    for (int r = 0; r < g->count; r++) {
      if (!s->emu) {
        cblas_sgemm(CblasRowMajor, g->ta ? CblasTrans : CblasNoTrans, g->tb ? CblasTrans : CblasNoTrans, g->m, g->n,
                    g->k, 1.0f, s->a, g->ta ? g->m : g->k, s->b, g->tb ? g->k : g->n, 0.0f, s->c, g->n);
        continue;
      }
      exmy_qtensor qa, qb;
      exmy_qtensor_view(&f32, s->a, (size_t)(g->ta ? g->k : g->m), (size_t)(g->ta ? g->m : g->k), NULL, &qa);
      exmy_qtensor_view(&f32, s->b, (size_t)(g->tb ? g->n : g->k), (size_t)(g->tb ? g->k : g->n), NULL, &qb);
      exmy_gemm_args ga;
      exmy_gemm_args_init(&ga);
      ga.a = &qa, ga.b = &qb, ga.trans_a = g->ta, ga.trans_b = g->tb;
      ga.accum = &acc, ga.d_fmt = &f32, ga.threads = s->threads;
      if (exmy_gemm_ws_run(&ga, &ws, s->c, NULL, NULL, err, sizeof err)) {
        fprintf(stderr, "bench/gemm: %s\n", err);
        exit(1);
      }
    }
  }
  const double t = bench_now() - t0;
  exmy_gemm_ws_free(&ws);
  return t;
}

/* ---- the anchor: the fastest OpenBLAS core type this CPU runs ------------- */
/* OpenBLAS picks its kernel when it loads, by CPU id; a CPU newer than the
 * library (an Intel family 6 model 207 under Debian's 0.3.21) gets its
 * Prescott (SSE3) kernel, 6x slower than SkylakeX on the same machine, and
 * every ratio against it flatters exmy (issue 34).  So each core type the
 * CPU's flags allow is measured in a child process (OPENBLAS_CORETYPE is read
 * at load; a kernel the CPU cannot run kills only its child), and the bench
 * starts again with the fastest. */
typedef struct core_try { const char *name; const char *needs[4]; } core_try;
static const core_try CORES[] = { /* "" = OpenBLAS's own choice */
  {"", {NULL}},
  {"SapphireRapids", {"avx512fp16", "avx512bf16", "avx512vl", NULL}},
  {"Cooperlake", {"avx512bf16", "avx512vl", "avx512bw", NULL}},
  {"SkylakeX", {"avx512f", "avx512vl", "avx512bw", "avx512dq"}},
  {"Zen", {"avx2", "fma", NULL}},
  {"Haswell", {"avx2", "fma", NULL}},
};
#define NCORES (sizeof CORES / sizeof CORES[0])

static int cpu_has(const char *flag) {
#if defined(__x86_64__) && defined(__GNUC__)
  /* __builtin_cpu_supports needs a literal: a table of the flags named above */
  if (!strcmp(flag, "avx512fp16")) {
#if __GNUC__ >= 12
    return __builtin_cpu_supports("avx512fp16");
#else
    return 0;
#endif
  }
  if (!strcmp(flag, "avx512bf16")) return __builtin_cpu_supports("avx512bf16");
  if (!strcmp(flag, "avx512vl")) return __builtin_cpu_supports("avx512vl");
  if (!strcmp(flag, "avx512bw")) return __builtin_cpu_supports("avx512bw");
  if (!strcmp(flag, "avx512dq")) return __builtin_cpu_supports("avx512dq");
  if (!strcmp(flag, "avx512f")) return __builtin_cpu_supports("avx512f");
  if (!strcmp(flag, "avx2")) return __builtin_cpu_supports("avx2");
  if (!strcmp(flag, "fma")) return __builtin_cpu_supports("fma");
#endif
  (void)flag;
  return 0;
}

static void cpu_model(char *out, size_t n) {
  snprintf(out, n, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      const char *v = strchr(line, ':') + 1;
      while (*v == ' ' || *v == '\t') v++;
      snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
      break;
    }
  fclose(f);
}

/* The child: SGEMM GFLOP/s at n = 1024 with `threads` threads, and the core OpenBLAS used. */
static int anchor_child(int threads) {
  const int n = 1024;
  const size_t nn = (size_t)n * n;
  float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
  if (!a || !b || !c) return 1;
  bench_fill(a, nn);
  bench_fill(b, nn);
  openblas_set_num_threads(threads);
  sg_ctx sc = {n, a, b, c};
  run_sgemm(&sc);
  const double t = best_of(3, run_sgemm, &sc);
  printf("%.3f %s\n", 2.0 * n * n * n / t * 1e-9, openblas_get_corename());
  free(a), free(b), free(c);
  return 0;
}

/* Measure every allowed core type; set OPENBLAS_CORETYPE to the fastest and
 * BENCH_GEMM_ANCHOR to what was tried (printed by the restarted bench). */
static void choose_core(int threads) {
  char tried[1024] = "", best[64] = "", self[1024];
  const ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
  if (sl <= 0 || memchr(self, '\'', (size_t)sl)) return; /* OpenBLAS's own choice, said so */
  self[sl] = 0;
  double best_g = -1;
  for (size_t i = 0; i < NCORES; i++) {
    int ok = 1;
    for (int k = 0; k < 4 && CORES[i].needs[k]; k++) ok = ok && cpu_has(CORES[i].needs[k]);
    if (!ok) continue;
    char cmd[1400], out[128] = "", core[64] = "";
    snprintf(cmd, sizeof cmd, "%s%s BENCH_GEMM_ANCHOR_CHILD=%d '%s' 2>/dev/null",
             CORES[i].name[0] ? "OPENBLAS_CORETYPE=" : "", CORES[i].name, threads, self);
    FILE *p = popen(cmd, "r");
    double g = -1;
    if (p) {
      if (fgets(out, sizeof out, p) && sscanf(out, "%lf %63s", &g, core) != 2) g = -1;
      pclose(p);
    }
    char one[160];
    if (g < 0) snprintf(one, sizeof one, "%s%s failed", tried[0] ? ", " : "", CORES[i].name[0] ? CORES[i].name : "default");
    else if (CORES[i].name[0] && !strcasecmp(CORES[i].name, core)) snprintf(one, sizeof one, "%s%s %.0f", tried[0] ? ", " : "", core, g);
    else snprintf(one, sizeof one, "%s%s (got %s) %.0f", tried[0] ? ", " : "", CORES[i].name[0] ? CORES[i].name : "default", core, g);
    strncat(tried, one, sizeof tried - strlen(tried) - 1);
    if (g > best_g) {
      best_g = g;
      snprintf(best, sizeof best, "%s", CORES[i].name);
    }
  }
  if (best[0]) setenv("OPENBLAS_CORETYPE", best, 1);
  setenv("BENCH_GEMM_ANCHOR", tried[0] ? tried : "none measured", 1);
}

int main(int argc, char **argv) {
  const char *child = getenv("BENCH_GEMM_ANCHOR_CHILD");
  if (child) return anchor_child(atoi(child) > 0 ? atoi(child) : 2);
  /* The anchor runs on the fastest SGEMM kernel of the CPU: OPENBLAS_CORETYPE and
   * OPENBLAS_L2_SIZE (set on some machines here) are dropped, every core type the
   * CPU allows is tried, and the bench starts again with the fastest. */
  if (!getenv("BENCH_GEMM_ANCHOR")) {
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv("OPENBLAS_L2_SIZE");
    const long t = argc > 1 ? strtol(argv[1], NULL, 10) : 2;
    choose_core(t >= 1 && t <= 256 ? (int)t : 2);
    if (!getenv("BENCH_GEMM_ANCHOR")) setenv("BENCH_GEMM_ANCHOR", "not measured: /proc/self/exe unreadable", 1);
    execv("/proc/self/exe", argv);
    perror("bench/gemm: restart with the fastest OPENBLAS_CORETYPE");
    return 1;
  }
  /* arguments: threads (1..256), then up to 8 sizes (16..16384); anything else exits 2 */
  int threads = 2, sizes[8] = {1024, 2048}, nsizes = 2;
  if (argc > 10) {
    fprintf(stderr, "bench/gemm: at most 8 sizes (given %d)\nusage: bench/gemm [threads [n ...]]\n", argc - 2);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    char *end;
    const long v = strtol(argv[i], &end, 10);
    const long lo = i == 1 ? 1 : 16, hi = i == 1 ? 256 : 16384;
    if (!*argv[i] || *end || v < lo || v > hi) {
      fprintf(stderr, "bench/gemm: %s '%s' out of range (accepted: an integer %ld..%ld)\nusage: bench/gemm [threads [n ...]]\n",
              i == 1 ? "threads" : "size", argv[i], lo, hi);
      return 2;
    }
    if (i == 1) threads = (int)v;
    else {
      if (i == 2) nsizes = 0;
      sizes[nsizes++] = (int)v;
    }
  }
  static const char *deflt[] = {"fp32", "chunk=128,inner=fp32", "exact", "tc", "acc=f16", "acc=bf16",
                                "acc=f16,round=sr,seed=1", "acc=bf16,round=sr,seed=1"};
  /* BENCH_GEMM_MODELS: these models instead (any accumulation model, ';'-separated, e.g. "tc:ada;exact") */
  const char *models[16];
  size_t nmodels = 0;
  static char list[1024];
  const char *only = getenv("BENCH_GEMM_MODELS");
  if (only) {
    snprintf(list, sizeof list, "%s", only);
    char *save = NULL;
    for (char *t = strtok_r(list, ";", &save); t && nmodels < 16; t = strtok_r(NULL, ";", &save)) {
      exmy_accum probe;
      char e[EXMY_ERRLEN];
      if (exmy_accum_parse(t, &probe, e, sizeof e)) {
        fprintf(stderr, "bench/gemm: BENCH_GEMM_MODELS: %s\n", e);
        return 2;
      }
      models[nmodels++] = t;
    }
  } else
    for (; nmodels < sizeof deflt / sizeof deflt[0]; nmodels++) models[nmodels] = deflt[nmodels];
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);
  printf("bench/gemm: e4m3fn x e4m3fn, per-tensor current scaling, D f32, %d threads, best of 3\n", threads);
  char model[256];
  cpu_model(model, sizeof model);
  printf("anchor: OpenBLAS SGEMM, core %s, the fastest here (SGEMM GFLOP/s at n = 1024: %s)\ncpu: %s\n",
         openblas_get_corename(), getenv("BENCH_GEMM_ANCHOR"), model);
  printf("%6s %-24s %10s %10s %8s\n", "n", "model", "GFLOP/s", "SGEMM", "ratio");
  exmy_format e4, f32;
  exmy_format_parse("e4m3fn", &e4, NULL, 0);
  exmy_format_parse("f32", &f32, NULL, 0);
  for (int s = 0; s < nsizes; s++) {
    const int n = sizes[s];
    const size_t nn = (size_t)n * n;
    float *a = malloc(nn * sizeof *a), *b = malloc(nn * sizeof *b), *c = malloc(nn * sizeof *c);
    bench_fill(a, nn);
    bench_fill(b, nn);
    for (size_t i = 0; i < nn; i++) b[i] *= 0.5f;
    exmy_recipe r;
    exmy_qtensor qa, qb;
    char err[EXMY_ERRLEN];
    exmy_recipe_parse("current", &r, err, sizeof err);
    exmy_rounding sat = exmy_rounding_default(); /* cuda_fp8.h's cast: rne, satfinite */
    sat.sat = EXMY_SAT_FINITE;
    exmy_recipe_quantize(&r, &e4, &sat, a, (size_t)n, (size_t)n, NULL, &qa, NULL, err, sizeof err);
    exmy_recipe_quantize(&r, &e4, &sat, b, (size_t)n, (size_t)n, NULL, &qb, NULL, err, sizeof err);
    /* SGEMM on the dequantized operands: the same values the models multiply */
    exmy_qtensor_to_f32(&qa, a);
    exmy_qtensor_to_f32(&qb, b);
    sg_ctx sc = {n, a, b, c};
    run_sgemm(&sc); /* warm up */
    const double flop = 2.0 * (double)n * n * n;
    const double ts = best_of(3, run_sgemm, &sc);
    printf("%6d %-24s %10.2f %10.2f %8.3f\n", n, "OpenBLAS sgemm", flop / ts * 1e-9, flop / ts * 1e-9, 1.0);
    for (size_t m = 0; m < nmodels; m++) {
      exmy_accum acc;
      exmy_accum_parse(models[m], &acc, NULL, 0);
      exmy_gemm_args g;
      exmy_gemm_args_init(&g);
      g.a = &qa;
      g.b = &qb;
      g.accum = &acc;
      g.d_fmt = &f32;
      g.threads = threads;
      em_ctx ec = {&g, c};
      const double t = best_of(3, run_emu, &ec);
      printf("%6d %-24s %10.2f %10.2f %8.3f\n", n, models[m], flop / t * 1e-9, flop / ts * 1e-9, ts / t);
      fflush(stdout);
    }
#if defined(__x86_64__) && defined(__GNUC__)
    int any_sr = 0;
    for (size_t m = 0; m < nmodels; m++) any_sr |= strstr(models[m], "round=sr") != NULL;
    /* under EXMY_NO_AVX512 the sr kernel is not the AVX-512 one */
    if (any_sr && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && !exmy__avx512_disabled()) {
      const double tr = best_of(3, rng_draws, (void *)&threads), draws = (double)threads * 16.0 * (double)(1L << 22);
      printf("%6d %-24s %10.2f %10.2f %8.3f  (the sr models' ceiling: one draw per multiply-add)\n", n,
             "SplitMix64 draws alone", 2.0 * draws / tr * 1e-9, flop / ts * 1e-9, 2.0 * draws / tr / (flop / ts));
    }
#endif
    exmy_qtensor_free(&qa);
    exmy_qtensor_free(&qb);
    free(a), free(b), free(c);
  }
  step_gemm L[32];
  const size_t nl = step_list(L);
  double flop = 0.0;
  for (size_t i = 0; i < nl; i++) flop += 2.0 * L[i].m * L[i].n * L[i].k * L[i].count;
  const size_t big = 256 * 256;
  float *a = malloc(big * sizeof *a), *b = malloc(big * sizeof *b), *c = malloc(big * sizeof *c);
  bench_fill(a, big);
  bench_fill(b, big);
  step_ctx sb = {L, nl, a, b, c, 0, threads}, se = {L, nl, a, b, c, 1, threads};
  run_step(&sb), run_step(&se); /* warm up */
  const double tsb = best_of(5, run_step, &sb), tse = best_of(5, run_step, &se);
  printf("step list: %zu GEMM shapes, %.1f MFLOP (default tiny GPT, f32 operands, D f32)\n", nl, flop * 1e-6);
  printf("%6s %-24s %10.2f %10.2f %8.3f\n", "step", "OpenBLAS sgemm", flop / tsb * 1e-9, flop / tsb * 1e-9, 1.0);
  printf("%6s %-24s %10.2f %10.2f %8.3f\n", "step", "fp32", flop / tse * 1e-9, flop / tsb * 1e-9, tsb / tse);
  free(a), free(b), free(c);
  return 0;
}
