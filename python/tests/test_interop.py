"""float8 interop on numpy arrays: ml_dtypes' float8/float6/float4 arrays are
values in their own format (quantize and decode to another format
requantize, bit for bit as ml_dtypes' own casts); formats from dtype
objects and ml_dtypes names; dtype= returns ml_dtypes' type of the format
(and refuses another format's type); any layout (strided views,
Fortran order) gives the results of its C-order copy; bfloat16, float16 and
float8 tensors in exmy.scale widen exactly."""
import warnings

import numpy as np

import exmy
from harness import rng, same_bits, SkipTest

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

# ml_dtypes' narrow float types and exmy's name of each (the table exmy.Format maps through)
NARROW = [("float8_e4m3fn", "e4m3fn"), ("float8_e4m3", "e4m3"), ("float8_e4m3fnuz", "e4m3fnuz"),
          ("float8_e4m3b11fnuz", "e4m3b11fnuz"), ("float8_e5m2", "e5m2"), ("float8_e5m2fnuz", "e5m2fnuz"),
          ("float8_e3m4", "e3m4"), ("float8_e8m0fnu", "e8m0fnu"), ("float6_e2m3fn", "e2m3fn"),
          ("float6_e3m2fn", "e3m2fn"), ("float4_e2m1fn", "e2m1fn")]
NO_NAN = {"e2m1fn", "e2m3fn", "e3m2fn"}


def _need():
    if ml_dtypes is None:
        raise SkipTest("ml_dtypes is not installed")


def _every_value(name, fmt):
    """Every code of the format as an array of ml_dtypes' type (NaN codes included)."""
    f = exmy.Format(fmt)
    return np.arange(1 << f.bits, dtype=np.uint8).view(getattr(ml_dtypes, name))


def test_requantize_between_narrow_types_as_ml_dtypes():
    """e4m3fn -> e5m2 (every pair of types): exmy.quantize and exmy.decode
    of an ml_dtypes array take its values, one rounding to the target, the
    codes ml_dtypes' astype gives (NaN compared as a class; targets without
    NaN: NaN inputs left out, as test_mldtypes_cast; pairs ml_dtypes has no
    direct cast for go through float32, exact for these types)."""
    _need()
    checked = 0
    for src, sf in NARROW:
        x = _every_value(src, sf)
        for dst, df in NARROW:
            t = getattr(ml_dtypes, dst)
            xs = x
            if df in NO_NAN:
                xs = x[~np.isnan(x.astype(np.float32))]
            if df == "e8m0fnu":  # ml_dtypes' known slip just above 2^-127 (test_mldtypes_cast)
                a = np.abs(xs.astype(np.float64))
                xs = xs[~((a > 2.0 ** -127) & (a < 1.5 * 2.0 ** -127))]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    want = xs.astype(t)
                except TypeError:  # no direct cast in ml_dtypes: through float32, which holds every value exactly
                    want = xs.astype(np.float32).astype(t)
            got = exmy.quantize(xs, df, dtype=t)
            assert got.dtype == np.dtype(t)
            wf = want.astype(np.float32)
            nan = np.isnan(wf)
            same_bits(np.isnan(got.astype(np.float32)), nan, xs.view(np.uint8), "NaN %s -> %s" % (src, dst))
            same_bits(got[~nan].view(np.uint8), want[~nan].view(np.uint8), xs[~nan].view(np.uint8),
                      "quantize %s -> %s" % (src, dst))
            d = exmy.decode(xs, df)
            same_bits(np.isnan(d), nan, xs.view(np.uint8), "decode NaN %s -> %s" % (src, dst))
            same_bits(d[~nan], wf[~nan], xs[~nan].view(np.uint8), "decode %s -> %s" % (src, dst))
            checked += 1
    assert checked == len(NARROW) ** 2


def test_decode_bug_e4m3_array_as_e5m2():
    """The reported case: 1.0 and 448 in e4m3fn decoded as e5m2 stay 1.0 and
    448 (they were read as e5m2 codes: 0.5 and NaN)."""
    _need()
    x = np.array([1.0, 448.0, -0.1015625, 240.0], np.float32).astype(ml_dtypes.float8_e4m3fn)
    d = exmy.decode(x, "e5m2")
    same_bits(d, x.astype(ml_dtypes.float8_e5m2).astype(np.float32), x.view(np.uint8), "decode e4m3fn as e5m2")
    assert d[0] == 1.0 and d[1] == 448.0, d
    # an array of the format's own type decodes as its codes
    same_bits(exmy.decode(x, "e4m3fn"), x.astype(np.float32), x.view(np.uint8), "own type")
    same_bits(exmy.decode(x, "e4m3fn", np.float64), x.astype(np.float64), x.view(np.uint8), "own type, float64")
    # cast and quantize's flags see the requantization
    q, fl = exmy.quantize(np.array([448.0], np.float32).astype(ml_dtypes.float8_e4m3fn), "e2m1fn", flags=True)
    assert q[0] == 0x7 and fl & exmy.Flags.OVERFLOW, (q, fl)
    q, fl = exmy.quantize(np.array([448.0], np.float32).astype(ml_dtypes.float8_e4m3fn), "e2m1fn", saturate=True,
                          flags=True)
    assert q[0] == 0x7 and fl & exmy.Flags.INEXACT, (q, fl)


def test_formats_from_dtypes_and_names():
    _need()
    for name, fmt in NARROW + [("bfloat16", "bf16"), ("float16", "f16"), ("float32", "f32")]:
        f = exmy.Format(fmt)
        t = getattr(ml_dtypes, name, None) or getattr(np, name)
        for spec in (name, t, np.dtype(t)):
            g = exmy.Format(spec)
            assert g == f and g.name == f.name, (spec, g, f)
        # fmt= of every function takes them too
        x = np.linspace(-2, 2, 17, dtype=np.float32)
        same_bits(exmy.cast(x, t), exmy.cast(x, fmt), x, "cast with fmt=%s" % name)
    assert exmy.Format("float8_e4m3fn").ml_dtype == ml_dtypes.float8_e4m3fn
    for bad in (np.int8, np.dtype(np.uint8), 3, None):
        try:
            exmy.Format(bad)
            raise AssertionError("Format(%r) accepted" % (bad,))
        except TypeError:
            pass


def test_dtype_keyword_checks_the_format():
    _need()
    x = np.array([1.0, 3.0, 500.0], np.float32)
    q = exmy.quantize(x, "e4m3fn", dtype=ml_dtypes.float8_e4m3fn, saturate=True)
    assert q.dtype == ml_dtypes.float8_e4m3fn
    same_bits(q.view(np.uint8), exmy.quantize(x, "e4m3fn", saturate=True), x, "codes")
    for fmt, t in (("e5m2", ml_dtypes.float8_e4m3fn), ("e4m3fn", ml_dtypes.float8_e4m3fnuz),
                   ("e4m3fn", ml_dtypes.bfloat16), ("e4m3fn", np.float16), ("bf16", np.float16)):
        try:
            exmy.quantize(x, fmt, dtype=t)
            raise AssertionError("%s codes given dtype %s" % (fmt, np.dtype(t)))
        except TypeError as e:
            assert fmt in str(e), e
    # a wider type of the same format is its codes' type too
    same_bits(exmy.quantize(x, "bf16", dtype=ml_dtypes.bfloat16), x.astype(ml_dtypes.bfloat16), x, "bf16")


def test_any_layout_equals_its_c_order_copy():
    r = rng(41)
    X = (r.standard_normal((24, 40)) * 50).astype(np.float32)
    views = {"strided": X[:, ::3], "fortran": np.asfortranarray(X), "transposed": X.T, "reversed": X[::-1, ::-2],
             "float64 fortran": np.asfortranarray(X.astype(np.float64))}
    if ml_dtypes is not None:
        views["bf16 strided"] = X.astype(ml_dtypes.bfloat16)[::2]
        views["e4m3fn transposed"] = X.astype(ml_dtypes.float8_e4m3fn).T
    for what, v in views.items():
        c = np.ascontiguousarray(v)
        assert not v.flags.c_contiguous, what
        same_bits(exmy.quantize(v, "e4m3fn", round="sr", seed=5), exmy.quantize(c, "e4m3fn", round="sr", seed=5),
                  None, "quantize " + what)
        same_bits(exmy.cast(v, "e5m2"), exmy.cast(c, "e5m2"), None, "cast " + what)
        codes = exmy.quantize(c, "e4m3fn")
        same_bits(exmy.decode(np.asfortranarray(codes)[:, ::2], "e4m3fn"),
                  exmy.decode(np.ascontiguousarray(codes[:, ::2]), "e4m3fn"), None, "decode " + what)
        if v.ndim == 2:
            for recipe in ("current", "block:1x8"):
                same_bits(exmy.scale(v, recipe).codes, exmy.scale(c, recipe).codes, None, "scale %s %s" %
                          (recipe, what))
            assert exmy.stats(v)["mse"] == exmy.stats(c)["mse"], what


def test_scale_takes_narrow_float_tensors():
    """bfloat16, float16 and float8 tensors in exmy.scale, stats and gemm:
    the float32 tensor of the same values, exactly."""
    r = rng(42)
    X = (r.standard_normal((16, 64)) * 4).astype(np.float32)
    types = [np.float16] + ([] if ml_dtypes is None else [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                                          ml_dtypes.float8_e5m2])
    for t in types:
        xt = X.astype(t)
        x32 = xt.astype(np.float32)
        for recipe in ("current", "mx", "block:1x32"):
            a, b = exmy.scale(xt, recipe, "e4m3fn"), exmy.scale(x32, recipe, "e4m3fn")
            same_bits(a.codes, b.codes, None, "scale %s %s" % (np.dtype(t), recipe))
            same_bits(a.scale_inv, b.scale_inv, None, "scale_inv %s %s" % (np.dtype(t), recipe))
        same_bits(exmy.gemm(xt, xt.T), exmy.gemm(x32, np.ascontiguousarray(x32.T)), None, "gemm %s" % np.dtype(t))
