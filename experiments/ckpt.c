/* ckpt.c: checkpoints.  Everything a run needs to continue bit-identically:
 * the weights, AdamW's moments, the step, the delayed-scaling recipes, the
 * fallback state, the detector and the losses so far.  (The data of a step
 * is a function of the seed and the step, so it needs no state.)  Written to
 * a temporary file of this writer's own, flushed, fsynced, then renamed over
 * PATH (and the folder fsynced; replace.c): a crash or a failed write never
 * leaves a torn checkpoint and never touches the previous one, and two
 * writers of one path never take each other's temporary file.  Little-endian host layout; the header
 * says so.  Version 2 ends with a 64-bit FNV-1a checksum of every byte
 * before it, so a corrupt or truncated file is refused. */
#include "experiments/xp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "EXMYCKPT"
#define VERSION 2u
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * FNV_PRIME;
  return h;
}

typedef struct { FILE *f; uint64_t h; int err; } writer; /* err: the first write's errno */
static void wr(writer *w, const void *p, size_t n) {
  if (w->err || !n) return;
  w->h = fnv1a(w->h, p, n);
  errno = 0;
  if (fwrite(p, 1, n, w->f) != n) w->err = errno ? errno : EIO;
}
typedef struct { const unsigned char *p; size_t len, off; int bad; } reader;
static void rd(reader *r, void *p, size_t n) {
  if (r->bad || n > r->len - r->off) { r->bad = 1; return; }
  memcpy(p, r->p + r->off, n);
  r->off += n;
}
#define W(x) wr(&w, &(x), sizeof(x))
#define R(x) rd(&r, &(x), sizeof(x))

/* test hook (tests/test_faults.sh): sleep this many ms between writing the temporary file and the rename */
static void test_delay(void) {
  const char *e = getenv("EXMY_TEST_CKPT_DELAY_MS");
  const long ms = e ? atol(e) : 0;
  if (ms > 0) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) && errno == EINTR) {}
  }
}

int xp_ckpt_save(const char *path, const xp_ckpt_state *s, char *err, size_t errlen) {
  xp_replace out;
  char e0[EXMY_ERRLEN];
  if (xp_replace_open(&out, path, e0, sizeof e0)) return xp_errf(err, errlen, "checkpoint: %s", e0);
  writer w = {out.f, FNV_OFFSET, 0};
  const uint32_t version = VERSION, endian = 0x01020304u;
  wr(&w, MAGIC, 8);
  W(version);
  W(endian);
  const uint32_t tl = (uint32_t)strlen(s->prec_key);
  W(tl);
  wr(&w, s->prec_key, tl);
  W(s->step);
  W(s->optim->t);
  const uint64_t n = s->model->nparams;
  W(n);
  wr(&w, s->model->params, n * 4);
  wr(&w, s->optim->m, n * 4);
  wr(&w, s->optim->v, n * 4);
  W(s->fallback_left);
  W(s->fallbacks);
  W(s->checks);
  const xp_detector *d = s->det;
  W(d->window);
  W(d->factor);
  W(d->seen);
  W(d->first);
  W(d->spikes);
  W(d->first_spike);
  W(d->diverged_at);
  wr(&w, d->ring, (size_t)d->window * sizeof(double));
  const uint64_t nl = (uint64_t)s->nloss;
  W(nl);
  wr(&w, s->loss, nl * sizeof(double));
  const int32_t nlin = s->ctx->nlin;
  W(nlin);
  for (int i = 0; i < nlin; i++) {
    const exmy_recipe *rec[XP_NKIND];
    exmy_recipe_state *st[XP_NKIND];
    xp_ctx_recipes(s->ctx, i, rec, st);
    for (int t = 0; t < XP_NKIND; t++) {
      const exmy_recipe_state *r = st[t];
      const int32_t kind = rec[t]->kind, len = r->history ? r->history_len : 0;
      W(kind);
      W(len);
      W(r->scale);
      W(r->scale_inv);
      W(r->fmax);
      W(r->steps);
      wr(&w, r->history, (size_t)len * sizeof(float));
    }
  }
  const uint64_t sum = w.h;
  wr(&w, &sum, sizeof sum);
  int e = xp_replace_close(&out, w.err);
  if (e)
    return xp_errf(err, errlen, "checkpoint: writing '%s' failed: %s (the previous checkpoint '%s' is unchanged)", out.tmp,
                   strerror(e), path);
  test_delay();
  if ((e = xp_replace_rename(&out)))
    return xp_errf(err, errlen, "checkpoint: cannot rename '%s' to '%s': %s", out.tmp, path, strerror(e));
  return 0;
}

/* The whole file, checked: magic, version, byte order, checksum. */
static unsigned char *read_checked(const char *path, size_t *len, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    xp_errf(err, errlen, "resume: cannot open '%s': %s", path, strerror(errno));
    return NULL;
  }
  unsigned char *buf = NULL;
  long size = -1;
  if (!fseek(f, 0, SEEK_END)) size = ftell(f);
  if (size < 0 || fseek(f, 0, SEEK_SET)) {
    fclose(f);
    xp_errf(err, errlen, "resume: cannot read '%s': %s", path, strerror(errno));
    return NULL;
  }
  buf = malloc((size_t)size + 1);
  if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
    const int e = errno;
    fclose(f);
    free(buf);
    xp_errf(err, errlen, "resume: cannot read '%s': %s", path, buf ? strerror(e) : "out of memory");
    return NULL;
  }
  fclose(f);
  uint32_t version = 0, endian = 0;
  if (size < 16 || memcmp(buf, MAGIC, 8)) {
    free(buf);
    xp_errf(err, errlen, "resume: '%s' is not an exmy checkpoint", path);
    return NULL;
  }
  memcpy(&version, buf + 8, 4);
  memcpy(&endian, buf + 12, 4);
  if (version != VERSION) {
    free(buf);
    xp_errf(err, errlen, "resume: '%s' is a version %u checkpoint; this exmy reads version %u only", path, version,
            VERSION);
    return NULL;
  }
  if (endian != 0x01020304u) {
    free(buf);
    xp_errf(err, errlen, "resume: '%s' was written on a machine of the other byte order", path);
    return NULL;
  }
  uint64_t sum = 0;
  if (size >= 24) memcpy(&sum, buf + size - 8, 8);
  if (size < 24 || fnv1a(FNV_OFFSET, buf, (size_t)size - 8) != sum) {
    free(buf);
    xp_errf(err, errlen, "resume: '%s' is corrupt or truncated (checksum mismatch)", path);
    return NULL;
  }
  *len = (size_t)size - 8;
  return buf;
}

int xp_ckpt_load(const char *path, xp_ckpt_state *s, int *same_prec, char *err, size_t errlen) {
  size_t len = 0;
  unsigned char *buf = read_checked(path, &len, err, errlen);
  if (!buf) return -1;
  reader r = {buf, len, 16, 0};
  int rc = -1;
  uint32_t tl = 0;
  R(tl);
  if (r.bad || tl > 4096) {
    xp_errf(err, errlen, "resume: '%s' is not an exmy checkpoint", path);
    goto done;
  }
  char key[4097];
  rd(&r, key, tl);
  key[tl] = 0;
  *same_prec = !strcmp(key, s->prec_key);
  long step;
  R(step);
  R(s->optim->t);
  uint64_t n = 0;
  R(n);
  if (r.bad || n != s->model->nparams) {
    xp_errf(err, errlen, "resume: '%s' holds %llu parameters, this model has %zu (model settings differ)", path,
            (unsigned long long)n, s->model->nparams);
    goto done;
  }
  s->step = step;
  rd(&r, s->model->params, n * 4);
  rd(&r, s->optim->m, n * 4);
  rd(&r, s->optim->v, n * 4);
  R(s->fallback_left);
  R(s->fallbacks);
  R(s->checks);
  xp_detector *d = s->det;
  int window = 0;
  R(window);
  if (r.bad || window != d->window) {
    xp_errf(err, errlen, "resume: '%s' has spike_window %d, this run %d", path, window, d->window);
    goto done;
  }
  R(d->factor);
  R(d->seen);
  R(d->first);
  R(d->spikes);
  R(d->first_spike);
  R(d->diverged_at);
  rd(&r, d->ring, (size_t)window * sizeof(double));
  uint64_t nl = 0;
  R(nl);
  if (r.bad || nl > (r.len - r.off) / sizeof(double)) {
    xp_errf(err, errlen, "resume: '%s' is malformed (loss history)", path);
    goto done;
  }
  s->loss = malloc((nl + 1) * sizeof(double));
  s->nloss = (long)nl;
  if (!s->loss) {
    xp_errf(err, errlen, "out of memory");
    goto done;
  }
  rd(&r, s->loss, nl * sizeof(double));
  int32_t nlin = 0;
  R(nlin);
  if (r.bad || nlin != s->ctx->nlin) {
    xp_errf(err, errlen, "resume: '%s' has %d linear layers, this model %d (model settings differ)", path, (int)nlin,
            s->ctx->nlin);
    goto done;
  }
  for (int i = 0; i < nlin && !r.bad; i++) {
    const exmy_recipe *rec[XP_NKIND];
    exmy_recipe_state *st[XP_NKIND];
    xp_ctx_recipes(s->ctx, i, rec, st);
    for (int t = 0; t < XP_NKIND && !r.bad; t++) {
      exmy_recipe_state tmp;
      int32_t kind = 0, hlen = 0;
      R(kind);
      R(hlen);
      R(tmp.scale);
      R(tmp.scale_inv);
      R(tmp.fmax);
      R(tmp.steps);
      if (r.bad || hlen < 0 || (size_t)hlen > (r.len - r.off) / sizeof(float)) { r.bad = 1; break; }
      const unsigned char *hist = r.p + r.off;
      r.off += (size_t)hlen * sizeof(float);
      /* the scaling state carries over only into the same precision */
      exmy_recipe_state *rs = st[t];
      if (*same_prec && (int32_t)rec[t]->kind == kind && (rs->history ? rs->history_len : 0) == hlen) {
        rs->scale = tmp.scale;
        rs->scale_inv = tmp.scale_inv;
        rs->fmax = tmp.fmax;
        rs->steps = tmp.steps;
        if (hlen) memcpy(rs->history, hist, (size_t)hlen * sizeof(float));
      }
    }
  }
  if (r.bad || r.off != r.len) {
    xp_errf(err, errlen, "resume: '%s' is malformed (scaling state)", path);
    goto done;
  }
  rc = 0;
done:
  free(buf);
  return rc;
}
