#!/bin/sh
# test_glance.sh: README.md's "Results at a glance" is docs/gen-glance.py's
# output from the recorded runs (docs/studies/results/*.summary.json), so a
# verdict quoted there is one a run gave.  Fails when the section was edited
# by hand or a summary changed without regenerating; skips (77) without python3.
srcdir=${srcdir:-.}
command -v python3 >/dev/null 2>&1 || { echo "test_glance: skipped: python3 not found"; exit 77; }
if python3 "$srcdir/docs/gen-glance.py" --check; then
  echo "ok 1 - README's results at a glance match docs/studies/results/"
  echo "test_glance: 1 checks, 0 failures"
  exit 0
fi
echo "not ok 1 - README's results at a glance match docs/studies/results/"
echo "test_glance: 1 checks, 1 failures"
exit 1
