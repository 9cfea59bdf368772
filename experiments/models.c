/* models.c: the model table (like cli/'s command table) and the xp_model_*
 * entry points of the engine, which look the model up in it.  Each model
 * defines its row (xp_model_ops) in its own file; this is the only place
 * that knows them all. */
#include "experiments/model.h"

#include <stdlib.h>
#include <string.h>

/* Indexed by xp_model_kind (designated: row models[k] has kind k). */
static const xp_model_ops *const models[] = {
  [XP_MODEL_GPT] = &xp_gpt_model,
  [XP_MODEL_MLP] = &xp_mlp_model,
  [XP_MODEL_MLP_CLASS] = &xp_mlp_class_model,
};
#define NMODELS (int)(sizeof models / sizeof models[0])

const xp_model_ops *xp_model_lookup(const char *name) {
  for (int i = 0; i < NMODELS; i++)
    if (!strcmp(models[i]->name, name)) return models[i];
  return NULL;
}

const xp_model_ops *xp_model_of(xp_model_kind kind) {
  return (int)kind >= 0 && (int)kind < NMODELS ? models[kind] : NULL;
}

int xp_model_count(void) { return NMODELS; }

unsigned xp_model_caps(xp_model_kind kind) {
  const xp_model_ops *ops = xp_model_of(kind);
  return ops ? ops->caps : 0;
}

/* The names of the models with capability cap ("gpt"), for a refusal to say
 * where the key works. */
static const char *models_with(unsigned cap, char *buf, size_t len) {
  size_t n = 0;
  buf[0] = 0;
  for (int i = 0; i < NMODELS && n < len; i++)
    if (models[i]->caps & cap) n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", models[i]->name);
  return buf;
}

int xp_model_init(xp_model *m, const xp_model_config *mc, int vocab, uint64_t seed, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  const xp_model_ops *ops = xp_model_of(mc->kind);
  if (!ops) return xp_errf(err, errlen, "model: unknown kind %d", (int)mc->kind);
  m->ops = ops;
  if (ops->init(m, mc, vocab, seed, err, errlen)) return -1;
  xp_mark_linear_weights(m);
  return 0;
}

void xp_model_free(xp_model *m) {
  if (!m) return;
  if (m->ops) m->ops->free(m);
  xp_params_free(m);
  memset(m, 0, sizeof *m);
}

int xp_model_forward(xp_model *m, xp_ctx *ctx, const xp_batch *b, double *loss) {
  return m->ops->forward(m, ctx, b, loss);
}

int xp_model_backward(xp_model *m, xp_ctx *ctx, const xp_batch *b) { return m->ops->backward(m, ctx, b); }

int xp_model_predict(xp_model *m, xp_ctx *ctx, const xp_batch *b, float *out) {
  return m->ops->predict(m, ctx, b, out);
}

int xp_model_outliers_header(const xp_model *m, FILE *csv) {
  return m->ops->outliers_header ? m->ops->outliers_header(m, csv) : -1;
}

int xp_model_check_config(const xp_model *m, const xp_config *c, char *err, size_t errlen) {
  const unsigned caps = m->ops->caps;
  char with[128];
  if (c->range_shift && !(caps & XP_CAP_NORMS))
    return xp_errf(err, errlen, "range_shift %d: model %s has no norm layers to shift", c->range_shift, m->ops->name);
  if ((c->model.tie || c->model.rope) && !(caps & XP_CAP_EMBEDDING))
    return xp_errf(err, errlen, "%s: model %s has no embedding (%s has)", c->model.tie ? "tie 1" : "pos rope",
                   m->ops->name, models_with(XP_CAP_EMBEDDING, with, sizeof with));
  if (c->range_shift && c->model.tie)
    return xp_errf(err, errlen, "range_shift %d: with tie 1 lm_head's weight is the embedding, so the shift would change "
                   "the function", c->range_shift);
  if (c->data_switch && !(caps & XP_CAP_TOKENS))
    return xp_errf(err, errlen, "data_switch %ld: model %s has no tokens to rename (%s has)", c->data_switch,
                   m->ops->name, models_with(XP_CAP_TOKENS, with, sizeof with));
  if (c->outliers_every && !(caps & XP_CAP_OUTLIERS))
    return xp_errf(err, errlen, "outliers_every: model %s has no outlier metrics (%s has)", m->ops->name,
                   models_with(XP_CAP_OUTLIERS, with, sizeof with));
  if (c->allreduce_ranks > 1 && c->model.batch % c->allreduce_ranks)
    return xp_errf(err, errlen, "allreduce_ranks %d does not divide batch %d (each rank takes batch/R sequences)",
                   c->allreduce_ranks, c->model.batch);
  return 0;
}

int xp_model_outliers(xp_model *m, double *row) {
  if (!m->ops->outliers) return -1;
  m->ops->outliers(m, row);
  return 0;
}
