#!/bin/sh
# build.sh SRCDIR BUILDDIR OUT: the libFuzzer targets (tests/fuzz/fuzz_*.c)
# with clang -fsanitize=fuzzer,address,undefined, in OUT, apart from the
# normal (gcc, libtool) build: the library, the training engine and
# cli/number.c are compiled again into OUT/obj.  BUILDDIR holds config.h.
# Environment: FUZZ_CC (default: clang, else clang-14), FUZZ_CFLAGS,
# MPFR_CPPFLAGS/MPFR_LDFLAGS, FUZZ_JOBS (default 2).
set -eu
src=$1; build=$2; out=$3
CC=${FUZZ_CC:-}
if [ -z "$CC" ]; then
  for c in clang clang-14; do command -v "$c" >/dev/null 2>&1 && { CC=$c; break; }; done
fi
[ -n "$CC" ] || { echo "fuzz: no clang found (Debian: apt-get install clang libclang-rt-14-dev)" >&2; exit 77; }
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
CFLAGS="-g -O1 -fopenmp -ffp-contract=off -fno-fast-math -w $SAN ${FUZZ_CFLAGS:-}"
CPPFLAGS="-I$src -I$build ${MPFR_CPPFLAGS:-}"
# libFuzzer present?  (clang without compiler-rt's fuzzer library)
mkdir -p "$out/obj"
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' >"$out/probe.c"
if ! $CC -fsanitize=fuzzer $SAN "$out/probe.c" -o "$out/probe" 2>"$out/probe.log"; then
  echo "fuzz: $CC cannot link -fsanitize=fuzzer (Debian: apt-get install libclang-rt-14-dev):" >&2
  cat "$out/probe.log" >&2
  exit 77
fi
srcs=$(ls "$src"/formats/*.c "$src"/emulate/*.c "$src"/experiments/*.c \
         "$src"/kernels/gpu_plan.c "$src"/kernels/probe.c "$src"/kernels/gpu_stub.c "$src"/cli/number.c)
obj() { echo "$out/obj/$(echo "${1#$src/}" | tr / _ | sed 's/\.c$/.o/')"; }
lib=""
for f in $srcs; do lib="$lib $(obj "$f")"; done
for f in $srcs; do
  o=$(obj "$f")
  # rebuild when the source or any header is newer than the object
  if [ ! -f "$o" ] || [ -n "$(find "$f" "$src"/exmy.h "$src"/formats "$src"/emulate "$src"/experiments \
        "$src"/kernels "$src"/cli "$build"/config.h -newer "$o" -name '*.[ch]' 2>/dev/null | head -1)" ]; then
    echo "$f $o"
  fi
done | xargs -r -n 2 -P "${FUZZ_JOBS:-2}" sh -c 'echo "  FUZZCC   $1"; '"$CC $CPPFLAGS $CFLAGS"' -fsanitize=fuzzer-no-link -c "$0" -o "$1"'
targets=""
for t in "$src"/tests/fuzz/fuzz_*.c; do
  n=$(basename "$t" .c)
  echo "  FUZZLD   $out/$n"
  $CC $CPPFLAGS $CFLAGS -fsanitize=fuzzer "$t" $lib ${MPFR_LDFLAGS:-} -lmpfr -lgmp -lm -o "$out/$n"
  targets="$targets $n"
done
echo "fuzz: built$targets in $out"
