"""exmy: bit-exact FP8 / ExMy numerics on numpy arrays (and PyTorch tensors:
exmy.torch), over libexmy.  docs/python.md."""
from __future__ import annotations

from types import ModuleType

from ._lib import lib as _libexmy, lib_path
from ._arrays import Format, Flags, quantize, decode, cast, rounding
from ._tensor import Recipe, RecipeState, QTensor, scale, stats, whatif, gemm
from ._mma import mma, mma_names, mma_info

__version__ = _libexmy.exmy_version().decode()

__all__ = ["Format", "Flags", "quantize", "decode", "cast", "Recipe", "RecipeState", "QTensor", "scale", "stats",
           "whatif", "gemm", "mma", "mma_names", "mma_info", "lib_path", "__version__"]


def __getattr__(name: str) -> ModuleType:
    """exmy.torch on first use (`import exmy; exmy.torch.patch(...)`): it
    imports torch, which plain numpy users need not have."""
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError("module 'exmy' has no attribute '%s'" % name)
