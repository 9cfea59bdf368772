"""exmy.mma (one matrix-unit instruction) against the `exmy mma` command on the
same inputs, bit for bit: the values go to the command as .npy files and D
comes back as its --out codes.  Also mma_names/mma_info against --list, a
known answer of the zero-term rule (docs/mma.md), and the errors."""
import numpy as np

import exmy
from harness import TempDir, rng, run, same_bits

# (instruction, m, n): an FP8 Hopper one, FP8 with f16 D, bf16, f16 with f16 D,
# block-scaled NVFP4 and MXFP8, AMD CDNA3 FP8 and f16, Ada FP8, a zero=v1 variant
CASES = [
    ("sm_90:wgmma.f32.e4m3.e4m3", 4, 3),
    ("sm_90:wgmma.f16.e5m2.e5m2", 2, 3),
    ("sm_90:wgmma.f32.bf16.bf16", 3, 2),
    ("sm_90:wgmma.f16.f16.f16", 2, 2),
    ("sm_100:tcgen05.kind::mxf4nvf4", 3, 4),
    ("sm_100:tcgen05.kind::mxf8f6f4.e4m3.e4m3", 2, 2),
    ("cdna3:v_mfma_f32_16x16x32_fp8_fp8", 4, 2),
    ("cdna3:v_mfma_f32_16x16x16_bf16", 2, 3),
    ("cdna3:v_mfma_f32_16x16x8_xf32", 2, 2),
    ("cdna1:v_mfma_f32_16x16x16f16", 2, 2),
    ("cdna2:v_mfma_f32_16x16x16bf16_1k", 2, 2),
    ("sm_89:mma.m16n8k32.f32.e5m2", 2, 2),
    ("sm_90:wgmma.f32.bf16.bf16,zero=v1", 3, 2),
]


def _values(fmt, shape, g, zeros=0.25):
    """Random finite values of fmt: normal values times 2^-4..2^4 (a sixth
    of them times 2^-14: subnormals, bits under the cut), rounded to fmt
    (saturating), about a quarter of them zeros (where the zero-term rule acts)."""
    f = exmy.Format(fmt) if isinstance(fmt, str) else fmt
    x = g.standard_normal(shape) * np.exp2(g.integers(-4, 5, size=shape))
    x[g.random(shape) < 1 / 6] *= 2.0 ** -14
    x[g.random(shape) < zeros] = 0.0
    v = exmy.decode(exmy.quantize(x, f.name, saturate=True), f.name, dtype=np.float64)
    assert np.isfinite(v).all()
    return v


def _scales(fmt, shape, g):
    """Block scales around 1: 2^-3..2^3 (e8m0), or e4m3fn values 0.25..4."""
    f = exmy.Format(fmt) if isinstance(fmt, str) else fmt
    x = np.exp2(g.integers(-3, 4, size=shape)) * (1 if f.mbits == 0 else g.uniform(0.5, 1.0, size=shape))
    return exmy.decode(exmy.quantize(x, f.name, saturate=True), f.name, dtype=np.float64)


def _inputs(instr, m, n, salt):
    g = rng(salt)
    info = exmy.mma_info(instr)
    k = info["k"]
    a = _values(info["a_format"], (m, k), g)
    b = _values(info["b_format"], (k, n), g)
    c = _values(info["c_format"], (m, n), g, zeros=0.1)
    if info["a_format"].name == "bf16":
        # a zero facing 2^127: v1's zero rule (exponent -126 + 127) cuts the other products, v2's does not
        a[:, 0], b[0, :] = 0.0, 2.0 ** 127
    sa = sb = None
    if info["scale_format"] is not None:
        sf = info["scale_format"]
        nb = k // info["block"]
        sa, sb = _scales(sf, (m, nb), g), _scales(sf, (nb, n), g)
    return a, b, c, sa, sb


def _command(instr, a, b, c, sa, sb):
    t = TempDir()
    args = ["mma", instr]
    for opt, x, name in (("--a", a, "a"), ("--b", b, "b"), ("--c", c, "c"), ("--scale-a", sa, "sa"),
                         ("--scale-b", sb, "sb")):
        if x is not None:
            np.save(t(name + ".npy"), x)
            args += [opt, t(name + ".npy")]
    args += ["--out", t("d.npy")]
    run(args)
    return np.load(t("d.npy"))


def test_mma_equals_the_command():
    for salt, (instr, m, n) in enumerate(CASES):
        a, b, c, sa, sb = _inputs(instr, m, n, 100 + salt)
        want = _command(instr, a, b, c, sa, sb)
        got = exmy.mma(instr, a, b, c, sa, sb, codes=True)
        same_bits(got, want, what=instr)
        # the default result is the same bits viewed as D's float type
        d = exmy.mma(instr, a, b, c, sa, sb)
        dbits = exmy.mma_info(instr)["d_format"].bits
        assert d.dtype == (np.float32 if dbits == 32 else np.float16), (instr, d.dtype)
        same_bits(d, want, what=instr + " (values)")
        # float32 (and float16) inputs give the same D as their float64 values
        a32 = a.astype(np.float32)
        if np.array_equal(a32.astype(np.float64), a):
            same_bits(exmy.mma(instr, a32, b, c, sa, sb, codes=True), want, what=instr + " (float32 A)")


def test_mma_zero_rule_reaches_the_library():
    # the bf16 inputs hold a zero facing 2^127: ",zero=v1" must change some output bits
    a, b, c, _, _ = _inputs("sm_90:wgmma.f32.bf16.bf16", 3, 2, 7)
    v2 = exmy.mma("sm_90:wgmma.f32.bf16.bf16", a, b, c, codes=True)
    v1 = exmy.mma("sm_90:wgmma.f32.bf16.bf16,zero=v1", a, b, c, codes=True)
    assert (v1 != v2).any(), "zero=v1 gave v2's result on every output"


def test_mma_zero_rule_known_answer():
    # docs/mma.md: a zero facing 2^127 under v1's rule cuts the 2^-25 bit of the product
    a = "0x0,0x3f81" + ",0x0" * 14
    b = "0x7f00,0x3a01" + ",0x0" * 14
    va = exmy.decode(np.array([int(x, 16) for x in a.split(",")], np.uint16), "bf16", dtype=np.float64)
    vb = exmy.decode(np.array([int(x, 16) for x in b.split(",")], np.uint16), "bf16", dtype=np.float64)
    for suffix, want in (("", 0x3a020200), (",zero=v1", 0x3a020000)):
        instr = "sm_90:wgmma.f32.bf16" + suffix
        d = exmy.mma(instr, va, vb, codes=True)
        assert d.shape == (1, 1) and int(d[0, 0]) == want, "%s: 0x%08x, expected 0x%08x" % (instr, int(d[0, 0]), want)
        out = run(["mma", instr, "--a", a, "--b", b])[1]
        assert out.startswith("0x%08x = " % want), out


def test_mma_names_and_info():
    out = run(["mma", "--list"])[1]
    listed = [line.split()[0] for line in out.splitlines()]
    names = exmy.mma_names()
    assert names == listed, "mma_names() differs from exmy mma --list"
    assert len(names) > 100
    i = exmy.mma_info("sm_90:wgmma.f32.e4m3")
    assert (i["name"], i["datapath"], i["k"], i["a_format"].name, i["d_format"].name, i["scale_format"]) == \
        ("sm_90:wgmma.f32.e4m3.e4m3", "hopper-fp8-f32", 32, "e4m3fn", "f32", None), i
    i = exmy.mma_info("sm_100:tcgen05.kind::mxf4nvf4,zero=v1")
    assert (i["datapath"], i["k"], i["block"], i["scale_format"].name, i["zero"]) == \
        ("blackwell-mxf4nvf4", 64, 16, "e4m3fn", "v1"), i


def _raises(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return str(e)
    raise AssertionError("%s%r did not raise %s" % (fn.__name__, args, exc.__name__))


def test_mma_errors():
    instr = "sm_90:wgmma.f32.e4m3"
    ones = np.ones((2, 32))
    onesb = np.ones((32, 3))
    # bad names: the library's one line, as the command prints it
    for bad in ("sm_90:wgmma.f32.e4m4", "sm_91:wgmma.f32.e4m3", "sm_90:wgmma.f32.e4m3,zero=v3", ""):
        msg = _raises(ValueError, exmy.mma, bad, ones, onesb)
        rc, _, err = run(["mma", bad, "--a", "0x38", "--b", "0x38"], ok=False)
        # the command names itself once: "exmy: mma: " + the message (which may start with "mma: ")
        assert rc == 2 and err.strip() in ("exmy: " + msg, "exmy: mma: " + msg), (bad, msg, err)
        assert _raises(ValueError, exmy.mma_info, bad) == msg
    # a value A's format cannot hold: the library's message, as the command gives it for the same .npy
    a = ones.copy()
    a[1, 5] = 0.3
    msg = _raises(ValueError, exmy.mma, instr, a, onesb)
    assert msg == "mma: A[37] = 0x1.3333333333333p-2 is not a value of e4m3fn", msg
    t = TempDir()
    np.save(t("a.npy"), a)
    np.save(t("b.npy"), onesb)
    rc, _, err = run(["mma", instr, "--a", t("a.npy"), "--b", t("b.npy")], ok=False)
    assert rc == 2 and err.strip() == "exmy: " + msg, err
    # an A with no columns: a clean error in both (the command once divided by zero reading it)
    assert "A has 0 columns" in _raises(ValueError, exmy.mma, instr, np.zeros((4, 0)), onesb)
    np.save(t("a0.npy"), np.zeros((4, 0)))
    rc, _, err = run(["mma", instr, "--a", t("a0.npy"), "--b", t("b.npy")], ok=False)
    assert rc == 2 and err.startswith("exmy: mma: A has 0 columns"), (rc, err)
    # NaN where the format has none (e2m1fn), inf in e4m3fn, C not an f32... value
    nv = "sm_100:tcgen05.kind::mxf4nvf4"
    a4 = np.zeros((1, 64))
    a4[0, 3] = np.nan
    s = np.ones((1, 4))
    assert "is NaN, which e2m1fn cannot hold" in _raises(ValueError, exmy.mma, nv, a4, np.zeros((64, 1)), None, s,
                                                         s.T)
    a[1, 5] = np.inf
    assert "is not a value of e4m3fn" in _raises(ValueError, exmy.mma, instr, a, onesb)
    assert "C[0] = " in _raises(ValueError, exmy.mma, "sm_90:wgmma.f16.e4m3", ones, onesb, 1e-30)
    # scales: missing, unwanted, wrong shape, not a value of the scale format
    want = "mma: sm_100:tcgen05.kind::mxf4nvf4 needs block scales"
    assert want == _raises(ValueError, exmy.mma, nv, np.zeros((1, 64)), np.zeros((64, 1)))
    assert want == _raises(ValueError, exmy.mma, nv, np.zeros((1, 64)), np.zeros((64, 1)), sa=s)
    assert "takes no block scales" in _raises(ValueError, exmy.mma, instr, ones, onesb, sa=s, sb=s.T)
    assert "sa is 1 x 2, expected 1 x 4" in _raises(ValueError, exmy.mma, nv, np.zeros((1, 64)), np.zeros((64, 1)),
                                                    None, np.ones((1, 2)), s.T)
    assert "is not a value of e4m3fn" in _raises(ValueError, exmy.mma, nv, np.zeros((1, 64)), np.zeros((64, 1)),
                                                 None, s * 1000, s.T)
    # shapes
    assert "A has 16 columns" in _raises(ValueError, exmy.mma, instr, np.ones((2, 16)), onesb)
    assert "B has 31 rows" in _raises(ValueError, exmy.mma, instr, ones, np.ones((31, 3)))
    assert "C is 3 x 2, expected 2 x 3" in _raises(ValueError, exmy.mma, instr, ones, onesb, np.zeros((3, 2)))
    assert "must be 2-D" in _raises(ValueError, exmy.mma, instr, np.ones((1, 2, 32)), onesb)
    # types
    assert "dtype int64" in _raises(TypeError, exmy.mma, instr, ones.astype(np.int64), onesb)
    assert "expected a numpy array" in _raises(TypeError, exmy.mma, instr, [1.0] * 32, onesb)
    assert "must be a str" in _raises(TypeError, exmy.mma, 7, ones, onesb)


def test_mma_vectors_and_scalar_c():
    # a 1-D a is a row, a 1-D b a column; a number c fills C; float16/float32 inputs hold the same values
    instr = "sm_90:wgmma.f32.f16"
    g = rng(5)
    a = exmy.cast(g.standard_normal(16), "f16")
    b = exmy.cast(g.standard_normal(16), "f16")
    want = exmy.mma(instr, a.reshape(1, 16), b.reshape(16, 1), np.full((1, 1), 0.375), codes=True)
    same_bits(exmy.mma(instr, a, b, 0.375, codes=True), want, what="1-D a, b and a number c")
    same_bits(exmy.mma(instr, a.astype(np.float16), b.astype(np.float16), np.float32(0.375), codes=True), want,
              what="float16 a, b")
    bt = np.asfortranarray(np.tile(b.reshape(16, 1), (1, 3)))  # any layout: copied
    d = exmy.mma(instr, np.tile(a, (2, 1)), bt, 0.375, codes=True)
    assert d.shape == (2, 3) and (d == want[0, 0]).all(), d
