/* bench.h: the timer and the parallel-copy baseline the benchmarks share. */
#ifndef EXMY_BENCH_H
#define EXMY_BENCH_H
#include <omp.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The limit the quantizers chase: a copy of the same float32 array, each
 * thread copying one contiguous range. */
static inline void bench_copy_parallel(float *dst, const float *src, size_t n) {
#pragma omp parallel
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    size_t lo = n * (size_t)t / (size_t)nt, hi = n * (size_t)(t + 1) / (size_t)nt;
    memcpy(dst + lo, src + lo, (hi - lo) * sizeof *dst);
  }
}

/* The quantizers' memory limit: a narrowing copy float32 -> 8 bits (a plain
 * loop converting to uint8; reads 4 bytes and writes 1 per element, as a
 * quantizer to an 8-bit format does), each thread one contiguous range. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#endif
static void bench_narrow_run(uint8_t *restrict dst, const float *restrict src, size_t n) {
#pragma omp simd
  for (size_t i = 0; i < n; i++) dst[i] = (uint8_t)(int32_t)src[i];
}
static inline void bench_narrow_parallel(uint8_t *dst, const float *src, size_t n) {
#pragma omp parallel
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    size_t lo = n * (size_t)t / (size_t)nt, hi = n * (size_t)(t + 1) / (size_t)nt;
    bench_narrow_run(dst + lo, src + lo, hi - lo);
  }
}

/* The benchmarks' input: activation-like values in (-600, 600), some beyond
 * e4m3fn's 448, from a fixed LCG so every run times the same data. */
static inline void bench_fill(float *x, size_t n) {
  uint64_t s = 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x[i] = (float)((double)(int32_t)(s >> 32) * 0x1p-31 * 600.0);
  }
}
#endif
