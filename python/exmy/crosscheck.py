"""exmy.crosscheck: FP8 GEMMs through torch on the GPU (torch._scaled_mm:
cuBLASLt, hipBLASLt on ROCm) against exmy.gemm with the GPU's preset, bit
for bit (docs/gpu-crosscheck.md).

    python -m exmy.crosscheck [--quick] [--model MODEL] [--seed S] [--device N]

Per configuration (shape, operand formats, output type, fast accumulation,
input pattern): "N of M outputs equal" and the first differing element in
hex.  Inputs: normal (values near 1), wide (any finite code), stall (every
element 1/16: the tensor core stalls at 64), cancel (+x/-x pairs along k),
tiny (subnormals and the smallest normals), zeros (half the codes zero, a
zero row and column), nan (a few NaNs), saturate (the largest codes, FP8 D
saturating); per-tensor scales are powers of two (2^-2 .. 2^2) as tensors,
so the order cuBLASLt multiplies them in cannot matter.  Up to 64 x 64
outputs are compared in full, larger D on 16 sampled rows and columns (exmy
computes that sub-GEMM: an output depends only on its row and column).
"""
from __future__ import annotations

import argparse
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Optional, Sequence, TextIO, Tuple

import numpy as np

from . import _probe_c, _record
from ._arrays import Format, quantize, decode
from ._tensor import gemm

if TYPE_CHECKING:
    from ._arrays import FormatLike
    # (m, n, k, a, b, out, pattern, quick): CASES
    Case = Tuple[int, int, int, str, str, str, str, int]

TOOL = "crosscheck"
PATTERNS = ("normal", "wide", "stall", "cancel", "tiny", "zeros", "nan", "saturate")
OUTS = {"f32": "float32", "bf16": "bfloat16", "e4m3fn": "float8_e4m3fn"}
FP8 = {"e4m3fn": "float8_e4m3fn", "e5m2": "float8_e5m2", "e4m3fnuz": "float8_e4m3fnuz",
       "e5m2fnuz": "float8_e5m2fnuz"}

# (m, n, k, a, b, out, pattern, quick)
CASES = [
    (16, 16, 16, "e4m3fn", "e4m3fn", "f32", "normal", 1),
    (64, 48, 128, "e4m3fn", "e4m3fn", "f32", "wide", 1),
    (64, 64, 512, "e4m3fn", "e5m2", "f32", "normal", 1),
    (64, 64, 512, "e5m2", "e4m3fn", "bf16", "normal", 1),
    (32, 32, 256, "e4m3fn", "e4m3fn", "e4m3fn", "normal", 1),
    (16, 16, 4096, "e4m3fn", "e4m3fn", "f32", "stall", 1),
    (64, 64, 1024, "e4m3fn", "e4m3fn", "f32", "cancel", 1),
    (32, 32, 256, "e4m3fn", "e4m3fn", "f32", "tiny", 1),
    (32, 32, 256, "e5m2", "e4m3fn", "f32", "tiny", 1),
    (48, 32, 512, "e4m3fn", "e4m3fn", "f32", "zeros", 1),
    (32, 32, 256, "e4m3fn", "e5m2", "f32", "nan", 1),
    (32, 32, 256, "e4m3fn", "e4m3fn", "e4m3fn", "saturate", 1),
    (16, 16, 16384, "e4m3fn", "e4m3fn", "f32", "normal", 1),
    (256, 256, 1024, "e4m3fn", "e4m3fn", "f32", "normal", 0),
    (1024, 1024, 4096, "e4m3fn", "e4m3fn", "bf16", "wide", 0),
    (4096, 4096, 4096, "e4m3fn", "e4m3fn", "f32", "normal", 0),
    (2048, 2048, 8192, "e4m3fn", "e5m2", "bf16", "normal", 0),
    (128, 128, 16384, "e4m3fn", "e4m3fn", "f32", "stall", 0),
    (16, 4096, 16384, "e5m2", "e4m3fn", "f32", "cancel", 0),
    (512, 512, 2048, "e4m3fn", "e4m3fn", "e4m3fn", "wide", 0),
    (256, 256, 16384, "e4m3fn", "e4m3fn", "f32", "tiny", 0),
]


def operand(fmt: FormatLike, pattern: str, rows: int, cols: int, k_axis: int, rng: np.random.Generator) -> np.ndarray:
    """Codes (rows x cols, uint8) of fmt for one operand; k runs along
    k_axis (1: columns, A; 0: rows, B)."""
    f = Format(fmt)
    if pattern == "stall":
        return np.full((rows, cols), quantize(np.float32(1 / 16), f), np.uint8)
    if pattern == "wide" or pattern == "saturate":
        c: np.ndarray = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        if pattern == "saturate":  # the top binade of either sign
            c = (c & 0x80) | (f._f.max_mag - (c & 0x7)).astype(np.uint8)
        v = decode(c, f)
        bad = ~np.isfinite(v)
        c[bad] = quantize(np.ones(int(bad.sum()), np.float32), f)
        return c
    if pattern == "tiny":  # subnormals and the smallest normals, either sign
        c = (rng.integers(0, 2, (rows, cols)) << 7) | rng.integers(0, 2 << f.mbits, (rows, cols))
        return _no_fnuz_nan(c.astype(np.uint8), f)
    e = rng.integers(-3, 4, (rows, cols))
    x = (1 + rng.integers(0, 1024, (rows, cols)) / 1024) * 2.0 ** e * np.where(rng.integers(0, 2, (rows, cols)), -1, 1)
    c = quantize(x.astype(np.float32), f)
    if pattern == "zeros":
        c[rng.integers(0, 2, (rows, cols)) == 0] = 0
        if k_axis == 1:
            c[0, :] = 0
        else:
            c[:, 0] = 0
    if pattern == "nan":
        c[rng.integers(0, 997, (rows, cols)) == 0] = f._f.nan_code
    return _no_fnuz_nan(c, f) if pattern != "nan" else c


def _no_fnuz_nan(c: np.ndarray, f: Format) -> np.ndarray:
    """-0's code is NaN in the fnuz formats: make it +0."""
    if f._f.nan_code == f._f.sign_mask:
        c[c == f._f.sign_mask] = 0
    return c


def make_case(case: Case, rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray, float, float, float]:
    m, n, k, fa, fb, out, pat, _ = case
    A = operand(fa, pat, m, k, 1, rng)
    B = operand(fb, "normal" if pat == "cancel" else pat, k, n, 0, rng)
    if pat == "cancel":  # A's odd k negates the even one, B repeats it: the pairs of products cancel
        A[:, 1::2] = _no_fnuz_nan(A[:, 0::2] ^ np.uint8(Format(fa)._f.sign_mask), Format(fa))
        B[1::2, :] = B[0::2, :]
    sa, sb = (2.0 ** int(rng.integers(-2, 3)) for _ in range(2))
    scale_d = 0.5 if out == "e4m3fn" else 1.0
    return A, B, sa, sb, scale_d


def _bits(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[x.dtype.itemsize])


def _nan_mask(bits: np.ndarray, out: str) -> np.ndarray:
    if out == "f32":
        return np.isnan(bits.view(np.float32))
    return np.isnan(decode(bits, Format(out)))


def compare(dev: np.ndarray, ref: np.ndarray, out: str, rows: np.ndarray,
            cols: np.ndarray) -> Tuple[int, int, Optional[str]]:
    """(equal, total, first difference as text or None); NaN equals NaN (their
    payloads differ by design: docs/gemm.md)."""
    d, r = _bits(dev), _bits(ref)
    eq = (d == r) | (_nan_mask(d, out) & _nan_mask(r, out))
    first = None
    bad = np.argwhere(~eq)
    if bad.size:
        i, j = bad[0]
        w = d.dtype.itemsize * 2
        first = "D[%d, %d]: GPU 0x%0*x, exmy 0x%0*x" % (rows[i], cols[j], w, int(d[i, j]), w, int(r[i, j]))
    return int(eq.sum()), int(eq.size), first


def run_case(case: Case, model: str, fast: int, torch: ModuleType, device: str, scaled_mm: Callable[..., Any],
             rng: np.random.Generator) -> Dict[str, Any]:
    """One configuration: the device GEMM, exmy on the compared outputs.
    Returns a record row."""
    m, n, k, fa, fb, out, pat, _ = case
    A, B, sa, sb, scale_d = make_case(case, rng)
    t = torch
    tA = t.from_numpy(A).view(getattr(t, FP8[fa])).to(device)          # m x k, row-major
    tBt = t.from_numpy(np.ascontiguousarray(B.T)).view(getattr(t, FP8[fb])).to(device)
    tB = tBt.t()                                                       # k x n, column-major
    kw = dict(scale_a=t.tensor(sa, dtype=t.float32, device=device), scale_b=t.tensor(sb, dtype=t.float32,
                                                                                      device=device),
              out_dtype=getattr(t, OUTS[out]), use_fast_accum=bool(fast))
    if out == "e4m3fn":
        kw["scale_result"] = t.tensor(scale_d, dtype=t.float32, device=device)
    config = "%d x %d x %d %s x %s -> %s %s%s" % (m, n, k, fa, fb, out, pat, " fastacc" if fast else "")
    row = dict(config=config, model=model, m=m, n=n, k=k, a=fa, b=fb, out=out, pattern=pat, fast_accum=bool(fast),
               scale_a=sa, scale_b=sb, scale_d=scale_d)
    try:
        D = scaled_mm(tA, tB, **kw)
    except Exception as e:  # this device cannot run it (reported, counted as not run)
        row.update(error="device: %s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
        return row
    D = D.cpu().contiguous().view({1: t.uint8, 2: t.int16, 4: t.int32}[D.element_size()]).numpy()
    rows = np.arange(m) if m <= 64 else np.sort(rng.choice(m, 16, replace=False))
    cols = np.arange(n) if n <= 64 else np.sort(rng.choice(n, 16, replace=False))
    Ds = D[np.ix_(rows, cols)]
    As, Bs = A[rows, :], np.ascontiguousarray(B[:, cols])
    W = gemm(decode(As, fa), decode(Bs, fb), accum=model, scaling="none", format_a=fa, format_b=fb,
             out_format=out, alpha=sa * sb, scale_d=scale_d, out_saturate="finite" if out == "e4m3fn" else False)
    eq, total, first = compare(Ds, W, out, rows, cols)
    row.update(equal=eq, outputs=total, first_difference=first)
    return row


def check(cases: Iterable[Case], torch: ModuleType, device: str = "cuda",
          scaled_mm: Optional[Callable[..., Any]] = None, model: Optional[str] = None, sm: Optional[int] = None,
          seed: int = 1, file: Optional[TextIO] = None) -> List[Dict[str, Any]]:
    """Every case with fast accumulation off and on: a list of record rows.
    model: the accumulation model for both settings, else exmy's preset of
    the NVIDIA GPU of capability sm (exmy_gpu_model_for_sm)."""
    p = lambda *a: print(*a, file=file or sys.stdout)
    scaled_mm = scaled_mm or torch._scaled_mm
    rng = np.random.default_rng(seed)
    rows = []
    for fast in (0, 1):
        mt = model or (_probe_c.model_for_sm(sm, bool(fast)) if sm else None)
        if not mt:
            raise ValueError("no exmy preset for this device (sm %s): pass --model (python -m exmy.probe names the "
                             "one that matches)" % sm)
        for case in cases:
            r = run_case(case, mt, fast, torch, device, scaled_mm, rng)
            rows.append(r)
            if r.get("error"):
                p("%-52s | %s" % (r["config"], r["error"]))
            else:
                p("%-52s | %-18s %d of %d outputs equal%s" % (r["config"], mt, r["equal"], r["outputs"],
                                                              "; first differs: " + r["first_difference"]
                                                              if r["first_difference"] else ""))
    return rows


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m exmy.crosscheck",
        description="Random and adversarial FP8 GEMMs through torch._scaled_mm on the GPU against exmy.gemm with "
                    "the GPU's preset (sm_89 tc:ada, sm_90 tc:hopper / tc:hopper-fastacc, sm_100+ tc:blackwell), "
                    "bit for bit: 'N of M outputs equal' per configuration and the first differing element in "
                    "hex; writes a JSON + markdown record for docs/gpu-crosscheck.md. Exit 0 when every output "
                    "is equal, 1 otherwise, 77 without a GPU, 2 on bad arguments.")
    ap.add_argument("--quick", action="store_true", help="the small configurations only")
    ap.add_argument("--model", help="accumulation model for both fast-accumulation settings (exmy gemm --help); "
                                    "needed on ROCm")
    ap.add_argument("--seed", type=int, default=1, help="input generator seed (default 1)")
    ap.add_argument("--device", type=int, default=0, help="CUDA/ROCm device (default 0)")
    ap.add_argument("--out", default=".", metavar="DIR", help="where the record goes (default .)")
    ap.add_argument("--no-record", action="store_true", help="write no record")
    args = ap.parse_args(argv)
    if args.model:
        from ._lib import Accum, lib, errbuf, ERRLEN, text
        import ctypes
        err = errbuf()
        if lib.exmy_accum_parse(text(args.model, "model"), ctypes.byref(Accum()), err, ERRLEN):
            _record.die(TOOL, "--model: %s" % err.value.decode())
    torch = _record.gpu_or_skip(TOOL, device=args.device)
    env = _record.environment(torch, args.device)
    print("exmy.crosscheck: " + _record.env_line(env))
    cap = torch.cuda.get_device_capability(args.device)
    rocm = bool(getattr(torch.version, "hip", None))
    if not rocm and cap < (8, 9):
        _record.skip(TOOL, "this GPU (sm_%d%d) has no FP8 tensor cores (sm_89 or newer)" % cap)
    if rocm and not args.model:
        _record.die(TOOL, "ROCm: exmy has no preset of this device by name: pass --model (python -m exmy.probe "
                          "names the one that matches)")
    cases = [c for c in CASES if c[7] or not args.quick]
    if rocm and "gfx94" in (getattr(torch.cuda.get_device_properties(args.device), "gcnArchName", "") or ""):
        fnuz = {"e4m3fn": "e4m3fnuz", "e5m2": "e5m2fnuz"}
        cases = [(m, n, k, fnuz[a], fnuz[b], o if o != "e4m3fn" else "bf16", p, q) for m, n, k, a, b, o, p, q in cases]
    rows = check(cases, torch, "cuda:%d" % args.device, model=args.model, sm=cap[0] * 10 + cap[1], seed=args.seed)
    bad = sum(1 for r in rows if r.get("error") or r["equal"] != r["outputs"])
    print("exmy.crosscheck: %s" % ("%d of %d configurations differ or did not run" % (bad, len(rows)) if bad
                                   else "every output equal in all %d configurations" % len(rows)))
    if not args.no_record:
        _record.save(TOOL, sys.argv[1:] if argv is None else argv, env, "crosscheck", rows, args.out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
