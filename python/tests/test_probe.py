"""test_probe.py: exmy.probe and exmy.crosscheck without a GPU.

The probe's callback path (the library's exmy_probe_run asking, a Python
callable answering) with engines that stand in for hardware: exmy's own tc
model for every preset and random parameter sets (each recovered exactly
and named), mis-specified engines (no preset may match), the torch engines
and the cross-check up to the device call through a fake torch._scaled_mm /
torch.mm on CPU tensors whose arithmetic is exmy's model; the commands'
records; exit 77 without a GPU.  Seed: $EXMY_TEST_SEED."""
import json
import os
import re
import subprocess
import sys

import numpy as np

from harness import SEED, SkipTest, TempDir, rng

import exmy
from exmy import probe, crosscheck, _probe_c

PRESETS = ["tc:hopper", "tc:hopper-fastacc", "tc:ada", "tc:ada-fastacc", "tc:hopper-bf16", "tc:ampere-bf16",
           "tc:blackwell"]


def _torch():
    try:
        import torch
    except ImportError as e:
        raise SkipTest("torch is not importable: %s" % e)
    return torch


def _parse(text):
    """The tc parameters of a model text, as the probe reports them."""
    kv = dict(t.split("=") for t in text[3:].split(","))
    return (int(kv["g"]), int(kv["f"]), int(kv["align"] == "rne"), int(kv["out"]), int(kv["norm"] == "rne"),
            int(kv["promote"]))


def _expect(r, g, f, align, out, norm, promote, what):
    got = (r["g"], r["f"], r["align_rne"], r["out"], r["norm_rne"], r["promote"])
    assert r["complete"] and got == (g, f, align, out, norm, promote), \
        "%s: inferred g,f,align,out,norm,promote = %s, want %s (notes: %s)" % (
            what, got, (g, f, align, out, norm, promote), r["notes"])
    assert r["products_exact"] and r["confirm_dots"] == 64 and r["confirm_mismatches"] == 0, \
        "%s: products exact %d, confirm %d of %d differ" % (what, r["products_exact"], r["confirm_mismatches"],
                                                           r["confirm_dots"])


def test_the_library_lists_the_presets_the_test_knows():
    assert _probe_c.preset_names() == PRESETS, _probe_c.preset_names()


def test_every_preset_is_recovered_and_named_through_the_python_callback():
    pairs = [("e4m3fn", "e4m3fn")] * len(PRESETS) + [("e4m3fn", "e5m2"), ("e5m2", "e4m3fn")]
    for text, (a, b) in zip(PRESETS + ["tc:hopper", "tc:ada-fastacc"], pairs):
        r = probe.run(probe.ModelEngine(text), a, b)
        assert r["match"] == [text], "%s (%s x %s): matched %s, nearest %s: %s" % (
            text, a, b, r["match"], r["nearest"], r["differences"])
        assert r["differences"] == "" and r["nan_seen"] and r["subnormals_exact"], (text, r["differences"])


def test_random_parameter_sets_are_recovered_exactly():
    g_ = rng(35)
    for i in range(8):
        g = int(g_.choice([4, 8, 16, 32, 64]))
        f = int(g_.integers(10, 23))
        lg = (g - 1).bit_length() - 1
        out = int(g_.integers(8, min(23, f - 2 + lg) + 1))
        promote = int(g_.choice([p for p in (0, 64, 96, 128, 256) if not p or p >= g]))  # below g hides g
        text = "tc:g=%d,f=%d,align=%s,out=%d,norm=%s,promote=%d" % (
            g, f, "rne" if g_.integers(2) else "trunc", out, "rne" if g_.integers(2) else "trunc", promote)
        r = probe.run(probe.ModelEngine(text), "e5m2" if i % 4 == 3 else "e4m3fn", "e4m3fn")
        want = _parse(text)
        _expect(r, *want, what="%s (seed %d)" % (text, SEED))
        # named only when a preset has these very parameters
        assert r["match"] == [p for p in PRESETS if _parse(exmy_canon(p)) == want], (text, r["match"])


def exmy_canon(preset):
    """A preset's parameters as text, through the library's parser and printer."""
    import ctypes
    from exmy import _lib
    acc = _lib.Accum()
    err = _lib.errbuf()
    _lib.check(_lib.lib.exmy_accum_parse(preset.encode(), ctypes.byref(acc), err, _lib.ERRLEN), err)
    return "tc:g=%d,f=%d,align=%s,out=%d,norm=%s,promote=%d" % (
        acc.tc_group, acc.tc_frac, "rne" if acc.tc_align_rne else "trunc", acc.tc_out_frac,
        "rne" if acc.tc_norm_rne else "trunc", acc.chunk)


def test_a_misspecified_model_matches_no_preset_and_names_the_nearest():
    r = probe.run(probe.ModelEngine("tc:hopper,f=14"))
    assert r["match"] == [] and r["nearest"] == "tc:hopper" and r["differences"] == "f 14, preset 13", \
        (r["match"], r["nearest"], r["differences"])
    r = probe.run(probe.ModelEngine("tc:ada,promote=256"))
    assert r["match"] == [] and r["nearest"] == "tc:ada" and "promote 256, preset 128" in r["differences"], r


def test_an_fp32_engine_is_no_tensor_core():
    def fp32_dot(a, b, fa, fb):
        """Sequential fp32 fused multiply-add in numpy (every FP8 product is exact in fp32)."""
        x, y = exmy.decode(a, fa), exmy.decode(b, fb)
        acc = np.zeros(a.shape[0], np.float32)
        for l in range(a.shape[1]):
            acc = (acc + x[:, l] * y[:, l]).astype(np.float32)
        return acc
    fp32_dot.k_max = 4096
    r = probe.run(fp32_dot)
    assert not r["complete"] and r["match"] == [] and r["nearest"] and r["differences"], r
    out = _report(r)
    assert "no preset matches; nearest" in out, out


def test_an_engine_that_reorders_k_is_caught_by_the_confirmation():
    """Right parameters on crafted inputs, wrong order on random ones: the
    confirmation (random dot products against the inferred model) refuses it."""
    inner = probe.ModelEngine("tc:hopper")

    def reversed_k(a, b, fa, fb):
        if a.shape[0] == 64 and a.shape[1] == 1024:  # the confirmation's batch
            return inner(a[:, ::-1].copy(), b[:, ::-1].copy(), fa, fb)
        return inner(a, b, fa, fb)
    r = probe.run(reversed_k)
    assert r["confirm_mismatches"] > 0 and r["match"] == [], (r["confirm_mismatches"], r["match"])
    assert "confirm mismatches" in r["differences"], r["differences"]


def _report(r):
    import io
    s = io.StringIO()
    probe.report(r, s)
    return s.getvalue()


def test_engine_errors_come_back_as_python_exceptions():
    class Boom(Exception):
        pass

    def boom(a, b, fa, fb):
        raise Boom("the device fell over")
    try:
        probe.run(boom)
        raise AssertionError("no exception")
    except Boom as e:
        assert "fell over" in str(e)
    for bad, exc in ((lambda a, b, fa, fb: np.zeros(3, np.float32), ValueError),
                     (lambda a, b, fa, fb: np.zeros(a.shape[0], np.int32), TypeError)):
        try:
            probe.run(bad)
            raise AssertionError("no exception")
        except exc:
            pass
    try:
        probe.run("not callable")
        raise AssertionError("no exception")
    except TypeError:
        pass


def test_the_engine_sees_codes_and_formats():
    seen = []
    inner = probe.ModelEngine("tc:hopper")

    def spy(a, b, fa, fb):
        seen.append((a.dtype, a.shape, b.shape, fa.name, fb.name))
        return inner(a, b, fa, fb)
    probe.run(spy, "e4m3fn", "e5m2")
    assert all(s[0] == np.uint8 and s[1] == s[2] and s[1][1] % 32 == 0 and s[3:] == ("e4m3fn", "e5m2")
               for s in seen), seen[:3]


# ---- the torch engines and the cross-check through fake device calls ----

def test_the_scaled_mm_engine_through_a_fake_scaled_mm():
    torch = _torch()
    from fake_scaled_mm import make_scaled_mm
    from exmy._probe_torch import TorchEngine
    fake = make_scaled_mm("tc:hopper", "tc:hopper-fastacc")
    for kind, a, b, want in (("scaled_mm", "e4m3fn", "e4m3fn", "tc:hopper"),
                             ("scaled_mm-fastacc", "e4m3fn", "e4m3fn", "tc:hopper-fastacc"),
                             ("scaled_mm", "e5m2", "e4m3fn", "tc:hopper")):
        eng = TorchEngine(kind, device="cpu", torch=torch, scaled_mm=fake)
        r = probe.run(eng, a, b)
        assert r["match"] == [want], "%s %s x %s: %s (nearest %s: %s)" % (kind, a, b, r["match"], r["nearest"],
                                                                           r["differences"])
    # every call had the layout of a real one: blocks of dot products padded to 16
    assert fake.calls and all(m % 16 == 0 and n == m and k % 16 == 0 for m, n, k, *_ in fake.calls), fake.calls[:3]
    assert any(c[6] for c in fake.calls) and any(not c[6] for c in fake.calls)


def test_the_fake_scaled_mm_refuses_what_cublaslt_refuses():
    torch = _torch()
    from fake_scaled_mm import make_scaled_mm
    fake = make_scaled_mm("tc:hopper", "tc:hopper-fastacc")
    a = torch.zeros(16, 32, dtype=torch.uint8).view(torch.float8_e4m3fn)
    bt = torch.zeros(16, 32, dtype=torch.uint8).view(torch.float8_e4m3fn)
    one = torch.ones((), dtype=torch.float32)
    fake(a, bt.t(), one, one, out_dtype=torch.float32)  # the right call
    for args, kw in (((a, bt.t().contiguous(), one, one), {}),          # row-major B
                     ((a.t().contiguous().t(), bt.t(), one, one), {}),  # column-major A
                     ((a, bt.t(), 1.0, one), {}),                       # a float, not a tensor
                     ((a, bt.t(), one, one), {"out_dtype": None})):
        kw = dict({"out_dtype": torch.float32}, **kw)
        try:
            fake(*args, **kw)
            raise AssertionError("the fake took %s %s" % (args[:2], kw))
        except RuntimeError:
            pass


def test_the_16bit_engines_through_a_fake_mm():
    torch = _torch()
    from fake_scaled_mm import make_mm
    from exmy._probe_torch import TorchEngine
    r = probe.run(TorchEngine("mm-bf16", device="cpu", torch=torch, mm=make_mm("tc:hopper-bf16")))
    assert r["match"] == ["tc:hopper-bf16"], (r["match"], r["nearest"], r["differences"])
    # a torch without mm's out_dtype: the engine says so before the probe starts
    e4 = exmy.Format("e4m3fn")
    old_mm = make_mm("tc:hopper-bf16")
    why = TorchEngine("mm-bf16", device="cpu", torch=torch, mm=lambda a, b: old_mm(a, b)).unavailable(e4, e4)
    assert why and "out_dtype" in why, why
    assert TorchEngine("mm-bf16", device="cpu", torch=torch, mm=old_mm).unavailable(e4, e4) is None
    # tf32: float32 operands with TF32 allowed for the call only
    before = torch.backends.cuda.matmul.allow_tf32
    r = probe.run(TorchEngine("mm-tf32", device="cpu", torch=torch, mm=make_mm("tc:ampere-bf16")))
    assert r["match"] == ["tc:ampere-bf16"] and torch.backends.cuda.matmul.allow_tf32 == before, \
        (r["match"], r["nearest"], r["differences"])
    # fp16 out: A is scaled into fp16's range and back, the 10-bit output shows
    r = probe.run(TorchEngine("mm-fp16-out16", device="cpu", torch=torch, mm=make_mm("tc:hopper-bf16")))
    assert r["complete"] and r["out"] == 10 and r["norm_rne"] == 1 and r["match"] == [], \
        (r["accum"], r["notes"], r["match"])


def test_crosscheck_through_a_fake_scaled_mm():
    torch = _torch()
    from fake_scaled_mm import make_scaled_mm
    import io
    cases = [c for c in crosscheck.CASES if c[7] and c[2] <= 4096]
    # the preset of an H100 (sm 90) in the fake: every output equal
    log = io.StringIO()
    rows = crosscheck.check(cases, torch, "cpu", scaled_mm=make_scaled_mm("tc:hopper", "tc:hopper-fastacc"),
                            sm=90, seed=SEED, file=log)
    assert len(rows) == 2 * len(cases) and {r["model"] for r in rows} == {"tc:hopper", "tc:hopper-fastacc"}
    bad = [r for r in rows if r.get("error") or r["equal"] != r["outputs"]]
    assert not bad, "\n".join("%s: %s" % (r["config"], r.get("error") or r["first_difference"]) for r in bad)
    assert all(re.search(r"\d+ of \d+ outputs equal", l) for l in log.getvalue().splitlines()), log.getvalue()
    pats = {r["pattern"] for r in rows}
    assert pats == set(crosscheck.PATTERNS), pats
    # the record a user sends back
    from exmy import _record
    t = TempDir()
    env = _record.environment()
    j, m = _record.write(dict(tool="exmy.crosscheck", command="python -m exmy.crosscheck", environment=env,
                              crosscheck=rows), t("rec"), _record.stem("crosscheck", env))
    assert json.load(open(j))["crosscheck"][0]["equal"] == 256, j
    md = open(m).read()
    assert "| 16 x 16 x 16 e4m3fn x e4m3fn -> f32 normal | `tc:hopper` | 256 of 256 |  |" in md, md
    # a device that is not the preset: the differences are counted and the first shown in hex
    rows = crosscheck.check(cases[:8], torch, "cpu", scaled_mm=make_scaled_mm("tc:ada", "tc:ada-fastacc"),
                            sm=90, seed=SEED, file=io.StringIO())
    diff = [r for r in rows if r["equal"] != r["outputs"]]
    assert diff, "tc:ada passed for tc:hopper"
    assert all(re.match(r"D\[\d+, \d+\]: GPU 0x[0-9a-f]+, exmy 0x[0-9a-f]+$", r["first_difference"]) for r in diff), \
        [r["first_difference"] for r in diff]


def test_crosscheck_operands_are_what_their_patterns_say():
    g = rng(7)
    f = exmy.Format("e4m3fn")
    v = exmy.decode(crosscheck.operand("e4m3fn", "tiny", 32, 64, 1, g), f)
    assert np.all(np.abs(v) < 2.0 ** -5), v.max()
    v = exmy.decode(crosscheck.operand("e4m3fn", "saturate", 32, 64, 1, g), f)
    assert np.all(np.abs(v) >= 240) and np.all(np.isfinite(v))  # the top 8 codes
    v = exmy.decode(crosscheck.operand("e5m2", "wide", 64, 64, 1, g), "e5m2")
    assert np.all(np.isfinite(v))
    A, B, sa, sb, _ = crosscheck.make_case((16, 16, 64, "e4m3fn", "e4m3fn", "f32", "cancel", 1), g)
    P = exmy.decode(A, "e4m3fn")[:, :, None] * exmy.decode(B, "e4m3fn")[None, :, :]
    assert np.all(P[:, 0::2, :] + P[:, 1::2, :] == 0) and sa in (0.25, 0.5, 1, 2, 4)
    # fnuz formats (MI300): -0's code is NaN there, and no pattern but nan may make one
    for pat in crosscheck.PATTERNS:
        if pat == "nan":
            continue
        A, B, *_ = crosscheck.make_case((16, 16, 64, "e4m3fnuz", "e5m2fnuz", "f32", pat, 1), g)
        assert not np.isnan(exmy.decode(A, "e4m3fnuz")).any() and not np.isnan(exmy.decode(B, "e5m2fnuz")).any(), pat


# ---- the commands ---------------------------------------------------------

def _cmd(args):
    p = subprocess.run([sys.executable, "-m"] + args, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ))
    return p.returncode, p.stdout, p.stderr


def test_probe_command_with_the_cpu_model_writes_a_record():
    t = TempDir()
    rc, out, err = _cmd(["exmy.probe", "--engine", "model:tc:hopper", "--out", t("rec")])
    assert rc == 0, (rc, out, err)
    assert "preset:           tc:hopper (bit for bit)" in out, out
    files = sorted(os.listdir(t("rec")))
    assert len(files) == 2 and files[0].endswith(".json") and files[1].endswith(".md"), files
    rec = json.load(open(os.path.join(t("rec"), files[0])))
    assert rec["tool"] == "exmy.probe" and rec["environment"]["exmy"] == exmy.__version__
    assert rec["probe"][0]["match"] == ["tc:hopper"] and rec["probe"][0]["accum"].startswith("tc:g=32,f=13")
    md = open(os.path.join(t("rec"), files[1])).read()
    assert re.search(r"^### \d{4}-\d\d-\d\d: .* \(exmy\.probe\)$", md, re.M), md
    assert "| model:tc:hopper | e4m3fn x e4m3fn | `tc:g=32,f=13,align=trunc,out=13,norm=trunc,promote=128` | " \
           "tc:hopper | 64 of 64 equal |" in md, md
    rc, out, err = _cmd(["exmy.probe", "--engine", "model:tc:hopper,f=14", "--no-record"])
    assert rc == 1 and "no preset matches; nearest tc:hopper, differs in: f 14, preset 13" in out, (rc, out, err)


def test_commands_refuse_bad_arguments_with_status_2():
    for args, word in ((["exmy.probe", "--engine", "model:tc:nope"], "nope"),
                       (["exmy.probe", "--engine", "model:tc:hopper", "--a", "e4m3x"], "e4m3x"),
                       (["exmy.probe", "--engine", "model:tc:hopper", "--b", "bf16"], "bf16"),
                       (["exmy.crosscheck", "--model", "tc:g=x"], "g")):
        rc, out, err = _cmd(args + ["--no-record"])
        assert rc == 2 and word in err and len(err.strip().splitlines()) == 1, (args, rc, err)


def _has_gpu():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def test_without_a_gpu_both_commands_exit_77_with_one_line():
    if _has_gpu():
        raise SkipTest("this machine has a GPU")
    for tool in ("exmy.probe", "exmy.crosscheck"):
        rc, out, err = _cmd([tool, "--no-record"])
        assert rc == 77 and out == "" and len(err.strip().splitlines()) == 1 and "no GPU" in err, (tool, rc, out, err)


def test_on_a_gpu_the_probe_and_the_crosscheck_agree_with_the_preset():
    if not _has_gpu():
        raise SkipTest("no GPU (torch.cuda.is_available() is False)")
    t = TempDir()
    rc, out, err = _cmd(["exmy.probe", "--out", t("rec")])
    assert rc == 0, (rc, out, err)
    rc, out, err = _cmd(["exmy.crosscheck", "--quick", "--out", t("rec")])
    assert rc == 0, (rc, out, err)
