"""_torchio.py: what exmy.torch's modules share about tensors: the CPU-only
check (a tensor elsewhere is refused, never moved), zero-copy numpy views
of CPU float tensors, and the exact values of float8 tensors."""
from __future__ import annotations

import numpy as np
import torch

from . import _arrays

_NP_OF = {torch.float32: np.float32, torch.float64: np.float64, torch.float16: np.float16}


def _cpu(t: torch.Tensor, what: str = "tensor") -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError("exmy.torch: expected a torch.Tensor, not %s" % type(t).__name__)
    if t.device.type != "cpu":
        raise ValueError("exmy.torch: the %s is on %s; exmy emulates on the CPU: move it with .cpu() first" %
                         (what, t.device))
    return t


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    """A zero-copy numpy view of a contiguous CPU float tensor; a float8
    tensor holds values in its own format: their exact float32 values
    (decoded by exmy, every float8 value fits binary32)."""
    t = _cpu(t).detach()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.element_size() == 1 and t.dtype.is_floating_point:
        name = str(t.dtype).partition(".")[2]
        if name not in _arrays.DTYPE_FORMATS:
            raise TypeError("exmy.torch: dtype %s has no exmy format" % t.dtype)
        return _arrays.values(t.view(torch.uint8).numpy(), _arrays.Format(name), np.float32)
    if t.dtype == torch.bfloat16:
        if _arrays.ml_dtypes is None:
            raise TypeError("exmy.torch: bfloat16 tensors need ml_dtypes (pip install ml_dtypes)")
        return t.view(torch.int16).numpy().view(_arrays.ml_dtypes.bfloat16)
    if t.dtype not in _NP_OF:
        raise TypeError("exmy.torch: dtype %s is not a float input (float32, float64, float16, bfloat16, float8)" %
                        t.dtype)
    return t.numpy()
