#!/usr/bin/env python3
"""test_mma_ref.py: exmy mma against the independent exact-rational reference
of tests/mma_ref.py (written from the MMA-Sim v2 paper, sharing no code with
emulate/mma.c) on random and adversarial inputs: every code (NaN, inf), zeros
facing huge values, cancellation, full exponent spread, subnormals, terms just
below each cut, C zero / -0 / huge.  Usage: test_mma_ref.py EXMY.
EXMY_TEST_SEED overrides the seed; prints the failing inputs in hex."""
import os
import random
import re
import struct
import subprocess
import sys

import ml_dtypes
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mma_ref as R  # noqa: E402

EXMY = sys.argv[1] if len(sys.argv) > 1 else './exmy'
SEED = int(os.environ.get('EXMY_TEST_SEED', '15'))
rng = random.Random(SEED)

# operand types: (bits, numpy dtype or None, emin)
TYPES = {
    'e4m3': (8, ml_dtypes.float8_e4m3fn, -6), 'e5m2': (8, ml_dtypes.float8_e5m2, -14),
    'e3m2': (6, ml_dtypes.float6_e3m2fn, -2), 'e2m3': (6, ml_dtypes.float6_e2m3fn, 0),
    'e2m1': (4, ml_dtypes.float4_e2m1fn, 0), 'f16': (16, np.float16, -14),
    'bf16': (16, ml_dtypes.bfloat16, -126), 'tf32': (19, None, -126), 'xf32': (19, None, -126),
    'fp8': (8, ml_dtypes.float8_e4m3fnuz, -7), 'bf8': (8, ml_dtypes.float8_e5m2fnuz, -15),
    'ue8m0': (8, ml_dtypes.float8_e8m0fnu, -127), 'ue4m3': (7, ml_dtypes.float8_e4m3fn, -6),
    'f32': (32, None, -126),
}


def decode(t, code):
    bits, dt, _ = TYPES[t]
    if dt is None:
        w = code << 13 if bits == 19 else code
        return struct.unpack('<f', struct.pack('<I', w))[0]
    u = np.uint16 if bits == 16 else np.uint8
    return float(np.array([code], dtype=u).view(dt)[0])


def exponent_of(t, code):
    v = decode(t, code)
    if v != v or v in (float('inf'), float('-inf')) or v == 0:
        return None
    return R.nominal(v, TYPES[t][2])


# codes of each type grouped by exponent (finite, nonzero; sign bit clear)
BY_EXP = {}
for t, (bits, _, _) in TYPES.items():
    if bits > 16:
        continue
    d = {}
    for c in range(1 << (bits - 1) if t not in ('ue8m0',) else 256):
        e = exponent_of(t, c)
        if e is not None:
            d.setdefault(e, []).append(c)
    BY_EXP[t] = d


def rand_code(t, mode, pos=0, big=None):
    bits = TYPES[t][0]
    sign = 0 if t.startswith('ue') or bits == 32 and False else (rng.getrandbits(1) << (bits - 1))
    if t.startswith('ue'):
        sign = 0
    if bits == 19:  # tf32: exponents span the whole fp32 range
        if mode == 'random':
            return rng.getrandbits(19)
        e = rng.randint(1, 254) if mode != 'subnormal' else 0
        if mode == 'zeros' and rng.random() < 0.5:
            return sign
        if mode == 'huge':
            e = rng.randint(240, 254)
        return sign | (e << 10) | rng.getrandbits(10)
    if mode == 'random':
        return rng.getrandbits(bits)
    exps = sorted(BY_EXP[t])
    # zeros facing the other operand's huge values, beside small real products
    near1 = [e for e in exps if -10 <= e <= 0] or exps[:1]
    if mode == 'zeros':
        return sign if pos % 2 == 0 else sign | rng.choice(BY_EXP[t][rng.choice(near1)])
    if mode == 'huge':
        return sign | rng.choice(BY_EXP[t][exps[-1]]) if pos % 2 == 0 else sign | rng.choice(BY_EXP[t][rng.choice(near1)])
    if mode == 'subnormal':
        return sign | rng.choice(BY_EXP[t][exps[0]])
    if mode == 'cut' and big is not None:  # near 2^big below the leading term
        e = min(max(big, exps[0]), exps[-1])
        return sign | rng.choice(BY_EXP[t][e])
    return sign | rng.choice(BY_EXP[t][rng.choice(exps)])


def hexlist(codes):
    return ','.join('0x%x' % c for c in codes)


def c_code(dtype16, mode):
    if dtype16:
        if mode == 'random':
            return rng.getrandbits(16)
        if mode == 'zero':
            return rng.choice([0, 0x8000])
        return rng.getrandbits(1) << 15 | rng.randint(0, 0x7bff)
    if mode == 'random':
        return rng.getrandbits(32)
    if mode == 'zero':
        return rng.choice([0, 0x80000000])
    if mode == 'huge':
        return rng.getrandbits(1) << 31 | rng.randint(0x7e000000, 0x7f7fffff)
    if mode == 'tiny':
        return rng.getrandbits(1) << 31 | rng.randint(0, 0x00ffffff)
    return rng.getrandbits(1) << 31 | rng.randint(0x30000000, 0x48000000)


# instruction, reference parameters, A type, B type (as exmy mma names them)
def P(algo, L, F, rho, e_zero=0, d16=False, F2=0, G=0, emin_c=-126):
    return dict(algo=algo, L=L, F=F, F2=F2, G=G, rho=rho, e_zero=e_zero, d16=d16, emin_c=emin_c, zero='v2')


CASES = [
    ('sm_70:mma.m8n8k4.f32.f16.f16', P('t', 4, 23, 'rz-fp32', -131), 'f16', 'f16', 4),
    ('sm_70:mma.m8n8k4.f16.f16.f16', P('t', 4, 23, 'rne-fp16', -20, True, emin_c=-14), 'f16', 'f16', 4),
    ('sm_75:mma.m16n8k8.f32.f16.f16', P('t', 8, 24, 'rz-fp32', -132), 'f16', 'f16', 8),
    ('sm_80:mma.m16n8k16.f32.bf16.bf16', P('t', 8, 24, 'rz-fp32', -132), 'bf16', 'bf16', 16),
    ('sm_80:mma.m16n8k16.f16.f16.f16', P('t', 8, 24, 'rne-fp16', -21, True, emin_c=-14), 'f16', 'f16', 16),
    ('sm_80:mma.m16n8k8.f32.tf32.tf32', P('t', 4, 24, 'rz-fp32', -132), 'tf32', 'tf32', 8),
    ('sm_89:mma.m16n8k32.f32.e4m3.e5m2', P('t', 16, 13, 'rz-e8m13', -132), 'e4m3', 'e5m2', 32),
    ('sm_89:mma.m16n8k32.f16.e5m2.e5m2', P('t', 16, 13, 'rne-fp16', -21, True, emin_c=-14), 'e5m2', 'e5m2', 32),
    ('sm_90:wgmma.f32.e4m3.e4m3', P('t', 32, 13, 'rz-e8m13', -133), 'e4m3', 'e4m3', 32),
    ('sm_90:wgmma.f32.e5m2.e4m3', P('t', 32, 13, 'rz-e8m13', -133), 'e5m2', 'e4m3', 32),
    ('sm_90:wgmma.f16.e4m3.e4m3', P('t', 32, 13, 'rne-fp16', -133, True, emin_c=-14), 'e4m3', 'e4m3', 32),
    ('sm_90:mma.m16n8k32.f16.e4m3.e5m2', dict(P('t', 16, 25, 'rne-fp16', -22, True, emin_c=-14), W=2), 'e4m3', 'e5m2', 32),
    ('sm_90:mma.m16n8k32.f16.e5m2.e5m2', dict(P('t', 16, 25, 'rne-fp16', -22, True, emin_c=-14), W=2), 'e5m2', 'e5m2', 32),
    ('sm_100:mma.m16n8k32.f32.e4m3.e4m3', dict(P('t', 16, 25, 'rz-fp32', -133), W=2), 'e4m3', 'e4m3', 32),
    ('sm_100:mma.m16n8k32.f32.e4m3.e5m2', dict(P('t', 16, 25, 'rz-fp32', -133), W=2), 'e4m3', 'e5m2', 32),
    ('sm_100:mma.m16n8k32.f16.e5m2.e4m3', dict(P('t', 16, 25, 'rne-fp16', -22, True, emin_c=-14), W=2), 'e5m2', 'e4m3', 32),
    ('sm_90:wgmma.f32.bf16.bf16', P('t', 16, 25, 'rz-fp32', -133), 'bf16', 'bf16', 16),
    ('sm_90:wgmma.f32.f16.f16', P('t', 16, 25, 'rz-fp32', -133), 'f16', 'f16', 16),
    ('sm_90:wgmma.f16.f16.f16', P('t', 16, 25, 'rne-fp16', -133, True, emin_c=-14), 'f16', 'f16', 16),
    ('sm_90:mma.m16n8k16.f16.f16.f16', P('t', 16, 25, 'rne-fp16', -22, True, emin_c=-14), 'f16', 'f16', 16),
    ('sm_90:wgmma.f32.tf32.tf32', P('t', 8, 25, 'rz-fp32', -133), 'tf32', 'tf32', 8),
    ('sm_100:tcgen05.kind::f8f6f4.f32.e4m3.e2m1', P('t', 32, 25, 'rz-fp32', -133), 'e4m3', 'e2m1', 32),
    ('sm_100:tcgen05.kind::f8f6f4.f32.e3m2.e2m3', P('t', 32, 25, 'rz-fp32', -133), 'e3m2', 'e2m3', 32),
    ('sm_100:tcgen05.kind::f8f6f4.f16.e5m2.e2m1', P('t', 32, 25, 'rne-fp16', -133, True, emin_c=-14), 'e5m2', 'e2m1', 32),
    ('sm_120:mma.m16n8k32.f16.e2m1.e2m1', P('t', 32, 25, 'rne-fp16', -22, True, emin_c=-14), 'e2m1', 'e2m1', 32),
    ('sm_100:tcgen05.kind::mxf8f6f4.e4m3.e5m2', dict(P('st', 32, 25, 'rz-fp32', -133), s='ue8m0', block=32), 'e4m3', 'e5m2', 32),
    ('sm_100:tcgen05.kind::mxf8f6f4.e2m1.e3m2', dict(P('st', 32, 25, 'rz-fp32', -133), s='ue8m0', block=32), 'e2m1', 'e3m2', 32),
    ('sm_100:tcgen05.kind::mxf4nvf4', dict(P('gst', 64, 35, 'rz-fp32', -139, G=16), s='ue4m3', block=16), 'e2m1', 'e2m1', 64),
    ('sm_100:tcgen05.kind::mxf4nvf4.block32.ue8m0', dict(P('gst', 64, 35, 'rz-fp32', -139, G=16), s='ue8m0', block=32), 'e2m1', 'e2m1', 64),
    ('cdna1:v_mfma_f32_32x32x8f16', P('e', 4, 0, 'rne-fp32'), 'f16', 'f16', 8),
    ('cdna1:v_mfma_f32_32x32x4bf16', P('e', 2, 0, 'rne-fp32'), 'bf16', 'bf16', 4),
    ('cdna2:v_mfma_f32_32x32x8f16', P('ftz', 64, 0, 'rne-fp32', G=4), 'f16', 'f16', 8),
    ('cdna2:v_mfma_f32_16x16x8bf16', P('ftz', 64, 0, 'rne-fp32', G=2), 'bf16', 'bf16', 8),
    ('cdna2:v_mfma_f32_16x16x16bf16_1k', P('ftz', 64, 0, 'rne-fp32', G=4), 'bf16', 'bf16', 16),
    ('cdna3:v_mfma_f32_16x16x16_f16', P('tr', 8, 24, 'rne-fp32', F2=31), 'f16', 'f16', 16),
    ('cdna3:v_mfma_f32_16x16x16_bf16', P('tr', 8, 24, 'rne-fp32', F2=31), 'bf16', 'bf16', 16),
    ('cdna3:v_mfma_f32_16x16x8_xf32', P('tr', 4, 24, 'rne-fp32', F2=31), 'xf32', 'xf32', 8),
    ('cdna3:v_mfma_f32_16x16x32_fp8_bf8', P('gtr', 16, 24, 'rne-fp32', F2=31), 'fp8', 'bf8', 32),
]
# the v1 zero rule as a named variant
CASES += [(n + ',zero=v1', dict(p, zero='v1'), a, b, k) for n, p, a, b, k in CASES if n in
          ('sm_90:wgmma.f32.bf16.bf16', 'sm_80:mma.m16n8k16.f32.bf16.bf16', 'sm_90:wgmma.f32.e4m3.e4m3',
           'sm_100:tcgen05.kind::mxf8f6f4.e4m3.e5m2')]

MODES = ['random', 'finite', 'zeros', 'huge', 'subnormal', 'cut', 'cancel']
M = N = 8
ROUNDS = 5
failures = 0
total = 0
for name, p, ta, tb, k in CASES:
    p = dict(p, emin_a=TYPES[ta][2], emin_b=TYPES[tb][2])
    if 's' in p:
        p['emin_s'] = TYPES[p['s']][2]
    for rnd in range(ROUNDS):
        rows, cols = [], []
        for i in range(M):
            mode = MODES[(i + rnd) % len(MODES)]
            big = rng.choice(sorted(BY_EXP[ta])) if ta in BY_EXP else 0
            row = [rand_code(ta, mode, l, big - rng.randint(0, 4) if l else big) for l in range(k)]
            if mode == 'cancel':  # the leading products cancel, exposing the cut terms below them
                sb_ = 1 << (TYPES[ta][0] - 1)
                row[0] = rand_code(ta, 'huge', 0)
                g = p.get('G', 1)
                row[g:2 * g] = [c ^ sb_ for c in row[:g]]
            rows.append(row)
        for j in range(N):
            mode = MODES[(j * 3 + rnd) % len(MODES)] if j % 4 == 1 else ('huge' if j % 4 == 0 else 'cancel')
            big = rng.choice(sorted(BY_EXP[tb])) if tb in BY_EXP else 0
            col = [rand_code(tb, mode, l, big - rng.randint(0, 4) if l else big) for l in range(k)]
            if mode == 'cancel':
                g = p.get('G', 1)
                col[0] = rand_code(tb, 'huge', 0)
                col[g:2 * g] = col[:g]
            cols.append(col)
        if p.get('W') and (ta, tb) == ('e4m3', 'e5m2'):
            # +-2^-7 (an e4m3 subnormal) times 2^15 cancel beside 2^-9 * 1.5 * 2^-8: as f16
            # values the cut is 2^-17 (D = 2^-17); at e4m3's nominal exponent -6 it is 2^-16 (D = 0)
            rows[0] = [0x04, 0x84, 0, 0, 0x01] + [0] * (k - 5)
            cols[0] = [0x78, 0x78, 0, 0, 0x1e] + [0] * (k - 5)
        cmodes = ['zero', 'finite', 'huge', 'tiny', 'random']
        C = [[c_code(p['d16'], ('zero' if (i + j) % 4 == 1 else 'finite') if 's' in p and (i + j) % 2 else cmodes[(i + j + rnd) % 5]) for j in range(N)]
             for i in range(M)]
        if p.get('W') and (ta, tb) == ('e4m3', 'e5m2'):
            C[0][0] = 0
        ctype = 'f16' if p['d16'] else 'f32'
        args = [EXMY, 'mma', name, '--m', str(M), '--n', str(N),
                '--a', hexlist([c for r in rows for c in r]),
                '--b', hexlist([cols[j][l] for l in range(k) for j in range(N)]),
                '--c', hexlist([c for r in C for c in r])]
        SA = SB = None
        if 's' in p:
            nb = k // p['block']

            def scode(g):
                """random codes, NaN, zero, and scales falling by 14-24 binades per
                block (ue4m3: from the top binades to the bottom), so later groups sit just above or below the F-bit cut"""
                r = rng.random()
                if p['s'] == 'ue8m0':
                    if r < 0.5:
                        return max(0, 150 - g * rng.randint(14, 24))
                    return rng.choice([rng.randint(107, 147), rng.randint(0, 254), 255 if r < 0.55 else 127])
                if r < 0.5:
                    return rng.randint(0x70, 0x7e) if g == 0 else rng.randint(0x01, 0x10)
                return rng.choice([rng.randint(0x20, 0x50), rng.randint(0, 0x7e), 0x7f if r < 0.55 else 0])
            SA = [[scode(g) for g in range(nb)] for _ in range(M)]
            SB = [[scode(g) for _ in range(N)] for g in range(nb)]
            if p['algo'] == 'gst' and nb == 4:  # cancelling groups 0 and 1 share their scales
                for r in SA:
                    r[1] = r[0]
                SB[1] = list(SB[0])
            args += ['--scale-a', hexlist([c for r in SA for c in r]), '--scale-b', hexlist([c for r in SB for c in r])]
        out = subprocess.run(args, capture_output=True, text=True)
        if out.returncode:
            print('FAIL: %s exited %d: %s' % (name, out.returncode, out.stderr.strip()))
            failures += 1
            continue
        got = [int(h, 16) for h in re.findall(r'0x([0-9a-f]+) =', out.stdout)]
        for i in range(M):
            for j in range(N):
                a = [decode(ta, c) for c in rows[i]]
                b = [decode(tb, c) for c in cols[j]]
                c = decode(ctype, C[i][j]) if ctype == 'f16' else decode('f32', C[i][j])
                if 's' in p:
                    blk = p['block']
                    sa = [decode(p['s'], SA[i][l // blk]) for l in range(k)]
                    sb = [decode(p['s'], SB[l // blk][j]) for l in range(k)]
                    want = R.dot(a, b, c, p, sa, sb)
                else:
                    want = R.dot(a, b, c, p)
                total += 1
                g = got[i * N + j]
                is_nan = (lambda w: (w & 0x7FFF) > 0x7C00) if p['d16'] else (lambda w: (w & 0x7FFFFFFF) > 0x7F800000)
                if g != want and not (p['algo'] in ('e', 'ftz') and is_nan(g) and is_nan(want)):
                    failures += 1
                    if failures <= 10:
                        print('FAIL: %s (%d,%d): exmy 0x%x, reference 0x%x\n  A %s\n  B %s\n  C 0x%x%s' % (
                            name, i, j, g, want, hexlist(rows[i]), hexlist(cols[j]), C[i][j],
                            '\n  SA %s SB %s' % (hexlist(SA[i]), hexlist([SB[l][j] for l in range(len(SB))])) if SA else ''))
    print('%-48s ok so far (%d failures)' % (name, failures))
print('test_mma_ref: %d outputs, %d differ (seed %d)' % (total, failures, SEED))
sys.exit(1 if failures else 0)
