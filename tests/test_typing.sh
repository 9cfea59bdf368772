#!/bin/sh
# test_typing.sh: the type hints of the exmy package (python/exmy, shipped
# with py.typed; docs/python.md, "Type hints").
#  1. mypy over the package with --disallow-untyped-defs
#     --disallow-incomplete-defs: every function and method is annotated, and
#     the annotations agree with the code and with each other.  The settings
#     (torch not followed, ml_dtypes optional) are pyproject.toml's
#     [tool.mypy].
#  2. Python 3.8 (requires-python): mypy no longer checks for 3.8, so every
#     module must parse with 3.8's grammar and say `from __future__ import
#     annotations` (its annotations are then never evaluated: typing names
#     imported only under TYPE_CHECKING, torch's among them, cost nothing at
#     run time and need no torch).
# Skips (77) when python3 or mypy (`pip install mypy`) is missing.
srcdir=${srcdir:-.}
top=$(cd "$srcdir" && pwd)
PYTHON=${PYTHON3:-python3}
[ -n "$PYTHON" ] || PYTHON=python3
command -v "$PYTHON" >/dev/null 2>&1 || { echo "test_typing: skipped: $PYTHON not found"; exit 77; }
if ! v=$("$PYTHON" -m mypy --version 2>/dev/null); then
  echo "test_typing: skipped: mypy is not installed (pip install mypy)"; exit 77
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/exmy-typing.XXXXXX") || exit 1
trap 'rm -rf "$scratch"' EXIT
rc=0

echo "test_typing: $v over $top/python/exmy"
# From the scratch folder: nothing (.mypy_cache) is written into the tree.
(cd "$scratch" && "$PYTHON" -m mypy --config-file "$top/pyproject.toml" --cache-dir "$scratch/cache" \
   --disallow-untyped-defs --disallow-incomplete-defs --no-error-summary --hide-error-context -p exmy) ||
  { echo "test_typing: FAIL: mypy found the errors above"; rc=1; }

"$PYTHON" - "$top/python/exmy" <<'EOF' || rc=1
import ast, glob, os, sys
bad = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.py"))):
    src = open(path, encoding="utf-8").read()
    try:
        tree = ast.parse(src, path, feature_version=(3, 8))
    except SyntaxError as e:
        bad.append("%s:%s: not Python 3.8 syntax: %s" % (path, e.lineno, e.msg))
        continue
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                 any(a.name == "annotations" for a in n.names) for n in tree.body)
    annotated = any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and
                    (n.returns is not None or any(a.annotation is not None for a in
                                                  n.args.args + n.args.kwonlyargs + n.args.posonlyargs))
                    or isinstance(n, ast.AnnAssign) for n in ast.walk(tree))
    if annotated and not future:
        bad.append("%s: annotated without `from __future__ import annotations` (Python 3.8 would evaluate them)"
                   % path)
for b in bad:
    print("test_typing: FAIL: " + b)
sys.exit(1 if bad else 0)
EOF
[ $rc = 0 ] && echo "test_typing: every function annotated, mypy clean, Python 3.8 syntax"
exit $rc
