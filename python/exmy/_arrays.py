"""_arrays.py: formats, rounding, quantize / decode / cast on numpy arrays."""
from __future__ import annotations

import ctypes
import enum
from types import ModuleType
from typing import TYPE_CHECKING, Any, Dict, Literal, Optional, Tuple, Type, Union, overload

import numpy as np

from . import _lib
from ._lib import lib

if TYPE_CHECKING:
    import torch
    from numpy.typing import DTypeLike

    # What the type hints of the package say (docs/python.md, "Type hints"):
    # a format is named by text, an exmy.Format or a dtype object (numpy's,
    # ml_dtypes' types, torch.float8_e4m3fn, ...)
    FormatLike = Union["Format", str, "np.dtype[Any]", Type[Any], torch.dtype]
    # numpy arrays, and numpy scalars (0-d): lists and Python floats are refused
    ArrayInput = Union[np.ndarray, np.generic]
    IntLike = Union[int, np.integer]
    # saturate=: True ("finite"), False or None ("none"), "finite", "propagate", "none"
    Saturate = Union[bool, str, None]

ml_dtypes: Optional[ModuleType]
try:
    import ml_dtypes
except ImportError:  # ml_dtypes is optional: bfloat16 inputs and float8 code views need it
    ml_dtypes = None

# exmy_dtype values of the float inputs
_DT_F32, _DT_F64, _DT_BF16, _DT_F16 = 0, 1, 2, 3
_CODE_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_SAT = {"none": 0, "finite": 1, "propagate": 2}
# exmy_quantize reads these dtypes directly (numpy's name -> exmy_dtype)
_NATIVE = {"float32": _DT_F32, "float64": _DT_F64, "float16": _DT_F16, "bfloat16": _DT_BF16}
# The float types ml_dtypes, numpy and PyTorch name (without "torch."): the
# exmy format of their values.  Format() takes these names and the dtypes.
DTYPE_FORMATS = {
    "float8_e4m3fn": "e4m3fn", "float8_e4m3": "e4m3", "float8_e4m3fnuz": "e4m3fnuz",
    "float8_e4m3b11fnuz": "e4m3b11fnuz", "float8_e5m2": "e5m2", "float8_e5m2fnuz": "e5m2fnuz",
    "float8_e3m4": "e3m4", "float8_e8m0fnu": "e8m0fnu", "float6_e2m3fn": "e2m3fn", "float6_e3m2fn": "e3m2fn",
    "float4_e2m1fn": "e2m1fn", "bfloat16": "bf16", "float16": "f16", "float32": "f32", "float64": "f64",
}


class Flags(enum.IntFlag):
    """The IEEE-style exception flags (EXMY_FLAG_*), OR-ed over all elements."""
    NONE = 0
    INEXACT = 1
    UNDERFLOW = 2
    OVERFLOW = 4
    INVALID = 8


def dtype_name(obj: object) -> Optional[str]:
    """The name of a dtype object (numpy dtype or scalar type, ml_dtypes type,
    torch.dtype) without "torch.", else None."""
    if isinstance(obj, np.dtype):
        return obj.name
    if isinstance(obj, type) and issubclass(obj, np.generic):
        return np.dtype(obj).name
    if type(obj).__name__ == "dtype" and type(obj).__module__ == "torch":
        return str(obj).partition(".")[2]
    return None


class Format:
    """An ExMy format: a name (e4m3fn, e5m2, bf16, binary8p4se, ...), a long
    form ("e4m3,bias=11,inf=none,nan=ones"), an ml_dtypes/PyTorch name
    ("float8_e4m3fn") or a dtype object (ml_dtypes.float8_e5m2,
    np.dtype(ml_dtypes.float4_e2m1fn), torch.float8_e4m3fn, np.float16).  Bad
    text raises ValueError with the library's message, a dtype exmy has no
    format for TypeError."""

    _f: _lib.Format

    def __init__(self, spec: FormatLike) -> None:
        if isinstance(spec, Format):
            self._f = spec._f
            return
        if not isinstance(spec, str):
            name = dtype_name(spec)
            if name is None:
                raise TypeError("exmy: format must be a str, an exmy.Format or a dtype, not %s" %
                                type(spec).__name__)
            if name not in DTYPE_FORMATS:
                raise TypeError("exmy: dtype %s has no exmy format (float types: %s)" %
                                (name, ", ".join(DTYPE_FORMATS)))
            spec = DTYPE_FORMATS[name]
        f = _lib.Format()
        err = _lib.errbuf()
        text = DTYPE_FORMATS.get(spec, spec)
        _lib.check(lib.exmy_format_parse(_lib.text(text, "format"), ctypes.byref(f), err, _lib.ERRLEN), err)
        self._f = f

    # --- what the format is
    @property
    def name(self) -> str:
        return self._f.name.decode()

    @property
    def ebits(self) -> int:
        return self._f.ebits

    @property
    def mbits(self) -> int:
        return self._f.mbits

    @property
    def bias(self) -> int:
        return self._f.bias

    @property
    def bits(self) -> int:
        return self._f.bits

    @property
    def signed(self) -> bool:
        return bool(self._f.is_signed)

    @property
    def has_zero(self) -> bool:
        return bool(self._f.has_zero)

    @property
    def emin(self) -> int:
        return self._f.emin

    @property
    def emax(self) -> int:
        return self._f.emax

    @property
    def longform(self) -> str:
        buf = ctypes.create_string_buffer(256)
        lib.exmy_format_to_string(ctypes.byref(self._f), buf, 256)
        return buf.value.decode()

    @property
    def code_bytes(self) -> int:
        return lib.exmy_code_bytes(ctypes.byref(self._f))

    @property
    def code_dtype(self) -> np.dtype:
        """numpy's unsigned type of the codes: the smallest that holds them."""
        return np.dtype(_CODE_DTYPES[self.code_bytes])

    def _info(self) -> _lib.Info:
        i = _lib.Info()
        lib.exmy_format_info(ctypes.byref(self._f), ctypes.byref(i))
        return i

    # --- `exmy info`'s properties
    @property
    def max(self) -> float:
        return self._info().max_finite

    @property
    def min_normal(self) -> float:
        return self._info().min_normal

    @property
    def min_subnormal(self) -> float:
        return self._info().min_subnormal

    @property
    def epsilon(self) -> float:
        return self._info().epsilon

    @property
    def finite_count(self) -> int:
        return self._info().finite_count

    @property
    def nan_count(self) -> int:
        return self._info().n_nan

    @property
    def inf_count(self) -> int:
        return self._info().n_inf

    @property
    def info(self) -> Dict[str, Any]:
        """Every property `exmy info` prints, as a dict."""
        i = self._info()
        return {"name": self.name, "longform": self.longform, "bits": self.bits, "ebits": self.ebits,
                "mbits": self.mbits, "bias": self.bias, "signed": self.signed, "emin": self.emin,
                "emax": self.emax, "max": i.max_finite, "min_normal": i.min_normal,
                "min_subnormal": i.min_subnormal, "epsilon": i.epsilon, "finite_count": i.finite_count,
                "zero_codes": list(i.zero_codes[:i.n_zero]), "inf_codes": list(i.inf_codes[:i.n_inf]),
                "nan_count": i.n_nan,
                "nan_ranges": [(i.nan_first[k], i.nan_last[k]) for k in range(i.n_nan_ranges)]}

    def decode_code(self, code: IntLike) -> float:
        """The exact value of one code (a Python float)."""
        return lib.exmy_code_to_f64(ctypes.byref(self._f), int(code))

    @property
    def ml_dtype(self) -> Optional[np.dtype]:
        """ml_dtypes' type of this format's codes (float8_e4m3fn, ...), or None."""
        if ml_dtypes is None:
            return None
        for prefix in ("float8_", "float6_", "float4_"):
            t = getattr(ml_dtypes, prefix + self.name, None)
            if t is not None and np.dtype(t).itemsize == self.code_bytes:
                return np.dtype(t)
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Format) and self.longform == other.longform

    def __hash__(self) -> int:
        return hash(self.longform)

    def __repr__(self) -> str:
        return "exmy.Format(%r)" % self.name


def as_format(fmt: FormatLike) -> Format:
    return fmt if isinstance(fmt, Format) else Format(fmt)


def rounding(round: str = "rne", saturate: Saturate = False, ftz: bool = False, daz: bool = False, seed: IntLike = 0,
             stream: IntLike = 0, sr_bits: int = 0) -> _lib.Rounding:
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
    if not isinstance(saturate, str) or saturate not in _SAT:
        raise ValueError("exmy: saturate=%r: accepted True, False, 'finite', 'propagate', 'none'" % (saturate,))
    r.sat = _SAT[saturate]
    r.ftz, r.daz = _flag01(ftz, "ftz"), _flag01(daz, "daz")
    r.seed, r.stream = _u64(seed, "seed"), _u64(stream, "stream")
    if not isinstance(sr_bits, (int, np.integer)) or isinstance(sr_bits, bool) or not 0 <= sr_bits <= 64:
        raise ValueError("exmy: sr_bits=%r: an integer 1..64 (0: 64)" % (sr_bits,))
    r.sr_bits = int(sr_bits) or 64  # Python keeps "0: 64"; the C library (1.4) wants 1..64 with sr
    return r


def _flag01(v: object, what: str) -> int:
    if not isinstance(v, (bool, int, np.integer)) or v not in (0, 1):
        raise TypeError("exmy: %s=%r must be True or False" % (what, v))
    return int(v)


def _u64(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError("exmy: %s=%r must be an integer" % (what, v))
    if not 0 <= int(v) < 1 << 64:
        raise ValueError("exmy: %s=%r out of range 0..2^64-1" % (what, v))
    return int(v)


def value_format(dt: np.dtype) -> Optional[Format]:
    """The exmy format of the values a float dtype holds (float32, bfloat16,
    ml_dtypes' float8/6/4 types), else None."""
    if dt.kind not in "fV":
        return None
    name = DTYPE_FORMATS.get(dt.name)
    return None if name is None else Format(name)


def source(x: np.ndarray, daz: bool = False) -> Tuple[np.ndarray, int]:
    """(C-contiguous array, exmy_dtype) that exmy_quantize reads for the
    values of x: float32/float64/float16/bfloat16 as they are; a narrower
    float type (ml_dtypes float8/6/4) is a value in its own format, decoded
    exactly to float64 (daz: its subnormals as zeros) so the one rounding
    is the target format's.  TypeError for anything else."""
    st = _NATIVE.get(x.dtype.name) if x.dtype.kind in "fV" else None
    if st == _DT_BF16 and ml_dtypes is None:
        st = None
    if st is not None:
        return contiguous(x), st
    f = value_format(x.dtype)
    if f is None:
        raise TypeError("exmy: dtype %s is not a float input (accepted: float32, float64, float16, bfloat16 and "
                        "ml_dtypes' float8/float6/float4 types)" % x.dtype)
    return values(x, f, np.float64, daz), _DT_F64


def values(x: np.ndarray, f: Format, dtype: DTypeLike = np.float64, daz: bool = False) -> np.ndarray:
    """The exact values of an array of f's codes (or f-typed floats), as dtype (float32 or float64)."""
    codes = contiguous(x).view(f.code_dtype)
    out = np.empty(codes.shape, dtype)
    (lib.exmy_codes_to_f64 if out.dtype == np.float64 else lib.exmy_codes_to_f32)(ctypes.byref(f._f), ptr(codes),
                                                                            codes.size, ptr(out))
    if daz:  # denormals of the source format are zeros
        out[np.abs(out) < f.min_normal] *= 0
    return out


def as_array(x: object) -> np.ndarray:
    """numpy arrays as they are, numpy scalars as 0-d arrays; anything else is a TypeError."""
    if isinstance(x, np.generic):
        return np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError("exmy: expected a numpy array, not %s" % type(x).__name__)
    return x


def contiguous(x: np.ndarray) -> np.ndarray:
    """x in C order: a strided view or a Fortran-order array is copied."""
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def ptr(a: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(a.ctypes.data)


@overload
def quantize(x: ArrayInput, fmt: FormatLike, round: str = ..., saturate: Saturate = ..., ftz: bool = ...,
             daz: bool = ..., seed: IntLike = ..., stream: IntLike = ..., sr_bits: int = ..., index0: IntLike = ...,
             flags: Literal[False] = ..., dtype: Optional[DTypeLike] = ..., out: Optional[np.ndarray] = ...
             ) -> np.ndarray: ...
@overload
def quantize(x: ArrayInput, fmt: FormatLike, round: str = ..., saturate: Saturate = ..., ftz: bool = ...,
             daz: bool = ..., seed: IntLike = ..., stream: IntLike = ..., sr_bits: int = ..., index0: IntLike = ...,
             *, flags: Literal[True], dtype: Optional[DTypeLike] = ..., out: Optional[np.ndarray] = ...
             ) -> Tuple[np.ndarray, Flags]: ...
@overload
def quantize(x: ArrayInput, fmt: FormatLike, round: str = ..., saturate: Saturate = ..., ftz: bool = ...,
             daz: bool = ..., seed: IntLike = ..., stream: IntLike = ..., sr_bits: int = ..., index0: IntLike = ...,
             flags: bool = ..., dtype: Optional[DTypeLike] = ..., out: Optional[np.ndarray] = ...
             ) -> Union[np.ndarray, Tuple[np.ndarray, Flags]]: ...


def quantize(x: ArrayInput, fmt: FormatLike, round: str = "rne", saturate: Saturate = False, ftz: bool = False,
             daz: bool = False, seed: IntLike = 0, stream: IntLike = 0, sr_bits: int = 0, index0: IntLike = 0,
             flags: bool = False, dtype: Optional[DTypeLike] = None, out: Optional[np.ndarray] = None
             ) -> Union[np.ndarray, Tuple[np.ndarray, Flags]]:
    """Codes of fmt for every element of x (float32, float64, float16,
    ml_dtypes.bfloat16, or ml_dtypes' float8/float6/float4 types, whose
    elements are values in their own format: e4m3fn -> e5m2 requantizes; any
    shape and layout, copied to C order when needed), as exmy_quantize:
    element i (C order) uses counter index0 + i for stochastic rounding.
    Codes come as the smallest unsigned dtype holding them; dtype="ml_dtypes"
    (or ml_dtypes' type of fmt) views them as ml_dtypes' type of the format.
    flags=True returns (codes, Flags).  out: a C-contiguous array of x's shape
    and the codes' width to write into (no allocation), returned."""
    f = as_format(fmt)
    x = as_array(x)
    r = rounding(round, saturate, ftz, daz, seed, stream, sr_bits)
    x, st = source(x, daz)
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


def _code_view(f: Format, dtype: Any) -> Optional[np.dtype]:
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype == "ml_dtypes":
        t = f.ml_dtype
        if t is None:
            raise TypeError("exmy: ml_dtypes has no type for format %s%s" %
                            (f.name, "" if ml_dtypes is not None else " (ml_dtypes is not installed)"))
        return t
    if dtype_name(dtype) is None:
        raise TypeError("exmy: dtype=%r: a numpy dtype (an unsigned type of the codes' width, or ml_dtypes' type "
                        "of the format), or 'ml_dtypes'" % (dtype,))
    t = np.dtype(dtype)
    vf = value_format(t)
    if vf is not None and vf != f or vf is None and t.kind != "u" or t.itemsize != f.code_bytes:
        raise TypeError("exmy: dtype %s cannot hold %s codes (%d bytes)" % (t, f.name, f.code_bytes))
    return t


def _codes_in(codes: object, f: Format) -> np.ndarray:
    if not isinstance(codes, np.ndarray):
        raise TypeError("exmy: expected a numpy array of codes, not %s" % type(codes).__name__)
    if codes.dtype.itemsize != f.code_bytes or codes.dtype.kind not in "uVf":
        raise TypeError("exmy: codes of dtype %s are not %s codes (%s, or ml_dtypes' type of it)" %
                        (codes.dtype, f.name, f.code_dtype))
    if codes.dtype.kind == "V" and value_format(codes.dtype) is None:
        raise TypeError("exmy: codes of dtype %s: expected an unsigned integer type" % codes.dtype)
    return contiguous(codes)


def decode(codes: ArrayInput, fmt: FormatLike, dtype: DTypeLike = np.float32) -> np.ndarray:
    """Values of codes (unsigned ints of the format's width, any layout):
    float64 exactly, or float32 rounded to nearest even (exact whenever the
    format fits binary32).  A float array (float32, ml_dtypes.float8_e4m3fn,
    ...) holds values, not codes: those of fmt's own type are its codes;
    any other's are requantized to fmt (round to nearest even, no
    saturation: exmy.cast)."""
    f = as_format(fmt)
    codes = as_array(codes)
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise TypeError("exmy: decode to %s: accepted float32, float64" % dt)
    vf = value_format(codes.dtype)
    if vf is not None and vf != f:
        return cast(codes, f, dtype=dt)
    codes = _codes_in(codes, f)
    return values(codes, f, dt)


@overload
def cast(x: ArrayInput, fmt: FormatLike, round: str = ..., saturate: Saturate = ..., ftz: bool = ..., daz: bool = ...,
         seed: IntLike = ..., stream: IntLike = ..., sr_bits: int = ..., index0: IntLike = ...,
         flags: Literal[False] = ..., dtype: Optional[DTypeLike] = ...) -> np.ndarray: ...
@overload
def cast(x: ArrayInput, fmt: FormatLike, round: str = ..., saturate: Saturate = ..., ftz: bool = ..., daz: bool = ...,
         seed: IntLike = ..., stream: IntLike = ..., sr_bits: int = ..., index0: IntLike = ...,
         *, flags: Literal[True], dtype: Optional[DTypeLike] = ...) -> Tuple[np.ndarray, Flags]: ...
@overload
def cast(x: ArrayInput, fmt: FormatLike, round: str = ..., saturate: Saturate = ..., ftz: bool = ..., daz: bool = ...,
         seed: IntLike = ..., stream: IntLike = ..., sr_bits: int = ..., index0: IntLike = ...,
         flags: bool = ..., dtype: Optional[DTypeLike] = ...) -> Union[np.ndarray, Tuple[np.ndarray, Flags]]: ...


def cast(x: ArrayInput, fmt: FormatLike, round: str = "rne", saturate: Saturate = False, ftz: bool = False,
         daz: bool = False, seed: IntLike = 0, stream: IntLike = 0, sr_bits: int = 0, index0: IntLike = 0,
         flags: bool = False, dtype: Optional[DTypeLike] = None) -> Union[np.ndarray, Tuple[np.ndarray, Flags]]:
    """Fake-quant: decode(quantize(x, fmt, ...)).  The result is float64 for
    float64 input, else float32 (dtype= picks one of the two)."""
    x = as_array(x)
    if dtype is not None and np.dtype(dtype) not in (np.float32, np.float64):
        raise TypeError("exmy: cast to %s: accepted float32, float64 (quantize's dtype= gives a format's own type)"
                        % np.dtype(dtype))
    if dtype is None:
        dtype = np.float64 if x.dtype == np.float64 else np.float32
    if flags:
        codes, fl = quantize(x, fmt, round, saturate, ftz, daz, seed, stream, sr_bits, index0, flags=True)
        return decode(codes, fmt, dtype), fl
    return decode(quantize(x, fmt, round, saturate, ftz, daz, seed, stream, sr_bits, index0), fmt, dtype)
