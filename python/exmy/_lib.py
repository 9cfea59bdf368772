"""_lib.py: libexmy through ctypes (the C structs of exmy.h and the calls).

ctypes releases the GIL around every foreign call (CDLL, not PyDLL), and the
arrays are passed as pointers into numpy's own buffers: no copy.  Where the
libraries are (find()): in the package directory (a wheel or `pip install`
puts them there), else at $EXMY_LIB / $EXMY_XP_LIB (a build tree), else in
the directories `make install` wrote into _paths.py, else (libexmy only) the
loader's search (ctypes.util.find_library).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import TYPE_CHECKING, List, Optional, Tuple, Type

if TYPE_CHECKING:
    CharBuf = ctypes.Array[ctypes.c_char]  # what errbuf() returns

c_int, c_uint, c_float, c_double = ctypes.c_int, ctypes.c_uint, ctypes.c_float, ctypes.c_double
c_size_t, c_u64, c_u8 = ctypes.c_size_t, ctypes.c_uint64, ctypes.c_uint8
c_char_p, c_void_p, c_long = ctypes.c_char_p, ctypes.c_void_p, ctypes.c_long
P = ctypes.POINTER

ERRLEN = 512
HIST_BINS = 279
HIST_LO = -150


class Format(ctypes.Structure):
    _fields_ = [("ebits", c_int), ("mbits", c_int), ("bias", c_int), ("is_signed", c_int),
                ("has_zero", c_int), ("inf", c_int), ("nan", c_int),
                ("bits", c_int), ("emin", c_int), ("emax", c_int),
                ("mag_mask", c_u64), ("sign_mask", c_u64), ("max_mag", c_u64), ("inf_mag", c_u64),
                ("nan_code", c_u64), ("name", ctypes.c_char * 64)]


class Rounding(ctypes.Structure):
    _fields_ = [("mode", c_int), ("sat", c_int), ("ftz", c_int), ("daz", c_int), ("sr_bits", c_int),
                ("seed", c_u64), ("stream", c_u64)]


class Info(ctypes.Structure):
    _fields_ = [("max_finite", c_double), ("min_normal", c_double), ("min_subnormal", c_double),
                ("epsilon", c_double), ("finite_count", c_u64), ("n_zero", c_int), ("n_inf", c_int),
                ("n_nan", c_u64), ("zero_codes", c_u64 * 2), ("inf_codes", c_u64 * 2),
                ("nan_first", c_u64 * 2), ("nan_last", c_u64 * 2), ("n_nan_ranges", c_int)]


class Recipe(ctypes.Structure):
    _fields_ = [("kind", c_int), ("block_rows", c_size_t), ("block_cols", c_size_t), ("epsilon", c_float),
                ("pow2", c_int), ("deepgemm", c_int), ("history_len", c_int), ("most_recent", c_int),
                ("margin", c_int), ("interval", c_int), ("exact_product", c_int)]


class RecipeState(ctypes.Structure):
    _fields_ = [("history_len", c_int), ("history", P(c_float)), ("scale", c_float), ("scale_inv", c_float),
                ("fmax", c_float), ("steps", c_long)]


class QTensor(ctypes.Structure):
    _fields_ = [("fmt", Format), ("rows", c_size_t), ("cols", c_size_t), ("codes", c_void_p),
                ("block_rows", c_size_t), ("block_cols", c_size_t), ("srows", c_size_t), ("scols", c_size_t),
                ("scale", P(c_float)), ("scale_inv", P(c_float)), ("scale_codes", P(c_u8)), ("amax", P(c_float)),
                ("tensor_scale", c_float), ("tensor_scale_inv", c_float), ("recipe", c_int), ("rnd", Rounding),
                ("exact_product", c_int), ("is_view", c_int)]


class QStats(ctypes.Structure):
    _fields_ = [("n", c_size_t), ("n_nonzero", c_size_t), ("amin", c_double), ("amax", c_double),
                ("underflow_frac", c_double), ("overflow_frac", c_double), ("mse", c_double),
                ("cosine", c_double), ("snr_db", c_double), ("max_rel_err", c_double),
                ("scale_ratio", c_double), ("hist", c_u64 * HIST_BINS), ("fmt_log2_min", c_int),
                ("fmt_log2_max", c_int)]


TC_NOPERANDS, TC_PATH_LEN = 3, 32  # EXMY_TC_NOPERANDS, EXMY_TC_PATH_LEN


class Accum(ctypes.Structure):
    _fields_ = [("kind", c_int), ("chunk", c_size_t), ("acc_fmt", Format), ("acc_rnd", Rounding),
                ("tc_group", c_int), ("tc_frac", c_int), ("tc_align_rne", c_int), ("tc_out_frac", c_int),
                ("tc_norm_rne", c_int), ("tc_zero", c_int),
                ("tc_path", (ctypes.c_char * TC_PATH_LEN) * TC_NOPERANDS)]  # exmy 1.5


class GemmArgs(ctypes.Structure):
    _fields_ = [("trans_a", c_int), ("trans_b", c_int), ("a", P(QTensor)), ("b", P(QTensor)),
                ("alpha", c_float), ("beta", c_float), ("c_fmt", P(Format)), ("c", c_void_p),
                ("scale_c", c_float), ("d_fmt", P(Format)), ("scale_d", c_float), ("d_rnd", Rounding),
                ("accum", P(Accum)), ("threads", c_int)]


class MmaInstr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 96), ("datapath", c_char_p), ("a_fmt", Format), ("b_fmt", Format),
                ("c_fmt", Format), ("d_fmt", Format), ("s_fmt", Format), ("has_scale", c_int), ("block", c_int),
                ("k", c_int), ("zero", c_int), ("path", c_int)]


# The C name of each mirrored struct: python/tests/test_layout.py compiles
# exmy.h and checks every size and field offset against these classes.
C_NAMES = {Format: "exmy_format", Rounding: "exmy_rounding", Info: "exmy_info", Recipe: "exmy_recipe",
           RecipeState: "exmy_recipe_state", QTensor: "exmy_qtensor", QStats: "exmy_qstats", Accum: "exmy_accum",
           GemmArgs: "exmy_gemm_args", MmaInstr: "exmy_mma_instr"}

# name: (restype, argtypes)
_SIGS = {
    "exmy_version": (c_char_p, []),
    "exmy_format_parse": (c_int, [c_char_p, P(Format), c_char_p, c_size_t]),
    "exmy_format_to_string": (c_int, [P(Format), c_char_p, c_size_t]),
    "exmy_format_info": (None, [P(Format), P(Info)]),
    "exmy_code_bytes": (c_int, [P(Format)]),
    "exmy_code_to_f64": (c_double, [P(Format), c_u64]),
    "exmy_round_mode_parse": (c_int, [c_char_p, P(c_int), c_char_p, c_size_t]),
    "exmy_quantize": (c_int, [P(Format), P(Rounding), c_int, c_void_p, c_size_t, c_u64, c_void_p, P(c_uint),
                              c_char_p, c_size_t]),
    "exmy_codes_to_f64": (None, [P(Format), c_void_p, c_size_t, c_void_p]),
    "exmy_codes_to_f32": (None, [P(Format), c_void_p, c_size_t, c_void_p]),
    "exmy_recipe_parse": (c_int, [c_char_p, P(Recipe), c_char_p, c_size_t]),
    "exmy_recipe_to_string": (c_int, [P(Recipe), c_char_p, c_size_t]),
    "exmy_recipe_has_state": (c_int, [P(Recipe)]),
    "exmy_recipe_state_new": (c_int, [P(Recipe), P(RecipeState), c_char_p, c_size_t]),
    "exmy_recipe_state_free": (None, [P(RecipeState)]),
    "exmy_recipe_quantize": (c_int, [P(Recipe), P(Format), P(Rounding), c_void_p, c_size_t, c_size_t,
                                     P(RecipeState), P(QTensor), P(c_uint), c_char_p, c_size_t]),
    "exmy_recipe_step": (None, [P(Recipe), P(RecipeState)]),
    "exmy_qtensor_to_f32": (None, [P(QTensor), c_void_p]),
    "exmy_qtensor_free": (None, [P(QTensor)]),
    "exmy_qtensor_stats": (c_int, [P(QTensor), c_void_p, P(QStats), c_char_p, c_size_t]),
    "exmy_accum_parse": (c_int, [c_char_p, P(Accum), c_char_p, c_size_t]),
    "exmy_accum_to_string": (c_int, [P(Accum), c_char_p, c_size_t]),
    "exmy_gemm_args_init": (None, [P(GemmArgs)]),
    "exmy_gemm_check": (c_int, [P(GemmArgs), P(c_size_t), P(c_size_t), P(c_size_t), c_char_p, c_size_t]),
    "exmy_gemm": (c_int, [P(GemmArgs), c_void_p, P(c_float), P(c_uint), c_char_p, c_size_t]),
    "exmy_mma_parse": (c_int, [c_char_p, P(MmaInstr), c_char_p, c_size_t]),
    "exmy_mma_count": (c_size_t, []),
    "exmy_mma_get": (c_int, [c_size_t, c_char_p, c_size_t]),
    "exmy_mma": (c_int, [P(MmaInstr), c_size_t, c_size_t, P(c_double), P(c_double), P(c_double), P(c_double),
                         P(c_double), c_void_p, c_char_p, c_size_t]),
}


SONAME = "libexmy.so.6"  # Makefile.am's -version-info: current - age
HERE = os.path.dirname(os.path.abspath(__file__))


def candidates(filename: str, env: str, paths_dir: str, loader_name: Optional[str] = None) -> List[str]:
    """Where to look for filename, in order: the package directory; else
    $env if set (and nothing else: a path asked for is not silently
    replaced); else _paths.<paths_dir>; else the loader (loader_name)."""
    here = os.path.join(HERE, filename)
    if os.path.exists(here):
        return [here]
    if os.environ.get(env):
        return [os.environ[env]]
    out: List[str] = []
    try:
        from . import _paths  # written by `make install`
        out.append(os.path.join(getattr(_paths, paths_dir), filename))
    except ImportError:
        pass
    if loader_name:
        found = ctypes.util.find_library(loader_name)
        if found:
            out.append(found)
        out.append(filename)
    return out


def find(filename: str, env: str, paths_dir: str, loader_name: Optional[str] = None,
         mode: int = ctypes.DEFAULT_MODE) -> Tuple[ctypes.CDLL, str]:
    """The first of candidates() that loads: (CDLL, path)."""
    errors = []
    for path in candidates(filename, env, paths_dir, loader_name):
        try:
            return ctypes.CDLL(path, mode=mode), path
        except OSError as e:
            errors.append(str(e))
    raise ImportError("exmy: cannot load %s (not in %s; set %s to its path in a build tree): %s"
                      % (filename, HERE, env, "; ".join(errors)))


def _load() -> Tuple[ctypes.CDLL, str]:
    # RTLD_GLOBAL: the engine module (_xp) resolves libexmy's symbols from this copy.
    return find(SONAME, "EXMY_LIB", "LIBDIR", loader_name="exmy", mode=ctypes.RTLD_GLOBAL)


lib, lib_path = _load()
for _name, (_res, _args) in _SIGS.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _res, _args
if lib.exmy_version().decode() .split(".")[0] != "1":  # pragma: no cover
    raise ImportError("exmy: %s is version %s; this package needs 1.x" % (lib_path, lib.exmy_version().decode()))


def errbuf() -> CharBuf:
    return ctypes.create_string_buffer(ERRLEN)


def check(rc: int, err: CharBuf, exc: Type[Exception] = ValueError) -> None:
    """The library's 0/-1 convention: -1 raises exc with its one-line message."""
    if rc != 0:
        raise exc(err.value.decode("utf-8", "replace"))


def text(s: object, what: str) -> bytes:
    if not isinstance(s, str):
        raise TypeError("exmy: %s must be a str, not %s" % (what, type(s).__name__))
    if "\0" in s:
        raise ValueError("exmy: %s contains a NUL character" % what)
    return s.encode("utf-8", "surrogateescape")
