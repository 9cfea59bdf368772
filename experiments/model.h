/* model.h: what a model file needs besides the layers (internal to
 * experiments/): the parameter table, deterministic init, and the row each
 * model defines for the model table (models.c).
 *
 * Calls go one way, down this list (a file may skip levels, never go up):
 *   study.c (runs of the engine)
 *   train.c (the phases and the step; also sets matmul.c's mode and
 *     statistics), train_events.c (the event table), train_out.c (its files)
 *   config.c, data.c, ckpt.c, optim.c, detect.c
 *   models.c (the table; data.c runs the MLP teacher through it)
 *   gpt.c, mlp.c (the rows)
 *   layers.c, params.c
 *   matmul.c (the context and xp_matmul; ckpt.c reads its recipe states)
 *   precision.c (the grammar)
 *   error.c */
#ifndef EXMY_XP_MODEL_H
#define EXMY_XP_MODEL_H
#include "xp.h"

/* ---- parameter table (params.c) ------------------------------------------- */

/* Append a tensor (rows x cols) to m->tensors and grow m->nparams; offsets
 * only (m->params is allocated once the table is complete).  Returns its
 * index, or -1 when out of memory. */
int xp_add_tensor(xp_model *m, const char *name, size_t rows, size_t cols, int is_matrix);
/* Allocate params and grads (zeroed) after the table is complete.  0 / -1. */
int xp_alloc_params(xp_model *m);
/* Set the linear-layer name table (nlin names, forward order).  0 / -1. */
int xp_set_lin_names(xp_model *m, int nlin);
/* Set every tensor's is_linear_w from the linear-layer names (xp_model_init
 * calls it once the model's init has named them). */
void xp_mark_linear_weights(xp_model *m);
/* Free what the three above allocated (params, grads, tensors, names). */
void xp_params_free(xp_model *m);

/* A standard normal that is a pure function of (seed, stream, index):
 * Box-Muller in double on two draws of exmy_random64 (indices 2i, 2i+1). */
double xp_randn(uint64_t seed, uint64_t stream, uint64_t index);
/* Tensor t of m: N(0, std^2) with stream t + 1, element index i. */
void xp_init_normal(xp_model *m, int t, uint64_t seed, double std);
void xp_init_const(xp_model *m, int t, float v);

/* ---- the rows of the model table (one per model file) --------------------- */

extern const xp_model_ops xp_gpt_model;       /* gpt.c */
extern const xp_model_ops xp_mlp_model;       /* mlp.c: regression */
extern const xp_model_ops xp_mlp_class_model; /* mlp.c: classification */

#endif
