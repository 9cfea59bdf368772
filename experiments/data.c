/* data.c: training data.  The built-in corpus is generated English-like
 * text (a small grammar with agreement, numbers and arithmetic), so runs need
 * no download yet have structure at every scale a tiny GPT can learn:
 * spelling, word order, and sums.  The shipped corpora (the table below:
 * Tiny Shakespeare) are files found by name; any text file works too
 * (--data FILE).
 * The MLP tasks draw Gaussian inputs and label them with a fixed random
 * teacher network.  A batch is a pure function of (seed, step, split). */
#include "experiments/model.h"
#include "experiments/xp.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DATA_KEY 0xda7a5eedull

/* ---- the built-in corpus -------------------------------------------------- */

typedef struct gen { uint64_t seed, i; } gen;
static uint64_t draw(gen *g, uint64_t n) { return exmy_random64(g->seed, DATA_KEY, g->i++) % n; }
#define PICK(g, arr) arr[draw(g, sizeof arr / sizeof arr[0])]

static const char *const adjs[] = {"small", "big", "red", "old", "quiet", "happy", "green", "tired", "clever",
                                   "young", "brave", "cold"};
static const char *const nouns[] = {"cat", "dog", "fox", "bird", "child", "farmer", "teacher", "horse",
                                    "king", "girl", "boy", "robot"};
static const char *const things[] = {"ball", "apple", "book", "river", "house", "tree", "stone", "letter",
                                     "garden", "window", "song", "boat"};
static const char *const verbs[][2] = {{"sees", "see"}, {"finds", "find"}, {"likes", "like"},
                                       {"carries", "carry"}, {"paints", "paint"}, {"watches", "watch"},
                                       {"wants", "want"}, {"opens", "open"}};
static const char *const preps[] = {"near", "under", "behind", "beside", "over", "inside"};
static const char *const numw[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};

static size_t put(char *out, size_t n, size_t cap, const char *s) {
  while (*s && n < cap) out[n++] = *s++;
  return n;
}

static size_t noun_phrase(gen *g, char *o, size_t n, size_t cap, const char *noun, int plural) {
  n = put(o, n, cap, plural ? (draw(g, 2) ? "the " : "some ") : (draw(g, 2) ? "the " : "a "));
  if (draw(g, 2)) n = put(o, n, cap, PICK(g, adjs)), n = put(o, n, cap, " ");
  n = put(o, n, cap, noun);
  if (plural) n = put(o, n, cap, noun[strlen(noun) - 1] == 'x' ? "es" : "s");
  return n;
}

size_t xp_builtin_text(uint64_t seed, size_t bytes, char *out) {
  gen g = {seed, 0};
  size_t n = 0;
  char tmp[64];
  while (n < bytes) {
    switch (draw(&g, 5)) {
    case 0: case 1: case 2: { /* subject verb object [preposition place]. with number agreement */
      int plural = (int)draw(&g, 3) == 0;
      size_t s0 = n;
      n = noun_phrase(&g, out, n, bytes, PICK(&g, nouns), plural);
      if (n > s0 && out[s0] >= 'a') out[s0] = (char)(out[s0] - 32); /* capitalize */
      n = put(out, n, bytes, " ");
      n = put(out, n, bytes, verbs[draw(&g, 8)][plural]);
      n = put(out, n, bytes, " ");
      n = noun_phrase(&g, out, n, bytes, PICK(&g, things), (int)draw(&g, 4) == 0);
      if (draw(&g, 2)) {
        n = put(out, n, bytes, " ");
        n = put(out, n, bytes, PICK(&g, preps));
        n = put(out, n, bytes, " ");
        n = noun_phrase(&g, out, n, bytes, PICK(&g, things), 0);
      }
      n = put(out, n, bytes, ".\n");
      break;
    }
    case 3: { /* digits arithmetic: 23 + 58 = 81 */
      unsigned a = (unsigned)draw(&g, 100), b = (unsigned)draw(&g, 100);
      snprintf(tmp, sizeof tmp, "%u + %u = %u.\n", a, b, a + b);
      n = put(out, n, bytes, tmp);
      break;
    }
    default: { /* counting in words: one, two, three. */
      unsigned a = (unsigned)draw(&g, 7), len = 2 + (unsigned)draw(&g, 3);
      n = put(out, n, bytes, "Count ");
      for (unsigned i = 0; i < len; i++) {
        n = put(out, n, bytes, numw[a + i]);
        n = put(out, n, bytes, i + 1 < len ? ", " : ".\n");
      }
      break;
    }
    }
  }
  return n;
}

/* ---- the shipped corpora ------------------------------------------------------ */

/* Folders searched for a shipped corpus, in order: EXMY_DATA_DIR, the
 * source tree (a build tree's command, VPATH and distcheck builds included,
 * reads the files it was built with), the installed copy (make install). */
#ifndef EXMY_CORPUS_SRCDIR
#define EXMY_CORPUS_SRCDIR "experiments/corpora"
#endif
#ifndef EXMY_CORPUS_DATADIR
#define EXMY_CORPUS_DATADIR "/usr/local/share/exmy/corpora"
#endif

/* A corpus shipped in experiments/corpora (SOURCE.md says where each is
 * from).  Its size and FNV-1a 64 are checked, so a run names its data
 * exactly.  nanogpt_split: the first floor(0.9 n) characters train (nanoGPT's
 * prepare.py) instead of the engine's n - floor(n / 10). */
typedef struct corpus {
  const char *name;             /* the `data` value */
  const char *file;             /* in the corpora folder */
  size_t bytes;
  uint64_t fnv;
  int nanogpt_split;
} corpus;

static const corpus corpora[] = {
  {"shakespeare", "shakespeare.txt", 1115394, 0x4016c93c3be74c18ull, 1},
};
#define NCORPORA (sizeof corpora / sizeof corpora[0])

static const corpus *corpus_lookup(const char *name) {
  for (size_t i = 0; i < NCORPORA; i++)
    if (!strcmp(corpora[i].name, name)) return &corpora[i];
  return NULL;
}

int xp_corpus_path(const char *name, char *path, size_t n) {
  const corpus *k = corpus_lookup(name);
  if (!k) return 0;
  const char *env = getenv("EXMY_DATA_DIR");
  const char *dirs[] = {env && *env ? env : NULL, EXMY_CORPUS_SRCDIR, EXMY_CORPUS_DATADIR};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    if (!dirs[i]) continue;
    snprintf(path, n, "%s/%s", dirs[i], k->file);
    FILE *f = fopen(path, "rb");
    if (f) {
      fclose(f);
      return 1;
    }
  }
  snprintf(path, n, "%s", k->file);
  return -1;
}

/* The whole file into *text (malloc'd). 0 or -1 with err. */
static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) return xp_errf(err, errlen, "data: cannot open '%s': %s", path, strerror(errno));
  size_t cap = 1 << 20, n = 0, got;
  char *t = malloc(cap);
  while (t && (got = fread(t + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *t2 = realloc(t, cap *= 2);
      if (!t2) free(t);
      t = t2;
    }
  }
  fclose(f);
  if (!t) return xp_errf(err, errlen, "out of memory reading '%s'", path);
  *text = t;
  *len = n;
  return 0;
}

/* A shipped corpus by name: found (xp_corpus_path), read and checked. */
static int corpus_read(const corpus *k, char **text, size_t *len, char *err, size_t errlen) {
  char path[XP_PATH + 64];
  if (xp_corpus_path(k->name, path, sizeof path) < 0) {
    const char *env = getenv("EXMY_DATA_DIR");
    return xp_errf(err, errlen, "data: corpus '%s': %s not found in %s%s%s, %s or %s", k->name, k->file,
                   env && *env ? "EXMY_DATA_DIR=" : "", env && *env ? env : "", env && *env ? "," : "",
                   EXMY_CORPUS_SRCDIR, EXMY_CORPUS_DATADIR);
  }
  if (read_file(path, text, len, err, errlen)) return -1;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < *len; i++) h = (h ^ (unsigned char)(*text)[i]) * 0x100000001b3ull;
  if (*len != k->bytes || h != k->fnv) {
    free(*text);
    *text = NULL;
    return xp_errf(err, errlen, "data: '%s' is not corpus '%s' (%zu bytes, FNV-1a %016llx; want %zu, %016llx)", path,
                   k->name, *len, (unsigned long long)h, k->bytes, (unsigned long long)k->fnv);
  }
  return 0;
}

/* ---- corpus and teacher --------------------------------------------------- */

#define BUILTIN_BYTES (256 * 1024)

static int text_init(xp_data *d, const xp_config *c, char *err, size_t errlen) {
  char *text = NULL;
  size_t len = 0;
  const corpus *k = corpus_lookup(c->data);
  if (!strcmp(c->data, "builtin")) {
    text = malloc(BUILTIN_BYTES);
    if (!text) return xp_errf(err, errlen, "out of memory");
    len = xp_builtin_text(c->seed, BUILTIN_BYTES, text);
  } else if (k) {
    if (corpus_read(k, &text, &len, err, errlen)) return -1;
  } else if (read_file(c->data, &text, &len, err, errlen)) {
    return -1;
  }
  const size_t need = (size_t)c->model.seq_len * 2 + 2;
  if (c->vocab_words > 0) { /* vocab = word:K */
    xp_words w;
    const int rc = xp_words_build(&w, text, len, c->vocab_words, need, err, errlen);
    free(text);
    if (rc) return -1;
    d->vocab = w.vocab;
    d->tok = w.tok;
    d->ntok = w.ntok;
    d->ntrain = w.ntrain;
    w.tok = NULL;
    xp_words_free(&w);
    return 0;
  }
  if (len < need * 2) {
    free(text);
    return xp_errf(err, errlen, "data: '%s' has %zu bytes, too little for seq_len (needs twice 2*seq_len+2)", c->data,
                   len);
  }
  int seen[256] = {0};
  for (size_t i = 0; i < len; i++) seen[(unsigned char)text[i]] = 1;
  d->vocab = 0;
  for (int b = 0; b < 256; b++) {
    d->stoi[b] = seen[b] ? d->vocab : -1;
    if (seen[b]) d->itos[d->vocab++] = (unsigned char)b;
  }
  d->tok = malloc(len * sizeof(int));
  if (!d->tok) {
    free(text);
    return xp_errf(err, errlen, "out of memory");
  }
  for (size_t i = 0; i < len; i++) d->tok[i] = d->stoi[(unsigned char)text[i]];
  free(text);
  d->ntok = len;
  d->ntrain = xp_data_split(len, need);
  if (k && k->nanogpt_split) { /* nanoGPT: n = len(data); train = data[:int(n*0.9)] */
    d->ntrain = len / 10 * 9 + len % 10 * 9 / 10;
    if (len - d->ntrain < need) d->ntrain = len - need;
  }
  return 0;
}

/* A model of token sequences reads the text; any other, the teacher's vectors. */
static int tokens(const xp_config *c) { return (xp_model_caps(c->model.kind) & XP_CAP_TOKENS) != 0; }

int xp_data_init(xp_data *d, const xp_config *c, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  if (tokens(c)) return text_init(d, c, err, errlen);
  /* the teacher: the student's architecture with its own seed */
  if (xp_model_init(&d->teacher, &c->model, 0, c->seed ^ 0x7eac4e5ull, err, errlen)) return -1;
  if (xp_ctx_init(&d->teacher_ctx, c, &d->teacher, err, errlen)) {
    xp_model_free(&d->teacher);
    return -1;
  }
  d->teacher_ctx.mode = XP_MODE_FP32;
  d->has_teacher = 1;
  return 0;
}

void xp_data_free(xp_data *d) {
  free(d->tok);
  if (d->has_teacher) {
    xp_ctx_free(&d->teacher_ctx);
    xp_model_free(&d->teacher);
  }
  memset(d, 0, sizeof *d);
}

int xp_batch_alloc(xp_batch_buf *bb, const xp_config *c) {
  memset(bb, 0, sizeof *bb);
  const size_t B = (size_t)c->model.batch;
  if (tokens(c)) {
    bb->tokens = malloc(B * c->model.seq_len * sizeof(int));
    bb->targets = malloc(B * c->model.seq_len * sizeof(int));
    if (!bb->tokens || !bb->targets) return -1;
  } else {
    bb->x = malloc(B * c->model.in_dim * sizeof(float));
    bb->y = malloc(B * c->model.out_dim * sizeof(float));
    bb->labels = malloc(B * sizeof(int));
    if (!bb->x || !bb->y || !bb->labels) return -1;
  }
  return 0;
}

void xp_batch_free(xp_batch_buf *bb) {
  free(bb->tokens);
  free(bb->targets);
  free(bb->labels);
  free(bb->x);
  free(bb->y);
  memset(bb, 0, sizeof *bb);
}

void xp_data_batch(xp_data *d, const xp_config *c, long step, int validation, xp_batch_buf *bb) {
  const size_t B = (size_t)c->model.batch;
  const uint64_t stream = DATA_KEY + (validation ? 1 : 0);
  if (tokens(c)) {
    const size_t T = (size_t)c->model.seq_len;
    const size_t lo = validation ? d->ntrain : 0, hi = validation ? d->ntok : d->ntrain;
    const size_t span = hi - lo - T - 1 + 1;
    /* data_switch: the same text under other token ids, from that step on (validation: the data
     * the run ends on) */
    const int sw = c->data_switch > 0 && (validation ? c->steps > c->data_switch : step >= c->data_switch);
    const int top = sw ? d->vocab - 1 : 0, sign = sw ? -1 : 1;
    for (size_t b = 0; b < B; b++) {
      const size_t off = lo + exmy_random64(c->seed, stream, (uint64_t)step * B + b) % span;
      for (size_t t = 0; t < T; t++) {
        bb->tokens[b * T + t] = top + sign * d->tok[off + t];
        bb->targets[b * T + t] = top + sign * d->tok[off + t + 1];
      }
    }
    bb->b.n = B;
    bb->b.tokens = bb->tokens;
    bb->b.targets = bb->targets;
    return;
  }
  const size_t in = (size_t)c->model.in_dim, out = (size_t)c->model.out_dim;
  for (size_t i = 0; i < B * in; i++) bb->x[i] = (float)xp_randn(c->seed, stream, (uint64_t)step * B * in + i);
  /* labels from the teacher in plain fp32 */
  xp_batch b = {0};
  b.n = B;
  b.x = bb->x;
  xp_model_predict(&d->teacher, &d->teacher_ctx, &b, bb->y);
  for (size_t i = 0; i < B; i++) {
    size_t best = 0;
    for (size_t j = 1; j < out; j++)
      if (bb->y[i * out + j] > bb->y[i * out + best]) best = j;
    bb->labels[i] = (int)best;
  }
  bb->b.n = B;
  bb->b.x = bb->x;
  bb->b.y = bb->y;
  bb->b.labels = bb->labels;
}

xp_batch xp_batch_shard(const xp_batch *b, const xp_config *c, int r, int R) {
  xp_batch s = *b;
  const size_t n = b->n / (size_t)R, o = (size_t)r * n;
  s.n = n;
  if (tokens(c)) {
    const size_t T = (size_t)c->model.seq_len;
    s.tokens = b->tokens + o * T;
    s.targets = b->targets + o * T;
    return s;
  }
  s.x = b->x + o * (size_t)c->model.in_dim;
  s.y = b->y + o * (size_t)c->model.out_dim;
  s.labels = b->labels + o;
  return s;
}
