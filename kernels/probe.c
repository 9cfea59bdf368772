/* probe.c: infer the tensor-core accumulation parameters of a dot-product
 * engine (a GPU instruction, cuBLASLt, or the CPU model) from crafted inputs,
 * after Fasi, Higham, Mikaitis and Pranesh (2021) and Khattak and Mikaitis.
 * Plain C around one callback, so tests/test_gpu_probe.c runs the whole
 * inference against exmy_gemm's `tc` model with known parameters.
 *
 * Notation: products are powers of two 2^e (or 1.5 * 2^e) of normal
 * operands; B = 2^p with p the largest such exponent, so a term 2^q is cut
 * away when aligned with B iff q < p - f.  Each step states what the model
 * of docs/gemm.md predicts and reads the parameter off the engine's answer. */
#include "exmy.h"
#include "formats/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define KSTEP 32 /* k of every dot product is padded with zeros to a multiple of this */

typedef struct probe {
  const exmy_probe_engine *eng;
  const exmy_format *fa, *fb;
  exmy_probe_result *res;
  FILE *log;
  char *err;
  size_t errlen;
  int p_lo, p_hi;           /* exponents of power-of-two products of normal operands */
  /* the current batch */
  size_t k, count, cap;
  uint8_t *a, *b;
  float *out;
} probe;

static void note(probe *P, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(probe *P, const char *fmt, ...) {
  char *s = P->res->notes;
  size_t len = strlen(s);
  if (len + 2 >= sizeof P->res->notes) return;
  if (len) { s[len++] = ';'; s[len++] = ' '; s[len] = 0; }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(s + len, sizeof P->res->notes - len, fmt, ap);
  va_end(ap);
  if (P->log) fprintf(P->log, "  note: %s\n", s + len);
}

static size_t pad_k(size_t k) { return (k + KSTEP - 1) / KSTEP * KSTEP; }

static int batch(probe *P, size_t k, size_t count) {
  k = pad_k(k ? k : 1);
  if (k * count > P->cap) {
    free(P->a); free(P->b); free(P->out);
    P->cap = k * count;
    P->a = calloc(P->cap, 1);
    P->b = calloc(P->cap, 1);
    P->out = calloc(count > P->cap ? count : P->cap, sizeof *P->out);
    if (!P->a || !P->b || !P->out) return exmy__fail(P->err, P->errlen, "probe: out of memory for %zu x %zu", count, k);
  }
  memset(P->a, 0, k * count);
  memset(P->b, 0, k * count);
  P->k = k;
  P->count = count;
  return 0;
}

static uint64_t encode(probe *P, const exmy_format *f, double v, int *ok) {
  exmy_rounding r = exmy_rounding_default();
  uint64_t c = exmy_from_f64(f, &r, v, 0, NULL);
  if (exmy_code_to_f64(f, c) != v) *ok = 0;
  return c;
}

/* Slot l of dot i is the product (sign) ma*2^ea * mb*2^eb = ma*mb*2^e, the
 * exponent split between the two formats' normal ranges. */
static int put(probe *P, size_t i, size_t l, int neg, double ma, double mb, int e) {
  int ok = 1;
  for (int ea = P->fa->emax; ea >= P->fa->emin; ea--) {
    int eb = e - ea;
    if (eb < P->fb->emin || eb > P->fb->emax) continue;
    uint64_t ca = encode(P, P->fa, (neg ? -ma : ma) * ldexp(1.0, ea), &ok);
    uint64_t cb = encode(P, P->fb, mb * ldexp(1.0, eb), &ok);
    if (!ok) continue;
    P->a[i * P->k + l] = (uint8_t)ca;
    P->b[i * P->k + l] = (uint8_t)cb;
    return 0;
  }
  return exmy__fail(P->err, P->errlen, "probe: product %s%g*%g*2^%d is not a product of %s and %s values",
                    neg ? "-" : "", ma, mb, e, P->fa->name, P->fb->name);
}
#define PUT(i, l, neg, ma, mb, e) do { if (put(P, i, l, neg, ma, mb, e)) return -1; } while (0)

static int run(probe *P) {
  P->res->dots += (long)P->count;
  return P->eng->dot(P->eng->ctx, P->fa, P->fb, P->k, P->count, P->a, P->b, P->out, P->err, P->errlen);
}

static int same(float x, double v) { return (double)x == v && !(x == 0 && signbit(x)); }

/* 1. Single products, every pair of finite codes with a of either sign. */
static int step_products(probe *P) {
  exmy_probe_result *R = P->res;
  const exmy_format *fa = P->fa, *fb = P->fb;
  size_t na = (size_t)1 << fa->bits, nb = (size_t)1 << fb->bits, count = 0;
  for (size_t ca = 0; ca < na; ca++)
    for (size_t cb = 0; cb < nb; cb++) {
      exmy_class xa = exmy_classify(fa, ca), xb = exmy_classify(fb, cb);
      if (xa == EXMY_CLASS_NAN || xa == EXMY_CLASS_INF || xb == EXMY_CLASS_NAN || xb == EXMY_CLASS_INF) continue;
      if (exmy_code_sign(fb, cb) || xa == EXMY_CLASS_ZERO || xb == EXMY_CLASS_ZERO) continue;
      count++;
    }
  if (batch(P, 1, count)) return -1;
  size_t i = 0;
  for (size_t ca = 0; ca < na; ca++)
    for (size_t cb = 0; cb < nb; cb++) {
      exmy_class xa = exmy_classify(fa, ca), xb = exmy_classify(fb, cb);
      if (xa == EXMY_CLASS_NAN || xa == EXMY_CLASS_INF || xb == EXMY_CLASS_NAN || xb == EXMY_CLASS_INF) continue;
      if (exmy_code_sign(fb, cb) || xa == EXMY_CLASS_ZERO || xb == EXMY_CLASS_ZERO) continue;
      P->a[i * P->k] = (uint8_t)ca;
      P->b[i * P->k] = (uint8_t)cb;
      i++;
    }
  if (run(P)) return -1;
  long sub = 0, sub_bad = 0;
  i = 0;
  for (size_t ca = 0; ca < na; ca++)
    for (size_t cb = 0; cb < nb; cb++) {
      exmy_class xa = exmy_classify(fa, ca), xb = exmy_classify(fb, cb);
      if (xa == EXMY_CLASS_NAN || xa == EXMY_CLASS_INF || xb == EXMY_CLASS_NAN || xb == EXMY_CLASS_INF) continue;
      if (exmy_code_sign(fb, cb) || xa == EXMY_CLASS_ZERO || xb == EXMY_CLASS_ZERO) continue;
      double exact = exmy_code_to_f64(fa, ca) * exmy_code_to_f64(fb, cb);
      int bad = (double)P->out[i] != exact;
      int is_sub = xa == EXMY_CLASS_SUBNORMAL || xb == EXMY_CLASS_SUBNORMAL;
      R->pairs++;
      R->pairs_inexact += bad;
      sub += is_sub;
      sub_bad += is_sub && bad;
      if (bad && R->pairs_inexact <= 3 && P->log)
        fprintf(P->log, "  product 0x%02zx * 0x%02zx = %a, engine %a\n", ca, cb, exact, (double)P->out[i]);
      i++;
    }
  R->products_exact = R->pairs_inexact == 0;
  R->subnormals_exact = sub_bad == 0;
  if (P->log)
    fprintf(P->log, "products: %ld pairs, %ld not exact (%ld with a subnormal operand, %ld of them not exact)\n",
            R->pairs, R->pairs_inexact, sub, sub_bad);
  return 0;
}

/* 2. Group size: B, -B in slots 0 and 1 and 2^p_lo in slot i.  In B's group
 * the small term is cut away and the sum is 0; in a later group it meets a
 * zero accumulator and survives.  g is the first i where it survives. */
static int step_group(probe *P) {
  exmy_probe_result *R = P->res;
  size_t lim = P->eng->k_max < 256 ? P->eng->k_max : 256;
  if (lim < 4) return exmy__fail(P->err, P->errlen, "probe: engine %s takes k <= %zu", P->eng->name, lim);
  if (batch(P, lim, lim - 2)) return -1;
  for (size_t i = 2; i < lim; i++) {
    PUT(i - 2, 0, 0, 1, 1, P->p_hi);
    PUT(i - 2, 1, 1, 1, 1, P->p_hi);
    PUT(i - 2, i, 0, 1, 1, P->p_lo);
  }
  if (run(P)) return -1;
  R->g = 0;
  double u = ldexp(1.0, P->p_lo);
  for (size_t i = 2; i < lim && !R->g; i++) {
    if (P->out[i - 2] == 0) continue;
    if (!same(P->out[i - 2], u)) note(P, "group probe: slot %zu gave %a, expected 0 or %a", i, (double)P->out[i - 2], u);
    R->g = (int)i;
  }
  if (!R->g) {
    note(P, "no group boundary below k = %zu", lim);
    return 0;
  }
  if (R->g == 2) {
    /* Either g = 2 or the small term is never cut (f >= p_hi - p_lo). */
    if (batch(P, 3, 1)) return -1;
    PUT(0, 0, 0, 1, 1, P->p_hi);
    PUT(0, 1, 0, 1, 1, P->p_lo);
    PUT(0, 2, 1, 1, 1, P->p_hi);
    if (run(P)) return -1;
    if (P->out[0] != 0) {
      note(P, "f >= %d: %s x %s products span too few binades to see the alignment", P->p_hi - P->p_lo,
           P->fa->name, P->fb->name);
      R->g = 0;
      return 0;
    }
    note(P, "g = 2: too small for the three-term probes of f");
  }
  if (P->log) fprintf(P->log, "group: g = %d products per fused group\n", R->g);
  return 0;
}

/* 3. Fraction bits after alignment: B, -B, 2^q in one group; 2^q survives
 * iff q >= p - f (truncation and nearest-even agree on powers of two).
 * Then alignment rounding: 1.5 * 2^(p-f-1) is 0.75 of the last kept bit. */
static int step_frac(probe *P) {
  exmy_probe_result *R = P->res;
  int p = P->p_hi, n = p - P->p_lo + 1;
  if (batch(P, 3, (size_t)n + 4)) return -1;
  for (int q = p; q >= P->p_lo; q--) {
    PUT((size_t)(p - q), 0, 0, 1, 1, p);
    PUT((size_t)(p - q), 1, 1, 1, 1, p);
    PUT((size_t)(p - q), 2, 0, 1, 1, q);
  }
  if (run(P)) return -1;
  int qmin = p + 1, mono = 1;
  for (int q = p; q >= P->p_lo; q--) {
    float o = P->out[p - q];
    if (same(o, ldexp(1.0, q))) {
      if (qmin != q + 1) mono = 0;
      qmin = q;
    } else if (o != 0) {
      note(P, "frac probe: 2^%d gave %a", q, (double)o);
    }
  }
  if (!mono) note(P, "frac probe: the surviving terms are not a range of exponents");
  if (qmin > p) { note(P, "frac probe: even B - B + B lost B"); return 0; }
  if (qmin == P->p_lo) {
    note(P, "f >= %d: %s x %s products span too few binades", p - P->p_lo, P->fa->name, P->fb->name);
    return 0;
  }
  R->f = p - qmin;
  /* alignment rounding, the sign of the cut, and the alignment exponent */
  int f = R->f;
  if (batch(P, 3, 3)) return -1;
  PUT(0, 0, 0, 1, 1, p); PUT(0, 1, 1, 1, 1, p); PUT(0, 2, 0, 1.5, 1, p - f - 1);
  PUT(1, 0, 0, 1, 1, p); PUT(1, 1, 1, 1, 1, p); PUT(1, 2, 1, 1.5, 1, p - f - 1);
  PUT(2, 0, 0, 1.5, 1.5, p - 1); PUT(2, 1, 1, 1.5, 1.5, p - 1); PUT(2, 2, 0, 1, 1, p - 1 - f);
  if (run(P)) return -1;
  double ulp = ldexp(1.0, p - f);
  if (P->out[0] == 0) R->align_rne = 0;
  else if (same(P->out[0], ulp)) R->align_rne = 1;
  else { note(P, "align probe: 0.75 ulp gave %a (expected 0 or %a)", (double)P->out[0], ulp); R->align_rne = -1; }
  if (P->out[1] == 0) R->neg_toward_zero = 1;
  else if ((double)P->out[1] == -ulp) R->neg_toward_zero = R->align_rne == 1 ? 1 : 0;
  else R->neg_toward_zero = -1;
  if (R->neg_toward_zero == 0) note(P, "negative terms are cut toward -inf, not toward zero as the model does");
  if (same(P->out[2], ldexp(1.0, p - 1 - f))) R->nominal_exp = 1;
  else if (P->out[2] == 0) R->nominal_exp = 0;
  else R->nominal_exp = -1;
  if (R->nominal_exp != 1) note(P, "the alignment exponent is not the nominal ea + eb (model assumes it is)");
  if (P->log)
    fprintf(P->log, "alignment: f = %d fraction bits kept, %s; negative terms toward %s; exponent %s\n", f,
            R->align_rne == 1 ? "rounded to nearest even" : R->align_rne == 0 ? "truncated" : "unknown",
            R->neg_toward_zero == 1 ? "zero" : R->neg_toward_zero == 0 ? "-inf" : "?",
            R->nominal_exp == 1 ? "nominal ea+eb" : R->nominal_exp == 0 ? "renormalized" : "?");
  return 0;
}

/* 4. Output fraction bits: 2^r copies of 2^p plus 2^(p+r-j) sum to a value
 * with bit j set below its leading bit; it is kept iff out >= j.  r lifts
 * the sum so j can exceed f.  Then the normalization's rounding with a
 * 0.75-ulp tail. */
static int step_out(probe *P) {
  exmy_probe_result *R = P->res;
  int p = P->p_hi, f = R->f, g = R->g;
  R->out = -1;
  int jmax = 0;
  for (int j = 1; j <= 23; j++) {
    int r = j > f ? j - f : 0;
    if ((1 << r) + 1 > g || p + r - j < P->p_lo || r > 20) break;
    jmax = j;
  }
  if (!jmax) { note(P, "out probe: no room (g = %d, f = %d)", g, f); return 0; }
  /* The terms go in the last group: a later group, even of zeros, would
   * align the accumulator again and cut it to f bits. */
  size_t k = (size_t)g, base;
  while (k % KSTEP) k += (size_t)g;
  base = k - (size_t)g;
  if (batch(P, k, (size_t)jmax)) return -1;
  for (int j = 1; j <= jmax; j++) {
    int r = j > f ? j - f : 0;
    for (int s = 0; s < (1 << r); s++) PUT((size_t)j - 1, base + (size_t)s, 0, 1, 1, p);
    PUT((size_t)j - 1, base + ((size_t)1 << r), 0, 1, 1, p + r - j);
  }
  if (run(P)) return -1;
  for (int j = 1; j <= jmax; j++) {
    int r = j > f ? j - f : 0;
    double want = ldexp(1.0, p + r) + ldexp(1.0, p + r - j), top = ldexp(1.0, p + r);
    if (same(P->out[j - 1], want)) { R->out = j; continue; }
    if (!same(P->out[j - 1], top)) note(P, "out probe: bit %d gave %a (expected %a or %a)", j, (double)P->out[j - 1], want, top);
    break;
  }
  if (R->out == jmax && jmax < 23) {
    note(P, "out >= %d (g = %d and f = %d leave no room to see more)", jmax, g, f);
    R->out = -1;
    return 0;
  }
  if (R->out < 1) { R->out = -1; note(P, "out probe: not even one fraction bit kept"); return 0; }
  int out = R->out, r = out + 2 > f ? out + 2 - f : 0;
  if ((1 << r) + 1 > g || p + r - out - 1 < P->p_lo) {
    note(P, "norm probe: no room (g = %d, f = %d, out = %d)", g, f, out);
    R->norm_rne = -1;
    return 0;
  }
  if (batch(P, k, 1)) return -1;
  for (int s = 0; s < (1 << r); s++) PUT(0, base + (size_t)s, 0, 1, 1, p);
  PUT(0, base + ((size_t)1 << r), 0, 1.5, 1, p + r - out - 1);
  if (run(P)) return -1;
  double top = ldexp(1.0, p + r);
  if (same(P->out[0], top)) R->norm_rne = 0;
  else if (same(P->out[0], top + ldexp(1.0, p + r - out))) R->norm_rne = 1;
  else { R->norm_rne = -1; note(P, "norm probe: gave %a", (double)P->out[0]); }
  if (P->log)
    fprintf(P->log, "normalization: out = %d fraction bits, %s\n", out,
            R->norm_rne == 1 ? "rounded to nearest even" : R->norm_rne == 0 ? "truncated" : "unknown");
  return 0;
}

/* 5. Promotion: B in slot 0, then u = 2^(p-23) in every slot up to K.  The
 * tensor core cuts every u against B; an fp32 accumulator that takes a fresh
 * partial sum at slot N adds (K - N) u exactly.  So N = K - (result - B)/u. */
static int step_promote(probe *P) {
  exmy_probe_result *R = P->res;
  int p = P->p_hi, q = p - 23;
  size_t K = P->eng->k_max < 16384 ? P->eng->k_max : 16384;
  /* a fresh partial sum of up to K - 1 terms u must stay exact */
  int bits = R->out < R->f ? R->out : R->f;
  if (bits < 20 && K > ((size_t)1 << (bits + 1))) K = (size_t)1 << (bits + 1);
  K = K / KSTEP * KSTEP;
  R->promote = 0;
  R->promote_seen = -1;
  if (R->f > 22 || q < P->p_lo || K < 2 * KSTEP) {
    note(P, "promotion not observable (needs f <= 22, products down to 2^%d and k >= %d; has f = %d, 2^%d, k = %zu)",
         q, 2 * KSTEP, R->f, P->p_lo, K);
    return 0;
  }
  if (batch(P, K, 1)) return -1;
  PUT(0, 0, 0, 1, 1, p);
  for (size_t l = 1; l < K; l++) PUT(0, l, 0, 1, 1, q);
  if (run(P)) return -1;
  double B = ldexp(1.0, p), u = ldexp(1.0, q), m = ((double)P->out[0] - B) / u;
  if (m == 0) {
    R->promote_seen = 0;
    if (P->log) fprintf(P->log, "promotion: none up to k = %zu\n", K);
    return 0;
  }
  if (m != floor(m) || m < 0 || m >= (double)K) {
    note(P, "promote probe: k = %zu gave %a, not B + m u", K, (double)P->out[0]);
    return 0;
  }
  size_t N = K - (size_t)m;
  /* confirm: k = N keeps B, k = N + 1 adds one u */
  size_t ks[2] = {N, N + 1};
  for (int t = 0; t < 2; t++) {
    if (batch(P, ks[t], 1)) return -1;
    PUT(0, 0, 0, 1, 1, p);
    for (size_t l = 1; l < ks[t]; l++) PUT(0, l, 0, 1, 1, q);
    if (run(P)) return -1;
    double want = t ? B + u : B;
    if (!same(P->out[0], want)) note(P, "promote probe: k = %zu gave %a, expected %a", ks[t], (double)P->out[0], want);
  }
  R->promote = N;
  R->promote_seen = 1;
  if (N <= (size_t)R->g) note(P, "promotion every %zu cuts each group short: g may be larger than %d", N, R->g);
  if (P->log) fprintf(P->log, "promotion: fp32 accumulator takes a fresh partial sum at k = %zu\n", N);
  return 0;
}

/* 6. NaN and inf. */
static int step_special(probe *P) {
  exmy_probe_result *R = P->res;
  const exmy_format *fa = P->fa;
  int ok = 1;
  uint64_t one = encode(P, P->fb, 1.0, &ok);
  if (fa->nan == EXMY_NAN_NONE || !ok) return 0;
  int has_inf = fa->inf != EXMY_INF_NONE;
  if (batch(P, 2, has_inf ? 3 : 1)) return -1;
  P->a[0] = (uint8_t)fa->nan_code;
  P->b[0] = (uint8_t)one;
  if (has_inf) {
    P->a[P->k] = (uint8_t)fa->inf_mag;             /* inf * 1 */
    P->b[P->k] = (uint8_t)one;
    P->a[2 * P->k] = (uint8_t)fa->inf_mag;         /* inf - inf */
    P->b[2 * P->k] = (uint8_t)one;
    P->a[2 * P->k + 1] = (uint8_t)(fa->inf_mag | fa->sign_mask);
    P->b[2 * P->k + 1] = (uint8_t)one;
  }
  if (run(P)) return -1;
  uint32_t bits;
  memcpy(&bits, &P->out[0], 4);
  R->nan_seen = isnan(P->out[0]);
  R->nan_bits = bits;
  if (!R->nan_seen) note(P, "a NaN operand gave %a, not NaN", (double)P->out[0]);
  if (has_inf) {
    if (!(isinf(P->out[1]) && P->out[1] > 0)) note(P, "inf * 1 gave %a", (double)P->out[1]);
    if (!isnan(P->out[2])) note(P, "inf - inf gave %a", (double)P->out[2]);
  }
  if (P->log) fprintf(P->log, "specials: NaN operand gives 0x%08x%s\n", (unsigned)bits, has_inf ? ", inf checked" : "");
  return 0;
}

/* 7. Random dot products against the CPU model with the inferred parameters. */
static int step_confirm(probe *P, const exmy_accum *acc) {
  exmy_probe_result *R = P->res;
  const size_t count = 64, k = 1024;
  uint64_t st = 0x5eed;
  if (batch(P, k, count)) return -1;
  for (size_t i = 0; i < count; i++) {
    size_t kk = (size_t)KSTEP * (1 + (size_t)(st % (k / KSTEP)));
    st = st * 6364136223846793005ULL + 1442695040888963407ULL;
    for (size_t l = 0; l < kk; l++) {
      uint8_t ca, cb;
      do {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        ca = (uint8_t)(st >> 56);
        cb = (uint8_t)(st >> 48);
      } while (exmy_classify(P->fa, ca) >= EXMY_CLASS_INF || exmy_classify(P->fb, cb) >= EXMY_CLASS_INF);
      P->a[i * P->k + l] = ca;
      P->b[i * P->k + l] = cb;
    }
  }
  if (run(P)) return -1;
  float *want = malloc(count * sizeof *want);
  if (!want) return exmy__fail(P->err, P->errlen, "probe: out of memory");
  if (exmy_probe_model_dot((void *)acc, P->fa, P->fb, P->k, count, P->a, P->b, want, P->err, P->errlen)) {
    free(want);
    return -1;
  }
  for (size_t i = 0; i < count; i++) {
    R->confirm_dots++;
    if (memcmp(&want[i], &P->out[i], 4)) {
      if (R->confirm_mismatches++ < 3 && P->log)
        fprintf(P->log, "  confirm: dot %zu: engine %a, model %a\n", i, (double)P->out[i], (double)want[i]);
    }
  }
  free(want);
  if (P->log)
    fprintf(P->log, "confirm: %ld random dot products, %ld differ from %s\n", R->confirm_dots, R->confirm_mismatches,
            R->accum);
  return 0;
}

int exmy_probe_run(const exmy_probe_engine *eng, const exmy_format *fa, const exmy_format *fb, FILE *log,
                   exmy_probe_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  res->align_rne = res->norm_rne = res->nominal_exp = res->neg_toward_zero = -1;
  if (fa->bits > 8 || fb->bits > 8 || !fa->has_zero || !fb->has_zero || fa->mbits < 1 || fb->mbits < 1)
    return exmy__fail(err, errlen, "probe: operands must be formats of at most 8 bits with a zero and a mantissa bit (%s, %s)",
                      fa->name, fb->name);
  probe P = {0};
  P.eng = eng; P.fa = fa; P.fb = fb; P.res = res; P.log = log; P.err = err; P.errlen = errlen;
  P.p_lo = fa->emin + fb->emin;
  P.p_hi = fa->emax + fb->emax;
  if (log) fprintf(log, "probe %s with %s x %s (products 2^%d .. 2^%d)\n", eng->name, fa->name, fb->name, P.p_lo, P.p_hi);
  int rc = -1;
  if (step_products(&P) || step_special(&P) || step_group(&P)) goto out;
  if (res->g >= 3) {
    if (step_frac(&P)) goto out;
    if (res->f && step_out(&P)) goto out;
  }
  res->complete = res->g >= 3 && res->f > 0 && res->align_rne >= 0 && res->out > 0 && res->norm_rne >= 0;
  if (res->complete && step_promote(&P)) goto out;
  if (res->complete) {
    snprintf(res->accum, sizeof res->accum, "tc:g=%d,f=%d,align=%s,out=%d,norm=%s,promote=%zu", res->g, res->f,
             res->align_rne ? "rne" : "trunc", res->out, res->norm_rne ? "rne" : "trunc", res->promote);
    exmy_accum acc;
    char perr[EXMY_ERRLEN];
    if (res->out > 23 || exmy_accum_parse(res->accum, &acc, perr, sizeof perr)) {
      note(&P, "the inferred model does not parse: %s", perr);
    } else if (step_confirm(&P, &acc)) {
      goto out;
    }
  }
  if (log) fprintf(log, "result: %s\n", res->complete ? res->accum : "incomplete");
  rc = 0;
out:
  free(P.a); free(P.b); free(P.out);
  return rc;
}

/* ---- the CPU engine --------------------------------------------------- */

int exmy_probe_model_dot(void *ctx, const exmy_format *fa, const exmy_format *fb, size_t k, size_t count,
                         const uint8_t *a, const uint8_t *b, float *out, char *err, size_t errlen) {
  const exmy_accum *acc = ctx;
  exmy_format f32;
  if (exmy_format_parse("f32", &f32, err, errlen)) return -1;
  exmy_qtensor qa, qb;
  for (size_t i = 0; i < count; i++) {
    exmy_gemm_args g;
    exmy_gemm_args_init(&g);
    exmy_qtensor_view(fa, a + i * k, 1, k, NULL, &qa);
    exmy_qtensor_view(fb, b + i * k, k, 1, NULL, &qb);
    g.a = &qa;
    g.b = &qb;
    g.d_fmt = &f32;
    g.accum = acc;
    g.threads = 1;
    if (exmy_gemm(&g, &out[i], NULL, NULL, err, errlen)) return -1;
  }
  return 0;
}

/* ---- which preset the result is ---------------------------------------- */

/* Where res differs from the model acc, as "f 25, preset 13; ..." appended to
 * buf; returns the number of differences. */
static int differences(const exmy_probe_result *res, const exmy_accum *acc, char *buf, size_t buflen) {
  /* what the probe reports for this model (tests/test_gpu_probe.c): a
   * promotion interval below g cuts every group short and shows as g */
  const long want_g = acc->chunk && acc->chunk < (size_t)acc->tc_group ? (long)acc->chunk : acc->tc_group;
  const struct { const char *name; long got, want; int skip; } rows[] = {
    {"g", res->g, want_g, 0},
    {"f", res->f, acc->tc_frac, 0},
    {"align (1 rne)", res->align_rne, acc->tc_align_rne, 0},
    {"out", res->out, acc->tc_out_frac, 0},
    {"norm (1 rne)", res->norm_rne, acc->tc_norm_rne, 0},
    {"promote", (long)res->promote, (long)acc->chunk, res->promote_seen < 0},
    {"products exact", res->products_exact, 1, 0},
    {"confirm mismatches", res->confirm_mismatches, 0, 0},
  };
  int n = 0;
  size_t len = buf && buflen ? strlen(buf) : 0;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    if (rows[i].skip || rows[i].got == rows[i].want) continue;
    n++;
    if (buf && len + 1 < buflen)
      len += (size_t)snprintf(buf + len, buflen - len, "%s%s %ld, preset %ld", n > 1 ? "; " : "", rows[i].name,
                              rows[i].got, rows[i].want);
    if (len >= buflen) len = buflen ? buflen - 1 : 0;
  }
  return n;
}

int exmy_probe_match(const exmy_probe_result *res, char *match, size_t matchlen, char *nearest, size_t nearestlen,
                     char *diff, size_t difflen) {
  int found = 0, best = -1;
  size_t best_i = 0, mlen = 0;
  if (match && matchlen) match[0] = 0;
  for (size_t i = 0; i < exmy_accum_tc_preset_count(); i++) {
    char text[64];
    exmy_accum acc;
    snprintf(text, sizeof text, "tc:%s", exmy_accum_tc_preset_get(i));
    if (exmy_accum_parse(text, &acc, NULL, 0)) continue;
    int n = differences(res, &acc, NULL, 0);
    if (!n) {
      if (match && mlen + 1 < matchlen) mlen += (size_t)snprintf(match + mlen, matchlen - mlen, "%s%s", found ? " " : "", text);
      if (mlen >= matchlen) mlen = matchlen ? matchlen - 1 : 0;
      found++;
    }
    if (best < 0 || n < best) { best = n; best_i = i; }
  }
  char text[64];
  exmy_accum acc;
  snprintf(text, sizeof text, "tc:%s", exmy_accum_tc_preset_get(best_i));
  if (nearest && nearestlen) snprintf(nearest, nearestlen, "%s", text);
  if (diff && difflen) {
    diff[0] = 0;
    if (!exmy_accum_parse(text, &acc, NULL, 0)) differences(res, &acc, diff, difflen);
  }
  return found;
}
