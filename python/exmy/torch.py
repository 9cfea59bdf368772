"""exmy.torch: exmy's numerics on PyTorch CPU tensors, and patch(), which
runs a model's nn.Linear GEMMs (fprop, dgrad, wgrad) through the training
engine's xp_matmul with `exmy train`'s precision grammar.

GPU tensors are refused with a ValueError (exmy emulates on the CPU; move
them with .cpu()): nothing is moved behind the caller's back.
"""
from __future__ import annotations

import fnmatch
import os
import warnings
import weakref
from typing import (TYPE_CHECKING, Any, Callable, DefaultDict, Dict, Iterable, List, Literal, Mapping, Optional, Tuple,
                    TypeVar, Union, overload)

import numpy as np
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from . import _arrays, _tensor
from ._arrays import Format, Flags
from ._torchio import _cpu, _to_numpy

from . import _attention
from ._attention import matmul

if TYPE_CHECKING:
    from ._arrays import FormatLike
    # a fake-quant direction or a storage format: a format, or a dict of "fmt" and exmy.cast's rounding keywords
    CastSpec = Union[FormatLike, Dict[str, Any]]
    Spec = Tuple[Format, Dict[str, Any]]  # a CastSpec checked: (Format, keywords)
    ModuleFilter = Callable[[torch.nn.Module, str], bool]
    # patch(filter_fn=): a callable (module, fqn) -> bool, a glob, globs, or None (all)
    FilterSpec = Union[ModuleFilter, str, Iterable[str], None]

_M = TypeVar("_M", bound=torch.nn.Module)

__all__ = ["quantize", "cast", "fake_quant", "FakeQuant", "Quantizer", "LowPrecisionOptimizer", "matmul", "patch", "unpatch", "ExmyLinear",
           "Patched"]


def _codes_tensor(c: np.ndarray) -> torch.Tensor:
    if c.dtype == np.uint8:
        return torch.from_numpy(c)
    # torch's wider unsigned types are limited: keep the bits in the signed type of the same width
    return torch.from_numpy(c.view({2: np.int16, 4: np.int32, 8: np.int64}[c.dtype.itemsize]))


def _codes_as(c: np.ndarray, f: Format, dtype: Optional[torch.dtype]) -> torch.Tensor:
    """The codes tensor as dtype: PyTorch's float8 type of f (the same bits),
    or an integer type of the codes' width; None: _codes_tensor's."""
    t = _codes_tensor(c)
    if dtype is None:
        return t
    if not isinstance(dtype, torch.dtype):
        raise TypeError("exmy.torch: dtype=%r: a torch.dtype" % (dtype,))
    if dtype.is_floating_point:
        name = str(dtype).partition(".")[2]
        if _arrays.DTYPE_FORMATS.get(name) is None or Format(dtype) != f:
            raise TypeError("exmy.torch: dtype %s does not hold %s values (its format: %s)" %
                            (dtype, f.name, _arrays.DTYPE_FORMATS.get(name, "none")))
    elif dtype.is_complex or dtype == torch.bool or dtype.itemsize != f.code_bytes:
        raise TypeError("exmy.torch: dtype %s cannot hold %s codes (%d bytes)" % (dtype, f.name, f.code_bytes))
    return t.view(dtype)


@overload
def quantize(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = ..., *, flags: Literal[False] = ...,
             **kw: Any) -> torch.Tensor: ...
@overload
def quantize(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = ..., *, flags: Literal[True],
             **kw: Any) -> Tuple[torch.Tensor, Flags]: ...
@overload
def quantize(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = ..., *, flags: bool = ...,
             **kw: Any) -> Union[torch.Tensor, Tuple[torch.Tensor, Flags]]: ...


def quantize(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = None,
             **kw: Any) -> Union[torch.Tensor, Tuple[torch.Tensor, Flags]]:
    """Codes of fmt for a CPU float tensor (float32, float64, float16,
    bfloat16, or float8: values in their own format, requantized), with
    exmy.quantize's keywords: uint8 for formats of up to 8 bits, else the
    signed torch type of the code width holding the same bits; dtype= a
    PyTorch float8 type of fmt (torch.float8_e4m3fn: a float8 tensor whose
    bits are the codes) or an integer type of the codes' width.  flags=True
    returns (codes, Flags)."""
    f = _arrays.as_format(fmt)
    r = _arrays.quantize(_to_numpy(t), f, **kw)
    if kw.get("flags"):
        return _codes_as(r[0], f, dtype), r[1]
    return _codes_as(r, f, dtype)


_CAST_DTYPES = {torch.float32: np.float32, torch.float64: np.float64}


@overload
def cast(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = ..., *, flags: Literal[False] = ...,
         **kw: Any) -> torch.Tensor: ...
@overload
def cast(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = ..., *, flags: Literal[True],
         **kw: Any) -> Tuple[torch.Tensor, Flags]: ...
@overload
def cast(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = ..., *, flags: bool = ...,
         **kw: Any) -> Union[torch.Tensor, Tuple[torch.Tensor, Flags]]: ...


def cast(t: torch.Tensor, fmt: FormatLike, dtype: Optional[torch.dtype] = None,
         **kw: Any) -> Union[torch.Tensor, Tuple[torch.Tensor, Flags]]:
    """decode(quantize(t)): float64 for float64 tensors, else float32 (exact
    for formats that fit); dtype= torch.float32 or torch.float64, or
    PyTorch's float8 type of fmt (the same values in that type)."""
    f = _arrays.as_format(fmt)
    if dtype is not None and dtype not in _CAST_DTYPES:
        if isinstance(dtype, torch.dtype) and dtype.is_floating_point and dtype.itemsize == 1:
            return quantize(t, f, dtype=dtype, **kw)
        raise TypeError("exmy.torch: cast to %s: accepted torch.float32, torch.float64, or PyTorch's float8 type "
                        "of the format" % (dtype,))
    r = _arrays.cast(_to_numpy(t), f, dtype=_CAST_DTYPES.get(dtype), **kw)
    if kw.get("flags"):
        return torch.from_numpy(r[0]), r[1]
    return torch.from_numpy(r)


_CAST_KEYS = ("round", "saturate", "ftz", "daz", "seed", "stream", "sr_bits", "index0")


def _cast_spec(spec: CastSpec, what: str, kw: Optional[Mapping[str, Any]] = None) -> Spec:
    """(Format, exmy.cast keywords) of a fake-quant direction: a format (a
    name, an exmy.Format, a dtype) or a dict of "fmt" and exmy.cast's
    rounding keywords; kw adds keywords."""
    if isinstance(spec, dict):
        kw = dict(spec, **(kw or {}))
        if "fmt" not in kw:
            raise TypeError("exmy.torch: %s=%r: a dict needs 'fmt'" % (what, spec))
        spec = kw.pop("fmt")
    else:
        kw = dict(kw or {})
    bad = sorted(set(kw) - set(_CAST_KEYS))
    if bad:
        raise TypeError("exmy.torch: %s: unknown keyword%s %s (accepted: %s)" %
                        (what, "s" if len(bad) > 1 else "", ", ".join(bad), ", ".join(_CAST_KEYS)))
    _arrays.rounding(**{k: v for k, v in kw.items() if k != "index0"})  # bad values raise here, not in backward
    return _arrays.as_format(spec), kw


def _stochastic(kw: Mapping[str, Any]) -> bool:
    return _arrays.rounding(kw.get("round", "rne")).mode == _arrays.rounding("sr").mode


def _fresh_seed(kw: Dict[str, Any]) -> Dict[str, Any]:
    """Stochastic rounding without a seed: one drawn from PyTorch's default
    generator, so calls do not repeat a rounding and torch.manual_seed makes
    a run repeatable; an explicit seed is kept (the same rounding each call)."""
    if "seed" not in kw and _stochastic(kw):
        kw = dict(kw, seed=int(torch.randint(0, 2 ** 62, (1,)).item()))
    return kw


class FakeQuant(torch.autograd.Function):
    """Fake quantization: forward cast to fmt with kw (exmy.cast's keywords);
    backward the gradient unchanged (straight through), or, with bwd =
    (Format, kw), cast to its own format and rounding."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, fmt: Format, kw: Dict[str, Any], bwd: Optional[Spec] = None) -> torch.Tensor:
        ctx.bwd = bwd
        return cast(x, fmt, **kw).to(x.dtype)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Tuple[Optional[torch.Tensor], ...]:
        if ctx.bwd is not None:
            f, kw = ctx.bwd
            g = cast(g, f, **kw).to(g.dtype)
        return (g,) + (None,) * (len(ctx.needs_input_grad) - 1)


def fake_quant(x: torch.Tensor, fmt: Optional[CastSpec] = None, bwd: Optional[CastSpec] = None, *,
               fwd: Optional[CastSpec] = None, **kw: Any) -> torch.Tensor:
    """Differentiable fake quantization (QPyTorch's quantizer): the forward
    is exmy.cast(x, fwd) (fwd, or fmt, with the keywords kw: round=,
    saturate=, seed=, ...), the backward passes the gradient straight
    through (bwd=None) or casts it with bwd, its own format and rounding.
    fwd and bwd: a format, or a dict {"fmt": ..., "round": ..., ...} of
    exmy.cast's keywords.  Stochastic rounding without a seed draws one
    from PyTorch's default generator on every call (and for every
    backward), so repeated calls do not repeat the rounding; an explicit
    seed repeats it.  The result has x's dtype."""
    if (fmt is None) == (fwd is None):
        raise TypeError("exmy.torch.fake_quant: give the forward format once: fmt (positional) or fwd=")
    f, fkw = _cast_spec(fwd if fwd is not None else fmt, "fwd", kw)
    b = None
    if bwd is not None:
        bf, bkw = _cast_spec(bwd, "bwd")
        b = (bf, _fresh_seed(bkw))
    return FakeQuant.apply(x, f, _fresh_seed(fkw), b)


class Quantizer(torch.nn.Module):
    """fake_quant as a module with a counter: call number c rounds the
    forward with stochastic-rounding stream 2c and the backward with 2c + 1
    under one seed, so no two calls (nor the two directions) share a
    rounding, and a run is repeatable.  The counter is a buffer: it is in
    the module's state_dict (a resumed run continues the streams).  fwd and
    bwd as fake_quant's (their "stream" is set here)."""

    calls: torch.Tensor  # a buffer: the number of calls so far

    def __init__(self, fwd: CastSpec, bwd: Optional[CastSpec] = None, seed: int = 0) -> None:
        super().__init__()
        self.fwd = _cast_spec(fwd, "fwd")
        self.bwd = None if bwd is None else _cast_spec(bwd, "bwd")
        for f, kw in filter(None, (self.fwd, self.bwd)):
            if "stream" in kw or "seed" in kw:
                raise TypeError("exmy.torch.Quantizer: the seed is Quantizer's and the stream its counter's")
        self.seed = _arrays.rounding(seed=seed).seed
        self.register_buffer("calls", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = int(self.calls)
        self.calls += 1
        f, kw = self.fwd
        fkw = dict(kw, seed=self.seed, stream=2 * c)
        b = None
        if self.bwd is not None:
            b = (self.bwd[0], dict(self.bwd[1], seed=self.seed, stream=2 * c + 1))
        return FakeQuant.apply(x, f, fkw, b)

    def extra_repr(self) -> str:
        out = "fwd=%s" % self.fwd[0].name
        if self.bwd is not None:
            out += ", bwd=%s" % self.bwd[0].name
        return out + ", seed=%d" % self.seed


# ---- LowPrecisionOptimizer: weights and optimizer states stored in formats ----

def _storage_spec(spec: Optional[CastSpec], what: str) -> Optional[Spec]:
    """(Format, kw) of a weight= or moments= spec, or None (left as they are)."""
    if spec is None:
        return None
    f, kw = _cast_spec(spec, what)
    if "seed" in kw or "stream" in kw or "index0" in kw:
        raise TypeError("exmy.torch.LowPrecisionOptimizer: %s: the seed is the optimizer's and the stream its step "
                        "counter's" % what)
    return f, kw


class LowPrecisionOptimizer(torch.optim.Optimizer):
    """Wraps a torch optimizer so that its parameters and its per-element
    states are stored in chosen formats (QPyTorch's OptimLP; `exmy train`'s
    master= / master_round=, and msamp's fp16 weights with fp32 moments):
    after each step() every parameter is rounded in place with `weight` and
    every floating state tensor of a parameter's shape (Adam's exp_avg,
    exp_avg_sq, max_exp_avg_sq; SGD's momentum_buffer; not the scalar
    step) with `moments`.  weight, moments: None (left in their dtype), a
    format, or a dict of "fmt" and exmy.cast's rounding keywords
    ({"fmt": "bf16", "round": "sr"}).  Stochastic rounding is keyed by seed
    and a counter: step s rounds tensor i (the parameters in param_groups
    order) with stream s * 2**32 + i * 256 + k, k = 0 for the weight and
    1, 2, ... for its states in sorted key order; element j uses counter j.
    The step counter (`steps`) is saved in state_dict() under "exmy" next to
    the wrapped optimizer's state, so a resumed run repeats the rounding of
    an uninterrupted one.  The initial weights are not rounded: call
    round_weights() for that (rounded as step -1 would).  param_groups and
    state are the wrapped optimizer's; other attributes are delegated (hooks
    registered here are the wrapped optimizer's: they run before the
    rounding)."""

    def __init__(self, optimizer: torch.optim.Optimizer, weight: Optional[CastSpec] = None,
                 moments: Optional[CastSpec] = None, seed: int = 0) -> None:
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise TypeError("exmy.torch.LowPrecisionOptimizer: %r is not a torch.optim.Optimizer" % (optimizer,))
        # no Optimizer.__init__: the wrapped optimizer owns the groups and the state
        self.optimizer = optimizer
        self.weight = _storage_spec(weight, "weight")
        self.moments = _storage_spec(moments, "moments")
        self.seed = _arrays.rounding(seed=seed).seed
        self.steps = 0

    def __getattr__(self, name: str) -> Any:
        if name == "optimizer":  # unpickling: not set yet
            raise AttributeError(name)
        return getattr(self.optimizer, name)

    def __getstate__(self) -> Dict[str, Any]:
        return self.__dict__

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def param_groups(self) -> List[Dict[str, Any]]:
        return self.optimizer.param_groups

    @property
    def state(self) -> DefaultDict[torch.Tensor, Any]:
        return self.optimizer.state

    @property
    def defaults(self) -> Dict[str, Any]:
        return self.optimizer.defaults

    def __repr__(self) -> str:
        spec = lambda s: "None" if s is None else s[0].name + ("" if not s[1] else " " + repr(s[1]))
        return "LowPrecisionOptimizer(weight=%s, moments=%s, seed=%d, steps=%d,\n%r)" % (
            spec(self.weight), spec(self.moments), self.seed, self.steps, self.optimizer)

    def _round(self, t: torch.Tensor, spec: Spec, stream: int) -> None:
        f, kw = spec
        if _stochastic(kw):
            kw = dict(kw, seed=self.seed, stream=stream)
        with torch.no_grad():
            t.copy_(cast(t.detach(), f, **kw))

    def _round_all(self, step: int, states: bool) -> None:
        base = (step % (1 << 32)) << 32
        moments = self.moments if states else None
        i = 0
        for g in self.optimizer.param_groups:
            for p in g["params"]:
                if self.weight is not None:
                    self._round(p.data, self.weight, base + i * 256)
                if moments is not None:
                    st = self.optimizer.state.get(p, {})
                    k = 1
                    for key in sorted(st, key=str):
                        v = st[key]
                        if key != "step" and torch.is_tensor(v) and v.is_floating_point() and v.shape == p.shape:
                            self._round(v, moments, base + i * 256 + k)
                            k += 1
                i += 1

    def round_weights(self) -> None:
        """Round the parameters with `weight` now (e.g. the initial weights,
        as the engine's msamp=3 does at setup); SR stream of step -1."""
        if self.weight is not None:
            self._round_all(-1, False)

    def step(self, closure: Optional[Callable[[], Any]] = None) -> Any:
        loss = self.optimizer.step(closure)
        if self.weight is not None or self.moments is not None:
            self._round_all(self.steps, self.moments is not None)
        self.steps += 1
        return loss

    def zero_grad(self, set_to_none: bool = True) -> None:
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def add_param_group(self, param_group: Dict[str, Any]) -> None:
        self.optimizer.add_param_group(param_group)

    def state_dict(self) -> Dict[str, Any]:
        """The wrapped optimizer's state_dict, with "exmy": {"steps", "seed"}
        (a plain optimizer's load_state_dict ignores it)."""
        sd = self.optimizer.state_dict()
        sd["exmy"] = {"steps": self.steps, "seed": self.seed}
        return sd

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """A state_dict of this wrapper (its step counter restored), or of
        the plain optimizer (the counter restarts at 0)."""
        sd = dict(state_dict)
        ex = sd.pop("exmy", None)
        self.optimizer.load_state_dict(sd)
        self.steps = 0 if ex is None else int(ex["steps"])
        if ex is not None and int(ex["seed"]) != self.seed:
            warnings.warn("exmy.torch.LowPrecisionOptimizer: state_dict saved with seed %d, this optimizer's is %d: "
                          "its stochastic rounding continues with %d" % (int(ex["seed"]), self.seed, self.seed),
                          RuntimeWarning, stacklevel=2)


# ---- patch: nn.Linear through the engine's GEMMs -------------------------------

class _LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x2: torch.Tensor, w: torch.Tensor, mod: ExmyLinear) -> torch.Tensor:
        eng, lin = mod._patched.engine, mod.lin
        xn = np.ascontiguousarray(_to_numpy(x2), np.float32)
        wn = np.ascontiguousarray(_to_numpy(w), np.float32)
        y = np.empty((xn.shape[0], wn.shape[0]), np.float32)
        eng.forward(lin, xn, wn, y)
        ctx.mod = mod
        ctx.save_for_backward(torch.from_numpy(xn), torch.from_numpy(wn))
        ctx.dtypes = (x2.dtype, w.dtype)
        return torch.from_numpy(y)

    @staticmethod
    def backward(ctx: Any, dy: torch.Tensor) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor], None]:
        xt, wt = ctx.saved_tensors
        mod = ctx.mod
        xn, wn = xt.numpy(), wt.numpy()
        dyn = np.ascontiguousarray(_to_numpy(dy), np.float32)
        dw = np.empty_like(wn)
        need_dx = ctx.needs_input_grad[0]
        dx = np.empty_like(xn) if need_dx else None
        mod._patched.engine.backward(mod.lin, dyn, xn, wn, dw, dx)
        gx = torch.from_numpy(dx).to(ctx.dtypes[0]) if need_dx else None
        gw = torch.from_numpy(dw).to(ctx.dtypes[1]) if ctx.needs_input_grad[1] else None
        return gx, gw, None


class ExmyLinear(torch.nn.Module):
    """nn.Linear whose three GEMMs run through exmy (the engine's xp_matmul):
    the original layer's weight and bias Parameters, unchanged.  The
    original module is kept (not as a submodule) for unpatch()."""

    _patched: Patched
    _original: torch.nn.Linear

    def __init__(self, linear: torch.nn.Linear, patched: Patched, lin: int, name: str) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self.lin, self.name = lin, name
        self.train(linear.training)
        object.__setattr__(self, "_patched", patched)  # not a submodule
        object.__setattr__(self, "_original", linear)  # nor this: unpatch() puts it back

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _cpu(x, "input of layer '%s'" % self.name)
        _cpu(self.weight, "weight of layer '%s'" % self.name)
        p = self._patched
        p._ran = True
        if p.msamp and self.weight.requires_grad:
            _hook_fp8_grad(self.weight)
        shape = x.shape
        x2 = x.reshape(-1, self.in_features)
        y = _LinearFn.apply(x2, self.weight, self).to(x.dtype)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*shape[:-1], self.out_features)

    def unpatched(self) -> torch.nn.Linear:
        """The original nn.Linear (or subclass) with this layer's current weight and bias."""
        m = self._original
        m.weight, m.bias = self.weight, self.bias
        m.train(self.training)
        return m

    def extra_repr(self) -> str:
        return "in_features=%d, out_features=%d, lin=%d (%s)" % (self.in_features, self.out_features, self.lin,
                                                                 self.name)


_KINDS = ("input", "weight", "grad")


class Patched:
    """What patch() returns: the engine context of the patched layers.  Call
    step() after each optimizer step (delayed scaling rolls its histories,
    statistics are written, the step counter that keys stochastic rounding
    advances).  state_dict()/load_state_dict() hold that state (the step
    counter, each layer's amax histories and scales) for checkpoints; a
    pickled or deep-copied patched model carries it too, with an engine of
    its own (the engine's native handle is never pickled)."""

    def __init__(self, model: torch.nn.Module, names: List[str], keys: List[Tuple[str, str]], stats_every: int,
                 out_dir: Optional[str], attn: Optional[str], msamp: int) -> None:
        self._model, self.names, self.keys = model, names, keys
        self.stats_every, self.out_dir, self.attn, self.msamp = stats_every, out_dir, attn, msamp
        self.step_index = 0
        if out_dir and stats_every:
            os.makedirs(out_dir, exist_ok=True)
        self._start(0)

    def _start(self, attn_sub: int) -> None:
        """A new engine over names and keys (patch, unpickling), at step_index."""
        from ._xp import Engine
        self.engine = Engine(self.names, self.keys)
        self.attn_run = _attention._Run(self.engine) if self.attn is not None else None  # patch(attn=...)
        self._ran, self._opt_steps, self._warned = False, 0, False  # for _after_optimizer_step
        self.delayed = any("/delayed" in self.layer_prec(i) for i in range(len(self.names)))
        if self.delayed:
            _watch(self)
        self._begin()
        if self.attn_run:
            self.attn_run.sub = attn_sub

    def __getstate__(self) -> Dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("engine", "attn_run")}
        d["_state"] = self.state_dict()
        return d

    def __setstate__(self, d: Dict[str, Any]) -> None:
        state = d.pop("_state")
        self.__dict__.update(d)
        self._start(0)
        self.load_state_dict(state)

    def _collect(self) -> bool:
        return bool(self.stats_every) and self.step_index % self.stats_every == 0

    def _begin(self) -> None:
        self.engine.begin_step(self.step_index, self._collect())
        if self.attn_run:
            self.attn_run.sub = 0  # the step's attention problems key SR from 0, as the engine's

    def step(self) -> None:
        self.engine.end_step()
        if self._collect() and self.out_dir:
            self.engine.stats_write(self.step_index, os.path.join(self.out_dir, "stats.csv"),
                                    os.path.join(self.out_dir, "stats.jsonl"))
        self.step_index += 1
        self._ran, self._opt_steps = False, 0
        self._begin()

    def _index(self, layer: Union[str, int]) -> int:
        return self.names.index(layer) if isinstance(layer, str) else int(layer)

    def recipe_state(self, layer: Union[str, int], kind: str) -> Dict[str, Any]:
        """Delayed-scaling state of a layer (name or index) and tensor kind (input, weight, grad)."""
        return self.engine.recipe_state(self._index(layer), kind)

    def layer_prec(self, layer: Union[str, int]) -> str:
        return self.engine.layer_prec(self._index(layer))

    def state_dict(self) -> Dict[str, Any]:
        """The scaling state a resumed run needs, in types torch.save and
        torch.load(weights_only=True) take: the step counter (it keys
        stochastic rounding and the statistics), the attention problem
        counter within the step, and per layer and tensor kind the delayed
        recipe's scale, scale_inv, fmax, steps and amax history."""
        layers: Dict[str, Dict[str, Any]] = {}
        for i, name in enumerate(self.names):
            layers[name] = {}
            for kind in _KINDS:
                st = self.engine.recipe_state(i, kind)
                layers[name][kind] = {"scale": float(st["scale"]), "scale_inv": float(st["scale_inv"]),
                                      "fmax": float(st["fmax"]), "steps": int(st["steps"]),
                                      "history": torch.from_numpy(st["history"])}
        return {"step": self.step_index, "attn_sub": self.attn_run.sub if self.attn_run else 0,
                "prec": [self.layer_prec(i) for i in range(len(self.names))], "layers": layers}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Put back what state_dict() returned, into a patch of the same
        layers with the same precisions (ValueError otherwise)."""
        if not isinstance(state, dict) or not {"step", "layers", "prec"} <= set(state):
            raise TypeError("exmy.torch: load_state_dict: expected a dict from Patched.state_dict()")
        if list(state["layers"]) != list(self.names):
            raise ValueError("exmy.torch: load_state_dict: the state is of layers %s, this patch's are %s" %
                             (list(state["layers"]), self.names))
        mine = [self.layer_prec(i) for i in range(len(self.names))]
        for name, a, b in zip(self.names, state["prec"], mine):
            if a != b:
                raise ValueError("exmy.torch: load_state_dict: layer '%s' was %s, here it is %s" % (name, a, b))
        for i, name in enumerate(self.names):
            for kind in _KINDS:
                st = dict(state["layers"][name][kind])
                h = st["history"]
                st["history"] = h.numpy() if isinstance(h, torch.Tensor) else np.asarray(h, np.float32)
                self.engine.set_recipe_state(i, kind, st)
        self.step_index = int(state["step"])
        self._ran, self._opt_steps = False, 0
        self._begin()
        if self.attn_run:
            self.attn_run.sub = int(state.get("attn_sub", 0))

    def unpatch(self) -> None:
        """exmy.torch.unpatch(the model this patch was applied to)."""
        unpatch(self._model)

    def _optimizer_stepped(self) -> None:
        """After any optimizer's step: two steps of an optimizer while this
        patch's layers ran and step() was not called means a delayed recipe
        that never advances (its scale stays 1): warned once."""
        if not self._ran or self._warned:
            return
        self._opt_steps += 1
        if self._opt_steps >= 2:
            self._warned = True
            warnings.warn("exmy.torch: a patched model with delayed scaling ran through %d optimizer steps without "
                          "Patched.step(): its amax histories never roll and every scale stays %g; call p.step() "
                          "after each optimizer step" % (self._opt_steps, self.recipe_state(0, "input")["scale"]),
                          RuntimeWarning, stacklevel=3)


_watched: weakref.WeakSet[Patched] = weakref.WeakSet()  # live patches with delayed recipes (the step() warning)
_opt_hook: List[Any] = []


def _after_optimizer_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    for p in list(_watched):
        p._optimizer_stepped()


def _watch(p: Patched) -> None:
    _watched.add(p)
    if not _opt_hook:
        _opt_hook.append(register_optimizer_step_post_hook(_after_optimizer_step))


def _fqn_filter(filter_fn: FilterSpec) -> Optional[ModuleFilter]:
    """filter_fn as a callable (module, fqn) -> bool: a callable as it is
    (torchao's module_filter_fn), a glob or a list of globs on the name."""
    if filter_fn is None or callable(filter_fn):
        return filter_fn
    globs = [filter_fn] if isinstance(filter_fn, str) else list(filter_fn)
    if not globs or not all(isinstance(g, str) for g in globs):
        raise TypeError("exmy.torch.patch: filter_fn must be a callable (module, fqn) -> bool, a glob or a list of "
                        "globs")
    return lambda mod, fqn: any(fnmatch.fnmatchcase(fqn, g) for g in globs)


def _linears(model: torch.nn.Module,
             keep: Optional[ModuleFilter]) -> List[Tuple[str, torch.nn.Linear, torch.nn.Module, str]]:
    """(name, module, parent, attr) of every nn.Linear called as a module
    that keep(module, name) accepts, in registration order (depth first:
    the order `first`, `last` and indices refer to).  nn.MultiheadAttention's
    out_proj is read, not called: left as it is.  A subclass that overrides
    forward is refused (its forward would be lost); one that does not is
    patched."""
    out: List[Tuple[str, torch.nn.Linear, torch.nn.Module, str]] = []
    skip: List[str] = []
    for name, mod in model.named_modules():
        if any(name.startswith(s + ".") for s in skip):
            continue
        if isinstance(mod, torch.nn.MultiheadAttention):
            skip.append(name)
        elif isinstance(mod, ExmyLinear):
            raise ValueError("exmy.torch.patch: layer '%s' is already patched (by a patch of another module): "
                             "unpatch that first" % name)
        elif isinstance(mod, torch.nn.Linear):
            if keep is not None and not keep(mod, name):
                continue
            if type(mod).forward is not torch.nn.Linear.forward:
                raise ValueError("exmy.torch.patch: layer '%s' is a %s, an nn.Linear subclass with its own "
                                 "forward, which patching would drop: leave it out with filter_fn" %
                                 (name, type(mod).__name__))
            parent_name, _, attr = name.rpartition(".")
            out.append((name, mod, model.get_submodule(parent_name) if parent_name else model, attr))
    return out


class _AttnEnter:
    """The patched model's forward pre-hook (patch(attn=...)): picklable."""

    def __init__(self, patched: Patched) -> None:
        self.patched = patched

    def __call__(self, mod: torch.nn.Module, args: Tuple[Any, ...]) -> None:
        if self.patched.attn_run is not None:  # always: these hooks are patch(attn=...)'s
            _attention.enter(self.patched.attn_run)


class _AttnLeave(_AttnEnter):
    def __call__(self, mod: torch.nn.Module, args: Tuple[Any, ...], out: Any = None) -> None:
        if self.patched.attn_run is not None:
            _attention.leave(self.patched.attn_run)


def _hook_attention(model: torch.nn.Module, p: Patched) -> None:
    """While model's forward runs on a thread, the SDPA calls made on that
    thread go through p's attention run (a forward pre-hook installs, a
    post-hook that runs even when the forward raises restores)."""
    model.register_forward_pre_hook(_AttnEnter(p))
    model.register_forward_hook(_AttnLeave(p), always_call=True)


def _fp8_weight_grad(w: torch.Tensor) -> None:
    """MS-AMP O1 as the engine's optimizer does it (experiments/optim.c): the
    weight gradient to e4m3fn with a per-tensor power-of-two current scale
    (rne, saturating), laid out 1 x n, and back."""
    g = w.grad
    q = _tensor.scale(np.ascontiguousarray(g.detach().float().reshape(-1).numpy()), "current:pow2", "e4m3fn",
                      saturate="finite")
    g.copy_(torch.from_numpy(q.dequant().reshape(g.shape)))


def _hook_fp8_grad(w: torch.Tensor) -> None:
    """_fp8_weight_grad on w once (weights shared by layers too): registered
    at the forward, so a copied or unpickled model (PyTorch does not keep
    tensor hooks there) has it as well."""
    hooks = getattr(w, "_post_accumulate_grad_hooks", None) or {}
    if not any(h is _fp8_weight_grad for h in hooks.values()):
        w.register_post_accumulate_grad_hook(_fp8_weight_grad)


def unpatch(model: _M) -> _M:
    """Undo patch(model): every ExmyLinear goes back to the nn.Linear (or
    subclass) it replaced, with the same weight and bias Parameters; the
    attention hooks and MS-AMP's gradient hooks are removed.  Returns the
    model.  ValueError when model is not patched."""
    p = getattr(model, "_exmy", None)
    if not isinstance(p, Patched):
        raise ValueError("exmy.torch.unpatch: the model is not patched (no exmy.torch.patch(model) on it)")
    for name, mod in list(model.named_modules()):
        if isinstance(mod, ExmyLinear) and mod._patched is p:
            parent_name, _, attr = name.rpartition(".")
            parent = model.get_submodule(parent_name) if parent_name else model
            if p.msamp:
                hooks = getattr(mod.weight, "_post_accumulate_grad_hooks", None) or {}
                for k in [k for k, h in hooks.items() if h is _fp8_weight_grad]:
                    del hooks[k]
            setattr(parent, attr, mod.unpatched())
    for hooks in (model._forward_pre_hooks, model._forward_hooks):
        for k in [k for k, h in hooks.items() if isinstance(h, _AttnEnter) and h.patched is p]:
            del hooks[k]
            getattr(model, "_forward_hooks_always_called", {}).pop(k, None)
    _watched.discard(p)
    del model._exmy
    return model


def patch(model: torch.nn.Module, prec: str = "hybrid", layer: Optional[Dict[Union[str, int], str]] = None,
          accum: Union[str, Dict[str, str], None] = None, seed: int = 0, threads: int = 0, stats_every: int = 0,
          out_dir: Optional[str] = None, attn: Optional[str] = None, msamp: int = 0,
          filter_fn: FilterSpec = None) -> Patched:
    """Swap every nn.Linear of model (in place) for an ExmyLinear whose fprop,
    dgrad and wgrad run through the engine with `exmy train`'s grammar:
    prec="PRESET[;key=value...]" (fp32 bf16 fp16 hybrid mxfp8 mxfp6 mxfp4
    nvfp4 or a format;
    fmt|round|sat|recipe[.input|.weight|.grad], accum[.fprop|.dgrad|.wgrad]),
    layer={NAME: prec} (NAME: first, last, an index, a module name or a
    glob), accum="MODEL" or {role: MODEL} (appended to prec), seed (keys
    stochastic rounding), stats_every and out_dir (stats.csv/stats.jsonl as
    the engine writes them), attn="PREC" (`exmy train`'s attn key: the
    torch.nn.functional.scaled_dot_product_attention calls made during the
    model's forward run their Q K^T and P V through exmy.torch.matmul's
    GEMMs; None: left to PyTorch), msamp=1 (`exmy train`'s msamp = 1, MS-AMP
    O1: the patched layers' weight gradients quantized to e4m3fn with a
    power-of-two per-tensor scale once backward has accumulated them),
    filter_fn (which layers: a callable (module, fqn) -> bool as torchao's
    module_filter_fn, a glob on the module name or a list of globs; None:
    all).  nn.Linear subclasses are patched unless they override forward
    (ValueError: leave them out with filter_fn).  A model already patched
    is unpatched first (a fresh engine; its scaling state is dropped).
    Returns a Patched; call .step() after each optimizer step.  Bad keys
    raise ValueError with the engine's message."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError("exmy.torch.patch: expected a torch.nn.Module, not %s" % type(model).__name__)
    if not isinstance(prec, str):
        raise TypeError("exmy.torch.patch: prec must be a str")
    if attn is not None and not isinstance(attn, str):
        raise TypeError("exmy.torch.patch: attn must be a str (a precision) or None")
    if msamp not in (0, 1) or isinstance(msamp, bool):
        raise ValueError("exmy.torch.patch: msamp=%r: 0 or 1 (O1, FP8 weight gradients; O2's FP8 optimizer state "
                         "belongs to the optimizer, which is PyTorch's here)" % (msamp,))
    keep = _fqn_filter(filter_fn)
    if isinstance(accum, str):
        prec += ";accum=" + accum
    elif isinstance(accum, dict):
        for role, model_text in accum.items():
            prec += ";accum.%s=%s" % (role, model_text)
    elif accum is not None:
        raise TypeError("exmy.torch.patch: accum must be a str or a dict {role: model}")
    keys = [("prec", prec), ("seed", str(int(seed))), ("threads", str(int(threads)))]
    if attn is not None:
        keys.append(("attn", attn))
    if layer:
        if not isinstance(layer, dict):
            raise TypeError("exmy.torch.patch: layer must be a dict {NAME: prec}")
        keys += [("layer." + str(k), v) for k, v in layer.items()]
    if isinstance(getattr(model, "_exmy", None), Patched):
        unpatch(model)
    found = _linears(model, keep)
    if not found and attn is None:
        raise ValueError("exmy.torch.patch: the model has no nn.Linear layers%s" %
                         (" that filter_fn selects" if keep is not None else ""))
    names = [n for n, _, _, _ in found]
    p = Patched(model, names, keys, int(stats_every), out_dir, attn, msamp)
    for i, (name, mod, parent, attr) in enumerate(found):
        setattr(parent, attr, ExmyLinear(mod, p, i, name))
    if attn is not None:
        _hook_attention(model, p)
    model._exmy = p
    return p
