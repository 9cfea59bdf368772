#!/usr/bin/env python3
"""test_mx_mldtypes.py: the OCP MX rule (`mx:ocp`) of `exmy quantize-tensor`
against ml_dtypes: E8M0 scales decoded by ml_dtypes' float8_e8m0fnu equal
2^(floor(log2(amax)) - emax_elem) (clamped at 2^-127), and every element
code equals ml_dtypes' cast of x / 2^e clipped to +-fmax (the spec's
saturation), for MXFP8 (e4m3fn, e5m2) and MXFP4 (e2m1fn).  The dequantized
output equals decoded element times scale.  Usage: test_mx_mldtypes.py EXMY"""
import os, subprocess, sys, tempfile

try:
    import numpy as np
    import ml_dtypes
except ImportError as e:
    print("test_mx_mldtypes: skipped: %s" % e)
    sys.exit(77)

exmy = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EXMY", "./exmy")
seed = int(os.environ.get("EXMY_TEST_SEED", "0") or 0, 0) or 314159
print("seed %d (set EXMY_TEST_SEED to change)" % seed)
rng = np.random.default_rng(seed)
checks = fails = 0


def check(cond, msg):
    global checks, fails
    checks += 1
    if not cond:
        fails += 1
        if fails <= 20:
            print("FAIL " + msg)


# MX element formats: (exmy name, ml_dtypes type, fmax, emax_elem)
formats = [("e4m3fn", ml_dtypes.float8_e4m3fn, 448.0, 8),
           ("e5m2", ml_dtypes.float8_e5m2, 57344.0, 15),
           ("e2m1fn", ml_dtypes.float4_e2m1fn, 6.0, 2)]

# rows x 96 (three blocks of 32 per row); values over a wide range, some
# blocks all zero, some exact powers of two and block maxima at the top
rows, cols = 64, 96
x = (rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-20, 20, (rows, 1)))).astype(np.float32)
x[3, :32] = 0
x[5, 32:64] = np.float32(2.0) ** 7
x[7, 5] = np.float32(float.fromhex('0x1.fffffep+7'))

with tempfile.TemporaryDirectory() as tmp:
    xp = os.path.join(tmp, "x.npy")
    np.save(xp, x)
    for name, dt, fmax, emax in formats:
        qp, sp, dp = (os.path.join(tmp, f) for f in ("q.npy", "s.npy", "d.npy"))
        r = subprocess.run([exmy, "quantize-tensor", "--in", xp, "--format", name, "--scaling", "mx:ocp",
                            "--out", qp, "--scales", sp, "--dequant", dp], capture_output=True, text=True)
        check(r.returncode == 0, "%s: exmy exited %d: %s" % (name, r.returncode, r.stderr.strip()))
        if r.returncode:
            continue
        q, s, d = np.load(qp), np.load(sp), np.load(dp)
        check(s.dtype == np.uint8 and s.shape == (rows, cols // 32), "%s: scales %s %s" % (name, s.dtype, s.shape))
        blocks = x.reshape(rows, cols // 32, 32)
        amax = np.abs(blocks).max(axis=2).astype(np.float64)
        _, ex = np.frexp(amax)
        e = np.where(amax > 0, ex - 1, -126) - emax
        e = np.maximum(e, -127)
        scale_val = s.view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
        for i in range(rows):
            for b in range(cols // 32):
                check(scale_val[i, b] == 2.0 ** e[i, b],
                      "%s: block (%d,%d) amax %r: E8M0 0x%02x is %r, expected 2^%d" %
                      (name, i, b, amax[i, b], s[i, b], scale_val[i, b], e[i, b]))
        # elements: x / 2^e is exact in float32 here; saturate, then ml_dtypes' cast (rne)
        y = (blocks.astype(np.float64) / np.exp2(e)[:, :, None]).astype(np.float32)
        y = np.clip(y, -fmax, fmax).reshape(rows, cols)
        want = y.astype(dt).view(np.uint8)
        qq = q.view(np.uint8)
        bad = np.argwhere(want != qq)
        check(len(bad) == 0, "%s: %d element codes differ, e.g. x[%s]=%r: exmy 0x%02x, ml_dtypes 0x%02x" %
              ((name, len(bad)) + ((str(tuple(bad[0])), float(x[tuple(bad[0])]), int(qq[tuple(bad[0])]),
                                    int(want[tuple(bad[0])])) if len(bad) else ("-", 0.0, 0, 0))))
        deq = (q.view(dt).astype(np.float64).reshape(rows, cols // 32, 32) * scale_val[:, :, None]).reshape(rows, cols)
        check(np.array_equal(deq.astype(np.float32), d), "%s: dequantized values differ" % name)

print("test_mx_mldtypes: %d checks, %d failures" % (checks, fails))
sys.exit(1 if fails else 0)
