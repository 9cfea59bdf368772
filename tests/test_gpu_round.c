/* test_gpu_round.c: the rounding core the device kernels compile
 * (emulate/round_core.h, compiled here by the host C compiler) against the
 * library's reference conversions (exmy_from_bf16/_float/_f16/_double,
 * exmy_random64), bit for bit, codes and flags: every bf16 input (all 2^16)
 * and random float32, f16 and double inputs, for every named format and
 * random formats, every rounding mode (stochastic rounding with several
 * seeds, streams and sr_bits), every saturation, ftz and daz.  The library
 * wraps the same header, so this guards the build (flags, host vs device
 * compilation of one source) rather than a hand-kept copy.  What it proves: a
 * kernel calling these functions gives exmy_quantize's codes. */
#include "emulate/round_core.h"
#include "tests/testutil.h"

static long n_conv;

static void check_format(const exmy_format *f, uint64_t *st, int n_random) {
  for (int mode = 0; mode <= EXMY_SR; mode++)
    for (int sat = 0; sat < 3; sat++)
      for (int fd = 0; fd < 4; fd++) {
        if (fd && (sat != 0 || mode > EXMY_RTZ)) continue; /* ftz/daz with a subset of the rest */
        exmy_rounding r = exmy_rounding_default();
        r.mode = (exmy_round_mode)mode;
        r.sat = (exmy_saturation)sat;
        r.ftz = fd & 1;
        r.daz = (fd >> 1) & 1;
        if (mode == EXMY_SR) {
          r.seed = tu_next(st);
          r.stream = tu_next(st) % 4;
          r.sr_bits = (int)(tu_next(st) % 3 == 0 ? 1 + tu_next(st) % 64 : 64);
        }
        uint64_t index0 = tu_next(st);
        for (uint32_t x = 0; x < 65536; x++) {
          unsigned fl1 = 0, fl2 = 0;
          uint64_t c1 = exmy_from_bf16(f, &r, (uint16_t)x, index0 + x, &fl1);
          uint64_t c2 = exmy__from_bf16(f, &r, (uint16_t)x, index0 + x, &fl2);
          CHECK(c1 == c2 && fl1 == fl2, "%s %s sat %d ftz %d daz %d bf16 0x%04x: ref 0x%llx/%x dev 0x%llx/%x", f->name,
                exmy_round_mode_name(r.mode), sat, r.ftz, r.daz, (unsigned)x, (unsigned long long)c1, fl1,
                (unsigned long long)c2, fl2);
        }
        for (int i = 0; i < n_random; i++) {
          uint64_t z = tu_next(st);
          uint32_t x = (uint32_t)z;
          if (i & 1) x = (x & 0x807fffffu) | ((uint32_t)(127 + (int)((z >> 32) % 60) - 30 + f->emin / 2) & 0xff) << 23;
          unsigned fl1 = 0, fl2 = 0;
          uint64_t c1 = exmy_from_f32(f, &r, tu_f32(x), index0 + (uint64_t)i, &fl1);
          uint64_t c2 = exmy__from_f32(f, &r, x, index0 + (uint64_t)i, &fl2);
          CHECK(c1 == c2 && fl1 == fl2, "%s %s sat %d ftz %d daz %d f32 0x%08x: ref 0x%llx/%x dev 0x%llx/%x", f->name,
                exmy_round_mode_name(r.mode), sat, r.ftz, r.daz, x, (unsigned long long)c1, fl1,
                (unsigned long long)c2, fl2);
          uint16_t h = (uint16_t)(z >> 40);
          fl1 = fl2 = 0;
          c1 = exmy_from_f16(f, &r, h, index0 + (uint64_t)i, &fl1);
          c2 = exmy__from_f16(f, &r, h, index0 + (uint64_t)i, &fl2);
          CHECK(c1 == c2 && fl1 == fl2, "%s %s f16 0x%04x: ref 0x%llx/%x dev 0x%llx/%x", f->name,
                exmy_round_mode_name(r.mode), h, (unsigned long long)c1, fl1, (unsigned long long)c2, fl2);
          uint64_t dbits = tu_next(st);
          if (i & 2) dbits = (dbits & 0x800fffffffffffffULL) | (uint64_t)((1023 + (int)(dbits % 80) - 40) & 0x7ff) << 52;
          double d;
          memcpy(&d, &dbits, 8);
          fl1 = fl2 = 0;
          c1 = exmy_from_f64(f, &r, d, index0 + (uint64_t)i, &fl1);
          c2 = exmy__from_f64(f, &r, dbits, index0 + (uint64_t)i, &fl2);
          CHECK(c1 == c2 && fl1 == fl2, "%s %s f64 0x%016llx: ref 0x%llx/%x dev 0x%llx/%x", f->name,
                exmy_round_mode_name(r.mode), (unsigned long long)dbits, (unsigned long long)c1, fl1,
                (unsigned long long)c2, fl2);
        }
        n_conv += 65536 + 3L * n_random;
      }
}

int main(void) {
  uint64_t st = tu_seed(20261123);
  for (int i = 0; i < 100000; i++) {
    uint64_t s = tu_next(&st), t = tu_next(&st) % 8, x = i < 1000 ? (uint64_t)i : tu_next(&st);
    CHECK(exmy_random64(s, t, x) == exmy__random64(s, t, x), "random64(0x%llx, %llu, 0x%llx)",
          (unsigned long long)s, (unsigned long long)t, (unsigned long long)x);
  }
  for (size_t i = 0; i < exmy_named_format_count(); i++) {
    exmy_format f = tu_format(exmy_named_format_get(i)->name);
    check_format(&f, &st, 3000);
  }
  for (int i = 0; i < 12; i++) {
    exmy_format f = tu_random_format(&st);
    check_format(&f, &st, 3000);
  }
  printf("%ld conversions compared\n", n_conv);
  return tu_finish("test_gpu_round");
}
