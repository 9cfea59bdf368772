#!/bin/sh
# pywrap.sh: Automake's log compiler for the Python oracle tests (*.py in
# TESTS): runs SCRIPT with the exmy binary ($EXMY) as its argument, or skips
# (exit 77) when python3, numpy or ml_dtypes is missing.
script=$1
name=$(basename "$script" .py)
PYTHON=${PYTHON3:-python3}
[ -n "$PYTHON" ] || PYTHON=python3
if ! command -v "$PYTHON" >/dev/null 2>&1; then
  echo "$name: skipped: $PYTHON not found"
  exit 77
fi
if ! reason=$("$PYTHON" -c 'import numpy, ml_dtypes' 2>&1); then
  echo "$name: skipped: numpy or ml_dtypes not importable: $(printf '%s\n' "$reason" | tail -n 1)"
  exit 77
fi
exec "$PYTHON" "$script" "${EXMY:-./exmy}"
