"""_attention.py: attention's batched matmuls through exmy (exmy.torch.matmul
and patch(attn=...)).

matmul(a, b, prec) runs C = A B for every batch index as the training
engine runs attention's two products (`exmy train`'s `attn` key,
experiments/gpt.c): one xp_matmul_batch call (exmy_gemm_batch) with the
attn precision, the forward as fprop with both operands of kind input, the
backward's dA = dC B^T as dgrad and dB = A^T dC as wgrad with dC of kind
grad.  Each operand is handed over in the layout it is stored in (a
transposed view goes with the GEMM's trans flag, as the engine's K in
S = Q K^T), and each gradient is computed in its operand's stored layout,
so S = Q K^T's dK is dS^T Q: the engine's own product.

patch(attn=...) reroutes torch.nn.functional.scaled_dot_product_attention
while the patched model's forward runs on the calling thread (below)."""
from __future__ import annotations

import math
import threading
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

import numpy as np
import torch
import torch.nn.functional as F

from ._torchio import _cpu

if TYPE_CHECKING:
    from ._xp import Engine, Operand

_INPUT, _GRAD = "input", "grad"


class _Run:
    """Where a matmul's GEMMs run: an engine (its attn precision, seed and
    step) and the problem index that keys stochastic rounding, advanced by
    each call so two calls of a step never share a stream."""

    def __init__(self, engine: Engine, sub: int = 0) -> None:
        self.engine, self.sub = engine, sub

    def take(self, count: int) -> int:
        s = self.sub
        self.sub += count
        return s


def _stored(t: torch.Tensor) -> Tuple[np.ndarray, int]:
    """(float32 C-contiguous numpy array as stored, trans) of a batch of
    matrices t (count x rows x cols): a transposed view (or one closer to
    column-major) is stored as its transpose with trans set."""
    t = t.detach()
    if t.dtype != torch.float32:
        t = t.float()
    if t.is_contiguous():
        return t.numpy(), 0
    if t.mT.is_contiguous() or t.stride(-2) < t.stride(-1):
        return t.mT.contiguous().numpy(), 1
    return t.contiguous().numpy(), 0


def _batch3(t: torch.Tensor, batch: Sequence[int], count: int) -> torch.Tensor:
    """t broadcast to batch and flattened to count matrices; a transposed
    view stays one (K^T of heads split from a qkv projection is K stored
    and read transposed, the engine's layout, not a copy of K^T)."""
    r, c = t.shape[-2:]
    t = t.expand(*batch, r, c)
    if t.stride(-2) < t.stride(-1):
        return t.mT.reshape(count, c, r).mT
    return t.reshape(count, r, c)


def _flip(op: Operand) -> Operand:
    """The same stored operand used transposed."""
    return op[0], 1 - op[1], op[2]


def _gemms(run: _Run, sub: int, role: str, a: Operand, b: Operand, m: int, n: int) -> torch.Tensor:
    """count x m x n float32 tensor: op(a) op(b) through the engine; a and
    b are (kind, trans, stored array)."""
    d = np.empty((a[2].shape[0], m, n), np.float32)
    run.engine.matmul_batch(role, a, b, d, sub)
    return torch.from_numpy(d)


class _MatmulFn(torch.autograd.Function):
    """C (count x m x n) = A (count x m x k) B (count x k n) through the engine."""

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, run: _Run) -> torch.Tensor:
        an, ta = _stored(a)
        bn, tb = _stored(b)
        count, m, n = a.shape[0], a.shape[1], b.shape[2]
        sub = run.take(count)
        c = _gemms(run, sub, "fprop", (_INPUT, ta, an), (_INPUT, tb, bn), m, n)
        ctx.run, ctx.sub, ctx.trans = run, sub, (ta, tb)
        ctx.dtypes = (a.dtype, b.dtype)
        ctx.save_for_backward(torch.from_numpy(an), torch.from_numpy(bn))
        return c.to(_result_dtype(a, b))

    @staticmethod
    @torch.autograd.function.once_differentiable  # the emulated products have no second derivative here
    def backward(ctx: Any, dc: torch.Tensor) -> Tuple[Optional[torch.Tensor], Optional[torch.Tensor], None]:
        an, bn = (t.numpy() for t in ctx.saved_tensors)
        (ta, tb), run, sub = ctx.trans, ctx.run, ctx.sub
        A, B = (_INPUT, ta, an), (_INPUT, tb, bn)
        G = (_GRAD, 0, np.ascontiguousarray(_cpu(dc, "gradient").detach().float().numpy()))
        m, n = G[2].shape[1], G[2].shape[2]
        k = bn.shape[2] if tb else bn.shape[1]
        ga = gb = None
        if ctx.needs_input_grad[0]:  # dA = dC B^T (m x k), or stored transposed: dA^T = B dC^T
            ga = (_gemms(run, sub, "dgrad", B, _flip(G), k, m).mT if ta else
                  _gemms(run, sub, "dgrad", G, _flip(B), m, k)).to(ctx.dtypes[0])
        if ctx.needs_input_grad[1]:  # dB = A^T dC (k x n), or stored transposed: dB^T = dC^T A
            gb = (_gemms(run, sub, "wgrad", _flip(G), A, n, k).mT if tb else
                  _gemms(run, sub, "wgrad", _flip(A), G, k, n)).to(ctx.dtypes[1])
        return ga, gb, None


_WIDE = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _float_ok(dt: torch.dtype) -> bool:
    """float32/64/16, bfloat16, or a float8 type (its values widen to float32 exactly)."""
    return dt in _WIDE or dt.is_floating_point and dt.itemsize == 1 and str(dt).startswith("torch.float8_")


def _result_dtype(a: torch.Tensor, b: torch.Tensor) -> torch.dtype:
    """torch.matmul's result type; float8 operands give float32 (a float8 result would round again)."""
    if a.dtype not in _WIDE or b.dtype not in _WIDE:
        return torch.float32
    return torch.promote_types(a.dtype, b.dtype)


def _check(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    for t, name in ((a, "first operand"), (b, "second operand")):
        _cpu(t, "%s of %s" % (name, what))
        if not _float_ok(t.dtype):
            raise TypeError("%s: the %s is %s, not a float tensor (float32, float64, float16, bfloat16, float8)" %
                            (what, name, t.dtype))
        if t.dim() < 2:
            raise ValueError("%s: the %s is %d-D; matrices (..., rows, cols) are needed" % (what, name, t.dim()))


def _matmul(a: torch.Tensor, b: torch.Tensor, run: _Run, what: str = "exmy.torch.matmul") -> torch.Tensor:
    """a @ b through run (a _Run)."""
    _check(a, b, what)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError("%s: A is %s and B is %s: A's columns (%d) are not B's rows (%d)" %
                         (what, tuple(a.shape), tuple(b.shape), a.shape[-1], b.shape[-2]))
    try:
        batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise ValueError("%s: the batch shapes %s and %s do not broadcast" %
                         (what, tuple(a.shape[:-2]), tuple(b.shape[:-2]))) from None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    count = math.prod(batch)
    a3, b3 = _batch3(a, batch, count), _batch3(b, batch, count)
    if count == 0 or m == 0 or n == 0 or k == 0:  # empty, or empty sums (+0): no GEMM to run
        return torch.matmul(a3.float(), b3.float()).to(_result_dtype(a, b)).reshape(*batch, m, n)
    return _MatmulFn.apply(a3, b3, run).reshape(*batch, m, n)


def matmul(a: torch.Tensor, b: torch.Tensor, prec: str = "fp32", seed: int = 0, step: int = 0) -> torch.Tensor:
    """A @ B for CPU tensors of matrices (..., m, k) x (..., k, n), the batch
    dimensions broadcast as torch.matmul's, through exmy's GEMM with `exmy
    train`'s attn precision prec ("fp32", "bf16", "hybrid",
    "e4m3fn;accum=tc:hopper", ...): per matrix, each operand is quantized
    with its tensor kind's format, rounding and recipe (kind input in the
    forward, the incoming gradient of kind grad in the backward) and the
    products are accumulated with the role's model (fprop; dgrad for A's
    gradient, wgrad for B's).  Differentiable.  seed and step key stochastic
    rounding as the engine's.  Bad prec text raises ValueError with the
    engine's message; tensors off the CPU ValueError."""
    from ._xp import Engine
    if not isinstance(prec, str):
        raise TypeError("exmy.torch.matmul: prec must be a str, not %s" % type(prec).__name__)
    _check(a, b, "exmy.torch.matmul")  # before the engine: a misplaced tensor is named first
    eng = Engine([], [("attn", prec), ("seed", str(int(seed)))])
    eng.begin_step(int(step), False)
    return _matmul(a, b, _Run(eng))


# ---- scaled_dot_product_attention inside a patched model's forward ------------

def sdpa(run: _Run, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
         attn_mask: Optional[torch.Tensor] = None, dropout_p: float = 0.0, is_causal: bool = False,
         scale: Optional[float] = None, enable_gqa: bool = False) -> torch.Tensor:
    """F.scaled_dot_product_attention as PyTorch's documented reference
    computes it, with S = Q K^T and O = P V through _MatmulFn: S * scale,
    the causal mask and attn_mask, softmax in float32; dropout refused."""
    what = "scaled_dot_product_attention in an exmy-patched model"
    if dropout_p > 0:
        raise ValueError("exmy.torch: %s: dropout_p=%g: attention dropout is not emulated (only dropout_p=0; "
                         "eval() or dropout=0 in the model)" % (what, dropout_p))
    if is_causal and attn_mask is not None:
        raise ValueError("exmy.torch: %s: is_causal and attn_mask are exclusive (as in PyTorch)" % what)
    L, S, E = query.size(-2), key.size(-2), query.size(-1)
    q, k, v = query.float(), key.float(), value.float()
    if enable_gqa:
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    s = _matmul(q, k.mT, run, what) * (1.0 / math.sqrt(E) if scale is None else scale)
    if is_causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask.float()
    p = torch.softmax(s, dim=-1)
    return _matmul(p, v, run, what).to(query.dtype)


_lock = threading.Lock()
_installed = 0                  # patched forwards running (all threads)
_original = F.scaled_dot_product_attention
_tls = threading.local()        # .runs: this thread's patched forwards, innermost last


def _dispatch(*args: Any, **kwargs: Any) -> torch.Tensor:
    runs = getattr(_tls, "runs", None)
    if not runs:
        return _original(*args, **kwargs)
    return sdpa(runs[-1], *args, **kwargs)


def enter(run: _Run) -> None:
    """A patched forward starts on this thread: its SDPA calls go to run."""
    global _installed
    with _lock:
        if _installed == 0:
            F.scaled_dot_product_attention = _dispatch
        _installed += 1
    if not hasattr(_tls, "runs"):
        _tls.runs = []
    _tls.runs.append(run)


def leave(run: _Run) -> None:
    """It ended (or raised): the last one out puts PyTorch's function back."""
    global _installed
    runs: List[_Run] = getattr(_tls, "runs", [])
    if run in runs:
        del runs[len(runs) - 1 - runs[::-1].index(run)]
    with _lock:
        _installed -= 1
        if _installed == 0 and F.scaled_dot_product_attention is _dispatch:
            F.scaled_dot_product_attention = _original
