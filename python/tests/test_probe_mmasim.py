"""test_probe_mmasim.py (make check-long): the probe, through the Python
callback, against an engine that is not exmy: mmasim_rules.py, this
project's own plain-integer reading of MMA-Sim v2's published T-FDPA rules.
Each datapath must come out as exmy's preset of that GPU, bit for bit (the
probe's 64 random confirming dot products included).  Slow (pure Python
arithmetic on every term): it runs only with EXMY_CHECK_LONG=1."""
import os

from harness import SkipTest

from exmy import probe
from mmasim_rules import MmaSimEngine, dot

CASES = [  # (datapath, promotion, operands, exmy's preset)
    ("hopper-fp8", 0, ("e4m3fn", "e4m3fn"), "tc:hopper-fastacc"),
    ("hopper-fp8", 128, ("e4m3fn", "e4m3fn"), "tc:hopper"),
    ("hopper-fp8", 128, ("e4m3fn", "e5m2"), "tc:hopper"),
    ("ada-fp8", 0, ("e4m3fn", "e4m3fn"), "tc:ada-fastacc"),
    ("ada-fp8", 128, ("e5m2", "e4m3fn"), "tc:ada"),
    ("blackwell-fp8", 0, ("e4m3fn", "e4m3fn"), "tc:blackwell"),
]


def _long():
    if os.environ.get("EXMY_CHECK_LONG") != "1":
        raise SkipTest("make check-long only (EXMY_CHECK_LONG=1)")


def test_the_rules_on_hand_cases():
    """The independent engine itself, on sums worked out by hand."""
    e4 = "e4m3fn"
    one, two, c256 = 0x38, 0x40, 0x78  # 1, 2, 256 in e4m3fn
    # 256*256 - 256*256 + 2^-5: the small term is 2^-5 below 2^16 by 21 bits > 13: cut on Hopper
    tiny = 0x10  # 2^-5
    a = [c256, c256 | 0x80, tiny] + [0] * 29
    b = [c256, c256, one] + [0] * 29
    assert dot(a, b, e4, e4, "hopper-fp8") == 0.0
    assert dot(a, b, e4, e4, "blackwell-fp8") == 2.0 ** -5  # F = 25 keeps it
    # in the next group it meets a zero accumulator and survives on both
    a2 = [c256, c256 | 0x80] + [0] * 30 + [tiny] + [0] * 31
    b2 = [c256, c256] + [0] * 30 + [one] + [0] * 31
    assert dot(a2, b2, e4, e4, "hopper-fp8") == 2.0 ** -5
    # Ada groups by 16: slot 16 already starts the second group
    a3 = [c256, c256 | 0x80] + [0] * 14 + [tiny] + [0] * 15
    b3 = [c256, c256] + [0] * 14 + [one] + [0] * 15
    assert dot(a3, b3, e4, e4, "ada-fp8") == 2.0 ** -5 and dot(a3, b3, e4, e4, "hopper-fp8") == 0.0
    # 1 + 2 = 3, NaN and inf
    assert dot([one, two], [one, one], e4, e4, "hopper-fp8") == 3.0
    r = dot([0x7f], [one], e4, e4, "hopper-fp8")
    assert r != r
    assert dot([0x7c], [0x3c], "e5m2", "e5m2", "hopper-fp8") == float("inf")


def test_mmasim_rules_are_recovered_as_exmys_presets():
    _long()
    bad = []
    for path, promote, (a, b), want in CASES:
        r = probe.run(MmaSimEngine(path, promote), a, b)
        if r["match"] != [want]:
            bad.append("%s promote=%d (%s x %s): %s, matched %s; nearest %s: %s; notes: %s" % (
                path, promote, a, b, r["accum"] or "incomplete", r["match"], r["nearest"], r["differences"],
                r["notes"]))
    assert not bad, "\n".join(bad)
