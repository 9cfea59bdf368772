// bench/gpu.cu: device benchmarks, measured in one run so the ratios hold
// on the machine at hand: quantization bandwidth (hardware conversions and
// the generic kernel) against the device's copy bandwidth, and cuBLASLt FP8
// against BF16 GEMM TFLOP/s for 4096 and 8192 squares.  Exit 77 without a
// device.  Built by `make bench` when CUDA is found.
#include "exmy.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "bench/gpu: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define LK(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "bench/gpu: %s: status %d\n", #x, (int)s_); exit(1); } } while (0)

static float time_ms(void (*fn)(void *), void *arg, int reps) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  fn(arg); // warm-up
  CK(cudaEventRecord(a));
  for (int i = 0; i < reps; i++) fn(arg);
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms;
  CK(cudaEventElapsedTime(&ms, a, b));
  return ms / reps;
}

struct qarg { exmy_format f; exmy_rounding r; int hw; const float *src; void *dst; size_t n; };
static void run_copy(void *p) { qarg *q = (qarg *)p; CK(cudaMemcpy(q->dst, q->src, q->n * 4, cudaMemcpyDeviceToDevice)); }
static void run_quant(void *p) {
  qarg *q = (qarg *)p;
  char err[EXMY_ERRLEN];
  if (exmy_gpu_quantize_dev(&q->f, &q->r, q->hw, EXMY_DTYPE_F32, q->src, q->n, 0, q->dst, NULL, err, sizeof err)) {
    fprintf(stderr, "bench/gpu: %s\n", err);
    exit(1);
  }
}

struct garg {
  cublasLtHandle_t lt; cublasLtMatmulDesc_t op; cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo; const void *a, *b; void *d; void *ws; size_t ws_bytes;
};
static void run_gemm(void *p) {
  garg *g = (garg *)p;
  const float alpha = 1, beta = 0;
  LK(cublasLtMatmul(g->lt, g->op, &alpha, g->a, g->la, g->b, g->lb, &beta, g->d, g->ld, g->d, g->ld, &g->algo, g->ws,
                    g->ws_bytes, 0));
}

// TFLOP/s of an n x n x n GEMM with A, B of type ab (TN) and D of type dt.
static double gemm_tflops(cublasLtHandle_t lt, size_t n, cudaDataType_t ab, cudaDataType_t dt, void *bufA, void *bufB,
                          void *bufD, void *ws, size_t ws_bytes, const float *one) {
  garg g = {};
  g.lt = lt; g.a = bufA; g.b = bufB; g.d = bufD; g.ws = ws; g.ws_bytes = ws_bytes;
  cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
  LK(cublasLtMatmulDescCreate(&g.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSA, &T, sizeof T));
  LK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_TRANSB, &N, sizeof N));
  if (ab != CUDA_R_16BF) {
    LK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &one, sizeof one));
    LK(cublasLtMatmulDescSetAttribute(g.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &one, sizeof one));
  }
  LK(cublasLtMatrixLayoutCreate(&g.la, ab, n, n, n));
  LK(cublasLtMatrixLayoutCreate(&g.lb, ab, n, n, n));
  LK(cublasLtMatrixLayoutCreate(&g.ld, dt, n, n, n));
  cublasLtMatmulPreference_t pref;
  LK(cublasLtMatmulPreferenceCreate(&pref));
  LK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t h;
  int found = 0;
  LK(cublasLtMatmulAlgoGetHeuristic(lt, g.op, g.la, g.lb, g.ld, g.ld, pref, 1, &h, &found));
  if (!found) { fprintf(stderr, "bench/gpu: no cuBLASLt algorithm for n = %zu\n", n); exit(1); }
  g.algo = h.algo;
  float ms = time_ms(run_gemm, &g, 20);
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(g.la); cublasLtMatrixLayoutDestroy(g.lb); cublasLtMatrixLayoutDestroy(g.ld);
  cublasLtMatmulDescDestroy(g.op);
  return 2.0 * (double)n * n * n / (ms * 1e-3) / 1e12;
}

int main(void) {
  exmy_gpu_info info;
  char err[EXMY_ERRLEN];
  if (exmy_gpu_query(0, &info, err, sizeof err)) { printf("bench/gpu: skipped: %s\n", err); return 77; }
  printf("device: %s (sm_%d, %d SMs)\n", info.name, info.sm, info.multiprocessors);

  // quantization: 2^28 float32 (1 GiB) in, codes out; bandwidth = bytes read + written
  const size_t n = (size_t)1 << 28;
  float *src;
  void *dst;
  CK(cudaMalloc(&src, n * 4));
  CK(cudaMalloc(&dst, n * 4));
  CK(cudaMemset(src, 0x3c, n * 4));
  qarg q;
  q.src = src; q.dst = dst; q.n = n; q.hw = 0;
  q.r = exmy_rounding_default();
  exmy_format_parse("e4m3fn", &q.f, NULL, 0);
  double copy = 2.0 * n * 4 / (time_ms(run_copy, &q, 10) * 1e-3) / 1e9;
  printf("copy (float32 -> float32)      %8.1f GB/s\n", copy);
  struct { const char *fmt; exmy_round_mode mode; exmy_saturation sat; int hw; } cfg[] = {
    {"e4m3fn", EXMY_RNE, EXMY_SAT_FINITE, 1}, {"e5m2", EXMY_RNE, EXMY_SAT_NONE, 1},
    {"e4m3fn", EXMY_RNE, EXMY_SAT_FINITE, 0}, {"e4m3fn", EXMY_SR, EXMY_SAT_FINITE, 0}, {"bf16", EXMY_RNE, EXMY_SAT_NONE, 0},
  };
  for (auto &c : cfg) {
    exmy_format_parse(c.fmt, &q.f, NULL, 0);
    q.r.mode = c.mode; q.r.sat = c.sat; q.hw = c.hw;
    double gbs = (double)n * (4 + exmy_code_bytes(&q.f)) / (time_ms(run_quant, &q, 10) * 1e-3) / 1e9;
    printf("quantize %-7s %-3s %-7s       %8.1f GB/s  %5.2f x copy  (%.1f Gelem/s)\n", c.fmt, exmy_round_mode_name(c.mode),
           c.hw ? "hw" : "generic", gbs, gbs / copy, gbs / (4 + exmy_code_bytes(&q.f)));
  }
  CK(cudaFree(src));
  CK(cudaFree(dst));

  // GEMM: FP8 (e4m3 x e4m3 -> bf16) against BF16 (-> bf16), same shapes, same run
  if (info.sm >= 89) {
    cublasLtHandle_t lt;
    LK(cublasLtCreate(&lt));
    const size_t nmax = 8192, ws_bytes = (size_t)32 << 20;
    void *A, *B, *D, *ws;
    float *one;
    const float h1 = 1;
    CK(cudaMalloc(&A, nmax * nmax * 2));
    CK(cudaMalloc(&B, nmax * nmax * 2));
    CK(cudaMalloc(&D, nmax * nmax * 2));
    CK(cudaMalloc(&ws, ws_bytes));
    CK(cudaMalloc(&one, 4));
    CK(cudaMemcpy(one, &h1, 4, cudaMemcpyHostToDevice));
    CK(cudaMemset(A, 0x30, nmax * nmax * 2));
    CK(cudaMemset(B, 0x30, nmax * nmax * 2));
    for (size_t s : {(size_t)4096, (size_t)8192}) {
      double f8 = gemm_tflops(lt, s, CUDA_R_8F_E4M3, CUDA_R_16BF, A, B, D, ws, ws_bytes, one);
      double b16 = gemm_tflops(lt, s, CUDA_R_16BF, CUDA_R_16BF, A, B, D, ws, ws_bytes, one);
      printf("GEMM %5zu^3: FP8 %7.1f TFLOP/s, BF16 %7.1f TFLOP/s, FP8/BF16 %.2f\n", s, f8, b16, f8 / b16);
    }
    cublasLtDestroy(lt);
    cudaFree(A); cudaFree(B); cudaFree(D); cudaFree(ws); cudaFree(one);
  }
  return 0;
}
