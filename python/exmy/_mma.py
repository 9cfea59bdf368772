"""_mma.py: one matrix-unit instruction, D = A*B + C for one tile, bit for
bit as its datapath (exmy_mma; docs/mma.md), on numpy arrays of values."""
from __future__ import annotations

import ctypes
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np

from . import _lib
from ._lib import lib
from ._arrays import Format, source

if TYPE_CHECKING:
    from ._arrays import ArrayInput

_DBL = ctypes.POINTER(ctypes.c_double)
# D's codes viewed as numpy's own float type of d_fmt (the view is the value, no rounding)
_VIEWS = {(32, 8, 23): np.float32, (16, 5, 10): np.float16}


def _instr(instr: str) -> _lib.MmaInstr:
    i = _lib.MmaInstr()
    err = _lib.errbuf()
    _lib.check(lib.exmy_mma_parse(_lib.text(instr, "instruction"), ctypes.byref(i), err, _lib.ERRLEN), err)
    return i


def _fmt(f: _lib.Format) -> Format:
    out = Format.__new__(Format)
    out._f = _lib.Format()
    ctypes.memmove(ctypes.byref(out._f), ctypes.byref(f), ctypes.sizeof(f))
    return out


def mma_names() -> List[str]:
    """Every instruction name exmy_mma knows (`exmy mma --list`'s first column)."""
    names = []
    buf = ctypes.create_string_buffer(160)
    for i in range(lib.exmy_mma_count()):
        lib.exmy_mma_get(i, buf, 160)
        names.append(buf.value.decode())
    return names


def mma_info(instr: str) -> Dict[str, Any]:
    """What an instruction is (exmy_mma_instr) as a dict: canonical name,
    datapath row, the formats of A, B, C, D (and of the block scales), k,
    block, zero rule."""
    i = _instr(instr)
    return {"name": i.name.decode(), "datapath": i.datapath.decode(), "a_format": _fmt(i.a_fmt),
            "b_format": _fmt(i.b_fmt), "c_format": _fmt(i.c_fmt), "d_format": _fmt(i.d_fmt),
            "scale_format": _fmt(i.s_fmt) if i.has_scale else None, "k": i.k,
            "block": i.block if i.has_scale else None, "zero": "v1" if i.zero else "v2"}


def _values(x: object, what: str, shape_1d: Callable[[int], Tuple[int, int]]) -> np.ndarray:
    """x as a C-contiguous float64 matrix of its exact values (float32, float64,
    float16, ml_dtypes.bfloat16 and float8/6/4 types: every one widens to
    float64 exactly)."""
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if not isinstance(x, np.ndarray):
        raise TypeError("exmy: mma: %s: expected a numpy array, not %s" % (what, type(x).__name__))
    try:
        x = source(x)[0]
    except TypeError:
        raise TypeError("exmy: mma: %s: dtype %s is not a float array (accepted: float32, float64, float16, "
                        "bfloat16, ml_dtypes' float8/6/4 types)" % (what, x.dtype)) from None
    if x.ndim == 1:
        x = x.reshape(shape_1d(x.size))
    if x.ndim != 2:
        raise ValueError("exmy: mma: %s must be 2-D (or 1-D), not %d-D" % (what, x.ndim))
    return np.ascontiguousarray(x, dtype=np.float64)


def _row(n: int) -> Tuple[int, int]:
    return (1, n)


def _col(n: int) -> Tuple[int, int]:
    return (n, 1)


def mma(instr: str, a: ArrayInput, b: ArrayInput, c: Union[ArrayInput, float, None] = None,
        sa: Optional[ArrayInput] = None, sb: Optional[ArrayInput] = None, codes: bool = False) -> np.ndarray:
    """D = A*B + C for one tile of the instruction instr (a name of
    exmy.mma_names(), optionally with ",zero=v1"), bit for bit as `exmy mma`.
    a: m x k values of A's format (1-D: 1 x k), b: k x n (1-D: k x 1), c:
    m x n values of C's format or a number (default 0); sa m x (k/block) and
    sb (k/block) x n the block scales' values for a block-scaled instruction
    (1-D: the row of sa, the column of sb).  Arrays: float32, float64, float16
    or ml_dtypes.bfloat16, any layout (copied to float64).  A value its format
    cannot hold is a ValueError with the library's message.  D (m x n):
    float32 for an f32 D, float16 for an f16 D (the codes viewed as numpy's
    type: exact); codes=True gives the codes themselves (uint32 / uint16, as
    `exmy mma --out` writes them)."""
    i = _instr(instr)
    name, k = i.name.decode(), i.k
    A = _values(a, "A", _row)
    B = _values(b, "B", _col)
    if A.shape[1] != k:
        raise ValueError("exmy: mma: A has %d columns, %s has k = %d" % (A.shape[1], name, k))
    if B.shape[0] != k:
        raise ValueError("exmy: mma: B has %d rows, %s has k = %d" % (B.shape[0], name, k))
    m, n = A.shape[0], B.shape[1]
    if c is None:
        C = np.zeros((m, n), np.float64)
    elif isinstance(c, (int, float)) and not isinstance(c, bool):
        C = np.full((m, n), float(c), np.float64)
    elif isinstance(c, (np.generic, np.ndarray)) and np.ndim(c) == 0:  # a numpy scalar fills C too
        C = np.repeat(_values(np.asarray(c).reshape(1, 1), "C", _row), m * n).reshape(m, n)
    else:
        C = _values(c, "C", lambda s: (m, n) if s == m * n and (m == 1 or n == 1) else (1, s))
        if C.shape != (m, n):
            raise ValueError("exmy: mma: C is %d x %d, expected %d x %d" % (C.shape + (m, n)))
    SA = SB = None
    if i.has_scale and sa is not None and sb is not None:
        nb = k // i.block
        SA = _values(sa, "sa", _row)
        SB = _values(sb, "sb", _col)
        if SA.shape != (m, nb):
            raise ValueError("exmy: mma: sa is %d x %d, expected %d x %d" % (SA.shape + (m, nb)))
        if SB.shape != (nb, n):
            raise ValueError("exmy: mma: sb is %d x %d, expected %d x %d" % (SB.shape + (nb, n)))
    elif not i.has_scale and (sa is not None or sb is not None):
        raise ValueError("exmy: mma: %s takes no block scales" % name)
    # a scaled instruction without both scales: NULLs, and the library says what is missing
    fd = _fmt(i.d_fmt)
    d = np.zeros((m, n), dtype=fd.code_dtype)
    err = _lib.errbuf()

    def p(x: Optional[np.ndarray]) -> Any:
        return None if x is None else x.ctypes.data_as(_DBL)
    _lib.check(lib.exmy_mma(ctypes.byref(i), m, n, p(A), p(B), p(C), p(SA), p(SB), d.ctypes.data, err,
                            _lib.ERRLEN), err)
    if codes:
        return d
    view = _VIEWS.get((fd.bits, fd.ebits, fd.mbits))
    return d.view(view) if view is not None else d
