/* rng_avx512.h: the counter-based generator of emulate/round_core.h
 * (exmy__mix64 of key + (index + 1) * gamma) in AVX-512 lanes, for the
 * stochastic-rounding kernels that need only the words' top halves (the
 * quantizer's sr_512 and acc=FORMAT's sr lanes): the same bits. */
#ifndef EXMY_RNG_AVX512_H
#define EXMY_RNG_AVX512_H
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* The top 32 bits of the words of 16 elements whose counters are ev (the
 * elements 0, 2, ..., 14) and od (1, 3, ..., 15), in element order:
 * SplitMix64's mixer in 64-bit lanes, one permute for the top halves, whose
 * final xor-shift is hi ^ (hi >> 31). */
__attribute__((target("avx512f,avx512dq"), always_inline)) static inline __m512i exmy__mix64_hi16(__m512i ev,
                                                                                                __m512i od) {
  const __m512i c1 = _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ULL);
  const __m512i c2 = _mm512_set1_epi64((long long)0x94d049bb133111ebULL);
  const __m512i pick = _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  ev = _mm512_mullo_epi64(_mm512_xor_si512(ev, _mm512_srli_epi64(ev, 30)), c1);
  od = _mm512_mullo_epi64(_mm512_xor_si512(od, _mm512_srli_epi64(od, 30)), c1);
  ev = _mm512_mullo_epi64(_mm512_xor_si512(ev, _mm512_srli_epi64(ev, 27)), c2);
  od = _mm512_mullo_epi64(_mm512_xor_si512(od, _mm512_srli_epi64(od, 27)), c2);
  const __m512i hi = _mm512_permutex2var_epi32(ev, pick, od);
  return _mm512_xor_si512(hi, _mm512_srli_epi32(hi, 31));
}
#endif
#endif
