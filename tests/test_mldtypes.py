#!/usr/bin/env python3
"""test_mldtypes: compare the `exmy` command with ml_dtypes, bit for bit.

For every ml_dtypes type that exmy names:
  (a) decode: every code, `exmy table FORMAT` (exact hex-float column and
      class column) against ml_dtypes' value of the same code;
  (b) quantize: float32 inputs (every float32 value of an f16 and of a bf16
      bit pattern, special values, every format value and every midpoint
      between neighbours with +-1 float32 ulp, and >= 1e6 random float32:
      random bit patterns, random values in and around the format's range,
      random points a few ulps from values and midpoints) through
      `exmy quantize FORMAT --in X.npy --out Q.npy --dequant D.npy`, compared
      with x.astype(ml_dtype).view(uintN).  The same inputs are also sent as
      float64 .npy: they are float32 values, so ml_dtypes' float64 -> float32
      -> format double rounding cannot bite and the codes must be the same.
      D.npy must hold the decoded codes (float32 resp. float64).

NaN results are compared as a class (any NaN code of the format).

Known, documented differences, handled explicitly (each prints a note):
  * ml_dtypes rounds float64 through float32 (double rounding), e.g.
    -431.99999999999994 -> e4m3fn gives -448 (0xfe) in ml_dtypes and the
    correctly rounded -416 (0xfd) in exmy: only float32 values are compared,
    and this one case is checked against the correct answer.
  * Formats without NaN (e2m1fn, e2m3fn, e3m2fn): ml_dtypes maps a NaN input
    to a zero code (of the opposite sign, even); exmy gives +0 (code 0) with
    the invalid flag.  NaN inputs are excluded from the ml_dtypes comparison
    for those formats and checked separately to give code 0.
  * e8m0fnu: ml_dtypes 0.6.0 (ConvertImpl) treats code 0x00 = 2^-127 as if a
    subnormal range lay below it, so float32 inputs 2^-127 < x < 1.5*2^-127
    round to 0x01 (2^-126) although 2^-127 is nearer.  For those inputs the
    expected code is the correctly rounded 0x00 (formats.md: MPFR semantics).

Usage: test_mldtypes.py [EXMY]   (default: $EXMY, else ../cli/exmy next to
this file).  Seed: $EXMY_TEST_SEED (default 20260611).
Exit 0 pass, 1 fail, 77 skip.
"""

import os
import re
import subprocess
import sys
import tempfile
from decimal import Decimal

try:
    import numpy as np
except ImportError as e:  # pragma: no cover
    print("test_mldtypes: skipped: numpy not importable (%s)" % e)
    sys.exit(77)
try:
    import ml_dtypes
except ImportError as e:  # pragma: no cover
    print("test_mldtypes: skipped: ml_dtypes not importable (%s)" % e)
    sys.exit(77)

# exmy name, ml_dtypes attribute, bits
FORMATS = [
    ("e4m3fn", "float8_e4m3fn", 8),
    ("e4m3", "float8_e4m3", 8),
    ("e4m3fnuz", "float8_e4m3fnuz", 8),
    ("e4m3b11fnuz", "float8_e4m3b11fnuz", 8),
    ("e5m2", "float8_e5m2", 8),
    ("e5m2fnuz", "float8_e5m2fnuz", 8),
    ("e3m4", "float8_e3m4", 8),
    ("e8m0fnu", "float8_e8m0fnu", 8),
    ("e2m3fn", "float6_e2m3fn", 6),
    ("e3m2fn", "float6_e3m2fn", 6),
    ("e2m1fn", "float4_e2m1fn", 4),
    ("bf16", "bfloat16", 16),
]
# Formats without a NaN code: NaN inputs are not compared with ml_dtypes.
NO_NAN = {"e2m1fn", "e2m3fn", "e3m2fn"}

MAX_PRINT = 20
N_RAND_BITS = 400000
N_RAND_RANGE = 400000
N_RAND_NEAR = 250000
TIMEOUT = 600


class Tally:
    def __init__(self):
        self.checks = 0
        self.failures = 0
        self.printed = 0

    def ok(self, n=1):
        self.checks += n

    def fail(self, msg, n=1):
        self.checks += n
        self.failures += n
        self.say(msg)

    def say(self, msg):
        if self.printed < MAX_PRINT:
            print("FAIL: " + msg)
        elif self.printed == MAX_PRINT:
            print("FAIL: ... (further failures not printed)")
        self.printed += 1


T = Tally()


def find_exmy():
    if len(sys.argv) > 1:
        return sys.argv[1]
    if os.environ.get("EXMY"):
        return os.environ["EXMY"]
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "cli", "exmy")


def run_exmy(exmy, args):
    try:
        p = subprocess.run([exmy] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return None, "", "timed out after %d s" % TIMEOUT
    return p.returncode, p.stdout.decode("utf-8", "replace"), \
        p.stderr.decode("utf-8", "replace")


def uint_type(bits):
    return np.uint8 if bits <= 8 else np.uint16 if bits <= 16 else np.uint32


def f32hex(v):
    b = int(np.float32(v).view(np.uint32))
    return "0x%08x (%s)" % (b, float(np.float32(v)).hex())


def f64hex(v):
    b = int(np.float64(v).view(np.uint64))
    return "0x%016x (%s)" % (b, float(v).hex())


def codestr(c, bits):
    return "0x%0*x" % ((bits + 3) // 4, int(c))


# ---- (a) decode -----------------------------------------------------------

HEXFLOAT = re.compile(r"^[+-]?0x[0-9a-fA-F]+(\.[0-9a-fA-F]*)?p[+-]?\d+$")
SPECIAL = re.compile(r"^[+-]?(inf|infinity|nan)(\(.*\))?$", re.I)
DECIMAL = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")
CLASSES = ("zero", "subnormal", "normal", "inf", "nan")


def parse_table(text):
    """Rows of `exmy table`: {code: (class, value or None)}; None on bad row."""
    rows = {}
    bad = []
    for lineno, line in enumerate(text.splitlines(), 1):
        toks = [t for t in re.split(r"[\s,|]+", line.strip()) if t]
        if not toks or not re.match(r"^0x[0-9a-fA-F]+$", toks[0]):
            continue  # header or blank
        code = int(toks[0], 16)
        cls = None
        val = None
        dec = None
        for t in toks[1:]:
            tl = t.lower()
            if val is not None and dec is None and DECIMAL.match(t):
                dec = t
            elif cls is None and tl in CLASSES:
                cls = tl
            elif cls is None and tl in ("infinity", "infinite"):
                cls = "inf"
            elif val is None and HEXFLOAT.match(t):
                val = float.fromhex(t)
            elif val is None and SPECIAL.match(t) and cls is not None:
                # a non-finite value column (after the class column)
                val = float(tl.split("(")[0].replace("infinity", "inf"))
        if cls is None or (val is None and cls != "nan"):
            bad.append((lineno, line))
            continue
        if code in rows:
            bad.append((lineno, line + "   <- duplicate code"))
        rows[code] = (cls, val, dec)
    return rows, bad


def expected_class(v, smallest_normal):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf"
    if v == 0:
        return "zero"
    if abs(v) < smallest_normal:
        return "subnormal"
    return "normal"


def check_decode(exmy, name, t, bits):
    rc, out, err = run_exmy(exmy, ["table", name])
    if rc != 0:
        T.fail("%s: `exmy table %s` exit %s: %s" %
               (name, name, rc, err.strip().splitlines()[:1]))
        return
    rows, bad = parse_table(out)
    for lineno, line in bad[:3]:
        T.fail("%s: table line %d unparsable: %r" % (name, lineno, line))
    n = 1 << bits
    codes = np.arange(n, dtype=uint_type(bits))
    ml = codes.view(t).astype(np.float64)
    sn = float(ml_dtypes.finfo(t).smallest_normal)
    if sorted(rows) != list(range(n)):
        T.fail("%s: table has %d code rows, expected exactly the codes "
               "0..%d" % (name, len(rows), n - 1))
    for c in range(n):
        if c not in rows:
            continue
        cls, val, dec = rows[c]
        exp = ml[c]
        exp_cls = expected_class(exp, sn)
        if name == "e8m0fnu" and exp_cls == "subnormal":
            exp_cls = "normal"  # ml_dtypes' smallest_normal is 2^-127 too
        good = True
        why = ""
        if np.isnan(exp):
            good = cls == "nan" and (val is None or np.isnan(val))
        else:
            good = (val is not None and not np.isnan(val) and val == exp
                    and np.signbit(val) == np.signbit(exp))
        if good and cls != exp_cls:
            good = False
            why = " (class)"
        if good and not np.isnan(exp) and not np.isinf(exp):
            # the decimal column must be the exact value too
            if dec is None:
                good, why = False, " (no decimal column)"
            elif (Decimal(dec) != Decimal(float(exp)) or
                  Decimal(dec).is_signed() != bool(np.signbit(exp))):
                good, why = False, " (decimal column %s)" % dec
        if good:
            T.ok()
        else:
            T.fail("%s decode: code %s: expected %s %s, got %s %s%s" %
                   (name, codestr(c, bits), exp_cls,
                    float(exp).hex() if not np.isnan(exp) else "nan", cls,
                    val.hex() if val is not None else "?", why))


# ---- (b) quantize ---------------------------------------------------------

def format_points(t, bits):
    """Finite format values (both signs), midpoints between neighbours
    (including the overflow threshold above the largest value), as float64."""
    codes = np.arange(1 << bits, dtype=uint_type(bits))
    vals = codes.view(t).astype(np.float64)
    pos = np.unique(np.abs(vals[np.isfinite(vals)]))
    m = ml_dtypes.finfo(t).nmant
    top = pos[-1]
    nxt = top + 2.0 ** (np.floor(np.log2(top)) - m)
    ext = np.append(pos, nxt)
    mids = (ext[:-1] + ext[1:]) / 2
    low = pos[0]
    extra = [low / 2, low * 0.75, low / 4, low * 1.25, low * 1.5]
    pts = np.concatenate([ext, mids, extra])
    return np.concatenate([pts, -pts])


def make_inputs(t, bits, rng):
    """float32 inputs for one format."""
    parts = []
    # every float32 value of an f16 bit pattern, and of a bf16 bit pattern
    parts.append(np.arange(1 << 16, dtype=np.uint16).view(np.float16)
                 .astype(np.float32))
    parts.append((np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32))
    # specials
    sp = np.array([0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                   0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001,
                   0x7fffffff, 0xffffffff, 0x7f7fffff, 0xff7fffff,
                   0x00800000, 0x80800000, 0x00000001, 0x80000001,
                   0x007fffff, 0x807fffff, 0x3f800000, 0xbf800000],
                  dtype=np.uint32).view(np.float32)
    parts.append(sp)
    # format values and midpoints, +-1 float32 ulp
    with np.errstate(over="ignore"):
        pts = format_points(t, bits).astype(np.float32)
    pts = pts[np.isfinite(pts)]
    parts += [pts, np.nextafter(pts, np.float32(np.inf)),
              np.nextafter(pts, np.float32(-np.inf))]
    # random bit patterns
    parts.append(rng.integers(0, 1 << 32, size=N_RAND_BITS, dtype=np.uint64)
                 .astype(np.uint32).view(np.float32))
    # random values in and around the format's range
    fi = ml_dtypes.finfo(t)
    lo = int(np.floor(np.log2(float(fi.smallest_subnormal)))) - 4
    hi = int(np.floor(np.log2(float(fi.max)))) + 3
    lo, hi = max(lo, -149), min(hi, 127)
    e = rng.integers(lo, hi + 1, size=N_RAND_RANGE)
    mant = rng.integers(0, 1 << 23, size=N_RAND_RANGE)
    sgn = np.where(rng.integers(0, 2, size=N_RAND_RANGE) == 1, -1.0, 1.0)
    parts.append((sgn * np.ldexp(1.0 + mant / 2.0 ** 23, e)).astype(np.float32))
    # random points a few ulps from format values and midpoints
    base = pts[rng.integers(0, len(pts), size=N_RAND_NEAR)]
    k = rng.integers(-16, 17, size=N_RAND_NEAR).astype(np.int64)
    bb = base.view(np.uint32).astype(np.int64)
    mag = (bb & 0x7fffffff) + k
    neg = (bb >> 31).astype(bool) ^ (mag < 0)  # stepping through zero
    near = (np.abs(mag) | np.where(neg, 1 << 31, 0)).astype(np.uint32)
    parts.append(near.view(np.float32))
    return np.concatenate(parts)


def is_nan_code(codes, t):
    return np.isnan(codes.view(t).astype(np.float32))


def quantize_npy(exmy, name, x, tmp, tag):
    xin = os.path.join(tmp, "x_%s.npy" % tag)
    qout = os.path.join(tmp, "q_%s.npy" % tag)
    dout = os.path.join(tmp, "d_%s.npy" % tag)
    for p in (qout, dout):
        if os.path.exists(p):
            os.unlink(p)
    np.save(xin, x)
    rc, out, err = run_exmy(exmy, ["quantize", name, "--in", xin,
                                   "--out", qout, "--dequant", dout])
    if rc != 0:
        T.fail("%s (%s): `exmy quantize %s --in ... --out ... --dequant ...` "
               "exit %s: %s" % (name, tag, name, rc,
                                (err.strip().splitlines() or [""])[0]))
        return None, None
    try:
        q = np.load(qout)
        d = np.load(dout)
    except Exception as e:  # noqa: BLE001
        T.fail("%s (%s): cannot load exmy's output .npy: %s" % (name, tag, e))
        return None, None
    return q, d


def compare_codes(name, tag, t, bits, x, mask, exp, q, fmt_in):
    """Compare codes q with exp where mask; returns nothing."""
    ut = uint_type(bits)
    if q.dtype != np.dtype(ut) or q.shape != x.shape:
        T.fail("%s (%s): Q.npy has dtype %s shape %s, expected %s %s" %
               (name, tag, q.dtype, q.shape, np.dtype(ut), x.shape))
        return False
    xs, es, qs = x[mask], exp[mask], q[mask]
    en, qn = is_nan_code(es, t), is_nan_code(qs, t)
    bad = (en != qn) | (~en & (es != qs))
    nbad = int(bad.sum())
    T.ok(len(xs) - nbad)
    if nbad:
        idx = np.nonzero(bad)[0]
        for i in idx[:MAX_PRINT]:
            T.fail("%s rne (%s): input %s: expected %s, got %s" %
                   (name, tag, fmt_in(xs[i]), codestr(es[i], bits),
                    codestr(qs[i], bits)))
        T.checks += nbad - len(idx[:MAX_PRINT])
        T.failures += nbad - len(idx[:MAX_PRINT])
        T.printed += nbad - len(idx[:MAX_PRINT])
    return True


def compare_dequant(name, tag, t, bits, q, d, want_dtype):
    if d.dtype != np.dtype(want_dtype) or d.shape != q.shape:
        T.fail("%s (%s): D.npy has dtype %s shape %s, expected %s %s" %
               (name, tag, d.dtype, d.shape, np.dtype(want_dtype), q.shape))
        return
    exp = q.view(t).astype(want_dtype)
    en, dn = np.isnan(exp), np.isnan(d)
    with np.errstate(invalid="ignore"):
        bad = (en != dn) | (~en & ((exp != d) |
                                   (np.signbit(exp) != np.signbit(d))))
    nbad = int(bad.sum())
    T.ok(q.size - nbad)
    for i in np.nonzero(bad.ravel())[0][:3]:
        T.fail("%s (%s): --dequant of code %s: expected %r, got %r" %
               (name, tag, codestr(q.ravel()[i], bits), exp.ravel()[i],
                d.ravel()[i]))
    if nbad > 3:
        T.checks += nbad - 3
        T.failures += nbad - 3


def check_quantize(exmy, name, t, bits, rng, tmp):
    x = make_inputs(t, bits, rng)
    if len(x) % 2:
        x = np.append(x, np.float32(0))
    ut = uint_type(bits)
    with np.errstate(all="ignore"):
        exp = x.astype(t).view(ut)
    mask = np.ones(len(x), dtype=bool)
    nan_in = np.isnan(x)
    if name in NO_NAN:
        # ml_dtypes maps NaN to a zero code (sign flipped); exmy gives +0 with
        # the invalid flag: not compared with ml_dtypes, checked below.
        mask &= ~nan_in
    if name == "e8m0fnu":
        # ml_dtypes bug (see the module docstring): 2^-127 < x < 1.5*2^-127
        # must round to 0x00 (2^-127, the nearer neighbour), not 0x01.
        lo, hi = np.float32(2.0 ** -127), np.float32(1.5 * 2.0 ** -127)
        sel = (x > lo) & (x < hi)
        nd = int((exp[sel] != 0).sum())
        if nd:
            print("note: e8m0fnu: %d inputs in (2^-127, 1.5*2^-127) where "
                  "ml_dtypes gives 0x01; expecting the correctly rounded 0x00"
                  % nd)
        exp = exp.copy()
        exp[sel] = 0
    print("%s: %d float32 inputs (%d compared with ml_dtypes)" %
          (name, len(x), int(mask.sum())))

    # float32 .npy, shaped (n/2, 2)
    x2 = x.reshape(-1, 2)
    q, d = quantize_npy(exmy, name, x2, tmp, "f32")
    if q is not None:
        if compare_codes(name, "f32", t, bits, x2, mask.reshape(-1, 2),
                         exp.reshape(-1, 2), q, f32hex):
            compare_dequant(name, "f32", t, bits, q, d, np.float32)
            if name in NO_NAN:
                qn = q.reshape(-1)[nan_in]
                nbad = int((qn != 0).sum())
                T.ok(len(qn) - nbad)
                if nbad:
                    i = int(np.nonzero(qn != 0)[0][0])
                    T.fail("%s rne (f32): NaN input %s: expected +0 0x0 "
                           "(no NaN in format), got %s (%d such)" %
                           (name, f32hex(x[nan_in][i]),
                            codestr(qn[i], bits), nbad), n=nbad)

    # the same values as float64 (exactly float32 values: no double rounding)
    x64 = x.astype(np.float64)
    q, d = quantize_npy(exmy, name, x64, tmp, "f64")
    if q is not None:
        if compare_codes(name, "f64", t, bits, x64, mask, exp, q, f64hex):
            compare_dequant(name, "f64", t, bits, q, d, np.float64)


def check_double_rounding(exmy, tmp):
    """The documented ml_dtypes difference on float64 input."""
    v = -431.99999999999994
    x = np.array([v], dtype=np.float64)
    ml = int(x.astype(ml_dtypes.float8_e4m3fn).view(np.uint8)[0])
    q, _ = quantize_npy(exmy, "e4m3fn", x, tmp, "dr")
    if q is None:
        return
    got = int(q[0])
    if got == 0xfd:  # -416, the correctly rounded value
        T.ok()
        print("note: e4m3fn float64 %r: exmy 0xfd (-416, single rounding); "
              "ml_dtypes 0x%02x (via float32)" % (v, ml))
    else:
        T.fail("e4m3fn rne (f64): input %s: expected 0xfd (-416), got %s" %
               (f64hex(v), codestr(got, 8)))


def main():
    exmy = find_exmy()
    if not (os.path.isfile(exmy) and os.access(exmy, os.X_OK)):
        print("test_mldtypes: exmy binary not found or not executable: %s"
              % exmy)
        print("test_mldtypes: 1 checks, 1 failures")
        return 1
    seed = int(os.environ.get("EXMY_TEST_SEED", "20260611"), 0)
    print("test_mldtypes: exmy %s, ml_dtypes %s, numpy %s, seed %d" %
          (exmy, ml_dtypes.__version__, np.__version__, seed))
    rng = np.random.default_rng(seed)
    np.seterr(all="ignore")  # NaN casts are intended
    with tempfile.TemporaryDirectory(prefix="exmy_mldt_") as tmp:
        for name, attr, bits in FORMATS:
            t = getattr(ml_dtypes, attr, None)
            if t is None:
                print("note: ml_dtypes %s has no %s: %s not compared" %
                      (ml_dtypes.__version__, attr, name))
                continue
            f0 = T.failures
            check_decode(exmy, name, t, bits)
            check_quantize(exmy, name, t, bits, rng, tmp)
            if T.failures > f0:
                print("%s: %d failures" % (name, T.failures - f0))
        check_double_rounding(exmy, tmp)
    print("test_mldtypes: %d checks, %d failures" % (T.checks, T.failures))
    return 0 if T.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
