/* study_claims.c: the one verdict engine.  A study file's claims, evaluated
 * over the registered metrics (study_metric.c), and the rules applied to
 * every run (docs/studies/README.md, "Claims and verdicts").
 *
 * A claim names two arms A and B, a metric, a rule and optionally a margin,
 * the smallest effect the published claim implies (effect), a positive
 * control (another claim that must be reproduced first) and one learning
 * rate (lr).  Verdicts: reproduced / not reproduced / inconclusive / not
 * testable here.  Every verdict needs at least ST_MIN_SEEDS paired seeds.
 *
 * VALUE metrics (val_loss, ...): paired gaps A - B, one per (seed, learning
 * rate, axis point) both arms ran.  A run that failed counts at the worst
 * value (never dropped: st_metric_values).
 * RATE metrics (diverged, failed): never pooled over learning rates; per
 * (learning rate, axis point) an exact one-sided McNemar test on the seeds'
 * discordant pairs, Holm-corrected over the groups tested.
 *
 * Non-convergence: a run whose final validation loss is more than
 * nonconv_nats above the reference arm's at the same seed, learning rate and
 * axis point.  Under-trained (a flag, not a failure): a run that neither
 * diverged nor failed to converge but ends more than nonconv_nats above the
 * best the reference arm reaches at its seed and point over the learning
 * rates. */
#include "experiments/study_int.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define NONCONV_DEFAULT 0.5

double st_nonconv_nats(const study *st) {
  return st_file_num(st->file, st->size, "nonconv_nats", NONCONV_DEFAULT);
}

/* The runs in (arm, point, seed, lr) order, so a run's partner in another arm is a binary search
 * and an arm's runs at one seed and point are adjacent (st_rules_eval ran O(runs^2) string
 * compares before: 1.2M for the ladder's 1,080 runs).  Run a against the cell (arm, point, seedi,
 * lri): negative, 0 or positive. */
static int cell_key_cmp(const srun *a, const char *arm, const char *point, int seedi, int lri) {
  int c = strcmp(a->arm, arm);
  if (!c) c = strcmp(a->point, point);
  if (!c) c = (a->seedi > seedi) - (a->seedi < seedi);
  if (!c) c = (a->lri > lri) - (a->lri < lri);
  return c; /* one run per cell (the study's grid) */
}
static int cell_cmp(const void *x, const void *y) {
  const srun *b = *(const srun *const *)y;
  return cell_key_cmp(*(const srun *const *)x, b->arm, b->point, b->seedi, b->lri);
}

/* The first of the n sorted runs at (arm, point, seed) and lr index lri or later (lri -1: the first at
 * any lr); idx + n past them all. */
static const srun *const *cell_lower(const srun *const *idx, int n, const char *arm, const char *point, int seedi,
                                     int lri) {
  int lo = 0, hi = n;
  while (lo < hi) {
    const int mid = lo + (hi - lo) / 2;
    if (cell_key_cmp(idx[mid], arm, point, seedi, lri) < 0) lo = mid + 1;
    else hi = mid;
  }
  return idx + lo;
}

static const srun *partner(const srun *const *idx, int n, const srun *r, const char *arm) {
  const srun *const *p = cell_lower(idx, n, arm, r->point, r->seedi, r->lri);
  return p < idx + n && !cell_key_cmp(*p, arm, r->point, r->seedi, r->lri) ? *p : NULL;
}

/* st->run's runs sorted by cell_cmp (NULL: out of memory); the caller frees it. */
static const srun **cell_index(const study *st) {
  const srun **idx = malloc((size_t)(st->nrun ? st->nrun : 1) * sizeof *idx);
  if (!idx) return NULL;
  for (int i = 0; i < st->nrun; i++) idx[i] = &st->run[i];
  qsort(idx, (size_t)st->nrun, sizeof *idx, cell_cmp);
  return idx;
}

const char *st_run_ref(const study *st, const srun *r) {
  return r->ref[0] ? r->ref : st->file ? st_file_get(st->file, st->size, "reference", NULL) : NULL;
}

static int usable(const srun *r) { return !r->failed && !r->missing && !st_run_diverged(r); }

static void split2(const char *v, char *a, char *b, size_t n) {
  const char *c = strchr(v, ',');
  snprintf(a, n, "%.*s", c ? (int)(c - v) : (int)strlen(v), v);
  snprintf(b, n, "%s", c ? c + 1 : "");
  for (char *s = a; s; s = s == a ? b : NULL) { /* trim both */
    char *p = s;
    while (*p == ' ') p++;
    memmove(s, p, strlen(p) + 1);
    size_t l = strlen(s);
    while (l && s[l - 1] == ' ') s[--l] = 0;
  }
}

static const char *field(const study *st, const char *claim, const char *f) {
  char k[160];
  snprintf(k, sizeof k, "claim.%.63s.%.16s", claim, f);
  return st_file_get(st->file, st->size, k, NULL);
}

/* The rules on every run (before any analysis): non-convergence against
 * the reference at the same seed, lr and point; under-training against the
 * reference's best over the learning rates. */
void st_rules_eval(study *st) {
  if (!st->file) return;
  const double nats = st_nonconv_nats(st);
  const int n = st->nrun;
  const srun **idx = cell_index(st);
  if (!idx) {
    if (st->log) fprintf(st->log, "exmy: study: out of memory: the rules (non-convergence, under-training) not applied\n");
    return;
  }
  for (int i = 0; i < n; i++) {
    srun *r = &st->run[i];
    const char *ref = st_run_ref(st, r);
    const srun *q = ref ? partner(idx, n, r, ref) : NULL;
    r->nonconv = q && usable(r) && usable(q) && isfinite(r->res.val_loss) && isfinite(q->res.val_loss) &&
                 r->res.val_loss > q->res.val_loss + nats;
    r->undertrained = 0;
    if (!ref || !usable(r) || r->nonconv || !isfinite(r->res.val_loss)) continue;
    double best = INFINITY; /* the reference's best at this seed and point over the learning rates */
    for (const srun *const *b = cell_lower(idx, n, ref, r->point, r->seedi, -1);
         b < idx + n && !cell_key_cmp(*b, ref, r->point, r->seedi, (*b)->lri); b++)
      if (usable(*b) && (*b)->res.val_loss < best) best = (*b)->res.val_loss;
    r->undertrained = isfinite(best) && r->res.val_loss > best + nats;
  }
  /* where the reference itself learns little, "within nonconv_nats of it" does
   * not mean trained: the edge statistics leave such cells unjudged */
  for (int i = 0; i < n; i++) {
    srun *r = &st->run[i];
    const char *ref = st_run_ref(st, r);
    const srun *q = ref ? partner(idx, n, r, ref) : NULL;
    r->refweak = q && q->undertrained;
  }
  free(idx);
}

/* A claim's values: A's and B's metric per pair; failed runs (INFINITY from
 * st_metric_run) at the worst value: the larger of the run's first-step
 * loss (an untrained model's) and the worst finite value of the claim. */
static void worst_fill(const srun *const *ra, const srun *const *rb, double *a, double *b, int n) {
  double worst = -INFINITY;
  for (int i = 0; i < n; i++) {
    if (isfinite(a[i]) && a[i] > worst) worst = a[i];
    if (isfinite(b[i]) && b[i] > worst) worst = b[i];
  }
  for (int i = 0; i < n; i++) {
    if (a[i] == INFINITY) a[i] = fmax(worst, ra[i]->res.first_loss);
    if (b[i] == INFINITY) b[i] = fmax(worst, rb[i]->res.first_loss);
  }
}

/* One paired VALUE claim: the verdict from the gaps' CIs (st_claim_paired's
 * numbers), ST_MIN_SEEDS, the effect and the minimum detectable effect. */
static void eval_value(const study *st, st_claim_row *c, const srun **ra, const srun **rb, const srun **rc,
                       const srun **rd, int n) {
  const size_t sz = (size_t)(n + 1) * sizeof(double);
  double *a = malloc(sz), *b = malloc(sz), *cc = malloc(sz), *dd = malloc(sz);
  if (!a || !b || !cc || !dd) { free(a); free(b); free(cc); free(dd); return; }
  int m = 0;
  for (int i = 0; i < n; i++) {
    const double va = st_metric_run(c->m, st, ra[i]), vb = st_metric_run(c->m, st, rb[i]);
    const double vc = rc ? st_metric_run(c->m, st, rc[i]) : 0, vd = rd ? st_metric_run(c->m, st, rd[i]) : 0;
    if (isnan(va) || isnan(vb) || isnan(vc) || isnan(vd)) continue; /* an error or a metric the run lacks: no pair */
    c->nfailed += isinf(va) + isinf(vb) + isinf(vc) + isinf(vd);
    a[m] = va, b[m] = vb, cc[m] = vc, dd[m] = vd, ra[m] = ra[i], rb[m] = rb[i];
    if (rc) rc[m] = rc[i], rd[m] = rd[i];
    m++;
  }
  worst_fill(ra, rb, a, b, m);
  if (rc) { /* a difference in differences: (A - B) against (C - D), paired */
    worst_fill(rc, rd, cc, dd, m);
    for (int i = 0; i < m; i++) a[i] -= b[i], b[i] = cc[i] - dd[i];
  }
  int *seed = malloc((size_t)(m + 1) * sizeof *seed); /* the pairs' clusters: a seed's pairs are one unit */
  for (int i = 0; seed && i < m; i++) seed[i] = ra[i]->seedi;
  st_claim_paired(a, b, seed, m, &c->c);
  free(seed);
  free(a);
  free(b);
  free(cc);
  free(dd);
  c->nseeds = c->c.nclust;
  c->mde = st_mde_paired(c->c.sd, c->c.nclust);
}

/* One RATE claim: per (lr, point) group the seeds' discordant pairs. */
static void eval_rate(const study *st, st_claim_row *c, const srun **ra, const srun **rb, int n) {
  double p[MAX_LR * 8], q[MAX_LR * 8];
  int ng = 0, ka = 0, na = 0, kb = 0, nb = 0, minseeds = n ? 1 << 30 : 0;
  double worst_excl = -INFINITY; /* the largest rate difference a group's CI allows */
  char done[MAX_LR * 8][ST_NAMELEN + 8];
  for (int i = 0; i < n && ng < MAX_LR * 8; i++) {
    char key[ST_NAMELEN + 8];
    snprintf(key, sizeof key, "%d|%s", ra[i]->lri, ra[i]->point);
    int seen = 0;
    for (int g = 0; g < ng && !seen; g++) seen = !strcmp(done[g], key);
    if (seen) continue;
    snprintf(done[ng], sizeof done[0], "%s", key);
    int b10 = 0, b01 = 0, gka = 0, gkb = 0, gn = 0;
    for (int j = i; j < n; j++) {
      if (ra[j]->lri != ra[i]->lri || strcmp(ra[j]->point, ra[i]->point)) continue;
      const double va = st_metric_run(c->m, st, ra[j]), vb = st_metric_run(c->m, st, rb[j]);
      if (isnan(va) || isnan(vb)) continue;
      gn++;
      gka += va > 0, gkb += vb > 0;
      b10 += va > 0 && !(vb > 0);
      b01 += vb > 0 && !(va > 0);
    }
    if (!gn) continue;
    ka += gka, kb += gkb, na += gn, nb += gn;
    if (gn < minseeds) minseeds = gn;
    const int up = c->rule == ST_RULE_LOWER ? b01 : b10, dn = c->rule == ST_RULE_LOWER ? b10 : b01;
    p[ng] = st_binom_tail(up, up + dn); /* P(X >= up), X ~ B(up + dn, 1/2) */
    q[ng] = st_binom_tail(dn, up + dn);
    double alo, ahi, blo, bhi;
    st_clopper_pearson(c->rule == ST_RULE_LOWER ? gkb : gka, gn, 0.95, &alo, &ahi);
    st_clopper_pearson(c->rule == ST_RULE_LOWER ? gka : gkb, gn, 0.95, &blo, &bhi);
    if (ahi - blo > worst_excl) worst_excl = ahi - blo;
    ng++;
  }
  c->ngroups = ng;
  c->nseeds = ng ? minseeds : 0;
  st_claim_rates(ka, na, kb, nb, c->rule, &c->c);
  c->holm_up = st_holm_any(p, ng, 0.05);
  c->holm_dn = st_holm_any(q, ng, 0.05);
  c->max_diff = worst_excl;
  c->mde = st_mde_rate(c->nseeds, ng, 0.05);
}

const char *st_claim_point(const study *st, const st_claim_row *c) {
  for (int i = 0; i < st->nrun; i++)
    if (!strcmp(st->run[i].arm, c->a) && st_point_match(st->run[i].point, c->at)) return st->run[i].point;
  return NULL;
}

/* One EDGE claim (lr_edge, lr_sens): the arms' statistics over the
 * learning-rate axis at its point (st_claim_point), paired by seed
 * (study_edge.c). */
static void eval_edge(const study *st, st_claim_row *c) {
  const char *point = st_claim_point(st, c);
  if (!point) return;
  st_edge_buf *ba = malloc(sizeof *ba), *bb = malloc(sizeof *bb);
  st_edge_arm a, b;
  char err[200];
  if (!ba || !bb || !st_edge_arm_of(st, c->a, point, ba, &a) || !st_edge_arm_of(st, c->b, point, bb, &b)) {
    free(ba), free(bb);
    return;
  }
  if (!strcmp(c->m->name, "lr_sens")) {
    st_edge_sens s;
    st_edge_sensitivity(&a, &b, 1, 0.95, &s);
    c->nseeds = s.n;
    c->c.n = s.n, c->c.mean = s.d, c->c.lo = s.lo, c->c.hi = s.hi, c->c.sd = s.sd;
    c->mde = st_mde_paired(s.sd, s.n); /* the paired sensitivities' noise, as for any per-run gap */
    c->edge_a = s.a, c->edge_b = s.b;
    st_edge_sensitivity(&a, &b, 1, 0.90, &s); /* tracks: the 90% interval (TOST) */
    c->c.lo90 = s.lo, c->c.hi90 = s.hi;
  } else if (!st_edge_shift_paired(&a, &b, 1, 0.95, &c->shift, err, sizeof err)) {
    c->nseeds = c->shift.n;
    c->c.n = c->shift.n, c->c.mean = c->shift.d;
    st_edge_shift_ci(&c->shift, &c->c.lo, &c->c.hi);
    c->has_shift = 1;
    st_edge_shift s90;
    if (!st_edge_shift_paired(&a, &b, 1, 0.90, &s90, err, sizeof err)) st_edge_shift_ci(&s90, &c->c.lo90, &c->c.hi90);
  }
  free(ba), free(bb);
}

/* A value claim's gap as words: "A - B", or for a difference in differences
 * "(A - B) - (C - D)". */
static void gap_text(const st_claim_row *c, char *buf, size_t n) {
  if (c->mc[0]) snprintf(buf, n, "(%s - %s) - (%s - %s)", c->a, c->b, c->mc, c->md);
  else snprintf(buf, n, "%s - %s", c->a, c->b);
}

/* The verdict and the sentence that states the rule that produced it. */
static void decide(const study *st, st_claim_row *c) {
  const st_claim *s = &c->c;
  const int rate = c->m->kind == ST_MK_RATE;
  const double E = c->effect > 0 ? c->effect : c->rule != ST_RULE_TRACKS ? c->margin : 0;
  c->verdict = ST_V_INCONCLUSIVE;
  if (c->nseeds < ST_MIN_SEEDS) {
    snprintf(c->why, sizeof c->why, "inconclusive: %d paired seed%s, fewer than %d", c->nseeds, c->nseeds == 1 ? "" : "s",
             ST_MIN_SEEDS);
    return;
  }
  if (c->req[0] && !(c->req_ge ? c->req_value >= c->req_x : c->req_value > c->req_x)) {
    /* the condition the published effect needs, measured on arm A's runs, is not there */
    c->verdict = ST_V_NOT_TESTABLE;
    snprintf(c->why, sizeof c->why, "not testable here: the effect needs %s, and %s's runs have %s = %.4g (mean), so "
             "this setup does not create the condition", c->req, c->a, c->req_m->name, c->req_value);
    return;
  }
  if (c->control[0]) {
    const st_claim_row *k = NULL;
    for (int i = 0; i < st->nclaim; i++)
      if (!strcmp(st->claim[i].name, c->control)) k = &st->claim[i];
    if (!k || k->verdict != ST_V_REPRODUCED) {
      c->verdict = ST_V_NOT_TESTABLE;
      snprintf(c->why, sizeof c->why, "not testable here: its positive control `%s` was %s, so this setup has not shown "
               "it can see such an effect", c->control, k ? st_verdict_name(k->verdict) : "not evaluated");
      return;
    }
  }
  if (c->m->kind == ST_MK_EDGE && c->has_shift && c->shift.cens) {
    const double d = c->shift.d; /* a censored shift: a bound, or undefined */
    const int lower = c->rule == ST_RULE_LOWER;
    if (c->shift.cens != 2 && c->rule == ST_RULE_TRACKS) { /* a bound: outside the margin, or undecided */
      const int out = c->shift.cens < 0 ? d <= -c->margin : d >= c->margin;
      c->verdict = out ? ST_V_NOT_REPRODUCED : ST_V_INCONCLUSIVE;
      snprintf(c->why, sizeof c->why, "%s: the shift is %s %+.2f octaves (one edge censored by the grid)%s",
               out ? "not reproduced" : "inconclusive", c->shift.cens < 0 ? "below" : "above", d,
               out ? ", beyond the margin" : "; a bound cannot show equivalence");
      return;
    }
    if (c->shift.cens == 2) {
      c->verdict = ST_V_NOT_TESTABLE;
      snprintf(c->why, sizeof c->why, "not testable here: both arms' edges lie beyond the same end of the "
               "judged learning rates (%s %.3g: the grid's end, or where the reference itself stops training), "
               "so the grid cannot place either", c->shift.a.status == ST_EDGE_BELOW ? "below" : "above", c->shift.a.lr);
    } else if ((c->shift.cens < 0 && d <= 0 && lower) || (c->shift.cens > 0 && d >= 0 && !lower)) {
      c->verdict = ST_V_REPRODUCED;
      snprintf(c->why, sizeof c->why, "reproduced: the shift is %s %+.2f octaves (one edge censored by the grid)",
               c->shift.cens < 0 ? "below" : "above", d);
    } else if ((c->shift.cens > 0 && d >= 0 && lower) || (c->shift.cens < 0 && d <= 0 && !lower)) {
      c->verdict = ST_V_NOT_REPRODUCED;
      snprintf(c->why, sizeof c->why, "not reproduced: the shift is %s %+.2f octaves, the other direction (one edge "
               "censored by the grid)", c->shift.cens < 0 ? "below" : "above", d);
    } else
      snprintf(c->why, sizeof c->why, "inconclusive: one edge censored by the grid; the shift's bound %+.2f octaves "
               "does not decide the direction", d);
    return;
  }
  if (rate) {
    if (c->rule == ST_RULE_TRACKS) {
      snprintf(c->why, sizeof c->why, "inconclusive: an equivalence of failure rates needs far more seeds than a "
               "study here runs");
      return;
    }
    if (c->holm_up) {
      c->verdict = ST_V_REPRODUCED;
      snprintf(c->why, sizeof c->why, "reproduced: at some learning rate the exact one-sided McNemar test over the "
               "seeds rejects equal rates (Holm-corrected over %d group%s, 5%%)", c->ngroups, c->ngroups == 1 ? "" : "s");
    } else if (c->holm_dn) {
      c->verdict = ST_V_NOT_REPRODUCED;
      snprintf(c->why, sizeof c->why, "not reproduced: the opposite direction is significant at some learning rate "
               "(exact McNemar, Holm over %d)", c->ngroups);
    } else if (E > 0 && c->max_diff < E) {
      c->verdict = ST_V_NOT_REPRODUCED;
      snprintf(c->why, sizeof c->why, "not reproduced: at every learning rate the exact 95%% intervals exclude a "
               "difference of %.2f (the published effect)", E);
    } else if (isinf(c->mde) || (E > 0 && c->mde > E)) { /* no power: any effect, stated or not, goes unseen */
      c->verdict = ST_V_NOT_TESTABLE;
      int need = 1; /* the fewest seeds whose all-discordant outcome rejects at 5% / groups */
      while (st_binom_tail(need, need) > 0.05 / c->ngroups) need++;
      if (isinf(c->mde)) {
        char against[64] = ""; /* the published effect, when the claim states one */
        if (E > 0) snprintf(against, sizeof against, ", against a published effect of %.2f", E);
        snprintf(c->why, sizeof c->why, "not testable here: %d seeds per learning rate can never reach significance "
                 "over %d learning rate%s (Holm at 5%% needs at least %d)%s", c->nseeds, c->ngroups,
                 c->ngroups == 1 ? "" : "s", need, against);
      } else
        snprintf(c->why, sizeof c->why, "not testable here: with %d seeds per learning rate the smallest detectable "
                 "difference in rate is %.2f (80%% power, 5%%, best case), above the published effect %.2f",
                 c->nseeds, c->mde, E);
    } else
      snprintf(c->why, sizeof c->why, "inconclusive: no learning rate significant (exact McNemar, Holm over %d); "
               "smallest detectable difference %.2f", c->ngroups, c->mde);
    return;
  }
  if (c->rule == ST_RULE_TRACKS) {
    const double m = c->margin, hw = (s->hi90 - s->lo90) / 2;
    if (s->lo90 > -m && s->hi90 < m) {
      c->verdict = ST_V_REPRODUCED;
      snprintf(c->why, sizeof c->why, "reproduced: the 90%% CI lies inside (-%g, %g) (TOST at 5%%)", m, m);
    } else if (s->lo > m || s->hi < -m) {
      c->verdict = ST_V_NOT_REPRODUCED;
      snprintf(c->why, sizeof c->why, "not reproduced: the 95%% CI lies wholly outside [-%g, %g]", m, m);
    } else if (hw > m) {
      c->verdict = ST_V_NOT_TESTABLE;
      snprintf(c->why, sizeof c->why, "not testable here: the seed noise (90%% CI half-width %.4f) exceeds the "
               "margin %g", hw, m);
    } else
      snprintf(c->why, sizeof c->why, "inconclusive: the 90%% CI straddles the margin %g", m);
    return;
  }
  const double sg = c->rule == ST_RULE_HIGHER ? 1 : -1;
  const double lo = sg > 0 ? s->lo : -s->hi, hi = sg > 0 ? s->hi : -s->lo;
  const char *dir = sg > 0 ? "above" : "below";
  if (c->m->kind == ST_MK_EDGE && !isfinite(s->lo + s->hi) && !(lo > 0) && !(hi < 0)) {
    snprintf(c->why, sizeof c->why, "inconclusive: the bootstrap interval is open (edges at the grid's end in some "
             "resamples)");
    return;
  }
  if (c->m->kind == ST_MK_VALUE && s->n > 0 && !c->nfailed && c->mde == 0 && s->mean == 0) {
    /* every pair equal and none failed: what tells the arms apart never acted (a fallback that never fired) */
    c->verdict = ST_V_NOT_TESTABLE;
    snprintf(c->why, sizeof c->why, "not testable here: the two arms gave the same %s in all %d pairs, so what tells "
             "them apart never acted in this setup", c->m->name, s->n);
    return;
  }
  if (lo > 0) {
    c->verdict = ST_V_REPRODUCED;
    snprintf(c->why, sizeof c->why, "reproduced: the 95%% CI lies %s 0", dir);
  } else if (hi < 0) {
    c->verdict = ST_V_NOT_REPRODUCED;
    snprintf(c->why, sizeof c->why, "not reproduced: the 95%% CI lies %s 0 (the opposite direction)",
             sg > 0 ? "below" : "above");
  } else if (E > 0 && hi < E) {
    c->verdict = ST_V_NOT_REPRODUCED;
    snprintf(c->why, sizeof c->why, "not reproduced: the 95%% CI excludes a gap of %g or more (the published "
             "effect)", E);
  } else if (E > 0 && c->mde > E) {
    c->verdict = ST_V_NOT_TESTABLE;
    snprintf(c->why, sizeof c->why, "not testable here: the smallest detectable gap is %.4f (80%% power, 5%%), "
             "above the published effect %g", c->mde, E);
  } else
    snprintf(c->why, sizeof c->why, "inconclusive: the 95%% CI contains 0; smallest detectable gap %.4f (80%% "
             "power, 5%%)%s", c->mde, E > 0 ? "" : "; the claim states no effect size to test against");
}

static void claim_setup(const study *st, const char *name, st_claim_row *c) {
  const char *v;
  snprintf(c->name, sizeof c->name, "%.63s", name);
  split2((v = field(st, name, "arms")) ? v : "", c->a, c->b, sizeof c->a);
  split2((v = field(st, name, "minus")) ? v : "", c->mc, c->md, sizeof c->mc);
  c->m = st_metric_find((v = field(st, name, "metric")) ? v : "val_loss");
  if (!c->m) c->m = st_metric_find("val_loss");
  snprintf(c->text, sizeof c->text, "%.399s", (v = field(st, name, "text")) ? v : name);
  snprintf(c->published, sizeof c->published, "%.399s", (v = field(st, name, "published")) ? v : "");
  snprintf(c->control, sizeof c->control, "%.63s", (v = field(st, name, "control")) ? v : "");
  snprintf(c->req, sizeof c->req, "%.95s", (v = field(st, name, "requires")) ? v : "");
  if (c->req[0] && st_requires_parse(c->req, &c->req_m, &c->req_ge, &c->req_x)) c->req[0] = 0; /* checked when read */
  c->rule = ST_RULE_TRACKS;
  if ((v = field(st, name, "rule")))
    for (int j = 0; j < ST_NRULE; j++)
      if (!strcmp(v, ST_RULES[j])) c->rule = j;
  c->margin = (v = field(st, name, "margin")) ? strtod(v, NULL) : 0;
  c->effect = (v = field(st, name, "effect")) ? strtod(v, NULL) : 0;
  c->lr = (v = field(st, name, "lr")) ? strtod(v, NULL) : NAN;
  snprintf(c->at, sizeof c->at, "%s", (v = field(st, name, "at")) ? v : "");
}

static void evidence(const st_claim_row *c, char *ev, size_t n) {
  const st_claim *s = &c->c;
  if (c->has_shift) {
    char ea[64], eb[64], sh[96];
    st_edge_fmt_np(&c->shift.a, ea, sizeof ea);
    st_edge_fmt_np(&c->shift.b, eb, sizeof eb);
    st_edge_fmt_shift(&c->shift, sh, sizeof sh);
    snprintf(ev, n, "stability edge (largest lr where half the seeds train): %s %s, %s %s; paired shift %s - %s: %s%s "
             "(bootstrap over %d seeds)", c->a, ea, c->b, eb, c->a, c->b, sh, c->shift.cens == 2 ? "" : " octaves",
             c->nseeds);
  } else if (c->m->kind == ST_MK_EDGE && !c->nseeds)
    snprintf(ev, n, "%s: no paired runs of %s and %s%s%s", c->metric_name, c->a, c->b, c->at[0] ? " at " : "", c->at);
  else if (c->m->kind == ST_MK_EDGE && strcmp(c->m->name, "lr_sens"))
    snprintf(ev, n, "%s: no paired stability edge of %s and %s", c->metric_name, c->a, c->b);
  else if (c->m->kind == ST_MK_EDGE)
    snprintf(ev, n, "LR sensitivity (Wortsman et al.): %s %.4f, %s %.4f nats; paired %s - %s = %+.4f, 95%% CI "
             "[%+.4f, %+.4f] over %d seeds", c->a, c->edge_a, c->b, c->edge_b, c->a, c->b, s->mean, s->lo, s->hi,
             c->nseeds);
  else if (c->m->kind == ST_MK_RATE)
    snprintf(ev, n, "%s: %s %d/%d, %s %d/%d over %d learning-rate group%s (never pooled for the test), %d seed%s each",
             c->metric_name, c->a, s->ka, s->na, c->b, s->kb, s->nb, c->ngroups, c->ngroups == 1 ? "" : "s", c->nseeds,
             c->nseeds == 1 ? "" : "s");
  else {
    char gap[300], how[96];
    gap_text(c, gap, sizeof gap);
    if (c->nseeds >= 2) snprintf(how, sizeof how, "Student's t over the %d seeds' mean gaps, %d df", c->nseeds, c->nseeds - 1);
    else snprintf(how, sizeof how, "one seed: no interval, the bounds repeat the mean");
    snprintf(ev, n, "%s %s over n = %d pairs (%d seed%s%s): mean %+.4f, 95%% CI [%+.4f, %+.4f], 90%% CI "
             "[%+.4f, %+.4f] (%s)", c->metric_name, gap, s->n, c->nseeds, c->nseeds == 1 ? "" : "s",
             c->nfailed ? ", failed runs counted at the worst value" : "", s->mean, s->lo, s->hi, s->lo90, s->hi90, how);
  }
}

void st_claims_eval(study *st) {
  if (!st->file) return;
  char names[MAX_FIND][64]; /* the claims, in the order their names first appear */
  int nn = 0;
  for (int i = 0; i < st->file->nline && nn < MAX_FIND; i++) {
    const sf_line *L = &st->file->line[i];
    if (strncmp(L->key, "claim.", 6) || !st_file_effective(st->file, st->size, i)) continue;
    const char *dot = strchr(L->key + 6, '.');
    char nm[64];
    snprintf(nm, sizeof nm, "%.*s", (int)(dot - L->key - 6), L->key + 6);
    int k = 0;
    while (k < nn && strcmp(names[k], nm)) k++;
    if (k == nn) snprintf(names[nn++], sizeof names[0], "%s", nm);
  }
  if (!nn) return;
  st->claim = calloc((size_t)nn, sizeof *st->claim);
  const size_t rsz = (size_t)(st->nrun + 1) * sizeof(const srun *);
  const srun **ra = malloc(rsz), **rb = malloc(rsz), **rc = malloc(rsz), **rd = malloc(rsz);
  const srun **idx = cell_index(st);
  if (!st->claim || !ra || !rb || !rc || !rd || !idx) { free(ra); free(rb); free(rc); free(rd); free(idx); return; }
  /* controls first: a claim whose control is named is decided after it */
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < nn; k++) {
      const char *ctl = field(st, names[k], "control");
      if ((pass == 0) != (ctl == NULL)) continue;
      st_claim_row *c = &st->claim[st->nclaim++];
      claim_setup(st, names[k], c);
      snprintf(c->metric_name, sizeof c->metric_name, "%s", c->m->name);
      int n = 0;
      for (int i = 0; i < st->nrun; i++) {
        const srun *r = &st->run[i];
        const srun *q = strcmp(r->arm, c->a) ? NULL : partner(idx, st->nrun, r, c->b);
        if (!q || r->missing || q->missing) continue;
        if (isfinite(c->lr) && fabs(r->lr - c->lr) > 1e-9 * fabs(c->lr)) continue;
        if (!st_point_match(r->point, c->at)) continue;
        if (c->mc[0]) { /* minus = C, D: both at the same seed, learning rate and point */
          const srun *x = partner(idx, st->nrun, r, c->mc), *y = partner(idx, st->nrun, r, c->md);
          if (!x || !y || x->missing || y->missing) continue;
          rc[n] = x, rd[n] = y;
        }
        ra[n] = r, rb[n] = q, n++;
      }
      if (c->req[0]) { /* the precondition's metric over A's runs */
        double sum = 0;
        int nv = 0;
        for (int i = 0; i < n; i++) {
          const double x = st_metric_run(c->req_m, st, ra[i]);
          if (isfinite(x)) sum += x, nv++;
        }
        c->req_value = nv ? sum / nv : NAN;
      }
      if (c->m->kind == ST_MK_RATE) eval_rate(st, c, ra, rb, n);
      else if (c->m->kind == ST_MK_EDGE) eval_edge(st, c);
      else eval_value(st, c, ra, rb, c->mc[0] ? rc : NULL, c->mc[0] ? rd : NULL, n);
      decide(st, c);
    }
  free(ra);
  free(rb);
  free(rc);
  free(rd);
  free(idx);
  /* the findings, in the file's order */
  for (int k = 0; k < nn; k++)
    for (int i = 0; i < st->nclaim; i++) {
      const st_claim_row *c = &st->claim[i];
      if (strcmp(c->name, names[k])) continue;
      char ev[1000], claim[820];
      evidence(c, ev, sizeof ev);
      snprintf(claim, sizeof claim, "%s%s%s%s.", c->text, c->published[0] ? " (" : "", c->published,
               c->published[0] ? ")" : "");
      if (c->at[0]) st_verdict_add(st, c->verdict, claim, "at %s: %s; %s.", c->at, ev, c->why);
      else st_verdict_add(st, c->verdict, claim, "%s; %s.", ev, c->why);
    }
}

/* The settings that make two runs different models, vocabularies or run lengths (a rule's reference
 * should share them), as a table: the key as a study file writes it, its offset in xp_config and how
 * to print it (i int, l long, d double, s string, b the inverse of an int (bias = !no_bias), p pos,
 * m model, v vocab). */
typedef struct rule_field { const char *key; size_t off; char kind; } rule_field;
#define RF(k, f, t) {k, offsetof(xp_config, f), t}
static const rule_field RULE_FIELDS[] = {
    RF("model", model.kind, 'm'), RF("n_layer", model.n_layer, 'i'), RF("d_model", model.d_model, 'i'),
    RF("n_head", model.n_head, 'i'), RF("seq_len", model.seq_len, 'i'), RF("swiglu", model.swiglu, 'i'),
    RF("rmsnorm", model.rmsnorm, 'i'), RF("qk_layernorm", model.qk_layernorm, 'i'), RF("z_loss", model.z_loss, 'd'),
    RF("bias", model.no_bias, 'b'), RF("tie", model.tie, 'i'), RF("pos", model.rope, 'p'),
    RF("in_dim", model.in_dim, 'i'), RF("hidden", model.hidden, 'i'), RF("depth", model.depth, 'i'),
    RF("out_dim", model.out_dim, 'i'), RF("batch", model.batch, 'i'), RF("steps", steps, 'l'), RF("data", data, 's'),
    RF("vocab", vocab_words, 'v'),
};
#undef RF

/* One field of a config as the study file would write it (a string cut at 60 characters, marked). */
static void rule_field_fmt(const rule_field *f, const xp_config *c, char *out, size_t n) {
  static const char *const MODELS[] = {"gpt", "mlp", "mlp-class"};
  const char *p = (const char *)c + f->off;
  const int iv = *(const int *)p;
  switch (f->kind) {
  case 'i': snprintf(out, n, "%d", iv); break;
  case 'b': snprintf(out, n, "%d", !iv); break;
  case 'p': snprintf(out, n, "%s", iv ? "rope" : "learned"); break;
  case 'm': snprintf(out, n, "%s", iv >= 0 && iv < 3 ? MODELS[iv] : "?"); break;
  case 'v': iv ? snprintf(out, n, "word:%d", iv) : snprintf(out, n, "char"); break;
  case 'l': snprintf(out, n, "%ld", *(const long *)p); break;
  case 'd': snprintf(out, n, "%g", *(const double *)p); break;
  default: snprintf(out, n, strlen(p) > 60 ? "%.57s..." : "%s", p); break;
  }
}

/* The keys in which run a's config differs from b's, "KEY A vs B, ..." into out (empty: none). */
static void rule_fields_diff(const xp_config *a, const xp_config *b, char *out, size_t n) {
  out[0] = 0;
  for (size_t i = 0; i < sizeof RULE_FIELDS / sizeof RULE_FIELDS[0]; i++) {
    const rule_field *f = &RULE_FIELDS[i];
    const char *pa = (const char *)a + f->off, *pb = (const char *)b + f->off;
    const int differ = f->kind == 's'   ? strcmp(pa, pb) != 0
                       : f->kind == 'd' ? *(const double *)pa != *(const double *)pb
                       : f->kind == 'l' ? *(const long *)pa != *(const long *)pb
                                        : *(const int *)pa != *(const int *)pb;
    if (!differ) continue;
    char va[64], vb[64];
    rule_field_fmt(f, a, va, sizeof va);
    rule_field_fmt(f, b, vb, sizeof vb);
    st_cat(out, n, "%s%s %s vs %s", out[0] ? ", " : "", f->key, va, vb);
  }
}

/* The study's arms in run order, each with its first run (at most ST_MAXARM); returns the count. */
static int arm_list(const study *st, const srun **first) {
  int na = 0;
  for (int i = 0; i < st->nrun; i++) {
    int k = 0;
    while (k < na && strcmp(first[k]->arm, st->run[i].arm)) k++;
    if (k == na && na < ST_MAXARM) first[na++] = &st->run[i];
  }
  return na;
}

/* Arms judged against a reference of another model, corpus or run length (an arm's first run against the
 * reference's run at the same cell): a note for the Rules section and the console ("" when none). */
static void rules_mismatch(const study *st, const srun *const *first, int na, char *out, size_t n) {
  out[0] = 0;
  const srun **idx = cell_index(st);
  if (!idx) return;
  for (int k = 0; k < na; k++) {
    const srun *r = first[k];
    const char *ref = st_run_ref(st, r);
    if (!ref || !r->cfg || !strcmp(r->arm, ref)) continue;
    const srun *q = partner(idx, st->nrun, r, ref);
    if (!q || !q->cfg) continue;
    char d[1024];
    rule_fields_diff(r->cfg, q->cfg, d, sizeof d);
    if (d[0]) st_cat(out, n, "%s`%s` against `%s` (%s)", out[0] ? "; " : "", r->arm, ref, d);
  }
  free(idx);
}

void st_report_rules(study *st, FILE *md) {
  if (!st->file) return;
  const char *ref = st_file_get(st->file, st->size, "reference", NULL);
  fprintf(md, "\n## Rules\n\nApplied identically to every run. Divergence: a non-finite loss, or a final loss (the "
              "mean of the last 10%% of steps) above the first step's; a transient excursion above it is a spike, "
              "not a divergence. Spike: a loss above %g x the median of the previous %d losses. ",
          st->nrun ? st->run[0].cfg->spike_factor : 1.5, st->nrun ? st->run[0].cfg->spike_window : 32);
  const srun *first[ST_MAXARM];
  const int na = arm_list(st, first);
  char own[8192] = ""; /* arms with their own reference (arm.X.reference): "`R` for A, B; ..." */
  for (int k = 0; k < na; k++) {
    const char *rk = first[k]->ref;
    int seen = 0; /* each reference once, with its arms in run order */
    for (int j = 0; j < k && !seen; j++) seen = !strcmp(first[j]->ref, rk);
    if (!rk[0] || (ref && !strcmp(rk, ref)) || seen) continue;
    st_cat(own, sizeof own, "%s`%s` for ", own[0] ? "; " : "", rk);
    for (int j = k, m = 0; j < na; j++)
      if (!strcmp(first[j]->ref, rk)) st_cat(own, sizeof own, "%s%s", m++ ? ", " : "", first[j]->arm);
  }
  int rest = 0; /* arms left to the file's reference (or to none) */
  for (int k = 0; k < na; k++) rest += !first[k]->ref[0] || (ref && !strcmp(first[k]->ref, ref));
  if (own[0])
    fprintf(md, "Non-convergence: a final validation loss more than %g nats above its reference arm's (%s%s%s%s) at "
                "the same seed, learning rate and axis point. Under-trained (reported, not a failure): more than %g "
                "nats above the best run of that reference at its seed over the learning rates.\n\n",
            st_nonconv_nats(st), own, rest && ref ? "; `" : "", rest && ref ? ref : "",
            !rest ? "" : ref ? "` for the others" : "; none for the others", st_nonconv_nats(st));
  else if (ref)
    fprintf(md, "Non-convergence: a final validation loss more than %g nats above the `%s` arm's at the same seed, "
                "learning rate and axis point. Under-trained (reported, not a failure): more than %g nats above the "
                "best `%s` run of its seed over the learning rates.\n\n",
            st_nonconv_nats(st), ref, st_nonconv_nats(st), ref);
  else fprintf(md, "Non-convergence: not applied (the study names no `reference` arm).\n\n");
  char mis[8192];
  rules_mismatch(st, first, na, mis, sizeof mis);
  if (mis[0]) {
    fprintf(md, "**Note on the rules**: some arms are judged against a reference of another model, corpus or run "
                "length: %s. Their non-convergence and under-training compare unlike runs; `arm.X.reference` names a "
                "reference of their own.\n\n", mis);
    if (st->log) fprintf(st->log, "rules: judged against a reference of another model, corpus or run length: %s\n", mis);
  }
  fprintf(md, "Claims: at least %d paired seeds for any verdict; a failed run is never dropped from a paired claim "
              "(it counts at the worst value: its first-step loss or the worst of the claim's runs, whichever is "
              "higher); failure rates are tested per learning rate (exact McNemar over seeds, Holm-corrected), never "
              "pooled.\n\n", ST_MIN_SEEDS);
  fprintf(md, "| arm | runs | diverged | not converged | under-trained | spikes |\n| --- | --- | --- | --- | --- | --- |\n");
  for (int k = 0; k < na; k++) {
    const char *arm = first[k]->arm;
    int n = 0, dv = 0, nc = 0, ut = 0;
    long sp = 0;
    for (int j = 0; j < st->nrun; j++) {
      const srun *r = &st->run[j];
      if (strcmp(r->arm, arm) || r->missing) continue;
      n++;
      dv += st_run_diverged(r);
      nc += r->nonconv;
      ut += r->undertrained;
      sp += r->res.spikes;
    }
    fprintf(md, "| %s | %d | %d | %d | %d | %ld |\n", arm[0] ? arm : "(base)", n, dv, nc, ut, sp);
  }
}

void st_report_conclude(study *st, FILE *md) {
  if (!st->nclaim) return;
  fprintf(md, "\n## What this study can and cannot conclude\n\n");
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    fprintf(md, "- `%s` (%s, %s vs %s, %d seeds): %s.\n", c->name, c->metric_name, c->a, c->b, c->nseeds, c->why);
  }
  fprintf(md, "\nEvery verdict is about this model, its corpus, its token budget (steps x batch x seq_len) and the "
              "learning rates run (the setup above); none transfers to another scale by itself.\n");
}

void st_claims_json(const study *st, FILE *f) {
  fprintf(f, ",\n  \"claims\": [");
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    const st_claim *s = &c->c;
    fprintf(f, "%s\n    {\"name\": ", k ? "," : "");
    st_json_str(f, c->name);
    fprintf(f, ", \"text\": ");
    st_json_str(f, c->text);
    fprintf(f, ", \"published\": ");
    st_json_str(f, c->published);
    fprintf(f, ", \"at\": ");
    st_json_str(f, c->at);
    fprintf(f, ", \"arms\": [");
    st_json_str(f, c->a);
    fputs(", ", f);
    st_json_str(f, c->b);
    fprintf(f, "], \"metric\": \"%s\", \"rule\": \"%s\", \"margin\": ", c->metric_name, ST_RULES[c->rule]);
    st_json_num(f, c->margin);
    fprintf(f, ", \"effect\": ");
    st_json_num(f, c->effect);
    fprintf(f, ", \"n\": %d, \"seeds\": %d, \"mean\": ", s->n, c->nseeds);
    st_json_num(f, s->mean);
    fprintf(f, ", \"ci95\": [");
    st_json_num(f, s->lo);
    fputs(", ", f);
    st_json_num(f, s->hi);
    fprintf(f, "], \"mde\": ");
    st_json_num(f, c->mde);
    fprintf(f, ", \"verdict\": \"%s\", \"rule_applied\": ", st_verdict_name(c->verdict));
    st_json_str(f, c->why);
    fputc('}', f);
  }
  fprintf(f, "%s]", st->nclaim ? "\n  " : "");
}

/* A forest plot of the paired claims: each claim's mean gap with its 95%
 * 95% CI (Student's t over seeds) as an error bar, 0 dashed, a tracks claim's margin as red
 * ticks; the x range is the data's (0 and the margins included). */
static int forest_row(const st_claim_row *c) { return c->m->kind == ST_MK_VALUE && isfinite(c->c.mean); }

void st_plot_claims(study *st, FILE *md) {
  int np = 0;
  for (int k = 0; k < st->nclaim; k++) np += forest_row(&st->claim[k]);
  if (!np) return;
  char path[XP_PATH + 32];
  snprintf(path, sizeof path, "%s/claims.dat", st->dir);
  FILE *d = fopen(path, "w");
  if (!d) return;
  snprintf(path, sizeof path, "%s/claims.gp", st->dir);
  FILE *g = fopen(path, "w");
  if (!g) { fclose(d); return; }
  fprintf(d, "# row mean lo95 hi95 label\n");
  fprintf(g, "# exmy study %s: the claims' paired gaps (gnuplot claims.gp, run in the results folder)\n", st->def->name);
  fprintf(g, "set title 'exmy study %s: paired gaps A - B, mean and 95%% CI (t over seeds)' noenhanced\n", st->def->name);
  fprintf(g, "set xlabel 'gap (A - B at the same seed, in the metric''s unit); red ticks: a tracks claim''s margin' "
             "noenhanced\nset grid x\nset key off\n");
  double xl = 0, xh = 0; /* the x range: 0, every CI and every margin, 8% padding */
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    if (!forest_row(c)) continue;
    if (c->c.lo < xl) xl = c->c.lo;
    if (c->c.hi > xh) xh = c->c.hi;
    if (c->rule == ST_RULE_TRACKS && c->margin > 0) {
      if (-c->margin < xl) xl = -c->margin;
      if (c->margin > xh) xh = c->margin;
    }
  }
  const double pad = (xh - xl) * 0.08 + 1e-6;
  fprintf(g, "set xrange [%.6g:%.6g]\n", xl - pad, xh + pad);
  st_gp_palette(g);
  fprintf(g, "set yrange [0.5:%d.5]\n", np);
  fprintf(g, "set arrow from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb '#000000'\n");
  fprintf(g, "set style textbox opaque noborder\n"); /* a row's label hides the grid and the 0 line under it */
  int row = 0;
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    if (!forest_row(c)) continue;
    row++;
    char gap[300];
    gap_text(c, gap, sizeof gap);
    /* the claim's name as the row's tic; what it compares, above its bar inside the plot (a long
     * tic label took the plot's width and cut the title) */
    fprintf(d, "%d %.9g %.9g %.9g \"%s\"\n", row, c->c.mean, c->c.lo, c->c.hi, c->name);
    char lab[600], ql[1200];
    snprintf(lab, sizeof lab, "%s (%d seed%s, %s)", gap, c->nseeds, c->nseeds == 1 ? "" : "s", st_verdict_name(c->verdict));
    st_gp_quote(lab, ql, sizeof ql);
    fprintf(g, "set label '%s' at graph 0.01, first %g left front boxed noenhanced font ',9'\n", ql, row + 0.3);
    if (c->rule == ST_RULE_TRACKS && c->margin > 0)
      for (int s = -1; s <= 1; s += 2)
        fprintf(g, "set arrow from %g, %g to %g, %g nohead lw 2 lc rgb '#D55E00'\n", s * c->margin, row - 0.3, s * c->margin,
                row + 0.3);
  }
  fclose(d);
  st_gp_terminal(g, "claims", 0);
  fprintf(g, "plot 'claims.dat' using 2:1:3:4:ytic(5) with xerrorbars pt 7 ps 1.2 lw 1.6 lc 1 notitle\n");
  st_gp_terminal(g, "claims", 1);
  fclose(g);
  st_gnuplot_run(st, "claims");
  fprintf(md, "\n");
  st_md_plot(st, md, "claims", "The claims' paired gaps: mean and 95% CI (Student's t over seeds) per claim");
}
