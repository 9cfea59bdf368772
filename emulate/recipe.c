/* recipe.c: what each kind of scaling recipe is (its traits row), a
 * recipe's text (parse, to_string) and the state a running recipe keeps
 * between steps.  The recipes themselves (scales and casts) are in
 * scaling.c; docs/scaling.md lists the grammar. */
#include "exmy.h"
#include "emulate/recipe_traits.h"
#include "formats/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail exmy__fail

/* ---- what each kind is ---------------------------------------------------- */

/* One row per kind (recipe_traits.h says what each column means). */
static const exmy__recipe_traits TRAITS[] = {
  /*                      name       group    whole state cache inner own tensor exact scales     emin  mbits */
  [EXMY_RECIPE_NONE]    = {"none",    0, 0,   1,    0,    1,    0,    0,  0,     0,    NULL,      0,    0},
  [EXMY_RECIPE_CURRENT] = {"current", 0, 0,   0,    0,    1,    0,    0,  0,     0,    NULL,      0,    0},
  [EXMY_RECIPE_DELAYED] = {"delayed", 0, 0,   1,    1,    1,    0,    0,  0,     0,    NULL,      0,    0},
  [EXMY_RECIPE_BLOCK]   = {"block",   1, 128, 0,    0,    0,    0,    0,  0,     0,    NULL,      0,    0},
  [EXMY_RECIPE_MX]      = {"mx",      1, 32,  0,    0,    0,    1,    0,  0,     0,    "e8m0fnu", -127, 0},
  [EXMY_RECIPE_MX_OCP]  = {"mx",      1, 32,  0,    0,    0,    1,    0,  0,     1,    "e8m0fnu", -127, 0},
  [EXMY_RECIPE_NVFP4]   = {"nvfp4",   1, 16,  0,    0,    0,    1,    1,  1,     0,    "e4m3fn",  -6,   3},
};

const exmy__recipe_traits *exmy__recipe_traits_of(exmy_recipe_kind kind) {
  static const exmy__recipe_traits none_of_them;
  return (unsigned)kind < sizeof TRAITS / sizeof TRAITS[0] ? &TRAITS[kind] : &none_of_them;
}

/* ---- recipe text ------------------------------------------------------- */

#define TRAITS_NAME(k) (exmy__recipe_traits_of((exmy_recipe_kind)(k))->name)

static void recipe_defaults(exmy_recipe *r, exmy_recipe_kind kind) {
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->block_rows = exmy__recipe_traits_of(kind)->block_rows;
  r->block_cols = exmy__recipe_traits_of(kind)->block_cols;
  switch (kind) {
  case EXMY_RECIPE_DELAYED: r->history_len = 1024; r->interval = 1; break;
  case EXMY_RECIPE_BLOCK: r->pow2 = 1; break;
  default: break;
  }
}

static int parse_float(const char *v, float *out) {
  char *end;
  float f = strtof(v, &end);
  if (!*v || *end || !(f >= 0) || isinf(f)) return -1;
  *out = f + 0.0f; /* -0 is 0: settings that compare equal, written back the same (fuzz_recipe) */
  return 0;
}

static int parse_long(const char *v, long lo, long hi, long *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (!*v || *end || x < lo || x > hi) return -1;
  *out = x;
  return 0;
}

int exmy_recipe_parse(const char *text, exmy_recipe *r, char *err, size_t errlen) {
  char buf[256];
  if (!text || !*text) return fail(err, errlen, "empty scaling recipe");
  if (strlen(text) >= sizeof buf) return fail(err, errlen, "scaling recipe too long");
  strcpy(buf, text);
  char *colon = strchr(buf, ':');
  char *opts = NULL;
  if (colon) { *colon = 0; opts = colon + 1; }
  const char *name = buf;
  int kind = 0; /* the first row of that name (mx, not mx:ocp: its option comes below) */
  while (TRAITS_NAME(kind) && strcmp(name, TRAITS_NAME(kind))) kind++;
  if (!TRAITS_NAME(kind))
    return fail(err, errlen, "unknown scaling recipe '%s' (accepted: none, current, delayed, block:1xB, block:BxB, mx, mx:ocp, nvfp4)", text);
  recipe_defaults(r, (exmy_recipe_kind)kind);
  /* options, comma-separated */
  int first = 1;
  for (char *o = opts; o && *o;) {
    char *next = strchr(o, ',');
    if (next) *next++ = 0;
    char *eq = strchr(o, '=');
    const char *val = eq ? eq + 1 : NULL;
    if (eq) *eq = 0;
    long lv;
    float fv;
    size_t br, bc;
    char tail;
    if (r->kind == EXMY_RECIPE_MX && first && !val && !strcmp(o, "ocp")) {
      r->kind = EXMY_RECIPE_MX_OCP;
    } else if ((r->kind == EXMY_RECIPE_MX || r->kind == EXMY_RECIPE_MX_OCP) && !val && !strcmp(o, "col")) {
      r->block_rows = 32; /* blocks of 32 down a column */
      r->block_cols = 1;
    } else if (r->kind == EXMY_RECIPE_NVFP4 && first && !val && !strcmp(o, "16x16")) {
      r->block_rows = 16;
      r->block_cols = 16;
    } else if (r->kind == EXMY_RECIPE_BLOCK && first && !val && sscanf(o, "%zux%zu%c", &br, &bc, &tail) == 2 &&
               br >= 1 && bc >= 1 && br <= (1u << 20) && bc <= (1u << 20)) {
      r->block_rows = br;
      r->block_cols = bc;
    } else if ((r->kind == EXMY_RECIPE_CURRENT || r->kind == EXMY_RECIPE_BLOCK) && !val && !strcmp(o, "pow2")) {
      r->pow2 = 1;
    } else if (r->kind == EXMY_RECIPE_BLOCK && !val && !strcmp(o, "fp32")) {
      r->pow2 = 0;
    } else if (r->kind == EXMY_RECIPE_BLOCK && !val && !strcmp(o, "deepgemm")) {
      r->deepgemm = 1;
      r->pow2 = 0;
    } else if (r->kind == EXMY_RECIPE_CURRENT && !val && !strcmp(o, "row")) {
      r->block_rows = 1;
      r->block_cols = 0;
    } else if (r->kind == EXMY_RECIPE_CURRENT && !val && !strcmp(o, "col")) {
      r->block_rows = 0;
      r->block_cols = 1;
    } else if ((r->kind == EXMY_RECIPE_CURRENT || r->kind == EXMY_RECIPE_BLOCK) && val && !strcmp(o, "eps")) {
      if (parse_float(val, &fv)) return fail(err, errlen, "scaling recipe '%s': bad eps '%s' (accepted: a finite number >= 0)", text, val);
      r->epsilon = fv;
    } else if (r->kind == EXMY_RECIPE_DELAYED && val && !strcmp(o, "len")) {
      if (parse_long(val, 1, 1 << 20, &lv)) return fail(err, errlen, "scaling recipe '%s': bad len '%s' (accepted: 1..1048576)", text, val);
      r->history_len = (int)lv;
    } else if (r->kind == EXMY_RECIPE_DELAYED && val && !strcmp(o, "algo")) {
      if (!strcmp(val, "max")) r->most_recent = 0;
      else if (!strcmp(val, "most_recent")) r->most_recent = 1;
      else return fail(err, errlen, "scaling recipe '%s': bad algo '%s' (accepted: max, most_recent)", text, val);
    } else if (r->kind == EXMY_RECIPE_DELAYED && val && !strcmp(o, "margin")) {
      if (parse_long(val, 0, 126, &lv)) return fail(err, errlen, "scaling recipe '%s': bad margin '%s' (accepted: 0..126)", text, val);
      r->margin = (int)lv;
    } else if (r->kind == EXMY_RECIPE_DELAYED && val && !strcmp(o, "interval")) {
      if (parse_long(val, 1, 1 << 20, &lv)) return fail(err, errlen, "scaling recipe '%s': bad interval '%s' (accepted: 1..1048576)", text, val);
      r->interval = (int)lv;
    } else if (r->kind != EXMY_RECIPE_NONE && !val && !strcmp(o, "exact")) {
      r->exact_product = 1;
    } else {
      return fail(err, errlen, "scaling recipe '%s': unknown option '%s%s%s'", text, o, val ? "=" : "", val ? val : "");
    }
    first = 0;
    o = next;
  }
  /* DeepGEMM's scale is max(amax,1e-4)/fmax, never a power of two: a pow2
   * given after deepgemm is void, as one before it was (the settings then
   * equal those of the text exmy_recipe_to_string writes; fuzz_recipe) */
  if (r->deepgemm) r->pow2 = 0;
  return 0;
}

/* ---- recipe state ------------------------------------------------------- */

int exmy_recipe_has_state(const exmy_recipe *r) { return exmy__recipe_traits_of(r->kind)->has_state; }

int exmy_recipe_state_new(const exmy_recipe *r, exmy_recipe_state *st, char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  st->scale = st->scale_inv = 1.0f;
  if (!exmy_recipe_has_state(r)) return 0;
  st->history_len = r->history_len;
  st->history = calloc((size_t)r->history_len, sizeof *st->history);
  if (!st->history) return fail(err, errlen, "out of memory for an amax history of %d", r->history_len);
  return 0;
}

void exmy_recipe_state_free(exmy_recipe_state *st) {
  free(st->history);
  memset(st, 0, sizeof *st);
}

int exmy_recipe_state_copy(const exmy_recipe_state *src, exmy_recipe_state *dst, char *err, size_t errlen) {
  *dst = *src;
  dst->history = NULL;
  if (src->history) {
    dst->history = malloc((size_t)src->history_len * sizeof *dst->history);
    if (!dst->history) return fail(err, errlen, "out of memory for an amax history of %d", src->history_len);
    memcpy(dst->history, src->history, (size_t)src->history_len * sizeof *dst->history);
  }
  return 0;
}

int exmy_recipe_to_string(const exmy_recipe *r, char *buf, size_t len) {
  char t[200];
  int n = 0;
  switch (r->kind) {
  case EXMY_RECIPE_NONE: n = snprintf(t, sizeof t, "none"); break;
  case EXMY_RECIPE_CURRENT:
    n = snprintf(t, sizeof t, "current");
    if (r->block_rows == 1 && r->block_cols == 0) n += snprintf(t + n, sizeof t - n, ":row");
    else if (r->block_rows == 0 && r->block_cols == 1) n += snprintf(t + n, sizeof t - n, ":col");
    if (r->pow2) n += snprintf(t + n, sizeof t - n, "%spow2", strchr(t, ':') ? "," : ":");
    if (r->epsilon > 0) n += snprintf(t + n, sizeof t - n, "%seps=%.9g", strchr(t, ':') ? "," : ":", r->epsilon);
    break;
  case EXMY_RECIPE_DELAYED:
    n = snprintf(t, sizeof t, "delayed:len=%d,algo=%s,margin=%d", r->history_len, r->most_recent ? "most_recent" : "max", r->margin);
    if (r->interval > 1) n += snprintf(t + n, sizeof t - n, ",interval=%d", r->interval);
    break;
  case EXMY_RECIPE_BLOCK:
    n = snprintf(t, sizeof t, "block:%zux%zu", r->block_rows, r->block_cols);
    if (r->deepgemm) n += snprintf(t + n, sizeof t - n, ",deepgemm");
    else if (!r->pow2) n += snprintf(t + n, sizeof t - n, ",fp32");
    if (r->epsilon > 0) n += snprintf(t + n, sizeof t - n, ",eps=%.9g", r->epsilon);
    break;
  case EXMY_RECIPE_MX: n = snprintf(t, sizeof t, r->block_cols == 1 ? "mx:col" : "mx"); break;
  case EXMY_RECIPE_MX_OCP: n = snprintf(t, sizeof t, r->block_cols == 1 ? "mx:ocp,col" : "mx:ocp"); break;
  case EXMY_RECIPE_NVFP4: n = snprintf(t, sizeof t, r->block_rows == 16 ? "nvfp4:16x16" : "nvfp4"); break;
  }
  if (r->exact_product) n += snprintf(t + n, sizeof t - n, "%sexact", strchr(t, ':') ? "," : ":");
  return snprintf(buf, len, "%s", t);
}
