/* replace.c: replacing a file atomically, safe against kills and against a
 * second writer of the same path.  The new content goes to a temporary file
 * of this writer's own (PATH.tmp.PID.TID), held under flock(2) from creation
 * to rename; it is flushed, fsynced, renamed over PATH and the folder
 * fsynced.  A shared name (PATH.tmp) let one writer rename or truncate
 * another's file ("cannot rename PATH.tmp: No such file or directory",
 * issue 34); a unique one cannot.  The temporary files of writers that died
 * (kill -9 mid-write) are removed by the next writer of the same path, and
 * only when their lock is free: a live writer's file is never touched. */
#include "experiments/xp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void dir_of(const char *path, char *dir, size_t n) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, n, ".");
  else snprintf(dir, n, "%.*s", (int)(slash == path ? 1 : slash - path), path);
}

/* Remove PATH.tmp.* files whose writer is gone (their flock is free). */
static void sweep_stale(const char *path, const char *mine) {
  char dir[XP_PATH + 64], stem[XP_PATH + 8];
  dir_of(path, dir, sizeof dir);
  const char *slash = strrchr(path, '/');
  snprintf(stem, sizeof stem, "%s.tmp.", slash ? slash + 1 : path);
  const size_t sl = strlen(stem);
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, stem, sl)) continue;
    char p[2 * XP_PATH + 80];
    if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p || !strcmp(p, mine)) continue;
    const int fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat a, b;
    /* locked: its writer is alive; unlink only the file we hold (not a new one of that name) */
    if (!flock(fd, LOCK_EX | LOCK_NB) && !fstat(fd, &a) && !lstat(p, &b) && a.st_ino == b.st_ino &&
        a.st_dev == b.st_dev)
      unlink(p);
    close(fd); /* drops the lock */
  }
  closedir(d);
}

int xp_replace_open(xp_replace *w, const char *path, char *err, size_t errlen) {
  memset(w, 0, sizeof *w);
  w->fd = -1;
  w->path = path;
  snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld.%ld", path, (long)getpid(), (long)syscall(SYS_gettid));
  for (int tries = 0; tries < 8; tries++) {
    w->fd = open(w->tmp, O_RDWR | O_CREAT | O_CLOEXEC, 0666); /* as fopen: the umask decides */
    if (w->fd < 0) return xp_errf(err, errlen, "cannot write '%s': %s", w->tmp, strerror(errno));
    struct stat st;
    /* a sweeper may have unlinked the name between our open and our lock: then again */
    if (!flock(w->fd, LOCK_EX) && !fstat(w->fd, &st) && st.st_nlink > 0 && !ftruncate(w->fd, 0)) break;
    close(w->fd);
    w->fd = -1;
  }
  if (w->fd < 0) return xp_errf(err, errlen, "cannot write '%s': %s", w->tmp, strerror(errno ? errno : EIO));
  /* the FILE owns a copy of the descriptor: fclose keeps the lock until the rename */
  const int fd2 = fcntl(w->fd, F_DUPFD_CLOEXEC, 0);
  if (fd2 < 0 || !(w->f = fdopen(fd2, "wb"))) {
    const int e = errno;
    if (fd2 >= 0) close(fd2);
    xp_replace_abort(w);
    return xp_errf(err, errlen, "cannot write '%s': %s", w->tmp, strerror(e));
  }
  sweep_stale(path, w->tmp);
  return 0;
}

int xp_replace_close(xp_replace *w, int err_so_far) {
  int e = err_so_far;
  errno = 0;
  if (!e && (ferror(w->f) || fflush(w->f))) e = errno ? errno : EIO;
  if (!e && fsync(fileno(w->f))) e = errno ? errno : EIO;
  errno = 0;
  if (fclose(w->f) && !e) e = errno ? errno : EIO;
  w->f = NULL;
  if (e) xp_replace_abort(w);
  return e;
}

int xp_replace_rename(xp_replace *w) {
  int e = 0;
  if (rename(w->tmp, w->path)) e = errno;
  if (e) xp_replace_abort(w);
  else {
    close(w->fd);
    w->fd = -1;
    char dir[XP_PATH + 64];
    dir_of(w->path, dir, sizeof dir);
    const int dfd = open(dir, O_RDONLY | O_CLOEXEC); /* make the rename durable; best effort */
    if (dfd >= 0) {
      (void)fsync(dfd);
      close(dfd);
    }
  }
  return e;
}

void xp_replace_abort(xp_replace *w) {
  if (w->f) fclose(w->f);
  w->f = NULL;
  if (w->fd >= 0) {
    unlink(w->tmp); /* still ours: we hold its lock */
    close(w->fd);
  }
  w->fd = -1;
}
