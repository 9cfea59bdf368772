/* mma_table.c: the datapath table of the instruction-level MMA models and the
 * instruction names that map to its rows (docs/mma.md).  Parameters from
 * MMA-Sim v2 (peichenxie/MMA-Sim, arXiv 2511.10909 Tables 4-6; mmasim
 * arithmetic/fdpa.py, amd/sim.py); v1 is microsoft/MMA-Sim. */
#include "emulate/mma_internal.h"
#include "formats/internal.h"

#include <stdio.h>
#include <string.h>

#define V2 "MMA-Sim v2 Table 4"
/* name, algo, L, F, F2, G, e_zero, output, W, c_last, widen, source; the
 * fields that only rows made from a GEMM's tc keys set are 0 */
#define ROW(name, algo, L, F, F2, G, e_zero, rho, W, c_last, widen, source) \
  {name, algo, L, F, F2, G, e_zero, rho, W, c_last, widen, source, 0, 0, 0}
const mma_datapath exmy__mma_paths[] = {
  ROW("volta-f16-f32", MMA_T, 4, 23, 0, 0, -131, MMA_RZ_FP32, 0, 0, NULL, V2 " (Volta)"),
  ROW("volta-f16-f16", MMA_T, 4, 23, 0, 0, -20, MMA_RNE_FP16, 0, 0, NULL, V2 " (Volta)"),
  ROW("ampere-16bit-f32", MMA_T, 8, 24, 0, 0, -132, MMA_RZ_FP32, 0, 0, NULL, V2 " (Turing f16; Ampere, Ada f16/bf16)"),
  ROW("ampere-f16-f16", MMA_T, 8, 24, 0, 0, -21, MMA_RNE_FP16, 0, 0, NULL, V2 " (Turing, Ampere, Ada)"),
  ROW("ampere-tf32", MMA_T, 4, 24, 0, 0, -132, MMA_RZ_FP32, 0, 0, NULL, V2 " (Ampere, Ada; inputs truncated to tf32)"),
  ROW("ada-fp8-f32", MMA_T, 16, 13, 0, 0, -132, MMA_RZ_E8M13, 0, 0, NULL, V2 " (Ada)"),
  ROW("ada-fp8-f16", MMA_T, 16, 13, 0, 0, -21, MMA_RNE_FP16, 0, 0, NULL, V2 " (Ada)"),
  ROW("hopper-tf32", MMA_T, 8, 25, 0, 0, -133, MMA_RZ_FP32, 0, 0, NULL, V2 " (Hopper, Blackwell; inputs truncated to tf32)"),
  ROW("hopper-16bit-f32", MMA_T, 16, 25, 0, 0, -133, MMA_RZ_FP32, 0, 0, NULL, V2 " (Hopper, Blackwell f16/bf16)"),
  ROW("hopper-f16-f16", MMA_T, 16, 25, 0, 0, -133, MMA_RNE_FP16, 0, 0, NULL, V2 " (wgmma, tcgen05)"),
  ROW("hopper-f16-f16-mma", MMA_T, 16, 25, 0, 0, -22, MMA_RNE_FP16, 0, 0, NULL, V2 " (mma.sync on sm_90+)"),
  ROW("hopper-fp8-f32", MMA_T, 32, 13, 0, 0, -133, MMA_RZ_E8M13, 0, 0, NULL, V2 " (Hopper)"),
  ROW("hopper-fp8-f16", MMA_T, 32, 13, 0, 0, -133, MMA_RNE_FP16, 0, 0, NULL, V2 " (Hopper)"),
  /* sm_90 has no FP8 mma.sync unit: the recordings fit FP8 widened to f16, two
     f16 mma fused sums (k mod 4 in {0,1}, then {2,3}) from +0, then C added */
  ROW("hopper-fp8-f16-mma", MMA_T, 16, 25, 0, 0, -22, MMA_RNE_FP16, 2, 1, "f16",
   "recorded H100/H200 (Khattak & Mikaitis), 20,000 of 20,000; pieces as hopper-f16-f16-mma"),
  /* sm_100 mma.sync FP8 with f32 D: the same f16 pieces, each cut and summed as
     an f16 mma with f32 accumulation (toward zero), then C added by an fp32 add */
  ROW("blackwell-fp8-f32-mma", MMA_T, 16, 25, 0, 0, -133, MMA_RZ_FP32, 2, 1, "f16",
   "recorded B200 (Khattak & Mikaitis), E4M3 5000 of 5000; pieces as hopper-16bit-f32"),
  ROW("blackwell-f8f6f4-f32", MMA_T, 32, 25, 0, 0, -133, MMA_RZ_FP32, 0, 0, NULL, V2 " (Blackwell, RTX Blackwell)"),
  ROW("blackwell-f8f6f4-f16", MMA_T, 32, 25, 0, 0, -133, MMA_RNE_FP16, 0, 0, NULL, V2 " (tcgen05)"),
  ROW("blackwell-f8f6f4-f16-mma", MMA_T, 32, 25, 0, 0, -22, MMA_RNE_FP16, 0, 0, NULL, V2 " (mma.sync, RTX Blackwell)"),
  ROW("blackwell-mx", MMA_ST, 32, 25, 0, 0, -133, MMA_RZ_FP32, 0, 0, NULL, V2 " (MXFP8/6/4, scales in the products)"),
  ROW("blackwell-mxf4nvf4", MMA_GST, 64, 35, 0, 16, -139, MMA_RZ_FP32, 0, 0, NULL, "MMA-Sim v2 Table 5 (exact 16-product sums)"),
  ROW("cdna1-f16", MMA_E, 4, 0, 0, 0, 0, MMA_RNE_FP32, 0, 0, NULL, "MMA-Sim v2 amd/sim.py (CDNA1: exact sum of 4)"),
  ROW("cdna1-bf16", MMA_E, 2, 0, 0, 0, 0, MMA_RNE_FP32, 0, 0, NULL, "MMA-Sim v2 amd/sim.py (CDNA1: exact sum of 2)"),
  ROW("cdna2-p2", MMA_FTZ, 64, 0, 0, 2, 0, MMA_RNE_FP32, 0, 0, NULL, "MMA-Sim v2 amd/sim.py (CDNA2 bf16: flush-to-zero multiply-add in pairs)"),
  ROW("cdna2-p4", MMA_FTZ, 64, 0, 0, 4, 0, MMA_RNE_FP32, 0, 0, NULL, "MMA-Sim v2 amd/sim.py (CDNA2 f16, bf16_1k: flush-to-zero multiply-add in fours)"),
  ROW("cdna3-16bit", MMA_TR, 8, 24, 31, 0, 0, MMA_RNE_FP32, 0, 0, NULL, "MMA-Sim v2 amd/sim.py (CDNA3 f16/bf16)"),
  ROW("cdna3-xf32", MMA_TR, 4, 24, 31, 0, 0, MMA_RNE_FP32, 0, 0, NULL, "MMA-Sim v2 amd/sim.py (CDNA3 xf32, inputs truncated to tf32)"),
  ROW("cdna3-fp8", MMA_GTR, 16, 24, 31, 0, 0, MMA_RNE_FP32, 0, 0, NULL, "MMA-Sim v2 amd/sim.py (CDNA3 FP8: even and odd halves)"),
};
const size_t exmy__mma_npaths = sizeof exmy__mma_paths / sizeof exmy__mma_paths[0];

const mma_datapath *exmy__mma_path_find(const char *name) {
  for (size_t i = 0; i < exmy__mma_npaths; i++)
    if (!strcmp(exmy__mma_paths[i].name, name)) return &exmy__mma_paths[i];
  return NULL;
}

size_t exmy_mma_datapath_count(void) { return exmy__mma_npaths; }

int exmy_mma_datapath_get(size_t index, char *buf, size_t buflen) {
  static const char *algo[] = {"T", "ST", "GST", "TR", "GTR", "E", "FTZ"};
  static const char *rho[] = {"rz-fp32", "rz-e8m13", "rne-fp16", "rne-fp32", "out-fp32"};
  if (index >= exmy__mma_npaths) {
    if (buf && buflen) buf[0] = 0;
    return -1;
  }
  const mma_datapath *d = &exmy__mma_paths[index];
  char extra[32] = "", zero[16] = "-";
  if (d->algo == MMA_GST) snprintf(extra, sizeof extra, " G=%d", d->G);
  if (d->algo == MMA_FTZ) snprintf(extra, sizeof extra, " P=%d", d->G);
  if (d->algo == MMA_TR || d->algo == MMA_GTR) snprintf(extra, sizeof extra, " F2=%d", d->F2);
  if (d->W) snprintf(extra, sizeof extra, " W=%d", d->W);
  if (d->algo == MMA_T || d->algo == MMA_ST || d->algo == MMA_GST) snprintf(zero, sizeof zero, "%d", d->e_zero);
  char how[48] = "";
  if (d->c_last || d->widen)
    snprintf(how, sizeof how, "%s%s%s; ", d->c_last ? "C added last" : "", d->c_last && d->widen ? ", in " : "",
             d->widen ? d->widen : "");
  return snprintf(buf, buflen, "%-25s %-3s L=%-2d F=%-2d%-6s zero=%-4s out=%-8s %s%s", d->name, algo[d->algo], d->L, d->F,
                  extra, zero, rho[d->rho], how, d->source);
}

/* PTX / CDNA type names and exmy formats. */
static const struct { const char *type, *fmt; } types[] = {
  {"e4m3", "e4m3fn"}, {"e5m2", "e5m2"}, {"e3m2", "e3m2fn"}, {"e2m3", "e2m3fn"}, {"e2m1", "e2m1fn"},
  {"f16", "f16"}, {"bf16", "bf16"}, {"tf32", "tf32"}, {"xf32", "tf32"}, {"f32", "f32"},
  {"fp8", "e4m3fnuz"}, {"bf8", "e5m2fnuz"}, {"ue8m0", "e8m0fnu"}, {"ue4m3", "e4m3fn"},
};

/* An instruction pattern: {a} and {b} range over the operand type lists
 * (space-separated); a, b, c, d, s are type names. */
typedef struct mma_name {
  const char *arch, *pattern, *a_types, *b_types, *c, *d, *s;
  int k, block;
  const char *path;
} mma_name;

#define FP8 "e4m3 e5m2"
#define F8F6F4 "e4m3 e5m2 e3m2 e2m3 e2m1"
#define AMD8 "fp8 bf8"
#define SM80(arch)                                                                          \
  {arch, "mma.m16n8k16.f32.{a}.{b}", "f16", NULL, "f32", "f32", NULL, 16, 0, "ampere-16bit-f32"},  \
  {arch, "mma.m16n8k16.f32.{a}.{b}", "bf16", NULL, "f32", "f32", NULL, 16, 0, "ampere-16bit-f32"}, \
  {arch, "mma.m16n8k8.f32.{a}.{b}", "f16", NULL, "f32", "f32", NULL, 8, 0, "ampere-16bit-f32"},    \
  {arch, "mma.m16n8k8.f32.{a}.{b}", "bf16", NULL, "f32", "f32", NULL, 8, 0, "ampere-16bit-f32"},   \
  {arch, "mma.m16n8k16.f16.{a}.{b}", "f16", NULL, "f16", "f16", NULL, 16, 0, "ampere-f16-f16"},    \
  {arch, "mma.m16n8k8.f16.{a}.{b}", "f16", NULL, "f16", "f16", NULL, 8, 0, "ampere-f16-f16"},      \
  {arch, "mma.m16n8k8.f32.{a}.{b}", "tf32", NULL, "f32", "f32", NULL, 8, 0, "ampere-tf32"},        \
  {arch, "mma.m16n8k4.f32.{a}.{b}", "tf32", NULL, "f32", "f32", NULL, 4, 0, "ampere-tf32"}

/* b_types NULL: B has A's type. */
static const mma_name names[] = {
  {"sm_70", "mma.m8n8k4.f32.{a}.{b}", "f16", NULL, "f32", "f32", NULL, 4, 0, "volta-f16-f32"},
  {"sm_70", "mma.m8n8k4.f16.{a}.{b}", "f16", NULL, "f16", "f16", NULL, 4, 0, "volta-f16-f16"},
  {"sm_75", "mma.m16n8k8.f32.{a}.{b}", "f16", NULL, "f32", "f32", NULL, 8, 0, "ampere-16bit-f32"},
  {"sm_75", "mma.m16n8k8.f16.{a}.{b}", "f16", NULL, "f16", "f16", NULL, 8, 0, "ampere-f16-f16"},
  SM80("sm_80"),
  SM80("sm_89"),
  {"sm_89", "mma.m16n8k32.f32.{a}.{b}", FP8, FP8, "f32", "f32", NULL, 32, 0, "ada-fp8-f32"},
  {"sm_89", "mma.m16n8k16.f32.{a}.{b}", FP8, FP8, "f32", "f32", NULL, 16, 0, "ada-fp8-f32"},
  {"sm_89", "mma.m16n8k32.f16.{a}.{b}", FP8, FP8, "f16", "f16", NULL, 32, 0, "ada-fp8-f16"},
  {"sm_89", "mma.m16n8k16.f16.{a}.{b}", FP8, FP8, "f16", "f16", NULL, 16, 0, "ada-fp8-f16"},
  {"sm_90", "wgmma.f32.{a}.{b}", "tf32", NULL, "f32", "f32", NULL, 8, 0, "hopper-tf32"},
  {"sm_90", "wgmma.f32.{a}.{b}", "f16", NULL, "f32", "f32", NULL, 16, 0, "hopper-16bit-f32"},
  {"sm_90", "wgmma.f32.{a}.{b}", "bf16", NULL, "f32", "f32", NULL, 16, 0, "hopper-16bit-f32"},
  {"sm_90", "wgmma.f16.{a}.{b}", "f16", NULL, "f16", "f16", NULL, 16, 0, "hopper-f16-f16"},
  {"sm_90", "wgmma.f32.{a}.{b}", FP8, FP8, "f32", "f32", NULL, 32, 0, "hopper-fp8-f32"},
  {"sm_90", "wgmma.f16.{a}.{b}", FP8, FP8, "f16", "f16", NULL, 32, 0, "hopper-fp8-f16"},
  {"sm_90", "mma.m16n8k32.f16.{a}.{b}", FP8, FP8, "f16", "f16", NULL, 32, 0, "hopper-fp8-f16-mma"},
  {"sm_90", "mma.m16n8k16.f32.{a}.{b}", "f16", NULL, "f32", "f32", NULL, 16, 0, "hopper-16bit-f32"},
  {"sm_90", "mma.m16n8k16.f32.{a}.{b}", "bf16", NULL, "f32", "f32", NULL, 16, 0, "hopper-16bit-f32"},
  {"sm_90", "mma.m16n8k16.f16.{a}.{b}", "f16", NULL, "f16", "f16", NULL, 16, 0, "hopper-f16-f16-mma"},
  {"sm_90", "mma.m16n8k8.f32.{a}.{b}", "tf32", NULL, "f32", "f32", NULL, 8, 0, "hopper-tf32"},
  {"sm_90", "mma.m16n8k4.f32.{a}.{b}", "tf32", NULL, "f32", "f32", NULL, 4, 0, "hopper-tf32"},
  {"sm_100", "mma.m16n8k32.f32.{a}.{b}", FP8, FP8, "f32", "f32", NULL, 32, 0, "blackwell-fp8-f32-mma"},
  {"sm_100", "mma.m16n8k32.f16.{a}.{b}", FP8, FP8, "f16", "f16", NULL, 32, 0, "hopper-fp8-f16-mma"},
  {"sm_100", "tcgen05.kind::tf32", "tf32", NULL, "f32", "f32", NULL, 8, 0, "hopper-tf32"},
  {"sm_100", "tcgen05.kind::f16.f32.{a}.{b}", "f16", NULL, "f32", "f32", NULL, 16, 0, "hopper-16bit-f32"},
  {"sm_100", "tcgen05.kind::f16.f32.{a}.{b}", "bf16", NULL, "f32", "f32", NULL, 16, 0, "hopper-16bit-f32"},
  {"sm_100", "tcgen05.kind::f16.f16.{a}.{b}", "f16", NULL, "f16", "f16", NULL, 16, 0, "hopper-f16-f16"},
  {"sm_100", "tcgen05.kind::f8f6f4.f32.{a}.{b}", F8F6F4, F8F6F4, "f32", "f32", NULL, 32, 0, "blackwell-f8f6f4-f32"},
  {"sm_100", "tcgen05.kind::f8f6f4.f16.{a}.{b}", F8F6F4, F8F6F4, "f16", "f16", NULL, 32, 0, "blackwell-f8f6f4-f16"},
  {"sm_100", "tcgen05.kind::mxf8f6f4.{a}.{b}", F8F6F4, F8F6F4, "f32", "f32", "ue8m0", 32, 32, "blackwell-mx"},
  {"sm_100", "tcgen05.kind::mxf4nvf4", "e2m1", NULL, "f32", "f32", "ue4m3", 64, 16, "blackwell-mxf4nvf4"},
  {"sm_100", "tcgen05.kind::mxf4nvf4.block16.ue8m0", "e2m1", NULL, "f32", "f32", "ue8m0", 64, 16, "blackwell-mxf4nvf4"},
  {"sm_100", "tcgen05.kind::mxf4nvf4.block32.ue8m0", "e2m1", NULL, "f32", "f32", "ue8m0", 64, 32, "blackwell-mxf4nvf4"},
  {"sm_100", "tcgen05.kind::mxf4", "e2m1", NULL, "f32", "f32", "ue8m0", 64, 32, "blackwell-mxf4nvf4"},
  {"sm_120", "mma.m16n8k32.f32.{a}.{b}", F8F6F4, F8F6F4, "f32", "f32", NULL, 32, 0, "blackwell-f8f6f4-f32"},
  {"sm_120", "mma.m16n8k32.f16.{a}.{b}", F8F6F4, F8F6F4, "f16", "f16", NULL, 32, 0, "blackwell-f8f6f4-f16-mma"},
  {"cdna1", "v_mfma_f32_32x32x8f16", "f16", NULL, "f32", "f32", NULL, 8, 0, "cdna1-f16"},
  {"cdna1", "v_mfma_f32_16x16x16f16", "f16", NULL, "f32", "f32", NULL, 16, 0, "cdna1-f16"},
  {"cdna1", "v_mfma_f32_32x32x4bf16", "bf16", NULL, "f32", "f32", NULL, 4, 0, "cdna1-bf16"},
  {"cdna1", "v_mfma_f32_16x16x8bf16", "bf16", NULL, "f32", "f32", NULL, 8, 0, "cdna1-bf16"},
  {"cdna2", "v_mfma_f32_32x32x8f16", "f16", NULL, "f32", "f32", NULL, 8, 0, "cdna2-p4"},
  {"cdna2", "v_mfma_f32_16x16x16f16", "f16", NULL, "f32", "f32", NULL, 16, 0, "cdna2-p4"},
  {"cdna2", "v_mfma_f32_32x32x4bf16", "bf16", NULL, "f32", "f32", NULL, 4, 0, "cdna2-p2"},
  {"cdna2", "v_mfma_f32_16x16x8bf16", "bf16", NULL, "f32", "f32", NULL, 8, 0, "cdna2-p2"},
  {"cdna2", "v_mfma_f32_32x32x8bf16_1k", "bf16", NULL, "f32", "f32", NULL, 8, 0, "cdna2-p4"},
  {"cdna2", "v_mfma_f32_16x16x16bf16_1k", "bf16", NULL, "f32", "f32", NULL, 16, 0, "cdna2-p4"},
  {"cdna3", "v_mfma_f32_32x32x8_f16", "f16", NULL, "f32", "f32", NULL, 8, 0, "cdna3-16bit"},
  {"cdna3", "v_mfma_f32_16x16x16_f16", "f16", NULL, "f32", "f32", NULL, 16, 0, "cdna3-16bit"},
  {"cdna3", "v_mfma_f32_32x32x8_bf16", "bf16", NULL, "f32", "f32", NULL, 8, 0, "cdna3-16bit"},
  {"cdna3", "v_mfma_f32_16x16x16_bf16", "bf16", NULL, "f32", "f32", NULL, 16, 0, "cdna3-16bit"},
  {"cdna3", "v_mfma_f32_32x32x4_xf32", "xf32", NULL, "f32", "f32", NULL, 4, 0, "cdna3-xf32"},
  {"cdna3", "v_mfma_f32_16x16x8_xf32", "xf32", NULL, "f32", "f32", NULL, 8, 0, "cdna3-xf32"},
  {"cdna3", "v_mfma_f32_16x16x32_{a}_{b}", AMD8, AMD8, "f32", "f32", NULL, 32, 0, "cdna3-fp8"},
  {"cdna3", "v_mfma_f32_32x32x16_{a}_{b}", AMD8, AMD8, "f32", "f32", NULL, 16, 0, "cdna3-fp8"},
};
#define N_NAMES (sizeof names / sizeof names[0])

static const char *type_fmt(const char *type) {
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(types[i].type, type)) return types[i].fmt;
  return NULL;
}

/* The w-th word of a space-separated list into buf; 0 past the end. */
static int word(const char *list, int w, char *buf, size_t len) {
  for (int i = 0; *list; i++) {
    while (*list == ' ') list++;
    const char *e = strchr(list, ' ');
    const size_t n = e ? (size_t)(e - list) : strlen(list);
    if (i == w) {
      snprintf(buf, len, "%.*s", (int)n, list);
      return n > 0;
    }
    list += n;
  }
  return 0;
}

/* Expand a pattern with operand types a and b into "arch:name". */
static void expand(const mma_name *nm, const char *a, const char *b, char *out, size_t len) {
  char body[96] = "";
  const char *p = nm->pattern;
  size_t o = 0;
  while (*p && o + 8 < sizeof body) {
    if (p[0] == '{' && (p[1] == 'a' || p[1] == 'b') && p[2] == '}') {
      o += (size_t)snprintf(body + o, sizeof body - o, "%s", p[1] == 'a' ? a : b);
      p += 3;
    } else {
      body[o++] = *p++;
      body[o] = 0;
    }
  }
  snprintf(out, len, "%s:%s", nm->arch, body);
}

/* Calls fn for every (pattern, a, b) name until it returns nonzero; with
 * text, only for the names of the architecture text starts with ("sm_90:"),
 * so a lookup expands one architecture's rows, not all. */
static int each_name(const char *text, int (*fn)(void *ctx, const mma_name *nm, const char *a, const char *b, const char *full),
                     void *ctx) {
  for (size_t i = 0; i < N_NAMES; i++) {
    const mma_name *nm = &names[i];
    if (text) {
      const size_t al = strlen(nm->arch);
      if (strncmp(text, nm->arch, al) || text[al] != ':') continue;
    }
    char a[16], b[16], full[128];
    for (int ia = 0; word(nm->a_types, ia, a, sizeof a); ia++) {
      const char *bl = nm->b_types ? nm->b_types : a;
      for (int ib = 0; word(bl, ib, b, sizeof b); ib++) {
        expand(nm, a, b, full, sizeof full);
        const int r = fn(ctx, nm, a, b, full);
        if (r) return r;
        if (!strstr(nm->pattern, "{b}")) break;
      }
    }
  }
  return 0;
}

typedef struct { size_t want, i; char *buf; size_t len; int need; } nth_ctx;
static int nth_fn(void *ctx, const mma_name *nm, const char *a, const char *b, const char *full) {
  (void)nm, (void)a, (void)b;
  nth_ctx *c = ctx;
  if (c->i++ != c->want) return 0;
  c->need = snprintf(c->buf, c->len, "%s", full);
  return 1;
}

static int count_fn(void *ctx, const mma_name *nm, const char *a, const char *b, const char *full) {
  (void)nm, (void)a, (void)b, (void)full;
  ++*(size_t *)ctx;
  return 0;
}

size_t exmy_mma_count(void) {
  size_t n = 0;
  each_name(NULL, count_fn, &n);
  return n;
}

int exmy_mma_get(size_t index, char *buf, size_t buflen) {
  nth_ctx c = {index, 0, buf, buflen, 0};
  if (!each_name(NULL, nth_fn, &c)) {
    if (buf && buflen) buf[0] = 0;
    return -1;
  }
  return c.need;
}

typedef struct { const char *text; const mma_name *nm; char a[16], b[16], full[128]; } find_ctx;
/* A full name, or the shorthand with the last operand type left out when B's type is A's. */
static int find_fn(void *ctx, const mma_name *nm, const char *a, const char *b, const char *full) {
  find_ctx *c = ctx;
  int hit = !strcmp(c->text, full);
  if (!hit && strstr(nm->pattern, "{b}") && !strcmp(a, b)) {
    const size_t tl = strlen(c->text), fl = strlen(full), bl = strlen(b);
    hit = tl + bl + 1 == fl && !strncmp(c->text, full, tl) && !strcmp(full + tl + 1, b);
  }
  if (!hit) return 0;
  c->nm = nm;
  snprintf(c->a, sizeof c->a, "%s", a);
  snprintf(c->b, sizeof c->b, "%s", b);
  snprintf(c->full, sizeof c->full, "%s", full);
  return 1;
}

static int fmt_of(const char *type, exmy_format *f, char *err, size_t errlen) {
  const char *name = type_fmt(type);
  char e[EXMY_ERRLEN];
  if (!name || exmy_format_parse(name, f, e, sizeof e)) return exmy__fail(err, errlen, "mma: no format for type '%s'", type);
  return 0;
}

int exmy_mma_parse(const char *text, exmy_mma_instr *instr, char *err, size_t errlen) {
  if (!text) return exmy__fail(err, errlen, "mma: no instruction");
  char buf[160];
  if (strlen(text) >= sizeof buf) return exmy__fail(err, errlen, "mma: instruction name too long: '%.60s...'", text);
  strcpy(buf, text);
  exmy_mma_zero zero = EXMY_MMA_ZERO_V2;
  char *comma = strchr(buf, ',');
  if (comma) {
    *comma = 0;
    if (!strcmp(comma + 1, "zero=v1")) zero = EXMY_MMA_ZERO_V1;
    else if (strcmp(comma + 1, "zero=v2"))
      return exmy__fail(err, errlen, "mma: bad option '%s' in '%s' (accepted: zero=v1, zero=v2)", comma + 1, text);
  }
  find_ctx c;
  memset(&c, 0, sizeof c);
  c.text = buf;
  if (!each_name(buf, find_fn, &c))
    return exmy__fail(err, errlen, "mma: unknown instruction '%s' (exmy mma --list prints the names, e.g. "
                      "sm_90:wgmma.f32.e4m3.e4m3, sm_100:tcgen05.kind::mxf4nvf4)", buf);
  exmy_mma_instr in;
  memset(&in, 0, sizeof in);
  snprintf(in.name, sizeof in.name, "%.95s", c.full);
  const mma_datapath *dp = exmy__mma_path_find(c.nm->path);
  in.path = (int)(dp - exmy__mma_paths);
  in.datapath = dp->name;
  in.k = c.nm->k;
  in.block = c.nm->block;
  in.has_scale = c.nm->s != NULL;
  in.zero = zero;
  if (fmt_of(c.a, &in.a_fmt, err, errlen) || fmt_of(c.b, &in.b_fmt, err, errlen) ||
      fmt_of(c.nm->c, &in.c_fmt, err, errlen) || fmt_of(c.nm->d, &in.d_fmt, err, errlen) ||
      (in.has_scale && fmt_of(c.nm->s, &in.s_fmt, err, errlen)))
    return -1;
  *instr = in;
  return 0;
}
