"""_tensor.py: scaling recipes, scaled tensors, statistics, the what-if
table and the emulated GEMM, each one call into libexmy."""
from __future__ import annotations

import ctypes
import math
import weakref
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Literal, Optional, Tuple, Union, overload

import numpy as np

from . import _lib
from ._lib import lib
from ._arrays import as_format, rounding, ptr, source, Flags

if TYPE_CHECKING:
    from ._arrays import FormatLike, IntLike, Saturate
    RecipeLike = Union["Recipe", str]

_KINDS = ["none", "current", "delayed", "block", "mx", "mx:ocp", "nvfp4"]


class Recipe:
    """A scaling recipe's settings: current, delayed:len=16, block:1x128, mx,
    mx:ocp, nvfp4, none (exmy_recipe_parse)."""

    _r: _lib.Recipe
    text: str

    def __init__(self, spec: RecipeLike) -> None:
        if isinstance(spec, Recipe):
            self._r, self.text = spec._r, spec.text
            return
        r = _lib.Recipe()
        err = _lib.errbuf()
        _lib.check(lib.exmy_recipe_parse(_lib.text(spec, "recipe"), ctypes.byref(r), err, _lib.ERRLEN), err)
        self._r, self.text = r, spec

    @property
    def kind(self) -> str:
        return _KINDS[self._r.kind]

    @property
    def has_state(self) -> bool:
        return bool(lib.exmy_recipe_has_state(ctypes.byref(self._r)))

    @property
    def canonical(self) -> str:
        buf = ctypes.create_string_buffer(256)
        lib.exmy_recipe_to_string(ctypes.byref(self._r), buf, 256)
        return buf.value.decode()

    def state(self) -> RecipeState:
        """A fresh RecipeState (delayed scaling: empty history, scale 1)."""
        return RecipeState(self)

    def __repr__(self) -> str:
        return "exmy.Recipe(%r)" % self.text


def as_recipe(r: RecipeLike) -> Recipe:
    return r if isinstance(r, Recipe) else Recipe(r)


class RecipeState:
    """What a running delayed recipe remembers (TE's amax history and scale).
    Pass it to scale(..., state=) for every tensor of a step, then step()."""

    _s: _lib.RecipeState

    def __init__(self, recipe: RecipeLike) -> None:
        self.recipe = as_recipe(recipe)
        self._s = _lib.RecipeState()
        err = _lib.errbuf()
        _lib.check(lib.exmy_recipe_state_new(ctypes.byref(self.recipe._r), ctypes.byref(self._s), err,
                                              _lib.ERRLEN), err, MemoryError)
        # freed by a finalizer that holds the function and the struct itself: a
        # __del__ run during interpreter teardown could find the module's `lib`
        # already gone ("Exception ignored in ... __del__")
        weakref.finalize(self, lib.exmy_recipe_state_free, ctypes.byref(self._s))

    def step(self) -> None:
        """End of step: roll the history and compute the next scale."""
        lib.exmy_recipe_step(ctypes.byref(self.recipe._r), ctypes.byref(self._s))

    @property
    def scale(self) -> float:
        return self._s.scale

    @property
    def scale_inv(self) -> float:
        return self._s.scale_inv

    @property
    def steps(self) -> int:
        return self._s.steps

    @property
    def history(self) -> np.ndarray:
        n = self._s.history_len
        return np.ctypeslib.as_array(self._s.history, (n,)).copy() if n and self._s.history else np.zeros(0, np.float32)


def _matrix(x: object, what: str = "x") -> Tuple[np.ndarray, int, int]:
    """x as a float32 rows x cols matrix as quantize-tensor reads it (1-D: 1 x n;
    N-D: the last axis is columns; float64 rounded to float32; float16,
    bfloat16 and ml_dtypes' float8/6/4 types widened exactly; any layout)."""
    if not isinstance(x, np.ndarray):
        raise TypeError("exmy: %s: expected a numpy array, not %s" % (what, type(x).__name__))
    try:
        x = source(x)[0]
    except TypeError:
        raise TypeError("exmy: %s: dtype %s is not a float tensor (accepted: float32, float64, float16, bfloat16, "
                        "ml_dtypes' float8/6/4 types)" % (what, x.dtype)) from None
    if x.dtype != np.float32:  # float64 rounds (as quantize-tensor reads it); the narrower types widen exactly
        x = x.astype(np.float32)
    cols = x.shape[-1] if x.ndim else 1
    rows = x.size // cols if cols else 0
    if x.ndim == 1:
        rows = 1
    return x, rows, cols


class QTensor:
    """A scaled tensor: codes (rows x cols), per-group scale_inv (srows x
    scols), scale codes (E8M0 for mx, E4M3 for nvfp4, else None), per-group
    amax, and the layout (block shape).  Values ~ decode(codes) * scale_inv."""

    def __init__(self, q: _lib.QTensor, x: Optional[np.ndarray] = None) -> None:
        f = _lib.Format()
        ctypes.memmove(ctypes.byref(f), ctypes.byref(q.fmt), ctypes.sizeof(f))
        from ._arrays import Format
        self.format = Format.__new__(Format)
        self.format._f = f
        self.rows, self.cols = q.rows, q.cols
        self.block = (q.block_rows, q.block_cols)
        self.groups = (q.srows, q.scols)
        n, g = q.rows * q.cols, q.srows * q.scols
        cb = self.format.code_bytes
        self.codes = np.empty((q.rows, q.cols), dtype=self.format.code_dtype)
        if n:
            ctypes.memmove(self.codes.ctypes.data, q.codes, n * cb)

        def floats(p: Any) -> np.ndarray:
            return np.ctypeslib.as_array(p, (g,)).reshape(q.srows, q.scols).copy() if g else np.zeros((0, 0), np.float32)
        self.scale = floats(q.scale)
        self.scale_inv = floats(q.scale_inv)
        self.amax = floats(q.amax)
        self.scale_codes = (np.ctypeslib.as_array(q.scale_codes, (g,)).reshape(q.srows, q.scols).copy()
                            if q.scale_codes and g else None)
        self.tensor_scale, self.tensor_scale_inv = q.tensor_scale, q.tensor_scale_inv
        self.recipe = _KINDS[q.recipe]
        self._rnd, self._exact = q.rnd, q.exact_product
        self._kind = q.recipe

    @property
    def layout(self) -> Dict[str, Any]:
        return {"rows": self.rows, "cols": self.cols, "block_rows": self.block[0], "block_cols": self.block[1],
                "srows": self.groups[0], "scols": self.groups[1], "recipe": self.recipe}

    def _c(self) -> _lib.QTensor:
        """A borrowed exmy_qtensor over this object's arrays (is_view: never freed)."""
        q = _lib.QTensor()
        q.fmt = self.format._f
        q.rows, q.cols = self.rows, self.cols
        q.codes = self.codes.ctypes.data
        q.block_rows, q.block_cols = self.block
        q.srows, q.scols = self.groups
        fp = ctypes.POINTER(ctypes.c_float)
        q.scale = self.scale.ctypes.data_as(fp)
        q.scale_inv = self.scale_inv.ctypes.data_as(fp)
        q.amax = self.amax.ctypes.data_as(fp)
        if self.scale_codes is not None:
            q.scale_codes = self.scale_codes.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
        q.tensor_scale, q.tensor_scale_inv = self.tensor_scale, self.tensor_scale_inv
        q.recipe, q.rnd, q.exact_product, q.is_view = self._kind, self._rnd, self._exact, 1
        return q

    def dequant(self) -> np.ndarray:
        """decode(q) * scale_inv * tensor_scale_inv, rounded to float32 (as quantize-tensor --dequant)."""
        out = np.empty((self.rows, self.cols), np.float32)
        q = self._c()
        lib.exmy_qtensor_to_f32(ctypes.byref(q), ptr(out))
        return out

    def __repr__(self) -> str:
        return "exmy.QTensor(%s, %s, %dx%d, groups %dx%d)" % (self.format.name, self.recipe, self.rows, self.cols,
                                                               self.groups[0], self.groups[1])


def _qtensor_c(x: object, recipe: RecipeLike, fmt: FormatLike, rnd: _lib.Rounding, state: Optional[RecipeState],
               fl: ctypes.c_uint) -> Tuple[_lib.QTensor, np.ndarray]:
    x, rows, cols = _matrix(x)
    rec = as_recipe(recipe)
    f = as_format(fmt)
    if state is not None:
        if not isinstance(state, RecipeState):
            raise TypeError("exmy: state must be an exmy.RecipeState, not %s" % type(state).__name__)
        if state.recipe.canonical != rec.canonical:
            raise ValueError("exmy: state belongs to recipe %s, not %s" % (state.recipe.text, rec.text))
        st = state
    else:
        st = rec.state()  # one tensor: a delayed recipe starts from scale 1, as quantize-tensor
    q = _lib.QTensor()
    err = _lib.errbuf()
    rc = lib.exmy_recipe_quantize(ctypes.byref(rec._r), ctypes.byref(f._f), ctypes.byref(rnd), ptr(x), rows, cols,
                                  ctypes.byref(st._s), ctypes.byref(q), ctypes.byref(fl), err, _lib.ERRLEN)
    if rc:
        lib.exmy_qtensor_free(ctypes.byref(q))
        _lib.check(rc, err)
    return q, x


def _rnd_kw(round: str, saturate: Saturate, ftz: bool, daz: bool, seed: IntLike, stream: IntLike,
            sr_bits: int) -> _lib.Rounding:
    return rounding(round, saturate, ftz, daz, seed, stream, sr_bits)


@overload
def scale(x: np.ndarray, recipe: RecipeLike = ..., fmt: FormatLike = ..., round: str = ...,
          saturate: Saturate = ..., ftz: bool = ..., daz: bool = ..., seed: IntLike = ...,
          stream: IntLike = ..., sr_bits: int = ..., state: Optional[RecipeState] = ...,
          flags: Literal[False] = ...) -> QTensor: ...
@overload
def scale(x: np.ndarray, recipe: RecipeLike = ..., fmt: FormatLike = ..., round: str = ...,
          saturate: Saturate = ..., ftz: bool = ..., daz: bool = ..., seed: IntLike = ...,
          stream: IntLike = ..., sr_bits: int = ..., state: Optional[RecipeState] = ...,
          *, flags: Literal[True]) -> Tuple[QTensor, Flags]: ...
@overload
def scale(x: np.ndarray, recipe: RecipeLike = ..., fmt: FormatLike = ..., round: str = ...,
          saturate: Saturate = ..., ftz: bool = ..., daz: bool = ..., seed: IntLike = ...,
          stream: IntLike = ..., sr_bits: int = ..., state: Optional[RecipeState] = ...,
          flags: bool = ...) -> Union[QTensor, Tuple[QTensor, Flags]]: ...


def scale(x: np.ndarray, recipe: RecipeLike = "current", fmt: FormatLike = "e4m3fn", round: str = "rne",
          saturate: Saturate = "finite", ftz: bool = False, daz: bool = False, seed: IntLike = 0,
          stream: IntLike = 0, sr_bits: int = 0, state: Optional[RecipeState] = None, flags: bool = False
          ) -> Union[QTensor, Tuple[QTensor, Flags]]:
    """Quantize a float32/float64 tensor with a scaling recipe (q =
    cast(fp32(x * scale))) as `exmy quantize-tensor` does: 1-D is 1 x n, N-D
    has the last axis as columns.  state: a RecipeState for delayed scaling
    (else a fresh one: scale 1).  The element cast defaults to rne,
    saturating (cuda_fp8.h).  Returns a QTensor (and Flags with flags=True)."""
    rnd = _rnd_kw(round, saturate, ftz, daz, seed, stream, sr_bits)
    fl = ctypes.c_uint(0)
    q, _ = _qtensor_c(x, recipe, fmt, rnd, state, fl)
    try:
        t = QTensor(q)
    finally:
        lib.exmy_qtensor_free(ctypes.byref(q))
    return (t, Flags(fl.value)) if flags else t


_STAT_KEYS = ("n", "n_nonzero", "amin", "amax", "underflow_frac", "overflow_frac", "mse", "cosine", "snr_db",
              "max_rel_err", "scale_ratio", "fmt_log2_min", "fmt_log2_max")


def _stats_dict(s: _lib.QStats) -> Dict[str, Any]:
    d = {k: getattr(s, k) for k in _STAT_KEYS}
    d["underflow_pct"] = 100 * s.underflow_frac
    d["overflow_pct"] = 100 * s.overflow_frac
    h = np.ctypeslib.as_array(s.hist).copy()
    d["hist"] = {_lib.HIST_LO + int(b): int(h[b]) for b in np.nonzero(h)[0]}  # floor(log2|x|): count
    return d


def stats(x: np.ndarray, fmt: FormatLike = "e4m3fn", recipe: RecipeLike = "current", round: str = "rne",
          saturate: Saturate = "finite", ftz: bool = False, daz: bool = False, seed: IntLike = 0,
          stream: IntLike = 0, sr_bits: int = 0, state: Optional[RecipeState] = None) -> Dict[str, Any]:
    """The FP8 debug statistics of quantizing x (exmy_qtensor_stats): a dict
    with underflow/overflow fractions and %, mse, cosine, snr_db, max_rel_err,
    amin, amax, scale_ratio and the log2 histogram {exponent: count}."""
    rnd = _rnd_kw(round, saturate, ftz, daz, seed, stream, sr_bits)
    q, xf = _qtensor_c(x, recipe, fmt, rnd, state, ctypes.c_uint(0))
    try:
        s = _lib.QStats()
        err = _lib.errbuf()
        _lib.check(lib.exmy_qtensor_stats(ctypes.byref(q), ptr(xf), ctypes.byref(s), err, _lib.ERRLEN), err)
    finally:
        lib.exmy_qtensor_free(ctypes.byref(q))
    return _stats_dict(s)


def _list(v: Union[str, Iterable[Any]], what: str) -> List[Any]:
    if isinstance(v, str):
        return [v]
    try:
        return list(v)
    except TypeError:
        raise TypeError("exmy: %s: a str or a list of str" % what) from None


def whatif(x: np.ndarray, formats: Union[str, Iterable[FormatLike]],
           recipes: Union[str, Iterable[RecipeLike]] = ("current",), **rounding_kw: Any) -> List[Dict[str, Any]]:
    """The format-design table (`exmy whatif`): one dict per (format, recipe),
    formats outer, with the statistics of quantizing x."""
    fl = [as_format(f) for f in _list(formats, "formats")]
    rl = [as_recipe(r) for r in _list(recipes, "recipes")]
    if not fl or not rl:
        raise ValueError("exmy: whatif needs at least one format and one recipe")
    rows = []
    for f in fl:
        for r in rl:
            d = stats(x, f, r, **rounding_kw)
            rows.append(dict(format=f.name, scaling=r.text, **d))
    return rows


class _Operand:
    def __init__(self, x: Union[np.ndarray, QTensor], fmt: FormatLike, recipe: RecipeLike, rnd: Dict[str, Any],
                 what: str) -> None:
        if isinstance(x, QTensor):
            self.t = x
        else:
            if not isinstance(x, np.ndarray):
                raise TypeError("exmy: gemm: %s: expected a numpy array or an exmy.QTensor" % what)
            if x.ndim != 2:
                raise ValueError("exmy: gemm: %s must be 2-D, not %d-D" % (what, x.ndim))
            self.t = scale(x, recipe, fmt, state=None, **rnd)
        self.q = self.t._c()


@overload
def gemm(a: Union[np.ndarray, QTensor], b: Union[np.ndarray, QTensor], accum: str = ...,
         scaling: RecipeLike = ..., fmt: FormatLike = ..., out_format: FormatLike = ...,
         c: Optional[np.ndarray] = ..., alpha: float = ..., beta: Optional[float] = ...,
         scale_c: float = ..., scale_d: float = ..., trans_a: bool = ..., trans_b: bool = ...,
         format_a: Optional[FormatLike] = ..., format_b: Optional[FormatLike] = ...,
         scaling_a: Optional[RecipeLike] = ..., scaling_b: Optional[RecipeLike] = ...,
         out_round: str = ..., out_saturate: Saturate = ..., round: str = ...,
         saturate: Saturate = ..., ftz: bool = ..., daz: bool = ..., seed: IntLike = ...,
         stream: IntLike = ..., sr_bits: int = ..., threads: int = ..., amax: Literal[False] = ...,
         flags: Literal[False] = ...) -> np.ndarray: ...
@overload
def gemm(a: Union[np.ndarray, QTensor], b: Union[np.ndarray, QTensor], accum: str = ...,
         scaling: RecipeLike = ..., fmt: FormatLike = ..., out_format: FormatLike = ...,
         c: Optional[np.ndarray] = ..., alpha: float = ..., beta: Optional[float] = ...,
         scale_c: float = ..., scale_d: float = ..., trans_a: bool = ..., trans_b: bool = ...,
         format_a: Optional[FormatLike] = ..., format_b: Optional[FormatLike] = ...,
         scaling_a: Optional[RecipeLike] = ..., scaling_b: Optional[RecipeLike] = ...,
         out_round: str = ..., out_saturate: Saturate = ..., round: str = ...,
         saturate: Saturate = ..., ftz: bool = ..., daz: bool = ..., seed: IntLike = ...,
         stream: IntLike = ..., sr_bits: int = ..., threads: int = ..., amax: bool = ..., flags: bool = ...
         ) -> Union[np.ndarray, Tuple[Any, ...]]: ...


def gemm(a: Union[np.ndarray, QTensor], b: Union[np.ndarray, QTensor], accum: str = "fp32",
         scaling: RecipeLike = "current", fmt: FormatLike = "e4m3fn", out_format: FormatLike = "f32",
         c: Optional[np.ndarray] = None, alpha: float = 1.0, beta: Optional[float] = None,
         scale_c: float = 1.0, scale_d: float = 1.0, trans_a: bool = False, trans_b: bool = False,
         format_a: Optional[FormatLike] = None, format_b: Optional[FormatLike] = None,
         scaling_a: Optional[RecipeLike] = None, scaling_b: Optional[RecipeLike] = None,
         out_round: str = "rne", out_saturate: Saturate = False, round: str = "rne",
         saturate: Saturate = "finite", ftz: bool = False, daz: bool = False, seed: IntLike = 0,
         stream: IntLike = 0, sr_bits: int = 0, threads: int = 0, amax: bool = False,
         flags: bool = False) -> Union[np.ndarray, Tuple[Any, ...]]:
    """D = scale_d * (alpha * op(A) op(B) + beta * scale_c * C), as `exmy gemm`:
    A and B float32/float64 matrices quantized with their format and scaling
    recipe (or QTensors from exmy.scale), products accumulated with the model
    accum ("exact", "fp32", "fp32:pairwise", "acc=bf16", "chunk=128,inner=...",
    "tc:hopper", ...).  C: float32 m x n (beta defaults to 1 with C).  D is
    float32 for out_format f32, else codes.  amax=True also returns max |D|
    before scale_d; flags=True the Flags of D's casts."""
    rnd: Dict[str, Any] = dict(round=round, saturate=saturate, ftz=ftz, daz=daz, seed=seed, stream=stream,
                               sr_bits=sr_bits)
    rnd_c = rounding(**rnd)  # validates before any work
    del rnd_c
    A = _Operand(a, format_a or fmt, scaling_a or scaling, rnd, "a")
    B = _Operand(b, format_b or fmt, scaling_b or scaling, rnd, "b")
    acc = _lib.Accum()
    err = _lib.errbuf()
    _lib.check(lib.exmy_accum_parse(_lib.text(accum, "accum"), ctypes.byref(acc), err, _lib.ERRLEN), err)
    fd = as_format(out_format)
    g = _lib.GemmArgs()
    lib.exmy_gemm_args_init(ctypes.byref(g))
    g.trans_a, g.trans_b = int(bool(trans_a)), int(bool(trans_b))
    g.a, g.b = ctypes.pointer(A.q), ctypes.pointer(B.q)
    g.alpha, g.scale_c, g.scale_d = float(alpha), float(scale_c), float(scale_d)
    g.d_fmt = ctypes.pointer(fd._f)
    g.d_rnd = rounding(out_round, out_saturate)
    g.accum = ctypes.pointer(acc)
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 0:
        raise ValueError("exmy: gemm: threads=%r: an integer >= 0 (0: all)" % (threads,))
    g.threads = int(threads)
    dm, dn, dk = ctypes.c_size_t(), ctypes.c_size_t(), ctypes.c_size_t()
    _lib.check(lib.exmy_gemm_check(ctypes.byref(g), ctypes.byref(dm), ctypes.byref(dn), ctypes.byref(dk), err,
                                   _lib.ERRLEN), err)
    m, n = dm.value, dn.value
    cf = None
    if c is not None:
        if not isinstance(c, np.ndarray) or c.dtype not in (np.float32, np.float64):
            raise TypeError("exmy: gemm: c must be a float32/float64 numpy array")
        cm = np.ascontiguousarray(c, dtype=np.float32)
        if cm.shape != (m, n):
            raise ValueError("exmy: gemm: C is %s but D is %d x %d" % (" x ".join(map(str, c.shape)), m, n))
        cf = as_format("f32")
        g.c_fmt = ctypes.pointer(cf._f)
        g.c = cm.ctypes.data
        g.beta = 1.0 if beta is None else float(beta)
    elif beta is not None:
        g.beta = float(beta)
    is_f32 = fd.bits == 32 and fd.ebits == 8
    d = np.empty((m, n), dtype=np.dtype(np.float32) if is_f32 else fd.code_dtype)
    am = ctypes.c_float(0)
    fl = ctypes.c_uint(0)
    _lib.check(lib.exmy_gemm(ctypes.byref(g), ptr(d), ctypes.byref(am), ctypes.byref(fl), err, _lib.ERRLEN), err)
    out: List[Any] = [d]
    if amax:
        out.append(am.value)
    if flags:
        out.append(Flags(fl.value))
    return out[0] if len(out) == 1 else tuple(out)
