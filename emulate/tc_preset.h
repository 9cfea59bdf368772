/* tc_preset.h: the GEMM's tc rows (exmy_accum.tc_path) as rows of the
 * instruction layer's datapath table (accum.c holds the preset table and
 * the check; gemm_tc.c runs the row). */
#ifndef EXMY_TC_PRESET_H
#define EXMY_TC_PRESET_H
#include "emulate/mma_internal.h"

/* The row acc runs for operands ops; NULL when acc has no rows (the sum is
 * made from its keys). */
const mma_datapath *exmy__tc_path_of(const exmy_accum *acc, exmy_tc_operands ops);
/* 0 when acc's rows (a TC model's) are rows a GEMM runs and its keys are
 * the plain row's; else -1 naming the bad row or key (no prefix: the caller
 * says whose).  Any other kind of model: 0. */
int exmy__tc_path_check(const exmy_accum *acc, char *err, size_t errlen);
#endif
