"""_probe_torch.py: probe engines that answer the probe's dot products on a
GPU through torch (docs/gpu-crosscheck.md, "The Python route").

Each dot product of a batch is one diagonal element of a GEMM: rows i of A
(count x k) and of B^T, in blocks of up to BLOCK dot products (a 256 x 256
GEMM per block), padded with zero rows to a multiple of 16 (cuBLASLt's FP8
GEMM wants m, n, k multiples of 16).  The probe's k is a multiple of 32.

Engines (NAME, what runs):
  scaled_mm          torch._scaled_mm, FP8 operands, fp32 out (cuBLASLt / hipBLASLt)
  scaled_mm-fastacc  the same with use_fast_accum=True
  mm-bf16, mm-fp16   torch.mm of bf16 / fp16 operands with out_dtype=float32
  mm-bf16-out16      torch.mm of bf16 operands, bf16 out (torch's default)
  mm-fp16-out16      torch.mm of fp16 operands, fp16 out; A is scaled by 2^-4 so
                     e4m3 products stay inside fp16's range, the answers by 2^4
  mm-tf32            torch.mm of float32 operands with TF32 allowed (sm_80+)
FP8 codes become 16-bit and tf32 operands exactly (every e4m3/e5m2 value is
a bf16, fp16 and tf32 value), so the probe's questions stay the same.
"""
from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

import numpy as np

if TYPE_CHECKING:
    from torch import Tensor

    from ._arrays import Format

BLOCK = 256
K_MAX = 16384
FP8_NAMES = {"e4m3fn": "float8_e4m3fn", "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz",
             "e5m2fnuz": "float8_e5m2fnuz"}
_F16_PRESCALE = 4


def _pad16(n: int) -> int:
    return (n + 15) // 16 * 16


class TorchEngine:
    """A probe engine (exmy.probe.run's engine=): engine(a, b, fa, fb) ->
    count float32 values, a and b uint8 codes (count x k).

    kind: one of KINDS; device: a torch device ("cuda:0"); scaled_mm: the
    function called for the FP8 kinds (torch._scaled_mm; the tests pass one
    that runs on CPU tensors with exmy's model as its arithmetic); mm: the
    same for the 16-bit and tf32 kinds (torch.mm)."""

    KINDS = ("scaled_mm", "scaled_mm-fastacc", "mm-bf16", "mm-fp16", "mm-bf16-out16", "mm-fp16-out16", "mm-tf32")
    # engines whose answers pass through a 16-bit output: no preset models that
    INFO_ONLY = ("mm-bf16-out16", "mm-fp16-out16")

    def __init__(self, kind: str, device: str = "cuda", torch: Optional[ModuleType] = None,
                 scaled_mm: Optional[Callable[..., Any]] = None, mm: Optional[Callable[..., Any]] = None) -> None:
        if torch is None:
            import torch as _torch
            torch = _torch
        if kind not in self.KINDS:
            raise ValueError("exmy.probe: bad engine '%s' (accepted: %s, model:MODEL)" % (kind, ", ".join(self.KINDS)))
        self.torch, self.kind, self.device = torch, kind, torch.device(device)
        self.name = "torch:" + kind
        self.k_max = K_MAX
        self.scaled_mm: Any = scaled_mm or getattr(torch, "_scaled_mm", None)  # None: this torch has none
        self.mm = mm or torch.mm

    def _fp8(self, codes: np.ndarray, fmt: Format) -> Tensor:
        t = self.torch
        if fmt.name not in FP8_NAMES:
            raise ValueError("exmy.probe: %s: operands must be one of %s, not %s" % (self.name, ", ".join(FP8_NAMES),
                                                                                      fmt.name))
        return t.from_numpy(np.ascontiguousarray(codes)).view(getattr(t, FP8_NAMES[fmt.name]))

    def _block(self, a: np.ndarray, b: np.ndarray, fa: Format, fb: Format) -> np.ndarray:
        """One GEMM of up to BLOCK dot products: its diagonal as float32."""
        t = self.torch
        count, k = a.shape
        rows = _pad16(count)
        if rows != count:
            z = np.zeros((rows - count, k), np.uint8)
            a, b = np.concatenate([a, z]), np.concatenate([b, z])
        A = self._fp8(a, fa).to(self.device)                 # rows x k, row-major
        Bt = self._fp8(b, fb).to(self.device)                # rows x k, row-major ...
        B = Bt.t()                                           # ... so B = Bt^T is k x rows, column-major
        if self.kind.startswith("scaled_mm"):
            one = t.ones((), dtype=t.float32, device=self.device)
            D = self.scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=t.float32,
                               use_fast_accum=self.kind.endswith("fastacc"))
        else:
            wide = {"mm-bf16": t.bfloat16, "mm-fp16": t.float16, "mm-bf16-out16": t.bfloat16,
                    "mm-fp16-out16": t.float16, "mm-tf32": t.float32}[self.kind]
            Aw, Bw = A.to(t.float32), B.to(t.float32)        # exact: FP8 values are float32 values
            if self.kind == "mm-fp16-out16":
                Aw = Aw * 2.0 ** -_F16_PRESCALE              # exact, a power of two
            Aw, Bw = Aw.to(wide), Bw.to(wide)                # exact (see the module's comment)
            if self.kind == "mm-tf32":
                old = t.backends.cuda.matmul.allow_tf32
                t.backends.cuda.matmul.allow_tf32 = True
                try:
                    D = self.mm(Aw, Bw)
                finally:
                    t.backends.cuda.matmul.allow_tf32 = old
            elif self.kind in ("mm-bf16", "mm-fp16"):
                D = self.mm(Aw, Bw, out_dtype=t.float32)
            else:
                D = self.mm(Aw, Bw)
            D = D.to(t.float32)                              # exact widening
            if self.kind == "mm-fp16-out16":
                D = D * 2.0 ** _F16_PRESCALE
        return D.diagonal()[:count].cpu().numpy().astype(np.float32)

    def unavailable(self, fa: Format, fb: Format) -> Optional[str]:
        """None when this engine runs here (one small GEMM of zeros tried),
        else why not (this torch has no mm out_dtype, no FP8 on this device)."""
        z = np.zeros((16, 32), np.uint8)
        try:
            self._block(z, z, fa, fb)
        except Exception as e:  # the library or the device said no
            return "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0])
        return None

    def __call__(self, a: np.ndarray, b: np.ndarray, fa: Format, fb: Format) -> np.ndarray:
        out = np.empty(a.shape[0], np.float32)
        for s in range(0, a.shape[0], BLOCK):
            out[s:s + BLOCK] = self._block(a[s:s + BLOCK], b[s:s + BLOCK], fa, fb)
        return out


def default_engines(torch: ModuleType, device: int) -> List[Tuple[str, str, str]]:
    """(kind, a, b) of every probe the device can run by default: the FP8
    GEMM per operand pair (sm_89+ or ROCm), the 16-bit GEMMs, tf32 (sm_80+)."""
    cap = torch.cuda.get_device_capability(device)
    rocm = bool(getattr(torch.version, "hip", None))
    # MI300 (gfx94x) has the fnuz FP8 formats, later AMD and NVIDIA the OCP ones
    arch = getattr(torch.cuda.get_device_properties(device), "gcnArchName", "") or ""
    e4, e5 = ("e4m3fnuz", "e5m2fnuz") if rocm and "gfx94" in arch else ("e4m3fn", "e5m2")
    out = []
    if rocm or cap >= (8, 9):
        for kind in ("scaled_mm", "scaled_mm-fastacc"):
            for a, b in ((e4, e4), (e4, e5), (e5, e4)):
                out.append((kind, a, b))
    for kind in ("mm-bf16", "mm-fp16", "mm-bf16-out16", "mm-fp16-out16"):
        out.append((kind, "e4m3fn", "e4m3fn"))
    if rocm or cap >= (8, 0):
        out.append(("mm-tf32", "e4m3fn", "e4m3fn"))
    return out
