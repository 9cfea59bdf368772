// gpu_probe.cu: dot-product engines for the tensor-core probe (probe.c):
// raw FP8 mma.sync m16n8k32 (sm_89+) and wgmma m64n8k32 (sm_90a), chained
// over k through the accumulator with no promotion, and cuBLASLt's FP8 GEMM.
// Every row of A and every column of B hold the same vector, so D[0][0] is
// the dot product whatever row/column a lane owns; only the k positions of
// the fragment layouts (PTX ISA) matter.
#include "kernels/gpu_internal.h"

#include <cstdlib>
#include <cstring>
#include <vector>

enum { T_E4M3 = 0, T_E5M2 = 1 };

__device__ static inline uint32_t load4(const uint8_t *p) { return *(const uint32_t *)p; }

// One warp per dot product.  A fragment (16 x 32, row): registers 0/1 hold
// k = 4t..4t+3 of rows g and g+8, registers 2/3 k = 16+4t..; B (32 x 8, col):
// register 0 k = 4t.., register 1 k = 16+4t.. (t = lane % 4).
template <int TA, int TB>
__global__ void k_mma(const uint8_t *a, const uint8_t *b, size_t k, float *out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const uint8_t *av = a + blockIdx.x * k, *bv = b + blockIdx.x * k;
  const int t = threadIdx.x % 4;
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  for (size_t kk = 0; kk < k; kk += 32) {
    uint32_t a0 = load4(av + kk + 4 * t), a2 = load4(av + kk + 16 + 4 * t);
    uint32_t b0 = load4(bv + kk + 4 * t), b1 = load4(bv + kk + 16 + 4 * t);
#define MMA(ta, tb)                                                                              \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." ta "." tb ".f32 "                        \
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"                 \
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                          \
               : "r"(a0), "r"(a0), "r"(a2), "r"(a2), "r"(b0), "r"(b1))
    if (TA == T_E4M3 && TB == T_E4M3) MMA("e4m3", "e4m3");
    else if (TA == T_E4M3) MMA("e4m3", "e5m2");
    else if (TB == T_E4M3) MMA("e5m2", "e4m3");
    else MMA("e5m2", "e5m2");
#undef MMA
  }
  if (threadIdx.x == 0) out[blockIdx.x] = d0;
#else
  if (threadIdx.x == 0) out[blockIdx.x] = __int_as_float(0x7fbadbad);
#endif
}

// One warpgroup per dot product; A (64 x 32) and B (8 x 32) in shared
// memory, K-major without swizzle: 8 x 16-byte core matrices, the next one
// along k 128 bytes on (leading byte offset), along m/n 256 (stride).
template <int TA, int TB>
__global__ void k_wgmma(const uint8_t *a, const uint8_t *b, size_t k, float *out) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  __shared__ __align__(128) uint8_t sa[64 * 32];
  __shared__ __align__(128) uint8_t sb[8 * 32];
  const uint8_t *av = a + blockIdx.x * k, *bv = b + blockIdx.x * k;
  const int tid = threadIdx.x;
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  auto desc = [](const void *p) {
    uint64_t addr = (uint64_t)__cvta_generic_to_shared(p);
    return ((addr & 0x3ffff) >> 4) | ((uint64_t)(128 >> 4) << 16) | ((uint64_t)(256 >> 4) << 32);
  };
  const uint64_t da = desc(sa), db = desc(sb);
  for (size_t kk = 0; kk < k; kk += 32) {
    for (int i = tid; i < 64 * 32; i += 128) sa[i] = av[kk + (i % 256) / 128 * 16 + i % 16];
    for (int i = tid; i < 8 * 32; i += 128) sb[i] = bv[kk + i / 128 * 16 + i % 16];
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#define WGMMA(ta, tb)                                                                            \
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k32.f32." ta "." tb " "                        \
               "{%0, %1, %2, %3}, %4, %5, 1, 1, 1;"                                              \
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                          \
               : "l"(da), "l"(db)                                                                \
               : "memory")
    if (TA == T_E4M3 && TB == T_E4M3) WGMMA("e4m3", "e4m3");
    else if (TA == T_E4M3) WGMMA("e4m3", "e5m2");
    else if (TB == T_E4M3) WGMMA("e5m2", "e4m3");
    else WGMMA("e5m2", "e5m2");
#undef WGMMA
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = d0;
#else
  if (threadIdx.x == 0) out[blockIdx.x] = __int_as_float(0x7fbadbad);
#endif
}

typedef void (*kernel_t)(const uint8_t *, const uint8_t *, size_t, float *);

static kernel_t pick(exmy_gpu_engine e, int ta, int tb) {
  static const kernel_t mma[4] = {k_mma<0, 0>, k_mma<0, 1>, k_mma<1, 0>, k_mma<1, 1>};
  static const kernel_t wg[4] = {k_wgmma<0, 0>, k_wgmma<0, 1>, k_wgmma<1, 0>, k_wgmma<1, 1>};
  return (e == EXMY_GPU_ENGINE_MMA ? mma : wg)[ta * 2 + tb];
}

static const char *engine_name(exmy_gpu_engine e) {
  switch (e) {
  case EXMY_GPU_ENGINE_MMA: return "mma.sync.m16n8k32";
  case EXMY_GPU_ENGINE_WGMMA: return "wgmma.m64n8k32";
  case EXMY_GPU_ENGINE_LT: return "cublasLt";
  default: return "cublasLt-fastacc";
  }
}

extern "C" int exmy_gpu_probe_engine(exmy_gpu_probe_ctx *ctx, exmy_probe_engine *eng, char *err, size_t errlen) {
  int sm = 0, rc = exmy__gpu_select(ctx->device, &sm, err, errlen);
  if (rc) return rc;
  memset(eng, 0, sizeof *eng);
  eng->name = engine_name(ctx->engine);
  eng->dot = exmy_gpu_probe_dot;
  eng->ctx = ctx;
  eng->k_max = 16384;
  if (sm < 89) return exmy__fail(err, errlen, "%s: FP8 needs sm_89 or newer (device is sm_%d)", eng->name, sm);
  if (ctx->engine == EXMY_GPU_ENGINE_WGMMA && sm != 90)
    return exmy__fail(err, errlen, "%s needs sm_90a (device is sm_%d)", eng->name, sm);
  return 0;
}

extern "C" int exmy_gpu_probe_dot(void *vctx, const exmy_format *fa, const exmy_format *fb, size_t k, size_t count,
                                  const uint8_t *a, const uint8_t *b, float *out, char *err, size_t errlen) {
  const exmy_gpu_probe_ctx *ctx = (const exmy_gpu_probe_ctx *)vctx;
  int ta = exmy__gpu_fp8_type(fa), tb = exmy__gpu_fp8_type(fb), rc = 0;
  if (ta < 0 || tb < 0) {
    exmy__fail(err, errlen, "probe: %s is not e4m3fn or e5m2", ta < 0 ? fa->name : fb->name);
    return -1;
  }
  if (k % 32) {
    exmy__fail(err, errlen, "probe: k = %zu is not a multiple of 32", k);
    return -1;
  }
  if (count == 0) return 0;
  if (ctx->engine == EXMY_GPU_ENGINE_LT || ctx->engine == EXMY_GPU_ENGINE_LT_FASTACC) {
    // dot i is D[i][i] of a GEMM whose A row i and B column i are the vectors
    const size_t chunk = 1024;
    for (size_t i0 = 0; i0 < count; i0 += chunk) {
      size_t c = count - i0 < chunk ? count - i0 : chunk, mn = (c + 15) / 16 * 16;
      std::vector<uint8_t> A(mn * k, 0), B(mn * k, 0);
      std::vector<float> D(mn * mn);
      memcpy(A.data(), a + i0 * k, c * k);
      memcpy(B.data(), b + i0 * k, c * k);
      exmy_gpu_gemm_args g;
      exmy_gpu_gemm_args_init(&g);
      g.m = g.n = mn;
      g.k = k;
      g.a_type = (exmy_dtype)(ta == T_E4M3 ? EXMY_DTYPE_E4M3FN : EXMY_DTYPE_E5M2);
      g.b_type = (exmy_dtype)(tb == T_E4M3 ? EXMY_DTYPE_E4M3FN : EXMY_DTYPE_E5M2);
      g.a = A.data();
      g.b = B.data();
      g.b_nk = 1;
      g.d = D.data();
      g.fast_accum = ctx->engine == EXMY_GPU_ENGINE_LT_FASTACC;
      g.device = ctx->device;
      if (exmy_gpu_gemm_run(&g, NULL, err, errlen)) return -1;
      for (size_t i = 0; i < c; i++) out[i0 + i] = D[i * mn + i];
    }
    return 0;
  }
  uint8_t *da = NULL, *db = NULL;
  float *dout = NULL;
  ta = ta == EXMY_DTYPE_E4M3FN ? T_E4M3 : T_E5M2;
  tb = tb == EXMY_DTYPE_E4M3FN ? T_E4M3 : T_E5M2;
  kernel_t kern = pick(ctx->engine, ta, tb);
  CUDA_TRY(cudaMalloc(&da, count * k));
  CUDA_TRY(cudaMalloc(&db, count * k));
  CUDA_TRY(cudaMalloc(&dout, count * sizeof(float)));
  CUDA_TRY(cudaMemcpy(da, a, count * k, cudaMemcpyHostToDevice));
  CUDA_TRY(cudaMemcpy(db, b, count * k, cudaMemcpyHostToDevice));
  for (size_t i0 = 0; i0 < count; i0 += 65535) {
    size_t c = count - i0 < 65535 ? count - i0 : 65535;
    kern<<<(unsigned)c, ctx->engine == EXMY_GPU_ENGINE_MMA ? 32 : 128>>>(da + i0 * k, db + i0 * k, k, dout + i0);
    CUDA_TRY(cudaGetLastError());
  }
  CUDA_TRY(cudaDeviceSynchronize());
  CUDA_TRY(cudaMemcpy(out, dout, count * sizeof(float), cudaMemcpyDeviceToHost));
done:
  cudaFree(da); cudaFree(db); cudaFree(dout);
  return rc ? -1 : 0;
}
