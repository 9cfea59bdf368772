/* test_api.c: the contracts of the 1.0 API convention (exmy.h's top
 * comment) that no numerics test covers: the version, the one dtype enum,
 * error reporting (0 / -1 with a message naming the bad input), sticky flags
 * OR-ed into the caller's *flags, recipe state ownership (deep copy) and
 * borrowed views; and the 1.4 rules (docs/api.md, "What changed in 1.4"):
 * every function taking a rounding checks it, tables walk one way, the new
 * calls report flags, and each deprecated name still gives what its
 * replacement gives. */
#include <math.h>
#include "testutil.h"
#include "formats/internal.h" /* exmy__gpu_d_flags: the GPU GEMM's flags, testable without a GPU */

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
      for (size_t i = 0; i < 4; i++) (void)exmy_from_f32(&f, &r, x[i], i, &want);
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
  if (exmy_recipe_parse("delayed:len=4", &rec, err, sizeof err) || exmy_recipe_state_new(&rec, &a, err, sizeof err)) {
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
  exmy_qtensor_to_f64(&v, dq);
  int dq_ok = 1;
  for (size_t i = 0; i < n; i++) dq_ok &= dq[i] == exmy_code_to_f64(&f, codes[i]) * 0.5;
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
  for (size_t i = 0; i < 4; i++) (void)exmy_from_f32(&f, &r, x[i], i, &want);
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
    exmy_codes_to_f64(&f, codes, N, d64);
    exmy_codes_to_f32(&f, codes, N, d32);
    for (size_t i = 0; i < N; i++) {
      const uint64_t c = exmy_code_get(&f, codes, i);
      const double want = exmy_code_to_f64(&f, c);
      if (!(c >> f.bits)) continue;
      CHECK(isnan(want) && isnan(d64[i]) && isnan(d32[i]), "%s code 0x%llx: exmy_code_to_f64 %a, _f64 %a, _f32 %a",
            names[k], (unsigned long long)c, want, d64[i], (double)d32[i]);
    }
  }
}

/* ---- 1.4: exmy_rounding is checked ---------------------------------------- */

/* A bad rounding and the text its message must hold ("field value"). */
typedef struct { exmy_rounding r; const char *want; } bad_rnd;

static int n_bad_rnd(bad_rnd *b) {
  int n = 0;
  const exmy_rounding d = exmy_rounding_default();
  b[n].r = d, b[n].r.mode = EXMY_SR, b[n].r.sr_bits = 0, b[n++].want = "sr_bits 0";   /* was 64, silently */
  b[n].r = d, b[n].r.mode = EXMY_SR, b[n].r.sr_bits = 99, b[n++].want = "sr_bits 99"; /* was 64, silently */
  b[n].r = d, b[n].r.sr_bits = 99, b[n++].want = "sr_bits 99";                         /* rne: unused, still 0..64 */
  b[n].r = d, b[n].r.sr_bits = -1, b[n++].want = "sr_bits -1";
  b[n].r = d, b[n].r.mode = (exmy_round_mode)9, b[n++].want = "mode 9";
  b[n].r = d, b[n].r.mode = (exmy_round_mode)-1, b[n++].want = "mode -1";
  b[n].r = d, b[n].r.sat = (exmy_saturation)3, b[n++].want = "sat 3";
  b[n].r = d, b[n].r.ftz = 2, b[n++].want = "ftz 2";
  b[n].r = d, b[n].r.daz = -1, b[n++].want = "daz -1";
  return n;
}

static void test_rounding_check(void) {
  char err[EXMY_ERRLEN];
  exmy_rounding r = exmy_rounding_default();
  CHECK(r.sr_bits == 64 && exmy_rounding_check(&r, err, sizeof err) == 0, "the default rounding: sr_bits %d, %s",
        r.sr_bits, err);
  r.mode = EXMY_SR; /* switching the default to sr gives a valid rounding */
  CHECK(exmy_rounding_check(&r, err, sizeof err) == 0, "default with sr: %s", err);
  exmy_rounding z;
  memset(&z, 0, sizeof z); /* {0}: rne, sr_bits 0 unused: valid */
  CHECK(exmy_rounding_check(&z, err, sizeof err) == 0, "a zeroed rne rounding: %s", err);
  for (int b = 1; b <= 64; b++) {
    r.sr_bits = b;
    CHECK(exmy_rounding_check(&r, err, sizeof err) == 0, "sr with sr_bits %d: %s", b, err);
  }
  CHECK(exmy_rounding_check(NULL, err, sizeof err) == -1 && strstr(err, "NULL"), "NULL: '%s'", err);
  bad_rnd bad[16];
  const int nb = n_bad_rnd(bad);
  for (int i = 0; i < nb; i++) {
    err[0] = 0;
    const int rc = exmy_rounding_check(&bad[i].r, err, sizeof err);
    CHECK(rc == -1 && strstr(err, bad[i].want) && strstr(err, "rounding: "),
          "exmy_rounding_check(%s): rc %d, err '%s' (should name the field and its value)", bad[i].want, rc, err);
    CHECK(exmy_rounding_check(&bad[i].r, NULL, 0) == -1, "%s with err NULL: not -1", bad[i].want);
  }
}

/* Every function that takes a rounding and can fail refuses each bad one with
 * exmy_rounding_check's message, and leaves *flags alone. */
static void test_rounding_used(void) {
  exmy_format f = tu_format("e4m3fn"), f32 = tu_format("f32");
  const float x[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  uint8_t codes[4];
  float d[4];
  bad_rnd bad[16];
  const int nb = n_bad_rnd(bad);
  exmy_recipe rec;
  exmy_recipe_parse("current", &rec, NULL, 0);
  exmy_qtensor qa, qb;
  exmy_qtensor_view(&f, (const uint8_t[4]){0x38, 0x38, 0x38, 0x38}, 2, 2, NULL, &qa);
  exmy_qtensor_view(&f, (const uint8_t[4]){0x38, 0x40, 0x38, 0x40}, 2, 2, NULL, &qb);
  exmy_accum fp32, accf;
  exmy_accum_parse("fp32", &fp32, NULL, 0);
  exmy_accum_parse("acc=bf16", &accf, NULL, 0);
  for (int i = 0; i < nb; i++) {
    const exmy_rounding *r = &bad[i].r;
    const char *want = bad[i].want;
    char err[EXMY_ERRLEN];
    unsigned fl = 0x100u;
#define REFUSED(call, what)                                                                                         \
  do {                                                                                                              \
    err[0] = 0;                                                                                                     \
    fl = 0x100u;                                                                                                    \
    const int rc_ = (call);                                                                                         \
    CHECK(rc_ == -1 && strstr(err, want) && fl == 0x100u, "%s with %s: rc %d, flags 0x%x, err '%s'", what, want,   \
          rc_, fl, err);                                                                                            \
  } while (0)
    REFUSED(exmy_quantize(&f, r, EXMY_DTYPE_F32, x, 4, 0, codes, &fl, err, sizeof err), "exmy_quantize");
    REFUSED(exmy_quantize_ref(&f, r, EXMY_DTYPE_F32, x, 4, 0, codes, &fl, err, sizeof err), "exmy_quantize_ref");
    exmy_qtensor q;
    REFUSED(exmy_recipe_quantize(&rec, &f, r, x, 2, 2, NULL, &q, &fl, err, sizeof err), "exmy_recipe_quantize");
    memset(&q, 0, sizeof q);
    REFUSED(exmy_recipe_quantize_into(&rec, &f, r, x, 2, 2, NULL, &q, &fl, err, sizeof err),
            "exmy_recipe_quantize_into");
    REFUSED(exmy_gpu_quantize(&f, r, 0, EXMY_DTYPE_F32, x, 4, 0, codes, &fl, err, sizeof err), "exmy_gpu_quantize");
    REFUSED(exmy_gpu_quantize_dev(&f, r, 0, EXMY_DTYPE_F32, x, 4, 0, codes, &fl, err, sizeof err),
            "exmy_gpu_quantize_dev");
    REFUSED(exmy_gpu_quantize_f32_range(&f, r, 0, 0, 4, codes, &fl, err, sizeof err), "exmy_gpu_quantize_f32_range");
    REFUSED(exmy_gpu_hw_quant_check(&f, r, EXMY_DTYPE_F32, err, sizeof err), "exmy_gpu_hw_quant_check");
    /* D's cast, and a FORMAT model's accumulator */
    for (int acc = 0; acc < 2; acc++) {
      exmy_gemm_args g;
      exmy_gemm_args_init(&g);
      g.a = &qa, g.b = &qb, g.d_fmt = &f32, g.accum = &fp32;
      if (acc) {
        exmy_accum a = accf;
        a.acc_rnd = *r;
        g.accum = &a; /* used before a goes out of scope */
        REFUSED(exmy_gemm(&g, d, NULL, &fl, err, sizeof err), "exmy_gemm (acc_rnd)");
        REFUSED(exmy_gemm_check(&g, NULL, NULL, NULL, err, sizeof err), "exmy_gemm_check (acc_rnd)");
        continue;
      }
      g.d_rnd = *r;
      exmy_gemm_ws ws;
      exmy_gemm_ws_init(&ws);
      void *dv[1] = {d};
      REFUSED(exmy_gemm(&g, d, NULL, &fl, err, sizeof err), "exmy_gemm");
      REFUSED(exmy_gemm_ref(&g, d, NULL, &fl, err, sizeof err), "exmy_gemm_ref");
      REFUSED(exmy_gemm_check(&g, NULL, NULL, NULL, err, sizeof err), "exmy_gemm_check");
      REFUSED(exmy_gemm_ws_run(&g, &ws, d, NULL, &fl, err, sizeof err), "exmy_gemm_ws_run");
      REFUSED(exmy_gemm_batch(&g, 1, dv, NULL, &fl, err, sizeof err), "exmy_gemm_batch");
      exmy_gemm_ws_free(&ws);
    }
#undef REFUSED
  }
  /* and the same calls accept the default switched to sr (sr_bits 64) */
  exmy_rounding sr = exmy_rounding_default();
  sr.mode = EXMY_SR;
  char err[EXMY_ERRLEN] = "";
  CHECK(exmy_quantize(&f, &sr, EXMY_DTYPE_F32, x, 4, 0, codes, NULL, err, sizeof err) == 0, "sr quantize: %s", err);
  exmy_gemm_args g;
  exmy_gemm_args_init(&g);
  g.a = &qa, g.b = &qb, g.d_fmt = &f32, g.accum = &fp32, g.d_rnd = sr;
  CHECK(exmy_gemm(&g, d, NULL, NULL, err, sizeof err) == 0, "sr gemm: %s", err);
}

/* ---- 1.4: one way to walk a table ------------------------------------------ */

static void test_table_walk(void) {
  /* named formats: a row pointer, NULL past the end */
  const size_t nf = exmy_named_format_count();
  size_t got = 0;
  for (size_t i = 0; i < nf; i++) got += exmy_named_format_get(i) && exmy_named_format_get(i)->name;
  CHECK(nf > 10 && got == nf && !exmy_named_format_get(nf), "named formats: %zu rows, %zu got, row %zu not NULL", nf,
        got, nf);
  /* tensor-core presets: a static name, NULL past the end; each parses as tc:NAME */
  const size_t np = exmy_accum_tc_preset_count();
  got = 0;
  for (size_t i = 0; i < np; i++) {
    const char *n = exmy_accum_tc_preset_get(i);
    char text[64];
    exmy_accum a;
    snprintf(text, sizeof text, "tc:%s", n ? n : "(null)");
    got += n && exmy_accum_parse(text, &a, NULL, 0) == 0;
  }
  CHECK(np == 7 && got == np && !exmy_accum_tc_preset_get(np), "tc presets: %zu rows, %zu parse, row %zu not NULL", np,
        got, np);
  /* MMA instructions and datapaths: made on demand into buf (snprintf semantics), -1 and "" past the end */
  const size_t nm = exmy_mma_count(), nd = exmy_mma_datapath_count();
  got = 0;
  for (size_t i = 0; i < nm; i++) {
    char name[160], small[8];
    exmy_mma_instr in;
    const int len = exmy_mma_get(i, name, sizeof name), len2 = exmy_mma_get(i, small, sizeof small);
    got += len > 0 && (size_t)len == strlen(name) && len2 == len && strlen(small) == sizeof small - 1 &&
           exmy_mma_parse(name, &in, NULL, 0) == 0 && !strcmp(in.name, name);
  }
  char buf[256] = "x";
  CHECK(nm > 20 && got == nm && exmy_mma_get(nm, buf, sizeof buf) == -1 && buf[0] == 0,
        "mma names: %zu, %zu parse back to themselves; past the end '%s'", nm, got, buf);
  got = 0;
  for (size_t i = 0; i < nd; i++) {
    const int len = exmy_mma_datapath_get(i, buf, sizeof buf);
    got += len > 0 && (size_t)len == strlen(buf);
  }
  strcpy(buf, "x");
  CHECK(nd > 5 && got == nd && exmy_mma_datapath_get(nd, buf, sizeof buf) == -1 && buf[0] == 0,
        "mma datapaths: %zu, %zu written; past the end '%s'", nd, got, buf);
}

/* ---- 1.4: flags from the calls that had none ------------------------------- */

static void test_new_flags(void) {
  /* the GPU GEMM reads its flags off D: NaN is invalid, inf overflow */
  const float f32[4] = {1.0f, -0.0f, 3.5f, 1e30f};
  CHECK(exmy__gpu_d_flags(EXMY_DTYPE_F32, f32, 4) == 0, "%s", "finite f32 D raised flags");
  const float f32b[3] = {1.0f, INFINITY, -2.0f}, f32c[3] = {NAN, 1.0f, -INFINITY};
  CHECK(exmy__gpu_d_flags(EXMY_DTYPE_F32, f32b, 3) == EXMY_FLAG_OVERFLOW, "f32 inf: %u",
        exmy__gpu_d_flags(EXMY_DTYPE_F32, f32b, 3));
  CHECK(exmy__gpu_d_flags(EXMY_DTYPE_F32, f32c, 3) == (EXMY_FLAG_INVALID | EXMY_FLAG_OVERFLOW), "f32 NaN, -inf: %u",
        exmy__gpu_d_flags(EXMY_DTYPE_F32, f32c, 3));
  const uint16_t bf[4] = {0x3F80, 0xFF80, 0x0001, 0x7FC0}; /* 1, -inf, tiny, NaN */
  CHECK(exmy__gpu_d_flags(EXMY_DTYPE_BF16, bf, 2) == EXMY_FLAG_OVERFLOW &&
            exmy__gpu_d_flags(EXMY_DTYPE_BF16, bf + 2, 2) == EXMY_FLAG_INVALID,
        "bf16: %u %u", exmy__gpu_d_flags(EXMY_DTYPE_BF16, bf, 2), exmy__gpu_d_flags(EXMY_DTYPE_BF16, bf + 2, 2));
  const uint8_t e4[4] = {0x7E, 0xFE, 0x00, 0xFF}; /* +-448, 0, -NaN */
  CHECK(exmy__gpu_d_flags(EXMY_DTYPE_E4M3FN, e4, 3) == 0 && exmy__gpu_d_flags(EXMY_DTYPE_E4M3FN, e4, 4) == EXMY_FLAG_INVALID,
        "e4m3fn: %u %u", exmy__gpu_d_flags(EXMY_DTYPE_E4M3FN, e4, 3), exmy__gpu_d_flags(EXMY_DTYPE_E4M3FN, e4, 4));
  /* exmy_gpu_gemm_run takes flags; failing (no GPU or bad args) it leaves them alone */
  exmy_gpu_gemm_args ga;
  exmy_gpu_gemm_args_init(&ga);
  unsigned fl = 0x100u;
  char err[EXMY_ERRLEN] = "";
  CHECK(exmy_gpu_gemm_run(&ga, &fl, err, sizeof err) == -1 && fl == 0x100u && err[0],
        "gpu gemm of nothing: flags 0x%x, err '%s'", fl, err);
  /* exmy_gemm_batch ORs the flags of all problems into *flags, as exmy_gemm */
  exmy_format e4f = tu_format("e4m3fn");
  exmy_qtensor qa, qb;
  const uint8_t a[4] = {0x7E, 0x7E, 0x38, 0x38}, b[4] = {0x7E, 0x7E, 0x38, 0x38}; /* 448*448*2 overflows e4m3fn */
  exmy_qtensor_view(&e4f, a, 2, 2, NULL, &qa);
  exmy_qtensor_view(&e4f, b, 2, 2, NULL, &qb);
  exmy_accum fp32;
  exmy_accum_parse("fp32", &fp32, NULL, 0);
  exmy_gemm_args g[2];
  for (int i = 0; i < 2; i++) {
    exmy_gemm_args_init(&g[i]);
    g[i].a = &qa, g[i].b = &qb, g[i].d_fmt = &e4f, g[i].accum = &fp32, g[i].threads = 2;
  }
  g[1].d_rnd.sat = EXMY_SAT_FINITE;
  uint8_t d0[4], d1[4], w[4];
  unsigned want = 0;
  for (int i = 0; i < 2; i++) CHECK(exmy_gemm(&g[i], w, NULL, &want, err, sizeof err) == 0, "gemm %d: %s", i, err);
  void *dv[2] = {d0, d1};
  fl = EXMY_FLAG_UNDERFLOW;
  CHECK(exmy_gemm_batch(g, 2, dv, NULL, &fl, err, sizeof err) == 0 && fl == (want | EXMY_FLAG_UNDERFLOW) &&
            (want & EXMY_FLAG_OVERFLOW),
        "exmy_gemm_batch flags 0x%x, want 0x%x OR-ed into the caller's 0x%x: %s", fl, want, EXMY_FLAG_UNDERFLOW, err);
}

/* ---- 1.4: the deprecated names are their replacements ---------------------- */

static void test_deprecated(void) {
  char e1[EXMY_ERRLEN] = "", e2[EXMY_ERRLEN] = "";
  /* exmy_format_init = exmy_format_make, valid and not */
  exmy_format a, b;
  memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
  a.ebits = b.ebits = 4, a.mbits = b.mbits = 3, a.bias = b.bias = 7, a.is_signed = b.is_signed = 1;
  a.has_zero = b.has_zero = 1, a.inf = b.inf = EXMY_INF_NONE, a.nan = b.nan = EXMY_NAN_ONES;
  CHECK(exmy_format_init(&a, e1, sizeof e1) == 0 && exmy_format_make(&b, e2, sizeof e2) == 0 &&
            !memcmp(&a, &b, sizeof a),
        "exmy_format_init differs from exmy_format_make: %s / %s", e1, e2);
  a.ebits = b.ebits = 12;
  CHECK(exmy_format_init(&a, e1, sizeof e1) == -1 && exmy_format_make(&b, e2, sizeof e2) == -1 && !strcmp(e1, e2),
        "bad format: '%s' vs '%s'", e1, e2);
  /* exmy_recipe_state_init = exmy_recipe_state_new */
  exmy_recipe rec;
  exmy_recipe_parse("delayed:len=8", &rec, NULL, 0);
  exmy_recipe_state s1, s2;
  CHECK(exmy_recipe_state_init(&rec, &s1, e1, sizeof e1) == 0 && exmy_recipe_state_new(&rec, &s2, e2, sizeof e2) == 0 &&
            s1.history_len == 8 && s2.history_len == 8 && s1.history && s2.history &&
            !memcmp(s1.history, s2.history, 8 * sizeof(float)) && s1.scale == s2.scale,
        "exmy_recipe_state_init differs from exmy_recipe_state_new: %s / %s", e1, e2);
  exmy_recipe_state_free(&s1), exmy_recipe_state_free(&s2);
  /* conversions, over every code / 16-bit pattern and a spread of values */
  const exmy_format f = tu_format("e4m3fn"), g = tu_format("e5m2");
  int same = 1;
  for (uint64_t c = 0; c < 256; c++)
    same &= tu_bits64(exmy_decode(&f, c)) == tu_bits64(exmy_code_to_f64(&f, c)) &&
            tu_bits64(exmy_decode(&g, c)) == tu_bits64(exmy_code_to_f64(&g, c));
  for (uint32_t h = 0; h < 65536; h++)
    same &= tu_bits64(exmy_bf16_to_double((uint16_t)h)) == tu_bits64(exmy_bf16_to_f64((uint16_t)h)) &&
            tu_bits64(exmy_f16_to_double((uint16_t)h)) == tu_bits64(exmy_f16_to_f64((uint16_t)h));
  CHECK(same, "%s", "exmy_decode / exmy_bf16_to_double / exmy_f16_to_double differ from the _to_f64 names");
  exmy_rounding r = cuda_rnd(), sr = exmy_rounding_default();
  sr.mode = EXMY_SR, sr.seed = 5;
  uint64_t st = 12345;
  same = 1;
  for (int i = 0; i < 20000; i++) {
    const uint64_t u = tu_next(&st);
    double x;
    memcpy(&x, &u, sizeof x);
    x = i & 1 ? x : ldexp((double)(u >> 11), -53 - (int)(u % 20)); /* any bits, and small values */
    const exmy_rounding *rr = i & 2 ? &sr : &r;
    unsigned f1 = 0, f2 = 0, f3 = 0, f4 = 0;
    same &= exmy_from_double(&f, rr, x, (uint64_t)i, &f1) == exmy_from_f64(&f, rr, x, (uint64_t)i, &f2) && f1 == f2;
    same &= exmy_from_float(&g, rr, (float)x, (uint64_t)i, &f3) == exmy_from_f32(&g, rr, (float)x, (uint64_t)i, &f4) &&
            f3 == f4;
  }
  CHECK(same, "%s", "exmy_from_double / exmy_from_float differ from exmy_from_f64 / exmy_from_f32");
  uint8_t codes[256];
  double d1[256], d2[256];
  float s1f[256], s2f[256];
  for (int i = 0; i < 256; i++) codes[i] = (uint8_t)i;
  exmy_decode_f64(&f, codes, 256, d1), exmy_codes_to_f64(&f, codes, 256, d2);
  exmy_decode_f32(&f, codes, 256, s1f), exmy_codes_to_f32(&f, codes, 256, s2f);
  CHECK(!memcmp(d1, d2, sizeof d1) && !memcmp(s1f, s2f, sizeof s1f), "%s",
        "exmy_decode_f64/_f32 differ from exmy_codes_to_f64/_f32");
  /* qtensor values */
  exmy_recipe cur;
  exmy_recipe_parse("block:1x128", &cur, NULL, 0);
  float x[256], q1[256], q2[256];
  double q3[256], q4[256];
  for (int i = 0; i < 256; i++) x[i] = (float)(i - 100) * 0.37f;
  exmy_qtensor q;
  if (exmy_recipe_quantize(&cur, &f, &r, x, 2, 128, NULL, &q, NULL, e1, sizeof e1) == 0) {
    exmy_qtensor_dequant_f32(&q, q1), exmy_qtensor_to_f32(&q, q2);
    exmy_qtensor_dequant_f64(&q, q3), exmy_qtensor_to_f64(&q, q4);
    CHECK(!memcmp(q1, q2, sizeof q1) && !memcmp(q3, q4, sizeof q3), "%s",
          "exmy_qtensor_dequant_f32/_f64 differ from exmy_qtensor_to_f32/_f64");
    exmy_qtensor_free(&q);
  } else {
    CHECK(0, "block quantize: %s", e1);
  }
  /* exmy_gemm_batched(threads) = exmy_gemm_batch with args[b].threads = threads; the caller's args untouched */
  exmy_qtensor qa, qb;
  uint8_t ca[64], cb[64];
  for (int i = 0; i < 64; i++) ca[i] = (uint8_t)(tu_next(&st) & 0x7E), cb[i] = (uint8_t)(tu_next(&st) & 0x7E);
  exmy_qtensor_view(&f, ca, 8, 8, NULL, &qa);
  exmy_qtensor_view(&f, cb, 8, 8, NULL, &qb);
  exmy_accum acc;
  exmy_accum_parse("tc:hopper", &acc, NULL, 0);
  exmy_gemm_args ga[3];
  for (int i = 0; i < 3; i++) {
    exmy_gemm_args_init(&ga[i]);
    ga[i].a = &qa, ga[i].b = &qb, ga[i].d_fmt = &g, ga[i].accum = &acc, ga[i].trans_b = i == 1;
  }
  uint8_t o1[3][64], o2[3][64];
  void *p1[3] = {o1[0], o1[1], o1[2]}, *p2[3] = {o2[0], o2[1], o2[2]};
  float am1[3], am2[3];
  unsigned fl1 = 0, fl2 = 0;
  const int rc1 = exmy_gemm_batched(ga, 3, 2, p1, am1, &fl1, e1, sizeof e1);
  CHECK(ga[0].threads == 0 && ga[2].threads == 0, "%s", "exmy_gemm_batched changed the caller's args");
  for (int i = 0; i < 3; i++) ga[i].threads = 2;
  const int rc2 = exmy_gemm_batch(ga, 3, p2, am2, &fl2, e2, sizeof e2);
  CHECK(rc1 == 0 && rc2 == 0 && !memcmp(o1, o2, sizeof o1) && !memcmp(am1, am2, sizeof am1) && fl1 == fl2,
        "exmy_gemm_batched differs from exmy_gemm_batch: rc %d %d flags %u %u: %s %s", rc1, rc2, fl1, fl2, e1, e2);
  ga[1].d_fmt = NULL; /* a failing problem: the same message */
  for (int i = 0; i < 3; i++) ga[i].threads = 0;
  CHECK(exmy_gemm_batched(ga, 3, 0, p1, NULL, NULL, e1, sizeof e1) == -1 &&
            exmy_gemm_batch(ga, 3, p2, NULL, NULL, e2, sizeof e2) == -1 && !strcmp(e1, e2),
        "failing batch: '%s' vs '%s'", e1, e2);
  /* exmy_gpu_gemm = exmy_gpu_gemm_run without flags */
  exmy_gpu_gemm_args gg;
  exmy_gpu_gemm_args_init(&gg);
  CHECK(exmy_gpu_gemm(&gg, e1, sizeof e1) == exmy_gpu_gemm_run(&gg, NULL, e2, sizeof e2) && !strcmp(e1, e2),
        "exmy_gpu_gemm: '%s' vs '%s'", e1, e2);
  /* tables: the same rows; past the end the old ones keep "?" and NULL */
  same = 1;
  for (size_t i = 0; i < exmy_mma_count(); i++) {
    char n1[160], n2[160];
    same &= exmy_mma_name(i, n1, sizeof n1) == exmy_mma_get(i, n2, sizeof n2) && !strcmp(n1, n2);
  }
  for (size_t i = 0; i < exmy_mma_datapath_count(); i++) {
    char n1[256], n2[256];
    same &= exmy_mma_datapath_text(i, n1, sizeof n1) == exmy_mma_datapath_get(i, n2, sizeof n2) && !strcmp(n1, n2);
  }
  for (size_t i = 0; i <= exmy_accum_tc_preset_count(); i++)
    same &= exmy_accum_tc_preset_name(i) == exmy_accum_tc_preset_get(i);
  char n1[16], n2[16];
  same &= exmy_mma_name(exmy_mma_count(), n1, sizeof n1) == 1 && !strcmp(n1, "?") &&
          exmy_mma_datapath_text(exmy_mma_datapath_count(), n2, sizeof n2) == 1 && !strcmp(n2, "?");
  CHECK(same, "%s", "exmy_mma_name / exmy_mma_datapath_text / exmy_accum_tc_preset_name differ from the _get names");
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
  test_rounding_check();
  test_rounding_used();
  test_table_walk();
  test_new_flags();
  test_deprecated();
  return tu_finish("test_api");
}
