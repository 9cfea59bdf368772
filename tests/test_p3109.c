/* test_p3109.c: decode, classify and format properties against the IEEE
 * P3109 working group's value tables (the oracle).
 *
 *   test_p3109 [DIR]
 *
 * DIR, else env EXMY_P3109_DIR, else the copy vendored in the source tree,
 * tests/data/p3109 (found from env srcdir, set by `make check`, or from this
 * file's directory), holds BinaryKpP{s,u}{e,f}.csv with columns
 * codepoint,value,subnormal: value a C99 hex float, Inf, -Inf or NaN;
 * subnormal '*' or blank.  For every file the lowercased stem
 * (binary8p4se, ...) must parse with exmy_format_parse, and for every row
 * exmy_code_to_f64 must give the value exactly (any NaN for NaN), exmy_classify
 * the class, and the array decoders the same.  The table has 2^K rows, one
 * per code.  exmy_format_info must agree with the table: largest finite,
 * smallest normal and subnormal, epsilon, the number of finite codes and the
 * codes of zero, inf and NaN.  All 120 tables of K = 3..8 must be there.
 * Deterministic: no seed.
 *
 * Exit 0 pass, 1 fail, also when no table directory is found: the tables
 * are part of the source tree (tests/data/p3109/README.md), so a missing
 * copy is a broken tree, not a reason to skip. */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#define VENDORED_SUBDIR "tests/data/p3109"

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory given on the command line or in EXMY_P3109_DIR, else the
 * vendored copy; NULL (with the places tried printed) when there is none. */
static const char *find_dir(int argc, char **argv) {
  static char cand[4][1024];
  if (argc > 1) return argv[1];
  const char *env = getenv("EXMY_P3109_DIR");
  if (env && *env) return env; /* an explicit choice: unreadable is a failure */
  int n = 0;
  const char *sd = getenv("srcdir"); /* automake's test harness: the top source dir */
  if (sd && *sd) snprintf(cand[n++], sizeof cand[0], "%s/%s", sd, VENDORED_SUBDIR);
  /* This file's directory (tests/) as the compiler saw it. */
  char src[900];
  snprintf(src, sizeof src, "%s", __FILE__);
  char *slash = strrchr(src, '/');
  if (slash) {
    *slash = 0;
    snprintf(cand[n++], sizeof cand[0], "%s/data/p3109", src);
  }
  snprintf(cand[n++], sizeof cand[0], "%s", VENDORED_SUBDIR); /* run from the top dir */
  for (int i = 0; i < n; i++)
    if (is_dir(cand[i])) return cand[i];
  for (int i = 0; i < n; i++) printf("note: no directory %s\n", cand[i]);
  return NULL;
}

/* One row of a table. */
typedef struct {
  uint64_t code;
  int kind;      /* 0 finite, 1 +inf, 2 -inf, 3 nan */
  double value;  /* finite: the value */
  int subnormal; /* '*' in the third column */
} row;

static int parse_value(const char *s, row *r) {
  char *end;
  if (!strcmp(s, "Inf")) { r->kind = 1; r->value = INFINITY; return 0; }
  if (!strcmp(s, "-Inf")) { r->kind = 2; r->value = -INFINITY; return 0; }
  if (!strcmp(s, "NaN")) { r->kind = 3; r->value = NAN; return 0; }
  const char *h = s[0] == '-' ? s + 1 : s;
  if (h[0] != '0' || (h[1] != 'x' && h[1] != 'X')) return -1; /* C99 hex floats only */
  r->kind = 0;
  errno = 0;
  r->value = strtod(s, &end);
  return (*end || end == s || errno) ? -1 : 0;
}

/* Read a table; returns the number of rows, or -1 with a message printed. */
static long read_table(const char *path, const char *file, row **rows) {
  FILE *f = fopen(path, "r");
  if (!f) { CHECK(0, "%s: cannot open: %s", file, strerror(errno)); return -1; }
  char line[256];
  long n = 0, cap = 256, lineno = 0;
  *rows = malloc(cap * sizeof **rows);
  while (fgets(line, sizeof line, f)) {
    lineno++;
    size_t l = strlen(line);
    while (l && (line[l - 1] == '\n' || line[l - 1] == '\r')) line[--l] = 0;
    if (lineno == 1) {
      CHECK(!strcmp(line, "codepoint,value,subnormal"), "%s: unexpected header line '%s'", file, line);
      continue;
    }
    if (l == 0) continue;
    char *c1 = strchr(line, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (!c1 || !c2) { CHECK(0, "%s line %ld: not three columns: '%s'", file, lineno, line); continue; }
    *c1 = *c2 = 0;
    row r;
    char *end;
    r.code = strtoull(line, &end, 16);
    if (*end || end == line) { CHECK(0, "%s line %ld: bad codepoint '%s'", file, lineno, line); continue; }
    if (parse_value(c1 + 1, &r)) { CHECK(0, "%s line %ld: bad value '%s'", file, lineno, c1 + 1); continue; }
    const char *sub = c2 + 1;
    CHECK(!strcmp(sub, "*") || !strcmp(sub, " ") || !strcmp(sub, ""),
          "%s line %ld: bad subnormal column '%s'", file, lineno, sub);
    r.subnormal = !strcmp(sub, "*");
    if (n == cap) *rows = realloc(*rows, (cap *= 2) * sizeof **rows);
    (*rows)[n++] = r;
  }
  fclose(f);
  return n;
}

static const char *kind_text(const row *r, char *buf, size_t len) {
  static const char *const k[] = {"", "Inf", "-Inf", "NaN"};
  if (r->kind) return k[r->kind];
  snprintf(buf, len, "%a", r->value);
  return buf;
}

static int same_value(double got, const row *r) {
  if (r->kind == 3) return isnan(got);
  return got == r->value && signbit(got) == signbit(r->value);
}

static exmy_class expected_class(const row *r) {
  if (r->kind == 3) return EXMY_CLASS_NAN;
  if (r->kind) return EXMY_CLASS_INF;
  if (r->value == 0) return EXMY_CLASS_ZERO;
  return r->subnormal ? EXMY_CLASS_SUBNORMAL : EXMY_CLASS_NORMAL;
}

static int code_in(uint64_t c, const uint64_t *list, int n) {
  for (int i = 0; i < n; i++)
    if (list[i] == c) return 1;
  return 0;
}

static void check_table(const char *dir, const char *file) {
  char path[2048], name[64], vb[64], gb[64];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  size_t stem = strlen(file) - 4;
  if (stem >= sizeof name) stem = sizeof name - 1;
  for (size_t i = 0; i < stem; i++) name[i] = (char)tolower((unsigned char)file[i]);
  name[stem] = 0;
  int K = 0, P = 0;
  char sg = 0, dom = 0, extra = 0;
  if (sscanf(name, "binary%dp%d%c%c%c", &K, &P, &sg, &dom, &extra) != 4 || K < 1 || K > 16 ||
      P < 1 || P > K || (sg != 's' && sg != 'u') || (dom != 'e' && dom != 'f')) {
    CHECK(0, "%s: file name is not BinaryKpP{s,u}{e,f}.csv", file);
    return;
  }
  int is_signed = sg == 's', extended = dom == 'e';

  exmy_format fmt;
  char err[EXMY_ERRLEN];
  if (exmy_format_parse(name, &fmt, err, sizeof err)) {
    CHECK(0, "%s: exmy_format_parse(\"%s\") failed: %s", file, name, err);
    return;
  }
  int E = is_signed ? K - P : K - P + 1;
  int bias = 1 << (is_signed ? K - P - 1 : K - P);
  CHECK(fmt.bits == K && fmt.mbits == P - 1 && fmt.ebits == E && fmt.is_signed == is_signed &&
            fmt.bias == bias && fmt.has_zero == 1,
        "%s: %s parsed as bits %d E %d M %d bias %d signed %d zero %d; expected bits %d E %d M %d bias %d signed %d",
        file, name, fmt.bits, fmt.ebits, fmt.mbits, fmt.bias, fmt.is_signed, fmt.has_zero, K, E, P - 1,
        bias, is_signed);
  CHECK((fmt.inf != EXMY_INF_NONE) == extended, "%s: %s has inf=%d", file, name, (int)fmt.inf);
  CHECK(fmt.nan != EXMY_NAN_NONE, "%s: %s has no NaN", file, name);
  if (fmt.bits != K) return; /* the codes below would be meaningless */

  row *rows = NULL;
  long n = read_table(path, file, &rows);
  if (n < 0) return;
  uint64_t ncodes = (uint64_t)1 << K;
  CHECK((uint64_t)n == ncodes, "%s: %ld rows, expected 2^%d = %llu", file, n, K,
        (unsigned long long)ncodes);

  /* Each code once; the facts the table implies. */
  unsigned char *seen = calloc(ncodes, 1);
  double max_finite = -INFINITY, min_normal = INFINITY, min_sub = INFINITY, min_pos = INFINITY;
  double one_next = NAN;
  uint64_t finite = 0, zero_codes[4], inf_codes[4], nan_codes[4];
  int nzero = 0, ninf = 0, nnan = 0;
  for (long i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (r->code >= ncodes) {
      CHECK(0, "%s: code 0x%llx out of range", file, (unsigned long long)r->code);
      continue;
    }
    CHECK(!seen[r->code], "%s: code 0x%llx appears twice", file, (unsigned long long)r->code);
    seen[r->code] = 1;
    CHECK(!r->subnormal || (r->kind == 0 && r->value != 0), "%s code 0x%02llx: table marks %s subnormal",
          file, (unsigned long long)r->code, kind_text(r, vb, sizeof vb));
    if (r->kind == 0) {
      finite++;
      if (r->value > max_finite) max_finite = r->value;
      if (r->value == 0 && nzero < 4) zero_codes[nzero++] = r->code;
      if (r->value > 0) {
        if (r->value < min_pos) min_pos = r->value;
        if (r->subnormal && r->value < min_sub) min_sub = r->value;
        if (!r->subnormal && r->value < min_normal) min_normal = r->value;
      }
      if (r->value == 1.0 && i + 1 < n && rows[i + 1].kind == 0 && rows[i + 1].code == r->code + 1)
        one_next = rows[i + 1].value;
    } else if (r->kind == 3) {
      if (nnan < 4) nan_codes[nnan] = r->code;
      nnan++;
    } else if (ninf < 4) {
      inf_codes[ninf++] = r->code;
    }
  }
  free(seen);

  /* Every row: scalar decode, class, sign. */
  for (long i = 0; i < n; i++) {
    const row *r = &rows[i];
    if (r->code >= ncodes) continue;
    double got = exmy_code_to_f64(&fmt, r->code);
    exmy_class cls = exmy_classify(&fmt, r->code), want = expected_class(r);
    snprintf(gb, sizeof gb, "%a", got);
    CHECK(same_value(got, r), "%s code 0x%02llx: exmy_code_to_f64 gives %s, table says %s", file,
          (unsigned long long)r->code, gb, kind_text(r, vb, sizeof vb));
    CHECK(cls == want, "%s code 0x%02llx (%s): exmy_classify gives %s, table says %s", file,
          (unsigned long long)r->code, kind_text(r, vb, sizeof vb), exmy_class_name(cls),
          exmy_class_name(want));
    if (r->kind != 3)
      CHECK(exmy_code_sign(&fmt, r->code) == (signbit(r->value) ? 1 : 0),
            "%s code 0x%02llx (%s): exmy_code_sign gives %d", file, (unsigned long long)r->code,
            kind_text(r, vb, sizeof vb), exmy_code_sign(&fmt, r->code));
  }

  /* Array decoders over all codes in table order. */
  {
    size_t cb = (size_t)exmy_code_bytes(&fmt);
    CHECK(cb == 1, "%s: exmy_code_bytes is %zu for a %d-bit format", file, cb, K);
    unsigned char *codes = calloc((size_t)n + 1, cb < 8 ? 8 : cb);
    double *d64 = malloc(((size_t)n + 1) * sizeof *d64);
    float *d32 = malloc(((size_t)n + 1) * sizeof *d32);
    for (long i = 0; i < n; i++) exmy_code_set(&fmt, codes, (size_t)i, rows[i].code);
    for (long i = 0; i < n; i++)
      CHECK(exmy_code_get(&fmt, codes, (size_t)i) == rows[i].code, "%s: exmy_code_get/set of 0x%llx",
            file, (unsigned long long)rows[i].code);
    exmy_codes_to_f64(&fmt, codes, (size_t)n, d64);
    exmy_codes_to_f32(&fmt, codes, (size_t)n, d32);
    for (long i = 0; i < n; i++) {
      CHECK(same_value(d64[i], &rows[i]), "%s code 0x%02llx: exmy_codes_to_f64 gives %a, table says %s",
            file, (unsigned long long)rows[i].code, d64[i], kind_text(&rows[i], vb, sizeof vb));
      /* Every value of a format of at most 8 bits is a float. */
      CHECK(same_value((double)d32[i], &rows[i]),
            "%s code 0x%02llx: exmy_codes_to_f32 gives %a, table says %s", file,
            (unsigned long long)rows[i].code, (double)d32[i], kind_text(&rows[i], vb, sizeof vb));
    }
    free(codes);
    free(d64);
    free(d32);
  }

  /* Codes with bits above K set are NaN class (and do not crash). */
  CHECK(exmy_classify(&fmt, ncodes) == EXMY_CLASS_NAN && exmy_classify(&fmt, UINT64_MAX) == EXMY_CLASS_NAN,
        "%s: codes wider than %d bits are not NaN class", file, K);
  (void)exmy_code_to_f64(&fmt, ncodes | 1);

  /* Format properties. */
  exmy_info in;
  exmy_format_info(&fmt, &in);
  CHECK(in.max_finite == max_finite, "%s: info max_finite %a, table %a", file, in.max_finite, max_finite);
  CHECK(in.min_normal == min_normal, "%s: info min_normal %a, table %a", file, in.min_normal, min_normal);
  /* With P = 1 there are no subnormals: the smallest positive value then. */
  double want_sub = isinf(min_sub) ? min_pos : min_sub;
  CHECK(in.min_subnormal == want_sub, "%s: info min_subnormal %a, table %a%s", file, in.min_subnormal,
        want_sub, isinf(min_sub) ? " (no subnormals: smallest positive)" : "");
  CHECK(in.epsilon == ldexp(1.0, 1 - P), "%s: info epsilon %a, expected 2^(1-P) = %a", file, in.epsilon,
        ldexp(1.0, 1 - P));
  if (!isnan(one_next))
    CHECK(in.epsilon == one_next - 1.0, "%s: info epsilon %a, table gap above 1 is %a", file, in.epsilon,
          one_next - 1.0);
  CHECK(in.finite_count == finite, "%s: info finite_count %llu, table %llu", file,
        (unsigned long long)in.finite_count, (unsigned long long)finite);
  CHECK(in.n_zero == nzero && nzero == 1 && in.zero_codes[0] == zero_codes[0],
        "%s: info has %d zero codes (first 0x%llx), table %d (first 0x%llx)", file, in.n_zero,
        (unsigned long long)in.zero_codes[0], nzero, (unsigned long long)(nzero ? zero_codes[0] : 0));
  int inf_ok = in.n_inf == ninf && in.n_inf <= 2;
  for (int i = 0; inf_ok && i < ninf; i++) inf_ok = code_in(inf_codes[i], in.inf_codes, in.n_inf);
  CHECK(inf_ok, "%s: info has %d inf codes, table %d (or they differ)", file, in.n_inf, ninf);
  uint64_t covered = 0;
  int nan_ok = (uint64_t)in.n_nan == (uint64_t)nnan && in.n_nan_ranges >= 1 && in.n_nan_ranges <= 2;
  for (int i = 0; nan_ok && i < in.n_nan_ranges; i++) {
    if (in.nan_last[i] < in.nan_first[i] || in.nan_last[i] >= ncodes) { nan_ok = 0; break; }
    for (uint64_t c = in.nan_first[i]; c <= in.nan_last[i]; c++) {
      int found = 0;
      for (int j = 0; j < nnan && j < 4; j++) found |= nan_codes[j] == c;
      if (!found) nan_ok = 0;
      covered++;
    }
  }
  CHECK(nan_ok && covered == (uint64_t)nnan, "%s: info NaN codes (%llu in %d ranges, first 0x%llx) differ from the table (%d, first 0x%llx)",
        file, (unsigned long long)in.n_nan, in.n_nan_ranges, (unsigned long long)in.nan_first[0], nnan,
        (unsigned long long)(nnan ? nan_codes[0] : 0));
  FILE *sink = tmpfile();
  if (sink) {
    exmy_format_info_print(&fmt, sink);
    fclose(sink);
  }

  /* The long form reads back to the same format. */
  char lf[200];
  int ll = exmy_format_to_string(&fmt, lf, sizeof lf);
  exmy_format back;
  CHECK(ll > 0 && (size_t)ll < sizeof lf && exmy_format_parse(lf, &back, err, sizeof err) == 0 &&
            back.ebits == fmt.ebits && back.mbits == fmt.mbits && back.bias == fmt.bias &&
            back.is_signed == fmt.is_signed && back.has_zero == fmt.has_zero && back.inf == fmt.inf &&
            back.nan == fmt.nan,
        "%s: long form '%s' of %s does not read back to the same format", file, lf, name);
  free(rows);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  (void)tu_seed; /* deterministic: no seed */
  const char *dir = find_dir(argc, argv);
  if (!dir) {
    printf("FAIL test_p3109: the vendored P3109 value tables (%s in the source tree) are missing;"
           " give a directory or set EXMY_P3109_DIR\n", VENDORED_SUBDIR);
    return 1;
  }
  DIR *d = opendir(dir);
  if (!d) {
    printf("FAIL test_p3109: cannot read directory %s: %s\n", dir, strerror(errno));
    return 1;
  }
  printf("test_p3109: tables in %s (deterministic, no seed)\n", dir);
  char **names = NULL;
  size_t nn = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t l = strlen(e->d_name);
    if (l < 5 || strcmp(e->d_name + l - 4, ".csv")) continue;
    if (nn == cap) names = realloc(names, (cap = cap ? 2 * cap : 128) * sizeof *names);
    names[nn++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, nn, sizeof *names, cmp_str);
  CHECK(nn > 0, "no .csv files in %s", dir);

  /* Every P3109 format of 3 to 8 bits has its table. */
  int missing = 0;
  for (int K = 3; K <= 8; K++)
    for (int P = 1; P <= K; P++)
      for (int s = 0; s < 2; s++)
        for (int x = 0; x < 2; x++) {
          if (s == 0 && P == K) continue; /* signed needs an exponent bit */
          char want[64];
          snprintf(want, sizeof want, "Binary%dp%d%c%c.csv", K, P, s ? 'u' : 's', x ? 'f' : 'e');
          int found = 0;
          for (size_t i = 0; i < nn && !found; i++) found = !strcmp(names[i], want);
          if (!found && missing++ < 5) printf("note: %s/%s is missing\n", dir, want);
        }
  CHECK(missing == 0, "%d of the 120 P3109 tables for K = 3..8 are missing from %s", missing, dir);

  for (size_t i = 0; i < nn; i++) {
    check_table(dir, names[i]);
    free(names[i]);
  }
  free(names);

  /* The conformance formats are named formats. */
  static const char *const conf[] = {"binary8p4se", "binary8p3se", "binary4p2sf"};
  for (size_t c = 0; c < 3; c++) {
    int found = 0;
    for (size_t i = 0; i < exmy_named_format_count(); i++) {
      const exmy_named_format *nf = exmy_named_format_get(i);
      if (nf && nf->name && !strcmp(nf->name, conf[c])) found = 1;
    }
    CHECK(found, "P3109 conformance format %s is not in the table of named formats", conf[c]);
  }
  printf("test_p3109: %zu tables\n", nn);
  return tu_finish("test_p3109");
}
