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

/* columns per block of the column reductions (xp_colsum, the norms' gains) */
#define XP_CB 32

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
  const xp_gemm_desc wgrad = {.lin = lin, .role = XP_WGRAD,
                              .a = {.kind = XP_GRAD, .trans = 1, .p = dy},
                              .b = {.kind = XP_INPUT, .p = x},
                              .m = out, .n = in, .k = T, .d = dw};
  if (dx) { /* dgrad and wgrad: independent, as a pair (a thread each with 2) */
    float *d = scratch ? scratch : dx;
    const xp_gemm_desc dgrad = {.lin = lin, .role = XP_DGRAD,
                                .a = {.kind = XP_GRAD, .p = dy},
                                .b = {.kind = XP_WEIGHT, .p = w},
                                .m = T, .n = in, .k = out, .d = d};
    xp_matmul_pair(ctx, &dgrad, &wgrad);
    if (ctx->failed) return -1;
    if (scratch) xp_accumulate(dx, scratch, T * in);
  } else {
    xp_matmul(ctx, &wgrad);
    if (ctx->failed) return -1;
  }
  if (db) xp_colsum(dy, db, T, out);
  return 0;
}

/* Column sums of x (T x C) into s (C): each column in double over the rows
 * in order.  A block of XP_CB columns at a time with the rows streamed (a
 * column walked down alone would read one float per cache line). */
XP_CLONES static void colsum_block(const float *x, float *s, size_t T, size_t C, size_t c0, size_t w) {
  double acc[XP_CB] = {0};
  if (w == XP_CB) /* a full block: the accumulators stay in registers */
    for (size_t t = 0; t < T; t++) {
      const float *r = x + t * C + c0;
      for (size_t j = 0; j < XP_CB; j++) acc[j] += r[j];
    }
  else
    for (size_t t = 0; t < T; t++) {
      const float *r = x + t * C + c0;
      for (size_t j = 0; j < w; j++) acc[j] += r[j];
    }
  for (size_t j = 0; j < w; j++) s[c0 + j] = (float)acc[j];
}

void xp_colsum(const float *x, float *s, size_t T, size_t C) {
  long nblk = (long)((C + XP_CB - 1) / XP_CB);
#pragma omp parallel for schedule(static)
  for (long ob = 0; ob < nblk; ob++) {
    const size_t c0 = (size_t)ob * XP_CB, w = C - c0 < XP_CB ? C - c0 : XP_CB;
    colsum_block(x, s, T, C, c0, w);
  }
}

/* ---- norms ----------------------------------------------------------------- */

/* The norms work on blocks of XP_NR rows: a row's sums run in double over
 * its columns in order (a chain of dependent additions), and the rows of a
 * block run their chains side by side; every row gets the bits it would get
 * alone. */
#define XP_NR 8

/* mean and rstd of nr <= XP_NR rows of x (C wide).  Inlined with nr =
 * XP_NR, the accumulators stay in registers. */
static inline __attribute__((always_inline)) void norm_stats(int rms, const float *x, size_t nr, size_t C,
                                                             float *mean, float *rstd) {
  double mu[XP_NR] = {0}, v[XP_NR] = {0};
  if (!rms) {
    for (size_t c = 0; c < C; c++)
      for (size_t r = 0; r < nr; r++) mu[r] += x[r * C + c];
    for (size_t r = 0; r < nr; r++) mu[r] /= (double)C;
  }
  for (size_t c = 0; c < C; c++)
    for (size_t r = 0; r < nr; r++) {
      double dev = x[r * C + c] - mu[r];
      v[r] += dev * dev;
    }
  for (size_t r = 0; r < nr; r++) {
    v[r] /= (double)C;
    mean[r] = (float)mu[r];
    rstd[r] = (float)(1.0 / sqrt(v[r] + (double)XP_NORM_EPS));
  }
}

/* y = (x - m) r g (+ b) for one row */
static inline __attribute__((always_inline)) void norm_row(const float *xr, const float *g, const float *b, float m, float r, float *yr, size_t C) {
  if (b)
    for (size_t c = 0; c < C; c++) yr[c] = (xr[c] - m) * r * g[c] + b[c];
  else
    for (size_t c = 0; c < C; c++) yr[c] = (xr[c] - m) * r * g[c];
}

/* The norm of rows [t0, t0 + nr) of x. */
XP_CLONES static void norm_block(int rms, const float *x, const float *g, const float *b, float *y, float *mean,
                       float *rstd, size_t t0, size_t nr, size_t C) {
  if (nr == XP_NR) norm_stats(rms, x + t0 * C, XP_NR, C, mean + t0, rstd + t0);
  else norm_stats(rms, x + t0 * C, nr, C, mean + t0, rstd + t0);
  for (size_t r = 0; r < nr; r++)
    norm_row(x + (t0 + r) * C, g, b, mean[t0 + r], rstd[t0 + r], y + (t0 + r) * C, C);
}

/* x (T x C), g, b (C) -> y (T x C), mean, rstd (T).  Row statistics in double. */
void xp_norm_forward(int rms, const float *x, const float *g, const float *b, float *y,
                     float *mean, float *rstd, size_t T, size_t C) {
  long nblk = (long)((T + XP_NR - 1) / XP_NR);
#pragma omp parallel for schedule(static)
  for (long k = 0; k < nblk; k++) {
    const size_t t0 = (size_t)k * XP_NR, nr = T - t0 < XP_NR ? T - t0 : XP_NR;
    norm_block(rms, x, g, b, y, mean, rstd, t0, nr, C);
  }
}

/* xa = x + (branch + bias), then the norm of xa: xp_linear_forward's bias,
 * xp_add and xp_norm_forward in one pass (the same operations per element). */
void xp_residual_norm_forward(int rms, const float *x, const float *branch, const float *bias, float *xa,
                              const float *g, const float *b, float *y, float *mean, float *rstd, size_t T,
                              size_t C) {
  long nblk = (long)((T + XP_NR - 1) / XP_NR);
#pragma omp parallel for schedule(static)
  for (long k = 0; k < nblk; k++) {
    const size_t t0 = (size_t)k * XP_NR, nr = T - t0 < XP_NR ? T - t0 : XP_NR;
    for (size_t i = t0 * C; i < (t0 + nr) * C; i += C) {
      if (bias)
        for (size_t c = 0; c < C; c++) xa[i + c] = x[i + c] + (branch[i + c] + bias[c]);
      else
        for (size_t c = 0; c < C; c++) xa[i + c] = x[i + c] + branch[i + c];
    }
    norm_block(rms, xa, g, b, y, mean, rstd, t0, nr, C);
  }
}

/* dx of nr <= XP_NR rows (t0 ...): the row sums of dn and dn n side by side */
static inline __attribute__((always_inline)) void norm_bwd_rows_n(int rms, const float *dy, const float *x,
                                                                const float *g, const float *mean,
                                                                const float *rstd, float *dx, size_t t0,
                                                                size_t nr, size_t C) {
  double s_dn[XP_NR] = {0}, s_dnn[XP_NR] = {0};
  float m[XP_NR], rs[XP_NR], a[XP_NR], bb[XP_NR];
  for (size_t r = 0; r < nr; r++) m[r] = mean[t0 + r], rs[r] = rstd[t0 + r];
  const float *xb = x + t0 * C, *dyb = dy + t0 * C;
  for (size_t c = 0; c < C; c++) {
    const float gc = g[c];
    for (size_t r = 0; r < nr; r++) {
      float n = (xb[r * C + c] - m[r]) * rs[r], dn = dyb[r * C + c] * gc;
      s_dn[r] += dn;
      s_dnn[r] += (double)dn * n;
    }
  }
  for (size_t r = 0; r < nr; r++) {
    a[r] = rms ? 0.0f : (float)(s_dn[r] / (double)C);
    bb[r] = (float)(s_dnn[r] / (double)C);
  }
  for (size_t r = 0; r < nr; r++) {
    const float *xr = xb + r * C, *dyr = dyb + r * C;
    float *dxr = dx + (t0 + r) * C;
    const float mr = m[r], rr = rs[r], ar = a[r], br = bb[r];
    for (size_t c = 0; c < C; c++) {
      float n = (xr[c] - mr) * rr, dn = dyr[c] * g[c];
      dxr[c] += (dn - ar - n * br) * rr;
    }
  }
}

XP_CLONES static void norm_bwd_rows(int rms, const float *dy, const float *x, const float *g, const float *mean,
                                    const float *rstd, float *dx, size_t t0, size_t nr, size_t C) {
  if (nr == XP_NR) norm_bwd_rows_n(rms, dy, x, g, mean, rstd, dx, t0, XP_NR, C);
  else norm_bwd_rows_n(rms, dy, x, g, mean, rstd, dx, t0, nr, C);
}

/* dg, db of channels [c0, c0 + w): per channel, tokens in order */
XP_CLONES static void norm_bwd_cols(const float *dy, const float *x, const float *mean, const float *rstd, float *dg,
                                    float *db, size_t T, size_t C, size_t c0, size_t w) {
  double sg[XP_CB] = {0}, sb[XP_CB] = {0};
  for (size_t t = 0; t < T; t++) {
    const float *xr = x + t * C + c0, *dyr = dy + t * C + c0;
    const float m = mean[t], r = rstd[t];
    if (w == XP_CB)
      for (size_t j = 0; j < XP_CB; j++) {
        float n = (xr[j] - m) * r, d = dyr[j];
        sg[j] += (double)d * n;
        sb[j] += d;
      }
    else
      for (size_t j = 0; j < w; j++) {
        float n = (xr[j] - m) * r, d = dyr[j];
        sg[j] += (double)d * n;
        sb[j] += d;
      }
  }
  for (size_t j = 0; j < w; j++) {
    dg[c0 + j] = (float)sg[j];
    if (db) db[c0 + j] = (float)sb[j];
  }
}

/* dy (T x C) -> dx (T x C, added), dg, db (C, overwritten).
 * With n = (x - mean) * rstd and dn = dy * g:
 *   LayerNorm: dx = rstd * (dn - mean(dn) - n * mean(dn * n))
 *   RMSNorm:   dx = rstd * (dn - n * mean(dn * n))            (mean = 0) */
void xp_norm_backward(int rms, const float *dy, const float *x, const float *g, const float *mean,
                      const float *rstd, float *dx, float *dg, float *db, size_t T, size_t C) {
  long nblk = (long)((T + XP_NR - 1) / XP_NR), ncb = (long)((C + XP_CB - 1) / XP_CB);
#pragma omp parallel
  {
#pragma omp for schedule(static) nowait
    for (long k = 0; k < nblk; k++) {
      const size_t t0 = (size_t)k * XP_NR, nr = T - t0 < XP_NR ? T - t0 : XP_NR;
      norm_bwd_rows(rms, dy, x, g, mean, rstd, dx, t0, nr, C);
    }
    /* gain and bias: per channel, tokens in order; XP_CB channels at a time */
#pragma omp for schedule(static)
    for (long cb = 0; cb < ncb; cb++) {
      const size_t c0 = (size_t)cb * XP_CB, w = C - c0 < XP_CB ? C - c0 : XP_CB;
      norm_bwd_cols(dy, x, mean, rstd, dg, db, T, C, c0, w);
    }
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
