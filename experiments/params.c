/* params.c: a model's parameter table (tensors inside the flat params and
 * grads arrays), its linear layers' names, and the deterministic init. */
#include "experiments/model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameter table ----------------------------------------------------- */

int xp_add_tensor(xp_model *m, const char *name, size_t rows, size_t cols, int is_matrix) {
  xp_param *t = realloc(m->tensors, (size_t)(m->ntensors + 1) * sizeof *t);
  if (!t) return -1;
  m->tensors = t;
  t += m->ntensors;
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->off = m->nparams;
  t->rows = rows;
  t->cols = cols;
  t->n = rows * cols;
  t->is_matrix = is_matrix;
  m->nparams += t->n;
  return m->ntensors++;
}

int xp_alloc_params(xp_model *m) {
  m->params = calloc(m->nparams ? m->nparams : 1, sizeof(float));
  m->grads = calloc(m->nparams ? m->nparams : 1, sizeof(float));
  return m->params && m->grads ? 0 : -1;
}

int xp_set_lin_names(xp_model *m, int nlin) {
  m->lin_name = calloc((size_t)nlin, sizeof *m->lin_name);
  m->nlin = nlin;
  return m->lin_name ? 0 : -1;
}

void xp_params_free(xp_model *m) {
  free(m->params);
  free(m->grads);
  free(m->tensors);
  free(m->lin_name);
  m->params = m->grads = NULL;
  m->tensors = NULL;
  m->lin_name = NULL;
  m->ntensors = m->nlin = 0;
  m->nparams = 0;
}

/* ---- init ---------------------------------------------------------------- */

double xp_randn(uint64_t seed, uint64_t stream, uint64_t index) {
  /* u1 in (0, 1] (log finite), u2 in [0, 1): 53-bit uniforms. */
  double u1 = ((double)(exmy_random64(seed, stream, 2 * index) >> 11) + 1.0) * 0x1p-53;
  double u2 = (double)(exmy_random64(seed, stream, 2 * index + 1) >> 11) * 0x1p-53;
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void xp_init_normal(xp_model *m, int t, uint64_t seed, double std) {
  const xp_param *p = &m->tensors[t];
  float *w = m->params + p->off;
  long n = (long)p->n;
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; i++) w[i] = (float)(std * xp_randn(seed, (uint64_t)t + 1, (uint64_t)i));
}

void xp_init_const(xp_model *m, int t, float v) {
  const xp_param *p = &m->tensors[t];
  for (size_t i = 0; i < p->n; i++) m->params[p->off + i] = v;
}

void xp_mark_linear_weights(xp_model *m) {
  for (int t = 0; t < m->ntensors; t++) {
    xp_param *p = &m->tensors[t];
    p->is_linear_w = 0;
    for (int l = 0; l < m->nlin && !p->is_linear_w; l++) {
      const size_t k = strlen(m->lin_name[l]);
      p->is_linear_w = !strncmp(p->name, m->lin_name[l], k) && !strcmp(p->name + k, ".w");
    }
  }
}

void xp_round_f32(const exmy_format *fmt, const exmy_rounding *rnd, float *x, size_t n, void *codes) {
  exmy_quantize(fmt, rnd, EXMY_DTYPE_F32, x, n, 0, codes, NULL, NULL, 0); /* f32 source: cannot fail */
  exmy_codes_to_f32(fmt, codes, n, x);
}
