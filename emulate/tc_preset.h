/* tc_preset.h: the GEMM's tc: presets as datapath rows of the instruction
 * layer (accum.c holds the preset table; gemm_tc.c runs the row). */
#ifndef EXMY_TC_PRESET_H
#define EXMY_TC_PRESET_H
#include "emulate/mma_internal.h"

/* What a GEMM's operands are, which picks the instruction (the row) a
 * preset's GPU issues for them. */
typedef enum tc_operands {
  TC_PLAIN,  /* no block scales (per-tensor scales apply after the sum) */
  TC_BLOCK,  /* block scales inside the products (MX, and NVFP4 of other elements) */
  TC_NVF4    /* NVFP4: E2M1 x E2M1 with E4M3 block-16 scales */
} tc_operands;

/* The row of the preset whose parameters acc has (any promotion interval)
 * for these operands; NULL when acc's keys match no preset. */
const mma_datapath *exmy__tc_preset_path(const exmy_accum *acc, tc_operands ops);
#endif
