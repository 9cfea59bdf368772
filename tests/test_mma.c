/* test_mma.c: exmy_mma's API (names, the v1 variant, errors) and the
 * promise that the GEMM's tc: presets and the instruction layer cannot
 * drift: exmy_gemm with a preset equals a chain of exmy_mma instructions (D
 * fed back as C) bit for bit, on random codes with zeros facing huge values.
 * The datapath arithmetic itself is checked against an independent exact
 * reference by test_mma_ref.py and against recorded GPUs by test_mma_replay.sh. */
#include "testutil.h"

#include <math.h>

static void test_names(void) {
  const size_t n = exmy_mma_count();
  CHECK(n > 100, "only %zu instruction names", n);
  char err[EXMY_ERRLEN];
  for (size_t i = 0; i < n; i++) {
    char name[160];
    exmy_mma_get(i, name, sizeof name);
    exmy_mma_instr in;
    CHECK(exmy_mma_parse(name, &in, err, sizeof err) == 0 && !strcmp(in.name, name) && in.zero == EXMY_MMA_ZERO_V2,
          "name %zu '%s' does not parse back (%s)", i, name, err);
  }
  static const struct { const char *text, *canonical, *path; int k; } ok[] = {
    {"sm_90:wgmma.f32.e4m3.e4m3", "sm_90:wgmma.f32.e4m3.e4m3", "hopper-fp8-f32", 32},
    {"sm_89:mma.m16n8k32.f32.e5m2", "sm_89:mma.m16n8k32.f32.e5m2.e5m2", "ada-fp8-f32", 32},
    {"sm_100:tcgen05.kind::mxf4nvf4", "sm_100:tcgen05.kind::mxf4nvf4", "blackwell-mxf4nvf4", 64},
    {"cdna3:v_mfma_f32_16x16x32_fp8", "cdna3:v_mfma_f32_16x16x32_fp8_fp8", "cdna3-fp8", 32},
    {"sm_90:wgmma.f32.bf16", "sm_90:wgmma.f32.bf16.bf16", "hopper-16bit-f32", 16},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    exmy_mma_instr in;
    const int rc = exmy_mma_parse(ok[i].text, &in, err, sizeof err);
    CHECK(rc == 0 && !strcmp(in.name, ok[i].canonical) && !strcmp(in.datapath, ok[i].path) && in.k == ok[i].k,
          "'%s': rc %d name '%s' datapath '%s' k %d (%s)", ok[i].text, rc, rc ? "" : in.name, rc ? "" : in.datapath,
          rc ? 0 : in.k, err);
  }
  exmy_mma_instr in;
  CHECK(exmy_mma_parse("sm_90:wgmma.f32.bf16,zero=v1", &in, err, sizeof err) == 0 && in.zero == EXMY_MMA_ZERO_V1,
        "zero=v1 not taken");
  static const char *bad[] = {"", "sm_90", "sm_90:wgmma.f32.e4m3.e2m1", "sm_91:wgmma.f32.e4m3.e4m3",
                              "sm_90:wgmma.f32.e4m3.e4m3,zero=v3", "sm_89:mma.m16n8k32.f32.e4m3.e5m2.e5m2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    CHECK(exmy_mma_parse(bad[i], &in, err, sizeof err) == -1 && strstr(err, "mma:"), "'%s' accepted (%s)", bad[i], err);
  }
  CHECK(exmy_mma_parse(NULL, &in, err, sizeof err) == -1, "NULL accepted");
}

static void test_errors(void) {
  char err[EXMY_ERRLEN];
  exmy_mma_instr in;
  exmy_mma_parse("sm_90:wgmma.f32.e4m3.e4m3", &in, err, sizeof err);
  double a[32], b[32], c = 0;
  for (int l = 0; l < 32; l++) a[l] = b[l] = 1;
  uint32_t d;
  a[3] = 0.3; /* not an e4m3 value */
  CHECK(exmy_mma(&in, 1, 1, a, b, &c, NULL, NULL, &d, err, sizeof err) == -1 && strstr(err, "A[3]"), "0.3 taken: %s", err);
  a[3] = 1;
  CHECK(exmy_mma(&in, 1, 1, a, b, &c, NULL, NULL, &d, err, sizeof err) == 0 && d == 0x42000000u, "32 ones: 0x%08x", d);
  exmy_mma_parse("sm_100:tcgen05.kind::mxf4nvf4", &in, err, sizeof err);
  double a4[64] = {0}, b4[64] = {0};
  CHECK(exmy_mma(&in, 1, 1, a4, b4, &c, NULL, NULL, &d, err, sizeof err) == -1 && strstr(err, "scales"),
        "no scales accepted: %s", err);
  /* tf32 operands are truncated, as an fp32 register is read */
  exmy_mma_parse("sm_90:wgmma.f32.tf32", &in, err, sizeof err);
  double t[8] = {1 + 0x1p-20, 0, 0, 0, 0, 0, 0, 0}, u[8] = {1, 0, 0, 0, 0, 0, 0, 0};
  CHECK(exmy_mma(&in, 1, 1, t, u, &c, NULL, NULL, &d, err, sizeof err) == 0 && d == 0x3f800000u, "tf32: 0x%08x", d);
}

/* GEMM preset == chain of instructions: the preset's fused groups are the
 * instruction's (same table row), D of one instruction is C of the next. */
static void test_gemm_chain(uint64_t *st) {
  static const struct { const char *accum, *instr, *fmt; int kmul; } tab[] = {
    {"tc:hopper-fastacc", "sm_90:wgmma.f32.e4m3.e4m3", "e4m3fn", 3},
    {"tc:ada-fastacc", "sm_89:mma.m16n8k32.f32.e5m2.e5m2", "e5m2", 2},
    {"tc:hopper-bf16", "sm_90:wgmma.f32.bf16.bf16", "bf16", 4},
    {"tc:ampere-bf16", "sm_80:mma.m16n8k16.f32.bf16.bf16", "bf16", 3},
    {"tc:blackwell", "sm_100:tcgen05.kind::f8f6f4.f32.e4m3.e4m3", "e4m3fn", 2},
    {"tc:hopper-bf16,zero=v1", "sm_90:wgmma.f32.bf16.bf16,zero=v1", "bf16", 2},
  };
  char err[EXMY_ERRLEN];
  for (size_t t = 0; t < sizeof tab / sizeof tab[0]; t++) {
    exmy_mma_instr in;
    exmy_accum acc;
    if (exmy_mma_parse(tab[t].instr, &in, err, sizeof err) || exmy_accum_parse(tab[t].accum, &acc, err, sizeof err)) {
      CHECK(0, "%s", err);
      continue;
    }
    const exmy_format f = tu_format(tab[t].fmt), f32 = tu_format("f32");
    const size_t m = 6, n = 5, K = (size_t)in.k, k = K * (size_t)tab[t].kmul;
    uint16_t *ac = calloc(m * k, 2), *bc = calloc(k * n, 2);
    double *av = calloc(m * k, 8), *bv = calloc(k * n, 8), *cv = calloc(m * n, 8), *ach = calloc(m * K, 8),
           *bch = calloc(K * n, 8);
    uint32_t *dg = calloc(m * n, 4), *dm = calloc(m * n, 4);
    exmy_rounding rz = exmy_rounding_default();
    rz.mode = EXMY_RTZ;
    /* moderate values (2^-20 .. 2), so that a zero facing a huge value (v1:
     * exponent -126 + e of the huge one) sets the group's largest exponent */
#define MODERATE(r) exmy_from_f64(&f, &rz, ldexp(1 + (double)((r) & 0xffff) / 65536, -(int)(((r) >> 16) % 21)), 0, NULL)
    for (size_t i = 0; i < m * k; i++) {
      const uint64_t r = tu_next(st);
      const size_t row = i / k, l = i % k;
      uint64_t code = row % 3 == 2 ? (r >> 8) % (f.max_mag + 1) : MODERATE(r >> 2);
      if (row % 3 == 0 && l % 2 == 0) code = 0;           /* zeros ... */
      code |= (r & 1) ? f.sign_mask : 0;
      exmy_code_set(&f, ac, i, code);
      av[i] = exmy_code_to_f64(&f, code);
    }
    for (size_t i = 0; i < k * n; i++) {
      const uint64_t r = tu_next(st);
      const size_t l = i / n, col = i % n;
      uint64_t code = col % 3 == 2 ? (r >> 8) % (f.max_mag + 1) : MODERATE(r >> 2);
      if (col % 3 == 0 && l % 2 == 0 && (r & 2)) code = f.max_mag; /* ... facing huge values */
      code |= (r & 1) ? f.sign_mask : 0;
      exmy_code_set(&f, bc, i, code);
      bv[i] = exmy_code_to_f64(&f, code);
    }
    /* GEMM: A m x k, B as n x k (trans_b) so that codes are per output column */
    uint16_t *bt = calloc(n * k, 2);
    for (size_t l = 0; l < k; l++)
      for (size_t j = 0; j < n; j++) exmy_code_set(&f, bt, j * k + l, exmy_code_get(&f, bc, l * n + j));
    exmy_qtensor qa, qb;
    exmy_qtensor_view(&f, ac, m, k, NULL, &qa);
    exmy_qtensor_view(&f, bt, n, k, NULL, &qb);
    exmy_gemm_args g;
    exmy_gemm_args_init(&g);
    g.a = &qa;
    g.b = &qb;
    g.trans_b = 1;
    g.accum = &acc;
    g.d_fmt = &f32;
    unsigned flags = 0;
    CHECK(exmy_gemm(&g, dg, NULL, &flags, err, sizeof err) == 0, "%s: %s", tab[t].accum, err);
    /* the chain of instructions */
    for (size_t l0 = 0; l0 < k; l0 += K) {
      for (size_t i = 0; i < m; i++)
        for (size_t l = 0; l < K; l++) ach[i * K + l] = av[i * k + l0 + l];
      for (size_t l = 0; l < K; l++)
        for (size_t j = 0; j < n; j++) bch[l * n + j] = bv[(l0 + l) * n + j];
      CHECK(exmy_mma(&in, m, n, ach, bch, cv, NULL, NULL, dm, err, sizeof err) == 0, "%s: %s", tab[t].instr, err);
      for (size_t i = 0; i < m * n; i++) cv[i] = tu_f32(dm[i]);
    }
    size_t bad = 0;
    for (size_t i = 0; i < m * n; i++)
      if (dg[i] != dm[i] && !(isnan(tu_f32(dg[i])) && isnan(tu_f32(dm[i])))) {
        if (!bad) printf("  %s (%zu, %zu): gemm 0x%08x, %s chain 0x%08x\n", tab[t].accum, i / n, i % n, dg[i], tab[t].instr, dm[i]);
        bad++;
      }
    CHECK(bad == 0, "%s vs %s: %zu of %zu outputs differ", tab[t].accum, tab[t].instr, bad, m * n);
    free(ac), free(bc), free(bt), free(av), free(bv), free(cv), free(ach), free(bch), free(dg), free(dm);
  }
}

int main(void) {
  uint64_t st = tu_seed(15);
  test_names();
  test_errors();
  for (int r = 0; r < 20; r++) test_gemm_chain(&st);
  return tu_finish("test_mma");
}
