"""fake_scaled_mm.py: stand-ins for torch._scaled_mm and torch.mm on CPU
tensors, for the tests of exmy.probe's torch engines and exmy.crosscheck
without a GPU.  They take the same arguments and refuse what cuBLASLt's FP8
GEMM refuses (row-major A, column-major B, m, n, k multiples of 16, scales
as float32 tensors, not both operands e5m2, out_dtype given), and their
arithmetic is exmy's model (exmy.gemm) with the given presets."""
import numpy as np
import torch

import exmy

FP8 = {torch.float8_e4m3fn: "e4m3fn", torch.float8_e5m2: "e5m2"}
OUT = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float8_e4m3fn: "e4m3fn"}
CODES = {1: torch.uint8, 2: torch.uint16, 4: torch.uint32}


def _scalar(t, what):
    if not isinstance(t, torch.Tensor) or t.dtype != torch.float32 or t.numel() != 1:
        raise RuntimeError("_scaled_mm: %s must be a float32 tensor of one element (tensorwise scaling), not %r"
                           % (what, t))
    return float(t.reshape(()).item())


def _result(d, out_dtype):
    d = np.ascontiguousarray(d)
    if d.dtype == np.float32:
        return torch.from_numpy(d).to(out_dtype)
    return torch.from_numpy(d.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[d.dtype.itemsize])).view(out_dtype)


def make_scaled_mm(model, model_fast):
    """A fake torch._scaled_mm: model without use_fast_accum, model_fast with."""
    calls = []

    def scaled_mm(a, b, scale_a, scale_b, bias=None, scale_result=None, out_dtype=None, use_fast_accum=False):
        if a.dtype not in FP8 or b.dtype not in FP8:
            raise RuntimeError("_scaled_mm: operands must be float8_e4m3fn or float8_e5m2, not %s, %s"
                               % (a.dtype, b.dtype))
        if a.dtype == torch.float8_e5m2 and b.dtype == torch.float8_e5m2:
            raise RuntimeError("_scaled_mm: e5m2 x e5m2 is not supported")
        if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
            raise RuntimeError("_scaled_mm: shapes %s and %s" % (tuple(a.shape), tuple(b.shape)))
        m, k = a.shape
        n = b.shape[1]
        if m % 16 or n % 16 or k % 16:
            raise RuntimeError("_scaled_mm: m, n, k must be multiples of 16, not %d, %d, %d" % (m, n, k))
        if a.stride() != (k, 1):
            raise RuntimeError("_scaled_mm: A must be row-major (stride %s)" % (a.stride(),))
        if b.stride() != (1, k):
            raise RuntimeError("_scaled_mm: B must be column-major (stride %s)" % (b.stride(),))
        if bias is not None:
            raise RuntimeError("_scaled_mm: the fake takes no bias")
        if out_dtype not in OUT:
            raise RuntimeError("_scaled_mm: out_dtype %s" % out_dtype)
        sa, sb = _scalar(scale_a, "scale_a"), _scalar(scale_b, "scale_b")
        sd = _scalar(scale_result, "scale_result") if scale_result is not None else 1.0
        fa, fb, fo = FP8[a.dtype], FP8[b.dtype], OUT[out_dtype]
        A = exmy.decode(a.contiguous().view(torch.uint8).numpy(), fa)
        B = exmy.decode(b.t().contiguous().view(torch.uint8).numpy(), fb).T.copy()
        calls.append((m, n, k, fa, fb, fo, bool(use_fast_accum)))
        d = exmy.gemm(A, B, accum=model_fast if use_fast_accum else model, scaling="none", format_a=fa,
                      format_b=fb, out_format=fo, alpha=sa * sb, scale_d=sd,
                      out_saturate="finite" if fo == "e4m3fn" else False)
        return _result(d, out_dtype)

    scaled_mm.calls = calls
    return scaled_mm


def make_mm(model):
    """A fake torch.mm for bf16 / fp16 operands (out_dtype float32, or the
    operands' type as torch.mm gives), and float32 ones as tf32 (only while
    torch.backends.cuda.matmul.allow_tf32 is set, as cuBLAS)."""
    names = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "tf32"}

    def mm(a, b, out_dtype=None):
        if a.dtype != b.dtype or a.dtype not in names:
            raise RuntimeError("mm: bf16, fp16 or float32 operands of one type, not %s, %s" % (a.dtype, b.dtype))
        if a.dtype == torch.float32 and not torch.backends.cuda.matmul.allow_tf32:
            raise RuntimeError("mm: the fake does float32 only as tf32 (allow_tf32 is off)")
        out = out_dtype or a.dtype
        A = a.to(torch.float32).numpy()
        B = b.to(torch.float32).contiguous().numpy()
        d = exmy.gemm(A, B, accum=model, scaling="none", fmt=names[a.dtype], out_format=OUT[out])
        return _result(d, out)

    return mm
