// gpu_quant.cu: device selection and query, and device quantization: the
// hardware conversions of cuda_fp8.h and the generic kernel built on
// the library's rounding core, emulate/round_core.h (any exmy_format, every
// rounding mode including stochastic rounding with exmy_random64's counter
// stream): the same source as the host conversions, so the same bits.
#include "kernels/gpu_internal.h"
#include "emulate/round_core.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cstring>

extern "C" int exmy_gpu_built(void) { return 1; }

int exmy__gpu_select(int device, int *sm, char *err, size_t errlen) {
  int n = 0, major = 0, minor = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return exmy__fail(err, errlen, "no usable CUDA device (cudaGetDeviceCount: %s)",
                          cudaGetErrorString(e));
  }
  if (n == 0) return exmy__fail(err, errlen, "no CUDA device");
  if (device < 0 && cudaGetDevice(&device) != cudaSuccess) device = 0;
  if (device >= n)
    return exmy__fail(err, errlen, "device %d does not exist (devices 0..%d)", device, n - 1);
  if ((e = cudaSetDevice(device)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) != cudaSuccess ||
      (e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) != cudaSuccess)
    return exmy__fail(err, errlen, "device %d: %s", device, cudaGetErrorString(e));
  if (sm) *sm = major * 10 + minor;
  return 0;
}

extern "C" int exmy_gpu_query(int device, exmy_gpu_info *info, char *err, size_t errlen) {
  int rc = exmy__gpu_select(device, &info->sm, err, errlen);
  if (rc) return rc;
  cudaDeviceProp prop;
  if (device < 0) cudaGetDevice(&device);
  CUDA_TRY(cudaGetDeviceProperties(&prop, device));
  info->device = device;
  snprintf(info->name, sizeof info->name, "%s", prop.name);
  info->multiprocessors = prop.multiProcessorCount;
  info->mem_bytes = prop.totalGlobalMem;
  CUDA_TRY(cudaRuntimeGetVersion(&info->runtime_version));
  CUDA_TRY(cudaDriverGetVersion(&info->driver_version));
  info->cublaslt_version = cublasLtGetVersion();
done:
  return rc;
}

// ---- kernels ----------------------------------------------------------------

__device__ static inline void store_code(void *codes, int cb, size_t i, uint64_t c) {
  switch (cb) {
  case 1: ((uint8_t *)codes)[i] = (uint8_t)c; break;
  case 2: ((uint16_t *)codes)[i] = (uint16_t)c; break;
  case 4: ((uint32_t *)codes)[i] = (uint32_t)c; break;
  default: ((uint64_t *)codes)[i] = c; break;
  }
}

__device__ static inline void or_flags(unsigned *flags, unsigned fl) {
  fl = __reduce_or_sync(0xffffffffu, fl);
  if ((threadIdx.x & 31) == 0 && fl) atomicOr(flags, fl);
}

// range: input i is the float32 with bit pattern lo + i (src unused).
__global__ void k_generic(exmy_format f, exmy_rounding r, int src_type, const void *src, size_t n,
                          uint64_t index0, void *codes, int cb, unsigned *flags, int range, uint32_t lo) {
  unsigned fl = 0;
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i0 = (size_t)blockIdx.x * blockDim.x; i0 < n; i0 += stride) {
    size_t i = i0 + threadIdx.x;
    if (i < n) {
      uint64_t c;
      if (range) c = exmy__from_f32(&f, &r, lo + (uint32_t)i, (uint64_t)(lo + (uint32_t)i), &fl);
      else if (src_type == EXMY_DTYPE_F32) c = exmy__from_f32(&f, &r, ((const uint32_t *)src)[i], index0 + i, &fl);
      else if (src_type == EXMY_DTYPE_F64) c = exmy__from_f64(&f, &r, ((const uint64_t *)src)[i], index0 + i, &fl);
      else if (src_type == EXMY_DTYPE_BF16) c = exmy__from_bf16(&f, &r, ((const uint16_t *)src)[i], index0 + i, &fl);
      else c = exmy__from_f16(&f, &r, ((const uint16_t *)src)[i], index0 + i, &fl);
      store_code(codes, cb, i, c);
    }
  }
  or_flags(flags, fl);
}

__device__ static inline uint8_t hw_cvt(int src_type, const void *src, size_t i, __nv_saturation_t sat,
                                        __nv_fp8_interpretation_t it) {
  switch (src_type) {
  case EXMY_DTYPE_F32: return __nv_cvt_float_to_fp8(((const float *)src)[i], sat, it);
  case EXMY_DTYPE_F64: return __nv_cvt_double_to_fp8(((const double *)src)[i], sat, it);
  case EXMY_DTYPE_BF16: {
    __nv_bfloat16_raw h;
    h.x = ((const unsigned short *)src)[i];
    return __nv_cvt_bfloat16raw_to_fp8(h, sat, it);
  }
  default: {
    __half_raw h;
    h.x = ((const unsigned short *)src)[i];
    return __nv_cvt_halfraw_to_fp8(h, sat, it);
  }
  }
}

__global__ void k_hw(int src_type, const void *src, size_t n, uint8_t *codes, __nv_saturation_t sat,
                     __nv_fp8_interpretation_t it, int range, uint32_t lo) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    codes[i] = range ? __nv_cvt_float_to_fp8(__uint_as_float(lo + (uint32_t)i), sat, it) : hw_cvt(src_type, src, i, sat, it);
}

// float32, four per thread: the paired conversion (cvt ... e4m3x2.f32) at full bandwidth.
__global__ void k_hw_f32x4(const float4 *src, size_t n4, uint32_t *codes, __nv_saturation_t sat,
                           __nv_fp8_interpretation_t it) {
  const size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
    float4 v = src[i];
    uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(v.x, v.y), sat, it);
    uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(v.z, v.w), sat, it);
    codes[i] = (lo & 0xffffu) | (hi << 16);
  }
}

// ---- host side ---------------------------------------------------------------

static int launch(const exmy_format *fmt, const exmy_rounding *rnd, int hw, exmy_dtype src_type,
                  const void *d_src, size_t n, uint64_t index0, void *d_codes, unsigned *flags, int range,
                  uint32_t lo, char *err, size_t errlen) {
  int rc = 0;
  unsigned *d_flags = NULL;
  if (n == 0) return 0;
  int sms = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  size_t want = (n + 255) / 256, cap = (size_t)(sms > 0 ? sms : 16) * 32;
  unsigned blocks = (unsigned)(want < cap ? want : cap);
  if (hw) {
    char why[EXMY_ERRLEN];
    if (exmy_gpu_hw_quant_check(fmt, rnd, range ? EXMY_DTYPE_F32 : src_type, why, sizeof why))
      return exmy__fail(err, errlen, "%s", why);
    __nv_saturation_t sat = rnd->sat == EXMY_SAT_FINITE ? __NV_SATFINITE : __NV_NOSAT;
    __nv_fp8_interpretation_t it = strcmp(fmt->name, "e4m3fn") ? __NV_E5M2 : __NV_E4M3;
    if (!range && src_type == EXMY_DTYPE_F32 && n % 4 == 0 && ((uintptr_t)d_src & 15) == 0 && ((uintptr_t)d_codes & 3) == 0) {
      size_t w4 = (n / 4 + 255) / 256;
      k_hw_f32x4<<<(unsigned)(w4 < cap ? w4 : cap), 256>>>((const float4 *)d_src, n / 4, (uint32_t *)d_codes, sat, it);
    } else {
      k_hw<<<blocks, 256>>>(src_type, d_src, n, (uint8_t *)d_codes, sat, it, range, lo);
    }
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaDeviceSynchronize());
  } else {
    CUDA_TRY(cudaMalloc(&d_flags, sizeof *d_flags));
    CUDA_TRY(cudaMemset(d_flags, 0, sizeof *d_flags));
    k_generic<<<blocks, 256>>>(*fmt, *rnd, (int)src_type, d_src, n, index0, d_codes, exmy_code_bytes(fmt), d_flags,
                               range, lo);
    CUDA_TRY(cudaGetLastError());
    CUDA_TRY(cudaDeviceSynchronize());
    if (flags) {
      unsigned fl = 0;
      CUDA_TRY(cudaMemcpy(&fl, d_flags, sizeof fl, cudaMemcpyDeviceToHost));
      *flags |= fl; /* sticky, as every exmy call */
    }
  }
done:
  if (d_flags) cudaFree(d_flags);
  return rc;
}

static size_t src_bytes(exmy_dtype t) {
  return t == EXMY_DTYPE_F64 ? 8 : t == EXMY_DTYPE_F32 ? 4 : 2;
}

extern "C" int exmy_gpu_quantize_dev(const exmy_format *fmt, const exmy_rounding *rnd, int hw, exmy_dtype src_type,
                                     const void *d_src, size_t n, uint64_t index0, void *d_codes, unsigned *flags,
                                     char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, src_type, err, errlen)) return -1;
  int rc = exmy__gpu_select(-1, NULL, err, errlen);
  if (rc) return rc;
  return launch(fmt, rnd, hw, src_type, d_src, n, index0, d_codes, flags, 0, 0, err, errlen);
}

extern "C" int exmy_gpu_quantize(const exmy_format *fmt, const exmy_rounding *rnd, int hw, exmy_dtype src_type,
                                 const void *src, size_t n, uint64_t index0, void *codes, unsigned *flags,
                                 char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, src_type, err, errlen)) return -1;
  int rc = exmy__gpu_select(-1, NULL, err, errlen);
  if (rc) return rc;
  void *d_src = NULL, *d_codes = NULL;
  size_t cb = (size_t)exmy_code_bytes(fmt);
  CUDA_TRY(cudaMalloc(&d_src, n * src_bytes(src_type) + 16));
  CUDA_TRY(cudaMalloc(&d_codes, n * cb + 16));
  CUDA_TRY(cudaMemcpy(d_src, src, n * src_bytes(src_type), cudaMemcpyHostToDevice));
  rc = launch(fmt, rnd, hw, src_type, d_src, n, index0, d_codes, flags, 0, 0, err, errlen);
  if (rc) goto done;
  CUDA_TRY(cudaMemcpy(codes, d_codes, n * cb, cudaMemcpyDeviceToHost));
done:
  cudaFree(d_src);
  cudaFree(d_codes);
  return rc;
}

extern "C" int exmy_gpu_quantize_f32_range(const exmy_format *fmt, const exmy_rounding *rnd, int hw, uint32_t lo,
                                           size_t n, void *codes, unsigned *flags, char *err, size_t errlen) {
  if (exmy__quantize_check(rnd, EXMY_DTYPE_F32, err, errlen)) return -1;
  int rc = exmy__gpu_select(-1, NULL, err, errlen);
  if (rc) return rc;
  void *d_codes = NULL;
  size_t cb = (size_t)exmy_code_bytes(fmt);
  if (n > ((size_t)1 << 32) - lo)
    return exmy__fail(err, errlen, "range 0x%08x + %zu passes 2^32", (unsigned)lo, n);
  CUDA_TRY(cudaMalloc(&d_codes, n * cb + 16));
  rc = launch(fmt, rnd, hw, EXMY_DTYPE_F32, NULL, n, lo, d_codes, flags, 1, lo, err, errlen);
  if (rc) goto done;
  CUDA_TRY(cudaMemcpy(codes, d_codes, n * cb, cudaMemcpyDeviceToHost));
done:
  cudaFree(d_codes);
  return rc;
}
