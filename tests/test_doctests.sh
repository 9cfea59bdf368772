#!/bin/sh
# test_doctests.sh: the Python sessions of README.md and docs/python.md run
# as doctests (tests/mddoctest.py) against this build tree's library and
# engine module, in a scratch folder (a session writes runs/torch there).
# The torch sessions skip without torch; skips (77) without numpy or a
# shared build, like tests/test_python.sh.
srcdir=${srcdir:-.}
EXMY=${EXMY:-./exmy}
build=$(cd "$(dirname "$EXMY")" && pwd)
top=$(cd "$srcdir" && pwd)
PYTHON=${PYTHON3:-python3}
[ -n "$PYTHON" ] || PYTHON=python3
command -v "$PYTHON" >/dev/null 2>&1 || { echo "test_doctests: skipped: $PYTHON not found"; exit 77; }
"$PYTHON" -c 'import numpy' >/dev/null 2>&1 || { echo "test_doctests: skipped: numpy not importable"; exit 77; }
if [ ! -f "$build/.libs/libexmy.so" ] || grep -q '^SAN_FLAGS = -fsanitize' "$build/Makefile" 2>/dev/null; then
  echo "test_doctests: skipped: no shared, uninstrumented libexmy in this build"; exit 77
fi
EXMY_LIB=$build/.libs/libexmy.so
EXMY_XP_LIB=$build/python/.libs/exmy_xp.so
PYTHONPATH=$top/python${PYTHONPATH:+:$PYTHONPATH}
OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
PYTHONDONTWRITEBYTECODE=1
export EXMY_LIB EXMY_XP_LIB PYTHONPATH OMP_WAIT_POLICY PYTHONDONTWRITEBYTECODE
scratch=$(mktemp -d "${TMPDIR:-/tmp}/exmy-doctest.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
cd "$scratch" && "$PYTHON" "$top/tests/mddoctest.py" "$top/README.md" "$top/docs/python.md"
