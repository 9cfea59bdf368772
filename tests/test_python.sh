#!/bin/sh
# test_python.sh: the Python package's tests (python/tests, pytest when it is
# installed, else the tests' own runner), against the library and the
# engine module of this build tree.  Arguments: test files of python/tests
# to run (default all; make check-long runs test_probe_mmasim.py this way).  Skips (77) only when numpy is missing,
# or when this build has no shared library to load (--disable-shared, or a
# sanitizer build, whose libraries an uninstrumented python cannot load).
srcdir=${srcdir:-.}
EXMY=${EXMY:-./exmy}
build=$(cd "$(dirname "$EXMY")" && pwd)
PYTHON=${PYTHON3:-python3}
[ -n "$PYTHON" ] || PYTHON=python3
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "test_python: skipped: $PYTHON not found"; exit 77
fi
if ! reason=$("$PYTHON" -c 'import numpy' 2>&1); then
  echo "test_python: skipped: numpy not importable: $(printf '%s\n' "$reason" | tail -n 1)"; exit 77
fi
lib=$build/.libs/libexmy.so
if [ ! -f "$lib" ]; then
  echo "test_python: skipped: no shared libexmy in this build ($lib; configured --disable-shared?)"; exit 77
fi
if grep -q '^SAN_FLAGS = -fsanitize' "$build/Makefile" 2>/dev/null; then
  echo "test_python: skipped: a sanitizer build (python cannot load an ASan-instrumented library)"; exit 77
fi
# The package loads libraries from its own directory first (a pip install):
# libraries left there by an editable install would be tested instead of this
# build's.
for f in "$srcdir"/python/exmy/libexmy.so* "$srcdir"/python/exmy/exmy_xp.so; do
  if [ -e "$f" ]; then
    echo "test_python: FAIL: $f (an editable pip install's) would be loaded instead of this build's: remove it"; exit 1
  fi
done
EXMY_LIB=$lib
EXMY_XP_LIB=$build/python/.libs/exmy_xp.so
PYTHONPATH=$(cd "$srcdir" && pwd)/python${PYTHONPATH:+:$PYTHONPATH}
# Python's threads and OpenMP's share 2 cores with other tests: no spinning.
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
PYTHONDONTWRITEBYTECODE=1
export EXMY EXMY_LIB EXMY_XP_LIB PYTHONPATH OMP_WAIT_POLICY PYTHONDONTWRITEBYTECODE
tests=$(cd "$srcdir" && pwd)/python/tests
for f in "$@"; do set -- "$@" "$tests/$f"; shift; done   # the named files, as paths
# hypothesis keeps a cache folder: in a temporary place, not the build tree
scratch=$(mktemp -d "${TMPDIR:-/tmp}/exmy-python-test.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
HYPOTHESIS_STORAGE_DIRECTORY=$scratch/hypothesis
export HYPOTHESIS_STORAGE_DIRECTORY
cd "$build" || exit 1
if "$PYTHON" -c 'import pytest' >/dev/null 2>&1; then
  if [ $# -gt 0 ]; then "$PYTHON" -m pytest -q -p no:cacheprovider -rs "$@"
  else "$PYTHON" -m pytest -q -p no:cacheprovider -rs "$tests"; fi
  rc=$?
  [ $rc = 5 ] && rc=77   # pytest: no tests collected
  exit $rc
fi
echo "test_python: pytest not installed: running the tests with python/tests/harness.py"
[ $# -gt 0 ] || set -- "$tests"/test_*.py
"$PYTHON" "$tests/harness.py" "$@"
