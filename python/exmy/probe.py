"""exmy.probe: what accumulation a matrix unit does, read off crafted dot
products, and which exmy preset it is bit for bit (docs/gpu-crosscheck.md).

    python -m exmy.probe                      # every torch engine this GPU has
    python -m exmy.probe --engine scaled_mm --a e4m3fn --b e5m2
    python -m exmy.probe --engine model:tc:hopper   # exmy's own model, no GPU

The library's probe (kernels/probe.c, exmy_probe_run) asks the questions on
the CPU; an engine answers them.  An engine is any Python callable

    engine(a, b, fa, fb) -> out

a, b: numpy uint8 arrays, count x k, the codes of the operand formats fa, fb
(exmy.Format; exmy.decode(a, fa) gives the values, exact in float32); out:
count values, out[i] = the engine's sum over l of a[i, l] * b[i, l],
accumulated from +0, as float32 (a numpy array, a list, or a torch tensor on
any device; float16/bfloat16 are widened exactly, float64 is rounded).  The
optional attributes engine.name (str) and engine.k_max (the longest k it
takes, default 16384) are read.  So a Triton or custom kernel is probed by
wrapping it in such a function: exmy.probe.run(engine=my_dot).
"""
from __future__ import annotations

import argparse
import ctypes
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, TextIO, Union

import numpy as np

from . import _lib, _probe_c, _record
from ._lib import lib
from ._arrays import Format, as_format

if TYPE_CHECKING:
    from ._arrays import FormatLike
    from ._probe_torch import TorchEngine
    # an engine: engine(a, b, fa, fb) -> count float values (see the module's doc)
    DotEngine = Callable[[np.ndarray, np.ndarray, Format, Format], Any]

K_MAX = 16384
TOOL = "probe"


class ModelEngine:
    """exmy's own `tc` model (exmy_probe_model_dot: each dot product a 1 x k x 1
    exmy_gemm with f32 D) as an engine: the probe recovers its parameters."""

    def __init__(self, accum: str) -> None:
        self.accum_text = accum
        self._acc = _lib.Accum()
        err = _lib.errbuf()
        _lib.check(lib.exmy_accum_parse(_lib.text(accum, "accum"), ctypes.byref(self._acc), err, _lib.ERRLEN), err)
        self.name = "model:" + accum
        self.k_max = K_MAX

    def __call__(self, a: np.ndarray, b: np.ndarray, fa: Format, fb: Format) -> np.ndarray:
        count, k = a.shape
        a, b = np.ascontiguousarray(a, np.uint8), np.ascontiguousarray(b, np.uint8)
        out = np.empty(count, np.float32)
        err = _lib.errbuf()
        u8 = ctypes.POINTER(ctypes.c_uint8)
        _lib.check(lib.exmy_probe_model_dot(ctypes.byref(self._acc), ctypes.byref(fa._f), ctypes.byref(fb._f), k,
                                            count, a.ctypes.data_as(u8), b.ctypes.data_as(u8),
                                            out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), err, _lib.ERRLEN),
                   err)
        return out


def _as_f32(out: Any, count: int, name: str) -> np.ndarray:
    if hasattr(out, "detach"):  # a torch tensor, on any device
        out = out.detach().cpu()
        if str(out.dtype) in ("torch.bfloat16", "torch.float16"):
            out = out.float()
        out = out.numpy()
    out = np.asarray(out)
    if out.dtype.kind != "f" and out.dtype.kind != "V":
        raise TypeError("engine %s returned %s values, not floats" % (name, out.dtype))
    out = out.astype(np.float32).reshape(-1)
    if out.size != count:
        raise ValueError("engine %s returned %d values for %d dot products" % (name, out.size, count))
    return out


def _callback(engine: DotEngine, fa: Format, fb: Format, name: str, box: List[BaseException]) -> Any:
    """The exmy_probe_dot_fn that calls engine; an exception becomes the
    probe's error (and is kept in box to be raised again)."""
    def dot(ctx: Optional[int], pfa: Any, pfb: Any, k: int, count: int, pa: Any, pb: Any, pout: Any, err: Any,
            errlen: int) -> int:
        try:
            a = np.ctypeslib.as_array(pa, (count * k,)).reshape(count, k).copy()
            b = np.ctypeslib.as_array(pb, (count * k,)).reshape(count, k).copy()
            out = _as_f32(engine(a, b, fa, fb), count, name)
            ctypes.memmove(pout, out.ctypes.data, 4 * count)
            return 0
        except BaseException as e:  # never let an exception cross the C frames
            box.append(e)
            msg = ("engine %s: %s: %s" % (name, type(e).__name__, e)).encode("utf-8", "replace")[:errlen - 1]
            ctypes.memmove(err, msg + b"\0", len(msg) + 1)
            return -1
    return _probe_c.DotFn(dot)


def _side(v: int) -> str:
    return {1: "nearest even", 0: "truncated"}.get(v, "?")


def run(engine: DotEngine, a: FormatLike = "e4m3fn", b: FormatLike = "e4m3fn", name: Optional[str] = None,
        k_max: Optional[int] = None) -> Dict[str, Any]:
    """Probe engine (see the module's doc) with operand formats a x b.
    Returns a dict: the inferred parameters (g, f, align_rne, out, norm_rne,
    promote, promote_seen, ...), accum (the model text, "" when incomplete),
    notes, match (the presets it is bit for bit, [] when none), nearest and
    differences (the nearest preset and where the result differs from it)."""
    if not callable(engine):
        raise TypeError("exmy.probe.run: engine must be callable (engine(a, b, fa, fb) -> out), not %s"
                        % type(engine).__name__)
    fa, fb = as_format(a), as_format(b)
    name = name or getattr(engine, "name", None) or getattr(engine, "__name__", None) or type(engine).__name__
    kmax = int(k_max) if k_max else int(getattr(engine, "k_max", K_MAX))
    box: List[BaseException] = []
    cb = _callback(engine, fa, fb, name, box)
    eng = _probe_c.ProbeEngine(name.encode(), cb, None, kmax)
    res = _probe_c.ProbeResult()
    err = _lib.errbuf()
    rc = lib.exmy_probe_run(ctypes.byref(eng), ctypes.byref(fa._f), ctypes.byref(fb._f), None, ctypes.byref(res),
                            err, _lib.ERRLEN)
    if rc:
        if box:
            raise box[0]
        _lib.check(rc, err, RuntimeError)
    match, nearest, diff = (ctypes.create_string_buffer(512) for _ in range(3))
    lib.exmy_probe_match(ctypes.byref(res), match, 512, nearest, 512, diff, 512)
    out = {f[0]: getattr(res, f[0]) for f in _probe_c.ProbeResult._fields_}
    out["accum"] = res.accum.decode() if res.complete else ""
    out["notes"] = res.notes.decode()
    out.update(engine=name, a=fa.name, b=fb.name, k_max=kmax, match=match.value.decode().split(),
               nearest=nearest.value.decode(), differences=diff.value.decode())
    return out


def report(r: Mapping[str, Any], file: Optional[TextIO] = None) -> None:
    """Print a result of run() as `exmy gpu-probe` does, and its preset."""
    p = lambda *a: print(*a, file=file or sys.stdout)
    p("engine:           %s, %s x %s" % (r["engine"], r["a"], r["b"]))
    p("products exact:   %s (%d pairs, %d not exact; subnormal operands %s)" % (
        "yes" if r["products_exact"] else "no", r["pairs"], r["pairs_inexact"],
        "exact" if r["subnormals_exact"] else "NOT exact"))
    p("NaN operand:      %s (0x%08x)" % ("NaN" if r["nan_seen"] else "not NaN", r["nan_bits"]))
    p("group g:          %d" % r["g"])
    p("alignment f:      %d bits, %s, exponent %s, negative terms toward %s" % (
        r["f"], _side(r["align_rne"]), {1: "ea+eb", 0: "renormalized"}.get(r["nominal_exp"], "?"),
        {1: "zero", 0: "-inf"}.get(r["neg_toward_zero"], "?")))
    p("output:           %d fraction bits, %s" % (r["out"], _side(r["norm_rne"])))
    p("promotion:        %s" % ({1: "every %d of k" % r["promote"], 0: "none"}.get(r["promote_seen"],
                                                                                 "not observable")))
    p("confirm:          %d random dot products, %d differ from the inferred model" % (
        r["confirm_dots"], r["confirm_mismatches"]))
    if r["notes"]:
        p("notes:            %s" % r["notes"])
    p("model:            %s" % (r["accum"] or "(incomplete)"))
    if r["match"]:
        p("preset:           %s (bit for bit)" % " ".join(r["match"]))
    else:
        p("preset:           no preset matches; nearest %s, differs in: %s" % (r["nearest"], r["differences"]))


def _engine_for(spec: str, torch: Optional[ModuleType], device: str) -> Union[ModelEngine, TorchEngine]:
    if spec.startswith("model:"):
        return ModelEngine(spec[6:])
    from ._probe_torch import TorchEngine
    return TorchEngine(spec, device=device, torch=torch)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m exmy.probe",
        description="Infer the accumulation of a GPU's matrix units through torch (torch._scaled_mm with and "
                    "without fast accumulation per FP8 operand pair, bf16/fp16 matmul with fp32 and 16-bit "
                    "outputs, tf32) from crafted dot products, name the exmy preset it matches bit for bit, and "
                    "write a JSON + markdown record for docs/gpu-crosscheck.md. Exit 0 when every probe ran and "
                    "matched a preset (16-bit-output engines are information only), 1 otherwise, 77 without a "
                    "GPU, 2 on bad arguments.")
    ap.add_argument("--engine", action="append", metavar="ENGINE",
                    help="scaled_mm, scaled_mm-fastacc, mm-bf16, mm-fp16, mm-bf16-out16, mm-fp16-out16, mm-tf32, "
                         "or model:MODEL (exmy's CPU model, no GPU needed); repeatable; default: every engine "
                         "this device has, FP8 ones for each operand pair")
    ap.add_argument("--a", default=None, metavar="FORMAT", help="A's FP8 format (default e4m3fn)")
    ap.add_argument("--b", default=None, metavar="FORMAT", help="B's FP8 format (default e4m3fn)")
    ap.add_argument("--device", type=int, default=0, help="CUDA/ROCm device (default 0)")
    ap.add_argument("--out", default=".", metavar="DIR", help="where the record goes (default .)")
    ap.add_argument("--no-record", action="store_true", help="write no record")
    args = ap.parse_args(argv)
    for opt, v in (("--a", args.a), ("--b", args.b)):
        if v is not None:
            try:
                f = Format(v)
            except ValueError as e:
                _record.die(TOOL, "%s: %s" % (opt, e))
            if f.bits > 8:
                _record.die(TOOL, "%s %s: the probe takes formats of at most 8 bits (e4m3fn, e5m2, ...)" % (opt, v))
    specs = args.engine or []
    gpu = not specs or any(not s.startswith("model:") for s in specs)
    torch = _record.gpu_or_skip(TOOL, device=args.device) if gpu else None
    device = "cuda:%d" % args.device
    if specs:
        plan = [(s, args.a or "e4m3fn", args.b or "e4m3fn") for s in specs]
    else:
        from ._probe_torch import default_engines
        assert torch is not None  # no --engine: every engine is torch's, so gpu_or_skip ran
        plan = [(k, args.a or a, args.b or b) for k, a, b in default_engines(torch, args.device)]
    env = _record.environment(torch, args.device) if torch else _record.environment()
    print("exmy.probe: " + _record.env_line(env))
    results: List[Dict[str, Any]] = []
    bad = 0
    for spec, a, b in plan:
        try:
            eng = _engine_for(spec, torch, device)
        except ValueError as e:
            _record.die(TOOL, "--engine: %s" % e)
        print()
        why = eng.unavailable(Format(a), Format(b)) if not specs and hasattr(eng, "unavailable") else None
        if why:  # not on this device or in this torch: said, recorded, not counted
            print("engine %s, %s x %s: not available here: %s" % (eng.name, a, b, why))
            results.append(dict(engine=eng.name, a=a, b=b, error="not available here: " + why))
            continue
        try:
            r = run(eng, a, b)
        except Exception as e:  # one engine failing (not supported here) does not stop the others
            print("engine %s, %s x %s: failed: %s: %s" % (eng.name, a, b, type(e).__name__, e))
            results.append(dict(engine=eng.name, a=a, b=b, error="%s: %s" % (type(e).__name__, e)))
            bad += 1
            continue
        report(r)
        results.append(r)
        from ._probe_torch import TorchEngine
        bad += not r["match"] and spec not in TorchEngine.INFO_ONLY
    if not args.no_record:
        _record.save(TOOL, sys.argv[1:] if argv is None else argv, env, "probe", results, args.out, lead="\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
