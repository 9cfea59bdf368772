/* gemm_tc.c: a GEMM's tc accumulation as a chain of the instruction
 * layer's fused sums (gemm_tc.h, docs/gemm.md).  The arithmetic is
 * mma_fused.c's alone: the GEMM adds only which row, the groups along k, and
 * its one rule of its own, that a zero group result is +0. */
#include "emulate/gemm_tc.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <string.h>

/* The values of E2M1 (NVFP4's elements): 0, 0.5 .. 6, signed. */
static int is_e2m1(const exmy_format *f) {
  return f->ebits == 2 && f->mbits == 1 && f->emin == 0 && f->is_signed && exmy_code_to_f64(f, f->max_mag) == 6.0;
}

/* What the operands are, which picks the instruction (the row): E2M1 x E2M1
 * with block scales of 16 or 32 along k are what kind::mxf4nvf4 and
 * kind::mxf4 take (NVFP4, MXFP4); other block-scaled ones kind::mxf8f6f4's. */
static exmy_tc_operands operands_of(const gemm_plan *p) {
  if (p->style != GEMM_INNER) return EXMY_TC_PLAIN;
  if (is_e2m1(&p->A->fmt) && is_e2m1(&p->B->fmt) && (p->seg == 16 || p->seg == 32)) return EXMY_TC_FP4;
  return EXMY_TC_BLOCK;
}

const mma_datapath *exmy__gemm_tc_path(const gemm_plan *p, mma_datapath *own) {
  const exmy_accum *a = &p->acc;
  const mma_datapath *dp = exmy__tc_path_of(a, operands_of(p));
  if (dp) return dp;
  /* no rows: T over groups of g (ST: the block scales inside the products) */
  memset(own, 0, sizeof *own);
  own->name = "tc";
  own->algo = p->style == GEMM_INNER ? MMA_ST : MMA_T;
  own->L = a->tc_group;
  own->F = a->tc_frac;
  own->e_zero = a->tc_zero; /* 0: v1 (exmy__gemm_tc_init) */
  own->rho = MMA_OUT_FP32;
  own->out = a->tc_out_frac;
  own->out_rne = a->tc_norm_rne;
  own->align_rne = a->tc_align_rne;
  own->source = "the GEMM's tc keys";
  return own;
}

int exmy__gemm_tc_takes(const gemm_plan *p, const gemm_tc_caps *c) {
  mma_datapath own;
  const mma_datapath *dp = exmy__gemm_tc_path(p, &own);
  int algo = 0, rho = 0;
  for (size_t i = 0; i < c->nalgos; i++) algo |= dp->algo == c->algos[i];
  for (size_t i = 0; i < c->nrhos; i++) rho |= dp->rho == c->rhos[i];
  const int nearest = dp->align_rne || (dp->rho == MMA_OUT_FP32 && dp->out_rne);
  return algo && rho && (c->block_scales || p->style != GEMM_INNER) && (c->nearest || !nearest);
}

int exmy__gemm_tc_init(const gemm_plan *p, gemm_tc *t) {
  const mma_datapath *dp = exmy__gemm_tc_path(p, &t->own);
  const int inner = p->style == GEMM_INNER;
  if (exmy_format_parse("f32", &t->f32, NULL, 0) ||
      (inner && exmy_format_parse(p->A->recipe == EXMY_RECIPE_NVFP4 ? "e4m3fn" : "e8m0fnu", &t->sf, NULL, 0)))
    return -1;
  return exmy__mma_unit_init(&t->u, dp, &p->A->fmt, &p->B->fmt, inner ? &t->sf : NULL, (int)p->seg, &t->f32,
                             p->acc.tc_zero == 0, NULL, 0);
}

float exmy__gemm_tc_piece(const gemm_plan *p, const gemm_tc *t, size_t i, size_t j, size_t l0, size_t l1) {
  const size_t k = p->k, L = (size_t)t->u.dp->L;
  const int inner = p->style == GEMM_INNER;
  mma_piece q = {NULL, NULL, 1, inner ? p->as + i * p->nseg : NULL, inner ? p->bs + j * p->nseg : NULL, 1, 0, 0, 0.0, &t->f32};
  float c = 0.0f;
  for (size_t g0 = l0; g0 < l1; g0 += L) {
    q.a = p->ad + i * k + g0;
    q.b = p->bd + j * k + g0;
    q.s0 = g0;
    q.L = (int)(g0 + L < l1 ? L : l1 - g0);
    q.c = c;
    c = exmy__f32_from_bits((uint32_t)exmy__mma_fused(&t->u, &q));
    if (c == 0) c = 0.0f; /* +0: MMA-Sim v1's integer truncation; v2's float sum keeps -0 (exmy_mma) */
  }
  return c;
}
