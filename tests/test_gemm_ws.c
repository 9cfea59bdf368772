/* test_gemm_ws.c: the GEMM's workspace and batch entry points and the fast
 * kernels' tiling, bit for bit against the plain-C reference
 * (exmy_gemm_ref, itself judged by test_gemm's independent references).
 *
 * Shapes cross the fast kernels' register tiles (12 x 32 with AVX-512,
 * 6 x 16 with AVX2), parallel tiles (240 rows, 512 columns) and k slabs
 * (256), with chunks that divide a slab, do not, and span several;
 * operands f32 (a view), bf16, f16, e4m3fn, e5m2 in every transpose, per
 * tensor, block:1x128 (PROMOTE) and mx (INNER) scaling; D in f32 (the
 * direct epilogue) and bf16; inputs with zeros, subnormals, inf and NaN;
 * the exact model too (packed from 8-bit codes) and acc=f16 / chunked
 * acc=bf16 (the AVX-512 accumulator kernel; f16 overflows to inf) and
 * fp32:pairwise, whole, chunked and promoted; and acc=tc on 8-bit operands
 * (the 16-bit kernel's two exponent passes, its k blocks of 256 over
 * bands of 64 rows, a chunk inside a block; the float kernel's AVX-512
 * form, f = 14 and 15, and its generic one, f = 15 and int64 sums), whole
 * and promoted (block:1x128).
 * Each case runs through exmy_gemm, exmy_gemm_ws_run with one workspace
 * kept over all cases (shapes grow and shrink) and exmy_gemm_batch on 1
 * and 2 threads; on an AVX-512 machine everything runs again with
 * EXMY_NO_AVX512=1 (the AVX2 kernels).  D codes, amax_d and flags must be
 * identical.  Env: EXMY_TEST_SEED. */
#include "exmy.h"
#include "testutil.h"

#include <math.h>

static uint64_t g_rng;

typedef struct tcase {
  size_t m, n, k;
  int ta, tb;
  const char *fa, *fb, *recipe, *model, *dfmt;
  int special;                  /* sprinkle zeros, subnormals, inf, NaN */
  float alpha, scale_d;
} tcase;

typedef struct built {
  exmy_format fa, fb, df;
  exmy_recipe ra, rb;
  exmy_qtensor qa, qb;
  exmy_accum acc;
  exmy_gemm_args args;
  size_t dbytes;
} built;

static float rnd_value(int special) {
  const uint64_t r = tu_next(&g_rng);
  if (special && r % 97 == 0) {
    static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -3e-39f, 3e38f};
    return sp[(r >> 8) % 8];
  }
  const double u = (double)(r >> 11) * 0x1p-53 * 2.0 - 1.0;
  return (float)ldexp(u, (int)((r >> 3) % 9) - 4);
}

static void build(const tcase *t, built *b) {
  char err[EXMY_ERRLEN];
  memset(b, 0, sizeof *b);
  b->fa = tu_format(t->fa);
  b->fb = tu_format(t->fb);
  b->df = tu_format(t->dfmt);
  const size_t ar = t->ta ? t->k : t->m, ac = t->ta ? t->m : t->k;
  const size_t br = t->tb ? t->n : t->k, bc = t->tb ? t->k : t->n;
  /* block and mx groups run along the stored rows: A m x k, B n x k (trans_b) */
  const int inner = !strcmp(t->recipe, "mx");
  const char *rb = inner ? (t->tb ? "mx" : "mx:col") : !strcmp(t->recipe, "block:1x128") ? (t->tb ? "block:1x128" : "block:128x1") : t->recipe;
  const char *ra = inner ? (t->ta ? "mx:col" : "mx") : !strcmp(t->recipe, "block:1x128") ? (t->ta ? "block:128x1" : "block:1x128") : t->recipe;
  if (exmy_recipe_parse(ra, &b->ra, err, sizeof err) || exmy_recipe_parse(rb, &b->rb, err, sizeof err)) {
    printf("recipe: %s\n", err);
    exit(1);
  }
  float *x = malloc((ar * ac + br * bc + 1) * sizeof *x);
  for (size_t i = 0; i < ar * ac + br * bc; i++) x[i] = rnd_value(t->special);
  exmy_rounding r = exmy_rounding_default();
  r.sat = EXMY_SAT_FINITE;
  if (exmy_recipe_quantize(&b->ra, &b->fa, &r, x, ar, ac, NULL, &b->qa, NULL, err, sizeof err) ||
      exmy_recipe_quantize(&b->rb, &b->fb, &r, x + ar * ac, br, bc, NULL, &b->qb, NULL, err, sizeof err)) {
    printf("quantize: %s\n", err);
    exit(1);
  }
  free(x);
  if (exmy_accum_parse(t->model, &b->acc, err, sizeof err)) {
    printf("model: %s\n", err);
    exit(1);
  }
  exmy_gemm_args_init(&b->args);
  b->args.a = &b->qa;
  b->args.b = &b->qb;
  b->args.trans_a = t->ta;
  b->args.trans_b = t->tb;
  b->args.accum = &b->acc;
  b->args.d_fmt = &b->df;
  b->args.alpha = t->alpha;
  b->args.scale_d = t->scale_d;
  b->dbytes = t->m * t->n * (size_t)exmy_code_bytes(&b->df);
}

static void unbuild(built *b) {
  exmy_qtensor_free(&b->qa);
  exmy_qtensor_free(&b->qb);
}

static void describe(const tcase *t, const char *isa) {
  printf("  case %s: %zu x %zu x %zu ta=%d tb=%d A %s B %s recipe %s model %s D %s alpha %g scale_d %g%s\n", isa, t->m,
         t->n, t->k, t->ta, t->tb, t->fa, t->fb, t->recipe, t->model, t->dfmt, (double)t->alpha, (double)t->scale_d,
         t->special ? " with specials" : "");
}

/* First differing code of D, in hex. */
static void first_diff(const built *b, const void *x, const void *y, size_t mn) {
  for (size_t i = 0; i < mn; i++) {
    const uint64_t cx = exmy_code_get(&b->df, x, i), cy = exmy_code_get(&b->df, y, i);
    if (cx != cy) {
      printf("    D[%zu] 0x%" PRIx64 " vs reference 0x%" PRIx64 "\n", i, cx, cy);
      return;
    }
  }
}

#define NB 4 /* cases per batch */

static void run_batch(const tcase *t, int nc, exmy_gemm_ws *ws, const char *isa) {
  built b[NB];
  void *dref[NB], *dv[NB];
  float aref[NB], abat[NB];
  unsigned fref[NB];
  char err[EXMY_ERRLEN];
  for (int c = 0; c < nc; c++) {
    build(&t[c], &b[c]);
    dref[c] = calloc(b[c].dbytes + 1, 1);
    dv[c] = calloc(b[c].dbytes + 1, 1);
    fref[c] = 0;
    const int rc = exmy_gemm_ref(&b[c].args, dref[c], &aref[c], &fref[c], err, sizeof err);
    CHECK(rc == 0, "reference failed: %s", err);
  }
  for (int v = 0; v < 3; v++) /* exmy_gemm threads 1, 2; exmy_gemm_ws_run threads 2 */
    for (int c = 0; c < nc; c++) {
      float am = -1.0f;
      unsigned fl = 0;
      memset(dv[c], 0xA5, b[c].dbytes);
      b[c].args.threads = v == 0 ? 1 : 2;
      const int rc = v == 2 ? exmy_gemm_ws_run(&b[c].args, ws, dv[c], &am, &fl, err, sizeof err)
                            : exmy_gemm(&b[c].args, dv[c], &am, &fl, err, sizeof err);
      const int same = rc == 0 && !memcmp(dv[c], dref[c], b[c].dbytes) && tu_bits32(am) == tu_bits32(aref[c]) &&
                       fl == fref[c];
      CHECK(same, "%s differs from exmy_gemm_ref (amax 0x%08x vs 0x%08x, flags %u vs %u)",
            v == 2 ? "exmy_gemm_ws_run" : v ? "exmy_gemm(threads=2)" : "exmy_gemm(threads=1)", tu_bits32(am),
            tu_bits32(aref[c]), fl, fref[c]);
      if (!same) {
        describe(&t[c], isa);
        first_diff(&b[c], dv[c], dref[c], t[c].m * t[c].n);
      }
    }
  exmy_gemm_args args[NB];
  for (int c = 0; c < nc; c++) args[c] = b[c].args;
  for (int th = 1; th <= 2; th++) {
    unsigned fl = 0, fall = 0;
    for (int c = 0; c < nc; c++) memset(dv[c], 0x5A, b[c].dbytes), fall |= fref[c];
    for (int c = 0; c < nc; c++) args[c].threads = th;
    const int rc = exmy_gemm_batch(args, (size_t)nc, dv, abat, &fl, err, sizeof err);
    CHECK(rc == 0 && fl == fall, "exmy_gemm_batch(threads=%d): rc %d flags %u vs %u: %s", th, rc, fl, fall,
          rc ? err : "");
    for (int c = 0; c < nc; c++) {
      const int same = !memcmp(dv[c], dref[c], b[c].dbytes) && tu_bits32(abat[c]) == tu_bits32(aref[c]);
      CHECK(same, "exmy_gemm_batch(threads=%d) problem %d differs from exmy_gemm_ref", th, c);
      if (!same) {
        describe(&t[c], isa);
        first_diff(&b[c], dv[c], dref[c], t[c].m * t[c].n);
      }
    }
  }
  for (int c = 0; c < nc; c++) {
    unbuild(&b[c]);
    free(dref[c]);
    free(dv[c]);
  }
}

static void sweep(const char *isa, exmy_gemm_ws *ws) {
  static const size_t shapes[][3] = {{245, 40, 70}, {25, 530, 300}, {37, 70, 513}, {1, 1, 1},
                                     {13, 33, 257}, {12, 32, 256}, {50, 17, 129}, {7, 100, 40}};
  static const char *fmts[] = {"f32", "bf16", "f16", "e4m3fn", "e5m2"};
  static const char *models[] = {"fp32", "chunk=64,inner=fp32", "chunk=100,inner=fp32", "chunk=300,inner=fp32",
                                 "fp32", "fp32", "exact", "acc=f16", "chunk=64,inner=acc=bf16",
                                 "fp32:pairwise", "chunk=100,inner=fp32:pairwise", "fp32:pairwise",
                                 "tc", "tc:hopper-fastacc", "tc:hopper,zero=v1", "tc:ada", "chunk=100,inner=tc:hopper-fastacc",
                                 "tc:hopper,f=14", "tc:blackwell", "tc:ada,f=15,zero=v1", "tc:hopper,f=15"};
  static const char *recipes[] = {"none", "none", "current", "current", "block:1x128", "mx", "none", "none", "block:1x128",
                                  "current", "none", "block:1x128",
                                  "block:1x128", "current", "none", "block:1x128", "current", "block:1x128", "none",
                                  "current", "block:1x128"};
  const int nshape = (int)(sizeof shapes / sizeof *shapes), nmodel = (int)(sizeof models / sizeof *models);
  tcase batch[NB];
  int nb = 0, ncase = 0;
  for (int s = 0; s < nshape; s++)
    for (int md = 0; md < nmodel; md++) {
      tcase t;
      t.m = shapes[s][0], t.n = shapes[s][1], t.k = shapes[s][2];
      const uint64_t r = tu_next(&g_rng);
      t.ta = (int)(r & 1), t.tb = (int)((r >> 1) & 1);
      t.recipe = recipes[md];
      t.model = models[md];
      const int inner = !strcmp(t.recipe, "mx");
      t.fa = inner ? ((r >> 2) & 1 ? "e4m3fn" : "e5m2") : fmts[(r >> 2) % 5];
      t.fb = inner ? ((r >> 5) & 1 ? "e4m3fn" : "e5m2") : fmts[(r >> 5) % 5];
      if (!strcmp(t.recipe, "current") && !strcmp(t.fa, "f32")) t.fa = "bf16";
      if (!strcmp(t.model, "exact")) /* formats whose products and sums fit the double kernel */
        t.fa = (r >> 2) & 1 ? "e4m3fn" : "e3m2fn", t.fb = (r >> 5) & 1 ? "e4m3fn" : "e2m1fn";
      if (strstr(t.model, "tc")) /* 8-bit operands: the tc kernels' own packs */
        t.fa = (r >> 2) & 1 ? "e4m3fn" : "e5m2", t.fb = (r >> 5) & 1 ? "e4m3fn" : "e5m2";
      t.dfmt = (r >> 8) % 4 ? "f32" : "bf16";
      t.special = (r >> 10) % 3 == 0 || !strcmp(t.model, "exact");
      t.alpha = (r >> 12) % 3 ? 1.0f : -0.75f;
      t.scale_d = (r >> 14) % 4 ? 1.0f : ((r >> 16) & 1 ? 0.0f : 3e30f); /* 0 * inf, overflow to inf */
      batch[nb++] = t;
      ncase++;
      if (nb == NB) run_batch(batch, nb, ws, isa), nb = 0;
    }
  if (nb) run_batch(batch, nb, ws, isa);
  printf("%s: %d cases\n", isa, ncase);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const uint64_t seed = tu_seed(0x77730c0de);
  exmy_gemm_ws ws;
  exmy_gemm_ws_init(&ws);
  __builtin_cpu_init();
  const int has512 = __builtin_cpu_supports("avx512f");
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 0 && !has512) continue;
    g_rng = seed;
    setenv("EXMY_NO_AVX512", pass ? "1" : "0", 1);
    sweep(pass ? "AVX2 kernels (EXMY_NO_AVX512=1)" : "AVX-512 kernels", &ws);
  }
  exmy_gemm_ws_free(&ws);
  exmy_gemm_ws_free(&ws); /* freeing an empty workspace is a no-op */
  /* errors: no outputs, a failing problem named by its index */
  {
    char err[EXMY_ERRLEN] = "";
    exmy_gemm_args a[2];
    exmy_gemm_args_init(&a[0]);
    exmy_gemm_args_init(&a[1]);
    float d0[1], d1[1];
    void *d[2] = {d0, d1};
    a[0].threads = a[1].threads = 2;
    CHECK(exmy_gemm_batch(a, 2, NULL, NULL, NULL, err, sizeof err) == -1, "a batch without outputs is accepted");
    CHECK(exmy_gemm_batch(a, 2, d, NULL, NULL, err, sizeof err) == -1 && strstr(err, "problem 0"),
          "a batch of invalid problems: '%s'", err);
    CHECK(exmy_gemm_batch(a, 0, NULL, NULL, NULL, err, sizeof err) == 0, "an empty batch fails: %s", err);
    /* the batch's thread count is one number: problems that disagree are refused, naming the first */
    a[1].threads = 3;
    CHECK(exmy_gemm_batch(a, 2, d, NULL, NULL, err, sizeof err) == -1 &&
              strstr(err, "problem 1: threads 3, but problem 0 has 2"),
          "a batch with two thread counts: '%s'", err);
  }
  return tu_finish("test_gemm_ws");
}
