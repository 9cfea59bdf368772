/* test_api.c: the contracts of the 1.0 API convention (exmy.h's top
 * comment) that no numerics test covers: the version, the one dtype enum,
 * error reporting (0 / -1 with a message naming the bad input), sticky flags
 * OR-ed into the caller's *flags, recipe state ownership (deep copy) and
 * borrowed views. */
#include <math.h>
#include "testutil.h"

/* cuda_fp8.h's cast: rne with EXMY_SAT_FINITE (what rnd = NULL meant before 1.0). */
static exmy_rounding cuda_rnd(void) {
  exmy_rounding r = exmy_rounding_default();
  r.mode = EXMY_RNE;
  r.sat = EXMY_SAT_FINITE;
  return r;
}

static void test_version(void) {
  const char *v = exmy_version();
  CHECK(v && !strcmp(v, EXMY_VERSION), "exmy_version() is '%s', header EXMY_VERSION '%s'", v ? v : "(null)",
        EXMY_VERSION);
  char mm[64];
  snprintf(mm, sizeof mm, "%d.%d.%d", EXMY_VERSION_MAJOR, EXMY_VERSION_MINOR, EXMY_VERSION_PATCH);
  CHECK(!strcmp(mm, EXMY_VERSION), "EXMY_VERSION_MAJOR.MINOR.PATCH is %s, EXMY_VERSION '%s'", mm, EXMY_VERSION);
  int a = -1, b = -1, c = -1;
  CHECK(v && sscanf(v, "%d.%d.%d", &a, &b, &c) == 3 && a == EXMY_VERSION_MAJOR && b == EXMY_VERSION_MINOR &&
            c == EXMY_VERSION_PATCH,
        "library version '%s' does not match the macros %d.%d.%d", v ? v : "(null)", EXMY_VERSION_MAJOR,
        EXMY_VERSION_MINOR, EXMY_VERSION_PATCH);
}

static void test_dtypes(void) {
  static const struct {
    exmy_dtype dt;
    size_t size;
    const char *name;
  } t[] = {{EXMY_DTYPE_F32, 4, "float32"},          {EXMY_DTYPE_F64, 8, "float64"},
           {EXMY_DTYPE_BF16, 2, "bfloat16"},        {EXMY_DTYPE_F16, 2, "float16"},
           {EXMY_DTYPE_U8, 1, "uint8"},             {EXMY_DTYPE_U16, 2, "uint16"},
           {EXMY_DTYPE_U32, 4, "uint32"},           {EXMY_DTYPE_U64, 8, "uint64"},
           {EXMY_DTYPE_E4M3FN, 1, "float8_e4m3fn"}, {EXMY_DTYPE_E5M2, 1, "float8_e5m2"}};
  CHECK(sizeof t / sizeof t[0] == (size_t)EXMY_DTYPE_E5M2 + 1, "%s", "the table misses an enum value");
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    CHECK((int)t[i].dt == (int)i, "enum value %zu is %d", i, (int)t[i].dt);
    CHECK(exmy_dtype_size(t[i].dt) == t[i].size, "exmy_dtype_size(%s) = %zu, expected %zu", t[i].name,
          exmy_dtype_size(t[i].dt), t[i].size);
    const char *n = exmy_dtype_name(t[i].dt);
    CHECK(n && !strcmp(n, t[i].name), "exmy_dtype_name(%d) = '%s', expected '%s'", (int)t[i].dt, n ? n : "(null)",
          t[i].name);
  }
  /* outside the enum: size 0 and "?", as the other _name functions */
  const exmy_dtype bad = (exmy_dtype)((int)EXMY_DTYPE_E5M2 + 1);
  CHECK(exmy_dtype_size(bad) == 0 && !strcmp(exmy_dtype_name(bad), "?") &&
            !strcmp(exmy_round_mode_name((exmy_round_mode)99), "?") && !strcmp(exmy_class_name((exmy_class)99), "?"),
        "out-of-enum names: dtype %zu '%s', round mode '%s', class '%s' (want 0, ?, ?, ?)", exmy_dtype_size(bad),
        exmy_dtype_name(bad), exmy_round_mode_name((exmy_round_mode)99), exmy_class_name((exmy_class)99));
}

static void test_round_mode_parse(void) {
  for (int m = EXMY_RNE; m <= EXMY_SR; m++) {
    exmy_round_mode got = (exmy_round_mode)-1;
    char err[EXMY_ERRLEN] = "";
    const char *name = exmy_round_mode_name((exmy_round_mode)m);
    CHECK(exmy_round_mode_parse(name, &got, err, sizeof err) == 0 && got == (exmy_round_mode)m,
          "'%s' does not parse back to mode %d: %s", name, m, err);
  }
  static const char *bad[] = {"rnx", "RNE", "", "sr2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    exmy_round_mode got = EXMY_RNE;
    char err[EXMY_ERRLEN] = "";
    int rc = exmy_round_mode_parse(bad[i], &got, err, sizeof err);
    char quoted[32];
    snprintf(quoted, sizeof quoted, "'%s'", bad[i]);
    CHECK(rc == -1 && strstr(err, quoted) && strstr(err, "rne") && strstr(err, "sr"),
          "exmy_round_mode_parse(\"%s\"): rc %d, err '%s' (should name the text and the accepted modes)", bad[i], rc,
          err);
  }
  exmy_round_mode got;
  CHECK(exmy_round_mode_parse("bogus", &got, NULL, 0) == -1, "%s", "a bad mode with err NULL does not fail");
}

static void test_quantize_contract(void) {
  exmy_format f = tu_format("e4m3fn");
  exmy_rounding r = cuda_rnd();
  const float x[4] = {1.0f, 1000.0f, 0.1f, -2.0f}; /* 1000 overflows (saturates), 0.1 is inexact */
  uint8_t codes[4];
  for (int ref = 0; ref < 2; ref++) {
    const char *fn = ref ? "exmy_quantize_ref" : "exmy_quantize";
    int (*q)(const exmy_format *, const exmy_rounding *, exmy_dtype, const void *, size_t, uint64_t, void *,
             unsigned *, char *, size_t) = ref ? exmy_quantize_ref : exmy_quantize;
    /* a source type that is not a float type */
    static const exmy_dtype notfloat[] = {EXMY_DTYPE_U8, EXMY_DTYPE_U32, EXMY_DTYPE_E4M3FN, EXMY_DTYPE_E5M2};
    for (size_t i = 0; i < sizeof notfloat / sizeof notfloat[0]; i++) {
      char err[EXMY_ERRLEN] = "";
      unsigned fl = 0;
      int rc = q(&f, &r, notfloat[i], x, 4, 0, codes, &fl, err, sizeof err);
      CHECK(rc == -1 && strstr(err, exmy_dtype_name(notfloat[i])) && fl == 0,
            "%s with src_type %s: rc %d, flags %u, err '%s' (want -1, no flags, err naming the type)", fn,
            exmy_dtype_name(notfloat[i]), rc, fl, err);
    }
    /* rnd NULL is an error, never a default */
    {
      char err[EXMY_ERRLEN] = "";
      unsigned fl = 0;
      int rc = q(&f, NULL, EXMY_DTYPE_F32, x, 4, 0, codes, &fl, err, sizeof err);
      CHECK(rc == -1 && strlen(err) > 5 && fl == 0, "%s with rnd NULL: rc %d, flags %u, err '%s'", fn, rc, fl, err);
      CHECK(q(&f, NULL, EXMY_DTYPE_F32, x, 4, 0, codes, NULL, NULL, 0) == -1, "%s with rnd NULL and err NULL: not -1",
            fn);
    }
    /* flags are OR-ed into *flags, never cleared: a bit set before survives */
    {
      unsigned want = 0;
      for (size_t i = 0; i < 4; i++) (void)exmy_from_float(&f, &r, x[i], i, &want);
      CHECK((want & EXMY_FLAG_OVERFLOW) && (want & EXMY_FLAG_INEXACT) && !(want & EXMY_FLAG_INVALID),
            "self-check: scalar flags %u", want);
      char err[EXMY_ERRLEN] = "";
      unsigned fl = EXMY_FLAG_INVALID | 0x100u; /* set by the caller before the call */
      int rc = q(&f, &r, EXMY_DTYPE_F32, x, 4, 0, codes, &fl, err, sizeof err);
      CHECK(rc == 0 && fl == (want | EXMY_FLAG_INVALID | 0x100u),
            "%s: rc %d, flags 0x%x after the call, expected 0x%x (the caller's 0x108 kept, the call's 0x%x added): %s", fn,
            rc, fl, want | EXMY_FLAG_INVALID | 0x100u, want, err);
      CHECK(codes[1] == 0x7E, "%s: 1000 with satfinite gave 0x%02x, expected 0x7E", fn, codes[1]);
      /* NULL flags is allowed */
      CHECK(q(&f, &r, EXMY_DTYPE_F32, x, 4, 0, codes, NULL, NULL, 0) == 0, "%s: flags NULL rejected", fn);
    }
  }
}

static void test_state_copy(void) {
  exmy_recipe rec;
  exmy_recipe_state a, b;
  char err[EXMY_ERRLEN] = "";
  exmy_format f = tu_format("e4m3fn");
  exmy_rounding r = cuda_rnd();
  if (exmy_recipe_parse("delayed:len=4", &rec, err, sizeof err) || exmy_recipe_state_init(&rec, &a, err, sizeof err)) {
    CHECK(0, "delayed:len=4: %s", err);
    return;
  }
  CHECK(a.history && a.history_len == 4 && a.scale == 1.0f && a.scale_inv == 1.0f && a.steps == 0,
        "fresh state: history %p len %d scale %a inv %a steps %ld", (void *)a.history, a.history_len, a.scale,
        a.scale_inv, a.steps);
  /* give the source a non-trivial history: two steps and a pending amax */
  float x[3] = {3.0f, -7.0f, 0.5f};
  for (int s = 0; s < 3; s++) {
    exmy_qtensor q;
    x[1] *= 2.0f;
    CHECK(exmy_recipe_quantize(&rec, &f, &r, x, 1, 3, &a, &q, NULL, err, sizeof err) == 0, "delayed quantize: %s",
          err);
    exmy_qtensor_free(&q);
    if (s < 2) exmy_recipe_step(&rec, &a);
  }
  float saved[4];
  memcpy(saved, a.history, sizeof saved);
  const float scale = a.scale, scale_inv = a.scale_inv, fmax = a.fmax;
  const long steps = a.steps;
  memset(&b, 0xA5, sizeof b); /* "uninitialised dst" */
  CHECK(exmy_recipe_state_copy(&a, &b, err, sizeof err) == 0, "exmy_recipe_state_copy: %s", err);
  CHECK(b.history && b.history != a.history && b.history_len == 4 && !memcmp(b.history, saved, sizeof saved) &&
            b.scale == scale && b.scale_inv == scale_inv && b.fmax == fmax && b.steps == steps,
        "copy differs from its source or shares its history (%p vs %p)", (void *)b.history, (void *)a.history);
  /* change the copy: the source must not see it */
  if (b.history && b.history != a.history) {
    for (int j = 0; j < 4; j++) b.history[j] = 12345.0f + (float)j;
    b.scale = 99.0f;
    exmy_recipe_step(&rec, &b);
    CHECK(!memcmp(a.history, saved, sizeof saved) && a.scale == scale && a.scale_inv == scale_inv && a.steps == steps,
          "changing the copy changed the source: history [%g %g %g %g], expected [%g %g %g %g]", a.history[0],
          a.history[1], a.history[2], a.history[3], saved[0], saved[1], saved[2], saved[3]);
    exmy_recipe_state_free(&b);
  }
  /* and the other way: stepping the source leaves a fresh copy alone */
  exmy_recipe_state c;
  CHECK(exmy_recipe_state_copy(&a, &c, err, sizeof err) == 0, "second copy: %s", err);
  exmy_recipe_step(&rec, &a);
  CHECK(c.history && !memcmp(c.history, saved, sizeof saved) && c.scale == scale,
        "stepping the source changed its copy: copy history[0] %g scale %a", c.history ? c.history[0] : -1.0,
        c.scale);
  exmy_recipe_state_free(&c);
  exmy_recipe_state_free(&a);
  CHECK(a.history == NULL, "%s", "exmy_recipe_state_free left a history pointer");
}

static void test_view(void) {
  exmy_format f = tu_format("e4m3fn");
  const size_t rows = 4, cols = 16, n = rows * cols;
  uint8_t *codes = malloc(n), *snapshot = malloc(n);
  float *sinv = malloc(sizeof *sinv), sinv_saved = 0.5f;
  for (size_t i = 0; i < n; i++) codes[i] = (uint8_t)(i * 37 + 11) & 0x7e;
  memcpy(snapshot, codes, n);
  *sinv = sinv_saved;
  exmy_qtensor v;
  memset(&v, 0x5A, sizeof v);
  exmy_qtensor_view(&f, codes, rows, cols, sinv, &v);
  CHECK(v.is_view == 1 && v.codes == codes && v.rows == rows && v.cols == cols && v.scale_inv == sinv &&
            v.srows == 1 && v.scols == 1 && v.fmt.bits == 8,
        "view: is_view %d codes %p (want %p) %zux%zu scale_inv %p (want %p)", v.is_view, v.codes, (void *)codes,
        v.rows, v.cols, (void *)v.scale_inv, (void *)sinv);
  /* the view reads as the borrowed codes times scale_inv */
  double *dq = malloc(n * sizeof *dq);
  exmy_qtensor_dequant_f64(&v, dq);
  int dq_ok = 1;
  for (size_t i = 0; i < n; i++) dq_ok &= dq[i] == exmy_decode(&f, codes[i]) * 0.5;
  CHECK(dq_ok, "%s", "view dequant is not decode * scale_inv");
  free(dq);
  exmy_qtensor_free(&v);
  CHECK(!memcmp(codes, snapshot, n) && *sinv == sinv_saved, "%s", "exmy_qtensor_free on a view changed the borrowed codes");
  exmy_qtensor_free(&v); /* safe twice */
  CHECK(!memcmp(codes, snapshot, n), "%s", "a second exmy_qtensor_free on the view changed the borrowed codes");
  /* still ours: writing and freeing them is fine (under ASan a double free shows here) */
  codes[0] ^= 1;
  free(codes);
  free(snapshot);
  free(sinv);
}

static void test_recipe_flags(void) {
  exmy_format f = tu_format("e4m3fn");
  exmy_rounding r = cuda_rnd();
  const float x[4] = {1000.0f, 1.0f, -3.0f, 0.5f}; /* recipe none: scale 1, 1000 > 448 saturates */
  unsigned want = 0;
  for (size_t i = 0; i < 4; i++) (void)exmy_from_float(&f, &r, x[i], i, &want);
  CHECK(want == EXMY_FLAG_OVERFLOW + EXMY_FLAG_INEXACT, "self-check: the scalar cast raised 0x%x", want);
  exmy_recipe rec;
  char err[EXMY_ERRLEN] = "";
  if (exmy_recipe_parse("none", &rec, err, sizeof err)) {
    CHECK(0, "none: %s", err);
    return;
  }
  exmy_qtensor q;
  unsigned fl = 0;
  int rc = exmy_recipe_quantize(&rec, &f, &r, x, 1, 4, NULL, &q, &fl, err, sizeof err);
  CHECK(rc == 0 && fl == want, "recipe none, 1000 into e4m3fn satfinite: rc %d flags 0x%x, expected 0x%x: %s", rc, fl,
        want, err);
  if (rc == 0) {
    CHECK(exmy_code_get(&f, q.codes, 0) == 0x7E, "1000 saturated to 0x%02x, expected 0x7E",
          (unsigned)exmy_code_get(&f, q.codes, 0));
    exmy_qtensor_free(&q);
  }
  /* OR-ed, not assigned */
  fl = EXMY_FLAG_UNDERFLOW;
  rc = exmy_recipe_quantize(&rec, &f, &r, x, 1, 4, NULL, &q, &fl, err, sizeof err);
  CHECK(rc == 0 && fl == (want | EXMY_FLAG_UNDERFLOW), "recipe flags 0x%x, expected 0x%x", fl,
        want | EXMY_FLAG_UNDERFLOW);
  if (rc == 0) exmy_qtensor_free(&q);
  /* a delayed recipe without a state, and NULL rnd, fail with a message */
  exmy_recipe d;
  if (exmy_recipe_parse("delayed", &d, err, sizeof err) == 0) {
    err[0] = 0;
    rc = exmy_recipe_quantize(&d, &f, &r, x, 1, 4, NULL, &q, NULL, err, sizeof err);
    CHECK(rc == -1 && strstr(err, "state"), "delayed without a state: rc %d err '%s'", rc, err);
  }
  err[0] = 0;
  rc = exmy_recipe_quantize(&rec, &f, NULL, x, 1, 4, NULL, &q, NULL, err, sizeof err);
  CHECK(rc == -1 && strstr(err, "rnd"), "recipe with rnd NULL: rc %d err '%s'", rc, err);
}

/* Codes with bits above the format's width are NaN (exmy_classify), also in
 * the array decoders' table and bf16-prefix paths (the table path read past
 * its end; under ASan this fails loudly). */
static void test_decode_wide_codes(void) {
  const char *names[] = {"e2m1fn", "e4m3fn", "e8m3"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    exmy_format f;
    exmy_format_parse(names[k], &f, NULL, 0);
    enum { N = 4096 }; /* long enough for the table path */
    static uint16_t codes[N];
    static double d64[N];
    static float d32[N];
    for (size_t i = 0; i < N; i++) codes[i] = (uint16_t)(i * 40503u);
    const int bytes = exmy_code_bytes(&f);
    uint8_t *c8 = (uint8_t *)codes;
    if (bytes == 1)
      for (size_t i = 0; i < N; i++) c8[i] = (uint8_t)(codes[i] >> 8);
    exmy_decode_f64(&f, codes, N, d64);
    exmy_decode_f32(&f, codes, N, d32);
    for (size_t i = 0; i < N; i++) {
      const uint64_t c = exmy_code_get(&f, codes, i);
      const double want = exmy_decode(&f, c);
      if (!(c >> f.bits)) continue;
      CHECK(isnan(want) && isnan(d64[i]) && isnan(d32[i]), "%s code 0x%llx: exmy_decode %a, _f64 %a, _f32 %a",
            names[k], (unsigned long long)c, want, d64[i], (double)d32[i]);
    }
  }
}

int main(void) {
  test_version();
  test_dtypes();
  test_round_mode_parse();
  test_quantize_contract();
  test_state_copy();
  test_view();
  test_recipe_flags();
  test_decode_wide_codes();
  return tu_finish("test_api");
}
