/* study_edge.c: the stability edge, the learning rate where training starts
 * to fail, estimated from one arm's (learning rate x seed) outcomes, and two
 * arms compared by seed (declarations and the structs: study_int.h, "the
 * stability edge"; the estimators and what is reported: docs/studies/edge.md).
 * Pure functions: no I/O, no globals; bootstraps draw exmy_random64(seed,
 * stream, index), so every result is a function of the inputs.  Learning
 * rates enter as x = log2(lr); shifts are in log2 units (1 = a factor 2). */
#include "experiments/study_int.h"
#include "exmy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { REPS = ST_EDGE_REPS };
#define RUN_AT(a, s, k) ((a)->out[(size_t)(s) * (size_t)(a)->nlr + (size_t)(k)])
enum { STREAM_SHIFT = 0xed9e, STREAM_SENS = 0x5e45, STREAM_OFF = 0x0ff5 };

/* ---- outcomes ----------------------------------------------------------- */

int st_edge_classify(double final_loss, double init_loss, int undertrained) {
  if (!isfinite(final_loss)) return ST_RUN_DIVERGED;
  if (isfinite(init_loss) && final_loss > init_loss) return ST_RUN_DIVERGED; /* judged on the final loss only */
  return undertrained ? ST_RUN_UNDERTRAINED : ST_RUN_TRAINED;
}

int st_edge_check(const st_edge_arm *a, char *err, size_t errlen) {
  if (a->nlr < 1 || a->nlr > ST_EDGE_MAXLR) {
    snprintf(err, errlen, "edge: %d learning rates (1 to %d)", a->nlr, ST_EDGE_MAXLR);
    return -1;
  }
  if (a->nseed < 1) { snprintf(err, errlen, "edge: %d seeds (at least 1)", a->nseed); return -1; }
  if (!a->lr || !a->out) { snprintf(err, errlen, "edge: no learning rates or outcomes"); return -1; }
  if (a->loss && !a->init) { snprintf(err, errlen, "edge: losses without initial losses"); return -1; }
  for (int k = 0; k < a->nlr; k++) {
    if (!(isfinite(a->lr[k]) && a->lr[k] > 0)) {
      snprintf(err, errlen, "edge: learning rate %d is %a (must be finite and > 0)", k, a->lr[k]);
      return -1;
    }
    if (k && !(a->lr[k] > a->lr[k - 1])) {
      snprintf(err, errlen, "edge: learning rate %d (%a) not above the one before (%a)", k, a->lr[k], a->lr[k - 1]);
      return -1;
    }
  }
  for (long i = 0; i < (long)a->nseed * a->nlr; i++)
    if (a->out[i] < ST_RUN_MISSING || a->out[i] > ST_RUN_UNJUDGED) {
      snprintf(err, errlen, "edge: outcome %d of seed %ld, lr %ld (ST_RUN_*: -1 to 3)", a->out[i], i / a->nlr,
               i % a->nlr);
      return -1;
    }
  return 0;
}

int st_edge_failed(const st_edge_arm *a, int seed, int k) {
  const int o = RUN_AT(a, seed, k);
  if (o == ST_RUN_MISSING || o == ST_RUN_UNJUDGED) return -1; /* counted nowhere */
  return o == ST_RUN_DIVERGED || (o == ST_RUN_UNDERTRAINED && a->undertrained_fails);
}

static int same_grid(const st_edge_arm *a, const st_edge_arm *b, char *err, size_t errlen) {
  if (a->nlr != b->nlr || a->nseed != b->nseed) {
    snprintf(err, errlen, "edge: arms differ: %d x %d against %d x %d (learning rates x seeds)", a->nlr, a->nseed,
             b->nlr, b->nseed);
    return -1;
  }
  for (int k = 0; k < a->nlr; k++)
    if (a->lr[k] != b->lr[k]) {
      snprintf(err, errlen, "edge: learning rate %d differs: %a against %a", k, a->lr[k], b->lr[k]);
      return -1;
    }
  return 0;
}

/* Runs and failures per learning rate over the seeds listed (a seed may
 * repeat: a bootstrap resample); with pair, a cell counts only when both
 * arms ran it.  A learning rate where more cells are unjudged than judged
 * leaves the window: the reference trains there in fewer than half the
 * seeds, and a fraction over the few judged cells would decide an edge. */
static void tally(const st_edge_arm *a, const st_edge_arm *pair, const int *seeds, int ns, int *nrun, int *nfail) {
  memset(nrun, 0, (size_t)a->nlr * sizeof *nrun);
  memset(nfail, 0, (size_t)a->nlr * sizeof *nfail);
  for (int k = 0; k < a->nlr; k++) {
    int unjudged = 0;
    for (int i = 0; i < ns; i++) {
      const int f = st_edge_failed(a, seeds[i], k), g = pair ? st_edge_failed(pair, seeds[i], k) : 0;
      if (f >= 0 && g >= 0) nrun[k]++, nfail[k] += f;
      else unjudged += RUN_AT(a, seeds[i], k) == ST_RUN_UNJUDGED || (pair && RUN_AT(pair, seeds[i], k) == ST_RUN_UNJUDGED);
    }
    if (unjudged > nrun[k]) nrun[k] = nfail[k] = 0;
  }
}

static int *all_seeds(int n) {
  int *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
  for (int i = 0; s && i < n; i++) s[i] = i;
  return s;
}

/* ---- (b) the nonparametric edge ----------------------------------------- */

/* The largest lr whose trained fraction is >= 1/2; the edge is where the
 * fraction, linear in log2 lr between it and the next lr with runs, crosses
 * 1/2.  Learning rates without runs are skipped. */
static void np_from_counts(const double *lr, int nlr, const int *nrun, const int *nfail, st_edge_np *e) {
  int first = -1, last = -1, j = -1;
  for (int k = 0; k < nlr; k++) {
    if (!nrun[k]) continue;
    if (first < 0) first = k;
    last = k;
    if (2 * (nrun[k] - nfail[k]) >= nrun[k]) j = k;
  }
  e->lo_i = e->hi_i = -1;
  if (first < 0) { e->status = ST_EDGE_NODATA; e->lr = e->x = NAN; return; }
  if (j < 0) { e->status = ST_EDGE_BELOW; e->lr = lr[first]; e->x = -INFINITY; e->hi_i = first; return; }
  if (j == last) { e->status = ST_EDGE_ABOVE; e->lr = lr[last]; e->x = INFINITY; e->lo_i = last; return; }
  int nx = j + 1;
  while (!nrun[nx]) nx++;
  const double fj = (double)(nrun[j] - nfail[j]) / nrun[j], fn = (double)(nrun[nx] - nfail[nx]) / nrun[nx];
  const double xj = log2(lr[j]), xn = log2(lr[nx]);
  e->status = ST_EDGE_POINT;
  e->x = xj + (fj - 0.5) / (fj - fn) * (xn - xj); /* fj >= 1/2 > fn */
  e->lr = exp2(e->x);
  e->lo_i = j;
  e->hi_i = nx;
}

void st_edge_nonparam(const st_edge_arm *a, st_edge_np *e) {
  int nrun[ST_EDGE_MAXLR], nfail[ST_EDGE_MAXLR], *s = all_seeds(a->nseed);
  if (!s) { memset(e, 0, sizeof *e); e->lr = e->x = NAN; return; }
  tally(a, NULL, s, a->nseed, nrun, nfail);
  free(s);
  np_from_counts(a->lr, a->nlr, nrun, nfail, e);
}

/* ---- (a) the logistic fit ----------------------------------------------- */

static double log_sig(double t) { return t >= 0 ? -log1p(exp(-t)) : t - log1p(exp(t)); } /* log 1/(1+e^-t) */
static double sig(double t) { return t >= 0 ? 1 / (1 + exp(-t)) : exp(t) / (1 + exp(t)); }

typedef struct bins { int m; double x[ST_EDGE_MAXLR], n[ST_EDGE_MAXLR], y[ST_EDGE_MAXLR]; } bins;

static double loglik(const bins *d, double c0, double c1, double xc) {
  double l = 0;
  for (int i = 0; i < d->m; i++) {
    const double t = c0 + c1 * (d->x[i] - xc);
    l += d->y[i] * log_sig(t) + (d->n[i] - d->y[i]) * log_sig(-t);
  }
  return l;
}

/* Newton-Raphson on (c0, c1), logit = c0 + c1 (x - xc), from the pooled rate
 * and slope 0, halving a step that lowers the likelihood.  The caller has
 * ruled out separation, so the maximum is finite and the likelihood concave. */
static int fit_mle(const bins *d, double xc, double *c0, double *c1) {
  double yt = 0, nt = 0;
  for (int i = 0; i < d->m; i++) yt += d->y[i], nt += d->n[i];
  double a = log(yt / (nt - yt)), b = 0, l = loglik(d, a, b, xc);
  int it;
  for (it = 1; it <= 200; it++) {
    double g0 = 0, g1 = 0, h00 = 0, h01 = 0, h11 = 0;
    for (int i = 0; i < d->m; i++) {
      const double z = d->x[i] - xc, p = sig(a + b * z), w = d->n[i] * p * (1 - p), r = d->y[i] - d->n[i] * p;
      g0 += r, g1 += r * z, h00 += w, h01 += w * z, h11 += w * z * z;
    }
    const double det = h00 * h11 - h01 * h01;
    if (!(det > 0)) break;
    double s0 = (h11 * g0 - h01 * g1) / det, s1 = (h00 * g1 - h01 * g0) / det;
    double ln = loglik(d, a + s0, b + s1, xc);
    for (int h = 0; h < 60 && !(ln >= l - 1e-12); h++) { s0 /= 2, s1 /= 2; ln = loglik(d, a + s0, b + s1, xc); }
    a += s0, b += s1, l = ln;
    if (fabs(s0) + fabs(s1) < 1e-12 * (1 + fabs(a) + fabs(b))) break;
  }
  *c0 = a, *c1 = b;
  return it;
}

/* The profile log-likelihood of the edge at x = t: logit = s (x - t),
 * maximised over the slope s (one concave dimension).  When the runs split
 * by the sign of x - t, the supremum is the limit s -> +-inf: the runs at
 * x == t contribute log 1/2 each. */
static double profile(const bins *d, double t, double s) {
  double fail_lo = 0, train_hi = 0, fail_hi = 0, train_lo = 0, at = 0;
  for (int i = 0; i < d->m; i++) {
    const double z = d->x[i] - t;
    if (z < 0) fail_lo += d->y[i], train_lo += d->n[i] - d->y[i];
    else if (z > 0) fail_hi += d->y[i], train_hi += d->n[i] - d->y[i];
    else at += d->n[i];
  }
  if ((fail_lo == 0 && train_hi == 0) || (fail_hi == 0 && train_lo == 0)) return at * log(0.5);
  double l = loglik(d, 0, s, t);
  for (int it = 0; it < 200; it++) {
    double g = 0, h = 0;
    for (int i = 0; i < d->m; i++) {
      const double z = d->x[i] - t, p = sig(s * z);
      g += z * (d->y[i] - d->n[i] * p);
      h += d->n[i] * z * z * p * (1 - p);
    }
    if (!(h > 0)) break;
    double st = g / h, ln = loglik(d, 0, s + st, t);
    for (int k = 0; k < 60 && !(ln >= l - 1e-12); k++) { st /= 2; ln = loglik(d, 0, s + st, t); }
    s += st, l = ln;
    if (fabs(st) < 1e-12 * (1 + fabs(s))) break;
  }
  return l;
}

/* the chi-square (1 df) quantile at conf: the square of the normal quantile at (1 + conf) / 2 */
static double chi2_1(double conf) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; i++) {
    const double z = (lo + hi) / 2;
    if (erfc(z / sqrt(2.0)) > 1 - conf) lo = z; else hi = z;
  }
  return lo * lo;
}

/* One end of the profile interval: from the MLE outwards (dir -1, +1) in
 * growing steps until the deviance passes q, then bisection; +-inf when it
 * does not within 4096 octaves. */
static double profile_end(const bins *d, double lmax, double xhat, double s, double q, int dir) {
  double in = xhat, step = 1.0 / 16;
  while (step < 4096) {
    const double t = xhat + dir * step;
    if (2 * (lmax - profile(d, t, s)) > q) {
      double out = t;
      for (int i = 0; i < 80; i++) {
        const double mid = (in + out) / 2;
        if (2 * (lmax - profile(d, mid, s)) > q) out = mid; else in = mid;
      }
      return (in + out) / 2;
    }
    in = t;
    step *= 1.5;
  }
  return dir * INFINITY;
}

void st_edge_logistic(const st_edge_arm *a, double conf, st_edge_fit *f) {
  memset(f, 0, sizeof *f);
  f->b0 = f->b1 = f->edge = f->lo = f->hi = f->lrt = NAN;
  int nrun[ST_EDGE_MAXLR], nfail[ST_EDGE_MAXLR], *s = all_seeds(a->nseed);
  if (!s) return;
  tally(a, NULL, s, a->nseed, nrun, nfail);
  free(s);
  bins d = {0};
  int idx[ST_EDGE_MAXLR];
  double min_fail = INFINITY, max_fail = -INFINITY, min_train = INFINITY, max_train = -INFINITY;
  for (int k = 0; k < a->nlr; k++) {
    if (!nrun[k]) continue;
    const double x = log2(a->lr[k]);
    idx[d.m] = k;
    d.x[d.m] = x, d.n[d.m] = nrun[k], d.y[d.m] = nfail[k];
    d.m++;
    f->n += nrun[k], f->k += nfail[k];
    if (nfail[k]) min_fail = fmin(min_fail, x), max_fail = fmax(max_fail, x);
    if (nfail[k] < nrun[k]) min_train = fmin(min_train, x), max_train = fmax(max_train, x);
  }
  if (!d.m) { f->status = ST_EDGE_NODATA; return; }
  if (f->k == 0) { f->status = ST_EDGE_ABOVE; f->lo = a->lr[idx[d.m - 1]]; f->hi = INFINITY; return; }
  if (f->k == f->n) { f->status = ST_EDGE_BELOW; f->lo = 0; f->hi = a->lr[idx[0]]; return; }
  if (d.m < 2) { f->status = ST_EDGE_NOSLOPE; return; } /* one lr with both outcomes: no slope to fit */
  if (min_fail >= max_train) { /* (quasi-)complete separation: the MLE is at infinity */
    f->status = ST_EDGE_BRACKET;
    f->lo = 0, f->hi = INFINITY;
    for (int i = 0; i < d.m; i++) {
      if (d.x[i] < min_fail) f->lo = a->lr[idx[i]];             /* all trained below the first failure */
      if (d.x[i] > max_train && !isfinite(f->hi)) f->hi = a->lr[idx[i]]; /* all failed above the last success */
    }
    return;
  }
  if (max_fail <= min_train) { f->status = ST_EDGE_NOSLOPE; return; } /* failures only below the successes */
  double xc = 0;
  for (int i = 0; i < d.m; i++) xc += d.n[i] * d.x[i];
  xc /= f->n;
  double c0, c1;
  f->iters = fit_mle(&d, xc, &c0, &c1);
  f->b1 = c1;
  f->b0 = c0 - c1 * xc;
  const double lmax = loglik(&d, c0, c1, xc), p = (double)f->k / f->n;
  f->lrt = 2 * (lmax - (f->k * log(p) + (f->n - f->k) * log1p(-p)));
  if (f->lrt < 0) f->lrt = 0;
  if (!(c1 > 0)) { f->status = ST_EDGE_NOSLOPE; return; }
  f->status = ST_EDGE_POINT;
  const double xhat = xc - c0 / c1;
  f->edge = exp2(xhat);
  f->outside = xhat < d.x[0] || xhat > d.x[d.m - 1];
  const double q = chi2_1(conf);
  if (f->lrt <= q) { f->lo = 0, f->hi = INFINITY; return; } /* the slope is not significant: no bound */
  f->lo = exp2(profile_end(&d, lmax, xhat, c1, q, -1));
  f->hi = exp2(profile_end(&d, lmax, xhat, c1, q, +1));
}

/* ---- the paired shift of the nonparametric edge ------------------------- */

/* the percentile interval of v[REPS] (sorted here) */
static void pct(double *v, double conf, double *lo, double *hi) { st_percentile(v, REPS, conf, lo, hi); }

/* x_A - x_B of two edges; censored edges are +-inf; 2 in *undef when both
 * are censored on the same side */
static double np_diff(const st_edge_np *a, const st_edge_np *b, int *undef) {
  *undef = isinf(a->x) && isinf(b->x) && (a->x > 0) == (b->x > 0);
  return *undef ? NAN : a->x - b->x;
}

int st_edge_shift_paired(const st_edge_arm *a, const st_edge_arm *b, uint64_t seed, double conf, st_edge_shift *s,
                         char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->d = s->lo = s->hi = s->a_lo = s->a_hi = s->b_lo = s->b_hi = s->res = s->lo_g = s->hi_g = NAN;
  if (same_grid(a, b, err, errlen)) return -1;
  int *ps = malloc((size_t)a->nseed * sizeof *ps), *rs = malloc((size_t)a->nseed * sizeof *rs);
  double *v = malloc(4 * REPS * sizeof *v);
  if (!ps || !rs || !v) {
    free(ps), free(rs), free(v);
    snprintf(err, errlen, "edge: out of memory");
    return -1;
  }
  for (int i = 0; i < a->nseed; i++) { /* the seeds with at least one cell run in both arms */
    int any = 0;
    for (int k = 0; k < a->nlr && !any; k++) any = st_edge_failed(a, i, k) >= 0 && st_edge_failed(b, i, k) >= 0;
    if (any) ps[s->n++] = i;
  }
  int nra[ST_EDGE_MAXLR], nfa[ST_EDGE_MAXLR], nrb[ST_EDGE_MAXLR], nfb[ST_EDGE_MAXLR];
  tally(a, b, ps, s->n, nra, nfa);
  tally(b, a, ps, s->n, nrb, nfb);
  np_from_counts(a->lr, a->nlr, nra, nfa, &s->a);
  np_from_counts(b->lr, b->nlr, nrb, nfb, &s->b);
  if (s->a.status != ST_EDGE_NODATA && s->b.status != ST_EDGE_NODATA) {
    /* the shift or its bound: each censored edge contributes its grid end */
    const int da = s->a.status == ST_EDGE_BELOW ? -1 : s->a.status == ST_EDGE_ABOVE;
    const int db = s->b.status == ST_EDGE_BELOW ? 1 : -(s->b.status == ST_EDGE_ABOVE);
    s->d = da || db ? log2(s->a.lr) - log2(s->b.lr) : s->a.x - s->b.x;
    if (da && db && da != db) s->cens = 2, s->d = NAN;
    else s->cens = da ? da : db;
  }
  if (s->a.status == ST_EDGE_POINT && s->b.status == ST_EDGE_POINT)
    s->res = (log2(a->lr[s->a.hi_i]) - log2(a->lr[s->a.lo_i]) + log2(b->lr[s->b.hi_i]) - log2(b->lr[s->b.lo_i])) / 2;
  if (s->n >= 2) {
    double *vl = v, *vh = v + REPS, *va = v + 2 * REPS, *vb = v + 3 * REPS;
    for (int r = 0; r < REPS; r++) {
      for (int i = 0; i < s->n; i++)
        rs[i] = ps[exmy_random64(seed, STREAM_SHIFT, (uint64_t)r * (uint64_t)s->n + (uint64_t)i) % (uint64_t)s->n];
      st_edge_np ea, eb;
      tally(a, b, rs, s->n, nra, nfa);
      tally(b, a, rs, s->n, nrb, nfb);
      np_from_counts(a->lr, a->nlr, nra, nfa, &ea);
      np_from_counts(b->lr, b->nlr, nrb, nfb, &eb);
      int undef;
      const double dd = np_diff(&ea, &eb, &undef);
      s->undefined += undef;
      vl[r] = undef ? -INFINITY : dd; /* an undefined shift could be anything: it widens both ends */
      vh[r] = undef ? INFINITY : dd;
      va[r] = ea.x, vb[r] = eb.x;
    }
    pct(vl, conf, &s->lo, NULL);
    pct(vh, conf, NULL, &s->hi);
    pct(va, conf, &s->a_lo, &s->a_hi);
    pct(vb, conf, &s->b_lo, &s->b_hi);
    s->lo_g = s->lo, s->hi_g = s->hi;
    if (s->cens == 0 && isfinite(s->res)) {
      s->grid_limited = s->hi - s->lo < s->res;
      s->lo_g = fmin(s->lo, s->d - s->res);
      s->hi_g = fmax(s->hi, s->d + s->res);
    }
  }
  free(ps), free(rs), free(v);
  return 0;
}

/* ---- failures per learning rate ----------------------------------------- */

static double lchoose(int n, int k) { return lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0); }

double st_edge_mcnemar_exact(int a_only, int b_only) {
  const int m = a_only + b_only, lo = a_only < b_only ? a_only : b_only;
  if (m == 0) return 1;
  double p = 0;
  for (int i = 0; i <= lo; i++) p += exp(lchoose(m, i) - m * log(2.0));
  p *= 2;
  return p > 1 ? 1 : p;
}

double st_edge_fisher_exact(int k1, int n1, int k2, int n2) {
  const int k = k1 + k2, n = n1 + n2;
  if (n1 <= 0 || n2 <= 0 || k == 0 || k == n) return 1;
  const int xlo = k - n2 > 0 ? k - n2 : 0, xhi = k < n1 ? k : n1;
  const double lt = lchoose(n, k), lobs = lchoose(n1, k1) + lchoose(n2, k2) - lt;
  double p = 0;
  for (int x = xlo; x <= xhi; x++) {
    const double lx = lchoose(n1, x) + lchoose(n2, k - x) - lt;
    if (lx <= lobs + 1e-7) p += exp(lx); /* tables no more probable than the observed (relative 1e-7: ties) */
  }
  return p > 1 ? 1 : p;
}

int st_edge_compare_lr(const st_edge_arm *a, const st_edge_arm *b, double conf, st_edge_lrcmp *rows, char *err,
                       size_t errlen) {
  if (same_grid(a, b, err, errlen)) return -1;
  double p[ST_EDGE_MAXLR], adj[ST_EDGE_MAXLR];
  int used = 0;
  for (int k = 0; k < a->nlr; k++) {
    st_edge_lrcmp *r = rows + k;
    memset(r, 0, sizeof *r);
    r->lr = a->lr[k];
    for (int i = 0; i < a->nseed; i++) {
      const int fa = st_edge_failed(a, i, k), fb = st_edge_failed(b, i, k);
      if (fa < 0 || fb < 0) continue;
      r->n++, r->ka += fa, r->kb += fb, r->a_only += fa && !fb, r->b_only += fb && !fa;
    }
    st_clopper_pearson(r->ka, r->n, conf, &r->a_lo, &r->a_hi);
    st_clopper_pearson(r->kb, r->n, conf, &r->b_lo, &r->b_hi);
    r->p = r->n ? st_edge_mcnemar_exact(r->a_only, r->b_only) : NAN;
    p[k] = r->p;
    used += r->n > 0;
  }
  st_edge_holm(p, a->nlr, adj);
  for (int k = 0; k < a->nlr; k++) rows[k].p_holm = adj[k];
  return used;
}

/* ---- Wortsman et al.'s LR sensitivity and the loss offset ---------------- */

/* a run's loss for the losses' statistics: a diverged run counts as the
 * cap (its initial loss), anything above the cap (or NaN) as the cap */
static double capped(const st_edge_arm *a, int s, int k) {
  const size_t i = (size_t)s * (size_t)a->nlr + (size_t)k;
  const double cap = a->init[s], v = a->loss[i];
  return a->out[i] == ST_RUN_DIVERGED || !(v < cap) ? cap : v;
}

/* 1 when seed s has every lr run in a (and b) and finite initial losses */
static int complete(const st_edge_arm *a, const st_edge_arm *b, int s) {
  if (!isfinite(a->init[s]) || (b && !isfinite(b->init[s]))) return 0;
  for (int k = 0; k < a->nlr; k++)
    if (RUN_AT(a, s, k) == ST_RUN_MISSING || (b && RUN_AT(b, s, k) == ST_RUN_MISSING)) return 0; /* unjudged has a loss */
  return 1;
}

static double sens_of(const st_edge_arm *a, int s) {
  double sum = 0, lo = INFINITY;
  for (int k = 0; k < a->nlr; k++) {
    const double v = capped(a, s, k);
    sum += v;
    if (v < lo) lo = v;
  }
  return sum / a->nlr - lo;
}

void st_edge_sensitivity(const st_edge_arm *a, const st_edge_arm *b, uint64_t seed, double conf, st_edge_sens *s) {
  memset(s, 0, sizeof *s);
  s->a = s->b = s->d = s->lo = s->hi = s->sd = NAN;
  if (!a->loss || (b && (!b->loss || b->nlr != a->nlr || b->nseed != a->nseed))) return;
  double *v = malloc(3 * (size_t)a->nseed * sizeof *v);
  if (!v) return;
  double *va = v, *vb = v + a->nseed, *dd = v + 2 * a->nseed;
  for (int i = 0; i < a->nseed; i++) {
    if (!complete(a, b, i)) continue;
    va[s->n] = sens_of(a, i);
    if (b) vb[s->n] = sens_of(b, i), dd[s->n] = va[s->n] - vb[s->n];
    s->n++;
  }
  if (s->n) s->a = st_mean_of(va, s->n);
  if (b && s->n) {
    s->b = st_mean_of(vb, s->n);
    s->d = st_mean_of(dd, s->n);
    if (s->n >= 2) {
      s->sd = st_sd_of(dd, s->n);
      st_t_interval(dd, s->n, conf, &s->lo, &s->hi); /* the seeds' paired differences: as every paired mean */
      s->sign = s->lo > 0 ? 1 : s->hi < 0 ? -1 : 0;
    }
  }
  free(v);
}

/* an arm's own best (capped) loss at seed s, and the index of the largest lr
 * within delta of it among the runs that did not diverge (-1: none) */
static double own_best(const st_edge_arm *a, int s, double delta, int *imax) {
  double best = INFINITY;
  for (int k = 0; k < a->nlr; k++) best = fmin(best, capped(a, s, k));
  *imax = -1;
  for (int k = 0; k < a->nlr; k++) {
    const size_t i = (size_t)s * (size_t)a->nlr + (size_t)k;
    if (a->out[i] != ST_RUN_DIVERGED && isfinite(a->loss[i]) && a->loss[i] <= best + delta) *imax = k;
  }
  return best;
}

void st_edge_loss_offset(const st_edge_arm *a, const st_edge_arm *b, double delta, uint64_t seed, double conf,
                         st_edge_offset *o) {
  memset(o, 0, sizeof *o);
  o->d = o->lo = o->hi = o->lr_d = o->lr_lo = o->lr_hi = NAN;
  if (!a->loss || !b->loss || a->nlr != b->nlr || a->nseed != b->nseed) return;
  double *v = malloc(2 * (size_t)a->nseed * sizeof *v);
  if (!v) return;
  double *dl = v, *dx = v + a->nseed;
  for (int i = 0; i < a->nseed; i++) {
    if (!complete(a, b, i)) continue;
    int ia, ib;
    dl[o->n++] = own_best(a, i, delta, &ia) - own_best(b, i, delta, &ib);
    if (ia >= 0 && ib >= 0) dx[o->nlr_max++] = log2(a->lr[ia]) - log2(b->lr[ib]);
  }
  if (o->n) o->d = st_mean_of(dl, o->n);
  if (o->n >= 2) st_bootstrap(dl, o->n, seed ^ STREAM_OFF, conf, &o->lo, &o->hi);
  if (o->nlr_max) o->lr_d = st_mean_of(dx, o->nlr_max);
  if (o->nlr_max >= 2) st_bootstrap(dx, o->nlr_max, seed ^ (STREAM_OFF + 1), conf, &o->lr_lo, &o->lr_hi);
  free(v);
}

/* ---- an adaptive second pass -------------------------------------------- */

/* the index of the first learning rate above lr (nlr: none) */
static int first_above(const st_edge_arm *a, double lr) {
  int k = 0;
  while (k < a->nlr && !(a->lr[k] > lr)) k++;
  return k;
}

int st_edge_unjudged_above(const st_edge_arm *a, double lr) {
  const int k = first_above(a, lr);
  for (int s = 0; k < a->nlr && s < a->nseed; s++)
    if (RUN_AT(a, s, k) == ST_RUN_UNJUDGED) return 1;
  return 0;
}

int st_edge_refine(const st_edge_arm *a, int k, double *lr_out) {
  st_edge_np e;
  st_edge_nonparam(a, &e);
  if (k < 1 || e.status == ST_EDGE_NODATA) return 0;
  const int n = a->nlr;
  if (e.status == ST_EDGE_POINT) { /* inside the bracket, evenly in log lr */
    const double x0 = log2(a->lr[e.lo_i]), x1 = log2(a->lr[e.hi_i]);
    for (int i = 0; i < k; i++) lr_out[i] = exp2(x0 + (x1 - x0) * (i + 1) / (k + 1));
    return k;
  }
  if (e.status == ST_EDGE_BELOW) { /* below the grid by its first step */
    const double r = n > 1 ? a->lr[1] / a->lr[0] : 2;
    for (int i = 0; i < k; i++) lr_out[i] = e.lr * pow(r, -(double)(k - i));
    return k;
  }
  /* above the window of judged cells: where it ends below the grid's top because the next
   * learning rate's cells are unjudged (the reference stops training there), a higher one
   * cannot be judged either; the gap to it may be, so it is split as a bracket would be
   * (a next learning rate not run yet is no such end: the grid is extended as usual) */
  if (st_edge_unjudged_above(a, e.lr)) {
    const double x0 = log2(e.lr), x1 = log2(a->lr[first_above(a, e.lr)]);
    for (int i = 0; i < k; i++) lr_out[i] = exp2(x0 + (x1 - x0) * (i + 1) / (k + 1));
    return k;
  }
  const double r = n > 1 ? a->lr[n - 1] / a->lr[n - 2] : 2; /* above the grid, by its last step */
  for (int i = 0; i < k; i++) lr_out[i] = e.lr * pow(r, (double)(i + 1));
  return k;
}

/* ---- the minimum detectable effect --------------------------------------- */

static void binom_pmf(int n, double p, double *pmf) {
  for (int x = 0; x <= n; x++)
    pmf[x] = p <= 0 ? (x == 0) : p >= 1 ? (x == n) : exp(lchoose(n, x) + x * log(p) + (n - x) * log1p(-p));
}

/* the probability that the test rejects with B's count above A's */
static double power_at(int n, const unsigned char *rej, const double *pa, double p1, double *pb) {
  binom_pmf(n, p1, pb);
  double pw = 0;
  for (int x1 = 0; x1 <= n; x1++)
    for (int x2 = x1 + 1; x2 <= n; x2++)
      if (rej[x1 * (n + 1) + x2]) pw += pa[x1] * pb[x2];
  return pw;
}

double st_edge_mde(int n, double p0, double alpha, double power) {
  if (n < 1 || !(p0 >= 0 && p0 < 1) || !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1)) return NAN;
  unsigned char *rej = malloc((size_t)(n + 1) * (size_t)(n + 1));
  double *pa = malloc(2 * (size_t)(n + 1) * sizeof *pa), *pb = pa ? pa + n + 1 : NULL;
  if (!rej || !pa) { free(rej), free(pa); return NAN; }
  for (int x1 = 0; x1 <= n; x1++) /* the rejection region does not depend on the rates */
    for (int x2 = 0; x2 <= n; x2++) rej[x1 * (n + 1) + x2] = x2 > x1 && st_edge_fisher_exact(x1, n, x2, n) <= alpha;
  binom_pmf(n, p0, pa);
  double r = INFINITY;
  if (power_at(n, rej, pa, 1, pb) >= power) {
    double lo = p0, hi = 1; /* scan, then bisect the first crossing */
    for (int i = 1; i <= 256; i++) {
      const double p1 = p0 + (1 - p0) * i / 256;
      if (power_at(n, rej, pa, p1, pb) >= power) { hi = p1; break; }
      lo = p1;
    }
    for (int i = 0; i < 50; i++) {
      const double mid = (lo + hi) / 2;
      if (power_at(n, rej, pa, mid, pb) >= power) hi = mid; else lo = mid;
    }
    r = hi - p0;
  }
  free(rej), free(pa);
  return r;
}

/* ---- the estimates as text ------------------------------------------------ */

static void fmt_lr_or(double lr, char *buf, size_t n) {
  if (lr == 0) snprintf(buf, n, "0");
  else if (isinf(lr)) snprintf(buf, n, "inf");
  else st_fmt_lr(lr, buf, n);
}

void st_edge_fmt_fit(const st_edge_fit *f, char *buf, size_t n) {
  char e[32], lo[32], hi[32];
  fmt_lr_or(f->edge, e, sizeof e);
  fmt_lr_or(f->lo, lo, sizeof lo);
  fmt_lr_or(f->hi, hi, sizeof hi);
  switch (f->status) {
  case ST_EDGE_POINT:
    snprintf(buf, n, "%s [%s, %s]%s%s", e, lo, hi, f->lo == 0 && isinf(f->hi) ? ", slope not significant" : "",
             f->outside ? ", outside the grid" : "");
    break;
  case ST_EDGE_BRACKET:
    if (f->lo == 0) snprintf(buf, n, "< %s, separated", hi);
    else if (isinf(f->hi)) snprintf(buf, n, "> %s, separated", lo);
    else snprintf(buf, n, "in (%s, %s), separated", lo, hi);
    break;
  case ST_EDGE_BELOW: snprintf(buf, n, "< %s, all failed", hi); break;
  case ST_EDGE_ABOVE: snprintf(buf, n, "> %s, none failed", lo); break;
  case ST_EDGE_NOSLOPE: snprintf(buf, n, "none: failure does not rise with lr (or one lr)"); break;
  default: snprintf(buf, n, "no runs");
  }
}

void st_edge_fmt_np(const st_edge_np *e, char *buf, size_t n) {
  char l[32];
  fmt_lr_or(e->lr, l, sizeof l);
  switch (e->status) {
  case ST_EDGE_POINT: snprintf(buf, n, "%s", l); break;
  case ST_EDGE_BELOW: snprintf(buf, n, "< %s", l); break;
  case ST_EDGE_ABOVE: snprintf(buf, n, "> %s", l); break;
  default: snprintf(buf, n, "no runs");
  }
}

static void fmt_log2(double v, char *buf, size_t n) {
  if (isinf(v)) snprintf(buf, n, v < 0 ? "-inf" : "+inf");
  else snprintf(buf, n, "%+.2f", v);
}

void st_edge_shift_ci(const st_edge_shift *s, double *lo, double *hi) {
  *lo = s->grid_limited ? s->lo_g : s->lo;
  *hi = s->grid_limited ? s->hi_g : s->hi;
}

void st_edge_fmt_shift(const st_edge_shift *s, char *buf, size_t n) {
  char d[32], lo[32], hi[32];
  if (s->a.status == ST_EDGE_NODATA || s->b.status == ST_EDGE_NODATA) { snprintf(buf, n, "no runs"); return; }
  if (s->cens == 2) { snprintf(buf, n, "undefined: both edges censored on the same side"); return; }
  fmt_log2(s->d, d, sizeof d);
  if (s->cens) { snprintf(buf, n, "%s %s", s->cens < 0 ? "<" : ">", d); return; }
  if (isnan(s->lo)) { snprintf(buf, n, "%s, one seed: no interval", d); return; }
  double l, h;
  st_edge_shift_ci(s, &l, &h);
  fmt_log2(l, lo, sizeof lo);
  fmt_log2(h, hi, sizeof hi);
  snprintf(buf, n, "%s [%s, %s]%s", d, lo, hi, s->grid_limited ? " grid step" : "");
}
