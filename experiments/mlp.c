/* mlp.c: the teacher-student residual MLP (forward and backward, llm.c style).
 *
 *   h = inp(x);  per block i: h = h + gelu(b{i}.fc(norm_i(h)));
 *   out = head(normf(h))
 *
 * Norms: LayerNorm or RMSNorm with affine parameters (mc.rmsnorm).  Loss:
 * mean squared error over n x out_dim (XP_MODEL_MLP) or softmax
 * cross-entropy against labels, mean over n (XP_MODEL_MLP_CLASS).
 * Linear layers in forward order: inp, b0.fc, ..., head.
 *
 * Shapes: N examples, I = in_dim, D = hidden, O = out_dim. */
#include "experiments/layers.h"
#include "experiments/model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mlp_block {
  int lng, lnb, fcw, fcb;       /* tensor indices (-1: absent: lnb under RMSNorm, biases with bias = 0) */
  int lin;                      /* fc's linear-layer id */
  float *ln, *mean, *rstd;      /* N x D, N, N */
  float *fch, *act;             /* N x D: fc output, gelu output */
} mlp_block;

typedef struct mlp_state {
  int inpw, inpb, lnfg, lnfb, headw, headb;
  int lin_inp, lin_head;        /* linear-layer ids (forward order: inp, b{i}.fc, head) */
  mlp_block *blk;
  size_t cap;                   /* examples allocated (0: none yet) */
  float *mem;
  float *res;                   /* (depth + 1) x N x D: h after inp and after each block */
  float *lnf, *lnf_mean, *lnf_rstd, *out, *probs;
  float *dres, *dln, *dfch, *dout;
  size_t n_last;
} mlp_state;

#define P(t) (m->params + m->tensors[t].off)
#define G(t) (m->grads + m->tensors[t].off)
#define PN(t) ((t) < 0 ? NULL : P(t))
#define GN(t) ((t) < 0 ? NULL : G(t))

static int add_t(xp_model *m, int *bad, const char *fmt, int i, size_t rows, size_t cols, int mat) {
  char name[32];
  snprintf(name, sizeof name, fmt, i);
  int t = xp_add_tensor(m, name, rows, cols, mat);
  if (t < 0) *bad = 1;
  return t;
}

static void mlp_free(xp_model *m);

/* vocab: unused (the gpt rows need it) */
static int mlp_init(xp_model *m, const xp_model_config *mc, int vocab, uint64_t seed, char *err, size_t errlen) {
  (void)vocab;
  int I = mc->in_dim, D = mc->hidden, depth = mc->depth, O = mc->out_dim;
  if (I < 1) return snprintf(err, errlen, "mlp: in_dim %d must be >= 1", I), -1;
  if (D < 1) return snprintf(err, errlen, "mlp: hidden %d must be >= 1", D), -1;
  if (depth < 0) return snprintf(err, errlen, "mlp: depth %d must be >= 0", depth), -1;
  if (O < (mc->kind == XP_MODEL_MLP_CLASS ? 2 : 1))
    return snprintf(err, errlen, "mlp: out_dim %d must be >= %d", O, mc->kind == XP_MODEL_MLP_CLASS ? 2 : 1), -1;
  if (mc->batch < 1) return snprintf(err, errlen, "mlp: batch %d must be >= 1", mc->batch), -1;
  m->mc = *mc;
  mlp_state *s = calloc(1, sizeof *s);
  if (!s || !(s->blk = calloc((size_t)depth + 1, sizeof *s->blk))) {
    free(s);
    return snprintf(err, errlen, "mlp: out of memory"), -1;
  }
  m->act = s;
  int bad = 0, rms = mc->rmsnorm, nb = mc->no_bias, nnb = rms || nb; /* bias = 0: none; nnb: no norm bias */
  size_t d = (size_t)D;
  s->inpw = add_t(m, &bad, "inp.w", 0, d, (size_t)I, 1);
  s->inpb = nb ? -1 : add_t(m, &bad, "inp.b", 0, 1, d, 0);
  for (int i = 0; i < depth; i++) {
    mlp_block *k = &s->blk[i];
    k->lng = add_t(m, &bad, "b%d.ln.g", i, 1, d, 0);
    k->lnb = nnb ? -1 : add_t(m, &bad, "b%d.ln.b", i, 1, d, 0);
    k->fcw = add_t(m, &bad, "b%d.fc.w", i, d, d, 1);
    k->fcb = nb ? -1 : add_t(m, &bad, "b%d.fc.b", i, 1, d, 0);
  }
  s->lnfg = add_t(m, &bad, "lnf.g", 0, 1, d, 0);
  s->lnfb = nnb ? -1 : add_t(m, &bad, "lnf.b", 0, 1, d, 0);
  s->headw = add_t(m, &bad, "head.w", 0, (size_t)O, d, 1);
  s->headb = nb ? -1 : add_t(m, &bad, "head.b", 0, 1, (size_t)O, 0);
  int nlin = 0; /* linear-layer ids, forward order */
  s->lin_inp = nlin++;
  for (int i = 0; i < depth; i++) s->blk[i].lin = nlin++;
  s->lin_head = nlin++;
  if (bad || xp_alloc_params(m) || xp_set_lin_names(m, nlin)) {
    mlp_free(m);
    xp_params_free(m);
    return snprintf(err, errlen, "mlp: out of memory"), -1;
  }
  snprintf(m->lin_name[s->lin_inp], 32, "inp");
  for (int i = 0; i < depth; i++) snprintf(m->lin_name[s->blk[i].lin], 32, "b%d.fc", i);
  snprintf(m->lin_name[s->lin_head], 32, "head");

  /* weights N(0, 1/fan_in) (variance 1/fan_in: a random teacher computes a
   * function of order one), biases 0 (calloc), gains 1. */
  for (int t = 0; t < m->ntensors; t++) {
    const xp_param *p = &m->tensors[t];
    size_t len = strlen(p->name);
    if (p->is_matrix) xp_init_normal(m, t, seed, 1.0 / sqrt((double)p->cols));
    else if (!strcmp(p->name + len - 2, ".g")) xp_init_const(m, t, 1.0f);
  }
  return 0;
}

static void act_free(mlp_state *s) {
  free(s->mem);
  s->mem = NULL;
  s->cap = 0;
}

static void mlp_free(xp_model *m) {
  mlp_state *s = m->act;
  if (!s) return;
  act_free(s);
  free(s->blk);
  free(s);
  m->act = NULL;
}

/* Carve the activations for `cap` examples (mem NULL: only count). */
static size_t act_layout(const xp_model *m, mlp_state *s, size_t cap, float *mem) {
  size_t D = (size_t)m->mc.hidden, O = (size_t)m->mc.out_dim, depth = (size_t)m->mc.depth;
  size_t ND = cap * D, at = 0;
#define TAKE(ptr, count)             \
  do {                               \
    if (mem) (ptr) = mem + at;       \
    at += (count);                   \
  } while (0)
  TAKE(s->res, (depth + 1) * ND);
  for (size_t i = 0; i < depth; i++) {
    mlp_block *k = &s->blk[i];
    TAKE(k->ln, ND);
    TAKE(k->mean, cap);
    TAKE(k->rstd, cap);
    TAKE(k->fch, ND);
    TAKE(k->act, ND);
  }
  TAKE(s->lnf, ND);
  TAKE(s->lnf_mean, cap);
  TAKE(s->lnf_rstd, cap);
  TAKE(s->out, cap * O);
  TAKE(s->probs, cap * O);
  TAKE(s->dres, ND);
  TAKE(s->dln, ND);
  TAKE(s->dfch, ND);
  TAKE(s->dout, cap * O);
#undef TAKE
  return at;
}

static int act_ensure(xp_model *m, xp_ctx *ctx, const xp_batch *b) {
  mlp_state *s = m->act;
  char msg[EXMY_ERRLEN];
  if (b->n < 1 || b->n > (size_t)m->mc.batch) {
    snprintf(msg, sizeof msg, "mlp: batch of %zu examples (1..%d allowed)", b->n, m->mc.batch);
    return xp_fail(ctx, msg);
  }
  if (s->cap) return 0;
  size_t cap = (size_t)m->mc.batch;
  s->mem = calloc(act_layout(m, s, cap, NULL), sizeof(float));
  if (!s->mem) return xp_fail(ctx, "mlp: out of memory for activations");
  act_layout(m, s, cap, s->mem);
  s->cap = cap;
  return 0;
}

/* x (N x I) -> out (N x O), keeping the activations. */
static int forward_out(xp_model *m, xp_ctx *ctx, const xp_batch *b) {
  if (act_ensure(m, ctx, b)) return -1;
  mlp_state *s = m->act;
  int depth = m->mc.depth, rms = m->mc.rmsnorm;
  size_t N = b->n, I = (size_t)m->mc.in_dim, D = (size_t)m->mc.hidden, O = (size_t)m->mc.out_dim;
  size_t stride = s->cap * D;
  s->n_last = N;
  if (xp_linear_forward(ctx, s->lin_inp, b->x, P(s->inpw), PN(s->inpb), s->res, N, I, D)) return -1;
  for (int i = 0; i < depth; i++) {
    mlp_block *k = &s->blk[i];
    float *h = s->res + (size_t)i * stride, *hn = h + stride;
    /* hn = h + gelu(fc(norm(h))) */
    xp_norm_forward(rms, h, P(k->lng), PN(k->lnb), k->ln, k->mean, k->rstd, N, D);
    if (xp_linear_forward(ctx, k->lin, k->ln, P(k->fcw), PN(k->fcb), k->fch, N, D, D)) return -1;
    xp_gelu_forward(k->fch, k->act, NULL, N * D);
    xp_add(hn, h, k->act, N * D);
  }
  float *hl = s->res + (size_t)depth * stride;
  xp_norm_forward(rms, hl, P(s->lnfg), PN(s->lnfb), s->lnf, s->lnf_mean, s->lnf_rstd, N, D);
  return xp_linear_forward(ctx, s->lin_head, s->lnf, P(s->headw), PN(s->headb), s->out, N, D, O);
}

static int mlp_forward(xp_model *m, xp_ctx *ctx, const xp_batch *b, double *loss) {
  if (forward_out(m, ctx, b)) return -1;
  mlp_state *s = m->act;
  size_t N = b->n, O = (size_t)m->mc.out_dim;
  if (m->mc.kind == XP_MODEL_MLP_CLASS) {
    for (size_t i = 0; i < N; i++)
      if (b->labels[i] < 0 || (size_t)b->labels[i] >= O) return xp_fail(ctx, "mlp: label outside [0, out_dim)");
    *loss = xp_softmax_xent_forward(s->out, b->labels, s->probs, N, O);
  } else {
    double acc = 0.0; /* in element order */
    for (size_t i = 0; i < N * O; i++) {
      double e = (double)s->out[i] - b->y[i];
      acc += e * e;
    }
    *loss = acc / (double)(N * O);
  }
  return 0;
}

static int mlp_predict(xp_model *m, xp_ctx *ctx, const xp_batch *b, float *out) {
  if (forward_out(m, ctx, b)) return -1;
  mlp_state *s = m->act;
  memcpy(out, s->out, b->n * (size_t)m->mc.out_dim * sizeof(float));
  return 0;
}

/* Gradients of the last forward's mean loss into m->grads (overwritten). */
static int mlp_backward(xp_model *m, xp_ctx *ctx, const xp_batch *b) {
  mlp_state *s = m->act;
  if (!s->cap || s->n_last != b->n) return xp_fail(ctx, "mlp: backward without a matching forward");
  int depth = m->mc.depth, rms = m->mc.rmsnorm;
  size_t N = b->n, I = (size_t)m->mc.in_dim, D = (size_t)m->mc.hidden, O = (size_t)m->mc.out_dim;
  size_t stride = s->cap * D;

  /* d loss / d out */
  if (m->mc.kind == XP_MODEL_MLP_CLASS) {
    xp_softmax_xent_backward(s->probs, b->labels, s->dout, N, O);
  } else {
    float k2 = (float)(2.0 / (double)(N * O));
    for (size_t i = 0; i < N * O; i++) s->dout[i] = k2 * (s->out[i] - b->y[i]);
  }
  /* head and final norm (into dres, zeroed first) */
  if (xp_linear_backward(ctx, s->lin_head, s->dout, s->lnf, P(s->headw), G(s->headw), GN(s->headb), s->dln,
                         NULL, N, D, O))
    return -1;
  memset(s->dres, 0, N * D * sizeof(float));
  xp_norm_backward(rms, s->dln, s->res + (size_t)depth * stride, P(s->lnfg), s->lnf_mean, s->lnf_rstd,
                   s->dres, G(s->lnfg), GN(s->lnfb), N, D);
  /* blocks, last first: dres passes the residual unchanged, plus the branch */
  for (int i = depth - 1; i >= 0; i--) {
    mlp_block *k = &s->blk[i];
    xp_gelu_backward(s->dres, k->fch, NULL, s->dfch, N * D);
    if (xp_linear_backward(ctx, k->lin, s->dfch, k->ln, P(k->fcw), G(k->fcw), GN(k->fcb), s->dln, NULL, N,
                           D, D))
      return -1;
    xp_norm_backward(rms, s->dln, s->res + (size_t)i * stride, P(k->lng), k->mean, k->rstd, s->dres,
                     G(k->lng), GN(k->lnb), N, D);
  }
  /* inp: no gradient for the data */
  return xp_linear_backward(ctx, s->lin_inp, s->dres, b->x, P(s->inpw), G(s->inpw), GN(s->inpb), NULL, NULL, N, I, D);
}

/* Two rows, one network: the kind picks the loss (mlp_forward, mlp_backward). */
const xp_model_ops xp_mlp_model = {
  .name = "mlp",
  .kind = XP_MODEL_MLP,
  .help = "teacher-student regression",
  .caps = 0, /* vectors, not tokens; no norms to shift, no outlier metrics */
  .init = mlp_init,
  .free = mlp_free,
  .forward = mlp_forward,
  .backward = mlp_backward,
  .predict = mlp_predict,
};

const xp_model_ops xp_mlp_class_model = {
  .name = "mlp-class",
  .kind = XP_MODEL_MLP_CLASS,
  .help = NULL,
  .caps = 0,
  .init = mlp_init,
  .free = mlp_free,
  .forward = mlp_forward,
  .backward = mlp_backward,
  .predict = mlp_predict,
};
