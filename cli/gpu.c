/* gpu.c: `exmy gpu-check` (the device against the CPU models: cuBLASLt FP8
 * GEMMs, the probe kernels, device quantization over all float32 inputs)
 * and `exmy gpu-probe` (the tensor-core probe of one engine, the CPU model
 * included).  Exit 77 with one line when there is no CUDA build or device.
 * docs/gpu-crosscheck.md. */
#include "cli/cli.h"
#include "emulate/round_core.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_SKIP 77

const char *gpu_check_usage =
  "usage: exmy gpu-check [--quick] [--model MODEL] [--seed S] [--device N] [--only PARTS]\n"
  "Run FP8 GEMMs on the GPU through cuBLASLt (e4m3 x e4m3, e4m3 x e5m2, e5m2 x e4m3; D f32,\n"
  "bf16, e4m3; fast accumulation off and on; shapes 16..8192, k up to 16384; random and\n"
  "adversarial inputs) and compare sampled outputs with the CPU model of this GPU (sm_89\n"
  "tc:ada, sm_90 tc:hopper / tc:hopper-fastacc, sm_100+ tc:blackwell), exact and fp32:\n"
  "per case the share of outputs identical to the model, the bits that differ, and the\n"
  "largest ulp error against each.  Then the tensor-core probe on the raw instructions and\n"
  "on cuBLASLt against the model's parameters, and device quantization against the host\n"
  "over all 2^32 float32 inputs (hardware e4m3fn/e5m2 conversions, both saturations, and\n"
  "the generic kernel for several formats and modes).\n"
  "  --quick        small shapes, a sample of 2^24 float32 inputs\n"
  "  --model MODEL  accumulation model for both fast-accumulation settings (exmy gemm --help)\n"
  "  --seed S       input generator seed (default 1)\n"
  "  --device N     CUDA device (default 0)\n"
  "  --only PARTS   comma-separated subset of gemm, probe, quant\n"
  "Exit 0 when everything matches the model, 1 on any mismatch, 77 without CUDA or GPU.\n";

const char *gpu_probe_usage =
  "usage: exmy gpu-probe [--engine ENGINE] [--a FORMAT] [--b FORMAT] [--device N] [--quiet]\n"
  "Infer the tensor-core accumulation of one engine from crafted dot products and print it\n"
  "as an accumulation model (tc:g=..,f=..,align=..,out=..,norm=..,promote=..).\n"
  "  --engine ENGINE  mma (mma.sync m16n8k32, sm_89+), wgmma (m64n8k32, sm_90a), lt (cuBLASLt),\n"
  "                   lt-fastacc, or model:MODEL (the CPU model, no GPU needed); default lt\n"
  "  --a, --b FORMAT  operand formats, e4m3fn (default) or e5m2\n"
  "  --device N       CUDA device (default 0)\n"
  "  --quiet          print only the model\n";

static void skip(const char *cmd, const char *why) {
  fflush(stdout);
  fprintf(stderr, "exmy: %s: skipped: %s\n", cmd, why);
  exit(EXIT_SKIP);
}

/* ---- gpu-probe ------------------------------------------------------------ */

static int parse_engine(const char *v, exmy_gpu_engine *e) {
  if (!strcmp(v, "mma")) *e = EXMY_GPU_ENGINE_MMA;
  else if (!strcmp(v, "wgmma")) *e = EXMY_GPU_ENGINE_WGMMA;
  else if (!strcmp(v, "lt")) *e = EXMY_GPU_ENGINE_LT;
  else if (!strcmp(v, "lt-fastacc")) *e = EXMY_GPU_ENGINE_LT_FASTACC;
  else return -1;
  return 0;
}

static void print_probe(const exmy_probe_result *r) {
  printf("products exact:   %s (%ld pairs, %ld not exact; subnormal operands %s)\n", r->products_exact ? "yes" : "no",
         r->pairs, r->pairs_inexact, r->subnormals_exact ? "exact" : "NOT exact");
  printf("NaN operand:      %s (0x%08x)\n", r->nan_seen ? "NaN" : "not NaN", (unsigned)r->nan_bits);
  printf("group g:          %d\n", r->g);
  printf("alignment f:      %d bits, %s, exponent %s, negative terms toward %s\n", r->f,
         r->align_rne == 1 ? "nearest even" : r->align_rne == 0 ? "truncated" : "?",
         r->nominal_exp == 1 ? "ea+eb" : r->nominal_exp == 0 ? "renormalized" : "?",
         r->neg_toward_zero == 1 ? "zero" : r->neg_toward_zero == 0 ? "-inf" : "?");
  printf("output:           %d fraction bits, %s\n", r->out,
         r->norm_rne == 1 ? "nearest even" : r->norm_rne == 0 ? "truncated" : "?");
  if (r->promote_seen == 1) printf("promotion:        every %zu of k\n", r->promote);
  else if (r->promote_seen == 0) printf("promotion:        none\n");
  else printf("promotion:        not observable\n");
  printf("confirm:          %ld random dot products, %ld differ from the inferred model\n", r->confirm_dots,
         r->confirm_mismatches);
  if (r->notes[0]) printf("notes:            %s\n", r->notes);
  printf("model:            %s\n", r->complete ? r->accum : "(incomplete)");
  char match[256], nearest[64], diff[256];
  if (exmy_probe_match(r, match, sizeof match, nearest, sizeof nearest, diff, sizeof diff))
    printf("preset:           %s (bit for bit)\n", match);
  else
    printf("preset:           no preset matches; nearest %s, differs in: %s\n", nearest, diff);
}

int cmd_gpu_probe(int argc, char **argv) {
  const char *engine = "lt", *fa_text = "e4m3fn", *fb_text = "e4m3fn";
  int device = 0, quiet = 0;
  cli_opts o;
  cli_opts_init(&o, "gpu-probe", argc, argv);
  while (cli_next(&o)) {
    if (!strcmp(o.key, "--engine")) engine = cli_value(&o);
    else if (!strcmp(o.key, "--a")) fa_text = cli_value(&o);
    else if (!strcmp(o.key, "--b")) fb_text = cli_value(&o);
    else if (!strcmp(o.key, "--device")) device = (int)cli_parse_u64("--device", cli_value(&o), 0, 63);
    else if (!strcmp(o.key, "--quiet")) { cli_no_value(&o); quiet = 1; }
    else if (o.positional) cli_die("gpu-probe: unexpected argument '%s'", argv[o.i]);
    else cli_die("gpu-probe: unknown option '%s' (see exmy gpu-probe --help)", argv[o.i]);
  }
  exmy_format fa, fb;
  cli_parse_format(fa_text, &fa);
  cli_parse_format(fb_text, &fb);
  char err[EXMY_ERRLEN];
  exmy_probe_engine eng;
  exmy_accum acc;
  exmy_gpu_probe_ctx ctx = {device, EXMY_GPU_ENGINE_LT};
  if (!strncmp(engine, "model:", 6)) {
    if (exmy_accum_parse(engine + 6, &acc, err, sizeof err)) cli_die("gpu-probe: --engine: %s", err);
    eng.name = engine;
    eng.dot = exmy_probe_model_dot;
    eng.ctx = &acc;
    eng.k_max = 16384;
  } else {
    if (parse_engine(engine, &ctx.engine))
      cli_die("gpu-probe: bad engine '%s' (accepted: mma, wgmma, lt, lt-fastacc, model:MODEL)", engine);
    if (!strcmp(fa.name, "e5m2") && !strcmp(fb.name, "e5m2") && ctx.engine >= EXMY_GPU_ENGINE_LT)
      cli_die("gpu-probe: e5m2 x e5m2: cuBLASLt has no e5m2 x e5m2 FP8 GEMM (make one operand e4m3fn)");
    /* no GPU at all, or a device without the engine's instruction: skip; a
     * device that does not exist or fails: an error */
    exmy_gpu_info info;
    if (exmy_gpu_query(0, &info, err, sizeof err)) skip("gpu-probe", err);
    if (exmy_gpu_query(ctx.device, &info, err, sizeof err)) cli_die("gpu-probe: %s", err);
    if (exmy_gpu_probe_engine(&ctx, &eng, err, sizeof err)) skip("gpu-probe", err);
  }
  exmy_probe_result r;
  if (exmy_probe_run(&eng, &fa, &fb, quiet ? NULL : stdout, &r, err, sizeof err)) cli_die("gpu-probe: %s", err);
  if (quiet) printf("%s\n", r.complete ? r.accum : "incomplete");
  else print_probe(&r);
  return r.complete ? 0 : 1;
}

/* ---- gpu-check: GEMMs ---------------------------------------------------- */

typedef enum { PAT_NORMAL, PAT_WIDE, PAT_STALL, PAT_CANCEL, PAT_TINY, PAT_NAN } pattern;
static const char *pat_name[] = {"normal", "wide", "stall", "cancel", "tiny", "nan"};

/* Codes of f for an operand: normal = values of about unit size, wide = any
 * finite code, stall = every element 1/16 (the tensor core stalls at 64),
 * cancel = +x/-x pairs along k, tiny = subnormals and the smallest normals,
 * nan = normal with a few NaNs. */
static void fill(const exmy_format *f, pattern pat, uint8_t *c, size_t rows, size_t cols, int along_k_is_cols,
                 uint64_t *s) {
  exmy_rounding r = exmy_rounding_default();
  uint8_t sixteenth = (uint8_t)exmy_from_f64(f, &r, 1.0 / 16, 0, NULL);
  for (size_t i = 0; i < rows; i++)
    for (size_t j = 0; j < cols; j++) {
      size_t kk = along_k_is_cols ? j : i;
      uint64_t z = exmy__splitmix64(s);
      uint8_t v;
      switch (pat) {
      case PAT_STALL: v = sixteenth; break;
      case PAT_TINY: v = (uint8_t)((z & 0x80) | ((z >> 8) % (2u << f->mbits))); break;
      case PAT_WIDE:
        do { v = (uint8_t)z; z = exmy__splitmix64(s); } while (exmy_classify(f, v) >= EXMY_CLASS_INF);
        break;
      default: {
        int e = (int)((z >> 8) % 7) - 3;
        double x = ldexp(1.0 + (double)((z >> 16) % 1024) / 1024, e) * ((z & 1) ? -1 : 1);
        v = (uint8_t)exmy_from_f64(f, &r, x, 0, NULL);
        if (pat == PAT_NAN && (z >> 40) % 997 == 0) v = (uint8_t)f->nan_code;
      }
      }
      if (pat == PAT_CANCEL && (kk & 1)) {
        /* element k odd repeats element k-1 with the sign flipped (on A only) */
        size_t prev = along_k_is_cols ? i * cols + j - 1 : (i - 1) * cols + j;
        v = along_k_is_cols ? (uint8_t)(c[prev] ^ f->sign_mask) : c[prev];
      }
      c[i * cols + j] = v;
    }
}

/* Position of a code on the number line (sign-magnitude), for ulp distances. */
static int64_t ordinal(const exmy_format *f, uint64_t code) {
  int64_t m = (int64_t)(code & f->mag_mask);
  return exmy_code_sign(f, code) ? -m : m;
}

typedef struct stats {
  long n, agree, bits;
  double max_ulp;
  int nan_mismatch;
} stats;

static void compare(const exmy_format *f, const void *dev, const void *ref, size_t n, stats *s) {
  for (size_t i = 0; i < n; i++) {
    uint64_t a = exmy_code_get(f, dev, i), b = exmy_code_get(f, ref, i);
    s->n++;
    if (a == b) { s->agree++; continue; }
    int na = exmy_classify(f, a) == EXMY_CLASS_NAN, nb = exmy_classify(f, b) == EXMY_CLASS_NAN;
    if (na && nb) { s->agree++; continue; } /* NaN payloads differ by design (docs/gemm.md) */
    s->bits += __builtin_popcountll(a ^ b);
    if (na || nb) { s->nan_mismatch = 1; continue; }
    double d = fabs((double)(ordinal(f, a) - ordinal(f, b)));
    if (d > s->max_ulp) s->max_ulp = d;
  }
}

typedef struct gcase {
  size_t m, n, k;
  exmy_dtype at, bt, dt;
  pattern pat;
  int quick;
} gcase;

static const char *dt_fmt(exmy_dtype t) {
  return t == EXMY_DTYPE_F32 ? "f32" : t == EXMY_DTYPE_BF16 ? "bf16" : t == EXMY_DTYPE_E4M3FN ? "e4m3fn" : "e5m2";
}


/* One case: the device GEMM, then sampled rows and columns on the CPU with
 * the model, exact and fp32.  Returns 1 when the device differs from the model. */
static int run_case(const gcase *c, int fast, const exmy_accum *model, const char *model_text, int sm, int device,
                    uint64_t *s) {
  exmy_format fa, fb, fd;
  cli_parse_format(dt_fmt(c->at), &fa);
  cli_parse_format(dt_fmt(c->bt), &fb);
  cli_parse_format(dt_fmt(c->dt), &fd);
  size_t m = c->m, n = c->n, k = c->k, cb = (size_t)exmy_code_bytes(&fd);
  uint8_t *A = malloc(m * k), *B = malloc(k * n);
  void *D = malloc(m * n * cb);
  if (!A || !B || !D) cli_die("gpu-check: out of memory for %zu x %zu x %zu", m, n, k);
  fill(&fa, c->pat, A, m, k, 1, s);
  fill(&fb, c->pat == PAT_CANCEL ? PAT_NORMAL : c->pat, B, k, n, 0, s);
  if (c->pat == PAT_CANCEL) /* B pairs equal along k so the pairs of products cancel */
    for (size_t l = 1; l < k; l += 2) memcpy(B + l * n, B + (l - 1) * n, n);
  float sa = ldexpf(1, (int)(exmy__splitmix64(s) % 5) - 2), sb = ldexpf(1, (int)(exmy__splitmix64(s) % 5) - 2);
  float scale_d = c->dt == EXMY_DTYPE_E4M3FN ? 0.5f : 1.0f, amax_dev = 0;
  exmy_gpu_gemm_args g;
  exmy_gpu_gemm_args_init(&g);
  g.m = m; g.n = n; g.k = k; g.a_type = c->at; g.b_type = c->bt; g.d_type = c->dt;
  g.a = A; g.b = B; g.d = D; g.scale_a = sa; g.scale_b = sb; g.fast_accum = fast; g.device = device;
  if (c->dt == EXMY_DTYPE_E4M3FN) { g.scale_d = scale_d; g.amax_d = &amax_dev; }
  char err[EXMY_ERRLEN];
  /* valid arguments (sm 0) that this device cannot run: not a failure */
  exmy_gpu_gemm_plan plan;
  const int unsupported = !exmy_gpu_gemm_plan_make(&g, 0, &plan, err, sizeof err) &&
                          exmy_gpu_gemm_plan_make(&g, sm, &plan, err, sizeof err);
  const int rc = unsupported ? -1 : exmy_gpu_gemm_run(&g, NULL, err, sizeof err);
  printf("%5zu x %5zu x %5zu  %-6s x %-6s -> %-6s %-7s %-4s ", m, n, k, fa.name, fb.name, fd.name, pat_name[c->pat],
         fast ? "fast" : "");
  if (rc) {
    printf("| device: %s\n", err);
    free(A); free(B); free(D);
    return !unsupported;
  }
  /* sample: every row and column up to 64, else 16 random ones */
  size_t R = m <= 64 ? m : 16, C = n <= 64 ? n : 16;
  size_t *ri = malloc(R * sizeof *ri), *cj = malloc(C * sizeof *cj);
  for (size_t i = 0; i < R; i++) ri[i] = R == m ? i : exmy__splitmix64(s) % m;
  for (size_t j = 0; j < C; j++) cj[j] = C == n ? j : exmy__splitmix64(s) % n;
  uint8_t *As = malloc(R * k), *Bs = malloc(k * C);
  void *Ds = malloc(R * C * cb), *Ws = malloc(R * C * cb);
  for (size_t i = 0; i < R; i++) memcpy(As + i * k, A + ri[i] * k, k);
  for (size_t l = 0; l < k; l++)
    for (size_t j = 0; j < C; j++) Bs[l * C + j] = B[l * n + cj[j]];
  for (size_t i = 0; i < R; i++)
    for (size_t j = 0; j < C; j++) memcpy((char *)Ds + (i * C + j) * cb, (char *)D + (ri[i] * n + cj[j]) * cb, cb);
  float amax_w = 0;
  exmy_qtensor qa, qb;
  exmy_qtensor_view(&fa, As, R, k, &sa, &qa);
  exmy_qtensor_view(&fb, Bs, k, C, &sb, &qb);
  exmy_accum exact, fp32;
  exmy_accum_parse("exact", &exact, err, sizeof err);
  exmy_accum_parse("fp32", &fp32, err, sizeof err);
  const exmy_accum *refs[3] = {model, &exact, &fp32};
  stats st[3];
  memset(st, 0, sizeof st);
  for (int t = 0; t < 3; t++) {
    exmy_gemm_args ga;
    exmy_gemm_args_init(&ga);
    ga.a = &qa; ga.b = &qb; ga.d_fmt = &fd; ga.accum = refs[t];
    ga.scale_d = scale_d;
    ga.d_rnd.sat = c->dt == EXMY_DTYPE_E4M3FN ? EXMY_SAT_FINITE : EXMY_SAT_NONE; /* cuBLASLt saturates FP8 D */
    if (exmy_gemm(&ga, Ws, t == 0 ? &amax_w : NULL, NULL, err, sizeof err)) cli_die("gpu-check: CPU model: %s", err);
    compare(&fd, Ds, Ws, R * C, &st[t]);
  }
  int bad = st[0].agree != st[0].n || st[0].nan_mismatch;
  int full = R == m && C == n;
  if (full && c->dt == EXMY_DTYPE_E4M3FN && memcmp(&amax_w, &amax_dev, 4)) bad = 1;
  printf("| %-18.18s %6.2f%% %5ld bits %6.0f ulp | exact %6.0f ulp | fp32 %6.0f ulp%s%s\n", model_text,
         100.0 * (double)st[0].agree / (double)st[0].n, st[0].bits, st[0].max_ulp, st[1].max_ulp, st[2].max_ulp,
         full && c->dt == EXMY_DTYPE_E4M3FN ? (memcmp(&amax_w, &amax_dev, 4) ? " amax DIFFERS" : " amax ok") : "",
         bad ? "  MISMATCH" : "");
  free(ri); free(cj); free(As); free(Bs); free(Ds); free(Ws); free(A); free(B); free(D);
  return bad;
}

static int check_gemms(int quick, const char *model_text, int sm, int device, uint64_t seed) {
  const exmy_dtype E4 = EXMY_DTYPE_E4M3FN, E5 = EXMY_DTYPE_E5M2, F32 = EXMY_DTYPE_F32, BF = EXMY_DTYPE_BF16;
  const gcase cases[] = {
    {16, 16, 16, E4, E4, F32, PAT_NORMAL, 1},     {64, 48, 128, E4, E4, F32, PAT_WIDE, 1},
    {64, 64, 512, E4, E5, F32, PAT_NORMAL, 1},    {64, 64, 512, E5, E4, BF, PAT_NORMAL, 1},
    {32, 32, 256, E4, E4, E4, PAT_NORMAL, 1},     {16, 16, 4096, E4, E4, F32, PAT_STALL, 1},
    {64, 64, 1024, E4, E4, F32, PAT_CANCEL, 1},   {32, 32, 256, E4, E4, F32, PAT_TINY, 1},
    {32, 32, 256, E4, E5, F32, PAT_NAN, 1},       {256, 256, 1024, E4, E4, F32, PAT_NORMAL, 0},
    {1024, 1024, 4096, E4, E4, BF, PAT_WIDE, 0},  {4096, 4096, 4096, E4, E4, F32, PAT_NORMAL, 0},
    {8192, 8192, 8192, E4, E5, BF, PAT_NORMAL, 0},{128, 128, 16384, E4, E4, F32, PAT_STALL, 0},
    {16, 8192, 16384, E5, E4, F32, PAT_CANCEL, 0},{512, 512, 2048, E4, E4, E4, PAT_WIDE, 0},
  };
  uint64_t s = seed;
  int bad = 0;
  for (int fast = 0; fast < 2; fast++) {
    exmy_accum acc;
    char err[EXMY_ERRLEN];
    const char *mt = model_text ? model_text : exmy_gpu_model_for_sm(sm, fast);
    if (!mt) { printf("sm_%d has no FP8 tensor cores: no model\n", sm); return 1; }
    if (exmy_accum_parse(mt, &acc, err, sizeof err)) cli_die("gpu-check: --model: %s", err);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
      if (!quick || cases[i].quick) bad += run_case(&cases[i], fast, &acc, mt, sm, device, &s);
  }
  return bad;
}

/* ---- gpu-check: probe ------------------------------------------------------ */

static int check_probe(const char *model_text, int sm, int device) {
  int bad = 0;
  exmy_format e4;
  cli_parse_format("e4m3fn", &e4);
  const exmy_gpu_engine engines[] = {EXMY_GPU_ENGINE_MMA, EXMY_GPU_ENGINE_WGMMA, EXMY_GPU_ENGINE_LT, EXMY_GPU_ENGINE_LT_FASTACC};
  for (int i = 0; i < 4; i++) {
    exmy_gpu_probe_ctx ctx = {device, engines[i]};
    exmy_probe_engine eng = {0};
    exmy_probe_result r;
    char err[EXMY_ERRLEN];
    int rc = exmy_gpu_probe_engine(&ctx, &eng, err, sizeof err);
    if (rc) { printf("probe %-18s: %s\n", eng.name ? eng.name : "?", err); continue; }
    if (exmy_probe_run(&eng, &e4, &e4, NULL, &r, err, sizeof err)) {
      printf("probe %-18s: failed: %s\n", eng.name, err);
      bad++;
      continue;
    }
    int fast = engines[i] == EXMY_GPU_ENGINE_LT_FASTACC;
    const char *mt = model_text ? model_text : exmy_gpu_model_for_sm(sm, fast);
    exmy_accum acc;
    /* The model describes what cuBLASLt runs: mma.sync on Ada, wgmma on
     * Hopper; the raw instructions have no promotion. */
    int judged = engines[i] >= EXMY_GPU_ENGINE_LT || (engines[i] == EXMY_GPU_ENGINE_MMA && sm == 89) ||
                 (engines[i] == EXMY_GPU_ENGINE_WGMMA && sm == 90);
    int ok = 1;
    if (mt && !exmy_accum_parse(mt, &acc, err, sizeof err) && acc.kind == EXMY_ACCUM_TC) {
      size_t want_promote = engines[i] >= EXMY_GPU_ENGINE_LT ? acc.chunk : 0;
      ok = r.complete && r.g == acc.tc_group && r.f == acc.tc_frac && r.align_rne == acc.tc_align_rne &&
           r.out == acc.tc_out_frac && r.norm_rne == acc.tc_norm_rne &&
           (r.promote_seen < 0 || r.promote == want_promote) && r.products_exact && r.confirm_mismatches == 0;
    }
    printf("probe %-18s: %s  (%ld dots; confirm %ld/%ld differ)%s%s\n", eng.name, r.complete ? r.accum : "incomplete",
           r.dots, r.confirm_mismatches, r.confirm_dots, judged ? (ok ? "  matches " : "  MISMATCH with ") : "  (info)",
           judged && mt ? mt : "");
    if (r.notes[0]) printf("      notes: %s\n", r.notes);
    bad += judged && !ok;
  }
  return bad;
}

/* ---- gpu-check: quantization ------------------------------------------------ */

static int check_quant(int quick, uint64_t seed) {
  struct { const char *fmt; exmy_round_mode mode; exmy_saturation sat; int hw, ftz; } cfg[] = {
    {"e4m3fn", EXMY_RNE, EXMY_SAT_NONE, 1, 0},   {"e4m3fn", EXMY_RNE, EXMY_SAT_FINITE, 1, 0},
    {"e5m2", EXMY_RNE, EXMY_SAT_NONE, 1, 0},     {"e5m2", EXMY_RNE, EXMY_SAT_FINITE, 1, 0},
    {"e4m3fn", EXMY_RNE, EXMY_SAT_FINITE, 0, 0}, {"e5m2", EXMY_SR, EXMY_SAT_NONE, 0, 0},
    {"e3m4", EXMY_RTZ, EXMY_SAT_NONE, 0, 0},     {"e2m1fn", EXMY_RNA, EXMY_SAT_FINITE, 0, 0},
    {"bf16", EXMY_RTO, EXMY_SAT_NONE, 0, 0},     {"e8m0fnu", EXMY_RUP, EXMY_SAT_NONE, 0, 0},
    {"f16", EXMY_RDN, EXMY_SAT_PROPAGATE, 0, 1},
  };
  const size_t chunk = quick ? (size_t)1 << 16 : (size_t)1 << 26;
  const size_t step = quick ? (size_t)1 << 24 : chunk; /* quick: 256 chunks spread over 2^32 */
  float *x = malloc(chunk * sizeof *x);
  uint64_t *host = malloc(chunk * 2), *dev = malloc(chunk * 2);
  if (!x || !host || !dev) cli_die("gpu-check: out of memory");
  int bad = 0;
  for (size_t c = 0; c < sizeof cfg / sizeof *cfg; c++) {
    exmy_format f;
    cli_parse_format(cfg[c].fmt, &f);
    exmy_rounding r = exmy_rounding_default();
    r.mode = cfg[c].mode;
    r.sat = cfg[c].sat;
    r.ftz = cfg[c].ftz;
    r.seed = seed;
    long diff = 0;
    uint64_t total = 0;
    char err[EXMY_ERRLEN];
    for (uint64_t lo = 0; lo < ((uint64_t)1 << 32); lo += step) {
      for (size_t i = 0; i < chunk; i++) {
        uint32_t b = (uint32_t)(lo + i);
        memcpy(&x[i], &b, 4);
      }
      unsigned hfl = 0, dfl = 0;
      if (exmy_quantize(&f, &r, EXMY_DTYPE_F32, x, chunk, lo, host, &hfl, err, sizeof err))
        cli_die("gpu-check: quantize %s: %s", f.name, err);
      if (exmy_gpu_quantize_f32_range(&f, &r, cfg[c].hw, (uint32_t)lo, chunk, dev, &dfl, err, sizeof err))
        cli_die("gpu-check: quantize %s: %s", f.name, err);
      /* the generic kernel raises the same flags (the hardware conversions raise none) */
      if (!cfg[c].hw && hfl != dfl && diff++ < 3)
        printf("  %s: chunk at 0x%08x: flags host 0x%x device 0x%x\n", f.name, (unsigned)lo, hfl, dfl);
      for (size_t i = 0; i < chunk; i++) {
        uint64_t a = exmy_code_get(&f, host, i), b = exmy_code_get(&f, dev, i);
        if (a == b) continue;
        /* cuda_fp8.h's float entry gives one NaN code for NaNs of both signs */
        if (cfg[c].hw && exmy_classify(&f, a) == EXMY_CLASS_NAN && exmy_classify(&f, b) == EXMY_CLASS_NAN) continue;
        if (diff++ < 3) printf("  %s: x = 0x%08x host 0x%llx device 0x%llx\n", f.name, (unsigned)(lo + i),
                               (unsigned long long)a, (unsigned long long)b);
      }
      total += chunk;
    }
    printf("quantize %-7s %-3s sat=%-9s%s %-7s: %llu float32 inputs, %ld differ%s\n", f.name,
           exmy_round_mode_name(r.mode), r.sat == EXMY_SAT_NONE ? "none" : r.sat == EXMY_SAT_FINITE ? "finite" : "propagate",
           r.ftz ? ",ftz" : "", cfg[c].hw ? "hw" : "generic", (unsigned long long)total, diff, diff ? "  MISMATCH" : "");
    bad += diff != 0;
  }
  free(x); free(host); free(dev);
  return bad;
}

int cmd_gpu_check(int argc, char **argv) {
  int quick = 0, device = 0;
  const char *model = NULL, *only = "gemm,probe,quant";
  uint64_t seed = 1;
  cli_opts o;
  cli_opts_init(&o, "gpu-check", argc, argv);
  while (cli_next(&o)) {
    if (!strcmp(o.key, "--quick")) { cli_no_value(&o); quick = 1; }
    else if (!strcmp(o.key, "--model")) model = cli_value(&o);
    else if (!strcmp(o.key, "--seed")) seed = cli_parse_u64("--seed", cli_value(&o), 0, UINT64_MAX);
    else if (!strcmp(o.key, "--device")) device = (int)cli_parse_u64("--device", cli_value(&o), 0, 63);
    else if (!strcmp(o.key, "--only")) only = cli_value(&o);
    else if (o.positional) cli_die("gpu-check: unexpected argument '%s'", argv[o.i]);
    else cli_die("gpu-check: unknown option '%s' (see exmy gpu-check --help)", argv[o.i]);
  }
  char err[EXMY_ERRLEN];
  if (model) {
    exmy_accum acc;
    if (exmy_accum_parse(model, &acc, err, sizeof err)) cli_die("gpu-check: --model: %s", err);
  }
  for (const char *p = only; *p;) {
    size_t len = strcspn(p, ",");
    if (!((len == 4 && !strncmp(p, "gemm", 4)) || (len == 5 && !strncmp(p, "probe", 5)) || (len == 5 && !strncmp(p, "quant", 5))))
      cli_die("gpu-check: --only: bad part '%.*s' (accepted: gemm, probe, quant)", (int)len, p);
    p += len + (p[len] == ',');
  }
  exmy_gpu_info info;
  /* no GPU at all: skip; a device that does not exist or fails: an error */
  if (exmy_gpu_query(0, &info, err, sizeof err)) skip("gpu-check", err);
  if (exmy_gpu_query(device, &info, err, sizeof err)) cli_die("gpu-check: %s", err);
  printf("device %d: %s, sm_%d, %d SMs, CUDA runtime %d, driver %d, cuBLASLt %zu\n", info.device, info.name, info.sm,
         info.multiprocessors, info.runtime_version, info.driver_version, info.cublaslt_version);
  if (!model && !exmy_gpu_model_for_sm(info.sm, 0)) skip("gpu-check", "this GPU has no FP8 tensor cores (sm_89 or newer)");
  printf("model: %s / %s (fast accumulation)\n", model ? model : exmy_gpu_model_for_sm(info.sm, 0),
         model ? model : exmy_gpu_model_for_sm(info.sm, 1));
  int bad = 0;
  if (strstr(only, "gemm")) bad += check_gemms(quick, model, info.sm, device, seed);
  if (strstr(only, "probe")) bad += check_probe(model, info.sm, device);
  if (strstr(only, "quant")) bad += check_quant(quick, seed);
  printf("gpu-check: %s\n", bad ? "MISMATCHES (see above)" : "everything matches");
  return bad ? 1 : 0;
}
