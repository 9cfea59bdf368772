/* accum.c: accumulation models of the emulated GEMM (docs/gemm.md): their
 * text form, presets and validation.  One table of tensor-core presets. */
#include "exmy.h"
#include "formats/internal.h"
#include "emulate/tc_preset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct tc_preset {
  const char *name;
  const char *path[EXMY_TC_NOPERANDS]; /* the datapath rows (emulate/mma_table.c) per kind of operands */
  size_t promote;
} tc_preset;

/* Each preset names rows of the MMA datapath table, one per kind of operands
 * (exmy_tc_operands: no block scales, block scales in the products, E2M1 x
 * E2M1 block-scaled), so the GEMM and exmy mma cannot drift apart; plus
 * cuBLASLt's promotion interval, assumed to be CUTLASS's 4 wgmma (128) until
 * the GPU probe measures it (docs/gpu-crosscheck.md).  A GPU without
 * block-scaled instructions takes block-scaled operands through its one row
 * with the scales in the products; Blackwell issues tcgen05's
 * kind::mxf8f6f4 for MX operands and kind::mxf4nvf4 / kind::mxf4 for E2M1 x
 * E2M1 ones (NVFP4 and MXFP4: one datapath, MMA-Sim v2's GST; docs/mma.md). */
#define SAME3(row) {row, row, row}
static const tc_preset tc_presets[] = {
  {"hopper", SAME3("hopper-fp8-f32"), 128},
  {"hopper-fastacc", SAME3("hopper-fp8-f32"), 0},
  {"ada", SAME3("ada-fp8-f32"), 128},
  {"ada-fastacc", SAME3("ada-fp8-f32"), 0},
  {"hopper-bf16", SAME3("hopper-16bit-f32"), 0},
  {"ampere-bf16", SAME3("ampere-16bit-f32"), 0},
  {"blackwell", {"blackwell-f8f6f4-f32", "blackwell-mx", "blackwell-mxf4nvf4"}, 0},
};
#define N_PRESETS (sizeof tc_presets / sizeof tc_presets[0])
/* the text's key of each kind of operands' row */
static const char *const path_keys[EXMY_TC_NOPERANDS] = {"path", "block-path", "fp4-path"};

size_t exmy_accum_tc_preset_count(void) { return N_PRESETS; }
const char *exmy_accum_tc_preset_get(size_t index) { return index < N_PRESETS ? tc_presets[index].name : NULL; }

static int parse_size(const char *key, const char *v, size_t lo, size_t hi, size_t *out, char *err,
                      size_t errlen) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (!*v || *end || errno || v[0] == '-' || x < lo || x > hi)
    return exmy__fail(err, errlen, "accumulation model: bad %s '%s' (an integer %zu..%zu)", key, v, lo, hi);
  *out = (size_t)x;
  return 0;
}

/* The keys a row has: L, F, its output's fraction bits and rounding, nothing
 * rounded at alignment, its zero exponent. */
static void keys_of_row(const mma_datapath *d, exmy_accum *a) {
  a->tc_group = d->L;
  a->tc_frac = d->F;
  a->tc_out_frac = d->rho == MMA_RZ_E8M13 ? 13 : 23;
  a->tc_align_rne = 0;
  a->tc_norm_rne = d->rho == MMA_RNE_FP32 || d->rho == MMA_RNE_FP16;
  a->tc_zero = d->e_zero;
}

static void set_row(exmy_accum *a, int ops, const char *row) { snprintf(a->tc_path[ops], sizeof a->tc_path[ops], "%s", row ? row : ""); }

static void clear_rows(exmy_accum *a) { memset(a->tc_path, 0, sizeof a->tc_path); }

static void tc_apply(exmy_accum *a, const tc_preset *p) {
  keys_of_row(exmy__mma_path_find(p->path[EXMY_TC_PLAIN]), a);
  for (int o = 0; o < EXMY_TC_NOPERANDS; o++) set_row(a, o, p->path[o]);
  a->chunk = p->promote;
}

/* The row name of kind ops as it runs ("" in a slot: the slot before). */
static const char *row_name(const exmy_accum *a, int ops) {
  for (int o = ops; o >= 0; o--)
    if (a->tc_path[o][0]) return a->tc_path[o];
  return "";
}

const mma_datapath *exmy__tc_path_of(const exmy_accum *acc, exmy_tc_operands ops) {
  if ((unsigned)ops >= EXMY_TC_NOPERANDS || !acc->tc_path[EXMY_TC_PLAIN][0]) return NULL;
  return exmy__mma_path_find(row_name(acc, (int)ops));
}

/* What a GEMM's tc sum can run, as data: NVIDIA's fused sums (T, ST; GST
 * needs block scales) with an fp32 output, operands as given, C inside. */
static const mma_algo gemm_algos[] = {MMA_T, MMA_ST, MMA_GST};
static const mma_rho gemm_rhos[] = {MMA_RZ_FP32, MMA_RZ_E8M13};

int exmy__tc_path_check(const exmy_accum *a, char *err, size_t errlen) {
  if (a->kind != EXMY_ACCUM_TC) return 0;
  for (int o = 0; o < EXMY_TC_NOPERANDS; o++)
    if (!memchr(a->tc_path[o], 0, sizeof a->tc_path[o]))
      return exmy__fail(err, errlen, "tc %s: the row's name is not terminated within %d bytes", path_keys[o], EXMY_TC_PATH_LEN);
  if (!a->tc_path[EXMY_TC_PLAIN][0]) {
    for (int o = 1; o < EXMY_TC_NOPERANDS; o++)
      if (a->tc_path[o][0])
        return exmy__fail(err, errlen, "tc %s=%s needs a row for plain operands too (path= or a preset before it)", path_keys[o],
                          a->tc_path[o]);
    return 0;
  }
  for (int o = 0; o < EXMY_TC_NOPERANDS; o++) {
    if (!a->tc_path[o][0]) continue;
    const char *name = a->tc_path[o];
    const mma_datapath *d = exmy__mma_path_find(name);
    if (!d) return exmy__fail(err, errlen, "tc %s: unknown datapath row '%s' (exmy mma --datapaths lists them)", path_keys[o], name);
    int algo = 0, rho = 0;
    for (size_t i = 0; i < sizeof gemm_algos / sizeof gemm_algos[0]; i++) algo |= d->algo == gemm_algos[i];
    for (size_t i = 0; i < sizeof gemm_rhos / sizeof gemm_rhos[0]; i++) rho |= d->rho == gemm_rhos[i];
    if (!algo || !rho || d->W || d->c_last || d->widen)
      return exmy__fail(err, errlen,
                        "tc %s: datapath row '%s' is not one a GEMM's sum runs (accepted: T, ST, GST rows with an fp32 "
                        "output, operands as given, C inside the sum)", path_keys[o], name);
    if (d->algo == MMA_GST && o == EXMY_TC_PLAIN)
      return exmy__fail(err, errlen, "tc path: datapath row '%s' (GST) needs block scales: name it as block-path or fp4-path", name);
  }
  /* the keys are the plain row's (what the fast kernels and the probe read) */
  exmy_accum k = *a;
  keys_of_row(exmy__mma_path_find(a->tc_path[EXMY_TC_PLAIN]), &k);
  static const char *kn[] = {"g", "f", "out", "align", "norm", "zero"};
  const int have[] = {a->tc_group, a->tc_frac, a->tc_out_frac, a->tc_align_rne, a->tc_norm_rne, a->tc_zero};
  const int want[] = {k.tc_group, k.tc_frac, k.tc_out_frac, k.tc_align_rne, k.tc_norm_rne, k.tc_zero};
  for (int i = 0; i < 6; i++)
    if (have[i] != want[i] && !(i == 5 && have[i] == 0))
      return exmy__fail(err, errlen, "tc key %s %d differs from datapath row '%s' (%s %d): a model with rows has "
                        "their keys (clear tc_path to run the keys)", kn[i], have[i], a->tc_path[EXMY_TC_PLAIN], kn[i], want[i]);
  return 0;
}

static int is_round_key(const char *tok) {
  static const char *keys[] = {"round=", "sat=", "seed=", "stream=", "sr-bits="};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
    if (!strncmp(tok, keys[i], strlen(keys[i]))) return 1;
  return !strcmp(tok, "ftz") || !strcmp(tok, "daz");
}

/* acc=FORMAT[,round=..]: format long forms contain commas too, so tokens
 * that are not rounding keys belong to the format. */
static int parse_acc(const char *text, exmy_accum *a, char *err, size_t errlen) {
  char buf[256], fmt_text[256] = "";
  if (strlen(text) >= sizeof buf) return exmy__fail(err, errlen, "accumulation model too long: '%s'", text);
  strcpy(buf, text);
  a->acc_rnd = exmy_rounding_default();
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (!is_round_key(tok)) {
      if (fmt_text[0]) strcat(fmt_text, ",");
      strcat(fmt_text, tok);
      continue;
    }
    const char *v = strchr(tok, '=');
    v = v ? v + 1 : "";
    size_t x;
    if (!strncmp(tok, "round=", 6)) {
      char e[EXMY_ERRLEN];
      if (exmy_round_mode_parse(v, &a->acc_rnd.mode, e, sizeof e))
        return exmy__fail(err, errlen, "accumulation model: %s", e);
    } else if (!strncmp(tok, "sat=", 4)) {
      if (!strcmp(v, "none")) a->acc_rnd.sat = EXMY_SAT_NONE;
      else if (!strcmp(v, "finite")) a->acc_rnd.sat = EXMY_SAT_FINITE;
      else if (!strcmp(v, "propagate")) a->acc_rnd.sat = EXMY_SAT_PROPAGATE;
      else return exmy__fail(err, errlen, "accumulation model: bad saturation '%s' (accepted: none, finite, propagate)", v);
    } else if (!strncmp(tok, "seed=", 5)) {
      if (parse_size("seed", v, 0, (size_t)-1, &x, err, errlen)) return -1;
      a->acc_rnd.seed = x;
    } else if (!strncmp(tok, "stream=", 7)) {
      if (parse_size("stream", v, 0, (size_t)-1, &x, err, errlen)) return -1;
      a->acc_rnd.stream = x;
    } else if (!strncmp(tok, "sr-bits=", 8)) {
      if (parse_size("sr-bits", v, 1, 64, &x, err, errlen)) return -1;
      a->acc_rnd.sr_bits = (int)x;
    } else if (!strcmp(tok, "ftz")) {
      a->acc_rnd.ftz = 1;
    } else {
      a->acc_rnd.daz = 1;
    }
  }
  char ferr[EXMY_ERRLEN];
  if (exmy_format_parse(fmt_text, &a->acc_fmt, ferr, sizeof ferr))
    return exmy__fail(err, errlen, "accumulation model acc=%s: %s", fmt_text, ferr);
  if (!a->acc_fmt.has_zero || !a->acc_fmt.is_signed)
    return exmy__fail(err, errlen, "accumulation model acc=%s: the accumulator needs a signed format with a zero", fmt_text);
  if (a->acc_fmt.mbits > 50 || a->acc_fmt.emax > 1000 || a->acc_fmt.emin - a->acc_fmt.mbits < -1000)
    return exmy__fail(err, errlen, "accumulation model acc=%s: at most 51 bits of precision and exponents within +-1000", fmt_text);
  return 0;
}

static int parse_tc(const char *text, exmy_accum *a, char *err, size_t errlen) {
  char buf[256];
  if (strlen(text) >= sizeof buf) return exmy__fail(err, errlen, "accumulation model too long: '%s'", text);
  strcpy(buf, text);
  tc_apply(a, &tc_presets[0]);
  int first = 1;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save), first = 0) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      size_t i;
      for (i = 0; i < N_PRESETS; i++)
        if (!strcmp(tok, tc_presets[i].name)) break;
      if (!first || i == N_PRESETS) {
        char names[160] = ""; /* the table's names: a new preset is one row */
        for (size_t j = 0, o = 0; j < N_PRESETS && o < sizeof names; j++)
          o += (size_t)snprintf(names + o, sizeof names - o, "%s%s", j ? ", " : "", tc_presets[j].name);
        return exmy__fail(err, errlen, "accumulation model: unknown tensor-core preset '%s' (accepted: %s; first after 'tc:')",
                          tok, names);
      }
      tc_apply(a, &tc_presets[i]);
      continue;
    }
    *eq = 0;
    const char *k = tok, *v = eq + 1;
    size_t x;
    int ops = -1;
    for (int o = 0; o < EXMY_TC_NOPERANDS; o++)
      if (!strcmp(k, path_keys[o])) ops = o;
    /* a key that changes the arithmetic leaves the table: the model is its keys'
     * (a zero exponent restated as the row's, zero=v1 and promote keep the rows) */
    const int keeps = ops >= 0 || !strcmp(k, "promote") || !strcmp(k, "zero");
    if (!keeps) clear_rows(a);
    if (ops >= 0) {
      const mma_datapath *d = exmy__mma_path_find(v);
      if (!d)
        return exmy__fail(err, errlen, "accumulation model: unknown datapath row '%s' in %s=%s (exmy mma --datapaths lists them)",
                          v, k, v);
      if (ops == EXMY_TC_PLAIN) { /* the row and its keys; the other kinds run it too until named */
        keys_of_row(d, a);
        clear_rows(a);
      }
      set_row(a, ops, v);
    } else if (!strcmp(k, "g")) {
      if (parse_size("g", v, 1, 4096, &x, err, errlen)) return -1;
      a->tc_group = (int)x;
    } else if (!strcmp(k, "f")) {
      if (parse_size("f", v, 0, 40, &x, err, errlen)) return -1;
      a->tc_frac = (int)x;
    } else if (!strcmp(k, "out")) {
      if (parse_size("out", v, 0, 23, &x, err, errlen)) return -1;
      a->tc_out_frac = (int)x;
    } else if (!strcmp(k, "promote")) {
      if (parse_size("promote", v, 0, (size_t)1 << 40, &x, err, errlen)) return -1;
      a->chunk = x;
    } else if (!strcmp(k, "zero")) {
      if (!strcmp(v, "v1")) {
        a->tc_zero = 0;
      } else {
        char *end;
        errno = 0;
        const long z = strtol(v, &end, 10);
        if (!*v || *end || errno || z < -1000 || z > -1)
          return exmy__fail(err, errlen, "accumulation model: bad zero '%s' (v1, or the exponent of a zero term, -1000..-1)", v);
        const mma_datapath *d = exmy__tc_path_of(a, EXMY_TC_PLAIN);
        if (d && d->e_zero != (int)z) clear_rows(a); /* another exponent than the row's: the keys' model */
        a->tc_zero = (int)z;
      }
    } else if (!strcmp(k, "align") || !strcmp(k, "norm")) {
      int rne;
      if (!strcmp(v, "trunc")) rne = 0;
      else if (!strcmp(v, "rne")) rne = 1;
      else return exmy__fail(err, errlen, "accumulation model: bad %s '%s' (accepted: trunc, rne)", k, v);
      if (k[0] == 'a') a->tc_align_rne = rne;
      else a->tc_norm_rne = rne;
    } else {
      return exmy__fail(err, errlen, "accumulation model: unknown tensor-core key '%s' (accepted: path, block-path, fp4-path, "
                        "g, f, align, out, norm, promote, zero)", k);
    }
  }
  char e[EXMY_ERRLEN];
  if (exmy__tc_path_check(a, e, sizeof e)) return exmy__fail(err, errlen, "accumulation model 'tc:%s': %s", text, e);
  return 0;
}

static int parse_model(const char *text, exmy_accum *a, int nested, char *err, size_t errlen) {
  if (!strcmp(text, "exact")) {
    a->kind = EXMY_ACCUM_EXACT;
  } else if (!strcmp(text, "fp32")) {
    a->kind = EXMY_ACCUM_FP32;
  } else if (!strcmp(text, "fp32:pairwise")) {
    a->kind = EXMY_ACCUM_FP32_PAIRWISE;
  } else if (!strncmp(text, "acc=", 4)) {
    a->kind = EXMY_ACCUM_FORMAT;
    if (parse_acc(text + 4, a, err, errlen)) return -1;
  } else if (!strcmp(text, "tc") || !strncmp(text, "tc:", 3)) {
    a->kind = EXMY_ACCUM_TC;
    if (parse_tc(text[2] ? text + 3 : "hopper", a, err, errlen)) return -1;
  } else if (!strncmp(text, "chunk=", 6)) {
    if (nested) return exmy__fail(err, errlen, "accumulation model: chunk inside chunk ('%s')", text);
    const char *comma = strchr(text, ',');
    char num[32];
    size_t len = comma ? (size_t)(comma - text - 6) : strlen(text + 6);
    if (len >= sizeof num) len = sizeof num - 1;
    memcpy(num, text + 6, len);
    num[len] = 0;
    size_t n;
    if (parse_size("chunk", num, 1, (size_t)1 << 40, &n, err, errlen)) return -1;
    if (!comma || strncmp(comma + 1, "inner=", 6))
      return exmy__fail(err, errlen, "accumulation model '%s': chunk=N needs ',inner=MODEL' (e.g. chunk=128,inner=acc=f16)", text);
    if (parse_model(comma + 7, a, 1, err, errlen)) return -1;
    if (a->kind == EXMY_ACCUM_EXACT)
      return exmy__fail(err, errlen, "accumulation model '%s': an exact inner sum promoted to fp32 is not a model; use fp32 or acc=f32", text);
    if (a->chunk) return exmy__fail(err, errlen, "accumulation model '%s': the inner model already promotes (promote=%zu)", text, a->chunk);
    a->chunk = n;
  } else {
    return exmy__fail(err, errlen,
                      "unknown accumulation model '%s' (accepted: exact, fp32, fp32:pairwise, acc=FORMAT[,round=MODE], "
                      "chunk=N,inner=MODEL, tc, tc:PRESET[,path=,block-path=,fp4-path=,g=,f=,align=,out=,norm=,promote=,zero=])", text);
  }
  return 0;
}

int exmy_accum_parse(const char *text, exmy_accum *acc, char *err, size_t errlen) {
  exmy_accum a;
  memset(&a, 0, sizeof a);
  a.acc_rnd = exmy_rounding_default();
  if (!text) return exmy__fail(err, errlen, "no accumulation model");
  if (parse_model(text, &a, 0, err, errlen)) return -1;
  *acc = a;
  return 0;
}

/* A model with rows: the preset whose rows and keys it has (zero=v1 and the
 * promotion interval aside), else path=; without rows, its keys. */
static int tc_to_string(const exmy_accum *a, char *buf, size_t buflen) {
  char t[320];
  int n;
  if (!a->tc_path[EXMY_TC_PLAIN][0]) {
    char z[16];
    if (a->tc_zero) snprintf(z, sizeof z, "%d", a->tc_zero);
    else snprintf(z, sizeof z, "v1");
    snprintf(t, sizeof t, "tc:g=%d,f=%d,align=%s,out=%d,norm=%s,promote=%zu,zero=%s", a->tc_group, a->tc_frac,
             a->tc_align_rne ? "rne" : "trunc", a->tc_out_frac, a->tc_norm_rne ? "rne" : "trunc", a->chunk, z);
    return snprintf(buf, buflen, "%s", t);
  }
  /* the preset of these rows and promotion interval, else the first of these rows */
  size_t i = N_PRESETS;
  for (size_t j = 0; j < N_PRESETS; j++) {
    int same = 1;
    for (int o = 0; o < EXMY_TC_NOPERANDS; o++) same &= !strcmp(row_name(a, o), tc_presets[j].path[o]);
    if (same && (i == N_PRESETS || tc_presets[j].promote == a->chunk)) i = j;
    if (same && tc_presets[j].promote == a->chunk) break;
  }
  if (i < N_PRESETS) {
    n = snprintf(t, sizeof t, "tc:%s", tc_presets[i].name);
    if (a->chunk != tc_presets[i].promote) n += snprintf(t + n, sizeof t - (size_t)n, ",promote=%zu", a->chunk);
  } else {
    n = snprintf(t, sizeof t, "tc:path=%s", a->tc_path[EXMY_TC_PLAIN]);
    for (int o = 1; o < EXMY_TC_NOPERANDS; o++)
      if (strcmp(row_name(a, o), row_name(a, o - 1)))
        n += snprintf(t + n, sizeof t - (size_t)n, ",%s=%s", path_keys[o], row_name(a, o));
    n += snprintf(t + n, sizeof t - (size_t)n, ",promote=%zu", a->chunk);
  }
  if (!a->tc_zero) snprintf(t + n, sizeof t - (size_t)n, ",zero=v1");
  return snprintf(buf, buflen, "%s", t);
}

int exmy_accum_to_string(const exmy_accum *a, char *buf, size_t buflen) {
  char t[320], inner[300] = "";
  switch (a->kind) {
  case EXMY_ACCUM_EXACT: snprintf(inner, sizeof inner, "exact"); break;
  case EXMY_ACCUM_FP32: snprintf(inner, sizeof inner, "fp32"); break;
  case EXMY_ACCUM_FP32_PAIRWISE: snprintf(inner, sizeof inner, "fp32:pairwise"); break;
  case EXMY_ACCUM_FORMAT: {
    const exmy_rounding *r = &a->acc_rnd;
    int n = snprintf(inner, sizeof inner, "acc=%s", a->acc_fmt.name);
    if (r->mode != EXMY_RNE) n += snprintf(inner + n, sizeof inner - n, ",round=%s", exmy_round_mode_name(r->mode));
    if (r->sat == EXMY_SAT_FINITE) n += snprintf(inner + n, sizeof inner - n, ",sat=finite");
    if (r->sat == EXMY_SAT_PROPAGATE) n += snprintf(inner + n, sizeof inner - n, ",sat=propagate");
    if (r->ftz) n += snprintf(inner + n, sizeof inner - n, ",ftz");
    if (r->daz) n += snprintf(inner + n, sizeof inner - n, ",daz");
    if (r->mode == EXMY_SR) {
      n += snprintf(inner + n, sizeof inner - n, ",seed=%llu", (unsigned long long)r->seed);
      if (r->stream) n += snprintf(inner + n, sizeof inner - n, ",stream=%llu", (unsigned long long)r->stream);
      /* 64 is the default (and what 0 meant before 1.4): the text stays as it was */
      if (r->sr_bits && r->sr_bits != 64) n += snprintf(inner + n, sizeof inner - n, ",sr-bits=%d", r->sr_bits);
    }
    break;
  }
  case EXMY_ACCUM_TC: return tc_to_string(a, buf, buflen);
  }
  if (a->chunk) snprintf(t, sizeof t, "chunk=%zu,inner=%s", a->chunk, inner);
  else snprintf(t, sizeof t, "%s", inner);
  return snprintf(buf, buflen, "%s", t);
}
