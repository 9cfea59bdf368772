/* gemm_round.c: one sum of two doubles rounded once into a format, the step
 * of acc=FORMAT that the reference and the fast kernel both take (the sum is
 * formed exactly in 128 bits, so no double rounding). */
#include "emulate/gemm_round.h"
#include "emulate/gemm_bits.h"
#include "formats/internal.h"

#include <math.h>

uint64_t exmy__round_sum2(const exmy_format *fmt, const exmy_rounding *rnd, double x, double y, uint64_t index,
                          unsigned *flags) {
  if (!isfinite(x) || !isfinite(y)) return exmy_from_f64(fmt, rnd, x + y, index, flags);
  if (x == 0 || y == 0) {
    if (x == 0 && y == 0) {
      const int nx = signbit(x) != 0, ny = signbit(y) != 0;
      const int neg = (nx && ny) || (rnd->mode == EXMY_RDN && (nx || ny));
      return exmy_round_pack(fmt, rnd, neg, 0, 0, index, flags);
    }
    return exmy_from_f64(fmt, rnd, x == 0 ? y : x, index, flags);
  }
  int ex, ey;
  uint64_t mx = exmy__split_double(x, &ex), my = exmy__split_double(y, &ey);
  int nx = x < 0, ny = y < 0;
  if (ey > ex || (ey == ex && my > mx)) { /* x is the larger magnitude */
    uint64_t tm = mx; mx = my; my = tm;
    int te = ex; ex = ey; ey = te;
    int tn = nx; nx = ny; ny = tn;
  }
  /* 128-bit window: x's 53 bits at the top, y aligned below with a sticky bit. */
  const int d = ex - ey;
  u128 X = (u128)mx << 74, Y;
  if (d <= 74) {
    Y = (u128)my << (74 - d);
  } else if (d - 74 >= 64) {
    Y = 1; /* wholly below the window: a sticky bit */
  } else {
    const int r = d - 74;
    Y = (u128)(my >> r) | ((my & (((uint64_t)1 << r) - 1)) != 0);
  }
  const int base = ex - 74; /* value of bit 0 of the window */
  u128 S = nx == ny ? X + Y : X - Y; /* X > Y: no borrow out */
  if (S == 0) return exmy_round_pack(fmt, rnd, rnd->mode == EXMY_RDN, 0, 0, index, flags);
  const int L = exmy__bitlen128(S);
  uint64_t sig;
  int e2;
  if (L <= 64) {
    sig = (uint64_t)S;
    e2 = base;
  } else {
    const int sh = L - 64;
    sig = (uint64_t)(S >> sh);
    if (S & (((u128)1 << sh) - 1)) sig |= 1;
    e2 = base + sh;
  }
  return exmy_round_pack(fmt, rnd, nx, sig, e2, index, flags);
}
