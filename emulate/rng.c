/* rng.c: the counter-based generator behind stochastic rounding, the
 * library's entry point to the one SplitMix64 in emulate/round_core.h (which
 * the GPU kernels compile too, so they draw the same bits). */
#include "exmy.h"
#include "emulate/round_core.h"

uint64_t exmy_random64(uint64_t seed, uint64_t stream, uint64_t index) {
  return exmy__random64(seed, stream, index);
}
