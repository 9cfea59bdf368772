/* gemm_plan.c: the prepared GEMM problem: the arguments checked, where the
 * scales apply (OUTER, PROMOTE, INNER; docs/gemm.md), the scales per row and
 * segment (in the workspace), and, when a path needs them, the operands
 * decoded exactly once into op(A) and op(B)^T row-major doubles
 * (exmy__gemm_plan_decode; the fp32, pairwise and exact kernels pack from
 * the codes instead), so every path above reads them the same way. */
#include "emulate/gemm_plan.h"
#include "emulate/gemm_ws.h"
#include "formats/internal.h"
#include "emulate/parallel.h"
#include "emulate/recipe_traits.h"
#include "emulate/tc_preset.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Group index of stored element (r, c). */
static size_t group_of(const exmy_qtensor *q, size_t r, size_t c) {
  return (r / q->block_rows) * q->scols + c / q->block_cols;
}

static int check_operand(const char *name, const exmy_qtensor *q, char *err, size_t errlen) {
  if (!q || !q->codes) return exmy__fail(err, errlen, "GEMM: operand %s is missing", name);
  const exmy_format *f = &q->fmt;
  if (f->mbits > 23 || f->emax > 300 || f->emin - f->mbits < -300)
    return exmy__fail(err, errlen,
                      "GEMM: operand %s's format %s is too wide (the GEMM needs at most 23 mantissa bits and "
                      "values within 2^-300..2^300 so products are exact in double)", name, f->name);
  return 0;
}

int exmy__gemm_plan(const exmy_gemm_args *a, gemm_plan *p, int decode, gemm_ws *ws, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  p->ws = ws;
  if (!a) return exmy__fail(err, errlen, "GEMM: no arguments");
  if (check_operand("A", a->a, err, errlen) || check_operand("B", a->b, err, errlen)) return -1;
  if (!a->accum) return exmy__fail(err, errlen, "GEMM: no accumulation model");
  if (!a->d_fmt) return exmy__fail(err, errlen, "GEMM: no format for D (d_fmt)");
  if (!isfinite(a->alpha) || !isfinite(a->beta) || !isfinite(a->scale_c) || !isfinite(a->scale_d))
    return exmy__fail(err, errlen, "GEMM: alpha %g, beta %g, scale_c %g, scale_d %g: all must be finite",
                      (double)a->alpha, (double)a->beta, (double)a->scale_c, (double)a->scale_d);
  char re[EXMY_ERRLEN];
  if (exmy_rounding_check(&a->d_rnd, re, sizeof re)) return exmy__fail(err, errlen, "GEMM: D's %s", re);
  if (a->accum->kind == EXMY_ACCUM_FORMAT && exmy_rounding_check(&a->accum->acc_rnd, re, sizeof re))
    return exmy__fail(err, errlen, "GEMM: the accumulator's %s", re);
  const exmy_qtensor *A = a->a, *B = a->b;
  p->A = A;
  p->B = B;
  p->ta = a->trans_a != 0;
  p->tb = a->trans_b != 0;
  p->m = p->ta ? A->cols : A->rows;
  p->k = p->ta ? A->rows : A->cols;
  size_t kb = p->tb ? B->cols : B->rows;
  p->n = p->tb ? B->rows : B->cols;
  if (kb != p->k)
    return exmy__fail(err, errlen, "GEMM: op(A) is %zu x %zu but op(B) is %zu x %zu (inner dimensions differ)", p->m,
                      p->k, kb, p->n);
  p->acc = *a->accum;
  if (p->acc.kind == EXMY_ACCUM_TC && (p->acc.tc_group < 1 || p->acc.tc_frac < 0 || p->acc.tc_frac > 40 ||
                                       p->acc.tc_out_frac < 0 || p->acc.tc_out_frac > 23))
    return exmy__fail(err, errlen, "GEMM: tensor-core model with g=%d f=%d out=%d out of range", p->acc.tc_group,
                      p->acc.tc_frac, p->acc.tc_out_frac);
  if (exmy__tc_path_check(&p->acc, re, sizeof re)) return exmy__fail(err, errlen, "GEMM: %s", re);

  /* Where the scales apply (docs/gemm.md, table). */
  const size_t k = p->k;
  const size_t KA = p->ta ? A->block_rows : A->block_cols;
  const size_t KB = p->tb ? B->block_cols : B->block_rows;
  const exmy__recipe_traits *trA = exmy__recipe_traits_of(A->recipe), *trB = exmy__recipe_traits_of(B->recipe);
  const int ia = trA->inner, ib = trB->inner;
  char ra[48], rb[48];
  snprintf(ra, sizeof ra, "%zux%zu", A->block_rows, A->block_cols);
  snprintf(rb, sizeof rb, "%zux%zu", B->block_rows, B->block_cols);
  if (k == 0) {
    p->style = GEMM_OUTER;
    p->seg = 0;
    p->nseg = 1;
  } else if (ia || ib) {
    if (!(ia && ib))
      return exmy__fail(err, errlen,
                        "GEMM: block-scaled (mx, nvfp4) operands must both be block-scaled: A's groups are %s, B's %s", ra,
                        rb);
    if (A->recipe != B->recipe && (trA->own_partner || trB->own_partner))
      return exmy__fail(err, errlen, "GEMM: nvfp4 operands must both be nvfp4");
    if (KA != KB)
      return exmy__fail(err, errlen,
                        "GEMM: block scales must tile k alike: A's groups (%s) span %zu of k, B's (%s) span %zu "
                        "(for a k x n B use mx:col, or store B as n x k with trans_b)", ra, KA, rb, KB);
    p->style = GEMM_INNER;
    p->seg = KA;
  } else if (KA >= k && KB >= k) {
    p->style = GEMM_OUTER;
    p->seg = k;
  } else {
    size_t L = KA < k ? KA : KB;
    if (KB < k && KB < L) L = KB;
    if ((KA < k && KA % L) || (KB < k && KB % L))
      return exmy__fail(err, errlen,
                        "GEMM: A's scale groups (%s) span %zu of k and B's (%s) span %zu: one must divide the other", ra,
                        KA, rb, KB);
    p->style = GEMM_PROMOTE;
    p->seg = L;
  }
  if (k) p->nseg = (k + p->seg - 1) / p->seg;
  if (p->style == GEMM_INNER) {
    p->s_emin = trA->scale_emin; /* A's and B's alike: equal kinds, or both E8M0 (mx, mx:ocp) */
    p->s_mbits = trA->scale_mbits;
    if ((A->fmt.mbits + 1) + (B->fmt.mbits + 1) + 2 * (p->s_mbits + 1) > 53)
      return exmy__fail(err, errlen, "GEMM: %s x %s with E4M3 block scales: products would not be exact in double",
                        A->fmt.name, B->fmt.name);
  }
  p->tA = p->style == GEMM_INNER ? A->tensor_scale_inv : 1.0f;
  p->tB = p->style == GEMM_INNER ? B->tensor_scale_inv : 1.0f;
  p->a_emin = A->fmt.emin;
  p->a_mbits = A->fmt.mbits;
  p->b_emin = B->fmt.emin;
  p->b_mbits = B->fmt.mbits;
  p->alpha = a->alpha;
  p->beta = a->beta;
  p->scale_c = a->scale_c;
  p->scale_d = a->scale_d;
  p->use_c = a->c_fmt && a->c && a->beta != 0.0f;
  p->c_fmt = a->c_fmt;
  p->c = a->c;
  p->d_fmt = a->d_fmt;
  p->d_rnd = a->d_rnd;
  if (!decode) return 0;
  if (p->acc.kind == EXMY_ACCUM_EXACT) exmy_format_parse("f32", &p->f32, NULL, 0); /* amax_d's rounding */

  const size_t m = p->m, n = p->n, ns = p->nseg;
  p->as = exmy__gemm_ws_get(ws, GEMM_WS_AS, (m * ns + 1) * sizeof(float));
  p->bs = exmy__gemm_ws_get(ws, GEMM_WS_BS, (n * ns + 1) * sizeof(float));
  if (!p->as || !p->bs) return exmy__fail(err, errlen, "GEMM: out of memory for %zu x %zu x %zu", m, n, k);
  if (p->acc.kind == EXMY_ACCUM_FORMAT && p->acc.acc_fmt.bits <= 16 &&
      (double)m * (double)n * (double)k > (double)((size_t)1 << p->acc.acc_fmt.bits)) {
    /* A decode table for the accumulator when the GEMM decodes more values than it holds. */
    const size_t nc = (size_t)1 << p->acc.acc_fmt.bits;
    p->acc_lut = malloc(nc * sizeof(double));
    if (p->acc_lut)
      for (size_t c = 0; c < nc; c++) p->acc_lut[c] = exmy_code_to_f64(&p->acc.acc_fmt, c);
  }
  /* k = 0: no elements, no scale groups along k; the sum is +0 and the scales are 1. */
  for (size_t s = 0; s < ns; s++) {
    const size_t l = s * p->seg;
    for (size_t i = 0; i < m; i++) p->as[i * ns + s] = k ? A->scale_inv[p->ta ? group_of(A, l, i) : group_of(A, i, l)] : 1.0f;
    for (size_t j = 0; j < n; j++) p->bs[j * ns + s] = k ? B->scale_inv[p->tb ? group_of(B, j, l) : group_of(B, l, j)] : 1.0f;
  }
  return decode == 1 ? exmy__gemm_plan_decode(p, err, errlen) : 0;
}

int exmy__gemm_plan_decode(gemm_plan *p, char *err, size_t errlen) {
  if (p->ad) return 0;
  const exmy_qtensor *A = p->A, *B = p->B;
  const size_t m = p->m, n = p->n, k = p->k;
  p->ad = malloc((m * k + 1) * sizeof(double));
  p->bd = malloc((n * k + 1) * sizeof(double));
  double *tmp = malloc(((A->rows * A->cols) > (B->rows * B->cols) ? A->rows * A->cols : B->rows * B->cols) *
                           sizeof(double) + sizeof(double));
  if (!p->ad || !p->bd || !tmp) {
    free(tmp);
    free(p->ad), free(p->bd);
    p->ad = p->bd = NULL;
    return exmy__fail(err, errlen, "GEMM: out of memory for %zu x %zu x %zu", m, n, k);
  }
  exmy_codes_to_f64(&A->fmt, A->codes, A->rows * A->cols, tmp);
#pragma omp parallel for schedule(static) if (m * k > EXMY_OMP_MIN_TENSOR)
  for (size_t i = 0; i < m; i++)
    for (size_t l = 0; l < k; l++) p->ad[i * k + l] = p->ta ? tmp[l * A->cols + i] : tmp[i * A->cols + l];
  exmy_codes_to_f64(&B->fmt, B->codes, B->rows * B->cols, tmp);
#pragma omp parallel for schedule(static) if (n * k > EXMY_OMP_MIN_TENSOR)
  for (size_t j = 0; j < n; j++)
    for (size_t l = 0; l < k; l++) p->bd[j * k + l] = p->tb ? tmp[j * B->cols + l] : tmp[l * B->cols + j];
  free(tmp);
  return 0;
}

/* The scales live in the workspace (its owner frees them). */
void exmy__gemm_plan_free(gemm_plan *p) {
  free(p->ad);
  free(p->bd);
  free(p->acc_lut);
  p->acc_lut = NULL;
  p->ad = p->bd = NULL;
  p->as = p->bs = NULL;
}
