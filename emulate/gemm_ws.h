/* gemm_ws.h: the workspace behind exmy_gemm_ws (gemm_ws.c): buffers kept
 * across calls and grown when a call needs more, and the decode tables of
 * the operand formats, kept while the format stays the same.  Knows nothing
 * of the plan or the kernels that use it. */
#ifndef EXMY_GEMM_WS_H
#define EXMY_GEMM_WS_H
#include "exmy.h"

#include <stddef.h>

enum { GEMM_WS_A = 0, GEMM_WS_B, GEMM_WS_P, GEMM_WS_F, GEMM_WS_AS, GEMM_WS_BS, GEMM_WS_NBUF };
typedef struct gemm_ws {
  void *buf[GEMM_WS_NBUF];
  size_t cap[GEMM_WS_NBUF];
  exmy_format lut_fmt[2];
  float *lut16[2];       /* value (float) of every code of lut_fmt[w] (A: 0, B: 1) */
  exmy_format lut8_fmt[2];
  int lut8_ok[2];
  float lut8[2][256];    /* value (float) of every byte as a code of lut8_fmt[w] (NaN above its bits) */
} gemm_ws;

/* Buffer slot of ws with room for bytes (NULL: out of memory). */
void *exmy__gemm_ws_get(gemm_ws *ws, int slot, size_t bytes);
/* The float table of fmt's codes for operand w (NULL: out of memory). */
const float *exmy__gemm_ws_lut16(gemm_ws *ws, int w, const exmy_format *fmt);
/* The float table of every byte as a code of fmt (<= 8 bits) for operand w:
 * a code with bits above fmt's decodes as NaN, as the reference reads it. */
const float *exmy__gemm_ws_lut8(gemm_ws *ws, int w, const exmy_format *fmt);
void exmy__gemm_ws_release(gemm_ws *ws);
#endif
