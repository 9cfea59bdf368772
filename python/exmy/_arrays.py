"""_arrays.py: formats, rounding, quantize / decode / cast on numpy arrays."""
import ctypes
import enum

import numpy as np

from . import _lib
from ._lib import lib

try:
    import ml_dtypes
except ImportError:  # ml_dtypes is optional: bfloat16 inputs and float8 code views need it
    ml_dtypes = None

# exmy_dtype values of the float inputs
_DT_F32, _DT_F64, _DT_BF16, _DT_F16 = 0, 1, 2, 3
_CODE_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SAT = {"none": 0, "finite": 1, "propagate": 2}


class Flags(enum.IntFlag):
    """The IEEE-style exception flags (EXMY_FLAG_*), OR-ed over all elements."""
    NONE = 0
    INEXACT = 1
    UNDERFLOW = 2
    OVERFLOW = 4
    INVALID = 8


class Format:
    """An ExMy format: a name (e4m3fn, e5m2, bf16, binary8p4se, ...) or a long
    form ("e4m3,bias=11,inf=none,nan=ones").  Bad text raises ValueError with
    the library's message."""

    def __init__(self, spec):
        if isinstance(spec, Format):
            self._f = spec._f
            return
        f = _lib.Format()
        err = _lib.errbuf()
        _lib.check(lib.exmy_format_parse(_lib.text(spec, "format"), ctypes.byref(f), err, _lib.ERRLEN), err)
        self._f = f

    # --- what the format is
    name = property(lambda self: self._f.name.decode())
    ebits = property(lambda self: self._f.ebits)
    mbits = property(lambda self: self._f.mbits)
    bias = property(lambda self: self._f.bias)
    bits = property(lambda self: self._f.bits)
    signed = property(lambda self: bool(self._f.is_signed))
    has_zero = property(lambda self: bool(self._f.has_zero))
    emin = property(lambda self: self._f.emin)
    emax = property(lambda self: self._f.emax)

    @property
    def longform(self):
        buf = ctypes.create_string_buffer(256)
        lib.exmy_format_to_string(ctypes.byref(self._f), buf, 256)
        return buf.value.decode()

    @property
    def code_bytes(self):
        return lib.exmy_code_bytes(ctypes.byref(self._f))

    @property
    def code_dtype(self):
        """numpy's unsigned type of the codes: the smallest that holds them."""
        return np.dtype(_CODE_DTYPES[self.code_bytes])

    def _info(self):
        i = _lib.Info()
        lib.exmy_format_info(ctypes.byref(self._f), ctypes.byref(i))
        return i

    # --- `exmy info`'s properties
    max = property(lambda self: self._info().max_finite)
    min_normal = property(lambda self: self._info().min_normal)
    min_subnormal = property(lambda self: self._info().min_subnormal)
    epsilon = property(lambda self: self._info().epsilon)
    finite_count = property(lambda self: self._info().finite_count)
    nan_count = property(lambda self: self._info().n_nan)
    inf_count = property(lambda self: self._info().n_inf)

    @property
    def info(self):
        """Every property `exmy info` prints, as a dict."""
        i = self._info()
        return {"name": self.name, "longform": self.longform, "bits": self.bits, "ebits": self.ebits,
                "mbits": self.mbits, "bias": self.bias, "signed": self.signed, "emin": self.emin,
                "emax": self.emax, "max": i.max_finite, "min_normal": i.min_normal,
                "min_subnormal": i.min_subnormal, "epsilon": i.epsilon, "finite_count": i.finite_count,
                "zero_codes": list(i.zero_codes[:i.n_zero]), "inf_codes": list(i.inf_codes[:i.n_inf]),
                "nan_count": i.n_nan,
                "nan_ranges": [(i.nan_first[k], i.nan_last[k]) for k in range(i.n_nan_ranges)]}

    def decode_code(self, code):
        """The exact value of one code (a Python float)."""
        return lib.exmy_decode(ctypes.byref(self._f), int(code))

    @property
    def ml_dtype(self):
        """ml_dtypes' type of this format's codes (float8_e4m3fn, ...), or None."""
        if ml_dtypes is None:
            return None
        for prefix in ("float8_", "float6_", "float4_"):
            t = getattr(ml_dtypes, prefix + self.name, None)
            if t is not None and np.dtype(t).itemsize == self.code_bytes:
                return np.dtype(t)
        return None

    def __eq__(self, other):
        return isinstance(other, Format) and self.longform == other.longform

    def __hash__(self):
        return hash(self.longform)

    def __repr__(self):
        return "exmy.Format(%r)" % self.name


def as_format(fmt):
    return fmt if isinstance(fmt, Format) else Format(fmt)


def rounding(round="rne", saturate=False, ftz=False, daz=False, seed=0, stream=0, sr_bits=0):
    """An exmy_rounding from keyword arguments (ValueError/TypeError on bad ones)."""
    r = _lib.Rounding()
    mode = ctypes.c_int(0)
    err = _lib.errbuf()
    _lib.check(lib.exmy_round_mode_parse(_lib.text(round, "round"), ctypes.byref(mode), err, _lib.ERRLEN), err)
    r.mode = mode.value
    if saturate is True:
        saturate = "finite"
    elif saturate is False or saturate is None:
        saturate = "none"
    if saturate not in _SAT:
        raise ValueError("exmy: saturate=%r: accepted True, False, 'finite', 'propagate', 'none'" % (saturate,))
    r.sat = _SAT[saturate]
    r.ftz, r.daz = _flag01(ftz, "ftz"), _flag01(daz, "daz")
    r.seed, r.stream = _u64(seed, "seed"), _u64(stream, "stream")
    if not isinstance(sr_bits, (int, np.integer)) or isinstance(sr_bits, bool) or not 0 <= sr_bits <= 64:
        raise ValueError("exmy: sr_bits=%r: an integer 1..64 (0: 64)" % (sr_bits,))
    r.sr_bits = int(sr_bits)
    return r


def _flag01(v, what):
    if not isinstance(v, (bool, int, np.integer)) or v not in (0, 1):
        raise TypeError("exmy: %s=%r must be True or False" % (what, v))
    return int(v)


def _u64(v, what):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError("exmy: %s=%r must be an integer" % (what, v))
    if not 0 <= int(v) < 1 << 64:
        raise ValueError("exmy: %s=%r out of range 0..2^64-1" % (what, v))
    return int(v)


def src_type(x):
    """The exmy_dtype of a float array (TypeError for anything else)."""
    dt = x.dtype
    if dt == np.float32:
        return _DT_F32
    if dt == np.float64:
        return _DT_F64
    if dt == np.float16:
        return _DT_F16
    if ml_dtypes is not None and dt == ml_dtypes.bfloat16:
        return _DT_BF16
    raise TypeError("exmy: dtype %s is not a float input (accepted: float32, float64, float16, bfloat16)" % dt)


def as_array(x):
    """numpy arrays as they are, numpy scalars as 0-d arrays; anything else is a TypeError."""
    if isinstance(x, np.generic):
        return np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError("exmy: expected a numpy array, not %s" % type(x).__name__)
    return x


def contiguous(x, what="input"):
    if not x.flags.c_contiguous:
        raise ValueError("exmy: the %s is not C-contiguous (np.ascontiguousarray(x) makes a copy that is)" % what)
    return x


def ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


def quantize(x, fmt, round="rne", saturate=False, ftz=False, daz=False, seed=0, stream=0, sr_bits=0,
             index0=0, flags=False, dtype=None, out=None):
    """Codes of fmt for every element of x (float32, float64, float16 or
    ml_dtypes.bfloat16, any shape, C-contiguous), as exmy_quantize: element i
    (C order) uses counter index0 + i for stochastic rounding.  Codes come as
    the smallest unsigned dtype holding them; dtype="ml_dtypes" (or an ml_dtypes
    type) views them as ml_dtypes' type of the format.  flags=True returns
    (codes, Flags).  out: a C-contiguous array of x's shape and the codes'
    width to write into (no allocation), returned."""
    f = as_format(fmt)
    x = as_array(x)
    st = src_type(x)
    contiguous(x)
    r = rounding(round, saturate, ftz, daz, seed, stream, sr_bits)
    out_view = _code_view(f, dtype)
    if out is None:
        codes = np.empty(x.shape, dtype=f.code_dtype)
    else:
        if not isinstance(out, np.ndarray) or out.shape != x.shape or out.dtype.itemsize != f.code_bytes \
                or out.dtype.kind not in "uVf" or out.dtype.kind == "f" and out.dtype != f.ml_dtype:
            raise TypeError("exmy: out must be a numpy array of shape %s holding %s codes (%s)" %
                            (x.shape, f.name, f.code_dtype))
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("exmy: out is not a writeable C-contiguous array")
        codes, out_view = out, None
    fl = ctypes.c_uint(0)
    err = _lib.errbuf()
    _lib.check(lib.exmy_quantize(ctypes.byref(f._f), ctypes.byref(r), st, ptr(x), x.size, _u64(index0, "index0"),
                                 ptr(codes), ctypes.byref(fl), err, _lib.ERRLEN), err)
    if out_view is not None:
        codes = codes.view(out_view)
    return (codes, Flags(fl.value)) if flags else codes


def _code_view(f, dtype):
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "ml_dtypes":
        t = f.ml_dtype
        if t is None:
            raise TypeError("exmy: ml_dtypes has no type for format %s%s" %
                            (f.name, "" if ml_dtypes is not None else " (ml_dtypes is not installed)"))
        return t
    t = np.dtype(dtype)
    if t.itemsize != f.code_bytes or t.kind not in "uV" and t != f.ml_dtype:
        raise TypeError("exmy: dtype %s cannot hold %s codes (%d bytes)" % (t, f.name, f.code_bytes))
    return t


def _codes_in(codes, f):
    if not isinstance(codes, np.ndarray):
        raise TypeError("exmy: expected a numpy array of codes, not %s" % type(codes).__name__)
    if codes.dtype.itemsize != f.code_bytes or codes.dtype.kind == "f" and codes.dtype != f.ml_dtype:
        raise TypeError("exmy: codes of dtype %s are not %s codes (%s, or ml_dtypes' type of it)" %
                        (codes.dtype, f.name, f.code_dtype))
    if codes.dtype.kind not in "uVf":
        raise TypeError("exmy: codes of dtype %s: expected an unsigned integer type" % codes.dtype)
    contiguous(codes, "codes array")
    return codes


def decode(codes, fmt, dtype=np.float32):
    """Values of codes (unsigned ints of the format's width, or ml_dtypes' type):
    float64 exactly, or float32 rounded to nearest even (exact whenever the
    format fits binary32)."""
    f = as_format(fmt)
    codes = _codes_in(codes, f)
    dt = np.dtype(dtype)
    out = np.empty(codes.shape, dtype=dt)
    if dt == np.float64:
        lib.exmy_decode_f64(ctypes.byref(f._f), ptr(codes), codes.size, ptr(out))
    elif dt == np.float32:
        lib.exmy_decode_f32(ctypes.byref(f._f), ptr(codes), codes.size, ptr(out))
    else:
        raise TypeError("exmy: decode to %s: accepted float32, float64" % dt)
    return out


def cast(x, fmt, round="rne", saturate=False, ftz=False, daz=False, seed=0, stream=0, sr_bits=0, index0=0,
         flags=False, dtype=None):
    """Fake-quant: decode(quantize(x, fmt, ...)).  The result is float64 for
    float64 input, else float32 (dtype= picks one of the two)."""
    x = as_array(x)
    q = quantize(x, fmt, round, saturate, ftz, daz, seed, stream, sr_bits, index0, flags)
    codes, fl = q if flags else (q, None)
    if dtype is None:
        dtype = np.float64 if x.dtype == np.float64 else np.float32
    out = decode(codes, fmt, dtype)
    return (out, fl) if flags else out
