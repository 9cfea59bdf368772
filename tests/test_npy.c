/* test_npy.c: .npy reading and writing (formats/npy.c).
 *
 *   test_npy [DIR]
 *
 * Default run (self-contained): reads byte-exact files as numpy 2.x writes
 * them (embedded below; generated once with np.save / write_array and checked
 * against numpy), checks that exmy_npy_write reproduces numpy's bytes, round
 * trips every dtype and shape (0-d, 1-d, 2-d, 3-d, 8-d, empty), and feeds the
 * reader bad files (truncated at every length, lying header lengths, absurd
 * shapes, bad headers, unsupported dtypes, Fortran order, random byte
 * corruption), each of which must give -1 and a one-line message naming the
 * file.  Seed for the corruption pass: env EXMY_TEST_SEED (default below).
 *
 * With DIR: also reads files numpy wrote there, made by
 *
 *   import numpy as np, sys; d = sys.argv[1]
 *   for t in ['f4','f8','u1','u2','u4','u8']:
 *     for e in ['<', '>']:
 *       for s in [(), (5,), (2,3), (0,), (3,0), (2,3,4), (1,2,1,2,1,1,1,2)]:
 *         n = 1
 *         for k in s: n *= k
 *         a = (np.arange(n) % 251).astype(e + t).reshape(s)
 *         np.save('%s/%s%s_%s.npy' % (d, 'be_' if e == '>' else '',
 *                 t, 'x'.join(map(str, s)) or 'scalar'), a)
 *
 * (element i of every array is i % 251), and checks exmy's copy of each
 * little-endian one is byte-identical (reported as a note: older numpy
 * versions pad headers differently).
 *
 * EXMY_TEST_KEEP=1 keeps the temporary directory; EXMY_TEST_VERBOSE=1 prints
 * every expected error message.  Exit 0 pass, 1 fail (never 77). */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEFAULT_SEED 0x5eed0000e8f1c0deULL

/* Counted checks, the seed and the summary line: testutil.h. */
#define fail(...) CHECK(0, __VA_ARGS__)

static char tmpdir[512];
static char **created;
static size_t n_created, cap_created;

static void remember(const char *path) {
  for (size_t i = 0; i < n_created; i++)
    if (strcmp(created[i], path) == 0) return;
  if (n_created == cap_created) {
    cap_created = cap_created ? 2 * cap_created : 64;
    created = realloc(created, cap_created * sizeof *created);
    if (!created) {
      printf("out of memory\n");
      exit(1);
    }
  }
  created[n_created++] = strdup(path);
}

static void tpath(char *buf, size_t len, const char *name) {
  snprintf(buf, len, "%s/%s", tmpdir, name);
  remember(buf);
}

static int write_raw(const char *path, const void *bytes, size_t n) {
  remove(path); /* a fresh file: truncating one makes ext4 flush it on close */
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  if (n && fwrite(bytes, 1, n, f) != n) {
    fclose(f);
    return -1;
  }
  return fclose(f);
}

static unsigned char *read_raw(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  unsigned char *b = malloc(cap);
  for (;;) {
    if (len == cap) b = realloc(b, cap *= 2);
    size_t r = fread(b + len, 1, cap - len, f);
    len += r;
    if (r == 0) break;
  }
  fclose(f);
  *n = len;
  return b;
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* A failed read: -1, data NULL, a one-line message that names the file and
 * contains want (if not NULL). */
static void expect_read_error(const char *path, const char *what, const char *want) {
  exmy_array a;
  char err[EXMY_ERRLEN];
  memset(&a, 0xAB, sizeof a);
  strcpy(err, "(untouched)");
  int rc = exmy_npy_read(path, &a, err, sizeof err);
  CHECK(rc == -1, "%s: bad input '%s' was accepted (rc %d)", path, what, rc);
  if (rc != -1) {
    exmy_array_free(&a);
    return;
  }
  CHECK(a.data == NULL, "%s: '%s': data not NULL after an error", path, what);
  CHECK(strstr(err, path) != NULL, "%s: '%s': message does not name the file: %s", path, what, err);
  CHECK(strchr(err, '\n') == NULL && strlen(err) > strlen(path) + 2,
        "%s: '%s': message is not one nonempty line: %s", path, what, err);
  /* Look for want after the leading "path: ", which may contain it too. */
  const char *rest = strncmp(err, path, strlen(path)) == 0 ? err + strlen(path) : err;
  if (want)
    CHECK(strstr(rest, want) != NULL, "%s: '%s': message lacks \"%s\": %s", path, what, want, err);
  if (getenv("EXMY_TEST_VERBOSE")) printf("  %-40s -> %s\n", what, err);
}

static void expect_raw_error(const char *name, const void *bytes, size_t n, const char *want) {
  char path[1024];
  tpath(path, sizeof path, name);
  if (write_raw(path, bytes, n)) {
    fail("cannot write %s", path);
    return;
  }
  expect_read_error(path, name, want);
}

/* Build a .npy image: magic, version major.0, header text padded as numpy
 * pads it, then data.  Returns malloc'ed bytes. */
static unsigned char *build_npy(int major, const char *dict, const void *data, size_t dlen,
                                size_t *n) {
  size_t lb = major == 1 ? 2 : 4;
  size_t hl = strlen(dict) + 1;
  size_t pad = 64 - ((8 + lb + hl) % 64);
  size_t total = 8 + lb + hl + pad + dlen;
  unsigned char *b = malloc(total);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = 0;
  size_t L = hl + pad;
  b[8] = (unsigned char)L;
  b[9] = (unsigned char)(L >> 8);
  if (lb == 4) {
    b[10] = (unsigned char)(L >> 16);
    b[11] = (unsigned char)(L >> 24);
  }
  memcpy(b + 8 + lb, dict, hl - 1);
  memset(b + 8 + lb + hl - 1, ' ', pad);
  b[8 + lb + hl + pad - 1] = '\n';
  if (dlen) memcpy(b + 8 + lb + hl + pad, data, dlen);
  *n = total;
  return b;
}

static void expect_dict_error(const char *name, const char *dict, size_t dlen, const char *want) {
  static const unsigned char zeros[256];
  size_t n;
  unsigned char *b = build_npy(1, dict, zeros, dlen, &n);
  expect_raw_error(name, b, n, want);
  free(b);
}

/* A dict that must be accepted, with the given dtype and shape. */
static void expect_dict_ok(const char *name, const char *dict, size_t dlen, exmy_dtype dt,
                           int ndim, const size_t *shape) {
  static const unsigned char zeros[256];
  char path[1024];
  size_t n;
  unsigned char *b = build_npy(1, dict, zeros, dlen, &n);
  tpath(path, sizeof path, name);
  write_raw(path, b, n);
  free(b);
  exmy_array a;
  char err[EXMY_ERRLEN] = "";
  int rc = exmy_npy_read(path, &a, err, sizeof err);
  CHECK(rc == 0, "%s: valid header rejected: %s", name, err);
  if (rc) return;
  CHECK(a.dtype == dt, "%s: dtype %d, expected %d", name, (int)a.dtype, (int)dt);
  CHECK(a.ndim == ndim, "%s: ndim %d, expected %d", name, a.ndim, ndim);
  for (int d = 0; d < ndim && d < a.ndim; d++)
    CHECK(a.shape[d] == shape[d], "%s: shape[%d] = %zu, expected %zu", name, d, a.shape[d], shape[d]);
  exmy_array_free(&a);
}

/* ---- files numpy 2.4 wrote (np.save unless a version is named) ---------- */
/* f4_scalar: <f4 () */
static const double f4_scalar_vals[] = {0x1.8000000000000p+0};
static const char f4_scalar_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape'"
    ": (), }                                                              \012"
    "\000\000\300\077";
#define f4_scalar_LEN 132
/* f4_scalar_neg: <f4 () */
static const double f4_scalar_neg_vals[] = {-0x0.0p+0};
static const char f4_scalar_neg_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape'"
    ": (), }                                                              \012"
    "\000\000\000\200";
#define f4_scalar_neg_LEN 132
/* u1_3: |u1 (3,) */
static const uint64_t u1_3_vals[] = {UINT64_C(1), UINT64_C(2), UINT64_C(255)};
static const char u1_3_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '|u1', 'fortran_order': False, 'shape'"
    ": (3,), }                                                            \012"
    "\001\002\377";
#define u1_3_LEN 131
/* f8_2x3: <f8 (2, 3) */
static const double f8_2x3_vals[] = {0x1.0000000000000p-1, -0x1.0000000000000p+0, 0x1.7e43c8800759cp+996, -0x0.0p+0, INFINITY, 0x0.0000000000001p-1022};
static const char f8_2x3_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<f8', 'fortran_order': False, 'shape'"
    ": (2, 3), }                                                          \012"
    "\000\000\000\000\000\000\340\077\000\000\000\000\000\000\360\277\234u\000"
    "\210<\3447~\000\000\000\000\000\000\000\200\000\000\000\000\000\000\360"
    "\177\001\000\000\000\000\000\000\000";
#define f8_2x3_LEN 176
/* u2_0x4: <u2 (0, 4) */
static const uint64_t u2_0x4_vals[] = {0};
static const char u2_0x4_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<u2', 'fortran_order': False, 'shape'"
    ": (0, 4), }                                                          \012";
#define u2_0x4_LEN 128
/* u2_3x0: <u2 (3, 0) */
static const uint64_t u2_3x0_vals[] = {0};
static const char u2_3x0_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<u2', 'fortran_order': False, 'shape'"
    ": (3, 0), }                                                          \012";
#define u2_3x0_LEN 128
/* f4_0: <f4 (0,) */
static const double f4_0_vals[] = {0};
static const char f4_0_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape'"
    ": (0,), }                                                            \012";
#define f4_0_LEN 128
/* u4_5: <u4 (5,) */
static const uint64_t u4_5_vals[] = {UINT64_C(0), UINT64_C(1), UINT64_C(65536), UINT64_C(2147483648), UINT64_C(4294967295)};
static const char u4_5_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<u4', 'fortran_order': False, 'shape'"
    ": (5,), }                                                            \012"
    "\000\000\000\000\001\000\000\000\000\000\001\000\000\000\000\200\377\377"
    "\377\377";
#define u4_5_LEN 148
/* u8_1: <u8 (1,) */
static const uint64_t u8_1_vals[] = {UINT64_C(18446744073709551615)};
static const char u8_1_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<u8', 'fortran_order': False, 'shape'"
    ": (1,), }                                                            \012"
    "\377\377\377\377\377\377\377\377";
#define u8_1_LEN 136
/* u8_2: <u8 (2,) */
static const uint64_t u8_2_vals[] = {UINT64_C(1), UINT64_C(81985529216486895)};
static const char u8_2_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<u8', 'fortran_order': False, 'shape'"
    ": (2,), }                                                            \012"
    "\001\000\000\000\000\000\000\000\357\315\253\211gE#\001";
#define u8_2_LEN 144
/* f4_2x1x3: <f4 (2, 1, 3) */
static const double f4_2x1x3_vals[] = {0x1.0000000000000p+0, 0x1.0000000000000p+1, 0x1.8000000000000p+1, -0x1.0000000000000p+2, 0x1.0000000000000p-2, 0x1.fffffe0000000p+127};
static const char f4_2x1x3_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': False, 'shape'"
    ": (2, 1, 3), }                                                       \012"
    "\000\000\200\077\000\000\000@\000\000@@\000\000\200\300\000\000\200>\377"
    "\377\177\177";
#define f4_2x1x3_LEN 152
/* u1_8d: |u1 (1, 2, 1, 2, 1, 1, 1, 2) */
static const uint64_t u1_8d_vals[] = {UINT64_C(0), UINT64_C(1), UINT64_C(2), UINT64_C(3), UINT64_C(4), UINT64_C(5), UINT64_C(6), UINT64_C(7)};
static const char u1_8d_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '|u1', 'fortran_order': False, 'shape'"
    ": (1, 2, 1, 2, 1, 1, 1, 2), }                                        \012"
    "\000\001\002\003\004\005\006\007";
#define u1_8d_LEN 136
/* u2_12x10: <u2 (12, 10) */
static const uint64_t u2_12x10_vals[] = {UINT64_C(0), UINT64_C(1), UINT64_C(2), UINT64_C(3), UINT64_C(4), UINT64_C(5), UINT64_C(6), UINT64_C(7), UINT64_C(8), UINT64_C(9), UINT64_C(10), UINT64_C(11), UINT64_C(12), UINT64_C(13), UINT64_C(14), UINT64_C(15), UINT64_C(16), UINT64_C(17), UINT64_C(18), UINT64_C(19), UINT64_C(20), UINT64_C(21), UINT64_C(22), UINT64_C(23), UINT64_C(24), UINT64_C(25), UINT64_C(26), UINT64_C(27), UINT64_C(28), UINT64_C(29), UINT64_C(30), UINT64_C(31), UINT64_C(32), UINT64_C(33), UINT64_C(34), UINT64_C(35), UINT64_C(36), UINT64_C(37), UINT64_C(38), UINT64_C(39), UINT64_C(40), UINT64_C(41), UINT64_C(42), UINT64_C(43), UINT64_C(44), UINT64_C(45), UINT64_C(46), UINT64_C(47), UINT64_C(48), UINT64_C(49), UINT64_C(50), UINT64_C(51), UINT64_C(52), UINT64_C(53), UINT64_C(54), UINT64_C(55), UINT64_C(56), UINT64_C(57), UINT64_C(58), UINT64_C(59), UINT64_C(60), UINT64_C(61), UINT64_C(62), UINT64_C(63), UINT64_C(64), UINT64_C(65), UINT64_C(66), UINT64_C(67), UINT64_C(68), UINT64_C(69), UINT64_C(70), UINT64_C(71), UINT64_C(72), UINT64_C(73), UINT64_C(74), UINT64_C(75), UINT64_C(76), UINT64_C(77), UINT64_C(78), UINT64_C(79), UINT64_C(80), UINT64_C(81), UINT64_C(82), UINT64_C(83), UINT64_C(84), UINT64_C(85), UINT64_C(86), UINT64_C(87), UINT64_C(88), UINT64_C(89), UINT64_C(90), UINT64_C(91), UINT64_C(92), UINT64_C(93), UINT64_C(94), UINT64_C(95), UINT64_C(96), UINT64_C(97), UINT64_C(98), UINT64_C(99), UINT64_C(100), UINT64_C(101), UINT64_C(102), UINT64_C(103), UINT64_C(104), UINT64_C(105), UINT64_C(106), UINT64_C(107), UINT64_C(108), UINT64_C(109), UINT64_C(110), UINT64_C(111), UINT64_C(112), UINT64_C(113), UINT64_C(114), UINT64_C(115), UINT64_C(116), UINT64_C(117), UINT64_C(118), UINT64_C(119)};
static const char u2_12x10_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<u2', 'fortran_order': False, 'shape'"
    ": (12, 10), }                                                        \012"
    "\000\000\001\000\002\000\003\000\004\000\005\000\006\000\007\000\010\000"
    "\011\000\012\000\013\000\014\000\015\000\016\000\017\000\020\000\021\000"
    "\022\000\023\000\024\000\025\000\026\000\027\000\030\000\031\000\032\000"
    "\033\000\034\000\035\000\036\000\037\000 \000!\000\042\000#\000$\000%\000"
    "&\000'\000(\000)\000*\000+\000,\000-\000.\000/\0000\0001\0002\0003\000"
    "4\0005\0006\0007\0008\0009\000:\000;\000<\000=\000>\000\077\000@\000A\000"
    "B\000C\000D\000E\000F\000G\000H\000I\000J\000K\000L\000M\000N\000O\000"
    "P\000Q\000R\000S\000T\000U\000V\000W\000X\000Y\000Z\000[\000\134\000]\000"
    "^\000_\000`\000a\000b\000c\000d\000e\000f\000g\000h\000i\000j\000k\000"
    "l\000m\000n\000o\000p\000q\000r\000s\000t\000u\000v\000w\000";
#define u2_12x10_LEN 368
/* f4_v2: <f4 (2,) */
static const double f4_v2_vals[] = {0x1.0000000000000p+0, -0x1.0000000000000p+1};
static const char f4_v2_bytes[] =
    "\223NUMPY\002\000t\000\000\000{'descr': '<f4', 'fortran_order': False,"
    " 'shape': (2,), }                                                     "
    "     \012\000\000\200\077\000\000\000\300";
#define f4_v2_LEN 136
/* u1_v3: |u1 (2,) */
static const uint64_t u1_v3_vals[] = {UINT64_C(7), UINT64_C(9)};
static const char u1_v3_bytes[] =
    "\223NUMPY\003\000t\000\000\000{'descr': '|u1', 'fortran_order': False,"
    " 'shape': (2,), }                                                     "
    "     \012\007\011";
#define u1_v3_LEN 130
/* f4_be: >f4 (3,) */
static const double f4_be_vals[] = {0x1.0000000000000p+0, -0x1.4000000000000p+1, 0x1.0000000000000p-149};
static const char f4_be_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '>f4', 'fortran_order': False, 'shape'"
    ": (3,), }                                                            \012"
    "\077\200\000\000\300 \000\000\000\000\000\001";
#define f4_be_LEN 140
/* u2_be: >u2 (2,) */
static const uint64_t u2_be_vals[] = {UINT64_C(4660), UINT64_C(65534)};
static const char u2_be_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '>u2', 'fortran_order': False, 'shape'"
    ": (2,), }                                                            \012"
    "\0224\377\376";
#define u2_be_LEN 132
/* f8_be: >f8 (1,) */
static const double f8_be_vals[] = {0x1.8000000000000p+1};
static const char f8_be_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '>f8', 'fortran_order': False, 'shape'"
    ": (1,), }                                                            \012"
    "@\010\000\000\000\000\000\000";
#define f8_be_LEN 136
/* u8_be: >u8 (1,) */
static const uint64_t u8_be_vals[] = {UINT64_C(72623859790382856)};
static const char u8_be_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '>u8', 'fortran_order': False, 'shape'"
    ": (1,), }                                                            \012"
    "\001\002\003\004\005\006\007\010";
#define u8_be_LEN 136
/* u4_be: >u4 (1, 1) */
static const uint64_t u4_be_vals[] = {UINT64_C(16909060)};
static const char u4_be_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '>u4', 'fortran_order': False, 'shape'"
    ": (1, 1), }                                                          \012"
    "\001\002\003\004";
#define u4_be_LEN 132

typedef struct {
  const char *name;
  const char *bytes;
  size_t len;
  exmy_dtype dtype;
  int ndim;
  size_t shape[8];
  size_t count;
  const double *fvals;   /* float types */
  const uint64_t *uvals; /* unsigned types */
  int np_save_v1;        /* little-endian v1.0: exmy_npy_write must give these bytes */
} vector;

static const vector vectors[] = {
  {"f4_scalar", f4_scalar_bytes, f4_scalar_LEN, EXMY_DTYPE_F32, 0, {0}, 1, f4_scalar_vals, NULL, 1},
  {"f4_scalar_neg", f4_scalar_neg_bytes, f4_scalar_neg_LEN, EXMY_DTYPE_F32, 0, {0}, 1, f4_scalar_neg_vals, NULL, 1},
  {"u1_3", u1_3_bytes, u1_3_LEN, EXMY_DTYPE_U8, 1, {3}, 3, NULL, u1_3_vals, 1},
  {"f8_2x3", f8_2x3_bytes, f8_2x3_LEN, EXMY_DTYPE_F64, 2, {2, 3}, 6, f8_2x3_vals, NULL, 1},
  {"u2_0x4", u2_0x4_bytes, u2_0x4_LEN, EXMY_DTYPE_U16, 2, {0, 4}, 0, NULL, u2_0x4_vals, 1},
  {"u2_3x0", u2_3x0_bytes, u2_3x0_LEN, EXMY_DTYPE_U16, 2, {3, 0}, 0, NULL, u2_3x0_vals, 1},
  {"f4_0", f4_0_bytes, f4_0_LEN, EXMY_DTYPE_F32, 1, {0}, 0, f4_0_vals, NULL, 1},
  {"u4_5", u4_5_bytes, u4_5_LEN, EXMY_DTYPE_U32, 1, {5}, 5, NULL, u4_5_vals, 1},
  {"u8_1", u8_1_bytes, u8_1_LEN, EXMY_DTYPE_U64, 1, {1}, 1, NULL, u8_1_vals, 1},
  {"u8_2", u8_2_bytes, u8_2_LEN, EXMY_DTYPE_U64, 1, {2}, 2, NULL, u8_2_vals, 1},
  {"f4_2x1x3", f4_2x1x3_bytes, f4_2x1x3_LEN, EXMY_DTYPE_F32, 3, {2, 1, 3}, 6, f4_2x1x3_vals, NULL, 1},
  {"u1_8d", u1_8d_bytes, u1_8d_LEN, EXMY_DTYPE_U8, 8, {1, 2, 1, 2, 1, 1, 1, 2}, 8, NULL, u1_8d_vals, 1},
  {"u2_12x10", u2_12x10_bytes, u2_12x10_LEN, EXMY_DTYPE_U16, 2, {12, 10}, 120, NULL, u2_12x10_vals, 1},
  {"f4_v2", f4_v2_bytes, f4_v2_LEN, EXMY_DTYPE_F32, 1, {2}, 2, f4_v2_vals, NULL, 0},
  {"u1_v3", u1_v3_bytes, u1_v3_LEN, EXMY_DTYPE_U8, 1, {2}, 2, NULL, u1_v3_vals, 0},
  {"f4_be", f4_be_bytes, f4_be_LEN, EXMY_DTYPE_F32, 1, {3}, 3, f4_be_vals, NULL, 0},
  {"u2_be", u2_be_bytes, u2_be_LEN, EXMY_DTYPE_U16, 1, {2}, 2, NULL, u2_be_vals, 0},
  {"f8_be", f8_be_bytes, f8_be_LEN, EXMY_DTYPE_F64, 1, {1}, 1, f8_be_vals, NULL, 0},
  {"u8_be", u8_be_bytes, u8_be_LEN, EXMY_DTYPE_U64, 1, {1}, 1, NULL, u8_be_vals, 0},
  {"u4_be", u4_be_bytes, u4_be_LEN, EXMY_DTYPE_U32, 2, {1, 1}, 1, NULL, u4_be_vals, 0},
};
#define N_VECTORS (sizeof vectors / sizeof vectors[0])

/* Element i of an array as double (floats) or uint64 (unsigned). */
static double elem_f(const exmy_array *a, size_t i) {
  if (a->dtype == EXMY_DTYPE_F32) {
    float f;
    memcpy(&f, (const char *)a->data + 4 * i, 4);
    return f;
  }
  double d;
  memcpy(&d, (const char *)a->data + 8 * i, 8);
  return d;
}

static uint64_t elem_u(const exmy_array *a, size_t i) {
  const unsigned char *p = (const unsigned char *)a->data + i * exmy_dtype_size(a->dtype);
  uint64_t v = 0;
  for (size_t k = 0; k < exmy_dtype_size(a->dtype); k++) v |= (uint64_t)p[k] << (8 * k);
  return v;
}

static int same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

static void test_vectors(void) {
  for (size_t v = 0; v < N_VECTORS; v++) {
    const vector *t = &vectors[v];
    char path[1024], name[128];
    snprintf(name, sizeof name, "numpy_%s.npy", t->name);
    tpath(path, sizeof path, name);
    if (write_raw(path, t->bytes, t->len)) {
      fail("cannot write %s", path);
      continue;
    }
    exmy_array a;
    char err[EXMY_ERRLEN] = "";
    int rc = exmy_npy_read(path, &a, err, sizeof err);
    CHECK(rc == 0, "%s: numpy file rejected: %s", t->name, err);
    if (rc) continue;
    CHECK(a.dtype == t->dtype, "%s: dtype %s, expected %s", t->name, exmy_dtype_name(a.dtype),
          exmy_dtype_name(t->dtype));
    CHECK(a.ndim == t->ndim, "%s: ndim %d, expected %d", t->name, a.ndim, t->ndim);
    int shape_ok = a.ndim == t->ndim;
    for (int d = 0; shape_ok && d < t->ndim; d++) shape_ok = a.shape[d] == t->shape[d];
    CHECK(shape_ok, "%s: wrong shape", t->name);
    CHECK(a.count == t->count, "%s: count %zu, expected %zu", t->name, a.count, t->count);
    CHECK(a.count == 0 || a.data != NULL, "%s: no data", t->name);
    if (a.dtype == t->dtype && a.count == t->count) {
      for (size_t i = 0; i < t->count; i++) {
        if (t->fvals) {
          double g = elem_f(&a, i);
          CHECK(same_double(g, t->fvals[i]), "%s: element %zu is %a, expected %a", t->name, i, g,
                t->fvals[i]);
        } else {
          uint64_t g = elem_u(&a, i);
          CHECK(g == t->uvals[i], "%s: element %zu is 0x%llx, expected 0x%llx", t->name, i,
                (unsigned long long)g, (unsigned long long)t->uvals[i]);
        }
      }
    }
    /* Writing the same array must give numpy's bytes. */
    if (t->np_save_v1) {
      char out[1024], oname[160];
      snprintf(oname, sizeof oname, "exmy_%s.npy", t->name);
      tpath(out, sizeof out, oname);
      rc = exmy_npy_write(out, &a, err, sizeof err);
      CHECK(rc == 0, "%s: write failed: %s", t->name, err);
      size_t n = 0;
      unsigned char *b = rc == 0 ? read_raw(out, &n) : NULL;
      int same = b && n == t->len && memcmp(b, t->bytes, n) == 0;
      CHECK(same, "%s: exmy_npy_write bytes differ from np.save (%zu vs %zu bytes)", t->name, n,
            t->len);
      free(b);
    }
    exmy_array_free(&a);
    CHECK(a.data == NULL && a.count == 0, "%s: exmy_array_free did not clear the array", t->name);
    exmy_array_free(&a); /* twice is harmless */

    /* Every strict prefix of the file is an error. */
    char tpth[1024];
    snprintf(name, sizeof name, "prefix_%s.npy", t->name);
    tpath(tpth, sizeof tpth, name);
    for (size_t cut = 0; cut < t->len; cut++) {
      if (write_raw(tpth, t->bytes, cut)) {
        fail("cannot write %s", tpth);
        break;
      }
      exmy_array b;
      char e2[512] = "";
      rc = exmy_npy_read(tpth, &b, e2, sizeof e2);
      CHECK(rc == -1, "%s: prefix of %zu of %zu bytes was accepted", t->name, cut, t->len);
      if (rc == 0) exmy_array_free(&b);
      else {
        CHECK(strstr(e2, tpth) != NULL, "%s: prefix %zu: message does not name the file: %s",
              t->name, cut, e2);
        CHECK(cut < 6 || strstr(e2, "truncated") != NULL,
              "%s: prefix %zu: message does not say truncated: %s", t->name, cut, e2);
      }
    }
    /* Trailing bytes after the data are ignored, as numpy does. */
    {
      char *ext = malloc(t->len + 5);
      memcpy(ext, t->bytes, t->len);
      memcpy(ext + t->len, "junk\n", 5);
      write_raw(tpth, ext, t->len + 5);
      free(ext);
      exmy_array b;
      rc = exmy_npy_read(tpth, &b, err, sizeof err);
      CHECK(rc == 0 && b.count == t->count, "%s: trailing bytes: %s", t->name, rc ? err : "bad count");
      if (rc == 0) exmy_array_free(&b);
    }
  }
}

/* ---- round trips ---------------------------------------------------------- */

/* f2: np.save of ml_dtypes/numpy float16 (2, 3), descr '<f2' */
static const uint16_t ml_f2_bits[] = {0x3c00, 0xc000, 0x3800, 0x0, 0xdf00, 0x2000};
static const char ml_f2_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<f2', 'fortran_order': False, 'sh"
    "ape': (2, 3), }                                                   "
    "       \012\000<\000\300\0008\000\000\000\337\000 ";
#define ml_f2_LEN 140
/* bf16: np.save of ml_dtypes/numpy bfloat16 (2, 3), descr '<V2' */
static const uint16_t ml_bf16_bits[] = {0x3f80, 0xc000, 0x3f00, 0x0, 0xc3e0, 0x3c00};
static const char ml_bf16_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<V2', 'fortran_order': False, 'sh"
    "ape': (2, 3), }                                                   "
    "       \012\200\077\000\300\000\077\000\000\340\303\000<";
#define ml_bf16_LEN 140
/* e4m3fn: np.save of ml_dtypes/numpy float8_e4m3fn (6,), descr '<V1' */
static const uint16_t ml_e4m3fn_bits[] = {0x38, 0xc0, 0x30, 0x0, 0xfe, 0x4};
static const char ml_e4m3fn_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<V1', 'fortran_order': False, 'sh"
    "ape': (6,), }                                                     "
    "       \0128\3000\000\376\004";
#define ml_e4m3fn_LEN 134
/* e5m2: np.save of ml_dtypes/numpy float8_e5m2 (6,), descr '<f1' */
static const uint16_t ml_e5m2_bits[] = {0x3c, 0xc0, 0x38, 0x0, 0xdf, 0x20};
static const char ml_e5m2_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<f1', 'fortran_order': False, 'sh"
    "ape': (6,), }                                                     "
    "       \012<\3008\000\337 ";
#define ml_e5m2_LEN 134
/* e5m2_v1: np.save of ml_dtypes/numpy float8_e4m3fn (6,), descr '<V1' */
static const uint16_t ml_e5m2_v1_bits[] = {0x3c, 0xc0, 0x38, 0x0, 0xdf, 0x20};
static const char ml_e5m2_v1_bytes[] =
    "\223NUMPY\001\000v\000{'descr': '<V1', 'fortran_order': False, 'sh"
    "ape': (6,), }                                                     "
    "       \012<\3008\000\337 ";
#define ml_e5m2_v1_LEN 134

/* float16, and ml_dtypes' types as np.save writes them: read what numpy and
 * ml_dtypes write, write what np.load(...).view(ml_dtypes.X) reads back. */
static void expect_read_bits(const char *name, const char *bytes, size_t len, int as, exmy_dtype dt,
                             int ndim, const uint16_t *bits, size_t count) {
  char path[1024];
  tpath(path, sizeof path, name);
  write_raw(path, bytes, len);
  exmy_array a;
  char err[EXMY_ERRLEN] = "";
  int rc = as ? exmy_npy_read_as(path, dt, &a, err, sizeof err) : exmy_npy_read(path, &a, err, sizeof err);
  CHECK(rc == 0, "%s: read%s failed: %s", name, as ? "_as" : "", err);
  if (rc) return;
  CHECK(a.dtype == dt, "%s: dtype %s, expected %s", name, exmy_dtype_name(a.dtype), exmy_dtype_name(dt));
  CHECK(a.ndim == ndim && a.count == count, "%s: ndim %d count %zu, expected %d %zu", name, a.ndim, a.count,
        ndim, count);
  if (a.dtype == dt && a.count == count)
    for (size_t i = 0; i < count; i++)
      CHECK(elem_u(&a, i) == bits[i], "%s: element %zu is 0x%llx, expected 0x%x", name, i,
            (unsigned long long)elem_u(&a, i), bits[i]);
  exmy_array_free(&a);
}

static void expect_write_bytes(const char *name, exmy_dtype dt, int ndim, const size_t *shape,
                               const uint16_t *bits, size_t count, const char *bytes, size_t len) {
  char path[1024];
  tpath(path, sizeof path, name);
  unsigned char data[64];
  size_t sz = exmy_dtype_size(dt);
  for (size_t i = 0; i < count; i++)
    for (size_t k = 0; k < sz; k++) data[i * sz + k] = (unsigned char)(bits[i] >> (8 * k));
  exmy_array a;
  memset(&a, 0, sizeof a);
  a.dtype = dt;
  a.ndim = ndim;
  for (int d = 0; d < ndim; d++) a.shape[d] = shape[d];
  a.count = count;
  a.data = data;
  char err[EXMY_ERRLEN] = "";
  int rc = exmy_npy_write(path, &a, err, sizeof err);
  CHECK(rc == 0, "%s: write failed: %s", name, err);
  if (rc) return;
  size_t n;
  unsigned char *got = read_raw(path, &n);
  CHECK(got && n == len && memcmp(got, bytes, len) == 0, "%s: written bytes differ from np.save's (%zu vs %zu bytes)",
        name, got ? n : 0, len);
  free(got);
}

static void expect_read_as_error(const char *name, const char *bytes, size_t len, int as, exmy_dtype dt,
                                 const char *want) {
  char path[1024];
  tpath(path, sizeof path, name);
  write_raw(path, bytes, len);
  exmy_array a;
  char err[EXMY_ERRLEN] = "";
  int rc = as ? exmy_npy_read_as(path, dt, &a, err, sizeof err) : exmy_npy_read(path, &a, err, sizeof err);
  CHECK(rc == -1, "%s: read%s as %s succeeded", name, as ? "_as" : "", exmy_dtype_name(dt));
  CHECK(strstr(err, want) != NULL && strchr(err, '\n') == NULL, "%s: error '%s' lacks '%s'", name, err, want);
  CHECK(rc == -1 && a.data == NULL, "%s: array not cleared on error", name);
  if (rc == 0) exmy_array_free(&a);
}

static void test_ml_dtypes(void) {
  const size_t s23[2] = {2, 3}, s6[1] = {6};
  /* reading what numpy / ml_dtypes write */
  expect_read_bits("ml_f2.npy", ml_f2_bytes, ml_f2_LEN, 0, EXMY_DTYPE_F16, 2, ml_f2_bits, 6);
  expect_read_bits("ml_bf16.npy", ml_bf16_bytes, ml_bf16_LEN, 0, EXMY_DTYPE_BF16, 2, ml_bf16_bits, 6);
  expect_read_bits("ml_e5m2.npy", ml_e5m2_bytes, ml_e5m2_LEN, 0, EXMY_DTYPE_E5M2, 1, ml_e5m2_bits, 6);
  expect_read_bits("ml_e4m3fn_as.npy", ml_e4m3fn_bytes, ml_e4m3fn_LEN, 1, EXMY_DTYPE_E4M3FN, 1, ml_e4m3fn_bits, 6);
  expect_read_bits("ml_e4m3fn_u8.npy", ml_e4m3fn_bytes, ml_e4m3fn_LEN, 1, EXMY_DTYPE_U8, 1, ml_e4m3fn_bits, 6);
  expect_read_bits("ml_e5m2_v1.npy", ml_e5m2_v1_bytes, ml_e5m2_v1_LEN, 1, EXMY_DTYPE_E5M2, 1, ml_e5m2_bits, 6);
  expect_read_bits("ml_e5m2_f1_as.npy", ml_e5m2_bytes, ml_e5m2_LEN, 1, EXMY_DTYPE_E5M2, 1, ml_e5m2_bits, 6);
  expect_read_bits("ml_f2_as.npy", ml_f2_bytes, ml_f2_LEN, 1, EXMY_DTYPE_F16, 2, ml_f2_bits, 6);
  expect_read_bits("ml_bf16_as.npy", ml_bf16_bytes, ml_bf16_LEN, 1, EXMY_DTYPE_BF16, 2, ml_bf16_bits, 6);
  /* what the header cannot say, and what the caller says wrongly */
  expect_read_as_error("ml_e4m3fn.npy", ml_e4m3fn_bytes, ml_e4m3fn_LEN, 0, EXMY_DTYPE_F32,
                       "dtype '<V1' is 1-byte elements of a type the file does not name");
  expect_read_as_error("ml_f2_f32.npy", ml_f2_bytes, ml_f2_LEN, 1, EXMY_DTYPE_F32, "holds float16 ('<f2'), not float32");
  expect_read_as_error("ml_f2_bf16.npy", ml_f2_bytes, ml_f2_LEN, 1, EXMY_DTYPE_BF16,
                       "holds float16 ('<f2'), not bfloat16");
  expect_read_as_error("ml_v1_bf16.npy", ml_e4m3fn_bytes, ml_e4m3fn_LEN, 1, EXMY_DTYPE_BF16,
                       "holds 1-byte elements ('<V1'), not bfloat16");
  expect_read_as_error("ml_bad_dt.npy", ml_f2_bytes, ml_f2_LEN, 1, (exmy_dtype)99, "invalid dtype 99");
  /* writing: np.save's bytes (float8_e5m2 as '<V1', which np.load reads) */
  expect_write_bytes("w_f2.npy", EXMY_DTYPE_F16, 2, s23, ml_f2_bits, 6, ml_f2_bytes, ml_f2_LEN);
  expect_write_bytes("w_bf16.npy", EXMY_DTYPE_BF16, 2, s23, ml_bf16_bits, 6, ml_bf16_bytes, ml_bf16_LEN);
  expect_write_bytes("w_e4m3fn.npy", EXMY_DTYPE_E4M3FN, 1, s6, ml_e4m3fn_bits, 6, ml_e4m3fn_bytes, ml_e4m3fn_LEN);
  expect_write_bytes("w_e5m2.npy", EXMY_DTYPE_E5M2, 1, s6, ml_e5m2_bits, 6, ml_e5m2_v1_bytes, ml_e5m2_v1_LEN);
  /* and back */
  expect_read_bits("w_f2.npy", ml_f2_bytes, ml_f2_LEN, 0, EXMY_DTYPE_F16, 2, ml_f2_bits, 6);
  CHECK(ml_e5m2_v1_bits[0] == ml_e5m2_bits[0], "e5m2 vectors disagree");
  expect_read_bits("w_e5m2_back.npy", ml_e5m2_v1_bytes, ml_e5m2_v1_LEN, 1, EXMY_DTYPE_E5M2, 1, ml_e5m2_bits, 6);
}

static void test_round_trips(void) {
  static const struct {
    int ndim;
    size_t shape[8];
  } shapes[] = {
    {0, {0}},          {1, {1}},          {1, {7}},       {1, {0}},
    {2, {2, 3}},       {2, {3, 0}},       {2, {0, 5}},    {2, {1, 1}},
    {3, {2, 3, 4}},    {3, {4, 0, 2}},    {8, {2, 1, 2, 1, 2, 1, 1, 3}},
    {1, {12345678901ULL % 1000 + 1000}},
  };
  static const exmy_dtype dts[] = {EXMY_DTYPE_F32, EXMY_DTYPE_F64, EXMY_DTYPE_U8,
                                   EXMY_DTYPE_U16, EXMY_DTYPE_U32, EXMY_DTYPE_U64,
                                   EXMY_DTYPE_F16, EXMY_DTYPE_BF16, EXMY_DTYPE_E4M3FN,
                                   EXMY_DTYPE_E5M2};
  for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++) {
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      exmy_array a;
      memset(&a, 0, sizeof a);
      a.dtype = dts[di];
      a.ndim = shapes[si].ndim;
      a.count = 1;
      for (int d = 0; d < a.ndim; d++) {
        a.shape[d] = shapes[si].shape[d];
        a.count *= a.shape[d];
      }
      size_t sz = exmy_dtype_size(a.dtype);
      size_t bytes = a.count * sz;
      unsigned char *data = malloc(bytes ? bytes : 1);
      for (size_t i = 0; i < bytes; i++) data[i] = (unsigned char)(i * 37 + 11 + di * 5 + si);
      a.data = bytes ? data : NULL; /* count 0 needs no data */
      char path[1024], name[96], err[512] = "";
      snprintf(name, sizeof name, "rt_%s_%zu.npy", exmy_dtype_name(a.dtype), si);
      tpath(path, sizeof path, name);
      int rc = exmy_npy_write(path, &a, err, sizeof err);
      CHECK(rc == 0, "round trip %s shape #%zu: write failed: %s", exmy_dtype_name(a.dtype), si, err);
      char tmpname[1100];
      snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", path, (long)getpid());
      CHECK(!file_exists(tmpname), "round trip: temporary file %s left behind", tmpname);
      size_t n = 0;
      unsigned char *raw = read_raw(path, &n);
      if (raw && n >= 10) {
        size_t hl = (size_t)raw[8] | ((size_t)raw[9] << 8);
        CHECK(raw[6] == 1 && raw[7] == 0, "%s: not version 1.0", path);
        CHECK((10 + hl) % 64 == 0, "%s: header not padded to 64 bytes", path);
        CHECK(n == 10 + hl + bytes, "%s: file size %zu, expected %zu", path, n, 10 + hl + bytes);
        CHECK(raw[10 + hl - 1] == '\n', "%s: header does not end in a newline", path);
      } else {
        fail("%s: cannot read back the raw file", path);
      }
      free(raw);
      exmy_array b; /* '<V1' does not say which float8 type: say it */
      rc = exmy_npy_read_as(path, a.dtype, &b, err, sizeof err);
      CHECK(rc == 0, "round trip %s: read failed: %s", path, err);
      if (rc == 0) {
        int ok = b.dtype == a.dtype && b.ndim == a.ndim && b.count == a.count;
        for (int d = 0; ok && d < a.ndim; d++) ok = b.shape[d] == a.shape[d];
        ok = ok && (bytes == 0 || memcmp(b.data, data, bytes) == 0);
        CHECK(ok, "round trip %s: array differs after reading back", path);
        exmy_array_free(&b);
      }
      free(data);
    }
  }

  /* Overwriting an existing file replaces it. */
  {
    char path[1024], err[512] = "";
    tpath(path, sizeof path, "overwrite.npy");
    uint32_t d1[3] = {1, 2, 3}, d2[2] = {7, 8};
    exmy_array a = {EXMY_DTYPE_U32, 1, {3}, 3, d1};
    int rc = exmy_npy_write(path, &a, err, sizeof err);
    a.shape[0] = 2;
    a.count = 2;
    a.data = d2;
    rc |= exmy_npy_write(path, &a, err, sizeof err);
    exmy_array b;
    rc |= exmy_npy_read(path, &b, err, sizeof err);
    CHECK(rc == 0 && b.count == 2 && memcmp(b.data, d2, 8) == 0, "overwrite: %s",
          rc ? err : "old content read back");
    if (rc == 0) exmy_array_free(&b);
  }
}

/* ---- special destinations and sources ----------------------------------- */

static void test_special_files(void) {
  char err[EXMY_ERRLEN] = "";
  uint16_t d[3] = {1, 2, 0xffff};
  exmy_array a = {EXMY_DTYPE_U16, 1, {3}, 3, d};
  /* Writing through a symbolic link updates its target and keeps the link. */
  char target[1024], link[1024];
  tpath(target, sizeof target, "link_target.npy");
  tpath(link, sizeof link, "the_link.npy");
  write_raw(target, "old", 3);
  if (symlink("link_target.npy", link) == 0) {
    int rc = exmy_npy_write(link, &a, err, sizeof err);
    CHECK(rc == 0, "write through a symlink: %s", err);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "writing replaced the symlink %s", link);
    exmy_array b;
    rc = exmy_npy_read(target, &b, err, sizeof err);
    CHECK(rc == 0 && b.count == 3 && memcmp(b.data, d, 6) == 0, "symlink target not written: %s",
          rc ? err : "wrong data");
    if (rc == 0) exmy_array_free(&b);
  } else {
    printf("note: cannot create a symlink here, skipping that check\n");
  }
  /* A device is written in place, never replaced. */
  if (file_exists("/dev/null")) {
    int rc = exmy_npy_write("/dev/null", &a, err, sizeof err);
    struct stat st;
    CHECK(rc == 0, "write to /dev/null: %s", err);
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode), "/dev/null is no longer a device!");
    char tmpname[64];
    snprintf(tmpname, sizeof tmpname, "/dev/null.tmp.%ld", (long)getpid());
    CHECK(!file_exists(tmpname), "%s was created", tmpname);
  }
  /* Reading from a pipe (no file size to check against). */
  char fifo[1024];
  tpath(fifo, sizeof fifo, "pipe.npy");
  if (mkfifo(fifo, 0600) == 0) {
    for (int trunc = 0; trunc < 2; trunc++) {
      const vector *t = &vectors[0];
      for (size_t v = 0; v < N_VECTORS; v++)
        if (!strcmp(vectors[v].name, "f8_2x3")) t = &vectors[v];
      pid_t pid = fork();
      if (pid == 0) {
        FILE *w = fopen(fifo, "wb");
        if (w) {
          fwrite(t->bytes, 1, t->len - (trunc ? 5 : 0), w);
          fclose(w);
        }
        _exit(0);
      }
      exmy_array b;
      int rc = exmy_npy_read(fifo, &b, err, sizeof err);
      int status;
      if (pid > 0) waitpid(pid, &status, 0);
      if (trunc) {
        CHECK(rc == -1 && strstr(err, "truncated data"), "truncated pipe: rc %d %s", rc, err);
      } else {
        CHECK(rc == 0 && b.count == 6 && b.dtype == EXMY_DTYPE_F64, "read from a pipe: %s", err);
      }
      if (rc == 0) exmy_array_free(&b);
    }
  } else {
    printf("note: cannot create a FIFO here, skipping that check\n");
  }
}

/* ---- write errors --------------------------------------------------------- */

static void expect_write_error(const char *what, const char *path, const exmy_array *a) {
  char err[EXMY_ERRLEN] = "";
  int rc = exmy_npy_write(path, a, err, sizeof err);
  CHECK(rc == -1, "write '%s' to %s succeeded", what, path);
  if (rc == -1) {
    CHECK(strstr(err, path) != NULL && strchr(err, '\n') == NULL,
          "write '%s': message does not name the file on one line: %s", what, err);
    if (getenv("EXMY_TEST_VERBOSE")) printf("  %-40s -> %s\n", what, err);
  }
}

static void test_write_errors(void) {
  uint8_t d[4] = {1, 2, 3, 4};
  char path[1024], bad[1100];
  tpath(path, sizeof path, "werr.npy");
  exmy_array a = {EXMY_DTYPE_U8, 1, {4}, 4, d};
  snprintf(bad, sizeof bad, "%s/no/such/dir/x.npy", tmpdir);
  expect_write_error("missing directory", bad, &a);
  CHECK(!file_exists(bad), "file appeared in a missing directory");
  /* The target is a directory: rename fails, the temporary file goes. */
  char dirp[1024];
  tpath(dirp, sizeof dirp, "adir.npy");
  mkdir(dirp, 0700);
  expect_write_error("target is a directory", dirp, &a);
  char tmpname[1100];
  snprintf(tmpname, sizeof tmpname, "%s.tmp.%ld", dirp, (long)getpid());
  CHECK(!file_exists(tmpname), "temporary file %s left behind after a failed rename", tmpname);
  remember(tmpname);
  exmy_array b = a;
  b.dtype = (exmy_dtype)99;
  expect_write_error("invalid dtype", path, &b);
  b = a;
  b.ndim = 9;
  expect_write_error("9 dimensions", path, &b);
  b = a;
  b.ndim = -1;
  expect_write_error("-1 dimensions", path, &b);
  b = a;
  b.count = 5;
  expect_write_error("count does not match shape", path, &b);
  b = a;
  b.data = NULL;
  expect_write_error("NULL data", path, &b);
  b = a;
  b.ndim = 2;
  b.shape[0] = (size_t)1 << (sizeof(size_t) * 4);
  b.shape[1] = (size_t)1 << (sizeof(size_t) * 4);
  b.count = 0;
  expect_write_error("shape product overflows", path, &b);
  CHECK(!file_exists(path), "a failed write left %s behind", path);
  CHECK(exmy_npy_write(path, NULL, NULL, 0) == -1, "write of a NULL array succeeded");
}

/* ---- bad files ------------------------------------------------------------ */

static void test_bad_files(void) {
  static const char U[] = "unsupported dtype";
  static const char LIST[] = "(exmy reads float16, float32, float64, uint8, uint16, uint32, uint64, "
                             "ml_dtypes' bfloat16 ('<V2') and float8_e5m2 ('<f1'), and 'V1' 'V4' 'V8' "
                             "when told the type)";
  char path[1024];
  size_t n;

  tpath(path, sizeof path, "does_not_exist.npy");
  remove(path);
  expect_read_error(path, "missing file", "cannot open");
  tpath(path, sizeof path, "a_directory.npy");
  mkdir(path, 0700);
  expect_read_error(path, "directory", NULL);

  expect_raw_error("empty.npy", "", 0, "empty");
  expect_raw_error("magic4.npy", "\x93NUM", 4, "truncated");
  expect_raw_error("badmagic.npy", "\x93NUMPZ\x01\x00v\x00{}", 12, "not a .npy file");
  expect_raw_error("gif.npy", "GIF89a\x01\x00\x00\x00", 10, "not a .npy file");
  expect_raw_error("text.npy", "hello", 5, "not a .npy file");
  expect_raw_error("magic7.npy", "\x93NUMPY\x01", 7, "truncated");
  expect_raw_error("version40.npy", "\x93NUMPY\x04\x00\x10\x00{}              ", 26, "version 4.0");
  expect_raw_error("version11.npy", "\x93NUMPY\x01\x01\x10\x00{}              ", 26, "version 1.1");
  expect_raw_error("version00.npy", "\x93NUMPY\x00\x00\x10\x00{}              ", 26, "version 0.0");
  expect_raw_error("hlen1of2.npy", "\x93NUMPY\x01\x00\x76", 9, "truncated");
  expect_raw_error("hlen3of4.npy", "\x93NUMPY\x02\x00\x76\x00\x00", 11, "truncated");
  expect_raw_error("nohdr.npy", "\x93NUMPY\x01\x00\x76\x00", 10, "truncated header");

  /* Header length fields that lie. */
  {
    unsigned char *b = build_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                                 "\0\0\0\0", 4, &n);
    b[8] = 0x00;
    b[9] = 0x76; /* 0x7600 bytes */
    expect_raw_error("hlen_lies.npy", b, n, "truncated header");
    b[8] = 0xff;
    b[9] = 0xff;
    expect_raw_error("hlen_ffff.npy", b, n, "truncated header");
    b[8] = 0x00;
    b[9] = 0x00; /* empty header */
    expect_raw_error("hlen_zero.npy", b, n, "bad header");
    b[8] = 0x10;
    b[9] = 0x00; /* header cut inside the dict */
    expect_raw_error("hlen_short.npy", b, n, "bad header");
    free(b);
    b = build_npy(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "\0\0\0\0", 4, &n);
    b[8] = b[9] = b[10] = b[11] = 0xff;
    expect_raw_error("hlen_v2_4g.npy", b, n, "truncated header");
    b[8] = 0x00;
    b[9] = 0x00;
    b[10] = 0x00;
    b[11] = 0x80;
    expect_raw_error("hlen_v2_2g.npy", b, n, "truncated header");
    free(b);
    /* A header that is really there but absurdly long. */
    size_t big = 200000;
    char *dict = malloc(big + 1);
    strcpy(dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }");
    size_t l = strlen(dict);
    memset(dict + l, ' ', big - l);
    dict[big] = 0;
    b = build_npy(2, dict, "\0\0\0\0", 4, &n);
    expect_raw_error("hlen_v2_huge.npy", b, n, "large");
    free(b);
    free(dict);
  }

  /* Data shorter than the shape says. */
  expect_dict_error("short_data.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                    20, "truncated data");
  expect_dict_error("no_data.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", 0,
                    "truncated data");
  expect_dict_error("short_scalar.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 7,
                    "truncated data");
  expect_dict_error("short_u8.npy", "{'descr': '<u8', 'fortran_order': False, 'shape': (1, 1), }",
                    4, "truncated data");
  expect_dict_error("huge_no_data.npy",
                    "{'descr': '|u1', 'fortran_order': False, 'shape': (1099511627776,), }", 16,
                    "truncated data");
  expect_dict_error("huge_8d.npy",
                    "{'descr': '<u2', 'fortran_order': False, 'shape': (255, 255, 255, 255, 255, 255, 255, 255), }",
                    16, NULL);
  /* Shapes whose element or byte count overflows. */
  expect_dict_error("ovf_product.npy",
                    "{'descr': '|u1', 'fortran_order': False, 'shape': (4611686018427387904, 4611686018427387904), }",
                    0, "too large");
  expect_dict_error("ovf_bytes.npy",
                    "{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", 0,
                    "too large");
  expect_dict_error("ovf_bytes2.npy",
                    "{'descr': '<u4', 'fortran_order': False, 'shape': (65536, 65536, 65536, 65536), }",
                    0, "too large");
  expect_dict_error("ovf_dim.npy",
                    "{'descr': '|u1', 'fortran_order': False, 'shape': (18446744073709551616,), }", 0,
                    "too large");
  expect_dict_error("ovf_dim_long.npy",
                    "{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999999999999999999999999,), }",
                    0, "too large");
  /* A zero dimension makes the array empty even when the others are huge. */
  {
    size_t shp[2] = {0, (size_t)1 << 40};
    expect_dict_ok("zero_times_huge.npy",
                   "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 1099511627776), }", 0,
                   EXMY_DTYPE_F64, 2, shp);
  }
  /* Dimensions. */
  expect_dict_error("9d.npy",
                    "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1), }",
                    1, "more than 8");
  expect_dict_error("40d.npy",
                    "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }",
                    1, "more than 8");
  /* Keys. */
  expect_dict_error("unknown_key.npy",
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1, }", 4,
                    "unknown key 'extra'");
  expect_dict_error("no_shape.npy", "{'descr': '<f4', 'fortran_order': False, }", 4, "'shape'");
  expect_dict_error("no_descr.npy", "{'fortran_order': False, 'shape': (1,), }", 4, "'descr'");
  expect_dict_error("no_fortran.npy", "{'descr': '<f4', 'shape': (1,), }", 4, "'fortran_order'");
  expect_dict_error("empty_dict.npy", "{}", 4, "lacks");
  expect_dict_error("dup_key.npy",
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,), }", 8,
                    "duplicate");
  expect_dict_error("key_case.npy", "{'Descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4,
                    "unknown key");
  /* Bytes that do not belong in a header. */
  expect_dict_error("nonascii.npy", "{'descr': '<f\xc3\xa9" "4', 'fortran_order': False, 'shape': (1,), }",
                    4, "non-ASCII");
  expect_dict_error("nonascii_key.npy",
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), '\xff': 0}", 4,
                    "non-ASCII");
  {
    char d[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
    size_t l = strlen(d);
    unsigned char *b = build_npy(1, d, "\0\0\0\0", 4, &n);
    b[10 + 3] = 0; /* a NUL inside the dict */
    expect_raw_error("nul.npy", b, n, "control byte");
    b[10 + 3] = '\x1b';
    expect_raw_error("esc.npy", b, n, "control byte");
    (void)l;
    free(b);
  }
  /* Dtypes. */
  {
    /* '<f2' and '<f1' (float16, ml_dtypes' float8_e5m2) are now read;
     * '|V4' is read only when the caller names the type (test_ml_dtypes). */
    static const char *bad[] = {"<i4", "<i8", "|i1", "|b1", "<c8", "<c16", "|O", "<U3",
                                "|S5", "<M8[ns]", "<u3", "<x4", "f4", "float32",
                                "", "<f4 ", "<u16", "<f16", "|V3", "<V16", "<f3", "<V0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      char dict[200], name[64], want[200];
      snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (1,), }", bad[i]);
      snprintf(name, sizeof name, "dtype_%zu.npy", i);
      snprintf(want, sizeof want, "%s '%s' %s", U, bad[i], LIST);
      expect_dict_error(name, dict, 16, want);
    }
    expect_dict_error("dtype_v4.npy", "{'descr': '|V4', 'fortran_order': False, 'shape': (1,), }", 16,
                      "dtype '|V4' is 4-byte elements of a type the file does not name");
    expect_dict_error("dtype_struct.npy",
                      "{'descr': [('a', '<f4'), ('b', '<u1')], 'fortran_order': False, 'shape': (1,), }",
                      16, U);
    expect_dict_error("dtype_notstr.npy", "{'descr': 4, 'fortran_order': False, 'shape': (1,), }", 16,
                      "bad header");
    char longd[300];
    memset(longd, 'x', 120);
    longd[120] = 0;
    char dict[400];
    snprintf(dict, sizeof dict, "{'descr': '<%s', 'fortran_order': False, 'shape': (1,), }", longd);
    expect_dict_error("dtype_long.npy", dict, 16, U);
  }
  /* Fortran order. */
  {
    static const char f4_fortran[] =
        "\223NUMPY\001\000v\000{'descr': '<f4', 'fortran_order': True, 'shape'"
        ": (2, 3), }                                                           \012"
        "\000\000\000\000\000\000\240\100\000\000\200\077\000\000\200\100\000\000\000\100\000"
        "\000\100\100";
    /* np.save(np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))) */
    expect_raw_error("fortran_numpy.npy", f4_fortran, sizeof f4_fortran - 1, "fortran_order");
    expect_dict_error("fortran_3d.npy",
                      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1, 2), }", 16,
                      "fortran_order");
    size_t s1[1] = {3}, s2[3] = {1, 4, 1};
    expect_dict_ok("fortran_1d.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }", 12,
                   EXMY_DTYPE_F32, 1, s1);
    expect_dict_ok("fortran_trivial.npy",
                   "{'descr': '<u1', 'fortran_order': True, 'shape': (1, 4, 1), }", 4, EXMY_DTYPE_U8, 3,
                   s2);
    expect_dict_error("fortran_yes.npy", "{'descr': '<f4', 'fortran_order': 'yes', 'shape': (1,), }",
                      4, "fortran_order");
    expect_dict_error("fortran_1.npy", "{'descr': '<f4', 'fortran_order': 1, 'shape': (1,), }", 4,
                      "fortran_order");
    expect_dict_error("fortran_true.npy", "{'descr': '<f4', 'fortran_order': true, 'shape': (1,), }",
                      4, "fortran_order");
    expect_dict_error("fortran_Truex.npy",
                      "{'descr': '<f4', 'fortran_order': Truex, 'shape': (1,), }", 4, "fortran_order");
  }
  /* Malformed shapes and dicts. */
  {
    static const struct {
      const char *name, *dict, *want;
    } bad[] = {
      {"shape_int.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", "not a tuple"},
      {"shape_list.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", "not a tuple"},
      {"shape_bare.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': 3, }", "not a tuple"},
      {"shape_neg.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "negative"},
      {"shape_float.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3.0,), }", "shape"},
      {"shape_comma.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (,), }", "shape"},
      {"shape_open.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3, }", "shape"},
      {"shape_open2.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3", "shape"},
      {"shape_space.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }", "shape"},
      {"shape_2comma.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (3,,), }", "shape"},
      {"shape_str.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': '3', }", "not a tuple"},
      {"shape_none.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': None, }", "not a tuple"},
      {"after_dict.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", "unexpected"},
      {"two_dicts.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }{}", "unexpected"},
      {"no_close.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", "bad header"},
      {"no_open.npy", "'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "dict"},
      {"list.npy", "[1, 2]", "dict"},
      {"blank.npy", "", "dict"},
      {"unterminated.npy", "{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", "bad header"},
      {"unterminated2.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x", "unterminated"},
      {"no_colon.npy", "{'descr' '<f4', 'fortran_order': False, 'shape': (1,), }", "':'"},
      {"no_comma.npy", "{'descr': '<f4' 'fortran_order': False, 'shape': (1,), }", "','"},
      {"bare_key.npy", "{descr: '<f4', 'fortran_order': False, 'shape': (1,), }", "quoted string"},
      {"escape.npy", "{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,), }", "escape"},
      {"mixed_quotes.npy", "{'descr\": '<f4', 'fortran_order': False, 'shape': (1,), }", "bad header"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
      expect_dict_error(bad[i].name, bad[i].dict, 16, bad[i].want);
  }
  /* Variants numpy (ast.literal_eval) also accepts. */
  {
    size_t s3[1] = {3}, s23[2] = {2, 3}, s0[1] = {0};
    expect_dict_ok("ok_py2_long.npy", "{'descr': '<u2', 'fortran_order': False, 'shape': (3L,), }", 6,
                   EXMY_DTYPE_U16, 1, s3);
    expect_dict_ok("ok_dquote.npy", "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
                   24, EXMY_DTYPE_F32, 2, s23);
    expect_dict_ok("ok_order.npy", "{'shape': (3,), 'fortran_order': False, 'descr': '|u1'}", 3,
                   EXMY_DTYPE_U8, 1, s3);
    expect_dict_ok("ok_spaces.npy",
                   " {\n 'descr' :'<u4' ,\t'fortran_order':False,'shape':( 2 ,3 , ) } \n\n", 24,
                   EXMY_DTYPE_U32, 2, s23);
    expect_dict_ok("ok_lt_u1.npy", "{'descr': '<u1', 'fortran_order': False, 'shape': (3,), }", 3,
                   EXMY_DTYPE_U8, 1, s3);
    expect_dict_ok("ok_eq_f8.npy", "{'descr': '=f8', 'fortran_order': False, 'shape': (3,), }", 24,
                   EXMY_DTYPE_F64, 1, s3);
    expect_dict_ok("ok_be_u1.npy", "{'descr': '>u1', 'fortran_order': False, 'shape': (0,), }", 0,
                   EXMY_DTYPE_U8, 1, s0);
  }
  /* A message that does not fit is cut, never overflowed; no err is fine. */
  {
    char small[8];
    memset(small, 'Z', sizeof small);
    tpath(path, sizeof path, "empty.npy");
    exmy_array a;
    CHECK(exmy_npy_read(path, &a, small, 5) == -1 && small[4] == 0 && small[5] == 'Z',
          "short message buffer overflowed or was not terminated");
    CHECK(exmy_npy_read(path, &a, NULL, 0) == -1, "read without message buffer");
    CHECK(exmy_npy_read(path, &a, small, 0) == -1 && small[5] == 'Z', "errlen 0 wrote");
  }
}

/* ---- random corruption: never crash, always consistent ------------------ */

static uint64_t rng_state;
static uint64_t rnd(void) { return tu_next(&rng_state); }

#define N_CORRUPT 6000

static void test_corruption(void) {
  char path[1024];
  tpath(path, sizeof path, "fuzz.npy");
  static const char interesting[] = "(),:'\"{}0123456789 LTF<>|=fu\n\x00\xff\x93";
  long accepted = 0;
  for (int iter = 0; iter < N_CORRUPT; iter++) {
    const vector *t = &vectors[rnd() % N_VECTORS];
    size_t n = t->len;
    unsigned char *b = malloc(n + 64);
    memcpy(b, t->bytes, n);
    int edits = 1 + (int)(rnd() % 4);
    for (int e = 0; e < edits; e++) {
      size_t pos = rnd() % n;
      uint64_t r = rnd();
      if (pos < 10 && (r & 1)) pos = 6 + rnd() % 4;             /* version / length */
      else if (r & 2) pos = 10 + rnd() % (n > 90 ? 80 : n - 10); /* the dict */
      if (r & 4) b[pos] = (unsigned char)interesting[rnd() % (sizeof interesting - 1)];
      else b[pos] ^= (unsigned char)(1u << (rnd() % 8));
    }
    if (rnd() % 4 == 0) n = rnd() % (n + 1);
    write_raw(path, b, n);
    free(b);
    exmy_array a;
    char err[EXMY_ERRLEN] = "";
    int rc = exmy_npy_read(path, &a, err, sizeof err);
    if (rc == 0) {
      accepted++;
      size_t count = 1;
      int ok = a.ndim >= 0 && a.ndim <= 8 && exmy_dtype_size(a.dtype) > 0;
      for (int d = 0; ok && d < a.ndim; d++) count *= a.shape[d];
      ok = ok && count == a.count && (count == 0 || a.data);
      if (ok && count) { /* touch every byte: must be readable */
        volatile unsigned char s = 0;
        for (size_t i = 0; i < count * exmy_dtype_size(a.dtype); i++) s ^= ((unsigned char *)a.data)[i];
        (void)s;
      }
      CHECK(ok, "corruption %d: accepted an inconsistent array", iter);
      exmy_array_free(&a);
    } else {
      CHECK(rc == -1 && strstr(err, path) && !strchr(err, '\n'),
            "corruption %d: rc %d, message %s", iter, rc, err);
    }
  }
  printf("corruption: %d files, %ld accepted as valid arrays\n", N_CORRUPT, accepted);
}

/* ---- misc API ------------------------------------------------------------- */

static void test_dtype_api(void) {
  static const struct {
    exmy_dtype dt;
    size_t size;
    const char *name;
  } t[] = {{EXMY_DTYPE_F32, 4, "float32"}, {EXMY_DTYPE_F64, 8, "float64"}, {EXMY_DTYPE_U8, 1, "uint8"},
           {EXMY_DTYPE_U16, 2, "uint16"},  {EXMY_DTYPE_U32, 4, "uint32"},  {EXMY_DTYPE_U64, 8, "uint64"}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    CHECK(exmy_dtype_size(t[i].dt) == t[i].size, "exmy_dtype_size(%d) = %zu", (int)t[i].dt,
          exmy_dtype_size(t[i].dt));
    CHECK(strcmp(exmy_dtype_name(t[i].dt), t[i].name) == 0, "exmy_dtype_name(%d) = %s", (int)t[i].dt,
          exmy_dtype_name(t[i].dt));
  }
  CHECK(exmy_dtype_size((exmy_dtype)42) == 0, "size of an invalid dtype is not 0");
  CHECK(exmy_dtype_name((exmy_dtype)42) != NULL, "name of an invalid dtype is NULL");
  exmy_array_free(NULL);
}

/* ---- files numpy wrote into DIR ----------------------------------------- */

static void test_numpy_dir(const char *dir) {
  static const char *types[] = {"f4", "f8", "u1", "u2", "u4", "u8"};
  static const exmy_dtype dts[] = {EXMY_DTYPE_F32, EXMY_DTYPE_F64, EXMY_DTYPE_U8,
                                   EXMY_DTYPE_U16, EXMY_DTYPE_U32, EXMY_DTYPE_U64,
                                   EXMY_DTYPE_F16, EXMY_DTYPE_BF16, EXMY_DTYPE_E4M3FN,
                                   EXMY_DTYPE_E5M2};
  static const struct {
    const char *tag;
    int ndim;
    size_t shape[8];
  } shapes[] = {{"scalar", 0, {0}},  {"5", 1, {5}},        {"2x3", 2, {2, 3}},
                {"0", 1, {0}},       {"3x0", 2, {3, 0}},   {"2x3x4", 3, {2, 3, 4}},
                {"1x2x1x2x1x1x1x2", 8, {1, 2, 1, 2, 1, 1, 1, 2}}};
  int found = 0, differ = 0;
  for (int be = 0; be < 2; be++)
    for (size_t ti = 0; ti < 6; ti++)
      for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        char path[2048], err[512] = "";
        snprintf(path, sizeof path, "%s/%s%s_%s.npy", dir, be ? "be_" : "", types[ti], shapes[si].tag);
        if (!file_exists(path)) continue;
        found++;
        exmy_array a;
        int rc = exmy_npy_read(path, &a, err, sizeof err);
        CHECK(rc == 0, "numpy file rejected: %s", err);
        if (rc) continue;
        int ok = a.dtype == dts[ti] && a.ndim == shapes[si].ndim;
        size_t count = 1;
        for (int d = 0; ok && d < a.ndim; d++) {
          ok = a.shape[d] == shapes[si].shape[d];
          count *= shapes[si].shape[d];
        }
        CHECK(ok && a.count == count, "%s: wrong dtype or shape", path);
        for (size_t i = 0; ok && i < a.count; i++) {
          if (dts[ti] == EXMY_DTYPE_F32 || dts[ti] == EXMY_DTYPE_F64)
            CHECK(elem_f(&a, i) == (double)(i % 251), "%s: element %zu is %a", path, i, elem_f(&a, i));
          else
            CHECK(elem_u(&a, i) == i % 251, "%s: element %zu is %llu", path, i,
                  (unsigned long long)elem_u(&a, i));
        }
        if (!be) {
          char out[1024];
          tpath(out, sizeof out, "from_dir.npy");
          if (exmy_npy_write(out, &a, err, sizeof err) == 0) {
            size_t n1 = 0, n2 = 0;
            unsigned char *b1 = read_raw(out, &n1), *b2 = read_raw(path, &n2);
            if (!b1 || !b2 || n1 != n2 || memcmp(b1, b2, n1)) {
              differ++;
              printf("note: %s: exmy writes different bytes than this numpy\n", path);
            }
            free(b1);
            free(b2);
          } else {
            fail("%s: cannot write a copy: %s", path, err);
          }
        }
        exmy_array_free(&a);
      }
  CHECK(found > 0, "%s: no numpy files found (see the comment at the top of test_npy.c)", dir);
  printf("numpy directory %s: %d files read, %d written differently by exmy\n", dir, found, differ);
}

int main(int argc, char **argv) {
  rng_state = tu_seed(DEFAULT_SEED);

  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  snprintf(tmpdir, sizeof tmpdir, "%s/exmy_test_npy_XXXXXX", base);
  if (!mkdtemp(tmpdir)) {
    printf("test_npy: cannot create a temporary directory under %s: %s\n", base, strerror(errno));
    return 1;
  }

  test_dtype_api();
  test_vectors();
  test_round_trips();
  test_ml_dtypes();
  test_write_errors();
  test_special_files();
  test_bad_files();
  test_corruption();
  if (argc > 1) test_numpy_dir(argv[1]);

  /* Clean up (directories last), unless EXMY_TEST_KEEP is set. */
  int keep = getenv("EXMY_TEST_KEEP") != NULL;
  if (keep) printf("keeping %s\n", tmpdir);
  for (size_t i = n_created; i-- > 0;) {
    if (!keep && remove(created[i]) != 0 && errno != ENOENT) rmdir(created[i]);
    free(created[i]);
  }
  free(created);
  if (!keep && rmdir(tmpdir) != 0) printf("note: could not remove %s: %s\n", tmpdir, strerror(errno));

  return tu_finish("test_npy");
}
