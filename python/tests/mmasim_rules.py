"""mmasim_rules.py: an independent dot-product engine for the probe tests,
written for this test from the rules MMA-Sim v2 publishes (Peichen Xie et
al., github.com/peichenxie/MMA-Sim: its T-FDPA "truncated fused dot product
add" and the per-architecture parameters), in plain Python integers.  It
uses nothing of exmy (not even its FP8 decoding), so a probe that recovers
exmy's preset from it has checked exmy's model against a second reading of
the published datapath, not against itself.

The rules, as published:
- an operand x is s * 2^e with 1 <= |s| < 2, or for a subnormal (and zero)
  e = the format's smallest normal exponent and |s| < 1;
- a group of L products and the accumulator c: every product term is
  s_a s_b with exponent e_a + e_b (not renormalized); a zero term, product
  or c, has the exponent e_zero (v2's measured value: -133 Hopper and
  Blackwell, -132 Ampere and Ada); c is an fp32 value (smallest normal
  exponent -126);
- every term is cut to F fraction bits below the largest exponent e_max,
  toward zero, and the cut terms are added exactly;
- the sum is normalized (fp32's range, subnormal below 2^-126) and its
  significand truncated to 13 fraction bits ("RZ-E8M13": FP8 on Ada and
  Hopper) or 23 ("RZ-FP32"), giving the new c;
- a dot product of k > L runs the groups in k order, chaining c.
The datapaths: Hopper wgmma FP8 F = 13, L = 32, RZ-E8M13; Ada mma FP8
F = 13, L = 16, RZ-E8M13; Blackwell tcgen05 FP8 F = 25, L = 32, RZ-FP32.

On top of the instruction, `promote` models what CUTLASS-style GEMMs do
without fast accumulation: every `promote` products a partial sum computed
from +0 by the chain above is added into an fp32 accumulator with one fp32
addition rounded to nearest even.
"""
import math

import numpy as np

# name: (exponent bits, mantissa bits, bias, has infinities)
FORMATS = {"e4m3fn": (4, 3, 7, False), "e5m2": (5, 2, 15, True)}

# name: (F, L, output fraction bits, e_zero)
DATAPATHS = {
    "hopper-fp8": (13, 32, 13, -133),
    "ada-fp8": (13, 16, 13, -132),
    "blackwell-fp8": (25, 32, 23, -133),
}

NAN = float("nan")


def decode(code, fmt):
    """(kind, sign, M, e): kind 'num', 'inf' or 'nan'; value (-1)^sign M 2^(e - mbits)
    with M the integer significand (hidden bit included for normals)."""
    eb, mb, bias, has_inf = FORMATS[fmt]
    sign = (code >> (eb + mb)) & 1
    ef = (code >> mb) & ((1 << eb) - 1)
    m = code & ((1 << mb) - 1)
    top = (1 << eb) - 1
    if has_inf and ef == top:
        return ("inf" if m == 0 else "nan", sign, 0, 0)
    if not has_inf and ef == top and m == (1 << mb) - 1:
        return ("nan", sign, 0, 0)
    if ef == 0:
        return ("num", sign, m, 1 - bias)  # subnormal or zero: smallest normal exponent
    return ("num", sign, m | (1 << mb), ef - bias)


_TABLES = {f: [decode(c, f) for c in range(256)] for f in FORMATS}


def f32_parts(x):
    """An fp32 value (a Python float holding one) as (sign, M, e): x = M 2^(e - 23)."""
    neg = 1 if math.copysign(1, x) < 0 else 0
    if x == 0:
        return (neg, 0, -126)
    m, e = math.frexp(abs(x))  # 0.5 <= m < 1
    e -= 1
    if e < -126:
        return (neg, int(abs(x) * 2.0 ** 149), -126)
    return (neg, int(m * 2 ** 24), e)


def to_f32(n, e, out_bits, nearest):
    """The exact value n 2^e (n a signed integer) as an fp32 value: normalized
    in fp32's range (subnormal below 2^-126), the significand cut to out_bits
    fraction bits toward zero, or rounded to 23 bits nearest even."""
    if n == 0:
        return 0.0
    neg, a = n < 0, abs(n)
    top = a.bit_length() - 1 + e  # the leading bit's exponent
    ulp = max(top, -126) - out_bits
    if ulp > e:
        q, r = a >> (ulp - e), a & ((1 << (ulp - e)) - 1)
        if nearest:
            half = 1 << (ulp - e - 1)
            if r > half or (r == half and q & 1):
                q += 1
    else:
        q = a << (e - ulp)
    out = math.ldexp(q, ulp)  # exact: at most 24 significant bits
    if out >= 2.0 ** 128:
        out = math.inf
    return -out if neg else out


def group(terms, c, F, out_bits, e_zero):
    """One T-FDPA: terms are (sign, M, e, frac_bits) products (value
    (-1)^sign M 2^(e - frac_bits)), c the fp32 accumulator."""
    cs, cm, ce = f32_parts(c)
    all_terms = list(terms) + [(cs, cm, ce, 23)]
    exps = [e if m else e_zero for (_, m, e, _) in all_terms]
    e_max = max(exps)
    total = 0
    for (s, m, _, fb), e in zip(all_terms, exps):
        shift = e - e_max + F - fb  # the term in units of 2^(e_max - F)
        t = m << shift if shift >= 0 else m >> -shift  # magnitude cut toward zero
        total += -t if s else t
    return to_f32(total, e_max - F, out_bits, False)


def f32_add(x, y):
    """x + y for fp32 values, rounded once to nearest even."""
    if x == 0 and y == 0:
        return x + y
    xs, xm, xe = f32_parts(x)
    ys, ym, ye = f32_parts(y)
    e = min(xe, ye) - 23
    n = (-1 if xs else 1) * (xm << (xe - 23 - e)) + (-1 if ys else 1) * (ym << (ye - 23 - e))
    return to_f32(n, e, 23, True)


def dot(a_codes, b_codes, fa, fb, path, promote=0):
    """One dot product from +0 by the datapath, with promotion every `promote` products."""
    F, L, out_bits, e_zero = DATAPATHS[path]
    ta, tb, fbits = _TABLES[fa], _TABLES[fb], FORMATS[fa][1] + FORMATS[fb][1]
    prods, special = [], None
    for ca, cb in zip(a_codes, b_codes):
        ka, sa, ma, ea = ta[int(ca)]
        kb, sb, mb, eb = tb[int(cb)]
        if ka != "num" or kb != "num":
            if ka == "nan" or kb == "nan" or (ka == "num" and ma == 0) or (kb == "num" and mb == 0):
                special = NAN
            else:
                inf = -math.inf if sa ^ sb else math.inf
                special = NAN if special is not None and special != inf else inf
            continue
        prods.append((sa ^ sb, ma * mb, ea + eb, fbits))
    if special is not None:
        return special

    def chain(ps):
        c = 0.0
        for i in range(0, len(ps), L):
            c = group(ps[i:i + L], c, F, out_bits, e_zero)
        return c

    if not promote:
        return chain(prods)
    acc = 0.0
    for i in range(0, len(prods), promote):
        acc = f32_add(acc, chain(prods[i:i + promote]))
    return acc


class MmaSimEngine:
    """exmy.probe engine: engine(a, b, fa, fb) -> float32 dot products."""

    def __init__(self, path, promote=0):
        self.path, self.promote = path, promote
        self.name = "mmasim-rules:%s%s" % (path, ",promote=%d" % promote if promote else "")
        self.k_max = 16384

    def __call__(self, a, b, fa, fb):
        out = np.empty(a.shape[0], np.float32)
        for i in range(a.shape[0]):
            # every group counts, even of zero products: it aligns c again
            out[i] = dot(a[i], b[i], fa.name, fb.name, self.path, self.promote)
        return out
