"""exmy.torch: quantize/cast on CPU tensors, the straight-through fake
quant, and patch(): the patched Linear's fprop, dgrad and wgrad equal
exmy.gemm (exmy_gemm) bit for bit for the same formats, recipes and
accumulation models; delayed scaling advances exactly as exmy.RecipeState
(the engine's exmy_recipe_step); a two-layer model and a small transformer
train with prec="hybrid"; stats.jsonl has the engine's schema.  Skips
without torch."""
import json
import os

import numpy as np

import exmy
from harness import SkipTest, TempDir, run, rng, same_bits

try:
    import torch
    import exmy.torch as et
except ImportError as e:  # torch is optional
    raise SkipTest("torch not importable: %s" % e)

torch.set_num_threads(2)


def test_quantize_cast_tensors():
    x = torch.from_numpy(rng(1).standard_normal((4, 33)).astype(np.float32))
    same_bits(et.quantize(x, "e4m3fn", round="sr", seed=3).numpy(),
              exmy.quantize(x.numpy(), "e4m3fn", round="sr", seed=3), x.numpy(), "quantize")
    same_bits(et.cast(x, "e5m2").numpy(), exmy.cast(x.numpy(), "e5m2"), x.numpy(), "cast")
    xb = x.to(torch.bfloat16)
    same_bits(et.cast(xb, "e4m3fn").numpy(), et.cast(xb.float(), "e4m3fn").numpy(), None, "bf16 tensor")
    assert et.quantize(x, "e8m3").dtype == torch.int16
    codes, fl = et.quantize(x * 1e6, "e4m3fn", flags=True)
    assert fl & exmy.Flags.OVERFLOW
    # a tensor on another device is refused, never moved
    meta = torch.empty(3, device="meta")
    try:
        et.cast(meta, "e4m3fn")
        raise AssertionError("a meta tensor was accepted")
    except ValueError as e:
        assert "cpu()" in str(e), e
    try:
        et.cast(x.to(torch.int32), "e4m3fn")
        raise AssertionError("an int tensor was accepted")
    except TypeError:
        pass


def test_fake_quant_straight_through():
    x = torch.linspace(-500, 500, 101, requires_grad=True)
    y = et.fake_quant(x, "e4m3fn", saturate=True)
    same_bits(y.detach().numpy(), exmy.cast(x.detach().numpy(), "e4m3fn", saturate=True), None, "forward")
    (y * torch.arange(101.0)).sum().backward()
    same_bits(x.grad.numpy(), np.arange(101.0, dtype=np.float32), None, "gradient passes straight through")


def _gemm_refs(x, w, dy, prec):
    """fprop, dgrad, wgrad through exmy.gemm as the engine lays the operands
    out (grouped recipes along k: A as m x k, B as n x k)."""
    f = dict(input=prec["input"], weight=prec["weight"], grad=prec["grad"])
    kw = dict(scaling=prec["recipe"], saturate="finite", trans_b=True)
    y = exmy.gemm(x, w, format_a=f["input"], format_b=f["weight"], accum=prec["accum"]["fprop"], **kw)
    dx = exmy.gemm(dy, np.ascontiguousarray(w.T), format_a=f["grad"], format_b=f["weight"],
                   accum=prec["accum"]["dgrad"], **kw)
    dw = exmy.gemm(np.ascontiguousarray(dy.T), np.ascontiguousarray(x.T), format_a=f["grad"], format_b=f["input"],
                   accum=prec["accum"]["wgrad"], **kw)
    return y, dx, dw


CONFIGS = [
    ("hybrid", dict(input="e4m3fn", weight="e4m3fn", grad="e5m2", recipe="current",
                    accum=dict(fprop="fp32", dgrad="fp32", wgrad="fp32")), None),
    ("hybrid", dict(input="e4m3fn", weight="e4m3fn", grad="e5m2", recipe="current",
                    accum=dict(fprop="tc:hopper", dgrad="fp32:pairwise", wgrad="acc=bf16")),
     {"fprop": "tc:hopper", "dgrad": "fp32:pairwise", "wgrad": "acc=bf16"}),
    ("e4m3fn;recipe=block:1x128", dict(input="e4m3fn", weight="e4m3fn", grad="e4m3fn", recipe="block:1x128",
                                       accum=dict(fprop="exact", dgrad="exact", wgrad="exact")), "exact"),
    ("hybrid;recipe=mx", dict(input="e4m3fn", weight="e4m3fn", grad="e5m2", recipe="mx",
                              accum=dict(fprop="tc:blackwell", dgrad="tc:blackwell", wgrad="tc:blackwell")),
     "tc:blackwell"),
]


def test_patched_linear_equals_exmy_gemm():
    r = rng(2)
    T, n_in, n_out = 64, 256, 96
    for prec, ref, accum in CONFIGS:
        lin = torch.nn.Linear(n_in, n_out, bias=False)
        model = torch.nn.Sequential(lin)
        p = et.patch(model, prec=prec, accum=accum)
        x_np = (r.standard_normal((T, n_in)) * 3).astype(np.float32)
        dy_np = (r.standard_normal((T, n_out)) * 1e-3).astype(np.float32)
        x = torch.from_numpy(x_np.copy()).requires_grad_(True)
        y = model(x)
        y.backward(torch.from_numpy(dy_np))
        w_np = lin.weight.detach().numpy()
        want_y, want_dx, want_dw = _gemm_refs(x_np, w_np, dy_np, ref)
        same_bits(y.detach().numpy(), want_y, None, "fprop %s" % prec)
        same_bits(x.grad.numpy(), want_dx, None, "dgrad %s" % prec)
        same_bits(lin.weight.grad.numpy(), want_dw, None, "wgrad %s" % prec)
        p.step()


def test_delayed_scaling_advances_as_recipe_state():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 48), torch.nn.ReLU(), torch.nn.Linear(48, 8))
    p = et.patch(model, prec="hybrid;recipe=delayed:len=4")
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    mirror = {k: exmy.Recipe("delayed:len=4").state() for k in ("input", "weight")}
    r = rng(3)
    for step in range(7):
        x_np = (r.standard_normal((16, 32)) * (1 + step)).astype(np.float32)
        w_np = model[0].weight.detach().numpy().copy()
        loss = model(torch.from_numpy(x_np)).square().mean()
        opt.zero_grad()
        loss.backward()
        # layer 0's input is quantized by fprop and wgrad, its weight by fprop (no dgrad: x needs no gradient)
        for t, fmt in ((x_np, "e4m3fn"), (x_np, "e4m3fn")):
            exmy.scale(t, "delayed:len=4", fmt, state=mirror["input"])
        exmy.scale(w_np, "delayed:len=4", "e4m3fn", state=mirror["weight"])
        opt.step()
        p.step()
        for kind, st in mirror.items():
            st.step()
            got = p.recipe_state(0, kind)
            assert got["steps"] == st.steps == step + 1
            same_bits(np.float32(got["scale"]), np.float32(st.scale), None, "step %d %s scale" % (step, kind))
            same_bits(got["history"], st.history, None, "step %d %s history" % (step, kind))


def _train(model, p, batches, steps, lr):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for s in range(steps):
        x, y = batches(s)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1)) \
            if y.dtype == torch.long else (out - y).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        p.step()
        losses.append(loss.item())
    return losses


def test_two_layer_model_trains_hybrid():
    torch.manual_seed(1)
    teacher = torch.nn.Linear(16, 4)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 4))
    td = TempDir()
    p = et.patch(model, prec="hybrid", stats_every=5, out_dir=td("run"))
    g = torch.Generator().manual_seed(2)

    def batch(s):
        x = torch.randn(64, 16, generator=g)
        return x, teacher(x).detach()
    losses = _train(model, p, batch, 60, 1e-2)
    assert np.isfinite(losses).all() and np.mean(losses[-5:]) < 0.3 * np.mean(losses[:5]), losses
    # stats.jsonl: the engine's schema (exmy train --stats_every writes the same keys in the same order)
    rows = [json.loads(l) for l in open(td("run/stats.jsonl"))]
    assert {r["step"] for r in rows} == set(range(0, 60, 5))
    run(["train", "--model", "mlp", "--steps", "1", "--stats_every", "1", "--out_dir", td("eng"), "--prec", "hybrid",
         "--progress", "0"])
    eng = [json.loads(l) for l in open(td("eng/stats.jsonl"))]
    assert list(rows[0].keys()) == list(eng[0].keys()), (list(rows[0]), list(eng[0]))
    assert {(r["gemm"], r["tensor"]) for r in rows} == {(r["gemm"], r["tensor"]) for r in eng}
    assert open(td("run/stats.csv")).readline() == open(td("eng/stats.csv")).readline()


class _Block(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab=32, d=64, h=4, layers=2, T=32):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(vocab, d), torch.nn.Embedding(T, d)
        self.blocks = torch.nn.ModuleList(_Block(d, h) for _ in range(layers))
        self.ln, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def _text_batches(T, seed, copies):
    """batch(step) -> (tokens, next tokens): 8 random windows of T + 1 characters of a repeated sentence."""
    text = np.frombuffer(b"the quick brown fox jumps over the lazy dog; " * copies, np.uint8) % 32
    g = np.random.default_rng(seed)

    def batch(s):
        i = g.integers(0, text.size - (T + 1), 8)
        seq = torch.from_numpy(np.stack([text[j:j + T + 1] for j in i]).astype(np.int64))
        return seq[:, :-1], seq[:, 1:]
    return batch


def test_small_transformer_trains_hybrid():
    torch.manual_seed(3)
    model = TinyGPT()
    p = et.patch(model, prec="hybrid", layer={"last": "bf16"})
    assert len(p.names) == 9 and p.names[-1] == "head"
    assert p.layer_prec("head").startswith("input=bf16") and p.layer_prec(0).startswith("input=e4m3fn")
    losses = _train(model, p, _text_batches(32, 4, 200), 40, 3e-3)
    assert np.isfinite(losses).all() and np.mean(losses[-5:]) < 0.75 * np.mean(losses[:5]), losses


def test_patch_errors():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4))
    for kw, exc, text in [(dict(prec="hybrid;fmt=e9m99"), ValueError, "e9m99"),
                          (dict(prec="hybrid", layer={"nosuch": "bf16"}), ValueError, "nosuch"),
                          (dict(prec="hybrid", accum={"fprop": "tc:volta"}), ValueError, "volta"),
                          (dict(prec=3), TypeError, "str")]:
        try:
            et.patch(torch.nn.Sequential(torch.nn.Linear(4, 4)), **kw)
            raise AssertionError("patch(%r) accepted" % kw)
        except exc as e:
            assert text in str(e), (kw, e)
    try:
        et.patch(torch.nn.Sequential(torch.nn.ReLU()))
        raise AssertionError("a model without Linear layers was accepted")
    except ValueError:
        pass
    et.patch(m)
    try:
        m(torch.empty(2, 4, device="meta"))
        raise AssertionError("a meta-device input was accepted")
    except ValueError as e:
        assert "cpu()" in str(e)


# ---- exmy.torch.matmul and patch(attn=...) --------------------------------------

# attn precision -> how exmy.gemm quantizes each tensor kind (the engine's presets, precision.c)
ATTN_REFS = {
    "fp32": dict(input=("f32", "none", False), grad=("f32", "none", False)),
    "bf16": dict(input=("bf16", "none", False), grad=("bf16", "none", False)),
    "hybrid": dict(input=("e4m3fn", "current", "finite"), grad=("e5m2", "current", "finite")),
}


def _gemm_kinds(a, b, prec, ka, kb):
    """exmy.gemm of two plain (C-contiguous) matrices, A of tensor kind ka and B of kb, fp32 accumulation."""
    (fa, sa, ta), (fb, sb, tb) = ATTN_REFS[prec][ka], ATTN_REFS[prec][kb]
    assert ta == tb
    return exmy.gemm(np.ascontiguousarray(a), np.ascontiguousarray(b), format_a=fa, format_b=fb, scaling_a=sa,
                     scaling_b=sb, saturate=ta, accum="fp32")


def test_matmul_equals_exmy_gemm():
    """et.matmul's forward and both gradients, slice by slice, equal
    exmy.gemm of the same matrices: C = A B (input x input), dA = dC B^T
    (grad x input), dB = A^T dC (input x grad); with B given as a transposed
    view (S = Q K^T), K's gradient is dC^T A (the engine's dk = dS^T q)."""
    r = rng(11)
    shapes = [((2, 3), 7, 33, 19), ((4,), 16, 64, 16), ((1,), 1, 130, 5), ((), 9, 17, 128 + 3)]
    for prec in ("fp32", "bf16", "hybrid"):
        for batch, m, k, n in shapes:
            for b_layout in ("plain", "transposed", "heads"):
                b_transposed = b_layout != "plain"
                a = torch.from_numpy((r.standard_normal(batch + (m, k)) * 2).astype(np.float32)).requires_grad_()
                bs = (r.standard_normal(batch + ((n, k) if b_transposed else (k, n))) * 3).astype(np.float32)
                if b_layout == "heads" and len(batch) == 2:  # K^T of heads split from a projection: (B, T, H, hd)
                    bleaf = torch.from_numpy(bs.transpose(0, 2, 1, 3).copy()).requires_grad_()
                    b = bleaf.transpose(1, 2).mT
                else:
                    bleaf = torch.from_numpy(bs).requires_grad_()
                    b = bleaf.mT if b_transposed else bleaf
                dc = torch.from_numpy((r.standard_normal(batch + (m, n)) * 1e-2).astype(np.float32))
                c = et.matmul(a, b, prec=prec)
                c.backward(dc)
                what = "%s %s m=%d k=%d n=%d B %s" % (prec, batch, m, k, n, b_layout)
                A, Bs, DC = a.detach().numpy().reshape(-1, m, k), bs.reshape((-1,) + bs.shape[-2:]), \
                    dc.numpy().reshape(-1, m, n)
                gb = bleaf.grad.transpose(1, 2) if bleaf.shape != bs.shape else bleaf.grad
                GA, GB, C = a.grad.numpy().reshape(A.shape), gb.reshape(Bs.shape).numpy(), \
                    c.detach().numpy().reshape(-1, m, n)
                for i in range(A.shape[0]):
                    Bi = Bs[i].T if b_transposed else Bs[i]
                    same_bits(C[i], _gemm_kinds(A[i], Bi, prec, "input", "input"), None, "C[%d] %s" % (i, what))
                    same_bits(GA[i], _gemm_kinds(DC[i], Bi.T, prec, "grad", "input"), None, "dA[%d] %s" % (i, what))
                    want_gb = _gemm_kinds(DC[i].T, A[i], prec, "grad", "input") if b_transposed else \
                        _gemm_kinds(A[i].T, DC[i], prec, "input", "grad")
                    same_bits(GB[i], want_gb, None, "dB[%d] %s" % (i, what))


def test_matmul_errors():
    a, b = torch.randn(2, 3, 4), torch.randn(2, 4, 5)
    # bad precision text: ValueError with the engine's message, the one `exmy train --attn` prints
    for bad in ("hybird", "hybrid;fmt=e9m99", "hybrid;recipe=delayed", "hybrid;accum=tc:volta"):
        rc, _, err = run(["train", "--attn", bad, "--steps", "1", "--progress", "0"], ok=False)
        assert rc == 2, (bad, rc, err)
        for call in (lambda: et.matmul(a, b, prec=bad),
                     lambda: et.patch(torch.nn.Sequential(torch.nn.Linear(4, 4)), attn=bad)):
            try:
                call()
                raise AssertionError("attn precision %r accepted" % bad)
            except ValueError as e:
                assert str(e) in err, (bad, str(e), err)
    for x, y, exc, text in [(a, torch.randn(2, 5, 5), ValueError, "columns"),
                            (a, torch.randn(3, 4, 5), ValueError, "broadcast"),
                            (a[0, 0], b, ValueError, "1-D"),
                            (a.to(torch.int32), b, TypeError, "float"),
                            (a, torch.empty(2, 4, 5, device="meta"), ValueError, "cpu()")]:
        try:
            et.matmul(x, y)
            raise AssertionError("matmul accepted %s" % text)
        except exc as e:
            assert text in str(e), (text, e)
    if not torch.cuda.is_available():
        raise SkipTest("no CUDA device: the GPU-tensor refusal is checked with a meta tensor only")
    try:
        et.matmul(a.cuda(), b)
        raise AssertionError("a CUDA tensor was accepted")
    except ValueError as e:
        assert "cpu()" in str(e), e


class _AttnProbe(torch.nn.Module):
    """qkv projection, causal SDPA (called as torch.nn.functional's attribute,
    as model code does), output projection; keeps q, k, v and the attention
    output with their gradients."""

    def __init__(self, d=24, h=3, dropout=0.0):
        super().__init__()
        self.h, self.dropout = h, dropout
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in self.qkv(x).split(C, dim=2))
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout)
        for t in (q, k, v, a):
            t.retain_grad()
        self.seen = (q, k, v, a)
        return self.proj(a.transpose(1, 2).reshape(B, T, C))


def _attn_reference(q, k, v, prec):
    """Causal attention with S = Q K^T and O = P V from exmy.gemm, slice by
    slice; S * 1/sqrt(hd), the mask and softmax in PyTorch float32."""
    B, H, T, hd = q.shape
    qn, kn, vn = (t.detach().numpy().reshape(B * H, T, hd) for t in (q, k, v))
    S = torch.from_numpy(np.stack([_gemm_kinds(qn[i], kn[i].T, prec, "input", "input") for i in range(B * H)]))
    S = S * (1.0 / np.sqrt(hd))
    P = torch.softmax(S.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")), dim=-1).numpy()
    return np.stack([_gemm_kinds(P[i], vn[i], prec, "input", "input") for i in range(B * H)]).reshape(B, H, T, hd)


def test_patched_sdpa_equals_reference():
    """patch(attn="hybrid"): the model's SDPA output equals attention built
    from exmy.gemm bit for bit, its q, k, v gradients equal the same attention
    written by hand with et.matmul; PyTorch's function is back after the
    forward, and other threads' SDPA calls meanwhile are PyTorch's."""
    import threading
    torch.manual_seed(5)
    F = torch.nn.functional
    original = F.scaled_dot_product_attention
    model = _AttnProbe()
    p = et.patch(model, prec="hybrid", attn="hybrid")
    x = torch.randn(2, 13, 24)
    qo, ko, vo = torch.randn(3, 2, 3, 13, 8).unbind(0)
    other = {}
    orig_forward = model.forward

    def forward_with_a_thread(xx):  # another thread calls SDPA while the patched forward runs
        t = threading.Thread(target=lambda: other.update(out=F.scaled_dot_product_attention(qo, ko, vo)))
        t.start()
        t.join()
        return orig_forward(xx)
    model.forward = forward_with_a_thread
    y = model(x)
    assert F.scaled_dot_product_attention is original, "SDPA left replaced after the forward"
    same_bits(other["out"].numpy(), original(qo, ko, vo).numpy(), None, "another thread's SDPA")
    q, k, v, a = model.seen
    same_bits(a.detach().numpy(), _attn_reference(q, k, v, "hybrid"), None, "attention output")
    assert not torch.equal(a, original(q, k, v, is_causal=True)), "the attention was not intercepted"
    y.square().sum().backward()
    q2, k2, v2 = (t.detach().contiguous().requires_grad_() for t in (q, k, v))
    S = et.matmul(q2, k2.mT, prec="hybrid") * (1.0 / np.sqrt(8))
    P = torch.softmax(S.masked_fill(~torch.ones(13, 13, dtype=torch.bool).tril(), float("-inf")), dim=-1)
    O = et.matmul(P, v2, prec="hybrid")
    same_bits(O.detach().numpy(), a.detach().numpy(), None, "hand-written attention output")
    O.backward(a.grad)
    for got, want, name in ((q.grad, q2.grad, "dq"), (k.grad, k2.grad, "dk"), (v.grad, v2.grad, "dv")):
        same_bits(got.numpy(), want.numpy(), None, name)
    p.step()
    # outside the patched forward, SDPA is PyTorch's own
    assert F.scaled_dot_product_attention is original


def test_patched_attention_refusals():
    F = torch.nn.functional
    original = F.scaled_dot_product_attention
    model = _AttnProbe(dropout=0.1)
    et.patch(model, attn="hybrid")
    try:
        model(torch.randn(1, 4, 24))
        raise AssertionError("dropout_p=0.1 was accepted")
    except ValueError as e:
        assert "dropout_p=0.1" in str(e), e
    assert F.scaled_dot_product_attention is original, "SDPA left replaced after a forward that raised"
    model.dropout = 0.0
    model(torch.randn(1, 4, 24))
    try:
        et.patch(_AttnProbe(), attn=3)
        raise AssertionError("attn=3 accepted")
    except TypeError:
        pass


class _CountSDPA:
    """with _CountSDPA() as calls: the SDPA calls exmy intercepts, counted."""

    def __enter__(self):
        from exmy import _attention
        self.mod, self.real, self.calls = _attention, _attention.sdpa, []

        def counting(*args, **kw):
            self.calls.append(1)
            return self.real(*args, **kw)
        _attention.sdpa = counting
        return self.calls

    def __exit__(self, *exc):
        self.mod.sdpa = self.real


def test_multihead_attention_need_weights_false_is_intercepted():
    """nn.MultiheadAttention calls SDPA when need_weights=False (intercepted)
    and its own bmm when need_weights=True (not)."""
    class M(torch.nn.Module):
        def __init__(self, need):
            super().__init__()
            self.need, self.mha = need, torch.nn.MultiheadAttention(16, 2, batch_first=True)

        def forward(self, x):
            return self.mha(x, x, x, need_weights=self.need)[0]
    for need, want in ((False, 1), (True, 0)):
        torch.manual_seed(6)
        m = M(need)
        et.patch(m, attn="bf16")
        with _CountSDPA() as calls:
            m(torch.randn(2, 5, 16)).sum().backward()
        assert len(calls) == want, (need, len(calls))


def test_small_transformer_trains_with_attn_hybrid():
    torch.manual_seed(7)
    model = TinyGPT(d=32, h=2, T=16)
    p = et.patch(model, prec="hybrid", attn="hybrid")
    with _CountSDPA() as calls:
        losses = _train(model, p, _text_batches(16, 8, 100), 25, 1e-2)
    assert len(calls) == 2 * 25, len(calls)  # each block's attention, every step, went through exmy
    assert np.isfinite(losses).all() and np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses


def test_msamp_o1_fp8_weight_gradients():
    """patch(msamp=1): the patched layers' weight gradients are the msamp=0
    gradients cast to e4m3fn with a power-of-two per-tensor current scale
    (exmy.scale "current:pow2" over the gradient as 1 x n, the engine's
    optimizer's cast); the bias gradient is left alone."""
    r = rng(12)
    x = torch.from_numpy((r.standard_normal((32, 40)) * 2).astype(np.float32))
    dy = torch.from_numpy((r.standard_normal((32, 24)) * 1e-3).astype(np.float32))
    grads = []
    for msamp in (0, 1):
        torch.manual_seed(9)
        model = torch.nn.Sequential(torch.nn.Linear(40, 24))
        et.patch(model, prec="hybrid", msamp=msamp)
        model(x).backward(dy)
        grads.append((model[0].weight.grad.clone(), model[0].bias.grad.clone()))
    (w0, b0), (w1, b1) = grads
    want = exmy.scale(w0.numpy().reshape(-1), "current:pow2", "e4m3fn", saturate="finite").dequant()
    same_bits(w1.numpy(), want.reshape(w0.shape), None, "FP8 weight gradient")
    assert not torch.equal(w0, w1)
    same_bits(b1.numpy(), b0.numpy(), None, "bias gradient")
    for bad in (2, True, "1"):
        try:
            et.patch(torch.nn.Sequential(torch.nn.Linear(4, 4)), msamp=bad)
            raise AssertionError("msamp=%r accepted" % (bad,))
        except ValueError as e:
            assert "msamp" in str(e), e
