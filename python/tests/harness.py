"""harness.py: what the Python tests share: the exmy command, a seed, .npy
round trips through it, a bit-for-bit comparison that prints failing inputs
in hex, and a small runner for machines without pytest
(python3 harness.py test_a.py test_b.py ...; pytest collects the same
test_* functions).  Seed: $EXMY_TEST_SEED (default 20260616)."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import traceback
import unittest

import numpy as np

SEED = int(os.environ.get("EXMY_TEST_SEED", "20260616"))
SkipTest = unittest.SkipTest


def exmy_bin():
    b = os.environ.get("EXMY")
    if not b or not os.path.exists(b):
        raise SkipTest("EXMY (the exmy command) is not set")
    return b


def rng(salt=0):
    return np.random.default_rng(SEED + salt)


def run(args, stdin=None, ok=True):
    p = subprocess.run([exmy_bin()] + [str(a) for a in args], input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=600)
    out, err = p.stdout.decode(), p.stderr.decode()
    if ok and p.returncode != 0:
        raise AssertionError("exmy %s: status %d: %s" % (" ".join(map(str, args)), p.returncode, err.strip()))
    return p.returncode, out, err


class TempDir:
    def __init__(self):
        self.d = tempfile.TemporaryDirectory(prefix="exmy-py-")

    def __call__(self, name):
        return os.path.join(self.d.name, name)


def hexs(a):
    a = np.asarray(a)
    if a.dtype.kind == "f" or a.dtype.kind == "V":
        u = {2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
        return "0x%0*x" % (a.dtype.itemsize * 2, int(a.view(u))) + " (%r)" % float(a.astype(np.float64)) \
            if a.dtype.kind == "f" else "0x%x" % int(a.view(u))
    return "0x%x" % int(a)


def same_bits(got, want, inputs=None, what=""):
    """Assert got and want are identical bit for bit; print up to 10 failures in hex."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (what, got.shape, want.shape)
    assert got.dtype.itemsize == want.dtype.itemsize, "%s: dtype %s vs %s" % (what, got.dtype, want.dtype)
    u = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    g, w = got.reshape(-1).view(u), want.reshape(-1).view(u)
    bad = np.nonzero(g != w)[0]
    if bad.size:
        lines = []
        flat_in = None if inputs is None else np.asarray(inputs).reshape(-1)
        for i in bad[:10]:
            src = "" if flat_in is None else " input %s" % hexs(flat_in[i])
            lines.append("  [%d]%s: got 0x%x, expected 0x%x" % (i, src, int(g[i]), int(w[i])))
        raise AssertionError("%s: %d of %d differ\n%s" % (what, bad.size, g.size, "\n".join(lines)))


def boundary_f32():
    """Special float32 values: zeros, infinities, NaN, the extremes, subnormals."""
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, np.finfo(np.float32).max, -np.finfo(np.float32).max,
         np.finfo(np.float32).tiny, np.float32(1e-45), -np.float32(1e-45), 448, 464, 465, 480, 57344, 61440, 0.5,
         2.0 ** -6, 2.0 ** -9, 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, 2.0 ** -127, 1.5 * 2.0 ** -127, 3 * 2.0 ** -8]
    return np.array(v, dtype=np.float32)


def main(paths):
    """Run every test_* function of the given files; exit 0, 1 (a failure) or 77 (all skipped)."""
    passed = failed = skipped = 0
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except SkipTest as e:
            print("SKIP %s: %s" % (name, e))
            skipped += 1
            continue
        for fn in sorted(k for k in vars(mod) if k.startswith("test_") and callable(getattr(mod, k))):
            try:
                getattr(mod, fn)()
                print("PASS %s::%s" % (name, fn))
                passed += 1
            except SkipTest as e:
                print("SKIP %s::%s: %s" % (name, fn, e))
                skipped += 1
            except Exception:
                print("FAIL %s::%s" % (name, fn))
                traceback.print_exc()
                failed += 1
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    return 1 if failed else 77 if not passed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
