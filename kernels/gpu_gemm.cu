// gpu_gemm.cu: the cuBLASLt FP8 GEMM behind exmy_gpu_gemm_run.  Checks and the
// layout come from exmy_gpu_gemm_plan_make (gpu_plan.c, tested on the CPU);
// this file moves data and makes the cuBLASLt calls.
#include "kernels/gpu_internal.h"

#include <cublasLt.h>
#include <cstdlib>
#include <cstring>
#include <vector>

#define LT_TRY(call)                                                                                \
  do {                                                                                              \
    cublasStatus_t s_ = (call);                                                                     \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                              \
      rc = exmy__fail(err, errlen, "%s: cuBLAS status %d (%s)", #call, (int)s_,              \
                          cublasLtGetStatusString(s_));                                             \
      goto done;                                                                                    \
    }                                                                                               \
  } while (0)

static cudaDataType_t lt_type(exmy_dtype t) {
  switch (t) {
  case EXMY_DTYPE_F32: return CUDA_R_32F;
  case EXMY_DTYPE_BF16: return CUDA_R_16BF;
  case EXMY_DTYPE_E4M3FN: return CUDA_R_8F_E4M3;
  default: return CUDA_R_8F_E5M2;
  }
}

// B (k x n, row-major) to n x k.
__global__ void k_transpose(const uint8_t *in, uint8_t *out, size_t k, size_t n) {
  __shared__ uint8_t tile[32][33];
  size_t c0 = (size_t)blockIdx.x * 32, r0 = (size_t)blockIdx.y * 32;
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    size_t r = r0 + y, c = c0 + threadIdx.x;
    if (r < k && c < n) tile[y][threadIdx.x] = in[r * n + c];
  }
  __syncthreads();
  for (int y = threadIdx.y; y < 32; y += blockDim.y) {
    size_t c = c0 + y, r = r0 + threadIdx.x;
    if (c < n && r < k) out[c * k + r] = tile[threadIdx.x][y];
  }
}

// Row-major rows x cols E8M0 scales into cuBLASLt's tiled VEC32_UE8M0 layout (padding 127 = 2^0).
static std::vector<uint8_t> mx_scales(const uint8_t *s, size_t rows, size_t cols, size_t bytes) {
  std::vector<uint8_t> out(bytes, 127);
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < cols; c++) out[exmy_gpu_mx_scale_offset(r, c, cols)] = s[r * cols + c];
  return out;
}

extern "C" int exmy_gpu_gemm_run(const exmy_gpu_gemm_args *x, unsigned *flags, char *err, size_t errlen) {
  int sm = 0, rc = exmy__gpu_select(x->device, &sm, err, errlen);
  if (rc) return rc;
  exmy_gpu_gemm_plan p;
  if ((rc = exmy_gpu_gemm_plan_make(x, sm, &p, err, errlen))) return rc;
  const size_t m = x->m, n = x->n, k = x->k, dbytes = m * n * p.d_elem_bytes;
  uint8_t *dA = NULL, *dB = NULL, *dBt = NULL, *dAs = NULL, *dBs = NULL, *dC = NULL;
  void *dD = NULL, *ws = NULL;
  float *dsc = NULL;
  const void *A = x->a, *Bt = x->b, *Ascale = NULL, *Bscale = NULL;
  const size_t ws_bytes = (size_t)32 << 20;
  cublasLtHandle_t lt = NULL;
  cublasLtMatmulDesc_t op = NULL;
  cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL, ld = NULL;
  cublasLtMatmulPreference_t pref = NULL;
  cublasLtMatmulHeuristicResult_t heur;
  int found = 0;
  const cublasOperation_t opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
  const int8_t fast = x->fast_accum ? 1 : 0;
  const float beta = 0.0f;
  float host_sc[4] = {x->scale_b, x->scale_a, x->scale_d, 0.0f}; // cuBLASLt's A scale is our B's
  void *D = x->device_ptrs ? x->d : NULL;

  // operands on the device; B^T (n x k) is cuBLASLt's A
  if (!x->device_ptrs) {
    CUDA_TRY(cudaMalloc(&dA, m * k));
    CUDA_TRY(cudaMemcpy(dA, x->a, m * k, cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMalloc(&dB, n * k));
    CUDA_TRY(cudaMemcpy(dB, x->b, n * k, cudaMemcpyHostToDevice));
    A = dA;
    Bt = dB;
    CUDA_TRY(cudaMalloc(&dD, dbytes));
    D = dD;
  }
  if (p.transpose_b) {
    CUDA_TRY(cudaMalloc(&dBt, n * k));
    dim3 grid((unsigned)((n + 31) / 32), (unsigned)((k + 31) / 32)), block(32, 8);
    k_transpose<<<grid, block>>>((const uint8_t *)Bt, dBt, k, n);
    CUDA_TRY(cudaGetLastError());
    Bt = dBt;
  }
  CUDA_TRY(cudaMalloc(&dsc, sizeof host_sc));
  CUDA_TRY(cudaMemcpy(dsc, host_sc, sizeof host_sc, cudaMemcpyHostToDevice));
  if (x->block_scaled) {
    size_t sc = p.scale_cols;
    std::vector<uint8_t> ha(m * sc), hb(n * sc);
    CUDA_TRY(cudaMemcpy(ha.data(), x->a_scales, m * sc, x->device_ptrs ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost));
    CUDA_TRY(cudaMemcpy(hb.data(), x->b_scales, n * sc, x->device_ptrs ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost));
    std::vector<uint8_t> ta = mx_scales(ha.data(), m, sc, p.a_scale_bytes), tb = mx_scales(hb.data(), n, sc, p.b_scale_bytes);
    CUDA_TRY(cudaMalloc(&dAs, ta.size()));
    CUDA_TRY(cudaMalloc(&dBs, tb.size()));
    CUDA_TRY(cudaMemcpy(dAs, ta.data(), ta.size(), cudaMemcpyHostToDevice));
    CUDA_TRY(cudaMemcpy(dBs, tb.data(), tb.size(), cudaMemcpyHostToDevice));
    Ascale = dBs; // cuBLASLt's A is our B
    Bscale = dAs;
  } else {
    Ascale = dsc + 0;
    Bscale = dsc + 1;
  }
  if (x->d_type == EXMY_DTYPE_E4M3FN) { // C must be bf16 with an FP8 D; beta = 0 never reads it
    CUDA_TRY(cudaMalloc(&dC, m * n * 2));
    CUDA_TRY(cudaMemset(dC, 0, m * n * 2));
  }
  CUDA_TRY(cudaMalloc(&ws, ws_bytes));

  LT_TRY(cublasLtCreate(&lt));
  LT_TRY(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT));
  LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof opN));
  LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
  if (x->block_scaled) {
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode));
  }
  LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &Ascale, sizeof Ascale));
  LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &Bscale, sizeof Bscale));
  if (x->d_type == EXMY_DTYPE_E4M3FN) {
    const void *ds = dsc + 2, *am = dsc + 3;
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &ds, sizeof ds));
    LT_TRY(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &am, sizeof am));
  }
  LT_TRY(cublasLtMatrixLayoutCreate(&la, lt_type(p.lt_a_type), p.lt_k, p.lt_m, p.lda));
  LT_TRY(cublasLtMatrixLayoutCreate(&lb, lt_type(p.lt_b_type), p.lt_k, p.lt_n, p.ldb));
  LT_TRY(cublasLtMatrixLayoutCreate(&lc, x->d_type == EXMY_DTYPE_E4M3FN ? CUDA_R_16BF : lt_type(x->d_type), p.lt_m, p.lt_n, p.ldd));
  LT_TRY(cublasLtMatrixLayoutCreate(&ld, lt_type(x->d_type), p.lt_m, p.lt_n, p.ldd));
  LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
  LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  LT_TRY(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, ld, pref, 1, &heur, &found));
  if (!found) {
    rc = exmy__fail(err, errlen, "cuBLASLt has no algorithm for this FP8 GEMM (m %zu, n %zu, k %zu)", m, n, k);
    goto done;
  }
  LT_TRY(cublasLtMatmul(lt, op, &x->alpha, Bt, la, A, lb, &beta, dC ? (const void *)dC : D, lc, D, ld, &heur.algo, ws,
                        ws_bytes, 0));
  CUDA_TRY(cudaDeviceSynchronize());
  if (!x->device_ptrs) CUDA_TRY(cudaMemcpy(x->d, D, dbytes, cudaMemcpyDeviceToHost));
  if (flags) { // cuBLASLt raises nothing: read the flags off D (a host copy when D is on the device)
    if (x->device_ptrs) {
      std::vector<uint8_t> hd(dbytes);
      CUDA_TRY(cudaMemcpy(hd.data(), D, dbytes, cudaMemcpyDeviceToHost));
      *flags |= exmy__gpu_d_flags(x->d_type, hd.data(), m * n);
    } else {
      *flags |= exmy__gpu_d_flags(x->d_type, x->d, m * n);
    }
  }
  if (x->amax_d)
    CUDA_TRY(cudaMemcpy(x->amax_d, dsc + 3, sizeof(float), x->device_ptrs ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost));
done:
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (la) cublasLtMatrixLayoutDestroy(la);
  if (lb) cublasLtMatrixLayoutDestroy(lb);
  if (lc) cublasLtMatrixLayoutDestroy(lc);
  if (ld) cublasLtMatrixLayoutDestroy(ld);
  if (op) cublasLtMatmulDescDestroy(op);
  if (lt) cublasLtDestroy(lt);
  cudaFree(dA); cudaFree(dB); cudaFree(dBt); cudaFree(dAs); cudaFree(dBs); cudaFree(dC); cudaFree(dD);
  cudaFree(dsc); cudaFree(ws);
  return rc;
}
