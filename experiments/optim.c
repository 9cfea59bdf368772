/* optim.c: AdamW over the fp32 master weights, global-norm clipping, the
 * warmup + cosine schedule, MS-AMP's low-precision gradients and moments,
 * and rounding the weights to a storage format (master=bf16: "pure bf16"
 * weights updated with rne or stochastic rounding).
 *
 * Every loop is elementwise or sums fixed chunks in a fixed order, so the
 * result does not depend on the thread count. */
#include "experiments/xp.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 65536

/* The MS-AMP levels, `msamp = N` is row N.  MS-AMP (msamp/__init__.py's
 * table): O1 = FP8 GEMMs, FP8 communication, fp16 weights, FP8 weight
 * gradients, fp32 Adam states; O2 = O1 with the first moment in FP8 and the
 * second in fp16.  Rows 1 and 2 are the engine's earlier approximations
 * (every matrix's gradient, embeddings included, cast in the optimizer;
 * weights as `master` says); row 3 is O1 as published: only linear layers
 * (MS-AMP replaces nn.Linear), fp16 weights with no fp32 master, and the
 * FP8 all-reduce of allreduce.c. */
static const xp_msamp_level levels[XP_MSAMP_LEVELS] = {
  {"off", 0, 0, 0, 0},
  {"O1 approximation: every matrix's gradient e4m3fn (pow2 current scale); weights as master=", 1, 0, 0, 0},
  {"O2 approximation: level 1, Adam moments e4m3fn / fp16 (scaled)", 1, 0, 0, 1},
  {"O1 as published: linear weights fp16 (no fp32 master), their gradients e4m3fn through the FP8 all-reduce, "
   "fp32 Adam",
   0, 1, 1, 0},
};

const xp_msamp_level *xp_msamp_level_of(int level) {
  return &levels[level >= 0 && level < XP_MSAMP_LEVELS ? level : 0];
}

int xp_optim_init(xp_optim *o, size_t nparams) {
  memset(o, 0, sizeof *o);
  o->n = nparams;
  o->m = calloc(nparams + 1, sizeof(float));
  o->v = calloc(nparams + 1, sizeof(float));
  o->codes = malloc((nparams + 1) * sizeof(uint32_t));
  return o->m && o->v && o->codes ? 0 : -1;
}

void xp_optim_free(xp_optim *o) {
  free(o->m);
  free(o->v);
  free(o->codes);
  memset(o, 0, sizeof *o);
}

double xp_lr_at(const xp_config *c, long step) {
  const long warm = (long)(c->warmup_frac * (double)c->steps);
  /* the cosine's start: after warmup, or the warm restart (SGDR: back to lr at once) */
  const long from = c->lr_restart > 0 && step >= c->lr_restart ? c->lr_restart : warm;
  if (step < from && from == warm) return c->lr * (double)(step + 1) / (double)warm;
  const double span = (double)(c->steps - from);
  const double frac = span > 0 ? (double)(step - from) / span : 1.0;
  const double min_lr = c->lr * c->min_lr_frac;
  return min_lr + 0.5 * (c->lr - min_lr) * (1.0 + cos(3.14159265358979323846 * (frac > 1 ? 1 : frac)));
}

/* sum of squares in double: fixed chunks summed in order */
static double sumsq(const float *x, size_t n) {
  const size_t nc = (n + CHUNK - 1) / CHUNK;
  double *part = malloc((nc + 1) * sizeof(double)), total = 0;
  if (!part) { /* serial fallback: the same chunked order */
    for (size_t c = 0; c < nc; c++) {
      double s = 0;
      for (size_t i = c * CHUNK; i < n && i < (c + 1) * CHUNK; i++) s += (double)x[i] * x[i];
      total += s;
    }
    return total;
  }
#pragma omp parallel for schedule(static)
  for (size_t c = 0; c < nc; c++) {
    double s = 0;
    const size_t end = (c + 1) * CHUNK < n ? (c + 1) * CHUNK : n;
    for (size_t i = c * CHUNK; i < end; i++) s += (double)x[i] * x[i];
    part[c] = s;
  }
  for (size_t c = 0; c < nc; c++) total += part[c];
  free(part);
  return total;
}

/* x <- dequant(quant(x)) with a per-tensor recipe (MS-AMP's scaled tensors). */
static void fake_quant(const char *fmt_name, const char *recipe_text, float *x, size_t n, uint64_t seed,
                       uint64_t stream) {
  exmy_format f;
  exmy_recipe r;
  exmy_recipe_state st; /* a fresh state each call: no delayed history across steps */
  exmy_qtensor q;
  exmy_format_parse(fmt_name, &f, NULL, 0);
  exmy_recipe_parse(recipe_text, &r, NULL, 0);
  exmy_recipe_state_new(&r, &st, NULL, 0);
  exmy_rounding rnd = exmy_rounding_default();
  rnd.sat = EXMY_SAT_FINITE;
  rnd.seed = seed;
  rnd.stream = stream;
  if (exmy_recipe_quantize(&r, &f, &rnd, x, 1, n, &st, &q, NULL, NULL, 0) == 0) {
    exmy_qtensor_to_f32(&q, x);
    exmy_qtensor_free(&q);
  }
  exmy_recipe_state_free(&st);
}

/* p <- round(p) to the master format (exmy_quantize, SR counter = element index), decoded back */
static void round_master(xp_optim *o, const xp_config *c, float *p, size_t n, uint64_t stream) {
  exmy_rounding rnd = exmy_rounding_default();
  rnd.mode = c->master_round;
  rnd.sat = EXMY_SAT_FINITE;
  rnd.seed = c->seed;
  rnd.stream = stream;
  xp_round_f32(&c->master, &rnd, p, n, o->codes);
}

/* The linear weights in fp16, rne, in place (MS-AMP's fp16 weights: the
 * fp32 update cast back). */
static void round_linear_f16(const xp_optim *o, xp_model *m) {
  exmy_format f;
  exmy_format_parse("f16", &f, NULL, 0);
  const exmy_rounding rnd = exmy_rounding_default();
  for (int ti = 0; ti < m->ntensors; ti++)
    if (m->tensors[ti].is_linear_w) xp_round_f32(&f, &rnd, m->params + m->tensors[ti].off, m->tensors[ti].n, o->codes);
}

/* AdamW's constants of a step */
typedef struct adamw_coef {
  float coef, b1, b2, bc1, bc2, eps, lr, fs;
} adamw_coef;


/* AdamW on n elements: each element's update alone, in float, the same
 * operations in the same order at any vector width (wd_mode independent:
 * the decay follows the schedule's multiplier lr / lr_peak, not the peak lr,
 * Loshchilov and Hutter's eta_t; coupled keeps PyTorch's expression, bit for
 * bit).  A loop per mode, so each vectorizes. */
XP_CLONES static void adamw_range(const adamw_coef *k, float wd, int indep, float *restrict p,
                                  const float *restrict g, float *restrict mm, float *restrict vv, size_t n) {
  const float coef = k->coef, b1 = k->b1, b2 = k->b2, bc1 = k->bc1, bc2 = k->bc2, eps = k->eps, lr = k->lr,
              fs = k->fs;
#define ADAMW_MOMENTS(i)                                            \
  const float gi = g[i] * coef;                                     \
  mm[i] = b1 * mm[i] + (1.0f - b1) * gi;                            \
  vv[i] = b2 * vv[i] + (1.0f - b2) * (gi * gi);                     \
  const float mhat = mm[i] / bc1, vhat = vv[i] / bc2
  if (indep)
    for (size_t i = 0; i < n; i++) {
      ADAMW_MOMENTS(i);
      p[i] -= lr * (mhat / (sqrtf(vhat) + eps)) + fs * wd * p[i];
    }
  else
    for (size_t i = 0; i < n; i++) {
      ADAMW_MOMENTS(i);
      p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
    }
#undef ADAMW_MOMENTS
}

/* This thread's share [lo, hi) of n elements: schedule(static)'s split */
static void xp_omp_range(size_t n, size_t *lo, size_t *hi) {
  const size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
  const size_t q = n / nt, r = n % nt;
  *lo = id * q + (id < r ? id : r);
  *hi = *lo + q + (id < r);
}

void xp_optim_setup(xp_optim *o, xp_model *m, const xp_config *c) {
  if (xp_msamp_level_of(c->msamp)->fp16_linear) round_linear_f16(o, m);
}

void xp_optim_step(xp_optim *o, xp_model *m, const xp_config *c, long step, double lr, double *grad_norm) {
  o->t++;
  const xp_msamp_level *lv = xp_msamp_level_of(c->msamp);
  /* MS-AMP O1 (approximation): weight gradients in FP8 (per-tensor, power-of-two scale) */
  if (lv->fp8_wgrad)
    for (int i = 0; i < m->ntensors; i++)
      if (m->tensors[i].is_matrix)
        fake_quant("e4m3fn", "current:pow2", m->grads + m->tensors[i].off, m->tensors[i].n, c->seed,
                   0x6a3d000000ull + (uint64_t)step * 4096 + (uint64_t)i);
  const double norm = sqrt(sumsq(m->grads, m->nparams));
  *grad_norm = norm;
  const float coef = c->clip > 0 && norm > c->clip ? (float)(c->clip / (norm + 1e-6)) : 1.0f;
  const float b1 = (float)c->beta1, b2 = (float)c->beta2, eps = (float)c->eps, flr = (float)lr;
  const float bc1 = (float)(1.0 - pow(c->beta1, (double)o->t)), bc2 = (float)(1.0 - pow(c->beta2, (double)o->t));
  /* wd_mode independent: the decay follows the schedule's multiplier lr / lr_peak, not the peak lr
   * (Loshchilov and Hutter's eta_t); coupled keeps PyTorch's expression, bit for bit */
  const int indep = c->wd_independent;
  const float fs = indep && c->lr > 0 ? (float)(lr / c->lr) : 0.0f;
  const adamw_coef k = {coef, b1, b2, bc1, bc2, eps, flr, fs};
  if (!lv->low_moments && !lv->fp16_linear && c->master_is_f32) {
    /* nothing between the tensors' updates: one team for all of them (each
     * element's update is alone, so the split changes no bit) */
#pragma omp parallel
    for (int ti = 0; ti < m->ntensors; ti++) {
      const xp_param *pt = &m->tensors[ti];
      const float wd = pt->is_matrix ? (float)c->weight_decay : 0.0f;
      float *p = m->params + pt->off, *g = m->grads + pt->off, *mm = o->m + pt->off, *vv = o->v + pt->off;
      size_t lo, hi;
      xp_omp_range(pt->n, &lo, &hi);
      adamw_range(&k, wd, indep, p + lo, g + lo, mm + lo, vv + lo, hi - lo);
    }
    return;
  }
  for (int ti = 0; ti < m->ntensors; ti++) {
    const xp_param *pt = &m->tensors[ti];
    const float wd = pt->is_matrix ? (float)c->weight_decay : 0.0f;
    float *p = m->params + pt->off, *g = m->grads + pt->off, *mm = o->m + pt->off, *vv = o->v + pt->off;
    if (pt->n > CHUNK) {
#pragma omp parallel
      {
        size_t lo, hi;
        xp_omp_range(pt->n, &lo, &hi);
        adamw_range(&k, wd, indep, p + lo, g + lo, mm + lo, vv + lo, hi - lo);
      }
    } else {
      adamw_range(&k, wd, indep, p, g, mm, vv, pt->n);
    }
    if (lv->low_moments && pt->is_matrix) { /* O2: first moment e4m3fn, second fp16, scaled */
      fake_quant("e4m3fn", "current:pow2", mm, pt->n, c->seed, 0);
      fake_quant("f16", "current:pow2", vv, pt->n, c->seed, 0);
    }
    if (!c->master_is_f32) round_master(o, c, p, pt->n, 0x3a57e5000000ull + (uint64_t)step * 4096 + (uint64_t)ti);
  }
  if (lv->fp16_linear) round_linear_f16(o, m);
}
