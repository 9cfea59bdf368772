"""exmy.torch.fake_quant with a backward format and rounding of its own
(QPyTorch's quantizer): the forward is exmy.cast with fwd, the gradient
exmy.cast with bwd, bit for bit; stochastic rounding without a seed does
not repeat across calls (seeded from PyTorch's generator: torch.manual_seed
repeats a run); Quantizer keys each call's rounding by its counter (stream
2c forward, 2c + 1 backward), kept in its state_dict.  Skips without
torch."""
import numpy as np

import exmy
from harness import SkipTest, rng, same_bits

try:
    import torch
    import exmy.torch as et
except ImportError as e:  # torch is optional
    raise SkipTest("torch not importable: %s" % e)


def _x(salt, n=4096):
    return torch.from_numpy((rng(salt).standard_normal(n) * 3).astype(np.float32))


def test_forward_and_backward_formats():
    x = _x(1).requires_grad_()
    up = _x(2) * 1e-3
    y = et.fake_quant(x, fwd={"fmt": "e4m3fn", "saturate": True},
                      bwd={"fmt": "e5m2", "round": "sr", "seed": 9, "stream": 4})
    y.backward(up)
    xn = x.detach().numpy()
    same_bits(y.detach().numpy(), exmy.cast(xn, "e4m3fn", saturate=True), xn, "forward")
    same_bits(x.grad.numpy(), exmy.cast(up.numpy(), "e5m2", round="sr", seed=9, stream=4), up.numpy(), "backward")
    # the straight-through default, and fmt given positionally with keywords
    x.grad = None
    y = et.fake_quant(x, "e2m1fn", saturate=True)
    y.backward(up)
    same_bits(y.detach().numpy(), exmy.cast(xn, "e2m1fn", saturate=True), xn, "forward e2m1fn")
    same_bits(x.grad.numpy(), up.numpy(), None, "straight through")
    # bwd as a plain format: rne, no saturation
    x.grad = None
    et.fake_quant(x, "e4m3fn", "e3m2fn").backward(up)
    same_bits(x.grad.numpy(), exmy.cast(up.numpy(), "e3m2fn"), up.numpy(), "bwd e3m2fn")
    for call in (lambda: et.fake_quant(x, "e4m3fn", bwd={"round": "sr"}),
                 lambda: et.fake_quant(x, "e4m3fn", bwd={"fmt": "e5m2", "rounding": "sr"}),
                 lambda: et.fake_quant(x, "e4m3fn", satur=True),
                 lambda: et.fake_quant(x, "e4m3fn", fwd="e5m2"),
                 lambda: et.fake_quant(x)):
        try:
            call()
            raise AssertionError("accepted")
        except TypeError:
            pass


def test_stochastic_rounding_does_not_repeat():
    x = _x(3) * 0.1
    a, b = (et.fake_quant(x, "e4m3fn", round="sr") for _ in range(2))
    assert int((a != b).sum()) > 100, "two unseeded SR calls rounded alike"
    torch.manual_seed(4)
    c = et.fake_quant(x, "e4m3fn", round="sr")
    torch.manual_seed(4)
    same_bits(et.fake_quant(x, "e4m3fn", round="sr").numpy(), c.numpy(), None, "torch.manual_seed repeats")
    same_bits(et.fake_quant(x, "e4m3fn", round="sr", seed=5).numpy(),
              et.fake_quant(x, "e4m3fn", round="sr", seed=5).numpy(), None, "an explicit seed repeats")
    # the backward's SR too
    grads = []
    for _ in range(2):
        xx = x.clone().requires_grad_()
        et.fake_quant(xx, "e4m3fn", bwd={"fmt": "e5m2", "round": "sr"}).backward(x * 1e-3)
        grads.append(xx.grad)
    assert int((grads[0] != grads[1]).sum()) > 100, "two unseeded SR backwards rounded alike"


def test_quantizer_counter_keys_the_streams():
    x = _x(5).requires_grad_()
    up = _x(6) * 1e-3
    q = et.Quantizer(fwd={"fmt": "e4m3fn", "round": "sr"}, bwd={"fmt": "e5m2", "round": "sr"}, seed=7)
    xn = x.detach().numpy()
    for c in range(3):
        x.grad = None
        y = q(x)
        y.backward(up)
        same_bits(y.detach().numpy(), exmy.cast(xn, "e4m3fn", round="sr", seed=7, stream=2 * c), xn,
                  "call %d forward" % c)
        same_bits(x.grad.numpy(), exmy.cast(up.numpy(), "e5m2", round="sr", seed=7, stream=2 * c + 1), None,
                  "call %d backward" % c)
    assert int(q.calls) == 3
    # a fresh Quantizer loaded from the state_dict continues the streams
    r = et.Quantizer(fwd={"fmt": "e4m3fn", "round": "sr"}, seed=7)
    r.load_state_dict(q.state_dict())
    same_bits(r(x).detach().numpy(), exmy.cast(xn, "e4m3fn", round="sr", seed=7, stream=6), xn, "resumed")
    try:
        et.Quantizer(fwd={"fmt": "e4m3fn", "seed": 3})
        raise AssertionError("a seed inside fwd was accepted")
    except TypeError:
        pass
