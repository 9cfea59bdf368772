"""_xp.py: the training engine's GEMM context (exmy_xp.so, python/exmy_xp.c)
through ctypes: a linear layer's fprop, dgrad and wgrad exactly as `exmy
train` runs them.  exmy.torch builds on it."""
from __future__ import annotations

import ctypes
import os
import weakref
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _lib

if TYPE_CHECKING:
    # an operand of matmul_batch: (kind, trans, float32 C-contiguous array)
    Operand = Tuple[str, int, np.ndarray]
    PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

_c = ctypes
P = ctypes.POINTER
_fp = P(ctypes.c_float)


def _load() -> ctypes.CDLL:
    return _lib.find("exmy_xp.so", "EXMY_XP_LIB", "XPDIR")[0]


xlib = _load()
_sz = ctypes.c_size_t
_SIGS = {
    "exmy_xp_new": (ctypes.c_int, [ctypes.c_int, P(ctypes.c_char_p), ctypes.c_int, P(ctypes.c_char_p),
                                   P(ctypes.c_char_p), P(ctypes.c_void_p), ctypes.c_char_p, _sz]),
    "exmy_xp_free": (None, [ctypes.c_void_p]),
    "exmy_xp_begin_step": (None, [ctypes.c_void_p, ctypes.c_long, ctypes.c_int]),
    "exmy_xp_linear_forward": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                              ctypes.c_void_p, _sz, _sz, _sz, ctypes.c_char_p, _sz]),
    "exmy_xp_linear_backward": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, _sz, _sz, _sz,
                                               ctypes.c_char_p, _sz]),
    "exmy_xp_matmul_batch": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                            ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, _sz, _sz,
                                            _sz, _sz, ctypes.c_long, ctypes.c_void_p, ctypes.c_char_p, _sz]),
    "exmy_xp_end_step": (None, [ctypes.c_void_p]),
    "exmy_xp_stats_write": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_long, ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.c_char_p, _sz]),
    "exmy_xp_recipe_state": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, _fp, _fp, _fp,
                                            P(ctypes.c_long), _fp, ctypes.c_int, ctypes.c_char_p, _sz]),
    "exmy_xp_recipe_state_set": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_float,
                                                ctypes.c_float, ctypes.c_float, ctypes.c_long, _fp, ctypes.c_int,
                                                ctypes.c_char_p, _sz]),
    "exmy_xp_layer_prec": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, _sz]),
}
for _n, (_r, _a) in _SIGS.items():
    _f = getattr(xlib, _n)
    _f.restype, _f.argtypes = _r, _a

KINDS = ("input", "weight", "grad")
ROLES = ("fprop", "dgrad", "wgrad")


class Engine:
    """One xp_ctx over named linear layers with `exmy train`'s keys (prec,
    layer.NAME, seed, threads, ...) applied in order."""

    def __init__(self, names: Sequence[str], keys: Sequence[Tuple[str, str]]) -> None:
        bnames = [_lib.text(n, "layer name") for n in names]
        ks = [_lib.text(k, "key") for k, _ in keys]
        vs = [_lib.text(v, "value of " + k) for k, v in keys]
        arr = lambda xs: (ctypes.c_char_p * max(len(xs), 1))(*xs)
        h = ctypes.c_void_p()
        err = _lib.errbuf()
        _lib.check(xlib.exmy_xp_new(len(bnames), arr(bnames), len(ks), arr(ks), arr(vs), ctypes.byref(h), err,
                                    _lib.ERRLEN), err)
        self._h = h
        self.names = [n.decode() for n in bnames]
        # Freed when the Engine goes, or at exit before modules are torn down
        # (a __del__ run during teardown found xlib gone: "Exception ignored").
        weakref.finalize(self, xlib.exmy_xp_free, h)

    def begin_step(self, step: int, collect_stats: bool) -> None:
        xlib.exmy_xp_begin_step(self._h, int(step), int(bool(collect_stats)))

    def end_step(self) -> None:
        xlib.exmy_xp_end_step(self._h)

    def forward(self, lin: int, x: np.ndarray, w: np.ndarray, y: np.ndarray) -> None:
        """y (T x out) = x (T x in) w^T; float32 C-contiguous numpy arrays (or addresses)."""
        T, i = x.shape
        o = w.shape[0]
        err = _lib.errbuf()
        _lib.check(xlib.exmy_xp_linear_forward(self._h, lin, x.ctypes.data, w.ctypes.data, y.ctypes.data, T, i, o,
                                               err, _lib.ERRLEN), err, RuntimeError)

    def backward(self, lin: int, dy: np.ndarray, x: np.ndarray, w: np.ndarray, dw: np.ndarray,
                 dx: Optional[np.ndarray]) -> None:
        T, i = x.shape
        o = w.shape[0]
        err = _lib.errbuf()
        _lib.check(xlib.exmy_xp_linear_backward(self._h, lin, dy.ctypes.data, x.ctypes.data, w.ctypes.data,
                                                dw.ctypes.data, None if dx is None else dx.ctypes.data, T, i, o,
                                                err, _lib.ERRLEN), err, RuntimeError)

    def matmul_batch(self, role: str, a: Operand, b: Operand, d: np.ndarray, sub0: int) -> None:
        """d[i] = op(a[i]) op(b[i]) for every problem i with the `attn`
        precision (the engine's attention GEMMs).  a and b: (kind, trans,
        float32 C-contiguous array of count x rows x cols as stored), d:
        float32 count x m x n; role in ROLES; sub0 keys stochastic rounding."""
        (ka, ta, an), (kb, tb, bn) = a, b
        count, m, n = d.shape
        k = an.shape[1] if ta else an.shape[2]
        err = _lib.errbuf()
        _lib.check(xlib.exmy_xp_matmul_batch(self._h, ROLES.index(role), KINDS.index(ka), int(ta), an.ctypes.data,
                                             KINDS.index(kb), int(tb), bn.ctypes.data, count, m, n, k, int(sub0),
                                             d.ctypes.data, err, _lib.ERRLEN), err, RuntimeError)

    def stats_write(self, step: int, csv_path: Optional[PathLike], jsonl_path: Optional[PathLike]) -> None:
        err = _lib.errbuf()
        enc = lambda p: None if p is None else os.fsencode(p)
        _lib.check(xlib.exmy_xp_stats_write(self._h, int(step), enc(csv_path), enc(jsonl_path), err, _lib.ERRLEN),
                   err, OSError)

    def recipe_state(self, lin: int, kind: Union[str, int]) -> Dict[str, Any]:
        """Delayed-scaling state of layer lin's tensor kind: dict(scale, scale_inv, fmax, steps, history)."""
        k = KINDS.index(kind) if isinstance(kind, str) else int(kind)
        s, si, fm, st = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_long()
        hist = np.zeros(4096, np.float32)
        err = _lib.errbuf()
        n = xlib.exmy_xp_recipe_state(self._h, lin, k, ctypes.byref(s), ctypes.byref(si), ctypes.byref(fm),
                                      ctypes.byref(st), hist.ctypes.data_as(_fp), hist.size, err, _lib.ERRLEN)
        if n < 0:
            raise ValueError(err.value.decode())
        if n > hist.size:
            hist = np.zeros(n, np.float32)
            xlib.exmy_xp_recipe_state(self._h, lin, k, ctypes.byref(s), ctypes.byref(si), ctypes.byref(fm),
                                      ctypes.byref(st), hist.ctypes.data_as(_fp), hist.size, err, _lib.ERRLEN)
        return {"scale": s.value, "scale_inv": si.value, "fmax": fm.value, "steps": st.value,
                "history": hist[:n].copy()}

    def set_recipe_state(self, lin: int, kind: Union[str, int], state: Mapping[str, Any]) -> None:
        """Put back what recipe_state returned (the same layer's precision: the history length must agree)."""
        k = KINDS.index(kind) if isinstance(kind, str) else int(kind)
        hist = np.ascontiguousarray(state["history"], np.float32)
        err = _lib.errbuf()
        _lib.check(xlib.exmy_xp_recipe_state_set(self._h, lin, k, float(state["scale"]), float(state["scale_inv"]),
                                                 float(state["fmax"]), int(state["steps"]), hist.ctypes.data_as(_fp),
                                                 hist.size, err, _lib.ERRLEN), err)

    def layer_prec(self, lin: int) -> str:
        buf = ctypes.create_string_buffer(2048)
        xlib.exmy_xp_layer_prec(self._h, lin, buf, 2048)
        return buf.value.decode()
