/* layers.h: the building blocks of the engine's models (internal to
 * experiments/): linear layers through xp_matmul, norms, activations,
 * softmax cross-entropy.  Layers call xp_matmul, never a model.
 *
 * Shapes follow llm.c: T rows (tokens or examples) of C channels, row-major.
 * Every parallel loop gives each output element to one iteration and sums in
 * a fixed order, so the bits do not depend on the thread count. */
#ifndef EXMY_XP_LAYERS_H
#define EXMY_XP_LAYERS_H
#include "xp.h"

#define XP_NORM_EPS 1e-5f

/* ---- linear layers (y = x W^T + b, W out x in) -------------------------- */

/* x (T x in), W (out x in), bias (out) or NULL -> y (T x out). */
int xp_linear_forward(xp_ctx *ctx, int lin, const float *x, const float *w, const float *bias,
                      float *y, size_t T, size_t in, size_t out);
/* dy (T x out), x (T x in), W (out x in) -> dW (out x in, overwritten),
 * db (out, overwritten; NULL: no bias), dx (T x in): overwritten when
 * scratch is NULL, else computed into scratch (T x in) and ADDED to dx
 * (the input fans out into a residual stream).  dx NULL: not needed. */
int xp_linear_backward(xp_ctx *ctx, int lin, const float *dy, const float *x, const float *w,
                       float *dw, float *db, float *dx, float *scratch, size_t T, size_t in,
                       size_t out);

/* ---- norms ----------------------------------------------------------------
 * LayerNorm (rms = 0): y = (x - mean) * rstd * g + b  (b NULL: no bias, bias = 0).
 * RMSNorm   (rms = 1): y = x * rstd * g  (bias NULL, mean stored as 0). */

/* x (T x C), g, b (C) -> y (T x C), mean, rstd (T). */
void xp_norm_forward(int rms, const float *x, const float *g, const float *b, float *y,
                     float *mean, float *rstd, size_t T, size_t C);
/* The end of a residual sublayer and the next norm in one pass:
 * xa = x + (branch + bias) (bias NULL: x + branch), y = norm(xa) as
 * xp_norm_forward gives it.  The same bits as xp_linear_forward's bias,
 * xp_add and xp_norm_forward in turn. */
void xp_residual_norm_forward(int rms, const float *x, const float *branch, const float *bias, float *xa,
                              const float *g, const float *b, float *y, float *mean, float *rstd, size_t T,
                              size_t C);
/* dy (T x C) -> dx (T x C, ADDED), dg, db (C, overwritten; db NULL for RMSNorm). */
void xp_norm_backward(int rms, const float *dy, const float *x, const float *g, const float *mean,
                      const float *rstd, float *dx, float *dg, float *db, size_t T, size_t C);

/* ---- activations and elementwise ----------------------------------------- */

/* The engine's tanh (tanh.c): fdlibm's tanhf, the same bits as glibc's
 * libm tanhf through 2.40 for every input, on any platform.  xp_tanhf_n is
 * the vector version (y[i] = xp_tanhf_ref(x[i]) bit for bit; y may be x). */
float xp_tanhf_ref(float x);
void xp_tanhf_n(const float *x, float *y, size_t n);

/* GELU, tanh approximation (GPT-2): n elements (gelu.c).  th (n) or NULL:
 * where the forward keeps tanh's values for the backward. */
void xp_gelu_forward(const float *x, float *y, float *th, size_t n);
/* A linear layer's bias and the GELU after it in one pass: x (T x H) +=
 * bias (H; NULL: none), then y = gelu(x), th = tanh's values (T x H).  The
 * same bits as the bias in xp_linear_forward, then xp_gelu_forward. */
void xp_bias_gelu_forward(float *x, const float *bias, float *y, float *th, size_t T, size_t H);
/* dx = dy * gelu'(x) (overwritten); th: the forward's, or NULL (recomputed). */
void xp_gelu_backward(const float *dy, const float *x, const float *th, float *dx, size_t n);
/* The scalar references (the fast versions give the same bits). */
void xp_gelu_forward_ref(const float *x, float *y, size_t n);
void xp_gelu_backward_ref(const float *dy, const float *x, float *dx, size_t n);
/* SwiGLU: h (T x 2H) = [gate | up] -> y (T x H) = silu(gate) * up. */
void xp_swiglu_forward(const float *h, float *y, size_t T, size_t H);
/* dy (T x H) -> dh (T x 2H, overwritten). */
void xp_swiglu_backward(const float *dy, const float *h, float *dh, size_t T, size_t H);
/* s (C) = column sums of x (T x C), each in double over the rows in order
 * (a linear layer's bias gradient). */
void xp_colsum(const float *x, float *s, size_t T, size_t C);
/* y = a + b (n elements; y may alias a). */
void xp_add(float *y, const float *a, const float *b, size_t n);
/* y += a. */
void xp_accumulate(float *y, const float *a, size_t n);

/* ---- losses ---------------------------------------------------------------- */

/* Softmax cross-entropy: logits (T x V), targets (T) -> probs (T x V);
 * returns the mean loss over T (double, rows summed in order). */
double xp_softmax_xent_forward(const float *logits, const int *targets, float *probs, size_t T,
                               size_t V);
/* dlogits = (probs - onehot(target)) / T (overwritten). */
void xp_softmax_xent_backward(const float *probs, const int *targets, float *dlogits, size_t T,
                              size_t V);

/* z-loss (PaLM): lse (T) = logsumexp of each row of logits (T x V); returns
 * mean(lse^2) over the rows (double, rows summed in order). */
double xp_lse_forward(const float *logits, float *lse, size_t T, size_t V);
/* dlogits += coef * 2 lse_t probs_t / T: the gradient of coef * mean(lse^2). */
void xp_zloss_backward(const float *probs, const float *lse, double coef, float *dlogits, size_t T, size_t V);

/* ---- outlier metrics (outliers.c): double, index order, one thread -------- */

/* max |x| and sqrt(mean x^2) of n values. */
void xp_amax_rms(const float *x, size_t n, double *amax, double *rms);
/* He et al. 2024: s_c = mean over rows of x[t,c]^2; mean(s^2) / mean(s)^2.
 * x (T x C); s: scratch of C doubles. */
double xp_channel_kurtosis(const float *x, size_t T, size_t C, double *s);
/* w (2H x C): |cosine| of rows j and H + j; the max and mean over j. */
void xp_pair_cosine(const float *w, size_t H, size_t C, double *cmax, double *cmean);
/* mean and max of n values. */
void xp_mean_max(const float *v, size_t n, double *mean, double *max);

#endif
