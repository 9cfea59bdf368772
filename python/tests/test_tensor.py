"""exmy.scale, stats, whatif and gemm against `exmy quantize-tensor`, `exmy
whatif --json` and `exmy gemm`, bit for bit: every recipe kind, stochastic
rounding, every accumulation model, transposes, C, alpha/beta, FP8 D."""
import json
import re

import numpy as np

import exmy
from harness import run, TempDir, rng, same_bits

RECIPES = [("none", "e4m3fn"), ("current", "e4m3fn"), ("current:pow2", "e5m2"), ("current:row", "e4m3fn"),
           ("delayed:len=4", "e4m3fn"), ("block:1x128", "e4m3fn"), ("block:128x128,deepgemm", "e4m3fn"),
           ("mx", "e4m3fn"), ("mx:col", "e5m2"), ("mx:ocp", "e2m1fn"), ("nvfp4", "e2m1fn"), ("current:exact", "e3m4")]


def _x(rows, cols, salt, spread=6):
    r = rng(salt)
    x = r.standard_normal((rows, cols)) * 2.0 ** r.integers(-spread, spread, (rows, 1))
    x[0, :3] = [0.0, -0.0, 1e-30]
    return x.astype(np.float32)


def test_scale_equals_quantize_tensor():
    td = TempDir()
    x = _x(130, 256, 1)
    np.save(td("x.npy"), x)
    for i, (rec, fmt) in enumerate(RECIPES):
        mode = ["rne", "sr"][i % 2]
        opts = ["--round", mode, "--seed", str(40 + i), "--stream", str(i)]
        run(["quantize-tensor", "--in", td("x.npy"), "--format", fmt, "--scaling", rec, "--out", td("q.npy"),
             "--scales", td("s.npy"), "--dequant", td("d.npy")] + opts)
        q = exmy.scale(x, rec, fmt, round=mode, seed=40 + i, stream=i)
        what = "scale %s %s %s" % (rec, fmt, mode)
        same_bits(q.codes, np.load(td("q.npy")), x, what + " codes")
        s = np.load(td("s.npy"))
        same_bits(q.scale_codes if q.scale_codes is not None else q.scale_inv, s, None, what + " scales")
        same_bits(q.dequant(), np.load(td("d.npy")), x, what + " dequant")
        assert q.layout["srows"] * q.layout["scols"] == s.size
    # float64 input: rounded to float32 first, as the command reads it
    np.save(td("x64.npy"), x.astype(np.float64) * (1 + 2.0 ** -40))
    run(["quantize-tensor", "--in", td("x64.npy"), "--format", "e4m3fn", "--scaling", "current", "--out", td("q.npy")])
    same_bits(exmy.scale(np.load(td("x64.npy")), "current").codes, np.load(td("q.npy")), None, "float64 input")


def test_stats_equal_quantize_tensor():
    td = TempDir()
    x = _x(64, 256, 2, spread=12)
    np.save(td("x.npy"), x)
    for rec, fmt in [("current", "e4m3fn"), ("block:1x128", "e4m3fn"), ("mx", "e5m2"), ("none", "e4m3fn")]:
        _, out, _ = run(["quantize-tensor", "--in", td("x.npy"), "--format", fmt, "--scaling", rec, "--stats"])
        s = exmy.stats(x, fmt, rec)
        lines = dict(re.split(r"\s{2,}", l.strip(), maxsplit=1) for l in out.splitlines()[1:10])
        assert lines["elements"] == "%d (nonzero %d)" % (s["n"], s["n_nonzero"]), lines
        assert lines["mse"] == "%.6g" % s["mse"], (lines["mse"], s["mse"])
        assert lines["cosine"] == "%.9f" % s["cosine"]
        assert lines["snr"] == "%.3f dB" % s["snr_db"]
        assert lines["underflow"] == "%.4f %%" % s["underflow_pct"]
        hist = {int(m.group(1)): int(m.group(2)) for m in re.finditer(r"^\s+2\^(-?\d+)\s+(\d+)", out, re.M)}
        assert hist == s["hist"], (rec, fmt)


def test_whatif_equals_cli():
    td = TempDir()
    run(["gen", "--out", td("a.npy"), "--shape", "64x256", "--seed", "3"])
    x = np.load(td("a.npy"))
    fm, rc = ["e4m3fn", "e5m2", "e3m4"], ["current", "block:1x128", "mx"]
    _, out, _ = run(["whatif", "--in", td("a.npy"), "--formats", ",".join(fm), "--scaling", ",".join(rc), "--json"])
    want = json.loads(out)
    got = exmy.whatif(x, fm, rc)
    assert len(got) == len(want) == 9
    for g, w in zip(got, want):
        assert (g["format"], g["scaling"]) == (w["format"], w["scaling"])
        for k in ("underflow_pct", "overflow_pct", "mse", "snr_db", "max_rel_err", "amin", "amax"):
            assert "%.9g" % g[k] == "%.9g" % w[k], (w["format"], w["scaling"], k, g[k], w[k])
        assert "%.12g" % g["cosine"] == "%.12g" % w["cosine"]


ACCUMS = ["exact", "fp32", "fp32:pairwise", "acc=bf16", "acc=f16,round=sr,seed=5", "acc=e5m10,round=rtz",
          "chunk=32,inner=acc=bf16", "tc", "tc:hopper-fastacc", "tc:ada", "tc:ada-fastacc", "tc:blackwell",
          "tc:hopper-bf16", "tc:ampere-bf16", "tc:g=8,f=20,align=rne,out=23,norm=rne,promote=64"]


def test_gemm_equals_cli_every_model():
    td = TempDir()
    a, b = _x(24, 160, 3), _x(160, 20, 4)
    np.save(td("a.npy"), a)
    np.save(td("b.npy"), b)
    for acc in ACCUMS:
        run(["gemm", "--a", td("a.npy"), "--b", td("b.npy"), "--accum", acc, "--out", td("d.npy")])
        same_bits(exmy.gemm(a, b, accum=acc), np.load(td("d.npy")), None, "gemm --accum " + acc)


def test_gemm_equals_cli_options():
    td = TempDir()
    a, b, c = _x(160, 24, 5), _x(20, 160, 6), _x(24, 20, 7)
    for n, arr in (("a", a), ("b", b), ("c", c)):
        np.save(td(n + ".npy"), arr)
    cases = [
        (["--trans-a", "--trans-b", "--scaling", "current"], dict(trans_a=True, trans_b=True)),
        (["--trans-a", "--trans-b", "--c", td("c.npy"), "--alpha", "0.5", "--beta", "-2", "--scale-c", "0.25"],
         dict(trans_a=True, trans_b=True, c=c, alpha=0.5, beta=-2, scale_c=0.25)),
        (["--trans-a", "--trans-b", "--format-a", "e5m2", "--format-b", "e4m3fn", "--round", "sr", "--seed", "9",
          "--accum", "tc:hopper"],
         dict(trans_a=True, trans_b=True, format_a="e5m2", format_b="e4m3fn", round="sr", seed=9, accum="tc:hopper")),
        (["--trans-a", "--trans-b", "--out-format", "e4m3fn", "--out-saturate", "--scale-d", "3", "--c", td("c.npy")],
         dict(trans_a=True, trans_b=True, out_format="e4m3fn", out_saturate=True, scale_d=3, c=c)),
        (["--trans-a", "--trans-b", "--out-format", "bf16", "--out-round", "rtz", "--scaling", "none",
          "--format", "e5m2"],
         dict(trans_a=True, trans_b=True, out_format="bf16", out_round="rtz", scaling="none", fmt="e5m2")),
    ]
    for opts, kw in cases:
        run(["gemm", "--a", td("a.npy"), "--b", td("b.npy"), "--out", td("d.npy")] + opts)
        same_bits(exmy.gemm(a, b, **kw), np.load(td("d.npy")), None, "gemm " + " ".join(opts))
    # block-scaled operands: A along rows of k, B stored n x k (the TN layout)
    a2, b2 = _x(24, 256, 8), _x(20, 256, 9)
    np.save(td("a2.npy"), a2)
    np.save(td("b2.npy"), b2)
    for ra, rb, fmt, acc in [("block:1x128", "block:128x128", "e4m3fn", "fp32"), ("mx", "mx", "e4m3fn", "tc:blackwell"),
                             ("nvfp4", "nvfp4", "e2m1fn", "exact")]:
        run(["gemm", "--a", td("a2.npy"), "--b", td("b2.npy"), "--trans-b", "--scaling-a", ra, "--scaling-b", rb,
             "--format", fmt, "--accum", acc, "--out", td("d.npy")])
        d = exmy.gemm(a2, b2, trans_b=True, scaling_a=ra, scaling_b=rb, fmt=fmt, accum=acc)
        same_bits(d, np.load(td("d.npy")), None, "gemm %s x %s %s" % (ra, rb, acc))
    # QTensor operands give the same D as arrays
    qa, qb = exmy.scale(a2, "block:1x128"), exmy.scale(b2, "block:128x128")
    same_bits(exmy.gemm(qa, qb, trans_b=True), exmy.gemm(a2, b2, trans_b=True, scaling_a="block:1x128",
                                                          scaling_b="block:128x128"), None, "QTensor operands")


def test_delayed_state():
    """A RecipeState carries TE's delayed scaling across calls: step 0 uses
    scale 1; after step() the scale is fmax / max(history)."""
    rec = exmy.Recipe("delayed:len=3")
    st = rec.state()
    assert rec.has_state and st.scale == 1.0 and st.steps == 0
    amaxes = []
    for s in range(5):
        x = _x(16, 64, 20 + s)
        q = exmy.scale(x, rec, "e4m3fn", state=st)
        want_scale = 1.0 if s == 0 else np.float32(448) / np.float32(max(amaxes[-3:]))
        assert q.scale[0, 0] == np.float32(want_scale), (s, q.scale[0, 0], want_scale)
        amaxes.append(np.float32(np.max(np.abs(x))))
        st.step()
        assert st.steps == s + 1
    assert not exmy.Recipe("current").has_state


def test_state_freed_after_module_teardown():
    """A RecipeState freed while the interpreter tears its modules down (their
    globals set to None) frees its C state without "Exception ignored": the
    finalizer holds what it calls."""
    import subprocess
    import sys
    code = ("import sys, exmy\n"
            "st = exmy.RecipeState('delayed:len=2')\n"
            "sys.modules['exmy._tensor'].lib = None\n"
            "del st\n"
            "print('done')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "done", (r.returncode, r.stdout, r.stderr)
    assert "Exception ignored" not in r.stderr, r.stderr
