/* test_xp.c: the training engine's run-level guarantees.
 *  - the spike and divergence rules on scripted loss series;
 *  - determinism: 1 and 2 threads, the same seed twice (loss bits and the
 *    final checkpoint byte for byte), another seed differs;
 *  - resume: stop, checkpoint, resume gives the uninterrupted run's losses
 *    and final checkpoint exactly (delayed scaling, stochastic rounding and
 *    the check-and-fallback state included);
 *  - the check-and-fallback loop, calibration after a bf16 checkpoint,
 *    MS-AMP levels and master-weight rounding run; the MLP tasks learn;
 *  - config errors name the bad key or value;
 *  - each model row's capability flags agree with its hooks (norms: the
 *    range shift; outliers: the metrics), and the keys that need a
 *    capability are refused by it;
 *  - the shipped corpus (data = shakespeare): nanoGPT's vocabulary and
 *    split, found without environment variables, a wrong file refused;
 *  - wd_mode: the decay term of one AdamW step, coupled and independent;
 *    bias = 0, tie = 1, pos = rope train (their gradients: test_xp_grad). */
#include "experiments/layers.h"
#include "experiments/xp.h"
#include "tests/testutil.h"

#include <glob.h>
#include <math.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static void base(xp_config *c, uint64_t seed) {
  xp_config_default(c);
  char err[EXMY_ERRLEN];
  const char *kv[][2] = {{"n_layer", "2"}, {"d_model", "16"}, {"n_head", "2"}, {"seq_len", "8"}, {"batch", "4"},
                         {"steps", "12"}, {"progress", "0"}, {"eval_batches", "1"}, {"warmup_frac", "0.25"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (xp_config_set(c, kv[i][0], kv[i][1], err, sizeof err)) printf("config: %s\n", err), exit(1);
  c->seed = seed;
}

static void set(xp_config *c, const char *k, const char *v) {
  char err[EXMY_ERRLEN];
  if (xp_config_set(c, k, v, err, sizeof err)) printf("config %s=%s: %s\n", k, v, err), exit(1);
}

/* A model of vocabulary 20 and an engine context on c; -1 (a failed check) when either fails. */
static int open_ctx(const xp_config *c, uint64_t seed, xp_model *m, xp_ctx *ctx) {
  char err[EXMY_ERRLEN];
  if (xp_model_init(m, &c->model, 20, seed, err, sizeof err) || xp_ctx_init(ctx, c, m, err, sizeof err)) {
    CHECK(0, "set-up: %s", err);
    return -1;
  }
  return 0;
}

static int run(const xp_config *c, xp_result *r) {
  char err[EXMY_ERRLEN];
  if (xp_train(c, r, err, sizeof err)) {
    printf("FAIL xp_train: %s\n", err);
    tu_fails++;
    return -1;
  }
  return 0;
}

static int same_file(const char *a, const char *b) {
  FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
  int same = fa && fb;
  while (same) {
    int x = fgetc(fa), y = fgetc(fb);
    if (x != y) same = 0;
    if (x == EOF || y == EOF) break;
  }
  if (fa) fclose(fa);
  if (fb) fclose(fb);
  return same;
}

static int same_losses(const xp_result *a, const xp_result *b, long n) {
  for (long i = 0; i < n; i++)
    if (tu_bits64(a->loss[i]) != tu_bits64(b->loss[i])) {
      printf("  step %ld: %a vs %a\n", i, a->loss[i], b->loss[i]);
      return 0;
    }
  return 1;
}

static void test_detector(void) {
  xp_detector d;
  xp_detector_init(&d, 8, 1.4, 4);
  int v[20];
  const double series[20] = {4.0, 3.9, 3.5, 3.0, 2.9, 2.8, 2.8, 2.7, 2.7, 2.6, 4.5, 2.6, 2.5, 3.95, 2.5, 2.4,
                             2.4, 4.1, 2.3, NAN};
  for (int i = 0; i < 20; i++) v[i] = xp_detector_feed(&d, i, series[i]);
  /* step 10: 4.5 > 4.0 (first loss) after warmup: divergence (checked before spikes) */
  CHECK(v[10] == 2 && d.diverged_at == 10, "step 10 (4.5 above the first loss 4.0): verdict %d, diverged_at %ld", v[10],
        d.diverged_at);
  /* step 13: 3.95 > 1.4 * median(steps 5..12: 2.8 2.8 2.7 2.7 2.6 4.5 2.6 2.5) = 1.4 * 2.7 = 3.78 */
  CHECK(v[13] == 1, "step 13 (3.95 over 1.4 x median 2.7): verdict %d", v[13]);
  CHECK(v[17] == 2, "step 17 (4.1 above the first loss): verdict %d", v[17]);
  CHECK(v[19] == 2, "NaN: verdict %d", v[19]);
  CHECK(d.diverged_at == 10, "first divergence kept: %ld", d.diverged_at);
  for (int i = 0; i < 10; i++) CHECK(v[i] == 0, "step %d: verdict %d for a falling loss", i, v[i]);
  CHECK(d.spikes == 1 && d.first_spike == 13, "spikes %ld first %ld", d.spikes, d.first_spike);
  xp_detector_free(&d);
  /* no spike before the window is full; equal to factor x median is not a spike */
  xp_detector_init(&d, 4, 2.0, 100);
  const double s2[6] = {10, 1, 1, 8, 1, 2};
  int w[6];
  for (int i = 0; i < 6; i++) w[i] = xp_detector_feed(&d, i, s2[i]);
  CHECK(w[3] == 0, "window not full: verdict %d", w[3]);
  CHECK(w[5] == 0, "2 == 2 x median(1, 1, 8, 1) = 2: verdict %d", w[5]);
  xp_detector_free(&d);
  xp_detector_init(&d, 4, 2.0, 100);
  const double s3[6] = {10, 1, 1, 1, 1, 2.5};
  for (int i = 0; i < 6; i++) w[i] = xp_detector_feed(&d, i, s3[i]);
  CHECK(w[5] == 1, "2.5 > 2 x 1: verdict %d", w[5]);
  xp_detector_free(&d);
  /* data_switch at 4 with warmup 2: steps 4-5 are the new data's warmup (reference: their largest
   * loss, 3.5), no divergence there; from step 6 a loss above 3.5 diverges, 3.4 does not */
  xp_detector_init(&d, 64, 2.0, 2);
  xp_detector_data_switch(&d, 4);
  const double s4[9] = {3.0, 2.5, 2.0, 1.9, 3.2, 3.5, 3.4, 3.3, 3.6};
  int u[9];
  for (int i = 0; i < 9; i++) u[i] = xp_detector_feed(&d, i, s4[i]);
  CHECK(u[4] == 0 && u[5] == 0, "the switch's warmup (3.2, 3.5 above the first loss 3.0): verdicts %d %d", u[4], u[5]);
  CHECK(u[6] == 0 && u[7] == 0, "3.4, 3.3 below the new reference 3.5: verdicts %d %d", u[6], u[7]);
  CHECK(u[8] == 2 && d.diverged_at == 8, "3.6 above 3.5 after the switch's warmup: verdict %d at %ld", u[8],
        d.diverged_at);
  xp_detector_free(&d);
}

/* The schedule: warmup, cosine; lr_restart = R: from R a second cosine from lr (no warmup). */
static void test_lr_restart(void) {
  xp_config c;
  xp_config_default(&c);
  c.steps = 100, c.lr = 1e-2, c.warmup_frac = 0.1, c.min_lr_frac = 0.1;
  double plain[100];
  for (long s = 0; s < 100; s++) plain[s] = xp_lr_at(&c, s);
  c.lr_restart = 60;
  for (long s = 0; s < 60; s++) CHECK(xp_lr_at(&c, s) == plain[s], "step %ld before the restart: %a vs %a", s, xp_lr_at(&c, s), plain[s]);
  const double min = c.lr * c.min_lr_frac;
  CHECK(xp_lr_at(&c, 60) == min + 0.5 * (c.lr - min) * 2.0, "the restart step: %a, lr %a", xp_lr_at(&c, 60), c.lr);
  CHECK(xp_lr_at(&c, 80) == min + 0.5 * (c.lr - min) * (1.0 + cos(3.14159265358979323846 * 0.5)),
        "halfway through the second cosine: %a", xp_lr_at(&c, 80));
  CHECK(xp_lr_at(&c, 61) < c.lr && xp_lr_at(&c, 61) > plain[61], "step 61: %g (plain %g)", xp_lr_at(&c, 61), plain[61]);
}

static void test_determinism(uint64_t seed) {
  xp_config c;
  base(&c, seed);
  set(&c, "prec", "hybrid;recipe=delayed:len=4;round.grad=sr");
  set(&c, "attn", "bf16");
  char p1[300], p2[300], p3[300];
  snprintf(p1, sizeof p1, "%s/t1.ckpt", dir);
  snprintf(p2, sizeof p2, "%s/t2.ckpt", dir);
  snprintf(p3, sizeof p3, "%s/t3.ckpt", dir);
  xp_result r1, r2, r3;
  c.threads = 1;
  snprintf(c.ckpt, sizeof c.ckpt, "%s", p1);
  if (run(&c, &r1)) return;
  c.threads = 2;
  snprintf(c.ckpt, sizeof c.ckpt, "%s", p2);
  if (run(&c, &r2)) return;
  CHECK(same_losses(&r1, &r2, 12), "threads 1 vs 2: losses differ");
  CHECK(same_file(p1, p2), "threads 1 vs 2: final checkpoints differ");
  CHECK(tu_bits64(r1.val_loss) == tu_bits64(r2.val_loss), "val loss %a vs %a", r1.val_loss, r2.val_loss);
  c.threads = 0;
  snprintf(c.ckpt, sizeof c.ckpt, "%s", p3);
  if (run(&c, &r3)) return;
  CHECK(same_losses(&r1, &r3, 12) && same_file(p1, p3), "the same seed twice: results differ");
  CHECK(r1.final_loss < r1.first_loss, "loss did not fall: %g -> %g", r1.first_loss, r1.final_loss);
  xp_result_free(&r3);
  c.seed = seed + 1;
  if (run(&c, &r3)) return;
  CHECK(tu_bits64(r3.loss[0]) != tu_bits64(r1.loss[0]), "another seed gives the same first loss");
  xp_result_free(&r1);
  xp_result_free(&r2);
  xp_result_free(&r3);
}

static void test_resume(uint64_t seed) {
  xp_config c;
  base(&c, seed);
  set(&c, "prec", "hybrid;recipe=delayed:len=4;round.grad=sr");
  set(&c, "check_every", "3");
  set(&c, "check_tol", "1e-6"); /* every check fails: fallback state crosses the stop */
  set(&c, "fallback_steps", "2");
  char full[300], half[300], rest[300];
  snprintf(full, sizeof full, "%s/full.ckpt", dir);
  snprintf(half, sizeof half, "%s/half.ckpt", dir);
  snprintf(rest, sizeof rest, "%s/rest.ckpt", dir);
  xp_result a, b, r;
  snprintf(c.ckpt, sizeof c.ckpt, "%s", full);
  if (run(&c, &a)) return;
  CHECK(a.checks == 4 && a.fallbacks == 4, "checks %ld fallbacks %ld (want 4: steps 0 3 6 9)", a.checks, a.fallbacks);
  printf("resume: uninterrupted run: %ld checks, %ld fallbacks\n", a.checks, a.fallbacks);
  for (long stop = 5; stop <= 7; stop++) {
    xp_config h = c;
    h.stop_after = stop;
    snprintf(h.ckpt, sizeof h.ckpt, "%s", half);
    if (run(&h, &b)) return;
    CHECK(b.steps_done == stop, "stop_after %ld: %ld steps", stop, b.steps_done);
    xp_config t = c;
    snprintf(t.resume, sizeof t.resume, "%s", half);
    snprintf(t.ckpt, sizeof t.ckpt, "%s", rest);
    if (run(&t, &r)) return;
    CHECK(r.steps_done == 12, "resumed run ends at %ld", r.steps_done);
    CHECK(same_losses(&a, &r, 12), "stop at %ld + resume: losses differ from the uninterrupted run", stop);
    CHECK(same_file(full, rest), "stop at %ld + resume: final checkpoint differs", stop);
    CHECK(a.fallbacks == r.fallbacks && a.checks == r.checks && a.spikes == r.spikes,
          "stop at %ld: counters differ (%ld/%ld %ld/%ld)", stop, a.fallbacks, r.fallbacks, a.checks, r.checks);
    CHECK(access(half, F_OK) == 0, "checkpoint missing");
    char tmp[310];
    snprintf(tmp, sizeof tmp, "%s.tmp*", half);
    glob_t g;
    CHECK(glob(tmp, 0, NULL, &g) == GLOB_NOMATCH, "a temporary file was left behind (%s)", g.gl_pathc ? g.gl_pathv[0] : "");
    globfree(&g);
    xp_result_free(&b);
    xp_result_free(&r);
  }
  xp_result_free(&a);
}

static void test_fallback_calibration(uint64_t seed) {
  xp_config c;
  base(&c, seed);
  /* a check that always disagrees: every check falls back */
  set(&c, "prec", "e5m2;recipe=none");
  set(&c, "check_every", "4");
  set(&c, "check_tol", "0");
  set(&c, "fallback_steps", "2");
  xp_result r;
  if (run(&c, &r) == 0) {
    CHECK(r.checks == 3 && r.fallbacks == 3, "check_tol 0: %ld checks, %ld fallbacks (want 3, 3)", r.checks,
          r.fallbacks);
    xp_result_free(&r);
  }
  /* bf16 checkpoint -> FP8 delayed scaling with and without calibration */
  base(&c, seed);
  set(&c, "prec", "bf16");
  char bf[300];
  snprintf(bf, sizeof bf, "%s/bf16.ckpt", dir);
  snprintf(c.ckpt, sizeof c.ckpt, "%s", bf);
  set(&c, "stop_after", "6");
  if (run(&c, &r)) return;
  const double bf_last = r.loss[5];
  xp_result_free(&r);
  xp_result nocal, cal;
  xp_config f;
  base(&f, seed);
  set(&f, "prec", "hybrid;recipe=delayed:len=16");
  snprintf(f.resume, sizeof f.resume, "%s", bf);
  if (run(&f, &nocal)) return;
  set(&f, "calibrate", "1");
  if (run(&f, &cal)) return;
  CHECK(isfinite(nocal.loss[6]) && isfinite(cal.loss[6]), "resumed losses %g %g", nocal.loss[6], cal.loss[6]);
  CHECK(fabs(cal.loss[6] - bf_last) < fabs(nocal.loss[6] - bf_last) + 1e-3,
        "calibration: first FP8 loss %g, without %g, bf16 before %g", cal.loss[6], nocal.loss[6], bf_last);
  printf("calibration: bf16 step 5 loss %.4f; first FP8 step: with calibration %.4f, without %.4f\n", bf_last,
         cal.loss[6], nocal.loss[6]);
  xp_result_free(&nocal);
  xp_result_free(&cal);
}

static void test_variants(uint64_t seed) {
  const char *kinds[][2] = {{"msamp", "1"}, {"msamp", "2"}, {"master", "bf16"}, {"swiglu", "1"}, {"rmsnorm", "1"},
                            {"bias", "0"}, {"tie", "1"}, {"pos", "rope"}, {"wd_mode", "independent"}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    xp_config c;
    base(&c, seed);
    set(&c, "prec", "hybrid;accum.fprop=tc:hopper-fastacc");
    set(&c, kinds[i][0], kinds[i][1]);
    if (!strcmp(kinds[i][0], "master")) set(&c, "master_round", "sr");
    set(&c, "layer.first", "bf16");
    set(&c, "layer.last", "bf16");
    xp_result r;
    if (run(&c, &r)) continue;
    CHECK(isfinite(r.final_loss) && r.final_loss < r.first_loss, "%s=%s: loss %g -> %g", kinds[i][0], kinds[i][1],
          r.first_loss, r.final_loss);
    xp_result_free(&r);
  }
  const char *models[] = {"mlp", "mlp-class"};
  for (int i = 0; i < 2; i++) {
    xp_config c;
    base(&c, seed);
    set(&c, "model", models[i]);
    set(&c, "in_dim", "8");
    set(&c, "hidden", "32");
    set(&c, "depth", "2");
    set(&c, "out_dim", "4");
    set(&c, "batch", "32");
    set(&c, "steps", "40");
    set(&c, "lr", "3e-3");
    set(&c, "prec", "hybrid");
    xp_result r;
    if (run(&c, &r)) continue;
    double head = 0, tail = 0;
    for (int s = 0; s < 5; s++) head += r.loss[s], tail += r.loss[35 + s];
    CHECK(tail < 0.8 * head, "%s: mean loss of the first 5 steps %g, last 5 %g", models[i], head / 5, tail / 5);
    printf("%s: loss %.4f -> %.4f\n", models[i], head / 5, tail / 5);
    xp_result_free(&r);
  }
}

static void test_errors(void) {
  xp_config c;
  xp_config_default(&c);
  char err[EXMY_ERRLEN];
  struct { const char *k, *v, *want; } bad[] = {
    {"lr", "fast", "'fast'"},
    {"n_layer", "0", "n_layer"},
    {"bogus", "1", "'bogus'"},
    {"prec", "e9m9x", "e9m9x"},
    {"prec", "hybrid;recipe=sometimes", "sometimes"},
    {"prec", "hybrid;accum.fwd=fp32", "accum.fwd"},
    {"prec", "hybrid;round=up", "'up'"},
    {"attn", "hybrid;recipe=delayed", "delayed"},
    {"master", "f64", "f64"},
    {"model", "cnn", "'cnn'"},
    {"bias", "2", "'2' is not one of 1, 0"},
    {"tie", "yes", "'yes' is not one of 0, 1"},
    {"pos", "alibi", "'alibi' is not one of learned, rope"},
    {"wd_mode", "lr", "'lr' is not one of coupled, independent"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    int rc = xp_config_set(&c, bad[i].k, bad[i].v, err, sizeof err);
    CHECK(rc == -1 && strstr(err, bad[i].want), "%s=%s: rc %d, message '%s' should name %s", bad[i].k, bad[i].v, rc,
          err, bad[i].want);
  }
  base(&c, 1);
  set(&c, "layer.h9.qkv", "bf16");
  xp_result r;
  CHECK(xp_train(&c, &r, err, sizeof err) == -1 && strstr(err, "h9.qkv"), "unmatched layer override: '%s'", err);
  xp_result_free(&r);
  base(&c, 1);
  set(&c, "data", "/nonexistent/text.txt");
  CHECK(xp_train(&c, &r, err, sizeof err) == -1 && strstr(err, "/nonexistent/text.txt"), "missing data: '%s'", err);
  xp_result_free(&r);
  base(&c, 1); /* RoPE rotates pairs: an odd head width is refused */
  set(&c, "pos", "rope");
  set(&c, "d_model", "18");
  CHECK(xp_train(&c, &r, err, sizeof err) == -1 && strstr(err, "even head width"), "pos rope, hd 9: '%s'", err);
  xp_result_free(&r);
  base(&c, 1);
  set(&c, "tie", "1");
  set(&c, "model", "mlp");
  CHECK(xp_train(&c, &r, err, sizeof err) == -1 && strstr(err, "tie 1: model mlp"), "tie on the mlp: '%s'", err);
  xp_result_free(&r);
}

/* The engine asks a model's capabilities (xp_model_ops.caps), never its
 * kind: the flags must say what the row's hooks can do. */
static void test_model_caps(void) {
  for (int k = 0; k < xp_model_count(); k++) {
    const xp_model_ops *ops = xp_model_of((xp_model_kind)k);
    CHECK(!(ops->caps & XP_CAP_NORMS) == !ops->range_shift, "model %s: XP_CAP_NORMS %d, range_shift hook %d", ops->name,
          !!(ops->caps & XP_CAP_NORMS), !!ops->range_shift);
    CHECK(!(ops->caps & XP_CAP_OUTLIERS) == !(ops->outliers_header && ops->outliers),
          "model %s: XP_CAP_OUTLIERS %d, outlier hooks %d", ops->name, !!(ops->caps & XP_CAP_OUTLIERS),
          ops->outliers_header && ops->outliers);
    CHECK(xp_model_caps((xp_model_kind)k) == ops->caps, "model %s: xp_model_caps", ops->name);
  }
  CHECK(xp_model_caps((xp_model_kind)99) == 0, "an unknown kind has no capabilities");
  xp_config c;
  char err[EXMY_ERRLEN];
  xp_result r;
  base(&c, 1); /* heads: refused before the data is read */
  set(&c, "n_head", "3");
  set(&c, "data", "/nonexistent/text.txt");
  CHECK(xp_train(&c, &r, err, sizeof err) == -1 && strstr(err, "d_model 16 is not a multiple of n_head 3"),
        "n_head 3: '%s'", err);
  xp_result_free(&r);
  base(&c, 1); /* tokens: the mlp has none to rename; the message names the models that have them */
  set(&c, "model", "mlp");
  set(&c, "data_switch", "2");
  CHECK(xp_train(&c, &r, err, sizeof err) == -1 && strstr(err, "model mlp has no tokens to rename (gpt has)"),
        "data_switch on the mlp: '%s'", err);
  xp_result_free(&r);
}

/* data = shakespeare: the shipped file (found through the compiled-in
 * source folder: no EXMY_DATA_DIR), nanoGPT's vocabulary (the sorted set of
 * the file's characters) and split (the first floor(0.9 n) characters
 * train); EXMY_DATA_DIR comes first, and a file that is not the corpus is
 * refused, naming it. */
static void test_corpus(void) {
  static const char chars[] = "\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  xp_config c;
  base(&c, 1);
  set(&c, "data", "shakespeare");
  set(&c, "seq_len", "64"); /* 65-character windows: each occurs once in the text (in practice) */
  char err[EXMY_ERRLEN] = "";
  xp_data d;
  unsetenv("EXMY_DATA_DIR");
  if (xp_data_init(&d, &c, err, sizeof err)) {
    CHECK(0, "data = shakespeare: %s", err);
    return;
  }
  CHECK(d.ntok == 1115394 && d.ntrain == 1003854, "ntok %zu ntrain %zu (want 1115394, 1003854)", d.ntok, d.ntrain);
  CHECK(d.vocab == 65, "vocab %d (want 65)", d.vocab);
  for (int i = 0; i < d.vocab && i < 65; i++)
    CHECK(d.itos[i] == (unsigned char)chars[i], "token %d is 0x%02x, want 0x%02x", i, d.itos[i], (unsigned char)chars[i]);
  static const char head[] = "First Citizen:\nBefore";
  for (int i = 0; i < (int)sizeof head - 1; i++)
    CHECK(d.itos[d.tok[i]] == (unsigned char)head[i], "byte %d: 0x%02x, want 0x%02x", i, d.itos[d.tok[i]], head[i]);
  /* every validation window lies after the split, every training one before it */
  xp_batch_buf bb;
  CHECK(xp_batch_alloc(&bb, &c) == 0, "batch alloc");
  for (long step = 0; step < 10; step++)
    for (int v = 0; v < 2; v++) {
      xp_data_batch(&d, &c, step, v, &bb);
      for (int b = 0; b < c.model.batch; b++) {
        const int *t = bb.tokens + (size_t)b * (size_t)c.model.seq_len;
        size_t off = 0; /* the window's offset: the first match of its tokens, searched on its own side */
        const size_t lo = v ? d.ntrain : 0, hi = v ? d.ntok : d.ntrain;
        int found = 0;
        for (off = lo; off + (size_t)c.model.seq_len + 1 <= hi && !found; off++)
          found = !memcmp(d.tok + off, t, (size_t)c.model.seq_len * sizeof(int)) &&
                  d.tok[off + (size_t)c.model.seq_len] == bb.targets[(size_t)b * (size_t)c.model.seq_len + (size_t)c.model.seq_len - 1];
        CHECK(found, "step %ld %s window %d not inside its split", step, v ? "validation" : "training", b);
      }
    }
  xp_batch_free(&bb);
  xp_data_free(&d);
  /* EXMY_DATA_DIR first: a folder whose shakespeare.txt is another text */
  char sub[300], path[400];
  snprintf(sub, sizeof sub, "%s/corpora", dir);
  mkdir(sub, 0777);
  snprintf(path, sizeof path, "%s/shakespeare.txt", sub);
  FILE *f = fopen(path, "w");
  if (f) {
    for (int i = 0; i < 2000; i++) fputs("To be, or not to be.\n", f);
    fclose(f);
  }
  setenv("EXMY_DATA_DIR", sub, 1);
  err[0] = 0;
  CHECK(xp_data_init(&d, &c, err, sizeof err) == -1 && strstr(err, path) && strstr(err, "is not corpus 'shakespeare'"),
        "a wrong shakespeare.txt in EXMY_DATA_DIR: '%s'", err);
  unsetenv("EXMY_DATA_DIR");
}

/* wd_mode on one AdamW step with zero gradients (Adam's term is 0, so the
 * step is the decay alone): coupled p -= lr wd p, independent
 * p -= (lr / lr_peak) wd p; matrices only. */
static void test_wd_mode(void) {
  for (int indep = 0; indep < 2; indep++) {
    xp_config c;
    base(&c, 1);
    set(&c, "model", "mlp");
    set(&c, "lr", "2e-3");
    set(&c, "weight_decay", "0.1");
    set(&c, "wd_mode", indep ? "independent" : "coupled");
    char err[EXMY_ERRLEN];
    xp_model m;
    xp_optim o;
    if (xp_model_init(&m, &c.model, 0, 1, err, sizeof err) || xp_optim_init(&o, m.nparams)) {
      CHECK(0, "set-up: %s", err);
      return;
    }
    float *p0 = malloc(m.nparams * sizeof *p0);
    memcpy(p0, m.params, m.nparams * sizeof *p0);
    memset(m.grads, 0, m.nparams * sizeof *m.grads);
    double gn;
    const double lr = 1e-3; /* half the peak: the schedule's multiplier 0.5 */
    xp_optim_step(&o, &m, &c, 5, lr, &gn);
    const double want = indep ? 0.5 * 0.1 : lr * 0.1; /* the fraction decayed */
    double worst = 0.0;
    for (int t = 0; t < m.ntensors; t++) {
      const xp_param *pt = &m.tensors[t];
      for (size_t i = 0; i < pt->n; i++) {
        const double a = p0[pt->off + i], b = m.params[pt->off + i];
        const double expect = pt->is_matrix ? a * (1.0 - want) : a;
        const double rel = fabs(b - expect) / fmax(fabs(a), 1e-30);
        worst = fmax(worst, rel);
        if (rel > 1e-6) {
          CHECK(0, "wd_mode %s: %s[%zu] %a -> %a, want %a", indep ? "independent" : "coupled", pt->name, i, a, b, expect);
          break;
        }
      }
    }
    printf("wd_mode %s: decay %g per step at lr %g (peak %g), worst rel err %.2g\n", indep ? "independent" : "coupled",
           want, lr, c.lr, worst);
    free(p0);
    xp_optim_free(&o);
    xp_model_free(&m);
  }
}

/* xp_matmul_batch (attention's products at once) gives, bit for bit, what
 * one xp_matmul per problem gives: fp32, and quantized with stochastic
 * rounding (each problem's own stream) and a block recipe on a transposed
 * operand; 1 and 2 threads. */
static void test_matmul_batch(uint64_t seed) {
  static const char *const attn[] = {"fp32", "e5m2;round=sr", "hybrid;recipe=block:1x8"};
  enum { NB = 6, M = 8, N = 12, K = 16 };
  uint64_t st = seed ^ 0x5eed;
  const int old_threads = omp_get_max_threads();
  float a[NB * M * K], b[NB * K * N], d1[NB * M * N], d2[NB * M * N];
  for (size_t i = 0; i < NB * M * K; i++) a[i] = (float)((double)(tu_next(&st) >> 11) / 9007199254740992.0 - 0.5);
  for (size_t i = 0; i < NB * K * N; i++) b[i] = (float)((double)(tu_next(&st) >> 11) / 9007199254740992.0 - 0.5);
  for (size_t p = 0; p < sizeof attn / sizeof attn[0]; p++)
    for (int threads = 1; threads <= 2; threads++)
      for (int ta = 0; ta < 2; ta++) {
        xp_config c;
        base(&c, seed);
        set(&c, "attn", attn[p]);
        c.threads = threads;
        omp_set_num_threads(threads);
        xp_model m = {0};
        xp_ctx ctx;
        if (open_ctx(&c, seed, &m, &ctx)) return;
        ctx.step = 3;
        xp_gemm_desc g = {.lin = -1, .sub = 5, .role = XP_WGRAD, .a = {.kind = XP_GRAD, .trans = ta, .p = a},
                          .b = {.kind = XP_INPUT, .p = b}, .m = M, .n = N, .k = K};
        for (int i = 0; i < NB; i++) {
          xp_gemm_desc gi = g;
          gi.sub = g.sub + i;
          gi.a.p = a + i * M * K;
          gi.b.p = b + i * K * N;
          gi.d = d1 + i * M * N;
          xp_matmul(&ctx, &gi);
        }
        g.d = d2;
        xp_matmul_batch(&ctx, &g, NB, M * K, K * N, M * N);
        CHECK(!ctx.failed, "%s: %s", attn[p], ctx.err);
        for (size_t i = 0; i < NB * M * N; i++)
          CHECK(tu_bits32(d1[i]) == tu_bits32(d2[i]), "attn %s, trans_a %d, %d threads: d[%zu] batched %08x, one by one %08x",
                attn[p], ta, threads, i, tu_bits32(d2[i]), tu_bits32(d1[i]));
        xp_ctx_free(&ctx);
        xp_model_free(&m);
      }
  omp_set_num_threads(old_threads);
}

/* A linear layer's forward, an evaluation forward of other inputs in the
 * same buffer, and the backward, over 3 steps: with the reuse of quantized
 * operands (x, W, dy read twice a step) and with ctx.no_reuse (every GEMM
 * quantizes afresh), outputs, gradients and the FP8 statistics must be the
 * same bits, for recipes it applies to and ones it must leave alone. */
static void test_operand_reuse(uint64_t seed) {
  static const char *const precs[] = {"hybrid", "hybrid;recipe=delayed:len=4", "e8m3;round=rtz",
                                      "hybrid;round.grad=sr;round.weight=sr", "hybrid;recipe=block:1x8"};
  enum { T = 8, IN = 16, OUT = 12 };
  for (size_t pi = 0; pi < sizeof precs / sizeof precs[0]; pi++) {
    float out[2][4][2 * T * OUT + OUT * IN + T * IN];
    char *stats[2] = {NULL, NULL};
    size_t slen[2] = {0, 0};
    for (int ref = 0; ref < 2; ref++) {
      xp_config c;
      base(&c, seed);
      set(&c, "prec", precs[pi]);
      xp_model m = {0};
      xp_ctx ctx;
      if (open_ctx(&c, seed, &m, &ctx)) return;
      ctx.no_reuse = ref;
      ctx.collect_stats = 1;
      FILE *csv = open_memstream(&stats[ref], &slen[ref]);
      uint64_t st = seed ^ 0xab;
      float x[T * IN], w[OUT * IN], dy[T * OUT], y[T * OUT], dw[OUT * IN], dx[T * IN];
#define RND() ((float)((double)(tu_next(&st) >> 11) / 9007199254740992.0 - 0.5))
      for (int step = 0; step < 4; step++) {
        ctx.step = step;
        for (int i = 0; i < T * IN; i++) x[i] = RND();
        for (int i = 0; i < OUT * IN; i++) w[i] = RND() * (float)(step + 1);
        for (int i = 0; i < T * OUT; i++) dy[i] = RND() * 1e-3f;
        float *o = out[ref][step];
        memset(o, 0, sizeof out[ref][step]);
        xp_linear_forward(&ctx, 0, x, w, NULL, y, T, IN, OUT);
        memcpy(o, y, sizeof y);
        if (step % 2) { /* an evaluation forward of other inputs through the same buffer */
          float keep[T * IN];
          memcpy(keep, x, sizeof x);
          for (int i = 0; i < T * IN; i++) x[i] = RND() * 4;
          xp_linear_forward(&ctx, 0, x, w, NULL, y, T, IN, OUT);
          memcpy(o + T * OUT + OUT * IN + T * IN, y, sizeof y);
          memcpy(x, keep, sizeof x);
          xp_linear_forward(&ctx, 0, x, w, NULL, y, T, IN, OUT);
        }
        xp_linear_backward(&ctx, 0, dy, x, w, dw, NULL, dx, NULL, T, IN, OUT);
        memcpy(o + T * OUT, dw, sizeof dw);
        memcpy(o + T * OUT + OUT * IN, dx, sizeof dx);
        CHECK(!ctx.failed, "%s: %s", precs[pi], ctx.err);
        if (csv) xp_ctx_stats_write(&ctx, step, csv, NULL);
        xp_ctx_step_end(&ctx);
      }
#undef RND
      if (csv) fclose(csv);
      xp_ctx_free(&ctx);
      xp_model_free(&m);
    }
    for (int step = 0; step < 4; step++)
      for (size_t i = 0; i < 2 * T * OUT + OUT * IN + T * IN; i++)
        CHECK(tu_bits32(out[0][step][i]) == tu_bits32(out[1][step][i]),
              "prec %s step %d value %zu: %08x with reuse, %08x quantizing afresh", precs[pi], step, i,
              tu_bits32(out[0][step][i]), tu_bits32(out[1][step][i]));
    CHECK(stats[0] && stats[1] && !strcmp(stats[0], stats[1]), "prec %s: statistics differ:\n%s\nvs\n%s", precs[pi],
          stats[0] ? stats[0] : "", stats[1] ? stats[1] : "");
    CHECK(slen[0] > 0, "prec %s: no statistics written", precs[pi]);
    free(stats[0]);
    free(stats[1]);
  }
}

int main(void) {
  const uint64_t seed = tu_seed(1);
  snprintf(dir, sizeof dir, "test_xp.tmp.%d", (int)getpid());
  if (mkdir(dir, 0777)) {
    perror(dir);
    return 1;
  }
  test_detector();
  test_lr_restart();
  test_errors();
  test_model_caps();
  test_corpus();
  test_wd_mode();
  test_matmul_batch(seed);
  test_operand_reuse(seed);
  test_determinism(seed);
  test_resume(seed);
  test_fallback_calibration(seed);
  test_variants(seed);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (!tu_fails) (void)!system(cmd);
  return tu_finish("test_xp");
}
