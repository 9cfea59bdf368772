/* rng.c: the counter-based generator behind stochastic rounding.
 * SplitMix64's output function applied to key + (index+1) * golden gamma,
 * with the key itself mixed from (seed, stream): a pure function of its
 * arguments, so every thread, thread count and (later) the GPU kernels
 * draw the same bits for the same element. */
#include "exmy.h"

static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t exmy_random64(uint64_t seed, uint64_t stream, uint64_t index) {
  const uint64_t gamma = 0x9e3779b97f4a7c15ULL;
  uint64_t key = mix64(seed ^ mix64(stream + gamma));
  return mix64(key + (index + 1) * gamma);
}
