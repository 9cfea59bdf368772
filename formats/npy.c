/* npy.c: NumPy .npy files (read versions 1.0, 2.0 and 3.0; write 1.0, or 2.0
 * when the header would not fit), for the dtypes of exmy_dtype.
 *
 * Reading accepts the descr strings numpy writes for the supported types
 * ('<f2' '<f4' '<f8' '|u1' '<u2' '<u4' '<u8'), also '<u1', ml_dtypes' void descrs
 * (see npy_types and descr_lookup), and the byte-order
 * characters '=' and '|' (taken as the host order, which must be little-endian).
 * Big-endian files ('>f4', '>u2', ...) are converted to little-endian while
 * reading.  fortran_order True is an error unless the layout is the same as
 * C order (at most one dimension longer than 1).  Bytes after the data are
 * ignored, as numpy does.  The header must be the literal dict numpy writes
 * (keys 'descr', 'fortran_order', 'shape', in any order, each exactly once;
 * strings in ' or " without escapes; ints may carry Python 2's 'L' suffix;
 * printable ASCII only); anything else is an error, as are more than 8
 * dimensions and headers over 64 KiB.
 *
 * Every error is one line "<path>: <what is wrong>".  The reader trusts
 * nothing in the file: header length, shape and data length are checked
 * against the file and against overflow before anything is allocated.
 *
 * Writing produces the same bytes as numpy's np.save (header padded with
 * spaces to a multiple of 64 bytes, 21-digit growth room after the shape)
 * into "<path>.tmp.<pid>", then renames it over path (over a symbolic link's
 * target, keeping the link).  Devices and pipes such as /dev/stdout are
 * written directly; a directory is an error. */
#if !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) && !defined(_WIN32)
#define _XOPEN_SOURCE 700 /* fileno, fstat, lstat, fsync, getpid, realpath */
#endif
#include "exmy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#if defined(_WIN32)
#include <process.h>
#define npy_getpid() ((long)_getpid())
#else
#include <unistd.h>
#define npy_getpid() ((long)getpid())
#endif

/* exmy_array data is little-endian and used in place: the host must be too. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__)
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "exmy assumes a little-endian host");
#endif

#define NPY_MAX_DIMS 8
/* numpy itself refuses headers over 10000 bytes by default; a header of a
 * supported array is under 300 bytes.  The limit only bounds allocation. */
#define NPY_MAX_HEADER 65536u

/* The dtypes .npy files carry here, with numpy's descr. */
static const struct {
  exmy_dtype dt;
  size_t size;
  char kind;
  const char *name;
  const char *descr;
} npy_types[] = {
  {EXMY_DTYPE_F32, 4, 'f', "float32", "<f4"},
  {EXMY_DTYPE_F64, 8, 'f', "float64", "<f8"},
  {EXMY_DTYPE_U8, 1, 'u', "uint8", "|u1"},
  {EXMY_DTYPE_U16, 2, 'u', "uint16", "<u2"},
  {EXMY_DTYPE_U32, 4, 'u', "uint32", "<u4"},
  {EXMY_DTYPE_U64, 8, 'u', "uint64", "<u8"},
  {EXMY_DTYPE_F16, 2, 'f', "float16", "<f2"},
  /* ml_dtypes' types are not numpy builtins: np.save writes them as void
   * ('<V2', '<V1'; float8_e5m2 as '<f1', which np.load refuses).  exmy
   * writes '<V2' / '<V1', which np.load reads as void for .view(...). */
  {EXMY_DTYPE_BF16, 2, 'V', "bfloat16", "<V2"},
  {EXMY_DTYPE_E4M3FN, 1, 'V', "float8_e4m3fn", "<V1"},
  {EXMY_DTYPE_E5M2, 1, 'V', "float8_e5m2", "<V1"},
};
#define NPY_READS \
  "float16, float32, float64, uint8, uint16, uint32, uint64, ml_dtypes' bfloat16 ('<V2') and " \
  "float8_e5m2 ('<f1'), and 'V1' 'V4' 'V8' when told the type"
#define NPY_NTYPES (sizeof npy_types / sizeof npy_types[0])

static int npy_type_index(exmy_dtype dt) {
  for (size_t i = 0; i < NPY_NTYPES; i++)
    if (npy_types[i].dt == dt) return (int)i;
  return -1;
}

void exmy_array_free(exmy_array *arr) {
  if (!arr) return;
  free(arr->data);
  memset(arr, 0, sizeof *arr);
}

static int host_is_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

/* "<path>: <message>", forced onto one line. */
static int npy_fail(char *err, size_t errlen, const char *path, const char *fmt, ...) {
  if (!err || errlen == 0) return -1;
  int n = snprintf(err, errlen, "%s: ", path ? path : "(null)");
  if (n < 0) n = 0;
  if ((size_t)n < errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
  }
  for (char *p = err; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
  return -1;
}

/* Copy at most 40 characters of untrusted text, escaping what is not
 * printable ASCII, for quoting in a message. */
static void npy_quote(char *out, size_t outlen, const char *s, size_t n) {
  size_t o = 0;
  if (outlen == 0) return;
  for (size_t i = 0; i < n && i < 40; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      tmp[0] = (char)c;
      tmp[1] = 0;
    } else {
      snprintf(tmp, sizeof tmp, "\\x%02x", c);
    }
    size_t t = strlen(tmp);
    if (o + t + 1 > outlen) break;
    memcpy(out + o, tmp, t);
    o += t;
  }
  if (n > 40 && o + 4 <= outlen) {
    memcpy(out + o, "...", 3);
    o += 3;
  }
  out[o] = 0;
}

/* Python's repr of a shape tuple: (), (3,), (2, 3). */
static void npy_shape_repr(char *buf, size_t len, int ndim, const size_t *shape) {
  size_t o = 0;
  int n = snprintf(buf, len, "(");
  if (n > 0) o = (size_t)n;
  for (int d = 0; d < ndim && o < len; d++) {
    n = snprintf(buf + o, len - o, "%s%zu", d ? ", " : "", shape[d]);
    if (n < 0) return;
    o += (size_t)n;
  }
  if (o < len) snprintf(buf + o, len - o, ndim == 1 ? ",)" : ")");
}

/* ---- header parser: the literal dict numpy writes --------------------- */

typedef struct {
  const char *s;
  size_t n, i;
} npy_lex;

static void lex_ws(npy_lex *L) {
  while (L->i < L->n) {
    char c = L->s[L->i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v')
      L->i++;
    else
      break;
  }
}

static int lex_peek(const npy_lex *L) {
  return L->i < L->n ? (unsigned char)L->s[L->i] : -1;
}

/* A quoted string without escapes: start and length in *st, *sl.
 * Returns 0, or -1 with a message in msg. */
static int lex_string(npy_lex *L, size_t *st, size_t *sl, char *msg, size_t msglen) {
  int q = lex_peek(L);
  if (q != '\'' && q != '"') {
    snprintf(msg, msglen, "expected a quoted string at header offset %zu", L->i);
    return -1;
  }
  size_t start = ++L->i;
  while (L->i < L->n && L->s[L->i] != (char)q) {
    if (L->s[L->i] == '\n') break;
    if (L->s[L->i] == '\\') {
      snprintf(msg, msglen, "escape sequences in strings are not supported (header offset %zu)", L->i);
      return -1;
    }
    L->i++;
  }
  if (L->i >= L->n || L->s[L->i] != (char)q) {
    snprintf(msg, msglen, "unterminated string at header offset %zu", start - 1);
    return -1;
  }
  *st = start;
  *sl = L->i - start;
  L->i++;
  return 0;
}

static int lex_word(npy_lex *L, const char *w) {
  size_t k = strlen(w);
  if (L->n - L->i < k || memcmp(L->s + L->i, w, k) != 0) return 0;
  if (L->i + k < L->n) {
    char c = L->s[L->i + k];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
      return 0;
  }
  L->i += k;
  return 1;
}

typedef struct {
  char descr[48];
  int have_descr, have_fortran, have_shape;
  int fortran;
  int ndim;
  size_t shape[NPY_MAX_DIMS];
} npy_header;

static int parse_shape(npy_lex *L, npy_header *h, char *msg, size_t msglen) {
  int c = lex_peek(L);
  if (c != '(') {
    snprintf(msg, msglen, "shape is not a tuple (expected '(' at header offset %zu)", L->i);
    return -1;
  }
  L->i++;
  lex_ws(L);
  h->ndim = 0;
  if (lex_peek(L) == ')') {
    L->i++;
    return 0;
  }
  for (;;) {
    c = lex_peek(L);
    if (c == '-') {
      snprintf(msg, msglen, "shape has a negative dimension");
      return -1;
    }
    if (c < '0' || c > '9') {
      snprintf(msg, msglen, "shape is not a tuple of non-negative integers (header offset %zu)", L->i);
      return -1;
    }
    uint64_t v = 0;
    int too_big = 0;
    while ((c = lex_peek(L)) >= '0' && c <= '9') {
      unsigned dgt = (unsigned)(c - '0');
      if (v > (UINT64_MAX - dgt) / 10) too_big = 1;
      else v = v * 10 + dgt;
      L->i++;
    }
    if (c == 'L' || c == 'l') L->i++; /* Python 2 long */
    if (too_big || v > (uint64_t)SIZE_MAX) {
      snprintf(msg, msglen, "shape has a dimension too large for this machine");
      return -1;
    }
    if (h->ndim == NPY_MAX_DIMS) {
      snprintf(msg, msglen, "array has more than %d dimensions (exmy supports 0 to %d)",
               NPY_MAX_DIMS, NPY_MAX_DIMS);
      return -1;
    }
    h->shape[h->ndim++] = (size_t)v;
    lex_ws(L);
    c = lex_peek(L);
    if (c == ',') {
      L->i++;
      lex_ws(L);
      if (lex_peek(L) == ')') {
        L->i++;
        return 0;
      }
      continue;
    }
    if (c == ')') {
      L->i++;
      if (h->ndim == 1) {
        snprintf(msg, msglen,
                 "shape (%zu) is not a tuple (a 1-d shape is written (%zu,))",
                 h->shape[0], h->shape[0]);
        return -1;
      }
      return 0;
    }
    snprintf(msg, msglen, "malformed shape tuple at header offset %zu", L->i);
    return -1;
  }
}

static int parse_header(const char *s, size_t n, npy_header *h, char *msg, size_t msglen) {
  npy_lex L = {s, n, 0};
  memset(h, 0, sizeof *h);
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x80) {
      snprintf(msg, msglen, "header has a non-ASCII byte 0x%02x at offset %zu", c, i);
      return -1;
    }
    if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != '\v') || c == 0x7f) {
      snprintf(msg, msglen, "header has a control byte 0x%02x at offset %zu", c, i);
      return -1;
    }
  }
  lex_ws(&L);
  if (lex_peek(&L) != '{') {
    snprintf(msg, msglen, "header is not a Python dict literal (no '{')");
    return -1;
  }
  L.i++;
  for (;;) {
    lex_ws(&L);
    if (lex_peek(&L) == '}') {
      L.i++;
      break;
    }
    size_t ks, kl;
    if (lex_string(&L, &ks, &kl, msg, msglen)) return -1;
    const char *key = s + ks;
    lex_ws(&L);
    if (lex_peek(&L) != ':') {
      snprintf(msg, msglen, "expected ':' after a key at header offset %zu", L.i);
      return -1;
    }
    L.i++;
    lex_ws(&L);
    int *have;
    if (kl == 5 && memcmp(key, "descr", 5) == 0) have = &h->have_descr;
    else if (kl == 13 && memcmp(key, "fortran_order", 13) == 0) have = &h->have_fortran;
    else if (kl == 5 && memcmp(key, "shape", 5) == 0) have = &h->have_shape;
    else {
      char q[200];
      npy_quote(q, sizeof q, key, kl);
      snprintf(msg, msglen,
               "unknown key '%s' in header (a .npy header has exactly 'descr', 'fortran_order', 'shape')",
               q);
      return -1;
    }
    if (*have) {
      char q[64];
      npy_quote(q, sizeof q, key, kl);
      snprintf(msg, msglen, "duplicate key '%s' in header", q);
      return -1;
    }
    *have = 1;
    if (have == &h->have_descr) {
      int c = lex_peek(&L);
      if (c == '[' || c == '(') {
        snprintf(msg, msglen,
                 "unsupported dtype: structured or subarray descr (exmy reads " NPY_READS ")");
        return -1;
      }
      size_t vs, vl;
      if (lex_string(&L, &vs, &vl, msg, msglen)) return -1;
      if (vl >= sizeof h->descr) {
        char q[200];
        npy_quote(q, sizeof q, s + vs, vl);
        snprintf(msg, msglen,
                 "unsupported dtype '%s' (exmy reads " NPY_READS ")", q);
        return -1;
      }
      memcpy(h->descr, s + vs, vl);
      h->descr[vl] = 0;
    } else if (have == &h->have_fortran) {
      if (lex_word(&L, "True")) h->fortran = 1;
      else if (lex_word(&L, "False")) h->fortran = 0;
      else {
        snprintf(msg, msglen, "fortran_order is not True or False (header offset %zu)", L.i);
        return -1;
      }
    } else {
      if (parse_shape(&L, h, msg, msglen)) return -1;
    }
    lex_ws(&L);
    int c = lex_peek(&L);
    if (c == ',') {
      L.i++;
      continue;
    }
    if (c == '}') {
      L.i++;
      break;
    }
    snprintf(msg, msglen, "expected ',' or '}' at header offset %zu", L.i);
    return -1;
  }
  lex_ws(&L);
  if (L.i != L.n) {
    snprintf(msg, msglen, "unexpected text after the header dict at offset %zu", L.i);
    return -1;
  }
  if (!h->have_descr || !h->have_fortran || !h->have_shape) {
    snprintf(msg, msglen, "header lacks the key '%s'",
             !h->have_descr ? "descr" : !h->have_fortran ? "fortran_order" : "shape");
    return -1;
  }
  return 0;
}

/* descr -> what the file holds.  A typed descr names one exmy dtype
 * (*index).  Void descrs are untyped (*untyped): raw bytes of *size; of
 * them 'V2' is taken as ml_dtypes' bfloat16 unless told otherwise, and
 * '<f1' (how np.save writes ml_dtypes' float8_e5m2) as float8_e5m2; 'V1'
 * (its other float8 types), 'V4' and 'V8' have *index -1.  Returns -1 for
 * a descr exmy does not read. */
static int descr_lookup(const char *d, int *index, size_t *size, int *big, int *untyped) {
  if (strlen(d) != 3) return -1;
  char order = d[0], kind = d[1];
  if (order != '<' && order != '>' && order != '|' && order != '=') return -1;
  if (d[2] < '1' || d[2] > '9') return -1;
  size_t sz = (size_t)(d[2] - '0');
  *size = sz;
  *big = 0;
  *untyped = 0;
  *index = -1;
  if (kind == 'V') { /* void: no byte order */
    *untyped = 1;
    if (sz == 2) *index = npy_type_index(EXMY_DTYPE_BF16);
    return sz == 1 || sz == 2 || sz == 4 || sz == 8 ? 0 : -1;
  }
  if (kind == 'f' && sz == 1) {
    *untyped = 1;
    *index = npy_type_index(EXMY_DTYPE_E5M2);
    return 0;
  }
  for (size_t i = 0; i < NPY_NTYPES; i++) {
    if (npy_types[i].kind == kind && npy_types[i].size == sz) {
      *index = (int)i;
      *big = order == '>' && sz > 1;
      return 0;
    }
  }
  return -1;
}

static void byteswap(unsigned char *p, size_t count, size_t size) {
  for (size_t i = 0; i < count; i++, p += size)
    for (size_t a = 0, b = size - 1; a < b; a++, b--) {
      unsigned char t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* ---- reading ------------------------------------------------------------ */

/* want: the dtype the caller says the file holds, or -1 (what it says). */
static int npy_read(const char *path, int want, exmy_array *arr, char *err, size_t errlen) {
  FILE *f = NULL;
  char *hdr = NULL;
  unsigned char *data = NULL;
  int rc = -1;
  char msg[EXMY_ERRLEN];
  char shp[300];

  if (err && errlen) err[0] = 0;
  if (!arr) return npy_fail(err, errlen, path, "no array to read into");
  memset(arr, 0, sizeof *arr);
  if (!path) return npy_fail(err, errlen, path, "no file name");
  if (!host_is_little_endian())
    return npy_fail(err, errlen, path, "exmy needs a little-endian host");

  f = fopen(path, "rb");
  if (!f) return npy_fail(err, errlen, path, "cannot open: %s", strerror(errno));

  /* Size of a regular file, to check lengths before allocating. */
  int size_known = 0;
  uint64_t fsize = 0;
  {
    struct stat st;
    if (fstat(fileno(f), &st) == 0) {
      if (S_ISDIR(st.st_mode)) {
        npy_fail(err, errlen, path, "is a directory, not a .npy file");
        goto out;
      }
      if (S_ISREG(st.st_mode) && st.st_size >= 0) {
        size_known = 1;
        fsize = (uint64_t)st.st_size;
      }
    }
  }

  unsigned char pre[12];
  size_t got = fread(pre, 1, 8, f);
  if (ferror(f)) {
    npy_fail(err, errlen, path, "read error: %s", strerror(errno));
    goto out;
  }
  if (got == 0) {
    npy_fail(err, errlen, path, "empty file, not a .npy file");
    goto out;
  }
  if (memcmp(pre, "\x93NUMPY", got < 6 ? got : 6) != 0) {
    npy_fail(err, errlen, path, "not a .npy file (it does not start with \\x93NUMPY)");
    goto out;
  }
  if (got < 8) {
    npy_fail(err, errlen, path, "truncated: the file ends after %zu bytes, inside the magic string and version", got);
    goto out;
  }
  unsigned major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0) {
    npy_fail(err, errlen, path, "unsupported .npy format version %u.%u (exmy reads 1.0, 2.0, 3.0)", major, minor);
    goto out;
  }
  size_t lenbytes = major == 1 ? 2 : 4;
  got = fread(pre + 8, 1, lenbytes, f);
  if (got < lenbytes) {
    npy_fail(err, errlen, path, "truncated: the file ends inside the header length field");
    goto out;
  }
  uint64_t hlen = (uint64_t)pre[8] | ((uint64_t)pre[9] << 8);
  if (lenbytes == 4) hlen |= ((uint64_t)pre[10] << 16) | ((uint64_t)pre[11] << 24);
  uint64_t offset = 8 + lenbytes + hlen;
  if (size_known && offset > fsize) {
    npy_fail(err, errlen, path,
             "truncated header: the header length field says %llu bytes but only %llu follow",
             (unsigned long long)hlen, (unsigned long long)(fsize - 8 - lenbytes));
    goto out;
  }
  if (hlen > NPY_MAX_HEADER) {
    npy_fail(err, errlen, path, "header length %llu is implausibly large (limit %u)",
             (unsigned long long)hlen, NPY_MAX_HEADER);
    goto out;
  }
  hdr = malloc((size_t)hlen + 1);
  if (!hdr) {
    npy_fail(err, errlen, path, "out of memory");
    goto out;
  }
  got = fread(hdr, 1, (size_t)hlen, f);
  if (got < hlen) {
    npy_fail(err, errlen, path,
             "truncated header: the header length field says %llu bytes but only %zu follow",
             (unsigned long long)hlen, got);
    goto out;
  }
  hdr[hlen] = 0;

  npy_header h;
  if (parse_header(hdr, (size_t)hlen, &h, msg, sizeof msg)) {
    npy_fail(err, errlen, path, "bad header: %s", msg);
    goto out;
  }
  int ti, big, untyped;
  size_t size;
  char dq[200];
  npy_quote(dq, sizeof dq, h.descr, strlen(h.descr));
  if (descr_lookup(h.descr, &ti, &size, &big, &untyped)) {
    npy_fail(err, errlen, path, "unsupported dtype '%s' (exmy reads " NPY_READS ")", dq);
    goto out;
  }
  if (want >= 0) {
    int wi = npy_type_index((exmy_dtype)want);
    if (untyped && npy_types[wi].size == size) {
      ti = wi; /* the caller names what the header cannot */
    } else if (ti != wi) {
      if (untyped)
        npy_fail(err, errlen, path, "holds %zu-byte elements ('%s'), not %s", size, dq, npy_types[wi].name);
      else
        npy_fail(err, errlen, path, "holds %s ('%s'), not %s", npy_types[ti].name, dq, npy_types[wi].name);
      goto out;
    }
  } else if (ti < 0) {
    npy_fail(err, errlen, path,
             "dtype '%s' is %zu-byte elements of a type the file does not name (ml_dtypes saves its "
             "float8 types so): say which with exmy_npy_read_as", dq, size);
    goto out;
  }
  npy_shape_repr(shp, sizeof shp, h.ndim, h.shape);

  /* Element count and byte count, guarded against overflow. */
  size_t count = 1;
  int zero = 0, overflow = 0, nontrivial = 0;
  for (int d = 0; d < h.ndim; d++) {
    if (h.shape[d] == 0) zero = 1;
    if (h.shape[d] > 1) nontrivial++;
  }
  if (zero) {
    count = 0;
  } else {
    for (int d = 0; d < h.ndim; d++) {
      if (count > SIZE_MAX / h.shape[d]) overflow = 1;
      else count *= h.shape[d];
    }
  }
  if (overflow || count > SIZE_MAX / size) {
    npy_fail(err, errlen, path, "shape %s of %s is too large (its byte count overflows)",
             shp, npy_types[ti].name);
    goto out;
  }
  size_t bytes = count * size;

  if (h.fortran && nontrivial > 1) {
    npy_fail(err, errlen, path,
             "fortran_order is True (column-major) for shape %s; exmy reads C-order arrays only "
             "(save np.ascontiguousarray(a))", shp);
    goto out;
  }

  if (size_known && fsize - offset < bytes) {
    npy_fail(err, errlen, path,
             "truncated data: shape %s of %s needs %zu bytes but the file has %llu after the header",
             shp, npy_types[ti].name, bytes, (unsigned long long)(fsize - offset));
    goto out;
  }

  /* Read the data.  When the file size is unknown (a pipe), grow the
   * buffer as data arrive rather than trusting the shape. */
  size_t cap = bytes;
  if (!size_known && cap > ((size_t)1 << 24)) cap = (size_t)1 << 24;
  data = malloc(cap ? cap : 1);
  if (!data) {
    npy_fail(err, errlen, path, "out of memory for %zu bytes of data", cap);
    goto out;
  }
  size_t have = 0;
  while (have < bytes) {
    if (have == cap) {
      size_t ncap = cap > bytes / 2 ? bytes : cap * 2;
      unsigned char *nd = realloc(data, ncap);
      if (!nd) {
        npy_fail(err, errlen, path, "out of memory for %zu bytes of data", ncap);
        goto out;
      }
      data = nd;
      cap = ncap;
    }
    size_t r = fread(data + have, 1, cap - have, f);
    have += r;
    if (r == 0) break;
  }
  if (have < bytes) {
    if (ferror(f))
      npy_fail(err, errlen, path, "read error: %s", strerror(errno));
    else
      npy_fail(err, errlen, path,
               "truncated data: shape %s of %s needs %zu bytes but the file has %zu after the header",
               shp, npy_types[ti].name, bytes, have);
    goto out;
  }
  if (big) byteswap(data, count, size);

  arr->dtype = npy_types[ti].dt;
  arr->ndim = h.ndim;
  for (int d = 0; d < h.ndim; d++) arr->shape[d] = h.shape[d];
  arr->count = count;
  arr->data = data;
  data = NULL;
  rc = 0;

out:
  free(data);
  free(hdr);
  if (f) fclose(f);
  return rc;
}

int exmy_npy_read(const char *path, exmy_array *arr, char *err, size_t errlen) {
  return npy_read(path, -1, arr, err, errlen);
}

int exmy_npy_read_as(const char *path, exmy_dtype dtype, exmy_array *arr, char *err, size_t errlen) {
  if (err && errlen) err[0] = 0;
  if (arr) memset(arr, 0, sizeof *arr);
  if (npy_type_index(dtype) < 0)
    return npy_fail(err, errlen, path, "cannot read as invalid dtype %d", (int)dtype);
  return npy_read(path, (int)dtype, arr, err, errlen);
}

/* ---- writing ------------------------------------------------------------ */

int exmy_npy_write(const char *path, const exmy_array *arr, char *err, size_t errlen) {
  char head[512];
  char shp[300];
  if (err && errlen) err[0] = 0;
  if (!path) return npy_fail(err, errlen, path, "no file name");
  if (!arr) return npy_fail(err, errlen, path, "no array to write");
  if (!host_is_little_endian())
    return npy_fail(err, errlen, path, "exmy needs a little-endian host");
  int ti = npy_type_index(arr->dtype);
  if (ti < 0) return npy_fail(err, errlen, path, "cannot write: invalid dtype %d", (int)arr->dtype);
  if (arr->ndim < 0 || arr->ndim > NPY_MAX_DIMS)
    return npy_fail(err, errlen, path, "cannot write: %d dimensions (exmy supports 0 to %d)",
                    arr->ndim, NPY_MAX_DIMS);
  size_t size = npy_types[ti].size;
  size_t count = 1;
  int zero = 0, overflow = 0;
  for (int d = 0; d < arr->ndim; d++)
    if (arr->shape[d] == 0) zero = 1;
  if (zero) count = 0;
  else
    for (int d = 0; d < arr->ndim; d++) {
      if (count > SIZE_MAX / arr->shape[d]) overflow = 1;
      else count *= arr->shape[d];
    }
  npy_shape_repr(shp, sizeof shp, arr->ndim, arr->shape);
  if (overflow || count > SIZE_MAX / size)
    return npy_fail(err, errlen, path, "cannot write: shape %s is too large", shp);
  if (count != arr->count)
    return npy_fail(err, errlen, path, "cannot write: count %zu does not match shape %s",
                    arr->count, shp);
  if (count > 0 && !arr->data)
    return npy_fail(err, errlen, path, "cannot write: no data");
  size_t bytes = count * size;

  /* The header exactly as numpy's _write_array_header builds it. */
  char dict[400];
  int dl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                    npy_types[ti].descr, shp);
  if (dl < 0 || (size_t)dl >= sizeof dict)
    return npy_fail(err, errlen, path, "cannot write: header too long");
  if (arr->ndim > 0) {
    char first[32];
    int fl = snprintf(first, sizeof first, "%zu", arr->shape[0]);
    for (int k = fl; k < 21 && (size_t)dl + 1 < sizeof dict; k++) dict[dl++] = ' ';
    dict[dl] = 0;
  }
  size_t hlen = (size_t)dl + 1; /* + '\n' */
  size_t lenbytes = 2;
  size_t pad = 64 - ((8 + 2 + hlen) % 64);
  if (hlen + pad > 65535) {
    lenbytes = 4;
    pad = 64 - ((8 + 4 + hlen) % 64);
  }
  size_t total = 8 + lenbytes + hlen + pad;
  if (total > sizeof head) return npy_fail(err, errlen, path, "cannot write: header too long");
  memcpy(head, "\x93NUMPY", 6);
  head[6] = (char)(lenbytes == 2 ? 1 : 2);
  head[7] = 0;
  size_t hl = hlen + pad;
  head[8] = (char)(hl & 0xff);
  head[9] = (char)((hl >> 8) & 0xff);
  if (lenbytes == 4) {
    head[10] = (char)((hl >> 16) & 0xff);
    head[11] = (char)((hl >> 24) & 0xff);
  }
  memcpy(head + 8 + lenbytes, dict, (size_t)dl);
  memset(head + 8 + lenbytes + dl, ' ', pad);
  head[total - 1] = '\n';

  /* Where the bytes go.  Through a symbolic link to its target (the link
   * stays a link).  A directory is an error.  A device or pipe (/dev/stdout,
   * /dev/null) is written in place: there is nothing to replace atomically.
   * Otherwise a temporary file next to the target is renamed over it. */
  char *target = NULL;
  struct stat st;
#if !defined(_WIN32)
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) target = realpath(path, NULL);
#endif
  const char *dest = target ? target : path;
  int in_place = 0;
  if (stat(dest, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      free(target);
      return npy_fail(err, errlen, path, "cannot write: is a directory");
    }
    if (!S_ISREG(st.st_mode)) in_place = 1;
  }
  char *tmp = NULL;
  if (!in_place) {
    size_t tlen = strlen(dest) + 32;
    tmp = malloc(tlen);
    if (!tmp) {
      free(target);
      return npy_fail(err, errlen, path, "out of memory");
    }
    snprintf(tmp, tlen, "%s.tmp.%ld", dest, npy_getpid());
  }

  int rc = -1;
  FILE *f = fopen(in_place ? dest : tmp, "wb");
  if (!f) {
    int e = errno;
    npy_fail(err, errlen, path, "cannot create %s: %s", in_place ? dest : tmp, strerror(e));
    goto done;
  }
  int ok = fwrite(head, 1, total, f) == total;
  if (ok && bytes) ok = fwrite(arr->data, 1, bytes, f) == bytes;
  if (ok) ok = fflush(f) == 0;
  int e = errno;
#if !defined(_WIN32)
  if (ok && !in_place && fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS) {
    ok = 0;
    e = errno;
  }
#endif
  if (fclose(f) != 0 && ok) {
    ok = 0;
    e = errno;
  }
  if (!ok) {
    if (tmp) remove(tmp);
    npy_fail(err, errlen, path, "write error: %s", strerror(e));
    goto done;
  }
  if (tmp && rename(tmp, dest) != 0) {
    e = errno;
    remove(tmp);
    npy_fail(err, errlen, path, "cannot rename %s into place: %s", tmp, strerror(e));
    goto done;
  }
  rc = 0;
done:
  free(tmp);
  free(target);
  return rc;
}
