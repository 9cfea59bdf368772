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
  if (nlin < 1) return xp_errf(err, errlen, "no linear layers to run");
  exmy_xp *h = calloc(1, sizeof *h);
  if (!h || !(h->names = calloc((size_t)nlin, sizeof *h->names))) {
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

/* Delayed-scaling state of layer lin, tensor kind (0 input, 1 weight, 2
 * grad): scale, scale_inv, steps, and up to hmax history entries into hist.
 * Returns the history length, or -1 with err. */
EXMY_XP_API int exmy_xp_recipe_state(exmy_xp *h, int lin, int kind, float *scale, float *scale_inv, long *steps,
                                     float *hist, int hmax, char *err, size_t errlen) {
  const exmy_recipe *rec[XP_NKIND];
  exmy_recipe_state *st[XP_NKIND];
  if (kind < 0 || kind >= XP_NKIND || xp_ctx_recipes(&h->ctx, lin, rec, st) != XP_NKIND)
    return xp_errf(err, errlen, "no layer %d / tensor kind %d", lin, kind);
  *scale = st[kind]->scale;
  *scale_inv = st[kind]->scale_inv;
  *steps = st[kind]->steps;
  const int n = st[kind]->history_len;
  for (int i = 0; i < n && i < hmax; i++) hist[i] = st[kind]->history[i];
  return n;
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
