/* ckpt.c: checkpoints.  Everything a run needs to continue bit-identically:
 * the weights, AdamW's moments, the step, the delayed-scaling recipes, the
 * fallback state, the detector and the losses so far.  (The data of a step
 * is a function of the seed and the step, so it needs no state.)  Written to
 * PATH.tmp, flushed, then renamed over PATH: a crash never leaves a torn
 * checkpoint.  Little-endian host layout; the header says so. */
#include "experiments/xp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "EXMYCKPT"
#define VERSION 1u

static int wr(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n ? 0 : -1; }
static int rd(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n ? 0 : -1; }
#define W(x) wr(f, &(x), sizeof(x))
#define R(x) rd(f, &(x), sizeof(x))

int xp_ckpt_save(const char *path, const xp_ckpt_state *s, char *err, size_t errlen) {
  char tmp[XP_PATH + 8];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return xp_errf(err, errlen, "checkpoint: cannot write '%s': %s", tmp, strerror(errno));
  int bad = 0;
  const uint32_t version = VERSION, endian = 0x01020304u;
  bad |= wr(f, MAGIC, 8) | W(version) | W(endian);
  const uint32_t tl = (uint32_t)strlen(s->prec_key);
  bad |= W(tl) | wr(f, s->prec_key, tl);
  bad |= W(s->step) | W(s->optim->t);
  const uint64_t n = s->model->nparams;
  bad |= W(n) | wr(f, s->model->params, n * 4) | wr(f, s->optim->m, n * 4) | wr(f, s->optim->v, n * 4);
  bad |= W(s->fallback_left) | W(s->fallbacks) | W(s->checks);
  const xp_detector *d = s->det;
  bad |= W(d->window) | W(d->factor) | W(d->seen) | W(d->first) | W(d->spikes) | W(d->first_spike) |
         W(d->diverged_at) | wr(f, d->ring, (size_t)d->window * sizeof(double));
  const uint64_t nl = (uint64_t)s->nloss;
  bad |= W(nl) | wr(f, s->loss, nl * sizeof(double));
  const int32_t nlin = s->ctx->nlin;
  bad |= W(nlin);
  for (int i = 0; i < nlin; i++) {
    const exmy_recipe *rec[XP_NKIND];
    exmy_recipe_state *st[XP_NKIND];
    xp_ctx_recipes(s->ctx, i, rec, st);
    for (int t = 0; t < XP_NKIND; t++) {
      const exmy_recipe_state *r = st[t];
      const int32_t kind = rec[t]->kind, len = r->history ? r->history_len : 0;
      bad |= W(kind) | W(len) | W(r->scale) | W(r->scale_inv) | W(r->fmax) | W(r->steps);
      if (len) bad |= wr(f, r->history, (size_t)len * sizeof(float));
    }
  }
  bad |= fflush(f) != 0;
  bad |= fsync(fileno(f)) != 0;
  bad |= fclose(f) != 0;
  if (bad) {
    unlink(tmp);
    return xp_errf(err, errlen, "checkpoint: writing '%s' failed: %s", tmp, strerror(errno));
  }
  if (rename(tmp, path)) {
    unlink(tmp);
    return xp_errf(err, errlen, "checkpoint: cannot rename to '%s': %s", path, strerror(errno));
  }
  return 0;
}

int xp_ckpt_load(const char *path, xp_ckpt_state *s, int *same_prec, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) return xp_errf(err, errlen, "resume: cannot open '%s': %s", path, strerror(errno));
  char magic[8];
  uint32_t version = 0, endian = 0, tl = 0;
  if (rd(f, magic, 8) || memcmp(magic, MAGIC, 8) || R(version) || R(endian) || R(tl) || tl > 4096) {
    fclose(f);
    return xp_errf(err, errlen, "resume: '%s' is not an exmy checkpoint", path);
  }
  if (version != VERSION || endian != 0x01020304u) {
    fclose(f);
    return xp_errf(err, errlen, "resume: '%s' has an unsupported version or byte order", path);
  }
  char key[4097];
  int bad = rd(f, key, tl);
  key[tl] = 0;
  *same_prec = !strcmp(key, s->prec_key);
  long step;
  bad |= R(step) | R(s->optim->t);
  uint64_t n = 0;
  bad |= R(n);
  if (bad || n != s->model->nparams) {
    fclose(f);
    return xp_errf(err, errlen, "resume: '%s' holds %llu parameters, this model has %zu (model settings differ)", path,
                   (unsigned long long)n, s->model->nparams);
  }
  s->step = step;
  bad |= rd(f, s->model->params, n * 4) | rd(f, s->optim->m, n * 4) | rd(f, s->optim->v, n * 4);
  bad |= R(s->fallback_left) | R(s->fallbacks) | R(s->checks);
  xp_detector *d = s->det;
  int window;
  bad |= R(window);
  if (bad || window != d->window) {
    fclose(f);
    return xp_errf(err, errlen, "resume: '%s' is truncated or its spike_window differs", path);
  }
  bad |= R(d->factor) | R(d->seen) | R(d->first) | R(d->spikes) | R(d->first_spike) | R(d->diverged_at) |
         rd(f, d->ring, (size_t)window * sizeof(double));
  uint64_t nl = 0;
  bad |= R(nl);
  if (bad || nl > (uint64_t)1 << 40) {
    fclose(f);
    return xp_errf(err, errlen, "resume: '%s' is truncated", path);
  }
  s->loss = malloc((nl + 1) * sizeof(double));
  s->nloss = (long)nl;
  bad |= !s->loss || rd(f, s->loss, nl * sizeof(double));
  int32_t nlin = 0;
  bad |= R(nlin);
  if (bad || nlin != s->ctx->nlin) {
    fclose(f);
    return xp_errf(err, errlen, "resume: '%s' is truncated or has other layers", path);
  }
  for (int i = 0; i < nlin && !bad; i++) {
    const exmy_recipe *rec[XP_NKIND];
    exmy_recipe_state *st[XP_NKIND];
    xp_ctx_recipes(s->ctx, i, rec, st);
    for (int t = 0; t < XP_NKIND && !bad; t++) {
      exmy_recipe_state tmp;
      int32_t kind, len;
      bad |= R(kind) | R(len) | R(tmp.scale) | R(tmp.scale_inv) | R(tmp.fmax) | R(tmp.steps);
      if (bad || len < 0 || len > (1 << 24)) { bad = 1; break; }
      float *hist = malloc((size_t)len * sizeof(float) + 1);
      bad |= !hist || (len && rd(f, hist, (size_t)len * sizeof(float)));
      /* the scaling state carries over only into the same precision */
      exmy_recipe_state *r = st[t];
      if (!bad && *same_prec && (int32_t)rec[t]->kind == kind && (r->history ? r->history_len : 0) == len) {
        r->scale = tmp.scale;
        r->scale_inv = tmp.scale_inv;
        r->fmax = tmp.fmax;
        r->steps = tmp.steps;
        if (len) memcpy(r->history, hist, (size_t)len * sizeof(float));
      }
      free(hist);
    }
  }
  fclose(f);
  if (bad) return xp_errf(err, errlen, "resume: '%s' is truncated", path);
  return 0;
}
