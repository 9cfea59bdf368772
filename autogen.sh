#!/bin/sh
# autogen.sh: generate ./configure.  With --deps, first install what a fresh
# Debian/Ubuntu machine lacks (apt when root or with sudo; ml_dtypes,
# numpy, pytest, hypothesis and mypy from PyPI for the Python tests, best
# effort).
set -e
cd "$(dirname "$0")"
if [ "$1" = "--deps" ]; then
  pkgs="build-essential autoconf automake libtool pkg-config libmpfr-dev libgmp-dev libopenblas-dev python3 python3-pip python3-venv gnuplot-nox xz-utils openmpi-bin libopenmpi-dev"
  missing=""
  for p in $pkgs; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
      echo "autogen.sh: missing packages:$missing (run as root or install them)" >&2; exit 1; fi
    echo "autogen.sh: installing$missing"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
  fi
  if ! python3 -c 'import numpy, ml_dtypes' >/dev/null 2>&1; then
    echo "autogen.sh: installing numpy and ml_dtypes (PyPI) for the ml_dtypes oracle test"
    python3 -m pip install -q numpy ml_dtypes >/dev/null 2>&1 ||
      python3 -m pip install -q --break-system-packages numpy ml_dtypes >/dev/null 2>&1 ||
      echo "autogen.sh: could not install ml_dtypes; that test will skip" >&2
  fi
  # The Python package's tests (tests/test_python.sh) run under pytest, and
  # fuzz the parsers with hypothesis; without them they use their own runner.
  # PyTorch (exmy.torch) is not installed here (5 GB from PyPI): .ci/run does.
  if ! python3 -c 'import pytest, hypothesis' >/dev/null 2>&1; then
    echo "autogen.sh: installing pytest and hypothesis (PyPI) for the Python package's tests"
    python3 -m pip install -q pytest hypothesis >/dev/null 2>&1 ||
      python3 -m pip install -q --break-system-packages pytest hypothesis >/dev/null 2>&1 ||
      echo "autogen.sh: could not install pytest/hypothesis; the Python tests use their own runner" >&2
  fi
  # tests/test_typing.sh checks the package's type hints with mypy (skipped without it).
  if ! python3 -m mypy --version >/dev/null 2>&1; then
    echo "autogen.sh: installing mypy (PyPI) for the type hints' test"
    python3 -m pip install -q mypy >/dev/null 2>&1 ||
      python3 -m pip install -q --break-system-packages mypy >/dev/null 2>&1 ||
      echo "autogen.sh: could not install mypy; tests/test_typing.sh will skip" >&2
  fi
fi
autoreconf -fi >/dev/null
echo "autogen.sh: now run ./configure && make"
