"""build_exmy.py: the setuptools side of `pip install` / `python -m build`.

The package is pure Python over ctypes; what a wheel adds is the two shared
libraries it loads, built here from this tree's C sources into the package
directory (exmy/libexmy.so.N and exmy/exmy_xp.so, found there by
exmy/_lib.py).  Nothing is written out twice: the source lists, the soname
and the flags are read from Makefile.am, the version and the floating-point
flags from configure.ac (the autotools build stays the reference; this is
the same compilation without libtool).

Used by two setup.py files: the top-level one (the canonical project, whose
sdist carries the C tree as it is) and python/setup.py (`pip install
./python` from a checkout: the C tree is `..`; its sdist copies the C tree
into csrc/ so that it builds alone).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from setuptools import Distribution
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70.1 (Debian 12's 66): the wheel package's
    from wheel.bdist_wheel import bdist_wheel

# The Makefile.am variables whose sources make each library; conditionals are
# ignored except that the CUDA kernels (.cu, HAVE_CUDA) are never built here:
# their stub, kernels/gpu_stub.c, is.
CORE = ("libexmy_core_la_SOURCES",)
XP = ("libxp_la_SOURCES",)
MODULE = ("python_exmy_xp_la_SOURCES",)
# The directories whose headers the sources include (copied into sdists).
HEADER_DIRS = ("formats", "emulate", "kernels", "experiments")
# What marks a C tree.
MARKERS = ("configure.ac", "Makefile.am", "exmy.h")


def find_root(here):
    """The C tree: `here` itself (the top of a checkout or of the top-level
    sdist), here/csrc (python/'s sdist), or here/.. (python/ in a checkout)."""
    for cand in (here, os.path.join(here, "csrc"), os.path.dirname(here)):
        if all(os.path.isfile(os.path.join(cand, m)) for m in MARKERS):
            return os.path.abspath(cand)
    raise RuntimeError("exmy: no C sources (configure.ac, Makefile.am, exmy.h) in %s, %s/csrc or %s/..: "
                       "build from a checkout of the whole tree or from its sdist" % (here, here, here))


def _read(root, name):
    with open(os.path.join(root, name), encoding="utf-8") as f:
        return f.read()


def version(root):
    """AC_INIT's version; exmy.h's EXMY_VERSION must agree (the library
    reports the header's)."""
    m = re.search(r"AC_INIT\(\[exmy\],\s*\[([^\]]+)\]", _read(root, "configure.ac"))
    if not m:
        raise RuntimeError("exmy: no AC_INIT([exmy], [VERSION]) in configure.ac")
    h = re.search(r'#define EXMY_VERSION "([^"]+)"', _read(root, "exmy.h"))
    if not h or h.group(1) != m.group(1):
        raise RuntimeError("exmy: configure.ac says version %s, exmy.h's EXMY_VERSION %s"
                           % (m.group(1), h.group(1) if h else "(none)"))
    return m.group(1)


def makefile_vars(root):
    """Makefile.am's `VAR = ...` and `VAR += ...` (continuations joined),
    each a list of words; conditionals are not evaluated."""
    text = re.sub(r"\\\n", " ", _read(root, "Makefile.am"))
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\+?=)\s*(.*)$", line)
        if m:
            words = m.group(3).split("#")[0].split()
            out[m.group(1)] = (out.get(m.group(1), []) if m.group(2) == "+=" else []) + words
    return out


def c_sources(mk, names):
    return [w for n in names for w in mk.get(n, []) if w.endswith(".c")]


def config(root):
    """Everything the build needs, read from the tree."""
    mk = makefile_vars(root)
    ac = _read(root, "configure.ac")
    fp = re.search(r'AC_SUBST\(\[FP_CFLAGS\],\s*\["([^"]*)"\]\)', ac)
    if not fp or "-ffp-contract=off" not in fp.group(1):
        raise RuntimeError("exmy: configure.ac's FP_CFLAGS not found (or without -ffp-contract=off)")
    vi = " ".join(mk.get("libexmy_la_LDFLAGS", []))
    m = re.search(r"-version-info\s+(\d+):(\d+):(\d+)", vi)
    if not m:
        raise RuntimeError("exmy: no -version-info in Makefile.am's libexmy_la_LDFLAGS")
    core_extra = [w for w in mk.get("libexmy_core_la_CFLAGS", []) if not w.startswith("$(")]
    cfg = {
        "version": version(root),
        "soname": "libexmy.so.%d" % (int(m.group(1)) - int(m.group(3))),  # libtool: current - age
        "fp_cflags": fp.group(1).split(),
        "core_cflags": core_extra,
        "core": c_sources(mk, CORE),
        "xp": c_sources(mk, XP),
        "module": c_sources(mk, MODULE),
    }
    for k in ("core", "xp", "module"):
        if not cfg[k]:
            raise RuntimeError("exmy: Makefile.am lists no C sources for %s" % k)
        for s in cfg[k]:
            if not os.path.isfile(os.path.join(root, s)):
                raise RuntimeError("exmy: Makefile.am lists %s, which %s lacks" % (s, root))
    return cfg


def tree_files(root):
    """The files (relative to root) a build from an sdist needs."""
    cfg = config(root)
    out = set(MARKERS) | set(cfg["core"] + cfg["xp"] + cfg["module"])
    for d in HEADER_DIRS:
        for f in os.listdir(os.path.join(root, d)):
            if f.endswith(".h"):
                out.add(os.path.join(d, f))
    return sorted(out)


def _run(cmd, verbose):
    if verbose:
        print(" ".join(shlex.quote(c) for c in cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        raise RuntimeError("exmy: command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stdout))
    return p.stdout


def build_libs(root, outdir, tmpdir, jobs=None, verbose=False):
    """Compile libexmy and exmy_xp.so into outdir (the package directory).
    CC and CFLAGS from the environment (default cc, -O2); the project's
    flags are added after CFLAGS so that no CFLAGS can turn fast-math on.
    Returns the paths written."""
    cfg = config(root)
    cc = shlex.split(os.environ.get("CC", "cc"))
    user = shlex.split(os.environ.get("CFLAGS", "-O2"))
    common = user + ["-fPIC", "-fopenmp", "-I" + root] + cfg["fp_cflags"]
    ldflags = shlex.split(os.environ.get("LDFLAGS", ""))
    os.makedirs(outdir, exist_ok=True)

    def objs(sources, extra, sub):
        jobsl = []
        for s in sources:
            o = os.path.join(tmpdir, sub, s[:-2] + ".o")
            os.makedirs(os.path.dirname(o), exist_ok=True)
            jobsl.append((cc + common + extra + ["-c", os.path.join(root, s), "-o", o], o))
        with ThreadPoolExecutor(jobs or os.cpu_count() or 1) as ex:
            for out in ex.map(lambda j: _run(j[0], verbose), jobsl):
                if out.strip():
                    sys.stderr.write(out)
        return [o for _, o in jobsl]

    core = objs(cfg["core"], cfg["core_cflags"], "core")
    xp = objs(cfg["xp"], [], "xp")
    mod = objs(cfg["module"], [], "module")
    libexmy = os.path.join(outdir, cfg["soname"])
    xpmod = os.path.join(outdir, "exmy_xp.so")
    # As libtool links them: libexmy exports what exmy.h marks EXMY_API;
    # exmy_xp.so carries its own copy of the core (a convenience library).
    _run(cc + ["-shared", "-fopenmp", "-Wl,-soname," + cfg["soname"]] + ldflags + core +
         ["-lgmp", "-lm", "-o", libexmy], verbose)
    _run(cc + ["-shared", "-fopenmp"] + ldflags + mod + xp + core + ["-lgmp", "-lm", "-o", xpmod], verbose)
    return [libexmy, xpmod]


class BuildLibs(build_ext):
    """build_ext that builds the two ctypes libraries instead of Python
    extensions (so no Python ABI in their names, and the wheel is py3-none)."""

    root = None  # set by commands()

    def run(self):
        if self.inplace:  # editable installs: beside the sources
            pkgdir = os.path.abspath(self.get_finalized_command("build_py").get_package_dir("exmy"))
        else:
            pkgdir = os.path.join(self.build_lib, "exmy")
        jobs = self.parallel if isinstance(self.parallel, int) and self.parallel > 0 else None
        self._outputs = build_libs(self.root, pkgdir, os.path.join(self.build_temp, "exmy-c"), jobs=jobs,
                                   verbose=self.verbose > 1)

    def get_outputs(self):
        return list(getattr(self, "_outputs", []))

    def get_source_files(self):
        return []


class PlatformWheel(bdist_wheel):
    """The libraries are loaded with ctypes, not imported: any Python 3 on
    this platform can use them."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


def sdist_with_tree(root, prefix):
    """An sdist command that copies the C tree into the release tree under
    prefix ("" for the top-level project, "csrc" for python/)."""

    class Sdist(sdist):
        def make_release_tree(self, base_dir, files):
            super().make_release_tree(base_dir, files)
            for rel in tree_files(root):
                dst = os.path.join(base_dir, prefix, rel)
                if not os.path.exists(dst):
                    os.makedirs(os.path.dirname(dst), exist_ok=True)
                    shutil.copy2(os.path.join(root, rel), dst)

    return Sdist


def setup_kwargs(here, sdist_prefix):
    """setup() arguments for the setup.py in `here`."""
    root = find_root(here)
    BuildLibs.root = root
    return dict(
        version=version(root),
        distclass=BinaryDistribution,
        cmdclass={"build_ext": BuildLibs, "bdist_wheel": PlatformWheel,
                  "sdist": sdist_with_tree(root, sdist_prefix)},
    )


if __name__ == "__main__":  # python3 build_exmy.py OUTDIR: the libraries alone
    r = find_root(os.path.dirname(os.path.abspath(__file__)))
    print("\n".join(build_libs(r, sys.argv[1], os.path.join(sys.argv[1], "obj"), verbose=True)))
