/* precision.c: the whole precision grammar of a run, in one place.
 *
 *   prec = PRESET[;key=value...]     every linear layer
 *   attn = PRESET[;key=value...]     attention's two batched GEMMs
 *   layer.NAME = PRESET[;key=value...]  an override (NAME: first, last,
 *                                    block.first, block.last, an index, a
 *                                    layer name or a glob)
 *
 * PRESET: fp32, bf16, fp16, hybrid, mxfp8, mxfp6, mxfp4, nvfp4, or a format
 * name.  Keys:
 * fmt|round|sat|recipe[.input|.weight|.grad] and accum[.fprop|.dgrad|.wgrad]
 * (e.g. `hybrid;recipe=delayed:len=16;accum.fprop=tc:hopper-fastacc`).
 * This file only parses and resolves; matmul.c runs the GEMMs. */
#include "experiments/xp.h"
#include "emulate/recipe_traits.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

const char *const xp_tkind_names[XP_NKIND] = {"input", "weight", "grad"};
const char *const xp_role_names[XP_NROLE] = {"fprop", "dgrad", "wgrad"};

int xp_format_is_f32(const exmy_format *f) {
  return f->ebits == 8 && f->mbits == 23 && f->bias == 127 && f->is_signed && f->has_zero &&
         f->inf == EXMY_INF_IEEE && f->nan == EXMY_NAN_IEEE;
}

static int tprec_format(xp_tprec *t, const char *text, char *err, size_t errlen) {
  char e[EXMY_ERRLEN];
  if (exmy_format_parse(text, &t->fmt, e, sizeof e)) return xp_errf(err, errlen, "precision: %s", e);
  if (t->fmt.mbits > 23)
    return xp_errf(err, errlen, "precision: format '%s' has more than 23 mantissa bits (GEMM operands)", text);
  t->is_f32 = xp_format_is_f32(&t->fmt);
  return 0;
}

/* A narrow-range element format wants a scale; e8mY covers fp32's range. */
static int wants_scaling(const exmy_format *f) { return f->emax < 64; }

/* The named presets: the format of each tensor kind and, for the
 * block-scaled ones, their recipe (others: a format name for all three,
 * the recipe by the format).  mxfp8/mxfp4 and nvfp4 are Transformer
 * Engine's MXFP8BlockScaling and NVFP4BlockScaling defaults (one element
 * format for all three; `fmt.grad=e5m2` is its HYBRID); mxfp6 is OCP MX's
 * FP6 E2M3 element under the same E8M0 block scales. */
static const struct {
  const char *name;
  const char *fmt[XP_NKIND];    /* input, weight, grad */
  const char *recipe;           /* NULL: by the format */
} presets[] = {
  {"fp32", {"f32", "f32", "f32"}, NULL},
  {"fp16", {"f16", "f16", "f16"}, NULL},
  {"hybrid", {"e4m3fn", "e4m3fn", "e5m2"}, NULL},
  {"mxfp8", {"e4m3fn", "e4m3fn", "e4m3fn"}, "mx"},
  {"mxfp6", {"e2m3fn", "e2m3fn", "e2m3fn"}, "mx"},
  {"mxfp4", {"e2m1fn", "e2m1fn", "e2m1fn"}, "mx"},
  {"nvfp4", {"e2m1fn", "e2m1fn", "e2m1fn"}, "nvfp4"},
};

int xp_prec_preset(xp_prec *p, const char *name, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", name);
  const char *fmts[XP_NKIND] = {name, name, name}, *recipe = NULL;
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (!strcmp(name, presets[i].name)) {
      memcpy(fmts, presets[i].fmt, sizeof fmts);
      recipe = presets[i].recipe;
    }
  for (int t = 0; t < XP_NKIND; t++) {
    if (tprec_format(&p->t[t], fmts[t], err, errlen)) return -1;
    p->t[t].rnd = exmy_rounding_default();
    /* cuda_fp8.h's casts saturate; the 16-bit formats behave as IEEE */
    if (p->t[t].fmt.bits <= 8) p->t[t].rnd.sat = EXMY_SAT_FINITE;
    snprintf(p->t[t].recipe, sizeof p->t[t].recipe, "%s",
             recipe ? recipe
                    : !p->t[t].is_f32 && p->t[t].fmt.bits <= 8 && wants_scaling(&p->t[t].fmt) ? "current" : "none");
  }
  for (int r = 0; r < XP_NROLE; r++) exmy_accum_parse("fp32", &p->accum[r], NULL, 0);
  return 0;
}

/* "fmt" -> all kinds; "fmt.grad" -> one.  Returns a mask of kinds or roles. */
static int key_targets(const char *key, const char *base, const char *const *names, int count, int *mask) {
  size_t bl = strlen(base);
  if (strncmp(key, base, bl)) return 0;
  if (!key[bl]) { *mask = (1 << count) - 1; return 1; }
  if (key[bl] != '.') return 0;
  for (int i = 0; i < count; i++)
    if (!strcmp(key + bl + 1, names[i])) { *mask = 1 << i; return 1; }
  return -1;
}

/* ---- the refinements (key=value after the preset), one function each ---- */

static int set_fmt(xp_prec *p, int mask, const char *value, char *err, size_t errlen) {
  for (int t = 0; t < XP_NKIND; t++)
    if (mask >> t & 1) {
      if (tprec_format(&p->t[t], value, err, errlen)) return -1;
      if (p->t[t].is_f32) snprintf(p->t[t].recipe, sizeof p->t[t].recipe, "none");
    }
  return 0;
}

static int set_round(xp_prec *p, int mask, const char *value, char *err, size_t errlen) {
  exmy_round_mode mode;
  if (exmy_round_mode_parse(value, &mode, NULL, 0))
    return xp_errf(err, errlen, "precision: unknown rounding '%s' (rne rna rtz rup rdn rto sr)", value);
  for (int t = 0; t < XP_NKIND; t++)
    if (mask >> t & 1) p->t[t].rnd.mode = mode;
  return 0;
}

static int set_sat(xp_prec *p, int mask, const char *value, char *err, size_t errlen) {
  exmy_saturation s;
  if (!strcmp(value, "none")) s = EXMY_SAT_NONE;
  else if (!strcmp(value, "finite")) s = EXMY_SAT_FINITE;
  else return xp_errf(err, errlen, "precision: saturation '%s' is not none or finite", value);
  for (int t = 0; t < XP_NKIND; t++)
    if (mask >> t & 1) p->t[t].rnd.sat = s;
  return 0;
}

static int set_recipe(xp_prec *p, int mask, const char *value, char *err, size_t errlen) {
  exmy_recipe rec;
  char e[EXMY_ERRLEN];
  if (exmy_recipe_parse(value, &rec, e, sizeof e)) return xp_errf(err, errlen, "precision: %s", e);
  if (strlen(value) >= sizeof p->t[0].recipe) return xp_errf(err, errlen, "precision: recipe '%s' too long", value);
  for (int t = 0; t < XP_NKIND; t++)
    if (mask >> t & 1) snprintf(p->t[t].recipe, sizeof p->t[t].recipe, "%s", value);
  return 0;
}

static int set_accum(xp_prec *p, int mask, const char *value, char *err, size_t errlen) {
  exmy_accum acc;
  char e[EXMY_ERRLEN];
  if (exmy_accum_parse(value, &acc, e, sizeof e)) return xp_errf(err, errlen, "precision: %s", e);
  for (int q = 0; q < XP_NROLE; q++)
    if (mask >> q & 1) p->accum[q] = acc;
  return 0;
}

/* The refinement keys: base name, what the suffix names (tensor kinds or
 * GEMM roles), the setter. */
static const struct {
  const char *base;
  int per_role;                 /* 0: .input/.weight/.grad, 1: .fprop/.dgrad/.wgrad */
  int (*set)(xp_prec *p, int mask, const char *value, char *err, size_t errlen);
} refinements[] = {
  {"fmt", 0, set_fmt},
  {"round", 0, set_round},
  {"sat", 0, set_sat},
  {"recipe", 0, set_recipe},
  {"accum", 1, set_accum},
};

int xp_prec_set(xp_prec *p, const char *key, const char *value, char *err, size_t errlen) {
  for (size_t i = 0; i < sizeof refinements / sizeof refinements[0]; i++) {
    const int per_role = refinements[i].per_role;
    int mask = 0;
    int r = per_role ? key_targets(key, refinements[i].base, xp_role_names, XP_NROLE, &mask)
                     : key_targets(key, refinements[i].base, xp_tkind_names, XP_NKIND, &mask);
    if (!r) continue;
    if (r < 0)
      return per_role ? xp_errf(err, errlen, "precision: unknown GEMM in '%s' (fprop, dgrad, wgrad)", key)
                      : xp_errf(err, errlen, "precision: unknown tensor in '%s' (input, weight, grad)", key);
    return refinements[i].set(p, mask, value, err, errlen);
  }
  return xp_errf(err, errlen, "precision: unknown key '%s' (fmt, round, sat, recipe, accum[.KIND])", key);
}

/* "PRESET;key=value;..." into p */
static int parse_prec(const char *what, const char *text, xp_prec *p, char *err, size_t errlen) {
  char buf[512], e[EXMY_ERRLEN];
  if (strlen(text) >= sizeof buf) return xp_errf(err, errlen, "%s: '%.80s...' is too long", what, text);
  snprintf(buf, sizeof buf, "%s", text);
  char *save = NULL;
  char *tok = strtok_r(buf, ";", &save);
  while (tok && isspace((unsigned char)*tok)) tok++;
  if (!tok || !*tok) return xp_errf(err, errlen, "%s: empty precision '%s'", what, text);
  char *end = tok + strlen(tok);
  while (end > tok && isspace((unsigned char)end[-1])) *--end = 0;
  if (xp_prec_preset(p, tok, e, sizeof e))
    return xp_errf(err, errlen,
                   "%s: %s (presets: fp32, bf16, fp16, hybrid, mxfp8, mxfp6, mxfp4, nvfp4, or a format name)", what, e);
  while ((tok = strtok_r(NULL, ";", &save))) {
    while (isspace((unsigned char)*tok)) tok++;
    end = tok + strlen(tok);
    while (end > tok && isspace((unsigned char)end[-1])) *--end = 0;
    if (!*tok) continue;
    char *eq = strchr(tok, '=');
    if (!eq) return xp_errf(err, errlen, "%s: '%s' is not key=value", what, tok);
    *eq = 0;
    if (xp_prec_set(p, tok, eq + 1, e, sizeof e)) return xp_errf(err, errlen, "%s: %s", what, e);
  }
  /* Every pair of tensor kinds meets in a GEMM (fprop: input x weight, dgrad:
   * grad x weight, wgrad: grad x input), whose operands must both be
   * block-scaled (mx, mx-ocp, nvfp4) or neither, and nvfp4 only with nvfp4:
   * refused here rather than at step 0. */
  exmy_recipe_kind k[XP_NKIND];
  for (int t = 0; t < XP_NKIND; t++) {
    exmy_recipe rec;
    k[t] = exmy_recipe_parse(p->t[t].recipe, &rec, e, sizeof e) ? EXMY_RECIPE_NONE : rec.kind;
  }
  for (int a = 0; a < XP_NKIND; a++)
    for (int b = a + 1; b < XP_NKIND; b++) {
      const exmy__recipe_traits *ta = exmy__recipe_traits_of(k[a]), *tb = exmy__recipe_traits_of(k[b]);
      if (ta->inner != tb->inner || (ta->inner && k[a] != k[b] && (ta->own_partner || tb->own_partner)))
        return xp_errf(err, errlen,
                       "%s: '%s': recipes %s=%s and %s=%s meet in one GEMM (block-scaled mx/nvfp4 operands need "
                       "block-scaled partners, nvfp4 needs nvfp4); set recipe= for all three",
                       what, text, xp_tkind_names[a], p->t[a].recipe, xp_tkind_names[b], p->t[b].recipe);
    }
  snprintf(p->name, sizeof p->name, "%.*s", (int)sizeof p->name - 1, text);
  return 0;
}

/* ---- the run's precision keys: prec, attn, layer.NAME --------------------- */

int xp_config_set_prec(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  char e[EXMY_ERRLEN];
  xp_prec p;
  if (parse_prec("prec", value, &p, e, sizeof e)) return xp_errf(err, errlen, "%s", e);
  if (strlen(value) >= sizeof c->prec_text) return xp_errf(err, errlen, "%s: '%s' too long", key, value);
  c->prec = p;
  snprintf(c->prec_text, sizeof c->prec_text, "%s", value);
  return 0;
}

int xp_config_set_attn(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  char e[EXMY_ERRLEN];
  xp_prec p;
  if (parse_prec("attn", value, &p, e, sizeof e)) return xp_errf(err, errlen, "%s", e);
  for (int t = 0; t < XP_NKIND; t++)
    if (!strncmp(p.t[t].recipe, "delayed", 7))
      return xp_errf(err, errlen, "%s: delayed scaling is not offered for attention's per-head GEMMs ('%s')", key,
                     value);
  if (strlen(value) >= sizeof c->attn_text) return xp_errf(err, errlen, "%s: '%s' too long", key, value);
  c->attn = p;
  snprintf(c->attn_text, sizeof c->attn_text, "%s", value);
  return 0;
}

/* key: "layer.NAME"; setting NAME again replaces its override. */
int xp_config_set_layer(xp_config *c, const char *key, const char *value, char *err, size_t errlen) {
  char e[EXMY_ERRLEN];
  const char *name = key + strlen("layer.");
  if (!*name || strlen(name) >= sizeof c->override_layer[0])
    return xp_errf(err, errlen, "'%s': give a layer (layer.first, layer.last, layer.3, layer.h0.qkv)", key);
  int slot = c->n_override;
  for (int o = 0; o < c->n_override; o++)
    if (!strcmp(c->override_layer[o], name)) slot = o;
  if (slot == XP_MAX_OVERRIDES) return xp_errf(err, errlen, "%s: more than 16 layer overrides", key);
  xp_prec p;
  if (parse_prec(key, value, &p, e, sizeof e)) return xp_errf(err, errlen, "%s", e);
  if (strlen(value) >= sizeof c->override_text[0]) return xp_errf(err, errlen, "%s: '%s' too long", key, value);
  snprintf(c->override_layer[slot], sizeof c->override_layer[slot], "%s", name);
  snprintf(c->override_text[slot], sizeof c->override_text[slot], "%s", value);
  c->override_prec[slot] = p;
  if (slot == c->n_override) c->n_override++;
  return 0;
}

void xp_config_write_prec(const xp_config *c, FILE *out) {
  fprintf(out, "prec = %s\n", c->prec_text);
  fprintf(out, "attn = %s\n", c->attn_text);
  for (int o = 0; o < c->n_override; o++) fprintf(out, "layer.%s = %s\n", c->override_layer[o], c->override_text[o]);
}

void xp_prec_help(FILE *out) {
  fprintf(out, "  %-16s %s\n", "prec", "GEMM precision: PRESET[;key=value...] (fp32 bf16 fp16 hybrid mxfp8 mxfp6");
  fprintf(out, "  %-16s %s\n", "", "mxfp4 nvfp4 FORMAT; fmt|round|sat|recipe[.input|.weight|.grad],");
  fprintf(out, "  %-16s %s\n", "", "accum[.fprop|.dgrad|.wgrad])");
  fprintf(out, "  %-16s %s\n", "attn", "precision of attention's GEMMs (default fp32)");
  fprintf(out, "  %-16s %s\n", "layer.NAME", "per-layer precision (NAME: first, last, block.first, block.last, index, name, glob)");
}

void xp_prec_key(const xp_config *c, char *buf, size_t len) {
  size_t n = (size_t)snprintf(buf, len, "prec=%s|attn=%s", c->prec_text, c->attn_text);
  for (int o = 0; o < c->n_override && n < len; o++)
    n += (size_t)snprintf(buf + n, len - n, "|layer.%s=%s", c->override_layer[o], c->override_text[o]);
}

/* ---- which layers a NAME selects, and the precision of each layer ------- */

/* A block is a layer name's text before its first '.' (h3 of h3.fc2, b0 of
 * b0.fc); names without one (lm_head, inp, head) are in no block. */
static int block_len(const char *name) {
  const char *dot = strchr(name, '.');
  return dot ? (int)(dot - name) : 0;
}

/* The first (dir 1) or last (dir -1) layer that is in a block, or -1. */
static int edge_block_layer(int nlin, char (*names)[32], int dir) {
  for (int k = 0; k < nlin; k++) {
    const int i = dir > 0 ? k : nlin - 1 - k;
    if (block_len(names[i])) return i;
  }
  return -1;
}

/* Layer i is in the same block as layer j. */
static int same_block(int i, int j, char (*names)[32]) {
  const int n = block_len(names[i]);
  return j >= 0 && n && n == block_len(names[j]) && !strncmp(names[i], names[j], (size_t)n);
}

static int sel_first(int i, int nlin, char (*names)[32]) { (void)names; (void)nlin; return i == 0; }
static int sel_last(int i, int nlin, char (*names)[32]) { (void)names; return i == nlin - 1; }
static int sel_block_first(int i, int nlin, char (*names)[32]) { return same_block(i, edge_block_layer(nlin, names, 1), names); }
static int sel_block_last(int i, int nlin, char (*names)[32]) { return same_block(i, edge_block_layer(nlin, names, -1), names); }

/* The named selectors (others: an index, or a name / glob).  block.first and
 * block.last are whole transformer blocks (every GEMM of h0, of h{L-1}), as
 * Transformer Engine's guidance keeps the first and last blocks in bf16. */
static const struct {
  const char *name;
  int (*sel)(int i, int nlin, char (*names)[32]);
} selectors[] = {
  {"first", sel_first},
  {"last", sel_last},
  {"block.first", sel_block_first},
  {"block.last", sel_block_last},
};

int xp_layer_matches(const char *pat, int i, int nlin, char (*names)[32]) {
  for (size_t k = 0; k < sizeof selectors / sizeof selectors[0]; k++)
    if (!strcmp(pat, selectors[k].name)) return selectors[k].sel(i, nlin, names);
  char *end;
  long v = strtol(pat, &end, 10);
  if (*pat && !*end) return v == i;
  return fnmatch(pat, names[i], 0) == 0;
}

int xp_prec_check_overrides(const xp_config *c, int nlin, char (*lin_name)[32], char *err, size_t errlen) {
  for (int o = 0; o < c->n_override; o++) {
    int hit = 0;
    for (int i = 0; i < nlin; i++) hit |= xp_layer_matches(c->override_layer[o], i, nlin, lin_name);
    if (!hit)
      return xp_errf(err, errlen,
                     "layer.%s: no linear layer matches '%s' (first, last, block.first, block.last, an index, or a name "
                     "like h0.qkv)",
                     c->override_layer[o], c->override_layer[o]);
  }
  return 0;
}

const xp_prec *xp_prec_of_layer(const xp_config *c, int i, int nlin, char (*names)[32]) {
  const xp_prec *p = &c->prec;
  for (int o = 0; o < c->n_override; o++)
    if (xp_layer_matches(c->override_layer[o], i, nlin, names)) p = &c->override_prec[o];
  return p;
}
