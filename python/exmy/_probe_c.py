"""_probe_c.py: the tensor-core probe's part of exmy.h through ctypes
(exmy_probe_engine, exmy_probe_result, exmy_probe_run, exmy_probe_match,
exmy_probe_model_dot, the preset names, exmy_gpu_model_for_sm), on the
library _lib.py loaded.  Its struct mirrors join _lib.C_NAMES, so
python/tests/test_layout.py checks them against the header."""
from __future__ import annotations

import ctypes
from typing import List, Optional

from . import _lib
from ._lib import lib, Format, c_int, c_long, c_size_t, c_char_p, c_void_p, c_float, P

c_u8, c_u32 = ctypes.c_uint8, ctypes.c_uint32

# int (*)(void *ctx, const exmy_format *fa, const exmy_format *fb, size_t k, size_t count,
#         const uint8_t *a, const uint8_t *b, float *out, char *err, size_t errlen)
DotFn = ctypes.CFUNCTYPE(c_int, c_void_p, P(Format), P(Format), c_size_t, c_size_t, P(c_u8), P(c_u8), P(c_float),
                         c_void_p, c_size_t)


class ProbeEngine(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("dot", DotFn), ("ctx", c_void_p), ("k_max", c_size_t)]


class ProbeResult(ctypes.Structure):
    _fields_ = [("complete", c_int), ("dots", c_long), ("pairs", c_long), ("pairs_inexact", c_long),
                ("products_exact", c_int), ("subnormals_exact", c_int), ("g", c_int), ("f", c_int),
                ("align_rne", c_int), ("out", c_int), ("norm_rne", c_int), ("promote", c_size_t),
                ("promote_seen", c_int), ("nominal_exp", c_int), ("neg_toward_zero", c_int), ("nan_seen", c_int),
                ("nan_bits", c_u32), ("confirm_dots", c_long), ("confirm_mismatches", c_long),
                ("accum", ctypes.c_char * 160), ("notes", ctypes.c_char * 1024)]


_lib.C_NAMES.update({ProbeEngine: "exmy_probe_engine", ProbeResult: "exmy_probe_result"})

_SIGS = {
    # the log is a FILE *: Python passes NULL and prints from the result
    "exmy_probe_run": (c_int, [P(ProbeEngine), P(Format), P(Format), c_void_p, P(ProbeResult), c_char_p, c_size_t]),
    "exmy_probe_match": (c_int, [P(ProbeResult), c_char_p, c_size_t, c_char_p, c_size_t, c_char_p, c_size_t]),
    "exmy_probe_model_dot": (c_int, [c_void_p, P(Format), P(Format), c_size_t, c_size_t, P(c_u8), P(c_u8),
                                     P(c_float), c_char_p, c_size_t]),
    "exmy_accum_tc_preset_count": (c_size_t, []),
    "exmy_accum_tc_preset_get": (c_char_p, [c_size_t]),
    "exmy_gpu_model_for_sm": (c_char_p, [c_int, c_int]),
}
for _name, (_res, _args) in _SIGS.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args


def preset_names() -> List[str]:
    """The tensor-core presets, as accumulation models ("tc:hopper", ...)."""
    return ["tc:" + lib.exmy_accum_tc_preset_get(i).decode() for i in range(lib.exmy_accum_tc_preset_count())]


def model_for_sm(sm: int, fast_accum: bool) -> Optional[str]:
    """exmy_gpu_model_for_sm: the preset of an NVIDIA GPU's FP8 GEMM, or None."""
    m = lib.exmy_gpu_model_for_sm(int(sm), int(bool(fast_accum)))
    return m.decode() if m else None
