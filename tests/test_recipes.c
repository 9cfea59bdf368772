/* test_recipes.c: the faithful recipes of the training engine.
 *  - the simulated R-rank all-reduce (allreduce.c) on hand-computed cases:
 *    MS-AMP O1's FP8 sum (one scale from the MAX of the ranks' amaxes, times
 *    1/sqrt(R); partial sums in rank order, each rounded to e4m3fn) and the
 *    fp32 sum of the other tensors (each rank / R, rank order);
 *  - msamp = 3 stores linear layers' weights in fp16 (from init and after
 *    every update) and nothing else; Adam's moments stay fp32;
 *  - vocab = word:K on tests/data/vocab/small.txt: the words, their order
 *    (count, then first appearance) and every token's id, worked out by
 *    hand; a run trains on a word vocabulary and the default stays bytes. */
#include "experiments/model.h"
#include "experiments/xp.h"
#include "tests/testutil.h"

#include <math.h>

static void set(xp_config *c, const char *k, const char *v) {
  char err[EXMY_ERRLEN];
  if (xp_config_set(c, k, v, err, sizeof err)) printf("config %s=%s: %s\n", k, v, err), exit(1);
}

/* The engine's defaults with a one-layer GPT, 16 wide, 4 sequences of 8, 5 steps. */
static void tiny_gpt(xp_config *c) {
  xp_config_default(c);
  const char *kv[][2] = {{"n_layer", "1"}, {"d_model", "16"}, {"n_head", "2"}, {"seq_len", "8"},
                         {"batch", "4"},   {"steps", "5"},    {"progress", "0"}, {"eval_batches", "1"}};
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++) set(c, kv[i][0], kv[i][1]);
}

/* A model of two tensors: "l.w" (linear layer l's weight) and "x.b". */
static int tiny_model(xp_model *m) {
  memset(m, 0, sizeof *m);
  if (xp_add_tensor(m, "l.w", 1, 2, 1) < 0 || xp_add_tensor(m, "x.b", 1, 2, 0) < 0 || xp_alloc_params(m) ||
      xp_set_lin_names(m, 1))
    return -1;
  snprintf(m->lin_name[0], 32, "l");
  xp_mark_linear_weights(m); /* what xp_model_init does for a model of the table */
  return 0;
}

static void test_allreduce(void) {
  xp_config c;
  xp_config_default(&c);
  set(&c, "msamp", "3");
  set(&c, "allreduce_ranks", "4");
  xp_model m;
  xp_allreduce a;
  if (tiny_model(&m) || xp_allreduce_init(&a, &c, &m)) {
    CHECK(0, "set-up");
    return;
  }
  /* rank r's gradient: l.w[0], l.w[1], x.b[0], x.b[1] */
  const float g[4][4] = {{1.0f, 0.5f, 1.0f, 1e-8f},
                         {9.0f / 128, 0.0f, 2.0f, 1.0f},
                         {9.0f / 128, 0.0f, 3.0f, -1.0f},
                         {9.0f / 128, 0.0f, 4.0f, 0.0f}};
  for (int r = 0; r < 4; r++) memcpy(xp_allreduce_rank(&a, &m, r), g[r], sizeof g[r]);
  xp_allreduce_run(&a, &m);
  /* l.w: amax 1 over the ranks -> 2^floor(log2(448)) = 256, times 1/sqrt(4): s = 128.
   * [0]: 128 + 9 = 137 -> e4m3 144 (step 16 in [128, 256)); 144 + 9 = 153 -> 160;
   *      160 + 9 = 169 -> 176; 176 / 128 / 4 = 0.34375 (exact mean 0.302734375;
   *      with each rank's own scale, or another order, it differs: 9+9 = 18,
   *      18+9 = 27 -> 28, 28 + 128 = 156 -> 160).
   * [1]: 64 / 128 / 4 = 0.125.
   * x.b: fp32, each rank / 4, rank order: 0.25+0.5+0.75+1 = 2.5;
   *      2.5e-9 + 0.25 = 0.25 (absorbed), - 0.25 = 0, + 0 = 0. */
  const float want[4] = {0.34375f, 0.125f, 2.5f, 0.0f};
  for (int i = 0; i < 4; i++)
    CHECK(tu_bits32(m.grads[i]) == tu_bits32(want[i]), "allreduce R=4 msamp=3: element %d = %a (0x%08x), want %a", i,
          m.grads[i], tu_bits32(m.grads[i]), want[i]);
  xp_allreduce_free(&a);
  /* one rank: l.w cast to e4m3 with its own scale (amax 1 -> 256): 0.3 * 256 = 76.8 -> 80 (step 8 in [64, 128)),
   * 80 / 256 = 0.3125; x.b as it is */
  set(&c, "allreduce_ranks", "1");
  if (xp_allreduce_init(&a, &c, &m)) {
    CHECK(0, "set-up R=1");
    return;
  }
  const float g1[4] = {0.3f, -1.0f, 0.3f, 1e-8f}, want1[4] = {0.3125f, -1.0f, 0.3f, 1e-8f};
  memcpy(m.grads, g1, sizeof g1);
  xp_allreduce_run(&a, &m);
  for (int i = 0; i < 4; i++)
    CHECK(tu_bits32(m.grads[i]) == tu_bits32(want1[i]), "allreduce R=1 msamp=3: element %d = %a (0x%08x), want %a", i,
          m.grads[i], tu_bits32(m.grads[i]), want1[i]);
  xp_allreduce_free(&a);
  xp_params_free(&m);
}

/* x is a binary16 value: 11 significant bits and an exponent in range
 * (checked with frexp, independently of exmy's conversions). */
static int is_f16(float x) {
  if (x == 0) return 1;
  int e;
  const double fr = frexp(fabs((double)x), &e); /* x = fr 2^e, fr in [0.5, 1) */
  if (fabs(x) > 65504) return 0;
  const int bits = e - 1 >= -14 ? 11 : 11 - (-14 - (e - 1)); /* subnormals keep fewer */
  if (bits <= 0) return 0;
  const double sc = ldexp(fr, bits);
  return sc == floor(sc);
}

static void test_fp16_weights(void) {
  xp_config c;
  tiny_gpt(&c);
  set(&c, "msamp", "3");
  xp_model m;
  xp_optim o;
  char err[EXMY_ERRLEN];
  if (xp_model_init(&m, &c.model, 20, 7, err, sizeof err) || xp_optim_init(&o, m.nparams)) {
    CHECK(0, "set-up: %s", err);
    return;
  }
  xp_optim_setup(&o, &m, &c);
  uint64_t st = 11;
  for (int step = 0; step <= 3; step++) {
    int lin_ok = 1, other_f32 = 0, moments_f32 = 0;
    for (int t = 0; t < m.ntensors; t++) {
      const xp_param *p = &m.tensors[t];
      const size_t k = strlen(p->name);
      const int linear = k > 2 && !strcmp(p->name + k - 2, ".w");
      for (size_t i = 0; i < p->n; i++) {
        const float v = m.params[p->off + i];
        if (linear && !is_f16(v)) {
          if (lin_ok) printf("  %s[%zu] = %a (0x%08x) is not fp16 after %d updates\n", p->name, i, v, tu_bits32(v), step);
          lin_ok = 0;
        }
        if (!linear && !is_f16(v)) other_f32 = 1;
        if (step && !is_f16(o.m[p->off + i])) moments_f32 = 1;
      }
    }
    CHECK(lin_ok, "msamp=3: linear weights fp16 after %d updates", step);
    CHECK(other_f32, "msamp=3: other tensors (embeddings, norms, biases) stay fp32 after %d updates", step);
    if (step) CHECK(moments_f32, "msamp=3: Adam's first moment stays fp32 after %d updates", step);
    for (size_t i = 0; i < m.nparams; i++) m.grads[i] = (float)((double)(tu_next(&st) >> 11) * 0x1p-53 - 0.5) * 0.1f;
    double gn;
    xp_optim_step(&o, &m, &c, step, 1e-3, &gn);
  }
  xp_optim_free(&o);
  xp_model_free(&m);
}

static char *read_small(size_t *len) {
  const char *sd = getenv("srcdir"); /* automake's harness: the top source dir */
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/vocab/small.txt", sd && *sd ? sd : ".");
  FILE *f = fopen(path, "rb");
  static char buf[4096];
  *len = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  CHECK(*len > 0, "cannot read %s", path);
  return buf;
}

static void test_words(void) {
  size_t len;
  const char *text = read_small(&len);
  if (!len) return;
  /* "the cat sat. The cat ran, the dog sat!\nzebra\n": 13 tokens, the last
   * (zebra) validates (13 - 13/10 = 12 train).  Training counts: the 2, cat 2,
   * sat 2 (first at 0, 1, 2), then ".", The, ran, ",", dog, "!" once each. */
  xp_words w;
  char err[EXMY_ERRLEN];
  if (xp_words_build(&w, text, len, 4, 1, err, sizeof err)) {
    CHECK(0, "xp_words_build: %s", err);
    return;
  }
  const char *want_word[] = {"<unk>", "the", "cat", "sat", "."};
  const int want_tok[] = {1, 2, 3, 4, 0, 2, 0, 0, 1, 0, 3, 0, 0};
  CHECK(w.vocab == 5 && w.ntok == 13 && w.ntrain == 12, "word:4: vocab %d ntok %zu ntrain %zu, want 5 13 12", w.vocab,
        w.ntok, w.ntrain);
  for (int v = 0; v < 5 && v < w.vocab; v++)
    CHECK(!strcmp(w.word[v], want_word[v]), "word:4: word %d is '%s', want '%s'", v, w.word[v], want_word[v]);
  for (size_t t = 0; t < 13 && t < w.ntok; t++)
    CHECK(w.tok[t] == want_tok[t], "word:4: token %zu is %d, want %d", t, w.tok[t], want_tok[t]);
  xp_words_free(&w);
  /* K above the distinct words: all 9 training words and <unk> (zebra) */
  if (!xp_words_build(&w, text, len, 100, 1, err, sizeof err)) {
    CHECK(w.vocab == 10 && w.tok[12] == 0 && !strcmp(w.word[9], "!"), "word:100: vocab %d (want 10), zebra %d, last '%s'",
          w.vocab, w.tok[12], w.word[w.vocab - 1]);
    xp_words_free(&w);
  } else CHECK(0, "xp_words_build K=100: %s", err);

  /* a run on the word vocabulary: lm_head is vocab x d_model */
  xp_config c;
  tiny_gpt(&c);
  set(&c, "vocab", "word:100");
  xp_data d;
  if (xp_data_init(&d, &c, err, sizeof err)) {
    CHECK(0, "xp_data_init word:100: %s", err);
    return;
  }
  CHECK(d.vocab == 101, "builtin word:100: vocab %d, want 101 (296 distinct words)", d.vocab);
  xp_data_free(&d);
  xp_result r;
  if (xp_train(&c, &r, err, sizeof err)) CHECK(0, "xp_train word:100: %s", err);
  else {
    CHECK(r.steps_done == 5 && isfinite(r.final_loss) && r.final_loss < r.first_loss && r.first_loss > 4.0,
          "word:100 run: %ld steps, loss %g -> %g (log 101 = 4.6 at the start)", r.steps_done, r.first_loss, r.final_loss);
    xp_result_free(&r);
  }
}

int main(void) {
  test_allreduce();
  test_fp16_weights();
  test_words();
  return tu_finish("test_recipes");
}
