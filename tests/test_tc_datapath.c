/* test_tc_datapath.c: one datapath model (issue 32).  For every GEMM tc:
 * preset and every operand kind the preset's GPU takes (per-tensor scaled
 * FP8, bf16/f16, MXFP8/MXFP4 with E8M0 block-32 scales, NVFP4 with E4M3
 * block-16 scales), exmy_gemm's D equals, bit for bit, the instruction the
 * GPU issues for those operands (exmy_mma, this file's table) chained over k:
 * C of one instruction is D of the one before, starting from +0, and each
 * promotion interval's sum is added into an fp32 accumulator (docs/gemm.md).
 * The GEMM turns a zero group result into +0 (docs/gemm.md, tc step 4), so
 * the chain here does too.  D is f32 with the epilogue's s * P (s = the
 * per-tensor scales, or the NVFP4 tensor scales, alpha = 1).
 *
 * The operands are random codes: whole exponent ranges, zeros, leading
 * products that cancel, NVFP4 scales from 2^-9 to 2^8 (and zero), E8M0
 * scales 2^-20..2^20; k a multiple of the instruction's (NVFP4: of 16, the
 * last instruction zero-padded).  A failure prints the output's A row, B column and
 * scales in hex.  EXMY_TEST_SEED changes the inputs. */
#include "testutil.h"

#include <math.h>

enum { K_TENSOR, K_PLAIN, K_MX, K_NVFP4 };

/* preset, operand kind, A's and B's element formats, the instruction it issues */
static const struct {
  const char *preset;
  int kind;
  const char *fa, *fb, *instr;
} cases[] = {
  {"hopper", K_TENSOR, "e4m3fn", "e4m3fn", "sm_90:wgmma.f32.e4m3.e4m3"},
  {"hopper", K_TENSOR, "e5m2", "e4m3fn", "sm_90:wgmma.f32.e5m2.e4m3"},
  {"hopper-fastacc", K_TENSOR, "e4m3fn", "e5m2", "sm_90:wgmma.f32.e4m3.e5m2"},
  {"ada", K_TENSOR, "e4m3fn", "e4m3fn", "sm_89:mma.m16n8k32.f32.e4m3.e4m3"},
  {"ada-fastacc", K_TENSOR, "e5m2", "e5m2", "sm_89:mma.m16n8k32.f32.e5m2.e5m2"},
  {"hopper-bf16", K_PLAIN, "bf16", "bf16", "sm_90:wgmma.f32.bf16.bf16"},
  {"hopper-bf16", K_PLAIN, "f16", "f16", "sm_90:wgmma.f32.f16.f16"},
  {"ampere-bf16", K_PLAIN, "bf16", "bf16", "sm_80:mma.m16n8k16.f32.bf16.bf16"},
  {"ampere-bf16", K_PLAIN, "f16", "f16", "sm_80:mma.m16n8k16.f32.f16.f16"},
  {"blackwell", K_TENSOR, "e4m3fn", "e4m3fn", "sm_100:tcgen05.kind::f8f6f4.f32.e4m3.e4m3"},
  {"blackwell", K_TENSOR, "e5m2", "e4m3fn", "sm_100:tcgen05.kind::f8f6f4.f32.e5m2.e4m3"},
  {"blackwell", K_MX, "e4m3fn", "e4m3fn", "sm_100:tcgen05.kind::mxf8f6f4.e4m3.e4m3"},
  {"blackwell", K_MX, "e5m2", "e4m3fn", "sm_100:tcgen05.kind::mxf8f6f4.e5m2.e4m3"},
  {"blackwell", K_MX, "e4m3fn", "e2m1fn", "sm_100:tcgen05.kind::mxf8f6f4.e4m3.e2m1"},
  /* MXFP4 x MXFP4 runs kind::mxf4 (docs/mma.md, "MXFP4 on Blackwell") */
  {"blackwell", K_MX, "e2m1fn", "e2m1fn", "sm_100:tcgen05.kind::mxf4"},
  {"blackwell", K_NVFP4, "e2m1fn", "e2m1fn", "sm_100:tcgen05.kind::mxf4nvf4"},
  /* zero=v1 keeps each kind of operands' row (exmy_accum.tc_path), with v1's zero rule */
  {"hopper,zero=v1", K_TENSOR, "e4m3fn", "e5m2", "sm_90:wgmma.f32.e4m3.e5m2,zero=v1"},
  {"blackwell,zero=v1", K_TENSOR, "e5m2", "e4m3fn", "sm_100:tcgen05.kind::f8f6f4.f32.e5m2.e4m3,zero=v1"},
  {"blackwell,zero=v1", K_MX, "e4m3fn", "e4m3fn", "sm_100:tcgen05.kind::mxf8f6f4.e4m3.e4m3,zero=v1"},
  {"blackwell,zero=v1", K_MX, "e2m1fn", "e2m1fn", "sm_100:tcgen05.kind::mxf4,zero=v1"},
  {"blackwell,zero=v1", K_NVFP4, "e2m1fn", "e2m1fn", "sm_100:tcgen05.kind::mxf4nvf4,zero=v1"},
  /* rows named by path keys: Hopper's FP8 row for plain and MX operands, Blackwell's for E2M1 x E2M1 */
  {"path=hopper-fp8-f32,fp4-path=blackwell-mxf4nvf4", K_TENSOR, "e4m3fn", "e4m3fn", "sm_90:wgmma.f32.e4m3.e4m3"},
  {"path=hopper-fp8-f32,fp4-path=blackwell-mxf4nvf4", K_NVFP4, "e2m1fn", "e2m1fn", "sm_100:tcgen05.kind::mxf4nvf4"},
};
#define NCASE (sizeof cases / sizeof cases[0])

/* A random code of f: any finite value (a quarter of them zero), or, for a
 * cancelling row, the code of position l mirrored from l - 16 with the sign flipped. */
static uint64_t rand_code(const exmy_format *f, uint64_t *st, int spread) {
  const uint64_t r = tu_next(st);
  if (r % 4 == 0) return (r >> 8 & 1) ? f->sign_mask : 0;
  uint64_t mag = (r >> 16) % (f->max_mag + 1);
  if (spread && f->bits > 8) { /* 16-bit: often near 1, sometimes tiny (zero exponents matter there) */
    const exmy_format *g = f;
    exmy_rounding rz = exmy_rounding_default();
    rz.mode = EXMY_RTZ;
    const int e = (r >> 40) % 4 == 0 ? -(int)((r >> 44) % 150) : (int)((r >> 44) % 17) - 8;
    mag = exmy_from_f64(g, &rz, ldexp(1 + (double)((r >> 24) & 0xffff) / 65536, e), 0, NULL) & ~g->sign_mask;
  }
  return mag | ((r >> 9 & 1) ? f->sign_mask : 0);
}

typedef struct prob {
  size_t m, n, k, blk, nb;
  exmy_format fa, fb, sf;
  uint16_t *ac, *bc;   /* A m x k, B stored n x k (trans_b) */
  double *av, *bv;     /* the same as values, B as k x n for exmy_mma */
  float *sa, *sb;      /* block scales: A m x nb, B n x nb (GEMM layout) */
  uint8_t *sac, *sbc;  /* their codes */
  float ta, tb;        /* tensor scales */
} prob;

static void make(prob *p, int c, uint64_t *st, size_t K, size_t promote) {
  memset(p, 0, sizeof *p);
  p->fa = tu_format(cases[c].fa);
  p->fb = tu_format(cases[c].fb);
  const int kind = cases[c].kind;
  p->blk = kind == K_MX ? 32 : kind == K_NVFP4 ? 16 : 0;
  if (p->blk) p->sf = tu_format(kind == K_MX ? "e8m0fnu" : "e4m3fn");
  p->m = 1 + tu_next(st) % 5;
  p->n = 1 + tu_next(st) % 5;
  const size_t unit = promote > K ? promote : K;
  p->k = K * (1 + tu_next(st) % (unit / K + 3));
  /* NVFP4: any multiple of 16 (a last fused sum of fewer than 64, the
   * instruction's zero-padded: zero products and their groups add nothing) */
  if (kind == K_NVFP4 && tu_next(st) % 2) p->k = 16 * (1 + tu_next(st) % 16);
  const size_t m = p->m, n = p->n, k = p->k;
  p->nb = p->blk ? k / p->blk : 0;
  p->ac = calloc(m * k, 2), p->bc = calloc(n * k, 2);
  p->av = calloc(m * k, 8), p->bv = calloc(k * n, 8);
  p->sa = calloc(m * p->nb + 1, 4), p->sb = calloc(n * p->nb + 1, 4);
  p->sac = calloc(m * p->nb + 1, 1), p->sbc = calloc(n * p->nb + 1, 1);
  for (size_t i = 0; i < m * k; i++) {
    const size_t l = i % k;
    uint64_t code = rand_code(&p->fa, st, 1);
    if ((i / k) % 3 == 1 && l >= 16 && l % 64 < 32) /* a row whose products cancel the ones 16 before */
      code = exmy_code_get(&p->fa, p->ac, i - 16) ^ p->fa.sign_mask;
    exmy_code_set(&p->fa, p->ac, i, code);
    p->av[i] = exmy_code_to_f64(&p->fa, code);
  }
  for (size_t t = 0; t < n * k; t++) {
    const size_t j = t / k, l = t % k;
    uint64_t code = rand_code(&p->fb, st, 1);
    if (l >= 16 && l % 64 < 32 && j % 2 == 0) code = exmy_code_get(&p->fb, p->bc, t - 16);
    exmy_code_set(&p->fb, p->bc, t, code);
    p->bv[l * n + j] = exmy_code_to_f64(&p->fb, code);
  }
  for (size_t t = 0; t < (m + n) * p->nb; t++) {
    const uint64_t r = tu_next(st);
    uint8_t code;
    if (kind == K_MX) code = (uint8_t)(127 - 20 + r % 41); /* 2^-20 .. 2^20 */
    else code = r % 16 == 0 ? 0 : (uint8_t)(1 + (r >> 8) % 0x5f); /* 0, 2^-9 .. 2^8 (E4M3 codes 1..0x5f) */
    const float v = (float)exmy_code_to_f64(&p->sf, code);
    if (t < m * p->nb) p->sac[t] = code, p->sa[t] = v;
    else p->sbc[t - m * p->nb] = code, p->sb[t - m * p->nb] = v;
  }
  /* tensor scales (per-tensor FP8, NVFP4's fp32 tensor scale) */
  p->ta = kind == K_TENSOR || kind == K_NVFP4 ? ldexpf(1.0f + (float)(tu_next(st) % 256) / 256, (int)(tu_next(st) % 9) - 4) : 1.0f;
  p->tb = kind == K_TENSOR || kind == K_NVFP4 ? ldexpf(1.0f + (float)(tu_next(st) % 256) / 256, (int)(tu_next(st) % 9) - 4) : 1.0f;
}

static void unmake(prob *p) {
  free(p->ac), free(p->bc), free(p->av), free(p->bv), free(p->sa), free(p->sb), free(p->sac), free(p->sbc);
}

/* A qtensor of rows x k codes with the case's scales (a view: nothing owned). */
static void qt(const prob *p, int kind, const exmy_format *f, void *codes, size_t rows, float *s, uint8_t *sc, float *ts,
               exmy_qtensor *q) {
  if (kind == K_TENSOR || kind == K_PLAIN) {
    exmy_qtensor_view(f, codes, rows, p->k, kind == K_TENSOR ? ts : NULL, q);
    return;
  }
  exmy_qtensor_view(f, codes, rows, p->k, NULL, q);
  q->block_rows = 1;
  q->block_cols = p->blk;
  q->srows = rows;
  q->scols = p->nb;
  q->scale = s; /* read by nothing here */
  q->scale_inv = s;
  q->scale_codes = sc;
  q->recipe = kind == K_MX ? EXMY_RECIPE_MX : EXMY_RECIPE_NVFP4;
  q->tensor_scale = q->tensor_scale_inv = kind == K_NVFP4 ? *ts : 1.0f;
}

static void dump(const char *what, const exmy_format *f, const void *codes, size_t base, size_t count, size_t stride) {
  printf("    %s:", what);
  for (size_t l = 0; l < count; l++) printf("%s0x%llx", l ? "," : "", (unsigned long long)exmy_code_get(f, codes, base + l * stride));
  printf("\n");
}

static void run(int c, uint64_t *st) {
  char err[EXMY_ERRLEN], text[128];
  exmy_mma_instr in;
  exmy_accum acc;
  snprintf(text, sizeof text, "tc:%s", cases[c].preset);
  if (exmy_mma_parse(cases[c].instr, &in, err, sizeof err) || exmy_accum_parse(text, &acc, err, sizeof err)) {
    CHECK(0, "%s", err);
    return;
  }
  const int kind = cases[c].kind;
  const size_t K = (size_t)in.k, promote = acc.chunk;
  prob p;
  make(&p, c, st, K, promote);
  const size_t m = p.m, n = p.n, k = p.k;
  const exmy_format f32 = tu_format("f32");
  exmy_qtensor qa, qb;
  qt(&p, kind, &p.fa, p.ac, m, p.sa, p.sac, &p.ta, &qa);
  qt(&p, kind, &p.fb, p.bc, n, p.sb, p.sbc, &p.tb, &qb);
  exmy_gemm_args g;
  exmy_gemm_args_init(&g);
  g.a = &qa;
  g.b = &qb;
  g.trans_b = 1;
  g.accum = &acc;
  g.d_fmt = &f32;
  uint32_t *dg = calloc(m * n, 4), *dr = calloc(m * n, 4), dm;
  unsigned flags = 0;
  const int rc = exmy_gemm(&g, dg, NULL, &flags, err, sizeof err);
  CHECK(rc == 0, "%s: %s", text, err);
  const int rc2 = exmy_gemm_ref(&g, dr, NULL, &flags, err, sizeof err);
  CHECK(rc2 == 0, "%s: %s", text, err);
  /* the chain of instructions, one output at a time */
  double *a1 = malloc(K * 8), *b1 = malloc(K * 8), sa1[8], sb1[8];
  const size_t nbK = p.blk ? K / p.blk : 0;
  size_t bad = 0;
  for (size_t i = 0; i < m && rc == 0; i++)
    for (size_t j = 0; j < n; j++) {
      float F = 0.0f, P = 0.0f;
      const size_t piece = promote ? promote : k;
      for (size_t q0 = 0; q0 < k; q0 += piece) {
        double cv = 0.0;
        for (size_t l0 = q0; l0 < q0 + piece && l0 < k; l0 += K) {
          for (size_t l = 0; l < K; l++) {
            const int in_k = l0 + l < k; /* past k: zeros (NVFP4) */
            a1[l] = in_k ? p.av[i * k + l0 + l] : 0.0;
            b1[l] = in_k ? p.bv[(l0 + l) * n + j] : 0.0;
          }
          for (size_t s = 0; s < nbK; s++) {
            const size_t gi = l0 / p.blk + s;
            sa1[s] = gi < p.nb ? p.sa[i * p.nb + gi] : 1.0;
            sb1[s] = gi < p.nb ? p.sb[j * p.nb + gi] : 1.0;
          }
          if (exmy_mma(&in, 1, 1, a1, b1, &cv, sa1, sb1, &dm, err, sizeof err)) {
            CHECK(0, "%s: %s", cases[c].instr, err);
            break;
          }
          cv = tu_f32(dm);
          if (cv == 0) cv = 0.0; /* the GEMM's zero group result: +0 */
        }
        P = (float)cv;
        F = promote ? F + P : P;
      }
      const float s = (1.0f * p.ta) * p.tb, z = s * F;
      const uint32_t want = isnan(z) ? 0x7FC00000u : tu_bits32(z);
      const int nan_ok = isnan(z) && isnan(tu_f32(dg[i * n + j])) && isnan(tu_f32(dr[i * n + j]));
      if (!nan_ok && (dg[i * n + j] != want || dr[i * n + j] != want)) {
        if (bad++ == 0) {
          printf("  tc:%s %s operands, %s chained (m %zu n %zu k %zu) output (%zu, %zu): exmy_gemm 0x%08x, "
                 "exmy_gemm_ref 0x%08x, chain 0x%08x\n",
                 cases[c].preset, cases[c].fa, cases[c].instr, m, n, k, i, j, dg[i * n + j], dr[i * n + j], want);
          dump("A row", &p.fa, p.ac, i * k, k, 1);
          dump("B col", &p.fb, p.bc, j * k, k, 1);
          if (p.nb) {
            dump("A scales", &p.sf, p.sac, i * p.nb, p.nb, 1);
            dump("B scales", &p.sf, p.sbc, j * p.nb, p.nb, 1);
          }
          printf("    tensor scales %a %a\n", (double)p.ta, (double)p.tb);
        }
      }
    }
  CHECK(bad == 0, "tc:%s with %s x %s operands vs %s: %zu of %zu outputs differ", cases[c].preset, cases[c].fa,
        cases[c].fb, cases[c].instr, bad, m * n);
  free(a1), free(b1), free(dg), free(dr);
  unmake(&p);
}

int main(void) {
  uint64_t st = tu_seed(32);
  /* every preset is in the table */
  for (size_t i = 0; i < exmy_accum_tc_preset_count(); i++) {
    int seen = 0;
    for (size_t c = 0; c < NCASE; c++) seen |= !strcmp(cases[c].preset, exmy_accum_tc_preset_get(i));
    CHECK(seen, "preset tc:%s has no case", exmy_accum_tc_preset_get(i));
  }
  for (int r = 0; r < 200; r++)
    for (size_t c = 0; c < NCASE; c++) run((int)c, &st);
  return tu_finish("test_tc_datapath");
}
