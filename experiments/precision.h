/* precision.h: the precision grammar of a run (precision.c; internal to
 * experiments/).  The presets and refinements of one xp_prec are in xp.h
 * (xp_prec_preset, xp_prec_set); these are the config keys built on them
 * and the per-layer resolution that matmul.c uses. */
#ifndef EXMY_XP_PRECISION_H
#define EXMY_XP_PRECISION_H
#include "xp.h"

/* The keys `prec`, `attn` and `layer.NAME` (key is the full key; setting a
 * NAME again replaces its override).  0 or -1 with err. */
int xp_config_set_prec(xp_config *c, const char *key, const char *value, char *err, size_t errlen);
int xp_config_set_attn(xp_config *c, const char *key, const char *value, char *err, size_t errlen);
int xp_config_set_layer(xp_config *c, const char *key, const char *value, char *err, size_t errlen);
/* Those keys as `key = value` lines (prec, attn, then the overrides in order). */
void xp_config_write_prec(const xp_config *c, FILE *out);
/* Their help lines for `exmy train --help`. */
void xp_prec_help(FILE *out);
/* The precision settings as one string (checkpoints: the scaling state
 * carries over only into the same settings). */
void xp_prec_key(const xp_config *c, char *buf, size_t len);

/* Layer i of nlin (names: every layer's) is selected by pat: first, last,
 * block.first, block.last (every layer of the first / last block), an
 * index, or a name / glob. */
int xp_layer_matches(const char *pat, int i, int nlin, char (*names)[32]);
/* Every layer.NAME override selects some layer.  0 or -1 with err. */
int xp_prec_check_overrides(const xp_config *c, int nlin, char (*lin_name)[32], char *err, size_t errlen);
/* The precision of linear layer i: the last override that selects it, else c->prec. */
const xp_prec *xp_prec_of_layer(const xp_config *c, int i, int nlin, char (*names)[32]);

#endif
