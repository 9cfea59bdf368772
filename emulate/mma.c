/* mma.c: one matrix-unit instruction, D = A*B + C, bit for bit as its
 * datapath row (emulate/mma_table.c, docs/mma.md): the operands checked, and
 * each output a chain of fused sums over pieces of L products
 * (emulate/mma_fused.c, which the GEMM's tc accumulation runs too). */
#include "emulate/mma_internal.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the instruction --------------------------------------------------------- */

/* x as its operand format holds it: tf32 truncates (as the hardware reads an
 * fp32 register); anything else must be a value of the format. */
static int take(const exmy_format *f, double x, double *out, const char *what, size_t i, char *err, size_t errlen) {
  exmy_rounding r = exmy_rounding_default();
  const int tf32 = f->ebits == 8 && f->mbits == 10;
  if (tf32) r.mode = EXMY_RTZ;
  if (isnan(x)) {
    *out = x;
    return f->nan == EXMY_NAN_NONE ? exmy__fail(err, errlen, "mma: %s[%zu] is NaN, which %s cannot hold", what, i, f->name) : 0;
  }
  const uint64_t code = exmy_from_f64(f, &r, x, 0, NULL);
  const double v = exmy_code_to_f64(f, code);
  if (!tf32 && (v != x || signbit(v) != signbit(x)))
    return exmy__fail(err, errlen, "mma: %s[%zu] = %a is not a value of %s", what, i, x, f->name);
  *out = v;
  return 0;
}

int exmy_mma(const exmy_mma_instr *in, size_t m, size_t n, const double *a, const double *b, const double *c,
             const double *sa, const double *sb, void *d, char *err, size_t errlen) {
  if (!in || !a || !b || !c || !d) return exmy__fail(err, errlen, "mma: NULL argument");
  if (in->path < 0 || (size_t)in->path >= exmy__mma_npaths) return exmy__fail(err, errlen, "mma: instruction not parsed");
  if (in->has_scale && (!sa || !sb)) return exmy__fail(err, errlen, "mma: %s needs block scales", in->name);
  const mma_datapath *dp = &exmy__mma_paths[in->path];
  mma_unit u;
  if (exmy__mma_unit_init(&u, dp, &in->a_fmt, &in->b_fmt, in->has_scale ? &in->s_fmt : NULL, in->block, &in->d_fmt,
                          in->zero == EXMY_MMA_ZERO_V1, err, errlen))
    return -1;
  const size_t k = (size_t)in->k, nb = in->has_scale ? k / (size_t)in->block : 0;
  double *av = malloc(sizeof(double) * (m * k + k * n + 1));
  float *sv = malloc(sizeof(float) * (nb * (m + n) + 1)); /* scale values are floats (E8M0, E4M3) */
  if (!av || !sv) {
    free(av), free(sv);
    return exmy__fail(err, errlen, "mma: out of memory");
  }
  double *bv = av + m * k;
  float *sav = sv, *sbv = sv + nb * m;
  int rc = 0;
  for (size_t i = 0; i < m * k && !rc; i++) rc = take(&in->a_fmt, a[i], &av[i], "A", i, err, errlen);
  for (size_t i = 0; i < k * n && !rc; i++) rc = take(&in->b_fmt, b[i], &bv[i], "B", i, err, errlen);
  for (size_t i = 0; i < nb * (m + n) && !rc; i++) {
    double v;
    rc = i < nb * m ? take(&in->s_fmt, fabs(sa[i]), &v, "scale A", i, err, errlen)
                    : take(&in->s_fmt, fabs(sb[i - nb * m]), &v, "scale B", i - nb * m, err, errlen);
    sv[i] = (float)v;
  }
  for (size_t i = 0; i < m * n && !rc; i++) {
    double cv;
    rc = take(&in->c_fmt, c[i], &cv, "C", i, err, errlen);
  }
  const int L = (int)(k < (size_t)dp->L ? k : (size_t)dp->L);
  const size_t np = (k + (size_t)L - 1) / (size_t)L;
  if (dp->W && (k % (np * (size_t)dp->W) || in->has_scale || k > 64)) {
    free(av), free(sv);
    return exmy__fail(err, errlen, "mma: %s: k = %zu does not interleave in runs of %d", in->name, k, dp->W);
  }
  double ga[64], gb[64]; /* one interleaved piece's elements */
  for (size_t i = 0; i < m && !rc; i++)
    for (size_t j = 0; j < n; j++) {
      mma_piece p = {NULL, NULL, n, sav + i * nb, sbv + j, n, 0, L, c[i * n + j], &in->c_fmt};
      if (dp->c_last) p.c = 0, p.cf = &in->d_fmt; /* the pieces start from +0 */
      uint64_t code = 0;
      for (size_t pi = 0, l0 = 0; pi < np; pi++, l0 += (size_t)L) {
        p.a = av + i * k + l0;
        p.b = bv + l0 * n + j;
        p.s0 = l0;
        if (dp->W) { /* element l is in piece (l / W) mod np */
          int g = 0;
          for (size_t l = 0; l < k; l++)
            if ((l / (size_t)dp->W) % np == pi) ga[g] = av[i * k + l], gb[g++] = bv[l * n + j];
          p.a = ga, p.b = gb, p.bstride = 1;
        }
        code = exmy__mma_fused(&u, &p);
        p.c = exmy_code_to_f64(&in->d_fmt, code);
        p.cf = &in->d_fmt;
      }
      if (dp->c_last) code = exmy__mma_add_last(&u, code, c[i * n + j], &in->c_fmt);
      exmy_code_set(&in->d_fmt, d, i * n + j, code);
    }
  free(av), free(sv);
  return rc;
}
