"""float8 interop with PyTorch: float8 tensors are values in their own
format (requantized as PyTorch's own .to() does, bit for bit); dtype=
returns PyTorch's float8 type with the codes as its bits; unknown keywords
raise; formats from torch dtypes; exmy's defaults against PyTorch's cast
(CPU: e4m3fn saturates, so saturate=True matches; e5m2 and the fnuz types
do not, so the default matches).  Skips without torch."""
import numpy as np

import exmy
from harness import SkipTest, rng, same_bits, boundary_f32

try:
    import torch
    import exmy.torch as et
except ImportError as e:  # torch is optional
    raise SkipTest("torch not importable: %s" % e)

# PyTorch's float8 types, exmy's format, and the saturation that matches PyTorch's CPU cast to it
TORCH8 = [(getattr(torch, n, None), f, sat) for n, f, sat in
          [("float8_e4m3fn", "e4m3fn", True), ("float8_e5m2", "e5m2", False),
           ("float8_e4m3fnuz", "e4m3fnuz", False), ("float8_e5m2fnuz", "e5m2fnuz", False)]]
TORCH8 = [t for t in TORCH8 if t[0] is not None]


def _inputs(salt):
    r = rng(salt)
    with np.errstate(over="ignore"):
        x = np.concatenate([boundary_f32(), r.integers(0, 2 ** 32, 50000, dtype=np.uint64).astype(np.uint32)
                            .view(np.float32), (r.choice([-1, 1], 50000) * 2.0 ** r.uniform(-30, 20, 50000))
                            .astype(np.float32)])
    return torch.from_numpy(x)


def test_saturate_true_matches_torch_cast():
    """PyTorch 2.x's CPU cast to e4m3fn saturates (inf and overflow -> 448);
    exmy.torch.quantize(saturate=True) equals it bit for bit, NaN codes
    included; to e5m2 and the fnuz types PyTorch does not saturate and the
    default (saturate=False) equals it.  float32, bfloat16, float16 inputs."""
    if not TORCH8:
        raise SkipTest("this torch has no float8 types")
    x = _inputs(1)
    for src in (torch.float32, torch.bfloat16, torch.float16):
        xs = x.to(src)
        for td, fmt, sat in TORCH8:
            want = xs.to(td)
            got = et.quantize(xs, fmt, saturate=sat, dtype=td)
            assert got.dtype == td
            same_bits(got.view(torch.uint8).numpy(), want.view(torch.uint8).numpy(), xs.float().numpy(),
                      "%s -> %s saturate=%s" % (src, td, sat))
    # and the other setting differs on overflow: the difference docs/python.md states
    big = torch.tensor([1000.0, -1e6, float("inf")])
    assert et.quantize(big, "e4m3fn").tolist() == [0x7F, 0xFF, 0x7F]  # exmy default: NaN
    assert big.to(torch.float8_e4m3fn).view(torch.uint8).tolist() == [0x7E, 0xFE, 0x7E]  # PyTorch: 448


def test_float8_tensors_requantize_as_torch():
    """Every value of each float8 type to each other: exmy.torch.quantize
    (and cast) of a float8 tensor take its values, as PyTorch's .to()."""
    if not TORCH8:
        raise SkipTest("this torch has no float8 types")
    for ts, fs, _ in TORCH8:
        x = torch.arange(256, dtype=torch.uint8).view(ts)
        for td, fd, sat in TORCH8:
            want = x.to(td)
            got = et.quantize(x, fd, saturate=sat, dtype=td)
            # NaN as a class (PyTorch keeps a NaN's payload where it can, exmy gives the format's NaN)
            nan = torch.isnan(want.float()).numpy()
            same_bits(torch.isnan(got.float()).numpy(), nan, None, "NaN %s -> %s" % (ts, td))
            same_bits(got.view(torch.uint8).numpy()[~nan], want.view(torch.uint8).numpy()[~nan],
                      x.view(torch.uint8).numpy()[~nan], "%s -> %s" % (ts, td))
            c = et.cast(x, fd, saturate=sat)
            assert c.dtype == torch.float32
            w = want.float().numpy()  # NaN as a class: PyTorch's float32 NaN has another payload than exmy's
            nan = np.isnan(w)
            same_bits(np.isnan(c.numpy()), nan, None, "cast NaN %s -> %s" % (ts, td))
            same_bits(c.numpy()[~nan], w[~nan], x.view(torch.uint8).numpy()[~nan], "cast %s -> %s" % (ts, td))
        # the same values through exmy.torch.cast to its own type, and a strided view
        ok = ~torch.isnan(x.float()).numpy()
        same_bits(et.cast(x, fs, dtype=ts).view(torch.uint8).numpy()[ok], x.view(torch.uint8).numpy()[ok], None,
                  "cast %s to itself" % ts)
        xv = x.view(16, 16).t()[::2]
        same_bits(et.quantize(xv, "e5m2").numpy(), et.quantize(xv.contiguous(), "e5m2").numpy(), None,
                  "strided %s" % ts)


def test_dtype_keyword_and_unknown_keywords():
    x = torch.tensor([1.0, 3.0, 500.0, -0.001])
    q = et.quantize(x, "e4m3fn", dtype=torch.float8_e4m3fn, saturate=True)
    assert q.dtype == torch.float8_e4m3fn
    same_bits(q.view(torch.uint8).numpy(), exmy.quantize(x.numpy(), "e4m3fn", saturate=True), x.numpy(), "bits")
    assert et.quantize(x, "e4m3fn", dtype=torch.uint8).dtype == torch.uint8
    assert et.quantize(x, "bf16", dtype=torch.bfloat16).dtype == torch.bfloat16
    assert et.cast(x, "e5m2", dtype=torch.float64).dtype == torch.float64
    for call in (lambda: et.quantize(x, "e5m2", dtype=torch.float8_e4m3fn),
                 lambda: et.quantize(x, "e4m3fn", dtype=torch.float8_e4m3fnuz),
                 lambda: et.quantize(x, "e4m3fn", dtype=torch.int16),
                 lambda: et.quantize(x, "e4m3fn", dtype=np.uint8),
                 lambda: et.cast(x, "e4m3fn", dtype=torch.bfloat16),
                 lambda: et.quantize(x, "e4m3fn", dtyp=torch.float8_e4m3fn),
                 lambda: et.cast(x, "e4m3fn", saturation=True)):
        try:
            call()
            raise AssertionError("accepted")
        except TypeError:
            pass
    for td, fmt, _ in TORCH8:
        assert exmy.Format(td) == exmy.Format(fmt) and exmy.Format(td).name == fmt
    assert exmy.Format(torch.bfloat16).name == "bf16"
    same_bits(et.cast(x, torch.float8_e5m2).numpy(), et.cast(x, "e5m2").numpy(), x.numpy(), "fmt=torch dtype")


def test_matmul_takes_float8_tensors():
    """et.matmul of float8 tensors (mixed types, a transposed view) is the
    matmul of their float32 values, in float32."""
    if not TORCH8:
        raise SkipTest("this torch has no float8 types")
    g = torch.Generator().manual_seed(8)
    a = torch.randn(2, 3, 8, 16, generator=g).to(torch.float8_e4m3fn)
    b = torch.randn(2, 3, 5, 16, generator=g).to(torch.float8_e5m2).mT
    for prec in ("hybrid", "bf16"):
        c = et.matmul(a, b, prec=prec)
        assert c.dtype == torch.float32
        same_bits(c.numpy(), et.matmul(a.float(), b.float(), prec=prec).numpy(), None, "float8 matmul " + prec)
