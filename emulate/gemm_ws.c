/* gemm_ws.c: the GEMM workspace (exmy_gemm_ws): the packed operands, the
 * partial sums and the scales of a GEMM kept across calls, so a training
 * step's repeated shapes allocate (and fault in) nothing after the first
 * call; and the decode tables of the operand formats (8 and 16 bits). */
#include "emulate/gemm_ws.h"

#include <stdlib.h>
#include <string.h>

void *exmy__gemm_ws_get(gemm_ws *ws, int slot, size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (ws->cap[slot] >= bytes) return ws->buf[slot];
  /* 64-byte aligned, with headroom so a slightly larger shape does not reallocate */
  const size_t want = (bytes + bytes / 8 + 63) & ~(size_t)63;
  void *b = aligned_alloc(64, want);
  if (!b) return NULL;
  free(ws->buf[slot]);
  ws->buf[slot] = b;
  ws->cap[slot] = want;
  return b;
}

const float *exmy__gemm_ws_lut16(gemm_ws *ws, int w, const exmy_format *fmt) {
  if (ws->lut16[w] && !memcmp(&ws->lut_fmt[w], fmt, sizeof *fmt)) return ws->lut16[w];
  const size_t nc = (size_t)1 << fmt->bits;
  float *t = realloc(ws->lut16[w], nc * sizeof *t);
  if (!t) return NULL;
  for (size_t c = 0; c < nc; c++) t[c] = (float)exmy_code_to_f64(fmt, c);
  ws->lut16[w] = t;
  ws->lut_fmt[w] = *fmt;
  return t;
}

const float *exmy__gemm_ws_lut8(gemm_ws *ws, int w, const exmy_format *fmt) {
  if (ws->lut8_ok[w] && !memcmp(&ws->lut8_fmt[w], fmt, sizeof *fmt)) return ws->lut8[w];
  for (size_t c = 0; c < 256; c++) ws->lut8[w][c] = (float)exmy_code_to_f64(fmt, c);
  ws->lut8_fmt[w] = *fmt;
  ws->lut8_ok[w] = 1;
  return ws->lut8[w];
}

void exmy__gemm_ws_release(gemm_ws *ws) {
  for (int s = 0; s < GEMM_WS_NBUF; s++) free(ws->buf[s]);
  for (int w = 0; w < 2; w++) free(ws->lut16[w]);
  memset(ws, 0, sizeof *ws);
}

void exmy_gemm_ws_init(exmy_gemm_ws *ws) { ws->impl = NULL; }

void exmy_gemm_ws_free(exmy_gemm_ws *ws) {
  if (!ws || !ws->impl) return;
  exmy__gemm_ws_release(ws->impl);
  free(ws->impl);
  ws->impl = NULL;
}
