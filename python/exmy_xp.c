/* exmy_xp.c: the training engine's GEMM context for Python (exmy.torch).
 *
 * A thin C layer that exmy.torch loads with ctypes: it builds the engine's
 * own xp_ctx from the same keys as `exmy train` (prec, layer.NAME, seed,
 * threads) and runs a linear layer's fprop, dgrad and wgrad through the
 * engine's xp_linear_forward / xp_linear_backward, so a patched PyTorch
 * model gets the engine's semantics exactly: per-layer overrides, delayed
 * scaling state per layer and tensor kind, stochastic-rounding streams keyed
 * by (step, layer, role), the stats.jsonl rows.  Nothing is reimplemented
 * here.  Every call follows docs/api.md: 0, or -1 with a message in err. */
#include "experiments/layers.h"
#include "experiments/precision.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define EXMY_XP_API __attribute__((visibility("default")))

typedef struct exmy_xp {
  xp_config cfg;
  xp_ctx ctx;
  int nlin;
  char (*names)[32];
} exmy_xp;

/* The ctx over nlin linear layers named names[i] (< 32 bytes each), with
 * config keys keys[i] = values[i] applied in order (prec, layer.NAME, seed,
 * threads, attn, ...: any key of `exmy train`).  *out: a new handle. */
EXMY_XP_API int exmy_xp_new(int nlin, const char *const *names, int nkeys, const char *const *keys,
                            const char *const *values, exmy_xp **out, char *err, size_t errlen) {
  *out = NULL;
  if (nlin < 0) return xp_errf(err, errlen, "%d linear layers", nlin);
  exmy_xp *h = calloc(1, sizeof *h);
  /* nlin 0: a context for attention's batched GEMMs only (exmy.torch.matmul) */
  if (!h || !(h->names = calloc(nlin ? (size_t)nlin : 1, sizeof *h->names))) {
    free(h);
    return xp_errf(err, errlen, "out of memory");
  }
  h->nlin = nlin;
  for (int i = 0; i < nlin; i++) {
    if (strlen(names[i]) >= sizeof h->names[i]) {
      free(h->names);
      free(h);
      return xp_errf(err, errlen, "layer name '%.60s' is longer than 31 bytes", names[i]);
    }
    snprintf(h->names[i], sizeof h->names[i], "%s", names[i]);
  }
  xp_config_default(&h->cfg);
  h->cfg.progress = 0;
  for (int i = 0; i < nkeys; i++)
    if (xp_config_set(&h->cfg, keys[i], values[i], err, errlen)) {
      free(h->names);
      free(h);
      return -1;
    }
  xp_model m;
  memset(&m, 0, sizeof m);
  m.nlin = nlin;
  m.lin_name = h->names;
  if (xp_ctx_init(&h->ctx, &h->cfg, &m, err, errlen)) {
    free(h->names);
    free(h);
    return -1;
  }
  *out = h;
  return 0;
}

EXMY_XP_API void exmy_xp_free(exmy_xp *h) {
  if (!h) return;
  xp_ctx_free(&h->ctx);
  free(h->names);
  free(h);
}

/* The step being computed (SR streams) and whether its operands' statistics
 * are collected (as `exmy train` at stats_every). */
EXMY_XP_API void exmy_xp_begin_step(exmy_xp *h, long step, int collect_stats) {
  h->ctx.step = step;
  h->ctx.collect_stats = collect_stats;
  h->ctx.mode = XP_MODE_NORMAL;
}

static int failed(exmy_xp *h, char *err, size_t errlen) {
  xp_errf(err, errlen, "%s", h->ctx.err[0] ? h->ctx.err : "a GEMM failed");
  h->ctx.failed = 0; /* the next call starts clean: Python raised */
  h->ctx.err[0] = 0;
  return -1;
}

/* y (T x out) = x (T x in) W^T, W out x in: the engine's fprop of layer lin. */
EXMY_XP_API int exmy_xp_linear_forward(exmy_xp *h, int lin, const float *x, const float *w, float *y, size_t T,
                                       size_t in, size_t out, char *err, size_t errlen) {
  if (lin < 0 || lin >= h->nlin) return xp_errf(err, errlen, "layer index %d out of range 0..%d", lin, h->nlin - 1);
  if (xp_linear_forward(&h->ctx, lin, x, w, NULL, y, T, in, out)) return failed(h, err, errlen);
  return 0;
}

/* dgrad dx (T x in) = dy W (when dx is not NULL) and wgrad dw (out x in) =
 * dy^T x: the engine's backward of layer lin (dx and dw overwritten). */
EXMY_XP_API int exmy_xp_linear_backward(exmy_xp *h, int lin, const float *dy, const float *x, const float *w,
                                        float *dw, float *dx, size_t T, size_t in, size_t out, char *err,
                                        size_t errlen) {
  if (lin < 0 || lin >= h->nlin) return xp_errf(err, errlen, "layer index %d out of range 0..%d", lin, h->nlin - 1);
  if (xp_linear_backward(&h->ctx, lin, dy, x, w, dw, NULL, dx, NULL, T, in, out)) return failed(h, err, errlen);
  return 0;
}

/* count GEMMs d_i (m x n) = op(a_i) op(b_i) with the `attn` precision, as
 * the engine runs attention's batched products (xp_matmul_batch, lin -1):
 * a_i = a + i m k, b_i = b + i k n, d_i = d + i m n; op(a) is a stored k x m
 * when trans_a, op(b) is b stored n x k when trans_b.  role (fprop, dgrad,
 * wgrad) picks the accumulation model, kind_a and kind_b (input, weight,
 * grad) each operand's format, rounding and recipe; problem i keys its
 * stochastic rounding with sub0 + i (and the step, the role, the operand). */
EXMY_XP_API int exmy_xp_matmul_batch(exmy_xp *h, int role, int kind_a, int trans_a, const float *a, int kind_b,
                                     int trans_b, const float *b, size_t count, size_t m, size_t n, size_t k,
                                     long sub0, float *d, char *err, size_t errlen) {
  if (role < 0 || role >= XP_NROLE) return xp_errf(err, errlen, "GEMM role %d out of range 0..%d", role, XP_NROLE - 1);
  if (kind_a < 0 || kind_a >= XP_NKIND || kind_b < 0 || kind_b >= XP_NKIND)
    return xp_errf(err, errlen, "tensor kinds %d, %d out of range 0..%d", kind_a, kind_b, XP_NKIND - 1);
  if (sub0 < 0 || count > (size_t)INT_MAX || sub0 > (long)INT_MAX - (long)count)
    return xp_errf(err, errlen, "problem index %ld + %zu does not fit an int", sub0, count);
  if (!count) return 0;
  xp_matmul_batch(&h->ctx,
                  &(xp_gemm_desc){.lin = -1, .sub = (int)sub0, .role = (xp_role)role,
                                  .a = {.kind = (xp_tkind)kind_a, .trans = !!trans_a, .p = a},
                                  .b = {.kind = (xp_tkind)kind_b, .trans = !!trans_b, .p = b},
                                  .m = m, .n = n, .k = k, .d = d},
                  count, m * k, k * n, m * n);
  return h->ctx.failed ? failed(h, err, errlen) : 0;
}

/* End of step: delayed recipes roll their histories. */
EXMY_XP_API void exmy_xp_end_step(exmy_xp *h) { xp_ctx_step_end(&h->ctx); }

/* The statistics of the last collected step appended to stats.csv (header
 * when new) and stats.jsonl at the given paths (NULL: skip), as the engine's. */
EXMY_XP_API int exmy_xp_stats_write(exmy_xp *h, long step, const char *csv_path, const char *jsonl_path, char *err,
                                    size_t errlen) {
  FILE *csv = NULL, *js = NULL;
  if (csv_path) {
    FILE *probe = fopen(csv_path, "r");
    const int fresh = !probe;
    if (probe) fclose(probe);
    if (!(csv = fopen(csv_path, "a"))) return xp_errf(err, errlen, "cannot write '%s'", csv_path);
    if (fresh) xp_ctx_stats_header(csv);
  }
  if (jsonl_path && !(js = fopen(jsonl_path, "a"))) {
    if (csv) fclose(csv);
    return xp_errf(err, errlen, "cannot write '%s'", jsonl_path);
  }
  xp_ctx_stats_write(&h->ctx, step, csv, js);
  int bad = 0;
  if (csv) bad |= fclose(csv) != 0;
  if (js) bad |= fclose(js) != 0;
  return bad ? xp_errf(err, errlen, "write error in the statistics files") : 0;
}

static exmy_recipe_state *recipe_state(exmy_xp *h, int lin, int kind, char *err, size_t errlen) {
  const exmy_recipe *rec[XP_NKIND];
  exmy_recipe_state *st[XP_NKIND];
  if (kind < 0 || kind >= XP_NKIND || xp_ctx_recipes(&h->ctx, lin, rec, st) != XP_NKIND) {
    xp_errf(err, errlen, "no layer %d / tensor kind %d", lin, kind);
    return NULL;
  }
  return st[kind];
}

/* Delayed-scaling state of layer lin, tensor kind (0 input, 1 weight, 2
 * grad): scale, scale_inv, fmax, steps, and up to hmax history entries into
 * hist (what experiments/ckpt.c saves).  Returns the history length, or -1
 * with err. */
EXMY_XP_API int exmy_xp_recipe_state(exmy_xp *h, int lin, int kind, float *scale, float *scale_inv, float *fmax,
                                     long *steps, float *hist, int hmax, char *err, size_t errlen) {
  const exmy_recipe_state *s = recipe_state(h, lin, kind, err, errlen);
  if (!s) return -1;
  *scale = s->scale;
  *scale_inv = s->scale_inv;
  *fmax = s->fmax;
  *steps = s->steps;
  const int n = s->history ? s->history_len : 0;
  for (int i = 0; i < n && i < hmax; i++) hist[i] = s->history[i];
  return n;
}

/* The same state put back (a checkpoint resumed, as experiments/ckpt.c's
 * load): hlen must be this state's history length. */
EXMY_XP_API int exmy_xp_recipe_state_set(exmy_xp *h, int lin, int kind, float scale, float scale_inv, float fmax,
                                         long steps, const float *hist, int hlen, char *err, size_t errlen) {
  exmy_recipe_state *s = recipe_state(h, lin, kind, err, errlen);
  if (!s) return -1;
  const int n = s->history ? s->history_len : 0;
  if (hlen != n)
    return xp_errf(err, errlen, "layer %d / tensor kind %d keeps %d history entries, not %d", lin, kind, n, hlen);
  s->scale = scale;
  s->scale_inv = scale_inv;
  s->fmax = fmax;
  s->steps = steps;
  if (n) memcpy(s->history, hist, (size_t)n * sizeof *hist);
  return 0;
}

/* The resolved precision of layer lin as text: "input=FMT/ROUND/RECIPE ..." (docs, logs). */
EXMY_XP_API int exmy_xp_layer_prec(exmy_xp *h, int lin, char *buf, size_t len) {
  if (lin < 0 || lin >= h->nlin) return -1;
  const xp_prec *p = h->ctx.lin_prec[lin];
  size_t n = 0;
  for (int t = 0; t < XP_NKIND && n < len; t++)
    n += (size_t)snprintf(buf + n, len - n, "%s%s=%s/%s/%s", t ? " " : "", xp_tkind_names[t], p->t[t].fmt.name,
                          exmy_round_mode_name(p->t[t].rnd.mode), p->t[t].recipe);
  for (int r = 0; r < XP_NROLE && n < len; r++) {
    char a[320];
    exmy_accum_to_string(&p->accum[r], a, sizeof a);
    n += (size_t)snprintf(buf + n, len - n, " %s=%s", xp_role_names[r], a);
  }
  return 0;
}
