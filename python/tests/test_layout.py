"""The ctypes mirrors of exmy.h's structs (exmy/_lib.py) against the C
compiler's view of the header: every struct's size and every field's offset.
A field added, moved or resized in exmy.h without its mirror fails here
(ctypes would otherwise read and write the wrong bytes)."""
import ctypes
import os
import shutil
import subprocess

from harness import SkipTest, TempDir

from exmy import _lib
from exmy import _probe_c  # noqa: F401 (its struct mirrors join _lib.C_NAMES)


def _header_dir():
    here = os.path.dirname(os.path.abspath(_lib.__file__))
    top = os.path.normpath(os.path.join(here, "..", ".."))
    if not os.path.exists(os.path.join(top, "exmy.h")):
        raise SkipTest("exmy.h not found beside the package (%s): not a source tree" % top)
    return top


def test_struct_layouts_match_the_header():
    cc = os.environ.get("CC", "cc").split()[0]
    if not shutil.which(cc):
        raise SkipTest("no C compiler (%s) to read exmy.h with" % cc)
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include \"exmy.h\"", "int main(void) {"]
    for cls, cname in _lib.C_NAMES.items():
        lines.append('  printf("%s %%zu\\n", sizeof(%s));' % (cname, cname))
        for f in cls._fields_:
            lines.append('  printf("%s.%s %%zu\\n", offsetof(%s, %s));' % (cname, f[0], cname, f[0]))
    lines += ["  return 0;", "}"]
    t = TempDir()
    src, exe = t("layout.c"), t("layout")
    with open(src, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    subprocess.run([cc, "-I", _header_dir(), src, "-o", exe], check=True)
    out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    c = dict(l.rsplit(" ", 1) for l in out.splitlines())
    bad = []
    for cls, cname in _lib.C_NAMES.items():
        if int(c[cname]) != ctypes.sizeof(cls):
            bad.append("%s: %s bytes in C, %d in ctypes" % (cname, c[cname], ctypes.sizeof(cls)))
        for f in cls._fields_:
            off = getattr(cls, f[0]).offset
            if int(c["%s.%s" % (cname, f[0])]) != off:
                bad.append("%s.%s: offset %s in C, %d in ctypes" % (cname, f[0], c["%s.%s" % (cname, f[0])], off))
    assert not bad, "ctypes mirrors differ from exmy.h:\n  " + "\n  ".join(bad)
