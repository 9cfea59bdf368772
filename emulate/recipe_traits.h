/* recipe_traits.h: what each kind of scaling recipe is, one row per kind
 * (the table is in recipe.c), for the library (scaling.c, gemm_plan.c), the
 * training engine and the command, which read the row instead of naming
 * kinds.  Adding a recipe kind: its row, its scale rule in scaling.c's
 * group_scale, its text in recipe.c. */
#ifndef EXMY_RECIPE_TRAITS_H
#define EXMY_RECIPE_TRAITS_H
#include "exmy.h"

#include <stddef.h>

typedef struct exmy__recipe_traits {
  const char *name;   /* the recipe text's head (mx:ocp is mx's ocp option) */
  size_t block_rows, block_cols; /* the default group shape (0: the whole dimension) */
  int whole;          /* one scale for the whole tensor, known before its amax (none: 1, delayed: its history):
                         the block sizes make no groups */
  int has_state;      /* keeps state between steps (delayed's amax history) */
  int cacheable;      /* one scale per tensor: a later GEMM of the step may reuse the codes (unless blocked by
                         row or column, or stochastically rounded; experiments/matmul.c) */
  int inner;          /* the block scales apply inside the GEMM's dot products (docs/gemm.md, INNER): an operand
                         of such a recipe needs a partner of one */
  int own_partner;    /* ... and only one of its own kind (nvfp4) */
  int tensor_scale;   /* a tensor-wide scale above the block scales (nvfp4's S_enc): all groups' amax first */
  int exact_product;  /* x * scale always rounded once (mx:ocp), as the recipe's exact option asks */
  const char *scale_format; /* the block scales' codes (exmy_qtensor.scale_codes); NULL: float scales only */
  int scale_emin, scale_mbits; /* those codes' nominal decomposition (the tensor-core model's INNER scales) */
} exmy__recipe_traits;

/* The row of kind; a row of zeros (name NULL) for a kind out of range (a
 * hand-made tensor; the end of a loop over the kinds). */
const exmy__recipe_traits *exmy__recipe_traits_of(exmy_recipe_kind kind);
#endif
