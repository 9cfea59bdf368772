/* fuzz_ckpt: the checkpoint loader (experiments/ckpt.c, xp_ckpt_load) of a
 * small run (mlp, 2 layers, delayed scaling so recipe states are read).
 * Each input is loaded twice from an in-memory file: as it is (magic,
 * version, byte order and checksum checks), and with a valid header and the
 * FNV-1a checksum fixed up, so the fuzzer gets past the checksum into the
 * body.  FUZZ_CKPT_SEED=PATH writes a valid checkpoint of this run to PATH
 * (the seed corpus) and exits. */
#include "tests/fuzz/fuzz.h"
#include "exmy.h"
#include "experiments/xp.h"

typedef struct {
  xp_config c;
  xp_data data;
  xp_model model;
  xp_ctx ctx;
  xp_optim opt;
  xp_detector det;
  char key[2048];
} run;
static run *R;
static fuzz_file in;

static void setup(void) {
  static const char *const kv[][2] = {
      {"model", "mlp"}, {"in_dim", "4"}, {"hidden", "4"}, {"depth", "2"}, {"out_dim", "2"},
      {"batch", "2"}, {"spike_window", "3"}, {"prec", "hybrid;recipe=delayed:len=3"}};
  char err[EXMY_ERRLEN];
  R = calloc(1, sizeof *R);
  xp_config_default(&R->c);
  for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
    if (xp_config_set(&R->c, kv[i][0], kv[i][1], err, sizeof err)) { fprintf(stderr, "setup: %s\n", err); abort(); }
  if (xp_data_init(&R->data, &R->c, err, sizeof err) ||
      xp_model_init(&R->model, &R->c.model, R->data.vocab, R->c.seed, err, sizeof err) ||
      xp_ctx_init(&R->ctx, &R->c, &R->model, err, sizeof err)) {
    fprintf(stderr, "setup: %s\n", err);
    abort();
  }
  if (xp_optim_init(&R->opt, R->model.nparams) || xp_detector_init(&R->det, R->c.spike_window, R->c.spike_factor, 0))
    abort();
  xp_prec_key(&R->c, R->key, sizeof R->key);
  const char *seed = getenv("FUZZ_CKPT_SEED");
  if (seed) {
    double loss[3] = {2.5, 2.25, 2.0};
    xp_ckpt_state cs = {R->key, 3, &R->model, &R->opt, &R->ctx, &R->det, 0, 0, 0, loss, 3};
    if (xp_ckpt_save(seed, &cs, err, sizeof err)) { fprintf(stderr, "%s\n", err); _exit(1); }
    _exit(0);
  }
}

static void load(const uint8_t *data, size_t size) {
  char err[EXMY_ERRLEN];
  fuzz_file_set(&in, data, size);
  xp_ckpt_state cs = {R->key, 0, &R->model, &R->opt, &R->ctx, &R->det, 0, 0, 0, NULL, 0};
  int same = 0;
  if (xp_ckpt_load(in.path, &cs, &same, err, sizeof err) == 0) {
    FUZZ_CHECK(cs.nloss >= 0 && cs.loss, "loaded without a loss history");
    volatile double s = 0;
    for (long i = 0; i < cs.nloss; i++) s += cs.loss[i]; /* ASan: all there */
    (void)s;
  } else {
    FUZZ_CHECK(err[0], "refused without an error");
  }
  free(cs.loss);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!R) setup();
  load(data, size);
  /* the input with a valid header and its last 8 bytes replaced by the
   * checksum of the rest */
  const size_t n = size >= 24 ? size : 24;
  unsigned char *b = calloc(1, n);
  if (!b) abort();
  if (size > 16) memcpy(b + 16, data + 16, (size < n - 8 ? size : n - 8) - 16);
  const uint32_t version = 2, endian = 0x01020304u;
  memcpy(b, "EXMYCKPT", 8);
  memcpy(b + 8, &version, 4);
  memcpy(b + 12, &endian, 4);
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n - 8; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  memcpy(b + n - 8, &h, 8);
  load(b, n);
  free(b);
  return 0;
}
