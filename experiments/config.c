/* config.c: a run's configuration: defaults, `key = value` setting (flags and
 * config files use the same keys), and writing it back.  The generic keys
 * are rows of one table; the precision keys (prec, attn, layer.NAME) are
 * parsed in precision.c. */
#include "experiments/precision.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* T_ENUM: an int field holding the index of its value in `names` (NULL
 * ends); the first name is the default.  An enum key is written only when
 * it is not its default, so a config from before the key prints, and hashes
 * (study_state.c's run ids), as it did. */
enum { T_INT, T_LONG, T_DBL, T_U64, T_STR, T_ENUM };
typedef struct key_def {
  const char *name;
  int type;
  size_t off, size;             /* size: strings' buffer size */
  double lo, hi;                /* numeric range */
  const char *help;
  const char *const *names;     /* T_ENUM: the values */
} key_def;

#define KI(n, f, lo, hi, h) {n, T_INT, offsetof(xp_config, f), 0, lo, hi, h, NULL}
#define KL(n, f, lo, hi, h) {n, T_LONG, offsetof(xp_config, f), 0, lo, hi, h, NULL}
#define KD(n, f, lo, hi, h) {n, T_DBL, offsetof(xp_config, f), 0, lo, hi, h, NULL}
#define KS(n, f, h) {n, T_STR, offsetof(xp_config, f), sizeof(((xp_config *)0)->f), 0, 0, h, NULL}
#define KE(n, f, names, h) {n, T_ENUM, offsetof(xp_config, f), 0, 0, 0, h, names}

static const char *const bias_names[] = {"1", "0", NULL};       /* stored: model.no_bias */
static const char *const tie_names[] = {"0", "1", NULL};
static const char *const pos_names[] = {"learned", "rope", NULL}; /* stored: model.rope */
static const char *const wd_names[] = {"coupled", "independent", NULL};

static const key_def keys[] = {
  KI("n_layer", model.n_layer, 1, 64, "gpt: transformer blocks"),
  KI("d_model", model.d_model, 4, 4096, "gpt: width"),
  KI("n_head", model.n_head, 1, 64, "gpt: attention heads"),
  KI("seq_len", model.seq_len, 2, 4096, "gpt: context length"),
  KI("swiglu", model.swiglu, 0, 1, "gpt: 1 SwiGLU MLP, 0 GELU"),
  KI("rmsnorm", model.rmsnorm, 0, 1, "1 RMSNorm, 0 LayerNorm"),
  KI("qk_layernorm", model.qk_layernorm, 0, 1, "gpt: 1 normalizes q and k per head before the logits"),
  KD("z_loss", model.z_loss, 0, 1e6, "gpt: z-loss coefficient (loss += C mean logsumexp^2; 0 off)"),
  KE("bias", model.no_bias, bias_names, "1 biases in linear layers and LayerNorms (default), 0 none (nanoGPT's bias=False)"),
  KE("tie", model.tie, tie_names, "gpt: 1 lm_head's weight is wte (tied, as nanoGPT), 0 its own (default)"),
  KE("pos", model.rope, pos_names, "gpt: learned (wpe, default) or rope (rotary q and k, theta 10000, Llama's pairs)"),
  KI("in_dim", model.in_dim, 1, 65536, "mlp: input width"),
  KI("hidden", model.hidden, 1, 65536, "mlp: hidden width"),
  KI("depth", model.depth, 0, 256, "mlp: residual blocks"),
  KI("out_dim", model.out_dim, 1, 65536, "mlp: outputs (classes for mlp-class)"),
  KI("batch", model.batch, 1, 1 << 20, "sequences or examples per step"),
  KL("steps", steps, 0, 1e12, "optimizer steps"),
  KD("lr", lr, 0, 1e6, "peak learning rate"),
  KD("min_lr_frac", min_lr_frac, 0, 1, "cosine decay floor as a fraction of lr"),
  KD("warmup_frac", warmup_frac, 0, 1, "linear warmup as a fraction of steps"),
  KD("weight_decay", weight_decay, 0, 1e6, "AdamW decoupled weight decay (matrices)"),
  KE("wd_mode", wd_independent, wd_names,
     "coupled: p -= lr wd p (PyTorch AdamW, default); independent: p -= (lr/peak lr) wd p (Loshchilov-Hutter)"),
  KD("beta1", beta1, 0, 1, "AdamW beta1"),
  KD("beta2", beta2, 0, 1, "AdamW beta2"),
  KD("eps", eps, 0, 1, "AdamW epsilon"),
  KD("clip", clip, 0, 1e30, "global gradient-norm clip (0 off)"),
  {"seed", T_U64, offsetof(xp_config, seed), 0, 0, 0, "seed of init, data and stochastic rounding", NULL},
  KI("threads", threads, 0, 4096, "OpenMP threads (0 default); results do not depend on it"),
  KI("msamp", msamp, 0, 3, "MS-AMP: 0 off, 1 O1 / 2 O2 (approximations), 3 O1 as published"),
  KI("allreduce_ranks", allreduce_ranks, 1, 64, "simulated data-parallel ranks: batch split, gradients all-reduced"),
  KL("log_every", log_every, 1, 1e12, "console progress rate"),
  KL("stats_every", stats_every, 0, 1e12, "per-layer FP8 statistics every N steps (0 off)"),
  KL("outliers_every", outliers_every, 0, 1e12, "outlier metrics (outliers.csv) every N steps (0 off)"),
  KS("ckpt", ckpt, "checkpoint file (written atomically)"),
  KL("ckpt_every", ckpt_every, 0, 1e12, "checkpoint every N steps (0: at the end)"),
  KS("resume", resume, "checkpoint to resume from"),
  KL("stop_after", stop_after, 0, 1e12, "stop after N steps (0 off; the schedule still follows steps)"),
  KL("calibrate", calibrate, 0, 1e12, "calibration steps before training (fills delayed amax histories)"),
  KI("range_shift", range_shift, -30, 30, "norms x 2^s, the weights after them x 2^-s (the same function)"),
  KL("range_shift_step", range_shift_step, -1, 1e12, "the step that range_shift begins (-1: on a resume into another precision)"),
  KL("lr_restart", lr_restart, 0, 1e12, "warm restart: from this step the cosine starts again at lr (0 none)"),
  KL("data_switch", data_switch, 0, 1e12, "gpt: from this step tokens are renamed t -> vocab-1-t, validation too (0 none)"),
  KL("check_every", check_every, 0, 1e12, "high-precision check every N steps (0 off)"),
  KD("check_tol", check_tol, 0, 1e30, "relative loss disagreement that triggers the fallback"),
  KL("fallback_steps", fallback_steps, 0, 1e12, "steps in bf16 after a failed check"),
  KS("out_dir", out_dir, "results folder: loss.csv, stats.csv, stats.jsonl, summary.json"),
  KS("dump_layers", dump_layers, "layers (comma list of names/globs, first, last) whose GEMM operands are dumped"),
  KL("dump_step", dump_step, 0, 1e12, "the step of the dump"),
  KI("spike_window", spike_window, 2, 1 << 20, "trailing window of the spike rule"),
  KD("spike_factor", spike_factor, 1, 1e30, "spike: loss above factor x trailing median"),
  KI("progress", progress, 0, 2, "1 progress bar, 2 log lines, 0 quiet"),
  KL("eval_batches", eval_batches, 0, 1e9, "validation batches at the end"),
};
#define NKEYS (sizeof keys / sizeof keys[0])

void xp_config_default(xp_config *c) {
  memset(c, 0, sizeof *c);
  c->model.kind = XP_MODEL_GPT;
  c->model.n_layer = 4;
  c->model.d_model = 64;
  c->model.n_head = 4;
  c->model.seq_len = 32;
  c->model.in_dim = 32;
  c->model.hidden = 128;
  c->model.depth = 4;
  c->model.out_dim = 8;
  c->model.batch = 8;
  snprintf(c->data, sizeof c->data, "builtin");
  c->steps = 200;
  c->lr = 3e-3;
  c->min_lr_frac = 0.1;
  c->warmup_frac = 0.05;
  c->weight_decay = 0.1;
  c->beta1 = 0.9;
  c->beta2 = 0.95;
  c->eps = 1e-8;
  c->clip = 1.0;
  c->seed = 1;
  c->allreduce_ranks = 1;
  snprintf(c->prec_text, sizeof c->prec_text, "fp32");
  xp_prec_preset(&c->prec, "fp32", NULL, 0);
  snprintf(c->attn_text, sizeof c->attn_text, "fp32");
  xp_prec_preset(&c->attn, "fp32", NULL, 0);
  exmy_format_parse("f32", &c->master, NULL, 0);
  c->master_is_f32 = 1;
  c->master_round = EXMY_RNE;
  snprintf(c->master_text, sizeof c->master_text, "f32");
  c->log_every = 10;
  c->range_shift_step = -1;
  c->check_tol = 0.05;
  c->fallback_steps = 20;
  c->spike_window = 32;
  c->spike_factor = 1.5;
  c->progress = 1;
  c->eval_batches = 8;
}

static int set_model(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  const xp_model_ops *ops = xp_model_lookup(value);
  if (ops) {
    c->model.kind = ops->kind;
    return 0;
  }
  char names[256];
  size_t n = 0;
  for (int i = 0; i < xp_model_count() && n < sizeof names; i++)
    n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", i ? ", " : "", xp_model_of((xp_model_kind)i)->name);
  return xp_errf(err, errlen, "%s: unknown model '%s' (%s)", key, value, names);
}

static int set_data(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  if (strlen(value) >= sizeof c->data) return xp_errf(err, errlen, "%s: path '%s' too long", key, value);
  snprintf(c->data, sizeof c->data, "%s", value);
  return 0;
}

/* vocab = char (the bytes) | word:K (vocab.c) */
static int set_vocab(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  if (!strcmp(value, "char")) {
    c->vocab_words = 0;
    return 0;
  }
  char *end;
  errno = 0;
  const long k = strncmp(value, "word:", 5) ? -1 : strtol(value + 5, &end, 10);
  if (k < 1 || k > 1000000 || errno || !value[5] || *end)
    return xp_errf(err, errlen, "%s: '%s' is not char or word:K (K the words kept, 1 to 1000000)", key, value);
  c->vocab_words = (int)k;
  return 0;
}

static int set_master(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  char e[EXMY_ERRLEN];
  exmy_format f;
  if (exmy_format_parse(value, &f, e, sizeof e)) return xp_errf(err, errlen, "%s: %s", key, e);
  if (f.mbits > 23 || f.bits > 32) return xp_errf(err, errlen, "%s: '%s' is wider than binary32", key, value);
  c->master = f;
  c->master_is_f32 = xp_format_is_f32(&f);
  snprintf(c->master_text, sizeof c->master_text, "%s", value);
  return 0;
}

static int set_master_round(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  if (exmy_round_mode_parse(value, &c->master_round, NULL, 0))
    return xp_errf(err, errlen, "%s: unknown rounding '%s' (rne rna rtz rup rdn rto sr)", key, value);
  return 0;
}

/* Named mixed-precision setups: `amp = NAME` sets each of its keys (the
 * resolved config shows the keys, not the name). */
static const struct {
  const char *name;
  const char *kv[4][2];         /* key, value; NULL ends */
} amp_presets[] = {
  /* MS-AMP O1 as published (msamp/__init__.py): FP8 GEMMs (Transformer
   * Engine's HYBRID), fp16 weights, FP8 weight gradients and all-reduce,
   * fp32 Adam states */
  {"msamp-o1", {{"prec", "hybrid"}, {"msamp", "3"}}},
};

static int set_amp(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof amp_presets / sizeof amp_presets[0]; i++) {
    if (strcmp(value, amp_presets[i].name)) continue;
    for (int k = 0; k < 4 && amp_presets[i].kv[k][0]; k++)
      if (xp_config_set(c, amp_presets[i].kv[k][0], amp_presets[i].kv[k][1], err, errlen)) return -1;
    return 0;
  }
  return xp_errf(err, errlen, "%s: unknown setup '%s' (msamp-o1)", key, value);
}

/* The keys with a grammar of their own (a name ending in '.' is a prefix). */
static const struct {
  const char *name;
  int (*set)(xp_config *c, const char *key, const char *value, char *err, size_t errlen);
} special_keys[] = {
  {"model", set_model},
  {"data", set_data},
  {"vocab", set_vocab},
  {"prec", xp_config_set_prec},
  {"attn", xp_config_set_attn},
  {"layer.", xp_config_set_layer},
  {"master", set_master},
  {"master_round", set_master_round},
  {"amp", set_amp},
};

static int special_matches(const char *name, const char *key) {
  size_t n = strlen(name);
  return name[n - 1] == '.' ? !strncmp(key, name, n) : !strcmp(key, name);
}

int xp_config_set(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof special_keys / sizeof special_keys[0]; i++)
    if (special_matches(special_keys[i].name, key)) return special_keys[i].set(c, key, value, err, errlen);
  for (size_t i = 0; i < NKEYS; i++) {
    const key_def *k = &keys[i];
    if (strcmp(k->name, key)) continue;
    char *p = (char *)c + k->off;
    if (k->type == T_ENUM) {
      char names[128];
      size_t n = 0;
      for (int j = 0; k->names[j]; j++) {
        if (!strcmp(k->names[j], value)) {
          *(int *)p = j;
          return 0;
        }
        n += (size_t)snprintf(names + n, n < sizeof names ? sizeof names - n : 0, "%s%s", j ? ", " : "", k->names[j]);
      }
      return xp_errf(err, errlen, "%s: '%s' is not one of %s", key, value, names);
    }
    if (k->type == T_STR) {
      if (strlen(value) >= k->size) return xp_errf(err, errlen, "%s: '%s' is too long", key, value);
      snprintf(p, k->size, "%s", value);
      return 0;
    }
    char *end;
    errno = 0;
    if (k->type == T_U64) {
      unsigned long long v = strtoull(value, &end, 0);
      if (!*value || *end || errno || *value == '-') return xp_errf(err, errlen, "%s: '%s' is not an unsigned integer", key, value);
      *(uint64_t *)p = v;
      return 0;
    }
    double v = strtod(value, &end);
    if (!*value || *end || errno || !isfinite(v)) return xp_errf(err, errlen, "%s: '%s' is not a number", key, value);
    if (v < k->lo || v > k->hi) return xp_errf(err, errlen, "%s: %s (%g to %g) is out of range", key, value, k->lo, k->hi);
    if ((k->type == T_INT || k->type == T_LONG) && v != floor(v))
      return xp_errf(err, errlen, "%s: '%s' is not an integer", key, value);
    if (k->type == T_INT) *(int *)p = (int)v;
    else if (k->type == T_LONG) *(long *)p = (long)v;
    else *(double *)p = v;
    return 0;
  }
  return xp_errf(err, errlen, "unknown key '%s' (see `exmy train --help` or docs/training.md)", key);
}

int xp_config_line(char *line, char **key, char **value) {
  char *h = strchr(line, '#');
  if (h) *h = 0;
  char *s = line, *end = line + strlen(line);
  while (end > s && isspace((unsigned char)end[-1])) *--end = 0;
  while (isspace((unsigned char)*s)) s++;
  *key = s;
  *value = NULL;
  if (!*s) return 0;
  char *eq = strchr(s, '=');
  if (!eq) return -1;
  char *kend = eq;
  while (kend > s && isspace((unsigned char)kend[-1])) kend--;
  *kend = 0;
  char *v = eq + 1;
  while (isspace((unsigned char)*v)) v++;
  *value = v;
  return 1;
}

int xp_config_load(xp_config *c, const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) return xp_errf(err, errlen, "cannot open config '%s': %s", path, strerror(errno));
  char line[1024], e[EXMY_ERRLEN];
  int ln = 0;
  while (fgets(line, sizeof line, f)) {
    ln++;
    char *k, *v;
    const int t = xp_config_line(line, &k, &v);
    if (!t) continue;
    if (t < 0) {
      fclose(f);
      return xp_errf(err, errlen, "%s:%d: expected key = value, got '%s'", path, ln, k);
    }
    if (xp_config_set(c, k, v, e, sizeof e)) {
      fclose(f);
      return xp_errf(err, errlen, "%s:%d: %s", path, ln, e);
    }
  }
  fclose(f);
  return 0;
}

void xp_config_write(const xp_config *c, FILE *out) {
  fprintf(out, "model = %s\n", xp_model_of(c->model.kind)->name);
  fprintf(out, "data = %s\n", c->data);
  if (c->vocab_words) fprintf(out, "vocab = word:%d\n", c->vocab_words);
  else fprintf(out, "vocab = char\n");
  xp_config_write_prec(c, out);
  fprintf(out, "master = %s\n", c->master_text);
  fprintf(out, "master_round = %s\n", exmy_round_mode_name(c->master_round));
  for (size_t i = 0; i < NKEYS; i++) {
    const key_def *k = &keys[i];
    const char *p = (const char *)c + k->off;
    switch (k->type) {
    case T_INT: fprintf(out, "%s = %d\n", k->name, *(const int *)p); break;
    case T_LONG: fprintf(out, "%s = %ld\n", k->name, *(const long *)p); break;
    case T_DBL: fprintf(out, "%s = %.17g\n", k->name, *(const double *)p); break;
    case T_U64: fprintf(out, "%s = %llu\n", k->name, (unsigned long long)*(const uint64_t *)p); break;
    case T_STR: fprintf(out, "%s = %s\n", k->name, p); break;
    case T_ENUM:
      if (*(const int *)p) fprintf(out, "%s = %s\n", k->name, k->names[*(const int *)p]);
      break;
    }
  }
}

/* The keys with their help, for `exmy train --help` and docs. */
void xp_config_help(FILE *out) {
  fprintf(out, "  %-16s ", "model"); /* the model table's names, with their help */
  for (int i = 0; i < xp_model_count(); i++) {
    const xp_model_ops *ops = xp_model_of((xp_model_kind)i);
    fprintf(out, "%s%s", i ? ", " : "", ops->name);
    if (ops->help) fprintf(out, " (%s)", ops->help);
  }
  fputc('\n', out);
  fprintf(out, "  %-16s %s\n", "data",
          "builtin (generated text, default), shakespeare (Tiny Shakespeare, shipped; nanoGPT's split) or a text file");
  fprintf(out, "  %-16s %s\n", "vocab", "char (the bytes, default) or word:K (the K most frequent words + <unk>)");
  xp_prec_help(out);
  fprintf(out, "  %-16s %s\n", "master", "format weights are rounded to after each update (default f32: off)");
  fprintf(out, "  %-16s %s\n", "master_round", "rounding of that (rne, sr, ...)");
  fprintf(out, "  %-16s %s\n", "amp", "a named setup: msamp-o1 (= prec hybrid, msamp 3)");
  for (size_t i = 0; i < NKEYS; i++) fprintf(out, "  %-16s %s\n", keys[i].name, keys[i].help);
}
