"""Bad input raises the documented exception with the library's one-line
message, and never crashes the interpreter: ValueError for bad formats,
recipes, accumulation models, rounding names and shapes; TypeError for bad
dtypes, argument types and unknown keywords.  With hypothesis
installed, the text parsers are fuzzed too (each text either parses or
raises ValueError)."""
import numpy as np

import exmy
from harness import rng

try:
    import hypothesis
    from hypothesis import strategies as st
except ImportError:
    hypothesis = None


def raises(exc, fn, *a, match=None, **kw):
    try:
        fn(*a, **kw)
    except exc as e:
        msg = str(e)
        assert "\n" not in msg and msg, "message %r" % msg
        if match:
            assert match in msg, "%r not in %r" % (match, msg)
        return msg
    except Exception as e:  # pragma: no cover
        raise AssertionError("%s%r raised %s: %s, expected %s" % (fn.__name__, a, type(e).__name__, e, exc.__name__))
    raise AssertionError("%s%r raised nothing, expected %s" % (fn.__name__, a, exc.__name__))


X = np.linspace(-3, 3, 64, dtype=np.float32).reshape(8, 8)


def test_bad_text():
    raises(ValueError, exmy.Format, "e9m99", match="e9m99")
    raises(ValueError, exmy.Format, "e4m3,bias=zz", match="zz")
    raises(ValueError, exmy.Format, "")
    raises(ValueError, exmy.Format, "e4m3\0fn", match="NUL")
    raises(TypeError, exmy.Format, 3)
    raises(ValueError, exmy.quantize, X, "e4m3fn", round="nearest", match="nearest")
    raises(ValueError, exmy.quantize, X, "e4m3fn", saturate="sometimes")
    raises(ValueError, exmy.quantize, X, "e4m3fn", sr_bits=65)
    raises(ValueError, exmy.quantize, X, "e4m3fn", seed=-1)
    raises(TypeError, exmy.quantize, X, "e4m3fn", seed="7")
    raises(TypeError, exmy.quantize, X, "e4m3fn", ftz=2)
    raises(ValueError, exmy.scale, X, "block:1x0")
    raises(ValueError, exmy.scale, X, "sometimes", match="sometimes")
    raises(ValueError, exmy.gemm, X, X, accum="tc:volta", match="volta")
    raises(ValueError, exmy.gemm, X, X, out_format="e99m1")
    raises(ValueError, exmy.whatif, X, ["e4m3fn", "nope"])


def test_bad_arrays():
    raises(TypeError, exmy.quantize, X.astype(np.int32), "e4m3fn", match="int32")
    raises(TypeError, exmy.quantize, [1.0, 2.0], "e4m3fn", match="list")
    raises(TypeError, exmy.quantize, X, "e4m3fn", dtyp=np.uint8, match="dtyp")
    raises(TypeError, exmy.cast, X, "e4m3fn", sat=True, match="sat")
    raises(TypeError, exmy.Format, np.int8, match="int8")
    raises(TypeError, exmy.quantize, X, "e4m3fn", dtype=np.int8)
    raises(TypeError, exmy.cast, X, "e4m3fn", dtype=np.float16)
    raises(TypeError, exmy.decode, np.zeros(4, np.uint16), "e4m3fn", match="uint8")
    raises(TypeError, exmy.decode, np.zeros(4, np.uint8), "e4m3fn", dtype=np.float16)
    raises(TypeError, exmy.quantize, X, "e4m3,bias=11", dtype="ml_dtypes")
    raises(TypeError, exmy.quantize, X, "e4m3fn", dtype=np.uint16)
    raises(TypeError, exmy.scale, X.astype(np.int16), "current")
    raises(ValueError, exmy.gemm, X, X[:4], match="")  # k mismatch: the library's check
    raises(ValueError, exmy.gemm, X[None], X)
    raises(ValueError, exmy.gemm, X, X, c=np.zeros((3, 3), np.float32))
    raises(ValueError, exmy.gemm, X, X, scaling_a="mx", scaling_b="current")
    raises(ValueError, exmy.scale, X, "delayed", state=exmy.Recipe("delayed:len=2").state())


def test_garbage_codes_do_not_crash():
    # codes with bits above the format's width decode as NaN, never out of bounds
    codes = rng(1).integers(0, 256, 1000).astype(np.uint8)
    d = exmy.decode(codes, "e2m1fn")
    assert np.isnan(d[codes >= 16]).all()


def test_fuzz_parsers():
    if hypothesis is None:
        return
    alphabet = st.sampled_from(list("e0123456789m,=:x.;-+ abfnuzioprstcdklgwh"))
    texts = st.text(alphabet, max_size=40)

    @hypothesis.settings(max_examples=400, deadline=None, derandomize=True, database=None)
    @hypothesis.given(texts, texts, texts)
    def run(f, r, a):
        for fn, arg in ((exmy.Format, f), (exmy.Recipe, r)):
            try:
                fn(arg)
            except ValueError as e:
                assert str(e) and "\n" not in str(e)
        try:
            exmy.gemm(X, X, accum=a or "fp32", scaling=r or "current", fmt=f or "e4m3fn")
        except (ValueError, TypeError) as e:
            assert str(e) and "\n" not in str(e)
    run()
