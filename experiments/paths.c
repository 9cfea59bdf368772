/* paths.c: folders the engine and the command write into. */
#include "experiments/xp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int xp_mkdir_p(const char *path, char *err, size_t errlen) {
  char tmp[4096];
  struct stat st;
  if (strlen(path) >= sizeof tmp) return xp_errf(err, errlen, "'%.60s...' is too long", path);
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1;; p++) {
    if (*p != '/' && *p) continue;
    const char c = *p;
    *p = 0;
    if (mkdir(tmp, 0777) && errno != EEXIST)
      return xp_errf(err, errlen, "cannot create '%s': %s: %s", path, tmp, strerror(errno));
    if (stat(tmp, &st) || !S_ISDIR(st.st_mode))
      return xp_errf(err, errlen, "cannot create '%s': '%s' is not a folder", path, tmp);
    if (!c) break;
    *p = c;
    while (p[1] == '/') p++;
  }
  return 0;
}
