#!/usr/bin/env python3
"""bench/python.py: what the Python layer costs, as ratios against anchors
measured in the same run (docs/python.md):

  1. exmy.quantize on 2^24 float32 elements vs the bare exmy_quantize call
     (ctypes, preallocated output: the C function's own time): C / Python,
     goal >= 0.9;
  2. a patched nn.Linear's forward + backward (exmy.torch.patch) vs the same
     engine calls made directly on numpy buffers: overhead, goal <= 10%;
  3. one training step of a small transformer patched with prec="hybrid"
     (and with attn="hybrid" too) vs the same model in plain PyTorch (fp32):
     the emulation's price.

Run from the build tree: EXMY_LIB=.libs/libexmy.so
EXMY_XP_LIB=python/.libs/exmy_xp.so PYTHONPATH=python python3 bench/python.py
(make bench-python sets these).  Anchor and measured call alternate; the ratio is the median of the per-pair
ratios (the load of a shared machine drifts)."""
import argparse
import ctypes
import os
import sys
import statistics
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import exmy  # noqa: E402
from exmy import _lib  # noqa: E402


def paired(anchor, fn, reps):
    """Median times of anchor and fn, run alternately (a pair per rep), and
    the median of the per-pair ratios anchor/fn: on a shared machine the load
    drifts, and a pair sees about the same load."""
    anchor(), fn()  # warm up (page faults, OpenMP threads)
    ta, tf, ratios = [], [], []
    for _ in range(reps):
        t0 = time.perf_counter()
        anchor()
        t1 = time.perf_counter()
        fn()
        t2 = time.perf_counter()
        ta.append(t1 - t0)
        tf.append(t2 - t1)
        ratios.append((t1 - t0) / (t2 - t1))
    return statistics.median(ta), statistics.median(tf), statistics.median(ratios)


def bench_quantize(reps):
    n = 1 << 24
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    f = exmy.Format("e4m3fn")
    r = exmy.rounding("rne", "finite")
    out = np.empty(n, np.uint8)
    fl = ctypes.c_uint(0)
    err = _lib.errbuf()
    fp, rp = ctypes.byref(f._f), ctypes.byref(r)
    xp, op = ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(out.ctypes.data)

    def c_call():
        if _lib.lib.exmy_quantize(fp, rp, 0, xp, n, 0, op, ctypes.byref(fl), err, 512):
            raise RuntimeError(err.value)
    t_c, t_py, r_py = paired(c_call, lambda: exmy.quantize(x, f, saturate="finite"), reps)
    out2 = np.empty(n, np.uint8)
    _, t_py_out, r_out = paired(c_call, lambda: exmy.quantize(x, f, saturate="finite", out=out2), reps)
    rs = exmy.rounding("sr", "finite", seed=1)
    rsp = ctypes.byref(rs)
    t_c_sr, t_py_sr, r_sr = paired(lambda: _lib.lib.exmy_quantize(fp, rsp, 0, xp, n, 0, op, ctypes.byref(fl), err, 512),
                                   lambda: exmy.quantize(x, f, round="sr", seed=1, saturate="finite"), reps)
    print("quantize 2^24 float32 -> e4m3fn rne: C call %.2f ms, exmy.quantize %.2f ms: C/Python %.3f; "
          "with out= (no new array) %.2f ms: C/Python %.3f" % (1e3 * t_c, 1e3 * t_py, r_py, 1e3 * t_py_out, r_out))
    print("quantize 2^24 float32 -> e4m3fn sr:  C call %.2f ms, exmy.quantize %.2f ms: C/Python %.3f" %
          (1e3 * t_c_sr, 1e3 * t_py_sr, r_sr))


def bench_patch(reps):
    import torch
    import exmy.torch as et
    from exmy._xp import Engine
    T, n_in, n_out = 512, 512, 512
    torch.manual_seed(0)
    lin = torch.nn.Linear(n_in, n_out, bias=False)
    model = torch.nn.Sequential(lin)
    et.patch(model, prec="hybrid")
    x = torch.randn(T, n_in, requires_grad=True)
    dy = torch.randn(T, n_out)

    def patched():
        lin.weight.grad = None
        x.grad = None
        model(x).backward(dy)
    eng = Engine(["0"], [("prec", "hybrid")])
    eng.begin_step(0, 0)
    xn, wn, dyn = x.detach().numpy().copy(), lin.weight.detach().numpy().copy(), dy.numpy().copy()
    y, dw, dx = np.empty((T, n_out), np.float32), np.empty_like(wn), np.empty_like(xn)

    def direct():
        eng.forward(0, xn, wn, y)
        eng.backward(0, dyn, xn, wn, dw, dx)
    t_d, t_p, r = paired(direct, patched, reps)
    print("patched Linear %dx%d, T=%d, fprop+dgrad+wgrad (hybrid): engine calls %.2f ms, patched %.2f ms: "
          "overhead %+.1f%%" % (n_out, n_in, T, 1e3 * t_d, 1e3 * t_p, 100 * (1 / r - 1)))


def bench_transformer(reps):
    import torch
    import exmy.torch as et
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))
    from test_torch import TinyGPT
    idx = torch.randint(0, 32, (8, 32), generator=torch.Generator().manual_seed(1))

    def stepper(model, p):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

        def step():
            loss = torch.nn.functional.cross_entropy(model(idx).reshape(-1, 32), idx.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if p:
                p.step()
        return step
    def model(**patch_kw):
        torch.manual_seed(0)
        m = TinyGPT(d=128)
        return m, (et.patch(m, **patch_kw) if patch_kw else None)
    plain = model()
    t_plain, t_patch, r = paired(stepper(*plain), stepper(*model(prec="hybrid")), reps)
    print("small transformer (2 layers, d=128, 8x32 tokens) training step: PyTorch fp32 %.2f ms, patched hybrid "
          "%.2f ms: patched/plain %.1f" % (1e3 * t_plain, 1e3 * t_patch, 1 / r))
    t_plain, t_attn, r = paired(stepper(*plain), stepper(*model(prec="hybrid", attn="hybrid")), reps)
    print("  the same with attn=\"hybrid\" (SDPA's two matmuls through exmy too): PyTorch fp32 %.2f ms, patched "
          "%.2f ms: patched/plain %.1f" % (1e3 * t_plain, 1e3 * t_attn, 1 / r))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=21)
    a = ap.parse_args()
    print("libexmy %s (%s), OMP_NUM_THREADS=%s, %d cores" % (exmy.__version__, exmy.lib_path,
                                                              os.environ.get("OMP_NUM_THREADS", "default"),
                                                              os.cpu_count()))
    bench_quantize(a.reps)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch not installed: the patch figures are skipped")
        return
    bench_patch(a.reps)
    bench_transformer(a.reps)


if __name__ == "__main__":
    main()
