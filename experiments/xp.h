/* xp.h: the tiny-model training engine (internal to exmy: the command, the
 * tests and bench/train use it; not installed).  Plain C + OpenMP, fp32
 * master state; every matrix product goes through exmy_gemm with the
 * precision of its layer and role (docs/training.md).
 *
 * Determinism: every result is a pure function of the config and the seed.
 * Parallel loops give each output element to one thread and sum in a fixed
 * order, so any thread count gives the same bits. */
#ifndef EXMY_XP_H
#define EXMY_XP_H
#include "exmy.h"
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The engine's hot loops are built for the CPU at hand as the core's are:
 * GCC's function clones (AVX-512, AVX2, baseline), each vectorized at its
 * width with the same operations per element, so the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(XP_NO_CLONES)
#define XP_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define XP_CLONES
#endif

struct xp_model;

/* ---- precision of the GEMMs -------------------------------------------- */

/* The three tensors a linear layer quantizes (Transformer Engine's names:
 * inputs and weights in the forward, output gradients in the backward). */
typedef enum xp_tkind { XP_INPUT = 0, XP_WEIGHT, XP_GRAD, XP_NKIND } xp_tkind;
/* The three GEMMs of a linear layer y = x W^T. */
typedef enum xp_role { XP_FPROP = 0, XP_DGRAD, XP_WGRAD, XP_NROLE } xp_role;
extern const char *const xp_tkind_names[XP_NKIND]; /* "input", "weight", "grad" */
extern const char *const xp_role_names[XP_NROLE];  /* "fprop", "dgrad", "wgrad" */

typedef struct xp_tprec {       /* how one tensor kind is cast */
  exmy_format fmt;              /* element format; f32 = no quantization */
  int is_f32;                   /* fmt is binary32: the GEMM reads the floats as they are */
  exmy_rounding rnd;            /* the element cast (seed and stream set per call) */
  char recipe[64];              /* scaling recipe text (exmy_recipe_parse) */
} xp_tprec;

typedef struct xp_prec {        /* a linear layer's precision */
  char name[64];                /* the preset it came from, for logs */
  xp_tprec t[XP_NKIND];
  exmy_accum accum[XP_NROLE];
} xp_prec;

/* The format is IEEE binary32 (its codes are floats: no quantization). */
int xp_format_is_f32(const exmy_format *f);
/* Presets: fp32, bf16, fp16, hybrid (e4m3fn inputs/weights, e5m2 gradients),
 * or any format name (e4m3fn, e5m2, e8m3, ...: every tensor in it).  FP8
 * formats with a narrow range (largest finite < 2^64) get current scaling,
 * wide-range ones (e8mY) none.  Accumulation fp32.  0 or -1 with err. */
int xp_prec_preset(xp_prec *p, const char *name, char *err, size_t errlen);
/* Apply one "key=value" refinement: fmt[.KIND]=F, round[.KIND]=MODE,
 * sat[.KIND]=none|finite, recipe[.KIND]=R, accum[.ROLE]=MODEL. */
int xp_prec_set(xp_prec *p, const char *key, const char *value, char *err, size_t errlen);

/* ---- configuration of a run -------------------------------------------- */

#define XP_MAX_OVERRIDES 16
#define XP_PATH 512

typedef enum xp_model_kind { XP_MODEL_GPT = 0, XP_MODEL_MLP, XP_MODEL_MLP_CLASS } xp_model_kind;

typedef struct xp_model_config {
  xp_model_kind kind;
  /* gpt */
  int n_layer, d_model, n_head, seq_len;
  int swiglu;                   /* 0: GELU MLP (4d), 1: SwiGLU (hidden 8d/3 rounded to 8) */
  int rmsnorm;                  /* 0: LayerNorm, 1: RMSNorm */
  int qk_layernorm;             /* gpt: 1 normalizes q and k per head (the model's norm, gains shared by heads) */
  double z_loss;                /* gpt: PaLM's z-loss coefficient C: loss += C mean(logsumexp^2) (0 off) */
  /* Architecture options, 0 the default (a zeroed config is the GPT-2 model):
   * key `bias = 0` sets no_bias (no bias in linear layers and LayerNorms;
   * nanoGPT's bias=False), `tie = 1` (lm_head's weight is wte, nanoGPT's
   * weight tying; gpt), `pos = rope` sets rope (rotary position embedding of
   * q and k in place of the learned wpe, theta 10000, rotate-half pairs as
   * Llama's; gpt). */
  int no_bias, tie, rope;
  /* mlp, mlp-class (teacher-student): in -> hidden -> [norm, linear, gelu, +]^depth -> norm -> out */
  int in_dim, hidden, depth, out_dim;
  int batch;                    /* sequences (gpt) or examples (mlp) per step */
} xp_model_config;

typedef struct xp_config {
  xp_model_config model;
  char data[XP_PATH];           /* "builtin", a shipped corpus ("shakespeare") or a text file (gpt) */
  int vocab_words;              /* 0: the bytes are the tokens; K: vocab = word:K (vocab.c) */
  /* optimizer and schedule */
  long steps;
  double lr, min_lr_frac, warmup_frac, weight_decay, beta1, beta2, eps, clip;
  int wd_independent;           /* `wd_mode`: 0 coupled (p -= lr wd p, PyTorch's AdamW), 1 independent
                                   (p -= (lr / lr_peak) wd p: Loshchilov and Hutter's decoupled decay,
                                   the schedule's multiplier without the peak lr) */
  uint64_t seed;                /* everything random: init, data, stochastic rounding */
  int threads;                  /* 0: OpenMP's default */
  /* precision */
  char prec_text[512];          /* the precision as given (preset;key=value;...) */
  xp_prec prec;                 /* every linear layer */
  char attn_text[256];
  xp_prec attn;                 /* attention's two batched GEMMs (default fp32) */
  int n_override;
  char override_layer[XP_MAX_OVERRIDES][64]; /* first, last, an index or a layer name (glob) */
  char override_text[XP_MAX_OVERRIDES][256];
  xp_prec override_prec[XP_MAX_OVERRIDES];
  int msamp;                    /* MS-AMP level, a row of xp_msamp_levels (optim.c): 0 off, 1 O1 and 2 O2
                                   (approximations), 3 O1 as published */
  int allreduce_ranks;          /* simulated data-parallel ranks (allreduce.c); 1: none */
  exmy_format master;           /* weights are rounded to this after each update (f32: off) */
  int master_is_f32;
  exmy_round_mode master_round; /* rne or sr (or any mode) for that rounding */
  char master_text[48];
  /* runs */
  long log_every;               /* progress line / per-step CSV always; this is the console rate */
  long stats_every;             /* per-layer FP8 statistics every N steps (0 off) */
  long outliers_every;          /* outlier metrics (outliers.csv) every N steps (0 off) */
  long ckpt_every;              /* checkpoint every N steps (0: only at the end when ckpt is set) */
  char ckpt[XP_PATH];           /* checkpoint path ("" none) */
  char resume[XP_PATH];         /* checkpoint to start from ("" none) */
  long stop_after;              /* stop after this many steps (0: run to `steps`; the schedule
                                   still follows `steps`: an interruption to resume from) */
  long calibrate;               /* calibration steps after resume (delayed scaling) */
  int range_shift;              /* s: norms x 2^s, the weights they feed x 2^-s (the stress tests) */
  long range_shift_step;        /* ... when step range_shift_step begins (-1: on a resume into another precision) */
  long lr_restart;              /* a warm restart: from this step the cosine starts again at lr (0: none) */
  long data_switch;             /* from this step the gpt's tokens are renamed t -> vocab-1-t (0: none) */
  long check_every;             /* high-precision check every N steps (0 off) */
  double check_tol;             /* relative loss disagreement that triggers a fallback */
  long fallback_steps;          /* steps run in bf16 after a failed check */
  char out_dir[XP_PATH];        /* results: loss.csv, stats.csv, stats.jsonl, summary.json ("" none) */
  char dump_layers[256];        /* layer names whose GEMM operands are dumped (.npy) at dump_step */
  long dump_step;
  /* divergence and spike rules (docs/training.md) */
  int spike_window;             /* trailing window of the spike rule */
  double spike_factor;          /* spike: loss > factor * trailing median */
  int progress;                 /* 1 progress bar (terminal), 0 quiet, 2 one line per log_every */
  /* not a key: when set and nonzero (a signal handler sets it to the signal's
     number), the run checkpoints after the current step and returns with
     xp_result.stopped set (no validation, no summary.json) */
  volatile sig_atomic_t *stop;
  long eval_batches;            /* validation batches at the end (0 none) */
} xp_config;

/* A one-line error into err (if given); returns -1. */
int xp_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* mkdir -p: create path and its missing parents (each must end up a folder).
 * 0, or -1 with err naming the part in the way (err may be NULL). */
int xp_mkdir_p(const char *path, char *err, size_t errlen);

/* One writer per folder (lock.c): flock on DIR/.lock, exclusive or shared
 * (shards of one study), not waiting.  The descriptor to keep (the lock
 * lasts until xp_dir_unlock or the process ends); -2 with err naming the
 * folder and the holder's pid when another process has it; -1 on another
 * error. */
int xp_dir_lock(const char *dir, int shared, char *err, size_t errlen);
void xp_dir_unlock(int fd);

/* Replacing a file atomically (replace.c): write w.f, then xp_replace_close
 * (flush, fsync; 0 or the errno, the temporary file removed on error) and
 * xp_replace_rename (over path, the folder fsynced; 0 or the errno).  The
 * temporary file, w.tmp = PATH.tmp.PID.TID, is this writer's alone. */
typedef struct xp_replace {
  FILE *f;
  int fd;                       /* holds the flock on tmp until the rename */
  const char *path;
  char tmp[XP_PATH + 64];
} xp_replace;
int xp_replace_open(xp_replace *w, const char *path, char *err, size_t errlen);
int xp_replace_close(xp_replace *w, int err_so_far);
int xp_replace_rename(xp_replace *w);
void xp_replace_abort(xp_replace *w);

/* Defaults: the tiny GPT on the built-in text, fp32, 200 steps. */
void xp_config_default(xp_config *c);
/* Set one key (the keys of docs/training.md; `prec` takes a preset and
 * ;-separated refinements, `layer.NAME=PRESET[;...]` an override).  0 or -1. */
int xp_config_set(xp_config *c, const char *key, const char *value, char *err, size_t errlen);
/* Read key = value lines (# comments).  0 or -1 with err naming file:line. */
int xp_config_load(xp_config *c, const char *path, char *err, size_t errlen);
/* One line of the config grammar, in place: '#' starts a comment, blanks
 * around key and value are cut.  0: blank or comment; 1: *key, *value set;
 * -1: no '=' (*key is the trimmed text).  Study files (study_file.c) use it. */
int xp_config_line(char *line, char **key, char **value);
/* Write the config as key = value lines that xp_config_load reads back. */
void xp_config_write(const xp_config *c, FILE *out);
/* The keys, one line each with a short help. */
void xp_config_help(FILE *out);

/* ---- the GEMM context (one per run) ------------------------------------ */

typedef struct xp_layer_state xp_layer_state; /* recipes and statistics of one linear layer */

typedef struct xp_ctx {
  const xp_config *cfg;
  int nlin;                     /* linear layers */
  char (*lin_name)[32];         /* their names (h0.qkv, ..., lm_head) */
  const xp_prec **lin_prec;     /* the precision of each (after overrides) */
  xp_layer_state *ls;           /* per layer: delayed-scaling recipes, statistics */
  long step;                    /* the step being computed (SR streams, dumps) */
  int mode;                     /* XP_MODE_* below */
  int collect_stats;            /* this step: record exmy_qtensor_stats of every operand */
  int collect_outliers;         /* this step: the forward keeps what the outlier metrics need */
  int dump;                     /* this step: dump the operands of cfg->dump_layers */
  char err[EXMY_ERRLEN];        /* the first GEMM error */
  int failed;
  xp_prec fp32, bf16;           /* the precisions of XP_MODE_FP32 and XP_MODE_HIGH */
  exmy_format f32;              /* every GEMM's output format */
  exmy_gemm_ws ws;              /* the linear layers' GEMM buffers, kept across calls (one thread) */
  exmy_gemm_ws *wsx;            /* the other threads' when a GEMM runs as one exmy_gemm per thread */
  int nwsx;                     /* how many (team size - 1) */
  int no_reuse;                 /* 1: every GEMM quantizes its operands afresh (the reference of the reuse; tests) */
  void *batch;                  /* xp_matmul_batch's operand and argument arrays (matmul.c), kept */
  size_t batch_cap;             /* problems they hold */
} xp_ctx;

enum {
  XP_MODE_NORMAL = 0,           /* each layer's precision */
  XP_MODE_HIGH,                 /* every GEMM in bf16 (the check and the fallback) */
  XP_MODE_FP32,                 /* every GEMM in fp32 (tests) */
  XP_MODE_CALIBRATE             /* high precision; delayed recipes record amaxes only */
};

/* The context of a run for model m (per-layer precisions after overrides,
 * recipe states).  0 or -1 with err. */
int xp_ctx_init(xp_ctx *ctx, const xp_config *cfg, const struct xp_model *m, char *err, size_t errlen);
void xp_ctx_free(xp_ctx *ctx);

/* One operand of a described GEMM. */
typedef struct xp_operand {
  xp_tkind kind;                /* which tensor it is (its format, rounding, recipe) */
  int trans;                    /* stored transposed (see xp_gemm_desc) */
  const float *p;
} xp_operand;

/* A GEMM d (m x n, row-major) = op(A) op(B), described by name at the call
 * site.  op(A) is m x k: A stored m x k, or k x m when a.trans; op(B) is
 * k x n: B stored k x n, or n x k when b.trans. */
typedef struct xp_gemm_desc {
  int lin;                      /* linear layer whose precision applies (< 0: attention) */
  int sub;                      /* tells apart the calls of one layer and role within a step
                                   (attention: the (sequence, head) index; else 0): keys SR */
  xp_role role;                 /* fprop, dgrad or wgrad: the accumulation model */
  xp_operand a, b;
  size_t m, n, k;
  float *d;                     /* m x n output */
} xp_gemm_desc;

/* Run g through exmy_gemm with the precision of its layer and role.  Calls
 * with lin < 0 may run concurrently (OpenMP) with distinct sub; calls with
 * lin >= 0 must not.  On error sets ctx->failed and ctx->err and fills g->d
 * with NaN. */
void xp_matmul(xp_ctx *ctx, const xp_gemm_desc *g);
/* Two GEMMs of linear layers with no data between them (a layer's dgrad
 * and wgrad): operands made in order (g0's, then g1's), then with a team
 * of 2 threads each GEMM on its own thread in one parallel region, else one
 * after the other.  The same bits as xp_matmul(g0), xp_matmul(g1). */
void xp_matmul_pair(xp_ctx *ctx, const xp_gemm_desc *g0, const xp_gemm_desc *g1);
/* count GEMMs like g (lin < 0: attention) as one exmy_gemm_batch call,
 * parallel over the batch: problem i reads g->a.p + i stride_a and
 * g->b.p + i stride_b, writes g->d + i stride_d (floats), with sub
 * g->sub + i.  The same bits as count xp_matmul calls.  Called from one
 * thread. */
void xp_matmul_batch(xp_ctx *ctx, const xp_gemm_desc *g, size_t count, size_t stride_a, size_t stride_b,
                     size_t stride_d);
/* Fail a step that cannot run (batch too large, out of memory): sets
 * ctx->failed and ctx->err like a failed GEMM.  Returns -1. */
int xp_fail(xp_ctx *ctx, const char *msg);

/* End of a step: delayed recipes roll their histories (TE's amax/scale update). */
void xp_ctx_step_end(xp_ctx *ctx);
/* Per-layer statistics of the last collected step as CSV rows / JSON lines. */
void xp_ctx_stats_header(FILE *csv);
void xp_ctx_stats_write(xp_ctx *ctx, long step, FILE *csv, FILE *jsonl);
/* The recipe states of linear layer lin (XP_NKIND pointers into out): checkpoints. */
int xp_ctx_recipes(xp_ctx *ctx, int lin, const exmy_recipe **rec, exmy_recipe_state **state);

/* ---- models ------------------------------------------------------------- */

typedef struct xp_param {       /* one parameter tensor inside the flat arrays */
  char name[32];                /* h0.qkv.w, h0.ln1.g, wte, ... */
  size_t off, n;                /* offset and size in params[] / grads[] */
  size_t rows, cols;            /* shape (vectors: 1 x n) */
  int is_matrix;                /* weight matrices and embeddings: decayed, FP8 under MS-AMP */
  int is_linear_w;              /* a linear layer's weight (NAME.w of linear layer NAME; set by xp_model_init) */
} xp_param;

typedef struct xp_batch {
  size_t n;                     /* examples (mlp) or sequences (gpt) */
  const int *tokens, *targets;  /* gpt: n x seq_len each */
  const float *x;               /* mlp: n x in_dim */
  const float *y;               /* mlp: n x out_dim regression targets */
  const int *labels;            /* mlp-class: n labels in [0, out_dim) */
} xp_batch;

typedef struct xp_model_ops xp_model_ops;
struct xp_optim;               /* below: the range shift scales its moments */

typedef struct xp_model {  /* struct tag used by xp_ctx_init */
  const xp_model_ops *ops;      /* its row of the model table */
  xp_model_config mc;
  int vocab;                    /* gpt */
  size_t nparams;
  float *params, *grads;        /* fp32 master weights and their gradients */
  int ntensors;
  xp_param *tensors;
  int nlin;                     /* linear layers in forward order (first = 0, last = nlin-1) */
  char (*lin_name)[32];
  void *act;                    /* activations of the last forward (model-specific) */
} xp_model;

/* What a model can do (xp_model_ops.caps): a key or output that needs one
 * asks for the flag, never for a model by name or kind. */
enum {
  XP_CAP_TOKENS = 1 << 0,       /* examples are seq_len tokens of a text: text data, a vocabulary, data_switch */
  XP_CAP_EMBEDDING = 1 << 1,    /* token and position embeddings: tie, pos */
  XP_CAP_HEADS = 1 << 2,        /* attention heads (n_head divides d_model) */
  XP_CAP_NORMS = 1 << 3,        /* norm layers to shift: range_shift (the range_shift hook) */
  XP_CAP_OUTLIERS = 1 << 4,     /* outlier metrics: outliers_every (the outliers hooks) */
};

/* A row of the model table (models.c): what the engine calls on a model.
 * Each model defines its rows in its own file (gpt.c, mlp.c). */
struct xp_model_ops {
  const char *name;             /* the `model` key's value */
  xp_model_kind kind;
  const char *help;             /* shown after the name in --help (NULL: none) */
  unsigned caps;                /* XP_CAP_* */
  /* Fill m (zeroed, m->ops set): tensor table, parameters from seed, the
   * linear layers' names.  On failure frees what it built. */
  int (*init)(xp_model *m, const xp_model_config *mc, int vocab, uint64_t seed, char *err, size_t errlen);
  void (*free)(xp_model *m);    /* the model's own state (m->act) */
  int (*forward)(xp_model *m, xp_ctx *ctx, const xp_batch *b, double *loss);
  int (*backward)(xp_model *m, xp_ctx *ctx, const xp_batch *b);
  int (*predict)(xp_model *m, xp_ctx *ctx, const xp_batch *b, float *out);
  /* The function-preserving range shift (`range_shift`): every norm's gain
   * (and bias) times 2^s, the weights of the linear layer it feeds times
   * 2^-s, o's AdamW moments as if trained so (NULL: the model has no norms). */
  void (*range_shift)(xp_model *m, struct xp_optim *o, int s);
  /* Outlier metrics (NULL: the model has none).  outliers_header writes
   * the CSV columns after "step" (",name" each) and returns their count;
   * outliers fills that many values from the last forward and backward,
   * run with ctx->collect_outliers set (docs/training.md). */
  int (*outliers_header)(const xp_model *m, FILE *csv);
  void (*outliers)(xp_model *m, double *row);
};

/* The model table: by `model` name (NULL: none), by kind, and its size
 * (kinds run 0 .. xp_model_count() - 1). */
const xp_model_ops *xp_model_lookup(const char *name);
const xp_model_ops *xp_model_of(xp_model_kind kind);
int xp_model_count(void);
/* The row's capabilities (XP_CAP_*; 0 for an unknown kind). */
unsigned xp_model_caps(xp_model_kind kind);

/* Build the model and initialize its parameters from seed (GPT-2 style:
 * N(0, 0.02), residual projections 0.02/sqrt(2 n_layer), norms 1, biases 0). */
int xp_model_init(xp_model *m, const xp_model_config *mc, int vocab, uint64_t seed, char *err, size_t errlen);
void xp_model_free(xp_model *m);
/* Forward on a batch (b->n <= mc.batch): mean loss in *loss; keeps what the
 * backward needs.  Returns 0, or -1 when a GEMM failed (ctx->err). */
int xp_model_forward(xp_model *m, xp_ctx *ctx, const xp_batch *b, double *loss);
/* Gradients of the mean loss of the last forward into m->grads (overwritten). */
int xp_model_backward(xp_model *m, xp_ctx *ctx, const xp_batch *b);
/* Outlier metrics of the last step (xp_model_ops.outliers_header and
 * .outliers): -1 when the model has none. */
int xp_model_outliers_header(const xp_model *m, FILE *csv);
int xp_model_outliers(xp_model *m, double *row);
/* The keys a model must support, asked of its capabilities (range_shift:
 * norms to shift, and no tie; data_switch: tokens; outliers_every: outlier
 * metrics; tie, pos rope: an embedding) and allreduce_ranks dividing the
 * batch: 0, or -1 with err naming the key and the models that have it.  The command calls it before step 0 (exit 2), and
 * xp_train again for its other callers. */
int xp_model_check_config(const xp_model *m, const xp_config *c, char *err, size_t errlen);
/* Outputs without a loss (mlp: b->n x out_dim predictions or logits; gpt:
 * b->n*seq_len x vocab logits) into out.  The mlp teacher uses it. */
int xp_model_predict(xp_model *m, xp_ctx *ctx, const xp_batch *b, float *out);

/* ---- data --------------------------------------------------------------- */

typedef struct xp_data {
  int vocab;
  unsigned char itos[256];      /* token -> byte */
  int stoi[256];                /* byte -> token (-1 absent) */
  int *tok;                     /* the corpus as tokens */
  size_t ntok, ntrain;          /* first ntrain tokens train, the rest validate */
  /* mlp teacher, run in plain fp32 by its own context */
  xp_model teacher;
  xp_ctx teacher_ctx;
  int has_teacher;
} xp_data;

/* The split of ntok tokens: the last 10% validate, at least `need` of them. */
size_t xp_data_split(size_t ntok, size_t need);
/* A word-level vocabulary (vocab.c; `vocab = word:K`): text's tokens as ids
 * (0 <unk>, then the K most frequent words of the training split, ties by
 * first appearance), word[id] their text.  need: the fewest validation tokens. */
typedef struct xp_words {
  int vocab;                    /* 1 + min(K, distinct training tokens) */
  int *tok;                     /* ntok ids */
  size_t ntok, ntrain;
  char **word;                  /* vocab strings into buf; word[0] = "<unk>" */
  char *buf;
} xp_words;
int xp_words_build(xp_words *w, const char *text, size_t len, int K, size_t need, char *err, size_t errlen);
void xp_words_free(xp_words *w);

/* The built-in corpus: deterministic generated English-like text (docs). */
size_t xp_builtin_text(uint64_t seed, size_t bytes, char *out);
/* A shipped corpus (`data = shakespeare`): its file in the first folder of
 * EXMY_DATA_DIR, the source tree's experiments/corpora, the installed
 * $(pkgdatadir)/corpora that has it.  1 with path set; 0: no corpus of that
 * name; -1: not found (path: the file's name). */
int xp_corpus_path(const char *name, char *path, size_t n);
int xp_data_init(xp_data *d, const xp_config *c, char *err, size_t errlen);
void xp_data_free(xp_data *d);
/* The batch of a step: a pure function of (seed, step, split), so resume needs
 * no data state.  Buffers are owned by the caller (xp_batch_alloc). */
typedef struct xp_batch_buf { int *tokens, *targets, *labels; float *x, *y; xp_batch b; } xp_batch_buf;
int xp_batch_alloc(xp_batch_buf *bb, const xp_config *c);
void xp_batch_free(xp_batch_buf *bb);
void xp_data_batch(xp_data *d, const xp_config *c, long step, int validation, xp_batch_buf *bb);
/* Rank r's share of b (of R equal shares of b->n; R divides b->n). */
xp_batch xp_batch_shard(const xp_batch *b, const xp_config *c, int r, int R);

/* ---- optimizer ---------------------------------------------------------- */

typedef struct xp_optim {
  size_t n;
  float *m, *v;                 /* AdamW moments (fp32; MS-AMP O2 rounds them each step) */
  void *codes;                  /* scratch: a tensor's codes when weights are rounded (master=) */
  long t;                       /* updates taken (bias correction) */
} xp_optim;
int xp_optim_init(xp_optim *o, size_t nparams);
void xp_optim_free(xp_optim *o);
/* The learning rate of a step: linear warmup, then cosine decay to min_lr_frac * lr;
 * with lr_restart = R, from step R a second cosine from lr to the floor (no warmup). */
double xp_lr_at(const xp_config *c, long step);
/* One AdamW update of m->params from m->grads (clipped to the global norm
 * c->clip; MS-AMP levels; rounding to c->master).  *grad_norm: the norm
 * before clipping. */
void xp_optim_step(xp_optim *o, xp_model *m, const xp_config *c, long step, double lr, double *grad_norm);

/* The MS-AMP levels (`msamp = N`, row N; optim.c). */
typedef struct xp_msamp_level {
  const char *help;
  int fp8_wgrad;                /* every matrix's gradient to e4m3fn (pow2 current scale) in the optimizer */
  int fp8_allreduce;            /* linear weights' gradients through the FP8 all-reduce (allreduce.c) */
  int fp16_linear;              /* linear weights stored in fp16 (rne, from init; no fp32 master) */
  int low_moments;              /* Adam's moments: first e4m3fn, second fp16, scaled */
} xp_msamp_level;
#define XP_MSAMP_LEVELS 4
/* Row `level` (0 .. XP_MSAMP_LEVELS - 1). */
const xp_msamp_level *xp_msamp_level_of(int level);
/* After xp_optim_init: when the level stores linear weights in fp16,
 * round them (before step 0). */
void xp_optim_setup(xp_optim *o, xp_model *m, const xp_config *c);

/* x <- fmt(x): n floats quantized with rnd (SR counter = element index) and
 * decoded back, in place; codes: scratch for n codes of fmt (params.c). */
void xp_round_f32(const exmy_format *fmt, const exmy_rounding *rnd, float *x, size_t n, void *codes);

/* ---- the simulated data-parallel all-reduce (allreduce.c) ------------------ */

typedef struct xp_allreduce {
  int R;                        /* ranks */
  int fp8;                      /* MS-AMP O1's FP8 all-reduce of linear weights' gradients */
  int active;                   /* R > 1 or fp8: the step runs through here */
  size_t n;                     /* parameters */
  float *rank_grads;            /* R x (n + 1): each rank's gradients (R > 1) */
  float *tmp, *acc;             /* n each */
  void *codes;                  /* n e4m3 codes */
} xp_allreduce;
/* 0, or -1 when out of memory. */
int xp_allreduce_init(xp_allreduce *a, const xp_config *c, const xp_model *m);
void xp_allreduce_free(xp_allreduce *a);
/* Where rank r's gradients go (R = 1: m->grads itself). */
float *xp_allreduce_rank(xp_allreduce *a, xp_model *m, int r);
/* The ranks' gradients, reduced, into m->grads (a no-op unless active). */
void xp_allreduce_run(xp_allreduce *a, xp_model *m);

/* ---- rules -------------------------------------------------------------- */

/* Spike: loss > factor * median of the previous `window` losses (needs a full
 * window).  Divergence: a non-finite loss, or after warmup a loss above the
 * first step's loss.  Feed the losses in order. */
typedef struct xp_detector {
  int window;
  double factor;
  long warmup_steps;
  double *ring;                 /* the last `window` losses */
  long seen;
  double first;
  long spikes, first_spike;     /* -1: none */
  long diverged_at;             /* -1: none */
  long switch_at;               /* data_switch (0: none) */
} xp_detector;
int xp_detector_init(xp_detector *d, int window, double factor, long warmup_steps);
void xp_detector_free(xp_detector *d);
/* Returns 1 if this loss is a spike, 2 if the run diverged here, else 0. */
int xp_detector_feed(xp_detector *d, long step, double loss);
/* data_switch at step (0: none): the divergence rule starts again there, its reference the largest
 * loss of the first max(warmup_steps, 1) steps on the new data (state: the config and `first`). */
void xp_detector_data_switch(xp_detector *d, long step);

/* ---- checkpoints -------------------------------------------------------- */

typedef struct xp_ckpt_state {  /* what a checkpoint holds (pointers into the run) */
  const char *prec_key;         /* the precision settings: recipe states carry over only when equal */
  long step;                    /* the next step to run */
  xp_model *model;
  xp_optim *optim;
  xp_ctx *ctx;
  xp_detector *det;
  long fallback_left, fallbacks, checks;
  double *loss;                 /* the losses of steps 0..nloss-1 (load: allocated) */
  long nloss;
} xp_ckpt_state;
/* Write atomically (PATH.tmp, fsync, rename).  0 or -1 with err. */
int xp_ckpt_save(const char *path, const xp_ckpt_state *s, char *err, size_t errlen);
/* Read into the run's objects (built with the same model settings).
 * *same_prec: the checkpoint's precision equals s->prec_key (the recipes'
 * state was restored); else the scaling state starts fresh. */
int xp_ckpt_load(const char *path, xp_ckpt_state *s, int *same_prec, char *err, size_t errlen);

/* ---- training ----------------------------------------------------------- */

typedef struct xp_result {
  long steps_done;
  double first_loss, final_loss, min_loss;
  double final_loss_avg;        /* mean of the last 10% of steps */
  double val_loss;              /* NaN when not evaluated */
  long spikes, first_spike, diverged_at;
  long fallbacks, checks;
  double seconds, tokens_per_s;
  size_t nparams;
  double *loss;                 /* per-step losses (steps_done of them; caller frees) */
  int stopped;                  /* *cfg->stop's value when the run stopped on it, else 0 */
} xp_result;

/* Run training as configured: resume, calibrate, train, check/fallback,
 * statistics, checkpoints, outputs in cfg->out_dir.  Returns 0, or -1 with err. */
int xp_train(const xp_config *cfg, xp_result *res, char *err, size_t errlen);
void xp_result_free(xp_result *res);
/* The final loss of losses [from, to): the mean of their last 10% (at least one);
 * xp_result's final_loss_avg is it over every step (from 0) */
double xp_final_loss_avg(const double *loss, long from, long to);

#endif
