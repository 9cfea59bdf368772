"""mma_ref.py: an independent reference of the tensor-core / matrix-core
datapaths, in exact rationals (fractions.Fraction), written from the MMA-Sim v2
paper's description (arXiv 2511.10909: T-FDPA, ST-FDPA, GST-FDPA of NVIDIA,
TR-FDPA, GTR-FDPA and the exact FDPA of AMD CDNA).  It shares no code with
emulate/mma.c and mma_fused.c: values come from ml_dtypes, sums are Fractions, roundings are
written out here.  Used by tests/test_mma_ref.py."""
import math
import struct
from fractions import Fraction

import numpy as np

F32_NAN = 0x7FFFFFFF
F16_NAN = 0x7FFF


def exp_floor(x):
    """floor(log2 |x|) of a nonzero Fraction."""
    x = abs(x)
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    return e


def nominal(x, emin):
    """The alignment exponent of a value: max(floor(log2|x|), emin)."""
    return max(exp_floor(Fraction(x)), emin)


def round_frac(x, quantum, mode):
    """x cut to a multiple of quantum: 'rz' toward zero, 'floor', 'rne'."""
    q = x / quantum
    if mode == 'rz':
        n = math.trunc(q)
    elif mode == 'floor':
        n = math.floor(q)
    else:
        n = math.floor(q)
        r = q - n
        if r > Fraction(1, 2) or (r == Fraction(1, 2) and n % 2):
            n += 1
    return n * quantum


def f32_bits(x, neg_zero=False):
    if x == 0:
        return 0x80000000 if neg_zero else 0
    return struct.unpack('<I', struct.pack('<f', float(x)))[0]


def f16_bits(x, neg_zero=False):
    if x == 0:
        return 0x8000 if neg_zero else 0
    return int(np.array(float(x), dtype=np.float64).astype(np.float16).view(np.uint16))


def out_format(x, rho, neg_zero):
    """The output conversion rho of an exact sum x (Fraction) as D's code."""
    if rho in ('rz-fp32', 'rz-e8m13'):
        if x == 0:
            return f32_bits(0, neg_zero)
        frac = 23 if rho == 'rz-fp32' else 13
        if exp_floor(x) >= 128:
            return 0xFF800000 if x < 0 else 0x7F800000
        E = max(exp_floor(x), -126)
        y = round_frac(x, Fraction(2) ** (E - frac), 'rz')
        return f32_bits(y, neg_zero=(y == 0 and x < 0))
    if rho == 'rne-fp16':
        if x == 0:
            return f16_bits(0, neg_zero)
        E = max(exp_floor(x), -14)
        y = round_frac(x, Fraction(2) ** (E - 10), 'rne')
        if abs(y) >= 65536:
            return 0xFC00 if y < 0 else 0x7C00
        return f16_bits(y, neg_zero=(y == 0 and x < 0))
    # rne-fp32
    if x == 0:
        return f32_bits(0, neg_zero)
    E = max(exp_floor(x), -126)
    y = round_frac(x, Fraction(2) ** (E - 23), 'rne')
    if abs(y) >= Fraction(2) ** 128:
        return 0xFF800000 if y < 0 else 0x7F800000
    return f32_bits(y, neg_zero=(y == 0 and x < 0))


def ieee_special(prods, c):
    """NaN or +-inf of the IEEE sum of float products and c, else None."""
    with np.errstate(all='ignore'):
        s = np.float64(c)
        for p in prods:
            s = s + np.float64(p)
    if math.isnan(s):
        return 'nan'
    if math.isinf(s):
        return 'inf' if s > 0 else '-inf'
    return None


def special_code(kind, d16):
    if kind == 'nan':
        return F16_NAN if d16 else F32_NAN
    if d16:
        return 0x7C00 if kind == 'inf' else 0xFC00
    return 0x7F800000 if kind == 'inf' else 0xFF800000


def truncated_sum(terms, F):
    """terms: (value Fraction, exponent, negative). Each cut toward zero to F
    fraction bits below 2^emax; returns (exact sum, all cut terms are -0)."""
    emax = max(e for _, e, _ in terms)
    q = Fraction(2) ** (emax - F)
    total, negzero = Fraction(0), True
    for v, _, neg in terms:
        t = round_frac(v, q, 'rz')
        total += t
        negzero = negzero and t == 0 and neg
    return total, negzero


def t_fdpa(a, b, c, p, sa=None, sb=None):
    """One fused sum of NVIDIA's T-FDPA (ST-FDPA with scales sa, sb per
    product).  a, b: floats (exact operand values); c: float.  p: the row."""
    prods = [x * y for x, y in zip(a, b)]
    if sa is not None:
        prods = [q * s1 * s2 for q, s1, s2 in zip(prods, sa, sb)]
    sp = ieee_special(prods, c)
    if sp:
        return special_code(sp, p['d16'])
    terms = []
    for i in range(len(a)):
        v = Fraction(a[i]) * Fraction(b[i])
        e = None
        if sa is not None:
            v = v * Fraction(sa[i]) * Fraction(sb[i])
        neg = (math.copysign(1, a[i]) < 0) != (math.copysign(1, b[i]) < 0)
        if v == 0:
            if p['zero'] == 'v1':  # -126 per zero factor, block scales included (docs/gemm.md)
                ea = nominal(a[i], p['emin_a']) if a[i] != 0 else -126
                eb = nominal(b[i], p['emin_b']) if b[i] != 0 else -126
                e = ea + eb
                if sa is not None:
                    e += sum(nominal(s, p['emin_s']) if s != 0 else -126 for s in (sa[i], sb[i]))
            else:
                e = p['e_zero']
        else:
            e = nominal(a[i], p['emin_a']) + nominal(b[i], p['emin_b'])
            if sa is not None:
                e += nominal(sa[i], p['emin_s']) + nominal(sb[i], p['emin_s'])
        terms.append((v, e, neg))
    cneg = math.copysign(1, c) < 0
    if c == 0:
        ec = -126 if p['zero'] == 'v1' else p['e_zero']
    else:
        ec = nominal(c, p['emin_c'])
    terms.append((Fraction(c), ec, cneg))
    total, nz = truncated_sum(terms, p['F'])
    return out_format(total, p['rho'], nz)


def gst_fdpa(a, b, c, sa, sb, p):
    """GST-FDPA: groups of G products summed exactly, scaled by the group's
    scales, aligned by the scales' exponents (MXFP4/NVFP4)."""
    G = p['G']
    prods = [x * y * s1 * s2 for x, y, s1, s2 in zip(a, b, sa, sb)]
    sp = ieee_special(prods, c)
    if sp:
        return special_code(sp, False)
    terms = []
    for g in range(0, len(a), G):
        group = [Fraction(a[i]) * Fraction(b[i]) for i in range(g, g + G)]
        s = Fraction(sa[g]) * Fraction(sb[g])
        allzero = all(q == 0 for q in group)
        signs = [(math.copysign(1, a[i]) < 0) != (math.copysign(1, b[i]) < 0) for i in range(g, g + G)]
        total = sum(group, Fraction(0))
        neg = total < 0 or (total == 0 and allzero and all(signs))
        e = p['e_zero'] if allzero or s == 0 else nominal(sa[g], p['emin_s']) + nominal(sb[g], p['emin_s'])
        terms.append((total * s, e, neg))
    ec = p['e_zero'] if c == 0 else nominal(c, -126)
    terms.append((Fraction(c), ec, math.copysign(1, c) < 0))
    total, nz = truncated_sum(terms, p['F'])
    return out_format(total, p['rho'], nz)


def tr_fdpa(a, b, c, p):
    """CDNA3's TR-FDPA (GTR: even and odd products summed apart): products cut
    toward zero at F bits, floored to F2+1 bits beside c floored to F bits,
    the total normalized and floored to F2 bits, rounded to fp32."""
    F, F2 = p['F'], p['F2']
    prods, over = [], []
    for x, y in zip(a, b):
        q = x * y
        if math.isfinite(x) and math.isfinite(y) and q != 0:
            e = nominal(x, p['emin_a']) + nominal(y, p['emin_b'])
            s = Fraction(x) * Fraction(y) / Fraction(2) ** e
            if (1 if abs(s) >= 2 else 0) + e >= 128:
                q = math.copysign(math.inf, q)
        prods.append(q)
    sp = ieee_special(prods, c)
    if sp:
        return special_code(sp, False)

    def stage(idx):
        nz = [(Fraction(a[i]) * Fraction(b[i]), nominal(a[i], p['emin_a']) + nominal(b[i], p['emin_b']),
               (math.copysign(1, a[i]) < 0) != (math.copysign(1, b[i]) < 0)) for i in idx if a[i] * b[i] != 0]
        zeros_neg = all((math.copysign(1, a[i]) < 0) != (math.copysign(1, b[i]) < 0) for i in idx if a[i] * b[i] == 0)
        if not nz:
            return Fraction(0), None, zeros_neg
        total, negz = truncated_sum(nz, F)
        return total, max(e for _, e, _ in nz), negz and zeros_neg

    if p['algo'] == 'gtr':
        se, ee, ne = stage(range(0, len(a), 2))
        so, eo, no = stage(range(1, len(a), 2))
        es = [e for e in (ee, eo) if e is not None]
        e_dot = max(es) if es else None
        if e_dot is None:
            s_dot, dneg = Fraction(0), ne and no
        else:
            q = Fraction(2) ** (e_dot - F)
            fe, fo = round_frac(se, q, 'floor'), round_frac(so, q, 'floor')
            s_dot = fe + fo
            dneg = (fe == 0 and se == 0 and ne) and (fo == 0 and so == 0 and no)
    else:
        s_dot, e_dot, dneg = stage(range(len(a)))
    ec = nominal(c, -126) if c != 0 else -126
    e_max = ec if e_dot is None else max(e_dot, ec)
    d1 = round_frac(s_dot, Fraction(2) ** (e_max - F2 - 1), 'floor')
    d1neg = d1 == 0 and s_dot == 0 and dneg
    c1 = round_frac(Fraction(c), Fraction(2) ** (e_max - F), 'floor')
    c1neg = c1 == 0 and c == 0 and math.copysign(1, c) < 0
    if p['algo'] == 'gtr' and ec < e_max - F - 1:
        c1, c1neg = Fraction(0), False
    tot = d1 + c1
    if tot == 0:
        return f32_bits(0, d1neg and c1neg)
    E = max(exp_floor(tot), -126)
    r = round_frac(tot, Fraction(2) ** (E - F2), 'floor')
    if r == 0:
        return 0
    return out_format(r, 'rne-fp32', False)


def e_fdpa(a, b, c, p):
    """CDNA1: the exact sum of the products and c, rounded once to fp32."""
    prods = [x * y for x, y in zip(a, b)]
    sp = ieee_special(prods, c)
    if sp:
        return 0x7FC00000 if sp == 'nan' else special_code(sp, False)
    total = sum((Fraction(x) * Fraction(y) for x, y in zip(a, b)), Fraction(c))
    if total == 0:
        allneg = all((math.copysign(1, x) < 0) != (math.copysign(1, y) < 0) for x, y in zip(a, b)) and \
            math.copysign(1, c) < 0
        anynz = any(x * y != 0 for x, y in zip(a, b)) or c != 0
        return f32_bits(0, allneg and not anynz)
    return out_format(total, 'rne-fp32', False)


def ftz_mul_add(a, b, c, p):
    """CDNA2: subnormal inputs flushed to +0, fp32 products and fp32 adds
    (nearest even) with subnormal results flushed to a zero of their sign;
    products added in pairs (P = 2) or (p0 + p1) + (p2 + p3) (P = 4), each
    then added to c."""
    f32 = np.float32
    tiny = 2.0 ** -126

    def flush(x, keep_sign):
        if abs(float(x)) < tiny:
            return f32(math.copysign(0.0, float(x))) if keep_sign else f32(0.0)
        return f32(x)
    emin_in = 2.0 ** p['emin_a']
    with np.errstate(all='ignore'):
        prods = []
        for x, y in zip(a, b):
            x = 0.0 if abs(x) < emin_in else x
            y = 0.0 if abs(y) < emin_in else y
            prods.append(flush(f32(x) * f32(y), True))
        acc = flush(f32(c), False)
        P = p['G']
        for i in range(0, len(a), P):
            s = flush(prods[i] + prods[i + 1], True)
            if P == 4:
                s = flush(s + flush(prods[i + 2] + prods[i + 3], True), True)
            acc = flush(acc + s, True)
    if math.isnan(float(acc)):
        return 0x7FC00000
    return int(np.array(acc, dtype=np.float32).view(np.uint32))


def f16_value(code):
    return float(np.array(code, dtype=np.uint16).view(np.float16))


def f32_value(code):
    return float(np.array(code, dtype=np.uint32).view(np.float32))


def f16_pieces_then_c(a, b, c, p):
    """FP8 mma.sync on sm_90 and sm_100 as the H100/H200/B200 recordings show
    it: the operands taken as f16 values; piece j holds the elements l with
    (l // W) mod (k / L) = j; the pieces are T sums chained from +0, each
    converted by rho to D's format; then one IEEE add of c in D's format
    (f16 or fp32), rounded to nearest even."""
    W, L, d16 = p['W'], p['L'], p['d16']
    npieces = len(a) // L
    q = dict(p, emin_a=-14, emin_b=-14, emin_c=-14 if d16 else -126)
    value = f16_value if d16 else f32_value
    acc = 0.0
    for j in range(npieces):
        idx = [l for l in range(len(a)) if (l // W) % npieces == j]
        acc = value(t_fdpa([a[l] for l in idx], [b[l] for l in idx], acc, q))
    sp = ieee_special([acc], c)
    if sp:
        return special_code(sp, d16)
    total = Fraction(acc) + Fraction(c)
    both_negzero = acc == 0 and c == 0 and math.copysign(1, acc) < 0 and math.copysign(1, c) < 0
    return out_format(total, 'rne-fp16' if d16 else 'rne-fp32', both_negzero)


def dot(a, b, c, p, sa=None, sb=None):
    """A whole instruction's output: fused sums over pieces of L products
    chained through the accumulator (D's format after the first)."""
    if p.get('W'):
        return f16_pieces_then_c(a, b, c, p)
    L = min(len(a), p['L'])
    code = None
    for l0 in range(0, len(a), L):
        sl = slice(l0, l0 + L)
        if p['algo'] in ('t', 'st'):
            code = t_fdpa(a[sl], b[sl], c, p, sa[sl] if sa else None, sb[sl] if sb else None)
        elif p['algo'] == 'gst':
            code = gst_fdpa(a[sl], b[sl], c, sa[sl], sb[sl], p)
        elif p['algo'] in ('tr', 'gtr'):
            code = tr_fdpa(a[sl], b[sl], c, p)
        elif p['algo'] == 'ftz':
            code = ftz_mul_add(a[sl], b[sl], c, p)
        else:
            code = e_fdpa(a[sl], b[sl], c, p)
        if p['d16']:
            c = float(np.array(code, dtype=np.uint16).view(np.float16))
        else:
            c = struct.unpack('<f', struct.pack('<I', code))[0]
        if p['d16']:
            p = dict(p, emin_c=-14)
    return code
