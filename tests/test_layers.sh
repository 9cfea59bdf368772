#!/bin/sh
# test_layers.sh: calls go one way (cli -> experiments -> emulate -> formats)
# and no files call each other in a circle, by tests/layers.py's graph of
# the C sources: no cycle of calls or includes, no emulate/ header declaring
# a file and another file it calls, no include or call into a higher layer.
# Skips (77) without python3.
srcdir=${srcdir:-.}
command -v python3 >/dev/null 2>&1 || { echo "test_layers: skipped: python3 not found"; exit 77; }
if out=$(python3 "$srcdir/tests/layers.py" --srcdir "$srcdir" --check); then
  echo "ok 1 - the include and call graph of the C sources has no circle and goes one way"
  echo "test_layers: 1 checks, 0 failures"
  exit 0
fi
echo "not ok 1 - the include and call graph of the C sources has no circle and goes one way"
printf '%s\n' "$out" | sed 's/^/#   /'
echo "# (python3 tests/layers.py prints the whole graph)"
echo "test_layers: 1 checks, 1 failures"
exit 1
