/* test_xp_grad.c: the gradient check of the training engine's models.
 *
 * For each model (GPT LayerNorm+GELU, GPT RMSNorm+SwiGLU, with qk-norm and
 * z-loss, nanoGPT's (no biases, tied lm_head), TinyLlama's (RMSNorm, SwiGLU,
 * no biases, RoPE), RoPE after qk-norm; MLP regression, MLP classification
 * with RMSNorm, and with LayerNorm and no biases) the engine runs forward and backward with
 * every GEMM in fp32 (XP_MODE_FP32).  An independent fp64 forward, written
 * here from the architecture's description (not from the engine's code),
 * computes the loss from the same float parameters; central finite
 * differences of it on a seeded sample of every tensor's elements must match
 * the engine's analytic gradients, and the engine's loss must match the fp64
 * loss.  Forward + backward with 1, 2 and 3 OpenMP threads must give the same
 * loss and gradient bits, and xp_model_predict the outputs the loss came
 * from.  The GPT's outlier metrics (outliers_every) of that forward must
 * match the same quantities taken from the fp64 forward, computed here from
 * their definitions in docs/training.md, and be the same bits at 1, 2 and 3
 * threads. */
#include "experiments/xp.h"
#include "testutil.h"
#include <math.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define SAMPLES 24      /* parameters checked per tensor */
#define GRAD_TOL 2e-3   /* relative, with a floor of 1e-3 x the tensor's largest |fd| */
#define LOSS_TOL 1e-5   /* engine loss vs fp64 loss, relative */
#define OBS_TOL 1e-5    /* engine (fp32 activations) vs fp64 outlier metrics, relative */

/* ---- the fp64 reference ---------------------------------------------------- */

typedef struct ref {
  const xp_model *m;            /* names, offsets, shapes */
  const double *p;              /* the parameters in double */
  double *obs;                  /* not NULL: the outlier metrics, in outliers.csv's column order */
} ref;

static const double *R(const ref *r, const char *fmt, int i) {
  char name[32];
  snprintf(name, sizeof name, fmt, i);
  for (int t = 0; t < r->m->ntensors; t++)
    if (!strcmp(r->m->tensors[t].name, name)) return r->p + r->m->tensors[t].off;
  return NULL; /* absent (RMSNorm has no norm bias) */
}

/* y (T x out) = x (T x in) W^T + b, W out x in */
static void d_linear(const double *x, const double *w, const double *b, double *y, int T, int in, int out) {
  for (int t = 0; t < T; t++)
    for (int o = 0; o < out; o++) {
      double s = b ? b[o] : 0.0;
      for (int i = 0; i < in; i++) s += x[t * in + i] * w[o * in + i];
      y[t * out + o] = s;
    }
}

/* LayerNorm (center 1; b NULL: no bias) or RMSNorm (center 0, b NULL), eps 1e-5 */
static void d_norm(const double *x, const double *g, const double *b, int center, double *y, int T, int C) {
  for (int t = 0; t < T; t++) {
    const double *xr = x + t * C;
    double mu = 0.0, v = 0.0;
    if (center) {
      for (int c = 0; c < C; c++) mu += xr[c];
      mu /= C;
    }
    for (int c = 0; c < C; c++) v += (xr[c] - mu) * (xr[c] - mu);
    double r = 1.0 / sqrt(v / C + 1e-5);
    for (int c = 0; c < C; c++) y[t * C + c] = (xr[c] - mu) * r * g[c] + (b ? b[c] : 0.0);
  }
}

/* RoPE at position t: pairs (i, i + hd/2) rotated by t 10000^(-2i/hd) */
static void d_rope(const double *x, double *y, int t, int hd) {
  for (int i = 0; i < hd / 2; i++) {
    const double a = t * pow(10000.0, -2.0 * i / hd), c = cos(a), s = sin(a);
    y[i] = x[i] * c - x[i + hd / 2] * s;
    y[i + hd / 2] = x[i + hd / 2] * c + x[i] * s;
  }
}

static double d_gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static double d_silu(double x) { return x / (1.0 + exp(-x)); }

/* max |x| and root mean square of n values */
static void d_amax_rms(const double *x, int n, double *out) {
  double mx = 0.0, ss = 0.0;
  for (int i = 0; i < n; i++) mx = fmax(mx, fabs(x[i])), ss += x[i] * x[i];
  out[0] = mx, out[1] = sqrt(ss / n);
}

/* kurtosis of the per-channel mean squares of x (T x C): E[s^2] / E[s]^2 */
static double d_kurtosis(const double *x, int T, int C) {
  double e1 = 0.0, e2 = 0.0;
  for (int c = 0; c < C; c++) {
    double sc = 0.0;
    for (int t = 0; t < T; t++) sc += x[t * C + c] * x[t * C + c] / T;
    e1 += sc / C, e2 += sc * sc / C;
  }
  return e2 / (e1 * e1);
}

/* mean cross-entropy of logits (T x V) against targets, plus z * mean
 * logsumexp^2 (PaLM's z-loss; z 0: none) */
static double d_xent_z(const double *logits, const int *tg, int T, int V, double z) {
  double loss = 0.0;
  for (int t = 0; t < T; t++) {
    const double *l = logits + t * V;
    double mx = l[0], s = 0.0;
    for (int v = 1; v < V; v++) mx = fmax(mx, l[v]);
    for (int v = 0; v < V; v++) s += exp(l[v] - mx);
    const double lse = mx + log(s);
    loss += lse - l[tg[t]] + z * lse * lse;
  }
  return loss / T;
}
static double d_xent(const double *logits, const int *tg, int T, int V) { return d_xent_z(logits, tg, T, V, 0.0); }

static double ref_gpt(const ref *r, const xp_batch *bt) {
  const xp_model_config *mc = &r->m->mc;
  int L = mc->n_layer, C = mc->d_model, NH = mc->n_head, T = mc->seq_len, V = r->m->vocab;
  int BT = (int)bt->n * T, hd = C / NH, rms = mc->rmsnorm;
  int hs = (int)ceil(8.0 * C / 3.0);
  hs = (hs + 7) / 8 * 8;
  int F = mc->swiglu ? 2 * hs : 4 * C, H = mc->swiglu ? hs : 4 * C;
  double *x = malloc(sizeof(double) * BT * C), *ln = malloc(sizeof(double) * BT * C);
  double *qkv = malloc(sizeof(double) * BT * 3 * C), *o = malloc(sizeof(double) * BT * C);
  double *tmp = malloc(sizeof(double) * BT * C), *f = malloc(sizeof(double) * BT * F);
  double *a = malloc(sizeof(double) * BT * H), *logits = malloc(sizeof(double) * BT * V);
  double *pr = malloc(sizeof(double) * T), qn[64], kn[64], qr[64], kr[64], zero[64] = {0};
  const double *wte = R(r, "wte", 0), *wpe = R(r, "wpe", 0); /* wpe NULL: pos rope */
  for (int i = 0; i < BT; i++)
    for (int c = 0; c < C; c++) x[i * C + c] = wte[bt->tokens[i] * C + c] + (wpe ? wpe[(i % T) * C + c] : 0.0);
  const int nb = mc->swiglu ? 12 : 10;
  for (int l = 0; l < L; l++) {
    double *ob = r->obs ? r->obs + 4 + l * nb : NULL;
    if (ob) ob[0] = 0.0;
    d_norm(x, R(r, "h%d.ln1.g", l), R(r, "h%d.ln1.b", l), !rms, ln, BT, C);
    if (ob) d_amax_rms(ln, BT * C, ob + 2);
    d_linear(ln, R(r, "h%d.qkv.w", l), R(r, "h%d.qkv.b", l), qkv, BT, C, 3 * C);
    for (int b = 0; b < (int)bt->n; b++)
      for (int h = 0; h < NH; h++)
        for (int i = 0; i < T; i++) {
          const double *q = qkv + (b * T + i) * 3 * C + h * hd;
          double mx = -INFINITY, s = 0.0;
          if (mc->qk_layernorm) { /* the model's norm over the head's hd values, gains (shared by heads) only */
            d_norm(q, R(r, "h%d.qln.g", l), rms ? NULL : zero, !rms, qn, 1, hd);
            q = qn;
          }
          if (mc->rope) { /* after the qk norm */
            d_rope(q, qr, i, hd);
            q = qr;
          }
          for (int j = 0; j <= i; j++) {
            const double *k = qkv + (b * T + j) * 3 * C + C + h * hd;
            if (mc->qk_layernorm) {
              d_norm(k, R(r, "h%d.kln.g", l), rms ? NULL : zero, !rms, kn, 1, hd);
              k = kn;
            }
            if (mc->rope) {
              d_rope(k, kr, j, hd);
              k = kr;
            }
            double dot = 0.0;
            for (int e = 0; e < hd; e++) dot += q[e] * k[e];
            pr[j] = dot / sqrt((double)hd);
            mx = fmax(mx, pr[j]);
            if (ob) ob[0] = fmax(ob[0], fabs(pr[j]));
          }
          for (int j = 0; j <= i; j++) s += (pr[j] = exp(pr[j] - mx));
          for (int e = 0; e < hd; e++) {
            double acc = 0.0;
            for (int j = 0; j <= i; j++) acc += pr[j] / s * qkv[(b * T + j) * 3 * C + 2 * C + h * hd + e];
            o[(b * T + i) * C + h * hd + e] = acc;
          }
        }
    if (ob) d_amax_rms(o, BT * C, ob + 4);
    d_linear(o, R(r, "h%d.proj.w", l), R(r, "h%d.proj.b", l), tmp, BT, C, C);
    for (int i = 0; i < BT * C; i++) x[i] += tmp[i];
    d_norm(x, R(r, "h%d.ln2.g", l), R(r, "h%d.ln2.b", l), !rms, ln, BT, C);
    if (ob) d_amax_rms(ln, BT * C, ob + 6);
    d_linear(ln, R(r, "h%d.fc.w", l), R(r, "h%d.fc.b", l), f, BT, C, F);
    for (int i = 0; i < BT; i++)
      for (int j = 0; j < H; j++)
        a[i * H + j] = mc->swiglu ? d_silu(f[i * F + j]) * f[i * F + hs + j] : d_gelu(f[i * F + j]);
    d_linear(a, R(r, "h%d.fc2.w", l), R(r, "h%d.fc2.b", l), tmp, BT, H, C);
    for (int i = 0; i < BT * C; i++) x[i] += tmp[i];
    if (!ob) continue;
    d_amax_rms(a, BT * H, ob + 8);
    ob[1] = d_kurtosis(x, BT, C);
    if (!mc->swiglu) continue;
    const double *w = R(r, "h%d.fc.w", l); /* |cos| of gate row j and up row hs + j */
    ob[10] = ob[11] = 0.0;
    for (int j = 0; j < hs; j++) {
      double ab = 0.0, aa = 0.0, bb = 0.0;
      for (int c = 0; c < C; c++)
        ab += w[j * C + c] * w[(hs + j) * C + c], aa += w[j * C + c] * w[j * C + c], bb += w[(hs + j) * C + c] * w[(hs + j) * C + c];
      ob[10] = fmax(ob[10], fabs(ab) / sqrt(aa * bb));
      ob[11] += fabs(ab) / sqrt(aa * bb) / hs;
    }
  }
  d_norm(x, R(r, "lnf.g", 0), R(r, "lnf.b", 0), !rms, ln, BT, C);
  d_linear(ln, mc->tie ? wte : R(r, "lm_head.w", 0), R(r, "lm_head.b", 0), logits, BT, C, V); /* tie: wte */
  if (r->obs) { /* logsumexp of each row: mean and max; lm_head's input */
    r->obs[0] = 0.0, r->obs[1] = -INFINITY;
    for (int t = 0; t < BT; t++) {
      double s = 0.0;
      for (int v = 0; v < V; v++) s += exp(logits[t * V + v]);
      r->obs[0] += log(s) / BT, r->obs[1] = fmax(r->obs[1], log(s));
    }
    d_amax_rms(ln, BT * C, r->obs + 2);
  }
  double loss = d_xent_z(logits, bt->targets, BT, V, mc->z_loss);
  free(x), free(ln), free(qkv), free(o), free(tmp), free(f), free(a), free(logits), free(pr);
  return loss;
}

static double ref_mlp(const ref *r, const xp_batch *bt) {
  const xp_model_config *mc = &r->m->mc;
  int N = (int)bt->n, I = mc->in_dim, D = mc->hidden, O = mc->out_dim, rms = mc->rmsnorm;
  double *x = malloc(sizeof(double) * N * I), *h = malloc(sizeof(double) * N * D);
  double *ln = malloc(sizeof(double) * N * D), *f = malloc(sizeof(double) * N * D);
  double *out = malloc(sizeof(double) * N * O);
  for (int i = 0; i < N * I; i++) x[i] = bt->x[i];
  d_linear(x, R(r, "inp.w", 0), R(r, "inp.b", 0), h, N, I, D);
  for (int l = 0; l < mc->depth; l++) {
    d_norm(h, R(r, "b%d.ln.g", l), R(r, "b%d.ln.b", l), !rms, ln, N, D);
    d_linear(ln, R(r, "b%d.fc.w", l), R(r, "b%d.fc.b", l), f, N, D, D);
    for (int i = 0; i < N * D; i++) h[i] += d_gelu(f[i]);
  }
  d_norm(h, R(r, "lnf.g", 0), R(r, "lnf.b", 0), !rms, ln, N, D);
  d_linear(ln, R(r, "head.w", 0), R(r, "head.b", 0), out, N, D, O);
  double loss = 0.0;
  if (mc->kind == XP_MODEL_MLP_CLASS) {
    loss = d_xent(out, bt->labels, N, O);
  } else {
    for (int i = 0; i < N * O; i++) loss += (out[i] - bt->y[i]) * (out[i] - bt->y[i]);
    loss /= N * O;
  }
  free(x), free(h), free(ln), free(f), free(out);
  return loss;
}

static double ref_loss(const xp_model *m, const double *p, const xp_batch *b) {
  ref r = {m, p, NULL};
  return m->mc.kind == XP_MODEL_GPT ? ref_gpt(&r, b) : ref_mlp(&r, b);
}

/* ---- the check ------------------------------------------------------------- */

static double unif(uint64_t *st) { return (double)(tu_next(st) >> 11) * 0x1p-53 * 2.0 - 1.0; } /* [-1, 1) */

static void set_threads(int n) {
#ifdef _OPENMP
  omp_set_num_threads(n);
#else
  (void)n;
#endif
}

static int run_step(xp_model *m, xp_ctx *ctx, const xp_batch *b, double *loss) {
  if (xp_model_forward(m, ctx, b, loss) || xp_model_backward(m, ctx, b)) {
    printf("engine failed: %s\n", ctx->err);
    return -1;
  }
  return 0;
}

static void check_case(const char *label, const xp_model_config *mc, int vocab, double wscale, uint64_t seed) {
  uint64_t st = seed ^ 0x5eed;
  char err[EXMY_ERRLEN];
  xp_model m;
  if (xp_model_init(&m, mc, vocab, seed, err, sizeof err)) {
    CHECK(0, "%s: init: %s", label, err);
    return;
  }
  /* Bigger-than-default parameters so gradients are not all near zero:
   * matrices scaled, gains 1 +- 0.3, biases +- 0.2. */
  for (int t = 0; t < m.ntensors; t++) {
    const xp_param *p = &m.tensors[t];
    float *w = m.params + p->off;
    int gain = strlen(p->name) > 2 && !strcmp(p->name + strlen(p->name) - 2, ".g");
    for (size_t i = 0; i < p->n; i++)
      w[i] = p->is_matrix ? (float)(w[i] * wscale) : gain ? (float)(1.0 + 0.3 * unif(&st)) : (float)(0.2 * unif(&st));
  }
  /* the batch */
  size_t n = (size_t)mc->batch, rows = mc->kind == XP_MODEL_GPT ? n * (size_t)mc->seq_len : n;
  int *tok = malloc(rows * sizeof *tok), *tgt = malloc(rows * sizeof *tgt);
  float *x = malloc(n * (size_t)(mc->in_dim + 1) * sizeof *x), *y = malloc(n * (size_t)(mc->out_dim + 1) * sizeof *y);
  xp_batch b = {.n = n, .tokens = tok, .targets = tgt, .x = x, .y = y, .labels = tgt};
  if (mc->kind == XP_MODEL_GPT)
    for (size_t i = 0; i < rows; i++) tok[i] = (int)(tu_next(&st) % (uint64_t)vocab), tgt[i] = (int)(tu_next(&st) % (uint64_t)vocab);
  else {
    for (size_t i = 0; i < n * (size_t)mc->in_dim; i++) x[i] = (float)(1.5 * unif(&st));
    for (size_t i = 0; i < n * (size_t)mc->out_dim; i++) y[i] = (float)unif(&st);
    for (size_t i = 0; i < n; i++) tgt[i] = (int)(tu_next(&st) % (uint64_t)mc->out_dim);
  }

  xp_config cfg;
  xp_config_default(&cfg);
  cfg.model = *mc;
  xp_ctx ctx;
  if (xp_ctx_init(&ctx, &cfg, &m, err, sizeof err)) {
    CHECK(0, "%s: ctx: %s", label, err);
    xp_model_free(&m);
    return;
  }
  ctx.mode = XP_MODE_FP32;

  /* engine: loss and gradients (gpt: and the outlier metrics) */
  set_threads(2);
  double loss, orow[64], orow1[64];
  const int gpt_model = mc->kind == XP_MODEL_GPT, ncol = gpt_model ? xp_model_outliers_header(&m, NULL) : 0;
  ctx.collect_outliers = gpt_model;
  CHECK(run_step(&m, &ctx, &b, &loss) == 0, "%s: engine step", label);
  if (gpt_model) xp_model_outliers(&m, orow);
  double *p = malloc(m.nparams * sizeof *p);
  for (size_t i = 0; i < m.nparams; i++) p[i] = m.params[i];
  if (gpt_model) { /* outlier metrics: the engine's fp32 forward against the fp64 one */
    double obs[64], worst_o = 0.0;
    ref ro = {&m, p, obs};
    ref_gpt(&ro, &b);
    for (int i = 0; i < ncol && i < 64; i++) {
      double rel = fabs(orow[i] - obs[i]) / fmax(fabs(obs[i]), 1e-6);
      worst_o = fmax(worst_o, rel);
      CHECK(rel <= OBS_TOL, "%s: outlier metric %d: engine %.17g (%a) fp64 %.17g: rel %.3g", label, i, orow[i], orow[i],
            obs[i], rel);
    }
    printf("%s: %d outlier metrics, worst rel err against fp64 %.2e\n", label, ncol, worst_o);
  }
  double rl = ref_loss(&m, p, &b);
  double lerr = fabs(loss - rl) / fabs(rl);
  CHECK(lerr <= LOSS_TOL, "%s: loss %.17g (%a) vs fp64 %.17g (%a): rel %.3g", label, loss, loss, rl, rl, lerr);
  printf("%s: %zu params, loss %.9f (fp64 %.9f, rel err %.2g)\n", label, m.nparams, loss, rl, lerr);

  /* finite differences on a sample of every tensor */
  double worst = 0.0;
  const char *worst_name = "";
  for (int t = 0; t < m.ntensors; t++) {
    const xp_param *pt = &m.tensors[t];
    size_t ns = pt->n < SAMPLES ? pt->n : SAMPLES, idx[SAMPLES];
    double fd[SAMPLES], scale = 1e-2, maxfd = 0.0, wrel = 0.0;
    for (size_t i = 0; i < pt->n; i++) scale = fmax(scale, fabs(p[pt->off + i]));
    double h = 1e-5 * scale;
    for (size_t s = 0; s < ns; s++) {
      idx[s] = pt->n <= SAMPLES ? s : (size_t)(tu_next(&st) % pt->n);
      double *q = &p[pt->off + idx[s]], q0 = *q;
      *q = q0 + h;
      double lp = ref_loss(&m, p, &b);
      *q = q0 - h;
      double lm = ref_loss(&m, p, &b);
      *q = q0;
      fd[s] = (lp - lm) / (2 * h);
      maxfd = fmax(maxfd, fabs(fd[s]));
    }
    for (size_t s = 0; s < ns; s++) {
      double g = m.grads[pt->off + idx[s]], den = fabs(fd[s]) + 1e-3 * maxfd + 1e-12;
      double rel = fabs(g - fd[s]) / den;
      wrel = fmax(wrel, rel);
      CHECK(rel <= GRAD_TOL, "%s: %s[%zu]: engine %a (%.9g) fd %a (%.9g), rel %.3g", label, pt->name, idx[s],
            g, g, fd[s], fd[s], rel);
    }
    printf("  %-12s %5zu checked %2zu  max|g| %.3e  worst rel err %.2e\n", pt->name, pt->n, ns, maxfd, wrel);
    if (wrel > worst) worst = wrel, worst_name = pt->name;
  }
  printf("%s: worst gradient rel err %.2e (%s)\n", label, worst, worst_name);

  /* determinism: 1, 2 and 3 threads give the same bits */
  float *g1 = malloc(m.nparams * sizeof *g1);
  double l1 = 0.0;
  set_threads(1);
  if (run_step(&m, &ctx, &b, &l1) == 0) memcpy(g1, m.grads, m.nparams * sizeof *g1);
  if (gpt_model) xp_model_outliers(&m, orow1);
  for (int i = 0; i < ncol; i++)
    CHECK(tu_bits64(orow1[i]) == tu_bits64(orow[i]), "%s: outlier metric %d with 1 thread %a vs 2 threads %a", label, i,
          orow1[i], orow[i]);
  CHECK(tu_bits64(l1) == tu_bits64(loss), "%s: loss with 1 thread %a vs 2 threads %a", label, l1, loss);
  for (int nt = 2; nt <= 3; nt++) {
    double l2 = 0.0;
    set_threads(nt);
    memset(m.grads, 0xff, m.nparams * sizeof *m.grads); /* backward must overwrite every gradient */
    if (run_step(&m, &ctx, &b, &l2)) CHECK(0, "%s: engine step", label);
    CHECK(tu_bits64(l1) == tu_bits64(l2), "%s: loss with 1 thread %a vs %d threads %a", label, l1, nt, l2);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < m.nparams; i++)
      if (tu_bits32(g1[i]) != tu_bits32(m.grads[i]) && !diff++) first = i;
    CHECK(diff == 0, "%s: %zu gradients differ between 1 and %d threads (first: %zu, %a vs %a)", label, diff, nt,
          first, g1[first], m.grads[first]);
    if (gpt_model) xp_model_outliers(&m, orow);
    for (int i = 0; i < ncol; i++)
      CHECK(tu_bits64(orow1[i]) == tu_bits64(orow[i]), "%s: outlier metric %d with 1 thread %a vs %d threads %a", label,
            i, orow1[i], nt, orow[i]);
  }
  set_threads(2);
  ctx.collect_outliers = 0;

  /* predict: the outputs the loss came from, in the documented layout */
  size_t nout = rows * (size_t)(mc->kind == XP_MODEL_GPT ? vocab : mc->out_dim);
  float *out = malloc(nout * sizeof *out);
  double *od = malloc(nout * sizeof *od), pl = NAN;
  if (xp_model_predict(&m, &ctx, &b, out) == 0) {
    for (size_t i = 0; i < nout; i++) od[i] = out[i];
    if (mc->kind == XP_MODEL_MLP) {
      pl = 0.0;
      for (size_t i = 0; i < nout; i++) pl += (od[i] - y[i]) * (od[i] - y[i]);
      pl /= (double)nout;
    } else {
      pl = d_xent_z(od, tgt, (int)rows, (int)(nout / rows), mc->z_loss);
    }
  }
  CHECK(fabs(pl - loss) <= 1e-6 * fabs(loss), "%s: loss of predict's outputs %.17g vs forward %.17g", label, pl,
        loss);
  free(out), free(od);

  /* a smaller batch than allocated (the first sequence or example) */
  xp_batch b1 = b;
  b1.n = 1;
  double ls = NAN, rs = ref_loss(&m, p, &b1);
  CHECK(run_step(&m, &ctx, &b1, &ls) == 0 && fabs(ls - rs) <= LOSS_TOL * fabs(rs),
        "%s: batch of 1: loss %.17g vs fp64 %.17g", label, ls, rs);

  free(g1), free(p), free(tok), free(tgt), free(x), free(y);
  xp_ctx_free(&ctx);
  xp_model_free(&m);
}

int main(void) {
  uint64_t seed = tu_seed(20240611);
  clock_t t0 = clock();
  xp_model_config gpt = {.kind = XP_MODEL_GPT, .n_layer = 2, .d_model = 16, .n_head = 2, .seq_len = 8, .batch = 2};
  check_case("gpt layernorm+gelu", &gpt, 11, 5.0, seed);
  gpt.rmsnorm = 1, gpt.swiglu = 1;
  check_case("gpt rmsnorm+swiglu", &gpt, 11, 5.0, seed + 1);
  /* the controls of the outliers study: qk-norm (either norm) and z-loss
   * (a large coefficient so its gradient term is not lost in the tolerance) */
  gpt.qk_layernorm = 1, gpt.z_loss = 0.05;
  check_case("gpt rmsnorm+swiglu qk-norm z-loss", &gpt, 11, 5.0, seed + 4);
  gpt.rmsnorm = 0, gpt.swiglu = 0;
  check_case("gpt layernorm+gelu qk-norm z-loss", &gpt, 11, 5.0, seed + 5);
  /* nanoGPT's model: no biases (linear layers, LayerNorms), lm_head tied to wte */
  gpt.qk_layernorm = 0, gpt.z_loss = 0, gpt.no_bias = 1, gpt.tie = 1;
  check_case("gpt nanogpt: layernorm+gelu bias=0 tie", &gpt, 11, 5.0, seed + 6);
  /* TinyLlama's: RMSNorm, SwiGLU, no biases, RoPE, untied */
  gpt.rmsnorm = 1, gpt.swiglu = 1, gpt.tie = 0, gpt.rope = 1;
  check_case("gpt tinyllama: rmsnorm+swiglu bias=0 rope", &gpt, 11, 5.0, seed + 7);
  /* RoPE after LayerNorm's qk-norm, with biases and tying */
  gpt.rmsnorm = 0, gpt.swiglu = 0, gpt.no_bias = 0, gpt.tie = 1, gpt.qk_layernorm = 1;
  check_case("gpt layernorm+gelu qk-norm rope tie", &gpt, 11, 5.0, seed + 8);
  gpt.qk_layernorm = 0, gpt.rmsnorm = 0, gpt.swiglu = 0, gpt.tie = 0, gpt.rope = 0;
  xp_model_config mlp = {.kind = XP_MODEL_MLP, .in_dim = 6, .hidden = 12, .depth = 2, .out_dim = 4, .batch = 5};
  check_case("mlp regression", &mlp, 0, 1.5, seed + 2);
  mlp.kind = XP_MODEL_MLP_CLASS, mlp.out_dim = 5, mlp.rmsnorm = 1;
  check_case("mlp-class rmsnorm", &mlp, 0, 1.5, seed + 3);
  mlp.rmsnorm = 0, mlp.no_bias = 1;
  check_case("mlp-class layernorm bias=0", &mlp, 0, 1.5, seed + 9);
  printf("cpu time %.2f s\n", (double)(clock() - t0) / CLOCKS_PER_SEC);
  return tu_finish("test_xp_grad");
}
