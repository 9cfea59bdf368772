"""exmy.torch.LowPrecisionOptimizer: after each step every parameter and
every per-element optimizer state is representable in its format (checked
against exmy.quantize/decode bit for bit, and ml_dtypes for bf16); the scalar
step is left alone; stochastic rounding is repeatable from the seed, differs
across steps and from rne; a state_dict resume continues bit for bit; no
formats is the plain optimizer bit for bit.  Skips without torch."""
import io

import numpy as np

import exmy
from harness import SkipTest, rng, same_bits

try:
    import torch
    import exmy.torch as et
except ImportError as e:  # torch is optional
    raise SkipTest("torch not importable: %s" % e)


def _model(salt=0):
    torch.manual_seed(1000 + salt)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))


def _batch(salt):
    r = rng(salt)
    return (torch.from_numpy(r.standard_normal((8, 16)).astype(np.float32)),
            torch.from_numpy(r.standard_normal((8, 4)).astype(np.float32)))


def _train(m, opt, steps, first=0):
    for s in range(first, first + steps):
        x, y = _batch(s)
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x), y).backward()
        opt.step()


def _representable(t, fmt, what):
    a = t.detach().numpy()
    same_bits(exmy.decode(exmy.quantize(a, fmt), fmt, dtype=np.float32), a, a, what)


def _flat(m):
    return np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])


def test_weights_and_moments_in_format():
    m = _model()
    opt = et.LowPrecisionOptimizer(torch.optim.Adam(m.parameters(), lr=1e-2), weight="bf16",
                                   moments={"fmt": "e5m2", "round": "sr"}, seed=3)
    _train(m, opt, 3)
    import ml_dtypes
    for n, p in m.named_parameters():
        _representable(p, "bf16", "weight " + n)
        a = p.detach().numpy()
        same_bits(a.astype(ml_dtypes.bfloat16).astype(np.float32), a, a, "ml_dtypes bf16 " + n)
        st = opt.state[p]
        _representable(st["exp_avg"], "e5m2", "exp_avg " + n)
        _representable(st["exp_avg_sq"], "e5m2", "exp_avg_sq " + n)
        assert float(st["step"]) == 3.0, "step counter rounded: %r" % float(st["step"])
    assert opt.steps == 3
    # the weights moved: the optimizer ran
    assert not np.array_equal(_flat(m), _flat(_model()))


def test_round_weights_and_e4m3():
    m = _model()
    opt = et.LowPrecisionOptimizer(torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9),
                                   weight={"fmt": "e4m3fn", "saturate": True}, moments="f16")
    opt.round_weights()
    for n, p in m.named_parameters():
        _representable(p, "e4m3fn", "initial " + n)
    _train(m, opt, 2)
    for n, p in m.named_parameters():
        _representable(p, "e4m3fn", "weight " + n)
        _representable(opt.state[p]["momentum_buffer"], "f16", "momentum " + n)


def _run(weight, seed=0, steps=2):
    m = _model()
    opt = et.LowPrecisionOptimizer(torch.optim.Adam(m.parameters(), lr=1e-3), weight=weight, seed=seed)
    _train(m, opt, steps)
    return _flat(m)


def test_sr_repeatable_and_distinct():
    sr = {"fmt": "bf16", "round": "sr"}
    a, b = _run(sr, seed=5), _run(sr, seed=5)
    same_bits(a, b, None, "sr with the same seed")
    assert not np.array_equal(a, _run(sr, seed=6)), "sr ignores the seed"
    assert not np.array_equal(a, _run("bf16")), "sr equals rne"
    # each step draws its own rounding: the same values rounded at steps 0 and 1 differ
    t = torch.from_numpy(rng(7).standard_normal(4096).astype(np.float32))
    opt = et.LowPrecisionOptimizer(torch.optim.SGD([torch.nn.Parameter(t.clone())], lr=0.0), weight=sr, seed=5)
    p = opt.param_groups[0]["params"][0]
    opt.step()
    r0 = p.detach().clone()
    p.data.copy_(t)
    opt.step()
    assert not torch.equal(r0, p.detach()), "sr repeats its rounding across steps"
    same_bits(r0.numpy(), exmy.cast(t.numpy(), "bf16", round="sr", seed=5, stream=0), t.numpy(), "step 0 stream")
    same_bits(p.detach().numpy(), exmy.cast(t.numpy(), "bf16", round="sr", seed=5, stream=1 << 32), t.numpy(),
              "step 1 stream")


def test_resume_bit_identical():
    spec = dict(weight={"fmt": "bf16", "round": "sr"}, moments={"fmt": "e4m3fn", "round": "sr", "saturate": True},
                seed=11)
    m = _model()
    opt = et.LowPrecisionOptimizer(torch.optim.AdamW(m.parameters(), lr=1e-2), **spec)
    _train(m, opt, 4)
    want = _flat(m)
    m = _model()
    opt = et.LowPrecisionOptimizer(torch.optim.AdamW(m.parameters(), lr=1e-2), **spec)
    _train(m, opt, 2)
    buf = io.BytesIO()
    torch.save({"model": m.state_dict(), "opt": opt.state_dict()}, buf)
    buf.seek(0)
    ck = torch.load(buf)
    m2 = _model(salt=9)
    m2.load_state_dict(ck["model"])
    opt2 = et.LowPrecisionOptimizer(torch.optim.AdamW(m2.parameters(), lr=1e-2), **spec)
    opt2.load_state_dict(ck["opt"])
    assert opt2.steps == 2
    _train(m2, opt2, 2, first=2)
    same_bits(_flat(m2), want, None, "resumed run")


def test_no_formats_is_plain():
    m1, m2 = _model(), _model()
    o1 = torch.optim.Adam(m1.parameters(), lr=1e-2)
    o2 = et.LowPrecisionOptimizer(torch.optim.Adam(m2.parameters(), lr=1e-2))
    _train(m1, o1, 3)
    _train(m2, o2, 3)
    same_bits(_flat(m2), _flat(m1), None, "no formats")
    # a torch optimizer: closure, param_groups shared, an LR scheduler accepts it
    x, y = _batch(0)

    def closure():
        o2.zero_grad()
        loss = torch.nn.functional.mse_loss(m2(x), y)
        loss.backward()
        return loss
    assert torch.is_tensor(o2.step(closure))
    sched = torch.optim.lr_scheduler.StepLR(o2, step_size=1, gamma=0.5)
    o2.step()
    sched.step()
    assert o2.optimizer.param_groups[0]["lr"] == 5e-3


def test_bad_specs():
    p = [torch.nn.Parameter(torch.zeros(3))]
    for kw in ({"weight": {"fmt": "bf16", "seed": 1}}, {"moments": {"fmt": "bf16", "rnd": "sr"}},
               {"weight": {"round": "sr"}}):
        try:
            et.LowPrecisionOptimizer(torch.optim.SGD(p, lr=1), **kw)
        except TypeError:
            continue
        raise AssertionError("accepted %r" % (kw,))
    try:
        et.LowPrecisionOptimizer(p)
    except TypeError:
        pass
    else:
        raise AssertionError("accepted a list as the optimizer")


def test_scalar_parameter_keeps_step():
    # a 0-d parameter: its moments are 0-d like Adam's step, which must stay exact (9 is not an e5m2 value)
    p = torch.nn.Parameter(torch.tensor(0.3))
    opt = et.LowPrecisionOptimizer(torch.optim.Adam([p], lr=1e-2), moments="e5m2")
    for _ in range(9):
        opt.zero_grad()
        (p * 3.0).backward()
        opt.step()
    assert float(opt.state[p]["step"]) == 9.0, "step counter rounded: %r" % float(opt.state[p]["step"])
    _representable(opt.state[p]["exp_avg"], "e5m2", "0-d exp_avg")
