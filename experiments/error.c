/* error.c: the engine's one-line error messages (every file of experiments/
 * reports through it, so it depends on nothing). */
#include "experiments/xp.h"

#include <stdarg.h>

int xp_errf(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}
