/* lock.c: one writer per results folder.  Two processes started on the same
 * folder by mistake (a rerun while a killed script's exmy still runs, two
 * shells, two Slurm jobs with one --out) would interleave their files; the
 * second refuses to start instead.  The lock is flock(2) on DIR/.lock, held
 * until the process ends or xp_dir_unlock: the kernel drops it when the
 * holder dies, even by kill -9, so a stale lock never blocks a rerun.  The
 * file holds the holder's pid for the message; it is never removed (a
 * removed lock file lets two processes lock two different files). */
#include "experiments/xp.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

int xp_dir_lock(const char *dir, int shared, char *err, size_t errlen) {
  char p[XP_PATH + 16];
  if (snprintf(p, sizeof p, "%s/.lock", dir) >= (int)sizeof p)
    return xp_errf(err, errlen, "folder '%.60s...' is too long", dir);
  const int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return xp_errf(err, errlen, "cannot lock folder '%s': %s: %s", dir, p, strerror(errno));
  if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB)) {
    const int e = errno;
    char who[32] = "";
    const ssize_t n = e == EWOULDBLOCK ? pread(fd, who, sizeof who - 1, 0) : -1;
    close(fd);
    if (e != EWOULDBLOCK) return xp_errf(err, errlen, "cannot lock folder '%s': %s", dir, strerror(e));
    const long pid = n > 0 ? strtol(who, NULL, 10) : 0;
    char by[48] = "another exmy";
    if (pid > 0) snprintf(by, sizeof by, "another exmy (pid %ld)", pid);
    xp_errf(err, errlen, "folder '%s' is in use by %s", dir, by);
    return -2;
  }
  char me[32];
  const int n = snprintf(me, sizeof me, "%ld\n", (long)getpid());
  if (!shared && !ftruncate(fd, 0)) (void)!pwrite(fd, me, (size_t)n, 0);
  else if (shared) (void)!pwrite(fd, me, (size_t)n, 0); /* one of the holders */
  return fd;
}

void xp_dir_unlock(int fd) {
  if (fd >= 0) close(fd);
}
