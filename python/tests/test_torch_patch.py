"""A patched model is a normal nn.Module: Patched.state_dict() /
load_state_dict() resume a run bit for bit (delayed scaling and stochastic
rounding included); copy.deepcopy, pickle and torch.save of a patched
model give a model that computes the same bits with an engine of its own;
unpatch() restores the original modules; patching again works; filter_fn
(a callable or globs) picks the layers; nn.Linear subclasses are patched or
refused by name; a delayed recipe that never sees p.step() warns.  Skips
without torch."""
import copy
import io
import pickle
import warnings

import numpy as np

from harness import SkipTest, same_bits

try:
    import torch
    import exmy.torch as et
except ImportError as e:  # torch is optional
    raise SkipTest("torch not importable: %s" % e)

torch.set_num_threads(2)

# delayed scaling (state across steps) and stochastic rounding of the gradients (keyed by the step)
PREC = "hybrid;recipe=delayed:len=4;round.grad=sr"


def _model(seed=11):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))


def _batch(s):
    g = torch.Generator().manual_seed(1000 + s)
    return torch.randn(24, 16, generator=g) * (1 + s % 3), torch.randn(24, 4, generator=g)


def _train(model, p, opt, steps):
    losses = []
    for s in steps:
        x, y = _batch(s)
        loss = (model(x) - y).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        p.step()
        losses.append(loss.detach().clone())
    return torch.stack(losses) if losses else torch.zeros(0)


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _same_weights(a, b, what):
    assert list(a) == list(b), (list(a), list(b))
    for k in a:
        same_bits(a[k].numpy(), b[k].numpy(), None, "%s: %s" % (what, k))


def test_state_dict_resume_is_bit_identical():
    """Train N steps, save model, optimizer and patch state (torch.save,
    torch.load(weights_only=True)), load them into a fresh patched model,
    train M more: the losses and weights equal N + M uninterrupted steps."""
    N, M = 5, 4
    a = _model()
    pa = et.patch(a, prec=PREC, seed=3)
    assert "/delayed:len=4" in pa.layer_prec(0) and "grad=e5m2/sr/" in pa.layer_prec(0), pa.layer_prec(0)
    la = _train(a, pa, torch.optim.AdamW(a.parameters(), lr=1e-2), range(N + M))

    b = _model()
    pb = et.patch(b, prec=PREC, seed=3)
    ob = torch.optim.AdamW(b.parameters(), lr=1e-2)
    lb = _train(b, pb, ob, range(N))
    buf = io.BytesIO()
    torch.save({"model": b.state_dict(), "opt": ob.state_dict(), "exmy": pb.state_dict()}, buf)
    buf.seek(0)
    ck = torch.load(buf, weights_only=True)
    assert ck["exmy"]["step"] == N

    c = _model(seed=99)  # other initial weights: everything comes from the checkpoint
    pc = et.patch(c, prec=PREC, seed=3)
    c.load_state_dict(ck["model"])
    oc = torch.optim.AdamW(c.parameters(), lr=1e-2)
    oc.load_state_dict(ck["opt"])
    pc.load_state_dict(ck["exmy"])
    for layer in range(2):
        for kind in ("input", "weight", "grad"):
            got, want = pc.recipe_state(layer, kind), pb.recipe_state(layer, kind)
            assert got["steps"] == want["steps"] == N
            same_bits(got["history"], want["history"], None, "history %d %s" % (layer, kind))
    lc = _train(c, pc, oc, range(N, N + M))
    same_bits(torch.cat([lb, lc]).numpy(), la.numpy(), None, "losses")
    _same_weights(_weights(c), _weights(a), "resumed weights")
    # a state of other layers or another precision is refused
    for other, text in ((et.patch(_model(), prec="hybrid;recipe=delayed:len=8"), "delayed:len=8"),
                        (et.patch(torch.nn.Sequential(torch.nn.Linear(16, 4)), prec=PREC), "layers")):
        try:
            other.load_state_dict(ck["exmy"])
            raise AssertionError("a state of another patch was loaded")
        except ValueError as e:
            assert text in str(e), e


def _encoder(seed=5):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0,
                                                                batch_first=True), torch.nn.Linear(16, 3))


def _step_bits(model, x):
    """Forward, backward and p.step() of one batch: the output, the
    parameters' gradients and the first layer's delayed state."""
    for prm in model.parameters():
        prm.grad = None
    y = model(x)
    y.square().sum().backward()
    model._exmy.step()
    st = model._exmy.recipe_state(0, "input")
    return [y.detach().numpy()] + [prm.grad.numpy() for prm in model.parameters()] + \
        [np.float32(st["scale"]), st["history"]]


def test_deepcopy_pickle_torch_save():
    """A patched model with delayed scaling, SR and patched attention, two
    steps in: its deepcopy, pickle and torch.save copies compute the same
    bits on the next steps as the original, each with an engine of its own."""
    m = _encoder()
    et.patch(m, prec=PREC, attn="hybrid", seed=4)
    x = torch.randn(2, 5, 16, generator=torch.Generator().manual_seed(6))
    for _ in range(2):
        _step_bits(m, x)
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    copies = {"deepcopy": copy.deepcopy(m), "pickle": pickle.loads(pickle.dumps(m)),
              "torch.save": torch.load(buf, weights_only=False)}
    want = [_step_bits(m, x) for _ in range(2)]
    for what, c in copies.items():
        assert c._exmy is not m._exmy and c._exmy.engine is not m._exmy.engine, what
        assert isinstance(c[1], et.ExmyLinear) and c[1]._patched is c._exmy, what
        assert c._exmy.step_index == 2, what
        for k in range(2):
            for i, (g, w) in enumerate(zip(_step_bits(c, x), want[k])):
                same_bits(g, w, None, "%s step %d item %d" % (what, k, i))
        assert c._exmy.step_index == m._exmy.step_index


class _Sub(torch.nn.Linear):
    """A subclass that keeps nn.Linear's forward: patched."""


class _OwnForward(torch.nn.Linear):
    """A subclass with a forward of its own: refused unless left out."""

    def forward(self, x):
        return super().forward(x) * 2


def test_unpatch_repatch_filter_subclasses():
    torch.manual_seed(8)
    lin0, sub = torch.nn.Linear(8, 8), _Sub(8, 4)
    model = torch.nn.Sequential(lin0, torch.nn.ReLU(), sub)
    params = list(model.parameters())
    x = torch.randn(3, 8)
    plain = model(x).detach()
    p = et.patch(model, prec="hybrid", attn="bf16", msamp=1)
    assert p.names == ["0", "2"] and isinstance(model[2], et.ExmyLinear)
    assert not torch.equal(model(x), plain)
    et.patch(model, prec="bf16")  # patching again: unpatched first, then patched afresh
    assert model._exmy is not p and model[2]._original is sub and len(model._forward_pre_hooks) == 0
    model._exmy.unpatch()
    assert model[0] is lin0 and model[2] is sub and type(model[2]) is _Sub
    assert [a is b for a, b in zip(model.parameters(), params)] == [True] * 4
    assert not hasattr(model, "_exmy") and not model._forward_pre_hooks and not model._forward_hooks
    same_bits(model(x).detach().numpy(), plain.numpy(), None, "unpatched output")
    try:
        et.unpatch(model)
        raise AssertionError("unpatch of an unpatched model")
    except ValueError:
        pass
    # filter_fn: torchao's callable, a glob, a list of globs
    for filt, names in ((lambda mod, fqn: mod.out_features == 4, ["2"]), ("0", ["0"]), (["[02]"], ["0", "2"])):
        assert et.patch(model, filter_fn=filt).names == names, filt
        et.unpatch(model)
    # a subclass with its own forward is refused by name, or left out
    own = torch.nn.Sequential(torch.nn.Linear(8, 8), _OwnForward(8, 2))
    try:
        et.patch(own)
        raise AssertionError("a Linear subclass with its own forward was patched")
    except ValueError as e:
        assert "'1'" in str(e) and "_OwnForward" in str(e) and "filter_fn" in str(e), e
    assert et.patch(own, filter_fn=lambda mod, fqn: type(mod) is torch.nn.Linear).names == ["0"]
    # patching a submodule of a patched model, or the parent of a patched submodule, is refused
    outer = torch.nn.Sequential(own)
    try:
        et.patch(outer)
        raise AssertionError("a model holding another patch's layers was patched")
    except ValueError as e:
        assert "already patched" in str(e), e


def test_delayed_without_step_warns():
    """Two optimizer steps without p.step() on a delayed recipe: one
    RuntimeWarning; with p.step(), or without delayed scaling, none."""
    for prec, call_step, want in ((PREC, False, 1), (PREC, True, 0), ("hybrid", False, 0)):
        m = _model()
        p = et.patch(m, prec=prec)
        opt = torch.optim.SGD(m.parameters(), lr=1e-3)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for s in range(4):
                x, y = _batch(s)
                (m(x) - y).square().mean().backward()
                opt.step()
                if call_step:
                    p.step()
        got = [x for x in w if issubclass(x.category, RuntimeWarning) and "Patched.step()" in str(x.message)]
        assert len(got) == want, (prec, call_step, [str(x.message) for x in w])


def test_block_scaled_presets():
    """mxfp8, mxfp6, mxfp4 and nvfp4 are the element formats with their
    block scales (Transformer Engine's MXFP8BlockScaling/NVFP4BlockScaling
    defaults, OCP's FP6 E2M3): each resolves as its long form and computes
    the same bits; `hybrid;recipe=nvfp4` keeps hybrid's FP8 elements."""
    x = torch.randn(32, 64, generator=torch.Generator().manual_seed(12))
    for preset, long_form in (("mxfp8", "e4m3fn;recipe=mx"), ("mxfp6", "e2m3fn;recipe=mx"),
                              ("mxfp4", "e2m1fn;recipe=mx"), ("nvfp4", "e2m1fn;recipe=nvfp4")):
        outs, precs = [], []
        for prec in (preset, long_form):
            torch.manual_seed(13)
            m = torch.nn.Sequential(torch.nn.Linear(64, 32))
            p = et.patch(m, prec=prec)
            precs.append(p.layer_prec(0))
            outs.append(m(x).detach().numpy())
        assert precs[0] == precs[1], (preset, precs)
        fmt, recipe = long_form.split(";recipe=")
        for kind in ("input", "weight", "grad"):
            assert "%s=%s/rne/%s " % (kind, fmt, recipe) in precs[0] + " ", (preset, precs[0])
        same_bits(outs[0], outs[1], None, preset)
    p = et.patch(torch.nn.Sequential(torch.nn.Linear(64, 32)), prec="hybrid;recipe=nvfp4")
    assert p.layer_prec(0).startswith("input=e4m3fn/rne/nvfp4 weight=e4m3fn/rne/nvfp4 grad=e5m2/rne/nvfp4")
