/* train_out.c: what a training run writes (docs/training.md, "Runs"):
 * the logs (loss.csv, stats.csv, stats.jsonl, outliers.csv), config.txt,
 * summary.json and the progress on stderr. */
#include "experiments/train.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *const log_name[XP_NLOG] = {"loss.csv", "stats.csv", "stats.jsonl", "outliers.csv"};

double xp_run_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* fclose, and any write error since fopen: -1 with a message naming the file */
static int close_checked(FILE *f, const char *path, char *err, size_t errlen) {
  const int e0 = errno, bad = ferror(f);
  errno = 0;
  const int fail = fclose(f);
  if (bad || fail) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(fail && errno ? errno : e0 ? e0 : EIO));
  return 0;
}

static void json_double(FILE *f, const char *key, double v, int comma) {
  if (isfinite(v)) fprintf(f, "  \"%s\": %.9g%s\n", key, v, comma ? "," : "");
  else fprintf(f, "  \"%s\": null%s\n", key, comma ? "," : "");
}

int xp_run_write_summary(const xp_run *r, const xp_config *c, const xp_result *res, char *err, size_t errlen) {
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/summary.json", c->out_dir);
  FILE *f = fopen(path, "w");
  if (!f) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
  fprintf(f, "{\n");
  fprintf(f, "  \"steps_done\": %ld,\n", res->steps_done);
  json_double(f, "first_loss", res->first_loss, 1);
  json_double(f, "final_loss", res->final_loss, 1);
  json_double(f, "final_loss_avg", res->final_loss_avg, 1);
  json_double(f, "min_loss", res->min_loss, 1);
  json_double(f, "val_loss", res->val_loss, 1);
  fprintf(f, "  \"spikes\": %ld,\n  \"first_spike\": %ld,\n  \"diverged_at\": %ld,\n", res->spikes, res->first_spike,
          res->diverged_at);
  fprintf(f, "  \"checks\": %ld,\n  \"fallbacks\": %ld,\n", res->checks, res->fallbacks);
  json_double(f, "seconds", res->seconds, 1);
  json_double(f, "tokens_per_s", res->tokens_per_s, 1);
  fprintf(f, "  \"nparams\": %zu,\n  \"config\": [\n", res->nparams);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (m) {
    xp_config_write(r->written, m);
    fclose(m);
    int first = 1;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      fprintf(f, "%s    \"", first ? "" : ",\n");
      for (char *p = line; *p; p++) {
        if (*p == '"' || *p == '\\') fputc('\\', f);
        fputc(*p, f);
      }
      fputc('"', f);
      first = 0;
    }
    free(buf);
  }
  fprintf(f, "\n  ]\n}\n");
  return close_checked(f, path, err, errlen);
}

static void progress_line(const xp_config *c, long step, double loss, double lr, double sec_per_step, int mode,
                          int tty) {
  const long done = step + 1, total = c->stop_after ? c->stop_after : c->steps;
  const double eta = sec_per_step * (double)(total - done);
  if (tty) {
    char bar[31];
    const int w = (int)(30.0 * (double)done / (double)(total ? total : 1));
    for (int i = 0; i < 30; i++) bar[i] = i < w ? '#' : '.';
    bar[30] = 0;
    fprintf(stderr, "\r[%s] step %ld/%ld loss %.4f lr %.2e %.1f ms/step ETA %.0fs%s   ", bar, done, total, loss, lr,
            1e3 * sec_per_step, eta, mode == XP_MODE_HIGH ? " (bf16 fallback)" : "");
    if (done == total) fputc('\n', stderr);
  } else {
    fprintf(stderr, "step %ld/%ld loss %.4f lr %.2e %.1f ms/step%s\n", done, total, loss, lr, 1e3 * sec_per_step,
            mode == XP_MODE_HIGH ? " (bf16 fallback)" : "");
  }
  fflush(stderr);
}

/* Open log i.  A resumed run (resume: the checkpoint's step `start`) keeps
 * the header and the complete rows of steps before `start` and drops the
 * rest (rows a run wrote after its last checkpoint before it died), so the
 * file continues exactly as an uninterrupted run's; *rows: the rows kept. */
static int open_log(const xp_config *c, xp_run *r, int i, int resume, long start, long *rows, char *err,
                    size_t errlen) {
  char *path = r->log_path[i];
  snprintf(path, sizeof r->log_path[i], "%s/%s", c->out_dir, log_name[i]);
  FILE *f = resume ? fopen(path, "r+") : NULL;
  if (!f && resume && errno != ENOENT) return xp_errf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
  long keep = 0;
  *rows = 0;
  if (f) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0 && line[n - 1] == '\n') {
      const char *p = line;
      if (i == XP_LOG_JSONL) {
        if (strncmp(p, "{\"step\":", 8)) break;
        p += 8;
      }
      if (*p >= '0' && *p <= '9') {
        if (strtol(p, NULL, 10) >= start) break;
        ++*rows;
      } else if (i == XP_LOG_JSONL || keep) break; /* a csv's header is its first line */
      keep += (long)n;
    }
    free(line);
    if (ferror(f) || fflush(f) || ftruncate(fileno(f), keep) || fseek(f, keep, SEEK_SET)) {
      const int e = errno;
      fclose(f);
      return xp_errf(err, errlen, "cannot rewrite '%s': %s", path, strerror(e));
    }
  } else if (!(f = fopen(path, "w"))) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
  r->log[i] = f;
  if (keep == 0) {
    if (i == XP_LOG_LOSS) fprintf(f, "step,loss,lr,grad_norm,mode,spike\n");
    if (i == XP_LOG_STATS) xp_ctx_stats_header(f);
    if (i == XP_LOG_OUTLIERS) {
      fputs("step", f);
      xp_model_outliers_header(&r->model, f);
      fputc('\n', f);
    }
  }
  return 0;
}

int xp_run_logs_check(xp_run *r, int flush, char *err, size_t errlen) {
  const int e0 = errno;
  for (int i = 0; i < XP_NLOG; i++) {
    FILE *f = r->log[i];
    if (!f) continue;
    if (ferror(f)) return xp_errf(err, errlen, "cannot write '%s': %s", r->log_path[i], strerror(e0 ? e0 : EIO));
    errno = 0;
    if (flush && (fflush(f) || fsync(fileno(f))))
      return xp_errf(err, errlen, "cannot write '%s': %s", r->log_path[i], strerror(errno ? errno : EIO));
  }
  return 0;
}

int xp_run_logs_close(xp_run *r, char *err, size_t errlen) {
  int rc = 0;
  for (int i = 0; i < XP_NLOG; i++) {
    if (!r->log[i]) continue;
    if (close_checked(r->log[i], r->log_path[i], rc ? NULL : err, rc ? 0 : errlen)) rc = -1;
    r->log[i] = NULL;
  }
  return rc;
}

/* config.txt (and summary.json's config): the run's settings without
 * `resume`, so a resumed run's files equal an uninterrupted run's */
static int write_config(const xp_config *c, char *err, size_t errlen) {
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/config.txt", c->out_dir);
  FILE *f = fopen(path, "w");
  if (!f) return xp_errf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
  xp_config_write(c, f);
  return close_checked(f, path, err, errlen);
}

int xp_run_open_outputs(xp_run *r, const xp_config *c, char *err, size_t errlen) {
  if (!c->out_dir[0]) return 0;
  mkdir(c->out_dir, 0777);
  /* a resumed run continues its files from the checkpoint's step; a new file gets its header */
  const int resumed = c->resume[0] != 0;
  long rows = 0;
  if (open_log(c, r, XP_LOG_LOSS, resumed, r->start, &rows, err, errlen)) return -1;
  if (resumed && rows != r->start && c->progress)
    fprintf(stderr, "note: %s holds %ld of the %ld rows before step %ld (the missing ones are not rewritten)\n",
            r->log_path[XP_LOG_LOSS], rows, r->start, r->start);
  if (c->stats_every) {
    if (open_log(c, r, XP_LOG_STATS, resumed, r->start, &rows, err, errlen)) return -1;
    if (open_log(c, r, XP_LOG_JSONL, resumed, r->start, &rows, err, errlen)) return -1;
  }
  if (c->outliers_every && open_log(c, r, XP_LOG_OUTLIERS, resumed, r->start, &rows, err, errlen)) return -1;
  if (!(r->written = malloc(sizeof *r->written))) return xp_errf(err, errlen, "out of memory");
  *r->written = *c;
  r->written->resume[0] = 0;
  r->written->stop = NULL;
  return write_config(r->written, err, errlen);
}

int xp_run_log_step(xp_run *r, const xp_config *c, const xp_step *st, char *err, size_t errlen) {
  const long s = st->s;
  FILE *const *log = r->log;
  if (log[XP_LOG_LOSS])
    fprintf(log[XP_LOG_LOSS], "%ld,%.9g,%.9g,%.9g,%s,%d\n", s, st->loss, st->lr, st->gnorm,
            st->mode == XP_MODE_HIGH ? "high" : "fp8", st->verdict == 1);
  if (r->ctx.collect_stats && log[XP_LOG_STATS]) xp_ctx_stats_write(&r->ctx, s, log[XP_LOG_STATS], log[XP_LOG_JSONL]);
  if (st->outliers && log[XP_LOG_OUTLIERS]) {
    fprintf(log[XP_LOG_OUTLIERS], "%ld", s);
    for (int i = 0; i < r->ocols; i++) fprintf(log[XP_LOG_OUTLIERS], ",%.9g", r->orow[i]);
    fputc('\n', log[XP_LOG_OUTLIERS]);
  }
  if (xp_run_logs_check(r, 0, err, errlen)) return -1;
  if (c->progress && (r->tty || (s + 1) % c->log_every == 0 || s + 1 == r->end))
    progress_line(c, s, st->loss, st->lr, (xp_run_now() - r->tloop) / (double)(s - r->start + 1), st->mode, r->tty);
  return 0;
}
