/* layers.c: the models' building blocks (layers.h): linear layers through
 * xp_matmul, norms, activations, losses.  It calls no model.
 *
 * Determinism: every parallel loop owns its outputs (a row, or a channel of
 * a reduction over rows) and sums in index order, in double where a sum runs
 * over many terms.  Reductions over tokens (bias and gain gradients) run in
 * parallel over channels and sequentially over tokens. */
#include "layers.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- linear ---------------------------------------------------------------- */

/* x (T x in) . W^T (in x out) + bias -> y (T x out) */
int xp_linear_forward(xp_ctx *ctx, int lin, const float *x, const float *w, const float *bias,
                      float *y, size_t T, size_t in, size_t out) {
  xp_matmul(ctx, &(xp_gemm_desc){.lin = lin, .role = XP_FPROP,
                                 .a = {.kind = XP_INPUT, .p = x},
                                 .b = {.kind = XP_WEIGHT, .trans = 1, .p = w},
                                 .m = T, .n = out, .k = in, .d = y});
  if (ctx->failed) return -1;
  if (bias) {
    long rows = (long)T;
#pragma omp parallel for schedule(static)
    for (long t = 0; t < rows; t++)
      for (size_t o = 0; o < out; o++) y[(size_t)t * out + o] += bias[o];
  }
  return 0;
}

/* dy (T x out), x (T x in), W (out x in):
 *   dx (T x in)   = dy . W
 *   dW (out x in) = dy^T . x
 *   db (out)      = column sums of dy */
int xp_linear_backward(xp_ctx *ctx, int lin, const float *dy, const float *x, const float *w,
                       float *dw, float *db, float *dx, float *scratch, size_t T, size_t in,
                       size_t out) {
  if (dx) {
    float *d = scratch ? scratch : dx;
    xp_matmul(ctx, &(xp_gemm_desc){.lin = lin, .role = XP_DGRAD,
                                   .a = {.kind = XP_GRAD, .p = dy},
                                   .b = {.kind = XP_WEIGHT, .p = w},
                                   .m = T, .n = in, .k = out, .d = d});
    if (ctx->failed) return -1;
    if (scratch) xp_accumulate(dx, scratch, T * in);
  }
  xp_matmul(ctx, &(xp_gemm_desc){.lin = lin, .role = XP_WGRAD,
                                 .a = {.kind = XP_GRAD, .trans = 1, .p = dy},
                                 .b = {.kind = XP_INPUT, .p = x},
                                 .m = out, .n = in, .k = T, .d = dw});
  if (ctx->failed) return -1;
  if (db) {
    long cols = (long)out;
#pragma omp parallel for schedule(static)
    for (long o = 0; o < cols; o++) {
      double s = 0.0;
      for (size_t t = 0; t < T; t++) s += dy[t * out + (size_t)o];
      db[o] = (float)s;
    }
  }
  return 0;
}

/* ---- norms ----------------------------------------------------------------- */

/* x (T x C), g, b (C) -> y (T x C), mean, rstd (T).  Row statistics in double. */
void xp_norm_forward(int rms, const float *x, const float *g, const float *b, float *y,
                     float *mean, float *rstd, size_t T, size_t C) {
  long rows = (long)T;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float *xr = x + (size_t)t * C;
    float *yr = y + (size_t)t * C;
    double mu = 0.0, v = 0.0;
    if (!rms) {
      for (size_t c = 0; c < C; c++) mu += xr[c];
      mu /= (double)C;
    }
    for (size_t c = 0; c < C; c++) {
      double dev = xr[c] - mu;
      v += dev * dev;
    }
    v /= (double)C;
    float m = (float)mu, r = (float)(1.0 / sqrt(v + (double)XP_NORM_EPS));
    for (size_t c = 0; c < C; c++) {
      float n = (xr[c] - m) * r;
      yr[c] = b ? n * g[c] + b[c] : n * g[c];
    }
    mean[t] = m;
    rstd[t] = r;
  }
}

/* dy (T x C) -> dx (T x C, added), dg, db (C, overwritten).
 * With n = (x - mean) * rstd and dn = dy * g:
 *   LayerNorm: dx = rstd * (dn - mean(dn) - n * mean(dn * n))
 *   RMSNorm:   dx = rstd * (dn - n * mean(dn * n))            (mean = 0) */
void xp_norm_backward(int rms, const float *dy, const float *x, const float *g, const float *mean,
                      const float *rstd, float *dx, float *dg, float *db, size_t T, size_t C) {
  long rows = (long)T, cols = (long)C;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float *xr = x + (size_t)t * C, *dyr = dy + (size_t)t * C;
    float *dxr = dx + (size_t)t * C;
    float m = mean[t], r = rstd[t];
    double s_dn = 0.0, s_dnn = 0.0;
    for (size_t c = 0; c < C; c++) {
      float n = (xr[c] - m) * r, dn = dyr[c] * g[c];
      s_dn += dn;
      s_dnn += (double)dn * n;
    }
    float a = rms ? 0.0f : (float)(s_dn / (double)C), bb = (float)(s_dnn / (double)C);
    for (size_t c = 0; c < C; c++) {
      float n = (xr[c] - m) * r, dn = dyr[c] * g[c];
      dxr[c] += (dn - a - n * bb) * r;
    }
  }
  /* gain and bias: per channel, tokens in order */
#pragma omp parallel for schedule(static)
  for (long c = 0; c < cols; c++) {
    double sg = 0.0, sb = 0.0;
    for (size_t t = 0; t < T; t++) {
      float n = (x[t * C + (size_t)c] - mean[t]) * rstd[t], d = dy[t * C + (size_t)c];
      sg += (double)d * n;
      sb += d;
    }
    dg[c] = (float)sg;
    if (db) db[c] = (float)sb;
  }
}

/* ---- activations ---------------------------------------------------------- */

/* GELU: gelu.c */

static float sigmoidf(float v) { return 1.0f / (1.0f + expf(-v)); }

/* h (T x 2H) = [gate | up] -> y (T x H) = silu(gate) * up */
void xp_swiglu_forward(const float *h, float *y, size_t T, size_t H) {
  long rows = (long)T;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float *gate = h + (size_t)t * 2 * H, *up = gate + H;
    for (size_t j = 0; j < H; j++) y[(size_t)t * H + j] = gate[j] * sigmoidf(gate[j]) * up[j];
  }
}

/* d up = dy silu(g);  d gate = dy up sig(g) (1 + g (1 - sig(g))) */
void xp_swiglu_backward(const float *dy, const float *h, float *dh, size_t T, size_t H) {
  long rows = (long)T;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float *gate = h + (size_t)t * 2 * H, *up = gate + H, *d = dy + (size_t)t * H;
    float *dgate = dh + (size_t)t * 2 * H, *dup = dgate + H;
    for (size_t j = 0; j < H; j++) {
      float s = sigmoidf(gate[j]);
      dup[j] = d[j] * gate[j] * s;
      dgate[j] = d[j] * up[j] * s * (1.0f + gate[j] * (1.0f - s));
    }
  }
}

void xp_add(float *y, const float *a, const float *b, size_t n) {
  long nn = (long)n;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < nn; i++) y[i] = a[i] + b[i];
}

void xp_accumulate(float *y, const float *a, size_t n) {
  long nn = (long)n;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < nn; i++) y[i] += a[i];
}

/* ---- softmax cross-entropy ------------------------------------------------ */

/* logits (T x V) -> probs (T x V); loss_t = log sum exp(l - max) - (l[y] - max).
 * Per-row losses go to a buffer so the mean sums them in row order. */
double xp_softmax_xent_forward(const float *logits, const int *targets, float *probs, size_t T,
                               size_t V) {
  double *row = malloc((T ? T : 1) * sizeof *row);
  long rows = (long)T;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float *l = logits + (size_t)t * V;
    float *p = probs + (size_t)t * V;
    float mx = l[0];
    for (size_t v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    double s = 0.0;
    for (size_t v = 0; v < V; v++) {
      p[v] = expf(l[v] - mx);
      s += p[v];
    }
    for (size_t v = 0; v < V; v++) p[v] = (float)(p[v] / s);
    double lt = log(s) - ((double)l[targets[t]] - mx);
    if (row) row[t] = lt;
  }
  double loss = 0.0;
  if (!row) return NAN;
  for (size_t t = 0; t < T; t++) loss += row[t];
  free(row);
  return loss / (double)T;
}

/* dlogits = (probs - onehot) / T */
void xp_softmax_xent_backward(const float *probs, const int *targets, float *dlogits, size_t T,
                              size_t V) {
  long rows = (long)T;
  float inv = (float)(1.0 / (double)T);
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float *p = probs + (size_t)t * V;
    float *d = dlogits + (size_t)t * V;
    for (size_t v = 0; v < V; v++) d[v] = (p[v] - ((int)v == targets[t] ? 1.0f : 0.0f)) * inv;
  }
}

/* ---- z-loss ----------------------------------------------------------------- */

double xp_lse_forward(const float *logits, float *lse, size_t T, size_t V) {
  long rows = (long)T;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float *l = logits + (size_t)t * V;
    float mx = l[0];
    for (size_t v = 1; v < V; v++) mx = l[v] > mx ? l[v] : mx;
    double s = 0.0;
    for (size_t v = 0; v < V; v++) s += exp((double)l[v] - mx);
    lse[t] = (float)(mx + log(s));
  }
  double z = 0.0;
  for (size_t t = 0; t < T; t++) z += (double)lse[t] * lse[t];
  return T ? z / (double)T : 0.0;
}

void xp_zloss_backward(const float *probs, const float *lse, double coef, float *dlogits, size_t T, size_t V) {
  long rows = (long)T;
#pragma omp parallel for schedule(static)
  for (long t = 0; t < rows; t++) {
    const float f = (float)(2.0 * coef * lse[t] / (double)T);
    const float *p = probs + (size_t)t * V;
    float *d = dlogits + (size_t)t * V;
    for (size_t v = 0; v < V; v++) d[v] += f * p[v];
  }
}
