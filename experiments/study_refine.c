/* study_refine.c: the grid's next pass near the stability edge.
 *
 * `exmy study NAME --refine` reads the runs done so far, and for each
 * lr_edge claim (its two arms, at its axis point) asks the edge estimator
 * where the next learning rate should go (st_edge_refine, k = 1): one grid
 * step beyond the grid when the edge is censored, the geometric midpoint of
 * the bracket when the bracket is wider than the claim's effect (a shift
 * smaller than the grid step cannot be resolved).  The new learning rates go
 * to DIR/refine.lrs, one per line with the reason; every later invocation on
 * that folder (a rerun, a shard, --report, --dry-run) reads the file and
 * adds them to the study's grid after the declared ones, so the runs already
 * done keep their places and every process sees the same grid.  The rule is
 * the estimator's, fixed before any run (docs/studies/edge.md, "Refining the
 * grid"): nothing here looks at which arm fails.  Reading the file back is
 * study_file.c's (st_refine_load), below the claims this file calls. */
#include "experiments/study_int.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void refine_path(const study *st, char *path, size_t n) { snprintf(path, n, "%s/" ST_REFINE_FILE, st->dir); }

/* The next learning rate for one arm at one point, or 0 (none needed):
 * why gets the reason. */
static int propose(const study *st, const char *arm, const char *point, double effect, double *out, char *why,
                   size_t whylen) {
  st_edge_buf *b = malloc(sizeof *b);
  st_edge_arm a;
  int n = 0;
  if (b && st_edge_arm_of(st, arm, point, b, &a)) {
    st_edge_np e;
    st_edge_nonparam(&a, &e);
    const double width = e.status == ST_EDGE_POINT ? log2(a.lr[e.hi_i] / a.lr[e.lo_i]) : NAN;
    if (e.status == ST_EDGE_ABOVE || e.status == ST_EDGE_BELOW || (e.status == ST_EDGE_POINT && width > effect)) {
      n = st_edge_refine(&a, 1, out);
      if (e.status == ST_EDGE_POINT)
        snprintf(why, whylen, "%s%s: edge in (%.6g, %.6g), %.2f octaves wide, more than the effect %.3g", arm, point,
                 a.lr[e.lo_i], a.lr[e.hi_i], width, effect);
      else
        snprintf(why, whylen, "%s%s: edge censored %s the %s (%s %.6g)", arm, point,
                 e.status == ST_EDGE_ABOVE ? "above" : "below",
                 e.status == ST_EDGE_ABOVE && st_edge_unjudged_above(&a, e.lr) ? "judged learning rates (the reference is "
                                                                        "under-trained above)"
                                                                      : "grid",
                 e.status == ST_EDGE_ABOVE ? ">" : "<", e.lr);
    }
  }
  free(b);
  return n;
}

int st_refine_propose(study *st, char *err, size_t errlen) {
  char path[XP_PATH + 32];
  refine_path(st, path, sizeof path);
  double add[2 * ST_MAXARM];
  char why[2 * ST_MAXARM][480]; /* "claim NAME: " and the arm's reason */
  int nadd = 0, nedge = 0, npend = 0, nodata = 0;
  st_rules_eval(st);
  st_claims_eval(st);
  for (int k = 0; k < st->nclaim; k++) {
    const st_claim_row *c = &st->claim[k];
    if (c->m->kind != ST_MK_EDGE || strcmp(c->m->name, "lr_edge")) continue;
    nedge++;
    const char *point = st_claim_point(st, c); /* the point the claim's edges are read at */
    if (!point) { nodata++; continue; }
    const double effect = c->effect > 0 ? c->effect : 1; /* one octave when the claim states none */
    for (int s = 0; s < 2 && nadd < 2 * ST_MAXARM; s++) {
      double v;
      char w[400];
      if (propose(st, s ? c->b : c->a, point, effect, &v, w, sizeof w) != 1) continue;
      if (st_lr_on_grid(st->lr, st->nlr, v)) { npend++; continue; } /* its runs are not all done yet */
      if (st_lr_on_grid(add, nadd, v)) continue;
      add[nadd] = v;
      snprintf(why[nadd], sizeof why[nadd], "claim %s: %s", c->name, w);
      nadd++;
    }
  }
  if (!nedge) {
    snprintf(err, errlen, "study %s: --refine: no lr_edge claim to refine the grid for", st->def->name);
    return 2;
  }
  if (!nadd) {
    if (npend || nodata)
      fprintf(st->log, "refine: nothing to add yet: %d edge%s need%s learning rates the grid has but whose runs are "
                       "not all done, and %d claim%s no runs at %s point; run the study, then --refine again\n",
              npend, npend == 1 ? "" : "s", npend == 1 ? "s" : "", nodata, nodata == 1 ? " has" : "s have",
              nodata == 1 ? "its" : "their");
    else
      fprintf(st->log, "refine: every lr_edge claim's edges are placed to within its effect on the %d learning rates: "
                       "nothing to add\n", st->nlr);
    return 0;
  }
  if (st->nlr + nadd > MAX_LR) {
    snprintf(err, errlen, "study %s: --refine: %d more learning rates would make %d (at most %d)", st->def->name, nadd,
             st->nlr + nadd, MAX_LR);
    return 2;
  }
  FILE *f = fopen(path, "a");
  if (!f) {
    snprintf(err, errlen, "study: cannot write '%s': %s", path, strerror(errno));
    return 1;
  }
  if (!st->nlr_refined)
    fprintf(f, "# learning rates added by `exmy study --refine` (docs/studies/edge.md, \"Refining the grid\"): "
               "every run of this folder uses them after the study's own\n");
  for (int i = 0; i < nadd; i++) {
    fprintf(f, "%.9g # %s\n", add[i], why[i]);
    fprintf(st->log, "refine: lr %.6g (%s)\n", add[i], why[i]);
  }
  if (fclose(f)) {
    snprintf(err, errlen, "study: cannot write '%s': %s", path, strerror(errno));
    return 1;
  }
  fprintf(st->log, "refine: %d learning rate%s added in %s; rerun the study (or its shards) on this folder to run them\n",
          nadd, nadd > 1 ? "s" : "", path);
  return 0;
}
