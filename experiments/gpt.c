/* gpt.c: the char-level GPT-2-like model (forward and backward, llm.c style).
 *
 *   x = wte[token] + wpe[pos]
 *   per block i:  x = x + proj(attn(norm1(x)));  x = x + fc2(act(fc(norm2(x))))
 *   logits = lm_head(normf(x));  loss = mean softmax cross-entropy
 *
 * Norms: LayerNorm or RMSNorm (mc.rmsnorm).  qk_layernorm: that norm on
 * each head's q and k with gains only (hd of them, shared by the heads; a
 * bias on k would have a zero gradient: softmax ignores a shift common to a
 * row), tensors appended after lm_head so the other tensors' init does not
 * move.  z_loss: loss += C mean over tokens of logsumexp(logits)^2.  act: GELU (tanh) on fc: d -> 4d,
 * or SwiGLU on fc: d -> 2 hs ([gate | up], hs = 8d/3 rounded up to 8).
 * Linear layers in forward order: h{i}.qkv, h{i}.proj, h{i}.fc, h{i}.fc2, ...,
 * lm_head.  Attention's two products per (sequence, head) go through
 * xp_matmul with lin = -1, in parallel over (sequence, head).
 *
 * nanoGPT's and TinyLlama's options: no_bias (`bias = 0`): no bias tensors
 * in linear layers and LayerNorms.  tie: lm_head's weight is wte (no
 * lm_head.w; wte's gradient is lm_head's wgrad plus the embedding's
 * scatter).  rope: no wpe; each head's q and k rotated after the qk norm
 * (pairs i, i + hd/2 by the angle t 10000^(-2i/hd)), the backward rotating
 * dq and dk back.
 *
 * Shapes: B sequences of T tokens, C = d_model, NH heads of hd = C / NH,
 * BT = B T rows, V = vocab. */
#include "experiments/layers.h"
#include "experiments/model.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The linear layers of a block, in forward order.  Their ids (the index
 * into m->lin_name and the context's per-layer state) are given out once in
 * gpt_init: block by block, then lm_head. */
enum gpt_lin { LIN_QKV, LIN_PROJ, LIN_FC, LIN_FC2, LIN_PER_BLOCK };
static const char *const lin_names[LIN_PER_BLOCK] = {"qkv", "proj", "fc", "fc2"};

typedef struct gpt_block_idx {  /* tensor indices of one block (-1: absent) */
  int ln1g, ln1b, qkvw, qkvb, projw, projb, ln2g, ln2b, fcw, fcb, fc2w, fc2b;
  int qg, kg;                   /* qk_layernorm's gains (-1: absent) */
  int lin[LIN_PER_BLOCK];       /* linear-layer ids, by enum gpt_lin */
} gpt_block_idx;

typedef struct gpt_block_act {  /* what the backward needs from one block */
  float *ln1, *ln1_mean, *ln1_rstd; /* BT x C, BT, BT */
  float *qkv;                   /* BT x 3C */
  float *att;                   /* B x NH x T x T: softmax probabilities (masked = 0) */
  float *atty;                  /* BT x C: attention output before proj */
  float *ln2, *ln2_mean, *ln2_rstd;
  float *fch;                   /* BT x F: fc output */
  float *fcact;                 /* BT x H: activation output */
  float *fcth;                  /* BT x H: GELU's tanh values (none with SwiGLU) */
} gpt_block_act;

typedef struct gpt_state {
  int F, H;                     /* fc output width, fc2 input width */
  int wte, wpe, lnfg, lnfb, headw, headb;
  int head;                     /* the tensor lm_head multiplies by: headw, or wte when tied */
  int lin_head;                 /* lm_head's linear-layer id */
  float *rcos, *rsin;           /* rope: T x hd/2 rotation tables (NULL: learned positions) */
  gpt_block_idx *blk;
  /* activations, allocated for mc.batch sequences on first use */
  size_t cap;                   /* sequences allocated (0: none yet) */
  float *mem;
  float *res;                   /* (2L + 1) x BT x C: the residual stream before each sublayer and at the end */
  gpt_block_act *act;
  float *lnf, *lnf_mean, *lnf_rstd, *logits, *probs;
  /* backward scratch */
  float *dres, *tmp, *dln, *dqkv, *datty, *dfch, *dfcact, *dlogits;
  /* attention's per-(sequence, head) operands, (B NH) x T x hd (hs, hds: x T x T),
   * shared by the layers: q, k, v, the output (forward) or dO (backward),
   * dq, dk, dv, S (forward) or dP (backward), dS */
  float *hq, *hk, *hv, *hdo, *hdq, *hdk, *hdv, *hs, *hds;
  /* qk_layernorm: q and k before the norm, their gradients, row statistics */
  float *hqr, *hkr, *hdqr, *hdkr, *qmean, *qrstd, *kmean, *krstd;
  float *lse;                   /* BT: logsumexp of each logits row (z-loss, outlier metrics) */
  float *hlmax;                 /* B NH: max |attention logit| of each (sequence, head) */
  /* outlier metrics, allocated once in gpt_init */
  double *lmax;                 /* L: max |attention logit| of each block in the last forward */
  double *kscr;                 /* C: xp_channel_kurtosis's scratch */
  float *qkzero;                /* zeros: the bias qk_layernorm's LayerNorm does not have */
  size_t n_last;                /* sequences of the last forward */
} gpt_state;

#define P(t) (m->params + m->tensors[t].off)
#define G(t) (m->grads + m->tensors[t].off)
#define PN(t) ((t) < 0 ? NULL : P(t))
#define GN(t) ((t) < 0 ? NULL : G(t))

static void gpt_free(xp_model *m);

static int add_t(xp_model *m, int *bad, const char *fmt, int i, size_t rows, size_t cols, int mat) {
  char name[32];
  snprintf(name, sizeof name, fmt, i);
  int t = xp_add_tensor(m, name, rows, cols, mat);
  if (t < 0) *bad = 1;
  return t;
}

static int gpt_init(xp_model *m, const xp_model_config *mc, int vocab, uint64_t seed, char *err, size_t errlen) {
  int L = mc->n_layer, C = mc->d_model, NH = mc->n_head, T = mc->seq_len;
  if (L < 1) return snprintf(err, errlen, "gpt: n_layer %d must be >= 1", L), -1;
  if (C < 1) return snprintf(err, errlen, "gpt: d_model %d must be >= 1", C), -1;
  if (NH < 1) return snprintf(err, errlen, "gpt: n_head %d must be >= 1", NH), -1;
  if (C % NH) return snprintf(err, errlen, "gpt: d_model %d is not a multiple of n_head %d", C, NH), -1;
  if (T < 1) return snprintf(err, errlen, "gpt: seq_len %d must be >= 1", T), -1;
  if (vocab < 1) return snprintf(err, errlen, "gpt: vocab %d must be >= 1", vocab), -1;
  if (mc->batch < 1) return snprintf(err, errlen, "gpt: batch %d must be >= 1", mc->batch), -1;
  if (mc->rope && (C / NH) % 2)
    return snprintf(err, errlen, "gpt: pos rope needs an even head width (d_model %d / n_head %d = %d)", C, NH, C / NH),
           -1;
  m->mc = *mc;
  m->vocab = vocab;
  gpt_state *s = calloc(1, sizeof *s);
  if (!s || !(s->blk = calloc((size_t)L, sizeof *s->blk))) {
    free(s);
    return snprintf(err, errlen, "gpt: out of memory"), -1;
  }
  m->act = s;
  int hs = ((8 * C + 2) / 3 + 7) / 8 * 8; /* ceil(8C/3) rounded up to a multiple of 8 */
  s->F = mc->swiglu ? 2 * hs : 4 * C;
  s->H = mc->swiglu ? hs : 4 * C;
  size_t c = (size_t)C, F = (size_t)s->F, H = (size_t)s->H;
  int bad = 0, rms = mc->rmsnorm, nb = mc->no_bias, nnb = rms || nb; /* nnb: no norm bias */

  /* the tensor table, in init-stream order */
  s->wte = add_t(m, &bad, "wte", 0, (size_t)vocab, c, 1);
  s->wpe = mc->rope ? -1 : add_t(m, &bad, "wpe", 0, (size_t)T, c, 1);
  for (int i = 0; i < L; i++) {
    gpt_block_idx *k = &s->blk[i];
    k->ln1g = add_t(m, &bad, "h%d.ln1.g", i, 1, c, 0);
    k->ln1b = nnb ? -1 : add_t(m, &bad, "h%d.ln1.b", i, 1, c, 0);
    k->qkvw = add_t(m, &bad, "h%d.qkv.w", i, 3 * c, c, 1);
    k->qkvb = nb ? -1 : add_t(m, &bad, "h%d.qkv.b", i, 1, 3 * c, 0);
    k->projw = add_t(m, &bad, "h%d.proj.w", i, c, c, 1);
    k->projb = nb ? -1 : add_t(m, &bad, "h%d.proj.b", i, 1, c, 0);
    k->ln2g = add_t(m, &bad, "h%d.ln2.g", i, 1, c, 0);
    k->ln2b = nnb ? -1 : add_t(m, &bad, "h%d.ln2.b", i, 1, c, 0);
    k->fcw = add_t(m, &bad, "h%d.fc.w", i, F, c, 1);
    k->fcb = nb ? -1 : add_t(m, &bad, "h%d.fc.b", i, 1, F, 0);
    k->fc2w = add_t(m, &bad, "h%d.fc2.w", i, c, H, 1);
    k->fc2b = nb ? -1 : add_t(m, &bad, "h%d.fc2.b", i, 1, c, 0);
  }
  s->lnfg = add_t(m, &bad, "lnf.g", 0, 1, c, 0);
  s->lnfb = nnb ? -1 : add_t(m, &bad, "lnf.b", 0, 1, c, 0);
  s->headw = mc->tie ? -1 : add_t(m, &bad, "lm_head.w", 0, (size_t)vocab, c, 1);
  s->headb = nb ? -1 : add_t(m, &bad, "lm_head.b", 0, 1, (size_t)vocab, 0);
  s->head = mc->tie ? s->wte : s->headw;
  for (int i = 0; i < L; i++) {
    gpt_block_idx *k = &s->blk[i];
    const size_t hd = c / (size_t)NH;
    k->qg = k->kg = -1;
    if (!mc->qk_layernorm) continue;
    k->qg = add_t(m, &bad, "h%d.qln.g", i, 1, hd, 0);
    k->kg = add_t(m, &bad, "h%d.kln.g", i, 1, hd, 0);
  }
  s->lmax = calloc((size_t)L, sizeof *s->lmax);
  s->kscr = calloc(c, sizeof *s->kscr);
  s->qkzero = calloc(c, sizeof *s->qkzero);
  if (!s->lmax || !s->kscr || !s->qkzero) bad = 1;
  if (mc->rope) { /* angle t theta^(-2i/hd), in double, rounded once */
    const size_t hd = c / (size_t)NH, half = hd / 2;
    s->rcos = malloc((size_t)T * half * sizeof *s->rcos);
    s->rsin = malloc((size_t)T * half * sizeof *s->rsin);
    if (!s->rcos || !s->rsin) bad = 1;
    for (size_t t = 0; !bad && t < (size_t)T; t++)
      for (size_t i = 0; i < half; i++) {
        const double a = (double)t * pow(10000.0, -2.0 * (double)i / (double)hd);
        s->rcos[t * half + i] = (float)cos(a);
        s->rsin[t * half + i] = (float)sin(a);
      }
  }
  int nlin = 0; /* linear-layer ids, forward order */
  for (int i = 0; i < L; i++)
    for (int j = 0; j < LIN_PER_BLOCK; j++) s->blk[i].lin[j] = nlin++;
  s->lin_head = nlin++;
  if (bad || xp_alloc_params(m) || xp_set_lin_names(m, nlin)) {
    gpt_free(m);
    xp_params_free(m);
    return snprintf(err, errlen, "gpt: out of memory"), -1;
  }
  for (int i = 0; i < L; i++)
    for (int j = 0; j < LIN_PER_BLOCK; j++) snprintf(m->lin_name[s->blk[i].lin[j]], 32, "h%d.%s", i, lin_names[j]);
  snprintf(m->lin_name[s->lin_head], 32, "lm_head");

  /* GPT-2 init: matrices N(0, 0.02), the projections into the residual
   * stream N(0, 0.02 / sqrt(2 L)), biases 0, gains 1 (calloc gave the zeros). */
  double std_res = 0.02 / sqrt(2.0 * L);
  for (int t = 0; t < m->ntensors; t++) {
    const xp_param *p = &m->tensors[t];
    size_t len = strlen(p->name);
    if (p->is_matrix) {
      int resid = strstr(p->name, ".proj.w") || (len > 6 && !strcmp(p->name + len - 6, "fc2.w"));
      xp_init_normal(m, t, seed, resid ? std_res : 0.02);
    } else if (!strcmp(p->name + len - 2, ".g")) {
      xp_init_const(m, t, 1.0f);
    }
  }
  return 0;
}

static void act_free(gpt_state *s) {
  free(s->mem);
  free(s->act);
  s->mem = NULL;
  s->act = NULL;
  s->cap = 0;
}

static void gpt_free(xp_model *m) {
  gpt_state *s = m->act;
  if (!s) return;
  act_free(s);
  free(s->blk);
  free(s->lmax);
  free(s->kscr);
  free(s->qkzero);
  free(s->rcos);
  free(s->rsin);
  free(s);
  m->act = NULL;
}

/* Carve every activation and scratch buffer for `cap` sequences from one
 * block (mem NULL: only count).  Returns the floats needed. */
static size_t act_layout(const xp_model *m, gpt_state *s, size_t cap, float *mem) {
  size_t L = (size_t)m->mc.n_layer, C = (size_t)m->mc.d_model, T = (size_t)m->mc.seq_len;
  size_t NH = (size_t)m->mc.n_head, V = (size_t)m->vocab, F = (size_t)s->F, H = (size_t)s->H;
  size_t BT = cap * T, at = 0;
#define TAKE(ptr, count)             \
  do {                               \
    if (mem) (ptr) = mem + at;       \
    at += (count);                   \
  } while (0)
  TAKE(s->res, (2 * L + 1) * BT * C);
  for (size_t l = 0; l < L; l++) {
    gpt_block_act scratch, *a = mem ? &s->act[l] : &scratch; /* counting: a throwaway */
    TAKE(a->ln1, BT * C);
    TAKE(a->ln1_mean, BT);
    TAKE(a->ln1_rstd, BT);
    TAKE(a->qkv, BT * 3 * C);
    TAKE(a->att, cap * NH * T * T);
    TAKE(a->atty, BT * C);
    TAKE(a->ln2, BT * C);
    TAKE(a->ln2_mean, BT);
    TAKE(a->ln2_rstd, BT);
    TAKE(a->fch, BT * F);
    TAKE(a->fcact, BT * H);
    TAKE(a->fcth, m->mc.swiglu ? 0 : BT * H);
  }
  TAKE(s->lnf, BT * C);
  TAKE(s->lnf_mean, BT);
  TAKE(s->lnf_rstd, BT);
  TAKE(s->logits, BT * V);
  TAKE(s->probs, BT * V);
  TAKE(s->dres, BT * C);
  TAKE(s->tmp, BT * C);
  TAKE(s->dln, BT * C);
  TAKE(s->dqkv, BT * 3 * C);
  TAKE(s->datty, BT * C);
  TAKE(s->dfch, BT * F);
  TAKE(s->dfcact, BT * H);
  TAKE(s->dlogits, BT * V);
  TAKE(s->hq, BT * C);
  TAKE(s->hk, BT * C);
  TAKE(s->hv, BT * C);
  TAKE(s->hdo, BT * C);
  TAKE(s->hdq, BT * C);
  TAKE(s->hdk, BT * C);
  TAKE(s->hdv, BT * C);
  TAKE(s->hs, cap * NH * T * T);
  TAKE(s->hds, cap * NH * T * T);
  const size_t qk = m->mc.qk_layernorm ? 1 : 0;
  TAKE(s->hqr, qk * BT * C);
  TAKE(s->hkr, qk * BT * C);
  TAKE(s->hdqr, qk * BT * C);
  TAKE(s->hdkr, qk * BT * C);
  TAKE(s->qmean, qk * cap * NH * T);
  TAKE(s->qrstd, qk * cap * NH * T);
  TAKE(s->kmean, qk * cap * NH * T);
  TAKE(s->krstd, qk * cap * NH * T);
  TAKE(s->lse, BT);
  TAKE(s->hlmax, cap * NH);
#undef TAKE
  return at;
}

/* Make sure activations for b->n sequences exist (allocated for mc.batch). */
static int act_ensure(xp_model *m, xp_ctx *ctx, const xp_batch *b) {
  gpt_state *s = m->act;
  char msg[EXMY_ERRLEN];
  if (b->n < 1 || b->n > (size_t)m->mc.batch) {
    snprintf(msg, sizeof msg, "gpt: batch of %zu sequences (1..%d allowed)", b->n, m->mc.batch);
    return xp_fail(ctx, msg);
  }
  if (s->cap) return 0;
  size_t cap = (size_t)m->mc.batch, need = act_layout(m, s, cap, NULL);
  s->act = calloc((size_t)m->mc.n_layer, sizeof *s->act);
  s->mem = calloc(need, sizeof(float));
  if (!s->act || !s->mem) {
    act_free(s);
    return xp_fail(ctx, "gpt: out of memory for activations");
  }
  act_layout(m, s, cap, s->mem);
  s->cap = cap;
  return 0;
}

/* ---- attention ----------------------------------------------------------- */

/* Head h of sequence b: q, k, v (T x hd each, contiguous) out of qkv (BT x 3C).
 * bias (3C) or NULL: qkv's bias, added to the head's columns of qkv first
 * (in place: the backward gathers the biased values again). */
static void gather_head(float *qkv, const float *bias, size_t T, size_t C, size_t hd, size_t b, size_t h, float *q,
                        float *k, float *v) {
  float *const dst[3] = {q, k, v};
  for (size_t t = 0; t < T; t++) {
    float *row = qkv + (b * T + t) * 3 * C + h * hd;
    for (size_t part = 0; part < 3; part++) {
      float *src = row + part * C, *d = dst[part] + t * hd;
      if (bias) {
        const float *bp = bias + part * C + h * hd;
        for (size_t j = 0; j < hd; j++) d[j] = src[j] = src[j] + bp[j];
      } else {
        memcpy(d, src, hd * sizeof(float));
      }
    }
  }
}

/* Every head's q, k, v into the per-(sequence, head) buffers hq, hk, hv
 * ((B NH) x T x hd), qkv's bias added first when bias is given (the
 * forward), and, when dx is given, its columns of dx (BT x C) into hdo. */
static void gather_heads(const gpt_state *s, float *qkv, const float *bias, const float *dx, size_t B, size_t T,
                         size_t C, size_t NH) {
  const size_t hd = C / NH, th = T * hd;
  long nbh = (long)(B * NH);
#pragma omp parallel for schedule(static)
  for (long bh = 0; bh < nbh; bh++) {
    size_t b = (size_t)bh / NH, h = (size_t)bh % NH, o = (size_t)bh * th;
    gather_head(qkv, bias, T, C, hd, b, h, s->hq + o, s->hk + o, s->hv + o);
    if (dx)
      for (size_t t = 0; t < T; t++) memcpy(s->hdo + o + t * hd, dx + (b * T + t) * C + h * hd, hd * sizeof(float));
  }
}

/* qk_layernorm of block k: hq, hk (B NH T rows of hd) normalized in place,
 * their inputs kept in hqr, hkr with the row statistics (the backward calls
 * it again: the same bits). */
static void qk_norm_forward(const xp_model *m, const gpt_block_idx *k, size_t B) {
  const gpt_state *s = m->act;
  size_t NH = (size_t)m->mc.n_head, T = (size_t)m->mc.seq_len, hd = (size_t)m->mc.d_model / NH;
  size_t rows = B * NH * T;
  memcpy(s->hqr, s->hq, rows * hd * sizeof(float));
  memcpy(s->hkr, s->hk, rows * hd * sizeof(float));
  const float *zb = m->mc.rmsnorm ? NULL : s->qkzero;
  xp_norm_forward(m->mc.rmsnorm, s->hqr, P(k->qg), zb, s->hq, s->qmean, s->qrstd, rows, hd);
  xp_norm_forward(m->mc.rmsnorm, s->hkr, P(k->kg), zb, s->hk, s->kmean, s->krstd, rows, hd);
}

/* rope: rotate x ((B NH) x T x hd, in place) by position; inverse: the
 * transpose (the backward's dq, dk back to the unrotated q, k). */
static void rope_apply(const gpt_state *s, float *x, size_t nbh, size_t T, size_t hd, int inverse) {
  const size_t half = hd / 2;
  const float sg = inverse ? -1.0f : 1.0f;
  long n = (long)nbh;
#pragma omp parallel for schedule(static)
  for (long bh = 0; bh < n; bh++)
    for (size_t t = 0; t < T; t++) {
      float *r = x + ((size_t)bh * T + t) * hd;
      const float *cs = s->rcos + t * half, *sn = s->rsin + t * half;
      for (size_t i = 0; i < half; i++) {
        const float a = r[i], b = r[i + half], sv = sg * sn[i];
        r[i] = a * cs[i] - b * sv;
        r[i + half] = b * cs[i] + a * sv;
      }
    }
}

/* qkv (BT x 3C) of block l -> att (B x NH x T x T probabilities), atty (BT x C).
 * S = q k^T (GEMM), P = causal softmax(S / sqrt(hd)) in fp32, out = P v (GEMM);
 * each product for every (sequence, head) at once (xp_matmul_batch).  With
 * ctx->collect_outliers, s->lmax[l] = max |S / sqrt(hd)| over the causal
 * entries. */
static int attention_forward(const xp_model *m, xp_ctx *ctx, int l, size_t B, float *qkv, const float *qkv_bias,
                             float *att, float *atty) {
  const gpt_state *s = m->act;
  size_t T = (size_t)m->mc.seq_len, C = (size_t)m->mc.d_model, NH = (size_t)m->mc.n_head;
  size_t hd = C / NH, th = T * hd, tt = T * T;
  float scale = (float)(1.0 / sqrt((double)hd));
  long nbh = (long)(B * NH);
  const int want_max = ctx->collect_outliers;
  gather_heads(s, qkv, qkv_bias, NULL, B, T, C, NH);
  if (m->mc.qk_layernorm) qk_norm_forward(m, &s->blk[l], B);
  if (s->rcos) {
    rope_apply(s, s->hq, (size_t)nbh, T, hd, 0);
    rope_apply(s, s->hk, (size_t)nbh, T, hd, 0);
  }
  /* S = q k^T */
  xp_matmul_batch(ctx, &(xp_gemm_desc){.lin = -1, .role = XP_FPROP,
                                       .a = {.kind = XP_INPUT, .p = s->hq},
                                       .b = {.kind = XP_INPUT, .trans = 1, .p = s->hk},
                                       .m = T, .n = T, .k = hd, .d = s->hs},
                  (size_t)nbh, th, th, tt);
  if (ctx->failed) return -1;
#pragma omp parallel for schedule(static)
  for (long bh = 0; bh < nbh; bh++) {
    const float *S = s->hs + (size_t)bh * tt;
    float *Pm = att + (size_t)bh * tt;
    for (size_t i = 0; i < T; i++) {
      const float *sr = S + i * T;
      float *pr = Pm + i * T;
      float mx = sr[0] * scale;
      for (size_t j = 1; j <= i; j++) mx = sr[j] * scale > mx ? sr[j] * scale : mx;
      double sum = 0.0;
      for (size_t j = 0; j <= i; j++) {
        pr[j] = expf(sr[j] * scale - mx);
        sum += pr[j];
      }
      for (size_t j = 0; j <= i; j++) pr[j] = (float)(pr[j] / sum);
      for (size_t j = i + 1; j < T; j++) pr[j] = 0.0f;
    }
    if (want_max) { /* the logits as the softmax saw them: S * scale in float */
      float am = 0.0f;
      for (size_t i = 0; i < T; i++)
        for (size_t j = 0; j <= i; j++) {
          const float a = fabsf(S[i * T + j] * scale);
          am = a > am || isnan(a) ? a : am;
        }
      s->hlmax[bh] = am;
    }
  }
  if (want_max) { /* over (sequence, head) in order */
    double am = 0.0;
    for (long bh = 0; bh < nbh; bh++) am = s->hlmax[bh] > am || isnan(s->hlmax[bh]) ? s->hlmax[bh] : am;
    s->lmax[l] = am;
  }
  /* o = P v */
  xp_matmul_batch(ctx, &(xp_gemm_desc){.lin = -1, .role = XP_FPROP,
                                       .a = {.kind = XP_INPUT, .p = att},
                                       .b = {.kind = XP_INPUT, .p = s->hv},
                                       .m = T, .n = hd, .k = T, .d = s->hdo},
                  (size_t)nbh, tt, th, th);
  if (ctx->failed) return -1;
#pragma omp parallel for schedule(static)
  for (long bh = 0; bh < nbh; bh++) {
    size_t b = (size_t)bh / NH, h = (size_t)bh % NH;
    const float *o = s->hdo + (size_t)bh * th;
    for (size_t t = 0; t < T; t++) memcpy(atty + (b * T + t) * C + h * hd, o + t * hd, hd * sizeof(float));
  }
  return 0;
}

/* datty (BT x C) -> dqkv (BT x 3C, overwritten).
 * dP = dO v^T, dv = P^T dO, dS = P (dP - rowsum(P dP)) / sqrt(hd),
 * dq = dS k, dk = dS^T q; each product for every (sequence, head) at once. */
static int attention_backward(const xp_model *m, xp_ctx *ctx, int l, size_t B, const float *qkv,
                              const float *att, const float *datty, float *dqkv) {
  const gpt_state *s = m->act;
  size_t T = (size_t)m->mc.seq_len, C = (size_t)m->mc.d_model, NH = (size_t)m->mc.n_head;
  size_t hd = C / NH, th = T * hd, tt = T * T, nb;
  float scale = (float)(1.0 / sqrt((double)hd));
  long nbh = (long)(B * NH);
  nb = (size_t)nbh;
  gather_heads(s, (float *)qkv, NULL, datty, B, T, C, NH); /* no bias: read only */
  const gpt_block_idx *k = &s->blk[l];
  if (m->mc.qk_layernorm) qk_norm_forward(m, k, B);
  if (s->rcos) { /* the forward's rotated q and k (the same bits) */
    rope_apply(s, s->hq, nb, T, hd, 0);
    rope_apply(s, s->hk, nb, T, hd, 0);
  }
  /* dP = dO v^T */
  xp_matmul_batch(ctx, &(xp_gemm_desc){.lin = -1, .role = XP_DGRAD,
                                       .a = {.kind = XP_GRAD, .p = s->hdo},
                                       .b = {.kind = XP_INPUT, .trans = 1, .p = s->hv},
                                       .m = T, .n = T, .k = hd, .d = s->hs},
                  nb, th, th, tt);
  /* dv = P^T dO */
  xp_matmul_batch(ctx, &(xp_gemm_desc){.lin = -1, .role = XP_WGRAD,
                                       .a = {.kind = XP_INPUT, .trans = 1, .p = att},
                                       .b = {.kind = XP_GRAD, .p = s->hdo},
                                       .m = T, .n = hd, .k = T, .d = s->hdv},
                  nb, tt, th, th);
  if (ctx->failed) return -1;
#pragma omp parallel for schedule(static)
  for (long bh = 0; bh < nbh; bh++) {
    const float *Pm = att + (size_t)bh * tt, *dP = s->hs + (size_t)bh * tt;
    float *dS = s->hds + (size_t)bh * tt;
    for (size_t i = 0; i < T; i++) {
      const float *pr = Pm + i * T, *dpr = dP + i * T;
      float *dsr = dS + i * T;
      double dot = 0.0;
      for (size_t j = 0; j <= i; j++) dot += (double)pr[j] * dpr[j];
      float d = (float)dot;
      for (size_t j = 0; j <= i; j++) dsr[j] = pr[j] * (dpr[j] - d) * scale;
      for (size_t j = i + 1; j < T; j++) dsr[j] = 0.0f;
    }
  }
  /* dq = dS k */
  xp_matmul_batch(ctx, &(xp_gemm_desc){.lin = -1, .role = XP_DGRAD,
                                       .a = {.kind = XP_GRAD, .p = s->hds},
                                       .b = {.kind = XP_INPUT, .p = s->hk},
                                       .m = T, .n = hd, .k = T, .d = s->hdq},
                  nb, tt, th, th);
  /* dk = dS^T q */
  xp_matmul_batch(ctx, &(xp_gemm_desc){.lin = -1, .role = XP_WGRAD,
                                       .a = {.kind = XP_GRAD, .trans = 1, .p = s->hds},
                                       .b = {.kind = XP_INPUT, .p = s->hq},
                                       .m = T, .n = hd, .k = T, .d = s->hdk},
                  nb, tt, th, th);
  if (ctx->failed) return -1;
  if (s->rcos) { /* through the rotation: its transpose */
    rope_apply(s, s->hdq, nb, T, hd, 1);
    rope_apply(s, s->hdk, nb, T, hd, 1);
  }
  if (m->mc.qk_layernorm) { /* through the norms: d(raw q, k) into hdq, hdk */
    size_t rows = nb * T;
    memset(s->hdqr, 0, rows * hd * sizeof(float));
    memset(s->hdkr, 0, rows * hd * sizeof(float));
    xp_norm_backward(m->mc.rmsnorm, s->hdq, s->hqr, P(k->qg), s->qmean, s->qrstd, s->hdqr, G(k->qg), NULL,
                     rows, hd);
    xp_norm_backward(m->mc.rmsnorm, s->hdk, s->hkr, P(k->kg), s->kmean, s->krstd, s->hdkr, G(k->kg), NULL,
                     rows, hd);
    memcpy(s->hdq, s->hdqr, rows * hd * sizeof(float));
    memcpy(s->hdk, s->hdkr, rows * hd * sizeof(float));
  }
#pragma omp parallel for schedule(static)
  for (long bh = 0; bh < nbh; bh++) {
    size_t b = (size_t)bh / NH, h = (size_t)bh % NH, o = (size_t)bh * th;
    for (size_t t = 0; t < T; t++) {
      float *row = dqkv + (b * T + t) * 3 * C + h * hd;
      memcpy(row, s->hdq + o + t * hd, hd * sizeof(float));
      memcpy(row + C, s->hdk + o + t * hd, hd * sizeof(float));
      memcpy(row + 2 * C, s->hdv + o + t * hd, hd * sizeof(float));
    }
  }
  return 0;
}

/* ---- forward ------------------------------------------------------------- */

/* tokens (B x T) -> logits (BT x V), keeping every activation. */
static int forward_logits(xp_model *m, xp_ctx *ctx, const xp_batch *b) {
  if (act_ensure(m, ctx, b)) return -1;
  gpt_state *s = m->act;
  int L = m->mc.n_layer, rms = m->mc.rmsnorm;
  size_t B = b->n, T = (size_t)m->mc.seq_len, C = (size_t)m->mc.d_model, V = (size_t)m->vocab;
  size_t BT = B * T, F = (size_t)s->F, H = (size_t)s->H, stride = (size_t)m->mc.batch * T * C;
  for (size_t i = 0; i < BT; i++)
    if (b->tokens[i] < 0 || b->tokens[i] >= m->vocab) {
      char msg[96];
      snprintf(msg, sizeof msg, "gpt: token %d at %zu is outside the vocabulary (%d)", b->tokens[i], i, m->vocab);
      return xp_fail(ctx, msg);
    }
  s->n_last = B;

  /* embeddings: x[b,t] = wte[token] + wpe[t] */
  const float *wte = P(s->wte), *wpe = PN(s->wpe);
  float *x0 = s->res;
  long nbt = (long)BT;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < nbt; i++) {
    const float *e = wte + (size_t)b->tokens[i] * C;
    if (!wpe) { /* rope: positions enter in attention */
      memcpy(x0 + (size_t)i * C, e, C * sizeof(float));
      continue;
    }
    const float *p = wpe + ((size_t)i % T) * C;
    for (size_t c = 0; c < C; c++) x0[(size_t)i * C + c] = e[c] + p[c];
  }

  /* Each sublayer's residual add (with its projection's bias) runs in one
   * pass with the norm that reads the sum (xp_residual_norm_forward): the
   * block's norm2, the next block's norm1, or the final norm. */
  xp_norm_forward(rms, x0, P(s->blk[0].ln1g), PN(s->blk[0].ln1b), s->act[0].ln1, s->act[0].ln1_mean,
                  s->act[0].ln1_rstd, BT, C);
  for (int l = 0; l < L; l++) {
    const gpt_block_idx *k = &s->blk[l];
    gpt_block_act *a = &s->act[l];
    float *x = s->res + (size_t)(2 * l) * stride, *xa = x + stride, *xm = xa + stride;
    /* attention sublayer: xa = x + proj(attn(norm1(x))), then norm2(xa) */
    /* qkv's bias is added in attention's gather of the heads */
    if (xp_linear_forward(ctx, k->lin[LIN_QKV], a->ln1, P(k->qkvw), NULL, a->qkv, BT, C, 3 * C)) return -1;
    if (attention_forward(m, ctx, l, B, a->qkv, PN(k->qkvb), a->att, a->atty)) return -1;
    if (xp_linear_forward(ctx, k->lin[LIN_PROJ], a->atty, P(k->projw), NULL, s->tmp, BT, C, C)) return -1;
    xp_residual_norm_forward(rms, x, s->tmp, PN(k->projb), xa, P(k->ln2g), PN(k->ln2b), a->ln2, a->ln2_mean,
                             a->ln2_rstd, BT, C);
    /* MLP sublayer: xm = xa + fc2(act(fc(norm2(xa)))), then the next norm of xm */
    if (m->mc.swiglu) {
      if (xp_linear_forward(ctx, k->lin[LIN_FC], a->ln2, P(k->fcw), PN(k->fcb), a->fch, BT, C, F)) return -1;
      xp_swiglu_forward(a->fch, a->fcact, BT, H);
    } else { /* fc's bias added in GELU's pass */
      if (xp_linear_forward(ctx, k->lin[LIN_FC], a->ln2, P(k->fcw), NULL, a->fch, BT, C, F)) return -1;
      xp_bias_gelu_forward(a->fch, PN(k->fcb), a->fcact, a->fcth, BT, H);
    }
    if (xp_linear_forward(ctx, k->lin[LIN_FC2], a->fcact, P(k->fc2w), NULL, s->tmp, BT, H, C)) return -1;
    if (l + 1 < L) {
      const gpt_block_idx *kn = &s->blk[l + 1];
      gpt_block_act *an = &s->act[l + 1];
      xp_residual_norm_forward(rms, xa, s->tmp, PN(k->fc2b), xm, P(kn->ln1g), PN(kn->ln1b), an->ln1,
                               an->ln1_mean, an->ln1_rstd, BT, C);
    } else {
      xp_residual_norm_forward(rms, xa, s->tmp, PN(k->fc2b), xm, P(s->lnfg), PN(s->lnfb), s->lnf, s->lnf_mean,
                               s->lnf_rstd, BT, C);
    }
  }
  return xp_linear_forward(ctx, s->lin_head, s->lnf, P(s->head), PN(s->headb), s->logits, BT, C, V);
}

static int gpt_forward(xp_model *m, xp_ctx *ctx, const xp_batch *b, double *loss) {
  if (forward_logits(m, ctx, b)) return -1;
  gpt_state *s = m->act;
  size_t BT = b->n * (size_t)m->mc.seq_len;
  for (size_t i = 0; i < BT; i++)
    if (b->targets[i] < 0 || b->targets[i] >= m->vocab) return xp_fail(ctx, "gpt: target outside the vocabulary");
  *loss = xp_softmax_xent_forward(s->logits, b->targets, s->probs, BT, (size_t)m->vocab);
  if (m->mc.z_loss > 0 || ctx->collect_outliers) {
    const double z = xp_lse_forward(s->logits, s->lse, BT, (size_t)m->vocab);
    if (m->mc.z_loss > 0) *loss += m->mc.z_loss * z;
  }
  return 0;
}

static int gpt_predict(xp_model *m, xp_ctx *ctx, const xp_batch *b, float *out) {
  if (forward_logits(m, ctx, b)) return -1;
  gpt_state *s = m->act;
  memcpy(out, s->logits, b->n * (size_t)m->mc.seq_len * (size_t)m->vocab * sizeof(float));
  return 0;
}

/* ---- backward ------------------------------------------------------------ */

/* Gradients of the last forward's mean loss into m->grads (every tensor
 * overwritten).  dres carries d loss / d (residual stream), walking back. */
static int gpt_backward(xp_model *m, xp_ctx *ctx, const xp_batch *b) {
  gpt_state *s = m->act;
  if (!s->cap || s->n_last != b->n) return xp_fail(ctx, "gpt: backward without a matching forward");
  int L = m->mc.n_layer, rms = m->mc.rmsnorm;
  size_t B = b->n, T = (size_t)m->mc.seq_len, C = (size_t)m->mc.d_model, V = (size_t)m->vocab;
  size_t BT = B * T, F = (size_t)s->F, H = (size_t)s->H, stride = (size_t)m->mc.batch * T * C;

  /* head: dlogits -> lm_head -> final norm (into dres, zeroed first) */
  xp_softmax_xent_backward(s->probs, b->targets, s->dlogits, BT, V);
  if (m->mc.z_loss > 0) xp_zloss_backward(s->probs, s->lse, m->mc.z_loss, s->dlogits, BT, V);
  if (xp_linear_backward(ctx, s->lin_head, s->dlogits, s->lnf, P(s->head), G(s->head), GN(s->headb),
                         s->dln, NULL, BT, C, V))
    return -1;
  memset(s->dres, 0, BT * C * sizeof(float));
  xp_norm_backward(rms, s->dln, s->res + (size_t)(2 * L) * stride, P(s->lnfg), s->lnf_mean, s->lnf_rstd,
                   s->dres, G(s->lnfg), GN(s->lnfb), BT, C);

  for (int l = L - 1; l >= 0; l--) {
    const gpt_block_idx *k = &s->blk[l];
    gpt_block_act *a = &s->act[l];
    float *x = s->res + (size_t)(2 * l) * stride, *xa = x + stride;
    /* MLP sublayer: dres flows through the residual unchanged, plus the branch */
    if (xp_linear_backward(ctx, k->lin[LIN_FC2], s->dres, a->fcact, P(k->fc2w), G(k->fc2w), GN(k->fc2b),
                           s->dfcact, NULL, BT, H, C))
      return -1;
    if (m->mc.swiglu) xp_swiglu_backward(s->dfcact, a->fch, s->dfch, BT, H);
    else xp_gelu_backward(s->dfcact, a->fch, a->fcth, s->dfch, BT * H);
    if (xp_linear_backward(ctx, k->lin[LIN_FC], s->dfch, a->ln2, P(k->fcw), G(k->fcw), GN(k->fcb), s->dln,
                           NULL, BT, C, F))
      return -1;
    xp_norm_backward(rms, s->dln, xa, P(k->ln2g), a->ln2_mean, a->ln2_rstd, s->dres, G(k->ln2g),
                     GN(k->ln2b), BT, C);
    /* attention sublayer */
    if (xp_linear_backward(ctx, k->lin[LIN_PROJ], s->dres, a->atty, P(k->projw), G(k->projw), GN(k->projb),
                           s->datty, NULL, BT, C, C))
      return -1;
    if (attention_backward(m, ctx, l, B, a->qkv, a->att, s->datty, s->dqkv)) return -1;
    if (xp_linear_backward(ctx, k->lin[LIN_QKV], s->dqkv, a->ln1, P(k->qkvw), G(k->qkvw), GN(k->qkvb), s->dln,
                           NULL, BT, C, 3 * C))
      return -1;
    xp_norm_backward(rms, s->dln, x, P(k->ln1g), a->ln1_mean, a->ln1_rstd, s->dres, G(k->ln1g),
                     GN(k->ln1b), BT, C);
  }

  /* embeddings: wte scatter-add over tokens in token order (parallel over
   * columns), onto lm_head's wgrad when tied; wpe sums over sequences in
   * order (parallel over (t, c)). */
  float *dwte = G(s->wte), *dwpe = GN(s->wpe);
  if (!m->mc.tie) memset(dwte, 0, m->tensors[s->wte].n * sizeof(float));
  long nc = (long)C, ntc = (long)(T * C);
#pragma omp parallel for schedule(static)
  for (long c = 0; c < nc; c++)
    for (size_t i = 0; i < BT; i++) dwte[(size_t)b->tokens[i] * C + (size_t)c] += s->dres[i * C + (size_t)c];
  if (!dwpe) return 0;
#pragma omp parallel for schedule(static)
  for (long tc = 0; tc < ntc; tc++) {
    float acc = 0.0f;
    for (size_t bb = 0; bb < B; bb++) acc += s->dres[bb * T * C + (size_t)tc];
    dwpe[tc] = acc;
  }
  return 0;
}

/* Tensor t (and its AdamW moments) times 2^e: a gradient then scales by
 * 2^-e, so m by 2^-e and v by 2^-2e, which leaves Adam's m/sqrt(v) as it
 * was.  ldexpf is exact unless a value leaves float's range. */
static void scale_tensor(xp_model *m, xp_optim *o, int t, int e) {
  if (t < 0) return;
  const size_t off = m->tensors[t].off, n = m->tensors[t].n;
  for (size_t i = 0; i < n; i++) {
    m->params[off + i] = ldexpf(m->params[off + i], e);
    if (o && o->m) {
      o->m[off + i] = ldexpf(o->m[off + i], -e);
      o->v[off + i] = ldexpf(o->v[off + i], -2 * e);
    }
  }
}

/* Each norm feeds one linear layer's weight: LayerNorm (gain, bias) x 2^s
 * makes its output x 2^s, the weight x 2^-s gives the same products (the
 * bias after the product is unchanged); the model computes the same
 * function, while an FP8 input of that layer sees values 2^s larger. */
static void gpt_range_shift(xp_model *m, xp_optim *o, int sh) {
  const gpt_state *s = m->act;
  for (int i = 0; i < m->mc.n_layer; i++) {
    const gpt_block_idx *k = &s->blk[i];
    const int pairs[2][3] = {{k->ln1g, k->ln1b, k->qkvw}, {k->ln2g, k->ln2b, k->fcw}};
    for (int j = 0; j < 2; j++) {
      scale_tensor(m, o, pairs[j][0], sh);
      scale_tensor(m, o, pairs[j][1], sh);
      scale_tensor(m, o, pairs[j][2], -sh);
    }
  }
  scale_tensor(m, o, s->lnfg, sh);
  scale_tensor(m, o, s->lnfb, sh);
  scale_tensor(m, o, s->headw, -sh);
}

/* ---- outlier metrics -------------------------------------------------------- */

/* The columns: the model's, then per block (SwiGLU adds the gate/up cosines);
 * csv NULL: only count them. */
static const char *const model_cols[] = {"lse_mean", "lse_max", "head_in_amax", "head_in_rms"};
static const char *const block_cols[] = {"logit_max", "kurtosis",  "qkv_in_amax", "qkv_in_rms",
                                         "proj_in_amax", "proj_in_rms", "fc_in_amax", "fc_in_rms",
                                         "fc2_in_amax", "fc2_in_rms", "gate_up_cos_max", "gate_up_cos_mean"};
#define N_MODEL_COLS 4
#define N_BLOCK_COLS(swiglu) ((swiglu) ? 12 : 10)

static int gpt_outliers_header(const xp_model *m, FILE *csv) {
  int n = 0;
  for (int i = 0; i < N_MODEL_COLS; i++, n++)
    if (csv) fprintf(csv, ",%s", model_cols[i]);
  for (int l = 0; l < m->mc.n_layer; l++)
    for (int i = 0; i < N_BLOCK_COLS(m->mc.swiglu); i++, n++)
      if (csv) fprintf(csv, ",h%d.%s", l, block_cols[i]);
  return n;
}

/* From the last forward (run with ctx->collect_outliers) and the weights it
 * used: per block the max |attention logit|, the kurtosis of the residual
 * stream the block writes, amax and rms of each linear layer's input, and
 * (SwiGLU) |cos| of fc's gate and up rows; the logits' logsumexp and
 * lm_head's input. */
static void gpt_outliers(xp_model *m, double *row) {
  gpt_state *s = m->act;
  size_t T = (size_t)m->mc.seq_len, C = (size_t)m->mc.d_model, BT = s->n_last * T;
  size_t H = (size_t)s->H, stride = (size_t)m->mc.batch * T * C;
  double *r = row;
  xp_mean_max(s->lse, BT, &r[0], &r[1]);
  xp_amax_rms(s->lnf, BT * C, &r[2], &r[3]);
  r += N_MODEL_COLS;
  for (int l = 0; l < m->mc.n_layer; l++, r += N_BLOCK_COLS(m->mc.swiglu)) {
    const gpt_block_act *a = &s->act[l];
    r[0] = s->lmax[l];
    r[1] = xp_channel_kurtosis(s->res + (size_t)(2 * l + 2) * stride, BT, C, s->kscr);
    xp_amax_rms(a->ln1, BT * C, &r[2], &r[3]);
    xp_amax_rms(a->atty, BT * C, &r[4], &r[5]);
    xp_amax_rms(a->ln2, BT * C, &r[6], &r[7]);
    xp_amax_rms(a->fcact, BT * H, &r[8], &r[9]);
    if (m->mc.swiglu) xp_pair_cosine(P(s->blk[l].fcw), H, C, &r[10], &r[11]);
  }
}

const xp_model_ops xp_gpt_model = {
  .name = "gpt",
  .kind = XP_MODEL_GPT,
  .help = "default",
  .caps = XP_CAP_TOKENS | XP_CAP_EMBEDDING | XP_CAP_HEADS | XP_CAP_NORMS | XP_CAP_OUTLIERS,
  .init = gpt_init,
  .free = gpt_free,
  .forward = gpt_forward,
  .backward = gpt_backward,
  .predict = gpt_predict,
  .range_shift = gpt_range_shift,
  .outliers_header = gpt_outliers_header,
  .outliers = gpt_outliers,
};
