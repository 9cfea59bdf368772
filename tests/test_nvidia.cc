// test_nvidia.cc: exmy against NVIDIA's own host conversions (the oracle).
//
// Built with plain g++ (no nvcc) against the CUDA toolkit headers, whose
// host paths (no __CUDA_ARCH__) are NVIDIA's C emulation of the hardware
// conversions:
//   g++ -std=c++17 -O2 -fopenmp -ffp-contract=off -I/usr/local/cuda/include
//       -I. tests/test_nvidia.cc <libexmy objects or libexmy.a> -lmpfr -lgmp -lm
// If the CUDA headers are not found the program prints why and exits 77.
//
// What is compared (exmy code vs NVIDIA code):
//   e4m3fn, e5m2: __nv_cvt_{float,double,halfraw,bfloat16raw}_to_fp8 with
//     __NV_NOSAT (= exmy rne, sat NONE) and __NV_SATFINITE (= rne, sat FINITE).
//   e2m3fn, e3m2fn: __nv_cvt_*_to_fp6; e2m1fn: __nv_cvt_*_to_fp4, each with
//     cudaRoundNearest (= exmy rne) and cudaRoundZero (= exmy rtz).  These
//     always saturate; the formats have no inf and no NaN, so exmy's sat NONE
//     (overflow -> max finite when there is neither inf nor NaN) and sat
//     FINITE must both give NVIDIA's codes.  Both are checked.
//   e8m0fnu: __nv_cvt_{float,double,bfloat16raw}_to_e8m0 with cudaRoundZero
//     (= exmy rtz) and cudaRoundPosInf (= exmy rup), each with __NV_NOSAT
//     (= sat NONE) and __NV_SATFINITE (= sat FINITE).  f16 inputs go through
//     NVIDIA's exact f16->float and then the float entry (there is no f16
//     entry for e8m0).
// Inputs: all 65536 f16 and all 65536 bf16 patterns; 10^7 float32 (random
// bit patterns, random values over the formats' ranges, format midpoints and
// exact values +-1..3 ulps, specials); 10^6 doubles (same idea, with values a
// few double ulps off the midpoints, which catch double rounding).  Both the
// array API (exmy_quantize) and the scalar API (exmy_from_*) are checked; the
// scalar path also runs on every input, with flags.
// The scalar path's INEXACT flag is checked against the oracle: for a finite
// input and a non-NaN oracle result, INEXACT must be set iff the oracle's
// value differs from the input.  NaN inputs must raise INVALID.
// Decode: every code of every format through NVIDIA's fp8/fp6/fp4->half and
// e8m0->bf16 (and the C++ types' operator float) vs exmy_code_to_f64,
// exmy_codes_to_f32 and exmy_classify.
//
// NaN results are compared as a class (any NaN code of the format):
// NVIDIA's float entry turns a NaN of either sign into 0x7F (its double entry
// keeps the sign; E5M2 keeps two payload bits), exmy's canonical NaN is the
// all-ones magnitude with the input's sign.
//
// Documented differences (checked against the exmy spec, not the oracle):
//  * FP6/FP4 NaN input: NVIDIA gives +MAXNORM (documented in cuda_fp6.h /
//    cuda_fp4.h).  exmy (brief: "A NaN input into a format without NaN -> +0
//    (code 0) with EXMY_FLAG_INVALID") gives +0 and raises INVALID; that is
//    what is checked for NaN inputs, and NVIDIA's +max is checked too.
//  * e8m0: NVIDIA converts |x| and maps 0 to code 0x00 (2^-127, its clip of
//    tiny results).  exmy (like ml_dtypes) gives NaN (0xFF) with INVALID for
//    zero and negative inputs.  The oracle comparison uses positive nonzero
//    inputs (and NaN); zero/negative inputs check exmy's 0xFF + INVALID.
//
// Runtime: the default run is ~20 s on 2 cores (~20 CPU-seconds).
// --long (make check-long): additionally all 2^32 float32 inputs for e4m3fn
// and e5m2 in both saturation modes, array and scalar paths, with progress
// every 8 of 256 chunks (~15 CPU-minutes; 8 to 20 minutes on 2 cores).
//
// Exit 0 pass, 1 fail, 77 skip.  Seed: EXMY_TEST_SEED (default below).

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__has_include)
#if __has_include(<cuda_fp8.h>) && __has_include(<cuda_fp6.h>) && __has_include(<cuda_fp4.h>)
#define HAVE_NV_HEADERS 1
#endif
#endif

#ifndef HAVE_NV_HEADERS
int main(void) {
  std::printf("test_nvidia: skipped: CUDA headers cuda_fp8.h/cuda_fp6.h/cuda_fp4.h not found "
              "(pass -I/usr/local/cuda/include)\n");
  return 77;
}
#else

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>
#pragma GCC diagnostic pop

// OpenMP pragmas only where OpenMP is on (no -Wunknown-pragmas noise).
#ifdef _OPENMP
#define OMP_FOR _Pragma("omp parallel for schedule(static)")
#define OMP_FOR_SUM _Pragma("omp parallel for schedule(static) reduction(+ : checks, fails)")
#else
#define OMP_FOR
#define OMP_FOR_SUM
#endif

#include "exmy.h"
#include "tests/testutil.h" // tu_next: the tests' one input generator

namespace {

const char *const kTestName = "test_nvidia";
const uint64_t kDefaultSeed = 0x6e76696469613031ULL; // "nvidia01"

// ---------------------------------------------------------------- helpers

float f32_from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
double f64_from_bits(uint64_t u) { double d; std::memcpy(&d, &u, 8); return d; }
uint64_t f64_bits(double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; }

// NVIDIA's own exact widenings (used for input values and e8m0 from f16).
float nv_f16_to_float(uint16_t h) {
  __half_raw r; r.x = h; return __internal_halfraw_to_float(r);
}
float nv_bf16_to_float(uint16_t b) {
  __nv_bfloat16_raw r; r.x = b; return __internal_bf16raw_to_float(r);
}

// ---------------------------------------------------------------- oracle configs

enum Kind { K_E4M3, K_E5M2, K_E2M3, K_E3M2, K_E2M1, K_E8M0 };

struct Oracle {
  std::string label;        // for messages
  Kind kind;
  exmy_format fmt;
  __nv_saturation_t nvsat;  // fp8, e8m0
  cudaRoundMode nvrnd;      // fp6, fp4, e8m0
  exmy_rounding rnd;
};

bool nv_is_nan(Kind k, unsigned c) {
  switch (k) {
  case K_E4M3: return (c & 0x7Fu) == 0x7Fu;
  case K_E5M2: return (c & 0x7Fu) > 0x7Cu;
  case K_E8M0: return c == 0xFFu;
  default: return false; // FP6/FP4 have no NaN
  }
}

unsigned nv_max_code(Kind k) {
  switch (k) {
  case K_E4M3: return 0x7E; case K_E5M2: return 0x7B;
  case K_E2M3: case K_E3M2: return 0x1F; case K_E2M1: return 0x07;
  default: return 0xFE;
  }
}

unsigned n_codes(Kind k) {
  switch (k) {
  case K_E2M3: case K_E3M2: return 64; case K_E2M1: return 16; default: return 256;
  }
}

__nv_fp8_interpretation_t fp8i(Kind k) { return k == K_E4M3 ? __NV_E4M3 : __NV_E5M2; }
__nv_fp6_interpretation_t fp6i(Kind k) { return k == K_E2M3 ? __NV_E2M3 : __NV_E3M2; }

unsigned nv_from_float(const Oracle &o, float x) {
  switch (o.kind) {
  case K_E4M3: case K_E5M2: return __nv_cvt_float_to_fp8(x, o.nvsat, fp8i(o.kind));
  case K_E2M3: case K_E3M2: return __nv_cvt_float_to_fp6(x, fp6i(o.kind), o.nvrnd);
  case K_E2M1: return __nv_cvt_float_to_fp4(x, __NV_E2M1, o.nvrnd);
  default: return __nv_cvt_float_to_e8m0(x, o.nvsat, o.nvrnd);
  }
}
unsigned nv_from_double(const Oracle &o, double x) {
  switch (o.kind) {
  case K_E4M3: case K_E5M2: return __nv_cvt_double_to_fp8(x, o.nvsat, fp8i(o.kind));
  case K_E2M3: case K_E3M2: return __nv_cvt_double_to_fp6(x, fp6i(o.kind), o.nvrnd);
  case K_E2M1: return __nv_cvt_double_to_fp4(x, __NV_E2M1, o.nvrnd);
  default: return __nv_cvt_double_to_e8m0(x, o.nvsat, o.nvrnd);
  }
}
unsigned nv_from_f16(const Oracle &o, uint16_t h) {
  __half_raw r; r.x = h;
  switch (o.kind) {
  case K_E4M3: case K_E5M2: return __nv_cvt_halfraw_to_fp8(r, o.nvsat, fp8i(o.kind));
  case K_E2M3: case K_E3M2: return __nv_cvt_halfraw_to_fp6(r, fp6i(o.kind), o.nvrnd);
  case K_E2M1: return __nv_cvt_halfraw_to_fp4(r, __NV_E2M1, o.nvrnd);
  default: return __nv_cvt_float_to_e8m0(nv_f16_to_float(h), o.nvsat, o.nvrnd);
  }
}
unsigned nv_from_bf16(const Oracle &o, uint16_t b) {
  __nv_bfloat16_raw r; r.x = b;
  switch (o.kind) {
  case K_E4M3: case K_E5M2: return __nv_cvt_bfloat16raw_to_fp8(r, o.nvsat, fp8i(o.kind));
  case K_E2M3: case K_E3M2: return __nv_cvt_bfloat16raw_to_fp6(r, fp6i(o.kind), o.nvrnd);
  case K_E2M1: return __nv_cvt_bfloat16raw_to_fp4(r, __NV_E2M1, o.nvrnd);
  default: return __nv_cvt_bfloat16raw_to_e8m0(r, o.nvsat, o.nvrnd);
  }
}

// NVIDIA's decode of a code to float (half/bf16 widened exactly).
float nv_decode_raw(Kind k, unsigned c) {
  __half_raw h;
  switch (k) {
  case K_E4M3: case K_E5M2: h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, fp8i(k)); break;
  case K_E2M3: case K_E3M2: h = __nv_cvt_fp6_to_halfraw((__nv_fp6_storage_t)c, fp6i(k)); break;
  case K_E2M1: h = __nv_cvt_fp4_to_halfraw((__nv_fp4_storage_t)c, __NV_E2M1); break;
  default: {
    __nv_bfloat16_raw b = __nv_cvt_e8m0_to_bf16raw((__nv_fp8_storage_t)c);
    return nv_bf16_to_float(b.x);
  }
  }
  return __internal_halfraw_to_float(h);
}
// The same through the C++ types' operator float.
float nv_decode_type(Kind k, unsigned c) {
  switch (k) {
  case K_E4M3: { __nv_fp8_e4m3 v; v.__x = (__nv_fp8_storage_t)c; return (float)v; }
  case K_E5M2: { __nv_fp8_e5m2 v; v.__x = (__nv_fp8_storage_t)c; return (float)v; }
  case K_E2M3: { __nv_fp6_e2m3 v; v.__x = (__nv_fp6_storage_t)c; return (float)v; }
  case K_E3M2: { __nv_fp6_e3m2 v; v.__x = (__nv_fp6_storage_t)c; return (float)v; }
  case K_E2M1: { __nv_fp4_e2m1 v; v.__x = (__nv_fp4_storage_t)c; return (float)v; }
  default: { __nv_fp8_e8m0 v; v.__x = (__nv_fp8_storage_t)c; return (float)v; }
  }
}

// ---------------------------------------------------------------- reporting

uint64_t g_checks = 0, g_failures = 0, g_printed = 0;
const uint64_t kMaxPrinted = 20;

// Print one failure line (the first kMaxPrinted only); does not count it.
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report(const char *fmt, ...) {
  if (g_printed++ >= kMaxPrinted) return;
  va_list ap;
  va_start(ap, fmt);
  std::fputs("FAIL ", stdout);
  std::vprintf(fmt, ap);
  std::fputc('\n', stdout);
  va_end(ap);
}

// Count and print a failure (serial code only).
#define fail_line(...) (++g_failures, report(__VA_ARGS__))

const char *src_name(exmy_dtype t) {
  switch (t) {
  case EXMY_DTYPE_F32: return "f32"; case EXMY_DTYPE_F64: return "f64";
  case EXMY_DTYPE_BF16: return "bf16"; default: return "f16";
  }
}

// Input element i as (bits, exact double value).
struct InputView {
  exmy_dtype type;
  const void *data;
  uint64_t bits(size_t i) const {
    switch (type) {
    case EXMY_DTYPE_F32: return ((const uint32_t *)data)[i];
    case EXMY_DTYPE_F64: return ((const uint64_t *)data)[i];
    default: return ((const uint16_t *)data)[i];
    }
  }
  double value(size_t i) const {
    switch (type) {
    case EXMY_DTYPE_F32: return (double)((const float *)data)[i];
    case EXMY_DTYPE_F64: return ((const double *)data)[i];
    case EXMY_DTYPE_BF16: return (double)nv_bf16_to_float(((const uint16_t *)data)[i]);
    default: return (double)nv_f16_to_float(((const uint16_t *)data)[i]);
    }
  }
  int hexw() const {
    return type == EXMY_DTYPE_F32 ? 8 : type == EXMY_DTYPE_F64 ? 16 : 4;
  }
};

std::string input_str(const InputView &in, size_t i) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s 0x%0*" PRIx64 " (%a)", src_name(in.type), in.hexw(),
                in.bits(i), in.value(i));
  return buf;
}

std::string flags_str(unsigned f) {
  std::string s;
  if (f & EXMY_FLAG_INEXACT) s += "inexact|";
  if (f & EXMY_FLAG_UNDERFLOW) s += "underflow|";
  if (f & EXMY_FLAG_OVERFLOW) s += "overflow|";
  if (f & EXMY_FLAG_INVALID) s += "invalid|";
  if (s.empty()) return "none";
  s.pop_back();
  return s;
}

// ---------------------------------------------------------------- the comparison

// The oracle's expectation for one input.
enum ExpKind {
  EXP_ORACLE,        // exmy must equal the NVIDIA code (NaN as a class)
  EXP_FP_NAN_INPUT,  // FP6/FP4 NaN input: exmy +0 with INVALID (NVIDIA: +max)
  EXP_E8M0_INVALID   // e8m0 zero/negative input: exmy NaN with INVALID
};

ExpKind expectation(const Oracle &o, double v) {
  bool nan = std::isnan(v);
  if (nan && (o.kind == K_E2M3 || o.kind == K_E3M2 || o.kind == K_E2M1)) return EXP_FP_NAN_INPUT;
  if (o.kind == K_E8M0 && !nan && !(v > 0.0)) return EXP_E8M0_INVALID;
  return EXP_ORACLE;
}

bool codes_match(const Oracle &o, unsigned nv, unsigned ex) {
  if (nv_is_nan(o.kind, nv)) return nv_is_nan(o.kind, ex);
  return nv == ex;
}

// Compare one element.  path names the exmy API; flags < 0 when not known.
// Pure unless print is set: returns the number of checks made and adds the
// number failed to *nfail; with print set, each failure is also reported.
// (Run first without print in parallel, then with print, serially, on the
// failing elements only, so the report does not depend on the thread count.)
#define CHECK_FAIL(...) do { ++*nfail; if (print) report(__VA_ARGS__); } while (0)
unsigned check_one(const Oracle &o, const InputView &in, size_t i, unsigned nv, unsigned ex,
                   long flags, const char *path, bool print, unsigned *nfail) {
  unsigned checks = 1;
  double v = in.value(i);
  ExpKind e = expectation(o, v);
  switch (e) {
  case EXP_ORACLE:
    if (!codes_match(o, nv, ex))
      CHECK_FAIL("%s [%s]: input %s: expected 0x%02x%s got 0x%02x", o.label.c_str(), path,
                 input_str(in, i).c_str(), nv, nv_is_nan(o.kind, nv) ? " (any NaN)" : "", ex);
    break;
  case EXP_FP_NAN_INPUT:
    // Documented difference: NVIDIA gives +MAXNORM, exmy gives +0 (INVALID).
    if (nv != nv_max_code(o.kind))
      CHECK_FAIL("%s [%s]: oracle sanity: NaN input %s gave NVIDIA 0x%02x, documented +max 0x%02x",
                 o.label.c_str(), path, input_str(in, i).c_str(), nv, nv_max_code(o.kind));
    else if (ex != 0)
      CHECK_FAIL("%s [%s]: NaN input %s: expected exmy +0 (0x00; NVIDIA gives +max 0x%02x) got 0x%02x",
                 o.label.c_str(), path, input_str(in, i).c_str(), nv, ex);
    break;
  case EXP_E8M0_INVALID:
    // Documented difference: NVIDIA converts |x| (0 -> 0x00); exmy: NaN.
    if (ex != 0xFF)
      CHECK_FAIL("%s [%s]: zero/negative input %s: expected exmy NaN 0xff (NVIDIA's |x| "
                 "convention gives 0x%02x) got 0x%02x",
                 o.label.c_str(), path, input_str(in, i).c_str(), nv, ex);
    break;
  }
  if (flags < 0) return checks;
  unsigned f = (unsigned)flags;
  if (std::isnan(v) || e == EXP_E8M0_INVALID) {
    ++checks;
    if (!(f & EXMY_FLAG_INVALID))
      CHECK_FAIL("%s [%s]: input %s: expected flag invalid, got flags %s", o.label.c_str(), path,
                 input_str(in, i).c_str(), flags_str(f).c_str());
    return checks;
  }
  if (std::isinf(v) || nv_is_nan(o.kind, nv)) return checks;
  // Finite input, non-NaN oracle result: inexact iff the value changed.
  double nvv = (double)nv_decode_raw(o.kind, nv);
  bool inexact = nvv != v;
  ++checks;
  if (inexact != ((f & EXMY_FLAG_INEXACT) != 0))
    CHECK_FAIL("%s [%s]: input %s: oracle code 0x%02x (%a) so inexact=%d, got flags %s",
               o.label.c_str(), path, input_str(in, i).c_str(), nv, nvv, (int)inexact,
               flags_str(f).c_str());
  return checks;
}
#undef CHECK_FAIL

uint64_t exmy_scalar(const Oracle &o, const InputView &in, size_t i, unsigned *flags) {
  switch (in.type) {
  case EXMY_DTYPE_F32: return exmy_from_f32(&o.fmt, &o.rnd, ((const float *)in.data)[i], i, flags);
  case EXMY_DTYPE_F64: return exmy_from_f64(&o.fmt, &o.rnd, ((const double *)in.data)[i], i, flags);
  case EXMY_DTYPE_BF16: return exmy_from_bf16(&o.fmt, &o.rnd, ((const uint16_t *)in.data)[i], i, flags);
  default: return exmy_from_f16(&o.fmt, &o.rnd, ((const uint16_t *)in.data)[i], i, flags);
  }
}

unsigned nv_elem(const Oracle &o, const InputView &in, size_t i) {
  switch (in.type) {
  case EXMY_DTYPE_F32: return nv_from_float(o, ((const float *)in.data)[i]);
  case EXMY_DTYPE_F64: return nv_from_double(o, ((const double *)in.data)[i]);
  case EXMY_DTYPE_BF16: return nv_from_bf16(o, ((const uint16_t *)in.data)[i]);
  default: return nv_from_f16(o, ((const uint16_t *)in.data)[i]);
  }
}

// Run one oracle over n inputs: NVIDIA codes and exmy codes are computed and
// compared in parallel; failures are then reported serially in index order
// (so the report does not depend on the thread count).  scalar_stride: every k-th element also goes
// through the scalar API with flags (1 = all, 0 = none).
void run_batch(const Oracle &o, const InputView &in, size_t n, size_t scalar_stride,
               std::vector<uint8_t> &nvbuf, std::vector<uint8_t> &exbuf,
               std::vector<uint8_t> &scbuf, std::vector<uint8_t> &flbuf,
               std::vector<uint8_t> &bad) {
  nvbuf.resize(n);
  exbuf.resize(n);
  if (scalar_stride) { scbuf.resize(n); flbuf.resize(n); }
  const long long nn = (long long)n;
OMP_FOR
  for (long long i = 0; i < nn; ++i) nvbuf[i] = (uint8_t)nv_elem(o, in, (size_t)i);
  std::fill(exbuf.begin(), exbuf.end(), (uint8_t)0xA5); // poison: exmy must write all
  char qerr[EXMY_ERRLEN] = "";
  if (exmy_quantize(&o.fmt, &o.rnd, in.type, in.data, n, 0, exbuf.data(), nullptr, qerr, sizeof qerr)) {
    ++g_failures; // a failed call is a failure even if the poisoned codes happened to match
    if (g_printed++ < kMaxPrinted) std::printf("FAIL exmy_quantize returned -1: %s\n", qerr);
  }
  if (scalar_stride) {
OMP_FOR
    for (long long i = 0; i < nn; ++i) {
      if ((size_t)i % scalar_stride) continue;
      unsigned f = 0;
      scbuf[i] = (uint8_t)exmy_scalar(o, in, (size_t)i, &f);
      flbuf[i] = (uint8_t)f;
    }
  }
  // Evaluate in parallel (pure), marking failing elements in bad[].
  bad.assign(n, 0);
  uint64_t checks = 0, fails = 0;
OMP_FOR_SUM
  for (long long i = 0; i < nn; ++i) {
    unsigned nf = 0;
    checks += check_one(o, in, (size_t)i, nvbuf[i], exbuf[i], -1, "exmy_quantize", false, &nf);
    if (scalar_stride && (size_t)i % scalar_stride == 0)
      checks += check_one(o, in, (size_t)i, nvbuf[i], scbuf[i], flbuf[i], "exmy_from_scalar",
                          false, &nf);
    if (nf) { bad[i] = 1; fails += nf; }
  }
  g_checks += checks;
  g_failures += fails;
  // Report the failing elements serially, in index order.
  for (size_t i = 0; i < n && fails && g_printed < kMaxPrinted; ++i) {
    if (!bad[i]) continue;
    unsigned nf = 0;
    check_one(o, in, i, nvbuf[i], exbuf[i], -1, "exmy_quantize", true, &nf);
    if (scalar_stride && i % scalar_stride == 0)
      check_one(o, in, i, nvbuf[i], scbuf[i], flbuf[i], "exmy_from_scalar", true, &nf);
  }
}

// ---------------------------------------------------------------- oracle list

exmy_format must_parse(const char *name) {
  exmy_format f;
  char err[EXMY_ERRLEN];
  if (exmy_format_parse(name, &f, err, sizeof err) != 0) {
    std::printf("FAIL cannot parse format %s: %s\n", name, err);
    std::printf("%s: 1 checks, 1 failures\n", kTestName);
    std::exit(1);
  }
  if (exmy_code_bytes(&f) != 1) {
    std::printf("FAIL format %s: exmy_code_bytes %d, expected 1\n", name, exmy_code_bytes(&f));
    std::printf("%s: 1 checks, 1 failures\n", kTestName);
    std::exit(1);
  }
  return f;
}

Oracle make(const char *fname, Kind k, exmy_round_mode m, exmy_saturation s,
            __nv_saturation_t nvsat, cudaRoundMode nvrnd, const char *nvdesc) {
  Oracle o;
  o.kind = k;
  o.fmt = must_parse(fname);
  o.nvsat = nvsat;
  o.nvrnd = nvrnd;
  o.rnd = exmy_rounding_default();
  o.rnd.mode = m;
  o.rnd.sat = s;
  static const char *satn[] = {"none", "finite", "propagate"};
  o.label = std::string(fname) + " " + exmy_round_mode_name(m) + " sat=" + satn[s] + " vs " + nvdesc;
  return o;
}

std::vector<Oracle> all_oracles() {
  std::vector<Oracle> v;
  const auto NS = __NV_NOSAT, SF = __NV_SATFINITE;
  const auto RN = cudaRoundNearest, RZ = cudaRoundZero, RP = cudaRoundPosInf;
  v.push_back(make("e4m3fn", K_E4M3, EXMY_RNE, EXMY_SAT_NONE, NS, RN, "__NV_NOSAT"));
  v.push_back(make("e4m3fn", K_E4M3, EXMY_RNE, EXMY_SAT_FINITE, SF, RN, "__NV_SATFINITE"));
  v.push_back(make("e5m2", K_E5M2, EXMY_RNE, EXMY_SAT_NONE, NS, RN, "__NV_NOSAT"));
  v.push_back(make("e5m2", K_E5M2, EXMY_RNE, EXMY_SAT_FINITE, SF, RN, "__NV_SATFINITE"));
  // FP6/FP4: NVIDIA always saturates; with neither inf nor NaN exmy's default
  // overflow is max finite too, so both sat NONE and FINITE must match.
  struct { const char *n; Kind k; } fp[] = {{"e2m3fn", K_E2M3}, {"e3m2fn", K_E3M2}, {"e2m1fn", K_E2M1}};
  for (auto &f : fp) {
    v.push_back(make(f.n, f.k, EXMY_RNE, EXMY_SAT_FINITE, SF, RN, "cudaRoundNearest"));
    v.push_back(make(f.n, f.k, EXMY_RNE, EXMY_SAT_NONE, SF, RN, "cudaRoundNearest"));
    v.push_back(make(f.n, f.k, EXMY_RTZ, EXMY_SAT_FINITE, SF, RZ, "cudaRoundZero"));
    v.push_back(make(f.n, f.k, EXMY_RTZ, EXMY_SAT_NONE, SF, RZ, "cudaRoundZero"));
  }
  v.push_back(make("e8m0fnu", K_E8M0, EXMY_RTZ, EXMY_SAT_NONE, NS, RZ, "cudaRoundZero __NV_NOSAT"));
  v.push_back(make("e8m0fnu", K_E8M0, EXMY_RTZ, EXMY_SAT_FINITE, SF, RZ, "cudaRoundZero __NV_SATFINITE"));
  v.push_back(make("e8m0fnu", K_E8M0, EXMY_RUP, EXMY_SAT_NONE, NS, RP, "cudaRoundPosInf __NV_NOSAT"));
  v.push_back(make("e8m0fnu", K_E8M0, EXMY_RUP, EXMY_SAT_FINITE, SF, RP, "cudaRoundPosInf __NV_SATFINITE"));
  return v;
}

// ---------------------------------------------------------------- input pools

// Positive finite values of a format in code order (= value order), from
// NVIDIA's decode, so the pools do not depend on the library under test.
std::vector<double> format_values(Kind k) {
  std::vector<double> vals;
  unsigned half = n_codes(k) / 2;
  if (k == K_E8M0) half = 256;
  for (unsigned c = 0; c < half; ++c) {
    double d = (double)nv_decode_raw(k, c);
    if (std::isnan(d) || std::isinf(d)) continue;
    vals.push_back(d);
  }
  // one virtual value above max: max + (max - previous)
  size_t m = vals.size();
  vals.push_back(vals[m - 1] + (vals[m - 1] - vals[m - 2]));
  return vals;
}

const Kind kAllKinds[] = {K_E4M3, K_E5M2, K_E2M3, K_E3M2, K_E2M1, K_E8M0};

// Special float values: zeros, infinities, NaNs, float extremes, and every
// exact value of every format (+-) with the midpoints and their neighbours.
std::vector<float> special_floats() {
  std::vector<float> s;
  const uint32_t bits[] = {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                           0xffc00000u, 0x7f800001u, 0xff800001u, 0x7fffffffu, 0xffffffffu,
                           0x7fa00000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x00800000u,
                           0x7f7fffffu, 0xff7fffffu, 0x00400000u, 0x00400001u, 0x003fffffu,
                           0x7f000000u, 0x7f000001u, 0x7effffffu, 0x3f800000u, 0xbf800000u};
  for (uint32_t b : bits) s.push_back(f32_from_bits(b));
  for (Kind k : kAllKinds) {
    std::vector<double> vals = format_values(k);
    for (size_t j = 0; j < vals.size(); ++j) {
      float pts[2] = {(float)vals[j], j + 1 < vals.size() ? (float)((vals[j] + vals[j + 1]) / 2) : 0.0f};
      for (float p : pts)
        for (int sgn = 0; sgn < 2; ++sgn) {
          float q = sgn ? -p : p;
          s.push_back(q);
          float up = q, dn = q;
          for (int st = 0; st < 2; ++st) {
            up = std::nextafter(up, INFINITY);
            dn = std::nextafter(dn, -INFINITY);
            s.push_back(up);
            s.push_back(dn);
          }
        }
    }
  }
  return s;
}

std::vector<float> make_float_pool(uint64_t seed, size_t n) {
  std::vector<float> pool = special_floats();
  std::vector<std::vector<double>> fv;
  for (Kind k : kAllKinds) fv.push_back(format_values(k));
  uint64_t s = seed;
  size_t kind_rr = 0;
  while (pool.size() < n) {
    uint64_t r = tu_next(&s);
    uint32_t sign = (uint32_t)(r >> 63) << 31;
    switch (pool.size() % 4) {
    case 0: // random bit pattern
      pool.push_back(f32_from_bits((uint32_t)(r >> 16)));
      break;
    case 1: { // random value over the FP8/FP6/FP4 ranges, often short mantissas
      int e = -22 + (int)((r >> 8) % 41); // 2^-22 .. 2^18
      uint32_t mant = (uint32_t)(r >> 32) & 0x7FFFFFu;
      if (r & 1) mant &= ~((1u << ((r >> 1) % 24)) - 1u);
      pool.push_back(f32_from_bits(sign | (uint32_t)(e + 127) << 23 | mant));
      break;
    }
    case 2: { // a midpoint or exact value of some format, +- up to 3 ulps
      const std::vector<double> &vals = fv[kind_rr++ % fv.size()];
      size_t j = (size_t)((r >> 8) % (vals.size() - 1));
      double p = (r & 2) ? (vals[j] + vals[j + 1]) / 2 : vals[j];
      float q = (float)p;
      int steps = (int)((r >> 3) % 7) - 3;
      for (; steps > 0; --steps) q = std::nextafter(q, INFINITY);
      for (; steps < 0; ++steps) q = std::nextafter(q, -INFINITY);
      pool.push_back(sign ? -q : q);
      break;
    }
    default: { // random value over the e8m0 range (float subnormals included)
      int e = -150 + (int)((r >> 8) % 279); // biased exponent -23 .. 255 below
      uint32_t mant = (uint32_t)(r >> 32) & 0x7FFFFFu;
      if (r & 1) mant &= ~((1u << ((r >> 1) % 24)) - 1u);
      uint32_t be = e + 127 < 0 ? 0 : (uint32_t)(e + 127);
      if (be > 254) be = 254;
      if (be == 0) mant >>= (unsigned)((-(e + 127)) % 24);
      pool.push_back(f32_from_bits(sign | be << 23 | mant));
      break;
    }
    }
  }
  return pool;
}

std::vector<double> make_double_pool(uint64_t seed, size_t n) {
  std::vector<double> pool;
  const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, f64_from_bits(0x7ff0000000000001ULL),
                       f64_from_bits(0xfff0000000000001ULL), f64_from_bits(0x7ff4000000000000ULL),
                       -431.99999999999994, 431.99999999999994, 464.0, -464.0,
                       std::nextafter(464.0, 0.0), std::nextafter(464.0, 1000.0), 61440.0,
                       std::nextafter(61440.0, 0.0), 1e-300, 1e300, 4.9e-324, -4.9e-324,
                       1.7976931348623157e308, f64_from_bits(0x3800000000000000ULL) /* 2^-127 */,
                       f64_from_bits(0x3800000000000001ULL), f64_from_bits(0x37ffffffffffffffULL),
                       f64_from_bits(0x47e0000000000000ULL) /* 2^127 */,
                       f64_from_bits(0x47e0000000000001ULL), f64_from_bits(0x47efffffffffffffULL)};
  for (double d : sp) pool.push_back(d);
  std::vector<std::vector<double>> fv;
  for (Kind k : kAllKinds) fv.push_back(format_values(k));
  uint64_t s = seed ^ 0xD0B1E5D0B1E5ULL;
  size_t kind_rr = 0;
  while (pool.size() < n) {
    uint64_t r = tu_next(&s), r2 = tu_next(&s);
    uint64_t sign = (r >> 63) << 63;
    switch (pool.size() % 4) {
    case 0:
      pool.push_back(f64_from_bits(r2));
      break;
    case 1: {
      int e = -25 + (int)((r >> 8) % 46);
      uint64_t mant = r2 & 0xFFFFFFFFFFFFFULL;
      if (r & 1) mant &= ~((1ULL << ((r >> 1) % 53)) - 1ULL);
      pool.push_back(f64_from_bits(sign | (uint64_t)(e + 1023) << 52 | mant));
      break;
    }
    case 2: { // midpoints/exact values +- a few double ulps, or +- tiny relative offsets
      const std::vector<double> &vals = fv[kind_rr++ % fv.size()];
      size_t j = (size_t)((r >> 8) % (vals.size() - 1));
      double q = (r & 2) ? (vals[j] + vals[j + 1]) / 2 : vals[j];
      if (r & 4) {
        int steps = (int)((r >> 3) % 9) - 4;
        for (; steps > 0; --steps) q = std::nextafter(q, INFINITY);
        for (; steps < 0; ++steps) q = std::nextafter(q, -INFINITY);
      } else {
        // offsets below float's precision: float(q) would land on the midpoint
        int k = 25 + (int)((r >> 3) % 28);
        double off = std::ldexp(q, -k) * ((r >> 40) & 1 ? 1 : -1);
        q += off;
      }
      pool.push_back(sign ? -q : q);
      break;
    }
    default: {
      int e = -160 + (int)((r >> 8) % 300);
      uint64_t mant = r2 & 0xFFFFFFFFFFFFFULL;
      if (r & 1) mant &= ~((1ULL << ((r >> 1) % 53)) - 1ULL);
      pool.push_back(f64_from_bits(sign | (uint64_t)(e + 1023) << 52 | mant));
      break;
    }
    }
  }
  return pool;
}

// ---------------------------------------------------------------- decode

void check_decode() {
  struct { const char *n; Kind k; } fmts[] = {{"e4m3fn", K_E4M3}, {"e5m2", K_E5M2},
                                              {"e2m3fn", K_E2M3}, {"e3m2fn", K_E3M2},
                                              {"e2m1fn", K_E2M1}, {"e8m0fnu", K_E8M0}};
  for (auto &F : fmts) {
    exmy_format fmt = must_parse(F.n);
    unsigned nc = n_codes(F.k);
    std::vector<uint8_t> codes(nc);
    for (unsigned c = 0; c < nc; ++c) codes[c] = (uint8_t)c;
    std::vector<float> f32(nc);
    std::vector<double> f64(nc);
    exmy_codes_to_f32(&fmt, codes.data(), nc, f32.data());
    exmy_codes_to_f64(&fmt, codes.data(), nc, f64.data());
    for (unsigned c = 0; c < nc; ++c) {
      float nvr = nv_decode_raw(F.k, c);
      float nvt = nv_decode_type(F.k, c);
      double nvd = (double)nvr;
      bool nvnan = std::isnan(nvr);
      // oracle self-consistency: raw and C++-type decode agree, NaN set as coded
      ++g_checks;
      if (f32_bits(nvr) != f32_bits(nvt) && !(nvnan && std::isnan(nvt)))
        fail_line("decode %s code 0x%02x: oracle paths disagree %a vs %a", F.n, c, nvr, nvt);
      ++g_checks;
      if (nvnan != nv_is_nan(F.k, c))
        fail_line("decode %s code 0x%02x: oracle NaN set mismatch", F.n, c);
      double exd = exmy_code_to_f64(&fmt, c);
      ++g_checks;
      if (nvnan ? !std::isnan(exd)
                : (exd != nvd || std::signbit(exd) != std::signbit(nvd)))
        fail_line("decode %s code 0x%02x: exmy_code_to_f64 expected %a got %a", F.n, c, nvd, exd);
      ++g_checks;
      if (nvnan ? !std::isnan(f64[c])
                : f64_bits(f64[c]) != f64_bits(nvd))
        fail_line("decode %s code 0x%02x: exmy_codes_to_f64 expected %a got %a", F.n, c, nvd, f64[c]);
      ++g_checks;
      if (nvnan ? !std::isnan(f32[c]) : f32_bits(f32[c]) != f32_bits(nvr))
        fail_line("decode %s code 0x%02x: exmy_codes_to_f32 expected %a (0x%08x) got %a (0x%08x)",
                  F.n, c, nvr, f32_bits(nvr), f32[c], f32_bits(f32[c]));
      exmy_class cls = exmy_classify(&fmt, c);
      exmy_class want = nvnan ? EXMY_CLASS_NAN
                        : std::isinf(nvr) ? EXMY_CLASS_INF
                        : nvr == 0.0f ? EXMY_CLASS_ZERO
                        : std::fabs(nvd) < (F.k == K_E8M0 ? 0.0 : (double)nv_decode_raw(F.k, 1u << fmt.mbits))
                            ? EXMY_CLASS_SUBNORMAL : EXMY_CLASS_NORMAL;
      ++g_checks;
      if (cls != want)
        fail_line("decode %s code 0x%02x (%a): exmy_classify expected %s got %s", F.n, c, nvd,
                  exmy_class_name(want), exmy_class_name(cls));
      if (fmt.is_signed) {
        ++g_checks;
        if (!nvnan && exmy_code_sign(&fmt, c) != (int)std::signbit(nvd))
          fail_line("decode %s code 0x%02x: exmy_code_sign expected %d got %d", F.n, c,
                    (int)std::signbit(nvd), exmy_code_sign(&fmt, c));
      }
    }
  }
}

// ---------------------------------------------------------------- long mode

void run_long(const std::vector<Oracle> &oracles) {
  std::vector<const Oracle *> fp8;
  for (const Oracle &o : oracles)
    if (o.kind == K_E4M3 || o.kind == K_E5M2) fp8.push_back(&o);
  const size_t chunk = (size_t)1 << 24;
  const size_t nchunks = ((size_t)1 << 32) / chunk;
  std::vector<uint32_t> in(chunk);
  std::vector<uint8_t> nvb, exb, scb, flb, bad;
  std::printf("%s: --long: all 2^32 float32 inputs x %zu oracles (array + scalar paths)\n",
              kTestName, fp8.size());
  std::fflush(stdout);
  for (size_t k = 0; k < nchunks; ++k) {
    const long long cn = (long long)chunk;
OMP_FOR
    for (long long i = 0; i < cn; ++i) in[i] = (uint32_t)(k * chunk + (size_t)i);
    InputView iv{EXMY_DTYPE_F32, in.data()};
    for (const Oracle *o : fp8) run_batch(*o, iv, chunk, 1, nvb, exb, scb, flb, bad);
    if ((k + 1) % 8 == 0 || k + 1 == nchunks) {
      std::printf("%s: --long: %zu/%zu chunks (inputs up to 0x%08zx), %" PRIu64 " checks, %" PRIu64
                  " failures so far\n",
                  kTestName, k + 1, nchunks, (k + 1) * chunk - 1, g_checks, g_failures);
      std::fflush(stdout);
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  bool long_mode = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--long") == 0) long_mode = true;
    else {
      std::fprintf(stderr, "usage: %s [--long]\n", argv[0]);
      return 2;
    }
  }
  uint64_t seed = kDefaultSeed;
  if (const char *e = std::getenv("EXMY_TEST_SEED")) seed = std::strtoull(e, nullptr, 0);
  std::printf("%s: seed 0x%016" PRIx64 " (set EXMY_TEST_SEED to change)\n", kTestName, seed);
  std::fflush(stdout);

  std::vector<Oracle> oracles = all_oracles();
  std::vector<uint8_t> nvb, exb, scb, flb, bad;

  // 1. decode of every code
  check_decode();

  // 2. every f16 and bf16 pattern, array and scalar paths
  std::vector<uint16_t> all16(65536);
  for (unsigned i = 0; i < 65536; ++i) all16[i] = (uint16_t)i;
  for (const Oracle &o : oracles) {
    run_batch(o, InputView{EXMY_DTYPE_F16, all16.data()}, 65536, 1, nvb, exb, scb, flb, bad);
    run_batch(o, InputView{EXMY_DTYPE_BF16, all16.data()}, 65536, 1, nvb, exb, scb, flb, bad);
  }

  // 3. float32 pool (>= 10^7), array and scalar paths on all
  {
    std::vector<float> pool = make_float_pool(seed, 10000000);
    InputView iv{EXMY_DTYPE_F32, pool.data()};
    for (const Oracle &o : oracles) run_batch(o, iv, pool.size(), 1, nvb, exb, scb, flb, bad);
  }

  // 4. double pool (10^6), both paths on all
  {
    std::vector<double> pool = make_double_pool(seed, 1000000);
    InputView iv{EXMY_DTYPE_F64, pool.data()};
    for (const Oracle &o : oracles) run_batch(o, iv, pool.size(), 1, nvb, exb, scb, flb, bad);
  }

  if (long_mode) run_long(oracles);

  if (g_failures > kMaxPrinted)
    std::printf("... %" PRIu64 " more failures not shown\n", g_failures - kMaxPrinted);
  std::printf("%s: %" PRIu64 " checks, %" PRIu64 " failures\n", kTestName, g_checks, g_failures);
  return g_failures ? 1 : 0;
}

#endif // HAVE_NV_HEADERS
