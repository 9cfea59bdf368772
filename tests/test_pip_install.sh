#!/bin/sh
# test_pip_install.sh: the Python package as a user gets it.  From a fresh
# copy of the tree (git's files, or the dist tree when not a checkout) it
# builds a wheel with pip from python/ (what `pip install ./python` does),
# checks the wheel's contents, installs it into a fresh venv and, with no
# EXMY_* variables and outside the tree, imports exmy, quantizes, loads the
# engine module (and exmy.torch when torch is there), with nothing on stderr
# at exit.  Offline: --no-build-isolation, so the build uses this Python's
# setuptools; skips (77) without venv/ensurepip, setuptools >= 70.1, numpy
# or a C compiler.  EXMY_PIP_KEEP=1 keeps the scratch folder.
srcdir=${srcdir:-.}
top=$(cd "$srcdir" && pwd)
PYTHON=${PYTHON3:-python3}
[ -n "$PYTHON" ] || PYTHON=python3
skip() { echo "test_pip_install: skipped: $*"; exit 77; }
fail() { echo "test_pip_install: FAIL: $*"; exit 1; }
command -v "$PYTHON" >/dev/null 2>&1 || skip "$PYTHON not found"
"$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 || skip "no venv/ensurepip module (Debian: python3-venv)"
"$PYTHON" -c 'import numpy' >/dev/null 2>&1 || skip "numpy not importable (the venv sees this Python's packages)"
"$PYTHON" - <<'EOF' >/dev/null 2>&1 || skip "no setuptools >= 61 with bdist_wheel (setuptools >= 70.1, or wheel) for an offline build"
import setuptools, sys
try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel
sys.exit(tuple(int(x) for x in setuptools.__version__.split(".")[:2]) < (61, 0))
EOF
command -v "${CC:-cc}" >/dev/null 2>&1 || skip "no C compiler (${CC:-cc})"
# The pip build is the same in every configuration: a sanitizer build (CI's
# second run) need not repeat it.
if [ -n "$EXMY" ] && grep -q '^SAN_FLAGS = -fsanitize' "$(dirname "$EXMY")/Makefile" 2>/dev/null; then
  skip "a sanitizer build (the pip build does not depend on configure; the plain build runs this)"
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/exmy-pip.XXXXXX") || exit 1
[ -n "$EXMY_PIP_KEEP" ] && echo "test_pip_install: keeping $scratch" || trap 'rm -rf "$scratch"' EXIT
unset EXMY_LIB EXMY_XP_LIB PYTHONPATH PIP_FIND_LINKS
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

# A fresh clone: the files git tracks (and new ones not ignored) as they are
# in the working tree, so no build products; a dist tree is copied whole.
mkdir "$scratch/src"
if git -C "$top" rev-parse --show-toplevel 2>/dev/null | grep -qx "$top"; then
  (cd "$top" && git ls-files -z --cached --others --exclude-standard | xargs -0 tar cf - 2>/dev/null) |
    (cd "$scratch/src" && tar xf -) || fail "cannot copy the checkout"
else
  (cd "$top" && tar cf - .) | (cd "$scratch/src" && tar xf -) || fail "cannot copy $top"
fi
ver=$(sed -n 's/^AC_INIT(\[exmy\], *\[\([^]]*\)\].*/\1/p' "$top/configure.ac")
[ -n "$ver" ] || fail "no version in configure.ac"

"$PYTHON" -m venv --system-site-packages "$scratch/venv" >"$scratch/venv.log" 2>&1 ||
  { cat "$scratch/venv.log"; skip "python -m venv failed (Debian: python3-venv)"; }
py=$scratch/venv/bin/python

echo "test_pip_install: pip wheel ./python (exmy $ver) in a copy of the tree"
# Built by this Python (whose setuptools was checked above; a venv's own,
# from ensurepip, may be older), installed into the venv.
(cd "$scratch/src" && "$PYTHON" -m pip wheel -q --no-build-isolation --no-deps --no-index -w "$scratch/dist" ./python) \
  >"$scratch/build.log" 2>&1 || { tail -40 "$scratch/build.log"; fail "pip wheel ./python failed"; }
set -- "$scratch"/dist/exmy-*.whl
[ $# = 1 ] && [ -f "$1" ] || fail "expected one wheel in dist/, found: $*"
wheel=$1

# The wheel: the package, py.typed and both libraries inside it, nothing of
# the build (no .a/.la, no build module, no tests), a py3-none platform tag.
"$py" - "$wheel" "$ver" <<'EOF' || fail "wheel contents"
import os, sys, zipfile
wheel, ver = sys.argv[1], sys.argv[2]
names = set(zipfile.ZipFile(wheel).namelist())
need = ["exmy/__init__.py", "exmy/_lib.py", "exmy/_xp.py", "exmy/torch.py", "exmy/py.typed",
        "exmy/libexmy.so.6", "exmy/exmy_xp.so", "exmy-%s.dist-info/METADATA" % ver]
bad = ["missing " + n for n in need if n not in names]
bad += ["unexpected " + n for n in sorted(names)
        if n.endswith((".a", ".la", ".o", ".c", ".h")) or "build_exmy" in n or "tests/" in n or "_paths" in n]
base = os.path.basename(wheel)
if not base.startswith("exmy-%s-py3-none-" % ver):
    bad.append("wheel name %s is not exmy-%s-py3-none-PLATFORM" % (base, ver))
print("test_pip_install: %s: %d files" % (base, len(names)))
for b in bad:
    print("test_pip_install:   " + b)
sys.exit(1 if bad else 0)
EOF

"$py" -m pip install -q --no-deps --no-index "$wheel" >"$scratch/install.log" 2>&1 ||
  { cat "$scratch/install.log"; fail "pip install of the wheel failed"; }

# The installed package, from outside the tree, no environment variables.
mkdir "$scratch/elsewhere" && cd "$scratch/elsewhere" || exit 1
"$py" - "$ver" "$scratch/venv" >"$scratch/run.out" 2>"$scratch/run.err" <<'EOF'
import os, sys
import numpy as np
import exmy
ver, venv = sys.argv[1], os.path.realpath(sys.argv[2])
pkg = os.path.dirname(os.path.realpath(exmy.__file__))
assert pkg.startswith(venv + os.sep), "exmy imported from %s, not the venv %s" % (pkg, venv)
assert os.path.realpath(exmy.lib_path) == os.path.join(pkg, "libexmy.so.6"), "libexmy from " + exmy.lib_path
assert exmy.__version__ == ver, "version %s, configure.ac %s" % (exmy.__version__, ver)
x = np.array([1, 464, 465, -3.3, 1e-9], dtype=np.float32)
q = exmy.quantize(x, "e4m3fn")
assert q.tolist() == [0x38, 0x7e, 0x7f, 0xc5, 0x00], "quantize: " + " ".join("%02x" % v for v in q)
from exmy import _xp
e = _xp.Engine([], [])  # freed at exit: nothing may be printed then
assert os.path.realpath(_xp.xlib._name) == os.path.join(pkg, "exmy_xp.so"), "exmy_xp.so from " + _xp.xlib._name
try:
    import torch
except ImportError:
    print("torch: not installed, exmy.torch not tried")
else:
    m = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    p = exmy.torch.patch(m, prec="hybrid")  # exmy.torch as an attribute, not imported by hand
    y = m(torch.ones(3, 8))
    y.sum().backward()
    assert y.shape == (3, 2) and bool(torch.isfinite(y).all()), y
    print("torch: patched model ran")
print("ok")
EOF
rc=$?
cat "$scratch/run.out"
if [ $rc != 0 ] || [ -s "$scratch/run.err" ]; then
  cat "$scratch/run.err"
  fail "the installed package (status $rc$( [ -s "$scratch/run.err" ] && echo ', output on stderr'))"
fi

# The two pyproject.toml files describe one project.
"$py" - "$scratch/src" <<'EOF' || fail "pyproject.toml and python/pyproject.toml differ"
import sys
try:
    import tomllib
except ImportError:
    print("test_pip_install: no tomllib (Python < 3.11): pyproject.toml files not compared"); sys.exit(0)
def project(p):
    with open(p, "rb") as f:
        d = tomllib.load(f)
    d["project"].pop("readme", None)
    return d["project"], d["build-system"], d["tool"]["setuptools"].get("package-data")
a, b = project(sys.argv[1] + "/pyproject.toml"), project(sys.argv[1] + "/python/pyproject.toml")
if a != b:
    print("test_pip_install: %r\n  != %r" % (a, b)); sys.exit(1)
EOF
echo "test_pip_install: ok"
