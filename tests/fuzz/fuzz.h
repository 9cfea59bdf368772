/* fuzz.h: helpers shared by the libFuzzer targets (tests/fuzz/fuzz_*.c).
 * Built only by `make fuzz` / tests/fuzz/build.sh with clang
 * -fsanitize=fuzzer,address,undefined; never part of the normal build. */
#ifndef EXMY_FUZZ_H
#define EXMY_FUZZ_H
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A property failed: print it and abort, so libFuzzer saves the input. */
#define FUZZ_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      fprintf(stderr, "fuzz property failed at %s:%d: %s\n  ", __FILE__,  \
              __LINE__, #cond);                                            \
      fprintf(stderr, __VA_ARGS__);                                        \
      fputc('\n', stderr);                                                 \
      abort();                                                             \
    }                                                                      \
  } while (0)

/* The input as a NUL-terminated string (stops at an embedded NUL, as a C
 * caller's string would).  Free with free(). */
static inline char *fuzz_str(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = 0;
  return s;
}

/* An in-memory file (memfd) that the file readers open by name
 * (/proc/self/fd/N): the real fopen/fstat/fread path, no disk.  One per
 * slot, made once, rewritten per execution. */
typedef struct { int fd; char path[64]; } fuzz_file;
static inline void fuzz_file_set(fuzz_file *f, const void *data, size_t size) {
  if (f->fd <= 0) {
    f->fd = memfd_create("exmy-fuzz", 0);
    if (f->fd < 0) { perror("memfd_create"); abort(); }
    snprintf(f->path, sizeof f->path, "/proc/self/fd/%d", f->fd);
  }
  if (ftruncate(f->fd, 0) || lseek(f->fd, 0, SEEK_SET)) abort(); /* writers fdopen a dup */
  size_t off = 0;
  while (off < size) {
    ssize_t w = pwrite(f->fd, (const char *)data + off, size - off, (off_t)off);
    if (w <= 0) abort();
    off += (size_t)w;
  }
}
/* Everything in f (for round trips through a writer). */
static inline char *fuzz_file_get(fuzz_file *f, size_t *len) {
  const off_t n = lseek(f->fd, 0, SEEK_END);
  lseek(f->fd, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (!b || pread(f->fd, b, (size_t)n, 0) != (ssize_t)n) abort();
  b[n] = 0;
  *len = (size_t)n;
  return b;
}
#endif
