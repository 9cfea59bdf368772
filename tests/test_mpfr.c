/* test_mpfr.c: the library's conversions against an independent MPFR oracle
 * (oracle_mpfr.c, written from the project's design notes, shared/design/
 * formats.md outside this repository, and the lead's
 * decisions, sharing no code with emulate/).
 *
 * Parts (default run):
 *   0 hand-computed anchors (oracle and library), format fields, decode and
 *     classify of every code (2^16 sampled codes for wide formats)
 *   1 every f16 and every bf16 input, every named format, rne rna rtz rup rdn
 *     rto, saturation none/finite/propagate: codes and all four flags; the
 *     library's exmy_f16_to_f64 / exmy_bf16_to_f64 against our own
 *   2 1e6 boundary and random float32 inputs and 1e6 double inputs per named
 *     format, each in all six modes and three saturations; stochastic rounding
 *     checked to give one of the two neighbours on every 16th input
 *   3 300 random ExMy formats (E 1..8, M 0..10, random bias, inf/nan
 *     conventions, signed/unsigned; a few zero-less and E = 0 ones)
 *   4 ftz / daz / both on a subset of named formats
 *   5 exmy_quantize and exmy_quantize_ref (f32, f64, bf16, f16 sources) against
 *     the oracle, array flags against the OR of the scalar flags; sr arrays
 *     against the scalar path
 * --long: all 2^32 float32 inputs for e4m3fn and e5m2, rne, sat none and
 *   finite (make check-long), progress every 2^28 inputs.
 *
 * Options: --long, --scale=X (multiplies the random input counts; with --long
 * and X < 1 only the first X of every 2^28 inputs), --part=N (only part N).
 * Env: EXMY_TEST_SEED (default 0x6d706672), OMP_NUM_THREADS.  Results do not
 * depend on the thread count (failures are reported by a deterministic key).
 * Exit 0 pass, 1 fail. */
#include "exmy.h"
#include "oracle_mpfr.h"
#include "tests/testutil.h"

#include <float.h>
#include <stdarg.h>
#include <inttypes.h>
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#else
#include <time.h>
static int omp_get_max_threads(void) { return 1; }
static double omp_get_wtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SRC_F32 = EXMY_DTYPE_F32, SRC_F64 = EXMY_DTYPE_F64, SRC_BF16 = EXMY_DTYPE_BF16, SRC_F16 = EXMY_DTYPE_F16 };
static const char *src_name[] = {"f32", "f64", "bf16", "f16"};
static const char *sat_name[] = {"none", "finite", "propagate"};

static uint64_t g_seed = 0x6d706672;
static double g_scale = 1.0;
static int g_only_part = -1; /* --part=N: run only part N (debugging) */
static long long g_checks, g_fails;

/* ---- failures: keep the 20 with the smallest deterministic key ---------- */
#define MAXREC 20
typedef struct { uint64_t key; char msg[EXMY_ERRLEN]; } failrec;
static failrec g_rec[MAXREC];
static int g_nrec;

static void record(uint64_t key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void record(uint64_t key, const char *fmt, ...) {
#pragma omp critical(exmy_record)
  {
    int slot = -1;
    if (g_nrec < MAXREC) slot = g_nrec++;
    else {
      int worst = 0;
      for (int i = 1; i < MAXREC; i++) if (g_rec[i].key > g_rec[worst].key) worst = i;
      if (key < g_rec[worst].key) slot = worst;
    }
    if (slot >= 0) {
      va_list ap;
      va_start(ap, fmt);
      g_rec[slot].key = key;
      vsnprintf(g_rec[slot].msg, sizeof g_rec[slot].msg, fmt, ap);
      va_end(ap);
    }
  }
}

/* failure summary by category (part, format, mode, what differs), with the
 * first example (smallest key) of each */
#define NCAT 4096
typedef struct { int used; uint64_t cat; long long n; uint64_t key; char msg[EXMY_ERRLEN]; } catrec;
static catrec *g_cat;
static int g_ncat_over;

static void record_cat(uint64_t cat, uint64_t key, const char *msg) {
#pragma omp critical(exmy_cat)
  {
    if (!g_cat) g_cat = calloc(NCAT, sizeof *g_cat);
    uint64_t h = (cat * 0x9e3779b97f4a7c15ull) >> 52;
    int done = 0;
    for (int probe = 0; probe < NCAT && !done; probe++) {
      catrec *c = &g_cat[(h + (uint64_t)probe) % NCAT];
      if (c->used && c->cat != cat) continue;
      if (!c->used) { c->used = 1; c->cat = cat; c->key = ~(uint64_t)0; }
      c->n++;
      if (key < c->key) { c->key = key; snprintf(c->msg, sizeof c->msg, "%s", msg); }
      done = 1;
    }
    if (!done) g_ncat_over++;
  }
}

static int cmp_cat(const void *a, const void *b) {
  const catrec *x = a, *y = b;
  if (x->used != y->used) return y->used - x->used;
  return x->cat < y->cat ? -1 : x->cat > y->cat;
}

static int cmp_rec(const void *a, const void *b) {
  uint64_t x = ((const failrec *)a)->key, y = ((const failrec *)b)->key;
  return x < y ? -1 : x > y;
}

/* ---- small helpers ------------------------------------------------------ */
static uint64_t rng_seed(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t s = g_seed ^ (a * 0x100000001b3ull) ^ (b << 20) ^ (c << 40);
  tu_next(&s);
  return s;
}
static double urand(uint64_t *s) { return (double)(tu_next(s) >> 11) * 0x1p-53; }
static uint64_t rbelow(uint64_t *s, uint64_t n) { return n ? tu_next(s) % n : 0; }

static uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double bitsd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* own decoders of the 16-bit input types (not the library's) */
static double my_f16(uint16_t h) {
  int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v;
  if (e == 31) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp(m, -24);
  else v = ldexp(1024 + m, e - 25);
  if (isnan(v)) return s ? -NAN : NAN;
  return s ? -v : v;
}
static double my_bf16(uint16_t b) { return (double)bitsf((uint32_t)b << 16); }

static double in_value(int src, uint64_t bits) {
  switch (src) {
  case SRC_F32: return (double)bitsf((uint32_t)bits);
  case SRC_F64: return bitsd(bits);
  case SRC_BF16: return my_bf16((uint16_t)bits);
  default: return my_f16((uint16_t)bits);
  }
}
static int in_subnormal(int src, uint64_t bits) {
  switch (src) {
  case SRC_F32: return ((bits >> 23) & 0xff) == 0 && (bits & 0x7fffff) != 0;
  case SRC_F64: return ((bits >> 52) & 0x7ff) == 0 && (bits & 0xfffffffffffffull) != 0;
  case SRC_BF16: return ((bits >> 7) & 0xff) == 0 && (bits & 0x7f) != 0;
  default: return ((bits >> 10) & 0x1f) == 0 && (bits & 0x3ff) != 0;
  }
}
static int in_hex(int src) { return src == SRC_F64 ? 16 : src == SRC_F32 ? 8 : 4; }

static uint64_t lib_conv(const exmy_format *f, const exmy_rounding *r, int src, uint64_t bits,
                         uint64_t index, unsigned *fl) {
  switch (src) {
  case SRC_F32: return exmy_from_f32(f, r, bitsf((uint32_t)bits), index, fl);
  case SRC_F64: return exmy_from_f64(f, r, bitsd(bits), index, fl);
  case SRC_BF16: return exmy_from_bf16(f, r, (uint16_t)bits, index, fl);
  default: return exmy_from_f16(f, r, (uint16_t)bits, index, fl);
  }
}

static exmy_rounding mk_rnd(int mode, int sat, int ftz, int daz) {
  exmy_rounding r = exmy_rounding_default();
  r.mode = (exmy_round_mode)mode;
  r.sat = (exmy_saturation)sat;
  r.ftz = ftz;
  r.daz = daz;
  return r;
}

typedef struct { uint64_t *v; size_t n, cap; } vec;
static void vpush(vec *a, uint64_t x) {
  if (a->n == a->cap) {
    a->cap = a->cap ? 2 * a->cap : 4096;
    a->v = realloc(a->v, a->cap * sizeof *a->v);
    if (!a->v) { perror("realloc"); exit(2); }
  }
  a->v[a->n++] = x;
}

/* ---- the check loop ----------------------------------------------------- */
typedef struct { int ftz, daz; } fdcombo;
typedef struct {
  int part, fmt_i;
  const char *fmtname;
  const exmy_format *f;
  const oracle_fmt *o;
} fctx;

static uint64_t mkkey(const fctx *c, int mode, int combo, int sat, int src, uint64_t idx) {
  return ((uint64_t)c->part << 56) | ((uint64_t)(c->fmt_i & 0xfff) << 44) | ((uint64_t)mode << 41) |
         ((uint64_t)combo << 39) | ((uint64_t)sat << 37) | ((uint64_t)src << 35) | (idx & 0x7ffffffffull);
}

static void report(const fctx *c, int mode, int sat, int ftz, int daz, int src, uint64_t bits, uint64_t idx,
                   int combo, uint64_t ec, unsigned ef, unsigned em, uint64_t gc, unsigned gf) {
  int hd = (c->o->bits + 3) / 4;
  char msg[EXMY_ERRLEN];
  snprintf(msg, sizeof msg,
         "part%d fmt=%s mode=%s sat=%s ftz=%d daz=%d src=%s in=0x%0*" PRIx64 " (%a): expected 0x%0*" PRIx64
         " flags 0x%x, got 0x%0*" PRIx64 " flags 0x%x (flags compared: 0x%x)",
         c->part, c->fmtname, exmy_round_mode_name((exmy_round_mode)mode), sat_name[sat], ftz, daz,
         src_name[src], in_hex(src), bits, in_value(src, bits), hd, ec, ef, hd, gc, gf, em);
  uint64_t key = mkkey(c, mode, combo, sat, src, idx);
  record(key, "%s", msg);
  /* category: part, format, mode, sat, ftz/daz, code differs or which flags differ */
  unsigned what = gc != ec ? 16u : ((gf ^ ef) & em);
  uint64_t cat = ((uint64_t)(c->part == 3) << 40) | ((uint64_t)(c->fmt_i & 0xfff) << 20) | ((uint64_t)mode << 12) |
                 ((uint64_t)(ftz * 2 + daz) << 8) | what;
  record_cat(cat, key, msg);
}

/* Check n inputs of one source type against the oracle for the modes in
 * modes_mask (bit per exmy_round_mode), saturations sats, (ftz,daz) combos.
 * Every sr_stride-th input (0: none) also checks stochastic rounding gives one
 * of the two neighbours. */
static void run_set(const fctx *c, int src, const uint64_t *bits, size_t n, unsigned modes_mask,
                    const int *sats, int nsats, const fdcombo *fd, int nfd, size_t sr_stride) {
  long long checks = 0, fails = 0;
  const oracle_fmt *o = c->o;
  const exmy_format *f = c->f;
#pragma omp parallel reduction(+ : checks, fails)
  {
    oracle_ws ws;
    oracle_ws_init(&ws);
#pragma omp for schedule(dynamic, 1024)
    for (size_t i = 0; i < n; i++) {
      double x = in_value(src, bits[i]);
      int sub = in_subnormal(src, bits[i]);
      double xz = copysign(0.0, x);
      for (int mode = 0; mode < 6; mode++) {
        if (!((modes_mask >> mode) & 1)) continue;
        oracle_pre p, pz;
        int havez = 0;
        oracle_pre_round(o, &ws, oracle_dir_of((exmy_round_mode)mode), x, &p);
        for (int k = 0; k < nfd; k++) {
          const oracle_pre *pp = &p;
          if (fd[k].daz && sub) {
            if (!havez) { oracle_pre_round(o, &ws, oracle_dir_of((exmy_round_mode)mode), xz, &pz); havez = 1; }
            pp = &pz;
          }
          for (int s = 0; s < nsats; s++) {
            unsigned ef, em, gf = 0;
            uint64_t ec = oracle_finish(o, pp, (exmy_round_mode)mode, (exmy_saturation)sats[s], fd[k].ftz, &ef, &em);
            exmy_rounding r = mk_rnd(mode, sats[s], fd[k].ftz, fd[k].daz);
            uint64_t gc = lib_conv(f, &r, src, bits[i], i, &gf);
            checks++;
            if (gc != ec || ((gf ^ ef) & em)) {
              fails++;
              report(c, mode, sats[s], fd[k].ftz, fd[k].daz, src, bits[i], i, k, ec, ef, em, gc, gf);
            }
          }
        }
      }
      if (sr_stride && i % sr_stride == 0) {
        oracle_pre pd, pu;
        oracle_pre_round(o, &ws, O_RTZ, x, &pd);
        oracle_pre_round(o, &ws, O_AWAY, x, &pu);
        for (int s = 0; s < nsats; s++) {
          unsigned ef, em, gf = 0;
          uint64_t c1 = oracle_finish(o, &pd, EXMY_SR, (exmy_saturation)sats[s], 0, &ef, &em);
          uint64_t c2 = oracle_finish(o, &pu, EXMY_SR, (exmy_saturation)sats[s], 0, &ef, &em);
          exmy_rounding r = mk_rnd(EXMY_SR, sats[s], 0, 0);
          r.seed = g_seed + (uint64_t)c->fmt_i;
          r.stream = (uint64_t)src;
          r.sr_bits = (i / sr_stride) % 3 == 0 ? 3 : 64;
          uint64_t gc = lib_conv(f, &r, src, bits[i], i, &gf);
          checks++;
          if (gc != c1 && gc != c2) {
            fails++;
            record(mkkey(c, EXMY_SR, 3, sats[s], src, i),
                   "part%d fmt=%s mode=sr sr_bits=%d sat=%s src=%s in=0x%0*" PRIx64 " (%a): expected 0x%" PRIx64
                   " or 0x%" PRIx64 ", got 0x%" PRIx64, c->part, c->fmtname, r.sr_bits, sat_name[sats[s]],
                   src_name[src], in_hex(src), bits[i], x, c1, c2, gc);
          }
        }
      }
    }
    oracle_ws_clear(&ws);
  }
  g_checks += checks;
  g_fails += fails;
}

/* ---- input generation --------------------------------------------------- */
static void push_d(vec *d, double x) { vpush(d, dbits(x)); vpush(d, dbits(-x)); }
static void push_f(vec *f, float x) { vpush(f, fbits(x)); vpush(f, fbits(-x)); }

static void shuffle_trunc(vec *a, size_t keep, uint64_t *s) {
  if (a->n <= keep) return;
  for (size_t i = 0; i < keep; i++) {
    size_t j = i + (size_t)rbelow(s, a->n - i);
    uint64_t t = a->v[i]; a->v[i] = a->v[j]; a->v[j] = t;
  }
  a->n = keep;
}

/* boundary base values of a format (positive) */
static void base_values(const oracle_fmt *o, vec *base, uint64_t *s) {
  static const double specials[] = {0.0, 1.0, 0.5, 2.0, 3.0, 1.5, DBL_MAX, DBL_MIN, DBL_TRUE_MIN,
                                    FLT_MAX, FLT_MIN, FLT_TRUE_MIN, 448.0, 464.0, 480.0, 57344.0,
                                    61440.0, 65536.0, 6.0, 7.0, 224.0, 240.0, 0x1p-127, 0x1p127, 0x1.8p127};
  for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) vpush(base, dbits(specials[i]));
  for (int k = -1074; k <= 1023; k++) vpush(base, dbits(ldexp(1.0, k)));
  uint64_t nm = o->max_mag + 1; /* magnitudes 0..max_mag */
  const uint64_t cap = 1u << 15;
  for (uint64_t j = 0; j < (nm < cap ? nm : cap); j++) {
    uint64_t mag;
    if (nm <= cap) mag = j;
    else if (j < 512) mag = j;
    else if (j < 1024) mag = o->max_mag - (j - 512);
    else mag = rbelow(s, nm);
    double v = oracle_decode_mag(o, mag), w = oracle_decode_mag(o, mag + 1);
    vpush(base, dbits(v));
    vpush(base, dbits(v + (w - v) / 2));
  }
  /* above the top */
  double mx = o->maxfinite, nx = o->max_next, nx2 = oracle_decode_mag(o, o->max_mag + 2);
  double more[] = {mx, nx, mx + (nx - mx) / 2, nx + (nx2 - nx) / 2, nx2, 2 * mx, 4 * mx, mx * 1.0000001,
                   o->minsub, o->minsub / 2, o->minsub / 4, o->minsub * 0.75, o->minsub * 0.25,
                   o->minsub * 1.5, o->minsub * 1.25, o->minnormal, o->minnormal / 2,
                   o->minnormal * (1 - 0x1p-30)};
  for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
    if (isfinite(more[i])) vpush(base, dbits(more[i]));
}

/* one random double "within the format's range" or near its grid */
static double rand_in_range(const oracle_fmt *o, uint64_t *s) {
  int kind = (int)rbelow(s, 10);
  double x;
  if (kind < 4) { /* log-uniform over [minsub/8, 4*max) */
    double lo = log2(o->minsub) - 3, hi = log2(o->maxfinite) + 2;
    int e = (int)floor(lo + urand(s) * (hi - lo));
    x = ldexp(1.0 + urand(s), e);
  } else { /* near the grid: v + gap * k / 2^j, maybe +-1 ulp of double */
    uint64_t mag = rbelow(s, o->max_mag + 2);
    double v = oracle_decode_mag(o, mag), w = oracle_decode_mag(o, mag + 1);
    int j = 1 + (int)rbelow(s, 6);
    uint64_t k = rbelow(s, ((uint64_t)1 << j) + 1);
    x = v + (w - v) * (double)k / (double)((uint64_t)1 << j);
    int t = (int)rbelow(s, 4);
    if (t == 1) x = nextafter(x, 0);
    else if (t == 2) x = nextafter(x, INFINITY);
  }
  return (tu_next(s) & 1) ? -x : x;
}

/* nd double inputs and nf float inputs: boundary first (at most 70%), then random */
static void gen_inputs(const oracle_fmt *o, uint64_t seed, size_t nd, size_t nf, vec *dv, vec *fv) {
  uint64_t s = seed;
  vec base = {0};
  base_values(o, &base, &s);
  dv->n = fv->n = 0;
  for (size_t i = 0; i < base.n; i++) {
    double b = bitsd(base.v[i]);
    push_d(dv, b);
    push_d(dv, nextafter(b, 0));
    push_d(dv, nextafter(b, INFINITY));
    float f = (float)b;
    if (isfinite(f)) {
      push_f(fv, f);
      push_f(fv, nextafterf(f, 0));
      push_f(fv, nextafterf(f, INFINITY));
    }
  }
  /* specials */
  uint64_t dspec[] = {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull,
                      0xfff4000000000123ull, 0x7ff0000000000000ull, 0xfff0000000000000ull};
  for (size_t i = 0; i < 6; i++) vpush(dv, dspec[i]);
  uint64_t fspec[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffa00123u, 0x7f800000u, 0xff800000u};
  for (size_t i = 0; i < 6; i++) vpush(fv, fspec[i]);
  shuffle_trunc(dv, nd * 7 / 10, &s);
  shuffle_trunc(fv, nf * 7 / 10, &s);
  while (dv->n < nd) {
    if (rbelow(&s, 4) == 0) vpush(dv, tu_next(&s));
    else vpush(dv, dbits(rand_in_range(o, &s)));
  }
  while (fv->n < nf) {
    if (rbelow(&s, 4) == 0) vpush(fv, tu_next(&s) & 0xffffffffu);
    else {
      double d = rand_in_range(o, &s);
      float f = (float)d;
      if (rbelow(&s, 4) == 0) f = nextafterf(f, (tu_next(&s) & 1) ? INFINITY : -INFINITY);
      vpush(fv, fbits(f));
    }
  }
  free(base.v);
}

/* ---- part 0: format fields and decode ----------------------------------- */
static void check_format_fields(const fctx *c) {
  const exmy_format *f = c->f;
  const oracle_fmt *o = c->o;
  long long checks = 0, fails = 0;
#define FIELD(name, got, exp)                                                                           \
  do {                                                                                                  \
    checks++;                                                                                           \
    if ((uint64_t)(got) != (uint64_t)(exp)) {                                                           \
      fails++;                                                                                          \
      record(mkkey(c, 0, 0, 0, 0, (uint64_t)__LINE__), "part0 fmt=%s field %s: expected 0x%" PRIx64       \
             " got 0x%" PRIx64, c->fmtname, name, (uint64_t)(exp), (uint64_t)(got));                    \
    }                                                                                                   \
  } while (0)
  FIELD("bits", f->bits, o->bits);
  FIELD("sign_mask", f->sign_mask, o->sign_mask);
  FIELD("max_mag", f->max_mag, o->max_mag);
  if (o->has_inf) FIELD("inf_mag", f->inf_mag, o->inf_mag);
  if (o->has_nan) FIELD("nan_code", f->nan_code, oracle_nan_code(o, 0));
  int ex;
  frexp(o->minnormal, &ex);
  FIELD("emin", (int64_t)f->emin, (int64_t)(ex - 1));
  frexp(o->maxfinite, &ex);
  FIELD("emax", (int64_t)f->emax, (int64_t)(ex - 1));
  /* decode and classify every code (or 2^16 of them) */
  uint64_t ncodes = o->bits >= 64 ? 0 : ((uint64_t)1 << o->bits);
  uint64_t lim = (o->bits <= 16) ? ncodes : 65536;
  uint64_t s = rng_seed(0, (uint64_t)c->fmt_i, 77);
  for (uint64_t j = 0; j < lim; j++) {
    uint64_t code;
    if (o->bits <= 16) code = j;
    else if (j < 1024) code = j;
    else if (j < 2048) code = (o->sign_mask | o->top_mag) - (j - 1024);
    else if (j < 3072) code = o->sign_mask + (j - 2048);
    else code = tu_next(&s) & (o->sign_mask | o->top_mag);
    double v;
    int cls = oracle_classify(o, code, &v);
    int gcls = (int)exmy_classify(f, code);
    double gv = exmy_code_to_f64(f, code);
    checks++;
    int bad = cls != gcls;
    if (!bad && cls != EXMY_CLASS_NAN) bad = !(gv == v && signbit(gv) == signbit(v));
    if (!bad && cls == EXMY_CLASS_NAN) bad = !isnan(gv);
    if (bad) {
      fails++;
      record(mkkey(c, 0, 1, 0, 0, code), "part0 fmt=%s decode code 0x%" PRIx64 ": expected class %s value %a, got %s %a",
             c->fmtname, code, exmy_class_name((exmy_class)cls), v, exmy_class_name((exmy_class)gcls), gv);
    }
  }
#undef FIELD
  g_checks += checks;
  g_fails += fails;
}

/* ---- hand-computed anchors: the oracle itself and the library against values
 * worked out by hand from formats.md and the lead's decisions --------------- */
typedef struct { const char *fmt; int mode, sat; double x; uint64_t code; unsigned flags; } anchor;
#define I_ EXMY_FLAG_INEXACT
#define U_ EXMY_FLAG_UNDERFLOW
#define O_ EXMY_FLAG_OVERFLOW
#define V_ EXMY_FLAG_INVALID
static const anchor ANCHORS[] = {
    {"e4m3fn", EXMY_RNE, 0, 448, 0x7e, 0},
    {"e4m3fn", EXMY_RNE, 0, 464, 0x7e, I_}, /* tie at the top goes to even 448 */
    {"e4m3fn", EXMY_RNE, 0, 0x1.d000000000001p8, 0x7f, O_ | I_},
    {"e4m3fn", EXMY_RNE, 0, -464, 0xfe, I_},
    {"e4m3fn", EXMY_RNE, 1, 1e9, 0x7e, O_ | I_},
    {"e4m3fn", EXMY_RNE, 0, INFINITY, 0x7f, 0},
    {"e4m3fn", EXMY_RNE, 1, -INFINITY, 0xfe, I_},
    {"e4m3fn", EXMY_RNE, 0, NAN, 0x7f, V_},
    {"e4m3fn", EXMY_RNE, 0, -NAN, 0xff, V_},
    {"e4m3fn", EXMY_RNE, 0, 0x1p-9, 0x01, 0},
    {"e4m3fn", EXMY_RNE, 0, 0x1p-10, 0x00, U_ | I_},   /* half the smallest subnormal: to even 0 */
    {"e4m3fn", EXMY_RNE, 0, 0x1.8p-9, 0x02, U_ | I_},  /* 1.5 subnormal ulps: to even 2 */
    {"e4m3fn", EXMY_RNE, 0, -431.99999999999994, 0xfd, I_}, /* -416, not ml_dtypes' -448 */
    {"e4m3fn", EXMY_RTZ, 0, 480, 0x7e, O_ | I_},
    {"e4m3fn", EXMY_RUP, 0, -1e9, 0xfe, O_ | I_},
    {"e4m3fn", EXMY_RDN, 0, -449, 0xff, O_ | I_},
    {"e4m3fn", EXMY_RTO, 0, 0x1.08p0, 0x39, I_},
    {"e4m3fn", EXMY_RTO, 0, 0x1p-11, 0x01, U_ | I_},
    {"e4m3fn", EXMY_RNA, 0, 0x1.1p0, 0x39, I_},
    {"e4m3fn", EXMY_RNE, 0, 0x1.1p0, 0x38, I_},
    {"e4m3fn", EXMY_RNA, 0, 0x1p-10, 0x01, U_ | I_},
    {"e4m3fn", EXMY_RNE, 0, -0.0, 0x80, 0},
    {"e5m2", EXMY_RNE, 0, 57344, 0x7b, 0},
    {"e5m2", EXMY_RNE, 0, 61440, 0x7c, O_ | I_},
    {"e5m2", EXMY_RNE, 0, 61439.99, 0x7b, I_},
    {"e5m2", EXMY_RTZ, 0, 1e6, 0x7b, O_ | I_},
    {"e5m2", EXMY_RNE, 2, 1e6, 0x7b, O_ | I_},
    {"e5m2", EXMY_RNE, 2, -INFINITY, 0xfc, 0},
    {"e5m2", EXMY_RNE, 0, 0x1p-16, 0x01, 0},
    {"e2m1fn", EXMY_RNE, 0, 5, 0x06, I_},
    {"e2m1fn", EXMY_RNE, 0, 7, 0x07, O_ | I_}, /* tie 6|8 goes to even 8: overflow, clamped */
    {"e2m1fn", EXMY_RNE, 0, NAN, 0x00, V_},
    {"e2m1fn", EXMY_RNE, 0, 0.25, 0x00, U_ | I_},
    {"e8m0fnu", EXMY_RNE, 0, 1, 0x7f, 0},
    {"e8m0fnu", EXMY_RNE, 0, 3, 0x81, I_}, /* precision 1: ties away */
    {"e8m0fnu", EXMY_RNE, 0, 0, 0xff, V_},
    {"e8m0fnu", EXMY_RUP, 0, 0x1p-130, 0x00, U_ | I_},
    {"e8m0fnu", EXMY_RNE, 0, -2, 0xff, V_},
    {"e8m0fnu", EXMY_RNE, 1, 0x1p128, 0xfe, O_ | I_},
    {"e8m0fnu", EXMY_RNE, 0, 0x1p128, 0xff, O_ | I_},
    {"e4m3fnuz", EXMY_RNE, 0, -0.0, 0x00, 0},
    {"e4m3fnuz", EXMY_RNE, 0, NAN, 0x80, V_},
    {"e4m3fnuz", EXMY_RNE, 0, -0x1p-12, 0x00, U_ | I_},
    {"e4m3fnuz", EXMY_RNE, 0, 240, 0x7f, 0},
    {"binary8p4se", EXMY_RNE, 0, 224, 0x7e, 0},
    {"binary8p4se", EXMY_RNE, 0, 1e6, 0x7f, O_ | I_},
    {"binary8p4se", EXMY_RNE, 0, -INFINITY, 0xff, 0},
    {"binary8p4se", EXMY_RNE, 0, NAN, 0x80, V_},
    {"binary8p3se", EXMY_RNE, 0, 49152, 0x7e, 0},
};

static const exmy_format *find_format_any(const char *name, exmy_format *tmp) {
  char err[EXMY_ERRLEN];
  return exmy_format_parse(name, tmp, err, sizeof err) == 0 ? tmp : NULL;
}

static void check_anchors(void) {
  oracle_ws ws;
  oracle_ws_init(&ws);
  for (size_t i = 0; i < sizeof ANCHORS / sizeof ANCHORS[0]; i++) {
    const anchor *a = &ANCHORS[i];
    exmy_format f;
    oracle_fmt o;
    char why[EXMY_ERRLEN];
    g_checks += 2;
    if (!find_format_any(a->fmt, &f) || oracle_fmt_init(&o, &f, why, sizeof why) != 0) {
      g_fails++;
      record(i, "part0 anchor %zu: format %s missing or not covered", i, a->fmt);
      continue;
    }
    unsigned ef, em, gf = 0;
    uint64_t ec = oracle_convert(&o, &ws, (exmy_round_mode)a->mode, (exmy_saturation)a->sat, 0, a->x, &ef, &em);
    if (ec != a->code || ef != a->flags) {
      g_fails++;
      record(i, "part0 ORACLE anchor %s mode=%s sat=%s in=%a: hand value 0x%02" PRIx64 " flags 0x%x, oracle 0x%02" PRIx64
             " flags 0x%x", a->fmt, exmy_round_mode_name((exmy_round_mode)a->mode), sat_name[a->sat], a->x, a->code,
             a->flags, ec, ef);
    }
    exmy_rounding r = mk_rnd(a->mode, a->sat, 0, 0);
    uint64_t gc = exmy_from_f64(&f, &r, a->x, 0, &gf);
    if (gc != a->code || gf != a->flags) {
      g_fails++;
      record(i, "part0 anchor fmt=%s mode=%s sat=%s src=f64 in=0x%016" PRIx64 " (%a): expected 0x%02" PRIx64
             " flags 0x%x, got 0x%02" PRIx64 " flags 0x%x", a->fmt, exmy_round_mode_name((exmy_round_mode)a->mode),
             sat_name[a->sat], dbits(a->x), a->x, a->code, a->flags, gc, gf);
    }
  }
  oracle_ws_clear(&ws);
}

/* ---- named formats -------------------------------------------------------- */
typedef struct { char name[64]; exmy_format f; oracle_fmt o; int ok; } named;
static named *g_named;
static size_t g_nnamed;

static void load_named(void) {
  g_nnamed = exmy_named_format_count();
  g_named = calloc(g_nnamed ? g_nnamed : 1, sizeof *g_named);
  for (size_t i = 0; i < g_nnamed; i++) {
    const exmy_named_format *nf = exmy_named_format_get(i);
    char err[EXMY_ERRLEN], why[EXMY_ERRLEN];
    snprintf(g_named[i].name, sizeof g_named[i].name, "%s", nf->name);
    if (exmy_format_parse(nf->name, &g_named[i].f, err, sizeof err) != 0) {
      g_fails++;
      g_checks++;
      record(((uint64_t)0 << 56) | i, "part0 named format %s does not parse: %s", nf->name, err);
      continue;
    }
    if (oracle_fmt_init(&g_named[i].o, &g_named[i].f, why, sizeof why) != 0) {
      printf("note: named format %s not covered by the oracle: %s\n", nf->name, why);
      continue;
    }
    g_named[i].ok = 1;
  }
}

static const named *find_named(const char *name) {
  for (size_t i = 0; i < g_nnamed; i++)
    if (g_named[i].ok && strcmp(g_named[i].name, name) == 0) return &g_named[i];
  return NULL;
}

static void part_begin(const char *what, double *t0, long long *c0, long long *f0) {
  printf("%s ...\n", what);
  fflush(stdout);
  *t0 = omp_get_wtime();
  *c0 = g_checks;
  *f0 = g_fails;
}
static void part_end(const char *what, double t0, long long c0, long long f0) {
  printf("  %s: %lld checks, %lld failures, %.1f s\n", what, g_checks - c0, g_fails - f0, omp_get_wtime() - t0);
  fflush(stdout);
}

static const int SATS3[] = {EXMY_SAT_NONE, EXMY_SAT_FINITE, EXMY_SAT_PROPAGATE};
static const int SATS2[] = {EXMY_SAT_NONE, EXMY_SAT_FINITE};
static const fdcombo FD0[] = {{0, 0}};
static const fdcombo FDX[] = {{1, 0}, {0, 1}, {1, 1}};
#define ALLMODES 0x3fu

static void part1(void) {
  /* the library's 16-bit helpers against ours */
  long long checks = 0, fails = 0;
  for (uint32_t b = 0; b < 65536; b++) {
    double a = exmy_f16_to_f64((uint16_t)b), e = my_f16((uint16_t)b);
    double a2 = exmy_bf16_to_f64((uint16_t)b), e2 = my_bf16((uint16_t)b);
    checks += 2;
    if (!((isnan(a) && isnan(e)) || a == e) || signbit(a) != signbit(e)) {
      fails++;
      record(((uint64_t)1 << 56) | b, "part1 exmy_f16_to_f64(0x%04x) = %a, expected %a", b, a, e);
    }
    if (!((isnan(a2) && isnan(e2)) || a2 == e2) || signbit(a2) != signbit(e2)) {
      fails++;
      record(((uint64_t)1 << 56) | 0x10000 | b, "part1 exmy_bf16_to_f64(0x%04x) = %a, expected %a", b, a2, e2);
    }
  }
  g_checks += checks;
  g_fails += fails;
  uint64_t *all = malloc(65536 * sizeof *all);
  for (uint32_t b = 0; b < 65536; b++) all[b] = b;
  for (size_t i = 0; i < g_nnamed; i++) {
    if (!g_named[i].ok) continue;
    fctx c = {1, (int)i, g_named[i].name, &g_named[i].f, &g_named[i].o};
    run_set(&c, SRC_F16, all, 65536, ALLMODES, SATS3, 3, FD0, 1, 0);
    run_set(&c, SRC_BF16, all, 65536, ALLMODES, SATS3, 3, FD0, 1, 0);
  }
  free(all);
}

static void part2(size_t nper) {
  vec dv = {0}, fv = {0};
  for (size_t i = 0; i < g_nnamed; i++) {
    if (!g_named[i].ok) continue;
    fctx c = {2, (int)i, g_named[i].name, &g_named[i].f, &g_named[i].o};
    gen_inputs(&g_named[i].o, rng_seed(2, i, 0), nper, nper, &dv, &fv);
    run_set(&c, SRC_F64, dv.v, dv.n, ALLMODES, SATS3, 3, FD0, 1, 16);
    run_set(&c, SRC_F32, fv.v, fv.n, ALLMODES, SATS3, 3, FD0, 1, 16);
  }
  free(dv.v);
  free(fv.v);
}

/* random ExMy formats */
static void part3(int nformats, size_t nper) {
  static const struct { exmy_inf inf; exmy_nan nan; int signed_only; } conv[] = {
      {EXMY_INF_IEEE, EXMY_NAN_IEEE, 0}, {EXMY_INF_NONE, EXMY_NAN_ONES, 0}, {EXMY_INF_NONE, EXMY_NAN_NONE, 0},
      {EXMY_INF_NONE, EXMY_NAN_NEGZERO, 1}, {EXMY_INF_TOP, EXMY_NAN_NEGZERO, 1}, {EXMY_INF_TOP, EXMY_NAN_ONES, 0},
      {EXMY_INF_TOP, EXMY_NAN_NONE, 0}, {EXMY_INF_NONE, EXMY_NAN_IEEE, 0}, {EXMY_INF_TOP, EXMY_NAN_IEEE, 0}};
  const int nconv = (int)(sizeof conv / sizeof conv[0]);
  uint64_t s = rng_seed(3, 0, 0);
  int accepted = 0, rejected = 0, unsupported = 0;
  vec dv = {0}, fv = {0}, hv = {0};
  for (int k = 0; k < nformats; k++) {
    exmy_format f;
    memset(&f, 0, sizeof f);
    f.ebits = 1 + (int)rbelow(&s, 8);
    f.mbits = (int)rbelow(&s, 11);
    f.is_signed = rbelow(&s, 4) != 0;
    f.has_zero = 1;
    int ci;
    do ci = (int)rbelow(&s, nconv);
    while ((conv[ci].signed_only && !f.is_signed) ||
           (f.mbits == 0 && (conv[ci].inf == EXMY_INF_IEEE || conv[ci].nan == EXMY_NAN_IEEE)));
    f.inf = conv[ci].inf;
    f.nan = conv[ci].nan;
    int special = (int)rbelow(&s, 20);
    if (special == 0) { /* occasionally a zero-less scale format (exponent only) */
      f.is_signed = 0; f.has_zero = 0; f.inf = EXMY_INF_NONE; f.nan = EXMY_NAN_ONES; f.mbits = 0;
    } else if (special == 1) { /* or a pure-mantissa format (E = 0) */
      f.ebits = 0;
      f.mbits = 1 + (int)rbelow(&s, 10);
      if (f.inf == EXMY_INF_IEEE) f.inf = EXMY_INF_NONE;
      if (f.nan == EXMY_NAN_IEEE) f.nan = EXMY_NAN_NONE;
    }
    int db = exmy_default_bias(f.ebits);
    int r = (int)rbelow(&s, 10);
    if (r < 4) f.bias = db;
    else if (r < 8) f.bias = db + (int)rbelow(&s, 9) - 4;
    else f.bias = db + (int)rbelow(&s, (uint64_t)(4 << f.ebits) + 1) - (2 << f.ebits);
    char err[EXMY_ERRLEN], why[EXMY_ERRLEN], name[128];
    if (exmy_format_make(&f, err, sizeof err) != 0) {
      if (rejected++ < 5)
        printf("note: random format E=%d M=%d bias=%d signed=%d zero=%d inf=%d nan=%d rejected: %s\n", f.ebits,
               f.mbits, f.bias, f.is_signed, f.has_zero, (int)f.inf, (int)f.nan, err);
      continue;
    }
    oracle_fmt o;
    if (oracle_fmt_init(&o, &f, why, sizeof why) != 0) {
      unsupported++;
      exmy_format_to_string(&f, name, sizeof name);
      printf("note: random format %s accepted by the library, not covered by the oracle: %s\n", name, why);
      continue;
    }
    accepted++;
    exmy_format_to_string(&f, name, sizeof name);
    fctx c = {3, k, name, &f, &o};
    check_format_fields(&c);
    gen_inputs(&o, rng_seed(3, (uint64_t)k, 1), nper, nper, &dv, &fv);
    run_set(&c, SRC_F64, dv.v, dv.n, ALLMODES, SATS3, 3, FD0, 1, 8);
    run_set(&c, SRC_F32, fv.v, fv.n, ALLMODES, SATS3, 3, FD0, 1, 8);
    hv.n = 0;
    uint64_t hs = rng_seed(3, (uint64_t)k, 2);
    for (size_t j = 0; j < nper / 4; j++) vpush(&hv, tu_next(&hs) & 0xffff);
    run_set(&c, (k & 1) ? SRC_F16 : SRC_BF16, hv.v, hv.n, ALLMODES, SATS2, 2, FD0, 1, 0);
  }
  printf("  random formats: %d accepted, %d rejected by exmy_format_make, %d not covered by the oracle\n",
         accepted, rejected, unsupported);
  g_checks++;
  if (accepted * 2 < nformats) {
    g_fails++;
    record((uint64_t)3 << 56, "part3 only %d of %d random formats accepted by exmy_format_make", accepted, nformats);
  }
  free(dv.v); free(fv.v); free(hv.v);
}

static void part4(size_t nper) {
  static const char *names[] = {"e4m3fn", "e5m2", "e4m3fnuz", "e5m2fnuz", "e2m1fn", "e3m2fn", "e2m3fn",
                                "e8m0fnu", "bf16", "f16", "e3m4", "binary8p4se", "binary8p3se"};
  uint64_t *all = malloc(65536 * sizeof *all);
  for (uint32_t b = 0; b < 65536; b++) all[b] = b;
  vec dv = {0}, fv = {0};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    const named *nm = find_named(names[k]);
    if (!nm) continue;
    fctx c = {4, (int)(nm - g_named), nm->name, &nm->f, &nm->o};
    run_set(&c, SRC_F16, all, 65536, ALLMODES, SATS2, 2, FDX, 3, 0);
    run_set(&c, SRC_BF16, all, 65536, ALLMODES, SATS2, 2, FDX, 3, 0);
    gen_inputs(&nm->o, rng_seed(4, k, 0), nper, nper, &dv, &fv);
    /* add input-type subnormals */
    uint64_t s = rng_seed(4, k, 1);
    for (size_t j = 0; j < nper / 8; j++) {
      vpush(&dv, (tu_next(&s) & 0x800fffffffffffffull));
      vpush(&fv, (tu_next(&s) & 0x807fffffu));
    }
    run_set(&c, SRC_F64, dv.v, dv.n, ALLMODES, SATS2, 2, FDX, 3, 0);
    run_set(&c, SRC_F32, fv.v, fv.n, ALLMODES, SATS2, 2, FDX, 3, 0);
  }
  free(all); free(dv.v); free(fv.v);
}

/* arrays: codes are little-endian-native unsigned integers of cb bytes */
static uint64_t my_code_get(size_t cb, const void *codes, size_t i) {
  const unsigned char *p = (const unsigned char *)codes + i * cb;
  switch (cb) {
  case 1: return p[0];
  case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
  case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
  default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

static void part5(size_t n) {
  static const char *names[] = {"e4m3fn", "e5m2", "e2m1fn", "e8m0fnu", "e3m4", "bf16", "f32", "e4m3fnuz", "binary8p4se"};
  static const int modes[] = {EXMY_RNE, EXMY_RUP, EXMY_RTO, EXMY_RNA};
  vec dv = {0}, fv = {0};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    const named *nm = find_named(names[k]);
    if (!nm) continue;
    const exmy_format *f = &nm->f;
    const oracle_fmt *o = &nm->o;
    fctx c = {5, (int)(nm - g_named), nm->name, f, o};
    gen_inputs(o, rng_seed(5, k, 0), n, n, &dv, &fv);
    uint64_t s = rng_seed(5, k, 1);
    size_t cb = o->bits <= 8 ? 1 : o->bits <= 16 ? 2 : o->bits <= 32 ? 4 : 8;
    g_checks++;
    if ((size_t)exmy_code_bytes(f) != cb) {
      g_fails++;
      record(mkkey(&c, 0, 2, 0, 0, 3), "part5 fmt=%s exmy_code_bytes %d, expected %zu", nm->name,
             exmy_code_bytes(f), cb);
      continue;
    }
    void *cq = malloc(n * cb), *cr = malloc(n * cb);
    float *f32 = malloc(n * sizeof *f32);
    double *f64 = malloc(n * sizeof *f64);
    uint16_t *h16 = malloc(n * sizeof *h16), *b16 = malloc(n * sizeof *b16);
    uint64_t *srcbits = malloc(n * sizeof *srcbits);
    for (size_t i = 0; i < n; i++) {
      f32[i] = bitsf((uint32_t)fv.v[i]);
      f64[i] = bitsd(dv.v[i]);
      h16[i] = (uint16_t)tu_next(&s);
      b16[i] = (uint16_t)tu_next(&s);
    }
    for (int src = 0; src < 4; src++) {
      const void *sp = src == SRC_F32 ? (const void *)f32 : src == SRC_F64 ? (const void *)f64
                     : src == SRC_BF16 ? (const void *)b16 : (const void *)h16;
      for (size_t i = 0; i < n; i++)
        srcbits[i] = src == SRC_F32 ? fv.v[i] : src == SRC_F64 ? dv.v[i] : src == SRC_BF16 ? b16[i] : h16[i];
      for (int mi = 0; mi < 4 + 2; mi++) {
        int mode = mi < 4 ? modes[mi] : EXMY_RNE;
        int sat = (mi & 1) ? EXMY_SAT_FINITE : EXMY_SAT_NONE;
        int ftz = mi == 5, daz = mi == 5;
        exmy_rounding r = mk_rnd(mode, sat, ftz, daz);
        const uint64_t index0 = 1000003;
        unsigned fq = 0, fr = 0;
        int rcq = exmy_quantize(f, &r, (exmy_dtype)src, sp, n, index0, cq, &fq, NULL, 0);
        int rcr = exmy_quantize_ref(f, &r, (exmy_dtype)src, sp, n, index0, cr, &fr, NULL, 0);
        unsigned eor = 0, emask = ~0u, sor = 0;
        long long checks = 0, fails = 0;
#pragma omp parallel reduction(+ : checks, fails) reduction(| : eor, sor) reduction(& : emask)
        {
          oracle_ws ws;
          oracle_ws_init(&ws);
#pragma omp for schedule(dynamic, 1024)
          for (size_t i = 0; i < n; i++) {
            double x = in_value(src, srcbits[i]);
            if (daz && in_subnormal(src, srcbits[i])) x = copysign(0.0, x);
            unsigned ef, em, sf = 0;
            uint64_t ec = oracle_convert(o, &ws, (exmy_round_mode)mode, (exmy_saturation)sat, ftz, x, &ef, &em);
            uint64_t gq = my_code_get(cb, cq, i), gr = my_code_get(cb, cr, i);
            (void)lib_conv(f, &r, src, srcbits[i], index0 + i, &sf);
            eor |= ef; emask &= em; sor |= sf;
            checks += 2;
            if (gq != ec) { fails++; report(&c, mode, sat, ftz, daz, src, srcbits[i], i, 0, ec, ef, 0, gq, 0); }
            if (gr != ec) { fails++; report(&c, mode, sat, ftz, daz, src, srcbits[i], i, 1, ec, ef, 0, gr, 0); }
          }
          oracle_ws_clear(&ws);
        }
        checks += 3;
        if (rcq != 0 || rcr != 0 || fq != sor || fr != sor) {
          fails++;
          record(mkkey(&c, mode, 2, sat, src, 0), "part5 fmt=%s mode=%s sat=%s ftz=daz=%d src=%s: array flags quantize 0x%x ref 0x%x, OR of scalar flags 0x%x (rc %d %d)",
                 nm->name, exmy_round_mode_name((exmy_round_mode)mode), sat_name[sat], ftz, src_name[src], fq, fr, sor, rcq, rcr);
        }
        if ((fr ^ eor) & emask) {
          fails++;
          record(mkkey(&c, mode, 2, sat, src, 1), "part5 fmt=%s mode=%s sat=%s ftz=daz=%d src=%s: array flags 0x%x, oracle OR 0x%x (mask 0x%x)",
                 nm->name, exmy_round_mode_name((exmy_round_mode)mode), sat_name[sat], ftz, src_name[src], fr, eor, emask);
        }
        g_checks += checks;
        g_fails += fails;
      }
      /* stochastic rounding: parallel == reference == scalar */
      exmy_rounding r = mk_rnd(EXMY_SR, EXMY_SAT_NONE, 0, 0);
      r.seed = g_seed;
      r.stream = 7;
      r.sr_bits = (int)k % 2 ? 8 : 64;
      unsigned fq = 0, fr = 0;
      int rcq = exmy_quantize(f, &r, (exmy_dtype)src, sp, n, 42, cq, &fq, NULL, 0);
      int rcr = exmy_quantize_ref(f, &r, (exmy_dtype)src, sp, n, 42, cr, &fr, NULL, 0);
      long long checks = 1, fails = 0;
      if (rcq != 0 || rcr != 0 || fq != fr) {
        fails++;
        record(mkkey(&c, EXMY_SR, 2, 0, src, 2), "part5 fmt=%s sr src=%s: flags quantize 0x%x ref 0x%x (rc %d %d)", nm->name, src_name[src], fq, fr, rcq, rcr);
      }
      for (size_t i = 0; i < n; i++) {
        unsigned sf = 0;
        uint64_t sc = lib_conv(f, &r, src, srcbits[i], 42 + i, &sf);
        uint64_t gq = my_code_get(cb, cq, i), gr = my_code_get(cb, cr, i);
        checks++;
        if (gq != sc || gr != sc || exmy_code_get(f, cq, i) != gq) {
          fails++;
          report(&c, EXMY_SR, 0, 0, 0, src, srcbits[i], i, 2, sc, 0, 0, gq != sc ? gq : gr, 0);
        }
      }
      g_checks += checks;
      g_fails += fails;
    }
    free(cq); free(cr); free(f32); free(f64); free(h16); free(b16); free(srcbits);
  }
  free(dv.v); free(fv.v);
}

/* --long: all float32 inputs */
static void run_long(void) {
  static const char *names[] = {"e4m3fn", "e5m2"};
  for (int k = 0; k < 2; k++) {
    const named *nm = find_named(names[k]);
    if (!nm) {
      g_checks++; g_fails++;
      record(((uint64_t)6 << 56) | (uint64_t)k, "long: format %s missing", names[k]);
      continue;
    }
    fctx c = {6, (int)(nm - g_named), nm->name, &nm->f, &nm->o};
    double t0 = omp_get_wtime();
    const uint64_t chunk = (uint64_t)1 << 28;
    /* --scale=X below 1 (smoke runs): only the first X of each 2^28 chunk */
    uint64_t span = g_scale < 1.0 ? (uint64_t)((double)chunk * g_scale) : chunk;
    if (span < 1) span = 1;
    for (uint64_t base = 0; base < ((uint64_t)1 << 32); base += chunk) {
      long long checks = 0, fails = 0;
#pragma omp parallel reduction(+ : checks, fails)
      {
        oracle_ws ws;
        oracle_ws_init(&ws);
        exmy_rounding rn = mk_rnd(EXMY_RNE, EXMY_SAT_NONE, 0, 0), rf = mk_rnd(EXMY_RNE, EXMY_SAT_FINITE, 0, 0);
#pragma omp for schedule(dynamic, 65536)
        for (uint64_t i = base; i < base + span; i++) {
          float x = bitsf((uint32_t)i);
          oracle_pre p;
          oracle_pre_round(c.o, &ws, O_RNE, (double)x, &p);
          for (int s = 0; s < 2; s++) {
            unsigned ef, em, gf = 0;
            uint64_t ec = oracle_finish(c.o, &p, EXMY_RNE, (exmy_saturation)s, 0, &ef, &em);
            uint64_t gc = exmy_from_f32(c.f, s ? &rf : &rn, x, 0, &gf);
            checks++;
            if (gc != ec || ((gf ^ ef) & em)) {
              fails++;
              report(&c, EXMY_RNE, s, 0, 0, SRC_F32, i, i, 0, ec, ef, em, gc, gf);
            }
          }
        }
        oracle_ws_clear(&ws);
      }
      g_checks += checks;
      g_fails += fails;
      printf("  long %s: inputs up to 0x%08" PRIx64 " done (%" PRIu64 "/16 of 2^32%s), %lld failures so far, %.0f s\n",
             nm->name, base + chunk - 1, (base + chunk) >> 28, span < chunk ? ", sampled" : "", g_fails,
             omp_get_wtime() - t0);
      fflush(stdout);
    }
  }
}

int main(int argc, char **argv) {
  int longmode = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--long") == 0) longmode = 1;
    else if (strncmp(argv[i], "--scale=", 8) == 0) g_scale = atof(argv[i] + 8);
    else if (strncmp(argv[i], "--part=", 7) == 0) g_only_part = atoi(argv[i] + 7);
    else {
      fprintf(stderr, "usage: %s [--long] [--scale=X] [--part=N]\n", argv[0]);
      return 2;
    }
  }
  const char *se = getenv("EXMY_TEST_SEED");
  if (se && *se) g_seed = strtoull(se, NULL, 0);
  printf("test_mpfr: seed 0x%" PRIx64 " (EXMY_TEST_SEED), %d threads, MPFR %s\n", g_seed, omp_get_max_threads(),
         mpfr_get_version());
  double t00 = omp_get_wtime(), t0;
  long long c0, f0;
  load_named();
  if (longmode) {
    part_begin("long: all float32 inputs, e4m3fn and e5m2, rne, sat none/finite", &t0, &c0, &f0);
    run_long();
    part_end("long", t0, c0, f0);
  } else {
    size_t nper = (size_t)(1000000 * g_scale);
    if (nper < 1000) nper = 1000;
#define PART(n) (g_only_part < 0 || g_only_part == (n))
    if (PART(0)) {
      part_begin("part 0: hand-computed anchors, format fields and decode", &t0, &c0, &f0);
      check_anchors();
      for (size_t i = 0; i < g_nnamed; i++) {
        if (!g_named[i].ok) continue;
        fctx c = {0, (int)i, g_named[i].name, &g_named[i].f, &g_named[i].o};
        check_format_fields(&c);
      }
      part_end("part 0", t0, c0, f0);
    }
    if (PART(1)) {
      part_begin("part 1: every f16 and bf16 input, named formats, 6 modes, 3 saturations", &t0, &c0, &f0);
      part1();
      part_end("part 1", t0, c0, f0);
    }
    if (PART(2)) {
      part_begin("part 2: boundary and random float32/double inputs, named formats", &t0, &c0, &f0);
      part2(nper);
      part_end("part 2", t0, c0, f0);
    }
    if (PART(3)) {
      part_begin("part 3: random ExMy formats", &t0, &c0, &f0);
      part3(300, (size_t)(4000 * g_scale) + 500);
      part_end("part 3", t0, c0, f0);
    }
    if (PART(4)) {
      part_begin("part 4: ftz/daz", &t0, &c0, &f0);
      part4((size_t)(100000 * g_scale) + 1000);
      part_end("part 4", t0, c0, f0);
    }
    if (PART(5)) {
      part_begin("part 5: exmy_quantize / exmy_quantize_ref", &t0, &c0, &f0);
      part5((size_t)(100000 * g_scale) + 1000);
      part_end("part 5", t0, c0, f0);
    }
#undef PART
  }
  if (g_cat) {
    qsort(g_cat, NCAT, sizeof g_cat[0], cmp_cat);
    int nc = 0;
    while (nc < NCAT && g_cat[nc].used) nc++;
    printf("failure summary: %d categories (format, mode, ftz/daz, code or flag bits differing)%s\n", nc,
           g_ncat_over ? " (table full, some not counted)" : "");
    for (int i = 0; i < nc && i < 400; i++)
      printf("  [%lld x, %s 0x%x] e.g. %s\n", g_cat[i].n, (g_cat[i].cat & 16) ? "code" : "flags",
             (unsigned)(g_cat[i].cat & 15), g_cat[i].msg);
    if (nc > 400) printf("  ... %d more categories\n", nc - 400);
  }
  qsort(g_rec, (size_t)g_nrec, sizeof g_rec[0], cmp_rec);
  for (int i = 0; i < g_nrec; i++) printf("FAIL %s\n", g_rec[i].msg);
  if (g_fails > g_nrec) printf("... and %lld more failures\n", g_fails - g_nrec);
  printf("total time %.1f s\n", omp_get_wtime() - t00);
  printf("test_mpfr: %lld checks, %lld failures\n", g_checks, g_fails);
  return g_fails ? 1 : 0;
}
