#!/bin/sh
# test_mx_mldtypes.sh: automake test wrapper for test_mx_mldtypes.py (the OCP
# MX rule of `exmy quantize-tensor` against ml_dtypes).  Run from the top build directory by
# `make check`; honours $EXMY (default ./cli/exmy), $srcdir (default .),
# $PYTHON (default python3) and $EXMY_TEST_SEED.
# Exit 0 pass, 1 fail, 77 skip (python3, numpy or ml_dtypes missing).

srcdir=${srcdir:-.}
EXMY=${EXMY:-./cli/exmy}
PYTHON=${PYTHON:-python3}

script=
for f in "$srcdir/tests/test_mx_mldtypes.py" "$srcdir/test_mx_mldtypes.py" \
         "$(dirname "$0")/test_mx_mldtypes.py"; do
  if [ -f "$f" ]; then script=$f; break; fi
done
if [ -z "$script" ]; then
  echo "test_mx_mldtypes: test_mx_mldtypes.py not found (srcdir=$srcdir)"
  echo "test_mx_mldtypes: 1 checks, 1 failures"
  exit 1
fi

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "test_mx_mldtypes: skipped: $PYTHON not found"
  exit 77
fi
if ! reason=$("$PYTHON" -c 'import numpy, ml_dtypes' 2>&1); then
  echo "test_mx_mldtypes: skipped: numpy or ml_dtypes not importable:" \
       "$(printf '%s\n' "$reason" | tail -n 1)"
  exit 77
fi

exec "$PYTHON" "$script" "$EXMY"
